/* emu_sasl.c: the server side of Thrift's SASL transport (GSSAPI only), as HBase runs it with hbase.thrift.security.qop. */
#include "emu_sasl.h"

#include <errno.h>
#include <stdarg.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>

#include <gssapi/gssapi.h>
#include <gssapi/gssapi_ext.h>
#include <gssapi/gssapi_krb5.h>

#include "emu_gss.h"
#include "emu_server.h"

/*
 * The wire, as libthrift's TSaslServerTransport and the JDK's GSSAPI SASL
 * server (GssKrb5Server) speak it:
 *
 *   negotiation message: status (1 byte) | length (4, big endian) | payload
 *     C: START "GSSAPI"
 *     C: OK <initial AP-REQ>          S: OK <AP-REP>     (mutual auth)
 *     C: OK <empty>                   S: OK wrap([layers offered, maxbuf])
 *     C: OK wrap([layer, maxbuf, authzid])
 *                                     S: COMPLETE <empty>
 *   a failure: BAD or ERROR with a UTF-8 reason, then the socket closes.
 *   afterwards every flush is one frame: length (4) | payload, the payload
 *   gss_wrap'ed (with confidentiality for auth-conf) unless QOP is auth.
 */

enum {
    EMU_SASL_ST_START = 1,
    EMU_SASL_ST_OK = 2,
    EMU_SASL_ST_BAD = 3,
    EMU_SASL_ST_ERROR = 4,
    EMU_SASL_ST_COMPLETE = 5,
};

/* A negotiation token is a few KiB (an AP-REQ with a PAC stays far below
 * this); libthrift would take 100 MB, the emulator need not. */
#define EMU_SASL_MAX_TOKEN (1u << 20)
/* gss_wrap adds a header, padding and a checksum: well under this. */
#define EMU_SASL_WRAP_SLACK 4096u
/* What the JDK's GSSAPI server advertises as its receive buffer. */
#define EMU_SASL_MAX_BUF 65536u
/* hbase.thrift.server.socket.read.timeout, applied to the handshake only
 * so a silent client cannot hold a thread forever. */
#define EMU_SASL_HANDSHAKE_TIMEOUT_S 60

struct emu_sasl {
    char *principal; /* hbase/HOST@REALM */
    char *keytab;    /* path, read per connection */
    emu_qop_t qop;
};

struct emu_sasl_conn {
    gss_ctx_id_t ctx;
    emu_qop_t layer; /* what the client selected */
    char *user;      /* short name of the authenticated principal */
};

G_DEFINE_QUARK(emu_sasl_error_quark, emu_sasl_error)

static const char *const emu_sasl_status_names[] = {
    [EMU_SASL_ST_START] = "START",       [EMU_SASL_ST_OK] = "OK",
    [EMU_SASL_ST_BAD] = "BAD",           [EMU_SASL_ST_ERROR] = "ERROR",
    [EMU_SASL_ST_COMPLETE] = "COMPLETE",
};

gboolean emu_sasl_parse_qop(const char *name, emu_qop_t *qop)
{
    if (g_strcmp0(name, "auth") == 0) {
        *qop = EMU_QOP_AUTH;
    } else if (g_strcmp0(name, "auth-int") == 0) {
        *qop = EMU_QOP_AUTH_INT;
    } else if (g_strcmp0(name, "auth-conf") == 0) {
        *qop = EMU_QOP_AUTH_CONF;
    } else {
        return FALSE;
    }
    return TRUE;
}

/* The acceptor credential for s->principal from s->keytab only. */
static gboolean emu_sasl_acquire(const emu_sasl *s, gss_cred_id_t *cred,
                                 GError **error)
{
    return emu_gss_acquire(s->principal, s->keytab, FALSE, cred, error);
}

emu_sasl *emu_sasl_new(const char *principal, const char *keytab,
                       emu_qop_t qop, GError **error)
{
    emu_sasl *s;

    if (!emu_gss_check_keytab(principal, keytab, error)) {
        return NULL;
    }
    s = g_new0(emu_sasl, 1);
    s->principal = g_strdup(principal);
    s->keytab = g_strdup(keytab);
    s->qop = qop;
    return s;
}

void emu_sasl_free(emu_sasl *s)
{
    if (s == NULL) {
        return;
    }
    g_free(s->principal);
    g_free(s->keytab);
    g_free(s);
}

