"""hsptest: what every Python test shares: ports, waiting, the generated
Thrift modules, and the HBase a test talks to, either the in-tree emulator
(hbase-emu, the fast default) or real HBase (tests/hbase/hbase-mini: HBase's
own Thrift servers on an in-process cluster).  Run with Debian's
/usr/bin/python3 (python3-thrift).

A test picks its backend with --backend-kind emu|real (add_backend_args);
start_backend() then gives an object with .port (Thrift1), .port2 (Thrift2,
when asked for), .kind, .alive(), .close() and .log_text(), whichever it is.
"""

import errno
import os
import random
import re
import select
import signal
import socket
import subprocess
import struct
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SRC_ROOT = os.path.dirname(os.path.dirname(HERE))
HBASE_MINI = os.path.join(SRC_ROOT, 'tests', 'hbase', 'hbase-mini')

# seconds real HBase may take to print its ready line: a cold JVM on a
# loaded 2-core machine, plus Maven's first resolution when the cache is cold
REAL_READY_TIMEOUT = float(os.environ.get('HSP_REAL_READY_TIMEOUT', '600'))


# ---- ports and waiting ---------------------------------------------------

def _ephemeral_low():
    try:
        with open('/proc/sys/net/ipv4/ip_local_port_range') as f:
            return int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


# Ports handed out by free_port: never handed out twice by one process.
_PORTS_GIVEN = set()
# Not seeded from pid and time: two tests started together would draw
# alike (pid ^ time can be equal), and their probes would both pass
_PORT_RANDOM = random.SystemRandom()


def _port_free(port):
    """Nobody holds port on loopback, TCP or UDP (a KDC takes both)."""
    for kind in (socket.SOCK_STREAM, socket.SOCK_DGRAM):
        s = socket.socket(socket.AF_INET, kind)
        try:
            s.bind(('127.0.0.1', port))
        except OSError:
            return False
        finally:
            s.close()
    return True


def free_port():
    """A loopback port nobody holds now, for a program to bind later.
    Drawn at random below the kernel's ephemeral range: a port taken
    there (bind to port 0) is also where every outgoing connection takes
    its local port, so between this call and the program's bind a JVM's
    connections (real HBase, its ZooKeeper) could take it, and the
    program failed with 'Address already in use'.  Below the range only
    another test's free_port can hand out the same port in that time,
    one chance in some 20 000."""
    top = min(_ephemeral_low(), 65536)
    if top < 13000:
        # a machine whose ephemeral range starts low: the kernel's choice
        s = socket.socket()
        s.bind(('127.0.0.1', 0))
        port = s.getsockname()[1]
        s.close()
        _PORTS_GIVEN.add(port)
        return port
    for _ in range(1000):
        port = _PORT_RANDOM.randrange(12000, top)
        if port in _PORTS_GIVEN or not _port_free(port):
            continue
        _PORTS_GIVEN.add(port)
        return port
    raise AssertionError('no free port below %d' % top)


def wait_for(pred, timeout, what):
    end = time.time() + timeout
    while True:
        v = pred()
        if v:
            return v
        if time.time() > end:
            raise AssertionError('timed out waiting for ' + what)
        time.sleep(0.02)


def http_get(port, path, host='127.0.0.1', timeout=10):
    """(status, body text) of GET path on an HTTP endpoint (the proxy's
    admin listener): an error status is returned, not raised."""
    import urllib.error
    import urllib.request
    url = 'http://%s:%d%s' % (host, port, path)
    try:
        with urllib.request.urlopen(url, timeout=timeout) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


def _listen_inodes(port):
    """Socket inodes listening on TCP port (any address), from /proc;
    None where /proc/net cannot be read."""
    found = set()
    for name in ('/proc/net/tcp', '/proc/net/tcp6'):
        try:
            with open(name) as f:
                lines = f.readlines()[1:]
        except OSError:
            if name.endswith('6'):
                continue
            return None
        for ln in lines:
            col = ln.split()
            # local_address is HEXADDR:HEXPORT, state 0A is LISTEN
            if (len(col) > 9 and col[3] == '0A'
                    and int(col[1].rsplit(':', 1)[1], 16) == port):
                found.add(col[9])
    return found


