/* analyze.h: hbase-salt-migrate --analyze: what salt ranges would make
 * of a table's keys, from a sample of them. */
#pragma once

#include <glib.h>
#include <stdint.h>

#include "config.h"

/* Bucket counts compared. */
#define ANALYZE_NCAND 5
extern const uint32_t analyze_candidates[ANALYZE_NCAND];

/* A uniform sample of the logical keys read (reservoir sampling). */
struct analyze_sample {
    GPtrArray *keys; /* GBytes, at most cap */
    guint cap;
    guint64 seen;     /* keys read */
    guint64 unsalted; /* of a salted table: keys with no valid salt, left
                          out */
    guint regions, regions_done;
    gboolean complete; /* every region read to its end */
    double seconds;
    GRand *rand;
};

void analyze_sample_init(struct analyze_sample *s, guint cap);
void analyze_sample_clear(struct analyze_sample *s);

/* One logical key read. */
void analyze_sample_add(struct analyze_sample *s, const uint8_t *key,
                        size_t len);

/*
 * The report: for each hash_part choice (whole, the table's own, and
 * delimiter:SEP:1 for each separator most keys hold) and bucket count,
 * the share of the sampled rows in the fullest bucket, the largest
 * groups (rows sharing a hash_part value, which share a bucket), and a
 * proposed [table:T] section.  ct: the table's section, or NULL.  JSON
 * when json.
 */
char *analyze_report(const char *table, const struct config_table *ct,
                     const struct analyze_sample *s, gboolean json);
