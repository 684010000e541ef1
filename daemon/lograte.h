/* lograte.h: a burst of like log lines folded into one line a period. */
#pragma once

#include <glib.h>

/*
 * A frozen server fails every connection to it at once: sixteen
 * connections, sixteen near-identical lines, per worker.  A kind of
 * event (its head and tail, the variable part left out) is logged in
 * full the first time; the ones after it are counted, and each period of
 * LOGRATE_PERIOD_S that counted some ends with one line:
 *
 *   HEAD: N connections in the last 10 s[ (last DETAIL)]TAIL[ (M requests
 *   failed)]
 *
 * A period that counted none ends the burst: the next event is logged
 * in full again.  Process-wide (every worker's events of a kind fold
 * together), behind one lock: only failures come here, never the
 * request path.
 */
#define LOGRATE_PERIOD_S 10

/*
 * One event of the kind (head, tail) at level.  TRUE: log it in full now
 * (the first of its kind in a period).  FALSE: it is counted, with
 * requests (failed requests it took along, 0 for none) and detail (what
 * varies between events, e.g. the peer; may be NULL), for the period's
 * line.
 */
gboolean lograte_note(GLogLevelFlags level, const char *head, const char *tail,
                      const char *detail, guint64 requests);

/* lograte_note for events that are not connections: the period's line
 * counts nouns ("N more calls"; noun is a static string, made plural
 * with an s). */
gboolean lograte_note_of(GLogLevelFlags level, const char *noun,
                         const char *head, const char *tail,
                         const char *detail, guint64 requests);

/* Writes the line of every kind whose period has ended; main thread,
 * about every second.  all: every kind, period over or not (at exit). */
void lograte_flush(gboolean all);
