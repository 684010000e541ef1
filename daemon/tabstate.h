/* tabstate.h: what the process learns at run time about the tables of one configuration generation: catalog verdicts, metrics slots, regions. */
#pragma once

#include <glib.h>

#include "config.h"

/*
 * A loaded config (config.h) never changes: workers read it without a
 * lock.  What the process finds out about its tables while it runs lives
 * here instead, one tabstate per generation (worker_gen.ts), its tables
 * indexed as the config's (tables[i] is cfg->tables[i]'s).
 *
 * Who writes what, who reads it:
 *  - stats_id: the main thread (metrics_add_state), once, before the
 *    generation is posted to the workers (the post orders the stores);
 *    read by the workers' counters and the admin loop's renderers.
 *  - refusal, refusal_retry, orphans, unchecked, scan_failed: the
 *    catalog (catalog.c), at start on the main thread and afterwards on
 *    the catalog thread only (catalog_runner); read by the workers'
 *    codec and by the admin loop (/healthz), hence the atomics.
 *  - region_buckets: tablecheck.c, on the same threads as the catalog;
 *    read by the admin loop (/metrics, /healthz).
 *  - texts: every refusal text and orphan set ever published, kept until
 *    the tabstate goes, as a request may still point at one; under lock.
 *
 * Reference counted: the generation holds one, the catalog thread one
 * while it works on it, so a reload retiring the generation under a check
 * frees nothing the check writes to.
 */

/* One configured table's, as cfg->tables[i]. */
struct tabstate_table {
    unsigned stats_id;   /* metrics' counter slot + 1; 0 = none */
    gpointer refusal;    /* const char *: why calls on it are refused (the
                            table catalog disagrees, or could not be
                            asked), NULL: served.  g_atomic_pointer; the
                            text lives in texts */
    gint refusal_retry;  /* the refusal clears by itself (the catalog
                            could not be asked yet): IOError canRetry.
                            g_atomic_int */
    gint region_buckets; /* the most of its buckets one of its regions
                            held at the last check (tablecheck.c), 0: not
                            known.  g_atomic_int */
};

struct tabstate {
    const struct config *cfg;      /* the generation's, never changed */
    struct config *owned;          /* cfg when the tabstate frees it (a
                                      reload's), else NULL (main's) */
    gint refs;                     /* g_atomic_int */
    struct tabstate_table *tables; /* cfg->n_tables, cfg's order */
    GMutex lock;                   /* guards texts */
    GPtrArray *texts;              /* see above (g_free) */
    gpointer orphans;              /* const struct config_orphans *, NULL:
                                      none known.  g_atomic_pointer; the
                                      sets live in texts */
    gint unchecked;                /* tables served or refused without
                                      HBase's word yet.  g_atomic_int */
    gint scan_failed;              /* the last catalog scan failed (said
                                      once).  g_atomic_int */
    gint orphans_known;            /* orphans carried over from the
                                      generation before: a reload scans no
                                      sooner than recheck_ms.  g_atomic_int */
};

/* The state of cfg's tables, none known yet; owned: freed with it (then
 * cfg == owned). */
struct tabstate *tabstate_new(const struct config *cfg, struct config *owned);
struct tabstate *tabstate_ref(struct tabstate *ts);
void tabstate_unref(struct tabstate *ts);

/* Keeps p (g_free) as long as ts: what a request may still read. */
void tabstate_keep(struct tabstate *ts, gpointer p);

/* t's entry: t is one of ts->cfg's tables, or of its [keyviz]
 * unsalted_tables (their entries follow the salted tables'; only
 * stats_id is used there). */
static inline struct tabstate_table *
tabstate_at(const struct tabstate *ts, const struct config_table *t)
{
    const struct config *cfg = ts->cfg;

    if (t >= cfg->tables && t < cfg->tables + cfg->n_tables) {
        return &ts->tables[t - cfg->tables];
    }
    g_assert(t >= cfg->keyviz_unsalted &&
             t < cfg->keyviz_unsalted + cfg->n_keyviz_unsalted);
    return &ts->tables[cfg->n_tables + (size_t)(t - cfg->keyviz_unsalted)];
}

/* Why calls on t are refused (tabstate_table.refusal), or NULL; ts NULL
 * (tests, fuzzing, tools): nothing is. */
static inline const char *
tabstate_refusal(const struct tabstate *ts, const struct config_table *t)
{
    /* the pointer changes under readers; what it points to does not */
    return ts != NULL ? (const char *)
                            g_atomic_pointer_get(&tabstate_at(ts, t)->refusal)
                      : NULL;
}

/* Whether a client may retry a call tabstate_refusal refused: TRUE while
 * the catalog could not be asked (it clears once HBase answers), FALSE
 * for a mapping that disagrees (only an operator clears it).  Two words,
 * not one: a call racing the catalog's change of a table's verdict may
 * get the hint of the other verdict, once. */
static inline gboolean
tabstate_refusal_retry(const struct tabstate *ts, const struct config_table *t)
{
    return ts != NULL &&
           g_atomic_int_get(&tabstate_at(ts, t)->refusal_retry) != 0;
}

/* t's metrics slot + 1, 0: none (ts NULL included). */
static inline unsigned
tabstate_stats_id(const struct tabstate *ts, const struct config_table *t)
{
    return ts != NULL ? tabstate_at(ts, t)->stats_id : 0;
}

/* Why calls naming a table the file has no section for are refused (the
 * table catalog holds it as salted: config_orphan), or NULL.  name as
 * config_find_table takes it.  One atomic load while none is known. */
const char *tabstate_orphan_refusal(const struct tabstate *ts,
                                    const void *name, size_t len);

/* For g_autoptr(tabstate_t) ts = NULL; */
typedef struct tabstate tabstate_t;
G_DEFINE_AUTOPTR_CLEANUP_FUNC(tabstate_t, tabstate_unref)
