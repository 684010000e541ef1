/* emu_sasl.h: the server side of Thrift's SASL transport (GSSAPI only), as HBase runs it with hbase.thrift.security.qop. */
#pragma once

#include <glib.h>

/* SASL GSSAPI security layers (RFC 4752 bitmask values).  HBase offers
 * exactly one: the one hbase.thrift.security.qop names. */
typedef enum {
    EMU_QOP_AUTH = 1,      /* authentication only, no security layer */
    EMU_QOP_AUTH_INT = 2,  /* every message signed (gss_wrap, no conf) */
    EMU_QOP_AUTH_CONF = 4, /* every message sealed (gss_wrap with conf) */
} emu_qop_t;

#define EMU_SASL_ERROR (emu_sasl_error_quark())
GQuark emu_sasl_error_quark(void);

typedef enum {
    EMU_SASL_ERROR_REFUSED,  /* authentication or authorization failed */
    EMU_SASL_ERROR_PROTOCOL, /* malformed negotiation or frame */
    EMU_SASL_ERROR_CLOSED,   /* the client hung up or gave up */
    EMU_SASL_ERROR_IO,       /* socket error */
} emu_sasl_error_t;

typedef struct emu_sasl emu_sasl;           /* per listener */
typedef struct emu_sasl_conn emu_sasl_conn; /* per connection */

/* "auth" | "auth-int" | "auth-conf". */
gboolean emu_sasl_parse_qop(const char *name, emu_qop_t *qop);

/* Checks now that keytab holds principal's keys, so a bad setup fails at
 * startup rather than on the first client. */
emu_sasl *emu_sasl_new(const char *principal, const char *keytab,
                       emu_qop_t qop, GError **error)
    G_GNUC_WARN_UNUSED_RESULT;
void emu_sasl_free(emu_sasl *s);

/* Runs the negotiation on the connected socket fd (blocking).  A client
 * that fails gets the BAD or ERROR status with the reason HBase gives,
 * and NULL comes back; the caller closes fd. */
emu_sasl_conn *emu_sasl_accept(emu_sasl *s, int fd, const char *peer,
                               GError **error) G_GNUC_WARN_UNUSED_RESULT;
/* Reads one length-prefixed frame and appends its payload, unwrapped when
 * a security layer is on, to buf.  FALSE at EOF (error left unset) or on
 * a bad frame; max bounds the payload. */
gboolean emu_sasl_read(emu_sasl_conn *c, int fd, GByteArray *buf, guint32 max,
                       GError **error);
/* Sends data as one frame, wrapped when a security layer is on. */
gboolean emu_sasl_write(emu_sasl_conn *c, int fd, const guint8 *data,
                        gsize len, GError **error);
/* The authenticated user's short name, as HBase logs it. */
const char *emu_sasl_conn_user(const emu_sasl_conn *c);
void emu_sasl_conn_free(emu_sasl_conn *c);
