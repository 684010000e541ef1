"""The bad-input catalogue: hostile or broken bytes from either side of
hbase-salt-proxy.  Each case talks to the proxy on a raw socket and must
end in a clear TApplicationException or IOError, or in a logged close of
that one connection; after each case another client is checked to be
unaffected, and at the end the proxy's memory must be back near where it
was after warm-up.  The backend cases run against a fake backend (a small
socket server here) that answers with garbage, a truncated reply, the
wrong sequence id or method name, or nothing at all.

  /usr/bin/python3 tests/e2e/test_bad_input.py \\
      --proxy BUILD/daemon/hbase-salt-proxy --emu BUILD/tests/emu/hbase-emu \\
      --pydir BUILD/thrift/py [unittest args]
"""

import argparse
import os
import re
import shutil
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
from hsptest import free_port, wait_for  # noqa: E402

ARGS = None
MAX_FRAME = 4 << 20             # max_frame_size of the proxy under test
REQUEST_TIMEOUT_MS = 1500
IDLE_TIMEOUT_MS = 1000          # the slowloris proxy's client_idle_timeout_ms
BURST = 10000                   # connections opened and closed in a burst
RSS_TOLERANCE_KB = 8 * 1024     # growth allowed over the whole catalogue

Hbase = T = None
TSocket = TTransport = TBinaryProtocol = TCompactProtocol = None
TMessageType = TType = TApplicationException = None


# ---- processes ------------------------------------------------------------

def sanitized(path):
    """Whether a binary carries AddressSanitizer (RSS means little then)."""
    with open(path, 'rb') as f:
        return b'__asan_init' in f.read()


class Emu(hsptest.Emu):
    def __init__(self, workdir):
        super().__init__(ARGS.emu, workdir, ['--create-table', 't:d',
                                             '--create-table', 'plain:d'],
                         log_mode='wb')

    def close(self):
        self.stop(killed=-9)


class Proxy(hsptest.Proxy):
    stop_timeout = 20

    def __init__(self, workdir, backend_port, idle_ms=0):
        self.port = free_port()
        self.backend = '127.0.0.1:%d' % backend_port
        conf = ('[proxy]\nlisten = 127.0.0.1:%d\nworkers = 2\n'
                'max_frame_size = %d\nclient_idle_timeout_ms = %d\n'
                '[backend]\nservers = %s\n'
                'connect_timeout_ms = 500\nrequest_timeout_ms = %d\n'
                'pool_size = 2\n'
                # the hand-made backends here answer no catalog calls
                '[catalog]\ntable =\n'
                '[table:t]\nbuckets = 8\nsalt_format = hex\n'
                'salt_separator = -\n'
                % (self.port, MAX_FRAME, idle_ms, self.backend,
                   REQUEST_TIMEOUT_MS))
        # debug: closes by the peer are logged at debug level only
        super().__init__(ARGS.proxy, workdir, conf, [self.port],
                         name='proxy-%d' % self.port, log_level='debug',
                         timeout=10)

    def stop(self):
        """SIGTERM; returns the exit status (sanitizer reports make it
        non-zero) and fails on a sanitizer report in the log."""
        rc = super().stop()
        text = self.log_text()
        for marker in ('ERROR: AddressSanitizer', 'ERROR: LeakSanitizer',
                       'runtime error:'):
            if marker in text:
                raise AssertionError('%s in %s' % (marker, self.log_path))
        return rc


# ---- encoding ---------------------------------------------------------------

def encode(proto, name, mtype, seqid, obj):
    buf = TTransport.TMemoryBuffer()
    p = (TCompactProtocol.TCompactProtocol(buf) if proto == 'compact'
         else TBinaryProtocol.TBinaryProtocol(buf))
    p.writeMessageBegin(name, mtype, seqid)
    obj.write(p)
    p.writeMessageEnd()
    return buf.getvalue()


def frame(msg):
    return struct.pack('>I', len(msg)) + msg


def get_row_call(row=b'r', seqid=1, proto='binary', mtype=None):
    return encode(proto, 'getRow',
                  TMessageType.CALL if mtype is None else mtype, seqid,
                  Hbase.getRow_args(tableName=b't', row=row, attributes={}))


def bin_header(name, seqid=1, mtype=1):
    name = name.encode()
    return (struct.pack('>I', 0x80010000 | mtype) + struct.pack('>I', len(name))
            + name + struct.pack('>i', seqid))


