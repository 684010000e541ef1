#!/usr/bin/python3
"""Conformance suite, Thrift2: holds hbase-emu's THBaseService listener to
HBase 2.x's documented thrift2 behaviour.

Run (only /usr/bin/python3 has python3-thrift):

  /usr/bin/python3 tests/conformance/test_emu_thrift2.py \\
      --emu BUILD/tests/emu/hbase-emu --pydir BUILD/thrift/py \\
      [--protocol binary|compact] [--transport buffered|framed]

Section numbers in comments are those of the reference,
/work/shared/reference/hbase-thrift.md (2.3: thrift2 handler semantics,
3.7: scanner ids, 4: scan semantics).
"""

import argparse
import os
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import harness  # noqa: E402
import hsptest  # noqa: E402
from harness import CFG, Emu, Conn, fmt_call, short  # noqa: E402
from hsptest import pb_binary, pb_compare, pb_field, pb_filter  # noqa: E402

EMU = None
T2 = None           # hbase2.ttypes after import_thrift
THBaseService = None


class Emu2(Emu):
    """An hbase-emu serving Thrift1 and, on a port of its own, Thrift2."""

    def __init__(self, *extra):
        super().__init__(*extra, thrift2=True)


class Conn2(object):
    """A Thrift2 client on the emulator's second listener."""

    def __init__(self, emu, timeout_ms=20000):
        self.sock = harness.TSocket.TSocket('127.0.0.1', emu.port2)
        self.sock.setTimeout(timeout_ms)
        self.trans = harness.wrap_transport(self.sock, emu.transport)
        self.client = THBaseService.Client(
            hsptest.TH.protocol(self.trans, emu.protocol, strict=True))
        self.trans.open()

    def __getattr__(self, name):
        return getattr(self.client, name)

    def close(self):
        try:
            self.trans.close()
        except Exception:
            pass


def setUpModule():
    global EMU
    EMU = Emu2()


def tearDownModule():
    if EMU is not None:
        alive = EMU.alive()
        tail = EMU.log_tail()
        EMU.stop()
        if not alive:
            raise AssertionError('hbase-emu died during the run (rc=%s):\n%s'
                                 % (EMU.proc.returncode, tail))


def cv(fam, qual, value, ts=None):
    return T2.TColumnValue(family=fam, qualifier=qual, value=value,
                           timestamp=ts)


def cells(result):
    """TResult -> [(family, qualifier, ts, value)] in wire order."""
    return [(c.family, c.qualifier, c.timestamp, c.value)
            for c in result.columnValues]


class Base(unittest.TestCase):
    _seq = 0

    @classmethod
    def setUpClass(cls):
        cls.c2 = Conn2(EMU)
        cls.c1 = Conn(EMU)

    @classmethod
    def tearDownClass(cls):
        cls.c2.close()
        cls.c1.close()

    def call(self, name, *args, conn=None):
        c = conn or self.c2
        self.last = fmt_call(name, args)
        err = None
        try:
            return getattr(c, name)(*args)
        except (T2.TIOError, T2.TIllegalArgument) as e:
            err = '%s raised %s(%s)' % (self.last, type(e).__name__,
                                        short(e.message, 400))
        except harness.TApplicationException as e:
            err = ('%s raised TApplicationException(type=%s, %s)'
                   % (self.last, e.type, short(e.message)))
        except Exception as e:
            err = '%s failed: %s: %s' % (self.last, type(e).__name__, e)
        self.fail(err)

    def raises(self, exc, name, *args, conn=None):
        c = conn or self.c2
        self.last = fmt_call(name, args)
        err = None
        try:
            got = getattr(c, name)(*args)
            err = '%s: expected %s, got %s' % (self.last, exc.__name__,
                                                short(got))
        except exc as e:
            return e
        except Exception as e:
            err = '%s: expected %s, got %s: %s' % (
                self.last, exc.__name__, type(e).__name__,
                short(getattr(e, 'message', str(e))))
        self.fail(err)

    def eq(self, got, exp, what=''):
        if got != exp:
            self.fail('%s%s:\n  expected %s\n  got      %s'
                      % (self.last, (' [' + what + ']') if what else '',
                         short(exp, 1500), short(got, 1500)))

    @classmethod
    def tname(cls, hint):
        Base._seq += 1
        return ('t2c%d_%s' % (Base._seq, hint)).encode()

    def mk_table(self, hint, families=None, splits=None):
        families = families or {b'cf': 3}
        name = self.tname(hint)
        desc = T2.TTableDescriptor(
            tableName=T2.TTableName(qualifier=name),
            columns=[T2.TColumnFamilyDescriptor(name=f, maxVersions=v)
                     for f, v in families.items()])
        self.call('createTable', desc, splits or [])
        return name

    def scan_all(self, table, scan, n=1000):
        sid = self.call('openScanner', table, scan)
        out = []
        while True:
            batch = self.call('getScannerRows', sid, n)
            if not batch:
                break
            out.extend(batch)
        self.call('closeScanner', sid)
        return out


class T01Service(Base):
    def test_server_type(self):
        # each listener reports its own server (thrift1 ONE, thrift2 TWO)
        self.eq(self.call('getThriftServerType'),
                T2.TThriftServerType.TWO)
        self.eq(self.call('getThriftServerType', conn=self.c1), 1)
        self.eq(self.call('getClusterId'),
                self.call('getClusterId', conn=self.c1))

    def test_unknown_method_keeps_connection(self):
        # A Thrift1-only method name on the Thrift2 port: libthrift's
        # UNKNOWN_METHOD, connection kept (reference section 4, Errors).
        c = Conn.__new__(Conn)
        c.sock = harness.TSocket.TSocket('127.0.0.1', EMU.port2)
        c.trans = harness.wrap_transport(c.sock, EMU.transport)
        c.prot = hsptest.TH.protocol(c.trans, EMU.protocol, strict=True)
        c.client = harness.Hbase.Client(c.prot)
        c.trans.open()
        try:
            e = self.raises(harness.TApplicationException, 'getTableNames',
                            conn=c.client)
            self.eq(e.type, harness.TApplicationException.UNKNOWN_METHOD)
            self.assertIn("Invalid method name: 'getTableNames'", e.message)
            self.eq(c.client.getThriftServerType(), 2)
        finally:
            c.close()


class T02CrossProtocol(Base):
    def test_thrift1_write_thrift2_read(self):
        t = self.mk_table('x12')
        self.call('mutateRowTs', t, b'r\x00\xff',
                  [harness.T.Mutation(column=b'cf:q', value=b'v1')], 100, {},
                  conn=self.c1)
        r = self.call('get', t, T2.TGet(row=b'r\x00\xff'))
        self.eq(r.row, b'r\x00\xff')
        self.eq(cells(r), [(b'cf', b'q', 100, b'v1')])
        # type is Cell.Type.Put's code (section 2.3)
        self.eq([c.type for c in r.columnValues], [4])
        self.eq((r.partial, r.stale), (False, False))

    def test_thrift2_write_thrift1_read(self):
        t = self.mk_table('x21')
        self.call('put', t, T2.TPut(row=b'k', columnValues=[
            cv(b'cf', b'a', b'va', 7), cv(b'cf', b'b', b'vb')], timestamp=9))
        rr = self.call('getRow', t, b'k', {}, conn=self.c1)
        self.eq(len(rr), 1)
        self.eq(sorted((k, v.timestamp, v.value)
                       for k, v in rr[0].columns.items()),
                [(b'cf:a', 7, b'va'), (b'cf:b', 9, b'vb')])


