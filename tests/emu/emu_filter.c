/* emu_filter.c: HBase filter semantics (Filter, FilterList, scanner loop) on rows. */
#include <stdlib.h>
#include <string.h>

#include "emu_filter.h"
#include "filter.h"

/*
 * Each node mirrors one HBase Filter object: filterAllRemaining,
 * filterRowKey, filterCell, transformCell, filterRowCells, filterRow,
 * reset, getNextCellHint, with the same state and the same return codes.
 * emu_filter_row then plays RegionScanner/StoreScanner around them: the
 * row-key check, the per-cell loop that honours NEXT_COL/NEXT_ROW/hints
 * inside one family (one store), then filterRowCells and filterRow.
 */

typedef enum {
    EF_INCLUDE = 0,
    EF_INCLUDE_NEXT_COL,
    EF_INCLUDE_NEXT_ROW, /* INCLUDE_AND_SEEK_NEXT_ROW */
    EF_SKIP,
    EF_NEXT_COL,
    EF_NEXT_ROW,
    EF_HINT, /* SEEK_NEXT_USING_HINT */
} ef_rc;

#define EF_NO_RC (-1)

/* First-on-column position: the family and qualifier of a seek target. */
struct ef_hint {
    const uint8_t *fam;
    size_t fam_len;
    const uint8_t *qual;
    size_t qual_len;
};

struct ef_node {
    filter_node_kind_t kind;
    struct filter_params p; /* points into the kept AST */
    GRegex *regex;          /* regexstring comparator */
    gchar *needle;          /* substring comparator, lower case */
    size_t needle_len;
    struct filter_bytes *prefixes; /* MultipleColumnPrefix, sorted */
    guint nprefixes;
    gint64 *stamps; /* TimestampsFilter, as given */
    guint nstamps;
    gint64 min_stamp;
    struct ef_node **kids;
    guint nkids;
    gboolean reversed;
    /* state */
    gboolean flag;  /* Prefix/Row filterRow, SKIP filterRow, WHILE latch,
                           * FirstKeyOnly foundKV, InclusiveStop done,
                           * SCVF foundColumn, ColumnValue columnFound */
    gboolean flag2; /* Prefix passedPrefix, SCVF matchedColumn */
    gint64 count;   /* Page rowsAccepted, column counters */
    const struct filter_bytes *hint;   /* MultipleColumnPrefix next prefix */
    GArray *dep_stamps;                /* DependentColumnFilter stampSet */
    int *last_rc;                      /* lists: each kid's last return code */
    const struct emu_cell **prev_cell; /* OR: cell a kid asked to skip past */
    gboolean *included;                /* OR: kid included the current cell */
};

struct emu_filter {
    struct filter_node *ast;
    struct ef_node *root;
    gboolean done; /* a store scanner said DONE_SCAN */
};

/* ---- comparisons ---- */

static int ef_bytes_cmp(const uint8_t *a, size_t alen, const uint8_t *b,
                        size_t blen)
{
    size_t n = MIN(alen, blen);
    int c = n > 0 ? memcmp(a, b, n) : 0;

    if (c != 0) {
        return c;
    }
    return alen < blen ? -1 : alen > blen ? 1 : 0;
}

static gboolean ef_starts_with(const uint8_t *d, size_t len,
                               const struct filter_bytes *pre)
{
    return len >= pre->len &&
           (pre->len == 0 || memcmp(d, pre->data, pre->len) == 0);
}

/* ByteArrayComparable.compareTo(data): comparator value against the data. */
static int ef_comparator(const struct ef_node *n, const uint8_t *d, size_t len)
{
    const struct filter_comparator *c = &n->p.cmp;
    static const uint8_t empty[1];

    if (d == NULL) {
        d = empty;
    }
    switch (c->type) {
    case FILTER_CMP_BINARY:
        return ef_bytes_cmp(c->value, c->len, d, len);
    case FILTER_CMP_BINARY_PREFIX:
        return ef_bytes_cmp(c->value, c->len, d, MIN(c->len, len));
    case FILTER_CMP_REGEX:
        return g_regex_match_full(n->regex, (const gchar *)d, (gssize)len, 0,
                                  0, NULL, NULL)
                   ? 0
                   : 1;
    case FILTER_CMP_SUBSTRING:
        if (n->needle_len == 0) {
            return 0;
        }
        for (size_t i = 0; i + n->needle_len <= len; i++) {
            size_t k = 0;

            while (k < n->needle_len &&
                   g_ascii_tolower((gchar)d[i + k]) == n->needle[k]) {
                k++;
            }
            if (k == n->needle_len) {
                return 0;
            }
        }
        return 1;
    }
    return 1;
}

