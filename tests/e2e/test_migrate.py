"""hbase-salt-migrate against hbase-emu (4 regions a table), read back
through hbase-salt-proxy with the destination's mapping: copies keep every
cell and timestamp (newest versions, or all with --all-versions), 0x00 and
0xFF keys, empty values; a run killed between two acknowledged writes
resumes from its checkpoint with nothing lost and nothing doubled; --verify
finds a row changed behind its back; --dry-run writes nothing; --shard 1/2
and 2/2 together copy every row once; --units - reads units on stdin and
answers one line per unit; a copy and a verify over a compact, framed
backend as [backend] says (CompactFramedTest).

  /usr/bin/python3 tests/e2e/test_migrate.py --migrate BUILD/daemon/migrate/hbase-salt-migrate \\
      --proxy BUILD/daemon/hbase-salt-proxy --emu BUILD/tests/emu/hbase-emu \\
      --pydir BUILD/thrift/py [unittest args]
"""

import argparse
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                '..', 'lib'))
import faultlib  # noqa: E402
import hsptest  # noqa: E402
from hsptest import can_connect, free_port, wait_for  # noqa: E402

ARGS = None
Hbase = T = None

# destination mappings: the proxy salts these, the source 'src' is plain
TABLES = {
    'dst': 'buckets = 8\nsalt_format = hex\nsalt_separator = -\n',
    'dst_b': 'buckets = 4\n',
    'dst_d': 'buckets = 3\nsalt_format = decimal\n',
    # another tool's salt (conf/README.md, "Adopting tables salted by other tools")
    'phx': 'buckets = 4\nsalt_mapping = phoenix\n',
    'bts': 'buckets = 4\nsalt_mapping = bigtable-sample\n',
    # forward-looking: keys below 0x80 stay unsalted, where the salted
    # ones ('0-'..'3-') lie too
    'fwd': 'buckets = 4\nsalt_format = hex\nsalt_separator = -\n'
           'legacy_range_stop = \\x80\n',
    # registered in the table catalog by the proxy at its start
    'cat16': 'buckets = 16\n',
}
CATALOG = 'hbase_salt_catalog'
PLAIN = ['src', 'plain', 'src_small', 'text']
FAMILIES = 'd,e'
ROWS = 240
# --backend-kind real: each table made through Thrift2 createTable with
# split keys, 4 regions as the emulator's --regions 4 gives: the plain
# ones at quarter bytes, the salted ones at their bucket points
REAL_SPLITS = {
    'dst': [b'2-', b'4-', b'6-'],
    'dst_b': [b'\x01', b'\x02', b'\x03'],
    'dst_d': [b'1', b'2'],
    'phx': [b'\x01', b'\x02', b'\x03'],
    'cat16': [b'\x04', b'\x08', b'\x0c'],
}
PLAIN_SPLITS = [b'\x40', b'\x80', b'\xc0']
# what real HBase judges, within CI time: copies of every version across
# regions, verify, the catalog, a kill and resume
REAL_TESTS = [
    'MigrateTest.test_copy_newest_then_verify',
    'MigrateTest.test_all_versions_exact',
    'MigrateTest.test_verify_catches_changes',
    'MigrateTest.test_kill_and_resume',
    'MigrateTest.test_catalog_registers_the_destination',
]


class Procs(object):
    """hbase-emu with every table (4 regions each), the proxy salting the
    TABLES, and a config file hbase-salt-migrate reads too."""

    def __init__(self, workdir, compact_framed=False):
        self.workdir = workdir
        if ARGS.backend_kind == 'real':
            self.emu = hsptest.start_backend('real', workdir, thrift2=True)
            try:
                for name in PLAIN + sorted(TABLES):
                    self.create_real(name)
                self.start_proxy(compact_framed)
            except Exception:
                self.emu.close()
                raise
            return
        extra = ['--regions', '4']
        if compact_framed:
            extra += ['--compact', '--framed']
        for name in PLAIN + sorted(TABLES):
            extra += ['--create-table', name + ':' + FAMILIES]
        self.emu = faultlib.Emu(ARGS.emu, workdir, extra=extra)
        self.emu.start()
        self.start_proxy(compact_framed)

    def create_real(self, name):
        """name made (again: an empty table, as a truncate) on real HBase,
        in 4 regions, every family keeping 3 versions."""
        th = hsptest.Thrift(ARGS.pydir)
        T2 = th.T2
        c = th.client2(self.emu.port2, timeout=120.0)
        try:
            tn = T2.TTableName(qualifier=name.encode())
            if c.tableExists(tn):
                c.disableTable(tn)
                c.deleteTable(tn)
            c.createTable(T2.TTableDescriptor(tableName=tn, columns=[
                T2.TColumnFamilyDescriptor(name=f.encode(), maxVersions=3)
                for f in FAMILIES.split(',')]),
                REAL_SPLITS.get(name, PLAIN_SPLITS))
        finally:
            c.transport.close()

    def start_proxy(self, compact_framed):
        workdir = self.workdir
        self.port = free_port()
        self.conf = os.path.join(workdir, 'proxy.conf')
        with open(self.conf, 'w') as f:
            f.write('[proxy]\nlisten = 127.0.0.1:%d\nworkers = 2\n'
                    '[backend]\nservers = 127.0.0.1:%d\npool_size = 8\n'
                    'request_timeout_ms = 20000\n%s'
                    % (self.port, self.emu.port,
                       'protocol = compact\ntransport = framed\n'
                       if compact_framed else ''))
            for name, lines in sorted(TABLES.items()):
                f.write('[table:%s]\n%s' % (name, lines))
        self.proxy_log = open(os.path.join(workdir, 'proxy.log'), 'wb')
        self.proxy = subprocess.Popen([ARGS.proxy, '-c', self.conf],
                                      stdout=self.proxy_log,
                                      stderr=subprocess.STDOUT)
        wait_for(lambda: can_connect(self.port) or
                 self.proxy.poll() is not None, 10, 'proxy listening')
        assert self.proxy.poll() is None, 'proxy exited at start'

    def close(self):
        if self.proxy.poll() is None:
            self.proxy.send_signal(signal.SIGTERM)
            try:
                self.proxy.wait(10)
            except subprocess.TimeoutExpired:
                self.proxy.kill()
                self.proxy.wait()
        self.proxy_log.close()
        self.emu.close()


