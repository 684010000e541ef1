"""The proxy's TLS listener ([tls]) for clients on other hosts: salted
calls over TLS beside the plain listener, client certificates checked
against a CA, handshakes that fail or stall without hurting anyone else,
the certificate replaced by SIGHUP (a bad one refused), and no key
material in the log.  Certificates are made per run with the openssl CLI.

  /usr/bin/python3 tests/secure/test_tls_listener.py \\
      --proxy BUILD/daemon/hbase-salt-proxy --emu BUILD/tests/emu/hbase-emu \\
      --pydir BUILD/thrift/py
"""

import argparse
import os
import re
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import time
import unittest
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, '..', 'e2e'))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                '..', 'lib'))
import hsptest  # noqa: E402
from hsptest import can_connect, free_port, openssl, wait_for  # noqa: E402

ARGS = None
Hbase = T = TSocket = TSSLSocket = TTransport = TBinaryProtocol = None
PKI = None


EXT = """[srv]
subjectAltName = IP:127.0.0.1,DNS:localhost
extendedKeyUsage = serverAuth
[cli]
extendedKeyUsage = clientAuth
"""


def make_pki(d):
    """Two CAs; server certificates (serials 1001 and 1002) and a client
    certificate from 'ca'; a client certificate from 'other'; a key that
    belongs to no certificate."""
    with open(os.path.join(d, 'ext.cnf'), 'w') as f:
        f.write(EXT)
    for ca in ('ca', 'other'):
        openssl('req', '-x509', '-newkey', 'ec', '-pkeyopt',
                'ec_paramgen_curve:P-256', '-nodes', '-days', '2',
                '-subj', '/CN=hsp-test-' + ca, '-keyout', ca + '.key',
                '-out', ca + '.pem', cwd=d)

    def leaf(name, ca, serial, ext, cn):
        openssl('req', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256',
                '-nodes', '-subj', '/CN=' + cn, '-keyout', name + '.key',
                '-out', name + '.csr', cwd=d)
        openssl('x509', '-req', '-in', name + '.csr', '-CA', ca + '.pem',
                '-CAkey', ca + '.key', '-set_serial', serial, '-days', '2',
                '-extfile', 'ext.cnf', '-extensions', ext,
                '-out', name + '.pem', cwd=d)
    leaf('srv1', 'ca', '0x1001', 'srv', 'localhost')
    leaf('srv2', 'ca', '0x1002', 'srv', 'localhost')
    leaf('client', 'ca', '0x2001', 'cli', 'app1')
    leaf('stranger', 'other', '0x3001', 'cli', 'app9')
    openssl('genpkey', '-algorithm', 'ec', '-pkeyopt',
            'ec_paramgen_curve:P-256', '-out', 'lone.key', cwd=d)
    return d


def p(name):
    return os.path.join(PKI, name)


def tls_client(port, cert=None, key=None):
    s = TSSLSocket.TSSLSocket('127.0.0.1', port, ca_certs=p('ca.pem'),
                              cert_reqs=ssl.CERT_REQUIRED, certfile=cert,
                              keyfile=key)
    s.setTimeout(10000)
    trans = TTransport.TBufferedTransport(s)
    c = Hbase.Client(TBinaryProtocol.TBinaryProtocol(trans))
    trans.open()
    c._trans = trans
    return c


def plain_client(port):
    s = TSocket.TSocket('127.0.0.1', port)
    s.setTimeout(10000)
    trans = TTransport.TBufferedTransport(s)
    c = Hbase.Client(TBinaryProtocol.TBinaryProtocol(trans))
    trans.open()
    c._trans = trans
    return c


def put(c, row, value):
    hsptest.put(c, b't', row, value, b'd:q')


def get(c, row):
    return hsptest.get(c, b't', row, b'd:q')


def served_serial(port):
    """The serial of the certificate the listener presents now."""
    ctx = ssl.create_default_context(cafile=p('ca.pem'))
    with socket.create_connection(('127.0.0.1', port), timeout=10) as raw:
        with ctx.wrap_socket(raw, server_hostname='localhost') as s:
            der = s.getpeercert(binary_form=True)
    out = subprocess.run(['openssl', 'x509', '-inform', 'DER', '-noout',
                          '-serial'], input=der, capture_output=True,
                         timeout=30).stdout.decode()
    return out.strip().split('=')[1]


