/* emu_main.c: hbase-emu command line, startup, signals and the scanner sweeper. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "escape.h"
#include "hbase2_register.h"
#include "hbase_hbase_register.h"

#include "emu_handler.h"
#include "emu_handler2.h"
#include "emu_http.h"
#include "emu_sasl.h"
#include "emu_scanner.h"
#include "emu_server.h"
#include "emu_store.h"

static struct {
    char **listen;
    gboolean framed;
    gboolean compact;
    gint max_frame_mb;
    gint64 scanner_timeout_ms;
    gint64 thrift2_scanner_timeout_ms;
    gint regions;
    char *split_keys;
    gint rpc_latency_us;
    gboolean region_serial;
    char *stats_file;
    char **create_tables;
    char *port_file;
    char **thrift2_listen;
    char *thrift2_port_file;
    gboolean control_stdin;
    char *sasl_qop;
    char *keytab;
    char *principal;
    gboolean http;
    gboolean thrift2_http;
    char *https_cert;
    char *https_key;
    char *spnego_principal;
    char *spnego_keytab;
    gboolean http_proxyuser;
    gboolean http_allow_options;
    gint http_threads;
} emu_main_opts = {
    .max_frame_mb = 16,
    .http_threads = 4,
    .scanner_timeout_ms = 120000,
    .thrift2_scanner_timeout_ms = 60000,
    .regions = 1,
};

static emu_store *emu_main_store;

/*
 * One HBase Thrift server: a socket or HTTP listener of one service.
 * Several may serve one store, as many Thrift servers serve one cluster;
 * each socket listener can be stopped (its connections and scanners lost)
 * and started again on its port, from standard input (--control-stdin).
 */
struct emu_listener {
    guint owner; /* its scanners' owner (emu_scanner_set_owner), from 1 */
    emu_service_t service;
    char *host;                      /* as --listen gives it, [] removed */
    char *name;                      /* "HOST:PORT", the port bound */
    struct emu_server_config cfg;    /* a socket listener's, to restart */
    struct emu_http_config http_cfg; /* an HTTP listener's */
    gboolean is_http;
    GObject *handler;
    emu_server *server; /* the running socket listener, NULL if stopped */
    emu_http *http;
    GThread *thread; /* runs server or http until it stops */
};

static GPtrArray *emu_main_listeners; /* struct emu_listener *, in order */
/* Held by whoever starts or stops a listener; quit ends that for good. */
static GMutex emu_main_lock;
static GCond emu_main_quit_cond;
static gboolean emu_main_quit;

