/* invariant.h: what an engine relies on, checked where it relies on it. */
#pragma once

#include <glib.h>

/*
 * HSP_CHECK(cond): a condition the code relies on: a state change along
 * an arrow its engine allows, a request belonging to the connection it
 * is handed to, a buffer that is there.  TRUE when it holds.  When it
 * does not: a checked build (debug, debugoptimized: what the tests run)
 * stops right there with the condition and the place, as g_assert does;
 * a release build logs it (folded, lograte.h), counts it in
 * hsp_invariant_errors_total and evaluates to FALSE, for the caller to
 * refuse the step where going on would do harm.  Either way it is a
 * defect of the proxy, never of its input: nothing a client or a
 * backend sends may break one.  (Not G_LIKELY: its block would shadow
 * itself inside g_assert_true(HSP_CHECK(...)).)
 */
#define HSP_CHECK(cond)                                                       \
    (__builtin_expect(!!(cond), 1) ? TRUE                                     \
                                   : invariant_broken(G_STRLOC, "%s", #cond))

/*
 * An invariant does not hold at where (G_STRLOC): as HSP_CHECK says,
 * with the words of fmt.  Returns FALSE (release builds).
 */
gboolean invariant_broken(const char *where, const char *fmt, ...)
    G_GNUC_PRINTF(2, 3);

/*
 * A state change along none of its engine's arrows: invariant_broken
 * with "WHO: no way from A to B", where WHO is fmt's text and the states
 * are named by names[0..n).  Callers check the arrow first, so that
 * nothing is formatted while all is well.
 */
void invariant_no_arrow(const char *where, const char *const *names,
                        unsigned n, unsigned from, unsigned to,
                        const char *fmt, ...) G_GNUC_PRINTF(6, 7);

/* Broken invariants met since start, over all threads. */
guint64 invariant_errors(void);

/* Whether a broken invariant stops the process: TRUE in checked builds.
 * Tests set FALSE to see what a release build does. */
void invariant_set_fatal(gboolean fatal);