def client(port, compact_framed=False):
    if compact_framed:
        return hsptest.client(port, 'compact', 'framed', timeout=30.0)
    return hsptest.client(port, timeout=30.0)


def put(c, table, row, col, value, ts):
    c.mutateRowTs(table.encode(), row, [T.Mutation(column=col, value=value)],
                  ts, {})


def fill(c, table, seed=7, rows=ROWS):
    """Rows with 0x00/0xFF keys, empty values, many timestamps, up to three
    versions of a cell (the families keep 3); returns the keys."""
    rng = random.Random(seed)
    keys = [b'\x00', b'\x00\x00', b'\xff', b'\xff\xff\x00', b'\x00\xffmid',
            b'a\x00b']
    while len(keys) < rows:
        k = bytes(rng.randrange(256) for _ in range(rng.randrange(1, 9)))
        if k not in keys:
            keys.append(k)
    for i, k in enumerate(keys):
        put(c, table, k, b'd:a', b'' if i % 5 == 0 else b'v%d' % i,
            1000 + i)
        for v in range(1 + i % 3):  # 1, 2 or 3 versions
            put(c, table, k, b'd:b', b'ver%d\x00\xff' % v,
                2000 + 10 * i + v)
        if i % 4 == 0:
            put(c, table, k, b'e:' + bytes([i % 256]), b'', 7)
    return keys


def scan_rows(c, table):
    sid = c.scannerOpenWithScan(table.encode(), T.TScan(sortColumns=True), {})
    rows = []
    while True:
        batch = c.scannerGetList(sid, 500)
        if not batch:
            break
        rows += batch
    c.scannerClose(sid)
    return rows


def model(c, table, versions):
    """{row: {column: [(ts, value), ...newest first]}}: every version, or
    with versions=False the newest only."""
    out = {}
    for r in scan_rows(c, table):
        cols = {}
        for col in r.sortedColumns:
            if versions:
                cells = c.getVer(table.encode(), r.row, col.columnName,
                                 100, {})
                cols[col.columnName] = [(x.timestamp, x.value)
                                        for x in cells]
            else:
                cols[col.columnName] = [(col.cell.timestamp,
                                         col.cell.value)]
        out[r.row] = cols
    return out


def cell_count(m):
    return sum(len(v) for cols in m.values() for v in cols.values())


