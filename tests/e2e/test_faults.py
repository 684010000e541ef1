"""Faults under load: 16 clients mixing gets, puts and scans through the
proxy while a backend is killed (mid-request and mid-scan), refuses
connections, restarts on its port, stalls (SIGSTOP), has its connections
cut (a relay the test controls); two backends where one dies and comes
back; a read that arrives as the only server returns, before the proxy
has probed it; SIGTERM with a scan open and a slow request in flight; a
client that never reads its replies.

Every affected request must fail within request_timeout_ms (+ slack) with
an IOError naming the backend (canRetry), no client may wait forever (a
client socket timeout fails the test), descriptors and scanners come back
to their baseline, service resumes within a second of the backend coming
back, and no row key reaches the log at the default level.

  /usr/bin/python3 tests/e2e/test_faults.py --proxy BUILD/daemon/hbase-salt-proxy \\
      --emu BUILD/tests/emu/hbase-emu --pydir BUILD/thrift/py [TestClass]
"""

import argparse
import os
import random
import re
import shutil
import signal
import socket
import sys
import tempfile
import threading
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import faultlib as fl  # noqa: E402
import hsptest  # noqa: E402

ARGS = None
REQUEST_TIMEOUT_MS = 1500
SLACK_S = 1.0            # scheduling on a loaded 2-core CI box
SOCKET_TIMEOUT_S = 15.0  # a client waiting this long: the proxy hung
CLIENTS = 16
KEY = b'fk%05d'          # row keys of these tests: never in the log
# Set by .ci/quickstart's sanitizer pass: ASan's quarantine holds freed
# memory back from the allocator, so RSS there measures allocation volume,
# not what is live; the RSS-size checks are skipped under it (everything
# else they sit beside still runs).
UNDER_ASAN = os.environ.get('HSP_UNDER_ASAN') == '1'


class Load(object):
    """CLIENTS threads of gets, puts and short scans; every call timed."""

    def __init__(self, port, seed=1):
        self.port = port
        self.stop_ev = threading.Event()
        self.lock = threading.Lock()
        self.calls = []     # (start, end, kind, error or None, scan_opened)
        self.hangs = []
        self.threads = [threading.Thread(target=self._run, args=(seed + i,))
                        for i in range(CLIENTS)]

    def start(self):
        for t in self.threads:
            t.start()
        return self

    def stop(self):
        self.stop_ev.set()
        for t in self.threads:
            t.join(60)
        assert not any(t.is_alive() for t in self.threads), 'client stuck'

    def _call(self, kind, fn, opened=None):
        t0 = time.time()
        err = None
        try:
            return fn()
        except fl.T.IOError as e:
            err = e
            raise
        finally:
            with self.lock:
                self.calls.append((t0, time.time(), kind, err, opened))

    def _run(self, seed):
        rng = random.Random(seed)
        try:
            c = fl.client(self.port, timeout=SOCKET_TIMEOUT_S)
        except Exception as e:  # noqa: BLE001 - reported by check()
            self.hangs.append(repr(e))
            return
        try:
            while not self.stop_ev.is_set():
                key = KEY % rng.randrange(2000)
                op = rng.random()
                try:
                    if op < 0.4:
                        self._call('put', lambda: c.mutateRow(
                            b't', key, [fl.T.Mutation(column=b'd:a',
                                                      value=b'v' * 100)],
                            {}))
                    elif op < 0.8:
                        self._call('get', lambda: c.getRow(b't', key, {}))
                    else:
                        self._scan(c, key)
                except fl.T.IOError:
                    time.sleep(0.01)
        except Exception as e:  # noqa: BLE001 - timeouts: the test fails
            self.hangs.append(repr(e))
        finally:
            c._trans.close()

    def _scan(self, c, key):
        opened = time.time()
        sid = self._call('scan', lambda: c.scannerOpenWithScan(
            b't', fl.T.TScan(startRow=key, caching=20), {}))
        try:
            for _ in range(3):
                if not self._call('scan', lambda: c.scannerGetList(sid, 20),
                                  opened):
                    break
                time.sleep(0.02)    # a scan stays open across faults
        except fl.T.IOError:
            pass
        finally:
            try:
                self._call('close', lambda: c.scannerClose(sid), opened)
            except (fl.T.IOError, fl.T.IllegalArgument):
                pass

    def failures(self):
        return [x for x in self.calls if x[3] is not None]

    def check(self, tc, names):
        """Every failure an IOError naming a backend, retryable, in time."""
        tc.assertEqual(self.hangs, [], 'clients hit their socket timeout '
                       'or lost their connection')
        limit = REQUEST_TIMEOUT_MS / 1000.0 + SLACK_S
        for t0, t1, kind, err, _ in self.calls:
            tc.assertLess(t1 - t0, limit, '%s took %.2f s (%s)'
                          % (kind, t1 - t0, err and err.message))
            if err is not None:
                tc.assertTrue(any(n in err.message for n in names),
                              err.message)
                tc.assertTrue(err.canRetry, err.message)
        ok = sum(1 for x in self.calls if x[3] is None)
        tc.assertGreater(ok, 100, 'the load did not run')