def bin_string(fid, data, size=None):
    return (b'\x0b' + struct.pack('>h', fid)
            + struct.pack('>i', len(data) if size is None else size) + data)


# ---- sockets ----------------------------------------------------------------

def raw(port, timeout=5.0):
    s = socket.create_connection(('127.0.0.1', port))
    s.settimeout(timeout)
    return s


def wait_closed(s, timeout):
    """Reads until the proxy closes s; returns what arrived, or None when
    it stayed open for timeout seconds."""
    got = b''
    s.settimeout(timeout)
    end = time.time() + timeout
    try:
        while time.time() < end:
            chunk = s.recv(65536)
            if not chunk:
                return got
            got += chunk
    except (ConnectionResetError, BrokenPipeError):
        return got
    except socket.timeout:
        return None
    return None


def protocol_on(s, proto='binary', framed=False):
    sock = TSocket.TSocket()
    sock.handle = s
    trans = (TTransport.TFramedTransport(sock) if framed
             else TTransport.TBufferedTransport(sock))
    return (TCompactProtocol.TCompactProtocol(trans) if proto == 'compact'
            else TBinaryProtocol.TBinaryProtocol(trans))


def read_reply(p, result_cls):
    """(name, seqid, result or TApplicationException)."""
    name, mtype, seqid = p.readMessageBegin()
    if mtype == TMessageType.EXCEPTION:
        obj = TApplicationException()
    else:
        obj = result_cls()
    obj.read(p)
    p.readMessageEnd()
    return name, seqid, obj


def client(port, timeout=10.0):
    return hsptest.client(port, transport='framed', timeout=timeout)


# ---- the fake backend -------------------------------------------------------

