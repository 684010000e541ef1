"""Differential oracle for scans: a salted scan through hbase-salt-proxy must
return exactly what the same scan returns directly on an unsalted table.

One seeded data set (thousands of rows, three families, several versions
per cell with explicit timestamps, keys with shared prefixes, 0x00/0xFF
bytes, 1-byte keys, '#' for delimiter hash parts, quotes) is written
DIRECTLY into an unsalted table 'ref' on hbase-emu and THROUGH THE PROXY
into salted tables of every bucket count (1, 2, 16, 300), salt_format and
hash_part mode, with and without a separator.  Then thousands of random
scans run through the proxy on a salted table and directly on 'ref' with
the same arguments (every scannerOpen* variant, every TScan field, random
filter strings) and the same scannerGetList/scannerGet sequence; every
reply must be identical: rows, columns or sortedColumns (whichever is
set), values, timestamps, and where the scan ends.

A filter the proxy refuses with IllegalArgument is fine only when it is
one of the refusals daemon/scanfilter.h documents (regex anchors, RowFilter
regex/substring it cannot make exact for the table, WHILE around a filter
not monotonic in the row key, or inside an OR, over several buckets, a
nested PageFilter)
and the filter holds that construct; such refusals are counted apart.
Anything else that differs is a mismatch, printed with everything needed
to replay it.

  /usr/bin/python3 tests/e2e/test_scan_oracle.py --proxy BUILD/daemon/hbase-salt-proxy \\
      --emu BUILD/tests/emu/hbase-emu --pydir BUILD/thrift/py --part 0 --parts 3

Environment:
  SCAN_ORACLE_SEED   seed (default fixed for CI)
  SCAN_ORACLE_SCANS  scans over all parts (default 3000; 600 with real HBase)
  SCAN_ORACLE_ROWS   rows in the data set (default 3000; 1000 with real HBase)
  SCAN_ORACLE_ONLY   comma-separated scan numbers of this part to replay
  SCAN_ORACLE_VERBOSE=1  print every scan as it runs
  HSP_KEEP_LOGS=1    keep the temp dir (configs, logs)
"""

import argparse
import os
import random
import re
import shutil
import sys
import tempfile
import time

# the harness helpers every end-to-end test shares
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                '..', 'lib'))
import hsptest  # noqa: E402
from hsptest import free_port  # noqa: E402

ARGS = None
REAL = False            # --backend-kind real
Hbase = T = None
TSocket = TTransport = TBinaryProtocol = TCompactProtocol = None
TApplicationException = None

SASL_SERVER = 'hbase/localhost'
SASL_CLIENT = 'app'
DEFAULT_SEED = 20240917
DEFAULT_SCANS = 3000
NROWS = 3000
# real HBase (--backend-kind real) is held to the same oracle on a smaller
# data set: its writes and its scanner calls cost milliseconds where the
# emulator's cost microseconds, and a 300-bucket scan opens 300 scanners
REAL_SCANS = 600
REAL_ROWS = 1000
FAMILIES = [b'a', b'b', b'c']
QUALIFIERS = [b'', b'q', b'q1', b'q2', b'Qx', b'x', b'\x00', b'\xff\x01',
              b"it's"]
ROUND_TS = [1000, 2000, 3000, 4000, 5000]   # write rounds (maxVersions 3)
DELETE_TS = 2500

# Salted tables: name -> (config lines, description).  The parts split
# them; every bucket count, salt_format and hash_part mode appears, with
# and without a separator.
TABLES = [
    ('s1_byte', 'buckets = 1\n'),
    ('s16_byte', 'buckets = 16\n'),
    ('s300_hex_delim_sep', 'buckets = 300\nsalt_format = hex\n'
     'salt_separator = -\nhash_part = delimiter:#:1\n'),
    ('s2_dec_len1', 'buckets = 2\nsalt_format = decimal\n'
     'hash_part = length:1\n'),
    ('s2_hex_sep', 'buckets = 2\nsalt_format = hex\nsalt_separator = _\n'),
    ('s16_dec_delim', 'buckets = 16\nsalt_format = decimal\n'
     'hash_part = delimiter:#:1\n'),
    ('s300_byte_len2', 'buckets = 300\nhash_part = length:2\n'),
    ('s16_hex_len3_sep', 'buckets = 16\nsalt_format = hex\n'
     'salt_separator = |\nhash_part = length:3\n'),
    ('s300_dec_sep', 'buckets = 300\nsalt_format = decimal\n'
     'salt_separator = ~~\n'),
    ('s2_byte_delim_nul', 'buckets = 2\nsalt_separator = \\x00\n'
     'hash_part = delimiter:#:1\n'),
]
# part -> (backend protocol, backend transport, [scan] caching_max, tables)
PARTS = [
    ('binary', 'buffered', 1000, [0, 1, 2, 3]),
    ('binary', 'framed', 7, [4, 5, 6]),
    ('compact', 'framed', 1000, [7, 8, 9]),
]


# ---- processes ------------------------------------------------------------

class Emu(hsptest.Emu):
    def __init__(self, workdir, proto, transport, tables, name='emu',
                 sasl=None, https=None):
        """sasl: (realm, qop, server keytab): HBase's SASL GSSAPI mode;
        https: (cert, key): HBase's HTTP mode over TLS."""
        args = []
        if proto == 'compact':
            args.append('--compact')
        if transport == 'framed':
            args.append('--framed')
        fams = ','.join(f.decode() for f in FAMILIES)
        for t in tables:
            args += ['--create-table', '%s:%s' % (t, fams)]
        env = None
        if https is not None:
            args += ['--http', '--https-cert', https[0], '--https-key',
                     https[1]]
        if sasl is not None:
            realm, qop, keytab = sasl
            args += ['--sasl-qop', qop, '--keytab', keytab, '--principal',
                     realm.qualify(SASL_SERVER)]
            env = realm.env()
        super().__init__(ARGS.emu, workdir, args, name=name, env=env,
                         log_mode='wb')


