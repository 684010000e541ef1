"""faultlib: what the fault and soak tests share: hbase-emu on a fixed port
(restartable), the proxy with its admin endpoint, a loopback TCP relay that
cuts connections on demand, the salt of the test table, fd and RSS counts.
Run with Debian's /usr/bin/python3 (python3-thrift)."""

import ctypes
import os
import re
import select
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request

# ports and waiting: the one definition every test shares
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                '..', 'lib'))
from hsptest import can_connect, free_port, wait_for  # noqa: E402,F401

Hbase = T = None
TSocket = TTransport = TBinaryProtocol = None

BUCKETS = 8
TABLE_CONF = ('[table:t]\nbuckets = %d\nsalt_format = hex\n'
              'salt_separator = -\n' % BUCKETS)


def load_thrift(pydir):
    global Hbase, T, TSocket, TTransport, TBinaryProtocol
    sys.path.insert(0, pydir)
    from hbase1 import Hbase as _Hbase, ttypes as _T
    from thrift.transport import TSocket as _S, TTransport as _TT
    from thrift.protocol import TBinaryProtocol as _B
    Hbase, T = _Hbase, _T
    TSocket, TTransport, TBinaryProtocol = _S, _TT, _B


_xxh3 = None


def physical(key):
    """The stored key of key in table t (hex salt of 8 buckets, '-')."""
    global _xxh3
    if _xxh3 is None:
        lib = ctypes.CDLL('libxxhash.so.0')
        _xxh3 = lib.XXH3_64bits
        _xxh3.restype = ctypes.c_uint64
        _xxh3.argtypes = [ctypes.c_char_p, ctypes.c_size_t]
    return b'%x-' % (_xxh3(key, len(key)) % BUCKETS) + key


class Emu(object):
    """hbase-emu; after the first start it comes back on the same port."""

    def __init__(self, binary, workdir, name='emu', extra=()):
        self.binary, self.workdir, self.name = binary, workdir, name
        self.extra = list(extra)
        self.port = None
        self.proc = None
        self.log = open(os.path.join(workdir, name + '.log'), 'ab')

    def start(self):
        port_file = os.path.join(self.workdir, self.name + '.port')
        if os.path.exists(port_file):
            os.unlink(port_file)
        self.proc = subprocess.Popen(
            [self.binary, '--listen', '127.0.0.1:%d' % (self.port or 0),
             '--port-file', port_file, '--create-table', 't:d'] + self.extra,
            stdout=self.log, stderr=subprocess.STDOUT)

        def read_port():
            try:
                with open(port_file) as f:
                    return f.read().strip()
            except OSError:
                return ''
        self.port = int(wait_for(read_port, 10, self.name + ' port'))
        wait_for(lambda: can_connect(self.port), 10, self.name + ' listening')

    def stop_signal(self, sig):
        os.kill(self.proc.pid, sig)

    def kill(self):
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait()
            self.proc = None

    def close(self):
        self.kill()
        self.log.close()