class T03Reads(Base):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        h = cls('setUp')
        cls.t = h.mk_table('rd', {b'cf': 3, b'cf2': 3})
        puts = []
        for ts, val in ((100, b'v100'), (200, b'v200'), (300, b'v300')):
            puts.append(T2.TPut(row=b'ver', columnValues=[
                cv(b'cf', b'c', val, ts)]))
        puts.append(T2.TPut(row=b'wide', timestamp=50, columnValues=[
            cv(b'cf', q, b'w' + q) for q in (b'a', b'b', b'c', b'd', b'e')] +
            [cv(b'cf2', q, b'x' + q) for q in (b'x', b'y')]))
        for k in (b'a', b'b', b'c', b'd', b'e', b'f'):
            puts.append(T2.TPut(row=b'row-' + k, timestamp=10,
                                columnValues=[cv(b'cf', b'q', k)]))
        h.call('putMultiple', cls.t, puts)

    def test_missing_rows(self):
        # get: TResult with row unset, columnValues empty (section 2.3)
        r = self.call('get', self.t, T2.TGet(row=b'nope'))
        self.eq((r.row, r.columnValues), (None, []))
        # getMultiple: one TResult per TGet, positionally (section 2.3)
        rs = self.call('getMultiple', self.t, [
            T2.TGet(row=b'row-a'), T2.TGet(row=b'nope'),
            T2.TGet(row=b'row-c')])
        self.eq([r.row for r in rs], [b'row-a', None, b'row-c'])
        self.eq(rs[1].columnValues, [])
        self.eq(self.call('existsAll', self.t, [
            T2.TGet(row=b'row-a'), T2.TGet(row=b'nope')]), [True, False])

    def test_timestamp_vs_time_range(self):
        # getFromThrift: timestamp wins over timeRange (section 2.3)
        r = self.call('get', self.t, T2.TGet(row=b'ver', timestamp=200,
                                             maxVersions=3))
        self.eq(cells(r), [(b'cf', b'c', 200, b'v200')])
        r = self.call('get', self.t, T2.TGet(
            row=b'ver', maxVersions=3,
            timeRange=T2.TTimeRange(minStamp=100, maxStamp=300)))
        self.eq([c[2] for c in cells(r)], [200, 100], 'range [100, 300)')
        r = self.call('get', self.t, T2.TGet(
            row=b'ver', maxVersions=3, timestamp=300,
            timeRange=T2.TTimeRange(minStamp=100, maxStamp=300)))
        self.eq([c[2] for c in cells(r)], [300], 'timestamp wins')
        r = self.call('get', self.t, T2.TGet(row=b'ver'))
        self.eq([c[2] for c in cells(r)], [300], 'default: one version')

    def test_existence_only(self):
        self.eq(self.call('exists', self.t, T2.TGet(row=b'row-a')), True)
        self.eq(self.call('exists', self.t, T2.TGet(row=b'nope')), False)
        self.eq(self.call('exists', self.t, T2.TGet(
            row=b'row-a', columns=[T2.TColumn(family=b'cf2')])), False)
        # existence_only maps to Get.setCheckExistenceOnly (section 2.3).
        # HBase then answers a Result with exists set and no cell array
        # (Result.create(null, exists)); resultFromHBase reads
        # rawCells().length, so get and getMultiple fail with the
        # NullPointerException as an undeclared exception (section 4,
        # Errors), found row or not.
        for row in (b'row-a', b'nope'):
            e = self.raises(harness.TApplicationException, 'get', self.t,
                            T2.TGet(row=row, existence_only=True))
            self.eq(e.type, harness.TApplicationException.INTERNAL_ERROR)
            self.assertIn('get', e.message)
        # one such TGet fails the whole getMultiple
        e = self.raises(harness.TApplicationException, 'getMultiple', self.t,
                        [T2.TGet(row=b'row-a'),
                         T2.TGet(row=b'row-b', existence_only=True)])
        self.eq(e.type, harness.TApplicationException.INTERNAL_ERROR)
        self.assertIn('getMultiple', e.message)
        # existence_only=false is an ordinary Get
        r = self.call('get', self.t, T2.TGet(row=b'row-a',
                                             existence_only=False))
        self.eq(cells(r), [(b'cf', b'q', 10, b'a')])
        rs = self.call('getMultiple', self.t, [
            T2.TGet(row=b'row-a', existence_only=False),
            T2.TGet(row=b'nope', existence_only=False)])
        self.eq([r.row for r in rs], [b'row-a', None])
        # a missing table fails first, as an IOException
        e = self.raises(T2.TIOError, 'get', b'no_such_table',
                        T2.TGet(row=b'row-a', existence_only=True))
        # the client's own exception: getMessage(), the bare name, as
        # real HBase 2.6.1 answers (test_emu_vs_real.py)
        self.eq(e.message, 'no_such_table')
        # exists/existsAll check existence whatever the flag says
        for flag in (True, False):
            self.eq(self.call('exists', self.t, T2.TGet(
                row=b'row-a', existence_only=flag)), True)
            self.eq(self.call('existsAll', self.t, [
                T2.TGet(row=b'nope', existence_only=flag),
                T2.TGet(row=b'row-c', existence_only=flag)]), [False, True])
        # the connection survived the undeclared exceptions
        self.eq(self.call('get', self.t, T2.TGet(row=b'row-b')).row,
                b'row-b')

    def test_store_limit_and_offset(self):
        # setMaxResultsPerColumnFamily / setRowOffsetPerColumnFamily
        # apply per family (section 2.3)
        r = self.call('get', self.t, T2.TGet(row=b'wide', storeLimit=2))
        self.eq([(c[0], c[1]) for c in cells(r)],
                [(b'cf', b'a'), (b'cf', b'b'), (b'cf2', b'x'),
                 (b'cf2', b'y')])
        r = self.call('get', self.t, T2.TGet(row=b'wide', storeOffset=3))
        self.eq([(c[0], c[1]) for c in cells(r)],
                [(b'cf', b'd'), (b'cf', b'e')])
        r = self.call('get', self.t, T2.TGet(row=b'wide', storeOffset=1,
                                             storeLimit=2))
        self.eq([(c[0], c[1]) for c in cells(r)],
                [(b'cf', b'b'), (b'cf', b'c'), (b'cf2', b'y')])

    def test_columns_and_filter(self):
        r = self.call('get', self.t, T2.TGet(row=b'wide', columns=[
            T2.TColumn(family=b'cf', qualifier=b'b'),
            T2.TColumn(family=b'cf2')]))
        self.eq([(c[0], c[1]) for c in cells(r)],
                [(b'cf', b'b'), (b'cf2', b'x'), (b'cf2', b'y')])
        r = self.call('get', self.t, T2.TGet(
            row=b'wide', filterString=b"QualifierFilter(=, 'binary:d')"))
        self.eq([c[1] for c in cells(r)], [b'd'])

    def test_batch_size_partial(self):
        # batchSize splits a row into consecutive results with the same
        # row; all but its last are partial (section 2.3, section 4)
        rs = self.scan_all(self.t, T2.TScan(startRow=b'wide',
                                            stopRow=b'wide\x00',
                                            batchSize=3))
        self.eq([(r.row, len(r.columnValues), r.partial) for r in rs],
                [(b'wide', 3, True), (b'wide', 3, True),
                 (b'wide', 1, False)])

    def test_limit(self):
        rs = self.scan_all(self.t, T2.TScan(startRow=b'row-', limit=3), n=2)
        self.eq([r.row for r in rs], [b'row-a', b'row-b', b'row-c'])
        # the limit counts rows, not the results batchSize makes
        rs = self.scan_all(self.t, T2.TScan(startRow=b'w', limit=1,
                                            batchSize=2))
        self.eq([(r.row, r.partial) for r in rs],
                [(b'wide', True), (b'wide', True), (b'wide', True),
                 (b'wide', False)])

    def test_reversed_scan(self):
        # reversed: start is the high key (inclusive), stop the low one
        # (exclusive) (section 4, Reversed scans)
        rs = self.scan_all(self.t, T2.TScan(startRow=b'row-e',
                                            stopRow=b'row-b', reversed=True))
        self.eq([r.row for r in rs], [b'row-e', b'row-d', b'row-c'])
        rs = self.scan_all(self.t, T2.TScan(reversed=True, limit=2))
        self.eq([r.row for r in rs], [b'wide', b'ver'])

    def test_scan_time_ranges(self):
        rs = self.scan_all(self.t, T2.TScan(
            startRow=b'ver', stopRow=b'ver\x00', maxVersions=3,
            timeRange=T2.TTimeRange(minStamp=150, maxStamp=400)))
        self.eq([c[2] for c in cells(rs[0])], [300, 200])
        # colFamTimeRangeMap replaces the range for its family
        rs = self.scan_all(self.t, T2.TScan(
            startRow=b'ver', stopRow=b'ver\x00', maxVersions=3,
            colFamTimeRangeMap={b'cf': T2.TTimeRange(minStamp=0,
                                                     maxStamp=150)}))
        self.eq([c[2] for c in cells(rs[0])], [100])

    def test_get_scan_quirk(self):
        # setStartRow/setStopRow: start == stop is a get scan (section 4)
        rs = self.scan_all(self.t, T2.TScan(startRow=b'row-b',
                                            stopRow=b'row-b'))
        self.eq([r.row for r in rs], [b'row-b'])

    def test_get_scanner_results(self):
        rs = self.call('getScannerResults', self.t,
                       T2.TScan(startRow=b'row-'), 2)
        self.eq([r.row for r in rs], [b'row-a', b'row-b'])