class _Base(unittest.TestCase):
    SERVERS = 1

    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix='hsp-e2e-faults-')
        self.emus = []
        for i in range(self.SERVERS):
            e = fl.Emu(ARGS.emu, self.dir, 'emu%d' % i)
            e.start()
            self.emus.append(e)
        self.proxy = None

    def tearDown(self):
        try:
            if self.proxy is not None and self.proxy.alive():
                self.assertEqual(self.proxy.stop(), 0)
            if self.proxy is not None:
                # nothing from row keys at the default log level
                log = self.proxy.log_text()
                self.assertNotIn('fk0', log)
                self.assertNotIn('debug:', log)
        finally:
            for e in self.emus:
                e.close()
            if not os.environ.get('HSP_KEEP_LOGS'):
                shutil.rmtree(self.dir, ignore_errors=True)

    def start_proxy(self, ports, **kw):
        self.proxy = fl.Proxy(ARGS.proxy, self.dir, ports,
                              request_timeout_ms=REQUEST_TIMEOUT_MS, **kw)
        fl.wait_for(lambda: self.proxy.http('/healthz')[0] == 200, 10,
                    'healthz')

    def baseline(self):
        """Warm every pool, then the descriptor count without clients."""
        load = Load(self.proxy.port, seed=1000).start()
        time.sleep(0.5)
        load.stop()
        fl.wait_for(lambda: self.proxy.metric('hsp_client_connections') == 0,
                    5, 'clients gone')
        return self.proxy.settled_fds()

    def resumed_within(self, seconds):
        """Requests succeed again, and how soon."""
        c = fl.client(self.proxy.port, timeout=SOCKET_TIMEOUT_S)
        t0 = time.time()
        try:
            while True:
                try:
                    c.getRow(b't', KEY % 1, {})
                    took = time.time() - t0
                    self.assertLess(took, seconds, 'service resumed after '
                                    '%.2f s' % took)
                    return took
                except fl.T.IOError:
                    if time.time() - t0 > seconds + 5:
                        raise
                    time.sleep(0.01)
        finally:
            c._trans.close()

    def settled(self, fds):
        fl.wait_for(lambda: self.proxy.metric('hsp_client_connections') == 0,
                    5, 'clients gone')
        fl.wait_for(lambda: self.proxy.metric('hsp_scanners_open') == 0, 5,
                    'scanners closed (hsp_scanners_open 0)')
        try:
            fl.wait_for(lambda: self.proxy.settled_fds() == fds, 5,
                        'descriptors back to the baseline')
        except AssertionError:
            self.fail('fd leak: %d descriptors besides connections, %d '
                      'before' % (self.proxy.settled_fds(), fds))
        # every request and connection went along the arrows of its
        # states (a release build counts a broken one; this one stops)
        self.assertEqual(self.proxy.metric('hsp_invariant_errors_total'), 0)


