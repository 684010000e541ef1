/* catalog.c: the table catalog in HBase: each salted table's mapping, registered by the first proxy to serve it and checked by every other. */
#include "catalog.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

#include <glib/gstdio.h>

#include "bell.h"
#include "hconn.h"
#include "lograte.h"
#include "hsp-config.h"
#include "salt.h"
#include "tablecheck.h"
#include "tabstate.h"

/*
 * One row per salted table, keyed by its name as configured, holding one
 * cell, m:mapping: the table's section as config_mapping_to_text writes
 * it, after a comment line saying who registered it and when.  The
 * proxy's own parser reads it back, so an entry is compared field by
 * field (salt_table_equal), and an entry written by a later version with
 * keys this one does not know is refused rather than misread.
 *
 * Registration is Thrift1's checkAndPut with no expected value: "put if
 * the column is absent", atomic in HBase, so of proxies racing on a new
 * table exactly one writes and the others read what it wrote.
 */

/* How many rows of a non-empty, unregistered table are looked at to tell
 * rows salted by this very mapping (a proxy that served the table before
 * the catalog existed) from rows written unsalted. */
#define CATALOG_SAMPLE_ROWS 64
/* The most rows one scan of the catalog reads: one per salted table. */
#define CATALOG_SCAN_ROWS 100000

void
catalog_report_clear(struct catalog_report *r)
{
    g_free(r->error);
    memset(r, 0, sizeof(*r));
}

/* Sets t's refusal to text (NULL: served); the text lives with ts, as a
 * request may still point at it.  retry: it clears by itself, a client
 * is told it may retry (tabstate_refusal_retry). */
static void
catalog_set_refusal_retry(struct tabstate *ts, const struct config_table *t,
                          char *text, gboolean retry)
{
    struct tabstate_table *st = tabstate_at(ts, t);

    if (text != NULL) {
        tabstate_keep(ts, text);
    }
    g_atomic_int_set(&st->refusal_retry, retry ? 1 : 0);
    g_atomic_pointer_set(&st->refusal, text);
}

/* A refusal only an operator clears (a mapping that disagrees). */
static void
catalog_set_refusal(struct tabstate *ts, const struct config_table *t,
                    char *text)
{
    catalog_set_refusal_retry(ts, t, text, FALSE);
}

/* A mapping on one line, for messages: "buckets = 16, salt_format = ...". */
static char *
catalog_mapping_line(const struct salt_table *salt)
{
    GString *s = g_string_new(NULL);

    config_mapping_to_text(s, salt);
    while (s->len > 0 && s->str[s->len - 1] == '\n') {
        g_string_truncate(s, s->len - 1);
    }
    for (gsize i = 0; i < s->len; i++) {
        if (s->str[i] == '\n') {
            g_string_insert_c(s, i, ',');
            s->str[i + 1] = ' ';
        }
    }
    return g_string_free(s, FALSE);
}

/* The cell's text: who registered it, then the section's keys. */
static char *
catalog_entry_text(const struct salt_table *salt)
{
    g_autoptr(GDateTime) now = g_date_time_new_now_utc();
    g_autofree char *when = g_date_time_format(now, "%Y-%m-%dT%H:%M:%SZ");
    GString *s = g_string_new(NULL);

    /* the program: a proxy, or hbase-salt-migrate registering the table
     * it copies into */
    g_string_append_printf(s, "# registered %s by %s %s on %s (pid %ld)\n",
                           when,
                           g_get_prgname() != NULL ? g_get_prgname()
                                                   : "hbase-salt-proxy",
                           HSP_VERSION, g_get_host_name(), (long)getpid());
    config_mapping_to_text(s, salt);
    return g_string_free(s, FALSE);
}

/* The "# registered ..." line of an entry, without the "# ", or "". */
static char *
catalog_entry_origin(const char *text)
{
    const char *nl;

    if (!g_str_has_prefix(text, "# ")) {
        return g_strdup("");
    }
    nl = strchr(text, '\n');
    return g_strndup(text + 2,
                     nl != NULL ? (gsize)(nl - text - 2) : strlen(text + 2));
}

/* The entry of table, if the catalog holds one: *text NULL if not. */
static gboolean
catalog_read(struct hconn *c, const char *catalog, const char *table,
             char **text, GError **error)
{
    g_autoptr(GPtrArray) keys =
        g_ptr_array_new_with_free_func((GDestroyNotify)g_bytes_unref);
    struct hconn_rows rows;
    gboolean ok;

    *text = NULL;
    g_ptr_array_add(keys, g_bytes_new(table, strlen(table)));
    hconn_rows_init(&rows);
    ok = hconn_get_rows(c, catalog, keys, &rows, error);
    for (guint i = 0; ok && i < rows.cells->len; i++) {
        const struct hconn_cell *cell = &g_array_index(rows.cells,
                                                       struct hconn_cell, i);

        if (cell->col_len == strlen(CATALOG_COLUMN) &&
            memcmp(cell->col, CATALOG_COLUMN, cell->col_len) == 0) {
            g_free(*text);
            *text = g_strndup((const char *)cell->val, cell->val_len);
        }
    }
    hconn_rows_free(&rows);
    return ok;
}

/* An entry's mapping on one line, or why this version does not read
 * it. */
static char *
catalog_entry_mapping(const char *table, const char *entry)
{
    g_autoptr(GError) err = NULL;
    struct salt_table theirs;

    if (!config_mapping_parse(table, entry, &theirs, &err)) {
        return g_strdup(err->message);
    }
    return catalog_mapping_line(&theirs);
}