def metric(admin, name):
    with urllib.request.urlopen('http://127.0.0.1:%d/metrics' % admin,
                                timeout=5) as r:
        text = r.read().decode()
    m = re.search(r'^%s (\d+)$' % name, text, re.M)
    return int(m.group(1)) if m else None


class Setup(object):
    def __init__(self, workdir, client_ca=False, handshake_ms=1500):
        self.workdir = workdir
        self.emu_port = free_port()
        self.emu_log = open(os.path.join(workdir, 'emu.log'), 'ab')
        self.emu = subprocess.Popen(
            [ARGS.emu, '--listen', '127.0.0.1:%d' % self.emu_port,
             '--create-table', 't:d'], stdout=self.emu_log,
            stderr=subprocess.STDOUT)
        wait_for(lambda: can_connect(self.emu_port), 10, 'hbase-emu')
        self.port, self.tls, self.admin = free_port(), free_port(), \
            free_port()
        # the files the config names; a reload re-reads these paths
        shutil.copy(p('srv1.pem'), os.path.join(workdir, 'cert.pem'))
        shutil.copy(p('srv1.key'), os.path.join(workdir, 'key.pem'))
        self.conf = os.path.join(workdir, 'proxy.conf')
        with open(self.conf, 'w') as f:
            f.write('[proxy]\nlisten = 127.0.0.1:%d\nworkers = 2\n'
                    '[backend]\nservers = 127.0.0.1:%d\n'
                    '[admin]\nlisten = 127.0.0.1:%d\n'
                    '[catalog]\ntable =\n'
                    '[tls]\nlisten = 127.0.0.1:%d\ncert = %s\nkey = %s\n'
                    'handshake_timeout_ms = %d\n%s'
                    '[table:t]\nbuckets = 8\n'
                    % (self.port, self.emu_port, self.admin, self.tls,
                       os.path.join(workdir, 'cert.pem'),
                       os.path.join(workdir, 'key.pem'), handshake_ms,
                       'client_ca = %s\n' % p('ca.pem') if client_ca
                       else ''))
        self.log_path = os.path.join(workdir, 'proxy.log')
        self.log = open(self.log_path, 'ab')
        self.proc = subprocess.Popen([ARGS.proxy, '-c', self.conf],
                                     stdout=self.log,
                                     stderr=subprocess.STDOUT)
        wait_for(lambda: can_connect(self.tls) or
                 self.proc.poll() is not None, 10, 'TLS listener')
        assert self.proc.poll() is None, self.text()

    def text(self):
        with open(self.log_path, errors='replace') as f:
            return f.read()

    def hup_and_wait(self, pattern):
        at = len(self.text())
        self.proc.send_signal(signal.SIGHUP)
        wait_for(lambda: re.search(pattern, self.text()[at:]), 10, pattern)

    def close(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            self.proc.wait(15)
        self.emu.kill()
        self.emu.wait()
        self.log.close()
        self.emu_log.close()


class TlsListenerTest(unittest.TestCase):
    def setUp(self):
        self.workdir = tempfile.mkdtemp(prefix='hsp-tls-')
        self.s = None

    def tearDown(self):
        if self.s is not None:
            alive = self.s.proc.poll() is None
            self.s.close()
            self.assertTrue(alive, 'the proxy died:\n' + self.s.text())
            # no line of any key file reaches the log
            text = self.s.text()
            for name in ('srv1.key', 'srv2.key', 'client.key', 'lone.key'):
                with open(p(name)) as f:
                    for line in f:
                        line = line.strip()
                        if len(line) > 16 and not line.startswith('-----'):
                            self.assertNotIn(line, text)
        if not os.environ.get('HSP_KEEP_LOGS'):
            shutil.rmtree(self.workdir, ignore_errors=True)

    def test_check_config_prints_the_listener(self):
        """--check-config names the TLS listener as it names the others:
        address, cert (its subject and serial), key, client CA; and a key
        that is not the certificate's fails it."""
        conf = os.path.join(self.workdir, 'check.conf')
        tls = free_port()

        def check(key, ca):
            with open(conf, 'w') as f:
                f.write('[proxy]\nlisten = 127.0.0.1:%d\n'
                        '[backend]\nservers = 127.0.0.1:%d\n'
                        '[catalog]\ntable =\n'
                        '[tls]\nlisten = 127.0.0.1:%d\ncert = %s\n'
                        'key = %s\n%s'
                        % (free_port(), free_port(), tls, p('srv1.pem'),
                           p(key), 'client_ca = %s\n' % p(ca) if ca else ''))
            return subprocess.run([ARGS.proxy, '-c', conf, '--check-config'],
                                  capture_output=True, text=True, timeout=30)
        r = check('srv1.key', None)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn('\ntls: listen 127.0.0.1:%d (thrift1), cert %s '
                      '(/CN=localhost, serial 1001), key %s, client_ca none '
                      '(any client)\n' % (tls, p('srv1.pem'), p('srv1.key')),
                      r.stdout)
        self.assertIn('\nthrift1: listen 127.0.0.1:', r.stdout)
        r = check('srv1.key', 'ca.pem')
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn(', client_ca %s (client certificates required)\n'
                      % p('ca.pem'), r.stdout)
        r = check('lone.key', None)
        self.assertEqual(r.returncode, 1, r.stdout)
        self.assertNotIn('tls: listen', r.stdout)
        self.assertIn('lone.key', r.stderr)

    def test_salted_calls_over_tls_beside_plain(self):
        self.s = Setup(self.workdir)
        c = tls_client(self.s.tls)
        keys = [b'k%03d' % i for i in range(60)]
        for k in keys:
            put(c, k, b'v-' + k)
        sid = c.scannerOpenWithScan(b't', T.TScan(caching=7), {})
        rows = []
        while True:
            batch = c.scannerGetList(sid, 9)
            if not batch:
                break
            rows += [r.row for r in batch]
        c.scannerClose(sid)
        self.assertEqual(rows, keys)
        # the plain listener serves the same table, salted the same way
        self.assertEqual(get(plain_client(self.s.port), b'k042'), b'v-k042')
        # stored salted: no logical key at the start of a stored row
        direct = plain_client(self.s.emu_port)
        sid = direct.scannerOpenWithScan(b't', T.TScan(), {})
        stored = [r.row for r in direct.scannerGetList(sid, 1000)]
        self.assertEqual(len(stored), 60)
        self.assertFalse(set(stored) & set(keys))
        self.assertEqual(metric(self.s.admin, 'hsp_tls_handshakes_total'),
                         1)

    def test_client_certificates(self):
        self.s = Setup(self.workdir, client_ca=True)
        c = tls_client(self.s.tls, p('client.pem'), p('client.key'))
        put(c, b'a', b'1')
        for cert, key in ((None, None),
                          (p('stranger.pem'), p('stranger.key'))):
            with self.assertRaises(Exception):
                x = tls_client(self.s.tls, cert, key)
                # TLS 1.3: the refusal comes with the first read
                get(x, b'a')
        wait_for(lambda: metric(self.s.admin,
                                'hsp_tls_handshake_failures_total') == 2,
                 10, 'two handshake failures counted')
        text = self.s.text()
        self.assertIn('TLS handshake failed', text)
        self.assertRegex(text, r'peer did not return a certificate|'
                               r'certificate required')
        self.assertRegex(text, r'certificate verify failed|unknown ca')
        # the good client was never disturbed
        self.assertEqual(get(c, b'a'), b'1')

    def test_bad_handshakes_hurt_no_one(self):
        self.s = Setup(self.workdir, handshake_ms=1000)
        good = tls_client(self.s.tls)
        put(good, b'g', b'0')
        garbage = socket.create_connection(('127.0.0.1', self.s.tls))
        garbage.sendall(b'\x80\x01\x00\x01' + b'not a ClientHello' * 50)
        stall = socket.create_connection(('127.0.0.1', self.s.tls))
        stall.sendall(b'\x16\x03\x01\x00\xff\x01')  # a record cut short
        for i in range(50):
            put(good, b'g', b'%d' % i)
            self.assertEqual(get(good, b'g'), b'%d' % i)
        wait_for(lambda: metric(self.s.admin,
                                'hsp_tls_handshake_failures_total') == 2,
                 10, 'the garbage and the stalled client closed')
        self.assertIn('no handshake within 1000 ms', self.s.text(),
                      (garbage.getsockname(), stall.getsockname()))
        stall.settimeout(5)
        self.assertEqual(stall.recv(100), b'')
        garbage.close()
        stall.close()
        self.assertEqual(get(good, b'g'), b'49')

    def test_quiet_after_the_handshake_is_not_a_stalled_handshake(self):
        """The handshake timeout ends with the handshake: a client quiet
        for longer afterwards keeps its connection (no idle timeout is
        configured)."""
        self.s = Setup(self.workdir, handshake_ms=300)
        c = tls_client(self.s.tls)
        put(c, b'q', b'1')
        time.sleep(1.0)
        self.assertEqual(get(c, b'q'), b'1')
        self.assertNotIn('idle timeout', self.s.text())

    def test_pipelined_big_replies_to_a_slow_reader(self):
        """Replies larger than the socket takes, to a client that
        pipelines and reads late: every byte arrives, in call order, on
        the same connection, which then serves on (OpenSSL's partial
        writes, retried from the same bytes once writable)."""
        self.s = Setup(self.workdir)
        plain = plain_client(self.s.port)
        rows = []
        # more than the kernel's send buffer (4 MiB at most) holds
        for i in range(6):
            big = bytes([0x41 + i]) * (1024 * 1024 + i)
            put(plain, b'big%d' % i, big)
            put(plain, b'small%d' % i, b's%d' % i)
            rows += [(b'big%d' % i, big), (b'small%d' % i, b's%d' % i)]

        class SockTrans(TTransport.TTransportBase):
            def __init__(self, sock):
                self.sock = sock

            def isOpen(self):
                return True

            def read(self, sz):
                return self.sock.recv(sz)

            def write(self, buf):
                self.sock.sendall(buf)

            def flush(self):
                pass

        raw = socket.socket()
        # a small window: the proxy's writes fall short many times
        raw.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        raw.settimeout(20)
        raw.connect(('127.0.0.1', self.s.tls))
        ctx = ssl.create_default_context(cafile=p('ca.pem'))
        sock = ctx.wrap_socket(raw, server_hostname='localhost')
        c = Hbase.Client(TBinaryProtocol.TBinaryProtocol(
            TTransport.TBufferedTransport(SockTrans(sock))))
        for _ in range(2):
            for row, _value in rows:
                c.send_getRow(b't', row, {})
            time.sleep(1)
            for row, value in rows:
                got = c.recv_getRow()
                self.assertEqual(got[0].row, row)
                self.assertEqual(got[0].columns[b'd:q'].value, value)
        sock.close()
        self.assertEqual(get(tls_client(self.s.tls), b'small5'), b's5')

    def test_client_reset_while_replies_wait(self):
        """A client that resets its connection while big replies wait
        for its window: the failed write closes it (logged), and the
        proxy serves on."""
        import struct
        self.s = Setup(self.workdir)
        plain = plain_client(self.s.port)
        for i in range(6):
            put(plain, b'big%d' % i, bytes([0x41 + i]) * (1024 * 1024))
        raw = socket.socket()
        raw.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        raw.settimeout(20)
        raw.connect(('127.0.0.1', self.s.tls))
        ctx = ssl.create_default_context(cafile=p('ca.pem'))
        sock = ctx.wrap_socket(raw, server_hostname='localhost')
        buf = TTransport.TMemoryBuffer()
        c = Hbase.Client(TBinaryProtocol.TBinaryProtocol(buf))
        for i in range(6):
            c.send_getRow(b't', b'big%d' % i, {})
        sock.sendall(buf.getvalue())
        sock.recv(100)  # replies are being written
        time.sleep(0.5)
        # RST, not FIN: the proxy's next write fails
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER,
                        struct.pack('ii', 1, 0))
        sock.close()
        wait_for(lambda: re.search(r'client 127\.0\.0\.1:\d+: closing: ',
                                   self.s.text()), 10, 'the reset logged')
        self.assertEqual(get(tls_client(self.s.tls), b'big5')[:3], b'FFF')

    def test_plain_thrift_client_is_told(self):
        """A client that forgot TLS gets a TApplicationException in its
        own protocol and framing saying so (not EOF, which python3-thrift
        reports as "unexpected exception"); the log says it once, however
        many come, and a counter counts them all."""
        from thrift.Thrift import TApplicationException
        from thrift.protocol import TCompactProtocol
        self.s = Setup(self.workdir)
        kinds = [(TTransport.TBufferedTransport,
                  TBinaryProtocol.TBinaryProtocol),
                 (TTransport.TFramedTransport,
                  TCompactProtocol.TCompactProtocol),
                 (TTransport.TFramedTransport,
                  TBinaryProtocol.TBinaryProtocol),
                 (TTransport.TBufferedTransport,
                  TCompactProtocol.TCompactProtocol)]
        for transport, protocol in kinds * 2:
            sock = TSocket.TSocket('127.0.0.1', self.s.tls)
            sock.setTimeout(10000)
            trans = transport(sock)
            c = Hbase.Client(protocol(trans))
            trans.open()
            with self.assertRaises(TApplicationException) as cm:
                c.getTableNames()
            trans.close()
            self.assertEqual(cm.exception.type,
                             TApplicationException.PROTOCOL_ERROR)
            self.assertIn('connect with TLS or use the plain listener',
                          cm.exception.message)
        wait_for(lambda: metric(self.s.admin,
                                'hsp_tls_plain_clients_total') == 8,
                 10, 'eight plain clients counted')
        self.assertEqual(
            metric(self.s.admin, 'hsp_tls_handshake_failures_total'), 8)
        text = self.s.text()
        lines = [ln for ln in text.splitlines()
                 if 'plain Thrift on the TLS listener' in ln]
        self.assertEqual(len(lines), 1, text)
        self.assertRegex(lines[0], r'warning: plain Thrift on the TLS '
                         r'listener from 127\.0\.0\.1:\d+; connect with '
                         r'TLS or use the plain listener$')
        self.assertNotIn('wrong version number', text)
        # TLS clients are still served
        self.assertEqual(get(tls_client(self.s.tls), b'nope'), None)

    def test_sighup_replaces_the_certificate(self):
        self.s = Setup(self.workdir)
        self.assertEqual(served_serial(self.s.tls), '1001')
        old = tls_client(self.s.tls)
        put(old, b'r', b'before')
        shutil.copy(p('srv2.pem'), os.path.join(self.workdir, 'cert.pem'))
        shutil.copy(p('srv2.key'), os.path.join(self.workdir, 'key.pem'))
        self.s.hup_and_wait(r'TLS listener certificate: .*serial 1002')
        self.assertEqual(served_serial(self.s.tls), '1002')
        # the connection made before the reload carries on
        put(old, b'r', b'after')
        self.assertEqual(get(tls_client(self.s.tls), b'r'), b'after')
        # a key that is not the certificate's: refused, 1002 stays
        shutil.copy(p('lone.key'), os.path.join(self.workdir, 'key.pem'))
        self.s.hup_and_wait(r'reload of .* refused.*is not the key of the '
                            r'certificate')
        self.assertEqual(served_serial(self.s.tls), '1002')
        self.assertEqual(get(old, b'r'), b'after')


def main():
    global ARGS, PKI
    ap = argparse.ArgumentParser()
    ap.add_argument('--proxy', required=True)
    ap.add_argument('--emu', required=True)
    ap.add_argument('--pydir', required=True)
    ARGS, rest = ap.parse_known_args()
    if shutil.which('openssl') is None:
        print('openssl CLI not found: install openssl (.ci/quickstart test)')
        return 1
    hsptest.import_thrift(ARGS.pydir, globals())
    pki = tempfile.mkdtemp(prefix='hsp-tls-pki-')
    try:
        PKI = make_pki(pki)
        prog = unittest.main(argv=[sys.argv[0]] + rest, verbosity=2,
                             exit=False)
        return 0 if prog.result.wasSuccessful() else 1
    finally:
        shutil.rmtree(pki, ignore_errors=True)


if __name__ == '__main__':
    sys.exit(main())
