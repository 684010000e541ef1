"""Forward-looking salting (issue 12 part 1), differential: tables whose
legacy rule keeps old keys unsalted, pre-filled with legacy rows written
DIRECTLY to hbase-emu at their unsalted keys, then written THROUGH THE
PROXY (new keys, updates of legacy rows, tombstones, deletes, increments,
checkAndPut), must answer every point call, multi-row call and scan exactly
as an unsalted table 'ref' holding the same data answers directly.

Tables (each rule's physical placement is checked row by row, with the
rule and the salt computed here independently of the proxy):
  lg_last   16 byte buckets; keys whose part after the last '#' is >= "2"
            are new (the article's timestamp-at-the-end form); keys with
            no '#' are legacy
  lg_bytes  300 hex buckets, separator '-'; new when key[1:2] >= "a"
  lg_range  16 decimal buckets; keys in ["0", "u5") are legacy, which holds
            every salted physical key: clashes happen here, and are
            refused
The data set holds the scan oracle's keys (0x00/0xFF bytes, shared
prefixes, 1-byte keys) plus, for each table, legacy keys that look like
salted keys of that table (a valid salt of the bucket of what follows).
Random scans come from test_scan_oracle.py (every scannerOpen*, every
TScan field, reversed, batchSize, filters, PageFilter).

  /usr/bin/python3 tests/e2e/test_legacy.py --proxy BUILD/daemon/hbase-salt-proxy \\
      --emu BUILD/tests/emu/hbase-emu --pydir BUILD/thrift/py

Environment: LEGACY_SEED, LEGACY_SCANS (random scans per table, default
300), LEGACY_ONLY (scan numbers to replay), HSP_KEEP_LOGS=1.  --only
TABLE runs one table.
"""

import argparse
import os
import random
import shutil
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                '..', 'lib'))
import hsptest  # noqa: E402
import test_methods as tm  # noqa: E402  (the salt model)
import test_scan_oracle as so  # noqa: E402  (data, scans, oracle)

DEFAULT_SEED = 20250112
NROWS = 1500
# --backend-kind real: the one hbase-mini all tables share, 'ref' and the
# table made again before each; fewer random scans by default
REAL = None
REAL_SCANS = 40
# the rules are the proxy's own: on real HBase, the 'after' component
# (the article's form) and the range with its clashes judge what HBase
# answers; the bytes rule is the emulator runs'
REAL_TABLES = ('lg_last', 'lg_range')


def rule_last(k):
    i = k.rfind(b'#')
    return i < 0 or k[i + 1:] < b'2'


def rule_bytes(k):
    return len(k) < 2 or k[1:2] < b'a'


def rule_range(k):
    return b'0' <= k < b'u5'


# name, config lines, salt model, legacy rule (True: legacy)
TABLES = [
    ('lg_last', 'buckets = 16\nlegacy_component = after:#:last\n'
     'legacy_cutoff = 2\n', tm.Salt(16), rule_last),
    ('lg_bytes', 'buckets = 300\nsalt_format = hex\nsalt_separator = -\n'
     'legacy_component = bytes:1:1\nlegacy_cutoff = a\n',
     tm.Salt(300, 'hex', b'-'), rule_bytes),
    ('lg_range', 'buckets = 16\nsalt_format = decimal\n'
     'legacy_range_start = 0\nlegacy_range_stop = u5\n',
     tm.Salt(16, 'decimal'), rule_range),
]


def looks_salted(salt, k):
    """Whether k carries a valid salt of the bucket of what follows."""
    plen = len(salt.prefix(0))
    return len(k) >= plen and k[:plen] == salt.prefix(salt.bucket(k[plen:]))


def salted_form_of_new(salt, legacy, k):
    """Whether k reads as the physical row of a new key."""
    plen = len(salt.prefix(0))
    return looks_salted(salt, k) and not legacy(k[plen:])


def route(table, k):
    _, _, salt, legacy = table
    if not legacy(k):
        return 'salted'
    if salted_form_of_new(salt, legacy, k):
        return 'clash'
    return 'legacy'


def physical(table, k):
    return k if route(table, k) == 'legacy' else table[2].physical(k)


def make_keys(rnd):
    keys = set(so.gen_keys(rnd, NROWS))
    base = sorted(keys)
    for t in TABLES:
        # legacy keys that look salted, and new keys beside them
        olds = [k for k in base if t[3](k)]
        for k in rnd.sample(olds, 40):
            keys.add(t[2].physical(k))
        for k in rnd.sample(base, 20):
            keys.add(t[2].physical(k) + b'#9')
    # a key no table can store is left out of the data set (the clash
    # test below covers them)
    return sorted(k for k in keys
                  if all(route(t, k) != 'clash' for t in TABLES))


