#!/usr/bin/python3
"""emu_smoke.py: starts hbase-emu on an ephemeral port and checks a round trip.

Usage: emu_smoke.py HBASE_EMU THRIFT_PY_DIR

Creates a table, puts, gets, scans (forward, reversed, prefix, batched),
checks an unknown method and garbage input, over buffered binary and
framed compact.  The full conformance suite lives in tests/conformance.
"""
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                '..', 'lib'))
import hsptest  # noqa: E402


def start(emu, extra, stderr=None):
    tmp = tempfile.mkdtemp(prefix='emu-smoke-')
    port_file = os.path.join(tmp, 'port')
    proc = subprocess.Popen([emu, '--listen', '127.0.0.1:0',
                             '--port-file', port_file] + extra,
                            stderr=stderr)
    for _ in range(200):
        if os.path.exists(port_file) and open(port_file).read().endswith('\n'):
            return proc, int(open(port_file).read())
        if proc.poll() is not None:
            raise SystemExit('hbase-emu exited early: %d' % proc.returncode)
        time.sleep(0.02)
    proc.kill()
    raise SystemExit('hbase-emu did not write its port')


def client(port, framed, compact):
    c = hsptest.client(port, 'compact' if compact else 'binary',
                       'framed' if framed else 'buffered', timeout=None)
    return c, c.transport


def check(cond, what):
    if not cond:
        raise AssertionError(what)


def exercise(c, port, framed):
    from hbase1.ttypes import (ColumnDescriptor, Mutation, TScan, IOError,
                              IllegalArgument, AlreadyExists)
    from thrift.Thrift import TApplicationException

    c.createTable(b't1', [ColumnDescriptor(name=b'cf:')])
    try:
        c.createTable(b't1', [ColumnDescriptor(name=b'cf:')])
        raise AssertionError('duplicate createTable accepted')
    except AlreadyExists as e:
        check(e.message == 'table name already in use', e.message)
    check(c.getTableNames() == [b't1'], 'getTableNames')

    for i in range(10):
        c.mutateRow(b't1', b'row%d' % i,
                    [Mutation(column=b'cf:a', value=b'v%d' % i)], {})
    cells = c.get(b't1', b'row3', b'cf:a', {})
    check(len(cells) == 1 and cells[0].value == b'v3', 'get: %r' % cells)
    check(c.getRow(b't1', b'nope', {}) == [], 'missing row not empty')
    rows = c.getRows(b't1', [b'row2', b'nope', b'row1', b'row2'], {})
    check([r.row for r in rows] == [b'row2', b'row1', b'row2'], 'getRows')
    check(rows[0].columns[b'cf:a'].value == b'v2', 'getRows columns')
    check(rows[0].sortedColumns is None, 'columns and sortedColumns both set')

    sid = c.scannerOpenWithStop(b't1', b'row2', b'row5', [], {})
    got = c.scannerGetList(sid, 100)
    check([r.row for r in got] == [b'row2', b'row3', b'row4'], 'scan range')
    check(c.scannerGetList(sid, 100) == [], 'scan end is an empty list')
    c.scannerClose(sid)
    try:
        c.scannerGet(sid)
        raise AssertionError('closed scanner still usable')
    except IllegalArgument as e:
        check(e.message == 'scanner ID is invalid', e.message)

    sid = c.scannerOpenWithScan(b't1', TScan(startRow=b'row7', reversed=True,
                                             sortColumns=True), {})
    got = c.scannerGetList(sid, 3)
    check([r.row for r in got] == [b'row7', b'row6', b'row5'], 'reversed')
    check(got[0].columns is None and got[0].sortedColumns[0].columnName ==
          b'cf:a', 'sortedColumns')
    c.scannerClose(sid)

    c.mutateRow(b't1', b'row1', [Mutation(column=b'cf:b', value=b'x'),
                                 Mutation(column=b'cf:c', value=b'y')], {})
    sid = c.scannerOpenWithScan(b't1', TScan(startRow=b'row1', stopRow=b'row2',
                                             batchSize=2), {})
    got = c.scannerGetList(sid, 10)
    check([len(r.columns) for r in got] == [2, 1] and
          all(r.row == b'row1' for r in got), 'batchSize split: %r' % got)

    sid = c.scannerOpenWithPrefix(b't1', b'row1', [], {})
    check([r.row for r in c.scannerGetList(sid, 10)] == [b'row1'], 'prefix')

    check(c.atomicIncrement(b't1', b'ctr', b'cf:n', 5) == 5, 'increment')
    check(c.atomicIncrement(b't1', b'ctr', b'cf:n', -2) == 3, 'increment 2')
    try:
        c.get(b'missing', b'r', b'cf:a', {})
        raise AssertionError('missing table accepted')
    except IOError as e:
        check('TableNotFoundException' in e.message, e.message)

    # Unknown method: TApplicationException with the request's seqid,
    # connection still usable.  Sent by hand through the client's protocol.
    from thrift.Thrift import TMessageType
    c._oprot.writeMessageBegin('getRowOrBefore', TMessageType.CALL, 77)
    c._oprot.writeStructBegin('args')
    c._oprot.writeFieldStop()
    c._oprot.writeStructEnd()
    c._oprot.writeMessageEnd()
    c._oprot.trans.flush()
    name, mtype, seqid = c._iprot.readMessageBegin()
    x = TApplicationException()
    x.read(c._iprot)
    c._iprot.readMessageEnd()
    check(mtype == TMessageType.EXCEPTION and seqid == 77 and
          x.type == TApplicationException.UNKNOWN_METHOD and
          x.message == "Invalid method name: 'getRowOrBefore'",
          'unknown method: %r %r %r' % (mtype, seqid, x.message))
    check(c.isTableEnabled(b't1'), 'connection unusable after exception')


