"""Scans and reads that survive a Thrift server's death: hbase-salt-proxy in
front of two "servers" over one store (two fault-injecting TCP relays to one
hbase-emu, or a real HBase with two Thrift servers), one of which dies
mid-scan.  The scan through the proxy must return exactly the rows of the
same scan without the fault (none lost, none repeated, order kept), Thrift1
and Thrift2, forward and reversed; scans that cannot resume exactly fail
loudly, saying why.

  /usr/bin/python3 tests/e2e/test_scan_resume.py --proxy BUILD/daemon/hbase-salt-proxy \\
      --emu BUILD/tests/emu/hbase-emu --pydir BUILD/thrift/py [--backend-kind real]

HSP_KEEP_LOGS=1 keeps the temp dir (configs, logs).
"""

import argparse
import os
import shutil
import socket
import sys
import tempfile
import threading
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, '..', 'lib'))
sys.path.insert(0, HERE)
from hsptest import (Proxy, Thrift, add_backend_args, free_port,  # noqa: E402
                     start_backend, wait_for)
from faultlib import Relay  # noqa: E402

ARGS = None
TH = None
ROWS = 240
BUCKETS = 8
TABLE = 't'
WORKDIR = None
BACKEND = None


def key(i):
    return b'row%04d' % i


class CutRelay(Relay):
    """A relay that counts the calls it sees (by method name) and, armed,
    lets the Nth matching call through and then dies as a killed server
    would: every connection reset, new ones refused (the reply of that
    call is lost after the server acted on it).  revive() listens again
    on the same port (a restarted server)."""

    def __init__(self, target_port):
        self.seen = {}
        self.armed = None
        self.fired = threading.Event()
        self.dead = False
        self.partners = []      # disarmed when this one dies
        super(CutRelay, self).__init__(target_port)

    def count(self, name):
        with self.lock:
            return self.seen.get(name, 0)

    def arm(self, name, nth=1):
        with self.lock:
            self.armed = [name, nth]
            self.fired.clear()

    def _trips(self, data):
        with self.lock:
            for name in (b'scannerOpenWithScan', b'scannerGetList',
                         b'openScanner', b'getScannerRows', b'getRow',
                         b'get', b'mutateRow', b'increment'):
                if name in data:
                    self.seen[name] = self.seen.get(name, 0) + 1
            if self.armed is None or self.armed[0] not in data:
                return False
            # pipelined calls come several to a piece
            self.armed[1] -= data.count(self.armed[0])
            if self.armed[1] > 0:
                return False
            self.armed = None
            return True

    def die(self):
        # first: the proxy may answer the client before the cut returns
        self.fired.set()
        for p in self.partners:
            with p.lock:
                p.armed = None
        self.dead = True
        try:
            # shutdown wakes the accept blocked on it; close alone would
            # leave the socket listening until one more connection came
            self.lsock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.lsock.close()
        self.cut()

    def revive(self):
        self.lsock = socket.socket()
        self.lsock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.lsock.bind(('127.0.0.1', self.port))
        self.lsock.listen(128)
        self.dead = False
        self.thread = threading.Thread(target=self._accept, daemon=True)
        self.thread.start()

    def after_send(self, to_server, data):
        if to_server and self._trips(data):
            # the server has the call; its answer never comes
            time.sleep(0.05)
            self.die()
            return True
        return False


