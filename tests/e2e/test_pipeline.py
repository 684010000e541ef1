"""Pipelining clients: calls sent without waiting for replies must take
effect in the order they were sent, as HBase applies them (its Thrift
servers take one call per connection at a time).  Differential: the same
pipelined sequence of writes, reads, deletes, increments, multi-row calls
and scanner calls goes through the proxy to one emulator and straight to a
reference emulator; every reply and the final contents must be the same,
and every salted row must sit at its salted key.

Two client libraries: Debian's python3-thrift (send_/recv_ of the
generated client) and npm's thrift package (node/pipeline.js, callbacks:
every call is written as it is made).

Covered: salted and pass-through tables, binary/compact x buffered/framed
clients, the default pool of 16 connections (where calls would overtake
each other), a first backend server that refuses connections (calls move
to the next one), and reloads between pipelined calls.

  /usr/bin/python3 tests/e2e/test_pipeline.py --proxy BUILD/daemon/hbase-salt-proxy \\
      --emu BUILD/tests/emu/hbase-emu --pydir BUILD/thrift/py \\
      [--backend binary-buffered] [--node-gen DIR --node-modules DIR \
      --node-client tests/e2e/node/pipeline.js] [unittest args]
"""

import argparse
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import test_methods as tm  # noqa: E402
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                '..', 'lib'))
import hsptest  # noqa: E402
from hsptest import can_connect, free_port, wait_for  # noqa: E402

ARGS = None

TABLES = {
    # salted: 16 one-byte buckets, and a delimiter hash part
    's16': 'buckets = 16\n',
    'sdel': 'buckets = 8\nsalt_format = hex\nsalt_separator = -\n'
            'hash_part = delimiter:#:1\n',
}
PASS = 'plain'          # no section: passes through unsalted
POLICY = {
    's16': tm.Salt(16, 'byte'),
    'sdel': tm.Salt(8, 'hex', b'-', delim=(b'#', 1)),
}
CLIENTS = [('binary', 'buffered'), ('binary', 'framed'),
           ('compact', 'buffered'), ('compact', 'framed')]
CHUNK = 200             # calls sent before the first reply is read
# both sides use the same table names: nothing to normalise
NO_TABLE = b'\x00no table\x00'
# --backend-kind real: one cluster (a JVM start costs ~30 s) serves every
# class, behind the proxy and as the reference, so the reference's tables
# carry this prefix; calls to the reference are renamed (ref_calls), and
# no reply of these calls names its table
REF_PREFIX = 'ref_'
REAL = None             # the shared hsptest.RealBackend


def create_real_tables(names):
    """The tables on real HBase, through Thrift2 createTable: a family
    keeps 3 versions as Thrift1's ColumnDescriptor (and so the emulator)
    does, and NEW_VERSION_BEHAVIOR is on.  Without it a delete masks a put
    of the same millisecond (HBase's classic semantics, HBASE-2256), and
    pipelined calls land in one: whether deleteAllRow then mutateRow keeps
    the cell would depend on the clock, not on the order of the calls this
    test is about.  With it HBase orders them by sequence id, as the
    emulator orders them by arrival."""
    th = hsptest.Thrift(ARGS.pydir)
    c = th.client2(REAL.port2, REAL.proto, REAL.transport, 120.0)
    try:
        for n in names:
            c.createTable(th.T2.TTableDescriptor(
                tableName=th.T2.TTableName(qualifier=n.encode()),
                columns=[th.T2.TColumnFamilyDescriptor(
                    name=f.encode(), maxVersions=3,
                    attributes={b'NEW_VERSION_BEHAVIOR': b'true'})
                    for f in tm.FAMILIES.split(',')]), None)
    finally:
        c.transport.close()


def ref_name(t):
    """The reference's name for table t (bytes or str)."""
    if REAL is None:
        return t
    if isinstance(t, bytes):
        return REF_PREFIX.encode() + t
    return REF_PREFIX + t


