/* metrics.c: counters and histograms kept per worker, summed on scrape. */
#include "metrics.h"

#include <string.h>

#include "codec.h"
#include "hbase1.h"
#include "keyviz.h"
#include "tabstate.h"

const guint64 metrics_lat_le_us[METRICS_LAT_BUCKETS] = {
    100,   250,    500,    1000,   2500,    5000,    10000,   25000,
    50000, 100000, 250000, 500000, 1000000, 2500000, 5000000, 10000000,
};

const guint64 metrics_batch_le[METRICS_BATCH_BUCKETS] = {
    1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000,
};

const char *const metrics_err_label[METRICS_ERR_KINDS] = {
    [METRICS_ERR_IO] = "IOError",
    [METRICS_ERR_IA] = "IllegalArgument",
    [METRICS_ERR_APP] = "TApplicationException",
    [METRICS_ERR_TRANSPORT] = "transport",
};

/* The argument field of method's rows when it is a multi-row call (a
 * read or write whose arguments list rows or row structs at the top),
 * else 0. */
static int16_t
metrics_batch_field(const struct hbase1_method *hm)
{
    if ((hm->kind != HBASE1_READ && hm->kind != HBASE1_WRITE) ||
        hm->args == NULL) {
        return 0;
    }
    for (uint8_t f = 0; f < hm->args->nfields; f++) {
        const struct hbase1_field *fd = &hm->args->fields[f];

        if (fd->type == WIRE_T_LIST &&
            (fd->action == HBASE1_ROWS || fd->action == HBASE1_STRUCT_LIST)) {
            return fd->fid;
        }
    }
    return 0;
}

static void
metrics_table_free(gpointer data)
{
    struct metrics_table *t = data;

    g_free(t->name);
    g_free(t);
}

/* keyviz_bucket_totals_fn: the key visualizer's buckets are these
 * counters, per interval (main thread, as the scrape). */
static gboolean
metrics_keyviz_totals(void *ctx, unsigned id, uint32_t buckets, guint64 *out)
{
    const struct metrics *m = ctx;
    static const enum metrics_table_kind kinds[KEYVIZ_BUCKET_KINDS] = {
        METRICS_TABLE_READS, METRICS_TABLE_WRITES, METRICS_TABLE_ROWS
    };

    if (id == 0 || id > m->tables->len ||
        m->workers[0].tables[id - 1] == NULL) {
        return FALSE; /* counted by the key visualizer alone */
    }
    memset(out, 0, (size_t)(buckets + 1) * KEYVIZ_BUCKET_KINDS * 8);
    for (unsigned w = 0; w < m->nworkers; w++) {
        const guint64 *blk = m->workers[w].tables[id - 1];

        for (uint32_t b = 0; b <= buckets; b++) {
            for (unsigned k = 0; k < KEYVIZ_BUCKET_KINDS; k++) {
                out[(size_t)b * KEYVIZ_BUCKET_KINDS + k] +=
                    METRICS_GET(blk[metrics_table_at(buckets, kinds[k], b)]);
            }
        }
    }
    return TRUE;
}

struct metrics *
metrics_new(unsigned nworkers, struct keyviz *kv)
{
    struct metrics *m = g_new0(struct metrics, 1);

    m->kv = kv;

    m->nmethods = hbase1_method_count();
    m->labels = g_new0(char *, m->nmethods + 1);
    for (size_t i = 0; i < m->nmethods; i++) {
        const struct hbase1_method *hm = hbase1_method_at(i);

        m->labels[i] = hm->service->id == HBASE1_SERVICE_THRIFT1
                           ? g_strdup_printf("method=\"%s\"", hm->name)
                           : g_strdup_printf("method=\"%s\",service=\"%s\"",
                                             hm->name, hm->service->label);
    }
    m->nworkers = nworkers;
    m->workers = g_new0(struct metrics_worker, nworkers);
    for (unsigned i = 0; i < nworkers; i++) {
        m->workers[i].methods = g_new0(struct metrics_method, m->nmethods);
        m->workers[i].kv = kv != NULL ? keyviz_worker(kv, i) : NULL;
    }
    m->tables = g_ptr_array_new_with_free_func(metrics_table_free);
    m->table_ids = g_hash_table_new(g_str_hash, g_str_equal);
    m->last_reload_ok = TRUE;
    m->start_time = g_get_real_time();
    keyviz_set_bucket_totals(kv, metrics_keyviz_totals, m);
    return m;
}