class T04Scanners(Base):
    def test_unknown_scanner_ids(self):
        t = self.mk_table('sc')
        # getScannerRows: TIllegalArgument("Invalid scanner Id") (2.3)
        e = self.raises(T2.TIllegalArgument, 'getScannerRows', 987654, 1)
        self.eq(e.message, 'Invalid scanner Id')
        # closeScanner on an unknown id returns normally in 2.x (2.3)
        self.call('closeScanner', 987654)
        sid = self.call('openScanner', t, T2.TScan())
        self.call('closeScanner', sid)
        self.raises(T2.TIllegalArgument, 'getScannerRows', sid, 1)
        self.call('closeScanner', sid)

    def test_thrift1_ids_are_not_thrift2_ids(self):
        # separate servers, separate scanner maps (section 3.7)
        t = self.mk_table('sc1')
        sid = self.call('scannerOpen', t, b'', [], {}, conn=self.c1)
        self.raises(T2.TIllegalArgument, 'getScannerRows', sid, 1)
        self.eq(self.call('scannerGetList', sid, 1, conn=self.c1), [])
        self.call('scannerClose', sid, conn=self.c1)


class T05Writes(Base):
    def test_delete_types(self):
        t = self.mk_table('del', {b'cf': 3, b'cf2': 3})
        put = T2.TPut(row=b'r', columnValues=[
            cv(b'cf', b'a', b'1', 1), cv(b'cf', b'a', b'2', 2),
            cv(b'cf', b'a', b'3', 3), cv(b'cf', b'b', b'x', 1),
            cv(b'cf2', b'z', b'z', 1)])
        self.call('put', t, put)

        def now():
            r = self.call('get', t, T2.TGet(row=b'r', maxVersions=3))
            return [(c[0], c[1], c[2]) for c in cells(r)]
        # DELETE_COLUMN without timestamp: the newest version only
        self.call('deleteSingle', t, T2.TDelete(
            row=b'r', columns=[T2.TColumn(family=b'cf', qualifier=b'a')],
            deleteType=T2.TDeleteType.DELETE_COLUMN))
        self.eq(now(), [(b'cf', b'a', 2), (b'cf', b'a', 1), (b'cf', b'b', 1),
                        (b'cf2', b'z', 1)])
        # DELETE_COLUMN with a timestamp: that version
        self.call('deleteSingle', t, T2.TDelete(
            row=b'r', columns=[T2.TColumn(family=b'cf', qualifier=b'a',
                                          timestamp=1)],
            deleteType=T2.TDeleteType.DELETE_COLUMN))
        self.eq(now(), [(b'cf', b'a', 2), (b'cf', b'b', 1),
                        (b'cf2', b'z', 1)])
        # DELETE_COLUMNS (the default): every version
        self.eq(self.call('deleteMultiple', t, [T2.TDelete(
            row=b'r', columns=[T2.TColumn(family=b'cf', qualifier=b'a')])]),
            [])
        self.eq(now(), [(b'cf', b'b', 1), (b'cf2', b'z', 1)])
        # DELETE_FAMILY
        self.call('deleteSingle', t, T2.TDelete(
            row=b'r', columns=[T2.TColumn(family=b'cf')],
            deleteType=T2.TDeleteType.DELETE_FAMILY))
        self.eq(now(), [(b'cf2', b'z', 1)])
        # no columns: the whole row
        self.call('deleteSingle', t, T2.TDelete(row=b'r'))
        self.eq(now(), [])

    def test_mutate_row_and_check_and(self):
        t = self.mk_table('cam')
        self.call('mutateRow', t, T2.TRowMutations(row=b'm', mutations=[
            T2.TMutation(put=T2.TPut(row=b'm', columnValues=[
                cv(b'cf', b'n', b'5')])),
            T2.TMutation(put=T2.TPut(row=b'm', columnValues=[
                cv(b'cf', b'o', b'x')]))]))
        # checkAndPut with no value: ifNotExists
        self.eq(self.call('checkAndPut', t, b'm', b'cf', b'n', None,
                          T2.TPut(row=b'm', columnValues=[
                              cv(b'cf', b'p', b'1')])), False)
        self.eq(self.call('checkAndPut', t, b'm', b'cf', b'zz', None,
                          T2.TPut(row=b'm', columnValues=[
                              cv(b'cf', b'p', b'1')])), True)
        # checkAndMutate compares "value OP cell": 4 < 5 holds
        rm = T2.TRowMutations(row=b'm', mutations=[T2.TMutation(
            deleteSingle=T2.TDelete(row=b'm', columns=[
                T2.TColumn(family=b'cf', qualifier=b'o')]))])
        self.eq(self.call('checkAndMutate', t, b'm', b'cf', b'n',
                          T2.TCompareOperator.GREATER, b'4', rm), False)
        self.eq(self.call('checkAndMutate', t, b'm', b'cf', b'n',
                          T2.TCompareOperator.LESS, b'4', rm), True)
        self.eq(self.call('checkAndDelete', t, b'm', b'cf', b'p', b'1',
                          T2.TDelete(row=b'm')), True)
        self.eq(self.call('get', t, T2.TGet(row=b'm')).row, None)
        # a mutation for another row: DoNotRetryIOException, canRetry false
        e = self.raises(T2.TIOError, 'checkAndPut', t, b'm', b'cf', b'n',
                        None, T2.TPut(row=b'other', columnValues=[
                            cv(b'cf', b'p', b'1')]))
        self.eq(e.canRetry, False)

    def test_increment_append(self):
        t = self.mk_table('inc')
        r = self.call('increment', t, T2.TIncrement(row=b'c', columns=[
            T2.TColumnIncrement(family=b'cf', qualifier=b'n', amount=5)]))
        self.eq((r.row, [(c[1], c[3]) for c in cells(r)]),
                (b'c', [(b'n', (5).to_bytes(8, 'big'))]))
        r = self.call('increment', t, T2.TIncrement(
            row=b'c', returnResults=False, columns=[
                T2.TColumnIncrement(family=b'cf', qualifier=b'n')]))
        self.eq((r.row, r.columnValues), (None, []))
        r = self.call('append', t, T2.TAppend(row=b'c', columns=[
            cv(b'cf', b's', b'ab')]))
        r = self.call('append', t, T2.TAppend(row=b'c', columns=[
            cv(b'cf', b's', b'cd')]))
        self.eq([(c[1], c[3]) for c in cells(r)], [(b's', b'abcd')])
        self.eq(self.call('get', t, T2.TGet(row=b'c', columns=[
            T2.TColumn(family=b'cf', qualifier=b'n')])).columnValues[0].value,
            (6).to_bytes(8, 'big'))
        # not a long: DoNotRetryIOException, so canRetry false (2.3)
        e = self.raises(T2.TIOError, 'increment', t, T2.TIncrement(
            row=b'c', columns=[T2.TColumnIncrement(family=b'cf',
                                                   qualifier=b's')]))
        self.eq(e.canRetry, False)

    def test_errors(self):
        e = self.raises(T2.TIOError, 'get', b'no_such_table',
                        T2.TGet(row=b'x'))
        self.eq(e.message, 'no_such_table')   # the client's own: bare
        self.eq(e.canRetry, False)
        t = self.mk_table('err')
        e = self.raises(T2.TIOError, 'put', t, T2.TPut(
            row=b'x', columnValues=[cv(b'nofam', b'q', b'v')]))
        self.assertIn('NoSuchColumnFamilyException', e.message)
        # new Put(empty row) throws IllegalArgumentException: undeclared
        e = self.raises(harness.TApplicationException, 'put', t, T2.TPut(
            row=b'', columnValues=[cv(b'cf', b'q', b'v')]))
        self.eq(e.type, harness.TApplicationException.INTERNAL_ERROR)


