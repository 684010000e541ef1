"""test_http: hbase-emu's HTTP mode (HBase's `hbase thrift -http`): plain HTTP, HTTPS with per-run certificates, SPNEGO against a real MIT KDC, and doAs."""
# One run per --mode:
#   http    Thrift1 and Thrift2 over HTTP through python3-thrift's
#           THttpClient, keep-alive, every path, what each HTTP method
#           gets, a compact-protocol client (HBase's HTTP mode is binary
#           only), broken bodies, and doAs with and without proxyuser.
#   https   the same service behind TLS with a CA and a server certificate
#           made here with the openssl CLI: verification succeeds against
#           that CA and fails against another; plain HTTP to the TLS port
#           gets no answer; a certificate without its key stops startup.
#   spnego  Kerberos on every request (a throwaway realm, krb5lib): no
#           token, bad, replayed and wrong-service tokens, Kerberos and
#           SPNEGO mechanisms, the server's reply token completing mutual
#           authentication, doAs on top, and SPNEGO over HTTPS.
# Every refusal is followed by a good call to show the server still serves.

import argparse
import base64
import http.client
import os
import shutil
import socket
import ssl
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, '..', 'lib'))
import krb5lib  # noqa: E402
import hsptest  # noqa: E402
from hsptest import Failure, check, openssl  # noqa: E402

Hbase = T = THBaseService = T2 = THttpClient = None
TBinaryProtocol = TCompactProtocol = TApplicationException = kerberos = None


# ---------------------------------------------------------------------------
# the emulator

class Emu(hsptest.Emu):
    def __init__(self, binary, workdir, extra, env=None, thrift2=True,
                 expect_fail=False):
        super().__init__(binary, tempfile.mkdtemp(prefix='emu-', dir=workdir),
                         ['--http', '--create-table', 't:f'] + list(extra)
                         + (['--thrift2-http'] if thrift2 else []),
                         thrift2=thrift2, env=env, start=False, log_mode='wb',
                         timeout=15, probe=False)
        if expect_fail:
            self.spawn(self.argv(), env)
            self.proc.wait(15)
        else:
            self.start()

    def wait_log(self, text, timeout=5):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if text in self.log_text():
                return True
            time.sleep(0.05)
        return False

    def stop(self):
        """0 after SIGTERM unless the process crashed or a sanitizer
        reported at exit."""
        return super().stop(killed=-9)


# ---------------------------------------------------------------------------
# clients

def negotiate_token(service='HTTP@localhost', mech='krb5'):
    """A fresh initial token for service, and the context to finish mutual
    authentication with the server's reply."""
    oid = (kerberos.GSS_MECH_OID_SPNEGO if mech == 'spnego'
           else kerberos.GSS_MECH_OID_KRB5)
    _, ctx = kerberos.authGSSClientInit(
        service, gssflags=kerberos.GSS_C_MUTUAL_FLAG |
        kerberos.GSS_C_SEQUENCE_FLAG, mech_oid=oid)
    kerberos.authGSSClientStep(ctx, '')
    return kerberos.authGSSClientResponse(ctx), ctx


def make_negotiate_client_class():
    class _Negotiate(THttpClient.THttpClient):
        """THttpClient that sends a new Negotiate token with every
        request (HBase's servlet authenticates each one on its own)."""

        def __init__(self, uri, mech='krb5', service='HTTP@localhost',
                     extra=None, **kw):
            super().__init__(uri, **kw)
            self.mech = mech
            self.service = service
            self.extra = dict(extra or {})
            self.last_ctx = None

        def flush(self):
            token, self.last_ctx = negotiate_token(self.service, self.mech)
            hdr = {'Authorization': 'Negotiate ' + token}
            hdr.update(self.extra)
            self.setCustomHeaders(hdr)
            super().flush()
    return _Negotiate


def thrift1(uri, protocol='binary', cls=None, **kw):
    tr = (cls or THttpClient.THttpClient)(uri, **kw)
    tr.setTimeout(10000)
    proto = (TCompactProtocol.TCompactProtocol(tr) if protocol == 'compact'
             else TBinaryProtocol.TBinaryProtocol(tr))
    tr.open()
    return Hbase.Client(proto), tr