def _pid_tree(pid):
    """pid and its descendants, from /proc/PID/task/*/children."""
    todo, seen = [pid], []
    while todo:
        p = todo.pop()
        seen.append(p)
        try:
            tasks = os.listdir('/proc/%d/task' % p)
        except OSError:
            continue
        for t in tasks:
            try:
                with open('/proc/%d/task/%s/children' % (p, t)) as f:
                    todo.extend(int(c) for c in f.read().split())
            except (OSError, ValueError):
                pass
    return seen


def listening(pid, port):
    """Whether process pid (or a child of it) holds a socket listening on
    port.  Stronger than can_connect: a port drawn by free_port can, in a
    rare race, be taken by another test's program, and a connection that
    succeeds there says nothing about this one (a test that then stops
    "its" program would stop one still starting, before its handlers)."""
    inodes = _listen_inodes(port)
    if inodes is None:
        return can_connect(port)
    if not inodes:
        return False
    want = {'socket:[%s]' % i for i in inodes}
    for p in _pid_tree(pid):
        try:
            fds = os.listdir('/proc/%d/fd' % p)
        except OSError:
            continue
        for fd in fds:
            try:
                if os.readlink('/proc/%d/fd/%s' % (p, fd)) in want:
                    return True
            except OSError:
                pass
    return False


def can_connect(port, host='127.0.0.1'):
    try:
        socket.create_connection((host, port), timeout=0.5).close()
        return True
    except OSError:
        return False


class Failure(Exception):
    """A check that failed, for the tests that run their cases by hand: it
    is reported as its message, without a traceback."""


def check(cond, what):
    if not cond:
        raise Failure(what)


def run_cases(suite, names=None):
    """Runs suite's test_* methods (or names, in that order), a line for
    each: ok with its time, or FAIL with the reason (and the traceback
    unless it is a Failure).  Returns the names that failed."""
    import traceback
    if names is None:
        names = sorted(n for n in dir(suite) if n.startswith('test_'))
    failed = []
    for name in names:
        t0 = time.monotonic()
        try:
            getattr(suite, name)()
            print('ok   %-32s %.2fs' % (name, time.monotonic() - t0))
        except Exception as e:  # noqa: BLE001 - report every case
            failed.append(name)
            print('FAIL %-32s %s' % (name, e))
            if not isinstance(e, Failure):
                traceback.print_exc()
    return failed


def read_port_file(path):
    """The port a program wrote to path, or None while there is none."""
    try:
        with open(path) as f:
            return int(f.read().strip())
    except (OSError, ValueError):
        return None


# ---- programs the tests run ----------------------------------------------

class Daemon(object):
    """A program a test runs, its output in self.log_path: the one place
    that knows how to start one, wait for it and stop it."""

    name = 'daemon'
    proc = None
    stop_timeout = 10       # seconds stop() waits after SIGTERM

    def open_log(self, log_path, mode='wb'):
        self.log_path = log_path
        self.log = open(log_path, mode)

    def spawn(self, argv, env=None):
        self.proc = subprocess.Popen(argv, stdout=self.log,
                                     stderr=subprocess.STDOUT, env=env)

    def wait_ports(self, ports, timeout):
        """Waits until the program listens on every port of ports; fails
        at once, with the log, if it exits first."""
        wait_for(lambda: all(listening(self.proc.pid, p) for p in ports)
                 or self.proc.poll() is not None, timeout,
                 self.name + ' listening')
        if self.proc.poll() is not None:
            raise AssertionError('%s exited at start; log in %s:\n%s'
                                 % (self.name, self.log_path,
                                    self.log_text()[-3000:]))

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def log_text(self):
        if not self.log.closed:
            self.log.flush()
        with open(self.log_path, 'rb') as f:
            return f.read().decode('utf-8', 'replace')

    def rss_kb(self):
        with open('/proc/%d/status' % self.proc.pid) as f:
            for line in f:
                if line.startswith('VmRSS:'):
                    return int(line.split()[1])
        raise AssertionError('no VmRSS')

    def fds(self):
        return len(os.listdir('/proc/%d/fd' % self.proc.pid))

    def stop(self, timeout=None, killed=None):
        """SIGTERM, and the exit status once the program exits within
        timeout (stop_timeout); else SIGKILL and killed, or AssertionError
        when killed is None.  Closes the log."""
        if timeout is None:
            timeout = self.stop_timeout
        try:
            if self.proc.poll() is None:
                self.proc.send_signal(signal.SIGTERM)
            try:
                return self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
                if killed is None:
                    raise AssertionError('%s did not stop on SIGTERM'
                                         % self.name)
                return killed
        finally:
            self.log.close()

    def kill(self):
        """SIGKILL (a crash); start() may run it again."""
        if self.proc is not None:
            if self.proc.poll() is None:
                self.proc.kill()
            self.proc.wait()
            self.proc = None

    def close(self):
        self.kill()
        self.log.close()