static GOptionEntry emu_main_entries[] = {
    { "listen", 0, 0, G_OPTION_ARG_STRING_ARRAY, &emu_main_opts.listen,
      "serve Thrift1 here (PORT 0: ephemeral); repeatable: one Thrift "
      "server each, over the same tables",
      "HOST:PORT" },
    { "framed", 0, 0, G_OPTION_ARG_NONE, &emu_main_opts.framed,
      "framed transport (HBase -f); default buffered", NULL },
    { "compact", 0, 0, G_OPTION_ARG_NONE, &emu_main_opts.compact,
      "compact protocol (HBase -c); default binary", NULL },
    { "max-frame-mb", 0, 0, G_OPTION_ARG_INT, &emu_main_opts.max_frame_mb,
      "largest request in MiB (default 16)", "N" },
    { "scanner-timeout-ms", 0, 0, G_OPTION_ARG_INT64,
      &emu_main_opts.scanner_timeout_ms,
      "idle scanners expire after this (default 120000)", "MS" },
    { "thrift2-scanner-timeout-ms", 0, 0, G_OPTION_ARG_INT64,
      &emu_main_opts.thrift2_scanner_timeout_ms,
      "idle Thrift2 scanners expire after this (default 60000)", "MS" },
    { "regions", 0, 0, G_OPTION_ARG_INT, &emu_main_opts.regions,
      "regions per table, an even split of the key space (default 1)", "N" },
    { "split-keys", 0, 0, G_OPTION_ARG_STRING, &emu_main_opts.split_keys,
      "explicit split keys, comma separated, \\xNN escapes", "K1,K2,..." },
    { "rpc-latency-us", 0, 0, G_OPTION_ARG_INT, &emu_main_opts.rpc_latency_us,
      "sleep added to every call", "US" },
    { "region-serial", 0, 0, G_OPTION_ARG_NONE, &emu_main_opts.region_serial,
      "each region serves one call at a time", NULL },
    { "stats-file", 0, 0, G_OPTION_ARG_FILENAME, &emu_main_opts.stats_file,
      "where SIGUSR1 (and exit) write region counters; default stderr",
      "PATH" },
    { "create-table", 0, 0, G_OPTION_ARG_STRING_ARRAY,
      &emu_main_opts.create_tables, "create a table at startup (repeatable)",
      "NAME:FAM1,FAM2" },
    { "port-file", 0, 0, G_OPTION_ARG_FILENAME, &emu_main_opts.port_file,
      "write the bound port here once listening", "PATH" },
    { "thrift2-listen", 0, 0, G_OPTION_ARG_STRING_ARRAY,
      &emu_main_opts.thrift2_listen,
      "also serve Thrift2 (THBaseService, as `hbase thrift2`) here, over "
      "the same tables; same --framed/--compact; repeatable",
      "HOST:PORT" },
    { "thrift2-port-file", 0, 0, G_OPTION_ARG_FILENAME,
      &emu_main_opts.thrift2_port_file,
      "write the bound Thrift2 port here once listening", "PATH" },
    { "control-stdin", 0, 0, G_OPTION_ARG_NONE, &emu_main_opts.control_stdin,
      "print 'ready thrift1=HOST:PORT,... thrift2=...' on stdout once "
      "listening, then read 'stop HOST:PORT' and 'start HOST:PORT' lines "
      "from stdin (as tests/hbase/hbase-mini)",
      NULL },
    { "sasl-qop", 0, 0, G_OPTION_ARG_STRING, &emu_main_opts.sasl_qop,
      "SASL GSSAPI on both listeners with this QOP, as HBase's "
      "hbase.thrift.security.qop (needs --keytab, --principal; not "
      "--framed)",
      "auth|auth-int|auth-conf" },
    { "keytab", 0, 0, G_OPTION_ARG_FILENAME, &emu_main_opts.keytab,
      "the server's keytab (hbase.thrift.keytab.file)", "PATH" },
    { "principal", 0, 0, G_OPTION_ARG_STRING, &emu_main_opts.principal,
      "the server's principal (hbase.thrift.kerberos.principal)",
      "hbase/HOST@REALM" },
    { "http", 0, 0, G_OPTION_ARG_NONE, &emu_main_opts.http,
      "Thrift1 over HTTP (hbase.regionserver.thrift.http): one message "
      "per POST body, binary protocol",
      NULL },
    { "thrift2-http", 0, 0, G_OPTION_ARG_NONE, &emu_main_opts.thrift2_http,
      "Thrift2 over HTTP on --thrift2-listen", NULL },
    { "https-cert", 0, 0, G_OPTION_ARG_FILENAME, &emu_main_opts.https_cert,
      "TLS on the HTTP listeners (hbase.thrift.ssl.enabled): PEM "
      "certificate chain",
      "FILE" },
    { "https-key", 0, 0, G_OPTION_ARG_FILENAME, &emu_main_opts.https_key,
      "the certificate's PEM private key", "FILE" },
    { "spnego-principal", 0, 0, G_OPTION_ARG_STRING,
      &emu_main_opts.spnego_principal,
      "Kerberos on every HTTP request (hbase.thrift.spnego.principal)",
      "HTTP/HOST@REALM" },
    { "spnego-keytab", 0, 0, G_OPTION_ARG_FILENAME,
      &emu_main_opts.spnego_keytab,
      "its keytab (hbase.thrift.spnego.keytab.file)", "PATH" },
    { "http-proxyuser", 0, 0, G_OPTION_ARG_NONE, &emu_main_opts.http_proxyuser,
      "honour the doAs header (hbase.thrift.support.proxyuser)", NULL },
    { "http-allow-options", 0, 0, G_OPTION_ARG_NONE,
      &emu_main_opts.http_allow_options,
      "answer OPTIONS (hbase.thrift.http.allow.options.method)", NULL },
    { "http-threads", 0, 0, G_OPTION_ARG_INT, &emu_main_opts.http_threads,
      "event loops per HTTP listener (default 4)", "N" },
    { NULL }
};

