/* job.c: the workers of a migration: copy or verify one unit at a time. */
#include "job.h"

#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "hconn.h"

#define JOB_ERROR job_error_quark()
static GQuark job_error_quark(void);
G_DEFINE_QUARK(job_error_quark, job_error)

typedef enum {
    JOB_ERROR_DATA,        /* a row the mappings cannot carry: no retry */
    JOB_ERROR_INTERRUPTED, /* stopped by a signal between batches */
    JOB_ERROR_CHECKPOINT,  /* the checkpoint could not be written */
} job_error_t;

/* Every version getVer can return. */
#define JOB_ALL_VERSIONS G_MAXINT32

struct job {
    const struct config *cfg;
    struct job_opts opts;
    const struct salt_table *src; /* NULL: unsalted */
    const struct salt_table *dst;

    GMutex lock; /* the fields below */
    struct ckpt *ck;
    GPtrArray *todo;  /* struct ckpt_entry *, not owned */
    GArray *todo_idx; /* guint: each todo entry's place in ck->entries */
    guint next;
    struct progress *prog;
    FILE *results;
    FILE *diffs;
    guint diffs_printed;
    struct job_result res;

    GMutex rate_lock;
    gint64 rate_next_us;

    gint stop;          /* atomic */
    guint64 kill_after; /* test hook: SIGKILL after this many writes; 0 off */
    guint64 writes;     /* atomic: mutateRowsTs calls acknowledged */
};

struct job_key {
    guint off;
    guint len;
};

/* A write ordered by timestamp: one cell of one row. */
struct job_ref {
    int64_t ts;
    guint row;
    guint cell;
};

struct job_worker {
    struct job *j;
    guint slot;
    struct hconn *c;
    struct hconn_rows batch; /* a scanner fetch */
    struct hconn_rows vers;  /* every version of batch's rows */
    struct hconn_rows other; /* the other table's rows (verify) */
    struct hconn_rows cmp;   /* versions of one column (verify) */
    GByteArray *arena;       /* mapped keys */
    GArray *keys;            /* struct job_key per row */
    GArray *refs;            /* struct job_ref */
    GArray *out_rows;        /* struct hconn_row of one call */
    GArray *out_cells;       /* struct hconn_cell of one call */
    GPtrArray *lookup;       /* GBytes: keys asked of the other table */
};

struct job *
job_new(const struct config *cfg, const struct job_opts *opts)
{
    struct job *j = g_new0(struct job, 1);
    const struct config_table *t;
    const char *kill = g_getenv("HSM_TEST_KILL_AFTER_WRITES");

    j->cfg = cfg;
    j->opts = *opts;
    t = config_find_table(cfg, opts->from, strlen(opts->from));
    j->src = t != NULL ? &t->salt : NULL;
    t = config_find_table(cfg, opts->to, strlen(opts->to));
    j->dst = t != NULL ? &t->salt : NULL;
    g_mutex_init(&j->lock);
    g_mutex_init(&j->rate_lock);
    if (kill != NULL) {
        j->kill_after = g_ascii_strtoull(kill, NULL, 10);
    }
    return j;
}

void
job_free(struct job *j)
{
    if (j == NULL) {
        return;
    }
    g_mutex_clear(&j->lock);
    g_mutex_clear(&j->rate_lock);
    g_free(j);
}

const struct salt_table *
job_source_salt(const struct job *j)
{
    return j->src;
}

const struct salt_table *
job_dest_salt(const struct job *j)
{
    return j->dst;
}

static char *
job_describe_table(const char *name, const struct salt_table *t)
{
    g_autofree char *d = t != NULL ? salt_table_describe(t) : NULL;

    return g_strdup_printf("%s (%s)", name, d != NULL ? d : "unsalted");
}

char *
job_describe(const struct job *j)
{
    g_autofree char *from = job_describe_table(j->opts.from, j->src);
    g_autofree char *to = job_describe_table(j->opts.to, j->dst);

    return g_strdup_printf("from %s to %s versions=%s", from, to,
                           j->opts.all_versions ? "all" : "newest");
}

void
job_interrupt(struct job *j)
{
    g_atomic_int_set(&j->stop, 1);
}

/* ---- keys ------------------------------------------------------------ */

/* FALSE, with the JOB_ERROR_DATA error "row 'KEY' ...", the rest of the
 * message as fmt says. */
static gboolean G_GNUC_PRINTF(4, 5)
    job_row_error(GError **error, const uint8_t *key, size_t len,
                  const char *fmt, ...)
{
    g_autofree char *k = salt_escape(key, len);
    g_autofree char *why = NULL;
    va_list ap;

    va_start(ap, fmt);
    why = g_strdup_vprintf(fmt, ap);
    va_end(ap);
    g_set_error(error, JOB_ERROR, JOB_ERROR_DATA, "row '%s' %s", k, why);
    return FALSE;
}

/*
 * The logical key of a physical row of a table salted by from (NULL:
 * unsalted): its salt checked and stripped, or, under a forward-looking
 * rule, the key itself for a legacy row.  FALSE with a JOB_ERROR_DATA
 * error for a row the mapping did not write (wrong or no salt, or a
 * bucket its hash does not give).
 */
static gboolean
job_unsalt(const struct salt_table *from, const uint8_t *key, size_t len,
           const uint8_t **logical_out, size_t *llen_out, GError **error)
{
    const uint8_t *logical = key;
    size_t llen = len;
    uint32_t bucket;

    if (from != NULL && from->legacy.kind != LEGACY_NONE) {
        /* forward-looking: the rule says whose row it is, as the proxy's
         * scans do (a legacy key's row is its own key, unsalted) */
        if (salt_owner(from, key, len, &logical, &llen, &bucket) ==
            LEGACY_OWNER_NONE) {
            return job_row_error(
                error, key, len,
                "is neither a legacy key of its table's rule nor salted by "
                "its mapping (written around the proxy?)");
        }
    } else if (from != NULL) {
        if (!salt_strip(from, key, len, &logical, &llen, &bucket) ||
            salt_bucket(from, logical, llen) != bucket) {
            return job_row_error(
                error, key, len,
                "carries no salt of its table's mapping (written around "
                "the proxy?)");
        }
    }
    *logical_out = logical;
    *llen_out = llen;
    return TRUE;
}

