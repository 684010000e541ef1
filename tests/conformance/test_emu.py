#!/usr/bin/python3
"""Conformance suite: holds hbase-emu to HBase's documented Thrift1 behaviour.

Run (only /usr/bin/python3 has python3-thrift):

  /usr/bin/python3 tests/conformance/test_emu.py --emu BUILD/tests/emu/hbase-emu \\
      --pydir BUILD/thrift/py [--protocol binary|compact] \\
      [--transport buffered|framed] [--soak | --soak-only] [unittest args]

or with env vars HBASE_EMU, THRIFT_PY_DIR, CONFORMANCE_PROTOCOL,
CONFORMANCE_TRANSPORT (CONFORMANCE_SOAK_SECONDS for the soak, default 10).

Expected results come from model.py (an independent model of HBase
semantics) or, where the reference states a value literally, from the
reference (/work/shared/reference/hbase-thrift.md).
"""

import argparse
import os
import random
import socket
import struct
import sys
import threading
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import harness  # noqa: E402
import hsptest  # noqa: E402
from harness import CFG, Emu, Conn, fmt_call, list_diff, short  # noqa: E402
import model as M  # noqa: E402

MAIN = None         # the shared emulator for most tests
H = harness         # H.T, H.Hbase, ... after import_thrift()
NINES = b'99999999999999'

# Set by .ci/quickstart's sanitizer pass: ASan's quarantine holds freed
# memory back from the allocator, so RSS there measures allocation volume,
# not what is live; the RSS-size checks are skipped under it (everything
# else they sit beside still runs).
UNDER_ASAN = os.environ.get('HSP_UNDER_ASAN') == '1'


def setUpModule():
    global MAIN
    extra = []
    if CFG['transport'] == 'framed':
        extra += ['--max-frame-mb', '2']
    MAIN = Emu(*extra)


def tearDownModule():
    if MAIN is not None:
        alive = MAIN.alive()
        tail = MAIN.log_tail()
        MAIN.stop()
        if not alive:
            raise AssertionError('main hbase-emu died during the run '
                                 '(rc=%s):\n%s' % (MAIN.proc.returncode, tail))


# ---------------------------------------------------------------------------

class Base(unittest.TestCase):
    """Common helpers: recorded calls, tables mirrored in a model, checks."""

    _seq = 0
    emu_attr = None  # name of a class attribute holding a dedicated Emu

    @classmethod
    def emu(cls):
        return getattr(cls, cls.emu_attr) if cls.emu_attr else MAIN

    @classmethod
    def setUpClass(cls):
        cls.model = M.Model()
        cls.conn = Conn(cls.emu())

    @classmethod
    def tearDownClass(cls):
        cls.conn.close()

    def setUp(self):
        self.last = None

    # ---- calls ----------------------------------------------------------
    def call(self, name, *args, conn=None):
        c = conn or self.conn
        self.last = fmt_call(name, args)
        # Generated Thrift exceptions are immutable: unittest cannot attach
        # a traceback to them, so fail outside the except clause.
        err = None
        try:
            return getattr(c, name)(*args)
        except (H.T.IOError, H.T.IllegalArgument, H.T.AlreadyExists) as e:
            err = '%s raised %s(%s)' % (self.last, type(e).__name__,
                                        short(e.message, 400))
        except H.TApplicationException as e:
            err = ('%s raised TApplicationException(type=%s, %s)'
                   % (self.last, e.type, short(e.message)))
        except Exception as e:  # transport errors
            err = '%s failed: %s: %s' % (self.last, type(e).__name__, e)
        self.fail(err)

    def call_raises(self, exc, name, *args, conn=None, contains=None):
        """Asserts the call raises the declared exception `exc`."""
        c = conn or self.conn
        self.last = fmt_call(name, args)
        err = None
        try:
            got = getattr(c, name)(*args)
            err = ('%s: expected %s, got a normal return %s'
                   % (self.last, exc.__name__, short(got)))
        except exc as e:
            msg = getattr(e, 'message', '') or ''
            text = msg if isinstance(msg, str) else msg.decode('latin-1')
            if contains is not None and contains not in text:
                err = ('%s: %s message should mention %r, got %s'
                       % (self.last, exc.__name__, contains, short(msg, 600)))
            else:
                return e
        except Exception as e:
            err = ('%s: expected %s, got %s: %s'
                   % (self.last, exc.__name__, type(e).__name__,
                      short(getattr(e, 'message', str(e)), 400)))
        self.fail(err)

    def eq(self, got, exp, what=''):
        if got != exp:
            detail = list_diff(exp, got) if isinstance(exp, list) and \
                isinstance(got, list) else ''
            self.fail('%s%s:\n  expected %s\n  got      %s%s'
                      % (self.last, (' [' + what + ']') if what else '',
                         short(exp, 1500), short(got, 1500),
                         ('\n  ' + detail) if detail else ''))

    # ---- tables ---------------------------------------------------------
    @classmethod
    def tname(cls, hint):
        Base._seq += 1
        return ('c%d_%s' % (Base._seq, hint))[:60].encode()

    def mk_table(self, hint='t', families=None, conn=None):
        """Creates a table on the emulator and in the model."""
        families = families or {b'cf': 3}
        name = self.tname(hint)
        cds = [H.T.ColumnDescriptor(name=f + b':', maxVersions=v)
               for f, v in families.items()]
        self.call('createTable', name, cds, conn=conn)
        return self.model.create(name, families)

    def load(self, mt, cells, conn=None):
        """cells: [(row, column, ts, value)] written with mutateRowsTs
        (one call per timestamp) and mirrored in the model."""
        by_ts = {}
        for row, col, ts, val in cells:
            by_ts.setdefault(ts, {}).setdefault(row, []).append((col, val))
            mt.put_column(row, col, ts, val)
        for ts in sorted(by_ts):
            bms = [H.T.BatchMutation(row=r, mutations=[
                H.T.Mutation(isDelete=False, column=c, value=v)
                for c, v in muts]) for r, muts in by_ts[ts].items()]
            self.call('mutateRowsTs', mt.name, bms, ts, {}, conn=conn)

    # ---- result normalisation --------------------------------------------
    def norm_rr(self, rr, sorted_=False):
        """TRowResult -> (row, [(column, ts, value)]), checking that exactly
        one of columns / sortedColumns is set (reference section 4)."""
        if sorted_:
            if rr.columns is not None:
                self.fail('%s: TRowResult for row %r has columns set although '
                          'sortColumns=true (only sortedColumns may be set)'
                          % (self.last, rr.row))
            if rr.sortedColumns is None:
                self.fail('%s: TRowResult for row %r lacks sortedColumns '
                          'although sortColumns=true' % (self.last, rr.row))
            return (rr.row, [(tc.columnName, tc.cell.timestamp, tc.cell.value)
                             for tc in rr.sortedColumns])
        if rr.sortedColumns is not None:
            self.fail('%s: TRowResult for row %r has sortedColumns set '
                      'although sortColumns was not requested (only columns '
                      'may be set)' % (self.last, rr.row))
        if rr.columns is None:
            self.fail('%s: TRowResult for row %r lacks columns'
                      % (self.last, rr.row))
        return (rr.row, sorted((k, v.timestamp, v.value)
                               for k, v in rr.columns.items()))

    @staticmethod
    def exp_rows(rows, sorted_=False):
        """Model [(row, [Cell])] -> the normalised form of norm_rr."""
        out = []
        for r, cells in rows:
            cs = [(c.column, c.ts, c.value) for c in cells]
            out.append((r, cs if sorted_ else sorted(cs)))
        return out

    def got_rows(self, rrs, sorted_=False):
        return [self.norm_rr(rr, sorted_) for rr in rrs]

    @staticmethod
    def exp_cells(cells):
        return [(c.ts, c.value) for c in cells]

    @staticmethod
    def got_cells(tcells):
        return [(c.timestamp, c.value) for c in tcells]

    # ---- scanners -------------------------------------------------------
    def drain(self, sid, n=1000, conn=None, close=True):
        out = []
        for _ in range(100000):
            batch = self.call('scannerGetList', sid, n, conn=conn)
            if not batch:
                break
            out.extend(batch)
        else:
            self.fail('scanner %d never returned an empty list' % sid)
        if close:
            self.call('scannerClose', sid, conn=conn)
        return out

    def scan_with(self, mt, scan, expected, sorted_=False, n=1000):
        sid = self.call('scannerOpenWithScan', mt.name, scan, {})
        ctx = fmt_call('scannerOpenWithScan', (mt.name, scan))
        got = self.got_rows(self.drain(sid, n), sorted_)
        self.last = ctx
        self.eq(got, self.exp_rows(expected, sorted_))
        return got

    def nontrivial(self, subset, full, what):
        """Guards against vacuous expectations in the test itself."""
        self.assertTrue(subset, 'test bug: empty expectation for ' + what)
        self.assertNotEqual(self.exp_rows(subset), self.exp_rows(full),
                            'test bug: expectation equals everything: ' + what)


# ---------------------------------------------------------------------------
# A fixed data set with awkward keys, several families and versions.

FIX_KEYS = [b'\x00', b'\x00\x00', b'\x00\x01', b'\x01', b'a', b'a\x00',
            b'a\xff', b'ab', b'abc', b'abd', b'b', b'ba', b'\x7f', b'\x80',
            b'\xfe\xff', b'\xff', b'\xff\x00', b'\xff\xff', b'row1',
            b'row10', b'row2', b"it's", b'A', b'Ab']
FIX_QUALS = [b'a', b'b', b'ab', b'c1', b'c2', b'col', b'\x00', b'\xff', b'']
FIX_VALUES = [b'x', b'apple', b'Apple pie', b'banana', b'', b'\x00\xff',
              b"it's", b'0', b'1', b'zz', b'pineapple', b'x' * 40]


def fixture_cells(seed=20240501):
    """Each (row, column, ts) once; at most 3 versions per column (the
    families' maxVersions), so time-range reads are unambiguous."""
    rng = random.Random(seed)
    cols = {}
    for i, k in enumerate(FIX_KEYS):
        for _ in range(rng.randint(1, 6)):
            fam = rng.choice([b'cf', b'cf', b'cf2'])
            col = fam + b':' + rng.choice(FIX_QUALS)
            if col == b'cf:a':
                continue  # reserved for the SingleColumnValueFilter column
            nv = rng.choice([1, 1, 2, 3])
            vers = cols.setdefault((k, col), {})
            for ts in sorted(rng.sample([100, 200, 300], nv)):
                vers[ts] = rng.choice(FIX_VALUES)
        # a column every row has, and one only some rows have
        cols[(k, b'cf:all')] = {100 + i: b'v%03d' % i}
        if i % 3 == 0:
            cols[(k, b'cf:a')] = {250: b'scv%d' % (i % 2)}
    return [(k, col, ts, v) for (k, col), vers in sorted(cols.items())
            for ts, v in sorted(vers.items())]


class Fixture(Base):
    """Classes that read the shared fixture table."""

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        helper = cls('setUp')  # to reuse instance helpers at class level
        helper.setUp()
        cls.fx = helper.mk_table('fx', {b'cf': 3, b'cf2': 3})
        helper.load(cls.fx, fixture_cells())


# ---------------------------------------------------------------------------