class Proxy(hsptest.Proxy):
    def __init__(self, workdir, backend_port, proto, transport, caching_max,
                 tables, sasl=None, https_ca=None):
        """sasl: (realm, qop, the proxy's keytab); https_ca: the backend is
        in HBase's HTTP mode over TLS, its certificate signed by this CA."""
        self.port = free_port()
        env = None
        conf = ('[proxy]\nlisten = 127.0.0.1:%d\nworkers = 2\n'
                '[backend]\nservers = %s:%d\nprotocol = %s\n'
                'transport = %s\nrequest_timeout_ms = 20000\n'
                'pool_size = 4\n'
                % (self.port, '127.0.0.1' if https_ca is None
                   else 'localhost', backend_port, proto,
                   'http' if https_ca is not None else transport))
        if https_ca is not None:
            conf += 'https = true\ntls_ca = %s\n' % https_ca
        if sasl is not None:
            realm, qop, keytab = sasl
            conf += ('sasl = gssapi\nsasl_principal = %s\n'
                     'sasl_keytab = %s\nsasl_qop = %s\n'
                     'sasl_server_host = localhost\n'
                     % (realm.qualify(SASL_CLIENT), keytab, qop))
            # no ticket cache of anyone's: the proxy uses its keytab
            env = realm.env(ccache=realm.path('nobody.ccache'))
        conf += '[scan]\ncaching_max = %d\n' % caching_max
        for name, lines in tables:
            conf += '[table:%s]\n%s' % (name, lines)
        super().__init__(ARGS.proxy, workdir, conf, [self.port],
                         log_level='warning', env=env, timeout=10)

    def stop(self):
        return super().stop(killed='killed: no exit on SIGTERM')


def client(port, proto='binary', transport='buffered', timeout=60.0):
    # the accelerated protocols speak the same bytes, decoded in C
    c = hsptest.client(port, proto, transport, timeout, accel=True)
    c._variant = '%s-%s' % (proto, transport)
    return c


# ---- the data set ----------------------------------------------------------

KEY_ALPHABET = (b'\x00\xffab#\'0 1AzZ-' + bytes([0x7f, 0x80, 0x01, 0xfe]))


def gen_keys(rnd, n):
    keys = set(bytes([b]) for b in (0x00, 0x01, 0x23, 0x27, 0x2d, 0x30,
                                    0x41, 0x61, 0x62, 0x7f, 0x80, 0xfe,
                                    0xff))
    keys.update([b'\x00\x00', b'\xff\xff', b'\xff\xff\xff', b'\x00\xff',
                 b'\xff\x00', b'#', b'##', b'#a#', b"'", b"''", b"a'b"])
    users = [b'u%d' % i for i in range(80)] + [b'U%d' % i for i in range(10)]
    order = sorted(keys)
    while len(keys) < n:
        r = rnd.random()
        if r < 0.30:
            k = rnd.choice(users) + b'#%d' % rnd.randint(0, 40)
            if rnd.random() < 0.3:
                k += b'#' + bytes(rnd.choice(KEY_ALPHABET)
                                  for _ in range(rnd.randint(0, 3)))
        elif r < 0.36:
            k = rnd.choice(users)
        elif r < 0.55 and order:
            base = rnd.choice(order)
            k = base[:rnd.randint(1, len(base))] + bytes(
                rnd.choice(KEY_ALPHABET) for _ in range(rnd.randint(1, 4)))
        elif r < 0.75:
            k = bytes(rnd.choice(KEY_ALPHABET)
                      for _ in range(rnd.randint(1, 8)))
        elif r < 0.82:
            k = (bytes([rnd.choice((0x00, 0xff))]) * rnd.randint(1, 4)
                 + bytes(rnd.choice(KEY_ALPHABET)
                         for _ in range(rnd.randint(0, 3))))
        elif r < 0.86:
            k = bytes([rnd.randrange(256)])
        else:
            k = bytes(rnd.randrange(256) for _ in range(rnd.randint(1, 16)))
        if k not in keys:
            keys.add(k)
            if len(keys) % 200 == 0:
                order = sorted(keys)
    return sorted(keys)


def gen_value(rnd):
    r = rnd.random()
    if r < 0.1:
        return b''
    if r < 0.5:
        return b'%d' % rnd.randint(0, 99)
    if r < 0.7:
        return b'v' + bytes(rnd.choice(b'abcXY#\x00\xff\'')
                            for _ in range(rnd.randint(0, 4)))
    if r < 0.8:
        return b"o'k"
    return bytes(rnd.randrange(256) for _ in range(rnd.randint(1, 6)))


def gen_data(seed, nrows=NROWS):
    """keys, and the write rounds: [(ts, [(row, [Mutation])])]."""
    rnd = random.Random('%s:data' % seed)
    keys = gen_keys(rnd, nrows)
    columns = {}
    for k in keys:
        cols = set()
        for _ in range(rnd.randint(1, 6)):
            cols.add(rnd.choice(FAMILIES) + b':' + rnd.choice(QUALIFIERS))
        columns[k] = sorted(cols)
    rounds = []
    for i, ts in enumerate(ROUND_TS):
        batch = []
        for k in keys:
            muts = [T.Mutation(column=c, value=gen_value(rnd))
                    for c in columns[k] if i == 0 or rnd.random() < 0.4]
            if muts:
                batch.append((k, muts))
        rounds.append((ts, batch))
        if ts == 3000:
            # tombstones: versions at or below DELETE_TS of some cells
            dels = []
            for k in keys:
                if rnd.random() < 0.05:
                    dels.append((k, [T.Mutation(isDelete=True, column=c)
                                     for c in columns[k][:1]]))
            rounds.append((DELETE_TS, dels))
    return keys, rounds


