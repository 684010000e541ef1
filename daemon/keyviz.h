/* keyviz.h: the key visualizer: where the load lands in each salted
 * table's logical key space, per interval; hot keys; counted per worker. */
#pragma once

#include <glib.h>
#include <stdint.h>

#include "codec.h"
#include "config.h"

/*
 * WHAT IS COUNTED.  Every logical key the codec notes (codec_key_note:
 * a row key read or written, a row handed back) and every row a merged
 * scan hands back is counted, for its table and the current interval
 * (interval_s long, numbered from the Unix epoch).  The tables: every
 * salted one (but those with keyviz = false), and the unsalted ones
 * [keyviz] unsalted_tables names, as one bucket (their calls' keys and
 * reply rows; a scanner's rows are not walked for them).  Against:
 *
 *   - the key range it falls in: up to `ranges` ranges per table whose
 *     boundaries are quantiles of the keys the previous intervals met
 *     (a sample of them), so a table whose traffic sits in a corner of
 *     its key space gets its resolution there.  Until a sample exists the
 *     ranges split the space by the key's first byte; an interval that
 *     drew no key, or too few to place half as many boundaries, keeps
 *     those of the newest sample (for up to 10 intervals, in the latter
 *     case);
 *   - the physical side: the proxy's own per-bucket counters (reads,
 *     writes, rows: metrics.h's per-table blocks, the hsp_bucket_*
 *     series), their running totals taken as each interval begins and
 *     subtracted at its harvest, so the hot path counts nothing twice; an
 *     unsalted table has none, and its one bucket counts what its ranges
 *     do;
 *   - two space-saving sketches of KEYVIZ_SKETCH_FACTOR * hot_keys
 *     counters each, over the reads and writes a draw takes (one in
 *     hot_key_sampling, at random; the ranges and the bucket side count
 *     every one): one of whole keys, one of hash_part values (the prefix
 *     that chooses the bucket; the same as the keys for hash_part =
 *     whole); each behind a filter of four cells per counter, where a
 *     key not held waits until its cell reaches the smallest counter.
 *     The key sample is of the same draw.
 *
 * ERROR BOUND of a hot key's count.  A space-saving sketch of m counters
 * fed N operations overestimates a key's count by at most N / m and
 * never underestimates it; the filter keeps both (keyviz.c says why) and
 * in practice overestimates far less, as keys met rarely stay in cells
 * instead of passing counters round.  The sketches of the workers are
 * merged by summing, a key a worker's full sketch does not hold
 * counting that sketch's smallest counter: the merged count is still no
 * lower than the key's drawn operations and at most sum(N_w / m) = N / m
 * higher.  A reported count scales each worker's back by its operations
 * over those it drew (about s = hot_key_sampling; the ratio, not s, so
 * that a draw taking more than one in s, the same in every run as the
 * seeds are fixed, does not put every count over), "error" likewise:
 * count - error <= the scaled drawn operations <= count, and error <=
 * ops / m.  The draw adds a spread: a key of c operations, a share p of
 * them, is drawn about a binomial of c trials at 1 / s times, and scaled
 * by the ratio its count has a standard deviation of about
 * sqrt((s - 1) x c x (1 - p)), reported as "sd" (computed from the
 * count); s = 1 draws everything (exact within the bound, sd 0).
 *
 * CONCURRENCY.  Each worker counts into its own memory: four slots per
 * table, by interval number modulo 4, no lock and no atomic read-modify-
 * write.  A worker entering a new interval clears the slot of the
 * interval four before, long harvested.  The main thread (keyviz_tick,
 * once a second) reads the slots of an interval one second after it
 * ended, when no worker writes them any more, merges them into the
 * table's history and publishes the range boundaries of the next
 * interval not begun.
 *
 * MEMORY, per table, independent of how many distinct keys it sees:
 *   workers x 4 slots x (ranges x 6 counters of 8 bytes, 2 sketches x
 *   m x ~136 bytes with their filters, KEYVIZ_SAMPLE x ~90 bytes)
 * + 4 x (buckets + 1) x 3 x 8 bytes of bucket totals
 * + retain_s / interval_s intervals x (ranges x (6 x 8 + 57) bytes
 *   + (buckets + 1) x 3 x 8 + 2 x hot_keys x ~80 bytes)
 * keyviz_memory_bound says it for one table; keyviz_memory counts it.
 */

