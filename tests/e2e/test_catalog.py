"""The table catalog (issue 12, part 4): several proxies on one HBase agree
on every salted table's mapping, or the ones that disagree serve nothing
of that table.

On hbase-emu, with proxies started as an operator would (one config file
each, [catalog] state_dir in a temp dir):
  - the first proxy registers a new table's mapping in the catalog table
    (created by it); a second with the same mapping serves it; a third
    with another bucket count refuses every call on it with an IOError
    naming both mappings, writes nothing to it, says so on /healthz, and
    its --check-config fails with the two mappings;
  - a table that holds unsalted rows, configured plainly, is refused (its
    rows would vanish from every read); with a legacy_* rule it is served;
    rows already salted by the configured mapping (a proxy that served it
    before the catalog existed) are recognised and it is registered;
  - proxies started at once on a new table, with two mappings, leave
    exactly one entry; each proxy serves or refuses by that entry;
  - a proxy started while HBase is down serves the tables its state file
    verified, refuses the others, and serves them once HBase answers;
  - (issue 20) a table whose buckets share a region (a forward-looking
    table's existing regions: every salt sorts before the old keys) is
    served with one warning naming the HBase shell splits, on /metrics
    and /healthz, until it is split at the bucket points and reloaded;
    a section whose table does not exist (misspelt) is named, with the
    closest existing table, by --check-config and once in the log.

  /usr/bin/python3 tests/e2e/test_catalog.py --proxy BUILD/daemon/hbase-salt-proxy \\
      --emu BUILD/tests/emu/hbase-emu --pydir BUILD/thrift/py
"""

import argparse
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import unittest
import urllib.error
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, '..', 'lib'))
import hsptest  # noqa: E402
from hsptest import free_port, wait_for  # noqa: E402

ARGS = None
# --backend-kind real: the one hbase-mini every test shares (a cluster
# start costs half a minute), its tables dropped before each test
REAL = None
Hbase = T = TSocket = TTransport = TBinaryProtocol = None
THBaseService = T2 = None

CATALOG = 'hbase_salt_catalog'


def client(port):
    return hsptest.client(port, timeout=20.0)


def t2client(port):
    sock = TSocket.TSocket('127.0.0.1', port)
    sock.setTimeout(20000)
    trans = TTransport.TBufferedTransport(sock)
    c = THBaseService.Client(TBinaryProtocol.TBinaryProtocol(trans))
    trans.open()
    return c


def b(s):
    return s.encode() if isinstance(s, str) else s


def put(c, table, row, value=b'v'):
    c.mutateRow(b(table), row, [T.Mutation(column=b'd:q', value=value)], {})


def raw_rows(c, table):
    """Every stored row key of table, read straight from the emulator."""
    sid = c.scannerOpenWithScan(b(table), T.TScan(), {})
    out = []
    while True:
        rows = c.scannerGetList(sid, 100)
        if not rows:
            break
        out += [r.row for r in rows]
    c.scannerClose(sid)
    return out


def healthz(port):
    try:
        with urllib.request.urlopen('http://127.0.0.1:%d/healthz' % port,
                                    timeout=5) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


def metrics(port):
    with urllib.request.urlopen('http://127.0.0.1:%d/metrics' % port,
                                timeout=5) as r:
        return r.read().decode()


def shell_bytes(text):
    """The bytes of an HBase shell double-quoted string as the proxy
    writes them: \\xNN, letters and digits."""
    out = b''
    for hexa, char in re.findall(r'\\x([0-9A-F]{2})|([A-Za-z0-9])', text):
        out += bytes([int(hexa, 16)]) if hexa else char.encode()
    return out


class Emu(hsptest.Emu):
    def __init__(self, workdir, tables, port=None, thrift2=False):
        port = port or free_port()
        super().__init__(ARGS.emu, workdir,
                         [a for t in tables for a in ('--create-table',
                                                      t + ':d')],
                         name='emu-%d' % port, thrift2=thrift2, start=False)
        self.port = port
        self.start()

    def stop(self):
        self.close()