class Env(object):
    """hbase-emu (Thrift1 and Thrift2) behind two relays each, the proxy
    over the relays, table t (8 buckets) filled with ROWS rows."""

    def __init__(self, name, backend='', scan=''):
        self.workdir = os.path.join(WORKDIR, name)
        os.makedirs(self.workdir)
        self.emu = start_backend('emu', self.workdir, emu=ARGS.emu,
                                 thrift2=True, tables={TABLE: ['d']})
        self.r1 = [CutRelay(self.emu.port), CutRelay(self.emu.port)]
        self.r2 = [CutRelay(self.emu.port2), CutRelay(self.emu.port2)]
        for attempt in range(3):
            try:
                self.start_proxy(backend, scan)
                break
            except AssertionError:
                # a port taken meanwhile (an ephemeral one of the relays)
                if attempt == 2:
                    # no tearDown follows a failed setUp
                    for r in self.r1 + self.r2:
                        r.close()
                    self.emu.close()
                    raise
        c = self.c1()
        c.mutateRows(TABLE.encode(), [
            TH.T.BatchMutation(row=key(i), mutations=[
                TH.T.Mutation(column=b'd:c', value=b'v%d' % i),
                TH.T.Mutation(column=b'd:e', value=b'w%d' % (i * 7))])
            for i in range(ROWS)], {})
        c.transport.close()

    def start_proxy(self, backend, scan):
        self.port, self.port2, admin = free_port(), free_port(), free_port()
        self.admin = admin
        conf = ('[proxy]\nlisten = 127.0.0.1:%d\nworkers = 2\n'
                '[backend]\nservers = %s\nthrift2_servers = %s\n'
                'request_timeout_ms = 3000\nconnect_timeout_ms = 500\n'
                'pool_size = 8\n%s'
                '[scan]\ncaching_max = 10\n%s'
                '[thrift2]\nlisten = 127.0.0.1:%d\n'
                '[admin]\nlisten = 127.0.0.1:%d\n'
                '[table:%s]\nbuckets = %d\nsalt_format = hex\n'
                % (self.port,
                   ', '.join('127.0.0.1:%d' % r.port for r in self.r1),
                   ', '.join('127.0.0.1:%d' % r.port for r in self.r2),
                   backend, scan, self.port2, admin, TABLE, BUCKETS))
        self.proxy = Proxy(ARGS.proxy, self.workdir, conf,
                           [self.port, self.port2, admin],
                           name='proxy-%d' % self.port)

    def c1(self):
        return TH.client1(self.port)

    def c2(self):
        return TH.client2(self.port2)

    def metrics(self):
        import urllib.request
        with urllib.request.urlopen('http://127.0.0.1:%d/metrics'
                                    % self.admin, timeout=5) as r:
            return r.read().decode()

    def resumes(self, outcome):
        line = ('hsp_scan_resumes_total{table="%s",outcome="%s"} '
                % (TABLE, outcome))
        for ln in self.metrics().splitlines():
            if ln.startswith(line):
                return int(ln[len(line):])
        return None

    def holder(self, relays, before, name):
        """The relay a scanner's opens went through (its server)."""
        moved = [r for r, n in zip(relays, before) if r.count(name) > n]
        assert len(moved) == 1, 'opens went to %d servers' % len(moved)
        return moved[0]

    def close(self):
        self.proxy.close()
        for r in self.r1 + self.r2:
            r.close()
        self.emu.close()


def arm_either(relays, name, nth):
    """Whichever of relays sees its nth call of name first dies; the
    others are disarmed then (the servers are one store: one death is the
    fault)."""
    for r in relays:
        r.partners = [o for o in relays if o is not r]
        r.arm(name, nth)


def rows1(rows):
    return [(r.row, sorted((k, v.value) for k, v in r.columns.items()))
            for r in rows]


def rows2(rows):
    return [(r.row, sorted((c.family, c.qualifier, c.value)
                           for c in r.columnValues)) for r in rows]