def load(c, table, rounds):
    for ts, batch in rounds:
        for i in range(0, len(batch), 400):
            c.mutateRowsTs(table, [T.BatchMutation(row=k, mutations=m)
                                   for k, m in batch[i:i + 400]], ts, {})


# ---- random filters --------------------------------------------------------

OPS = [b'<', b'<=', b'=', b'!=', b'>=', b'>']


def quote(b):
    return b"'" + b.replace(b"'", b"''") + b"'"


def regex_escape(b):
    out = b''
    for c in b:
        if chr(c).isalnum() and c < 0x80:
            out += bytes([c])
        elif c < 0x20 or c >= 0x7f or rnd_escape_hex(c):
            out += b'\\x%02x' % c
        else:
            out += b'\\' + bytes([c])
    return out


def rnd_escape_hex(c):
    # hex escapes for the characters a Java/PCRE regex treats specially
    # in either form; the rest take a backslash
    return c in (0x23, 0x27, 0x20)


class FilterGen(object):
    """Random filter strings, biased to what the proxy accepts.  flags
    records every construct the proxy may refuse."""

    def __init__(self, rnd, keys, reversed_):
        self.rnd, self.keys, self.reversed = rnd, keys, reversed_
        self.flags = set()

    def key(self):
        rnd = self.rnd
        k = rnd.choice(self.keys)
        r = rnd.random()
        if r < 0.5:
            return k
        if r < 0.85:
            return k[:rnd.randint(1, len(k))]
        return k + bytes([rnd.choice((0x00, 0xff, 0x23))])

    def fragment(self):
        k = self.rnd.choice(self.keys)
        i = self.rnd.randrange(len(k))
        return k[i:i + self.rnd.randint(1, 3)]

    def regex(self):
        rnd = self.rnd
        parts = []
        for _ in range(rnd.randint(1, 3)):
            r = rnd.random()
            if r < 0.45:
                parts.append(regex_escape(self.fragment()))
            elif r < 0.55:
                parts.append(b'.')
            elif r < 0.65:
                parts.append(b'.*')
            elif r < 0.75:
                parts.append(rnd.choice((b'[a-f0-9]', b'[^#]', b'[|^]',
                                         b'\\|', b'\\Q^|\\E')))
            elif r < 0.82:
                parts.append(b'\\d+')
            elif r < 0.9:
                parts.append(b'#')
            else:
                parts.append(bytes([rnd.choice((0x00, 0xff, 0x80, 0x27))]))
        rx = b''.join(parts)
        r = rnd.random()
        if r < 0.25:
            rx = b'^' + rx
        elif r < 0.32:
            rx = rx + b'$'
        elif r < 0.37:
            # constructs a salt prefix would change: refused
            self.flags.add('regex_anchor')
            rx = rnd.choice([b'^' + rx + b'|x', rx + b'^', b'\\b' + rx,
                             b'\\A' + rx, b'(?<=a)' + rx, b'\\B' + rx])
        return rx

    def substring(self):
        rnd = self.rnd
        s = bytes(c for c in self.fragment())
        s = bytes((c ^ 0x20) if (0x41 <= c <= 0x5a or 0x61 <= c <= 0x7a)
                  and rnd.random() < 0.5 else c for c in s)
        if any(c >= 0x80 for c in s):
            if rnd.random() < 0.7:
                s = bytes(c for c in s if c < 0x80) or b'a'
        if any(c >= 0x80 for c in s):
            self.flags.add('substring_nonascii')
        return s

    def row_filter(self):
        rnd = self.rnd
        r = rnd.random()
        if r < 0.35:
            return b'RowFilter(%s, %s)' % (rnd.choice(OPS),
                                           quote(b'binary:' + self.key()))
        if r < 0.6:
            return b'RowFilter(%s, %s)' % (
                rnd.choice(OPS), quote(b'binaryprefix:' + self.key()))
        self.flags.add('row_regex')
        if r < 0.8:
            return b'RowFilter(%s, %s)' % (
                rnd.choice((b'=', b'!=')), quote(b'regexstring:'
                                                 + self.regex()))
        return b'RowFilter(%s, %s)' % (
            rnd.choice((b'=', b'!=')), quote(b'substring:' + self.substring()))

    def monotonic(self, depth=0):
        """A filter WHILE may wrap over several buckets: its rows come
        before every row it stops at, in scan order."""
        rnd = self.rnd
        r = rnd.random()
        if depth == 0 and r < 0.15:
            a, b = self.monotonic(1), self.monotonic(1)
            return b'%s %s %s' % (a, rnd.choice((b'AND', b'OR')), b)
        if r < 0.6:
            ops = (b'>', b'>=') if self.reversed else (b'<', b'<=')
            return b'RowFilter(%s, %s)' % (
                rnd.choice(ops), quote(rnd.choice((b'binary:',
                                                   b'binaryprefix:'))
                                       + self.key()))
        return b'InclusiveStopFilter(%s)' % quote(self.key())

    def cell_leaf(self):
        rnd = self.rnd
        r = rnd.random()
        if r < 0.08:
            return rnd.choice((b'KeyOnlyFilter()', b'KeyOnlyFilter(true)',
                               b'KeyOnlyFilter(false)'))
        if r < 0.16:
            return b'FirstKeyOnlyFilter()'
        if r < 0.26:
            return b'ColumnPrefixFilter(%s)' % quote(
                rnd.choice(QUALIFIERS)[:rnd.randint(0, 2)] or b'q')
        if r < 0.38:
            cmp = rnd.choice((b'binary:', b'binaryprefix:'))
            v = rnd.choice(QUALIFIERS)
            if rnd.random() < 0.3:
                cmp, v = b'substring:', rnd.choice((b'q', b'X', b"'"))
                return b'QualifierFilter(%s, %s)' % (
                    rnd.choice((b'=', b'!=')), quote(cmp + v))
            return b'QualifierFilter(%s, %s)' % (rnd.choice(OPS),
                                                 quote(cmp + v))
        if r < 0.52:
            if rnd.random() < 0.3:
                return b'ValueFilter(%s, %s)' % (
                    rnd.choice((b'=', b'!=')),
                    quote(rnd.choice((b'substring:', b'regexstring:'))
                          + rnd.choice((b'1', b'v', b'a', b"'", b'k'))))
            return b'ValueFilter(%s, %s)' % (
                rnd.choice(OPS), quote(b'binary:' + gen_value(rnd)))
        if r < 0.6:
            return b'FamilyFilter(%s, %s)' % (
                rnd.choice(OPS), quote(b'binary:' + rnd.choice(FAMILIES)))
        if r < 0.74:
            extra = b''
            if rnd.random() < 0.5:
                extra = b', %s, %s' % (rnd.choice((b'true', b'false')),
                                       rnd.choice((b'true', b'false')))
            return b'SingleColumnValueFilter(%s, %s, %s, %s%s)' % (
                quote(rnd.choice(FAMILIES)), quote(rnd.choice(QUALIFIERS)),
                rnd.choice(OPS), quote(b'binary:' + gen_value(rnd)), extra)
        if r < 0.82:
            ts = sorted(rnd.sample(ROUND_TS + [DELETE_TS, 1500, 1],
                                   rnd.randint(1, 3)))
            return b'TimestampsFilter(%s)' % b', '.join(b'%d' % t for t in ts)
        if r < 0.88:
            self.flags.add('ccgf')
            return b'ColumnCountGetFilter(%d)' % rnd.randint(1, 6)
        return b'ColumnPaginationFilter(%d, %d)' % (rnd.randint(1, 4),
                                                     rnd.randint(0, 3))

    def leaf(self):
        rnd = self.rnd
        r = rnd.random()
        if r < 0.15:
            return b'PrefixFilter(%s)' % quote(self.key()[:rnd.randint(1, 4)])
        if r < 0.4:
            return self.row_filter()
        if r < 0.47:
            return b'InclusiveStopFilter(%s)' % quote(self.key())
        return self.cell_leaf()

    # The filter parser (ParseFilter's stack machine, daemon/filter.c)
    # leaves the '(' of a parenthesised single filter on its stack, so
    # "(WHILE (X)) AND (Y)" reads as WHILE (X AND Y): only joins get
    # parentheses here, so the tree is the one the flags describe.
    def join(self, parts, op):
        return op.join(b'(%s)' % t if j else t for t, j in parts), True

    def expr(self, depth=0, in_or=False):
        """(text, whether it is an AND/OR join); in_or: under an OR"""
        rnd = self.rnd
        r = rnd.random()
        if depth >= 2 or r < 0.45:
            return self.leaf(), False
        if r < 0.65:
            return self.join([self.expr(depth + 1, in_or)
                              for _ in range(rnd.randint(2, 3))], b' AND ')
        if r < 0.8:
            return self.join([self.expr(depth + 1, True)
                              for _ in range(rnd.randint(2, 3))], b' OR ')
        if r < 0.88:
            return b'SKIP %s' % self.leaf(), False
        if in_or:
            self.flags.add('while_in_or')
        if rnd.random() < 0.8:
            m = self.monotonic()
            return b'WHILE %s' % (b'(%s)' % m if b' AND ' in m
                                  or b' OR ' in m else m), False
        self.flags.add('while_nonmono')
        return b'WHILE %s' % self.leaf(), False

    def top(self):
        rnd = self.rnd
        r = rnd.random()
        if r < 0.1:
            return b'PageFilter(%d)' % rnd.randint(0, 40)
        if r < 0.18:
            parts = [self.expr(1), (b'PageFilter(%d)' % rnd.randint(1, 40),
                                    False)]
            rnd.shuffle(parts)
            if parts[1][0].startswith(b'PageFilter') and (
                    b'SingleColumnValueFilter' in parts[0][0]
                    or b'SKIP' in parts[0][0]):
                pass
            elif re.search(b'SingleColumnValueFilter|SKIP', parts[1][0]):
                # the page counts rows a later filter may drop
                self.flags.add('page_drop')
            return self.join(parts, b' AND ')[0]
        if r < 0.2:
            self.flags.add('page_nested')
            x = rnd.random()
            if x < 0.5:
                return b'PageFilter(3) OR %s' % self.leaf()
            if x < 0.75:
                return b'SKIP PageFilter(2)'
            self.flags.add('while_nonmono')
            return b'WHILE PageFilter(5)'
        f = self.expr()[0]
        if rnd.random() < 0.1:
            f = b' ' + f + b' '
        return f


