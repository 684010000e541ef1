/* hconn.c: a blocking Thrift1 client for the few calls the migration tool and the table catalog make. */
#include "hconn.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <event2/event.h>

#include "hbase1.h"
#include "httpc.h"
#include "invariant.h"
#include "sasl.h"

G_DEFINE_QUARK(hconn_error_quark, hconn_error)

/*
 * Where a connection is in its life.  Only hconn_set_state changes it:
 *   OPENING -> READY   hconn_open*: connected (and SASL negotiated)
 *   OPENING -> BROKEN  the SASL negotiation's I/O failed (hconn_fail_io)
 *   READY -> BROKEN    a call's I/O failed halfway (hconn_fail_io)
 * BROKEN is the end: the socket is closed, the stream out of step, and
 * every call after fails at once ("connection lost earlier").
 */
enum hconn_state {
    HCONN_OPENING = 0, /* from g_new0 until hconn_open* hands it out */
    HCONN_READY,       /* one call at a time goes out and comes back */
    HCONN_BROKEN,      /* fd closed (-1) after an I/O failure */
};

static const char *const hconn_state_name[] = {
    [HCONN_OPENING] = "OPENING",
    [HCONN_READY] = "READY",
    [HCONN_BROKEN] = "BROKEN",
};

struct hconn {
    enum hconn_state state;
    int fd;
    char *peer;
    wire_proto_t proto;
    gboolean framed;
    struct wire_limits limits;
    struct wire_buf out;
    int32_t seqid;
    guint64 calls;
    gboolean thrift2; /* THBaseService (hbase thrift2), not Hbase */
    struct event_base *http_base; /* transport = http: runs the bridge
                                     while a call waits */
    char http_host[128];          /* the bridge's target, as configured */
    uint16_t http_port;
    unsigned timeout_ms;
    /* [backend] sasl = gssapi only: */
    struct sasl_creds *creds; /* this connection's own ticket */
    struct sasl_client *sasl; /* negotiated context */
    GByteArray *raw;          /* received, not yet unwrapped */
    GByteArray *wrapped;      /* the frame being sent */
};

/* Every change of c's state; see enum hconn_state for the transitions
 * there are.  Any other is a defect (invariant_no_arrow: checked builds
 * stop, release builds log, count and take it). */
static void
hconn_set_state(struct hconn *c, enum hconn_state to)
{
    gboolean legal = (c->state == HCONN_OPENING && to != HCONN_OPENING) ||
                     (c->state == HCONN_READY && to == HCONN_BROKEN);

    if (!legal) {
        invariant_no_arrow(G_STRLOC, hconn_state_name,
                           G_N_ELEMENTS(hconn_state_name), c->state, to,
                           "hconn %s", c->peer);
    }
    c->state = to;
}

/*
 * What every call asks of its caller: a connection hconn_open* handed
 * out (READY, or BROKEN by an earlier failure, which the call reports
 * as an error), and no error set yet (GLib's rule).  A macro, so that
 * the assertion names the call.
 */
#define HCONN_CALLABLE(c, error)                                              \
    do {                                                                      \
        g_assert((c) != NULL && (c)->state != HCONN_OPENING);                 \
        g_assert((error) == NULL || *(error) == NULL);                        \
    } while (0)

void
hconn_rows_init(struct hconn_rows *r)
{
    g_assert(r != NULL);

    r->rows = g_array_new(FALSE, FALSE, sizeof(struct hconn_row));
    r->cells = g_array_new(FALSE, FALSE, sizeof(struct hconn_cell));
    r->replies = g_ptr_array_new_with_free_func((GDestroyNotify)g_bytes_unref);
}

void
hconn_rows_clear(struct hconn_rows *r)
{
    g_assert(r != NULL && r->rows != NULL);

    g_array_set_size(r->rows, 0);
    g_array_set_size(r->cells, 0);
    g_ptr_array_set_size(r->replies, 0);
}

void
hconn_rows_free(struct hconn_rows *r)
{
    g_assert(r != NULL);

    g_clear_pointer(&r->rows, g_array_unref);
    g_clear_pointer(&r->cells, g_array_unref);
    g_clear_pointer(&r->replies, g_ptr_array_unref);
    memset(r, 0, sizeof(*r));
}

/* ---- socket ---------------------------------------------------------- */

static gboolean
hconn_connect_one(const struct addrinfo *ai, unsigned timeout_ms, int *fdp,
                  GError **error)
{
    int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC,
                    ai->ai_protocol);
    int flags, one = 1, soerr = 0;
    socklen_t len = sizeof(soerr);
    struct pollfd p;

    if (fd < 0) {
        g_set_error(error, HCONN_ERROR, HCONN_ERROR_IO, "socket: %s",
                    g_strerror(errno));
        return FALSE;
    }
    flags = fcntl(fd, F_GETFL);
    fcntl(fd, F_SETFL, flags | O_NONBLOCK);
    if (connect(fd, ai->ai_addr, ai->ai_addrlen) < 0 && errno != EINPROGRESS) {
        g_set_error(error, HCONN_ERROR, HCONN_ERROR_IO, "connect: %s",
                    g_strerror(errno));
        close(fd);
        return FALSE;
    }
    p.fd = fd;
    p.events = POLLOUT;
    if (poll(&p, 1, timeout_ms > 0 ? (int)timeout_ms : -1) != 1) {
        g_set_error(error, HCONN_ERROR, HCONN_ERROR_IO,
                    "connect: timed out after %u ms", timeout_ms);
        close(fd);
        return FALSE;
    }
    getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &len);
    if (soerr != 0) {
        g_set_error(error, HCONN_ERROR, HCONN_ERROR_IO, "connect: %s",
                    g_strerror(soerr));
        close(fd);
        return FALSE;
    }
    fcntl(fd, F_SETFL, flags);
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    *fdp = fd;
    return TRUE;
}

static gboolean hconn_send_raw(struct hconn *c, const uint8_t *p, size_t len,
                               GError **error);
static gboolean hconn_fail_io(struct hconn *c, const char *what, int err,
                              GError **error);

/*
 * [backend] sasl = gssapi: a ticket of its own from the keytab (this
 * runs rarely: a copy's few connections, a catalog check), then the
 * SASL negotiation, blocking under the socket's timeouts.
 */
static gboolean
hconn_sasl_negotiate(struct hconn *c, const struct config *cfg,
                     const char *host, GError **error)
{
    g_autofree char *server = config_sasl_server_principal(cfg, host);
    g_autoptr(GByteArray) out = g_byte_array_new();
    g_autoptr(GError) err = NULL;
    sasl_step_t st;

    c->creds = sasl_creds_new(cfg->sasl_principal, cfg->sasl_keytab);
    if (!sasl_creds_renew(c->creds, &err)) {
        g_set_error(error, HCONN_ERROR, HCONN_ERROR_IO, "%s: %s", c->peer,
                    err->message);
        return FALSE;
    }
    c->raw = g_byte_array_new();
    c->wrapped = g_byte_array_new();
    c->sasl = sasl_client_new(c->creds, server, (sasl_qop_t)cfg->sasl_qop,
                              cfg->max_frame_size);
    st = sasl_client_start(c->sasl, out, &err);
    while (st == SASL_STEP_CONTINUE) {
        size_t used = 0;
        guint old = c->raw->len;
        ssize_t n;

        if (out->len > 0 && !hconn_send_raw(c, out->data, out->len, error)) {
            return FALSE;
        }
        g_byte_array_set_size(out, 0);
        g_byte_array_set_size(c->raw, old + 4096);
        n = recv(c->fd, c->raw->data + old, 4096, 0);
        g_byte_array_set_size(c->raw, old + (guint)MAX(n, 0));
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n <= 0) {
            return hconn_fail_io(c, "SASL negotiation", n < 0 ? errno : 0,
                                 error);
        }
        st = sasl_client_feed(c->sasl, c->raw->data, c->raw->len, &used, out,
                              &err);
        g_byte_array_remove_range(c->raw, 0, (guint)used);
    }
    if (st == SASL_STEP_FAILED) {
        /* a refusal may still owe the server our last message */
        if (out->len > 0) {
            hconn_send_raw(c, out->data, out->len, NULL);
        }
        g_set_error(error, HCONN_ERROR, HCONN_ERROR_IO, "%s: %s", c->peer,
                    err != NULL ? err->message : "SASL negotiation failed");
        return FALSE;
    }
    return TRUE;
}

static struct hconn *hconn_open_http(const struct config *cfg,
                                     const struct config_addr *a,
                                     gboolean thrift2, GError **error);