/* FALSE at EOF or on an error; *eof tells them apart. */
static gboolean emu_sasl_recv_all(int fd, guint8 *p, gsize len, gboolean *eof,
                                  GError **error)
{
    *eof = FALSE;
    while (len > 0) {
        ssize_t n = recv(fd, p, len, 0);

        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n == 0) {
            *eof = TRUE;
            return FALSE;
        }
        if (n < 0) {
            int e = errno;

            g_set_error(error, EMU_SASL_ERROR, EMU_SASL_ERROR_IO, "recv: %s",
                        g_strerror(e));
            return FALSE;
        }
        p += n;
        len -= (gsize)n;
    }
    return TRUE;
}

static guint32 emu_sasl_be32(const guint8 *p)
{
    return (guint32)p[0] << 24 | (guint32)p[1] << 16 | (guint32)p[2] << 8 |
           p[3];
}

static void emu_sasl_put_be32(guint8 *p, guint32 v)
{
    p[0] = (guint8)(v >> 24);
    p[1] = (guint8)(v >> 16);
    p[2] = (guint8)(v >> 8);
    p[3] = (guint8)v;
}

static gboolean emu_sasl_send_msg(int fd, guint8 status, const void *data,
                                  gsize len)
{
    g_autoptr(GByteArray) m = g_byte_array_sized_new((guint)len + 5);
    guint8 hdr[5] = { status };

    emu_sasl_put_be32(hdr + 1, (guint32)len);
    g_byte_array_append(m, hdr, 5);
    if (len > 0) {
        g_byte_array_append(m, data, (guint)len);
    }
    return emu_server_send_all(fd, m->data, m->len);
}

/* Sends status with reason and fails the negotiation with it. */
static void emu_sasl_refuse(int fd, guint8 status, GError **error,
                            const char *fmt, ...) G_GNUC_PRINTF(4, 5);

static void emu_sasl_refuse(int fd, guint8 status, GError **error,
                            const char *fmt, ...)
{
    va_list ap;
    g_autofree char *msg = NULL;

    va_start(ap, fmt);
    msg = g_strdup_vprintf(fmt, ap);
    va_end(ap);
    emu_sasl_send_msg(fd, status, msg, strlen(msg));
    if (error != NULL && *error == NULL) {
        g_set_error(error, EMU_SASL_ERROR,
                    status == EMU_SASL_ST_BAD ? EMU_SASL_ERROR_REFUSED
                                              : EMU_SASL_ERROR_PROTOCOL,
                    "%s %s", emu_sasl_status_names[status], msg);
    }
}

/* One negotiation message; NULL (with error set) if the connection must
 * close, after telling the client why where libthrift does. */
static GBytes *emu_sasl_recv_msg(int fd, guint8 *status, GError **error)
{
    guint8 hdr[5];
    guint32 len;
    g_autofree guint8 *payload = NULL;
    gboolean eof;

    if (!emu_sasl_recv_all(fd, hdr, 5, &eof, error)) {
        if (eof) {
            g_set_error(error, EMU_SASL_ERROR, EMU_SASL_ERROR_CLOSED,
                        "closed during negotiation");
        }
        return NULL;
    }
    *status = hdr[0];
    if (*status < EMU_SASL_ST_START || *status > EMU_SASL_ST_COMPLETE) {
        emu_sasl_refuse(fd, EMU_SASL_ST_ERROR, error, "Invalid status %d",
                        (gint8)*status);
        return NULL;
    }
    len = emu_sasl_be32(hdr + 1);
    if (len > EMU_SASL_MAX_TOKEN) {
        emu_sasl_refuse(fd, EMU_SASL_ST_ERROR, error,
                        "Invalid payload header length: %d", (gint32)len);
        return NULL;
    }
    payload = g_malloc(MAX(len, 1u));
    if (!emu_sasl_recv_all(fd, payload, len, &eof, error)) {
        if (eof) {
            g_set_error(error, EMU_SASL_ERROR, EMU_SASL_ERROR_CLOSED,
                        "closed during negotiation");
        }
        return NULL;
    }
    if (*status == EMU_SASL_ST_BAD || *status == EMU_SASL_ST_ERROR) {
        /* The client gave up; nothing is sent back. */
        g_set_error(error, EMU_SASL_ERROR, EMU_SASL_ERROR_CLOSED,
                    "client indicated failure: %.*s", (int)MIN(len, 200u),
                    (const char *)payload);
        return NULL;
    }
    return g_bytes_new_take(g_steal_pointer(&payload), len);
}

/* The server's offer once the context is up: the one layer configured
 * and the receive buffer, integrity-protected but not sealed. */
