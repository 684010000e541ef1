"""hbase-salt-migrate under a real distributed engine: a Hadoop Streaming
job on YARN (tests/hadoop/hadoop-mini: a MiniMRYarnCluster) whose mapper is
`hbase-salt-migrate --units -`, one unit (source region) per map task,
copies a salted table of ROWS rows (4 regions made with split keys, split
further by hbase-mini --split-size as it loads; three versions of d:a)
into another mapping on real HBase (tests/hbase/hbase-mini).  The first
attempt of one map task kills itself (the migration process and the
task's JVM, SIGKILL) after it has written part of its unit; YARN runs the
task again, which rewrites the same cells.  Then `hbase-salt-migrate
--verify` finds no difference and every row reads back through the proxy
(the newest cells of all rows by a scan, getVer of a sample of rows).

The copy takes the newest version of each cell, the tool's default: with
--all-versions (one getVer a row) a map task copied 17 rows/s on this
loaded 2-core machine, 200 000 rows would take half an hour;
tests/e2e/test_migrate.py (real-migrate) holds --all-versions to real
HBase on a small table.

  /usr/bin/python3 tests/real/test_migrate_hadoop.py \\
      --migrate BUILD/daemon/migrate/hbase-salt-migrate \\
      --proxy BUILD/daemon/hbase-salt-proxy --pydir BUILD/thrift/py \\
      [--rows N] [--slots N] [--figures SLOTS,...]

--figures 1,2,4 measures instead of testing: the same copy by a job with
each number of map slots, and by one hbase-salt-migrate process
(--parallel 1 and 4), rows/s each, the destination made empty between.
"""

import argparse
import ast
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                '..', 'lib'))
import hsptest  # noqa: E402

ARGS = None
HADOOP_MINI = os.path.join(hsptest.SRC_ROOT, 'tests', 'hadoop', 'hadoop-mini')
# the source, salted by one mapping, into a destination salted by another
CONF_TABLES = ('[table:src]\nbuckets = 8\n'
               '[table:dst]\nbuckets = 16\nsalt_format = hex\n'
               'salt_separator = -\n')
VERSIONS = 3
# bytes a region holds before hbase-mini's policy splits it: about 8 MiB
# of the ~55 MiB the source's cells take, on top of its 4 split keys
SPLIT_SIZE = 8 * 1024 * 1024
# the map task whose first attempt kills itself
KILL_TASK = '000001'

# The mapper: the migration command (its arguments) as a user's job runs
# it, except on the first attempt of map task HSP_KILL_TASK, where it is
# SIGKILLed after a few seconds of copying, and so is the task's JVM (the
# script's parent), as a node that dies would take both.  Streaming
# exports the job's configuration with '.' as '_': mapreduce_task_id,
# mapreduce_task_attempt_id.
KILLER = r'''#!/bin/bash
set -u
attempt=${mapreduce_task_attempt_id:-}
case $attempt in
*_m_${HSP_KILL_TASK:-none}_0) ;;
*) exec "$@" ;;
esac
line=$(cat)
printf '%s\n' "$line" | "$@" &
child=$!
sleep "${HSP_KILL_AFTER:-4}"
echo "killer: $attempt: SIGKILL to the migration and the task JVM" >&2
echo "$attempt $line" >> "$HSP_KILL_LOG"
kill -9 "$child"
if [ "$(cat /proc/$PPID/comm)" = java ]; then
    kill -9 "$PPID"
fi
exit 137
'''


def row_key(i):
    # spread over the source's buckets and regions, as application keys are
    return b'user%08d' % ((i * 2654435761) % 100000000)


def values(i):
    """The three versions of d:a of row i, oldest first, and d:b."""
    return ([(1000 + v, b'v%d-%d' % (v, i) + b'x' * (i % 40))
             for v in range(VERSIONS)], b'b%d' % i)


