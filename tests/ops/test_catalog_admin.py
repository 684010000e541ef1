"""The admin endpoint stays prompt while the table catalog's server hangs
(issue 22, item 1b).

The catalog's checks are blocking Thrift calls to the [backend] servers
(catalog.c): every recheck_ms a scan of the catalog for tables the file
has no section for, and at each reload the new file's tables.  They used
to run on the main loop, which also serves /metrics and /healthz: a
server that accepts the catalog's connection and never answers held both
endpoints for request_timeout_ms at a time, again and again.

Here the catalog's server is a relay in front of hbase-emu that passes
everything (so the backend stays UP: its health probe is getTableNames)
but, once told to, swallows every connection that opens with the
catalog's first call (getThriftServerType) and never answers it.  While
it does, and across a SIGHUP whose catalog check hangs the same way,
each of /metrics and /healthz is asked 100 times over 3.5 s: each answers
within 10 ms (the slowest tenth left out: see KEPT).  The reload is then applied (from the state file: HBase did not
answer), and SIGTERM stops the proxy cleanly, a hung check under way.

  /usr/bin/python3 tests/ops/test_catalog_admin.py \\
      --proxy BUILD/daemon/hbase-salt-proxy --emu BUILD/tests/emu/hbase-emu \\
      --pydir BUILD/thrift/py
"""

import argparse
import http.client
import os
import shutil
import signal
import socket
import sys
import tempfile
import threading
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                '..', 'lib'))
import hsptest  # noqa: E402
from hsptest import free_port, wait_for  # noqa: E402

ARGS = None
# a hung call holds the catalog's thread (on main: the admin loop) this long
REQUEST_TIMEOUT_MS = 2000
RECHECK_MS = 100
# asks of each endpoint, PAUSE_S apart: 3.5 s, longer than one hung call,
# so they span the periodic check's and the reload's
ASKS = 100
PAUSE_S = 0.035
# the bound for one answer
LIMIT_S = 0.010
# a shared 2-core machine (other builds and tests run beside this one)
# deschedules this client now and then for longer than the bound on its
# own: the slowest tenth of the answers is left out.  A loop blocked by
# the catalog is slow on nearly every ask (request_timeout_ms, again
# every recheck_ms), so that cannot hide it.
KEPT = 90
# an answer this late is the loop blocked, whatever the machine's load:
# no use waiting for the other asks (each as late)
BLOCKED_S = 0.5


class CatalogRelay(object):
    """127.0.0.1:port -> 127.0.0.1:upstream, byte for byte; with .stall
    set, a connection whose first bytes carry getThriftServerType (the
    catalog's first call, catalog_connect) is read and never answered."""

    def __init__(self, upstream):
        self.upstream = upstream
        self.stall = False
        self.stalled = 0
        self.sock = socket.socket()
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(('127.0.0.1', 0))
        self.sock.listen(64)
        self.port = self.sock.getsockname()[1]
        self.closing = False
        self.conns = []
        threading.Thread(target=self.accept_loop, daemon=True).start()

    def accept_loop(self):
        while not self.closing:
            try:
                c, _ = self.sock.accept()
            except OSError:
                return
            self.conns.append(c)
            threading.Thread(target=self.serve, args=(c,),
                             daemon=True).start()

    @staticmethod
    def pipe(src, dst):
        try:
            while True:
                data = src.recv(65536)
                if not data:
                    break
                dst.sendall(data)
        except OSError:
            pass
        for s in (src, dst):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def serve(self, c):
        try:
            first = c.recv(65536)
        except OSError:
            c.close()
            return
        if not first:
            c.close()
            return
        if self.stall and b'getThriftServerType' in first:
            # a black hole: what comes is read, nothing goes back
            self.stalled += 1
            try:
                while c.recv(65536):
                    pass
            except OSError:
                pass
            c.close()
            return
        try:
            u = socket.create_connection(('127.0.0.1', self.upstream))
        except OSError:
            c.close()
            return
        self.conns.append(u)
        u.sendall(first)
        threading.Thread(target=self.pipe, args=(u, c), daemon=True).start()
        self.pipe(c, u)

    def close(self):
        self.closing = True
        self.sock.close()
        for c in self.conns:
            try:
                c.close()
            except OSError:
                pass


