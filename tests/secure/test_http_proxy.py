"""The proxy with [backend] transport = http in front of hbase-emu's HTTP
mode (HBase's `hbase thrift -http`): plain HTTP, HTTPS verified against a
per-run CA (a wrong CA and a wrong host name refused), SPNEGO with the
proxy's keytab against a throwaway MIT KDC (a stale keytab refused with
the cause), and doAs with and without the server's proxyuser support.

  /usr/bin/python3 tests/secure/test_http_proxy.py --proxy BUILD/daemon/hbase-salt-proxy \\
      --emu BUILD/tests/emu/hbase-emu --pydir BUILD/thrift/py
"""

import argparse
import os
import shutil
import select
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, '..', 'e2e'))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                '..', 'lib'))
import hsptest  # noqa: E402
from hsptest import can_connect, free_port, wait_for  # noqa: E402
import krb5lib  # noqa: E402
import test_tls_listener as tlsl  # noqa: E402
from test_tls_listener import get, put  # noqa: E402

ARGS = None
Hbase = T = TSocket = TTransport = TBinaryProtocol = None
REALM = None
KT = {}


def client(port):
    return hsptest.client(port, timeout=20.0)


def text_of(e):
    m = getattr(e, 'message', None) or str(e)
    return m.decode() if isinstance(m, bytes) else str(m)


def sockets_of(pid):
    """The socket inodes pid holds."""
    out = set()
    d = '/proc/%d/fd' % pid
    for fd in os.listdir(d):
        try:
            t = os.readlink(os.path.join(d, fd))
        except OSError:
            continue
        if t.startswith('socket:['):
            out.add(t[8:-1])
    return out


def unix_inodes():
    with open('/proc/net/unix') as f:
        return {line.split()[6] for line in list(f)[1:]
                if len(line.split()) > 6}


def tcp_inodes_to(port):
    out = set()
    for path in ('/proc/net/tcp', '/proc/net/tcp6'):
        with open(path) as f:
            for line in list(f)[1:]:
                cols = line.split()
                if int(cols[2].split(':')[1], 16) == port:
                    out.add(cols[9])
    return out


