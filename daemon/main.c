/* main.c: command line, logging, signals; runs the proxy in the foreground. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>

#include "hsp-config.h"
#include "config.h"
#include "proxy.h"
#include "salt.h"

/* Messages at or above this level are written (lower is more severe). */
static GLogLevelFlags main_log_max = G_LOG_LEVEL_MESSAGE;

/* One line per message on stderr; journald adds time and unit. */
static void
main_log_handler(const gchar *domain, GLogLevelFlags level,
                 const gchar *message, gpointer data)
{
    const char *tag;

    if ((level & G_LOG_LEVEL_MASK) > main_log_max
        && !(level & (G_LOG_FLAG_FATAL | G_LOG_LEVEL_ERROR))) {
        return;
    }
    switch (level & G_LOG_LEVEL_MASK) {
    case G_LOG_LEVEL_ERROR:
        tag = "error";
        break;
    case G_LOG_LEVEL_CRITICAL:
        tag = "critical";
        break;
    case G_LOG_LEVEL_WARNING:
        tag = "warning";
        break;
    case G_LOG_LEVEL_MESSAGE:
    case G_LOG_LEVEL_INFO:
        tag = "info";
        break;
    default:
        tag = "debug";
        break;
    }
    /* one fprintf per line: stdio locks, so threads do not interleave */
    fprintf(stderr, "%s: %s\n", tag, message);
}

static gboolean
main_set_log_level(const char *name, GError **error)
{
    if (g_strcmp0(name, "error") == 0) {
        main_log_max = G_LOG_LEVEL_CRITICAL;
    } else if (g_strcmp0(name, "warning") == 0) {
        main_log_max = G_LOG_LEVEL_WARNING;
    } else if (g_strcmp0(name, "info") == 0) {
        /* g_message is our info level; g_info is too */
        main_log_max = G_LOG_LEVEL_INFO;
    } else if (g_strcmp0(name, "debug") == 0) {
        main_log_max = G_LOG_LEVEL_DEBUG;
    } else {
        g_set_error(error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE,
                    "--log-level: expected error, warning, info or debug, "
                    "not '%s'", name);
        return FALSE;
    }
    return TRUE;
}

/* A key from the command line: \xNN and \\ escapes as the shell of HBase
 * prints them, everything else as is.  NULL on a bad escape. */
static GBytes *
main_unescape(const char *s)
{
    GByteArray *out = g_byte_array_new();

    while (*s != '\0') {
        guint8 b = (guint8)*s;

        if (*s == '\\') {
            if (s[1] == '\\') {
                s += 2;
            } else if ((s[1] == 'x' || s[1] == 'X')
                       && g_ascii_isxdigit(s[2]) && g_ascii_isxdigit(s[3])) {
                b = (guint8)(g_ascii_xdigit_value(s[2]) << 4
                             | g_ascii_xdigit_value(s[3]));
                s += 4;
            } else {
                g_byte_array_unref(out);
                return NULL;
            }
        } else {
            s++;
        }
        g_byte_array_append(out, &b, 1);
    }
    return g_byte_array_free_to_bytes(out);
}

static int
main_explain_key(const struct config *cfg, const char *table,
                 const char *key)
{
    const struct config_table *t = config_find_table(cfg, table,
                                                     strlen(table));
    g_autoptr(GBytes) bytes = NULL;
    g_autofree char *text = NULL;
    gsize len = 0;
    const guint8 *p;

    if (t == NULL) {
        fprintf(stderr, "%s: table '%s' is not salted in %s\n", g_get_prgname(),
                table, cfg->source != NULL ? cfg->source : "(defaults)");
        return 1;
    }
    bytes = main_unescape(key);
    if (bytes == NULL) {
        fprintf(stderr, "%s: bad escape in key (use \\xNN or \\\\)\n",
                g_get_prgname());
        return 1;
    }
    p = g_bytes_get_data(bytes, &len);
    text = salt_explain(&t->salt, p, len);
    fputs(text, stdout);
    if (len == 0 || text[strlen(text) - 1] != '\n') {
        fputc('\n', stdout);
    }
    return 0;
}

/* SIGTERM, SIGINT: leave the loop; main stops the workers. */
static void
main_stop_cb(evutil_socket_t sig, short what, void *arg)
{
    struct event_base *base = arg;

    g_message("received %s, stopping", strsignal((int)sig));
    event_base_loopbreak(base);
}

static void
main_hup_cb(evutil_socket_t sig, short what, void *arg)
{
    g_message("received SIGHUP: reload not supported yet, keeping the "
              "running configuration");
}