def ref_calls(calls):
    """calls as the reference gets them: every call here names its table
    first (scanner calls name a scanner id instead)."""
    names = set(t.encode() for t in list(TABLES) + [PASS])
    return [(name, (ref_name(args[0]),) + tuple(args[1:]))
            if args and isinstance(args[0], bytes) and args[0] in names
            else (name, args) for name, args in calls]


def M(col, val=None, delete=False):
    return tm.T.Mutation(isDelete=delete, column=col, value=val)


class Pipe(object):
    """A client that sends a list of calls without waiting, then reads
    every reply in order.  Each call is (name, args)."""

    def __init__(self, port, proto, transport):
        self.c = tm.client(port, proto, transport)

    def send(self, calls):
        for name, args in calls:
            getattr(self.c, 'send_' + name)(*args)

    def recv(self, calls):
        return [(name, tm.call(getattr(self.c, 'recv_' + name), NO_TABLE))
                for name, _ in calls]

    def run(self, calls):
        out = []
        for i in range(0, len(calls), CHUNK):
            part = calls[i:i + CHUNK]
            self.send(part)
            out += self.recv(part)
        return out

    def close(self):
        self.c._trans.close()


def row_calls(t, r, rng):
    """The per-row sequence of the issue, with a random extra step."""
    seq = [
        ('mutateRow', (t, r, [M(b'd:a', b'v1')], {})),
        ('getRow', (t, r, {})),
        ('mutateRow', (t, r, [M(b'd:a', b'v2'), M(b'e:b', b'x')], {})),
        ('get', (t, r, b'd:a', {})),
        ('deleteAllRow', (t, r, {})),
        ('getRow', (t, r, {})),
        ('atomicIncrement', (t, r, b'd:n', 5)),
        ('mutateRow', (t, r, [M(b'd:a', b'v3')], {})),
        ('getRowWithColumns', (t, r, [b'd:a', b'd:n'], {})),
    ]
    extra = rng.choice([
        ('atomicIncrement', (t, r, b'd:n', -2)),
        ('deleteAll', (t, r, b'd:a', {})),
        ('mutateRow', (t, r, [M(b'd:a', delete=True)], {})),
        ('mutateRowTs', (t, r, [M(b'e:b', b'old')], 7, {})),
        # real HBase stamps cells with its clock in milliseconds: two puts
        # of one cell in the same millisecond are one version, so how many
        # versions there are depends on the clock; only the newest is
        # asked of it
        ('getVer', (t, r, b'd:a',
                    1 if ARGS.backend_kind == 'real' else 3, {})),
    ])
    seq.insert(rng.randrange(2, len(seq) + 1), extra)
    return seq


def interleave(seqs, rng):
    """Merges per-row sequences keeping each one's order."""
    seqs = [list(s) for s in seqs]
    out = []
    while seqs:
        i = rng.randrange(len(seqs))
        out.append(seqs[i].pop(0))
        if not seqs[i]:
            seqs.pop(i)
    return out


def multi_calls(t, rows, rng):
    """Calls that touch many rows (and so many buckets) at once."""
    some = rng.sample(rows, min(12, len(rows)))
    return [
        ('mutateRows', (t, [tm.T.BatchMutation(row=r, mutations=[
            M(b'd:m', b'batch-' + r)]) for r in some], {})),
        ('getRows', (t, some + [b'absent-row'], {})),
        ('mutateRows', (t, [tm.T.BatchMutation(row=r, mutations=[
            M(b'd:m', delete=True)]) for r in some[::2]], {})),
        ('getRowsWithColumns', (t, some, [b'd:m', b'd:a'], {})),
    ]


def final_rows(c, t):
    """Every logical row of t through c: [(row, cols)]."""
    return tm.raw_scan(c, t)