/*
 * The key a physical row of one table has in the other: its salt (if
 * any) checked and stripped (job_unsalt), the other mapping's salt (if
 * any) added.  FALSE with a JOB_ERROR_DATA error for a row the source
 * mapping did not write or one the destination's cannot hold.
 */
static gboolean
job_map_key(const struct salt_table *from, const struct salt_table *to,
            const uint8_t *key, size_t len, GByteArray *arena,
            struct job_key *out, GError **error)
{
    /* set by job_unsalt when it succeeds; -O2 cannot see that */
    const uint8_t *logical = NULL;
    size_t llen = 0;

    if (!job_unsalt(from, key, len, &logical, &llen, error)) {
        return FALSE;
    }
    out->off = arena->len;
    if (to != NULL && to->legacy.kind != LEGACY_NONE) {
        legacy_route_t route = salt_route(to, logical, llen);

        if (route == LEGACY_ROUTE_CLASH) {
            return job_row_error(
                error, logical, llen,
                "cannot be stored in the destination: its rule keeps it "
                "unsalted, where it would read as a salted key's row");
        }
        if (route == LEGACY_ROUTE_LEGACY) {
            g_byte_array_append(arena, logical, (guint)llen);
            out->len = (guint)llen;
            return TRUE;
        }
    }
    if (to == NULL) {
        g_byte_array_append(arena, logical, (guint)llen);
        out->len = (guint)llen;
    } else {
        size_t cap = salt_prefix_len(to) + llen;

        if (!salt_key_valid(to, logical, llen)) {
            return job_row_error(
                error, logical, llen,
                "cannot be stored under the destination's mapping (%s takes "
                "only UTF-8 keys)",
                salt_mapping_name(to->mapping));
        }
        if (llen > salt_max_row(to)) {
            return job_row_error(
                error, logical, llen,
                "is too long for the destination's mapping (%zu bytes, at "
                "most %zu)",
                llen, salt_max_row(to));
        }
        g_byte_array_set_size(arena, arena->len + (guint)cap);
        out->len = (guint)salt_key(to, logical, llen, arena->data + out->off,
                                   cap);
        /* an adopted mapping's salts may be shorter than the longest */
        g_byte_array_set_size(arena, out->off + out->len);
    }
    return TRUE;
}

static void job_diff(struct job *j, guint64 *diffs, const char *fmt, ...)
    G_GNUC_PRINTF(3, 4);

/*
 * How a difference names a row: *name is its logical key, as the
 * application knows it (escaped); *where, when the table stores it under
 * another key, " (SIDE key 'STORED')", else "" (both g_free).
 */
static void
job_row_names(const struct salt_table *t, const char *side, const uint8_t *key,
              size_t len, char **name, char **where)
{
    /* set by job_unsalt when it succeeds */
    const uint8_t *logical = NULL;
    size_t llen = 0;

    if (!job_unsalt(t, key, len, &logical, &llen, NULL) ||
        (llen == len && (len == 0 || memcmp(logical, key, len) == 0))) {
        *name = salt_escape(key, len);
        *where = g_strdup("");
    } else {
        g_autofree char *stored = salt_escape(key, len);

        *name = salt_escape(logical, llen);
        *where = g_strdup_printf(" (%s key '%s')", side, stored);
    }
}

/* A row job_map_rows could not map (verify only). */
#define JOB_KEY_NONE G_MAXUINT

/*
 * Maps every row of rows into w->keys / w->arena.  With diffs (a verify),
 * a row the mappings cannot carry is a difference, its key
 * JOB_KEY_NONE; without (a copy), it stops the unit.
 */
static gboolean
job_map_rows(struct job_worker *w, const struct salt_table *from,
             const struct salt_table *to, const struct hconn_rows *rows,
             guint64 *diffs, GError **error)
{
    g_byte_array_set_size(w->arena, 0);
    g_array_set_size(w->keys, 0);
    for (guint i = 0; i < rows->rows->len; i++) {
        const struct hconn_row *r = &g_array_index(rows->rows,
                                                   struct hconn_row, i);
        struct job_key k;
        g_autoptr(GError) err = NULL;

        if (!job_map_key(from, to, r->key, r->key_len, w->arena, &k, &err)) {
            if (diffs == NULL) {
                g_propagate_error(error, g_steal_pointer(&err));
                return FALSE;
            }
            job_diff(w->j, diffs, "%s table: %s",
                     from == w->j->src ? "source" : "destination",
                     err->message);
            k.off = 0;
            k.len = JOB_KEY_NONE;
        }
        g_array_append_val(w->keys, k);
    }
    return TRUE;
}

static const uint8_t *
job_key_data(const struct job_worker *w, guint i, guint *len)
{
    const struct job_key *k = &g_array_index(w->keys, struct job_key, i);

    *len = k->len;
    return w->arena->data + k->off;
}

/* The mapped keys as GBytes for a getRows of the other table, the rows
 * that could not be mapped left out. */
static void
job_lookup_keys(struct job_worker *w)
{
    g_ptr_array_set_size(w->lookup, 0);
    for (guint i = 0; i < w->keys->len; i++) {
        guint klen;
        const uint8_t *k = job_key_data(w, i, &klen);

        if (klen != JOB_KEY_NONE) {
            g_ptr_array_add(w->lookup, g_bytes_new(k, klen));
        }
    }
}

/* ---- reading --------------------------------------------------------- */

/* Every version of every column of the rows of w->batch, into w->vers:
 * one getVer per column (a Thrift1 scan returns the newest only). */
