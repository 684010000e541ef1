"""A small, independent reference model of HBase (Thrift1-visible) semantics.

The conformance suite computes its expected results here rather than
hard-coding what the emulator returns.  The model follows the facts in
/work/shared/reference/hbase-thrift.md (sections 1.4, 4 and 5) and HBase's
own code paths as summarised there:

  * row keys (and qualifiers, families) sort as unsigned bytes, a shorter
    key before any longer key that starts with it -- Python's bytes order;
  * a cell is (family, qualifier, timestamp) -> value; within a row cells
    come family asc, qualifier asc, timestamp desc;
  * reads return min(requested versions, family maxVersions) newest
    versions; "...Ts" reads use the time range [0, ts) (EXCLUSIVE);
  * scans are [start, stop) forward, or (stop, start] reversed, with an
    empty start meaning the first (forward) or last (reversed) row.

Filters are modelled as plain Python callables built from the helpers at
the bottom (one per HBase filter the suite exercises); each test writes
both the filter string sent on the wire and the model filter it means.
"""

import re

LATEST = 0x7FFFFFFFFFFFFFFF  # HConstants.LATEST_TIMESTAMP


def parse_column(col):
    """CellUtil.parseColumn: b'fam' -> (fam, None); b'fam:q' -> (fam, q)."""
    i = col.find(b':')
    if i < 0:
        return col, None
    return col[:i], col[i + 1:]


def colname(fam, qual):
    return fam + b':' + qual


class Cell(object):
    __slots__ = ('fam', 'qual', 'ts', 'value')

    def __init__(self, fam, qual, ts, value):
        self.fam, self.qual, self.ts, self.value = fam, qual, ts, value

    @property
    def column(self):
        return colname(self.fam, self.qual)

    def key(self):
        return (self.column, self.ts, self.value)

    def __repr__(self):
        return 'Cell(%r, ts=%d, %r)' % (self.column, self.ts, self.value)