class _Base(unittest.TestCase):
    backend = ('binary', 'buffered')
    servers_extra = ''      # prepended server (refusing), or ''
    pool = None             # pool_size, None: the default

    @classmethod
    def setUpClass(cls):
        global REAL
        cls.dir = tempfile.mkdtemp(prefix='hsp-pipe-')
        proto, transport = cls.backend
        tables = list(TABLES) + [PASS]
        os.makedirs(os.path.join(cls.dir, 'via'))
        os.makedirs(os.path.join(cls.dir, 'ref'))
        if ARGS.backend_kind == 'real':
            if REAL is None:
                t0 = time.time()
                REAL = hsptest.start_backend(
                    'real', ARGS.real_dir, proto=proto, transport=transport,
                    thrift2=True)
                create_real_tables([n for t in tables
                                    for n in (t, REF_PREFIX + t)])
                sys.stderr.write('real HBase ready in %.1f s\n'
                                 % (time.time() - t0))
            cls.emu = cls.ref = REAL
        else:
            cls.emu = tm.Emu(os.path.join(cls.dir, 'via'), proto, transport,
                             tables)
            cls.ref = tm.Emu(os.path.join(cls.dir, 'ref'), proto, transport,
                             tables)
        cls.port = free_port()
        cls.conf = os.path.join(cls.dir, 'proxy.conf')
        cls.write_conf()
        cls.log_path = os.path.join(cls.dir, 'proxy.log')
        cls.log = open(cls.log_path, 'wb')
        cls.proc = tm.subprocess.Popen(
            [ARGS.proxy, '-c', cls.conf, '--log-level', 'info'],
            stdout=cls.log, stderr=tm.subprocess.STDOUT)
        wait_for(lambda: can_connect(cls.port) or cls.proc.poll() is not None,
                 10, 'proxy listening')
        if cls.proc.poll() is not None:
            raise AssertionError('proxy exited at start; log in '
                                 + cls.log_path)

    @classmethod
    def write_conf(cls, request_timeout_ms=20000):
        proto, transport = cls.backend
        servers = cls.servers_extra + '127.0.0.1:%d' % cls.emu.port
        with open(cls.conf, 'w') as f:
            f.write('[proxy]\nlisten = 127.0.0.1:%d\nworkers = 2\n'
                    '[backend]\nservers = %s\nprotocol = %s\n'
                    'transport = %s\nrequest_timeout_ms = %d\n'
                    % (cls.port, servers, proto, transport,
                       request_timeout_ms))
            if cls.pool is not None:
                f.write('pool_size = %d\n' % cls.pool)
            for name, lines in sorted(TABLES.items()):
                f.write('[table:%s]\n%s' % (name, lines))

    @classmethod
    def tearDownClass(cls):
        cls.proc.send_signal(signal.SIGTERM)
        try:
            rc = cls.proc.wait(15)
        except tm.subprocess.TimeoutExpired:
            cls.proc.kill()
            rc = cls.proc.wait()
        cls.log.close()
        if REAL is None:
            cls.emu.close()
            cls.ref.close()
        if os.environ.get('HSP_KEEP_LOGS'):
            sys.stderr.write('logs kept in %s\n' % cls.dir)
        else:
            shutil.rmtree(cls.dir, ignore_errors=True)
        if rc != 0:
            raise AssertionError('proxy exited %r at SIGTERM' % rc)

    def tearDown(self):
        self.assertIsNone(self.proc.poll(), 'the proxy died')

    def assertSame(self, got, want, what):
        """Reply lists equal, naming the first call that differs."""
        self.assertEqual(len(got), len(want), what)
        bad = [i for i in range(len(want)) if got[i] != want[i]]
        if bad:
            i = bad[0]
            self.fail('%s: %d of %d replies differ; first at call %d %s:\n'
                      '  proxy:  %r\n  direct: %r'
                      % (what, len(bad), len(want), i, want[i][0], got[i][1],
                         want[i][1]))

    def check_state(self, tables, what):
        """Final contents equal, and every salted row at its salted key."""
        via = tm.client(self.port)
        ref = tm.client(self.ref.port, *self.backend)
        raw = tm.client(self.emu.port, *self.backend)
        try:
            for t in tables:
                want = final_rows(ref, ref_name(t))
                self.assertEqual(final_rows(via, t), want,
                                 '%s: final contents of %s' % (what, t))
                stored = sorted(r for r, _ in tm.raw_scan(raw, t))
                if t in POLICY:
                    expect = sorted(POLICY[t].physical(r) for r, _ in want)
                else:
                    expect = sorted(r for r, _ in want)
                self.assertEqual(stored, expect,
                                 '%s: physical keys of %s' % (what, t))
        finally:
            for c in (via, ref, raw):
                c._trans.close()

    def both(self, calls, proto, transport):
        """Runs calls pipelined through the proxy (the client speaking
        proto/transport) and straight to the reference (speaking what the
        emulators speak); returns (proxy replies, direct replies)."""
        via = Pipe(self.port, proto, transport)
        ref = Pipe(self.ref.port, *self.backend)
        try:
            return via.run(calls), ref.run(ref_calls(calls))
        finally:
            via.close()
            ref.close()


