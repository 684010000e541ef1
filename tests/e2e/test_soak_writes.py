"""Nothing lost: concurrent writers through the proxy (mutateRows,
mutateRow, atomicIncrement, increment, deleteAll) while a relay between
the proxy and hbase-emu cuts backend connections at random.  Every
write's outcome is recorded; afterwards a direct read of the emulator
must show every acknowledged write at its salted key, nothing at any
other key, and counters within [acknowledged, acknowledged + in doubt].
A write the client saw fail may or may not have been applied (the
at-most-once ambiguity of any RPC): those are counted as in doubt.

SOAK_WRITES (default 20000) row writes; SOAK_WRITERS (16) threads;
SOAK_CUT_MS (40) mean time between two connection cuts.

  SOAK_WRITES=1000000 /usr/bin/python3 tests/e2e/test_soak_writes.py \\
      --proxy BUILD/daemon/hbase-salt-proxy --emu BUILD/tests/emu/hbase-emu \\
      --pydir BUILD/thrift/py
"""

import argparse
import os
import random
import shutil
import struct
import sys
import tempfile
import threading
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import faultlib as fl  # noqa: E402
import hsptest  # noqa: E402

ARGS = None
WRITES = int(os.environ.get('SOAK_WRITES', '20000'))
WRITERS = int(os.environ.get('SOAK_WRITERS', '16'))
CUT_MS = float(os.environ.get('SOAK_CUT_MS', '40'))
BATCH = 50
COUNTERS = 8            # per writer
SOCKET_TIMEOUT_S = 15.0


def value(key):
    return b'v:' + key


class Writer(object):
    """One thread's writes: each row key is written once (so an acked put
    has exactly one right value), maybe deleted once later."""

    def __init__(self, wid, quota, port):
        self.wid, self.quota, self.port = wid, quota, port
        self.rng = random.Random(wid)
        self.next = 0
        self.acked = set()        # keys whose put was acknowledged
        self.doubt_put = set()    # puts that failed: maybe applied
        self.deleted = set()      # acked deletes
        self.doubt_del = set()
        self.ctr_acked = [0] * COUNTERS
        self.ctr_doubt = [0] * COUNTERS
        self.writes = self.failed = 0
        self.errors = []          # anything but an IOError

    def key(self):
        k = b'sk%02d-%08d' % (self.wid, self.next)
        self.next += 1
        return k

    def run(self):
        c = fl.client(self.port, timeout=SOCKET_TIMEOUT_S)
        T = fl.T
        try:
            while self.writes + self.failed < self.quota:
                op = self.rng.random()
                try:
                    if op < 0.6:
                        keys = [self.key() for _ in range(BATCH)]
                        pending = keys
                        c.mutateRows(b't', [T.BatchMutation(
                            row=k, mutations=[T.Mutation(
                                column=b'd:a', value=value(k))])
                            for k in keys], {})
                        self.acked.update(keys)
                        self.writes += len(keys)
                    elif op < 0.75:
                        k = self.key()
                        pending = [k]
                        c.mutateRow(b't', k, [T.Mutation(
                            column=b'd:a', value=value(k))], {})
                        self.acked.add(k)
                        self.writes += 1
                    elif op < 0.85:
                        n = self.rng.randrange(COUNTERS)
                        pending = ('ctr', n)
                        row = b'sc%02d-%02d' % (self.wid, n)
                        if op < 0.8:
                            c.atomicIncrement(b't', row, b'd:n', 1)
                        else:
                            c.increment(T.TIncrement(table=b't', row=row,
                                                     column=b'd:n',
                                                     ammount=1))
                        self.ctr_acked[n] += 1
                        self.writes += 1
                    else:
                        live = self.acked - self.deleted - self.doubt_del
                        if not live:
                            continue
                        k = min(live) if op < 0.86 else self.rng.choice(
                            sorted(live)[-200:])
                        pending = ('del', k)
                        c.deleteAll(b't', k, b'd:a', {})
                        self.deleted.add(k)
                        self.writes += 1
                except T.IOError as e:
                    if 'hbase-salt-proxy' not in e.message:
                        self.errors.append(e.message)
                    if isinstance(pending, list):
                        self.doubt_put.update(pending)
                        self.failed += len(pending)
                    elif pending[0] == 'ctr':
                        self.ctr_doubt[pending[1]] += 1
                        self.failed += 1
                    else:
                        self.doubt_del.add(pending[1])
                        self.failed += 1
        except Exception as e:  # noqa: BLE001 - the test fails on it
            self.errors.append(repr(e))
        finally:
            c._trans.close()