static struct hconn *
hconn_open_addr(const struct config *cfg, const struct config_addr *a,
                gboolean thrift2, GError **error)
{
    struct addrinfo hints = { 0 }, *res = NULL;
    char port[8];
    int rc, fd = -1;
    g_autofree char *peer = config_addr_to_string(a);
    g_autoptr(GError) last = NULL;
    struct hconn *c;

    if (cfg->transport == CONFIG_TRANSPORT_HTTP) {
        return hconn_open_http(cfg, a, thrift2, error);
    }
    hints.ai_socktype = SOCK_STREAM;
    g_snprintf(port, sizeof(port), "%u", a->port);
    rc = getaddrinfo(a->host, port, &hints, &res);
    if (rc != 0) {
        g_set_error(error, HCONN_ERROR, HCONN_ERROR_IO, "%s: %s", peer,
                    gai_strerror(rc));
        return NULL;
    }
    for (const struct addrinfo *ai = res; ai != NULL && fd < 0;
         ai = ai->ai_next) {
        g_clear_error(&last);
        if (!hconn_connect_one(ai, cfg->connect_timeout_ms, &fd, &last)) {
            fd = -1;
        }
    }
    freeaddrinfo(res);
    if (fd < 0) {
        g_set_error(error, HCONN_ERROR, HCONN_ERROR_IO, "%s: %s", peer,
                    last != NULL ? last->message : "no address");
        return NULL;
    }
    if (cfg->request_timeout_ms > 0) {
        struct timeval tv = {
            .tv_sec = cfg->request_timeout_ms / 1000,
            .tv_usec = (cfg->request_timeout_ms % 1000) * 1000,
        };
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
    }
    c = g_new0(struct hconn, 1);
    c->fd = fd;
    c->peer = g_steal_pointer(&peer);
    c->proto = (wire_proto_t)cfg->protocol;
    c->framed = cfg->transport == CONFIG_TRANSPORT_FRAMED;
    c->limits = wire_default_limits;
    c->limits.max_message = cfg->max_frame_size;
    if (c->limits.max_string > cfg->max_frame_size) {
        c->limits.max_string = cfg->max_frame_size;
    }
    wire_buf_init(&c->out);
    c->thrift2 = thrift2;
    if (cfg->sasl == CONFIG_SASL_GSSAPI &&
        !hconn_sasl_negotiate(c, cfg, a->host, error)) {
        hconn_free(c);
        return NULL;
    }
    hconn_set_state(c, HCONN_READY);
    return c;
}

/* HBase's HTTP mode: the same calls through an httpc bridge on a loop
 * of this connection's own, run while a call waits. */
static struct hconn *
hconn_open_http(const struct config *cfg, const struct config_addr *a,
                gboolean thrift2, GError **error)
{
    struct addrinfo hints = { 0 }, *res = NULL;
    struct sockaddr_storage ss;
    struct httpc_target t;
    char port[8];
    struct hconn *c;
    int rc;

    hints.ai_socktype = SOCK_STREAM;
    g_snprintf(port, sizeof(port), "%u", a->port);
    rc = getaddrinfo(a->host, port, &hints, &res);
    if (rc != 0) {
        g_set_error(error, HCONN_ERROR, HCONN_ERROR_IO, "%s:%u: %s", a->host,
                    a->port, gai_strerror(rc));
        return NULL;
    }
    memset(&ss, 0, sizeof(ss));
    memcpy(&ss, res->ai_addr, MIN((size_t)res->ai_addrlen, sizeof(ss)));
    freeaddrinfo(res);
    if (!httpc_init(cfg, error)) {
        return NULL;
    }
    httpc_target_init(&t, cfg, a, &ss);
    c = g_new0(struct hconn, 1);
    c->fd = -1;
    c->peer = config_addr_to_string(a);
    g_strlcpy(c->http_host, t.host, sizeof(c->http_host));
    c->http_port = t.port;
    c->proto = WIRE_BINARY;
    c->framed = FALSE;
    c->thrift2 = thrift2;
    c->timeout_ms = cfg->request_timeout_ms;
    c->limits = wire_default_limits;
    c->limits.max_message = cfg->max_frame_size;
    if (c->limits.max_string > cfg->max_frame_size) {
        c->limits.max_string = cfg->max_frame_size;
    }
    wire_buf_init(&c->out);
    c->http_base = event_base_new();
    if (cfg->sasl == CONFIG_SASL_GSSAPI) {
        g_autoptr(GError) err = NULL;

        c->creds = sasl_creds_new(cfg->sasl_principal, cfg->sasl_keytab);
        if (!sasl_creds_renew(c->creds, &err)) {
            g_set_error(error, HCONN_ERROR, HCONN_ERROR_IO, "%s: %s", c->peer,
                        err->message);
            hconn_free(c);
            return NULL;
        }
    }
    c->fd = c->http_base != NULL
                ? httpc_bridge_open(c->http_base, &t, c->creds, error)
                : -1;
    if (c->fd < 0) {
        hconn_free(c);
        return NULL;
    }
    hconn_set_state(c, HCONN_READY);
    return c;
}

struct hconn *
hconn_open(const struct config *cfg, size_t index, GError **error)
{
    g_assert(cfg != NULL && cfg->n_servers > 0);
    g_assert(error == NULL || *error == NULL);

    return hconn_open_addr(cfg, &cfg->servers[index % cfg->n_servers], FALSE,
                           error);
}

struct hconn *
hconn_open_thrift2(const struct config *cfg, size_t index, GError **error)
{
    g_assert(cfg != NULL);
    g_assert(error == NULL || *error == NULL);

    if (cfg->n_thrift2_servers == 0) {
        g_set_error(error, HCONN_ERROR, HCONN_ERROR_IO,
                    "no [backend] thrift2_servers");
        return NULL;
    }
    return hconn_open_addr(
        cfg, &cfg->thrift2_servers[index % cfg->n_thrift2_servers], TRUE,
        error);
}

struct hconn *
hconn_open_listed(const struct config *cfg, size_t index, GError **error)
{
    g_assert(cfg != NULL && index < cfg->n_servers + cfg->n_thrift2_servers);

    return index < cfg->n_servers
               ? hconn_open(cfg, index, error)
               : hconn_open_thrift2(cfg, index - cfg->n_servers, error);
}

void
hconn_free(struct hconn *c)
{
    if (c == NULL) {
        return;
    }
    if (c->fd >= 0) {
        close(c->fd);
    }
    if (c->http_base != NULL) {
        /* its loop runs no more: the bridge goes with it */
        httpc_base_done(c->http_base);
        event_base_free(c->http_base);
    }
    sasl_client_free(c->sasl);
    sasl_creds_free(c->creds);
    g_clear_pointer(&c->raw, g_byte_array_unref);
    g_clear_pointer(&c->wrapped, g_byte_array_unref);
    wire_buf_free(&c->out);
    g_free(c->peer);
    g_free(c);
}

const char *
hconn_peer(const struct hconn *c)
{
    g_assert(c != NULL);

    return c->peer;
}

guint64
hconn_calls(const struct hconn *c)
{
    g_assert(c != NULL);

    return c->calls;
}

static gboolean
hconn_fail_io(struct hconn *c, const char *what, int err, GError **error)
{
    char why[512];

    if (err == EAGAIN || err == EWOULDBLOCK) {
        g_set_error(error, HCONN_ERROR, HCONN_ERROR_IO, "%s: %s: timed out",
                    c->peer, what);
    } else if (err == 0 && c->http_base != NULL &&
               httpc_last_failure(c->http_host, c->http_port, why,
                                  sizeof(why))) {
        /* the bridge closed because the server could not be reached
         * over HTTP(S): its reason, not "closed" */
        g_set_error(error, HCONN_ERROR, HCONN_ERROR_IO, "%s: %s", c->peer,
                    why);
    } else {
        g_set_error(error, HCONN_ERROR, HCONN_ERROR_IO, "%s: %s: %s", c->peer,
                    what, err ? g_strerror(err) : "closed");
    }
    /* A call cut halfway leaves the stream out of step: no more calls. */
    if (c->fd >= 0) {
        close(c->fd);
        c->fd = -1;
        hconn_set_state(c, HCONN_BROKEN);
    }
    return FALSE;
}

static gboolean
hconn_send_raw(struct hconn *c, const uint8_t *p, size_t len, GError **error)
{
    size_t off = 0;

    while (off < len) {
        ssize_t n = send(c->fd, p + off, len - off, MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n <= 0) {
            return hconn_fail_io(c, "send", n < 0 ? errno : 0, error);
        }
        off += (size_t)n;
    }
    return TRUE;
}

