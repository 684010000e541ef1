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

#include <thrift/c_glib/protocol/thrift_binary_protocol.h>
#include <thrift/c_glib/protocol/thrift_compact_protocol.h>

#include "emu_transport.h"
#include "hbase2_t_h_base_service.h"
#include "hbase_hbase.h"
#include "wire.h"

/*
 * Per connection:
 *
 *   socket --recv--> inbuf --wire_message_scan--> one whole message
 *      (header rewritten to strict binary if needed) --EmuTransport-->
 *      generated processor (Hbase or THBaseService) --> handler --> store
 *   socket <--send-- [frame length] + EmuTransport output
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
};

struct emu_conn {
    emu_server *srv;
    int fd;
    char peer[64];
    emu_sasl_conn *sasl;      /* the negotiated SASL session, or NULL */
};

gboolean emu_server_send_all(int fd, const guint8 *p, gsize len)
{
    while (len > 0) {
        ssize_t n = send(fd, p, len, MSG_NOSIGNAL);

        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return FALSE;
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

        if (!emu_server_send_all(c->fd, hdr, 4))
            return FALSE;
    }
    return emu_server_send_all(c->fd, out->data, out->len);
}

/* A TApplicationException built without c_glib, e.g. for a bad name. */
static gboolean emu_server_app_error(struct emu_conn *c, wire_proto_t proto,
                                     const struct wire_msg *m, int32_t type,
                                     const char *text)
{
    struct wire_buf b;
    struct wire_writer w;
    gboolean ok;

    wire_buf_init(&b);
    wire_writer_init(&w, proto, &b);
    wire_write_app_exception(&w, m->name, m->name_len, m->seqid, type, text);
    GByteArray view = { .data = b.data, .len = (guint)b.len };
    ok = emu_server_reply(c, &view);
    wire_buf_free(&b);
    return ok;
}

static ThriftProcessor *emu_server_processor_new(emu_server *srv)
{
    if (srv->cfg.service == EMU_SERVICE_HBASE2)
        return g_object_new(HBASE2_TYPE_T_H_BASE_SERVICE_PROCESSOR,
                            "handler", srv->handler, NULL);
    return g_object_new(HBASE_TYPE_HBASE_PROCESSOR, "handler", srv->handler,
                        NULL);
}

/* The generated processors keep their method tables in the same place
 * under different struct names. */
static gboolean emu_server_has_method(emu_server *srv, ThriftProcessor *proc,
                                      const char *name)
{
    GHashTable *map = srv->cfg.service == EMU_SERVICE_HBASE2
        ? ((Hbase2THBaseServiceProcessor *)proc)->process_map
        : ((HbaseHbaseProcessor *)proc)->process_map;

    return g_hash_table_lookup(map, name) != NULL;
}

