/* emu_server.c: the emulator's listener: one thread per connection, like HBase's thread-pool server. */
#include "emu_server.h"

#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "emu_dispatch.h"
#include "emu_scanner.h"
#include "wire.h"

/*
 * Per connection:
 *
 *   socket --recv--> inbuf --wire_message_scan--> one whole message
 *      --emu_dispatch--> generated processor --> handler --> store
 *   socket <--send-- [frame length] + the reply
 *
 * c_glib never sees bytes the bounds-checking scanner has not accepted,
 * and never touches the socket.
 */

struct emu_server {
    int fd;
    struct emu_server_config cfg;
    GObject *handler;
    struct wire_limits limits;
    gint stopping;
    GMutex lock;       /* guards conns */
    GCond conns_gone;  /* signalled as conns empties */
    GHashTable *conns; /* struct emu_conn * being served */
};

struct emu_conn {
    emu_server *srv;
    int fd;
    char peer[64];
    emu_sasl_conn *sasl; /* the negotiated SASL session, or NULL */
};

gboolean emu_server_send_all(int fd, const guint8 *p, gsize len)
{
    while (len > 0) {
        ssize_t n = send(fd, p, len, MSG_NOSIGNAL);

        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n <= 0) {
            return FALSE;
        }
        p += n;
        len -= (gsize)n;
    }
    return TRUE;
}

static gboolean emu_server_reply(struct emu_conn *c, const GByteArray *out)
{
    if (c->sasl != NULL) {
        g_autoptr(GError) err = NULL;

        if (!emu_sasl_write(c->sasl, c->fd, out->data, out->len, &err)) {
            g_message("%s: %s", c->peer, err->message);
            return FALSE;
        }
        return TRUE;
    }
    if (c->srv->cfg.framed) {
        guint8 hdr[4] = { (guint8)(out->len >> 24), (guint8)(out->len >> 16),
                          (guint8)(out->len >> 8), (guint8)out->len };

        if (!emu_server_send_all(c->fd, hdr, 4)) {
            return FALSE;
        }
    }
    return emu_server_send_all(c->fd, out->data, out->len);
}

/* Handles one whole message; FALSE closes the connection. */
static gboolean emu_server_handle(struct emu_conn *c, emu_dispatch *d,
                                  const guint8 *msg, gsize len)
{
    g_autoptr(GError) err = NULL;
    const GByteArray *reply = NULL;

    switch (emu_dispatch_call(d, msg, len, c->peer, &reply, &err)) {
    case EMU_DISPATCH_REPLY:
        return emu_server_reply(c, reply);
    case EMU_DISPATCH_ONEWAY:
        return TRUE;
    case EMU_DISPATCH_FAIL:
    default:
        g_message("%s: %s", c->peer, err ? err->message : "bad message");
        return FALSE;
    }
}

/* Appends what the client sent next to buf: raw bytes, or one SASL frame
 * unwrapped (which may be empty).  1 when something arrived, 0 at EOF,
 * -1 when the connection must close. */
static int emu_server_fill(struct emu_conn *c, GByteArray *buf)
{
    guint old = buf->len;
    ssize_t n;

    if (c->sasl != NULL) {
        g_autoptr(GError) err = NULL;

        if (emu_sasl_read(c->sasl, c->fd, buf, c->srv->limits.max_message,
                          &err)) {
            return 1;
        }
        if (err == NULL) {
            return 0;
        }
        g_message("%s: closing: %s", c->peer, err->message);
        return -1;
    }
    do {
        g_byte_array_set_size(buf, old + 65536);
        n = recv(c->fd, buf->data + old, 65536, 0);
        g_byte_array_set_size(buf, old + (guint)MAX(n, 0));
    } while (n < 0 && errno == EINTR);
    return n < 0 ? -1 : n > 0;
}

