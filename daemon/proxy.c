/* proxy.c: worker threads, listeners, startup and shutdown; the data path. */

/*
 * The data path of one worker thread.  Every worker owns all of this;
 * workers share nothing but the config and struct proxy.
 *
 *        one listener on worker 0's loop; accepted sockets go to the
 *        workers in turn (worker 0's own turn directly, the others'
 *                      |  through their bell)
 *                      v accept
 *   client  ---> struct client ---------------------------------------+
 *   (any of      req_read() into client->in; wire_detect once;        |
 *    binary/     each message a struct req on client->reqs            |
 *    compact x   |                                                    |
 *    framed/     | codec_request() on a whole frame, or on the front  |
 *    buffered)   | of the stream (codec_io.stream), where it finds    |
 *                | the end as it walks;                               |
 *                | salt rows, backend seqid/protocol                  |
 *                v                                                    |
 *             client_send(): in the client's order (see below)        |
 *                |                                                    |
 *             backend_submit(): behind the client's unanswered call   |
 *             on its connection, else server round robin, the         |
 *             connection with the fewest pending; on conn->pending    |
 *                |                                                    |
 *                v                         struct backend_conn x      |
 *             HBase Thrift server  <---->  pool_size per server       |
 *                                          (pipelined, FIFO replies)  |
 *                |                                                    |
 *                | reply: head of conn->pending; codec_reply() into   |
 *                | req->reply (unsalt, client seqid/protocol/frame)   |
 *                v                                                    |
 *             worker_req_finish() -> client_answered(): one send of   |
 *             the replies done at the head of client->reqs (queued    |
 *             only if the socket takes less), so                      |
 *   client  <--- a client sees replies in the order it asked  <-------+
 *
 *   client->reqs:   [r1 done] [r2 on conn A] [r3 on conn A] [r4 parked]
 *                    ^ written  ^ blocks r3's reply until answered
 *   conn->pending:  [r2] [r7 of another client] [r3] ...  oldest first
 *
 * HBase's servers take one call per connection at a time, so a client's
 * calls take effect in the order it sent them.  The proxy keeps that:
 * a client's calls go on while they can share one backend connection
 * (point calls behind point calls: the server answers them in turn);
 * a call that cannot (a scanner call, which the scan engine spreads
 * over other connections, or one whose connection went away or belongs
 * to a pool a reload replaced) is parked, and nothing more is read from
 * that client, until all before it are answered.  A synchronous client
 * never has a call unanswered when it sends the next: for it, nothing
 * changes.
 *
 * A request is on both queues until answered.  A client that closes
 * detaches its waiting requests (req->client = NULL) and the backend
 * drops their replies; a failed backend connection answers each of its
 * requests with an IOError, so the client side never waits forever.
 * Timeouts are per backend connection: the head of its FIFO is the
 * oldest request, so one timer armed for that deadline covers them all.
 * Writes go to the socket at once when nothing is queued (req_write),
 * so EV_WRITE is armed only on a short write; reads are one recv each
 * (req_read), without libevent's FIONREAD; other threads reach a
 * worker only through its bell (an eventfd), so the bases need no locks.
 *
 * The pieces live in layers (daemon/README.md, "Layers"): req.c holds the
 * request and the socket I/O, client.c, backend.c and scan.c the
 * engines, worker.h what they share; this file makes the workers and
 * fills in their hooks, by which the backend hands a finished request up
 * to its client (worker_req_finish -> client_answered) without including
 * it.
 */

#include "proxy.h"

#include <errno.h>
#include <netdb.h>
#include <signal.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <event2/buffer.h>

#include "backend.h"
#include "health.h"
#include "catalog.h"
#include "client.h"
#include "config.h"
#include "hbase1.h"
#include "httpc.h"
#include "httpd.h"
#include "invariant.h"
#include "keyviz.h"
#include "metrics.h"
#include "scan.h"
#include "tabstate.h"
#include "tls.h"

/* Shutdown: how often quiet clients are looked for. */
#define PROXY_DRAIN_POLL_MS 20
/* Shutdown never waits longer than this for answers. */
#define PROXY_SHUTDOWN_MAX_MS 10000

G_DEFINE_QUARK(proxy_error_quark, proxy_error)

/* ---- settings ----------------------------------------------------------- */

gboolean
proxy_resolve(const char *host, uint16_t port, gboolean passive,
              struct sockaddr_storage *out, socklen_t *outlen, GError **error)
{
    struct addrinfo hints, *res = NULL;
    char service[8];
    int rc;

    g_assert(out != NULL && outlen != NULL);
    memset(&hints, 0, sizeof(hints));
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = passive ? AI_PASSIVE : 0;
    g_snprintf(service, sizeof(service), "%u", (unsigned)port);
    rc = getaddrinfo(host != NULL && host[0] != '\0' ? host : NULL, service,
                     &hints, &res);
    if (rc != 0 || res == NULL) {
        g_set_error(error, PROXY_ERROR, PROXY_ERROR_RESOLVE,
                    "cannot resolve %s:%u: %s", host, (unsigned)port,
                    rc != 0 ? gai_strerror(rc) : "no address");
        return FALSE;
    }
    memcpy(out, res->ai_addr, res->ai_addrlen);
    *outlen = res->ai_addrlen;
    freeaddrinfo(res);
    return TRUE;
}

/* A listener's address: the host kept (truncated) for the logs, the port,
 * and the address resolved; what names the key in the error. */
static gboolean
proxy_listen_load(const struct config_addr *a, const char *what, char *host,
                  size_t host_size, uint16_t *port,
                  struct sockaddr_storage *addr, socklen_t *addrlen,
                  GError **error)
{
    g_strlcpy(host, a->host != NULL ? a->host : "", host_size);
    *port = a->port;
    if (!proxy_resolve(host, *port, TRUE, addr, addrlen, error)) {
        g_prefix_error(error, "%s: ", what);
        return FALSE;
    }
    return TRUE;
}