class T01Admin(Base):
    """Table administration and metadata calls."""

    def test_server_type_and_cluster_id(self):
        self.eq(self.call('getThriftServerType'), H.T.TThriftServerType.ONE)
        cid = self.call('getClusterId')
        self.assertTrue(isinstance(cid, str) and cid,
                        'getClusterId(): expected a non-empty string, got %r'
                        % (cid,))

    def test_create_list_describe_delete(self):
        name = self.tname('adm')
        cds = [H.T.ColumnDescriptor(name=b'f1:', maxVersions=5),
               H.T.ColumnDescriptor(name=b'f2', maxVersions=1)]
        self.call('createTable', name, cds)
        names = self.call('getTableNames')
        self.assertIn(name, names, '%s: new table %r missing from %r'
                      % (self.last, name, names))
        self.assertEqual(len(names), len(set(names)),
                         'getTableNames() returned duplicates: %r' % names)
        en = self.call('getTableNamesWithIsTableEnabled')
        self.eq(en.get(name), True, 'enabled flag of new table')
        self.eq(sorted(en), sorted(names), 'same names as getTableNames')
        cd = self.call('getColumnDescriptors', name)
        self.eq(sorted(cd), [b'f1:', b'f2:'], 'family keys carry ":"')
        self.eq(cd[b'f1:'].name, b'f1:', 'ColumnDescriptor.name')
        self.eq(cd[b'f1:'].maxVersions, 5, 'maxVersions of f1')
        self.eq(cd[b'f2:'].maxVersions, 1, 'maxVersions of f2 (no ":")')
        self.eq(self.call('isTableEnabled', name), True)
        # AlreadyExists
        self.call_raises(H.T.AlreadyExists, 'createTable', name, cds)
        # deleteTable of an enabled table: HBase requires disable first
        self.call_raises(H.T.IOError, 'deleteTable', name)
        self.assertIn(name, self.call('getTableNames'),
                      'failed deleteTable must not drop the table')
        self.call('disableTable', name)
        self.eq(self.call('isTableEnabled', name), False)
        self.eq(self.call('getTableNamesWithIsTableEnabled').get(name), False,
                'getTableNamesWithIsTableEnabled after disable')
        self.call('deleteTable', name)
        self.assertNotIn(name, self.call('getTableNames'),
                         'deleted table still listed')
        self.call_raises(H.T.IOError, 'deleteTable', name)
        self.call_raises(H.T.IOError, 'getColumnDescriptors', name)
        self.eq(self.call('getTableRegions', name), [],
                'getTableRegions of a missing table is an empty list')
        # a name can be reused after delete, empty
        self.call('createTable', name, cds)
        self.eq(self.call('getRow', name, b'r', {}), [])

    def test_disabled_table_refuses_data_calls(self):
        mt = self.mk_table('dis')
        self.load(mt, [(b'r1', b'cf:q', 10, b'v')])
        self.call('disableTable', mt.name)
        # HBase refuses data operations on a disabled table
        # (TableNotEnabledException -> IOError).
        bm = [H.T.BatchMutation(row=b'r2', mutations=[
            H.T.Mutation(column=b'cf:q', value=b'v')])]
        for name, args in [
                ('get', (mt.name, b'r1', b'cf:q', {})),
                ('getRow', (mt.name, b'r1', {})),
                ('getRows', (mt.name, [b'r1'], {})),
                ('mutateRow', (mt.name, b'r1', [H.T.Mutation(
                    column=b'cf:q', value=b'x')], {})),
                ('mutateRows', (mt.name, bm, {})),
                ('atomicIncrement', (mt.name, b'c', b'cf:n', 1)),
                ('deleteAllRow', (mt.name, b'r1', {})),
                ('scannerOpen', (mt.name, b'', [], {})),
                ('scannerOpenWithScan', (mt.name, H.T.TScan(), {}))]:
            self.call_raises(H.T.IOError, name, *args)
        # disabling again: TableNotEnabledException
        self.call_raises(H.T.IOError, 'disableTable', mt.name)
        # metadata still works on a disabled table
        self.eq(sorted(self.call('getColumnDescriptors', mt.name)), [b'cf:'])
        self.call('enableTable', mt.name)
        self.eq(self.call('isTableEnabled', mt.name), True)
        # enabling an enabled table: TableNotDisabledException
        self.call_raises(H.T.IOError, 'enableTable', mt.name)
        got = self.got_cells(self.call('get', mt.name, b'r1', b'cf:q', {}))
        self.eq(got, [(10, b'v')], 'data survives disable/enable')

    def test_unknown_table_is_ioerror(self):
        t = b'no_such_table_xyz'
        for name, args in [
                ('get', (t, b'r', b'cf:q', {})),
                ('getVer', (t, b'r', b'cf:q', 3, {})),
                ('getRow', (t, b'r', {})),
                # (getRows: a batch, retryable: T10HeldToReal)
                ('mutateRow', (t, b'r', [H.T.Mutation(
                    column=b'cf:q', value=b'v')], {})),
                ('atomicIncrement', (t, b'r', b'cf:q', 1)),
                ('deleteAllRow', (t, b'r', {})),
                ('scannerOpen', (t, b'', [], {})),
                ('scannerOpenWithScan', (t, H.T.TScan(), {})),
                ('isTableEnabled', (t,)),
                ('enableTable', (t,)),
                ('disableTable', (t,)),
                ('getColumnDescriptors', (t,)),
                ('compact', (t,)),
                ('majorCompact', (t,)),
                ('increment', (H.T.TIncrement(table=t, row=b'r',
                                              column=b'cf:q', ammount=1),)),
                ('append', (H.T.TAppend(table=t, row=b'r', columns=[b'cf:q'],
                                        values=[b'v']),))]:
            e = self.call_raises(H.T.IOError, name, *args)
            # TableNotFoundException is a DoNotRetryIOException: newer
            # servers send canRetry=false, older ones omit the field.
            self.assertIn(e.canRetry, (False, None),
                          '%s: IOError.canRetry for a missing table: expected '
                          'false (DoNotRetryIOException) or unset, got %r'
                          % (self.last, e.canRetry))

    def test_unknown_family_is_ioerror(self):
        mt = self.mk_table('fam')
        # NoSuchColumnFamilyException is an IOException -> IOError.
        self.call_raises(H.T.IOError, 'mutateRow', mt.name, b'r', [
            H.T.Mutation(column=b'nofam:q', value=b'v')], {})
        self.call_raises(H.T.IOError, 'mutateRows', mt.name, [
            H.T.BatchMutation(row=b'r', mutations=[
                H.T.Mutation(column=b'nofam:q', value=b'v')])], {})
        self.call_raises(H.T.IOError, 'get', mt.name, b'r', b'nofam:q', {})
        self.call_raises(H.T.IOError, 'getRowWithColumns', mt.name, b'r',
                         [b'nofam:q'], {})
        self.call_raises(H.T.IOError, 'scannerOpen', mt.name, b'', [b'nofam'],
                         {})

    def test_regions_default_table(self):
        mt = self.mk_table('reg')
        regs = self.call('getTableRegions', mt.name)
        check_regions(self, mt.name, regs)
        # getRegionInfo takes a meta row "table,row,NINES"
        ri = self.call('getRegionInfo', mt.name + b',somerow,' + NINES)
        self.assertTrue(ri.name.startswith(mt.name + b','),
                        '%s: region name %r should start with %r'
                        % (self.last, ri.name, mt.name + b','))
        self.assertTrue(ri.startKey <= b'somerow' and
                        (ri.endKey == b'' or b'somerow' < ri.endKey),
                        '%s: region [%r, %r) does not contain the row'
                        % (self.last, ri.startKey, ri.endKey))

    def test_compact(self):
        mt = self.mk_table('cmp')
        self.load(mt, [(b'r', b'cf:q', 1, b'a'), (b'r', b'cf:q', 2, b'b')])
        self.call('compact', mt.name)
        self.call('majorCompact', mt.name)
        regs = self.call('getTableRegions', mt.name)
        if regs:
            # tableNameOrRegionName: a region name works too
            self.call('compact', regs[0].name)
            self.call('majorCompact', regs[0].name)
        got = self.got_cells(self.call('getVer', mt.name, b'r', b'cf:q', 5, {}))
        self.eq(got, self.exp_cells(mt.cells(b'r', [b'cf:q'], versions=5)),
                'data after compactions')

    def test_grant_revoke(self):
        # Without an AccessController HBase answers IOError; with one, true.
        # Either is conforming; anything else (TApplicationException, broken
        # connection) is not.
        mt = self.mk_table('acl')
        for name in ('grant', 'revoke'):
            ace = H.T.TAccessControlEntity(
                username='bob', scope=H.T.TPermissionScope.TABLE,
                actions='R', tableName=mt.name)
            self.last = fmt_call(name, (ace,))
            err = r = None
            try:
                r = getattr(self.conn, name)(ace)
            except H.T.IOError:
                r = True
            except Exception as e:
                err = ('%s: expected True or IOError, got %s: %s'
                       % (self.last, type(e).__name__, e))
            if err:
                self.fail(err)
            self.eq(r, True, 'grant/revoke return value')
        self.eq(self.call('getThriftServerType'), H.T.TThriftServerType.ONE,
                'connection usable after grant/revoke')


def check_regions(tc, table, regs, n=None):
    """Regions cover the key space contiguously, in order."""
    ctx = fmt_call('getTableRegions', (table,))
    tc.assertTrue(regs, '%s: expected at least one region' % ctx)
    if n is not None:
        tc.assertEqual(len(regs), n, '%s: expected %d regions, got %d: %s'
                       % (ctx, n, len(regs),
                          short([(r.startKey, r.endKey) for r in regs])))
    bounds = [(r.startKey, r.endKey) for r in regs]
    tc.assertEqual(regs[0].startKey, b'',
                   '%s: first region must start at "": %s' % (ctx, bounds))
    tc.assertEqual(regs[-1].endKey, b'',
                   '%s: last region must end at "": %s' % (ctx, bounds))
    for a, b in zip(regs, regs[1:]):
        tc.assertEqual(a.endKey, b.startKey,
                       '%s: regions not contiguous: %s' % (ctx, bounds))
        tc.assertLess(a.startKey, b.startKey,
                      '%s: regions not in key order: %s' % (ctx, bounds))
    for r in regs:
        tc.assertTrue(r.name.startswith(table + b','),
                      '%s: region name %r should be "table,startKey,id..."'
                      % (ctx, r.name))
        tc.assertEqual(r.version, 1, '%s: TRegionInfo.version: expected 1 '
                       '(reference 1.2), got %r' % (ctx, r.version))
    tc.assertEqual(len({r.name for r in regs}), len(regs),
                   '%s: duplicate region names' % ctx)


# ---------------------------------------------------------------------------

