/* emu_http.c: Thrift over HTTP(S), as HBase's `hbase thrift -http` (Jetty and ThriftHttpServlet) serves it. */
#include "emu_http.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <openssl/err.h>
#include <openssl/ssl.h>

#include "emu_scanner.h"
#include "wire.h"

/*
 * HTTP parsing is libevent's evhttp: a maintained parser (request line,
 * headers, chunked and Content-Length bodies, keep-alive, pipelining,
 * size limits) on the event loop the rest of the project already uses,
 * with TLS through bufferevent_openssl.  What HBase's stack does on top
 * is modelled here, per request:
 *
 *   TRACE, OPTIONS            403 (HttpServerUtil's constraints; OPTIONS
 *                             passes with hbase.thrift.http.allow.options.method)
 *   PUT, DELETE               405, PATCH and the rest 501 (HttpServlet)
 *   GET, HEAD, POST, any path the servlet (mapped at every path; TServlet's doGet
 *                             is its doPost):
 *     SPNEGO on   no Authorization        401, WWW-Authenticate: Negotiate
 *                 a token that fails      401, the same challenge
 *                 a good one              WWW-Authenticate: Negotiate <reply>
 *     a doAs header (any case)  without proxyuser support: 500
 *     the body: one binary-protocol message (HTTP mode ignores -c);
 *       one that does not parse: 500; else 200 application/x-thrift
 *       with the reply, or empty for a oneway call.
 *
 * Each of --http-threads loops has its own evhttp on the shared listening
 * socket and its own dispatcher, so a slow call (--rpc-latency-us) holds
 * up one loop's connections only, as a Jetty pool thread would.
 */

struct emu_http_tls {
    SSL_CTX *ctx;
};

struct emu_http_worker {
    emu_http *srv;
    struct event_base *base;
    struct evhttp *http;
    struct event *stop_ev;
    emu_dispatch *dispatch;
    GThread *thread;
};

struct emu_http {
    int fd;
    int stop_fd; /* eventfd: readable once stopping */
    struct emu_http_config cfg;
    GObject *handler;
    struct wire_limits limits;
    struct emu_http_worker *workers;
};

/* Jetty's limit (HBase's DEFAULT_HTTP_MAX_HEADER_SIZE). */
#define EMU_HTTP_MAX_HEADERS (64 * 1024)
/* Jetty's default idle timeout on a connection, seconds. */
#define EMU_HTTP_IDLE_TIMEOUT_S 30

static G_DEFINE_QUARK(emu_http_error_quark, emu_http_error)
#define EMU_HTTP_ERROR (emu_http_error_quark())

    static void emu_http_set_tls_error(GError **error, const char *what)
{
    char buf[256] = "unknown error";
    unsigned long e = ERR_get_error();

    if (e != 0) {
        ERR_error_string_n(e, buf, sizeof(buf));
    }
    ERR_clear_error();
    g_set_error(error, EMU_HTTP_ERROR, 0, "%s: %s", what, buf);
}

emu_http_tls *emu_http_tls_new(const char *cert_file, const char *key_file,
                               GError **error)
{
    SSL_CTX *ctx = SSL_CTX_new(TLS_server_method());
    emu_http_tls *t;

    if (ctx == NULL) {
        emu_http_set_tls_error(error, "SSL_CTX_new");
        return NULL;
    }
    /* Jetty refuses SSLv3 by default (hbase.thrift.ssl.exclude.protocols)
     * and its own defaults drop TLS 1.0 and 1.1 as well. */
    SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
    if (SSL_CTX_use_certificate_chain_file(ctx, cert_file) != 1) {
        emu_http_set_tls_error(error, cert_file);
        SSL_CTX_free(ctx);
        return NULL;
    }
    if (SSL_CTX_use_PrivateKey_file(ctx, key_file, SSL_FILETYPE_PEM) != 1 ||
        SSL_CTX_check_private_key(ctx) != 1) {
        emu_http_set_tls_error(error, key_file);
        SSL_CTX_free(ctx);
        return NULL;
    }
    t = g_new0(emu_http_tls, 1);
    t->ctx = ctx;
    return t;
}

