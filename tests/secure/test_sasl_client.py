"""test_sasl_client: the proxy's SASL GSSAPI client (daemon/sasl.c) against hbase-emu and hand-made servers, with a real MIT KDC."""
# One run per QOP (--qop).  sasl-driver (tests/secure/sasl_driver.c) runs
# the client state machine over a blocking socket and prints one line per
# step; this script sets up the realm and the servers and reads those
# lines.  Covered: negotiation and calls in the QOP, renewal with a
# connection kept open across it, a QOP the server does not offer, every
# credential failure an operator meets (stale keys, no key, no keytab,
# unknown server principal, a server without the key), servers that
# refuse or do not speak SASL, and frames tampered with after the
# negotiation.

import argparse
import os
import socket
import struct
import subprocess
import sys
import threading

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, '..', 'lib'))
import krb5lib  # noqa: E402
import hsptest  # noqa: E402
from test_sasl import Emu, Failure, check  # noqa: E402

SERVER = 'hbase/localhost'
OTHER_QOP = {'auth': 'auth-conf', 'auth-int': 'auth', 'auth-conf': 'auth-int'}


class FakeServer(threading.Thread):
    """Accepts one connection, reads what the client sends first, then
    answers with reply (bytes) and closes."""

    def __init__(self, reply):
        super().__init__(daemon=True)
        self.ls = socket.socket()
        self.ls.bind(('127.0.0.1', 0))
        self.ls.listen(1)
        self.port = self.ls.getsockname()[1]
        self.reply = reply
        self.start()

    def run(self):
        s, _ = self.ls.accept()
        s.settimeout(10)
        try:
            s.recv(65536)
            if self.reply:
                s.sendall(self.reply)
        except OSError:
            pass
        s.close()
        self.ls.close()


class TamperRelay(threading.Thread):
    """Relays one connection to target; once the server's COMPLETE has
    passed, the server's next bytes go through tamper(bytes) first."""

    def __init__(self, target, tamper):
        super().__init__(daemon=True)
        self.target = target
        self.tamper = tamper
        self.ls = socket.socket()
        self.ls.bind(('127.0.0.1', 0))
        self.ls.listen(1)
        self.port = self.ls.getsockname()[1]
        self.start()

    def run(self):
        a, _ = self.ls.accept()
        b = socket.create_connection(('127.0.0.1', self.target))
        up = threading.Thread(target=self.pipe, args=(a, b), daemon=True)
        up.start()
        buf = b''
        done = False
        try:
            while True:
                data = b.recv(65536)
                if not data:
                    break
                if done:
                    a.sendall(self.tamper(data))
                    continue
                buf += data
                # walk the negotiation messages to the COMPLETE
                while len(buf) >= 5:
                    st, n = struct.unpack('>BI', buf[:5])
                    if len(buf) < 5 + n:
                        break
                    a.sendall(buf[:5 + n])
                    buf = buf[5 + n:]
                    if st == 5:
                        done = True
                        if buf:
                            a.sendall(self.tamper(buf))
                        buf = b''
                        break
        except OSError:
            pass
        a.close()
        b.close()
        self.ls.close()

    @staticmethod
    def pipe(src, dst):
        try:
            while True:
                d = src.recv(65536)
                if not d:
                    break
                dst.sendall(d)
        except OSError:
            pass


