/* admin.c: the HTTP admin endpoint: /metrics, /healthz, /config. */
#include "admin.h"

#include <string.h>
#include <sys/socket.h>
#include <netinet/in.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/http.h>

#include "metrics.h"
#include "proxy.h"

/* How often every backend is probed. */
#define ADMIN_PROBE_MS 5000
/* A probe that has no reply after this long counts as down. */
#define ADMIN_PROBE_TIMEOUT_MS 4000

G_DEFINE_QUARK(admin-error-quark, admin_error)

struct admin_probe;

struct admin {
    struct proxy *p;
    struct event_base *base;
    struct evhttp *http;
    unsigned port;
    struct event *probe_timer;      /* starts a probe round */
    GPtrArray *probes;              /* struct admin_probe *, this round */
    unsigned probes_left;           /* of this round, not finished */
    gboolean probed;                /* a round has finished */
    unsigned up;                    /* servers that answered, last round */
    unsigned total;                 /* servers probed, last round */
    int32_t seqid;
};

/* One backend's probe: connect, getTableNames, any whole reply = up. */
struct admin_probe {
    struct admin *a;
    char name[128];                 /* "host:port" */
    struct bufferevent *bev;
    gboolean done;
    gboolean up;
    char why[128];                  /* when down, for the log */
};

/* ---- backend probes ----------------------------------------------------- */

static void
admin_round_done(struct admin *a)
{
    unsigned up = 0;

    metrics_backend_up_reset(a->p->metrics);
    for (guint i = 0; i < a->probes->len; i++) {
        struct admin_probe *pr = g_ptr_array_index(a->probes, i);

        metrics_backend_up(a->p->metrics, pr->name, pr->up);
        up += pr->up ? 1 : 0;
    }
    if (a->probed && up == 0 && a->up > 0) {
        g_warning("health: no backend server answers any more");
    } else if (a->probed && up > 0 && a->up == 0) {
        g_message("health: %u of %u backend servers answer", up,
                  a->probes->len);
    }
    a->up = up;
    a->total = a->probes->len;
    a->probed = TRUE;
}

static void
admin_probe_finish(struct admin_probe *pr, gboolean up, const char *why)
{
    struct admin *a = pr->a;

    if (pr->done) {
        return;
    }
    pr->done = TRUE;
    pr->up = up;
    if (!up) {
        g_strlcpy(pr->why, why, sizeof(pr->why));
        g_debug("health: backend %s: %s", pr->name, why);
    }
    if (pr->bev != NULL) {
        bufferevent_free(pr->bev);
        pr->bev = NULL;
    }
    if (--a->probes_left == 0) {
        admin_round_done(a);
    }
}

static void
admin_probe_read_cb(struct bufferevent *bev, void *arg)
{
    struct admin_probe *pr = arg;
    const struct proxy_settings *set = &pr->a->p->gen->set;
    const uint8_t *msg = NULL;
    const char *why = NULL;
    size_t len = 0;
    wire_status_t st;

    st = proxy_msg_next(bufferevent_get_input(bev), set->backend_proto,
                        set->backend_framed, &wire_default_limits, &msg,
                        &len, &why);
    if (st == WIRE_OK) {
        admin_probe_finish(pr, TRUE, NULL);
    } else if (st == WIRE_ERROR) {
        admin_probe_finish(pr, FALSE, why != NULL ? why : "bad reply");
    }
}

static void
admin_probe_event_cb(struct bufferevent *bev, short what, void *arg)
{
    struct admin_probe *pr = arg;
    char why[128];

    if (what & BEV_EVENT_CONNECTED) {
        return;
    }
    if (what & BEV_EVENT_TIMEOUT) {
        admin_probe_finish(pr, FALSE, "no reply in time");
    } else if (what & BEV_EVENT_EOF) {
        admin_probe_finish(pr, FALSE, "connection closed");
    } else if (what & BEV_EVENT_ERROR) {
        g_snprintf(why, sizeof(why), "%s", evutil_socket_error_to_string(
                                               EVUTIL_SOCKET_ERROR()));
        admin_probe_finish(pr, FALSE, why);
    }
}

