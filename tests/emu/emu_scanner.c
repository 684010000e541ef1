/* emu_scanner.c: process-wide HBase scanners that read the store lazily. */
#include "emu_scanner.h"

#include <string.h>

#include "emu_result.h"

/*
 * A scanner keeps only its position (the last row key it passed), never a
 * copy of the table: each fetch re-seeks under the table's read lock and
 * walks forward, so a million-row scan costs one row at a time and
 * writers interleave between fetches.  Rows split by batchSize wait in
 * 'pending' until the next fetch.
 */

/* Rows examined per lock hold, so a long filtered scan lets writers in. */
#define EMU_SCANNER_STEP 4096

struct emu_scanner {
    gint refcount;
    int32_t id;
    GMutex lock; /* one fetch at a time per scanner */
    emu_table *table;
    GBytes *start;
    GBytes *stop;
    gboolean has_prefix;
    int64_t max_ts;
    emu_colspec *cols;
    int32_t batch;
    gboolean sorted;
    gboolean reversed;
    emu_filter *filter;
    emu_scan_emit_fn emit;
    int64_t min_ts;
    int32_t max_versions;
    int64_t *fam_min; /* NULL or one per family */
    int64_t *fam_max;
    int32_t limit; /* rows left to return; -1: no limit */
    gboolean stop_inclusive;
    GByteArray *last; /* last row passed; NULL before the first */
    gboolean done;
    GQueue pending;     /* reply objects left from a split row */
    gint64 last_access; /* monotonic us, under the registry lock */
    gint64 timeout_us;  /* idle time after which it is gone */
    gint busy;          /* calls running on it (emu_scanner_busy) */
    guint owner;        /* the listener that opened it */
};

static struct {
    GMutex lock;
    /* per service, as HBase runs Thrift1 and Thrift2 as two servers, each
     * handler with its own map and its own int counter from 0 */
    GHashTable *scanners;  /* Thrift1: GINT_TO_POINTER(id) -> emu_scanner * */
    GHashTable *scanners2; /* Thrift2 */
    guint32 next_id;
    guint32 next_id2;
    gint64 timeout_us;  /* Thrift1 scanners */
    gint64 timeout2_us; /* Thrift2 scanners */
} emu_scanner_reg;

/* The listener whose call this thread serves (emu_scanner_set_owner). */
static GPrivate emu_scanner_owner_key;

void emu_scanner_set_owner(guint owner)
{
    g_private_set(&emu_scanner_owner_key, GUINT_TO_POINTER(owner));
}

static guint emu_scanner_owner(void)
{
    return GPOINTER_TO_UINT(g_private_get(&emu_scanner_owner_key));
}

static void emu_scanner_free(emu_scanner *sc)
{
    GObject *r;

    while ((r = g_queue_pop_head(&sc->pending)) != NULL) {
        g_object_unref(r);
    }
    g_free(sc->fam_min);
    g_free(sc->fam_max);
    if (sc->filter != NULL) {
        emu_filter_free(sc->filter);
    }
    emu_colspec_free(sc->cols);
    if (sc->last != NULL) {
        g_byte_array_unref(sc->last);
    }
    g_bytes_unref(sc->start);
    g_bytes_unref(sc->stop);
    emu_table_unref(sc->table);
    g_mutex_clear(&sc->lock);
    g_free(sc);
}

void emu_scanner_unref(emu_scanner *sc)
{
    if (sc != NULL && g_atomic_int_dec_and_test(&sc->refcount)) {
        emu_scanner_free(sc);
    }
}

void emu_scanner_init(int64_t timeout_ms, int64_t timeout2_ms)
{
    g_mutex_init(&emu_scanner_reg.lock);
    emu_scanner_reg.scanners = g_hash_table_new_full(
        g_direct_hash, g_direct_equal, NULL,
        (GDestroyNotify)emu_scanner_unref);
    emu_scanner_reg.scanners2 = g_hash_table_new_full(
        g_direct_hash, g_direct_equal, NULL,
        (GDestroyNotify)emu_scanner_unref);
    emu_scanner_reg.next_id = 0;
    emu_scanner_reg.next_id2 = 0;
    emu_scanner_reg.timeout_us = timeout_ms * 1000;
    emu_scanner_reg.timeout2_us = timeout2_ms * 1000;
}

void emu_scanner_shutdown(void)
{
    g_mutex_lock(&emu_scanner_reg.lock);
    g_clear_pointer(&emu_scanner_reg.scanners, g_hash_table_unref);
    g_clear_pointer(&emu_scanner_reg.scanners2, g_hash_table_unref);
    g_mutex_unlock(&emu_scanner_reg.lock);
}

