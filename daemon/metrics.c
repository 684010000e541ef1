/* metrics.c: counters and histograms kept per worker, summed on scrape. */
#include "metrics.h"

#include <string.h>

#include "hsp-config.h"
#include "backend.h"
#include "hbase1.h"
#include "proxy.h"
#include "scan.h"

__thread struct metrics_worker *metrics_self;

/* Upper bounds of the latency buckets, in microseconds. */
static const guint64 metrics_lat_le_us[METRICS_LAT_BUCKETS] = {
    100, 250, 500, 1000, 2500, 5000, 10000, 25000, 50000, 100000,
    250000, 500000, 1000000, 2500000, 5000000, 10000000,
};

/* A salted table that has counters: names never leave the registry, so a
 * table that comes back after a reload finds its counters again. */
struct metrics_table {
    char *name;
    uint32_t buckets;
};

struct metrics {
    unsigned nworkers;
    struct metrics_worker *workers;
    size_t nmethods;                /* methods of every service */
    char **labels;                  /* per method index: its labels,
                                       method="get" for Thrift1 (as
                                       always), method="get",
                                       service="thrift2" for Thrift2 */
    GPtrArray *tables;              /* struct metrics_table *, by id - 1 */
    GHashTable *table_ids;          /* name -> GUINT_TO_POINTER(id) */
    guint64 reloads[3];             /* by metrics_reload_t */
    gboolean last_reload_ok;        /* TRUE until a reload fails */
    gint64 last_reload_time;        /* wall clock us, 0 = none yet */
    gint64 start_time;              /* wall clock us */
};

static void
metrics_table_free(gpointer data)
{
    struct metrics_table *t = data;

    g_free(t->name);
    g_free(t);
}

struct metrics *
metrics_new(unsigned nworkers)
{
    struct metrics *m = g_new0(struct metrics, 1);

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
    }
    m->tables = g_ptr_array_new_with_free_func(metrics_table_free);
    m->table_ids = g_hash_table_new(g_str_hash, g_str_equal);
    m->last_reload_ok = TRUE;
    m->start_time = g_get_real_time();
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

