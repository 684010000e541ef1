"""Setup mistakes that would misplace data are impossible or loud: a
second process on the same listen address fails instead of sharing it,
while one process's workers still share the clients; --check-config
resolves every address and, with --pid, refuses a file the running proxy
would refuse on reload; a backend speaking another protocol or transport
is named in one log line and probed less often.

  /usr/bin/python3 tests/ops/test_setup.py --proxy BUILD/daemon/hbase-salt-proxy \\
      --emu BUILD/tests/emu/hbase-emu --pydir BUILD/thrift/py [unittest args]
"""

import argparse
import os
import re
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
from opslib import get, put  # noqa: E402

ARGS = None
T_TABLE = 'buckets = 8\nsalt_format = hex\nsalt_separator = -\n'


class SetupCase(unittest.TestCase):
    """A temporary directory, an emulator, and proxies stopped at the end."""

    emu_extra = ()

    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix='hsp-ops-setup-')
        self.emu = opslib.Emu(ARGS.emu, self.dir, extra=self.emu_args())
        self.proxies = []

    def emu_args(self):
        return self.emu_extra

    def tearDown(self):
        try:
            for p in self.proxies:
                if p.alive():
                    p.stop()
        finally:
            self.emu.close()
            if not os.environ.get('HSP_KEEP_LOGS'):
                shutil.rmtree(self.dir, ignore_errors=True)

    def start(self, text, port, admin_port=None, env=None, args=()):
        p = opslib.Proxy(ARGS.proxy, self.dir, text, port,
                         admin_port=admin_port, env=env, args=args)
        self.proxies.append(p)
        return p

    def write(self, name, text):
        path = os.path.join(self.dir, name)
        with open(path, 'w') as f:
            f.write(text)
        return path

    def run_proxy(self, *args, env=None):
        return subprocess.run([ARGS.proxy] + list(args), capture_output=True,
                              text=True, timeout=30,
                              env=dict(os.environ, **(env or {})))


class ListenTest(SetupCase):
    def test_second_process_same_listen_fails(self):
        port = opslib.free_port()
        first = self.start(opslib.proxy_conf(port, [self.emu.port],
                                             tables={'t': T_TABLE}), port)
        # a different mapping: had it bound, its clients' rows would land
        # where the first never looks
        conf = self.write('second.conf', opslib.proxy_conf(
            port, [self.emu.port], tables={'t': 'buckets = 3\n'}))
        try:
            r = subprocess.run([ARGS.proxy, '-c', conf], capture_output=True,
                               text=True, timeout=20)
        except subprocess.TimeoutExpired:
            self.fail('a second proxy on the same listen address runs')
        self.assertNotEqual(r.returncode, 0, r.stderr)
        self.assertIn('[proxy] listen: cannot listen on 127.0.0.1:%d: '
                      'Address already in use' % port, r.stderr)
        # the first one still serves every connection
        for i in range(20):
            c = opslib.client(port)
            try:
                put(c, b't', b'row%d' % i, b'v')
                self.assertEqual(get(c, b't', b'row%d' % i), b'v')
            finally:
                c._trans.close()
        self.assertTrue(first.alive())

    def test_workers_share_connections(self):
        port = opslib.free_port()
        p = self.start(opslib.proxy_conf(port, [self.emu.port],
                                         tables={'t': T_TABLE}), port,
                       args=('--log-level', 'debug'))
        # the start-up wait makes no connection (it reads /proc)
        at = p.log_size()
        for i in range(16):
            c = opslib.client(port)
            try:
                put(c, b't', b'w%d' % i, b'v')
            finally:
                c._trans.close()
        opslib.wait_for(lambda: p.log_text()[at:].count('connected (') == 16,
                        10, '16 connections logged')
        workers = re.findall(r'connected \(worker (\d+),',
                             p.log_text()[at:])
        self.assertEqual(len(workers), 16, p.log_text())
        self.assertEqual(sorted(set(workers)), ['0', '1'])
        # in turn: neither takes more than its half and one
        self.assertLessEqual(max(workers.count('0'), workers.count('1')), 9)


