/* emu_spnego.h: the Kerberos check HBase's Thrift HTTP servlet makes of each request's Authorization header. */
#pragma once

#include <glib.h>

typedef struct emu_spnego emu_spnego;

/* principal is the servlet's (hbase.thrift.spnego.principal, e.g.
 * HTTP/host@REALM), keytab holds its keys; checked now. */
emu_spnego *emu_spnego_new(const char *principal, const char *keytab,
                           GError **error) G_GNUC_WARN_UNUSED_RESULT;
void emu_spnego_free(emu_spnego *s);

/* One request's Authorization header value, checked as HBase does: the
 * first ten characters are skipped whatever they say ("Negotiate "), the
 * rest is base64 of a Kerberos or SPNEGO initial token, and the context
 * must complete in that one step (every request stands alone: no
 * continuation, no cookie).  On success *user is the client's short name
 * and *reply_token the base64 of the acceptor's output token, NULL when
 * there is none.  On failure error says why, in words for the 401 body. */
gboolean emu_spnego_check(emu_spnego *s, const char *header, char **user,
                          char **reply_token, GError **error);