static gboolean emu_sasl_offer(emu_sasl *s, emu_sasl_conn *c, int fd,
                               GError **error)
{
    guint8 plain[4];
    gss_buffer_desc in = { 4, plain }, out = GSS_C_EMPTY_BUFFER;
    OM_uint32 major, minor;
    gboolean ok;

    emu_sasl_put_be32(plain, EMU_SASL_MAX_BUF);
    plain[0] = (guint8)s->qop;
    major = gss_wrap(&minor, c->ctx, 0, GSS_C_QOP_DEFAULT, &in, NULL, &out);
    if (GSS_ERROR(major)) {
        emu_gss_set_error(error, "wrap", major, minor);
        emu_sasl_refuse(fd, EMU_SASL_ST_BAD, NULL,
                        "Problem wrapping handshake1");
        return FALSE;
    }
    ok = emu_sasl_send_msg(fd, EMU_SASL_ST_OK, out.value, out.length);
    gss_release_buffer(&minor, &out);
    return ok;
}

/* The client's choice: [layer, maxbuf (3 bytes), authzid]. */
static gboolean emu_sasl_choose(emu_sasl *s, emu_sasl_conn *c, int fd,
                                const char *peer_name, GBytes *msg,
                                GError **error)
{
    gsize len;
    const guint8 *p = g_bytes_get_data(msg, &len);
    gss_buffer_desc in = { len, (void *)p }, out = GSS_C_EMPTY_BUFFER;
    OM_uint32 major, minor;
    g_autofree char *authzid = NULL;
    guint8 sel;

    major = gss_unwrap(&minor, c->ctx, &in, &out, NULL, NULL);
    if (GSS_ERROR(major) || major != GSS_S_COMPLETE || out.length < 4) {
        if (GSS_ERROR(major)) {
            emu_gss_set_error(error, "unwrap", major, minor);
        }
        gss_release_buffer(&minor, &out);
        emu_sasl_refuse(fd, EMU_SASL_ST_BAD, error,
                        "Final handshake step failed");
        return FALSE;
    }
    sel = ((const guint8 *)out.value)[0];
    authzid = out.length > 4
                  ? g_strndup((const char *)out.value + 4, out.length - 4)
                  : g_strdup(peer_name);
    gss_release_buffer(&minor, &out);
    if ((sel & s->qop) == 0) {
        emu_sasl_refuse(fd, EMU_SASL_ST_BAD, error,
                        "Client selected unsupported protection: %d",
                        (gint8)sel);
        return FALSE;
    }
    /* The JDK takes the strongest bit the client set, offered or not. */
    c->layer = (sel & EMU_QOP_AUTH_CONF)  ? EMU_QOP_AUTH_CONF
               : (sel & EMU_QOP_AUTH_INT) ? EMU_QOP_AUTH_INT
                                          : EMU_QOP_AUTH;
    /* HBase's callback: no impersonation over SASL. */
    if (strcmp(authzid, peer_name) != 0) {
        emu_sasl_refuse(fd, EMU_SASL_ST_BAD, error,
                        "%s is not authorized to connect as %s", peer_name,
                        authzid);
        return FALSE;
    }
    c->user = emu_gss_short_name(authzid);
    return emu_sasl_send_msg(fd, EMU_SASL_ST_COMPLETE, NULL, 0);
}

static void emu_sasl_set_timeout(int fd, int seconds)
{
    struct timeval tv = { .tv_sec = seconds };

    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
}