class CheckConfigTest(SetupCase):
    def check(self, text, *args, env=None):
        return self.run_proxy('-c', self.write('check.conf', text),
                              '--check-config', *args, env=env)

    def test_unresolvable_addresses_fail(self):
        port = opslib.free_port()
        for key, text in (
                ('[proxy] listen', '[proxy]\nlisten = nosuchhost.invalid:'
                 '9090\n'),
                ('[backend] servers', '[backend]\nservers = 127.0.0.1:9091, '
                 'nosuchhost.invalid:9091\n'),
                ('[admin] listen', '[admin]\nlisten = nosuchhost.invalid:'
                 '9096\n')):
            r = self.check(text)
            self.assertEqual(r.returncode, 1, (key, r.stdout, r.stderr))
            self.assertIn('%s: cannot resolve nosuchhost.invalid' % key,
                          r.stderr)
            self.assertEqual(r.stdout, '')
        r = self.check(opslib.proxy_conf(port, [self.emu.port]))
        self.assertEqual(r.returncode, 0, r.stderr)

    def check_allowed_and_refused(self, port, pid, allowed, env):
        """allowed passes the check against pid; a change of t's salt
        mapping (returned) is refused."""
        r = self.check(allowed, '--pid', pid, env=env)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn('ok, the running proxy (pid %s) would apply it' % pid,
                      r.stdout)
        # a refused one: the salt mapping of t changes
        changed = opslib.proxy_conf(port, [self.emu.port], tables={
            't': 'buckets = 16\nsalt_format = hex\nsalt_separator = -\n'})
        r = self.check(changed, '--pid', pid, env=env)
        self.assertEqual(r.returncode, 1, r.stdout)
        self.assertIn('a reload would be refused by the running proxy (pid '
                      '%s): [table:t]: the salt mapping would change' % pid,
                      r.stderr)
        self.assertNotIn('RUNTIME_DIRECTORY', r.stderr)
        return changed

    def test_against_running_proxy(self):
        port = opslib.free_port()
        rundir = os.path.join(self.dir, 'run')
        os.mkdir(rundir, 0o700)
        env = {'RUNTIME_DIRECTORY': rundir}
        text = opslib.proxy_conf(port, [self.emu.port], tables={'t': T_TABLE})
        p = self.start(text, port, env=env)
        pid = str(p.proc.pid)
        published = os.path.join(rundir, 'running-%s.conf' % pid)
        # written as the proxy reports READY, just after it starts listening
        opslib.wait_for(lambda: os.path.exists(published), 10,
                        'the running configuration published')

        # an allowed change: a new table, another pool size
        allowed = opslib.proxy_conf(port, [self.emu.port], tables={
            't': T_TABLE, 'u': 'buckets = 4\n'},
            extra_backend='pool_size = 8\n').replace('pool_size = 2\n', '')
        changed = self.check_allowed_and_refused(port, pid, allowed, env)
        # without --pid the file alone is valid, but HBase answers and its
        # table catalog holds t with 8 buckets: a start would refuse t
        r = self.check(changed)
        self.assertEqual(r.returncode, 1, r.stdout)
        self.assertIn('table t: MISMATCH: the catalog hbase_salt_catalog '
                      'holds {buckets = 8', r.stderr)
        self.assertIn('this file says {buckets = 16', r.stderr)
        # a removed section and a restart-only key are refused too
        r = self.check(opslib.proxy_conf(port, [self.emu.port], tables={}),
                       '--pid', pid, env=env)
        self.assertEqual(r.returncode, 1)
        self.assertIn('[table:t] was removed', r.stderr)
        r = self.check(opslib.proxy_conf(port + 1, [self.emu.port],
                                         tables={'t': T_TABLE}),
                       '--pid', pid, env=env)
        self.assertEqual(r.returncode, 1)
        self.assertIn('[proxy] listen changed: that needs a restart',
                      r.stderr)

        # the daemon agrees: the allowed file applies, and what it
        # publishes is then the base of the next check
        p.write_conf(allowed)
        at = p.log_size()
        p.hup()
        p.wait_log(r'reload: applied configuration generation 2', after=at)
        def published_gen2():
            with open(published) as f:
                return 'generation 2' in f.read()
        opslib.wait_for(published_gen2, 10,
                        'the published configuration of generation 2')
        r = self.check(opslib.proxy_conf(port, [self.emu.port], tables={
            't': T_TABLE}), '--pid', pid, env=env)
        self.assertEqual(r.returncode, 1)
        self.assertIn('[table:u] was removed', r.stderr)
        self.assertEqual(p.stop(), 0)
        self.assertFalse(os.path.exists(published))

    def test_pid_outside_systemd(self):
        """A proxy started by hand, checked from a shell: neither has
        RUNTIME_DIRECTORY, the PID alone finds the running configuration
        (the process's memfd, through /proc/PID/fd)."""
        port = opslib.free_port()
        none = {'RUNTIME_DIRECTORY': ''}
        text = opslib.proxy_conf(port, [self.emu.port], tables={'t': T_TABLE})
        p = self.start(text, port, env=none)
        pid = str(p.proc.pid)
        allowed = text + '[table:u]\nbuckets = 4\n'
        # published just after the listeners are bound
        opslib.wait_for(lambda: 'publishes none' not in self.check(
            allowed, '--pid', pid, env=none).stderr, 10,
            'the running configuration published')
        self.check_allowed_and_refused(port, pid, allowed, none)
        # a reload replaces what it compares with
        p.write_conf(allowed)
        at = p.log_size()
        p.hup()
        p.wait_log(r'reload: applied configuration generation 2', after=at)
        r = self.check(text, '--pid', pid, env=none)
        self.assertEqual(r.returncode, 1, r.stdout)
        self.assertIn('[table:u] was removed', r.stderr)
        # a process that is no proxy, and one that is gone
        r = self.check(text, '--pid', str(self.emu.proc.pid), env=none)
        self.assertEqual(r.returncode, 1)
        self.assertIn('--pid %d: cannot read the running configuration: '
                      'process %d publishes none' % (self.emu.proc.pid,
                                                     self.emu.proc.pid),
                      r.stderr)
        self.assertEqual(p.stop(), 0)
        r = self.check(text, '--pid', pid, env=none)
        self.assertEqual(r.returncode, 1)
        self.assertIn('(no such process)', r.stderr)

    def test_pid_without_published_configuration(self):
        r = self.check(opslib.proxy_conf(opslib.free_port(), [self.emu.port]),
                       '--pid', '1', env={'RUNTIME_DIRECTORY': self.dir})
        self.assertEqual(r.returncode, 1)
        self.assertIn('--pid 1: cannot read the running configuration',
                      r.stderr)

    def test_advice_warns_without_failing(self):
        port = opslib.free_port()
        text = opslib.proxy_conf(port, [self.emu.port],
                                 tables={'t': T_TABLE})
        text += '[scan]\nscanner_timeout_ms = 120000\n'
        r = self.check(text)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn('[backend] pool_size = 2 is below the 8 buckets of '
                      '[table:t]', r.stderr)
        self.assertIn('[scan] scanner_timeout_ms = 120000 is not below '
                      "HBase's 120000 ms scanner expiry", r.stderr)
        p = self.start(text, port)
        p.wait_log(r'warning: .*\[backend\] pool_size = 2 is below')
        p.wait_log(r'warning: .*\[scan\] scanner_timeout_ms = 120000')
        # and on reload
        at = p.log_size()
        p.write_conf(text + '[table:v]\nbuckets = 5\n')
        p.hup()
        p.wait_log(r'\[table:v\]: a scan', after=at)
        p.wait_log(r'reload: applied', after=at)

    def test_config_file_errors_name_program_and_file(self):
        missing = os.path.join(self.dir, 'missing.conf')
        for args in (('--check-config',), ()):
            r = self.run_proxy('-c', missing, *args)
            self.assertEqual(r.returncode, 1)
            self.assertEqual(r.stderr, 'hbase-salt-proxy: %s: cannot read the '
                             'configuration file: no such file\n' % missing)


