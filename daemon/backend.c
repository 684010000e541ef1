/* backend.c: per-worker pools of pipelined connections to HBase Thrift. */
#include "backend.h"

#include <errno.h>
#include <signal.h>
#include <string.h>
#include <netinet/in.h>
#include <netinet/tcp.h>

#include <event2/buffer.h>
#include <event2/bufferevent_ssl.h>

#include "hbase1.h"
#include "health.h"
#include "hsp-config.h"
#include "invariant.h"
#include "lograte.h"
#include "metrics.h"
#include "sasl.h"

/*
 * A server whose connect failed is not dialled again for this long;
 * requests meanwhile go to another server, or fail at once with the last
 * error (can_retry TRUE) rather than queueing behind a connect that will
 * likely fail too.
 * Fail-fast keeps the client's latency bounded by the backoff instead of
 * connect_timeout_ms, and a dead server costs one connect per 200 ms per
 * connection slot, not one per request.
 */
#define BACKEND_RETRY_MS 200
/*
 * HBase's thread-pool server drops connections silent for 60 s
 * (hbase.thrift.server.socket.read.timeout).  Closing ours first avoids
 * sending a request into a socket the server is closing.
 */
#define BACKEND_IDLE_CLOSE_MS 50000
/* Bytes in an IOError message we build (a SASL failure names the
 * principal, the keytab and MIT's reason). */
#define BACKEND_MSG_MAX 512
/*
 * A SASL connection whose security context expires within this long is
 * not given a new request: it is closed and dialled again (the ticket it
 * was built on is expiring; a renewed one is in the credentials by then).
 */
#define BACKEND_SASL_EXPIRY_MARGIN_US (5 * G_USEC_PER_SEC)

static void backend_read_cb(evutil_socket_t fd, short what, void *arg);
static void backend_event_cb(struct bufferevent *bev, short what, void *arg);
static void backend_timer_cb(evutil_socket_t fd, short what, void *arg);
static void backend_http_send(struct backend_conn *conn);
static gboolean backend_replies(struct backend_conn *conn);
static void backend_http_take(struct backend_conn *conn);
static void backend_tls_read_cb(struct bufferevent *bev, void *arg);
static void backend_wait_cb(evutil_socket_t fd, short what, void *arg);
static struct backend_conn *
backend_submit_at(struct backend_pool *pool, struct req *req,
                  struct backend_conn *after, const uint8_t *msg, size_t len,
                  int avoid, gboolean fresh, gboolean more);

/* Whether s takes requests: not DOWN. */
static gboolean
backend_server_up(const struct backend_server *s)
{
    return health_is_up(s->health);
}

static struct worker *
backend_worker(const struct backend_conn *conn)
{
    return conn->server->pool->worker;
}

/* Timeouts of the worker's current generation: a reload applies them to
 * the next request even on a connection it did not replace. */
static const struct worker_settings *
backend_settings(const struct backend_conn *conn)
{
    return &backend_worker(conn)->gen->set;
}

/* When conn's security context stops taking new requests (monotonic
 * us): its expiry, less a margin. */
static gint64
backend_sasl_stale_at(const struct backend_conn *conn)
{
    gint64 exp = sasl_client_expiry(conn->sasl);

    if (exp == G_MAXINT64) {
        return G_MAXINT64;
    }
    return req_now() +
           (exp - BACKEND_SASL_EXPIRY_MARGIN_US - g_get_real_time());
}

/* The process's SASL credentials, NULL without SASL. */
static struct sasl_creds *
backend_sasl_creds(const struct backend_conn *conn)
{
    return health_sasl_creds(backend_worker(conn)->health);
}

/* Whether the caller runs on w's thread: a pool, its connections and
 * its requests are that worker's alone. */
static gboolean
backend_on_worker(const struct worker *w)
{
    return pthread_equal(pthread_self(), w->thread);
}

static const char *const backend_state_name[] = {
    [BACKEND_IDLE] = "IDLE",
    [BACKEND_CONNECTING] = "CONNECTING",
    [BACKEND_CONNECTED] = "CONNECTED",
};

/* A connection starts IDLE: g_new0 made it so. */
G_STATIC_ASSERT(BACKEND_IDLE == 0);

/* Bit i of set l of s. */
static guint64 *
backend_set_word(const struct backend_server *s, unsigned l, unsigned i)
{
    return &s->sets[(gsize)l * s->nwords + i / 64];
}

/*
 * Puts conn in the pick's set its state and npending say (backend.h,
 * struct backend_server): after every change of either.  Inline: it
 * runs twice a call.
 */
static inline void
backend_conn_index(struct backend_conn *conn)
{
    unsigned to, nwords = conn->server->nwords;

    if (conn->state == BACKEND_IDLE) {
        to = BACKEND_LEVELS;
    } else {
        to = conn->npending < BACKEND_LEVELS ? conn->npending
                                             : BACKEND_UNINDEXED;
    }
    if (G_LIKELY(to == conn->level)) {
        return;
    }
    if (conn->level == BACKEND_UNINDEXED) {
        conn->server->deep--;
    } else {
        conn->word[conn->level * nwords] &= ~conn->bit;
    }
    if (to == BACKEND_UNINDEXED) {
        conn->server->deep++;
    } else {
        conn->word[to * nwords] |= conn->bit;
    }
    conn->level = to;
}

/* conn->npending changed: backend_conn_index, unless conn was deep and
 * stays so (a pipelining client's calls queue deep: two instructions). */
static inline void
backend_conn_counted(struct backend_conn *conn)
{
    if (conn->npending <= BACKEND_LEVELS) {
        backend_conn_index(conn);
    }
}

/* The lowest connection of set l of s, or NULL. */
static struct backend_conn *
backend_set_first(const struct backend_server *s, unsigned l)
{
    const guint64 *w = backend_set_word(s, l, 0);

    for (unsigned i = 0; i < s->nwords; i++) {
        if (w[i] != 0) {
            return &s->conns[i * 64 + (unsigned)__builtin_ctzll(w[i])];
        }
    }
    return NULL;
}

/*
 * Every change of a connection's state, so that these are its only
 * transitions:
 *   IDLE -> CONNECTING       backend_conn_open: a connect started
 *   CONNECTING -> CONNECTED  backend_conn_connected: TCP (and SASL) done
 *   any -> IDLE              backend_conn_close (closing an IDLE one
 *                            changes nothing: freeing or retiring a pool
 *                            closes every slot)
 * Any other is a defect (invariant_no_arrow: checked builds stop,
 * release builds log it, count it in hsp_invariant_errors_total and take
 * the step, as before the check: each caller survives it).  The open
 * gauge follows CONNECTED here, so it cannot drift from the states.
 */
static void
backend_conn_set_state(struct backend_conn *conn, enum backend_state to)
{
    enum backend_state from = conn->state;
    gboolean legal;

    switch (to) {
    case BACKEND_IDLE: legal = TRUE; break;
    case BACKEND_CONNECTING: legal = from == BACKEND_IDLE; break;
    case BACKEND_CONNECTED: legal = from == BACKEND_CONNECTING; break;
    default: legal = FALSE; break;
    }
    if (!legal) {
        invariant_no_arrow(G_STRLOC, backend_state_name,
                           G_N_ELEMENTS(backend_state_name), from, to,
                           "backend %s: conn %u", conn->server->srv->name,
                           conn->index);
    }
    /* a connection being opened or open has its socket; a closed one
     * has nothing pending (the pick's sets rely on it) */
    g_assert(to == BACKEND_IDLE || conn->bev != NULL);
    HSP_CHECK(to != BACKEND_IDLE || conn->npending == 0);
    if (from == BACKEND_CONNECTED && to != BACKEND_CONNECTED) {
        METRICS_ADD(conn->server->stats.open, -1);
    } else if (from != BACKEND_CONNECTED && to == BACKEND_CONNECTED) {
        METRICS_ADD(conn->server->stats.open, 1);
    }
    conn->state = to;
    backend_conn_index(conn);
}

struct backend_pool *
backend_pool_new(struct worker *w, struct worker_gen *gen)
{
    struct backend_pool *pool = g_new0(struct backend_pool, 1);
    const struct worker_settings *set = &gen->set;
    unsigned i, j;

    g_assert(w != NULL && w->base != NULL && w->health != NULL);
    g_assert(set->pool_size > 0);
    pool->worker = w;
    pool->gen = gen;
    worker_gen_use(w, gen);
    pool->set = set;
    pool->nservers = set->nservers;
    pool->servers = g_new0(struct backend_server, set->nservers);
    /* workers start at different servers so load spreads from the start */
    pool->next_server = set->nservers != 0 ? w->id % set->nservers : 0;
    TAILQ_INIT(&pool->waiting);
    pool->wait_timer = evtimer_new(w->base, backend_wait_cb, pool);
    for (i = 0; i < pool->nservers; i++) {
        struct backend_server *s = &pool->servers[i];

        s->pool = pool;
        s->srv = &set->servers[i];
        s->health = health_lookup(w->health, s->srv->name);
        s->conns = g_new0(struct backend_conn, set->pool_size);
        s->nwords = (set->pool_size + 63) / 64;
        s->sets = g_new0(guint64, (gsize)s->nwords * (BACKEND_LEVELS + 1));
        for (j = 0; j < set->pool_size; j++) {
            struct backend_conn *conn = &s->conns[j];

            conn->server = s;
            conn->index = j;
            conn->word = backend_set_word(s, 0, j);
            conn->bit = G_GUINT64_CONSTANT(1) << (j % 64);
            /* IDLE, nothing pending */
            conn->level = BACKEND_LEVELS;
            conn->word[BACKEND_LEVELS * s->nwords] |= conn->bit;
            TAILQ_INIT(&conn->pending);
            wire_buf_init(&conn->cork);
            conn->timer = evtimer_new(w->base, backend_timer_cb, conn);
        }
    }
    return pool;
}

/* Drops the socket; pending requests must have been taken off before. */
static void
backend_conn_close(struct backend_conn *conn)
{
    g_assert(TAILQ_EMPTY(&conn->pending));
    if (conn->corked) {
        /* its requests fail with it: they never left */
        TAILQ_REMOVE(&backend_worker(conn)->corked, conn, cork_link);
        conn->corked = 0;
        wire_buf_clear(&conn->cork);
    }
    /* before the socket goes with the bufferevent */
    g_clear_pointer(&conn->rev, event_free);
    g_clear_pointer(&conn->in, evbuffer_free);
    /* also cancels callbacks already deferred for it */
    g_clear_pointer(&conn->bev, bufferevent_free);
    if (conn->scan != NULL) {
        wire_scan_init(conn->scan);
    }
    g_clear_pointer(&conn->sasl, sasl_client_free);
    g_clear_pointer(&conn->sasl_raw, evbuffer_free);
    g_clear_pointer(&conn->sasl_held, evbuffer_free);
    g_clear_pointer(&conn->http, httpc_conn_free);
    g_clear_pointer(&conn->http_raw, evbuffer_free);
    g_clear_pointer(&conn->http_held, evbuffer_free);
    conn->http_busy = 0;
    conn->epoch++;
    evtimer_del(conn->timer);
    conn->timer_at = 0;
    backend_conn_set_state(conn, BACKEND_IDLE);
}

