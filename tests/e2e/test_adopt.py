"""Adopting tables salted by other tools (salt_mapping): rows those tools
wrote, read through hbase-salt-proxy where they lie, and rows the proxy
writes landing exactly where the tool would have put them.

For each adopted table (Phoenix SALT_BUCKETS, HBaseWD OneByteSimpleHash
with its Integer.MIN_VALUE byte, the Cloud Bigtable key-salting sample with
its negative and multi-digit prefixes) one key set is stored three ways on
hbase-emu:
  - half the keys written STRAIGHT to the emulator at the physical key the
    tool computes (tests/unit/java_salt_vectors.py: the Java definitions
    in Python, nothing of the daemon), the other half THROUGH THE PROXY
    with their logical keys;
  - every key, logical, written straight to an unsalted table 'ref_NAME'.
Then:
  - a direct scan of each salted table must hold exactly the tool's
    physical keys, no more (what the proxy wrote is where the tool would
    have put it);
  - get, getRow, getRows and scans through the proxy (scannerOpen,
    WithStop, WithPrefix, WithScan forward and reversed, start/stop,
    scannerGetList in random batch sizes) must answer exactly what the
    same calls answer directly on 'ref_NAME': logical keys, cells, and key
    order, across the sample's '-3-' < '0-' < '10-' < '2-' prefixes;
  - the bigtable-sample table refuses a row that is no UTF-8 text (no key
    the sample can have written) on writes and finds nothing for it on
    reads.

  /usr/bin/python3 tests/e2e/test_adopt.py --proxy BUILD/daemon/hbase-salt-proxy \\
      --emu BUILD/tests/emu/hbase-emu --pydir BUILD/thrift/py

HSP_KEEP_LOGS=1 keeps the temp dir (configs, logs); ADOPT_SEED sets the seed.
"""

import argparse
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, '..', 'unit'))
sys.path.insert(0, os.path.join(HERE, '..', 'lib'))
import hsptest  # noqa: E402
from hsptest import can_connect, free_port, wait_for  # noqa: E402
import java_salt_vectors as java  # noqa: E402

Hbase = T = TSocket = TTransport = TBinaryProtocol = None

TS = 1000
# name -> (config lines, the tool's physical key of a logical key, text keys)
TABLES = {
    'phx': ('salt_mapping = phoenix\nbuckets = 200\n',
            lambda k: java.phoenix(k, 200)[1], False),
    'wd': ('salt_mapping = hbasewd\nbuckets = 10\n',
           lambda k: java.hbasewd(k, 10)[1], False),
    'bt': ('salt_mapping = bigtable-sample\nbuckets = 4\n',
           lambda k: java.bigtable(k, 4)[1], True),
    'bt12': ('salt_mapping = bigtable-sample\nbuckets = 12\n',
             lambda k: java.bigtable(k, 12)[1], True),
}
FAILURES = []


def check(ok, what):
    if not ok:
        FAILURES.append(what)
        print('FAIL: ' + what)


def client(port):
    return hsptest.client(port, timeout=30.0, accel=True)


class Procs(object):
    def __init__(self, workdir):
        self.workdir = workdir
        self.emu = None
        if ARGS.backend_kind == 'real':
            # the tools' rows written straight to real HBase, the
            # reference tables there too
            self.real = hsptest.start_backend(
                'real', workdir, tables={
                    n: ['d'] for t in TABLES for n in (t, 'ref_' + t)},
                thrift=hsptest.Thrift(ARGS.pydir))
            self.emu_port = self.real.port
        else:
            self.start_emu()
        try:
            self.start_proxy()
        except Exception:
            if self.emu:
                self.emu.kill()
            else:
                self.real.close()
            raise

    def start_proxy(self):
        workdir = self.workdir
        self.port = free_port()
        conf = os.path.join(workdir, 'proxy.conf')
        with open(conf, 'w') as f:
            f.write('[proxy]\nlisten = 127.0.0.1:%d\nworkers = 2\n'
                    '[backend]\nservers = 127.0.0.1:%d\npool_size = 8\n'
                    '[scan]\ncaching_max = 5\n'
                    % (self.port, self.emu_port))
            for t, (lines, _, _) in TABLES.items():
                f.write('[table:%s]\n%s' % (t, lines))
        self.proxy_log = open(os.path.join(workdir, 'proxy.log'), 'wb')
        self.proxy = subprocess.Popen([ARGS.proxy, '-c', conf,
                                       '--log-level', 'warning'],
                                      stdout=self.proxy_log,
                                      stderr=subprocess.STDOUT)
        wait_for(lambda: can_connect(self.port) or
                 self.proxy.poll() is not None, 10, 'proxy listening')
        if self.proxy.poll() is not None:
            raise AssertionError('proxy exited at start')

    def start_emu(self):
        port_file = os.path.join(self.workdir, 'emu.port')
        self.emu_log = open(os.path.join(self.workdir, 'emu.log'), 'wb')
        cmd = [ARGS.emu, '--listen', '127.0.0.1:0', '--port-file', port_file,
               ]
        for t in TABLES:
            cmd += ['--create-table', t + ':d', '--create-table',
                    'ref_' + t + ':d']
        self.emu = subprocess.Popen(cmd, stdout=self.emu_log,
                                    stderr=subprocess.STDOUT)

        def read_port():
            try:
                with open(port_file) as f:
                    return f.read().strip()
            except OSError:
                return ''
        self.emu_port = int(wait_for(read_port, 10, 'hbase-emu port'))
        wait_for(lambda: can_connect(self.emu_port), 10, 'hbase-emu')

    def close(self):
        rc = None
        if self.proxy.poll() is None:
            self.proxy.send_signal(signal.SIGTERM)
            rc = self.proxy.wait(10)
        self.proxy_log.close()
        if self.emu is None:
            self.real.close()
            return rc
        self.emu.kill()
        self.emu.wait()
        self.emu_log.close()
        return rc