class MigrateTest(unittest.TestCase):
    COMPACT_FRAMED = False

    @classmethod
    def setUpClass(cls):
        cls.workdir = tempfile.mkdtemp(prefix='hsp-migrate-')
        cls.procs = Procs(cls.workdir, cls.COMPACT_FRAMED)
        cls.emu = client(cls.procs.emu.port, cls.COMPACT_FRAMED)
        cls.proxy = client(cls.procs.port)
        cls.keys = fill(cls.emu, 'src')
        cls.src_all = model(cls.emu, 'src', True)
        cls.src_new = model(cls.emu, 'src', False)
        assert len(cls.src_all) == ROWS

    @classmethod
    def tearDownClass(cls):
        cls.emu._trans.close()
        cls.proxy._trans.close()
        cls.procs.close()
        shutil.rmtree(cls.workdir, ignore_errors=True)

    def setUp(self):
        # every test starts from empty destinations
        if ARGS.backend_kind == 'real':
            # a deleteAllRow's tombstone hides the cells written later at
            # older timestamps until a major compaction has run, which
            # HBase's majorCompact only asks for: the tables written to
            # are made again instead
            for name in sorted(TABLES) + ['plain', 'src_small', 'text']:
                if scan_rows(self.emu, name):
                    self.procs.create_real(name)
            return
        for name in sorted(TABLES) + ['plain']:
            for r in scan_rows(self.emu, name):
                self.emu.deleteAllRow(name.encode(), r.row, {})
            self.emu.majorCompact(name.encode())

    def migrate(self, *args, env=None, stdin=None, expect=0, conf=None):
        e = dict(os.environ)
        e.update(env or {})
        p = subprocess.run([ARGS.migrate, '-c', conf or self.procs.conf] +
                           list(args), env=e, input=stdin,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           timeout=120)
        # CI runs the tool under ASan/UBSan: a report fails the test
        for what in (b'runtime error:', b'Sanitizer'):
            self.assertNotIn(what, p.stderr, p.stderr.decode())
        if expect is not None:
            self.assertEqual(p.returncode, expect,
                             'exit %d\nstdout:\n%s\nstderr:\n%s'
                             % (p.returncode, p.stdout.decode(),
                                p.stderr.decode()))
        return p

    def through_proxy(self, table, versions):
        return model(self.proxy, table, versions)

    # ---- copies ----------------------------------------------------------

    def test_copy_newest_then_verify(self):
        p = self.migrate('--from-table', 'src', '--to-table', 'dst',
                         '--batch-rows', '17', '--parallel', '3')
        err = p.stderr.decode()
        self.assertIn('only the NEWEST version of each cell is copied', err)
        self.assertIn('deletes are not copied', err)
        got = self.through_proxy('dst', True)
        self.assertEqual(got, self.src_new)
        # stored salted: no logical key at the start of a physical one
        phys = [r.row for r in scan_rows(self.emu, 'dst')]
        self.assertEqual(len(phys), ROWS)
        self.assertTrue(all(re.match(rb'^[0-7]-', k) for k in phys))
        v = self.migrate('--from-table', 'src', '--to-table', 'dst',
                         '--verify')
        self.assertIn('no differences', v.stderr.decode())
        # every logical row counted once, and per side
        self.assertIn('compared %d rows (%d in source, %d in destination)'
                      % (ROWS, ROWS, ROWS), v.stderr.decode())
        # without --all-versions the older versions are missing: a verify
        # of every version says so
        v = self.migrate('--from-table', 'src', '--to-table', 'dst',
                         '--verify', '--all-versions', expect=1)
        self.assertIn('in source only', v.stdout.decode())

    def test_all_versions_exact(self):
        p = self.migrate('--from-table', 'src', '--to-table', 'dst_b',
                         '--all-versions', '--batch-rows', '50')
        self.assertIn('every version of every cell is copied',
                      p.stderr.decode())
        got = self.through_proxy('dst_b', True)
        self.assertEqual(got, self.src_all)
        self.assertGreater(cell_count(got), cell_count(self.src_new))
        self.migrate('--from-table', 'src', '--to-table', 'dst_b',
                     '--verify', '--all-versions')

    def test_salted_to_salted_and_back_to_plain(self):
        # a bucket-count change is a copy into a new table
        self.migrate('--from-table', 'src', '--to-table', 'dst',
                     '--all-versions')
        self.migrate('--from-table', 'dst', '--to-table', 'dst_d',
                     '--all-versions')
        self.assertEqual(self.through_proxy('dst_d', True), self.src_all)
        self.migrate('--from-table', 'dst_d', '--to-table', 'plain',
                     '--all-versions')
        self.assertEqual(model(self.emu, 'plain', True), self.src_all)
        self.migrate('--from-table', 'dst', '--to-table', 'dst_d',
                     '--verify', '--all-versions')

    def test_adopted_mappings(self):
        # into a Phoenix-salted table and from it into ours: the adopted
        # mapping is just another section
        self.migrate('--from-table', 'src', '--to-table', 'phx',
                     '--all-versions')
        self.assertEqual(self.through_proxy('phx', True), self.src_all)
        phys = [r.row for r in scan_rows(self.emu, 'phx')]
        self.assertTrue(all(k[0] < 4 for k in phys))
        self.migrate('--from-table', 'phx', '--to-table', 'dst',
                     '--all-versions')
        self.assertEqual(self.through_proxy('dst', True), self.src_all)
        self.migrate('--from-table', 'phx', '--to-table', 'dst',
                     '--all-versions', '--verify')
        # the Bigtable sample's keys are UTF-8 strings: a 0xFF key has no
        # place there, and the copy says which row
        p = self.migrate('--from-table', 'src', '--to-table', 'bts',
                         expect=2)
        self.assertIn('takes only UTF-8 keys', p.stderr.decode())

    def test_salted_source_with_a_stray_row_fails_loudly(self):
        self.migrate('--from-table', 'src', '--to-table', 'dst')
        # written around the proxy: no salt of dst's mapping
        put(self.emu, 'dst', b'zz-stray', b'd:a', b'x', 5)
        p = self.migrate('--from-table', 'dst', '--to-table', 'dst_b',
                         expect=2)
        self.assertIn("row 'zz-stray' carries no salt", p.stderr.decode())
        # a verify reports it as a difference, and every other row matches
        p = self.migrate('--from-table', 'src', '--to-table', 'dst',
                         '--verify', expect=1)
        self.assertIn("differ: destination table: row 'zz-stray' carries "
                      "no salt", p.stdout.decode())
        self.assertIn('1 difference(s)', p.stderr.decode())

    def test_forward_looking_table(self):
        """A table with a legacy rule, as destination and as source: legacy
        keys stay where they are, new ones are salted, the rows of both
        read back through the proxy; then the whole table moves into a
        plainly salted one (the cut-over of a forward-looking table)."""
        self.migrate('--from-table', 'src', '--to-table', 'fwd',
                     '--all-versions')
        self.assertEqual(self.through_proxy('fwd', True), self.src_all)
        phys = set(r.row for r in scan_rows(self.emu, 'fwd'))
        legacy = [k for k in self.keys if k < b'\x80']
        self.assertTrue(legacy)
        self.assertTrue(set(legacy) <= phys)
        self.assertEqual(len(phys), ROWS)
        for k in self.keys:
            if k >= b'\x80':
                self.assertNotIn(k, phys)
        self.migrate('--from-table', 'src', '--to-table', 'fwd',
                     '--verify', '--all-versions')
        # out of it: every row, legacy or salted, into the plain mapping
        self.migrate('--from-table', 'fwd', '--to-table', 'dst_d',
                     '--all-versions')
        self.assertEqual(self.through_proxy('dst_d', True), self.src_all)
        self.migrate('--from-table', 'fwd', '--to-table', 'dst_d',
                     '--verify', '--all-versions')
        # a row neither legacy by the rule nor salted by the mapping
        put(self.emu, 'fwd', b'\x90stray', b'd:a', b'x', 5)
        p = self.migrate('--from-table', 'fwd', '--to-table', 'dst_b',
                         expect=2)
        self.assertIn("is neither a legacy key of its table's rule nor "
                      "salted by its mapping", p.stderr.decode())

    # ---- the table catalog -----------------------------------------------

    def conf_with(self, name, replace=None, add=''):
        """The proxy's file with one [table:...] section replaced (None:
        removed) and text added: the file an operator got wrong."""
        with open(self.procs.conf) as f:
            text = f.read()
        if replace is not None:
            head = '[table:%s]\n' % replace
            start = text.index(head)
            end = text.find('[table:', start + len(head))
            text = text[:start] + text[end if end >= 0 else len(text):]
        path = os.path.join(self.workdir, name)
        with open(path, 'w') as f:
            f.write(text + add)
        return path

    def catalog_entry(self, table):
        rows = self.emu.getRow(CATALOG.encode(), table.encode(), {})
        return rows[0].columns[b'm:mapping'].value.decode() if rows else None

    def test_catalog_mismatch_refused_before_any_row(self):
        """The catalog holds cat16 with 16 buckets (the proxy registered
        it); a file saying 8 copies nothing and says what the proxy says."""
        self.assertIn('buckets = 16', self.catalog_entry('cat16'))
        conf8 = self.conf_with('cat8.conf', replace='cat16',
                               add='[table:cat16]\nbuckets = 8\n')
        for extra in ([], ['--dry-run'], ['--verify']):
            p = self.migrate('--from-table', 'src', '--to-table', 'cat16',
                             *extra, conf=conf8, expect=2)
            err = p.stderr.decode()
            # the proxy's own refusal, word for word
            self.assertIn('hbase-salt-proxy: table cat16 is not served: the '
                          'table catalog %s holds its mapping as {buckets = '
                          '16, ' % CATALOG, err)
            self.assertIn('this proxy is configured with {buckets = 8, ', err)
            self.assertIn('rows written under one are not found under the '
                          'other', err)
            self.assertIn('nothing read or written', err)
            self.assertNotIn('copied', err)
        self.assertEqual(scan_rows(self.emu, 'cat16'), [])
        # as a source too
        p = self.migrate('--from-table', 'cat16', '--to-table', 'plain',
                         conf=conf8, expect=2)
        self.assertIn('table cat16 is not served', p.stderr.decode())
        self.assertEqual(scan_rows(self.emu, 'plain'), [])
        # a file without the section would copy into it unsalted
        nosec = self.conf_with('nosec.conf', replace='cat16')
        p = self.migrate('--from-table', 'src', '--to-table', 'cat16',
                         conf=nosec, expect=2)
        self.assertIn('table cat16 has no [table:cat16] section',
                      p.stderr.decode())
        self.assertEqual(scan_rows(self.emu, 'cat16'), [])
        # the catalog is as it was
        self.assertIn('buckets = 16', self.catalog_entry('cat16'))

    def test_catalog_registers_the_destination(self):
        """A destination the catalog does not hold yet is registered by the
        tool, as a proxy's start would; a proxy with another mapping then
        refuses it, and so does the tool."""
        fresh = 'fresh%d' % random.randrange(1 << 30)
        self.emu.createTable(fresh.encode(),
                             [T.ColumnDescriptor(name=b'd:', maxVersions=3),
                              T.ColumnDescriptor(name=b'e:', maxVersions=3)])
        self.assertIsNone(self.catalog_entry(fresh))
        conf = self.conf_with('fresh8.conf',
                              add='[table:%s]\nbuckets = 8\n' % fresh)
        # a dry run and a verify write nothing, the catalog neither
        self.migrate('--from-table', 'src', '--to-table', fresh, '--dry-run',
                     conf=conf)
        self.assertIsNone(self.catalog_entry(fresh))
        p = self.migrate('--from-table', 'src', '--to-table', fresh,
                         conf=conf)
        self.assertIn('catalog: registered table %s in %s: buckets = 8, '
                      % (fresh, CATALOG), p.stderr.decode())
        self.assertIn('buckets = 8\n', self.catalog_entry(fresh))
        # who registered it, for the proxies' refusals
        self.assertIn(' by hbase-salt-migrate ', self.catalog_entry(fresh))
        # a proxy configured with 16 buckets serves nothing of it
        conf16 = self.conf_with('fresh16.conf',
                                add='[table:%s]\nbuckets = 16\n' % fresh)
        with open(conf16) as f:
            text = f.read()
        port = free_port()
        text = re.sub(r'listen = 127\.0\.0\.1:\d+',
                      'listen = 127.0.0.1:%d' % port, text)
        with open(conf16, 'w') as f:
            f.write(text)
        log = open(os.path.join(self.workdir, 'proxy16.log'), 'wb')
        proxy = subprocess.Popen([ARGS.proxy, '-c', conf16], stdout=log,
                                 stderr=subprocess.STDOUT)
        try:
            wait_for(lambda: can_connect(port) or proxy.poll() is not None,
                     10, 'proxy listening')
            c = client(port)
            with self.assertRaises(T.IOError) as cm:
                c.getRow(fresh.encode(), self.keys[1], {})
            msg = cm.exception.message
            msg = msg.decode() if isinstance(msg, bytes) else msg
            self.assertIn('table %s is not served' % fresh, msg)
            self.assertIn('by hbase-salt-migrate', msg)
            c._trans.close()
        finally:
            proxy.send_signal(signal.SIGTERM)
            proxy.wait(10)
            log.close()
        # and so does the tool with that file
        p = self.migrate('--from-table', 'src', '--to-table', fresh,
                         conf=conf16, expect=2)
        self.assertIn('holds its mapping as {buckets = 8, ',
                      p.stderr.decode())

    # ---- interruption ----------------------------------------------------

    def checkpoint_rows(self, path):
        with open(path) as f:
            text = f.read()
        return sum(int(x) for x in re.findall(r' rows=(\d+)', text)), text

    def test_kill_and_resume(self):
        ck = os.path.join(self.workdir, 'kill.ckpt')
        if os.path.exists(ck):
            os.unlink(ck)
        args = ['--from-table', 'src', '--to-table', 'dst', '--all-versions',
                '--batch-rows', '10', '--parallel', '2', '--checkpoint', ck]
        # SIGKILL after 77 acknowledged mutateRowsTs calls: mid-batch,
        # since every batch has many timestamps
        p = self.migrate(*args, env={'HSM_TEST_KILL_AFTER_WRITES': '77'},
                         expect=None)
        self.assertEqual(p.returncode, -signal.SIGKILL, p.stderr.decode())
        done_rows, text = self.checkpoint_rows(ck)
        self.assertIn('after=', text)
        self.assertGreater(done_rows, 0)
        self.assertLess(done_rows, ROWS)
        partial = self.through_proxy('dst', True)
        self.assertLess(len(partial), ROWS)
        # the kill came after a write was acknowledged and before its
        # batch reached the checkpoint: rows past the resume point are in
        # the destination, and the resume writes them again (the same
        # cells at the same timestamps, which HBase keeps once)
        self.assertGreater(len(partial), done_rows)

        p = self.migrate(*args)
        err = p.stderr.decode()
        self.assertIn('resuming from', err)
        # exactly the rows the checkpoint did not have are read and written
        m = re.search(r'this run (\d+) rows', err)
        self.assertEqual(int(m.group(1)), ROWS - done_rows, err)
        total, text = self.checkpoint_rows(ck)
        self.assertEqual(total, ROWS)
        self.assertNotIn('after=', text)
        got = self.through_proxy('dst', True)
        # nothing lost, nothing doubled: the same versions, timestamps
        # and counts as the source
        self.assertEqual(got, self.src_all)
        self.assertEqual(cell_count(got), cell_count(self.src_all))
        # a third run has nothing to do
        p = self.migrate(*args)
        self.assertIn('this run 0 rows', p.stderr.decode())

    def test_resumed_progress_counts_every_run(self):
        """A resumed run's progress lines count the rows of the runs before
        it, as its units and its percent do: it said 'rows 1000 of ~3701,
        100%' (this run's rows, every run's estimate) and ended on this
        run's rows only (issue 20's walk through the README)."""
        ck = os.path.join(self.workdir, 'progress.ckpt')
        if os.path.exists(ck):
            os.unlink(ck)
        args = ['--from-table', 'src', '--to-table', 'dst_b',
                '--batch-rows', '10', '--parallel', '2', '--checkpoint', ck]
        p = self.migrate(*args, env={'HSM_TEST_KILL_AFTER_WRITES': '77'},
                         expect=None)
        self.assertEqual(p.returncode, -signal.SIGKILL, p.stderr.decode())
        before, _ = self.checkpoint_rows(ck)
        self.assertGreater(before, 0)
        self.assertLess(before, ROWS)
        p = self.migrate(*args, '--max-rows-per-second', '400',
                         '--progress-interval', '0.05')
        err = p.stderr.decode()
        lines = [x for x in err.split('\n') if x.startswith('copy: units ')]
        self.assertGreater(len(lines), 2, err)
        for line in lines:
            m = re.search(r'rows (\d+)(?: of ~(\d+))?, .* (\d+)%', line)
            self.assertTrue(m, line)
            rows, pct = int(m.group(1)), int(m.group(3))
            self.assertGreaterEqual(rows, before, line)
            # the percent is of the same rows the line shows
            if m.group(2):
                self.assertLess(abs(pct - 100.0 * rows / int(m.group(2))),
                                2, line)
        self.assertIn('units 4/4, rows %d, ' % ROWS, lines[-1])
        self.assertIn('this run %d rows' % (ROWS - before), err)

    def test_sigterm_stops_at_a_batch_and_resumes(self):
        ck = os.path.join(self.workdir, 'term.ckpt')
        if os.path.exists(ck):
            os.unlink(ck)
        args = [ARGS.migrate, '-c', self.procs.conf, '--from-table', 'src',
                '--to-table', 'dst_b', '--batch-rows', '5',
                '--max-rows-per-second', '100', '--checkpoint', ck]
        def written():
            try:
                with open(ck) as f:
                    return 'after=' in f.read()
            except OSError:
                return False
        # SIGTERM, then SIGINT on the resumed run: each says it was
        # interrupted, no unit failed, and a run resumes
        for sig in (signal.SIGTERM, signal.SIGINT):
            proc = subprocess.Popen(args, stdout=subprocess.PIPE,
                                    stderr=subprocess.PIPE)
            before, _ = self.checkpoint_rows(ck) if written() else (0, '')
            wait_for(lambda: written() and
                     self.checkpoint_rows(ck)[0] > before, 20,
                     'a batch written')
            proc.send_signal(sig)
            out, err = proc.communicate(timeout=30)
            err = err.decode()
            self.assertEqual(proc.returncode, 2, err)
            self.assertRegex(err, r'units ok \d+, failed 0, interrupted '
                             r'[1-9]')
            self.assertIn('interrupted (SIGINT or SIGTERM)', err)
            self.assertNotIn('failed 1', err)
            self.assertIn('run the same command again to resume', err)
        self.migrate(*args[3:])
        self.assertEqual(self.through_proxy('dst_b', True), self.src_new)

    # ---- verify ----------------------------------------------------------

    def test_verify_catches_changes(self):
        put(self.emu, 'src_small', b'r1', b'd:a', b'one', 10)
        put(self.emu, 'src_small', b'r2', b'd:a', b'two', 10)
        put(self.emu, 'src_small', b'r3', b'd:a', b'three', 10)
        self.migrate('--from-table', 'src_small', '--to-table', 'dst')
        self.migrate('--from-table', 'src_small', '--to-table', 'dst',
                     '--verify')
        # behind its back: a new value in the source, a row gone from the
        # destination, a row only in the destination
        put(self.emu, 'src_small', b'r1', b'd:a', b'ONE', 11)
        self.proxy.deleteAllRow(b'dst', b'r2', {})
        put(self.proxy, 'dst', b'r9', b'd:a', b'extra', 10)
        p = self.migrate('--from-table', 'src_small', '--to-table', 'dst',
                         '--verify', expect=1)
        out = p.stdout.decode()
        self.assertIn("row 'r1' column 'd:a' ts 11: in source only", out)
        self.assertIn("row 'r1' column 'd:a' ts 10: in destination only",
                      out)
        self.assertIn("row 'r2': missing in destination", out)
        # named by its logical key, as the other lines, and where it is
        # stored
        self.assertRegex(out, r"differ: row 'r9' \(destination key "
                         r"'[0-7]-r9'\): not in source")
        self.assertIn('4 difference(s)', p.stderr.decode())
        self.assertIn('compared 4 rows (3 in source, 3 in destination)',
                      p.stderr.decode())
        # a salted source names its rows by their logical keys too
        self.migrate('--from-table', 'src_small', '--to-table', 'dst_b')
        self.proxy.deleteAllRow(b'dst_b', b'r3', {})
        p = self.migrate('--from-table', 'dst', '--to-table', 'dst_b',
                         '--verify', expect=1)
        out = p.stdout.decode()
        self.assertRegex(out, r"differ: row 'r3' \(source key '[0-7]-r3'\): "
                         r"missing in destination")
        self.assertRegex(out, r"differ: row 'r2' \(destination key "
                         r"'\\x0[0-3]r2'\): not in source")

    def test_verify_value_change(self):
        self.migrate('--from-table', 'src', '--to-table', 'dst_d')
        key = self.keys[10]
        row = self.emu.getRow(b'src', key, {})[0]
        ts = row.columns[b'd:a'].timestamp
        # the same cell coordinates, another value, in the destination
        put(self.proxy, 'dst_d', key, b'd:a', b'tampered', ts)
        p = self.migrate('--from-table', 'src', '--to-table', 'dst_d',
                         '--verify', expect=1)
        self.assertIn("column 'd:a' ts %d: value" % ts, p.stdout.decode())
        self.assertIn("'tampered' in destination", p.stdout.decode())

    # ---- dry run ---------------------------------------------------------

    def test_dry_run_writes_nothing(self):
        ck = os.path.join(self.workdir, 'dry.ckpt')
        p = self.migrate('--from-table', 'src', '--to-table', 'dst',
                         '--dry-run', '--all-versions', '--checkpoint', ck)
        err = p.stderr.decode()
        self.assertIn('dry run: nothing is written', err)
        self.assertIn('would copy %d rows, %d cells'
                      % (ROWS, cell_count(self.src_all)), err)
        self.assertEqual(scan_rows(self.emu, 'dst'), [])
        self.assertFalse(os.path.exists(ck))

    # ---- several hosts ---------------------------------------------------

    def test_shards_copy_everything_once(self):
        lists = []
        for i in (1, 2):
            p = self.migrate('--from-table', 'src', '--to-table', 'dst',
                             '--shard', '%d/2' % i, '--list-units')
            lists.append(p.stdout.decode().split('\n')[:-1])
        self.assertEqual(len(lists[0]) + len(lists[1]), 4)
        self.assertFalse(set(lists[0]) & set(lists[1]))
        rows = 0
        for i in (1, 2):
            p = self.migrate('--from-table', 'src', '--to-table', 'dst',
                             '--all-versions', '--shard', '%d/2' % i)
            rows += int(re.search(r'this run (\d+) rows',
                                  p.stderr.decode()).group(1))
        self.assertEqual(rows, ROWS)
        self.assertEqual(self.through_proxy('dst', True), self.src_all)

    def test_units_on_stdin(self):
        p = self.migrate('--from-table', 'src', '--to-table', 'dst_b',
                         '--list-units')
        units = p.stdout.decode()
        self.assertEqual(len(units.split('\n')[:-1]), 4)
        self.assertTrue(units.startswith('source - '))
        p = self.migrate('--from-table', 'src', '--to-table', 'dst_b',
                         '--all-versions', '--units', '-',
                         stdin=('# a comment\n\n' + units).encode())
        lines = p.stdout.decode().split('\n')[:-1]
        self.assertEqual(len(lines), 4)
        rows = 0
        for line, unit in zip(sorted(lines), sorted(units.split('\n')[:-1])):
            self.assertTrue(line.startswith(unit + ' ok rows='), line)
            rows += int(re.search(r' rows=(\d+)', line).group(1))
        self.assertEqual(rows, ROWS)
        self.assertEqual(self.through_proxy('dst_b', True), self.src_all)
        # verify units: source and dest ranges, a result line each
        p = self.migrate('--from-table', 'src', '--to-table', 'dst_b',
                         '--verify', '--list-units')
        vunits = p.stdout.decode()
        self.assertEqual(vunits.count('dest '), 4)
        p = self.migrate('--from-table', 'src', '--to-table', 'dst_b',
                         '--verify', '--all-versions', '--units', '-',
                         stdin=vunits.encode())
        self.assertEqual(p.stdout.decode().count(' ok rows='), 8)
        # a malformed unit is refused before anything runs
        p = self.migrate('--from-table', 'src', '--to-table', 'dst_b',
                         '--units', '-', stdin=b'source 0g -\n', expect=2)
        self.assertIn('stdin:1:', p.stderr.decode())

    # ---- progress and rate -----------------------------------------------

    def test_progress_bars_on_a_terminal(self):
        import pty
        master, slave = pty.openpty()
        proc = subprocess.Popen(
            [ARGS.migrate, '-c', self.procs.conf, '--from-table', 'src',
             '--to-table', 'dst', '--batch-rows', '10', '--parallel', '2',
             '--max-rows-per-second', '600', '--progress-interval', '0.05'],
            stdout=subprocess.DEVNULL, stderr=slave)
        os.close(slave)
        out = b''
        while True:
            try:
                chunk = os.read(master, 65536)
            except OSError:  # EIO: the tool closed its end
                break
            if not chunk:
                break
            out += chunk
        os.close(master)
        self.assertEqual(proc.wait(30), 0, out.decode(errors='replace'))
        text = out.decode(errors='replace')
        # a bar per region being copied, one overall, redrawn in place
        self.assertIn('\033[1A\033[2K', text)
        self.assertRegex(text, r'\n  [0-9a-f-]+ [0-9a-f-]+ +\[[#.]{20}\] +'
                         r'\d+ rows +[0-9.]+ K?i?B +\d+ rows/s ETA ')
        self.assertRegex(text, r'copy \[#{30}\] units 4/4 %d rows' % ROWS)
        self.assertEqual(self.through_proxy('dst', False), self.src_new)

    def test_progress_lines_and_rate_limit(self):
        t0 = time.time()
        p = self.migrate('--from-table', 'src', '--to-table', 'dst',
                         '--batch-rows', '20', '--max-rows-per-second',
                         '400', '--progress-interval', '0.1')
        took = time.time() - t0
        # 240 rows at 400 rows/s: the first batch goes at once
        self.assertGreater(took, (ROWS - 20) / 400.0 * 0.9)
        lines = [x for x in p.stderr.decode().split('\n')
                 if x.startswith('copy: units ')]
        self.assertGreater(len(lines), 2, p.stderr.decode())
        self.assertIn('rows/s', lines[0])
        self.assertIn('ETA', lines[0])
        self.assertTrue(lines[-1].endswith('(end)'))
        self.assertIn('units 4/4, rows %d' % ROWS, lines[-1])


    def test_progress_by_rows_for_text_keys(self):
        """Text keys: 110 rows '0000'.. in the first region, 990 'user0000'..
        in the second, the last two empty.  The percent follows the rows
        (it said 'units 3/4 ... 96 %' at a tenth of the work)."""
        small = [b'%04d' % i for i in range(110)]
        big = [b'user%04d' % i for i in range(990)]
        for keys in (small, big):
            self.emu.mutateRows(b'text', [
                T.BatchMutation(row=k, mutations=[
                    T.Mutation(column=b'd:a', value=b'v')]) for k in keys],
                {})
        total = len(small) + len(big)
        p = self.migrate('--from-table', 'text', '--to-table', 'plain',
                         '--batch-rows', '10', '--max-rows-per-second',
                         '2500', '--progress-interval', '0.05')
        lines = [x for x in p.stderr.decode().split('\n')
                 if x.startswith('copy: units ') and '(end)' not in x]
        self.assertGreater(len(lines), 5, p.stderr.decode())
        checked = 0
        for line in lines:
            m = re.search(r'rows (\d+) of ~(\d+), .* (\d+)%, ETA', line)
            self.assertTrue(m, line)
            rows, est, pct = (int(x) for x in m.groups())
            # the sample estimates the rows in all before any is copied
            self.assertLess(abs(est - total), total * 0.1, line)
            if rows >= 200:
                self.assertLess(abs(pct - 100.0 * rows / total), 10, line)
                checked += 1
        self.assertGreater(checked, 3, lines)
        self.assertEqual(len(scan_rows(self.emu, 'plain')), total)