def make_rounds(rnd, keys):
    T = so.T
    columns = {}
    for k in keys:
        cols = set()
        for _ in range(rnd.randint(1, 5)):
            cols.add(rnd.choice(so.FAMILIES) + b':'
                     + rnd.choice(so.QUALIFIERS))
        columns[k] = sorted(cols)
    rounds = []
    for i, ts in enumerate(so.ROUND_TS):
        batch = []
        for k in keys:
            muts = [T.Mutation(column=c, value=so.gen_value(rnd))
                    for c in columns[k] if i == 0 or rnd.random() < 0.4]
            if muts:
                batch.append((k, muts))
        rounds.append((ts, batch))
        if ts == 3000:
            dels = [(k, [T.Mutation(isDelete=True, column=columns[k][0])])
                    for k in keys if rnd.random() < 0.05]
            rounds.append((so.DELETE_TS, dels))
    return rounds, columns


def write(c, table, ts, batch):
    T = so.T
    for i in range(0, len(batch), 300):
        c.mutateRowsTs(table, [T.BatchMutation(row=k, mutations=m)
                               for k, m in batch[i:i + 300]], ts, {})


class Check(object):
    def __init__(self):
        self.failures = 0
        self.compared = 0

    def same(self, what, a, b):
        self.compared += 1
        if a != b:
            self.failures += 1
            if self.failures <= 20:
                print('MISMATCH %s:\n  proxy:  %r\n  direct: %r'
                      % (what, a, b), flush=True)

    def true(self, what, cond):
        self.compared += 1
        if not cond:
            self.failures += 1
            print('FAILED %s' % what, flush=True)


_row_form = so.row_form


def row_form(r):
    """so.row_form with server-time stamps (writes that take the time of
    the call, a millisecond apart on the two sides) made equal."""
    now = 10 ** 12
    row, cols, scols = _row_form(r)
    if cols is not None:
        cols = [(k, v, 'now' if ts > now else ts) for k, v, ts in cols]
    if scols is not None:
        scols = [(k, v, 'now' if ts is not None and ts > now else ts)
                 for k, v, ts in scols]
    return (row, cols, scols)


so.row_form = row_form


def rows(res):
    if res[0] != 'ok':
        return res
    return ('ok', [row_form(r) for r in res[1]])


def cells(res):
    if res[0] != 'ok':
        return res
    return ('ok', [(c.value, 'now' if c.timestamp > 10 ** 12
                     else c.timestamp) for c in res[1]])


def point_calls(ck, via, direct, t, sample, absent):
    T = so.T
    name = t[0].encode()
    out = so.outcome
    for k in sample + absent:
        for c in via:
            ck.same('getRow %s %r' % (t[0], k),
                    rows(out(lambda: c.getRow(name, k, {}))),
                    rows(out(lambda: direct.getRow(b'ref', k, {}))))
        c = via[0]
        ck.same('getRowWithColumns %s %r' % (t[0], k),
                rows(out(lambda: c.getRowWithColumns(name, k, [b'a', b'b:q'],
                                                     {}))),
                rows(out(lambda: direct.getRowWithColumns(
                    b'ref', k, [b'a', b'b:q'], {}))))
        ck.same('getRowTs %s %r' % (t[0], k),
                rows(out(lambda: c.getRowTs(name, k, 2500, {}))),
                rows(out(lambda: direct.getRowTs(b'ref', k, 2500, {}))))
        for col in (b'a:', b'a:q', b'b:q1', b'c:x'):
            ck.same('get %s %r %r' % (t[0], k, col),
                    cells(out(lambda: c.get(name, k, col, {}))),
                    cells(out(lambda: direct.get(b'ref', k, col, {}))))
            ck.same('getVer %s %r %r' % (t[0], k, col),
                    cells(out(lambda: c.getVer(name, k, col, 3, {}))),
                    cells(out(lambda: direct.getVer(b'ref', k, col, 3, {}))))
    # multi-row reads split per row: legacy, new, absent, repeated
    rnd = random.Random(t[0])
    for _ in range(40):
        ks = rnd.sample(sample, 8) + rnd.sample(absent, 2)
        ks.append(ks[0])
        rnd.shuffle(ks)
        for c in via:
            ck.same('getRows %s %r' % (t[0], ks),
                    rows(out(lambda: c.getRows(name, ks, {}))),
                    rows(out(lambda: direct.getRows(b'ref', ks, {}))))
        ck.same('getRowsWithColumnsTs %s' % t[0],
                rows(out(lambda: via[1].getRowsWithColumnsTs(
                    name, ks, [b'a', b'c'], 3500, {}))),
                rows(out(lambda: direct.getRowsWithColumnsTs(
                    b'ref', ks, [b'a', b'c'], 3500, {}))))
    del T


