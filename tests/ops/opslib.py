"""opslib: what the operations tests share: hbase-emu and the proxy as
processes, Thrift clients, the admin endpoint, Prometheus text parsing.
Run with Debian's /usr/bin/python3 (python3-thrift)."""

import os
import shutil
import re
import signal
import sys
import time
import urllib.error
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                '..', 'lib'))
import hsptest  # noqa: E402
# ports, waiting and clients: the one definition every test shares
from hsptest import (can_connect, client, free_port, get,  # noqa: E402,F401
                     listening, put, wait_for)

Hbase = T = None


def readme_quote(start):
    """The `...` span of conf/README.md (the operators' guide) that starts
    with start, its line breaks and indentation folded to single spaces,
    as a reader sees it."""
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..',
                        '..', 'conf', 'README.md')
    with open(path) as f:
        text = re.sub(r'\s*\n\s*', ' ', f.read())
    m = re.search('`(' + re.escape(start) + '[^`]*)`', text)
    assert m, 'conf/README.md quotes no message starting with %r' % start
    return m.group(1)


class Emu(hsptest.Emu):
    """hbase-emu on an ephemeral port with the tables the tests use."""

    def __init__(self, binary, workdir, name='emu',
                 tables=('t:d', 'u:d', 'w:d', 'plain:d'), extra=()):
        super().__init__(binary, workdir,
                         [a for t in tables for a in ('--create-table', t)]
                         + list(extra), name=name)


def stop_all(proxy, emu, workdir):
    """tearDownClass: the proxy stops cleanly, the emulator goes, the
    work directory too unless HSP_KEEP_LOGS."""
    try:
        if proxy.alive():
            assert proxy.stop() == 0
    finally:
        emu.close()
    if not os.environ.get('HSP_KEEP_LOGS'):
        shutil.rmtree(workdir, ignore_errors=True)


def skewed_writes(port, table, seconds, seed=24, users=500, also=None):
    """The key visualizer's workload: writes to table for seconds, 30 %
    by a celebrity (rows celeb#TS), the rest by users drawn uniformly
    (userNNNN#TS), timestamps only growing; also(client, rnd), if given,
    after every 50.  Returns (writes, the celebrity's writes)."""
    import random
    rnd = random.Random(seed)
    c = client(port)
    ts, writes, celeb = 10 ** 12, 0, 0
    end = time.time() + seconds
    while time.time() < end:
        for _ in range(50):
            ts += 1
            if rnd.random() < 0.3:
                row = b'celeb#%d' % ts
                celeb += 1
            else:
                row = b'user%04d#%d' % (rnd.randrange(users), ts)
            put(c, table, row, b'v')
            writes += 1
        if also is not None:
            also(c, rnd)
    c._trans.close()
    return writes, celeb


def proxy_conf(port, servers, admin_port=None, tables=None, extra_proxy='',
               extra_backend=''):
    """A config file's text.  tables: {name: 'key = value\\n...'}."""
    if tables is None:
        tables = {'t': 'buckets = 8\nsalt_format = hex\n'
                       'salt_separator = -\n'}
    text = ('[proxy]\nlisten = 127.0.0.1:%d\nworkers = 2\n%s'
            '[backend]\nservers = %s\nconnect_timeout_ms = 500\n'
            'request_timeout_ms = 3000\npool_size = 2\n%s'
            % (port, extra_proxy,
               ', '.join('127.0.0.1:%d' % s for s in servers), extra_backend))
    if admin_port is not None:
        text += '[admin]\nlisten = 127.0.0.1:%d\n' % admin_port
    for name, body in tables.items():
        text += '[table:%s]\n%s' % (name, body)
    return text


