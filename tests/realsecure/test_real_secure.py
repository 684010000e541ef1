#!/usr/bin/python3
"""The proxy's secure backend modes against REAL HBase's own secured Thrift
servers: tests/hbase/hbase-mini --kdc (a Kerby KDC, the whole cluster on
Kerberos with HBase's AccessController) in one mode of
hsptest.SECURE_MODES per run (SASL GSSAPI auth, auth-int, auth-conf; HTTP
with SPNEGO; HTTPS with SPNEGO; HTTPS with SPNEGO and doAs alice).

One cluster per run, several checks on it:
  - the scan oracle (tests/e2e/test_scan_oracle.py) and the Thrift2
    differential (tests/e2e/test_thrift2.py Thrift2Test) with the proxy on
    the secured servers and their reference straight on an unsecured
    server of the same cluster (hbase-mini --plain-thrift1/2: HBase's
    socket server without hbase.thrift.security.qop, which calls the
    cluster as its own login, hbase); both scripts attach to this cluster
    through HSP_REAL_ATTACH; 0 mismatches wanted;
  - the table catalog: a salted table's mapping registered in HBase over
    the secured connection (read back over the plain server);
  - a capture of the hop between the proxy and HBase (a relay recording
    both directions): a value written through the proxy is not in it under
    auth-conf and HTTPS; it is under auth, auth-int and plain HTTP (the
    control: the capture would see it);
  - the failures an operator meets in that mode (--failures): each call an
    IOError naming the cause, the proxy alive, the cause logged once, and
    calls working again without a restart once the cause is removed.
"""

import argparse
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, '..', 'lib'))
import hsptest  # noqa: E402
from hsptest import free_port, wait_for, can_connect  # noqa: E402

E2E = os.path.join(HERE, '..', 'e2e')
ARGS = None
TH = None   # hsptest.Thrift
FAILED = []


def check(cond, what):
    if not cond:
        raise AssertionError(what)


def step(name, fn):
    t0 = time.monotonic()
    try:
        fn()
        print('ok   %-34s %.1fs' % (name, time.monotonic() - t0), flush=True)
    except Exception:  # noqa: BLE001 - report every step
        import traceback
        FAILED.append(name)
        print('FAIL %-34s %.1fs' % (name, time.monotonic() - t0), flush=True)
        traceback.print_exc()
        sys.stdout.flush()


# ---- a relay that records the hop ----------------------------------------

class Relay(object):
    """127.0.0.1:port -> 127.0.0.1:target, every byte both ways kept."""

    def __init__(self, target):
        self.target = target
        self.lsock = socket.socket()
        self.lsock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.lsock.bind(('127.0.0.1', 0))
        self.lsock.listen(16)
        self.port = self.lsock.getsockname()[1]
        self.data = bytearray()
        self.lock = threading.Lock()
        self.closed = False
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while not self.closed:
            try:
                c, _ = self.lsock.accept()
            except OSError:
                return
            u = socket.create_connection(('127.0.0.1', self.target))
            for a, b in ((c, u), (u, c)):
                threading.Thread(target=self._pump, args=(a, b),
                                 daemon=True).start()

    def _pump(self, src, dst):
        try:
            while True:
                d = src.recv(65536)
                if not d:
                    break
                with self.lock:
                    self.data += d
                dst.sendall(d)
        except OSError:
            pass
        for s in (src, dst):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def captured(self):
        with self.lock:
            return bytes(self.data)

    def close(self):
        self.closed = True
        self.lsock.close()


# ---- the proxy on the secured servers --------------------------------------

class Case(object):
    """A proxy of this run: [table:NAME] salted, the mode's [backend] keys
    (overridden by keys), its log read for causes."""

    n = 0

    def __init__(self, backend, workdir, table, keys=None, port=None,
                 env=None):
        Case.n += 1
        self.name = 'proxy%d' % Case.n
        make_table(backend, table)
        self.port = free_port()
        self.admin = free_port()
        srv = port or backend.secure_port
        conf = ('[proxy]\nlisten = 127.0.0.1:%d\nworkers = 2\n'
                '[backend]\nservers = 127.0.0.1:%d\n'
                'request_timeout_ms = 30000\npool_size = 4\n%s'
                '[admin]\nlisten = 127.0.0.1:%d\n'
                '[table:%s]\nbuckets = 4\n'
                % (self.port, srv,
                   keys or hsptest.secure_backend_keys(backend.mode,
                                                       backend.kdc_dir),
                   self.admin, table))
        self.p = hsptest.Proxy(ARGS.proxy, workdir, conf, [self.port],
                               name=self.name, timeout=90,
                               env=env or hsptest.secure_env(backend.kdc_dir))

    def client(self):
        return TH.client1(self.port, timeout=60.0)

    def log(self):
        return self.p.log_text()

    def alive(self):
        return self.p.proc.poll() is None

    def close(self):
        self.p.close()