/* Copies what the I/O core needs out of cfg; resolves backend names
 * once, here, so no worker ever blocks on DNS. */
gboolean
proxy_settings_load(struct worker_settings *set, const struct config *cfg,
                    GError **error)
{
    unsigned i;

    g_assert(set != NULL && cfg != NULL);
    memset(set, 0, sizeof(*set));
    if (!proxy_listen_load(&cfg->listen, "[proxy] listen", set->listen_host,
                           sizeof(set->listen_host), &set->listen_port,
                           &set->listen_addr, &set->listen_addrlen, error)) {
        return FALSE;
    }
    set->thrift2_enabled = cfg->thrift2_enabled;
    if (cfg->thrift2_enabled &&
        !proxy_listen_load(&cfg->thrift2_listen, "[thrift2] listen",
                           set->thrift2_host, sizeof(set->thrift2_host),
                           &set->thrift2_port, &set->thrift2_addr,
                           &set->thrift2_addrlen, error)) {
        return FALSE;
    }
    set->tls_enabled = cfg->tls_enabled;
    if (cfg->tls_enabled &&
        !proxy_listen_load(&cfg->tls_listen, "[tls] listen", set->tls_host,
                           sizeof(set->tls_host), &set->tls_port,
                           &set->tls_addr, &set->tls_addrlen, error)) {
        return FALSE;
    }
    set->tls_handshake_ms = cfg->tls_handshake_timeout_ms;
    for (int h = 0; h < 2; h++) {
        const struct config_addr *a = h == 0 ? &cfg->http_listen
                                             : &cfg->http2_listen;

        set->http_enabled[h] = h == 0 ? cfg->http_enabled : cfg->http2_enabled;
        if (!set->http_enabled[h]) {
            continue;
        }
        set->http_port[h] = a->port;
        if (!proxy_resolve(a->host != NULL ? a->host : "", a->port, TRUE,
                           &set->http_addr[h], &set->http_addrlen[h], error)) {
            g_prefix_error(error, "[http] %s: ",
                           h == 0 ? "listen" : "thrift2_listen");
            return FALSE;
        }
    }
    set->workers = cfg->workers != 0 ? cfg->workers
                                     : (unsigned)g_get_num_processors();
    if (set->workers == 0) {
        set->workers = 1;
    }
    if (cfg->n_servers == 0 || cfg->n_servers > WORKER_MAX_BACKENDS) {
        g_set_error(error, PROXY_ERROR, PROXY_ERROR_CONFIG,
                    "[backend] servers: need 1 to %d servers, have %zu",
                    WORKER_MAX_BACKENDS, cfg->n_servers);
        return FALSE;
    }
    if (cfg->n_servers + cfg->n_thrift2_servers > WORKER_MAX_BACKENDS) {
        g_set_error(error, PROXY_ERROR, PROXY_ERROR_CONFIG,
                    "[backend] thrift2_servers: at most %d servers in "
                    "servers and thrift2_servers together, have %zu",
                    WORKER_MAX_BACKENDS,
                    cfg->n_servers + cfg->n_thrift2_servers);
        return FALSE;
    }
    set->nservers = (unsigned)(cfg->n_servers + cfg->n_thrift2_servers);
    for (i = 0; i < set->nservers; i++) {
        struct worker_server *s = &set->servers[i];
        gboolean two = i >= cfg->n_servers;
        const struct config_addr *a =
            two ? &cfg->thrift2_servers[i - cfg->n_servers] : &cfg->servers[i];
        char *name = config_addr_to_string(a);

        g_strlcpy(s->name, name, sizeof(s->name));
        g_free(name);
        s->service = two ? HBASE1_SERVICE_THRIFT2 : HBASE1_SERVICE_THRIFT1;
        for (unsigned j = 0; j < i; j++) {
            /* one server speaks one service: health is kept by name */
            if (strcmp(set->servers[j].name, s->name) == 0) {
                g_set_error(error, PROXY_ERROR, PROXY_ERROR_CONFIG,
                            "[backend] thrift2_servers: %s is also in "
                            "servers; HBase serves Thrift1 and Thrift2 on "
                            "separate ports",
                            s->name);
                return FALSE;
            }
        }
        if (cfg->sasl == CONFIG_SASL_GSSAPI) {
            char *sp = config_sasl_server_principal(cfg, a->host);

            if (g_strlcpy(s->sasl_server, sp, sizeof(s->sasl_server)) >=
                sizeof(s->sasl_server)) {
                g_set_error(error, PROXY_ERROR, PROXY_ERROR_CONFIG,
                            "[backend] %s: the server principal %s is "
                            "too long",
                            two ? "thrift2_servers" : "servers", sp);
                g_free(sp);
                return FALSE;
            }
            g_free(sp);
        }
        if (!proxy_resolve(a->host, a->port, FALSE, &s->addr, &s->addrlen,
                           error)) {
            g_prefix_error(error, two ? "[backend] thrift2_servers: "
                                      : "[backend] servers: ");
            return FALSE;
        }
        if (cfg->transport == CONFIG_TRANSPORT_HTTP) {
            httpc_target_init(&s->http, cfg, a, &s->addr);
        }
    }
    set->backend_proto = cfg->protocol == CONFIG_PROTOCOL_COMPACT
                             ? WIRE_COMPACT
                             : WIRE_BINARY;
    set->backend_framed = cfg->transport == CONFIG_TRANSPORT_FRAMED;
    set->backend_http = cfg->transport == CONFIG_TRANSPORT_HTTP;
    if (set->backend_http && !httpc_init(cfg, error)) {
        return FALSE;
    }
    set->pool_size = cfg->pool_size != 0 ? cfg->pool_size : 4;
    set->connect_timeout_ms = cfg->connect_timeout_ms;
    set->request_timeout_ms = cfg->request_timeout_ms;
    set->slow_call_ms = cfg->slow_call_ms;
    set->client_idle_timeout_ms = cfg->client_idle_timeout_ms;
    set->max_connections = cfg->max_connections;
    set->max_frame_size = cfg->max_frame_size;
    set->max_reply_size = cfg->max_frame_size; /* the config says both */
    set->shutdown_timeout_ms = MIN(MAX(cfg->request_timeout_ms, 100u),
                                   PROXY_SHUTDOWN_MAX_MS);
    if (cfg->sasl == CONFIG_SASL_GSSAPI) {
        set->backend_sasl = TRUE;
        set->backend_sasl_qop = (int)cfg->sasl_qop;
        if (g_strlcpy(set->sasl_principal, cfg->sasl_principal,
                      sizeof(set->sasl_principal)) >=
                sizeof(set->sasl_principal) ||
            g_strlcpy(set->sasl_keytab, cfg->sasl_keytab,
                      sizeof(set->sasl_keytab)) >= sizeof(set->sasl_keytab)) {
            g_set_error(error, PROXY_ERROR, PROXY_ERROR_CONFIG,
                        "[backend] sasl_principal or sasl_keytab is too "
                        "long");
            return FALSE;
        }
    }
    return TRUE;
}

