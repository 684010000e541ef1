/* httpc.c: the backend side of HBase's HTTP mode: each Thrift message one POST over a kept-alive HTTP(S) connection, written and parsed by the engine's connections themselves, or bridged to a socket for blocking callers. */
#include "httpc.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <string.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>
#include <event2/http.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include "lograte.h"
#include "sasl.h"
#include "tls.h"
#include "wire.h"

/*
 * Two ways to HBase's HTTP servlet.
 *
 * The engine's backend connections (backend.c, the calls of clients and
 * scans) speak HTTP themselves (httpc_conn_*, at the end of this file):
 * each call one POST written from the connection's own buffer, the reply
 * parsed from the connection's input where socket mode parses the Thrift
 * reply, TLS through an OpenSSL bufferevent.  One POST at a time per
 * connection: calls take effect in the order they were sent, as HBase
 * requires of a connection, and no HTTP pipelining is asked of Jetty.
 *
 *   backend conn --POST (head made once, Content-Length, call)--> servlet
 *                <--200, Content-Length or chunked, the reply--
 *
 * The blocking connections of the catalog and the migration tool
 * (hconn.c) and the health probes (health.c) use a bridge instead: a
 * socket that reads and writes as in socket mode, whose other end is
 * libevent's evhttp client:
 *
 *   hconn/probe --call--> socketpair --> bridge --POST--> HBase servlet
 *               <--reply--            <--        <--200 body--
 *
 * Either way a status other than 200 becomes that call's
 * TApplicationException, in order (with the Jetty error page's reason);
 * a connection the server closes (Jetty drops idle ones after 30 s) is
 * dialled again for the next call.
 */

G_DEFINE_QUARK(httpc_error_quark, httpc_error)

/* Every bridge, so a loop that ends frees its own (a bridge closing
 * frees itself from the loop, which may not run again). */
static GMutex httpc_lock;
static GPtrArray *httpc_bridges;
/* "host:port" -> why its last request got no HTTP answer, until one
 * does: a failed connection closes the bridge (so the engine tries
 * another server), and whoever then meets the closed stream says why
 * instead of "closed" (httpc_last_failure).  Under httpc_lock. */
static GHashTable *httpc_failures;

static struct {
    gboolean ready;
    char path[256];
    char doas[256];
    SSL_CTX *tls;   /* replaced by a reload: under httpc_lock */
    gboolean https; /* tls is set, for good */
    gboolean verify_host;
    unsigned timeout_s;
    struct wire_limits limits;
} httpc;

/* One call sent, or refused before it could be. */
struct httpc_call {
    char name[128];
    int32_t seqid;
    char *error; /* refused before sending: the reason */
};

struct httpc_bridge {
    struct event_base *base;
    struct bufferevent *bev; /* our end of the socketpair */
    struct evhttp_connection *evcon;
    struct bufferevent *hbev; /* to HBase; evcon owns it */
    struct httpc_target t;
    struct sasl_creds *creds;
    struct wire_scan scan;
    GQueue calls; /* struct httpc_call, oldest first */
    gboolean closing;
    evutil_socket_t nodelay_fd; /* the socket TCP_NODELAY was set on */
};

/* The client TLS context of [backend] https: its CA, its certificate. */
static SSL_CTX *
httpc_tls_new(const struct config *cfg, GError **error)
{
    SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
    char why[256];

    SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
    SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
    if ((cfg->backend_tls_ca != NULL
             ? SSL_CTX_load_verify_locations(ctx, cfg->backend_tls_ca, NULL)
             : SSL_CTX_set_default_verify_paths(ctx)) != 1) {
        tls_last_error(why, sizeof(why), "unreadable");
        g_set_error(error, HTTPC_ERROR, HTTPC_ERROR_TLS,
                    "[backend] tls_ca %s: %s",
                    cfg->backend_tls_ca != NULL ? cfg->backend_tls_ca
                                                : "(system)",
                    why);
        SSL_CTX_free(ctx);
        return NULL;
    }
    if (cfg->backend_tls_cert != NULL &&
        (SSL_CTX_use_certificate_chain_file(ctx, cfg->backend_tls_cert) != 1 ||
         SSL_CTX_use_PrivateKey_file(ctx, cfg->backend_tls_key,
                                     SSL_FILETYPE_PEM) != 1 ||
         SSL_CTX_check_private_key(ctx) != 1)) {
        ERR_clear_error();
        g_set_error(error, HTTPC_ERROR, HTTPC_ERROR_TLS,
                    "[backend] tls_cert %s and tls_key %s: not a "
                    "readable certificate and its unencrypted key",
                    cfg->backend_tls_cert, cfg->backend_tls_key);
        SSL_CTX_free(ctx);
        return NULL;
    }
    return ctx;
}

gboolean
httpc_reload_tls(const struct config *cfg, GError **error)
{
    SSL_CTX *ctx, *old;

    if (!httpc.ready || httpc.tls == NULL || !cfg->https) {
        return TRUE;
    }
    ctx = httpc_tls_new(cfg, error);
    if (ctx == NULL) {
        return FALSE;
    }
    g_mutex_lock(&httpc_lock);
    old = httpc.tls;
    httpc.tls = ctx;
    g_mutex_unlock(&httpc_lock);
    /* connections made from it hold references of their own */
    SSL_CTX_free(old);
    return TRUE;
}