class Cluster(object):
    """Real HBase, the proxy with both mappings, the source loaded."""

    def __init__(self, workdir):
        self.workdir = workdir
        self.th = hsptest.Thrift(ARGS.pydir)
        self.hbase = hsptest.start_backend(
            'real', workdir, thrift2=True,
            real_extra=['--split-size', str(SPLIT_SIZE)])
        try:
            self.port = hsptest.free_port()
            self.conf_text = (
                '[proxy]\nlisten = 127.0.0.1:%d\nworkers = 2\n'
                '[backend]\nservers = 127.0.0.1:%d\npool_size = 8\n'
                'request_timeout_ms = 60000\n%s'
                % (self.port, self.hbase.port, CONF_TABLES))
            self.conf = os.path.join(workdir, 'proxy.conf')
            # the source in 4 regions at every other bucket (what
            # --split-size makes of them as it loads falls inside buckets)
            self.create('src', self.split_keys('src')[1::2])
            self.create('dst', self.split_keys('dst'))
            self.proxy = hsptest.Proxy(ARGS.proxy, workdir, self.conf_text,
                                       [self.port])
        except Exception:
            self.hbase.close()
            raise

    def split_keys(self, table):
        """The split keys the proxy prints for table (the runbook's step
        2), as bytes."""
        with open(self.conf, 'w') as f:
            f.write(self.conf_text)
        out = subprocess.run([ARGS.proxy, '-c', self.conf, '--split-keys',
                              table],
                             check=True, stdout=subprocess.PIPE).stdout
        items = re.findall(rb'"((?:[^"\\]|\\.)*)"', out)
        return [ast.literal_eval('b"' + x.decode() + '"') for x in items]

    def create(self, name, splits):
        """name made (again, empty) with one family keeping VERSIONS."""
        T2 = self.th.T2
        c = self.th.client2(self.hbase.port2, timeout=120.0)
        try:
            tn = T2.TTableName(qualifier=name.encode())
            if c.tableExists(tn):
                c.disableTable(tn)
                c.deleteTable(tn)
            c.createTable(T2.TTableDescriptor(tableName=tn, columns=[
                T2.TColumnFamilyDescriptor(name=b'd',
                                           maxVersions=VERSIONS)]), splits)
        finally:
            c.transport.close()

    def client(self, port=None):
        return self.th.client1(port or self.port, timeout=120.0)

    def load(self, rows):
        """rows rows into src through the proxy: mutateRowsTs of 2000
        rows, one call per timestamp (Thrift1's Mutation has none)."""
        T = self.th.T
        c = self.client()
        try:
            for start in range(0, rows, 2000):
                idx = range(start, min(rows, start + 2000))
                for v in range(VERSIONS):
                    batches = []
                    for i in idx:
                        vs, b = values(i)
                        ms = [T.Mutation(column=b'd:a', value=vs[v][1])]
                        if v == VERSIONS - 1:
                            ms.append(T.Mutation(column=b'd:b', value=b))
                        batches.append(T.BatchMutation(row=row_key(i),
                                                       mutations=ms))
                    c.mutateRowsTs(b'src', batches, 1000 + v, {})
        finally:
            c.transport.close()

    def regions(self, table):
        c = self.client(self.hbase.port)
        try:
            return len(c.getTableRegions(table.encode()))
        finally:
            c.transport.close()

    def settle(self, table, seconds=6.0, limit=120.0):
        """The region count once no split has happened for seconds."""
        end = time.time() + limit
        n, since = self.regions(table), time.time()
        while time.time() < end and time.time() - since < seconds:
            time.sleep(1.0)
            m = self.regions(table)
            if m != n:
                n, since = m, time.time()
        return n

    def close(self):
        self.proxy.close()
        self.hbase.close()


def migrate(*args, stdin=None, timeout=600):
    p = subprocess.run([ARGS.migrate, '-c', CL.conf, '--from-table', 'src',
                        '--to-table', 'dst'] + list(args), input=stdin,
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       timeout=timeout)
    for what in (b'runtime error:', b'Sanitizer'):
        assert what not in p.stderr, p.stderr.decode()
    return p


