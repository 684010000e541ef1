"""The table catalog and a table the config file has no section for
(issue 20, "What a new user trips over").

A proxy whose file has no [table:X] section for a table the catalog holds
as salted used to serve X unsalted, silently: reads returned the raw
salted rows, writes landed unsalted where no salted read finds them.  On
hbase-emu, with proxies started as an operator would (test_catalog.py's):
  - proxy A registers `events` (16 buckets); proxy B, with no section,
    refuses Thrift1 put/get/getRows/scans and Thrift2 get/put on it with
    the method's IOError/TIOError (canRetry false) naming the catalog's
    mapping, writes nothing, logs it once, /healthz answers 503 naming
    it, --check-config exits 1 naming it; the calls on the table itself
    (getTableNames, getColumnDescriptors, getTableRegions, Thrift2
    tableExists) still answer; a table in neither the catalog nor the
    file passes through unsalted; with the catalog off nothing changes;
  - an entry registered while B runs (A started later) is refused by B
    within the recheck period, still after a reload, and passes through
    again once the entry is removed.

  /usr/bin/python3 tests/e2e/test_catalog_orphan.py \\
      --proxy BUILD/daemon/hbase-salt-proxy --emu BUILD/tests/emu/hbase-emu \\
      --pydir BUILD/thrift/py
"""

import argparse
import os
import signal
import sys
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, '..', 'lib'))
import test_catalog as tc  # noqa: E402
import hsptest  # noqa: E402
from hsptest import wait_for  # noqa: E402

# test_catalog's proxies recheck every 200 ms: a second is five periods
RECHECK_S = 0.2


def message(exc):
    m = exc.message
    return m.decode() if isinstance(m, bytes) else m


