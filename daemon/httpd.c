/* httpd.c: Thrift over HTTP POST for clients, as HBase's `hbase thrift -http` serves it, bridged into the ordinary client path. */
#include "httpd.h"

#include <string.h>
#include <sys/socket.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>

#include "wire.h"

/*
 * HTTP is libevent's evhttp: a maintained HTTP/1.1 parser (request line,
 * headers, Content-Length and chunked bodies, keep-alive, size limits) on
 * the event loop the proxy already runs.  What HBase's servlet does with a
 * request is done here; the call itself goes to the engine unchanged:
 *
 *   HTTP client --POST body--> httpd --bytes--> socketpair --> client.c
 *               <--200 body--        <--reply--            <--  (salting,
 *                                                              scans, ...)
 *
 * Each HTTP connection gets its own bridge, a socketpair whose other end
 * is an ordinary client connection (buffered, binary), so its calls take
 * effect in order and its scanners are its own, as on a socket.  evhttp
 * answers one request of a connection before it reads the next, so at
 * most one call of a connection is on the bridge at a time.
 */

G_DEFINE_QUARK(httpd_error_quark, httpd_error)

/* Jetty's limit on request headers (HBase's DEFAULT_HTTP_MAX_HEADER_SIZE). */
#define HTTPD_MAX_HEADERS (64 * 1024)
/* Jetty's idle timeout on a connection, seconds. */
#define HTTPD_IDLE_TIMEOUT_S 30

struct httpd_conn;

struct httpd {
    struct evhttp *http;
    const struct hbase1_service *svc;
    httpd_handoff_fn handoff;
    void *arg;
    struct wire_limits limits;
    GHashTable *conns; /* evhttp_connection -> httpd_conn */
    unsigned port;
};

/* One HTTP connection's bridge into the engine. */
struct httpd_conn {
    struct httpd *h;
    struct evhttp_connection *evcon;
    struct bufferevent *bev;    /* our end; NULL until a call needs it */
    struct evhttp_request *req; /* the call on the bridge, or NULL */
    struct wire_scan scan;      /* its reply so far */
};

void
httpd_send(struct evhttp_request *req, int code, const char *reason,
           const char *type, const void *body, size_t len)
{
    struct evbuffer *out = evbuffer_new();

    evhttp_add_header(evhttp_request_get_output_headers(req), "Content-Type",
                      type);
    if (out != NULL && len > 0) {
        evbuffer_add(out, body, len);
    }
    evhttp_send_reply(req, code, reason, out);
    if (out != NULL) {
        evbuffer_free(out);
    }
}

/* An error page, with the reason as text. */
static void
httpd_error(struct evhttp_request *req, int code, const char *reason,
            const char *text)
{
    g_autofree char *body = g_strdup_printf("%s\n", text);

    httpd_send(req, code, reason, "text/plain; charset=utf-8", body,
               strlen(body));
}

/* The bridge is gone (the engine closed its end, which it does on a
 * call it could not even answer): the call on it fails, the next one
 * gets a new bridge. */
static void
httpd_conn_unbridge(struct httpd_conn *hc, const char *why)
{
    if (hc->req != NULL) {
        httpd_error(hc->req, 500, "Internal Server Error", why);
        hc->req = NULL;
    }
    g_clear_pointer(&hc->bev, bufferevent_free);
    wire_scan_init(&hc->scan);
}

static void
httpd_bridge_read_cb(struct bufferevent *bev, void *arg)
{
    struct httpd_conn *hc = arg;
    struct evbuffer *in = bufferevent_get_input(bev);
    size_t len = evbuffer_get_length(in), msg_len = 0;
    const char *why = NULL;
    const uint8_t *p;
    wire_status_t st;

    if (len == 0) {
        return;
    }
    p = evbuffer_pullup(in, -1);
    st = wire_scan_feed(&hc->scan, WIRE_BINARY, p, len, &hc->h->limits,
                        &msg_len, &why);
    if (st == WIRE_AGAIN) {
        return;
    }
    if (st == WIRE_ERROR || hc->req == NULL || msg_len != len) {
        /* the engine answers one call with one message: anything else
         * would put the connection's replies out of step */
        httpd_conn_unbridge(hc, "hbase-salt-proxy: a reply out of step");
        return;
    }
    httpd_send(hc->req, 200, "OK", "application/x-thrift", p, msg_len);
    hc->req = NULL;
    evbuffer_drain(in, msg_len);
    wire_scan_init(&hc->scan);
}

static void
httpd_bridge_event_cb(struct bufferevent *bev, short what, void *arg)
{
    if (what & (BEV_EVENT_EOF | BEV_EVENT_ERROR)) {
        httpd_conn_unbridge(arg, "hbase-salt-proxy: the call could not be "
                                 "answered; the proxy's log says why");
    }
}