class Emu(Daemon):
    """hbase-emu on ephemeral ports it writes to port files (Thrift1 in
    NAME.port; Thrift2 in NAME.port2 with thrift2=True), args after; a
    start() after kill() comes back on the same ports.  probe=False: the
    port files are enough, no wait for the listeners (the wait itself makes
    no connection either way: it reads /proc)."""

    def __init__(self, binary, workdir, args=(), name='emu', thrift2=False,
                 env=None, start=True, log_mode='ab', timeout=10, probe=True):
        self.binary, self.args, self.env = binary, list(args), env
        self.name, self.thrift2, self.timeout = name, thrift2, timeout
        self.probe = probe
        self.port = self.port2 = None
        self.port_file = os.path.join(workdir, name + '.port')
        self.port2_file = os.path.join(workdir, name + '.port2')
        self.open_log(os.path.join(workdir, name + '.log'), log_mode)
        if start:
            self.start()

    def argv(self):
        cmd = [self.binary, '--listen', '127.0.0.1:%d' % (self.port or 0),
               '--port-file', self.port_file]
        if self.thrift2:
            cmd += ['--thrift2-listen', '127.0.0.1:%d' % (self.port2 or 0),
                    '--thrift2-port-file', self.port2_file]
        return cmd + self.args

    def start(self):
        for f in (self.port_file, self.port2_file):
            if os.path.exists(f):
                os.unlink(f)
        self.spawn(self.argv(), self.env)

        def ports():
            if self.proc.poll() is not None:
                return True
            p = read_port_file(self.port_file)
            p2 = read_port_file(self.port2_file) if self.thrift2 else 0
            return p is not None and p2 is not None and (p, p2)
        got = wait_for(ports, self.timeout, self.name + ' port')
        if got is not True:
            self.port, p2 = got
            self.port2 = p2 if self.thrift2 else None
        ports = [self.port] + ([self.port2] if self.thrift2 else [])
        self.wait_ports(ports if self.probe else [], self.timeout)


# ---- the generated Thrift modules ----------------------------------------

# What import_thrift binds in a test module: the names the tests were
# written against (T is hbase1's ttypes, T2 hbase2's).
THRIFT_NAMES = ('Hbase', 'T', 'THBaseService', 'T2', 'TSocket', 'TTransport',
                'TBinaryProtocol', 'TCompactProtocol', 'TApplicationException',
                'TMessageType', 'TType', 'THttpClient', 'TSSLSocket')


