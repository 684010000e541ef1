#!/usr/bin/python3
"""Thrift2 from a second client library: npm's thrift package.

node/pipeline.js (--service thrift2) sends a list of THBaseService calls
all at once with callbacks, as a Node.js application does, once through
the proxy's [thrift2] listener to one emulator and once straight to a
reference emulator; every reply must be the same.  Table 'salted' is
salted by the proxy (16 hex buckets, '_' separator, as in
test_thrift2.py) and stored plainly on the reference; 'plain' passes
through on both.  Calls: put, putMultiple, get, getMultiple, exists,
existsAll, increment, append, deleteSingle, deleteMultiple, checkAndPut,
checkAndDelete, mutateRow and getScannerResults (forward, reversed,
start/stop, limit, batchSize), keys with 0x00/0xFF bytes, empty values;
one client per protocol/transport.  The reference speaks the client's
protocol: npm thrift 0.17's compact reader takes every bool inside a list
as false (readBool reads the container byte as an object), so existsAll
from a compact Node.js client reads [false, ...] from HBase itself too;
the proxy must answer what the server would, bytes included.  Afterwards every row of 'salted' on
the proxy's emulator must sit at its documented salted key.

With --backend-kind real (tests/real) real HBase is both behind the proxy
and the reference: hbase-mini serves one protocol, so two clusters start
at once, a binary one (behind the proxy, and the binary clients'
reference) and a compact one (the compact clients'); the references'
tables are 'ref_salted' and 'ref_plain' (pipeline.js --ref-calls), as
one cluster holds both sides for the binary clients, and 'salted' is made
through the proxy's createTable, pre-split at its buckets.

  /usr/bin/python3 tests/e2e/test_thrift2_node.py --proxy BUILD/daemon/hbase-salt-proxy \\
      --emu BUILD/tests/emu/hbase-emu --pydir BUILD/thrift/py \\
      --node-gen BUILD/thrift/nodejs --node-modules BUILD/tests/e2e/node_modules \\
      --node-client tests/e2e/node/pipeline.js
"""

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import threading
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import test_thrift2 as t2  # noqa: E402  (puts tests/lib on the path)
import hsptest  # noqa: E402
from test_pipeline import to_json  # noqa: E402

ARGS = None
CLIENTS = [('binary', 'buffered'), ('binary', 'framed'),
           ('compact', 'buffered'), ('compact', 'framed')]
STAMPS = [1000, 2000, 3000]


def cv(T, fam, qual, value, ts=None):
    return T.TColumnValue(family=fam, qualifier=qual, value=value,
                          timestamp=ts)


