"""Harness for the hbase-emu conformance suite: emulator processes, Thrift
clients (Debian's python3-thrift, independent of the emulator's c_glib),
call recording for method coverage, and precise failure messages."""

import atexit
import os
import sys
import tempfile
import threading

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                '..', 'lib'))
import hsptest  # noqa: E402

CFG = {
    'emu': os.environ.get('HBASE_EMU', ''),
    'pydir': os.environ.get('THRIFT_PY_DIR', ''),
    'protocol': os.environ.get('CONFORMANCE_PROTOCOL', 'binary'),
    'transport': os.environ.get('CONFORMANCE_TRANSPORT', 'buffered'),
}

# Bound by hsptest.import_thrift(CFG['pydir'], harness).
Hbase = None
T = None  # hbase1.ttypes
TSocket = TTransport = TBinaryProtocol = TCompactProtocol = None
TApplicationException = TType = TMessageType = None

CALLED = set()          # Thrift1 method names exercised over the wire
CALLED_LOCK = threading.Lock()


def thrift1_methods():
    return sorted(m for m in dir(Hbase.Iface) if not m.startswith('_'))


def note_called(name):
    with CALLED_LOCK:
        CALLED.add(name)


# ---------------------------------------------------------------------------
# Emulator processes

class Emu(hsptest.Emu):
    """One hbase-emu process listening on an ephemeral port (and one for
    Thrift2 with thrift2=True)."""

    def __init__(self, *extra, protocol=None, transport=None, thrift2=False):
        self.protocol = protocol or CFG['protocol']
        self.transport = transport or CFG['transport']
        self.dir = tempfile.mkdtemp(prefix='hbase-emu-conf-')
        args = []
        if self.transport == 'framed':
            args.append('--framed')
        if self.protocol == 'compact':
            args.append('--compact')
        super().__init__(CFG['emu'], self.dir, args + list(extra),
                         thrift2=thrift2, start=False, log_mode='wb',
                         timeout=15)
        atexit.register(self.stop)  # never leave an emulator behind
        self.start()

    @property
    def pid(self):
        return self.proc.pid

    def log_tail(self, n=4000):
        try:
            return self.log_text()[-n:]
        except OSError:
            return ''

    def stop(self):
        if not self.log.closed:
            super().stop(killed=-9)


# ---------------------------------------------------------------------------
# Clients

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
        self.prot = hsptest.TH.protocol(self.trans, emu.protocol, strict)
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