static gboolean emu_main_create_table(const char *spec, GError **error)
{
    const char *colon = strrchr(spec, ':');
    g_autoptr(GPtrArray) fams = g_ptr_array_new_with_free_func(
        emu_family_free);
    g_auto(GStrv) names = NULL;

    if (colon == NULL || colon == spec || colon[1] == '\0') {
        g_set_error(error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE,
                    "--create-table %s: expected NAME:FAM1,FAM2", spec);
        return FALSE;
    }
    names = g_strsplit(colon + 1, ",", -1);
    for (guint i = 0; names[i] != NULL; i++) {
        struct emu_family *f = g_new0(struct emu_family, 1);

        f->name = (uint8_t *)g_strdup(names[i]);
        f->name_len = strlen(names[i]);
        f->max_versions = 3;
        f->compression = g_strdup("NONE");
        f->bloom_type = g_strdup("NONE");
        f->ttl = G_MAXINT32;
        g_ptr_array_add(fams, f);
    }
    {
        g_autofree char *name = g_strndup(spec, (gsize)(colon - spec));
        const char *ns_end = strchr(name, ':');

        if (ns_end != NULL) {
            g_autofree char *ns = g_strndup(name, (gsize)(ns_end - name));

            emu_store_add_namespace(emu_main_store, ns);
        }
        return emu_store_create_table(emu_main_store, (const uint8_t *)name,
                                      strlen(name), fams, error);
    }
}

static void emu_main_dump_stats(void)
{
    g_autoptr(GString) s = g_string_new(NULL);
    g_autoptr(GError) err = NULL;

    emu_store_write_stats(emu_main_store, s);
    if (emu_main_opts.stats_file == NULL) {
        fputs(s->str, stderr);
        fflush(stderr);
    } else if (!g_file_set_contents(emu_main_opts.stats_file, s->str,
                                    (gssize)s->len, &err)) {
        g_warning("stats: %s", err->message);
    }
}

/* Signals arrive here only: every other thread has them blocked. */
static gpointer emu_main_signal_thread(gpointer data)
{
    sigset_t *set = data;

    for (;;) {
        int sig = 0;

        if (sigwait(set, &sig) != 0) {
            continue;
        }
        if (sig == SIGUSR1) {
            emu_main_dump_stats();
            continue;
        }
        if (emu_main_opts.stats_file != NULL) {
            emu_main_dump_stats();
        }
        g_mutex_lock(&emu_main_lock);
        /* Thrift2's first, as before: HTTP loops join before exit. */
        for (guint i = emu_main_listeners->len; i-- > 0;) {
            struct emu_listener *l = emu_main_listeners->pdata[i];

            if (l->server != NULL) {
                emu_server_stop(l->server);
            }
            if (l->http != NULL) {
                emu_http_stop(l->http);
            }
        }
        emu_main_quit = TRUE;
        g_cond_broadcast(&emu_main_quit_cond);
        g_mutex_unlock(&emu_main_lock);
        return NULL;
    }
}

static gpointer emu_main_sweeper_thread(gpointer data)
{
    gint64 shortest = MIN(emu_main_opts.scanner_timeout_ms,
                          emu_main_opts.thrift2_scanner_timeout_ms);
    gint64 period_us = MIN(shortest * 250, 1000000);

    for (;;) {
        g_usleep((gulong)MAX(period_us, 10000));
        emu_scanner_expire();
    }
    return NULL;
}

