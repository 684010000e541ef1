/* metrics_render.c: /metrics, the Prometheus text of the counters and of
 * what the engines report (backend pools and health, scanners, clients). */
#include "metrics_render.h"

#include <string.h>

#include "hsp-config.h"
#include "backend.h"
#include "health.h"
#include "hbase1.h"
#include "invariant.h"
#include "metrics.h"
#include "proxy.h"
#include "scan.h"
#include "tabstate.h"

/* A label value: backslash, quote and newline escaped. */
static void
metrics_render_label(GString *out, const char *s)
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
metrics_render_head(GString *out, const char *name, const char *type,
                    const char *help)
{
    g_string_append_printf(out, "# HELP %s %s\n# TYPE %s %s\n", name, help,
                           name, type);
}

static void
metrics_render_one(GString *out, const char *name, const char *type,
                   const char *help, guint64 value)
{
    metrics_render_head(out, name, type, help);
    g_string_append_printf(out, "%s %" G_GUINT64_FORMAT "\n", name, value);
}

/*
 * One histogram's series: counts per bucket (not cumulative, n + 1 with
 * +Inf), upper bounds le[0..n) in units of scale (1e6: microseconds
 * shown as seconds), labels (NULL: none) and sum in the shown unit.
 */
static void
metrics_render_histogram(GString *out, const char *name, const char *labels,
                         const guint64 *counts, const guint64 *le, unsigned n,
                         double scale, double sum)
{
    const char *sep = labels != NULL ? "," : "";
    guint64 cum = 0;

    if (labels == NULL) {
        labels = "";
    }
    for (unsigned b = 0; b <= n; b++) {
        cum += counts[b];
        if (b < n) {
            g_string_append_printf(
                out, "%s_bucket{%s%sle=\"%g\"} %" G_GUINT64_FORMAT "\n", name,
                labels, sep, (double)le[b] / scale, cum);
        } else {
            g_string_append_printf(out,
                                   "%s_bucket{%s%sle=\"+Inf\"} "
                                   "%" G_GUINT64_FORMAT "\n",
                                   name, labels, sep, cum);
        }
    }
    /* seconds to the microsecond; counts whole */
    g_string_append_printf(out, "%s_sum%s%s%s %.*f\n", name,
                           *labels != '\0' ? "{" : "", labels,
                           *labels != '\0' ? "}" : "", scale != 1.0 ? 6 : 0,
                           sum);
    g_string_append_printf(out, "%s_count%s%s%s %" G_GUINT64_FORMAT "\n", name,
                           *labels != '\0' ? "{" : "", labels,
                           *labels != '\0' ? "}" : "", cum);
}

/* One counter of the methods (sum: summed over the workers), the
 * guint64 at offset field of each; a method no client has called yet
 * has no series. */
static void
metrics_render_method_counter(const struct metrics *m,
                              const struct metrics_method *sum, GString *out,
                              const char *name, const char *help, glong field)
{
    metrics_render_head(out, name, "counter", help);
    for (size_t i = 0; i < m->nmethods; i++) {
        if (sum[i].requests > 0) {
            g_string_append_printf(out, "%s{%s} %" G_GUINT64_FORMAT "\n", name,
                                   m->labels[i],
                                   G_STRUCT_MEMBER(guint64, &sum[i], field));
        }
    }
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
            sum[i].slow += METRICS_GET(mm->slow);
            sum[i].batch_sum += METRICS_GET(mm->batch_sum);
            for (unsigned b = 0; b <= METRICS_BATCH_BUCKETS; b++) {
                sum[i].batch[b] += METRICS_GET(mm->batch[b]);
            }
        }
    }
    metrics_render_method_counter(
        m, sum, out, "hsp_requests_total",
        "Client requests answered, by Thrift method.",
        G_STRUCT_OFFSET(struct metrics_method, requests));
    metrics_render_method_counter(
        m, sum, out, "hsp_request_errors_total",
        "Client requests answered with an exception (IOError, "
        "IllegalArgument, TApplicationException), by method.",
        G_STRUCT_OFFSET(struct metrics_method, errors));
    metrics_render_method_counter(
        m, sum, out, "hsp_slow_calls_total",
        "Client requests that took slow_call_ms or longer "
        "(HBase's slowThriftCall), by method.",
        G_STRUCT_OFFSET(struct metrics_method, slow));
    metrics_render_head(out, "hsp_batch_rows", "histogram",
                        "Rows per multi-row call (getRows*, mutateRows*, "
                        "getMultiple, putMultiple, deleteMultiple ...; "
                        "HBase's batchGet, batchMutate), by method.");
    for (size_t i = 0; i < n; i++) {
        guint64 cum = 0;

        for (unsigned b = 0; b <= METRICS_BATCH_BUCKETS; b++) {
            cum += sum[i].batch[b];
        }
        if (cum > 0) {
            metrics_render_histogram(out, "hsp_batch_rows", m->labels[i],
                                     sum[i].batch, metrics_batch_le,
                                     METRICS_BATCH_BUCKETS, 1.0,
                                     (double)sum[i].batch_sum);
        }
    }
    metrics_render_head(
        out, "hsp_request_duration_seconds", "histogram",
        "Time from a whole request read to its reply queued, by "
        "method.");
    for (size_t i = 0; i < n; i++) {
        if (sum[i].requests > 0) {
            metrics_render_histogram(out, "hsp_request_duration_seconds",
                                     m->labels[i], sum[i].lat,
                                     metrics_lat_le_us, METRICS_LAT_BUCKETS,
                                     1e6, (double)sum[i].lat_sum_us / 1e6);
        }
    }
}