class FakeBackend(object):
    """A binary, buffered Thrift1 server that misbehaves as told.

    mode: 'good' (answers getTableNames), 'garbage', 'truncated' (half a
    reply, then the connection closes), 'truncated-hang' (half a reply,
    then nothing), 'seqid', 'name', 'silent' (reads, never answers)."""

    def __init__(self):
        self.mode = 'good'
        self.sock = socket.socket()
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(('127.0.0.1', 0))
        self.sock.listen(64)
        self.port = self.sock.getsockname()[1]
        self.conns = []
        self.closed = 0         # connections that ended after a call other
                                # than getTableNames (not health probes)
        self.stopping = False
        self.thread = threading.Thread(target=self._accept, daemon=True)
        self.thread.start()

    def _accept(self):
        while not self.stopping:
            try:
                s, _ = self.sock.accept()
            except OSError:
                return
            self.conns.append(s)
            threading.Thread(target=self._serve, args=(s,),
                             daemon=True).start()

    def _serve(self, s):
        p = protocol_on(s)
        names = set()
        try:
            while True:
                name, _, seqid = p.readMessageBegin()
                names.add(name)
                p.skip(TType.STRUCT)
                p.readMessageEnd()
                reply = encode('binary', name, TMessageType.REPLY, seqid,
                               Hbase.getTableNames_result(success=[b'x']))
                mode = self.mode
                if mode == 'good':
                    s.sendall(reply)
                elif mode == 'garbage':
                    s.sendall(b'\xde\xad\xbe\xef' * 8)
                elif mode == 'truncated':
                    s.sendall(reply[:len(reply) // 2])
                    s.close()
                    return
                elif mode == 'truncated-hang':
                    s.sendall(reply[:len(reply) // 2])
                elif mode == 'seqid':
                    s.sendall(encode('binary', name, TMessageType.REPLY,
                                     seqid + 1,
                                     Hbase.getTableNames_result(success=[])))
                elif mode == 'name':
                    s.sendall(encode('binary', 'getTableNamez',
                                     TMessageType.REPLY, seqid,
                                     Hbase.getTableNames_result(success=[])))
                # silent: read on, answer nothing
        except Exception:  # noqa: BLE001 - the proxy hung up: fine
            pass
        finally:
            if names - {'getTableNames'}:
                self.closed += 1

    def close(self):
        self.stopping = True
        self.sock.close()
        for s in self.conns:
            try:
                s.close()
            except OSError:
                pass


# ---- the catalogue: client side --------------------------------------------

class BadClientInput(unittest.TestCase):
    """Runs in name order: warm-up first, the memory check last."""

    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix='hsp-e2e-bad-')
        cls.emu = Emu(cls.dir)
        try:
            cls.proxy = Proxy(cls.dir, cls.emu.port)
        except Exception:
            cls.emu.close()
            raise
        cls.good = client(cls.proxy.port)
        cls.baseline_kb = None

    @classmethod
    def tearDownClass(cls):
        try:
            cls.good._trans.close()
            if cls.proxy.alive():
                rc = cls.proxy.stop()
                assert rc == 0, 'proxy exit code %d' % rc
        finally:
            cls.emu.close()
        if not os.environ.get('HSP_KEEP_LOGS'):
            shutil.rmtree(cls.dir, ignore_errors=True)

    def tearDown(self):
        if self.proxy.alive():
            # where memory goes, case by case, for when the last check fails
            sys.stderr.write('[VmRSS %d kB] ' % self.proxy.rss_kb())

    # -- checks used by every case --

    def unaffected(self):
        """The proxy lives and another client is served as before."""
        self.assertTrue(self.proxy.alive(), 'the proxy died; log in '
                        + self.proxy.log_path)
        row = ('ok-%f' % time.time()).encode()
        self.good.mutateRow(b't', row,
                            [T.Mutation(column=b'd:a', value=row)], {})
        got = self.good.getRow(b't', row, {})
        self.assertEqual(got[0].columns[b'd:a'].value, row)

    def closed_logged(self, s, why, timeout=5.0):
        """s is closed by the proxy and the log names s and why."""
        port = s.getsockname()[1]
        self.assertIsNotNone(wait_closed(s, timeout),
                             'connection left open (%s)' % why)
        s.close()
        pat = re.compile(r'client 127\.0\.0\.1:%d: (closing: )?.*%s'
                         % (port, re.escape(why)))
        wait_for(lambda: pat.search(self.proxy.log_text()), 5,
                 'log line for port %d: %s' % (port, why))

    def send_expect_close(self, data, why, shut=False):
        s = raw(self.proxy.port)
        s.sendall(data)
        if shut:
            s.shutdown(socket.SHUT_WR)
        self.closed_logged(s, why)
        self.unaffected()

    # -- warm-up and baseline --

    def test_00_warmup(self):
        rows = [T.BatchMutation(row=b'big%04d' % i,
                                mutations=[T.Mutation(column=b'd:a',
                                                      value=b'x' * 4096)])
                for i in range(400)]
        self.good.mutateRows(b't', rows, {})
        for i in range(200):
            self.unaffected()
        self._burst(1000)
        self._close_mid_response()
        time.sleep(0.5)
        type(self).baseline_kb = self.proxy.rss_kb()

    # -- framing --

    def test_10_truncated_frame(self):
        m = frame(get_row_call())
        # the frame never completes: the client's EOF ends it
        self.send_expect_close(m[:20], 'closed by peer', shut=True)
        # a complete frame holding a cut message
        cut = get_row_call()[:-6]
        self.send_expect_close(frame(cut), 'message truncated')
        # unframed, then EOF
        self.send_expect_close(get_row_call()[:30], 'closed by peer',
                               shut=True)

    def test_11_frame_over_max(self):
        self.send_expect_close(struct.pack('>I', MAX_FRAME + 1)
                               + b'\x80\x01\x00\x01',
                               'frame larger than max_frame_size')

    def test_12_frame_near_2_31(self):
        # a first frame that large cannot start a Thrift stream at all
        self.send_expect_close(struct.pack('>I', 0x7fffffff)
                               + b'\x80\x01\x00\x01', 'not a Thrift message')
        # 2^31 itself starts with 0x80: read as a bad binary header
        self.send_expect_close(struct.pack('>I', 0x80000000) + b'\0' * 8,
                               'bad binary protocol version')
        # on a connection already framed, the length is checked first
        for n, why in ((0x7fffffff, 'frame larger than max_frame_size'),
                       (0x7ffffff0, 'frame larger than max_frame_size'),
                       (0x80000000, 'invalid frame size'),
                       (0xffffffff, 'invalid frame size')):
            s = raw(self.proxy.port)
            s.sendall(frame(get_row_call()))
            _, _, obj = read_reply(protocol_on(s, framed=True),
                                   Hbase.getRow_result)
            self.assertIsInstance(obj, Hbase.getRow_result)
            s.sendall(struct.pack('>I', n) + b'\x80\x01\x00\x01')
            self.closed_logged(s, why)
            self.unaffected()

    # -- sizes and nesting --

    def test_20_negative_sizes(self):
        head = bin_header('getRow')
        string = head + bin_string(1, b't') + bin_string(2, b'', size=-1)
        lst = (bin_header('getRows') + bin_string(1, b't')
               + b'\x0f\x00\x02\x0b' + struct.pack('>i', -1))
        mp = (head + bin_string(1, b't') + bin_string(2, b'r')
              + b'\x0d\x00\x03\x0b\x0b' + struct.pack('>i', -2))
        for m in (string, lst, mp):
            self.send_expect_close(m + b'\0' * 16, 'negative size')
            self.send_expect_close(frame(m + b'\0' * 16), 'negative size')
        # compact: a size varint above 2^31 - 1
        c = (b'\x82\x21\x01\x06getRow' + b'\x18\x01t'
             + b'\x18\xff\xff\xff\xff\x0f' + b'\0' * 8)
        self.send_expect_close(c, 'negative size')

    def test_21_sizes_beyond_the_bytes(self):
        m = bin_header('getRow') + bin_string(1, b't') + bin_string(
            2, b'abc', size=1000)
        # framed: the frame ends first
        self.send_expect_close(frame(m), 'message truncated')
        # unframed, a size past any message the proxy takes
        m = bin_header('getRow') + bin_string(1, b't') + bin_string(
            2, b'abc', size=0x7fffff00)
        self.send_expect_close(m, 'larger than')
        # a list count larger than the bytes that could hold it
        m = (bin_header('getRows') + bin_string(1, b't')
             + b'\x0f\x00\x02\x0b' + struct.pack('>i', 0x7ffffff0))
        self.send_expect_close(frame(m), 'larger than')

    def test_22_nesting_deeper_than_the_cap(self):
        depth = 100
        body = (b'\x0c\x00\x04' * depth) + b'\x00' * (depth + 1)
        m = bin_header('getRow') + bin_string(1, b't') + body
        self.send_expect_close(m, 'nesting deeper than the limit')
        lists = b'\x0f\x00\x04' + (b'\x0f\x00\x00\x00\x01' * depth)
        m = bin_header('getRow') + bin_string(1, b't') + lists
        self.send_expect_close(frame(m), 'nesting deeper than the limit')

    # -- messages --

    def test_30_reply_sent_by_client(self):
        s = raw(self.proxy.port)
        s.sendall(get_row_call(mtype=TMessageType.REPLY, seqid=5))
        p = protocol_on(s)
        name, seqid, obj = read_reply(p, Hbase.getRow_result)
        self.assertIsInstance(obj, TApplicationException)
        self.assertEqual(obj.type, TApplicationException.INVALID_MESSAGE_TYPE)
        self.assertEqual((name, seqid), ('getRow', 5))
        # the connection itself is still good
        s.sendall(get_row_call(seqid=6))
        name, seqid, obj = read_reply(p, Hbase.getRow_result)
        self.assertEqual(seqid, 6)
        self.assertIsInstance(obj, Hbase.getRow_result)
        s.close()
        self.unaffected()

    def test_31_unknown_method(self):
        for proto, framed in (('binary', False), ('compact', True)):
            s = raw(self.proxy.port)
            m = encode(proto, 'noSuchMethod', TMessageType.CALL, 9,
                       Hbase.getTableNames_args())
            s.sendall(frame(m) if framed else m)
            p = protocol_on(s, proto, framed)
            name, seqid, obj = read_reply(p, Hbase.getTableNames_result)
            self.assertIsInstance(obj, TApplicationException)
            self.assertEqual(obj.type, TApplicationException.UNKNOWN_METHOD)
            self.assertEqual((name, seqid), ('noSuchMethod', 9))
            s.close()
            self.unaffected()

    def test_32_garbage_before_a_valid_message(self):
        m = get_row_call()
        self.send_expect_close(b'hello' + m, 'not a Thrift message')
        self.send_expect_close(b'\x00\x00\x00\x00' + frame(m),
                               'invalid frame size')
        self.send_expect_close(b'\x80\x02\x00\x01' + m,
                               'bad binary protocol version')
        self.send_expect_close(b'\x82\x22' + m, 'bad compact protocol version')

    def test_33_switching_protocol(self):
        cases = (
            (('binary', False), ('compact', False),
             'bad binary protocol version'),
            (('binary', True), ('binary', False), 'invalid frame size'),
            (('compact', False), ('binary', False),
             'bad compact protocol id'),
        )
        for (p1, f1), (p2, f2), why in cases:
            s = raw(self.proxy.port)
            m = get_row_call(proto=p1)
            s.sendall(frame(m) if f1 else m)
            _, seqid, obj = read_reply(protocol_on(s, p1, f1),
                                       Hbase.getRow_result)
            self.assertIsInstance(obj, Hbase.getRow_result)
            m = get_row_call(proto=p2, seqid=2)
            s.sendall(frame(m) if f2 else m)
            self.closed_logged(s, why)
            self.unaffected()

    # -- connections --

    def test_40_slowloris(self):
        """One byte per second against a 1000 ms idle timeout: the
        connection is closed and logged within a bound, not held."""
        p = Proxy(self.dir, self.emu.port, idle_ms=IDLE_TIMEOUT_MS)
        try:
            m = get_row_call()
            s = raw(p.port)
            port = s.getsockname()[1]
            t0 = time.time()
            closed = False
            for b in m:
                try:
                    s.sendall(bytes([b]))
                except OSError:
                    closed = True
                    break
                if wait_closed(s, 1.0) is not None:
                    closed = True
                    break
                if time.time() - t0 > 8 * IDLE_TIMEOUT_MS / 1000.0:
                    break
            s.close()
            self.assertTrue(closed, 'a client sending one byte per second '
                            'was held %.1f s' % (time.time() - t0))
            wait_for(lambda: 'client 127.0.0.1:%d: closing' % port
                     in p.log_text(), 5, 'idle close logged')
            c = client(p.port)
            c.getRow(b't', b'r', {})
            c._trans.close()
            self.assertTrue(p.alive())
        finally:
            self.assertEqual(p.stop(), 0)
        self.unaffected()

    def test_40b_slowloris_below_the_idle_timeout(self):
        """One byte every half idle timeout: each byte resets the idle
        timer, but a message under way must be whole within the idle
        timeout of its first byte (client.c), so the connection is closed
        instead of held for as long as the client likes."""
        p = Proxy(self.dir, self.emu.port, idle_ms=IDLE_TIMEOUT_MS)
        try:
            s = raw(p.port)
            t0 = time.time()
            closed = False
            for b in get_row_call():
                try:
                    s.sendall(bytes([b]))
                except OSError:
                    closed = True
                    break
                if wait_closed(s, IDLE_TIMEOUT_MS / 2000.0) is not None:
                    closed = True
                    break
                if time.time() - t0 > 4 * IDLE_TIMEOUT_MS / 1000.0:
                    break
            s.close()
            self.assertTrue(p.alive())
        finally:
            self.assertEqual(p.stop(), 0)
        self.assertTrue(closed, 'a partial message trickling one byte per '
                        '%d ms was held %.1f s' % (IDLE_TIMEOUT_MS // 2,
                                                   time.time() - t0))

    def _close_mid_response(self):
        """Large replies the client never reads: getRows and a scan."""
        rows = [b'big%04d' % i for i in range(400)]
        s = raw(self.proxy.port)
        s.sendall(encode('binary', 'getRows', TMessageType.CALL, 1,
                         Hbase.getRows_args(tableName=b't', rows=rows,
                                            attributes={})))
        s.recv(1024)  # the reply has started
        s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER,
                     struct.pack('ii', 1, 0))  # RST, unread data and all
        s.close()

        c = client(self.proxy.port)
        sid = c.scannerOpenWithScan(b't', T.TScan(caching=400), {})
        s = raw(self.proxy.port)
        m = encode('binary', 'scannerGetList', TMessageType.CALL, 2,
                   Hbase.scannerGetList_args(id=sid, nbRows=400))
        s.sendall(m)
        s.recv(1024)
        s.close()
        c.scannerClose(sid)
        c._trans.close()

    def test_41_client_closes_mid_response(self):
        self._close_mid_response()
        time.sleep(0.2)
        self.unaffected()

    def _burst(self, n):
        """n connections opened and closed, four at a time: a third end at
        once, a third after one byte, a third after a whole request.  Each
        half-closes and waits for the proxy's close, which bounds how many
        the proxy holds at once (fire-and-forget closes pile up in it by
        the thousand, see test_43) and checks that every one is closed."""
        errors = []
        call = get_row_call()

        def work(k):
            for i in range(k, n, 4):
                try:
                    s = socket.create_connection(('127.0.0.1',
                                                  self.proxy.port))
                    if i % 3 == 1:
                        s.sendall(b'\x80')
                    elif i % 3 == 2:
                        s.sendall(call)
                    s.shutdown(socket.SHUT_WR)
                    if wait_closed(s, 5.0) is None:
                        errors.append('connection %d left open' % i)
                    s.close()
                except OSError as e:
                    errors.append('connection %d: %r' % (i, e))
                if len(errors) > 10:
                    return

        threads = [threading.Thread(target=work, args=(k,))
                   for k in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(300)
        self.assertEqual(errors, [])

    def test_42_connection_burst(self):
        t0 = time.time()
        self._burst(BURST)
        took = time.time() - t0
        time.sleep(0.5)
        self.unaffected()
        sys.stderr.write('burst of %d connections: %.1f s\n' % (BURST, took))

    def test_99_memory_back_to_baseline(self):
        if sanitized(ARGS.proxy):
            self.skipTest('AddressSanitizer build: RSS holds its quarantine')
        self.assertIsNotNone(self.baseline_kb, 'warm-up did not run')
        time.sleep(0.5)  # closes in flight settle
        now = self.proxy.rss_kb()
        sys.stderr.write('VmRSS after warm-up %d kB, after the catalogue '
                         '%d kB\n' % (self.baseline_kb, now))
        self.assertLess(now - self.baseline_kb, RSS_TOLERANCE_KB,
                        'VmRSS grew from %d kB to %d kB'
                        % (self.baseline_kb, now))


# ---- the catalogue: backend side -------------------------------------------

class BadBackend(unittest.TestCase):
    """A fake backend per case; the client must get an IOError naming it,
    within the request timeout, and the next client must be served."""

    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix='hsp-e2e-badbe-')

    @classmethod
    def tearDownClass(cls):
        if not os.environ.get('HSP_KEEP_LOGS'):
            shutil.rmtree(cls.dir, ignore_errors=True)

    def check(self, mode, why):
        be = FakeBackend()
        p = Proxy(self.dir, be.port)
        try:
            c = client(p.port, timeout=REQUEST_TIMEOUT_MS / 1000.0 + 5)
            self.assertEqual(c.getTableNames(), [b'x'])  # a good start
            be.mode = mode
            t0 = time.time()
            with self.assertRaises(T.IOError) as cm:
                c.getTableNames()
            took = time.time() - t0
            msg = cm.exception.message
            self.assertIn('backend %s' % p.backend, msg)
            self.assertIn(why, msg)
            self.assertLess(took, REQUEST_TIMEOUT_MS / 1000.0 + 1.0)
            # the same client and another one go on once it behaves
            be.mode = 'good'
            self.assertEqual(c.getTableNames(), [b'x'])
            d = client(p.port)
            self.assertEqual(d.getTableNames(), [b'x'])
            d._trans.close()
            c._trans.close()
            self.assertTrue(p.alive())
        finally:
            be.close()
            self.assertEqual(p.stop(), 0)

    def test_garbage(self):
        self.check('garbage', 'bad reply')

    def test_truncated_then_closed(self):
        self.check('truncated', 'hbase-salt-proxy')

    def test_truncated_then_nothing(self):
        self.check('truncated-hang', 'timed out')

    def test_wrong_seqid(self):
        self.check('seqid', 'wrong sequence id')

    def test_wrong_method_name(self):
        self.check('name', 'another method')

    def test_no_reply(self):
        self.check('silent', 'timed out after %d ms' % REQUEST_TIMEOUT_MS)

    def test_wrong_seqid_to_a_scanner_call(self):
        """The scan engine's own calls are paired with replies by order
        too: a reply with another call's sequence id must reset that
        connection, as for a client's call, not pass for the next reply;
        the client's scan fails with an IOError."""
        be = FakeBackend()
        p = Proxy(self.dir, be.port)
        try:
            c = client(p.port, timeout=REQUEST_TIMEOUT_MS / 1000.0 + 5)
            self.assertEqual(c.getTableNames(), [b'x'])
            self.assertEqual(be.closed, 0)
            be.mode = 'seqid'
            with self.assertRaises(T.IOError) as cm:
                c.scannerOpenWithScan(b't', T.TScan(), {})
            self.assertIn('out of step', cm.exception.message)
            wait_for(lambda: be.closed > 0, 5,
                     'the out-of-step connection reset')
            be.mode = 'good'
            self.assertEqual(c.getTableNames(), [b'x'])
            c._trans.close()
            self.assertTrue(p.alive())
        finally:
            be.close()
            self.assertEqual(p.stop(), 0)


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