def keys(prefix, n):
    """Row keys: users with a delimiter, binary edges, sequential ids."""
    out = []
    for i in range(n):
        k = [b'%s-u%d#%03d' % (prefix, i % 7, i),
             b'%s\x00\xff%d' % (prefix, i),
             b'%s%06d' % (prefix, i)][i % 3]
        out.append(k)
    return out


class PipelineTest(_Base):
    """Default pool (16 connections per server per worker)."""

    def test_01_rows_in_order(self):
        """The issue's per-row sequence on many rows, all three kinds of
        table, every client protocol and transport."""
        rng = random.Random(11)
        for proto, transport in CLIENTS:
            what = 'pipelined %s/%s' % (proto, transport)
            prefix = ('%s%s' % (proto[0], transport[0])).encode()
            tables = list(TABLES) + [PASS]
            seqs = []
            for t in tables:
                tb = t.encode()
                seqs += [row_calls(tb, r, rng) for r in keys(prefix, 40)]
            calls = interleave(seqs, rng)
            got, want = self.both(calls, proto, transport)
            self.assertSame(got, want, what)
            self.check_state(tables, what)

    def test_02_multi_row_calls(self):
        """mutateRows / getRows spanning buckets between point calls."""
        rng = random.Random(12)
        for proto, transport in CLIENTS[:2]:
            what = 'multi-row %s/%s' % (proto, transport)
            prefix = ('m%s%s' % (proto[0], transport[0])).encode()
            calls = []
            for t in list(TABLES) + [PASS]:
                tb = t.encode()
                rows = keys(prefix, 30)
                seqs = [row_calls(tb, r, rng) for r in rows]
                calls += interleave(seqs + [multi_calls(tb, rows, rng)],
                                    rng)
            got, want = self.both(calls, proto, transport)
            self.assertSame(got, want, what)
            self.check_state(list(TABLES) + [PASS], what)

    def test_03_scanner_calls_in_order(self):
        """Scanner calls between pipelined writes: a scannerGetList sees
        exactly the rows written before it in the pipeline, and a write
        after it does not change what it returned."""
        for t in list(TABLES) + [PASS]:
            tb = t.encode()
            prefix = b'scan-'
            rows = [prefix + b'%03d' % i for i in range(50)]
            # the scanner ids differ (the proxy's are its own): each side
            # opens its scanner behind pipelined writes, reads the id, then
            # pipelines scanner calls between more writes
            via = Pipe(self.port, 'binary', 'buffered')
            ref = Pipe(self.ref.port, *self.backend)
            try:
                out = []
                for side in (via, ref):
                    calls = [('mutateRow', (tb, r, [M(b'd:a', b'x' + r)],
                                            {})) for r in rows[:25]]
                    calls.append(('scannerOpenWithPrefix',
                                  (tb, prefix, [], {})))
                    got = side.run(calls if side is via
                                   else ref_calls(calls))
                    side.sid = got[-1][1][1]
                    out.append(got[:-1])
                self.assertSame(out[0], out[1], 'writes before the open')
                out = []
                for side in (via, ref):
                    # HBase reads a region as of its scanner's open (the
                    # emulator reads live): writes after the open stay
                    # outside the scanned range
                    seq = [('mutateRow', (tb, b'other-' + r,
                                          [M(b'd:a', b'y' + r)], {}))
                           for r in rows[25:]]
                    seq += [('scannerGetList', (side.sid, 10)),
                            ('deleteAllRow', (tb, b'other-' + rows[30], {})),
                            ('getRow', (tb, b'other-' + rows[30], {})),
                            ('scannerGetList', (side.sid, 100)),
                            ('scannerGetList', (side.sid, 100)),
                            ('scannerClose', (side.sid,)),
                            ('getRow', (tb, rows[1], {})),
                            ('scannerGetList', (side.sid, 100)),
                            ('getRow', (tb, b'other-' + rows[31], {}))]
                    out.append(side.run(seq if side is via
                                        else ref_calls(seq)))
                self.assertSame(out[0], out[1], 'scanner calls on %s' % t)
            finally:
                via.close()
                ref.close()


