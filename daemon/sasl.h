/* sasl.h: the client side of Thrift's SASL transport with Kerberos (GSSAPI), as a Kerberized HBase Thrift server requires it. */
#pragma once

#include <glib.h>
#include <stddef.h>
#include <stdint.h>

/*
 * No sockets here: the caller moves bytes, this module says what to send
 * and what the bytes it got mean.  The wire (libthrift's TSaslTransport
 * with the GSSAPI mechanism of RFC 4752):
 *
 *   negotiation message: status (1 byte) | length (4, big endian) | payload
 *     C: START "GSSAPI"   C: OK <first context token>
 *     S: OK <token> ... until the context is up (mutual authentication)
 *     C: OK <last token, or empty>
 *     S: OK wrap([layers offered, max buffer])
 *     C: COMPLETE wrap([layer chosen, max buffer])
 *     S: COMPLETE
 *   a refusal: BAD or ERROR with a reason, then the server closes.
 *   then every message is one frame: length (4) | payload, the payload
 *   gss_wrap'ed for auth-int (signed) and auth-conf (sealed).
 */

/* The security layers, as RFC 4752's bitmask. */
typedef enum {
    SASL_QOP_AUTH = 1,      /* authentication only */
    SASL_QOP_AUTH_INT = 2,  /* every message signed */
    SASL_QOP_AUTH_CONF = 4, /* every message sealed */
} sasl_qop_t;

#define SASL_ERROR sasl_error_quark()
GQuark sasl_error_quark(void);

typedef enum {
    SASL_ERROR_CREDENTIALS, /* no ticket for our principal (keytab, KDC) */
    SASL_ERROR_CONTEXT,     /* GSSAPI could not build or use the context */
    SASL_ERROR_REFUSED,     /* the server said BAD or ERROR, or offers
                               another protection */
    SASL_ERROR_PROTOCOL,    /* bytes that are not this protocol */
    SASL_ERROR_EXPIRED,     /* the context's ticket has expired */
} sasl_error_t;

/* "auth" | "auth-int" | "auth-conf" (HBase's hbase.thrift.security.qop). */
gboolean sasl_qop_parse(const char *name, sasl_qop_t *qop);
const char *sasl_qop_name(sasl_qop_t qop);

/*
 * The process's own Kerberos credentials: a ticket-granting ticket for
 * principal from keytab, kept in a memory credential cache of this
 * process (nothing on disk, no KRB5CCNAME).  Any thread; one lock.
 */
struct sasl_creds;

/* Nothing is fetched yet: sasl_creds_renew does that. */
struct sasl_creds *sasl_creds_new(const char *principal, const char *keytab);
void sasl_creds_free(struct sasl_creds *c);

/*
 * Gets a new ticket from the KDC (blocking: one AS exchange) into a fresh
 * cache, and makes it the one new contexts use.  Contexts already
 * established keep working on their own keys; the old cache goes once
 * its last user is gone.  On failure the current ticket, if any, stays,
 * and the error (kinit's words plus a hint) is also kept for
 * sasl_client_new to report.
 */
gboolean sasl_creds_renew(struct sasl_creds *c, GError **error)
    G_GNUC_WARN_UNUSED_RESULT;
/* When the current ticket expires (g_get_real_time() microseconds), 0
 * with none. */
gint64 sasl_creds_expiry(struct sasl_creds *c);
/* When the event loop should call sasl_creds_renew next, same clock: at
 * four fifths of the ticket's life, or soon after a failure. */
gint64 sasl_creds_renew_at(struct sasl_creds *c);
const char *sasl_creds_principal(const struct sasl_creds *c);

/* A negotiation token or SASL frame longer than this is refused. */
#define SASL_MAX_TOKEN (1u << 20)
/* gss_wrap's header, padding and checksum stay well below this. */
#define SASL_WRAP_SLACK 4096u

/* One connection's security context. */
struct sasl_client;

/*
 * For the server principal server (service/host@REALM, see
 * config_sasl_server_principal).  max_message bounds what one incoming
 * frame may hold.
 */
struct sasl_client *sasl_client_new(struct sasl_creds *creds,
                                    const char *server, sasl_qop_t qop,
                                    uint32_t max_message);
void sasl_client_free(struct sasl_client *c);
const char *sasl_client_server_principal(const struct sasl_client *c);

typedef enum {
    SASL_STEP_CONTINUE, /* send what out holds (if anything), feed more */
    SASL_STEP_DONE,     /* negotiated: messages may flow */
    SASL_STEP_FAILED,   /* error says why; close the connection */
} sasl_step_t;

/* The START message and the first context token, appended to out. */
sasl_step_t sasl_client_start(struct sasl_client *c, GByteArray *out,
                              GError **error);
/*
 * Bytes from the server during negotiation.  Takes whole negotiation
 * messages from data; *used says how many bytes (a partial message is
 * left for the next call, with more bytes).  Replies are appended to
 * out.  Bytes after the server's COMPLETE are not taken: they belong to
 * sasl_client_unwrap.
 */
sasl_step_t sasl_client_feed(struct sasl_client *c, const uint8_t *data,
                             size_t len, size_t *used, GByteArray *out,
                             GError **error);
/* The layer in force once DONE. */
sasl_qop_t sasl_client_qop(const struct sasl_client *c);
/* Whether the messages need gss_wrap (auth-int, auth-conf). */
gboolean sasl_client_wraps(const struct sasl_client *c);
/* When the context expires (g_get_real_time() us), G_MAXINT64 if never. */
gint64 sasl_client_expiry(const struct sasl_client *c);

/* Outgoing bytes (one message or several) as one frame, appended to
 * out. */
gboolean sasl_client_wrap(struct sasl_client *c, const uint8_t *msg,
                          size_t len, GByteArray *out, GError **error);
/*
 * A frame's total size (header included) from its first 4 bytes: the
 * length is checked against max_message (plus the wrap's overhead).
 */
gboolean sasl_client_frame_size(const struct sasl_client *c,
                                const uint8_t hdr[4], size_t *size,
                                GError **error);
/*
 * Incoming bytes: takes every whole frame data holds (*used bytes) and
 * appends their payloads, unwrapped and checked, to out.  A partial
 * frame at the end is left for later.  FALSE on a bad frame (forged,
 * replayed, not sealed under auth-conf, too long): close the connection.
 */
gboolean sasl_client_unwrap(struct sasl_client *c, const uint8_t *data,
                            size_t len, size_t *used, GByteArray *out,
                            GError **error);

/*
 * A SPNEGO token (base64, for "Authorization: Negotiate ...") for the
 * server principal server (HTTP/host@REALM), from creds' ticket: HBase's
 * HTTP mode asks one of every request.  g_free; NULL with the reason.
 */
char *sasl_spnego_token(struct sasl_creds *creds, const char *server,
                        GError **error);