class RealEmu(object):
    """The emulator's part played by the shared real HBase: the tables made
    through createTable (family d), HBase down and back by stopping and
    starting its Thrift1 server on the same port (hbase-mini's stdin)."""

    shared = True
    down = False

    def __init__(self, tables, port=None):
        self.port, self.port2 = REAL.port, REAL.port2
        if port is not None:
            assert port == REAL.port, 'one real HBase: its own port only'
            self.start()
        c = client(self.port)
        have = set(c.getTableNames())
        for t in tables:
            if b(t) not in have:
                c.createTable(b(t), [T.ColumnDescriptor(name=b'd:')])
        c._trans.close()

    @staticmethod
    def start():
        if RealEmu.down:
            line = REAL.control('start 127.0.0.1:%d' % REAL.port)
            assert line.startswith('ok'), line
            RealEmu.down = False

    @staticmethod
    def stop():
        if not RealEmu.down:
            line = REAL.control('stop 127.0.0.1:%d' % REAL.port)
            assert line.startswith('ok'), line
            RealEmu.down = True

    @staticmethod
    def reset():
        """A fresh HBase for the next test, as a new emulator is: Thrift1
        up, no table (the catalog's too)."""
        RealEmu.start()
        c = client(REAL.port)
        for t in c.getTableNames():
            if c.isTableEnabled(t):
                c.disableTable(t)
            c.deleteTable(t)
        c._trans.close()


class Proxy(hsptest.Daemon):
    """One proxy with its own config file, log and state directory."""

    stop_timeout = 15

    def __init__(self, workdir, name, emu_port, tables, catalog=True,
                 state_dir=None, start=True, thrift2_port=None):
        self.name = name
        self.port = free_port()
        self.admin = free_port()
        self.state_dir = state_dir or os.path.join(workdir, 'state-' + name)
        self.conf = os.path.join(workdir, name + '.conf')
        with open(self.conf, 'w') as f:
            t2 = ''
            if thrift2_port is not None:
                # Thrift2 clients, and the servers their calls go to
                self.port2 = free_port()
                t2 = ('thrift2_servers = 127.0.0.1:%d\n[thrift2]\n'
                      'listen = 127.0.0.1:%d\n' % (thrift2_port, self.port2))
            f.write('[proxy]\nlisten = 127.0.0.1:%d\nworkers = 1\n'
                    '[admin]\nlisten = 127.0.0.1:%d\n'
                    '[catalog]\ntable = %s\nstate_dir = %s\n'
                    'recheck_ms = 200\n'
                    '[backend]\nservers = 127.0.0.1:%d\n'
                    'connect_timeout_ms = 300\npool_size = 2\n%s'
                    % (self.port, self.admin, CATALOG if catalog else '',
                       self.state_dir, emu_port, t2))
            for t, lines in tables.items():
                f.write('[table:%s]\n%s' % (t, lines))
        self.logpath = os.path.join(workdir, name + '.log')
        if start:
            self.start()

    def start(self):
        self.open_log(self.logpath, 'ab')
        self.spawn([ARGS.proxy, '-c', self.conf])

    def wait_listening(self):
        self.wait_ports([self.port], 20)

    def text(self):
        with open(self.logpath, errors='replace') as f:
            return f.read()

    def check_config(self):
        return subprocess.run([ARGS.proxy, '-c', self.conf, '--check-config'],
                              capture_output=True, text=True, timeout=30)

    def stop(self):
        if self.alive():
            super().stop()