# ---- keys ------------------------------------------------------------------

TEXT_CHARS = ('abcxyz019-#/ ~' + '\u00e9\u00ff\u0100\u20ac\ud7ff\ue000'
              '\uffff\U00010000\U0001f600\U0010ffff')


def byte_keys(rnd, n):
    keys = {java.MIN_BYTES, b'\x00', b'\xff', b'\x00\xff', b'\xff\x00',
            b'\x80', b'\x7f', b'a', b'user42', b'user123',
            b'Phoenix\x00\x80\x00\x00\x00\x00\x00\x01'}
    stems = [b'u%d#' % i for i in range(20)]
    while len(keys) < n:
        r = rnd.random()
        if r < 0.4:
            k = rnd.choice(stems) + b'%d' % rnd.randint(0, 500)
        elif r < 0.7:
            k = bytes(rnd.choice(b'\x00\x01ab#\x7f\x80\xfe\xff')
                      for _ in range(rnd.randint(1, 5)))
        else:
            k = bytes(rnd.randrange(256) for _ in range(rnd.randint(1, 12)))
        keys.add(k)
    return sorted(keys)


def text_keys(rnd, n):
    keys = {java.MIN_STRING, b'\x00', b'a', b'user123', b'user42',
            b'-1-x', b'10-abc', b'0-', b'phone#4c410523#20190501',
            'caf\u00e9'.encode(), '\U0001f600'.encode(),
            '\uffff'.encode(), '\U0010ffff'.encode()}
    while len(keys) < n:
        r = rnd.random()
        if r < 0.4:
            k = ('u%d#%d' % (rnd.randint(0, 19), rnd.randint(0, 500)))
        elif r < 0.6:
            k = 'phone#%08d#2019%04d' % (rnd.randrange(10 ** 8),
                                        rnd.randint(101, 1231))
        else:
            k = ''.join(rnd.choice(TEXT_CHARS)
                        for _ in range(rnd.randint(1, 6)))
        keys.add(k.encode('utf-8'))
    return sorted(keys)


def mutations(key):
    return [T.Mutation(column=b'd:v', value=b'v=' + key),
            T.Mutation(column=b'd:n', value=b'%d' % len(key))]


# ---- comparing --------------------------------------------------------------

def rows_form(results):
    out = []
    for r in results:
        cols = sorted((c, v.value, v.timestamp)
                      for c, v in (r.columns or {}).items())
        out.append((r.row, cols))
    return out


def outcome(fn):
    try:
        return ('ok', fn())
    except (T.IOError, T.IllegalArgument) as e:
        return (type(e).__name__, getattr(e, 'message', str(e)))


def scan_all(c, open_fn, rnd):
    """Open with open_fn, read every row with random batch sizes."""
    sid = open_fn(c)
    rows = []
    try:
        while True:
            got = c.scannerGetList(sid, rnd.choice((1, 2, 3, 7, 50)))
            if not got:
                break
            rows.extend(got)
    finally:
        c.scannerClose(sid)
    return rows_form(rows)


def successor(k):
    k = k.rstrip(b'\xff')
    return k[:-1] + bytes([k[-1] + 1]) if k else b''


