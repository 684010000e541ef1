"""The admin endpoint: /metrics (Prometheus text) shows per-bucket counters
moving as a workload runs, method counters, errors and latency, scans and
their fan-out, clients and bytes, backends; /healthz follows the backends;
/config round-trips through --check-config; logging keeps row data out.

  /usr/bin/python3 tests/ops/test_admin.py --proxy BUILD/daemon/hbase-salt-proxy \\
      --emu BUILD/tests/emu/hbase-emu --pydir BUILD/thrift/py [unittest args]
"""

import argparse
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import opslib  # noqa: E402
import hsptest  # noqa: E402
from opslib import series, wait_for  # noqa: E402

ARGS = None
BUCKETS = 8
T_TABLE = 'buckets = 8\nsalt_format = hex\nsalt_separator = -\n'
# bytes /config must escape to load back the same: NUL, ':', ' ', '\\'
W_TABLE = ('buckets = 300\nsalt_format = decimal\n'
           'salt_separator = \\x00:\\s\\\\\n'
           'hash_part = delimiter:\\x3a\\s#:2\n')
# forward-looking: keys in ["a", "m") stay unsalted (legacy)
LG_TABLE = ('buckets = 4\nsalt_format = decimal\n'
            'legacy_range_start = a\nlegacy_range_stop = m\n')
LG_BUCKETS = 4


def check_loads(test, workdir, body):
    """body (from /config) passes --check-config; its path."""
    path = os.path.join(workdir, 'effective.conf')
    with open(path, 'w') as f:
        f.write(body)
    r = subprocess.run([ARGS.proxy, '-c', path, '--check-config'],
                       capture_output=True, text=True)
    test.assertEqual(r.returncode, 0, r.stderr)
    return path


class AdminTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix='hsp-ops-admin-')
        cls.emu = opslib.Emu(ARGS.emu, cls.dir,
                             tables=('t:d', 'plain:d', 'lg:d'))
        port, admin = opslib.free_port(), opslib.free_port()
        cls.proxy = opslib.Proxy(
            ARGS.proxy, cls.dir,
            opslib.proxy_conf(port, [cls.emu.port], admin_port=admin,
                              tables={'t': T_TABLE, 'ns:w': W_TABLE,
                                      'lg': LG_TABLE}),
            port, admin_port=admin)

    @classmethod
    def tearDownClass(cls):
        try:
            if cls.proxy.alive():
                assert cls.proxy.stop() == 0
        finally:
            cls.emu.close()
        if not os.environ.get('HSP_KEEP_LOGS'):
            shutil.rmtree(cls.dir, ignore_errors=True)

    def tearDown(self):
        self.assertTrue(self.proxy.alive(), 'the proxy died; log in '
                        + self.proxy.log_path)

    def buckets(self, m, name):
        s = series(m, name, table='t')
        self.assertEqual(len(s), BUCKETS, s)
        return [s[tuple(sorted({'table': 't', 'bucket': str(b)}.items()))]
                for b in range(BUCKETS)]

    def test_1_per_bucket_counters_move(self):
        before = self.proxy.metrics()
        req0 = self.buckets(before, 'hsp_bucket_requests_total')
        rows0 = self.buckets(before, 'hsp_bucket_rows_total')
        c = opslib.client(self.proxy.port)
        keys = [('user%04d' % i).encode() for i in range(400)]
        for k in keys:
            opslib.put(c, b't', k, b'v' + k)
        mid = self.proxy.metrics()
        req1 = self.buckets(mid, 'hsp_bucket_requests_total')
        # each put salts one key: 400 requests spread over the buckets
        self.assertEqual(sum(req1) - sum(req0), len(keys))
        moved = [b for b in range(BUCKETS) if req1[b] > req0[b]]
        self.assertEqual(len(moved), BUCKETS, (req0, req1))
        for b in range(BUCKETS):
            # xxh3 spreads 400 keys: no bucket near empty or near all
            self.assertTrue(15 < req1[b] - req0[b] < 110, (b, req0, req1))

        # the per-bucket split agrees with --explain-key for a sample key
        out = subprocess.run([ARGS.proxy, '-c', self.proxy.conf,
                              '--explain-key', 't', 'user0007'],
                             capture_output=True, text=True).stdout
        bucket = int(out.split('bucket:')[1].split()[0])
        before_one = self.buckets(self.proxy.metrics(),
                                  'hsp_bucket_requests_total')
        self.assertEqual(opslib.get(c, b't', b'user0007'), b'vuser0007')
        after_one = self.buckets(self.proxy.metrics(),
                                 'hsp_bucket_requests_total')
        self.assertEqual([a - b for a, b in zip(after_one, before_one)],
                         [1 if b == bucket else 0 for b in range(BUCKETS)])

        # a full scan reads every bucket and returns every row once
        sid = c.scannerOpenWithScan(b't', opslib.T.TScan(caching=50), {})
        got = []
        while True:
            batch = c.scannerGetList(sid, 100)
            if not batch:
                break
            got += [r.row for r in batch]
        c.scannerClose(sid)
        self.assertEqual(got, sorted(keys))
        after = self.proxy.metrics()
        rows1 = self.buckets(after, 'hsp_bucket_rows_total')
        # the get's row plus every scanned row, bucket by bucket
        self.assertEqual(sum(rows1) - sum(rows0), len(keys) + 1)
        self.assertTrue(all(rows1[b] > rows0[b] for b in range(BUCKETS)))
        self.assertGreaterEqual(
            after[('hsp_scan_merged_rows_total', ())]
            - before[('hsp_scan_merged_rows_total', ())], len(keys))
        self.assertGreaterEqual(after[('hsp_scans_total', ())]
                                - before[('hsp_scans_total', ())], 1)
        # the scan opened 8 bucket scanners: the width histogram has it
        self.assertGreaterEqual(
            after[('hsp_scan_fanout_width_bucket', (('le', '8'),))]
            - after[('hsp_scan_fanout_width_bucket', (('le', '4'),))], 1)
        c._trans.close()

    def test_2_methods_errors_latency(self):
        c = opslib.client(self.proxy.port)
        opslib.put(c, b'plain', b'r', b'v')
        opslib.get(c, b'plain', b'r')
        with self.assertRaises(opslib.T.IOError):
            c.getRow(b'no_such_table', b'r', {})
        m = self.proxy.metrics()
        self.assertGreaterEqual(m[('hsp_requests_total',
                                   (('method', 'getRow'),))], 2)
        self.assertGreaterEqual(m[('hsp_request_errors_total',
                                   (('method', 'getRow'),))], 1)
        self.assertEqual(m[('hsp_request_errors_total',
                            (('method', 'mutateRow'),))], 0)
        count = m[('hsp_request_duration_seconds_count',
                   (('method', 'getRow'),))]
        inf = m[('hsp_request_duration_seconds_bucket',
                 (('le', '+Inf'), ('method', 'getRow')))]
        self.assertEqual(count, m[('hsp_requests_total',
                                   (('method', 'getRow'),))])
        self.assertEqual(count, inf)
        # cumulative buckets never decrease
        b = series(m, 'hsp_request_duration_seconds_bucket', method='getRow')
        les = sorted(b, key=lambda k: float(dict(k)['le']))
        vals = [b[k] for k in les]
        self.assertEqual(vals, sorted(vals))
        self.assertGreaterEqual(m[('hsp_client_connections', ())], 1)
        self.assertGreater(m[('hsp_client_received_bytes_total', ())], 0)
        self.assertGreater(m[('hsp_client_sent_bytes_total', ())], 0)
        self.assertGreaterEqual(
            m[('hsp_client_connections_accepted_total', ())], 1)
        c._trans.close()

    def test_3_backends_and_scanners(self):
        c = opslib.client(self.proxy.port)
        sid = c.scannerOpenWithScan(b't', opslib.T.TScan(caching=1), {})
        m = self.proxy.metrics()
        server = '127.0.0.1:%d' % self.emu.port
        self.assertEqual(m[('hsp_scanners_open', ())], 1)
        self.assertGreater(m[('hsp_backend_connections',
                              (('server', server),))], 0)
        self.assertGreater(m[('hsp_backend_requests_total',
                              (('server', server),))], 0)
        self.assertIn(('hsp_backend_inflight_requests',
                       (('server', server),)), m)
        c.scannerClose(sid)
        self.assertEqual(self.proxy.metrics()[('hsp_scanners_open', ())], 0)
        wait_for(lambda: self.proxy.metrics().get(
            ('hsp_backend_up', (('server', server),))) == 1, 10,
            'backend probe')
        m = self.proxy.metrics()
        self.assertEqual(m[('hsp_config_generation', ())], 1)
        self.assertEqual(m[('hsp_config_last_reload_success', ())], 1)
        self.assertEqual(m[('hsp_workers', ())], 2)
        c._trans.close()

    def test_4_healthz_and_config(self):
        wait_for(lambda: self.proxy.http('/healthz')[0] == 200, 10,
                 '/healthz 200')
        status, body = self.proxy.http('/healthz')
        # the emulator's t and lg are one region each: served (200), with
        # the warning the proxy gives until they are split at the bucket
        # points
        self.assertEqual(status, 200)
        self.assertEqual(body, 'ok: 1 of 1 backend servers answer\n'
                         'warning: 2 salted tables not spread over regions:\n'
                         'table lg: 4 of its 4 salt buckets share one region: '
                         'split it at the bucket points (the log has the '
                         'HBase shell commands)\n'
                         'table t: 8 of its 8 salt buckets share one region: '
                         'split it at the bucket points (the log has the '
                         'HBase shell commands)\n')
        status, body = self.proxy.http('/config')
        self.assertEqual(status, 200)
        self.assertIn('# generation 1\n', body)
        self.assertIn('[table:t]\nbuckets = 8\nsalt_format = hex\n'
                      'salt_separator = -\nhash_part = whole\n', body)
        self.assertIn('servers = 127.0.0.1:%d\n' % self.emu.port, body)
        # the effective config is a file the proxy loads
        path = check_loads(self, self.dir, body)
        # ... with the same salt policies, odd bytes included
        for conf in (self.proxy.conf, path):
            out = subprocess.run([ARGS.proxy, '-c', conf, '--explain-key',
                                  'ns:w', 'a: #b: #c'], capture_output=True,
                                 text=True, check=True).stdout
            if conf == path:
                self.assertEqual(out, first)
            first = out
        self.assertIn('hashed part:    a: #b (5 of 9 bytes)', first)
        self.assertEqual(self.proxy.http('/nope')[0], 404)

    def test_5_no_row_data_in_info_log(self):
        log = self.proxy.log_text()
        self.assertIn('admin endpoint on http://127.0.0.1:%d/'
                      % self.proxy.admin_port, log)
        self.assertNotIn('user00', log)
        self.assertNotIn('debug:', log)


    def lg_counts(self, name):
        """{bucket label: value} of name for table lg."""
        return {dict(k)['bucket']: v for k, v in
                series(self.proxy.metrics(), name, table='lg').items()}

    def test_6_legacy_range_reads_and_writes(self):
        """A forward-looking table's legacy keys count under
        bucket="legacy", salted ones under their bucket; reads and writes
        each in a series of their own, summing to requests."""
        names = ('hsp_bucket_requests_total', 'hsp_bucket_reads_total',
                 'hsp_bucket_writes_total', 'hsp_bucket_rows_total')
        before = {n: self.lg_counts(n) for n in names}
        labels = [str(b) for b in range(LG_BUCKETS)] + ['legacy']
        for n in names:
            self.assertEqual(sorted(before[n]), sorted(labels), n)
        legacy = [b'b%03d' % i for i in range(10)]
        new = [b'x%03d' % i for i in range(12)]
        want_writes = dict.fromkeys(labels, 0)
        want_reads = dict.fromkeys(labels, 0)
        want_writes['legacy'] = len(legacy)
        want_reads['legacy'] = 5
        for k in new:
            out = subprocess.run([ARGS.proxy, '-c', self.proxy.conf,
                                  '--explain-key', 'lg', k.decode()],
                                 capture_output=True, text=True).stdout
            b = out.split('bucket:')[1].split()[0]
            want_writes[b] += 1
            if k in new[:3]:
                want_reads[b] += 1
        c = opslib.client(self.proxy.port)
        for k in legacy + new:
            opslib.put(c, b'lg', k, b'v')
        for k in legacy[:5] + new[:3]:
            self.assertEqual(opslib.get(c, b'lg', k), b'v')
        after = {n: self.lg_counts(n) for n in names}
        delta = {n: {b: after[n][b] - before[n][b] for b in labels}
                 for n in names}
        self.assertEqual(delta['hsp_bucket_writes_total'], want_writes)
        self.assertEqual(delta['hsp_bucket_reads_total'], want_reads)
        self.assertEqual(delta['hsp_bucket_requests_total'],
                         {b: want_reads[b] + want_writes[b] for b in labels})
        # every get found its row, where it lives
        self.assertEqual(delta['hsp_bucket_rows_total'], want_reads)
        # a scan of the legacy range alone reads it, and its rows count
        # there too
        sid = c.scannerOpenWithScan(b'lg', opslib.T.TScan(
            startRow=b'b', stopRow=b'c', caching=100), {})
        got = c.scannerGetList(sid, 100)
        c.scannerClose(sid)
        self.assertEqual([r.row for r in got], legacy)
        scanned = self.lg_counts('hsp_bucket_rows_total')
        self.assertEqual(scanned['legacy'] - after[
            'hsp_bucket_rows_total']['legacy'], len(legacy))
        self.assertGreater(self.lg_counts('hsp_bucket_reads_total')['legacy'],
                           after['hsp_bucket_reads_total']['legacy'])
        # the unsalted table has no per-bucket series, t has no legacy one
        m = self.proxy.metrics()
        self.assertEqual(series(m, 'hsp_bucket_reads_total', table='plain'),
                         {})
        self.assertEqual(series(m, 'hsp_bucket_writes_total', table='t',
                                bucket='legacy'), {})
        c._trans.close()


    def test_7_readme_lists_every_metric(self):
        """conf/README.md's metrics table names every metric /metrics
        has, with its type, and none it lacks: the two cannot drift
        apart."""
        status, body = self.proxy.http('/metrics')
        self.assertEqual(status, 200)
        served = dict(re.findall(r'^# TYPE (\S+) (\S+)$', body, re.M))
        readme = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                              '..', '..', 'conf', 'README.md')
        with open(readme) as f:
            text = f.read()
        section = text.split('## Metrics, health and the effective '
                             'configuration', 1)[1].split('\n## ', 1)[0]
        documented = {}
        for line in section.splitlines():
            cells = [c.strip() for c in line.strip().strip('|').split('|')]
            if len(cells) < 2 or not cells[0].startswith('`hsp_'):
                continue
            for name in re.findall(r'`(hsp_\w+)`', cells[0]):
                documented[name] = cells[1]
        self.assertGreater(len(documented), 20, section)
        self.assertEqual(sorted(set(served) - set(documented)), [],
                         'served by /metrics, missing from conf/README.md')
        self.assertEqual(sorted(set(documented) - set(served)), [],
                         'in conf/README.md, not served by /metrics')
        self.assertEqual({n: documented[n] for n in served}, served,
                         'types in conf/README.md')


