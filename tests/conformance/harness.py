"""Harness for the hbase-emu conformance suite: emulator processes, Thrift
clients (Debian's python3-thrift, independent of the emulator's c_glib),
call recording for method coverage, and precise failure messages."""

import atexit
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time

CFG = {
    'emu': os.environ.get('HBASE_EMU', ''),
    'pydir': os.environ.get('THRIFT_PY_DIR', ''),
    'protocol': os.environ.get('CONFORMANCE_PROTOCOL', 'binary'),
    'transport': os.environ.get('CONFORMANCE_TRANSPORT', 'buffered'),
}

# Filled by load_thrift().
Hbase = None
T = None  # hbase1.ttypes
TSocket = TTransport = TBinaryProtocol = TCompactProtocol = None
TApplicationException = TType = TMessageType = None

CALLED = set()          # Thrift1 method names exercised over the wire
CALLED_LOCK = threading.Lock()


def load_thrift():
    global Hbase, T, TSocket, TTransport, TBinaryProtocol, TCompactProtocol
    global TApplicationException, TType, TMessageType
    if CFG['pydir']:
        sys.path.insert(0, CFG['pydir'])
    from hbase1 import Hbase as _Hbase
    from hbase1 import ttypes as _T
    from thrift.transport import TSocket as _TSocket, TTransport as _TTransport
    from thrift.protocol import TBinaryProtocol as _TB, TCompactProtocol as _TC
    from thrift.Thrift import (TApplicationException as _TAE, TType as _TT,
                               TMessageType as _TMT)
    Hbase, T = _Hbase, _T
    TSocket, TTransport = _TSocket, _TTransport
    TBinaryProtocol, TCompactProtocol = _TB, _TC
    TApplicationException, TType, TMessageType = _TAE, _TT, _TMT


def thrift1_methods():
    return sorted(m for m in dir(Hbase.Iface) if not m.startswith('_'))


def note_called(name):
    with CALLED_LOCK:
        CALLED.add(name)


# ---------------------------------------------------------------------------
# Emulator processes

class Emu(object):
    """One hbase-emu process listening on an ephemeral port."""

    def __init__(self, *extra, protocol=None, transport=None):
        self.protocol = protocol or CFG['protocol']
        self.transport = transport or CFG['transport']
        self.dir = tempfile.mkdtemp(prefix='hbase-emu-conf-')
        self.port_file = os.path.join(self.dir, 'port')
        self.log_path = os.path.join(self.dir, 'emu.log')
        args = [CFG['emu'], '--listen', '127.0.0.1:0',
                '--port-file', self.port_file]
        if self.transport == 'framed':
            args.append('--framed')
        if self.protocol == 'compact':
            args.append('--compact')
        args.extend(extra)
        self.args = args
        self.log = open(self.log_path, 'wb')
        self.proc = subprocess.Popen(args, stdout=self.log,
                                     stderr=subprocess.STDOUT)
        atexit.register(self.stop)  # never leave an emulator behind
        self.port = self._wait_port()

    def _wait_port(self):
        deadline = time.time() + 15
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError('hbase-emu exited with %s at startup: %s\n%s'
                                   % (self.proc.returncode, self.args,
                                      self.log_tail()))
            try:
                with open(self.port_file) as f:
                    txt = f.read().strip()
                if txt:
                    port = int(txt)
                    # The port file may be written before listen(); probe.
                    with socket.create_connection(('127.0.0.1', port), 2):
                        pass
                    return port
            except (OSError, ValueError):
                pass
            time.sleep(0.02)
        self.stop()
        raise RuntimeError('hbase-emu did not write a usable port file: %s\n%s'
                           % (self.args, self.log_tail()))

    @property
    def pid(self):
        return self.proc.pid

    def alive(self):
        return self.proc.poll() is None

    def rss_kb(self):
        with open('/proc/%d/status' % self.proc.pid) as f:
            for line in f:
                if line.startswith('VmRSS:'):
                    return int(line.split()[1])
        return -1

    def log_tail(self, n=4000):
        try:
            self.log.flush()
            with open(self.log_path, 'rb') as f:
                data = f.read()
            return data[-n:].decode('utf-8', 'replace')
        except OSError:
            return ''

    def stop(self):
        if self.log.closed:
            return
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
        self.log.close()


# ---------------------------------------------------------------------------
# Clients

def make_protocol(trans, protocol, strict=True):
    if protocol == 'compact':
        return TCompactProtocol.TCompactProtocol(trans)
    if strict:
        return TBinaryProtocol.TBinaryProtocol(trans, strictRead=True,
                                               strictWrite=True)
    return TBinaryProtocol.TBinaryProtocol(trans, strictRead=False,
                                           strictWrite=False)


def wrap_transport(sock, transport):
    if transport == 'framed':
        return TTransport.TFramedTransport(sock)
    return TTransport.TBufferedTransport(sock)


class Conn(object):
    """A Thrift1 client connection; every call is recorded for coverage."""

    def __init__(self, emu, strict=True, timeout_ms=20000):
        self.sock = TSocket.TSocket('127.0.0.1', emu.port)
        self.sock.setTimeout(timeout_ms)
        self.trans = wrap_transport(self.sock, emu.transport)
        self.prot = make_protocol(self.trans, emu.protocol, strict)
        self.client = Hbase.Client(self.prot)
        self.trans.open()

    def __getattr__(self, name):
        fn = getattr(self.client, name)
        if not callable(fn) or name.startswith(('send_', 'recv_', '_')):
            return fn
        note_called(name)
        return fn

    def close(self):
        try:
            self.trans.close()
        except Exception:
            pass


# ---------------------------------------------------------------------------
# Formatting helpers for failure messages

def short(v, limit=300):
    r = repr(v)
    if len(r) > limit:
        r = r[:limit] + '...(%d chars)' % len(r)
    return r


def fmt_call(name, args):
    return '%s(%s)' % (name, ', '.join(short(a, 160) for a in args))


def list_diff(exp, got):
    """A one-line account of where two lists first differ."""
    if exp == got:
        return ''
    n = min(len(exp), len(got))
    for i in range(n):
        if exp[i] != got[i]:
            return ('first difference at index %d: expected %s, got %s '
                    '(lengths: expected %d, got %d)'
                    % (i, short(exp[i]), short(got[i]), len(exp), len(got)))
    return ('lengths differ: expected %d, got %d; extra: %s'
            % (len(exp), len(got),
               short(exp[n:] if len(exp) > n else got[n:])))
