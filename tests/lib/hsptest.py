"""hsptest: what every Python test shares: ports, waiting, the generated
Thrift modules, and the HBase a test talks to, either the in-tree emulator
(hbase-emu, the fast default) or real HBase (tests/hbase/hbase-mini: HBase's
own Thrift servers on an in-process cluster).  Run with Debian's
/usr/bin/python3 (python3-thrift).

A test picks its backend with --backend-kind emu|real (add_backend_args);
start_backend() then gives an object with .port (Thrift1), .port2 (Thrift2,
when asked for), .kind, .alive(), .close() and .log_text(), whichever it is.
"""

import os
import re
import select
import signal
import socket
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SRC_ROOT = os.path.dirname(os.path.dirname(HERE))
HBASE_MINI = os.path.join(SRC_ROOT, 'tests', 'hbase', 'hbase-mini')

# seconds real HBase may take to print its ready line: a cold JVM on a
# loaded 2-core machine, plus Maven's first resolution when the cache is cold
REAL_READY_TIMEOUT = float(os.environ.get('HSP_REAL_READY_TIMEOUT', '600'))


# ---- ports and waiting ---------------------------------------------------

def free_port():
    s = socket.socket()
    s.bind(('127.0.0.1', 0))
    port = s.getsockname()[1]
    s.close()
    return port


def wait_for(pred, timeout, what):
    end = time.time() + timeout
    while True:
        v = pred()
        if v:
            return v
        if time.time() > end:
            raise AssertionError('timed out waiting for ' + what)
        time.sleep(0.02)


def can_connect(port, host='127.0.0.1'):
    try:
        socket.create_connection((host, port), timeout=0.5).close()
        return True
    except OSError:
        return False


# ---- the generated Thrift modules ----------------------------------------

class Thrift(object):
    """The generated modules and python3-thrift's classes, in one place."""

    def __init__(self, pydir):
        if pydir not in sys.path:
            sys.path.insert(0, pydir)
        from hbase1 import Hbase, ttypes
        from hbase2 import THBaseService, ttypes as ttypes2
        from thrift.transport import TSocket, TTransport
        from thrift.protocol import TBinaryProtocol, TCompactProtocol
        from thrift.Thrift import TApplicationException
        self.Hbase, self.T = Hbase, ttypes
        self.THBaseService, self.T2 = THBaseService, ttypes2
        self.TSocket, self.TTransport = TSocket, TTransport
        self.TBinaryProtocol = TBinaryProtocol
        self.TCompactProtocol = TCompactProtocol
        self.TApplicationException = TApplicationException

    def _protocol(self, port, proto, transport, timeout):
        sock = self.TSocket.TSocket('127.0.0.1', port)
        sock.setTimeout(int(timeout * 1000))
        if transport == 'framed':
            trans = self.TTransport.TFramedTransport(sock)
        else:
            trans = self.TTransport.TBufferedTransport(sock)
        if proto == 'compact':
            prot = self.TCompactProtocol.TCompactProtocol(trans)
        else:
            prot = self.TBinaryProtocol.TBinaryProtocol(trans)
        trans.open()
        return trans, prot

    def client1(self, port, proto='binary', transport='buffered',
                timeout=30.0):
        trans, prot = self._protocol(port, proto, transport, timeout)
        c = self.Hbase.Client(prot)
        c.transport = trans
        return c

    def client2(self, port, proto='binary', transport='buffered',
                timeout=30.0):
        trans, prot = self._protocol(port, proto, transport, timeout)
        c = self.THBaseService.Client(prot)
        c.transport = trans
        return c


# ---- backends --------------------------------------------------------------

def add_backend_args(parser):
    parser.add_argument('--backend-kind', choices=('emu', 'real'),
                        default=os.environ.get('HSP_BACKEND_KIND', 'emu'),
                        help='the HBase behind the proxy and as reference: '
                             'hbase-emu (default) or real HBase '
                             '(tests/hbase/hbase-mini)')