static gboolean
job_fetch_versions(struct job_worker *w, const char *table, GError **error)
{
    const struct hconn_rows *b = &w->batch;

    hconn_rows_clear(&w->vers);
    for (guint i = 0; i < b->rows->len; i++) {
        const struct hconn_row *r = &g_array_index(b->rows, struct hconn_row,
                                                   i);
        struct hconn_row out = { r->key, r->key_len, w->vers.cells->len, 0 };

        for (guint k = 0; k < r->n; k++) {
            const struct hconn_cell *cell = &g_array_index(b->cells,
                                                           struct hconn_cell,
                                                           r->first + k);

            if (!hconn_get_ver(w->c, table, r->key, r->key_len, cell->col,
                               cell->col_len, JOB_ALL_VERSIONS, &w->vers,
                               error)) {
                return FALSE;
            }
        }
        out.n = w->vers.cells->len - out.first;
        g_array_append_val(w->vers.rows, out);
    }
    return TRUE;
}

/* ---- writing --------------------------------------------------------- */

static void
job_rate_wait(struct job *j, guint rows)
{
    gint64 now, at;

    if (j->opts.max_rows_per_second <= 0) {
        return;
    }
    g_mutex_lock(&j->rate_lock);
    now = g_get_monotonic_time();
    if (j->rate_next_us < now) {
        j->rate_next_us = now;
    }
    at = j->rate_next_us;
    j->rate_next_us += (gint64)(rows * 1e6 / j->opts.max_rows_per_second);
    g_mutex_unlock(&j->rate_lock);
    if (at > now) {
        g_usleep((gulong)(at - now));
    }
}

static gint
job_ref_cmp(gconstpointer a, gconstpointer b)
{
    const struct job_ref *x = a, *y = b;

    if (x->ts != y->ts) {
        return x->ts < y->ts ? -1 : 1;
    }
    if (x->row != y->row) {
        return x->row < y->row ? -1 : 1;
    }
    return x->cell < y->cell ? -1 : x->cell > y->cell;
}

static gboolean
job_flush(struct job_worker *w, int64_t ts, GError **error)
{
    struct job *j = w->j;

    if (w->out_rows->len == 0) {
        return TRUE;
    }
    if (!hconn_mutate_rows_ts(w->c, j->opts.to,
                              (const struct hconn_row *)w->out_rows->data,
                              w->out_rows->len,
                              (const struct hconn_cell *)w->out_cells->data,
                              ts, error)) {
        return FALSE;
    }
    g_array_set_size(w->out_rows, 0);
    g_array_set_size(w->out_cells, 0);
    if (__atomic_add_fetch(&j->writes, 1, __ATOMIC_RELAXED) == j->kill_after &&
        j->kill_after) {
        raise(SIGKILL); /* test hook: die between two acknowledged writes */
    }
    return TRUE;
}

/*
 * Writes every cell of rows to the destination at its own timestamp:
 * Thrift1's Mutation has none, so cells are grouped by timestamp and
 * each group is one mutateRowsTs call (or more, past batch_bytes).
 */
static gboolean
job_write(struct job_worker *w, const struct hconn_rows *rows, guint64 *bytes,
          GError **error)
{
    struct job *j = w->j;
    guint last_row = G_MAXUINT;
    gsize size = 0;
    int64_t ts = 0;

    g_array_set_size(w->refs, 0);
    for (guint i = 0; i < rows->rows->len; i++) {
        const struct hconn_row *r = &g_array_index(rows->rows,
                                                   struct hconn_row, i);

        for (guint k = 0; k < r->n; k++) {
            struct job_ref ref = {
                g_array_index(rows->cells, struct hconn_cell, r->first + k).ts,
                i, r->first + k
            };

            g_array_append_val(w->refs, ref);
        }
    }
    g_array_sort(w->refs, job_ref_cmp);
    g_array_set_size(w->out_rows, 0);
    g_array_set_size(w->out_cells, 0);
    for (guint i = 0; i < w->refs->len; i++) {
        const struct job_ref *ref = &g_array_index(w->refs, struct job_ref, i);
        const struct hconn_cell *cell = &g_array_index(rows->cells,
                                                       struct hconn_cell,
                                                       ref->cell);
        guint klen;
        const uint8_t *key = job_key_data(w, ref->row, &klen);

        if (w->out_rows->len > 0 &&
            (ref->ts != ts ||
             (ref->row != last_row && size >= j->opts.batch_bytes))) {
            if (!job_flush(w, ts, error)) {
                return FALSE;
            }
            size = 0;
        }
        ts = ref->ts;
        if (w->out_rows->len == 0 || ref->row != last_row) {
            struct hconn_row out = { key, klen, w->out_cells->len, 0 };

            g_array_append_val(w->out_rows, out);
            last_row = ref->row;
            size += klen;
        }
        g_array_append_val(w->out_cells, *cell);
        g_array_index(w->out_rows, struct hconn_row, w->out_rows->len - 1).n++;
        size += cell->col_len + cell->val_len;
        *bytes += klen + cell->col_len + cell->val_len;
    }
    return job_flush(w, ts, error);
}

/* ---- one unit -------------------------------------------------------- */

static char *
job_unit_label(const struct unit *u)
{
    g_autofree char *text = unit_format(u);

    return g_strdup(text + (u->side == UNIT_SOURCE ? 7 : 5));
}

static gboolean
job_interrupted(struct job *j, GError **error)
{
    if (!g_atomic_int_get(&j->stop)) {
        return FALSE;
    }
    g_set_error(error, JOB_ERROR, JOB_ERROR_INTERRUPTED,
                "interrupted: stopped after the last acknowledged batch");
    return TRUE;
}

static GBytes *
job_after_key(const struct ckpt_entry *e)
{
    gsize len;
    const uint8_t *p;
    uint8_t *k;

    if (e->after == NULL) {
        return g_bytes_ref(e->unit.start);
    }
    /* the first key after 'after': after || 0x00 */
    p = g_bytes_get_data(e->after, &len);
    k = g_malloc(len + 1);
    memcpy(k, p, len);
    k[len] = 0;
    return g_bytes_new_take(k, len + 1);
}

/* A scanner of table over [start, end), batch_rows rows a fetch. */
static gboolean
job_scanner_open(struct job_worker *w, const char *table, GBytes *start,
                 GBytes *end, int32_t *id, GError **error)
{
    gsize slen, elen;
    const uint8_t *sp = g_bytes_get_data(start, &slen);
    const uint8_t *ep = g_bytes_get_data(end, &elen);

    return hconn_scanner_open(w->c, table, sp, slen, ep, elen,
                              (int32_t)w->j->opts.batch_rows, id, error);
}

