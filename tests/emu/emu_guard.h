/* emu_guard.h: per-call region accounting, region serialisation and latency, shared by both Thrift services. */
#pragma once

#include <glib.h>

#include "emu_store.h"

/* Per-call behaviour that models a loaded cluster. */
struct emu_handler_options {
    guint rpc_latency_us;   /* slept in every call */
    gboolean region_serial; /* one call at a time per region */
};

/* The regions one call holds, from emu_guard_enter to emu_guard_leave. */
struct emu_guard {
    const struct emu_handler_options *opts;
    emu_table *table;
    GArray *regions; /* guint, ascending, distinct */
};

/*
 * Counts the call against each region its keys fall in, takes the
 * regions' locks in index order (so two calls cannot deadlock) and sleeps
 * the configured latency.  t NULL or n 0: latency only.
 */
void emu_guard_enter(struct emu_guard *g,
                     const struct emu_handler_options *opts, emu_table *t,
                     const uint8_t *const *keys, const size_t *lens, guint n);
void emu_guard_enter1(struct emu_guard *g,
                      const struct emu_handler_options *opts, emu_table *t,
                      const uint8_t *key, size_t len);
void emu_guard_leave(struct emu_guard *g);
/* A call that touches no region still pays the latency. */
void emu_guard_latency(const struct emu_handler_options *opts);
/* The first region the call holds (its only one for a single-row call). */
struct emu_region *emu_guard_first_region(const struct emu_guard *g);