class _Base(unittest.TestCase):
    BACKEND_KEYS = ''           # scan_resume_attempts: its default, 3

    def setUp(self):
        self.env = Env(self.id().split('.')[-1], backend=self.BACKEND_KEYS)

    def tearDown(self):
        self.env.close()

    def scan(self, thrift2, tscan, kill_at=2, n=7):
        """The scan without a fault, then again with the server holding
        its scanner killed at its kill_at-th fetch after the first n rows:
        (rows without, rows with)."""
        e = self.env
        t = TABLE.encode()
        if thrift2:
            c, relays, opens, fetch = e.c2(), e.r2, b'openScanner', \
                b'getScannerRows'
            open_, get, close, conv = (lambda: c.openScanner(t, tscan),
                                       c.getScannerRows, c.closeScanner,
                                       rows2)
        else:
            c, relays, opens, fetch = e.c1(), e.r1, \
                b'scannerOpenWithScan', b'scannerGetList'
            open_, get, close, conv = (
                lambda: c.scannerOpenWithScan(t, tscan, {}),
                c.scannerGetList, c.scannerClose, rows1)

        def drain(sid, got):
            while True:
                rows = get(sid, n)
                if not rows:
                    close(sid)
                    return got
                got += conv(rows)
        ref = drain(open_(), [])
        before = [r.count(opens) for r in relays]
        sid = open_()
        holder = e.holder(relays, before, opens)
        got = conv(get(sid, n))
        holder.arm(fetch, kill_at)
        got = drain(sid, got)
        c.transport.close()
        self.assertTrue(holder.fired.is_set(), 'the server never died')
        return ref, got

    def scan1(self, tscan, **kw):
        return self.scan(False, tscan, **kw)

    def scan2(self, tscan, **kw):
        return self.scan(True, tscan, **kw)


class ResumeTest(_Base):
    def check(self, ref, got, reversed_=False):
        keys = [k for k, _ in ref]
        want = [key(i) for i in range(ROWS)]
        self.assertEqual(keys, want[::-1] if reversed_ else want)
        self.assertEqual(len(got), len(ref))
        self.assertEqual(got, ref)
        self.assertGreaterEqual(self.env.resumes('resumed'), 1)
        self.assertIn('resume 1: resumed', self.env.proxy.log_text())

    def test_thrift1_forward(self):
        ref, got = self.scan1(TH.T.TScan(caching=10))
        self.check(ref, got)

    def test_thrift1_reversed(self):
        ref, got = self.scan1(TH.T.TScan(caching=10, reversed=True))
        self.check(ref, got, True)

    def test_thrift1_bounded_columns(self):
        # bounds, columns and a filter go to the reopened scan as they were
        ref, got = self.scan1(TH.T.TScan(
            startRow=key(13), stopRow=key(201), columns=[b'd:c'], caching=10,
            filterString=b"ValueFilter(!=, 'binary:v100')"))
        self.assertEqual([k for k, _ in ref],
                         [key(i) for i in range(13, 201) if i != 100])
        self.assertEqual(got, ref)

    def test_thrift2_forward(self):
        ref, got = self.scan2(TH.T2.TScan(caching=10))
        self.check(ref, got)

    def test_thrift2_reversed(self):
        ref, got = self.scan2(TH.T2.TScan(caching=10, reversed=True))
        self.check(ref, got, True)

    def test_thrift2_scanner_results(self):
        # getScannerResults: one call, its fetches lose their server
        e = self.env
        c = e.c2()
        t = TABLE.encode()
        ref = rows2(c.getScannerResults(t, TH.T2.TScan(caching=10), ROWS))
        # whichever server holds it dies at its 12th fetch
        arm_either(e.r2, b'getScannerRows', 12)
        got = rows2(c.getScannerResults(t, TH.T2.TScan(caching=10), ROWS))
        self.assertTrue(any(r.fired.is_set() for r in e.r2))
        self.assertGreaterEqual(e.resumes('resumed'), 1)
        self.assertEqual(got, ref)
        c.transport.close()

    def test_open_lost(self):
        # the server dies as the bucket opens reach it: they go again to
        # the other one, and the scan is whole (Thrift1, Thrift2)
        e = self.env
        t = TABLE.encode()
        want = [key(i) for i in range(ROWS)]
        c = e.c1()
        arm_either(e.r1, b'scannerOpenWithScan', 1)
        sid = c.scannerOpenWithScan(t, TH.T.TScan(caching=10), {})
        got = []
        while True:
            rows = c.scannerGetList(sid, 50)
            if not rows:
                break
            got += [r.row for r in rows]
        self.assertTrue(any(r.fired.is_set() for r in e.r1))
        self.assertEqual(got, want)
        c.transport.close()
        c = e.c2()
        arm_either(e.r2, b'openScanner', 1)
        got = [r.row for r in c.getScannerResults(
            t, TH.T2.TScan(caching=10), ROWS + 1)]
        self.assertTrue(any(r.fired.is_set() for r in e.r2))
        self.assertEqual(got, want)
        self.assertIn('open sent again', e.proxy.log_text())
        c.transport.close()

    def test_server_restarts(self):
        # one server only behind the proxy's two names: it dies and comes
        # back on the same port; the scan waits for it (backoff)
        e = self.env
        c = e.c1()
        tscan = TH.T.TScan(caching=10)
        before = [r.count(b'scannerOpenWithScan') for r in e.r1]
        sid = c.scannerOpenWithScan(TABLE.encode(), tscan, {})
        holder = e.holder(e.r1, before, b'scannerOpenWithScan')
        other = [r for r in e.r1 if r is not holder][0]
        other.die()
        got = rows1(c.scannerGetList(sid, 10))
        holder.arm(b'scannerGetList', 1)
        threading.Timer(0.15, holder.revive).start()
        while True:
            rows = c.scannerGetList(sid, 10)
            if not rows:
                break
            got += rows1(rows)
        self.assertEqual([k for k, _ in got], [key(i) for i in range(ROWS)])
        c.transport.close()