/* "HOST:PORT" or "[V6]:PORT" into a host and a port in 0..65535. */
static gboolean emu_main_parse_addr(const char *opt, const char *addr,
                                    char **host, int *port)
{
    const char *colon = addr ? strrchr(addr, ':') : NULL;
    char *end = NULL;
    long p;

    if (colon == NULL) {
        fprintf(stderr, "hbase-emu: --%s HOST:PORT is required\n", opt);
        return FALSE;
    }
    p = strtol(colon + 1, &end, 10);
    if (end == colon + 1 || *end != '\0' || p < 0 || p > 65535) {
        fprintf(stderr, "hbase-emu: --%s: bad port in %s\n", opt, addr);
        return FALSE;
    }
    *host = g_strndup(addr, (gsize)(colon - addr));
    if ((*host)[0] == '[' && (*host)[strlen(*host) - 1] == ']') {
        memmove(*host, *host + 1, strlen(*host));
        (*host)[strlen(*host) - 1] = '\0';
    }
    *port = (int)p;
    return TRUE;
}

/* A listener for each address of opt; FALSE after a message. */
static gboolean emu_main_parse_listeners(const char *opt, char **addrs,
                                         emu_service_t service,
                                         gboolean is_http)
{
    for (guint i = 0; addrs != NULL && addrs[i] != NULL; i++) {
        struct emu_listener *l = g_new0(struct emu_listener, 1);
        char *host = NULL; /* lives as long as the process */
        int port = -1;

        if (!emu_main_parse_addr(opt, addrs[i], &host, &port)) {
            g_free(l);
            return FALSE;
        }
        l->owner = emu_main_listeners->len + 1;
        l->service = service;
        l->is_http = is_http;
        l->host = host;
        l->cfg.host = l->http_cfg.host = host;
        l->cfg.port = l->http_cfg.port = port;
        g_ptr_array_add(emu_main_listeners, l);
    }
    return TRUE;
}

static gpointer emu_main_server_thread(gpointer data)
{
    emu_server_run(data);
    return NULL;
}

static gpointer emu_main_http_thread(gpointer data)
{
    emu_http_run(data);
    return NULL;
}

/* Binds l (again, on its port once it has one) and starts its thread. */
static gboolean emu_main_listener_start(struct emu_listener *l, GError **error)
{
    int port = l->is_http ? l->http_cfg.port : l->cfg.port;

    if (l->is_http) {
        l->http = emu_http_new(&l->http_cfg, l->handler, &port, error);
        if (l->http == NULL) {
            return FALSE;
        }
        l->http_cfg.port = port;
        l->thread = g_thread_new("emu-http-listen", emu_main_http_thread,
                                 l->http);
    } else {
        l->server = emu_server_new(&l->cfg, l->handler, &port, error);
        if (l->server == NULL) {
            return FALSE;
        }
        l->cfg.port = port;
        l->thread = g_thread_new("emu-listen", emu_main_server_thread,
                                 l->server);
    }
    if (l->name == NULL) {
        const char *host = l->is_http ? l->http_cfg.host : l->cfg.host;

        l->name = g_strdup_printf(strchr(host, ':') ? "[%s]:%d" : "%s:%d",
                                  host, port);
    }
    return TRUE;
}

/* One stdin command: "stop HOST:PORT" or "start HOST:PORT"; the answer
 * line is hbase-mini's. */