# A filter the proxy cannot apply exactly is refused as HBase refuses a
# filter it rejects: an IOError (the only exception scannerOpen* declares;
# an IllegalArgument there is a result no client can read) wrapping the
# IllegalArgumentException, canRetry false.
REFUSAL_PREFIX = 'java.lang.IllegalArgumentException: hbase-salt-proxy: '
# Refusals scanfilter.h documents: message pattern -> (kind, flag needed)
REFUSALS = [
    (re.compile(r'RowFilter regexstring:.*only a leading \^', re.S),
     'regex-anchor', lambda fl, t: 'regex_anchor' in fl),
    (re.compile(r'substring: with non-ASCII'), 'substring-non-ascii',
     lambda fl, t: 'substring_nonascii' in fl),
    (re.compile(r'needs salts below 0x80'), 'regex-byte-salt-over-128',
     lambda fl, t: 'row_regex' in fl and 'salt_format' not in t[1]
     and int(re.search(r'buckets = (\d+)', t[1]).group(1)) > 128),
    (re.compile(r'needs an ASCII salt_separator'), 'regex-non-ascii-sep',
     lambda fl, t: False),
    (re.compile(r'WHILE around a filter that is not monotonic'),
     'while-non-monotonic', lambda fl, t: 'while_nonmono' in fl),
    (re.compile(r'WHILE inside OR or SKIP'), 'while-in-or',
     lambda fl, t: 'while_in_or' in fl),
    (re.compile(r'PageFilter inside OR, SKIP or WHILE'), 'page-nested',
     lambda fl, t: 'page_nested' in fl),
    (re.compile(r'ColumnCountGetFilter ends the scan'), 'column-count-get',
     lambda fl, t: 'ccgf' in fl),
    (re.compile(r'PageFilter followed in its AND by a filter that can drop'),
     'page-then-row-drop', lambda fl, t: 'page_drop' in fl),
]


