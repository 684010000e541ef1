/* proxy.h: process root, worker threads and the request object. */
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

#include "codec.h"
#include "wire.h"

struct config;
struct client;
struct backend_pool;
struct backend_conn;
struct proxy_worker;
struct proxy_req;
struct scantab;
struct backend_health_table;
struct metrics;
struct metrics_worker;

/* Called on the owning worker with the raw reply of an internal request. */
typedef void (*proxy_sink_fn)(struct proxy_worker *w, struct proxy_req *req);
/* A function run on another worker's thread. */
typedef void (*proxy_post_fn)(struct proxy_worker *w, void *arg);

#define PROXY_ERROR proxy_error_quark()
GQuark proxy_error_quark(void);

typedef enum {
    PROXY_ERROR_CONFIG,     /* a setting the I/O core cannot use */
    PROXY_ERROR_RESOLVE,    /* a listen or backend address does not resolve */
    PROXY_ERROR_LISTEN,     /* cannot bind or listen */
    PROXY_ERROR_LIBEVENT,   /* libevent refused to set something up */
} proxy_error_t;

#define PROXY_MAX_BACKENDS 64

/* One backend Thrift server, resolved once at startup. */
struct proxy_server {
    char name[128];                 /* "host:port" as configured, for logs */
    struct sockaddr_storage addr;   /* resolved address */
    socklen_t addrlen;
    char sasl_server[256]; /* its Kerberos principal with SASL
                                       (service/host@REALM), else "" */
};

/*
 * What the I/O core reads from the configuration, in its own units.
 * proxy_settings_load is the one place that knows the config structs.
 */