/* CompareFilter.compare: TRUE when the cell (or row) is filtered out. */
static gboolean ef_compare_out(const struct ef_node *n, const uint8_t *d,
                               size_t len)
{
    int r;

    if (n->p.op == FILTER_OP_NONE) {
        return TRUE;
    }
    r = ef_comparator(n, d, len);
    switch (n->p.op) {
    case FILTER_OP_LESS:
        return r <= 0;
    case FILTER_OP_LESS_OR_EQUAL:
        return r < 0;
    case FILTER_OP_EQUAL:
        return r != 0;
    case FILTER_OP_NOT_EQUAL:
        return r == 0;
    case FILTER_OP_GREATER_OR_EQUAL:
        return r > 0;
    case FILTER_OP_GREATER:
        return r >= 0;
    case FILTER_OP_NONE:
        break;
    }
    return TRUE;
}

static gboolean ef_same_family(const struct emu_cell *a,
                               const struct emu_cell *b)
{
    return ef_bytes_cmp(a->family, a->family_len, b->family, b->family_len) ==
           0;
}

static gboolean ef_same_column(const struct emu_cell *a,
                               const struct emu_cell *b)
{
    return ef_same_family(a, b) &&
           ef_bytes_cmp(a->qualifier, a->qualifier_len, b->qualifier,
                        b->qualifier_len) == 0;
}

static gboolean ef_is_column(const struct emu_cell *c,
                             const struct filter_bytes *fam,
                             const struct filter_bytes *qual)
{
    return ef_bytes_cmp(c->family, c->family_len, fam->data, fam->len) == 0 &&
           ef_bytes_cmp(c->qualifier, c->qualifier_len, qual->data,
                        qual->len) == 0;
}

/* Cell against a first-on-column hint; equal columns sort after the hint. */
static int ef_cell_vs_hint(const struct emu_cell *c, const struct ef_hint *h)
{
    int r = ef_bytes_cmp(c->family, c->family_len, h->fam, h->fam_len);

    if (r != 0) {
        return r;
    }
    r = ef_bytes_cmp(c->qualifier, c->qualifier_len, h->qual, h->qual_len);
    return r != 0 ? r : 1;
}

static int ef_hint_cmp(const struct ef_hint *a, const struct ef_hint *b)
{
    int r = ef_bytes_cmp(a->fam, a->fam_len, b->fam, b->fam_len);

    return r != 0 ? r
                  : ef_bytes_cmp(a->qual, a->qual_len, b->qual, b->qual_len);
}

/* ---- return-code merging (FilterListWithAND / WithOR) ---- */

static gboolean ef_rc_includes(int rc)
{
    return rc == EF_INCLUDE || rc == EF_INCLUDE_NEXT_COL ||
           rc == EF_INCLUDE_NEXT_ROW;
}

/* How far a code skips: 0 this cell, 1 the column, 2 the row (family). */
static int ef_rc_extent(int rc)
{
    switch (rc) {
    case EF_INCLUDE_NEXT_COL:
    case EF_NEXT_COL:
        return 1;
    case EF_INCLUDE_NEXT_ROW:
    case EF_NEXT_ROW:
        return 2;
    default:
        return 0;
    }
}

static ef_rc ef_rc_make(gboolean include, int extent)
{
    static const ef_rc inc[] = { EF_INCLUDE, EF_INCLUDE_NEXT_COL,
                                 EF_INCLUDE_NEXT_ROW };
    static const ef_rc exc[] = { EF_SKIP, EF_NEXT_COL, EF_NEXT_ROW };

    return include ? inc[extent] : exc[extent];
}

/* MUST_PASS_ALL: included only if all include; skip as far as the farthest. */
static ef_rc ef_merge_and(ef_rc rc, ef_rc local)
{
    return ef_rc_make(ef_rc_includes(rc) && ef_rc_includes(local),
                      MAX(ef_rc_extent(rc), ef_rc_extent(local)));
}

/* MUST_PASS_ONE: included if any includes; skip only as far as the nearest. */
static ef_rc ef_merge_or(ef_rc rc, ef_rc local)
{
    return ef_rc_make(ef_rc_includes(rc) || ef_rc_includes(local),
                      MIN(ef_rc_extent(rc), ef_rc_extent(local)));
}

/* ---- the Filter methods ---- */

static gboolean ef_all_remaining(const struct ef_node *n)
{
    switch (n->kind) {
    case FILTER_NODE_AND:
        for (guint i = 0; i < n->nkids; i++) {
            if (ef_all_remaining(n->kids[i])) {
                return TRUE;
            }
        }
        return FALSE;
    case FILTER_NODE_OR:
        for (guint i = 0; i < n->nkids; i++) {
            if (!ef_all_remaining(n->kids[i])) {
                return FALSE;
            }
        }
        return n->nkids > 0;
    case FILTER_NODE_SKIP:
        return FALSE; /* SkipFilter does not delegate this */
    case FILTER_NODE_WHILE:
        return n->flag || ef_all_remaining(n->kids[0]);
    case FILTER_NODE_LEAF:
        break;
    }
    switch (n->p.type) {
    case FILTER_TYPE_PREFIX:
        return n->flag2;
    case FILTER_TYPE_INCLUSIVE_STOP:
        return n->flag;
    case FILTER_TYPE_PAGE:
        return n->count >= n->p.limit;
    case FILTER_TYPE_COLUMN_COUNT_GET:
        return n->count > n->p.limit;
    default:
        return FALSE;
    }
}