def run_job(workdir, units, slots, kill_task=None):
    """The Streaming job over units (text, one a line); returns (status,
    seconds of the job, its stdout+stderr, the result lines)."""
    os.makedirs(workdir, exist_ok=True)
    with open(os.path.join(workdir, 'units.txt'), 'w') as f:
        f.write(units)
    killer = os.path.join(workdir, 'killer.sh')
    with open(killer, 'w') as f:
        f.write(KILLER)
    os.chmod(killer, 0o755)
    # the user's mapper (docs-pending/hadoop.md), behind the killer
    mapper = ' '.join([killer, ARGS.migrate, '-c', CL.conf, '--from-table',
                       'src', '--to-table', 'dst', '--units', '-', '--progress-interval', '60'])
    out = os.path.join(workdir, 'out')
    shutil.rmtree(out, ignore_errors=True)
    cmd = [HADOOP_MINI, '--work', os.path.join(workdir, 'yarn'),
           '--input', os.path.join(workdir, 'units.txt'), '--output', out,
           '--mapper', mapper, '--slots', str(slots),
           '--cmdenv', 'HSP_KILL_LOG=' + os.path.join(workdir, 'killed'),
           '--cmdenv', 'HSP_KILL_TASK=' + (kill_task or 'none')]
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       timeout=900)
    log = p.stdout.decode('utf-8', 'replace')
    with open(os.path.join(workdir, 'job.log'), 'w') as f:
        f.write(log)
    m = re.search(r'^job done seconds=([0-9.]+)$', log, re.M)
    lines = []
    if os.path.isdir(out):
        for name in sorted(os.listdir(out)):
            if name.startswith('part-'):
                with open(os.path.join(out, name)) as f:
                    lines += [x.rstrip('\t\n') for x in f if x.strip()]
    return p.returncode, float(m.group(1)) if m else None, log, lines


CL = None


