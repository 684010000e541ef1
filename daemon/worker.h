/* worker.h: what the engines of one worker thread share: its loop, its
 * generation, its request objects, and calls between threads. */
#pragma once

#include "httpc.h"
#include <glib.h>
#include <pthread.h>
#include <stdint.h>
#include <sys/queue.h>
#include <sys/socket.h>

#include <event2/event.h>
#include <event2/listener.h>

#include "bell.h"
#include "req.h"
#include "wire.h"

/*
 * The engines (client, backend, scan) run on a worker and reach each
 * other and the process through struct worker only.  proxy.c, above
 * them, makes the workers, runs their threads and plugs in the hooks by
 * which an engine below hands work to one above (the backend finishing a
 * client's request), so no engine includes a header above its own.
 */

struct config;
struct client;
struct backend_pool;
struct backend_conn;
struct health_table;
struct metrics_worker;
struct proxy;
struct scantab;
struct worker;

/* A function run on another worker's thread. */
typedef void (*worker_post_fn)(struct worker *w, void *arg);

#define WORKER_MAX_BACKENDS 64

/* One backend Thrift server, resolved once at startup. */
struct worker_server {
    char name[128];               /* "host:port" as configured, for logs */
    uint8_t service;              /* hbase1_service_id_t it speaks:
                                     [backend] servers Thrift1,
                                     thrift2_servers Thrift2 */
    struct sockaddr_storage addr; /* resolved address */
    socklen_t addrlen;
    /* its Kerberos principal with SASL (service/host@REALM), else "" */
    char sasl_server[256];
    /* [backend] transport = http: how its connections dial it */
    struct httpc_target http;
};

/*
 * What the I/O core reads from the configuration, in its own units.
 * proxy_settings_load is the one place that knows the config structs.
 */
struct worker_settings {
    char listen_host[128];               /* address to bind, "" = any */
    uint16_t listen_port;                /* 0 = pick one (tests) */
    struct sockaddr_storage listen_addr; /* listen_host resolved */
    socklen_t listen_addrlen;
    gboolean thrift2_enabled; /* [thrift2] listen is set */
    char thrift2_host[128];   /* Thrift2 clients' address, "" = any */
    uint16_t thrift2_port;    /* 0 = pick one (tests) */
    struct sockaddr_storage thrift2_addr;
    socklen_t thrift2_addrlen;
    gboolean tls_enabled; /* [tls] listen is set */
    char tls_host[128];   /* TLS clients' address, "" = any */
    uint16_t tls_port;    /* 0 = pick one (tests) */
    struct sockaddr_storage tls_addr;
    socklen_t tls_addrlen;
    unsigned tls_handshake_ms; /* close a client not through by then */
    gboolean http_enabled[2];  /* [http] listen, thrift2_listen set */
    uint16_t http_port[2];
    struct sockaddr_storage http_addr[2];
    socklen_t http_addrlen[2];
    unsigned workers;  /* threads, >= 1 after load */
    unsigned nservers; /* backend servers: Thrift1's, then Thrift2's */
    struct worker_server servers[WORKER_MAX_BACKENDS];
    wire_proto_t backend_proto;      /* what the backends speak */
    gboolean backend_framed;         /* framed transport to the backends */
    unsigned pool_size;              /* connections per worker per server */
    unsigned connect_timeout_ms;     /* non-blocking connect deadline */
    unsigned request_timeout_ms;     /* send to reply deadline, per request */
    unsigned slow_call_ms;           /* a call taking longer is slow; 0 =
                                        none is */
    unsigned client_idle_timeout_ms; /* 0 = clients may idle forever */
    unsigned max_connections;        /* clients over all workers, 0 = none */
    uint32_t max_frame_size;         /* one client message, bytes */
    uint32_t max_reply_size;         /* one backend reply, bytes */
    unsigned shutdown_timeout_ms;    /* SIGTERM: wait this long for replies */
    gboolean backend_http;           /* transport = http (httpc.h): SASL
                                        keys, if any, make SPNEGO tokens */
    gboolean backend_sasl;           /* SASL GSSAPI to the backends (then
                                        the three below are set; all are
                                        restart-only) */
    int backend_sasl_qop;            /* sasl_qop_t */
    char sasl_principal[256];        /* ours */
    char sasl_keytab[1024];          /* where our keys are */
};

