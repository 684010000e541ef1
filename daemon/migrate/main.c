/* main.c: hbase-salt-migrate, copying a table into another under the
 * salt mapping the proxy's configuration gives each. */
#include <glib.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "analyze.h"
#include "catalog.h"
#include "ckpt.h"
#include "config.h"
#include "hconn.h"
#include "hsp-config.h"
#include "job.h"
#include "progress.h"
#include "unit.h"

#define MIGRATE_EXIT_OK 0
#define MIGRATE_EXIT_DIFFER 1 /* --verify found a difference */
#define MIGRATE_EXIT_FAILED 2 /* a unit failed, or the run could not start */

static struct job *migrate_job; /* for the signal handler */

static void
migrate_on_signal(int sig)
{
    if (migrate_job != NULL) {
        job_interrupt(migrate_job);
    }
}

static void
migrate_install_signals(void)
{
    struct sigaction sa;

    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = migrate_on_signal;
    /* a second signal kills at once */
    sa.sa_flags = SA_RESETHAND;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
}

/* Units from a file or stdin ("-"). */
static GArray *
migrate_read_units(const char *path, GError **error)
{
    g_autofree char *text = NULL;
    g_auto(GStrv) lines = NULL;
    GArray *units = g_array_new(FALSE, FALSE, sizeof(struct unit));

    g_array_set_clear_func(units, (GDestroyNotify)unit_clear);
    if (strcmp(path, "-") == 0) {
        GString *s = g_string_new(NULL);
        char buf[65536];
        size_t n;

        while ((n = fread(buf, 1, sizeof(buf), stdin)) > 0) {
            g_string_append_len(s, buf, (gssize)n);
        }
        text = g_string_free(s, FALSE);
    } else if (!g_file_get_contents(path, &text, NULL, error)) {
        g_array_unref(units);
        return NULL;
    }
    lines = g_strsplit(text, "\n", -1);
    for (guint i = 0; lines[i] != NULL; i++) {
        struct unit u;
        gboolean skip;
        g_autoptr(GError) err = NULL;

        if (unit_parse(lines[i], &u, &skip, &err)) {
            g_array_append_val(units, u);
        } else if (!skip) {
            g_set_error(error, UNIT_ERROR, 0, "%s:%u: %s",
                        strcmp(path, "-") == 0 ? "stdin" : path, i + 1,
                        err->message);
            g_array_unref(units);
            return NULL;
        }
    }
    return units;
}

/* The regions of a table as units of one side. */
static gboolean
migrate_region_units(struct hconn *c, const char *table, unit_side_t side,
                     GArray *units, GError **error)
{
    GArray *regions = hconn_get_table_regions(c, table, error);

    if (regions == NULL) {
        return FALSE;
    }
    if (regions->len == 0) {
        hconn_regions_free(regions);
        g_set_error(error, UNIT_ERROR, 0,
                    "table %s has no regions: does it exist?", table);
        return FALSE;
    }
    for (guint i = 0; i < regions->len; i++) {
        const struct hconn_region *r = &g_array_index(regions,
                                                      struct hconn_region, i);
        struct unit u = { side, g_bytes_ref(r->start), g_bytes_ref(r->end) };

        g_array_append_val(units, u);
    }
    hconn_regions_free(regions);
    return TRUE;
}

/*
 * The core library's log lines (the table catalog's, in the words a proxy
 * logs them) as the tool's own: "hbase-salt-migrate: MESSAGE" on stderr,
 * info and debug left out.
 */
static GLogWriterOutput
migrate_log_writer(GLogLevelFlags level, const GLogField *fields, gsize n,
                   gpointer data)
{
    if ((level & G_LOG_LEVEL_MASK) > G_LOG_LEVEL_MESSAGE) {
        return G_LOG_WRITER_HANDLED;
    }
    for (gsize i = 0; i < n; i++) {
        if (strcmp(fields[i].key, "MESSAGE") == 0) {
            fprintf(stderr, "hbase-salt-migrate: %s\n",
                    (const char *)fields[i].value);
            break;
        }
    }
    return G_LOG_WRITER_HANDLED;
}

