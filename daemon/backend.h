/* backend.h: per-worker pools of pipelined connections to HBase Thrift. */
#pragma once

#include <glib.h>
#include <stdint.h>
#include <sys/queue.h>

#include <event2/bufferevent.h>
#include <event2/event.h>

#include "metrics.h"
#include "worker.h"

/* Where a backend connection is in its life.  Only backend_conn_set_state
 * (backend.c) changes it, and it checks the transition. */
enum backend_state {
    BACKEND_IDLE = 0,   /* no socket; connects when a request needs it */
    BACKEND_CONNECTING, /* non-blocking connect in progress, requests queue */
    BACKEND_CONNECTED,  /* requests are written and answered in order */
};

struct backend_server;
struct health_shared;
struct sasl_client;

/* A server's counters on one worker's pool, for /metrics: written by the
 * worker only, read by the scrape (metrics.h METRICS_ADD/GET). */
struct backend_stats {
    guint64 requests;                  /* requests queued to the server */
    guint64 failures;                  /* of which failed: lost, timed out */
    guint64 connect_failures;          /* connects that failed */
    gint64 open;                       /* connections CONNECTED now */
    gint64 inflight;                   /* requests sent, not answered now */
    guint64 errors[METRICS_ERR_KINDS]; /* replies by metrics_err_t:
                                       exceptions it answered, requests
                                       it failed (TRANSPORT) */
};

/* One pipelined connection to one server. */
struct backend_conn {
    struct backend_server *server; /* owner */
    unsigned index;                /* in server->conns, for logs */
    struct bufferevent *bev;       /* NULL when IDLE; connects, writes */
    struct event *rev;             /* reads once connected (req_read) */
    struct evbuffer *in;           /* replies read, not yet taken */
    struct event *timer;           /* connect, request and idle deadlines */
    gint64 timer_at;               /* when timer fires; 0: not armed */
    enum backend_state state;
    struct req_queue pending;            /* sent, unanswered, oldest first */
    unsigned npending;                   /* length of pending */
    gint64 connect_deadline;             /* monotonic us, while CONNECTING */
    struct wire_buf cork;                /* requests held back (more follow) */
    struct wire_scan *scan;              /* unframed: where the reply under way
                                       was left (NULL until one came in
                                       pieces) */
    struct wire_buf marks;               /* the rows of the reply under way
                                       for a scan fetch (wire_scan_mark),
                                       handed to the request with it */
    TAILQ_ENTRY(backend_conn) cork_link; /* in worker->corked */
    unsigned corked:1;                   /* on worker->corked */
    gint64 last_active;  /* monotonic us of the last reply/send */
    gint64 answer_since; /* monotonic us since when the oldest request
                            has waited for its answer (its turn) */
    /* with [backend] sasl = gssapi only (all NULL without): */
    struct sasl_client *sasl;   /* the security context, from the TCP
                                       connect on; the connection stays
                                       CONNECTING until it is negotiated */
    struct evbuffer *sasl_raw;  /* bytes read, not yet unwrapped into
                                       in */
    struct evbuffer *sasl_held; /* messages submitted before the
                                       negotiation ended, in queue order */
    /* with [backend] transport = http only (all NULL without): one POST
     * at a time (HTTP/1.1 keep-alive, no pipelining), the others held */
    struct httpc_conn *http;    /* the reply being parsed, the head */
    struct evbuffer *http_raw;  /* plain HTTP: bytes read, not parsed */
    struct evbuffer *http_held; /* messages not POSTed yet, in queue
                                       order (the first pending's first) */
    unsigned http_busy:1;       /* the first pending's POST is out */
    unsigned epoch;             /* times closed: a caller that let go
                                       sees whether it is the same socket */
    unsigned answered;          /* replies taken, ever */
    unsigned level;             /* the pick's set it is in (struct
                                       backend_server), by state and
                                       npending: backend_conn_index */
    guint64 *word, bit;         /* its bit in set 0 (set l: l * nwords
                                       words on) */
};

/*
 * The pick (backend.c backend_pick) wants, on a server, the connection
 * with the fewest pending, an open one before one that must connect
 * first, the lowest index among equals.  Walking pool_size connections
 * per call cost more than the rest of the submit, so each server keeps
 * its connections in sets by what decides: set l (l < BACKEND_LEVELS)
 * holds the open or opening ones with l pending, set BACKEND_LEVELS the
 * IDLE ones (an IDLE connection has nothing pending); a bit per
 * connection, its index.  An open one with more pending is in none
 * (deep): the pick walks only when every set it may use is empty.  Few
 * levels: a pipelining client's calls queue deep on one connection, and
 * each level they pass costs an update.
 */
