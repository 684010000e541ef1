"""The systemd side of hbase-salt-proxy: the unit passes systemd-analyze
verify and carries the hardening the operations issue asks for; the
daemon speaks sd_notify (READY, RELOADING + MONOTONIC_USEC, STOPPING,
STATUS) to a NOTIFY_SOCKET of the test's own; meson installs the unit,
the config under sysconfdir/hbase-salt-proxy and the man page; the CLI.

  /usr/bin/python3 tests/ops/test_systemd.py --proxy BUILD/daemon/hbase-salt-proxy \\
      --emu BUILD/tests/emu/hbase-emu --pydir BUILD/thrift/py \\
      --unit BUILD/systemd/hbase-salt-proxy.service --builddir BUILD \\
      --srcdir SRC [unittest args]
"""

import argparse
import calendar
import json
import os
import resource
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import opslib  # noqa: E402
import hsptest  # noqa: E402

ARGS = None


def unit_directives(text):
    """[(section, key, value)] of a unit file."""
    out, section = [], None
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith('#'):
            continue
        if line.startswith('['):
            section = line.strip('[]')
            continue
        key, _, value = line.partition('=')
        out.append((section, key, value))
    return out


class UnitTest(unittest.TestCase):
    def setUp(self):
        with open(ARGS.unit) as f:
            self.text = f.read()
        self.d = unit_directives(self.text)

    def value(self, key, section='Service'):
        vals = [v for s, k, v in self.d if s == section and k == key]
        self.assertTrue(vals, '%s= missing in [%s]' % (key, section))
        return vals

    def test_directives(self):
        want = {
            'Type': 'notify', 'Restart': 'on-failure', 'DynamicUser': 'yes',
            'ProtectSystem': 'strict', 'ProtectHome': 'yes',
            'PrivateTmp': 'yes', 'NoNewPrivileges': 'yes',
            'CapabilityBoundingSet': '',
            'RestrictAddressFamilies': 'AF_INET AF_INET6 AF_UNIX',
            'SystemCallFilter': '@system-service',
            'MemoryDenyWriteExecute': 'yes',
        }
        for key, value in want.items():
            self.assertEqual(self.value(key), [value], key)
        self.assertTrue(int(self.value('LimitNOFILE')[0]) >= 65536)
        reload = self.value('ExecReload')
        self.assertEqual(reload[-1], '/bin/kill -HUP $MAINPID')
        self.assertIn('--check-config', reload[0])
        # checked against the running daemon, which publishes its
        # configuration in the runtime directory
        self.assertIn('--pid $MAINPID', reload[0])
        self.assertEqual(self.value('RuntimeDirectory'), ['hbase-salt-proxy'])
        start = self.value('ExecStart')[0]
        self.assertIn('/hbase-salt-proxy/hbase-salt-proxy.conf', start)
        self.assertNotRegex(self.text, r'@[a-z_]+@', 'unsubstituted @var@')

    def test_systemd_analyze_verify(self):
        if shutil.which('systemd-analyze') is None:
            self.skipTest('systemd-analyze not installed')
        d = tempfile.mkdtemp(prefix='hsp-ops-unit-')
        try:
            # the installed paths do not exist in a build tree: point them
            # at the built binary and the source tree's example config
            sbin = [w for w in self.value('ExecStart')[0].split()
                    if w.endswith('/hbase-salt-proxy')][0]
            conf = [w for w in self.value('ExecStart')[0].split()
                    if w.endswith('.conf')][0]
            text = self.text.replace(sbin, os.path.abspath(ARGS.proxy))
            text = text.replace(conf, os.path.join(
                os.path.abspath(ARGS.srcdir), 'conf',
                'hbase-salt-proxy.conf'))
            path = os.path.join(d, 'hbase-salt-proxy.service')
            with open(path, 'w') as f:
                f.write(text)
            # Documentation=man:hbase-salt-proxy(8) man:...conf(5) is
            # checked with man(1): give it the page from the source tree
            # and the one generated in the build tree
            mandir = os.path.join(d, 'man', 'man8')
            os.makedirs(mandir)
            shutil.copy(os.path.join(ARGS.srcdir, 'daemon',
                                     'hbase-salt-proxy.8'), mandir)
            os.makedirs(os.path.join(d, 'man', 'man5'))
            shutil.copy(os.path.join(ARGS.builddir, 'conf',
                                     'hbase-salt-proxy.conf.5'),
                        os.path.join(d, 'man', 'man5'))
            env = dict(os.environ, MANPATH=os.path.join(d, 'man'),
                       SYSTEMD_LOG_LEVEL='notice')
            r = subprocess.run(['systemd-analyze', 'verify', path],
                               capture_output=True, text=True, env=env,
                               timeout=60)
            out = r.stdout + r.stderr
            self.assertEqual(r.returncode, 0, out)
            # warnings about the unit itself fail the test too
            lines = [l for l in out.splitlines()
                     if 'hbase-salt-proxy' in l]
            self.assertEqual(lines, [], out)
        finally:
            shutil.rmtree(d, ignore_errors=True)

    def test_installed_layout(self):
        r = subprocess.run(['meson', 'introspect', '--installed',
                            ARGS.builddir], capture_output=True, text=True,
                           timeout=60)
        if r.returncode != 0:
            self.skipTest('meson introspect failed: ' + r.stderr)
        dests = list(json.loads(r.stdout).values())

        def one(suffix):
            hits = [p for p in dests if p.endswith(suffix)]
            self.assertEqual(len(hits), 1, (suffix, dests))
            return hits[0]
        one('/sbin/hbase-salt-proxy')
        one('/systemd/system/hbase-salt-proxy.service')
        one('/hbase-salt-proxy/hbase-salt-proxy.conf')
        one('/man8/hbase-salt-proxy.8')
        # the configuration reference and the migration runbook, generated
        one('/man5/hbase-salt-proxy.conf.5')
        one('/sbin/hbase-salt-migrate')
        one('/man8/hbase-salt-migrate.8')