def write_calls(ck, via, direct, t, sample):
    """The same writes on both sides: their answers must agree."""
    T = so.T
    name = t[0].encode()
    out = so.outcome
    rnd = random.Random('w' + t[0])
    for i, k in enumerate(rnd.sample(sample, 60)):
        c = via[i % 2]
        m = [T.Mutation(column=b'a:w', value=b'w%d' % i),
             T.Mutation(column=b'c:', value=b'z')]
        for fn in (lambda x, tb: x.mutateRow(tb, k, m, {}),
                   lambda x, tb: x.atomicIncrement(tb, k, b'b:n', 3),
                   lambda x, tb: x.checkAndPut(
                       tb, k, b'a:w', b'w%d' % i,
                       T.Mutation(column=b'b:ok', value=b'y'), {}),
                   lambda x, tb: x.checkAndPut(
                       tb, k, b'a:w', b'nope',
                       T.Mutation(column=b'b:no', value=b'y'), {}),
                   lambda x, tb: x.increment(T.TIncrement(
                       table=tb, row=k, column=b'b:i', ammount=2)),
                   lambda x, tb: x.deleteAll(tb, k, b'c:', {})):
            ck.same('write on %s %r' % (t[0], k),
                    out(lambda: fn(c, name)),
                    out(lambda: fn(direct, b'ref')))
    # a multi-row write of mixed keys, and whole-row deletes
    ks = rnd.sample(sample, 30)
    bm = [T.BatchMutation(row=k, mutations=[
        T.Mutation(column=b'b:m', value=k)]) for k in ks]
    ck.same('mutateRows %s' % t[0], out(lambda: via[0].mutateRows(name, bm,
                                                                   {})),
            out(lambda: direct.mutateRows(b'ref', bm, {})))
    for k in ks[:8]:
        ck.same('deleteAllRow %s %r' % (t[0], k),
                out(lambda: via[1].deleteAllRow(name, k, {})),
                out(lambda: direct.deleteAllRow(b'ref', k, {})))


def raw_rows(c, table):
    T = so.T
    sid = c.scannerOpenWithScan(table, T.TScan(), {})
    got = []
    while True:
        b = c.scannerGetList(sid, 1000)
        if not b:
            break
        got += [r.row for r in b]
    c.scannerClose(sid)
    return got


def placement(ck, direct, t):
    want = sorted(physical(t, k) for k in raw_rows(direct, b'ref'))
    have = raw_rows(direct, t[0].encode())
    ck.same('physical keys of %s (%d rows)' % (t[0], len(want)), have, want)
    nleg = sum(1 for k in raw_rows(direct, b'ref')
               if route(t, k) == 'legacy')
    ck.true('%s holds legacy (%d) and new rows' % (t[0], nleg),
            0 < nleg < len(want))


def full_scans(ck, via, direct, t):
    T = so.T
    name = t[0].encode()
    for kw in ({}, {'reversed': True}, {'batchSize': 2},
               {'reversed': True, 'batchSize': 1, 'caching': 3},
               {'filterString': b'PageFilter(37)'},
               {'filterString': b"PrefixFilter('u1') AND PageFilter(5)",
                'caching': 2},
               {'startRow': b'u3', 'stopRow': b'u7#'},
               {'startRow': b'u7#', 'stopRow': b'u3', 'reversed': True},
               {'filterString': b"RowFilter(=, 'regexstring:^u[0-9]+#1')"}):
        for c in via:
            sid = c.scannerOpenWithScan(name, T.TScan(**kw), {})
            did = direct.scannerOpenWithScan(b'ref', T.TScan(**kw), {})
            n = 0
            while True:
                a = [row_form(r) for r in c.scannerGetList(sid, 97)]
                b = [row_form(r) for r in direct.scannerGetList(did, 97)]
                ck.same('full scan of %s %r near row %d' % (t[0], kw, n),
                        a, b)
                if a != b or not b:
                    break
                n += len(b)
            c.scannerClose(sid)
            direct.scannerClose(did)