def thrift2(uri, cls=None, **kw):
    tr = (cls or THttpClient.THttpClient)(uri, **kw)
    tr.setTimeout(10000)
    tr.open()
    return THBaseService.Client(TBinaryProtocol.TBinaryProtocol(tr)), tr


def call_message(name='getTableNames', seqid=1, protocol='binary'):
    """The bytes of one argument-less call, as THttpClient would POST."""
    from thrift.transport import TTransport
    buf = TTransport.TMemoryBuffer()
    p = (TCompactProtocol.TCompactProtocol(buf) if protocol == 'compact'
         else TBinaryProtocol.TBinaryProtocol(buf))
    p.writeMessageBegin(name, 1, seqid)
    p.writeStructBegin('args')
    p.writeFieldStop()
    p.writeStructEnd()
    p.writeMessageEnd()
    return buf.getvalue()


def read_reply(body):
    """(name, type, seqid, the table names or None) of a getTableNames
    reply; type 3 is an exception."""
    from thrift.transport import TTransport
    p = TBinaryProtocol.TBinaryProtocol(TTransport.TMemoryBuffer(body))
    name, mtype, seqid = p.readMessageBegin()
    if mtype == 3:
        x = TApplicationException()
        x.read(p)
        return name, mtype, seqid, x
    r = Hbase.getTableNames_result()
    r.read(p)
    return name, mtype, seqid, r.success


def raw(port, method, path='/', body=None, headers=None, tls=None,
        conn=None):
    """One request; returns (status, headers, body, connection)."""
    if conn is None:
        if tls is not None:
            conn = http.client.HTTPSConnection('localhost', port,
                                               context=tls, timeout=10)
        else:
            conn = http.client.HTTPConnection('127.0.0.1', port, timeout=10)
    h = {'Content-Type': 'application/x-thrift'}
    h.update(headers or {})
    conn.request(method, path, body=body, headers=h)
    r = conn.getresponse()
    data = r.read()
    return r.status, r.msg, data, conn


# ---------------------------------------------------------------------------
# shared checks

def round_trip(base_uri, port2_uri, **kw):
    """Thrift1 writes, reads and scans (a scanner spans several POSTs),
    a 1 MiB value; Thrift2 reads what Thrift1 wrote and the reverse."""
    c, tr = thrift1(base_uri, **kw)
    M = T.Mutation
    check(b't' in c.getTableNames(), 'getTableNames lacks t')
    for i in range(12):
        c.mutateRow(b't', b'row%02d' % i, [M(column=b'f:q',
                                             value=b'v%d' % i)], {})
    big = os.urandom(1 << 20)
    c.mutateRow(b't', b'big', [M(column=b'f:b', value=big)], {})
    got = c.getRow(b't', b'row07', {})
    check(len(got) == 1 and got[0].columns[b'f:q'].value == b'v7',
          'getRow row07: %r' % got)
    check(c.getRow(b't', b'big', {})[0].columns[b'f:b'].value == big,
          '1 MiB value differs')
    sid = c.scannerOpenWithStop(b't', b'row00', b'row99', [b'f:q'], {})
    rows = []
    while True:
        batch = c.scannerGetList(sid, 5)
        if not batch:
            break
        rows += [r.row for r in batch]
    c.scannerClose(sid)
    check(rows == [b'row%02d' % i for i in range(12)],
          'scan over HTTP returned %r' % rows)
    check(tr.code == 200, 'status %s' % tr.code)
    check(tr.headers.get('Content-Type') == 'application/x-thrift',
          'content type %r' % tr.headers.get('Content-Type'))
    tr.close()
    if port2_uri is None:
        return
    c2, tr2 = thrift2(port2_uri, **kw)
    got = c2.get(b't', T2.TGet(row=b'row03'))
    check([cv.value for cv in got.columnValues] == [b'v3'],
          'thrift2 get of a thrift1 write: %r' % got)
    c2.put(b't', T2.TPut(row=b't2row', columnValues=[
        T2.TColumnValue(b'f', b'q', b'from-thrift2')]))
    tr2.close()
    c, tr = thrift1(base_uri, **kw)
    check(c.getRow(b't', b't2row', {})[0].columns[b'f:q'].value ==
          b'from-thrift2', 'thrift1 read of a thrift2 write')
    tr.close()