def to_json(v):
    """A call argument as node/pipeline.js decodes it."""
    if isinstance(v, bytes):
        return {'b': v.hex()}
    if isinstance(v, (list, tuple)):
        return [to_json(x) for x in v]
    if isinstance(v, dict):
        return {'m': [[to_json(k), to_json(x)] for k, x in v.items()]}
    if hasattr(v, 'thrift_spec'):
        return {'s': type(v).__name__,
                'f': {sp[2]: to_json(getattr(v, sp[2]))
                      for sp in v.thrift_spec
                      if sp is not None and getattr(v, sp[2]) is not None}}
    return v


class NodePipelineTest(_Base):
    """The same sequences from a Node.js client: npm's thrift package
    with js:node generated code, calls made with callbacks, all in
    flight at once."""

    def node(self, calls, proto, transport):
        """Runs calls through the proxy and straight to the reference
        from node; returns its exit status and output."""
        node = shutil.which('node')
        if node is None or not os.path.isdir(ARGS.node_modules or ''):
            self.fail('node, or the npm thrift package (%s), is missing: '
                      'install nodejs and npm, then build again (bash '
                      '.ci/quickstart test does both)' % ARGS.node_modules)
        paths = []
        for what, cs in (('calls', calls), ('ref-calls', ref_calls(calls))):
            paths.append(os.path.join(self.dir, what + '.json'))
            with open(paths[-1], 'w') as f:
                json.dump([[name, to_json(list(args))]
                           for name, args in cs], f)
        env = dict(os.environ, NODE_PATH=ARGS.node_modules)
        r = subprocess.run(
            [node, ARGS.node_client, '--gen', ARGS.node_gen, '--calls',
             paths[0], '--ref-calls', paths[1],
             '--proxy', '%d:%s:%s' % (self.port, proto, transport),
             '--ref', '%d:%s:%s' % ((self.ref.port,) + self.backend)],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env,
            timeout=120)
        return r.returncode, r.stdout.decode(errors='replace')

    def test_01_rows_in_order(self):
        rng = random.Random(41)
        for proto, transport in CLIENTS:
            what = 'node %s/%s' % (proto, transport)
            prefix = ('n%s%s' % (proto[0], transport[0])).encode()
            calls = []
            for t in list(TABLES) + [PASS]:
                tb = t.encode()
                rows = keys(prefix, 30)
                seqs = [row_calls(tb, r, rng) for r in rows]
                calls += interleave(seqs + [multi_calls(tb, rows, rng)], rng)
            rc, out = self.node(calls, proto, transport)
            self.assertEqual(rc, 0, '%s:\n%s' % (what, out))
            self.assertIn('0 of %d replies differ' % len(calls), out)
            self.check_state(list(TABLES) + [PASS], what)