def clash(ck, via, direct, t):
    """A legacy key that reads as a new key's row cannot be stored."""
    T = so.T
    name = t[0].encode()
    out = so.outcome
    new = [b'zz%d' % i for i in range(5)]
    keys = [t[2].physical(k) for k in new]
    for k in keys:
        ck.true('%r is a clash of %s' % (k, t[0]), route(t, k) == 'clash')
        r = out(lambda: via[0].mutateRow(name, k, [T.Mutation(
            column=b'a:x', value=b'1')], {}))
        ck.true('mutateRow of clash %r refused: %r' % (k, r),
                r[0] == 'IllegalArgument' and 'cannot store' in r[1])
        ck.same('getRow of clash %r' % k,
                out(lambda: via[0].getRow(name, k, {})), ('ok', []))
    # the new keys themselves are stored, salted, and read back
    for k in new:
        via[0].mutateRow(name, k, [T.Mutation(column=b'a:x', value=k)], {})
        r = via[1].getRow(name, k, {})
        ck.same('getRow of new %r' % k, [x.row for x in r], [k])
    r = via[0].getRows(name, keys + new, {})
    ck.same('getRows with clashes', sorted(x.row for x in r), sorted(new))
    raw = set(raw_rows(direct, name))
    ck.true('new keys stored salted', all(p in raw for p in keys))
    for k in new:
        via[0].deleteAllRow(name, k, {})


def run_table(args, t, keys, rounds, seed, nscans, ck):
    """One table beside its own unsalted 'ref', on an emulator and a proxy
    of their own (the writes change both)."""
    T = so.T
    name = t[0].encode()
    t0 = time.time()
    workdir = tempfile.mkdtemp(prefix='hsp-e2e-legacy-')
    emu = RealTables(['ref', t[0]]) if REAL else \
        so.Emu(workdir, 'binary', 'buffered', ['ref', t[0]])
    proxy = None
    ok = False
    failed = ck.failures
    try:
        proxy = so.Proxy(workdir, emu.port, 'binary', 'buffered', 1000,
                         [(t[0], t[1])])
        direct = so.client(emu.port)
        via = [so.client(proxy.port, 'binary', 'buffered'),
               so.client(proxy.port, 'compact', 'framed')]
        for ts, batch in rounds:
            write(direct, b'ref', ts, batch)
        ts, first = rounds[0]
        # the rows the table held before its section: unsalted, direct
        write(direct, name, ts, [(k, m) for k, m in first
                                 if route(t, k) == 'legacy'])
        # then the proxy: new keys, updates, tombstones
        write(via[0], name, ts, [(k, m) for k, m in first
                                 if route(t, k) != 'legacy'])
        for ts, batch in rounds[1:]:
            write(via[0], name, ts, batch)

        absent = [b'', b'\x00\x00\x00', b'nope', b'u1#99999', b'\xff' * 5]
        if REAL:
            # an empty row sets HBase's own client retrying for minutes
            absent.remove(b'')
        rt = random.Random('%s:%s' % (seed, t[0]))
        leg = [k for k in keys if route(t, k) == 'legacy']
        new = [k for k in keys if route(t, k) == 'salted']
        looks = [k for k in leg if looks_salted(t[2], k)
                 or k[:1] in (b'\x00', b'\xff')]
        n = 30 if REAL else 60
        sample = (rt.sample(leg, n) + rt.sample(new, n)
                  + rt.sample(looks, min(20, len(looks))))
        placement(ck, direct, t)
        point_calls(ck, via, direct, t, sample, absent)
        write_calls(ck, via, direct, t, sample)
        point_calls(ck, via, direct, t, sample, absent)
        placement(ck, direct, t)
        full_scans(ck, via, direct, t)
        if t[0] == 'lg_range':
            clash(ck, via, direct, t)
        print('%s: %d legacy keys (%d look salted), %d new; point, '
              'multi-row and full-scan checks: %d failed so far, %.1f s'
              % (t[0], len(leg), len(looks), len(new), ck.failures,
                 time.time() - t0), flush=True)

        oracle = (RealOracle if REAL else so.Oracle)(
            seed, 0, sorted(set(raw_rows(direct, b'ref'))), via, direct,
            [(t[0], t[1])])
        only = os.environ.get('LEGACY_ONLY')
        for i in (range(nscans) if not only
                  else [int(x) for x in only.split(',')]):
            oracle.run(i)
            if not proxy.alive():
                raise AssertionError('the proxy died at scan %d' % i)
        print('%s: random scans: %d compared (%d with a filter, %d left '
              'out), %d rows, %d calls; refusals: %s; both failed alike: '
              '%d; mismatches: %d'
              % (t[0], oracle.scans, oracle.filtered,
                 getattr(oracle, 'skipped', 0), oracle.rows,
                 oracle.calls, ', '.join('%s=%d' % kv for kv in
                                         sorted(oracle.refusals.items()))
                 or 'none', oracle.both_failed, oracle.mismatches),
              flush=True)
        ok = ck.failures == failed and oracle.mismatches == 0 and \
            (oracle.scans > (nscans - getattr(oracle, 'skipped', 0)) // 2
             or only)
        del T
    finally:
        rc = proxy.stop() if proxy is not None and proxy.alive() else None
        emu.close()
        if rc not in (None, 0):
            print('proxy exit: %r' % (rc,))
            ok = False
        if ok and not os.environ.get('HSP_KEEP_LOGS'):
            shutil.rmtree(workdir, ignore_errors=True)
        else:
            print('logs kept in %s' % workdir)
    return ok