/* Handles one whole message; FALSE closes the connection. */
static gboolean emu_server_handle(struct emu_conn *c,
                                  ThriftProcessor *proc,
                                  EmuTransport *tr, ThriftProtocol *in,
                                  ThriftProtocol *out, const guint8 *msg,
                                  gsize len)
{
    wire_proto_t proto = c->srv->cfg.compact ? WIRE_COMPACT : WIRE_BINARY;
    struct wire_reader r;
    struct wire_msg m;
    struct wire_buf head;
    g_autoptr(GError) err = NULL;
    g_autofree char *name = NULL;
    gboolean ok;

    wire_reader_init(&r, proto, msg, len, TRUE, &c->srv->limits);
    if (wire_read_msg_begin(&r, &m) != WIRE_OK) {
        g_message("%s: bad message header: %s", c->peer,
                  r.error ? r.error : "?");
        return FALSE;
    }
    name = g_strndup((const char *)m.name, m.name_len);
    if (m.type != WIRE_CALL && m.type != WIRE_ONEWAY)
        return emu_server_app_error(c, proto, &m,
                                    WIRE_APP_INVALID_MESSAGE_TYPE,
                                    "Invalid message type");
    /* Answered here rather than by c_glib's dispatcher, which leaks the
     * name on this path; the text is libthrift's. */
    if (memchr(m.name, 0, m.name_len) != NULL ||
        !emu_server_has_method(c->srv, proc, name)) {
        g_autofree char *text = g_strdup_printf("Invalid method name: '%s'",
                                                name);

        return emu_server_app_error(c, proto, &m, WIRE_APP_UNKNOWN_METHOD,
                                    text);
    }
    wire_buf_init(&head);
    if (proto == WIRE_BINARY && !m.strict) {
        /* c_glib 0.17 reads only versioned headers: rewrite this one. */
        struct wire_writer w;
        size_t off = wire_reader_offset(&r);

        wire_writer_init(&w, WIRE_BINARY, &head);
        wire_write_msg_begin(&w, m.name, m.name_len, m.type, m.seqid);
        emu_transport_set_input(tr, head.data, head.len, msg + off,
                                len - off);
    } else {
        emu_transport_set_input(tr, NULL, 0, msg, len);
    }
    emu_transport_reset_output(tr);
    ok = thrift_processor_process(proc, in, out, &err);
    wire_buf_free(&head);
    if (!ok) {
        /* The args did not decode into the method's struct. */
        g_message("%s: %s: %s", c->peer, name,
                  err ? err->message : "decode failed");
        return emu_server_app_error(c, proto, &m, WIRE_APP_PROTOCOL_ERROR,
                                    err ? err->message
                                        : "invalid arguments");
    }
    if (m.type == WIRE_ONEWAY)
        return TRUE;
    return emu_server_reply(c, emu_transport_output(tr));
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
                          &err))
            return 1;
        if (err == NULL)
            return 0;
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
    ThriftProcessor *proc = emu_server_processor_new(srv);
    EmuTransport *tr = emu_transport_new();
    ThriftProtocol *in, *out;
    GByteArray *buf = g_byte_array_sized_new(65536);
    gsize scanned_at = 0;   /* buffer length at the last AGAIN */

    if (srv->cfg.compact) {
        in = g_object_new(THRIFT_TYPE_COMPACT_PROTOCOL, "transport", tr, NULL);
        out = g_object_new(THRIFT_TYPE_COMPACT_PROTOCOL, "transport", tr, NULL);
    } else {
        in = g_object_new(THRIFT_TYPE_BINARY_PROTOCOL, "transport", tr, NULL);
        out = g_object_new(THRIFT_TYPE_BINARY_PROTOCOL, "transport", tr, NULL);
    }
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
            st = wire_message_scan(proto, srv->cfg.framed, buf->data,
                                   buf->len, &srv->limits, &msg_len, &why);
        }
        if (st == WIRE_ERROR) {
            g_message("%s: closing: %s", c->peer, why ? why : "bad input");
            break;
        }
        if (st == WIRE_OK) {
            const guint8 *msg = buf->data + (srv->cfg.framed ? 4 : 0);
            gsize mlen = msg_len - (srv->cfg.framed ? 4 : 0);

            if (!emu_server_handle(c, proc, tr, in, out, msg, mlen))
                break;
            g_byte_array_remove_range(buf, 0, (guint)msg_len);
            scanned_at = 0;
            continue;
        }
        if (buf->len > 0)
            scanned_at = buf->len;
        if (buf->len > (gsize)srv->limits.max_message + 4) {
            g_message("%s: closing: message larger than the maximum size",
                      c->peer);
            break;
        }
        guint old = buf->len;
        if (emu_server_fill(c, buf) <= 0)
            break;
        /* Scan again at once when this read drained the socket. */
        if (ioctl(c->fd, FIONREAD, &pending) == 0 && pending == 0)
            scanned_at = 0;
        /* Give back memory a big message left behind. */
        if (buf->len == 0 && buf->data != NULL && old > (1u << 20)) {
            g_byte_array_unref(buf);
            buf = g_byte_array_sized_new(65536);
        }
    }
done:
    close(c->fd);
    emu_sasl_conn_free(c->sasl);
    g_byte_array_unref(buf);
    g_object_unref(in);
    g_object_unref(out);
    g_object_unref(tr);
    g_object_unref(proc);
    g_free(c);
    return NULL;
}

emu_server *emu_server_new(const struct emu_server_config *cfg,
                           GObject *handler, int *bound_port,
                           GError **error)
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
        if (fd >= 0)
            close(fd);
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
                if (errno == EMFILE || errno == ENFILE)
                    g_usleep(10000);
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
        th = g_thread_try_new("emu-conn", emu_server_conn_thread, c, NULL);
        if (th == NULL) {
            close(fd);
            g_free(c);
            continue;
        }
        g_thread_unref(th);
    }
}

void emu_server_stop(emu_server *srv)
{
    g_atomic_int_set(&srv->stopping, TRUE);
    shutdown(srv->fd, SHUT_RDWR);
}

void emu_server_free(emu_server *srv)
{
    if (srv == NULL)
        return;
    close(srv->fd);
    g_object_unref(srv->handler);
    g_free(srv);
}
