/* health.h: whether each backend server takes requests, and the thread
 * that probes them. */
#pragma once

#include <glib.h>

#include "metrics.h"
#include "worker.h"

#define HEALTH_ERROR health_error_quark()
GQuark health_error_quark(void);

typedef enum {
    HEALTH_ERROR_LIBEVENT, /* libevent refused to set something up */
} health_error_t;

/* Whether a server takes requests (health_shared.state). */
enum health_state {
    HEALTH_UP = 0, /* it gets requests */
    HEALTH_DOWN,   /* it gets none until a probe gets a reply */
};

struct health_table;
struct sasl_creds;

/*
 * What one server's health shares with the workers' pools (backend.c):
 * every worker's backend_server of that name points at the same one.
 * The rest of a server's health (its address, the probe in flight) is
 * the probe thread's alone, in health.c.  An entry lives until the
 * process exits, so a pointer to it never dangles.
 *
 * Hand-over, field by field:
 *  - name: written once when the entry is made (under the table's
 *    lock, before health_lookup returns it); read-only after, by anyone.
 *  - state (enum health_state), failures, last_fail, probe_now: atomics,
 *    no lock.  UP -> DOWN: any worker (health_failed: a CAS on last_fail
 *    debounces a burst, failures counts, a CAS on state makes one thread
 *    the one that says so) or the probe thread (health_failed after a
 *    failed probe; a probe that finds the other service).  DOWN -> UP:
 *    the probe thread only (a probe got a reply).  failures: +1 by
 *    health_failed, 0 by health_ok (workers, on any reply) and by a good
 *    probe.  probe_now: set by whoever marks a server DOWN (then rings
 *    the probe thread's bell), taken by the probe thread.  Workers read
 *    state before each request (health_is_up), so a DOWN seen late
 *    costs at most a request that fails like the ones that made it DOWN.
 *  - why, down_at, sasl_logged: under lock.  why: written by every
 *    failure (workers, probe thread), read by workers for the IOError of
 *    a request no server takes.  down_at: written with the UP -> DOWN
 *    CAS, read by the probe thread for the "up again after" message.
 *    sasl_logged: the workers' SASL failure last logged (written and
 *    read by workers only, under lock since they are several).
 *  - retired_*: the counters of freed pools; written by the worker that
 *    frees a retired pool (backend_pool_fold) and read by the scrape
 *    (health_foreach), both under the proxy's pools_lock.
 */
struct health_shared {
    char name[128];           /* "host:port" */
    gint state;               /* enum health_state (atomic) */
    gint failures;            /* consecutive, debounced (atomic) */
    gint64 last_fail;         /* monotonic us of the last counted (atomic) */
    gint probe_now;           /* just went DOWN: probe at once (atomic) */
    gint64 probe_failed_at;   /* monotonic us the last failed probe
                                 started; G_MAXINT64 while it speaks
                                 another protocol or service (atomic) */
    GMutex lock;              /* guards why, down_at, sasl_logged (and
                                 the probe thread's misplaced) */
    char why[384];            /* the last failure */
    gint64 down_at;           /* monotonic us it went DOWN */
    char sasl_logged[384];    /* the SASL failure last logged, "" if
                                 none since the last success */
    guint64 retired_requests; /* counters of freed pools (under the
                                 proxy's pools_lock) */
    guint64 retired_failures;
    guint64 retired_errors[METRICS_ERR_KINDS];
    guint64 retired_connect_failures;
};

/* Whether the server takes requests: not DOWN.  Any thread. */
static inline gboolean
health_is_up(struct health_shared *h)
{
    return g_atomic_int_get(&h->state) == HEALTH_UP;
}

/*
 * Whether the server is DOWN and a probe that started after since
 * failed: known to be down after then, so a read that came at since
 * waits for no later probe.  Also when its probes found another
 * protocol or service: they are slowed down then, and an edit of a
 * config must come first.  Any thread.
 */
static inline gboolean
health_down_since(struct health_shared *h, gint64 since)
{
    return !health_is_up(h) &&
           __atomic_load_n(&h->probe_failed_at, __ATOMIC_RELAXED) > since;
}

/* A reply came: the server answers.  Any thread. */
static inline void
health_ok(struct health_shared *h)
{
    /* read first: the hot path writes nothing while all is well */
    if (g_atomic_int_get(&h->failures) != 0) {
        g_atomic_int_set(&h->failures, 0);
    }
}

/* A failure of the server (any thread); why is static-free text with no
 * request data in it.  Enough of them in a row mark it DOWN. */
void health_failed(struct health_shared *h, const char *why);

/* The entry of name, made if new (any thread). */
struct health_shared *health_lookup(struct health_table *t, const char *name);

/* The process's SASL credentials, NULL without SASL.  Renewed by the
 * probe thread; sasl_creds is thread-safe. */
struct sasl_creds *health_sasl_creds(const struct health_table *t);

/*
 * Health of every backend server, process-wide and keyed by name, so
 * that a reload keeps what is known.  A server is UP or DOWN; the
 * workers count its failures and mark it DOWN, a thread of its own
 * probes it (getTableNames) and marks it UP again.  See health.c.
 */
struct health_table *health_new(const struct worker_settings *startup);
/* The servers of set are the current ones (probed every few seconds,
 * shown on /metrics and /healthz).  Main thread, before any pool of set
 * is made. */
void health_use(struct health_table *t, const struct worker_settings *set);
/* Starts and stops the probe thread. */
gboolean health_start(struct health_table *t, GError **error)
    G_GNUC_WARN_UNUSED_RESULT;
void health_stop(struct health_table *t);
void health_free(struct health_table *t);

/* What health_foreach tells of one current server. */
struct health_info {
    const char *name;               /* "host:port" */
    gboolean up;                    /* takes requests */
    gboolean probed;                /* a probe has finished */
    guint64 probe_connect_failures; /* probes whose connect failed */
    guint64 retired_requests;       /* counters of freed pools */
    guint64 retired_failures;
    guint64 retired_errors[METRICS_ERR_KINDS];
    guint64 retired_connect_failures;
    char misplaced[256]; /* why it speaks the other service
                                       than it is listed for, or "" */
};

/* Calls fn for every current server.  Any thread. */
typedef void (*health_fn)(const struct health_info *info, void *arg);
void health_foreach(struct health_table *t, health_fn fn, void *arg);