class SingleBackendTest(_Base):
    """One backend: killed mid-request and mid-scan, refusing connections,
    restarted on its port, stalled; 16 clients throughout."""

    def test_faults_under_load(self):
        emu = self.emus[0]
        self.start_proxy([emu.port])
        name = '127.0.0.1:%d' % emu.port
        fds = self.baseline()
        load = Load(self.proxy.port).start()
        try:
            time.sleep(1.0)
            # killed mid-request and mid-scan; nothing listens: refused
            emu.kill()
            time.sleep(1.0)
            fl.wait_for(lambda: self.proxy.metric('hsp_backend_up',
                                                  emu.port) == 0, 3,
                        'backend marked down')
            self.assertEqual(self.proxy.http('/healthz')[0], 503)
            # while it is down, requests fail fast: an admin call at once,
            # a read once the next probe (every 250 ms, started within
            # 50 ms of its time, polled every 50 ms: ~350 ms at most)
            # finds it still down, not after its whole wait for a server
            # (1 s)
            c = fl.client(self.proxy.port)
            t0 = time.time()
            with self.assertRaises(fl.T.IOError) as cm:
                c.getTableNames()
            self.assertLess(time.time() - t0, 0.2)
            self.assertIn(name + ': down: ', cm.exception.message)
            t0 = time.time()
            with self.assertRaises(fl.T.IOError) as cm:
                c.getRow(b't', KEY % 2, {})
            self.assertLess(time.time() - t0, 0.9)
            self.assertIn(name + ': down: ', cm.exception.message)
            self.assertTrue(cm.exception.canRetry)
            c._trans.close()
            # restarted on the same port
            emu.start()
            self.resumed_within(1.0)
            fl.wait_for(lambda: self.proxy.metric('hsp_backend_up',
                                                  emu.port) == 1, 2,
                        'backend up again')
            time.sleep(1.0)
            # stalled: requests time out, then fail fast while DOWN
            emu.stop_signal(signal.SIGSTOP)
            time.sleep(REQUEST_TIMEOUT_MS / 1000.0 * 2)
            emu.stop_signal(signal.SIGCONT)
            self.resumed_within(1.0)
            time.sleep(1.0)
        finally:
            load.stop()
        load.check(self, [name])
        self.assertGreater(len(load.failures()), 0, 'no fault was seen')
        kinds = set(x[2] for x in load.failures())
        self.assertIn('scan', kinds)
        # the stall shows as a timeout: the head request's own ("timed out
        # after N ms", unless the head was a scan prefetch nobody waits
        # for) or, for those queued behind it, "after an earlier request
        # timed out"
        self.assertTrue(any(re.search(r'timed out after %d ms|after an '
                                      r'earlier request timed out'
                                      % REQUEST_TIMEOUT_MS, x[3].message)
                            for x in load.failures()),
                        'no timeout among: %s' % sorted(set(
                            x[3].message for x in load.failures())))
        self.settled(fds)
        self.assertIn('down after', self.proxy.log_text())
        self.assertIn('up again after', self.proxy.log_text())


class RelayTest(_Base):
    """The backend's connections cut under the proxy: idle ones (what
    HBase does after 60 s) and busy ones, through a relay."""

    def test_connections_cut(self):
        emu = self.emus[0]
        relay = fl.Relay(emu.port)
        try:
            self.start_proxy([relay.port])
            name = '127.0.0.1:%d' % relay.port
            fds = self.baseline()
            # idle connections dropped: the next requests do not notice
            c = fl.client(self.proxy.port)
            for i in range(20):
                c.mutateRow(b't', KEY % i, [fl.T.Mutation(
                    column=b'd:a', value=b'x')], {})
            self.assertGreater(relay.cut(), 0)
            time.sleep(0.05)
            for i in range(50):
                self.assertTrue(c.getRow(b't', KEY % (i % 20), {}))
            c._trans.close()
            # busy ones, over and over, under load
            load = Load(self.proxy.port).start()
            try:
                for _ in range(8):
                    time.sleep(0.3)
                    relay.cut()
                time.sleep(0.3)
                self.resumed_within(1.0)
            finally:
                load.stop()
            load.check(self, [name])
            self.settled(fds)
        finally:
            relay.close()


class TwoBackendsTest(_Base):
    """Two backends: one dies, traffic goes on on the other with at most
    the requests in flight failing; it comes back and is used again."""
    SERVERS = 2

    def test_one_dies_and_returns(self):
        a, b = self.emus
        self.start_proxy([a.port, b.port])
        fds = self.baseline()
        load = Load(self.proxy.port).start()
        try:
            time.sleep(1.0)
            t_kill = time.time()
            a.kill()
            fl.wait_for(lambda: self.proxy.metric('hsp_backend_up',
                                                  a.port) == 0, 3,
                        'killed backend marked down')
            time.sleep(1.5)
            before = self.proxy.metric('hsp_backend_requests_total', a.port)
            a.start()
            t_back = time.time()
            fl.wait_for(lambda: self.proxy.metric('hsp_backend_up',
                                                  a.port) == 1, 1.0,
                        'backend up within a second')
            fl.wait_for(lambda: self.proxy.metric(
                'hsp_backend_requests_total', a.port) > before + 10,
                1.0, 'returned backend used again')
            self.assertLess(time.time() - t_back, 1.5)
            time.sleep(1.0)
        finally:
            load.stop()
        load.check(self, ['127.0.0.1:%d' % a.port])
        for t0, t1, kind, err, opened in load.failures():
            # in flight at the kill: a call started before it, or a call
            # on a scanner opened before it (pinned to the dead server)
            started = opened if opened is not None else t0
            self.assertLess(started, t_kill + 0.1,
                            '%s started %.3f s after the kill failed: %s'
                            % (kind, started - t_kill, err.message))
        self.assertLessEqual(
            len([x for x in load.failures() if x[2] != 'close']),
            2 * CLIENTS)
        late = [x for x in load.calls if x[0] > t_kill + 0.5]
        self.assertGreater(len(late), 100)
        self.settled(fds)