class LimitTest(_Base):
    """What cannot resume exactly fails loudly, saying why."""

    def fails(self, fn, tscan, words):
        with self.assertRaises((TH.T.IOError, TH.T2.TIOError)) as cm:
            fn(tscan)
        msg = cm.exception.message
        self.assertIn('not resumed: ', msg)
        for w in words:
            self.assertIn(w, msg)
        self.assertGreaterEqual(self.env.resumes('refused')
                                + self.env.resumes('exhausted'), 1)
        return msg

    def test_batch_size(self):
        self.fails(self.scan1, TH.T.TScan(caching=10, batchSize=1),
                   ['batchSize'])

    def test_page_filter(self):
        self.fails(self.scan1, TH.T.TScan(
            caching=10, filterString=b'PageFilter(200)'), ['PageFilter'])

    def test_thrift2_page_filter(self):
        self.fails(self.scan2, TH.T2.TScan(
            caching=10, filterString=b'PageFilter(200)'), ['PageFilter'])


class ExhaustedTest(_Base):
    BACKEND_KEYS = 'scan_resume_attempts = 0\n'

    def test_no_attempts(self):
        with self.assertRaises(TH.T.IOError) as cm:
            self.scan1(TH.T.TScan(caching=10))
        self.assertIn('not resumed: [backend] scan_resume_attempts',
                      cm.exception.message)
        self.assertEqual(self.env.resumes('exhausted'), 1)