#define BACKEND_LEVELS 4
#define BACKEND_UNINDEXED (BACKEND_LEVELS + 1)

/* One backend server as one worker sees it. */
struct backend_server {
    struct backend_pool *pool;       /* owner */
    const struct worker_server *srv; /* name and address */
    struct backend_conn *conns;      /* pool_size connections */
    struct health_shared *health;    /* shared by every worker's pools */
    gint64 retry_at;                 /* monotonic us: no connect before this */
    char last_error[384];            /* why the last connect failed */
    struct backend_stats stats;
    guint64 *sets;   /* BACKEND_LEVELS + 1 bit sets of nwords words */
    unsigned nwords; /* 64-bit words a set takes for pool_size */
    unsigned deep;   /* connections in no set */
};

/* A worker's connections to every backend server. */
struct backend_pool {
    struct worker *worker; /* owner */
    unsigned nservers;
    struct backend_server *servers;
    unsigned next_server;              /* round robin start */
    const struct worker_settings *set; /* servers and pool_size (of the
                                       generation that made the pool) */
    struct worker_gen *gen;            /* that generation (pool counts as one
                                       of its uses) */
    struct backend_pool *older;        /* pool this one replaced on reload */
    gboolean retired;                  /* replaced: serve what still comes
                                       (pinned scanners), close idle
                                       connections */
    unsigned scanners;                 /* open scanners pinned to it */
    struct req_queue waiting;          /* reads waiting for a server to
                                       take them again (backend_wait) */
    unsigned nwaiting;
    struct event *wait_timer; /* tries them again */
    gboolean refusing;        /* while a server's security refusal (SASL)
                                 moves its calls: a refusal does not pass
                                 in a second, so reads do not wait */
};

struct backend_pool *backend_pool_new(struct worker *w,
                                      struct worker_gen *gen);

/* A retired pool nothing uses any more: no connection open or opening,
 * no scanner pinned to it.  It may be freed. */
gboolean backend_pool_idle(const struct backend_pool *pool);

/* Before a retired pool is freed: its servers' counters move to their
 * health entries, so the scrape's totals never go back (under the
 * proxy's pools_lock, which the scrape holds too). */
void backend_pool_fold(struct backend_pool *pool);
/* A reload replaced pool: its idle connections close now, the others as
 * soon as their last reply is in.  It still takes requests. */
void backend_pool_retire(struct backend_pool *pool);
void backend_pool_free(struct backend_pool *pool);

/*
 * Sends msg (len bytes, already framed for the backend) for req.  req
 * either joins a connection's pending FIFO, or, when no server can take
 * it, is finished at once with an IOError reply.  after: the connection
 * holding the sender's previous unanswered request, or NULL; req then
 * queues behind it on that connection, so the server applies the two in
 * order (it answers one call per connection at a time).  The caller
 * checks backend_conn_takes(after) first.  Returns the connection req
 * waits on, NULL when it was finished at once.
 */
struct backend_conn *backend_submit(struct backend_pool *pool, struct req *req,
                                    struct backend_conn *after,
                                    const uint8_t *msg, size_t len,
                                    gboolean more);

/*
 * backend_submit with more set holds a message back when its connection
 * is open, so that the next ones to the same connection go in the same
 * write; this writes what every connection of w holds.  The caller that
 * said more calls it before returning to the loop.
 */
void backend_uncork(struct worker *w);

/* Whether conn may take one more request of pool now: it belongs to
 * pool (not one a reload retired), is open or opening, and its server
 * is UP. */
gboolean backend_conn_takes(const struct backend_pool *pool,
                            const struct backend_conn *conn);

/* The name ("host:port") of pool's server i, or NULL; it lives as long
 * as the process (a health entry's). */
const char *backend_pool_server_name(const struct backend_pool *pool, int i);

/* Requests still waiting on this pool's connections. */
unsigned backend_pool_pending(const struct backend_pool *pool);

/* A server of service (hbase1_service_id_t) for a new scanner: the next
 * UP one in round robin, or any when none is (the scanner's first
 * request then fails fast). */
int backend_pool_pick_server(struct backend_pool *pool, uint8_t service);
