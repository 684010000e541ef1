"""The proxy's HTTP listener ([http]): Thrift over HTTP POST, as HBase's
`hbase thrift -http` serves it, so an HTTP client (Hue, any THttpClient)
can point at the proxy.  The emulator's own HTTP mode is the reference:
the same calls through the proxy (salting a table) and straight to
`hbase-emu --http` (the table unsalted) must answer alike, and so must the
HTTP-level errors.

  /usr/bin/python3 tests/e2e/test_http_listener.py --proxy BUILD/daemon/hbase-salt-proxy \\
      --emu BUILD/tests/emu/hbase-emu --pydir BUILD/thrift/py
"""

import argparse
import http.client
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                '..', 'lib'))
import hsptest  # noqa: E402
from hsptest import can_connect, free_port, wait_for  # noqa: E402

ARGS = None
Hbase = T = T2 = THBaseService = THttpClient = TBinaryProtocol = None
TSocket = TTransport = None


def http_client(port, service=None):
    trans = THttpClient.THttpClient('http://127.0.0.1:%d/' % port)
    trans.setTimeout(20000)
    prot = TBinaryProtocol.TBinaryProtocol(trans)
    c = (service or Hbase).Client(prot)
    trans.open()
    c._trans = trans
    return c


def socket_client(port):
    sock = TSocket.TSocket('127.0.0.1', port)
    sock.setTimeout(20000)
    trans = TTransport.TBufferedTransport(sock)
    c = Hbase.Client(TBinaryProtocol.TBinaryProtocol(trans))
    trans.open()
    c._trans = trans
    return c


def outcome(fn):
    """A call's answer or its exception, comparably."""
    try:
        return ('ok', fn())
    except Exception as e:  # noqa: BLE001 - every answer is compared
        return ('error', type(e).__name__, str(e)[:200])


class Procs(object):
    def __init__(self, workdir):
        self.workdir = workdir
        self.procs = []
        # the reference: HBase's HTTP mode, the table unsalted
        self.ref = free_port()
        self.spawn('ref', [ARGS.emu, '--listen', '127.0.0.1:%d' % self.ref,
                           '--http', '--max-frame-mb', '1',
                           '--create-table', 't:d'], self.ref)
        # the proxy's backend: socket mode, Thrift1 and Thrift2
        self.emu, self.emu2 = free_port(), free_port()
        self.spawn('emu', [ARGS.emu, '--listen', '127.0.0.1:%d' % self.emu,
                           '--thrift2-listen', '127.0.0.1:%d' % self.emu2,
                           '--create-table', 't:d'], self.emu)
        self.port, self.http, self.http2 = free_port(), free_port(), \
            free_port()
        conf = os.path.join(workdir, 'proxy.conf')
        with open(conf, 'w') as f:
            f.write('[proxy]\nlisten = 127.0.0.1:%d\nworkers = 2\n'
                    'max_frame_size = 1MiB\n'
                    '[backend]\nservers = 127.0.0.1:%d\n'
                    'thrift2_servers = 127.0.0.1:%d\n'
                    '[catalog]\ntable =\n'
                    '[http]\nlisten = 127.0.0.1:%d\n'
                    'thrift2_listen = 127.0.0.1:%d\n'
                    '[table:t]\nbuckets = 8\nsalt_format = hex\n'
                    'salt_separator = -\n'
                    % (self.port, self.emu, self.emu2, self.http,
                       self.http2))
        self.spawn('proxy', [ARGS.proxy, '-c', conf], self.http)

    def spawn(self, name, argv, port):
        log = open(os.path.join(self.workdir, name + '.log'), 'wb')
        p = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT)
        self.procs.append((name, p, log))
        wait_for(lambda: can_connect(port) or p.poll() is not None, 10,
                 name + ' listening')
        assert p.poll() is None, name + ' exited at start'

    def alive(self):
        return all(p.poll() is None for _, p, _ in self.procs)

    def close(self):
        for name, p, log in reversed(self.procs):
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
                try:
                    p.wait(10)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait()
            log.close()