/* conn's scan of unframed replies, made on first use. */
static struct wire_scan *
backend_conn_scan(struct backend_conn *conn)
{
    if (conn->scan == NULL) {
        conn->scan = g_new(struct wire_scan, 1);
        wire_scan_init(conn->scan);
    }
    return conn->scan;
}

/*
 * Rewrites the reply (data, len) for the client of req into req->reply
 * and counts the buckets it touched.  stream: data is the front of an
 * unframed stream, and *used (when not NULL) is where the reply ended.
 */
static codec_status_t
backend_reply_rewrite(struct backend_conn *conn, struct req *req,
                      const uint8_t *data, size_t len, gboolean stream,
                      struct codec_error *err, size_t *used)
{
    struct worker *w = backend_worker(conn);
    struct codec_io io = {
        .data = data,
        .len = len,
        .from = backend_settings(conn)->backend_proto,
        .stream = stream,
        .to = req->client_proto,
        .backend_seqid = req->backend_seqid,
        .out = &req->reply,
        .limits = &w->reply_limits,
        .tally = &w->tally,
        .err = err,
    };
    codec_status_t cs = codec_reply(&io, &req->call);

    metrics_take_tally(w->metrics, &w->tally);
    if (cs == CODEC_OK) {
        /* the codec read the header: backend_reply_kind need not */
        req->err_kind = metrics_result_error(io.from, io.reply_type,
                                             data + io.reply_body,
                                             io.used - io.reply_body,
                                             req->call.method);
    }
    if (used != NULL) {
        *used = io.used;
    }
    return cs;
}

/*
 * The reply at the front of an unframed stream (buf, avail) for a client
 * request: rewritten by one walk when it came whole; else the scan walks
 * on through what arrives, and the whole reply is rewritten once it is
 * there.  Every byte is walked a bounded number of times however the
 * reply is cut.  WIRE_AGAIN: wait; WIRE_ERROR: *bad says why; else *cs
 * is the codec's answer and *len the reply's length.
 */
static wire_status_t
backend_reply_stream(struct backend_conn *conn, struct req *req,
                     const uint8_t *buf, size_t avail, codec_status_t *cs,
                     struct codec_error *err, size_t *len, const char **bad)
{
    struct worker *w = backend_worker(conn);
    const struct worker_settings *set = backend_settings(conn);
    struct wire_scan *scan = conn->scan;
    size_t mark = req->reply.len; /* the frame header, if any */
    wire_status_t st;

    if (scan == NULL || !wire_scan_started(scan)) {
        *cs = backend_reply_rewrite(conn, req, buf, avail, TRUE, err, len);
        if (*cs != CODEC_AGAIN) {
            return WIRE_OK;
        }
        req->reply.len = mark;
        scan = backend_conn_scan(conn);
    }
    st = wire_scan_feed(scan, set->backend_proto, buf, avail, &w->reply_limits,
                        len, bad);
    if (st == WIRE_AGAIN && avail >= w->reply_limits.max_message) {
        *bad = "message larger than max_frame_size";
        st = WIRE_ERROR;
    }
    if (st != WIRE_OK) {
        return st;
    }
    wire_scan_init(scan);
    *cs = backend_reply_rewrite(conn, req, buf, *len, FALSE, err, NULL);
    return WIRE_OK;
}

void
backend_pool_free(struct backend_pool *pool)
{
    unsigned i, j;
    struct req *req;

    g_assert(pool != NULL && pool->worker != NULL);
    while ((req = TAILQ_FIRST(&pool->waiting)) != NULL) {
        /* detached too: its client went with the others */
        TAILQ_REMOVE(&pool->waiting, req, backend_link);
        if (req->client == NULL) {
            worker_req_put(pool->worker, req);
        }
    }
    pool->nwaiting = 0;
    event_free(pool->wait_timer);
    for (i = 0; i < pool->nservers; i++) {
        struct backend_server *s = &pool->servers[i];

        for (j = 0; j < pool->set->pool_size; j++) {
            struct backend_conn *conn = &s->conns[j];

            /* clients are gone by now: every request here is detached */
            while ((req = TAILQ_FIRST(&conn->pending)) != NULL) {
                TAILQ_REMOVE(&conn->pending, req, backend_link);
                req->conn = NULL;
                if (req->client == NULL) {
                    worker_req_put(pool->worker, req);
                }
            }
            conn->npending = 0;
            backend_conn_close(conn);
            wire_buf_free(&conn->cork);
            wire_buf_free(&conn->marks);
            g_free(conn->scan);
            event_free(conn->timer);
        }
        g_free(s->conns);
        g_free(s->sets);
    }
    g_free(pool->servers);
    worker_gen_unuse(pool->worker, pool->gen);
    g_free(pool);
}

gboolean
backend_pool_idle(const struct backend_pool *pool)
{
    g_assert(pool != NULL);
    if (!pool->retired || pool->scanners > 0 || pool->nwaiting > 0) {
        return FALSE;
    }
    for (unsigned i = 0; i < pool->nservers; i++) {
        for (unsigned j = 0; j < pool->set->pool_size; j++) {
            if (pool->servers[i].conns[j].state != BACKEND_IDLE) {
                return FALSE;
            }
        }
    }
    return TRUE;
}

void
backend_pool_fold(struct backend_pool *pool)
{
    /* only a pool about to be freed hands its counters over, or they
     * would count twice */
    g_assert(backend_pool_idle(pool));
    for (unsigned i = 0; i < pool->nservers; i++) {
        struct backend_server *s = &pool->servers[i];
        struct health_shared *h = s->health;

        h->retired_requests += METRICS_GET(s->stats.requests);
        h->retired_failures += METRICS_GET(s->stats.failures);
        for (unsigned k = 0; k < METRICS_ERR_KINDS; k++) {
            h->retired_errors[k] += METRICS_GET(s->stats.errors[k]);
        }
        h->retired_connect_failures += METRICS_GET(s->stats.connect_failures);
    }
}

void
backend_pool_retire(struct backend_pool *pool)
{
    g_assert(pool != NULL && !pool->retired);
    g_assert(backend_on_worker(pool->worker));
    pool->retired = TRUE;
    for (unsigned i = 0; i < pool->nservers; i++) {
        for (unsigned j = 0; j < pool->set->pool_size; j++) {
            struct backend_conn *conn = &pool->servers[i].conns[j];

            if (conn->npending == 0) {
                backend_conn_close(conn);
            }
        }
    }
}

unsigned
backend_pool_pending(const struct backend_pool *pool)
{
    unsigned i, j, n = 0;

    g_assert(pool != NULL);
    n = pool->nwaiting;
    for (i = 0; i < pool->nservers; i++) {
        for (j = 0; j < pool->set->pool_size; j++) {
            n += pool->servers[i].conns[j].npending;
        }
    }
    return n;
}

static gint64 backend_conn_retry_at(struct backend_conn *conn, gboolean now);

/*
 * Arms the one timer for the nearest deadline of conn.  A timer already
 * due no later stays as it is: it re-arms itself when it fires early
 * (backend_timer_cb), which costs one wake-up per request timeout
 * instead of an event_add per reply on a pipelined connection.
 */
static void
backend_conn_arm(struct backend_conn *conn)
{
    struct req *head = TAILQ_FIRST(&conn->pending);
    gint64 at = G_MAXINT64, delta;
    struct timeval tv;

    if (conn->state == BACKEND_IDLE) {
        evtimer_del(conn->timer);
        conn->timer_at = 0;
        return;
    }
    if (head == NULL && conn->server->pool->retired) {
        /* replaced by a reload: nothing more is coming on it */
        backend_conn_close(conn);
        return;
    }
    if (conn->state == BACKEND_CONNECTING) {
        at = conn->connect_deadline;
    }
    if (head != NULL) {
        unsigned ms = backend_worker(conn)->gen->cfg->read_retry_after_ms;
        gint64 now = req_now(), retry, retry_min = G_MAXINT64;

        at = MIN(at, head->deadline);
        if (ms != 0 && conn->state == BACKEND_CONNECTED) {
            /* backend_conn_retry_at answers this or never */
            retry_min = MAX(conn->answer_since + (gint64)ms * 1000, now);
        }
        if (conn->timer_at != 0 && at != G_MAXINT64 &&
            conn->timer_at <= MIN(at, retry_min)) {
            /* due no later than anything below can ask: it stays, and
             * the queue is not walked (a point call came here twice) */
            return;
        }
        retry = backend_conn_retry_at(conn, FALSE);
        /* one already due waits for a server that can take the reads */
        if (retry > now || (retry != G_MAXINT64 &&
                            backend_conn_retry_at(conn, TRUE) != G_MAXINT64)) {
            at = MIN(at, MAX(retry, now));
        }
    } else if (conn->state == BACKEND_CONNECTED) {
        at = conn->last_active + (gint64)BACKEND_IDLE_CLOSE_MS * 1000;
        if (conn->sasl != NULL) {
            at = MIN(at, backend_sasl_stale_at(conn));
        }
    }
    if (at == G_MAXINT64) {
        evtimer_del(conn->timer);
        conn->timer_at = 0;
        return;
    }
    if (conn->timer_at != 0 && conn->timer_at <= at) {
        return;
    }
    delta = MAX(at - req_now(), 0);
    tv.tv_sec = (time_t)(delta / G_USEC_PER_SEC);
    tv.tv_usec = (suseconds_t)(delta % G_USEC_PER_SEC);
    evtimer_add(conn->timer, &tv);
    conn->timer_at = at;
}

/* Whether a connection's failure of server for why is logged in full
 * (the first of a burst: lograte.h) or only counted. */
static gboolean
backend_log_note(const struct backend_server *s, GLogLevelFlags level,
                 const char *why, unsigned failed)
{
    char head[BACKEND_MSG_MAX];
    char tail[BACKEND_MSG_MAX];

    g_snprintf(head, sizeof(head), "backend %s", s->srv->name);
    g_snprintf(tail, sizeof(tail), ": %s", why);
    return lograte_note(level, head, tail, NULL, failed);
}

/*
 * The oldest request on conn has the connection to itself from now: HBase
 * answers one call per connection at a time, so a request pipelined
 * behind others (or held by a connect) has waited for a free connection
 * until here.  Internal requests count too (their started is set).
 */
static void
backend_conn_turn(struct backend_conn *conn, gint64 now)
{
    struct req *req = TAILQ_FIRST(&conn->pending);

    if (req != NULL && !req->queued && req->started != 0 &&
        conn->state == BACKEND_CONNECTED) {
        req->queued = 1;
        metrics_queue_wait(backend_worker(conn)->metrics, now - req->started);
    }
}

