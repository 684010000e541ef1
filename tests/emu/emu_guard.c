/* emu_guard.c: per-call region accounting, region serialisation and latency, shared by both Thrift services. */
#include "emu_guard.h"

static gint emu_guard_uint_cmp(gconstpointer a, gconstpointer b)
{
    guint x = *(const guint *)a, y = *(const guint *)b;

    return x < y ? -1 : x > y ? 1 : 0;
}

void emu_guard_enter(struct emu_guard *g,
                     const struct emu_handler_options *opts, emu_table *t,
                     const uint8_t *const *keys, const size_t *lens, guint n)
{
    guint out = 0;

    g->opts = opts;
    g->table = t;
    g->regions = g_array_new(FALSE, FALSE, sizeof(guint));
    for (guint i = 0; t != NULL && i < n; i++) {
        guint r = emu_table_region_of(t, keys[i], lens[i]);

        g_array_append_val(g->regions, r);
    }
    g_array_sort(g->regions, emu_guard_uint_cmp);
    for (guint i = 0; i < g->regions->len; i++) {
        guint r = g_array_index(g->regions, guint, i);

        if (out > 0 && g_array_index(g->regions, guint, out - 1) == r) {
            continue;
        }
        g_array_index(g->regions, guint, out++) = r;
    }
    g_array_set_size(g->regions, out);
    for (guint i = 0; i < g->regions->len; i++) {
        struct emu_region *reg = emu_table_region(
            t, g_array_index(g->regions, guint, i));

        __atomic_fetch_add(&reg->requests, 1, __ATOMIC_RELAXED);
        if (opts->region_serial) {
            g_mutex_lock(&reg->serial);
        }
    }
    emu_guard_latency(opts);
}

void emu_guard_enter1(struct emu_guard *g,
                      const struct emu_handler_options *opts, emu_table *t,
                      const uint8_t *key, size_t len)
{
    emu_guard_enter(g, opts, t, &key, &len, t != NULL ? 1 : 0);
}

void emu_guard_leave(struct emu_guard *g)
{
    if (g->opts->region_serial) {
        for (guint i = g->regions->len; i > 0; i--) {
            struct emu_region *reg = emu_table_region(
                g->table, g_array_index(g->regions, guint, i - 1));

            g_mutex_unlock(&reg->serial);
        }
    }
    g_array_unref(g->regions);
}

void emu_guard_latency(const struct emu_handler_options *opts)
{
    if (opts->rpc_latency_us > 0) {
        g_usleep(opts->rpc_latency_us);
    }
}

struct emu_region *emu_guard_first_region(const struct emu_guard *g)
{
    return emu_table_region(g->table, g_array_index(g->regions, guint, 0));
}