static gboolean
job_copy_unit(struct job_worker *w, struct ckpt_entry *e, GError **error)
{
    struct job *j = w->j;
    g_autoptr(GBytes) start = job_after_key(e);
    int32_t id;
    gboolean ok = TRUE;

    if (!job_scanner_open(w, j->opts.from, start, e->unit.end, &id, error)) {
        return FALSE;
    }
    for (;;) {
        const struct hconn_rows *rows = &w->batch;
        const struct hconn_row *last;
        guint64 bytes = 0, cells;
        guint n;

        if (job_interrupted(j, error)) {
            ok = FALSE;
            break;
        }
        hconn_rows_clear(&w->batch);
        if (!hconn_scanner_get_list(w->c, id, (int32_t)j->opts.batch_rows,
                                    &w->batch, error)) {
            return FALSE; /* the scanner is lost with the call */
        }
        n = w->batch.rows->len;
        if (n == 0) {
            break;
        }
        if (j->opts.all_versions) {
            if (!job_fetch_versions(w, j->opts.from, error)) {
                return FALSE;
            }
            rows = &w->vers;
        }
        if (!job_map_rows(w, j->src, j->dst, rows, NULL, error)) {
            ok = FALSE;
            break;
        }
        cells = rows->cells->len;
        if (j->opts.dry_run) {
            for (guint i = 0; i < rows->cells->len; i++) {
                const struct hconn_cell *c = &g_array_index(rows->cells,
                                                            struct hconn_cell,
                                                            i);

                bytes += c->col_len + c->val_len;
            }
            bytes += w->arena->len;
        } else {
            job_rate_wait(j, n);
            if (!job_write(w, rows, &bytes, error)) {
                return FALSE;
            }
        }
        /* Every call of the batch is acknowledged: its last row is the
         * new resume point. */
        last = &g_array_index(w->batch.rows, struct hconn_row, n - 1);
        g_mutex_lock(&j->lock);
        g_clear_pointer(&e->after, g_bytes_unref);
        e->after = g_bytes_new(last->key, last->key_len);
        e->rows += n;
        e->cells += cells;
        e->bytes += bytes;
        ok = ckpt_save(j->ck, error);
        g_mutex_unlock(&j->lock);
        if (!ok) {
            g_prefix_error(error, "checkpoint: ");
            break;
        }
        progress_slot_add(j->prog, w->slot, n, bytes, last->key,
                          last->key_len);
    }
    {
        g_autoptr(GError) close_err = NULL;

        if (!hconn_scanner_close(w->c, id, &close_err) && ok) {
            g_propagate_error(error, g_steal_pointer(&close_err));
            return FALSE;
        }
    }
    if (!ok) {
        return FALSE;
    }
    g_mutex_lock(&j->lock);
    e->done = TRUE;
    ok = ckpt_save(j->ck, error);
    g_mutex_unlock(&j->lock);
    return ok;
}

/* ---- verify ---------------------------------------------------------- */

static void
job_diff(struct job *j, guint64 *diffs, const char *fmt, ...)
{
    va_list ap;

    (*diffs)++;
    g_mutex_lock(&j->lock);
    if (j->diffs_printed < j->opts.max_diffs) {
        g_autofree char *text = NULL;

        va_start(ap, fmt);
        text = g_strdup_vprintf(fmt, ap);
        va_end(ap);
        fprintf(j->diffs, "differ: %s\n", text);
        fflush(j->diffs);
        j->diffs_printed++;
        if (j->diffs_printed == j->opts.max_diffs) {
            fprintf(j->diffs, "differ: (no more differences printed; see "
                              "--max-diffs)\n");
        }
    }
    g_mutex_unlock(&j->lock);
}

static int
job_bytes_cmp(const uint8_t *a, size_t alen, const uint8_t *b, size_t blen)
{
    /* an empty GBytes has no data pointer: memcmp must not see it */
    int c = MIN(alen, blen) > 0 ? memcmp(a, b, MIN(alen, blen)) : 0;

    if (c != 0 || alen == blen) {
        return c;
    }
    return alen < blen ? -1 : 1;
}

/* Cells by column, then newest first. */
static gint
job_cell_cmp(gconstpointer a, gconstpointer b)
{
    const struct hconn_cell *x = a, *y = b;
    int c = job_bytes_cmp(x->col, x->col_len, y->col, y->col_len);

    if (c != 0) {
        return c;
    }
    return x->ts > y->ts ? -1 : x->ts < y->ts;
}

static GArray *
job_sorted_cells(const struct hconn_rows *rows, guint first, guint n)
{
    GArray *a = g_array_sized_new(FALSE, FALSE, sizeof(struct hconn_cell), n);

    g_array_append_vals(a,
                        &g_array_index(rows->cells, struct hconn_cell, first),
                        n);
    g_array_sort(a, job_cell_cmp);
    return a;
}

/* Compares two sorted cell lists; one difference per cell that is not
 * in both with the same value. */
static void
job_compare_cells(struct job *j, const char *row, GArray *src, GArray *dst,
                  guint64 *diffs)
{
    guint a = 0, b = 0;

    while (a < src->len || b < dst->len) {
        const struct hconn_cell *x = a < src->len
                                         ? &g_array_index(src,
                                                          struct hconn_cell, a)
                                         : NULL;
        const struct hconn_cell *y = b < dst->len
                                         ? &g_array_index(dst,
                                                          struct hconn_cell, b)
                                         : NULL;
        int c = x == NULL ? 1 : y == NULL ? -1 : job_cell_cmp(x, y);
        const struct hconn_cell *z = c <= 0 ? x : y;
        g_autofree char *col = salt_escape(z->col, z->col_len);

        if (c == 0) {
            if (job_bytes_cmp(x->val, x->val_len, y->val, y->val_len) != 0) {
                g_autofree char *v1 = salt_escape(x->val, x->val_len);
                g_autofree char *v2 = salt_escape(y->val, y->val_len);

                job_diff(j, diffs,
                         "row '%s' column '%s' ts %" G_GINT64_FORMAT
                         ": value '%s' in source, '%s' in destination",
                         row, col, x->ts, v1, v2);
            }
            a++;
            b++;
        } else if (c < 0) {
            job_diff(j, diffs,
                     "row '%s' column '%s' ts %" G_GINT64_FORMAT
                     ": in source only",
                     row, col, x->ts);
            a++;
        } else {
            job_diff(j, diffs,
                     "row '%s' column '%s' ts %" G_GINT64_FORMAT
                     ": in destination only",
                     row, col, y->ts);
            b++;
        }
    }
}