class FailoverPipelineTest(_Base):
    """A first server that refuses connections: calls queued behind a
    failed connect move to the next server, still in order."""

    @classmethod
    def setUpClass(cls):
        dead = free_port()      # nothing listens: connects are refused
        cls.servers_extra = '127.0.0.1:%d,' % dead
        super().setUpClass()

    def test_01_rows_in_order(self):
        rng = random.Random(21)
        for proto, transport in CLIENTS[:2]:
            what = 'failover %s/%s' % (proto, transport)
            prefix = ('f%s%s' % (proto[0], transport[0])).encode()
            seqs = []
            for t in list(TABLES) + [PASS]:
                seqs += [row_calls(t.encode(), r, rng)
                         for r in keys(prefix, 30)]
            got, want = self.both(interleave(seqs, rng), proto, transport)
            self.assertSame(got, want, what)
            self.check_state(list(TABLES) + [PASS], what)


class ReloadPipelineTest(_Base):
    """Reloads (each with a new connection pool) while pipelined calls
    are under way."""

    def test_01_reload_between_calls(self):
        rng = random.Random(31)
        tables = list(TABLES) + [PASS]
        seqs = []
        for t in tables:
            seqs += [row_calls(t.encode(), r, rng) for r in keys(b'rl', 40)]
        calls = interleave(seqs, rng)
        via = Pipe(self.port, 'binary', 'buffered')
        ref = Pipe(self.ref.port, *self.backend)
        got, want = [], []
        try:
            for n, i in enumerate(range(0, len(calls), 120)):
                a, b = calls[i:i + 60], calls[i + 60:i + 120]
                # a new pool (pool_size changes) arrives while the calls
                # of a are in flight; b follows without waiting
                via.send(a)
                self.__class__.pool = 4 + n % 3
                self.write_conf()
                self.proc.send_signal(signal.SIGHUP)
                time.sleep(0.05)
                via.send(b)
                got += via.recv(a + b)
                want += ref.run(ref_calls(a + b))
        finally:
            via.close()
            ref.close()
        self.assertSame(got, want, 'pipelined across reloads')
        self.check_state(tables, 'pipelined across reloads')
        with open(self.log_path, 'rb') as f:
            log = f.read()
        self.assertIn(b'reload: applied configuration generation', log)


def main():
    global ARGS
    ap = argparse.ArgumentParser()
    ap.add_argument('--proxy', required=True)
    ap.add_argument('--emu', required=True)
    ap.add_argument('--pydir', required=True)
    ap.add_argument('--backend', default='binary-buffered',
                    choices=sorted(tm.BACKENDS))
    ap.add_argument('--node-gen', help='thrift --gen js:node output')
    ap.add_argument('--node-modules', help='node_modules with thrift')
    ap.add_argument('--node-client', help='tests/e2e/node/pipeline.js')
    hsptest.add_backend_args(ap)
    ARGS, rest = ap.parse_known_args()
    tm.ARGS = ARGS
    hsptest.import_thrift(ARGS.pydir, tm)
    _Base.backend = tm.BACKENDS[ARGS.backend]
    if ARGS.backend_kind != 'real':
        unittest.main(argv=[sys.argv[0]] + rest, verbosity=2)
        return
    ARGS.real_dir = tempfile.mkdtemp(prefix='hsp-pipe-real-')
    hsptest.unittest_main_shared([sys.argv[0]] + rest, ARGS.real_dir,
                                 lambda: REAL)


if __name__ == '__main__':
    main()