static gboolean
hconn_send(struct hconn *c, GError **error)
{
    if (c->state == HCONN_BROKEN) {
        g_set_error(error, HCONN_ERROR, HCONN_ERROR_IO,
                    "%s: connection lost earlier", c->peer);
        return FALSE;
    }
    g_assert(c->state == HCONN_READY && c->fd >= 0);
    if (c->sasl != NULL) {
        g_autoptr(GError) err = NULL;

        g_byte_array_set_size(c->wrapped, 0);
        if (!sasl_client_wrap(c->sasl, c->out.data, c->out.len, c->wrapped,
                              &err)) {
            g_set_error(error, HCONN_ERROR, HCONN_ERROR_PROTOCOL, "%s: %s",
                        c->peer, err->message);
            return FALSE;
        }
        if (!hconn_send_raw(c, c->wrapped->data, c->wrapped->len, error)) {
            return FALSE;
        }
    } else if (!hconn_send_raw(c, c->out.data, c->out.len, error)) {
        return FALSE;
    }
    c->calls++;
    return TRUE;
}

/* transport = http: runs the bridge until the reply is readable. */
static gboolean
hconn_http_wait(struct hconn *c, GError **error)
{
    gint64 deadline = g_get_monotonic_time() +
                      (gint64)MAX(c->timeout_ms, 1000u) * 1000;
    struct pollfd p = { .fd = c->fd, .events = POLLIN };

    while (poll(&p, 1, 0) == 0) {
        struct timeval tv = { 0, 100 * 1000 };

        if (g_get_monotonic_time() > deadline) {
            return hconn_fail_io(c, "receive", EAGAIN, error);
        }
        /* wakes at least every 100 ms, whatever the bridge waits for */
        event_base_loopexit(c->http_base, &tv);
        event_base_loop(c->http_base, EVLOOP_ONCE);
    }
    return TRUE;
}

/*
 * Appends at least one byte of the stream to in (room: how much to ask
 * the socket for); under SASL, the payload of whole frames, unwrapped.
 */
static gboolean
hconn_read_some(struct hconn *c, GByteArray *in, size_t room, GError **error)
{
    GByteArray *to = c->sasl != NULL ? c->raw : in;
    guint start = in->len;

    for (;;) {
        guint old = to->len;
        ssize_t n;

        if (c->http_base != NULL && !hconn_http_wait(c, error)) {
            return FALSE;
        }

        if (c->sasl != NULL && c->raw->len > 0) {
            g_autoptr(GError) err = NULL;
            size_t used = 0;

            if (!sasl_client_unwrap(c->sasl, c->raw->data, c->raw->len, &used,
                                    in, &err)) {
                g_set_error(error, HCONN_ERROR, HCONN_ERROR_PROTOCOL, "%s: %s",
                            c->peer, err->message);
                return FALSE;
            }
            g_byte_array_remove_range(c->raw, 0, (guint)used);
            if (in->len > start) {
                return TRUE;
            }
        }
        g_byte_array_set_size(to, old + (guint)room);
        n = recv(c->fd, to->data + old, room, 0);
        g_byte_array_set_size(to, old + (guint)MAX(n, 0));
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n <= 0) {
            return hconn_fail_io(c, "receive", n < 0 ? errno : 0, error);
        }
        if (c->sasl == NULL) {
            return TRUE;
        }
    }
}

/* Reads one whole reply; returns the message without any frame header. */
static GBytes *
hconn_receive(struct hconn *c, GError **error)
{
    GByteArray *in = g_byte_array_sized_new(4096);
    struct wire_scan scan;
    size_t need = 0, msg_len = 0, skip = 0;
    const char *why = NULL;

    wire_scan_init(&scan);
    for (;;) {
        if (c->framed && in->len >= 4 && need == 0) {
            uint32_t flen = ((uint32_t)in->data[0] << 24) |
                            ((uint32_t)in->data[1] << 16) |
                            ((uint32_t)in->data[2] << 8) | in->data[3];
            if (flen == 0 || flen > c->limits.max_message) {
                g_byte_array_unref(in);
                g_set_error(error, HCONN_ERROR, HCONN_ERROR_PROTOCOL,
                            "%s: reply frame of %u bytes", c->peer, flen);
                return NULL;
            }
            need = 4 + (size_t)flen;
            skip = 4;
        }
        if (c->framed && need > 0 && in->len >= need) {
            msg_len = need;
            break;
        }
        if (!c->framed && in->len > 0) {
            wire_status_t st = wire_scan_feed(&scan, c->proto, in->data,
                                              in->len, &c->limits, &msg_len,
                                              &why);
            if (st == WIRE_OK) {
                break;
            }
            if (st == WIRE_ERROR) {
                g_byte_array_unref(in);
                g_set_error(error, HCONN_ERROR, HCONN_ERROR_PROTOCOL,
                            "%s: bad reply: %s", c->peer, why);
                return NULL;
            }
        }
        {
            size_t room = need > in->len ? need - in->len : 65536;

            if (room < 4096) {
                room = 4096;
            }
            if (!hconn_read_some(c, in, room, error)) {
                g_byte_array_unref(in);
                return NULL;
            }
        }
    }
    if (in->len != msg_len) {
        /* One call at a time: nothing may follow the reply. */
        g_byte_array_unref(in);
        g_set_error(error, HCONN_ERROR, HCONN_ERROR_PROTOCOL,
                    "%s: bytes after a reply", c->peer);
        return NULL;
    }
    {
        GBytes *all = g_byte_array_free_to_bytes(in);
        GBytes *msg = g_bytes_new_from_bytes(all, skip, msg_len - skip);

        g_bytes_unref(all);
        return msg;
    }
}

/* ---- calls ----------------------------------------------------------- */

static size_t
hconn_begin(struct hconn *c, struct wire_writer *w, const char *method)
{
    size_t frame = 0;

    wire_buf_clear(&c->out);
    if (c->framed) {
        frame = wire_frame_begin(&c->out);
    }
    wire_writer_init(w, c->proto, &c->out);
    c->seqid++;
    wire_write_msg_begin(w, (const uint8_t *)method, (uint32_t)strlen(method),
                         WIRE_CALL, c->seqid);
    wire_write_struct_begin(w);
    return frame;
}

static void
hconn_write_string(struct wire_writer *w, int16_t fid, const void *p,
                   size_t len)
{
    wire_write_field(w, WIRE_T_STRING, fid);
    wire_write_binary(w, p, (uint32_t)len);
}

/* TTableName {1: ns, 2: qualifier} of "ns:qualifier" or "qualifier". */
static void
hconn_write_table_name(struct wire_writer *w, const char *table)
{
    const char *colon = strchr(table, ':');

    wire_write_struct_begin(w);
    if (colon != NULL) {
        hconn_write_string(w, 1, table, (size_t)(colon - table));
        table = colon + 1;
    }
    hconn_write_string(w, 2, table, strlen(table));
    wire_write_struct_end(w);
}

static gboolean hconn_i32_read(struct wire_reader *r, uint8_t type,
                               GBytes *reply, void *data);
static gboolean hconn_bool_read(struct wire_reader *r, uint8_t type,
                                GBytes *reply, void *data);
static gboolean hconn_tresults_read(struct wire_reader *r, uint8_t type,
                                    GBytes *reply, void *data);
static gboolean hconn_tresult_read(struct wire_reader *r, uint8_t type,
                                   GBytes *reply, void *data);

/* Reads the success field (id 0) of a reply; the reader is at its value. */
typedef gboolean (*hconn_success_fn)(struct wire_reader *r, uint8_t type,
                                     GBytes *reply, void *data);

static gboolean
hconn_exception_text(struct wire_reader *r, char **text, int32_t *type)
{
    uint8_t ft;
    int16_t fid;

    *text = NULL;
    *type = 0;
    wire_read_struct_begin(r);
    while (wire_read_field(r, &ft, &fid) == WIRE_OK && ft != WIRE_T_STOP) {
        if (fid == 1 && ft == WIRE_T_STRING) {
            const uint8_t *p;
            uint32_t len;

            if (wire_read_binary(r, &p, &len) == WIRE_OK) {
                g_free(*text);
                *text = g_strndup((const char *)p, len);
            }
        } else if (fid == 2 && ft == WIRE_T_I32) {
            *type = wire_read_i32(r);
        } else {
            wire_skip(r, ft);
        }
    }
    wire_read_struct_end(r);
    return r->status == WIRE_OK;
}

/* The first line of a server message (HBase sends whole stack traces). */
static char *
hconn_first_line(const char *text)
{
    const char *nl;

    if (text == NULL) {
        return g_strdup("(no message)");
    }
    nl = strchr(text, '\n');
    return nl != NULL ? g_strndup(text, (gsize)(nl - text)) : g_strdup(text);
}

