/* emu_spnego.c: the Kerberos check HBase's Thrift HTTP servlet makes of each request's Authorization header. */
#include "emu_spnego.h"

#include <stdarg.h>
#include <string.h>

#include "emu_gss.h"

struct emu_spnego {
    char *principal;
    char *keytab; /* read per request, as a rotated keytab is */
};

/* The tokens of one request: an AP-REQ with a PAC is a few KiB, and the
 * HTTP header limit (64 KiB) bounds the header before it gets here. */
#define EMU_SPNEGO_MAX_HEADER (64u * 1024u)

emu_spnego *emu_spnego_new(const char *principal, const char *keytab,
                           GError **error)
{
    emu_spnego *s;

    if (!emu_gss_check_keytab(principal, keytab, error)) {
        return NULL;
    }
    s = g_new0(emu_spnego, 1);
    s->principal = g_strdup(principal);
    s->keytab = g_strdup(keytab);
    return s;
}

void emu_spnego_free(emu_spnego *s)
{
    if (s == NULL) {
        return;
    }
    g_free(s->principal);
    g_free(s->keytab);
    g_free(s);
}

/* The JDK's basic decoder: the base64 alphabet, '=' only as padding at
 * the end; anything else (spaces included) is refused. */
static gboolean emu_spnego_b64_valid(const char *p)
{
    gsize n = strlen(p), pad = 0;

    while (n > 0 && p[n - 1] == '=' && pad < 2) {
        n--;
        pad++;
    }
    if (n % 4 == 1) {
        return FALSE;
    }
    for (gsize i = 0; i < n; i++) {
        if (!g_ascii_isalnum(p[i]) && p[i] != '+' && p[i] != '/') {
            return FALSE;
        }
    }
    return TRUE;
}

static void emu_spnego_fail(GError **error, const char *fmt, ...)
    G_GNUC_PRINTF(2, 3);

static void emu_spnego_fail(GError **error, const char *fmt, ...)
{
    va_list ap;
    g_autofree char *msg = NULL;

    va_start(ap, fmt);
    msg = g_strdup_vprintf(fmt, ap);
    va_end(ap);
    g_set_error_literal(error, EMU_GSS_ERROR, EMU_GSS_ERROR_FAILED, msg);
}

gboolean emu_spnego_check(emu_spnego *s, const char *header, char **user,
                          char **reply_token, GError **error)
{
    const char *b64;
    g_autofree guint8 *token = NULL;
    gsize token_len = 0;
    gss_cred_id_t cred = GSS_C_NO_CREDENTIAL;
    gss_ctx_id_t ctx = GSS_C_NO_CONTEXT;
    gss_buffer_desc in, out = GSS_C_EMPTY_BUFFER;
    gss_name_t src = GSS_C_NO_NAME;
    OM_uint32 major, minor, min2;
    g_autoptr(GError) err = NULL;
    g_autofree char *name = NULL;

    *user = NULL;
    *reply_token = NULL;
    if (header == NULL || *header == '\0') {
        emu_spnego_fail(error, "Authorization header received from the "
                               "client is empty.");
        return FALSE;
    }
    /* HBase takes substring(10) without looking at the scheme; a shorter
     * header throws, which the servlet turns into the same 401. */
    if (strlen(header) < 10 || strlen(header) > EMU_SPNEGO_MAX_HEADER) {
        emu_spnego_fail(error, "Kerberos authentication failed: malformed "
                               "Authorization header");
        return FALSE;
    }
    b64 = header + 10;
    if (*b64 == '\0') {
        emu_spnego_fail(error, "Authorization header received from the "
                               "client does not contain any data.");
        return FALSE;
    }
    if (!emu_spnego_b64_valid(b64)) {
        emu_spnego_fail(error, "Kerberos authentication failed: Illegal "
                               "base64 character");
        return FALSE;
    }
    token = g_base64_decode(b64, &token_len);
    if (token == NULL || token_len == 0) {
        emu_spnego_fail(error, "Kerberos authentication failed: empty token");
        return FALSE;
    }
    /* Per request, as HBase builds its credential per request; MIT does
     * not promise one credential may serve several threads at once. */
    if (!emu_gss_acquire(s->principal, s->keytab, TRUE, &cred, &err)) {
        emu_spnego_fail(error, "Kerberos authentication failed: %s",
                        err->message);
        return FALSE;
    }
    in.length = token_len;
    in.value = token;
    major = gss_accept_sec_context(&minor, &ctx, cred, &in,
                                   GSS_C_NO_CHANNEL_BINDINGS, &src, NULL, &out,
                                   NULL, NULL, NULL);
    gss_release_cred(&min2, &cred);
    if (GSS_ERROR(major)) {
        g_autofree char *text = emu_gss_error_text(major, minor);

        gss_release_buffer(&min2, &out);
        if (ctx != GSS_C_NO_CONTEXT) {
            gss_delete_sec_context(&min2, &ctx, GSS_C_NO_BUFFER);
        }
        emu_spnego_fail(error, "Kerberos authentication failed: %s", text);
        return FALSE;
    }
    if (major != GSS_S_COMPLETE) {
        /* A second leg would need a second request, which HBase's servlet
         * never ties to the first. */
        gss_release_buffer(&min2, &out);
        gss_delete_sec_context(&min2, &ctx, GSS_C_NO_BUFFER);
        if (src != GSS_C_NO_NAME) {
            gss_release_name(&min2, &src);
        }
        emu_spnego_fail(error, "Kerberos authentication failed: unable to "
                               "establish context with the service ticket "
                               "provided by the client.");
        return FALSE;
    }
    name = emu_gss_display_name(src);
    gss_release_name(&min2, &src);
    if (out.length > 0) {
        *reply_token = g_base64_encode(out.value, out.length);
    }
    gss_release_buffer(&min2, &out);
    gss_delete_sec_context(&min2, &ctx, GSS_C_NO_BUFFER);
    *user = emu_gss_short_name(name);
    return TRUE;
}