gboolean
httpc_init(const struct config *cfg, GError **error)
{
    if (httpc.ready || cfg->transport != CONFIG_TRANSPORT_HTTP) {
        return TRUE;
    }
    g_strlcpy(httpc.path, cfg->http_path != NULL ? cfg->http_path : "/",
              sizeof(httpc.path));
    g_strlcpy(httpc.doas, cfg->http_doas != NULL ? cfg->http_doas : "",
              sizeof(httpc.doas));
    httpc.verify_host = cfg->backend_tls_verify_hostname;
    httpc.timeout_s = MAX(1u, (cfg->request_timeout_ms + 999) / 1000);
    httpc.limits = wire_default_limits;
    httpc.limits.max_message = cfg->max_frame_size;
    if (cfg->https && (httpc.tls = httpc_tls_new(cfg, error)) == NULL) {
        return FALSE;
    }
    httpc.https = cfg->https;
    httpc.ready = TRUE;
    return TRUE;
}

void
httpc_target_init(struct httpc_target *t, const struct config *cfg,
                  const struct config_addr *a,
                  const struct sockaddr_storage *ss)
{
    memset(t, 0, sizeof(*t));
    g_strlcpy(t->host, a->host, sizeof(t->host));
    t->port = a->port;
    if (ss->ss_family == AF_INET6) {
        inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)ss)->sin6_addr,
                  t->addr, sizeof(t->addr));
    } else {
        inet_ntop(AF_INET, &((const struct sockaddr_in *)ss)->sin_addr,
                  t->addr, sizeof(t->addr));
    }
    if (cfg->sasl == CONFIG_SASL_GSSAPI) {
        g_autofree char *sp = config_sasl_server_principal(cfg, a->host);

        g_strlcpy(t->principal, sp, sizeof(t->principal));
    }
}

static void
httpc_call_free(void *p)
{
    struct httpc_call *c = p;

    g_free(c->error);
    g_free(c);
}

static void
httpc_bridge_free(struct httpc_bridge *b)
{
    g_mutex_lock(&httpc_lock);
    if (httpc_bridges != NULL) {
        g_ptr_array_remove_fast(httpc_bridges, b);
    }
    g_mutex_unlock(&httpc_lock);
    if (b->evcon != NULL) {
        /* no close callback from our own free */
        evhttp_connection_set_closecb(b->evcon, NULL, NULL);
        evhttp_connection_free(b->evcon);
    }
    g_clear_pointer(&b->bev, bufferevent_free);
    g_queue_clear_full(&b->calls, httpc_call_free);
    g_free(b);
}

static void
httpc_bridge_free_cb(evutil_socket_t fd, short what, void *arg)
{
    httpc_bridge_free(arg);
}

/* Closes the engine's socket (it dials again) and frees the bridge from
 * the loop: evhttp may be inside its own callback. */
static void
httpc_bridge_close(struct httpc_bridge *b)
{
    if (b->closing) {
        return;
    }
    b->closing = TRUE;
    if (b->bev != NULL) {
        bufferevent_disable(b->bev, EV_READ | EV_WRITE);
        /* the engine sees its connection end now, before the free */
        shutdown(bufferevent_getfd(b->bev), SHUT_RDWR);
    }
    event_base_once(b->base, -1, EV_TIMEOUT, httpc_bridge_free_cb, b, NULL);
}

/* The TApplicationException a failed call gets, in the engine's order. */
static void
httpc_fail_call(struct httpc_bridge *b, const struct httpc_call *c,
                const char *why)
{
    struct wire_buf buf;
    struct wire_writer w;

    wire_buf_init(&buf);
    wire_writer_init(&w, WIRE_BINARY, &buf);
    wire_write_app_exception(&w, (const uint8_t *)c->name,
                             (uint32_t)strlen(c->name), c->seqid,
                             WIRE_APP_INTERNAL_ERROR, why);
    bufferevent_write(b->bev, buf.data, buf.len);
    wire_buf_free(&buf);
}

/* Calls refused before they were sent, now at the head: answered. */
static void
httpc_flush_refused(struct httpc_bridge *b)
{
    struct httpc_call *c;

    while ((c = g_queue_peek_head(&b->calls)) != NULL && c->error != NULL) {
        g_queue_pop_head(&b->calls);
        httpc_fail_call(b, c, c->error);
        httpc_call_free(c);
    }
}

/* The TLS error of bev into why, if it has one (its queue emptied). */
static gboolean
httpc_tls_why(const struct httpc_target *t, struct bufferevent *bev, char *why,
              size_t len)
{
    unsigned long e = bev != NULL ? bufferevent_get_openssl_error(bev) : 0;
    char ossl[200];

    if (e == 0) {
        return FALSE;
    }
    ERR_error_string_n(e, ossl, sizeof(ossl));
    while (bufferevent_get_openssl_error(bev) != 0) {
    }
    g_snprintf(why, len, "TLS with %s:%u failed: %s", t->host, t->port, ossl);
    return TRUE;
}

/* Why a request got no HTTP answer. */
static void
httpc_transport_error(struct httpc_bridge *b, char *why, size_t len)
{
    if (!httpc_tls_why(&b->t, b->hbev, why, len)) {
        g_snprintf(why, len,
                   "no HTTP answer from %s:%u (connection "
                   "refused, closed or timed out)",
                   b->t.host, b->t.port);
    }
}

static void
httpc_failure_note(const struct httpc_target *t, const char *why)
{
    char key[160];

    g_snprintf(key, sizeof(key), "%s:%u", t->host, t->port);
    g_mutex_lock(&httpc_lock);
    if (why != NULL) {
        if (httpc_failures == NULL) {
            httpc_failures = g_hash_table_new_full(g_str_hash, g_str_equal,
                                                   g_free, g_free);
        }
        g_hash_table_replace(httpc_failures, g_strdup(key), g_strdup(why));
    } else if (httpc_failures != NULL) {
        g_hash_table_remove(httpc_failures, key);
    }
    g_mutex_unlock(&httpc_lock);
}