/* One per-bucket series: the sum of the kinds in mask (bits of enum
 * metrics_table_kind) over workers, for every table and bucket, the
 * legacy range as bucket="legacy" where a table has one. */
static void
metrics_render_table_series(struct metrics *m, GString *out, const char *name,
                            const char *help, unsigned mask)
{
    metrics_render_head(out, name, "counter", help);
    for (guint t = 0; t < m->tables->len; t++) {
        const struct metrics_table *mt = g_ptr_array_index(m->tables, t);
        uint32_t n = mt->keyviz_only ? 0 : mt->buckets + (mt->legacy ? 1 : 0);

        for (uint32_t b = 0; b < n; b++) {
            guint64 v = 0;

            for (unsigned w = 0; w < m->nworkers; w++) {
                for (unsigned k = 0; k < METRICS_TABLE_KINDS; k++) {
                    if (mask & (1u << k)) {
                        v += METRICS_GET(m->workers[w]
                                             .tables[t][metrics_table_at(
                                                 mt->buckets, k, b)]);
                    }
                }
            }
            g_string_append_printf(out, "%s{table=\"", name);
            metrics_render_label(out, mt->name);
            if (b == mt->buckets) {
                g_string_append(out, "\",bucket=\"legacy");
            } else {
                g_string_append_printf(out, "\",bucket=\"%u", b);
            }
            g_string_append_printf(out, "\"} %" G_GUINT64_FORMAT "\n", v);
        }
    }
}

/* hsp_scan_resumes_total{table,outcome}: the resume counters of every
 * bucket of a table, summed. */
static void
metrics_render_resumes(struct metrics *m, GString *out)
{
    static const struct {
        enum metrics_table_kind kind;
        const char *outcome;
    } outcomes[] = {
        { METRICS_TABLE_RESUMED, "resumed" },
        { METRICS_TABLE_RESUME_FAILED, "failed" },
        { METRICS_TABLE_RESUME_EXHAUSTED, "exhausted" },
        { METRICS_TABLE_RESUME_REFUSED, "refused" },
    };

    metrics_render_head(out, "hsp_scan_resumes_total", "counter",
                        "Buckets of merged scans whose backend scanner was "
                        "lost (server gone, connection reset, scanner "
                        "unknown), by outcome: resumed (opened again after "
                        "the last row given), failed (a reopen failed, "
                        "another follows), exhausted (no reopen left: the "
                        "scan failed), refused (cannot resume exactly: the "
                        "scan failed).");
    for (guint t = 0; t < m->tables->len; t++) {
        const struct metrics_table *mt = g_ptr_array_index(m->tables, t);

        if (mt->keyviz_only) {
            /* an unsalted table only the key visualizer counts: no
             * per-worker table counters, and no merged scans to resume */
            continue;
        }
        for (size_t o = 0; o < G_N_ELEMENTS(outcomes); o++) {
            guint64 v = 0;

            for (unsigned w = 0; w < m->nworkers; w++) {
                for (uint32_t b = 0; b <= mt->buckets; b++) {
                    v += METRICS_GET(m->workers[w].tables[t][metrics_table_at(
                        mt->buckets, outcomes[o].kind, b)]);
                }
            }
            g_string_append(out, "hsp_scan_resumes_total{table=\"");
            metrics_render_label(out, mt->name);
            g_string_append_printf(out,
                                   "\",outcome=\"%s\"} %" G_GUINT64_FORMAT
                                   "\n",
                                   outcomes[o].outcome, v);
        }
    }
}