static void proxy_stop_cb(struct worker *w);

/* The bell: posted calls, and a stop asked by the main thread. */
static void
proxy_bell_cb(evutil_socket_t fd, short what, void *arg)
{
    struct worker *w = arg;

    bell_answer(&w->bell);
    if (g_atomic_int_get(&w->stop_asked) && w->state == WORKER_RUNNING) {
        proxy_stop_cb(w);
    }
    worker_run_posted(w);
}

/* ---- workers ------------------------------------------------------------ */

/* A socket the listening worker accepted for another one. */
struct proxy_accepted {
    evutil_socket_t fd;
    const struct hbase1_service *svc; /* of the listener that took it */
    SSL_CTX *tls;                     /* a reference, or NULL: plain */
    struct sockaddr_storage sa;
    int salen;
};

/* Runs on the worker whose turn it was. */
static void
proxy_accepted_cb(struct worker *w, void *arg)
{
    struct proxy_accepted *a = arg;

    client_accept(w, a->fd, (struct sockaddr *)&a->sa, a->salen, a->svc,
                  a->tls);
    g_clear_pointer(&a->tls, SSL_CTX_free);
    g_free(a);
}

/*
 * The one listening socket runs on worker 0's loop.  Accepted sockets go
 * to the workers in turn: worker 0 takes its own turn at once, the others
 * get theirs through their bell.  One socket, not SO_REUSEPORT on each
 * worker, so a second process bound to the same address fails with
 * "Address already in use" instead of silently taking half the clients.
 */
static void
proxy_accept(struct worker *w, evutil_socket_t fd, struct sockaddr *sa,
             int salen, const struct hbase1_service *svc, gboolean tls)
{
    struct proxy *p = w->proxy;
    struct worker *to = &p->workers[p->next_worker];
    struct proxy_accepted *a;
    /* the context of the moment: a reload may replace it meanwhile */
    SSL_CTX *ctx = tls ? proxy_tls_ctx(p) : NULL;

    p->next_worker = (p->next_worker + 1) % p->nworkers;
    if (to == w || salen < 0 || (size_t)salen > sizeof(a->sa)) {
        client_accept(w, fd, sa, salen, svc, ctx);
        if (ctx != NULL) {
            SSL_CTX_free(ctx);
        }
        return;
    }
    a = g_new(struct proxy_accepted, 1);
    a->fd = fd;
    a->svc = svc;
    a->tls = ctx;
    memcpy(&a->sa, sa, (size_t)salen);
    a->salen = salen;
    worker_post(to, proxy_accepted_cb, a);
}

/* Every listener of worker 0: which one took the connection says its
 * service (Thrift2's listener, the other method table) and whether TLS
 * ends here ([tls] listen: Thrift1 clients on other hosts). */
static void
proxy_accept_cb(struct evconnlistener *l, evutil_socket_t fd,
                struct sockaddr *sa, int salen, void *arg)
{
    struct worker *w = arg;
    hbase1_service_id_t kind = l == w->listener2 ? HBASE1_SERVICE_THRIFT2
                                                 : HBASE1_SERVICE_THRIFT1;

    proxy_accept(w, fd, sa, salen, hbase1_service(kind), l == w->listener_tls);
}

/* An HTTP connection's bridge: an ordinary client to the workers. */
static void
proxy_http_handoff(void *arg, evutil_socket_t fd, const struct sockaddr *peer,
                   int peerlen, const struct hbase1_service *svc)
{
    struct sockaddr_storage sa;
    int salen = peerlen;

    memset(&sa, 0, sizeof(sa));
    if (peer == NULL || peerlen <= 0 || (size_t)peerlen > sizeof(sa)) {
        sa.ss_family = AF_UNIX;
        salen = (int)sizeof(sa_family_t);
    } else {
        memcpy(&sa, peer, (size_t)peerlen);
    }
    proxy_accept(arg, fd, (struct sockaddr *)&sa, salen, svc, FALSE);
}

static void
proxy_accept_error_cb(struct evconnlistener *l, void *arg)
{
    struct worker *w = arg;
    int err = EVUTIL_SOCKET_ERROR();

    /* EMFILE and friends: keep the listener; libevent retries on the
     * next readiness, and closing clients free descriptors */
    g_warning("worker %u: accept: %s", w->id,
              evutil_socket_error_to_string(err));
}

/* Requests waiting on w's pools, retired ones included. */
static unsigned
proxy_worker_pending(const struct worker *w)
{
    unsigned n = 0;

    for (const struct backend_pool *pool = w->pool; pool != NULL;
         pool = pool->older) {
        n += backend_pool_pending(pool);
    }
    return n;
}

