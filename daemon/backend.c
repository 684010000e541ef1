/* backend.c: per-worker pools of pipelined connections to HBase Thrift. */
#include "backend.h"

#include <errno.h>
#include <string.h>
#include <netinet/in.h>
#include <netinet/tcp.h>

#include <event2/buffer.h>

#include "metrics.h"

/*
 * A server whose connect failed is not dialled again for this long;
 * requests meanwhile fail at once with the last error (can_retry TRUE)
 * rather than queueing behind a connect that will likely fail too.
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
/* Bytes in an IOError message we build. */
#define BACKEND_MSG_MAX 256

static void backend_read_cb(struct bufferevent *bev, void *arg);
static void backend_event_cb(struct bufferevent *bev, short what, void *arg);
static void backend_timer_cb(evutil_socket_t fd, short what, void *arg);

static struct proxy_worker *
backend_worker(const struct backend_conn *conn)
{
    return conn->server->pool->worker;
}

/* Timeouts of the worker's current generation: a reload applies them to
 * the next request even on a connection it did not replace. */
static const struct proxy_settings *
backend_settings(const struct backend_conn *conn)
{
    return &backend_worker(conn)->gen->set;
}

struct backend_pool *
backend_pool_new(struct proxy_worker *w, const struct proxy_settings *set)
{
    struct backend_pool *pool = g_new0(struct backend_pool, 1);
    unsigned i, j;

    pool->worker = w;
    pool->set = set;
    pool->nservers = set->nservers;
    pool->servers = g_new0(struct backend_server, set->nservers);
    /* workers start at different servers so load spreads from the start */
    pool->next_server = set->nservers != 0 ? w->id % set->nservers : 0;
    for (i = 0; i < pool->nservers; i++) {
        struct backend_server *s = &pool->servers[i];

        s->pool = pool;
        s->srv = &set->servers[i];
        s->conns = g_new0(struct backend_conn, set->pool_size);
        for (j = 0; j < set->pool_size; j++) {
            struct backend_conn *conn = &s->conns[j];

            conn->server = s;
            conn->index = j;
            conn->state = BACKEND_IDLE;
            TAILQ_INIT(&conn->pending);
            conn->timer = evtimer_new(w->base, backend_timer_cb, conn);
        }
    }
    return pool;
}

/* Drops the socket; pending requests must have been taken off before. */
static void
backend_conn_close(struct backend_conn *conn)
{
    if (conn->state == BACKEND_CONNECTED) {
        METRICS_ADD(conn->server->stats.open, -1);
    }
    if (conn->bev != NULL) {
        /* also cancels callbacks already deferred for it */
        bufferevent_free(conn->bev);
        conn->bev = NULL;
    }
    evtimer_del(conn->timer);
    conn->state = BACKEND_IDLE;
}

void
backend_pool_free(struct backend_pool *pool)
{
    unsigned i, j;

    for (i = 0; i < pool->nservers; i++) {
        struct backend_server *s = &pool->servers[i];

        for (j = 0; j < pool->set->pool_size; j++) {
            struct backend_conn *conn = &s->conns[j];
            struct proxy_req *req;

            /* clients are gone by now: every request here is detached */
            while ((req = TAILQ_FIRST(&conn->pending)) != NULL) {
                TAILQ_REMOVE(&conn->pending, req, backend_link);
                req->conn = NULL;
                if (req->client == NULL) {
                    proxy_req_put(pool->worker, req);
                }
            }
            backend_conn_close(conn);
            event_free(conn->timer);
        }
        g_free(s->conns);
    }
    g_free(pool->servers);
    g_free(pool);
}

void
backend_pool_retire(struct backend_pool *pool)
{
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

    for (i = 0; i < pool->nservers; i++) {
        for (j = 0; j < pool->set->pool_size; j++) {
            n += pool->servers[i].conns[j].npending;
        }
    }
    return n;
}

/* Arms the one timer for the nearest deadline of conn. */
static void
backend_conn_arm(struct backend_conn *conn)
{
    struct proxy_req *head = TAILQ_FIRST(&conn->pending);
    gint64 at = G_MAXINT64, delta;
    struct timeval tv;

    if (conn->state == BACKEND_IDLE) {
        evtimer_del(conn->timer);
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
        at = MIN(at, head->deadline);
    } else if (conn->state == BACKEND_CONNECTED) {
        at = conn->last_active + (gint64)BACKEND_IDLE_CLOSE_MS * 1000;
    }
    if (at == G_MAXINT64) {
        evtimer_del(conn->timer);
        return;
    }
    delta = MAX(at - proxy_now(), 0);
    tv.tv_sec = (time_t)(delta / G_USEC_PER_SEC);
    tv.tv_usec = (suseconds_t)(delta % G_USEC_PER_SEC);
    evtimer_add(conn->timer, &tv);
}

