/* emu_store.c: tables of rows kept in HBase order, with versions and delete markers. */
#include "emu_store.h"

#include <string.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif

G_DEFINE_QUARK(emu_store_error_quark, emu_store_error)

/*
 * Layout: a table maps row keys (GTree, unsigned bytewise, shorter first)
 * to rows; a row holds a sorted array of columns (family index, then
 * qualifier); a column holds its versions newest first.  Deletes leave
 * markers as HBase's tombstones do, so a later put with an older
 * timestamp stays hidden until a major compaction drops the markers.
 */

struct emu_key {
    const uint8_t *p;
    size_t len;
};

struct emu_ver {
    int64_t ts;
    uint32_t len;
    uint8_t *data;
};

struct emu_col {
    guint fam; /* index into the table's families */
    uint32_t qual_len;
    uint8_t *qual;
    int64_t del_ts; /* DeleteColumns marker or EMU_NO_MARK */
    guint nver;
    guint cap;
    struct emu_ver *ver; /* newest first */
};

struct emu_row {
    struct emu_key key; /* first member: the GTree key */
    int64_t last_ts;    /* last server-assigned timestamp */
    int64_t del_ts;     /* row marker (Delete(row, ts)) */
    int64_t *fam_del;   /* per-family markers, NULL when none */
    guint ncols;
    guint cap;
    struct emu_col *cols;
    uint8_t keybuf[];
};

struct emu_table {
    gint refcount;
    char *name; /* NUL-terminated; may not hold NUL itself */
    size_t name_len;
    GPtrArray *families;  /* struct emu_family *, sorted by name */
    GPtrArray *values;    /* GBytes *: key, value, ... sorted by key */
    gboolean enabled;     /* under the store lock */
    gboolean dropped;     /* deleted: refs may still exist */
    emu_table *successor; /* after a schema change: the new object */
    int64_t created_ms;
    GRWLock lock;
    GTree *rows;
    guint nregions;
    struct emu_region *regions;
};

struct emu_colspec {
    gboolean any; /* FALSE: no columns named, return all */
    guint nfam;
    uint8_t *mode;     /* per family: 0 none, 1 all, 2 qualifier set */
    GPtrArray **quals; /* per family: GBytes * qualifiers */
};

enum { EMU_COLSPEC_NONE = 0, EMU_COLSPEC_ALL = 1, EMU_COLSPEC_SOME = 2 };

struct emu_store {
    GRWLock lock;           /* guards tables and namespaces */
    GHashTable *tables;     /* char * name -> emu_table * */
    GHashTable *namespaces; /* char * -> its configuration (NULL: none) */
    struct emu_store_config cfg;
};

int64_t emu_store_now_ms(void)
{
    return g_get_real_time() / 1000;
}

int emu_store_bytes_cmp(const uint8_t *a, size_t alen, const uint8_t *b,
                        size_t blen)
{
    int c = MIN(alen, blen) ? memcmp(a, b, MIN(alen, blen)) : 0;

    if (c != 0) {
        return c;
    }
    return alen < blen ? -1 : alen > blen ? 1 : 0;
}

static gint emu_store_key_cmp(gconstpointer a, gconstpointer b)
{
    const struct emu_key *ka = a, *kb = b;

    return emu_store_bytes_cmp(ka->p, ka->len, kb->p, kb->len);
}

static gint emu_store_key_cmp_data(gconstpointer a, gconstpointer b,
                                   gpointer data)
{
    return emu_store_key_cmp(a, b);
}

static gint emu_store_family_cmp(gconstpointer a, gconstpointer b)
{
    const struct emu_family *x = *(const struct emu_family *const *)a;
    const struct emu_family *y = *(const struct emu_family *const *)b;

    return emu_store_bytes_cmp(x->name, x->name_len, y->name, y->name_len);
}