/* The steps after START: accept the context, offer, read the choice. */
static gboolean emu_sasl_negotiate(emu_sasl *s, emu_sasl_conn *c, int fd,
                                   gss_cred_id_t cred, GError **error)
{
    g_autofree char *peer_name = NULL;
    int stage = 0; /* 0: context, 1: empty ack, 2: the choice */

    for (;;) {
        guint8 st = 0;
        g_autoptr(GBytes) msg = emu_sasl_recv_msg(fd, &st, error);
        gsize len = 0;
        const void *data;

        if (msg == NULL) {
            return FALSE;
        }
        if (st != EMU_SASL_ST_OK && st != EMU_SASL_ST_COMPLETE) {
            emu_sasl_refuse(fd, EMU_SASL_ST_ERROR, error,
                            "Expected COMPLETE or OK, got %s",
                            emu_sasl_status_names[st]);
            return FALSE;
        }
        data = g_bytes_get_data(msg, &len);
        if (stage == 2) {
            return emu_sasl_choose(s, c, fd, peer_name, msg, error);
        }
        if (stage == 1) {
            if (len > 0) {
                emu_sasl_refuse(fd, EMU_SASL_ST_BAD, error,
                                "Handshake expecting no response data "
                                "from server");
                return FALSE;
            }
            if (!emu_sasl_offer(s, c, fd, error)) {
                return FALSE;
            }
            stage = 2;
            continue;
        }

        gss_buffer_desc in = { len, (void *)data }, out = GSS_C_EMPTY_BUFFER;
        gss_name_t src = GSS_C_NO_NAME;
        OM_uint32 major, minor, flags = 0;
        gboolean sent = TRUE;

        major = gss_accept_sec_context(&minor, &c->ctx, cred, &in,
                                       GSS_C_NO_CHANNEL_BINDINGS, &src, NULL,
                                       &out, &flags, NULL, NULL);
        if (GSS_ERROR(major)) {
            /* HBase's clients see only the JDK's summary; the cause is
             * for the server's log. */
            emu_gss_set_error(error, "accept", major, minor);
            gss_release_buffer(&minor, &out);
            emu_sasl_refuse(fd, EMU_SASL_ST_BAD, NULL, "GSS initiate failed");
            return FALSE;
        }
        if (major == GSS_S_CONTINUE_NEEDED) {
            sent = emu_sasl_send_msg(fd, EMU_SASL_ST_OK, out.value,
                                     out.length);
            gss_release_buffer(&minor, &out);
            if (!sent) {
                return FALSE;
            }
            continue;
        }
        peer_name = emu_gss_display_name(src);
        gss_release_name(&minor, &src);
        if (s->qop != EMU_QOP_AUTH &&
            (flags & (s->qop == EMU_QOP_AUTH_CONF ? GSS_C_CONF_FLAG
                                                  : GSS_C_INTEG_FLAG)) == 0) {
            gss_release_buffer(&minor, &out);
            g_set_error(error, EMU_SASL_ERROR, EMU_SASL_ERROR_REFUSED,
                        "context lacks the protection QOP needs");
            emu_sasl_refuse(fd, EMU_SASL_ST_BAD, NULL, "GSS initiate failed");
            return FALSE;
        }
        if (out.length > 0) {
            /* Mutual authentication: the AP-REP first, the offer after
             * the client's empty answer. */
            sent = emu_sasl_send_msg(fd, EMU_SASL_ST_OK, out.value,
                                     out.length);
            gss_release_buffer(&minor, &out);
            if (!sent) {
                return FALSE;
            }
            stage = 1;
            continue;
        }
        gss_release_buffer(&minor, &out);
        if (!emu_sasl_offer(s, c, fd, error)) {
            return FALSE;
        }
        stage = 2;
    }
}

emu_sasl_conn *emu_sasl_accept(emu_sasl *s, int fd, const char *peer,
                               GError **error)
{
    emu_sasl_conn *c = g_new0(emu_sasl_conn, 1);
    gss_cred_id_t cred = GSS_C_NO_CREDENTIAL;
    g_autoptr(GBytes) start = NULL;
    guint8 st = 0;
    gboolean ok = FALSE;
    OM_uint32 minor;

    c->ctx = GSS_C_NO_CONTEXT;
    emu_sasl_set_timeout(fd, EMU_SASL_HANDSHAKE_TIMEOUT_S);
    start = emu_sasl_recv_msg(fd, &st, error);
    if (start == NULL) {
        goto out;
    }
    if (st != EMU_SASL_ST_START) {
        emu_sasl_refuse(fd, EMU_SASL_ST_ERROR, error,
                        "Expecting START status, received %s",
                        emu_sasl_status_names[st]);
        goto out;
    }
    if (g_bytes_get_size(start) != 6 ||
        memcmp(g_bytes_get_data(start, NULL), "GSSAPI", 6) != 0) {
        g_autofree char *mech = g_strndup(
            g_bytes_get_data(start, NULL),
            MIN(g_bytes_get_size(start), (gsize)64));

        emu_sasl_refuse(fd, EMU_SASL_ST_BAD, error,
                        "Unsupported mechanism type %s", mech);
        goto out;
    }
    /* Per connection: MIT does not promise that one credential may be
     * used by several threads' accepts at once. */
    if (!emu_sasl_acquire(s, &cred, error)) {
        emu_sasl_refuse(fd, EMU_SASL_ST_BAD, NULL, "GSS initiate failed");
        goto out;
    }
    ok = emu_sasl_negotiate(s, c, fd, cred, error);
    gss_release_cred(&minor, &cred);
out:
    emu_sasl_set_timeout(fd, 0);
    if (!ok) {
        emu_sasl_conn_free(c);
        return NULL;
    }
    return c;
}