/* Every version of the columns of two rows, into w->cmp: the source's
 * row cells first (*nsrc of them), then the destination's. */
static gboolean
job_versions_pair(struct job_worker *w, const struct hconn_row *s,
                  const struct hconn_row *d, guint *nsrc, GError **error)
{
    struct job *j = w->j;
    g_autoptr(GHashTable) cols = g_hash_table_new(g_bytes_hash, g_bytes_equal);
    g_autoptr(GPtrArray) list =
        g_ptr_array_new_with_free_func((GDestroyNotify)g_bytes_unref);
    const struct hconn_rows *owners[2] = { &w->batch, &w->other };
    const struct hconn_row *rows[2] = { s, d };

    for (guint side = 0; side < 2; side++) {
        for (guint k = 0; k < rows[side]->n; k++) {
            const struct hconn_cell *c = &g_array_index(owners[side]->cells,
                                                        struct hconn_cell,
                                                        rows[side]->first + k);
            GBytes *b = g_bytes_new(c->col, c->col_len);

            if (g_hash_table_add(cols, b)) {
                g_ptr_array_add(list, b);
            } else {
                g_bytes_unref(b);
            }
        }
    }
    hconn_rows_clear(&w->cmp);
    for (guint side = 0; side < 2; side++) {
        const char *table = side == 0 ? j->opts.from : j->opts.to;

        for (guint i = 0; i < list->len; i++) {
            gsize len;
            const uint8_t *col = g_bytes_get_data(list->pdata[i], &len);

            if (!hconn_get_ver(w->c, table, rows[side]->key,
                               rows[side]->key_len, col, len, JOB_ALL_VERSIONS,
                               &w->cmp, error)) {
                return FALSE;
            }
        }
        if (side == 0) {
            *nsrc = w->cmp.cells->len;
        }
    }
    /* the column names point into 'list': copy them into a reply */
    {
        GByteArray *names = g_byte_array_new();
        GBytes *owner;

        for (guint i = 0; i < w->cmp.cells->len; i++) {
            struct hconn_cell *c = &g_array_index(w->cmp.cells,
                                                  struct hconn_cell, i);
            guint off = names->len;

            g_byte_array_append(names, c->col, c->col_len);
            c->col = GUINT_TO_POINTER(off);
        }
        owner = g_byte_array_free_to_bytes(names);
        for (guint i = 0; i < w->cmp.cells->len; i++) {
            struct hconn_cell *c = &g_array_index(w->cmp.cells,
                                                  struct hconn_cell, i);

            c->col = (const uint8_t *)g_bytes_get_data(owner, NULL) +
                     GPOINTER_TO_UINT(c->col);
        }
        g_ptr_array_add(w->cmp.replies, owner);
    }
    return TRUE;
}

/*
 * The next batch of the scanner id (rows of table 'from' in w->batch),
 * mapped to the other table's keys (diffs counts rows the mapping puts
 * elsewhere) and those rows read from table 'other' into w->other: the
 * number of rows in the batch, 0 at the scanner's end, -1 on error.
 * Both the copy's check and the verify's reverse pass walk this way.
 */
static int
job_batch_pair(struct job *j, struct job_worker *w, int32_t id,
               const struct salt_table *from, const struct salt_table *to,
               const char *other, guint64 *diffs, GError **error)
{
    guint n;

    if (job_interrupted(j, error)) {
        return -1;
    }
    hconn_rows_clear(&w->batch);
    if (!hconn_scanner_get_list(w->c, id, (int32_t)j->opts.batch_rows,
                                &w->batch, error)) {
        return -1;
    }
    n = w->batch.rows->len;
    if (n == 0) {
        return 0;
    }
    if (!job_map_rows(w, from, to, &w->batch, diffs, error)) {
        return -1;
    }
    job_lookup_keys(w);
    hconn_rows_clear(&w->other);
    if (!hconn_get_rows(w->c, other, w->lookup, &w->other, error)) {
        return -1;
    }
    return (int)MIN(n, (guint)G_MAXINT);
}

/*
 * The other table's row for key k (klen): the next one read (w->other, at
 * *o, which then moves past it) if its key is k, else NULL.
 */
static const struct hconn_row *
job_other_match(struct job_worker *w, guint *o, const uint8_t *k, guint klen)
{
    const struct hconn_row *r;

    if (*o >= w->other.rows->len) {
        return NULL;
    }
    r = &g_array_index(w->other.rows, struct hconn_row, *o);
    if (job_bytes_cmp(r->key, r->key_len, k, klen) != 0) {
        return NULL;
    }
    (*o)++;
    return r;
}

/* What a verify batch found, added to the unit and the job at once. */
struct job_verify_tally {
    guint64 diffs, cells, bytes;
    guint64 only; /* destination rows without a source row */
};

/* Source rows of the batch (n rows) against the destination's: every row
 * there, with the same cells (and, with --all-versions, the same
 * versions). */
static gboolean
job_verify_source_batch(struct job_worker *w, guint n,
                        struct job_verify_tally *t, GError **error)
{
    struct job *j = w->j;
    guint o = 0;