class Proxy(object):
    """The daemon on a free port with its admin endpoint, log in workdir."""

    def __init__(self, binary, workdir, servers, request_timeout_ms=1500,
                 connect_timeout_ms=500, extra_proxy='', extra_backend=''):
        self.port, self.admin_port = free_port(), free_port()
        self.conf = os.path.join(workdir, 'proxy-%d.conf' % self.port)
        with open(self.conf, 'w') as f:
            f.write('[proxy]\nlisten = 127.0.0.1:%d\nworkers = 2\n%s'
                    '[backend]\nservers = %s\nconnect_timeout_ms = %d\n'
                    'request_timeout_ms = %d\npool_size = 4\n%s'
                    '[admin]\nlisten = 127.0.0.1:%d\n%s'
                    % (self.port, extra_proxy,
                       ','.join('127.0.0.1:%d' % p for p in servers),
                       connect_timeout_ms, request_timeout_ms, extra_backend,
                       self.admin_port, TABLE_CONF))
        self.log_path = os.path.join(workdir, 'proxy-%d.log' % self.port)
        self.log = open(self.log_path, 'wb')
        # the default log level: what operators see
        self.proc = subprocess.Popen([binary, '-c', self.conf],
                                     stdout=self.log,
                                     stderr=subprocess.STDOUT)
        wait_for(lambda: can_connect(self.port), 10, 'proxy listening')
        wait_for(lambda: can_connect(self.admin_port), 10, 'proxy admin')

    def alive(self):
        return self.proc.poll() is None

    def stop(self, timeout=15):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            raise AssertionError('proxy did not stop on SIGTERM')
        finally:
            self.log.close()

    def wait(self, timeout):
        try:
            return self.proc.wait(timeout)
        finally:
            self.log.close()

    def log_text(self):
        with open(self.log_path, 'rb') as f:
            return f.read().decode('utf-8', 'replace')

    def http(self, path):
        try:
            with urllib.request.urlopen('http://127.0.0.1:%d%s'
                                        % (self.admin_port, path),
                                        timeout=5) as r:
                return r.status, r.read().decode()
        except urllib.error.HTTPError as e:
            return e.code, e.read().decode()

    def metrics(self):
        out = {}
        for line in self.http('/metrics')[1].splitlines():
            m = re.match(r'^([a-z_]+)(\{[^}]*\})? (\S+)$', line)
            if m:
                out[m.group(1) + (m.group(2) or '')] = float(m.group(3))
        return out

    def metric(self, name, server=None):
        key = name + ('{server="127.0.0.1:%d"}' % server if server else '')
        return self.metrics().get(key)

    def fds(self):
        return len(os.listdir('/proc/%d/fd' % self.proc.pid))

    def rss_kb(self):
        with open('/proc/%d/status' % self.proc.pid) as f:
            for line in f:
                if line.startswith('VmRSS:'):
                    return int(line.split()[1])
        return 0

    def settled_fds(self):
        """Descriptors that are neither client nor backend connections:
        constant while no clients are connected, whatever the pools did."""
        m = self.metrics()
        conns = sum(v for k, v in m.items()
                    if k.startswith('hsp_backend_connections{'))
        return self.fds() - int(conns) - int(m.get(
            'hsp_client_connections', 0))


def client(port, timeout=10.0):
    sock = TSocket.TSocket('127.0.0.1', port)
    sock.setTimeout(timeout * 1000)
    trans = TTransport.TBufferedTransport(sock)
    c = Hbase.Client(TBinaryProtocol.TBinaryProtocol(trans))
    trans.open()
    c._trans = trans
    return c


class Relay(object):
    """A loopback TCP relay between the proxy and one emulator, run by the
    test: cut() drops every connection through it at once (what HBase's
    idle drop or a network reset looks like to the proxy), cut_one()
    drops a random one, refuse() stops listening."""

    def __init__(self, target_port):
        self.target = target_port
        self.lock = threading.Lock()
        self.pairs = []
        self.cuts = 0
        self.lsock = socket.socket()
        self.lsock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.lsock.bind(('127.0.0.1', 0))
        self.port = self.lsock.getsockname()[1]
        self.lsock.listen(128)
        self.stopping = False
        self.thread = threading.Thread(target=self._accept, daemon=True)
        self.thread.start()

    def _accept(self):
        while not self.stopping:
            try:
                a, _ = self.lsock.accept()
            except OSError:
                return
            try:
                b = socket.create_connection(('127.0.0.1', self.target), 2)
            except OSError:
                a.close()
                continue
            for s in (a, b):
                s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            pair = [a, b]
            with self.lock:
                self.pairs.append(pair)
            threading.Thread(target=self._pump, args=(pair,),
                             daemon=True).start()

    def _pump(self, pair):
        a, b = pair
        try:
            while True:
                r, _, _ = select.select([a, b], [], [], 1.0)
                if pair[0] is None:
                    return
                for s in r:
                    data = s.recv(65536)
                    if not data:
                        raise OSError('closed')
                    (b if s is a else a).sendall(data)
                    if self.after_send(s is a, data):
                        return
        except (OSError, ValueError):
            pass
        finally:
            self._close(pair)

    def after_send(self, to_server, data):
        """Called with each piece relayed (to_server: from the proxy);
        TRUE drops the connection.  A subclass injects faults here."""
        return False

    def _close(self, pair):
        with self.lock:
            if pair in self.pairs:
                self.pairs.remove(pair)
        for s in pair:
            if s is not None:
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
                s.close()

    def cut(self):
        """Resets every connection; returns how many."""
        with self.lock:
            pairs = list(self.pairs)
        for p in pairs:
            self._close(p)
        self.cuts += len(pairs)
        return len(pairs)

    def cut_one(self, rng):
        with self.lock:
            if not self.pairs:
                return 0
            p = rng.choice(self.pairs)
        self._close(p)
        self.cuts += 1
        return 1

    def close(self):
        self.stopping = True
        self.lsock.close()
        self.cut()
