/* proxy.h: the process: workers, listeners, pools, reload, generations. */
#pragma once

#include <glib.h>
#include <pthread.h>
#include <stdint.h>
#include <sys/queue.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/listener.h>

#include "worker.h"

struct config;
struct metrics;
struct tabstate;

#define PROXY_ERROR proxy_error_quark()
GQuark proxy_error_quark(void);

typedef enum {
    PROXY_ERROR_CONFIG,   /* a setting the I/O core cannot use */
    PROXY_ERROR_RESOLVE,  /* a listen or backend address does not resolve */
    PROXY_ERROR_LISTEN,   /* cannot bind or listen */
    PROXY_ERROR_LIBEVENT, /* libevent refused to set something up */
} proxy_error_t;

/*
 * Where the process is in its life.  Only proxy.c's proxy_set_state
 * moves it:
 *
 *   MADE --> RUNNING --> STOPPED
 *     |                     ^
 *     +---------------------+  (proxy_start failed)
 */
enum proxy_state {
    PROXY_MADE = 0, /* proxy_new: bound, no worker thread runs */
    PROXY_RUNNING,  /* proxy_start: workers serve */
    PROXY_STOPPED,  /* proxy_stop: workers joined; proxy_free is next */
};

/*
 * The process: settings, workers, and the place where process-wide
 * state (a later scanner-id table) hangs, under its own lock.
 */
struct proxy {
    enum proxy_state state;     /* main thread only */
    const struct config *cfg;   /* newest generation's config; workers
                                       read w->gen->cfg instead */
    struct worker_settings set; /* startup settings: what a reload
                                       cannot change (listen, workers,
                                       backend protocol and transport);
                                       the rest is in w->gen->set */
    struct worker_gen *gen;     /* newest generation (main thread) */
    struct metrics *metrics;    /* counters of every worker */
    unsigned nworkers;
    struct worker *workers;
    uint16_t port;               /* bound port (listen_port or picked) */
    uint16_t port2;              /* Thrift2's bound port, 0: none */
    gint nconns;                 /* clients open over all workers (atomic) */
    unsigned next_worker;        /* whose turn the next accepted socket
                                       is (worker 0's thread only) */
    struct scantab *scans;       /* scanner ids, global to the process */
    struct health_table *health; /* UP/DOWN of every backend */
    GMutex gens_lock;            /* guards gens */
    GPtrArray *gens;             /* every generation not freed yet */
    GMutex pools_lock;           /* a worker unlinking a retired pool
                                       against the scrape walking them */
    GMutex tls_lock;             /* guards tls_ctx */
    struct ssl_ctx_st *tls_ctx;  /* the TLS listener's context (SSL_CTX),
                                       replaced on reload; NULL: none */
    uint16_t port_tls;           /* the TLS listener's bound port */
};

/* The TLS listener's current context, a reference (SSL_CTX_free it), or
 * NULL without one. */
struct ssl_ctx_st *proxy_tls_ctx(struct proxy *p);

/* host:port to one socket address ("" host: any); passive for a listen
 * address.  Blocks on DNS: startup, reload and --check-config only. */
gboolean proxy_resolve(const char *host, uint16_t port, gboolean passive,
                       struct sockaddr_storage *out, socklen_t *outlen,
                       GError **error) G_GNUC_WARN_UNUSED_RESULT;

gboolean proxy_settings_load(struct worker_settings *set,
                             const struct config *cfg, GError **error)
    G_GNUC_WARN_UNUSED_RESULT;

/* Builds workers and binds their listeners; nothing runs yet.  ts (the
 * first generation's, checked against the catalog) is taken over, also on
 * failure; its config stays the caller's and must outlive the proxy.  Its
 * tables get their metrics slots (tabstate_table.stats_id). */
struct proxy *proxy_new(struct tabstate *ts, GError **error)
    G_GNUC_WARN_UNUSED_RESULT;

/*
 * SIGHUP, in two steps, so that the catalog check between them (blocking
 * calls to HBase) runs off the main loop.  prepare: the checks that
 * refuse a reload, with the reason in error, when cfg (taken over, also
 * on failure) would change the salt mapping of a salted table (including
 * dropping its section) or a setting that needs a restart; the running
 * generation stays.  Else the new generation's tabstate, with the orphans
 * it inherits.  The caller runs catalog_check on proxy_reload_state, then
 * commit makes cfg the next generation and posts it to every worker, or
 * abandon drops it (stopping).  The newest generation must not change
 * between prepare and commit.  Main thread.
 */
struct proxy_reload;
struct proxy_reload *proxy_reload_prepare(struct proxy *p, struct config *cfg,
                                          GError **error)
    G_GNUC_WARN_UNUSED_RESULT;
struct tabstate *proxy_reload_state(const struct proxy_reload *r);
void proxy_reload_commit(struct proxy *p, struct proxy_reload *r);
void proxy_reload_abandon(struct proxy_reload *r);

/* The newest generation's id.  Main thread. */
unsigned proxy_generation(const struct proxy *p);

/* Starts the worker threads. */
gboolean proxy_start(struct proxy *p, GError **error)
    G_GNUC_WARN_UNUSED_RESULT;
/* Stops accepting, lets requests in flight finish up to the shutdown
 * timeout, joins the threads.  Call from the main thread. */
void proxy_stop(struct proxy *p);
void proxy_free(struct proxy *p);