/* conn is open (and negotiated): requests go out from now. */
static void
backend_conn_connected(struct backend_conn *conn)
{
    backend_conn_set_state(conn, BACKEND_CONNECTED);
    conn->server->retry_at = 0;
    conn->last_active = req_now();
    conn->answer_since = conn->last_active;
    backend_conn_turn(conn, conn->last_active);
    backend_http_send(conn);
}

/*
 * Reads that retry.  A client's read (a method of kind HBASE1_READ: the
 * get*, getRow*, getRows* calls, Thrift2's get, getMultiple, exists,
 * existsAll) whose connection fails before its answer is sent again, as
 * it was, to another server that is up (or, when none is, to the same
 * server on a new connection: a reset connection is not a dead server),
 * within its own deadline (request_timeout_ms from when it was first
 * sent): a read applied twice changes nothing.  Not a read that timed
 * out itself (its time is spent), and not to a server it stalled on.
 * Writes keep the at-most-once rule (moved only when no byte of them
 * reached a server: backend_connect_failed); increments and appends are
 * writes.  Scanner calls are the scan engine's (scan.c resumes a lost
 * bucket).
 *
 * The first BACKEND_REREADS go at once.  A read past them, or one that
 * no server can take right now (every server of its service down or
 * holding off after a refused connect), waits (backend_wait) and is
 * tried again every BACKEND_WAIT_STEP_MS, for at most BACKEND_WAIT_MAX_MS
 * and within its deadline, up to BACKEND_REREADS_MAX sends in all.  Why:
 * a reset of every connection of a server fails them one by one as the
 * loop reaches them, and a read sent again at once may land on one whose
 * reset is still to be read (each is a send); a server that is alone up
 * may be briefly held off.  A moment later the dead connections are
 * gone and a server takes it, while a failing read still costs a bounded
 * number of sends.  A new read that no server can take waits the same
 * way, but only while a DOWN server's next probe may find it back
 * (backend_may_come_back).
 */
#define BACKEND_REREADS 3
#define BACKEND_REREADS_MAX 7 /* req->rereads holds it */
#define BACKEND_WAIT_STEP_MS 50
#define BACKEND_WAIT_MAX_MS 1000

/* Whether req is a client's read whose message is kept (raw). */
static gboolean
backend_req_rereadable(const struct req *req)
{
    return req->sink == NULL && req->call.method != NULL &&
           req->call.method->kind == HBASE1_READ;
}

static struct backend_conn *backend_pick(struct backend_pool *pool, int only,
                                         uint8_t service, int avoid,
                                         gint64 now);
static uint8_t backend_req_service(const struct req *req);
static void backend_unavailable(struct backend_pool *pool, struct req *req);

/* Whether req, a client's read (new, already sent, or held by a
 * connect), may be sent (again) at now: to a server that can take it, at
 * once or after a wait. */
static gboolean
backend_may_reread(const struct req *req, gint64 now)
{
    return req->client != NULL && backend_req_rereadable(req) &&
           !req->timed_out && req->rereads < BACKEND_REREADS_MAX &&
           req->deadline > now && req->backend_len > 0 &&
           req->raw.len == req->backend_len &&
           (req->wait_until == 0 || req->wait_until > now);
}

/*
 * Whether a server of req's service may take req soon: one that is UP
 * and not holding off after a refused connect, or one that is DOWN but
 * with no failed probe started since req came (health_down_since): a
 * server back from DOWN is taken again only when its next probe answers.
 * A new read that no server can take waits while this holds, so it is
 * answered when the server is back and fails within a probe interval
 * when it is not; a server that is only holding off (its connect was
 * refused, a SASL negotiation refused) fails it at once, as before.
 */
static gboolean
backend_may_come_back(const struct backend_pool *pool, const struct req *req,
                      gint64 now)
{
    uint8_t service = backend_req_service(req);

    for (unsigned i = 0; i < pool->nservers; i++) {
        const struct backend_server *s = &pool->servers[i];

        if (s->srv->service != service) {
            continue;
        }
        if (health_is_up(s->health)
                ? s->retry_at <= now
                : !health_down_since(s->health, req->started)) {
            return TRUE;
        }
    }
    return FALSE;
}

/* req waits for a server to take it again (above). */
static void
backend_wait(struct backend_pool *pool, struct req *req, gint64 now)
{
    struct timeval tv = { 0, BACKEND_WAIT_STEP_MS * 1000 };

    if (req->wait_until == 0) {
        req->wait_until = MIN(req->deadline,
                              now + (gint64)BACKEND_WAIT_MAX_MS * 1000);
    }
    req->conn = NULL;
    TAILQ_INSERT_TAIL(&pool->waiting, req, backend_link);
    pool->nwaiting++;
    if (!evtimer_pending(pool->wait_timer, NULL)) {
        evtimer_add(pool->wait_timer, &tv);
    }
}

/* The server req goes to again: not one it stalled on, nor at (where its
 * connection just failed) while another can take it; -1 if any. */
static int
backend_reread_avoid(struct backend_pool *pool, const struct req *req, int at,
                     gint64 now)
{
    if (req->stalled_on >= 0) {
        return req->stalled_on;
    }
    if (at >= 0 &&
        backend_pick(pool, -1, backend_req_service(req), at, now) != NULL) {
        return at;
    }
    return -1;
}

/* Sends the reads of q again, in their order, on one connection where
 * they can share it: of another server than at's when one can take them,
 * else of at's; those past the first sends, or that no server can take
 * now, wait. */
static void
backend_reread(struct backend_pool *pool, struct req_queue *q, int at)
{
    struct backend_conn *to = NULL;
    struct req *req;
    const struct client *held = NULL; /* a client with a read waiting */
    gint64 now = req_now();

    while ((req = TAILQ_FIRST(q)) != NULL) {
        int avoid = backend_reread_avoid(pool, req, at, now);

        TAILQ_REMOVE(q, req, backend_link);
        req->conn = NULL;
        if (req->rereads >= BACKEND_REREADS || req->client == held ||
            backend_pick(pool, -1, backend_req_service(req), avoid, now) ==
                NULL) {
            /* its client's later reads wait behind it: a call the client
             * sends next follows the last of them, which must not leave
             * an earlier one behind */
            held = req->client;
            backend_wait(pool, req, now);
            continue;
        }
        req->rereads++;
        if (to != NULL && (!backend_conn_takes(pool, to) ||
                           to->server - pool->servers == avoid)) {
            to = NULL;
        }
        to = backend_submit_at(pool, req, to, req->raw.data, req->raw.len,
                               avoid, FALSE, FALSE);
    }
}

/* Tries the waiting reads again: each goes, waits on, or fails. */
static void
backend_wait_cb(evutil_socket_t fd, short what, void *arg)
{
    struct backend_pool *pool = arg;
    struct worker *w = pool->worker;
    struct req_queue q;
    struct req *req;
    struct client *held = NULL; /* a client with a read waiting on */
    struct backend_conn *to = NULL;
    const struct client *to_client = NULL;
    gint64 now = req_now();

    (void)fd;
    (void)what;
    TAILQ_INIT(&q);
    TAILQ_CONCAT(&q, &pool->waiting, backend_link);
    pool->nwaiting = 0;
    while ((req = TAILQ_FIRST(&q)) != NULL) {
        int avoid = req->stalled_on;

        TAILQ_REMOVE(&q, req, backend_link);
        if (req->client != NULL && req->client == held &&
            backend_may_reread(req, now)) {
            /* an earlier read of its client waits on: it must not be
             * overtaken (the client's later calls follow this one) */
            backend_wait(pool, req, now);
        } else if (req->client == NULL) {
            /* its client left: nobody waits for it */
            worker_req_finish(w, req);
        } else if (!backend_may_reread(req, now)) {
            /* its wait is over: the error names why each server could
             * not take it (a SASL refusal, a refused connect, down), as
             * for a read no server can take at once */
            backend_unavailable(pool, req);
        } else if (backend_pick(pool, -1, backend_req_service(req), avoid,
                                now) == NULL) {
            if (req->wait_probe && !backend_may_come_back(pool, req, now)) {
                /* new, and the probes say no server is back */
                backend_unavailable(pool, req);
                continue;
            }
            held = req->client;
            backend_wait(pool, req, now);
        } else {
            /* one client's reads go on one connection, in their order,
             * where it takes them: its next call follows the last */
            if (to != NULL &&
                (to_client != req->client || !backend_conn_takes(pool, to) ||
                 to->server - pool->servers == avoid)) {
                to = NULL;
            }
            to_client = req->client;
            if (!req->wait_probe) {
                req->rereads++; /* a new read's first send is none */
            }
            req->wait_until = 0; /* a later loss may wait again */
            req->wait_probe = 0;
            to = backend_submit_at(pool, req, to, req->raw.data, req->raw.len,
                                   avoid, FALSE, FALSE);
        }
    }
}

/*
 * Reads on a stalled server.  A server that stops answering (a long GC
 * pause, a stopped process, a network that drops without a reset) keeps
 * its connections open: a read sent there would wait its whole
 * request_timeout_ms and fail while another server could answer it at
 * once.  So when the oldest request of a connection has had no answer
 * for [backend] read_retry_after_ms, the reads on it that may go again
 * are sent, in their order, to another server that is up, within what
 * is left of their own request_timeout_ms: the client's timeout stays the
 * bound it sees, and its replies keep their order (the client's FIFO).
 * Each leaves a placeholder in its place, a detached request with its
 * sequence id: the server's late answer is read and dropped as a
 * departed client's is (the first answer wins), the requests left on
 * the connection keep their pairing, and a write there is neither
 * failed early nor sent twice: it stays, and fails or completes on its
 * own.  Reads of other clients behind a write move too (they were not
 * sent after it by their client: nothing orders them after it), but a
 * client's read behind a call of its own that stays (a write, an
 * increment) stays behind it: HBase applies one connection's calls in
 * order, and a client that pipelines a read after its write must see
 * the write.  The connection itself times out as before when the server
 * stays silent until the oldest call's deadline (a health failure); a
 * slow answer within it is no failure.
 */
/* How far into a connection's queue movable reads are looked for. */
#define BACKEND_MOVE_SCAN 256

/* Whether req, on conn, may be sent to another server early. */
static gboolean
backend_req_movable(const struct req *req, gint64 at)
{
    return backend_req_rereadable(req) && req->client != NULL &&
           req->server < 0 && !req->timed_out &&
           req->rereads < BACKEND_REREADS_MAX && req->deadline > at &&
           req->backend_len > 0 && req->raw.len == req->backend_len;
}

/* Whether a call of req's client before req on the connection stays
 * there (req must stay behind it): a write or increment, or a read that
 * may not go again (its resends spent, its deadline near).  A read that
 * moved ahead of its client's own earlier read would let the client's
 * next call (sent after the moved one) take effect before that read. */
static gboolean
backend_req_held(const struct backend_conn *conn, const struct req *req,
                 gint64 at)
{
    const struct req *q;

    TAILQ_FOREACH (q, &conn->pending, backend_link) {
        if (q == req) {
            return FALSE;
        }
        if (q->client == req->client && !backend_req_movable(q, at)) {
            return TRUE;
        }
    }
    return FALSE;
}