# ---- filterBytes: a protobuf FilterProtos.Filter, encoded by hand ---------

# CompareType, FilterList.Operator, java.util.regex.Pattern flags
LESS, LESS_OR_EQUAL, EQUAL, NOT_EQUAL, GREATER_OR_EQUAL, GREATER = range(6)
MUST_PASS_ALL, MUST_PASS_ONE = 1, 2
CASE_INSENSITIVE, DOTALL = 0x02, 0x20


def pb_regex(pattern, flags=DOTALL, charset='UTF-8', engine='JAVA'):
    fields = [pb_field(1, pattern), pb_field(2, flags), pb_field(3, charset)]
    if engine is not None:
        fields.append(pb_field(4, engine))
    return pb_filter('RegexStringComparator', *fields)


def pb_list(op, *filters):
    return pb_filter('FilterList', pb_field(1, op),
                     *[pb_field(2, f) for f in filters])


class T07FilterBytes(Base):
    """TScan/TGet.filterBytes: HBase reads a protobuf Filter (section 2.3);
    each case must answer as the same filter given as filterString."""

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        h = cls('setUp')
        cls.t = h.mk_table('fb', {b'cf': 1, b'cf2': 1})
        puts = []
        for i, k in enumerate((b'a1', b'a2', b'ab', b'b1', b'bA', b'c1',
                               b'cab', b'd')):
            puts.append(T2.TPut(row=k, columnValues=[
                cv(b'cf', b'q', b'v%d' % i), cv(b'cf', b'r', k + b'!'),
                cv(b'cf2', b'x', b'%d' % (i % 3))]))
        h.call('putMultiple', cls.t, puts)

    CASES = [
        (pb_filter('PrefixFilter', pb_field(1, 'a')),
         b"PrefixFilter('a')"),
        (pb_filter('InclusiveStopFilter', pb_field(1, 'b1')),
         b"InclusiveStopFilter('b1')"),
        (pb_compare('RowFilter', GREATER_OR_EQUAL, pb_binary('c')),
         b"RowFilter(>=, 'binary:c')"),
        (pb_compare('RowFilter', LESS,
                    pb_binary('b', 'BinaryPrefixComparator')),
         b"RowFilter(<, 'binaryprefix:b')"),
        (pb_compare('RowFilter', EQUAL, pb_regex('^[ab][0-9]$')),
         b"RowFilter(=, 'regexstring:^[ab][0-9]$')"),
        (pb_compare('RowFilter', EQUAL, pb_regex('A', CASE_INSENSITIVE)),
         b"RowFilter(=, 'regexstring:(?i-s)A')"),
        (pb_compare('RowFilter', NOT_EQUAL, pb_filter(
            'SubstringComparator', pb_field(1, 'a'))),
         b"RowFilter(!=, 'substring:a')"),
        (pb_compare('ValueFilter', EQUAL, pb_binary('1')),
         b"ValueFilter(=, 'binary:1')"),
        (pb_compare('QualifierFilter', EQUAL, pb_binary('r')),
         b"QualifierFilter(=, 'binary:r')"),
        (pb_compare('FamilyFilter', EQUAL, pb_binary('cf2')),
         b"FamilyFilter(=, 'binary:cf2')"),
        (pb_filter('SingleColumnValueFilter', pb_field(1, 'cf2'),
                   pb_field(2, 'x'), pb_field(3, EQUAL),
                   pb_field(4, pb_binary('2')), pb_field(5, 1),
                   pb_field(6, 1)),
         b"SingleColumnValueFilter('cf2', 'x', =, 'binary:2', true, true)"),
        (pb_filter('KeyOnlyFilter', pb_field(1, 0)), b"KeyOnlyFilter()"),
        (pb_filter('FirstKeyOnlyFilter'), b"FirstKeyOnlyFilter()"),
        (pb_filter('ColumnPrefixFilter', pb_field(1, 'r')),
         b"ColumnPrefixFilter('r')"),
        (pb_filter('PageFilter', pb_field(1, 3)), b"PageFilter(3)"),
        (pb_list(MUST_PASS_ONE,
                 pb_list(MUST_PASS_ALL,
                         pb_filter('PrefixFilter', pb_field(1, 'c')),
                         pb_compare('QualifierFilter', EQUAL,
                                    pb_binary('q'))),
                 pb_compare('RowFilter', EQUAL, pb_binary('a2'))),
         b"(PrefixFilter('c') AND QualifierFilter(=, 'binary:q')) OR "
         b"RowFilter(=, 'binary:a2')"),
        (pb_filter('WhileMatchFilter', pb_field(1, pb_compare(
            'RowFilter', LESS, pb_binary('b')))),
         b"WHILE RowFilter(<, 'binary:b')"),
        (pb_filter('SkipFilter', pb_field(1, pb_compare(
            'ValueFilter', NOT_EQUAL, pb_binary('0')))),
         b"SKIP ValueFilter(!=, 'binary:0')"),
    ]

    def test_scan_same_as_string(self):
        for pb, text in self.CASES:
            for rev in (False, True):
                got = self.scan_all(self.t, T2.TScan(filterBytes=pb,
                                                     reversed=rev), n=2)
                exp = self.scan_all(self.t, T2.TScan(filterString=text,
                                                     reversed=rev), n=2)
                self.eq([(r.row, cells(r)) for r in got],
                        [(r.row, cells(r)) for r in exp],
                        '%s reversed=%s' % (text.decode(), rev))
        # the filters do filter: not every case is the whole table
        rs = self.scan_all(self.t, T2.TScan(filterBytes=self.CASES[0][0]))
        self.eq([r.row for r in rs], [b'a1', b'a2', b'ab'])

    def test_get_same_as_string(self):
        for pb, text in self.CASES:
            for row in (b'a2', b'cab'):
                got = self.call('get', self.t, T2.TGet(row=row,
                                                       filterBytes=pb))
                exp = self.call('get', self.t, T2.TGet(row=row,
                                                       filterString=text))
                self.eq((got.row, cells(got)), (exp.row, cells(exp)),
                        text.decode())

    def test_bytes_win_over_string(self):
        # scanFromThrift/getFromThrift set filterBytes after filterString
        rs = self.scan_all(self.t, T2.TScan(
            filterString=b"PrefixFilter('b')",
            filterBytes=pb_filter('PrefixFilter', pb_field(1, 'c'))))
        self.eq([r.row for r in rs], [b'c1', b'cab'])

    def test_errors(self):
        # FilterProtos.Filter.parseFrom: InvalidProtocolBufferException,
        # an IOException, so retryable
        e = self.raises(T2.TIOError, 'openScanner', self.t,
                        T2.TScan(filterBytes=b'\x0a\x05ab'))
        self.assertIn('input ended unexpectedly', e.message)
        self.eq(e.canRetry, True)
        e = self.raises(T2.TIOError, 'get', self.t,
                        T2.TGet(row=b'a1', filterBytes=b''))
        self.eq(e.message, 'Message missing required fields: name')
        # ProtobufUtil.toFilter: DoNotRetryIOException(cause)
        e = self.raises(T2.TIOError, 'openScanner', self.t, T2.TScan(
            filterBytes=pb_filter('com.example.NoSuchFilter')))
        self.eq((e.message, e.canRetry),
                ('java.lang.ClassNotFoundException: com.example.NoSuchFilter',
                 False))
        for bad in (pb_filter('PageFilter', pb_field(1, -1)),
                    pb_filter('PageFilter'),
                    pb_list(MUST_PASS_ALL, pb_filter('com.example.X')),
                    pb_compare('RowFilter', EQUAL, pb_regex('(')),
                    pb_filter('PrefixFilter', b'\x0a\x09')):
            e = self.raises(T2.TIOError, 'openScanner', self.t,
                            T2.TScan(filterBytes=bad))
            self.eq((e.message, e.canRetry),
                    ('java.lang.reflect.InvocationTargetException', False),
                    repr(bad))