def expect_http_failure(fn, code, what):
    """fn makes a call through a THttpClient whose transport it returns in
    a list; the call must fail and the transport must have seen code."""
    box = []
    try:
        fn(box)
    except Exception:  # the error page does not decode as Thrift
        pass
    else:
        raise Failure('%s: the call succeeded' % what)
    check(box and box[0].code == code,
          '%s: status %s, wanted %d' % (what, box[0].code if box else '?',
                                         code))
    return box[0]


# ---------------------------------------------------------------------------
# mode http

class HttpSuite:
    def __init__(self, args, workdir):
        self.args = args
        self.workdir = workdir
        self.emu = Emu(args.emu, workdir, [])
        self.emus = [self.emu]
        self.uri = 'http://127.0.0.1:%d/' % self.emu.port
        self.uri2 = 'http://127.0.0.1:%d/' % self.emu.port2

    def good_client_works(self, emu=None):
        emu = emu or self.emu
        check(emu.alive(), 'hbase-emu died: ' + emu.log_text()[-2000:])
        c, tr = thrift1('http://127.0.0.1:%d/' % emu.port)
        check(b't' in c.getTableNames(), 'getTableNames lacks t')
        tr.close()

    def test_round_trip(self):
        round_trip(self.uri, self.uri2)

    def test_any_path(self):
        # the servlet is mapped at "/*": every path reaches it
        for path in ('/', '/thrift', '/a/b/c?x=1', '/hbase;jsessionid=1'):
            c, tr = thrift1('http://127.0.0.1:%d%s' % (self.emu.port, path))
            check(b't' in c.getTableNames(), 'path %s' % path)
            tr.close()

    def test_keep_alive(self):
        conn = None
        socks = set()
        for i in range(4):
            st, hdr, body, conn = raw(self.emu.port, 'POST',
                                      body=call_message(seqid=i + 1),
                                      conn=conn)
            check(st == 200, 'POST %d: status %d' % (i, st))
            check(hdr.get('Content-Type') == 'application/x-thrift',
                  'content type %r' % hdr.get('Content-Type'))
            check((hdr.get('Connection') or '').lower() != 'close',
                  'server closes after each request')
            name, mtype, seqid, names = read_reply(body)
            check((name, mtype, seqid) == ('getTableNames', 2, i + 1) and
                  b't' in names, 'reply %r' % ((name, mtype, seqid),))
            socks.add(id(conn.sock))
        check(len(socks) == 1, 'keep-alive: %d sockets for 4 requests' %
              len(socks))
        conn.close()

    def test_methods(self):
        p = self.emu.port
        # TServlet's doGet is its doPost: a body makes GET a call, and no
        # body is a TTransportException, which the container answers 500
        st, hdr, body, c = raw(p, 'GET', body=call_message(seqid=9))
        c.close()
        check(st == 200 and read_reply(body)[2] == 9,
              'GET with a body: status %d' % st)
        st, hdr, body, c = raw(p, 'GET')
        c.close()
        check(st == 500 and b'TTransportException' in body,
              'GET without a body: %d %r' % (st, body[:200]))
        check(hdr.get('Content-Type', '').startswith('text/html'),
              'error page type %r' % hdr.get('Content-Type'))
        st, hdr, body, c = raw(p, 'HEAD')
        c.close()
        check(st == 500, 'HEAD: %d' % st)
        # a HEAD reply carries no body: the next reply on the connection
        # must start right after its headers
        with socket.create_connection(('127.0.0.1', p), timeout=10) as s:
            s.sendall(b'HEAD / HTTP/1.1\r\nHost: x\r\n\r\n'
                      b'POST / HTTP/1.1\r\nHost: x\r\nContent-Length: %d'
                      b'\r\n\r\n' % len(call_message()) + call_message())
            f = s.makefile('rb')
            first = f.readline()
            while f.readline() not in (b'\r\n', b''):
                pass
            second = f.readline()
        check(first.startswith(b'HTTP/1.1 500') and
              second.startswith(b'HTTP/1.1 200'),
              'HEAD then POST on one connection: %r, %r' % (first, second))
        for m, want in (('PUT', 405), ('DELETE', 405), ('TRACE', 403),
                        ('OPTIONS', 403), ('PATCH', 501)):
            st, hdr, body, c = raw(p, m, body=call_message())
            c.close()
            check(st == want, '%s: status %d, wanted %d' % (m, st, want))
        st, _, body, c = raw(p, 'PUT', body=b'')
        c.close()
        check(b'HTTP method PUT is not supported by this URL' in body,
              'PUT page %r' % body[:300])
        self.good_client_works()

    def test_options_allowed(self):
        emu = Emu(self.args.emu, self.workdir, ['--http-allow-options'],
                  thrift2=False)
        self.emus.append(emu)
        st, hdr, body, c = raw(emu.port, 'OPTIONS')
        c.close()
        check(st == 200 and 'POST' in (hdr.get('Allow') or ''),
              'OPTIONS allowed: %d %r' % (st, hdr.get('Allow')))
        st, _, _, c = raw(emu.port, 'TRACE')
        c.close()
        check(st == 403, 'TRACE with OPTIONS allowed: %d' % st)

    def test_bad_bodies(self):
        p = self.emu.port
        msg = call_message()
        # truncated: the processor runs out of bytes
        st, _, body, c = raw(p, 'POST', body=msg[:-3])
        c.close()
        check(st == 500, 'truncated body: %d' % st)
        # not Thrift at all
        st, _, body, c = raw(p, 'POST', body=b'hello, world\n' * 4)
        c.close()
        check(st == 500 and b'TProtocolException' in body,
              'garbage body: %d %r' % (st, body[:200]))
        # bytes after the message are not read (TServlet reads one)
        st, _, body, c = raw(p, 'POST', body=msg + b'\x00trailing')
        c.close()
        check(st == 200 and read_reply(body)[3] is not None,
              'message plus trailing bytes: %d' % st)
        # an unknown method is a Thrift exception in a 200, as libthrift's
        # processor writes it
        st, _, body, c = raw(p, 'POST', body=call_message('noSuchCall'))
        c.close()
        name, mtype, _, x = read_reply(body)
        check(st == 200 and mtype == 3 and
              x.type == TApplicationException.UNKNOWN_METHOD,
              'unknown method: %d %r' % (st, (name, mtype)))
        self.good_client_works()

    def test_compact_refused(self):
        # HBase's HTTP mode builds a TBinaryProtocol whatever -c says; a
        # compact message fails its version check
        c, tr = None, None
        box = []

        def call(box):
            cl, t = thrift1(self.uri, protocol='compact')
            box.append(t)
            cl.getTableNames()
        t = expect_http_failure(call, 500, 'compact client')
        t.close()
        st, _, body, conn = raw(self.emu.port, 'POST',
                                body=call_message(protocol='compact'))
        conn.close()
        check(st == 500 and b'TProtocolException' in body,
              'compact body: %d %r' % (st, body[:300]))
        # and --compact does not change that
        emu = Emu(self.args.emu, self.workdir, ['--compact'], thrift2=False)
        self.emus.append(emu)
        c, tr = thrift1('http://127.0.0.1:%d/' % emu.port)
        check(b't' in c.getTableNames(), 'binary client with --compact')
        tr.close()
        del c, box

    def test_doas(self):
        # without hbase.thrift.support.proxyuser a doAs header is a
        # ServletException: 500
        def call(box, headers):
            cl, t = thrift1(self.uri)
            t.setCustomHeaders(headers)
            box.append(t)
            cl.getTableNames()
        for name in ('doAs', 'DOAS', 'doas'):
            t = expect_http_failure(lambda b: call(b, {name: 'bob'}), 500,
                                    'doAs header %s without proxyuser' % name)
            t.close()
        st, _, body, conn = raw(self.emu.port, 'POST', body=call_message(),
                                headers={'doAs': 'bob'})
        conn.close()
        check(b'Support for proxyuser is not configured' in body,
              'doAs refusal page %r' % body[:300])
        # the query parameter is not what the servlet reads
        c, tr = thrift1(self.uri + '?doAs=bob')
        check(b't' in c.getTableNames(), 'doAs query parameter')
        tr.close()
        # with proxyuser support the header names the effective user
        emu = Emu(self.args.emu, self.workdir, ['--http-proxyuser'])
        self.emus.append(emu)
        c, tr = thrift1('http://127.0.0.1:%d/' % emu.port)
        tr.setCustomHeaders({'doAs': 'bob'})
        c.mutateRow(b't', b'asbob', [T.Mutation(column=b'f:q',
                                                value=b'b')], {})
        check(c.getRow(b't', b'asbob', {})[0].columns[b'f:q'].value == b'b',
              'doAs call')
        tr.close()
        check(emu.wait_log('effective user: bob'),
              'no "effective user: bob" in the log')
        c2, tr2 = thrift2('http://127.0.0.1:%d/' % emu.port2)
        tr2.setCustomHeaders({'DoAs': 'carol'})
        check(c2.exists(b't', T2.TGet(row=b'asbob')), 'thrift2 doAs call')
        tr2.close()
        check(emu.wait_log('effective user: carol'),
              'no "effective user: carol" in the log')
        st, _, body, conn = raw(emu.port, 'POST', body=call_message(),
                                headers={'doAs': ''})
        conn.close()
        check(st == 500, 'empty doAs: %d' % st)
        self.good_client_works(emu)

    def run(self):
        return hsptest.run_cases(self, [
            'test_round_trip', 'test_any_path', 'test_keep_alive',
            'test_methods', 'test_options_allowed', 'test_bad_bodies',
            'test_compact_refused', 'test_doas'])