def make_table(backend, table):
    """table with family f, made over the plain server (as hbase) unless
    it exists."""
    c = TH.client1(backend.port, timeout=120.0)
    try:
        if table.encode() not in c.getTableNames():
            c.createTable(table.encode(),
                          [TH.T.ColumnDescriptor(name=b'f:')])
    finally:
        c.transport.close()


def put(c, table, row, value):
    T = TH.T
    c.mutateRow(table, row, [T.Mutation(column=b'f:q', value=value)], {})


def get(c, table, row):
    r = c.getRow(table, row, {})
    return r[0].columns[b'f:q'].value if r else None


def ioerror_text(fn):
    """The IOError fn raises, as text; anything else fails."""
    try:
        fn()
    except (TH.T.IOError, TH.TApplicationException) as e:
        # HTTP mode: a call the bridge refused (SPNEGO without a ticket)
        # is a TApplicationException naming the cause (httpc.h)
        m = e.message
        return m.decode('utf-8', 'replace') if isinstance(m, bytes) else m
    except Exception as e:  # noqa: BLE001
        raise AssertionError('expected an IOError, got %s: %s'
                             % (type(e).__name__, e))
    raise AssertionError('expected an IOError, the call worked')


def warnings_with(log, word):
    """The warning lines naming the cause: the connection's own, or, when
    the cause keeps the table catalog from being checked (the proxy then
    serves no salted table and opens no other connection), the catalog's
    one line."""
    lines = [ln for ln in log.splitlines()
             if word in ln and 'warning' in ln.lower()]
    own = [ln for ln in lines if 'catalog: ' not in ln]
    return own or lines


# ---- the checks ----------------------------------------------------------

def drop_user_tables(backend):
    """Every table but the catalog, dropped over the plain server: the
    scripts run one after the other on this cluster and share names."""
    c = TH.client1(backend.port, timeout=120.0)
    try:
        for t in c.getTableNames():
            if t in (b'hbase_salt_catalog', b'tkt_t'):
                continue
            if c.isTableEnabled(t):
                c.disableTable(t)
            c.deleteTable(t)
    finally:
        c.transport.close()


def run_script(backend, attach, name, argv, env_extra):
    env = dict(os.environ)
    env.update(env_extra)
    env['HSP_REAL_ATTACH'] = attach
    env['HSP_BACKEND_KIND'] = 'real'
    t0 = time.monotonic()
    r = subprocess.run([sys.executable] + argv, env=env,
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       timeout=900)
    out = r.stdout.decode('utf-8', 'replace')
    print('--- %s (%.1f s, exit %d) ---' % (name, time.monotonic() - t0,
                                           r.returncode))
    print('\n'.join(ln[:600] for ln in out.splitlines()
                    if 'mismatch' in ln or 'compared' in ln or
                    'by method' in ln or ln.startswith(('ok', 'FAIL', 'Ran',
                                                        'OK', 'ERROR')) or
                    'calls' in ln or 'Error' in ln or ' ... ' in ln))
    if r.returncode != 0:
        print('\n'.join(ln[:600] for ln in out.splitlines()[-80:]))
    check(r.returncode == 0, '%s failed' % name)
    return out


def scan_oracle(backend, attach, scans, again):
    if again:
        drop_user_tables(backend)
    out = run_script(backend, attach, 'scan oracle', [
        os.path.join(E2E, 'test_scan_oracle.py'), '--proxy', ARGS.proxy,
        '--emu', ARGS.emu, '--pydir', ARGS.pydir, '--part', '0',
        '--parts', '1', '--backend-kind', 'real'],
        {'SCAN_ORACLE_ROWS': str(ARGS.rows),
         'SCAN_ORACLE_SCANS': str(scans)})
    check('mismatches: 0' in out, 'scan oracle mismatches')