static void
admin_probe_start(struct admin *a, const struct proxy_settings *set,
                  const struct proxy_server *srv)
{
    struct admin_probe *pr = g_new0(struct admin_probe, 1);
    struct timeval tv = { ADMIN_PROBE_TIMEOUT_MS / 1000,
                          (ADMIN_PROBE_TIMEOUT_MS % 1000) * 1000 };
    struct wire_buf buf;
    struct wire_writer wr;
    size_t off = 0;

    pr->a = a;
    g_strlcpy(pr->name, srv->name, sizeof(pr->name));
    g_ptr_array_add(a->probes, pr);
    a->probes_left++;
    pr->bev = bufferevent_socket_new(a->base, -1, BEV_OPT_CLOSE_ON_FREE);
    if (pr->bev == NULL) {
        admin_probe_finish(pr, FALSE, "cannot create a socket buffer");
        return;
    }
    bufferevent_setcb(pr->bev, admin_probe_read_cb, NULL,
                      admin_probe_event_cb, pr);
    bufferevent_set_timeouts(pr->bev, &tv, &tv);
    bufferevent_enable(pr->bev, EV_READ | EV_WRITE);

    /* getTableNames: cheap for HBase, and a reply proves the server
     * speaks Thrift, not just that a port is open */
    wire_buf_init(&buf);
    if (set->backend_framed) {
        off = wire_frame_begin(&buf);
    }
    wire_writer_init(&wr, set->backend_proto, &buf);
    a->seqid = a->seqid == G_MAXINT32 ? 1 : a->seqid + 1;
    wire_write_msg_begin(&wr, (const uint8_t *)"getTableNames", 13,
                         WIRE_CALL, a->seqid);
    wire_write_struct_begin(&wr);
    wire_write_struct_end(&wr);
    if (set->backend_framed) {
        wire_frame_end(&buf, off);
    }
    bufferevent_write(pr->bev, buf.data, buf.len);
    wire_buf_free(&buf);
    if (bufferevent_socket_connect(pr->bev, (struct sockaddr *)&srv->addr,
                                   (int)srv->addrlen) < 0) {
        admin_probe_finish(pr, FALSE, "connect failed");
    }
}

static void
admin_probe_timer_cb(evutil_socket_t fd, short what, void *arg)
{
    struct admin *a = arg;
    const struct proxy_settings *set = &a->p->gen->set;

    if (a->probes_left > 0) {
        return;     /* the last round is still out (bounded by timeouts) */
    }
    g_ptr_array_set_size(a->probes, 0);
    /* counted up front: a probe failing at once must not end the round */
    a->probes_left = 1;
    for (unsigned i = 0; i < set->nservers; i++) {
        admin_probe_start(a, set, &set->servers[i]);
    }
    if (--a->probes_left == 0) {
        admin_round_done(a);
    }
}

/* ---- HTTP --------------------------------------------------------------- */

static void
admin_reply(struct evhttp_request *req, int code, const char *reason,
            const char *type, const char *body, size_t len)
{
    struct evbuffer *out = evbuffer_new();

    evhttp_add_header(evhttp_request_get_output_headers(req),
                      "Content-Type", type);
    evhttp_add_header(evhttp_request_get_output_headers(req),
                      "Cache-Control", "no-store");
    evbuffer_add(out, body, len);
    evhttp_send_reply(req, code, reason, out);
    evbuffer_free(out);
}

static void
admin_http_cb(struct evhttp_request *req, void *arg)
{
    struct admin *a = arg;
    const struct evhttp_uri *uri = evhttp_request_get_evhttp_uri(req);
    const char *path = uri != NULL ? evhttp_uri_get_path(uri) : NULL;
    g_autoptr(GString) body = g_string_new(NULL);

    if (g_strcmp0(path, "/metrics") == 0) {
        metrics_render(a->p->metrics, a->p, body);
        admin_reply(req, HTTP_OK, "OK",
                    "text/plain; version=0.0.4; charset=utf-8", body->str,
                    body->len);
    } else if (g_strcmp0(path, "/healthz") == 0) {
        gboolean ok = a->probed && a->up > 0;

        if (!a->probed) {
            g_string_append(body, "starting: backends not probed yet\n");
        } else {
            g_string_append_printf(body, "%s: %u of %u backend servers "
                                   "answer\n", ok ? "ok" : "unavailable",
                                   a->up, a->total);
        }
        admin_reply(req, ok ? HTTP_OK : 503,
                    ok ? "OK" : "Service Unavailable",
                    "text/plain; charset=utf-8", body->str, body->len);
    } else if (g_strcmp0(path, "/config") == 0) {
        g_autofree char *text = config_to_text(a->p->gen->cfg);

        g_string_append_printf(body, "# generation %u\n%s",
                               proxy_generation(a->p), text);
        admin_reply(req, HTTP_OK, "OK", "text/plain; charset=utf-8",
                    body->str, body->len);
    } else {
        g_string_append(body, "not found: try /metrics, /healthz or "
                              "/config\n");
        admin_reply(req, HTTP_NOTFOUND, "Not Found",
                    "text/plain; charset=utf-8", body->str, body->len);
    }
}

