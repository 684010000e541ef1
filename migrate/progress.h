/* progress.h: what a migration has done so far, shown on stderr: a bar
 * per worker and one overall on a terminal, a plain line per interval
 * otherwise. */
#pragma once

#include <glib.h>
#include <stdio.h>

struct progress;

/* slots: one per worker; units: how many the run has to do. */
struct progress *progress_new(guint slots, guint units, FILE *out,
                              gboolean tty, double interval_s,
                              const char *verb);
/* Starts the thread that prints every interval. */
void progress_start(struct progress *p);
/* Stops it and prints the final state. */
void progress_stop(struct progress *p);
void progress_free(struct progress *p);

/* A worker takes a unit (label: its key range, short) or leaves it. */
void progress_slot_begin(struct progress *p, guint slot, const char *label);
void progress_slot_end(struct progress *p, guint slot, gboolean unit_done);
/* A worker finished a batch: rows and bytes it moved, and where it is in
 * its unit (0..1). */
void progress_slot_add(struct progress *p, guint slot, guint64 rows,
                       guint64 bytes, double fraction);
/* Work done by an earlier run (a checkpoint), counted as done already. */
void progress_add_done(struct progress *p, guint units);

/* Totals so far. */
void progress_totals(struct progress *p, guint64 *rows, guint64 *bytes,
                     double *seconds);