# ---------------------------------------------------------------------------
# mode https

def make_pki(d):
    """A CA, a server certificate it signs for localhost and 127.0.0.1,
    and a second CA that signed nothing here."""
    os.makedirs(d, exist_ok=True)
    for ca in ('ca', 'other-ca'):
        openssl('req', '-x509', '-newkey', 'ec', '-pkeyopt',
                'ec_paramgen_curve:P-256', '-nodes', '-days', '2',
                '-subj', '/CN=hsp test %s' % ca, '-keyout', ca + '.key',
                '-out', ca + '.pem', '-addext',
                'basicConstraints=critical,CA:TRUE', '-addext',
                'keyUsage=critical,keyCertSign,cRLSign', cwd=d)
    openssl('req', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256',
            '-nodes', '-subj', '/CN=localhost', '-keyout', 'server.key',
            '-out', 'server.csr', cwd=d)
    with open(os.path.join(d, 'server.ext'), 'w') as f:
        f.write('subjectAltName=DNS:localhost,IP:127.0.0.1\n'
                'extendedKeyUsage=serverAuth\n'
                'basicConstraints=CA:FALSE\n')
    openssl('x509', '-req', '-in', 'server.csr', '-CA', 'ca.pem',
            '-CAkey', 'ca.key', '-CAcreateserial', '-days', '2',
            '-extfile', 'server.ext', '-out', 'server.pem', cwd=d)
    return {k: os.path.join(d, v) for k, v in (
        ('ca', 'ca.pem'), ('other_ca', 'other-ca.pem'),
        ('cert', 'server.pem'), ('key', 'server.key'),
        ('other_key', 'other-ca.key'))}