/* filterRowKey: TRUE drops the row before any cell is looked at. */
static gboolean ef_row_key(struct ef_node *n, const uint8_t *row, size_t len)
{
    gboolean ret;
    int cmp;

    switch (n->kind) {
    case FILTER_NODE_AND:
        /* Every child sees the row: PrefixFilter and friends keep state. */
        ret = FALSE;
        for (guint i = 0; i < n->nkids; i++) {
            if (ef_all_remaining(n->kids[i]) ||
                ef_row_key(n->kids[i], row, len)) {
                ret = TRUE;
            }
        }
        return ret;
    case FILTER_NODE_OR:
        ret = TRUE;
        for (guint i = 0; i < n->nkids; i++) {
            if (!ef_all_remaining(n->kids[i]) &&
                !ef_row_key(n->kids[i], row, len)) {
                ret = FALSE;
            }
        }
        return ret;
    case FILTER_NODE_SKIP:
        return FALSE;
    case FILTER_NODE_WHILE:
        if (ef_all_remaining(n)) {
            return TRUE;
        }
        ret = ef_row_key(n->kids[0], row, len);
        n->flag = n->flag || ret;
        return ret;
    case FILTER_NODE_LEAF:
        break;
    }
    switch (n->p.type) {
    case FILTER_TYPE_PREFIX:
        if (ef_all_remaining(n) || len < n->p.bytes.len) {
            return TRUE;
        }
        cmp = ef_bytes_cmp(row, n->p.bytes.len, n->p.bytes.data,
                           n->p.bytes.len);
        if ((!n->reversed && cmp > 0) || (n->reversed && cmp < 0)) {
            n->flag2 = TRUE;
        }
        n->flag = cmp != 0;
        return n->flag;
    case FILTER_TYPE_INCLUSIVE_STOP:
        if (ef_all_remaining(n)) {
            return TRUE;
        }
        cmp = ef_bytes_cmp(row, len, n->p.bytes.data, n->p.bytes.len);
        n->flag = n->reversed ? cmp < 0 : cmp > 0;
        return n->flag;
    case FILTER_TYPE_ROW:
        if (ef_compare_out(n, row, len)) {
            n->flag = TRUE;
        }
        return n->flag;
    default:
        return ef_all_remaining(n);
    }
}

static gboolean ef_hint_of(struct ef_node *n, const struct emu_cell *c,
                           struct ef_hint *h);
static ef_rc ef_cell(struct ef_node *n, const struct emu_cell *c);

/*
 * FilterListWithOR.calculateReturnCodeByPrevCellAndRC: a child that asked
 * to skip past this cell answers again without being asked, so its state
 * does not move.  EF_NO_RC means "ask it".
 */
static int ef_or_prev_rc(struct ef_node *n, guint i, const struct emu_cell *c)
{
    const struct emu_cell *prev = n->prev_cell[i];
    struct ef_hint h;

    if (prev == NULL || n->last_rc[i] == EF_NO_RC) {
        return EF_NO_RC;
    }
    switch (n->last_rc[i]) {
    case EF_HINT:
        return ef_hint_of(n->kids[i], prev, &h) && ef_cell_vs_hint(c, &h) < 0
                   ? EF_HINT
                   : EF_NO_RC;
    case EF_NEXT_COL:
    case EF_INCLUDE_NEXT_COL:
        return ef_same_column(prev, c) ? EF_NEXT_COL : EF_NO_RC;
    case EF_NEXT_ROW:
    case EF_INCLUDE_NEXT_ROW:
        return ef_same_family(prev, c) ? EF_NEXT_ROW : EF_NO_RC;
    default:
        return EF_NO_RC;
    }
}

static ef_rc ef_cell_list(struct ef_node *n, const struct emu_cell *c)
{
    ef_rc rc = EF_INCLUDE, local;
    gboolean any = FALSE, all_hint = TRUE, some_hint = FALSE;

    if (n->nkids == 0) {
        return EF_INCLUDE;
    }
    if (n->kind == FILTER_NODE_AND) {
        for (guint i = 0; i < n->nkids; i++) {
            n->last_rc[i] = EF_NO_RC;
        }
    }
    for (guint i = 0; i < n->nkids; i++) {
        struct ef_node *k = n->kids[i];

        if (n->kind == FILTER_NODE_AND) {
            if (ef_all_remaining(k)) {
                return EF_NEXT_ROW;
            }
            local = ef_cell(k, c);
            n->last_rc[i] = local;
            some_hint = some_hint || local == EF_HINT;
            rc = ef_merge_and(rc, local == EF_HINT ? EF_SKIP : local);
            continue;
        }
        n->included[i] = FALSE;
        if (ef_all_remaining(k)) {
            continue;
        }
        local = (ef_rc)ef_or_prev_rc(n, i, c);
        if ((int)local == EF_NO_RC) {
            local = ef_cell(k, c);
        }
        n->last_rc[i] = local;
        n->prev_cell[i] = (local == EF_INCLUDE || local == EF_SKIP) ? NULL : c;
        if (local != EF_HINT) {
            all_hint = FALSE;
        }
        rc = any ? ef_merge_or(rc, local == EF_HINT ? EF_SKIP : local)
                 : (local == EF_HINT ? EF_SKIP : local);
        any = TRUE;
        n->included[i] = ef_rc_includes(local);
    }
    if (n->kind == FILTER_NODE_AND) {
        return some_hint ? EF_HINT : rc;
    }
    if (all_hint) {
        return EF_HINT;
    }
    return any ? rc : EF_SKIP;
}

