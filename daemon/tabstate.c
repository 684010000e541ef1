/* tabstate.c: what the process learns at run time about the tables of one configuration generation. */
#include "tabstate.h"

struct tabstate *
tabstate_new(const struct config *cfg, struct config *owned)
{
    struct tabstate *ts = g_new0(struct tabstate, 1);

    g_assert(owned == NULL || owned == cfg);
    ts->cfg = cfg;
    ts->owned = owned;
    ts->refs = 1;
    /* the salted tables, then [keyviz] unsalted_tables (tabstate_at) */
    ts->tables = g_new0(struct tabstate_table,
                        MAX(cfg->n_tables + cfg->n_keyviz_unsalted, 1));
    g_mutex_init(&ts->lock);
    return ts;
}

struct tabstate *
tabstate_ref(struct tabstate *ts)
{
    g_atomic_int_inc(&ts->refs);
    return ts;
}

void
tabstate_unref(struct tabstate *ts)
{
    if (ts == NULL || !g_atomic_int_dec_and_test(&ts->refs)) {
        return;
    }
    g_clear_pointer(&ts->texts, g_ptr_array_unref);
    g_mutex_clear(&ts->lock);
    g_free(ts->tables);
    config_free(ts->owned);
    g_free(ts);
}

void
tabstate_keep(struct tabstate *ts, gpointer p)
{
    g_mutex_lock(&ts->lock);
    if (ts->texts == NULL) {
        ts->texts = g_ptr_array_new_with_free_func(g_free);
    }
    g_ptr_array_add(ts->texts, p);
    g_mutex_unlock(&ts->lock);
}

const char *
tabstate_orphan_refusal(const struct tabstate *ts, const void *name,
                        size_t len)
{
    const struct config_orphans *set;

    if (ts == NULL) {
        return NULL;
    }
    /* g_atomic_pointer_get's, on a const object */
    set = __atomic_load_n(&ts->orphans, __ATOMIC_SEQ_CST);
    return config_orphans_find(set, name, len);
}
