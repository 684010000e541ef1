"""What operators expect from HBase's Thrift server, in /metrics: the time
a call waits for a backend connection (timeInQueue), slow calls counted
and logged (slowThriftCall), errors by exception type and by backend
server, rows per multi-row call (batchGet, batchMutate).

  /usr/bin/python3 tests/ops/test_opsmetrics.py --proxy BUILD/daemon/hbase-salt-proxy \\
      --emu BUILD/tests/emu/hbase-emu --pydir BUILD/thrift/py [unittest args]
"""

import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import opslib  # noqa: E402
from opslib import series, wait_for  # noqa: E402

ARGS = None
T_TABLE = 'buckets = 8\nsalt_format = hex\nsalt_separator = -\n'
# forward-looking: keys in ["a", "m") stay unsalted (the legacy range)
LG_TABLE = ('buckets = 4\nsalt_format = decimal\n'
            'legacy_range_start = a\nlegacy_range_stop = m\n')


def conf(port, admin, servers, workers=2, pool_size=2, backend='',
         thrift2=None):
    """A config file's text with the given worker and pool sizes;
    thrift2: (proxy's Thrift2 port, the backend's)."""
    text = ('[proxy]\nlisten = 127.0.0.1:%d\nworkers = %d\n'
            '[backend]\nservers = %s\nconnect_timeout_ms = 500\n'
            'request_timeout_ms = 5000\npool_size = %d\n%s'
            % (port, workers,
               ', '.join('127.0.0.1:%d' % s for s in servers), pool_size,
               backend))
    if thrift2 is not None:
        text += ('thrift2_servers = 127.0.0.1:%d\n[thrift2]\n'
                 'listen = 127.0.0.1:%d\n' % (thrift2[1], thrift2[0]))
    return text + ('[admin]\nlisten = 127.0.0.1:%d\n'
                   '[table:t]\n%s[table:lg]\n%s'
                   % (admin, T_TABLE, LG_TABLE))


class Setup(object):
    """An emulator and a proxy in a directory of their own."""

    def __init__(self, test, emu_extra=(), thrift2=False, **kw):
        self.dir = tempfile.mkdtemp(prefix='hsp-ops-metrics-')
        if thrift2:
            # written before the Thrift1 port file the harness waits for
            p2 = os.path.join(self.dir, 'emu.port2')
            emu_extra = tuple(emu_extra) + (
                '--thrift2-listen', '127.0.0.1:0', '--thrift2-port-file', p2)
        self.emu = opslib.Emu(ARGS.emu, self.dir,
                              tables=('t:d', 'plain:d', 'lg:d'),
                              extra=emu_extra)
        port, admin = opslib.free_port(), opslib.free_port()
        self.server = '127.0.0.1:%d' % self.emu.port
        self.port2 = None
        if thrift2:
            with open(p2) as f:
                emu2 = int(f.read().strip())
            self.port2 = opslib.free_port()
            self.server2 = '127.0.0.1:%d' % emu2
            kw['thrift2'] = (self.port2, emu2)
        self.proxy = opslib.Proxy(ARGS.proxy, self.dir,
                                  conf(port, admin, [self.emu.port], **kw),
                                  port, admin_port=admin)
        if thrift2:
            wait_for(lambda: opslib.can_connect(self.port2), 10,
                     'the Thrift2 listener')
        test.addCleanup(self.close)

    def client2(self):
        from hbase2 import THBaseService
        sock = opslib.TSocket.TSocket('127.0.0.1', self.port2)
        sock.setTimeout(10000)
        trans = opslib.TTransport.TBufferedTransport(sock)
        c = THBaseService.Client(opslib.TBinaryProtocol.TBinaryProtocol(trans))
        trans.open()
        c._trans = trans
        return c

    def client(self):
        c = opslib.client(self.proxy.port)
        return c

    def close(self):
        try:
            self.proxy.stop()
        finally:
            self.emu.close()
        if not os.environ.get('HSP_KEEP_LOGS'):
            shutil.rmtree(self.dir, ignore_errors=True)


def hist(m, name, **labels):
    """{le: cumulative count} of a histogram, with 'sum' and 'count'."""
    out = {}
    for k, v in series(m, name + '_bucket', **labels).items():
        out[dict(k)['le']] = v
    want = tuple(sorted(labels.items()))
    out['sum'] = m.get((name + '_sum', want))
    out['count'] = m.get((name + '_count', want))
    return out


def mutations(value=b'v'):
    return [opslib.T.Mutation(column=b'd:a', value=value)]