class CliTest(unittest.TestCase):
    def run_proxy(self, *args):
        return subprocess.run([ARGS.proxy] + list(args), capture_output=True,
                              text=True, timeout=30)

    def test_version(self):
        r = self.run_proxy('--version')
        self.assertEqual(r.returncode, 0)
        self.assertRegex(r.stdout, r'^hbase-salt-proxy \d+\.\d+\.\d+\n$')

    def test_check_config(self):
        d = tempfile.mkdtemp(prefix='hsp-ops-cli-')
        try:
            good = os.path.join(d, 'good.conf')
            with open(good, 'w') as f:
                f.write(opslib.proxy_conf(9090, [9091], admin_port=9095))
            r = self.run_proxy('-c', good, '--check-config')
            self.assertEqual((r.returncode, r.stdout), (0, good + ': ok\n'),
                             r.stderr)
            bad = os.path.join(d, 'bad.conf')
            with open(bad, 'w') as f:
                f.write('[proxy]\nlisten = 127.0.0.1:9090\n\n[backend]\n'
                        'pool_sise = 4\n')
            r = self.run_proxy('-c', bad, '--check-config')
            self.assertEqual(r.returncode, 1)
            self.assertIn(bad + ':5: [backend] pool_sise', r.stderr)
            r = self.run_proxy('--log-level', 'loud')
            self.assertEqual(r.returncode, 2)
            self.assertIn('--log-level', r.stderr)
        finally:
            shutil.rmtree(d, ignore_errors=True)

    def test_keytab_from_credentials(self):
        """sasl_keytab = credential:NAME is the file LoadCredential= put in
        $CREDENTIALS_DIRECTORY; without that directory the config is
        refused, naming the directive that provides it."""
        d = tempfile.mkdtemp(prefix='hsp-ops-cred-')
        try:
            conf = os.path.join(d, 'k.conf')
            text = opslib.proxy_conf(9090, [9091]).replace(
                '[backend]\n',
                '[backend]\nsasl = gssapi\n'
                'sasl_principal = proxy/app1.example@EXAMPLE.TEST\n'
                'sasl_keytab = credential:hbase.keytab\n', 1)
            self.assertIn('credential:hbase.keytab', text)
            with open(conf, 'w') as f:
                f.write(text)
            creds = os.path.join(d, 'creds')
            os.mkdir(creds)
            with open(os.path.join(creds, 'hbase.keytab'), 'wb') as f:
                f.write(b'\x05\x02')
            env = dict(os.environ, CREDENTIALS_DIRECTORY=creds)
            r = subprocess.run([ARGS.proxy, '-c', conf, '--check-config'],
                               capture_output=True, text=True, timeout=30,
                               env=env)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertIn('keytab ' + os.path.join(creds, 'hbase.keytab'),
                          r.stdout)
            env.pop('CREDENTIALS_DIRECTORY')
            r = subprocess.run([ARGS.proxy, '-c', conf, '--check-config'],
                               capture_output=True, text=True, timeout=30,
                               env=env)
            self.assertEqual(r.returncode, 1, r.stdout)
            self.assertIn('[backend] sasl_keytab', r.stderr)
            self.assertIn('LoadCredential=', r.stderr)
            for bad in ('credential:', 'credential:../x', 'keytab'):
                with open(conf, 'w') as f:
                    f.write(text.replace('credential:hbase.keytab', bad))
                r = subprocess.run([ARGS.proxy, '-c', conf,
                                    '--check-config'], capture_output=True,
                                   text=True, timeout=30)
                self.assertEqual(r.returncode, 1, bad)
                self.assertIn('absolute path or credential:NAME', r.stderr)
        finally:
            shutil.rmtree(d, ignore_errors=True)

    def test_explain_key(self):
        d = tempfile.mkdtemp(prefix='hsp-ops-cli-')
        try:
            conf = os.path.join(d, 'x.conf')
            with open(conf, 'w') as f:
                f.write(opslib.proxy_conf(9090, [9091]))
            r = self.run_proxy('-c', conf, '--explain-key', 't', 'user42')
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertIn('bucket:', r.stdout)
        finally:
            shutil.rmtree(d, ignore_errors=True)