class T06Admin(Base):
    def test_create_table_with_split_keys(self):
        splits = [b'\x80', b'g', b'\x00\x01']
        t = self.mk_table('split', splits=splits)
        locs = self.call('getAllRegionLocations', t)
        bounds = [(l.regionInfo.startKey, l.regionInfo.endKey) for l in locs]
        self.eq(bounds, [(b'', b'\x00\x01'), (b'\x00\x01', b'g'),
                         (b'g', b'\x80'), (b'\x80', b'')])
        self.eq({l.regionInfo.tableName for l in locs}, {t})
        loc = self.call('getRegionLocation', t, b'h', False)
        self.eq((loc.regionInfo.startKey, loc.regionInfo.endKey),
                (b'g', b'\x80'))
        tn = T2.TTableName(qualifier=t)
        self.eq(self.call('isTableAvailableWithSplit', tn, splits), True)
        self.eq(self.call('isTableAvailableWithSplit', tn, [b'g']), False)
        # the same regions through Thrift1
        regs = self.call('getTableRegions', t, conn=self.c1)
        self.eq([(r.startKey, r.endKey) for r in regs], bounds)

    def test_table_lifecycle(self):
        t = self.mk_table('life', splits=[b'm'])
        tn = T2.TTableName(qualifier=t)
        d = self.call('getTableDescriptor', tn)
        self.eq((d.tableName.ns, d.tableName.qualifier), (b'default', t))
        self.eq([(c.name, c.maxVersions) for c in d.columns], [(b'cf', 3)])
        e = self.raises(T2.TIOError, 'createTable', d, [])
        self.assertIn('TableExistsException', e.message)
        self.assertIn(t, [n.qualifier for n in self.call(
            'getTableNamesByPattern', 't2c.*_life', False)])
        self.eq(self.call('getTableNamesByPattern', 'life', False), [])
        self.call('put', t, T2.TPut(row=b'x', columnValues=[
            cv(b'cf', b'q', b'v')]))
        e = self.raises(T2.TIOError, 'truncateTable', tn, True)
        self.assertIn('TableNotDisabledException', e.message)
        self.call('disableTable', tn)
        self.eq((self.call('isTableEnabled', tn),
                 self.call('isTableDisabled', tn),
                 self.call('isTableAvailable', tn)), (False, True, False))
        e = self.raises(T2.TIOError, 'get', t, T2.TGet(row=b'x'))
        self.eq(e.message, t.decode() + ' is disabled.')
        self.call('truncateTable', tn, True)
        self.eq(self.call('isTableEnabled', tn), True)
        self.eq(self.call('get', t, T2.TGet(row=b'x')).row, None)
        self.eq(len(self.call('getAllRegionLocations', t)), 2)
        self.call('disableTable', tn)
        self.call('deleteTable', tn)
        self.eq(self.call('tableExists', tn), False)

    def test_namespaces(self):
        self.call('createNamespace', T2.TNamespaceDescriptor(name='t2ns'))
        self.assertIn('t2ns', self.call('listNamespaces'))
        self.assertIn('hbase', [d.name for d in self.call(
            'listNamespaceDescriptors')])
        self.eq(self.call('getNamespaceDescriptor', 't2ns').name, 't2ns')
        name = T2.TTableName(ns=b't2ns', qualifier=b'nt')
        self.call('createTable', T2.TTableDescriptor(
            tableName=name, columns=[T2.TColumnFamilyDescriptor(
                name=b'f')]), [])
        self.eq([(n.ns, n.qualifier) for n in self.call(
            'getTableNamesByNamespace', 't2ns')], [(b't2ns', b'nt')])
        # the Thrift1 listener sees the same table by its full name
        self.call('mutateRow', b't2ns:nt', b'r',
                  [harness.T.Mutation(column=b'f:q', value=b'v')], {},
                  conn=self.c1)
        self.eq(self.call('get', b't2ns:nt', T2.TGet(row=b'r')).row, b'r')
        e = self.raises(T2.TIOError, 'deleteNamespace', 't2ns')
        self.assertIn('ConstraintException', e.message)
        self.call('disableTable', name)
        self.call('deleteTable', name)
        self.call('deleteNamespace', 't2ns')
        e = self.raises(T2.TIOError, 'getNamespaceDescriptor', 't2ns')
        self.assertIn('NamespaceNotFoundException', e.message)


