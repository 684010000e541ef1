#!/usr/bin/python3
"""run_faults.py: the fault suite.  Clients of every kind (synchronous and
pipelined, Thrift1 and Thrift2; point reads, multi-row reads, writes and
scans) run through the proxy for HSP_FAULT_SECONDS (default 60) while the
backend servers are killed and restarted, stalled, have their connections
reset, and the proxy reloads; then every invariant is checked against a
model of what was acknowledged.

  /usr/bin/python3 tests/faults/run_faults.py --proxy BUILD/daemon/hbase-salt-proxy \\
      --emu BUILD/tests/emu/hbase-emu --pydir BUILD/thrift/py [--seconds N] \\
      [--no-strict-reads] [--seed N] [--backend-kind real]

The backend: one hbase-emu store served by two Thrift1 and two Thrift2
servers (its listeners), each behind a relay (hsptest.Relay) the proxy
connects through; with --backend-kind real, real HBase's own servers
(tests/hbase/hbase-mini, two of each, the same stop/start commands, a 3 s
call timeout).  Faults:
  kill    a server's listener stops (its connections reset, its scanners
          lost, new connections refused), then starts again 0.5-3 s later;
          at most one server per service at a time, so the store and the
          other server live on (a SIGKILL would lose the in-memory store)
  stall   a relay stops forwarding for 0.2-1.7 x the call timeout (the
          proxy's request_timeout_ms, 1.5 s), or the whole emulator is
          SIGSTOPped for 0.2-0.8 s (a store SIGSTOP does not lose)
  reset   one or all of a relay's connections get an RST
  reload  SIGHUP to the proxy (the same file: a new generation)

Invariants (the test fails on any):
  lost writes    0: a write acknowledged to the client is in the store at
                 the end (read through the proxy and straight from the
                 emulator) and no read after its acknowledgement sees an
                 older version.  Writes carry increasing timestamps, so a
                 failed write that lands late cannot mask a later one.
  wrong reads    0: every answered read is a value that was written to
                 that key (a failed write may or may not have landed), at
                 least the last one acknowledged before the read was sent
                 (for pipelined calls: before it in the pipeline too).
  bad scans      0: a scan that ends normally returned exactly the rows of
                 its range, in order, none repeated; a failed scan must
                 fail with an exception (counted, allowed for now), and
                 the rows before the failure must be right.
  hangs          0: no call waits past the client's socket timeout.
  log            0 critical or error lines in the proxy's log (GLib
                 criticals are bugs) or the backend's.
  fds, memory    flat: the proxy's descriptors other than client and
                 backend connections at the end at most 2 more than after
                 warm-up; its RSS at the end at most 25 % + 8 MiB above
                 the warm-up figure (skipped under ASan).
An invariant by default with the emulator (--no-strict-reads or
HSP_FAULT_STRICT_READS=0 only counts them; on real HBase only counted
unless --strict-reads or HSP_FAULT_STRICT_READS=1):
  reads failed while healthy: point reads that failed although a server
                 of their service had no kill or stall from the call's
                 start to start + the call timeout.  A pipelined read
                 sent after a write of its batch that failed is counted
                 apart: the proxy keeps a connection's calls in order on
                 one server (a read sees the writes sent before it), so
                 such a read shares the write's server and fate.

The last line printed is the summary: calls, kills, stalls, resets,
reloads, resumes (hsp_scan_resumes_total), failures by kind.
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
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, '..', 'lib'))
import hsptest  # noqa: E402

TH = None
TABLE = b't'
BUCKETS = 8
SOCKET_TIMEOUT_S = 15.0     # a call this long: the proxy hung
STATIC_ROWS = 400           # immutable rows every scan and static read uses
OWN_KEYS = 60               # keys each writing client owns
UNDER_ASAN = os.environ.get('HSP_UNDER_ASAN') == '1'


def static_key(i):
    return b's%05d' % i


def static_value(i):
    return b'static-%d' % i


def own_value(key, ts):
    return key + b'@%d' % ts


# ---- the model -------------------------------------------------------------

class KeyModel(object):
    """One key, written by one client only: every timestamp attempted, and
    the highest acknowledged."""
    __slots__ = ('acked', 'attempted')

    def __init__(self):
        self.acked = 0
        self.attempted = set()


class Stats(object):
    def __init__(self):
        self.lock = threading.Lock()
        self.calls = {'read': 0, 'write': 0, 'scan': 0}
        self.failures = {}          # kind -> count
        self.by_op = {}             # (op, service, kind) -> count
        self.examples = {}          # (op, kind) -> a few messages
        self.violations = []        # (kind, text)
        self.failed_reads = []      # (service, t0, t1, message) of failed
                                    # point reads
        self.reads_behind_failed_write = 0  # pipelined, not in the above
        self.scans_ok = 0
        self.scans_failed = 0

    def call(self, what, n=1):
        with self.lock:
            self.calls[what] += n

    def fail(self, kind, op=None, service=None, e=None):
        with self.lock:
            self.failures[kind] = self.failures.get(kind, 0) + 1
            if op is not None:
                k = (op, service, kind)
                self.by_op[k] = self.by_op.get(k, 0) + 1
                ex = self.examples.setdefault((op, kind), [])
                text = str(getattr(e, 'message', None) or e).split('\n')[0]
                shape = re.sub(r'[0-9]+', 'N', text)
                if len(ex) < 3 and shape not in [
                        re.sub(r'[0-9]+', 'N', x) for x in ex]:
                    ex.append(text[:200])

    def violate(self, kind, text):
        with self.lock:
            self.violations.append((kind, text))
        sys.stderr.write('VIOLATION %s: %s\n' % (kind, text))


def failure_kind(e):
    """What a failed call died of."""
    if isinstance(e, (TH.T.IOError, TH.T2.TIOError)):
        return 'ioerror'
    if isinstance(e, (TH.T.IllegalArgument, TH.T2.TIllegalArgument)):
        return 'illegal_argument'
    if isinstance(e, TH.TApplicationException):
        return 'tapplication'
    if isinstance(e, socket.timeout) or 'timed out' in str(e):
        return 'hang'
    if isinstance(e, (TH.TTransport.TTransportException, OSError, EOFError)):
        return 'transport'
    return 'other:' + type(e).__name__


# ---- clients -----------------------------------------------------------------

class Client(threading.Thread):
    """One client connection (reconnected after a transport failure)
    running a mix of calls until stop is set."""

    def __init__(self, run, name, service, seed, wire=('binary', 'buffered')):
        threading.Thread.__init__(self, name=name, daemon=True)
        self.run_ = run
        self.service = service
        self.wire = wire        # protocol and transport
        self.rng = random.Random(seed)
        self.conn = None
        self.keys = [b'%s-%03d' % (name.encode(), i) for i in range(OWN_KEYS)]
        for k in self.keys:
            run.model[k] = KeyModel()
        self.ts = 0
        self.error = None

    # connections
    def connect(self):
        port = self.run_.proxy_port if self.service == 1 else \
            self.run_.proxy_port2
        if self.service == 1:
            self.conn = TH.client1(port, *self.wire, timeout=SOCKET_TIMEOUT_S)
        else:
            self.conn = TH.client2(port, *self.wire, timeout=SOCKET_TIMEOUT_S)

    def drop(self):
        if self.conn is not None:
            try:
                self.conn.transport.close()
            except Exception:  # noqa: BLE001
                pass
        self.conn = None

    def run(self):
        try:
            while not self.run_.stop.is_set():
                if self.conn is None:
                    try:
                        self.connect()
                    except Exception:  # noqa: BLE001
                        self.run_.stats.fail('connect')
                        time.sleep(0.2)
                        continue
                self.step()
                # the machine is shared: a few thousand calls a second in
                # all is load enough to land faults inside calls
                time.sleep(self.run_.args.pace_ms / 1000.0)
        except Exception as e:  # noqa: BLE001 - reported as a violation
            import traceback
            self.error = traceback.format_exc()
            self.run_.stats.violate('client_crash', '%s: %r' % (self.name, e))
        finally:
            self.drop()

    def failed(self, e, what, t0, behind_write=False):
        kind = failure_kind(e)
        self.run_.stats.fail(kind, what, self.service, e)
        if kind == 'hang':
            self.run_.stats.violate('hang', '%s %s waited %.1f s' % (
                self.name, what, time.time() - t0))
        if what == 'read' and behind_write:
            # sent after a write of its pipeline that failed: the proxy
            # keeps a connection's calls in order on one server (the read
            # must see the write), so the read shares the write's fate
            with self.run_.stats.lock:
                self.run_.stats.reads_behind_failed_write += 1
        elif what == 'read':
            with self.run_.stats.lock:
                self.run_.stats.failed_reads.append(
                    (self.service, t0, time.time(), str(e)[:160]))
        if kind in ('transport', 'hang') or kind.startswith('other'):
            self.drop()
            time.sleep(0.05)
        return kind

    # checks
    def check_own(self, key, got, min_ts, where):
        """got: None (no row) or (value, ts) read from key."""
        m = self.run_.model[key]
        if got is None:
            if min_ts > 0:
                self.run_.stats.violate('wrong_read', '%s: %r read empty, '
                                        'acknowledged ts %d' % (where, key,
                                                                min_ts))
            return
        value, ts = got
        if ts < min_ts:
            self.run_.stats.violate('lost_write', '%s: %r read ts %d < '
                                    'acknowledged %d' % (where, key, ts,
                                                         min_ts))
        if ts not in m.attempted or value != own_value(key, ts):
            self.run_.stats.violate('wrong_read', '%s: %r read %r at ts %d, '
                                    'never written' % (where, key, value, ts))

    def check_static(self, i, got, where):
        if got != static_value(i):
            self.run_.stats.violate('wrong_read', '%s: %r read %r' % (
                where, static_key(i), got))

    def next_ts(self):
        self.ts += 1
        return self.ts

    # Thrift1 / Thrift2 calls, each answering (value, ts) or None
    def t1_cell(self, rows):
        if not rows:
            return None
        c = rows[0].columns.get(b'f:q')
        return (c.value, c.timestamp) if c is not None else None

    def t2_cell(self, r):
        if not r.columnValues:
            return None
        cv = r.columnValues[0]
        return (cv.value, cv.timestamp)

    def put(self, key, ts):
        if self.service == 1:
            self.conn.mutateRowTs(TABLE, key, [TH.T.Mutation(
                column=b'f:q', value=own_value(key, ts))], ts, {})
        else:
            self.conn.put(TABLE, TH.T2.TPut(row=key, columnValues=[
                TH.T2.TColumnValue(family=b'f', qualifier=b'q',
                                   value=own_value(key, ts))], timestamp=ts))

    def get(self, key):
        if self.service == 1:
            return self.t1_cell(self.conn.getRow(TABLE, key, {}))
        return self.t2_cell(self.conn.get(TABLE, TH.T2.TGet(row=key)))

    def get_many(self, keys):
        if self.service == 1:
            rows = self.conn.getRows(TABLE, keys, {})
            by = {r.row: self.t1_cell([r]) for r in rows}
            return [by.get(k) for k in keys]
        rs = self.conn.getMultiple(TABLE, [TH.T2.TGet(row=k) for k in keys])
        if len(rs) != len(keys):
            raise AssertionError('getMultiple answered %d of %d'
                                 % (len(rs), len(keys)))
        return [self.t2_cell(r) for r in rs]

    # one step of the mix
    def step(self):
        op = self.rng.random()
        t0 = time.time()
        try:
            if op < 0.35:
                self.write_one(t0)
            elif op < 0.55 and self.service == 2 and self.rng.random() < 0.2:
                key = self.rng.choice(self.keys)
                m = self.run_.model[key]
                min_ts, tried = m.acked, bool(m.attempted)
                self.run_.stats.call('read')
                found = self.conn.exists(TABLE, TH.T2.TGet(row=key))
                if found != (min_ts > 0) and (found is not True or not tried):
                    self.run_.stats.violate('wrong_read', '%s exists %r: %r, '
                                            'acknowledged ts %d' % (
                                                self.name, key, found,
                                                min_ts))
            elif op < 0.55:
                key = self.rng.choice(self.keys)
                min_ts = self.run_.model[key].acked
                self.run_.stats.call('read')
                self.check_own(key, self.get(key), min_ts, self.name + ' get')
            elif op < 0.65:
                keys = self.rng.sample(self.keys, 4)
                mins = [self.run_.model[k].acked for k in keys]
                self.run_.stats.call('read')
                for k, m, got in zip(keys, mins, self.get_many(keys)):
                    self.check_own(k, got, m, self.name + ' multi')
            elif op < 0.85:
                idx = self.rng.sample(range(STATIC_ROWS), 3)
                self.run_.stats.call('read')
                got = self.get_many([static_key(i) for i in idx])
                for i, g in zip(idx, got):
                    self.check_static(i, g and g[0], self.name + ' static')
            else:
                self.scan()
        except AssertionError as e:
            self.run_.stats.violate('wrong_read', '%s: %s' % (self.name, e))
        except Exception as e:  # noqa: BLE001
            what = 'write' if op < 0.35 else 'scan' if op >= 0.85 else 'read'
            self.failed(e, what, t0)

    def write_one(self, t0):
        key = self.rng.choice(self.keys)
        m = self.run_.model[key]
        ts = self.next_ts()
        m.attempted.add(ts)
        self.run_.stats.call('write')
        self.put(key, ts)
        m.acked = max(m.acked, ts)

    # scans: a range of the static rows, fetched in small pieces with a
    # pause between them, so that faults land inside open scans
    def scan(self):
        lo = self.rng.randrange(STATIC_ROWS - 1)
        hi = min(STATIC_ROWS, lo + self.rng.randrange(10, 150))
        reverse = self.service == 2 and self.rng.random() < 0.3
        want = [static_key(i) for i in range(lo, hi)]
        if reverse:
            want = [static_key(i) for i in range(hi - 1, lo - 1, -1)]
        batch = self.rng.randrange(3, 30)
        got = []
        self.run_.stats.call('scan')
        sid = None
        try:
            if self.service == 2 and not reverse and \
                    self.rng.random() < 0.15:
                # one call, no scanner id: getScannerResults
                rs = self.conn.getScannerResults(TABLE, TH.T2.TScan(
                    startRow=static_key(lo), stopRow=static_key(hi)),
                    len(want) + 5)
                got = [r.row for r in rs]
                for r in rs:
                    if r.columnValues[0].value != static_value(int(r.row[1:])):
                        self.run_.stats.violate('bad_scan', '%s: row %r' % (
                            self.name, r.row))
            elif self.service == 1 and self.rng.random() < 0.3:
                sid = self.conn.scannerOpenWithStop(
                    TABLE, static_key(lo), static_key(hi), [b'f:q'], {})
            elif self.service == 1:
                sid = self.conn.scannerOpenWithScan(TABLE, TH.T.TScan(
                    startRow=static_key(lo), stopRow=static_key(hi),
                    caching=batch), {})
            else:
                start, stop = static_key(lo), static_key(hi)
                if reverse:
                    start, stop = static_key(hi - 1), \
                        static_key(lo - 1) if lo > 0 else b'r'
                sid = self.conn.openScanner(TABLE, TH.T2.TScan(
                    startRow=start, stopRow=stop, caching=batch,
                    reversed=reverse))
            while sid is not None:
                if self.service == 1:
                    part = self.conn.scannerGetList(sid, batch)
                    rows = [(r.row, r.columns[b'f:q'].value) for r in part]
                else:
                    part = self.conn.getScannerRows(sid, batch)
                    rows = [(r.row, r.columnValues[0].value) for r in part]
                for row, value in rows:
                    if value != static_value(int(row[1:])):
                        self.run_.stats.violate('bad_scan', '%s: row %r '
                                                'value %r' % (self.name, row,
                                                              value))
                got += [r for r, _ in rows]
                if not part:
                    break
                time.sleep(self.rng.random() * 0.05)
        except Exception:
            if got != want[:len(got)]:
                self.run_.stats.violate('bad_scan', '%s: failed scan %r..%r '
                                        'returned wrong rows before failing'
                                        % (self.name, want[:1], want[-1:]))
            with self.run_.stats.lock:
                self.run_.stats.scans_failed += 1
            self.close_scanner(sid)
            raise
        if got != want:
            self.run_.stats.violate('bad_scan', '%s: scan of %d rows from %r '
                                    '%s answered %d rows%s' % (
                                        self.name, len(want), want[0],
                                        'reversed' if reverse else '',
                                        len(got), describe(got, want)))
        with self.run_.stats.lock:
            self.run_.stats.scans_ok += 1
        self.close_scanner(sid)

    def close_scanner(self, sid):
        if sid is None or self.conn is None:
            return
        try:
            if self.service == 1:
                self.conn.scannerClose(sid)
            else:
                self.conn.closeScanner(sid)
        except Exception as e:  # noqa: BLE001 - a lost scanner is fine
            if failure_kind(e) in ('transport', 'hang'):
                self.drop()


def describe(got, want):
    missing = sorted(set(want) - set(got))
    extra = sorted(set(got) - set(want))
    dup = len(got) - len(set(got))
    return ' (missing %d e.g. %r, unexpected %d, repeated %d, order %s)' % (
        len(missing), missing[:3], len(extra), dup,
        'kept' if [g for g in got if g in set(want)] ==
        [w for w in want if w in set(got)] else 'broken')


class Pipeliner(Client):
    """Sends a batch of writes and reads of its own keys back to back on one
    connection, then reads the replies: the proxy must answer them in order
    and apply them in order (a read after an acknowledged write of the same
    key in the pipeline sees it)."""

    def step(self):
        t0 = time.time()
        batch = []
        for _ in range(self.rng.randrange(2, 9)):
            key = self.rng.choice(self.keys[:12])   # collide within a batch
            if self.rng.random() < 0.5:
                ts = self.next_ts()
                self.run_.model[key].attempted.add(ts)
                batch.append(('w', key, ts))
            else:
                batch.append(('r', key, self.run_.model[key].acked))
        sent = 0
        try:
            for op, key, ts in batch:
                if op == 'w':
                    v = own_value(key, ts)
                    if self.service == 1:
                        self.conn.send_mutateRowTs(TABLE, key, [TH.T.Mutation(
                            column=b'f:q', value=v)], ts, {})
                    else:
                        self.conn.send_put(TABLE, TH.T2.TPut(
                            row=key, timestamp=ts, columnValues=[
                                TH.T2.TColumnValue(family=b'f', qualifier=b'q',
                                                   value=v)]))
                elif self.service == 1:
                    self.conn.send_getRow(TABLE, key, {})
                else:
                    self.conn.send_get(TABLE, TH.T2.TGet(row=key))
                sent += 1
        except Exception as e:  # noqa: BLE001
            self.failed(e, 'write', t0)
            return
        acked = {}      # key -> highest ts acknowledged earlier in the batch
        write_failed = False    # a write earlier in the batch failed
        for n, (op, key, ts) in enumerate(batch):
            self.run_.stats.call('write' if op == 'w' else 'read')
            try:
                if op == 'w':
                    if self.service == 1:
                        self.conn.recv_mutateRowTs()
                    else:
                        self.conn.recv_put()
                    m = self.run_.model[key]
                    m.acked = max(m.acked, ts)
                    acked[key] = max(acked.get(key, 0), ts)
                else:
                    got = (self.t1_cell(self.conn.recv_getRow())
                           if self.service == 1 else
                           self.t2_cell(self.conn.recv_get()))
                    self.check_own(key, got, max(ts, acked.get(key, 0)),
                                   self.name + ' pipelined get')
            except Exception as e:  # noqa: BLE001
                kind = self.failed(e, 'write' if op == 'w' else 'read', t0,
                                   behind_write=write_failed)
                write_failed = write_failed or op == 'w'
                if self.conn is None:
                    # the rest never come: count them, their writes unknown
                    for _ in batch[n + 1:]:
                        self.run_.stats.fail(kind)
                    return


class ScanClient(Client):
    """Scans only: long, slow scans that stay open across faults."""

    def step(self):
        t0 = time.time()
        try:
            self.scan()
        except Exception as e:  # noqa: BLE001
            self.failed(e, 'scan', t0)


# ---- faults ------------------------------------------------------------------

class Faults(object):
    """Threads that kill, stall and reset servers and reload the proxy,
    recording when each server was unhealthy."""

    def __init__(self, run, seed):
        self.run_ = run
        self.rng = random.Random(seed)
        self.lock = threading.Lock()
        self.down = set()           # servers (names) killed or stalled now
        self.intervals = []         # (service, name or None: all, t0, t1)
        self.counts = {'kills': 0, 'stalls': 0, 'resets': 0, 'reloads': 0}
        self.slow = 0               # spans a server was slow, not injected
        self.stop = threading.Event()
        chosen = run.args.faults.split(',') if run.args.faults else []
        self.threads = [threading.Thread(target=f, daemon=True)
                        for name, f in (('kill', self.killer),
                                        ('stall', self.staller),
                                        ('reset', self.resetter),
                                        ('reload', self.reloader))
                        if name in chosen]
        self.threads += [threading.Thread(target=self.watcher, args=(s,),
                                          daemon=True)
                         for s in run.servers]

    def start(self):
        for t in self.threads:
            t.start()

    def join(self):
        self.stop.set()
        for t in self.threads:
            t.join(60)

    def pick(self):
        """A server whose service's other servers are all healthy."""
        with self.lock:
            ok = [s for s in self.run_.servers
                  if not any(o['service'] == s['service'] and
                             o['name'] in self.down
                             for o in self.run_.servers)]
            if not ok:
                return None
            s = self.rng.choice(ok)
            self.down.add(s['name'])
            return s

    def healthy_again(self, s, t0):
        with self.lock:
            self.down.discard(s['name'])
            self.intervals.append((s['service'], s['name'], t0, time.time()))

    def wait(self, lo, hi):
        return self.stop.wait(self.rng.uniform(lo, hi))

    def killer(self):
        while not self.wait(1.5, 4.0):
            s = self.pick()
            if s is None:
                continue
            t0 = time.time()
            ans = self.run_.emu.control('stop ' + s['name'])
            s['relay'].down()
            if not ans.startswith('ok'):
                self.run_.stats.violate('harness', 'stop: ' + ans)
            self.counts['kills'] += 1
            self.stop.wait(self.rng.uniform(0.5, 3.0))
            ans = self.run_.emu.control('start ' + s['name'])
            s['relay'].up()
            if not ans.startswith('ok'):
                self.run_.stats.violate('harness', 'start: ' + ans)
            self.healthy_again(s, t0)

    def staller(self):
        while not self.wait(2.0, 5.0):
            if self.rng.random() < 0.25:
                # the whole emulator: every server of both services
                t0 = time.time()
                os.kill(self.run_.emu.proc.pid, signal.SIGSTOP)
                self.stop.wait(self.rng.uniform(0.2, 0.8))
                os.kill(self.run_.emu.proc.pid, signal.SIGCONT)
                with self.lock:
                    self.intervals.append((None, None, t0, time.time()))
                self.counts['stalls'] += 1
                continue
            s = self.pick()
            if s is None:
                continue
            t0 = time.time()
            s['relay'].pause()
            self.counts['stalls'] += 1
            # around the call timeout: some calls outlive it, some not
            self.stop.wait(self.rng.uniform(0.2, 1.7) *
                           self.run_.args.call_timeout_ms / 1000.0)
            s['relay'].resume()
            self.healthy_again(s, t0)

    def resetter(self):
        while not self.wait(0.3, 1.5):
            s = self.rng.choice(self.run_.servers)
            if self.rng.random() < 0.2:
                self.counts['resets'] += s['relay'].cut()
            else:
                self.counts['resets'] += s['relay'].cut_one(self.rng)

    def reloader(self):
        while not self.wait(3.0, 8.0):
            os.kill(self.run_.proxy.proc.pid, signal.SIGHUP)
            self.counts['reloads'] += 1

    def watcher(self, s):
        """Whether s answers at all, outside the faults: a trivial call
        through its relay (not the proxy) every 0.1 s.  One slower than
        the proxy's read_retry_after_ms (a third of the call timeout) with
        no fault injected into s is an unhealthy span too: on this shared
        machine the backend or the relays (threads of this process) are
        at times starved for seconds, every server at once, and a read
        can then fail although no fault touched its servers."""
        slow_s = self.run_.args.call_timeout_ms / 3000.0
        c = None
        while not self.stop.wait(0.1):
            with self.lock:
                if s['name'] in self.down:
                    continue    # a fault of its own: counted already
            t0 = time.time()
            try:
                if c is None:
                    if s['service'] == 1:
                        c = TH.client1(s['relay'].port, timeout=10.0)
                    else:
                        c = TH.client2(s['relay'].port, timeout=10.0)
                if s['service'] == 1:
                    c.getTableNames()
                else:
                    c.exists(b't', TH.T2.TGet(row=b'~watch'))
            except Exception:
                # a kill or a reset (of this connection too): dial again
                if c is not None:
                    c.transport.close()
                c = None
                continue
            t1 = time.time()
            if t1 - t0 > slow_s and \
                    not self.unhealthy(s['service'], s['name'], t0, t1):
                with self.lock:
                    self.intervals.append((s['service'], s['name'], t0, t1))
                    self.slow += 1
        if c is not None:
            c.transport.close()

    def unhealthy(self, service, name, t0, t1):
        """Whether name (of service) had a fault overlapping [t0, t1]."""
        with self.lock:
            spans = list(self.intervals)
            now = time.time()
            spans += [(s['service'], s['name'], now - 3600, now)
                      for s in self.run_.servers if s['name'] in self.down]
        return any((sv is None or (sv == service and n == name)) and
                   a < t1 and b > t0 for sv, n, a, b in spans)