void
metrics_free(struct metrics *m)
{
    if (m == NULL) {
        return;
    }
    for (unsigned i = 0; i < m->nworkers; i++) {
        for (guint t = 0; t < m->tables->len; t++) {
            g_free(m->workers[i].tables[t]);
        }
        g_free(m->workers[i].methods);
    }
    keyviz_free(m->kv);
    g_strfreev(m->labels);
    g_free(m->workers);
    g_hash_table_destroy(m->table_ids);
    g_ptr_array_unref(m->tables);
    g_free(m);
}

struct metrics_worker *
metrics_worker(struct metrics *m, unsigned id)
{
    return &m->workers[id];
}

/* ct's id (stats_id): its name's, or a new one; keyviz_only: an
 * unsalted table only the key visualizer counts. */
static void
metrics_add_table(struct metrics *m, const struct config_table *ct,
                  unsigned *stats_id, gboolean keyviz_only)
{
    gpointer id = g_hash_table_lookup(m->table_ids, ct->name);
    struct metrics_table *t;

    if (id != NULL) {
        /* same name, same buckets: reload refuses anything else */
        t = g_ptr_array_index(m->tables, GPOINTER_TO_UINT(id) - 1);
        if (t->buckets == ct->salt.buckets && t->keyviz_only == keyviz_only) {
            *stats_id = GPOINTER_TO_UINT(id);
            /* read only by the main thread, which renders */
            t->legacy = t->legacy || ct->salt.legacy.kind != LEGACY_NONE;
        }
        return;
    }
    if (m->tables->len >= METRICS_MAX_TABLES) {
        return;
    }
    t = g_new0(struct metrics_table, 1);
    t->name = g_strdup(ct->name);
    t->buckets = ct->salt.buckets;
    t->legacy = ct->salt.legacy.kind != LEGACY_NONE;
    t->keyviz_only = keyviz_only;
    g_ptr_array_add(m->tables, t);
    *stats_id = m->tables->len;
    g_hash_table_insert(m->table_ids, t->name, GUINT_TO_POINTER(*stats_id));
    /* workers see this config only after it is posted to them, which
     * orders these stores before their first increment */
    for (unsigned w = 0; !keyviz_only && w < m->nworkers; w++) {
        m->workers[w].tables[*stats_id - 1] =
            g_new0(guint64,
                   metrics_table_at(t->buckets, METRICS_TABLE_KINDS, 0));
    }
    keyviz_add_table(m->kv, *stats_id, ct->name, &ct->salt);
}

void
metrics_add_state(struct metrics *m, struct tabstate *ts)
{
    const struct config *cfg = ts->cfg;

    for (size_t i = 0; i < cfg->n_tables; i++) {
        metrics_add_table(m, &cfg->tables[i], &ts->tables[i].stats_id, FALSE);
    }
    for (size_t i = 0; i < cfg->n_keyviz_unsalted; i++) {
        const struct config_table *ct = &cfg->keyviz_unsalted[i];

        metrics_add_table(m, ct, &tabstate_at(ts, ct)->stats_id, TRUE);
    }
}

void
metrics_reload(struct metrics *m, metrics_reload_t result)
{
    m->reloads[result]++;
    m->last_reload_ok = result == METRICS_RELOAD_APPLIED;
    m->last_reload_time = g_get_real_time();
}

/* ---- hooks -------------------------------------------------------------- */

/* The latency bucket of us. */
static unsigned
metrics_lat_bucket(guint64 us)
{
    unsigned b = 0;

    while (b < METRICS_LAT_BUCKETS && us > metrics_lat_le_us[b]) {
        b++;
    }
    return b;
}

void
metrics_request_done(struct metrics_worker *mw,
                     const struct hbase1_method *method, gint64 us_taken,
                     metrics_err_t err)
{
    struct metrics_method *mm;
    unsigned b;
    guint64 us = us_taken > 0 ? (guint64)us_taken : 0;
    gboolean error = err > METRICS_ERR_NONE;

    if (error) {
        /* unknown methods too: HBase's TApplicationException */
        METRICS_ADD(mw->err_kinds[err], 1);
    }
    if (method == NULL) {
        /* not a method of its service: answered UNKNOWN_METHOD, no
         * series */
        return;
    }
    mm = &mw->methods[method->index];
    b = metrics_lat_bucket(us);
    METRICS_ADD(mm->requests, 1);
    if (error) {
        METRICS_ADD(mm->errors, 1);
    }
    METRICS_ADD(mm->lat[b], 1);
    METRICS_ADD(mm->lat_sum_us, us);
}

metrics_err_t
metrics_reply_error(wire_proto_t proto, const uint8_t *msg, size_t len,
                    const struct hbase1_method *method)
{
    struct wire_reader r;
    struct wire_msg m;

    wire_reader_init(&r, proto, msg, len, TRUE, &wire_default_limits);
    if (wire_read_msg_begin(&r, &m) != WIRE_OK) {
        return METRICS_ERR_NONE;
    }
    return metrics_result_error(proto, m.type, msg + wire_reader_offset(&r),
                                len - wire_reader_offset(&r), method);
}