def ask(port, path):
    """Seconds one GET of path takes on a fresh connection, and the
    status."""
    t0 = time.monotonic()
    conn = http.client.HTTPConnection('127.0.0.1', port, timeout=30)
    conn.request('GET', path)
    r = conn.getresponse()
    r.read()
    took = time.monotonic() - t0
    conn.close()
    return took, r.status


class CatalogAdminTest(unittest.TestCase):
    def setUp(self):
        self.workdir = tempfile.mkdtemp(prefix='hsp-catalog-admin-')
        self.emu = hsptest.start_backend('emu', self.workdir, emu=ARGS.emu,
                                         tables={'events': ['f']})
        self.relay = CatalogRelay(self.emu.port)
        self.port = free_port()
        self.admin = free_port()
        self.proxy = hsptest.Proxy(
            ARGS.proxy, self.workdir,
            '[proxy]\nlisten = 127.0.0.1:%d\nworkers = 1\n'
            '[admin]\nlisten = 127.0.0.1:%d\n'
            '[catalog]\nstate_dir = %s\nrecheck_ms = %d\n'
            '[backend]\nservers = 127.0.0.1:%d\nconnect_timeout_ms = 300\n'
            'request_timeout_ms = %d\npool_size = 4\n'
            '[table:events]\nbuckets = 4\n'
            % (self.port, self.admin, os.path.join(self.workdir, 'state'),
               RECHECK_MS, self.relay.port, REQUEST_TIMEOUT_MS),
            [self.port, self.admin])
        self.ok = False

    def tearDown(self):
        self.proxy.close()
        self.relay.close()
        self.emu.close()
        if self.ok and not os.environ.get('HSP_KEEP_LOGS'):
            shutil.rmtree(self.workdir, ignore_errors=True)
        else:
            sys.stderr.write('logs kept in %s\n' % self.workdir)

    def test_admin_answers_while_catalog_hangs(self):
        wait_for(lambda: 'salted table checked against'
                 in self.proxy.log_text(), 30, 'the catalog check at start')
        self.relay.stall = True
        # a check hangs now (the periodic orphan scan)
        wait_for(lambda: self.relay.stalled >= 1, 10,
                 'a catalog call to hang')
        # and a reload's check queues behind it, hanging too
        self.proxy.proc.send_signal(signal.SIGHUP)
        took = {'/metrics': [], '/healthz': []}
        for _ in range(ASKS):
            for path in took:
                t, status = ask(self.admin, path)
                self.assertIn(status, (200, 503), path)
                self.assertLess(t, BLOCKED_S,
                                '%s took %.0f ms: the admin loop waits on '
                                'the catalog' % (path, t * 1000))
                took[path].append(t)
            time.sleep(PAUSE_S)
        # the catalog was hanging throughout, not once at the start
        self.assertGreaterEqual(self.relay.stalled, 2,
                                'the reload\'s catalog check hung too')
        for path, times in took.items():
            kept = sorted(times)[:KEPT]
            self.assertLess(
                kept[-1], LIMIT_S,
                '%s: the best %d of %d answers took up to %.1f ms (all: '
                '%s ms): the admin loop waits on the catalog'
                % (path, KEPT, ASKS, kept[-1] * 1000,
                   ', '.join('%.1f' % (t * 1000) for t in times)))
        # the reload goes on without HBase's word: served from the state
        # file, as at a start while HBase is down
        wait_for(lambda: 'applied configuration generation 2'
                 in self.proxy.log_text(),
                 4 * REQUEST_TIMEOUT_MS / 1000 + 10, 'the reload applied')
        # stopping with a hung check under way: it is waited for (its
        # timeout bounds it), then everything is freed
        t0 = time.monotonic()
        self.proxy.proc.send_signal(signal.SIGTERM)
        rc = self.proxy.proc.wait(30)
        self.assertEqual(rc, 0, self.proxy.log_text())
        self.assertLess(time.monotonic() - t0,
                        2 * REQUEST_TIMEOUT_MS / 1000 + 5)
        self.assertIn('stopped', self.proxy.log_text())
        self.ok = True


def main():
    global ARGS
    parser = argparse.ArgumentParser()
    parser.add_argument('--proxy', required=True)
    parser.add_argument('--emu', required=True)
    parser.add_argument('--pydir', required=True)
    ARGS, rest = parser.parse_known_args()
    unittest.main(argv=[sys.argv[0]] + rest, verbosity=2)


if __name__ == '__main__':
    main()