/* Shutdown poll: close clients with nothing left to answer; stop the
 * loop when none remain or the deadline passed. */
static void
proxy_drain_cb(evutil_socket_t fd, short what, void *arg)
{
    struct worker *w = arg;
    struct client *c, *next;
    gboolean late = req_now() >= w->stop_deadline;

    for (c = TAILQ_FIRST(&w->clients); c != NULL; c = next) {
        next = TAILQ_NEXT(c, link);
        if (late || client_drain(c)) {
            client_close(c);
        }
    }
    /* backend scanner closes still on their way keep the loop going */
    if (TAILQ_EMPTY(&w->clients) && proxy_worker_pending(w) == 0) {
        event_base_loopbreak(w->base);
        return;
    }
    if (late) {
        event_base_loopbreak(w->base);
        return;
    }
}

/* The worker takes no more clients: its listeners, plain, TLS and HTTP,
 * close. */
static void
proxy_worker_close_listeners(struct worker *w)
{
    g_clear_pointer(&w->listener, evconnlistener_free);
    g_clear_pointer(&w->listener2, evconnlistener_free);
    g_clear_pointer(&w->listener_tls, evconnlistener_free);
    for (int i = 0; i < 2; i++) {
        g_clear_pointer(&w->httpd[i], httpd_free);
    }
}

/* Runs in the worker: the main thread asked it to stop. */
static void
proxy_stop_cb(struct worker *w)
{
    struct timeval tv = { 0, PROXY_DRAIN_POLL_MS * 1000 };

    worker_set_state(w, WORKER_STOPPING);
    proxy_worker_close_listeners(w);
    w->stop_deadline = req_now() +
                       (gint64)w->gen->set.shutdown_timeout_ms * 1000;
    scan_worker_stop(w);
    event_add(w->drain_ev, &tv);
    proxy_drain_cb(-1, 0, w);
}

/* Most passes proxy_worker_settle makes: each one runs what the last one
 * made active; a handful suffice, the bound only guards against a loop. */
#define PROXY_SETTLE_PASSES 16

/* Callbacks queued, or calls posted that the bell has not yet run. */
static gboolean
proxy_worker_busy(struct worker *w)
{
    gboolean posted;

    g_mutex_lock(&w->inbox_lock);
    posted = !g_queue_is_empty(&w->inbox);
    g_mutex_unlock(&w->inbox_lock);
    return posted ||
           event_base_get_num_events(w->base, EVENT_BASE_COUNT_ACTIVE) > 0;
}

/*
 * The loop stopped (shutdown): close what clients remain, then run the
 * callbacks still queued until none is.  A bufferevent is freed only by a
 * finalizer the base runs later, and one with a deferred callback queued
 * (bufferevent_trigger, BEV_OPT_DEFER_CALLBACKS) holds a reference until
 * that callback runs; event_base_free would cancel the callback without
 * dropping the reference, leaking the bufferevent and its buffers.  Runs
 * on w's thread, while the other workers still exist for what it posts.
 */
static void
proxy_worker_settle(struct worker *w)
{
    /* the poll and the expiry timer have no more work */
    event_del(w->drain_ev);
    event_del(w->scan_timer);
    while (!TAILQ_EMPTY(&w->clients)) {
        client_close(TAILQ_FIRST(&w->clients));
    }
    for (int i = 0; i < PROXY_SETTLE_PASSES && proxy_worker_busy(w); i++) {
        event_base_loop(w->base, EVLOOP_NONBLOCK);
    }
}

/* How often a worker lets go of generations and pools nothing uses. */
#define PROXY_GC_MS 1000

/* A generation of cfg (settings loaded by the caller into gen->set),
 * held by the main thread and, once posted, by every worker. */
static struct worker_gen *
proxy_gen_new(struct proxy *p, unsigned id, struct tabstate *ts)
{
    struct worker_gen *gen = g_new0(struct worker_gen, 1);

    gen->id = id;
    gen->cfg = ts->cfg;
    gen->ts = ts;
    gen->refs = 1 + (gint)p->set.workers;
    gen->uses = g_new0(unsigned, p->set.workers);
    g_mutex_lock(&p->gens_lock);
    g_ptr_array_add(p->gens, gen);
    g_mutex_unlock(&p->gens_lock);
    return gen;
}

static void
proxy_gen_free(struct worker_gen *gen)
{
    tabstate_unref(gen->ts);
    g_free(gen->uses);
    g_free(gen);
}

/* Drops one reference; the last one frees gen.  Any thread. */
static void
proxy_gen_unref(struct proxy *p, struct worker_gen *gen)
{
    if (!g_atomic_int_dec_and_test(&gen->refs)) {
        return;
    }
    g_mutex_lock(&p->gens_lock);
    g_ptr_array_remove_fast(p->gens, gen);
    g_mutex_unlock(&p->gens_lock);
    proxy_gen_free(gen);
}

/*
 * Every PROXY_GC_MS on w: lets go of the older generations nothing of w
 * points into any more, and frees the retired pools nothing uses (their
 * counters move to the health entries first, under the lock the scrape
 * takes).  Reloads by the thousand then cost nothing once they are over.
 */
static void
proxy_worker_gc(evutil_socket_t fd, short what, void *arg)
{
    struct worker *w = arg;
    struct proxy *p = w->proxy;
    struct backend_pool **at;

    for (guint i = 0; i < w->old_gens->len;) {
        struct worker_gen *gen = g_ptr_array_index(w->old_gens, i);

        if (gen->uses[w->id] == 0) {
            g_debug("worker %u: lets go of generation %u", w->id, gen->id);
            g_ptr_array_remove_index_fast(w->old_gens, i);
            proxy_gen_unref(p, gen);
        } else {
            i++;
        }
    }
    for (at = &w->pool->older; *at != NULL;) {
        struct backend_pool *pool = *at;

        if (!backend_pool_idle(pool)) {
            at = &pool->older;
            continue;
        }
        g_debug("worker %u: frees a retired backend pool", w->id);
        g_mutex_lock(&p->pools_lock);
        backend_pool_fold(pool);
        *at = pool->older;
        g_mutex_unlock(&p->pools_lock);
        backend_pool_free(pool);
    }
}