class SlowCallTest(unittest.TestCase):
    """Every call takes 200 ms at the backend, slow_call_ms is 100: each
    is counted by method; the first is logged in full (method, table,
    buckets, server, duration), the others folded into one line."""

    def test_slow_calls_counted_and_logged_once(self):
        s = Setup(self, emu_extra=('--rpc-latency-us', '200000'),
                  backend='slow_call_ms = 100\n')
        self.assertIn('slow_call_ms = 100', s.proxy.http('/config')[1])
        c = s.client()
        opslib.put(c, b't', b'r1', b'v')
        self.assertEqual(opslib.get(c, b't', b'r1'), b'v')
        c.getRows(b't', [b'r1', b'r2', b'r3'], {})
        # a key of the legacy range last: the folded line names it
        self.assertEqual(opslib.get(c, b'lg', b'b'), None)
        c._trans.close()
        m = s.proxy.metrics()
        slow = series(m, 'hsp_slow_calls_total')
        self.assertEqual(slow[(('method', 'mutateRow'),)], 1, slow)
        self.assertEqual(slow[(('method', 'getRow'),)], 2, slow)
        self.assertEqual(slow[(('method', 'getRows'),)], 1, slow)
        self.assertEqual(sum(slow.values()), 4, slow)
        full = s.proxy.wait_log(r'slow call: mutateRow')
        self.assertRegex(
            full, r'slow call: mutateRow of table t, bucket [0-7], backend '
            + re.escape(s.server) + r': (\d+) ms \(slow_call_ms = 100\)')
        self.assertGreaterEqual(
            int(re.search(r': (\d+) ms', full).group(1)), 200)
        # one full line for the burst; the rest wait for the period's
        # end, or the exit
        self.assertEqual(s.proxy.log_text().count('slow call: '), 1,
                         s.proxy.log_text())
        self.assertEqual(s.proxy.stop(), 0)
        log = s.proxy.log_text()
        self.assertEqual(log.count('slow call: '), 2, log)
        self.assertRegex(
            log, r'slow call: 3 more calls in the last 10 s \(last getRow '
            r'of table lg, legacy range, backend ' + re.escape(s.server)
            + r': \d+ ms\)')

    def test_slow_scan_names_its_buckets(self):
        """A scanner call's line names the buckets it fans out to and the
        server its scanners live on."""
        s = Setup(self, emu_extra=('--rpc-latency-us', '200000'),
                  backend='slow_call_ms = 100\n')
        c = s.client()
        sid = c.scannerOpenWithScan(b't', opslib.T.TScan(), {})
        self.assertEqual(c.scannerGetList(sid, 10), [])
        c.scannerClose(sid)
        c._trans.close()
        self.assertRegex(
            s.proxy.wait_log(r'slow call: '),
            r'slow call: scannerOpenWithScan of table t, buckets 0-7, '
            r'backend ' + re.escape(s.server) + r': \d+ ms')
        slow = {dict(k)['method']: v for k, v in series(
            s.proxy.metrics(), 'hsp_slow_calls_total').items()}
        # the proxy answers a close of a merged scanner itself: not slow
        self.assertEqual(slow, {'scannerOpenWithScan': 1,
                                'scannerGetList': 1, 'scannerClose': 0})

    def test_slow_call_line_cannot_be_forged(self):
        """A table name from the client with a newline in it is written in
        the escape syntax: the line stays one line.  (HBase has no such
        table and answers at once: the call is slow because it waits on
        the one connection behind a slow one.)"""
        s = Setup(self, emu_extra=('--rpc-latency-us', '300000'),
                  backend='slow_call_ms = 100\n', workers=1, pool_size=1)
        c = s.client()
        slow = threading.Thread(target=opslib.get, args=(c, b'plain', b'r'))
        slow.start()
        wait_for(lambda: s.proxy.metrics().get(
            ('hsp_backend_inflight_requests', (('server', s.server),))), 5,
            'the slow call sent')
        c2 = s.client()
        with self.assertRaises(opslib.Hbase.IOError):
            c2.getRow(b'x\nwarning: forged', b'r', {})
        slow.join()
        c._trans.close()
        c2._trans.close()
        self.assertEqual(s.proxy.stop(), 0)
        log = s.proxy.log_text()
        self.assertRegex(log, r'slow call: 1 more call in the last 10 s '
                         r'\(last getRow of table x\\x0awarning\\x3a\\x20forged, '
                         r'backend ' + re.escape(s.server))
        self.assertNotRegex(log, r'(?m)^warning: forged')

    def test_fast_calls_are_not_slow(self):
        """The default threshold (1000 ms) is above what these take."""
        s = Setup(self)
        c = s.client()
        opslib.put(c, b't', b'r1', b'v')
        c._trans.close()
        self.assertIn('slow_call_ms = 1000', s.proxy.http('/config')[1])
        m = s.proxy.metrics()
        self.assertEqual(
            m[('hsp_slow_calls_total', (('method', 'mutateRow'),))], 0)
        self.assertNotIn('slow call', s.proxy.log_text())

    def test_slow_call_ms_parsed_strictly(self):
        d = tempfile.mkdtemp(prefix='hsp-ops-metrics-')
        self.addCleanup(shutil.rmtree, d, True)
        path = os.path.join(d, 'p.conf')
        for bad in ('-1', '1.5', 'abc', '', '99999999999'):
            with open(path, 'w') as f:
                f.write('[backend]\nslow_call_ms = %s\n' % bad)
            r = subprocess.run([ARGS.proxy, '-c', path, '--check-config'],
                               capture_output=True, text=True)
            self.assertEqual(r.returncode, 1, (bad, r.stdout))
            self.assertIn('[backend] slow_call_ms', r.stderr)
        with open(path, 'w') as f:
            f.write('[backend]\nslow_call_ms = 0\n')
        r = subprocess.run([ARGS.proxy, '-c', path, '--check-config'],
                           capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stderr)