/* The service's map: Thrift2 scanners are the ones with an emit function.
 * Registry lock held; NULL after shutdown. */
static GHashTable *emu_scanner_map(emu_scan_emit_fn emit)
{
    return emit != NULL ? emu_scanner_reg.scanners2 : emu_scanner_reg.scanners;
}

emu_scanner *emu_scanner_new(emu_table *t, struct emu_scan_spec *spec,
                             GError **error)
{
    emu_scanner *sc;
    emu_filter *filter = NULL;

    if (spec->filter != NULL) {
        g_autoptr(GError) ferr = NULL;

        filter = emu_filter_compile(spec->filter, spec->filter_len,
                                    spec->reversed, &ferr);
        if (filter == NULL) {
            const char *msg = ferr ? ferr->message : "invalid filter";

            /* Reads as the IllegalArgumentException ParseFilter throws. */
            g_set_error(error, EMU_STORE_ERROR, EMU_STORE_ERROR_IO_NORETRY,
                        "%s%s",
                        g_str_has_prefix(msg, "java.")
                            ? ""
                            : "java.lang.IllegalArgumentException: ",
                        msg);
            return NULL;
        }
    }
    sc = g_new0(emu_scanner, 1);
    sc->refcount = 1;
    g_mutex_init(&sc->lock);
    sc->table = emu_table_ref(t);
    sc->start = g_bytes_new(spec->start, spec->start_len);
    sc->stop = g_bytes_new(spec->stop, spec->stop_len);
    sc->has_prefix = spec->has_prefix;
    sc->max_ts = spec->max_ts;
    sc->cols = g_steal_pointer(&spec->cols);
    sc->batch = spec->batch;
    sc->sorted = spec->sorted;
    sc->reversed = spec->reversed;
    sc->filter = filter;
    sc->emit = spec->emit;
    sc->min_ts = spec->min_ts;
    sc->max_versions = MAX(spec->max_versions, 1);
    if (spec->fam_min != NULL) {
        guint nf = emu_table_family_count(t);

        sc->fam_min = g_memdup2(spec->fam_min, nf * sizeof(int64_t));
        sc->fam_max = g_memdup2(spec->fam_max, nf * sizeof(int64_t));
    }
    sc->limit = spec->limit > 0 ? spec->limit : -1;
    sc->stop_inclusive = spec->stop_inclusive;
    g_queue_init(&sc->pending);
    return sc;
}

gboolean emu_scanner_open(emu_table *t, struct emu_scan_spec *spec,
                          int32_t *id, GError **error)
{
    emu_scanner *sc = emu_scanner_new(t, spec, error);

    if (sc == NULL) {
        return FALSE;
    }
    g_mutex_lock(&emu_scanner_reg.lock);
    /* Java int arithmetic: wraps to negative after 2^31 opens. */
    sc->id = (int32_t)(sc->emit != NULL ? emu_scanner_reg.next_id2++
                                        : emu_scanner_reg.next_id++);
    sc->last_access = g_get_monotonic_time();
    sc->owner = emu_scanner_owner();
    sc->timeout_us = sc->emit != NULL ? emu_scanner_reg.timeout2_us
                                      : emu_scanner_reg.timeout_us;
    g_hash_table_replace(emu_scanner_map(sc->emit), GINT_TO_POINTER(sc->id),
                         sc);
    g_mutex_unlock(&emu_scanner_reg.lock);
    *id = sc->id;
    return TRUE;
}

static void emu_scanner_invalid(GError **error)
{
    g_set_error_literal(error, EMU_STORE_ERROR, EMU_STORE_ERROR_ILLEGAL,
                        "scanner ID is invalid");
}

emu_scanner *emu_scanner_get(int32_t id, GError **error)
{
    return emu_scanner_get_for(id, NULL, error);
}

emu_scanner *emu_scanner_get_for(int32_t id, emu_scan_emit_fn emit,
                                 GError **error)
{
    emu_scanner *sc;
    GHashTable *map;
    gint64 now = g_get_monotonic_time();

    g_mutex_lock(&emu_scanner_reg.lock);
    map = emu_scanner_map(emit);
    sc = map ? g_hash_table_lookup(map, GINT_TO_POINTER(id)) : NULL;
    /* Another server's scanner: HBase's servers each keep their own. */
    if (sc != NULL && sc->owner != emu_scanner_owner()) {
        sc = NULL;
    }
    if (sc != NULL && now - sc->last_access > sc->timeout_us) {
        /* Guava's expireAfterAccess: gone on the next look. */
        g_hash_table_remove(map, GINT_TO_POINTER(id));
        sc = NULL;
    }
    if (sc != NULL) {
        sc->last_access = now;
        g_atomic_int_inc(&sc->refcount);
    }
    g_mutex_unlock(&emu_scanner_reg.lock);
    if (sc == NULL) {
        emu_scanner_invalid(error);
    }
    return sc;
}