static gint emu_store_str_cmp(gconstpointer a, gconstpointer b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

void emu_store_append_binary(GString *out, const uint8_t *p, size_t len)
{
    static const char keep[] = " `~!@#$%^&*()-_=+[]{}|;:'\",.<>/?";

    for (size_t i = 0; i < len; i++) {
        if (g_ascii_isalnum(p[i]) || (p[i] != 0 && strchr(keep, p[i]))) {
            g_string_append_c(out, (char)p[i]);
        } else {
            g_string_append_printf(out, "\\x%02X", p[i]);
        }
    }
}

gboolean emu_store_parse_column(const uint8_t *col, size_t len,
                                size_t *fam_len, const uint8_t **qual,
                                size_t *qual_len)
{
    const uint8_t *colon = len ? memchr(col, ':', len) : NULL;

    if (colon == NULL) {
        *fam_len = len;
        *qual = NULL;
        *qual_len = 0;
        return FALSE;
    }
    *fam_len = (size_t)(colon - col);
    *qual = colon + 1;
    *qual_len = len - *fam_len - 1;
    return TRUE;
}

/* ---- rows and columns ---- */

static void emu_store_col_clear(struct emu_col *c)
{
    for (guint i = 0; i < c->nver; i++) {
        g_free(c->ver[i].data);
    }
    g_free(c->ver);
    g_free(c->qual);
}

static void emu_store_row_free(gpointer p)
{
    emu_row *r = p;

    for (guint i = 0; i < r->ncols; i++) {
        emu_store_col_clear(&r->cols[i]);
    }
    g_free(r->cols);
    g_free(r->fam_del);
    g_free(r);
}

static emu_row *emu_store_row_new(const uint8_t *key, size_t len)
{
    emu_row *r = g_malloc0(sizeof(*r) + (len ? len : 1));

    memcpy(r->keybuf, key, len);
    r->key.p = r->keybuf;
    r->key.len = len;
    r->last_ts = 0;
    r->del_ts = EMU_NO_MARK;
    return r;
}

static int emu_store_col_cmp(const struct emu_col *c, guint fam,
                             const uint8_t *q, size_t qlen)
{
    if (c->fam != fam) {
        return c->fam < fam ? -1 : 1;
    }
    return emu_store_bytes_cmp(c->qual, c->qual_len, q, qlen);
}

/* Binary search; *pos is the match or the insertion point. */
static gboolean emu_store_col_find(const emu_row *r, guint fam,
                                   const uint8_t *q, size_t qlen, guint *pos)
{
    guint lo = 0, hi = r->ncols;

    while (lo < hi) {
        guint mid = lo + (hi - lo) / 2;
        int c = emu_store_col_cmp(&r->cols[mid], fam, q, qlen);

        if (c == 0) {
            *pos = mid;
            return TRUE;
        }
        if (c < 0) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    *pos = lo;
    return FALSE;
}

static struct emu_col *emu_store_col_get(emu_row *r, guint fam,
                                         const uint8_t *q, size_t qlen)
{
    guint pos;

    if (emu_store_col_find(r, fam, q, qlen, &pos)) {
        return &r->cols[pos];
    }
    if (r->ncols == r->cap) {
        r->cap = r->cap ? r->cap * 2 : 2;
        r->cols = g_renew(struct emu_col, r->cols, r->cap);
    }
    memmove(&r->cols[pos + 1], &r->cols[pos],
            (r->ncols - pos) * sizeof(struct emu_col));
    r->ncols++;
    struct emu_col *c = &r->cols[pos];
    memset(c, 0, sizeof(*c));
    c->fam = fam;
    c->qual_len = (uint32_t)qlen;
    c->qual = g_malloc(qlen ? qlen : 1);
    memcpy(c->qual, q, qlen);
    c->del_ts = EMU_NO_MARK;
    return c;
}

/* Drops versions with ts <= upto. */
static void emu_store_col_delete_upto(struct emu_col *c, int64_t upto)
{
    guint keep = 0;

    /* Newest first: the survivors are a prefix. */
    while (keep < c->nver && c->ver[keep].ts > upto) {
        keep++;
    }
    for (guint i = keep; i < c->nver; i++) {
        g_free(c->ver[i].data);
    }
    c->nver = keep;
}

/*
 * Drops the version at exactly ts (EMU_LATEST_TS: the newest).  Unlike
 * HBase no marker is left, so a later put at that timestamp shows.
 */
static void emu_store_col_delete_at(struct emu_col *c, int64_t ts)
{
    guint v = 0;

    if (ts != EMU_LATEST_TS) {
        while (v < c->nver && c->ver[v].ts != ts) {
            v++;
        }
    }
    if (v >= c->nver) {
        return;
    }
    g_free(c->ver[v].data);
    memmove(&c->ver[v], &c->ver[v + 1],
            (c->nver - v - 1) * sizeof(struct emu_ver));
    c->nver--;
}

static int64_t emu_store_col_mask(const emu_row *r, const struct emu_col *c)
{
    int64_t m = MAX(r->del_ts, c->del_ts);

    if (r->fam_del != NULL) {
        m = MAX(m, r->fam_del[c->fam]);
    }
    return m;
}

/* Puts one version, honouring markers and the family's maxVersions. */
static gboolean emu_store_col_put(emu_row *r, struct emu_col *c, int64_t ts,
                                  const uint8_t *v, size_t vlen,
                                  int32_t max_versions)
{
    guint pos = 0;

    if (ts <= emu_store_col_mask(r, c)) {
        return FALSE;
    }
    while (pos < c->nver && c->ver[pos].ts > ts) {
        pos++;
    }
    if (pos < c->nver && c->ver[pos].ts == ts) {
        /* Same coordinates: the newer write wins, as in HBase. */
        g_free(c->ver[pos].data);
    } else {
        if ((int32_t)pos >= max_versions) {
            return TRUE; /* older than every kept version: trimmed at once */
        }
        if (c->nver == c->cap) {
            c->cap = c->cap ? c->cap * 2 : 1;
            c->ver = g_renew(struct emu_ver, c->ver, c->cap);
        }
        memmove(&c->ver[pos + 1], &c->ver[pos],
                (c->nver - pos) * sizeof(struct emu_ver));
        c->nver++;
    }
    c->ver[pos].ts = ts;
    c->ver[pos].len = (uint32_t)vlen;
    c->ver[pos].data = g_malloc(vlen ? vlen : 1);
    if (vlen > 0) {
        /* an empty value may come as a NULL pointer (Thrift2's c_glib
         * binary): memcpy wants a valid one even for 0 bytes */
        memcpy(c->ver[pos].data, v, vlen);
    }
    while (c->nver > (guint)max_versions) {
        c->nver--;
        g_free(c->ver[c->nver].data);
    }
    return TRUE;
}

/* Removes columns that hold nothing: no versions and no marker. */
static void emu_store_row_compact_cols(emu_row *r, gboolean drop_markers)
{
    guint out = 0;

    for (guint i = 0; i < r->ncols; i++) {
        struct emu_col *c = &r->cols[i];

        if (drop_markers) {
            c->del_ts = EMU_NO_MARK;
        }
        if (c->nver == 0 && c->del_ts == EMU_NO_MARK) {
            emu_store_col_clear(c);
            continue;
        }
        if (out != i) {
            r->cols[out] = *c;
        }
        out++;
    }
    r->ncols = out;
    if (drop_markers) {
        r->del_ts = EMU_NO_MARK;
        g_clear_pointer(&r->fam_del, g_free);
    }
}

static gboolean emu_store_row_is_empty(const emu_row *r)
{
    return r->ncols == 0 && r->del_ts == EMU_NO_MARK && r->fam_del == NULL;
}

/* ---- tables ---- */

void emu_family_free(gpointer p)
{
    struct emu_family *f = p;

    if (f == NULL) {
        return;
    }

    g_free(f->name);
    g_free(f->compression);
    g_free(f->bloom_type);
    g_free(f);
}

emu_table *emu_table_ref(emu_table *t)
{
    g_atomic_int_inc(&t->refcount);
    return t;
}

void emu_table_unref(emu_table *t)
{
    if (t == NULL || !g_atomic_int_dec_and_test(&t->refcount)) {
        return;
    }
    g_tree_destroy(t->rows);
    for (guint i = 0; i < t->nregions; i++) {
        g_bytes_unref(t->regions[i].start);
        g_bytes_unref(t->regions[i].end);
        g_bytes_unref(t->regions[i].name);
        g_mutex_clear(&t->regions[i].serial);
    }
    g_free(t->regions);
    g_ptr_array_unref(t->families);
    g_ptr_array_unref(t->values);
    if (t->successor != NULL) {
        emu_table_unref(t->successor);
    }
    g_rw_lock_clear(&t->lock);
    g_free(t->name);
    g_free(t);
}

const char *emu_table_name(const emu_table *t)
{
    return t->name;
}

guint emu_table_family_count(const emu_table *t)
{
    return t->families->len;
}

const struct emu_family *emu_table_family(const emu_table *t, guint i)
{
    return g_ptr_array_index(t->families, i);
}

gboolean emu_table_family_index(const emu_table *t, const uint8_t *fam,
                                size_t len, guint *index, GError **error)
{
    for (guint i = 0; i < t->families->len; i++) {
        const struct emu_family *f = g_ptr_array_index(t->families, i);

        if (f->name_len == len && memcmp(f->name, fam, len) == 0) {
            *index = i;
            return TRUE;
        }
    }
    g_autoptr(GString) msg = g_string_new(
        "org.apache.hadoop.hbase.regionserver.NoSuchColumnFamilyException: "
        "Column family ");
    emu_store_append_binary(msg, fam, len);
    /* HRegion names itself (getRegionNameAsString, encoded name included)
     * and its table descriptor, whose long text is not modelled */
    gsize rl;
    const uint8_t *rn = g_bytes_get_data(t->regions[0].name, &rl);

    g_string_append(msg, " does not exist in region ");
    emu_store_append_binary(msg, rn, rl);
    g_string_append_printf(msg, " in table '%s'", t->name);
    g_set_error_literal(error, EMU_STORE_ERROR, EMU_STORE_ERROR_IO_NORETRY,
                        msg->str);
    return FALSE;
}

const GPtrArray *emu_table_values(const emu_table *t)
{
    return t->values;
}

int64_t emu_table_created_ms(const emu_table *t)
{
    return t->created_ms;
}

guint emu_table_region_count(const emu_table *t)
{
    return t->nregions;
}

struct emu_region *emu_table_region(emu_table *t, guint i)
{
    return &t->regions[i];
}

guint emu_table_region_of(const emu_table *t, const uint8_t *key, size_t len)
{
    guint lo = 0, hi = t->nregions;

    /* Last region whose start is <= key; region 0 starts at "". */
    while (hi - lo > 1) {
        guint mid = lo + (hi - lo) / 2;
        gsize slen;
        const uint8_t *s = g_bytes_get_data(t->regions[mid].start, &slen);

        if (emu_store_bytes_cmp(s, slen, key, len) <= 0) {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    return lo;
}

void emu_table_read_lock(emu_table *t)
{
    g_rw_lock_reader_lock(&t->lock);
}
void emu_table_read_unlock(emu_table *t)
{
    g_rw_lock_reader_unlock(&t->lock);
}
void emu_table_write_lock(emu_table *t)
{
    g_rw_lock_writer_lock(&t->lock);
}
void emu_table_write_unlock(emu_table *t)
{
    g_rw_lock_writer_unlock(&t->lock);
}

emu_row *emu_table_row_find(emu_table *t, const uint8_t *key, size_t len)
{
    struct emu_key k = { key, len };

    return g_tree_lookup(t->rows, &k);
}

GTreeNode *emu_table_seek(emu_table *t, const uint8_t *key, size_t len,
                          gboolean reversed, gboolean inclusive)
{
    struct emu_key k = { key, len };
    GTreeNode *n;

    if (key == NULL) {
        return reversed ? g_tree_node_last(t->rows)
                        : g_tree_node_first(t->rows);
    }
    if (!reversed) {
        return inclusive ? g_tree_lower_bound(t->rows, &k)
                         : g_tree_upper_bound(t->rows, &k);
    }
    /* The node before the first one past (or at) the key. */
    n = inclusive ? g_tree_upper_bound(t->rows, &k)
                  : g_tree_lower_bound(t->rows, &k);
    return n ? g_tree_node_previous(n) : g_tree_node_last(t->rows);
}

GTreeNode *emu_table_node_step(GTreeNode *n, gboolean reversed)
{
    return reversed ? g_tree_node_previous(n) : g_tree_node_next(n);
}

emu_row *emu_table_node_row(GTreeNode *n)
{
    return g_tree_node_value(n);
}

const uint8_t *emu_row_key(const emu_row *r, size_t *len)
{
    *len = r->key.len;
    return r->key.p;
}

static gboolean emu_colspec_match(const emu_colspec *c,
                                  const struct emu_col *col)
{
    if (c == NULL || !c->any) {
        return TRUE;
    }
    if (c->mode[col->fam] == EMU_COLSPEC_ALL) {
        return TRUE;
    }
    if (c->mode[col->fam] != EMU_COLSPEC_SOME) {
        return FALSE;
    }
    GPtrArray *qs = c->quals[col->fam];
    for (guint i = 0; i < qs->len; i++) {
        gsize ql;
        const uint8_t *q = g_bytes_get_data(g_ptr_array_index(qs, i), &ql);

        /* An empty qualifier's data may be NULL, which memcmp must not
         * see even for a zero length. */
        if (ql == col->qual_len &&
            (ql == 0 || memcmp(q, col->qual, ql) == 0)) {
            return TRUE;
        }
    }
    return FALSE;
}

void emu_row_cells(const emu_table *t, const emu_row *r,
                   const struct emu_read *rd, GArray *out)
{
    guint cur_fam = G_MAXUINT;
    int32_t fam_seen = 0; /* cells of cur_fam that passed so far */

    for (guint i = 0; i < r->ncols; i++) {
        const struct emu_col *c = &r->cols[i];
        const struct emu_family *f;
        int32_t n = 0;
        int64_t lo = rd->min_ts, hi = rd->max_ts;

        if (c->nver == 0 || !emu_colspec_match(rd->cols, c)) {
            continue;
        }
        if (c->fam != cur_fam) {
            cur_fam = c->fam;
            fam_seen = 0;
        }
        if (rd->fam_min != NULL) {
            lo = rd->fam_min[c->fam];
            hi = rd->fam_max[c->fam];
        }
        f = g_ptr_array_index(t->families, c->fam);
        for (guint v = 0; v < c->nver && n < rd->max_versions; v++) {
            struct emu_cell cell;

            if (c->ver[v].ts >= hi || c->ver[v].ts < lo) {
                continue;
            }
            n++;
            /* The per-family offset and limit count the cells the
             * version and time checks let through (StoreScanner). */
            fam_seen++;
            if (fam_seen <= rd->store_offset) {
                continue;
            }
            if (rd->has_store_limit &&
                fam_seen - rd->store_offset > rd->store_limit) {
                break;
            }
            memset(&cell, 0, sizeof(cell));
            cell.family = f->name;
            cell.family_len = f->name_len;
            cell.qualifier = c->qual;
            cell.qualifier_len = c->qual_len;
            cell.timestamp = c->ver[v].ts;
            cell.value = c->ver[v].data;
            cell.value_len = c->ver[v].len;
            g_array_append_val(out, cell);
        }
    }
}

/* Row for a write, created on demand. Write lock held. */
static emu_row *emu_store_row_for_write(emu_table *t, const uint8_t *key,
                                        size_t len)
{
    emu_row *r = emu_table_row_find(t, key, len);

    if (r == NULL) {
        r = emu_store_row_new(key, len);
        g_tree_insert(t->rows, &r->key, r);
    }
    return r;
}

static void emu_store_row_release(emu_table *t, emu_row *r)
{
    if (emu_store_row_is_empty(r)) {
        g_tree_remove(t->rows, &r->key);
    }
}

/* A server timestamp: wall clock, but never reused within a row, so two
 * quick writes to one cell are two versions and a put right after a
 * delete is not hidden by the delete's marker. */
static int64_t emu_store_row_ts(emu_row *r)
{
    int64_t now = emu_store_now_ms();

    r->last_ts = MAX(now, r->last_ts + 1);
    return r->last_ts;
}

static void emu_store_count_cells(emu_table *t, const uint8_t *key, size_t len,
                                  gint64 n)
{
    struct emu_region *reg = &t->regions[emu_table_region_of(t, key, len)];

    __atomic_fetch_add(&reg->cells_written, n, __ATOMIC_RELAXED);
}

int64_t emu_table_mutate(emu_table *t, const uint8_t *key, size_t len,
                         const struct emu_mut *muts, guint n, int64_t ts)
{
    emu_row *r = emu_store_row_for_write(t, key, len);
    int64_t dts = ts, pts = ts;
    gint64 written = 0;
    gboolean any_del = FALSE, any_put = FALSE;

    for (guint i = 0; i < n; i++) {
        if (muts[i].kind == EMU_MUT_PUT) {
            any_put = TRUE;
        } else {
            any_del = TRUE;
        }
    }
    /* HBase's handler sends the Delete, then the Put: two server times. */
    if (any_del && dts == EMU_LATEST_TS) {
        dts = emu_store_row_ts(r);
    }
    for (guint i = 0; i < n; i++) {
        const struct emu_mut *m = &muts[i];
        int64_t mts = m->has_ts ? m->ts : dts;

        if (m->kind == EMU_MUT_DELETE_COLUMN) {
            struct emu_col *c = emu_store_col_get(r, m->fam, m->qual,
                                                  m->qual_len);
            c->del_ts = MAX(c->del_ts, mts);
            emu_store_col_delete_upto(c, mts);
        } else if (m->kind == EMU_MUT_DELETE_FAMILY) {
            if (r->fam_del == NULL) {
                r->fam_del = g_new(int64_t, t->families->len);
                for (guint f = 0; f < t->families->len; f++) {
                    r->fam_del[f] = EMU_NO_MARK;
                }
            }
            r->fam_del[m->fam] = MAX(r->fam_del[m->fam], mts);
            for (guint c = 0; c < r->ncols; c++) {
                if (r->cols[c].fam == m->fam) {
                    emu_store_col_delete_upto(&r->cols[c], mts);
                }
            }
        } else if (m->kind == EMU_MUT_DELETE_VERSION) {
            guint pos;

            /* Without a timestamp HBase deletes the newest version. */
            if (emu_store_col_find(r, m->fam, m->qual, m->qual_len, &pos)) {
                emu_store_col_delete_at(&r->cols[pos],
                                        m->has_ts ? m->ts : EMU_LATEST_TS);
            }
        } else if (m->kind == EMU_MUT_DELETE_FAMILY_VERSION) {
            for (guint c = 0; c < r->ncols; c++) {
                if (r->cols[c].fam == m->fam) {
                    emu_store_col_delete_at(&r->cols[c], m->ts);
                }
            }
        }
    }
    if (any_put && pts == EMU_LATEST_TS) {
        pts = emu_store_row_ts(r);
    }
    for (guint i = 0; i < n; i++) {
        const struct emu_mut *m = &muts[i];
        const struct emu_family *f;

        if (m->kind != EMU_MUT_PUT) {
            continue;
        }
        f = g_ptr_array_index(t->families, m->fam);
        struct emu_col *c = emu_store_col_get(r, m->fam, m->qual, m->qual_len);
        if (emu_store_col_put(r, c, m->has_ts ? m->ts : pts, m->value,
                              m->value_len, f->max_versions)) {
            written++;
        }
    }
    emu_store_row_compact_cols(r, FALSE);
    if (written) {
        emu_store_count_cells(t, key, len, written);
    }
    emu_store_row_release(t, r);
    return any_put ? pts : dts;
}

void emu_table_delete_row(emu_table *t, const uint8_t *key, size_t len,
                          int64_t ts)
{
    emu_row *r = emu_table_row_find(t, key, len);

    if (r == NULL) {
        r = emu_store_row_for_write(t, key, len);
    }
    if (ts == EMU_LATEST_TS) {
        ts = emu_store_row_ts(r);
    }
    r->del_ts = MAX(r->del_ts, ts);
    for (guint c = 0; c < r->ncols; c++) {
        emu_store_col_delete_upto(&r->cols[c], ts);
    }
    emu_store_row_compact_cols(r, FALSE);
    emu_store_row_release(t, r);
}

gboolean emu_table_increment(emu_table *t, const uint8_t *key, size_t len,
                             guint fam, const uint8_t *qual, size_t qual_len,
                             int64_t amount, int64_t *result, int64_t *ts_out,
                             GError **error)
{
    emu_row *r = emu_store_row_for_write(t, key, len);
    struct emu_col *c = emu_store_col_get(r, fam, qual, qual_len);
    const struct emu_family *f = g_ptr_array_index(t->families, fam);
    uint64_t v = 0;
    uint8_t be[8];

    if (c->nver > 0) {
        if (c->ver[0].len != 8) {
            g_set_error(error, EMU_STORE_ERROR, EMU_STORE_ERROR_IO_NORETRY,
                        "org.apache.hadoop.hbase.DoNotRetryIOException: "
                        "Field is not a long, it's %u bytes wide",
                        c->ver[0].len);
            emu_store_row_compact_cols(r, FALSE);
            emu_store_row_release(t, r);
            return FALSE;
        }
        for (int i = 0; i < 8; i++) {
            v = (v << 8) | c->ver[0].data[i];
        }
    }
    v += (uint64_t)amount; /* wraps like Java's long */
    *result = (int64_t)v;
    for (int i = 7; i >= 0; i--) {
        be[i] = (uint8_t)(v & 0xff);
        v >>= 8;
    }
    *ts_out = emu_store_row_ts(r);
    emu_store_col_put(r, c, *ts_out, be, 8, f->max_versions);
    emu_store_row_compact_cols(r, FALSE);
    emu_store_count_cells(t, key, len, 1);
    emu_store_row_release(t, r);
    return TRUE;
}

void emu_table_append(emu_table *t, const uint8_t *key, size_t len, guint fam,
                      const uint8_t *qual, size_t qual_len,
                      const uint8_t *value, size_t value_len,
                      GByteArray **result, int64_t *ts_out)
{
    emu_row *r = emu_store_row_for_write(t, key, len);
    struct emu_col *c = emu_store_col_get(r, fam, qual, qual_len);
    const struct emu_family *f = g_ptr_array_index(t->families, fam);
    GByteArray *nv = g_byte_array_new();

    if (c->nver > 0) {
        g_byte_array_append(nv, c->ver[0].data, c->ver[0].len);
    }
    g_byte_array_append(nv, value, (guint)value_len);
    *ts_out = emu_store_row_ts(r);
    emu_store_col_put(r, c, *ts_out, nv->data, nv->len, f->max_versions);
    emu_store_row_compact_cols(r, FALSE);
    emu_store_count_cells(t, key, len, 1);
    emu_store_row_release(t, r);
    *result = nv;
}

const uint8_t *emu_table_cell_latest(emu_table *t, const uint8_t *key,
                                     size_t len, guint fam,
                                     const uint8_t *qual, size_t qual_len,
                                     size_t *value_len)
{
    emu_row *r = emu_table_row_find(t, key, len);
    guint pos;

    if (r == NULL || !emu_store_col_find(r, fam, qual, qual_len, &pos) ||
        r->cols[pos].nver == 0) {
        return NULL;
    }
    *value_len = r->cols[pos].ver[0].len;
    return r->cols[pos].ver[0].data;
}

/* ---- column specs ---- */

emu_colspec *emu_colspec_new(const emu_table *t)
{
    emu_colspec *c = g_new0(emu_colspec, 1);

    c->nfam = t->families->len;
    c->mode = g_new0(uint8_t, c->nfam);
    c->quals = g_new0(GPtrArray *, c->nfam);
    return c;
}

void emu_colspec_free(emu_colspec *c)
{
    if (c == NULL) {
        return;
    }
    for (guint i = 0; i < c->nfam; i++) {
        if (c->quals[i] != NULL) {
            g_ptr_array_unref(c->quals[i]);
        }
    }
    g_free(c->quals);
    g_free(c->mode);
    g_free(c);
}

gboolean emu_colspec_add_all(emu_colspec *c, const emu_table *t,
                             const GPtrArray *cols, GError **error)
{
    GError *first = NULL;
    const GByteArray *first_col = NULL;
    size_t first_len = 0;

    for (guint i = 0; cols != NULL && i < cols->len; i++) {
        const GByteArray *col = g_ptr_array_index(cols, i);
        const uint8_t *q;
        size_t fl, ql;
        GError *err = NULL;

        if (emu_colspec_add(c, t, col->data, col->len, &err)) {
            continue;
        }
        emu_store_parse_column(col->data, col->len, &fl, &q, &ql);
        if (first == NULL ||
            emu_store_bytes_cmp(col->data, fl, first_col->data, first_len) <
                0) {
            g_clear_error(&first);
            first = err;
            first_col = col;
            first_len = fl;
        } else {
            g_error_free(err);
        }
    }
    if (first == NULL) {
        return TRUE;
    }
    g_propagate_error(error, first);
    return FALSE;
}

gboolean emu_colspec_add(emu_colspec *c, const emu_table *t,
                         const uint8_t *col, size_t len, GError **error)
{
    size_t fam_len, qual_len;
    const uint8_t *qual;
    guint fam;
    gboolean has_qual = emu_store_parse_column(col, len, &fam_len, &qual,
                                               &qual_len);

    if (!emu_table_family_index(t, col, fam_len, &fam, error)) {
        return FALSE;
    }
    c->any = TRUE;
    if (!has_qual) {
        /* addFamily: the whole family, whatever came before. */
        c->mode[fam] = EMU_COLSPEC_ALL;
        g_clear_pointer(&c->quals[fam], g_ptr_array_unref);
        return TRUE;
    }
    /* addColumn after addFamily narrows the family again, as in HBase. */
    if (c->mode[fam] != EMU_COLSPEC_SOME) {
        c->mode[fam] = EMU_COLSPEC_SOME;
        c->quals[fam] = g_ptr_array_new_with_free_func(
            (GDestroyNotify)g_bytes_unref);
    }
    g_ptr_array_add(c->quals[fam], g_bytes_new(qual, qual_len));
    return TRUE;
}

/* ---- the store ---- */

static void emu_store_split_even(guint n, GPtrArray *out)
{
    for (guint i = 1; i < n; i++) {
        guint v = (guint)(((guint64)i * 65536) / n);
        uint8_t k[2] = { (uint8_t)(v >> 8), (uint8_t)(v & 0xff) };

        g_ptr_array_add(out, g_bytes_new(k, k[1] ? 2 : 1));
    }
}

static gint emu_store_gbytes_cmp(gconstpointer a, gconstpointer b)
{
    GBytes *x = *(GBytes *const *)a, *y = *(GBytes *const *)b;
    gsize xl, yl;
    const uint8_t *xp = g_bytes_get_data(x, &xl);
    const uint8_t *yp = g_bytes_get_data(y, &yl);

    return emu_store_bytes_cmp(xp, xl, yp, yl);
}

/* Regions at the given split keys, or else the store's default ones. */
static void emu_store_make_regions(emu_store *s, emu_table *t,
                                   GPtrArray *explicit_splits)
{
    g_autoptr(GPtrArray) splits = g_ptr_array_new_with_free_func(
        (GDestroyNotify)g_bytes_unref);
    GBytes *empty = g_bytes_new(NULL, 0);
    GPtrArray *given = explicit_splits != NULL ? explicit_splits
                                               : s->cfg.split_keys;

    if (given != NULL && given->len > 0) {
        for (guint i = 0; i < given->len; i++) {
            g_ptr_array_add(splits, g_bytes_ref(g_ptr_array_index(given, i)));
        }
        g_ptr_array_sort(splits, emu_store_gbytes_cmp);
    } else if (explicit_splits != NULL) {
        /* an explicit empty list: one region */
    } else {
        emu_store_split_even(MAX(s->cfg.regions, 1), splits);
    }
    t->nregions = splits->len + 1;
    t->regions = g_new0(struct emu_region, t->nregions);
    for (guint i = 0; i < t->nregions; i++) {
        struct emu_region *r = &t->regions[i];
        gsize slen;
        const uint8_t *sp;
        g_autoptr(GByteArray) name = g_byte_array_new();
        g_autofree char *idstr = NULL;
        g_autofree char *md5 = NULL;

        r->start = i == 0 ? g_bytes_ref(empty)
                          : g_bytes_ref(g_ptr_array_index(splits, i - 1));
        r->end = i + 1 == t->nregions
                     ? g_bytes_ref(empty)
                     : g_bytes_ref(g_ptr_array_index(splits, i));
        r->id = t->created_ms;
        g_mutex_init(&r->serial);
        /* "table,startKey,regionId.encoded." with encoded = md5 of the rest */
        sp = g_bytes_get_data(r->start, &slen);
        g_byte_array_append(name, (const guint8 *)t->name, (guint)t->name_len);
        g_byte_array_append(name, (const guint8 *)",", 1);
        g_byte_array_append(name, sp, (guint)slen);
        idstr = g_strdup_printf(",%" G_GINT64_FORMAT ".", r->id);
        g_byte_array_append(name, (const guint8 *)idstr, (guint)strlen(idstr));
        md5 = g_compute_checksum_for_data(G_CHECKSUM_MD5, name->data,
                                          name->len);
        g_byte_array_append(name, (const guint8 *)md5, (guint)strlen(md5));
        g_byte_array_append(name, (const guint8 *)".", 1);
        r->name = g_bytes_new(name->data, name->len);
    }
    g_bytes_unref(empty);
}

static void emu_store_conf_free(gpointer p)
{
    if (p != NULL) {
        g_hash_table_unref(p);
    }
}

/* A copy of a string -> string map; NULL when empty, as HBase keeps an
 * empty configuration as none. */
static GHashTable *emu_store_conf_copy(const GHashTable *conf)
{
    GHashTable *c;
    GHashTableIter it;
    gpointer k, v;

    if (conf == NULL || g_hash_table_size((GHashTable *)conf) == 0) {
        return NULL;
    }
    c = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
    g_hash_table_iter_init(&it, (GHashTable *)conf);
    while (g_hash_table_iter_next(&it, &k, &v)) {
        g_hash_table_insert(c, g_strdup(k), g_strdup(v ? v : ""));
    }
    return c;
}

emu_store *emu_store_new(const struct emu_store_config *cfg)
{
    emu_store *s = g_new0(emu_store, 1);

    g_rw_lock_init(&s->lock);
    s->tables = g_hash_table_new_full(g_str_hash, g_str_equal, NULL,
                                      (GDestroyNotify)emu_table_unref);
    s->namespaces = g_hash_table_new_full(g_str_hash, g_str_equal, g_free,
                                          emu_store_conf_free);
    g_hash_table_insert(s->namespaces, g_strdup("default"), NULL);
    /* HBase's system namespace: listed, never removable. */
    g_hash_table_insert(s->namespaces, g_strdup("hbase"), NULL);
    s->cfg = *cfg;
    if (s->cfg.split_keys != NULL) {
        g_ptr_array_ref(s->cfg.split_keys);
    }
    s->cfg.server_name = g_strdup(cfg->server_name ? cfg->server_name
                                                   : "localhost");
    return s;
}

void emu_store_free(emu_store *s)
{
    if (s == NULL) {
        return;
    }
    g_hash_table_unref(s->tables);
    g_hash_table_unref(s->namespaces);
    if (s->cfg.split_keys != NULL) {
        g_ptr_array_unref(s->cfg.split_keys);
    }
    g_free(s->cfg.server_name);
    g_rw_lock_clear(&s->lock);
    g_free(s);
}

const struct emu_store_config *emu_store_get_config(const emu_store *s)
{
    return &s->cfg;
}

void emu_store_add_namespace(emu_store *s, const char *ns)
{
    g_rw_lock_writer_lock(&s->lock);
    if (!g_hash_table_contains(s->namespaces, ns)) {
        g_hash_table_insert(s->namespaces, g_strdup(ns), NULL);
    }
    g_rw_lock_writer_unlock(&s->lock);
}

/* TableName's namespace rule: letters, digits and '_' only. */
static gboolean emu_store_check_ns(const char *ns, size_t len,
                                   const char *whole, GError **error)
{
    for (size_t i = 0; i < len; i++) {
        if (!g_ascii_isalnum(ns[i]) && ns[i] != '_') {
            g_set_error(error, EMU_STORE_ERROR, EMU_STORE_ERROR_ILLEGAL,
                        "java.lang.IllegalArgumentException: Illegal "
                        "character <%c> at %d. Namespaces may only contain "
                        "'alphanumeric characters' from any language and "
                        "digits: %s",
                        ns[i], (int)i, whole);
            return FALSE;
        }
    }
    return TRUE;
}

/*
 * The table name as HBase keys it: "default:" dropped.  Sets an
 * IllegalArgument error for names TableName.valueOf would refuse.
 */
static char *emu_store_canonical_name(const uint8_t *name, size_t len,
                                      char **ns_out, GError **error)
{
    g_autofree char *s = g_strndup((const char *)name, len);
    const char *colon;
    const char *qual;

    if (memchr(name, 0, len) != NULL) {
        g_set_error(error, EMU_STORE_ERROR, EMU_STORE_ERROR_ILLEGAL,
                    "java.lang.IllegalArgumentException: Illegal character "
                    "code:0, <\\x00> in table name");
        return NULL;
    }
    colon = strchr(s, ':');
    qual = colon ? colon + 1 : s;
    if (colon != NULL &&
        !emu_store_check_ns(s, (size_t)(colon - s), s, error)) {
        return NULL;
    }
    if (*qual == '\0') {
        g_set_error(error, EMU_STORE_ERROR, EMU_STORE_ERROR_ILLEGAL,
                    "java.lang.IllegalArgumentException: Table qualifier "
                    "must not be empty");
        return NULL;
    }
    if (*qual == '.' || *qual == '-') {
        g_set_error(error, EMU_STORE_ERROR, EMU_STORE_ERROR_ILLEGAL,
                    "java.lang.IllegalArgumentException: Illegal first "
                    "character <%d> at 0. User-space table qualifiers can "
                    "only start with 'alphanumeric characters' from any "
                    "language: %s",
                    *qual, qual);
        return NULL;
    }
    for (const char *p = qual; *p; p++) {
        if (!g_ascii_isalnum(*p) && *p != '_' && *p != '-' && *p != '.') {
            g_set_error(error, EMU_STORE_ERROR, EMU_STORE_ERROR_ILLEGAL,
                        "java.lang.IllegalArgumentException: Illegal "
                        "character code:%d, <%c> at %d. User-space table "
                        "qualifiers may only contain 'alphanumeric "
                        "characters' and digits: %s",
                        (unsigned char)*p, *p, (int)(p - qual), qual);
            return NULL;
        }
    }
    if (ns_out != NULL) {
        *ns_out = colon ? g_strndup(s, (gsize)(colon - s))
                        : g_strdup("default");
    }
    if (colon != NULL && colon - s == 7 && strncmp(s, "default", 7) == 0) {
        return g_strdup(qual);
    }
    return g_steal_pointer(&s);
}

static void emu_store_not_found(GError **error, const uint8_t *name,
                                size_t len)
{
    g_autoptr(GString) msg = g_string_new(
        "org.apache.hadoop.hbase.TableNotFoundException: ");

    emu_store_append_binary(msg, name, len);
    g_set_error_literal(error, EMU_STORE_ERROR, EMU_STORE_ERROR_IO_NORETRY,
                        msg->str);
}

/* Looks a table up by its wire name; store lock held. */
static emu_table *emu_store_lookup(emu_store *s, const uint8_t *name,
                                   size_t len)
{
    g_autofree char *canon = emu_store_canonical_name(name, len, NULL, NULL);

    return canon ? g_hash_table_lookup(s->tables, canon) : NULL;
}

gboolean emu_store_create_table(emu_store *s, const uint8_t *name,
                                size_t name_len, GPtrArray *families,
                                GError **error)
{
    return emu_store_create_table_split(s, name, name_len, families, NULL,
                                        NULL, error);
}

/* Admin.createTable's checks of split keys: none empty, none repeated. */
static gboolean emu_store_check_splits(GPtrArray *splits, GError **error)
{
    g_autoptr(GPtrArray) sorted = NULL;

    if (splits == NULL) {
        return TRUE;
    }
    sorted = g_ptr_array_copy(splits, NULL, NULL);
    /* the copy borrows the keys: it must not unref them */
    g_ptr_array_set_free_func(sorted, NULL);
    g_ptr_array_sort(sorted, emu_store_gbytes_cmp);
    for (guint i = 0; i < sorted->len; i++) {
        GBytes *k = g_ptr_array_index(sorted, i);

        if (g_bytes_get_size(k) == 0) {
            g_set_error_literal(error, EMU_STORE_ERROR,
                                EMU_STORE_ERROR_ILLEGAL,
                                "java.lang.IllegalArgumentException: Empty "
                                "split key must not be passed in the split "
                                "keys.");
            return FALSE;
        }
        if (i > 0 && g_bytes_equal(k, g_ptr_array_index(sorted, i - 1))) {
            g_autoptr(GString) msg = g_string_new(
                "java.lang.IllegalArgumentException: All split keys must be "
                "unique, found duplicate: ");
            gsize kl;
            const uint8_t *kp = g_bytes_get_data(k, &kl);

            emu_store_append_binary(msg, kp, kl);
            g_set_error_literal(error, EMU_STORE_ERROR,
                                EMU_STORE_ERROR_ILLEGAL, msg->str);
            return FALSE;
        }
    }
    return TRUE;
}

/* Sorts flat key/value pairs by key (TableDescriptor's TreeMap). */
static GPtrArray *emu_store_values_sorted(const GPtrArray *values)
{
    GPtrArray *out = g_ptr_array_new_with_free_func(
        (GDestroyNotify)g_bytes_unref);
    guint n = values != NULL ? values->len / 2 : 0;
    g_autofree guint *order = g_new(guint, n + 1);

    for (guint i = 0; i < n; i++) {
        guint j = i;

        /* insertion sort: descriptors hold a handful of values */
        while (j > 0 && emu_store_gbytes_cmp(
                            &g_ptr_array_index(values, 2 * order[j - 1]),
                            &g_ptr_array_index(values, 2 * i)) > 0) {
            order[j] = order[j - 1];
            j--;
        }
        order[j] = i;
    }
    for (guint i = 0; i < n; i++) {
        g_ptr_array_add(out,
                        g_bytes_ref(g_ptr_array_index(values, 2 * order[i])));
        g_ptr_array_add(
            out, g_bytes_ref(g_ptr_array_index(values, 2 * order[i] + 1)));
    }
    return out;
}

/* A new enabled table holding families (taken over) and a copy of values;
 * created_ms 0: now. */
static emu_table *emu_store_table_new(emu_store *s, char *canon,
                                      GPtrArray *families, GPtrArray *splits,
                                      const GPtrArray *values,
                                      int64_t created_ms)
{
    emu_table *t = g_new0(emu_table, 1);

    t->refcount = 1;
    t->name = canon;
    t->name_len = strlen(t->name);
    t->families = g_ptr_array_new_with_free_func(emu_family_free);
    for (guint i = 0; i < families->len; i++) {
        g_ptr_array_add(t->families, g_ptr_array_index(families, i));
    }
    /* Families are taken over; sorted so index order is name order. */
    g_ptr_array_set_free_func(families, NULL);
    g_ptr_array_set_size(families, 0);
    g_ptr_array_sort(t->families, emu_store_family_cmp);
    t->values = emu_store_values_sorted(values);
    t->enabled = TRUE;
    t->created_ms = created_ms != 0 ? created_ms : emu_store_now_ms();
    g_rw_lock_init(&t->lock);
    t->rows = g_tree_new_full(emu_store_key_cmp_data, NULL, NULL,
                              emu_store_row_free);
    emu_store_make_regions(s, t, splits);
    return t;
}

gboolean emu_store_create_table_split(emu_store *s, const uint8_t *name,
                                      size_t name_len, GPtrArray *families,
                                      GPtrArray *split_keys,
                                      const GPtrArray *values, GError **error)
{
    g_autofree char *ns = NULL;
    g_autofree char *canon = emu_store_canonical_name(name, name_len, &ns,
                                                      error);
    emu_table *t;

    if (canon == NULL) {
        return FALSE;
    }
    g_rw_lock_writer_lock(&s->lock);
    if (g_hash_table_contains(s->tables, canon)) {
        g_rw_lock_writer_unlock(&s->lock);
        g_set_error_literal(error, EMU_STORE_ERROR, EMU_STORE_ERROR_EXISTS,
                            "table name already in use");
        return FALSE;
    }
    if (!g_hash_table_contains(s->namespaces, ns)) {
        g_rw_lock_writer_unlock(&s->lock);
        g_set_error(error, EMU_STORE_ERROR, EMU_STORE_ERROR_IO_NORETRY,
                    "org.apache.hadoop.hbase.NamespaceNotFoundException: %s",
                    ns);
        return FALSE;
    }
    if (families->len == 0) {
        g_rw_lock_writer_unlock(&s->lock);
        g_set_error_literal(error, EMU_STORE_ERROR, EMU_STORE_ERROR_ILLEGAL,
                            EMU_STORE_NO_FAMILY_MESSAGE);
        return FALSE;
    }
    for (guint i = 0; i < families->len; i++) {
        const struct emu_family *f = g_ptr_array_index(families, i);

        for (guint j = 0; j < i; j++) {
            const struct emu_family *g = g_ptr_array_index(families, j);

            if (f->name_len == g->name_len &&
                memcmp(f->name, g->name, f->name_len) == 0) {
                g_rw_lock_writer_unlock(&s->lock);
                g_set_error(error, EMU_STORE_ERROR, EMU_STORE_ERROR_ILLEGAL,
                            "java.lang.IllegalArgumentException: Family "
                            "'%s' already exists so cannot be added",
                            (const char *)f->name);
                return FALSE;
            }
        }
    }
    if (!emu_store_check_splits(split_keys, error)) {
        g_rw_lock_writer_unlock(&s->lock);
        return FALSE;
    }
    t = emu_store_table_new(s, g_steal_pointer(&canon), families, split_keys,
                            values, 0);
    g_hash_table_insert(s->tables, t->name, t);
    g_rw_lock_writer_unlock(&s->lock);
    return TRUE;
}

gboolean emu_store_delete_table(emu_store *s, const uint8_t *name,
                                size_t name_len, GError **error)
{
    emu_table *t;

    g_rw_lock_writer_lock(&s->lock);
    t = emu_store_lookup(s, name, name_len);
    if (t == NULL) {
        g_rw_lock_writer_unlock(&s->lock);
        g_set_error_literal(error, EMU_STORE_ERROR, EMU_STORE_ERROR_IO,
                            "java.io.IOException: table does not exist");
        return FALSE;
    }
    if (t->enabled) {
        g_rw_lock_writer_unlock(&s->lock);
        g_set_error(error, EMU_STORE_ERROR, EMU_STORE_ERROR_IO_NORETRY,
                    "org.apache.hadoop.hbase.TableNotDisabledException: %s",
                    t->name);
        return FALSE;
    }
    g_atomic_int_set(&t->dropped, TRUE);
    g_hash_table_remove(s->tables, t->name);
    g_rw_lock_writer_unlock(&s->lock);
    return TRUE;
}

static struct emu_family *emu_store_family_copy(const struct emu_family *f)
{
    struct emu_family *c = g_new0(struct emu_family, 1);

    *c = *f;
    c->name = (uint8_t *)g_strndup((const char *)f->name, f->name_len);
    c->compression = g_strdup(f->compression);
    c->bloom_type = g_strdup(f->bloom_type);
    return c;
}

gboolean emu_store_truncate_table(emu_store *s, const uint8_t *name,
                                  size_t name_len, gboolean preserve_splits,
                                  GError **error)
{
    g_autoptr(GPtrArray) fams = g_ptr_array_new_with_free_func(
        emu_family_free);
    g_autoptr(GPtrArray) splits = g_ptr_array_new_with_free_func(
        (GDestroyNotify)g_bytes_unref);
    emu_table *t, *nt;

    g_rw_lock_writer_lock(&s->lock);
    t = emu_store_lookup(s, name, name_len);
    if (t == NULL) {
        g_rw_lock_writer_unlock(&s->lock);
        emu_store_not_found(error, name, name_len);
        return FALSE;
    }
    if (t->enabled) {
        g_rw_lock_writer_unlock(&s->lock);
        g_set_error(error, EMU_STORE_ERROR, EMU_STORE_ERROR_IO_NORETRY,
                    "org.apache.hadoop.hbase.TableNotDisabledException: %s",
                    t->name);
        return FALSE;
    }
    for (guint i = 0; i < t->families->len; i++) {
        g_ptr_array_add(
            fams, emu_store_family_copy(g_ptr_array_index(t->families, i)));
    }
    for (guint i = 1; preserve_splits && i < t->nregions; i++) {
        g_ptr_array_add(splits, g_bytes_ref(t->regions[i].start));
    }
    /* A new table object: calls and scanners still holding the old one
     * see it dropped, as after HBase's delete-and-recreate. */
    nt = emu_store_table_new(s, g_strdup(t->name), fams, splits, t->values, 0);
    g_atomic_int_set(&t->dropped, TRUE);
    g_hash_table_replace(s->tables, nt->name, nt);
    g_rw_lock_writer_unlock(&s->lock);
    return TRUE;
}

/*
 * A copy of r for a table whose families changed: map[f] is family f's
 * new index or -1 when it is gone, max_versions[new index] its new
 * limit.  Both family arrays are sorted by name, so the map keeps the
 * columns' order.  NULL when nothing of the row is left.
 */
static emu_row *emu_store_row_remap(const emu_row *r, const gint *map,
                                    guint nfam, const int32_t *max_versions)
{
    emu_row *n = emu_store_row_new(r->key.p, r->key.len);

    n->last_ts = r->last_ts;
    n->del_ts = r->del_ts;
    if (r->fam_del != NULL) {
        gboolean any = FALSE;

        n->fam_del = g_new(int64_t, nfam);
        for (guint f = 0; f < nfam; f++) {
            n->fam_del[f] = EMU_NO_MARK;
        }
        for (guint f = 0; map[f] != G_MININT; f++) {
            if (map[f] >= 0) {
                n->fam_del[map[f]] = r->fam_del[f];
                any |= r->fam_del[f] != EMU_NO_MARK;
            }
        }
        if (!any) {
            g_clear_pointer(&n->fam_del, g_free);
        }
    }
    for (guint i = 0; i < r->ncols; i++) {
        const struct emu_col *c = &r->cols[i];
        struct emu_col *d;
        gint to = map[c->fam];

        if (to < 0) {
            continue;
        }
        if (n->ncols == n->cap) {
            n->cap = n->cap ? n->cap * 2 : 2;
            n->cols = g_renew(struct emu_col, n->cols, n->cap);
        }
        d = &n->cols[n->ncols++];
        memset(d, 0, sizeof(*d));
        d->fam = (guint)to;
        d->qual_len = c->qual_len;
        d->qual = g_memdup2(c->qual, c->qual_len ? c->qual_len : 1);
        d->del_ts = c->del_ts;
        /* a lower maxVersions hides the older versions at once */
        d->nver = MIN(c->nver, (guint)MAX(max_versions[to], 1));
        d->cap = MAX(d->nver, 1);
        d->ver = g_new(struct emu_ver, d->cap);
        for (guint v = 0; v < d->nver; v++) {
            d->ver[v].ts = c->ver[v].ts;
            d->ver[v].len = c->ver[v].len;
            d->ver[v].data = g_memdup2(c->ver[v].data,
                                       c->ver[v].len ? c->ver[v].len : 1);
        }
    }
    emu_store_row_compact_cols(n, FALSE);
    if (emu_store_row_is_empty(n)) {
        emu_store_row_free(n);
        return NULL;
    }
    return n;
}

gboolean emu_store_alter_table(emu_store *s, const uint8_t *name,
                               size_t name_len, emu_store_alter_fn fn,
                               gpointer data, GError **error)
{
    g_autoptr(GPtrArray) fams = g_ptr_array_new_with_free_func(
        emu_family_free);
    g_autoptr(GPtrArray) values = g_ptr_array_new_with_free_func(
        (GDestroyNotify)g_bytes_unref);
    g_autoptr(GPtrArray) splits = g_ptr_array_new_with_free_func(
        (GDestroyNotify)g_bytes_unref);
    g_autoptr(emu_table) t = NULL;
    g_autofree gint *map = NULL;
    g_autofree int32_t *maxv = NULL;
    emu_table *nt;
    GTreeNode *node;
    guint nold;

    g_rw_lock_reader_lock(&s->lock);
    t = emu_store_lookup(s, name, name_len);
    if (t != NULL) {
        emu_table_ref(t);
    }
    g_rw_lock_reader_unlock(&s->lock);
    if (t == NULL) {
        emu_store_not_found(error, name, name_len);
        return FALSE;
    }
    /* A table object's families and values never change: work on copies. */
    for (guint i = 0; i < t->families->len; i++) {
        g_ptr_array_add(
            fams, emu_store_family_copy(g_ptr_array_index(t->families, i)));
    }
    for (guint i = 0; i < t->values->len; i++) {
        g_ptr_array_add(values, g_bytes_ref(g_ptr_array_index(t->values, i)));
    }
    if (!fn(t, fams, values, data, error)) {
        return FALSE;
    }
    if (fams->len == 0) {
        g_set_error_literal(error, EMU_STORE_ERROR, EMU_STORE_ERROR_IO_NORETRY,
                            EMU_STORE_NO_FAMILY_MESSAGE);
        return FALSE;
    }
    for (guint i = 1; i < t->nregions; i++) {
        g_ptr_array_add(splits, g_bytes_ref(t->regions[i].start));
    }
    /* Same name, region boundaries and ids: HBase reopens the regions. */
    nt = emu_store_table_new(s, g_strdup(t->name), fams, splits, values,
                             t->created_ms);
    nold = t->families->len;
    map = g_new(gint, nold + 1);
    maxv = g_new(int32_t, nt->families->len + 1);
    for (guint i = 0; i < nt->families->len; i++) {
        maxv[i] = ((const struct emu_family *)g_ptr_array_index(nt->families,
                                                                i))
                      ->max_versions;
    }
    for (guint i = 0; i < nold; i++) {
        const struct emu_family *f = g_ptr_array_index(t->families, i);
        guint to;

        map[i] = emu_table_family_index(nt, f->name, f->name_len, &to, NULL)
                     ? (gint)to
                     : -1;
    }
    map[nold] = G_MININT;
    for (guint i = 0; i < t->nregions; i++) {
        struct emu_region *o = &t->regions[i], *r = &nt->regions[i];

        r->requests = __atomic_load_n(&o->requests, __ATOMIC_RELAXED);
        r->rows_read = __atomic_load_n(&o->rows_read, __ATOMIC_RELAXED);
        r->cells_written = __atomic_load_n(&o->cells_written,
                                           __ATOMIC_RELAXED);
    }
    emu_table_read_lock(t);
    for (node = g_tree_node_first(t->rows); node != NULL;
         node = g_tree_node_next(node)) {
        emu_row *r = emu_store_row_remap(g_tree_node_value(node), map,
                                         nt->families->len, maxv);

        if (r != NULL) {
            g_tree_insert(nt->rows, &r->key, r);
        }
    }
    emu_table_read_unlock(t);
    g_rw_lock_writer_lock(&s->lock);
    if (emu_store_lookup(s, name, name_len) != t) {
        /* deleted or altered meanwhile: what this call saw is gone */
        g_rw_lock_writer_unlock(&s->lock);
        emu_table_unref(nt);
        emu_store_not_found(error, name, name_len);
        return FALSE;
    }
    nt->enabled = t->enabled;
    /* Calls and scanners still holding the old object keep reading its
     * cells; whether it is live is the successor's business. */
    g_atomic_pointer_set(&t->successor, emu_table_ref(nt));
    g_hash_table_replace(s->tables, nt->name, nt);
    g_rw_lock_writer_unlock(&s->lock);
    return TRUE;
}

gboolean emu_store_create_namespace(emu_store *s, const char *ns,
                                    const GHashTable *conf, GError **error)
{
    gboolean ok = TRUE;

    if (!emu_store_check_ns(ns, strlen(ns), ns, error)) {
        return FALSE;
    }
    if (*ns == '\0') {
        g_set_error_literal(error, EMU_STORE_ERROR, EMU_STORE_ERROR_ILLEGAL,
                            "java.lang.IllegalArgumentException: Namespace "
                            "name must not be empty");
        return FALSE;
    }
    g_rw_lock_writer_lock(&s->lock);
    if (g_hash_table_contains(s->namespaces, ns)) {
        g_set_error(error, EMU_STORE_ERROR, EMU_STORE_ERROR_IO_NORETRY,
                    "org.apache.hadoop.hbase.NamespaceExistException: "
                    "Namespace %s already exists",
                    ns);
        ok = FALSE;
    } else {
        g_hash_table_insert(s->namespaces, g_strdup(ns),
                            emu_store_conf_copy(conf));
    }
    g_rw_lock_writer_unlock(&s->lock);
    return ok;
}

/* Tables of namespace ns; store lock held. */
static guint emu_store_namespace_tables(emu_store *s, const char *ns)
{
    GHashTableIter it;
    gpointer k, v;
    guint n = 0;
    size_t nl = strlen(ns);
    gboolean dflt = strcmp(ns, "default") == 0;

    g_hash_table_iter_init(&it, s->tables);
    while (g_hash_table_iter_next(&it, &k, &v)) {
        const char *name = k;
        const char *colon = strchr(name, ':');

        if (dflt ? colon == NULL
                 : (colon != NULL && (size_t)(colon - name) == nl &&
                    strncmp(name, ns, nl) == 0)) {
            n++;
        }
    }
    return n;
}

gboolean emu_store_delete_namespace(emu_store *s, const char *ns,
                                    GError **error)
{
    guint ntables;

    if (strcmp(ns, "default") == 0 || strcmp(ns, "hbase") == 0) {
        g_set_error(error, EMU_STORE_ERROR, EMU_STORE_ERROR_IO_NORETRY,
                    "org.apache.hadoop.hbase.constraint.ConstraintException: "
                    "Reserved namespace %s cannot be removed.",
                    ns);
        return FALSE;
    }
    g_rw_lock_writer_lock(&s->lock);
    if (!g_hash_table_contains(s->namespaces, ns)) {
        g_rw_lock_writer_unlock(&s->lock);
        g_set_error(error, EMU_STORE_ERROR, EMU_STORE_ERROR_IO_NORETRY,
                    "org.apache.hadoop.hbase.NamespaceNotFoundException: %s",
                    ns);
        return FALSE;
    }
    ntables = emu_store_namespace_tables(s, ns);
    if (ntables > 0) {
        g_rw_lock_writer_unlock(&s->lock);
        g_set_error(error, EMU_STORE_ERROR, EMU_STORE_ERROR_IO_NORETRY,
                    "org.apache.hadoop.hbase.constraint.ConstraintException: "
                    "Only empty namespaces can be removed. Namespace %s has "
                    "%u tables",
                    ns, ntables);
        return FALSE;
    }
    g_hash_table_remove(s->namespaces, ns);
    g_rw_lock_writer_unlock(&s->lock);
    return TRUE;
}

GError *emu_store_batch_error(GError *err, guint n)
{
    static const char *const nf = "org.apache.hadoop.hbase."
                                  "TableNotFoundException: ";
    GError *out;

    if (err == NULL || n == 0 || !g_str_has_prefix(err->message, nf)) {
        return err;
    }
    out = g_error_new(EMU_STORE_ERROR, EMU_STORE_ERROR_IO,
                      "org.apache.hadoop.hbase.client."
                      "RetriesExhaustedWithDetailsException: Failed %u "
                      "action%s: %s: %u time%s, servers with issues: null",
                      n, n == 1 ? "" : "s", err->message + strlen(nf), n,
                      n == 1 ? "" : "s");
    g_error_free(err);
    return out;
}

/* A namespace's configuration, replaced whole (modifyNamespace). */
gboolean emu_store_set_namespace_conf(emu_store *s, const char *ns,
                                      const GHashTable *conf)
{
    gboolean has;

    g_rw_lock_writer_lock(&s->lock);
    has = g_hash_table_contains(s->namespaces, ns);
    if (has) {
        g_hash_table_insert(s->namespaces, g_strdup(ns),
                            emu_store_conf_copy(conf));
    }
    g_rw_lock_writer_unlock(&s->lock);
    return has;
}

GHashTable *emu_store_namespace_conf(emu_store *s, const char *ns)
{
    GHashTable *c;

    g_rw_lock_reader_lock(&s->lock);
    c = emu_store_conf_copy(g_hash_table_lookup(s->namespaces, ns));
    g_rw_lock_reader_unlock(&s->lock);
    return c;
}

gboolean emu_store_has_namespace(emu_store *s, const char *ns)
{
    gboolean has;

    g_rw_lock_reader_lock(&s->lock);
    has = g_hash_table_contains(s->namespaces, ns);
    g_rw_lock_reader_unlock(&s->lock);
    return has;
}

/* The string keys of one of the store's tables, copied and sorted. */
static GPtrArray *emu_store_sorted_keys(emu_store *s, GHashTable *h)
{
    GPtrArray *names = g_ptr_array_new_with_free_func(g_free);
    GHashTableIter it;
    gpointer k, v;

    g_rw_lock_reader_lock(&s->lock);
    g_hash_table_iter_init(&it, h);
    while (g_hash_table_iter_next(&it, &k, &v)) {
        g_ptr_array_add(names, g_strdup(k));
    }
    g_rw_lock_reader_unlock(&s->lock);
    g_ptr_array_sort(names, emu_store_str_cmp);
    return names;
}

GPtrArray *emu_store_namespace_names(emu_store *s)
{
    return emu_store_sorted_keys(s, s->namespaces);
}

gboolean emu_store_set_enabled(emu_store *s, const uint8_t *name,
                               size_t name_len, gboolean enabled,
                               GError **error)
{
    emu_table *t;

    g_rw_lock_writer_lock(&s->lock);
    t = emu_store_lookup(s, name, name_len);
    if (t == NULL) {
        g_rw_lock_writer_unlock(&s->lock);
        emu_store_not_found(error, name, name_len);
        return FALSE;
    }
    if (t->enabled == enabled) {
        g_rw_lock_writer_unlock(&s->lock);
        g_set_error(
            error, EMU_STORE_ERROR, EMU_STORE_ERROR_IO_NORETRY,
            enabled ? "org.apache.hadoop.hbase.TableNotDisabledException: %s"
                    : "org.apache.hadoop.hbase.TableNotEnabledException: %s",
            t->name);
        return FALSE;
    }
    g_atomic_int_set(&t->enabled, enabled);
    g_rw_lock_writer_unlock(&s->lock);
    return TRUE;
}

emu_table *emu_store_table_ref(emu_store *s, const uint8_t *name,
                               size_t name_len, gboolean need_enabled,
                               GError **error)
{
    emu_table *t;

    g_rw_lock_reader_lock(&s->lock);
    t = emu_store_lookup(s, name, name_len);
    if (t != NULL) {
        emu_table_ref(t);
    }
    g_rw_lock_reader_unlock(&s->lock);
    if (t == NULL) {
        emu_store_not_found(error, name, name_len);
        return NULL;
    }
    if (need_enabled && !emu_table_is_live(t, error)) {
        emu_table_unref(t);
        return NULL;
    }
    return t;
}

gboolean emu_table_is_live(emu_table *t, GError **error)
{
    emu_table *next;

    while ((next = g_atomic_pointer_get(&t->successor)) != NULL) {
        t = next;
    }
    if (g_atomic_int_get(&t->dropped)) {
        g_set_error(error, EMU_STORE_ERROR, EMU_STORE_ERROR_IO_NORETRY,
                    "org.apache.hadoop.hbase.TableNotFoundException: %s",
                    t->name);
        return FALSE;
    }
    if (!g_atomic_int_get(&t->enabled)) {
        g_set_error(error, EMU_STORE_ERROR, EMU_STORE_ERROR_IO_NORETRY,
                    "org.apache.hadoop.hbase.TableNotEnabledException: "
                    "%s is disabled.",
                    t->name);
        return FALSE;
    }
    return TRUE;
}

GPtrArray *emu_store_table_names(emu_store *s, GArray **enabled)
{
    GPtrArray *names = emu_store_sorted_keys(s, s->tables);

    if (enabled != NULL) {
        *enabled = g_array_sized_new(FALSE, FALSE, sizeof(gboolean),
                                     names->len);
        g_rw_lock_reader_lock(&s->lock);
        for (guint i = 0; i < names->len; i++) {
            emu_table *t = g_hash_table_lookup(s->tables,
                                               g_ptr_array_index(names, i));
            gboolean e = t ? t->enabled : FALSE;

            g_array_append_val(*enabled, e);
        }
        g_rw_lock_reader_unlock(&s->lock);
    }
    return names;
}

/*
 * A compaction writes the region's rows anew, in key order, as HBase's
 * writes sorted store files: whatever order the rows were written in (a
 * salted table's load spreads each bucket's rows over all of the heap),
 * a scan then walks memory in order.  Without it a bucket's scan touches
 * a cache line per row that the next row does not share.
 * drop_markers: a major compaction, which also forgets delete markers.
 */
static void emu_store_compact_range(emu_table *t, const uint8_t *start,
                                    size_t slen, const uint8_t *end,
                                    size_t elen, gboolean drop_markers)
{
    g_autoptr(GPtrArray) old = g_ptr_array_new();
    g_autoptr(GPtrArray) copies = g_ptr_array_new();
    guint nfam = t->families->len;
    g_autofree gint *map = g_new(gint, nfam + 1);
    g_autofree int32_t *maxv = g_new(int32_t, nfam);
    gboolean whole = slen == 0 && elen == 0;
    GTree *rows = t->rows;

    for (guint f = 0; f < nfam; f++) {
        map[f] = (gint)f;
        maxv[f] = G_MAXINT32; /* every version kept */
    }
    map[nfam] = G_MININT;
    emu_table_write_lock(t);
    for (GTreeNode *n = emu_table_seek(t, start, slen, FALSE, TRUE); n != NULL;
         n = g_tree_node_next(n)) {
        emu_row *row = g_tree_node_value(n);

        if (elen > 0 &&
            emu_store_bytes_cmp(row->key.p, row->key.len, end, elen) >= 0) {
            break;
        }
        emu_store_row_compact_cols(row, drop_markers);
        g_ptr_array_add(old, row);
        /* NULL: nothing left of the row */
        g_ptr_array_add(copies, emu_store_row_remap(row, map, nfam, maxv));
    }
    if (whole) {
        /* the tree's nodes too, in key order */
        rows = g_tree_new_full(emu_store_key_cmp_data, NULL, NULL,
                               emu_store_row_free);
    }
    for (guint i = 0; i < copies->len; i++) {
        emu_row *copy = g_ptr_array_index(copies, i);
        const emu_row *row = g_ptr_array_index(old, i);

        if (copy == NULL) {
            if (!whole) {
                g_tree_remove(t->rows, &row->key);
            }
        } else if (whole) {
            g_tree_insert(rows, &copy->key, copy);
        } else {
            g_tree_replace(t->rows, &copy->key, copy); /* frees the old row */
        }
    }
    if (whole) {
        g_tree_destroy(t->rows);
        t->rows = rows;
    }
    emu_table_write_unlock(t);
#ifdef __GLIBC__
    /* The old rows leave the heap in small free chunks: merged now, not
     * by the next calls' allocations (malloc_consolidate in a scan's
     * replies cost ~2 000 instructions a row after a compaction). */
    malloc_trim(0);
#endif
}

gboolean emu_store_compact(emu_store *s, const uint8_t *name, size_t len,
                           gboolean major, GError **error)
{
    g_autoptr(emu_table) t = NULL;
    const struct emu_region *reg = NULL;

    g_rw_lock_reader_lock(&s->lock);
    t = emu_store_lookup(s, name, len);
    if (t != NULL) {
        emu_table_ref(t);
    } else {
        /* Not a table: perhaps a region name. */
        GHashTableIter it;
        gpointer k, v;

        g_hash_table_iter_init(&it, s->tables);
        while (reg == NULL && g_hash_table_iter_next(&it, &k, &v)) {
            emu_table *cand = v;

            for (guint i = 0; i < cand->nregions; i++) {
                gsize nl;
                const uint8_t *np = g_bytes_get_data(cand->regions[i].name,
                                                     &nl);

                if (nl == len && memcmp(np, name, len) == 0) {
                    t = emu_table_ref(cand);
                    reg = &cand->regions[i];
                    break;
                }
            }
        }
    }
    g_rw_lock_reader_unlock(&s->lock);
    if (t == NULL) {
        g_autoptr(GString) msg = g_string_new(
            "java.lang.IllegalArgumentException: Invalid table or region name: ");

        emu_store_append_binary(msg, name, len);
        g_set_error_literal(error, EMU_STORE_ERROR, EMU_STORE_ERROR_IO_NORETRY,
                            msg->str);
        return FALSE;
    }
    /* minor compactions keep delete markers */
    if (reg != NULL) {
        gsize sl, el;
        const uint8_t *sp = g_bytes_get_data(reg->start, &sl);
        const uint8_t *ep = g_bytes_get_data(reg->end, &el);

        emu_store_compact_range(t, sp, sl, ep, el, major);
    } else {
        emu_store_compact_range(t, NULL, 0, NULL, 0, major);
    }
    return TRUE;
}

emu_table *emu_store_region_for_meta_row(emu_store *s, const uint8_t *row,
                                         size_t len, guint *region,
                                         GError **error)
{
    const uint8_t *comma = len ? memchr(row, ',', len) : NULL;
    emu_table *t = NULL;

    if (comma != NULL) {
        const uint8_t *key = comma + 1;
        const uint8_t *last = row + len;
        size_t klen;

        /* Meta rows are "table,row,id": the id follows the last comma. */
        for (const uint8_t *p = row + len; p > key; p--) {
            if (p[-1] == ',') {
                last = p - 1;
                break;
            }
        }
        klen = (size_t)(last - key);
        g_rw_lock_reader_lock(&s->lock);
        t = emu_store_lookup(s, row, (size_t)(comma - row));
        if (t != NULL) {
            emu_table_ref(t);
        }
        g_rw_lock_reader_unlock(&s->lock);
        if (t != NULL) {
            *region = emu_table_region_of(t, key, klen);
            return t;
        }
    }
    g_autoptr(GString) msg = g_string_new(
        "java.io.IOException: Cannot find row in hbase:meta, row=");
    emu_store_append_binary(msg, row, len);
    g_set_error_literal(error, EMU_STORE_ERROR, EMU_STORE_ERROR_IO, msg->str);
    return NULL;
}

/* Stats escaping: only [A-Za-z0-9._:-] stay literal, so fields split on
 * spaces and '=' safely. */
static void emu_store_append_stat_bytes(GString *out, const uint8_t *p,
                                        size_t len)
{
    for (size_t i = 0; i < len; i++) {
        /* memchr, not strchr: strchr finds NUL, the terminator, and a
         * raw NUL would end the stats text there */
        if (g_ascii_isalnum(p[i]) || memchr("._:-", p[i], 4) != NULL) {
            g_string_append_c(out, (char)p[i]);
        } else {
            g_string_append_printf(out, "\\x%02X", p[i]);
        }
    }
}

void emu_store_write_stats(emu_store *s, GString *out)
{
    g_autoptr(GPtrArray) tables = g_ptr_array_new_with_free_func(
        (GDestroyNotify)emu_table_unref);
    GHashTableIter it;
    gpointer k, v;
    gint64 tot_req = 0, tot_rows = 0, tot_cells = 0;

    g_rw_lock_reader_lock(&s->lock);
    g_hash_table_iter_init(&it, s->tables);
    while (g_hash_table_iter_next(&it, &k, &v)) {
        g_ptr_array_add(tables, emu_table_ref(v));
    }
    g_rw_lock_reader_unlock(&s->lock);
    g_string_append_printf(
        out, "# hbase-emu stats v1 time_ms=%" G_GINT64_FORMAT "\n",
        emu_store_now_ms());
    for (guint i = 0; i < tables->len; i++) {
        emu_table *t = g_ptr_array_index(tables, i);

        for (guint r = 0; r < t->nregions; r++) {
            struct emu_region *reg = &t->regions[r];
            gsize sl, el;
            const uint8_t *sp = g_bytes_get_data(reg->start, &sl);
            const uint8_t *ep = g_bytes_get_data(reg->end, &el);
            gint64 rq = __atomic_load_n(&reg->requests, __ATOMIC_RELAXED);
            gint64 rr = __atomic_load_n(&reg->rows_read, __ATOMIC_RELAXED);
            gint64 cw = __atomic_load_n(&reg->cells_written, __ATOMIC_RELAXED);

            g_string_append(out, "region table=");
            emu_store_append_stat_bytes(out, (const uint8_t *)t->name,
                                        t->name_len);
            g_string_append_printf(out, " index=%u start=", r);
            emu_store_append_stat_bytes(out, sp, sl);
            g_string_append(out, " end=");
            emu_store_append_stat_bytes(out, ep, el);
            g_string_append_printf(out,
                                   " requests=%" G_GINT64_FORMAT
                                   " rows_read=%" G_GINT64_FORMAT
                                   " cells_written=%" G_GINT64_FORMAT "\n",
                                   rq, rr, cw);
            tot_req += rq;
            tot_rows += rr;
            tot_cells += cw;
        }
    }
    g_string_append_printf(out,
                           "total requests=%" G_GINT64_FORMAT
                           " rows_read=%" G_GINT64_FORMAT
                           " cells_written=%" G_GINT64_FORMAT "\n",
                           tot_req, tot_rows, tot_cells);
}