class T07ScannerExpiry(Base):
    """Idle Thrift2 scanners expire (section 2.3, Scanners).

    HBase's thrift2 handler keeps its scanners in a Guava cache with
    expireAfterAccess(hbase.client.scanner.timeout.period, default
    60000 ms), not the Thrift1 handler's doubled period; an expired id is
    an unknown one.  --thrift2-scanner-timeout-ms shortens it here.
    """

    TIMEOUT_MS = 1000

    @classmethod
    def setUpClass(cls):
        cls.emu = Emu2('--thrift2-scanner-timeout-ms', str(cls.TIMEOUT_MS))
        cls.c2 = Conn2(cls.emu)
        cls.c1 = Conn(cls.emu)

    @classmethod
    def tearDownClass(cls):
        super().tearDownClass()
        cls.emu.stop()

    def test_expiry_and_keepalive(self):
        t = self.mk_table('exp')
        self.call('putMultiple', t, [
            T2.TPut(row=b'r%03d' % i, columnValues=[cv(b'cf', b'q', b'v')])
            for i in range(100)])
        idle = self.call('openScanner', t, T2.TScan())
        busy = self.call('openScanner', t, T2.TScan())
        # Thrift1's scanners keep their own (default 120 s) timeout
        old1 = self.call('scannerOpen', t, b'', [], {}, conn=self.c1)
        t0 = time.time()
        while time.time() - t0 < 2.5 * self.TIMEOUT_MS / 1000:
            self.eq(len(self.call('getScannerRows', busy, 1)), 1,
                    'a scanner in use must not expire')
            time.sleep(0.1)
        e = self.raises(T2.TIllegalArgument, 'getScannerRows', idle, 1)
        self.eq(e.message, 'Invalid scanner Id')
        # 2.x: closing an expired scanner logs and returns normally
        self.call('closeScanner', idle)
        self.call('closeScanner', busy)
        self.raises(T2.TIllegalArgument, 'getScannerRows', busy, 1)
        self.eq(len(self.call('scannerGetList', old1, 1, conn=self.c1)), 1)
        self.call('scannerClose', old1, conn=self.c1)