class ReadRetryTest(_Base):
    """Reads whose server dies before the answer are sent to another one;
    writes that reached a server are not sent again."""

    def test_thrift1_read_in_flight(self):
        e = self.env
        c = e.c1()
        # whichever server gets it, the 3rd getRow dies with its server
        arm_either(e.r1, b'getRow', 3)
        for i in range(40):
            rows = c.getRow(TABLE.encode(), key(i), {})
            self.assertEqual(rows1(rows), [(key(i), [
                (b'd:c', b'v%d' % i), (b'd:e', b'w%d' % (i * 7))])])
        self.assertTrue(any(r.fired.is_set() for r in e.r1))
        self.assertIn('1 read sent again', e.proxy.log_text())
        c.transport.close()

    def test_thrift2_reads_in_flight(self):
        e = self.env
        c = e.c2()
        t = TABLE.encode()
        arm_either(e.r2, b'getMultiple', 2)
        for i in range(0, 60, 6):
            got = c.getMultiple(t, [TH.T2.TGet(row=key(j))
                                    for j in range(i, i + 6)])
            self.assertEqual([g.row for g in got],
                             [key(j) for j in range(i, i + 6)])
            self.assertTrue(c.exists(t, TH.T2.TGet(row=key(i))))
            self.assertEqual(c.get(t, TH.T2.TGet(row=key(i))).row, key(i))
        self.assertTrue(any(r.fired.is_set() for r in e.r2))
        c.transport.close()

    def test_pipelined_order_kept(self):
        # 30 getRow calls in one write: the proxy queues them on one
        # connection; its server dies after the 10th reaches it.  Every
        # answer comes back, in the order asked, each with its own row.
        from thrift.transport import TTransport
        from thrift.protocol import TBinaryProtocol
        e = self.env
        out = TTransport.TMemoryBuffer()
        w = TH.Hbase.Client(TBinaryProtocol.TBinaryProtocol(out))
        n = 30
        for i in range(n):
            w._seqid = 100 + i
            w.send_getRow(TABLE.encode(), key(i), {})
        arm_either(e.r1, b'getRow', 10)
        s = socket.create_connection(('127.0.0.1', e.port), 10)
        s.sendall(out.getvalue())
        sock = TH.TSocket.TSocket()
        sock.handle = s
        iprot = TBinaryProtocol.TBinaryProtocol(
            TTransport.TBufferedTransport(sock))
        for i in range(n):
            name, mtype, seqid = iprot.readMessageBegin()
            res = TH.Hbase.getRow_result()
            res.read(iprot)
            iprot.readMessageEnd()
            self.assertEqual((name, seqid), ('getRow', 100 + i))
            self.assertIsNone(res.io, res.io and res.io.message)
            self.assertEqual([r.row for r in res.success], [key(i)])
        s.close()
        self.assertTrue(any(r.fired.is_set() for r in e.r1))

    def test_write_that_reached_the_server_not_retried(self):
        # an increment (as any write) whose server died after it arrived
        # fails; it is applied once, never twice (this held before reads
        # retried too: the test keeps it so)
        e = self.env
        c = e.c1()
        t = TABLE.encode()
        arm_either(e.r1, b'increment', 1)
        with self.assertRaises(TH.T.IOError) as cm:
            c.increment(TH.T.TIncrement(table=t, row=b'counter',
                                        column=b'd:n', ammount=1))
        self.assertTrue(any(r.fired.is_set() for r in e.r1),
                        cm.exception.message)
        c.transport.close()
        c = e.c1()
        got = c.get(t, b'counter', b'd:n', {})
        self.assertEqual([int.from_bytes(v.value, 'big') for v in got], [1])
        c.transport.close()