class CatalogCase(unittest.TestCase):
    """Emulators and proxies started in a temp dir, stopped after."""

    def setUp(self):
        self.workdir = tempfile.mkdtemp(prefix='hsp-catalog-')
        self.procs = []
        if REAL is not None:
            RealEmu.reset()

    def tearDown(self):
        for p in self.procs:
            if not getattr(p, 'shared', False):
                p.stop()
        if os.environ.get('HSP_KEEP_LOGS'):
            print('logs kept in ' + self.workdir)
        else:
            shutil.rmtree(self.workdir, ignore_errors=True)

    def emu(self, tables, port=None, thrift2=False):
        if REAL is not None:
            return RealEmu(tables, port)
        e = Emu(self.workdir, tables, port, thrift2)
        self.procs.append(e)
        return e

    def proxy(self, name, emu_port, tables, **kw):
        p = Proxy(self.workdir, name, emu_port, tables, **kw)
        self.procs.append(p)
        if kw.get('start', True):
            p.wait_listening()
        return p


class CatalogTest(CatalogCase):
    def assertRefused(self, c, table, *texts):
        with self.assertRaises(T.IOError) as cm:
            put(c, table, b'row-x')
        msg = cm.exception.message
        msg = msg.decode() if isinstance(msg, bytes) else msg
        # only an operator clears a refusal: retrying is no use
        self.assertFalse(cm.exception.canRetry, msg)
        for t in texts:
            self.assertIn(t, msg)
        for call in (lambda: c.getRow(b(table), b'row-x', {}),
                     lambda: c.scannerOpenWithScan(b(table), T.TScan(), {}),
                     lambda: c.getRows(b(table), [b'a', b'b'], {})):
            with self.assertRaises(T.IOError):
                call()
        return msg

    def catalog_entries(self, direct, table):
        rows = direct.getRowWithColumns(b(CATALOG), b(table),
                                        [b'm:mapping'], {})
        return [r.columns[b'm:mapping'].value.decode() for r in rows]

    def test_three_proxies_one_disagrees(self):
        emu = self.emu(['t'])
        eight = {'t': 'buckets = 8\n'}
        p1 = self.proxy('p1', emu.port, eight)
        self.assertIn('registered table t', p1.text())
        p2 = self.proxy('p2', emu.port, eight)
        p3 = self.proxy('p3', emu.port, {'t': 'buckets = 4\n'})
        direct = client(emu.port)
        entries = self.catalog_entries(direct, 't')
        self.assertEqual(len(entries), 1)
        self.assertIn('buckets = 8', entries[0])

        c1, c2, c3 = client(p1.port), client(p2.port), client(p3.port)
        for i in range(20):
            put(c1 if i % 2 else c2, 't', b'k%02d' % i)
        self.assertEqual(len(c2.getRows(b't', [b'k%02d' % i for i in
                                               range(20)], {})), 20)
        before = sorted(raw_rows(direct, 't'))
        self.assertEqual(len(before), 20)

        msg = self.assertRefused(c3, 't', 'buckets = 8', 'buckets = 4',
                                 CATALOG)
        self.assertIn('t is not served', msg)
        self.assertEqual(sorted(raw_rows(direct, 't')), before,
                         'the refused proxy wrote to the table')
        # unsalted tables pass through the refusing proxy as before
        direct.createTable(b'plain', [T.ColumnDescriptor(name=b'd:')])
        put(c3, 'plain', b'r1')
        self.assertEqual(raw_rows(direct, 'plain'), [b'r1'])

        code, body = healthz(p3.admin)
        self.assertEqual(code, 503, body)
        self.assertIn('1 salted table not served', body)
        self.assertEqual(healthz(p1.admin)[0], 200)
        self.assertIn('not served', p3.text())

        r = p3.check_config()
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertIn('MISMATCH', r.stderr)
        self.assertIn('buckets = 4', r.stderr)
        r = p1.check_config()
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn('table t: equal to its entry', r.stdout)

    def test_existing_rows(self):
        emu = self.emu(['old', 'fwd', 'up'])
        direct = client(emu.port)
        for i in range(30):
            put(direct, 'old', b'user%03d' % i)
            put(direct, 'fwd', b'e#%d' % (1000 + i))
        p = self.proxy('plain', emu.port, {'old': 'buckets = 8\n'})
        c = client(p.port)
        msg = self.assertRefused(c, 'old', 'holds rows written without '
                                 'this salt', 'legacy_')
        self.assertEqual(len(raw_rows(direct, 'old')), 30)
        # forward-looking: the rows stay readable where they are
        rule = ('buckets = 8\nlegacy_component = after:#:last\n'
                'legacy_cutoff = 2000\n')
        f = self.proxy('fwd', emu.port, {'fwd': rule})
        cf = client(f.port)
        self.assertEqual(len(cf.getRow(b'fwd', b'e#1005', {})), 1)
        put(cf, 'fwd', b'e#2001')
        self.assertIn('registered table fwd', f.text())
        # rows salted by this very mapping before the catalog existed
        pre = self.proxy('precatalog', emu.port, {'up': 'buckets = 8\n'},
                         catalog=False)
        cp = client(pre.port)
        for i in range(40):
            put(cp, 'up', b'u%03d' % i)
        pre.stop()
        self.assertEqual(self.catalog_entries(direct, 'up'), [])
        post = self.proxy('postcatalog', emu.port, {'up': 'buckets = 8\n'})
        self.assertIn('salted by its configured mapping', post.text())
        self.assertEqual(len(client(post.port).getRows(
            b'up', [b'u%03d' % i for i in range(40)], {})), 40)

    def test_registration_race(self):
        emu = self.emu(['r0', 'r1', 'r2'])
        direct = client(emu.port)
        for rnd in range(3):
            table = 'r%d' % rnd
            ps = []
            for i in range(5):
                lines = 'buckets = %d\n' % (8 if i % 2 == 0 else 16)
                ps.append(self.proxy('race%d-%d' % (rnd, i), emu.port,
                                     {table: lines}, start=False))
            for p in ps:
                p.start()
            for p in ps:
                p.wait_listening()
            entries = self.catalog_entries(direct, table)
            self.assertEqual(len(entries), 1, entries)
            winner = 8 if 'buckets = 8\n' in entries[0] else 16
            registered = [p for p in ps if 'registered table %s' % table
                          in p.text()]
            self.assertEqual(len(registered), 1,
                             [p.name for p in registered])
            for i, p in enumerate(ps):
                mine = 8 if i % 2 == 0 else 16
                c = client(p.port)
                if mine == winner:
                    put(c, table, b'from-%d' % i)
                else:
                    self.assertRefused(c, table, 'buckets = %d' % winner,
                                       'buckets = %d' % mine)
            n_winners = len([i for i in range(5)
                             if (8 if i % 2 == 0 else 16) == winner])
            self.assertEqual(len(raw_rows(direct, table)), n_winners)
            for p in ps:
                p.stop()

    def test_thrift2_only_cluster(self):
        """No Thrift1 server answers (a cluster that runs only `hbase
        thrift2`): the catalog is kept through the Thrift2 servers."""
        emu = self.emu(['t'], thrift2=True)
        nothing = free_port()
        p1 = self.proxy('t2a', nothing, {'t': 'buckets = 8\n'},
                        thrift2_port=emu.port2)
        self.assertIn('registered table t', p1.text())
        p2 = self.proxy('t2b', nothing, {'t': 'buckets = 16\n'},
                        thrift2_port=emu.port2)
        self.assertIn('t is not served', p2.text())
        direct = client(emu.port)
        entries = self.catalog_entries(direct, 't')
        self.assertEqual(len(entries), 1)
        self.assertIn('buckets = 8', entries[0])
        put2 = T2.TPut(row=b'r1', columnValues=[T2.TColumnValue(
            family=b'd', qualifier=b'q', value=b'v')])
        t2client(p1.port2).put(b't', put2)
        with self.assertRaises(T2.TIOError) as cm:
            t2client(p2.port2).put(b't', put2)
        self.assertIn('buckets = 16', str(cm.exception.message))
        self.assertFalse(cm.exception.canRetry)
        self.assertEqual(len(raw_rows(direct, 't')), 1)
        # the entry gone (an operator's deleteall), the table's rows are
        # sampled through getScannerResults: salted by this mapping, so
        # it is registered again
        direct.deleteAllRow(CATALOG.encode(), b't', {})
        p3 = self.proxy('t2c', nothing, {'t': 'buckets = 8\n'},
                        thrift2_port=emu.port2)
        self.assertIn('salted by its configured mapping', p3.text())
        self.assertIn('registered table t', p3.text())

    def test_hbase_down_at_start(self):
        emu = self.emu(['t', 'u'])
        state = os.path.join(self.workdir, 'shared-state')
        tables = {'t': 'buckets = 8\n'}
        first = self.proxy('first', emu.port, tables, state_dir=state)
        put(client(first.port), 't', b'a')
        first.stop()
        self.assertTrue(os.path.exists(os.path.join(state, 'catalog.conf')))
        port = emu.port
        emu.stop()

        # t was verified here before: served from the state file; u was not
        both = {'t': 'buckets = 8\n', 'u': 'buckets = 8\n'}
        again = self.proxy('again', port, both, state_dir=state,
                           thrift2_port=free_port())
        wait_for(lambda: 'served by the mappings last verified'
                 in again.text(), 10, 'the state file fallback')
        body = healthz(again.admin)[1]
        self.assertIn('table u is not served yet', body)
        self.assertNotIn('table t is not', body)
        c = client(again.port)
        with self.assertRaises(T.IOError) as cm:
            put(c, 'u', b'x')
        self.assertIn('could not be checked', str(cm.exception.message))
        # it clears by itself once HBase answers: worth retrying
        self.assertTrue(cm.exception.canRetry)
        sys.path.insert(0, ARGS.pydir)
        from hbase2 import THBaseService, ttypes as T2
        sock = TSocket.TSocket('127.0.0.1', again.port2)
        sock.setTimeout(20000)
        trans = TTransport.TBufferedTransport(sock)
        c2 = THBaseService.Client(TBinaryProtocol.TBinaryProtocol(trans))
        trans.open()
        with self.assertRaises(T2.TIOError) as cm:
            c2.put(b'u', T2.TPut(row=b'x', columnValues=[T2.TColumnValue(
                family=b'd', qualifier=b'q', value=b'v')]))
        self.assertIn('could not be checked', str(cm.exception.message))
        self.assertTrue(cm.exception.canRetry)
        trans.close()
        with self.assertRaises(T.IOError) as cm:
            put(c, 't', b'x')
        # t is served: the call fails only because HBase is down
        self.assertNotIn('not served', str(cm.exception.message))

        # HBase back on the same address: checked again, both served
        self.emu(['t', 'u'], port=port)
        wait_for(lambda: 'HBase answers again' in again.text(), 15,
                 'the catalog recheck')
        wait_for(lambda: healthz(again.admin)[0] == 200, 15,
                 'the backend UP again')
        c = client(again.port)

        def works(table, row):
            # a pool connection refused while HBase was down waits out
            # its retry delay: the first calls may still fail on that
            try:
                put(c, table, row)
                return True
            except T.IOError as e:
                self.assertNotIn('not served', str(e.message))
                return False
        wait_for(lambda: works('u', b'y'), 15, 'a put to u')
        wait_for(lambda: works('t', b'z'), 15, 'a put to t')


