"""SIGHUP reload without losing anyone: a new table applies to new
requests, an open scanner and an open connection survive, a salt mapping
change (or a salted table's section removed) is refused with a reason, an
invalid file keeps the old config with file/line/key, a restart-only key
is refused, and a backend list change sends new requests to the new
servers while the old scanner keeps reading from its own.

  /usr/bin/python3 tests/ops/test_reload.py --proxy BUILD/daemon/hbase-salt-proxy \\
      --emu BUILD/tests/emu/hbase-emu --pydir BUILD/thrift/py [unittest args]
"""

import argparse
import os
import shutil
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import opslib  # noqa: E402
import hsptest  # noqa: E402
from opslib import get, put, wait_for  # noqa: E402

ARGS = None
T_TABLE = 'buckets = 8\nsalt_format = hex\nsalt_separator = -\n'
U_TABLE = 'buckets = 4\nsalt_format = decimal\n'


class ReloadTest(unittest.TestCase):
    """One proxy through a sequence of reloads, numbered in order."""

    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix='hsp-ops-reload-')
        cls.emu = opslib.Emu(ARGS.emu, cls.dir, 'emu1')
        cls.emu2 = opslib.Emu(ARGS.emu, cls.dir, 'emu2')
        cls.port, cls.admin = opslib.free_port(), opslib.free_port()
        cls.proxy = opslib.Proxy(ARGS.proxy, cls.dir,
                                 cls.conf(tables={'t': T_TABLE}),
                                 cls.port, admin_port=cls.admin)
        cls.gen = 1

    @classmethod
    def conf(cls, servers=None, tables=None, **kw):
        return opslib.proxy_conf(cls.port, servers or [cls.emu.port],
                                 admin_port=cls.admin, tables=tables, **kw)

    @classmethod
    def tearDownClass(cls):
        try:
            if not cls.stopped and cls.proxy.alive():
                assert cls.proxy.stop() == 0, 'proxy exit code'
        finally:
            cls.emu.close()
            cls.emu2.close()
        if not os.environ.get('HSP_KEEP_LOGS'):
            shutil.rmtree(cls.dir, ignore_errors=True)

    stopped = False

    def tearDown(self):
        self.assertTrue(self.stopped or self.proxy.alive(),
                        'the proxy died; log in ' + self.proxy.log_path)

    def reload(self, text, expect):
        """Writes text, sends SIGHUP, waits for the outcome's log line."""
        m = self.proxy.metrics()
        key = ('hsp_config_reloads_total', (('result', expect),))
        before = m[key]
        at = self.proxy.log_size()
        self.proxy.write_conf(text)
        self.proxy.hup()
        wait_for(lambda: self.proxy.metrics()[key] == before + 1, 10,
                 'reload result ' + expect)
        if expect == 'applied':
            ReloadTest.gen += 1
            line = self.proxy.wait_log(r'reload: applied configuration '
                                       r'generation %d' % self.gen, after=at)
        else:
            line = self.proxy.wait_log(r'reload.*(refused|failed), keeping '
                                       r'generation %d' % self.gen, after=at)
        m = self.proxy.metrics()
        self.assertEqual(m[('hsp_config_generation', ())], self.gen)
        self.assertEqual(m[('hsp_config_last_reload_success', ())],
                         1 if expect == 'applied' else 0)
        return line

    def scan_all(self, c, sid):
        rows = []
        while True:
            batch = c.scannerGetList(sid, 7)
            if not batch:
                return rows
            rows += [r.row for r in batch]

    def test_1_new_table_applies_open_scanner_survives(self):
        c = opslib.client(self.port)
        keys = [('k%03d' % i).encode() for i in range(60)]
        for k in keys:
            put(c, b't', k, b'v')
        # u is not salted yet: passes through
        put(c, b'u', b'zq-before', b'x')
        self.assertIn(b'zq-before', opslib.physical_rows(self.emu.port, b'u'))
        sid = c.scannerOpenWithScan(b't', opslib.T.TScan(caching=5), {})
        first = [r.row for r in c.scannerGetList(sid, 10)]
        self.assertEqual(first, keys[:10])

        self.reload(self.conf(tables={'t': T_TABLE, 'u': U_TABLE,
                                      'w': U_TABLE}), 'applied')
        # u holds a row written unsalted: salting it would hide that row,
        # so the table catalog check refuses u; w is empty: registered
        self.proxy.wait_log(r'table u is not served: it holds rows written '
                            r'without this salt')
        self.proxy.wait_log(r'registered table w in hbase_salt_catalog')

        # the open scanner and the connection carry on
        self.assertEqual(first + self.scan_all(c, sid), keys)
        c.scannerClose(sid)
        with self.assertRaises(opslib.T.IOError) as cm:
            put(c, b'u', b'zq-after', b'y')
        self.assertIn('legacy_', cm.exception.message)
        self.assertEqual(opslib.physical_rows(self.emu.port, b'u'),
                         [b'zq-before'])
        # new requests on the same connection salt w: 4 decimal buckets
        put(c, b'w', b'zq-after', b'y')
        self.assertEqual(get(c, b'w', b'zq-after'), b'y')
        phys = opslib.physical_rows(self.emu.port, b'w')
        self.assertEqual(len(phys), 1, phys)
        self.assertRegex(phys[0].decode(), r'^[0-3]zq-after$')
        # per-bucket counters for the new table exist
        self.assertEqual(len(opslib.series(self.proxy.metrics(),
                                           'hsp_bucket_requests_total',
                                           table='w')), 4)
        c._trans.close()

    def test_2_salt_change_refused(self):
        c = opslib.client(self.port)
        line = self.reload(self.conf(tables={
            't': T_TABLE.replace('buckets = 8', 'buckets = 16'),
            'u': U_TABLE, 'w': U_TABLE}), 'refused')
        self.assertIn('[table:t]', line)
        self.assertIn('buckets=8', line)
        self.assertIn('buckets=16', line)
        self.assertIn('unreachable', line)
        for t, change in (('t', T_TABLE.replace('hex', 'decimal')),
                          ('t', T_TABLE.replace('-', '_')),
                          ('u', U_TABLE + 'hash_part = length:3\n')):
            tables = {'t': T_TABLE, 'u': U_TABLE, 'w': U_TABLE}
            tables[t] = change
            line = self.reload(self.conf(tables=tables), 'refused')
            self.assertIn('[table:%s]: the salt mapping would change' % t,
                          line)
        # rows are still where they were
        self.assertEqual(get(c, b't', b'k001'), b'v')
        c._trans.close()

    def test_3_removed_table_refused(self):
        line = self.reload(self.conf(tables={'t': T_TABLE, 'u': U_TABLE}),
                           'refused')
        self.assertIn('[table:w] was removed', line)
        self.assertIn('unreachable', line)
        c = opslib.client(self.port)
        self.assertEqual(get(c, b'w', b'zq-after'), b'y')
        c._trans.close()

    def test_4_invalid_file_keeps_config(self):
        text = self.conf(tables={'t': T_TABLE, 'u': U_TABLE, 'w': U_TABLE})
        text = text.replace('pool_size = 2\n', 'pool_size = 2\npool_sise = 3\n')
        line = self.reload(text, 'invalid')
        lineno = text.splitlines().index('pool_sise = 3') + 1
        self.assertIn('%s:%d: [backend] pool_sise' % (self.proxy.conf,
                                                      lineno), line)
        line = self.reload(self.conf(tables={'t': 'buckets = lots\n',
                                             'u': U_TABLE, 'w': U_TABLE}), 'invalid')
        self.assertIn('[table:t] buckets', line)
        c = opslib.client(self.port)
        self.assertEqual(get(c, b't', b'k002'), b'v')
        c._trans.close()

    def test_5_restart_only_refused(self):
        line = self.reload(self.conf(tables={'t': T_TABLE, 'u': U_TABLE, 'w': U_TABLE},
                                     extra_backend='transport = framed\n'),
                           'refused')
        self.assertIn('[backend] transport changed: that needs a restart',
                      line)

    def test_6_backend_list_change(self):
        c = opslib.client(self.port)
        put(c, b'plain', b'old', b'1')
        sid = c.scannerOpenWithScan(b't', opslib.T.TScan(caching=3), {})
        first = [r.row for r in c.scannerGetList(sid, 5)]
        self.reload(self.conf(servers=[self.emu2.port],
                              tables={'t': T_TABLE, 'u': U_TABLE, 'w': U_TABLE}),
                    'applied')
        # new requests, even on the old connection, go to emu2 ...
        put(c, b'plain', b'new', b'2')
        self.assertIn(b'new', opslib.physical_rows(self.emu2.port, b'plain'))
        self.assertNotIn(b'new',
                         opslib.physical_rows(self.emu.port, b'plain'))
        # ... while the open scanner reads on from emu1, where its rows are
        rest = self.scan_all(c, sid)
        self.assertEqual(first + rest,
                         [('k%03d' % i).encode() for i in range(60)])
        c.scannerClose(sid)
        c._trans.close()
        # emu1's connections drain once idle; emu2 is probed and up
        old = '127.0.0.1:%d' % self.emu.port
        new = '127.0.0.1:%d' % self.emu2.port
        wait_for(lambda: self.proxy.metrics()[
            ('hsp_backend_connections', (('server', old),))] == 0, 10,
            'old backend connections closed')
        wait_for(lambda: self.proxy.metrics().get(
            ('hsp_backend_up', (('server', new),))) == 1, 15,
            'new backend probed')
        m = self.proxy.metrics()
        self.assertNotIn(('hsp_backend_up', (('server', old),)), m)
        self.assertIn('servers = %s\n' % new, self.proxy.http('/config')[1])

    def test_7_limits_apply_to_new_connections(self):
        tables = {'t': T_TABLE, 'u': U_TABLE, 'w': U_TABLE}
        servers = [self.emu2.port]
        c = opslib.client(self.port)
        put(c, b'plain', b'zq-lim', b'1')
        self.reload(self.conf(servers=servers, tables=tables,
                              extra_proxy='max_connections = 1\n'),
                    'applied')
        at = self.proxy.log_size()
        with self.assertRaises(Exception):
            d = opslib.client(self.port, timeout=3)
            get(d, b'plain', b'zq-lim')
        self.proxy.wait_log(r'client 127\.0\.0\.1:\d+: refused: '
                            r'max_connections reached', after=at)
        # the connection already open is not touched
        self.assertEqual(get(c, b'plain', b'zq-lim'), b'1')
        self.reload(self.conf(servers=servers, tables=tables), 'applied')
        d = opslib.client(self.port)
        self.assertEqual(get(d, b'plain', b'zq-lim'), b'1')
        d._trans.close()
        c._trans.close()

    def test_8_sigterm_after_reloads(self):
        self.assertEqual(self.proxy.stop(), 0)
        ReloadTest.stopped = True
        # nothing from row data in the info-level log
        log = self.proxy.log_text()
        for secret in ('k001', 'zq-'):
            self.assertNotIn(secret, log)