static gboolean
hconn_call(struct hconn *c, struct wire_writer *w, size_t frame,
           const char *method, hconn_success_fn success, void *data,
           GError **error)
{
    g_autoptr(GBytes) reply = NULL;
    struct wire_reader r;
    struct wire_msg m;
    const uint8_t *p;
    gsize len;
    uint8_t ft;
    int16_t fid;
    gboolean got = FALSE;

    wire_write_struct_end(w);
    if (c->framed) {
        wire_frame_end(&c->out, frame);
    }
    if (!hconn_send(c, error)) {
        return FALSE;
    }
    reply = hconn_receive(c, error);
    if (reply == NULL) {
        return FALSE;
    }
    p = g_bytes_get_data(reply, &len);
    wire_reader_init(&r, c->proto, p, len, TRUE, &c->limits);
    if (wire_read_msg_begin(&r, &m) != WIRE_OK) {
        goto bad;
    }
    if (m.name_len != strlen(method) || memcmp(m.name, method, m.name_len)) {
        g_set_error(error, HCONN_ERROR, HCONN_ERROR_PROTOCOL,
                    "%s: %s: reply names another method", c->peer, method);
        return FALSE;
    }
    if (m.seqid != c->seqid) {
        g_set_error(error, HCONN_ERROR, HCONN_ERROR_PROTOCOL,
                    "%s: %s: reply to another call (seqid %d, sent %d)",
                    c->peer, method, m.seqid, c->seqid);
        return FALSE;
    }
    if (m.type == WIRE_EXCEPTION) {
        g_autofree char *text = NULL;
        int32_t type;

        if (!hconn_exception_text(&r, &text, &type)) {
            goto bad;
        }
        g_set_error(error, HCONN_ERROR, HCONN_ERROR_APP,
                    "%s: %s: TApplicationException %d: %s", c->peer, method,
                    type, text != NULL ? text : "");
        return FALSE;
    }
    if (m.type != WIRE_REPLY) {
        goto bad;
    }
    wire_read_struct_begin(&r);
    while (wire_read_field(&r, &ft, &fid) == WIRE_OK && ft != WIRE_T_STOP) {
        if (fid == 0 && success != NULL) {
            if (!success(&r, ft, reply, data)) {
                goto bad;
            }
            got = TRUE;
        } else if (fid >= 1 && fid <= 3 && ft == WIRE_T_STRUCT) {
            g_autofree char *text = NULL, *line = NULL;
            int32_t type;
            static const char *const names[] = { "", "IOError",
                                                 "IllegalArgument",
                                                 "AlreadyExists" };

            if (!hconn_exception_text(&r, &text, &type)) {
                goto bad;
            }
            line = hconn_first_line(text);
            g_set_error(error, HCONN_ERROR, HCONN_ERROR_REMOTE,
                        "%s: %s: %s: %s", c->peer, method, names[fid], line);
            return FALSE;
        } else {
            wire_skip(&r, ft);
        }
    }
    wire_read_struct_end(&r);
    if (r.status != WIRE_OK) {
        goto bad;
    }
    if (success != NULL && !got) {
        g_set_error(error, HCONN_ERROR, HCONN_ERROR_PROTOCOL,
                    "%s: %s: reply without a result", c->peer, method);
        return FALSE;
    }
    return TRUE;
bad:
    g_set_error(error, HCONN_ERROR, HCONN_ERROR_PROTOCOL,
                "%s: %s: malformed reply: %s", c->peer, method,
                r.error != NULL ? r.error : "unexpected content");
    return FALSE;
}

/* ---- which service ----------------------------------------------------- */

gboolean
hconn_check_service(struct hconn *c, GError **error)
{
    struct wire_writer w;
    size_t frame = hconn_begin(c, &w, "getThriftServerType");
    g_autoptr(GError) err = NULL;
    g_autofree char *text = NULL;
    int32_t type = 0;
    hbase1_kind_t kind;

    HCONN_CALLABLE(c, error);

    if (!hconn_call(c, &w, frame, "getThriftServerType", hconn_i32_read, &type,
                    &err)) {
        if (g_error_matches(err, HCONN_ERROR, HCONN_ERROR_APP)) {
            return TRUE; /* older than the method: cannot tell */
        }
        g_propagate_error(error, g_steal_pointer(&err));
        return FALSE;
    }
    /* TThriftServerType: ONE = 1, TWO = 2 */
    kind = type == 1   ? HBASE1_KIND_THRIFT1
           : type == 2 ? HBASE1_KIND_THRIFT2
                       : HBASE1_KIND_KNOWN;
    if ((c->thrift2 && kind == HBASE1_KIND_THRIFT1) ||
        (!c->thrift2 && kind == HBASE1_KIND_THRIFT2)) {
        text = hbase1_kind_misplaced(c->peer, c->thrift2
                                                  ? HBASE1_SERVICE_THRIFT2
                                                  : HBASE1_SERVICE_THRIFT1);
        g_set_error(error, HCONN_ERROR, HCONN_ERROR_MISPLACED, "%s", text);
        return FALSE;
    }
    return TRUE;
}

/* ---- getTableRegions ------------------------------------------------- */

/* One region's start and end keys, fields start_fid and end_fid of the
 * struct the reader is at (Thrift1's TRegionInfo: 1 and 2; Thrift2's
 * THRegionInfo: 3 and 4); an unset key is the table's start or end. */
static void
hconn_region_info_read(struct wire_reader *r, int16_t start_fid,
                       int16_t end_fid, struct hconn_region *reg)
{
    uint8_t ft;
    int16_t fid;

    wire_read_struct_begin(r);
    while (wire_read_field(r, &ft, &fid) == WIRE_OK && ft != WIRE_T_STOP) {
        const uint8_t *p;
        uint32_t len;

        if ((fid == start_fid || fid == end_fid) && ft == WIRE_T_STRING &&
            wire_read_binary(r, &p, &len) == WIRE_OK) {
            GBytes **slot = fid == start_fid ? &reg->start : &reg->end;

            if (*slot != NULL) {
                g_bytes_unref(*slot);
            }
            *slot = g_bytes_new(p, len);
        } else {
            wire_skip(r, ft);
        }
    }
    wire_read_struct_end(r);
}

/* list<TRegionInfo> (Thrift1), or list<THRegionLocation {1: serverName,
 * 2: THRegionInfo}> (Thrift2's getAllRegionLocations). */
struct hconn_regions_reply {
    GArray *regions;
    gboolean locations;
};

static gboolean
hconn_regions_read(struct wire_reader *r, uint8_t type, GBytes *reply,
                   void *data)
{
    struct hconn_regions_reply *rr = data;
    uint8_t et, ft;
    uint32_t n;
    int16_t fid;

    if (type != WIRE_T_LIST || wire_read_list_begin(r, &et, &n) != WIRE_OK ||
        (n > 0 && et != WIRE_T_STRUCT)) {
        return FALSE;
    }
    for (uint32_t i = 0; i < n && r->status == WIRE_OK; i++) {
        struct hconn_region reg = { NULL, NULL };

        if (!rr->locations) {
            hconn_region_info_read(r, 1, 2, &reg);
        } else {
            wire_read_struct_begin(r);
            while (wire_read_field(r, &ft, &fid) == WIRE_OK &&
                   ft != WIRE_T_STOP) {
                if (fid == 2 && ft == WIRE_T_STRUCT) {
                    hconn_region_info_read(r, 3, 4, &reg);
                } else {
                    wire_skip(r, ft);
                }
            }
            wire_read_struct_end(r);
        }
        if (reg.start == NULL) {
            reg.start = g_bytes_new(NULL, 0);
        }
        if (reg.end == NULL) {
            reg.end = g_bytes_new(NULL, 0);
        }
        g_array_append_val(rr->regions, reg);
    }
    wire_read_container_end(r);
    return r->status == WIRE_OK;
}

static void
hconn_region_clear(void *p)
{
    struct hconn_region *reg = p;

    g_clear_pointer(&reg->start, g_bytes_unref);
    g_clear_pointer(&reg->end, g_bytes_unref);
}

void
hconn_regions_free(GArray *regions)
{
    if (regions != NULL) {
        g_array_unref(regions);
    }
}

static gint
hconn_region_cmp(gconstpointer a, gconstpointer b)
{
    const struct hconn_region *x = a, *y = b;

    return g_bytes_compare(x->start, y->start);
}

GArray *
hconn_get_table_regions(struct hconn *c, const char *table, GError **error)
{
    /* Thrift2 has no getTableRegions: the same keys come with each
     * region's location */
    const char *method = c->thrift2 ? "getAllRegionLocations"
                                    : "getTableRegions";
    struct wire_writer w;
    size_t frame = hconn_begin(c, &w, method);
    struct hconn_regions_reply rr = {
        g_array_new(FALSE, FALSE, sizeof(struct hconn_region)), c->thrift2
    };

    HCONN_CALLABLE(c, error);
    g_assert(table != NULL);

    g_array_set_clear_func(rr.regions, hconn_region_clear);
    hconn_write_string(&w, 1, table, strlen(table));
    if (!hconn_call(c, &w, frame, method, hconn_regions_read, &rr, error)) {
        g_array_unref(rr.regions);
        return NULL;
    }
    g_array_sort(rr.regions, hconn_region_cmp);
    return rr.regions;
}