class SoakWritesTest(unittest.TestCase):
    def test_no_acknowledged_write_lost(self):
        d = tempfile.mkdtemp(prefix='hsp-e2e-soak-')
        emu = fl.Emu(ARGS.emu, d)
        emu.start()
        relay = fl.Relay(emu.port)
        proxy = fl.Proxy(ARGS.proxy, d, [relay.port],
                         request_timeout_ms=3000)
        stop = threading.Event()
        cutter_rng = random.Random(7)
        faults = [0]

        def cutter():
            while not stop.wait(cutter_rng.expovariate(1000.0 / CUT_MS)):
                # mostly one connection, sometimes all of them
                if cutter_rng.random() < 0.1:
                    faults[0] += relay.cut()
                else:
                    faults[0] += relay.cut_one(cutter_rng)
        try:
            t0 = time.time()
            writers = [Writer(i, WRITES // WRITERS, proxy.port)
                       for i in range(WRITERS)]
            threads = [threading.Thread(target=w.run) for w in writers]
            cut = threading.Thread(target=cutter)
            cut.start()
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            stop.set()
            cut.join()
            took = time.time() - t0
            for w in writers:
                self.assertEqual(w.errors, [])

            # the emulator, directly: every row and where it is
            stored = {}
            c = fl.client(emu.port, timeout=120)
            sid = c.scannerOpenWithScan(b't', fl.T.TScan(caching=5000), {})
            while True:
                rows = c.scannerGetList(sid, 5000)
                if not rows:
                    break
                for r in rows:
                    stored[r.row] = r.columns
            c.scannerClose(sid)
            c._trans.close()

            writes = sum(w.writes for w in writers)
            doubt = sum(w.failed for w in writers)
            lost = misplaced = 0
            known = {}
            for w in writers:
                for k in w.acked | w.doubt_put:
                    known[fl.physical(k)] = k
                for k in w.acked - w.deleted - w.doubt_del:
                    cols = stored.get(fl.physical(k))
                    if cols is None or cols[b'd:a'].value != value(k):
                        lost += 1
                for k in w.deleted:
                    if fl.physical(k) in stored:
                        lost += 1       # an acknowledged delete undone
                for n in range(COUNTERS):
                    row = fl.physical(b'sc%02d-%02d' % (w.wid, n))
                    known[row] = row
                    got = 0
                    if row in stored:
                        got = struct.unpack('>q',
                                            stored[row][b'd:n'].value)[0]
                    if not (w.ctr_acked[n] <= got
                            <= w.ctr_acked[n] + w.ctr_doubt[n]):
                        lost += 1
            for phys, cols in stored.items():
                k = known.get(phys)
                if k is None:
                    misplaced += 1      # a row at a key nobody wrote
                elif b'd:a' in cols and cols[b'd:a'].value != value(k):
                    misplaced += 1
            summary = ('soak: %d acknowledged writes, %d in doubt (failed), '
                       '%d connection cuts, lost %d, misplaced %d, %.1f s'
                       % (writes, doubt, faults[0], lost, misplaced, took))
            print(summary, file=sys.stderr)
            self.assertEqual(lost, 0, summary)
            self.assertEqual(misplaced, 0, summary)
            self.assertGreaterEqual(writes + doubt, WRITES - WRITERS)
            self.assertGreater(faults[0], 0, summary)
            self.assertGreater(writes, doubt, summary)
        finally:
            stop.set()
            try:
                self.assertEqual(proxy.stop(), 0)
            finally:
                relay.close()
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
    hsptest.import_thrift(ARGS.pydir, fl)
    unittest.main(argv=[sys.argv[0]] + rest, verbosity=2)


if __name__ == '__main__':
    main()
