"""test_sasl: hbase-emu's SASL GSSAPI mode against a real MIT KDC, through python3-thrift's SASL client and through raw negotiation bytes."""
# One run per QOP (--qop).  Each starts its own realm and emulator, then:
# round trips over TSaslClientTransport (Thrift1 and the Thrift2
# listener); a loopback relay that records the wire, to show what
# auth-conf hides; every refusal the server must make
# (no ticket, stale keys on either side, another service's ticket, a QOP
# it does not offer, impersonation, broken negotiation, tampered or
# replayed frames), each followed by a good client to show the server
# still serves.

import argparse
import base64
import os
import select
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, '..', 'lib'))
import krb5lib  # noqa: E402
import hsptest  # noqa: E402
from hsptest import Failure, check  # noqa: E402,F401

START, OK, BAD, ERROR, COMPLETE = 1, 2, 3, 4, 5
LAYER = {'auth': 1, 'auth-int': 2, 'auth-conf': 4}
SERVER = 'hbase/localhost'

Hbase = T = TSocket = TTransport = TBinaryProtocol = kerberos = None


def load_kerberos():
    global kerberos
    import kerberos as _k
    kerberos = _k
    patch_puresasl()


def patch_puresasl():
    """pure-sasl 0.5.1 (bookworm) hands python3-kerberos bytes where it
    takes str in GSSAPIMechanism.wrap ("TypeError: argument 2 must be
    str, not bytes"), so auth-int and auth-conf fail on the first call.
    Replace that one method with the same logic, string-typed."""
    from puresasl import mechanisms, QOP

    def wrap(self, outgoing):
        if self.qop == QOP.AUTH:
            return outgoing
        kerberos.authGSSClientWrap(
            self.context, base64.b64encode(outgoing).decode('ascii'), None,
            1 if self.qop == QOP.AUTH_CONF else 0)
        return base64.b64decode(kerberos.authGSSClientResponse(self.context))

    mechanisms.GSSAPIMechanism.wrap = wrap


# ---------------------------------------------------------------------------
# the emulator

class Emu(hsptest.Emu):
    def __init__(self, binary, realm, qop, keytab, principal=None):
        super().__init__(binary, tempfile.mkdtemp(prefix='hsp-sasl-emu-',
                                                  dir=realm.dir),
                         ['--sasl-qop', qop, '--keytab', keytab,
                          '--principal', realm.qualify(principal or SERVER),
                          '--create-table', 't:f'],
                         thrift2=True, env=realm.env(), log_mode='wb',
                         timeout=15, probe=False)

    def wait_log(self, text, timeout=5):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if text in self.log_text():
                return True
            time.sleep(0.05)
        return False

    def stop(self):
        """Returns the exit status: 0 after SIGTERM unless the process
        crashed or a sanitizer reported at exit."""
        return super().stop(killed=-9)


# ---------------------------------------------------------------------------
# clients

def sasl_client(port, qop, host='localhost', authzid=None):
    """An open Hbase client over TSaslClientTransport (pure-sasl)."""
    sock = TSocket.TSocket('127.0.0.1', port)
    sock.setTimeout(10000)
    kw = {'qops': [qop.encode()]}
    if authzid is not None:
        kw['authorization_id'] = authzid
    tr = TTransport.TSaslClientTransport(sock, host, 'hbase', **kw)
    try:
        tr.open()
    except BaseException:
        sock.close()
        raise
    return Hbase.Client(TBinaryProtocol.TBinaryProtocol(tr)), tr


def expect_refused(fn, *words):
    """fn must fail, with every one of words in the error."""
    try:
        fn()
    except Exception as e:  # noqa: BLE001 - any client-side error counts
        text = '%s: %s' % (type(e).__name__, e)
        for w in words:
            check(w in text, 'expected %r in the error, got %r' % (w, text))
        return text
    raise Failure('expected a refusal (%s), the call succeeded' %
                  ', '.join(words))