    for (guint i = 0; i < n; i++) {
        const struct hconn_row *s = &g_array_index(w->batch.rows,
                                                   struct hconn_row, i);
        const struct hconn_row *d;
        guint klen;
        const uint8_t *k = job_key_data(w, i, &klen);
        g_autofree char *name = NULL, *where = NULL;

        if (klen == JOB_KEY_NONE) {
            continue; /* counted as a difference already */
        }
        job_row_names(j->src, "source", s->key, s->key_len, &name, &where);
        t->cells += s->n;
        for (guint c = 0; c < s->n; c++) {
            const struct hconn_cell *cell = &g_array_index(w->batch.cells,
                                                           struct hconn_cell,
                                                           s->first + c);

            t->bytes += cell->col_len + cell->val_len;
        }
        d = job_other_match(w, &o, k, klen);
        if (d == NULL) {
            job_diff(j, &t->diffs, "row '%s'%s: missing in destination", name,
                     where);
            continue;
        }
        if (j->opts.all_versions) {
            guint nsrc;
            g_autoptr(GArray) a = NULL, b = NULL;

            if (!job_versions_pair(w, s, d, &nsrc, error)) {
                return FALSE;
            }
            a = job_sorted_cells(&w->cmp, 0, nsrc);
            b = job_sorted_cells(&w->cmp, nsrc, w->cmp.cells->len - nsrc);
            job_compare_cells(j, name, a, b, &t->diffs);
        } else {
            g_autoptr(GArray) a = job_sorted_cells(&w->batch, s->first, s->n);
            g_autoptr(GArray) b = job_sorted_cells(&w->other, d->first, d->n);

            job_compare_cells(j, name, a, b, &t->diffs);
        }
    }
    return TRUE;
}

/* Destination rows of the batch (n rows) against the source's: none
 * without its source row. */
static void
job_verify_dest_batch(struct job_worker *w, guint n,
                      struct job_verify_tally *t)
{
    struct job *j = w->j;
    guint o = 0;

    for (guint i = 0; i < n; i++) {
        guint klen;
        const uint8_t *k = job_key_data(w, i, &klen);
        const struct hconn_row *d;
        g_autofree char *name = NULL, *where = NULL;

        if (klen == JOB_KEY_NONE) {
            t->only++; /* no source row can match it; counted as a
                          difference already */
            continue;
        }
        if (job_other_match(w, &o, k, klen) != NULL) {
            continue;
        }
        d = &g_array_index(w->batch.rows, struct hconn_row, i);
        job_row_names(j->dst, "destination", d->key, d->key_len, &name,
                      &where);
        job_diff(j, &t->diffs, "row '%s'%s: not in source", name, where);
        t->only++;
    }
}

/*
 * A verify pass over unit e: the source's rows against the destination,
 * or (the unit's side UNIT_DEST) the destination's against the source.
 * Batch by batch, what each finds counted at once.
 */
static gboolean
job_verify_unit(struct job_worker *w, struct ckpt_entry *e, GError **error)
{
    struct job *j = w->j;
    gboolean dest = e->unit.side == UNIT_DEST;
    int32_t id;

    if (!job_scanner_open(w, dest ? j->opts.to : j->opts.from, e->unit.start,
                          e->unit.end, &id, error)) {
        return FALSE;
    }
    for (;;) {
        struct job_verify_tally t = { 0, 0, 0, 0 };
        const struct hconn_row *last;
        guint n;
        int got = dest ? job_batch_pair(j, w, id, j->dst, j->src, j->opts.from,
                                        &t.diffs, error)
                       : job_batch_pair(j, w, id, j->src, j->dst, j->opts.to,
                                        &t.diffs, error);

        if (got < 0) {
            return FALSE;
        }
        if (got == 0) {
            break;
        }
        n = (guint)got;
        if (dest) {
            job_verify_dest_batch(w, n, &t);
        } else if (!job_verify_source_batch(w, n, &t, error)) {
            return FALSE;
        }
        last = &g_array_index(w->batch.rows, struct hconn_row, n - 1);
        g_mutex_lock(&j->lock);
        e->rows += n;
        e->cells += t.cells;
        e->bytes += t.bytes;
        j->res.diffs += t.diffs;
        j->res.dest_only += t.only;
        g_mutex_unlock(&j->lock);
        progress_slot_add(j->prog, w->slot, n, t.bytes, last->key,
                          last->key_len);
    }
    if (!hconn_scanner_close(w->c, id, error)) {
        return FALSE;
    }
    e->done = TRUE;
    return TRUE;
}

/* ---- workers --------------------------------------------------------- */

static void
job_report(struct job *j, struct ckpt_entry *e, guint64 diffs,
           const GError *err, gboolean interrupted)
{
    g_autofree char *u = unit_format(&e->unit);

    g_mutex_lock(&j->lock);
    if (err != NULL) {
        if (interrupted) {
            j->res.units_interrupted++;
        } else {
            j->res.units_failed++;
        }
        g_printerr("hbase-salt-migrate: unit %s: %s\n", u, err->message);
    } else {
        j->res.units_ok++;
    }
    if (j->results != NULL) {
        if (err != NULL) {
            fprintf(j->results, "%s error %s\n", u, err->message);
        } else if (diffs > 0) {
            fprintf(j->results,
                    "%s differ rows=%" G_GUINT64_FORMAT
                    " cells=%" G_GUINT64_FORMAT " bytes=%" G_GUINT64_FORMAT
                    " diffs=%" G_GUINT64_FORMAT "\n",
                    u, e->rows, e->cells, e->bytes, diffs);
        } else {
            fprintf(j->results,
                    "%s ok rows=%" G_GUINT64_FORMAT " cells=%" G_GUINT64_FORMAT
                    " bytes=%" G_GUINT64_FORMAT "\n",
                    u, e->rows, e->cells, e->bytes);
        }
        fflush(j->results);
    }
    g_mutex_unlock(&j->lock);
}

static gboolean
job_retryable(const GError *err)
{
    return err->domain == HCONN_ERROR ||
           (err->domain == JOB_ERROR && err->code == JOB_ERROR_CHECKPOINT);
}

/* What unit e did (its rows, cells and bytes) into the job's result;
 * j->lock held, or no worker running yet. */
static void
job_res_add_unit(struct job *j, const struct ckpt_entry *e)
{
    if (e->unit.side == UNIT_DEST) {
        j->res.dest_rows += e->rows;
    } else {
        j->res.rows += e->rows;
    }
    j->res.cells += e->cells;
    j->res.bytes += e->bytes;
}