class HealthDownTest(unittest.TestCase):
    """/healthz is 503 while no backend answers, 200 once one does."""

    def test_healthz_follows_backend(self):
        d = tempfile.mkdtemp(prefix='hsp-ops-health-')
        dead = opslib.free_port()
        port, admin = opslib.free_port(), opslib.free_port()
        proxy = opslib.Proxy(ARGS.proxy, d,
                             opslib.proxy_conf(port, [dead],
                                               admin_port=admin),
                             port, admin_port=admin)
        try:
            wait_for(lambda: proxy.http('/healthz')[0] == 503
                     and 'unavailable' in proxy.http('/healthz')[1], 10,
                     '/healthz 503')
            m = proxy.metrics()
            self.assertEqual(m[('hsp_backend_up',
                                (('server', '127.0.0.1:%d' % dead),))], 0)
        finally:
            self.assertEqual(proxy.stop(), 0)
            if not os.environ.get('HSP_KEEP_LOGS'):
                shutil.rmtree(d, ignore_errors=True)


class DefaultsTest(unittest.TestCase):
    """A file that leaves workers out, with every server down: what
    /config and a client are told is what the docs say."""

    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix='hsp-ops-defaults-')
        cls.dead = [opslib.free_port(), opslib.free_port()]
        port, admin = opslib.free_port(), opslib.free_port()
        text = opslib.proxy_conf(port, cls.dead, admin_port=admin)
        cls.proxy = opslib.Proxy(ARGS.proxy, cls.dir,
                                 text.replace('workers = 2\n', ''),
                                 port, admin_port=admin)

    @classmethod
    def tearDownClass(cls):
        try:
            assert cls.proxy.stop() == 0
        finally:
            if not os.environ.get('HSP_KEEP_LOGS'):
                shutil.rmtree(cls.dir, ignore_errors=True)

    def test_config_shows_workers_in_use(self):
        status, body = self.proxy.http('/config')
        self.assertEqual(status, 200)
        n = len(os.sched_getaffinity(0))
        self.assertIn('\nworkers = %d\n' % n, body)
        self.assertIn('# workers = 0 in the file: one per CPU core\n', body)
        self.assertIn('listening on 127.0.0.1:%d with %d worker'
                      % (self.proxy.port, n), self.proxy.log_text())
        check_loads(self, self.dir, body)

    def test_readme_no_backend_message(self):
        """conf/README.md's example of the message is the message."""
        wait_for(lambda: 'unavailable' in self.proxy.http('/healthz')[1],
                 10, 'every server down')
        c = opslib.client(self.proxy.port)
        try:
            with self.assertRaises(opslib.T.IOError) as cm:
                c.getTableNames()
        finally:
            c._trans.close()
        got = cm.exception.message
        self.assertTrue(cm.exception.canRetry)
        doc = opslib.readme_quote('hbase-salt-proxy: no backend server '
                                  'available: ')
        head = 'hbase-salt-proxy: no backend server available: '
        self.assertTrue(got.startswith(head), got)
        doc_parts = doc[len(head):].split('; ')
        got_parts = got[len(head):].split('; ')
        self.assertEqual(len(got_parts), 2, got)
        # a refused server reads exactly as the first example does
        addr = re.match(r'(\S+:\d+): ', doc_parts[0]).group(1)
        self.assertEqual(got_parts[0],
                         doc_parts[0].replace(addr, '127.0.0.1:%d'
                                              % self.dead[0]))
        # and every server part has the example's shape
        shape = re.compile(r'^\S+:\d+: down: (probe: )?\S.*$')
        for part in doc_parts + got_parts:
            self.assertRegex(part, shape)