static void
metrics_render_tables(struct metrics *m, GString *out)
{
    metrics_render_resumes(m, out);
    metrics_render_table_series(
        m, out, "hsp_bucket_requests_total",
        "Row keys of salted tables sent to each salt bucket, reads and "
        "writes: one per salted row of a point request, one per bucket "
        "scanner open or fetch; bucket=\"legacy\": a forward-looking "
        "table's unsalted keys.",
        (1u << METRICS_TABLE_READS) | (1u << METRICS_TABLE_WRITES));
    metrics_render_table_series(
        m, out, "hsp_bucket_reads_total",
        "Of hsp_bucket_requests_total, the reads: gets, scanner opens and "
        "fetches.",
        1u << METRICS_TABLE_READS);
    metrics_render_table_series(
        m, out, "hsp_bucket_writes_total",
        "Of hsp_bucket_requests_total, the writes: row keys of mutations "
        "(put, delete, increment, append, checkAnd*).",
        1u << METRICS_TABLE_WRITES);
    metrics_render_table_series(m, out, "hsp_bucket_rows_total",
                                "Rows of salted tables returned from each "
                                "salt bucket (bucket=\"legacy\": from a "
                                "forward-looking table's unsalted keys).",
                                1u << METRICS_TABLE_ROWS);
}

/* How the salted tables' regions hold their buckets, at the last check
 * (tablecheck.c), as a count or as a share of the buckets: tables not
 * known yet (absent, HBase not asked) have no series. */
static void
metrics_render_regions(const struct tabstate *ts, GString *out,
                       const char *name, gboolean share, const char *help)
{
    const struct config *cfg = ts->cfg;

    metrics_render_head(out, name, "gauge", help);
    for (size_t i = 0; i < cfg->n_tables; i++) {
        const struct config_table *t = &cfg->tables[i];
        gint most = g_atomic_int_get(&tabstate_at(ts, t)->region_buckets);

        if (most <= 0) {
            continue;
        }
        g_string_append_printf(out, "%s{table=\"", name);
        metrics_render_label(out, t->name);
        if (share) {
            g_string_append_printf(out, "\"} %g\n",
                                   (double)most / t->salt.buckets);
        } else {
            g_string_append_printf(out, "\"} %d\n", most);
        }
    }
}

/* One backend server's numbers summed over workers and pools. */
struct metrics_render_server {
    const char *name;
    guint64 requests, failures, connect_failures;
    guint64 errors[METRICS_ERR_KINDS];
    gint64 open, inflight;
};

/* One hsp_backend_up line (health_foreach). */
static void
metrics_render_up_cb(const struct health_info *info, void *arg)
{
    GString *out = arg;

    g_string_append(out, "hsp_backend_up{server=\"");
    metrics_render_label(out, info->name);
    g_string_append_printf(out, "\"} %d\n", info->up ? 1 : 0);
}

/* The servers rendered so far, by name. */
struct metrics_render_servers {
    GArray *servers;   /* struct metrics_render_server */
    GHashTable *index; /* name -> index in servers */
};

static struct metrics_render_server *
metrics_render_server_get(struct metrics_render_servers *all, const char *name)
{
    gpointer at;

    if (!g_hash_table_lookup_extended(all->index, name, NULL, &at)) {
        struct metrics_render_server z = { .name = name };

        g_array_append_val(all->servers, z);
        at = GUINT_TO_POINTER(all->servers->len - 1);
        g_hash_table_insert(all->index, (gpointer)name, at);
    }
    return &g_array_index(all->servers, struct metrics_render_server,
                          GPOINTER_TO_UINT(at));
}

/* A connect refused to the probe is one refused to the proxy: the
 * operator watching connect failures must see a server that refuses
 * while no request goes to it (it is DOWN). */