def calls_for(T, rnd, prefix):
    """Calls on both tables over keys starting with prefix (each client
    variant has its own rows)."""
    keys = [prefix + k for k in (b'', b'\x00', b'\xff', b'a', b'a\x00',
                                 b'm', b'u1', b'u10', b'u2', b'z\xff')]
    out = []
    for t in (b'salted', b'plain'):
        for k in keys:
            out.append(('put', [t, T.TPut(row=k, columnValues=[
                cv(T, b'a', b'q', b'v-' + k, rnd.choice(STAMPS)),
                cv(T, b'b', b'', b'', rnd.choice(STAMPS))])]))
        some = rnd.sample(keys, 5)
        out.append(('putMultiple', [t, [T.TPut(row=k, columnValues=[
            cv(T, b'a', b'm', b'multi', 1500)]) for k in some]]))
        for _ in range(12):
            k = rnd.choice(keys + [prefix + b'absent'])
            r = rnd.random()
            if r < 0.2:
                out.append(('get', [t, T.TGet(row=k)]))
            elif r < 0.3:
                out.append(('get', [t, T.TGet(row=k, columns=[
                    T.TColumn(family=b'a', qualifier=b'q')], maxVersions=3)]))
            elif r < 0.4:
                out.append(('exists', [t, T.TGet(row=k)]))
            elif r < 0.5:
                out.append(('increment', [t, T.TIncrement(row=k, columns=[
                    T.TColumnIncrement(family=b'c', qualifier=b'n',
                                       amount=rnd.randint(1, 9))])]))
            elif r < 0.6:
                out.append(('checkAndPut', [t, k, b'a', b'q', b'v-' + k,
                                            T.TPut(row=k, columnValues=[
                                                cv(T, b'a', b'x', b'cap',
                                                   2500)])]))
            elif r < 0.7:
                out.append(('checkAndDelete', [t, k, b'a', b'm', b'multi',
                                               T.TDelete(row=k)]))
            elif r < 0.8:
                out.append(('mutateRow', [t, T.TRowMutations(row=k, mutations=[
                    T.TMutation(put=T.TPut(row=k, columnValues=[
                        cv(T, b'b', b'r', b'mut', 3500)])),
                    T.TMutation(deleteSingle=T.TDelete(row=k, columns=[
                        T.TColumn(family=b'a', qualifier=b'm')]))])]))
            elif r < 0.9:
                out.append(('deleteSingle', [t, T.TDelete(row=k, columns=[
                    T.TColumn(family=b'b')])]))
            else:
                out.append(('deleteMultiple', [t, [T.TDelete(row=x) for x in
                                                   rnd.sample(keys, 2)]]))
        out.append(('getMultiple', [t, [T.TGet(row=k) for k in keys]
                                    + [T.TGet(row=prefix + b'absent')]]))
        out.append(('existsAll', [t, [T.TGet(row=k) for k in keys[:4]]]))
        for scan in (T.TScan(startRow=prefix, stopRow=prefix + b'\xff\xff'),
                     T.TScan(startRow=prefix + b'\xff\xff', stopRow=prefix,
                             reversed=True),
                     T.TScan(startRow=prefix + b'm',
                             stopRow=prefix + b'\xff\xff', limit=3),
                     T.TScan(startRow=prefix, stopRow=prefix + b'u2',
                             batchSize=1, caching=2)):
            out.append(('getScannerResults', [t, scan, 100]))
    return out