class Suite:
    def __init__(self, args, realm):
        self.args = args
        self.qop = args.qop
        self.r = realm
        k = realm.path
        realm.add_principals(SERVER, 'app', 'hbase/otherhost')
        self.server_kt = realm.export(SERVER, k('server.keytab'))
        self.app_kt_stale = realm.export('app', k('app-stale.keytab'))
        self.app_kt = realm.export('app', k('app.keytab'))
        self.emu = Emu(args.emu, realm, self.qop, self.server_kt)

    def driver(self, port=None, principal='app', keytab=None, server=SERVER,
               qop=None, extra=(), rc=None):
        argv = [self.args.driver, '--connect',
                '127.0.0.1:%d' % (port or self.emu.port),
                '--principal', self.r.qualify(principal),
                '--keytab', keytab or self.app_kt,
                '--server', self.r.qualify(server),
                '--qop', qop or self.qop] + list(extra)
        # an empty default cache: the driver must use its keytab only
        env = self.r.env(ccache=self.r.path('nobody.ccache'))
        p = subprocess.run(argv, env=env, capture_output=True, text=True,
                           timeout=60)
        out = p.stdout
        if rc is not None:
            check(p.returncode == rc, 'driver exit %d (want %d): %s%s' % (
                p.returncode, rc, out, p.stderr))
        return out

    def expect_error(self, out, kind, *words):
        line = next((ln for ln in out.splitlines()
                     if ln.startswith('error ')), None)
        check(line is not None, 'no error line in %r' % out)
        check(line.startswith('error %s:' % kind),
              'expected a %s error, got %r' % (kind, line))
        for w in words:
            check(w in line, 'expected %r in %r' % (w, line))
        return line

    # -- the good path ----------------------------------------------------
    def test_round_trip(self):
        out = self.driver(extra=['--calls', '5'], rc=0)
        check('ok negotiated %s with %s' % (self.qop, self.r.qualify(SERVER))
              in out, out)
        check('ok 5 calls' in out, out)
        check(self.emu.wait_log('effective user: app'),
              'the emulator did not see user app')

    def test_renewal(self):
        out = self.driver(extra=['--renew'], rc=0)
        check('ok renewed: expiry later' in out, out)
        check('ok new and old connections after renewal' in out, out)

    def test_max_message(self):
        # a reply over the limit is refused, not buffered
        out = self.driver(extra=['--max', '30'], rc=1)
        self.expect_error(out, 'protocol', 'at most 30')

    # -- refusals -------------------------------------------------------
    def test_qop_not_offered(self):
        other = OTHER_QOP[self.qop]
        out = self.driver(qop=other, rc=1)
        self.expect_error(out, 'refused', 'requires SASL protection %s' %
                          self.qop, 'the proxy asks for %s' % other,
                          'sasl_qop')

    def test_stale_keytab(self):
        out = self.driver(keytab=self.app_kt_stale, rc=1)
        line = self.expect_error(out, 'credentials', 'app@' + self.r.realm,
                                 self.app_kt_stale)
        check('keys are not the KDC' in line, line)
        check(('then: error credentials: ' + line[len('error credentials: '):])
              in out, 'the context did not report the same cause: ' + out)

    def test_keytab_without_principal(self):
        out = self.driver(keytab=self.server_kt, rc=1)
        self.expect_error(out, 'credentials', 'holds no key',
                          'sasl_principal')

    def test_no_keytab(self):
        missing = self.r.path('missing.keytab')
        out = self.driver(keytab=missing, rc=1)
        self.expect_error(out, 'credentials', missing)

    def test_unknown_server_principal(self):
        out = self.driver(server='hbase/nosuchhost', rc=1)
        self.expect_error(out, 'context', 'hbase/nosuchhost@' + self.r.realm,
                          'not found in Kerberos database',
                          'knows no such server principal')

    def test_server_without_key(self):
        # a valid ticket for a principal the server has no key of
        out = self.driver(server='hbase/otherhost', rc=1)
        self.expect_error(out, 'refused', 'refused the SASL negotiation '
                          '(BAD): GSS initiate failed')

    def test_refusing_server(self):
        srv = FakeServer(struct.pack('>BI', 4, 9) + b'go away\x01\x02')
        out = self.driver(port=srv.port, rc=1)
        self.expect_error(out, 'refused', '(ERROR): go away\\x01\\x02')

    def test_not_sasl(self):
        srv = FakeServer(bytes([0x80, 1, 0, 3]) + b'\0' * 20)
        out = self.driver(port=srv.port, rc=1)
        self.expect_error(out, 'protocol', 'does not speak SASL',
                          'status byte 0x80')

    def test_huge_token(self):
        srv = FakeServer(struct.pack('>BI', 2, 0x7fffffff))
        out = self.driver(port=srv.port, rc=1)
        self.expect_error(out, 'protocol', '2147483647 bytes',
                          'at most 1048576')

    def test_closed(self):
        srv = FakeServer(b'')
        out = self.driver(port=srv.port, rc=1)
        check('closed during negotiation' in out, out)

    def test_tampered_frames(self):
        cases = [
            ('negative length', lambda d: struct.pack('>i', -7) + d[4:],
             'protocol', 'negative length (-7)'),
            ('oversized', lambda d: struct.pack('>I', 0x7ffffff0) + d[4:],
             'protocol', 'at most'),
        ]
        if self.qop != 'auth':
            cases.append(('flipped bit',
                          lambda d: d[:-1] + bytes([d[-1] ^ 1]),
                          'context', 'fails its check'))
        for name, fn, kind, word in cases:
            relay = TamperRelay(self.emu.port, fn)
            out = self.driver(port=relay.port, rc=1)
            check('ok negotiated' in out, '%s: %s' % (name, out))
            self.expect_error(out, kind, word)

    def run(self):
        return hsptest.run_cases(self)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--emu', required=True)
    ap.add_argument('--driver', required=True)
    ap.add_argument('--qop', choices=sorted(OTHER_QOP), required=True)
    args = ap.parse_args()
    with krb5lib.Realm() as realm:
        suite = Suite(args, realm)
        failed = ['(crashed)']
        try:
            failed = suite.run()
        finally:
            log = suite.emu.log_text()
            rc = suite.emu.stop()
            if rc != 0:
                failed.append('emulator exit status %s' % rc)
            if failed:
                print('--- hbase-emu log ---\n' + log[-4000:])
    if failed:
        print('%d failed: %s' % (len(failed), ', '.join(failed)))
        return 1
    return 0


if __name__ == '__main__':
    sys.exit(main())
