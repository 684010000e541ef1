"""Writes the seed corpora of the fuzz targets (tests/fuzz/corpus/*).

Seeds are committed; run this again only to change them:

  /usr/bin/python3 tests/fuzz/make_seeds.py --pydir BUILD/thrift/py \\
      --proxy BUILD/daemon/hbase-salt-proxy

Messages are encoded by python3-thrift (independent of our codec); salted
row keys come from the daemon's own --explain-key over the fuzz config,
so reply seeds carry valid salts.  Regression inputs (crash-*, named after
what they reproduce) are added by hand and never written here.
"""

import argparse
import os
import re
import struct
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, '..', 'lib'))
from hsptest import (import_thrift, pb_compare, pb_field,  # noqa: E402
                     pb_filter, pb_varint)
CORPUS = os.path.join(HERE, 'corpus')

# The method table of daemon/hbase1.c, in its order (fuzz_reply's byte 1).
METHODS = ('enableTable disableTable isTableEnabled compact majorCompact '
           'getTableNames getTableNamesWithIsTableEnabled getColumnDescriptors '
           'getTableRegions createTable deleteTable get getVer getVerTs getRow '
           'getRowWithColumns getRowTs getRowWithColumnsTs getRows '
           'getRowsWithColumns getRowsTs getRowsWithColumnsTs mutateRow '
           'mutateRowTs mutateRows mutateRowsTs atomicIncrement deleteAll '
           'deleteAllTs deleteAllRow increment incrementRows deleteAllRowTs '
           'scannerOpenWithScan scannerOpen scannerOpenWithStop '
           'scannerOpenWithPrefix scannerOpenTs scannerOpenWithStopTs '
           'scannerGet scannerGetList scannerClose getRegionInfo append '
           'checkAndPut getThriftServerType getClusterId grant revoke').split()
# fuzz_common.h's tables, in its order (fuzz_reply's byte 2).
TABLES = ['t', 'b', 'wide', 'dec', 'del', 'one', 'phx', 'wd', 'bt']


def fuzz_conf():
    text = open(os.path.join(HERE, 'fuzz_common.h')).read()
    body = text.split('fuzz_conf_text[] =', 1)[1].split(';', 1)[0]
    parts = re.findall(r'"((?:[^"\\]|\\.)*)"', body)
    return ''.join(parts).encode().decode('unicode_escape')


def filterpb_seeds():
    """fuzz_filterpb: flags (bit1 reversed, bits2-4 table) + filterBytes."""
    binary = lambda v: pb_field(1, pb_field(1, v))
    seeds = [
        pb_filter('PrefixFilter', pb_field(1, 'abc')),
        pb_filter('InclusiveStopFilter', pb_field(1, 'zz')),
        pb_compare('RowFilter', 2, pb_filter('BinaryComparator',
                                             binary('row1'))),
        pb_compare('RowFilter', 4, pb_filter('BinaryPrefixComparator',
                                             binary('a'))),
        pb_compare('RowFilter', 3, pb_filter(
            'RegexStringComparator', pb_field(1, '^u[0-9]+#'),
            pb_field(2, 32), pb_field(3, 'UTF-8'), pb_field(4, 'JAVA'))),
        pb_compare('RowFilter', 2, pb_filter('SubstringComparator',
                                             pb_field(1, 'ab.c'))),
        pb_filter('FilterList', pb_field(1, 1),
                  pb_field(2, pb_filter('PrefixFilter', pb_field(1, 'u1#'))),
                  pb_field(2, pb_filter('PageFilter', pb_field(1, 10)))),
        pb_filter('FilterList', pb_field(1, 2),
                  pb_field(2, pb_filter('KeyOnlyFilter', pb_field(1, 1))),
                  pb_field(2, pb_filter('FirstKeyOnlyFilter'))),
        pb_filter('WhileMatchFilter', pb_field(1, pb_compare(
            'RowFilter', 0, pb_filter('BinaryComparator', binary('m'))))),
        pb_filter('SkipFilter', pb_field(1, pb_compare(
            'ValueFilter', 3, pb_filter('LongComparator',
                                        binary(b'\0\0\0\0\0\0\0\x07'))))),
        pb_filter('SingleColumnValueFilter', pb_field(1, 'd'),
                  pb_field(2, 'a'), pb_field(3, 2),
                  pb_field(4, pb_filter('BinaryComparator', binary('v'))),
                  pb_field(5, 1), pb_field(6, 0)),
        pb_filter('TimestampsFilter', pb_field(1, pb_varint(1) + pb_varint(2))),
        pb_filter('FuzzyRowFilter'),
        pb_filter('com.example.Custom', pb_field(1, 'x')),
        b'',
        b'\x0a\x80',
        b'\x1b\x08\x01\x1c' + pb_filter('PageFilter', pb_field(1, 3)),
    ]
    for i, pb in enumerate(seeds):
        write('fuzz_filterpb', 'filterpb-%02d' % i,
              bytes([(i * 6) & 0x1f]) + pb)
    # bit 5: com.example.CustomFilter and PrefixFilter (no package)
    # declared custom filter classes
    custom = [
        pb_filter('FilterList', pb_field(1, 1),
                  pb_field(2, pb_filter('PrefixFilter', pb_field(1, 'u1#'))),
                  pb_field(2, pb_filter('com.example.CustomFilter',
                                        pb_field(1, 'x')))),
        pb_filter('WhileMatchFilter', pb_field(1, pb_field(1, 'PrefixFilter')
                                               + pb_field(2, 'zz'))),
    ]
    for i, pb in enumerate(custom):
        write('fuzz_filterpb', 'filterpb-custom-%02d' % i,
              bytes([0x20 | (i * 6) & 0x1f]) + pb)