gboolean emu_sasl_read(emu_sasl_conn *c, int fd, GByteArray *buf, guint32 max,
                       GError **error)
{
    guint8 hdr[4];
    guint32 len;
    gboolean eof;
    guint old = buf->len;

    if (!emu_sasl_recv_all(fd, hdr, 4, &eof, error)) {
        return FALSE;
    }
    len = emu_sasl_be32(hdr);
    if ((gint32)len < 0) {
        g_set_error(error, EMU_SASL_ERROR, EMU_SASL_ERROR_PROTOCOL,
                    "Read a negative frame size (%d)!", (gint32)len);
        return FALSE;
    }
    if ((guint64)len > (guint64)max + EMU_SASL_WRAP_SLACK) {
        g_set_error(error, EMU_SASL_ERROR, EMU_SASL_ERROR_PROTOCOL,
                    "Frame size (%u) larger than max length (%u)", len, max);
        return FALSE;
    }
    g_byte_array_set_size(buf, old + len);
    if (!emu_sasl_recv_all(fd, buf->data + old, len, &eof, error)) {
        g_byte_array_set_size(buf, old);
        if (eof) {
            g_set_error(error, EMU_SASL_ERROR, EMU_SASL_ERROR_CLOSED,
                        "closed inside a frame");
        }
        return FALSE;
    }
    if (c->layer == EMU_QOP_AUTH) {
        return TRUE;
    }

    gss_buffer_desc in = { len, buf->data + old }, out = GSS_C_EMPTY_BUFFER;
    OM_uint32 major, minor;
    int conf = 0;

    major = gss_unwrap(&minor, c->ctx, &in, &out, &conf, NULL);
    /* A replayed, reordered or missing token is as bad as a forged one
     * (the JDK's checkMessageProp). */
    if (major != GSS_S_COMPLETE) {
        emu_gss_set_error(error, "unwrap", major, minor);
        gss_release_buffer(&minor, &out);
        g_byte_array_set_size(buf, old);
        return FALSE;
    }
    if (c->layer == EMU_QOP_AUTH_CONF && !conf) {
        gss_release_buffer(&minor, &out);
        g_byte_array_set_size(buf, old);
        g_set_error(error, EMU_SASL_ERROR, EMU_SASL_ERROR_REFUSED,
                    "Privacy not protected");
        return FALSE;
    }
    g_byte_array_set_size(buf, old);
    if (out.length > 0) {
        g_byte_array_append(buf, out.value, (guint)out.length);
    }
    gss_release_buffer(&minor, &out);
    return TRUE;
}

gboolean emu_sasl_write(emu_sasl_conn *c, int fd, const guint8 *data,
                        gsize len, GError **error)
{
    g_autoptr(GByteArray) f = NULL;
    guint8 hdr[4];

    if (c->layer == EMU_QOP_AUTH) {
        f = g_byte_array_sized_new((guint)len + 4);
        emu_sasl_put_be32(hdr, (guint32)len);
        g_byte_array_append(f, hdr, 4);
        g_byte_array_append(f, data, (guint)len);
    } else {
        gss_buffer_desc in = { len, (void *)data }, out = GSS_C_EMPTY_BUFFER;
        OM_uint32 major, minor;

        major = gss_wrap(&minor, c->ctx, c->layer == EMU_QOP_AUTH_CONF,
                         GSS_C_QOP_DEFAULT, &in, NULL, &out);
        if (GSS_ERROR(major)) {
            emu_gss_set_error(error, "wrap", major, minor);
            return FALSE;
        }
        f = g_byte_array_sized_new((guint)out.length + 4);
        emu_sasl_put_be32(hdr, (guint32)out.length);
        g_byte_array_append(f, hdr, 4);
        g_byte_array_append(f, out.value, (guint)out.length);
        gss_release_buffer(&minor, &out);
    }
    if (!emu_server_send_all(fd, f->data, f->len)) {
        g_set_error(error, EMU_SASL_ERROR, EMU_SASL_ERROR_IO, "send failed");
        return FALSE;
    }
    return TRUE;
}

const char *emu_sasl_conn_user(const emu_sasl_conn *c)
{
    return c->user;
}

void emu_sasl_conn_free(emu_sasl_conn *c)
{
    OM_uint32 minor;

    if (c == NULL) {
        return;
    }
    if (c->ctx != GSS_C_NO_CONTEXT) {
        gss_delete_sec_context(&minor, &c->ctx, GSS_C_NO_BUFFER);
    }
    g_free(c->user);
    g_free(c);
}