static void *
proxy_worker_main(void *arg)
{
    struct worker *w = arg;
    struct timeval gc = { PROXY_GC_MS / 1000, (PROXY_GC_MS % 1000) * 1000 };

    worker_set_state(w, WORKER_RUNNING);
    scan_worker_start(w);
    event_add(w->gc_timer, &gc);
    event_base_dispatch(w->base);
    worker_set_state(w, WORKER_STOPPED);
    proxy_worker_settle(w);
    return NULL;
}

/* The wire limits of w's generation. */
static void
proxy_worker_limits(struct worker *w)
{
    const struct worker_settings *set = &w->gen->set;

    w->client_limits = wire_default_limits;
    w->client_limits.max_message = set->max_frame_size;
    w->client_limits.max_string = MIN(w->client_limits.max_string,
                                      set->max_frame_size);
    w->reply_limits = wire_default_limits;
    w->reply_limits.max_message = set->max_reply_size;
    w->reply_limits.max_string = set->max_reply_size;
}

static evutil_socket_t
proxy_worker_fd(const struct worker *w)
{
    return w->listener != NULL ? evconnlistener_get_fd(w->listener) : -1;
}

/* A listener of worker 0 on sa for the [group] listen key; NULL and error
 * set when the address cannot be bound. */
static struct evconnlistener *
proxy_listen(struct worker *w, const struct sockaddr *sa, socklen_t salen,
             const char *group, const char *host, uint16_t port,
             GError **error)
{
    /* no LEV_OPT_REUSEABLE_PORT: the address is this process's alone */
    struct evconnlistener *l =
        evconnlistener_new_bind(w->base, proxy_accept_cb, w,
                                LEV_OPT_REUSEABLE | LEV_OPT_CLOSE_ON_FREE |
                                    LEV_OPT_CLOSE_ON_EXEC,
                                1024, sa, (int)salen);

    if (l == NULL) {
        int err = EVUTIL_SOCKET_ERROR();

        g_set_error(error, PROXY_ERROR, PROXY_ERROR_LISTEN,
                    "[%s] listen: cannot listen on %s:%u: %s", group,
                    host[0] != '\0' ? host : "*", (unsigned)port,
                    evutil_socket_error_to_string(err));
        return NULL;
    }
    evconnlistener_set_error_cb(l, proxy_accept_error_cb);
    return l;
}

static gboolean
proxy_worker_init(struct proxy *p, struct worker *w, unsigned id,
                  const struct sockaddr *sa, socklen_t salen, GError **error)
{
    w->proxy = p;
    w->id = id;
    w->hooks.answered = client_answered;
    w->hooks.flush_held = client_flush_held;
    w->startup = &p->set;
    w->nconns = &p->nconns;
    w->scans = p->scans;
    w->health = p->health;
    w->gen = p->gen;
    w->metrics = metrics_worker(p->metrics, id);
    TAILQ_INIT(&w->clients);
    TAILQ_INIT(&w->held);
    TAILQ_INIT(&w->corked);
    TAILQ_INIT(&w->free_reqs);
    wire_buf_init(&w->scratch);
    codec_tally_init(&w->tally);
    /* the codec notes logical keys only for the key visualizer */
    w->tally.keys_on = w->metrics->kv != NULL;
    w->rbuf = g_malloc(REQ_READ_MAX);
    proxy_worker_limits(w);
    w->next_seqid = 1;

    w->base = event_base_new();
    if (w->base == NULL) {
        g_set_error(error, PROXY_ERROR, PROXY_ERROR_LIBEVENT,
                    "worker %u: event_base_new failed", id);
        return FALSE;
    }
    w->drain_ev = event_new(w->base, -1, EV_PERSIST, proxy_drain_cb, w);
    g_mutex_init(&w->inbox_lock);
    g_queue_init(&w->inbox);
    w->scan_timer = event_new(w->base, -1, EV_PERSIST, scan_timer_cb, w);
    w->gc_timer = event_new(w->base, -1, EV_PERSIST, proxy_worker_gc, w);
    w->old_gens = g_ptr_array_new();
    if (!bell_init(&w->bell, w->base, proxy_bell_cb, w) ||
        w->scan_timer == NULL || w->gc_timer == NULL || w->drain_ev == NULL) {
        g_set_error(error, PROXY_ERROR, PROXY_ERROR_LIBEVENT,
                    "worker %u: event_new failed", id);
        return FALSE;
    }
    if (id == 0 &&
        ((w->listener = proxy_listen(w, sa, salen, "proxy", p->set.listen_host,
                                     p->set.listen_port, error)) == NULL ||
         (p->set.thrift2_enabled &&
          (w->listener2 = proxy_listen(w,
                                       (struct sockaddr *)&p->set.thrift2_addr,
                                       p->set.thrift2_addrlen, "thrift2",
                                       p->set.thrift2_host,
                                       p->set.thrift2_port, error)) == NULL) ||
         (p->set.tls_enabled &&
          (w->listener_tls = proxy_listen(
               w, (struct sockaddr *)&p->set.tls_addr, p->set.tls_addrlen,
               "tls", p->set.tls_host, p->set.tls_port, error)) == NULL))) {
        return FALSE;
    }
    for (int i = 0; id == 0 && i < 2; i++) {
        if (!p->set.http_enabled[i]) {
            continue;
        }
        w->httpd[i] =
            httpd_new(w->base, (struct sockaddr *)&p->set.http_addr[i],
                      p->set.http_addrlen[i],
                      hbase1_service(i == 0 ? HBASE1_SERVICE_THRIFT1
                                            : HBASE1_SERVICE_THRIFT2),
                      p->set.max_frame_size, proxy_http_handoff, w, error);
        if (w->httpd[i] == NULL) {
            g_prefix_error(error, "[http] %s: cannot listen on port %u: ",
                           i == 0 ? "listen" : "thrift2_listen",
                           (unsigned)p->set.http_port[i]);
            return FALSE;
        }
    }
    w->pool = backend_pool_new(w, w->gen);
    return TRUE;
}

