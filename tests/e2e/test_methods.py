"""Per-method behaviour of hbase-salt-proxy in front of hbase-emu (every
non-scan Thrift1 method), as a differential harness: the same operations run
(a) directly on the emulator against an UNSALTED table and (b) through the
proxy against a SALTED table holding the same data must give the client the
same answer (cells, order, exceptions, messages); only the table name (and
the emulator's per-table region id, a creation time) is normalised.  A
direct look at the emulator then checks every salted row sits at the
physical key computed here, independently of the proxy, with the system's
libxxhash (cross-checked against `hbase-salt-proxy --explain-key`).

One process covers one BACKEND protocol/transport (hbase-emu --compact
--framed, proxy [backend]); inside it every CLIENT variant runs: binary
strict / binary non-strict / compact, each buffered and framed.

  /usr/bin/python3 tests/e2e/test_methods.py --proxy BUILD/daemon/hbase-salt-proxy \\
      --emu BUILD/tests/emu/hbase-emu --pydir BUILD/thrift/py \\
      --backend binary-buffered [--spread] [unittest args]

--spread runs only the bucket-spread tests (100 000 keys).
HSP_KEEP_LOGS=1 keeps the temp dir (configs, logs).
"""

import argparse
import ctypes
import os
import random
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import unittest

# the harness helpers every end-to-end test shares
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                '..', 'lib'))
import hsptest  # noqa: E402
from hsptest import free_port  # noqa: E402

ARGS = None

Hbase = T = None
TSocket = TTransport = TBinaryProtocol = TCompactProtocol = None
TApplicationException = TMessageType = None

BACKENDS = {
    'binary-buffered': ('binary', 'buffered'),
    'binary-framed': ('binary', 'framed'),
    'compact-buffered': ('compact', 'buffered'),
    'compact-framed': ('compact', 'framed'),
}

# (protocol, transport, strict binary headers)
CLIENTS = [
    ('binary', 'buffered', True),
    ('binary', 'framed', True),
    ('binary', 'buffered', False),
    ('binary', 'framed', False),
    ('compact', 'buffered', True),
    ('compact', 'framed', True),
]

# salted table kinds: (config lines, python policy)
SALTED = {
    's16': ('buckets = 16\n', dict(buckets=16, fmt='byte')),
    'h300': ('buckets = 300\nsalt_format = hex\nsalt_separator = -\n',
             dict(buckets=300, fmt='hex', sep=b'-')),
    'dec': ('buckets = 100\nsalt_format = decimal\n'
            'hash_part = delimiter:#:1\n',
            dict(buckets=100, fmt='decimal', delim=(b'#', 1))),
    'len3': ('buckets = 1000\nhash_part = length:3\n',
             dict(buckets=1000, fmt='byte', length=3)),
}
SPREAD_TABLES = {
    'spread16': ('buckets = 16\n', dict(buckets=16, fmt='byte')),
    'spreaddelim': ('buckets = 16\nhash_part = delimiter:#:1\n',
                    dict(buckets=16, fmt='byte', delim=(b'#', 1))),
}
FAMILIES = 'd,e'


# ---- the salt mapping, computed here ------------------------------------

_xxh3 = None


def xxh3_64(data):
    global _xxh3
    if _xxh3 is None:
        lib = ctypes.CDLL('libxxhash.so.0')
        _xxh3 = lib.XXH3_64bits
        _xxh3.restype = ctypes.c_uint64
        _xxh3.argtypes = [ctypes.c_char_p, ctypes.c_size_t]
    return _xxh3(data, len(data))


class Salt(object):
    """Independent model of daemon/salt.h (whole / length:N /
    delimiter:SEP:K; byte / hex / decimal)."""

    def __init__(self, buckets, fmt='byte', sep=b'', length=None,
                 delim=None):
        self.buckets, self.fmt, self.sep = buckets, fmt, sep
        self.length, self.delim = length, delim
        if fmt == 'byte':
            self.width = 1 if buckets <= 256 else 2
        elif fmt == 'hex':
            self.width = max(1, len('%x' % (buckets - 1)))
        else:
            self.width = max(1, len('%d' % (buckets - 1)))

    def hashed(self, key):
        if self.length is not None:
            return key[:self.length]
        if self.delim is not None:
            sep, k = self.delim
            pos, n = 0, 0
            while True:
                i = key.find(sep, pos)
                if i < 0:
                    return key
                n += 1
                if n == k:
                    return key[:i]
                pos = i + len(sep)
        return key

    def bucket(self, key):
        return xxh3_64(self.hashed(key)) % self.buckets

    def prefix(self, bucket):
        if self.fmt == 'byte':
            salt = bucket.to_bytes(self.width, 'big')
        elif self.fmt == 'hex':
            salt = ('%0*x' % (self.width, bucket)).encode()
        else:
            salt = ('%0*d' % (self.width, bucket)).encode()
        return salt + self.sep

    def physical(self, key):
        return self.prefix(self.bucket(key)) + key


def explain_key(conf, table, key):
    """(bucket, physical key) as `hbase-salt-proxy --explain-key` says."""
    esc = ''.join(chr(b) if chr(b).isascii() and chr(b).isalnum()
                  else '\\x%02x' % b for b in key)
    out = subprocess.run([ARGS.proxy, '--explain-key', table, esc, '-c', conf],
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                         check=True).stdout.decode()
    bucket = int(re.search(r'^bucket:\s+(\d+) of', out, re.M).group(1))
    phys = bytes.fromhex(re.search(r'^physical \(hex\):\s*([0-9a-f]*)$',
                                   out, re.M).group(1))
    return bucket, phys


# ---- processes ----------------------------------------------------------

class Emu(hsptest.Emu):
    def __init__(self, workdir, proto, transport, tables):
        args = []
        if proto == 'compact':
            args.append('--compact')
        if transport == 'framed':
            args.append('--framed')
        for t in tables:
            args += ['--create-table', '%s:%s' % (t, FAMILIES)]
        super().__init__(ARGS.emu, workdir, args, log_mode='wb')