class JettyShape(object):
    """An HTTP front for the emulator that answers as Jetty can: every
    reply chunked (small chunks, a trailer, the
    pieces in separate writes), and Connection: close after every fifth reply on a connection (then it
    closes).  A call on the row refused-row is answered 500 with Jetty's
    error page.  bad_length: every reply claims a Content-Length over any
    max_frame_size instead (to a call on the row bad-row).  A call on the
    row extra-row is answered, then sent a whole 500 reply no call asked
    for, in the same write.  It counts the requests that arrived while one
    of the same connection was unanswered (HTTP pipelining)."""

    def __init__(self, emu_port, bad_length=False):
        self.emu_port = emu_port
        self.bad_length = bad_length
        self.overlapped = 0
        self.requests = 0
        self.lsock = socket.socket()
        self.lsock.bind(('127.0.0.1', 0))
        self.lsock.listen(64)
        self.port = self.lsock.getsockname()[1]
        self.done = False
        threading.Thread(target=self.accept, daemon=True).start()

    def accept(self):
        while not self.done:
            try:
                r, _, _ = select.select([self.lsock], [], [], 0.1)
                if not r:
                    continue
                a, _ = self.lsock.accept()
            except (OSError, ValueError):
                return   # closed
            threading.Thread(target=self.serve, args=(a,),
                             daemon=True).start()

    @staticmethod
    def read_request(a, buf):
        while b'\r\n\r\n' not in buf:
            d = a.recv(65536)
            if not d:
                return None, buf
            buf += d
        head, buf = buf.split(b'\r\n\r\n', 1)
        n = 0
        for line in head.split(b'\r\n')[1:]:
            k, v = line.split(b':', 1)
            if k.strip().lower() == b'content-length':
                n = int(v)
        while len(buf) < n:
            d = a.recv(65536)
            if not d:
                return None, buf
            buf += d
        return (head, buf[:n]), buf[n:]

    def serve(self, a):
        a.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        b = socket.create_connection(('127.0.0.1', self.emu_port))
        buf, back, served = b'', b'', 0
        try:
            while True:
                req, buf = self.read_request(a, buf)
                if req is None:
                    return
                self.requests += 1
                head, body = req
                b.sendall(head + b'\r\n\r\n' + body)
                # the emulator answers with a Content-Length
                while b'\r\n\r\n' not in back:
                    back += b.recv(65536)
                rhead, back = back.split(b'\r\n\r\n', 1)
                n = [int(line.split(b':', 1)[1]) for line in
                     rhead.split(b'\r\n')
                     if line.lower().startswith(b'content-length:')][0]
                while len(back) < n:
                    back += b.recv(65536)
                rbody, back = back[:n], back[n:]
                time.sleep(0.01)
                r, _, _ = select.select([a], [], [], 0)
                if r:
                    self.overlapped += 1
                served += 1
                last = served % 5 == 0
                status = rhead.split(b'\r\n')[0]
                if b'refused-row' in body:
                    page = (b'<html><body><h2>HTTP ERROR 500</h2>\n<pre>'
                            b'no region for refused-row</pre></body></html>')
                    a.sendall(b'HTTP/1.1 500 Server Error\r\nContent-Type: '
                              b'text/html\r\nContent-Length: %d\r\n\r\n'
                              % len(page) + page)
                    continue
                if b'extra-row' in body:
                    # the reply, then a whole second one no call asked
                    # for, in one write (one read at the proxy)
                    page = b'<html><body>HTTP ERROR 500</body></html>'
                    a.sendall(status + b'\r\nContent-Type: application/'
                              b'x-thrift\r\nContent-Length: %d\r\n\r\n'
                              % len(rbody) + rbody +
                              b'HTTP/1.1 500 Server Error\r\nContent-'
                              b'Length: %d\r\n\r\n' % len(page) + page)
                    continue
                if self.bad_length and b'bad-row' in body:
                    a.sendall(status + b'\r\nContent-Length: '
                              b'99999999999\r\n\r\n')
                    continue
                pieces = []
                pieces.append(status + b'\r\nContent-Type: '
                              b'application/x-thrift\r\n'
                              b'Transfer-Encoding: chunked\r\n' +
                              (b'Connection: close\r\n' if last else b'')
                              + b'\r\n')
                for i in range(0, len(rbody), 7):
                    c = rbody[i:i + 7]
                    pieces.append(b'%x\r\n' % len(c) + c + b'\r\n')
                pieces.append(b'0\r\nX-Trailer: 1\r\n\r\n')
                for p in pieces:
                    a.sendall(p)
                    time.sleep(0.001)
                if last:
                    return
        except OSError:
            pass
        finally:
            a.close()
            b.close()

    def close(self):
        self.done = True
        self.lsock.close()


class Case(object):
    """An emulator in HTTP mode and a proxy in front of it (through front,
    a JettyShape's options, when given)."""

    def __init__(self, workdir, emu_args=(), backend='', host='127.0.0.1',
                 kerberos=False, front=None):
        self.workdir = workdir
        self.procs = []
        self.emu_port = free_port()
        env = REALM.env() if kerberos else None
        self.spawn('emu', [ARGS.emu, '--listen', '127.0.0.1:%d'
                           % self.emu_port, '--http', '--create-table', 't:d']
                   + list(emu_args), self.emu_port, env)
        self.front = None
        backend_port = self.emu_port
        if front is not None:
            self.front = JettyShape(self.emu_port, **front)
            backend_port = self.front.port
        self.port = free_port()
        self.conf = os.path.join(workdir, 'proxy.conf')
        with open(self.conf, 'w') as f:
            f.write('[proxy]\nlisten = 127.0.0.1:%d\nworkers = 2\n'
                    '[backend]\nservers = %s:%d\ntransport = http\n'
                    'connect_timeout_ms = 1000\nrequest_timeout_ms = 5000\n'
                    'pool_size = 4\n%s'
                    '[catalog]\nstate_dir = %s\n'
                    '[table:t]\nbuckets = 8\n'
                    % (self.port, host, backend_port, backend,
                       os.path.join(workdir, 'state')))
        penv = REALM.env(ccache=REALM.path('nobody.ccache')) \
            if kerberos else None
        self.log_path = os.path.join(workdir, 'proxy.log')
        self.spawn('proxy', [ARGS.proxy, '-c', self.conf], self.port, penv)

    def spawn(self, name, argv, port, env):
        log = open(os.path.join(self.workdir, name + '.log'), 'ab')
        p = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT,
                             env=env)
        self.procs.append((p, log))
        wait_for(lambda: can_connect(port) or p.poll() is not None, 15,
                 name + ' listening')
        assert p.poll() is None, '%s exited at start' % name

    def text(self, name='proxy'):
        with open(os.path.join(self.workdir, name + '.log'),
                  errors='replace') as f:
            return f.read()

    def close(self):
        """Whether every process lived to the end and the proxy stopped
        cleanly (under ASan: without a leak or an error)."""
        alive = all(p.poll() is None for p, _ in self.procs)
        if self.front is not None:
            self.front.close()
        for p, log in reversed(self.procs):
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
                try:
                    p.wait(15)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait()
            log.close()
        return alive and self.procs[-1][0].returncode == 0