class EmuBackend(object):
    """hbase-emu on a port of its own, serving Thrift1 (and Thrift2 on
    port2 when asked), tables made at start."""

    kind = 'emu'

    def __init__(self, binary, workdir, proto='binary', transport='buffered',
                 tables=None, thrift2=False, extra=(), name='emu'):
        self.port = free_port()
        self.port2 = free_port() if thrift2 else None
        self.log_path = os.path.join(workdir, name + '.log')
        self.log = open(self.log_path, 'ab')
        cmd = [binary, '--listen', '127.0.0.1:%d' % self.port]
        if self.port2:
            cmd += ['--thrift2-listen', '127.0.0.1:%d' % self.port2]
        if proto == 'compact':
            cmd.append('--compact')
        if transport == 'framed':
            cmd.append('--framed')
        for t, fams in sorted((tables or {}).items()):
            cmd += ['--create-table', '%s:%s' % (t, ','.join(fams))]
        cmd += list(extra)
        self.proc = subprocess.Popen(cmd, stdout=self.log,
                                     stderr=subprocess.STDOUT)
        wait_for(lambda: can_connect(self.port) or self.proc.poll() is not None,
                 10, 'hbase-emu listening')
        if self.proc.poll() is not None:
            raise AssertionError('hbase-emu exited at start; log in '
                                 + self.log_path)

    def alive(self):
        return self.proc.poll() is None

    def log_text(self):
        with open(self.log_path, 'rb') as f:
            return f.read().decode('utf-8', 'replace')

    def close(self):
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        self.log.close()


def _sigterm_on_parent_death():
    """In the child between fork and exec: prctl(PR_SET_PDEATHSIG,
    SIGTERM), which the exec of hbase-mini's java keeps."""
    import ctypes
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(1, signal.SIGTERM, 0, 0, 0)


