"""test_sasl_proxy: the proxy with [backend] sasl = gssapi in front of hbase-emu --sasl-qop, with a real MIT KDC."""
# One run per QOP (--qop), plus --renewal (a realm whose tickets live 15 s).
# Plain Thrift clients talk to the proxy; the proxy authenticates to the
# emulator with its own keytab.  Checked: a salted table round-trips
# (point calls and a merged scan, the rows stored salted as read through a
# SASL client of our own), each failure an operator meets reaches the
# client as an IOError naming its cause while the proxy keeps running and
# logs it once, and calls keep working while tickets are renewed.

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, '..', 'lib'))
import krb5lib  # noqa: E402
import test_sasl  # noqa: E402
import hsptest  # noqa: E402
from hsptest import free_port, wait_for  # noqa: E402
from test_sasl import Emu, Failure, check  # noqa: E402

SERVER = 'hbase/localhost'
BUCKETS = 8
OTHER_QOP = {'auth': 'auth-conf', 'auth-int': 'auth', 'auth-conf': 'auth-int'}


class Proxy(hsptest.Proxy):
    stop_timeout = 15

    def __init__(self, binary, realm, emu_port, qop, keytab,
                 principal='app', server_host='localhost', name='proxy',
                 debug=False):
        self.dir = tempfile.mkdtemp(prefix='hsp-sasl-proxy-', dir=realm.dir)
        self.port = free_port()
        conf = f"""[proxy]
listen = 127.0.0.1:{self.port}
workers = 2

[backend]
servers = 127.0.0.1:{emu_port}
connect_timeout_ms = 3000
request_timeout_ms = 5000
pool_size = 8
sasl = gssapi
sasl_principal = {realm.qualify(principal)}
sasl_keytab = {keytab}
sasl_qop = {qop}
sasl_server_host = {server_host}

[table:t]
buckets = {BUCKETS}
salt_format = hex
salt_separator = -
"""
        # no ticket cache of anyone's: the proxy must use its keytab
        env = realm.env(ccache=realm.path('nobody.ccache'))
        super().__init__(binary, self.dir, conf, [self.port], name=name,
                         log_level='debug' if debug else None, env=env,
                         timeout=15)

    def stop(self):
        return super().stop(killed=-9)


def client(port):
    c = hsptest.client(port, timeout=15.0)
    return c, c.transport


def expect_ioerror(fn, *words):
    try:
        fn()
    except test_sasl.T.IOError as e:
        text = e.message if isinstance(e.message, str) else \
            e.message.decode('utf-8', 'replace')
        for w in words:
            check(w in text, 'expected %r in the IOError, got %r' % (w, text))
        return text
    except Exception as e:  # noqa: BLE001
        raise Failure('expected an IOError, got %s: %s' %
                      (type(e).__name__, e))
    raise Failure('expected an IOError (%s), the call worked' %
                  ', '.join(words))