class Thrift(object):
    """The generated modules and python3-thrift's classes, in one place."""

    def __init__(self, pydir):
        if pydir and pydir not in sys.path:
            sys.path.insert(0, pydir)
        from hbase1 import Hbase, ttypes
        from hbase2 import THBaseService, ttypes as ttypes2
        from thrift.transport import (TSocket, TTransport, THttpClient,
                                      TSSLSocket)
        from thrift.protocol import TBinaryProtocol, TCompactProtocol
        from thrift.Thrift import TApplicationException, TMessageType, TType
        self.Hbase, self.T = Hbase, ttypes
        self.THBaseService, self.T2 = THBaseService, ttypes2
        self.TSocket, self.TTransport = TSocket, TTransport
        self.THttpClient, self.TSSLSocket = THttpClient, TSSLSocket
        self.TBinaryProtocol = TBinaryProtocol
        self.TCompactProtocol = TCompactProtocol
        self.TApplicationException = TApplicationException
        self.TMessageType, self.TType = TMessageType, TType

    def protocol(self, trans, proto='binary', strict=None, accel=False):
        """A protocol over trans; accel: the C-accelerated classes (the
        same bytes, decoded in C); strict True: binary's version header
        written and required on read, False: the old headerless form,
        None: python3-thrift's default (written, not required)."""
        if proto == 'compact':
            if accel:
                return self.TCompactProtocol.TCompactProtocolAccelerated(
                    trans)
            return self.TCompactProtocol.TCompactProtocol(trans)
        if accel:
            return self.TBinaryProtocol.TBinaryProtocolAccelerated(trans)
        if strict is None:
            return self.TBinaryProtocol.TBinaryProtocol(trans)
        return self.TBinaryProtocol.TBinaryProtocol(
            trans, strictRead=strict, strictWrite=strict)

    def _protocol(self, port, proto, transport, timeout, strict=None,
                  accel=False):
        sock = self.TSocket.TSocket('127.0.0.1', port)
        if timeout is not None:     # None: block
            sock.setTimeout(int(timeout * 1000))
        if transport == 'framed':
            trans = self.TTransport.TFramedTransport(sock)
        else:
            trans = self.TTransport.TBufferedTransport(sock)
        prot = self.protocol(trans, proto, strict, accel)
        trans.open()
        return trans, prot

    def client1(self, port, proto='binary', transport='buffered',
                timeout=30.0, strict=None, accel=False):
        """An open Hbase.Client; its transport is .transport (and ._trans,
        the name older tests use), its protocol ._prot."""
        trans, prot = self._protocol(port, proto, transport, timeout,
                                     strict, accel)
        c = self.Hbase.Client(prot)
        c.transport = c._trans = trans
        c._prot = prot
        return c

    def pipelined_getrow(self, port, table, keys, seqid=100):
        """Thrift1 getRow of each of keys, all sent in one write on a new
        connection (a pipelining client), seqids from seqid on; returns
        [(name, seqid, getRow_result)] in the order the replies came."""
        from thrift.protocol import TBinaryProtocol
        out = self.TTransport.TMemoryBuffer()
        w = self.Hbase.Client(TBinaryProtocol.TBinaryProtocol(out))
        for i, k in enumerate(keys):
            w._seqid = seqid + i
            w.send_getRow(table, k, {})
        s = socket.create_connection(('127.0.0.1', port), 10)
        try:
            s.sendall(out.getvalue())
            sock = self.TSocket.TSocket()
            sock.handle = s
            iprot = TBinaryProtocol.TBinaryProtocol(
                self.TTransport.TBufferedTransport(sock))
            got = []
            for _ in keys:
                name, _, sid = iprot.readMessageBegin()
                res = self.Hbase.getRow_result()
                res.read(iprot)
                iprot.readMessageEnd()
                got.append((name, sid, res))
            return got
        finally:
            s.close()

    def client2(self, port, proto='binary', transport='buffered',
                timeout=30.0, strict=None, accel=False):
        trans, prot = self._protocol(port, proto, transport, timeout,
                                     strict, accel)
        c = self.THBaseService.Client(prot)
        c.transport = c._trans = trans
        c._prot = prot
        return c


# the Thrift import_thrift loaded: what client() uses
TH = None


def import_thrift(pydir, *into):
    """The one way a test loads the generated modules: a Thrift(pydir),
    kept for client().  Each of into (a module, or a module's globals())
    gets THRIFT_NAMES bound, for tests whose functions use module-level
    Hbase, T, TSocket..."""
    global TH
    if TH is None:
        TH = Thrift(pydir)
    for ns in into:
        ns = ns if isinstance(ns, dict) else ns.__dict__
        for name in THRIFT_NAMES:
            ns[name] = getattr(TH, name)
    return TH


def client(port, proto='binary', transport='buffered', timeout=10.0,
           strict=None, accel=False):
    """A Thrift1 client of the modules import_thrift loaded."""
    return TH.client1(port, proto, transport, timeout, strict, accel)


def put(c, table, row, value, column=b'd:a'):
    """One cell written through c, a client() of Thrift1."""
    c.mutateRow(table, row, [TH.T.Mutation(column=column, value=value)], {})