class RealBackend(object):
    """Real HBase: tests/hbase/hbase-mini, one Thrift1 server (and a Thrift2
    one when asked) of the given protocol and transport; tables are made
    through Thrift1 createTable, as an application would."""

    kind = 'real'

    def __init__(self, workdir, proto='binary', transport='buffered',
                 tables=None, thrift2=False, thrift=None, extra=(),
                 name='hbase', die_with_parent=False, secure=None):
        """die_with_parent: the JVM gets SIGTERM (a clean stop that removes
        its data dir) when the thread that started it dies, even by
        SIGKILL; for a long-lived caller such as run-bench, whose cluster
        runs in a session of its own and so misses the terminal's ^C.
        secure: a list of SECURE_MODES, all SASL or all HTTP: the cluster
        on Kerberos (a KDC in workdir/kdc), Thrift servers in each mode
        (.secure_ports[mode]: Thrift1, Thrift2; use_mode() makes one the
        .mode, .secure_port, .secure_port2), and unsecured ones
        (--plain-thrift1/2, binary, buffered) at .port and .port2, the
        reference a test compares with and where its tables are made."""
        self.log_path = os.path.join(workdir, name + '.log')
        self.log = open(self.log_path, 'ab')
        self.mode = None
        self.kdc_dir = None
        if secure is not None:
            # SASL is unframed and HTTP binary only, as HBase enforces; the
            # plain reference speaks the same
            proto, transport = 'binary', 'buffered'
        self.proto, self.transport = proto, transport
        cmd = [HBASE_MINI, '--protocol', proto, '--transport', transport]
        if secure is None:
            cmd += ['--thrift1', '127.0.0.1:0']
            if thrift2:
                cmd += ['--thrift2', '127.0.0.1:0']
        else:
            self.kdc_dir = os.path.join(workdir, 'kdc')
            cmd += ['--kdc', self.kdc_dir] + secure_mini_args(secure)
            for m in secure:
                cmd += ['--thrift1', '127.0.0.1:0' + secure_server_keys(m)]
                if thrift2:
                    cmd += ['--thrift2', '127.0.0.1:0' + secure_server_keys(m)]
            cmd += ['--plain-thrift1', '127.0.0.1:0']
            if thrift2:
                cmd += ['--plain-thrift2', '127.0.0.1:0']
        cmd += list(extra)
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE,
                                     stdin=subprocess.PIPE,
                                     stderr=self.log, start_new_session=True,
                                     preexec_fn=_sigterm_on_parent_death
                                     if die_with_parent else None)
        line = self._read_line(REAL_READY_TIMEOUT)
        ports = {}
        if line.startswith('ready '):
            for w in line.split()[1:]:
                k, _, v = w.partition('=')
                ports[k] = [int(a.rsplit(':', 1)[1]) for a in v.split(',')]
        if 'thrift1' not in ports:
            self.close()
            raise AssertionError('hbase-mini did not start (%r); log in %s:\n%s'
                                 % (line, self.log_path,
                                    self.log_text()[-3000:]))
        self.port = ports['thrift1'][0]
        self.port2 = ports['thrift2'][0] if 'thrift2' in ports else None
        self.secure_port = self.secure_port2 = None
        self.secure_ports = {}
        if secure is not None:
            for i, mode in enumerate(secure):
                self.secure_ports[mode] = (
                    ports['thrift1'][i],
                    ports['thrift2'][i] if 'thrift2' in ports else None)
            self.use_mode(secure[0])
            self.port = ports['plain1'][0]
            self.port2 = ports['plain2'][0] if 'plain2' in ports else None
        if tables:
            self.create_tables(thrift, tables)

    def use_mode(self, mode):
        """The secured servers of that mode are the ones tests use."""
        self.mode = mode
        self.secure_port, self.secure_port2 = self.secure_ports[mode]

    def _read_line(self, timeout):
        end = time.time() + timeout
        buf = b''
        fd = self.proc.stdout.fileno()
        while time.time() < end:
            r, _, _ = select.select([fd], [], [], 1.0)
            if r:
                chunk = os.read(fd, 4096)
                if not chunk:
                    return buf.decode('utf-8', 'replace').strip()
                buf += chunk
                if b'\n' in buf:
                    return buf.split(b'\n', 1)[0].decode().strip()
            elif self.proc.poll() is not None:
                break
        return buf.decode('utf-8', 'replace').strip()

    def create_tables(self, thrift, tables):
        c = thrift.client1(self.port, self.proto, self.transport, 120.0)
        try:
            for t, fams in sorted(tables.items()):
                c.createTable(t.encode(), [
                    thrift.T.ColumnDescriptor(name=f.encode() + b':')
                    for f in fams])
        finally:
            c.transport.close()

    def control(self, command):
        """'stop HOST:PORT' / 'start HOST:PORT' a Thrift server."""
        self.proc.stdin.write(command.encode() + b'\n')
        self.proc.stdin.flush()
        return self._read_line(120)

    def alive(self):
        return self.proc.poll() is None

    def log_text(self):
        with open(self.log_path, 'rb') as f:
            return f.read().decode('utf-8', 'replace')

    def close(self):
        if self.proc.poll() is None:
            # the JVM's shutdown hook stops the cluster and removes its data
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(60)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
        self.log.close()


# ---- real HBase secured (the real-secure suite) ---------------------------

# The proxy's secure backend modes, each against HBase's own Thrift servers
# on a Kerberos cluster (hbase-mini --kdc): SASL GSSAPI in each QOP, HTTP
# with SPNEGO, HTTPS with SPNEGO, and HTTPS with SPNEGO and doAs alice.
SECURE_MODES = ('sasl-auth', 'sasl-auth-int', 'sasl-auth-conf',
                'http-spnego', 'https-spnego', 'https-doas')


def secure_mini_args(modes):
    """hbase-mini's options for modes of SECURE_MODES on one cluster (after
    --kdc): all SASL, or all HTTP."""
    if all(m.startswith('sasl-') for m in modes):
        return ['--sasl-qop', modes[0][len('sasl-'):]]
    if any(m.startswith('sasl-') for m in modes):
        raise ValueError('SASL and HTTP modes on one cluster: %r' % (modes,))
    args = ['--http', '--spnego']
    if any(m.startswith('https-') for m in modes):
        args.append('--https')
    if 'https-doas' in modes:
        args.append('--proxyuser')
    return args


def secure_server_keys(mode):
    """The ",KEY=VALUE" of hbase-mini's --thrift1/2 that make one server of
    the cluster that mode's (HBase's own per-server keys)."""
    if mode.startswith('sasl-'):
        return ',hbase.thrift.security.qop=' + mode[len('sasl-'):]
    keys = ''
    if mode == 'http-spnego':
        keys += ',hbase.thrift.ssl.enabled=false'
    if mode != 'https-doas':
        keys += ',hbase.thrift.support.proxyuser=false'
    return keys


