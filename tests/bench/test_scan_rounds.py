#!/usr/bin/python3
"""The scans section of run-bench says why one round differs from the
next (issue 26: the full merged scan moved between 0.90x and 1.17x of the
direct scan from run to run, and nothing in the report said why).

hbase-bench reports, over its measured window, the CPU the whole machine
ran and what its hypervisor stole (machine_cpu_s, steal_s) beside the CPU
of the client, the backend and the process under test; run-bench's
per-round table of the scans turns them into CPU per scan of each process
and of everything else that shared the cores.
"""
import argparse
import importlib.machinery
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, '..', 'lib'))
from hsptest import Emu  # noqa: E402

ARGS = None
ROWS = 2000


def bench(port, workload, *extra):
    argv = [ARGS.bench, '--target', '127.0.0.1:%d' % port, '--workload',
            workload, '--table', 'plain', '--rows', str(ROWS),
            '--connections', '1'] + list(extra)
    r = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       timeout=120, check=True)
    lines = [l for l in r.stdout.decode().splitlines() if l.startswith('{')]
    return json.loads(lines[-1])


def load_run_bench():
    loader = importlib.machinery.SourceFileLoader(
        'run_bench', os.path.join(HERE, 'run-bench'))
    spec = importlib.util.spec_from_loader('run_bench', loader)
    mod = importlib.util.module_from_spec(spec)
    loader.exec_module(mod)
    return mod


class ScanRoundsTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.work = tempfile.mkdtemp(prefix='hsp-scan-rounds-')
        cls.emu = Emu(ARGS.emu, cls.work, args=['--create-table', 'plain:f'])
        bench(cls.emu.port, 'load', '--batch', '500')

    @classmethod
    def tearDownClass(cls):
        cls.emu.stop()
        shutil.rmtree(cls.work, ignore_errors=True)

    def scan(self):
        return bench(self.emu.port, 'scan-full', '--ops', '3',
                     '--scan-batch', '100', '--pid', str(self.emu.proc.pid),
                     '--backend-pid', str(self.emu.proc.pid))

    def test_machine_cpu_beside_the_processes(self):
        """A full scan's result holds the machine's CPU over the window,
        at least what the emulator and the client ran in it."""
        r = self.scan()
        self.assertEqual(r['rows'], 3 * ROWS)
        self.assertIn('machine_cpu_s', r)
        self.assertIn('steal_s', r)
        self.assertGreaterEqual(r['steal_s'], 0)
        ours = (r['backend_cpu_us_per_op'] + r['client_cpu_us_per_op']) \
            * r['ops'] / 1e6
        # clock ticks: each process's count may round up by a tick
        self.assertGreaterEqual(r['machine_cpu_s'] + 0.03, ours)
        self.assertLessEqual(r['machine_cpu_s'],
                             r['elapsed_s'] * os.cpu_count() + 0.05)

    def test_round_table(self):
        """run-bench lists each round with each process's CPU per scan
        and the rest of the machine's, and the round's ratio."""
        rb = load_run_bench()
        rb.ARGS = argparse.Namespace(backend='emu')
        runs = [self.scan(), self.scan()]
        text = rb.scan_rounds_cpu('full scan', {'unsalted': runs[:1],
                                                'proxy': runs[1:]}, 's', 1e6)
        lines = [l for l in text.splitlines() if l.startswith('| 1 |')]
        self.assertEqual(len(lines), 2, text)
        head = [c.strip() for c in text.splitlines()[2].split('|')[1:-1]]
        self.assertIn("other processes' CPU", head)
        self.assertIn('proxy CPU', head)
        self.assertIn('their share', head)
        self.assertIn('emulator CPU', head)
        cells = [c.strip() for c in lines[1].split('|')[1:-1]]
        row = dict(zip(head, cells))
        self.assertRegex(row['proxy/unsalted'], r'^\d+\.\d\d×$')
        self.assertRegex(row['their share'], r'^\d+ %$')
        for col in ('client CPU', 'emulator CPU', 'proxy CPU',
                    "other processes' CPU", 'stolen', 'cores busy'):
            self.assertRegex(row[col], r'^[\d,]+\.\d\d$', col)


def main():
    global ARGS
    ap = argparse.ArgumentParser()
    ap.add_argument('--bench', required=True)
    ap.add_argument('--emu', required=True)
    ARGS, rest = ap.parse_known_args()
    unittest.main(argv=[sys.argv[0]] + rest, verbosity=2)


if __name__ == '__main__':
    main()
