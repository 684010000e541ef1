/* tls.h: the TLS listener's server context (certificate, key, client CA), built from files and rebuilt on reload. */
#pragma once

#include <glib.h>

#include <openssl/ssl.h>

#define TLS_ERROR tls_error_quark()
GQuark tls_error_quark(void);

typedef enum {
    TLS_ERROR_FILE,  /* a file cannot be read or parsed */
    TLS_ERROR_MATCH, /* the key is not the certificate's */
} tls_error_t;

/*
 * A server context for TLS 1.2 and later: cert is a PEM chain (leaf
 * first), key its PEM private key (unencrypted: the daemon has no one to
 * ask for a passphrase), client_ca, when not NULL, the PEM CA(s) every
 * client certificate must chain to (clients without one are refused).
 * The error names the file and OpenSSL's reason, never key material.
 */
SSL_CTX *tls_server_ctx_new(const char *cert, const char *key,
                            const char *client_ca, GError **error)
    G_GNUC_WARN_UNUSED_RESULT;

/* The oldest OpenSSL error queued on this thread, as text (the queue is
 * emptied), or fallback when there is none. */
void tls_last_error(char *buf, size_t len, const char *fallback);

/* The certificate's subject and serial, for the log: "CN=..., serial 1F". */
char *tls_ctx_describe(SSL_CTX *ctx);