class OrphanTest(tc.CatalogCase):
    def refused1(self, call):
        with self.assertRaises(tc.T.IOError) as cm:
            call()
        self.assertFalse(cm.exception.canRetry, message(cm.exception))
        return message(cm.exception)

    def refused2(self, call):
        with self.assertRaises(tc.T2.TIOError) as cm:
            call()
        self.assertFalse(cm.exception.canRetry, message(cm.exception))
        return message(cm.exception)

    def test_unconfigured_salted_table(self):
        T, T2 = tc.T, tc.T2
        emu = self.emu(['events', 'plain'], thrift2=True)
        a = self.proxy('a', emu.port, {'events': 'buckets = 16\n'})
        self.assertIn('registered table events', a.text())
        ca = tc.client(a.port)
        tc.put(ca, 'events', b'user1')
        tc.put(ca, 'events', b'user2')
        direct = tc.client(emu.port)
        self.assertEqual(len(tc.raw_rows(direct, 'events')), 2)

        b = self.proxy('b', emu.port, {}, thrift2_port=emu.port2)
        cb = tc.client(b.port)
        msg = self.refused1(lambda: tc.put(cb, 'events', b'user3'))
        for text in ('table events is not served', tc.CATALOG,
                     'buckets = 16', '[table:events] section', 'registered'):
            self.assertIn(text, msg)
        for call in (lambda: cb.getRow(b'events', b'user1', {}),
                     lambda: cb.get(b'events', b'user1', b'd:q', {}),
                     lambda: cb.getRows(b'events', [b'user1', b'x'], {}),
                     lambda: cb.scannerOpenWithScan(b'events', T.TScan(), {}),
                     lambda: cb.scannerOpen(b'events', b'', [b'd'], {}),
                     lambda: cb.deleteAllRow(b'events', b'user1', {}),
                     lambda: cb.mutateRows(b'events', [T.BatchMutation(
                         row=b'user4', mutations=[T.Mutation(
                             column=b'd:q', value=b'v')])], {})):
            self.assertEqual(self.refused1(call), msg)
        c2 = tc.t2client(b.port2)
        put2 = T2.TPut(row=b'user5', columnValues=[T2.TColumnValue(
            family=b'd', qualifier=b'q', value=b'v')])
        self.assertIn('[table:events]',
                      self.refused2(lambda: c2.put(b'events', put2)))
        self.assertIn('[table:events]', self.refused2(
            lambda: c2.get(b'events', T2.TGet(row=b'user1'))))
        self.assertIn('[table:events]', self.refused2(
            lambda: c2.getScannerResults(b'events', T2.TScan(), 10)))
        # nothing of B's calls reached HBase
        self.assertEqual(len(tc.raw_rows(direct, 'events')), 2)
        self.assertEqual(len(tc.raw_rows(direct, tc.CATALOG)), 1)

        # the calls on the table itself still answer
        self.assertIn(b'events', cb.getTableNames())
        self.assertIn(b'd:', cb.getColumnDescriptors(b'events'))
        self.assertTrue(cb.getTableRegions(b'events'))
        self.assertTrue(c2.tableExists(T2.TTableName(qualifier=b'events')))

        # a table in neither the catalog nor the file: unsalted, as ever
        tc.put(cb, 'plain', b'p1')
        self.assertEqual(tc.raw_rows(direct, 'plain'), [b'p1'])
        self.assertEqual(len(cb.getRow(b'plain', b'p1', {})), 1)

        status, body = tc.healthz(b.admin)
        self.assertEqual(status, 503, body)
        self.assertIn('degraded', body)
        self.assertIn('table events is not served', body)
        status, body = tc.healthz(a.admin)
        self.assertEqual(status, 200, body)

        r = b.check_config()
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertIn('table events: NOT SERVED', r.stderr)
        self.assertIn('[table:events]', r.stderr)
        r = a.check_config()
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)

        # said once, however many rechecks ran since
        time.sleep(5 * RECHECK_S)
        self.assertEqual(b.text().count('table events is not served'), 1,
                         b.text())

        # the catalog off: a proxy that keeps none is told nothing
        off = self.proxy('off', emu.port, {}, catalog=False)
        tc.put(tc.client(off.port), 'events', b'unsalted')
        self.assertIn(b'unsalted', tc.raw_rows(direct, 'events'))

    def test_registered_later(self):
        emu = self.emu(['events', 'late'])
        b = self.proxy('b', emu.port, {'events': 'buckets = 16\n'})
        cb = tc.client(b.port)
        self.assertEqual(cb.getRow(b'late', b'k', {}), [])
        # another proxy registers `late` while B runs
        self.proxy('a', emu.port, {'late': 'buckets = 4\n'})
        t0 = time.monotonic()

        def refused():
            try:
                cb.getRow(b'late', b'k', {})
                return False
            except tc.T.IOError as e:
                return '[table:late]' in message(e) and not e.canRetry
        wait_for(refused, 10, 'B refusing late')
        # within the recheck period (and the time one check takes)
        self.assertLess(time.monotonic() - t0, 10 * RECHECK_S + 2)
        msg = self.refused1(lambda: tc.put(cb, 'late', b'k'))
        self.assertIn('buckets = 4', msg)
        direct = tc.client(emu.port)
        self.assertEqual(tc.raw_rows(direct, 'late'), [])
        status, body = tc.healthz(b.admin)
        self.assertEqual(status, 503, body)
        self.assertIn('table late is not served', body)
        # a reload keeps refusing it, from its first call on
        b.proc.send_signal(signal.SIGHUP)
        wait_for(lambda: 'applied configuration generation 2' in b.text(),
                 10, 'B reloaded')
        self.assertIn('buckets = 4', self.refused1(
            lambda: tc.put(cb, 'late', b'k')))
        # B's own table is still served
        tc.put(cb, 'events', b'e1')
        self.assertEqual(len(cb.getRow(b'events', b'e1', {})), 1)

        # the entry removed (the table holds no salted rows): unsalted again
        direct.deleteAllRow(tc.CATALOG.encode(), b'late', {})

        def served():
            try:
                cb.getRow(b'late', b'k', {})
                return True
            except tc.T.IOError:
                return False
        wait_for(served, 10, 'B serving late again')
        self.assertIn('no entry in %s any more' % tc.CATALOG, b.text())
        status, body = tc.healthz(b.admin)
        self.assertEqual(status, 200, body)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--proxy', required=True)
    ap.add_argument('--emu', required=True)
    ap.add_argument('--pydir', required=True)
    tc.ARGS, rest = ap.parse_known_args()
    hsptest.import_thrift(tc.ARGS.pydir, tc)
    unittest.main(argv=[sys.argv[0]] + rest, verbosity=2)


if __name__ == '__main__':
    main()