# ---- the run -----------------------------------------------------------------

class Run(object):
    def __init__(self, args, workdir):
        self.args = args
        self.workdir = workdir
        self.stop = threading.Event()
        self.stats = Stats()
        self.model = {}
        # 'emu' names the backend, whichever kind it is
        self.emu = hsptest.start_backend(
            args.backend_kind, workdir, emu=args.emu, tables={'t': ['f']},
            thrift=TH, listeners=2, thrift2=2, control=True,
            # a region per bucket, as the proxy's advice says
            extra=['--split-keys', ','.join('%x-' % b
                                            for b in range(1, BUCKETS))])
        self.servers = []
        for service, ports in ((1, self.emu.ports), (2, self.emu.ports2)):
            for p in ports:
                self.servers.append({'service': service,
                                     'name': '127.0.0.1:%d' % p,
                                     'port': p,
                                     'relay': hsptest.Relay(p)})
        self.proxy_port = hsptest.free_port()
        self.proxy_port2 = hsptest.free_port()
        self.admin_port = hsptest.free_port()

        def relays(service):
            return ','.join('127.0.0.1:%d' % s['relay'].port
                            for s in self.servers if s['service'] == service)
        conf = ('[proxy]\nlisten = 127.0.0.1:%d\nworkers = 2\n'
                '[backend]\nservers = %s\nthrift2_servers = %s\n'
                'connect_timeout_ms = 500\nrequest_timeout_ms = %d\n'
                'pool_size = 16\n'
                '[thrift2]\nlisten = 127.0.0.1:%d\n'
                '[admin]\nlisten = 127.0.0.1:%d\n'
                # the key visualizer's history grows for retain_s (6 h) by
                # design: off, so that RSS measures what the faults leave
                '[keyviz]\nenabled = false\n'
                '[table:t]\nbuckets = %d\nsalt_format = hex\n'
                'salt_separator = -\n'
                % (self.proxy_port, relays(1), relays(2), args.call_timeout_ms,
                   self.proxy_port2, self.admin_port, BUCKETS))
        self.proxy = hsptest.Proxy(args.proxy, workdir, conf,
                                   [self.proxy_port, self.proxy_port2,
                                    self.admin_port])
        hsptest.wait_for(lambda: self.http('/healthz')[0] == 200, 20,
                         'proxy healthy')

    def close(self):
        for s in self.servers:
            s['relay'].close()
        self.proxy.close()
        self.emu.close()

    # the admin endpoint and /proc
    def http(self, path):
        try:
            with urllib.request.urlopen('http://127.0.0.1:%d%s' % (
                    self.admin_port, path), timeout=5) as r:
                return r.status, r.read().decode()
        except urllib.error.HTTPError as e:
            return e.code, e.read().decode()
        except OSError as e:
            return 0, str(e)

    def metrics(self):
        out = {}
        for line in self.http('/metrics')[1].splitlines():
            m = re.match(r'^([a-z_]+)(\{[^}]*\})? (\S+)$', line)
            if m:
                out[m.group(1) + (m.group(2) or '')] = float(m.group(3))
        return out

    def metric_sum(self, name):
        return sum(v for k, v in self.metrics().items()
                   if k == name or k.startswith(name + '{'))

    def settled_fds(self):
        """The proxy's descriptors that are neither client nor backend
        connections."""
        m = self.metrics()
        conns = sum(v for k, v in m.items()
                    if k.startswith('hsp_backend_connections{'))
        return (self.proxy.fds() - int(conns) -
                int(m.get('hsp_client_connections', 0)))

    # phases
    def preload(self):
        c = TH.client1(self.proxy_port, timeout=SOCKET_TIMEOUT_S)
        try:
            for lo in range(0, STATIC_ROWS, 50):
                c.mutateRows(TABLE, [TH.T.BatchMutation(
                    row=static_key(i), mutations=[TH.T.Mutation(
                        column=b'f:q', value=static_value(i))])
                    for i in range(lo, min(STATIC_ROWS, lo + 50))], {})
        finally:
            c.transport.close()

    def clients(self, seed):
        # the proxy reads each client's protocol and transport: use several
        b, c, bu, fr = 'binary', 'compact', 'buffered', 'framed'
        kinds = [(Client, 1, b, bu), (Client, 1, c, fr), (Client, 2, b, bu),
                 (Client, 2, c, bu), (Pipeliner, 1, b, fr),
                 (Pipeliner, 2, b, bu), (ScanClient, 1, b, bu),
                 (ScanClient, 2, c, fr)]
        return [cls(self, '%s%d-%d' % (cls.__name__[0].lower(), svc, n),
                    svc, seed * 100 + n, (proto, trans))
                for n, (cls, svc, proto, trans) in enumerate(kinds)]

    def final_check(self):
        """Every acknowledged write is there, through the proxy and in the
        emulator's own store; every static row too."""
        c = TH.client1(self.proxy_port, timeout=SOCKET_TIMEOUT_S)
        checker = Client(self, 'final', 1, 0)
        checker.conn = c
        try:
            keys = sorted(k for k in self.model if not k.startswith(b'final'))
            for lo in range(0, len(keys), 50):
                part = keys[lo:lo + 50]
                got = hsptest.wait_for(lambda: self.try_get_many(c, part),
                                       20, 'final reads')
                for k, g in zip(part, got):
                    checker.check_own(k, g, self.model[k].acked, 'final')
            # straight from the store, under the salt
            raw = {}
            d = TH.client1(self.emu.port, timeout=SOCKET_TIMEOUT_S)
            try:
                sid = d.scannerOpen(TABLE, b'', [b'f:q'], {})
                while True:
                    rows = d.scannerGetList(sid, 500)
                    if not rows:
                        break
                    for r in rows:
                        cell = r.columns[b'f:q']
                        raw[r.row.split(b'-', 1)[1]] = (cell.value,
                                                        cell.timestamp)
                d.scannerClose(sid)
            finally:
                d.transport.close()
            for k in keys:
                checker.check_own(k, raw.get(k), self.model[k].acked,
                                  'final store')
            for i in range(STATIC_ROWS):
                g = raw.get(static_key(i))
                checker.check_static(i, g and g[0], 'final store')
        finally:
            c.transport.close()
        # whole-range scans, both services
        for svc in (1, 2):
            sc = ScanClient(self, 'finalscan%d' % svc, svc, 1)
            sc.connect()
            sc.rng = random.Random(5)
            try:
                sc.scan()
            finally:
                sc.drop()

    def try_get_many(self, c, keys):
        try:
            rows = c.getRows(TABLE, keys, {})
        except TH.T.IOError:
            time.sleep(0.2)
            return None
        by = {r.row: (r.columns[b'f:q'].value, r.columns[b'f:q'].timestamp)
              for r in rows if b'f:q' in r.columns}
        return [by.get(k) for k in keys]