gboolean
httpc_last_failure(const char *host, uint16_t port, char *why, size_t len)
{
    char key[160];
    const char *v;
    gboolean found = FALSE;

    g_snprintf(key, sizeof(key), "%s:%u", host, port);
    g_mutex_lock(&httpc_lock);
    v = httpc_failures != NULL ? g_hash_table_lookup(httpc_failures, key)
                               : NULL;
    if (v != NULL) {
        g_strlcpy(why, v, len);
        found = TRUE;
    }
    g_mutex_unlock(&httpc_lock);
    return found;
}

/* Bytes of an error page kept for its reason. */
#define HTTPC_PAGE_MAX 2048

/* The exception text of a call the server answered with code (reason:
 * its status line's) and the error page body. */
static void
httpc_refusal(const struct httpc_target *t, int code, const char *reason,
              struct evbuffer *body, char *why, size_t whylen)
{
    char page[HTTPC_PAGE_MAX + 1];
    char text[201] = "";
    const char *from = page;
    ev_ssize_t got = evbuffer_copyout(body, page, HTTPC_PAGE_MAX);
    char *nl;

    page[got > 0 ? got : 0] = '\0';
    /* Jetty's error page: the reason follows "<pre>" */
    if (strstr(page, "<pre>") != NULL) {
        from = strstr(page, "<pre>") + 5;
        while (*from == ' ' || *from == '\n') {
            from++;
        }
    }
    g_strlcpy(text, from, sizeof(text));
    nl = strpbrk(text, "\r\n<");
    if (nl != NULL) {
        *nl = '\0';
    }
    g_snprintf(why, whylen,
               "hbase-salt-proxy: HBase's HTTP server %s:%u answered "
               "%d %s%s%s%s",
               t->host, t->port, code, reason != NULL ? reason : "",
               code == 401 ? " (SPNEGO: check sasl_principal, "
                             "sasl_keytab and the server's "
                             "hbase.thrift.spnego.principal)"
                           : "",
               text[0] != '\0' ? ": " : "", text);
}

/*
 * A bridged call's failure, logged as the engine logs its own: the first
 * of a burst in full, the rest folded into lograte's line.  A server that
 * refuses everything (a doAs it does not allow, a 500) is asked again by
 * every health probe and every catalog retry: one line per call would
 * bury the cause.  The refusal's kind is the engine's too (backend.c),
 * so the two fold together.  prefix: why does not name the server.
 */
static void
httpc_warn(const struct httpc_target *t, const char *why, gboolean prefix)
{
    /* named as the engine names the server ([backend] servers' text:
     * an IPv6 address in brackets) */
    gboolean v6 = strchr(t->host, ':') != NULL;
    g_autofree char *head = g_strdup_printf("backend %s%s%s:%u", v6 ? "[" : "",
                                            t->host, v6 ? "]" : "", t->port);
    g_autofree char *tail = g_strconcat(": ", why, NULL);

    /* 0 requests: a probe's or the catalog's call is no client's */
    if (lograte_note_of(G_LOG_LEVEL_WARNING, "call", head, tail, NULL, 0)) {
        if (prefix) {
            g_warning("%s: %s", head, why);
        } else {
            g_warning("%s", why);
        }
    }
}

static void
httpc_reply_cb(struct evhttp_request *req, void *arg)
{
    struct httpc_bridge *b = arg;
    struct httpc_call *c = g_queue_pop_head(&b->calls);
    int code = req != NULL ? evhttp_request_get_response_code(req) : 0;
    char why[512];

    if (c == NULL || b->closing) {
        if (c != NULL) {
            httpc_call_free(c);
        }
        return;
    }
    if (code != 0) {
        httpc_failure_note(&b->t, NULL);
    }
    if (code == 200) {
        evbuffer_add_buffer(bufferevent_get_output(b->bev),
                            evhttp_request_get_input_buffer(req));
    } else if (code == 0) {
        /* no server said anything: as a lost connection, so the engine
         * counts it against the server and tries another */
        httpc_transport_error(b, why, sizeof(why));
        httpc_failure_note(&b->t, why);
        httpc_warn(&b->t, why, TRUE);
        httpc_call_free(c);
        httpc_bridge_close(b);
        return;
    } else {
        httpc_refusal(&b->t, code, evhttp_request_get_response_code_line(req),
                      evhttp_request_get_input_buffer(req), why, sizeof(why));
        httpc_warn(&b->t, why, FALSE);
        httpc_fail_call(b, c, why);
    }
    httpc_call_free(c);
    httpc_flush_refused(b);
}

/* The HTTP connection went away (Jetty closes idle ones): the engine
 * dials again, through a new bridge. */
static void
httpc_evcon_closed(struct evhttp_connection *evcon, void *arg)
{
    struct httpc_bridge *b = arg;

    if (!b->closing && g_queue_is_empty(&b->calls)) {
        httpc_bridge_close(b);
    }
}

/* evhttp makes the socket itself (again after a close): a request and
 * its body, or TLS records, must not wait for the last segment's ACK. */
static void
httpc_nodelay(struct httpc_bridge *b)
{
    evutil_socket_t fd = bufferevent_getfd(b->hbev);
    int one = 1;

    if (fd >= 0 && fd != b->nodelay_fd) {
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
        b->nodelay_fd = fd;
    }
}