/*
 * Fails every request pending on conn and closes it.  The oldest request
 * gets head_why, the others rest_why (a timeout is the head's; those
 * behind it only lose their connection).  Both are the reason part of
 * "hbase-salt-proxy: backend HOST:PORT: REASON".
 */
static void
backend_conn_fail(struct backend_conn *conn, const char *head_why,
                  const char *rest_why, gboolean can_retry)
{
    struct proxy_worker *w = backend_worker(conn);
    struct proxy_req_queue failed;
    struct proxy_req *req;
    char msg[BACKEND_MSG_MAX];
    unsigned n = conn->npending;
    gboolean first = TRUE;

    /* the connection is consistent (closed, empty) before any client
     * hears about it: flushing a client may lead to a new submit */
    TAILQ_INIT(&failed);
    TAILQ_CONCAT(&failed, &conn->pending, backend_link);
    METRICS_ADD(conn->server->stats.inflight, -(gint64)n);
    METRICS_ADD(conn->server->stats.failures, n);
    conn->npending = 0;
    backend_conn_close(conn);
    if (n > 0) {
        g_warning("backend %s: conn %u: %s (%u request%s failed)",
                  conn->server->srv->name, conn->index, head_why, n,
                  n == 1 ? "" : "s");
    } else {
        g_message("backend %s: conn %u: %s", conn->server->srv->name,
                  conn->index, head_why);
    }
    while ((req = TAILQ_FIRST(&failed)) != NULL) {
        TAILQ_REMOVE(&failed, req, backend_link);
        if (req->client != NULL || req->sink != NULL) {
            g_snprintf(msg, sizeof(msg), "hbase-salt-proxy: backend %s: %s",
                       conn->server->srv->name, first ? head_why : rest_why);
            proxy_req_io_error(req, msg, can_retry);
        }
        first = FALSE;
        proxy_req_finish(w, req);
    }
}

/* A connect attempt failed: remember why, and hold off the server. */
static void
backend_connect_failed(struct backend_conn *conn, const char *why)
{
    struct backend_server *s = conn->server;

    s->retry_at = proxy_now() + (gint64)BACKEND_RETRY_MS * 1000;
    METRICS_ADD(s->stats.connect_failures, 1);
    g_snprintf(s->last_error, sizeof(s->last_error), "%s", why);
    backend_conn_fail(conn, why, why, TRUE);
}

/* Starts a non-blocking connect; FALSE (with why) if it failed at once. */
static gboolean
backend_conn_open(struct backend_conn *conn, char *why, size_t whylen)
{
    struct proxy_worker *w = backend_worker(conn);
    const struct proxy_server *srv = conn->server->srv;

    conn->bev = bufferevent_socket_new(w->base, -1, BEV_OPT_CLOSE_ON_FREE
                                                    | BEV_OPT_DEFER_CALLBACKS);
    if (conn->bev == NULL) {
        g_snprintf(why, whylen, "connect: cannot create a socket buffer");
        return FALSE;
    }
    bufferevent_setcb(conn->bev, backend_read_cb, NULL, backend_event_cb,
                      conn);
    bufferevent_enable(conn->bev, EV_READ | EV_WRITE);
    if (bufferevent_socket_connect(conn->bev, (struct sockaddr *)&srv->addr,
                                   (int)srv->addrlen) < 0) {
        int err = EVUTIL_SOCKET_ERROR();

        g_snprintf(why, whylen, "connect: %s",
                   evutil_socket_error_to_string(err));
        bufferevent_free(conn->bev);
        conn->bev = NULL;
        return FALSE;
    }
    conn->state = BACKEND_CONNECTING;
    conn->connect_deadline = proxy_now()
        + (gint64)backend_settings(conn)->connect_timeout_ms * 1000;
    g_debug("backend %s: conn %u: connecting (worker %u)", srv->name,
            conn->index, w->id);
    return TRUE;
}

/*
 * The connection for the next request: servers in round robin, skipping
 * those in connect backoff; on a server, the connection with the fewest
 * pending, an open one before one that must connect first.  NULL when
 * every server is in backoff.
 */
