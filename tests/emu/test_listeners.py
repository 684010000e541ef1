#!/usr/bin/python3
"""test_listeners.py: several Thrift servers over one hbase-emu store, each
stopped and started on its own, as HBase runs many Thrift servers over one
cluster and a fault test kills one of them.

  /usr/bin/python3 tests/emu/test_listeners.py --emu BUILD/tests/emu/hbase-emu \\
      --pydir BUILD/thrift/py

Checks: a row written through one server reads back through every other
(Thrift1 and Thrift2); a scanner belongs to the server that opened it (its
id is unknown elsewhere, with HBase's IllegalArgument); stopping a server
(stdin 'stop HOST:PORT', hbase-mini's command) resets its connections,
refuses new ones and loses its scanners, for good, while the other servers
and their scanners go on; 'start HOST:PORT' serves again on the same port,
with the data.
"""

import argparse
import os
import shutil
import sys
import tempfile
import threading
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, '..', 'lib'))
import hsptest  # noqa: E402

ARGS = None
TH = None


def name(port):
    return '127.0.0.1:%d' % port


class Listeners(unittest.TestCase):

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix='emu-listeners-')
        self.emu = hsptest.EmuBackend(ARGS.emu, self.tmp, tables={'t': ['f']},
                                      listeners=2, thrift2=2, control=True)
        self.clients = []

    def tearDown(self):
        for c in self.clients:
            try:
                c.transport.close()
            except Exception:
                pass
        self.emu.close()
        if os.environ.get('HSP_KEEP_LOGS'):
            sys.stderr.write('log kept in %s\n' % self.tmp)
        else:
            shutil.rmtree(self.tmp, ignore_errors=True)

    def c1(self, port):
        c = TH.client1(port, timeout=10)
        self.clients.append(c)
        return c

    def c2(self, port):
        c = TH.client2(port, timeout=10)
        self.clients.append(c)
        return c

    def put(self, c, row, value):
        c.mutateRow(b't', row, [TH.T.Mutation(column=b'f:q', value=value)],
                    {})

    def value(self, c, row):
        r = c.getRow(b't', row, {})
        return r[0].columns[b'f:q'].value if r else None

    def test_one_store(self):
        a, b = self.emu.ports
        a2, b2 = self.emu.ports2
        self.put(self.c1(a), b'r1', b'v1')
        self.assertEqual(self.value(self.c1(b), b'r1'), b'v1')
        got = self.c2(b2).get(b't', TH.T2.TGet(row=b'r1'))
        self.assertEqual(got.columnValues[0].value, b'v1')
        self.c2(a2).put(b't', TH.T2.TPut(row=b'r2', columnValues=[
            TH.T2.TColumnValue(family=b'f', qualifier=b'q', value=b'v2')]))
        self.assertEqual(self.value(self.c1(a), b'r2'), b'v2')

    def test_scanner_belongs_to_its_server(self):
        a, b = self.emu.ports
        ca, cb = self.c1(a), self.c1(b)
        for i in range(5):
            self.put(ca, b'k%d' % i, b'v')
        sid = ca.scannerOpen(b't', b'', [], {})
        self.assertEqual(len(ca.scannerGetList(sid, 1)), 1)
        with self.assertRaises(TH.T.IllegalArgument) as e:
            cb.scannerGetList(sid, 1)
        self.assertEqual(e.exception.message, 'scanner ID is invalid')
        # still there on its own server, where it left off
        self.assertEqual(ca.scannerGetList(sid, 1)[0].row, b'k1')

    def test_stop_start_thrift1(self):
        a, b = self.emu.ports
        ca, cb = self.c1(a), self.c1(b)
        for i in range(5):
            self.put(ca, b'k%d' % i, b'v%d' % i)
        sa = ca.scannerOpen(b't', b'', [], {})
        sb = cb.scannerOpen(b't', b'', [], {})
        self.assertEqual(ca.scannerGetList(sa, 2)[1].row, b'k1')
        self.assertEqual(cb.scannerGetList(sb, 2)[1].row, b'k1')

        self.assertEqual(self.emu.control('stop ' + name(a)),
                         'ok stopped ' + name(a))
        # its connections are gone, new ones refused
        with self.assertRaises(TH.TTransport.TTransportException):
            ca.getRow(b't', b'k0', {})
        self.assertFalse(hsptest.can_connect(a))
        # the other server and its scanner go on, with the data
        self.assertEqual(self.value(cb, b'k4'), b'v4')
        self.assertEqual(cb.scannerGetList(sb, 1)[0].row, b'k2')
        # the stopped server's scanner is unknown everywhere
        with self.assertRaises(TH.T.IllegalArgument) as e:
            cb.scannerGetList(sa, 1)
        self.assertEqual(e.exception.message, 'scanner ID is invalid')
        self.put(cb, b'k5', b'v5')

        self.assertEqual(self.emu.control('start ' + name(a)),
                         'ok started ' + name(a))
        ca = self.c1(a)
        self.assertEqual(self.value(ca, b'k5'), b'v5')
        # lost for good, not revived by the restart; new ids are new
        with self.assertRaises(TH.T.IllegalArgument):
            ca.scannerGetList(sa, 1)
        sa2 = ca.scannerOpen(b't', b'k3', [], {})
        self.assertNotIn(sa2, (sa, sb))
        self.assertEqual([r.row for r in ca.scannerGetList(sa2, 10)],
                         [b'k3', b'k4', b'k5'])
        # idempotent, as hbase-mini's
        self.assertEqual(self.emu.control('start ' + name(a)),
                         'ok started ' + name(a))

    def test_stop_start_thrift2(self):
        a2, b2 = self.emu.ports2
        ca, cb = self.c2(a2), self.c2(b2)
        for i in range(3):
            ca.put(b't', TH.T2.TPut(row=b'k%d' % i, columnValues=[
                TH.T2.TColumnValue(family=b'f', qualifier=b'q', value=b'v')]))
        sa = ca.openScanner(b't', TH.T2.TScan())
        self.assertEqual(len(ca.getScannerRows(sa, 1)), 1)
        self.assertEqual(self.emu.control('stop ' + name(a2)),
                         'ok stopped ' + name(a2))
        with self.assertRaises(TH.TTransport.TTransportException):
            ca.getScannerRows(sa, 1)
        with self.assertRaises(TH.T2.TIllegalArgument) as e:
            cb.getScannerRows(sa, 1)
        self.assertEqual(e.exception.message, 'Invalid scanner Id')
        self.assertEqual(self.emu.control('start ' + name(a2)),
                         'ok started ' + name(a2))
        ca = self.c2(a2)
        with self.assertRaises(TH.T2.TIllegalArgument):
            ca.getScannerRows(sa, 1)
        self.assertEqual(len(ca.getScannerRows(
            ca.openScanner(b't', TH.T2.TScan()), 10)), 3)

    def test_stop_with_a_call_running(self):
        """A call running on a server that stops ends without its reply
        (as when its process dies), the stop waits for it, and a scanner
        that call opened is lost with the rest."""
        self.emu.close()
        self.emu = hsptest.EmuBackend(ARGS.emu, self.tmp, tables={'t': ['f']},
                                      listeners=2, control=True,
                                      extra=['--rpc-latency-us', '1000000'],
                                      name='emu-slow')
        a, b = self.emu.ports
        ca = self.c1(a)
        self.put(ca, b'k', b'v')
        out = []

        def open_scanner():
            try:
                out.append(ca.scannerOpen(b't', b'', [], {}))
            except Exception as e:  # noqa: BLE001 - what the test checks
                out.append(e)
        t = threading.Thread(target=open_scanner)
        t.start()
        time.sleep(0.5)     # the call is in its 1 s of latency
        t0 = time.time()
        self.assertEqual(self.emu.control('stop ' + name(a)),
                         'ok stopped ' + name(a))
        self.assertGreater(time.time() - t0, 0.2, 'did not wait for the call')
        t.join(10)
        self.assertIsInstance(out[0], TH.TTransport.TTransportException)
        hsptest.wait_for(lambda: '1 scanner(s) lost' in self.emu.log_text(),
                         5, 'the scanner dropped')
        cb = self.c1(b)
        for sid in range(3):
            with self.assertRaises(TH.T.IllegalArgument):
                cb.scannerGetList(sid, 1)

    def test_commands(self):
        self.assertTrue(self.emu.control('stop 127.0.0.1:1').startswith(
            'error: no Thrift server on'))
        self.assertTrue(self.emu.control('halt').startswith('error:'))
        a = self.emu.ports[0]
        self.assertEqual(self.emu.control('stop ' + name(a)),
                         'ok stopped ' + name(a))
        self.assertEqual(self.emu.control('stop ' + name(a)),
                         'ok stopped ' + name(a))
        self.assertEqual(self.emu.control('start ' + name(a)),
                         'ok started ' + name(a))
        self.assertTrue(self.emu.alive())


def main():
    global ARGS, TH
    ap = argparse.ArgumentParser()
    ap.add_argument('--emu', required=True)
    ap.add_argument('--pydir', required=True)
    ARGS, rest = ap.parse_known_args()
    TH = hsptest.Thrift(ARGS.pydir)
    unittest.main(argv=[sys.argv[0]] + rest, verbosity=2)


if __name__ == '__main__':
    main()
