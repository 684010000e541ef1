/* lograte.c: a burst of like log lines folded into one line a period. */
#include "lograte.h"

#include <string.h>

/* One kind of event with a period running. */
struct lograte_kind {
    char *head, *tail;
    char *detail;         /* the last counted event's, or NULL */
    const char *noun;     /* what is counted: "connection" */
    GLogLevelFlags level; /* the most severe counted (lower is more) */
    gint64 since;         /* monotonic us: the period's start */
    guint64 count;        /* events counted (not logged) */
    guint64 requests;     /* requests they failed */
};

static GMutex lograte_lock;
static GHashTable *lograte_kinds; /* "head\ntail" -> struct lograte_kind */

static void
lograte_kind_free(gpointer data)
{
    struct lograte_kind *k = data;

    g_free(k->head);
    g_free(k->tail);
    g_free(k->detail);
    g_free(k);
}

/* The kind's line for its period; called under the lock. */
static void
lograte_say(const struct lograte_kind *k)
{
    g_autofree char *last = NULL;
    g_autofree char *failed = NULL;

    if (k->detail != NULL) {
        last = g_strdup_printf(" (last %s)", k->detail);
    }
    if (k->requests > 0) {
        failed = g_strdup_printf(" (%" G_GUINT64_FORMAT " request%s failed)",
                                 k->requests, k->requests == 1 ? "" : "s");
    }
    g_log(G_LOG_DOMAIN, k->level,
          "%s: %" G_GUINT64_FORMAT " more %s%s in the last %d s%s%s%s",
          k->head, k->count, k->noun, k->count == 1 ? "" : "s",
          LOGRATE_PERIOD_S, last != NULL ? last : "", k->tail,
          failed != NULL ? failed : "");
}

/* Ends k's period: its line when it counted events, and a new period
 * (TRUE); a quiet kind is done (FALSE): its next event is logged in
 * full.  Under the lock. */
static gboolean
lograte_roll(struct lograte_kind *k, gint64 now)
{
    if (k->count == 0) {
        return FALSE;
    }
    lograte_say(k);
    k->since = now;
    k->count = 0;
    k->requests = 0;
    k->level = G_LOG_LEVEL_DEBUG;
    g_clear_pointer(&k->detail, g_free);
    return TRUE;
}

static gboolean
lograte_over(const struct lograte_kind *k, gint64 now)
{
    return now - k->since >= (gint64)LOGRATE_PERIOD_S * G_USEC_PER_SEC;
}

gboolean
lograte_note(GLogLevelFlags level, const char *head, const char *tail,
             const char *detail, guint64 requests)
{
    return lograte_note_of(level, "connection", head, tail, detail, requests);
}

gboolean
lograte_note_of(GLogLevelFlags level, const char *noun, const char *head,
                const char *tail, const char *detail, guint64 requests)
{
    g_autofree char *key = g_strconcat(head, "\n", tail, NULL);
    struct lograte_kind *k;
    gint64 now = g_get_monotonic_time();

    /* g_log under the lock is safe: the log writer never comes here */
    g_mutex_lock(&lograte_lock);
    if (lograte_kinds == NULL) {
        lograte_kinds = g_hash_table_new_full(g_str_hash, g_str_equal, g_free,
                                              lograte_kind_free);
    }
    k = g_hash_table_lookup(lograte_kinds, key);
    /* the flush has not run yet: end the period here */
    if (k != NULL && lograte_over(k, now) && !lograte_roll(k, now)) {
        g_hash_table_remove(lograte_kinds, key);
        k = NULL;
    }
    if (k == NULL) {
        k = g_new0(struct lograte_kind, 1);
        k->head = g_strdup(head);
        k->tail = g_strdup(tail);
        k->noun = noun;
        k->since = now;
        k->level = G_LOG_LEVEL_DEBUG;
        g_hash_table_insert(lograte_kinds, g_steal_pointer(&key), k);
        g_mutex_unlock(&lograte_lock);
        return TRUE;
    }
    k->count++;
    k->requests += requests;
    /* lower is more severe */
    k->level = MIN(k->level, level & G_LOG_LEVEL_MASK);
    if (detail != NULL) {
        g_free(k->detail);
        k->detail = g_strdup(detail);
    }
    g_mutex_unlock(&lograte_lock);
    return FALSE;
}

void
lograte_flush(gboolean all)
{
    GHashTableIter it;
    gpointer v;
    gint64 now = g_get_monotonic_time();

    g_mutex_lock(&lograte_lock);
    if (lograte_kinds != NULL) {
        g_hash_table_iter_init(&it, lograte_kinds);
        while (g_hash_table_iter_next(&it, NULL, &v)) {
            struct lograte_kind *k = v;

            if ((all || lograte_over(k, now)) && !lograte_roll(k, now)) {
                g_hash_table_iter_remove(&it);
            }
        }
    }
    g_mutex_unlock(&lograte_lock);
}