# ---- random scans ----------------------------------------------------------

METHODS = [('scannerOpenWithScan', 60), ('scannerOpen', 8),
           ('scannerOpenWithStop', 8), ('scannerOpenWithPrefix', 10),
           ('scannerOpenTs', 7), ('scannerOpenWithStopTs', 7)]
COLUMNS = [b'a', b'b', b'c', b'a:q', b'b:q1', b'c:', b'a:\x00', b'b:Qx',
           b"c:it's", b'a:\xff\x01']
TIMESTAMPS = [1500, 2500, 3000, 3500, 4500, 5001, 1000, 1001, 1, 0, 10 ** 13]


def successor(k):
    k = bytearray(k)
    while k and k[-1] == 0xff:
        k.pop()
    if not k:
        return b''
    k[-1] += 1
    return bytes(k)


def weighted(rnd, items):
    total = sum(w for _, w in items)
    x = rnd.uniform(0, total)
    for v, w in items:
        x -= w
        if x <= 0:
            return v
    return items[-1][0]


class Scan(object):
    """One random scan: how it opens and how it is read."""

    def __init__(self, rnd, keys, table):
        self.method = weighted(rnd, METHODS)
        self.reversed = (self.method == 'scannerOpenWithScan'
                         and rnd.random() < 0.3)
        self.flags = set()
        start, stop = self.bounds(rnd, keys, table)
        cols = None
        if rnd.random() < 0.35:
            cols = rnd.sample(COLUMNS, rnd.randint(1, 3))
        elif rnd.random() < 0.2:
            cols = []
        ts = rnd.choice(TIMESTAMPS)
        attrs = {b'k': b'v'} if rnd.random() < 0.1 else {}
        self.attrs = attrs
        if self.method == 'scannerOpenWithScan':
            fs = None
            if rnd.random() < 0.6:
                g = FilterGen(rnd, keys, self.reversed)
                fs = g.top()
                self.flags = g.flags
            self.tscan = dict(
                startRow=start, stopRow=stop,
                timestamp=ts if rnd.random() < 0.25 else None,
                columns=cols,
                caching=rnd.choice([None, None, 1, 2, 5, 10, 50, 200, 0, -3,
                                    rnd.randint(1, 1000)]),
                filterString=fs,
                batchSize=rnd.choice([None] * 6 + [1, 2, 3, 5, 0]),
                sortColumns=rnd.choice([None, None, True, False]),
                reversed=(True if self.reversed
                          else rnd.choice([None, None, False])),
                cacheBlocks=rnd.choice([None, True, False]))
            if REAL and fs is not None:
                # real HBase refuses batchSize with a filter that filters
                # whole rows (Scan.setBatch: IncompatibleFilterException)
                # only in its region server, which its client retries 16
                # times (~70 s) before the IOError; the emulator runs such
                # scans.  Both sides fail alike, so nothing is compared but
                # a minute a scan: against real HBase a filtered scan has
                # no batchSize (drawn all the same: the same scans follow)
                self.tscan['batchSize'] = None
            self.args = None
        else:
            cols = cols or []
            start = start or b''
            stop = stop or b''
            self.args = {
                'scannerOpen': (start, cols, attrs),
                'scannerOpenWithStop': (start, stop, cols, attrs),
                'scannerOpenWithPrefix': (start, cols, attrs),
                'scannerOpenTs': (start, cols, ts, attrs),
                'scannerOpenWithStopTs': (start, stop, cols, ts, attrs),
            }[self.method]
        # how it is read
        self.full = rnd.random() < 0.55
        self.max_calls = rnd.randint(1, 6)
        self.read_seed = rnd.getrandbits(32)

    def bounds(self, rnd, keys, table):
        if self.method == 'scannerOpenWithPrefix':
            r = rnd.random()
            k = rnd.choice(keys)
            if r < 0.4 and b'#' in k:
                # the hashed part of delimiter:#:1: one bucket
                p = k[:k.index(b'#') + 1 + rnd.randint(0, 2)]
            elif r < 0.85:
                p = k[:rnd.randint(1, min(len(k), 4))]
            elif r < 0.95:
                p = b''
            else:
                p = bytes([rnd.choice((0x00, 0xff))])
            return p, None
        r = rnd.random()
        if r < 0.45:
            # a window of nearby keys (scans stay short on average)
            i = rnd.randrange(len(keys))
            j = min(len(keys) - 1, i + int(rnd.expovariate(1 / 80.0)))
            lo, hi = keys[i], keys[j]
            if rnd.random() < 0.2:
                hi = hi + b'\x00'
            if rnd.random() < 0.2:
                lo = lo[:max(1, len(lo) - 1)]
            return (hi, lo) if self.reversed else (lo, hi)
        if r < 0.55:
            # one row: stop just after start (a fixed bucket)
            k = rnd.choice(keys)
            if self.reversed:
                return k + b'\x00', k
            return k, k + b'\x00'
        if r < 0.65:
            # a prefix range: one bucket when the prefix fixes the hash
            k = rnd.choice(keys)
            p = k[:k.index(b'#') + 1] if b'#' in k and rnd.random() < 0.6 \
                else k[:rnd.randint(1, len(k))]
            s = successor(p)
            return (s, p) if self.reversed else (p, s)
        if r < 0.72:
            k = rnd.choice(keys)
            return k, k                               # start == stop
        def one():
            x = rnd.random()
            if x < 0.25:
                return None
            if x < 0.35:
                return b''
            if x < 0.75:
                return rnd.choice(keys)
            if x < 0.9:
                k = rnd.choice(keys)
                return k[:rnd.randint(1, len(k))]
            return bytes(rnd.randrange(256) for _ in range(rnd.randint(1, 3)))
        return one(), one()

    def describe(self):
        if self.args is None:
            return 'scannerOpenWithScan(TABLE, TScan(%s), %r)' % (
                ', '.join('%s=%r' % kv for kv in sorted(self.tscan.items())
                          if kv[1] is not None), self.attrs)
        return '%s(TABLE, %s)' % (self.method,
                                  ', '.join(repr(a) for a in self.args))

    def open(self, c, table):
        if self.args is None:
            return c.scannerOpenWithScan(table, T.TScan(**self.tscan),
                                         self.attrs)
        return getattr(c, self.method)(table, *self.args)