class CliTextTest(SetupCase):
    def test_explain_empty_key_says_unsalted(self):
        conf = self.write('x.conf', opslib.proxy_conf(9090, [9091], tables={
            't': T_TABLE}))
        r = self.run_proxy('-c', conf, '--explain-key', 't', '')
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn('goes to HBase unsalted', r.stdout)
        self.assertNotIn('bucket:', r.stdout)
        self.assertNotIn('physical', r.stdout)

    def test_man_page_split_keys_example_is_the_output(self):
        conf = self.write('x.conf', opslib.proxy_conf(9090, [9091], tables={
            'events': 'buckets = 4\n'}))
        r = self.run_proxy('-c', conf, '--split-keys', 'events')
        self.assertEqual(r.returncode, 0, r.stderr)
        page = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                            '..', '..', 'daemon', 'hbase-salt-proxy.8')
        with open(page) as f:
            roff = f.read()
        # the page's example, roff escapes undone
        shown = re.search(r'^\.B "(SPLITS => .*)"$', roff, re.M).group(1)
        shown = shown.replace('\\(dq', '"').replace('\\e', '\\')
        self.assertEqual(shown + '\n', r.stdout)


class ProbeMismatchTest(unittest.TestCase):
    """The proxy configured for another protocol or transport than the
    server: one log line naming the keys, and far fewer probes than the
    4 a second a DOWN server gets (each one an error in HBase's log)."""

    def run_case(self, emu_extra, backend):
        d = tempfile.mkdtemp(prefix='hsp-ops-mismatch-')
        emu = opslib.Emu(ARGS.emu, d, extra=emu_extra)
        p = None
        try:
            port = opslib.free_port()
            p = opslib.Proxy(ARGS.proxy, d, opslib.proxy_conf(
                port, [emu.port], extra_backend=backend), port)
            time.sleep(3.5)
            text = p.log_text()
            self.assertEqual(p.stop(), 0)
            with open(os.path.join(d, 'emu.log')) as f:
                # the emulator, like HBase, logs each such connection
                closes = len(re.findall(r'closing: ', f.read()))
            return text, closes
        finally:
            if p is not None and p.alive():
                p.stop()
            emu.close()
            if not os.environ.get('HSP_KEEP_LOGS'):
                shutil.rmtree(d, ignore_errors=True)

    def check(self, emu_extra, backend, proto, transport):
        text, closes = self.run_case(emu_extra, backend)
        lines = [l for l in text.splitlines()
                 if 'likely speaks another protocol or transport' in l]
        self.assertEqual(len(lines), 1, text)
        self.assertIn('[backend] protocol = %s and [backend] transport = %s'
                      % (proto, transport), lines[0])
        # after the UTC stamp of a line not under journald
        self.assertRegex(lines[0], r'^\S+Z warning: backend 127\.0\.0\.1:')
        self.assertGreaterEqual(closes, 1)
        # at 4 a second that is 12 or more; backing off from 2 s, 2 or 3,
        # plus the table catalog's one check at start (it asks again
        # only once a probe finds the server answering)
        self.assertLessEqual(closes, 4, text)

    def test_compact_against_binary(self):
        self.check((), 'protocol = compact\n', 'compact', 'buffered')

    def test_binary_against_compact(self):
        self.check(('--compact',), '', 'binary', 'buffered')

    def test_buffered_against_framed(self):
        self.check(('--framed',), '', 'binary', 'buffered')

    def test_matching_says_nothing(self):
        text, closes = self.run_case((), '')
        self.assertNotIn('another protocol', text)
        self.assertEqual(closes, 0)


