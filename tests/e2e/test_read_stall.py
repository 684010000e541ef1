"""Reads on a stalled server: hbase-salt-proxy in front of two Thrift1 and
two Thrift2 "servers" over one store (hsptest.Relay's to one hbase-emu).
One server of each service stalls (its relay stops forwarding, connections
kept open, as a SIGSTOPped or GC-paused server looks over TCP).  Every read
sent there must be answered by the other server after [backend]
read_retry_after_ms, well within request_timeout_ms, with its own row, in
the order a pipelining client asked; without the retry each such read
waits its whole request_timeout_ms and fails.

  /usr/bin/python3 tests/e2e/test_read_stall.py --proxy BUILD/daemon/hbase-salt-proxy \\
      --emu BUILD/tests/emu/hbase-emu --pydir BUILD/thrift/py

HSP_KEEP_LOGS=1 keeps the temp dir (configs, logs).
"""

import argparse
import os
import select
import socket
import shutil
import sys
import tempfile
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, '..', 'lib'))
from hsptest import (Proxy, Relay, Thrift, free_port,  # noqa: E402
                     start_backend)

ARGS = None
TH = None
TABLE = b't'
ROWS = 40
TIMEOUT_MS = 4000      # request_timeout_ms: the bound a client sees
RETRY_MS = 400         # read_retry_after_ms
# a read moved off the stalled server is answered well within its
# call timeout: the retry delay, plus time for a loaded machine
WITHIN_S = (RETRY_MS + 1200) / 1000.0


def key(i):
    return b'row%04d' % i


class Pipe(object):
    """A Thrift1 client connection that sends calls without waiting for
    their replies (a pipelining client), so a test knows which calls are
    still unanswered."""

    def __init__(self, port):
        self.sock = socket.create_connection(('127.0.0.1', port), 10)
        ts = TH.TSocket.TSocket()
        ts.handle = self.sock
        self.iprot = TH.TBinaryProtocol.TBinaryProtocol(
            TH.TTransport.TBufferedTransport(ts))
        self.seqid = 0

    def send(self, name, *args):
        out = TH.TTransport.TMemoryBuffer()
        w = TH.Hbase.Client(TH.TBinaryProtocol.TBinaryProtocol(out))
        self.seqid += 1
        w._seqid = self.seqid
        getattr(w, 'send_' + name)(*args)
        self.sock.sendall(out.getvalue())

    def answered_within(self, seconds):
        return bool(select.select([self.sock], [], [], seconds)[0])

    def recv(self, name):
        """The next reply's result (name_result: .success, .io)."""
        got, _, _ = self.iprot.readMessageBegin()
        assert got == name, got
        res = getattr(TH.Hbase, name + '_result')()
        res.read(self.iprot)
        self.iprot.readMessageEnd()
        return res

    def close(self):
        self.sock.close()


def put(row, value):
    return (TABLE, row, [TH.T.Mutation(column=b'd:c', value=value)], {})