class JournalTest(unittest.TestCase):
    """Under systemd stderr is the journal (JOURNAL_STREAM names it) and
    entries go to journald's socket; where that socket is missing the
    daemon must still log, one line each, to stderr, bare: journald stamps
    each line.  Elsewhere each line carries its UTC time, to the ms."""

    def run_proxy(self, journal):
        """The proxy's stderr lines from start to stop, with
        JOURNAL_STREAM naming that stderr (as systemd does) when
        journal."""
        d = tempfile.mkdtemp(prefix='hsp-ops-journal-')
        try:
            conf = os.path.join(d, 'x.conf')
            port = opslib.free_port()
            with open(conf, 'w') as f:
                f.write(opslib.proxy_conf(port, [opslib.free_port()]))
            log = os.path.join(d, 'stderr.log')
            with open(log, 'wb') as err:
                env = dict(os.environ)
                env.pop('NOTIFY_SOCKET', None)
                env.pop('JOURNAL_STREAM', None)
                if journal:
                    st = os.fstat(err.fileno())
                    env['JOURNAL_STREAM'] = '%d:%d' % (st.st_dev, st.st_ino)
                p = subprocess.Popen([ARGS.proxy, '-c', conf], stderr=err,
                                     env=env)
                try:
                    opslib.wait_for(
                        lambda: opslib.listening(p.pid, port)
                        or p.poll() is not None, 10, 'proxy listening')
                finally:
                    started = p.poll() is None
                    p.terminate()
                    rc = p.wait(15)
                self.assertTrue(started, 'the proxy exited at start (%d): %s'
                                % (rc, open(log).read()[-2000:]))
                self.assertEqual(rc, 0)
            with open(log) as f:
                return f.read()
        finally:
            shutil.rmtree(d, ignore_errors=True)

    def test_journal_stream_without_journald(self):
        if os.path.exists('/run/systemd/journal/socket'):
            self.skipTest('a real journald is running here')
        text = self.run_proxy(True)
        self.assertIn('info: hbase-salt-proxy ', text)
        self.assertIn('info: stopped\n', text)
        for ln in text.splitlines():
            self.assertRegex(ln, r'^(info|warning|critical|error|debug): ')

    def test_stamped_without_journald(self):
        before = time.time()
        lines = self.run_proxy(False).splitlines()
        self.assertTrue(any(ln.endswith(' info: stopped') for ln in lines),
                        lines)
        for ln in lines:
            self.assertRegex(ln, r'^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z '
                             r'(info|warning|critical|error|debug): ')
        stamp = calendar.timegm(time.strptime(lines[0][:19],
                                              '%Y-%m-%dT%H:%M:%S'))
        self.assertLess(abs(stamp - before), 5, lines[0])