def random_bound(rnd, keys):
    r = rnd.random()
    if r < 0.15:
        return b''
    k = rnd.choice(keys)
    if r < 0.6:
        return k
    if r < 0.8:
        return k[:rnd.randint(1, len(k))]
    return successor(k) or k


def compare_table(rnd, name, keys, proxy, direct):
    """Reads through the proxy on name vs directly on 'ref_' + name."""
    tname = name.encode()
    ref = b'ref_' + tname
    absent = [b'absent', b'\x01\x02\x03', b'zz' * 3]
    # point reads
    for k in rnd.sample(keys, min(60, len(keys))) + absent:
        got = outcome(lambda: rows_form(proxy.getRow(tname, k, {})))
        want = outcome(lambda: rows_form(direct.getRow(ref, k, {})))
        check(got == want, '%s getRow %r: %r != %r' % (name, k, got, want))
        got = outcome(lambda: [(x.value, x.timestamp)
                               for x in proxy.get(tname, k, b'd:v', {})])
        want = outcome(lambda: [(x.value, x.timestamp)
                                for x in direct.get(ref, k, b'd:v', {})])
        check(got == want, '%s get %r: %r != %r' % (name, k, got, want))
    for _ in range(10):
        ks = rnd.sample(keys, min(12, len(keys))) + rnd.sample(absent, 1)
        rnd.shuffle(ks)
        got = outcome(lambda: rows_form(proxy.getRows(tname, ks, {})))
        want = outcome(lambda: rows_form(direct.getRows(ref, ks, {})))
        check(got == want, '%s getRows %r: %r != %r' % (name, ks, got, want))

    # scans
    cols = [b'd']
    checked = 0
    for i in range(60):
        kind = i % 5
        start, stop = random_bound(rnd, keys), random_bound(rnd, keys)
        if kind == 0:
            desc = 'scannerOpen(%r)' % start

            def op(c, t):
                return c.scannerOpen(t, start, cols, {})
        elif kind == 1:
            desc = 'scannerOpenWithStop(%r, %r)' % (start, stop)

            def op(c, t):
                return c.scannerOpenWithStop(t, start, stop, cols, {})
        elif kind == 2:
            prefix = rnd.choice(keys)[:rnd.randint(1, 3)]
            desc = 'scannerOpenWithPrefix(%r)' % prefix

            def op(c, t):
                return c.scannerOpenWithPrefix(t, prefix, cols, {})
        else:
            reversed_ = kind == 4
            if reversed_ and start and stop and start < stop:
                start, stop = stop, start
            if not reversed_ and start and stop and start > stop:
                start, stop = stop, start
            scan = T.TScan(startRow=start or None, stopRow=stop or None,
                           caching=rnd.choice((None, 1, 3, 100)),
                           reversed=reversed_ or None)
            desc = 'scannerOpenWithScan(%r)' % scan

            def op(c, t):
                return c.scannerOpenWithScan(t, scan, {})
        got = outcome(lambda: scan_all(proxy, lambda c: op(c, tname), rnd))
        want = outcome(lambda: scan_all(direct, lambda c: op(c, ref),
                                        rnd))
        check(got == want, '%s %s: proxy %d rows, direct %d rows; first '
              'difference %r' % (name, desc, len(got[1]), len(want[1]),
                                 first_diff(got, want)))
        checked += len(want[1]) if want[0] == 'ok' else 0
    # the whole table both ways, forward and reversed
    for rev in (False, True):
        scan = T.TScan(reversed=rev or None, caching=4)
        got = scan_all(proxy, lambda c: c.scannerOpenWithScan(tname, scan,
                                                              {}), rnd)
        want = scan_all(direct, lambda c: c.scannerOpenWithScan(ref, scan,
                                                                {}), rnd)
        check(got == want, '%s full scan reversed=%s: %d vs %d rows, first '
              'difference %r' % (name, rev, len(got), len(want),
                                 first_diff(('ok', got), ('ok', want))))
        check(len(want) == len(keys), '%s: ref holds %d of %d keys'
              % (name, len(want), len(keys)))
    return checked


def first_diff(got, want):
    if got[0] != want[0]:
        return (got[0], want[0])
    for i, (a, b) in enumerate(zip(got[1], want[1])):
        if a != b:
            return (i, a, b)
    return ('lengths', len(got[1]), len(want[1]))