class HttpsSuite:
    def __init__(self, args, workdir):
        self.args = args
        self.workdir = workdir
        self.pki = make_pki(os.path.join(workdir, 'pki'))
        self.emu = Emu(args.emu, workdir, ['--https-cert', self.pki['cert'],
                                           '--https-key', self.pki['key']])
        self.emus = [self.emu]
        self.ctx = ssl.create_default_context(cafile=self.pki['ca'])

    def uri(self, port, host='localhost'):
        return 'https://%s:%d/' % (host, port)

    def good_client_works(self):
        check(self.emu.alive(), 'hbase-emu died: ' +
              self.emu.log_text()[-2000:])
        c, tr = thrift1(self.uri(self.emu.port), cafile=self.pki['ca'])
        check(b't' in c.getTableNames(), 'getTableNames lacks t')
        tr.close()

    def test_round_trip(self):
        round_trip(self.uri(self.emu.port), self.uri(self.emu.port2),
                   cafile=self.pki['ca'])
        # the IP address is in the certificate too
        c, tr = thrift1(self.uri(self.emu.port, '127.0.0.1'),
                        cafile=self.pki['ca'])
        check(b't' in c.getTableNames(), 'by IP address')
        tr.close()

    def test_keep_alive(self):
        conn = None
        socks = set()
        for i in range(3):
            st, hdr, body, conn = raw(self.emu.port, 'POST',
                                      body=call_message(seqid=i + 1),
                                      tls=self.ctx, conn=conn)
            check(st == 200 and read_reply(body)[2] == i + 1,
                  'POST %d over TLS: %d' % (i, st))
            socks.add(id(conn.sock))
        check(len(socks) == 1, 'TLS keep-alive: %d sockets' % len(socks))
        check(conn.sock.version() in ('TLSv1.2', 'TLSv1.3'),
              'TLS version %s' % conn.sock.version())
        conn.close()

    def test_wrong_ca(self):
        try:
            c, tr = thrift1(self.uri(self.emu.port),
                            cafile=self.pki['other_ca'])
            c.getTableNames()
        except ssl.SSLCertVerificationError as e:
            check('certificate verify failed' in str(e), str(e))
        else:
            raise Failure('a server certificate from another CA verified')
        # a name the certificate does not carry
        ctx = ssl.create_default_context(cafile=self.pki['ca'])
        try:
            with socket.create_connection(('127.0.0.1', self.emu.port),
                                          timeout=10) as s:
                with ctx.wrap_socket(s, server_hostname='not-localhost'):
                    pass
        except ssl.SSLCertVerificationError as e:
            check('match' in str(e) or 'mismatch' in str(e), str(e))
        else:
            raise Failure('a hostname outside the SAN verified')
        self.good_client_works()

    def test_plain_http_to_tls_port(self):
        try:
            st, _, _, c = raw(self.emu.port, 'POST', body=call_message())
            c.close()
        except (http.client.HTTPException, ConnectionError, OSError):
            pass
        else:
            raise Failure('plain HTTP on the TLS port got status %d' % st)
        self.good_client_works()

    def test_bad_key(self):
        emu = Emu(self.args.emu, self.workdir,
                  ['--https-cert', self.pki['cert'],
                   '--https-key', self.pki['other_key']], thrift2=False,
                  expect_fail=True)
        rc = emu.stop()
        check(rc not in (0, None), 'a certificate with the wrong key: '
              'exit %s' % rc)
        check('listening' not in emu.log_text() and
              'key values mismatch' in emu.log_text(),
              'a certificate with the wrong key: ' + emu.log_text())

    def run(self):
        return hsptest.run_cases(self, ['test_round_trip', 'test_keep_alive',
                                        'test_wrong_ca',
                                        'test_plain_http_to_tls_port',
                                        'test_bad_key'])


