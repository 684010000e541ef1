/* test_health.c: unit tests of the backend servers' health (health.c),
 * apart from the workers' pools: what a pool and the probe thread share
 * of a server (struct health_shared), and the probe thread bringing a
 * DOWN server UP again. */
#include <errno.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <netinet/in.h>

#include <glib.h>

#include "health.h"
#include "wire.h"

/* The messages logged (any thread) since the last test_lines_clear. */
static GPtrArray *test_lines;
static GMutex test_lines_lock;

static GLogWriterOutput
test_writer(GLogLevelFlags level, const GLogField *fields, gsize n,
            gpointer data)
{
    for (gsize i = 0; i < n; i++) {
        if (strcmp(fields[i].key, "MESSAGE") == 0) {
            g_mutex_lock(&test_lines_lock);
            g_ptr_array_add(test_lines, g_strdup(fields[i].value));
            g_mutex_unlock(&test_lines_lock);
        }
    }
    if (g_test_subprocess()) {
        /* the parent matches the child's stderr */
        return g_log_writer_standard_streams(level, fields, n, data);
    }
    return G_LOG_WRITER_HANDLED;
}

/* Whether a line logged so far holds text. */
static gboolean
test_logged(const char *text)
{
    gboolean found = FALSE;

    g_mutex_lock(&test_lines_lock);
    for (guint i = 0; i < test_lines->len && !found; i++) {
        found = strstr(g_ptr_array_index(test_lines, i), text) != NULL;
    }
    g_mutex_unlock(&test_lines_lock);
    return found;
}

/* Settings listing one Thrift1 server, name, at 127.0.0.1:port. */
static struct worker_settings *
test_settings(const char *name, uint16_t port)
{
    struct worker_settings *set = g_new0(struct worker_settings, 1);
    struct sockaddr_in *sin = (struct sockaddr_in *)&set->servers[0].addr;

    set->nservers = 1;
    set->backend_proto = WIRE_BINARY;
    set->request_timeout_ms = 2000;
    g_strlcpy(set->servers[0].name, name, sizeof(set->servers[0].name));
    sin->sin_family = AF_INET;
    sin->sin_port = htons(port);
    sin->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    set->servers[0].addrlen = sizeof(*sin);
    return set;
}

struct test_seen {
    const char *name;
    gboolean listed;
    gboolean up;
    gboolean probed;
};

static void
test_seen_cb(const struct health_info *info, void *arg)
{
    struct test_seen *seen = arg;

    if (strcmp(info->name, seen->name) == 0) {
        seen->listed = TRUE;
        seen->up = info->up;
        seen->probed = info->probed;
    }
}

static struct test_seen
test_look(struct health_table *t, const char *name)
{
    struct test_seen seen = { name, FALSE, FALSE, FALSE };

    health_foreach(t, test_seen_cb, &seen);
    return seen;
}

/* A failure each debounce period, until the server is DOWN. */
static void
test_fail_until_down(struct health_shared *h)
{
    for (int i = 0; i < 3; i++) {
        g_usleep(150 * 1000);
        health_failed(h, "connect: Connection refused");
    }
}

/* Every worker's pool of a server gets the one entry of that name; it
 * outlives a reload that drops the server, which keeps what is known. */
static void
test_one_entry_a_name(void)
{
    g_autofree struct worker_settings *set = test_settings("h:1", 1);
    g_autofree struct worker_settings *other = test_settings("h:2", 2);
    struct health_table *t = health_new(set);
    struct health_shared *h = health_lookup(t, "h:1");

    g_assert_true(health_lookup(t, "h:1") == h);
    g_assert_true(health_lookup(t, "h:2") != h);
    g_assert_cmpstr(h->name, ==, "h:1");
    g_assert_true(health_is_up(h));
    g_assert_true(test_look(t, "h:1").listed);
    /* a reload to the other server: h:1 is no current one any more */
    health_use(t, other);
    g_assert_false(test_look(t, "h:1").listed);
    g_assert_true(test_look(t, "h:2").listed);
    health_use(t, set);
    g_assert_true(health_lookup(t, "h:1") == h);
    g_assert_true(test_look(t, "h:1").listed);
    health_free(t);
}

/* DOWN after three failures apart; a burst counts once; a reply starts
 * the count over. */