/*
 * The refusal of a table the file leaves unsalted yet the catalog holds
 * (entry): a proxy's (config_orphan), or, for tool, the migration tool's
 * (catalog_check_copy).  Both name the catalog's mapping and its origin.
 */
static char *
catalog_unsalted_why(const struct config *cfg, const char *table,
                     const char *entry, gboolean tool)
{
    g_autofree char *origin = catalog_entry_origin(entry);
    g_autofree char *line = catalog_entry_mapping(table, entry);

    if (tool) {
        return g_strdup_printf(
            "table %s has no [table:%s] section in this configuration file, "
            "yet the table catalog %s holds its mapping as {%s} (%s): the "
            "proxies salt its rows, and read or written unsalted they are "
            "not where the proxies look; add its section",
            table, table, cfg->catalog_table, line, origin);
    }
    return g_strdup_printf(
        "hbase-salt-proxy: table %s is not served: the table catalog %s "
        "holds it as salted {%s} (%s), and this proxy's configuration has "
        "no [table:%s] section; add the section (the catalog's mapping, as "
        "printed) or remove the entry once the table holds no salted rows",
        table, cfg->catalog_table, line, origin, table);
}

/* name, then why, NUL-ended: one orphan as collected. */
static int
catalog_orphan_cmp(gconstpointer a, gconstpointer b)
{
    const char *x = *(const char *const *)a, *y = *(const char *const *)b;
    size_t xl = strlen(x), yl = strlen(y);
    int r = memcmp(x, y, MIN(xl, yl));

    /* config_find_table's order: bytes, then the shorter first */
    return r != 0 ? r : (xl > yl) - (xl < yl);
}

/* One allocation holding the orphans of pairs (each "name\0why\0", as
 * catalog_orphan_pair makes them), sorted; NULL for none. */
static struct config_orphans *
catalog_orphans_pack(GPtrArray *pairs)
{
    struct config_orphans *set;
    size_t size, n = pairs->len;
    char *p;

    if (n == 0) {
        return NULL;
    }
    g_ptr_array_sort(pairs, catalog_orphan_cmp);
    size = sizeof(*set) + n * sizeof(set->items[0]);
    for (guint i = 0; i < n; i++) {
        const char *name = g_ptr_array_index(pairs, i);

        size += strlen(name) + 1 + strlen(name + strlen(name) + 1) + 1;
    }
    set = g_malloc(size);
    set->n = n;
    p = (char *)&set->items[n];
    for (guint i = 0; i < n; i++) {
        const char *name = g_ptr_array_index(pairs, i);
        size_t len = strlen(name), wlen = strlen(name + len + 1);

        memcpy(p, name, len + 1 + wlen + 1);
        set->items[i] = (struct config_orphan){ .name = p,
                                                .name_len = len,
                                                .why = p + len + 1 };
        p += len + 1 + wlen + 1;
    }
    return set;
}

static char *
catalog_orphan_pair(const char *name, const char *why)
{
    size_t len = strlen(name), wlen = strlen(why);
    char *pair = g_malloc(len + 1 + wlen + 1);

    memcpy(pair, name, len + 1);
    memcpy(pair + len + 1, why, wlen + 1);
    return pair;
}

/*
 * The catalog's entries for tables cfg has no section for, as "name\0why\0"
 * pairs appended to pairs (g_free), read with one scan: a catalog holds
 * one row per salted table.  No catalog table: none.
 */
static gboolean
catalog_scan_orphans(struct hconn *c, const struct config *cfg,
                     GPtrArray *pairs, GError **error)
{
    struct hconn_rows rows;
    gboolean exists, ok;

    if (!hconn_table_exists(c, cfg->catalog_table, &exists, error)) {
        return FALSE;
    }
    if (!exists) {
        return TRUE;
    }
    hconn_rows_init(&rows);
    ok = hconn_scan_first(c, cfg->catalog_table, CATALOG_SCAN_ROWS, &rows,
                          error);
    for (guint i = 0; ok && i < rows.rows->len; i++) {
        const struct hconn_row *r = &g_array_index(rows.rows, struct hconn_row,
                                                   i);
        g_autofree char *name = NULL;
        g_autofree char *entry = NULL;

        /* a name no client can send as a string: not a table's */
        if (r->key_len == 0 || memchr(r->key, '\0', r->key_len) != NULL ||
            config_find_table(cfg, r->key, r->key_len) != NULL) {
            continue;
        }
        for (guint j = r->first; j < r->first + r->n; j++) {
            const struct hconn_cell *cell = &g_array_index(rows.cells,
                                                           struct hconn_cell,
                                                           j);

            if (cell->col_len == strlen(CATALOG_COLUMN) &&
                memcmp(cell->col, CATALOG_COLUMN, cell->col_len) == 0) {
                g_free(entry);
                entry = g_strndup((const char *)cell->val, cell->val_len);
            }
        }
        if (entry != NULL) {
            g_autofree char *why = NULL;

            name = g_strndup((const char *)r->key, r->key_len);
            why = catalog_unsalted_why(cfg, name, entry, FALSE);
            g_ptr_array_add(pairs, catalog_orphan_pair(name, why));
        }
    }
    hconn_rows_free(&rows);
    return ok;
}