/* Every accepted connection starts its TLS handshake as a server. */
static struct bufferevent *emu_http_tls_bev(struct event_base *base, void *arg)
{
    emu_http *h = arg;
    SSL *ssl = SSL_new(h->cfg.tls->ctx);
    struct bufferevent *bev;

    if (ssl == NULL) {
        return NULL;
    }
    bev = bufferevent_openssl_socket_new(
        base, -1, ssl, BUFFEREVENT_SSL_ACCEPTING, BEV_OPT_CLOSE_ON_FREE);
    if (bev != NULL) {
        bufferevent_openssl_set_allow_dirty_shutdown(bev, 1);
    }
    return bev;
}

static void emu_http_peer(struct evhttp_request *req, char *buf, gsize size)
{
    struct evhttp_connection *conn = evhttp_request_get_connection(req);
    char *addr = NULL;
    ev_uint16_t port = 0;

    if (conn != NULL) {
        evhttp_connection_get_peer(conn, &addr, &port);
    }
    g_snprintf(buf, size, "%s:%u", addr ? addr : "?", port);
}

static const char *emu_http_reason(int code)
{
    switch (code) {
    case 200:
        return "OK";
    case 401:
        return "Unauthorized";
    case 403:
        return "Forbidden";
    case 405:
        return "Method Not Allowed";
    case 500:
        return "Server Error";
    case 501:
        return "Not Implemented";
    default:
        return "Error";
    }
}

/* Sends the reply; a HEAD request gets the headers only, Content-Length
 * saying what GET would have sent (libevent 2.1 would send the body). */
static void emu_http_send(struct evhttp_request *req, int code,
                          const char *reason, struct evbuffer *body)
{
    if (evhttp_request_get_command(req) == EVHTTP_REQ_HEAD) {
        char len[24];

        g_snprintf(len, sizeof(len), "%zu",
                   body != NULL ? evbuffer_get_length(body) : (size_t)0);
        evhttp_add_header(evhttp_request_get_output_headers(req),
                          "Content-Length", len);
        body = NULL;
    }
    evhttp_send_reply(req, code, reason, body);
}

/* An error page in the shape of Jetty's: status line, text/html, the
 * message in the title and the body.  Headers already set stay. */
static void emu_http_error(struct evhttp_request *req, int code,
                           const char *message)
{
    struct evkeyvalq *out = evhttp_request_get_output_headers(req);
    struct evbuffer *body = evbuffer_new();
    const char *reason = emu_http_reason(code);
    g_autofree char *msg = g_markup_escape_text(message ? message : reason,
                                                -1);
    g_autofree char *path = g_markup_escape_text(
        evhttp_request_get_uri(req) ? evhttp_request_get_uri(req) : "/", -1);

    evhttp_remove_header(out, "Content-Type");
    evhttp_add_header(out, "Content-Type", "text/html;charset=iso-8859-1");
    evhttp_add_header(out, "Cache-Control",
                      "must-revalidate,no-cache,no-store");
    evbuffer_add_printf(body,
                        "<html>\n<head>\n<meta http-equiv=\"Content-Type\" "
                        "content=\"text/html;charset=iso-8859-1\"/>\n"
                        "<title>Error %d %s</title>\n</head>\n<body>"
                        "<h2>HTTP ERROR %d</h2>\n<p>Problem accessing %s. "
                        "Reason:\n<pre>    %s</pre></p>\n</body>\n</html>\n",
                        code, msg, code, path, msg);
    emu_http_send(req, code, reason, body);
    evbuffer_free(body);
}

/* HBase's ProxyUserAuthenticationFilter.getDoasFromHeader: the first
 * header whose name is "doas" in any case.  The query parameter of the
 * same name is not read by the Thrift servlet. */
static const char *emu_http_doas(struct evkeyvalq *headers)
{
    for (struct evkeyval *kv = headers->tqh_first; kv != NULL;
         kv = kv->next.tqe_next) {
        if (g_ascii_strcasecmp(kv->key, "doAs") == 0) {
            return kv->value;
        }
    }
    return NULL;
}