def garbage(port):
    """Hostile bytes close that connection only."""
    for junk in (b'\x80\x01\x00\x01\xff\xff\xff\xff' * 4,
                 b'\x0b\x00\x01\xff\xff\xff\xff\x00',
                 b'\x00\x00\x00\x08' + b'\x80\x01\x00\x01\x7f\xff\xff\xff'):
        s = socket.create_connection(('127.0.0.1', port))
        s.sendall(junk)
        s.settimeout(1)
        try:
            s.recv(100)
        except (socket.timeout, ConnectionResetError):
            pass
        s.close()


def read_stats(path, want):
    """The text at path once it holds want (bytes), or what it holds."""
    text = b''
    for _ in range(250):
        if os.path.exists(path):
            with open(path, 'rb') as f:
                text = f.read()
            if want in text:
                break
        time.sleep(0.02)
    return text


def stats_nul_split(emu):
    """SIGUSR1 stats list every region even when a split key holds a NUL
    byte, written \\x00: a raw NUL ended the text there on stderr."""
    tmp = tempfile.mkdtemp(prefix='emu-smoke-stats-')
    split = ['--create-table', 'n:d', '--split-keys', 'a\\x00b,m\\x00,z']
    try:
        stats = os.path.join(tmp, 'stats.txt')
        err_path = os.path.join(tmp, 'stderr.txt')
        with open(err_path, 'wb') as err:
            for path, extra in ((stats, ['--stats-file', stats]),
                                (err_path, [])):
                proc, port = start(emu, split + extra, stderr=err)
                try:
                    proc.send_signal(signal.SIGUSR1)
                    text = read_stats(path, b'\ntotal ')
                finally:
                    proc.terminate()
                    proc.wait(10)
                check(b'\0' not in text, 'raw NUL in stats: %r' % text)
                regions = [ln for ln in text.decode().splitlines()
                           if ln.startswith('region table=n ')]
                check(len(regions) == 4, 'want 4 regions of n: %r' % text)
                check(' start=a\\x00b end=m\\x00 ' in regions[1],
                      regions[1])
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def compaction_keeps_rows(c):
    """compact and majorCompact write a table's rows anew in key order
    (emu_store_compact_range): every row and version stays, a region's
    compaction leaves the other regions alone, and a scanner open across
    them goes on from its position (it keeps a key, not a row)."""
    from hbase1.ttypes import ColumnDescriptor, Mutation

    c.createTable(b'cmp', [ColumnDescriptor(name=b'cf:', maxVersions=3)])
    # written out of key order over the 4 regions, 2 versions each
    keys = [bytes([(i * 37) % 256, i % 7]) + b'k%03d' % i for i in range(200)]
    for v in (1, 2):
        for k in keys:
            c.mutateRowTs(b'cmp', k, [Mutation(column=b'cf:a',
                                               value=k + b'-%d' % v)], v, {})

    def scan_all():
        sid = c.scannerOpen(b'cmp', b'', [], {})
        rows = c.scannerGetList(sid, 1000)
        c.scannerClose(sid)
        return [(r.row, r.columns[b'cf:a'].value) for r in rows]

    want = [(k, k + b'-2') for k in sorted(keys)]
    check(scan_all() == want, 'scan before compaction')
    sid = c.scannerOpen(b'cmp', b'', [], {})
    got = c.scannerGetList(sid, 50)
    regions = c.getTableRegions(b'cmp')
    check(len(regions) == 4, 'regions: %r' % regions)
    c.compact(regions[1].name)
    c.majorCompact(b'cmp')
    got += c.scannerGetList(sid, 60)
    c.majorCompact(regions[2].name)
    c.compact(b'cmp')
    got += c.scannerGetList(sid, 1000)
    c.scannerClose(sid)
    check([(r.row, r.columns[b'cf:a'].value) for r in got] == want,
          'a scanner across compactions')
    check(scan_all() == want, 'scan after compactions')
    for k in keys[::17]:
        vers = c.getVer(b'cmp', k, b'cf:a', 5, {})
        check([(x.value, x.timestamp) for x in vers] ==
              [(k + b'-2', 2), (k + b'-1', 1)], 'versions of %r: %r'
              % (k, vers))
    c.disableTable(b'cmp')
    c.deleteTable(b'cmp')


def main():
    emu, pydir = sys.argv[1], sys.argv[2]
    hsptest.import_thrift(pydir)
    stats_nul_split(emu)
    for framed, compact in ((False, False), (True, True)):
        extra = (['--framed'] if framed else []) + \
                (['--compact'] if compact else [])
        proc, port = start(emu, extra + ['--regions', '4'])
        try:
            c, trans = client(port, framed, compact)
            exercise(c, port, framed)
            compaction_keeps_rows(c)
            garbage(port)
            c2, trans2 = client(port, framed, compact)
            check(c2.getTableNames() == [b't1'], 'server alive after garbage')
            trans.close()
            trans2.close()
        finally:
            proc.terminate()
            proc.wait(10)
    print('emu smoke: ok')


if __name__ == '__main__':
    main()