class Suite:
    def __init__(self, args, realm):
        self.args = args
        self.qop = args.qop
        self.r = realm
        k = realm.path
        realm.add_principals(SERVER, 'app', 'hbase/otherhost')
        self.server_kt = realm.export(SERVER, k('server.keytab'))
        self.app_kt_stale = realm.export('app', k('app-stale.keytab'))
        self.app_kt = realm.export('app', k('app.keytab'))
        self.app_cc = realm.kinit('app', self.app_kt)
        self.emu = Emu(args.emu, realm, self.qop, self.server_kt)
        # at debug level: a failed health probe is logged there only
        self.proxy = Proxy(args.proxy, realm, self.emu.port, self.qop,
                           self.app_kt, debug=True)
        self.others = []

    def another_proxy(self, **kw):
        kw.setdefault('qop', self.qop)
        kw.setdefault('keytab', self.app_kt)
        port = kw.pop('emu_port', self.emu.port)
        p = Proxy(self.args.proxy, self.r, port,
                  name='proxy%d' % len(self.others), **kw)
        self.others.append(p)
        return p

    def direct(self):
        """A SASL client of our own straight to the emulator."""
        os.environ.update(self.r.env(ccache=self.app_cc))
        return test_sasl.sasl_client(self.emu.port, self.qop)

    # -- data through the proxy --------------------------------------------
    def test_round_trip(self):
        T = test_sasl.T
        c, tr = client(self.proxy.port)
        keys = [b'user%03d' % i for i in range(40)]
        for k in keys:
            c.mutateRow(b't', k, [T.Mutation(column=b'f:q', value=b'v-' + k)],
                        {})
        got = c.getRow(b't', b'user017', {})
        check(len(got) == 1 and got[0].row == b'user017' and
              got[0].columns[b'f:q'].value == b'v-user017',
              'getRow through the proxy: %r' % got)
        rows = c.getRows(b't', [b'user003', b'user031'], {})
        check([r.row for r in rows] == [b'user003', b'user031'],
              'getRows: %r' % [r.row for r in rows])
        # a scan over every bucket, merged back into key order
        sid = c.scannerOpen(b't', b'', [b'f:q'], {})
        seen = []
        while True:
            batch = c.scannerGetList(sid, 7)
            if not batch:
                break
            seen += [r.row for r in batch]
        c.scannerClose(sid)
        check(seen == sorted(keys), 'merged scan: %r' % seen[:10])
        tr.close()
        # stored salted: what the emulator holds has the salt in front
        d, dtr = self.direct()
        sid = d.scannerOpen(b't', b'', [b'f:q'], {})
        stored = []
        while True:
            batch = d.scannerGetList(sid, 100)
            if not batch:
                break
            stored += [r.row for r in batch]
        d.scannerClose(sid)
        dtr.close()
        check(len(stored) == len(keys), 'stored %d rows' % len(stored))
        check(all(re.match(rb'^[0-7]-user\d{3}$', r) for r in stored),
              'rows not stored salted: %r' % stored[:5])
        check(sorted(r[2:] for r in stored) == keys, 'stored keys differ')
        check(self.emu.wait_log('effective user: app'),
              'the emulator saw no user app')

    def test_probe(self):
        # the health probe negotiates and calls over SASL too: with no
        # client at all, the server sees the proxy authenticate every 5 s
        # (UP servers' probe interval), and no probe fails
        before = self.emu.log_text().count('effective user: app')
        time.sleep(10.6)
        after = self.emu.log_text().count('effective user: app')
        check(after - before >= 2, 'expected 2+ probe connections in '
              '10.6 s, the server saw %d' % (after - before))
        log = self.proxy.log_text()
        check('probe:' not in log and 'down after' not in log,
              'a probe failed: ' + log[-2000:])
        c, tr = client(self.proxy.port)
        check(b't' in c.getTableNames(), 'getTableNames after probes')
        tr.close()

    # -- failures ------------------------------------------------------------
    def failing_proxy(self, words, log_words, **kw):
        p = self.another_proxy(**kw)
        c, tr = client(p.port)
        first = expect_ioerror(lambda: c.getRow(b't', b'user001', {}),
                               *words)
        print('     the client sees: %s' % first)
        # again, on connections of both workers: same cause, still alive
        for _ in range(6):
            c2, tr2 = client(p.port)
            expect_ioerror(lambda: c2.getRow(b't', b'user001', {}), *words)
            tr2.close()
        tr.close()
        check(p.alive(), 'the proxy died: ' + p.log_text()[-2000:])
        log = p.log_text()
        for w in log_words:
            # the table catalog's check at start names the cause once more,
            # in its own line
            n = sum(1 for ln in log.splitlines()
                    if w in ln and ('WARNING' in ln or 'warning' in ln) and
                    'catalog: ' not in ln)
            check(n == 1, 'expected one warning with %r, got %d:\n%s' %
                  (w, n, log[-3000:]))
        return first

    def test_stale_keytab(self):
        self.failing_proxy(
            ['SASL: cannot get a Kerberos ticket for app@' + self.r.realm,
             'app-stale.keytab', "keys are not the KDC's current ones"],
            ['backend 127.0.0.1:%d: SASL: cannot get' % self.emu.port],
            keytab=self.app_kt_stale)

    def test_unknown_server_principal(self):
        self.failing_proxy(
            ['hbase/nosuchhost@' + self.r.realm,
             'not found in Kerberos database'],
            ['SASL: cannot authenticate to hbase/nosuchhost@'],
            server_host='nosuchhost')

    def test_server_without_key(self):
        self.failing_proxy(
            ['hbase/otherhost@' + self.r.realm,
             'refused the SASL negotiation (BAD): GSS initiate failed'],
            ['refused the SASL negotiation'],
            server_host='otherhost')

    def test_qop_mismatch(self):
        other = OTHER_QOP[self.qop]
        self.failing_proxy(
            ['requires SASL protection %s' % self.qop,
             'the proxy asks for %s' % other],
            ['requires SASL protection'], qop=other)

    def test_thrift2_port_under_servers(self):
        # the probe's second call (getThriftServerType, after getTableNames
        # is an unknown method) goes over the negotiated SASL session too
        p = self.another_proxy(emu_port=self.emu.port2)
        sentence = ('127.0.0.1:%d is a Thrift2 (THBaseService) server; list '
                    'it under thrift2_servers, not servers' % self.emu.port2)
        # the backend's own line: the catalog's check at start names the
        # server too, before the probe has marked it
        wait_for(lambda: 'backend ' + sentence in p.log_text(), 15,
                 'the probe naming the Thrift2 server')
        c, tr = client(p.port)
        expect_ioerror(lambda: c.getRow(b't', b'user001', {}), sentence)
        tr.close()
        check(p.log_text().count('backend ' + sentence) == 1,
              'expected the warning once: ' + p.log_text()[-2000:])

    def test_recovers(self):
        # the first proxy was never disturbed by the failing ones
        c, tr = client(self.proxy.port)
        check(c.getRow(b't', b'user005', {})[0].columns[b'f:q'].value ==
              b'v-user005', 'the good proxy after the failures')
        tr.close()

    def run(self):
        # round trip first: the later tests read its rows
        names = ['test_round_trip'] + sorted(
            n for n in dir(self) if n.startswith('test_') and
            n not in ('test_round_trip', 'test_recovers')) + \
            ['test_recovers']
        return hsptest.run_cases(self, names)

    def logs(self):
        return [self.proxy] + self.others

    def stop(self):
        failed = []
        for p in self.logs():
            log = p.log_text()
            rc = p.stop()
            if rc != 0:
                failed.append('proxy exit status %s' % rc)
                print('--- proxy log ---\n' + log[-4000:])
            low = log.lower()
            for word in ('session key', 'keyblock', 'key:'):
                if word in low:
                    failed.append('log-hygiene')
                    print('FAIL the proxy log mentions %r' % word)
        self.emu_log = self.emu.log_text()
        rc = self.emu.stop()
        if rc != 0:
            failed.append('emulator exit status %s' % rc)
        return failed