class PresplitTest(unittest.TestCase):
    """--split-keys gives HBase shell SPLITS that put each bucket in a
    region of its own: checked on hbase-emu split at exactly those keys,
    region by region against the proxy's per-bucket counters."""

    def check_format(self, fmt, buckets):
        d = tempfile.mkdtemp(prefix='hsp-ops-split-')
        table = ('buckets = %d\nsalt_format = %s\nsalt_separator = -\n'
                 % (buckets, fmt))
        conf = os.path.join(d, 'split.conf')
        with open(conf, 'w') as f:
            f.write(opslib.proxy_conf(9090, [9091], tables={'t': table}))
        out = subprocess.run([ARGS.proxy, '-c', conf, '--split-keys', 't'],
                             capture_output=True, text=True, check=True)
        self.assertTrue(out.stdout.startswith('SPLITS => ["'), out.stdout)
        keys = re.findall(r'"([^"]*)"', out.stdout)
        self.assertEqual(len(keys), buckets - 1)
        stats = os.path.join(d, 'stats.txt')
        emu = opslib.Emu(ARGS.emu, d, extra=['--split-keys', ','.join(keys),
                                             '--stats-file', stats])
        port, admin = opslib.free_port(), opslib.free_port()
        proxy = opslib.Proxy(ARGS.proxy, d,
                             opslib.proxy_conf(port, [emu.port],
                                               admin_port=admin,
                                               tables={'t': table}),
                             port, admin_port=admin)
        try:
            c = opslib.client(port)
            for i in range(20 * buckets):
                opslib.put(c, b't', ('key%05d' % i).encode(), b'v')
            c._trans.close()
            per_bucket = series(proxy.metrics(), 'hsp_bucket_requests_total',
                                table='t')
            want = [per_bucket[tuple(sorted({'table': 't',
                                             'bucket': str(b)}.items()))]
                    for b in range(buckets)]
            emu.proc.send_signal(signal.SIGUSR1)

            def regions():
                try:
                    with open(stats) as f:
                        text = f.read()
                except OSError:
                    return None
                got = {}
                for line in text.splitlines():
                    m = re.match(r'region table=t index=(\d+) .*'
                                 r'cells_written=(\d+)', line)
                    if m:
                        got[int(m.group(1))] = int(m.group(2))
                return got if len(got) == buckets else None
            got = wait_for(regions, 10, 'hbase-emu stats')
            # region i holds bucket i, nothing else
            self.assertEqual([got[i] for i in range(buckets)], want)
            self.assertTrue(all(w > 0 for w in want), want)
        finally:
            self.assertEqual(proxy.stop(), 0)
            emu.close()
            if not os.environ.get('HSP_KEEP_LOGS'):
                shutil.rmtree(d, ignore_errors=True)

    def test_byte(self):
        self.check_format('byte', 16)

    def test_hex(self):
        self.check_format('hex', 16)

    def test_decimal(self):
        self.check_format('decimal', 12)

    def test_byte_wide(self):
        # more than 256 buckets: two-byte salts
        self.check_format('byte', 300)


def main():
    global ARGS
    ap = argparse.ArgumentParser()
    ap.add_argument('--proxy', required=True)
    ap.add_argument('--emu', required=True)
    ap.add_argument('--pydir', required=True)
    ARGS, rest = ap.parse_known_args()
    hsptest.import_thrift(ARGS.pydir, opslib)
    unittest.main(argv=[sys.argv[0]] + rest, verbosity=2)


if __name__ == '__main__':
    main()