class BackFromDownTest(_Base):
    """A read that arrives the moment the only server is back, before the
    proxy's next probe has seen it: it waits for the probe (at most 250 ms
    later) and is answered, rather than failing with "down" while the
    server answers.  Several rounds: a probe that happens to land between
    the return and the read would hide the case once."""

    def mark_down(self, port):
        """Calls that fail at once (admin calls do not wait) until the
        proxy has counted the failures that make the server DOWN: sooner
        than the probe of an idle server would (every 5 s)."""
        c = fl.client(self.proxy.port, timeout=SOCKET_TIMEOUT_S)
        try:
            deadline = time.time() + 10
            while self.proxy.metric('hsp_backend_up', port) != 0:
                self.assertLess(time.time(), deadline, 'never marked down')
                try:
                    c.getTableNames()
                except fl.T.IOError:
                    pass
                time.sleep(0.05)
        finally:
            c._trans.close()

    def test_read_as_the_server_returns(self):
        emu = self.emus[0]
        relay = hsptest.Relay(emu.port)
        try:
            self.start_proxy([relay.port])
            c = fl.client(self.proxy.port, timeout=SOCKET_TIMEOUT_S)
            c.mutateRow(b't', KEY % 7, [fl.T.Mutation(
                column=b'd:a', value=b'back')], {})
            for round_ in range(4):
                relay.down()
                self.mark_down(relay.port)
                relay.up()
                t0 = time.time()
                failed = None
                try:
                    rows = c.getRow(b't', KEY % 7, {})
                except fl.T.IOError as e:
                    failed = e.message
                took = time.time() - t0
                self.assertIsNone(failed, 'round %d: the read failed '
                                  'although the server was back'
                                  % round_)
                self.assertEqual(rows[0].columns[b'd:a'].value, b'back')
                # answered by the first probe, not by a client's retry
                self.assertLess(took, REQUEST_TIMEOUT_MS / 1000.0 + SLACK_S)
                fl.wait_for(lambda: self.proxy.metric(
                    'hsp_backend_up', relay.port) == 1, 5,
                    'the server up again')
            c._trans.close()
            # with the server down for good a read still fails, naming it
            relay.down()
            self.mark_down(relay.port)
            c = fl.client(self.proxy.port, timeout=SOCKET_TIMEOUT_S)
            t0 = time.time()
            with self.assertRaises(fl.T.IOError) as cm:
                c.getRow(b't', KEY % 7, {})
            took = time.time() - t0
            c._trans.close()
            self.assertIn('127.0.0.1:%d: down' % relay.port,
                          cm.exception.message)
            self.assertTrue(cm.exception.canRetry)
            # once the next probe (every 250 ms, started within 50 ms of
            # its time, polled every 50 ms: ~350 ms at most) finds it
            # down, not after its whole wait for a server (1 s)
            self.assertLess(took, 0.9)
        finally:
            relay.close()