static void
metrics_render_probe_cb(const struct health_info *info, void *arg)
{
    struct metrics_render_server *ms = metrics_render_server_get(arg,
                                                                 info->name);

    ms->connect_failures += info->probe_connect_failures +
                            info->retired_connect_failures;
    ms->requests += info->retired_requests;
    ms->failures += info->retired_failures;
    for (unsigned k = 0; k < METRICS_ERR_KINDS; k++) {
        ms->errors[k] += info->retired_errors[k];
    }
}

static void
metrics_render_backends(struct metrics *m, struct proxy *p, GString *out)
{
    g_autoptr(GArray) servers =
        g_array_new(FALSE, TRUE, sizeof(struct metrics_render_server));
    g_autoptr(GHashTable) index = g_hash_table_new(g_str_hash, g_str_equal);
    struct metrics_render_servers all = { servers, index };

    /* a worker freeing a retired pool moves its counters to the health
     * entries under this lock: the sum sees them in one place or the
     * other, never both or neither */
    g_mutex_lock(&p->pools_lock);
    for (unsigned w = 0; w < p->nworkers; w++) {
        struct backend_pool *pool = worker_pool(&p->workers[w]);

        /* the current pool, then those retired by reloads */
        for (; pool != NULL; pool = pool->older) {
            for (unsigned i = 0; i < pool->nservers; i++) {
                const struct backend_server *s = &pool->servers[i];
                const struct backend_stats *st = &s->stats;
                struct metrics_render_server *ms =
                    metrics_render_server_get(&all, s->srv->name);

                ms->requests += METRICS_GET(st->requests);
                ms->failures += METRICS_GET(st->failures);
                ms->connect_failures += METRICS_GET(st->connect_failures);
                ms->open += METRICS_GET(st->open);
                ms->inflight += METRICS_GET(st->inflight);
                for (unsigned k = 0; k < METRICS_ERR_KINDS; k++) {
                    ms->errors[k] += METRICS_GET(st->errors[k]);
                }
            }
        }
    }
    /* names stay valid: health entries live until the process exits */
    health_foreach(p->health, metrics_render_probe_cb, &all);
    metrics_render_head(
        out, "hsp_backend_up", "gauge",
        "1 when the server takes requests (UP), 0 when it is DOWN "
        "(consecutive failures; probed until it answers).");
    health_foreach(p->health, metrics_render_up_cb, out);
#define METRICS_SERVER_SERIES(NAME, TYPE, HELP, FIELD, FMT)                   \
    metrics_render_head(out, NAME, TYPE, HELP);                               \
    for (guint i = 0; i < servers->len; i++) {                                \
        const struct metrics_render_server *ms =                              \
            &g_array_index(servers, struct metrics_render_server, i);         \
        g_string_append(out, NAME "{server=\"");                              \
        metrics_render_label(out, ms->name);                                  \
        g_string_append_printf(out, "\"} %" FMT "\n", ms->FIELD);             \
    }
    METRICS_SERVER_SERIES("hsp_backend_connections", "gauge",
                          "Connections open to the server, all workers.", open,
                          G_GINT64_FORMAT)
    METRICS_SERVER_SERIES("hsp_backend_inflight_requests", "gauge",
                          "Requests sent to the server and not answered.",
                          inflight, G_GINT64_FORMAT)
    METRICS_SERVER_SERIES("hsp_backend_requests_total", "counter",
                          "Requests sent to the server.", requests,
                          G_GUINT64_FORMAT)
    METRICS_SERVER_SERIES("hsp_backend_failures_total", "counter",
                          "Requests the server failed to answer (connection "
                          "lost, timeout, bad reply).",
                          failures, G_GUINT64_FORMAT)
    METRICS_SERVER_SERIES("hsp_backend_connect_failures_total", "counter",
                          "Connection attempts to the server that failed, "
                          "health probes' included.",
                          connect_failures, G_GUINT64_FORMAT)
#undef METRICS_SERVER_SERIES
    metrics_render_head(out, "hsp_backend_errors_total", "counter",
                        "Requests of the server answered with an exception "
                        "(IOError, IllegalArgument, TApplicationException) "
                        "or failed under the proxy (transport: connect "
                        "refused, connection lost, timeout, bad reply), by "
                        "type.");
    for (guint i = 0; i < servers->len; i++) {
        const struct metrics_render_server *ms =
            &g_array_index(servers, struct metrics_render_server, i);

        for (unsigned k = METRICS_ERR_IO; k < METRICS_ERR_KINDS; k++) {
            g_string_append(out, "hsp_backend_errors_total{server=\"");
            metrics_render_label(out, ms->name);
            g_string_append_printf(out,
                                   "\",type=\"%s\"} %" G_GUINT64_FORMAT "\n",
                                   metrics_err_label[k], ms->errors[k]);
        }
    }
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
        sum.tls_handshakes += METRICS_GET(mw->tls_handshakes);
        sum.tls_failures += METRICS_GET(mw->tls_failures);
        sum.tls_plain += METRICS_GET(mw->tls_plain);
        sum.bytes_in += METRICS_GET(mw->bytes_in);
        sum.bytes_out += METRICS_GET(mw->bytes_out);
        sum.scans += METRICS_GET(mw->scans);
        sum.scan_rows += METRICS_GET(mw->scan_rows);
        sum.unsalted_rows += METRICS_GET(mw->unsalted_rows);
        sum.fanout_sum += METRICS_GET(mw->fanout_sum);
        for (unsigned b = 0; b <= METRICS_FANOUT_BUCKETS; b++) {
            sum.fanout[b] += METRICS_GET(mw->fanout[b]);
        }
        for (unsigned b = 0; b <= METRICS_LAT_BUCKETS; b++) {
            sum.queue[b] += METRICS_GET(mw->queue[b]);
        }
        sum.queue_sum_us += METRICS_GET(mw->queue_sum_us);
        for (unsigned k = 0; k < METRICS_ERR_KINDS; k++) {
            sum.err_kinds[k] += METRICS_GET(mw->err_kinds[k]);
        }
    }

    metrics_render_head(out, "hsp_build_info", "gauge",
                        "Version of the running proxy.");
    g_string_append_printf(out, "hsp_build_info{version=\"%s\"} 1\n",
                           HSP_VERSION);
    metrics_render_head(out, "hsp_start_time_seconds", "gauge",
                        "When the proxy started, Unix time.");
    g_string_append_printf(out, "hsp_start_time_seconds %.3f\n",
                           (double)m->start_time / 1e6);
    metrics_render_one(out, "hsp_workers", "gauge", "Worker threads.",
                       m->nworkers);

    metrics_render_methods(m, out);
    metrics_render_head(out, "hsp_request_errors_by_type_total", "counter",
                        "Client requests answered with an exception, by "
                        "type: IOError, IllegalArgument, "
                        "TApplicationException, or transport (the backend "
                        "connection failed: refused, lost, timed out).");
    for (unsigned k = METRICS_ERR_IO; k < METRICS_ERR_KINDS; k++) {
        g_string_append_printf(out,
                               "hsp_request_errors_by_type_total{type=\"%s\"} "
                               "%" G_GUINT64_FORMAT "\n",
                               metrics_err_label[k], sum.err_kinds[k]);
    }
    metrics_render_head(out, "hsp_request_queue_seconds", "histogram",
                        "Time from a whole request read to a backend "
                        "connection free for it (HBase's timeInQueue): "
                        "written to an idle one, or pipelined behind other "
                        "calls, the reply to the call before it.");
    metrics_render_histogram(out, "hsp_request_queue_seconds", NULL, sum.queue,
                             metrics_lat_le_us, METRICS_LAT_BUCKETS, 1e6,
                             (double)sum.queue_sum_us / 1e6);
    metrics_render_tables(m, out);
    metrics_render_regions(p->gen->ts, out, "hsp_table_region_buckets_max",
                           FALSE,
                           "The most salt buckets of the table that one of "
                           "its regions holds (1: every bucket has regions "
                           "of its own; more: split the table at the bucket "
                           "points).");
    metrics_render_regions(p->gen->ts, out,
                           "hsp_table_fullest_region_bucket_ratio", TRUE,
                           "The share of the table's salt buckets in its "
                           "fullest region (1/buckets when split at the "
                           "bucket points, 1 when one region holds them "
                           "all).");
    metrics_render_one(out, "hsp_unsalted_rows_total", "counter",
                       "Rows of salted tables returned as stored because they "
                       "carry no valid salt (written around the proxy).",
                       sum.unsalted_rows);

    metrics_render_backends(m, p, out);

    metrics_render_one(out, "hsp_scanners_open", "gauge",
                       "Client scanners open, over all workers.",
                       scan_open_count(p->scans));
    metrics_render_one(out, "hsp_scans_total", "counter",
                       "Merged (salted) scans opened.", sum.scans);
    metrics_render_head(out, "hsp_scan_fanout_width", "histogram",
                        "Buckets each merged scan reads from.");
    for (unsigned b = 0; b <= METRICS_FANOUT_BUCKETS; b++) {
        cum += sum.fanout[b];
        if (b < METRICS_FANOUT_BUCKETS) {
            g_string_append_printf(out,
                                   "hsp_scan_fanout_width_bucket{le=\""
                                   "%u\"} %" G_GUINT64_FORMAT "\n",
                                   1u << b, cum);
        } else {
            g_string_append_printf(out,
                                   "hsp_scan_fanout_width_bucket{le=\""
                                   "+Inf\"} %" G_GUINT64_FORMAT "\n",
                                   cum);
        }
    }
    g_string_append_printf(out,
                           "hsp_scan_fanout_width_sum %" G_GUINT64_FORMAT
                           "\nhsp_scan_fanout_width_count %" G_GUINT64_FORMAT
                           "\n",
                           sum.fanout_sum, cum);
    metrics_render_one(
        out, "hsp_scan_merged_rows_total", "counter",
        "Rows merged from bucket scanners and handed to clients.",
        sum.scan_rows);

    metrics_render_one(out, "hsp_client_connections", "gauge",
                       "Client connections open.",
                       (guint64)MAX(g_atomic_int_get(&p->nconns), 0));
    metrics_render_one(out, "hsp_client_connections_accepted_total", "counter",
                       "Client connections accepted.", sum.accepted);
    metrics_render_one(
        out, "hsp_client_connections_refused_total", "counter",
        "Client connections refused (max_connections, shutdown).",
        sum.refused);
    metrics_render_one(out, "hsp_tls_handshakes_total", "counter",
                       "TLS client handshakes completed ([tls] listen).",
                       sum.tls_handshakes);
    metrics_render_one(out, "hsp_tls_handshake_failures_total", "counter",
                       "TLS client handshakes that failed or timed out.",
                       sum.tls_failures);
    metrics_render_one(out, "hsp_tls_plain_clients_total", "counter",
                       "Of the failed handshakes, clients that spoke plain "
                       "Thrift to the TLS listener (answered with a "
                       "TApplicationException that says so).",
                       sum.tls_plain);
    metrics_render_one(out, "hsp_client_received_bytes_total", "counter",
                       "Bytes of whole client requests read.", sum.bytes_in);
    metrics_render_one(out, "hsp_client_sent_bytes_total", "counter",
                       "Bytes of replies queued to clients.", sum.bytes_out);
    metrics_render_one(out, "hsp_invariant_errors_total", "counter",
                       "Internal checks that failed and were survived "
                       "(release builds; a checked build stops instead): a "
                       "defect of the proxy, to report with the log's "
                       "'invariant broken' lines.",
                       invariant_errors());

    metrics_render_one(out, "hsp_config_generation", "gauge",
                       "Configuration generation: 1 at start, +1 per applied "
                       "reload.",
                       proxy_generation(p));
    metrics_render_one(
        out, "hsp_config_last_reload_success", "gauge",
        "1 when the last reload was applied (or none happened), 0 "
        "when it was refused or the file was invalid.",
        m->last_reload_ok ? 1 : 0);
    metrics_render_head(
        out, "hsp_config_last_reload_timestamp_seconds", "gauge",
        "When the last reload was attempted, Unix time; 0 = none.");
    g_string_append_printf(out,
                           "hsp_config_last_reload_timestamp_seconds "
                           "%.3f\n",
                           (double)m->last_reload_time / 1e6);
    metrics_render_head(out, "hsp_config_reloads_total", "counter",
                        "Reloads (SIGHUP) by result.");
    for (unsigned r = 0; r < 3; r++) {
        g_string_append_printf(out,
                               "hsp_config_reloads_total{result=\"%s\"} "
                               "%" G_GUINT64_FORMAT "\n",
                               results[r], m->reloads[r]);
    }
}