class TableCheckTest(CatalogCase):
    """Issue 20: what HBase says of a salted table that is worth a warning
    while the table is served all the same."""

    SHARED = 'salt buckets share one region'

    def split(self, emu, table, points):
        """The shell's `split` at each point, as the emulator can: the
        table made again with those regions and every stored row put
        back where it was (no Thrift call splits a region)."""
        direct = client(emu.port)
        sid = direct.scannerOpenWithScan(b(table), T.TScan(), {})
        rows = []
        while True:
            got = direct.scannerGetList(sid, 100)
            if not got:
                break
            rows += got
        direct.scannerClose(sid)
        direct.disableTable(b(table))
        direct.deleteTable(b(table))
        c2 = t2client(emu.port2)
        c2.createTable(T2.TTableDescriptor(
            tableName=T2.TTableName(qualifier=b(table)),
            columns=[T2.TColumnFamilyDescriptor(name=b'd')]), points)
        direct.mutateRows(b(table), [T.BatchMutation(row=r.row, mutations=[
            T.Mutation(column=col, value=cell.value)
            for col, cell in r.columns.items()]) for r in rows], {})
        return len(rows)

    def regions_of_salted_rows(self, direct, table):
        """Which region (by start key) holds each row written salted by a
        16-bucket byte salt (first byte below 16)."""
        starts = sorted(r.startKey for r in direct.getTableRegions(b(table)))
        out = {}
        for key in raw_rows(direct, table):
            if key[0] < 16:
                region = max(s for s in starts if s <= key)
                out[region] = out.get(region, 0) + 1
        return out

    def test_forward_looking_table_not_split(self):
        emu = self.emu(['events'], thrift2=True)
        direct = client(emu.port)
        for i in range(50):
            put(direct, 'events', b'user%02d#1700000000' % i)
        rule = ('buckets = 16\nlegacy_component = after:#:last\n'
                'legacy_cutoff = 1710000000\n')
        p = self.proxy('fwd', emu.port, {'events': rule})
        # served, with one warning naming the splits that fix it
        lines = [ln for ln in p.text().splitlines() if self.SHARED in ln]
        self.assertEqual(len(lines), 1, p.text())
        # after the log's UTC timestamp (no journal here)
        self.assertRegex(lines[0], r'^\S+Z warning: table events: 16 of '
                                   r'its 16 salt buckets', lines[0])
        cmds = re.findall(r"split 'events', \"([^\"]*)\"", lines[0])
        points = [shell_bytes(x) for x in cmds]
        self.assertEqual(points, [bytes([i]) for i in range(1, 16)],
                         lines[0])
        self.assertIn('--split-keys events', lines[0])
        c = client(p.port)
        for i in range(200):
            put(c, 'events', b'user%03d#1720000000' % i)
        self.assertEqual(list(self.regions_of_salted_rows(direct, 'events')
                              .values()), [200])
        m = metrics(p.admin)
        self.assertIn('hsp_table_region_buckets_max{table="events"} 16\n', m)
        self.assertIn('hsp_table_fullest_region_bucket_ratio{table="events"}'
                      ' 1\n', m)
        code, body = healthz(p.admin)
        self.assertEqual(code, 200, body)
        self.assertIn('table events: 16 of its 16 ' + self.SHARED, body)
        r = p.check_config()
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn('warning: %s: table events: 16 of its 16 %s'
                      % (p.conf, self.SHARED), r.stderr)

        # split as the warning says, reload: the warning clears
        self.assertEqual(self.split(emu, 'events', points), 250)
        p.proc.send_signal(signal.SIGHUP)
        wait_for(lambda: 'applied configuration generation 2' in p.text(),
                 15, 'the reload')
        self.assertEqual(p.text().count(self.SHARED), 1, p.text())
        m = metrics(p.admin)
        self.assertIn('hsp_table_region_buckets_max{table="events"} 1\n', m)
        self.assertIn('hsp_table_fullest_region_bucket_ratio{table="events"}'
                      ' 0.0625\n', m)
        code, body = healthz(p.admin)
        self.assertEqual(code, 200, body)
        self.assertNotIn(self.SHARED, body)
        spread = self.regions_of_salted_rows(direct, 'events')
        self.assertEqual(len(spread), 16, spread)
        self.assertEqual(sum(spread.values()), 200)
        # the legacy rows are where they were, read through the rule
        self.assertEqual(len(c.getRow(b'events', b'user07#1700000000', {})),
                         1)
        r = p.check_config()
        self.assertNotIn(self.SHARED, r.stderr)

    def test_thrift2_only_cluster_regions(self):
        """The regions come from getAllRegionLocations when only Thrift2
        servers answer."""
        emu = self.emu(['t'], thrift2=True)
        p = self.proxy('t2', free_port(), {'t': 'buckets = 8\n'},
                       thrift2_port=emu.port2)
        self.assertEqual(p.text().count('table t: 8 of its 8 ' +
                                        self.SHARED), 1, p.text())
        self.assertIn('hsp_table_region_buckets_max{table="t"} 8\n',
                      metrics(p.admin))

    def test_misspelt_table(self):
        emu = self.emu(['events', 'users'])
        p = self.proxy('typo', emu.port, {'evnets': 'buckets = 8\n',
                                          'events_v2': 'buckets = 8\n'},
                       start=False)
        said = 'table evnets does not exist in HBase; did you mean events?'
        r = p.check_config()
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn('warning: %s: %s' % (p.conf, said), r.stderr)
        # a new table about to be created (a cut-over's) is no misspelling
        self.assertIn('warning: %s: table events_v2 does not exist in HBase '
                      '(it is served' % p.conf, r.stderr)
        self.assertIn(p.conf + ': ok', r.stdout)
        p.start()
        p.wait_listening()
        self.assertEqual(p.text().count(said), 1, p.text())
        # a warning only: the table is served once created
        direct = client(emu.port)
        direct.createTable(b'evnets', [T.ColumnDescriptor(name=b'd:')])
        c = client(p.port)
        put(c, 'evnets', b'r1')
        self.assertEqual(len(c.getRow(b'evnets', b'r1', {})), 1)
        self.assertNotEqual(raw_rows(direct, 'evnets'), [b'r1'])