/* One whole call from the engine: a POST. */
static void
httpc_post(struct httpc_bridge *b, const uint8_t *msg, size_t len)
{
    struct httpc_call *c = g_new0(struct httpc_call, 1);
    struct evhttp_request *req;
    struct evkeyvalq *h;
    struct wire_reader r;
    struct wire_msg m;

    wire_reader_init(&r, WIRE_BINARY, msg, len, TRUE, &httpc.limits);
    if (wire_read_msg_begin(&r, &m) == WIRE_OK) {
        g_strlcpy(c->name, (const char *)m.name,
                  MIN((size_t)m.name_len + 1, sizeof(c->name)));
        c->seqid = m.seqid;
    }
    g_queue_push_tail(&b->calls, c);
    req = evhttp_request_new(httpc_reply_cb, b);
    h = evhttp_request_get_output_headers(req);
    evhttp_add_header(h, "Host", b->t.host);
    evhttp_add_header(h, "Content-Type", "application/x-thrift");
    evhttp_add_header(h, "Accept", "application/x-thrift");
    evhttp_add_header(h, "User-Agent", "hbase-salt-proxy");
    if (httpc.doas[0] != '\0') {
        evhttp_add_header(h, "doAs", httpc.doas);
    }
    if (b->creds != NULL && b->t.principal[0] != '\0') {
        g_autoptr(GError) err = NULL;
        g_autofree char *token = sasl_spnego_token(b->creds, b->t.principal,
                                                   &err);

        if (token == NULL) {
            /* answered in its turn, as a call the server refused */
            c->error = g_strdup_printf("hbase-salt-proxy: SPNEGO: %s",
                                       err->message);
            httpc_warn(&b->t, c->error, TRUE);
            evhttp_request_free(req);
            if (g_queue_peek_head(&b->calls) == c) {
                httpc_flush_refused(b);
            }
            return;
        }
        {
            g_autofree char *value = g_strconcat("Negotiate ", token, NULL);

            evhttp_add_header(h, "Authorization", value);
        }
    }
    evbuffer_add(evhttp_request_get_output_buffer(req), msg, len);
    if (evhttp_make_request(b->evcon, req, EVHTTP_REQ_POST, httpc.path) != 0) {
        /* evhttp freed req */
        g_queue_remove(&b->calls, c);
        httpc_fail_call(b, c,
                        "hbase-salt-proxy: cannot send the HTTP "
                        "request");
        httpc_call_free(c);
        return;
    }
    httpc_nodelay(b);
}

/* Calls from the engine, cut at message boundaries. */
static void
httpc_read_cb(struct bufferevent *bev, void *arg)
{
    struct httpc_bridge *b = arg;
    struct evbuffer *in = bufferevent_get_input(bev);

    while (!b->closing && evbuffer_get_length(in) > 0) {
        size_t len = evbuffer_get_length(in), msg_len = 0;
        const uint8_t *p = evbuffer_pullup(in, -1);
        const char *why = NULL;
        wire_status_t st = wire_scan_feed(&b->scan, WIRE_BINARY, p, len,
                                          &httpc.limits, &msg_len, &why);

        if (st == WIRE_AGAIN) {
            return;
        }
        if (st == WIRE_ERROR) {
            g_warning("backend %s:%u: HTTP bridge: a call it cannot cut: "
                      "%s",
                      b->t.host, b->t.port, why != NULL ? why : "?");
            httpc_bridge_close(b);
            return;
        }
        wire_scan_init(&b->scan);
        httpc_post(b, p, msg_len);
        evbuffer_drain(in, msg_len);
    }
}

static void
httpc_event_cb(struct bufferevent *bev, short what, void *arg)
{
    if (what & (BEV_EVENT_EOF | BEV_EVENT_ERROR)) {
        /* the engine closed the connection */
        httpc_bridge_close(arg);
    }
}

/* An unconnected bufferevent toward t: TLS from the current context
 * (verifying t's name as configured) with [backend] https, else plain. */
static struct bufferevent *
httpc_bev_new(struct event_base *base, const struct httpc_target *t,
              int options)
{
    SSL_CTX *tls;
    SSL *ssl;

    g_mutex_lock(&httpc_lock);
    tls = httpc.tls;
    if (tls != NULL) {
        SSL_CTX_up_ref(tls);
    }
    g_mutex_unlock(&httpc_lock);
    if (tls == NULL) {
        return bufferevent_socket_new(base, -1, options);
    }
    ssl = SSL_new(tls);
    /* the SSL holds the context now: a reload may replace ours */
    SSL_CTX_free(tls);
    if (ssl == NULL) {
        return NULL;
    }
    SSL_set_tlsext_host_name(ssl, t->host);
    if (httpc.verify_host) {
        X509_VERIFY_PARAM *vp = SSL_get0_param(ssl);

        /* the name in [backend] servers, address or host */
        if (X509_VERIFY_PARAM_set1_ip_asc(vp, t->host) != 1) {
            X509_VERIFY_PARAM_set1_host(vp, t->host, 0);
        }
    }
    return bufferevent_openssl_socket_new(base, -1, ssl,
                                          BUFFEREVENT_SSL_CONNECTING,
                                          options | BEV_OPT_DEFER_CALLBACKS);
}

evutil_socket_t
httpc_bridge_open(struct event_base *base, const struct httpc_target *t,
                  struct sasl_creds *creds, GError **error)
{
    struct httpc_bridge *b;
    evutil_socket_t sv[2];