# ---------------------------------------------------------------------------
# mode spnego

SERVICE = 'HTTP/localhost'


class SpnegoSuite:
    def __init__(self, args, workdir, realm):
        if kerberos is None:
            raise Failure('python3-kerberos is missing (.ci/quickstart test '
                          'installs it)')
        self.args = args
        self.workdir = workdir
        self.r = realm
        k = realm.path
        realm.add_principals(SERVICE, 'alice', 'hbase/localhost')
        self.server_kt = realm.export(SERVICE, k('http.keytab'))
        self.alice_kt = realm.export('alice', k('alice.keytab'))
        self.alice_cc = realm.kinit('alice', self.alice_kt)
        os.environ.update(realm.env(ccache=self.alice_cc))
        self.spnego = ['--spnego-principal', realm.qualify(SERVICE),
                       '--spnego-keytab', self.server_kt]
        self.emu = Emu(args.emu, workdir, self.spnego, env=realm.env())
        self.emus = [self.emu]
        self.uri = 'http://localhost:%d/' % self.emu.port
        self.Neg = make_negotiate_client_class()

    def good_client_works(self, emu=None):
        emu = emu or self.emu
        check(emu.alive(), 'hbase-emu died: ' + emu.log_text()[-2000:])
        c, tr = thrift1('http://localhost:%d/' % emu.port, cls=self.Neg)
        check(b't' in c.getTableNames(), 'getTableNames lacks t')
        tr.close()

    def test_no_token(self):
        st, hdr, body, c = raw(self.emu.port, 'POST', body=call_message())
        c.close()
        check(st == 401, 'no Authorization: status %d' % st)
        check(hdr.get_all('WWW-Authenticate') == ['Negotiate'],
              'challenge %r' % hdr.get_all('WWW-Authenticate'))
        t = expect_http_failure(
            lambda box: (box.append(thrift1(self.uri)[1]),
                         Hbase.Client(TBinaryProtocol.TBinaryProtocol(
                             box[0])).getTableNames()),
            401, 'THttpClient without a token')
        check(t.headers.get('WWW-Authenticate') == 'Negotiate',
              'THttpClient saw %r' % t.headers.get('WWW-Authenticate'))
        t.close()
        # GET is the servlet's doPost too: the same 401
        st, hdr, _, c = raw(self.emu.port, 'GET')
        c.close()
        check(st == 401, 'GET without a token: %d' % st)
        self.good_client_works()

    def test_good_token(self):
        for mech in ('krb5', 'spnego'):
            c, tr = thrift1(self.uri, cls=self.Neg, mech=mech)
            c.mutateRow(b't', b'k-' + mech.encode(),
                        [T.Mutation(column=b'f:q', value=b'v')], {})
            check(c.getRow(b't', b'k-' + mech.encode(), {})[0]
                  .columns[b'f:q'].value == b'v', mech + ' round trip')
            hdr = tr.headers.get('WWW-Authenticate') or ''
            check(hdr.startswith('Negotiate ') and len(hdr) > 20,
                  '%s reply header %r' % (mech, hdr))
            # the reply token completes mutual authentication
            rc = kerberos.authGSSClientStep(tr.last_ctx, hdr[10:])
            check(rc == kerberos.AUTH_GSS_COMPLETE,
                  '%s: mutual authentication step returned %r' % (mech, rc))
            tr.close()
        check(self.emu.wait_log('effective user: alice'),
              'no "effective user: alice" in the log')
        round_trip(self.uri, 'http://localhost:%d/' % self.emu.port2,
                   cls=self.Neg)

    def post_with(self, authorization, emu=None):
        emu = emu or self.emu
        st, hdr, body, c = raw(emu.port, 'POST', body=call_message(),
                               headers={'Authorization': authorization})
        c.close()
        return st, hdr, body

    def expect_401(self, authorization, what, text=None):
        st, hdr, body = self.post_with(authorization)
        check(st == 401, '%s: status %d' % (what, st))
        check(hdr.get_all('WWW-Authenticate') == ['Negotiate'],
              '%s: challenge %r' % (what, hdr.get_all('WWW-Authenticate')))
        check(b'Authentication Error' in body, '%s: page %r' %
              (what, body[:300]))
        if text is not None:
            check(text.encode() in body, '%s: %r not in %r' %
                  (what, text, body[:400]))

    def test_bad_tokens(self):
        self.expect_401('Negotiate ' + base64.b64encode(
            os.urandom(300)).decode(), 'random token')
        self.expect_401('Negotiate not*base64!', 'not base64')
        # servers trim header values: "Negotiate " arrives as
        # "Negotiate", too short for HBase's substring(10)
        self.expect_401('Negotiate ', 'empty token')
        self.expect_401('Basic YWxpY2U6c2VjcmV0', 'Basic credentials')
        self.expect_401('Neg', 'short header')
        # a ticket for another service
        token, _ = negotiate_token('hbase@localhost')
        self.expect_401('Negotiate ' + token, 'another service\'s ticket')
        # a token is good once: the replay cache refuses it the second time
        token, _ = negotiate_token()
        st, _, body = self.post_with('Negotiate ' + token)
        check(st == 200 and read_reply(body)[3] is not None,
              'fresh token: %d' % st)
        self.expect_401('Negotiate ' + token, 'replayed token', 'replay')
        check(self.emu.wait_log('Kerberos Authentication failed'),
              'no failure in the log')
        self.good_client_works()

    def test_doas(self):
        t = expect_http_failure(
            lambda box: (box.append(thrift1(
                self.uri, cls=self.Neg, extra={'doAs': 'bob'})[1]),
                Hbase.Client(TBinaryProtocol.TBinaryProtocol(
                    box[0])).getTableNames()),
            500, 'doAs without proxyuser')
        t.close()
        # SPNEGO over HTTPS, with proxyuser support
        pki = make_pki(os.path.join(self.workdir, 'pki'))
        emu = Emu(self.args.emu, self.workdir, self.spnego + [
            '--http-proxyuser', '--https-cert', pki['cert'],
            '--https-key', pki['key']], env=self.r.env())
        self.emus.append(emu)
        uri = 'https://localhost:%d/' % emu.port
        c, tr = thrift1(uri, cls=self.Neg, cafile=pki['ca'],
                        extra={'doAs': 'bob'})
        check(b't' in c.getTableNames(), 'doAs with proxyuser')
        tr.close()
        check(emu.wait_log('effective user: bob'),
              'no "effective user: bob" in the log')
        # authentication still comes first
        st, hdr, _, conn = raw(emu.port, 'POST', body=call_message(),
                               headers={'doAs': 'bob'},
                               tls=ssl.create_default_context(
                                   cafile=pki['ca']))
        conn.close()
        check(st == 401, 'doAs without a token: %d' % st)
        c, tr = thrift1(uri, cls=self.Neg, cafile=pki['ca'])
        check(b't' in c.getTableNames(), 'SPNEGO over HTTPS')
        tr.close()

    def test_startup_checks(self):
        # the keytab must hold the principal's keys
        emu = Emu(self.args.emu, self.workdir, [
            '--spnego-principal', self.r.qualify('HTTP/otherhost'),
            '--spnego-keytab', self.server_kt], env=self.r.env(),
            thrift2=False, expect_fail=True)
        check(emu.stop() not in (0, None), 'a keytab without the key')
        # auth-conf over HTTP needs TLS, in HBase's words
        emu = Emu(self.args.emu, self.workdir, [
            '--sasl-qop', 'auth-conf', '--principal',
            self.r.qualify(SERVICE), '--keytab', self.server_kt],
            env=self.r.env(), thrift2=False, expect_fail=True)
        check(emu.stop() not in (0, None) and
              "QoP is privacy, but hbase.thrift.ssl.enabled is false" in
              emu.log_text(), 'auth-conf without TLS: ' + emu.log_text())

    def run(self):
        return hsptest.run_cases(self, ['test_no_token', 'test_good_token',
                                        'test_bad_tokens', 'test_doas',
                                        'test_startup_checks'])