class _Base(unittest.TestCase):
    POOL = 2            # pool_size

    def setUp(self):
        self.workdir = tempfile.mkdtemp(prefix='hsp-read-stall-')
        self.emu = start_backend('emu', self.workdir, emu=ARGS.emu,
                                 thrift2=True, tables={'t': ['d']})
        self.r1 = [Relay(self.emu.port), Relay(self.emu.port)]
        self.r2 = [Relay(self.emu.port2), Relay(self.emu.port2)]
        self.port, self.port2 = free_port(), free_port()
        conf = ('[proxy]\nlisten = 127.0.0.1:%d\nworkers = 1\n'
                '[backend]\nservers = %s\nthrift2_servers = %s\n'
                'request_timeout_ms = %d\nread_retry_after_ms = %d\n'
                'connect_timeout_ms = 500\npool_size = %d\n'
                '[thrift2]\nlisten = 127.0.0.1:%d\n'
                '[table:t]\nbuckets = 4\nsalt_format = hex\n'
                % (self.port,
                   ', '.join('127.0.0.1:%d' % r.port for r in self.r1),
                   ', '.join('127.0.0.1:%d' % r.port for r in self.r2),
                   TIMEOUT_MS, RETRY_MS, self.POOL, self.port2))
        try:
            self.proxy = Proxy(ARGS.proxy, self.workdir, conf,
                               [self.port, self.port2])
        except Exception:
            self.close_backend()    # no tearDown follows a failed setUp
            raise
        c = TH.client1(self.port)
        c.mutateRows(TABLE, [
            TH.T.BatchMutation(row=key(i), mutations=[
                TH.T.Mutation(column=b'd:c', value=b'v%d' % i)])
            for i in range(ROWS)], {})
        # both servers of each service have connections before the stall
        for i in range(8):
            c.getRow(TABLE, key(i), {})
        c.transport.close()

    def close_backend(self):
        for r in self.r1 + self.r2:
            r.close()
        self.emu.close()

    def tearDown(self):
        for r in self.r1 + self.r2:
            r.resume()
        self.proxy.close()
        self.close_backend()
        if os.environ.get('HSP_KEEP_LOGS'):
            sys.stderr.write('logs in %s\n' % self.workdir)
        else:
            shutil.rmtree(self.workdir, ignore_errors=True)

    def timed(self, call):
        t0 = time.time()
        got = call()
        took = time.time() - t0
        self.assertLess(took, WITHIN_S, 'a read took %.2f s (call timeout '
                        '%.1f s): not moved off the stalled server'
                        % (took, TIMEOUT_MS / 1000.0))
        return got

    def write_pending_on(self, relay, pipe):
        """A write of pipe's left unanswered on relay's server (paused):
        Thrift1 calls go to the two servers in turn, so one of two does."""
        for i in range(4):
            pipe.send('mutateRow', *put(b'w%d' % i, b'x'))
            if not pipe.answered_within(0.3):
                return
            self.assertIsNone(pipe.recv('mutateRow').io)
        self.fail('no write reached the paused server')


class ReadStallTest(_Base):
    def test_thrift1_reads_while_a_server_stalls(self):
        c = TH.client1(self.port)
        self.r1[0].pause()
        # round robin: about half of these go to the stalled server first
        for i in range(10):
            rows = self.timed(lambda: c.getRow(TABLE, key(i), {}))
            self.assertEqual([(r.row, r.columns[b'd:c'].value)
                              for r in rows], [(key(i), b'v%d' % i)])
        got = self.timed(lambda: c.getRows(TABLE, [key(i) for i in
                                                   range(10, 20)], {}))
        self.assertEqual([r.row for r in got], [key(i) for i in
                                                range(10, 20)])
        self.assertIn('read_retry_after_ms', self.proxy.log_text())
        c.transport.close()

    def test_thrift2_reads_while_a_server_stalls(self):
        c = TH.client2(self.port2)
        self.r2[1].pause()
        for i in range(10):
            got = self.timed(lambda: c.get(TABLE, TH.T2.TGet(row=key(i))))
            self.assertEqual(got.row, key(i))
            self.assertTrue(self.timed(
                lambda: c.exists(TABLE, TH.T2.TGet(row=key(i)))))
        got = self.timed(lambda: c.getMultiple(
            TABLE, [TH.T2.TGet(row=key(i)) for i in range(5)]))
        self.assertEqual([g.row for g in got], [key(i) for i in range(5)])
        c.transport.close()

    def test_pipelined_reads_keep_their_order(self):
        # 30 getRow calls in one write: the proxy queues them on one
        # connection (each behind the client's previous one), of one
        # server or the other, in turn; one server stalls.  Every answer
        # comes back, in the order asked, each with its own row, well
        # within the call timeout.
        n = 30
        self.r1[1].pause()
        for _ in range(3):
            t0 = time.time()
            got = TH.pipelined_getrow(self.port, TABLE,
                                      [key(i) for i in range(n)])
            for i, (name, seqid, res) in enumerate(got):
                self.assertEqual((name, seqid), ('getRow', 100 + i))
                self.assertIsNone(res.io, res.io and res.io.message)
                self.assertEqual([r.row for r in res.success], [key(i)])
            took = time.time() - t0
            self.assertLess(took, WITHIN_S + 1.0, 'the pipeline took %.2f s'
                            % took)
        # one of them at least was on the stalled server
        self.assertIn('read_retry_after_ms', self.proxy.log_text())

    def test_write_on_a_stalled_server_is_not_sent_twice(self):
        # increments are writes: never moved once sent.  One that reaches
        # the stalled server fails after request_timeout_ms (or lands when
        # the server wakes); the counter never counts more than the calls
        c = TH.client1(self.port)
        self.r1[0].pause()
        calls = 4
        for _ in range(calls):
            try:
                c.atomicIncrement(TABLE, b'counter', b'd:n', 1)
            except TH.T.IOError:
                pass
        self.r1[0].resume()
        time.sleep(0.5)
        got = c.atomicIncrement(TABLE, b'counter', b'd:n', 0)
        self.assertLessEqual(got, calls)
        c.transport.close()