# what real HBase judges, within CI time on one shared cluster
REAL_TESTS = [
    'CatalogTest.test_three_proxies_one_disagrees',
    'CatalogTest.test_existing_rows',
    'CatalogTest.test_registration_race',
    'CatalogTest.test_thrift2_only_cluster',
    'CatalogTest.test_hbase_down_at_start',
    'TableCheckTest.test_forward_looking_table_not_split',
    'TableCheckTest.test_thrift2_only_cluster_regions',
    'TableCheckTest.test_misspelt_table',
]


def main():
    global ARGS
    ap = argparse.ArgumentParser()
    ap.add_argument('--proxy', required=True)
    ap.add_argument('--emu', required=True)
    ap.add_argument('--pydir', required=True)
    hsptest.add_backend_args(ap)
    ARGS, rest = ap.parse_known_args()
    hsptest.import_thrift(ARGS.pydir, globals())
    if ARGS.backend_kind != 'real':
        unittest.main(argv=[sys.argv[0]] + rest, verbosity=2)
    global REAL
    workdir = tempfile.mkdtemp(prefix='hsp-catalog-real-')
    REAL = hsptest.start_backend('real', workdir, thrift2=True)
    res = None
    try:
        suite = unittest.TestLoader().loadTestsFromNames(
            rest or REAL_TESTS, sys.modules[__name__])
        res = unittest.TextTestRunner(verbosity=2).run(suite)
    finally:
        REAL.close()
        if res and res.wasSuccessful() and not os.environ.get('HSP_KEEP_LOGS'):
            shutil.rmtree(workdir, ignore_errors=True)
        else:
            print('hbase-mini log in ' + REAL.log_path)
    sys.exit(0 if res.wasSuccessful() else 1)


if __name__ == '__main__':
    main()