class T08Schema(Base):
    """Schema changes: Admin.addColumnFamily / deleteColumnFamily /
    modifyColumnFamily / modifyTable behind the thrift2 handler.

    The handler converts the Thrift descriptors with
    ColumnFamilyDescriptorBuilder / TableDescriptorBuilder, so a descriptor
    replaces the old one whole (unset fields take the builder's defaults:
    1 version, ROW bloom filter, TTL forever); HMaster refuses unknown
    families with InvalidFamilyOperationException and missing tables with
    TableNotFoundException, both DoNotRetryIOExceptions.
    """

    def desc(self, t):
        return self.call('getTableDescriptor', T2.TTableName(qualifier=t))

    def fams(self, t):
        return [(c.name, c.maxVersions) for c in self.desc(t).columns]

    def test_modify_column_family(self):
        t = self.mk_table('mcf', {b'cf': 3, b'cf2': 3})
        tn = T2.TTableName(qualifier=t)
        self.call('putMultiple', t, [
            T2.TPut(row=b'r', columnValues=[cv(b'cf', b'q', b'v%d' % ts, ts)])
            for ts in (1, 2, 3)])
        r = self.call('get', t, T2.TGet(row=b'r', maxVersions=5))
        self.eq([c[2] for c in cells(r)], [3, 2, 1])
        self.call('modifyColumnFamily', tn, T2.TColumnFamilyDescriptor(
            name=b'cf', maxVersions=2, timeToLive=3600, inMemory=True))
        cf = [c for c in self.desc(t).columns if c.name == b'cf'][0]
        self.eq((cf.maxVersions, cf.timeToLive, cf.inMemory,
                 cf.blockCacheEnabled, cf.bloomnFilterType),
                (2, 3600, True, True, T2.TBloomFilterType.ROW))
        self.eq(self.fams(t), [(b'cf', 2), (b'cf2', 3)])
        # a lower maxVersions hides the older versions at once
        r = self.call('get', t, T2.TGet(row=b'r', maxVersions=5))
        self.eq([c[2] for c in cells(r)], [3, 2])
        # the whole descriptor is replaced: unset fields are defaults
        self.call('modifyColumnFamily', tn,
                  T2.TColumnFamilyDescriptor(name=b'cf'))
        cf = [c for c in self.desc(t).columns if c.name == b'cf'][0]
        self.eq((cf.maxVersions, cf.timeToLive, cf.inMemory),
                (1, 2147483647, False))
        e = self.raises(T2.TIOError, 'modifyColumnFamily', tn,
                        T2.TColumnFamilyDescriptor(name=b'nope'))
        self.eq(e.message, 'org.apache.hadoop.hbase.'
                'InvalidFamilyOperationException: Family \'nope\' does not '
                'exist, so it cannot be modified')
        self.eq(e.canRetry, False)
        e = self.raises(T2.TIOError, 'modifyColumnFamily',
                        T2.TTableName(qualifier=b'no_such_table'),
                        T2.TColumnFamilyDescriptor(name=b'cf'))
        self.assertIn('TableNotFoundException', e.message)
        self.eq(e.canRetry, False)
        # ColumnFamilyDescriptorBuilder's own refusal is unchecked
        e = self.raises(harness.TApplicationException, 'modifyColumnFamily',
                        tn, T2.TColumnFamilyDescriptor(name=b'cf',
                                                       maxVersions=0))
        self.eq(e.type, harness.TApplicationException.INTERNAL_ERROR)
        # a disabled table can be changed and stays disabled
        self.call('disableTable', tn)
        self.call('modifyColumnFamily', tn, T2.TColumnFamilyDescriptor(
            name=b'cf2', maxVersions=7))
        self.eq(self.fams(t), [(b'cf', 1), (b'cf2', 7)])
        self.eq(self.call('isTableDisabled', tn), True)
        self.call('enableTable', tn)
        self.eq(len(cells(self.call('get', t, T2.TGet(row=b'r')))), 1)

    def test_modify_table(self):
        t = self.mk_table('mt', {b'cf1': 3, b'cf2': 3}, splits=[b'm'])
        tn = T2.TTableName(qualifier=t)
        locs = self.call('getAllRegionLocations', t)
        self.call('putMultiple', t, [
            T2.TPut(row=b'a', columnValues=[cv(b'cf1', b'q', b'1'),
                                            cv(b'cf2', b'q', b'2')]),
            T2.TPut(row=b'z', columnValues=[cv(b'cf1', b'q', b'3')])])
        self.call('modifyTable', T2.TTableDescriptor(
            tableName=tn,
            columns=[T2.TColumnFamilyDescriptor(name=b'cf2', maxVersions=5),
                     T2.TColumnFamilyDescriptor(name=b'cf3')],
            attributes={b'k': b'v', b'gone': b''},
            durability=T2.TDurability.ASYNC_WAL))
        d = self.desc(t)
        self.eq([(c.name, c.maxVersions) for c in d.columns],
                [(b'cf2', 5), (b'cf3', 1)])
        # tableDescriptorFromHBase lists every value, DURABILITY included;
        # an empty value removes its key
        self.eq(d.attributes, {b'k': b'v', b'DURABILITY': b'ASYNC_WAL'})
        self.eq(d.durability, T2.TDurability.ASYNC_WAL)
        # cf1's cells went with it; a row holding only cf1 is gone
        self.eq([(c[0], c[1], c[3]) for c in cells(self.call(
            'get', t, T2.TGet(row=b'a')))], [(b'cf2', b'q', b'2')])
        self.eq(self.call('get', t, T2.TGet(row=b'z')).row, None)
        e = self.raises(T2.TIOError, 'put', t, T2.TPut(
            row=b'x', columnValues=[cv(b'cf1', b'q', b'v')]))
        self.assertIn('NoSuchColumnFamilyException', e.message)
        self.call('put', t, T2.TPut(row=b'x', columnValues=[
            cv(b'cf3', b'q', b'v')]))
        self.eq(cells(self.call('get', t, T2.TGet(row=b'x')))[0][0], b'cf3')
        # regions, their names and the enabled state are kept
        self.eq(self.call('getAllRegionLocations', t), locs)
        self.eq(self.call('isTableEnabled', tn), True)
        # the Thrift1 listener sees the new schema
        self.eq(sorted(self.call('getColumnDescriptors', t, conn=self.c1)),
                [b'cf2:', b'cf3:'])
        # a descriptor without values clears them
        self.call('modifyTable', T2.TTableDescriptor(
            tableName=tn, columns=[T2.TColumnFamilyDescriptor(name=b'cf2')]))
        d = self.desc(t)
        self.eq((d.attributes, d.durability),
                (None, T2.TDurability.USE_DEFAULT))
        self.eq([c.name for c in d.columns], [b'cf2'])
        # TableDescriptorChecker: no family at all
        e = self.raises(T2.TIOError, 'modifyTable', T2.TTableDescriptor(
            tableName=tn, columns=[]))
        self.assertIn('Table should have at least one column family',
                      e.message)
        self.eq(e.canRetry, False)
        e = self.raises(T2.TIOError, 'modifyTable', T2.TTableDescriptor(
            tableName=T2.TTableName(qualifier=b'no_such_table'),
            columns=[T2.TColumnFamilyDescriptor(name=b'cf')]))
        self.assertIn('TableNotFoundException', e.message)
        # TableDescriptorBuilder refuses a repeated family: unchecked
        e = self.raises(harness.TApplicationException, 'modifyTable',
                        T2.TTableDescriptor(tableName=tn, columns=[
                            T2.TColumnFamilyDescriptor(name=b'cf2'),
                            T2.TColumnFamilyDescriptor(name=b'cf2')]))
        self.eq(e.type, harness.TApplicationException.INTERNAL_ERROR)
        self.eq([c.name for c in self.desc(t).columns], [b'cf2'])

    def test_create_table_keeps_values(self):
        name = self.tname('cv')
        tn = T2.TTableName(qualifier=name)
        self.call('createTable', T2.TTableDescriptor(
            tableName=tn, columns=[T2.TColumnFamilyDescriptor(name=b'f')],
            attributes={b'owner': b'me'},
            durability=T2.TDurability.SKIP_WAL), [])
        d = self.call('getTableDescriptor', tn)
        self.eq(d.attributes, {b'owner': b'me', b'DURABILITY': b'SKIP_WAL'})
        self.eq(d.durability, T2.TDurability.SKIP_WAL)
        # truncateTable keeps the descriptor
        self.call('disableTable', tn)
        self.call('truncateTable', tn, False)
        self.eq(self.call('getTableDescriptor', tn).attributes,
                {b'owner': b'me', b'DURABILITY': b'SKIP_WAL'})

    def test_add_and_delete_column_family(self):
        t = self.mk_table('adcf', {b'cf': 2})
        tn = T2.TTableName(qualifier=t)
        self.call('put', t, T2.TPut(row=b'r', columnValues=[
            cv(b'cf', b'q', b'v')]))
        self.call('addColumnFamily', tn,
                  T2.TColumnFamilyDescriptor(name=b'new', maxVersions=4))
        self.eq(self.fams(t), [(b'cf', 2), (b'new', 4)])
        self.call('put', t, T2.TPut(row=b'r', columnValues=[
            cv(b'new', b'q', b'n')]))
        self.eq([c[0] for c in cells(self.call('get', t, T2.TGet(
            row=b'r')))], [b'cf', b'new'])
        e = self.raises(T2.TIOError, 'addColumnFamily', tn,
                        T2.TColumnFamilyDescriptor(name=b'cf'))
        self.eq(e.message, "org.apache.hadoop.hbase."
                "InvalidFamilyOperationException: Column family 'cf' in "
                "table '%s' already exists so cannot be added" % t.decode())
        self.eq(e.canRetry, False)
        self.call('deleteColumnFamily', tn, b'cf')
        self.eq(self.fams(t), [(b'new', 4)])
        self.eq(cells(self.call('get', t, T2.TGet(row=b'r')))[0][:2],
                (b'new', b'q'))
        e = self.raises(T2.TIOError, 'deleteColumnFamily', tn, b'cf')
        self.eq(e.message, "org.apache.hadoop.hbase."
                "InvalidFamilyOperationException: Family 'cf' does not "
                "exist, so it cannot be deleted")
        e = self.raises(T2.TIOError, 'deleteColumnFamily', tn, b'new')
        self.eq(e.message, "org.apache.hadoop.hbase."
                "InvalidFamilyOperationException: Family 'new' is the only "
                "column family in the table, so it cannot be deleted")
        e = self.raises(T2.TIOError, 'addColumnFamily',
                        T2.TTableName(qualifier=b'no_such_table'),
                        T2.TColumnFamilyDescriptor(name=b'x'))
        self.assertIn('TableNotFoundException', e.message)

    def test_open_scanner_keeps_reading(self):
        # A scanner opened before the change goes on with what it saw
        # (the emulator's table object is replaced, not edited).
        t = self.mk_table('msc', {b'cf': 1, b'cf2': 1})
        self.call('putMultiple', t, [
            T2.TPut(row=b'r%d' % i, columnValues=[cv(b'cf', b'q', b'v')])
            for i in range(3)])
        sid = self.call('openScanner', t, T2.TScan())
        self.eq(len(self.call('getScannerRows', sid, 1)), 1)
        self.call('addColumnFamily', T2.TTableName(qualifier=t),
                  T2.TColumnFamilyDescriptor(name=b'cf0'))
        self.call('put', t, T2.TPut(row=b'r0', columnValues=[
            cv(b'cf0', b'q', b'v')]))
        self.eq(len(self.call('getScannerRows', sid, 10)), 2)
        self.call('closeScanner', sid)
        rs = self.scan_all(t, T2.TScan())
        self.eq([c[0] for c in cells(rs[0])], [b'cf', b'cf0'])
        # but it follows the table's state: disabled, it fails
        sid = self.call('openScanner', t, T2.TScan())
        self.call('deleteColumnFamily', T2.TTableName(qualifier=t), b'cf2')
        self.call('disableTable', T2.TTableName(qualifier=t))
        e = self.raises(T2.TIOError, 'getScannerRows', sid, 1)
        self.assertIn('is disabled.', e.message)
        self.call('closeScanner', sid)


