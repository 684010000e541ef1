"""Scanner lifecycle of hbase-salt-proxy in front of hbase-emu: proxy
scanner ids used across connections and workers, scannerClose and expiry
closing every backend scanner, a bucket failing mid-scan, unknown ids,
nbRows <= 0, pass-through scanners identical to the emulator's, and the
proxy's memory over a long scan.  The rows a scan returns (the oracle) are
another suite's; here they are checked only as far as lifecycle needs.

  /usr/bin/python3 tests/e2e/test_scan_lifecycle.py \\
      --proxy BUILD/daemon/hbase-salt-proxy --emu BUILD/tests/emu/hbase-emu \\
      --pydir BUILD/thrift/py [unittest args, e.g. CoreTest]

Backend scanners are observed on the emulator itself: its stats do not
count open scanners, but its scanner ids come from one process-wide
counter, so the ids between two direct probe opens are exactly the ones the
proxy opened in between, and a live id answers scannerGetList(id, 0) with []
where a closed or expired one gives IllegalArgument.

SCAN_MEMORY_ROWS (default 200000) sets the size of the memory test's scan;
HSP_KEEP_LOGS=1 keeps the temp dir (configs, logs).
"""

import argparse
import os
import random
import shutil
import signal
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
INVALID = 'scanner ID is invalid'
ROWS = 2000                 # rows in each of 's' (salted) and 'plain'
BUCKETS = 16

Hbase = T = TApplicationException = None
TSocket = TTransport = TBinaryProtocol = TCompactProtocol = None


# Set by .ci/quickstart's sanitizer pass: ASan's quarantine holds freed
# memory back from the allocator, so RSS there measures allocation volume,
# not what is live; the RSS-size checks are skipped under it (everything
# else they sit beside still runs).
UNDER_ASAN = os.environ.get('HSP_UNDER_ASAN') == '1'


def rss_kib(pid):
    with open('/proc/%d/status' % pid) as f:
        for line in f:
            if line.startswith('VmRSS:'):
                return int(line.split()[1])
    raise AssertionError('no VmRSS for %d' % pid)


class Emu(hsptest.Emu):
    """hbase-emu; restarts come back on the same port."""

    def __init__(self, workdir, *extra):
        super().__init__(ARGS.emu, workdir,
                         ['--create-table', 's:d', '--create-table', 'plain:d',
                          '--create-table', 'big:d',
                          '--create-table', 'warm:d'] + list(extra),
                         start=False)

    def start(self):
        super().start()
        self.warm_up()

    def warm_up(self):
        # hbase-emu bug: the thrift c_glib *_get_type() it is built on
        # register their GType unlocked on first use, so the first
        # TRowResult made on two server threads at once can abort the
        # emulator ("cannot register existing type 'HbaseTRowResultType'").
        # Make every reply type here first, on one connection.
        c = client(self.port)
        c.mutateRow(b'warm', b'w', [T.Mutation(column=b'd:a', value=b'1')],
                    {})
        sid = c.scannerOpenWithScan(b'warm', T.TScan(caching=5), {})
        c.scannerGetList(sid, 5)
        c.scannerGet(sid)
        c.scannerClose(sid)
        c.getRow(b'warm', b'w', {})
        for fn, args in ((c.scannerGet, (sid,)),
                         (c.scannerOpen, (b'nosuchtable', b'', [], {}))):
            try:
                fn(*args)
            except (T.IOError, T.IllegalArgument):
                pass
        c._trans.close()


class Proxy(hsptest.Proxy):
    def __init__(self, workdir, backend_port, scanner_timeout_ms=60000,
                 request_timeout_ms=5000, workers=2):
        self.port = free_port()
        conf = ('[proxy]\nlisten = 127.0.0.1:%d\nworkers = %d\n'
                '[backend]\nservers = 127.0.0.1:%d\n'
                'connect_timeout_ms = 500\nrequest_timeout_ms = %d\n'
                'pool_size = 4\n'
                '[scan]\nscanner_timeout_ms = %d\n'
                '[table:s]\nbuckets = %d\n'
                '[table:big]\nbuckets = %d\n'
                % (self.port, workers, backend_port, request_timeout_ms,
                   scanner_timeout_ms, BUCKETS, BUCKETS))
        super().__init__(ARGS.proxy, workdir, conf, [self.port],
                         name='proxy-%d' % self.port, timeout=10)


def client(port, proto='binary', transport='buffered', timeout=10.0,
           accel=False):
    # accel: the C-accelerated binary protocol (compact stays pure Python)
    return hsptest.client(port, proto, transport, timeout,
                          accel=accel and proto != 'compact')


VARIANTS = [('binary', 'buffered'), ('binary', 'framed'),
            ('compact', 'buffered'), ('compact', 'framed')]


def key(i):
    return b'k%05d' % i


def val(i):
    return b'v%d-' % i + b'x' * (i % 40)


def load(c, table, n):
    for lo in range(0, n, 500):
        c.mutateRows(table, [T.BatchMutation(row=key(i), mutations=[
            T.Mutation(column=b'd:a', value=val(i))])
            for i in range(lo, min(n, lo + 500))], {})


def keys_of(rows):
    return [r.row for r in rows]