/* ---- getTableNames --------------------------------------------------- */

/* list<Text> (Thrift1), or list<TTableName {1: ns, 2: qualifier}>
 * (Thrift2), as "ns:table", the default namespace left out. */
static gboolean
hconn_names_read(struct wire_reader *r, uint8_t type, GBytes *reply,
                 void *data)
{
    GPtrArray *names = data;
    uint8_t et, ft;
    uint32_t n, len;
    int16_t fid;
    const uint8_t *p;

    if (type != WIRE_T_LIST || wire_read_list_begin(r, &et, &n) != WIRE_OK ||
        (n > 0 && et != WIRE_T_STRING && et != WIRE_T_STRUCT)) {
        return FALSE;
    }
    for (uint32_t i = 0; i < n && r->status == WIRE_OK; i++) {
        g_autofree char *ns = NULL, *qualifier = NULL;

        if (et == WIRE_T_STRING) {
            if (wire_read_binary(r, &p, &len) == WIRE_OK) {
                g_ptr_array_add(names, g_strndup((const char *)p, len));
            }
            continue;
        }
        wire_read_struct_begin(r);
        while (wire_read_field(r, &ft, &fid) == WIRE_OK && ft != WIRE_T_STOP) {
            char **slot = fid == 1 ? &ns : fid == 2 ? &qualifier : NULL;

            if (slot != NULL && ft == WIRE_T_STRING &&
                wire_read_binary(r, &p, &len) == WIRE_OK) {
                g_free(*slot);
                *slot = g_strndup((const char *)p, len);
            } else {
                wire_skip(r, ft);
            }
        }
        wire_read_struct_end(r);
        if (qualifier == NULL) {
            continue;
        }
        if (ns != NULL && ns[0] != '\0' && strcmp(ns, "default") != 0) {
            g_ptr_array_add(names, g_strconcat(ns, ":", qualifier, NULL));
        } else {
            g_ptr_array_add(names, g_steal_pointer(&qualifier));
        }
    }
    wire_read_container_end(r);
    return r->status == WIRE_OK;
}

gboolean
hconn_table_names(struct hconn *c, GPtrArray *names, GError **error)
{
    const char *method = c->thrift2 ? "getTableNamesByPattern"
                                    : "getTableNames";
    struct wire_writer w;
    size_t frame = hconn_begin(c, &w, method);

    HCONN_CALLABLE(c, error);
    g_assert(names != NULL);

    if (c->thrift2) {
        /* every user table: Java's matches() takes the whole name */
        hconn_write_string(&w, 1, ".*", 2);
        wire_write_field(&w, WIRE_T_BOOL, 2);
        wire_write_bool(&w, FALSE);
    }
    return hconn_call(c, &w, frame, method, hconn_names_read, names, error);
}

/* ---- getColumnDescriptors -------------------------------------------- */

static gboolean
hconn_families_read(struct wire_reader *r, uint8_t type, GBytes *reply,
                    void *data)
{
    gboolean *exists = data;
    uint8_t kt, vt;
    uint32_t n;

    if (type != WIRE_T_MAP ||
        wire_read_map_begin(r, &kt, &vt, &n) != WIRE_OK) {
        return FALSE;
    }
    for (uint32_t i = 0; i < n && r->status == WIRE_OK; i++) {
        wire_skip(r, kt);
        wire_skip(r, vt);
    }
    wire_read_container_end(r);
    *exists = n > 0;
    return r->status == WIRE_OK;
}

gboolean
hconn_table_exists(struct hconn *c, const char *table, gboolean *exists,
                   GError **error)
{
    struct wire_writer w;
    size_t frame;
    g_autoptr(GError) err = NULL;

    HCONN_CALLABLE(c, error);
    g_assert(table != NULL);
    g_assert(exists != NULL);

    *exists = FALSE;
    if (c->thrift2) {
        frame = hconn_begin(c, &w, "tableExists");
        wire_write_field(&w, WIRE_T_STRUCT, 1);
        hconn_write_table_name(&w, table);
        return hconn_call(c, &w, frame, "tableExists", hconn_bool_read, exists,
                          error);
    }
    frame = hconn_begin(c, &w, "getColumnDescriptors");
    hconn_write_string(&w, 1, table, strlen(table));
    if (hconn_call(c, &w, frame, "getColumnDescriptors", hconn_families_read,
                   exists, &err)) {
        return TRUE;
    }
    /* A missing table is an IOError (TableNotFoundException). */
    if (g_error_matches(err, HCONN_ERROR, HCONN_ERROR_REMOTE)) {
        return TRUE;
    }
    g_propagate_error(error, g_steal_pointer(&err));
    return FALSE;
}

/* ---- scanners -------------------------------------------------------- */

static gboolean
hconn_i32_read(struct wire_reader *r, uint8_t type, GBytes *reply, void *data)
{
    if (type != WIRE_T_I32) {
        return FALSE;
    }
    *(int32_t *)data = wire_read_i32(r);
    return r->status == WIRE_OK;
}

/* scannerOpenWithScan with a TScan of these fields (filter NULL: none;
 * reversed sent only when set, for servers older than the field). */
static gboolean
hconn_scanner_open_scan(struct hconn *c, const char *table,
                        const uint8_t *start, size_t start_len,
                        const uint8_t *stop, size_t stop_len, int32_t caching,
                        const char *filter, gboolean reversed, int32_t *id,
                        GError **error)
{
    struct wire_writer w;
    size_t frame = hconn_begin(c, &w, "scannerOpenWithScan");

    hconn_write_string(&w, 1, table, strlen(table));
    wire_write_field(&w, WIRE_T_STRUCT, 2);
    wire_write_struct_begin(&w);
    if (start_len > 0) {
        hconn_write_string(&w, 1, start, start_len);
    }
    if (stop_len > 0) {
        hconn_write_string(&w, 2, stop, stop_len);
    }
    wire_write_field(&w, WIRE_T_I32, 5);
    wire_write_i32(&w, caching);
    if (filter != NULL) {
        hconn_write_string(&w, 6, filter, strlen(filter));
    }
    wire_write_field(&w, WIRE_T_BOOL, 8);
    wire_write_bool(&w, TRUE);
    if (reversed) {
        wire_write_field(&w, WIRE_T_BOOL, 9);
        wire_write_bool(&w, TRUE);
    }
    wire_write_struct_end(&w);
    wire_write_field(&w, WIRE_T_MAP, 3);
    wire_write_map_begin(&w, WIRE_T_STRING, WIRE_T_STRING, 0);
    wire_write_container_end(&w);
    return hconn_call(c, &w, frame, "scannerOpenWithScan", hconn_i32_read, id,
                      error);
}

gboolean
hconn_scanner_open(struct hconn *c, const char *table, const uint8_t *start,
                   size_t start_len, const uint8_t *stop, size_t stop_len,
                   int32_t caching, int32_t *id, GError **error)
{
    HCONN_CALLABLE(c, error);
    g_assert(table != NULL);
    g_assert(start != NULL || start_len == 0);
    g_assert(stop != NULL || stop_len == 0);
    g_assert(id != NULL);

    return hconn_scanner_open_scan(c, table, start, start_len, stop, stop_len,
                                   caching, NULL, FALSE, id, error);
}

gboolean
hconn_scanner_open_keys(struct hconn *c, const char *table,
                        const uint8_t *start, size_t start_len,
                        const uint8_t *stop, size_t stop_len, int32_t caching,
                        int32_t *id, GError **error)
{
    HCONN_CALLABLE(c, error);
    g_assert(table != NULL);
    g_assert(start != NULL || start_len == 0);
    g_assert(stop != NULL || stop_len == 0);
    g_assert(id != NULL);

    return hconn_scanner_open_scan(c, table, start, start_len, stop, stop_len,
                                   caching,
                                   "FirstKeyOnlyFilter() AND KeyOnlyFilter()",
                                   FALSE, id, error);
}

/* One TCell {1: value, 2: timestamp}, the column given. */
static gboolean
hconn_cell_read(struct wire_reader *r, struct hconn_cell *cell)
{
    uint8_t ft;
    int16_t fid;

    cell->val = NULL;
    cell->val_len = 0;
    cell->ts = 0;
    wire_read_struct_begin(r);
    while (wire_read_field(r, &ft, &fid) == WIRE_OK && ft != WIRE_T_STOP) {
        if (fid == 1 && ft == WIRE_T_STRING) {
            wire_read_binary(r, &cell->val, &cell->val_len);
        } else if (fid == 2 && ft == WIRE_T_I64) {
            cell->ts = wire_read_i64(r);
        } else {
            wire_skip(r, ft);
        }
    }
    wire_read_struct_end(r);
    if (cell->val == NULL) {
        cell->val = (const uint8_t *)"";
    }
    return r->status == WIRE_OK;
}