    if (!httpc.ready) {
        g_set_error(error, HTTPC_ERROR, HTTPC_ERROR_SOCKET,
                    "the HTTP transport is not set up");
        return -1;
    }
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0,
                   sv) != 0) {
        g_set_error(error, HTTPC_ERROR, HTTPC_ERROR_SOCKET, "socketpair: %s",
                    g_strerror(errno));
        return -1;
    }
    b = g_new0(struct httpc_bridge, 1);
    b->base = base;
    b->nodelay_fd = -1;
    b->t = *t;
    b->creds = creds;
    wire_scan_init(&b->scan);
    g_queue_init(&b->calls);
    b->bev = bufferevent_socket_new(base, sv[0], BEV_OPT_CLOSE_ON_FREE);
    b->hbev = httpc_bev_new(base, t, BEV_OPT_CLOSE_ON_FREE);
    b->evcon = b->hbev != NULL
                   ? evhttp_connection_base_bufferevent_new(base, NULL,
                                                            b->hbev, t->addr,
                                                            t->port)
                   : NULL;
    if (b->bev == NULL || b->evcon == NULL) {
        if (b->evcon == NULL && b->hbev != NULL) {
            bufferevent_free(b->hbev);
        }
        if (b->bev == NULL) {
            evutil_closesocket(sv[0]);
        }
        evutil_closesocket(sv[1]);
        httpc_bridge_free(b);
        g_set_error(error, HTTPC_ERROR, HTTPC_ERROR_SOCKET,
                    "cannot set up the HTTP connection");
        return -1;
    }
    evhttp_connection_set_timeout(b->evcon, (int)httpc.timeout_s);
    evhttp_connection_set_retries(b->evcon, 0);
    evhttp_connection_set_closecb(b->evcon, httpc_evcon_closed, b);
    bufferevent_setcb(b->bev, httpc_read_cb, NULL, httpc_event_cb, b);
    bufferevent_enable(b->bev, EV_READ | EV_WRITE);
    g_mutex_lock(&httpc_lock);
    if (httpc_bridges == NULL) {
        httpc_bridges = g_ptr_array_new();
    }
    g_ptr_array_add(httpc_bridges, b);
    g_mutex_unlock(&httpc_lock);
    return sv[1];
}

/* Passes at most: each runs what the one before queued. */
#define HTTPC_SETTLE_PASSES 16

void
httpc_base_done(struct event_base *base)
{
    GPtrArray *mine = g_ptr_array_new();

    g_mutex_lock(&httpc_lock);
    for (guint i = 0; httpc_bridges != NULL && i < httpc_bridges->len; i++) {
        struct httpc_bridge *b = g_ptr_array_index(httpc_bridges, i);

        /* a closing one is freed by the callback its close queued, run
         * below */
        if (b->base == base && !b->closing) {
            g_ptr_array_add(mine, b);
        }
    }
    g_mutex_unlock(&httpc_lock);
    for (guint i = 0; i < mine->len; i++) {
        httpc_bridge_free(g_ptr_array_index(mine, i));
    }
    g_ptr_array_free(mine, TRUE);
    /* the bufferevents just freed go by finalizers the loop runs, and one
     * with a deferred callback queued holds a reference until it runs:
     * event_base_free would cancel both without dropping it (a probe's
     * TLS handshake failing as the proxy stopped leaked its bufferevent
     * and SSL), as proxy_worker_settle says for the workers */
    for (int i = 0;
         i < HTTPC_SETTLE_PASSES &&
         event_base_get_num_events(base, EVENT_BASE_COUNT_ACTIVE) > 0;
         i++) {
        event_base_loop(base, EVLOOP_NONBLOCK);
    }
}

/*
 * The engine's own HTTP connections.  One call is one write (the request
 * head made once per connection, Content-Length, the message) and its
 * reply is parsed from the connection's input as it arrives: status line
 * and headers in one piece (at most HTTPC_HEAD_MAX bytes), then a body by
 * Content-Length or chunked coding, moved (not copied) into the engine's
 * buffer.  No socketpair, no evhttp request per call.
 */
#define HTTPC_HEAD_MAX 16384
/* a chunk-size line or a trailer line */
#define HTTPC_LINE_MAX 1024
/* trailer lines after the last chunk, at most */
#define HTTPC_TRAILERS_MAX 64

enum httpc_phase {
    HTTPC_HEAD,       /* status line and headers */
    HTTPC_LENGTH,     /* a Content-Length body: left to come */
    HTTPC_CHUNK_SIZE, /* a chunk-size line */
    HTTPC_CHUNK_DATA, /* a chunk's data: left to come */
    HTTPC_CHUNK_END,  /* the CRLF after a chunk's data */
    HTTPC_TRAILER,    /* trailer lines to the empty one */
};

struct httpc_conn {
    const struct httpc_target *t;
    struct sasl_creds *creds; /* SPNEGO when t has a principal */
    char *head;               /* "POST ... Content-Length: " */
    size_t head_len;
    enum httpc_phase phase;
    int status;
    gboolean close;   /* this reply ends the connection */
    gboolean closing; /* the last whole one did */
    size_t left;      /* body or chunk bytes still to come */
    size_t got;       /* body bytes so far */
    unsigned trailers;
    char reason[64];
};

struct httpc_conn *
httpc_conn_new(const struct httpc_target *t, struct sasl_creds *creds)
{
    struct httpc_conn *h = g_new0(struct httpc_conn, 1);
    GString *head = g_string_sized_new(256);

    h->t = t;
    h->creds = t->principal[0] != '\0' ? creds : NULL;
    g_string_append_printf(head,
                           "POST %s HTTP/1.1\r\nHost: %s\r\n"
                           "Content-Type: application/x-thrift\r\n"
                           "Accept: application/x-thrift\r\n"
                           "User-Agent: hbase-salt-proxy\r\n",
                           httpc.path, t->host);
    if (httpc.doas[0] != '\0') {
        g_string_append_printf(head, "doAs: %s\r\n", httpc.doas);
    }
    g_string_append(head, "Content-Length: ");
    h->head_len = head->len;
    h->head = g_string_free(head, FALSE);
    return h;
}