class ServiceMismatchTest(SetupCase):
    """A Thrift2 port listed under servers (or a Thrift1 one under
    thrift2_servers) answers a probe all the same: --check-config fails
    with the sentence that fixes it, /healthz names it, and neither the
    probes nor the table catalog's rechecks send it calls it misreads
    (each one a line in HBase's log)."""

    def emu_args(self):
        return ('--thrift2-listen', '127.0.0.1:0', '--thrift2-port-file',
                os.path.join(self.dir, 'emu.t2port'))

    def setUp(self):
        super().setUp()
        with open(os.path.join(self.dir, 'emu.t2port')) as f:
            self.t2port = int(f.read().strip())
        self.emu_log = os.path.join(self.dir, 'emu.log')

    def emu_lines(self):
        with open(self.emu_log) as f:
            return f.read().splitlines()

    def run_case(self, conf, sentence):
        r = self.run_proxy('-c', self.write('x.conf', conf), '--check-config')
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertIn(sentence, r.stderr)
        self.assertNotIn(': ok', r.stdout)

        port, admin = self.port, self.admin
        p = self.start(conf, port, admin_port=admin)
        opslib.wait_for(lambda: sentence in p.http('/healthz')[1],
                        10, '/healthz naming the server')
        status, body = p.http('/healthz')
        self.assertIn('misconfigured: ' + sentence, body)
        self.assertFalse(body.startswith('ok'), body)
        # once in the log, not once a probe
        p.wait_log(re.escape('backend ' + sentence))
        at = len(self.emu_lines())
        # several recheck periods (500 ms) and mismatch probe periods
        time.sleep(4)
        text = p.log_text()
        self.assertEqual(text.count('backend ' + sentence), 1, text)
        new = self.emu_lines()[at:]
        self.assertEqual([l for l in self.emu_lines()
                          if 'past the end of the message' in l], [])
        self.assertLessEqual(len(new), 3, new)
        return status, body

    def test_thrift2_port_under_servers(self):
        self.port, self.admin = opslib.free_port(), opslib.free_port()
        conf = opslib.proxy_conf(self.port, [self.t2port],
                                 admin_port=self.admin,
                                 tables={'t': T_TABLE})
        conf += '[catalog]\nrecheck_ms = 500\n'
        sentence = ('127.0.0.1:%d is a Thrift2 (THBaseService) server; '
                    'list it under thrift2_servers, not servers'
                    % self.t2port)
        status, body = self.run_case(conf, sentence)
        self.assertEqual(status, 503, body)
        # conf/README.md quotes the log line as it is
        doc = opslib.readme_quote('backend 127.0.0.1:9092 is')
        self.assertTrue(doc.replace('9092', str(self.t2port)).startswith(
            'backend ' + sentence + '; '), doc)
        # a client is told the same at once, not "Invalid method name"
        c = opslib.client(self.port)
        try:
            with self.assertRaises(opslib.T.IOError) as e:
                c.getTableNames()
            self.assertIn(sentence, e.exception.message)
        finally:
            c._trans.close()

    def test_thrift1_port_under_thrift2_servers(self):
        self.port, self.admin = opslib.free_port(), opslib.free_port()
        other = opslib.Emu(ARGS.emu, self.dir, name='emu1')
        try:
            conf = opslib.proxy_conf(
                self.port, [self.emu.port], admin_port=self.admin,
                tables={'t': T_TABLE},
                extra_backend='thrift2_servers = 127.0.0.1:%d\n'
                              % other.port)
            conf += ('[thrift2]\nlisten = 127.0.0.1:%d\n'
                     '[catalog]\nrecheck_ms = 500\n' % opslib.free_port())
            sentence = ('127.0.0.1:%d is a Thrift1 (Hbase) server; list it '
                        'under servers, not thrift2_servers' % other.port)
            status, body = self.run_case(conf, sentence)
            # the Thrift1 server still serves Thrift1 clients
            self.assertEqual(status, 200, body)
            self.assertTrue(body.startswith('degraded: 1 of 2'), body)
            with open(os.path.join(self.dir, 'emu1.log')) as f:
                self.assertNotIn('past the end', f.read())
        finally:
            other.close()