def call_bytes(method, *args):
    """One Thrift1 call as it goes on the wire, with seqid 0."""
    buf = TTransport.TMemoryBuffer()
    c = Hbase.Client(TBinaryProtocol.TBinaryProtocol(buf))
    getattr(c, 'send_' + method)(*args)
    return buf.getvalue()


def reply_value(method, data):
    c = Hbase.Client(TBinaryProtocol.TBinaryProtocol(
        TTransport.TMemoryBuffer(data)))
    return getattr(c, 'recv_' + method)()


def recv_exact(s, n):
    out = b''
    while len(out) < n:
        chunk = s.recv(n - len(out))
        if not chunk:
            raise EOFError('closed after %d of %d bytes' % (len(out), n))
        out += chunk
    return out


def send_msg(s, status, payload):
    s.sendall(struct.pack('>BI', status, len(payload)) + payload)


def recv_msg(s):
    status, length = struct.unpack('>BI', recv_exact(s, 5))
    return status, recv_exact(s, length)


def closed_by_peer(s, timeout=5):
    """True once the server has closed s without sending anything more."""
    s.settimeout(timeout)
    try:
        return s.recv(1) == b''
    except ConnectionResetError:
        return True
    except socket.timeout:
        return False


class RawSession:
    """The negotiation by hand over python3-kerberos, so a test can choose
    what pure-sasl never would (a layer not offered, a bad frame)."""

    def __init__(self, port, host='localhost'):
        self.s = socket.create_connection(('127.0.0.1', port), timeout=10)
        flags = (kerberos.GSS_C_MUTUAL_FLAG | kerberos.GSS_C_SEQUENCE_FLAG |
                 kerberos.GSS_C_INTEG_FLAG | kerberos.GSS_C_CONF_FLAG)
        _, self.ctx = kerberos.authGSSClientInit('hbase@' + host,
                                                 gssflags=flags)
        self.offer = None

    def step(self, token):
        kerberos.authGSSClientStep(self.ctx,
                                   base64.b64encode(token).decode('ascii'))
        r = kerberos.authGSSClientResponse(self.ctx)
        return base64.b64decode(r) if r else b''

    def wrap(self, data, conf):
        kerberos.authGSSClientWrap(
            self.ctx, base64.b64encode(data).decode('ascii'), None,
            1 if conf else 0)
        return base64.b64decode(kerberos.authGSSClientResponse(self.ctx))

    def unwrap(self, data):
        kerberos.authGSSClientUnwrap(self.ctx,
                                     base64.b64encode(data).decode('ascii'))
        return (base64.b64decode(kerberos.authGSSClientResponse(self.ctx)),
                kerberos.authGSSClientResponseConf(self.ctx))

    def negotiate(self, choose=None, authzid=None):
        """Runs to the client's choice; returns the server's last
        (status, payload).  choose: layer byte (default: what is offered)."""
        send_msg(self.s, START, b'GSSAPI')
        send_msg(self.s, OK, self.step(b''))
        status, payload = recv_msg(self.s)
        check(status == OK, 'expected OK with the AP-REP, got %d %r' %
              (status, payload))
        check(self.step(payload) == b'', 'mutual auth left a token')
        send_msg(self.s, OK, b'')
        status, payload = recv_msg(self.s)
        check(status == OK, 'expected OK with the offer, got %d' % status)
        offer, conf = self.unwrap(payload)
        check(len(offer) == 4 and conf == 0,
              'offer: 4 bytes, integrity only (got %r, conf %d)' %
              (offer, conf))
        self.offer = offer
        layer = offer[0] if choose is None else choose
        name = kerberos.authGSSClientUserName(self.ctx)
        who = (authzid or name).encode()
        choice = bytes([layer]) + offer[1:4] + who
        send_msg(self.s, OK, self.wrap(choice, False))
        return recv_msg(self.s)

    def send_frame(self, payload):
        self.s.sendall(struct.pack('>i', len(payload)) + payload)

    def recv_frame(self):
        (n,) = struct.unpack('>i', recv_exact(self.s, 4))
        return recv_exact(self.s, n)

    def close(self):
        kerberos.authGSSClientClean(self.ctx)
        self.s.close()