class BehindWriteTest(_Base):
    POOL = 1

    def test_reads_behind_another_clients_write_move(self):
        # pool_size 1 (one connection a server): a write of one client
        # on the stalled server holds its only connection; the reads of
        # another client sent there queue behind it.  They are answered
        # by the other server after read_retry_after_ms; the write stays
        # (never sent twice) and lands when the server wakes.
        self.r1[0].pause()
        writer = Pipe(self.port)
        self.write_pending_on(self.r1[0], writer)
        c = TH.client1(self.port)
        for i in range(6):
            rows = self.timed(lambda: c.getRow(TABLE, key(i), {}))
            self.assertEqual([r.row for r in rows], [key(i)])
        self.r1[0].resume()
        self.assertIsNone(writer.recv('mutateRow').io)
        writer.close()
        c.transport.close()
        self.assertIn('read_retry_after_ms', self.proxy.log_text())

    def test_a_clients_read_stays_behind_its_own_write(self):
        # a client that pipelines a read after its own write must see the
        # write: that read stays behind it on the stalled server, while
        # another client's reads there move
        self.r1[0].pause()
        p = Pipe(self.port)
        self.write_pending_on(self.r1[0], p)
        p.send('mutateRow', *put(key(1), b'new'))
        p.send('getRow', TABLE, key(1), {})
        c = TH.client1(self.port)
        for i in range(4):
            self.timed(lambda: c.getRow(TABLE, key(i), {}))
        self.assertFalse(p.answered_within(0.2))
        self.r1[0].resume()
        self.assertIsNone(p.recv('mutateRow').io)
        self.assertIsNone(p.recv('mutateRow').io)
        res = p.recv('getRow')
        self.assertIsNone(res.io, res.io and res.io.message)
        self.assertEqual([r.columns[b'd:c'].value for r in res.success],
                         [b'new'])
        p.close()
        c.transport.close()


class ResetTest(_Base):
    """The one server up of a service (the other is down) resets its
    connections: the reads in flight there are answered, by the same
    server on new connections, rather than failed."""
    POOL = 8

    def open_conns(self, relay):
        """Connections open to relay's server, idle: calls held there at
        once spread over its pool."""
        relay.pause()
        pipes = [Pipe(self.port) for _ in range(16)]
        for i, p in enumerate(pipes):
            p.send('getRow', TABLE, key(i), {})
        time.sleep(0.3)
        relay.resume()
        for p in pipes:
            res = p.recv('getRow')
            self.assertIsNone(res.io, res.io and res.io.message)
            p.close()

    def test_read_waits_for_a_server_briefly_refusing(self):
        # the one server up resets every connection and refuses a new one
        # for a moment (a reset that catches a connect too): the proxy
        # holds it off (connect backoff) and no server can take the read
        # at once.  It waits, within its timeout, and is answered.
        a, b = self.r1
        a.down()
        c = TH.client1(self.port)
        deadline = time.time() + 10
        while ('127.0.0.1:%d: down after' % a.port) not in \
                self.proxy.log_text():
            self.assertLess(time.time(), deadline, 'a never went down')
            c.getRow(TABLE, key(0), {})
            time.sleep(0.12)
        for round_ in range(3):
            self.open_conns(b)
            b.pause()
            p = Pipe(self.port)
            p.send('getRow', TABLE, key(round_), {})
            time.sleep(0.2)
            b.down()
            time.sleep(0.05)
            b.up()
            b.resume()
            res = p.recv('getRow')
            self.assertIsNone(res.io, 'round %d: %s' % (
                round_, res.io and res.io.message))
            self.assertEqual([r.row for r in res.success], [key(round_)])
            p.close()
        c.transport.close()


def main():
    global ARGS, TH
    ap = argparse.ArgumentParser()
    ap.add_argument('--proxy', required=True)
    ap.add_argument('--emu', required=True)
    ap.add_argument('--pydir', required=True)
    ARGS, rest = ap.parse_known_args()
    TH = Thrift(ARGS.pydir)
    unittest.main(argv=[sys.argv[0]] + rest, verbosity=2)


if __name__ == '__main__':
    main()
