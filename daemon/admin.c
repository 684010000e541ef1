/* admin.c: the HTTP admin endpoint: /metrics, /healthz, /config. */
#include "admin.h"

#include <string.h>
#include <sys/socket.h>
#include <netinet/in.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/http.h>

#include "backend.h"
#include "catalog.h"
#include "metrics.h"
#include "metrics_render.h"
#include "proxy.h"
#include "tablecheck.h"

G_DEFINE_QUARK(admin-error-quark, admin_error)

struct admin {
    struct proxy *p;
    struct event_base *base;
    struct evhttp *http;
    unsigned port;
};

/* /healthz: the backend health the proxy routes by (backend.c). */
struct admin_health {
    unsigned up, total, probed;
    GString *misplaced; /* a line per server listed under the wrong
                               key */
};

static void
admin_health_cb(const struct backend_health_info *info, void *arg)
{
    struct admin_health *h = arg;

    h->total++;
    h->up += info->up ? 1 : 0;
    /* a DOWN server has been judged, probed or not */
    h->probed += info->probed || !info->up ? 1 : 0;
    if (info->misplaced[0] != '\0') {
        g_string_append_printf(h->misplaced, "misconfigured: %s\n",
                               info->misplaced);
    }
}

/*
 * /config with workers = 0 (one per core) in the file: the number in
 * use, which is what an operator looks there for.  The published running
 * configuration keeps the 0, as a reload compares it with the file.
 * NULL when nothing is to change.
 */
static char *
admin_effective_workers(const struct proxy *p, const char *text)
{
    static const char zero[] = "\nworkers = 0\n";
    const char *at = strstr(text, zero);

    if (p->gen->cfg->workers != 0 || at == NULL) {
        return NULL;
    }
    return g_strdup_printf("%.*s\n# workers = 0 in the file: one per CPU "
                           "core\nworkers = %u\n%s",
                           (int)(at - text), text, p->nworkers,
                           at + strlen(zero));
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
        g_autoptr(GString) misplaced = g_string_new(NULL);
        struct admin_health h = { 0, 0, 0, misplaced };
        gboolean probed, ok;

        g_autoptr(GString) tables = g_string_new(NULL);
        unsigned refused;

        backend_health_foreach(a->p->health, admin_health_cb, &h);
        /* a salted table the catalog refuses is a table not served */
        refused = catalog_describe_refused(a->p->gen->cfg, tables);
        /* one UP server answered is enough to be useful */
        probed = h.probed == h.total || h.up > 0;
        ok = probed && h.up > 0 && refused == 0;
        if (!probed) {
            g_string_append(body, "starting: backends not probed yet\n");
        } else {
            g_string_append_printf(body,
                                   "%s: %u of %u backend servers "
                                   "answer\n",
                                   ok || h.up > 0
                                       ? (refused > 0 || h.misplaced->len > 0
                                              ? "degraded"
                                              : "ok")
                                       : "unavailable",
                                   h.up, h.total);
        }
        g_string_append(body, misplaced->str);
        if (refused > 0) {
            g_string_append_printf(body, "%u salted table%s not served:\n%s",
                                   refused, refused == 1 ? "" : "s",
                                   tables->str);
        }
        /* served, only not spread: a warning, not a failed check */
        g_string_truncate(tables, 0);
        refused = tablecheck_describe(a->p->gen->cfg, tables);
        if (refused > 0) {
            g_string_append_printf(body,
                                   "warning: %u salted table%s not spread "
                                   "over regions:\n%s",
                                   refused, refused == 1 ? "" : "s",
                                   tables->str);
        }
        admin_reply(req, ok ? HTTP_OK : 503,
                    ok ? "OK" : "Service Unavailable",
                    "text/plain; charset=utf-8", body->str, body->len);
    } else if (g_strcmp0(path, "/config") == 0) {
        g_autofree char *text = config_to_text(a->p->gen->cfg);
        g_autofree char *fixed = admin_effective_workers(a->p, text);

        g_string_append_printf(body, "# generation %u\n%s",
                               proxy_generation(a->p),
                               fixed != NULL ? fixed : text);
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

    a->p = p;
    a->base = base;
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