def get(c, table, row, column=b'd:a'):
    """The cell put() wrote, or None."""
    rows = c.getRow(table, row, {})
    return rows[0].columns[column].value if rows else None


# ---- certificates ---------------------------------------------------------

def openssl(*argv, cwd):
    """openssl ARGV in cwd: its output, or AssertionError with its
    complaint."""
    p = subprocess.run(['openssl'] + list(argv), cwd=cwd,
                       capture_output=True, text=True, timeout=60)
    if p.returncode != 0:
        raise AssertionError('openssl %s: %s' % (argv[0], p.stderr.strip()))
    return p.stdout


# ---- backends --------------------------------------------------------------

def add_backend_args(parser):
    parser.add_argument('--backend-kind', choices=('emu', 'real'),
                        default=os.environ.get('HSP_BACKEND_KIND', 'emu'),
                        help='the HBase behind the proxy and as reference: '
                             'hbase-emu (default) or real HBase '
                             '(tests/hbase/hbase-mini)')


def read_line(proc, timeout):
    """One line of proc's stdout (a pipe), stripped; what came before EOF,
    the process's exit or the timeout otherwise."""
    end = time.time() + timeout
    buf = b''
    fd = proc.stdout.fileno()
    while time.time() < end:
        r, _, _ = select.select([fd], [], [], 1.0)
        if r:
            chunk = os.read(fd, 1)
            if not chunk:
                break
            buf += chunk
            if buf.endswith(b'\n'):
                break
        elif proc.poll() is not None:
            break
    return buf.decode('utf-8', 'replace').strip()