/* Runs until SIGTERM or SIGINT; returns the exit code. */
static int
main_run(const struct config *cfg)
{
    g_autoptr(GError) error = NULL;
    struct event_base *base;
    struct event *ev_term, *ev_int, *ev_hup;
    struct proxy *p;

    p = proxy_new(cfg, &error);
    if (p == NULL) {
        g_critical("%s", error->message);
        return 1;
    }
    base = event_base_new();
    ev_term = evsignal_new(base, SIGTERM, main_stop_cb, base);
    ev_int = evsignal_new(base, SIGINT, main_stop_cb, base);
    ev_hup = evsignal_new(base, SIGHUP, main_hup_cb, NULL);
    evsignal_add(ev_term, NULL);
    evsignal_add(ev_int, NULL);
    evsignal_add(ev_hup, NULL);
    if (!proxy_start(p, &error)) {
        g_critical("%s", error->message);
        proxy_stop(p);
        proxy_free(p);
        return 1;
    }
    event_base_dispatch(base);
    proxy_stop(p);
    proxy_free(p);
    event_free(ev_term);
    event_free(ev_int);
    event_free(ev_hup);
    event_base_free(base);
    g_message("stopped");
    return 0;
}

int
main(int argc, char **argv)
{
    g_autofree char *config_path = NULL;
    g_autofree char *log_level = NULL;
    gboolean check_config = FALSE, explain_key = FALSE, version = FALSE;
    gboolean foreground = FALSE;
    g_autoptr(GError) error = NULL;
    g_autoptr(GOptionContext) ctx = NULL;
    g_autoptr(config_t) cfg = NULL;
    GOptionEntry entries[] = {
        { "config", 'c', 0, G_OPTION_ARG_FILENAME, &config_path,
          "Configuration file (default: built-in defaults, no tables)",
          "FILE" },
        { "check-config", 0, 0, G_OPTION_ARG_NONE, &check_config,
          "Validate the configuration and exit", NULL },
        { "explain-key", 0, 0, G_OPTION_ARG_NONE, &explain_key,
          "Print bucket and physical key of KEY in TABLE and exit "
          "(arguments: TABLE KEY; \\xNN escapes allowed)", NULL },
        { "foreground", 'f', 0, G_OPTION_ARG_NONE, &foreground,
          "Run in the foreground (always the case; for systemd)", NULL },
        { "log-level", 0, 0, G_OPTION_ARG_STRING, &log_level,
          "error, warning, info (default) or debug", "LEVEL" },
        { "version", 'V', 0, G_OPTION_ARG_NONE, &version,
          "Print the version and exit", NULL },
        { NULL, 0, 0, 0, NULL, NULL, NULL },
    };

    g_set_prgname("hbase-salt-proxy");
    g_log_set_default_handler(main_log_handler, NULL);
    ctx = g_option_context_new("- salting proxy for HBase Thrift1 clients");
    g_option_context_add_main_entries(ctx, entries, NULL);
    if (!g_option_context_parse(ctx, &argc, &argv, &error)) {
        fprintf(stderr, "%s: %s\n", g_get_prgname(), error->message);
        return 2;
    }
    if (version) {
        printf("hbase-salt-proxy %s\n", HSP_VERSION);
        return 0;
    }
    if (log_level != NULL && !main_set_log_level(log_level, &error)) {
        fprintf(stderr, "%s: %s\n", g_get_prgname(), error->message);
        return 2;
    }
    if (explain_key ? argc != 3 : argc != 1) {
        fprintf(stderr, "%s: %s\n", g_get_prgname(),
                explain_key ? "--explain-key takes TABLE KEY"
                            : "unexpected arguments");
        return 2;
    }

    cfg = config_path != NULL ? config_load(config_path, &error)
                              : config_new_default();
    if (cfg == NULL) {
        fprintf(stderr, "%s\n", error->message);
        return 1;
    }
    if (check_config) {
        struct proxy_settings set;

        /* also what only the I/O core checks: addresses resolve, limits */
        if (!proxy_settings_load(&set, cfg, &error)) {
            fprintf(stderr, "%s: %s\n", config_path != NULL ? config_path
                                                            : "(defaults)",
                    error->message);
            return 1;
        }
        printf("%s: ok\n", config_path != NULL ? config_path : "(defaults)");
        return 0;
    }
    if (explain_key) {
        return main_explain_key(cfg, argv[1], argv[2]);
    }

    /* a client gone mid-write is an error on its connection, not a kill */
    signal(SIGPIPE, SIG_IGN);
    g_message("hbase-salt-proxy %s starting, config %s, %zu salted table%s",
              HSP_VERSION, config_path != NULL ? config_path : "(defaults)",
              cfg->n_tables, cfg->n_tables == 1 ? "" : "s");
    return main_run(cfg);
}