def secure_backend_keys(mode, kdc_dir, qop=None, keytab=None, ca=None,
                        doas=None):
    """The [backend] keys (text) by which the proxy reaches HBase's servers
    in that mode as proxy@HSP.TEST; qop, keytab, ca and doas override the
    mode's own (the failure cases)."""
    keys = ('sasl = gssapi\nsasl_principal = proxy@HSP.TEST\n'
            'sasl_keytab = %s\nsasl_server_host = localhost\n'
            % (keytab or os.path.join(kdc_dir, 'proxy.keytab')))
    if mode.startswith('sasl-'):
        return keys + 'sasl_qop = %s\n' % (qop or mode[len('sasl-'):])
    keys += 'transport = http\n'
    if mode.startswith('https-'):
        keys += 'https = true\ntls_ca = %s\n' % (
            ca or os.path.join(kdc_dir, 'ca.pem'))
    if doas or mode == 'https-doas':
        keys += 'http_doas = %s\n' % (doas or 'alice')
    return keys


def secure_env(kdc_dir, base=None, ticket_lifetime=None):
    """The proxy's environment: the test realm's krb5.conf and a ticket
    cache of nobody's, so it works from its keytab alone.
    ticket_lifetime: seconds its tickets last (a krb5.conf of its own
    asking for them; the KDC and HBase keep a day's)."""
    env = dict(os.environ if base is None else base)
    conf = os.path.join(kdc_dir, 'krb5.conf')
    if ticket_lifetime:
        with open(conf) as f:
            text = f.read()
        conf = os.path.join(kdc_dir, 'krb5-%ds.conf' % ticket_lifetime)
        with open(conf, 'w') as f:
            f.write(re.sub(r'ticket_lifetime = \S+',
                           'ticket_lifetime = %ds' % ticket_lifetime, text))
    env['KRB5_CONFIG'] = conf
    env['KRB5CCNAME'] = 'FILE:' + os.path.join(kdc_dir, 'nobody.ccache')
    return env


def secure_conf(conf_text, backend):
    """A proxy configuration written for plain backends, pointed at
    backend's secured servers instead: in [backend], the plain ports of
    servers/thrift2_servers become the secured ones, transport and the
    security keys are the mode's.  Unchanged unless backend is secured."""
    mode = getattr(backend, 'mode', None)
    if mode is None:
        return conf_text
    swap = {backend.port: backend.secure_port}
    if backend.port2 is not None:
        swap[backend.port2] = backend.secure_port2
    keys = secure_backend_keys(mode, backend.kdc_dir)
    out, section = [], None
    for line in conf_text.split('\n'):
        m = re.match(r'\s*\[([^\]]+)\]', line)
        if m:
            section = m.group(1)
            out.append(line)
            if section == 'backend':
                out.extend(keys.rstrip('\n').split('\n'))
            continue
        if section == 'backend':
            m = re.match(r'\s*(\w+)\s*=\s*(.*)$', line)
            if m and m.group(1) in ('servers', 'thrift2_servers'):
                line = '%s = %s' % (m.group(1), re.sub(
                    r':(\d+)', lambda p: ':%d' % swap.get(int(p.group(1)),
                                                         int(p.group(1))),
                    m.group(2)))
            elif m and m.group(1) == 'transport' and 'transport' in keys:
                continue
            elif m and m.group(1) in ('sasl', 'sasl_qop', 'https'):
                continue
        out.append(line)
    return '\n'.join(out)


class AttachedBackend(RealBackend):
    """A secured real HBase another process started (HSP_REAL_ATTACH names
    the JSON file it wrote: mode, kdc, ports): the real-secure suite runs
    several scripts on one cluster a mode.  Closing it is the starter's."""

    def __init__(self, path, tables=None, thrift=None, **_kw):
        import json
        with open(path) as f:
            a = json.load(f)
        self.mode, self.kdc_dir = a['mode'], a['kdc']
        self.proto, self.transport = 'binary', 'buffered'
        self.port, self.port2 = a['plain1'], a['plain2']
        self.secure_port, self.secure_port2 = a['thrift1'], a['thrift2']
        self.log_path = a['log']
        self.proc = None
        if tables:
            self.create_tables(thrift, tables)

    def alive(self):
        return True

    def close(self):
        pass