static void emu_main_control(const char *line)
{
    g_auto(GStrv) w = g_strsplit_set(line, " \t\r\n", -1);
    g_autoptr(GPtrArray) words = g_ptr_array_new();
    struct emu_listener *l = NULL;
    g_autoptr(GError) err = NULL;

    for (guint i = 0; w[i] != NULL; i++) {
        if (w[i][0] != '\0') {
            g_ptr_array_add(words, w[i]);
        }
    }
    if (words->len == 0) {
        return;
    }
    if (words->len != 2 || (strcmp(words->pdata[0], "stop") != 0 &&
                            strcmp(words->pdata[0], "start") != 0)) {
        printf("error: commands are 'stop HOST:PORT' and 'start "
               "HOST:PORT'\n");
        return;
    }
    for (guint i = 0; i < emu_main_listeners->len; i++) {
        struct emu_listener *c = emu_main_listeners->pdata[i];

        if (strcmp(c->name, words->pdata[1]) == 0) {
            l = c;
        }
    }
    if (l == NULL) {
        printf("error: no Thrift server on %s\n", (char *)words->pdata[1]);
        return;
    }
    if (l->is_http) {
        printf("error: %s is an HTTP listener, which cannot be stopped\n",
               l->name);
        return;
    }
    g_mutex_lock(&emu_main_lock);
    if (emu_main_quit) {
        printf("error: exiting\n");
    } else if (strcmp(words->pdata[0], "stop") == 0) {
        if (l->server != NULL) {
            guint lost;

            emu_server_halt(l->server);
            g_thread_join(l->thread);
            l->thread = NULL;
            g_clear_pointer(&l->server, emu_server_free);
            /* After the halt: no call of this server runs any more. */
            lost = emu_scanner_drop_owner(l->owner);
            g_message("%s stopped; %u scanner(s) lost", l->name, lost);
        }
        printf("ok stopped %s\n", l->name);
    } else if (l->server != NULL || emu_main_listener_start(l, &err)) {
        g_message("%s started", l->name);
        printf("ok started %s\n", l->name);
    } else {
        printf("error: %s\n", err->message);
    }
    g_mutex_unlock(&emu_main_lock);
}

static gpointer emu_main_control_thread(gpointer data)
{
    char line[1024];

    while (fgets(line, sizeof(line), stdin) != NULL) {
        emu_main_control(line);
        fflush(stdout);
    }
    return NULL;
}

/* The ready line: every listener's name by service, comma separated. */
static void emu_main_print_ready(void)
{
    g_autoptr(GString) s = g_string_new("ready");

    for (int svc = EMU_SERVICE_HBASE1; svc <= EMU_SERVICE_HBASE2; svc++) {
        const char *sep = svc == EMU_SERVICE_HBASE1 ? " thrift1="
                                                    : " thrift2=";

        for (guint i = 0; i < emu_main_listeners->len; i++) {
            struct emu_listener *l = emu_main_listeners->pdata[i];

            if ((int)l->service == svc) {
                g_string_append_printf(s, "%s%s", sep, l->name);
                sep = ",";
            }
        }
    }
    printf("%s\n", s->str);
    fflush(stdout);
}

/* Every bound port of a service, one per line in command-line order. */
static gboolean emu_main_write_ports(const char *path, emu_service_t svc,
                                     GError **error)
{
    g_autoptr(GString) s = g_string_new(NULL);

    if (path == NULL) {
        return TRUE;
    }
    for (guint i = 0; i < emu_main_listeners->len; i++) {
        struct emu_listener *l = emu_main_listeners->pdata[i];

        if (l->service == svc) {
            g_string_append_printf(
                s, "%d\n", l->is_http ? l->http_cfg.port : l->cfg.port);
        }
    }
    return g_file_set_contents(path, s->str, (gssize)s->len, error);
}

/* The HTTP listeners' shared settings, checked as HBase checks its keys at
 * startup.  FALSE (after a message) when the command line is refused. */
