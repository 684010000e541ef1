"""The proxy's log as an operator reads it: a failure in a forward-looking
table's legacy range named so (not as a bucket one past the last), and a
frozen server's burst of connection failures folded into one line a
period with a count.  (Timestamps: test_systemd.py's JournalTest.)

  /usr/bin/python3 tests/ops/test_logs.py --proxy BUILD/daemon/hbase-salt-proxy \\
      --emu BUILD/tests/emu/hbase-emu --pydir BUILD/thrift/py [unittest args]
"""

import os
import re
import shutil
import signal
import sys
import tempfile
import threading
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import opslib  # noqa: E402

ARGS = None


def conf(port, emu_port, pool_size=2, timeout_ms=3000, tables=''):
    return ('[proxy]\nlisten = 127.0.0.1:%d\nworkers = 2\n'
            '[backend]\nservers = 127.0.0.1:%d\nconnect_timeout_ms = 500\n'
            'request_timeout_ms = %d\npool_size = %d\n%s'
            % (port, emu_port, timeout_ms, pool_size, tables))


class Tmp(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix='hsp-ops-logs-')
        self.emu = None
        self.proxy = None

    def tearDown(self):
        try:
            if self.emu is not None:
                try:
                    os.kill(self.emu.proc.pid, signal.SIGCONT)
                except OSError:
                    pass
            if self.proxy is not None and self.proxy.alive():
                self.proxy.stop()
        finally:
            if self.emu is not None:
                self.emu.close()
            if not os.environ.get('HSP_KEEP_LOGS'):
                shutil.rmtree(self.dir, ignore_errors=True)


class LegacyRangeTest(Tmp):
    """A scan of a forward-looking table that fails in its legacy range:
    the log line and the client's message say "legacy", not a bucket
    number that no bucket has."""

    def test_legacy_range_failure_named(self):
        self.emu = opslib.Emu(ARGS.emu, self.dir,
                              extra=['--scanner-timeout-ms', '300'])
        port = opslib.free_port()
        # resuming off: an expired backend scanner is reopened otherwise
        # (test_legacy_range_resumed), and this is about the failure's words
        table = ('scan_resume_attempts = 0\n'
                 '[table:t]\nbuckets = 4\nsalt_format = decimal\n'
                 'legacy_range_start = a\nlegacy_range_stop = m\n')
        self.proxy = opslib.Proxy(ARGS.proxy, self.dir,
                                  conf(port, self.emu.port, tables=table),
                                  port)
        # legacy rows, written as they were before salting: unsalted
        direct = opslib.client(self.emu.port)
        for i in range(200):
            opslib.put(direct, b't', b'a%04d' % i, b'v')
        direct._trans.close()
        c = opslib.client(port)
        sid = c.scannerOpenWithScan(b't', opslib.T.TScan(caching=5), {})
        self.assertEqual(len(c.scannerGetList(sid, 1)), 1)
        # the buckets are empty and done; the legacy range's backend
        # scanner expires on the emulator
        time.sleep(1)
        with self.assertRaises(opslib.T.IOError) as cm:
            for _ in range(100):
                if not c.scannerGetList(sid, 5):
                    break
        self.assertIn('legacy (unsalted) range', cm.exception.message)
        line = self.proxy.wait_log(r'scanner \d+ on t failed')
        self.assertIn('failed in its legacy (unsalted) range', line)
        self.assertNotIn('bucket 4', self.proxy.log_text())
        c._trans.close()

    def test_legacy_range_resumed(self):
        """The same expiry with resuming on (the default): the legacy
        range's scanner is opened again after its last row and the scan
        gives every row once, in order."""
        self.emu = opslib.Emu(ARGS.emu, self.dir,
                              extra=['--scanner-timeout-ms', '300'])
        port = opslib.free_port()
        table = ('[table:t]\nbuckets = 4\nsalt_format = decimal\n'
                 'legacy_range_start = a\nlegacy_range_stop = m\n')
        self.proxy = opslib.Proxy(ARGS.proxy, self.dir,
                                  conf(port, self.emu.port, tables=table),
                                  port)
        direct = opslib.client(self.emu.port)
        want = [b'a%04d' % i for i in range(200)]
        for k in want:
            opslib.put(direct, b't', k, b'v')
        direct._trans.close()
        c = opslib.client(port)
        sid = c.scannerOpenWithScan(b't', opslib.T.TScan(caching=5), {})
        got = [r.row for r in c.scannerGetList(sid, 1)]
        time.sleep(1)
        while True:
            rows = c.scannerGetList(sid, 5)
            if not rows:
                break
            got += [r.row for r in rows]
        self.assertEqual(got, want)
        self.proxy.wait_log(r'legacy \(unsalted\) range: resume 1')
        self.assertNotIn('bucket 4', self.proxy.log_text())
        c._trans.close()


class BurstTest(Tmp):
    """A frozen (SIGSTOPped) server with many connections: one line in
    full, then one line a period with the count, not a line per
    connection."""

    def test_frozen_server_lines_folded(self):
        self.emu = opslib.Emu(ARGS.emu, self.dir)
        port = opslib.free_port()
        self.proxy = opslib.Proxy(
            ARGS.proxy, self.dir,
            conf(port, self.emu.port, pool_size=16, timeout_ms=1000),
            port)
        clients = [opslib.client(port, timeout=30) for _ in range(24)]
        for i, c in enumerate(clients):
            # every connection dialled and idle before the freeze
            opslib.put(c, b'plain', b'r%d' % i, b'v')
        os.kill(self.emu.proc.pid, signal.SIGSTOP)
        errors = []

        def call(c):
            try:
                c.getRow(b'plain', b'r', {})
            except opslib.T.IOError as e:
                errors.append(e.message)
        threads = [threading.Thread(target=call, args=(c,)) for c in clients]
        for t in threads:
            t.start()
        for t in threads:
            t.join(30)
        self.assertGreaterEqual(len(errors), 16, errors)
        line = self.proxy.wait_log(r'more connections? in the last 10 s',
                                   timeout=15)
        text = self.proxy.log_text()
        per_conn = [ln for ln in text.splitlines()
                    if re.search(r': conn \d+: ', ln)]
        # one per cause (the timeout; maybe a connect that failed)
        self.assertLessEqual(len(per_conn), 2, text)
        m = re.search(r'backend 127\.0\.0\.1:%d: (\d+) more connections in '
                      r'the last 10 s: timed out after 1000 ms '
                      r'\((\d+) requests? failed\)' % self.emu.port, line)
        self.assertIsNotNone(m, line)
        self.assertGreaterEqual(int(m.group(1)), 8, line)
        for c in clients:
            c._trans.close()


if __name__ == '__main__':
    opslib.run_tests()