class CompactFramedTest(unittest.TestCase):
    """A backend speaking compact over framed transport: the tool talks
    to it as [backend] says."""

    setUpClass = MigrateTest.__dict__['setUpClass']
    tearDownClass = MigrateTest.__dict__['tearDownClass']
    setUp = MigrateTest.setUp
    migrate = MigrateTest.migrate
    through_proxy = MigrateTest.through_proxy
    COMPACT_FRAMED = True

    def test_copy_and_verify(self):
        self.migrate('--from-table', 'src', '--to-table', 'dst',
                     '--all-versions', '--batch-rows', '30')
        self.assertEqual(self.through_proxy('dst', True), self.src_all)
        self.migrate('--from-table', 'src', '--to-table', 'dst',
                     '--all-versions', '--verify')


def main():
    global ARGS
    ap = argparse.ArgumentParser()
    ap.add_argument('--migrate', required=True)
    ap.add_argument('--proxy', required=True)
    ap.add_argument('--emu', required=True)
    ap.add_argument('--pydir', required=True)
    hsptest.add_backend_args(ap)
    ARGS, rest = ap.parse_known_args()
    hsptest.import_thrift(ARGS.pydir, globals(), faultlib)
    if ARGS.backend_kind == 'real' and not rest:
        # one cluster for the whole run: CompactFramedTest's backend
        # protocol is the methods tests' part on real HBase
        rest = REAL_TESTS
    unittest.main(argv=[sys.argv[0]] + rest, verbosity=2)


if __name__ == '__main__':
    main()
