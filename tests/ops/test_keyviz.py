"""The key visualizer end to end: a skewed workload through the proxy (a
celebrity with 30 % of the writes, monotonic timestamps in its keys, and
a uniform background) shows in /keyviz.json and /hotkeys.json: the
celebrity's range is the hottest, its hash_part value leads the hot
values with a count inside the stated bound, and the bucket bars show
the bucket it lands in.

  /usr/bin/python3 tests/ops/test_keyviz.py --proxy BUILD/daemon/hbase-salt-proxy \\
      --emu BUILD/tests/emu/hbase-emu --pydir BUILD/thrift/py [unittest args]
"""

import json
import os
import re
import subprocess
import sys
import tempfile
import time
import unittest
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import opslib  # noqa: E402

ARGS = None
BUCKETS = 8
# a user's rows share a bucket: the hash_part is the user
EV_TABLE = ('buckets = %d\nsalt_format = hex\nsalt_separator = -\n'
            'hash_part = delimiter:#:1\n' % BUCKETS)
W_TABLE = 'buckets = 4\nsalt_format = decimal\n'


def migrate_path():
    """hbase-salt-migrate of the same build as the proxy."""
    build = os.path.dirname(os.path.dirname(os.path.abspath(ARGS.proxy)))
    return os.path.join(build, 'daemon', 'migrate', 'hbase-salt-migrate')


class KeyvizTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix='hsp-ops-keyviz-')
        cls.emu = opslib.Emu(ARGS.emu, cls.dir,
                             tables=('ev:d', 'w:d', 'ev2:d'))
        port, admin = opslib.free_port(), opslib.free_port()
        conf = opslib.proxy_conf(port, [cls.emu.port], admin_port=admin,
                                 tables={'ev': EV_TABLE, 'w': W_TABLE})
        conf += '[keyviz]\ninterval_s = 1\nranges = 64\nhot_keys = 16\n'
        cls.proxy = opslib.Proxy(ARGS.proxy, cls.dir, conf, port,
                                 admin_port=admin)
        cls.celeb_writes = 0
        cls.writes = 0
        cls.run_workload()

    @classmethod
    def run_workload(cls, seconds=6.0, table=b'ev', seed=24):
        """Writes for a few intervals (opslib.skewed_writes), a write to
        w every 50."""
        def w_table(c, rnd):
            opslib.put(c, b'w', b'k%d' % rnd.randrange(100), b'v')
        writes, celeb = opslib.skewed_writes(cls.proxy.port, table, seconds,
                                             seed, also=w_table)
        if table == b'ev':
            cls.writes += writes
            cls.celeb_writes += celeb
        # every interval written in harvested: one second after its end
        time.sleep(2.5)

    def measured_fullest(self, table):
        """The share of the writes in table's fullest bucket, over every
        interval the proxy counted."""
        total = {}
        doc = self.json('/keyviz.json?table=%s' % table)
        for iv in doc['intervals']:
            hot = self.json('/hotkeys.json?table=%s&at=%d'
                            % (table, iv['start']))
            for b in hot['buckets']:
                total[b['bucket']] = total.get(b['bucket'], 0) + b['writes']
        return max(total.values()) / sum(total.values())

    def analyze(self, table):
        r = subprocess.run([migrate_path(),
                            '-c', self.proxy.conf, '--analyze',
                            '--from-table', table, '--json'],
                           capture_output=True, text=True, timeout=120)
        self.assertEqual(r.returncode, 0, r.stderr)
        return json.loads(r.stdout)

    @classmethod
    def tearDownClass(cls):
        opslib.stop_all(cls.proxy, cls.emu, cls.dir)

    def json(self, path):
        status, body = self.proxy.http(path)
        self.assertEqual(status, 200, body)
        return json.loads(body)

    def intervals(self):
        return [iv for iv in self.json('/keyviz.json?table=ev&metric=writes')
                ['intervals'] if iv['total'] > 0]

    def test_1_every_write_counted_once(self):
        ivs = self.intervals()
        self.assertGreaterEqual(len(ivs), 4, ivs)
        self.assertEqual(sum(iv['total'] for iv in ivs), self.writes)
        doc = self.json('/keyviz.json?table=ev&metric=reads')
        self.assertEqual(sum(iv['total'] for iv in doc['intervals']), 0)
        self.assertEqual(doc['tables'], ['ev', 'w'])

    def test_2_celebrity_range_is_hottest(self):
        # the boundaries follow the keys from the fourth interval on: look
        # at the busiest of the later ones
        iv = max(self.intervals()[4:], key=lambda iv: iv['total'])
        top = max(iv['ranges'], key=lambda r: r['value'])
        self.assertEqual(top['start'], 'celeb', iv)
        share = top['value'] / iv['total']
        self.assertTrue(0.22 < share < 0.40, (share, iv))
        # the ranges cover the key space in order, without gaps
        self.assertEqual(iv['ranges'][0]['start'], '')
        self.assertIsNone(iv['ranges'][-1]['end'])
        for a, b in zip(iv['ranges'], iv['ranges'][1:]):
            self.assertEqual(a['end'], b['start'])

    def test_3_celebrity_leads_hot_values_within_bound(self):
        # the default sampling: one write in 8 feeds the sketches, and a
        # hot count is the sketch's scaled back (by about 8): over by at
        # most its 'error', and spread by the draw with a standard
        # deviation 'sd'
        count = err = var = ops = 0
        explain = subprocess.run([ARGS.proxy, '-c', self.proxy.conf,
                                  '--explain-key', 'ev', 'celeb#1'],
                                 capture_output=True, text=True).stdout
        bucket = int(explain.split('bucket:')[1].split()[0])
        for iv in self.intervals():
            hot = self.json('/hotkeys.json?table=ev&at=%d' % iv['start'])
            self.assertEqual(hot['sampling'], 8)
            ops += hot['ops']
            celeb = [h for h in hot['hot_parts'] if h['key'] == 'celeb']
            if hot['ops'] < 200:
                # the workload's first or last moments: too few to rank,
                # but counted all the same
                if celeb:
                    count += celeb[0]['count']
                    err += celeb[0]['error']
                    var += celeb[0]['sd'] ** 2
                continue
            first = hot['hot_parts'][0]
            self.assertEqual(first['key'], 'celeb', hot)
            self.assertEqual(first['bucket'], bucket)
            self.assertLessEqual(first['error'], hot['error_bound'])
            count += first['count']
            err += first['error']
            var += first['sd'] ** 2
            # the bucket bars: the celebrity's bucket carries the most
            bars = [b for b in hot['buckets'] if b['bucket'] != 'legacy']
            self.assertEqual(len(bars), BUCKETS)
            top = max(bars, key=lambda b: b['writes'])
            self.assertEqual(top['bucket'], bucket, bars)
            self.assertEqual(hot['advice']['hottest_bucket'], bucket)
        # every write counted in the ranges, whatever the draw took
        self.assertEqual(ops, self.writes)
        # within the sketch's error and four standard deviations of the
        # draw (a miss about once in 16 000 runs)
        sd = var ** 0.5
        self.assertGreater(sd, 0)
        self.assertLessEqual(count - err - 4 * sd, self.celeb_writes,
                             (count, err, sd))
        self.assertGreaterEqual(count + 4 * sd, self.celeb_writes,
                                (count, err, sd))
        print('celebrity: %d writes, counted %d (error %d, sd %.0f)'
              % (self.celeb_writes, count, err, sd))

    def test_4_advice_names_the_hot_prefix(self):
        # the busiest interval: the newest may hold the last few writes
        busiest = max(self.intervals(), key=lambda iv: iv['total'])
        hot = self.json('/hotkeys.json?table=ev&at=%d' % busiest['start'])
        adv = hot['advice']
        self.assertEqual(adv['hash_part'], 'delimiter:#:1')
        self.assertGreater(adv['hottest_bucket_share'], 0.3)
        text = ' '.join(adv['notes'])
        self.assertIn('every row sharing a hash_part value lands in one '
                      'bucket', text)
        pred = {(p['buckets'], p['hash_part']): p['fullest_share']
                for p in adv['predicted']}
        # whole keys spread the celebrity's rows; its prefix cannot be
        self.assertGreater(pred[(8, 'delimiter:#:1')], 0.28)
        self.assertLess(pred[(8, 'whole')], 0.25)

    def test_5_strict_parameters(self):
        for q, code in (('table=ev&metric=nope', 400),
                        ('table=ev&since=-1', 400),
                        ('table=ev&since=1x', 400),
                        ('table=ev&bogus=1', 400),
                        ('table=ev&table=w', 400),
                        ('table=nope', 404)):
            status, body = self.proxy.http('/keyviz.json?' + q)
            self.assertEqual(status, code, (q, body))
        status, body = self.proxy.http('/hotkeys.json?table=ev&metric=rows')
        self.assertEqual(status, 400, body)
        now = int(time.time())
        doc = self.json('/keyviz.json?table=ev&since=%d' % (now + 10))
        self.assertEqual(doc['intervals'], [])

    def test_6_keys_hash_and_hide(self):
        # keys = hash|hide takes effect on reload.  The busiest interval's
        # hot values: the newest may hold the workload's last few writes,
        # of which the one-in-8 draw may have taken none
        busiest = max(self.intervals(), key=lambda iv: iv['total'])
        with open(self.proxy.conf) as f:
            text = f.read()
        gen = self.proxy.generation()
        try:
            for mode in ('hash', 'hide'):
                self.proxy.write_conf(text + 'keys = %s\n' % mode)
                self.proxy.hup()
                gen += 1
                self.proxy.wait_generation(gen)
                hot = self.json('/hotkeys.json?table=ev&at=%d'
                                % busiest['start'])
                key = hot['hot_parts'][0]['key']
                if mode == 'hash':
                    self.assertRegex(key, r'^#[0-9a-f]{16}$')
                else:
                    self.assertIsNone(key)
                body = self.proxy.http('/keyviz.json?table=ev')[1]
                self.assertNotIn('celeb', body)
                self.assertNotIn('user0', body)
        finally:
            # the tests after this one read keys as shown
            self.proxy.write_conf(text)
            self.proxy.hup()
            self.proxy.wait_generation(gen + 1)

    def test_7_page_is_self_contained(self):
        url = 'http://127.0.0.1:%d/keyviz' % self.proxy.admin_port
        with urllib.request.urlopen(url, timeout=10) as r:
            self.assertEqual(r.status, 200)
            self.assertEqual(r.headers['Content-Type'],
                             'text/html; charset=utf-8')
            self.assertIn("default-src 'self'",
                          r.headers['Content-Security-Policy'])
            page = r.read().decode()
        self.assertIn('<canvas id="heatmap"', page)
        # nothing fetched from elsewhere: no absolute URL, no external
        # script, style or font
        self.assertNotRegex(page, r'(?i)(https?:)?//[a-z0-9.-]+[./:]')
        self.assertNotRegex(page, r'(?i)<(script|link|img)[^>]*'
                                  r'(src|href)="(?!data:)')
        self.assertIn("'/keyviz.json?metric='", page)

    def test_8_analyze_predicts_what_the_proxy_measures(self):
        doc = self.analyze('ev')
        self.assertTrue(doc['complete'], doc)
        self.assertEqual(doc['rows_read'], self.writes)
        choices = {c['hash_part']: c for c in doc['choices']}
        self.assertEqual(sorted(choices), ['delimiter:#:1', 'whole'])
        # the table's own mapping: the prediction is what the proxy saw
        own = [f['fullest_share'] for f in choices['delimiter:#:1']
               ['fullest'] if f['buckets'] == 8][0]
        measured = self.measured_fullest('ev')
        self.assertLess(abs(own - measured) / measured, 0.10,
                        (own, measured))
        # the celebrity is the largest group under its hash_part
        top = choices['delimiter:#:1']['largest_groups'][0]
        self.assertEqual(top['key'], 'celeb')
        self.assertAlmostEqual(top['share'],
                               self.celeb_writes / self.writes, places=3)
        # it keeps 30 % in one bucket: whole keys are proposed
        prop = doc['proposed']
        self.assertEqual((prop['buckets'], prop['hash_part']), (8, 'whole'))
        self.assertIn('[table:ev]\nbuckets = 8\n', prop['section'])
        self.assertIn('hash_part = whole\n', prop['section'])
        # ... and a table salted so measures what it predicted
        with open(self.proxy.conf) as f:
            text = f.read()
        gen = self.proxy.generation()
        self.proxy.write_conf(text + prop['section'].replace('[table:ev]',
                                                             '[table:ev2]'))
        self.proxy.hup()
        self.proxy.wait_generation(gen + 1)
        type(self).run_workload(seconds=4.0, table=b'ev2', seed=25)
        measured = self.measured_fullest('ev2')
        self.assertLess(abs(prop['fullest_share'] - measured) / measured,
                        0.10, (prop, measured))
        # the text report says the same
        r = subprocess.run([migrate_path(),
                            '-c', self.proxy.conf, '--analyze',
                            '--from-table', 'ev'],
                           capture_output=True, text=True, timeout=120)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn('delimiter:#:1 (', r.stdout)
        shown = re.search(r' celeb (\d+\.\d)%', r.stdout)
        self.assertIsNotNone(shown, r.stdout)
        self.assertAlmostEqual(float(shown.group(1)), 100 * top['share'],
                               delta=0.06)
        self.assertIn('proposed (fullest bucket', r.stdout)

    def test_9_errors_count_against_the_key(self):
        c = opslib.client(self.proxy.port)
        failed = 0
        for i in range(40):
            try:
                c.mutateRow(b'w', b'k%d' % (i % 4), [opslib.T.Mutation(
                    column=b'nosuch:a', value=b'v')], {})
            except opslib.T.IOError:
                failed += 1
        c._trans.close()
        self.assertEqual(failed, 40)
        time.sleep(2.5)
        doc = self.json('/keyviz.json?table=w&metric=errors')
        ranges = [r for iv in doc['intervals'] for r in iv['ranges']
                  if r['value'] > 0]
        self.assertEqual(sum(r['value'] for r in ranges), 40)
        for r in ranges:
            # the range holds one of the failing keys k0..k3
            self.assertLessEqual(r['start'], 'k3', r)
            self.assertTrue(r['end'] is None or r['end'] > 'k0', r)

    def test_10_scanned_rows_count_in_their_ranges(self):
        c = opslib.client(self.proxy.port)
        sid = c.scannerOpenWithScan(b'w', opslib.T.TScan(caching=7), {})
        rows = []
        while True:
            batch = c.scannerGetList(sid, 10)
            if not batch:
                break
            rows += [r.row for r in batch]
        c.scannerClose(sid)
        got = opslib.get(c, b'w', rows[0])
        c._trans.close()
        self.assertEqual(got, b'v')
        time.sleep(2.5)
        doc = self.json('/keyviz.json?table=w&metric=rows')
        # every row the merged scan handed back, and the get's one row
        self.assertEqual(sum(iv['total'] for iv in doc['intervals']),
                         len(rows) + 1)
        doc = self.json('/keyviz.json?table=w&metric=bytes_out')
        self.assertGreater(sum(iv['total'] for iv in doc['intervals']), 0)


if __name__ == '__main__':
    ARGS = opslib.run_tests()
