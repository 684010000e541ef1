/* main.c: command line, logging, signals; runs the proxy in the foreground. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <event2/event.h>
#include <glib/gstdio.h>

#include "hsp-config.h"
#include "admin.h"
#include "backend.h"
#include "health.h"
#include "catalog.h"
#include "config.h"
#include "escape.h"
#include "hconn.h"
#include "lograte.h"
#include "metrics.h"
#include "proxy.h"
#include "salt.h"
#include "scan.h"
#include "splits.h"
#include "tabstate.h"
#include "tls.h"

#if HSP_HAVE_SD_NOTIFY
#include <systemd/sd-daemon.h>
#endif

/* How often STATUS= is refreshed for systemctl status. */
#define MAIN_STATUS_MS 10000

/* Messages at or above this level are written (lower is more severe). */
static GLogLevelFlags main_log_max = G_LOG_LEVEL_MESSAGE;
/* stderr is the journal (started by systemd): send structured entries,
 * and no timestamps on lines (journald stamps each). */
static gboolean main_journald;

/*
 * Whether stderr is the journal stream systemd set up: JOURNAL_STREAM
 * holds its "device:inode", which systemd documents as the test
 * (systemd.exec(5)); an fd merely inherited from such a process by
 * another one (a shell redirect) no longer matches.
 */
static gboolean
main_stderr_is_journal(void)
{
    const char *env = g_getenv("JOURNAL_STREAM");
    guint64 dev, ino;
    char *end;
    struct stat st;

    if (env == NULL || fstat(fileno(stderr), &st) != 0) {
        return FALSE;
    }
    dev = g_ascii_strtoull(env, &end, 10);
    if (end == env || *end != ':') {
        return FALSE;
    }
    env = end + 1;
    ino = g_ascii_strtoull(env, &end, 10);
    if (end == env || *end != '\0') {
        return FALSE;
    }
    return dev == (guint64)st.st_dev && ino == (guint64)st.st_ino;
}

/* "2026-11-27T03:25:43.123Z": UTC with milliseconds, for a line read
 * away from the journal (a file, a terminal, a container's log). */
static void
main_log_stamp(char *buf, size_t size)
{
    struct timespec ts;
    struct tm tm;
    size_t n;

    clock_gettime(CLOCK_REALTIME, &ts);
    gmtime_r(&ts.tv_sec, &tm);
    n = strftime(buf, size, "%Y-%m-%dT%H:%M:%S", &tm);
    g_snprintf(buf + n, size - n, ".%03ldZ ", ts.tv_nsec / 1000000);
}

/*
 * GLib's structured logging writer: entries go to journald with their
 * fields (priority, GLIB_DOMAIN, CODE_FILE...) when systemd connected
 * stderr to the journal, else one line per message on stderr.
 */
static GLogWriterOutput
main_log_writer(GLogLevelFlags level, const GLogField *fields, gsize n,
                gpointer data)
{
    const char *tag, *message = NULL;
    char stamp[32] = "";

    if ((level & G_LOG_LEVEL_MASK) > main_log_max &&
        !(level & (G_LOG_FLAG_FATAL | G_LOG_LEVEL_ERROR))) {
        return G_LOG_WRITER_HANDLED;
    }
    if (main_journald && g_log_writer_journald(level, fields, n, data) ==
                             G_LOG_WRITER_HANDLED) {
        return G_LOG_WRITER_HANDLED;
    }
    for (gsize i = 0; i < n; i++) {
        if (strcmp(fields[i].key, "MESSAGE") == 0) {
            message = fields[i].value;
            break;
        }
    }
    switch (level & G_LOG_LEVEL_MASK) {
    case G_LOG_LEVEL_ERROR: tag = "error"; break;
    case G_LOG_LEVEL_CRITICAL: tag = "critical"; break;
    case G_LOG_LEVEL_WARNING: tag = "warning"; break;
    case G_LOG_LEVEL_MESSAGE:
    case G_LOG_LEVEL_INFO: tag = "info"; break;
    default: tag = "debug"; break;
    }
    if (!main_journald) {
        main_log_stamp(stamp, sizeof(stamp));
    }
    /* one fprintf per line: stdio locks, so threads do not interleave */
    fprintf(stderr, "%s%s: %s\n", stamp, tag, message != NULL ? message : "");
    return G_LOG_WRITER_HANDLED;
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
                    "not '%s'",
                    name);
        return FALSE;
    }
    return TRUE;
}