class ProbeConnectFailureTest(unittest.TestCase):
    def test_refused_probes_count_as_connect_failures(self):
        d = tempfile.mkdtemp(prefix='hsp-ops-refused-')
        try:
            port, admin = opslib.free_port(), opslib.free_port()
            dead = opslib.free_port()
            p = opslib.Proxy(ARGS.proxy, d, opslib.proxy_conf(
                port, [dead], admin_port=admin), port, admin_port=admin)
            try:
                def failures():
                    m = p.metrics()
                    return m[('hsp_backend_connect_failures_total',
                              (('server', '127.0.0.1:%d' % dead),))]
                # no request is sent: only the probes connect
                opslib.wait_for(lambda: failures() >= 3, 10,
                                'probe connect failures counted')
                line = p.wait_log(r'backend 127.0.0.1:%d: down after' % dead)
                self.assertIn('probe: connect: Connection refused', line)
                self.assertIn('it gets no requests until it answers a probe',
                              line)
                self.assertNotIn('requests go elsewhere', line)
                self.assertIn('with 2 workers, 1 backend server, pool_size',
                              p.log_text())
            finally:
                self.assertEqual(p.stop(), 0)
        finally:
            if not os.environ.get('HSP_KEEP_LOGS'):
                shutil.rmtree(d, ignore_errors=True)


def main():
    global ARGS
    ap = argparse.ArgumentParser()
    ap.add_argument('--proxy', required=True)
    ap.add_argument('--emu', required=True)
    ap.add_argument('--pydir', required=True)
    ARGS, rest = ap.parse_known_args()
    hsptest.import_thrift(ARGS.pydir, opslib)
    unittest.main(argv=[sys.argv[0]] + rest, verbosity=2)


if __name__ == '__main__':
    main()