gboolean emu_scanner_close(int32_t id, GError **error)
{
    return emu_scanner_close_for(id, NULL, error);
}

void emu_scanner_busy(emu_scanner *sc, gboolean on)
{
    g_atomic_int_add(&sc->busy, on ? 1 : -1);
}

gboolean emu_scanner_close_for(int32_t id, emu_scan_emit_fn emit,
                               GError **error)
{
    g_autoptr(emu_scanner) sc = emu_scanner_get_for(id, emit, error);

    if (sc == NULL) {
        return FALSE;
    }
    if (g_atomic_int_get(&sc->busy) > 0) {
        g_printerr("hbase-emu: scanner %d closed while a call on it runs "
                   "(HBase's ClientScanner is not thread-safe)\n",
                   id);
    }
    g_mutex_lock(&emu_scanner_reg.lock);
    if (emu_scanner_map(emit) != NULL) {
        g_hash_table_remove(emu_scanner_map(emit), GINT_TO_POINTER(id));
    }
    g_mutex_unlock(&emu_scanner_reg.lock);
    return TRUE;
}

/* Drops a map's idle scanners; registry lock held. */
static void emu_scanner_expire_map(GHashTable *map, gint64 now)
{
    GHashTableIter it;
    gpointer k, v;

    g_hash_table_iter_init(&it, map);
    while (g_hash_table_iter_next(&it, &k, &v)) {
        emu_scanner *sc = v;

        if (now - sc->last_access > sc->timeout_us) {
            g_hash_table_iter_remove(&it);
        }
    }
}

guint emu_scanner_expire(void)
{
    gint64 now = g_get_monotonic_time();
    guint left;

    g_mutex_lock(&emu_scanner_reg.lock);
    if (emu_scanner_reg.scanners == NULL) {
        g_mutex_unlock(&emu_scanner_reg.lock);
        return 0;
    }
    emu_scanner_expire_map(emu_scanner_reg.scanners, now);
    emu_scanner_expire_map(emu_scanner_reg.scanners2, now);
    left = g_hash_table_size(emu_scanner_reg.scanners) +
           g_hash_table_size(emu_scanner_reg.scanners2);
    g_mutex_unlock(&emu_scanner_reg.lock);
    return left;
}

/* Drops a map's scanners of one listener; registry lock held. */
static guint emu_scanner_drop_map(GHashTable *map, guint owner)
{
    GHashTableIter it;
    gpointer k, v;
    guint n = 0;

    g_hash_table_iter_init(&it, map);
    while (g_hash_table_iter_next(&it, &k, &v)) {
        if (((emu_scanner *)v)->owner == owner) {
            g_hash_table_iter_remove(&it);
            n++;
        }
    }
    return n;
}

guint emu_scanner_drop_owner(guint owner)
{
    guint n = 0;

    g_mutex_lock(&emu_scanner_reg.lock);
    if (emu_scanner_reg.scanners != NULL) {
        n = emu_scanner_drop_map(emu_scanner_reg.scanners, owner) +
            emu_scanner_drop_map(emu_scanner_reg.scanners2, owner);
    }
    g_mutex_unlock(&emu_scanner_reg.lock);
    return n;
}

emu_table *emu_scanner_table(emu_scanner *sc)
{
    return sc->table;
}

GBytes *emu_scanner_position(emu_scanner *sc)
{
    GBytes *pos;

    g_mutex_lock(&sc->lock);
    pos = sc->last ? g_bytes_new(sc->last->data, sc->last->len)
                   : g_bytes_ref(sc->start);
    g_mutex_unlock(&sc->lock);
    return pos;
}

/* TRUE when key is past the scan's end (stop row or prefix). */
static gboolean emu_scanner_past_end(const emu_scanner *sc, const uint8_t *key,
                                     size_t len)
{
    gsize sl;
    const uint8_t *sp;

    if (sc->has_prefix) {
        sp = g_bytes_get_data(sc->start, &sl);
        return len < sl || (sl > 0 && memcmp(key, sp, sl) != 0);
    }
    sp = g_bytes_get_data(sc->stop, &sl);
    if (sl == 0) {
        return FALSE;
    }
    int c = memcmp(key, sp, MIN(len, sl));
    if (c == 0) {
        c = len < sl ? -1 : len > sl ? 1 : 0;
    }
    if (sc->stop_inclusive) {
        return sc->reversed ? c < 0 : c > 0;
    }
    return sc->reversed ? c <= 0 : c >= 0;
}