/* Whether req, on conn, goes to another server when conn stalls. */
static gboolean
backend_req_moves(const struct backend_conn *conn, const struct req *req,
                  gint64 at)
{
    return backend_req_movable(req, at) && !backend_req_held(conn, req, at);
}

/*
 * When the reads on conn go to another server (G_MAXINT64: none may);
 * when now is set, also that another server can take them.
 */
static gint64
backend_conn_retry_at(struct backend_conn *conn, gboolean now)
{
    struct backend_pool *pool = conn->server->pool;
    unsigned ms = backend_worker(conn)->gen->cfg->read_retry_after_ms;
    int self = (int)(conn->server - pool->servers);
    gint64 at = conn->answer_since + (gint64)ms * 1000;
    struct req *req;
    unsigned n = 0;

    if (ms == 0 || conn->state != BACKEND_CONNECTED) {
        return G_MAXINT64;
    }
    TAILQ_FOREACH (req, &conn->pending, backend_link) {
        if (++n > BACKEND_MOVE_SCAN) {
            break;
        }
        /* a placeholder, or a read whose client left: nobody waits;
         * a call that stays: the reads behind it may still go */
        if (!backend_req_moves(conn, req, MAX(at, req_now()))) {
            continue;
        }
        if (now && backend_pick(pool, -1, conn->server->srv->service, self,
                                req_now()) == NULL) {
            return G_MAXINT64;
        }
        return at;
    }
    return G_MAXINT64;
}

/* Sends the reads on conn that may go to another server, each leaving a
 * placeholder (above). */
static void
backend_conn_move_reads(struct backend_conn *conn)
{
    struct worker *w = backend_worker(conn);
    struct backend_pool *pool = conn->server->pool;
    struct req_queue moved;
    struct req *req, *next, *ph;
    int self = (int)(conn->server - pool->servers);
    unsigned n = 0, seen = 0;

    TAILQ_INIT(&moved);
    for (req = TAILQ_FIRST(&conn->pending);
         req != NULL && seen < BACKEND_MOVE_SCAN; req = next) {
        next = TAILQ_NEXT(req, backend_link);
        seen++;
        if (!backend_req_moves(conn, req, req_now())) {
            continue;
        }
        ph = worker_req_get(w);
        req_set_state(ph, REQ_SENT);
        ph->conn = conn;
        ph->backend_seqid = req->backend_seqid;
        ph->backend_len = req->backend_len;
        ph->backend_name = req->backend_name;
        ph->deadline = req->deadline;
        ph->started = req->started;
        ph->queued = req->queued;
        TAILQ_INSERT_BEFORE(req, ph, backend_link);
        TAILQ_REMOVE(&conn->pending, req, backend_link);
        req->stalled = 1;
        req->stalled_on = self; /* not back here */
        TAILQ_INSERT_TAIL(&moved, req, backend_link);
        n++;
    }
    if (n == 0) {
        return;
    }
    g_message("backend %s: conn %u: no answer in %u ms "
              "(read_retry_after_ms): %u read%s sent to another server",
              conn->server->srv->name, conn->index,
              w->gen->cfg->read_retry_after_ms, n, n == 1 ? "" : "s");
    backend_reread(pool, &moved, self);
}

/*
 * Fails every request pending on conn and closes it.  The oldest request
 * gets head_why, the others rest_why (a timeout is the head's; those
 * behind it only lose their connection).  Both are the reason part of
 * "hbase-salt-proxy: backend HOST:PORT: REASON".
 */
static void
backend_conn_fail_log(struct backend_conn *conn, const char *head_why,
                      const char *rest_why, gboolean can_retry, gboolean log)
{
    struct worker *w = backend_worker(conn);
    struct backend_pool *pool = conn->server->pool;
    int at = (int)(conn->server - pool->servers);
    struct req_queue failed, again;
    struct req *req, *head, *next;
    char msg[BACKEND_MSG_MAX];
    unsigned n = conn->npending, nagain = 0;
    gint64 now = req_now();

    /* the connection is consistent (closed, empty) before any client
     * hears about it: flushing a client may lead to a new submit */
    TAILQ_INIT(&failed);
    TAILQ_CONCAT(&failed, &conn->pending, backend_link);
    METRICS_ADD(conn->server->stats.inflight, -(gint64)n);
    METRICS_ADD(conn->server->stats.failures, n);
    METRICS_ADD(conn->server->stats.errors[METRICS_ERR_TRANSPORT], n);
    conn->npending = 0;
    backend_conn_counted(conn);
    backend_conn_close(conn);
    if (!log) {
        g_debug("backend %s: conn %u: %s (%u request%s failed)",
                conn->server->srv->name, conn->index, head_why, n,
                n == 1 ? "" : "s");
    } else if (!backend_log_note(conn->server,
                                 n > 0 ? G_LOG_LEVEL_WARNING
                                       : G_LOG_LEVEL_MESSAGE,
                                 head_why, n)) {
        /* counted: a frozen server fails every connection at once, and
         * one line a period says how many */
    } else if (n > 0) {
        g_warning("backend %s: conn %u: %s (%u request%s failed)",
                  conn->server->srv->name, conn->index, head_why, n,
                  n == 1 ? "" : "s");
    } else {
        g_message("backend %s: conn %u: %s", conn->server->srv->name,
                  conn->index, head_why);
    }
    /* the reads among them go to another server first, in their order:
     * a client's later calls may queue behind them */
    head = TAILQ_FIRST(&failed);
    TAILQ_INIT(&again);
    for (req = head; req != NULL; req = next) {
        next = TAILQ_NEXT(req, backend_link);
        if (backend_may_reread(req, now)) {
            TAILQ_REMOVE(&failed, req, backend_link);
            TAILQ_INSERT_TAIL(&again, req, backend_link);
            nagain++;
        }
    }
    if (nagain > 0) {
        g_message("backend %s: conn %u: %u read%s sent again",
                  conn->server->srv->name, conn->index, nagain,
                  nagain == 1 ? "" : "s");
        backend_reread(pool, &again, at);
    }
    while ((req = TAILQ_FIRST(&failed)) != NULL) {
        TAILQ_REMOVE(&failed, req, backend_link);
        if (req->client != NULL || req->sink != NULL) {
            g_snprintf(msg, sizeof(msg), "hbase-salt-proxy: backend %s: %s",
                       conn->server->srv->name,
                       req == head ? head_why : rest_why);
            req_io_error(req, msg, can_retry);
            req->err_kind = METRICS_ERR_TRANSPORT;
        }
        worker_req_finish(w, req);
    }
}

static void
backend_conn_fail(struct backend_conn *conn, const char *head_why,
                  const char *rest_why, gboolean can_retry)
{
    backend_conn_fail_log(conn, head_why, rest_why, can_retry, TRUE);
}

/*
 * Takes the requests of conn whose messages never left (all of them: its
 * held or output buffer holds their messages, in queue order) off it,
 * into moved, their messages into bytes.  With drop, those pinned to
 * their server or past their deadline stay, to fail with conn, and with
 * one server all but the reads that may be sent again.
 */
static void
backend_conn_unsent(struct backend_conn *conn, gint64 now, gboolean drop,
                    struct req_queue *moved, struct wire_buf *bytes)
{
    struct evbuffer *out = conn->sasl_held != NULL ? conn->sasl_held
                           : conn->http_held != NULL
                               ? conn->http_held
                               : bufferevent_get_output(conn->bev);
    struct req *req, *next;

    for (req = TAILQ_FIRST(&conn->pending); req != NULL; req = next) {
        next = TAILQ_NEXT(req, backend_link);
        if (evbuffer_get_length(out) < req->backend_len) {
            break;
        }
        /* with one server only the reads move (they wait for it:
         * backend_wait), the others fail */
        if (drop && (req->server >= 0 || req->deadline <= now ||
                     (conn->server->pool->nservers == 1 &&
                      !backend_may_reread(req, now)))) {
            evbuffer_drain(out, req->backend_len);
            continue;
        }
        evbuffer_remove(out, wire_buf_reserve(bytes, req->backend_len),
                        req->backend_len);
        bytes->len += req->backend_len;
        TAILQ_REMOVE(&conn->pending, req, backend_link);
        conn->npending--;
        backend_conn_counted(conn);
        METRICS_ADD(conn->server->stats.inflight, -1);
        TAILQ_INSERT_TAIL(moved, req, backend_link);
    }
}

/* Sends the requests of moved (their messages in bytes, in order) on,
 * together, avoiding server avoid; frees bytes. */
static void
backend_resubmit(struct backend_pool *pool, struct req_queue *moved,
                 struct wire_buf *bytes, int avoid)
{
    struct backend_conn *to = NULL;
    struct req *req;
    size_t off = 0;

    while ((req = TAILQ_FIRST(moved)) != NULL) {
        /* the submit may finish req (no server takes it), and a finished
         * request may be freed: its length is read first */
        size_t len = req->backend_len;

        TAILQ_REMOVE(moved, req, backend_link);
        req->conn = NULL;
        if (to != NULL && !backend_conn_takes(pool, to)) {
            to = NULL;
        }
        to = backend_submit_at(pool, req, to, bytes->data + off, len, avoid,
                               FALSE, FALSE);
        off += len;
    }
    wire_buf_free(bytes);
}

/*
 * A connect attempt failed: remember why, hold off the server, and move
 * the requests queued behind the connect to another server.  None of
 * them reached the server (there was no connection), so moving them
 * cannot apply a write twice; only those pinned to this server (scanner
 * calls) fail here.  They move together, in their order, onto one
 * connection: a client's pipelined calls were queued there in the order
 * it sent them, and must reach the next server in that order too.
 */
static void
backend_connect_failed(struct backend_conn *conn, const char *why,
                       gboolean log)
{
    struct backend_server *s = conn->server;
    struct backend_pool *pool = s->pool;
    struct req_queue moved;
    struct wire_buf bytes;
    gint64 now = req_now();

    s->retry_at = now + (gint64)BACKEND_RETRY_MS * 1000;
    METRICS_ADD(s->stats.connect_failures, 1);
    g_snprintf(s->last_error, sizeof(s->last_error), "%s", why);
    health_failed(s->health, why);
    TAILQ_INIT(&moved);
    wire_buf_init(&bytes);
    if (conn->bev != NULL) {
        backend_conn_unsent(conn, now, TRUE, &moved, &bytes);
    }
    backend_conn_fail_log(conn, why, why, TRUE, log);
    backend_resubmit(pool, &moved, &bytes, (int)(s - pool->servers));
}

/*
 * HTTP: the server closes conn after the reply just taken: the requests
 * held behind it (none of them sent) go, in their order, on a new
 * connection, as if they had come now.
 */