/*
 * A configuration generation: a config and the settings derived from it.
 * SIGHUP makes a new one and posts it to every worker, which switches to
 * it between two events; requests, scanners and backend pools already
 * under way keep pointers into the generation they started in (salt
 * policies, server entries).  Each one counts itself in uses[] of its
 * worker (that thread alone touches its slot, so the request path pays
 * no atomic); a worker holds one reference while the generation is its
 * current one or its slot is not 0, the main thread one while it is the
 * newest.  The last reference frees it (proxy.c).
 */
struct worker_gen {
    unsigned id;                /* 1 at start, +1 per applied reload */
    const struct config *cfg;   /* what the codec and scans read: never
                                   changed (ts->cfg) */
    struct tabstate *ts;        /* what the process learns of cfg's
                                   tables while it runs (tabstate.h says
                                   who writes what); one reference, which
                                   owns cfg for a reload's generation */
    struct worker_settings set; /* derived from cfg */
    gboolean new_pool;          /* servers or pool_size differ from
                                       the previous generation */
    gint refs;                  /* holders, see above (atomic) */
    unsigned *uses;             /* per worker: requests, scanners and
                                       pools of it alive there */
};

/*
 * Calls up from an engine to one above it, set by proxy.c when it makes
 * the worker (client_answered and client_flush_held).
 */
struct worker_hooks {
    /* A request of c that was sent on was answered (req->reply is
     * ready). */
    void (*answered)(struct client *c, struct req *req);
    /* Has the replies of every client held since worker_replies_hold
     * written, at the end of the loop pass at the latest. */
    void (*flush_held)(struct worker *w);
};

/* One posted call (worker_post). */
struct worker_call {
    worker_post_fn fn;
    void *arg;
};

/*
 * Where a worker is in its life.  Only worker_set_state moves it, along
 *
 *   IDLE --> RUNNING --> STOPPING --> STOPPED
 *               |                        ^
 *               +------------------------+  (its loop ended on its own)
 */
enum worker_state {
    WORKER_IDLE = 0, /* made, its thread not started yet */
    WORKER_RUNNING,  /* its loop runs: takes clients and requests */
    WORKER_STOPPING, /* asked to stop: no new clients or requests, the
                        ones it holds are answered */
    WORKER_STOPPED,  /* its loop has ended: what remains is closed */
};