/* Whether set holds name with the reason why; why NULL: with any. */
static gboolean
catalog_orphans_hold(const struct config_orphans *set, const char *name,
                     const char *why)
{
    for (size_t i = 0; set != NULL && i < set->n; i++) {
        if (strcmp(set->items[i].name, name) == 0) {
            return why == NULL || strcmp(set->items[i].why, why) == 0;
        }
    }
    return FALSE;
}

/*
 * Makes set the orphans calls are refused on, each said once: a new one
 * (or a new reason) as a warning, one gone as a message.  The set it
 * replaces stays with ts, as a request may still read it.
 */
static void
catalog_orphans_publish(struct tabstate *ts, struct config_orphans *set)
{
    const struct config *cfg = ts->cfg;
    const struct config_orphans *was = g_atomic_pointer_get(&ts->orphans);
    gboolean same = (was != NULL ? was->n : 0) == (set != NULL ? set->n : 0);

    for (size_t i = 0; set != NULL && i < set->n; i++) {
        if (!catalog_orphans_hold(was, set->items[i].name,
                                  set->items[i].why)) {
            g_warning("%s", set->items[i].why);
            same = FALSE;
        }
    }
    for (size_t i = 0; was != NULL && i < was->n; i++) {
        if (!catalog_orphans_hold(set, was->items[i].name, NULL)) {
            g_message("catalog: table %s has no entry in %s any more: it "
                      "passes through unsalted",
                      was->items[i].name, cfg->catalog_table);
        }
    }
    if (same) {
        g_free(set);
        return;
    }
    if (set != NULL) {
        tabstate_keep(ts, set);
    }
    g_atomic_pointer_set(&ts->orphans, set);
}

/* A scan of the catalog failed: said once until one succeeds. */
static void
catalog_scan_failed(struct tabstate *ts, const GError *err)
{
    if (g_atomic_int_get(&ts->scan_failed) == 0) {
        g_warning("catalog: %s could not be scanned for tables this file "
                  "has no section for (tried again every recheck_ms): %s",
                  ts->cfg->catalog_table, err->message);
    }
    g_atomic_int_set(&ts->scan_failed, 1);
}

/* The orphans again, on c: published, or, when the scan fails, kept as
 * they were (the failure said once until a scan succeeds). */
static gboolean
catalog_orphans_check(struct hconn *c, struct tabstate *ts)
{
    g_autoptr(GPtrArray) pairs = g_ptr_array_new_with_free_func(g_free);
    g_autoptr(GError) err = NULL;

    if (!catalog_scan_orphans(c, ts->cfg, pairs, &err)) {
        catalog_scan_failed(ts, err);
        return FALSE;
    }
    g_atomic_int_set(&ts->scan_failed, 0);
    catalog_orphans_publish(ts, catalog_orphans_pack(pairs));
    return TRUE;
}

/*
 * Whether the rows a table holds already were written by this mapping:
 * every sampled row carries a valid salt naming its logical key's bucket.
 * Unsalted rows pass that by chance about once in `buckets`, each.
 */
static gboolean
catalog_rows_salted(struct hconn *c, const struct config_table *t,
                    gboolean *salted, GError **error)
{
    struct hconn_rows rows;
    gboolean ok;

    *salted = FALSE;
    hconn_rows_init(&rows);
    ok = hconn_scan_first(c, t->name, CATALOG_SAMPLE_ROWS, &rows, error);
    if (ok) {
        *salted = rows.rows->len > 0;
        for (guint i = 0; *salted && i < rows.rows->len; i++) {
            const struct hconn_row *r = &g_array_index(rows.rows,
                                                       struct hconn_row, i);
            const uint8_t *logical;
            size_t logical_len;
            uint32_t bucket;

            *salted = salt_strip(&t->salt, r->key, r->key_len, &logical,
                                 &logical_len, &bucket) &&
                      salt_bucket(&t->salt, logical, logical_len) == bucket;
        }
    }
    hconn_rows_free(&rows);
    return ok;
}

/*
 * Whether an unregistered table may be registered: it is empty, or its
 * section says what its rows are (a forward-looking rule keeps them
 * where they are; an adopted mapping reads them as the other tool wrote
 * them), or they are salted by this very mapping.  Else *why says what
 * serving it would do.
 */
static gboolean
catalog_may_register(struct hconn *c, const struct config_table *t, char **why,
                     GError **error)
{
    gboolean exists, empty, salted;

    *why = NULL;
    if (t->salt.legacy.kind != LEGACY_NONE ||
        t->salt.mapping != SALT_MAPPING_XXH3) {
        return TRUE;
    }
    if (!hconn_table_exists(c, t->name, &exists, error)) {
        return FALSE;
    }
    if (!exists) {
        return TRUE;
    }
    if (!hconn_table_empty(c, t->name, &empty, error)) {
        return FALSE;
    }
    if (empty) {
        return TRUE;
    }
    if (!catalog_rows_salted(c, t, &salted, error)) {
        return FALSE;
    }
    if (salted) {
        g_message("catalog: table %s holds rows already, each of those "
                  "sampled salted by its configured mapping: registering "
                  "it",
                  t->name);
        return TRUE;
    }
    *why = g_strdup_printf(
        "hbase-salt-proxy: table %s is not served: it holds rows written "
        "without this salt, which salting would hide from every read; add "
        "a legacy_* rule (forward-looking salting) or copy them with "
        "hbase-salt-migrate (man 8 hbase-salt-migrate)",
        t->name);
    return TRUE;
}