/* MultipleColumnPrefixFilter.filterColumn, quirks included. */
static ef_rc ef_cell_multi_prefix(struct ef_node *n, const struct emu_cell *c)
{
    guint le = 0; /* how many prefixes sort <= the qualifier */

    if (n->nprefixes == 0) {
        return EF_INCLUDE;
    }
    while (le < n->nprefixes &&
           ef_bytes_cmp(n->prefixes[le].data, n->prefixes[le].len,
                        c->qualifier, c->qualifier_len) <= 0) {
        le++;
    }
    if (le == 0) {
        n->hint = &n->prefixes[0];
        return EF_HINT;
    }
    if (ef_starts_with(c->qualifier, c->qualifier_len, &n->prefixes[le - 1])) {
        return EF_INCLUDE;
    }
    if (le == n->nprefixes) {
        return EF_NEXT_ROW;
    }
    n->hint = &n->prefixes[le];
    return EF_HINT;
}

static ef_rc ef_cell(struct ef_node *n, const struct emu_cell *c)
{
    const struct filter_params *p = &n->p;
    ef_rc rc;
    int cmp;

    switch (n->kind) {
    case FILTER_NODE_AND:
    case FILTER_NODE_OR:
        return ef_cell_list(n, c);
    case FILTER_NODE_SKIP:
    case FILTER_NODE_WHILE:
        rc = ef_cell(n->kids[0], c);
        /* Anything but a plain INCLUDE counts as "filtered". */
        n->flag = n->flag || rc != EF_INCLUDE;
        return rc;
    case FILTER_NODE_LEAF:
        break;
    }
    switch (p->type) {
    case FILTER_TYPE_FIRST_KEY_ONLY:
        if (n->flag) {
            return EF_NEXT_ROW;
        }
        n->flag = TRUE;
        return EF_INCLUDE;
    case FILTER_TYPE_PREFIX:
    case FILTER_TYPE_INCLUSIVE_STOP:
    case FILTER_TYPE_ROW:
        return n->flag ? EF_NEXT_ROW : EF_INCLUDE;
    case FILTER_TYPE_COLUMN_COUNT_GET:
        n->count++;
        return ef_all_remaining(n) ? EF_NEXT_COL : EF_INCLUDE_NEXT_COL;
    case FILTER_TYPE_COLUMN_PAGINATION:
        if (n->count >= p->offset + p->limit) {
            return EF_NEXT_ROW;
        }
        rc = n->count < p->offset ? EF_NEXT_COL : EF_INCLUDE_NEXT_COL;
        n->count++;
        return rc;
    case FILTER_TYPE_COLUMN_PREFIX:
        if (c->qualifier_len < p->bytes.len) {
            cmp = ef_bytes_cmp(c->qualifier, c->qualifier_len, p->bytes.data,
                               c->qualifier_len);
            return cmp <= 0 ? EF_HINT : EF_NEXT_ROW;
        }
        cmp = ef_bytes_cmp(c->qualifier, p->bytes.len, p->bytes.data,
                           p->bytes.len);
        return cmp < 0 ? EF_HINT : cmp > 0 ? EF_NEXT_ROW : EF_INCLUDE;
    case FILTER_TYPE_MULTIPLE_COLUMN_PREFIX:
        return ef_cell_multi_prefix(n, c);
    case FILTER_TYPE_COLUMN_RANGE:
        cmp = 1;
        if (p->min_column.len > 0) {
            cmp = ef_bytes_cmp(c->qualifier, c->qualifier_len,
                               p->min_column.data, p->min_column.len);
        }
        if (cmp < 0) {
            return EF_HINT;
        }
        if (!p->min_inclusive && cmp == 0) {
            return EF_NEXT_COL;
        }
        if (p->max_column.len == 0) {
            return EF_INCLUDE;
        }
        cmp = ef_bytes_cmp(c->qualifier, c->qualifier_len, p->max_column.data,
                           p->max_column.len);
        if ((p->max_inclusive && cmp <= 0) || (!p->max_inclusive && cmp < 0)) {
            return EF_INCLUDE;
        }
        return EF_NEXT_ROW;
    case FILTER_TYPE_TIMESTAMPS:
        for (guint i = 0; i < n->nstamps; i++) {
            if (n->stamps[i] == c->timestamp) {
                return EF_INCLUDE;
            }
        }
        return c->timestamp < n->min_stamp ? EF_NEXT_COL : EF_SKIP;
    case FILTER_TYPE_FAMILY:
        if (c->family_len > 0 && ef_compare_out(n, c->family, c->family_len)) {
            return EF_NEXT_ROW;
        }
        return EF_INCLUDE;
    case FILTER_TYPE_QUALIFIER:
        return ef_compare_out(n, c->qualifier, c->qualifier_len) ? EF_SKIP
                                                                 : EF_INCLUDE;
    case FILTER_TYPE_VALUE:
        return ef_compare_out(n, c->value, c->value_len) ? EF_SKIP
                                                         : EF_INCLUDE;
    case FILTER_TYPE_SINGLE_COLUMN_VALUE:
    case FILTER_TYPE_SINGLE_COLUMN_VALUE_EXCLUDE:
        if (n->flag2) {
            return EF_INCLUDE;
        }
        if (p->latest_version_only && n->flag) {
            return EF_NEXT_ROW;
        }
        if (!ef_is_column(c, &p->family, &p->qualifier)) {
            return EF_INCLUDE;
        }
        n->flag = TRUE;
        if (ef_compare_out(n, c->value, c->value_len)) {
            return p->latest_version_only ? EF_NEXT_ROW : EF_INCLUDE;
        }
        n->flag2 = TRUE;
        return EF_INCLUDE;
    case FILTER_TYPE_DEPENDENT_COLUMN:
        if (!ef_is_column(c, &p->family, &p->qualifier)) {
            return EF_INCLUDE;
        }
        if (p->op != FILTER_OP_NONE &&
            ef_compare_out(n, c->value, c->value_len)) {
            return EF_SKIP;
        }
        g_array_append_val(n->dep_stamps, c->timestamp);
        return p->drop_dependent ? EF_SKIP : EF_INCLUDE;
    case FILTER_TYPE_COLUMN_VALUE:
        if (!ef_is_column(c, &p->family, &p->qualifier)) {
            return n->flag ? EF_NEXT_ROW : EF_NEXT_COL;
        }
        n->flag = TRUE;
        return ef_compare_out(n, c->value, c->value_len) ? EF_SKIP
                                                         : EF_INCLUDE;
    default: /* KeyOnly, Page */
        return EF_INCLUDE;
    }
}