/* One thread: its own event loop, listener, clients and backend pool. */
struct worker {
    struct proxy *proxy;       /* root (proxy.c's) */
    unsigned id;               /* 0..workers-1, for logs */
    struct worker_hooks hooks; /* calls up, see above */
    /* the process's, shared by every worker: */
    const struct worker_settings *startup; /* what a reload cannot change
                                       (listen, workers, backend protocol
                                       and transport) */
    gint *nconns;                          /* clients open over all workers
                                       (atomic) */
    struct scantab *scans;                 /* scanner ids */
    struct health_table *health;           /* UP/DOWN of every backend */
    pthread_t thread;
    struct event_base *base;             /* this thread's loop */
    struct evconnlistener *listener;     /* worker 0: the listening socket of
                                       the process; others NULL */
    struct evconnlistener *listener2;    /* worker 0: Thrift2's, when
                                       [thrift2] listen is set */
    struct evconnlistener *listener_tls; /* worker 0: [tls] listen's */
    struct httpd *httpd[2];       /* worker 0: [http] listen, thrift2_listen */
    gint stop_asked;              /* set by the main thread (atomic),
                                       then the bell rings */
    struct event *drain_ev;       /* shutdown: polls for quiet clients */
    gint64 stop_deadline;         /* monotonic us: give up waiting */
    enum worker_state state;      /* worker_set_state; its thread only */
    TAILQ_HEAD(, client) clients; /* open client connections */
    unsigned nclients;
    TAILQ_HEAD(, client)
    held; /* clients with replies done while
                                       replies_held: flushed together */
    TAILQ_HEAD(, backend_conn)
    corked;                         /* connections with requests held
                                       back to go in one write */
    gboolean replies_held;          /* see worker_replies_hold */
    struct event *flush_ev;         /* writes held replies at the end of
                                       the loop pass (client.c) */
    struct backend_pool *pool;      /* backend connections for new
                                       requests; older pools (reloads)
                                       hang off pool->older.  Written by
                                       this worker only, published with a
                                       release store: the scrape reads it */
    struct worker_gen *gen;         /* generation of new requests */
    GPtrArray *old_gens;            /* older generations w still holds a
                                       reference on: let go once nothing
                                       of w points into them */
    struct event *gc_timer;         /* lets go of generations and pools
                                       nothing uses any more */
    struct metrics_worker *metrics; /* this worker's counters */
    struct req_queue free_reqs;     /* recycled request objects */
    unsigned nfree_reqs;
    struct wire_buf scratch;  /* codec output before it is queued */
    struct codec_tally tally; /* what the codec reports, until the engine
                                 that called it counts it */
    uint8_t *rbuf;            /* req_read's buffer, REQ_READ_MAX */
    struct wire_limits client_limits; /* applied to client messages */
    struct wire_limits reply_limits;  /* applied to backend replies */
    int32_t next_seqid;               /* backend seqids, unique per worker */
    GMutex inbox_lock;                /* guards inbox */
    GQueue inbox;                     /* calls posted by other workers */
    struct bell bell;                 /* inbox and stop requests */
    struct event *scan_timer;         /* expires idle scanners */
};

/* On w: one more (or one fewer) thing of w points into gen. */
static inline void
worker_gen_use(struct worker *w, struct worker_gen *gen)
{
    gen->uses[w->id]++;
}

static inline void
worker_gen_unuse(struct worker *w, struct worker_gen *gen)
{
    /* let go of at w's next collection (proxy.c), never from under a
     * caller still looking at it */
    gen->uses[w->id]--;
}

/* w's current backend pool; safe from any thread (pools live until
 * proxy_free). */
static inline struct backend_pool *
worker_pool(struct worker *w)
{
    return __atomic_load_n(&w->pool, __ATOMIC_ACQUIRE);
}

/* Runs fn(to, arg) on worker to's thread, soon; safe from any thread. */
void worker_post(struct worker *to, worker_post_fn fn, void *arg);

/* On w, from its bell: runs the calls posted to it so far. */
void worker_run_posted(struct worker *w);

/* The one place a worker changes state: checks the arrow (above). */
void worker_set_state(struct worker *w, enum worker_state to);

/* A fresh backend seqid of w. */
int32_t worker_next_seqid(struct worker *w);

/* Request objects come from and go back to the worker's free list. */
struct req *worker_req_get(struct worker *w);
void worker_req_put(struct worker *w, struct req *req);
/* At the worker's end: frees what the free list holds. */
void worker_req_free_all(struct worker *w);

/*
 * The backend side is done with req (answered or failed; the reply in
 * req->reply, or in req->raw for an internal request): hand it to its
 * sink, or its client (hooks.answered), or drop it if detached.
 */
void worker_req_finish(struct worker *w, struct req *req);

/*
 * Between hold and release, replies finished on w are written to their
 * clients only at the release, all of a client's in one write: a backend
 * read that brings several replies (a pipelining client's) costs one send
 * per client instead of one per reply.
 */
void worker_replies_hold(struct worker *w);
void worker_replies_release(struct worker *w);