class Proxy(hsptest.Proxy):
    def __init__(self, workdir, backend_port, proto, transport, tables):
        self.port = free_port()
        conf = ('[proxy]\nlisten = 127.0.0.1:%d\nworkers = 2\n'
                '[backend]\nservers = 127.0.0.1:%d\nprotocol = %s\n'
                'transport = %s\nrequest_timeout_ms = 20000\n'
                'pool_size = 2\n' % (self.port, backend_port, proto,
                                     transport))
        for name, lines in sorted(tables.items()):
            conf += '[table:%s]\n%s' % (name, lines)
        super().__init__(ARGS.proxy, workdir, conf, [self.port], timeout=10)


def client(port, proto='binary', transport='buffered', strict=True,
           timeout=30.0):
    return hsptest.client(port, proto, transport, timeout, strict)


# ---- results, normalised --------------------------------------------------

NOW_MS = 10 ** 12   # explicit timestamps in the tests are far below this
REGION_ID = re.compile(r'(,[^,]*,)\d{13}')
# real HBase: a region's encoded name (an MD5 in hex) in messages, and the
# Java stack trace after a message's first line, which varies with the JIT
# (reflection accessors) and is not the proxy's to change
REGION_ENC = re.compile(r'\.[0-9a-f]{32}\.')
JAVA_TRACE = re.compile(r'\n\tat .*', re.S)


def norm(v, table):
    """Plain, comparable form of a reply; the table name becomes <T>."""
    tb = table.encode() if isinstance(table, str) else table
    if isinstance(v, bytes):
        return v.replace(tb, b'<T>')
    if isinstance(v, str):
        v = JAVA_TRACE.sub('', REGION_ENC.sub('.<ENC>.', v))
        return REGION_ID.sub(r'\1<ID>', v.replace(tb.decode('latin-1'),
                                                   '<T>'))
    if isinstance(v, (list, tuple)):
        return [norm(x, table) for x in v]
    if isinstance(v, dict):
        # a map: its order on the wire means nothing (the emulator's
        # admin maps come in hash order)
        return sorted(('KV', norm(k, table), norm(x, table))
                      for k, x in v.items())
    if isinstance(v, T.TCell):
        ts = v.timestamp
        if ts is not None and ts >= NOW_MS:
            ts = 'NOW'
        return ('TCell', norm(v.value, table), ts)
    if isinstance(v, TApplicationException):
        return ('TApplicationException', v.type, norm(v.message, table))
    if hasattr(v, 'thrift_spec'):
        fields = [(s[2], norm(getattr(v, s[2]), table))
                  for s in v.thrift_spec if s is not None]
        return (type(v).__name__, fields)
    return v


def call(fn, table):
    """('ok', result) or ('exc', exception), normalised.  A broken
    connection is no answer: it propagates."""
    try:
        return ('ok', norm(fn(), table))
    except (T.IOError, T.IllegalArgument, T.AlreadyExists,
            TApplicationException) as e:
        return ('exc', norm(e, table))


def raw_scan(c, table):
    """Every row of a table as [(row, [(col, value, ts)])], read directly."""
    if isinstance(table, str):
        table = table.encode()
    sid = c.scannerOpenWithScan(table, T.TScan(), {})
    rows = []
    while True:
        batch = c.scannerGetList(sid, 5000)
        if not batch:
            break
        for r in batch:
            cols = sorted((k, x.value, 'NOW' if x.timestamp >= NOW_MS
                           else x.timestamp) for k, x in r.columns.items())
            rows.append((r.row, cols))
    c.scannerClose(sid)
    return rows


# ---- the operation sequence ---------------------------------------------

KEYS = [b'user42', b'a', b'ab', b'abc', b'abcd', b'u1#x', b'u1#y', b'u1#',
        b'u2#a#b', b'#lead', b'zz\x00\xff', b'\x00', b'\xff\xff\xff',
        b'k' * 300, b'row-\x0c', b'0b4-user', b'\x0cuser42']
MISSING = b'no-such-row'


def M(col, val=None, delete=False):
    return T.Mutation(isDelete=delete, column=col, value=val)