typedef enum {
    CATALOG_SERVED,
    CATALOG_REGISTERED,
    CATALOG_REFUSED,
} catalog_verdict_t;

/* The verdict on one table given its entry; sets the refusal. */
static catalog_verdict_t
catalog_judge(struct tabstate *ts, const struct config_table *t,
              const char *entry)
{
    const struct config *cfg = ts->cfg;
    g_autoptr(GError) err = NULL;
    g_autofree char *ours = catalog_mapping_line(&t->salt);
    g_autofree char *origin = catalog_entry_origin(entry);
    struct salt_table theirs;
    char *why;

    if (!config_mapping_parse(t->name, entry, &theirs, &err)) {
        why = g_strdup_printf(
            "hbase-salt-proxy: table %s is not served: its entry in the "
            "table catalog %s (%s) is not one this version reads (%s); this "
            "proxy's mapping: %s",
            t->name, cfg->catalog_table, origin, err->message, ours);
    } else if (!salt_table_equal(&theirs, &t->salt)) {
        g_autofree char *line = catalog_mapping_line(&theirs);

        why = g_strdup_printf(
            "hbase-salt-proxy: table %s is not served: the table catalog %s "
            "holds its mapping as {%s} (%s), this proxy is configured with "
            "{%s}; rows written under one are not found under the other",
            t->name, cfg->catalog_table, line, origin, ours);
    } else {
        catalog_set_refusal(ts, t, NULL);
        return CATALOG_SERVED;
    }
    g_warning("%s", why);
    catalog_set_refusal(ts, t, why);
    return CATALOG_REFUSED;
}

/* One table against the catalog. */
static gboolean
catalog_check_table(struct hconn *c, struct tabstate *ts,
                    const struct config_table *t, catalog_verdict_t *verdict,
                    GError **error)
{
    const struct config *cfg = ts->cfg;
    g_autofree char *entry = NULL;
    g_autofree char *why = NULL;
    g_autofree char *text = NULL;
    struct hconn_cell cell;
    gboolean applied;

    if (!catalog_read(c, cfg->catalog_table, t->name, &entry, error)) {
        return FALSE;
    }
    if (entry != NULL) {
        *verdict = catalog_judge(ts, t, entry);
        return TRUE;
    }
    if (!catalog_may_register(c, t, &why, error)) {
        return FALSE;
    }
    if (why != NULL) {
        g_warning("%s", why);
        catalog_set_refusal(ts, t, g_steal_pointer(&why));
        *verdict = CATALOG_REFUSED;
        return TRUE;
    }
    text = catalog_entry_text(&t->salt);
    cell = (struct hconn_cell){ .col = (const uint8_t *)CATALOG_COLUMN,
                                .col_len = (uint32_t)strlen(CATALOG_COLUMN),
                                .val = (const uint8_t *)text,
                                .val_len = (uint32_t)strlen(text) };
    if (!hconn_check_and_put(c, cfg->catalog_table, (const uint8_t *)t->name,
                             t->name_len, CATALOG_COLUMN, NULL, 0, &cell, 1,
                             &applied, error)) {
        return FALSE;
    }
    if (applied) {
        g_autofree char *line = catalog_mapping_line(&t->salt);

        g_message("catalog: registered table %s in %s: %s", t->name,
                  cfg->catalog_table, line);
        catalog_set_refusal(ts, t, NULL);
        *verdict = CATALOG_REGISTERED;
        return TRUE;
    }
    /* another proxy registered it meanwhile: its entry decides */
    if (!catalog_read(c, cfg->catalog_table, t->name, &entry, error)) {
        return FALSE;
    }
    if (entry == NULL) {
        g_set_error(error, HCONN_ERROR, HCONN_ERROR_PROTOCOL,
                    "%s: checkAndPut on %s failed, yet no entry is there",
                    cfg->catalog_table, t->name);
        return FALSE;
    }
    *verdict = catalog_judge(ts, t, entry);
    return TRUE;
}

static char *
catalog_state_path(const struct config *cfg)
{
    return g_build_filename(cfg->catalog_state_dir, CATALOG_STATE_FILE, NULL);
}

/* The served tables' entries, for a start while HBase is unreachable. */
static void
catalog_state_write(const struct tabstate *ts)
{
    const struct config *cfg = ts->cfg;
    g_autofree char *path = catalog_state_path(cfg);
    g_autoptr(GError) err = NULL;
    GString *s = g_string_new(NULL);

    g_string_append_printf(s,
                           "# hbase-salt-proxy: the mappings last "
                           "verified against the table catalog %s.\n"
                           "# Written by the proxy; read only while HBase "
                           "cannot be reached at start.\n",
                           cfg->catalog_table);
    for (size_t i = 0; i < cfg->n_tables; i++) {
        const struct config_table *t = &cfg->tables[i];

        if (tabstate_refusal(ts, t) != NULL) {
            continue;
        }
        g_string_append_printf(s, "\n[table:%s]\n", t->name);
        config_mapping_to_text(s, &t->salt);
    }
    /* written aside and renamed: a crash leaves the old or the new */
    if (g_mkdir_with_parents(cfg->catalog_state_dir, 0700) != 0 ||
        !g_file_set_contents(path, s->str, (gssize)s->len, &err)) {
        g_warning("catalog: cannot keep the verified mappings in %s: %s "
                  "(a start while HBase is down will not serve the salted "
                  "tables)",
                  path, err != NULL ? err->message : g_strerror(errno));
    }
    g_string_free(s, TRUE);
}

