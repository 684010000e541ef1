/* sasl_driver.c: a blocking driver of daemon/sasl.c's client state machine, for test_sasl_client.py to run against hbase-emu and hand-made servers. */
#include <errno.h>
#include <netdb.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <glib.h>

#include "sasl.h"

/*
 * Prints one line per step, "ok ..." or "error CODE: message", so the
 * test reads what an operator would.  --calls N sends N getTableNames
 * (Thrift1 binary, unframed) over the negotiated connection; --renew
 * renews the credentials between two connections, keeping the first
 * one open and using it after.
 */

static char *opt_connect, *opt_principal, *opt_keytab, *opt_server;
static char *opt_qop = "auth";
static int opt_calls = 1, opt_max = 1 << 20;
static gboolean opt_renew;

static const char *
error_code_name(const GError *e)
{
    static const char *const names[] = {
        [SASL_ERROR_CREDENTIALS] = "credentials",
        [SASL_ERROR_CONTEXT] = "context",
        [SASL_ERROR_REFUSED] = "refused",
        [SASL_ERROR_PROTOCOL] = "protocol",
        [SASL_ERROR_EXPIRED] = "expired",
    };

    if (e->domain != SASL_ERROR || e->code < 0 ||
        (size_t)e->code >= G_N_ELEMENTS(names)) {
        return "other";
    }
    return names[e->code];
}

static int
report(const GError *e)
{
    printf("error %s: %s\n", error_code_name(e), e->message);
    return 1;
}

static int
dial(const char *hostport)
{
    g_autofree char *host = g_strdup(hostport);
    char *colon = strrchr(host, ':');
    struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *ai = NULL;
    int fd;

    if (colon == NULL) {
        return -1;
    }
    *colon = '\0';
    if (getaddrinfo(host, colon + 1, &hints, &ai) != 0) {
        return -1;
    }
    fd = socket(ai->ai_family, SOCK_STREAM, 0);
    if (fd >= 0 && connect(fd, ai->ai_addr, ai->ai_addrlen) != 0) {
        close(fd);
        fd = -1;
    }
    freeaddrinfo(ai);
    return fd;
}

static gboolean
send_all(int fd, const guint8 *p, gsize len)
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

/* Appends what one recv gives; FALSE at EOF or error. */
static gboolean
recv_some(int fd, GByteArray *in)
{
    guint8 buf[16384];
    ssize_t n;

    do {
        n = recv(fd, buf, sizeof(buf), 0);
    } while (n < 0 && errno == EINTR);
    if (n <= 0) {
        return FALSE;
    }
    g_byte_array_append(in, buf, (guint)n);
    return TRUE;
}

struct conn {
    int fd;
    struct sasl_client *sc;
    GByteArray *in; /* raw bytes not yet taken */
};

static void
conn_close(struct conn *c)
{
    if (c->fd >= 0) {
        close(c->fd);
    }
    sasl_client_free(c->sc);
    if (c->in != NULL) {
        g_byte_array_unref(c->in);
    }
    memset(c, 0, sizeof(*c));
    c->fd = -1;
}

static gboolean
negotiate(struct conn *c, struct sasl_creds *creds, sasl_qop_t qop,
          GError **error)
{
    g_autoptr(GByteArray) out = g_byte_array_new();
    sasl_step_t st;

    c->in = g_byte_array_new();
    c->fd = dial(opt_connect);
    if (c->fd < 0) {
        g_set_error(error, G_FILE_ERROR, G_FILE_ERROR_IO,
                    "cannot connect to %s", opt_connect);
        return FALSE;
    }
    c->sc = sasl_client_new(creds, opt_server, qop, (guint32)opt_max);
    st = sasl_client_start(c->sc, out, error);
    while (st == SASL_STEP_CONTINUE) {
        size_t used = 0;

        if (out->len > 0 && !send_all(c->fd, out->data, out->len)) {
            g_set_error(error, G_FILE_ERROR, G_FILE_ERROR_IO,
                        "send failed during negotiation");
            return FALSE;
        }
        g_byte_array_set_size(out, 0);
        if (!recv_some(c->fd, c->in)) {
            g_set_error(error, G_FILE_ERROR, G_FILE_ERROR_IO,
                        "the server closed during negotiation");
            return FALSE;
        }
        st = sasl_client_feed(c->sc, c->in->data, c->in->len, &used, out,
                              error);
        g_byte_array_remove_range(c->in, 0, (guint)used);
    }
    if (st == SASL_STEP_FAILED) {
        /* a refusal may still owe the server our last message */
        if (out->len > 0) {
            send_all(c->fd, out->data, out->len);
        }
        return FALSE;
    }
    return TRUE;
}