def expected(lo, hi, reversed_=False):
    """Keys k(lo) .. k(hi - 1) of a loaded table, in scan order."""
    ks = [key(i) for i in range(max(lo, 0), min(hi, ROWS))]
    return ks[::-1] if reversed_ else ks


class Probe(object):
    """A direct client of the emulator that watches its scanner ids."""

    def __init__(self, port):
        self.c = client(port)

    def next_id(self):
        """Opens and closes a scanner; its id bounds the proxy's."""
        sid = self.c.scannerOpen(b'plain', b'', [], {})
        self.c.scannerClose(sid)
        return sid

    def alive(self, sid):
        try:
            self.c.scannerGetList(sid, 0)  # touches nothing but the clock
            return True
        except T.IllegalArgument as e:
            assert e.message == INVALID, e.message
            return False

    def close(self):
        self.c._trans.close()


class _Base(unittest.TestCase):
    EMU_ARGS = ()
    PROXY_KEYS = {}

    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix='hsp-e2e-life-')
        cls.emu = Emu(cls.dir, *cls.EMU_ARGS)
        cls.emu.start()
        cls.proxy = Proxy(cls.dir, cls.emu.port, **cls.PROXY_KEYS)
        cls.extra = []
        cls.load_all()

    @classmethod
    def load_all(cls):
        c = client(cls.proxy.port)
        load(c, b's', ROWS)
        load(c, b'plain', ROWS)
        c._trans.close()

    @classmethod
    def tearDownClass(cls):
        try:
            for p in [cls.proxy] + cls.extra:
                if p.alive():
                    rc = p.stop()
                    assert rc == 0, 'proxy exit code %d' % rc
        finally:
            cls.emu.close()
        if not os.environ.get('HSP_KEEP_LOGS'):
            shutil.rmtree(cls.dir, ignore_errors=True)

    def setUp(self):
        self.probe = Probe(self.emu.port)

    def tearDown(self):
        self.probe.close()
        self.assertTrue(self.proxy.alive(), 'the proxy died; log in '
                        + self.proxy.log_path)

    def assertInvalid(self, fn, *args):
        with self.assertRaises(T.IllegalArgument) as cm:
            fn(*args)
        self.assertEqual(cm.exception.message, INVALID)

    def open_watched(self, c, fn, *args):
        """Opens a proxy scanner; returns (id, backend ids it opened)."""
        a = self.probe.next_id()
        sid = fn(*args)
        b = self.probe.next_id()
        return sid, list(range(a + 1, b))

    def drain(self, c, sid, n=100):
        out = []
        while True:
            rows = c.scannerGetList(sid, n)
            if not rows:
                return out
            out.extend(rows)


