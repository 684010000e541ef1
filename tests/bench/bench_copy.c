/* bench_copy.c: hbase-bench-copy, the baseline of run-bench's migrate
 * scenario: a plain scan-and-write of a table into another, with the
 * same client code as hbase-salt-migrate (daemon/hconn.c) but nothing
 * else: one thread per region up to --parallel, each fetch of rows
 * written back as it came in one mutateRows call (the server's clock, no
 * salt, no timestamps kept, no checkpoint).  Prints one JSON line. */
#include <glib.h>
#include <stdio.h>
#include <string.h>

#include "config.h"
#include "hconn.h"

struct bench_copy {
    const struct config *cfg;
    const char *from, *to;
    gint batch;
    GArray *regions;
    guint next;
    GMutex lock;
    guint64 rows, cells, writes;
    gboolean failed;
};

static gboolean
bench_copy_region(struct bench_copy *b, struct hconn *c,
                  const struct hconn_region *r, guint64 *rows, guint64 *cells,
                  guint64 *writes, GError **error)
{
    gsize slen, elen;
    const uint8_t *sp = g_bytes_get_data(r->start, &slen);
    const uint8_t *ep = g_bytes_get_data(r->end, &elen);
    struct hconn_rows batch;
    int32_t id;
    gboolean ok = TRUE;

    if (!hconn_scanner_open(c, b->from, sp, slen, ep, elen, b->batch, &id,
                            error)) {
        return FALSE;
    }
    hconn_rows_init(&batch);
    for (;;) {
        hconn_rows_clear(&batch);
        ok = hconn_scanner_get_list(c, id, b->batch, &batch, error);
        if (!ok || batch.rows->len == 0) {
            break;
        }
        ok = hconn_mutate_rows(c, b->to,
                               (const struct hconn_row *)batch.rows->data,
                               batch.rows->len,
                               (const struct hconn_cell *)batch.cells->data,
                               error);
        if (!ok) {
            break;
        }
        *rows += batch.rows->len;
        *cells += batch.cells->len;
        (*writes)++;
    }
    hconn_rows_free(&batch);
    return ok && hconn_scanner_close(c, id, error);
}

static gpointer
bench_copy_worker(gpointer data)
{
    struct bench_copy *b = data;
    g_autoptr(GError) error = NULL;
    struct hconn *c = hconn_open(b->cfg, 0, &error);
    guint64 rows = 0, cells = 0, writes = 0;

    while (c != NULL) {
        const struct hconn_region *r = NULL;

        g_mutex_lock(&b->lock);
        if (b->next < b->regions->len) {
            r = &g_array_index(b->regions, struct hconn_region, b->next++);
        }
        g_mutex_unlock(&b->lock);
        if (r == NULL ||
            !bench_copy_region(b, c, r, &rows, &cells, &writes, &error)) {
            break;
        }
    }
    g_mutex_lock(&b->lock);
    if (error != NULL) {
        g_printerr("hbase-bench-copy: %s\n", error->message);
        b->failed = TRUE;
    }
    b->rows += rows;
    b->cells += cells;
    b->writes += writes;
    g_mutex_unlock(&b->lock);
    hconn_free(c);
    return NULL;
}

int
main(int argc, char **argv)
{
    g_autofree char *conf = NULL, *from = NULL, *to = NULL;
    gint parallel = 4, batch = 1000;
    GOptionEntry entries[] = {
        { "config", 'c', 0, G_OPTION_ARG_FILENAME, &conf, "config", "FILE" },
        { "from-table", 0, 0, G_OPTION_ARG_STRING, &from, "source", "T" },
        { "to-table", 0, 0, G_OPTION_ARG_STRING, &to, "destination", "T" },
        { "parallel", 0, 0, G_OPTION_ARG_INT, &parallel, "regions at once",
          "N" },
        { "batch-rows", 0, 0, G_OPTION_ARG_INT, &batch, "rows per fetch",
          "N" },
        { NULL },
    };
    g_autoptr(GOptionContext) ctx =
        g_option_context_new("- plain scan-and-write copy (baseline)");
    g_autoptr(GError) error = NULL;
    g_autoptr(config_t) cfg = NULL;
    struct bench_copy b = { 0 };
    struct hconn *c;
    GThread **threads;
    gint64 t0;
    double secs;

    g_option_context_add_main_entries(ctx, entries, NULL);
    if (!g_option_context_parse(ctx, &argc, &argv, &error) || conf == NULL ||
        from == NULL || to == NULL || parallel < 1 || batch < 1) {
        g_printerr("hbase-bench-copy: %s\n",
                   error ? error->message
                         : "-c, --from-table and --to-table are required");
        return 2;
    }
    cfg = config_load(conf, &error);
    if (cfg == NULL) {
        g_printerr("hbase-bench-copy: %s\n", error->message);
        return 2;
    }
    c = hconn_open(cfg, 0, &error);
    b.regions = c ? hconn_get_table_regions(c, from, &error) : NULL;
    hconn_free(c);
    if (b.regions == NULL) {
        g_printerr("hbase-bench-copy: %s\n", error->message);
        return 2;
    }
    b.cfg = cfg;
    b.from = from;
    b.to = to;
    b.batch = batch;
    g_mutex_init(&b.lock);
    threads = g_new0(GThread *, (guint)parallel);
    t0 = g_get_monotonic_time();
    for (gint i = 0; i < parallel; i++) {
        threads[i] = g_thread_new("copy", bench_copy_worker, &b);
    }
    for (gint i = 0; i < parallel; i++) {
        g_thread_join(threads[i]);
    }
    secs = (g_get_monotonic_time() - t0) / 1e6;
    g_free(threads);
    hconn_regions_free(b.regions);
    g_mutex_clear(&b.lock);
    printf("{\"rows\":%" G_GUINT64_FORMAT ",\"cells\":%" G_GUINT64_FORMAT
           ",\"writes\":%" G_GUINT64_FORMAT
           ",\"seconds\":%.3f,\"rows_per_s\":%.1f}\n",
           b.rows, b.cells, b.writes, secs, secs > 0 ? b.rows / secs : 0.0);
    return b.failed ? 1 : 0;
}