static int
main_explain_key(const struct config *cfg, const char *table, const char *key)
{
    const struct config_table *t = config_find_table(cfg, table,
                                                     strlen(table));
    g_autoptr(GBytes) bytes = NULL;
    g_autoptr(GError) error = NULL;
    g_autofree char *text = NULL;
    gsize len = 0;
    const guint8 *p;

    if (t == NULL) {
        fprintf(stderr, "%s: table '%s' is not salted in %s\n",
                g_get_prgname(), table,
                cfg->source != NULL ? cfg->source : "(defaults)");
        return 1;
    }
    bytes = escape_decode(key, &error);
    if (bytes == NULL) {
        fprintf(stderr, "%s: bad escape in key: %s\n", g_get_prgname(),
                error->message);
        return 1;
    }
    p = g_bytes_get_data(bytes, &len);
    if (len == 0) {
        /* codec.c passes them through: HBase refuses them its own way */
        printf("logical key:    (empty)\nan empty row key goes to HBase "
               "unsalted, as the client sent it (HBase refuses empty "
               "rows): no bucket, no salt\n");
        return 0;
    }
    text = salt_explain(&t->salt, p, len);
    fputs(text, stdout);
    if (text[0] == '\0' || text[strlen(text) - 1] != '\n') {
        fputc('\n', stdout);
    }
    return 0;
}

/*
 * The HBase shell SPLITS of a salted table of `regions` regions
 * (splits_compute: every salt but the lowest, in key order, and cuts
 * inside the buckets when more regions than buckets are asked), as
 * JRuby double-quoted strings (splits_shell_string).
 */
static int
main_split_keys(const struct config *cfg, const char *table, gint regions)
{
    const struct config_table *t = config_find_table(cfg, table,
                                                     strlen(table));
    g_autoptr(GPtrArray) points = NULL;
    GString *out;

    if (t == NULL) {
        fprintf(stderr, "%s: table '%s' is not salted in %s\n",
                g_get_prgname(), table,
                cfg->source != NULL ? cfg->source : "(defaults)");
        return 1;
    }
    if (regions < 0 || (guint)regions > SPLITS_MAX_REGIONS) {
        fprintf(stderr, "%s: --regions must be 1..%u\n", g_get_prgname(),
                SPLITS_MAX_REGIONS);
        return 1;
    }
    points = g_ptr_array_new_with_free_func((GDestroyNotify)g_bytes_unref);
    splits_compute(&t->salt, (uint32_t)regions, points);
    out = g_string_new("SPLITS => [");
    splits_join(out, points, splits_shell_string);
    g_string_append(out, "]\n");
    fputs(out->str, stdout);
    g_string_free(out, TRUE);
    return 0;
}

/*
 * The running configuration, published for --check-config --pid: the
 * file systemd's RuntimeDirectory= gives the service ($RUNTIME_DIRECTORY,
 * the first one if several), one per process.  NULL when there is none.
 * It is also kept in a memfd of the process (main_publish_memfd), found
 * from the PID alone: a shell outside the unit has no RUNTIME_DIRECTORY,
 * and a proxy started by hand has none either.
 */
static char *
main_running_path(long pid)
{
    const char *dirs = g_getenv("RUNTIME_DIRECTORY");
    g_autofree char *dir = NULL;
    g_autofree char *name = NULL;

    if (dirs == NULL || dirs[0] == '\0') {
        return NULL;
    }
    dir = g_strndup(dirs, strcspn(dirs, ":"));
    name = g_strdup_printf("running-%ld.conf", pid);
    return g_build_filename(dir, name, NULL);
}

/* The name of the memfd, as /proc/PID/fd/N links to it: "/memfd:NAME
 * (deleted)". */
#define MAIN_RUNNING_MEMFD "hbase-salt-proxy-running.conf"

/* The memfd holding the running configuration, -1 before the first. */
static int main_running_fd = -1;

/* data into a new memfd, put in place of the old one with dup3: a
 * reader opening /proc/PID/fd/N gets the old or the new, never half.
 * only: it is the only copy (a failure is worth a warning then; a unit's
 * SystemCallFilter= may refuse memfd_create). */
static void
main_publish_memfd(const char *data, gboolean only)
{
    size_t len = strlen(data), off = 0;
    int fd = memfd_create(MAIN_RUNNING_MEMFD, MFD_CLOEXEC);

    while (fd >= 0 && off < len) {
        ssize_t n = write(fd, data + off, len - off);

        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n <= 0) {
            close(fd);
            fd = -1;
            break;
        }
        off += (size_t)n;
    }
    if (fd < 0) {
        if (only) {
            g_warning("cannot keep the running configuration for "
                      "--check-config --pid: %s",
                      g_strerror(errno));
        }
        return;
    }
    if (main_running_fd < 0) {
        main_running_fd = fd;
    } else {
        dup3(fd, main_running_fd, O_CLOEXEC);
        close(fd);
    }
}