def write(target, name, data):
    d = os.path.join(CORPUS, target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), 'wb') as f:
        f.write(data)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--pydir', required=True)
    ap.add_argument('--proxy', required=True)
    args = ap.parse_args()
    th = import_thrift(args.pydir)
    Hbase, T = th.Hbase, th.T
    TMessageType, TApplicationException = (th.TMessageType,
                                           th.TApplicationException)
    TTransport = th.TTransport
    TBinaryProtocol, TCompactProtocol = th.TBinaryProtocol, th.TCompactProtocol

    conf = tempfile.NamedTemporaryFile('w', suffix='.conf', delete=False)
    conf.write(fuzz_conf())
    conf.close()

    def physical(table, key):
        out = subprocess.run([args.proxy, '-c', conf.name, '--explain-key',
                              table, key], check=True, capture_output=True,
                             text=True).stdout
        return bytes.fromhex(re.search(r'physical \(hex\):\s*(\w+)',
                                       out).group(1))

    def encode(proto, name, mtype, seqid, obj, strict=True):
        buf = TTransport.TMemoryBuffer()
        if proto == 'compact':
            p = TCompactProtocol.TCompactProtocol(buf)
        else:
            p = TBinaryProtocol.TBinaryProtocol(buf, strictWrite=strict)
        p.writeMessageBegin(name, mtype, seqid)
        obj.write(p)
        p.writeMessageEnd()
        return buf.getvalue()

    mut = [T.Mutation(column=b'd:a', value=b'v1'),
           T.Mutation(isDelete=True, column=b'd:b')]
    calls = {
        'getRow': Hbase.getRow_args(tableName=b't', row=b'row1',
                                    attributes={b'k': b'v'}),
        'get': Hbase.get_args(tableName=b'dec', row=b'abcdef', column=b'd:a',
                              attributes={}),
        'getRows': Hbase.getRows_args(tableName=b'del',
                                      rows=[b'u1#a#x', b'u2#b', b''],
                                      attributes={}),
        'mutateRow': Hbase.mutateRow_args(tableName=b'wide', row=b'k',
                                          mutations=mut, attributes={}),
        'mutateRows': Hbase.mutateRows_args(
            tableName=b'b',
            rowBatches=[T.BatchMutation(row=b'r1', mutations=mut),
                        T.BatchMutation(row=b'r2', mutations=[])],
            attributes={}),
        'increment': Hbase.increment_args(
            increment=T.TIncrement(table=b't', row=b'ctr', column=b'd:c',
                                   ammount=5)),
        'incrementRows': Hbase.incrementRows_args(
            increments=[T.TIncrement(table=b'one', row=b'a', column=b'd:c',
                                     ammount=1),
                        T.TIncrement(table=b'plain', row=b'b',
                                     column=b'd:c', ammount=2)]),
        'append': Hbase.append_args(
            append=T.TAppend(table=b'dec', row=b'xyz', columns=[b'd:a'],
                             values=[b'1'])),
        'atomicIncrement': Hbase.atomicIncrement_args(
            tableName=b'default:t', row=b'n', column=b'd:c', value=3),
        'checkAndPut': Hbase.checkAndPut_args(
            tableName=b't', row=b'cp', column=b'd:a', value=b'old',
            mput=T.Mutation(column=b'd:a', value=b'new'), attributes={}),
        'deleteAllRow': Hbase.deleteAllRow_args(tableName=b'plain',
                                                row=b'p', attributes={}),
        'scannerOpenWithScan': Hbase.scannerOpenWithScan_args(
            tableName=b't',
            scan=T.TScan(startRow=b'a', stopRow=b'z', caching=10,
                         filterString=b"PrefixFilter('a')"),
            attributes={}),
        'scannerGetList': Hbase.scannerGetList_args(id=3, nbRows=10),
        'getTableNames': Hbase.getTableNames_args(),
        'createTable': Hbase.createTable_args(
            tableName=b'n',
            columnFamilies=[T.ColumnDescriptor(name=b'd:', maxVersions=3)]),
        'noSuchMethod': Hbase.getTableNames_args(),
    }

    # fuzz_request: flag byte (bit0 compact, bit1 framed, bit2 backend
    # compact, bit3 tight limits) + client bytes
    for i, (name, obj) in enumerate(sorted(calls.items())):
        for proto in ('binary', 'compact'):
            for framed in (False, True):
                flags = ((proto == 'compact') | framed << 1
                         | ((i + framed) % 2) << 2)
                msg = encode(proto, name, TMessageType.CALL, 10 + i, obj)
                if framed:
                    msg = struct.pack('>I', len(msg)) + msg
                write('fuzz_request', 'call-%s-%s-%s' % (
                    name, proto, 'framed' if framed else 'buffered'),
                    bytes([flags]) + msg)
    # non-strict binary header, pipelined pair, tight limits
    nonstrict = encode('binary', 'getRow', TMessageType.CALL, 1,
                       calls['getRow'], strict=False)
    write('fuzz_request', 'call-getRow-nonstrict', b'\x00' + nonstrict)
    write('fuzz_request', 'pipelined-two-calls-to-compact',
          b'\x04' + nonstrict + encode('binary', 'mutateRows',
                                       TMessageType.CALL, 2,
                                       calls['mutateRows']))
    write('fuzz_request', 'tight-limits-getRows',
          b'\x08' + encode('binary', 'getRows', TMessageType.CALL, 3,
                           calls['getRows']))
    write('fuzz_request', 'reply-sent-by-client',
          b'\x00' + encode('binary', 'getRow', TMessageType.REPLY, 3,
                           calls['getRow']))

    # fuzz_reply: flags (bit0 backend compact, bit1 client compact, bit2
    # tight), method index, table index, reply with seqid 7
    def rowresult(table, key):
        return T.TRowResult(row=physical(table, key),
                            columns={b'd:a': T.TCell(value=b'v',
                                                     timestamp=1)})
    for ti, table in enumerate(TABLES):
        rows = [rowresult(table, k) for k in ('row1', 'abc#def#g')]
        rows.append(T.TRowResult(row=b'unsalted', columns={}))
        for mname in ('getRow', 'getRows', 'scannerGetList'):
            res = getattr(Hbase, mname + '_result')(success=rows)
            for flags in (0, 3):
                proto = 'compact' if flags & 1 else 'binary'
                write('fuzz_reply', 'reply-%s-%s-%s' % (mname, table, proto),
                      bytes([flags, METHODS.index(mname), ti])
                      + encode(proto, mname, TMessageType.REPLY, 7, res))
    io = Hbase.getRow_result(io=T.IOError(message='boom', canRetry=True))
    write('fuzz_reply', 'reply-getRow-ioerror',
          bytes([1, METHODS.index('getRow'), 0])
          + encode('binary', 'getRow', TMessageType.REPLY, 7, io))
    exc = TApplicationException(TApplicationException.UNKNOWN_METHOD, 'no')
    write('fuzz_reply', 'reply-exception',
          bytes([2, METHODS.index('get'), 0])
          + encode('binary', 'get', TMessageType.EXCEPTION, 7, exc))
    write('fuzz_reply', 'reply-wrong-seqid',
          bytes([0, METHODS.index('getRow'), 0])
          + encode('binary', 'getRow', TMessageType.REPLY, 8,
                   Hbase.getRow_result(success=[])))
    write('fuzz_reply', 'reply-getTableNames',
          bytes([0, METHODS.index('getTableNames'), 0xff])
          + encode('binary', 'getTableNames', TMessageType.REPLY, 7,
                   Hbase.getTableNames_result(success=[b't', b'plain'])))

    # fuzz_filter: flags (bit0 strict, bit1 reversed, bits2-4 table) + text
    filters = [
        "PrefixFilter('abc')",
        "RowFilter(=, 'binary:row1') AND PageFilter(10)",
        "RowFilter(>=, 'binaryprefix:a') OR InclusiveStopFilter('zz')",
        "RowFilter(=, 'regexstring:^u[0-9]+#')",
        "RowFilter(!=, 'substring:Ab.c')",
        "SKIP ValueFilter(=, 'binary:x')",
        "WHILE RowFilter(<, 'binary:m')",
        "(PrefixFilter('u1#') AND (KeyOnlyFilter() OR FirstKeyOnlyFilter()))",
        "SingleColumnValueFilter('d', 'a', =, 'binary:v', true, false)",
        "ColumnRangeFilter('a', true, 'c', false)",
        "TimestampsFilter(1, 2, 3)",
        "MultipleColumnPrefixFilter('a', 'b''c')",
        "DependentColumnFilter('d', 'a', true, =, 'binary:v')",
        "ColumnPaginationFilter(5, 0) AND ColumnCountGetFilter(3)",
        "QualifierFilter(=, 'binary:a') AND FamilyFilter(=, 'binary:d')",
        "UnknownFilter('x', 12)",
        "PrefixFilter('a'",
        "\tAND('x')",
    ]
    for i, f in enumerate(filters):
        write('fuzz_filter', 'filter-%02d' % i,
              bytes([(i * 5) & 0x1f]) + f.encode())
    # bit 5: UnknownFilter and MyFilter declared custom filters
    custom = [
        "PrefixFilter('abc') AND MyFilter('v', 3, >=, true)",
        "WHILE UnknownFilter() OR RowFilter(=, 'binary:k')",
        "PageFilter(2) AND MyFilter() AND NotDeclared('x')",
    ]
    for i, f in enumerate(custom):
        write('fuzz_filter', 'filter-custom-%02d' % i,
              bytes([0x20 | (i * 5) & 0x1f]) + f.encode())

    filterpb_seeds()

    # fuzz_config: whole files
    write('fuzz_config', 'fuzz-conf', fuzz_conf().encode())
    for name in ('hbase-salt-proxy.conf', 'quickstart.conf'):
        path = os.path.join(HERE, '..', '..', 'conf', name)
        if os.path.exists(path):
            write('fuzz_config', 'conf-' + name, open(path, 'rb').read())
    write('fuzz_config', 'full',
          b'[proxy]\nlisten = [::1]:9090\nworkers = 2\n'
          b'max_frame_size = 1MiB\nmax_connections = 10\n'
          b'client_idle_timeout_ms = 1000\n'
          b'[backend]\nservers = 127.0.0.1:9091, hbase2.example:9090\n'
          b'protocol = compact\ntransport = framed\n'
          b'connect_timeout_ms = 100\nrequest_timeout_ms = 1500\n'
          b'slow_call_ms = 250\npool_size = 2\n[scan]\ncaching_max = 10\n'
          b'scanner_timeout_ms = 1000\n[admin]\nlisten = 127.0.0.1:9100\n'
          b'[table:default:x]\nbuckets = 4\nsalt_separator = \\s\\x00\n'
          b'hash_part = delimiter:\\t:3\n')
    write('fuzz_config', 'duplicate-key', b'[table:a]\nbuckets = 2\n'
          b'buckets = 3\n')
    write('fuzz_config', 'keyviz',
          b'[admin]\nlisten = 127.0.0.1:9100\n[keyviz]\nenabled = true\n'
          b'interval_s = 10\nranges = 64\nhot_keys = 8\n'
          b'hot_key_sampling = 4\nretain_s = 600\nkeys = hash\n'
          b'unsalted_tables = u\n[table:t]\nbuckets = 4\nkeyviz = false\n')

    # fuzz_detect: raw client bytes
    m = encode('binary', 'getRow', TMessageType.CALL, 1, calls['getRow'])
    c = encode('compact', 'getRow', TMessageType.CALL, 1, calls['getRow'])
    write('fuzz_detect', 'binary-buffered', m + m)
    write('fuzz_detect', 'binary-framed', struct.pack('>I', len(m)) + m)
    write('fuzz_detect', 'compact-buffered', c)
    write('fuzz_detect', 'compact-framed', struct.pack('>I', len(c)) + c)
    write('fuzz_detect', 'binary-nonstrict', nonstrict)
    write('fuzz_detect', 'binary-nonstrict-framed',
          struct.pack('>I', len(nonstrict)) + nonstrict)
    write('fuzz_detect', 'http', b'GET / HTTP/1.0\r\n\r\n')
    write('fuzz_detect', 'frame-too-large', struct.pack('>I', 0x7fffffff) + m)
    os.unlink(conf.name)


if __name__ == '__main__':
    main()