def run(workdir):
    rnd = random.Random(int(os.environ.get('ADOPT_SEED', '20221018')))
    procs = Procs(workdir)
    try:
        proxy, direct = client(procs.port), client(procs.emu_port)
        rows_checked = 0
        for name, (_, phys_of, text) in TABLES.items():
            tname = name.encode()
            # real HBase: fewer keys, within CI time
            n = 200 if ARGS.backend_kind == 'real' else 400
            keys = text_keys(rnd, n) if text else byte_keys(rnd, n)
            # the same logical rows in the reference table and, half
            # straight at the tool's physical key, half through the proxy
            for i, k in enumerate(keys):
                direct.mutateRowTs(b'ref_' + tname, k, mutations(k), TS, {})
                if i % 2 == 0:
                    direct.mutateRowTs(tname, phys_of(k), mutations(k), TS,
                                       {})
            batch = [T.BatchMutation(row=k, mutations=mutations(k))
                     for i, k in enumerate(keys) if i % 2 == 1]
            for j in range(0, len(batch), 50):
                proxy.mutateRowsTs(tname, batch[j:j + 50], TS, {})

            # where every row lies: exactly the tool's physical keys
            sid = direct.scannerOpen(tname, b'', [b'd'], {})
            stored = []
            while True:
                got = direct.scannerGetList(sid, 1000)
                if not got:
                    break
                stored.extend(r.row for r in got)
            direct.scannerClose(sid)
            want = sorted(phys_of(k) for k in keys)
            check(stored == want, '%s: stored physical keys differ from the '
                  "tool's: %d extra, %d missing" % (
                      name, len(set(stored) - set(want)),
                      len(set(want) - set(stored))))
            if name == 'wd':
                odd = [k for k in stored if k[:1] == b'\xf8']
                check(odd == [b'\xf8' + java.MIN_BYTES],
                      'wd: the Integer.MIN_VALUE row is not at 0xf8: %r'
                      % odd)
            if text:
                neg = sum(1 for k in stored if k[:1] == b'-')
                check(neg > len(keys) // 5, '%s: only %d rows with a '
                      'negative prefix' % (name, neg))
            if name == 'bt12':
                two = sum(1 for k in stored if k[:3] in (b'10-', b'11-'))
                check(two > 0, 'bt12: no two-digit prefixes')

            rows_checked += compare_table(rnd, name, keys, proxy, direct)

        # a key the Bigtable sample cannot have written
        bad = b'\xff\xfe'
        r = outcome(lambda: proxy.mutateRow(b'bt', bad, mutations(bad), {}))
        check(r[0] == 'IllegalArgument' and 'UTF-8' in r[1],
              'bt: a non-UTF-8 row was not refused: %r' % (r,))
        r = outcome(lambda: proxy.getRow(b'bt', bad, {}))
        check(r == ('ok', []), 'bt: getRow of a non-UTF-8 row: %r' % (r,))
        r = outcome(lambda: rows_form(proxy.getRows(b'bt', [bad, b'a'], {})))
        want = rows_form(direct.getRows(b'ref_bt', [b'a'], {}))
        check(r == ('ok', want), 'bt: getRows with a non-UTF-8 row: %r'
              % (r,))
        # the Phoenix salt byte of such a key is fine: bytes are bytes
        r = outcome(lambda: proxy.mutateRow(b'phx', bad, mutations(bad), {}))
        check(r == ('ok', None), 'phx: binary row refused: %r' % (r,))
        sid = direct.scannerOpenWithPrefix(b'phx', java.phoenix(bad, 200)[1],
                                           [b'd'], {})
        got = direct.scannerGetList(sid, 10)
        direct.scannerClose(sid)
        check([x.row for x in got] == [java.phoenix(bad, 200)[1]],
              'phx: binary row not at its Phoenix key: %r' % got)
        print('compared %d scanned rows over %d tables'
              % (rows_checked, len(TABLES)))
        proxy._trans.close()
        direct._trans.close()
    finally:
        rc = procs.close()
    check(rc == 0, 'proxy exit status %r on SIGTERM' % rc)


def main():
    global ARGS
    ap = argparse.ArgumentParser()
    ap.add_argument('--proxy', required=True)
    ap.add_argument('--emu', required=True)
    ap.add_argument('--pydir', required=True)
    hsptest.add_backend_args(ap)
    ARGS = ap.parse_args()
    hsptest.import_thrift(ARGS.pydir, globals())
    workdir = tempfile.mkdtemp(prefix='hsp-adopt-')
    try:
        run(workdir)
    finally:
        if os.environ.get('HSP_KEEP_LOGS') or FAILURES:
            print('logs in ' + workdir)
        else:
            shutil.rmtree(workdir, ignore_errors=True)
    if FAILURES:
        print('%d failure(s)' % len(FAILURES))
        sys.exit(1)
    print('ok')


if __name__ == '__main__':
    main()