def sequence(c, t):
    """Runs every non-scan data method (and the per-table admin calls) on
    table t; returns the list of (label, normalised answer)."""
    out = []

    def rec(label, fn):
        out.append((label, call(fn, t)))

    tb = t.encode()
    keys = KEYS
    # writes
    for k in keys:
        rec('mutateRow', lambda: c.mutateRow(
            tb, k, [M(b'd:a', b'A' + k), M(b'e:q', b'Q'), M(b'd:gone', b'g')],
            {}))
    for ts in (100, 200, 300):
        for k in keys[::2]:
            rec('mutateRowTs', lambda: c.mutateRowTs(
                tb, k, [M(b'd:v', b'v%d' % ts)], ts, {}))
    rec('mutateRows', lambda: c.mutateRows(
        tb, [T.BatchMutation(row=k, mutations=[M(b'd:b', b'B' + k),
                                               M(b'd:gone', delete=True)])
             for k in keys[1::2]], {}))
    rec('mutateRowsTs', lambda: c.mutateRowsTs(
        tb, [T.BatchMutation(row=k, mutations=[M(b'd:v', b'w150')])
             for k in keys[1::3]], 150, {}))
    rec('mutateRow-delete', lambda: c.mutateRow(
        tb, keys[0], [M(b'e:q', delete=True), M(b'd:new', b'n')], {}))
    rec('mutateRow-noqual', lambda: c.mutateRow(
        tb, keys[1], [M(b'd', b'ignored')], {}))
    # point reads
    for k in keys + [MISSING]:
        rec('get', lambda: c.get(tb, k, b'd:a', {}))
        rec('get-family', lambda: c.get(tb, k, b'd', {}))
        rec('getVer', lambda: c.getVer(tb, k, b'd:v', 5, {}))
        rec('getVer-1', lambda: c.getVer(tb, k, b'd:v', 1, {}))
        rec('getVerTs', lambda: c.getVerTs(tb, k, b'd:v', 250, 5, {}))
        rec('getRow', lambda: c.getRow(tb, k, {}))
        rec('getRowWithColumns', lambda: c.getRowWithColumns(
            tb, k, [b'd:a', b'e'], {}))
        rec('getRowTs', lambda: c.getRowTs(tb, k, 250, {}))
        rec('getRowWithColumnsTs', lambda: c.getRowWithColumnsTs(
            tb, k, [b'd:v'], 250, {}))
    # multi-row reads: shuffled, with a missing row and a duplicate
    rows = list(keys) + [MISSING, keys[3]]
    random.Random(7).shuffle(rows)
    rec('getRows', lambda: c.getRows(tb, rows, {}))
    rec('getRows-rev', lambda: c.getRows(tb, rows[::-1], {}))
    rec('getRows-empty-list', lambda: c.getRows(tb, [], {}))
    rec('getRows-missing', lambda: c.getRows(tb, [MISSING], {}))
    rec('getRowsWithColumns', lambda: c.getRowsWithColumns(
        tb, rows, [b'd:a', b'd:v'], {}))
    rec('getRowsTs', lambda: c.getRowsTs(tb, rows, 250, {}))
    rec('getRowsWithColumnsTs', lambda: c.getRowsWithColumnsTs(
        tb, rows, [b'd:v'], 160, {}))
    # counters, append, checkAndPut
    for k in keys[:6]:
        rec('atomicIncrement', lambda: c.atomicIncrement(tb, k, b'd:cnt', 5))
        rec('atomicIncrement-neg', lambda: c.atomicIncrement(
            tb, k, b'd:cnt', -2))
    rec('atomicIncrement-notlong', lambda: c.atomicIncrement(
        tb, keys[0], b'd:a', 1))
    for k in keys[3:9]:
        rec('increment', lambda: c.increment(T.TIncrement(
            table=tb, row=k, column=b'd:inc', ammount=3)))
    rec('incrementRows', lambda: c.incrementRows(
        [T.TIncrement(table=tb, row=k, column=b'd:inc', ammount=i + 1)
         for i, k in enumerate(keys[::3])]))
    for k in keys[5:10]:
        rec('append', lambda: c.append(T.TAppend(
            table=tb, row=k, columns=[b'd:ap', b'e:ap2'],
            values=[b'x', b'yy'])))
        rec('append-again', lambda: c.append(T.TAppend(
            table=tb, row=k, columns=[b'd:ap'], values=[b'z'])))
    for k in keys[:8]:
        rec('checkAndPut-true', lambda: c.checkAndPut(
            tb, k, b'd:a', b'A' + k, M(b'd:cp', b'yes'), {}))
        rec('checkAndPut-false', lambda: c.checkAndPut(
            tb, k, b'd:a', b'wrong', M(b'd:cp2', b'no'), {}))
        rec('checkAndPut-absent', lambda: c.checkAndPut(
            tb, k, b'd:none', None, M(b'd:cp3', b'abs'), {}))
    rec('checkAndPut-missing-row', lambda: c.checkAndPut(
        tb, MISSING, b'd:a', b'x', M(b'd:cp', b'yes'), {}))
    # deletes
    rec('deleteAll', lambda: c.deleteAll(tb, keys[1], b'd:b', {}))
    rec('deleteAll-family', lambda: c.deleteAll(tb, keys[7], b'e', {}))
    rec('deleteAllTs', lambda: c.deleteAllTs(tb, keys[2], b'd:v', 200, {}))
    rec('deleteAllRow', lambda: c.deleteAllRow(tb, keys[3], {}))
    rec('deleteAllRowTs', lambda: c.deleteAllRowTs(tb, keys[4], 150, {}))
    rec('deleteAllRow-missing', lambda: c.deleteAllRow(tb, MISSING, {}))
    for k in keys[1:5]:
        rec('getRow-after-delete', lambda: c.getRow(tb, k, {}))
        rec('getVer-after-delete', lambda: c.getVer(tb, k, b'd:v', 5, {}))
    # errors, which must pass through unchanged
    k = keys[0]
    rec('mutateRow-nofam', lambda: c.mutateRow(
        tb, k, [M(b'nofam:x', b'1')], {}))
    rec('mutateRowTs-nofam', lambda: c.mutateRowTs(
        tb, k, [M(b'nofam:x', b'1')], 5, {}))
    rec('mutateRows-noqual', lambda: c.mutateRows(
        tb, [T.BatchMutation(row=k, mutations=[M(b'd', b'1')])], {}))
    rec('mutateRowsTs-nofam', lambda: c.mutateRowsTs(
        tb, [T.BatchMutation(row=k, mutations=[M(b'nofam:x', b'1')])], 5,
        {}))
    rec('get-nofam', lambda: c.get(tb, k, b'nofam:x', {}))
    rec('getVer-nofam', lambda: c.getVer(tb, k, b'nofam:x', 2, {}))
    rec('getRowWithColumns-nofam', lambda: c.getRowWithColumns(
        tb, k, [b'nofam:x'], {}))
    rec('getRowsWithColumns-nofam', lambda: c.getRowsWithColumns(
        tb, [k, keys[1]], [b'nofam'], {}))
    rec('atomicIncrement-nofam', lambda: c.atomicIncrement(
        tb, k, b'nofam:x', 1))
    rec('increment-nofam', lambda: c.increment(T.TIncrement(
        table=tb, row=k, column=b'nofam:x', ammount=1)))
    rec('append-nofam', lambda: c.append(T.TAppend(
        table=tb, row=k, columns=[b'nofam:x'], values=[b'1'])))
    rec('append-mismatch', lambda: c.append(T.TAppend(
        table=tb, row=k, columns=[b'd:x', b'd:y'], values=[b'1'])))
    rec('checkAndPut-nofam', lambda: c.checkAndPut(
        tb, k, b'nofam:x', b'1', M(b'd:x', b'1'), {}))
    rec('deleteAll-nofam', lambda: c.deleteAll(tb, k, b'nofam:x', {}))
    # per-table admin calls
    rec('isTableEnabled', lambda: c.isTableEnabled(tb))
    rec('compact', lambda: c.compact(tb))
    rec('majorCompact', lambda: c.majorCompact(tb))
    rec('getColumnDescriptors', lambda: c.getColumnDescriptors(tb))
    rec('disableTable', lambda: c.disableTable(tb))
    rec('isTableEnabled-off', lambda: c.isTableEnabled(tb))
    rec('getRow-disabled', lambda: c.getRow(tb, k, {}))
    rec('getRows-disabled', lambda: c.getRows(tb, [k], {}))
    rec('mutateRow-disabled', lambda: c.mutateRow(
        tb, k, [M(b'd:z', b'1')], {}))
    rec('increment-disabled', lambda: c.increment(T.TIncrement(
        table=tb, row=k, column=b'd:inc', ammount=1)))
    rec('disableTable-again', lambda: c.disableTable(tb))
    rec('enableTable', lambda: c.enableTable(tb))
    rec('enableTable-again', lambda: c.enableTable(tb))
    # final state
    rec('getRows-final', lambda: c.getRows(tb, list(keys) + [MISSING], {}))
    return out