/* getNextCellHint; FALSE for "no hint" (the scanner just moves on). */
static gboolean ef_hint_of(struct ef_node *n, const struct emu_cell *c,
                           struct ef_hint *h)
{
    gboolean have = FALSE;
    struct ef_hint k;

    h->fam = c->family;
    h->fam_len = c->family_len;
    switch (n->kind) {
    case FILTER_NODE_AND:
        for (guint i = 0; i < n->nkids; i++) {
            if (n->last_rc[i] != EF_HINT || ef_all_remaining(n->kids[i]) ||
                !ef_hint_of(n->kids[i], c, &k)) {
                continue;
            }
            if (!have || ef_hint_cmp(h, &k) < 0) {
                *h = k;
            }
            have = TRUE;
        }
        return have;
    case FILTER_NODE_OR:
        for (guint i = 0; i < n->nkids; i++) {
            if (ef_all_remaining(n->kids[i])) {
                continue;
            }
            if (!ef_hint_of(n->kids[i], c, &k)) {
                return FALSE;
            }
            if (!have || ef_hint_cmp(h, &k) > 0) {
                *h = k;
            }
            have = TRUE;
        }
        return have;
    case FILTER_NODE_SKIP:
    case FILTER_NODE_WHILE:
        return FALSE; /* the wrappers keep FilterBase's null hint */
    case FILTER_NODE_LEAF:
        break;
    }
    switch (n->p.type) {
    case FILTER_TYPE_COLUMN_PREFIX:
        h->qual = n->p.bytes.data;
        h->qual_len = n->p.bytes.len;
        return TRUE;
    case FILTER_TYPE_COLUMN_RANGE:
        h->qual = n->p.min_column.data;
        h->qual_len = n->p.min_column.len;
        return TRUE;
    case FILTER_TYPE_MULTIPLE_COLUMN_PREFIX:
        if (n->hint == NULL) {
            return FALSE;
        }
        h->qual = n->hint->data;
        h->qual_len = n->hint->len;
        return TRUE;
    default:
        return FALSE;
    }
}

/* transformCell: only KeyOnlyFilter changes a cell. */
static void ef_transform(struct ef_node *n, struct emu_cell *c)
{
    switch (n->kind) {
    case FILTER_NODE_AND:
        for (guint i = 0; i < n->nkids; i++) {
            ef_transform(n->kids[i], c);
        }
        return;
    case FILTER_NODE_OR:
        for (guint i = 0; i < n->nkids; i++) {
            if (n->included[i]) {
                ef_transform(n->kids[i], c);
            }
        }
        return;
    case FILTER_NODE_SKIP:
    case FILTER_NODE_WHILE:
        ef_transform(n->kids[0], c);
        return;
    case FILTER_NODE_LEAF:
        break;
    }
    if (n->p.type != FILTER_TYPE_KEY_ONLY) {
        return;
    }
    if (n->p.len_as_value) {
        guint32 be = GUINT32_TO_BE((guint32)c->value_len);

        memcpy(c->lenbuf, &be, 4);
        c->value_len = 4;
    } else {
        c->value_len = 0;
    }
    c->value = c->lenbuf;
}