static struct backend_conn *
backend_pick(struct backend_pool *pool, int only, gint64 now)
{
    unsigned i, j, pool_size = pool->set->pool_size;

    for (i = 0; i < pool->nservers; i++) {
        struct backend_server *s =
            &pool->servers[(pool->next_server + i) % pool->nservers];

        /* a scanner's calls must reach the server holding its scanners */
        if (only >= 0 && s != &pool->servers[only]) {
            continue;
        }
        struct backend_conn *best = NULL;
        gboolean backoff = s->retry_at > now;

        for (j = 0; j < pool_size; j++) {
            struct backend_conn *conn = &s->conns[j];

            /* in backoff, open connections still serve; none is dialled */
            if (backoff && conn->state == BACKEND_IDLE) {
                continue;
            }
            if (best == NULL || conn->npending < best->npending
                || (conn->npending == best->npending
                    && best->state == BACKEND_IDLE
                    && conn->state != BACKEND_IDLE)) {
                best = conn;
            }
        }
        if (best == NULL) {
            continue;
        }
        pool->next_server = (pool->next_server + i + 1) % pool->nservers;
        return best;
    }
    return NULL;
}

void
backend_submit(struct backend_pool *pool, struct proxy_req *req,
               const uint8_t *msg, size_t len)
{
    struct proxy_worker *w = pool->worker;
    const struct proxy_settings *set = &w->gen->set;
    gint64 now = proxy_now();
    struct backend_conn *conn = backend_pick(pool, req->server, now);
    char why[BACKEND_MSG_MAX], text[BACKEND_MSG_MAX];

    if (conn == NULL) {
        /* every server is in backoff: fail fast with its last error */
        struct backend_server *s =
            &pool->servers[req->server >= 0 ? (unsigned)req->server
                                             : pool->next_server];

        g_snprintf(text, sizeof(text), "hbase-salt-proxy: backend %s: %s",
                   s->srv->name, s->last_error);
        proxy_req_io_error(req, text, TRUE);
        proxy_req_finish(w, req);
        return;
    }
    if (conn->state == BACKEND_IDLE && !backend_conn_open(conn, why,
                                                          sizeof(why))) {
        struct backend_server *s = conn->server;

        s->retry_at = now + (gint64)BACKEND_RETRY_MS * 1000;
        METRICS_ADD(s->stats.connect_failures, 1);
        g_strlcpy(s->last_error, why, sizeof(s->last_error));
        g_warning("backend %s: conn %u: %s", s->srv->name, conn->index, why);
        g_snprintf(text, sizeof(text), "hbase-salt-proxy: backend %s: %s",
                   s->srv->name, why);
        proxy_req_io_error(req, text, TRUE);
        proxy_req_finish(w, req);
        return;
    }
    req->conn = conn;
    req->deadline = set->request_timeout_ms != 0
                        ? now + (gint64)set->request_timeout_ms * 1000
                        : G_MAXINT64;
    TAILQ_INSERT_TAIL(&conn->pending, req, backend_link);
    conn->npending++;
    METRICS_ADD(conn->server->stats.requests, 1);
    METRICS_ADD(conn->server->stats.inflight, 1);
    conn->last_active = now;
    /* held in the output buffer until the connect completes */
    bufferevent_write(conn->bev, msg, len);
    if (conn->npending == 1) {
        backend_conn_arm(conn);
    }
}