static gpointer emu_server_conn_thread(gpointer data)
{
    struct emu_conn *c = data;
    emu_server *srv = c->srv;
    wire_proto_t proto = srv->cfg.compact ? WIRE_COMPACT : WIRE_BINARY;
    emu_dispatch *d = emu_dispatch_new(srv->cfg.service, srv->handler, proto,
                                       &srv->limits);
    GByteArray *buf = g_byte_array_sized_new(65536);
    gsize scanned_at = 0; /* buffer length at the last AGAIN */

    emu_scanner_set_owner(srv->cfg.owner);
    if (srv->cfg.sasl != NULL) {
        g_autoptr(GError) err = NULL;

        c->sasl = emu_sasl_accept(srv->cfg.sasl, c->fd, c->peer, &err);
        if (c->sasl == NULL) {
            g_message("%s: authentication failed: %s", c->peer,
                      err ? err->message : "?");
            goto done;
        }
        g_message("%s: effective user: %s", c->peer,
                  emu_sasl_conn_user(c->sasl));
    }
    for (;;) {
        gsize msg_len = 0;
        const char *why = NULL;
        wire_status_t st = WIRE_AGAIN;
        int pending = 0;

        /* Rescanning a growing unframed message from its start is
         * quadratic, so wait for the socket to drain or the buffer to
         * grow by half before trying again. */
        if (buf->len > 0 &&
            (scanned_at == 0 || buf->len >= scanned_at + scanned_at / 2 ||
             (ioctl(c->fd, FIONREAD, &pending) == 0 && pending == 0))) {
            st = wire_message_scan(proto, srv->cfg.framed, buf->data, buf->len,
                                   &srv->limits, &msg_len, &why);
        }
        if (st == WIRE_ERROR) {
            g_message("%s: closing: %s", c->peer, why ? why : "bad input");
            break;
        }
        if (st == WIRE_OK) {
            const guint8 *msg = buf->data + (srv->cfg.framed ? 4 : 0);
            gsize mlen = msg_len - (srv->cfg.framed ? 4 : 0);

            if (!emu_server_handle(c, d, msg, mlen)) {
                break;
            }
            g_byte_array_remove_range(buf, 0, (guint)msg_len);
            scanned_at = 0;
            continue;
        }
        if (buf->len > 0) {
            scanned_at = buf->len;
        }
        if (buf->len > (gsize)srv->limits.max_message + 4) {
            g_message("%s: closing: message larger than the maximum size",
                      c->peer);
            break;
        }
        guint old = buf->len;
        if (emu_server_fill(c, buf) <= 0) {
            break;
        }
        /* Scan again at once when this read drained the socket. */
        if (ioctl(c->fd, FIONREAD, &pending) == 0 && pending == 0) {
            scanned_at = 0;
        }
        /* Give back memory a big message left behind. */
        if (buf->len == 0 && buf->data != NULL && old > (1u << 20)) {
            g_byte_array_unref(buf);
            buf = g_byte_array_sized_new(65536);
        }
    }
done:
    emu_sasl_conn_free(c->sasl);
    g_byte_array_unref(buf);
    emu_dispatch_free(d);
    /* Last: emu_server_halt frees srv once conns is empty. */
    g_mutex_lock(&srv->lock);
    close(c->fd);
    g_hash_table_remove(srv->conns, c);
    if (g_hash_table_size(srv->conns) == 0) {
        g_cond_broadcast(&srv->conns_gone);
    }
    g_mutex_unlock(&srv->lock);
    g_free(c);
    return NULL;
}