class Table(object):
    def __init__(self, name, families):
        """families: {b'fam': maxVersions}"""
        self.name = name
        self.families = dict(families)
        self.enabled = True
        # row -> {(fam, qual): {ts: value}}
        self.rows = {}

    # ---- writes -------------------------------------------------------
    def put(self, row, fam, qual, ts, value):
        assert fam in self.families, fam
        cols = self.rows.setdefault(row, {})
        vers = cols.setdefault((fam, qual), {})
        vers[ts] = value  # same timestamp: the later write wins
        # Keep at most maxVersions (what reads see).  Tests avoid the
        # before-compaction ambiguity of time ranges reaching past them.
        maxv = self.families[fam]
        if len(vers) > maxv:
            for old in sorted(vers)[:len(vers) - maxv]:
                del vers[old]

    def put_column(self, row, column, ts, value):
        fam, qual = parse_column(column)
        self.put(row, fam, qual, ts, value)

    def _gc(self, row):
        cols = self.rows.get(row)
        if cols is None:
            return
        for k in [k for k, v in cols.items() if not v]:
            del cols[k]
        if not cols:
            del self.rows[row]

    def delete_column(self, row, fam, qual, ts=LATEST):
        """Delete.addColumns: every version <= ts."""
        vers = self.rows.get(row, {}).get((fam, qual))
        if vers:
            for t in [t for t in vers if t <= ts]:
                del vers[t]
        self._gc(row)

    def delete_family(self, row, fam, ts=LATEST):
        for (f, q) in list(self.rows.get(row, {})):
            if f == fam:
                self.delete_column(row, f, q, ts)
        self._gc(row)

    def delete_spec(self, row, column, ts=LATEST):
        fam, qual = parse_column(column)
        if qual is None:
            self.delete_family(row, fam, ts)
        else:
            self.delete_column(row, fam, qual, ts)

    def delete_row(self, row, ts=LATEST):
        for (f, q) in list(self.rows.get(row, {})):
            self.delete_column(row, f, q, ts)
        self._gc(row)

    # ---- reads --------------------------------------------------------
    def cells(self, row, columns=None, ts=None, versions=1):
        """Cells of one row in HBase order.

        columns: None/[] = all; else list of b'fam' / b'fam:qual'.
        ts: None = no time range; else [0, ts) (exclusive upper bound).
        """
        cols = self.rows.get(row, {})
        # Get/Scan.addFamily and addColumn applied in order: addFamily
        # selects the whole family (dropping earlier qualifiers); addColumn
        # on a family selected whole narrows it to that qualifier set.
        want = {}
        for c in columns or []:
            f, q = parse_column(c)
            if q is None:
                want[f] = None
            else:
                if want.get(f) is None:
                    want[f] = set()
                want[f].add(q)
        out = []
        for (fam, qual) in sorted(cols):
            if columns and (fam not in want or
                            (want[fam] is not None and qual not in want[fam])):
                continue
            n = min(versions, self.families[fam])
            stamps = [t for t in sorted(cols[(fam, qual)], reverse=True)
                      if ts is None or 0 <= t < ts]
            for t in stamps[:n]:
                out.append(Cell(fam, qual, t, cols[(fam, qual)][t]))
        return out

    def sorted_rows(self):
        return sorted(self.rows)

    def scan(self, start=b'', stop=b'', columns=None, ts=None,
             reversed_=False, filt=None, batch=None, page=None):
        """A thrift1 scan (1 version per column).  Returns [(row, [Cell])].

        filt(row, cells) -> list of cells to keep, None (row filtered out)
        or STOP (row filtered out and the scan ends).  page: PageFilter
        applied after filt (counts the rows that survive it).
        """
        rows = self.sorted_rows()
        if reversed_:
            rows = [r for r in reversed(rows)
                    if (not start or r <= start) and (not stop or r > stop)]
        else:
            rows = [r for r in rows
                    if r >= start and (not stop or r < stop)]
        out = []
        for r in rows:
            cells = self.cells(r, columns, ts, 1)
            if not cells:
                continue
            if filt is not None:
                res = filt(r, cells)
                if res is STOP:
                    break
                if not res:
                    continue
                cells = res
            out.append((r, cells))
            if page is not None and len(out) >= page:
                break
        if batch:
            chunked = []
            for r, cells in out:
                for i in range(0, len(cells), batch):
                    chunked.append((r, cells[i:i + batch]))
            out = chunked
        return out


class Model(object):
    def __init__(self):
        self.tables = {}

    def create(self, name, families):
        t = Table(name, families)
        self.tables[name] = t
        return t


# ---------------------------------------------------------------------------
# Filter model (HBase filter language semantics, reference section 5).
# A filter is f(row, cells) -> kept cells | None | STOP.

class _Stop(object):
    def __repr__(self):
        return 'STOP'


STOP = _Stop()


def compare_passes(op, ctype, cval, data):
    """CompareFilter semantics: does `data` PASS `op` against the comparator?

    BinaryComparator: Bytes.compareTo(cval, data); BinaryPrefixComparator
    compares only up to len(cval); the filter keeps data when data OP cval.
    regexstring: find() anywhere; substring: case-insensitive contains;
    both yield 0 (= "equal") on a match.
    """
    if ctype == 'binary':
        c = (cval > data) - (cval < data)
    elif ctype == 'binaryprefix':
        d = data[:len(cval)]
        c = (cval > d) - (cval < d)
    elif ctype == 'regexstring':
        c = 0 if re.search(cval, data) else 1
    elif ctype == 'substring':
        c = 0 if cval.lower() in data.lower() else 1
    else:
        raise ValueError(ctype)
    # c = compare(comparator, data); keep data when data OP comparator.
    return {
        '<': c > 0, '<=': c >= 0, '=': c == 0, '!=': c != 0,
        '>=': c <= 0, '>': c < 0,
    }[op]


def row_filter(pred, stop_when=None):
    """A row-key filter: keep whole rows where pred(row); optionally STOP."""
    def f(row, cells):
        if stop_when is not None and stop_when(row):
            return STOP
        return list(cells) if pred(row) else None
    return f