/* One getTableNames call, binary protocol, seqid n. */
static void
build_call(GByteArray *m, guint32 seqid)
{
    static const guint8 head[] = { 0x80, 0x01, 0x00, 0x01, 0, 0, 0, 13 };
    guint8 sid[4] = { seqid >> 24, seqid >> 16, seqid >> 8, seqid };

    g_byte_array_append(m, head, sizeof(head));
    g_byte_array_append(m, (const guint8 *)"getTableNames", 13);
    g_byte_array_append(m, sid, 4);
    g_byte_array_append(m, (const guint8 *)"\0", 1); /* T_STOP */
}

/* The reply to build_call: a list of binary names, read to the end. */
static gboolean
reply_complete(const GByteArray *r, gsize *names_at)
{
    /* version 4 | name len 4 | name 13 | seqid 4 | field: type 1 id 2 |
     * list: elem type 1 | count 4 | (len 4 | bytes)* | STOP (field 0 and
     * struct) */
    gsize pos = 8 + 13 + 4;
    guint32 n;

    if (r->len < pos + 3 + 5) {
        return FALSE;
    }
    pos += 3;
    n = (guint32)r->data[pos + 1] << 24 | (guint32)r->data[pos + 2] << 16 |
        (guint32)r->data[pos + 3] << 8 | r->data[pos + 4];
    *names_at = pos + 5;
    pos += 5;
    for (guint32 i = 0; i < n; i++) {
        guint32 l;

        if (r->len < pos + 4) {
            return FALSE;
        }
        l = (guint32)r->data[pos] << 24 | (guint32)r->data[pos + 1] << 16 |
            (guint32)r->data[pos + 2] << 8 | r->data[pos + 3];
        if (r->len - pos - 4 < l) {
            return FALSE;
        }
        pos += 4 + l;
    }
    return r->len >= pos + 1;
}

static gboolean
call(struct conn *c, guint32 seqid, GError **error)
{
    g_autoptr(GByteArray) msg = g_byte_array_new();
    g_autoptr(GByteArray) frame = g_byte_array_new();
    g_autoptr(GByteArray) reply = g_byte_array_new();
    gsize names_at = 0;

    build_call(msg, seqid);
    if (!sasl_client_wrap(c->sc, msg->data, msg->len, frame, error)) {
        return FALSE;
    }
    if (!send_all(c->fd, frame->data, frame->len)) {
        g_set_error(error, G_FILE_ERROR, G_FILE_ERROR_IO, "send failed");
        return FALSE;
    }
    for (;;) {
        size_t used = 0;

        if (!sasl_client_unwrap(c->sc, c->in->data, c->in->len, &used, reply,
                                error)) {
            return FALSE;
        }
        g_byte_array_remove_range(c->in, 0, (guint)used);
        if (reply_complete(reply, &names_at)) {
            break;
        }
        if (!recv_some(c->fd, c->in)) {
            g_set_error(error, G_FILE_ERROR, G_FILE_ERROR_IO,
                        "the server closed before the reply was complete");
            return FALSE;
        }
    }
    if (memmem(reply->data + names_at, reply->len - names_at, "\0\0\0\1t",
               5) == NULL) {
        g_set_error(error, G_FILE_ERROR, G_FILE_ERROR_IO,
                    "getTableNames reply lacks table t");
        return FALSE;
    }
    return TRUE;
}