def main():
    global TH
    ap = argparse.ArgumentParser()
    ap.add_argument('--proxy', required=True)
    ap.add_argument('--emu', required=True)
    ap.add_argument('--pydir', required=True)
    ap.add_argument('--seconds', type=float, default=float(
        os.environ.get('HSP_FAULT_SECONDS', '60')))
    hsptest.add_backend_args(ap)
    ap.add_argument('--call-timeout-ms', type=int, default=None,
                    help='the proxy\'s request_timeout_ms (default 1500, '
                         '3000 with real HBase)')
    ap.add_argument('--faults', default='kill,stall,reset,reload',
                    help='which faults, comma separated (default all; '
                         'empty: the load alone, for comparison)')
    ap.add_argument('--pace-ms', type=float, default=2.0,
                    help='pause between two steps of a client (default 2)')
    # the default on the emulator since the 10-minute run held it at 0
    # (tests/faults/README.md); not yet measured on real HBase, where it
    # is only counted unless asked for; counted and printed every run
    strict_env = os.environ.get('HSP_FAULT_STRICT_READS')
    ap.add_argument('--strict-reads', action='store_true',
                    default=None if strict_env is None
                    else strict_env != '0',
                    help='fail on reads that failed while a server was '
                         'healthy (the default with the emulator; '
                         'HSP_FAULT_STRICT_READS=0 or --no-strict-reads '
                         'only counts them, =1 asks for it on real HBase)')
    ap.add_argument('--no-strict-reads', dest='strict_reads',
                    action='store_false')
    ap.add_argument('--seed', type=int, default=int(
        os.environ.get('HSP_FAULT_SEED', str(int(time.time()) % 100000))))
    args = ap.parse_args()
    if args.strict_reads is None:
        args.strict_reads = args.backend_kind == 'emu'
    if args.call_timeout_ms is None:
        args.call_timeout_ms = 3000 if args.backend_kind == 'real' else 1500
    TH = hsptest.Thrift(args.pydir)
    workdir = tempfile.mkdtemp(prefix='hsp-faults-')
    sys.stderr.write('fault suite: %.0f s on %s, seed %d, logs in %s\n'
                     % (args.seconds, args.backend_kind, args.seed, workdir))
    run = Run(args, workdir)
    ok = False
    try:
        ok = drive(run, args)
    finally:
        run.close()
        if ok and not os.environ.get('HSP_KEEP_LOGS'):
            shutil.rmtree(workdir, ignore_errors=True)
        else:
            sys.stderr.write('logs kept in %s\n' % workdir)
    sys.exit(0 if ok else 1)