def admin_sequence(c, name):
    """Table life cycle on a fresh name."""
    out = []

    def rec(label, fn):
        out.append((label, call(fn, name)))

    nb = name.encode()
    fams = [T.ColumnDescriptor(name=b'd:', maxVersions=2),
            T.ColumnDescriptor(name=b'e', timeToLive=0)]
    rec('createTable', lambda: c.createTable(nb, fams))
    rec('createTable-exists', lambda: c.createTable(nb, fams))
    rec('getColumnDescriptors', lambda: c.getColumnDescriptors(nb))
    rec('isTableEnabled', lambda: c.isTableEnabled(nb))
    rec('mutateRow', lambda: c.mutateRow(nb, b'r1', [M(b'd:a', b'1')], {}))
    rec('getRow', lambda: c.getRow(nb, b'r1', {}))
    rec('getVer', lambda: c.getVer(nb, b'r1', b'd:a', 5, {}))
    rec('deleteTable-enabled', lambda: c.deleteTable(nb))
    rec('disableTable', lambda: c.disableTable(nb))
    rec('deleteTable', lambda: c.deleteTable(nb))
    rec('deleteTable-again', lambda: c.deleteTable(nb))
    rec('getRow-deleted', lambda: c.getRow(nb, b'r1', {}))
    rec('isTableEnabled-deleted', lambda: c.isTableEnabled(nb))
    rec('enableTable-deleted', lambda: c.enableTable(nb))
    rec('disableTable-deleted', lambda: c.disableTable(nb))
    rec('compact-deleted', lambda: c.compact(nb))
    rec('majorCompact-deleted', lambda: c.majorCompact(nb))
    rec('getColumnDescriptors-deleted', lambda: c.getColumnDescriptors(nb))
    rec('getTableRegions-deleted', lambda: c.getTableRegions(nb))
    rec('createTable-nofams', lambda: c.createTable(nb, []))
    rec('deleteTable-nofams', lambda: c.deleteTable(nb))
    return out


def raw_call(prot, name, args, seqid):
    prot.writeMessageBegin(name, TMessageType.CALL, seqid)
    args.write(prot)
    prot.writeMessageEnd()
    prot.trans.flush()


def raw_reply(prot, result_cls):
    """(name, type, seqid, decoded) of one reply."""
    name, mtype, seqid = prot.readMessageBegin()
    if mtype == TMessageType.EXCEPTION:
        x = TApplicationException()
        x.read(prot)
    else:
        x = result_cls()
        x.read(prot)
    prot.readMessageEnd()
    return name, mtype, seqid, x


class NoArgs(object):
    """An empty argument struct, for a method name nobody knows."""

    def write(self, prot):
        prot.writeStructBegin('x_args')
        prot.writeFieldStop()
        prot.writeStructEnd()


class _Base(unittest.TestCase):
    backend = None       # ('binary', 'buffered')
    extra_tables = {}

    @classmethod
    def salted_tables(cls):
        tables = {}
        for v in range(len(CLIENTS)):
            for kind, (lines, _) in SALTED.items():
                tables['m%d_%s' % (v, kind)] = lines
            tables['adm%d_salted' % v] = SALTED['h300'][0]
            tables['raw%d_s16' % v] = SALTED['s16'][0]
            tables['seq%d_s16' % v] = SALTED['s16'][0]
        tables.update(cls.extra_tables)
        return tables

    @classmethod
    def emu_tables(cls):
        names = []
        for v in range(len(CLIENTS)):
            for kind in list(SALTED) + ['plain']:
                names += ['m%d_%s' % (v, kind), 'm%d_%s_ref' % (v, kind)]
            names += ['raw%d_s16' % v, 'seq%d_s16' % v]
        names += list(cls.extra_tables)
        return names

    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix='hsp-e2e-methods-')
        proto, transport = cls.backend
        if ARGS.backend_kind == 'real':
            cls.emu = hsptest.start_backend(
                'real', cls.dir, proto=proto, transport=transport,
                tables={t: FAMILIES.split(',') for t in cls.emu_tables()},
                thrift=hsptest.Thrift(ARGS.pydir))
        else:
            cls.emu = Emu(cls.dir, proto, transport, cls.emu_tables())
        try:
            cls.proxy = Proxy(cls.dir, cls.emu.port, proto, transport,
                              cls.salted_tables())
        except Exception:
            cls.emu.close()
            raise

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
        self.assertTrue(self.emu.alive(), 'the emulator died; log in '
                        + self.emu.log_path)

    def direct(self):
        """A client on the emulator, in the backend's protocol."""
        return client(self.emu.port, *self.backend)

    def via(self, v):
        proto, tr, strict = CLIENTS[v]
        return client(self.proxy.port, proto, tr, strict)

    def assertSameAnswers(self, got, want, what):
        self.assertEqual(len(got), len(want), what)
        for i, ((lg, g), (lw, w)) in enumerate(zip(got, want)):
            self.assertEqual(lg, lw)
            if g != w:
                self.fail('%s: step %d %s differs\n through proxy: %r\n'
                          ' direct:        %r' % (what, i, lg, g, w))