/* Writes cfg as this process's running configuration (start, reload). */
static void
main_publish(const struct config *cfg, unsigned gen)
{
    g_autofree char *path = main_running_path((long)getpid());
    g_autofree char *text = NULL;
    g_autofree char *data = NULL;
    g_autoptr(GError) error = NULL;

    text = config_to_text(cfg);
    data = g_strdup_printf("# running configuration of hbase-salt-proxy, "
                           "pid %ld, generation %u\n%s",
                           (long)getpid(), gen, text);
    main_publish_memfd(data, path == NULL);
    if (path == NULL) {
        return;
    }
    /* a temporary file and a rename: a reader never sees half of it */
    if (!g_file_set_contents(path, data, -1, &error)) {
        g_warning("cannot write the running configuration for "
                  "--check-config --pid: %s",
                  error->message);
    }
}

static void
main_unpublish(void)
{
    g_autofree char *path = main_running_path((long)getpid());

    if (path != NULL) {
        unlink(path);
    }
}

/* The running configuration of pid from its memfd, through /proc. */
static gboolean
main_read_memfd(long pid, char **data, gsize *len, GError **error)
{
    g_autofree char *dir = g_strdup_printf("/proc/%ld/fd", pid);
    g_autoptr(GError) ierror = NULL;
    g_autoptr(GDir) d = g_dir_open(dir, 0, &ierror);
    const char *entry;

    if (d == NULL) {
        g_set_error(error, CONFIG_ERROR, CONFIG_ERROR_NOT_FOUND,
                    "--pid %ld: cannot read the running configuration: %s%s",
                    pid, ierror->message,
                    g_error_matches(ierror, G_FILE_ERROR, G_FILE_ERROR_NOENT)
                        ? " (no such process)"
                        : " (run the check as the proxy's user, or root)");
        return FALSE;
    }
    while ((entry = g_dir_read_name(d)) != NULL) {
        g_autofree char *fd = g_build_filename(dir, entry, NULL);
        g_autofree char *target = g_file_read_link(fd, NULL);

        if (target != NULL &&
            g_str_has_prefix(target, "/memfd:" MAIN_RUNNING_MEMFD " ")) {
            if (g_file_get_contents(fd, data, len, &ierror)) {
                return TRUE;
            }
            g_set_error(error, CONFIG_ERROR, CONFIG_ERROR_NOT_FOUND,
                        "--pid %ld: cannot read the running configuration: "
                        "%s",
                        pid, ierror->message);
            return FALSE;
        }
    }
    g_set_error(error, CONFIG_ERROR, CONFIG_ERROR_NOT_FOUND,
                "--pid %ld: cannot read the running configuration: process "
                "%ld publishes none (is it a hbase-salt-proxy, started and "
                "listening?)",
                pid, pid);
    return FALSE;
}

/* Whether the process pid would apply cfg on SIGHUP, by the rule the
 * daemon itself applies (config_reload_check). */
static gboolean
main_check_running(const struct config *cfg, long pid, GError **error)
{
    g_autofree char *path = main_running_path(pid);
    g_autofree char *data = NULL;
    g_autofree char *name = NULL;
    g_autoptr(config_t) running = NULL;
    g_autoptr(GError) ierror = NULL;
    gsize len = 0;

    /* the unit's file when this runs with its RUNTIME_DIRECTORY (the
     * unit's ExecReload), else the process's own copy */
    if ((path == NULL || !g_file_get_contents(path, &data, &len, NULL)) &&
        !main_read_memfd(pid, &data, &len, error)) {
        return FALSE;
    }
    name = g_strdup_printf("running configuration of pid %ld", pid);
    running = config_load_data(data, len, name, error);
    if (running == NULL) {
        return FALSE;
    }
    if (!config_reload_check(running, cfg, &ierror)) {
        g_set_error(error, CONFIG_ERROR, CONFIG_ERROR_REFUSED,
                    "a reload would be refused by the running proxy (pid "
                    "%ld): %s",
                    pid, ierror->message);
        return FALSE;
    }
    return TRUE;
}

/* The [admin] listen address resolves (the endpoint binds it later). */
static gboolean
main_check_admin(const struct config_addr *addr, GError **error)
{
    struct sockaddr_storage ss;
    socklen_t sslen;

    if (!proxy_resolve(addr->host, addr->port, TRUE, &ss, &sslen, error)) {
        g_prefix_error(error, "[admin] listen: ");
        return FALSE;
    }
    return TRUE;
}

