/* emu_gss.c: MIT GSSAPI helpers the emulator's SASL and SPNEGO acceptors share. */
#include "emu_gss.h"

#include <string.h>

#include <gssapi/gssapi_ext.h>
#include <gssapi/gssapi_krb5.h>

G_DEFINE_QUARK(emu_gss_error_quark, emu_gss_error)

/* 1.3.6.1.5.5.2: MIT's headers do not export SPNEGO's OID. */
static gss_OID_desc emu_gss_spnego_oid = {
    6, (void *)"\x2b\x06\x01\x05\x05\x02"
};

static char *emu_gss_part(OM_uint32 code, int type)
{
    GString *s = g_string_new(NULL);
    OM_uint32 ctx = 0, minor;

    do {
        gss_buffer_desc b = GSS_C_EMPTY_BUFFER;

        if (GSS_ERROR(gss_display_status(&minor, code, type, GSS_C_NO_OID,
                                         &ctx, &b))) {
            break;
        }
        if (s->len > 0) {
            g_string_append(s, ": ");
        }
        g_string_append_len(s, b.value, (gssize)b.length);
        gss_release_buffer(&minor, &b);
    } while (ctx != 0);
    return g_string_free(s, FALSE);
}

/* The mechanism's detail alone when the major code is the generic
 * "Unspecified GSS failure"; a minor code that maps to nothing reads
 * "Success" and is dropped. */
char *emu_gss_error_text(OM_uint32 major, OM_uint32 minor)
{
    g_autofree char *maj = emu_gss_part(major, GSS_C_GSS_CODE);
    g_autofree char *min = minor != 0 ? emu_gss_part(minor, GSS_C_MECH_CODE)
                                      : NULL;

    if (min == NULL || *min == '\0' || strcmp(min, "Success") == 0) {
        return g_steal_pointer(&maj);
    }
    if (GSS_ROUTINE_ERROR(major) == GSS_S_FAILURE) {
        return g_steal_pointer(&min);
    }
    return g_strdup_printf("%s: %s", maj, min);
}

void emu_gss_set_error(GError **error, const char *what, OM_uint32 major,
                       OM_uint32 minor)
{
    g_autofree char *text = emu_gss_error_text(major, minor);

    g_set_error(error, EMU_GSS_ERROR, EMU_GSS_ERROR_FAILED, "%s: %s", what,
                text);
}

gboolean emu_gss_acquire(const char *principal, const char *keytab,
                         gboolean spnego, gss_cred_id_t *cred, GError **error)
{
    gss_key_value_element_desc el = { "keytab", keytab };
    gss_key_value_set_desc store = { 1, &el };
    gss_buffer_desc nb = { strlen(principal), (void *)principal };
    gss_OID_desc oids[2] = { *gss_mech_krb5, emu_gss_spnego_oid };
    gss_OID_set_desc mechs = { spnego ? 2 : 1, oids };
    gss_name_t name = GSS_C_NO_NAME;
    OM_uint32 major, minor, min2;

    major = gss_import_name(&minor, &nb, GSS_KRB5_NT_PRINCIPAL_NAME, &name);
    if (GSS_ERROR(major)) {
        emu_gss_set_error(error, principal, major, minor);
        return FALSE;
    }
    major = gss_acquire_cred_from(&minor, name, GSS_C_INDEFINITE, &mechs,
                                  GSS_C_ACCEPT, &store, cred, NULL, NULL);
    gss_release_name(&min2, &name);
    if (GSS_ERROR(major)) {
        emu_gss_set_error(error, keytab, major, minor);
        return FALSE;
    }
    return TRUE;
}

gboolean emu_gss_check_keytab(const char *principal, const char *keytab,
                              GError **error)
{
    gss_cred_id_t cred = GSS_C_NO_CREDENTIAL;
    OM_uint32 major, minor, min2;

    if (!emu_gss_acquire(principal, keytab, FALSE, &cred, error)) {
        return FALSE;
    }
    /* gss_acquire_cred_from defers reading the keytab; asking for the
     * credential's lifetime makes it look for the principal's key now. */
    major = gss_inquire_cred_by_mech(&minor, cred, gss_mech_krb5, NULL, NULL,
                                     NULL, NULL);
    gss_release_cred(&min2, &cred);
    if (GSS_ERROR(major)) {
        emu_gss_set_error(error, keytab, major, minor);
        return FALSE;
    }
    return TRUE;
}

char *emu_gss_display_name(gss_name_t name)
{
    gss_buffer_desc b = GSS_C_EMPTY_BUFFER;
    OM_uint32 minor;
    char *s;

    if (GSS_ERROR(gss_display_name(&minor, name, &b, NULL))) {
        return g_strdup("?");
    }
    s = g_strndup(b.value, b.length);
    gss_release_buffer(&minor, &b);
    return s;
}

char *emu_gss_short_name(const char *principal)
{
    return g_strndup(principal, strcspn(principal, "/@"));
}