/* list<TRowResult>: rows with their columns (map) or sortedColumns. */
static gboolean
hconn_rowresults_read(struct wire_reader *r, uint8_t type, GBytes *reply,
                      void *data)
{
    struct hconn_rows *out = data;
    uint8_t et, ft;
    uint32_t n;
    int16_t fid;

    if (type != WIRE_T_LIST || wire_read_list_begin(r, &et, &n) != WIRE_OK ||
        (n > 0 && et != WIRE_T_STRUCT)) {
        return FALSE;
    }
    g_ptr_array_add(out->replies, g_bytes_ref(reply));
    for (uint32_t i = 0; i < n && r->status == WIRE_OK; i++) {
        struct hconn_row row = { (const uint8_t *)"", 0, out->cells->len, 0 };

        wire_read_struct_begin(r);
        while (wire_read_field(r, &ft, &fid) == WIRE_OK && ft != WIRE_T_STOP) {
            uint8_t kt, vt;
            uint32_t m;

            if (fid == 1 && ft == WIRE_T_STRING) {
                wire_read_binary(r, &row.key, &row.key_len);
            } else if (fid == 2 && ft == WIRE_T_MAP) {
                if (wire_read_map_begin(r, &kt, &vt, &m) != WIRE_OK) {
                    break;
                }
                if (m > 0 && (kt != WIRE_T_STRING || vt != WIRE_T_STRUCT)) {
                    return FALSE;
                }
                for (uint32_t j = 0; j < m && r->status == WIRE_OK; j++) {
                    struct hconn_cell cell;

                    wire_read_binary(r, &cell.col, &cell.col_len);
                    if (hconn_cell_read(r, &cell)) {
                        g_array_append_val(out->cells, cell);
                    }
                }
                wire_read_container_end(r);
            } else if (fid == 3 && ft == WIRE_T_LIST) {
                if (wire_read_list_begin(r, &et, &m) != WIRE_OK) {
                    break;
                }
                if (m > 0 && et != WIRE_T_STRUCT) {
                    return FALSE;
                }
                for (uint32_t j = 0; j < m && r->status == WIRE_OK; j++) {
                    /* TColumn {1: columnName, 2: TCell} */
                    struct hconn_cell cell = { (const uint8_t *)"", 0,
                                               (const uint8_t *)"", 0, 0 };
                    uint8_t ct;
                    int16_t cf;

                    wire_read_struct_begin(r);
                    while (wire_read_field(r, &ct, &cf) == WIRE_OK &&
                           ct != WIRE_T_STOP) {
                        if (cf == 1 && ct == WIRE_T_STRING) {
                            wire_read_binary(r, &cell.col, &cell.col_len);
                        } else if (cf == 2 && ct == WIRE_T_STRUCT) {
                            hconn_cell_read(r, &cell);
                        } else {
                            wire_skip(r, ct);
                        }
                    }
                    wire_read_struct_end(r);
                    g_array_append_val(out->cells, cell);
                }
                wire_read_container_end(r);
            } else {
                wire_skip(r, ft);
            }
        }
        wire_read_struct_end(r);
        row.n = out->cells->len - row.first;
        g_array_append_val(out->rows, row);
    }
    wire_read_container_end(r);
    return r->status == WIRE_OK;
}

gboolean
hconn_scanner_get_list(struct hconn *c, int32_t id, int32_t nrows,
                       struct hconn_rows *out, GError **error)
{
    struct wire_writer w;
    size_t frame = hconn_begin(c, &w, "scannerGetList");

    HCONN_CALLABLE(c, error);
    g_assert(out != NULL && out->rows != NULL);

    wire_write_field(&w, WIRE_T_I32, 1);
    wire_write_i32(&w, id);
    wire_write_field(&w, WIRE_T_I32, 2);
    wire_write_i32(&w, nrows);
    return hconn_call(c, &w, frame, "scannerGetList", hconn_rowresults_read,
                      out, error);
}

gboolean
hconn_scanner_close(struct hconn *c, int32_t id, GError **error)
{
    struct wire_writer w;
    size_t frame = hconn_begin(c, &w, "scannerClose");

    HCONN_CALLABLE(c, error);

    wire_write_field(&w, WIRE_T_I32, 1);
    wire_write_i32(&w, id);
    return hconn_call(c, &w, frame, "scannerClose", NULL, NULL, error);
}

gboolean
hconn_sample_keys(struct hconn *c, const char *table, const uint8_t *start,
                  size_t start_len, const uint8_t *stop, size_t stop_len,
                  gboolean reversed, int32_t n, struct hconn_rows *out,
                  GError **error)
{
    int32_t id = -1;
    gboolean ok;

    HCONN_CALLABLE(c, error);
    g_assert(table != NULL);
    g_assert(start != NULL || start_len == 0);
    g_assert(stop != NULL || stop_len == 0);
    g_assert(out != NULL && out->rows != NULL);

    if (c->thrift2) {
        g_set_error(error, HCONN_ERROR, HCONN_ERROR_PROTOCOL,
                    "%s: key samples are read through Thrift1 only",
                    hconn_peer(c));
        return FALSE;
    }
    /* one cell a row, no value: the keys are all that travel */
    if (!hconn_scanner_open_scan(c, table, start, start_len, stop, stop_len, n,
                                 "FirstKeyOnlyFilter() AND KeyOnlyFilter()",
                                 reversed, &id, error)) {
        return FALSE;
    }
    ok = hconn_scanner_get_list(c, id, n, out, error);
    if (!hconn_scanner_close(c, id, ok ? error : NULL)) {
        ok = FALSE;
    }
    return ok;
}

/* ---- reads ----------------------------------------------------------- */

gboolean
hconn_get_rows(struct hconn *c, const char *table, const GPtrArray *keys,
               struct hconn_rows *out, GError **error)
{
    struct wire_writer w;
    size_t frame;

    HCONN_CALLABLE(c, error);
    g_assert(table != NULL);
    g_assert(keys != NULL);
    g_assert(out != NULL && out->rows != NULL);

    if (c->thrift2) {
        /* get per key (TGet {1: row}): a TResult without a row is absent */
        for (guint i = 0; i < keys->len; i++) {
            gsize len;
            const void *p = g_bytes_get_data(keys->pdata[i], &len);

            frame = hconn_begin(c, &w, "get");
            hconn_write_string(&w, 1, table, strlen(table));
            wire_write_field(&w, WIRE_T_STRUCT, 2);
            wire_write_struct_begin(&w);
            hconn_write_string(&w, 1, p, len);
            wire_write_struct_end(&w);
            if (!hconn_call(c, &w, frame, "get", hconn_tresult_read, out,
                            error)) {
                return FALSE;
            }
        }
        return TRUE;
    }
    frame = hconn_begin(c, &w, "getRows");
    hconn_write_string(&w, 1, table, strlen(table));
    wire_write_field(&w, WIRE_T_LIST, 2);
    wire_write_list_begin(&w, WIRE_T_STRING, keys->len);
    for (guint i = 0; i < keys->len; i++) {
        gsize len;
        const void *p = g_bytes_get_data(keys->pdata[i], &len);

        wire_write_binary(&w, p, (uint32_t)len);
    }
    wire_write_container_end(&w);
    wire_write_field(&w, WIRE_T_MAP, 3);
    wire_write_map_begin(&w, WIRE_T_STRING, WIRE_T_STRING, 0);
    wire_write_container_end(&w);
    return hconn_call(c, &w, frame, "getRows", hconn_rowresults_read, out,
                      error);
}

struct hconn_ver_read {
    struct hconn_rows *out;
    const uint8_t *col;
    uint32_t col_len;
};

static gboolean
hconn_cells_read(struct wire_reader *r, uint8_t type, GBytes *reply,
                 void *data)
{
    struct hconn_ver_read *v = data;
    uint8_t et;
    uint32_t n;

    if (type != WIRE_T_LIST || wire_read_list_begin(r, &et, &n) != WIRE_OK ||
        (n > 0 && et != WIRE_T_STRUCT)) {
        return FALSE;
    }
    g_ptr_array_add(v->out->replies, g_bytes_ref(reply));
    for (uint32_t i = 0; i < n && r->status == WIRE_OK; i++) {
        struct hconn_cell cell;

        cell.col = v->col;
        cell.col_len = v->col_len;
        if (hconn_cell_read(r, &cell)) {
            g_array_append_val(v->out->cells, cell);
        }
    }
    wire_read_container_end(r);
    return r->status == WIRE_OK;
}