def cell_filter(pred):
    """A stateless cell filter: keep cells where pred(cell); row out if none."""
    def f(row, cells):
        kept = [c for c in cells if pred(c)]
        return kept or None
    return f


def row_cells(fn):
    """fn(row, cells) -> cells or None; for stateful per-row filters."""
    def f(row, cells):
        kept = fn(row, list(cells))
        return kept or None
    return f


def f_and(*fs):
    def f(row, cells):
        cur = list(cells)
        for sub in fs:
            res = sub(row, cur)
            if res is STOP:
                return STOP
            if not res:
                return None
            cur = res
        return cur
    return f


def f_or(*fs):
    def f(row, cells):
        keep = set()
        any_kept = False
        for sub in fs:
            res = sub(row, cells)
            if res is STOP or not res:
                continue
            any_kept = True
            keep.update(id(c) for c in res)
        if not any_kept:
            return None
        return [c for c in cells if id(c) in keep]
    return f


def f_skip(sub):
    """SkipFilter: the row is out if the wrapped filter drops any cell."""
    def f(row, cells):
        res = sub(row, cells)
        if res is STOP or not res or len(res) != len(cells):
            return None
        return list(cells)
    return f


def f_while(sub):
    """WhileMatchFilter over a row-level filter: the first row it drops
    ends the scan."""
    def f(row, cells):
        res = sub(row, cells)
        if res is STOP or not res:
            return STOP
        return res
    return f


# Concrete filters --------------------------------------------------------

def PrefixFilter(p, reversed_=False):
    if reversed_:
        return row_filter(lambda r: r.startswith(p),
                          lambda r: r[:len(p)] < p)
    return row_filter(lambda r: r.startswith(p), lambda r: r[:len(p)] > p)


def RowFilter(op, ctype, cval):
    return row_filter(lambda r: compare_passes(op, ctype, cval, r))


def InclusiveStopFilter(stop, reversed_=False):
    if reversed_:
        return row_filter(lambda r: True, lambda r: r < stop)
    return row_filter(lambda r: True, lambda r: r > stop)


def FamilyFilter(op, ctype, cval):
    return cell_filter(lambda c: compare_passes(op, ctype, cval, c.fam))


def QualifierFilter(op, ctype, cval):
    return cell_filter(lambda c: compare_passes(op, ctype, cval, c.qual))


def ValueFilter(op, ctype, cval):
    return cell_filter(lambda c: compare_passes(op, ctype, cval, c.value))


def ColumnPrefixFilter(p):
    return cell_filter(lambda c: c.qual.startswith(p))


def MultipleColumnPrefixFilter(*ps):
    return cell_filter(lambda c: any(c.qual.startswith(p) for p in ps))


def ColumnRangeFilter(lo, lo_incl, hi, hi_incl):
    def pred(c):
        q = c.qual
        if lo is not None and (q < lo or (q == lo and not lo_incl)):
            return False
        if hi is not None and (q > hi or (q == hi and not hi_incl)):
            return False
        return True
    return cell_filter(pred)


def TimestampsFilter(*tss):
    return cell_filter(lambda c: c.ts in tss)


def KeyOnlyFilter(len_as_val=False):
    import struct

    def fn(row, cells):
        return [Cell(c.fam, c.qual, c.ts,
                     struct.pack('>i', len(c.value)) if len_as_val else b'')
                for c in cells]
    return row_cells(fn)


def FirstKeyOnlyFilter():
    return row_cells(lambda row, cells: cells[:1])


def ColumnCountGetFilter(n):
    # One version per column (INCLUDE_AND_NEXT_COL); first n columns.
    return row_cells(lambda row, cells: cells[:n])


def ColumnPaginationFilter(limit, offset):
    return row_cells(lambda row, cells: cells[offset:offset + limit])


def SingleColumnValueFilter(fam, qual, op, ctype, cval, if_missing=False):
    def fn(row, cells):
        target = [c for c in cells if c.fam == fam and c.qual == qual]
        if not target:
            return None if if_missing else cells
        return cells if compare_passes(op, ctype, cval, target[0].value) else None
    return row_cells(fn)
