"""I/O behaviour of hbase-salt-proxy in front of hbase-emu: one port for
every client protocol, pipelined replies in request order, a backend that
hangs, dies and comes back, bad frames that close only their connection,
many clients at once.  The per-method semantics are another suite's.

  /usr/bin/python3 tests/e2e/test_io.py --proxy BUILD/daemon/hbase-salt-proxy \\
      --emu BUILD/tests/emu/hbase-emu --pydir BUILD/thrift/py [unittest args]
"""

import argparse
import os
import shutil
import signal
import socket
import struct
import sys
import tempfile
import threading
import time
import unittest

# the harness helpers every end-to-end test shares
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                '..', 'lib'))
import hsptest  # noqa: E402
from hsptest import client, free_port, get, put, wait_for  # noqa: E402

ARGS = None
REQUEST_TIMEOUT_MS = 1500
CONNECT_TIMEOUT_MS = 500

Hbase = T = None
TSocket = TTransport = TBinaryProtocol = TCompactProtocol = None


def sigstop(pid, timeout=5.0):
    """SIGSTOP pid and wait until every one of its threads has stopped.
    kill() returns once the signal is queued, and the kernel hands it to
    one thread, which stops the others only when it next runs: on a busy
    box the emulator's connection threads can meanwhile still answer a
    request sent "after" the stop."""
    os.kill(pid, signal.SIGSTOP)
    task_dir = '/proc/%d/task' % pid

    def all_stopped():
        for tid in os.listdir(task_dir):
            try:
                with open('%s/%s/stat' % (task_dir, tid)) as f:
                    # state follows the parenthesised command name
                    state = f.read().rsplit(')', 1)[1].split()[0]
            except OSError:
                continue  # a thread that just exited
            if state not in ('T', 't'):
                return False
        return True
    try:
        wait_for(all_stopped, timeout, 'pid %d stopped' % pid)
    except AssertionError:
        os.kill(pid, signal.SIGCONT)
        raise


class Emu(hsptest.Emu):
    """hbase-emu on a fixed port, so that a restart comes back on it."""

    def __init__(self, workdir):
        super().__init__(ARGS.emu, workdir, ['--create-table', 't:d',
                                             '--create-table', 'plain:d'],
                         start=False)


class Proxy(hsptest.Proxy):
    def __init__(self, workdir, backend_port, **proxy_keys):
        self.port = free_port()
        extra = ''.join('%s = %s\n' % kv for kv in proxy_keys.items())
        conf = ('[proxy]\nlisten = 127.0.0.1:%d\nworkers = 2\n'
                'max_frame_size = 1MiB\n%s'
                '[backend]\nservers = 127.0.0.1:%d\n'
                'connect_timeout_ms = %d\nrequest_timeout_ms = %d\n'
                'pool_size = 4\n'
                '[table:t]\nbuckets = 8\nsalt_format = hex\n'
                'salt_separator = -\n'
                % (self.port, extra, backend_port, CONNECT_TIMEOUT_MS,
                   REQUEST_TIMEOUT_MS))
        super().__init__(ARGS.proxy, workdir, conf, [self.port],
                         name='proxy-%d' % self.port, timeout=10)


def encode_call(proto, name, args_obj, seqid):
    """A whole CALL message as bytes (no frame)."""
    from thrift.Thrift import TMessageType
    buf = TTransport.TMemoryBuffer()
    p = (TCompactProtocol.TCompactProtocol(buf) if proto == 'compact'
         else TBinaryProtocol.TBinaryProtocol(buf))
    p.writeMessageBegin(name, TMessageType.CALL, seqid)
    args_obj.write(p)
    p.writeMessageEnd()
    return buf.getvalue()


class IoTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix='hsp-e2e-io-')
        cls.emu = Emu(cls.dir)
        cls.emu.start()
        cls.proxy = Proxy(cls.dir, cls.emu.port)

    @classmethod
    def tearDownClass(cls):
        try:
            if cls.proxy.alive():
                rc = cls.proxy.stop()
                assert rc == 0, 'proxy exit code %d' % rc
        finally:
            cls.emu.close()
        if not os.environ.get('HSP_KEEP_LOGS'):
            shutil.rmtree(cls.dir, ignore_errors=True)

    def tearDown(self):
        self.assertTrue(self.proxy.alive(), 'the proxy died; log in '
                        + self.proxy.log_path)

    def test_1_protocols_on_one_port(self):
        for proto in ('binary', 'compact'):
            for tr in ('buffered', 'framed'):
                c = client(self.proxy.port, proto, tr)
                row = ('row-%s-%s' % (proto, tr)).encode()
                put(c, b't', row, b'v-' + row)
                self.assertEqual(get(c, b't', row), b'v-' + row, (proto, tr))
                put(c, b'plain', row, b'p')
                self.assertEqual(get(c, b'plain', row), b'p')
                c._trans.close()
        # the emulator holds salted keys for t, plain keys for plain
        d = client(self.emu.port)
        self.assertIsNone(get(d, b't', b'row-binary-buffered'))
        self.assertEqual(get(d, b'plain', b'row-binary-buffered'), b'p')
        d._trans.close()

    def test_2_pipelined_in_order(self):
        c = client(self.proxy.port)
        rows = [('p%03d' % i).encode() for i in range(64)]
        for r in rows:
            # sizes differ so replies on different connections race
            put(c, b't', r, r * (1 + (hash(r) % 7) * 300))
        c._trans.close()
        for proto, framed in (('binary', False), ('binary', True),
                              ('compact', False), ('compact', True)):
            data = b''
            for i, r in enumerate(rows):
                m = encode_call(proto, 'getRow',
                                Hbase.getRow_args(tableName=b't', row=r,
                                                  attributes={}), 1000 + i)
                data += struct.pack('>I', len(m)) + m if framed else m
            s = socket.create_connection(('127.0.0.1', self.proxy.port))
            s.settimeout(10)
            s.sendall(data)  # every request before any reply is read
            sock = TSocket.TSocket()
            sock.handle = s
            trans = (TTransport.TFramedTransport(sock) if framed
                     else TTransport.TBufferedTransport(sock))
            p = (TCompactProtocol.TCompactProtocol(trans)
                 if proto == 'compact'
                 else TBinaryProtocol.TBinaryProtocol(trans))
            for i, r in enumerate(rows):
                name, mtype, seqid = p.readMessageBegin()
                res = Hbase.getRow_result()
                res.read(p)
                p.readMessageEnd()
                self.assertEqual((name, seqid), ('getRow', 1000 + i))
                self.assertEqual(res.success[0].row, r)
            s.close()

    def test_3_bad_frame_closes_only_that_client(self):
        good = client(self.proxy.port, 'binary', 'framed')
        put(good, b't', b'g', b'1')
        for junk in (struct.pack('>I', 2 << 20) + b'\x80\x01\x00\x01',
                     struct.pack('>I', 0) + b'\x80\x01\x00\x01',
                     struct.pack('>I', 0x7fffffff) + b'\x80\x01\x00\x01',
                     struct.pack('>I', 0x7fffff00) + b'\x82',
                     b'GET / HTTP/1.0\r\n\r\n',
                     b'\x80\x01\x00\x01\x7f\xff\xff\xff'):
            s = socket.create_connection(('127.0.0.1', self.proxy.port))
            s.settimeout(5)
            s.sendall(junk)
            try:
                got = s.recv(1024)
            except ConnectionResetError:
                got = b''
            except socket.timeout:
                got = None
            s.close()
            # either closed at once, or an error reply then close
            self.assertIsNotNone(got, 'no answer to %r' % junk)
            self.assertEqual(get(good, b't', b'g'), b'1')
        good._trans.close()

    def test_4_many_clients(self):
        errors = []

        def work(n):
            try:
                c = client(self.proxy.port,
                           ('binary', 'compact')[n % 2],
                           ('buffered', 'framed')[(n // 2) % 2])
                for i in range(30):
                    row = ('c%d-%d' % (n, i)).encode()
                    put(c, b't', row, row[::-1])
                    if get(c, b't', row) != row[::-1]:
                        errors.append('client %d row %d: wrong value' % (n, i))
                c._trans.close()
            except Exception as e:  # noqa: BLE001 - reported below
                errors.append('client %d: %r' % (n, e))

        threads = [threading.Thread(target=work, args=(n,))
                   for n in range(64)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        self.assertEqual(errors, [])

    def test_5_backend_hangs_dies_and_returns(self):
        c = client(self.proxy.port, timeout=30)
        put(c, b't', b'k', b'before')
        name = '127.0.0.1:%d' % self.emu.port

        # hung server: the request times out, the client stays usable
        sigstop(self.emu.proc.pid)
        try:
            t0 = time.time()
            with self.assertRaises(T.IOError) as cm:
                get(c, b't', b'k')
            took = time.time() - t0
        finally:
            os.kill(self.emu.proc.pid, signal.SIGCONT)
        self.assertIn(name, cm.exception.message)
        self.assertIn('timed out after %d ms' % REQUEST_TIMEOUT_MS,
                      cm.exception.message)
        self.assertTrue(cm.exception.canRetry)
        self.assertLess(took, REQUEST_TIMEOUT_MS / 1000.0 + 1.0)
        self.assertEqual(get(c, b't', b'k'), b'before')

        # dead server: IOError naming it, within the read's own timeout,
        # on the same connection (a read that lost its connection waits up
        # to 1 s for a server to take it, within request_timeout_ms: a
        # restart that quick loses nothing; conf/README.md, "When a
        # server fails")
        self.emu.kill()
        for _ in range(3):
            t0 = time.time()
            with self.assertRaises(T.IOError) as cm:
                get(c, b't', b'k')
            self.assertIn(name, cm.exception.message)
            self.assertTrue(cm.exception.canRetry)
            self.assertLess(time.time() - t0, REQUEST_TIMEOUT_MS / 1000.0
                            + 1.0)
        self.assertTrue(self.proxy.alive())

        # back again (empty: it keeps nothing across restarts)
        self.emu.start()
        end = time.time() + 5
        while True:
            try:
                put(c, b't', b'k', b'after')
                break
            except T.IOError:
                if time.time() > end:
                    raise
                time.sleep(0.1)
        self.assertEqual(get(c, b't', b'k'), b'after')
        c._trans.close()

    def test_6_max_connections(self):
        p = Proxy(self.dir, self.emu.port, max_connections=2)
        time.sleep(0.2)  # the readiness probe must have closed first
        try:
            a = client(p.port)
            b = client(p.port)
            put(a, b't', b'm', b'1')
            put(b, b't', b'm', b'2')
            s = socket.create_connection(('127.0.0.1', p.port))
            s.settimeout(5)
            self.assertEqual(s.recv(10), b'')  # refused: closed at once
            s.close()
            self.assertEqual(get(a, b't', b'm'), b'2')
            a._trans.close()
            b._trans.close()
        finally:
            self.assertEqual(p.stop(), 0)

    def test_7_client_idle_timeout(self):
        p = Proxy(self.dir, self.emu.port, client_idle_timeout_ms=300)
        try:
            c = client(p.port)
            put(c, b't', b'i', b'1')
            s = socket.create_connection(('127.0.0.1', p.port))
            s.settimeout(5)
            t0 = time.time()
            self.assertEqual(s.recv(10), b'')  # closed when idle
            self.assertGreater(time.time() - t0, 0.2)
            s.close()
            time.sleep(0.2)
            with self.assertRaises(Exception):
                get(c, b't', b'i')  # idle too by now
        finally:
            self.assertEqual(p.stop(), 0)

    def test_8_client_gone_with_requests_in_flight(self):
        data = b''.join(encode_call('binary', 'getRow',
                                    Hbase.getRow_args(tableName=b't',
                                                      row=b'p%03d' % i,
                                                      attributes={}), i)
                        for i in range(64))
        sigstop(self.emu.proc.pid)
        try:
            for _ in range(4):
                s = socket.create_connection(('127.0.0.1', self.proxy.port))
                s.sendall(data)
                time.sleep(0.05)
                s.close()  # the replies have nobody to go to
        finally:
            os.kill(self.emu.proc.pid, signal.SIGCONT)
        time.sleep(0.3)
        c = client(self.proxy.port)
        put(c, b't', b'after-gone', b'ok')
        self.assertEqual(get(c, b't', b'after-gone'), b'ok')
        c._trans.close()


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