gboolean
hconn_get_ver(struct hconn *c, const char *table, const uint8_t *row,
              size_t row_len, const uint8_t *col, size_t col_len,
              int32_t versions, struct hconn_rows *out, GError **error)
{
    struct wire_writer w;
    size_t frame = hconn_begin(c, &w, "getVer");
    struct hconn_ver_read v = { out, col, (uint32_t)col_len };

    HCONN_CALLABLE(c, error);
    g_assert(table != NULL);
    g_assert(row != NULL || row_len == 0);
    g_assert(col != NULL || col_len == 0);
    g_assert(out != NULL && out->rows != NULL);

    hconn_write_string(&w, 1, table, strlen(table));
    hconn_write_string(&w, 2, row, row_len);
    hconn_write_string(&w, 3, col, col_len);
    wire_write_field(&w, WIRE_T_I32, 4);
    wire_write_i32(&w, versions);
    wire_write_field(&w, WIRE_T_MAP, 5);
    wire_write_map_begin(&w, WIRE_T_STRING, WIRE_T_STRING, 0);
    wire_write_container_end(&w);
    return hconn_call(c, &w, frame, "getVer", hconn_cells_read, &v, error);
}

/* ---- writes ---------------------------------------------------------- */

/* mutateRows (ts < 0: the server's clock) or mutateRowsTs. */
static gboolean
hconn_mutate(struct hconn *c, const char *table, const struct hconn_row *rows,
             guint nrows, const struct hconn_cell *cells, gboolean with_ts,
             int64_t ts, GError **error)
{
    const char *method = with_ts ? "mutateRowsTs" : "mutateRows";
    struct wire_writer w;
    size_t frame = hconn_begin(c, &w, method);

    hconn_write_string(&w, 1, table, strlen(table));
    wire_write_field(&w, WIRE_T_LIST, 2);
    wire_write_list_begin(&w, WIRE_T_STRUCT, nrows);
    for (guint i = 0; i < nrows; i++) {
        const struct hconn_row *row = &rows[i];

        /* BatchMutation {1: row, 2: list<Mutation>} */
        wire_write_struct_begin(&w);
        hconn_write_string(&w, 1, row->key, row->key_len);
        wire_write_field(&w, WIRE_T_LIST, 2);
        wire_write_list_begin(&w, WIRE_T_STRUCT, row->n);
        for (guint j = 0; j < row->n; j++) {
            const struct hconn_cell *cell = &cells[row->first + j];

            /* Mutation {1: isDelete, 2: column, 3: value, 4: writeToWAL} */
            wire_write_struct_begin(&w);
            wire_write_field(&w, WIRE_T_BOOL, 1);
            wire_write_bool(&w, FALSE);
            hconn_write_string(&w, 2, cell->col, cell->col_len);
            hconn_write_string(&w, 3, cell->val, cell->val_len);
            wire_write_field(&w, WIRE_T_BOOL, 4);
            wire_write_bool(&w, TRUE);
            wire_write_struct_end(&w);
        }
        wire_write_container_end(&w);
        wire_write_struct_end(&w);
    }
    wire_write_container_end(&w);
    if (with_ts) {
        wire_write_field(&w, WIRE_T_I64, 3);
        wire_write_i64(&w, ts);
    }
    wire_write_field(&w, WIRE_T_MAP, with_ts ? 4 : 3);
    wire_write_map_begin(&w, WIRE_T_STRING, WIRE_T_STRING, 0);
    wire_write_container_end(&w);
    return hconn_call(c, &w, frame, method, NULL, NULL, error);
}

gboolean
hconn_mutate_rows_ts(struct hconn *c, const char *table,
                     const struct hconn_row *rows, guint nrows,
                     const struct hconn_cell *cells, int64_t ts,
                     GError **error)
{
    HCONN_CALLABLE(c, error);
    g_assert(table != NULL);
    g_assert(rows != NULL || nrows == 0);
    g_assert(cells != NULL || nrows == 0);

    return hconn_mutate(c, table, rows, nrows, cells, TRUE, ts, error);
}

gboolean
hconn_mutate_rows(struct hconn *c, const char *table,
                  const struct hconn_row *rows, guint nrows,
                  const struct hconn_cell *cells, GError **error)
{
    HCONN_CALLABLE(c, error);
    g_assert(table != NULL);
    g_assert(rows != NULL || nrows == 0);
    g_assert(cells != NULL || nrows == 0);

    return hconn_mutate(c, table, rows, nrows, cells, FALSE, 0, error);
}

/* ---- the table catalog's calls ---------------------------------------- */

gboolean
hconn_create_table(struct hconn *c, const char *table, const char *family,
                   gboolean *created, GError **error)
{
    struct wire_writer w;
    size_t frame = hconn_begin(c, &w, "createTable");
    g_autofree char *name = g_strconcat(family, ":", NULL);
    g_autoptr(GError) err = NULL;

    HCONN_CALLABLE(c, error);
    g_assert(table != NULL);
    g_assert(family != NULL && created != NULL);

    *created = FALSE;
    if (c->thrift2) {
        /* TTableDescriptor {1: TTableName, 2: list<TColumnFamilyDescriptor
         * {1: name, 10: maxVersions}>} */
        wire_write_field(&w, WIRE_T_STRUCT, 1);
        wire_write_struct_begin(&w);
        wire_write_field(&w, WIRE_T_STRUCT, 1);
        hconn_write_table_name(&w, table);
        wire_write_field(&w, WIRE_T_LIST, 2);
        wire_write_list_begin(&w, WIRE_T_STRUCT, 1);
        wire_write_struct_begin(&w);
        hconn_write_string(&w, 1, family, strlen(family));
        wire_write_field(&w, WIRE_T_I32, 10);
        wire_write_i32(&w, 1);
        wire_write_struct_end(&w);
        wire_write_container_end(&w);
        wire_write_struct_end(&w);
    } else {
        hconn_write_string(&w, 1, table, strlen(table));
        wire_write_field(&w, WIRE_T_LIST, 2);
        wire_write_list_begin(&w, WIRE_T_STRUCT, 1);
        /* ColumnDescriptor {1: name, 2: maxVersions}: one version is all
         * a mapping needs */
        wire_write_struct_begin(&w);
        hconn_write_string(&w, 1, name, strlen(name));
        wire_write_field(&w, WIRE_T_I32, 2);
        wire_write_i32(&w, 1);
        wire_write_struct_end(&w);
        wire_write_container_end(&w);
    }
    if (hconn_call(c, &w, frame, "createTable", NULL, NULL, &err)) {
        *created = TRUE;
        return TRUE;
    }
    /* another proxy made it first (Thrift2 says so in a TIOError) */
    if (g_error_matches(err, HCONN_ERROR, HCONN_ERROR_REMOTE) &&
        (strstr(err->message, "AlreadyExists") != NULL ||
         strstr(err->message, "TableExistsException") != NULL)) {
        return TRUE;
    }
    g_propagate_error(error, g_steal_pointer(&err));
    return FALSE;
}

static gboolean
hconn_bool_read(struct wire_reader *r, uint8_t type, GBytes *reply, void *data)
{
    if (type != WIRE_T_BOOL) {
        return FALSE;
    }
    *(gboolean *)data = wire_read_bool(r);
    return r->status == WIRE_OK;
}

