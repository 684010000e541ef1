/* admin.c: the HTTP admin endpoint: /metrics, /healthz, /config, and the
 * key visualizer (/keyviz, /keyviz.json, /hotkeys.json). */
#include "admin.h"

#include <string.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>

#include "backend.h"
#include "health.h"
#include "httpd.h"
#include "catalog.h"
#include "keyviz.h"
#include "keyviz_page.h"
#include "metrics.h"
#include "metrics_render.h"
#include "proxy.h"
#include "tablecheck.h"

G_DEFINE_QUARK(admin_error_quark, admin_error)

struct admin {
    struct proxy *p;
    struct event_base *base;
    struct evhttp *http;
    struct event *keyviz_timer; /* keyviz_tick, once a second */
    unsigned port;
};

/* /healthz: the backend health the proxy routes by (backend.c). */
struct admin_health {
    unsigned up, total, probed;
    GString *misplaced; /* a line per server listed under the wrong
                               key */
};

static void
admin_health_cb(const struct health_info *info, void *arg)
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
    /* every page is live state: a proxy or browser must not keep it */
    evhttp_add_header(evhttp_request_get_output_headers(req), "Cache-Control",
                      "no-store");
    httpd_send(req, code, reason, type, body, len);
}

/* ---- the key visualizer ------------------------------------------------ */

static void
admin_keyviz_tick(evutil_socket_t fd, short what, void *arg)
{
    struct admin *a = arg;

    (void)fd;
    (void)what;
    keyviz_tick(a->p->metrics->kv, g_get_real_time());
}

/* A whole decimal number of seconds, strictly. */
static gboolean
admin_parse_seconds(const char *s, gint64 *out)
{
    guint64 v;

    if (s == NULL ||
        !g_ascii_string_to_unsigned(s, 10, 0, G_MAXINT64 / 2, &v, NULL) ||
        !g_ascii_isdigit(s[0])) {
        return FALSE;
    }
    *out = (gint64)v;
    return TRUE;
}

/*
 * /keyviz.json?table=T&metric=M[&since=S] and /hotkeys.json?table=T
 * [&at=S]: a parameter not listed, twice, or malformed is a 400 that
 * says which.  Without table, the first table counted.
 */