/* HBase cannot be asked: the state file decides, until it can. */
static void
catalog_from_state(struct tabstate *ts, struct catalog_report *report)
{
    const struct config *cfg = ts->cfg;
    g_autofree char *path = catalog_state_path(cfg);
    g_autoptr(GError) err = NULL;
    g_autoptr(config_t) state = config_load(path, &err);
    g_autofree char *head = NULL;
    g_autofree char *tail = NULL;

    if (state == NULL &&
        !g_error_matches(err, CONFIG_ERROR, CONFIG_ERROR_NOT_FOUND)) {
        /* read again at every retry: said once a burst */
        g_autofree char *what =
            g_strdup_printf("catalog: the state file is unusable: %s",
                            err->message);

        if (lograte_note_of(G_LOG_LEVEL_WARNING, "read", what, "", NULL, 0)) {
            g_warning("%s", what);
        }
    }
    for (size_t i = 0; i < cfg->n_tables; i++) {
        const struct config_table *t = &cfg->tables[i];
        const struct config_table *s = state != NULL
                                           ? config_find_table(state, t->name,
                                                               t->name_len)
                                           : NULL;

        if (s != NULL && salt_table_equal(&s->salt, &t->salt)) {
            report->from_state++;
            catalog_set_refusal(ts, t, NULL);
            continue;
        }
        report->unverified++;
        catalog_set_refusal_retry(
            ts, t,
            g_strdup_printf("hbase-salt-proxy: table %s is not served yet: "
                            "its mapping could not be checked against the "
                            "table catalog %s (%s), and %s holds no "
                            "verified entry equal to it",
                            t->name, cfg->catalog_table, report->error, path),
            TRUE);
    }
    /* retried every catalog_recheck_ms: the first of a burst in full,
     * the rest counted (a line every 2 s would bury everything else) */
    head = g_strdup_printf("catalog: HBase could not be asked (%s)",
                           report->error);
    tail = g_strdup_printf(": %u salted table%s served by the mappings last "
                           "verified (%s), %u not served until it can be; "
                           "trying again every %u ms",
                           report->from_state,
                           report->from_state == 1 ? "" : "s", path,
                           report->unverified, cfg->catalog_recheck_ms);
    if (lograte_note_of(G_LOG_LEVEL_WARNING, "check", head, tail, NULL, 0)) {
        g_warning("%s%s", head, tail);
    }
}

/* The first server that answers: a Thrift1 one, else (a cluster that
 * runs only `hbase thrift2`) a Thrift2 one. */
static struct hconn *
catalog_connect(const struct config *cfg, GError **error)
{
    g_autoptr(GString) why = g_string_new(NULL);

    for (size_t i = 0; i < cfg->n_servers + cfg->n_thrift2_servers; i++) {
        g_autoptr(GError) err = NULL;
        struct hconn *c = hconn_open_listed(cfg, i, &err);

        /* a server listed under the wrong key would misread the
         * catalog's calls (and HBase log each one): the next one */
        if (c != NULL && hconn_check_service(c, &err)) {
            return c;
        }
        g_clear_pointer(&c, hconn_free);
        g_string_append_printf(why, "%s%s", why->len > 0 ? "; " : "",
                               err->message);
    }
    g_set_error(error, HCONN_ERROR, HCONN_ERROR_IO, "%s", why->str);
    return NULL;
}

void
catalog_check_orphans(struct tabstate *ts)
{
    g_autoptr(GError) err = NULL;
    struct hconn *c;

    if (ts->cfg->catalog_table == NULL) {
        return;
    }
    c = catalog_connect(ts->cfg, &err);
    if (c == NULL) {
        catalog_scan_failed(ts, err);
        return;
    }
    catalog_orphans_check(c, ts);
    hconn_free(c);
}

/* Whether two configurations keep the same catalog on the same servers
 * (a reload may point the proxy at another cluster). */
static gboolean
catalog_same_hbase(const struct config *a, const struct config *b)
{
    if (g_strcmp0(a->catalog_table, b->catalog_table) != 0 ||
        a->n_servers != b->n_servers ||
        a->n_thrift2_servers != b->n_thrift2_servers) {
        return FALSE;
    }
    for (size_t i = 0; i < a->n_servers + a->n_thrift2_servers; i++) {
        const struct config_addr *x =
            i < a->n_servers ? &a->servers[i]
                             : &a->thrift2_servers[i - a->n_servers];
        const struct config_addr *y =
            i < b->n_servers ? &b->servers[i]
                             : &b->thrift2_servers[i - b->n_servers];

        if (strcmp(x->host, y->host) != 0 || x->port != y->port) {
            return FALSE;
        }
    }
    return TRUE;
}

void
catalog_inherit_orphans(struct tabstate *ts, const struct tabstate *old)
{
    const struct config *cfg = ts->cfg;
    /* g_atomic_pointer_get's, on a const object */
    const struct config_orphans *was = __atomic_load_n(&old->orphans,
                                                       __ATOMIC_SEQ_CST);
    g_autoptr(GPtrArray) pairs = g_ptr_array_new_with_free_func(g_free);
    struct config_orphans *set;

    if (cfg->catalog_table == NULL || !catalog_same_hbase(cfg, old->cfg)) {
        return;
    }
    /* a reload never drops a section (config_reload_check): the orphans
     * are the old ones less those the file has a section for now */
    for (size_t i = 0; was != NULL && i < was->n; i++) {
        if (config_find_table(cfg, was->items[i].name,
                              was->items[i].name_len) == NULL) {
            g_ptr_array_add(pairs, catalog_orphan_pair(was->items[i].name,
                                                       was->items[i].why));
        }
    }
    /* said by the old generation already: not again */
    set = catalog_orphans_pack(pairs);
    if (set != NULL) {
        tabstate_keep(ts, set);
    }
    g_atomic_pointer_set(&ts->orphans, set);
    /* a scan that failed last: this check scans */
    if (__atomic_load_n(&old->scan_failed, __ATOMIC_SEQ_CST) == 0) {
        g_atomic_int_set(&ts->orphans_known, 1);
    }
}