#define KEYVIZ_SKETCH_FACTOR 8 /* sketch counters per hot key shown */
#define KEYVIZ_SAMPLE 512      /* keys sampled per worker and interval */
#define KEYVIZ_MAX_TABLES 4096 /* as METRICS_MAX_TABLES */
#define KEYVIZ_NCAND 5         /* bucket counts advice compares */

/* What a range counts. */
enum keyviz_metric {
    KEYVIZ_READS = 0, /* row keys read */
    KEYVIZ_WRITES,    /* row keys of mutations */
    KEYVIZ_ROWS,      /* rows handed back (gets and scans) */
    KEYVIZ_BYTES_IN,  /* request bytes, shared among the call's keys */
    KEYVIZ_BYTES_OUT, /* reply bytes, shared among the reply's rows */
    KEYVIZ_ERRORS,    /* calls answered with an exception, by their first
                         key */
    KEYVIZ_METRICS
};

/* The per-bucket counters: reads, writes, rows. */
#define KEYVIZ_BUCKET_KINDS 3

/* "reads", "writes", "rows", "bytes_in", "bytes_out", "errors". */
const char *keyviz_metric_name(unsigned metric);
/* The metric of a name, or -1. */
int keyviz_metric_parse(const char *name);

/* The bucket counts advice compares with the table's own. */
extern const uint32_t keyviz_candidates[KEYVIZ_NCAND];

struct keyviz;
struct keyviz_worker;

/* Counters sized by set (the startup config's [keyviz]) for nworkers
 * workers.  Main thread. */
struct keyviz *keyviz_new(const struct config_keyviz *set, unsigned nworkers);
void keyviz_free(struct keyviz *kv);
struct keyviz_worker *keyviz_worker(struct keyviz *kv, unsigned id);

/* The proxy's running totals of table id's per-bucket counters, summed
 * over the workers, into out: out[b * KEYVIZ_BUCKET_KINDS + k] for bucket
 * b (0..buckets, the last the legacy range) and k reads, writes, rows.
 * FALSE: the table has none (counted by the key visualizer alone).
 * Called on the main thread. */
typedef gboolean (*keyviz_bucket_totals_fn)(void *ctx, unsigned id,
                                            uint32_t buckets, guint64 *out);

/* Where the physical side's counts come from (metrics_new sets it);
 * without it a salted table's buckets read 0. */
void keyviz_set_bucket_totals(struct keyviz *kv, keyviz_bucket_totals_fn fn,
                              void *ctx);

/* Whether anything is counted: enabled and ticking (keyviz_tick ran). */
gboolean keyviz_active(const struct keyviz *kv);

/* Gives table (stats_id id, >= 1) its counters, once: before any config
 * naming it reaches a worker.  Main thread. */
void keyviz_add_table(struct keyviz *kv, unsigned id, const char *name,
                      const struct salt_table *salt);

/* Counts one noted key (hot path, the worker's thread). */
void keyviz_note(struct keyviz_worker *w, const struct codec_key_note *n);
/* Counts count noted keys: a batch's, the table's slot found once. */
void keyviz_notes(struct keyviz_worker *w, const struct codec_key_note *n,
                  uint32_t count);

/* A call whose first noted key was key failed (its reply is an
 * exception): counted against that key's range (worker's thread). */
void keyviz_error(struct keyviz_worker *w,
                  const struct codec_key_note_ref *key);

/* Harvests what ended; now_us is wall-clock time.  Main thread, about
 * once a second (the admin endpoint arms the timer). */
void keyviz_tick(struct keyviz *kv, gint64 now_us);

/* Bytes the key visualizer holds now, and at most for one table of that
 * many buckets. */
size_t keyviz_memory(const struct keyviz *kv);
size_t keyviz_memory_bound(const struct keyviz *kv, uint32_t buckets);

/* The tables counted, as a JSON array of names, into out. */
void keyviz_tables_json(const struct keyviz *kv, GString *out);

/*
 * /keyviz.json: table's intervals since since_s (Unix seconds; 0: all),
 * each its ranges' metric, plus the newest interval's hot keys, buckets
 * and advice; keys shown as keys says.  FALSE (out says why) for a table
 * not counted.
 */
gboolean keyviz_json(const struct keyviz *kv, const struct config *cfg,
                     const char *table, unsigned metric, gint64 since_s,
                     GString *out);

/* /hotkeys.json: the hot keys, hash_part values, buckets and advice of
 * the interval holding at_s (0: the newest). */
gboolean keyviz_hotkeys_json(const struct keyviz *kv, const struct config *cfg,
                             const char *table, gint64 at_s, GString *out);
