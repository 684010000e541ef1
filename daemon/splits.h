/* splits.h: the region split points of a salted table, pure. */
#pragma once

#include <glib.h>
#include <stdint.h>

#include "salt.h"

/* At most this many regions are asked of one createTable. */
#define SPLITS_MAX_REGIONS 65536u

/*
 * The split points (physical row keys, sorted, no duplicates) of a salted
 * table of `regions` regions: one region per bucket at least, so every
 * bucket's rows start on a region of their own (the bucket's salt, the
 * separator left out: no salt is a prefix of another, so a salt less the
 * separator still sorts after every key of the salt below it; salts are
 * sorted, as bigtable-sample's and hbasewd's do not sort like their
 * buckets); when more regions
 * than buckets are asked, each bucket is cut evenly over the byte space of
 * the logical key's first bytes (as HBase's UniformSplit does), the first
 * regions % buckets buckets taking one region more, so the table has
 * exactly max(regions, buckets) regions.  Appends GBytes to out (which
 * should free them with g_bytes_unref).
 */
void splits_compute(const struct salt_table *t, uint32_t regions,
                    GPtrArray *out);

/* Appends bytes as an HBase shell (JRuby) double-quoted string: \xNN for
 * every byte but letters and digits, so no '"', '\\' or "#{" can change
 * its meaning. */
void splits_shell_string(GString *out, const uint8_t *p, size_t n);

/* Appends the points (GBytes) separated by ", ", each as quote writes
 * it: splits_shell_string for the shell, escape_append for the logs. */
void splits_join(GString *out, const GPtrArray *points,
                 void (*quote)(GString *out, const uint8_t *p, size_t n));

/*
 * How a table's existing regions hold its buckets, given every region's
 * start key (GBytes, any order; the table's first region starts at the
 * empty key): the most buckets whose keys one region holds, with the
 * start of that region in *fullest (the first if several; g_bytes_unref).
 * Appends to missing (GBytes, freed by its owner) the split points of
 * splits_compute(t, t->buckets) that no region starts at: the HBase
 * shell `split`s that give every bucket regions of its own.  Buckets
 * sharing a region share its one region server, whatever the
 * per-bucket counts say.
 */
uint32_t splits_buckets_per_region(const struct salt_table *t,
                                   const GPtrArray *starts, GBytes **fullest,
                                   GPtrArray *missing);