/* What is worth a warning about the tables as HBase holds them (a table
 * that does not exist, buckets sharing a region), to the log, once per
 * check: it changes nothing of what is served. */
static void
catalog_advise(struct hconn *c, struct tabstate *ts)
{
    g_autoptr(GPtrArray) warnings = g_ptr_array_new_with_free_func(g_free);
    g_autoptr(GError) err = NULL;
    gboolean ok = tablecheck_run(c, ts->cfg, ts, warnings, &err);

    for (guint i = 0; i < warnings->len; i++) {
        g_warning("%s", (const char *)g_ptr_array_index(warnings, i));
    }
    if (!ok) {
        g_warning("catalog: the salted tables' existence and regions "
                  "could not be checked: %s",
                  err->message);
    }
}

gboolean
catalog_advice(const struct config *cfg, GPtrArray *warnings, GError **error)
{
    struct hconn *c;
    gboolean ok;

    if (cfg->n_tables == 0) {
        return TRUE;
    }
    c = catalog_connect(cfg, error);
    if (c == NULL) {
        return FALSE;
    }
    ok = tablecheck_run(c, cfg, NULL, warnings, error);
    hconn_free(c);
    return ok;
}

gboolean
catalog_check(struct tabstate *ts, struct catalog_report *report)
{
    const struct config *cfg = ts->cfg;
    g_autoptr(GError) err = NULL;
    struct hconn *c = NULL;
    gboolean created;
    size_t i;

    memset(report, 0, sizeof(*report));
    report->reached = TRUE;
    if (cfg->catalog_table == NULL || cfg->n_tables == 0) {
        for (i = 0; i < cfg->n_tables; i++) {
            catalog_set_refusal(ts, &cfg->tables[i], NULL);
        }
        g_atomic_int_set(&ts->unchecked, 0);
        /* a file with no section may still name a salted table */
        if (!g_atomic_int_get(&ts->orphans_known)) {
            catalog_check_orphans(ts);
        }
        return TRUE;
    }
    c = catalog_connect(cfg, &err);
    if (c != NULL && !hconn_create_table(c, cfg->catalog_table, CATALOG_FAMILY,
                                         &created, &err)) {
        g_clear_pointer(&c, hconn_free);
    } else if (c != NULL && created) {
        g_message("catalog: created the table catalog %s", cfg->catalog_table);
    }
    for (i = 0; c != NULL && i < cfg->n_tables; i++) {
        catalog_verdict_t v;

        if (!catalog_check_table(c, ts, &cfg->tables[i], &v, &err)) {
            g_clear_pointer(&c, hconn_free);
            break;
        }
        report->served += v == CATALOG_SERVED ? 1 : 0;
        report->registered += v == CATALOG_REGISTERED ? 1 : 0;
        report->refused += v == CATALOG_REFUSED ? 1 : 0;
    }
    if (c == NULL) {
        report->reached = FALSE;
        report->served = report->registered = report->refused = 0;
        report->error = g_strdup(err != NULL ? err->message : "?");
        catalog_from_state(ts, report);
        g_atomic_int_set(&ts->unchecked, 1);
        return FALSE;
    }
    if (!g_atomic_int_get(&ts->orphans_known)) {
        catalog_orphans_check(c, ts);
    }
    catalog_advise(c, ts);
    hconn_free(c);
    g_atomic_int_set(&ts->unchecked, 0);
    catalog_state_write(ts);
    g_message("catalog: %zu salted table%s checked against %s: %u served, "
              "%u registered now, %u refused",
              cfg->n_tables, cfg->n_tables == 1 ? "" : "s", cfg->catalog_table,
              report->served, report->registered, report->refused);
    return TRUE;
}

gboolean
catalog_pending(const struct tabstate *ts)
{
    /* g_atomic_int_get's, on a const object */
    return __atomic_load_n(&ts->unchecked, __ATOMIC_SEQ_CST) != 0;
}

unsigned
catalog_describe_refused(const struct tabstate *ts, GString *out)
{
    const struct config *cfg = ts->cfg;
    const struct config_orphans *set = __atomic_load_n(&ts->orphans,
                                                       __ATOMIC_SEQ_CST);
    unsigned n = 0;

    for (size_t i = 0; i < cfg->n_tables; i++) {
        const char *why = tabstate_refusal(ts, &cfg->tables[i]);

        if (why != NULL) {
            g_string_append_printf(out, "%s\n", why);
            n++;
        }
    }
    for (size_t i = 0; set != NULL && i < set->n; i++) {
        g_string_append_printf(out, "%s\n", set->items[i].why);
    }
    return n + (set != NULL ? (unsigned)set->n : 0);
}