void
httpc_conn_free(struct httpc_conn *h)
{
    if (h != NULL) {
        g_free(h->head);
        g_free(h);
    }
}

struct bufferevent *
httpc_conn_bufferevent(struct event_base *base, const struct httpc_target *t,
                       GError **error)
{
    struct bufferevent *bev = NULL;

    if (httpc.ready) {
        bev = httpc_bev_new(base, t, BEV_OPT_CLOSE_ON_FREE);
    }
    if (bev != NULL && bufferevent_openssl_get_ssl(bev) != NULL) {
        /* Jetty closes idle connections without close_notify: an end,
         * not an error */
        bufferevent_openssl_set_allow_dirty_shutdown(bev, 1);
    }
    if (bev == NULL) {
        g_set_error(error, HTTPC_ERROR, HTTPC_ERROR_SOCKET,
                    httpc.ready ? "cannot set up the HTTP connection"
                                : "the HTTP transport is not set up");
    }
    return bev;
}

/*
 * Over HTTPS a POST of up to a TLS record's payload is written here, with
 * one SSL_write of a contiguous copy, when nothing waits in the
 * bufferevent.  Through the bufferevent each buffer piece (head, body)
 * was an SSL_write and a record of its own (~8 000 instructions each,
 * whatever the size), and each write added and removed the socket's
 * write event (two epoll_ctl per call).  A write that blocks or fails
 * goes to the bufferevent as it is: it retries the same bytes, as
 * OpenSSL wants (one piece of at most 16 KiB, what the bufferevent
 * offers SSL_write at once), and reports a failure as for any write.
 */
#define HTTPC_POST_DIRECT_MAX 16384u

static _Thread_local uint8_t httpc_post_buf[HTTPC_POST_DIRECT_MAX];

static const char httpc_negotiate[] = "Authorization: Negotiate ";

/* The POST in one piece at httpc_post_buf; its length, 0 when over. */
static size_t
httpc_post_flat(const struct httpc_conn *h, const char *tail, size_t tail_len,
                const char *token, struct evbuffer *held, size_t len)
{
    size_t tok = token != NULL ? strlen(token) : 0;
    size_t need = h->head_len + tail_len + 2 + len;
    uint8_t *p = httpc_post_buf;
    int got;

    if (token != NULL) {
        need += sizeof(httpc_negotiate) - 1 + tok + 2;
    }
    if (need > sizeof(httpc_post_buf)) {
        return 0;
    }
    memcpy(p, h->head, h->head_len);
    p += h->head_len;
    memcpy(p, tail, tail_len);
    p += tail_len;
    if (token != NULL) {
        memcpy(p, httpc_negotiate, sizeof(httpc_negotiate) - 1);
        p += sizeof(httpc_negotiate) - 1;
        memcpy(p, token, tok);
        p += tok;
        memcpy(p, "\r\n", 2);
        p += 2;
    }
    memcpy(p, "\r\n", 2);
    p += 2;
    /* held has the whole message (the caller's length) */
    got = evbuffer_remove(held, p, len);
    g_assert(got == (int)len);
    g_assert((size_t)(p + len - httpc_post_buf) == need);
    return need;
}

gboolean
httpc_conn_post(struct httpc_conn *h, struct evbuffer *held, size_t len,
                struct bufferevent *bev, char *why, size_t whylen)
{
    struct evbuffer *out = bufferevent_get_output(bev);
    g_autofree char *token = NULL;
    char tail[64];
    SSL *ssl;
    int n;

    if (h->creds != NULL) {
        /* a token per request, as the server's replay cache wants */
        g_autoptr(GError) err = NULL;

        token = sasl_spnego_token(h->creds, h->t->principal, &err);
        if (token == NULL) {
            g_snprintf(why, whylen, "hbase-salt-proxy: SPNEGO: %s",
                       err->message);
            evbuffer_drain(held, len);
            return FALSE;
        }
    }
    n = g_snprintf(tail, sizeof(tail), "%zu\r\n", len);
    ssl = httpc.https ? bufferevent_openssl_get_ssl(bev) : NULL;
    if (ssl != NULL && evbuffer_get_length(out) == 0) {
        size_t flat = httpc_post_flat(h, tail, (size_t)n, token, held, len);

        if (flat > 0) {
            ERR_clear_error();
            if (SSL_write(ssl, httpc_post_buf, (int)flat) != (int)flat) {
                /* blocked or failed: see above */
                evbuffer_add(out, httpc_post_buf, flat);
            }
            return TRUE;
        }
    }
    evbuffer_add(out, h->head, h->head_len);
    evbuffer_add(out, tail, (size_t)n);
    if (token != NULL) {
        evbuffer_add_printf(out, "%s%s\r\n", httpc_negotiate, token);
    }
    evbuffer_add(out, "\r\n", 2);
    evbuffer_remove_buffer(held, out, len);
    return TRUE;
}

gboolean
httpc_conn_closing(const struct httpc_conn *h)
{
    return h->closing;
}

void
httpc_conn_why(const struct httpc_target *t, struct bufferevent *bev, int err,
               char *why, size_t len)
{
    if (!httpc_tls_why(t, bev, why, len)) {
        g_snprintf(why, len, "%s", evutil_socket_error_to_string(err));
    }
}