class HttpBackendTest(unittest.TestCase):
    def setUp(self):
        self.workdir = tempfile.mkdtemp(prefix='hsp-http-backend-')
        self.case = None

    def tearDown(self):
        if self.case is not None:
            self.assertTrue(self.case.close(), 'a process died; logs in '
                            + self.workdir)
        if not os.environ.get('HSP_KEEP_LOGS'):
            shutil.rmtree(self.workdir, ignore_errors=True)

    def roundtrip(self):
        c = client(self.case.port)
        keys = [b'k%03d' % i for i in range(40)]
        for k in keys:
            put(c, k, b'v-' + k)
        sid = c.scannerOpenWithScan(b't', T.TScan(caching=5), {})
        rows = []
        while True:
            b = c.scannerGetList(sid, 7)
            if not b:
                break
            rows += [r.row for r in b]
        c.scannerClose(sid)
        self.assertEqual(rows, keys)
        self.assertEqual(c.getRow(b't', b'k007', {})[0].columns[b'd:q'].value,
                         b'v-k007')
        return c

    def stored(self, scheme='http'):
        """The emulator's own rows of t, read straight over HTTP."""
        from thrift.transport import THttpClient
        import ssl
        tr = THttpClient.THttpClient('%s://localhost:%d/'
                                     % (scheme, self.case.emu_port),
                                     cafile=tlsl.p('ca.pem')
                                     if scheme == 'https' else None)
        c = Hbase.Client(TBinaryProtocol.TBinaryProtocol(tr))
        tr.open()
        sid = c.scannerOpenWithScan(b't', T.TScan(), {})
        rows = [r.row for r in c.scannerGetList(sid, 1000)]
        del ssl
        return rows

    def test_http(self):
        self.case = Case(self.workdir)
        self.roundtrip()
        stored = self.stored()
        self.assertEqual(len(stored), 40)
        self.assertNotIn(b'k007', stored)
        self.assertIn('registered table t', self.case.text())

    def test_https_verified(self):
        tls = ['--https-cert', tlsl.p('srv1.pem'),
               '--https-key', tlsl.p('srv1.key')]
        self.case = Case(self.workdir, tls,
                         'https = true\ntls_ca = %s\n' % tlsl.p('ca.pem'),
                         host='localhost')
        self.roundtrip()
        self.assertEqual(len(self.stored('https')), 40)
        # values around one TLS record's payload: a POST up to it goes in
        # one SSL_write of its own, a larger one through the bufferevent
        c = client(self.case.port)
        sizes = (100, 16000, 16250, 16384, 16500, 200000)
        def value(n):
            return bytes(range(256)) * (n // 256) + b'e' * (n % 256)
        for n in sizes:
            put(c, b'big%d' % n, value(n))
        for n in sizes:
            self.assertEqual(get(c, b'big%d' % n), value(n), n)

    def test_https_wrong_ca_refused(self):
        tls = ['--https-cert', tlsl.p('srv1.pem'),
               '--https-key', tlsl.p('srv1.key')]
        self.case = Case(self.workdir, tls,
                         'https = true\ntls_ca = %s\n' % tlsl.p('other.pem'),
                         host='localhost')
        c = client(self.case.port)
        with self.assertRaises(Exception) as cm:
            put(c, b'x', b'1')
        wait_for(lambda: 'certificate verify failed' in self.case.text(),
                 10, 'the TLS cause in the log')
        # the client hears the cause too, not only that a connection closed
        m = getattr(cm.exception, 'message', None) or str(cm.exception)
        if isinstance(m, bytes):
            m = m.decode('utf-8', 'replace')
        self.assertIn('certificate verify failed', m)

    def test_https_wrong_ca_fixed_by_reload(self):
        # the operator copies the right CA over the wrong one and reloads:
        # new connections trust it, no restart
        ca = os.path.join(self.workdir, 'backend-ca.pem')
        shutil.copy(tlsl.p('other.pem'), ca)
        tls = ['--https-cert', tlsl.p('srv1.pem'),
               '--https-key', tlsl.p('srv1.key')]
        self.case = Case(self.workdir, tls,
                         'https = true\ntls_ca = %s\n' % ca,
                         host='localhost')
        c = client(self.case.port)
        with self.assertRaises(Exception):
            put(c, b'x', b'1')
        shutil.copy(tlsl.p('ca.pem'), ca)
        self.case.procs[-1][0].send_signal(signal.SIGHUP)
        wait_for(lambda: 'reload: applied' in self.case.text(), 10,
                 'the reload')

        def works():
            try:
                put(client(self.case.port), b'x', b'1')
                return True
            except Exception:  # noqa: BLE001 - until it does
                return False
        wait_for(works, 15, 'calls working after the CA was fixed')

    def test_https_wrong_name_refused(self):
        # the certificate names localhost only, the proxy dials 127.0.0.1
        tls = ['--https-cert', tlsl.p('dnsonly.pem'),
               '--https-key', tlsl.p('dnsonly.key')]
        self.case = Case(self.workdir, tls,
                         'https = true\ntls_ca = %s\n' % tlsl.p('ca.pem'),
                         host='127.0.0.1')
        c = client(self.case.port)
        with self.assertRaises(Exception) as cm:
            put(c, b'x', b'1')
        wait_for(lambda: 'certificate verify failed' in self.case.text(),
                 10, 'the TLS cause in the log')
        # the client hears the cause too, not only that a connection closed
        m = getattr(cm.exception, 'message', None) or str(cm.exception)
        if isinstance(m, bytes):
            m = m.decode('utf-8', 'replace')
        self.assertIn('certificate verify failed', m)

    def test_https_name_check_off(self):
        tls = ['--https-cert', tlsl.p('dnsonly.pem'),
               '--https-key', tlsl.p('dnsonly.key')]
        self.case = Case(self.workdir, tls,
                         'https = true\ntls_ca = %s\n'
                         'tls_verify_hostname = false\n' % tlsl.p('ca.pem'),
                         host='127.0.0.1')
        self.roundtrip()

    def test_spnego(self):
        spn = ['--spnego-principal', REALM.qualify('HTTP/localhost'),
               '--spnego-keytab', KT['http']]
        self.case = Case(self.workdir, spn,
                         'sasl = gssapi\nsasl_principal = %s\n'
                         'sasl_keytab = %s\n' % (REALM.qualify('app'),
                                                 KT['app']),
                         host='localhost', kerberos=True)
        self.roundtrip()
        self.assertIn('effective user: app', self.case.text('emu'))

    def test_https_with_spnego(self):
        tls = ['--https-cert', tlsl.p('srv1.pem'),
               '--https-key', tlsl.p('srv1.key'),
               '--spnego-principal', REALM.qualify('HTTP/localhost'),
               '--spnego-keytab', KT['http']]
        self.case = Case(self.workdir, tls,
                         'https = true\ntls_ca = %s\n'
                         'sasl = gssapi\nsasl_principal = %s\n'
                         'sasl_keytab = %s\n'
                         % (tlsl.p('ca.pem'), REALM.qualify('app'),
                            KT['app']),
                         host='localhost', kerberos=True)
        self.roundtrip()
        self.assertIn('effective user: app', self.case.text('emu'))

    def test_client_certificate(self):
        # HBase's Jetty does not ask for one; the proxy has it ready and
        # a pair that does not match stops it at start, naming the keys
        tls = ['--https-cert', tlsl.p('srv1.pem'),
               '--https-key', tlsl.p('srv1.key')]
        self.case = Case(self.workdir, tls,
                         'https = true\ntls_ca = %s\ntls_cert = %s\n'
                         'tls_key = %s\n' % (tlsl.p('ca.pem'),
                                              tlsl.p('client.pem'),
                                              tlsl.p('client.key')),
                         host='localhost')
        self.roundtrip()
        with open(self.case.conf) as f:
            text = f.read()
        bad = os.path.join(self.workdir, 'bad.conf')
        with open(bad, 'w') as f:
            f.write(text.replace(tlsl.p('client.key'), tlsl.p('lone.key')))
        r = subprocess.run([ARGS.proxy, '-c', bad], capture_output=True,
                           text=True, timeout=30)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn('tls_cert', r.stderr)

    def test_spnego_stale_keytab(self):
        spn = ['--spnego-principal', REALM.qualify('HTTP/localhost'),
               '--spnego-keytab', KT['http']]
        self.case = Case(self.workdir, spn,
                         'sasl = gssapi\nsasl_principal = %s\n'
                         'sasl_keytab = %s\n' % (REALM.qualify('app'),
                                                 KT['app_stale']),
                         host='localhost', kerberos=True)
        with self.assertRaises(Exception) as cm:
            put(client(self.case.port), b'x', b'1')
        self.assertIn("keys are not the KDC's current ones",
                      text_of(cm.exception))

    def test_one_socket_per_connection(self):
        # a backend connection in HTTP mode is its TCP socket alone: no
        # socketpair to a bridge beside it
        self.case = Case(self.workdir)
        clients = [self.roundtrip() for _ in range(6)]
        pid = self.case.procs[-1][0].pid
        mine = sockets_of(pid)
        tcp = mine & tcp_inodes_to(self.case.emu_port)
        unix = mine & unix_inodes()
        self.assertGreaterEqual(len(tcp), 2)
        # a health probe's bridge may be open: two sockets
        self.assertLessEqual(len(unix), 2, '%d unix sockets beside %d '
                             'connections' % (len(unix), len(tcp)))
        del clients

    def test_chunked_interim_and_close(self):
        # Jetty's shapes of a reply: chunked, and Connection: close on
        # some; calls keep their order and one POST
        # at a time goes on a connection
        self.case = Case(self.workdir, front={})
        for _ in range(3):
            self.roundtrip()
        c = client(self.case.port)
        for i in range(30):
            put(c, b'p%02d' % i, b'%d' % i)
            self.assertEqual(get(c, b'p%02d' % i), b'%d' % i)
        self.assertGreater(self.case.front.requests, 150)
        self.assertEqual(self.case.front.overlapped, 0)
        self.assertNotIn('bad reply', self.case.text())

    def test_refused_call_logged_once(self):
        # a server refusing every call with the same status: each call
        # hears it, the log says it once (the rest are counted), not a
        # line per call
        self.case = Case(self.workdir, front={})
        for _ in range(6):
            with self.assertRaises(Exception) as cm:
                put(client(self.case.port), b'refused-row', b'1')
            msg = text_of(cm.exception)
            self.assertIn('answered 500 Server Error', msg)
            self.assertIn('no region for refused-row', msg)
        c = client(self.case.port)
        put(c, b'good-row', b'2')
        self.assertEqual(get(c, b'good-row'), b'2')
        # (a period's count of the others, "N more calls", may follow)
        lines = [ln for ln in self.case.text().splitlines()
                 if 'no region for refused-row' in ln and
                 ' more call' not in ln]
        self.assertEqual(len(lines), 1, '\n'.join(lines))

    def test_bad_length_refused(self):
        # a length from the wire past max_frame_size fails the call,
        # naming it; the proxy lives on
        self.case = Case(self.workdir, front={'bad_length': True})
        with self.assertRaises(Exception) as cm:
            put(client(self.case.port), b'bad-row', b'1')
        self.assertIn('Content-Length 99999999999', text_of(cm.exception))
        c = client(self.case.port)
        put(c, b'good-row', b'2')
        self.assertEqual(get(c, b'good-row'), b'2')

    def test_bytes_after_a_reply_are_not_the_next_answer(self):
        # a server that sends more than the one reply a POST asked for is
        # out of step: its extra bytes must not answer the next call (that
        # call would fail while its POST went out and ran)
        self.case = Case(self.workdir, front={})
        c = client(self.case.port)
        mutation = hsptest.TH.T.Mutation
        rows = [b'extra-row'] + [b'next-row-%d' % i for i in range(5)]
        # pipelined: the calls after the first wait in the proxy, which
        # posts the next as soon as the first is answered
        for i, row in enumerate(rows):
            c.send_mutateRow(b't', row, [mutation(column=b'd:q',
                                                  value=b'%d' % i)], {})
        for row in rows:
            c.recv_mutateRow()
        c = client(self.case.port)
        for i in range(5):
            self.assertEqual(get(c, b'next-row-%d' % i), b'%d' % (i + 1))
        self.assertIn('bytes after a whole HTTP reply',
                      self.case.text('proxy'))

    def test_doas(self):
        self.case = Case(self.workdir, ['--http-proxyuser'],
                         'http_doas = alice\n')
        self.roundtrip()
        self.assertIn('effective user: alice', self.case.text('emu'))

    def test_doas_without_proxyuser(self):
        self.case = Case(self.workdir, (), 'http_doas = alice\n')
        with self.assertRaises(Exception) as cm:
            put(client(self.case.port), b'x', b'1')
        msg = text_of(cm.exception)
        self.assertIn('answered 500', msg)
        self.assertIn('proxyuser', msg)
        # every call is refused alike, the health probes' too (every 5 s
        # through the bridge): the cause is logged once, the rest counted
        time.sleep(6)
        lines = [ln for ln in self.case.text('proxy').splitlines()
                 if 'proxyuser' in ln and 'warning' in ln
                 and ' more c' not in ln]
        # the refusal's line, and the table catalog's (it could not be
        # asked, and retries every 2 s)
        self.assertEqual(len([ln for ln in lines if 'catalog:' in ln]), 1,
                         '\n'.join(lines))
        self.assertEqual(len([ln for ln in lines if 'catalog:' not in ln]),
                         1, '\n'.join(lines))


def main():
    global ARGS, REALM
    ap = argparse.ArgumentParser()
    ap.add_argument('--proxy', required=True)
    ap.add_argument('--emu', required=True)
    ap.add_argument('--pydir', required=True)
    ARGS, rest = ap.parse_known_args()
    hsptest.import_thrift(ARGS.pydir, globals(), tlsl)
    pki = tempfile.mkdtemp(prefix='hsp-http-pki-')
    tlsl.PKI = tlsl.make_pki(pki)
    # a server certificate for the name localhost alone
    with open(os.path.join(pki, 'ext.cnf'), 'a') as f:
        f.write('[dnsonly]\nsubjectAltName = DNS:localhost\n')
    tlsl.openssl('req', '-newkey', 'ec', '-pkeyopt',
                 'ec_paramgen_curve:P-256', '-nodes', '-subj', '/CN=localhost',
                 '-keyout', 'dnsonly.key', '-out', 'dnsonly.csr', cwd=pki)
    tlsl.openssl('x509', '-req', '-in', 'dnsonly.csr', '-CA', 'ca.pem',
                 '-CAkey', 'ca.key', '-set_serial', '0x4001', '-days', '2',
                 '-extfile', 'ext.cnf', '-extensions', 'dnsonly',
                 '-out', 'dnsonly.pem', cwd=pki)
    try:
        with krb5lib.Realm() as realm:
            REALM = realm
            realm.add_principals('HTTP/localhost', 'app')
            KT['http'] = realm.export('HTTP/localhost',
                                      realm.path('http.keytab'))
            KT['app_stale'] = realm.export('app', realm.path('stale.keytab'))
            KT['app'] = realm.export('app', realm.path('app.keytab'))
            prog = unittest.main(argv=[sys.argv[0]] + rest, verbosity=2,
                                 exit=False)
            return 0 if prog.result.wasSuccessful() else 1
    finally:
        shutil.rmtree(pki, ignore_errors=True)


if __name__ == '__main__':
    sys.exit(main())