class Proxy(hsptest.Proxy):
    """The daemon with a config file of its own; log in self.log_path."""

    stop_timeout = 15

    def __init__(self, binary, workdir, conf_text, port, admin_port=None,
                 env=None, wait=True, args=()):
        self.port = port
        self.admin_port = admin_port
        full_env = dict(os.environ)
        full_env.pop('NOTIFY_SOCKET', None)
        full_env.update(env or {})
        # a later --log-level in args wins; the admin endpoint binds after
        # the proxy's listeners
        super().__init__(binary, workdir, conf_text,
                         ([port] + ([admin_port] if admin_port else []))
                         if wait else None, name='proxy-%d' % port,
                         args=args, env=full_env, timeout=10)

    def write_conf(self, text):
        # rename: a reload never sees a half-written file
        tmp = self.conf + '.tmp'
        with open(tmp, 'w') as f:
            f.write(text)
        os.rename(tmp, self.conf)

    def wait_log(self, pattern, timeout=10, after=0):
        """Waits for a log line matching pattern past offset after."""
        rx = re.compile(pattern)

        def found():
            for line in self.log_text()[after:].splitlines():
                if rx.search(line):
                    return line
            return None
        return wait_for(found, timeout, 'log line /%s/ in %s'
                        % (pattern, self.log_path))

    def log_size(self):
        return len(self.log_text())

    def hup(self):
        self.proc.send_signal(signal.SIGHUP)

    # ---- admin endpoint

    def http(self, path):
        """(status, body text) of GET path on the admin endpoint."""
        url = 'http://127.0.0.1:%d%s' % (self.admin_port, path)
        try:
            with urllib.request.urlopen(url, timeout=10) as r:
                return r.status, r.read().decode()
        except urllib.error.HTTPError as e:
            return e.code, e.read().decode()

    def metrics(self):
        status, body = self.http('/metrics')
        assert status == 200, (status, body)
        return parse_metrics(body)

    def generation(self):
        return int(self.metrics()[('hsp_config_generation', ())])

    def wait_generation(self, gen, timeout=10):
        wait_for(lambda: self.generation() == gen, timeout,
                 'configuration generation %d' % gen)


_LINE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})? (\S+)$')
_LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')


def parse_metrics(text):
    """{(name, ((label, value), ...)): float}; checks the format strictly
    enough that a malformed line fails the test."""
    out = {}
    typed = set()
    for line in text.splitlines():
        if line.startswith('# TYPE '):
            typed.add(line.split()[2])
            continue
        if line.startswith('#') or not line:
            continue
        m = _LINE.match(line)
        assert m, 'not a Prometheus sample line: %r' % line
        name, labels, value = m.group(1), m.group(3) or '', m.group(4)
        base = re.sub(r'_(bucket|sum|count)$', '', name)
        assert name in typed or base in typed, 'sample without TYPE: ' + line
        key = (name, tuple(sorted(_LABEL.findall(labels))))
        assert key not in out, 'duplicate series: ' + line
        out[key] = float(value)
    return out


def series(metrics, name, **labels):
    """Every sample of name whose labels include labels: {labels: v}."""
    want = set(labels.items())
    return {k[1]: v for k, v in metrics.items()
            if k[0] == name and want <= set(k[1])}


def physical_rows(port, table):
    """Every row key of table as stored, straight from a backend."""
    c = client(port)
    try:
        sid = c.scannerOpenWithScan(table, T.TScan(caching=1000), {})
        rows = []
        while True:
            batch = c.scannerGetList(sid, 1000)
            if not batch:
                break
            rows += [r.row for r in batch]
        c.scannerClose(sid)
        return rows
    finally:
        c._trans.close()


def run_tests():
    """Parses --proxy, --emu, --pydir, loads Thrift, runs the caller's
    unittest cases with the other arguments; returns the parsed ones."""
    import argparse
    import unittest
    ap = argparse.ArgumentParser()
    ap.add_argument('--proxy', required=True)
    ap.add_argument('--emu', required=True)
    ap.add_argument('--pydir', required=True)
    args, rest = ap.parse_known_args()
    hsptest.import_thrift(args.pydir, sys.modules[__name__])
    main = sys.modules['__main__']
    main.ARGS = args
    unittest.main(module=main, argv=[sys.argv[0]] + rest, verbosity=2)