def thrift2_differential(backend, attach):
    drop_user_tables(backend)
    out = run_script(backend, attach, 'Thrift2 differential', [
        os.path.join(E2E, 'test_thrift2.py'), '--proxy', ARGS.proxy,
        '--emu', ARGS.emu, '--pydir', ARGS.pydir,
        '--backend', 'binary-buffered', '--backend-kind', 'real',
        'Thrift2Test'], {'THRIFT2_OPS': str(ARGS.ops)})
    m = re.search(r'thrift2 differential: calls \[(.*?)\]; outcomes', out)
    check(m and 'OK' in out, 'Thrift2 differential')
    calls = sum(int(n) for n in re.findall(r', (\d+)\)', m.group(1)))
    print('     thrift2 differential: %d calls compared (4 client '
          'protocol/transport pairs), 0 mismatches' % calls)


def sfx(backend):
    return backend.mode.replace('-', '_')


def catalog_registered(backend, workdir):
    name = 'cat_' + sfx(backend)
    p = Case(backend, workdir, name)
    try:
        c = p.client()
        put(c, name.encode(), b'row1', b'v1')
        check(get(c, name.encode(), b'row1') == b'v1', 'round trip')
        c.transport.close()
        # the mapping as the proxy registered it, read straight from HBase
        d = TH.client1(backend.port, timeout=60.0)
        try:
            def entry():
                sid = d.scannerOpen(b'hbase_salt_catalog', b'', [], {})
                try:
                    rows = d.scannerGetList(sid, 1000)
                finally:
                    d.scannerClose(sid)
                return [r for r in rows if r.row == name.encode()]
            wait_for(entry, 30, name + ' in hbase_salt_catalog')
            for r in entry():
                print('     catalog row %r: %s' % (r.row, ', '.join(
                    '%s=%r' % (k.decode(), v.value[:60])
                    for k, v in sorted(r.columns.items()))))
        finally:
            d.transport.close()
        check('catalog: registered table ' + name in p.log(),
              'registration not logged: ' + p.log()[-2000:])
    finally:
        p.close()


def capture(backend, workdir):
    relay1 = Relay(backend.secure_port)
    name = 'cap_' + sfx(backend)
    p = Case(backend, workdir, name, port=relay1.port)
    marker = b'SECRET-%d-value-through-the-proxy' % os.getpid()
    try:
        c = p.client()
        put(c, name.encode(), b'row-cap', marker)
        check(get(c, name.encode(), b'row-cap') == marker, 'round trip')
        c.transport.close()
    finally:
        p.close()
        relay1.close()
    data = relay1.captured()
    # on the wire in clear unless the mode encrypts: auth-int only signs
    clear = backend.mode in ('sasl-auth', 'sasl-auth-int', 'http-spnego')
    print('     %d bytes captured; the value %s in clear'
          % (len(data), 'appears' if marker in data else 'does not appear'))
    check(len(data) > 1000, 'the relay saw %d bytes' % len(data))
    check((marker in data) == clear,
          'value in clear on the hop: %s, wanted %s' % (marker in data,
                                                         clear))


def failing(backend, workdir, table, keys, words, log_word, fix=None,
            env=None):
    """A proxy with keys: every call an IOError naming words, alive, the
    cause (log_word) logged once; then fix() and calls work again."""
    p = Case(backend, workdir, table, keys=keys, env=env)
    try:
        first = None
        for i in range(4):
            c = p.client()
            text = ioerror_text(lambda: put(c, table.encode(), b'r', b'v'))
            c.transport.close()
            first = first or text
            for w in words:
                check(w in text, 'expected %r in the IOError, got %r'
                      % (w, text))
        print('     the client sees: %s' % first[:300])
        check(p.alive(), 'the proxy died: ' + p.log()[-2000:])
        n = warnings_with(p.log(), log_word)
        print('     the log: %s' % ('\n              '.join(
            ln[:300] for ln in n) if n else '(nothing)'))
        # named once: by the connection's line, the table catalog's check
        # or the ticket renewal's (each once per cause), never per call
        check(1 <= len(n) <= 2, 'expected the cause %r logged once, got '
              '%d lines:\n%s' % (log_word, len(n), p.log()[-3000:]))
        for i in range(4):
            c = p.client()
            ioerror_text(lambda: put(c, table.encode(), b'r', b'v'))
            c.transport.close()
        check(len(warnings_with(p.log(), log_word)) == len(n),
              'the cause logged again per call:\n' + p.log()[-3000:])
        if fix is None:
            return
        fix(p)

        def works():
            try:
                c = p.client()
                try:
                    put(c, table.encode(), b'r', b'v')
                    return get(c, table.encode(), b'r') == b'v'
                finally:
                    c.transport.close()
            except Exception:  # noqa: BLE001 - the cause, until it goes
                return False
        wait_for(works, 90, 'calls working again after the fix')
        check(p.alive(), 'the proxy died')
    finally:
        p.close()