/* The HTTP connection closed: its bridge goes, and with it the engine's
 * client (which sees the socketpair close). */
static void
httpd_conn_closed(struct evhttp_connection *evcon, void *arg)
{
    struct httpd_conn *hc = arg;

    /* evhttp frees the request itself */
    hc->req = NULL;
    g_hash_table_remove(hc->h->conns, evcon);
}

static void
httpd_conn_free(void *p)
{
    struct httpd_conn *hc = p;

    g_clear_pointer(&hc->bev, bufferevent_free);
    g_free(hc);
}

/* The bridge of req's connection, made on its first call. */
static struct httpd_conn *
httpd_conn_of(struct httpd *h, struct evhttp_request *req)
{
    struct evhttp_connection *evcon = evhttp_request_get_connection(req);
    struct httpd_conn *hc = g_hash_table_lookup(h->conns, evcon);
    evutil_socket_t sv[2];
    const struct sockaddr *peer;

    if (hc == NULL) {
        hc = g_new0(struct httpd_conn, 1);
        hc->h = h;
        hc->evcon = evcon;
        wire_scan_init(&hc->scan);
        g_hash_table_insert(h->conns, evcon, hc);
        evhttp_connection_set_closecb(evcon, httpd_conn_closed, hc);
    }
    if (hc->bev != NULL) {
        return hc;
    }
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0,
                   sv) != 0) {
        return NULL;
    }
    hc->bev = bufferevent_socket_new(evhttp_connection_get_base(evcon), sv[0],
                                     BEV_OPT_CLOSE_ON_FREE);
    if (hc->bev == NULL) {
        evutil_closesocket(sv[0]);
        evutil_closesocket(sv[1]);
        return NULL;
    }
    bufferevent_setcb(hc->bev, httpd_bridge_read_cb, NULL,
                      httpd_bridge_event_cb, hc);
    bufferevent_enable(hc->bev, EV_READ | EV_WRITE);
    peer = evhttp_connection_get_addr(evcon);
    h->handoff(h->arg, sv[1], peer,
               peer == NULL                  ? 0
               : peer->sa_family == AF_INET6 ? (int)sizeof(struct sockaddr_in6)
                                             : (int)sizeof(struct sockaddr_in),
               h->svc);
    return hc;
}

/* HBase's ProxyUserAuthenticationFilter reads the first header named
 * "doas" in any case. */
static gboolean
httpd_has_doas(struct evkeyvalq *headers)
{
    for (struct evkeyval *kv = headers->tqh_first; kv != NULL;
         kv = kv->next.tqe_next) {
        if (g_ascii_strcasecmp(kv->key, "doAs") == 0) {
            return TRUE;
        }
    }
    return FALSE;
}

/* What ThriftHttpServlet.doPost does with a body: one binary message
 * (what follows it is ignored, as TServlet reads one), else 500. */
static void
httpd_servlet(struct httpd *h, struct evhttp_request *req)
{
    struct evbuffer *body = evhttp_request_get_input_buffer(req);
    size_t len = evbuffer_get_length(body), msg_len = 0;
    const uint8_t *msg = len > 0 ? evbuffer_pullup(body, -1) : NULL;
    const char *why = NULL;
    struct wire_reader r;
    struct wire_msg m;
    struct httpd_conn *hc;
    wire_status_t st;

    if (httpd_has_doas(evhttp_request_get_input_headers(req))) {
        /* the proxy calls HBase as itself: it cannot act for another */
        httpd_error(req, 403, "Forbidden",
                    "hbase-salt-proxy: doAs (impersonation) is not "
                    "supported: calls reach HBase as the proxy's own "
                    "principal");
        return;
    }
    st = len > 0 ? wire_message_scan(WIRE_BINARY, FALSE, msg, len, &h->limits,
                                     &msg_len, &why)
                 : WIRE_AGAIN;
    if (st != WIRE_OK) {
        g_autofree char *text = g_strdup_printf(
            "hbase-salt-proxy: the body is not one binary-protocol Thrift "
            "message: %s",
            st == WIRE_AGAIN ? "it ends inside one"
                             : (why != NULL ? why : "bad message"));

        httpd_error(req, 500, "Internal Server Error", text);
        return;
    }
    wire_reader_init(&r, WIRE_BINARY, msg, msg_len, TRUE, &h->limits);
    if (wire_read_msg_begin(&r, &m) == WIRE_OK && m.type == WIRE_ONEWAY) {
        /* no HBase method is oneway: its processor drops such a call */
        httpd_send(req, 200, "OK", "application/x-thrift", NULL, 0);
        return;
    }
    hc = httpd_conn_of(h, req);
    if (hc == NULL) {
        httpd_error(req, 503, "Service Unavailable",
                    "hbase-salt-proxy: out of sockets for a new connection");
        return;
    }
    hc->req = req;
    bufferevent_write(hc->bev, msg, msg_len);
}

