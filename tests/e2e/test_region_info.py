"""Thrift1 getRegionInfo on a salted table answers for the logical row.

getRegionInfo takes an hbase:meta row key, "table,row,99999999999999", and
HBase answers with the region whose meta row comes at or before it (a
reverse scan of hbase:meta): the region holding row.  Through the proxy
the row of a salted table gains its salt, so the answer is the region
holding the logical row, exactly what HBase answers straight for the
salted row.  The table is made through the proxy with Thrift2 createTable
(one region per bucket), so buckets are regions and a row sent unsalted
would land in another one.  An unsalted table, a meta row without a
second comma and an empty row go on as they are.

  /usr/bin/python3 tests/e2e/test_region_info.py \\
      --proxy BUILD/daemon/hbase-salt-proxy --emu BUILD/tests/emu/hbase-emu \\
      --pydir BUILD/thrift/py [--backend-kind emu|real]
"""

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                '..', 'lib'))
import hsptest  # noqa: E402

ARGS = None
TH = None

SALTED, PLAIN = 'ri_salted', 'ri_plain'
BUCKETS = 4
NINES = b',99999999999999'
ROWS = [b'user%d' % i for i in range(12)] + [b'a,b', b'\xff']


def physical(conf, table, key):
    """The salted key, as `hbase-salt-proxy --explain-key` says."""
    esc = ''.join(chr(b) if chr(b).isascii() and chr(b).isalnum()
                  else '\\x%02x' % b for b in key)
    out = subprocess.run([ARGS.proxy, '--explain-key', table, esc, '-c', conf],
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                         check=True).stdout.decode()
    return bytes.fromhex(re.search(r'^physical \(hex\):\s*([0-9a-f]*)$',
                                   out, re.M).group(1))


def region(port, meta_row):
    """getRegionInfo's answer, or its IOError's first line."""
    c = TH.client1(port, timeout=120.0)
    try:
        r = c.getRegionInfo(meta_row)
        return ('ok', r.startKey, r.endKey, r.id, r.name, r.version,
                r.serverName, r.port)
    except TH.T.IOError as e:
        return ('IOError', e.message.split('\n', 1)[0], e.canRetry)
    finally:
        c.transport.close()


class RegionInfoTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix='hsp-region-info-')
        cls.hb = hsptest.start_backend(ARGS.backend_kind, cls.dir,
                                       emu=ARGS.emu, thrift=TH, thrift2=True,
                                       tables={PLAIN: ['d']})
        port, port2 = hsptest.free_port(), hsptest.free_port()
        cls.conf_text = (
            '[proxy]\nlisten = 127.0.0.1:%d\nworkers = 1\n'
            '[backend]\nservers = 127.0.0.1:%d\n'
            'thrift2_servers = 127.0.0.1:%d\nrequest_timeout_ms = 60000\n'
            '[thrift2]\nlisten = 127.0.0.1:%d\n'
            '[table:%s]\nbuckets = %d\n'
            % (port, cls.hb.port, cls.hb.port2, port2, SALTED, BUCKETS))
        cls.proxy = hsptest.Proxy(ARGS.proxy, cls.dir, cls.conf_text,
                                  [port, port2])
        cls.proxy.port = port
        # one region per bucket: the proxy puts the buckets' split points
        c2 = TH.client2(port2, timeout=120.0)
        c2.createTable(TH.T2.TTableDescriptor(
            tableName=TH.T2.TTableName(qualifier=SALTED.encode()),
            columns=[TH.T2.TColumnFamilyDescriptor(name=b'd')]), [])
        c2.transport.close()

    @classmethod
    def tearDownClass(cls):
        cls.proxy.close()
        cls.hb.close()
        shutil.rmtree(cls.dir, ignore_errors=True)

    def test_salted_row_region(self):
        """Through the proxy: the region holding the salted row, as HBase
        answers straight for it; it is that bucket's region."""
        conf = os.path.join(self.dir, 'proxy.conf')
        moved = 0
        for row in ROWS:
            phys = physical(conf, SALTED, row)
            t = SALTED.encode() + b','
            got = region(self.proxy.port, t + row + NINES)
            want = region(self.hb.port, t + phys + NINES)
            self.assertEqual(got, want, row)
            self.assertEqual(got[0], 'ok', got)
            # the bucket's own region: [salt, next salt)
            start, end = got[1], got[2]
            self.assertTrue(start <= phys and (end == b'' or phys < end),
                            (row, phys, start, end))
            self.assertEqual(start, b'' if phys[0] == 0 else phys[:1], row)
            if got != region(self.hb.port, t + row + NINES):
                moved += 1
        # the logical rows, sent unsalted, would have named other regions
        self.assertGreater(moved, 0)

    def test_passed_as_is(self):
        """An unsalted table, an empty row, a meta row with one comma or
        none: HBase's own answer."""
        for meta in (PLAIN.encode() + b',user1' + NINES,
                     SALTED.encode() + b',' + NINES,
                     SALTED.encode() + b',user1',
                     b'nope'):
            self.assertEqual(region(self.proxy.port, meta),
                             region(self.hb.port, meta), meta)


def main():
    global ARGS, TH
    ap = argparse.ArgumentParser()
    ap.add_argument('--proxy', required=True)
    ap.add_argument('--emu', required=True)
    ap.add_argument('--pydir', required=True)
    hsptest.add_backend_args(ap)
    ARGS, rest = ap.parse_known_args()
    TH = hsptest.Thrift(ARGS.pydir)
    unittest.main(argv=[sys.argv[0]] + rest, verbosity=2)


if __name__ == '__main__':
    main()