class EmuBackend(object):
    """hbase-emu serving Thrift1 (and Thrift2 on port2 when asked) over one
    store, tables made at start.

    listeners: how many Thrift1 servers (ports, in .ports; .port is the
    first); thrift2: False, True or how many Thrift2 servers (.ports2).
    control: the emulator reads stop/start commands from a pipe, as
    hbase-mini does: .control('stop 127.0.0.1:PORT') stops that server (its
    connections and scanners lost), 'start ...' starts it again."""

    kind = 'emu'

    def __init__(self, binary, workdir, proto='binary', transport='buffered',
                 tables=None, thrift2=False, extra=(), name='emu',
                 listeners=1, control=False):
        self.ports = [free_port() for _ in range(listeners)]
        self.ports2 = [free_port() for _ in range(int(thrift2))]
        self.port = self.ports[0]
        self.port2 = self.ports2[0] if self.ports2 else None
        self.log_path = os.path.join(workdir, name + '.log')
        self.log = open(self.log_path, 'ab')
        cmd = [binary]
        for p in self.ports:
            cmd += ['--listen', '127.0.0.1:%d' % p]
        for p in self.ports2:
            cmd += ['--thrift2-listen', '127.0.0.1:%d' % p]
        if proto == 'compact':
            cmd.append('--compact')
        if transport == 'framed':
            cmd.append('--framed')
        for t, fams in sorted((tables or {}).items()):
            cmd += ['--create-table', '%s:%s' % (t, ','.join(fams))]
        cmd += list(extra)
        if control:
            cmd.append('--control-stdin')
            self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE,
                                         stdout=subprocess.PIPE,
                                         stderr=self.log)
            line = read_line(self.proc, 10)
            if not line.startswith('ready '):
                self.close()
                raise AssertionError('hbase-emu did not start (%r); log in %s'
                                     % (line, self.log_path))
        else:
            self.proc = subprocess.Popen(cmd, stdout=self.log,
                                         stderr=subprocess.STDOUT)
        wait_for(lambda: all(can_connect(p) for p in self.ports + self.ports2)
                 or self.proc.poll() is not None, 10, 'hbase-emu listening')
        if self.proc.poll() is not None:
            raise AssertionError('hbase-emu exited at start; log in '
                                 + self.log_path)

    def control(self, command):
        """'stop HOST:PORT' / 'start HOST:PORT' one Thrift server; returns
        the answer line ('ok stopped ...', 'ok started ...', 'error: ...')."""
        self.proc.stdin.write(command.encode() + b'\n')
        self.proc.stdin.flush()
        return read_line(self.proc, 60)

    def alive(self):
        return self.proc.poll() is None

    def log_text(self):
        with open(self.log_path, 'rb') as f:
            return f.read().decode('utf-8', 'replace')

    def close(self):
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        for pipe in (self.proc.stdin, self.proc.stdout):
            if pipe is not None:
                pipe.close()
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
    through Thrift1 createTable, as an application would.  listeners and
    thrift2 (a count) ask for several servers, as EmuBackend's; .control()
    always works (hbase-mini reads its standard input)."""

    kind = 'real'

    def __init__(self, workdir, proto='binary', transport='buffered',
                 tables=None, thrift2=False, thrift=None, extra=(),
                 name='hbase', die_with_parent=False, listeners=1,
                 control=True, secure=None):
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
            cmd += ['--thrift1', '127.0.0.1:0'] * listeners
            cmd += ['--thrift2', '127.0.0.1:0'] * int(thrift2)
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
        self.ports = ports['thrift1']
        self.ports2 = ports.get('thrift2', [])
        self.port = self.ports[0]
        self.port2 = self.ports2[0] if self.ports2 else None
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
        return read_line(self.proc, timeout)

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


# ---- a fault-injecting relay ----------------------------------------------

class Relay(object):
    """A loopback TCP relay in front of one server, for fault tests; the
    proxy connects to .port.  cut() resets every connection through it
    (the proxy side gets an RST, as from a network reset), cut_one(rng) one
    of them; pause() stops forwarding in both directions with the
    connections kept open (a stalled server, as SIGSTOP looks over TCP),
    resume() forwards what waited; down() refuses new connections and cuts
    the open ones (a dead server), up() listens again on the same port."""

    def __init__(self, target_port, host='127.0.0.1'):
        self.target = (host, target_port)
        self.host = host
        self.port = 0
        self.lock = threading.Lock()
        self.pairs = []
        self.lsock = None
        self.paused = False
        self.cuts = 0
        self.up()

    def up(self):
        with self.lock:
            if self.lsock is not None:
                return
            s = socket.socket()
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            # the accept thread's select() may still hold the listener
            # down() closed (the kernel frees it when the poll returns,
            # within its 0.1 s): the port is free again soon after
            deadline = time.time() + 2.0
            while True:
                try:
                    s.bind((self.host, self.port))
                    break
                except OSError as e:
                    if e.errno != errno.EADDRINUSE or \
                            time.time() > deadline:
                        s.close()
                        raise
                    time.sleep(0.02)
            s.listen(128)
            self.port = s.getsockname()[1]
            self.lsock = s
        threading.Thread(target=self._accept, args=(s,), daemon=True).start()

    def down(self):
        with self.lock:
            s, self.lsock = self.lsock, None
        if s is not None:
            s.close()   # the accept loop polls, so closing here is safe
        return self.cut()

    def pause(self):
        self.paused = True

    def resume(self):
        self.paused = False

    def _accept(self, lsock):
        while True:
            with self.lock:
                if self.lsock is not lsock:
                    return
            try:
                r, _, _ = select.select([lsock], [], [], 0.1)
                if not r:
                    continue
                a, _ = lsock.accept()
            except (OSError, ValueError):
                return
            try:
                b = socket.create_connection(self.target, 2)
            except OSError:
                self._reset(a)
                continue
            for x in (a, b):
                x.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            pair = [a, b]
            with self.lock:
                self.pairs.append(pair)
            threading.Thread(target=self._pump, args=(pair,),
                             daemon=True).start()

    def _pump(self, pair):
        a, b = pair
        try:
            while pair in self.pairs:
                if self.paused:
                    time.sleep(0.02)
                    continue
                r, _, _ = select.select([a, b], [], [], 0.1)
                for x in r:
                    data = x.recv(65536)
                    if not data:
                        raise OSError('closed')
                    (b if x is a else a).sendall(data)
        except (OSError, ValueError):
            pass
        self._close(pair)

    @staticmethod
    def _reset(sock):
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER,
                            struct.pack('ii', 1, 0))
        except OSError:
            pass
        sock.close()

    def _close(self, pair):
        with self.lock:
            if pair not in self.pairs:
                return False
            self.pairs.remove(pair)
        self._reset(pair[0])
        pair[1].close()
        return True

    def cut(self):
        """Resets every connection; returns how many."""
        with self.lock:
            pairs = list(self.pairs)
        n = sum(1 for p in pairs if self._close(p))
        self.cuts += n
        return n

    def cut_one(self, rng):
        """Resets one connection, if any; returns how many (0 or 1)."""
        with self.lock:
            if not self.pairs:
                return 0
            p = rng.choice(self.pairs)
        n = 1 if self._close(p) else 0
        self.cuts += n
        return n

    def close(self):
        self.resume()
        self.down()


# ---- protobuf Filters (Thrift2 filterBytes) -------------------------------

def pb_varint(v):
    """A protobuf varint; a negative v as its 64-bit two's complement."""
    v &= (1 << 64) - 1
    out = b''
    while True:
        b = v & 0x7f
        v >>= 7
        if not v:
            return out + bytes([b])
        out += bytes([b | 0x80])