class QueueTimeTest(unittest.TestCase):
    """One connection (pool_size = 1, one worker) and four clients at once,
    each call 100 ms at the backend: the calls behind the first wait for
    the connection, 100 to 300 ms, and the queue histogram shows it."""

    def test_queue_time_moves_when_pool_exhausted(self):
        s = Setup(self, emu_extra=('--rpc-latency-us', '100000'),
                  workers=1, pool_size=1)
        c = s.client()
        opslib.put(c, b'plain', b'r', b'v')  # the connection is open
        c._trans.close()
        before = hist(s.proxy.metrics(), 'hsp_request_queue_seconds')
        self.assertEqual(before['count'], 1, before)
        self.assertEqual(before['0.05'], 1, before)
        start = threading.Barrier(4)
        errors = []

        def one():
            try:
                cc = s.client()
                start.wait()
                for _ in range(2):
                    opslib.get(cc, b'plain', b'r')
                cc._trans.close()
            except Exception as e:  # noqa: BLE001
                errors.append(e)
        threads = [threading.Thread(target=one) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        self.assertEqual(errors, [])
        after = hist(s.proxy.metrics(), 'hsp_request_queue_seconds')
        self.assertEqual(after['count'], 9, after)
        waited = after['count'] - after['0.05']
        # at least the three calls behind the first of the burst waited
        self.assertGreaterEqual(waited, 3, after)
        self.assertGreaterEqual(after['sum'], 0.3, after)


class CountedByReplyTest(unittest.TestCase):
    """A call is in /metrics by the time its reply reaches the client: an
    operator (or a check script) that makes one call and reads /metrics
    finds it counted, not one call behind."""

    def test_reply_implies_counted(self):
        s = Setup(self)
        c = s.client()
        opslib.put(c, b't', b'row', b'v')

        def gets():
            return s.proxy.metrics().get(
                ('hsp_requests_total', (('method', 'getRow'),)), 0)
        base = gets()
        for i in range(1, 201):
            c.getRow(b't', b'row', {})
            self.assertEqual(gets(), base + i, 'after getRow number %d' % i)


class ErrorsAndBatchTest(unittest.TestCase):
    """Errors by exception type and by backend server; rows per
    multi-row call."""

    def test_errors_by_type_and_server(self):
        s = Setup(self)
        c = s.client()
        T = opslib.T

        def by_type():
            return {dict(k)['type']: v for k, v in series(
                s.proxy.metrics(), 'hsp_request_errors_by_type_total').items()}

        def by_server():
            return {dict(k)['type']: v for k, v in series(
                s.proxy.metrics(), 'hsp_backend_errors_total',
                server=s.server).items()}
        zero = {'IOError': 0, 'IllegalArgument': 0,
                'TApplicationException': 0, 'transport': 0}
        self.assertEqual(by_type(), zero)
        self.assertEqual(by_server(), zero)
        # IOError: a table HBase does not have
        with self.assertRaises(opslib.Hbase.IOError):
            c.getRow(b'nosuch', b'r', {})
        # IllegalArgument: an empty row in a put (unsalted: HBase says so)
        with self.assertRaises(opslib.Hbase.IllegalArgument):
            c.mutateRow(b'plain', b'', mutations(), {})
        # TApplicationException: a method HBase does not know
        from thrift.Thrift import (TApplicationException, TMessageType)
        c._oprot.writeMessageBegin('noSuchMethod', TMessageType.CALL, 7)
        c._oprot.writeStructBegin('noSuchMethod_args')
        c._oprot.writeFieldStop()
        c._oprot.writeStructEnd()
        c._oprot.writeMessageEnd()
        c._oprot.trans.flush()
        _, mtype, _ = c._iprot.readMessageBegin()
        x = TApplicationException()
        x.read(c._iprot)
        c._iprot.readMessageEnd()
        self.assertEqual(mtype, TMessageType.EXCEPTION)
        self.assertEqual(x.type, TApplicationException.UNKNOWN_METHOD)
        want = dict(zero, IOError=1, IllegalArgument=1,
                    TApplicationException=1)
        self.assertEqual(by_type(), want)
        self.assertEqual(by_server(), want)
        # transport: the server is gone, under a call and under a scanner
        sid = c.scannerOpenWithScan(b'plain', T.TScan(), {})
        s.emu.close()
        with self.assertRaises(opslib.Hbase.IOError) as cm:
            c.getRow(b'plain', b'r', {})
        self.assertIn(s.server, cm.exception.message)
        with self.assertRaises(opslib.Hbase.IOError) as cm:
            c.scannerGetList(sid, 10)
        self.assertIn(s.server, cm.exception.message)
        c._trans.close()
        # the getRow's failed request is counted; the scanner's fetch is
        # too when it reached its connection, but when the server's idle
        # connections were closed first (a server that closes a busy
        # connection gets its idle ones closed: backend.c) it fails
        # before any request is sent, and only the client hears (seen
        # under ASan's slower timing): one or two, never none, nothing else
        for got in (by_type(), by_server()):
            self.assertIn(got.get('transport'), (1, 2))
            self.assertEqual(dict(got, transport=0), dict(want, transport=0))
        # the series that were there stay as they were
        m = s.proxy.metrics()
        self.assertEqual(
            m[('hsp_request_errors_total', (('method', 'getRow'),))], 2)

    def test_batch_rows(self):
        s = Setup(self)
        c = s.client()
        T = opslib.T
        c.mutateRows(b't', [T.BatchMutation(row=b'r%d' % i,
                                           mutations=mutations())
                           for i in range(3)], {})
        rows = c.getRows(b't', [b'r%d' % i for i in range(5)], {})
        self.assertEqual(len(rows), 3)
        c.getRows(b'plain', [b'x'], {})   # unsalted tables count too
        opslib.get(c, b't', b'r0')        # one-row calls do not
        c._trans.close()
        m = s.proxy.metrics()
        gr = hist(m, 'hsp_batch_rows', method='getRows')
        self.assertEqual((gr['count'], gr['sum']), (2, 6), gr)
        self.assertEqual((gr['1'], gr['2'], gr['5'], gr['+Inf']),
                         (1, 1, 2, 2), gr)
        mr = hist(m, 'hsp_batch_rows', method='mutateRows')
        self.assertEqual((mr['count'], mr['sum']), (1, 3), mr)
        self.assertEqual((mr['2'], mr['5']), (0, 1), mr)
        self.assertEqual(series(m, 'hsp_batch_rows_count', method='getRow'),
                         {})

    def test_batch_rows_thrift2(self):
        s = Setup(self, thrift2=True)
        c = s.client2()
        T2 = __import__('hbase2.ttypes', fromlist=['ttypes'])
        puts = [T2.TPut(row=b'r%d' % i, columnValues=[
            T2.TColumnValue(family=b'd', qualifier=b'a', value=b'v')])
            for i in range(3)]
        c.putMultiple(b't', puts)
        got = c.getMultiple(b't', [T2.TGet(row=b'r%d' % i) for i in range(5)])
        self.assertEqual(sum(1 for r in got if r.row), 3)
        c.deleteMultiple(b't', [T2.TDelete(row=b'r%d' % i) for i in range(2)])
        c._trans.close()
        m = s.proxy.metrics()
        for method, rows in (('putMultiple', 3), ('getMultiple', 5),
                             ('deleteMultiple', 2)):
            h = hist(m, 'hsp_batch_rows', method=method, service='thrift2')
            self.assertEqual((h['count'], h['sum']), (1, rows), (method, h))


if __name__ == '__main__':
    opslib.run_tests()