/* filterRowCells: drops cells from the kept set. */
static void ef_row_cells(struct ef_node *n, struct emu_cell *cells,
                         size_t ncells, gboolean *keep)
{
    switch (n->kind) {
    case FILTER_NODE_AND:
    case FILTER_NODE_OR:
        for (guint i = 0; i < n->nkids; i++) {
            ef_row_cells(n->kids[i], cells, ncells, keep);
        }
        return;
    case FILTER_NODE_SKIP:
    case FILTER_NODE_WHILE:
        return; /* neither wrapper forwards filterRowCells */
    case FILTER_NODE_LEAF:
        break;
    }
    for (size_t i = 0; i < ncells; i++) {
        if (!keep[i]) {
            continue;
        }
        if (n->p.type == FILTER_TYPE_SINGLE_COLUMN_VALUE_EXCLUDE &&
            ef_is_column(&cells[i], &n->p.family, &n->p.qualifier)) {
            keep[i] = FALSE;
        }
        if (n->p.type == FILTER_TYPE_DEPENDENT_COLUMN) {
            gboolean seen = FALSE;

            for (guint k = 0; k < n->dep_stamps->len && !seen; k++) {
                seen = g_array_index(n->dep_stamps, gint64, k) ==
                       cells[i].timestamp;
            }
            keep[i] = seen;
        }
    }
}

/* filterRow: TRUE drops the whole row after its cells were seen. */
static gboolean ef_filter_row(struct ef_node *n)
{
    gboolean ret;

    switch (n->kind) {
    case FILTER_NODE_AND:
        for (guint i = 0; i < n->nkids; i++) {
            if (ef_filter_row(n->kids[i])) {
                return TRUE;
            }
        }
        return FALSE;
    case FILTER_NODE_OR:
        for (guint i = 0; i < n->nkids; i++) {
            if (!ef_filter_row(n->kids[i])) {
                return FALSE;
            }
        }
        return TRUE;
    case FILTER_NODE_SKIP:
        return n->flag;
    case FILTER_NODE_WHILE:
        ret = ef_filter_row(n->kids[0]);
        n->flag = n->flag || ret;
        return ret;
    case FILTER_NODE_LEAF:
        break;
    }
    switch (n->p.type) {
    case FILTER_TYPE_PREFIX:
    case FILTER_TYPE_ROW:
        return n->flag;
    case FILTER_TYPE_PAGE:
        n->count++;
        return n->count > n->p.limit;
    case FILTER_TYPE_SINGLE_COLUMN_VALUE:
    case FILTER_TYPE_SINGLE_COLUMN_VALUE_EXCLUDE:
        return n->flag ? !n->flag2 : n->p.filter_if_missing;
    default:
        return FALSE;
    }
}

static void ef_reset(struct ef_node *n)
{
    for (guint i = 0; i < n->nkids; i++) {
        ef_reset(n->kids[i]);
        if (n->kind == FILTER_NODE_OR) {
            n->prev_cell[i] = NULL;
            n->last_rc[i] = EF_NO_RC;
        }
    }
    switch (n->kind) {
    case FILTER_NODE_SKIP:
        n->flag = FALSE;
        return;
    case FILTER_NODE_LEAF:
        break;
    default:
        return; /* WHILE's latch outlives rows */
    }
    switch (n->p.type) {
    case FILTER_TYPE_PREFIX:
        n->flag = TRUE;
        break;
    case FILTER_TYPE_FIRST_KEY_ONLY:
    case FILTER_TYPE_ROW:
    case FILTER_TYPE_COLUMN_VALUE:
        n->flag = FALSE;
        break;
    case FILTER_TYPE_COLUMN_COUNT_GET:
    case FILTER_TYPE_COLUMN_PAGINATION:
        n->count = 0;
        break;
    case FILTER_TYPE_SINGLE_COLUMN_VALUE:
    case FILTER_TYPE_SINGLE_COLUMN_VALUE_EXCLUDE:
        n->flag = n->flag2 = FALSE;
        break;
    case FILTER_TYPE_DEPENDENT_COLUMN:
        g_array_set_size(n->dep_stamps, 0);
        break;
    default:
        break;
    }
}

/* ---- building ---- */

static void ef_node_free(struct ef_node *n)
{
    if (n == NULL) {
        return;
    }
    for (guint i = 0; i < n->nkids; i++) {
        ef_node_free(n->kids[i]);
    }
    g_free(n->kids);
    if (n->regex != NULL) {
        g_regex_unref(n->regex);
    }
    g_free(n->needle);
    g_free(n->prefixes);
    g_free(n->stamps);
    if (n->dep_stamps != NULL) {
        g_array_unref(n->dep_stamps);
    }
    g_free(n->last_rc);
    g_free(n->prev_cell);
    g_free(n->included);
    g_free(n);
}