emu_server *emu_server_new(const struct emu_server_config *cfg,
                           GObject *handler, int *bound_port, GError **error)
{
    struct addrinfo hints = { 0 }, *res = NULL;
    char portstr[16];
    int fd = -1, one = 1, rc;
    emu_server *srv;
    struct sockaddr_storage ss;
    socklen_t sl = sizeof(ss);

    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
    g_snprintf(portstr, sizeof(portstr), "%d", cfg->port);
    rc = getaddrinfo(cfg->host, portstr, &hints, &res);
    if (rc != 0) {
        g_set_error(error, G_FILE_ERROR, G_FILE_ERROR_FAILED, "%s: %s",
                    cfg->host, gai_strerror(rc));
        return NULL;
    }
    fd = socket(res->ai_family, res->ai_socktype | SOCK_CLOEXEC, 0);
    if (fd < 0 ||
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0 ||
        bind(fd, res->ai_addr, res->ai_addrlen) < 0 || listen(fd, 512) < 0 ||
        getsockname(fd, (struct sockaddr *)&ss, &sl) < 0) {
        int e = errno;

        g_set_error(error, G_FILE_ERROR, g_file_error_from_errno(e),
                    "listen on %s:%d: %s", cfg->host, cfg->port,
                    g_strerror(e));
        if (fd >= 0) {
            close(fd);
        }
        freeaddrinfo(res);
        return NULL;
    }
    freeaddrinfo(res);
    *bound_port = ss.ss_family == AF_INET6
                      ? ntohs(((struct sockaddr_in6 *)&ss)->sin6_port)
                      : ntohs(((struct sockaddr_in *)&ss)->sin_port);
    srv = g_new0(emu_server, 1);
    srv->fd = fd;
    srv->cfg = *cfg;
    srv->handler = g_object_ref(handler);
    srv->limits = wire_default_limits;
    srv->limits.max_message = cfg->max_frame;
    srv->limits.max_string = cfg->max_frame;
    g_mutex_init(&srv->lock);
    g_cond_init(&srv->conns_gone);
    srv->conns = g_hash_table_new(g_direct_hash, g_direct_equal);
    return srv;
}

void emu_server_run(emu_server *srv)
{
    while (!g_atomic_int_get(&srv->stopping)) {
        struct sockaddr_storage ss;
        socklen_t sl = sizeof(ss);
        int fd = accept4(srv->fd, (struct sockaddr *)&ss, &sl, SOCK_CLOEXEC);
        struct emu_conn *c;
        int one = 1;
        char host[48] = "?", serv[16] = "?";
        GThread *th;

        if (fd < 0) {
            if (errno == EINTR || errno == ECONNABORTED || errno == EMFILE ||
                errno == ENFILE) {
                if (errno == EMFILE || errno == ENFILE) {
                    g_usleep(10000);
                }
                continue;
            }
            break; /* listener closed by emu_server_stop */
        }
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
        getnameinfo((struct sockaddr *)&ss, sl, host, sizeof(host), serv,
                    sizeof(serv), NI_NUMERICHOST | NI_NUMERICSERV);
        c = g_new0(struct emu_conn, 1);
        c->srv = srv;
        c->fd = fd;
        g_snprintf(c->peer, sizeof(c->peer), "%s:%s", host, serv);
        /* Registered before its thread runs, so a halt that races this
         * accept either sees it or finds the server stopping here. */
        g_mutex_lock(&srv->lock);
        if (g_atomic_int_get(&srv->stopping)) {
            g_mutex_unlock(&srv->lock);
            close(fd);
            g_free(c);
            break;
        }
        g_hash_table_add(srv->conns, c);
        th = g_thread_try_new("emu-conn", emu_server_conn_thread, c, NULL);
        if (th == NULL) {
            g_hash_table_remove(srv->conns, c);
            close(fd);
            g_free(c);
        }
        g_mutex_unlock(&srv->lock);
        if (th != NULL) {
            g_thread_unref(th);
        }
    }
}

void emu_server_stop(emu_server *srv)
{
    g_mutex_lock(&srv->lock);
    g_atomic_int_set(&srv->stopping, TRUE);
    g_mutex_unlock(&srv->lock);
    shutdown(srv->fd, SHUT_RDWR);
}

void emu_server_halt(emu_server *srv)
{
    GHashTableIter it;
    gpointer c;

    emu_server_stop(srv);
    g_mutex_lock(&srv->lock);
    /* As a process that dies: the kernel resets what the peer still
     * sends, and each connection thread wakes from recv to end. */
    g_hash_table_iter_init(&it, srv->conns);
    while (g_hash_table_iter_next(&it, &c, NULL)) {
        shutdown(((struct emu_conn *)c)->fd, SHUT_RDWR);
    }
    while (g_hash_table_size(srv->conns) > 0) {
        g_cond_wait(&srv->conns_gone, &srv->lock);
    }
    g_mutex_unlock(&srv->lock);
}

void emu_server_free(emu_server *srv)
{
    if (srv == NULL) {
        return;
    }
    close(srv->fd);
    g_hash_table_unref(srv->conns);
    g_cond_clear(&srv->conns_gone);
    g_mutex_clear(&srv->lock);
    g_object_unref(srv->handler);
    g_free(srv);
}