class HadoopMigrateTest(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        t0 = time.time()
        cls.units = migrate('--list-units').stdout.decode()
        cls.nunits = len([x for x in cls.units.split('\n')
                          if x and not x.startswith('#')])
        sys.stderr.write('units: %d (%.1f s)\n' % (cls.nunits,
                                                   time.time() - t0))

    def test_streaming_job_with_a_killed_task(self):
        # several regions: the 4 split keys and what --split-size made
        self.assertGreaterEqual(self.nunits, 5, self.units)
        wd = os.path.join(CL.workdir, 'job')
        rc, secs, log, lines = run_job(wd, self.units, ARGS.slots,
                                       kill_task=KILL_TASK)
        self.assertEqual(rc, 0, log[-6000:])
        sys.stderr.write('job: %d rows in %.1f s, %.0f rows/s, %d slots\n'
                         % (ARGS.rows, secs, ARGS.rows / secs, ARGS.slots))
        # the first attempt of the chosen task died by SIGKILL mid-unit...
        with open(os.path.join(wd, 'killed')) as f:
            killed = f.read().split('\n')[:-1]
        self.assertEqual(len(killed), 1, killed)
        self.assertTrue(killed[0].split()[0].endswith('_m_%s_0' % KILL_TASK))
        self.assertRegex(log, r'Task Id : attempt_\d+_\d+_m_%s_0, '
                              r'Status : FAILED' % KILL_TASK)
        self.assertRegex(log, r'Failed map tasks=1\b')
        self.assertRegex(log, r'Launched map tasks=%d\b' % (self.nunits + 1))
        # ... and YARN's second attempt did the unit: one line a unit, ok
        units = sorted(x for x in self.units.split('\n')
                       if x and not x.startswith('#'))
        self.assertEqual(sorted(' '.join(x.split()[:3]) for x in lines),
                         units)
        rows = 0
        for x in lines:
            self.assertEqual(x.split()[3], 'ok', x)
            rows += int(re.search(r' rows=(\d+)', x).group(1))
        self.assertEqual(rows, ARGS.rows)
        # the copy holds every cell of every version at its timestamp
        t0 = time.time()
        p = migrate('--verify', '--parallel', '4')
        self.assertEqual(p.returncode, 0, (p.stdout + p.stderr).decode())
        self.assertIn(b'no differences', p.stderr)
        sys.stderr.write('verify: %.1f s\n' % (time.time() - t0))
        t0 = time.time()
        # every row through the proxy with the destination's mapping
        c = CL.client()
        try:
            seen = 0
            sid = c.scannerOpenWithScan(b'dst', CL.th.T.TScan(), {})
            want = {row_key(i): i for i in range(ARGS.rows)}
            while True:
                batch = c.scannerGetList(sid, 5000)
                if not batch:
                    break
                for r in batch:
                    i = want.pop(r.row)
                    vs, b = values(i)
                    self.assertEqual(r.columns[b'd:a'].value, vs[-1][1])
                    self.assertEqual(r.columns[b'd:a'].timestamp, vs[-1][0])
                    self.assertEqual(r.columns[b'd:b'].value, b)
                    seen += 1
            c.scannerClose(sid)
            self.assertEqual(want, {})
            self.assertEqual(seen, ARGS.rows)
            # the newest version only, at its timestamp (see the module's
            # comment)
            for i in random.Random(5).sample(range(ARGS.rows), 300):
                cells = c.getVer(b'dst', row_key(i), b'd:a', 10, {})
                self.assertEqual([(x.timestamp, x.value) for x in cells],
                                 [values(i)[0][-1]])
        finally:
            c.transport.close()
        sys.stderr.write('read back through the proxy: %.1f s\n'
                         % (time.time() - t0))


def figures():
    """rows/s of the job with each slot count, and of one process."""
    units = migrate('--list-units').stdout.decode()
    n = len([x for x in units.split('\n') if x and not x.startswith('#')])
    out = ['rows %d, units %d' % (ARGS.rows, n)]
    for par in (1, 4):
        CL.create('dst', CL.split_keys('dst'))
        t0 = time.time()
        p = migrate('--parallel', str(par),
                    '--no-progress')
        secs = time.time() - t0
        assert p.returncode == 0, p.stderr.decode()
        out.append('one process --parallel %d: %.1f s, %.0f rows/s'
                   % (par, secs, ARGS.rows / secs))
        sys.stderr.write(out[-1] + '\n')
    for slots in [int(x) for x in ARGS.figures.split(',')]:
        CL.create('dst', CL.split_keys('dst'))
        rc, secs, log, lines = run_job(
            os.path.join(CL.workdir, 'fig%d' % slots), units, slots)
        assert rc == 0, log[-4000:]
        out.append('job, %d map slots: %.1f s, %.0f rows/s'
                   % (slots, secs, ARGS.rows / secs))
        sys.stderr.write(out[-1] + '\n')
    print('\n'.join(out))


def main():
    global ARGS, CL
    ap = argparse.ArgumentParser()
    ap.add_argument('--migrate', required=True)
    ap.add_argument('--proxy', required=True)
    ap.add_argument('--pydir', required=True)
    ap.add_argument('--rows', type=int, default=200000)
    ap.add_argument('--slots', type=int, default=2)
    ap.add_argument('--figures', help='slot counts to measure, e.g. 1,2,4')
    ARGS, rest = ap.parse_known_args()
    # the map tasks run in directories of their own
    ARGS.migrate = os.path.abspath(ARGS.migrate)
    ARGS.proxy = os.path.abspath(ARGS.proxy)
    workdir = tempfile.mkdtemp(prefix='hsp-hadoop-')
    t0 = time.time()
    CL = Cluster(workdir)
    try:
        CL.load(ARGS.rows)
        t1 = time.time()
        n = CL.settle('src')
        sys.stderr.write('loaded %d rows through the proxy in %.1f s; '
                         'src has %d regions (%.1f s)\n'
                         % (ARGS.rows, t1 - t0, n, time.time() - t1))
        if ARGS.figures:
            figures()
            rc = 0
        else:
            prog = unittest.main(argv=[sys.argv[0]] + rest, verbosity=2,
                                 exit=False)
            rc = 0 if prog.result.wasSuccessful() else 1
    finally:
        CL.close()
    sys.stderr.write('total %.1f s\n' % (time.time() - t0))
    if rc == 0 and not os.environ.get('HSP_KEEP_LOGS'):
        shutil.rmtree(workdir, ignore_errors=True)
    else:
        sys.stderr.write('logs kept in %s\n' % workdir)
    sys.exit(rc)


if __name__ == '__main__':
    main()
