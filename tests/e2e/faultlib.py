"""faultlib: what the fault and soak tests share: hbase-emu on a fixed port
(restartable), the proxy with its admin endpoint, a loopback TCP relay that
cuts connections on demand, the salt of the test table, fd and RSS counts.
Run with Debian's /usr/bin/python3 (python3-thrift)."""

import ctypes
import os
import re
import select
import socket
import sys
import threading
import time
import urllib.request

# ports and waiting: the one definition every test shares
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                '..', 'lib'))
import hsptest  # noqa: E402
from hsptest import can_connect, client, free_port, wait_for  # noqa: E402,F401

Hbase = T = None

BUCKETS = 8
TABLE_CONF = ('[table:t]\nbuckets = %d\nsalt_format = hex\n'
              'salt_separator = -\n' % BUCKETS)


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


class Emu(hsptest.Emu):
    """hbase-emu with table t; after the first start() it comes back on
    the same port."""

    def __init__(self, binary, workdir, name='emu', extra=()):
        super().__init__(binary, workdir, ['--create-table', 't:d']
                         + list(extra), name=name, start=False)

    def stop_signal(self, sig):
        os.kill(self.proc.pid, sig)


class Proxy(hsptest.Proxy):
    """The daemon on a free port with its admin endpoint, log in workdir."""

    stop_timeout = 15

    def __init__(self, binary, workdir, servers, request_timeout_ms=1500,
                 connect_timeout_ms=500, extra_proxy='', extra_backend=''):
        self.port, self.admin_port = free_port(), free_port()
        conf = ('[proxy]\nlisten = 127.0.0.1:%d\nworkers = 2\n%s'
                '[backend]\nservers = %s\nconnect_timeout_ms = %d\n'
                'request_timeout_ms = %d\npool_size = 4\n%s'
                '[admin]\nlisten = 127.0.0.1:%d\n%s'
                % (self.port, extra_proxy,
                   ','.join('127.0.0.1:%d' % p for p in servers),
                   connect_timeout_ms, request_timeout_ms, extra_backend,
                   self.admin_port, TABLE_CONF))
        # the default log level: what operators see
        super().__init__(binary, workdir, conf, [self.port, self.admin_port],
                         name='proxy-%d' % self.port, log_level=None,
                         timeout=10)

    def wait(self, timeout):
        try:
            return self.proc.wait(timeout)
        finally:
            self.log.close()

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

    def settled_fds(self):
        """Descriptors that are neither client nor backend connections:
        constant while no clients are connected, whatever the pools did."""
        m = self.metrics()
        conns = sum(v for k, v in m.items()
                    if k.startswith('hsp_backend_connections{'))
        return self.fds() - int(conns) - int(m.get(
            'hsp_client_connections', 0))


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
        except (OSError, ValueError):
            pass
        finally:
            self._close(pair)

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