/* --check-config: where each Thrift service is served and sent. */
static void
main_print_services(const struct config *cfg)
{
    g_autofree char *listen = config_addr_to_string(&cfg->listen);
    GString *servers = g_string_new(NULL);

    for (size_t i = 0; i < cfg->n_servers; i++) {
        g_autofree char *s = config_addr_to_string(&cfg->servers[i]);

        g_string_append_printf(servers, "%s%s", i > 0 ? "," : "", s);
    }
    printf("thrift1: listen %s, servers %s\n", listen, servers->str);
    g_string_truncate(servers, 0);
    for (size_t i = 0; i < cfg->n_thrift2_servers; i++) {
        g_autofree char *s = config_addr_to_string(&cfg->thrift2_servers[i]);

        g_string_append_printf(servers, "%s%s", i > 0 ? "," : "", s);
    }
    if (cfg->thrift2_enabled) {
        g_autofree char *t2 = config_addr_to_string(&cfg->thrift2_listen);

        printf("thrift2: listen %s, servers %s\n", t2, servers->str);
    } else {
        printf("thrift2: off%s%s%s\n",
               servers->len > 0 ? " (thrift2_servers " : "", servers->str,
               servers->len > 0 ? ")" : "");
    }
    g_string_free(servers, TRUE);
}

/* The warnings of config_advice, to the log. */
static void
main_log_advice(const struct config *cfg)
{
    g_auto(GStrv) advice = config_advice(cfg);

    for (size_t i = 0; advice[i] != NULL; i++) {
        g_warning("%s: %s", cfg->source != NULL ? cfg->source : "(defaults)",
                  advice[i]);
    }
}

/* What the main thread's callbacks share. */
struct main_ctx {
    struct event_base *base;
    struct proxy *p;
    const char *config_path;        /* NULL: built-in defaults */
    const char *last_reload;        /* for STATUS=, static text */
    struct catalog_thread *catalog; /* where the catalog's checks block */
    struct proxy_reload *reloading; /* a reload waiting for its catalog
                                       check, or NULL */
    gboolean reload_again;          /* SIGHUP came during it */
};

/* sd_notify(3) when systemd asked for it (NOTIFY_SOCKET); else nothing. */
static void G_GNUC_PRINTF(1, 2) main_notify(const char *fmt, ...)
{
#if HSP_HAVE_SD_NOTIFY
    g_autofree char *text = NULL;
    va_list ap;

    if (g_getenv("NOTIFY_SOCKET") == NULL) {
        return;
    }
    va_start(ap, fmt);
    text = g_strdup_vprintf(fmt, ap);
    va_end(ap);
    /* 0: keep NOTIFY_SOCKET, reloads and the stop notify again */
    sd_notify(0, text);
#else
    (void)fmt;
#endif
}

static void
main_status(struct main_ctx *m)
{
    gint clients = g_atomic_int_get(&m->p->nconns);

    main_notify("STATUS=%d client%s, %u scanner%s, generation %u%s%s", clients,
                clients == 1 ? "" : "s", scan_open_count(m->p->scans),
                scan_open_count(m->p->scans) == 1 ? "" : "s",
                proxy_generation(m->p),
                m->last_reload != NULL ? ", last reload " : "",
                m->last_reload != NULL ? m->last_reload : "");
}

static void
main_status_cb(evutil_socket_t fd, short what, void *arg)
{
    main_status(arg);
}

/* Bursts of like lines (lograte.h) end with their count. */
static void
main_lograte_cb(evutil_socket_t fd, short what, void *arg)
{
    lograte_flush(FALSE);
}

/* SIGTERM, SIGINT: leave the loop; main stops the workers. */
static void
main_stop_cb(evutil_socket_t sig, short what, void *arg)
{
    struct main_ctx *m = arg;

    main_notify("STOPPING=1\nSTATUS=stopping: finishing requests in "
                "flight");
    g_message("received %s, stopping", strsignal((int)sig));
    event_base_loopbreak(m->base);
}

/* While the table catalog could not be asked: again, on the newest
 * generation's configuration; else its entries for tables the file has
 * no section for.  On the catalog's thread (the calls block): this loop
 * serves the admin endpoint. */
static void
main_count_up(const struct health_info *info, void *arg)
{
    *(unsigned *)arg += info->up ? 1 : 0;
}

static void
main_catalog_cb(evutil_socket_t fd, short what, void *arg)
{
    struct main_ctx *m = arg;
    unsigned up = 0;

    if (m->p->gen->cfg->catalog_table == NULL) {
        return;
    }
    /* one at a time: a check held up by HBase is not asked again behind
     * itself */
    if (catalog_thread_queued(m->catalog, CATALOG_JOB_RECHECK) > 0) {
        return;
    }
    /* asked again once a server answers its health probe: a server that
     * is down, or speaks another protocol, gets no more calls from here */
    health_foreach(m->p->health, main_count_up, &up);
    if (up == 0) {
        return;
    }
    /* the verdicts are run-time state of the generation's tables */
    catalog_thread_push(m->catalog, CATALOG_JOB_RECHECK, m->p->gen->ts, NULL,
                        NULL);
}