class MethodsTest(_Base):
    def test_01_explain_key_agrees(self):
        """The mapping computed here is the proxy's (all salted kinds)."""
        for kind, (_, pol) in SALTED.items():
            salt = Salt(**pol)
            for k in KEYS + [b'u1#zzz', b'longer-key-%d' % len(kind)]:
                b, phys = explain_key(self.proxy.conf, 'm0_' + kind, k)
                self.assertEqual((b, phys), (salt.bucket(k), salt.physical(k)),
                                 (kind, k))

    def _differential(self, v, kind):
        c = self.via(v)
        d = self.direct()
        try:
            t = 'm%d_%s' % (v, kind)
            got = sequence(c, t)
            want = sequence(d, t + '_ref')
            self.assertSameAnswers(got, want, '%s client %r' % (t, CLIENTS[v]))
            ref = raw_scan(d, t + '_ref')
            stored = raw_scan(d, t)
        finally:
            c._trans.close()
            d._trans.close()
        if kind == 'plain':
            self.assertEqual(stored, ref, 'unsalted table stored differently')
            return
        salt = Salt(**SALTED[kind][1])
        expect = sorted((salt.physical(row), cols) for row, cols in ref)
        # exactly the expected physical keys, and nothing else
        self.assertEqual([r for r, _ in stored], [r for r, _ in expect],
                         '%s: physical keys on the emulator' % t)
        self.assertEqual(stored, expect, '%s: cells on the emulator' % t)

    def test_02_methods_differential(self):
        for v in range(len(CLIENTS)):
            for kind in list(SALTED) + ['plain']:
                with self.subTest(client=CLIENTS[v], table=kind):
                    self._differential(v, kind)

    def test_03_admin_differential(self):
        for v in range(len(CLIENTS)):
            with self.subTest(client=CLIENTS[v]):
                c = self.via(v)
                d = self.direct()
                # life cycle: an unconfigured name, and a configured one
                got = admin_sequence(c, 'adm%d_plain' % v)
                want = admin_sequence(d, 'adm%d_plain_ref' % v)
                self.assertSameAnswers(got, want, 'admin unsalted')
                got = admin_sequence(c, 'adm%d_salted' % v)
                want = admin_sequence(d, 'adm%d_salted_ref' % v)
                self.assertSameAnswers(got, want, 'admin salted')
                # same moment, same table: proxy and direct agree exactly
                ace = T.TAccessControlEntity(username='bob', scope=0,
                                             actions='RW',
                                             tableName=b'm0_s16')
                ns = T.TAccessControlEntity(username='bob', scope=1,
                                            actions='R', nsName='default')
                same = [
                    ('getTableNames', lambda x: x.getTableNames()),
                    ('getTableNamesWithIsTableEnabled',
                     lambda x: x.getTableNamesWithIsTableEnabled()),
                    ('getThriftServerType',
                     lambda x: x.getThriftServerType()),
                    ('getClusterId', lambda x: x.getClusterId()),
                    ('getTableRegions-salted',
                     lambda x: x.getTableRegions(b'm%d_s16' % v)),
                    ('getTableRegions-plain',
                     lambda x: x.getTableRegions(b'm%d_plain' % v)),
                    ('getTableRegions-missing',
                     lambda x: x.getTableRegions(b'nope')),
                    ('getRegionInfo-salted',
                     lambda x: x.getRegionInfo(b'm%d_s16,,99999999999999'
                                               % v)),
                    ('getRegionInfo-row',
                     lambda x: x.getRegionInfo(b'm%d_s16,user42,9999' % v)),
                    ('getRegionInfo-bad', lambda x: x.getRegionInfo(b'nope')),
                    ('getRegionInfo-empty', lambda x: x.getRegionInfo(b'')),
                    ('getColumnDescriptors-salted',
                     lambda x: x.getColumnDescriptors(b'm%d_s16' % v)),
                    ('getColumnDescriptors-missing',
                     lambda x: x.getColumnDescriptors(b'nope')),
                    ('isTableEnabled-missing',
                     lambda x: x.isTableEnabled(b'nope')),
                    ('compact-region',
                     lambda x: x.compact(b'm%d_s16,,1' % v)),
                    ('grant', lambda x: x.grant(ace)),
                    ('revoke', lambda x: x.revoke(ace)),
                    ('grant-ns', lambda x: x.grant(ns)),
                    ('revoke-ns', lambda x: x.revoke(ns)),
                ]
                for label, fn in same:
                    g = call(lambda: fn(c), 'no-table-to-normalise')
                    w = call(lambda: fn(d), 'no-table-to-normalise')
                    self.assertEqual(g, w, label)
                c._trans.close()
                d._trans.close()

    def test_04_unknown_method(self):
        d = self.direct()
        want = None
        for label, fn in (('direct', None),):
            raw_call(d._prot, 'noSuchMethod', NoArgs(), 77)
            want = raw_reply(d._prot, None)
        d._trans.close()
        self.assertEqual(want[:3], ('noSuchMethod', TMessageType.EXCEPTION,
                                    77))
        for v in range(len(CLIENTS)):
            with self.subTest(client=CLIENTS[v]):
                c = self.via(v)
                for name in ('noSuchMethod', 'getRowOrBefore'):
                    raw_call(c._prot, name, NoArgs(), 77)
                    got = raw_reply(c._prot, None)
                    self.assertEqual(got[:3], (name, TMessageType.EXCEPTION,
                                               77))
                    self.assertEqual(
                        (got[3].type, got[3].message),
                        (want[3].type,
                         want[3].message.replace('noSuchMethod', name)))
                # the connection goes on
                self.assertEqual(c.getThriftServerType(),
                                 T.TThriftServerType.ONE)
                c._trans.close()

    def test_05_rows_on_the_emulator(self):
        """Each row at its salted key in its bucket, nowhere else."""
        d = self.direct()
        for v in range(len(CLIENTS)):
            c = self.via(v)
            t = 'seq%d_s16' % v
            salt = Salt(**SALTED['s16'][1])
            keys = [b'k%05d' % i for i in range(300)] + KEYS
            c.mutateRows(t.encode(), [T.BatchMutation(
                row=k, mutations=[M(b'd:a', k)]) for k in keys], {})
            stored = raw_scan(d, t)
            self.assertEqual([r for r, _ in stored],
                             sorted(salt.physical(k) for k in keys))
            for phys, cols in stored:
                bucket = phys[0]
                logical = phys[1:]
                self.assertLess(bucket, 16)
                self.assertEqual(bucket, salt.bucket(logical))
                self.assertEqual(cols, [(b'd:a', logical, 'NOW')])
            # and through the proxy every row comes back unsalted, in order
            back = c.getRows(t.encode(), keys[::-1], {})
            self.assertEqual([r.row for r in back], keys[::-1])
            self.assertEqual([r.columns[b'd:a'].value for r in back],
                             keys[::-1])
            # incrementRows: each TIncrement follows the table it names
            incs = [T.TIncrement(table=b'm%d_s16' % v, row=b'inc1',
                                 column=b'd:n', ammount=1),
                    T.TIncrement(table=b'm%d_h300' % v, row=b'inc1',
                                 column=b'd:n', ammount=2),
                    T.TIncrement(table=b'm%d_plain' % v, row=b'inc1',
                                 column=b'd:n', ammount=3),
                    T.TIncrement(table=b'm%d_s16' % v, row=b'inc2',
                                 column=b'd:n', ammount=4)]
            c.incrementRows(incs)
            h300 = Salt(**SALTED['h300'][1])
            for tb, phys, n in (
                    (b'm%d_s16' % v, salt.physical(b'inc1'), 1),
                    (b'm%d_h300' % v, h300.physical(b'inc1'), 2),
                    (b'm%d_plain' % v, b'inc1', 3),
                    (b'm%d_s16' % v, salt.physical(b'inc2'), 4)):
                cells = d.get(tb, phys, b'd:n', {})
                self.assertEqual([x.value for x in cells],
                                 [struct.pack('>q', n)], (tb, phys))
            for tb in (b'm%d_s16' % v, b'm%d_h300' % v):
                self.assertEqual(d.getRow(tb, b'inc1', {}), [])
            c._trans.close()
        d._trans.close()

    def test_06_rows_written_around_the_proxy(self):
        """Rows stored without a valid salt, or in the wrong bucket."""
        salt = Salt(**SALTED['s16'][1])
        d = self.direct()
        for v in range(len(CLIENTS)):
            t = ('raw%d_s16' % v).encode()
            good = b'user42'
            wrong_bucket = bytes([(salt.bucket(good) + 1) % 16]) + good
            raw = [b'nosalt-row', wrong_bucket, b'\x0f', b'\x10abc',
                   b'\xff' * 3, good]
            for r in raw:
                d.mutateRow(t, r, [M(b'd:a', b'raw:' + r)], {})
            # the physical row of 'good' written by hand is valid
            d.mutateRow(t, salt.physical(good), [M(b'd:a', b'hand')], {})
            c = self.via(v)
            # raw holds 'good' too: asked twice, found twice, only at its
            # physical key (the one the proxy asks for)
            got = c.getRows(t, raw + [good], {})
            self.assertEqual([(r.row, r.columns[b'd:a'].value) for r in got],
                             [(good, b'hand'), (good, b'hand')])
            got = c.getRowsWithColumnsTs(t, raw[:-1], [b'd:a'], 2 ** 62, {})
            self.assertEqual(got, [])
            # the raw rows are untouched, nothing else appeared
            stored = raw_scan(d, t)
            self.assertEqual(sorted(r for r, _ in stored),
                             sorted(raw + [salt.physical(good)]))
            # the connection still works
            self.assertEqual(c.getRow(t, good, {})[0].row, good)
            c._trans.close()
        d._trans.close()

    def _empty_row(self):
        m = [M(b'd:a', b'1')]
        calls = [
            ('get', lambda c, t, r: c.get(t, r, b'd:a', {})),
            ('getVer', lambda c, t, r: c.getVer(t, r, b'd:a', 2, {})),
            ('getVerTs', lambda c, t, r: c.getVerTs(t, r, b'd:a', 9, 2, {})),
            ('getRow', lambda c, t, r: c.getRow(t, r, {})),
            ('getRowWithColumns', lambda c, t, r: c.getRowWithColumns(
                t, r, [b'd:a'], {})),
            ('getRowTs', lambda c, t, r: c.getRowTs(t, r, 9, {})),
            ('getRowWithColumnsTs', lambda c, t, r: c.getRowWithColumnsTs(
                t, r, [b'd:a'], 9, {})),
            ('getRows', lambda c, t, r: c.getRows(t, [b'x', r], {})),
            ('getRowsWithColumns', lambda c, t, r: c.getRowsWithColumns(
                t, [r], [b'd:a'], {})),
            ('getRowsTs', lambda c, t, r: c.getRowsTs(t, [r, b'x'], 9, {})),
            ('getRowsWithColumnsTs', lambda c, t, r: c.getRowsWithColumnsTs(
                t, [r], [b'd:a'], 9, {})),
            ('mutateRow', lambda c, t, r: c.mutateRow(t, r, m, {})),
            ('mutateRowTs', lambda c, t, r: c.mutateRowTs(t, r, m, 9, {})),
            ('mutateRows', lambda c, t, r: c.mutateRows(
                t, [T.BatchMutation(row=b'x', mutations=m),
                    T.BatchMutation(row=r, mutations=m)], {})),
            ('mutateRowsTs', lambda c, t, r: c.mutateRowsTs(
                t, [T.BatchMutation(row=r, mutations=m)], 9, {})),
            ('atomicIncrement', lambda c, t, r: c.atomicIncrement(
                t, r, b'd:c', 1)),
            ('deleteAll', lambda c, t, r: c.deleteAll(t, r, b'd:a', {})),
            ('deleteAllTs', lambda c, t, r: c.deleteAllTs(
                t, r, b'd:a', 9, {})),
            ('deleteAllRow', lambda c, t, r: c.deleteAllRow(t, r, {})),
            ('deleteAllRowTs', lambda c, t, r: c.deleteAllRowTs(
                t, r, 9, {})),
            ('increment', lambda c, t, r: c.increment(T.TIncrement(
                table=t, row=r, column=b'd:c', ammount=1))),
            ('incrementRows', lambda c, t, r: c.incrementRows([T.TIncrement(
                table=t, row=r, column=b'd:c', ammount=1)])),
            ('append', lambda c, t, r: c.append(T.TAppend(
                table=t, row=r, columns=[b'd:c'], values=[b'x']))),
            ('checkAndPut', lambda c, t, r: c.checkAndPut(
                t, r, b'd:a', b'1', M(b'd:a', b'2'), {})),
        ]
        if ARGS.backend_kind == 'real':
            # real HBase's client retries these with an empty row for
            # minutes (16 attempts with backoff) before it answers, where
            # the emulator refuses at once (tests/emu/README.md); the
            # proxy's handling of them is held to the emulator's answer
            calls = [(n, f) for n, f in calls
                     if n not in ('atomicIncrement', 'deleteAll',
                                  'deleteAllTs', 'deleteAllRow',
                                  'deleteAllRowTs')]
        d = self.direct()
        emu_answers = {}
        for name, fn in calls:
            # the emulator itself (an unsalted table): must refuse too
            ans = call(lambda: fn(d, b'm0_plain_ref', b''), 'm0_plain_ref')
            emu_answers[name] = ans
            self.assertEqual(ans[0], 'exc',
                             'emulator accepted an empty row in %s' % name)
        differ = []
        for v in range(len(CLIENTS)):
            c = self.via(v)
            for kind in list(SALTED) + ['plain']:
                t = ('m%d_%s' % (v, kind)).encode()
                before = raw_scan(d, t)
                for name, fn in calls:
                    got = call(lambda: fn(c, t, b''), t)
                    if got != emu_answers[name]:
                        differ.append((CLIENTS[v], kind, name, got,
                                       emu_answers[name]))
                # nothing was written, and the connection goes on
                self.assertEqual(raw_scan(d, t), before, kind)
                self.assertIsInstance(c.getRows(t, [b'a'], {}), list)
            c._trans.close()
        d._trans.close()
        return differ

    def test_07a_empty_row_as_unsalted(self):
        """An empty row: the answer an unsalted table gives (HBase refuses
        it, each method in its own way), nothing stored."""
        differ = self._empty_row()
        seen = sorted(set('%s: proxy %r, direct %r' % (name, got, want)
                          for _, _, name, got, want in differ))
        self.assertEqual(len(differ), 0, 'through the proxy (salted) vs '
                         'direct (unsalted): %d differ:\n  %s'
                         % (len(differ), '\n  '.join(seen)))

    def test_08_seqids_echoed(self):
        """Raw clients with non-zero seqids, every reply path."""
        seqids = [1, 0x7fffffff, -1, -0x80000000, 4242]
        m = [M(b'd:a', b'1')]
        msgs = [
            ('getRow', Hbase.getRow_args(tableName=b'm0_s16', row=b'user42',
                                         attributes={}),
             Hbase.getRow_result),
            ('getRows', Hbase.getRows_args(tableName=b'm0_h300',
                                           rows=[b'u1#x', b'a', b'zz'],
                                           attributes={}),
             Hbase.getRows_result),
            ('mutateRow', Hbase.mutateRow_args(
                tableName=b'm0_dec', row=b'seq', mutations=m,
                attributes={}), Hbase.mutateRow_result),
            ('mutateRow', Hbase.mutateRow_args(     # refused by the proxy
                tableName=b'm0_dec', row=b'', mutations=m, attributes={}),
             Hbase.mutateRow_result),
            ('getRow', Hbase.getRow_args(tableName=b'nope', row=b'r',
                                         attributes={}),
             Hbase.getRow_result),              # IOError from the backend
            ('mutateRows', Hbase.mutateRows_args(   # IllegalArgument
                tableName=b'm0_len3', rowBatches=[T.BatchMutation(
                    row=b'r', mutations=[M(b'd', b'1')])], attributes={}),
             Hbase.mutateRows_result),
            ('getClusterId', Hbase.getClusterId_args(),
             Hbase.getClusterId_result),
            ('noSuchMethod', NoArgs(), None),
            ('scannerOpen', Hbase.scannerOpen_args(
                tableName=b'm0_s16', startRow=b'', columns=[],
                attributes={}), Hbase.scannerOpen_result),
            ('increment', Hbase.increment_args(increment=T.TIncrement(
                table=b'm0_s16', row=b'', column=b'd:c', ammount=1)),
             Hbase.increment_result),
        ]
        for v in range(len(CLIENTS)):
            for pipelined in (False, True):
                with self.subTest(client=CLIENTS[v], pipelined=pipelined):
                    c = self.via(v)
                    sent = []
                    for i, (name, args, res) in enumerate(msgs * 2):
                        sid = seqids[i % len(seqids)]
                        raw_call(c._prot, name, args, sid)
                        sent.append((name, sid, res))
                        if not pipelined:
                            got = raw_reply(c._prot, res)
                            self.assertEqual(got[0::2], (name, sid))
                    if pipelined:
                        for name, sid, res in sent:
                            got = raw_reply(c._prot, res)
                            self.assertEqual(got[0::2], (name, sid))
                    c._trans.close()

    def test_09_scans(self):
        """Salted: refused for now (or, once the scan engine lands, a
        scanner that closes); unsalted: passed through."""
        for v in range(len(CLIENTS)):
            c = self.via(v)
            t = ('m%d_s16' % v).encode()
            opens = [
                ('scannerOpen', lambda: c.scannerOpen(t, b'', [], {})),
                ('scannerOpenWithStop', lambda: c.scannerOpenWithStop(
                    t, b'a', b'z', [], {})),
                ('scannerOpenWithPrefix', lambda: c.scannerOpenWithPrefix(
                    t, b'u1#', [], {})),
                ('scannerOpenTs', lambda: c.scannerOpenTs(t, b'', [], 9, {})),
                ('scannerOpenWithStopTs', lambda: c.scannerOpenWithStopTs(
                    t, b'a', b'z', [], 9, {})),
                ('scannerOpenWithScan', lambda: c.scannerOpenWithScan(
                    t, T.TScan(startRow=b'a'), {})),
            ]
            for name, fn in opens:
                with self.subTest(client=CLIENTS[v], method=name):
                    # Until the scan engine lands: an IOError that says so.
                    # Once it has (it is in the working tree as this is
                    # written), a scanner opens; its behaviour is the scan
                    # suite's, here it only has to close cleanly.
                    try:
                        sid = fn()
                    except T.IOError as e:
                        self.assertIn('not supported', e.message)
                    else:
                        self.assertIsInstance(sid, int)
                        c.scannerClose(sid)
            # an unsalted table scans as it does directly
            d = self.direct()
            p = ('m%d_plain' % v).encode()
            c.mutateRows(p, [T.BatchMutation(row=b'scan%02d' % i, mutations=[
                M(b'd:s', b'%d' % i)]) for i in range(20)], {})

            def scan(x):
                sid = x.scannerOpenWithStop(p, b'scan05', b'scan15',
                                            [b'd:s'], {})
                rows = []
                while True:
                    b = x.scannerGetList(sid, 4)
                    if not b:
                        break
                    rows += [(r.row, r.columns[b'd:s'].value) for r in b]
                x.scannerClose(sid)
                return rows
            self.assertEqual(scan(c), scan(d))
            self.assertEqual(len(scan(c)), 10)
            d._trans.close()
            c._trans.close()


