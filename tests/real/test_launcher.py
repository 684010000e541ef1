"""tests/hbase/hbase-mini as a user meets it: one ready line naming both
servers, real HBase answering both, a protocol and transport of HBase's own
keys, SIGTERM shutting it down and removing its data dir, a kept data dir
with --data-dir, a bad option refused with a clear error, and --region-servers
2 giving two live region servers whose per-region request counts the
'regions TABLE' command reports (run-bench --backend real reads them).

  /usr/bin/python3 tests/real/test_launcher.py --pydir BUILD/thrift/py
"""

import argparse
import glob
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                '..', 'lib'))
import hsptest  # noqa: E402

ARGS = None
TH = None


class LauncherTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix='hsp-real-launcher-')

    def tearDown(self):
        shutil.rmtree(self.dir, ignore_errors=True)

    def test_1_both_servers_real_hbase(self):
        """Ready line, a table made through Thrift1 read through Thrift2 (one
        store behind both), a real HBase error, and the data dir removed on
        SIGTERM."""
        before = set(glob.glob(os.path.join(tempfile.gettempdir(),
                                            'hbase-mini-*')))
        b = hsptest.RealBackend(self.dir, proto='compact', transport='framed',
                                thrift2=True, thrift=TH,
                                tables={'lt': ['d']})
        try:
            self.assertIsNotNone(b.port2)
            c = TH.client1(b.port, 'compact', 'framed')
            c.mutateRow(b'lt', b'r1', [TH.T.Mutation(column=b'd:a',
                                                     value=b'v1')], {})
            self.assertIn(b'lt', c.getTableNames())
            # HBase's own error for a table it does not have
            with self.assertRaises(TH.T.IOError) as e:
                c.getRow(b'no_such_table', b'r', {})
            self.assertIn('TableNotFoundException', e.exception.message)
            c.transport.close()
            c2 = TH.client2(b.port2, 'compact', 'framed')
            r = c2.get(b'lt', TH.T2.TGet(row=b'r1'))
            self.assertEqual([(x.family, x.qualifier, x.value)
                              for x in r.columnValues],
                             [(b'd', b'a', b'v1')])
            c2.transport.close()
            # this cluster's data dir, as it names it: other clusters (a
            # shared machine's other tests) make theirs in the same place
            m = re.search(r'ready in [0-9.]+ s, data in (\S+)', b.log_text())
            self.assertIsNotNone(m, b.log_text()[-2000:])
            data = {m.group(1)}
            self.assertEqual(data & set(glob.glob(os.path.join(
                tempfile.gettempdir(), 'hbase-mini-*'))) - before, data)
        finally:
            b.close()
        self.assertEqual(b.proc.returncode, 0, b.log_text()[-2000:])
        self.assertFalse(any(os.path.exists(d) for d in data),
                         'data dir left behind: %s' % data)

    def test_2_data_dir_kept(self):
        keep = os.path.join(self.dir, 'keep')
        b = hsptest.RealBackend(self.dir, thrift=TH, tables={'k': ['d']},
                                extra=['--data-dir', keep])
        b.close()
        self.assertEqual(b.proc.returncode, 0)
        self.assertTrue(os.path.isdir(os.path.join(keep, 'hbase')),
                        os.listdir(keep))

    def test_3_bad_option(self):
        p = subprocess.run([hsptest.HBASE_MINI, '--thrift1', '127.0.0.1:0',
                            '--protocol', 'json'],
                           capture_output=True, timeout=300)
        self.assertEqual(p.returncode, 2)
        self.assertIn(b'--protocol is binary or compact', p.stderr)
        self.assertEqual(p.stdout, b'')

    def test_4_region_servers_and_regions(self):
        """--region-servers 2: both serve regions (the second one used to
        abort at start on a metrics-name clash, leaving one), and 'regions
        TABLE' on stdin reports each region's server and HBase's own read
        and write request counts."""
        b = hsptest.RealBackend(self.dir, thrift2=True, thrift=TH,
                                extra=['--region-servers', '2'])
        try:
            T2 = TH.T2
            c2 = TH.client2(b.port2)
            c2.createTable(T2.TTableDescriptor(
                tableName=T2.TTableName(ns=b'default', qualifier=b'rs'),
                columns=[T2.TColumnFamilyDescriptor(name=b'd')]),
                [bytes([i]) for i in range(1, 8)])
            c2.transport.close()
            c = TH.client1(b.port)
            for i in range(8):
                c.mutateRow(b'rs', bytes([i]) + b'row', [TH.T.Mutation(
                    column=b'd:a', value=b'v')], {})
            for _ in range(3):
                self.assertEqual(len(c.getRow(b'rs', b'\x03row', {})), 1)
            c.transport.close()
            w = b.control('regions rs').split()
            self.assertEqual(w[:4], ['ok', 'regions', 'rs', '8'], w)
            regions = [x.split(':') for x in w[4:]]
            self.assertEqual([r[0] for r in regions],
                             ['-'] + ['%02x' % i for i in range(1, 8)])
            self.assertEqual({r[1] for r in regions}, {'0', '1'}, regions)
            self.assertEqual([int(r[3]) for r in regions], [1] * 8, regions)
            self.assertEqual([int(r[2]) for r in regions],
                             [0, 0, 0, 3, 0, 0, 0, 0], regions)
            self.assertEqual(b.control('regions nosuch'),
                             'ok regions nosuch 0')
            self.assertTrue(b.control('frobnicate x').startswith('error:'))
            self.assertNotIn('Failed init', b.log_text())
        finally:
            b.close()
        self.assertEqual(b.proc.returncode, 0, b.log_text()[-2000:])


def main():
    global ARGS, TH
    ap = argparse.ArgumentParser()
    ap.add_argument('--pydir', required=True)
    ARGS, rest = ap.parse_known_args()
    TH = hsptest.Thrift(ARGS.pydir)
    unittest.main(argv=[sys.argv[0]] + rest, verbosity=2)


if __name__ == '__main__':
    main()