class T02Reads(Fixture):
    """get/getVer/getVerTs and getRow*/getRows* against the model."""

    def test_get_getver_getverts(self):
        fx = self.fx
        checked = 0
        for row in FIX_KEYS:
            cols = sorted({c.column for c in fx.cells(row, versions=3)})
            for col in cols + [b'cf:missing']:
                got = self.got_cells(self.call('get', fx.name, row, col, {}))
                self.eq(got, self.exp_cells(fx.cells(row, [col])))
                for nv in (1, 2, 10):
                    got = self.got_cells(self.call('getVer', fx.name, row, col,
                                                   nv, {}))
                    self.eq(got, self.exp_cells(fx.cells(row, [col],
                                                         versions=nv)))
                for ts in (100, 101, 200, 300, 301, LATE):
                    got = self.got_cells(self.call('getVerTs', fx.name, row,
                                                   col, ts, 10, {}))
                    self.eq(got, self.exp_cells(fx.cells(row, [col], ts=ts,
                                                         versions=10)),
                            'getVerTs upper bound is exclusive')
                checked += 1
        self.assertGreater(checked, 40)

    def test_get_family_column(self):
        # A column without qualifier selects the whole family.
        fx = self.fx
        for row in FIX_KEYS[:8]:
            got = self.call('get', fx.name, row, b'cf2', {})
            exp = fx.cells(row, [b'cf2'])
            self.eq([(c.timestamp, c.value) for c in got],
                    self.exp_cells(exp), 'get with family-only column')

    def test_getver_respects_family_max_versions(self):
        mt = self.mk_table('mv', {b'one': 1, b'two': 2})
        self.load(mt, [(b'r', b'one:q', ts, b'v%d' % ts) for ts in (1, 2, 3)] +
                  [(b'r', b'two:q', ts, b'v%d' % ts) for ts in (1, 2, 3)])
        for col in (b'one:q', b'two:q'):
            got = self.got_cells(self.call('getVer', mt.name, b'r', col, 10,
                                           {}))
            self.eq(got, self.exp_cells(mt.cells(b'r', [col], versions=10)),
                    'family maxVersions caps versions')

    def test_same_timestamp_overwrites(self):
        mt = self.mk_table('ow')
        self.load(mt, [(b'r', b'cf:q', 5, b'first')])
        self.load(mt, [(b'r', b'cf:q', 5, b'second')])
        got = self.got_cells(self.call('getVer', mt.name, b'r', b'cf:q', 10,
                                       {}))
        self.eq(got, [(5, b'second')], 'a put at an existing timestamp '
                'replaces the value')

    def test_getrow_variants(self):
        fx = self.fx
        colsets = [None, [], [b'cf2'], [b'cf:all', b'cf2:a'],
                   [b'cf:a', b'cf:\xff', b'cf:']]
        for row in FIX_KEYS + [b'missing', b'a\x00\x00']:
            exp = self.exp_rows([(row, fx.cells(row))]) \
                if fx.cells(row) else []
            self.eq(self.got_rows(self.call('getRow', fx.name, row, {})), exp)
            for ts in (101, 200, 301):
                cells = fx.cells(row, ts=ts)
                self.eq(self.got_rows(self.call('getRowTs', fx.name, row, ts,
                                                {})),
                        self.exp_rows([(row, cells)]) if cells else [],
                        'getRowTs: time range [0, ts)')
            for cols in colsets:
                cells = fx.cells(row, cols)
                self.eq(self.got_rows(self.call('getRowWithColumns', fx.name,
                                                row, cols, {})),
                        self.exp_rows([(row, cells)]) if cells else [])
                cells = fx.cells(row, cols, ts=200)
                self.eq(self.got_rows(self.call('getRowWithColumnsTs', fx.name,
                                                row, cols, 200, {})),
                        self.exp_rows([(row, cells)]) if cells else [])

    def test_same_family_column_order(self):
        # Get.addFamily then addColumn narrows the family to the column;
        # addColumn then addFamily widens it again (applied in order).
        fx = self.fx
        for cols in ([b'cf', b'cf:all'], [b'cf:all', b'cf'],
                     [b'cf2', b'cf:all', b'cf2:b']):
            for row in (b'a', b'ab', b'\x00', b'row1'):
                cells = fx.cells(row, cols)
                self.eq(self.got_rows(self.call('getRowWithColumns', fx.name,
                                                row, cols, {})),
                        self.exp_rows([(row, cells)]) if cells else [])
            exp = fx.scan(columns=cols)
            self.scan_with(fx, H.T.TScan(columns=cols), exp)

    def test_getrows_variants(self):
        fx = self.fx
        req = [b'b', b'missing1', b'\x00', b'a\xff', b'b', b'\xff\xff',
               b'zzz', b'\x00', b'ab']

        def exp(cols=None, ts=None):
            out = []
            for r in req:  # request order, missing skipped, dups kept
                cells = fx.cells(r, cols, ts)
                if cells:
                    out.append((r, cells))
            return self.exp_rows(out)

        self.eq(self.got_rows(self.call('getRows', fx.name, req, {})), exp(),
                'getRows: request order, missing rows omitted, dups kept')
        self.eq(self.got_rows(self.call('getRowsTs', fx.name, req, 200, {})),
                exp(ts=200))
        cols = [b'cf2', b'cf:all']
        self.eq(self.got_rows(self.call('getRowsWithColumns', fx.name, req,
                                        cols, {})), exp(cols))
        self.eq(self.got_rows(self.call('getRowsWithColumnsTs', fx.name, req,
                                        cols, 250, {})), exp(cols, 250))
        self.eq(self.call('getRows', fx.name, [], {}), [], 'no rows asked')
        self.eq(self.call('getRows', fx.name, [b'nope', b'nada'], {}), [],
                'only missing rows')

    def test_columns_map_one_version(self):
        # Thrift1 reads fetch one version; columns map holds it once.
        fx = self.fx
        for row in FIX_KEYS:
            rr = self.call('getRow', fx.name, row, {})
            self.eq(len(rr), 1)
            exp = {c.column: (c.ts, c.value) for c in fx.cells(row)}
            got = {k: (v.timestamp, v.value) for k, v in rr[0].columns.items()}
            self.eq(got, exp, 'newest version per column')

    def test_large_value_roundtrip(self):
        mt = self.mk_table('big')
        val = bytes(random.Random(7).getrandbits(8) for _ in range(1500000))
        self.load(mt, [(b'r', b'cf:big', 9, val)])
        got = self.call('get', mt.name, b'r', b'cf:big', {})
        self.assertTrue(len(got) == 1 and got[0].value == val,
                        '%s: 1.5 MB value did not round-trip (got %d cells, '
                        'len %s)' % (self.last, len(got),
                                     len(got[0].value) if got else None))


LATE = 1 << 62


# ---------------------------------------------------------------------------

class T03Writes(Base):
    """mutateRow(s)(Ts), deletes, counters, append, checkAndPut."""

    def check_row(self, mt, row, what=''):
        for col in sorted({c.column for c in mt.cells(row, versions=10)}) + \
                [b'cf:zz']:
            got = self.got_cells(self.call('getVer', mt.name, row, col, 10,
                                           {}))
            self.eq(got, self.exp_cells(mt.cells(row, [col], versions=10)),
                    what)
        cells = mt.cells(row)
        self.eq(self.got_rows(self.call('getRow', mt.name, row, {})),
                self.exp_rows([(row, cells)]) if cells else [], what)

    def test_mutaterowts_put_and_delete(self):
        mt = self.mk_table('mr', {b'cf': 3, b'cg': 3})
        self.load(mt, [(b'r', b'cf:a', t, b'a%d' % t) for t in (10, 20, 30)] +
                  [(b'r', b'cf:b', 10, b'b'), (b'r', b'cg:x', 10, b'x'),
                   (b'r', b'cg:y', 20, b'y')])
        # delete cf:a versions <= 20, delete family cg <= 15, put cf:c at 25
        muts = [H.T.Mutation(isDelete=True, column=b'cf:a'),
                H.T.Mutation(isDelete=True, column=b'cg'),
                H.T.Mutation(column=b'cf:c', value=b'c25')]
        self.call('mutateRowTs', mt.name, b'r', muts, 20, {})
        mt.delete_spec(b'r', b'cf:a', 20)
        mt.delete_spec(b'r', b'cg', 20)
        mt.put_column(b'r', b'cf:c', 20, b'c25')
        self.check_row(mt, b'r', 'after mutateRowTs')

    def test_mutaterow_now_timestamps(self):
        mt = self.mk_table('mrn')
        t0 = int(time.time() * 1000)
        self.call('mutateRow', mt.name, b'r', [
            H.T.Mutation(column=b'cf:a', value=b'1'),
            H.T.Mutation(column=b'cf:b', value=b'2', writeToWAL=False)], {})
        t1 = int(time.time() * 1000)
        rr = self.call('getRow', mt.name, b'r', {})
        self.eq(sorted((k, v.value) for k, v in rr[0].columns.items()),
                [(b'cf:a', b'1'), (b'cf:b', b'2')])
        for k, v in rr[0].columns.items():
            self.assertTrue(t0 - 5000 <= v.timestamp <= t1 + 5000,
                            '%s: timestamp of %r = %d is not the server\'s '
                            'current time in ms (%d..%d)'
                            % (self.last, k, v.timestamp, t0, t1))
        # delete one column (LATEST_TIMESTAMP), put another
        self.call('mutateRow', mt.name, b'r', [
            H.T.Mutation(isDelete=True, column=b'cf:a'),
            H.T.Mutation(column=b'cf:c', value=b'3')], {})
        rr = self.call('getRow', mt.name, b'r', {})
        self.eq(sorted((k, v.value) for k, v in rr[0].columns.items()),
                [(b'cf:b', b'2'), (b'cf:c', b'3')])

    def test_mutaterow_put_without_qualifier_ignored(self):
        # Reference 1.4: ignored (with a warning) in mutateRow.
        mt = self.mk_table('nq')
        self.call('mutateRowTs', mt.name, b'r', [
            H.T.Mutation(column=b'cf', value=b'bad'),
            H.T.Mutation(column=b'cf:ok', value=b'good')], 7, {})
        mt.put_column(b'r', b'cf:ok', 7, b'good')
        self.check_row(mt, b'r', 'family-only put ignored by mutateRow')

    def test_mutaterows_put_without_qualifier_illegal(self):
        # Reference 1.4: IllegalArgument "Invalid famAndQf provided."
        mt = self.mk_table('nq2')
        for name, extra in (('mutateRows', ()), ('mutateRowsTs', (5,))):
            self.call_raises(H.T.IllegalArgument, name, mt.name, [
                H.T.BatchMutation(row=b'r', mutations=[
                    H.T.Mutation(column=b'cf', value=b'bad')])], *extra, {})

    def test_mutaterows_many_rows(self):
        mt = self.mk_table('mrs', {b'cf': 3, b'cg': 2})
        rows = [b'r%02d' % i for i in range(20)]
        self.load(mt, [(r, b'cf:a', 10, r + b'a') for r in rows] +
                  [(r, b'cg:b', 10, r + b'b') for r in rows])
        bms = []
        for i, r in enumerate(rows):
            if i % 3 == 0:
                bms.append(H.T.BatchMutation(row=r, mutations=[
                    H.T.Mutation(isDelete=True, column=b'cg')]))
                mt.delete_spec(r, b'cg', 15)
            elif i % 3 == 1:
                bms.append(H.T.BatchMutation(row=r, mutations=[
                    H.T.Mutation(isDelete=True, column=b'cf:a'),
                    H.T.Mutation(column=b'cg:c', value=b'new')]))
                mt.delete_spec(r, b'cf:a', 15)
                mt.put_column(r, b'cg:c', 15, b'new')
            else:
                bms.append(H.T.BatchMutation(row=r, mutations=[
                    H.T.Mutation(column=b'cf:a', value=b'v15')]))
                mt.put_column(r, b'cf:a', 15, b'v15')
        self.call('mutateRowsTs', mt.name, bms, 15, {})
        for r in rows:
            self.check_row(mt, r, 'after mutateRowsTs')
        # mutateRows without Ts: values only
        self.call('mutateRows', mt.name, [H.T.BatchMutation(row=b'new', mutations=[
            H.T.Mutation(column=b'cf:z', value=b'zz')])], {})
        got = self.call('get', mt.name, b'new', b'cf:z', {})
        self.eq([c.value for c in got], [b'zz'])

    def test_empty_row_key_illegal(self):
        # new Put(empty row) -> IllegalArgumentException -> IllegalArgument
        mt = self.mk_table('er')
        self.call_raises(H.T.IllegalArgument, 'mutateRow', mt.name, b'', [
            H.T.Mutation(column=b'cf:q', value=b'v')], {})

    def test_deleteall_variants(self):
        mt = self.mk_table('da', {b'cf': 3, b'cg': 3})
        cells = []
        for r in (b'r1', b'r2', b'r3', b'r4'):
            for col in (b'cf:a', b'cf:b', b'cg:x'):
                for t in (10, 20, 30):
                    cells.append((r, col, t, r + col + b'%d' % t))
        self.load(mt, cells)
        self.call('deleteAll', mt.name, b'r1', b'cf:a', {})
        mt.delete_spec(b'r1', b'cf:a')
        self.check_row(mt, b'r1', 'deleteAll column')
        self.call('deleteAll', mt.name, b'r1', b'cg', {})
        mt.delete_spec(b'r1', b'cg')
        self.check_row(mt, b'r1', 'deleteAll family')
        self.call('deleteAllTs', mt.name, b'r2', b'cf:a', 20, {})
        mt.delete_spec(b'r2', b'cf:a', 20)
        self.check_row(mt, b'r2', 'deleteAllTs column: versions <= ts')
        self.call('deleteAllTs', mt.name, b'r2', b'cg', 10, {})
        mt.delete_spec(b'r2', b'cg', 10)
        self.check_row(mt, b'r2', 'deleteAllTs family: versions <= ts')
        self.call('deleteAllRow', mt.name, b'r3', {})
        mt.delete_row(b'r3')
        self.eq(self.call('getRow', mt.name, b'r3', {}), [],
                'getRow after deleteAllRow')
        self.call('deleteAllRowTs', mt.name, b'r4', 20, {})
        mt.delete_row(b'r4', 20)
        self.check_row(mt, b'r4', 'deleteAllRowTs: cells <= ts')
        # deleting something absent is fine
        self.call('deleteAllRow', mt.name, b'absent', {})
        self.call('deleteAll', mt.name, b'absent', b'cf:a', {})

    def test_delete_masks_older_put(self):
        # HBase book ("Deletes mask Puts"): a delete marker at ts T hides
        # puts with timestamps <= T even when they are written later
        # (until a major compaction).  Not in the reference doc.
        mt = self.mk_table('mask')
        self.call('deleteAllTs', mt.name, b'r', b'cf:q', 500, {})
        self.call('mutateRowTs', mt.name, b'r', [
            H.T.Mutation(column=b'cf:q', value=b'old')], 400, {})
        self.call('mutateRowTs', mt.name, b'r', [
            H.T.Mutation(column=b'cf:p', value=b'new')], 600, {})
        got = self.got_cells(self.call('get', mt.name, b'r', b'cf:q', {}))
        self.eq(got, [], 'put at ts 400 after a delete at ts 500 is masked')

    def test_atomic_increment(self):
        mt = self.mk_table('inc')
        v = self.call('atomicIncrement', mt.name, b'c', b'cf:n', 5)
        self.eq(v, 5, 'increment of a missing cell starts at 0')
        self.eq(self.call('atomicIncrement', mt.name, b'c', b'cf:n', -7), -2)
        self.eq(self.call('atomicIncrement', mt.name, b'c', b'cf:n', 0), -2,
                'counter_get = atomicIncrement(..., 0)')
        got = self.call('get', mt.name, b'c', b'cf:n', {})
        self.eq([c.value for c in got], [struct.pack('>q', -2)],
                'stored as 8-byte big-endian')
        # counter_set (happybase) = put of 8 bytes BE, then increments work
        self.call('mutateRows', mt.name, [H.T.BatchMutation(row=b'c', mutations=[
            H.T.Mutation(column=b'cf:n', value=struct.pack('>q', 1 << 40))])],
            {})
        self.eq(self.call('atomicIncrement', mt.name, b'c', b'cf:n', 1),
                (1 << 40) + 1)
        # a non-64-bit value cannot be incremented
        self.load(mt, [(b'c', b'cf:s', 1, b'abc')])
        self.call_raises(H.T.IOError, 'atomicIncrement', mt.name, b'c',
                         b'cf:s', 1)

    def test_increment_and_increment_rows(self):
        mt = self.mk_table('inc2')
        self.call('increment', H.T.TIncrement(table=mt.name, row=b'a',
                                              column=b'cf:n', ammount=3))
        self.call('increment', H.T.TIncrement(table=mt.name, row=b'a',
                                              column=b'cf:n', ammount=4))
        self.call('incrementRows', [
            H.T.TIncrement(table=mt.name, row=b'a', column=b'cf:n', ammount=10),
            H.T.TIncrement(table=mt.name, row=b'b', column=b'cf:m', ammount=-1),
            H.T.TIncrement(table=mt.name, row=b'b', column=b'cf:m', ammount=-1)])
        for row, col, exp in ((b'a', b'cf:n', 17), (b'b', b'cf:m', -2)):
            got = self.call('get', mt.name, row, col, {})
            self.eq([c.value for c in got], [struct.pack('>q', exp)])
        self.eq(self.call('atomicIncrement', mt.name, b'a', b'cf:n', 0), 17)

    def test_append(self):
        mt = self.mk_table('app')
        self.load(mt, [(b'r', b'cf:a', 5, b'ab')])
        got = self.call('append', H.T.TAppend(table=mt.name, row=b'r',
                                              columns=[b'cf:a', b'cf:b'],
                                              values=[b'cd', b'new']))
        # returns the resulting cells, column-sorted (Result.rawCells())
        self.eq([c.value for c in got], [b'abcd', b'new'],
                'append returns the new values in column order')
        got = self.call('get', mt.name, b'r', b'cf:a', {})
        self.eq([c.value for c in got], [b'abcd'])
        got = self.call('get', mt.name, b'r', b'cf:b', {})
        self.eq([c.value for c in got], [b'new'])

    def test_check_and_put(self):
        mt = self.mk_table('cap')
        self.load(mt, [(b'r', b'cf:a', 5, b'1')])
        put = H.T.Mutation(column=b'cf:b', value=b'written')
        self.eq(self.call('checkAndPut', mt.name, b'r', b'cf:a', b'2', put, {}),
                False, 'mismatch')
        self.eq(self.call('get', mt.name, b'r', b'cf:b', {}), [],
                'no put on mismatch')
        self.eq(self.call('checkAndPut', mt.name, b'r', b'cf:a', b'1', put, {}),
                True, 'match')
        self.eq([c.value for c in self.call('get', mt.name, b'r', b'cf:b', {})],
                [b'written'])
        # expect-absent: value unset (null)
        put2 = H.T.Mutation(column=b'cf:c', value=b'first')
        self.eq(self.call('checkAndPut', mt.name, b'r2', b'cf:x', None, put2,
                          {}), True, 'absent column, expect absent')
        self.eq([c.value for c in self.call('get', mt.name, b'r2', b'cf:c',
                                            {})], [b'first'])
        self.eq(self.call('checkAndPut', mt.name, b'r', b'cf:a', None, put2,
                          {}), False, 'present column, expect absent')
        self.eq(self.call('get', mt.name, b'r', b'cf:c', {}), [])
        # the check uses the newest version only
        self.load(mt, [(b'r', b'cf:a', 9, b'9')])
        self.eq(self.call('checkAndPut', mt.name, b'r', b'cf:a', b'1', put2,
                          {}), False, 'older version does not match')