class Relay(threading.Thread):
    """A loopback relay that records every byte both ways."""

    def __init__(self, port):
        super().__init__(daemon=True)
        self.target = port
        self.ls = socket.socket()
        self.ls.bind(('127.0.0.1', 0))
        self.ls.listen(1)
        self.port = self.ls.getsockname()[1]
        self.wire = bytearray()
        self.start()

    def run(self):
        a, _ = self.ls.accept()
        b = socket.create_connection(('127.0.0.1', self.target))
        peer = {a: b, b: a}
        while True:
            r, _, _ = select.select([a, b], [], [], 30)
            if not r:
                break
            done = False
            for s in r:
                data = s.recv(65536)
                if not data:
                    done = True
                    break
                self.wire += data
                peer[s].sendall(data)
            if done:
                break
        a.close()
        b.close()
        self.ls.close()


# ---------------------------------------------------------------------------
# the tests

class Suite:
    def __init__(self, args, realm):
        self.args = args
        self.qop = args.qop
        self.realm = realm
        self.r = realm
        # Keys made once per run.  The stale keytabs hold the keys that a
        # second ktadd of the same principal replaced.
        k = realm.path
        realm.add_principals(SERVER, 'app', 'hbase/otherhost')
        self.server_kt_stale = realm.export(SERVER, k('server-stale.keytab'))
        self.server_kt = realm.export(SERVER, k('server.keytab'))
        self.app_kt_stale = realm.export('app', k('app-stale.keytab'))
        self.app_kt = realm.export('app', k('app.keytab'))
        self.app_cc = realm.kinit('app', self.app_kt)
        self.emu = Emu(args.emu, realm, self.qop, self.server_kt)

    def use_ccache(self, path):
        os.environ.update(self.r.env(ccache=path))

    def good_client_works(self, emu=None):
        emu = emu or self.emu
        check(emu.alive(), 'hbase-emu died: ' + emu.log_text()[-2000:])
        self.use_ccache(self.app_cc)
        c, tr = sasl_client(emu.port, self.qop)
        try:
            check(b't' in c.getTableNames(), 'getTableNames lacks t')
        finally:
            tr.close()

    # -- round trips ------------------------------------------------------
    def test_round_trip(self):
        self.use_ccache(self.app_cc)
        c, tr = sasl_client(self.emu.port, self.qop)
        M = T.Mutation
        big = os.urandom(200000)   # several times the 64 KiB SASL buffer
        for i in range(20):
            c.mutateRow(b't', b'row%02d' % i,
                        [M(column=b'f:q', value=b'v%d' % i)], {})
        c.mutateRow(b't', b'big', [M(column=b'f:b', value=big)], {})
        got = c.getRow(b't', b'row07', {})
        check(len(got) == 1 and got[0].columns[b'f:q'].value == b'v7',
              'getRow row07: %r' % got)
        got = c.getRow(b't', b'big', {})
        check(got[0].columns[b'f:b'].value == big, 'big value differs')
        sid = c.scannerOpenWithStop(b't', b'row00', b'row99', [b'f:q'], {})
        rows = []
        while True:
            batch = c.scannerGetList(sid, 7)
            if not batch:
                break
            rows += [r.row for r in batch]
        c.scannerClose(sid)
        check(rows == [b'row%02d' % i for i in range(20)],
              'scan returned %r' % rows)
        # a second connection at the same time, on the same credentials
        c2, tr2 = sasl_client(self.emu.port, self.qop)
        check(c2.getRow(b't', b'row03', {})[0].columns[b'f:q'].value ==
              b'v3', 'second connection getRow')
        check(c.getRow(b't', b'row04', {})[0].columns[b'f:q'].value ==
              b'v4', 'first connection after the second')
        tr2.close()
        tr.close()
        check(self.emu.wait_log('effective user: app'),
              'no "effective user: app" in the log')

    def test_thrift2_listener(self):
        # HBase's thrift2 server shares the thrift1 server's transport
        # setup, SASL included; the rows are the same tables'
        from hbase2 import THBaseService, ttypes as T2
        self.use_ccache(self.app_cc)
        sock = TSocket.TSocket('127.0.0.1', self.emu.port2)
        sock.setTimeout(10000)
        tr = TTransport.TSaslClientTransport(sock, 'localhost', 'hbase',
                                             qops=[self.qop.encode()])
        tr.open()
        c = THBaseService.Client(TBinaryProtocol.TBinaryProtocol(tr))
        c.put(b't', T2.TPut(row=b't2row', columnValues=[
            T2.TColumnValue(b'f', b'q', b'from-thrift2')]))
        got = c.get(b't', T2.TGet(row=b't2row'))
        check([cv.value for cv in got.columnValues] == [b'from-thrift2'],
              'thrift2 get: %r' % got)
        tr.close()
        c1, tr1 = sasl_client(self.emu.port, self.qop)
        check(c1.getRow(b't', b't2row', {})[0].columns[b'f:q'].value ==
              b'from-thrift2', 'thrift1 read of a thrift2 write')
        tr1.close()
        expect_refused(lambda: sasl_client(self.emu.port2, self.qop,
                                           host='otherhost'),
                       'GSS initiate failed')

    def test_wire_privacy(self):
        marker = b'PLAINTEXT-MARKER-' + os.urandom(6).hex().encode()
        row = b'secret-row-' + os.urandom(4).hex().encode()
        relay = Relay(self.emu.port)
        self.use_ccache(self.app_cc)
        c, tr = sasl_client(relay.port, self.qop)
        c.mutateRow(b't', row, [T.Mutation(column=b'f:q', value=marker)],
                    {})
        check(c.getRow(b't', row, {})[0].columns[b'f:q'].value == marker,
              'round trip through the relay')
        tr.close()
        relay.join(10)
        wire = bytes(relay.wire)
        check(len(wire) > 200, 'relay saw only %d bytes' % len(wire))
        seen = marker in wire or row in wire
        if self.qop == 'auth-conf':
            check(not seen, 'auth-conf: row or value in clear on the wire')
        else:
            # the control: the capture does see what is not sealed
            check(seen, '%s: expected the value in clear on the wire' %
                  self.qop)

    # -- refusals -----------------------------------------------------------
    def test_no_ticket(self):
        self.use_ccache(self.r.path('nobody.ccache'))
        expect_refused(lambda: sasl_client(self.emu.port, self.qop),
                       'No Kerberos credentials available')
        self.good_client_works()

    def test_stale_client_keytab(self):
        # the KDC answers with the current key, which the stale keytab
        # cannot decrypt: no ticket, so no connection either
        try:
            self.r.kinit('app', self.app_kt_stale,
                         ccache=self.r.path('stale.ccache'))
        except krb5lib.Krb5Error as e:
            check('while getting initial credentials' in str(e),
                  'kinit error: %s' % e)
        else:
            raise Failure('kinit with a stale keytab succeeded')
        self.good_client_works()

    def test_other_service_ticket(self):
        # a valid ticket for hbase/otherhost: the server holds only
        # hbase/localhost's key and must refuse it
        self.use_ccache(self.app_cc)
        expect_refused(lambda: sasl_client(self.emu.port, self.qop,
                                           host='otherhost'),
                       'GSS initiate failed')
        check(self.emu.wait_log('authentication failed'),
              'no authentication failure logged')
        self.good_client_works()

    def test_stale_server_keytab(self):
        emu = Emu(self.args.emu, self.r, self.qop, self.server_kt_stale)
        try:
            self.use_ccache(self.app_cc)
            expect_refused(lambda: sasl_client(emu.port, self.qop),
                           'GSS initiate failed')
            # the cause, in MIT's words, is the server's to log
            check(emu.wait_log('kvno') or emu.wait_log('key'),
                  'the log does not say why: ' + emu.log_text()[-1000:])
            check(emu.alive(), 'emulator with stale keys died')
        finally:
            rc = emu.stop()
        check(rc == 0, 'emulator with stale keys exited %s' % rc)

    def test_qop_not_offered(self):
        self.use_ccache(self.app_cc)
        other = 'auth' if self.qop != 'auth' else 'auth-conf'
        # pure-sasl refuses on its side once it sees the offer
        expect_refused(lambda: sasl_client(self.emu.port, other),
                       'the server is offering (%s)' % self.qop)
        # a client that selects it anyway is refused by the server
        for layer in sorted(set(LAYER.values()) - {LAYER[self.qop]}):
            raw = RawSession(self.emu.port)
            try:
                st, msg = raw.negotiate(choose=layer)
                check(raw.offer[0] == LAYER[self.qop],
                      'offered %d, configured %s' % (raw.offer[0],
                                                     self.qop))
                check(st == BAD and msg ==
                      b'Client selected unsupported protection: %d' % layer,
                      'choosing %d: got %d %r' % (layer, st, msg))
                check(closed_by_peer(raw.s), 'not closed after BAD')
            finally:
                raw.close()
        self.good_client_works()

    def test_impersonation(self):
        self.use_ccache(self.app_cc)
        who = self.r.qualify('hbase')
        expect_refused(lambda: sasl_client(self.emu.port, self.qop,
                                           authzid=who),
                       'app@%s is not authorized to connect as %s' %
                       (self.r.realm, who))
        self.good_client_works()

    def test_broken_negotiation(self):
        port = self.emu.port
        cases = [
            # a client without SASL: its version word reads as status -128
            (call_bytes('getTableNames'), ERROR, b'Invalid status -128'),
            (struct.pack('>BI', START, 5) + b'PLAIN', BAD,
             b'Unsupported mechanism type PLAIN'),
            (struct.pack('>BI', OK, 6) + b'GSSAPI', ERROR,
             b'Expecting START status, received OK'),
            (struct.pack('>BI', START, 6) + b'GSSAPI' +
             struct.pack('>BI', OK, 16) + b'not a GSS token!', BAD,
             b'GSS initiate failed'),
            (struct.pack('>BI', START, 6) + b'GSSAPI' +
             struct.pack('>BI', START, 0), ERROR,
             b'Expected COMPLETE or OK, got START'),
            (struct.pack('>BI', START, 0x7fffffff), ERROR,
             b'Invalid payload header length: 2147483647'),
            (struct.pack('>BI', START, 0xffffffff), ERROR,
             b'Invalid payload header length: -1'),
        ]
        for data, status, text in cases:
            s = socket.create_connection(('127.0.0.1', port), timeout=10)
            try:
                s.sendall(data)
                st, msg = recv_msg(s)
                check((st, msg) == (status, text),
                      'sent %r: expected %d %r, got %d %r' %
                      (data[:24], status, text, st, msg))
                check(closed_by_peer(s), 'not closed after %r' % text)
            finally:
                s.close()
        # a client that gives up (BAD) or hangs up mid-way gets nothing
        for data in (struct.pack('>BI', BAD, 4) + b'nope',
                     struct.pack('>BI', START, 6) + b'GSS'):
            s = socket.create_connection(('127.0.0.1', port), timeout=10)
            s.sendall(data)
            s.shutdown(socket.SHUT_WR)
            check(closed_by_peer(s), 'no close after %r' % data)
            s.close()
        self.good_client_works()

    def test_bad_frames(self):
        """After COMPLETE: forged, replayed, unsealed and oversized frames
        close that connection, and only that one."""
        self.use_ccache(self.app_cc)
        conf = self.qop == 'auth-conf'
        wrapped = self.qop != 'auth'

        def session():
            raw = RawSession(self.emu.port)
            st, msg = raw.negotiate()
            check(st == COMPLETE and msg == b'', 'raw negotiation: %d %r' %
                  (st, msg))
            return raw

        call = call_bytes('getTableNames')
        raw = session()
        frame = raw.wrap(call, conf) if wrapped else call
        raw.send_frame(frame)
        reply = raw.recv_frame()
        if wrapped:
            reply, rconf = raw.unwrap(reply)
            check(rconf == (1 if conf else 0),
                  'reply sealed=%d under %s' % (rconf, self.qop))
        check(b't' in reply_value('getTableNames', reply),
              'raw getTableNames')
        # a message split over two frames is still one message
        half = len(call) // 2
        for part in (call[:half], call[half:]):
            raw.send_frame(raw.wrap(part, conf) if wrapped else part)
        reply = raw.recv_frame()
        if wrapped:
            reply = raw.unwrap(reply)[0]
        check(b't' in reply_value('getTableNames', reply),
              'message over two frames')
        if wrapped:
            raw.send_frame(frame)      # the first frame again: a replay
            check(closed_by_peer(raw.s), 'replayed frame not refused')
        raw.close()
        check(not wrapped or self.emu.wait_log('unwrap'),
              'replay not logged')

        if wrapped:
            raw = session()
            forged = bytearray(raw.wrap(call, conf))
            forged[-1] ^= 0x01
            raw.send_frame(bytes(forged))
            check(closed_by_peer(raw.s), 'forged frame not refused')
            raw.close()
        if conf:
            raw = session()
            raw.send_frame(raw.wrap(call, False))
            check(closed_by_peer(raw.s), 'unsealed frame not refused')
            raw.close()
            check(self.emu.wait_log('Privacy not protected'),
                  'unsealed frame not logged')
        raw = session()
        raw.s.sendall(struct.pack('>i', -5))
        check(closed_by_peer(raw.s), 'negative frame length not refused')
        raw.close()
        raw = session()
        raw.s.sendall(struct.pack('>i', 0x7ffffff0))
        check(closed_by_peer(raw.s), 'oversized frame not refused')
        raw.close()
        self.good_client_works()

    def test_framed_refused(self):
        p = subprocess.run([self.args.emu, '--listen', '127.0.0.1:0',
                            '--framed', '--sasl-qop', self.qop, '--keytab',
                            self.server_kt, '--principal',
                            self.r.qualify(SERVER)],
                           env=self.r.env(), capture_output=True, text=True,
                           timeout=10)
        check(p.returncode == 2 and "doesn't work with framed transport"
              in p.stderr, 'framed + SASL: %d %s' % (p.returncode,
                                                     p.stderr))

    def run(self):
        failed = hsptest.run_cases(self)
        # nothing from the keys may reach the log; the realm's key files
        # are the only place their bytes are
        log = self.emu.log_text()
        for word in ('key:', 'session key', 'keyblock'):
            if word in log.lower():
                failed.append('log-hygiene')
                print('FAIL log mentions %r' % word)
        return failed


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--emu', required=True)
    ap.add_argument('--pydir', required=True)
    ap.add_argument('--qop', choices=sorted(LAYER), required=True)
    args = ap.parse_args()
    hsptest.import_thrift(args.pydir, globals())
    load_kerberos()
    t0 = time.monotonic()
    with krb5lib.Realm() as realm:
        print('realm %s: KDC on 127.0.0.1:%d in %.2fs' %
              (realm.realm, realm.port, realm.started_in))
        suite = Suite(args, realm)
        print('principals, keytabs and a ticket in %.2fs' %
              (time.monotonic() - t0 - realm.started_in))
        failed = ['(crashed)']
        try:
            failed = suite.run()
        finally:
            log = suite.emu.log_text()
            rc = suite.emu.stop()
            if rc != 0:
                failed.append('exit status %s' % rc)
            if failed:
                print('--- hbase-emu log ---\n' + log[-6000:])
    if failed:
        print('%d failed: %s' % (len(failed), ', '.join(failed)))
        return 1
    return 0


if __name__ == '__main__':
    sys.exit(main())
