/* tls.h: the TLS listener's server context (certificate, key, client CA), built from files and rebuilt on reload. */
#pragma once

#include <glib.h>

#include <openssl/ssl.h>

#include "wire.h"

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

/*
 * Plain Thrift on the TLS listener: a client that forgot TLS sends a
 * Thrift message where a ClientHello belongs.  OpenSSL fails it as
 * "wrong version number", sends no alert (the bytes do not look like
 * TLS) and the client, reading EOF, says "unexpected exception".  The
 * first record header OpenSSL reads is kept here so the failure can be
 * told apart and answered in the client's own protocol.
 */
struct tls_head {
    uint8_t b[5]; /* a TLS record header: 0x16 0x03 ... for a ClientHello */
    uint8_t len;  /* 5 once read, 0 before */
};

/* Keeps the first record header ssl reads in head (a message callback,
 * until tls_head_unwatch). */
void tls_head_watch(SSL *ssl, struct tls_head *head);
void tls_head_unwatch(SSL *ssl);

/*
 * Whether head is the start of a Thrift message, not of a TLS record:
 * strict binary (0x80 0x01), compact (0x82) or either framed (a 4-byte
 * length below 16 MiB, then 0x80 or 0x82).  Fills proto and framed.
 */
gboolean tls_head_is_thrift(const struct tls_head *head, wire_proto_t *proto,
                            gboolean *framed);

/* The answer to such a client, in its protocol and framing: a
 * TApplicationException (PROTOCOL_ERROR) that says what to do. */
void tls_plain_answer(wire_proto_t proto, gboolean framed,
                      struct wire_buf *out);

/* Its text, also the log line's advice. */
#define TLS_PLAIN_ADVICE "connect with TLS or use the plain listener"