struct admin *
admin_new(struct event_base *base, struct proxy *p,
          const struct config_addr *listen, GError **error)
{
    struct admin *a = g_new0(struct admin, 1);
    struct evhttp_bound_socket *bound;
    struct sockaddr_storage ss;
    socklen_t sslen = sizeof(ss);
    struct timeval now = { 0, 0 };
    struct timeval every = { ADMIN_PROBE_MS / 1000,
                             (ADMIN_PROBE_MS % 1000) * 1000 };

    a->p = p;
    a->base = base;
    a->probes = g_ptr_array_new_with_free_func(g_free);
    a->http = evhttp_new(base);
    if (a->http == NULL) {
        g_set_error(error, ADMIN_ERROR, ADMIN_ERROR_LISTEN,
                    "[admin] listen: evhttp_new failed");
        admin_free(a);
        return NULL;
    }
    evhttp_set_allowed_methods(a->http, EVHTTP_REQ_GET | EVHTTP_REQ_HEAD);
    evhttp_set_gencb(a->http, admin_http_cb, a);
    /* a scrape is small; nobody needs to upload anything */
    evhttp_set_max_body_size(a->http, 4096);
    evhttp_set_timeout(a->http, 30);
    bound = evhttp_bind_socket_with_handle(a->http, listen->host,
                                           listen->port);
    if (bound == NULL) {
        g_autofree char *where = config_addr_to_string(listen);

        g_set_error(error, ADMIN_ERROR, ADMIN_ERROR_LISTEN,
                    "[admin] listen: cannot listen on %s: %s", where,
                    evutil_socket_error_to_string(EVUTIL_SOCKET_ERROR()));
        admin_free(a);
        return NULL;
    }
    a->port = listen->port;
    if (getsockname(evhttp_bound_socket_get_fd(bound),
                    (struct sockaddr *)&ss, &sslen) == 0) {
        a->port = ss.ss_family == AF_INET6
                      ? ntohs(((struct sockaddr_in6 *)&ss)->sin6_port)
                      : ntohs(((struct sockaddr_in *)&ss)->sin_port);
    }
    if (!g_str_has_prefix(listen->host, "127.")
        && strcmp(listen->host, "::1") != 0
        && strcmp(listen->host, "localhost") != 0) {
        /* /config tells the whole setup and nothing asks for a password */
        g_warning("admin endpoint on %s, not loopback: it has no "
                  "authentication; firewall it", listen->host);
    }
    a->probe_timer = event_new(base, -1, EV_PERSIST, admin_probe_timer_cb, a);
    event_add(a->probe_timer, &every);
    /* the first round right away, so /healthz is soon meaningful */
    event_base_once(base, -1, EV_TIMEOUT, admin_probe_timer_cb, a, &now);
    g_message("admin endpoint on http://%s%s%s:%u/ (/metrics, /healthz, "
              "/config)", strchr(listen->host, ':') != NULL ? "[" : "",
              listen->host, strchr(listen->host, ':') != NULL ? "]" : "",
              a->port);
    return a;
}

void
admin_free(struct admin *a)
{
    if (a == NULL) {
        return;
    }
    if (a->probe_timer != NULL) {
        event_free(a->probe_timer);
    }
    for (guint i = 0; i < a->probes->len; i++) {
        struct admin_probe *pr = g_ptr_array_index(a->probes, i);

        if (pr->bev != NULL) {
            bufferevent_free(pr->bev);
        }
    }
    g_ptr_array_unref(a->probes);
    if (a->http != NULL) {
        evhttp_free(a->http);
    }
    g_free(a);
}

unsigned
admin_port(const struct admin *a)
{
    return a->port;
}