void
metrics_add_config(struct metrics *m, struct config *cfg)
{
    for (size_t i = 0; i < cfg->n_tables; i++) {
        struct config_table *ct = &cfg->tables[i];
        gpointer id = g_hash_table_lookup(m->table_ids, ct->name);
        struct metrics_table *t;

        if (id != NULL) {
            /* same name, same buckets: reload refuses anything else */
            t = g_ptr_array_index(m->tables, GPOINTER_TO_UINT(id) - 1);
            if (t->buckets == ct->salt.buckets) {
                ct->stats_id = GPOINTER_TO_UINT(id);
            }
            continue;
        }
        if (m->tables->len >= METRICS_MAX_TABLES) {
            continue;
        }
        t = g_new0(struct metrics_table, 1);
        t->name = g_strdup(ct->name);
        t->buckets = ct->salt.buckets;
        g_ptr_array_add(m->tables, t);
        ct->stats_id = m->tables->len;
        g_hash_table_insert(m->table_ids, t->name,
                            GUINT_TO_POINTER(ct->stats_id));
        /* workers see this config only after it is posted to them, which
         * orders these stores before their first increment */
        for (unsigned w = 0; w < m->nworkers; w++) {
            m->workers[w].tables[ct->stats_id - 1] =
                g_new0(guint64, 2 * (size_t)t->buckets);
        }
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

void
metrics_request_done(struct metrics_worker *mw,
                     const struct hbase1_method *method, gint64 us_taken,
                     gboolean error)
{
    struct metrics_method *mm;
    unsigned b = 0;
    guint64 us = us_taken > 0 ? (guint64)us_taken : 0;

    if (method == NULL) {
        /* not a method of its service: answered UNKNOWN_METHOD, no
         * series */
        return;
    }
    mm = &mw->methods[method->index];
    while (b < METRICS_LAT_BUCKETS && us > metrics_lat_le_us[b]) {
        b++;
    }
    METRICS_ADD(mm->requests, 1);
    if (error) {
        METRICS_ADD(mm->errors, 1);
    }
    METRICS_ADD(mm->lat[b], 1);
    METRICS_ADD(mm->lat_sum_us, us);
}

gboolean
metrics_reply_is_error(wire_proto_t proto, const uint8_t *msg, size_t len)
{
    struct wire_reader r;
    struct wire_msg m;
    uint8_t type;
    int16_t fid;

    wire_reader_init(&r, proto, msg, len, TRUE, &wire_default_limits);
    if (wire_read_msg_begin(&r, &m) != WIRE_OK) {
        return FALSE;
    }
    if (m.type == WIRE_EXCEPTION) {
        return TRUE;
    }
    if (wire_read_struct_begin(&r) != WIRE_OK
        || wire_read_field(&r, &type, &fid) != WIRE_OK) {
        return FALSE;
    }
    /* field 0 is the success value; void methods have none (STOP) */
    return type != WIRE_T_STOP && fid != 0;
}

void
metrics_scan_open(unsigned width)
{
    struct metrics_worker *mw = metrics_self;
    unsigned b = 0;

    if (mw == NULL) {
        return;
    }
    while (b < METRICS_FANOUT_BUCKETS && width > (1u << b)) {
        b++;
    }
    METRICS_ADD(mw->scans, 1);
    METRICS_ADD(mw->fanout[b], 1);
    METRICS_ADD(mw->fanout_sum, width);
}

/* ---- rendering ---------------------------------------------------------- */

/* A label value: backslash, quote and newline escaped. */
static void
metrics_label(GString *out, const char *s)
{
    for (; *s != '\0'; s++) {
        if (*s == '\\' || *s == '"') {
            g_string_append_c(out, '\\');
            g_string_append_c(out, *s);
        } else if (*s == '\n') {
            g_string_append(out, "\\n");
        } else {
            g_string_append_c(out, *s);
        }
    }
}

static void
metrics_head(GString *out, const char *name, const char *type,
             const char *help)
{
    g_string_append_printf(out, "# HELP %s %s\n# TYPE %s %s\n", name, help,
                           name, type);
}

static void
metrics_one(GString *out, const char *name, const char *type,
            const char *help, guint64 value)
{
    metrics_head(out, name, type, help);
    g_string_append_printf(out, "%s %" G_GUINT64_FORMAT "\n", name, value);
}

static void
metrics_render_methods(struct metrics *m, GString *out)
{
    size_t n = m->nmethods;
    g_autofree struct metrics_method *sum = g_new0(struct metrics_method, n);

    for (unsigned w = 0; w < m->nworkers; w++) {
        for (size_t i = 0; i < n; i++) {
            const struct metrics_method *mm = &m->workers[w].methods[i];

            sum[i].requests += METRICS_GET(mm->requests);
            sum[i].errors += METRICS_GET(mm->errors);
            sum[i].lat_sum_us += METRICS_GET(mm->lat_sum_us);
            for (unsigned b = 0; b <= METRICS_LAT_BUCKETS; b++) {
                sum[i].lat[b] += METRICS_GET(mm->lat[b]);
            }
        }
    }
    metrics_head(out, "hsp_requests_total", "counter",
                 "Client requests answered, by Thrift method.");
    for (size_t i = 0; i < n; i++) {
        if (sum[i].requests > 0) {
            g_string_append_printf(out,
                                   "hsp_requests_total{%s} %" G_GUINT64_FORMAT
                                   "\n",
                                   m->labels[i], sum[i].requests);
        }
    }
    metrics_head(out, "hsp_request_errors_total", "counter",
                 "Client requests answered with an exception (IOError, "
                 "IllegalArgument, TApplicationException), by method.");
    for (size_t i = 0; i < n; i++) {
        if (sum[i].requests > 0) {
            g_string_append_printf(
                out, "hsp_request_errors_total{%s} %" G_GUINT64_FORMAT "\n",
                m->labels[i], sum[i].errors);
        }
    }
    metrics_head(out, "hsp_request_duration_seconds", "histogram",
                 "Time from a whole request read to its reply queued, by "
                 "method.");
    for (size_t i = 0; i < n; i++) {
        guint64 cum = 0;

        if (sum[i].requests == 0) {
            continue;
        }
        for (unsigned b = 0; b <= METRICS_LAT_BUCKETS; b++) {
            cum += sum[i].lat[b];
            if (b < METRICS_LAT_BUCKETS) {
                g_string_append_printf(
                    out,
                    "hsp_request_duration_seconds_"
                    "bucket{%s,le=\"%g\"} %" G_GUINT64_FORMAT "\n",
                    m->labels[i], (double)metrics_lat_le_us[b] / 1e6, cum);
            } else {
                g_string_append_printf(
                    out,
                    "hsp_request_duration_seconds_"
                    "bucket{%s,le=\"+Inf\"} %" G_GUINT64_FORMAT "\n",
                    m->labels[i], cum);
            }
        }
        g_string_append_printf(out,
                               "hsp_request_duration_seconds_sum{%s} %.6f\n",
                               m->labels[i], (double)sum[i].lat_sum_us / 1e6);
        g_string_append_printf(
            out,
            "hsp_request_duration_seconds_count{%s} %" G_GUINT64_FORMAT "\n",
            m->labels[i], cum);
    }
}

static void
metrics_render_tables(struct metrics *m, GString *out)
{
    static const char *const names[2] = {
        "hsp_bucket_requests_total", "hsp_bucket_rows_total",
    };
    static const char *const helps[2] = {
        "Row keys of salted tables sent to each salt bucket: one per "
        "salted row of a point request, one per bucket scanner open or "
        "fetch.",
        "Rows of salted tables returned from each salt bucket.",
    };

    for (unsigned kind = 0; kind < 2; kind++) {
        metrics_head(out, names[kind], "counter", helps[kind]);
        for (guint t = 0; t < m->tables->len; t++) {
            const struct metrics_table *mt = g_ptr_array_index(m->tables, t);

            for (uint32_t b = 0; b < mt->buckets; b++) {
                guint64 v = 0;

                for (unsigned w = 0; w < m->nworkers; w++) {
                    v += METRICS_GET(m->workers[w].tables[t]
                                         [kind * mt->buckets + b]);
                }
                g_string_append_printf(out, "%s{table=\"", names[kind]);
                metrics_label(out, mt->name);
                g_string_append_printf(out, "\",bucket=\"%u\"} %"
                                       G_GUINT64_FORMAT "\n", b, v);
            }
        }
    }
}

/* One backend server's numbers summed over workers and pools. */
struct metrics_server {
    const char *name;
    guint64 requests, failures, connect_failures;
    gint64 open, inflight;
};

/* One hsp_backend_up line (backend_health_foreach). */
static void
metrics_backend_up_cb(const struct backend_health_info *info, void *arg)
{
    GString *out = arg;

    g_string_append(out, "hsp_backend_up{server=\"");
    metrics_label(out, info->name);
    g_string_append_printf(out, "\"} %d\n", info->up ? 1 : 0);
}

/* The servers rendered so far, by name. */
struct metrics_servers {
    GArray *servers;                /* struct metrics_server */
    GHashTable *index;              /* name -> index in servers */
};

static struct metrics_server *
metrics_server_get(struct metrics_servers *all, const char *name)
{
    gpointer at;

    if (!g_hash_table_lookup_extended(all->index, name, NULL, &at)) {
        struct metrics_server z = { .name = name };

        g_array_append_val(all->servers, z);
        at = GUINT_TO_POINTER(all->servers->len - 1);
        g_hash_table_insert(all->index, (gpointer)name, at);
    }
    return &g_array_index(all->servers, struct metrics_server,
                          GPOINTER_TO_UINT(at));
}

/* A connect refused to the probe is one refused to the proxy: the
 * operator watching connect failures must see a server that refuses
 * while no request goes to it (it is DOWN). */
static void
metrics_backend_probe_cb(const struct backend_health_info *info, void *arg)
{
    struct metrics_server *ms = metrics_server_get(arg, info->name);

    ms->connect_failures += info->probe_connect_failures
                            + info->retired_connect_failures;
    ms->requests += info->retired_requests;
    ms->failures += info->retired_failures;
}

static void
metrics_render_backends(struct metrics *m, struct proxy *p, GString *out)
{
    g_autoptr(GArray) servers = g_array_new(FALSE, TRUE,
                                            sizeof(struct metrics_server));
    g_autoptr(GHashTable) index = g_hash_table_new(g_str_hash, g_str_equal);
    struct metrics_servers all = { servers, index };

    /* a worker freeing a retired pool moves its counters to the health
     * entries under this lock: the sum sees them in one place or the
     * other, never both or neither */
    g_mutex_lock(&p->pools_lock);
    for (unsigned w = 0; w < p->nworkers; w++) {
        struct backend_pool *pool = proxy_worker_pool(&p->workers[w]);

        /* the current pool, then those retired by reloads */
        for (; pool != NULL; pool = pool->older) {
            for (unsigned i = 0; i < pool->nservers; i++) {
                const struct backend_server *s = &pool->servers[i];
                const struct backend_stats *st = &s->stats;
                struct metrics_server *ms = metrics_server_get(&all,
                                                               s->srv->name);

                ms->requests += METRICS_GET(st->requests);
                ms->failures += METRICS_GET(st->failures);
                ms->connect_failures += METRICS_GET(st->connect_failures);
                ms->open += METRICS_GET(st->open);
                ms->inflight += METRICS_GET(st->inflight);
            }
        }
    }
    /* names stay valid: health entries live until the process exits */
    backend_health_foreach(p->health, metrics_backend_probe_cb, &all);
    metrics_head(out, "hsp_backend_up", "gauge",
                 "1 when the server takes requests (UP), 0 when it is DOWN "
                 "(consecutive failures; probed until it answers).");
    backend_health_foreach(p->health, metrics_backend_up_cb, out);
#define METRICS_SERVER_SERIES(NAME, TYPE, HELP, FIELD, FMT)                  \
    metrics_head(out, NAME, TYPE, HELP);                                    \
    for (guint i = 0; i < servers->len; i++) {                              \
        const struct metrics_server *ms =                                   \
            &g_array_index(servers, struct metrics_server, i);              \
        g_string_append(out, NAME "{server=\"");                            \
        metrics_label(out, ms->name);                                       \
        g_string_append_printf(out, "\"} %" FMT "\n", ms->FIELD);           \
    }
    METRICS_SERVER_SERIES("hsp_backend_connections", "gauge",
                          "Connections open to the server, all workers.",
                          open, G_GINT64_FORMAT)
    METRICS_SERVER_SERIES("hsp_backend_inflight_requests", "gauge",
                          "Requests sent to the server and not answered.",
                          inflight, G_GINT64_FORMAT)
    METRICS_SERVER_SERIES("hsp_backend_requests_total", "counter",
                          "Requests sent to the server.", requests,
                          G_GUINT64_FORMAT)
    METRICS_SERVER_SERIES("hsp_backend_failures_total", "counter",
                          "Requests the server failed to answer (connection "
                          "lost, timeout, bad reply).", failures,
                          G_GUINT64_FORMAT)
    METRICS_SERVER_SERIES("hsp_backend_connect_failures_total", "counter",
                          "Connection attempts to the server that failed, "
                          "health probes' included.",
                          connect_failures, G_GUINT64_FORMAT)
#undef METRICS_SERVER_SERIES
    /* the names above point into pools' generations: held till here */
    g_mutex_unlock(&p->pools_lock);
}

void
metrics_render(struct metrics *m, struct proxy *p, GString *out)
{
    struct metrics_worker sum;
    static const char *const results[3] = {
        [METRICS_RELOAD_APPLIED] = "applied",
        [METRICS_RELOAD_REFUSED] = "refused",
        [METRICS_RELOAD_INVALID] = "invalid",
    };
    guint64 cum = 0;

    memset(&sum, 0, sizeof(sum));
    for (unsigned w = 0; w < m->nworkers; w++) {
        const struct metrics_worker *mw = &m->workers[w];

        sum.accepted += METRICS_GET(mw->accepted);
        sum.refused += METRICS_GET(mw->refused);
        sum.bytes_in += METRICS_GET(mw->bytes_in);
        sum.bytes_out += METRICS_GET(mw->bytes_out);
        sum.scans += METRICS_GET(mw->scans);
        sum.scan_rows += METRICS_GET(mw->scan_rows);
        sum.fanout_sum += METRICS_GET(mw->fanout_sum);
        for (unsigned b = 0; b <= METRICS_FANOUT_BUCKETS; b++) {
            sum.fanout[b] += METRICS_GET(mw->fanout[b]);
        }
    }

    metrics_head(out, "hsp_build_info", "gauge",
                 "Version of the running proxy.");
    g_string_append_printf(out, "hsp_build_info{version=\"%s\"} 1\n",
                           HSP_VERSION);
    metrics_head(out, "hsp_start_time_seconds", "gauge",
                 "When the proxy started, Unix time.");
    g_string_append_printf(out, "hsp_start_time_seconds %.3f\n",
                           (double)m->start_time / 1e6);
    metrics_one(out, "hsp_workers", "gauge", "Worker threads.",
                m->nworkers);

    metrics_render_methods(m, out);
    metrics_render_tables(m, out);
    metrics_one(out, "hsp_unsalted_rows_total", "counter",
                "Rows of salted tables returned as stored because they "
                "carry no valid salt (written around the proxy).",
                codec_unsalted_rows());

    metrics_render_backends(m, p, out);

    metrics_one(out, "hsp_scanners_open", "gauge",
                "Client scanners open, over all workers.",
                scan_open_count(p->scans));
    metrics_one(out, "hsp_scans_total", "counter",
                "Merged (salted) scans opened.", sum.scans);
    metrics_head(out, "hsp_scan_fanout_width", "histogram",
                 "Buckets each merged scan reads from.");
    for (unsigned b = 0; b <= METRICS_FANOUT_BUCKETS; b++) {
        cum += sum.fanout[b];
        if (b < METRICS_FANOUT_BUCKETS) {
            g_string_append_printf(out, "hsp_scan_fanout_width_bucket{le=\""
                                   "%u\"} %" G_GUINT64_FORMAT "\n", 1u << b,
                                   cum);
        } else {
            g_string_append_printf(out, "hsp_scan_fanout_width_bucket{le=\""
                                   "+Inf\"} %" G_GUINT64_FORMAT "\n", cum);
        }
    }
    g_string_append_printf(out, "hsp_scan_fanout_width_sum %"
                           G_GUINT64_FORMAT "\nhsp_scan_fanout_width_count %"
                           G_GUINT64_FORMAT "\n", sum.fanout_sum, cum);
    metrics_one(out, "hsp_scan_merged_rows_total", "counter",
                "Rows merged from bucket scanners and handed to clients.",
                sum.scan_rows);

    metrics_one(out, "hsp_client_connections", "gauge",
                "Client connections open.",
                (guint64)MAX(g_atomic_int_get(&p->nconns), 0));
    metrics_one(out, "hsp_client_connections_accepted_total", "counter",
                "Client connections accepted.", sum.accepted);
    metrics_one(out, "hsp_client_connections_refused_total", "counter",
                "Client connections refused (max_connections, shutdown).",
                sum.refused);
    metrics_one(out, "hsp_client_received_bytes_total", "counter",
                "Bytes of whole client requests read.", sum.bytes_in);
    metrics_one(out, "hsp_client_sent_bytes_total", "counter",
                "Bytes of replies queued to clients.", sum.bytes_out);

    metrics_one(out, "hsp_config_generation", "gauge",
                "Configuration generation: 1 at start, +1 per applied "
                "reload.", proxy_generation(p));
    metrics_one(out, "hsp_config_last_reload_success", "gauge",
                "1 when the last reload was applied (or none happened), 0 "
                "when it was refused or the file was invalid.",
                m->last_reload_ok ? 1 : 0);
    metrics_head(out, "hsp_config_last_reload_timestamp_seconds", "gauge",
                 "When the last reload was attempted, Unix time; 0 = none.");
    g_string_append_printf(out, "hsp_config_last_reload_timestamp_seconds "
                           "%.3f\n", (double)m->last_reload_time / 1e6);
    metrics_head(out, "hsp_config_reloads_total", "counter",
                 "Reloads (SIGHUP) by result.");
    for (unsigned r = 0; r < 3; r++) {
        g_string_append_printf(out, "hsp_config_reloads_total{result=\"%s\"} "
                               "%" G_GUINT64_FORMAT "\n", results[r],
                               m->reloads[r]);
    }
}