static void
backend_http_closed(struct backend_conn *conn)
{
    struct req_queue moved;
    struct wire_buf bytes;

    g_debug("backend %s: conn %u: the server closes it after a reply",
            conn->server->srv->name, conn->index);
    TAILQ_INIT(&moved);
    wire_buf_init(&bytes);
    backend_conn_unsent(conn, req_now(), FALSE, &moved, &bytes);
    backend_conn_close(conn);
    backend_resubmit(conn->server->pool, &moved, &bytes, -1);
}

/* Starts a non-blocking connect; FALSE (with why) if it failed at once. */
static gboolean
backend_conn_open(struct backend_conn *conn, char *why, size_t whylen)
{
    struct worker *w = backend_worker(conn);
    const struct worker_server *srv = conn->server->srv;

    if (backend_settings(conn)->backend_http) {
        g_autoptr(GError) err = NULL;

        /* HTTP mode: the POSTs go out on this connection itself, TLS
         * too with [backend] https */
        conn->bev = httpc_conn_bufferevent(w->base, &srv->http, &err);
        if (conn->bev == NULL) {
            g_snprintf(why, whylen, "HTTP: %s", err->message);
            return FALSE;
        }
    } else {
        conn->bev = bufferevent_socket_new(w->base, -1,
                                           BEV_OPT_CLOSE_ON_FREE |
                                               BEV_OPT_DEFER_CALLBACKS);
    }
    if (conn->bev == NULL) {
        g_snprintf(why, whylen, "connect: cannot create a socket buffer");
        return FALSE;
    }
    /* the bufferevent connects and writes; reading is backend_read_cb's
     * (with TLS: backend_tls_read_cb's, through the bufferevent) */
    bufferevent_setcb(conn->bev, NULL, NULL, backend_event_cb, conn);
    bufferevent_enable(conn->bev, EV_WRITE);
    if (bufferevent_socket_connect(conn->bev, (struct sockaddr *)&srv->addr,
                                   (int)srv->addrlen) < 0) {
        int err = EVUTIL_SOCKET_ERROR();

        g_snprintf(why, whylen, "connect: %s",
                   evutil_socket_error_to_string(err));
        bufferevent_free(conn->bev);
        conn->bev = NULL;
        return FALSE;
    }
    if (backend_settings(conn)->backend_http) {
        conn->http = httpc_conn_new(&srv->http, backend_sasl_creds(conn));
        conn->http_held = evbuffer_new();
    }
    if (backend_settings(conn)->backend_sasl &&
        !backend_settings(conn)->backend_http) {
        /* nothing goes out before the negotiation, so requests wait
         * here rather than in the bufferevent */
        conn->sasl_held = evbuffer_new();
    }
    backend_conn_set_state(conn, BACKEND_CONNECTING);
    conn->connect_deadline =
        req_now() + (gint64)backend_settings(conn)->connect_timeout_ms * 1000;
    g_debug("backend %s: conn %u: connecting (worker %u)", srv->name,
            conn->index, w->id);
    return TRUE;
}

/* The service a request's server must speak: its client's (the codec
 * records it), Thrift1 for a call the codec never named. */
static uint8_t
backend_req_service(const struct req *req)
{
    return req->call.service != NULL ? req->call.service->id
                                     : HBASE1_SERVICE_THRIFT1;
}

/*
 * On server s, the connection with the fewest pending, an open one
 * before one that must connect first (IDLE ones not at all in backoff),
 * the lowest index among equals: by walking every one.
 */
static struct backend_conn *
backend_server_walk(const struct backend_server *s, gboolean backoff)
{
    struct backend_conn *best = NULL;

    for (unsigned j = 0; j < s->pool->set->pool_size; j++) {
        struct backend_conn *conn = &s->conns[j];

        /* in backoff, open connections still serve; none is dialled */
        if (backoff && conn->state == BACKEND_IDLE) {
            continue;
        }
        if (best == NULL || conn->npending < best->npending ||
            (conn->npending == best->npending && best->state == BACKEND_IDLE &&
             conn->state != BACKEND_IDLE)) {
            best = conn;
        }
    }
    return best;
}

/* The same connection as backend_server_walk, from the sets (backend.h):
 * a free open one, else an IDLE one, else the least loaded; the walk
 * only when all are deep. */
static struct backend_conn *
backend_server_pick(const struct backend_server *s, gboolean backoff)
{
    struct backend_conn *best;

    best = backend_set_first(s, 0);
    if (best == NULL && !backoff) {
        best = backend_set_first(s, BACKEND_LEVELS);
    }
    for (unsigned l = 1; best == NULL && l < BACKEND_LEVELS; l++) {
        best = backend_set_first(s, l);
    }
    if (best == NULL && s->deep > 0) {
        /* every open one is deep: fewer than in any set */
        return backend_server_walk(s, backoff);
    }
#if HSP_CHECKED
    /* the tests run checked builds: every pick of theirs checks the
     * sets against the walk */
    HSP_CHECK(best == backend_server_walk(s, backoff));
#endif
    return best;
}

/*
 * The connection for the next request: UP servers in round robin,
 * skipping avoid (-1: none) and those in connect backoff; on a server,
 * the connection with the fewest pending, an open one before one that
 * must connect first.  NULL when no server can take it.
 */
static struct backend_conn *
backend_pick(struct backend_pool *pool, int only, uint8_t service, int avoid,
             gint64 now)
{
    unsigned i;

    for (i = 0; i < pool->nservers; i++) {
        unsigned at = (pool->next_server + i) % pool->nservers;
        struct backend_server *s = &pool->servers[at];

        /* a scanner's calls must reach the server holding its scanners;
         * the others, a server of their client's service */
        if ((only >= 0 && at != (unsigned)only) ||
            (only < 0 && s->srv->service != service) || (int)at == avoid ||
            !backend_server_up(s)) {
            continue;
        }
        struct backend_conn *best = backend_server_pick(s, s->retry_at > now);

        if (best == NULL) {
            continue;
        }
        pool->next_server = (at + 1) % pool->nservers;
        return best;
    }
    return NULL;
}

int
backend_pool_pick_server(struct backend_pool *pool, uint8_t service)
{
    static unsigned next;
    unsigned start = (unsigned)g_atomic_int_add((gint *)&next, 1);
    gint64 now = req_now();
    int up = -1, first = -1;

    g_assert(pool != NULL && pool->nservers > 0);
    g_assert(service < HBASE1_NSERVICES);
    g_assert(backend_on_worker(pool->worker));
    /* a scanner cannot move once open: prefer a server with no recent
     * failure, so one that just died gets no new scanner while the
     * count towards DOWN runs */
    for (unsigned i = 0; i < pool->nservers; i++) {
        unsigned at = (start + i) % pool->nservers;
        struct backend_server *s = &pool->servers[at];

        if (s->srv->service != service) {
            continue;
        }
        if (first < 0) {
            first = (int)at;
        }
        if (!backend_server_up(s)) {
            continue;
        }
        if (s->retry_at <= now &&
            g_atomic_int_get(&s->health->failures) == 0) {
            return (int)at;
        }
        if (up < 0) {
            up = (int)at;
        }
    }
    /* none of the service (its listener is off): the scanner's first
     * request fails on a server that cannot answer it */
    return up >= 0 ? up : first >= 0 ? first : (int)(start % pool->nservers);
}

/* Why server s cannot take a request now, for an IOError. */
static void
backend_server_why(struct backend_server *s, GString *out)
{
    if (!backend_server_up(s)) {
        g_mutex_lock(&s->health->lock);
        g_string_append_printf(out, "%s: down: %s", s->srv->name,
                               s->health->why);
        g_mutex_unlock(&s->health->lock);
    } else {
        g_string_append_printf(out, "%s: %s", s->srv->name,
                               s->last_error[0] != '\0' ? s->last_error
                                                        : "unavailable");
    }
}

/*
 * No server can take req: fail it at once, naming every server it could
 * have gone to and why not (can_retry: the condition is transient).
 */
static void
backend_unavailable(struct backend_pool *pool, struct req *req)
{
    GString *text = g_string_new("hbase-salt-proxy: ");
    uint8_t service = backend_req_service(req);
    unsigned n = 0, only = 0;

    for (unsigned i = 0; i < pool->nservers; i++) {
        if (pool->servers[i].srv->service == service) {
            n++;
            only = i;
        }
    }
    if (req->server >= 0 || n == 1) {
        struct backend_server *s =
            &pool->servers[req->server >= 0 ? (unsigned)req->server : only];

        g_string_append(text, "backend ");
        backend_server_why(s, text);
        METRICS_ADD(s->stats.errors[METRICS_ERR_TRANSPORT], 1);
    } else if (n == 0) {
        g_string_append(text, "no backend server configured for this "
                              "service");
    } else {
        gboolean first = TRUE;

        g_string_append(text, "no backend server available: ");
        for (unsigned i = 0; i < pool->nservers && text->len < 1024; i++) {
            if (pool->servers[i].srv->service != service) {
                continue;
            }
            if (!first) {
                g_string_append(text, "; ");
            }
            first = FALSE;
            backend_server_why(&pool->servers[i], text);
        }
    }
    req_io_error(req, text->str, TRUE);
    req->err_kind = METRICS_ERR_TRANSPORT;
    g_string_free(text, TRUE);
    worker_req_finish(pool->worker, req);
}

const char *
backend_pool_server_name(const struct backend_pool *pool, int i)
{
    g_assert(pool != NULL);
    return i >= 0 && (unsigned)i < pool->nservers
               ? pool->servers[i].health->name
               : NULL;
}

gboolean
backend_conn_takes(const struct backend_pool *pool,
                   const struct backend_conn *conn)
{
    g_assert(pool != NULL && conn != NULL && conn->server != NULL);
    return conn->server->pool == pool && conn->state != BACKEND_IDLE &&
           backend_server_up(conn->server);
}

struct backend_conn *
backend_submit(struct backend_pool *pool, struct req *req,
               struct backend_conn *after, const uint8_t *msg, size_t len,
               gboolean more)
{
    g_assert(pool != NULL && req != NULL);
    g_assert(backend_on_worker(pool->worker));
    /* a request waits on one connection at a time */
    g_assert(req->conn == NULL);
    g_assert(msg != NULL && len > 0);
    /* the caller checked it (backend_conn_takes) */
    g_assert(after == NULL || backend_conn_takes(pool, after));
    return backend_submit_at(pool, req, after, msg, len, -1, TRUE, more);
}

/*
 * With SASL: the messages of iov as one frame (Thrift's SASL transport
 * sends a frame per flush; the server reads frames as one stream).
 * Without a security layer the header goes before them in one write,
 * with no copy; with one, gss_wrap needs them in one piece.  FALSE (with
 * why) if the context cannot protect them any more.
 */