gboolean
catalog_compare(const struct config *cfg, GString *out, unsigned *mismatches,
                GError **error)
{
    struct hconn *c;
    gboolean ok = TRUE;

    g_autoptr(GPtrArray) pairs = g_ptr_array_new_with_free_func(g_free);
    gboolean exists = FALSE;

    *mismatches = 0;
    if (cfg->catalog_table == NULL) {
        return TRUE;
    }
    c = catalog_connect(cfg, error);
    /* with no section, what HBase says only adds: silent as before */
    if (c == NULL && cfg->n_tables == 0) {
        g_clear_error(error);
        return TRUE;
    }
    if (c == NULL) {
        return FALSE;
    }
    if (!hconn_table_exists(c, cfg->catalog_table, &exists, error)) {
        hconn_free(c);
        return FALSE;
    }
    for (size_t i = 0; ok && i < cfg->n_tables; i++) {
        const struct config_table *t = &cfg->tables[i];
        g_autofree char *entry = NULL;
        g_autofree char *why = NULL;
        g_autofree char *ours = catalog_mapping_line(&t->salt);
        g_autoptr(GError) err = NULL;
        struct salt_table theirs;

        /* no catalog yet: the first start makes it */
        ok = !exists ||
             catalog_read(c, cfg->catalog_table, t->name, &entry, error);
        if (!ok) {
            break;
        }
        if (entry == NULL) {
            ok = catalog_may_register(c, t, &why, error);
            if (ok && why != NULL) {
                (*mismatches)++;
            }
            if (ok) {
                g_string_append_printf(
                    out, "table %s: not in the catalog %s yet: %s\n", t->name,
                    cfg->catalog_table,
                    why != NULL ? why : "the proxy registers it at start");
            }
        } else if (!config_mapping_parse(t->name, entry, &theirs, &err)) {
            (*mismatches)++;
            g_string_append_printf(out,
                                   "table %s: the catalog's entry is not "
                                   "one this version reads: %s\n",
                                   t->name, err->message);
        } else if (!salt_table_equal(&theirs, &t->salt)) {
            g_autofree char *line = catalog_mapping_line(&theirs);
            g_autofree char *origin = catalog_entry_origin(entry);

            (*mismatches)++;
            g_string_append_printf(out,
                                   "table %s: MISMATCH: the catalog %s holds "
                                   "{%s} (%s), this file says {%s}\n",
                                   t->name, cfg->catalog_table, line, origin,
                                   ours);
        } else {
            g_string_append_printf(out,
                                   "table %s: equal to its entry in the "
                                   "catalog %s\n",
                                   t->name, cfg->catalog_table);
        }
    }
    /* the tables it holds that this file leaves unsalted */
    if (ok && exists) {
        ok = catalog_scan_orphans(c, cfg, pairs, error);
    }
    for (guint i = 0; ok && i < pairs->len; i++) {
        const char *name = g_ptr_array_index(pairs, i);

        (*mismatches)++;
        g_string_append_printf(out, "table %s: NOT SERVED: %s\n", name,
                               name + strlen(name) + 1);
    }
    hconn_free(c);
    return ok;
}

gboolean
catalog_check_copy(struct hconn *c, const struct config *cfg,
                   const char *table, gboolean write, char **refusal,
                   GError **error)
{
    const struct config_table *t = config_find_table(cfg, table,
                                                     strlen(table));
    /* the verdict, as a proxy's would be, for this one check */
    g_autoptr(tabstate_t) ts = tabstate_new(cfg, NULL);
    const char *name = t != NULL ? t->name : table;
    g_autofree char *entry = NULL;
    gboolean exists = FALSE, created = FALSE;
    catalog_verdict_t v;

    *refusal = NULL;
    if (cfg->catalog_table == NULL) {
        return TRUE;
    }
    if (t != NULL && write) {
        /* exactly a proxy's start, for this one table */
        if (!hconn_create_table(c, cfg->catalog_table, CATALOG_FAMILY,
                                &created, error)) {
            return FALSE;
        }
        if (created) {
            g_message("catalog: created the table catalog %s",
                      cfg->catalog_table);
        }
        if (!catalog_check_table(c, ts, t, &v, error)) {
            return FALSE;
        }
        *refusal = g_strdup(tabstate_refusal(ts, t));
        return TRUE;
    }
    /* read only: compared, never registered (as --check-config) */
    if (g_str_has_prefix(name, "default:")) {
        name += strlen("default:");
    }
    if (!hconn_table_exists(c, cfg->catalog_table, &exists, error)) {
        return FALSE;
    }
    if (!exists) {
        return TRUE; /* no catalog yet: nothing registered */
    }
    if (!catalog_read(c, cfg->catalog_table, name, &entry, error)) {
        return FALSE;
    }
    if (entry == NULL) {
        return TRUE;
    }
    if (t != NULL) {
        catalog_judge(ts, t, entry);
        *refusal = g_strdup(tabstate_refusal(ts, t));
    } else {
        *refusal = catalog_unsalted_why(cfg, name, entry, TRUE);
        g_warning("%s", *refusal);
    }
    return TRUE;
}

/* ---- the catalog's thread ----------------------------------------------- */

/* One check asked of the thread. */
struct catalog_job {
    catalog_job_t kind;
    struct tabstate *ts; /* a reference */
    catalog_done_fn done;
    void *arg;
    gboolean ran;     /* set by the thread */
    gboolean reached; /* the same */
};

