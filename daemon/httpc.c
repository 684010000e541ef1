/* httpc.c: the backend side of HBase's HTTP mode: each Thrift message one POST over a kept-alive HTTP(S) connection, bridged to a socket the engine uses as a buffered transport. */
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

#include "sasl.h"
#include "tls.h"
#include "wire.h"

/*
 * HTTP is libevent's evhttp client: a maintained HTTP/1.1 parser, kept-
 * alive connections, one request at a time per connection (so calls take
 * effect in the order they were sent, as HBase requires of a connection),
 * TLS through an OpenSSL bufferevent.  The engine (backend.c) does not
 * know: it writes calls to a socket and reads replies, as in socket mode.
 *
 *   backend conn --call--> socketpair --> bridge --POST--> HBase servlet
 *                <--reply--            <--        <--200 body--
 *
 * A failure the server or the network gives one call (401, 500, a TLS
 * verification failure) becomes that call's TApplicationException, in
 * order; when HTTP connection closes (Jetty drops idle ones after 30 s),
 * the bridge closes its socket and the engine dials a new one.
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
    SSL_CTX *tls; /* replaced by a reload: under httpc_lock */
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

/* Why a request got no HTTP answer. */
static void
httpc_transport_error(struct httpc_bridge *b, char *why, size_t len)
{
    unsigned long e = b->hbev != NULL ? bufferevent_get_openssl_error(b->hbev)
                                      : 0;

    if (e != 0) {
        char ossl[200];

        ERR_error_string_n(e, ossl, sizeof(ossl));
        while (bufferevent_get_openssl_error(b->hbev) != 0) {
        }
        g_snprintf(why, len, "TLS with %s:%u failed: %s", b->t.host, b->t.port,
                   ossl);
    } else {
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
        g_warning("backend %s:%u: %s", b->t.host, b->t.port, why);
        httpc_call_free(c);
        httpc_bridge_close(b);
        return;
    } else {
        struct evbuffer *body = evhttp_request_get_input_buffer(req);
        size_t n = MIN(evbuffer_get_length(body), (size_t)2048);
        char page[2049] = "";
        char text[201] = "";
        const char *from = page;
        char *nl;

        evbuffer_copyout(body, page, n);
        page[n] = '\0';
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
        g_snprintf(why, sizeof(why),
                   "hbase-salt-proxy: HBase's HTTP server %s:%u answered "
                   "%d %s%s%s%s",
                   b->t.host, b->t.port, code,
                   evhttp_request_get_response_code_line(req) != NULL
                       ? evhttp_request_get_response_code_line(req)
                       : "",
                   code == 401 ? " (SPNEGO: check sasl_principal, "
                                 "sasl_keytab and the server's "
                                 "hbase.thrift.spnego.principal)"
                               : "",
                   text[0] != '\0' ? ": " : "", text);
        g_warning("%s", why);
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
            g_warning("backend %s:%u: %s", b->t.host, b->t.port, c->error);
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

evutil_socket_t
httpc_bridge_open(struct event_base *base, const struct httpc_target *t,
                  struct sasl_creds *creds, GError **error)
{
    struct httpc_bridge *b;
    evutil_socket_t sv[2];
    SSL_CTX *tls;

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
    g_mutex_lock(&httpc_lock);
    tls = httpc.tls;
    if (tls != NULL) {
        SSL_CTX_up_ref(tls);
    }
    g_mutex_unlock(&httpc_lock);
    if (tls != NULL) {
        SSL *ssl = SSL_new(tls);

        /* the SSL holds the context now: a reload may replace ours */
        SSL_CTX_free(tls);

        SSL_set_tlsext_host_name(ssl, t->host);
        if (httpc.verify_host) {
            X509_VERIFY_PARAM *vp = SSL_get0_param(ssl);

            /* the name in [backend] servers, address or host */
            if (X509_VERIFY_PARAM_set1_ip_asc(vp, t->host) != 1) {
                X509_VERIFY_PARAM_set1_host(vp, t->host, 0);
            }
        }
        b->hbev = bufferevent_openssl_socket_new(base, -1, ssl,
                                                 BUFFEREVENT_SSL_CONNECTING,
                                                 BEV_OPT_CLOSE_ON_FREE |
                                                     BEV_OPT_DEFER_CALLBACKS);
    } else {
        b->hbev = bufferevent_socket_new(base, -1, BEV_OPT_CLOSE_ON_FREE);
    }
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

void
httpc_base_done(struct event_base *base)
{
    GPtrArray *mine = g_ptr_array_new();

    g_mutex_lock(&httpc_lock);
    for (guint i = 0; httpc_bridges != NULL && i < httpc_bridges->len; i++) {
        struct httpc_bridge *b = g_ptr_array_index(httpc_bridges, i);

        if (b->base == base) {
            g_ptr_array_add(mine, b);
        }
    }
    g_mutex_unlock(&httpc_lock);
    for (guint i = 0; i < mine->len; i++) {
        httpc_bridge_free(g_ptr_array_index(mine, i));
    }
    g_ptr_array_free(mine, TRUE);
}