# ---------------------------------------------------------------------------

def finish(suite, failed):
    for emu in getattr(suite, 'emus', []):
        log = emu.log_text()
        rc = emu.stop()
        if rc != 0:
            failed.append('exit status %s of %s' % (rc, emu.args))
        if failed:
            print('--- hbase-emu log (%s) ---\n%s' % (' '.join(emu.args),
                                                    log[-4000:]))
    return failed


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--emu', required=True)
    ap.add_argument('--pydir', required=True)
    ap.add_argument('--mode', choices=('http', 'https', 'spnego'),
                    required=True)
    args = ap.parse_args()
    hsptest.import_thrift(args.pydir, globals())
    global kerberos
    try:
        import kerberos as _k
        kerberos = _k
    except ImportError:
        kerberos = None
    if args.mode in ('https', 'spnego') and shutil.which('openssl') is None:
        print('openssl CLI not found: install openssl (.ci/quickstart test)')
        return 1
    workdir = tempfile.mkdtemp(prefix='hsp-http-')
    suite = None
    failed = ['(crashed)']
    try:
        if args.mode == 'spnego':
            with krb5lib.Realm() as realm:
                print('realm %s: KDC on 127.0.0.1:%d in %.2fs' %
                      (realm.realm, realm.port, realm.started_in))
                try:
                    suite = SpnegoSuite(args, workdir, realm)
                    failed = suite.run()
                finally:
                    failed = finish(suite, failed)
        else:
            try:
                suite = (HttpSuite if args.mode == 'http'
                         else HttpsSuite)(args, workdir)
                failed = suite.run()
            finally:
                failed = finish(suite, failed)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    if failed:
        print('%d failed: %s' % (len(failed), ', '.join(failed)))
        return 1
    return 0


if __name__ == '__main__':
    sys.exit(main())