static gboolean
backend_sasl_write(struct backend_conn *conn, const struct iovec *iov, int n,
                   char *why, size_t whylen)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(GByteArray) frame = NULL;
    g_autoptr(GByteArray) plain = NULL;
    struct iovec out[3];
    size_t total = 0;
    uint8_t hdr[4];

    for (int i = 0; i < n; i++) {
        total += iov[i].iov_len;
    }
    if (total == 0) {
        return TRUE;
    }
    if (!sasl_client_wraps(conn->sasl)) {
        hdr[0] = (uint8_t)(total >> 24);
        hdr[1] = (uint8_t)(total >> 16);
        hdr[2] = (uint8_t)(total >> 8);
        hdr[3] = (uint8_t)total;
        out[0].iov_base = hdr;
        out[0].iov_len = 4;
        memcpy(out + 1, iov, (size_t)n * sizeof(*iov));
        req_write(conn->bev, out, n + 1);
        return TRUE;
    }
    plain = g_byte_array_sized_new((guint)total);
    for (int i = 0; i < n; i++) {
        g_byte_array_append(plain, iov[i].iov_base, (guint)iov[i].iov_len);
    }
    frame = g_byte_array_sized_new((guint)total + 64);
    if (!sasl_client_wrap(conn->sasl, plain->data, plain->len, frame,
                          &error)) {
        g_snprintf(why, whylen, "SASL: %s", error->message);
        return FALSE;
    }
    bufferevent_write(conn->bev, frame->data, frame->len);
    return TRUE;
}

/* Writes what conn holds back, then msg (len may be 0), in one call. */
static void
backend_conn_write(struct backend_conn *conn, const uint8_t *msg, size_t len)
{
    struct iovec iov[2];
    int n = 0;

    if (conn->corked) {
        TAILQ_REMOVE(&backend_worker(conn)->corked, conn, cork_link);
        conn->corked = 0;
        iov[n].iov_base = conn->cork.data;
        iov[n++].iov_len = conn->cork.len;
    }
    if (len > 0) {
        iov[n].iov_base = (void *)msg;
        iov[n++].iov_len = len;
    }
    if (conn->sasl != NULL) {
        char why[BACKEND_MSG_MAX];
        gboolean ok = backend_sasl_write(conn, iov, n, why, sizeof(why));

        wire_buf_clear(&conn->cork);
        if (!ok) {
            /* the context failed or expired: the next request dials
             * again, on the renewed ticket */
            backend_conn_fail(conn, why, why, TRUE);
        }
        return;
    }
    req_write(conn->bev, iov, n);
    wire_buf_clear(&conn->cork);
}

void
backend_uncork(struct worker *w)
{
    struct backend_conn *conn;

    g_assert(w != NULL && backend_on_worker(w));
    while ((conn = TAILQ_FIRST(&w->corked)) != NULL) {
        backend_conn_write(conn, NULL, 0);
    }
}

/* backend_submit, avoiding server avoid; fresh: a new request (its
 * deadline starts now), else one sent again or moved after a failed
 * connect.  Returns the connection req waits on, NULL when it was
 * finished at once or waits for a server (backend_wait). */
static struct backend_conn *
backend_submit_at(struct backend_pool *pool, struct req *req,
                  struct backend_conn *after, const uint8_t *msg, size_t len,
                  int avoid, gboolean fresh, gboolean more)
{
    struct worker *w = pool->worker;
    const struct worker_settings *set = &w->gen->set;
    gint64 now = req_now();
    struct backend_conn *conn;
    char why[BACKEND_MSG_MAX];

    if (fresh && backend_req_rereadable(req)) {
        /* kept to send it again should its connection fail first */
        wire_buf_clear(&req->raw);
        wire_buf_append(&req->raw, msg, len);
    }
    if (fresh) {
        /* set before a server is found: a read may wait for one */
        req->deadline = set->request_timeout_ms != 0
                            ? now + (gint64)set->request_timeout_ms * 1000
                            : G_MAXINT64;
        req->backend_len = (uint32_t)len;
    }
    for (conn = after; conn == NULL;) {
        struct backend_server *s;

        /* no earlier request to follow: the least loaded connection */
        conn = backend_pick(pool, req->server, backend_req_service(req), avoid,
                            now);
        if (conn == NULL && !pool->refusing && backend_may_reread(req, now) &&
            (!fresh || backend_may_come_back(pool, req, now))) {
            /* a read sent before (or held by a connect): it waits for a
             * server rather than failing at once; a new one while a
             * DOWN server's next probe may find it back */
            req->wait_probe = fresh;
            backend_wait(pool, req, now);
            return NULL;
        }
        if (conn == NULL) {
            backend_unavailable(pool, req);
            return NULL;
        }
        if (conn->sasl != NULL && conn->state == BACKEND_CONNECTED &&
            conn->npending == 0 && backend_sasl_stale_at(conn) <= now) {
            g_debug("backend %s: conn %u: its Kerberos context is about to "
                    "expire: reconnecting",
                    conn->server->srv->name, conn->index);
            backend_conn_close(conn);
        }
        if (conn->state != BACKEND_IDLE ||
            backend_conn_open(conn, why, sizeof(why))) {
            break;
        }
        /* could not even start: hold the server off, try another */
        s = conn->server;
        s->retry_at = now + (gint64)BACKEND_RETRY_MS * 1000;
        METRICS_ADD(s->stats.connect_failures, 1);
        g_strlcpy(s->last_error, why, sizeof(s->last_error));
        if (backend_log_note(s, G_LOG_LEVEL_WARNING, why, 0)) {
            g_warning("backend %s: conn %u: %s", s->srv->name, conn->index,
                      why);
        }
        health_failed(s->health, why);
        avoid = (int)(s - pool->servers);
        conn = NULL;
    }
    req->conn = conn;
    req->backend_len = (uint32_t)len;
    TAILQ_INSERT_TAIL(&conn->pending, req, backend_link);
    if (++conn->npending == 1) {
        conn->answer_since = now;
    }
    backend_conn_counted(conn);
    req->backend_name = conn->server->health->name;
    backend_conn_turn(conn, now);
    METRICS_ADD(conn->server->stats.requests, 1);
    METRICS_ADD(conn->server->stats.inflight, 1);
    conn->last_active = now;
    if (conn->http != NULL) {
        unsigned epoch = conn->epoch;

        /* one POST at a time: sent when the one before is answered */
        evbuffer_add(conn->http_held, msg, len);
        if (conn->npending == 1 || !fresh || backend_req_rereadable(req)) {
            backend_conn_arm(conn);
        }
        /* last: a refused token fails the connection, req with it */
        backend_http_send(conn);
        return conn->epoch == epoch ? conn : NULL;
    }
    if (conn->state == BACKEND_CONNECTED && more) {
        /* the caller's next calls may follow it here: one write later */
        wire_buf_append(&conn->cork, msg, len);
        if (!conn->corked) {
            conn->corked = 1;
            TAILQ_INSERT_TAIL(&w->corked, conn, cork_link);
        }
    } else if (conn->state == BACKEND_CONNECTED) {
        backend_conn_write(conn, msg, len);
    } else if (conn->sasl_held != NULL) {
        /* held until the SASL negotiation completes */
        evbuffer_add(conn->sasl_held, msg, len);
    } else {
        /* held in the output buffer until the connect completes */
        bufferevent_write(conn->bev, msg, len);
    }
    if (conn->npending == 1 || !fresh || backend_req_rereadable(req)) {
        /* a read may be due to move sooner than the head's deadline */
        backend_conn_arm(conn);
    }
    return conn;
}

/* Whether a reply's header is for req: its sequence id (codec_reply
 * checks the client's own replies; this covers the others). */
static gboolean
backend_reply_in_step(const struct worker_settings *set, const struct req *req,
                      const uint8_t *msg, size_t len)
{
    struct wire_reader r;
    struct wire_msg m;

    wire_reader_init(&r, set->backend_proto, msg, len, TRUE,
                     &wire_default_limits);
    return wire_read_msg_begin(&r, &m) == WIRE_OK &&
           m.seqid == req->backend_seqid;
}

/* Counts the exception req's reply carries, if any, against its server;
 * a client's request keeps the kind for its own counters. */
static void
backend_reply_kind(struct backend_conn *conn, struct req *req)
{
    const struct worker_settings *set = backend_settings(conn);
    size_t hdr = req->client_framed ? 4 : 0;

    if (req->sink != NULL) {
        req->err_kind = metrics_reply_error(set->backend_proto, req->raw.data,
                                            req->raw.len, NULL);
    } else if (req->client != NULL && req->err_kind != METRICS_ERR_UNKNOWN) {
        /* backend_reply_rewrite read it */
    } else if (req->client != NULL && req->reply.len > hdr) {
        req->err_kind = metrics_reply_error(req->client_proto,
                                            req->reply.data + hdr,
                                            req->reply.len - hdr,
                                            req->call.method);
    } else {
        return;
    }
    if (req->err_kind > METRICS_ERR_NONE) {
        METRICS_ADD(conn->server->stats.errors[req->err_kind], 1);
    }
}

/* The server closed conn. */
/*
 * A server closed a connection with calls on it: it is stopping.  HBase's
 * Thrift server stops gracefully, answering one more call on each open
 * connection before it closes it, while a new server may already listen
 * on the port: a call sent on an idle connection of the old one would be
 * answered by a process about to go (a scanner opened there is lost at
 * once).  The idle connections of s go now; new calls dial afresh.
 */
static void
backend_server_close_idle(struct backend_server *s,
                          const struct backend_conn *except)
{
    for (unsigned j = 0; j < s->pool->set->pool_size; j++) {
        struct backend_conn *c = &s->conns[j];

        if (c != except && c->state == BACKEND_CONNECTED && c->npending == 0 &&
            !c->corked) {
            backend_conn_close(c);
        }
    }
}

static void
backend_conn_eof(struct backend_conn *conn)
{
    const char *why = "connection closed by server";

    if (conn->npending == 0) {
        /* HBase drops idle connections: normal, reconnect on demand */
        g_debug("backend %s: conn %u: closed by server while idle",
                conn->server->srv->name, conn->index);
        backend_conn_close(conn);
        return;
    }
    health_failed(conn->server->health, why);
    backend_server_close_idle(conn->server, conn);
    backend_conn_fail(conn, why, why, TRUE);
}

/*
 * Whether a SASL failure on the server of h is news for the log: the same
 * reason again (every connection of every worker meets it) is logged at
 * debug level only, until a negotiation works again.
 */
static gboolean
backend_sasl_news(struct health_shared *h, const char *why)
{
    gboolean news;

    g_mutex_lock(&h->lock);
    news = strcmp(h->sasl_logged, why) != 0;
    if (news) {
        g_strlcpy(h->sasl_logged, why, sizeof(h->sasl_logged));
    }
    g_mutex_unlock(&h->lock);
    return news;
}

/* A negotiation worked: the next failure is news again. */
static void
backend_sasl_ok(struct health_shared *h, const char *name)
{
    gboolean was = FALSE;

    g_mutex_lock(&h->lock);
    if (h->sasl_logged[0] != '\0') {
        h->sasl_logged[0] = '\0';
        was = TRUE;
    }
    g_mutex_unlock(&h->lock);
    if (was) {
        g_message("backend %s: SASL negotiation works again", name);
    }
}

/*
 * The negotiation on conn failed: like a failed connect (the requests
 * held for it move to another server or fail with the reason, the server
 * is held off), logged once per reason.
 */