def run_renewal(args):
    """Tickets of 15 s: calls every 0.3 s for 40 s all work while the
    proxy renews its ticket and redials expiring contexts."""
    with krb5lib.Realm(ticket_lifetime='15s') as realm:
        realm.add_principals(SERVER, 'app')
        server_kt = realm.export(SERVER, realm.path('server.keytab'))
        app_kt = realm.export('app', realm.path('app.keytab'))
        emu = Emu(args.emu, realm, args.qop, server_kt)
        proxy = Proxy(args.proxy, realm, emu.port, args.qop, app_kt)
        failed = []
        try:
            T = test_sasl.T
            c, tr = client(proxy.port)
            c.mutateRow(b't', b'k', [T.Mutation(column=b'f:q', value=b'v')],
                        {})
            t0 = time.monotonic()
            n = 0
            while time.monotonic() - t0 < 40:
                got = c.getRow(b't', b'k', {})
                check(got and got[0].columns[b'f:q'].value == b'v',
                      'call %d at %.1f s: %r' % (n, time.monotonic() - t0,
                                                 got))
                n += 1
                time.sleep(0.3)
            tr.close()
            log = proxy.log_text()
            renewals = log.count('SASL: Kerberos ticket for app@')
            users = emu.log_text().count('effective user: app')
            print('%d calls, %d tickets, %d SASL connections to the server'
                  % (n, renewals, users))
            check(renewals >= 3, 'expected 3+ tickets in 40 s, log:\n' +
                  log[-3000:])
            check(users >= 3, 'expected the proxy to redial on new '
                  'tickets, the emulator saw %d connections' % users)
            # but the one at start about the emulator's table: one region
            # for its 8 buckets
            rest = '\n'.join(ln for ln in log.splitlines()
                             if 'salt buckets share one region' not in ln)
            check('WARNING' not in rest and 'warning' not in rest,
                  'warnings during renewal:\n' + log[-3000:])
            print('ok   renewal')
        except Exception:  # noqa: BLE001
            failed.append('renewal')
            traceback.print_exc()
            print('--- proxy log ---\n' + proxy.log_text()[-4000:])
        finally:
            if proxy.stop() != 0:
                failed.append('proxy exit status')
            if emu.stop() != 0:
                failed.append('emulator exit status')
    return failed