/* Reads up to 'want' more rows into sc->pending; table read lock held. */
static void emu_scanner_step(emu_scanner *sc, guint want)
{
    emu_table *t = sc->table;
    g_autoptr(GArray) cells = g_array_new(FALSE, FALSE,
                                          sizeof(struct emu_cell));
    struct emu_read rd = { sc->cols, sc->max_ts, sc->max_versions };
    GTreeNode *n;
    guint examined = 0;

    rd.min_ts = sc->min_ts;
    rd.fam_min = sc->fam_min;
    rd.fam_max = sc->fam_max;
    if (sc->limit == 0) {
        sc->done = TRUE;
        return;
    }

    if (sc->last == NULL) {
        gsize sl;
        const uint8_t *sp = g_bytes_get_data(sc->start, &sl);

        n = emu_table_seek(t, sl ? sp : NULL, sl, sc->reversed, TRUE);
    } else {
        n = emu_table_seek(t, sc->last->data, sc->last->len, sc->reversed,
                           FALSE);
    }
    for (;
         n != NULL && sc->pending.length < want && examined < EMU_SCANNER_STEP;
         n = emu_table_node_step(n, sc->reversed)) {
        emu_row *row = emu_table_node_row(n);
        size_t klen;
        const uint8_t *key = emu_row_key(row, &klen);
        guint ncells;

        if (emu_scanner_past_end(sc, key, klen)) {
            sc->done = TRUE;
            return;
        }
        if (sc->last == NULL) {
            sc->last = g_byte_array_new();
        }
        g_byte_array_set_size(sc->last, 0);
        g_byte_array_append(sc->last, key, (guint)klen);
        examined++;

        g_array_set_size(cells, 0);
        emu_row_cells(t, row, &rd, cells);
        ncells = cells->len;
        if (ncells == 0) {
            continue;
        }
        if (sc->filter != NULL) {
            emu_filter_result res = emu_filter_row_cells(sc->filter, key, klen,
                                                         cells);

            if (res == EMU_FILTER_DONE) {
                sc->done = TRUE;
                return;
            }
            if (res == EMU_FILTER_SKIP) {
                if (emu_filter_all_remaining(sc->filter)) {
                    sc->done = TRUE;
                    return;
                }
                continue;
            }
            ncells = cells->len;
            if (emu_filter_all_remaining(sc->filter)) {
                sc->done = TRUE;
            }
            if (ncells == 0) {
                if (sc->done) {
                    return;
                }
                continue;
            }
        }
        {
            g_autoptr(GPtrArray) rows = g_ptr_array_new();
            struct emu_region *reg = emu_table_region(
                t, emu_table_region_of(t, key, klen));

            (sc->emit != NULL ? sc->emit : emu_result_add_row)(
                rows, key, klen, (const struct emu_cell *)(void *)cells->data,
                ncells, sc->sorted, sc->batch);
            for (guint i = 0; i < rows->len; i++) {
                g_queue_push_tail(&sc->pending, g_ptr_array_index(rows, i));
            }
            __atomic_fetch_add(&reg->rows_read, 1, __ATOMIC_RELAXED);
            /* Scan.setLimit counts rows, however batchSize splits them. */
            if (sc->limit > 0 && --sc->limit == 0) {
                sc->done = TRUE;
            }
        }
        if (sc->done) {
            return;
        }
    }
    if (n == NULL) {
        sc->done = TRUE;
    }
}

gboolean emu_scanner_fetch(emu_scanner *sc, int32_t n, GPtrArray *out,
                           GError **error)
{
    gboolean ok = TRUE;

    if (n < 0) {
        /* ResultScanner.next(n) sizes an ArrayList by n: an unchecked
         * IllegalArgumentException, INTERNAL_ERROR to the client */
        g_set_error(error, EMU_STORE_ERROR, EMU_STORE_ERROR_INTERNAL,
                    "java.lang.IllegalArgumentException: Illegal Capacity: "
                    "%d",
                    n);
        return FALSE;
    }
    if (n == 0) {
        return TRUE; /* ResultScanner.next(0): nothing, read as the end */
    }
    g_mutex_lock(&sc->lock);
    while (out->len < (guint)n) {
        GObject *r = g_queue_pop_head(&sc->pending);

        if (r != NULL) {
            g_ptr_array_add(out, r);
            continue;
        }
        if (sc->done) {
            break;
        }
        emu_table_read_lock(sc->table);
        ok = emu_table_is_live(sc->table, error);
        if (ok) {
            emu_scanner_step(sc, (guint)n - out->len);
        }
        emu_table_read_unlock(sc->table);
        if (!ok) {
            break;
        }
    }
    g_mutex_unlock(&sc->lock);
    return ok;
}
