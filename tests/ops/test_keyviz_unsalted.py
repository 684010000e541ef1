"""The key visualizer on unsalted tables ([keyviz] unsalted_tables): a
table named there is counted (writes, reads, rows handed back, its keys
as sent, in /keyviz.json and /hotkeys.json) and stays unsalted in HBase;
an unsalted table not named there is not counted; neither gets series in
/metrics.

  /usr/bin/python3 tests/ops/test_keyviz_unsalted.py --proxy BUILD/daemon/hbase-salt-proxy \\
      --emu BUILD/tests/emu/hbase-emu --pydir BUILD/thrift/py
"""

import argparse
import json
import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                '..', 'lib'))
import hsptest  # noqa: E402


def total(admin, table, metric):
    status, body = hsptest.http_get(
        admin, '/keyviz.json?table=%s&metric=%s' % (table, metric))
    assert status == 200, (status, body)
    return sum(iv['total'] for iv in json.loads(body)['intervals'])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--proxy', required=True)
    ap.add_argument('--emu', required=True)
    ap.add_argument('--pydir', required=True)
    args = ap.parse_args()
    thrift = hsptest.Thrift(args.pydir)
    T = thrift.T
    workdir = tempfile.mkdtemp(prefix='hsp-ops-keyviz-unsalted-')
    emu = proxy = None
    ok = False
    try:
        emu = hsptest.start_backend('emu', workdir, emu=args.emu,
                                    tables={'s': ['d'], 'u': ['d'],
                                            'v': ['d']})
        port, admin = hsptest.free_port(), hsptest.free_port()
        conf = ('[proxy]\nlisten = 127.0.0.1:%d\nworkers = 2\n'
                '[backend]\nservers = 127.0.0.1:%d\n'
                '[admin]\nlisten = 127.0.0.1:%d\n'
                # every key counted, none drawn: each is named below
                '[keyviz]\ninterval_s = 1\nhot_key_sampling = 1\n'
                'unsalted_tables = u\n'
                '[table:s]\nbuckets = 4\n' % (port, emu.port, admin))
        proxy = hsptest.Proxy(args.proxy, workdir, conf, [port, admin])
        c = thrift.client1(port)
        put = [T.Mutation(column=b'd:a', value=b'v')]
        for i in range(30):
            c.mutateRow(b'u', b'u%03d' % i, put, {})
        for i in range(20):
            c.mutateRow(b'v', b'v%03d' % i, put, {})
        for i in range(10):
            c.mutateRow(b's', b's%03d' % i, put, {})
        for i in range(5):
            got = c.getRow(b'u', b'u%03d' % i, {})
            assert [r.row for r in got] == [b'u%03d' % i], got
        assert c.getRow(b'u', b'nosuch', {}) == []
        c.transport.close()
        # every interval written in is harvested a second after its end
        time.sleep(2.5)

        status, body = hsptest.http_get(admin, '/keyviz.json?table=u')
        assert status == 200, (status, body)
        assert json.loads(body)['tables'] == ['s', 'u'], body
        assert total(admin, 'u', 'writes') == 30
        assert total(admin, 'u', 'reads') == 6
        # the rows handed back: five found, none for the missing key
        assert total(admin, 'u', 'rows') == 5
        assert total(admin, 's', 'writes') == 10
        status, body = hsptest.http_get(admin, '/keyviz.json?table=v')
        assert status == 404, (status, body)
        # the keys as the client sent them, reads' too, in one bucket:
        # over every interval the calls fell in
        status, body = hsptest.http_get(admin, '/keyviz.json?table=u')
        keys, buckets = set(), set()
        for iv in json.loads(body)['intervals']:
            status, body = hsptest.http_get(
                admin, '/hotkeys.json?table=u&at=%d' % iv['start'])
            assert status == 200, (status, body)
            hot = json.loads(body)
            keys |= {h['key'] for h in hot['hot_keys']}
            buckets |= {h['bucket'] for h in hot['hot_keys']}
        assert keys == {'u%03d' % i for i in range(30)} | {'nosuch'}, keys
        assert buckets == {0}, buckets
        # unsalted in HBase: the emulator holds the keys as sent
        d = thrift.client1(emu.port)
        assert [r.row for r in d.getRow(b'u', b'u007', {})] == [b'u007']
        d.transport.close()
        # no per-bucket series for a table the proxy does not salt
        status, body = hsptest.http_get(admin, '/metrics')
        assert status == 200
        assert 'table="s"' in body and 'table="u"' not in body, body
        ok = True
        print('unsalted table counted: 30 writes, 6 reads, 5 rows; '
              'the other not')
    finally:
        hsptest.finish(workdir, ok, proxy, emu)
    return 0


if __name__ == '__main__':
    sys.exit(main())