def row_form(r):
    """Everything a TRowResult carries, comparable."""
    cols = None
    if r.columns is not None:
        cols = sorted((k, v.value, v.timestamp) for k, v in r.columns.items())
    scols = None
    if r.sortedColumns is not None:
        scols = [(c.columnName, c.cell.value if c.cell else None,
                  c.cell.timestamp if c.cell else None)
                 for c in r.sortedColumns]
    return (r.row, cols, scols)


def outcome(fn):
    try:
        return 'ok', fn()
    except T.IllegalArgument as e:
        return 'IllegalArgument', e.message
    except T.IOError as e:
        Oracle.last_retry = e.canRetry
        return 'IOError', e.message
    except TApplicationException as e:
        return 'TApplicationException', '%s %s' % (e.type, e.message)


class Oracle(object):
    last_retry = None

    def __init__(self, seed, part, keys, proxy_clients, direct, tables):
        self.seed, self.part, self.keys = seed, part, keys
        self.proxy_clients, self.direct, self.tables = (proxy_clients,
                                                        direct, tables)
        self.scans = 0          # compared (both sides opened)
        self.rows = 0
        self.calls = 0
        self.refusals = {}
        self.both_failed = 0
        self.mismatches = 0
        self.reported = 0
        self.by_method = {}
        self.variants = {}
        self.filtered = 0

    def report(self, i, scan, table, variant, what):
        self.mismatches += 1
        if self.reported >= 15:
            return
        self.reported += 1
        print('MISMATCH (seed %s, part %d, scan %d; replay with '
              'SCAN_ORACLE_SEED=%s SCAN_ORACLE_ONLY=%d --part %d)\n'
              '  table: %s [%s]\n  client: %s\n  scan: %s\n  flags: %s\n  %s'
              % (self.seed, self.part, i, self.seed, i, self.part, table[0],
                 table[1].strip().replace('\n', '; '), variant,
                 scan.describe(), sorted(scan.flags), what), flush=True)

    def run(self, i):
        rnd = random.Random('%s:%d:scan:%d' % (self.seed, self.part, i))
        table = self.tables[i % len(self.tables)]
        scan = Scan(rnd, self.keys, table)
        cp = (self.proxy_clients[1] if rnd.random() < 0.25
              else self.proxy_clients[0])
        variant = cp._variant
        if os.environ.get('SCAN_ORACLE_VERBOSE'):
            print('scan %d on %s via %s: %s' % (i, table[0], variant,
                                                scan.describe()), flush=True)
        d = self.direct
        Oracle.last_retry = None
        pk, pid = outcome(lambda: scan.open(cp, table[0].encode()))
        self.last_retry = Oracle.last_retry
        dk, did = outcome(lambda: scan.open(d, b'ref'))
        if pk != 'ok' or dk != 'ok':
            if (pk == 'IOError' and dk == 'ok'
                    and pid.startswith(REFUSAL_PREFIX)):
                d.scannerClose(did)
                for pat, kind, allowed in REFUSALS:
                    if pat.search(pid):
                        if allowed(scan.flags, table) and \
                                self.last_retry is False:
                            self.refusals[kind] = self.refusals.get(kind,
                                                                    0) + 1
                            return
                        break
                self.report(i, scan, table, variant,
                            'the proxy refused a scan the emulator ran: %r'
                            % pid)
                return
            if pk == dk:
                # both fail the same way (messages name different tables)
                self.both_failed += 1
                return
            if dk == 'ok':
                d.scannerClose(did)
            if pk == 'ok':
                cp.scannerClose(pid)
            self.report(i, scan, table, variant,
                        'open: through the proxy %s %r, directly %s %r'
                        % (pk, pid, dk, did))
            return
        self.scans += 1
        self.by_method[scan.method] = self.by_method.get(scan.method, 0) + 1
        self.variants[variant] = self.variants.get(variant, 0) + 1
        if scan.args is None and scan.tscan['filterString'] is not None:
            self.filtered += 1
        rr = random.Random(scan.read_seed)
        ncalls = 0
        history = []
        ended = False
        while ncalls < 100000:
            x = rr.random()
            if x < 0.05:
                nb = rr.choice((0, -1, -7))
            elif x < 0.12:
                nb = None           # scannerGet
            elif x < 0.5:
                nb = rr.randint(1, 50)
            else:
                nb = rr.choice((10, 25, 50, 50, 100))
            if nb is None:
                pr = outcome(lambda: cp.scannerGet(pid))
                dr = outcome(lambda: d.scannerGet(did))
            else:
                pr = outcome(lambda: cp.scannerGetList(pid, nb))
                dr = outcome(lambda: d.scannerGetList(did, nb))
            ncalls += 1
            self.calls += 1
            what = 'scannerGet()' if nb is None else 'scannerGetList(%d)' % nb
            if pr[0] != 'ok' or dr[0] != 'ok':
                if pr != dr:
                    self.report(i, scan, table, variant,
                                'call %d %s: through the proxy %r, directly '
                                '%r\n  calls before: %s'
                                % (ncalls, what, pr, dr, history))
                    break
                continue
            prow = [row_form(r) for r in pr[1]]
            drow = [row_form(r) for r in dr[1]]
            history.append((nb, len(drow)))
            if prow != drow:
                k = 0
                while k < min(len(prow), len(drow)) and prow[k] == drow[k]:
                    k += 1
                self.report(i, scan, table, variant,
                            'call %d %s: %d rows through the proxy, %d '
                            'directly; first difference at row %d:\n'
                            '    proxy:  %r\n    direct: %r\n'
                            '  calls before (nbRows, rows): %s'
                            % (ncalls, what, len(prow), len(drow), k,
                               prow[k] if k < len(prow) else None,
                               drow[k] if k < len(drow) else None,
                               history[:-1]))
                break
            self.rows += len(drow)
            want = 1 if nb is None else nb
            if want > 0 and len(drow) > want:
                self.report(i, scan, table, variant, 'call %d %s returned '
                            '%d rows' % (ncalls, what, len(drow)))
                break
            if want > 0 and not drow:
                ended = True
                # the end stays the end
                if rr.random() < 0.3:
                    pr = outcome(lambda: cp.scannerGetList(pid, 5))
                    dr = outcome(lambda: d.scannerGetList(did, 5))
                    if pr != ('ok', []) or dr != ('ok', []):
                        self.report(i, scan, table, variant,
                                    'after the end: proxy %r, direct %r'
                                    % (pr, dr))
                break
            if not scan.full and ncalls >= scan.max_calls:
                break
        pc = outcome(lambda: cp.scannerClose(pid))
        dc = outcome(lambda: d.scannerClose(did))
        if pc != dc:
            self.report(i, scan, table, variant, 'scannerClose: proxy %r, '
                        'direct %r' % (pc, dc))
        if rr.random() < 0.05:
            pr = outcome(lambda: cp.scannerGetList(pid, 3))
            dr = outcome(lambda: d.scannerGetList(did, 3))
            if pr != dr or pr[0] != 'IllegalArgument':
                self.report(i, scan, table, variant, 'after close: proxy %r,'
                            ' direct %r' % (pr, dr))
        del ended