static void main_hup_cb(evutil_socket_t sig, short what, void *arg);

/* A reload's catalog check is over: the new generation is applied (or
 * dropped, stopping). */
static void
main_reload_done(void *arg, gboolean ran, gboolean reached)
{
    struct main_ctx *m = arg;
    struct proxy_reload *r = g_steal_pointer(&m->reloading);

    if (!ran) {
        proxy_reload_abandon(r);
        return;
    }
    proxy_reload_commit(m->p, r);
    main_publish(m->p->gen->cfg, proxy_generation(m->p));
    m->last_reload = "applied";
    metrics_reload(m->p->metrics, METRICS_RELOAD_APPLIED);
    main_notify("READY=1");
    main_status(m);
    if (m->reload_again) {
        /* the file may have changed since it was read */
        m->reload_again = FALSE;
        main_hup_cb(SIGHUP, 0, m);
    }
}

/*
 * SIGHUP: the file again, as a new generation.  All or nothing: an
 * invalid file, a salt mapping change or a restart-only setting keeps
 * the running generation, and says why.
 */
static void
main_hup_cb(evutil_socket_t sig, short what, void *arg)
{
    struct main_ctx *m = arg;
    g_autoptr(GError) error = NULL;
    struct config *cfg;
    unsigned gen = proxy_generation(m->p);

    if (m->reloading != NULL) {
        g_message("received SIGHUP while the last reload waits for its "
                  "catalog check: reloading again once it is applied");
        m->reload_again = TRUE;
        return;
    }
    main_notify("RELOADING=1\nMONOTONIC_USEC=%" G_GINT64_FORMAT
                "\nSTATUS=reloading",
                g_get_monotonic_time());
    if (m->config_path == NULL) {
        g_warning("received SIGHUP: no configuration file (-c) to reload; "
                  "keeping generation %u",
                  gen);
        m->last_reload = "refused";
        metrics_reload(m->p->metrics, METRICS_RELOAD_REFUSED);
    } else if ((cfg = config_load(m->config_path, &error)) == NULL) {
        g_warning("reload failed, keeping generation %u: %s", gen,
                  error->message);
        m->last_reload = "failed: invalid file";
        metrics_reload(m->p->metrics, METRICS_RELOAD_INVALID);
    } else {
        /* proxy_reload_prepare takes cfg over: advice first */
        main_log_advice(cfg);
        m->reloading = proxy_reload_prepare(m->p, cfg, &error);
        if (m->reloading == NULL) {
            g_warning("reload of %s refused, keeping generation %u: %s",
                      m->config_path, gen, error->message);
            m->last_reload = "refused";
            metrics_reload(m->p->metrics, METRICS_RELOAD_REFUSED);
        } else {
            /* the new file's tables are judged before any call reaches
             * them, off this loop: main_reload_done applies it */
            catalog_thread_push(m->catalog, CATALOG_JOB_CHECK,
                                proxy_reload_state(m->reloading),
                                main_reload_done, m);
            return;
        }
    }
    main_notify("READY=1");
    main_status(m);
}