class EarlyStopTest(unittest.TestCase):
    """systemd may stop a unit the moment it starts (a restart loop, an
    operator's quick `systemctl stop`): a SIGTERM that comes as soon as
    the proxy listens, while it is still setting up (here up to 1000
    workers after the one that binds: a window of milliseconds), must
    still stop it cleanly."""

    def test_sigterm_while_starting(self):
        # four descriptors a worker; the unit's LimitNOFILE is 65536
        hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
        if hard == resource.RLIM_INFINITY:
            hard = 1 << 20
        workers = max(50, min(1000, (hard - 200) // 4))

        def raise_limit():
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
        d = tempfile.mkdtemp(prefix='hsp-ops-early-')
        try:
            conf = os.path.join(d, 'x.conf')
            for i in range(5):
                port = opslib.free_port()
                with open(conf, 'w') as f:
                    f.write(opslib.proxy_conf(port, [opslib.free_port()])
                            .replace('workers = 2', 'workers = %d' % workers))
                env = dict(os.environ)
                env.pop('NOTIFY_SOCKET', None)
                p = subprocess.Popen([ARGS.proxy, '-c', conf],
                                     stderr=subprocess.PIPE, env=env,
                                     preexec_fn=raise_limit)
                end = time.time() + 20
                # no pause between looks: the first moment it listens
                while (not opslib.listening(p.pid, port)
                       and p.poll() is None and time.time() < end):
                    pass
                p.terminate()
                err = p.communicate(timeout=20)[1].decode('utf-8', 'replace')
                self.assertEqual(p.returncode, 0, 'round %d:\n%s'
                                 % (i, err[-2000:]))
                self.assertIn('info: stopped', err)
        finally:
            shutil.rmtree(d, ignore_errors=True)


class CliSplitTest(unittest.TestCase):
    def test_split_keys(self):
        d = tempfile.mkdtemp(prefix='hsp-ops-cli-')
        try:
            conf = os.path.join(d, 'x.conf')
            with open(conf, 'w') as f:
                f.write(opslib.proxy_conf(9090, [9091], tables={
                    'b': 'buckets = 4\n',
                    'h': 'buckets = 16\nsalt_format = hex\n'
                         'salt_separator = -\n',
                    'd': 'buckets = 12\nsalt_format = decimal\n'}))

            def splits(t):
                r = subprocess.run([ARGS.proxy, '-c', conf, '--split-keys',
                                    t], capture_output=True, text=True)
                self.assertEqual(r.returncode, 0, r.stderr)
                return r.stdout
            self.assertEqual(splits('b'),
                             'SPLITS => ["\\x01", "\\x02", "\\x03"]\n')
            self.assertEqual(splits('h'), 'SPLITS => [%s]\n' % ', '.join(
                '"%x"' % i for i in range(1, 16)))
            self.assertEqual(splits('d'), 'SPLITS => [%s]\n' % ', '.join(
                '"%02d"' % i for i in range(1, 12)))
            r = subprocess.run([ARGS.proxy, '-c', conf, '--split-keys', 'x'],
                               capture_output=True, text=True)
            self.assertEqual(r.returncode, 1)
        finally:
            shutil.rmtree(d, ignore_errors=True)


class NotifyTest(unittest.TestCase):
    """sd_notify to a datagram socket of the test's own, as systemd does."""

    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix='hsp-ops-notify-')
        self.emu = opslib.Emu(ARGS.emu, self.dir)
        self.sock_path = os.path.join(self.dir, 'notify.sock')
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind(self.sock_path)
        self.sock.settimeout(10)
        self.proxy = None

    def tearDown(self):
        try:
            if self.proxy is not None and self.proxy.alive():
                self.proxy.stop()
        finally:
            self.emu.close()
            self.sock.close()
            if not os.environ.get('HSP_KEEP_LOGS'):
                shutil.rmtree(self.dir, ignore_errors=True)

    def recv(self):
        """One notification as {key: value}."""
        data = self.sock.recv(4096).decode()
        return dict(l.split('=', 1) for l in data.split('\n') if l)

    def recv_until(self, key):
        """Notifications until one has key; all of them, in order."""
        got = []
        while True:
            n = self.recv()
            got.append(n)
            if key in n:
                return got

    def test_notify_lifecycle(self):
        port = opslib.free_port()
        self.proxy = opslib.Proxy(
            ARGS.proxy, self.dir,
            opslib.proxy_conf(port, [self.emu.port]), port,
            env={'NOTIFY_SOCKET': self.sock_path}, wait=False)
        got = self.recv_until('READY')
        ready = got[-1]
        self.assertEqual(ready['READY'], '1')
        self.assertEqual(int(ready['MAINPID']), self.proxy.proc.pid)
        # READY means serving: the listener is bound already
        self.assertTrue(opslib.can_connect(port))
        status = self.recv_until('STATUS')[-1]['STATUS']
        self.assertRegex(status, r'^\d+ clients?, \d+ scanners?, '
                                 r'generation 1$')

        # a client and an open scanner show in STATUS after a reload
        hsptest.import_thrift(ARGS.pydir, opslib)
        c = opslib.client(port)
        opslib.put(c, b't', b'k1', b'v')
        sid = c.scannerOpenWithScan(b't', opslib.T.TScan(caching=1), {})
        before = time.monotonic()
        self.proxy.hup()
        got = self.recv_until('RELOADING')
        rel = got[-1]
        self.assertEqual(rel['RELOADING'], '1')
        usec = int(rel['MONOTONIC_USEC'])
        # CLOCK_MONOTONIC, as systemd compares it with its own
        self.assertLess(abs(usec / 1e6 - before), 5.0)
        got = self.recv_until('READY')
        status = self.recv_until('STATUS')[-1]['STATUS']
        self.assertRegex(status, r'^1 client, 1 scanner, generation 2, '
                                 r'last reload applied$')
        c.scannerClose(sid)
        c._trans.close()

        self.proxy.proc.send_signal(15)
        got = self.recv_until('STOPPING')
        self.assertEqual(got[-1]['STOPPING'], '1')
        self.assertEqual(self.proxy.stop(), 0)

    def test_no_notify_socket_no_noise(self):
        # without NOTIFY_SOCKET the daemon runs as before and says nothing
        port = opslib.free_port()
        self.proxy = opslib.Proxy(ARGS.proxy, self.dir,
                                  opslib.proxy_conf(port, [self.emu.port]),
                                  port)
        self.sock.settimeout(0.5)
        with self.assertRaises(socket.timeout):
            self.sock.recv(4096)
        self.assertEqual(self.proxy.stop(), 0)


def main():
    global ARGS
    ap = argparse.ArgumentParser()
    ap.add_argument('--proxy', required=True)
    ap.add_argument('--emu', required=True)
    ap.add_argument('--pydir', required=True)
    ap.add_argument('--unit', required=True)
    ap.add_argument('--builddir', required=True)
    ap.add_argument('--srcdir', required=True)
    ARGS, rest = ap.parse_known_args()
    unittest.main(argv=[sys.argv[0]] + rest, verbosity=2)


if __name__ == '__main__':
    main()