class ListenerTest(unittest.TestCase):
    """Several Thrift servers over one store (hbase-emu's --listen
    repeated, or real HBase's through hbase-mini), each stopped and started
    again mid-scan as an operator restarts one: the scan through the proxy
    returns exactly the rows of the same scan without the fault, Thrift1
    and Thrift2, forward and reversed.  --backend-kind real runs it on
    HBase's own Thrift servers."""

    ROWS = 400

    @classmethod
    def setUpClass(cls):
        cls.workdir = os.path.join(WORKDIR, 'listeners')
        os.makedirs(cls.workdir)
        cls.backend = start_backend(
            ARGS.backend_kind, cls.workdir, emu=ARGS.emu, thrift=TH,
            tables={TABLE: ['d']}, thrift2=2, listeners=2, control=True)
        b = cls.backend
        cls.port, cls.port2, cls.admin = free_port(), free_port(), free_port()
        conf = ('[proxy]\nlisten = 127.0.0.1:%d\nworkers = 2\n'
                '[backend]\nservers = %s\nthrift2_servers = %s\n'
                'request_timeout_ms = 20000\npool_size = 8\n'
                '[scan]\ncaching_max = 10\n'
                '[thrift2]\nlisten = 127.0.0.1:%d\n'
                '[admin]\nlisten = 127.0.0.1:%d\n'
                '[table:%s]\nbuckets = %d\nsalt_format = hex\n'
                % (cls.port, ', '.join('127.0.0.1:%d' % p for p in b.ports),
                   ', '.join('127.0.0.1:%d' % p for p in b.ports2),
                   cls.port2, cls.admin, TABLE, BUCKETS))
        cls.proxy = Proxy(ARGS.proxy, cls.workdir, conf,
                          [cls.port, cls.port2, cls.admin])
        c = TH.client1(cls.port, timeout=120)
        c.mutateRows(TABLE.encode(), [
            TH.T.BatchMutation(row=key(i), mutations=[
                TH.T.Mutation(column=b'd:c', value=b'v%d' % i)])
            for i in range(cls.ROWS)], {})
        c.transport.close()

    @classmethod
    def tearDownClass(cls):
        cls.proxy.close()
        cls.backend.close()

    def metric(self, prefix):
        import urllib.request
        with urllib.request.urlopen('http://127.0.0.1:%d/metrics'
                                    % self.admin, timeout=5) as r:
            for ln in r.read().decode().splitlines():
                if ln.startswith(prefix + ' '):
                    return int(float(ln.split()[-1]))
        return 0

    def resumed(self):
        return self.metric('hsp_scan_resumes_total{table="%s",'
                           'outcome="resumed"}' % TABLE)

    def requests(self, port):
        return self.metric('hsp_backend_requests_total{server='
                           '"127.0.0.1:%d"}' % port)

    def control(self, cmd, port):
        answer = self.backend.control('%s 127.0.0.1:%d' % (cmd, port))
        self.assertTrue(answer.startswith('ok'), answer)

    def scan(self, thrift2, reversed_):
        t = TABLE.encode()
        if thrift2:
            c = TH.client2(self.port2, timeout=120)
            ports = self.backend.ports2
            tscan = TH.T2.TScan(caching=10, reversed=reversed_)
            open_, get, close, conv = (lambda: c.openScanner(t, tscan),
                                       c.getScannerRows, c.closeScanner,
                                       rows2)
        else:
            c = TH.client1(self.port, timeout=120)
            ports = self.backend.ports
            tscan = TH.T.TScan(caching=10, reversed=reversed_)
            open_, get, close, conv = (
                lambda: c.scannerOpenWithScan(t, tscan, {}),
                c.scannerGetList, c.scannerClose, rows1)

        def read(sid, got, most):
            while most > 0:
                rows = get(sid, 7)
                if not rows:
                    return True
                got += conv(rows)
                most -= len(rows)
            return False
        ref = []
        read(open_(), ref, 10 ** 9)
        before = self.resumed()
        sent = [self.requests(p) for p in ports]
        sid = open_()
        # its buckets' opens went to one server (the proxy counts them)
        holder = [p for p, n in zip(ports, sent) if self.requests(p) > n]
        self.assertEqual(len(holder), 1, holder)
        got = []
        read(sid, got, 20)
        # the server holding the scan is stopped (its scanners lost) while
        # the scan reads on, then started again
        self.control('stop', holder[0])
        try:
            read(sid, got, 150)
        finally:
            self.control('start', holder[0])
        read(sid, got, 10 ** 9)
        close(sid)
        c.transport.close()
        want = [key(i) for i in range(self.ROWS)]
        self.assertEqual([k for k, _ in ref],
                         want[::-1] if reversed_ else want)
        self.assertEqual(len(got), len(ref))
        self.assertEqual(got, ref)
        self.assertGreater(self.resumed(), before)

    def test_thrift1_forward(self):
        self.scan(False, False)

    def test_thrift1_reversed(self):
        self.scan(False, True)

    def test_thrift2_forward(self):
        self.scan(True, False)

    def test_thrift2_reversed(self):
        self.scan(True, True)


def main():
    global ARGS, TH, WORKDIR
    p = argparse.ArgumentParser()
    p.add_argument('--proxy', required=True)
    p.add_argument('--emu', required=True)
    p.add_argument('--pydir', required=True)
    add_backend_args(p)
    ARGS, rest = p.parse_known_args()
    TH = Thrift(ARGS.pydir)
    WORKDIR = tempfile.mkdtemp(prefix='hsp-resume-')
    prog = unittest.main(argv=[sys.argv[0]] + rest, verbosity=2, exit=False)
    ok = prog.result.wasSuccessful()
    if ok and not os.environ.get('HSP_KEEP_LOGS'):
        shutil.rmtree(WORKDIR, ignore_errors=True)
    else:
        print('logs in', WORKDIR)
    sys.exit(0 if ok else 1)


if __name__ == '__main__':
    main()