class ShutdownTest(_Base):
    """SIGTERM with a scan open and a slow request in flight: the request
    is answered, the backend scanners are closed, exit code 0."""

    def setUp(self):
        super().setUp()
        # a slow backend: every call takes 200 ms
        self.emus[0].kill()
        self.emus[0].extra = ['--rpc-latency-us', '200000']
        self.emus[0].start()

    def test_sigterm(self):
        emu = self.emus[0]
        self.proxy = fl.Proxy(ARGS.proxy, self.dir, [emu.port],
                              request_timeout_ms=5000)
        c = fl.client(self.proxy.port, timeout=SOCKET_TIMEOUT_S)
        c.mutateRows(b't', [fl.T.BatchMutation(
            row=KEY % i, mutations=[fl.T.Mutation(column=b'd:a', value=b'v')])
            for i in range(100)], {})
        sid = c.scannerOpenWithScan(b't', fl.T.TScan(caching=2), {})
        self.assertEqual(len(c.scannerGetList(sid, 3)), 3)
        self.assertEqual(self.proxy.metric('hsp_scanners_open'), 1)
        # a slow request in flight at SIGTERM
        d = fl.client(self.proxy.port, timeout=SOCKET_TIMEOUT_S)
        got = []
        th = threading.Thread(target=lambda: got.append(
            d.getRow(b't', KEY % 7, {})))
        th.start()
        time.sleep(0.05)
        t0 = time.time()
        self.proxy.proc.send_signal(signal.SIGTERM)
        th.join(10)
        self.assertEqual(len(got), 1, 'the request in flight was answered')
        self.assertEqual(got[0][0].row, KEY % 7)
        self.assertEqual(self.proxy.wait(15), 0)
        self.assertLess(time.time() - t0, 10)
        c._trans.close()
        d._trans.close()
        self.assertFalse(fl.can_connect(self.proxy.port))
        # the emulator's scanner ids count from 0: every one the proxy
        # opened must be closed now
        e = fl.client(emu.port, timeout=SOCKET_TIMEOUT_S)
        last = e.scannerOpen(b't', b'', [], {})
        self.assertGreaterEqual(last, fl.BUCKETS)
        for i in range(last):
            with self.assertRaises(fl.T.IllegalArgument):
                e.scannerGet(i)
        e._trans.close()
        self.assertIn('stopped', self.proxy.log_text())


class BackPressureTest(_Base):
    """A client that pipelines requests for big replies and never reads
    them: the proxy stops reading it, its memory stays bounded, other
    clients are served."""

    def test_unread_replies(self):
        emu = self.emus[0]
        self.start_proxy([emu.port])
        c = fl.client(self.proxy.port)
        big = b'x' * (256 * 1024)
        for i in range(4):
            c.mutateRow(b't', KEY % i, [fl.T.Mutation(column=b'd:a',
                                                      value=big)], {})
        rss0 = self.proxy.rss_kb()
        # 4000 requests whose replies total 1 GB, and scanner reads
        sids = [c.scannerOpenWithScan(b't', fl.T.TScan(caching=4), {})
                for _ in range(8)]
        from thrift.transport import TTransport
        from thrift.protocol import TBinaryProtocol
        from thrift.Thrift import TMessageType
        buf = TTransport.TMemoryBuffer()
        p = TBinaryProtocol.TBinaryProtocol(buf)
        for i in range(4000):
            if i % 10 == 0:
                name, args = 'scannerGetList', fl.Hbase.scannerGetList_args(
                    id=sids[(i // 10) % 8], nbRows=4)
            else:
                name, args = 'getRow', fl.Hbase.getRow_args(
                    tableName=b't', row=KEY % (i % 4), attributes={})
            p.writeMessageBegin(name, TMessageType.CALL, i)
            args.write(p)
            p.writeMessageEnd()
        s = socket.create_connection(('127.0.0.1', self.proxy.port))
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 64 * 1024)
        s.setblocking(False)
        data = buf.getvalue()
        sent = 0
        end = time.time() + 3
        while time.time() < end and sent < len(data):
            try:
                sent += s.send(data[sent:sent + 65536])
            except BlockingIOError:
                time.sleep(0.01)
        time.sleep(1.0)
        peak = self.proxy.rss_kb()
        answered = self.proxy.metrics().get(
            'hsp_requests_total{method="getRow"}', 0)
        # others are served meanwhile
        self.assertEqual(len(c.getRow(b't', KEY % 1, {})), 1)
        print('RSS %d KiB -> %d KiB, %d getRow answered' % (
            rss0, peak, answered), file=sys.stderr)
        if not UNDER_ASAN:
            self.assertLess(peak - rss0, 64 * 1024,
                            'RSS grew by %d KiB for a client that does not '
                            'read' % (peak - rss0))
        self.assertLess(answered, 3000, 'the proxy answered every request')
        s.close()
        for sid in sids:
            c.scannerClose(sid)
        c._trans.close()
        fl.wait_for(lambda: self.proxy.metric('hsp_client_connections') == 0,
                    5, 'the non-reading client closed')


def main():
    global ARGS
    ap = argparse.ArgumentParser()
    ap.add_argument('--proxy', required=True)
    ap.add_argument('--emu', required=True)
    ap.add_argument('--pydir', required=True)
    ARGS, rest = ap.parse_known_args()
    hsptest.import_thrift(ARGS.pydir, fl)
    unittest.main(argv=[sys.argv[0]] + rest, verbosity=2)


if __name__ == '__main__':
    main()