/*
 * Both tables against the table catalog, by the proxy's own check, before
 * a single row is read or written: a mapping the catalog does not hold
 * would write rows where no proxy looks.  The destination of a copy is
 * registered when the catalog does not hold it yet, as a proxy would.
 */
static gboolean
migrate_check_catalog(struct hconn *c, config_t *cfg, const char *from,
                      const char *to, gboolean write, GError **error)
{
    const char *tables[2] = { from, to };

    for (guint i = 0; i < G_N_ELEMENTS(tables); i++) {
        g_autofree char *refusal = NULL;

        if (!catalog_check_copy(c, cfg, tables[i], write && i == 1, &refusal,
                                error)) {
            g_prefix_error(error, "the table catalog %s could not be asked: ",
                           cfg->catalog_table);
            return FALSE;
        }
        if (refusal != NULL) {
            g_set_error(error, UNIT_ERROR, 0,
                        "nothing read or written: the table catalog %s "
                        "refuses %s table %s (above); the configuration "
                        "file must say what every proxy says (conf/README.md: "
                        "The table catalog)",
                        cfg->catalog_table, i == 0 ? "source" : "destination",
                        tables[i]);
            return FALSE;
        }
    }
    return TRUE;
}

static void migrate_say(const char *fmt, ...) G_GNUC_PRINTF(1, 2);

/*
 * --analyze: the keys of --from-table, read with a key-only scan of each
 * region, the regions in turn a batch at a time so that a time limit
 * leaves a sample spread over all of them; unsalted when the table has
 * a section.  Prints the report on stdout.
 */
static int
migrate_analyze(const config_t *cfg, const char *table, guint sample,
                double limit_s, gboolean json)
{
    g_autoptr(GError) err = NULL;
    struct hconn *c = hconn_open(cfg, 0, &err);
    const char *name = strncmp(table, "default:", 8) == 0 ? table + 8 : table;
    const struct config_table *ct = config_find_table(cfg, name, strlen(name));
    g_autoptr(GArray) units = NULL;
    g_autofree int32_t *ids = NULL;
    g_autofree char *report = NULL;
    struct analyze_sample s;
    struct hconn_rows rows;
    gint64 start = g_get_monotonic_time();
    guint open = 0;
    int rc = MIGRATE_EXIT_FAILED;

    analyze_sample_init(&s, sample);
    hconn_rows_init(&rows);
    units = g_array_new(FALSE, FALSE, sizeof(struct unit));
    g_array_set_clear_func(units, (GDestroyNotify)unit_clear);
    if (c == NULL ||
        !migrate_region_units(c, table, UNIT_SOURCE, units, &err)) {
        goto out;
    }
    s.regions = units->len;
    ids = g_new(int32_t, units->len);
    for (guint i = 0; i < units->len; i++) {
        const struct unit *u = &g_array_index(units, struct unit, i);
        gsize sl, el;
        const uint8_t *sp = g_bytes_get_data(u->start, &sl);
        const uint8_t *ep = g_bytes_get_data(u->end, &el);

        if (!hconn_scanner_open_keys(c, table, sp, sl, ep, el, 1000, &ids[i],
                                     &err)) {
            goto out;
        }
        open++;
    }
    while (open > 0 && (g_get_monotonic_time() - start) / 1e6 < limit_s) {
        for (guint i = 0; i < units->len; i++) {
            if (ids[i] < 0) {
                continue;
            }
            hconn_rows_clear(&rows);
            if (!hconn_scanner_get_list(c, ids[i], 1000, &rows, &err)) {
                goto out;
            }
            for (guint j = 0; j < rows.rows->len; j++) {
                const struct hconn_row *r = &g_array_index(rows.rows,
                                                           struct hconn_row,
                                                           j);
                const uint8_t *logical = r->key;
                size_t llen = r->key_len;
                uint32_t bucket;

                if (ct != NULL &&
                    salt_owner(&ct->salt, r->key, r->key_len, &logical, &llen,
                               &bucket) == LEGACY_OWNER_NONE) {
                    s.unsalted++;
                    continue;
                }
                analyze_sample_add(&s, logical, llen);
            }
            if (rows.rows->len == 0) {
                if (!hconn_scanner_close(c, ids[i], &err)) {
                    goto out;
                }
                ids[i] = -1;
                open--;
                s.regions_done++;
            }
        }
    }
    s.complete = open == 0;
    for (guint i = 0; i < units->len && open > 0; i++) {
        if (ids[i] >= 0) {
            (void)hconn_scanner_close(c, ids[i], NULL);
        }
    }
    s.seconds = (g_get_monotonic_time() - start) / 1e6;
    report = analyze_report(name, ct, &s, json);
    fputs(report, stdout);
    rc = MIGRATE_EXIT_OK;
out:
    if (err != NULL) {
        migrate_say("%s", err->message);
    }
    hconn_rows_free(&rows);
    analyze_sample_clear(&s);
    hconn_free(c);
    return rc;
}