# ---------------------------------------------------------------------------

class T04Scanners(Fixture):
    """scannerOpen* variants, scannerGet/List/Close and TScan options."""

    def test_scanner_open_variants(self):
        fx = self.fx
        for start in (b'', b'\x00', b'a', b'a\x00\x00', b'b', b'\xff', b'\xff\xff\x00'):
            for cols in ([], [b'cf2'], [b'cf:all', b'cf2:b']):
                sid = self.call('scannerOpen', fx.name, start, cols, {})
                got = self.got_rows(self.drain(sid))
                self.last = fmt_call('scannerOpen', (fx.name, start, cols))
                self.eq(got, self.exp_rows(fx.scan(start, columns=cols)))
                sid = self.call('scannerOpenTs', fx.name, start, cols, 200, {})
                got = self.got_rows(self.drain(sid))
                self.last = fmt_call('scannerOpenTs', (fx.name, start, cols, 200))
                self.eq(got, self.exp_rows(fx.scan(start, columns=cols,
                                                   ts=200)),
                        'time range [0, 200)')
        for start, stop in ((b'', b'a'), (b'a', b'b'), (b'\x00', b'\x00\x01'),
                            (b'a\x00', b'ab'), (b'\x7f', b'\xff'),
                            (b'', b'\x00'), (b'b', b'')):
            for cols in ([], [b'cf']):
                sid = self.call('scannerOpenWithStop', fx.name, start, stop,
                                cols, {})
                got = self.got_rows(self.drain(sid))
                self.last = fmt_call('scannerOpenWithStop',
                                     (fx.name, start, stop, cols))
                self.eq(got, self.exp_rows(fx.scan(start, stop, cols)))
                sid = self.call('scannerOpenWithStopTs', fx.name, start, stop,
                                cols, 201, {})
                got = self.got_rows(self.drain(sid))
                self.last = fmt_call('scannerOpenWithStopTs',
                                     (fx.name, start, stop, cols, 201))
                self.eq(got, self.exp_rows(fx.scan(start, stop, cols,
                                                   ts=201)))

    def test_scanner_open_with_prefix(self):
        fx = self.fx
        for prefix in (b'a', b'', b'\x00', b'\xff', b'row1', b'ab', b'q',
                       b'\xff\xff\xff'):
            for cols in ([], [b'cf2']):
                sid = self.call('scannerOpenWithPrefix', fx.name, prefix,
                                cols, {})
                got = self.got_rows(self.drain(sid))
                self.last = fmt_call('scannerOpenWithPrefix',
                                     (fx.name, prefix, cols))
                exp = fx.scan(prefix, columns=cols,
                              filt=M.PrefixFilter(prefix))
                self.eq(got, self.exp_rows(exp))

    def test_row_order_is_unsigned_shorter_first(self):
        fx = self.fx
        sid = self.call('scannerOpen', fx.name, b'', [], {})
        rows = [rr.row for rr in self.drain(sid)]
        self.eq(rows, sorted(FIX_KEYS), 'unsigned bytewise, shorter first')

    def test_scanner_get_list_counts(self):
        fx = self.fx
        total = len(fx.rows)
        exp = self.exp_rows(fx.scan())
        sid = self.call('scannerOpen', fx.name, b'', [], {})
        got, sizes = [], []
        while True:
            b = self.call('scannerGetList', sid, 5)
            sizes.append(len(b))
            if not b:
                break
            got.extend(self.got_rows(b))
            if len(sizes) > total + 2:
                break
        want = [5] * (total // 5) + ([total % 5] if total % 5 else []) + [0]
        self.eq(sizes, want, 'scannerGetList returns min(n, remaining), [] '
                'only at the end')
        self.eq(got, exp)
        self.eq(self.call('scannerGetList', sid, 5), [],
                'exhausted scanner keeps answering []')
        self.eq(self.call('scannerGet', sid), [])
        self.call('scannerClose', sid)

    def test_scanner_get_and_nonpositive(self):
        fx = self.fx
        exp = self.exp_rows(fx.scan())
        sid = self.call('scannerOpen', fx.name, b'', [], {})
        self.eq(self.call('scannerGetList', sid, 0), [], 'nbRows = 0')
        # HBase 2.6.1's ResultScanner.next(n) sizes an ArrayList by n: a
        # negative n is an unchecked exception (seen on real HBase; the
        # reference's "nbRows <= 0 returns an empty list" holds for 0)
        e = self.call_raises(H.TApplicationException, 'scannerGetList', sid,
                             -3, contains='Internal error processing '
                             'scannerGetList')
        self.eq(e.type, H.TApplicationException.INTERNAL_ERROR, 'nbRows < 0')
        got = []
        for _ in range(len(exp) + 1):
            b = self.call('scannerGet', sid)
            if not b:
                break
            self.eq(len(b), 1, 'scannerGet returns exactly one row')
            got.extend(self.got_rows(b))
        self.eq(got, exp, 'scannerGet walks all rows after nbRows <= 0 calls')
        self.call('scannerClose', sid)

    def test_unknown_scanner_id(self):
        for sid in (987654321, -5):
            for name, args in (('scannerGet', (sid,)),
                               ('scannerGetList', (sid, 10)),
                               ('scannerClose', (sid,))):
                self.call_raises(H.T.IllegalArgument, name, *args)
        sid = self.call('scannerOpen', self.fx.name, b'', [], {})
        self.call('scannerClose', sid)
        self.call_raises(H.T.IllegalArgument, 'scannerGetList', sid, 1)
        self.call_raises(H.T.IllegalArgument, 'scannerGet', sid)
        self.call_raises(H.T.IllegalArgument, 'scannerClose', sid)

    def test_scanner_ids_cross_connections(self):
        fx = self.fx
        exp = self.exp_rows(fx.scan())
        a, b, c = Conn(MAIN), Conn(MAIN), Conn(MAIN)
        try:
            sid = self.call('scannerOpenWithScan', fx.name,
                            H.T.TScan(startRow=b''), {}, conn=a)
            got = self.got_rows(self.call('scannerGetList', sid, 3, conn=a))
            a.close()  # closing a socket does not close its scanners
            got += self.got_rows(self.drain(sid, 4, conn=b, close=False))
            self.call('scannerClose', sid, conn=c)
            self.eq(got, exp, 'one scan read over three connections')
            self.call_raises(H.T.IllegalArgument, 'scannerGet', sid, conn=b)
            # ids are distinct across connections
            ids = {self.call('scannerOpen', fx.name, b'', [], {}, conn=x)
                   for x in (b, c, b, c)}
            self.eq(len(ids), 4, 'scanner ids are unique process-wide')
            for i in ids:
                self.call('scannerClose', i, conn=c)
        finally:
            for x in (a, b, c):
                x.close()

    def test_tscan_start_stop_ts_columns(self):
        fx = self.fx
        cases = [
            dict(), dict(startRow=b''), dict(startRow=b'a'),
            dict(startRow=b'a', stopRow=b'b'),
            dict(stopRow=b'\x00\x01'), dict(startRow=b'\x80'),
            dict(timestamp=200), dict(timestamp=101, startRow=b'a'),
            dict(columns=[b'cf2']), dict(columns=[b'cf:all', b'cf2:\xff']),
            dict(columns=[b'cf2'], timestamp=300, startRow=b'\x00\x00',
                 stopRow=b'row2'),
            dict(caching=2), dict(caching=1000, cacheBlocks=False),
            dict(cacheBlocks=True, startRow=b'ab'),
        ]
        for kw in cases:
            scan = H.T.TScan(**kw)
            exp = self.fx.scan(kw.get('startRow') or b'',
                               kw.get('stopRow') or b'',
                               kw.get('columns'), kw.get('timestamp'))
            self.scan_with(fx, scan, exp)

    def test_tscan_sort_columns(self):
        fx = self.fx
        for kw in (dict(sortColumns=True), dict(sortColumns=True,
                                                columns=[b'cf2', b'cf:a']),
                   dict(sortColumns=False)):
            exp = fx.scan(columns=kw.get('columns'))
            self.scan_with(fx, H.T.TScan(**kw), exp,
                           sorted_=kw['sortColumns'])

    def test_tscan_reversed(self):
        fx = self.fx
        for start, stop in ((b'', b''), (b'b', b'a'), (b'\xff', b'\x00'),
                            (b'ab', b''), (b'', b'b'), (b'a\x00', b'a'),
                            (b'\x00\x00', b'\x00')):
            kw = dict(reversed=True, startRow=start)  # happybase style
            if stop:
                kw['stopRow'] = stop
            exp = fx.scan(start, stop, reversed_=True)
            self.scan_with(fx, H.T.TScan(**kw), exp)
        # reversed with columns, timestamp, sorted columns
        exp = fx.scan(b'row1', b'a', [b'cf'], ts=250, reversed_=True)
        self.scan_with(fx, H.T.TScan(startRow=b'row1', stopRow=b'a',
                                     columns=[b'cf'], timestamp=250,
                                     reversed=True, sortColumns=True),
                       exp, sorted_=True)

    def test_tscan_batch_size(self):
        mt = self.mk_table('batch', {b'cf': 3, b'cg': 3})
        cells = []
        for i, r in enumerate([b'r0', b'r1', b'r2', b'r3']):
            for j in range(i * 3 + 1):
                fam = b'cf' if j % 2 else b'cg'
                cells.append((r, fam + b':q%02d' % j, 7, b'v%d' % j))
        self.load(mt, cells)
        for b in (1, 2, 5):
            for sorted_ in (False, True):
                exp = mt.scan(batch=b)
                scan = H.T.TScan(batchSize=b, sortColumns=sorted_)
                sid = self.call('scannerOpenWithScan', mt.name, scan, {})
                raw = self.drain(sid)
                self.last = fmt_call('scannerOpenWithScan', (mt.name, scan))
                got = self.got_rows(raw, sorted_)
                for r, cs in got:
                    self.assertLessEqual(len(cs), b, '%s: partial row %r has '
                                         '%d cells > batchSize'
                                         % (self.last, r, len(cs)))
                self.eq(got, self.exp_rows(exp, sorted_),
                        'a row split into adjacent partial results')
                # nbRows counts partial results
                sid = self.call('scannerOpenWithScan', mt.name, scan, {})
                one = self.call('scannerGetList', sid, 1)
                self.eq(len(one), 1, 'scannerGetList(1) with batchSize')
                self.call('scannerClose', sid)
        # batch + reversed: rows descending, cells of a row still ascending
        exp = mt.scan(reversed_=True, batch=2)
        self.scan_with(mt, H.T.TScan(batchSize=2, reversed=True), exp)


# ---------------------------------------------------------------------------

class T05Filters(Fixture):
    """HBase filter language (reference section 5) against the model."""

    def fcheck(self, fstring, filt, scan_kw=None, page=None, trivial_ok=False):
        fx = self.fx
        kw = dict(scan_kw or {})
        exp = fx.scan(kw.get('startRow') or b'', kw.get('stopRow') or b'',
                      kw.get('columns'), kw.get('timestamp'),
                      reversed_=bool(kw.get('reversed')), filt=filt, page=page)
        if not trivial_ok:
            self.nontrivial(exp, fx.scan(
                kw.get('startRow') or b'', kw.get('stopRow') or b'',
                kw.get('columns'), kw.get('timestamp'),
                reversed_=bool(kw.get('reversed'))), repr(fstring))
        self.scan_with(fx, H.T.TScan(filterString=fstring, **kw), exp)

    def test_row_filters(self):
        self.fcheck(b"PrefixFilter('a')", M.PrefixFilter(b'a'))
        self.fcheck(b"PrefixFilter('\xff')", M.PrefixFilter(b'\xff'))
        self.fcheck(b"PrefixFilter('\x00')", M.PrefixFilter(b'\x00'))
        self.fcheck(b"PrefixFilter('a')", M.PrefixFilter(b'a', True),
                    dict(reversed=True, startRow=b''))
        self.fcheck(b"InclusiveStopFilter('ab')", M.InclusiveStopFilter(b'ab'))
        self.fcheck(b"InclusiveStopFilter('ab')",
                    M.InclusiveStopFilter(b'ab', True),
                    dict(reversed=True, startRow=b''))
        for op in ('<', '<=', '=', '!=', '>=', '>'):
            self.fcheck(b"RowFilter(" + op.encode() + b", 'binary:ab')",
                        M.RowFilter(op, 'binary', b'ab'))
            self.fcheck(b"RowFilter (" + op.encode() + b" , 'binaryprefix:a')",
                        M.RowFilter(op, 'binaryprefix', b'a'))
        self.fcheck(b"RowFilter(=, 'regexstring:^row[0-9]$')",
                    M.RowFilter('=', 'regexstring', b'^row[0-9]$'))
        self.fcheck(b"RowFilter(!=, 'regexstring:b')",
                    M.RowFilter('!=', 'regexstring', b'b'))
        self.fcheck(b"RowFilter(=, 'substring:OW1')",
                    M.RowFilter('=', 'substring', b'OW1'))
        self.fcheck(b"RowFilter(=, 'substring:aB')",
                    M.RowFilter('=', 'substring', b'aB'))
        self.fcheck(b"RowFilter(=,'binary:\x00\x01')",
                    M.RowFilter('=', 'binary', b'\x00\x01'))

    def test_quotes_doubled(self):
        self.fcheck(b"PrefixFilter('it''s')", M.PrefixFilter(b"it's"))
        self.fcheck(b"ValueFilter(=, 'binary:it''s')",
                    M.ValueFilter('=', 'binary', b"it's"))

    def test_cell_filters(self):
        for op in ('<', '=', '!=', '>='):
            self.fcheck(b"FamilyFilter(" + op.encode() + b", 'binary:cf2')",
                        M.FamilyFilter(op, 'binary', b'cf2'))
            self.fcheck(b"QualifierFilter(" + op.encode() + b", 'binary:c1')",
                        M.QualifierFilter(op, 'binary', b'c1'))
            self.fcheck(b"ValueFilter(" + op.encode() + b", 'binary:banana')",
                        M.ValueFilter(op, 'binary', b'banana'))
        self.fcheck(b"QualifierFilter(=, 'binaryprefix:c')",
                    M.QualifierFilter('=', 'binaryprefix', b'c'))
        self.fcheck(b"ValueFilter(>, 'binaryprefix:ap')",
                    M.ValueFilter('>', 'binaryprefix', b'ap'))
        self.fcheck(b"ValueFilter(=, 'regexstring:app')",
                    M.ValueFilter('=', 'regexstring', b'app'))
        self.fcheck(b"ValueFilter(=, 'regexstring:^v0[0-4]')",
                    M.ValueFilter('=', 'regexstring', b'^v0[0-4]'))
        self.fcheck(b"ValueFilter(=, 'substring:APPLE')",
                    M.ValueFilter('=', 'substring', b'APPLE'))
        self.fcheck(b"ValueFilter(!=, 'substring:a')",
                    M.ValueFilter('!=', 'substring', b'a'))
        self.fcheck(b"FamilyFilter(=, 'regexstring:2$')",
                    M.FamilyFilter('=', 'regexstring', b'2$'))
        self.fcheck(b"ColumnPrefixFilter('c')", M.ColumnPrefixFilter(b'c'))
        self.fcheck(b"MultipleColumnPrefixFilter('c1', 'a', 'zz')",
                    M.MultipleColumnPrefixFilter(b'c1', b'a', b'zz'))
        self.fcheck(b"ColumnRangeFilter('a', true, 'c1', false)",
                    M.ColumnRangeFilter(b'a', True, b'c1', False))
        self.fcheck(b"ColumnRangeFilter('ab', false, 'col', true)",
                    M.ColumnRangeFilter(b'ab', False, b'col', True))
        self.fcheck(b"TimestampsFilter(100, 300, 105)",
                    M.TimestampsFilter(100, 300, 105),
                    dict(columns=[b'cf:all']))

    def test_row_shape_filters(self):
        self.fcheck(b"KeyOnlyFilter()", M.KeyOnlyFilter(), trivial_ok=True)
        self.fcheck(b"KeyOnlyFilter(true)", M.KeyOnlyFilter(True),
                    trivial_ok=True)
        self.fcheck(b"FirstKeyOnlyFilter()", M.FirstKeyOnlyFilter(),
                    trivial_ok=True)
        # one family only: ColumnCountGet / ColumnPagination count columns
        one = dict(columns=[b'cf'])
        self.fcheck(b"ColumnPaginationFilter(2, 1)",
                    M.ColumnPaginationFilter(2, 1), one, trivial_ok=True)
        self.fcheck(b"ColumnPaginationFilter(1, 0)",
                    M.ColumnPaginationFilter(1, 0), one, trivial_ok=True)
        # ColumnCountGetFilter is a "get" filter: check it on single rows
        fx = self.fx
        for row in (b'a', b'ab', b'\xff', b'row1'):
            for n in (1, 2):
                kw = dict(startRow=row, stopRow=row + b'\x00')
                self.fcheck(b"ColumnCountGetFilter(%d)" % n,
                            M.ColumnCountGetFilter(n), kw, trivial_ok=True)
        self.assertTrue(fx.rows)

    def test_page_filter(self):
        for n in (1, 3, 7):
            self.fcheck(b"PageFilter(%d)" % n, None, page=n)
            sid = self.call('scannerOpenWithScan', self.fx.name, H.T.TScan(
                filterString=b"PageFilter(%d)" % n), {})
            b1 = self.call('scannerGetList', sid, 2)
            rest = self.drain(sid)
            self.eq(len(b1) + len(rest), n, 'PageFilter rows over several '
                    'scannerGetList calls')
        self.fcheck(b"PrefixFilter('a') AND PageFilter(2)",
                    M.PrefixFilter(b'a'), page=2)

    def test_single_column_value_filter(self):
        self.fcheck(b"SingleColumnValueFilter('cf', 'a', =, 'binary:scv0')",
                    M.SingleColumnValueFilter(b'cf', b'a', '=', 'binary',
                                              b'scv0'))
        self.fcheck(b"SingleColumnValueFilter('cf', 'a', =, 'binary:scv0', "
                    b"true, true)",
                    M.SingleColumnValueFilter(b'cf', b'a', '=', 'binary',
                                              b'scv0', if_missing=True))
        self.fcheck(b"SingleColumnValueFilter('cf', 'a', !=, 'binary:scv0', "
                    b"false, true)",
                    M.SingleColumnValueFilter(b'cf', b'a', '!=', 'binary',
                                              b'scv0', if_missing=False))
        self.fcheck(b"SingleColumnValueFilter('cf','all',>=,'binary:v010')",
                    M.SingleColumnValueFilter(b'cf', b'all', '>=', 'binary',
                                              b'v010'))
        self.fcheck(b"SingleColumnValueFilter('cf','a',=,'substring:SCV1',"
                    b"true,true)",
                    M.SingleColumnValueFilter(b'cf', b'a', '=', 'substring',
                                              b'scv1', if_missing=True))

    def test_operators(self):
        P, V, Q = M.PrefixFilter, M.ValueFilter, M.QualifierFilter
        self.fcheck(b"PrefixFilter('a') AND ValueFilter(!=, 'binary:x')",
                    M.f_and(P(b'a'), V('!=', 'binary', b'x')))
        self.fcheck(b"PrefixFilter('a') OR PrefixFilter('row')",
                    M.f_or(P(b'a'), P(b'row')))
        self.fcheck(b"QualifierFilter(=, 'binary:a') OR "
                    b"QualifierFilter(=, 'binary:c2')",
                    M.f_or(Q('=', 'binary', b'a'), Q('=', 'binary', b'c2')))
        # precedence: AND binds tighter than OR
        self.fcheck(b"PrefixFilter('row') OR PrefixFilter('a') AND "
                    b"QualifierFilter(=, 'binary:all')",
                    M.f_or(P(b'row'), M.f_and(P(b'a'),
                                              Q('=', 'binary', b'all'))))
        self.fcheck(b"(PrefixFilter('row') OR PrefixFilter('a')) AND "
                    b"QualifierFilter(=, 'binary:all')",
                    M.f_and(M.f_or(P(b'row'), P(b'a')),
                            Q('=', 'binary', b'all')))
        self.fcheck(b"SKIP ValueFilter(!=, 'binary:x')",
                    M.f_skip(V('!=', 'binary', b'x')))
        self.fcheck(b"SKIP QualifierFilter(!=, 'binary:b')",
                    M.f_skip(Q('!=', 'binary', b'b')))
        self.fcheck(b"WHILE RowFilter(<, 'binary:b')",
                    M.f_while(M.RowFilter('<', 'binary', b'b')))
        self.fcheck(b"WHILE PrefixFilter('\x00')",
                    M.f_while(P(b'\x00')), dict(startRow=b''))
        self.fcheck(b"\t PrefixFilter ( 'a' )  AND  FirstKeyOnlyFilter ( ) ",
                    M.f_and(P(b'a'), M.FirstKeyOnlyFilter()))
        self.fcheck(b"(QualifierFilter(=,'binary:all'))",
                    Q('=', 'binary', b'all'), trivial_ok=True)

    def test_filter_in_other_contexts(self):
        fx = self.fx
        # filter + columns + timestamp + sortColumns
        kw = dict(columns=[b'cf'], timestamp=300, sortColumns=True)
        exp = fx.scan(columns=[b'cf'], ts=300,
                      filt=M.ValueFilter('!=', 'binary', b'x'))
        self.scan_with(fx, H.T.TScan(filterString=b"ValueFilter(!=,'binary:x')",
                                     **kw), exp, sorted_=True)
        # filter + batchSize
        exp = fx.scan(filt=M.PrefixFilter(b'a'), batch=2)
        self.scan_with(fx, H.T.TScan(filterString=b"PrefixFilter('a')",
                                     batchSize=2), exp)

    def test_bad_filters(self):
        # ParseFilter refuses with an IllegalArgumentException, which
        # scannerOpenWithScan (catching only IOException) lets escape: as
        # real HBase 2.6.1 answers (test_emu_vs_real.py)
        fx = self.fx
        for bad in (b"NoSuchFilter('a')", b"prefixfilter('a')",
                    b"RowFilter(<, 'regexstring:a')",
                    b"ValueFilter(>, 'substring:a')",
                    b"RowFilter(=, 'nosuchtype:a')",
                    b"PrefixFilter('a'",
                    b"PrefixFilter('a') AND"):
            e = self.call_raises(H.TApplicationException,
                                 'scannerOpenWithScan', fx.name,
                                 H.T.TScan(filterString=bad), {})
            self.eq(e.type, H.TApplicationException.INTERNAL_ERROR, bad)
        # the connection is still fine
        self.eq(self.call('getThriftServerType'), H.T.TThriftServerType.ONE)


# ---------------------------------------------------------------------------

class T06NonStrictBinary(Base):
    """The same calls with non-strict (unversioned) binary headers."""

    @classmethod
    def setUpClass(cls):
        if CFG['protocol'] != 'binary':
            raise unittest.SkipTest('binary protocol only')
        cls.model = M.Model()
        cls.conn = Conn(MAIN, strict=False)

    def test_nonstrict_roundtrip(self):
        mt = self.mk_table('ns', {b'cf': 3})
        self.load(mt, [(b'r%d' % i, b'cf:q', 10 + i, b'v%d' % i)
                       for i in range(5)])
        self.eq(self.got_rows(self.call('getRow', mt.name, b'r2', {})),
                self.exp_rows([(b'r2', mt.cells(b'r2'))]))
        sid = self.call('scannerOpenWithScan', mt.name,
                        H.T.TScan(startRow=b'r1', stopRow=b'r4'), {})
        self.eq(self.got_rows(self.drain(sid, 2)),
                self.exp_rows(mt.scan(b'r1', b'r4')))
        self.eq(self.call('atomicIncrement', mt.name, b'c', b'cf:n', 2), 2)
        self.call_raises(H.T.IOError, 'getRow', b'nonexistent_t', b'r', {})
        self.call_raises(H.T.IllegalArgument, 'scannerGet', 99999999)
        self.assertIn(mt.name, self.call('getTableNames'))


# ---------------------------------------------------------------------------
# Raw wire tests

def encode_message(protocol, name, mtype, seqid, write_args, strict=True):
    buf = H.TTransport.TMemoryBuffer()
    prot = hsptest.TH.protocol(buf, protocol, strict)
    prot.writeMessageBegin(name, mtype, seqid)
    write_args(prot)
    prot.writeMessageEnd()
    return buf.getvalue()


def frame(transport, payload):
    if transport == 'framed':
        return struct.pack('>i', len(payload)) + payload
    return payload


def write_junk_args(prot):
    """An args struct with assorted field types the server must skip."""
    prot.writeStructBegin('x_args')
    prot.writeFieldBegin('s', H.TType.STRING, 1)
    prot.writeString('hello')
    prot.writeFieldEnd()
    prot.writeFieldBegin('n', H.TType.I64, 2)
    prot.writeI64(-42)
    prot.writeFieldEnd()
    prot.writeFieldBegin('l', H.TType.LIST, 3)
    prot.writeListBegin(H.TType.STRING, 2)
    prot.writeString('a')
    prot.writeString('b')
    prot.writeListEnd()
    prot.writeFieldEnd()
    prot.writeFieldBegin('st', H.TType.STRUCT, 4)
    prot.writeStructBegin('inner')
    prot.writeFieldBegin('i', H.TType.I32, 1)
    prot.writeI32(7)
    prot.writeFieldEnd()
    prot.writeFieldBegin('m', H.TType.MAP, 2)
    prot.writeMapBegin(H.TType.STRING, H.TType.BOOL, 1)
    prot.writeString('k')
    prot.writeBool(True)
    prot.writeMapEnd()
    prot.writeFieldEnd()
    prot.writeFieldStop()
    prot.writeStructEnd()
    prot.writeFieldEnd()
    prot.writeFieldStop()
    prot.writeStructEnd()


def write_empty_args(prot):
    prot.writeStructBegin('args')
    prot.writeFieldStop()
    prot.writeStructEnd()


class RawConn(object):
    def __init__(self, emu):
        self.emu = emu
        self.tsock = H.TSocket.TSocket('127.0.0.1', emu.port)
        self.tsock.setTimeout(10000)
        self.tsock.open()
        self.sock = self.tsock.handle
        self.trans = harness.wrap_transport(self.tsock, emu.transport)
        self.iprot = hsptest.TH.protocol(self.trans, emu.protocol,
                                         strict=False)

    def send(self, data):
        self.sock.sendall(data)

    def read_reply(self):
        name, mtype, seqid = self.iprot.readMessageBegin()
        return name, mtype, seqid

    def close(self):
        self.tsock.close()


def wait_closed(sock, timeout=5.0):
    """Reads until EOF/reset.  Returns (closed, bytes_received)."""
    sock.settimeout(timeout)
    got = b''
    deadline = time.time() + timeout
    try:
        while time.time() < deadline:
            d = sock.recv(65536)
            if not d:
                return True, got
            got += d
            # an error reply arrived; give the close a moment, not 5 s
            sock.settimeout(0.5)
    except (ConnectionResetError, BrokenPipeError):
        return True, got
    except socket.timeout:
        return False, got
    return False, got


class T07Wire(Base):
    """Unknown methods, strict/non-strict headers, garbage, frame limits."""

    def check_unknown_method(self, raw, data, seqid, name='x'):
        raw.send(data)
        self.last = 'raw call of unknown method %r seqid %d' % (name, seqid)
        rname, mtype, rseq = raw.read_reply()
        exc = H.TApplicationException()
        exc.read(raw.iprot)
        raw.iprot.readMessageEnd()
        self.eq(mtype, H.TMessageType.EXCEPTION, 'message type EXCEPTION')
        self.eq(rseq, seqid, 'seqid echoed')
        self.eq(rname, name, 'method name echoed')
        self.eq(exc.type, H.TApplicationException.UNKNOWN_METHOD,
                'TApplicationException type')
        self.eq(exc.message, "Invalid method name: '%s'" % name,
                'TApplicationException message')

    def good_call(self, raw, seqid):
        data = frame(self.emu().transport, encode_message(
            self.emu().protocol, 'getThriftServerType', H.TMessageType.CALL,
            seqid, write_empty_args))
        raw.send(data)
        self.last = 'raw getThriftServerType seqid %d after the unknown call' \
            % seqid
        rname, mtype, rseq = raw.read_reply()
        res = H.Hbase.getThriftServerType_result()
        res.read(raw.iprot)
        raw.iprot.readMessageEnd()
        self.eq((rname, mtype, rseq, res.success),
                ('getThriftServerType', H.TMessageType.REPLY, seqid,
                 H.T.TThriftServerType.ONE), 'connection still usable')
        harness.note_called('getThriftServerType')

    def test_unknown_method(self):
        emu = self.emu()
        raw = RawConn(emu)
        try:
            for i, (name, seqid) in enumerate(((('x'), 12345),
                                               ('getRowOrBefore', 7),
                                               ('x', -3), ('', 0))):
                data = frame(emu.transport, encode_message(
                    emu.protocol, name, H.TMessageType.CALL, seqid,
                    write_junk_args if i % 2 == 0 else write_empty_args))
                self.check_unknown_method(raw, data, seqid, name)
                self.good_call(raw, seqid + 1)
        finally:
            raw.close()

    def test_binary_header_forms(self):
        emu = self.emu()
        if emu.protocol != 'binary':
            self.skipTest('binary protocol only')
        raw = RawConn(emu)
        try:
            name = b'x'
            args = encode_message('binary', 'x', 1, 0, write_junk_args)
            # strip the header python wrote; keep the args bytes
            args = args[4 + 4 + 1 + 4:]
            strict = struct.pack('>Ii', 0x80010001, len(name)) + name + \
                struct.pack('>i', 77) + args
            loose = struct.pack('>i', len(name)) + name + b'\x01' + \
                struct.pack('>i', 78) + args
            self.check_unknown_method(raw, frame(emu.transport, strict), 77)
            self.check_unknown_method(raw, frame(emu.transport, loose), 78)
            # a non-strict request for a real method
            data = frame(emu.transport, encode_message(
                'binary', 'getThriftServerType', 1, 79, write_empty_args,
                strict=False))
            raw.send(data)
            self.last = 'non-strict getThriftServerType'
            rname, mtype, rseq = raw.read_reply()
            res = H.Hbase.getThriftServerType_result()
            res.read(raw.iprot)
            raw.iprot.readMessageEnd()
            self.eq((rname, mtype, rseq, res.success),
                    ('getThriftServerType', 2, 79, 1))
        finally:
            raw.close()

    def assert_serves(self, what):
        c = Conn(self.emu())
        try:
            self.last = 'getThriftServerType on a fresh connection after ' + what
            self.eq(c.getThriftServerType(), H.T.TThriftServerType.ONE)
        finally:
            c.close()
        self.assertTrue(self.emu().alive(), 'emulator died after ' + what)

    def test_garbage_bytes(self):
        emu = self.emu()
        rng = random.Random(99)
        payloads = [b'\xff\xff\xff\xff' + bytes(rng.getrandbits(8)
                                                for _ in range(300)),
                    b'\xde\xad\xbe\xef' * 64,
                    b'GET / HTTP/1.1\r\nHost: x\r\n\r\n' if emu.transport ==
                    'framed' else b'\x80\x02\x00\x01garbage' * 8]
        for p in payloads:
            s = socket.create_connection(('127.0.0.1', emu.port), 5)
            try:
                s.sendall(p)
                closed, got = wait_closed(s, 5.0)
                self.assertTrue(closed or got, 'garbage %r: the connection '
                                'was neither closed nor answered within 5 s'
                                % p[:16])
            finally:
                s.close()
            self.assert_serves('garbage %r' % p[:16])
        # a valid header followed by a malformed struct
        hdr = encode_message(emu.protocol, 'getTableNames', 1, 5,
                             lambda prot: None)
        bad = hdr + b'\x7f\x7f\x7f\x7f\x7f\x7f\x7f\x7f'
        s = socket.create_connection(('127.0.0.1', emu.port), 5)
        try:
            s.sendall(frame(emu.transport, bad))
            closed, got = wait_closed(s, 5.0)
            self.assertTrue(closed or got, 'malformed args struct: the '
                            'connection was neither closed nor answered')
        finally:
            s.close()
        self.assert_serves('a malformed args struct')

    def test_half_message_then_disconnect(self):
        emu = self.emu()
        data = frame(emu.transport, encode_message(
            emu.protocol, 'getTableNames', 1, 1, write_empty_args))
        for cut in (1, 3, len(data) - 1):
            s = socket.create_connection(('127.0.0.1', emu.port), 5)
            s.sendall(data[:cut])
            s.close()
        self.assert_serves('truncated messages')

    def test_oversize_frame(self):
        emu = self.emu()
        if emu.transport != 'framed':
            self.skipTest('framed transport only')
        s = socket.create_connection(('127.0.0.1', emu.port), 5)
        try:
            # 3 MB frame > --max-frame-mb 2: closed without reading it
            s.sendall(struct.pack('>i', 3 * 1024 * 1024) + b'\x80\x01\x00\x01')
            closed, got = wait_closed(s, 5.0)
            self.assertTrue(closed, 'a 3 MB frame header with a 2 MB limit '
                            'should close the connection (got %r)' % got[:64])
        finally:
            s.close()
        s = socket.create_connection(('127.0.0.1', emu.port), 5)
        try:
            s.sendall(struct.pack('>i', -1))
            closed, got = wait_closed(s, 5.0)
            self.assertTrue(closed, 'a negative frame size should close the '
                            'connection (got %r)' % got[:64])
        finally:
            s.close()
        self.assert_serves('oversize frames')

    def test_pipelined_calls(self):
        # several requests in one write; replies in order with their seqids
        emu = self.emu()
        raw = RawConn(emu)
        try:
            data = b''.join(frame(emu.transport, encode_message(
                emu.protocol, 'getThriftServerType', 1, 100 + i,
                write_empty_args)) for i in range(5))
            raw.send(data)
            for i in range(5):
                self.last = 'pipelined getThriftServerType #%d' % i
                rname, mtype, rseq = raw.read_reply()
                res = H.Hbase.getThriftServerType_result()
                res.read(raw.iprot)
                raw.iprot.readMessageEnd()
                self.eq((rname, mtype, rseq, res.success),
                        ('getThriftServerType', 2, 100 + i, 1))
        finally:
            raw.close()


# ---------------------------------------------------------------------------

class T08ScannerExpiry(Base):
    """Scanners expire after idling (expireAfterAccess, reference 3.7)."""

    emu_attr = 'EMU'
    TIMEOUT_MS = 1000

    @classmethod
    def setUpClass(cls):
        cls.EMU = Emu('--scanner-timeout-ms', str(cls.TIMEOUT_MS))
        super().setUpClass()

    @classmethod
    def tearDownClass(cls):
        super().tearDownClass()
        cls.EMU.stop()

    def test_expiry_and_keepalive(self):
        mt = self.mk_table('exp')
        self.load(mt, [(b'r%03d' % i, b'cf:q', 1, b'v') for i in range(120)])
        idle = self.call('scannerOpen', mt.name, b'', [], {})
        busy = self.call('scannerOpen', mt.name, b'', [], {})
        done = self.call('scannerOpen', mt.name, b'r119', [], {})
        self.eq(len(self.drain(done, close=False)), 1)
        t0 = time.time()
        n = 0
        while time.time() - t0 < 4.0:  # > 2x the timeout
            got = self.call('scannerGetList', busy, 1)
            self.eq(len(got), 1, 'a scanner in use must not expire')
            n += 1
            time.sleep(0.1)
        self.call_raises(H.T.IllegalArgument, 'scannerGetList', idle, 1)
        self.call_raises(H.T.IllegalArgument, 'scannerClose', idle)
        self.call_raises(H.T.IllegalArgument, 'scannerGet', done)
        self.call('scannerClose', busy)


# ---------------------------------------------------------------------------

class T09Regions(Base):
    """--regions N: N contiguous regions; scans cross region boundaries."""

    emu_attr = 'EMU'
    N = 4

    @classmethod
    def setUpClass(cls):
        cls.EMU = Emu('--regions', str(cls.N), '--create-table',
                      'pre:cf1,cf2')
        super().setUpClass()

    @classmethod
    def tearDownClass(cls):
        super().tearDownClass()
        cls.EMU.stop()

    def test_create_table_flag(self):
        self.assertIn(b'pre', self.call('getTableNames'))
        cds = self.call('getColumnDescriptors', b'pre')
        self.eq(sorted(cds), [b'cf1:', b'cf2:'])
        self.eq(self.call('isTableEnabled', b'pre'), True)

    def test_regions_and_scans(self):
        regs = self.call('getTableRegions', b'pre')
        check_regions(self, b'pre', regs, self.N)
        mt = self.model.create(b'pre', {b'cf1': 3, b'cf2': 3})
        keys = [bytes([b]) + s for b in range(0, 256, 5) for s in (b'', b'k')]
        keys += [r.startKey for r in regs if r.startKey]
        keys += [r.startKey + b'\x00' for r in regs if r.startKey]
        self.load(mt, [(k, b'cf1:q', 3, k) for k in keys] +
                  [(k, b'cf2:z', 4, b'z') for k in keys[::3]])
        sid = self.call('scannerOpen', b'pre', b'', [], {})
        self.eq(self.got_rows(self.drain(sid, 7)), self.exp_rows(mt.scan()),
                'full scan across regions')
        self.scan_with(mt, H.T.TScan(reversed=True, startRow=b''),
                       mt.scan(reversed_=True), n=9)
        for r in regs:
            if r.startKey:
                start = r.startKey
                self.scan_with(mt, H.T.TScan(startRow=start[:1],
                                             stopRow=start + b'\x01'),
                               mt.scan(start[:1], start + b'\x01'))
                self.scan_with(mt, H.T.TScan(startRow=start, stopRow=b'\x01',
                                             reversed=True),
                               mt.scan(start, b'\x01', reversed_=True))
        # getRegionInfo: the region containing the row of a meta key
        for k in [b'A', b'M', b'q', b'zz', b'\x01'] + \
                [r.startKey for r in regs if r.startKey]:
            ri = self.call('getRegionInfo', b'pre,' + k + b',' + NINES)
            want = [(r.startKey, r.endKey) for r in regs
                    if r.startKey <= k and (r.endKey == b'' or k < r.endKey)]
            self.eq([(ri.startKey, ri.endKey)], want,
                    'region containing %r' % k)
        # PageFilter is per region upstream; here only its total is bounded
        sid = self.call('scannerOpenWithScan', b'pre',
                        H.T.TScan(filterString=b'PageFilter(1000)'), {})
        self.eq(len(self.drain(sid)), len(mt.rows))


# ---------------------------------------------------------------------------

class T99Soak(Base):
    """64 concurrent connections doing mixed calls; RSS must level off."""

    emu_attr = 'EMU'
    THREADS = 64

    @classmethod
    def setUpClass(cls):
        if not CFG.get('soak'):
            raise unittest.SkipTest('soak runs with --soak / --soak-only')
        cls.EMU = Emu(*(['--max-frame-mb', '2']
                        if CFG['transport'] == 'framed' else []))
        super().setUpClass()

    @classmethod
    def tearDownClass(cls):
        super().tearDownClass()
        cls.EMU.stop()

    def test_soak(self):
        secs = float(os.environ.get('CONFORMANCE_SOAK_SECONDS', '10'))
        emu = self.EMU
        table = b'soak'
        self.call('createTable', table,
                  [H.T.ColumnDescriptor(name=b'cf:', maxVersions=1)])
        errors, counts = [], [0] * self.THREADS
        garbage_sent = [0]
        stop = threading.Event()
        samples = []

        def worker(i):
            rng = random.Random(i)
            mine = {}
            try:
                c = Conn(emu)
            except Exception as e:
                errors.append('thread %d connect: %r' % (i, e))
                return
            pre = b't%02d-' % i
            counter = 0
            try:
                while not stop.is_set():
                    op = rng.random()
                    row = pre + b'%02d' % rng.randrange(16)
                    if op < 0.35:
                        v = bytes(rng.getrandbits(8)
                                  for _ in range(rng.randrange(1, 300)))
                        c.mutateRowTs(table, row, [H.T.Mutation(
                            column=b'cf:v', value=v)], 1, {})
                        mine[row] = v
                    elif op < 0.6:
                        got = c.getRow(table, row, {})
                        exp = mine.get(row)
                        val = got[0].columns[b'cf:v'].value if got else None
                        if val != exp:
                            errors.append('thread %d getRow(%r): expected %r, '
                                          'got %r' % (i, row, short(exp),
                                                      short(val)))
                    elif op < 0.8:
                        sid = c.scannerOpenWithScan(table, H.T.TScan(
                            startRow=pre, stopRow=pre + b'\xff',
                            columns=[b'cf:v']), {})
                        rows = []
                        while True:
                            b = c.scannerGetList(sid, rng.randint(1, 10))
                            if not b:
                                break
                            rows.extend(r.row for r in b)
                        c.scannerClose(sid)
                        if rows != sorted(mine):
                            errors.append('thread %d scan: expected %r, got %r'
                                          % (i, short(sorted(mine)),
                                             short(rows)))
                    elif op < 0.9:
                        counter += 1
                        v = c.atomicIncrement(table, pre + b'ctr', b'cf:n', 1)
                        if v != counter:
                            errors.append('thread %d atomicIncrement: expected '
                                          '%d, got %d' % (i, counter, v))
                    else:
                        rows = [pre + b'%02d' % rng.randrange(16)
                                for _ in range(4)]
                        got = c.getRows(table, rows, {})
                        exp = [r for r in rows if r in mine]
                        if [g.row for g in got] != exp:
                            errors.append('thread %d getRows: expected %r, '
                                          'got %r' % (i, exp,
                                                      [g.row for g in got]))
                    counts[i] += 1
                    if len(errors) > 50:
                        return
            except Exception as e:
                errors.append('thread %d: %s: %s' % (
                    i, type(e).__name__,
                    short(getattr(e, 'message', None) or str(e))))
            finally:
                c.close()

        def garbage():
            rng = random.Random(5)
            while not stop.is_set():
                try:
                    s = socket.create_connection(('127.0.0.1', emu.port), 5)
                    s.sendall(b'\xff\xff\xff\xff' + bytes(
                        rng.getrandbits(8) for _ in range(rng.randrange(1,
                                                                        512))))
                    garbage_sent[0] += 1
                    s.close()
                except OSError as e:
                    errors.append('garbage connection: %r' % e)
                stop.wait(0.05)

        def sampler():
            t0 = time.time()
            while not stop.is_set():
                try:
                    samples.append((time.time() - t0, emu.rss_kb()))
                except OSError:
                    errors.append('emulator process vanished')
                    return
                stop.wait(0.25)

        threads = [threading.Thread(target=worker, args=(i,), daemon=True)
                   for i in range(self.THREADS)]
        threads += [threading.Thread(target=garbage, daemon=True),
                    threading.Thread(target=sampler, daemon=True)]
        t0 = time.time()
        for t in threads:
            t.start()
        stop.wait(secs)
        stop.set()
        for t in threads:
            t.join(30)
        elapsed = time.time() - t0
        hung = [t for t in threads if t.is_alive()]
        total = sum(counts)
        half = [kb for (t, kb) in samples if t >= secs / 2]
        q = max(1, len(half) // 2)
        q3, q4 = half[:q], half[q:]
        mid = sorted(q3)[len(q3) // 2] if q3 else 0
        end = sorted(q4)[len(q4) // 2] if q4 else mid
        growth = end - mid
        summary = ('soak: %.1f s, %d threads, %d ops (%.0f ops/s), %d garbage '
                   'connections, RSS kB first/mid/end/max = %s/%s/%s/%s '
                   '(second-half growth %+d kB), %d errors'
                   % (elapsed, self.THREADS, total, total / max(elapsed, 1e-6),
                      garbage_sent[0], samples[0][1] if samples else '?', mid,
                      end, max(kb for _, kb in samples) if samples else '?',
                      growth, len(errors)))
        print('\n' + summary, file=sys.stderr)
        self.assertFalse(hung, 'soak threads hung: %d' % len(hung))
        self.assertFalse(errors, summary + '\n' + '\n'.join(errors[:20]))
        self.assertTrue(emu.alive(), 'emulator died during soak')
        self.assertGreater(total, self.THREADS, 'soak did almost nothing')
        if not UNDER_ASAN:
            self.assertLessEqual(growth, max(4096, mid // 20),
                                 'RSS keeps growing in the second half: '
                                 + summary + '\nsamples: %s' % samples)
        # the emulator still serves normally afterwards
        c = Conn(emu)
        try:
            self.assertEqual(c.getThriftServerType(), 1)
        finally:
            c.close()


# ---------------------------------------------------------------------------

class T10HeldToReal(Base):
    """Answers real HBase 2.6.1 gave in test_emu_vs_real.py."""

    def test_client_checks_first(self):
        M = H.T.Mutation
        # Get.readVersions refuses before the table is asked: a plain
        # IOException, so canRetry
        e = self.call_raises(H.T.IOError, 'getVer', b'no_such_table', b'r',
                             b'cf:q', 0, {})
        self.eq((e.message, e.canRetry),
                ('java.io.IOException: versions must be positive', True))
        # the Put's cell builder, before the table
        e = self.call_raises(H.T.IllegalArgument, 'mutateRow',
                             b'no_such_table', b'r', [M(column=b':q',
                                                        value=b'v')], {})
        self.eq(e.message, 'java.lang.IllegalArgumentException: Family '
                'cannot be null')
        e = self.call_raises(H.TApplicationException, 'append', H.T.TAppend(
            table=b'no_such_table', row=b'r', columns=[b':q'],
            values=[b'v']))
        self.eq(e.type, H.TApplicationException.INTERNAL_ERROR)

    def test_region_errors_name_their_class_twice(self):
        mt = self.mk_table('twice')
        e = self.call_raises(H.T.IOError, 'get', mt.name, b'r', b'nope:q',
                             {})
        prefix = ('org.apache.hadoop.hbase.regionserver.'
                  'NoSuchColumnFamilyException: ')
        self.assertTrue(e.message.startswith(prefix * 2), e.message)

    def test_admin_wording(self):
        P = 'org.apache.hadoop.hbase.'
        name = self.tname('adm')
        cds = [H.T.ColumnDescriptor(name=b'f:')]
        self.call('createTable', name, cds)
        n = name.decode()
        e = self.call_raises(H.T.IOError, 'enableTable', name)
        self.eq(e.message, P + 'TableNotDisabledException: tableName=%s, '
                'state=ENABLED' % n)
        e = self.call_raises(H.T.IOError, 'deleteTable', name)
        self.eq(e.message, P + 'TableNotDisabledException: ' + P +
                'TableNotDisabledException: Not DISABLED; tableName=%s, '
                'state=ENABLED' % n)
        self.call('disableTable', name)
        e = self.call_raises(H.T.IOError, 'disableTable', name)
        self.eq(e.message, (P + 'TableNotEnabledException: ') * 2 + n)
        self.call('deleteTable', name)
        e = self.call_raises(H.T.IOError, 'disableTable', name)
        self.eq(e.message, (P + 'TableNotFoundException: ') * 2 + n)
        e = self.call_raises(H.T.IOError, 'compact', name)
        self.eq(e.message, P + 'TableNotFoundException: ' + n)
        e = self.call_raises(H.T.IOError, 'createTable', name, [])
        self.eq((e.message.split(': ')[:2], e.canRetry),
                ([P + 'DoNotRetryIOException'] * 2, False))
        e = self.call_raises(H.TApplicationException, 'createTable',
                             b'bad name', cds)
        self.eq(e.type, H.TApplicationException.INTERNAL_ERROR)
        e = self.call_raises(H.T.IllegalArgument, 'createTable', name,
                             cds + cds)
        self.eq(e.message, "java.lang.IllegalArgumentException: Family 'f' "
                "already exists so cannot be added")

    def test_mutate_row_is_two_calls(self):
        # the handler sends table.delete(delete), then table.put(put): a
        # Put with a missing family fails after the Delete is applied
        M = H.T.Mutation
        mt = self.mk_table('two')
        self.call('mutateRow', mt.name, b'r', [M(column=b'cf:a', value=b'1'),
                                               M(column=b'cf:b', value=b'2')],
                  {})
        self.call_raises(H.T.IOError, 'mutateRow', mt.name, b'r', [
            M(column=b'nope:q', value=b'x'), M(isDelete=True, column=b'cf:a')],
            {})
        self.eq(sorted(self.call('getRow', mt.name, b'r', {})[0].columns),
                [b'cf:b'])
        # of two missing families, the region names the bytewise first
        e = self.call_raises(H.T.IOError, 'getRowWithColumns', mt.name, b'r',
                             [b'zz:q', b'aa:q'], {})
        self.assertIn('Column family aa does not exist', e.message)

    def test_get_rows_on_missing_table(self):
        e = self.call_raises(H.T.IOError, 'getRows', b'no_such_table',
                             [b'a', b'b'], {})
        self.eq((e.message, e.canRetry),
                ('org.apache.hadoop.hbase.client.RetriesExhaustedWithDetails'
                 'Exception: Failed 2 actions: no_such_table: 2 times, '
                 'servers with issues: null', True))

    def test_check_and_put_order(self):
        M = H.T.Mutation
        mt = self.mk_table('cap')
        self.call('mutateRow', mt.name, b'r', [M(column=b'cf:q',
                                                 value=b'1')], {})
        # the Put's family is the region's to check once the condition
        # holds: a failed condition answers false
        self.eq(self.call('checkAndPut', mt.name, b'r', b'cf:q', b'2',
                          M(column=b'nope:q', value=b'x'), {}), False)
        self.call_raises(H.T.IOError, 'checkAndPut', mt.name, b'r',
                         b'cf:q', b'1', M(column=b'nope:q', value=b'x'), {})
        # a checked column without a qualifier: famAndQf[1]
        e = self.call_raises(H.TApplicationException, 'checkAndPut',
                             b'no_such_table', b'r', b'cf', b'1',
                             M(column=b'cf:q', value=b'x'), {})
        self.eq(e.type, H.TApplicationException.INTERNAL_ERROR)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--emu', default=CFG['emu'])
    ap.add_argument('--pydir', default=CFG['pydir'])
    ap.add_argument('--protocol', choices=('binary', 'compact'),
                    default=CFG['protocol'])
    ap.add_argument('--transport', choices=('buffered', 'framed'),
                    default=CFG['transport'])
    ap.add_argument('--soak', action='store_true',
                    help='also run the 64-connection soak')
    ap.add_argument('--soak-only', action='store_true',
                    help='run only the soak')
    args, rest = ap.parse_known_args()
    CFG.update(emu=args.emu, pydir=args.pydir, protocol=args.protocol,
               transport=args.transport,
               soak=args.soak or args.soak_only or
               os.environ.get('CONFORMANCE_SOAK') == '1')
    if not CFG['emu'] or not os.access(CFG['emu'], os.X_OK):
        print('hbase-emu binary not found/executable: %r (use --emu or '
              'HBASE_EMU)' % CFG['emu'], file=sys.stderr)
        return 2
    hsptest.import_thrift(harness.CFG['pydir'], harness)
    print('conformance: protocol=%s transport=%s emu=%s'
          % (CFG['protocol'], CFG['transport'], CFG['emu']), file=sys.stderr)
    argv = [sys.argv[0]] + rest
    if args.soak_only:
        argv += ['T99Soak']
    prog = unittest.main(module='__main__', argv=argv, exit=False,
                         verbosity=2)
    res = prog.result
    rc = 0 if res.wasSuccessful() else 1
    full = not rest and not args.soak_only
    if full:
        missing = [m for m in harness.thrift1_methods()
                   if m not in harness.CALLED]
        print('coverage: %d/%d Thrift1 methods called%s'
              % (len(harness.thrift1_methods()) - len(missing),
                 len(harness.thrift1_methods()),
                 ('; NOT called: ' + ', '.join(missing)) if missing else ''),
              file=sys.stderr)
        if missing:
            rc = 1
    print('summary [%s/%s]: %d run, %d failures, %d errors, %d skipped'
          % (CFG['protocol'], CFG['transport'], res.testsRun,
             len(res.failures), len(res.errors), len(res.skipped)),
          file=sys.stderr)
    return rc


if __name__ == '__main__':
    sys.exit(main())
