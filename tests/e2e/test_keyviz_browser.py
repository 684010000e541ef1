"""The /keyviz page in a real browser: Debian's chromium, driven by npm's
playwright-core (browser/keyviz.js), loads the page from the proxy's
admin endpoint after a skewed workload, and finds the heatmap drawn, a
cell's tooltip naming its key range, the hot keys, bucket bars and
advice; it switches metric and table; it saves a screenshot.  Fails if
the page asks any address but the proxy's.

  /usr/bin/python3 tests/e2e/test_keyviz_browser.py --proxy BUILD/daemon/hbase-salt-proxy \\
      --emu BUILD/tests/emu/hbase-emu --pydir BUILD/thrift/py \\
      --browser-dir BUILD/tests/e2e/browser --script tests/e2e/browser/keyviz.js \\
      [--screenshot OUT.png]
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                '..', 'ops'))
import opslib  # noqa: E402
import hsptest  # noqa: E402

ARGS = None
EV_TABLE = ('buckets = 8\nsalt_format = hex\nsalt_separator = -\n'
            'hash_part = delimiter:#:1\n')
W_TABLE = 'buckets = 4\nsalt_format = decimal\n'


class KeyvizBrowserTest(unittest.TestCase):
    def setUp(self):
        for need, what in (('/usr/bin/chromium', 'Debian\'s chromium (apt '
                            'package chromium)'),
                           (os.path.join(ARGS.browser_dir, 'node_modules',
                                         'playwright-core'),
                            'npm\'s playwright-core (npm ci in '
                            'tests/e2e/browser)')):
            if not os.path.exists(need):
                self.fail('%s is missing: %s' % (what, need))
        self.dir = tempfile.mkdtemp(prefix='hsp-keyviz-browser-')
        self.emu = opslib.Emu(ARGS.emu, self.dir, tables=('ev:d', 'w:d'))
        port, admin = opslib.free_port(), opslib.free_port()
        conf = opslib.proxy_conf(port, [self.emu.port], admin_port=admin,
                                 tables={'ev': EV_TABLE, 'w': W_TABLE})
        conf += '[keyviz]\ninterval_s = 1\nranges = 64\nhot_keys = 8\n'
        self.proxy = opslib.Proxy(ARGS.proxy, self.dir, conf, port,
                                  admin_port=admin)

    def tearDown(self):
        opslib.stop_all(self.proxy, self.emu, self.dir)

    def workload(self, seconds):
        def w_table(c, rnd):
            # enough that the newest interval's few tenths of a second
            # hold w's operations for the one-in-8 draw, under ASan too
            for _ in range(6):
                opslib.put(c, b'w', b'w-%d' % rnd.randrange(20), b'v')
                opslib.get(c, b'w', b'w-%d' % rnd.randrange(20))
        opslib.skewed_writes(self.proxy.port, b'ev', seconds, users=300,
                             also=w_table)

    def test_page_in_chromium(self):
        # ends 0.6 s into an interval (1 s long): the newest interval, the
        # one the page shows first, holds enough of w's operations for the
        # default draw (one in 8 feeds the hot keys) to take some
        self.workload(6.6 - time.time() % 1.0)
        time.sleep(2.2)
        shot = ARGS.screenshot or os.path.join(self.dir, 'keyviz.png')
        profile = os.path.join(self.dir, 'chromium-profile')
        os.mkdir(profile)
        env = dict(os.environ)
        env['NODE_PATH'] = os.path.join(ARGS.browser_dir, 'node_modules')
        r = subprocess.run(['node', ARGS.script,
                            'http://127.0.0.1:%d' % self.proxy.admin_port,
                            profile, shot, 'w'],
                           capture_output=True, text=True, env=env,
                           timeout=120)
        self.assertEqual(r.returncode, 0, r.stderr)
        out = json.loads(r.stdout.strip().splitlines()[-1])
        # only the proxy's address was asked, and asked for the page's data
        self.assertEqual(out['foreign'], [])
        self.assertTrue(any('/keyviz.json' in u for u in out['requests']),
                        out['requests'])
        self.assertEqual(out['errors'], [])
        self.assertGreater(out['cells'], 4)
        self.assertGreater(out['coloured'], 1000)
        # the hottest cell of the heatmap is the celebrity's range
        self.assertRegex(out['tooltip'], r'^keys +\[celeb, user')
        self.assertIn('writes', out['tooltip'])
        self.assertGreater(out['hotkeys'], 1)
        self.assertEqual(out['hotparts_first'], 'celeb')
        self.assertEqual(out['bucket_bars'], 8)
        self.assertGreater(out['advice'], 0)
        self.assertIn('intervals of 1 s', out['metric_status'])
        self.assertEqual(out['table_after'], 'w')
        self.assertTrue(out['other_hotkey'].startswith('w-'))
        with open(shot, 'rb') as f:
            self.assertEqual(f.read(8), b'\x89PNG\r\n\x1a\n')


if __name__ == '__main__':
    ap = argparse.ArgumentParser()
    ap.add_argument('--proxy', required=True)
    ap.add_argument('--emu', required=True)
    ap.add_argument('--pydir', required=True)
    ap.add_argument('--browser-dir', required=True)
    ap.add_argument('--script', required=True)
    ap.add_argument('--screenshot')
    ARGS, rest = ap.parse_known_args()
    hsptest.import_thrift(ARGS.pydir, opslib)
    unittest.main(argv=[sys.argv[0]] + rest, verbosity=2)