class NodeThrift2Test(unittest.TestCase):

    ref_tables = {}     # a table's name on the reference, when not its own

    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix='hsp-t2node-')
        for d in ('via', 'ref'):
            os.makedirs(os.path.join(cls.dir, d))
        if ARGS.backend_kind == 'real':
            cls.start_real()
            return
        cls.emu = t2.Emu(os.path.join(cls.dir, 'via'), 'binary', 'buffered')
        cls.ref = t2.Emu(os.path.join(cls.dir, 'ref'), 'binary', 'buffered')
        os.makedirs(os.path.join(cls.dir, 'refc'))
        cls.refc = t2.Emu(os.path.join(cls.dir, 'refc'), 'compact',
                          'buffered')
        cls.proxy = t2.Proxy(os.path.join(cls.dir, 'via'), cls.emu, 'binary',
                             'buffered')

    @classmethod
    def start_real(cls):
        clusters = {}

        def start(proto):
            try:
                clusters[proto] = hsptest.start_backend(
                    'real', os.path.join(cls.dir, 'ref'), proto=proto,
                    transport='buffered', thrift2=True, name='hbase-' + proto)
            except Exception as e:  # noqa: BLE001 (reported below)
                clusters[proto] = e
        # at once: a JVM start is half a minute
        threads = [threading.Thread(target=start, args=(p,))
                   for p in ('binary', 'compact')]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        failed = [c for c in clusters.values() if isinstance(c, Exception)]
        if failed:
            for c in clusters.values():
                if not isinstance(c, Exception):
                    c.close()
            raise failed[0]
        cls.emu = cls.ref = clusters['binary']
        cls.refc = clusters['compact']
        cls.ref_tables = {b'salted': b'ref_salted', b'plain': b'ref_plain'}
        try:
            cls.proxy = t2.Proxy(os.path.join(cls.dir, 'via'), cls.emu,
                                 'binary', 'buffered')
            # three versions everywhere: the gets ask for them
            t2.create_salted(cls.proxy.port2, 'binary', 'buffered',
                             b'salted', t2.FAMILIES, versions=3)
            t2.create_salted(cls.emu.port2, 'binary', 'buffered', b'plain',
                             t2.FAMILIES, versions=3)
            for ref, proto in ((cls.ref, 'binary'), (cls.refc, 'compact')):
                for t in cls.ref_tables.values():
                    t2.create_salted(ref.port2, proto, 'buffered', t,
                                     t2.FAMILIES, versions=3)
        except Exception:
            cls.close_backends()
            raise

    @classmethod
    def close_backends(cls):
        for b in {id(x): x for x in (cls.emu, cls.ref, cls.refc)}.values():
            b.close()

    @classmethod
    def tearDownClass(cls):
        rc = cls.proxy.stop()
        cls.close_backends()
        if os.environ.get('HSP_KEEP_LOGS') != '1':
            shutil.rmtree(cls.dir, ignore_errors=True)
        assert rc == 0, 'the proxy exited %r' % (rc,)

    def node(self, calls, proto, transport):
        node = shutil.which('node')
        if node is None or not os.path.isdir(ARGS.node_modules or ''):
            self.fail('node, or the npm thrift package (%s), is missing: '
                      'install nodejs and npm, then build again (bash '
                      '.ci/quickstart test does both)' % ARGS.node_modules)
        path = os.path.join(self.dir, 'calls.json')
        with open(path, 'w') as f:
            json.dump([[name, to_json(args)] for name, args in calls], f)
        more = []
        if self.ref_tables:
            # every call's first argument is its table
            ref_path = os.path.join(self.dir, 'ref-calls.json')
            with open(ref_path, 'w') as f:
                json.dump([[name, to_json([self.ref_tables[args[0]]]
                                          + args[1:])]
                           for name, args in calls], f)
            # real HBase marks a batchSize part of a row partial by where
            # its RPCs ended, which the proxy's scanners (one per bucket's
            # region) end elsewhere (test_thrift2.norm)
            more = ['--ref-calls', ref_path, '--ignore', 'partial']
        env = dict(os.environ, NODE_PATH=ARGS.node_modules)
        r = subprocess.run(
            [node, ARGS.node_client, '--gen', ARGS.node_gen, '--calls', path,
             '--service', 'thrift2',
             '--proxy', '%d:%s:%s' % (self.proxy.port2, proto, transport),
             '--ref', '%d:%s:buffered' % (
                 (self.refc if proto == 'compact' else self.ref).port2,
                 proto)] + more,
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env,
            timeout=120)
        return r.returncode, r.stdout.decode(errors='replace')

    def test_1_same_replies(self):
        T = t2.T
        rnd = random.Random(20261123)
        for i, (proto, transport) in enumerate(CLIENTS):
            calls = calls_for(T, rnd, b'n%d-' % i)
            rc, out = self.node(calls, proto, transport)
            self.assertEqual(rc, 0, 'node %s/%s:\n%s' % (proto, transport,
                                                          out))
            self.assertIn('0 of %d replies differ' % len(calls), out)

    def test_2_physical_keys(self):
        """Every row the node clients wrote to 'salted' through the proxy
        sits at its salted key, and the logical rows are the reference's."""
        direct = t2.connect(self.emu.port2, 'binary', 'buffered')
        refs = [t2.connect(self.ref.port2, 'binary', 'buffered'),
                t2.connect(self.refc.port2, 'compact', 'buffered')]
        try:
            scan = t2.T.TScan(caching=1000)
            phys = [r.row for r in
                    direct.getScannerResults(b'salted', scan, 100000)]
            ref = self.ref_tables.get(b'salted', b'salted')
            want = sorted(r.row for c in refs for r in
                          c.getScannerResults(ref, scan, 100000))
        finally:
            direct._trans.close()
            for c in refs:
                c._trans.close()
        self.assertTrue(phys, 'no rows written through the proxy')
        plen = len(t2.SALT.prefix(0))
        wrong = [p for p in phys if t2.SALT.physical(p[plen:]) != p]
        self.assertEqual(wrong, [], 'rows without the documented salt')
        self.assertEqual(sorted(p[plen:] for p in phys), want)


def main():
    global ARGS
    ap = argparse.ArgumentParser()
    ap.add_argument('--proxy', required=True)
    ap.add_argument('--emu', required=True)
    ap.add_argument('--pydir', required=True)
    ap.add_argument('--node-gen', required=True)
    ap.add_argument('--node-modules', required=True)
    ap.add_argument('--node-client', required=True)
    hsptest.add_backend_args(ap)
    ARGS, rest = ap.parse_known_args()
    t2.ARGS = ARGS
    t2.use_thrift(hsptest.import_thrift(ARGS.pydir))
    unittest.main(argv=[sys.argv[0]] + rest, verbosity=2)


if __name__ == '__main__':
    main()