static void
httpd_request_cb(struct evhttp_request *req, void *arg)
{
    switch (evhttp_request_get_command(req)) {
    case EVHTTP_REQ_GET:
    case EVHTTP_REQ_HEAD:
    case EVHTTP_REQ_POST:
        /* the servlet is mapped at every path; TServlet's doGet is its
         * doPost */
        httpd_servlet(arg, req);
        return;
    case EVHTTP_REQ_TRACE:
    case EVHTTP_REQ_OPTIONS:
        /* HBase's HttpServer constraints */
        httpd_error(req, 403, "Forbidden", "method not allowed");
        return;
    case EVHTTP_REQ_PUT:
    case EVHTTP_REQ_DELETE:
        httpd_error(req, 405, "Method Not Allowed",
                    "HTTP method not supported by this URL");
        return;
    default:
        httpd_error(req, 501, "Not Implemented", "method not implemented");
        return;
    }
}

struct httpd *
httpd_new(struct event_base *base, const struct sockaddr *sa, socklen_t salen,
          const struct hbase1_service *svc, size_t max_body,
          httpd_handoff_fn handoff, void *arg, GError **error)
{
    struct httpd *h = g_new0(struct httpd, 1);
    struct evhttp_bound_socket *bound;
    evutil_socket_t fd;

    h->svc = svc;
    h->handoff = handoff;
    h->arg = arg;
    h->limits = wire_default_limits;
    h->limits.max_message = (uint32_t)MIN(max_body, (size_t)G_MAXUINT32);
    h->conns = g_hash_table_new_full(g_direct_hash, g_direct_equal, NULL,
                                     httpd_conn_free);
    h->http = evhttp_new(base);
    if (h->http == NULL) {
        g_set_error(error, HTTPD_ERROR, HTTPD_ERROR_LISTEN,
                    "evhttp_new failed");
        httpd_free(h);
        return NULL;
    }
    evhttp_set_allowed_methods(h->http,
                               EVHTTP_REQ_GET | EVHTTP_REQ_POST |
                                   EVHTTP_REQ_HEAD | EVHTTP_REQ_PUT |
                                   EVHTTP_REQ_DELETE | EVHTTP_REQ_OPTIONS |
                                   EVHTTP_REQ_TRACE | EVHTTP_REQ_CONNECT |
                                   EVHTTP_REQ_PATCH);
    evhttp_set_max_headers_size(h->http, HTTPD_MAX_HEADERS);
    evhttp_set_max_body_size(h->http, (ev_ssize_t)max_body);
    evhttp_set_timeout(h->http, HTTPD_IDLE_TIMEOUT_S);
    evhttp_set_gencb(h->http, httpd_request_cb, h);
    fd = socket(sa->sa_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0 || evutil_make_listen_socket_reuseable(fd) != 0 ||
        bind(fd, sa, salen) != 0 || listen(fd, 1024) != 0) {
        int err = EVUTIL_SOCKET_ERROR();

        g_set_error(error, HTTPD_ERROR, HTTPD_ERROR_LISTEN, "%s",
                    evutil_socket_error_to_string(err));
        if (fd >= 0) {
            evutil_closesocket(fd);
        }
        httpd_free(h);
        return NULL;
    }
    bound = evhttp_accept_socket_with_handle(h->http, fd);
    if (bound == NULL) {
        g_set_error(error, HTTPD_ERROR, HTTPD_ERROR_LISTEN,
                    "evhttp cannot accept on the socket");
        evutil_closesocket(fd);
        httpd_free(h);
        return NULL;
    }
    h->port = httpd_bound_port(fd);
    return h;
}

unsigned
httpd_port(const struct httpd *h)
{
    return h->port;
}

uint16_t
httpd_bound_port(evutil_socket_t fd)
{
    struct sockaddr_storage got;
    socklen_t gotlen = sizeof(got);

    if (getsockname(fd, (struct sockaddr *)&got, &gotlen) != 0) {
        return 0;
    }
    return got.ss_family == AF_INET6
               ? ntohs(((struct sockaddr_in6 *)&got)->sin6_port)
               : ntohs(((struct sockaddr_in *)&got)->sin_port);
}

void
httpd_free(struct httpd *h)
{
    if (h == NULL) {
        return;
    }
    /* evhttp_free closes the connections, whose close callbacks empty
     * the table */
    g_clear_pointer(&h->http, evhttp_free);
    g_hash_table_destroy(h->conns);
    g_free(h);
}