static gboolean emu_main_http_setup(struct emu_http_config *hc,
                                    const char *sasl_qop, int *status)
{
    g_autoptr(GError) err = NULL;
    gboolean any = emu_main_opts.http || emu_main_opts.thrift2_http;
    const char *principal = emu_main_opts.spnego_principal;
    const char *keytab = emu_main_opts.spnego_keytab;

    *status = 2;
    if (emu_main_opts.thrift2_http && emu_main_opts.thrift2_listen == NULL) {
        fprintf(stderr, "hbase-emu: --thrift2-http needs --thrift2-listen\n");
        return FALSE;
    }
    if ((emu_main_opts.https_cert == NULL) !=
            (emu_main_opts.https_key == NULL) ||
        (principal == NULL) != (keytab == NULL)) {
        fprintf(stderr,
                "hbase-emu: --https-cert and --https-key go "
                "together, as do --spnego-principal and --spnego-keytab\n");
        return FALSE;
    }
    if (!any &&
        (emu_main_opts.https_cert != NULL || principal != NULL ||
         emu_main_opts.http_proxyuser || emu_main_opts.http_allow_options)) {
        /* As HBase: TLS, SPNEGO and doAs exist in HTTP mode only. */
        fprintf(stderr,
                "hbase-emu: --https-*, --spnego-*, --http-proxyuser "
                "and --http-allow-options need --http or --thrift2-http\n");
        return FALSE;
    }
    if (emu_main_opts.http_threads <= 0 || emu_main_opts.http_threads > 256) {
        fprintf(stderr, "hbase-emu: --http-threads out of range\n");
        return FALSE;
    }
    if (!any) {
        return TRUE;
    }
    /* With a QOP the server is a secure one: SPNEGO on HTTP, its keys
     * falling back to the Kerberos ones as HBase's do. */
    if (sasl_qop != NULL && principal == NULL) {
        principal = emu_main_opts.principal;
        keytab = emu_main_opts.keytab;
    }
    if (g_strcmp0(sasl_qop, "auth-conf") == 0 &&
        emu_main_opts.https_cert == NULL) {
        fprintf(stderr, "hbase-emu: Thrift HTTP Server's QoP is privacy, "
                        "but hbase.thrift.ssl.enabled is false\n");
        return FALSE;
    }
    *status = 1;
    if (emu_main_opts.https_cert != NULL) {
        hc->tls = emu_http_tls_new(emu_main_opts.https_cert,
                                   emu_main_opts.https_key, &err);
        if (hc->tls == NULL) {
            fprintf(stderr, "hbase-emu: %s\n", err->message);
            return FALSE;
        }
    }
    if (principal != NULL) {
        hc->spnego = emu_spnego_new(principal, keytab, &err);
        if (hc->spnego == NULL) {
            fprintf(stderr, "hbase-emu: %s\n", err->message);
            return FALSE;
        }
    }
    hc->max_body = (guint32)emu_main_opts.max_frame_mb << 20;
    hc->threads = (guint)emu_main_opts.http_threads;
    hc->proxyuser = emu_main_opts.http_proxyuser;
    hc->allow_options = emu_main_opts.http_allow_options;
    /* Without Kerberos the servlet's user is the server's login user. */
    hc->server_user = emu_main_opts.principal != NULL
                          ? g_strndup(emu_main_opts.principal,
                                      strcspn(emu_main_opts.principal, "/@"))
                          : g_get_user_name();
    return TRUE;
}