static void
backend_sasl_failed(struct backend_conn *conn, const char *reason)
{
    struct backend_pool *pool = conn->server->pool;
    char why[BACKEND_MSG_MAX];
    gboolean news;

    g_snprintf(why, sizeof(why), "SASL: %s", reason);
    news = backend_sasl_news(conn->server->health, why);
    if (news) {
        g_warning("backend %s: %s", conn->server->srv->name, why);
    }
    /* the reads held for it fail with the reason now, as a read no
     * server can take: they would only meet the same refusal again */
    pool->refusing = TRUE;
    backend_connect_failed(conn, why, FALSE);
    pool->refusing = FALSE;
}

/* The negotiation on conn ended well: the requests held go out. */
static void
backend_sasl_ready(struct backend_conn *conn)
{
    size_t len = evbuffer_get_length(conn->sasl_held);

    backend_conn_connected(conn);
    backend_sasl_ok(conn->server->health, conn->server->srv->name);
    g_debug("backend %s: conn %u: SASL %s with %s", conn->server->srv->name,
            conn->index, sasl_qop_name(sasl_client_qop(conn->sasl)),
            sasl_client_server_principal(conn->sasl));
    if (len > 0) {
        const uint8_t *held = evbuffer_pullup(conn->sasl_held, -1);

        backend_conn_write(conn, held, len);
        if (conn->state != BACKEND_CONNECTED) {
            return;
        }
    }
    g_clear_pointer(&conn->sasl_held, evbuffer_free);
    backend_conn_arm(conn);
}

/* The TCP connect of a SASL connection is done: say START. */
static void
backend_sasl_start(struct backend_conn *conn)
{
    const struct backend_server *s = conn->server;
    g_autoptr(GByteArray) out = g_byte_array_new();
    g_autoptr(GError) error = NULL;

    conn->sasl_raw = evbuffer_new();
    conn->sasl =
        sasl_client_new(backend_sasl_creds(conn), s->srv->sasl_server,
                        (sasl_qop_t)backend_settings(conn)->backend_sasl_qop,
                        backend_settings(conn)->max_reply_size);
    if (sasl_client_start(conn->sasl, out, &error) == SASL_STEP_FAILED) {
        backend_sasl_failed(conn, error->message);
        return;
    }
    bufferevent_write(conn->bev, out->data, out->len);
}

/*
 * Bytes for a SASL connection: negotiation messages until it is done,
 * then frames, unwrapped into conn->in.  FALSE when there is nothing
 * for the reply parser (conn may be closed).
 */
static gboolean
backend_sasl_read(struct backend_conn *conn, evutil_socket_t fd)
{
    struct worker *w = backend_worker(conn);
    g_autoptr(GError) error = NULL;
    char why[BACKEND_MSG_MAX];
    ssize_t got = req_read(w->rbuf, fd, conn->sasl_raw, REQ_READ_MAX);

    if (got == 0 && conn->state == BACKEND_CONNECTING) {
        backend_sasl_failed(conn, "the server closed the connection during "
                                  "the negotiation (does it run with "
                                  "hbase.thrift.security.qop?)");
        return FALSE;
    }
    if (got == 0) {
        backend_conn_eof(conn);
        return FALSE;
    }
    if (got < 0 && errno != EAGAIN && errno != EINTR) {
        g_snprintf(why, sizeof(why), "%s", g_strerror(errno));
        if (conn->state == BACKEND_CONNECTING) {
            backend_sasl_failed(conn, why);
            return FALSE;
        }
        if (conn->npending > 0) {
            health_failed(conn->server->health, why);
        }
        backend_conn_fail(conn, why, why, TRUE);
        return FALSE;
    }
    if (conn->state == BACKEND_CONNECTING) {
        size_t avail = evbuffer_get_length(conn->sasl_raw), used = 0;
        const uint8_t *p = evbuffer_pullup(conn->sasl_raw, -1);
        g_autoptr(GByteArray) out = g_byte_array_new();
        sasl_step_t st = sasl_client_feed(conn->sasl, p, avail, &used, out,
                                          &error);

        evbuffer_drain(conn->sasl_raw, used);
        if (st == SASL_STEP_FAILED) {
            backend_sasl_failed(conn, error->message);
            return FALSE;
        }
        if (out->len > 0) {
            bufferevent_write(conn->bev, out->data, out->len);
        }
        if (st == SASL_STEP_CONTINUE) {
            return FALSE;
        }
        backend_sasl_ready(conn);
        if (conn->state != BACKEND_CONNECTED) {
            return FALSE;
        }
    }
    for (;;) {
        size_t avail = evbuffer_get_length(conn->sasl_raw), size = 0, used;
        uint8_t hdr[4];
        g_autoptr(GByteArray) plain = NULL;

        if (avail < 4) {
            break;
        }
        evbuffer_copyout(conn->sasl_raw, hdr, 4);
        if (!sasl_client_frame_size(conn->sasl, hdr, &size, &error)) {
            break;
        }
        if (avail < size) {
            break;
        }
        if (!sasl_client_wraps(conn->sasl)) {
            /* no security layer: the payload moves, uncopied */
            evbuffer_drain(conn->sasl_raw, 4);
            evbuffer_remove_buffer(conn->sasl_raw, conn->in, size - 4);
            continue;
        }
        plain = g_byte_array_new();
        if (!sasl_client_unwrap(conn->sasl,
                                evbuffer_pullup(conn->sasl_raw,
                                                (ev_ssize_t)size),
                                size, &used, plain, &error)) {
            break;
        }
        evbuffer_drain(conn->sasl_raw, used);
        evbuffer_add(conn->in, plain->data, plain->len);
    }
    if (error != NULL) {
        g_snprintf(why, sizeof(why), "SASL: %s", error->message);
        health_failed(conn->server->health, why);
        backend_conn_fail(conn, why, why, TRUE);
        return FALSE;
    }
    return evbuffer_get_length(conn->in) > 0;
}

/*
 * The reply at the head of conn->in (have bytes), for req (the oldest
 * pending): its length, frame header included, into *len.  A client's
 * is translated into req->reply (*cs, *err: the codec's verdict); a
 * scan sink's is copied into req->raw; a detached request's is only
 * measured.  WIRE_AGAIN: not whole yet; WIRE_ERROR: *bad says why.
 */
static wire_status_t
backend_reply_take(struct backend_conn *conn, struct req *req, size_t have,
                   size_t *len, codec_status_t *cs, struct codec_error *err,
                   const char **bad)
{
    struct worker *w = backend_worker(conn);
    const struct worker_settings *set = backend_settings(conn);
    struct evbuffer *in = conn->in;
    size_t avail = 0, hdr = set->backend_framed ? 4 : 0;
    const uint8_t *buf = NULL;
    wire_status_t st;

    if (req->sink != NULL || req->client == NULL) {
        /* only its end is needed here: the scan engine's sink reads
         * it itself, and nobody waits for a detached request */
        if (set->backend_framed) {
            /* the frame says where it ends; whoever reads it checks
             * every length as it goes */
            st = req_msg_peek(in, have, TRUE, &w->reply_limits, &buf, len,
                              bad);
        } else {
            struct wire_scan *scan = backend_conn_scan(conn);

            if (!wire_scan_started(scan)) {
                /* a fetch's rows are marked as they pass, so that the
                 * scan engine does not walk them again (scanbatch.h) */
                wire_scan_mark(scan, req->sink != NULL ? &conn->marks : NULL);
            }
            st = req_msg_scan(in, set->backend_proto, scan, &w->reply_limits,
                              &buf, len, bad);
        }
        if (st == WIRE_OK &&
            !backend_reply_in_step(set, req, buf + hdr, *len - hdr)) {
            /* pairing by order is wrong from here on */
            st = WIRE_ERROR;
            *bad = "reply out of step with the requests";
        }
        if (st == WIRE_OK && req->sink != NULL) {
            wire_buf_clear(&req->raw);
            wire_buf_append(&req->raw, buf + hdr, *len - hdr);
            if (set->backend_framed) {
                wire_buf_clear(&req->marks);
            } else {
                /* the scan marked this reply's rows (or none) */
                struct wire_buf tmp = req->marks;

                req->marks = conn->marks;
                conn->marks = tmp;
            }
        }
        return st;
    }
    st = req_msg_peek(in, have, set->backend_framed, &w->reply_limits, &buf,
                      &avail, bad);
    if (st == WIRE_OK) {
        size_t frame = req_reply_begin(req);

        if (set->backend_framed) {
            *len = avail - hdr;
            *cs = backend_reply_rewrite(conn, req, buf + hdr, *len, FALSE, err,
                                        NULL);
        } else {
            st = backend_reply_stream(conn, req, buf, avail, cs, err, len,
                                      bad);
        }
        if (st == WIRE_OK && *cs == CODEC_OK) {
            req_reply_end(req, frame);
        }
        *len += hdr;
    }
    return st;
}

/* Replies arrived: pair each with the oldest pending request. */
static void
backend_read(evutil_socket_t fd, short what, void *arg)
{
    struct backend_conn *conn = arg;
    struct worker *w = backend_worker(conn);
    char why[BACKEND_MSG_MAX];
    ssize_t got;

    /* one read per event: reading on while reads come back full took
     * several big replies at once into client buffers, past what
     * back-pressure bounds (e2e-faults-backpressure) */
    if (conn->sasl != NULL) {
        if (!backend_sasl_read(conn, fd)) {
            return;
        }
        got = 1;
    } else {
        got = req_read(w->rbuf, fd,
                       conn->http_raw != NULL ? conn->http_raw : conn->in,
                       REQ_READ_MAX);
    }
    if (got == 0) {
        backend_conn_eof(conn);
        return;
    }
    if (got < 0 && errno != EAGAIN && errno != EINTR) {
        g_snprintf(why, sizeof(why), "%s", g_strerror(errno));
        if (conn->npending > 0) {
            health_failed(conn->server->health, why);
        }
        backend_conn_fail(conn, why, why, TRUE);
        return;
    }
    if (conn->http != NULL) {
        backend_http_take(conn);
    } else if (backend_replies(conn)) {
        backend_conn_arm(conn);
    }
    if (w->replies_held) {
        worker_replies_release(w);
    }
}

static void
backend_read_cb(evutil_socket_t fd, short what, void *arg)
{
    /* one clock reading for the replies of this read (req.h) */
    req_clock_hold();
    backend_read(fd, what, arg);
    req_clock_release();
}

/*
 * The replies whole in conn->in, each paired with the oldest pending
 * request; FALSE when conn failed on the way (closed: the caller leaves
 * it).  Replies held for one write per client stay held: the caller
 * releases them.
 */