class SpreadTest(_Base):
    extra_tables = {k: v[0] for k, v in SPREAD_TABLES.items()}

    def test_spread_16_buckets(self):
        c = self.via(0)
        rnd = random.Random(20240601)
        keys = set()
        while len(keys) < 100000:
            keys.add(bytes(rnd.getrandbits(8)
                           for _ in range(rnd.randint(1, 24))))
        keys = sorted(keys)
        rnd.shuffle(keys)
        for i in range(0, len(keys), 1000):
            c.mutateRows(b'spread16', [T.BatchMutation(
                row=k, mutations=[M(b'd:a', b'')])
                for k in keys[i:i + 1000]], {})
        c._trans.close()
        d = self.direct()
        stored = raw_scan(d, 'spread16')
        d._trans.close()
        self.assertEqual(len(stored), len(keys))
        counts = [0] * 16
        for row, _ in stored:
            self.assertLess(row[0], 16, row)
            counts[row[0]] += 1
        even = len(keys) / 16.0
        for b, n in enumerate(counts):
            self.assertLess(abs(n - even), 0.05 * even,
                            'bucket %d holds %d rows: %r' % (b, n, counts))
        # and each at the bucket computed here
        salt = Salt(**SPREAD_TABLES['spread16'][1])
        sample = [r for r, _ in stored[::97]]
        for phys in sample:
            self.assertEqual(phys[0], salt.bucket(phys[1:]), phys)

    def test_delimiter_keeps_users_together(self):
        c = self.via(4)
        rnd = random.Random(99)
        users = [b'user%d' % i for i in range(200)]
        keys = []
        for u in users:
            for j in range(rnd.randint(1, 12)):
                keys.append(u + b'#%d#%08x' % (j, rnd.getrandbits(32)))
            keys.append(u)            # no '#': the whole key, same bucket
        c.mutateRows(b'spreaddelim', [T.BatchMutation(
            row=k, mutations=[M(b'd:a', k)]) for k in keys], {})
        c._trans.close()
        d = self.direct()
        stored = raw_scan(d, 'spreaddelim')
        d._trans.close()
        self.assertEqual(len(stored), len(keys))
        salt = Salt(**SPREAD_TABLES['spreaddelim'][1])
        by_user = {}
        for row, cols in stored:
            logical = row[1:]
            self.assertEqual(cols[0][1], logical)
            by_user.setdefault(logical.split(b'#')[0], set()).add(row[0])
        self.assertEqual(sorted(by_user), sorted(users))
        for u, buckets in by_user.items():
            self.assertEqual(buckets, {salt.bucket(u)}, u)
        self.assertGreater(len({min(b) for b in by_user.values()}), 8)