static void
job_run_entry(struct job_worker *w, struct ckpt_entry *e, guint idx)
{
    struct job *j = w->j;
    g_autofree char *label = job_unit_label(&e->unit);
    g_autoptr(GError) err = NULL;
    guint64 diffs0, only0;
    gboolean interrupted;

    g_mutex_lock(&j->lock);
    diffs0 = j->res.diffs;
    only0 = j->res.dest_only;
    g_mutex_unlock(&j->lock);
    for (guint attempt = 0;; attempt++) {
        gboolean ok;

        g_clear_error(&err);
        /* each attempt from where the unit's rows done end (a verify's
         * from its start) */
        progress_slot_begin(j->prog, w->slot, idx, label, e->rows, e->after);
        if (w->c == NULL) {
            w->c = hconn_open(j->cfg, w->slot, &err);
        }
        if (w->c != NULL) {
            if (e->unit.side == UNIT_DEST || j->opts.verify) {
                ok = job_verify_unit(w, e, &err);
            } else {
                ok = job_copy_unit(w, e, &err);
            }
            if (ok) {
                break;
            }
        }
        /* A failed call may leave the connection out of step. */
        g_clear_pointer(&w->c, hconn_free);
        if (!job_retryable(err) || attempt >= j->opts.retries ||
            g_atomic_int_get(&j->stop)) {
            break;
        }
        if (j->opts.verify) {
            /* a verify starts its unit over */
            g_mutex_lock(&j->lock);
            e->rows = e->cells = e->bytes = 0;
            j->res.diffs = diffs0;
            j->res.dest_only = only0;
            g_mutex_unlock(&j->lock);
        }
        g_printerr("hbase-salt-migrate: unit %s: %s; retrying (%u of %u) "
                   "from the last acknowledged row\n",
                   label, err->message, attempt + 1, j->opts.retries);
        g_usleep(G_USEC_PER_SEC * MIN(attempt + 1, 5));
    }
    /* a call cut by the signal, not only a stop between batches, is
     * the interruption's doing; a row the mappings cannot carry is not */
    interrupted = err != NULL &&
                  (g_error_matches(err, JOB_ERROR, JOB_ERROR_INTERRUPTED) ||
                   (g_atomic_int_get(&j->stop) && job_retryable(err)));
    g_mutex_lock(&j->lock);
    job_res_add_unit(j, e);
    diffs0 = j->res.diffs - diffs0;
    g_mutex_unlock(&j->lock);
    progress_slot_end(j->prog, w->slot, err == NULL);
    job_report(j, e, diffs0, err, interrupted);
}

static gpointer
job_worker_main(gpointer data)
{
    struct job_worker *w = data;
    struct job *j = w->j;

    hconn_rows_init(&w->batch);
    hconn_rows_init(&w->vers);
    hconn_rows_init(&w->other);
    hconn_rows_init(&w->cmp);
    w->arena = g_byte_array_new();
    w->keys = g_array_new(FALSE, FALSE, sizeof(struct job_key));
    w->refs = g_array_new(FALSE, FALSE, sizeof(struct job_ref));
    w->out_rows = g_array_new(FALSE, FALSE, sizeof(struct hconn_row));
    w->out_cells = g_array_new(FALSE, FALSE, sizeof(struct hconn_cell));
    w->lookup = g_ptr_array_new_with_free_func((GDestroyNotify)g_bytes_unref);
    for (;;) {
        struct ckpt_entry *e = NULL;
        guint idx = 0;

        g_mutex_lock(&j->lock);
        if (j->next < j->todo->len && !g_atomic_int_get(&j->stop)) {
            idx = g_array_index(j->todo_idx, guint, j->next);
            e = j->todo->pdata[j->next++];
        }
        g_mutex_unlock(&j->lock);
        if (e == NULL) {
            break;
        }
        job_run_entry(w, e, idx);
    }
    hconn_free(w->c);
    hconn_rows_free(&w->batch);
    hconn_rows_free(&w->vers);
    hconn_rows_free(&w->other);
    hconn_rows_free(&w->cmp);
    g_byte_array_unref(w->arena);
    g_array_unref(w->keys);
    g_array_unref(w->refs);
    g_array_unref(w->out_rows);
    g_array_unref(w->out_cells);
    g_ptr_array_unref(w->lookup);
    return NULL;
}

/* ---- the progress estimate ---------------------------------------------- */

/*
 * What a unit holds, for the progress estimate: its first keys and, when
 * it holds more than those, its last key (a reversed scan from its end:
 * HBase's takes the end row itself, which is the next unit's).  Only keys
 * travel (FirstKeyOnlyFilter, KeyOnlyFilter).
 */