/* Runs until SIGTERM or SIGINT; returns the exit code. */
static int
main_run(const struct config *cfg, const char *config_path)
{
    g_autoptr(GError) error = NULL;
    struct main_ctx m = { .config_path = config_path };
    struct event *ev_term, *ev_int, *ev_hup, *ev_status, *ev_catalog;
    struct event *ev_lograte;
    struct timeval every = { MAIN_STATUS_MS / 1000, 0 };
    struct timeval second = { 1, 0 };
    struct timeval recheck = { cfg->catalog_recheck_ms / 1000,
                               (cfg->catalog_recheck_ms % 1000) * 1000 };
    struct admin *admin = NULL;
    struct catalog_report rep;
    struct tabstate *ts = tabstate_new(cfg, NULL);

    sigset_t early;

    /* before any listener: no call on a salted table is served unchecked */
    catalog_check(ts, &rep);
    catalog_report_clear(&rep);

    /* the listeners are bound before the handlers below exist: a stop
     * that comes as soon as the port takes connections (systemd, a
     * supervisor, a test) waits for them instead of killing the process
     * half set up; the threads made meanwhile keep the mask */
    sigemptyset(&early);
    sigaddset(&early, SIGTERM);
    sigaddset(&early, SIGINT);
    sigaddset(&early, SIGHUP);
    pthread_sigmask(SIG_BLOCK, &early, NULL);
    m.p = proxy_new(ts, &error);
    if (m.p == NULL) {
        g_critical("%s", error->message);
        return 1;
    }
    m.base = event_base_new();
    m.catalog = catalog_thread_new(m.base, &error);
    if (m.catalog == NULL) {
        g_critical("%s", error->message);
        proxy_free(m.p);
        event_base_free(m.base);
        return 1;
    }
    ev_term = evsignal_new(m.base, SIGTERM, main_stop_cb, &m);
    ev_int = evsignal_new(m.base, SIGINT, main_stop_cb, &m);
    ev_hup = evsignal_new(m.base, SIGHUP, main_hup_cb, &m);
    ev_status = event_new(m.base, -1, EV_PERSIST, main_status_cb, &m);
    ev_catalog = event_new(m.base, -1, EV_PERSIST, main_catalog_cb, &m);
    event_add(ev_catalog, &recheck);
    ev_lograte = event_new(m.base, -1, EV_PERSIST, main_lograte_cb, NULL);
    event_add(ev_lograte, &second);
    evsignal_add(ev_term, NULL);
    evsignal_add(ev_int, NULL);
    evsignal_add(ev_hup, NULL);
    /* one that came meanwhile is handled by the loop's first pass */
    pthread_sigmask(SIG_UNBLOCK, &early, NULL);
    if (g_getenv("NOTIFY_SOCKET") != NULL) {
        event_add(ev_status, &every);
    }
    if (cfg->admin_enabled) {
        admin = admin_new(m.base, m.p, &cfg->admin_listen, &error);
        if (admin == NULL) {
            g_critical("%s", error->message);
            catalog_thread_free(m.catalog);
            proxy_free(m.p);
            return 1;
        }
    }
    if (!proxy_start(m.p, &error)) {
        g_critical("%s", error->message);
        proxy_stop(m.p);
        catalog_thread_free(m.catalog);
        admin_free(admin);
        proxy_free(m.p);
        return 1;
    }
    /* listeners are bound and workers run: clients can be served */
    main_publish(cfg, proxy_generation(m.p));
    main_notify("READY=1\nMAINPID=%lu", (unsigned long)getpid());
    main_status(&m);
    event_base_dispatch(m.base);
    {
        /* stopping already: a second SIGTERM or SIGINT (a supervisor
         * repeating itself) must not kill the process once the handlers
         * are freed below (other threads block every signal) */
        sigset_t stop;

        sigemptyset(&stop);
        sigaddset(&stop, SIGTERM);
        sigaddset(&stop, SIGINT);
        pthread_sigmask(SIG_BLOCK, &stop, NULL);
    }
    main_unpublish();
    proxy_stop(m.p);
    /* after the check under way, if any (bounded by the [backend]
     * timeouts); a reload still waiting for one is not applied */
    catalog_thread_free(m.catalog);
    admin_free(admin);
    proxy_free(m.p);
    event_free(ev_term);
    event_free(ev_int);
    /* freeing them restored the default action, which kills */
    signal(SIGTERM, SIG_IGN);
    signal(SIGINT, SIG_IGN);
    event_free(ev_hup);
    event_free(ev_status);
    event_free(ev_catalog);
    event_free(ev_lograte);
    event_base_free(m.base);
    /* the workers are gone: no burst grows any more */
    lograte_flush(TRUE);
    g_message("stopped");
    return 0;
}

/*
 * --check-config with [backend] sasl = gssapi: who the proxy will be and
 * whom it will talk to.  The keytab is only checked for being readable
 * here (the daemon may run as another user): its keys are never read,
 * let alone shown.
 */
static void
main_show_sasl(const struct config *cfg, const struct worker_settings *set,
               const char *name)
{
    printf("%s: SASL GSSAPI (%s) as %s, keytab %s\n", name,
           config_qop_name(cfg->sasl_qop), cfg->sasl_principal,
           cfg->sasl_keytab);
    for (unsigned i = 0; i < set->nservers; i++) {
        printf("%s: backend %s: server principal %s\n", name,
               set->servers[i].name, set->servers[i].sasl_server);
    }
    if (g_access(cfg->sasl_keytab, R_OK) != 0) {
        int e = errno;

        fprintf(stderr,
                "%s: warning: %s: [backend] sasl_keytab %s: %s (for "
                "this user; the daemon's may differ)\n",
                g_get_prgname(), name, cfg->sasl_keytab, g_strerror(e));
    }
}