int main(int argc, char **argv)
{
    g_autoptr(GOptionContext) ctx = g_option_context_new(
        "- in-memory HBase Thrift1 (and Thrift2) server for tests");
    g_autoptr(GError) err = NULL;
    g_autoptr(EmuHandler) handler = NULL;
    g_autoptr(EmuHandler2) handler2 = NULL;
    struct emu_store_config scfg = { 0 };
    struct emu_server_config cfg = { 0 };
    struct emu_handler_options hopts = { 0 };
    static sigset_t set;
    emu_sasl *sasl = NULL; /* lives as long as the process */
    struct emu_http_config hc = { 0 };
    int status = 0;

    g_option_context_add_main_entries(ctx, emu_main_entries, NULL);
    g_option_context_set_description(
        ctx,
        "Stats (SIGUSR1, and at exit with --stats-file) are lines of\n"
        "  region table=T index=I start=K end=K requests=N rows_read=N "
        "cells_written=N\n"
        "followed by one 'total ...' line; keys use \\xNN for bytes outside "
        "[A-Za-z0-9._:-].\n");
    if (!g_option_context_parse(ctx, &argc, &argv, &err)) {
        fprintf(stderr, "hbase-emu: %s\n", err->message);
        return 2;
    }
    emu_main_listeners = g_ptr_array_new();
    if (emu_main_opts.listen == NULL) {
        fprintf(stderr, "hbase-emu: --listen HOST:PORT is required\n");
        return 2;
    }
    if (!emu_main_parse_listeners("listen", emu_main_opts.listen,
                                  EMU_SERVICE_HBASE1, emu_main_opts.http) ||
        !emu_main_parse_listeners(
            "thrift2-listen", emu_main_opts.thrift2_listen, EMU_SERVICE_HBASE2,
            emu_main_opts.thrift2_http)) {
        return 2;
    }
    if (emu_main_opts.max_frame_mb <= 0 || emu_main_opts.max_frame_mb > 2047 ||
        emu_main_opts.regions <= 0 || emu_main_opts.regions > 65536 ||
        emu_main_opts.rpc_latency_us < 0 ||
        emu_main_opts.scanner_timeout_ms <= 0 ||
        emu_main_opts.scanner_timeout_ms > G_MAXINT64 / 1000 ||
        emu_main_opts.thrift2_scanner_timeout_ms <= 0 ||
        emu_main_opts.thrift2_scanner_timeout_ms > G_MAXINT64 / 1000) {
        fprintf(stderr, "hbase-emu: option out of range\n");
        return 2;
    }
    if (emu_main_opts.sasl_qop != NULL) {
        emu_qop_t qop;

        if (!emu_sasl_parse_qop(emu_main_opts.sasl_qop, &qop)) {
            fprintf(stderr, "hbase-emu: --sasl-qop: expected auth, auth-int "
                            "or auth-conf\n");
            return 2;
        }
        /* HBase refuses to start this way (ThriftServer's transport
         * factory), with these words. */
        if (emu_main_opts.framed) {
            fprintf(stderr, "hbase-emu: Thrift server authentication "
                            "doesn't work with framed transport yet\n");
            return 2;
        }
        if (emu_main_opts.keytab == NULL || emu_main_opts.principal == NULL) {
            fprintf(stderr, "hbase-emu: --sasl-qop needs --keytab and "
                            "--principal\n");
            return 2;
        }
        sasl = emu_sasl_new(emu_main_opts.principal, emu_main_opts.keytab, qop,
                            &err);
        if (sasl == NULL) {
            fprintf(stderr, "hbase-emu: %s\n", err->message);
            return 1;
        }
    } else if (emu_main_opts.keytab != NULL ||
               emu_main_opts.principal != NULL) {
        fprintf(stderr, "hbase-emu: --keytab and --principal need "
                        "--sasl-qop\n");
        return 2;
    }

    if (!emu_main_http_setup(&hc, emu_main_opts.sasl_qop, &status)) {
        return status;
    }

    scfg.regions = (guint)emu_main_opts.regions;
    scfg.server_name =
        ((struct emu_listener *)emu_main_listeners->pdata[0])->host;
    scfg.server_port = 16020; /* a region server's default RPC port */
    if (emu_main_opts.split_keys != NULL) {
        g_auto(GStrv) keys = g_strsplit(emu_main_opts.split_keys, ",", -1);

        scfg.split_keys = g_ptr_array_new_with_free_func(
            (GDestroyNotify)g_bytes_unref);
        for (guint i = 0; keys[i] != NULL; i++) {
            GBytes *key;

            if (keys[i][0] == '\0') {
                continue;
            }
            /* the proxy's syntax: keys it prints (salt_escape) read back */
            key = escape_decode(keys[i], &err);
            if (key == NULL) {
                fprintf(stderr, "hbase-emu: --split-keys '%s': %s\n", keys[i],
                        err->message);
                g_ptr_array_unref(scfg.split_keys);
                return 2;
            }
            g_ptr_array_add(scfg.split_keys, key);
        }
    }
    emu_main_store = emu_store_new(&scfg);
    if (scfg.split_keys != NULL) {
        g_ptr_array_unref(scfg.split_keys);
    }
    for (guint i = 0; emu_main_opts.create_tables != NULL &&
                      emu_main_opts.create_tables[i] != NULL;
         i++) {
        if (!emu_main_create_table(emu_main_opts.create_tables[i], &err)) {
            fprintf(stderr, "hbase-emu: %s\n", err->message);
            return 2;
        }
    }
    emu_scanner_init(emu_main_opts.scanner_timeout_ms,
                     emu_main_opts.thrift2_scanner_timeout_ms);

    hopts.rpc_latency_us = (guint)emu_main_opts.rpc_latency_us;
    hopts.region_serial = emu_main_opts.region_serial;
    handler = emu_handler_new(emu_main_store, &hopts);
    handler2 = emu_handler2_new(emu_main_store, &hopts);

    cfg.framed = emu_main_opts.framed;
    cfg.compact = emu_main_opts.compact;
    cfg.max_frame = (guint32)emu_main_opts.max_frame_mb << 20;
    cfg.sasl = sasl;

    /* c_glib registers each type on first use, unlocked: do it now, before
     * connection threads race for it. */
    hbase_hbase_register_types();
    hbase2_register_types();

    /* Block the signals before any thread starts so all inherit the mask. */
    sigemptyset(&set);
    sigaddset(&set, SIGUSR1);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    pthread_sigmask(SIG_BLOCK, &set, NULL);
    signal(SIGPIPE, SIG_IGN);

    for (guint i = 0; i < emu_main_listeners->len; i++) {
        struct emu_listener *l = emu_main_listeners->pdata[i];
        gboolean t2 = l->service == EMU_SERVICE_HBASE2;
        const char *host = l->host;
        int port = l->cfg.port;

        l->handler = t2 ? G_OBJECT(handler2) : G_OBJECT(handler);
        l->cfg = cfg;
        l->cfg.service = l->service;
        l->cfg.host = host;
        l->cfg.port = port;
        l->cfg.owner = l->owner;
        l->http_cfg = hc;
        l->http_cfg.service = l->service;
        l->http_cfg.host = host;
        l->http_cfg.port = port;
        l->http_cfg.owner = l->owner;
        if (!emu_main_listener_start(l, &err)) {
            fprintf(stderr, "hbase-emu: %s%s\n", t2 ? "thrift2: " : "",
                    err->message);
            return 1;
        }
        if (t2) {
            g_message("thrift2 listening on %s%s", l->name,
                      !l->is_http      ? ""
                      : hc.tls != NULL ? " (https)"
                                       : " (http)");
        } else if (l->is_http) {
            g_message("listening on %s (%s, binary%s%s)", l->name,
                      hc.tls != NULL ? "https" : "http",
                      hc.spnego != NULL ? ", spnego" : "",
                      hc.proxyuser ? ", proxyuser" : "");
        } else {
            g_message("listening on %s (%s, %s%s%s)", l->name,
                      cfg.framed ? "framed" : "buffered",
                      cfg.compact ? "compact" : "binary",
                      sasl != NULL ? ", sasl qop " : "",
                      sasl != NULL ? emu_main_opts.sasl_qop : "");
        }
    }
    /* The Thrift2 ports first: a harness that waits for the Thrift1 port
     * file then finds both. */
    if (!emu_main_write_ports(emu_main_opts.thrift2_port_file,
                              EMU_SERVICE_HBASE2, &err) ||
        !emu_main_write_ports(emu_main_opts.port_file, EMU_SERVICE_HBASE1,
                              &err)) {
        fprintf(stderr, "hbase-emu: %s\n", err->message);
        return 1;
    }
    g_thread_unref(g_thread_new("emu-signals", emu_main_signal_thread, &set));
    g_thread_unref(g_thread_new("emu-sweeper", emu_main_sweeper_thread, NULL));
    if (emu_main_opts.control_stdin) {
        emu_main_print_ready();
        g_thread_unref(
            g_thread_new("emu-control", emu_main_control_thread, NULL));
    }
    g_mutex_lock(&emu_main_lock);
    while (!emu_main_quit) {
        g_cond_wait(&emu_main_quit_cond, &emu_main_lock);
    }
    g_mutex_unlock(&emu_main_lock);
    /* The signal thread stopped every listener and no command starts one
     * now: wait for their loops, so that no HTTP loop is inside OpenSSL
     * while exit() cleans it up (an HTTPS emulator once aborted at exit
     * that way).  Connection threads of the socket servers may still run;
     * the exit ends them. */
    for (guint i = 0; i < emu_main_listeners->len; i++) {
        struct emu_listener *l = emu_main_listeners->pdata[i];

        if (l->thread != NULL) {
            g_thread_join(l->thread);
        }
    }
    return 0;
}