def main():
    global ARGS
    ap = argparse.ArgumentParser()
    ap.add_argument('--proxy', required=True)
    ap.add_argument('--emu', required=True)
    ap.add_argument('--pydir', required=True)
    ap.add_argument('--part', type=int, default=0)
    ap.add_argument('--parts', type=int, default=len(PARTS))
    ap.add_argument('--backend-https', action='store_true',
                    help='the proxy reaches the salted tables over HBase\'s '
                         'HTTP mode with TLS (certificates made per run with '
                         'the openssl CLI), on an emulator of their own; the '
                         'unsalted reference stays on a plain emulator')
    ap.add_argument('--sasl-qop', default=None,
                    help='the proxy reaches the salted tables over SASL '
                         'GSSAPI with this QOP, on an emulator of their own '
                         'in HBase\'s SASL mode, against a throwaway MIT KDC '
                         '(tests/lib/krb5lib.py); the unsalted reference '
                         'stays on a plain emulator')
    hsptest.add_backend_args(ap)
    ARGS = ap.parse_args()
    global REAL
    real = REAL = ARGS.backend_kind == 'real'
    if real and (ARGS.sasl_qop is not None or ARGS.backend_https):
        ap.error('--sasl-qop and --backend-https run on the emulator only')
    hsptest.import_thrift(ARGS.pydir, globals())
    seed = os.environ.get('SCAN_ORACLE_SEED', str(DEFAULT_SEED))
    total = int(os.environ.get('SCAN_ORACLE_SCANS',
                               REAL_SCANS if real else DEFAULT_SCANS))
    nrows = int(os.environ.get('SCAN_ORACLE_ROWS',
                               REAL_ROWS if real else NROWS))
    nscans = (total + ARGS.parts - 1) // ARGS.parts
    only = os.environ.get('SCAN_ORACLE_ONLY')
    proto, transport, caching_max, idx = PARTS[ARGS.part]
    tables = [TABLES[i] for i in idx]
    t0 = time.time()
    print('scan oracle: seed %s, part %d/%d, %d scans, %d rows, backend %s '
          '%s-%s, caching_max %d, tables %s'
          % (seed, ARGS.part, ARGS.parts, nscans, nrows, ARGS.backend_kind,
             proto, transport, caching_max, ', '.join(t for t, _ in tables)),
          flush=True)

    workdir = tempfile.mkdtemp(prefix='hsp-e2e-scan-oracle-')
    realm = None
    emu2 = None
    if ARGS.sasl_qop is not None:
        # SASL is unframed only, as HBase enforces
        transport = 'buffered'
        import krb5lib
        realm = krb5lib.Realm()
        realm.start()
        realm.add_principals(SASL_SERVER, SASL_CLIENT)
        server_kt = realm.export(SASL_SERVER, realm.path('server.keytab'))
        app_kt = realm.export(SASL_CLIENT, realm.path('app.keytab'))
        print('scan oracle: salted tables over SASL %s (KDC on port %d)'
              % (ARGS.sasl_qop, realm.port), flush=True)
    pki = None
    if ARGS.backend_https:
        # HBase's HTTP mode is binary only, one message per POST
        proto, transport = 'binary', 'buffered'
        sys.path.insert(0, os.path.join(os.path.dirname(
            os.path.abspath(__file__)), '..', 'secure'))
        import test_tls_listener as tlsl
        pki = os.path.join(workdir, 'pki')
        os.makedirs(pki)
        tlsl.make_pki(pki)
        print('scan oracle: salted tables over HTTPS', flush=True)
    if real:
        # one cluster holds 'ref' and the salted tables, as one emulator does
        emu = hsptest.start_backend(
            'real', workdir, proto=proto, transport=transport,
            tables={t: [f.decode() for f in FAMILIES]
                    for t in ['ref'] + [t for t, _ in tables]},
            thrift=hsptest.Thrift(ARGS.pydir))
        print('real HBase ready in %.1f s' % (time.time() - t0), flush=True)
    else:
        emu = Emu(workdir, proto, transport,
                  ['ref'] + [t for t, _ in tables])
    proxy = None
    ok = False
    try:
        backend = emu
        if pki is not None:
            emu2 = Emu(workdir, proto, transport, [t for t, _ in tables],
                       name='emu-https',
                       https=(os.path.join(pki, 'srv1.pem'),
                              os.path.join(pki, 'srv1.key')))
            backend = emu2
        if realm is not None:
            emu2 = Emu(workdir, proto, transport, [t for t, _ in tables],
                       name='emu-sasl',
                       sasl=(realm, ARGS.sasl_qop, server_kt))
            backend = emu2
        proxy = Proxy(workdir, backend.port, proto, transport, caching_max,
                      tables, sasl=None if realm is None
                      else (realm, ARGS.sasl_qop, app_kt),
                      https_ca=None if pki is None
                      else os.path.join(pki, 'ca.pem'))
        direct = client(emu.port, proto, transport)
        via = [client(proxy.port, 'binary', 'buffered'),
               client(proxy.port, 'compact', 'framed')]
        keys, rounds = gen_data(seed, nrows)
        load(direct, b'ref', rounds)
        for name, _ in tables:
            load(via[0], name.encode(), rounds)
        print('loaded %d rows into ref and %d salted tables in %.1f s'
              % (len(keys), len(tables), time.time() - t0), flush=True)

        oracle = Oracle(seed, ARGS.part, keys, via, direct, tables)
        # a full scan of every table first: the data sets agree
        for name, _ in tables:
            for c in via:
                sid = c.scannerOpenWithScan(name.encode(), T.TScan(
                    sortColumns=True), {})
                did = direct.scannerOpenWithScan(b'ref', T.TScan(
                    sortColumns=True), {})
                n = 0
                while True:
                    a = c.scannerGetList(sid, 500)
                    b = direct.scannerGetList(did, 500)
                    assert [row_form(r) for r in a] == \
                        [row_form(r) for r in b], \
                        'full scan of %s differs near row %d' % (name, n)
                    if not b:
                        break
                    n += len(b)
                c.scannerClose(sid)
                direct.scannerClose(did)
                # (a few rows lost every cell to the tombstones)
                assert n > 0.9 * len(keys), (name, n, len(keys))
        which = (range(nscans) if not only
                 else [int(x) for x in only.split(',')])
        t1 = time.time()
        for n, i in enumerate(which):
            oracle.run(i)
            if real and n % 50 == 49:
                print('  %d scans in %.1f s, %d mismatches'
                      % (n + 1, time.time() - t1, oracle.mismatches),
                      flush=True)
            if not proxy.alive():
                raise AssertionError('the proxy died at scan %d; log in %s'
                                     % (i, proxy.log_path))
        el = time.time() - t0
        print('scan oracle part %d: %d scans compared (%d with a filter), '
              '%d rows compared, %d scanner calls, %.1f s'
              % (ARGS.part, oracle.scans, oracle.filtered, oracle.rows,
                 oracle.calls, el))
        print('  by method: %s' % ', '.join(
            '%s=%d' % kv for kv in sorted(oracle.by_method.items())))
        print('  by client: %s' % ', '.join(
            '%s=%d' % kv for kv in sorted(oracle.variants.items())))
        print('  refusals: %s' % (', '.join(
            '%s=%d' % kv for kv in sorted(oracle.refusals.items()))
            or 'none'))
        print('  both sides failed alike: %d' % oracle.both_failed)
        print('  mismatches: %d' % oracle.mismatches, flush=True)
        ok = oracle.mismatches == 0
    finally:
        for c in ('via', 'direct'):
            pass
        rc = proxy.stop() if proxy is not None and proxy.alive() else None
        emu.close()
        if emu2 is not None:
            emu2.close()
        if realm is not None:
            realm.stop()
        if rc not in (None, 0):
            print('proxy exit: %r' % (rc,))
            ok = False
        if ok and not os.environ.get('HSP_KEEP_LOGS'):
            shutil.rmtree(workdir, ignore_errors=True)
        else:
            print('logs kept in %s' % workdir)
    sys.exit(0 if ok else 1)


if __name__ == '__main__':
    main()