/* --check-config with [tls]: the files make a context (readable here:
 * the daemon reads them as the same user, or from systemd's copy).  The
 * listener's line, as main_print_services prints the others; NULL when
 * the files do not load (said on stderr). */
static char *
main_check_tls(const struct config *cfg, const char *name)
{
    g_autoptr(GError) error = NULL;
    SSL_CTX *ctx = tls_server_ctx_new(cfg->tls_cert, cfg->tls_key,
                                      cfg->tls_client_ca, &error);
    g_autofree char *what = NULL;
    g_autofree char *listen = config_addr_to_string(&cfg->tls_listen);
    char *line;

    if (ctx == NULL) {
        fprintf(stderr, "%s: %s: %s\n", g_get_prgname(), name, error->message);
        return NULL;
    }
    what = tls_ctx_describe(ctx);
    SSL_CTX_free(ctx);
    line = g_strdup_printf(
        "tls: listen %s (thrift1), cert %s (%s), key %s, client_ca %s%s\n",
        listen, cfg->tls_cert, what, cfg->tls_key,
        cfg->tls_client_ca != NULL ? cfg->tls_client_ca : "none",
        cfg->tls_client_ca != NULL ? " (client certificates required)"
                                   : " (any client)");
    return line;
}

/*
 * --check-config: each server that answers speaks the service it is
 * listed for.  One listed under the wrong key answers the proxy's health
 * probe all the same, so nothing else would say it; a server that cannot
 * be reached is left to the catalog check's warning.
 */
static gboolean
main_check_services(const struct config *cfg, const char *name)
{
    gboolean ok = TRUE;

    for (size_t i = 0; i < cfg->n_servers + cfg->n_thrift2_servers; i++) {
        g_autoptr(GError) err = NULL;
        struct hconn *c = hconn_open_listed(cfg, i, &err);

        if (c != NULL && !hconn_check_service(c, &err) &&
            g_error_matches(err, HCONN_ERROR, HCONN_ERROR_MISPLACED)) {
            fprintf(stderr, "%s: %s: [backend] %s: %s\n", g_get_prgname(),
                    name, i < cfg->n_servers ? "servers" : "thrift2_servers",
                    err->message);
            ok = FALSE;
        }
        hconn_free(c);
    }
    return ok;
}

/* --check-config: the warnings a start would log about the tables as
 * HBase holds them; none when it cannot be asked (said already, or no
 * catalog is kept and the file is checked alone). */
static void
main_check_tables(const struct config *cfg, const char *name)
{
    g_autoptr(GPtrArray) warnings = g_ptr_array_new_with_free_func(g_free);

    /* a failure says nothing more: the lines so far are what is known */
    (void)catalog_advice(cfg, warnings, NULL);
    for (guint i = 0; i < warnings->len; i++) {
        fprintf(stderr, "%s: warning: %s: %s\n", g_get_prgname(), name,
                (const char *)g_ptr_array_index(warnings, i));
    }
}

/*
 * --check-config: the salted tables against the table catalog, when HBase
 * answers (a file that is fine otherwise stays fine while it does not).
 * FALSE when a start would refuse a table.
 */
static gboolean
main_check_catalog(const struct config *cfg, const char *name)
{
    g_autoptr(GString) out = g_string_new(NULL);
    g_autoptr(GError) error = NULL;
    unsigned mismatches = 0;
    g_auto(GStrv) lines = NULL;

    if (!catalog_compare(cfg, out, &mismatches, &error)) {
        fprintf(stderr,
                "%s: warning: %s: the table catalog %s could not be asked: "
                "%s\n",
                g_get_prgname(), name, cfg->catalog_table, error->message);
        return TRUE;
    }
    lines = g_strsplit(out->str, "\n", -1);
    for (size_t i = 0; lines[i] != NULL; i++) {
        if (lines[i][0] != '\0') {
            fprintf(mismatches > 0 ? stderr : stdout, "%s: %s\n", name,
                    lines[i]);
        }
    }
    if (mismatches > 0) {
        fprintf(stderr, "%s: %s: %u salted table%s would not be served\n",
                g_get_prgname(), name, mismatches, mismatches == 1 ? "" : "s");
        return FALSE;
    }
    main_check_tables(cfg, name);
    return TRUE;
}

