/* progress.h: what a migration has done so far, shown on stderr: a bar
 * per worker and one overall on a terminal, a plain line per interval
 * otherwise. */
#pragma once

#include <glib.h>
#include <stdint.h>
#include <stdio.h>

#include "unit.h"

/*
 * How far a run is goes by rows, not units: regions differ by orders of
 * magnitude (an empty one is no work at all), so each unit's rows are
 * estimated from a sample of its keys taken before the run (its first
 * PROGRESS_SAMPLE_ROWS keys and its last key, progress_unit_sample), and
 * then, as it runs, from how far through its keys the rows done reach.
 * Where a row lies in a unit is read from its key, in digits whose range
 * each position takes from the sample: a key of decimal digits counts in
 * tens, a binary one in 256ths, so text keys are not taken for a corner
 * of the byte space.
 */
#define PROGRESS_SAMPLE_ROWS 100

struct progress;

/* slots: one per worker; units: how many the run has (some may be set
 * idle), numbered as the caller's list. */
struct progress *progress_new(guint slots, guint units, FILE *out,
                              gboolean tty, double interval_s,
                              const char *verb);
/* Starts the thread that prints every interval. */
void progress_start(struct progress *p);
/* Stops it and prints the final state. */
void progress_stop(struct progress *p);
void progress_free(struct progress *p);

/* Unit i's key range (copied) and the rows done in it before this run;
 * idle: not part of this run.  No line is printed before every unit is
 * set: a resumed run's first line would count none of its earlier rows. */
void progress_unit_set(struct progress *p, guint i, const struct unit *u,
                       gboolean idle, guint64 rows_before);
/*
 * What a sample of unit i's keys says: keys (GBytes, in key order) are
 * its first rows' keys, all of them when whole; last is its last row's
 * key (NULL: not known).
 */
void progress_unit_sample(struct progress *p, guint i, GPtrArray *keys,
                          gboolean whole, GBytes *last);
/* Unit i was done by an earlier run (a checkpoint), rows of it. */
void progress_add_done(struct progress *p, guint i, guint64 rows);

/* A worker takes unit i (label: its key range, short), rows of it done
 * already up to the key after (NULL: none), or leaves it. */
void progress_slot_begin(struct progress *p, guint slot, guint i,
                         const char *label, guint64 rows, GBytes *after);
void progress_slot_end(struct progress *p, guint slot, gboolean unit_done);
/* A worker finished a batch: rows and bytes it moved, and the key of its
 * last row. */
void progress_slot_add(struct progress *p, guint slot, guint64 rows,
                       guint64 bytes, const uint8_t *key, size_t len);

/* The fraction of the run's rows done, 0..1, and the rows it estimates
 * in all (tests, and the lines above). */
double progress_fraction(struct progress *p, double *total_rows);

/* Totals of this run so far. */
void progress_totals(struct progress *p, guint64 *rows, guint64 *bytes,
                     double *seconds);