static void
test_down_after_failures(void)
{
    g_autofree struct worker_settings *set = test_settings("h:1", 1);
    struct health_table *t = health_new(set);
    struct health_shared *h = health_lookup(t, "h:1");

    /* one outage hits every connection at once: one failure */
    for (int i = 0; i < 16; i++) {
        health_failed(h, "connection closed by server");
    }
    g_assert_cmpint(g_atomic_int_get(&h->failures), ==, 1);
    g_assert_true(health_is_up(h));
    /* a reply: the count starts over */
    health_ok(h);
    g_assert_cmpint(g_atomic_int_get(&h->failures), ==, 0);
    test_fail_until_down(h);
    g_assert_false(health_is_up(h));
    g_assert_false(test_look(t, "h:1").up);
    g_assert_true(test_logged("backend h:1: down after 3 failures in a row"));
    g_mutex_lock(&h->lock);
    g_assert_cmpstr(h->why, ==, "connect: Connection refused");
    g_mutex_unlock(&h->lock);
    g_assert_cmpint(g_atomic_int_get(&h->probe_now), ==, 1);
    health_free(t);
}

/* A listening socket on the loopback, its port in *port. */
static int
test_listen(uint16_t *port)
{
    struct sockaddr_in sin = { 0 };
    socklen_t len = sizeof(sin);
    int fd = socket(AF_INET, SOCK_STREAM, 0);

    g_assert_cmpint(fd, >=, 0);
    sin.sin_family = AF_INET;
    sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    g_assert_cmpint(bind(fd, (struct sockaddr *)&sin, sizeof(sin)), ==, 0);
    g_assert_cmpint(listen(fd, 8), ==, 0);
    g_assert_cmpint(getsockname(fd, (struct sockaddr *)&sin, &len), ==, 0);
    *port = ntohs(sin.sin_port);
    return fd;
}

/* Answers one probe on lfd: reads its call, writes a reply. */
static void
test_answer_probe(int lfd)
{
    struct pollfd p = { .fd = lfd, .events = POLLIN };
    struct wire_writer wr;
    struct wire_buf buf;
    uint8_t call[256];
    int fd;

    g_assert_cmpint(poll(&p, 1, 5000), ==, 1);
    fd = accept(lfd, NULL, NULL);
    g_assert_cmpint(fd, >=, 0);
    p.fd = fd;
    g_assert_cmpint(poll(&p, 1, 5000), ==, 1);
    g_assert_cmpint(read(fd, call, sizeof(call)), >, 0);
    /* getTableNames' reply, an empty list */
    wire_buf_init(&buf);
    wire_writer_init(&wr, WIRE_BINARY, &buf);
    wire_write_msg_begin(&wr, (const uint8_t *)"getTableNames", 13, WIRE_REPLY,
                         1);
    wire_write_struct_begin(&wr);
    wire_write_field(&wr, WIRE_T_LIST, 0);
    wire_write_list_begin(&wr, WIRE_T_STRING, 0);
    wire_write_container_end(&wr);
    wire_write_struct_end(&wr);
    g_assert_cmpint(write(fd, buf.data, buf.len), ==, (ssize_t)buf.len);
    wire_buf_free(&buf);
    /* the probe ends with the reply, the connection with it */
    g_assert_cmpint(poll(&p, 1, 5000), ==, 1);
    close(fd);
}

/* The hand-over the other way: a worker marks the server DOWN, the
 * probe thread finds it answering and marks it UP. */
static void
test_probe_brings_it_up(void)
{
    uint16_t port = 0;
    int lfd = test_listen(&port);
    g_autofree char *name = g_strdup_printf("127.0.0.1:%u", port);
    g_autofree struct worker_settings *set = test_settings(name, port);
    struct health_table *t = health_new(set);
    struct health_shared *h = health_lookup(t, name);
    g_autoptr(GError) error = NULL;
    gint64 until;

    test_fail_until_down(h);
    g_assert_false(health_is_up(h));
    g_assert_true(health_start(t, &error));
    g_assert_no_error(error);
    test_answer_probe(lfd);
    until = g_get_monotonic_time() + 5 * G_USEC_PER_SEC;
    while (!health_is_up(h) && g_get_monotonic_time() < until) {
        g_usleep(10 * 1000);
    }
    g_assert_true(health_is_up(h));
    g_assert_cmpint(g_atomic_int_get(&h->failures), ==, 0);
    g_assert_true(test_look(t, name).up);
    g_assert_true(test_look(t, name).probed);
    health_free(t);
    close(lfd);
}

int
main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    /* health's lines are warnings, which g_test_init makes fatal */
    g_log_set_always_fatal(G_LOG_FATAL_MASK);
    test_lines = g_ptr_array_new_with_free_func(g_free);
    g_log_set_writer_func(test_writer, NULL, NULL);
    g_test_add_func("/health/one-entry-a-name", test_one_entry_a_name);
    g_test_add_func("/health/down-after-failures", test_down_after_failures);
    g_test_add_func("/health/probe-brings-it-up", test_probe_brings_it_up);
    return g_test_run();
}