/* ThriftHttpServlet.doPost (which TServlet's doGet and doHead reach). */
static void emu_http_servlet(struct emu_http_worker *w,
                             struct evhttp_request *req, const char *peer)
{
    emu_http *h = w->srv;
    struct evkeyvalq *in = evhttp_request_get_input_headers(req);
    struct evkeyvalq *out = evhttp_request_get_output_headers(req);
    struct evbuffer *body = evhttp_request_get_input_buffer(req);
    g_autofree char *user = NULL;
    g_autoptr(GError) err = NULL;
    const GByteArray *reply = NULL;
    const char *doas, *why = NULL;
    const guint8 *msg;
    size_t len, msg_len = 0;
    wire_status_t st;

    if (h->cfg.spnego != NULL) {
        const char *auth = evhttp_find_header(in, "Authorization");
        g_autofree char *token = NULL;
        g_autofree char *challenge = NULL;

        /* The usual first request: ask for credentials. */
        if (auth == NULL || *auth == '\0') {
            evhttp_add_header(out, "WWW-Authenticate", "Negotiate");
            emu_http_error(req, 401, NULL);
            return;
        }
        if (!emu_spnego_check(h->cfg.spnego, auth, &user, &token, &err)) {
            g_message("%s: Kerberos Authentication failed: %s", peer,
                      err->message);
            evhttp_add_header(out, "WWW-Authenticate", "Negotiate");
            {
                g_autofree char *text = g_strdup_printf(
                    "Authentication Error: %s", err->message);

                emu_http_error(req, 401, text);
            }
            return;
        }
        /* Java's string concatenation writes a missing token as "null". */
        challenge = g_strdup_printf("Negotiate %s", token ? token : "null");
        evhttp_add_header(out, "WWW-Authenticate", challenge);
    } else {
        user = g_strdup(h->cfg.server_user);
    }
    doas = emu_http_doas(in);
    if (doas != NULL) {
        if (!h->cfg.proxyuser) {
            emu_http_error(req, 500,
                           "javax.servlet.ServletException: "
                           "Support for proxyuser is not configured");
            return;
        }
        /* UserGroupInformation.createProxyUser refuses an empty name. */
        if (*doas == '\0') {
            emu_http_error(req, 500,
                           "java.lang.IllegalArgumentException: Null user");
            return;
        }
        g_free(user);
        user = g_strdup(doas);
    }
    if (h->cfg.spnego != NULL || doas != NULL) {
        g_autofree char *shown = g_strescape(user, NULL);

        g_message("%s: effective user: %s", peer, shown);
    }

    evhttp_add_header(out, "Content-Type", "application/x-thrift");
    len = evbuffer_get_length(body);
    msg = len > 0 ? evbuffer_pullup(body, -1) : NULL;
    /* TServlet reads one message from the body and ignores what follows;
     * a message it cannot read is a TException, which the servlet
     * container answers with 500. */
    st = len > 0 ? wire_message_scan(WIRE_BINARY, FALSE, msg, len, &h->limits,
                                     &msg_len, &why)
                 : WIRE_AGAIN;
    if (st == WIRE_AGAIN) {
        g_message("%s: request body ends inside a message", peer);
        emu_http_error(req, 500,
                       "javax.servlet.ServletException: "
                       "org.apache.thrift.transport.TTransportException");
        return;
    }
    if (st == WIRE_ERROR) {
        g_autofree char *text = g_strdup_printf(
            "javax.servlet.ServletException: "
            "org.apache.thrift.protocol.TProtocolException: %s",
            why ? why : "bad message");

        g_message("%s: %s", peer, why ? why : "bad message");
        emu_http_error(req, 500, text);
        return;
    }
    switch (emu_dispatch_call(w->dispatch, msg, msg_len, peer, &reply, &err)) {
    case EMU_DISPATCH_REPLY: {
        struct evbuffer *rb = evbuffer_new();

        evbuffer_add(rb, reply->data, reply->len);
        emu_http_send(req, 200, "OK", rb);
        evbuffer_free(rb);
        return;
    }
    case EMU_DISPATCH_ONEWAY:
        emu_http_send(req, 200, "OK", NULL);
        return;
    case EMU_DISPATCH_FAIL:
    default: {
        g_autofree char *text = g_strdup_printf(
            "javax.servlet.ServletException: "
            "org.apache.thrift.protocol.TProtocolException: %s",
            err ? err->message : "bad message");

        g_message("%s: %s", peer, err ? err->message : "bad message");
        emu_http_error(req, 500, text);
        return;
    }
    }
}