gboolean
hconn_check_and_put(struct hconn *c, const char *table, const uint8_t *row,
                    size_t row_len, const char *column, const uint8_t *value,
                    size_t value_len, const struct hconn_cell *cells,
                    guint ncells, gboolean *applied, GError **error)
{
    struct wire_writer w;
    size_t frame = hconn_begin(c, &w, "checkAndPut");

    HCONN_CALLABLE(c, error);
    g_assert(table != NULL);
    g_assert(row != NULL || row_len == 0);
    g_assert(column != NULL && applied != NULL);
    g_assert(value != NULL || value_len == 0);
    g_assert(cells != NULL || ncells == 0);

    *applied = FALSE;
    if (c->thrift2) {
        const char *colon = strchr(column, ':');
        size_t flen = colon != NULL ? (size_t)(colon - column)
                                    : strlen(column);
        const char *qual = colon != NULL ? colon + 1 : "";

        hconn_write_string(&w, 1, table, strlen(table));
        hconn_write_string(&w, 2, row, row_len);
        hconn_write_string(&w, 3, column, flen);
        hconn_write_string(&w, 4, qual, strlen(qual));
        /* no value: the check is that the cell is absent */
        if (value != NULL) {
            hconn_write_string(&w, 5, value, value_len);
        }
        /* TPut {1: row, 2: list<TColumnValue {1: family, 2: qualifier,
         * 3: value}>} */
        wire_write_field(&w, WIRE_T_STRUCT, 6);
        wire_write_struct_begin(&w);
        hconn_write_string(&w, 1, row, row_len);
        wire_write_field(&w, WIRE_T_LIST, 2);
        wire_write_list_begin(&w, WIRE_T_STRUCT, ncells);
        for (guint i = 0; i < ncells; i++) {
            const uint8_t *cc = memchr(cells[i].col, ':', cells[i].col_len);
            uint32_t cf = cc != NULL ? (uint32_t)(cc - cells[i].col)
                                     : cells[i].col_len;

            wire_write_struct_begin(&w);
            hconn_write_string(&w, 1, cells[i].col, cf);
            hconn_write_string(&w, 2,
                               cells[i].col + MIN(cf + 1, cells[i].col_len),
                               cells[i].col_len -
                                   MIN(cf + 1, cells[i].col_len));
            hconn_write_string(&w, 3, cells[i].val, cells[i].val_len);
            wire_write_struct_end(&w);
        }
        wire_write_container_end(&w);
        wire_write_struct_end(&w);
        return hconn_call(c, &w, frame, "checkAndPut", hconn_bool_read,
                          applied, error);
    }
    hconn_write_string(&w, 1, table, strlen(table));
    hconn_write_string(&w, 2, row, row_len);
    hconn_write_string(&w, 3, column, strlen(column));
    /* no value: the check is that the column is absent */
    if (value != NULL) {
        hconn_write_string(&w, 5, value, value_len);
    }
    /* Mutation {1: isDelete, 2: column, 3: value, 4: writeToWAL}; the
     * Thrift1 checkAndPut takes one */
    for (guint i = 0; i < ncells && i < 1; i++) {
        wire_write_field(&w, WIRE_T_STRUCT, 6);
        wire_write_struct_begin(&w);
        wire_write_field(&w, WIRE_T_BOOL, 1);
        wire_write_bool(&w, FALSE);
        hconn_write_string(&w, 2, cells[i].col, cells[i].col_len);
        hconn_write_string(&w, 3, cells[i].val, cells[i].val_len);
        wire_write_field(&w, WIRE_T_BOOL, 4);
        wire_write_bool(&w, TRUE);
        wire_write_struct_end(&w);
    }
    wire_write_field(&w, WIRE_T_MAP, 7);
    wire_write_map_begin(&w, WIRE_T_STRING, WIRE_T_STRING, 0);
    wire_write_container_end(&w);
    return hconn_call(c, &w, frame, "checkAndPut", hconn_bool_read, applied,
                      error);
}

gboolean
hconn_scan_first(struct hconn *c, const char *table, int32_t n,
                 struct hconn_rows *out, GError **error)
{
    int32_t id = -1;
    gboolean ok;

    HCONN_CALLABLE(c, error);
    g_assert(table != NULL);
    g_assert(out != NULL && out->rows != NULL);

    if (c->thrift2) {
        /* getScannerResults(table, TScan {}, numRows): one shot */
        struct wire_writer w;
        size_t frame = hconn_begin(c, &w, "getScannerResults");

        hconn_write_string(&w, 1, table, strlen(table));
        wire_write_field(&w, WIRE_T_STRUCT, 2);
        wire_write_struct_begin(&w);
        wire_write_struct_end(&w);
        wire_write_field(&w, WIRE_T_I32, 3);
        wire_write_i32(&w, n);
        return hconn_call(c, &w, frame, "getScannerResults",
                          hconn_tresults_read, out, error);
    }
    if (!hconn_scanner_open(c, table, NULL, 0, NULL, 0, n, &id, error)) {
        return FALSE;
    }
    ok = hconn_scanner_get_list(c, id, n, out, error);
    if (!hconn_scanner_close(c, id, ok ? error : NULL)) {
        ok = FALSE;
    }
    return ok;
}

gboolean
hconn_table_empty(struct hconn *c, const char *table, gboolean *empty,
                  GError **error)
{
    struct hconn_rows rows;
    gboolean ok;

    HCONN_CALLABLE(c, error);
    g_assert(table != NULL);
    g_assert(empty != NULL);

    *empty = FALSE;
    hconn_rows_init(&rows);
    ok = hconn_scan_first(c, table, 1, &rows, error);
    if (ok) {
        *empty = rows.rows->len == 0;
    }
    hconn_rows_free(&rows);
    return ok;
}

/* One TResult {1: row, 2: list<TColumnValue {1: family, 2: qualifier,
 * 3: value, 4: timestamp}>} into out; the "family:qualifier" names are
 * made here, kept with the replies.  A result without a row is none. */
static gboolean
hconn_tresult_one(struct wire_reader *r, GBytes *reply, struct hconn_rows *out)
{
    struct hconn_row row = { NULL, 0, out->cells->len, 0 };
    GString *names = g_string_new(NULL);
    GArray *offs = g_array_new(FALSE, FALSE, sizeof(guint));
    guint first = out->cells->len;
    uint8_t ft;
    int16_t fid;

    wire_read_struct_begin(r);
    while (wire_read_field(r, &ft, &fid) == WIRE_OK && ft != WIRE_T_STOP) {
        if (fid == 1 && ft == WIRE_T_STRING) {
            wire_read_binary(r, &row.key, &row.key_len);
        } else if (fid == 2 && ft == WIRE_T_LIST) {
            uint8_t et;
            uint32_t n;

            if (wire_read_list_begin(r, &et, &n) != WIRE_OK ||
                et != WIRE_T_STRUCT) {
                break;
            }
            for (uint32_t i = 0; i < n && r->status == WIRE_OK; i++) {
                struct hconn_cell cell = { NULL, 0, NULL, 0, 0 };
                const uint8_t *fam = NULL, *qual = NULL;
                uint32_t fam_len = 0, qual_len = 0;
                uint8_t ct;
                int16_t cid;
                guint off = (guint)names->len;

                wire_read_struct_begin(r);
                while (wire_read_field(r, &ct, &cid) == WIRE_OK &&
                       ct != WIRE_T_STOP) {
                    if (cid == 1 && ct == WIRE_T_STRING) {
                        wire_read_binary(r, &fam, &fam_len);
                    } else if (cid == 2 && ct == WIRE_T_STRING) {
                        wire_read_binary(r, &qual, &qual_len);
                    } else if (cid == 3 && ct == WIRE_T_STRING) {
                        wire_read_binary(r, &cell.val, &cell.val_len);
                    } else if (cid == 4 && ct == WIRE_T_I64) {
                        cell.ts = wire_read_i64(r);
                    } else {
                        wire_skip(r, ct);
                    }
                }
                wire_read_struct_end(r);
                g_string_append_len(names, (const char *)fam, fam_len);
                g_string_append_c(names, ':');
                g_string_append_len(names, (const char *)qual, qual_len);
                cell.col_len = fam_len + 1 + qual_len;
                g_array_append_val(offs, off);
                g_array_append_val(out->cells, cell);
            }
            wire_read_container_end(r);
        } else {
            wire_skip(r, ft);
        }
    }
    wire_read_struct_end(r);
    if (r->status == WIRE_OK && row.key != NULL) {
        GBytes *b = g_string_free_to_bytes(names);
        const uint8_t *base = g_bytes_get_data(b, NULL);

        for (guint i = 0; i < offs->len; i++) {
            g_array_index(out->cells, struct hconn_cell, first + i).col =
                base + g_array_index(offs, guint, i);
        }
        g_ptr_array_add(out->replies, b);
        row.n = out->cells->len - first;
        g_array_append_val(out->rows, row);
    } else {
        g_string_free(names, TRUE);
        g_array_set_size(out->cells, first);
    }
    g_array_unref(offs);
    (void)reply;
    return r->status == WIRE_OK;
}

static gboolean
hconn_tresult_read(struct wire_reader *r, uint8_t type, GBytes *reply,
                   void *data)
{
    struct hconn_rows *out = data;

    if (type != WIRE_T_STRUCT) {
        return FALSE;
    }
    g_ptr_array_add(out->replies, g_bytes_ref(reply));
    return hconn_tresult_one(r, reply, out);
}

static gboolean
hconn_tresults_read(struct wire_reader *r, uint8_t type, GBytes *reply,
                    void *data)
{
    struct hconn_rows *out = data;
    uint8_t et;
    uint32_t n;

    if (type != WIRE_T_LIST || wire_read_list_begin(r, &et, &n) != WIRE_OK ||
        et != WIRE_T_STRUCT) {
        return FALSE;
    }
    g_ptr_array_add(out->replies, g_bytes_ref(reply));
    for (uint32_t i = 0; i < n && r->status == WIRE_OK; i++) {
        if (!hconn_tresult_one(r, reply, out)) {
            return FALSE;
        }
    }
    wire_read_container_end(r);
    return r->status == WIRE_OK;
}