static int ef_prefix_order(gconstpointer a, gconstpointer b)
{
    const struct filter_bytes *x = a, *y = b;

    return ef_bytes_cmp(x->data, x->len, y->data, y->len);
}

/* Java's Pattern sees the comparator as text; PCRE needs NUL spelled out. */
static gboolean ef_compile_regex(struct ef_node *n,
                                 const struct filter_node *leaf,
                                 GError **error)
{
    GString *pat = g_string_sized_new(n->p.cmp.len + 8);
    GError *inner = NULL;

    for (size_t i = 0; i < n->p.cmp.len; i++) {
        if (n->p.cmp.value[i] == 0) {
            g_string_append(pat, "\\x00");
        } else {
            g_string_append_c(pat, (gchar)n->p.cmp.value[i]);
        }
    }
    n->regex = g_regex_new(pat->str, G_REGEX_RAW | G_REGEX_DOTALL, 0, &inner);
    g_string_free(pat, TRUE);
    if (n->regex == NULL) {
        g_autofree uint8_t *text = filter_serialize(leaf, NULL, NULL);

        g_set_error(error, FILTER_ERROR, FILTER_ERROR_ARGUMENTS,
                    "Incorrect filter string %s: %s",
                    text != NULL ? (const char *)text : "", inner->message);
        g_error_free(inner);
        return FALSE;
    }
    return TRUE;
}

static struct ef_node *ef_build(const struct filter_node *fn,
                                gboolean reversed, GError **error)
{
    struct ef_node *n = g_new0(struct ef_node, 1);

    n->kind = fn->kind;
    n->reversed = reversed;
    if (fn->kind != FILTER_NODE_LEAF) {
        n->kids = g_new0(struct ef_node *, MAX(fn->nchildren, 1));
        n->last_rc = g_new(int, MAX(fn->nchildren, 1));
        n->prev_cell = g_new0(const struct emu_cell *, MAX(fn->nchildren, 1));
        n->included = g_new0(gboolean, MAX(fn->nchildren, 1));
        for (guint i = 0; i < fn->nchildren; i++) {
            n->last_rc[i] = EF_NO_RC;
            n->kids[i] = ef_build(fn->children[i], reversed, error);
            if (n->kids[i] == NULL) {
                ef_node_free(n);
                return NULL;
            }
            n->nkids++;
        }
        if ((n->kind == FILTER_NODE_SKIP || n->kind == FILTER_NODE_WHILE) &&
            n->nkids != 1) {
            g_set_error(error, FILTER_ERROR, FILTER_ERROR_SYNTAX,
                        "Incorrect Filter String");
            ef_node_free(n);
            return NULL;
        }
        return n;
    }
    if (!filter_leaf_params(fn, &n->p, error)) {
        ef_node_free(n);
        return NULL;
    }
    if (n->p.op != FILTER_OP_NONE && n->p.cmp.type == FILTER_CMP_REGEX &&
        !ef_compile_regex(n, fn, error)) {
        ef_node_free(n);
        return NULL;
    }
    if (n->p.op != FILTER_OP_NONE && n->p.cmp.type == FILTER_CMP_SUBSTRING) {
        /* By hand: g_ascii_strdown would stop at an embedded NUL. */
        n->needle = g_malloc(n->p.cmp.len + 1);
        for (size_t i = 0; i < n->p.cmp.len; i++) {
            n->needle[i] = g_ascii_tolower((gchar)n->p.cmp.value[i]);
        }
        n->needle[n->p.cmp.len] = '\0';
        n->needle_len = n->p.cmp.len;
    }
    if (n->p.type == FILTER_TYPE_MULTIPLE_COLUMN_PREFIX) {
        n->nprefixes = fn->nargs;
        n->prefixes = g_new(struct filter_bytes, MAX(fn->nargs, 1));
        for (guint i = 0; i < fn->nargs; i++) {
            n->prefixes[i].data = fn->args[i].data;
            n->prefixes[i].len = fn->args[i].len;
        }
        qsort(n->prefixes, n->nprefixes, sizeof(*n->prefixes),
              ef_prefix_order);
    }
    if (n->p.type == FILTER_TYPE_TIMESTAMPS) {
        n->nstamps = fn->nargs;
        n->stamps = g_new(gint64, MAX(fn->nargs, 1));
        n->min_stamp = G_MAXINT64;
        for (guint i = 0; i < fn->nargs; i++) {
            if (!filter_arg_to_int64(&fn->args[i], &n->stamps[i], error)) {
                ef_node_free(n);
                return NULL;
            }
            n->min_stamp = MIN(n->min_stamp, n->stamps[i]);
        }
    }
    if (n->p.type == FILTER_TYPE_DEPENDENT_COLUMN) {
        n->dep_stamps = g_array_new(FALSE, FALSE, sizeof(gint64));
    }
    ef_reset(n);
    return n;
}