static const char *emu_http_method_name(enum evhttp_cmd_type cmd)
{
    switch (cmd) {
    case EVHTTP_REQ_PUT:
        return "PUT";
    case EVHTTP_REQ_DELETE:
        return "DELETE";
    case EVHTTP_REQ_CONNECT:
        return "CONNECT";
    case EVHTTP_REQ_PATCH:
        return "PATCH";
    default:
        return "?";
    }
}

static void emu_http_on_request(struct evhttp_request *req, void *arg)
{
    struct emu_http_worker *w = arg;
    enum evhttp_cmd_type cmd = evhttp_request_get_command(req);
    char peer[80];

    emu_http_peer(req, peer, sizeof(peer));
    switch (cmd) {
    case EVHTTP_REQ_GET:
    case EVHTTP_REQ_HEAD:
    case EVHTTP_REQ_POST:
        emu_http_servlet(w, req, peer);
        return;
    case EVHTTP_REQ_TRACE:
        emu_http_error(req, 403, NULL);
        return;
    case EVHTTP_REQ_OPTIONS:
        if (!w->srv->cfg.allow_options) {
            emu_http_error(req, 403, NULL);
            return;
        }
        /* HttpServlet.doOptions lists what the servlet overrides. */
        evhttp_add_header(evhttp_request_get_output_headers(req), "Allow",
                          "GET, HEAD, POST, TRACE, OPTIONS");
        emu_http_send(req, 200, "OK", NULL);
        return;
    case EVHTTP_REQ_PUT:
    case EVHTTP_REQ_DELETE: {
        g_autofree char *text = g_strdup_printf(
            "HTTP method %s is not supported by this URL",
            emu_http_method_name(cmd));

        emu_http_error(req, 405, text);
        return;
    }
    default: {
        g_autofree char *text = g_strdup_printf(
            "Method %s is not implemented by this servlet for this URI",
            emu_http_method_name(cmd));

        emu_http_error(req, 501, text);
        return;
    }
    }
}

static void emu_http_on_stop(evutil_socket_t fd, short what, void *arg)
{
    struct emu_http_worker *w = arg;

    event_base_loopbreak(w->base);
}

static gboolean emu_http_worker_init(emu_http *h, struct emu_http_worker *w,
                                     GError **error)
{
    w->srv = h;
    w->base = event_base_new();
    w->http = w->base ? evhttp_new(w->base) : NULL;
    if (w->http == NULL) {
        g_set_error(error, EMU_HTTP_ERROR, 0, "evhttp_new failed");
        return FALSE;
    }
    evhttp_set_allowed_methods(
        w->http, EVHTTP_REQ_GET | EVHTTP_REQ_POST | EVHTTP_REQ_HEAD |
                     EVHTTP_REQ_PUT | EVHTTP_REQ_DELETE | EVHTTP_REQ_OPTIONS |
                     EVHTTP_REQ_TRACE | EVHTTP_REQ_CONNECT | EVHTTP_REQ_PATCH);
    evhttp_set_max_headers_size(w->http, EMU_HTTP_MAX_HEADERS);
    evhttp_set_max_body_size(w->http, h->cfg.max_body);
    evhttp_set_timeout(w->http, EMU_HTTP_IDLE_TIMEOUT_S);
    evhttp_set_gencb(w->http, emu_http_on_request, w);
    if (h->cfg.tls != NULL) {
        evhttp_set_bevcb(w->http, emu_http_tls_bev, h);
    }
    if (evhttp_accept_socket_with_handle(w->http, h->fd) == NULL) {
        g_set_error(error, EMU_HTTP_ERROR, 0, "evhttp cannot accept");
        return FALSE;
    }
    w->stop_ev = event_new(w->base, h->stop_fd, EV_READ | EV_PERSIST,
                           emu_http_on_stop, w);
    event_add(w->stop_ev, NULL);
    w->dispatch = emu_dispatch_new(h->cfg.service, h->handler, WIRE_BINARY,
                                   &h->limits);
    return TRUE;
}