class T09HeldToReal(Base):
    """Answers real HBase 2.6.1 gave in test_emu_vs_real.py."""

    def test_scanner_ids_per_service(self):
        # two servers, two counters; getScannerResults takes no id
        t = self.mk_table('ids')
        first = self.call('openScanner', t, T2.TScan())
        for _ in range(3):
            self.call('scannerOpen', t, b'', [], {}, conn=self.c1)
        self.call('getScannerResults', t, T2.TScan(), 1)
        self.eq(self.call('openScanner', t, T2.TScan()), first + 1)

    def test_missing_table_answers(self):
        tn = T2.TTableName(qualifier=b'no_such_table')
        self.eq(self.call('isTableAvailable', tn), False)
        self.eq(self.call('getAllRegionLocations', b'no_such_table'), [])
        e = self.raises(T2.TIOError, 'put', b'no_such_table', T2.TPut(
            row=b'r', columnValues=[cv(b'cf', b'q', b'v')]))
        self.eq(e.message, 'no_such_table')
        # the client builds the Put first: a cell without a family is
        # CellBuilder's IllegalArgumentException, before the table
        e = self.raises(harness.TApplicationException, 'put',
                        b'no_such_table', T2.TPut(
                            row=b'r', columnValues=[cv(b'', b'q', b'v')]))
        self.eq(e.type, harness.TApplicationException.INTERNAL_ERROR)

    def test_check_and_order(self):
        t = self.mk_table('cao')
        self.call('put', t, T2.TPut(row=b'r', columnValues=[
            cv(b'cf', b'q', b'1')]))
        # a condition that fails answers false whatever the mutation's
        # families: the region checks those only once it holds
        bad = T2.TPut(row=b'r', columnValues=[cv(b'nope', b'q', b'x')])
        self.eq(self.call('checkAndPut', t, b'r', b'cf', b'q', b'2', bad),
                False)
        e = self.raises(T2.TIOError, 'checkAndPut', t, b'r', b'cf', b'q',
                        b'1', bad)
        self.assertIn('NoSuchColumnFamilyException', e.message)
        e = self.raises(T2.TIOError, 'checkAndDelete', t, b'r', b'cf', b'q',
                        b'1', T2.TDelete(row=b'r2'))
        self.eq(e.message, "org.apache.hadoop.hbase.DoNotRetryIOException: "
                "The row of the action <r2> doesn't match the original "
                "one <r>")
        e = self.raises(harness.TApplicationException, 'checkAndMutate', t,
                        b'r', b'cf', b'q', T2.TCompareOperator.EQUAL, None,
                        T2.TRowMutations(row=b'r', mutations=[T2.TMutation(
                            put=T2.TPut(row=b'r', columnValues=[
                                cv(b'cf', b'q', b'3')]))]))
        self.eq(e.type, harness.TApplicationException.INTERNAL_ERROR)

    def test_batch_on_missing_table(self):
        # AsyncProcess fails every action: RetriesExhaustedWithDetails
        put = T2.TPut(row=b'r', columnValues=[cv(b'cf', b'q', b'v')])
        e = self.raises(T2.TIOError, 'putMultiple', b'no_such_table',
                        [put, put])
        self.eq((e.message, e.canRetry), ('Failed 2 actions: no_such_table: '
                                          '2 times, servers with issues: '
                                          'null', True))
        e = self.raises(T2.TIOError, 'existsAll', b'no_such_table',
                        [T2.TGet(row=b'a'), T2.TGet(row=b'b')])
        self.eq(e.message, 'Failed 2 actions: no_such_table: 2 times, '
                'servers with issues: null')
        e = self.raises(T2.TIOError, 'mutateRow', b'no_such_table',
                        T2.TRowMutations(row=b'r', mutations=[
                            T2.TMutation(put=put)]))
        self.eq(e.message, 'Failed 1 action: no_such_table: 1 time, servers '
                'with issues: null')

    def test_namespace_configuration(self):
        self.call('createNamespace', T2.TNamespaceDescriptor(
            name='nsconf', configuration={'a': '1'}))
        self.eq(self.call('getNamespaceDescriptor', 'nsconf').configuration,
                {'a': '1'})
        self.call('modifyNamespace', T2.TNamespaceDescriptor(
            name='nsconf', configuration={'b': '2'}))
        self.eq(self.call('getNamespaceDescriptor', 'nsconf').configuration,
                {'b': '2'})
        self.eq(self.call('getNamespaceDescriptor', 'default').configuration,
                None)
        e = self.raises(T2.TIOError, 'createNamespace',
                        T2.TNamespaceDescriptor(name='nsconf'))
        self.assertIn('Namespace nsconf already exists', e.message)
        self.call('deleteNamespace', 'nsconf')


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--emu', default=CFG['emu'])
    ap.add_argument('--pydir', default=CFG['pydir'])
    ap.add_argument('--protocol', choices=('binary', 'compact'),
                    default=CFG['protocol'])
    ap.add_argument('--transport', choices=('buffered', 'framed'),
                    default=CFG['transport'])
    args, rest = ap.parse_known_args()
    CFG.update(emu=args.emu, pydir=args.pydir, protocol=args.protocol,
               transport=args.transport)
    if not CFG['emu'] or not os.access(CFG['emu'], os.X_OK):
        print('hbase-emu binary not found/executable: %r' % CFG['emu'],
              file=sys.stderr)
        return 2
    hsptest.import_thrift(CFG['pydir'], harness, globals())
    print('conformance-thrift2: protocol=%s transport=%s emu=%s'
          % (CFG['protocol'], CFG['transport'], CFG['emu']), file=sys.stderr)
    prog = unittest.main(module='__main__', argv=[sys.argv[0]] + rest,
                         exit=False, verbosity=2)
    return 0 if prog.result.wasSuccessful() else 1


if __name__ == '__main__':
    sys.exit(main())