static void
proxy_worker_deinit(struct worker *w)
{

    while (!TAILQ_EMPTY(&w->clients)) {
        client_close(TAILQ_FIRST(&w->clients));
    }
    while (w->pool != NULL) {
        struct backend_pool *older = w->pool->older;

        backend_pool_free(w->pool);
        w->pool = older;
    }
    proxy_worker_close_listeners(w);
    g_clear_pointer(&w->drain_ev, event_free);
    g_clear_pointer(&w->scan_timer, event_free);
    g_clear_pointer(&w->gc_timer, event_free);
    if (w->old_gens != NULL) {
        /* the process frees what is left of every generation */
        g_ptr_array_free(w->old_gens, TRUE);
    }
    bell_free(&w->bell);
    if (w->base != NULL) {
        /* made with the base: the inbox and its lock */
        struct worker_call *post;

        while ((post = g_queue_pop_head(&w->inbox)) != NULL) {
            /* a socket accepted for w as it stopped: nobody else closes
             * it */
            if (post->fn == proxy_accepted_cb) {
                struct proxy_accepted *a = post->arg;

                evutil_closesocket(a->fd);
                g_free(a);
            }
            g_free(post);
        }
        g_mutex_clear(&w->inbox_lock);
    }
    worker_req_free_all(w);
    wire_buf_free(&w->scratch);
    codec_tally_free(&w->tally);
    g_free(w->rbuf);
    w->rbuf = NULL;
    g_clear_pointer(&w->flush_ev, event_free);
    if (w->base != NULL) {
        event_base_free(w->base);
    }
    memset(w, 0, sizeof(*w));
}

/* ---- reload ------------------------------------------------------------ */

/* Runs on w: from now on new requests use gen.  Requests, scanners and
 * backend connections under way keep what they started with. */
static void
proxy_worker_adopt(struct worker *w, void *arg)
{
    struct worker_gen *gen = arg;
    struct client *c;

    if (gen->new_pool) {
        struct backend_pool *pool = backend_pool_new(w, gen);

        /* the old pool keeps serving what it holds (open scanners are
         * pinned to their server there) and closes connections as they
         * go idle */
        pool->older = w->pool;
        backend_pool_retire(w->pool);
        __atomic_store_n(&w->pool, pool, __ATOMIC_RELEASE);
    }
    /* w's reference on the old one stays until nothing of w uses it */
    g_ptr_array_add(w->old_gens, w->gen);
    w->gen = gen;
    proxy_worker_limits(w);
    /* a client's input bound follows max_frame_size, or a larger frame
     * would never fit its buffer */
    TAILQ_FOREACH (c, &w->clients, link) {
        client_apply_limits(c);
    }
    g_debug("worker %u: configuration generation %u", w->id, gen->id);
    /* what earlier reloads left is usually unused by now: a burst of
     * reloads must not pile up generations until the next timer */
    proxy_worker_gc(-1, 0, w);
}

/* Whether two settings reach the same servers with the same pool. */
static gboolean
proxy_same_servers(const struct worker_settings *a,
                   const struct worker_settings *b)
{
    if (a->nservers != b->nservers || a->pool_size != b->pool_size) {
        return FALSE;
    }
    for (unsigned i = 0; i < a->nservers; i++) {
        /* same name, same address: a name that resolves elsewhere now
         * gets fresh connections */
        if (strcmp(a->servers[i].name, b->servers[i].name) != 0 ||
            a->servers[i].service != b->servers[i].service ||
            a->servers[i].addrlen != b->servers[i].addrlen ||
            memcmp(&a->servers[i].addr, &b->servers[i].addr,
                   a->servers[i].addrlen) != 0) {
            return FALSE;
        }
    }
    return TRUE;
}

/* A reload checked and waiting for its tables' catalog check. */
struct proxy_reload {
    struct tabstate *ts; /* the new generation's (owns its config) */
    struct worker_settings set;
    SSL_CTX *tls; /* the new certificate, or NULL */
};

struct proxy_reload *
proxy_reload_prepare(struct proxy *p, struct config *cfg, GError **error)
{
    struct proxy_reload *r;
    struct worker_settings set;
    SSL_CTX *tls = NULL;

    g_assert(cfg != NULL);
    /* the generation goes to running workers (their bells) */
    HSP_CHECK(p->state == PROXY_RUNNING);
    if (!config_reload_check(p->gen->cfg, cfg, error)) {
        config_free(cfg);
        return NULL;
    }
    /* the backend's TLS files again, as the listener's below: a CA
     * corrected or renewed in place takes a reload, not a restart */
    if (cfg->transport == CONFIG_TRANSPORT_HTTP &&
        !httpc_reload_tls(cfg, error)) {
        config_free(cfg);
        return NULL;
    }
    if (!proxy_settings_load(&set, cfg, error)) {
        config_free(cfg);
        return NULL;
    }
    if (cfg->tls_enabled) {
        /* the files again: a renewed certificate is what a reload is for;
         * one that does not load keeps the old one and the old config */
        tls = tls_server_ctx_new(cfg->tls_cert, cfg->tls_key,
                                 cfg->tls_client_ca, error);
        if (tls == NULL) {
            config_free(cfg);
            return NULL;
        }
    }
    r = g_new0(struct proxy_reload, 1);
    r->ts = tabstate_new(cfg, cfg);
    r->set = set;
    r->tls = tls;
    /* refused until HBase says otherwise, even if it does not answer */
    catalog_inherit_orphans(r->ts, p->gen->ts);
    return r;
}