int
main(int argc, char **argv)
{
    g_autofree char *config_path = NULL;
    g_autofree char *log_level = NULL;
    gboolean check_config = FALSE, explain_key = FALSE, version = FALSE;
    g_autofree char *split_table = NULL;
    gint regions = 0;
    gboolean foreground = FALSE;
    gint pid = 0;
    g_autoptr(GError) error = NULL;
    g_autoptr(GOptionContext) ctx = NULL;
    g_autoptr(config_t) cfg = NULL;
    GOptionEntry entries[] = {
        { "config", 'c', 0, G_OPTION_ARG_FILENAME, &config_path,
          "Configuration file (default: built-in defaults, no tables)",
          "FILE" },
        { "check-config", 0, 0, G_OPTION_ARG_NONE, &check_config,
          "Validate the configuration and exit", NULL },
        { "pid", 0, 0, G_OPTION_ARG_INT, &pid,
          "With --check-config: also check that the proxy running as PID "
          "would apply the file on reload",
          "PID" },
        { "explain-key", 0, 0, G_OPTION_ARG_NONE, &explain_key,
          "Print bucket and physical key of KEY in TABLE and exit "
          "(arguments: TABLE KEY; \\xNN escapes allowed)",
          NULL },
        { "split-keys", 0, 0, G_OPTION_ARG_STRING, &split_table,
          "Print the HBase shell SPLITS that put each salt bucket of "
          "TABLE in a region of its own, and exit",
          "TABLE" },
        { "regions", 0, 0, G_OPTION_ARG_INT, &regions,
          "With --split-keys: the regions wanted, when more than the "
          "buckets (each bucket is cut evenly)",
          "N" },
        { "foreground", 'f', 0, G_OPTION_ARG_NONE, &foreground,
          "Run in the foreground (always the case; for systemd)", NULL },
        { "log-level", 0, 0, G_OPTION_ARG_STRING, &log_level,
          "error, warning, info (default) or debug", "LEVEL" },
        { "version", 'V', 0, G_OPTION_ARG_NONE, &version,
          "Print the version and exit", NULL },
        { NULL, 0, 0, 0, NULL, NULL, NULL },
    };

    g_set_prgname("hbase-salt-proxy");
    main_journald = main_stderr_is_journal() ||
                    g_log_writer_is_journald(fileno(stderr));
    g_log_set_writer_func(main_log_writer, NULL, NULL);
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

    if (pid != 0 && !check_config) {
        fprintf(stderr, "%s: --pid goes with --check-config\n",
                g_get_prgname());
        return 2;
    }
    cfg = config_path != NULL ? config_load(config_path, &error)
                              : config_new_default();
    if (cfg == NULL) {
        fprintf(stderr, "%s: %s\n", g_get_prgname(), error->message);
        return 1;
    }
    if (check_config) {
        const char *name = config_path != NULL ? config_path : "(defaults)";
        struct worker_settings set;
        g_auto(GStrv) advice = config_advice(cfg);
        g_autofree char *tls_line = NULL;

        /* also what only the I/O core checks: addresses resolve, limits */
        if (!proxy_settings_load(&set, cfg, &error) ||
            (cfg->admin_enabled &&
             !main_check_admin(&cfg->admin_listen, &error)) ||
            (pid != 0 && !main_check_running(cfg, pid, &error))) {
            fprintf(stderr, "%s: %s: %s\n", g_get_prgname(), name,
                    error->message);
            return 1;
        }
        for (size_t i = 0; advice[i] != NULL; i++) {
            fprintf(stderr, "%s: warning: %s: %s\n", g_get_prgname(), name,
                    advice[i]);
        }
        if (cfg->sasl == CONFIG_SASL_GSSAPI) {
            main_show_sasl(cfg, &set, name);
        }
        if (cfg->tls_enabled &&
            (tls_line = main_check_tls(cfg, name)) == NULL) {
            return 1;
        }
        if (!main_check_services(cfg, name) ||
            !main_check_catalog(cfg, name)) {
            return 1;
        }
        if (pid != 0) {
            printf("%s: ok, the running proxy (pid %d) would apply it on "
                   "reload\n",
                   name, pid);
        } else {
            printf("%s: ok\n", name);
        }
        if (cfg->thrift2_enabled || cfg->n_thrift2_servers > 0 ||
            tls_line != NULL) {
            /* the one-line answer stays as it was without Thrift2 or TLS */
            main_print_services(cfg);
        }
        if (tls_line != NULL) {
            fputs(tls_line, stdout);
        }
        return 0;
    }
    if (explain_key) {
        return main_explain_key(cfg, argv[1], argv[2]);
    }
    if (split_table != NULL) {
        return main_split_keys(cfg, split_table, regions);
    }

    main_log_advice(cfg);
    /* a client gone mid-write is an error on its connection, not a kill */
    signal(SIGPIPE, SIG_IGN);
    g_message("hbase-salt-proxy %s starting, config %s, %zu salted table%s",
              HSP_VERSION, config_path != NULL ? config_path : "(defaults)",
              cfg->n_tables, cfg->n_tables == 1 ? "" : "s");
    return main_run(cfg, config_path);
}