class CoreTest(_Base):
    """Ids across connections and workers, close, unknown ids, nbRows <= 0,
    pass-through identical to the emulator."""

    def test_01_ids_across_connections_and_workers(self):
        # 4 threads x 8 scanners, each thread with its own 12 connections
        # (12 per thread, 48 in all: SO_REUSEPORT puts both workers behind
        # them with certainty short of 2^-47); every call of a scanner goes
        # on a random connection other than the previous one, so about
        # half of them are posted to the scanner's owner on the other
        # worker.  Rows must come out whole, in order, and closes from yet
        # another connection must make the id invalid everywhere.
        errors = []

        def work(t):
            rnd = random.Random(1000 + t)
            try:
                conns = [client(self.proxy.port, *VARIANTS[(t + i) % 4])
                         for i in range(12)]
                scans = []
                for j in range(8):
                    table = (b's', b'plain')[(j + t) % 2]
                    lo = rnd.randrange(0, ROWS - 400)
                    hi = lo + rnd.randrange(1, 400)
                    rev = table == b's' and j % 4 == 2
                    caching = rnd.choice([0, 1, 7, 100, 1000])
                    c = rnd.choice(conns)
                    if rev:
                        sid = c.scannerOpenWithScan(table, T.TScan(
                            startRow=key(hi - 1), stopRow=key(lo - 1)
                            if lo > 0 else None, reversed=True,
                            caching=caching or None), {})
                        want = expected(lo, hi, True)
                    elif j % 3 == 0:
                        sid = c.scannerOpenWithStop(table, key(lo), key(hi),
                                                    [], {})
                        want = expected(lo, hi)
                    else:
                        sid = c.scannerOpenWithScan(table, T.TScan(
                            startRow=key(lo), stopRow=key(hi),
                            caching=caching or None), {})
                        want = expected(lo, hi)
                    scans.append(dict(id=sid, table=table, want=want,
                                      got=[], last=c, done=False))
                ids = [s['id'] for s in scans]
                if len(set(ids)) != len(ids):
                    errors.append('thread %d: duplicate ids %r' % (t, ids))
                while not all(s['done'] for s in scans):
                    s = rnd.choice([s for s in scans if not s['done']])
                    c = rnd.choice([x for x in conns if x is not s['last']])
                    s['last'] = c
                    if rnd.random() < 0.3:
                        rows = c.scannerGet(s['id'])
                    else:
                        rows = c.scannerGetList(s['id'], rnd.randrange(1, 60))
                    for r in rows:
                        if r.columns[b'd:a'].value != val(int(r.row[1:])):
                            errors.append('thread %d: bad value %r'
                                          % (t, r.row))
                    s['got'].extend(keys_of(rows))
                    if rows:
                        continue
                    s['done'] = True
                    if s['got'] != s['want']:
                        errors.append('thread %d: scanner %d on %s: %d rows '
                                      'of %d, first bad at %r' % (
                                          t, s['id'], s['table'],
                                          len(s['got']), len(s['want']),
                                          next((a for a, b in zip(
                                              s['got'], s['want'])
                                              if a != b), None)))
                    c = rnd.choice([x for x in conns if x is not s['last']])
                    c.scannerClose(s['id'])
                    for c in rnd.sample(conns, 3):
                        for fn in (c.scannerGet, c.scannerClose):
                            try:
                                fn(s['id'])
                                errors.append('thread %d: id %d works after '
                                              'close' % (t, s['id']))
                            except T.IllegalArgument as e:
                                if e.message != INVALID:
                                    errors.append(e.message)
                for c in conns:
                    c._trans.close()
            except Exception as e:  # noqa: BLE001 - reported below
                errors.append('thread %d: %r' % (t, e))

        threads = [threading.Thread(target=work, args=(t,)) for t in range(4)]
        for th in threads:
            th.start()
        for th in threads:
            th.join(120)
        self.assertEqual(errors, [])

    def test_02_open_here_use_there(self):
        # plainer: one scanner per (table, opening connection), each row
        # fetched on the next of 16 connections in turn
        conns = [client(self.proxy.port, *VARIANTS[i % 4])
                 for i in range(16)]
        for table in (b's', b'plain'):
            for i, opener in enumerate(conns):
                sid = opener.scannerOpenWithStop(table, key(100 * i),
                                                 key(100 * i + 40), [], {})
                got = []
                for j in range(41):
                    got += keys_of(conns[(i + 1 + j) % 16].scannerGet(sid))
                self.assertEqual(got, expected(100 * i, 100 * i + 40))
                conns[(i + 5) % 16].scannerClose(sid)
                self.assertInvalid(conns[(i + 9) % 16].scannerGetList, sid, 1)
        for c in conns:
            c._trans.close()

    def test_02b_concurrent_calls_on_one_scanner(self):
        # calls on one scanner from 8 connections at once (both workers):
        # queued on the owner, each answered with a run of the scan, the
        # runs together the scan's rows exactly once; then a close racing
        # reads: each read is a run or IllegalArgument, and the id is dead
        conns = [client(self.proxy.port, *VARIANTS[i % 4]) for i in range(8)]
        for table in (b's', b'plain'):
            for rnd in range(3):
                sid = conns[rnd].scannerOpenWithScan(table, T.TScan(
                    startRow=key(100), caching=(7, 100, 1000)[rnd]), {})
                runs = []
                for _ in range(4):
                    for c in conns:
                        c.send_scannerGetList(sid, 9)
                    for c in conns:
                        runs.append(keys_of(c.recv_scannerGetList()))
                want = expected(100, ROWS)
                got = sorted(runs, key=lambda r: r[0] if r else b'')
                self.assertTrue(all(len(r) == 9 for r in runs), table)
                self.assertEqual([k for r in got for k in r], want[:9 * 32])
                conns[0].send_scannerClose(sid)
                for c in conns[1:]:
                    c.send_scannerGetList(sid, 5)
                conns[0].recv_scannerClose()
                after = []
                for c in conns[1:]:
                    try:
                        after.append(keys_of(c.recv_scannerGetList()))
                    except T.IllegalArgument as e:
                        self.assertEqual(e.message, INVALID)
                after.sort(key=lambda r: r[0] if r else b'')
                self.assertEqual([k for r in after for k in r],
                                 want[9 * 32:9 * 32 + 5 * len(after)])
                for c in conns:
                    self.assertInvalid(c.scannerGetList, sid, 1)
        for c in conns:
            c._trans.close()

    def test_03_close_closes_every_backend_scanner(self):
        c = client(self.proxy.port)
        other = client(self.proxy.port)
        for table, nb in ((b's', BUCKETS), (b'plain', 1)):
            sid, backend = self.open_watched(
                c, c.scannerOpenWithScan, table, T.TScan(caching=10), {})
            self.assertEqual(len(backend), nb, (table, backend))
            self.assertEqual(keys_of(c.scannerGetList(sid, 5)),
                             expected(0, 5))
            for b in backend:
                self.assertTrue(self.probe.alive(b), (table, b))
            other.scannerClose(sid)
            wait_for(lambda: not any(self.probe.alive(b) for b in backend),
                     3, 'backend scanners of %s closed' % table)
            self.assertInvalid(c.scannerGet, sid)
            self.assertInvalid(other.scannerGetList, sid, 10)
            self.assertInvalid(c.scannerClose, sid)       # double close
            self.assertInvalid(other.scannerClose, sid)
        # a scan read to its end then closed, and one closed unread
        for table in (b's', b'plain'):
            sid, backend = self.open_watched(
                c, c.scannerOpenWithStop, table, key(10), key(300), [], {})
            self.assertEqual(keys_of(self.drain(c, sid, 37)),
                             expected(10, 300))
            c.scannerClose(sid)
            wait_for(lambda: not any(self.probe.alive(b) for b in backend),
                     3, 'backend scanners closed')
            sid, backend = self.open_watched(
                c, c.scannerOpen, table, b'', [], {})
            c.scannerClose(sid)
            wait_for(lambda: not any(self.probe.alive(b) for b in backend),
                     3, 'backend scanners closed')
            self.assertInvalid(c.scannerClose, sid)
        c._trans.close()
        other._trans.close()

    def test_04_open_close_long_run(self):
        # many open / read / close cycles: every backend id the proxy used
        # is closed at the end, and neither process grows
        conns = [client(self.proxy.port) for _ in range(4)]
        emu_pid, proxy_pid = self.emu.proc.pid, self.proxy.proc.pid

        def cycles(n, rnd):
            for i in range(n):
                a, b = rnd.sample(conns, 2)
                table = b's' if i % 4 else b'plain'
                lo = rnd.randrange(ROWS)
                sid = a.scannerOpenWithScan(table, T.TScan(
                    startRow=key(lo), caching=rnd.choice([5, 50, 500])), {})
                self.assertEqual(keys_of(b.scannerGetList(sid, 3)),
                                 expected(lo, lo + 3))
                b.scannerClose(sid)

        rnd = random.Random(4)
        cycles(300, rnd)                                  # warm up
        first = self.probe.next_id()
        emu0, proxy0 = rss_kib(emu_pid), rss_kib(proxy_pid)
        cycles(1500, rnd)
        last = self.probe.next_id()
        time.sleep(0.3)
        emu1, proxy1 = rss_kib(emu_pid), rss_kib(proxy_pid)
        print('\n  open/close x1500: %d backend scanners; emulator RSS '
              '%d -> %d KiB, proxy RSS %d -> %d KiB'
              % (last - first - 1, emu0, emu1, proxy0, proxy1))
        self.assertGreater(last - first - 1, 1500 * 3 // 4 * BUCKETS)
        leaked = [b for b in range(first + 1, last) if self.probe.alive(b)]
        self.assertEqual(leaked, [], 'backend scanners left open')
        # a leak of one scanner per cycle is tens of MiB on either side
        # (under ASan LeakSanitizer at exit catches such leaks instead)
        if not UNDER_ASAN:
            self.assertLess(emu1 - emu0, 8 * 1024)
            self.assertLess(proxy1 - proxy0, 8 * 1024)
        for c in conns:
            c._trans.close()

    def test_05_unknown_ids(self):
        c = client(self.proxy.port, 'compact', 'framed')
        d = client(self.proxy.port)
        live = c.scannerOpen(b's', b'', [], {})
        for sid in (0, -1, -2, -2 ** 31, 2 ** 31 - 1, 123456789, live + 1000):
            for x in (c, d):
                self.assertInvalid(x.scannerGet, sid)
                self.assertInvalid(x.scannerGetList, sid, 10)
                self.assertInvalid(x.scannerGetList, sid, 0)
                self.assertInvalid(x.scannerClose, sid)
        self.assertTrue(live > 0)
        # the live one is untouched by all that
        self.assertEqual(keys_of(d.scannerGetList(live, 3)), expected(0, 3))
        c.scannerClose(live)
        c._trans.close()
        d._trans.close()

    def assertNegative(self, c, sid, n):
        """nbRows 0 is an empty list; a negative one is what HBase's
        ResultScanner.next(n) makes of it, an ArrayList of that size: an
        unchecked exception, TApplicationException to the client, and the
        scanner as it was."""
        if n == 0:
            self.assertEqual(c.scannerGetList(sid, n), [])
            return
        with self.assertRaises(TApplicationException) as cm:
            c.scannerGetList(sid, n)
        self.assertEqual(cm.exception.type,
                         TApplicationException.INTERNAL_ERROR)
        self.assertEqual(cm.exception.message,
                         'Internal error processing scannerGetList')

    def test_06_nbrows_not_positive(self):
        c = client(self.proxy.port)
        d = client(self.proxy.port, 'compact')
        for table in (b's', b'plain'):
            for caching in (None, 3):
                sid = c.scannerOpenWithScan(table, T.TScan(
                    startRow=key(20), stopRow=key(60), caching=caching), {})
                got = []
                # 0: an empty list; below 0: HBase's INTERNAL_ERROR (real
                # HBase 2.6, not the [] the proxy once gave), the scanner
                # left as it was
                for n in (0, -1, -2 ** 31, 0):
                    for x in (d, c):
                        self.assertNegative(x, sid, n)
                got += keys_of(c.scannerGetList(sid, 7))
                self.assertEqual(d.scannerGetList(sid, 0), [])
                got += keys_of(d.scannerGet(sid))
                self.assertNegative(c, sid, -5)
                got += keys_of(self.drain(d, sid, 9))
                self.assertEqual(got, expected(20, 60), table)
                # at the end: [] for every size, and still open
                self.assertEqual(c.scannerGetList(sid, 0), [])
                self.assertEqual(c.scannerGetList(sid, 5), [])
                self.assertEqual(c.scannerGet(sid), [])
                d.scannerClose(sid)
                self.assertInvalid(c.scannerGetList, sid, 0)
        c._trans.close()
        d._trans.close()

    def test_07_pass_through_identical(self):
        # the same calls on the emulator and through the proxy on the
        # unsalted table: rows and errors identical, ids aside
        big = 2 ** 62
        opens = [
            ('scannerOpen', (b'plain', key(1990), [b'd:a'], {})),
            ('scannerOpen', (b'plain', b'', [b'd'], {})),
            ('scannerOpenWithStop', (b'plain', key(100), key(150), [], {})),
            ('scannerOpenWithPrefix', (b'plain', b'k001', [], {})),
            ('scannerOpenTs', (b'plain', key(1900), [], big, {})),
            ('scannerOpenTs', (b'plain', key(1900), [], 1, {})),
            ('scannerOpenWithStopTs', (b'plain', key(5), key(77), [], big,
                                       {})),
            ('scannerOpenWithScan', (b'plain', T.TScan(
                startRow=key(300), stopRow=key(200), reversed=True,
                caching=5), {})),
            ('scannerOpenWithScan', (b'plain', T.TScan(
                filterString=b"PrefixFilter('k0012')", caching=3), {})),
            ('scannerOpenWithScan', (b'plain', T.TScan(
                startRow=key(40), stopRow=key(44), batchSize=1,
                columns=[b'd:a']), {})),
            ('scannerOpenWithScan', (b'plain', T.TScan(
                startRow=key(40), stopRow=key(40)), {})),
        ]
        bad_opens = [
            ('scannerOpen', (b'nosuchtable', b'', [], {})),
            ('scannerOpen', (b'n' * 300, b'', [], {})),
            ('scannerOpenWithScan', (b'plain', T.TScan(
                filterString=b"NoSuchFilter('x')"), {})),
            ('scannerOpenWithScan', (b'plain', T.TScan(
                filterString=b"PrefixFilter("), {})),
            ('scannerOpen', (b'plain', b'', [b'nosuchfamily:a'], {})),
        ]
        d = client(self.emu.port)
        p = client(self.proxy.port)
        q = client(self.proxy.port, 'compact', 'framed')

        from thrift.Thrift import TApplicationException

        def outcome(fn, *args):
            try:
                return ('ok', fn(*args))
            except (T.IOError, T.IllegalArgument) as e:
                return (type(e).__name__, e.message,
                        getattr(e, 'canRetry', None))
            except Exception as e:  # a bad filter: INTERNAL_ERROR
                if type(e).__name__ != 'TApplicationException':
                    raise
                return (type(e).__name__, e.type, e.message)

        for name, args in opens:
            did = getattr(d, name)(*args)
            pid = getattr(p, name)(*args)
            steps = [('scannerGetList', 0), ('scannerGet',),
                     ('scannerGetList', 4), ('scannerGetList', -3)]
            steps += [('scannerGetList', 9)] * 60
            steps += [('scannerGet',), ('scannerGetList', 1),
                      ('scannerClose',), ('scannerGet',),
                      ('scannerGetList', 2), ('scannerClose',)]
            for i, st in enumerate(steps):
                via = (p, q)[i % 2]
                want = outcome(getattr(d, st[0]), did, *st[1:])
                got = outcome(getattr(via, st[0]), pid, *st[1:])
                self.assertEqual(got, want, (name, args, i, st))
            self.assertEqual(want[0], 'IllegalArgument')
        for name, args in bad_opens:
            want = outcome(getattr(d, name), *args)
            got = outcome(getattr(p, name), *args)
            self.assertEqual(got, want, (name, args))
        d._trans.close()
        p._trans.close()
        q._trans.close()

    def test_08_close_waits_for_reads(self):
        """A close while a bucket's read-ahead is in flight: real HBase's
        ClientScanner is not thread-safe, and a scannerClose run beside a
        scannerGetList of the same scanner (another connection of the pool)
        breaks the read (NullPointerException in loadCache, seen against
        real HBase 2.6) or hangs it.  The proxy closes such a bucket when
        its read is back; hbase-emu says on stderr when a close overlaps a
        call."""
        d = tempfile.mkdtemp(prefix='hsp-e2e-life-')
        # every call takes 100 ms: read-aheads are in flight at the close,
        # 16 buckets on 4 connections, the buckets at different points
        emu = Emu(d, '--rpc-latency-us', '100000')
        emu.start()
        proxy = Proxy(d, emu.port)
        try:
            c = client(proxy.port)
            load(c, b's', 400)
            for caching, n in ((4, 7), (4, 23), (3, 40), (5, 61), (2, 33),
                               (6, 90), (3, 17)):
                sid = c.scannerOpenWithScan(b's', T.TScan(caching=caching),
                                            {})
                self.assertEqual(keys_of(c.scannerGetList(sid, n)),
                                 expected(0, n))
                c.scannerClose(sid)
            time.sleep(1.0)         # every close has reached the emulator
            with self.assertRaises(T.IllegalArgument):
                c.scannerGetList(sid, 1)
            c._trans.close()
            self.assertTrue(proxy.alive())
        finally:
            proxy.stop()
            emu.close()
        with open(os.path.join(d, 'emu.log'), 'rb') as f:
            log = f.read().decode('utf-8', 'replace')
        self.assertNotIn('closed while a call on it runs', log)
        shutil.rmtree(d, ignore_errors=True)


class ExpiryTest(_Base):
    """[scan] scanner_timeout_ms = 1000 (its minimum): idle scanners go,
    with every backend scanner; busy ones stay."""

    PROXY_KEYS = dict(scanner_timeout_ms=1000)

    def test_1_idle_scanner_expires(self):
        c = client(self.proxy.port)
        d = client(self.proxy.port, 'compact')
        watched = []
        for table, nb in ((b's', BUCKETS), (b'plain', 1)):
            for n in (0, 7):                 # unread, and partly read
                sid, backend = self.open_watched(
                    c, c.scannerOpenWithScan, table, T.TScan(caching=20), {})
                self.assertEqual(len(backend), nb)
                self.assertEqual(keys_of(d.scannerGetList(sid, n)),
                                 expected(0, n))
                watched.append((table, sid, backend))
        # not before its time: idle 0.5 s is fine (timer period is 1 s, so
        # expiry comes between 1 and about 2 s of idleness)
        time.sleep(0.5)
        for table, sid, backend in watched:
            self.assertEqual(d.scannerGetList(sid, 0), [])
            self.assertTrue(all(self.probe.alive(b) for b in backend))
        time.sleep(3.2)
        for table, sid, backend in watched:
            self.assertInvalid(c.scannerGetList, sid, 10)
            self.assertInvalid(d.scannerGet, sid)
            self.assertInvalid(c.scannerClose, sid)
            # the emulator's own timeout is 120 s: only the proxy closed them
            self.assertEqual([b for b in backend if self.probe.alive(b)], [],
                             (table, sid))
        with open(self.proxy.log_path, 'rb') as f:
            log = f.read()
        self.assertIn(b'expired after 1000 ms idle', log)
        c._trans.close()
        d._trans.close()

    def test_2_busy_scanner_stays(self):
        # read a row every 0.25 s for 4 s, each call on a connection of
        # its own (some on the other worker): never expires, nothing lost
        conns = [client(self.proxy.port, *VARIANTS[i % 4]) for i in range(8)]
        for table in (b's', b'plain'):
            sid, backend = self.open_watched(
                conns[0], conns[0].scannerOpenWithScan, table,
                T.TScan(startRow=key(500), caching=4), {})
            got = []
            end = time.time() + 4.0
            i = 0
            while time.time() < end:
                got += keys_of(conns[i % 8].scannerGetList(sid, 1))
                i += 1
                time.sleep(0.25)
            # and the same with nbRows = 0 calls only: they count as use
            end = time.time() + 2.5
            while time.time() < end:
                self.assertEqual(conns[i % 8].scannerGetList(sid, 0), [])
                i += 1
                time.sleep(0.3)
            got += keys_of(self.drain(conns[3], sid, 250))
            self.assertEqual(got, expected(500, ROWS), table)
            conns[5].scannerClose(sid)
            wait_for(lambda: not any(self.probe.alive(b) for b in backend),
                     3, 'backend scanners closed')
        for c in conns:
            c._trans.close()

    def test_3_expiry_spares_the_others(self):
        # an idle scanner expiring next to busy ones on both workers
        conns = [client(self.proxy.port) for _ in range(8)]
        idle = conns[0].scannerOpen(b's', b'', [], {})
        busy = [(conns[i].scannerOpenWithScan(
            (b's', b'plain')[i % 2], T.TScan(caching=2), {}), [])
            for i in range(8)]
        end = time.time() + 3.5
        i = 0
        while time.time() < end:
            sid, got = busy[i % 8]
            got += keys_of(conns[(i * 3) % 8].scannerGetList(sid, 2))
            i += 1
            time.sleep(0.02)
        self.assertInvalid(conns[1].scannerGet, idle)
        for j, (sid, got) in enumerate(busy):
            got += keys_of(self.drain(conns[j], sid, 500))
            self.assertEqual(got, expected(0, ROWS), j)
            conns[j].scannerClose(sid)
        for c in conns:
            c._trans.close()


class BucketFailureTest(_Base):
    """The emulator expires its scanners after 1 s (the proxy's stay for
    60 s), is stopped, and is killed, each mid-scan."""

    EMU_ARGS = ('--scanner-timeout-ms', '1000')
    PROXY_KEYS = dict(request_timeout_ms=1500)

    def open_partly_read(self, c, table=b's', caching=16, n=20):
        # 2000 rows over 16 buckets, 16 a fetch with one ahead: most of
        # every bucket is still on the emulator
        sid = c.scannerOpenWithScan(table, T.TScan(caching=caching), {})
        self.assertEqual(keys_of(c.scannerGetList(sid, n)), expected(0, n))
        return sid

    def read_until_error(self, c, sid, n=97):
        """Reads to the end; returns (rows, exception or None, seconds)."""
        got = []
        t0 = time.time()
        try:
            while True:
                rows = c.scannerGetList(sid, n)
                if not rows:
                    return got, None, time.time() - t0
                got += keys_of(rows)
        except (T.IOError, T.IllegalArgument) as e:
            return got, e, time.time() - t0

    def test_1_backend_scanners_expire(self):
        c = client(self.proxy.port)
        sid = self.open_partly_read(c)
        rev = c.scannerOpenWithScan(b's', T.TScan(
            startRow=key(ROWS - 1), reversed=True, caching=16), {})
        self.assertEqual(keys_of(c.scannerGetList(rev, 20)),
                         expected(ROWS - 20, ROWS, True))
        # meanwhile another client's whole scans all succeed
        errors = []
        stop = threading.Event()

        def other():
            try:
                o = client(self.proxy.port, 'compact', 'framed')
                while not stop.is_set():
                    s = o.scannerOpenWithScan(b's', T.TScan(caching=1000), {})
                    got = keys_of(self.drain(o, s, 1000))
                    o.scannerClose(s)
                    if got != expected(0, ROWS):
                        errors.append('other scan: %d rows' % len(got))
                o._trans.close()
            except Exception as e:  # noqa: BLE001 - reported below
                errors.append(repr(e))
        th = threading.Thread(target=other)
        th.start()
        time.sleep(2.8)
        stop.set()
        th.join(30)
        self.assertEqual(errors, [])
        for s, want in ((sid, expected(0, ROWS)),
                        (rev, expected(0, ROWS, True))):
            got, err, took = self.read_until_error(c, s)
            self.assertIsInstance(err, T.IOError,
                                  'a scan over expired backend scanners '
                                  'ended with %d of %d rows'
                                  % (20 + len(got), len(want)))
            self.assertIn('scan of s failed in bucket', err.message)
            self.assertIn(INVALID, err.message)
            # HBase's IllegalArgument: the scanner is gone, a retry of
            # the call cannot help (the client opens a new one)
            self.assertFalse(err.canRetry, err.message)
            self.assertEqual(want[20:20 + len(got)], got)
            self.assertLess(took, 5)
            # failed for good: every further read is the same IOError
            for fn, args in ((c.scannerGet, (s,)),
                             (c.scannerGetList, (s, 5))):
                with self.assertRaises(T.IOError) as cm:
                    fn(*args)
                self.assertEqual(cm.exception.message, err.message)
            c.scannerClose(s)
            self.assertInvalid(c.scannerGet, s)
        # the connection, the proxy and new scans are fine
        sid = c.scannerOpen(b's', b'', [], {})
        self.assertEqual(keys_of(self.drain(c, sid, 500)), expected(0, ROWS))
        c.scannerClose(sid)
        c._trans.close()

    def test_2_pass_through_expiry_as_emulator(self):
        # an unsalted scanner whose backend scanner expired gives what the
        # emulator's own gives
        d = client(self.emu.port)
        p = client(self.proxy.port)
        did = d.scannerOpen(b'plain', b'', [], {})
        pid = p.scannerOpen(b'plain', b'', [], {})
        self.assertEqual(d.scannerGetList(did, 5), p.scannerGetList(pid, 5))
        time.sleep(2.5)
        for fn in ('scannerGetList', 'scannerGet', 'scannerClose'):
            args = (5,) if fn == 'scannerGetList' else ()
            with self.assertRaises(T.IllegalArgument) as want:
                getattr(d, fn)(did, *args)
            with self.assertRaises(T.IllegalArgument) as got:
                getattr(p, fn)(pid, *args)
            self.assertEqual(got.exception.message, want.exception.message)
        d._trans.close()
        p._trans.close()

    def test_3_backend_stops(self):
        # a hung emulator: an IOError after request_timeout_ms, not a hang
        c = client(self.proxy.port, timeout=30)
        sid = self.open_partly_read(c)
        os.kill(self.emu.proc.pid, signal.SIGSTOP)
        try:
            got, err, took = self.read_until_error(c, sid)
        finally:
            os.kill(self.emu.proc.pid, signal.SIGCONT)
        self.assertIsInstance(err, T.IOError)
        self.assertIn('timed out', err.message)
        # the bucket's own reason is the proxy's: named once, not twice
        self.assertEqual(err.message.count('hbase-salt-proxy:'), 1,
                         err.message)
        self.assertEqual(expected(20, ROWS)[:len(got)], got)
        self.assertLess(took, 1.5 + 2)
        c.scannerClose(sid)
        sid = c.scannerOpenWithStop(b's', key(7), key(1234), [], {})
        self.assertEqual(keys_of(self.drain(c, sid)), expected(7, 1234))
        c.scannerClose(sid)
        c._trans.close()

    def test_9_backend_killed_and_restarted(self):
        c = client(self.proxy.port, timeout=30)
        d = client(self.proxy.port, 'compact')
        # the second one fetches 94 rows a bucket, so has every row
        # buffered in the proxy by now: it may end, but only whole
        scans = [(c, self.open_partly_read(c), 20),
                 (d, self.open_partly_read(d, caching=1000, n=5), 5),
                 (c, self.open_partly_read(c, b'plain', 10, 20), 20)]
        time.sleep(0.3)
        self.emu.kill()
        errors = 0
        for x, sid, n in scans:
            got, err, took = self.read_until_error(x, sid)
            self.assertLess(took, 3)
            self.assertEqual(got, expected(n, ROWS)[:len(got)])
            if err is None:
                self.assertEqual(got, expected(n, ROWS),
                                 'a scan with its backend killed ended '
                                 'short without an error')
            else:
                self.assertIsInstance(err, T.IOError)
                self.assertIn('127.0.0.1:%d' % self.emu.port, err.message)
                self.assertEqual(err.message.count('hbase-salt-proxy:'), 1,
                                 err.message)
                errors += 1
        self.assertGreaterEqual(errors, 2)
        self.assertTrue(self.proxy.alive())
        for x, sid, _ in scans[:2]:
            x.scannerClose(sid)         # salted: closed here, best effort
            self.assertInvalid(x.scannerGet, sid)
        # pass-through: the close goes to the (dead) backend, as a direct
        # client's would; the proxy's id is gone all the same
        x, sid, _ = scans[2]
        with self.assertRaises(T.IOError):
            x.scannerClose(sid)
        self.assertInvalid(x.scannerGet, sid)
        self.assertInvalid(x.scannerClose, sid)
        with self.assertRaises(T.IOError):
            c.scannerOpen(b's', b'', [], {})
        self.emu.start()                                 # empty again
        end = time.time() + 5
        while True:
            try:
                load(c, b's', ROWS)
                break
            except T.IOError:
                if time.time() > end:
                    raise
                time.sleep(0.1)
        for x in (c, d):
            # a pooled connection that failed while the backend was down may
            # still answer one open with its connect error, canRetry true:
            # a client retries that (the rows must then come whole)
            end = time.time() + 5
            while True:
                try:
                    sid = x.scannerOpenWithScan(b's', T.TScan(caching=64), {})
                    break
                except T.IOError as e:
                    if not e.canRetry or time.time() > end:
                        raise
                    time.sleep(0.1)
            self.assertEqual(keys_of(self.drain(x, sid, 300)),
                             expected(0, ROWS))
            x.scannerClose(sid)
        c._trans.close()
        d._trans.close()


class MemoryTest(_Base):
    """RSS of the proxy over a long scan of a 16-bucket table."""

    @classmethod
    def load_all(cls):
        cls.rss_start = rss_kib(cls.proxy.proc.pid)
        cls.nrows = int(os.environ.get('SCAN_MEMORY_ROWS', '200000'))
        n = cls.nrows
        batch = 5000
        t0 = time.time()
        errors = []

        def work(part, parts):
            try:
                c = client(cls.proxy.port, accel=True, timeout=60)
                for lo in range(part * batch, n, parts * batch):
                    c.mutateRows(b'big', [T.BatchMutation(
                        row=b'm%08d' % i, mutations=[T.Mutation(
                            column=b'd:a', value=b'%064d' % i)])
                        for i in range(lo, min(n, lo + batch))], {})
                c._trans.close()
            except Exception as e:  # noqa: BLE001 - reported below
                errors.append(repr(e))
        threads = [threading.Thread(target=work, args=(i, 4))
                   for i in range(4)]
        for th in threads:
            th.start()
        for th in threads:
            th.join()
        assert not errors, errors
        cls.load_s = time.time() - t0

    def test_scan_rss_bounded(self):
        n = self.nrows
        pid = self.proxy.proc.pid
        c = client(self.proxy.port, accel=True, timeout=60)
        # warm up both workers' paths with a short scan
        sid = c.scannerOpenWithScan(b'big', T.TScan(caching=1000), {})
        self.assertEqual(len(c.scannerGetList(sid, 1000)), 1000)
        c.scannerClose(sid)
        base = rss_kib(pid)
        samples = [base]
        stop = threading.Event()

        def sample():
            while not stop.is_set():
                samples.append(rss_kib(pid))
                time.sleep(0.02)
        th = threading.Thread(target=sample)
        th.start()
        t0 = time.time()
        count = 0
        nxt = 0
        bad = None
        try:
            sid = c.scannerOpenWithScan(b'big', T.TScan(caching=1000), {})
            while True:
                rows = c.scannerGetList(sid, 1000)
                if not rows:
                    break
                for r in rows:
                    if bad is None and r.row != b'm%08d' % nxt:
                        bad = (nxt, r.row)
                    nxt += 1
                count += len(rows)
            c.scannerClose(sid)
        finally:
            stop.set()
            th.join()
        took = time.time() - t0
        peak = max(samples)
        print('\n  memory: %d rows over %d buckets loaded in %.1f s; scan '
              '%.1f s = %.0f rows/s; proxy VmRSS at start %.1f MiB, before '
              'the scan %.1f MiB, peak during it %.1f MiB, growth %.1f MiB '
              '(%d samples); emulator VmRSS %.1f MiB'
              % (n, BUCKETS, self.load_s, took, count / took,
                 self.rss_start / 1024.0, base / 1024.0, peak / 1024.0,
                 (peak - base) / 1024.0, len(samples),
                 rss_kib(self.emu.proc.pid) / 1024.0))
        self.assertIsNone(bad, 'out of order or missing row')
        self.assertEqual(count, n)
        if not UNDER_ASAN:
            self.assertLess(peak - base, 64 * 1024)
            self.assertLess(peak - self.rss_start, 64 * 1024)
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