struct tabstate *
proxy_reload_state(const struct proxy_reload *r)
{
    return r->ts;
}

void
proxy_reload_abandon(struct proxy_reload *r)
{
    if (r == NULL) {
        return;
    }
    g_clear_pointer(&r->tls, SSL_CTX_free);
    tabstate_unref(r->ts);
    g_free(r);
}

void
proxy_reload_commit(struct proxy *p, struct proxy_reload *r)
{
    struct worker_gen *old = p->gen, *gen;
    const struct config *cfg = r->ts->cfg;
    GString *added = g_string_new(NULL);
    SSL_CTX *tls = r->tls;

    HSP_CHECK(p->state == PROXY_RUNNING);

    gen = proxy_gen_new(p, old->id + 1, r->ts);
    gen->set = r->set;
    gen->new_pool = !proxy_same_servers(&old->set, &gen->set);
    g_free(r);
    metrics_add_state(p->metrics, gen->ts);
    for (size_t i = 0; i < cfg->n_tables; i++) {
        const struct config_table *t = &cfg->tables[i];

        if (config_find_table(old->cfg, t->name, t->name_len) == NULL) {
            /* rows it holds already: the catalog check refused it */
            g_string_append_printf(added, "%s%s%s", added->len > 0 ? ", " : "",
                                   t->name,
                                   tabstate_refusal(gen->ts, t) != NULL
                                       ? " (refused)"
                                       : "");
        }
    }
    p->gen = gen;
    g_atomic_pointer_set(&p->cfg, cfg);
    if (tls != NULL) {
        g_autofree char *what = tls_ctx_describe(tls);
        SSL_CTX *was;

        /* new connections get it; open ones keep theirs */
        g_mutex_lock(&p->tls_lock);
        was = p->tls_ctx;
        p->tls_ctx = tls;
        g_mutex_unlock(&p->tls_lock);
        if (was != NULL) {
            SSL_CTX_free(was);
        }
        g_message("reload: TLS listener certificate: %s", what);
    }
    /* before the workers make pools of the new servers */
    health_use(p->health, &gen->set);
    for (unsigned i = 0; i < p->nworkers; i++) {
        worker_post(&p->workers[i], proxy_worker_adopt, gen);
    }
    /* the main thread holds only the newest */
    proxy_gen_unref(p, old);
    g_message("reload: applied configuration generation %u from %s: %zu "
              "salted table%s%s%s, %u backend server%s%s",
              gen->id, cfg->source != NULL ? cfg->source : "(defaults)",
              cfg->n_tables, cfg->n_tables == 1 ? "" : "s",
              added->len > 0 ? ", new: " : "", added->str, gen->set.nservers,
              gen->set.nservers == 1 ? "" : "s",
              gen->new_pool ? " (new backend pools; old connections "
                              "drain)"
                            : "");
    g_string_free(added, TRUE);
}

SSL_CTX *
proxy_tls_ctx(struct proxy *p)
{
    SSL_CTX *ctx;

    g_assert(p != NULL);
    g_mutex_lock(&p->tls_lock);
    ctx = p->tls_ctx;
    if (ctx != NULL) {
        SSL_CTX_up_ref(ctx);
    }
    g_mutex_unlock(&p->tls_lock);
    return ctx;
}

unsigned
proxy_generation(const struct proxy *p)
{
    return p->gen != NULL ? p->gen->id : 0;
}

/* ---- the process -------------------------------------------------------- */

struct proxy *
proxy_new(struct tabstate *ts, GError **error)
{
    const struct config *cfg = ts->cfg;
    struct proxy *p;
    unsigned i;

    g_assert(cfg != NULL);
    p = g_new0(struct proxy, 1);
    p->cfg = cfg;
    p->scans = scan_table_new();
    g_mutex_init(&p->gens_lock);
    g_mutex_init(&p->pools_lock);
    g_mutex_init(&p->tls_lock);
    p->gens = g_ptr_array_new();
    if (!proxy_settings_load(&p->set, cfg, error)) {
        tabstate_unref(ts);
        proxy_free(p);
        return NULL;
    }
    if (cfg->tls_enabled) {
        /* read before anything runs (and before any privilege is gone) */
        p->tls_ctx = tls_server_ctx_new(cfg->tls_cert, cfg->tls_key,
                                        cfg->tls_client_ca, error);
        if (p->tls_ctx == NULL) {
            tabstate_unref(ts);
            proxy_free(p);
            return NULL;
        }
    }
    p->gen = proxy_gen_new(p, 1, ts);
    p->gen->set = p->set;
    /* before the pools: each server's pool entry points at its health */
    p->health = health_new(&p->set);
    /* counted only where it can be seen: on the admin endpoint */
    p->metrics = metrics_new(p->set.workers,
                             cfg->keyviz.enabled && cfg->admin_enabled
                                 ? keyviz_new(&cfg->keyviz, p->set.workers)
                                 : NULL);
    metrics_add_state(p->metrics, ts);
    p->port = p->set.listen_port;
    p->nworkers = p->set.workers;
    p->workers = g_new0(struct worker, p->nworkers);
    for (i = 0; i < p->nworkers; i++) {
        /* deinit runs on every one, made or not */
        p->workers[i].bell.fd = -1;
    }
    for (i = 0; i < p->nworkers; i++) {
        if (!proxy_worker_init(p, &p->workers[i], i,
                               (struct sockaddr *)&p->set.listen_addr,
                               p->set.listen_addrlen, error)) {
            proxy_free(p);
            return NULL;
        }
    }
    if (p->set.tls_enabled && p->workers[0].listener_tls != NULL) {
        p->port_tls = p->set.tls_port != 0
                          ? p->set.tls_port
                          : httpd_bound_port(evconnlistener_get_fd(
                                p->workers[0].listener_tls));
    }
    p->port2 = p->set.thrift2_port;
    if (p->set.thrift2_enabled && p->port2 == 0 &&
        p->workers[0].listener2 != NULL) {
        p->port2 =
            httpd_bound_port(evconnlistener_get_fd(p->workers[0].listener2));
    }
    if (p->port == 0) {
        /* port 0 (tests): the port the kernel picked */
        p->port = httpd_bound_port(proxy_worker_fd(&p->workers[0]));
    }
    return p;
}

