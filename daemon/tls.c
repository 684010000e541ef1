/* tls.c: the TLS listener's server context (certificate, key, client CA), built from files and rebuilt on reload. */
#include "tls.h"

#include <stdio.h>
#include <string.h>

#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

G_DEFINE_QUARK(tls_error_quark, tls_error)

void
tls_last_error(char *buf, size_t len, const char *fallback)
{
    unsigned long e = ERR_get_error();

    if (e == 0) {
        g_strlcpy(buf, fallback, len);
    } else {
        ERR_error_string_n(e, buf, len);
    }
    ERR_clear_error();
}

static void
tls_set_error(GError **error, tls_error_t code, const char *what,
              const char *path)
{
    char why[256];

    tls_last_error(why, sizeof(why), "unreadable");
    g_set_error(error, TLS_ERROR, code, "%s %s: %s", what, path, why);
}

static EVP_PKEY *
tls_read_key(const char *path)
{
    FILE *f = fopen(path, "r");
    EVP_PKEY *pkey;

    if (f == NULL) {
        return NULL;
    }
    pkey = PEM_read_PrivateKey(f, NULL, NULL, NULL);
    fclose(f);
    return pkey;
}

SSL_CTX *
tls_server_ctx_new(const char *cert, const char *key, const char *client_ca,
                   GError **error)
{
    SSL_CTX *ctx = SSL_CTX_new(TLS_server_method());
    EVP_PKEY *pkey = NULL;

    ERR_clear_error();
    if (ctx == NULL) {
        tls_set_error(error, TLS_ERROR_FILE, "OpenSSL:", "SSL_CTX_new");
        return NULL;
    }
    SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
    /* the listener serves long-lived connections: no session cache to
     * share or leak between clients */
    SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_OFF);
    /* a client that hangs up without close_notify has only closed its
     * connection, as over plain TCP */
    SSL_CTX_set_options(ctx, SSL_OP_NO_RENEGOTIATION |
                                 SSL_OP_IGNORE_UNEXPECTED_EOF);
    if (SSL_CTX_use_certificate_chain_file(ctx, cert) != 1) {
        tls_set_error(error, TLS_ERROR_FILE, "[tls] cert", cert);
        goto fail;
    }
    /* the key's own parse errors can quote its bytes: only the reason */
    pkey = tls_read_key(key);
    if (pkey == NULL) {
        ERR_clear_error();
        g_set_error(error, TLS_ERROR, TLS_ERROR_FILE,
                    "[tls] key %s: not a readable, unencrypted PEM private "
                    "key",
                    key);
        goto fail;
    }
    if (SSL_CTX_use_PrivateKey(ctx, pkey) != 1 ||
        SSL_CTX_check_private_key(ctx) != 1) {
        ERR_clear_error();
        g_set_error(error, TLS_ERROR, TLS_ERROR_MATCH,
                    "[tls] key %s is not the key of the certificate in %s",
                    key, cert);
        goto fail;
    }
    if (client_ca != NULL) {
        STACK_OF(X509_NAME) *names = SSL_load_client_CA_file(client_ca);

        if (names == NULL ||
            SSL_CTX_load_verify_locations(ctx, client_ca, NULL) != 1) {
            if (names != NULL) {
                sk_X509_NAME_pop_free(names, X509_NAME_free);
            }
            tls_set_error(error, TLS_ERROR_FILE, "[tls] client_ca", client_ca);
            goto fail;
        }
        SSL_CTX_set_client_CA_list(ctx, names);
        SSL_CTX_set_verify(ctx,
                           SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT,
                           NULL);
    }
    EVP_PKEY_free(pkey);
    return ctx;
fail:
    EVP_PKEY_free(pkey);
    SSL_CTX_free(ctx);
    return NULL;
}

char *
tls_ctx_describe(SSL_CTX *ctx)
{
    X509 *x = SSL_CTX_get0_certificate(ctx);
    char subject[256] = "?";
    g_autofree char *serial = NULL;

    if (x == NULL) {
        return g_strdup("no certificate");
    }
    X509_NAME_oneline(X509_get_subject_name(x), subject, sizeof(subject));
    {
        BIGNUM *bn = ASN1_INTEGER_to_BN(X509_get0_serialNumber(x), NULL);
        char *hex = bn != NULL ? BN_bn2hex(bn) : NULL;

        serial = g_strdup(hex != NULL ? hex : "?");
        OPENSSL_free(hex);
        BN_free(bn);
    }
    return g_strdup_printf("%s, serial %s", subject, serial);
}

/* ---- plain Thrift on the TLS listener ---------------------------------- */

static void
tls_head_cb(int write_p, int version, int content_type, const void *buf,
            size_t len, SSL *ssl, void *arg)
{
    struct tls_head *head = arg;

    if (!write_p && content_type == SSL3_RT_HEADER && len >= 5 &&
        head->len == 0) {
        memcpy(head->b, buf, 5);
        head->len = 5;
    }
}

void
tls_head_watch(SSL *ssl, struct tls_head *head)
{
    head->len = 0;
    SSL_set_msg_callback_arg(ssl, head);
    SSL_set_msg_callback(ssl, tls_head_cb);
}

void
tls_head_unwatch(SSL *ssl)
{
    /* a call per record otherwise, for the connection's life */
    SSL_set_msg_callback(ssl, NULL);
    SSL_set_msg_callback_arg(ssl, NULL);
}

gboolean
tls_head_is_thrift(const struct tls_head *head, wire_proto_t *proto,
                   gboolean *framed)
{
    const uint8_t *b = head->b;

    if (head->len < 5) {
        return FALSE;
    }
    *framed = FALSE;
    if (b[0] == 0x00 && (b[4] == 0x80 || b[4] == 0x82)) {
        /* a frame's length (under 16 MiB), then a message: no TLS record
         * starts with 0 */
        *framed = TRUE;
        *proto = b[4] == 0x82 ? WIRE_COMPACT : WIRE_BINARY;
        return TRUE;
    }
    if (b[0] == 0x80 && b[1] == 0x01) {
        *proto = WIRE_BINARY;
        return TRUE;
    }
    if (b[0] == 0x82) {
        *proto = WIRE_COMPACT;
        return TRUE;
    }
    return FALSE;
}

void
tls_plain_answer(wire_proto_t proto, gboolean framed, struct wire_buf *out)
{
    struct wire_writer w;
    size_t at = 0;

    if (framed) {
        at = wire_frame_begin(out);
    }
    wire_writer_init(&w, proto, out);
    /* no name or sequence id to echo (only the record header was kept):
     * clients raise an exception reply before comparing either */
    wire_write_app_exception(
        &w, (const uint8_t *)"", 0, 0, WIRE_APP_PROTOCOL_ERROR,
        "hbase-salt-proxy: this port is the TLS "
        "listener and the client spoke plain Thrift: " TLS_PLAIN_ADVICE);
    if (framed) {
        wire_frame_end(out, at);
    }
}