int
main(int argc, char **argv)
{
    GOptionEntry entries[] = {
        { "connect", 0, 0, G_OPTION_ARG_STRING, &opt_connect, "", "H:P" },
        { "principal", 0, 0, G_OPTION_ARG_STRING, &opt_principal, "", "P" },
        { "keytab", 0, 0, G_OPTION_ARG_STRING, &opt_keytab, "", "F" },
        { "server", 0, 0, G_OPTION_ARG_STRING, &opt_server, "", "P" },
        { "qop", 0, 0, G_OPTION_ARG_STRING, &opt_qop, "", "Q" },
        { "calls", 0, 0, G_OPTION_ARG_INT, &opt_calls, "", "N" },
        { "max", 0, 0, G_OPTION_ARG_INT, &opt_max, "", "BYTES" },
        { "renew", 0, 0, G_OPTION_ARG_NONE, &opt_renew, "", NULL },
        { NULL, 0, 0, 0, NULL, NULL, NULL },
    };
    g_autoptr(GOptionContext) ctx = g_option_context_new("");
    g_autoptr(GError) error = NULL;
    struct sasl_creds *creds;
    struct conn a = { .fd = -1 }, b = { .fd = -1 };
    sasl_qop_t qop;
    gint64 exp1;
    int rc = 1;

    g_option_context_add_main_entries(ctx, entries, NULL);
    if (!g_option_context_parse(ctx, &argc, &argv, &error) ||
        opt_connect == NULL || opt_principal == NULL || opt_keytab == NULL ||
        opt_server == NULL || !sasl_qop_parse(opt_qop, &qop)) {
        fprintf(stderr, "usage: see sasl_driver.c\n");
        return 2;
    }
    creds = sasl_creds_new(opt_principal, opt_keytab);
    if (!sasl_creds_renew(creds, &error)) {
        rc = report(error);
        /* contexts then fail with the same reason */
        g_clear_error(&error);
        if (!negotiate(&a, creds, qop, &error)) {
            printf("then: error %s: %s\n", error_code_name(error),
                   error->message);
        }
        goto out;
    }
    exp1 = sasl_creds_expiry(creds);
    printf("ok ticket: expires in %" G_GINT64_FORMAT
           " s, renew in %" G_GINT64_FORMAT " s\n",
           (exp1 - g_get_real_time()) / G_USEC_PER_SEC,
           (sasl_creds_renew_at(creds) - g_get_real_time()) / G_USEC_PER_SEC);
    if (!negotiate(&a, creds, qop, &error)) {
        rc = report(error);
        goto out;
    }
    printf("ok negotiated %s with %s\n", sasl_qop_name(sasl_client_qop(a.sc)),
           sasl_client_server_principal(a.sc));
    for (int i = 0; i < opt_calls; i++) {
        if (!call(&a, (guint32)i, &error)) {
            rc = report(error);
            goto out;
        }
    }
    printf("ok %d calls\n", opt_calls);
    if (opt_renew) {
        g_usleep(1100 * 1000); /* a later expiry, to the second */
        if (!sasl_creds_renew(creds, &error)) {
            rc = report(error);
            goto out;
        }
        printf("ok renewed: expiry %s\n",
               sasl_creds_expiry(creds) > exp1 ? "later" : "NOT later");
        if (!negotiate(&b, creds, qop, &error) || !call(&b, 1, &error) ||
            !call(&a, 99, &error)) {
            rc = report(error);
            goto out;
        }
        printf("ok new and old connections after renewal\n");
    }
    rc = 0;
out:
    conn_close(&a);
    conn_close(&b);
    sasl_creds_free(creds);
    return rc;
}
