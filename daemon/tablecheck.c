/* tablecheck.c: what HBase says of each salted table that is worth a warning: a table that does not exist, buckets sharing a region. */
#include "tablecheck.h"

#include <string.h>

#include "splits.h"
#include "tabstate.h"

/*
 * Neither finding stops a table from being served: a table created later
 * is served as configured, and buckets sharing a region are served right,
 * only not spread.  The second one is what salting a table that exists
 * already runs into: its regions cover its old keys, the salts sort
 * before them (a byte salt is 0x00..), and every salted key lands in the
 * table's first region until the table is split at the bucket points,
 * while the per-bucket metrics look perfectly even.
 */

/* Optimal string alignment distance: edits, a swap of two neighbours
 * counting as one ("evnets" is one from "events"). */
static size_t
tablecheck_distance(const char *a, const char *b)
{
    size_t n = strlen(a), m = strlen(b);
    g_autofree size_t *d = g_new(size_t, (n + 1) * (m + 1));

#define D(i, j) d[(i) * (m + 1) + (j)]
    for (size_t i = 0; i <= n; i++) {
        D(i, 0) = i;
    }
    for (size_t j = 0; j <= m; j++) {
        D(0, j) = j;
    }
    for (size_t i = 1; i <= n; i++) {
        for (size_t j = 1; j <= m; j++) {
            size_t v = MIN(D(i - 1, j) + 1, D(i, j - 1) + 1);

            v = MIN(v, D(i - 1, j - 1) + (a[i - 1] != b[j - 1]));
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] &&
                a[i - 2] == b[j - 1]) {
                v = MIN(v, D(i - 2, j - 2) + 1);
            }
            D(i, j) = v;
        }
    }
    return D(n, m);
#undef D
}

/* The existing table whose name is nearest to name, if near enough to be
 * a misspelling of it (a quarter of the name's length, at least one edit:
 * not events for a new events_v2), or NULL; never the proxy's own
 * catalog. */
static const char *
tablecheck_closest(const char *name, const GPtrArray *names,
                   const char *catalog)
{
    size_t best = MAX(strlen(name) / 4, 1) + 1;
    const char *found = NULL;

    for (guint i = 0; i < names->len; i++) {
        const char *other = g_ptr_array_index(names, i);
        size_t d;

        if (g_strcmp0(other, catalog) == 0) {
            continue;
        }
        d = tablecheck_distance(name, other);
        if (d < best) {
            best = d;
            found = other;
        }
    }
    return found;
}

/* The table's regions against its buckets: sets its region_buckets in ts
 * (when given) and, when buckets share a region, appends the warning with
 * the HBase shell commands that split them apart. */
static gboolean
tablecheck_regions(struct hconn *c, const struct config_table *t,
                   struct tabstate *ts, GPtrArray *warnings, GError **error)
{
    g_autoptr(GPtrArray) starts = g_ptr_array_new();
    g_autoptr(GPtrArray) missing =
        g_ptr_array_new_with_free_func((GDestroyNotify)g_bytes_unref);
    GArray *regions = hconn_get_table_regions(c, t->name, error);
    g_autoptr(GBytes) fullest = NULL;
    g_autofree char *where = NULL;
    uint32_t most = 0;
    GString *s;

    if (regions == NULL) {
        return FALSE;
    }
    for (guint i = 0; i < regions->len; i++) {
        g_ptr_array_add(starts,
                        g_array_index(regions, struct hconn_region, i).start);
    }
    /* a table dropped between the two questions has no regions */
    if (regions->len > 0) {
        most = splits_buckets_per_region(&t->salt, starts, &fullest, missing);
    }
    hconn_regions_free(regions);
    if (most > 1 && g_bytes_get_size(fullest) > 0) {
        where = salt_escape(g_bytes_get_data(fullest, NULL),
                            g_bytes_get_size(fullest));
    }
    if (ts != NULL) {
        g_atomic_int_set(&tabstate_at(ts, t)->region_buckets, (gint)most);
    }
    if (most <= 1) {
        return TRUE;
    }
    s = g_string_new(NULL);
    g_string_append_printf(
        s,
        "table %s: %u of its %u salt buckets share one region (the one "
        "starting at %s%s%s), so the rows salted into them all go to one "
        "region server, however even the per-bucket metrics look; split "
        "the table at the bucket points in the HBase shell, then reload the "
        "proxy:",
        t->name, most, t->salt.buckets, where != NULL ? "'" : "",
        where != NULL ? where : "the table's start", where != NULL ? "'" : "");
    for (guint i = 0; i < missing->len; i++) {
        const uint8_t *p = g_bytes_get_data(missing->pdata[i], NULL);

        g_string_append_printf(s, "%s split '%s', ", i > 0 ? ";" : "",
                               t->name);
        splits_shell_string(s, p, g_bytes_get_size(missing->pdata[i]));
    }
    g_string_append_printf(s,
                           " (an empty table can be created again with "
                           "the SPLITS of hbase-salt-proxy --split-keys %s)",
                           t->name);
    g_ptr_array_add(warnings, g_string_free(s, FALSE));
    return TRUE;
}

gboolean
tablecheck_run(struct hconn *c, const struct config *cfg, struct tabstate *ts,
               GPtrArray *warnings, GError **error)
{
    g_autoptr(GPtrArray) names = NULL;

    for (size_t i = 0; i < cfg->n_tables; i++) {
        const struct config_table *t = &cfg->tables[i];
        const char *near;
        gboolean exists;

        if (!hconn_table_exists(c, t->name, &exists, error)) {
            return FALSE;
        }
        if (exists) {
            if (!tablecheck_regions(c, t, ts, warnings, error)) {
                return FALSE;
            }
            continue;
        }
        if (ts != NULL) {
            g_atomic_int_set(&tabstate_at(ts, t)->region_buckets, 0);
        }
        if (names == NULL) {
            names = g_ptr_array_new_with_free_func(g_free);
            if (!hconn_table_names(c, names, error)) {
                return FALSE;
            }
        }
        near = tablecheck_closest(t->name, names, cfg->catalog_table);
        g_ptr_array_add(
            warnings,
            g_strdup_printf("table %s does not exist in HBase%s%s%s (it is "
                            "served as configured once it is created)",
                            t->name, near != NULL ? "; did you mean " : "",
                            near != NULL ? near : "",
                            near != NULL ? "?" : ""));
    }
    return TRUE;
}

unsigned
tablecheck_describe(const struct tabstate *ts, GString *out)
{
    const struct config *cfg = ts->cfg;
    unsigned n = 0;

    for (size_t i = 0; i < cfg->n_tables; i++) {
        const struct config_table *t = &cfg->tables[i];
        gint most = g_atomic_int_get(&tabstate_at(ts, t)->region_buckets);

        if (most > 1) {
            g_string_append_printf(out,
                                   "table %s: %d of its %u salt buckets "
                                   "share one region: split it at the "
                                   "bucket points (the log has the HBase "
                                   "shell commands)\n",
                                   t->name, most, t->salt.buckets);
            n++;
        }
    }
    return n;
}