static int emu_http_listen(const struct emu_http_config *cfg, int *bound_port,
                           GError **error)
{
    struct addrinfo hints = { 0 }, *res = NULL;
    char portstr[16];
    int fd, one = 1, rc;
    struct sockaddr_storage ss;
    socklen_t sl = sizeof(ss);

    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
    g_snprintf(portstr, sizeof(portstr), "%d", cfg->port);
    rc = getaddrinfo(cfg->host, portstr, &hints, &res);
    if (rc != 0) {
        g_set_error(error, EMU_HTTP_ERROR, 0, "%s: %s", cfg->host,
                    gai_strerror(rc));
        return -1;
    }
    fd = socket(res->ai_family,
                res->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0 ||
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0 ||
        /* Linux hands it on to every accepted socket: a TLS reply goes
         * out as several records, and Nagle would hold the last one
         * until the client's delayed ACK. */
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)) < 0 ||
        bind(fd, res->ai_addr, res->ai_addrlen) < 0 || listen(fd, 512) < 0 ||
        getsockname(fd, (struct sockaddr *)&ss, &sl) < 0) {
        int e = errno;

        g_set_error(error, EMU_HTTP_ERROR, 0, "listen on %s:%d: %s", cfg->host,
                    cfg->port, g_strerror(e));
        if (fd >= 0) {
            close(fd);
        }
        freeaddrinfo(res);
        return -1;
    }
    freeaddrinfo(res);
    *bound_port = ss.ss_family == AF_INET6
                      ? ntohs(((struct sockaddr_in6 *)&ss)->sin6_port)
                      : ntohs(((struct sockaddr_in *)&ss)->sin_port);
    return fd;
}

emu_http *emu_http_new(const struct emu_http_config *cfg, GObject *handler,
                       int *bound_port, GError **error)
{
    emu_http *h;
    int fd = emu_http_listen(cfg, bound_port, error);

    if (fd < 0) {
        return NULL;
    }
    h = g_new0(emu_http, 1);
    h->fd = fd;
    h->cfg = *cfg;
    h->cfg.threads = MAX(cfg->threads, 1u);
    h->handler = g_object_ref(handler);
    h->limits = wire_default_limits;
    h->limits.max_message = cfg->max_body;
    h->limits.max_string = cfg->max_body;
    h->stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (h->stop_fd < 0) {
        int e = errno;

        g_set_error(error, EMU_HTTP_ERROR, 0, "eventfd: %s", g_strerror(e));
        close(fd);
        g_object_unref(h->handler);
        g_free(h);
        return NULL;
    }
    h->workers = g_new0(struct emu_http_worker, h->cfg.threads);
    for (guint i = 0; i < h->cfg.threads; i++) {
        /* A half-built server is not worth unwinding: the caller exits. */
        if (!emu_http_worker_init(h, &h->workers[i], error)) {
            return NULL;
        }
    }
    return h;
}

static gpointer emu_http_worker_thread(gpointer data)
{
    struct emu_http_worker *w = data;

    emu_scanner_set_owner(w->srv->cfg.owner);
    event_base_dispatch(w->base);
    return NULL;
}

void emu_http_run(emu_http *h)
{
    for (guint i = 1; i < h->cfg.threads; i++) {
        h->workers[i].thread = g_thread_new("emu-http", emu_http_worker_thread,
                                            &h->workers[i]);
    }
    emu_http_worker_thread(&h->workers[0]);
    for (guint i = 1; i < h->cfg.threads; i++) {
        g_thread_join(h->workers[i].thread);
    }
}

void emu_http_stop(emu_http *h)
{
    guint64 one = 1;

    /* Level-triggered and never read: every loop sees it. */
    if (write(h->stop_fd, &one, sizeof(one)) < 0) {
        g_warning("http stop: %s", g_strerror(errno));
    }
}