/* A decimal length of at most max, strictly digits. */
static gboolean
httpc_parse_size(const char *s, size_t max, size_t *out)
{
    guint64 v = 0;

    if (*s == '\0') {
        return FALSE;
    }
    for (; *s != '\0'; s++) {
        if (!g_ascii_isdigit(*s)) {
            return FALSE;
        }
        v = v * 10 + (guint64)(*s - '0');
        if (v > max) {
            return FALSE;
        }
    }
    *out = (size_t)v;
    return TRUE;
}

/* One header line of a reply head (NUL-terminated, no CRLF). */
static httpc_reply_t
httpc_header(struct httpc_conn *h, char *line, gboolean *chunked,
             gboolean *has_length, char *why, size_t whylen)
{
    char *colon = strchr(line, ':');
    char *v;
    size_t n;

    /* no folded line, no bare CR or LF */
    if (colon == NULL || colon == line || line[0] == ' ' || line[0] == '\t' ||
        strpbrk(line, "\r\n") != NULL) {
        g_snprintf(why, whylen, "malformed HTTP header line");
        return HTTPC_BAD;
    }
    *colon = '\0';
    v = g_strstrip(colon + 1);
    if (g_ascii_strcasecmp(line, "Content-Length") == 0) {
        if (!httpc_parse_size(v, httpc.limits.max_message, &n) ||
            (*has_length && n != h->left)) {
            g_snprintf(why, whylen,
                       "HTTP Content-Length %.40s: not a length up to "
                       "max_frame_size (%u)",
                       v, httpc.limits.max_message);
            return HTTPC_BAD;
        }
        h->left = n;
        *has_length = TRUE;
    } else if (g_ascii_strcasecmp(line, "Transfer-Encoding") == 0) {
        if (g_ascii_strcasecmp(v, "chunked") != 0) {
            g_snprintf(why, whylen,
                       "HTTP Transfer-Encoding %.40s: not "
                       "supported",
                       v);
            return HTTPC_BAD;
        }
        *chunked = TRUE;
    } else if (g_ascii_strcasecmp(line, "Connection") == 0) {
        if (g_ascii_strcasecmp(v, "close") == 0) {
            h->close = TRUE;
        } else if (g_ascii_strcasecmp(v, "keep-alive") == 0) {
            h->close = FALSE;
        }
    }
    return HTTPC_AGAIN;
}

/* Whether what ends at pos in raw (-1: its end has not come yet), plus
 * extra bytes of its terminator, fits in max bytes: HTTPC_BODY when it is
 * all there, HTTPC_AGAIN while it still may come, HTTPC_BAD (with why)
 * once it cannot fit, so a server cannot make us buffer without bound. */
static httpc_reply_t
httpc_bounded(struct evbuffer *raw, ev_ssize_t pos, size_t extra, size_t max,
              const char *what, char *why, size_t whylen)
{
    if (pos < 0 ? evbuffer_get_length(raw) > max : (size_t)pos + extra > max) {
        g_snprintf(why, whylen, "HTTP %s over %zu bytes", what, max);
        return HTTPC_BAD;
    }
    return pos < 0 ? HTTPC_AGAIN : HTTPC_BODY;
}

/* The status line and headers, when they are all there. */
static httpc_reply_t
httpc_head(struct httpc_conn *h, struct evbuffer *raw, char *why,
           size_t whylen)
{
    struct evbuffer_ptr end = evbuffer_search(raw, "\r\n\r\n", 4, NULL);
    char head[HTTPC_HEAD_MAX + 1];
    gboolean chunked = FALSE, has_length = FALSE, http10;
    httpc_reply_t fits;
    char *line, *next;
    size_t n;

    /* the last line's CRLF is part of the head */
    fits = httpc_bounded(raw, end.pos, 2, HTTPC_HEAD_MAX, "reply head", why,
                         whylen);
    if (fits != HTTPC_BODY) {
        return fits;
    }
    n = (size_t)end.pos + 2;
    evbuffer_remove(raw, head, n);
    evbuffer_drain(raw, 2);
    head[n] = '\0';
    if (memchr(head, '\0', n) != NULL) {
        g_snprintf(why, whylen, "NUL in the HTTP reply head");
        return HTTPC_BAD;
    }
    /* "HTTP/1.x NNN reason" */
    if (n < 14 ||
        (strncmp(head, "HTTP/1.1 ", 9) != 0 &&
         strncmp(head, "HTTP/1.0 ", 9) != 0) ||
        !g_ascii_isdigit(head[9]) || !g_ascii_isdigit(head[10]) ||
        !g_ascii_isdigit(head[11]) || (head[12] != ' ' && head[12] != '\r')) {
        g_snprintf(why, whylen, "not an HTTP/1.x status line");
        return HTTPC_BAD;
    }
    http10 = head[7] == '0';
    h->status = (head[9] - '0') * 100 + (head[10] - '0') * 10 + head[11] - '0';
    h->close = http10;
    h->left = 0;
    h->got = 0;
    h->trailers = 0;
    line = strstr(head, "\r\n");
    *line = '\0';
    g_strlcpy(h->reason, head[12] == ' ' ? head + 13 : "", sizeof(h->reason));
    for (line += 2; *line != '\0'; line = next) {
        httpc_reply_t st;

        next = strstr(line, "\r\n");
        *next = '\0';
        next += 2;
        st = httpc_header(h, line, &chunked, &has_length, why, whylen);
        if (st != HTTPC_AGAIN) {
            return st;
        }
    }
    if (h->status >= 100 && h->status < 200) {
        /* an interim answer: the real one follows */
        h->phase = HTTPC_HEAD;
        return HTTPC_BODY;
    }
    if (chunked && has_length) {
        g_snprintf(why, whylen,
                   "HTTP reply with both Content-Length and "
                   "chunked coding");
        return HTTPC_BAD;
    }
    if (h->status == 204 || h->status == 304) {
        h->left = 0;
        h->phase = HTTPC_LENGTH;
    } else if (chunked) {
        h->phase = HTTPC_CHUNK_SIZE;
    } else if (has_length) {
        h->phase = HTTPC_LENGTH;
    } else if (h->status != 200) {
        /* an error page to the close: its status is enough */
        h->close = TRUE;
        h->left = 0;
        h->phase = HTTPC_LENGTH;
    } else {
        g_snprintf(why, whylen,
                   "HTTP 200 without Content-Length or chunked "
                   "coding");
        return HTTPC_BAD;
    }
    return HTTPC_BODY;
}