struct catalog_thread {
    GThread *thread;
    GMutex lock;        /* guards todo, finished and stop */
    GCond wake;         /* todo or stop changed */
    GQueue todo;        /* struct catalog_job *, in the order asked */
    GQueue finished;    /* run, their done not called yet */
    gboolean stop;      /* catalog_thread_free asked */
    unsigned queued[2]; /* per catalog_job_t: asked, done not called yet
                           (the loop's thread only) */
    struct bell bell;   /* rung by the thread: finished grew */
};

static void
catalog_job_run(struct catalog_job *job)
{
    struct catalog_report rep;

    if (job->kind == CATALOG_JOB_RECHECK && !catalog_pending(job->ts)) {
        /* an entry registered since, by another proxy or by
         * hbase-salt-migrate, for a table this file has no section for:
         * one scan of the catalog */
        catalog_check_orphans(job->ts);
        job->reached = TRUE;
    } else {
        job->reached = catalog_check(job->ts, &rep);
        catalog_report_clear(&rep);
        if (job->kind == CATALOG_JOB_RECHECK && job->reached) {
            g_message("catalog: HBase answers again: the salted tables are "
                      "checked");
        }
    }
    job->ran = TRUE;
}

static gpointer
catalog_thread_main(gpointer arg)
{
    struct catalog_thread *ct = arg;

    g_mutex_lock(&ct->lock);
    for (;;) {
        struct catalog_job *job;

        while (!ct->stop && g_queue_is_empty(&ct->todo)) {
            g_cond_wait(&ct->wake, &ct->lock);
        }
        if (ct->stop) {
            break;
        }
        job = g_queue_pop_head(&ct->todo);
        g_mutex_unlock(&ct->lock);
        catalog_job_run(job);
        g_mutex_lock(&ct->lock);
        g_queue_push_tail(&ct->finished, job);
        bell_ring(&ct->bell);
    }
    g_mutex_unlock(&ct->lock);
    return NULL;
}

/* The loop's side of a job: its done, then it goes. */
static void
catalog_job_finish(struct catalog_thread *ct, struct catalog_job *job,
                   gboolean ran)
{
    ct->queued[job->kind]--;
    if (job->done != NULL) {
        job->done(job->arg, ran && job->ran, job->reached);
    }
    tabstate_unref(job->ts);
    g_free(job);
}

static void
catalog_thread_bell_cb(evutil_socket_t fd, short what, void *arg)
{
    struct catalog_thread *ct = arg;
    GQueue done = G_QUEUE_INIT;
    struct catalog_job *job;

    bell_answer(&ct->bell);
    g_mutex_lock(&ct->lock);
    while ((job = g_queue_pop_head(&ct->finished)) != NULL) {
        g_queue_push_tail(&done, job);
    }
    g_mutex_unlock(&ct->lock);
    while ((job = g_queue_pop_head(&done)) != NULL) {
        catalog_job_finish(ct, job, TRUE);
    }
}

struct catalog_thread *
catalog_thread_new(struct event_base *base, GError **error)
{
    struct catalog_thread *ct = g_new0(struct catalog_thread, 1);
    sigset_t all, old;

    g_mutex_init(&ct->lock);
    g_cond_init(&ct->wake);
    g_queue_init(&ct->todo);
    g_queue_init(&ct->finished);
    if (!bell_init(&ct->bell, base, catalog_thread_bell_cb, ct)) {
        g_set_error(error, G_THREAD_ERROR, G_THREAD_ERROR_AGAIN,
                    "catalog: cannot make the thread's doorbell: %s",
                    g_strerror(errno));
        g_mutex_clear(&ct->lock);
        g_cond_clear(&ct->wake);
        g_free(ct);
        return NULL;
    }
    /* threads inherit the mask: signals stay with the main thread */
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &old);
    ct->thread = g_thread_try_new("catalog", catalog_thread_main, ct, error);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (ct->thread == NULL) {
        bell_free(&ct->bell);
        g_mutex_clear(&ct->lock);
        g_cond_clear(&ct->wake);
        g_free(ct);
        return NULL;
    }
    return ct;
}

void
catalog_thread_push(struct catalog_thread *ct, catalog_job_t kind,
                    struct tabstate *ts, catalog_done_fn done, void *arg)
{
    struct catalog_job *job = g_new0(struct catalog_job, 1);

    job->kind = kind;
    job->ts = tabstate_ref(ts);
    job->done = done;
    job->arg = arg;
    ct->queued[kind]++;
    g_mutex_lock(&ct->lock);
    g_queue_push_tail(&ct->todo, job);
    g_cond_signal(&ct->wake);
    g_mutex_unlock(&ct->lock);
}

unsigned
catalog_thread_queued(struct catalog_thread *ct, catalog_job_t kind)
{
    return ct->queued[kind];
}

void
catalog_thread_free(struct catalog_thread *ct)
{
    struct catalog_job *job;

    if (ct == NULL) {
        return;
    }
    g_mutex_lock(&ct->lock);
    ct->stop = TRUE;
    g_cond_signal(&ct->wake);
    g_mutex_unlock(&ct->lock);
    g_thread_join(ct->thread);
    /* stopping: nothing found now is applied */
    while ((job = g_queue_pop_head(&ct->finished)) != NULL) {
        catalog_job_finish(ct, job, FALSE);
    }
    while ((job = g_queue_pop_head(&ct->todo)) != NULL) {
        catalog_job_finish(ct, job, FALSE);
    }
    bell_free(&ct->bell);
    g_mutex_clear(&ct->lock);
    g_cond_clear(&ct->wake);
    g_free(ct);
}
