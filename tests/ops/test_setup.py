"""Setup mistakes that would misplace data are impossible or loud: a
second process on the same listen address fails instead of sharing it,
while one process's workers still share the clients; --check-config
resolves every address and, with --pid, refuses a file the running proxy
would refuse on reload; a backend speaking another protocol or transport
is named in one log line and probed less often.

  /usr/bin/python3 tests/ops/test_setup.py --proxy BUILD/daemon/hbase-salt-proxy \\
      --emu BUILD/tests/emu/hbase-emu --pydir BUILD/thrift/py [unittest args]
"""

import argparse
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import opslib  # noqa: E402
from opslib import get, put  # noqa: E402

ARGS = None
T_TABLE = 'buckets = 8\nsalt_format = hex\nsalt_separator = -\n'


class SetupCase(unittest.TestCase):
    """A temporary directory, an emulator, and proxies stopped at the end."""

    emu_extra = ()

    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix='hsp-ops-setup-')
        self.emu = opslib.Emu(ARGS.emu, self.dir, extra=self.emu_extra)
        self.proxies = []

    def tearDown(self):
        try:
            for p in self.proxies:
                if p.alive():
                    p.stop()
        finally:
            self.emu.close()
            if not os.environ.get('HSP_KEEP_LOGS'):
                shutil.rmtree(self.dir, ignore_errors=True)

    def start(self, text, port, admin_port=None, env=None, args=()):
        p = opslib.Proxy(ARGS.proxy, self.dir, text, port,
                         admin_port=admin_port, env=env, args=args)
        self.proxies.append(p)
        return p

    def write(self, name, text):
        path = os.path.join(self.dir, name)
        with open(path, 'w') as f:
            f.write(text)
        return path

    def run_proxy(self, *args, env=None):
        return subprocess.run([ARGS.proxy] + list(args), capture_output=True,
                              text=True, timeout=30,
                              env=dict(os.environ, **(env or {})))


class ListenTest(SetupCase):
    def test_second_process_same_listen_fails(self):
        port = opslib.free_port()
        first = self.start(opslib.proxy_conf(port, [self.emu.port],
                                             tables={'t': T_TABLE}), port)
        # a different mapping: had it bound, its clients' rows would land
        # where the first never looks
        conf = self.write('second.conf', opslib.proxy_conf(
            port, [self.emu.port], tables={'t': 'buckets = 3\n'}))
        try:
            r = subprocess.run([ARGS.proxy, '-c', conf], capture_output=True,
                               text=True, timeout=20)
        except subprocess.TimeoutExpired:
            self.fail('a second proxy on the same listen address runs')
        self.assertNotEqual(r.returncode, 0, r.stderr)
        self.assertIn('[proxy] listen: cannot listen on 127.0.0.1:%d: '
                      'Address already in use' % port, r.stderr)
        # the first one still serves every connection
        for i in range(20):
            c = opslib.client(port)
            try:
                put(c, b't', b'row%d' % i, b'v')
                self.assertEqual(get(c, b't', b'row%d' % i), b'v')
            finally:
                c._trans.close()
        self.assertTrue(first.alive())

    def test_workers_share_connections(self):
        port = opslib.free_port()
        p = self.start(opslib.proxy_conf(port, [self.emu.port],
                                         tables={'t': T_TABLE}), port,
                       args=('--log-level', 'debug'))
        # past the connection the start-up wait made
        at = p.wait_log(r'connected \(worker') and p.log_size()
        for i in range(16):
            c = opslib.client(port)
            try:
                put(c, b't', b'w%d' % i, b'v')
            finally:
                c._trans.close()
        opslib.wait_for(lambda: p.log_text()[at:].count('connected (') == 16,
                        10, '16 connections logged')
        workers = re.findall(r'connected \(worker (\d+),',
                             p.log_text()[at:])
        self.assertEqual(len(workers), 16, p.log_text())
        self.assertEqual(sorted(set(workers)), ['0', '1'])
        # in turn: neither takes more than its half and one
        self.assertLessEqual(max(workers.count('0'), workers.count('1')), 9)


def main():
    global ARGS
    ap = argparse.ArgumentParser()
    ap.add_argument('--proxy', required=True)
    ap.add_argument('--emu', required=True)
    ap.add_argument('--pydir', required=True)
    ARGS, rest = ap.parse_known_args()
    opslib.load_thrift(ARGS.pydir)
    unittest.main(argv=[sys.argv[0]] + rest, verbosity=2)


if __name__ == '__main__':
    main()