struct proxy_settings {
    char listen_host[128];          /* address to bind, "" = any */
    uint16_t listen_port;           /* 0 = pick one (tests) */
    struct sockaddr_storage listen_addr; /* listen_host resolved */
    socklen_t listen_addrlen;
    unsigned workers;               /* threads, >= 1 after load */
    unsigned nservers;              /* backend servers */
    struct proxy_server servers[PROXY_MAX_BACKENDS];
    wire_proto_t backend_proto;     /* what the backends speak */
    gboolean backend_framed;        /* framed transport to the backends */
    unsigned pool_size;             /* connections per worker per server */
    unsigned connect_timeout_ms;    /* non-blocking connect deadline */
    unsigned request_timeout_ms;    /* send to reply deadline, per request */
    unsigned client_idle_timeout_ms; /* 0 = clients may idle forever */
    unsigned max_connections;       /* clients over all workers, 0 = none */
    uint32_t max_frame_size;        /* one client message, bytes */
    uint32_t max_reply_size;        /* one backend reply, bytes */
    unsigned shutdown_timeout_ms;   /* SIGTERM: wait this long for replies */
    gboolean backend_sasl;          /* SASL GSSAPI to the backends (then
                                       the three below are set; all are
                                       restart-only) */
    int backend_sasl_qop;           /* sasl_qop_t */
    char sasl_principal[256];       /* ours */
    char sasl_keytab[1024];         /* where our keys are */
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
 * newest.  The last reference frees it.
 */
struct proxy_gen {
    unsigned id;                    /* 1 at start, +1 per applied reload */
    const struct config *cfg;       /* what the codec and scans read */
    struct proxy_settings set;      /* derived from cfg */
    gboolean new_pool;              /* servers or pool_size differ from
                                       the previous generation */
    gboolean owns_cfg;              /* free cfg with the generation */
    gint refs;                      /* holders, see above (atomic) */
    unsigned *uses;                 /* per worker: requests, scanners and
                                       pools of it alive there */
};


/*
 * One request on its way.  It sits on two queues at once: its client's
 * FIFO (replies leave in request order) and, while unanswered, the FIFO
 * of the backend connection it was sent on.  Whichever side lets go
 * last returns it to the worker's free list; a client that closes first
 * only detaches (client = NULL), so the backend never follows a dangling
 * pointer.
 */
struct proxy_req {
    TAILQ_ENTRY(proxy_req) client_link;  /* in client->reqs */
    TAILQ_ENTRY(proxy_req) backend_link; /* in conn->pending, or free list */
    struct client *client;          /* owner; NULL once it has closed */
    struct proxy_gen *gen;          /* generation it was read under: its
                                       call's salt points there */
    proxy_sink_fn sink;             /* internal request (scan fan-out): gets
                                       the raw backend reply, no client */
    void *sink_arg;                 /* the sink's object */
    uint32_t sink_tag;              /* the sink's index (a bucket) */
    int server;                     /* backend server to use, -1 = any */
    uint32_t backend_len;           /* bytes of its backend message: one
                                       never sent can move to another
                                       server */
    unsigned failed:1;              /* internal: reply holds error text */
    unsigned can_retry:1;           /* internal: the failure is transient */
    struct backend_conn *conn;      /* waiting on it; NULL when answered */
    struct codec_call call;         /* what the reply needs to know */
    wire_proto_t client_proto;      /* copied: a detached req still knows */
    unsigned client_framed:1;       /* reply gets a frame header */
    unsigned done:1;                /* reply is complete and ready */
    int32_t backend_seqid;          /* seqid the backend sees */
    gint64 deadline;                /* monotonic us: fail if not answered */
    gint64 started;                 /* monotonic us: read from the client */
    struct wire_buf reply;          /* framed for the client when done */
};

TAILQ_HEAD(proxy_req_queue, proxy_req);

struct proxy;

/* Bytes one proxy_read takes from a socket, at most. */
#define PROXY_READ_MAX (64u * 1024)

/*
 * A doorbell other threads ring to wake a loop: an eventfd the loop
 * watches.  The bases run without libevent's locks (evthread), which
 * cost a mutex round trip in every event_add on the request path; this
 * is the only way into a loop from another thread.
 */
struct proxy_bell {
    int fd;                         /* eventfd, or -1 */
    struct event *ev;               /* persistent read event on fd */
};

gboolean proxy_bell_init(struct proxy_bell *b, struct event_base *base,
                         event_callback_fn cb, void *arg);
/* Any thread; rings coalesce until the callback runs. */
void proxy_bell_ring(struct proxy_bell *b);
/* In the callback: take the rings so the next one wakes the loop again. */
void proxy_bell_answer(struct proxy_bell *b);
void proxy_bell_free(struct proxy_bell *b);

/* One thread: its own event loop, listener, clients and backend pool. */
struct proxy_worker {
    struct proxy *proxy;            /* root */
    unsigned id;                    /* 0..workers-1, for logs */
    pthread_t thread;
    struct event_base *base;        /* this thread's loop */
    struct evconnlistener *listener; /* worker 0: the listening socket of
                                       the process; others NULL */
    gint stop_asked;                /* set by the main thread (atomic),
                                       then the bell rings */
    struct event *drain_ev;         /* shutdown: polls for quiet clients */
    gint64 stop_deadline;           /* monotonic us: give up waiting */
    gboolean stopping;              /* no new clients or requests */
    TAILQ_HEAD(, client) clients;   /* open client connections */
    unsigned nclients;
    TAILQ_HEAD(, client) held;      /* clients with replies done while
                                       replies_held: flushed together */
    TAILQ_HEAD(, backend_conn) corked; /* connections with requests held
                                       back to go in one write */
    gboolean replies_held;          /* see proxy_replies_hold */
    struct backend_pool *pool;      /* backend connections for new
                                       requests; older pools (reloads)
                                       hang off pool->older.  Written by
                                       this worker only, published with a
                                       release store: the scrape reads it */
    struct proxy_gen *gen;          /* generation of new requests */
    GPtrArray *old_gens;            /* older generations w still holds a
                                       reference on: let go once nothing
                                       of w points into them */
    struct event *gc_timer;         /* lets go of generations and pools
                                       nothing uses any more */
    struct metrics_worker *metrics; /* this worker's counters */
    struct proxy_req_queue free_reqs; /* recycled request objects */
    unsigned nfree_reqs;
    struct wire_buf scratch;        /* codec output before it is queued */
    uint8_t *rbuf;                  /* proxy_read's buffer, PROXY_READ_MAX */
    struct wire_limits client_limits; /* applied to client messages */
    struct wire_limits reply_limits;  /* applied to backend replies */
    int32_t next_seqid;             /* backend seqids, unique per worker */
    GMutex inbox_lock;              /* guards inbox */
    GQueue inbox;                   /* calls posted by other workers */
    struct proxy_bell bell;         /* inbox and stop requests */
    struct event *scan_timer;       /* expires idle scanners */
};

/*
 * The process: settings, workers, and the place where process-wide
 * state (a later scanner-id table) hangs, under its own lock.
 */
struct proxy {
    const struct config *cfg;       /* newest generation's config; workers
                                       read w->gen->cfg instead */
    struct proxy_settings set;      /* startup settings: what a reload
                                       cannot change (listen, workers,
                                       backend protocol and transport);
                                       the rest is in w->gen->set */
    struct proxy_gen *gen;          /* newest generation (main thread) */
    struct metrics *metrics;        /* counters of every worker */
    unsigned nworkers;
    struct proxy_worker *workers;
    uint16_t port;                  /* bound port (listen_port or picked) */
    gint nconns;                    /* clients open over all workers (atomic) */
    unsigned next_worker;           /* whose turn the next accepted socket
                                       is (worker 0's thread only) */
    struct scantab *scans;          /* scanner ids, global to the process */
    struct backend_health_table *health; /* UP/DOWN of every backend */
    GMutex gens_lock;               /* guards gens */
    GPtrArray *gens;                /* every generation not freed yet */
    GMutex pools_lock;              /* a worker unlinking a retired pool
                                       against the scrape walking them */
};

/* On w: one more (or one fewer) thing of w points into gen. */
static inline void
proxy_gen_use(struct proxy_worker *w, struct proxy_gen *gen)
{
    gen->uses[w->id]++;
}

static inline void
proxy_gen_unuse(struct proxy_worker *w, struct proxy_gen *gen)
{
    /* let go of at w's next collection (proxy_worker_gc), never from
     * under a caller still looking at it */
    gen->uses[w->id]--;
}

/* host:port to one socket address ("" host: any); passive for a listen
 * address.  Blocks on DNS: startup, reload and --check-config only. */
gboolean proxy_resolve(const char *host, uint16_t port, gboolean passive,
                       struct sockaddr_storage *out, socklen_t *outlen,
                       GError **error) G_GNUC_WARN_UNUSED_RESULT;

gboolean proxy_settings_load(struct proxy_settings *set,
                             const struct config *cfg, GError **error)
    G_GNUC_WARN_UNUSED_RESULT;

/* Builds workers and binds their listeners; nothing runs yet.  cfg stays
 * the caller's and must outlive the proxy; its tables get their metrics
 * slots (config_table.stats_id). */
struct proxy *proxy_new(struct config *cfg, GError **error)
    G_GNUC_WARN_UNUSED_RESULT;

/*
 * SIGHUP: makes cfg (taken over, also on failure) the next generation
 * and posts it to every worker.  Refused, with the reason in error, when
 * it would change the salt mapping of a salted table (including dropping
 * its section) or a setting that needs a restart; the running
 * generation stays.  Main thread.
 */
gboolean proxy_reload(struct proxy *p, struct config *cfg, GError **error)
    G_GNUC_WARN_UNUSED_RESULT;

/* The newest generation's id.  Main thread. */
unsigned proxy_generation(const struct proxy *p);

/* w's current backend pool; safe from any thread (pools live until
 * proxy_free). */
static inline struct backend_pool *
proxy_worker_pool(struct proxy_worker *w)
{
    return __atomic_load_n(&w->pool, __ATOMIC_ACQUIRE);
}
/* Starts the worker threads. */
gboolean proxy_start(struct proxy *p, GError **error)
    G_GNUC_WARN_UNUSED_RESULT;
/* Stops accepting, lets requests in flight finish up to the shutdown
 * timeout, joins the threads.  Call from the main thread. */
void proxy_stop(struct proxy *p);
void proxy_free(struct proxy *p);

/* Runs fn(to, arg) on worker to's thread, soon; safe from any thread. */
void proxy_worker_post(struct proxy_worker *to, proxy_post_fn fn, void *arg);

/* A fresh backend seqid of w. */
int32_t proxy_next_seqid(struct proxy_worker *w);

/* Monotonic clock in microseconds. */
static inline gint64
proxy_now(void)
{
    return g_get_monotonic_time();
}

/* Request objects come from and go back to the worker's free list. */
struct proxy_req *proxy_req_get(struct proxy_worker *w);
void proxy_req_put(struct proxy_worker *w, struct proxy_req *req);

/*
 * The backend side is done with req (answered or failed, reply written
 * into req->reply): hand it to its client, or drop it if detached.
 */
void proxy_req_finish(struct proxy_worker *w, struct proxy_req *req);

/*
 * Between hold and release, replies finished on w are written to their
 * clients only at the release, all of a client's in one write: a backend
 * read that brings several replies (a pipelining client's) costs one send
 * per client instead of one per reply.
 */
void proxy_replies_hold(struct proxy_worker *w);
void proxy_replies_release(struct proxy_worker *w);

/*
 * A reply for req's client is written between these two: begin empties
 * req->reply and opens a frame when the client is framed (its result
 * goes to end, which closes the frame).
 */
size_t proxy_req_reply_begin(struct proxy_req *req);
void proxy_req_reply_end(struct proxy_req *req, size_t frame);

/*
 * Fills req->reply with an IOError for the client, framed as it needs.
 * message is the whole text, e.g. "hbase-salt-proxy: backend h:p: ...".
 */
void proxy_req_io_error(struct proxy_req *req, const char *message,
                        gboolean can_retry);

/*
 * Writes iov[0..n) to bev's socket at once when nothing is queued before
 * it, and queues in bev's output only what the socket did not take: the
 * write event (two epoll_ctl calls) is armed only on a short write, as
 * HAProxy does.  Errors are left for bev's own write to find and report.
 */
void proxy_write(struct bufferevent *bev, const struct iovec *iov, int n);

/*
 * Reads what fd has, at most max bytes, onto the end of in: one recv into
 * the worker's read buffer, then appended.  Not evbuffer_read, which asks
 * FIONREAD first: an ioctl for every read.  Returns the bytes read, 0 at
 * the end of the stream, -1 with errno set (EAGAIN: nothing to read).
 */
ssize_t proxy_read(struct proxy_worker *w, evutil_socket_t fd,
                   struct evbuffer *in, size_t max);

/*
 * The bytes at the start of in, pulled up contiguous, for a codec that
 * finds the message's end itself: framed, one whole frame (header
 * included) or AGAIN; unframed, whatever is there up to one maximal
 * message.  ERROR: *why says what is wrong with the frame header.
 */
wire_status_t proxy_msg_peek(struct evbuffer *in, gboolean framed,
                             const struct wire_limits *limits,
                             const uint8_t **buf, size_t *avail,
                             const char **why);

/*
 * proxy_msg_next for an unframed stream, with scan keeping its place in
 * the message between calls (wire_scan): however the message arrives,
 * each byte is walked once.  scan is ready for the next message after OK.
 */
wire_status_t proxy_msg_scan(struct evbuffer *in, wire_proto_t proto,
                             struct wire_scan *scan,
                             const struct wire_limits *limits,
                             const uint8_t **msg, size_t *len,
                             const char **why);

/*
 * Finds one whole message at the start of in, pulled up contiguous.
 * OK: *msg and *len cover it including any frame header.  AGAIN: wait
 * for more bytes.  ERROR: *why says what is wrong with the stream.
 */
wire_status_t proxy_msg_next(struct evbuffer *in, wire_proto_t proto,
                             gboolean framed,
                             const struct wire_limits *limits,
                             const uint8_t **msg, size_t *len,
                             const char **why);