static gboolean
backend_replies(struct backend_conn *conn)
{
    struct worker *w = backend_worker(conn);
    unsigned epoch = conn->epoch;
    char why[BACKEND_MSG_MAX];

    while (conn->epoch == epoch) {
        struct evbuffer *in = conn->in;
        /* read once a reply: nothing below adds to in before the drain */
        size_t have = evbuffer_get_length(in);
        const char *bad = NULL;
        size_t len = 0;
        struct req *req = TAILQ_FIRST(&conn->pending);
        struct codec_error err; /* the codec sets what it uses */
        codec_status_t cs = CODEC_OK;
        wire_status_t st;

        if (have == 0) {
            break;
        }
        if (req == NULL) {
            backend_conn_fail(conn, "reply without a request",
                              "reply without a request", TRUE);
            return FALSE;
        }
        st = backend_reply_take(conn, req, have, &len, &cs, &err, &bad);
        if (st == WIRE_AGAIN) {
            break;
        }
        if (st == WIRE_ERROR) {
            g_snprintf(why, sizeof(why), "bad reply: %s", bad);
            backend_conn_fail(conn, why, why, TRUE);
            return FALSE;
        }
        if (cs != CODEC_OK) {
            /* out of step with the server: nothing after is trusted */
            g_snprintf(why, sizeof(why), "bad reply: %s",
                       err.message != NULL ? err.message : "malformed");
            backend_conn_fail(conn, why,
                              "connection reset after a "
                              "bad reply",
                              FALSE);
            return FALSE;
        }
        TAILQ_REMOVE(&conn->pending, req, backend_link);
        conn->npending--;
        backend_conn_counted(conn);
        conn->answered++;
        /* HTTP: the next POST may go, unless the server said it closes */
        conn->http_busy = conn->http != NULL && httpc_conn_closing(conn->http);
        METRICS_ADD(conn->server->stats.inflight, -1);
        conn->last_active = req_now();
        conn->answer_since = conn->last_active;
        health_ok(conn->server->health);
        backend_reply_kind(conn, req);
        backend_conn_turn(conn, conn->last_active);
        if (!w->replies_held && have > len) {
            /* more replies came with this one: one write per client for
             * all of them (a lone reply is written at once) */
            worker_replies_hold(w);
        }
        evbuffer_drain(in, len);
        worker_req_finish(w, req);
    }
    return conn->epoch == epoch;
}

/* HTTP: the next held message goes as a POST when none awaits its reply
 * (one at a time: a connection's calls take effect in their order). */
static void
backend_http_send(struct backend_conn *conn)
{
    struct req *req = TAILQ_FIRST(&conn->pending);
    char why[BACKEND_MSG_MAX];

    if (conn->http == NULL || conn->http_busy || req == NULL ||
        conn->state != BACKEND_CONNECTED) {
        return;
    }
    conn->http_busy = 1;
    if (!httpc_conn_post(conn->http, conn->http_held, req->backend_len,
                         conn->bev, why, sizeof(why))) {
        /* no token: the next request dials again, on renewed tickets */
        backend_conn_fail(conn, why, why, TRUE);
    }
}

/*
 * HTTP: the replies whole in raw (the socket's input), one at a time:
 * a 200's body is the call's reply, taken as in socket mode; another
 * status answers the call with a TApplicationException saying it, as
 * the server's own would.  One reply, one call: a body that is not
 * exactly one reply resets the connection.
 */
static void
backend_http_take(struct backend_conn *conn)
{
    char why[BACKEND_MSG_MAX];

    while (conn->http != NULL) {
        struct evbuffer *raw = conn->http_raw != NULL
                                   ? conn->http_raw
                                   : bufferevent_get_input(conn->bev);
        struct req *req = TAILQ_FIRST(&conn->pending);
        unsigned answered = conn->answered;
        httpc_reply_t st;

        if (evbuffer_get_length(raw) == 0) {
            break;
        }
        st = httpc_conn_reply(conn->http, raw, conn->in, why, sizeof(why));
        if (st == HTTPC_AGAIN) {
            break;
        }
        if (st == HTTPC_BAD || req == NULL || !conn->http_busy) {
            char bad[BACKEND_MSG_MAX];

            g_snprintf(bad, sizeof(bad), "bad reply: %s",
                       st == HTTPC_BAD ? why : "reply without a request");
            backend_conn_fail(conn, bad, bad, TRUE);
            return;
        }
        if (st == HTTPC_REFUSED) {
            char head[BACKEND_MSG_MAX], tail[BACKEND_MSG_MAX];
            struct wire_writer wr;
            struct wire_buf buf;

            /* the first of a burst in full (the same cause answers
             * every call), the rest counted */
            g_snprintf(head, sizeof(head), "backend %s",
                       conn->server->srv->name);
            g_snprintf(tail, sizeof(tail), ": %s", why);
            if (lograte_note_of(G_LOG_LEVEL_WARNING, "call", head, tail, NULL,
                                1)) {
                g_warning("%s", why);
            }
            wire_buf_init(&buf);
            wire_writer_init(&wr, backend_settings(conn)->backend_proto, &buf);
            wire_write_app_exception(&wr, (const uint8_t *)req->call.name,
                                     req->call.name_len, req->backend_seqid,
                                     WIRE_APP_INTERNAL_ERROR, why);
            evbuffer_add(conn->in, buf.data, buf.len);
            wire_buf_free(&buf);
        }
        if (!backend_replies(conn)) {
            return;
        }
        if (conn->answered != answered + 1 ||
            evbuffer_get_length(conn->in) > 0) {
            backend_conn_fail(conn,
                              "bad reply: an HTTP body that is not "
                              "one Thrift reply",
                              "connection reset after a bad reply", TRUE);
            return;
        }
        if (evbuffer_get_length(raw) > 0) {
            /* more after a whole reply, before the next POST went: no
             * server answers what it was not sent, and taking it for the
             * next call's answer would fail a call that then runs.  The
             * connection is out of step: closed; the calls held on it
             * were never sent, so they go on another */
            g_warning("backend %s: conn %u: bad reply: bytes after a whole "
                      "HTTP reply; connection closed, the calls not sent "
                      "yet go on another",
                      conn->server->srv->name, conn->index);
            backend_http_closed(conn);
            return;
        }
        if (httpc_conn_closing(conn->http)) {
            backend_http_closed(conn);
            return;
        }
        backend_http_send(conn);
    }
    backend_conn_arm(conn);
}

/* A TLS connection's input (the bufferevent decrypts). */
static void
backend_tls_read_cb(struct bufferevent *bev, void *arg)
{
    struct backend_conn *conn = arg;
    struct worker *w = backend_worker(conn);

    backend_http_take(conn);
    if (w->replies_held) {
        worker_replies_release(w);
    }
}

static void
backend_event_cb(struct bufferevent *bev, short what, void *arg)
{
    struct backend_conn *conn = arg;
    char why[BACKEND_MSG_MAX];

    if (what & BEV_EVENT_CONNECTED) {
        evutil_socket_t fd = bufferevent_getfd(bev);
        int one = 1;

        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
        conn->in = evbuffer_new();
        if (conn->http != NULL && bufferevent_openssl_get_ssl(bev) != NULL) {
            /* TLS: the bufferevent reads, decrypting */
            bufferevent_setcb(bev, backend_tls_read_cb, NULL, backend_event_cb,
                              conn);
            bufferevent_enable(bev, EV_READ);
            backend_conn_connected(conn);
            backend_conn_arm(conn);
            return;
        }
        if (conn->http != NULL) {
            conn->http_raw = evbuffer_new();
        }
        conn->rev = event_new(backend_worker(conn)->base, fd,
                              EV_READ | EV_PERSIST, backend_read_cb, conn);
        if (conn->in == NULL || conn->rev == NULL ||
            event_add(conn->rev, NULL) < 0) {
            backend_conn_fail(conn, "out of memory", "out of memory", TRUE);
            return;
        }
        if (conn->sasl_held != NULL) {
            /* CONNECTED once negotiated; the connect deadline covers the
             * negotiation too */
            backend_sasl_start(conn);
            return;
        }
        backend_conn_connected(conn);
        g_debug("backend %s: conn %u: connected", conn->server->srv->name,
                conn->index);
        backend_conn_arm(conn);
        return;
    }
    if (what & BEV_EVENT_ERROR) {
        int err = EVUTIL_SOCKET_ERROR();

        if (conn->http != NULL) {
            /* TLS names its own cause (a certificate refused) */
            httpc_conn_why(&conn->server->srv->http, bev, err, why,
                           sizeof(why));
        } else {
            g_snprintf(why, sizeof(why), "%s",
                       evutil_socket_error_to_string(err));
        }
        if (conn->state == BACKEND_CONNECTING) {
            char msg[BACKEND_MSG_MAX];

            g_snprintf(msg, sizeof(msg), "connect: %s", why);
            backend_connect_failed(conn, msg, TRUE);
        } else {
            if (conn->npending > 0) {
                health_failed(conn->server->health, why);
            }
            backend_conn_fail(conn, why, why, TRUE);
        }
        return;
    }
    if (what & BEV_EVENT_EOF) {
        backend_conn_eof(conn);
    }
}

static void
backend_timer_cb(evutil_socket_t fd, short what, void *arg)
{
    struct backend_conn *conn = arg;
    const struct worker_settings *set = backend_settings(conn);
    struct req *head = TAILQ_FIRST(&conn->pending), *req;
    gint64 now = req_now();
    char why[BACKEND_MSG_MAX];

    conn->timer_at = 0;
    if (conn->state == BACKEND_CONNECTING && now >= conn->connect_deadline) {
        g_snprintf(why, sizeof(why), "connect%s timed out after %u ms",
                   conn->sasl != NULL ? " and SASL negotiation" : "",
                   set->connect_timeout_ms);
        backend_connect_failed(conn, why, TRUE);
        return;
    }
    if (head != NULL && now >= head->deadline) {
        /* replies are FIFO: the ones behind it can no longer arrive */
        g_snprintf(why, sizeof(why), "timed out after %u ms",
                   set->request_timeout_ms);
        head->timed_out = 1;
        TAILQ_FOREACH (req, &conn->pending, backend_link) {
            req->stalled = 1;
            req->stalled_on = (int)(conn->server -
                                    conn->server->pool->servers);
        }
        health_failed(conn->server->health, why);
        backend_conn_fail(conn, why,
                          "connection reset after an earlier "
                          "request timed out",
                          TRUE);
        return;
    }
    if (head != NULL && now >= backend_conn_retry_at(conn, TRUE)) {
        /* stalled: its front reads go to another server */
        backend_conn_move_reads(conn);
    }
    if (head == NULL && conn->state == BACKEND_CONNECTED &&
        conn->sasl != NULL && now >= backend_sasl_stale_at(conn)) {
        g_debug("backend %s: conn %u: closing: its Kerberos context is "
                "about to expire",
                conn->server->srv->name, conn->index);
        backend_conn_close(conn);
        return;
    }
    if (head == NULL && conn->state == BACKEND_CONNECTED &&
        now >= conn->last_active + (gint64)BACKEND_IDLE_CLOSE_MS * 1000) {
        g_debug("backend %s: conn %u: closing idle connection",
                conn->server->srv->name, conn->index);
        backend_conn_close(conn);
        return;
    }
    backend_conn_arm(conn);
}