static void
admin_keyviz_json(struct admin *a, struct evhttp_request *req,
                  const struct evhttp_uri *uri, gboolean hot, GString *body)
{
    struct keyviz *kv = a->p->metrics->kv;
    const char *q = evhttp_uri_get_query(uri);
    struct evkeyvalq params;
    struct evkeyval *kvp;
    const char *table = NULL, *metric = NULL, *when = NULL;
    const char *when_name = hot ? "at" : "since";
    g_autofree char *first = NULL;
    gint64 secs = 0;
    int m = KEYVIZ_WRITES;
    gboolean ok;

    if (kv == NULL) {
        g_string_append(body, "the key visualizer is off ([keyviz] enabled "
                              "= false)\n");
        admin_reply(req, HTTP_NOTFOUND, "Not Found",
                    "text/plain; charset=utf-8", body->str, body->len);
        return;
    }
    TAILQ_INIT(&params);
    if (q != NULL && evhttp_parse_query_str(q, &params) != 0) {
        g_string_append(body, "bad query string\n");
        goto bad;
    }
    TAILQ_FOREACH (kvp, &params, next) {
        const char **slot = strcmp(kvp->key, "table") == 0            ? &table
                            : !hot && strcmp(kvp->key, "metric") == 0 ? &metric
                            : strcmp(kvp->key, when_name) == 0        ? &when
                                                                      : NULL;

        if (slot == NULL || *slot != NULL) {
            g_string_append_printf(body,
                                   "parameter '%s' %s (known: table, %s%s)\n",
                                   kvp->key,
                                   slot == NULL ? "unknown" : "given twice",
                                   hot ? "" : "metric, ", when_name);
            goto bad;
        }
        *slot = kvp->value;
    }
    if (metric != NULL && (m = keyviz_metric_parse(metric)) < 0) {
        g_string_append_printf(body,
                               "metric '%s' unknown (reads, writes, rows, "
                               "bytes_in, bytes_out)\n",
                               metric);
        goto bad;
    }
    if (when != NULL && !admin_parse_seconds(when, &secs)) {
        g_string_append_printf(body, "%s '%s' is not Unix seconds\n",
                               when_name, when);
        goto bad;
    }
    if (table == NULL) {
        g_autoptr(GString) names = g_string_new(NULL);
        g_auto(GStrv) parts = NULL;

        /* the first name of ["a","b"]: names never hold a quote */
        keyviz_tables_json(kv, names);
        parts = g_strsplit(names->str, "\"", 3);
        if (parts[0] != NULL && parts[1] != NULL) {
            first = g_strdup(parts[1]);
        }
        table = first;
    }
    ok = hot ? keyviz_hotkeys_json(kv, a->p->gen->cfg, table, secs, body)
             : keyviz_json(kv, a->p->gen->cfg, table, (unsigned)m, secs, body);
    evhttp_clear_headers(&params);
    if (ok) {
        admin_reply(req, HTTP_OK, "OK", "application/json", body->str,
                    body->len);
    } else {
        admin_reply(req, HTTP_NOTFOUND, "Not Found",
                    "text/plain; charset=utf-8", body->str, body->len);
    }
    return;
bad:
    evhttp_clear_headers(&params);
    admin_reply(req, HTTP_BADREQUEST, "Bad Request",
                "text/plain; charset=utf-8", body->str, body->len);
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

        health_foreach(a->p->health, admin_health_cb, &h);
        /* a salted table the catalog refuses is a table not served */
        refused = catalog_describe_refused(a->p->gen->ts, tables);
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
        refused = tablecheck_describe(a->p->gen->ts, tables);
        if (refused > 0) {
            g_string_append_printf(body,
                                   "warning: %u salted table%s not spread "
                                   "over regions:\n%s",
                                   refused, refused == 1 ? "" : "s",
                                   tables->str);
        }
        admin_reply(req, ok ? HTTP_OK : 503, ok ? "OK" : "Service Unavailable",
                    "text/plain; charset=utf-8", body->str, body->len);
    } else if (g_strcmp0(path, "/config") == 0) {
        g_autofree char *text = config_to_text(a->p->gen->cfg);
        g_autofree char *fixed = admin_effective_workers(a->p, text);

        g_string_append_printf(body, "# generation %u\n%s",
                               proxy_generation(a->p),
                               fixed != NULL ? fixed : text);
        admin_reply(req, HTTP_OK, "OK", "text/plain; charset=utf-8", body->str,
                    body->len);
    } else if (g_strcmp0(path, "/keyviz") == 0) {
        /* the page asks only this host: no script, font or style from
         * elsewhere, and the policy says so to the browser */
        evhttp_add_header(evhttp_request_get_output_headers(req),
                          "Content-Security-Policy",
                          "default-src 'self'; script-src 'unsafe-inline'; "
                          "style-src 'unsafe-inline'; img-src 'self' data:");
        admin_reply(req, HTTP_OK, "OK", "text/html; charset=utf-8",
                    keyviz_page, sizeof(keyviz_page) - 1);
    } else if (g_strcmp0(path, "/keyviz.json") == 0 ||
               g_strcmp0(path, "/hotkeys.json") == 0) {
        admin_keyviz_json(a, req, uri, strcmp(path, "/hotkeys.json") == 0,
                          body);
    } else {
        g_string_append(body, "not found: try /metrics, /healthz, /config "
                              "or /keyviz\n");
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
    if (p->metrics->kv != NULL) {
        a->keyviz_timer = event_new(base, -1, EV_PERSIST, admin_keyviz_tick,
                                    a);
        if (a->keyviz_timer != NULL) {
            struct timeval second = { 1, 0 };

            event_add(a->keyviz_timer, &second);
            keyviz_tick(p->metrics->kv, g_get_real_time());
        }
    }
    a->port = httpd_bound_port(evhttp_bound_socket_get_fd(bound));
    if (a->port == 0) {
        a->port = listen->port;
    }
    if (!g_str_has_prefix(listen->host, "127.") &&
        strcmp(listen->host, "::1") != 0 &&
        strcmp(listen->host, "localhost") != 0) {
        /* /config tells the whole setup and nothing asks for a password */
        g_warning("admin endpoint on %s, not loopback: it has no "
                  "authentication; firewall it",
                  listen->host);
    }
    g_message("admin endpoint on http://%s%s%s:%u/ (/metrics, /healthz, "
              "/config, /keyviz)",
              strchr(listen->host, ':') != NULL ? "[" : "", listen->host,
              strchr(listen->host, ':') != NULL ? "]" : "", a->port);
    return a;
}

void
admin_free(struct admin *a)
{
    if (a == NULL) {
        return;
    }
    g_clear_pointer(&a->keyviz_timer, event_free);
    g_clear_pointer(&a->http, evhttp_free);
    g_free(a);
}

unsigned
admin_port(const struct admin *a)
{
    return a->port;
}