/* One CRLF-ended line of at most HTTPC_LINE_MAX bytes into line. */
static httpc_reply_t
httpc_line(struct evbuffer *raw, char *line, char *why, size_t whylen)
{
    size_t eol = 0;
    struct evbuffer_ptr p = evbuffer_search_eol(raw, NULL, &eol,
                                                EVBUFFER_EOL_CRLF_STRICT);

    httpc_reply_t fits = httpc_bounded(raw, p.pos, 0, HTTPC_LINE_MAX,
                                       "chunk line", why, whylen);

    if (fits != HTTPC_BODY) {
        return fits;
    }
    evbuffer_remove(raw, line, (size_t)p.pos);
    line[p.pos] = '\0';
    evbuffer_drain(raw, eol);
    return HTTPC_BODY;
}

/* A chunk-size line: hex digits, then extensions (ignored). */
static httpc_reply_t
httpc_chunk_size(struct httpc_conn *h, const char *line, char *why,
                 size_t whylen)
{
    guint64 v = 0;
    const char *s = line;

    for (; g_ascii_isxdigit(*s); s++) {
        v = v * 16 + (guint64)g_ascii_xdigit_value(*s);
        if (v > httpc.limits.max_message) {
            break;
        }
    }
    if (s == line || (*s != '\0' && *s != ';' && *s != ' ' && *s != '\t') ||
        h->got + v > httpc.limits.max_message) {
        g_snprintf(why, whylen,
                   "HTTP chunk size %.20s: not a size within "
                   "max_frame_size (%u)",
                   line, httpc.limits.max_message);
        return HTTPC_BAD;
    }
    h->left = (size_t)v;
    h->phase = v == 0 ? HTTPC_TRAILER : HTTPC_CHUNK_DATA;
    return HTTPC_BODY;
}

/* A whole reply whose body is in body: a 200 is the call's, any other
 * status its exception (text into why). */
static httpc_reply_t
httpc_done(struct httpc_conn *h, struct evbuffer *body, char *why,
           size_t whylen)
{
    h->phase = HTTPC_HEAD;
    h->closing = h->close;
    if (h->status == 200) {
        return HTTPC_BODY;
    }
    httpc_refusal(h->t, h->status, h->reason, body, why, whylen);
    evbuffer_drain(body, evbuffer_get_length(body));
    return HTTPC_REFUSED;
}

httpc_reply_t
httpc_conn_reply(struct httpc_conn *h, struct evbuffer *raw,
                 struct evbuffer *body, char *why, size_t whylen)
{
    char line[HTTPC_LINE_MAX + 1];
    httpc_reply_t st;
    size_t n;

    for (;;) {
        switch (h->phase) {
        case HTTPC_HEAD:
            st = httpc_head(h, raw, why, whylen);
            if (st != HTTPC_BODY) {
                return st;
            }
            break;
        case HTTPC_LENGTH:
        case HTTPC_CHUNK_DATA:
            n = MIN(h->left, evbuffer_get_length(raw));
            if (n > 0) {
                evbuffer_remove_buffer(raw, body, n);
                h->left -= n;
                h->got += n;
            }
            if (h->left > 0) {
                return HTTPC_AGAIN;
            }
            if (h->phase == HTTPC_LENGTH) {
                return httpc_done(h, body, why, whylen);
            }
            h->phase = HTTPC_CHUNK_END;
            break;
        case HTTPC_CHUNK_END:
            if (evbuffer_get_length(raw) < 2) {
                return HTTPC_AGAIN;
            }
            evbuffer_remove(raw, line, 2);
            if (line[0] != '\r' || line[1] != '\n') {
                g_snprintf(why, whylen, "HTTP chunk without its CRLF");
                return HTTPC_BAD;
            }
            h->phase = HTTPC_CHUNK_SIZE;
            break;
        case HTTPC_CHUNK_SIZE:
        case HTTPC_TRAILER:
            st = httpc_line(raw, line, why, whylen);
            if (st != HTTPC_BODY) {
                return st;
            }
            if (h->phase == HTTPC_CHUNK_SIZE) {
                st = httpc_chunk_size(h, line, why, whylen);
                if (st != HTTPC_BODY) {
                    return st;
                }
            } else if (line[0] == '\0') {
                return httpc_done(h, body, why, whylen);
            } else if (++h->trailers > HTTPC_TRAILERS_MAX) {
                g_snprintf(why, whylen,
                           "HTTP reply with over %u trailer "
                           "lines",
                           HTTPC_TRAILERS_MAX);
                return HTTPC_BAD;
            }
            break;
        }
    }
}