def attach_info(backend, log_path):
    """What AttachedBackend reads, for a secured RealBackend."""
    return {'mode': backend.mode, 'kdc': backend.kdc_dir,
            'plain1': backend.port, 'plain2': backend.port2,
            'thrift1': backend.secure_port, 'thrift2': backend.secure_port2,
            'log': log_path}


def start_backend(kind, workdir, emu=None, **kw):
    """The backend a test asked for: kind 'emu' (emu = the hbase-emu
    binary) or 'real' (the secured cluster HSP_REAL_ATTACH names, when
    set)."""
    if kind == 'real' and os.environ.get('HSP_REAL_ATTACH'):
        return AttachedBackend(os.environ['HSP_REAL_ATTACH'], **kw)
    if kind == 'real':
        kw.pop('extra', None)
        return RealBackend(workdir, extra=kw.pop('real_extra', ()), **kw)
    kw.pop('real_extra', None)
    kw.pop('thrift', None)
    return EmuBackend(emu, workdir, **kw)


# ---- protobuf Filters (Thrift2 filterBytes) -------------------------------

def pb_field(num, value):
    """A protobuf field: a varint for an int, else length-delimited."""
    def varint(v):
        out = b''
        while True:
            b = v & 0x7f
            v >>= 7
            if not v:
                return out + bytes([b])
            out += bytes([b | 0x80])
    if isinstance(value, int):
        return varint(num << 3) + varint(value)
    return varint((num << 3) | 2) + varint(len(value)) + value


def pb_filter(cls, ser):
    """Filter { name = cls (bytes, a full class name), serialized_filter }."""
    return pb_field(1, cls) + pb_field(2, ser)


# ---- the proxy -------------------------------------------------------------

class Proxy(object):
    """hbase-salt-proxy on conf_text (a configuration file's text), waited
    for on every port in ports; .close() stops it with SIGTERM."""

    def __init__(self, binary, workdir, conf_text, ports, name='proxy',
                 env=None, timeout=30):
        conf = os.path.join(workdir, name + '.conf')
        self.conf = conf
        with open(conf, 'w') as f:
            f.write(conf_text)
        self.log_path = os.path.join(workdir, name + '.log')
        self.log = open(self.log_path, 'wb')
        self.proc = subprocess.Popen([binary, '-c', conf, '--log-level',
                                      'info'], env=env,
                                     stdout=self.log, stderr=subprocess.STDOUT)
        wait_for(lambda: all(can_connect(p) for p in ports)
                 or self.proc.poll() is not None, timeout, name + ' listening')
        if self.proc.poll() is not None:
            raise AssertionError('%s exited at start; log in %s:\n%s'
                                 % (name, self.log_path, self.log_text()))

    def log_text(self):
        with open(self.log_path, 'rb') as f:
            return f.read().decode('utf-8', 'replace')

    def close(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()


def unittest_main_shared(argv, workdir, backend):
    """unittest.main for a test whose classes share one real HBase cluster
    (a JVM start costs ~30 s): backend() gives that cluster, or None if no
    test started it; it is stopped at the end, and workdir (its log) kept
    when a test failed or HSP_KEEP_LOGS is set.  Exits."""
    import shutil
    import unittest
    t0 = time.time()
    try:
        prog = unittest.main(argv=argv, verbosity=2, exit=False)
    finally:
        b = backend()
        if b is not None:
            b.close()
    ok = prog.result.wasSuccessful()
    sys.stderr.write('run with real HBase: %.1f s\n' % (time.time() - t0))
    if ok and not os.environ.get('HSP_KEEP_LOGS'):
        shutil.rmtree(workdir, ignore_errors=True)
    else:
        sys.stderr.write('real HBase log kept in %s\n' % workdir)
    sys.exit(0 if ok else 1)