def pb_field(num, value):
    """A protobuf field: a varint for an int, else length-delimited
    (bytes, or a str in UTF-8)."""
    if isinstance(value, int):
        return pb_varint(num << 3) + pb_varint(value)
    if isinstance(value, str):
        value = value.encode()
    return pb_varint((num << 3) | 2) + pb_varint(len(value)) + value


def pb_filter(cls, *fields):
    """Filter { name = cls, serialized_filter = fields }; a Comparator has
    the same shape.  cls without a dot is one of HBase's own
    (org.apache.hadoop.hbase.filter.)."""
    pkg = 'org.apache.hadoop.hbase.filter.'
    if isinstance(cls, bytes):
        pkg = pkg.encode()
    if pkg[-1:] not in cls:
        cls = pkg + cls
    return pb_field(1, cls) + pb_field(2, b''.join(fields))


def pb_binary(value, cls='BinaryComparator'):
    """A ByteArrayComparable comparator of value: BinaryComparator, or
    cls of the same shape (BinaryPrefixComparator...)."""
    return pb_filter(cls, pb_field(1, pb_field(1, value)))


def pb_compare(cls, op, comparator):
    """A CompareFilter (RowFilter, ValueFilter...): { compare_op = op,
    comparator }."""
    return pb_filter(cls, pb_field(1, pb_field(1, op)
                                   + pb_field(2, comparator)))


# ---- the proxy -------------------------------------------------------------

class Proxy(Daemon):
    """hbase-salt-proxy on conf_text (a configuration file's text, in
    self.conf), waited for on every port in ports (None: not waited for);
    .stop() stops it with SIGTERM (and fails if it does not), .close()
    too without failing."""

    def __init__(self, binary, workdir, conf_text, ports, name='proxy',
                 log_level='info', args=(), env=None, timeout=30,
                 log_mode='wb'):
        self.name = name
        self.conf = os.path.join(workdir, name + '.conf')
        with open(self.conf, 'w') as f:
            f.write(conf_text)
        self.open_log(os.path.join(workdir, name + '.log'), log_mode)
        argv = [binary, '-c', self.conf]
        if log_level is not None:    # None: the default, what operators see
            argv += ['--log-level', log_level]
        self.spawn(argv + list(args), env)
        if ports is not None:
            self.wait_ports(ports, timeout)

    def fds(self):
        """Open descriptors of the daemon."""
        return len(os.listdir('/proc/%d/fd' % self.proc.pid))

    def rss_kb(self):
        """Resident memory of the daemon, kB."""
        with open('/proc/%d/status' % self.proc.pid) as f:
            for line in f:
                if line.startswith('VmRSS:'):
                    return int(line.split()[1])
        return 0

    def close(self):
        if not self.log.closed:
            self.stop(20, killed=-9)


def finish(workdir, ok, *procs):
    """A plain script's end: closes procs (Proxy, backends; None skipped),
    in order, then removes workdir if ok (and HSP_KEEP_LOGS is not set),
    else says where its logs are."""
    import shutil
    for p in procs:
        if p is not None:
            p.close()
    if ok and not os.environ.get('HSP_KEEP_LOGS'):
        shutil.rmtree(workdir, ignore_errors=True)
    else:
        sys.stderr.write('logs kept in %s\n' % workdir)


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