emu_filter *emu_filter_compile(const uint8_t *text, size_t len,
                               gboolean reversed, GError **error)
{
    struct filter_node *ast;
    emu_filter *f;

    ast = filter_parse(text, len, FILTER_PARSE_STRICT, error);
    if (ast == NULL) {
        return NULL;
    }
    f = g_new0(emu_filter, 1);
    f->ast = ast;
    f->root = ef_build(ast, reversed, error);
    if (f->root == NULL) {
        emu_filter_free(f);
        return NULL;
    }
    return f;
}

void emu_filter_free(emu_filter *f)
{
    if (f == NULL) {
        return;
    }
    ef_node_free(f->root);
    filter_node_free(f->ast);
    g_free(f);
}

/* Index of the first cell after i's column, or after i's family. */
static size_t ef_skip_from(const struct emu_cell *cells, size_t ncells,
                           size_t i, gboolean whole_family)
{
    size_t j = i + 1;

    while (j < ncells &&
           (whole_family ? ef_same_family(&cells[i], &cells[j])
                         : ef_same_column(&cells[i], &cells[j]))) {
        j++;
    }
    return j;
}

emu_filter_result emu_filter_row(emu_filter *f, const uint8_t *row,
                                 size_t row_len, struct emu_cell *cells,
                                 size_t ncells, gboolean *keep)
{
    struct ef_node *root = f->root;
    gboolean any = FALSE;
    size_t i = 0;

    for (size_t k = 0; k < ncells; k++) {
        keep[k] = FALSE;
    }
    if (f->done || ef_all_remaining(root)) {
        f->done = TRUE;
        return EMU_FILTER_DONE;
    }
    if (ef_row_key(root, row, row_len)) {
        if (ef_all_remaining(root)) {
            f->done = TRUE;
            return EMU_FILTER_DONE;
        }
        ef_reset(root);
        return EMU_FILTER_SKIP;
    }
    while (i < ncells) {
        struct emu_cell *c = &cells[i];
        struct ef_hint h;
        ef_rc rc;

        /* The query matcher asks before every cell: DONE_SCAN. */
        if (ef_all_remaining(root)) {
            f->done = TRUE;
            break;
        }
        rc = ef_cell(root, c);
        if (ef_rc_includes(rc)) {
            ef_transform(root, c);
            keep[i] = TRUE;
        }
        switch (rc) {
        case EF_INCLUDE:
        case EF_SKIP:
            i++;
            break;
        case EF_INCLUDE_NEXT_COL:
        case EF_NEXT_COL:
            i = ef_skip_from(cells, ncells, i, FALSE);
            break;
        case EF_INCLUDE_NEXT_ROW:
        case EF_NEXT_ROW:
            /* NEXT_ROW ends this store's row: the next family goes on. */
            i = ef_skip_from(cells, ncells, i, TRUE);
            break;
        case EF_HINT:
            if (ef_hint_of(root, c, &h) && ef_cell_vs_hint(c, &h) < 0) {
                i++;
                while (i < ncells && ef_cell_vs_hint(&cells[i], &h) < 0) {
                    i++;
                }
            } else {
                i++;
            }
            break;
        }
    }
    for (size_t k = 0; k < ncells; k++) {
        any = any || keep[k];
    }
    if (any) {
        ef_row_cells(root, cells, ncells, keep);
        any = FALSE;
        for (size_t k = 0; k < ncells; k++) {
            any = any || keep[k];
        }
        if (any && ef_filter_row(root)) {
            for (size_t k = 0; k < ncells; k++) {
                keep[k] = FALSE;
            }
            any = FALSE;
        }
    }
    ef_reset(root);
    if (ef_all_remaining(root)) {
        f->done = TRUE;
    }
    if (any) {
        return EMU_FILTER_INCLUDE;
    }
    return f->done ? EMU_FILTER_DONE : EMU_FILTER_SKIP;
}

gboolean emu_filter_all_remaining(const emu_filter *f)
{
    return f->done || ef_all_remaining(f->root);
}

emu_filter_result emu_filter_row_cells(emu_filter *f, const uint8_t *row,
                                       size_t row_len, GArray *cells)
{
    struct emu_cell *cv = (struct emu_cell *)(void *)cells->data;
    g_autofree gboolean *kv = g_new0(gboolean, cells->len + 1);
    emu_filter_result res;
    guint out = 0;

    res = emu_filter_row(f, row, row_len, cv, cells->len, kv);
    if (res != EMU_FILTER_INCLUDE) {
        return res;
    }
    for (guint i = 0; i < cells->len; i++) {
        if (!kv[i]) {
            continue;
        }
        cv[out] = cv[i];
        /* KeyOnlyFilter(true) points value at the cell's own lenbuf:
         * follow it to the new slot */
        if (cv[i].value == cv[i].lenbuf) {
            cv[out].value = cv[out].lenbuf;
        }
        out++;
    }
    g_array_set_size(cells, out);
    return res;
}