static gboolean
job_sample_unit(struct job *j, struct hconn *c, guint idx,
                const struct unit *u, GError **error)
{
    const char *table = u->side == UNIT_DEST ? j->opts.to : j->opts.from;
    gsize slen, elen;
    const uint8_t *sp = g_bytes_get_data(u->start, &slen);
    const uint8_t *ep = g_bytes_get_data(u->end, &elen);
    g_autoptr(GPtrArray) keys =
        g_ptr_array_new_with_free_func((GDestroyNotify)g_bytes_unref);
    g_autoptr(GBytes) last = NULL;
    struct hconn_rows fwd, rev;
    gboolean ok, whole = FALSE;

    hconn_rows_init(&fwd);
    hconn_rows_init(&rev);
    ok = hconn_sample_keys(c, table, sp, slen, ep, elen, FALSE,
                           PROGRESS_SAMPLE_ROWS, &fwd, error);
    if (ok) {
        for (guint i = 0; i < fwd.rows->len; i++) {
            const struct hconn_row *r = &g_array_index(fwd.rows,
                                                       struct hconn_row, i);

            g_ptr_array_add(keys, g_bytes_new(r->key, r->key_len));
        }
        whole = fwd.rows->len < PROGRESS_SAMPLE_ROWS;
    }
    if (ok && !whole) {
        g_autoptr(GError) err = NULL;

        /* a server that refuses a reversed scan answered in step: the
         * range's end stands for the last row */
        if (!hconn_sample_keys(c, table, ep, elen, sp, slen, TRUE, 2, &rev,
                               &err) &&
            !g_error_matches(err, HCONN_ERROR, HCONN_ERROR_REMOTE) &&
            !g_error_matches(err, HCONN_ERROR, HCONN_ERROR_APP)) {
            g_propagate_error(error, g_steal_pointer(&err));
            ok = FALSE;
        }
    }
    for (guint i = 0; ok && !whole && i < rev.rows->len; i++) {
        const struct hconn_row *r = &g_array_index(rev.rows, struct hconn_row,
                                                   i);
        gsize fl;
        const uint8_t *f = g_bytes_get_data(keys->pdata[keys->len - 1], &fl);

        int cmp = unit_key_cmp(r->key, r->key_len, f, fl);

        if (elen > 0 && unit_key_cmp(r->key, r->key_len, ep, elen) >= 0) {
            continue; /* the next unit's first row */
        }
        if (cmp == 0) {
            whole = TRUE; /* the sample ended at the unit's last row */
        } else if (cmp > 0) {
            last = g_bytes_new(r->key, r->key_len);
        }
        break; /* (a server that ignores `reversed` answers lower keys) */
    }
    if (ok) {
        progress_unit_sample(j->prog, idx, keys, whole, last);
    }
    hconn_rows_free(&fwd);
    hconn_rows_free(&rev);
    return ok;
}

struct job_sampler {
    struct job *j;
    guint slot;
    guint *next; /* under j->lock */
};

static gpointer
job_sample_main(gpointer data)
{
    struct job_sampler *s = data;
    struct job *j = s->j;
    struct hconn *c = NULL;

    for (;;) {
        g_autoptr(GError) err = NULL;
        const struct ckpt_entry *e = NULL;
        guint idx = 0;

        g_mutex_lock(&j->lock);
        if (*s->next < j->todo->len && !g_atomic_int_get(&j->stop)) {
            idx = g_array_index(j->todo_idx, guint, *s->next);
            e = j->todo->pdata[(*s->next)++];
        }
        g_mutex_unlock(&j->lock);
        if (e == NULL) {
            break;
        }
        if (c == NULL) {
            c = hconn_open(j->cfg, s->slot, &err);
        }
        /* a unit without a sample is estimated as the others: the copy
         * itself says what went wrong, if anything did */
        if (c != NULL && !job_sample_unit(j, c, idx, &e->unit, &err)) {
            g_clear_pointer(&c, hconn_free);
        }
        if (err != NULL) {
            g_debug("progress sample of a unit: %s", err->message);
        }
    }
    hconn_free(c);
    return NULL;
}

/* Samples every unit to do, nworkers at once, before any is run. */
static void
job_sample(struct job *j, guint nworkers)
{
    struct job_sampler *s = g_new0(struct job_sampler, nworkers);
    GThread **threads = g_new0(GThread *, nworkers);
    guint next = 0;

    for (guint i = 0; i < nworkers; i++) {
        s[i] = (struct job_sampler){ j, i, &next };
        threads[i] = g_thread_new("sample", job_sample_main, &s[i]);
    }
    for (guint i = 0; i < nworkers; i++) {
        g_thread_join(threads[i]);
    }
    g_free(threads);
    g_free(s);
}

gboolean
job_run(struct job *j, struct ckpt *ck, struct progress *prog, FILE *results,
        FILE *diffs, struct job_result *res, GError **error)
{
    guint nworkers;
    struct job_worker *workers;
    GThread **threads;

    j->ck = ck;
    j->prog = prog;
    j->results = results;
    j->diffs = diffs;
    j->todo = g_ptr_array_new();
    j->todo_idx = g_array_new(FALSE, FALSE, sizeof(guint));
    for (guint i = 0; i < ck->entries->len; i++) {
        struct ckpt_entry *e = ck->entries->pdata[i];

        progress_unit_set(prog, i, &e->unit, e->idle, e->rows);
        if (e->idle) {
            continue;
        }
        if (e->unit.side == UNIT_DEST && !j->opts.verify) {
            g_ptr_array_unref(j->todo);
            g_array_unref(j->todo_idx);
            g_set_error(error, JOB_ERROR, JOB_ERROR_DATA,
                        "\"dest\" units are for --verify only");
            return FALSE;
        }
        if (e->done) {
            job_res_add_unit(j, e);
            j->res.units_ok++;
            progress_add_done(prog, i, e->rows);
            if (results != NULL) {
                g_autofree char *u = unit_format(&e->unit);

                fprintf(results,
                        "%s ok rows=%" G_GUINT64_FORMAT
                        " cells=%" G_GUINT64_FORMAT " bytes=%" G_GUINT64_FORMAT
                        " (done before)\n",
                        u, e->rows, e->cells, e->bytes);
            }
            continue;
        }
        g_ptr_array_add(j->todo, e);
        g_array_append_val(j->todo_idx, i);
    }
    nworkers = MIN(j->opts.parallel, MAX(j->todo->len, 1));
    if (j->opts.sample) {
        job_sample(j, nworkers);
    }
    workers = g_new0(struct job_worker, nworkers);
    threads = g_new0(GThread *, nworkers);
    for (guint i = 0; i < nworkers; i++) {
        workers[i].j = j;
        workers[i].slot = i;
        threads[i] = g_thread_new("migrate", job_worker_main, &workers[i]);
    }
    for (guint i = 0; i < nworkers; i++) {
        g_thread_join(threads[i]);
    }
    g_free(threads);
    g_free(workers);
    /* units never started: the run was interrupted before them */
    j->res.units_interrupted += j->todo->len - MIN(j->next, j->todo->len);
    g_ptr_array_unref(j->todo);
    g_array_unref(j->todo_idx);
    j->todo = NULL;
    j->todo_idx = NULL;
    j->res.writes = __atomic_load_n(&j->writes, __ATOMIC_RELAXED);
    *res = j->res;
    return TRUE;
}