static void
migrate_say(const char *fmt, ...)
{
    va_list ap;

    fputs("hbase-salt-migrate: ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
}

int
main(int argc, char **argv)
{
    g_autofree char *config_path = NULL, *from = NULL, *to = NULL;
    g_autofree char *checkpoint = NULL, *shard = NULL, *units_path = NULL;
    gint parallel = 4, batch_rows = 1000, batch_kib = 4096, retries = 3;
    gint max_diffs = 100;
    gdouble max_rps = 0, interval = -1;
    gboolean all_versions = FALSE, dry_run = FALSE, verify = FALSE;
    gboolean list_units = FALSE, no_progress = FALSE, version = FALSE;
    gboolean analyze = FALSE, json = FALSE;
    gint sample = 100000;
    gdouble time_limit = 60;
    GOptionEntry entries[] = {
        { "config", 'c', 0, G_OPTION_ARG_FILENAME, &config_path,
          "The proxy's configuration file (required): backend servers and "
          "each table's mapping",
          "FILE" },
        { "from-table", 0, 0, G_OPTION_ARG_STRING, &from,
          "Source table; salted if the configuration has a section for it",
          "TABLE" },
        { "to-table", 0, 0, G_OPTION_ARG_STRING, &to,
          "Destination table (must exist); salted under its section, if any",
          "TABLE" },
        { "parallel", 0, 0, G_OPTION_ARG_INT, &parallel,
          "Regions copied at once, one scanner each (default 4)", "N" },
        { "batch-rows", 0, 0, G_OPTION_ARG_INT, &batch_rows,
          "Rows per scanner fetch and per write batch (default 1000)", "N" },
        { "batch-kib", 0, 0, G_OPTION_ARG_INT, &batch_kib,
          "Most KiB of one mutateRowsTs call (default 4096)", "KIB" },
        { "all-versions", 0, 0, G_OPTION_ARG_NONE, &all_versions,
          "Copy every version of every cell, not only the newest: one "
          "getVer call per column of every row, several times slower; "
          "only for families keeping VERSIONS > 1 whose older versions "
          "the application reads",
          NULL },
        { "max-rows-per-second", 0, 0, G_OPTION_ARG_DOUBLE, &max_rps,
          "Copy at most this many rows per second, all workers together",
          "N" },
        { "dry-run", 0, 0, G_OPTION_ARG_NONE, &dry_run,
          "Read and count what would be copied; write nothing", NULL },
        { "checkpoint", 0, 0, G_OPTION_ARG_FILENAME, &checkpoint,
          "Record progress here after every written batch; resume from it",
          "FILE" },
        { "verify", 0, 0, G_OPTION_ARG_NONE, &verify,
          "Compare source and destination row by row instead of copying",
          NULL },
        { "max-diffs", 0, 0, G_OPTION_ARG_INT, &max_diffs,
          "Differences printed by --verify (all are counted; default 100)",
          "N" },
        { "shard", 0, 0, G_OPTION_ARG_STRING, &shard,
          "Do only every N-th unit from the I-th (several hosts)", "I/N" },
        { "units", 0, 0, G_OPTION_ARG_FILENAME, &units_path,
          "Read work units from FILE ('-': stdin) and print one result line "
          "per unit on stdout",
          "FILE" },
        { "list-units", 0, 0, G_OPTION_ARG_NONE, &list_units,
          "Print the units (regions) a run would do, and exit", NULL },
        { "retries", 0, 0, G_OPTION_ARG_INT, &retries,
          "Attempts per unit after a failed call (default 3)", "N" },
        { "progress-interval", 0, 0, G_OPTION_ARG_DOUBLE, &interval,
          "Seconds between progress updates (default 0.5 on a terminal, 10 "
          "otherwise)",
          "S" },
        { "no-progress", 0, 0, G_OPTION_ARG_NONE, &no_progress,
          "No progress output", NULL },
        { "analyze", 0, 0, G_OPTION_ARG_NONE, &analyze,
          "Read a sample of --from-table's keys and print what each "
          "hash_part and bucket count would make of them, and a proposed "
          "[table:T] section; copies nothing",
          NULL },
        { "sample", 0, 0, G_OPTION_ARG_INT, &sample,
          "Keys --analyze keeps (default 100000)", "N" },
        { "time-limit", 0, 0, G_OPTION_ARG_DOUBLE, &time_limit,
          "Seconds --analyze reads for at most (default 60)", "S" },
        { "json", 0, 0, G_OPTION_ARG_NONE, &json, "--analyze's report as JSON",
          NULL },
        { "version", 'V', 0, G_OPTION_ARG_NONE, &version,
          "Print the version and exit", NULL },
        { NULL },
    };
    g_autoptr(GOptionContext) ctx = NULL;
    g_autoptr(GError) err = NULL;
    g_autoptr(config_t) cfg = NULL;
    g_autoptr(GArray) units = NULL;
    g_autofree char *job_text = NULL, *base_job = NULL;
    struct job_opts opts = { 0 };
    struct job_result res = { 0 };
    struct ckpt *ck = NULL;
    struct progress *prog = NULL;
    struct hconn *c = NULL;
    guint shard_i = 1, shard_n = 1, nunits = 0;
    gboolean tty = isatty(STDERR_FILENO);
    int rc = MIGRATE_EXIT_FAILED;

    ctx = g_option_context_new("- copy an HBase table into a salted one");
    g_option_context_set_summary(
        ctx, "Copies --from-table into --to-table through HBase's Thrift1 "
             "server, each\ntable salted as the proxy's configuration says "
             "(or not at all).\nExit status: 0 done (no differences), 1 "
             "--verify found differences,\n2 a unit failed, the run was "
             "interrupted (SIGINT, SIGTERM) or could not\nstart.");
    g_option_context_add_main_entries(ctx, entries, NULL);
    g_log_set_writer_func(migrate_log_writer, NULL, NULL);
    if (!g_option_context_parse(ctx, &argc, &argv, &err)) {
        migrate_say("%s", err->message);
        return MIGRATE_EXIT_FAILED;
    }
    if (version) {
        printf("hbase-salt-migrate %s\n", HSP_VERSION);
        return MIGRATE_EXIT_OK;
    }
    if (analyze) {
        if (config_path == NULL || from == NULL || to != NULL || sample < 1 ||
            time_limit <= 0) {
            migrate_say("--analyze takes -c FILE and --from-table, no "
                        "--to-table; --sample and --time-limit positive "
                        "numbers");
            return MIGRATE_EXIT_FAILED;
        }
        cfg = config_load(config_path, &err);
        if (cfg == NULL) {
            migrate_say("%s", err->message);
            return MIGRATE_EXIT_FAILED;
        }
        return migrate_analyze(cfg, from, (guint)sample, time_limit, json);
    }
    if (json) {
        migrate_say("--json is for --analyze");
        return MIGRATE_EXIT_FAILED;
    }
    if (config_path == NULL || from == NULL || to == NULL) {
        migrate_say("-c FILE, --from-table and --to-table are required "
                    "(see --help)");
        return MIGRATE_EXIT_FAILED;
    }
    if (parallel < 1 || batch_rows < 1 || batch_kib < 1 || retries < 0 ||
        max_diffs < 0 || max_rps < 0) {
        migrate_say("--parallel, --batch-rows and --batch-kib take positive "
                    "numbers; --retries, --max-diffs and "
                    "--max-rows-per-second non-negative ones");
        return MIGRATE_EXIT_FAILED;
    }
    if (shard != NULL && !unit_parse_shard(shard, &shard_i, &shard_n, &err)) {
        migrate_say("%s", err->message);
        return MIGRATE_EXIT_FAILED;
    }
    if (verify && (checkpoint != NULL || dry_run)) {
        migrate_say("--verify reads only: --checkpoint and --dry-run are for "
                    "copies");
        return MIGRATE_EXIT_FAILED;
    }
    cfg = config_load(config_path, &err);
    if (cfg == NULL) {
        migrate_say("%s", err->message);
        return MIGRATE_EXIT_FAILED;
    }
    {
        const char *a = strncmp(from, "default:", 8) == 0 ? from + 8 : from;
        const char *b = strncmp(to, "default:", 8) == 0 ? to + 8 : to;

        if (strcmp(a, b) == 0) {
            migrate_say("--from-table and --to-table are the same table: a "
                        "mapping change is a copy into a new table");
            return MIGRATE_EXIT_FAILED;
        }
    }
    opts.from = from;
    opts.to = to;
    opts.parallel = (guint)parallel;
    opts.batch_rows = (guint)batch_rows;
    opts.batch_bytes = (gsize)batch_kib * 1024;
    opts.all_versions = all_versions;
    opts.dry_run = dry_run;
    opts.verify = verify;
    opts.max_rows_per_second = max_rps;
    opts.retries = (guint)retries;
    opts.max_diffs = (guint)max_diffs;
    opts.units_mode = units_path != NULL;
    opts.sample = !no_progress;
    migrate_job = job_new(cfg, &opts);
    base_job = job_describe(migrate_job);
    job_text = shard != NULL ? g_strdup_printf("%s shard=%u/%u", base_job,
                                               shard_i, shard_n)
                             : g_strdup(base_job);

    /* the units: given, from a checkpoint, or the tables' regions */
    if (checkpoint != NULL && !ckpt_load(checkpoint, &ck, &err)) {
        migrate_say("%s", err->message);
        goto out;
    }
    if (ck != NULL && strcmp(ck->job, job_text) != 0) {
        migrate_say("%s was written by another job:\n  it:   %s\n  this: %s\n"
                    "Use another --checkpoint file, or the options it was "
                    "made with.",
                    checkpoint, ck->job, job_text);
        goto out;
    }
    units = g_array_new(FALSE, FALSE, sizeof(struct unit));
    g_array_set_clear_func(units, (GDestroyNotify)unit_clear);
    if (units_path != NULL) {
        g_array_unref(units);
        units = migrate_read_units(units_path, &err);
        if (units == NULL) {
            migrate_say("%s", err->message);
            goto out;
        }
    } else if (ck == NULL || list_units) {
        c = hconn_open(cfg, 0, &err);
        if (c == NULL ||
            !migrate_region_units(c, from, UNIT_SOURCE, units, &err) ||
            (verify && !migrate_region_units(c, to, UNIT_DEST, units, &err))) {
            migrate_say("%s", err->message);
            goto out;
        }
    }
    if (ck == NULL || units_path != NULL || list_units) {
        /* keep this shard's units, in the order listed */
        GArray *mine = g_array_new(FALSE, FALSE, sizeof(struct unit));

        g_array_set_clear_func(mine, (GDestroyNotify)unit_clear);
        for (guint i = 0; i < units->len; i++) {
            struct unit *u = &g_array_index(units, struct unit, i);

            if (unit_in_shard(i, shard_i, shard_n)) {
                struct unit copy = { u->side, g_bytes_ref(u->start),
                                     g_bytes_ref(u->end) };

                g_array_append_val(mine, copy);
            }
        }
        g_array_unref(units);
        units = mine;
    }
    if (list_units) {
        for (guint i = 0; i < units->len; i++) {
            g_autofree char *line =
                unit_format(&g_array_index(units, struct unit, i));

            printf("%s\n", line);
        }
        rc = MIGRATE_EXIT_OK;
        goto out;
    }
    if (ck == NULL) {
        ck = ckpt_new(dry_run ? NULL : checkpoint, job_text,
                      (const struct unit *)units->data, units->len);
    } else {
        if (dry_run) {
            g_clear_pointer(&ck->path, g_free); /* read it, never write it */
        }
        if (units_path != NULL) {
            /* the given units, resumed where the checkpoint has them */
            struct ckpt *given = ckpt_new(ck->path, job_text, NULL, 0);

            for (guint i = 0; i < units->len; i++) {
                const struct unit *u = &g_array_index(units, struct unit, i);
                struct ckpt_entry *old = ckpt_find(ck, u);
                struct ckpt_entry *e = ckpt_add(given, u);

                if (old != NULL) {
                    e->done = old->done;
                    e->after = old->after ? g_bytes_ref(old->after) : NULL;
                    e->rows = old->rows;
                    e->cells = old->cells;
                    e->bytes = old->bytes;
                }
            }
            /* units of the file not given this time are kept */
            for (guint i = 0; i < ck->entries->len; i++) {
                struct ckpt_entry *old = ck->entries->pdata[i];

                if (ckpt_find(given, &old->unit) == NULL) {
                    struct ckpt_entry *e = ckpt_add(given, &old->unit);

                    e->idle = TRUE; /* not given now: kept, not run */
                    e->after = old->after ? g_bytes_ref(old->after) : NULL;
                    e->done = old->done;
                    e->rows = old->rows;
                    e->cells = old->cells;
                    e->bytes = old->bytes;
                }
            }
            ckpt_free(ck);
            ck = given;
        }
        migrate_say("resuming from %s", checkpoint);
    }
    if (c == NULL) {
        c = hconn_open(cfg, 0, &err);
    }
    if (c == NULL) {
        migrate_say("%s", err->message);
        goto out;
    }
    if (!dry_run && !verify) {
        g_autoptr(GError) e2 = NULL;
        gboolean exists = FALSE;

        if (!hconn_table_exists(c, to, &exists, &e2)) {
            migrate_say("%s", e2->message);
            goto out;
        }
        if (!exists) {
            migrate_say("destination table %s does not exist: create it "
                        "first, with the source's column families (see "
                        "man 8 hbase-salt-migrate)",
                        to);
            goto out;
        }
    }
    if (!migrate_check_catalog(c, cfg, from, to, !dry_run && !verify, &err)) {
        migrate_say("%s", err->message);
        goto out;
    }
    hconn_free(g_steal_pointer(&c));

    /* say what will and will not be copied, before anything is */
    migrate_say("%s %s%s", verify ? "verifying" : "copying", base_job,
                dry_run ? " (dry run: nothing is written)" : "");
    if (!verify) {
        if (all_versions) {
            migrate_say("every version of every cell is copied, one getVer "
                        "call per cell, each at its own timestamp");
        } else {
            migrate_say("only the NEWEST version of each cell is copied "
                        "(a Thrift1 scan returns one version), at its own "
                        "timestamp; --all-versions copies every version");
        }
        migrate_say("deletes are not copied: deleted cells are absent from "
                    "the source and stay absent, but a delete made in the "
                    "source after its row was copied is not carried over, "
                    "and delete markers (tombstones) are never copied");
    }
    for (guint i = 0; i < ck->entries->len; i++) {
        if (!((struct ckpt_entry *)ck->entries->pdata[i])->idle) {
            nunits++;
        }
    }
    migrate_say("%u unit(s), %u worker(s)%s%s", nunits,
                MIN((guint)parallel, MAX(nunits, 1)),
                shard != NULL ? ", shard " : "", shard != NULL ? shard : "");

    if (checkpoint != NULL && !dry_run && !ckpt_save(ck, &err)) {
        migrate_say("checkpoint: %s", err->message);
        goto out;
    }
    if (interval < 0) {
        interval = tty ? 0.5 : 10;
    }
    prog = progress_new((guint)parallel, ck->entries->len, stderr, tty,
                        interval,
                        verify    ? "verify"
                        : dry_run ? "dry-run"
                                  : "copy");
    if (!no_progress) {
        progress_start(prog);
    }
    migrate_install_signals();
    if (!job_run(migrate_job, ck, prog, units_path != NULL ? stdout : NULL,
                 units_path != NULL ? stderr : stdout, &res, &err)) {
        if (!no_progress) {
            progress_stop(prog);
        }
        migrate_say("%s", err->message);
        goto out;
    }
    if (!no_progress) {
        progress_stop(prog);
    }
    {
        guint64 r, b;
        double secs;

        progress_totals(prog, &r, &b, &secs);
        if (verify) {
            /* a logical row once: the source's, and the destination's
             * that have no source row */
            migrate_say("compared %" G_GUINT64_FORMAT
                        " rows (%" G_GUINT64_FORMAT
                        " in source, %" G_GUINT64_FORMAT " in destination), "
                        "%" G_GUINT64_FORMAT " cells, %" G_GUINT64_FORMAT
                        " bytes in source, in %.1f s; units ok %u, failed "
                        "%u, interrupted %u",
                        res.rows + res.dest_only, res.rows, res.dest_rows,
                        res.cells, res.bytes, secs, res.units_ok,
                        res.units_failed, res.units_interrupted);
        } else {
            migrate_say("%s %" G_GUINT64_FORMAT " rows, %" G_GUINT64_FORMAT
                        " cells, %" G_GUINT64_FORMAT " bytes in all; this "
                        "run %" G_GUINT64_FORMAT " rows in %.1f s (%.0f "
                        "rows/s), %" G_GUINT64_FORMAT " write calls; units "
                        "ok %u, failed %u, interrupted %u",
                        dry_run ? "would copy" : "copied", res.rows, res.cells,
                        res.bytes, r, secs, secs > 0 ? r / secs : 0.0,
                        res.writes, res.units_ok, res.units_failed,
                        res.units_interrupted);
        }
    }
    if (res.units_failed > 0 || res.units_interrupted > 0) {
        if (res.units_interrupted > 0) {
            migrate_say("interrupted (SIGINT or SIGTERM): %u unit(s) "
                        "stopped after their last acknowledged batch or "
                        "never begun",
                        res.units_interrupted);
        }
        if (checkpoint != NULL && !dry_run) {
            migrate_say("incomplete: run the same command again to resume "
                        "from %s",
                        checkpoint);
        } else if (!verify && !dry_run) {
            migrate_say("incomplete: without --checkpoint, a new run copies "
                        "every unit again (the same cells at the same "
                        "timestamps)");
        }
        rc = MIGRATE_EXIT_FAILED;
    } else if (verify && res.diffs > 0) {
        migrate_say("%" G_GUINT64_FORMAT " difference(s)", res.diffs);
        rc = MIGRATE_EXIT_DIFFER;
    } else {
        if (verify) {
            migrate_say("no differences");
        }
        rc = MIGRATE_EXIT_OK;
    }
out:
    hconn_free(c);
    progress_free(prog);
    ckpt_free(ck);
    job_free(migrate_job);
    migrate_job = NULL;
    return rc;
}