class RealOracle(so.Oracle):
    """The random scans real HBase answers within the test's time: a scan
    with both a batch size and a filter is left to the emulator, since
    with a filter that filters whole rows (PageFilter, SKIP, WHILE, ...)
    HBase's scanner throws IncompatibleFilterException at the first read,
    which its own client retries for over a minute a call."""

    skipped = 0

    def run(self, i):
        rnd = random.Random('%s:%d:scan:%d' % (self.seed, self.part, i))
        scan = so.Scan(rnd, self.keys, self.tables[i % len(self.tables)])
        t = getattr(scan, 'tscan', None) or {}
        if t.get('batchSize') and t.get('filterString'):
            self.skipped += 1
            return
        so.Oracle.run(self, i)


class RealTables(object):
    """The emulator's part played by the shared real HBase: the tables
    made again, empty, with the oracle's families (3 versions each)."""

    def __init__(self, tables):
        self.port = REAL.port
        c = so.client(self.port, timeout=120.0)
        have = set(c.getTableNames())
        for t in tables:
            if t.encode() in have:
                c.disableTable(t.encode())
                c.deleteTable(t.encode())
            c.createTable(t.encode(), [
                so.T.ColumnDescriptor(name=f + b':', maxVersions=3)
                for f in so.FAMILIES])
        c._trans.close()

    def close(self):
        pass


def main():
    global REAL
    ap = argparse.ArgumentParser()
    ap.add_argument('--proxy', required=True)
    ap.add_argument('--emu', required=True)
    ap.add_argument('--pydir', required=True)
    ap.add_argument('--only', help='one table by name')
    hsptest.add_backend_args(ap)
    args = ap.parse_args()
    so.ARGS = tm.ARGS = args
    hsptest.import_thrift(args.pydir, so)
    seed = os.environ.get('LEGACY_SEED', str(DEFAULT_SEED))
    nscans = int(os.environ.get('LEGACY_SCANS', '300'))
    if args.backend_kind == 'real':
        nscans = int(os.environ.get('LEGACY_SCANS', str(REAL_SCANS)))
        workdir = tempfile.mkdtemp(prefix='hsp-e2e-legacy-real-')
        REAL = hsptest.start_backend('real', workdir)
    ok = False
    try:
        ok = run_all(args, seed, nscans)
    finally:
        if REAL:
            REAL.close()
            if ok and not os.environ.get('HSP_KEEP_LOGS'):
                shutil.rmtree(workdir, ignore_errors=True)
            else:
                print('hbase-mini log in ' + REAL.log_path)
    print('OK' if ok else 'FAILED')
    sys.exit(0 if ok else 1)


def run_all(args, seed, nscans):
    rnd = random.Random('%s:data' % seed)
    keys = make_keys(rnd)
    rounds, _ = make_rounds(rnd, keys)
    ck = Check()
    ok = True
    for t in TABLES:
        if REAL and args.only is None and t[0] not in REAL_TABLES:
            continue
        if args.only in (None, t[0]):
            ok = run_table(args, t, keys, rounds, seed, nscans, ck) and ok
    print('%d checks, %d failed' % (ck.compared, ck.failures))
    return ok


if __name__ == '__main__':
    main()