def main():
    global ARGS
    ap = argparse.ArgumentParser()
    ap.add_argument('--proxy', required=True)
    ap.add_argument('--emu', required=True)
    ap.add_argument('--pydir', required=True)
    ap.add_argument('--backend', choices=sorted(BACKENDS),
                    default='binary-buffered')
    ap.add_argument('--spread', action='store_true')
    hsptest.add_backend_args(ap)
    ARGS, rest = ap.parse_known_args()
    if ARGS.backend_kind == 'real':
        # real HBase is the judge of what HBase answers, not of the
        # proxy's client-side parsing, which the emulator runs cover in
        # all six variants: one binary and one compact client keep the
        # table count (and the cluster's start) small
        del CLIENTS[1:4]
        del CLIENTS[2:]
    hsptest.import_thrift(ARGS.pydir, globals())
    backend = BACKENDS[ARGS.backend]
    MethodsTest.backend = backend
    SpreadTest.backend = backend
    cls = SpreadTest if ARGS.spread else MethodsTest
    suite = unittest.TestLoader().loadTestsFromTestCase(cls)
    if rest:
        suite = unittest.TestLoader().loadTestsFromNames(
            rest, sys.modules[__name__])
    res = unittest.TextTestRunner(verbosity=2).run(suite)
    sys.exit(0 if res.wasSuccessful() else 1)


if __name__ == '__main__':
    main()