def drive(run, args):
    run.preload()
    clients = run.clients(args.seed)
    for c in clients:
        c.start()
    warm = min(10.0, max(3.0, args.seconds * 0.15))
    time.sleep(warm)
    fds0, rss0 = run.settled_fds(), run.proxy.rss_kb()
    faults = Faults(run, args.seed)
    t_faults = time.time()
    faults.start()
    rss_peak = rss0
    rss_trail = [rss0]          # one sample a tenth of the run
    next_sample = t_faults + args.seconds / 10.0
    end = t_faults + args.seconds
    while time.time() < end:
        time.sleep(min(5.0, max(0.1, end - time.time())))
        rss_peak = max(rss_peak, run.proxy.rss_kb())
        if time.time() >= next_sample:
            rss_trail.append(run.proxy.rss_kb())
            next_sample += args.seconds / 10.0
        if not run.proxy.proc.poll() is None:
            run.stats.violate('proxy_died', 'exit %s' % run.proxy.proc.poll())
            break
    faults.join()
    # faults over: the load goes on a moment on a healthy cluster
    time.sleep(2.0)
    run.stop.set()
    for c in clients:
        c.join(SOCKET_TIMEOUT_S + 5)
        if c.is_alive():
            run.stats.violate('hang', '%s did not stop' % c.name)
        if c.error:
            sys.stderr.write(c.error)
    hsptest.wait_for(lambda: run.http('/healthz')[0] == 200, 20,
                     'proxy healthy after the faults')
    run.final_check()
    hsptest.wait_for(lambda: run.metrics().get('hsp_client_connections', 1)
                     == 0, 10, 'clients gone')
    time.sleep(0.5)
    fds1, rss1 = run.settled_fds(), run.proxy.rss_kb()
    # a GLib critical or error in either process is a bug, whatever the
    # clients saw
    for who, text, pattern in (
            ('proxy', run.proxy.log_text(), r'^\S* ?(critical|error): '),
            ('backend', run.emu.log_text(), r'-(CRITICAL|ERROR) \*\*')):
        bad = [ln for ln in text.splitlines() if re.search(pattern, ln)]
        if bad:
            run.stats.violate('log', '%s logged %d critical/error lines, '
                              'first: %s' % (who, len(bad), bad[0][:300]))
    warnings = sum(1 for ln in run.proxy.log_text().splitlines()
                   if re.search(r'^\S* ?warning: ', ln))
    # reads that failed while a server of their service was healthy for
    # the whole call timeout
    timeout_s = args.call_timeout_ms / 1000.0
    healthy_fail = 0
    for service, t0, t1, text in run.stats.failed_reads:
        if any(not faults.unhealthy(service, s['name'], t0, t0 + timeout_s)
               for s in run.servers if s['service'] == service):
            healthy_fail += 1
            if healthy_fail <= 10:
                # what failed, and the faults of its service around it
                near = sorted((a - t_faults, b - t_faults, n or 'all')
                              for sv, n, a, b in faults.intervals
                              if sv in (None, service) and a < t1 + 1 and
                              b > t0 - 3)
                print('read failed while a server was healthy: thrift%s '
                      'at %.2f s, after %.2f s: %s; faults near: %s'
                      % (service, t0 - t_faults, t1 - t0, text, ', '.join(
                          '%s %.2f-%.2f' % (n, a, b) for a, b, n in near)))
    resumes = run.metric_sum('hsp_scan_resumes_total')
    st = run.stats
    calls = sum(st.calls.values())
    by_kind = {}
    for kind, _ in st.violations:
        by_kind[kind] = by_kind.get(kind, 0) + 1
    rss_limit = rss0 * 1.25 + 8192
    # flat means no growth: a figure after warm-up that still held a
    # transient descriptor (a reload's, a probe's) may end lower
    fd_ok = fds1 - fds0 <= 2
    rss_ok = UNDER_ASAN or rss1 <= rss_limit
    print('figures: calls %s; scans ok %d, failed loudly %d; fds %d -> %d '
          '(+-2); rss %d -> %d kB (peak %d, limit %d%s); reads failed '
          'while a server was healthy: %d of %d failed reads (and %d '
          'pipelined behind a failed write); rss every '
          'tenth of the run: %s kB; proxy log warnings: %d; spans a server '
          'was slow with no fault injected: %d'
          % (st.calls, st.scans_ok, st.scans_failed, fds0, fds1, rss0, rss1,
             rss_peak, rss_limit, ', not checked under ASan'
             if UNDER_ASAN else '', healthy_fail, len(st.failed_reads),
             st.reads_behind_failed_write,
             ' '.join(str(x) for x in rss_trail), warnings, faults.slow))
    print('failures by call: %s' % ', '.join(
        '%s/thrift%s/%s: %d' % (k + (v,))
        for k, v in sorted(st.by_op.items())))
    for (op, kind), texts in sorted(st.examples.items()):
        print('  %s %s e.g. %s' % (op, kind, ' | '.join(texts)))
    sys.stderr.flush()
    print('faults summary: backend=%s seconds=%.0f calls=%d kills=%d stalls=%d '
          'resets=%d reloads=%d resumes=%d failures={%s} violations={%s} '
          'read_failed_healthy=%d'
          % (args.backend_kind, args.seconds, calls, faults.counts['kills'],
             faults.counts['stalls'], faults.counts['resets'],
             faults.counts['reloads'], resumes,
             ', '.join('%s: %d' % kv for kv in sorted(st.failures.items())),
             ', '.join('%s: %d' % kv for kv in sorted(by_kind.items())),
             healthy_fail))
    sys.stdout.flush()
    ok = True
    for kind, text in st.violations[:20]:
        sys.stderr.write('FAIL %s: %s\n' % (kind, text))
    if st.violations:
        ok = False
    if not fd_ok:
        sys.stderr.write('FAIL fds: %d after warm-up, %d at the end\n'
                         % (fds0, fds1))
        ok = False
    if not rss_ok:
        sys.stderr.write('FAIL rss: %d kB after warm-up, %d kB at the end '
                         '(limit %d)\n' % (rss0, rss1, rss_limit))
        ok = False
    if args.strict_reads and healthy_fail:
        sys.stderr.write('FAIL %d reads failed while a server was healthy\n'
                         % healthy_fail)
        ok = False
    if ('kill' in args.faults and faults.counts['kills'] == 0) or \
            calls < 100:
        sys.stderr.write('FAIL the run did too little: %d kills, %d calls\n'
                         % (faults.counts['kills'], calls))
        ok = False
    return ok


if __name__ == '__main__':
    main()