def raw(port, method, body=b'', headers=None):
    """One HTTP request on a socket of its own; (status, body).  A server
    may answer (413) and close before the body is all sent."""
    head = '%s / HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n' \
           'Content-Type: application/x-thrift\r\n' % method
    for k, v in (headers or {}).items():
        head += '%s: %s\r\n' % (k, v)
    head += 'Content-Length: %d\r\n\r\n' % len(body)
    s = socket.create_connection(('127.0.0.1', port), timeout=20)
    try:
        s.sendall(head.encode() + body)
    except (BrokenPipeError, ConnectionResetError):
        pass
    data = b''
    try:
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            data += chunk
    except ConnectionResetError:
        pass
    s.close()
    status = int(data.split(b' ', 2)[1]) if data else 0
    return status, data.partition(b'\r\n\r\n')[2]


def get_row_call(row, seqid=1):
    """A getRow call, binary protocol, as bytes."""
    from thrift.transport import TTransport as _TT
    buf = _TT.TMemoryBuffer()
    prot = TBinaryProtocol.TBinaryProtocol(buf)
    c = Hbase.Client(prot)
    c._seqid = seqid - 1
    c.send_getRow(b't', row, {})
    return buf.getvalue()


class HttpListenerTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.workdir = tempfile.mkdtemp(prefix='hsp-http-listener-')
        cls.p = Procs(cls.workdir)
        rng = random.Random(11)
        keys = set()
        while len(keys) < 300:
            keys.add(bytes(rng.randrange(256) for _ in
                           range(rng.randrange(1, 7))))
        cls.keys = sorted(keys)
        via, ref = http_client(cls.p.http), http_client(cls.p.ref)
        for i, k in enumerate(cls.keys):
            for c in (via, ref):
                # explicit timestamps: the two servers' clocks differ
                c.mutateRowTs(b't', k, [T.Mutation(column=b'd:q',
                                                   value=b'v%d' % i)],
                              1000 + i, {})

    @classmethod
    def tearDownClass(cls):
        alive = cls.p.alive()
        cls.p.close()
        if not os.environ.get('HSP_KEEP_LOGS'):
            shutil.rmtree(cls.workdir, ignore_errors=True)
        assert alive, 'a process died; logs in ' + cls.workdir

    def scan(self, c, tscan, batch):
        sid = c.scannerOpenWithScan(b't', tscan, {})
        rows = []
        while True:
            b = c.scannerGetList(sid, batch)
            if not b:
                break
            rows += [(r.row, sorted((k, v.value) for k, v in
                                    r.columns.items())) for r in b]
        c.scannerClose(sid)
        return rows

    def test_calls_answer_as_hbase_http_mode(self):
        via, ref = http_client(self.p.http), http_client(self.p.ref)
        rng = random.Random(5)
        for _ in range(60):
            k = rng.choice(self.keys)
            for fn in (lambda c: c.getRow(b't', k, {}),
                       lambda c: c.getRows(b't', [k, b'\xffmissing'], {}),
                       lambda c: c.get(b't', k, b'd:q', {}),
                       lambda c: c.getRow(b't', b'', {}),
                       lambda c: c.getRow(b'no_such_table', k, {})):
                self.assertEqual(outcome(lambda: fn(via)),
                                 outcome(lambda: fn(ref)), k)
        # merged scans over the 8 buckets, several scannerGetList calls
        for tscan, batch in ((T.TScan(), 7),
                             (T.TScan(startRow=b'\x40', stopRow=b'\xc0'), 13),
                             (T.TScan(reversed=True, startRow=b'\xa0'), 5),
                             (T.TScan(filterString=b"PrefixFilter('\x7f')"),
                              3)):
            self.assertEqual(self.scan(via, tscan, batch),
                             self.scan(ref, tscan, batch), tscan)
        self.assertEqual(len(self.scan(via, T.TScan(), 50)),
                         len(self.keys))
        # the table is stored salted behind the proxy
        direct = socket_client(self.p.emu)
        sid = direct.scannerOpenWithScan(b't', T.TScan(), {})
        stored = [r.row for r in direct.scannerGetList(sid, 1000)]
        self.assertEqual(len(stored), len(self.keys))
        self.assertTrue(all(k[1:2] == b'-' for k in stored))

    def test_keep_alive_and_interleaved_clients(self):
        a, b = http_client(self.p.http), http_client(self.p.http)
        sa = a.scannerOpenWithScan(b't', T.TScan(), {})
        sb = b.scannerOpenWithScan(b't', T.TScan(reversed=True), {})
        ra, rb = [], []
        while True:
            x = a.scannerGetList(sa, 11)
            y = b.scannerGetList(sb, 17)
            ra += [r.row for r in x]
            rb += [r.row for r in y]
            if not x and not y:
                break
        self.assertEqual(ra, self.keys)
        self.assertEqual(rb, self.keys[::-1])
        # many calls on one HTTP connection, answered in order
        c = http.client.HTTPConnection('127.0.0.1', self.p.http, timeout=20)
        for i in range(40):
            c.request('POST', '/any/path', body=get_row_call(self.keys[i], i),
                      headers={'Content-Type': 'application/x-thrift'})
            r = c.getresponse()
            body = r.read()
            self.assertEqual(r.status, 200)
            self.assertEqual(r.getheader('Content-Type'),
                             'application/x-thrift')
            self.assertIn(self.keys[i], body)
            self.assertIn(b'v%d' % i, body)
        c.close()

    def test_http_errors_as_hbase(self):
        for method, body in (('PUT', b'x'), ('DELETE', b''),
                             ('TRACE', b''), ('OPTIONS', b''),
                             ('PATCH', b'x'), ('POST', b''),
                             ('POST', b'\x80\x01\x00\x01garbage'),
                             ('POST', b'\x80\x01' + b'\x00' * (2 << 20))):
            via = raw(self.p.http, method, body)[0]
            ref = raw(self.p.ref, method, body)[0]
            self.assertEqual(via, ref, (method, body[:16]))
        # the statuses themselves
        self.assertEqual(raw(self.p.http, 'PUT', b'x')[0], 405)
        self.assertEqual(raw(self.p.http, 'TRACE')[0], 403)
        self.assertEqual(raw(self.p.http, 'PATCH', b'x')[0], 501)
        self.assertEqual(raw(self.p.http, 'POST', b'garbage')[0], 500)
        self.assertEqual(raw(self.p.http, 'POST',
                             b'\x80' * (2 << 20))[0], 413)
        # doAs: HBase honours it only with proxyuser support; the proxy
        # reaches HBase as itself and says so
        st, body = raw(self.p.http, 'POST', get_row_call(self.keys[0]),
                       {'doAs': 'alice'})
        self.assertEqual(st, 403)
        self.assertIn(b'impersonation', body)
        # nothing above hurt the listener
        self.assertEqual(len(http_client(self.p.http).getRow(
            b't', self.keys[0], {})), 1)

    def test_thrift2_over_http(self):
        c = http_client(self.p.http2, THBaseService)
        c.put(b't', T2.TPut(row=b'thrift2-row', columnValues=[
            T2.TColumnValue(family=b'd', qualifier=b'q', value=b'two')]))
        r = c.get(b't', T2.TGet(row=b'thrift2-row'))
        self.assertEqual(r.row, b'thrift2-row')
        self.assertEqual(r.columnValues[0].value, b'two')
        # the same row, salted, seen by a Thrift1 client of the proxy
        self.assertEqual(http_client(self.p.http).get(
            b't', b'thrift2-row', b'd:q', {})[0].value, b'two')


def main():
    global ARGS
    ap = argparse.ArgumentParser()
    ap.add_argument('--proxy', required=True)
    ap.add_argument('--emu', required=True)
    ap.add_argument('--pydir', required=True)
    ARGS, rest = ap.parse_known_args()
    hsptest.import_thrift(ARGS.pydir, globals())
    unittest.main(argv=[sys.argv[0]] + rest, verbosity=2)


if __name__ == '__main__':
    main()