/* ---- the process's states ------------------------------------------------ */

static const char *const proxy_state_names[] = {
    [PROXY_MADE] = "made",
    [PROXY_RUNNING] = "running",
    [PROXY_STOPPED] = "stopped",
};

/* The one place the process changes state (proxy.h's arrows). */
static void
proxy_set_state(struct proxy *p, enum proxy_state to)
{
    gboolean ok = to == PROXY_RUNNING   ? p->state == PROXY_MADE
                  : to == PROXY_STOPPED ? p->state != PROXY_STOPPED
                                        : FALSE;

    if (!ok) {
        invariant_no_arrow(G_STRLOC, proxy_state_names,
                           G_N_ELEMENTS(proxy_state_names), p->state, to,
                           "proxy");
    }
    p->state = to;
}

gboolean
proxy_start(struct proxy *p, GError **error)
{
    sigset_t all, old;
    unsigned i;
    int rc = 0;

    g_assert(p != NULL);
    if (!HSP_CHECK(p->state == PROXY_MADE)) {
        /* its workers run already, or were joined */
        g_set_error(error, PROXY_ERROR, PROXY_ERROR_LIBEVENT,
                    "the proxy was started before");
        return FALSE;
    }
    if (!health_start(p->health, error)) {
        p->nworkers = 0;
        return FALSE;
    }
    /* threads inherit the mask: signals stay with the main thread */
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &old);
    for (i = 0; i < p->nworkers && rc == 0; i++) {
        rc = pthread_create(&p->workers[i].thread, NULL, proxy_worker_main,
                            &p->workers[i]);
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc != 0) {
        i--;
        g_set_error(error, PROXY_ERROR, PROXY_ERROR_LIBEVENT,
                    "cannot start worker %u: %s", i, g_strerror(rc));
        /* the ones already running are stopped by proxy_stop */
        p->nworkers = i;
        return FALSE;
    }
    proxy_set_state(p, PROXY_RUNNING);
    g_message("listening on %s:%u with %u worker%s, %u backend server%s, "
              "pool_size %u",
              p->set.listen_host[0] != '\0' ? p->set.listen_host : "*",
              (unsigned)p->port, p->nworkers, p->nworkers == 1 ? "" : "s",
              p->set.nservers, p->set.nservers == 1 ? "" : "s",
              p->set.pool_size);
    if (p->set.tls_enabled) {
        g_autofree char *what = tls_ctx_describe(p->tls_ctx);

        g_message("listening for TLS clients on %s:%u (%s%s)",
                  p->set.tls_host[0] != '\0' ? p->set.tls_host : "*",
                  (unsigned)p->port_tls, what,
                  p->gen->cfg->tls_client_ca != NULL
                      ? "; client certificates required"
                      : "");
    }
    for (int h = 0; h < 2; h++) {
        if (p->workers[0].httpd[h] != NULL) {
            g_message("listening for %s clients over HTTP on port %u",
                      h == 0 ? "Thrift1" : "Thrift2",
                      httpd_port(p->workers[0].httpd[h]));
        }
    }
    if (p->set.thrift2_enabled) {
        g_message("listening for Thrift2 clients on %s:%u",
                  p->set.thrift2_host[0] != '\0' ? p->set.thrift2_host : "*",
                  (unsigned)p->port2);
    }
    return TRUE;
}

void
proxy_stop(struct proxy *p)
{
    unsigned i;

    g_assert(p != NULL);
    if (p->state == PROXY_STOPPED) {
        /* joined already: joining again is undefined */
        invariant_broken(G_STRLOC, "proxy stopped twice");
        return;
    }
    proxy_set_state(p, PROXY_STOPPED);
    for (i = 0; i < p->nworkers; i++) {
        g_atomic_int_set(&p->workers[i].stop_asked, 1);
        bell_ring(&p->workers[i].bell);
    }
    for (i = 0; i < p->nworkers; i++) {
        pthread_join(p->workers[i].thread, NULL);
    }
    /* probes ran through the drain: a server back up serves it */
    health_stop(p->health);
}

void
proxy_free(struct proxy *p)
{
    unsigned i;

    if (p == NULL) {
        return;
    }
    /* running workers would use what goes here */
    HSP_CHECK(p->state != PROXY_RUNNING);
    if (p->workers != NULL) {
        for (i = 0; i < p->set.workers; i++) {
            proxy_worker_deinit(&p->workers[i]);
        }
        g_free(p->workers);
    }
    g_clear_pointer(&p->scans, scan_table_free);
    health_free(p->health);
    /* the workers are gone: whatever generation is left goes now */
    for (guint g = 0; p->gens != NULL && g < p->gens->len; g++) {
        proxy_gen_free(g_ptr_array_index(p->gens, g));
    }
    if (p->gens != NULL) {
        g_ptr_array_free(p->gens, TRUE);
    }
    g_mutex_clear(&p->gens_lock);
    g_mutex_clear(&p->pools_lock);
    g_clear_pointer(&p->tls_ctx, SSL_CTX_free);
    g_mutex_clear(&p->tls_lock);
    metrics_free(p->metrics);
    g_free(p);
}