def rss_kb(pid):
    with open('/proc/%d/status' % pid) as f:
        for line in f:
            if line.startswith('VmRSS:'):
                return int(line.split()[1])
    return -1


class ManyReloadsTest(unittest.TestCase):
    """Ten thousand reloads, each with new backend pools, while a scanner
    stays open and requests go on: every generation and retired pool is
    freed once nothing uses it, so the proxy's memory stays bounded, and
    the backend counters on /metrics never go back as pools are freed."""

    RELOADS = 2000 if os.environ.get('HSP_UNDER_ASAN') == '1' else 10000

    def test_memory_bounded(self):
        d = tempfile.mkdtemp(prefix='hsp-ops-reloads-')
        emu = opslib.Emu(ARGS.emu, d, 'emu')
        port, admin = opslib.free_port(), opslib.free_port()

        def conf(i):
            # pool_size changes every time: each reload retires the pools
            return opslib.proxy_conf(
                port, [emu.port], admin_port=admin,
                tables={'t': T_TABLE}).replace(
                    'pool_size = 2\n', 'pool_size = %d\n' % (2 + i % 2))
        proxy = opslib.Proxy(ARGS.proxy, d, conf(0), port, admin_port=admin,
                             args=('--log-level', 'warning'))
        try:
            c = opslib.client(port)
            for i in range(40):
                put(c, b't', b'k%03d' % i, b'%d' % i)
            sid = c.scannerOpenWithScan(b't', opslib.T.TScan(caching=5), {})
            rows = [r.row for r in c.scannerGetList(sid, 5)]
            requests = []
            samples = {}
            i = 0
            while True:
                gen = proxy.generation()
                if gen >= self.RELOADS + 1:
                    break
                for _ in range(50):
                    i += 1
                    proxy.write_conf(conf(i))
                    proxy.hup()
                # the scanner opened before them reads on, a row every
                # few batches: its rows come across every generation, and
                # neither it nor its bucket scanners sit idle long enough
                # to expire however slow the machine
                if (i // 50) % 5 == 0:
                    rows += [r.row for r in c.scannerGetList(sid, 1)]
                # requests keep going through the new pools
                self.assertEqual(get(c, b't', b'k%03d' % (i % 40)),
                                 b'%d' % (i % 40))
                m = proxy.metrics()
                requests.append(sum(v for (name, _), v in m.items()
                                    if name == 'hsp_backend_requests_total'))
                if gen >= 1000 and 1000 not in samples:
                    time.sleep(2.5)      # a collection or two
                    samples[1000] = rss_kb(proxy.proc.pid)
            # and after all of them still reads the rest
            while True:
                batch = c.scannerGetList(sid, 7)
                if not batch:
                    break
                rows += [r.row for r in batch]
            self.assertEqual(rows, sorted(b'k%03d' % i for i in range(40)))
            c.scannerClose(sid)
            time.sleep(2.5)
            samples['end'] = rss_kb(proxy.proc.pid)
            self.assertEqual(requests, sorted(requests),
                             'hsp_backend_requests_total went back')
            print('RSS after 1000 reloads %d KiB, after %d: %d KiB'
                  % (samples[1000], proxy.generation() - 1, samples['end']),
                  file=sys.stderr)
            if os.environ.get('HSP_UNDER_ASAN') != '1':
                self.assertLess(samples['end'] - samples[1000], 4096,
                                'RSS grew by %d KiB over %d reloads'
                                % (samples['end'] - samples[1000],
                                   self.RELOADS - 1000))
            c._trans.close()
            self.assertEqual(proxy.stop(), 0)
        finally:
            if proxy.alive():
                proxy.stop()
            emu.close()
            if not os.environ.get('HSP_KEEP_LOGS'):
                shutil.rmtree(d, ignore_errors=True)


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