/* Replies arrived: pair each with the oldest pending request. */
static void
backend_read_cb(struct bufferevent *bev, void *arg)
{
    struct backend_conn *conn = arg;
    struct proxy_worker *w = backend_worker(conn);
    const struct proxy_settings *set = backend_settings(conn);
    struct evbuffer *in = bufferevent_get_input(bev);
    char why[BACKEND_MSG_MAX];

    while (evbuffer_get_length(in) > 0) {
        const uint8_t *msg = NULL;
        const char *bad = NULL;
        size_t len = 0, hdr = set->backend_framed ? 4 : 0;
        struct proxy_req *req;
        struct codec_error err = { 0, NULL, FALSE };
        wire_status_t st;

        st = proxy_msg_next(in, set->backend_proto, set->backend_framed,
                            &w->reply_limits, &msg, &len, &bad);
        if (st == WIRE_AGAIN) {
            break;
        }
        if (st == WIRE_ERROR) {
            g_snprintf(why, sizeof(why), "bad reply: %s", bad);
            backend_conn_fail(conn, why, why, TRUE);
            return;
        }
        req = TAILQ_FIRST(&conn->pending);
        if (req == NULL) {
            backend_conn_fail(conn, "reply without a request",
                              "reply without a request", TRUE);
            return;
        }
        TAILQ_REMOVE(&conn->pending, req, backend_link);
        conn->npending--;
        METRICS_ADD(conn->server->stats.inflight, -1);
        conn->last_active = proxy_now();
        if (req->sink != NULL) {
            /* internal: the sink reads the reply itself */
            wire_buf_clear(&req->reply);
            wire_buf_append(&req->reply, msg + hdr, len - hdr);
        } else if (req->client != NULL) {
            size_t off = 0;
            codec_status_t cs;

            wire_buf_clear(&req->reply);
            if (req->client_framed) {
                off = wire_frame_begin(&req->reply);
            }
            cs = codec_reply(&req->call, set->backend_proto, msg + hdr,
                             len - hdr, req->backend_seqid,
                             req->client_proto, &req->reply, &err,
                             &w->reply_limits);
            if (cs != CODEC_OK) {
                /* out of step with the server: nothing after is trusted */
                g_snprintf(why, sizeof(why), "bad reply: %s",
                           err.message != NULL ? err.message : "malformed");
                evbuffer_drain(in, len);
                TAILQ_INSERT_HEAD(&conn->pending, req, backend_link);
                conn->npending++;
                METRICS_ADD(conn->server->stats.inflight, 1);
                backend_conn_fail(conn, why, "connection reset after a "
                                  "bad reply", FALSE);
                return;
            }
            if (req->client_framed) {
                wire_frame_end(&req->reply, off);
            }
        }
        evbuffer_drain(in, len);
        proxy_req_finish(w, req);
    }
    backend_conn_arm(conn);
}

static void
backend_event_cb(struct bufferevent *bev, short what, void *arg)
{
    struct backend_conn *conn = arg;
    char why[BACKEND_MSG_MAX];

    if (what & BEV_EVENT_CONNECTED) {
        int one = 1;

        setsockopt(bufferevent_getfd(bev), IPPROTO_TCP, TCP_NODELAY, &one,
                   sizeof(one));
        conn->state = BACKEND_CONNECTED;
        METRICS_ADD(conn->server->stats.open, 1);
        conn->server->retry_at = 0;
        conn->last_active = proxy_now();
        g_debug("backend %s: conn %u: connected", conn->server->srv->name,
                conn->index);
        backend_conn_arm(conn);
        return;
    }
    if (what & BEV_EVENT_ERROR) {
        int err = EVUTIL_SOCKET_ERROR();

        if (conn->state == BACKEND_CONNECTING) {
            g_snprintf(why, sizeof(why), "connect: %s",
                       evutil_socket_error_to_string(err));
            backend_connect_failed(conn, why);
        } else {
            g_snprintf(why, sizeof(why), "%s",
                       evutil_socket_error_to_string(err));
            backend_conn_fail(conn, why, why, TRUE);
        }
        return;
    }
    if (what & BEV_EVENT_EOF) {
        if (conn->npending == 0) {
            /* HBase drops idle connections: normal, reconnect on demand */
            g_debug("backend %s: conn %u: closed by server while idle",
                    conn->server->srv->name, conn->index);
            backend_conn_close(conn);
            return;
        }
        backend_conn_fail(conn, "connection closed by server",
                          "connection closed by server", TRUE);
    }
}

static void
backend_timer_cb(evutil_socket_t fd, short what, void *arg)
{
    struct backend_conn *conn = arg;
    const struct proxy_settings *set = backend_settings(conn);
    struct proxy_req *head = TAILQ_FIRST(&conn->pending);
    gint64 now = proxy_now();
    char why[BACKEND_MSG_MAX];

    if (conn->state == BACKEND_CONNECTING && now >= conn->connect_deadline) {
        g_snprintf(why, sizeof(why), "connect timed out after %u ms",
                   set->connect_timeout_ms);
        backend_connect_failed(conn, why);
        return;
    }
    if (head != NULL && now >= head->deadline) {
        /* replies are FIFO: the ones behind it can no longer arrive */
        g_snprintf(why, sizeof(why), "timed out after %u ms",
                   set->request_timeout_ms);
        backend_conn_fail(conn, why, "connection reset after an earlier "
                          "request timed out", TRUE);
        return;
    }
    if (head == NULL && conn->state == BACKEND_CONNECTED
        && now >= conn->last_active
                      + (gint64)BACKEND_IDLE_CLOSE_MS * 1000) {
        g_debug("backend %s: conn %u: closing idle connection",
                conn->server->srv->name, conn->index);
        backend_conn_close(conn);
        return;
    }
    backend_conn_arm(conn);
}