metrics_err_t
metrics_result_error(wire_proto_t proto, uint8_t type, const uint8_t *body,
                     size_t len, const struct hbase1_method *method)
{
    struct wire_reader r;
    uint8_t ftype;
    int16_t fid;

    if (type == WIRE_EXCEPTION) {
        return METRICS_ERR_APP;
    }
    if (proto == WIRE_BINARY && len >= 3) {
        /* a binary struct starts with its first field's header: the
         * type byte, then the id (what wire_read_field reads; every
         * length and type is checked by whoever walks the struct) */
        ftype = body[0];
        fid = (int16_t)((uint16_t)body[1] << 8 | body[2]);
    } else {
        wire_reader_init(&r, proto, body, len, TRUE, &wire_default_limits);
        if (wire_read_struct_begin(&r) != WIRE_OK ||
            wire_read_field(&r, &ftype, &fid) != WIRE_OK) {
            return METRICS_ERR_NONE;
        }
    }
    /* field 0 is the success value; void methods have none (STOP) */
    if (ftype == WIRE_T_STOP || fid == 0) {
        return METRICS_ERR_NONE;
    }
    /* field 2 is IllegalArgument where the method declares one; any
     * other declared exception (Thrift1's AlreadyExists) is an IOError
     * to HBase's client too */
    return fid == 2 && (method == NULL || method->declares_ia)
               ? METRICS_ERR_IA
               : METRICS_ERR_IO;
}

void
metrics_queue_wait(struct metrics_worker *mw, gint64 us_waited)
{
    guint64 us = us_waited > 0 ? (guint64)us_waited : 0;

    METRICS_ADD(mw->queue[metrics_lat_bucket(us)], 1);
    METRICS_ADD(mw->queue_sum_us, us);
}

void
metrics_batch(struct metrics_worker *mw, const struct hbase1_method *method,
              wire_proto_t proto, const uint8_t *msg, size_t len)
{
    int16_t want = method != NULL ? metrics_batch_field(method) : 0;
    struct wire_reader r;
    struct wire_msg wm;
    uint8_t type, etype;
    int16_t fid;
    uint32_t rows;
    unsigned b = 0;

    if (want == 0) {
        return;
    }
    /* the codec took the call already: only its list's header is read */
    wire_reader_init(&r, proto, msg, len, TRUE, &wire_default_limits);
    if (wire_read_msg_begin(&r, &wm) != WIRE_OK ||
        wire_read_struct_begin(&r) != WIRE_OK) {
        return;
    }
    for (;;) {
        if (wire_read_field(&r, &type, &fid) != WIRE_OK ||
            type == WIRE_T_STOP) {
            return;
        }
        if (fid == want && type == WIRE_T_LIST) {
            break;
        }
        if (wire_skip(&r, type) != WIRE_OK) {
            return;
        }
    }
    if (wire_read_list_begin(&r, &etype, &rows) != WIRE_OK) {
        return;
    }
    while (b < METRICS_BATCH_BUCKETS && rows > metrics_batch_le[b]) {
        b++;
    }
    METRICS_ADD(mw->methods[method->index].batch[b], 1);
    METRICS_ADD(mw->methods[method->index].batch_sum, rows);
}

void
metrics_take_tally(struct metrics_worker *mw, struct codec_tally *t)
{
    for (uint32_t i = 0; i < t->n; i++) {
        const struct codec_bucket_count *e = &t->v[i];

        if (e->requests > e->writes) {
            metrics_bucket_request(mw, e->salt, e->stats_id, e->bucket,
                                   e->requests - e->writes);
        }
        if (e->writes > 0) {
            metrics_bucket_add(mw, e->salt, e->stats_id, METRICS_TABLE_WRITES,
                               e->bucket, e->writes);
        }
        if (e->rows > 0) {
            metrics_bucket_row(mw, e->salt, e->stats_id, e->bucket, e->rows);
        }
    }
    if (t->unsalted > 0) {
        METRICS_ADD(mw->unsalted_rows, t->unsalted);
    }
    if (mw->kv != NULL && t->nnotes > 0) {
        keyviz_notes(mw->kv, t->notes, t->nnotes);
    }
    codec_tally_clear(t);
}

void
metrics_scan_open(struct metrics_worker *mw, unsigned width)
{
    unsigned b = 0;

    while (b < METRICS_FANOUT_BUCKETS && width > (1u << b)) {
        b++;
    }
    METRICS_ADD(mw->scans, 1);
    METRICS_ADD(mw->fanout[b], 1);
    METRICS_ADD(mw->fanout_sum, width);
}
