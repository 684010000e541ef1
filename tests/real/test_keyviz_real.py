"""The key visualizer in front of real HBase: the ops-keyviz skewed
workload, smaller (a celebrity with 30 % of the writes, monotonic
timestamps in its keys, a uniform background of 500 users), through the
proxy to tests/hbase/hbase-mini.  /keyviz.json must show the celebrity's
range as the hottest, /hotkeys.json the celebrity first among the hot
hash_part values with a count inside the stated bound (the sketch's error
and four standard deviations of the default one-in-8 draw), in the bucket
--explain-key names, and every write counted once.

  /usr/bin/python3 tests/real/test_keyviz_real.py --proxy BUILD/daemon/hbase-salt-proxy \\
      --emu BUILD/tests/emu/hbase-emu --pydir BUILD/thrift/py [--backend-kind real|emu]
"""

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                '..', 'lib'))
import hsptest  # noqa: E402

BUCKETS = 8
INTERVAL_S = 2
SECONDS = 12.0


def get_json(port, path):
    status, body = hsptest.http_get(port, path)
    assert status == 200, (path, status, body)
    return json.loads(body)


def workload(thrift, port, seconds, seed=24, users=500):
    """Writes for seconds: 30 % celeb#TS, the rest userNNNN#TS, TS only
    growing.  Returns (writes, the celebrity's)."""
    rnd = random.Random(seed)
    c = thrift.client1(port, timeout=60)
    ts, writes, celeb = 10 ** 12, 0, 0
    end = time.time() + seconds
    try:
        while time.time() < end:
            ts += 1
            if rnd.random() < 0.3:
                row = b'celeb#%d' % ts
                celeb += 1
            else:
                row = b'user%04d#%d' % (rnd.randrange(users), ts)
            c.mutateRow(b'ev', row, [thrift.T.Mutation(column=b'd:a',
                                                       value=b'v')], {})
            writes += 1
    finally:
        c.transport.close()
    return writes, celeb


def check(args, thrift, workdir, proxy_port, admin):
    writes, celeb = workload(thrift, proxy_port, SECONDS)
    # every interval written in is harvested a second after its end
    time.sleep(INTERVAL_S + 1.5)
    print('%d writes, %d by the celebrity' % (writes, celeb))

    doc = get_json(admin, '/keyviz.json?table=ev&metric=writes')
    ivs = [iv for iv in doc['intervals'] if iv['total'] > 0]
    assert sum(iv['total'] for iv in ivs) == writes, (writes, ivs)
    # an interval's boundaries come from the sample of the one two before:
    # look at the busiest of those whose boundaries followed the keys
    assert len(ivs) >= 4, ivs
    iv = max(ivs[2:], key=lambda iv: iv['total'])
    top = max(iv['ranges'], key=lambda r: r['value'])
    assert top['start'] == 'celeb', iv
    share = top['value'] / iv['total']
    assert 0.2 < share < 0.42, (share, iv)

    conf = os.path.join(workdir, 'proxy.conf')
    explain = subprocess.run([args.proxy, '-c', conf, '--explain-key', 'ev',
                              'celeb#1'], capture_output=True, text=True,
                             check=True).stdout
    bucket = int(explain.split('bucket:')[1].split()[0])
    count = err = var = ops = ranked = 0
    for iv in ivs:
        hot = get_json(admin, '/hotkeys.json?table=ev&at=%d' % iv['start'])
        assert hot['sampling'] == 8, hot
        ops += hot['ops']
        mine = [h for h in hot['hot_parts'] if h['key'] == 'celeb']
        if hot['ops'] < 200:
            # the first or last moments: too few to rank, counted all the
            # same
            if mine:
                count += mine[0]['count']
                err += mine[0]['error']
                var += mine[0]['sd'] ** 2
            continue
        ranked += 1
        first = hot['hot_parts'][0]
        assert first['key'] == 'celeb', hot
        assert first['bucket'] == bucket, (first, bucket)
        assert first['error'] <= hot['error_bound'], hot
        count += first['count']
        err += first['error']
        var += first['sd'] ** 2
        bars = [b for b in hot['buckets'] if b['bucket'] != 'legacy']
        assert len(bars) == BUCKETS, bars
        assert max(bars, key=lambda b: b['writes'])['bucket'] == bucket, bars
    assert ranked >= 2, ivs
    assert ops == writes, (ops, writes)
    # within the sketch's error and four standard deviations of the draw
    sd = var ** 0.5
    assert count - err - 4 * sd <= celeb <= count + 4 * sd, \
        (count, err, sd, celeb)
    print('celebrity counted %d (error %d, sd %.0f), true %d; hottest range '
          'share %.3f' % (count, err, sd, celeb, share))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--proxy', required=True)
    ap.add_argument('--emu', required=True)
    ap.add_argument('--pydir', required=True)
    hsptest.add_backend_args(ap)
    args = ap.parse_args()
    thrift = hsptest.Thrift(args.pydir)
    workdir = tempfile.mkdtemp(prefix='hsp-real-keyviz-')
    backend = proxy = None
    ok = False
    t0 = time.time()
    try:
        backend = hsptest.start_backend(args.backend_kind, workdir,
                                        emu=args.emu, tables={'ev': ['d']},
                                        thrift=thrift)
        port, admin = hsptest.free_port(), hsptest.free_port()
        conf = ('[proxy]\nlisten = 127.0.0.1:%d\nworkers = 2\n'
                '[backend]\nservers = 127.0.0.1:%d\n'
                'request_timeout_ms = 30000\n'
                '[admin]\nlisten = 127.0.0.1:%d\n'
                '[keyviz]\ninterval_s = %d\nranges = 64\nhot_keys = 16\n'
                '[table:ev]\nbuckets = %d\nsalt_format = hex\n'
                'salt_separator = -\nhash_part = delimiter:#:1\n'
                % (port, backend.port, admin, INTERVAL_S, BUCKETS))
        proxy = hsptest.Proxy(args.proxy, workdir, conf, [port, admin])
        check(args, thrift, workdir, port, admin)
        ok = True
    finally:
        hsptest.finish(workdir, ok, proxy, backend)
        sys.stderr.write('%s backend, %.1f s\n' % (args.backend_kind,
                                                   time.time() - t0))
    return 0


if __name__ == '__main__':
    sys.exit(main())