def failures(backend, workdir, mini):
    kdc = backend.kdc_dir
    mode = backend.mode
    if mode.startswith('sasl-'):
        qop = mode[len('sasl-'):]
        other = 'auth' if qop != 'auth' else 'auth-conf'

        def wrong_qop():
            failing(backend, workdir, 'qop_' + sfx(backend),
                    hsptest.secure_backend_keys(mode, kdc, qop=other),
                    ['requires SASL protection ' + qop], 'SASL protection')
        step('%s: failure: wrong QOP (%s asked)' % (mode, other), wrong_qop)

        def stranger():
            failing(backend, workdir, 'str_' + sfx(backend),
                    hsptest.secure_backend_keys(mode, kdc).replace(
                        'proxy@HSP.TEST', 'stranger@HSP.TEST').replace(
                        'proxy.keytab', 'stranger.keytab'),
                    ['stranger'], 'stranger')
        step('%s: failure: unauthorized principal' % mode, stranger)
    if mode == 'https-spnego':
        wrong = os.path.join(workdir, 'wrong-ca.pem')
        ca = os.path.join(workdir, 'ca-copy.pem')
        shutil.copy(os.path.join(kdc, 'ca.pem'), ca)
        # another self-signed CA: the real one of another run
        subprocess.run(['openssl', 'req', '-x509', '-newkey', 'rsa:2048',
                        '-nodes', '-keyout', os.path.join(workdir, 'w.key'),
                        '-out', wrong, '-days', '1', '-subj',
                        '/CN=localhost'], check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        shutil.copy(wrong, ca + '.wrong')
        shutil.copy(wrong, ca)

        def fix_ca(p):
            shutil.copy(os.path.join(kdc, 'ca.pem'), ca)
            p.p.proc.send_signal(1)  # SIGHUP: reload

        def wrong_ca():
            # the client hears the TLS cause too (httpc_last_failure), not
            # only that the connection closed
            failing(backend, workdir, 'ca_' + sfx(backend),
                    hsptest.secure_backend_keys(mode, kdc, ca=ca),
                    ['certificate verify failed'],
                    'certificate verify failed', fix=fix_ca)
        step('%s: failure: wrong CA, fixed by reload' % mode, wrong_ca)
    if mode == 'https-doas':
        def doas_refused():
            failing(backend, workdir, 'bob_' + sfx(backend),
                    hsptest.secure_backend_keys(mode, kdc, doas='bob'),
                    ['500'], '500')
        step('%s: failure: doAs bob refused' % mode, doas_refused)


def stale_keytab(backend, workdir, mini):
    """Last: the proxy's keys change in the KDC for the rest of the run."""
    kdc, mode = backend.kdc_dir, backend.mode
    kt = os.path.join(workdir, 'proxy-copy.keytab')
    shutil.copy(os.path.join(kdc, 'proxy.keytab'), kt)
    line = mini.control('rekey proxy')
    check(line.startswith('ok rekey proxy '), line)
    fresh = line.split()[-1]

    def fix(p):
        shutil.copy(fresh, kt)
    failing(backend, workdir, 'stale_' + sfx(backend),
            hsptest.secure_backend_keys(mode, kdc, keytab=kt),
            ['Kerberos'], 'proxy-copy.keytab', fix=fix)


def tickets_renewed(p, since):
    """The proxy started before the others outlived its first tickets
    (--ticket-lifetime): calls still work, with no warning, and the log
    shows the tickets it got from its keytab since."""
    wait = since + ARGS.ticket_lifetime + 15 - time.time()
    if wait > 0:
        time.sleep(wait)
    c = p.client()
    try:
        check(get(c, b'tkt_t', b'r') == b'before', 'a read after expiry')
        put(c, b'tkt_t', b'r', b'after')
        check(get(c, b'tkt_t', b'r') == b'after', 'a write after expiry')
    finally:
        c.transport.close()
    log = p.log()
    got = [ln for ln in log.splitlines() if 'Kerberos ticket for proxy@' in ln]
    print('     %d tickets in %.0f s; last: %s'
          % (len(got), time.time() - since, got[-1][:200] if got else '-'))
    check(len(got) >= 2, 'no new ticket:\n' + log[-3000:])
    check(p.alive() and not [ln for ln in log.splitlines()
                             if 'warning' in ln and 'SASL' in ln],
          'warnings:\n' + log[-3000:])


def main():
    global ARGS, TH
    ap = argparse.ArgumentParser()
    ap.add_argument('--proxy', required=True)
    ap.add_argument('--emu', required=True)
    ap.add_argument('--pydir', required=True)
    ap.add_argument('--modes', required=True,
                    help='comma-separated hsptest.SECURE_MODES, all SASL or '
                         'all HTTP: one cluster serves them all')
    ap.add_argument('--rows', type=int, default=200)
    ap.add_argument('--scans', type=int, default=40)
    ap.add_argument('--http-scans', type=int, default=15)
    ap.add_argument('--ops', type=int, default=100)
    ap.add_argument('--ticket-lifetime', type=int, default=0,
                    help='a proxy started first asks for tickets of this '
                         'many seconds and must outlive them')
    ap.add_argument('--only', default='')
    ARGS = ap.parse_args()
    modes = ARGS.modes.split(',')
    for m in modes:
        if m not in hsptest.SECURE_MODES:
            ap.error('unknown mode %s' % m)
    TH = hsptest.Thrift(ARGS.pydir)
    t0 = time.time()
    workdir = tempfile.mkdtemp(prefix='hsp-real-secure-')
    mini = hsptest.RealBackend(workdir, thrift2=True, secure=modes)
    print('real HBase ready in %.1f s: %s; plain %d/%d'
          % (time.time() - t0, ', '.join(
              '%s %d/%d' % (m, p[0], p[1])
              for m, p in sorted(mini.secure_ports.items())),
             mini.port, mini.port2), flush=True)
    ticket = None
    if ARGS.ticket_lifetime:
        # a proxy from the start, its tickets expiring while the rest runs
        # (its own: the cluster's short tickets would stall HBase's own
        # Kerberos RPC on a loaded machine, hbase-mini --ticket-lifetime)
        ticket = Case(mini, workdir, 'tkt_t', env=hsptest.secure_env(
            mini.kdc_dir, ticket_lifetime=ARGS.ticket_lifetime))
        c = ticket.client()
        put(c, b'tkt_t', b'r', b'before')
        c.transport.close()
        t_ticket = time.time()
    try:
        for i, mode in enumerate(modes):
            mini.use_mode(mode)
            print('==== %s (%.0f s into the run)' % (mode, time.time() - t0),
                  flush=True)
            attach = os.path.join(workdir, 'attach-%s.json' % mode)
            with open(attach, 'w') as f:
                json.dump(hsptest.attach_info(mini, mini.log_path), f)
            scans = ARGS.scans if mode.startswith('sasl-') else \
                ARGS.http_scans
            steps = [('scan oracle',
                      lambda: scan_oracle(mini, attach, scans, i > 0)),
                     ('Thrift2 differential',
                      lambda: thrift2_differential(mini, attach)),
                     ('catalog registered',
                      lambda: catalog_registered(mini, workdir)),
                     ('capture of the hop', lambda: capture(mini, workdir))]
            for name, fn in steps:
                if ARGS.only and name not in ARGS.only.split(','):
                    continue
                step('%s: %s' % (mode, name), fn)
            if not ARGS.only or 'failures' in ARGS.only:
                failures(mini, workdir, mini)
        if ticket is not None:
            step('tickets expired and renewed',
                 lambda: tickets_renewed(ticket, t_ticket))
        if not ARGS.only or 'failures' in ARGS.only:
            mode = 'sasl-auth-conf' if 'sasl-auth-conf' in modes else \
                ('https-spnego' if 'https-spnego' in modes else modes[-1])
            mini.use_mode(mode)
            step('%s: failure: stale keytab, fresh one copied' % mode,
                 lambda: stale_keytab(mini, workdir, mini))
    finally:
        if ticket is not None:
            ticket.close()
        mini.close()
    print('real-secure %s: %.1f s, %d failed%s'
          % (ARGS.modes, time.time() - t0, len(FAILED),
             (': ' + ', '.join(FAILED)) if FAILED else ''))
    if FAILED or os.environ.get('HSP_KEEP_LOGS'):
        print('logs kept in %s' % workdir)
    else:
        shutil.rmtree(workdir, ignore_errors=True)
    sys.exit(1 if FAILED else 0)


if __name__ == '__main__':
    main()