def build_clockshim(workdir):
    """tests/secure/clockshim.c as a shared library, built here so that it
    carries no sanitizer runtime into the uninstrumented krb5kdc."""
    cc = os.environ.get('CC', 'cc')
    out = os.path.join(workdir, 'clockshim.so')
    p = subprocess.run([cc, '-shared', '-fPIC', '-O1', '-o', out,
                        os.path.join(HERE, 'clockshim.c'), '-ldl'],
                       capture_output=True, text=True, timeout=60)
    if p.returncode != 0:
        raise Failure('cannot build clockshim.c with %s: %s' % (cc, p.stderr))
    return out


def run_skew(args):
    """The KDC's clock an hour ahead of the proxy's and the server's: MIT
    moves the proxy's clock to the KDC's by itself (kdc_timesync), so its
    tickets start in the server's future and the server refuses them.
    HBase tells a client only "GSS initiate failed"; the client must get
    that, with the two causes to look for, clock skew among them."""
    shimdir = tempfile.mkdtemp(prefix='hsp-clockshim-')
    shim = build_clockshim(shimdir)
    failed = []
    with krb5lib.Realm(kdc_env={'LD_PRELOAD': shim,
                                'HSP_CLOCK_OFFSET': '3600'}) as realm:
        realm.add_principals(SERVER, 'app')
        server_kt = realm.export(SERVER, realm.path('server.keytab'))
        app_kt = realm.export('app', realm.path('app.keytab'))
        emu = Emu(args.emu, realm, args.qop, server_kt)
        proxy = Proxy(args.proxy, realm, emu.port, args.qop, app_kt)
        try:
            c, tr = client(proxy.port)
            text = expect_ioerror(lambda: c.getRow(b't', b'k', {}),
                                  'GSS initiate failed', 'clock')
            print('     the client sees: %s' % text)
            tr.close()
            check(emu.wait_log('Ticket not yet valid'),
                  'the emulator did not see a future ticket: ' +
                  emu.log_text()[-1000:])
            check(proxy.alive(), 'the proxy died')
            print('ok   clock skew')
        except Exception:  # noqa: BLE001
            failed.append('clock-skew')
            traceback.print_exc()
            print('--- proxy log ---\n' + proxy.log_text()[-3000:])
        finally:
            if proxy.stop() != 0:
                failed.append('proxy exit status')
            if emu.stop() != 0:
                failed.append('emulator exit status')
            shutil.rmtree(shimdir, ignore_errors=True)
    return failed


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--emu', required=True)
    ap.add_argument('--proxy', required=True)
    ap.add_argument('--pydir', required=True)
    ap.add_argument('--qop', choices=sorted(OTHER_QOP), required=True)
    ap.add_argument('--renewal', action='store_true')
    ap.add_argument('--clock-skew', action='store_true')
    args = ap.parse_args()
    hsptest.import_thrift(args.pydir, test_sasl)
    test_sasl.load_kerberos()
    if args.renewal:
        failed = run_renewal(args)
    elif args.clock_skew:
        failed = run_skew(args)
    else:
        with krb5lib.Realm() as realm:
            suite = Suite(args, realm)
            failed = ['(crashed)']
            try:
                failed = suite.run()
            finally:
                failed += suite.stop()
                if failed:
                    print('--- hbase-emu log ---\n' +
                          getattr(suite, 'emu_log', '')[-3000:])
    if failed:
        print('%d failed: %s' % (len(failed), ', '.join(failed)))
        return 1
    return 0


if __name__ == '__main__':
    sys.exit(main())
