"""Custom filters (HBase's hbase.thrift.filters) on salted tables: a filter
the servers register and [backend] custom_filters declares goes to every
bucket as written, beside the row-key filters the proxy rewrites, and the
scan answers what the same scan answers straight on an unsalted table; a
filter name the proxy does not know and the config does not declare is
refused on a salted table (it could read the row key, and sent unrewritten
it would quietly match nothing), with an error naming it and the key.

With --backend-kind real (tests/hbase/hbase-mini --filters
ValuePass:hsp.ValuePassFilter) the custom filter is a real one,
hsp.ValuePassFilter (cells whose value starts with its argument); the
emulator registers none, so there the scan's answer is its refusal of the
name, passed through from every bucket as it comes straight.

  /usr/bin/python3 tests/e2e/test_custom_filters.py \\
      --proxy BUILD/daemon/hbase-salt-proxy --emu BUILD/tests/emu/hbase-emu \\
      --pydir BUILD/thrift/py [--backend-kind emu|real]
"""

import argparse
import os
import re
import shutil
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                '..', 'lib'))
import hsptest  # noqa: E402

ARGS = None
TH = None

SALTED, PLAIN = 'cfs', 'cfp'
CUSTOM = 'ValuePass:hsp.ValuePassFilter'
# logical rows: key -> value of d:a (and d:b = 'w' + the same)
ROWS = {b'abc1': b'v1', b'abc2': b'x2', b'abc3': b'v3', b'abd1': b'v4',
        b'ab': b'v5', b'zzz': b'v6', b'abc': b'v7', b'abc\xff': b'x8'}
FILTER = b"PrefixFilter('abc') AND ValuePass('v')"


pb_field, pb_filter = hsptest.pb_field, hsptest.pb_filter
# FILTER as Thrift2 filterBytes: FilterList(MUST_PASS_ALL, PrefixFilter,
# ValuePass): the custom filter by its class and its toByteArray
FILTER_PB = pb_filter(
    b'org.apache.hadoop.hbase.filter.FilterList',
    pb_field(1, 1)
    + pb_field(2, pb_filter(b'org.apache.hadoop.hbase.filter.PrefixFilter',
                            pb_field(1, b'abc')))
    + pb_field(2, pb_filter(b'hsp.ValuePassFilter', b'v')))
# what FILTER keeps: rows starting abc, cells whose value starts with v
WANT = sorted(k for k, v in ROWS.items() if k.startswith(b'abc')
              and v.startswith(b'v'))


def start_proxy(workdir, name, backend, custom):
    port, port2 = hsptest.free_port(), hsptest.free_port()
    conf = ('[proxy]\nlisten = 127.0.0.1:%d\nworkers = 1\n'
            '[backend]\nservers = 127.0.0.1:%d\n'
            'thrift2_servers = 127.0.0.1:%d\nrequest_timeout_ms = 60000\n'
            % (port, backend.port, backend.port2))
    if custom:
        conf += 'custom_filters = %s\n' % custom
    conf += ('[thrift2]\nlisten = 127.0.0.1:%d\n[table:%s]\nbuckets = 4\n'
             % (port2, SALTED))
    proxy = hsptest.Proxy(ARGS.proxy, workdir, conf, [port, port2], name)
    proxy.port, proxy.port2 = port, port2
    return proxy


def norm_msg(msg):
    """First line (real HBase appends a Java stack trace), table names
    and region encodings out."""
    first = msg.split('\n', 1)[0]
    first = re.sub(r'\.[0-9a-f]{32}\.', '.<ENC>.', first)
    return first.replace(SALTED, '<T>').replace(PLAIN, '<T>')


def outcome(call):
    """('ok', what call returns) or the error it raised."""
    try:
        return ('ok', call())
    except (TH.T.IOError, TH.T2.TIOError) as e:
        return (type(e).__name__, norm_msg(e.message), e.canRetry)
    except TH.TApplicationException as e:
        return ('TApplicationException', e.type, norm_msg(e.message))


def scan1(port, table, filt):
    """Thrift1 scan with a filter string: ('ok', rows) or the error."""
    c = TH.client1(port, timeout=120.0)

    def call():
        sid = c.scannerOpenWithScan(table.encode(), TH.T.TScan(
            filterString=filt, caching=100), {})
        rows = []
        while True:
            got = c.scannerGetList(sid, 100)
            if not got:
                break
            rows += [(r.row, sorted((k, v.value)
                                    for k, v in r.columns.items()))
                     for r in got]
        c.scannerClose(sid)
        return rows
    try:
        return outcome(call)
    finally:
        c.transport.close()


def cells2(r):
    return (r.row, sorted((x.family, x.qualifier, x.value)
                          for x in r.columnValues or []))


def scan2(port, table, filt=None, pb=None):
    """Thrift2 getScannerResults with a filter string or filterBytes."""
    c = TH.client2(port, timeout=120.0)
    try:
        return outcome(lambda: [cells2(r) for r in c.getScannerResults(
            table.encode(), TH.T2.TScan(filterString=filt, filterBytes=pb),
            100)])
    finally:
        c.transport.close()


def get2(port, table, row, filt):
    """Thrift2 get of one row with a filter string."""
    c = TH.client2(port, timeout=120.0)
    try:
        return outcome(lambda: cells2(c.get(table.encode(), TH.T2.TGet(
            row=row, filterString=filt))))
    finally:
        c.transport.close()


class CustomFilterTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix='hsp-custom-filters-')
        cls.hb = hsptest.start_backend(
            ARGS.backend_kind, cls.dir, emu=ARGS.emu, thrift=TH,
            thrift2=True, tables={SALTED: ['d'], PLAIN: ['d']},
            real_extra=['--filters', CUSTOM])
        cls.declared = start_proxy(cls.dir, 'declared', cls.hb, CUSTOM)
        cls.undeclared = start_proxy(cls.dir, 'undeclared', cls.hb, None)
        # the same rows in both tables, the salted one through the proxy
        for port, table in ((cls.declared.port, SALTED),
                            (cls.hb.port, PLAIN)):
            c = TH.client1(port, timeout=120.0)
            c.mutateRows(table.encode(), [
                TH.T.BatchMutation(row=k, mutations=[
                    TH.T.Mutation(column=b'd:a', value=v),
                    TH.T.Mutation(column=b'd:b', value=b'w' + v)])
                for k, v in sorted(ROWS.items())], {})
            c.transport.close()

    @classmethod
    def tearDownClass(cls):
        cls.declared.close()
        cls.undeclared.close()
        cls.hb.close()
        shutil.rmtree(cls.dir, ignore_errors=True)

    def test_declared_as_unsalted(self):
        """PrefixFilter AND a declared custom filter: the salted scan (and
        a Thrift2 get) through the proxy answers what the unsalted table
        answers straight; on real HBase, exactly the rows it should."""
        p = self.declared
        want1 = scan1(self.hb.port, PLAIN, FILTER)
        self.assertEqual(scan1(p.port, SALTED, FILTER), want1)
        want2 = scan2(self.hb.port2, PLAIN, FILTER)
        self.assertEqual(scan2(p.port2, SALTED, FILTER), want2)
        for row in (b'abc1', b'abc2', b'zzz'):
            self.assertEqual(get2(p.port2, SALTED, row, FILTER),
                             get2(self.hb.port2, PLAIN, row, FILTER), row)
        if self.hb.kind == 'real':
            self.assertEqual([r for r, _ in want1[1]], WANT)
            # ValuePass dropped d:b ('wv1'), a cell of a row it kept
            self.assertEqual(dict(want1[1])[b'abc1'], [(b'd:a', b'v1')])
        else:
            # the emulator registers no custom filter: its own refusal of
            # the name, which the proxy sent on as written
            self.assertEqual(want1[0], 'IOError')
            self.assertIn('ValuePass', want1[1])

    def test_declared_filter_bytes(self):
        """The same filter as Thrift2 filterBytes, the custom filter named
        by its class (the part after ':' in custom_filters): through the
        proxy as straight; undeclared, refused."""
        want = scan2(self.hb.port2, PLAIN, pb=FILTER_PB)
        self.assertEqual(scan2(self.declared.port2, SALTED, pb=FILTER_PB),
                         want)
        if self.hb.kind == 'real':
            self.assertEqual([r for r, _ in want[1]], WANT)
        else:
            self.assertEqual(want[0], 'TIOError', want)
        got = scan2(self.undeclared.port2, SALTED, pb=FILTER_PB)
        self.assertEqual(got[0], 'TIOError', got)
        self.assertIn('hsp.ValuePassFilter, which the proxy does not know',
                      got[1])
        self.assertIs(got[2], False)

    def test_undeclared_refused(self):
        """A filter name the config does not declare, one HBase knows or
        not, is refused on a salted table (Thrift1 IOError, Thrift2
        TIOError, canRetry false), naming it; on an unsalted table it
        still goes to HBase as written."""
        cases = ((self.undeclared, FILTER, 'ValuePass'),
                 (self.declared,
                  b"PrefixFilter('abc') AND NoSuchFilter('v')",
                  'NoSuchFilter'))
        for proxy, filt, name in cases:
            why = ('java.lang.IllegalArgumentException: hbase-salt-proxy: '
                   'unknown filter %s refused on a salted table' % name)
            r1 = scan1(proxy.port, SALTED, filt)
            self.assertEqual(r1[0], 'IOError', r1)
            self.assertTrue(r1[1].startswith(why), r1)
            self.assertIn('[backend] custom_filters', r1[1])
            self.assertIs(r1[2], False)
            r2 = scan2(proxy.port2, SALTED, filt)
            self.assertEqual(r2[0], 'TIOError', r2)
            self.assertTrue(r2[1].startswith(why), r2)
            self.assertIs(r2[2], False)
            r3 = get2(proxy.port2, SALTED, b'abc1', filt)
            self.assertEqual(r3[0], 'TIOError', r3)
            self.assertTrue(r3[1].startswith(why), r3)
            # unsalted: HBase's own answer, whatever it is
            self.assertEqual(scan1(proxy.port, PLAIN, filt),
                             scan1(self.hb.port, PLAIN, filt))


def main():
    global ARGS, TH
    ap = argparse.ArgumentParser()
    ap.add_argument('--proxy', required=True)
    ap.add_argument('--emu', required=True)
    ap.add_argument('--pydir', required=True)
    hsptest.add_backend_args(ap)
    ARGS, rest = ap.parse_known_args()
    TH = hsptest.Thrift(ARGS.pydir)
    argv = [sys.argv[0]] + rest
    unittest.main(argv=argv, verbosity=2)


if __name__ == '__main__':
    main()
