/* emu_gss.h: MIT GSSAPI helpers the emulator's SASL and SPNEGO acceptors share. */
#pragma once

#include <glib.h>

#include <gssapi/gssapi.h>

#define EMU_GSS_ERROR (emu_gss_error_quark())
GQuark emu_gss_error_quark(void);

typedef enum {
    EMU_GSS_ERROR_FAILED, /* a GSSAPI call failed; the message says why */
} emu_gss_error_t;

/* MIT's own wording of a status pair ("Clock skew too great", "Request is
 * a replay", ...): what an operator needs, never key material. */
char *emu_gss_error_text(OM_uint32 major, OM_uint32 minor);
/* Sets error to "what: <MIT's text>". */
void emu_gss_set_error(GError **error, const char *what, OM_uint32 major,
                       OM_uint32 minor);

/* The acceptor credential for principal from keytab only (never the
 * default keytab, never another principal in the file), for the Kerberos
 * mechanism and, with spnego, SPNEGO too. */
gboolean emu_gss_acquire(const char *principal, const char *keytab,
                         gboolean spnego, gss_cred_id_t *cred, GError **error);
/* Fails now, rather than at the first client, when keytab lacks
 * principal's keys. */
gboolean emu_gss_check_keytab(const char *principal, const char *keytab,
                              GError **error);

/* "user@REALM" as MIT displays a name; "?" if it cannot. */
char *emu_gss_display_name(gss_name_t name);
/* "app/host@REALM" -> "app", as HBase's SecurityUtil.getUserFromPrincipal. */
char *emu_gss_short_name(const char *principal);
