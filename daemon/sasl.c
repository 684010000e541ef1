/* sasl.c: the client side of Thrift's SASL transport with Kerberos (GSSAPI), as a Kerberized HBase Thrift server requires it. */
#include "sasl.h"

#include <errno.h>
#include <string.h>
#include <unistd.h>

#include <gssapi/gssapi.h>
#include <gssapi/gssapi_ext.h>
#include <gssapi/gssapi_krb5.h>
#include <krb5.h>

#include "config.h"

G_DEFINE_QUARK(sasl_error_quark, sasl_error)

enum {
    SASL_ST_START = 1,
    SASL_ST_OK = 2,
    SASL_ST_BAD = 3,
    SASL_ST_ERROR = 4,
    SASL_ST_COMPLETE = 5,
};

/* The receive buffer size we announce (RFC 4752: 3 bytes). */
#define SASL_MAX_BUF 0xffffffu
/* After a failed renewal, try again this soon. */
#define SASL_RETRY_US (5 * G_USEC_PER_SEC)
/* The floor under a renewal time, so a ticket of a few seconds does not
 * make the loop spin. */
#define SASL_MIN_RENEW_US (2 * G_USEC_PER_SEC)

gboolean
sasl_qop_parse(const char *name, sasl_qop_t *qop)
{
    if (g_strcmp0(name, "auth") == 0) {
        *qop = SASL_QOP_AUTH;
    } else if (g_strcmp0(name, "auth-int") == 0) {
        *qop = SASL_QOP_AUTH_INT;
    } else if (g_strcmp0(name, "auth-conf") == 0) {
        *qop = SASL_QOP_AUTH_CONF;
    } else {
        return FALSE;
    }
    return TRUE;
}

/* config_qop_t holds the same bits on purpose (config.h): one table of
 * names for both. */
G_STATIC_ASSERT((int)SASL_QOP_AUTH == (int)CONFIG_QOP_AUTH);
G_STATIC_ASSERT((int)SASL_QOP_AUTH_INT == (int)CONFIG_QOP_AUTH_INT);
G_STATIC_ASSERT((int)SASL_QOP_AUTH_CONF == (int)CONFIG_QOP_AUTH_CONF);

const char *
sasl_qop_name(sasl_qop_t qop)
{
    return config_qop_name((config_qop_t)qop);
}

/* "auth, auth-conf" for a bitmask of layers. */
static char *
sasl_layers_text(unsigned layers)
{
    GString *s = g_string_new(NULL);
    static const sasl_qop_t all[] = { SASL_QOP_AUTH, SASL_QOP_AUTH_INT,
                                      SASL_QOP_AUTH_CONF };

    for (size_t i = 0; i < G_N_ELEMENTS(all); i++) {
        if (layers & all[i]) {
            g_string_append_printf(s, "%s%s", s->len > 0 ? ", " : "",
                                   sasl_qop_name(all[i]));
        }
    }
    if (s->len == 0) {
        g_string_append_printf(s, "none (0x%02x)", layers);
    }
    return g_string_free(s, FALSE);
}

/* ---------------------------------------------------------------------
 * GSSAPI status as text
 */

static void
sasl_status_part(GString *s, OM_uint32 code, int type)
{
    OM_uint32 more = 0, minor;

    do {
        gss_buffer_desc b = GSS_C_EMPTY_BUFFER;

        if (GSS_ERROR(gss_display_status(&minor, code, type, GSS_C_NO_OID,
                                         &more, &b))) {
            break;
        }
        if (s->len > 0) {
            g_string_append(s, ": ");
        }
        g_string_append_len(s, b.value, (gssize)b.length);
        gss_release_buffer(&minor, &b);
    } while (more != 0);
}

/* What to do about the common causes, in an operator's words. */
static const char *
sasl_hint(OM_uint32 minor)
{
    switch ((krb5_error_code)minor) {
    case KRB5KRB_AP_ERR_SKEW:
        return "the clocks of this host and the KDC or the server differ "
               "by more than the allowed skew (krb5.conf clockskew): "
               "synchronise them (NTP)";
    case KRB5_KT_NOTFOUND:
    case KRB5_KT_KVNONOTFOUND:
        return "the keytab holds no key for this principal: check "
               "sasl_principal and sasl_keytab; klist -k -t KEYTAB lists "
               "what it holds";
    case ENOENT:
    case KRB5_KT_END: return "check sasl_keytab";
    case KRB5KDC_ERR_S_PRINCIPAL_UNKNOWN:
        return "the KDC knows no such server principal: check "
               "sasl_service and the host name (sasl_server_host) against "
               "the server's hbase.thrift.kerberos.principal";
    case KRB5KDC_ERR_C_PRINCIPAL_UNKNOWN:
        return "the KDC does not know sasl_principal";
    case KRB5KDC_ERR_PREAUTH_FAILED:
    case KRB5KRB_AP_ERR_BAD_INTEGRITY:
        return "the keytab's keys are not the KDC's current ones: was the "
               "principal's key changed after the keytab was made?";
    case KRB5KRB_AP_ERR_TKT_EXPIRED: return "the ticket expired";
    case KRB5_KDC_UNREACH:
        return "no KDC of the realm answered (krb5.conf [realms] kdc)";
    case KRB5_REALM_UNKNOWN:
    case KRB5_REALM_CANT_RESOLVE:
        return "krb5.conf does not say where the realm's KDC is";
    default: return NULL;
    }
}

/*
 * MIT's own text, as kinit prints it: the mechanism's detail alone when
 * the major code is the generic "Unspecified GSS failure", and a hint
 * for the causes an operator can fix.
 */
static char *
sasl_status_text(OM_uint32 major, OM_uint32 minor)
{
    GString *maj = g_string_new(NULL), *min = g_string_new(NULL);
    const char *hint = minor != 0 ? sasl_hint(minor) : NULL;
    char *out;

    sasl_status_part(maj, major, GSS_C_GSS_CODE);
    if (minor != 0) {
        sasl_status_part(min, minor, GSS_C_MECH_CODE);
    }
    if (min->len == 0 || strcmp(min->str, "Success") == 0) {
        out = g_strdup(maj->str);
    } else if (GSS_ROUTINE_ERROR(major) == GSS_S_FAILURE ||
               GSS_ROUTINE_ERROR(major) == GSS_S_NO_CRED) {
        out = g_strdup(min->str);
    } else {
        out = g_strdup_printf("%s: %s", maj->str, min->str);
    }
    g_string_free(maj, TRUE);
    g_string_free(min, TRUE);
    if (hint != NULL) {
        char *t = g_strdup_printf("%s (%s)", out, hint);

        g_free(out);
        out = t;
    }
    return out;
}

static void
sasl_set_gss_error(GError **error, sasl_error_t code, const char *what,
                   OM_uint32 major, OM_uint32 minor)
{
    g_autofree char *text = sasl_status_text(major, minor);

    if (GSS_ROUTINE_ERROR(major) == GSS_S_CONTEXT_EXPIRED ||
        GSS_ROUTINE_ERROR(major) == GSS_S_CREDENTIALS_EXPIRED ||
        (krb5_error_code)minor == KRB5KRB_AP_ERR_TKT_EXPIRED) {
        code = SASL_ERROR_EXPIRED;
    }
    g_set_error(error, SASL_ERROR, code, "%s: %s", what, text);
}

/* ---------------------------------------------------------------------
 * The process's credentials
 */

/* One ticket, in a memory cache of its own; shared by the contexts
 * being built on it. */
struct sasl_ticket {
    gint refs;
    gss_cred_id_t cred;
    char *ccache;  /* "MEMORY:hsp-sasl-PID-N" */
    gint64 expiry; /* real time us; G_MAXINT64: never */
};

struct sasl_creds {
    GMutex lock;
    char *principal;
    char *keytab;
    struct sasl_ticket *cur; /* NULL until a renewal worked */
    unsigned generation;     /* of the last cache made */
    gint64 renew_at;
    char *last_error; /* why the last renewal failed; NULL if
                                   it worked */
};

static void
sasl_ticket_unref(struct sasl_ticket *t)
{
    OM_uint32 minor;
    krb5_context kctx = NULL;
    krb5_ccache cc = NULL;

    if (t == NULL || !g_atomic_int_dec_and_test(&t->refs)) {
        return;
    }
    if (t->cred != GSS_C_NO_CREDENTIAL) {
        gss_release_cred(&minor, &t->cred);
    }
    /* a memory cache lives until destroyed, not until closed */
    if (krb5_init_context(&kctx) == 0) {
        if (krb5_cc_resolve(kctx, t->ccache, &cc) == 0) {
            krb5_cc_destroy(kctx, cc);
        }
        krb5_free_context(kctx);
    }
    g_free(t->ccache);
    g_free(t);
}

static struct sasl_ticket *
sasl_ticket_ref(struct sasl_ticket *t)
{
    g_atomic_int_inc(&t->refs);
    return t;
}

struct sasl_creds *
sasl_creds_new(const char *principal, const char *keytab)
{
    struct sasl_creds *c = g_new0(struct sasl_creds, 1);

    g_mutex_init(&c->lock);
    c->principal = g_strdup(principal);
    c->keytab = g_strdup(keytab);
    c->last_error = g_strdup("no Kerberos ticket yet");
    return c;
}

void
sasl_creds_free(struct sasl_creds *c)
{
    if (c == NULL) {
        return;
    }
    sasl_ticket_unref(c->cur);
    g_free(c->principal);
    g_free(c->keytab);
    g_free(c->last_error);
    g_mutex_clear(&c->lock);
    g_free(c);
}

const char *
sasl_creds_principal(const struct sasl_creds *c)
{
    return c->principal;
}

/*
 * Why keytab cannot give principal a ticket, when the reason is in the
 * keytab itself: GSSAPI then reports only that no credentials were
 * found, kinit says which key is missing.
 */
static gboolean
sasl_keytab_check(const char *principal, const char *keytab, const char *what,
                  GError **error)
{
    krb5_context kctx = NULL;
    krb5_keytab kt = NULL;
    krb5_principal p = NULL;
    krb5_keytab_entry entry;
    krb5_error_code e;
    g_autofree char *name = g_strconcat("FILE:", keytab, NULL);

    if (krb5_init_context(&kctx) != 0) {
        return TRUE;
    }
    e = krb5_parse_name(kctx, principal, &p);
    if (e == 0) {
        e = krb5_kt_resolve(kctx, name, &kt);
    }
    if (e == 0) {
        e = krb5_kt_get_entry(kctx, kt, p, 0, 0, &entry);
        if (e == 0) {
            krb5_free_keytab_entry_contents(kctx, &entry);
        }
    }
    if (e != 0) {
        const char *msg = krb5_get_error_message(kctx, e);
        const char *hint = sasl_hint((OM_uint32)e);

        g_set_error(error, SASL_ERROR, SASL_ERROR_CREDENTIALS, "%s: %s%s%s%s",
                    what, msg, hint != NULL ? " (" : "",
                    hint != NULL ? hint : "", hint != NULL ? ")" : "");
        krb5_free_error_message(kctx, msg);
    }
    if (kt != NULL) {
        krb5_kt_close(kctx, kt);
    }
    krb5_free_principal(kctx, p);
    krb5_free_context(kctx);
    return e == 0;
}

/* A ticket for the principal from the keytab, into cache (blocking). */
static struct sasl_ticket *
sasl_ticket_get(const char *principal, const char *keytab, const char *ccache,
                GError **error)
{
    gss_key_value_element_desc el[2] = { { "client_keytab", keytab },
                                         { "ccache", ccache } };
    gss_key_value_set_desc store = { 2, el };
    gss_buffer_desc nb = { strlen(principal), (void *)principal };
    /* Kerberos for SASL, SPNEGO (1.3.6.1.5.5.2) for HBase's HTTP mode */
    gss_OID_desc oids[2] = { *gss_mech_krb5,
                             { 6, (void *)"\x2b\x06\x01\x05\x05\x02" } };
    gss_OID_set_desc mechs = { 2, oids };
    gss_name_t name = GSS_C_NO_NAME;
    gss_cred_id_t cred = GSS_C_NO_CREDENTIAL;
    OM_uint32 major, minor, min2, life = 0;
    struct sasl_ticket *t;
    g_autofree char *what =
        g_strdup_printf("cannot get a Kerberos ticket for %s with keytab %s",
                        principal, keytab);

    major = gss_import_name(&minor, &nb, GSS_KRB5_NT_PRINCIPAL_NAME, &name);
    if (GSS_ERROR(major)) {
        sasl_set_gss_error(error, SASL_ERROR_CREDENTIALS, what, major, minor);
        return NULL;
    }
    major = gss_acquire_cred_from(&minor, name, GSS_C_INDEFINITE, &mechs,
                                  GSS_C_INITIATE, &store, &cred, NULL, NULL);
    gss_release_name(&min2, &name);
    if (!GSS_ERROR(major)) {
        /* acquiring from a keytab into an empty cache defers the AS
         * exchange; asking for the lifetime does it now */
        major = gss_inquire_cred_by_mech(&minor, cred, gss_mech_krb5, NULL,
                                         &life, NULL, NULL);
    }
    if (GSS_ERROR(major) || life == 0) {
        if (!GSS_ERROR(major)) {
            major = GSS_S_CREDENTIALS_EXPIRED;
        }
        if (sasl_keytab_check(principal, keytab, what, error)) {
            sasl_set_gss_error(error, SASL_ERROR_CREDENTIALS, what, major,
                               minor);
        }
        if (cred != GSS_C_NO_CREDENTIAL) {
            gss_release_cred(&min2, &cred);
        }
        return NULL;
    }
    t = g_new0(struct sasl_ticket, 1);
    t->refs = 1;
    t->cred = cred;
    t->ccache = g_strdup(ccache);
    t->expiry = life == GSS_C_INDEFINITE
                    ? G_MAXINT64
                    : g_get_real_time() + (gint64)life * G_USEC_PER_SEC;
    return t;
}

/* A cache name nothing else in the process uses.  Memory caches are
 * process-wide by name, and a ticket destroys its cache when its last
 * reference goes: the number must be unique across every sasl_creds (the
 * workers', and each short-lived one of the table catalog's connections),
 * or freeing one would destroy another's cache under it. */
static char *
sasl_creds_next_ccache(struct sasl_creds *c)
{
    static gint seq;
    unsigned gen = (unsigned)g_atomic_int_add(&seq, 1) + 1;

    g_mutex_lock(&c->lock);
    c->generation = gen;
    g_mutex_unlock(&c->lock);
    return g_strdup_printf("MEMORY:hsp-sasl-%ld-%u", (long)getpid(), gen);
}

gboolean
sasl_creds_renew(struct sasl_creds *c, GError **error)
{
    g_autofree char *ccache = sasl_creds_next_ccache(c);
    g_autoptr(GError) err = NULL;
    struct sasl_ticket *t, *old = NULL;
    gint64 now;

    /* the KDC exchange runs without the lock: contexts being built keep
     * using the current ticket meanwhile */
    t = sasl_ticket_get(c->principal, c->keytab, ccache, &err);
    now = g_get_real_time();
    g_mutex_lock(&c->lock);
    if (t != NULL) {
        gint64 life = t->expiry == G_MAXINT64 ? G_MAXINT64 / 2
                                              : t->expiry - now;

        old = c->cur;
        c->cur = t;
        c->renew_at = now + MAX(life / 5 * 4, SASL_MIN_RENEW_US);
        g_clear_pointer(&c->last_error, g_free);
    } else {
        g_free(c->last_error);
        c->last_error = g_strdup(err->message);
        c->renew_at = now + SASL_RETRY_US;
        /* a ticket that expires before the retry still serves until then */
        if (c->cur != NULL && c->cur->expiry > now) {
            c->renew_at = MIN(c->renew_at,
                              MAX(now + SASL_MIN_RENEW_US,
                                  c->cur->expiry - SASL_RETRY_US));
        }
    }
    g_mutex_unlock(&c->lock);
    sasl_ticket_unref(old);
    if (t == NULL) {
        g_propagate_error(error, g_steal_pointer(&err));
        return FALSE;
    }
    return TRUE;
}

gint64
sasl_creds_expiry(struct sasl_creds *c)
{
    g_autoptr(GMutexLocker) locked = g_mutex_locker_new(&c->lock);

    return c->cur != NULL ? c->cur->expiry : 0;
}

gint64
sasl_creds_renew_at(struct sasl_creds *c)
{
    g_autoptr(GMutexLocker) locked = g_mutex_locker_new(&c->lock);

    return c->renew_at;
}

/* The current ticket (a reference), or NULL with the reason. */
static struct sasl_ticket *
sasl_creds_take(struct sasl_creds *c, GError **error)
{
    struct sasl_ticket *t = NULL;

    g_mutex_lock(&c->lock);
    if (c->cur != NULL && c->cur->expiry > g_get_real_time()) {
        t = sasl_ticket_ref(c->cur);
    } else {
        g_set_error(error, SASL_ERROR, SASL_ERROR_CREDENTIALS, "%s",
                    c->last_error != NULL
                        ? c->last_error
                        : "the Kerberos ticket expired and was not renewed");
    }
    g_mutex_unlock(&c->lock);
    return t;
}

/* ---------------------------------------------------------------------
 * One connection
 */

typedef enum {
    SASL_STATE_NEW,
    SASL_STATE_CONTEXT,  /* building the context */
    SASL_STATE_OFFER,    /* waiting for the server's layers */
    SASL_STATE_COMPLETE, /* chose; waiting for COMPLETE */
    SASL_STATE_DONE,
    SASL_STATE_FAILED,
} sasl_state_t;

struct sasl_client {
    struct sasl_creds *creds;
    struct sasl_ticket *ticket; /* while negotiating */
    char *target;               /* service/host@REALM */
    sasl_qop_t qop;             /* asked for, then in force */
    uint32_t max_message;
    sasl_state_t state;
    gss_ctx_id_t ctx;
    gint64 expiry;
};

struct sasl_client *
sasl_client_new(struct sasl_creds *creds, const char *server, sasl_qop_t qop,
                uint32_t max_message)
{
    struct sasl_client *c = g_new0(struct sasl_client, 1);

    c->creds = creds;
    c->target = g_strdup(server);
    c->qop = qop;
    c->max_message = max_message;
    c->state = SASL_STATE_NEW;
    c->ctx = GSS_C_NO_CONTEXT;
    c->expiry = G_MAXINT64;
    return c;
}

void
sasl_client_free(struct sasl_client *c)
{
    OM_uint32 minor;

    if (c == NULL) {
        return;
    }
    if (c->ctx != GSS_C_NO_CONTEXT) {
        gss_delete_sec_context(&minor, &c->ctx, GSS_C_NO_BUFFER);
    }
    sasl_ticket_unref(c->ticket);
    g_free(c->target);
    g_free(c);
}

const char *
sasl_client_server_principal(const struct sasl_client *c)
{
    return c->target;
}

sasl_qop_t
sasl_client_qop(const struct sasl_client *c)
{
    return c->qop;
}

gboolean
sasl_client_wraps(const struct sasl_client *c)
{
    return c->qop != SASL_QOP_AUTH;
}

gint64
sasl_client_expiry(const struct sasl_client *c)
{
    return c->expiry;
}

static void
sasl_put_be32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)(v >> 24);
    p[1] = (uint8_t)(v >> 16);
    p[2] = (uint8_t)(v >> 8);
    p[3] = (uint8_t)v;
}

static uint32_t
sasl_be32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 |
           p[3];
}

static void
sasl_put_msg(GByteArray *out, uint8_t status, const void *data, size_t len)
{
    uint8_t hdr[5] = { status };

    sasl_put_be32(hdr + 1, (uint32_t)len);
    g_byte_array_append(out, hdr, 5);
    if (len > 0) {
        g_byte_array_append(out, data, (guint)len);
    }
}

static sasl_step_t
sasl_client_fail(struct sasl_client *c)
{
    c->state = SASL_STATE_FAILED;
    g_clear_pointer(&c->ticket, sasl_ticket_unref);
    return SASL_STEP_FAILED;
}

/* One step of gss_init_sec_context; the token out goes in an OK. */
static sasl_step_t
sasl_client_step(struct sasl_client *c, const void *in, size_t inlen,
                 GByteArray *out, GError **error)
{
    gss_buffer_desc ib = { inlen, (void *)in }, ob = GSS_C_EMPTY_BUFFER;
    gss_buffer_desc nb = { strlen(c->target), c->target };
    gss_name_t target = GSS_C_NO_NAME;
    OM_uint32 major, minor, min2, flags = 0, life = 0;
    g_autofree char *what = NULL;

    major = gss_import_name(&minor, &nb, GSS_KRB5_NT_PRINCIPAL_NAME, &target);
    if (!GSS_ERROR(major)) {
        major = gss_init_sec_context(&minor, c->ticket->cred, &c->ctx, target,
                                     gss_mech_krb5,
                                     GSS_C_MUTUAL_FLAG | GSS_C_REPLAY_FLAG |
                                         GSS_C_SEQUENCE_FLAG |
                                         GSS_C_INTEG_FLAG | GSS_C_CONF_FLAG,
                                     0, GSS_C_NO_CHANNEL_BINDINGS,
                                     inlen > 0 ? &ib : GSS_C_NO_BUFFER, NULL,
                                     &ob, &flags, &life);
    }
    gss_release_name(&min2, &target);
    if (GSS_ERROR(major)) {
        gss_release_buffer(&min2, &ob);
        what = g_strdup_printf("cannot authenticate to %s as %s", c->target,
                               c->creds->principal);
        sasl_set_gss_error(error, SASL_ERROR_CONTEXT, what, major, minor);
        return sasl_client_fail(c);
    }
    if (ob.length > SASL_MAX_TOKEN) {
        gss_release_buffer(&min2, &ob);
        g_set_error(error, SASL_ERROR, SASL_ERROR_CONTEXT,
                    "context token for %s too long", c->target);
        return sasl_client_fail(c);
    }
    sasl_put_msg(out, SASL_ST_OK, ob.value, ob.length);
    gss_release_buffer(&min2, &ob);
    if (major == GSS_S_CONTINUE_NEEDED) {
        c->state = SASL_STATE_CONTEXT;
        return SASL_STEP_CONTINUE;
    }
    if (c->qop != SASL_QOP_AUTH &&
        (flags & (c->qop == SASL_QOP_AUTH_CONF ? GSS_C_CONF_FLAG
                                               : GSS_C_INTEG_FLAG)) == 0) {
        g_set_error(error, SASL_ERROR, SASL_ERROR_CONTEXT,
                    "the security context with %s offers no %s protection",
                    c->target, sasl_qop_name(c->qop));
        return sasl_client_fail(c);
    }
    if (life != GSS_C_INDEFINITE) {
        c->expiry = g_get_real_time() + (gint64)life * G_USEC_PER_SEC;
    }
    c->state = SASL_STATE_OFFER;
    return SASL_STEP_CONTINUE;
}

sasl_step_t
sasl_client_start(struct sasl_client *c, GByteArray *out, GError **error)
{
    g_return_val_if_fail(c->state == SASL_STATE_NEW, SASL_STEP_FAILED);
    c->ticket = sasl_creds_take(c->creds, error);
    if (c->ticket == NULL) {
        return sasl_client_fail(c);
    }
    sasl_put_msg(out, SASL_ST_START, "GSSAPI", 6);
    return sasl_client_step(c, NULL, 0, out, error);
}

/* The server's layers and buffer size; our choice goes back sealed in
 * a COMPLETE (what libthrift's client sends once its side is done). */
static sasl_step_t
sasl_client_choose(struct sasl_client *c, const uint8_t *p, size_t len,
                   GByteArray *out, GError **error)
{
    gss_buffer_desc in = { len, (void *)p }, plain = GSS_C_EMPTY_BUFFER;
    gss_buffer_desc wrapped = GSS_C_EMPTY_BUFFER;
    OM_uint32 major, minor, min2;
    uint8_t choice[4], offered;
    g_autofree char *what = NULL;

    major = gss_unwrap(&minor, c->ctx, &in, &plain, NULL, NULL);
    if (major != GSS_S_COMPLETE || plain.length != 4) {
        gss_release_buffer(&min2, &plain);
        if (major == GSS_S_COMPLETE) {
            g_set_error(error, SASL_ERROR, SASL_ERROR_PROTOCOL,
                        "%s offered its security layers in %zu bytes, not "
                        "4",
                        c->target, (size_t)plain.length);
        } else {
            what = g_strdup_printf("cannot read the security layers %s "
                                   "offers",
                                   c->target);
            sasl_set_gss_error(error, SASL_ERROR_CONTEXT, what, major, minor);
        }
        return sasl_client_fail(c);
    }
    offered = ((const uint8_t *)plain.value)[0];
    gss_release_buffer(&min2, &plain);
    if ((offered & c->qop) == 0) {
        g_autofree char *layers = sasl_layers_text(offered);

        g_set_error(error, SASL_ERROR, SASL_ERROR_REFUSED,
                    "%s requires SASL protection %s, the proxy asks for %s: "
                    "set [backend] sasl_qop to the server's "
                    "hbase.thrift.security.qop",
                    c->target, layers, sasl_qop_name(c->qop));
        return sasl_client_fail(c);
    }
    sasl_put_be32(choice, MIN(SASL_MAX_BUF, c->max_message + SASL_WRAP_SLACK));
    choice[0] = (uint8_t)c->qop;
    in.length = sizeof(choice);
    in.value = choice;
    major = gss_wrap(&minor, c->ctx, 0, GSS_C_QOP_DEFAULT, &in, NULL,
                     &wrapped);
    if (GSS_ERROR(major)) {
        sasl_set_gss_error(error, SASL_ERROR_CONTEXT,
                           "cannot seal the security layer choice", major,
                           minor);
        return sasl_client_fail(c);
    }
    sasl_put_msg(out, SASL_ST_COMPLETE, wrapped.value, wrapped.length);
    gss_release_buffer(&min2, &wrapped);
    c->state = SASL_STATE_COMPLETE;
    return SASL_STEP_CONTINUE;
}

/* The server's reason, printable and short. */
static char *
sasl_reason(const uint8_t *p, size_t len)
{
    GString *s = g_string_new(NULL);

    for (size_t i = 0; i < len && s->len < 300; i++) {
        if (p[i] >= 0x20 && p[i] < 0x7f) {
            g_string_append_c(s, (char)p[i]);
        } else {
            g_string_append_printf(s, "\\x%02x", p[i]);
        }
    }
    return g_string_free(s, FALSE);
}

static sasl_step_t
sasl_client_message(struct sasl_client *c, uint8_t status, const uint8_t *p,
                    size_t len, GByteArray *out, GError **error)
{
    if (status == SASL_ST_BAD || status == SASL_ST_ERROR) {
        g_autofree char *why = sasl_reason(p, len);
        /* HBase tells a client no more than this; the cause is in its log */
        gboolean gss = strcmp(why, "GSS initiate failed") == 0;

        g_set_error(error, SASL_ERROR, SASL_ERROR_REFUSED,
                    "%s refused the SASL negotiation (%s): %s%s", c->target,
                    status == SASL_ST_BAD ? "BAD" : "ERROR", why,
                    gss ? " (the server could not accept our ticket: its "
                          "keytab lacks the current key of that principal, "
                          "or its clock and the KDC's differ; the server's "
                          "log says which)"
                        : "");
        return sasl_client_fail(c);
    }
    if (status == SASL_ST_START ||
        (status == SASL_ST_COMPLETE) != (c->state == SASL_STATE_COMPLETE)) {
        g_set_error(error, SASL_ERROR, SASL_ERROR_PROTOCOL,
                    "%s sent SASL status %u out of turn", c->target, status);
        return sasl_client_fail(c);
    }
    switch (c->state) {
    case SASL_STATE_CONTEXT: return sasl_client_step(c, p, len, out, error);
    case SASL_STATE_OFFER: return sasl_client_choose(c, p, len, out, error);
    case SASL_STATE_COMPLETE:
        c->state = SASL_STATE_DONE;
        g_clear_pointer(&c->ticket, sasl_ticket_unref);
        return SASL_STEP_DONE;
    default:
        g_set_error(error, SASL_ERROR, SASL_ERROR_PROTOCOL,
                    "SASL negotiation with %s fed after its end", c->target);
        return sasl_client_fail(c);
    }
}

sasl_step_t
sasl_client_feed(struct sasl_client *c, const uint8_t *data, size_t len,
                 size_t *used, GByteArray *out, GError **error)
{
    size_t pos = 0;
    sasl_step_t st = SASL_STEP_CONTINUE;

    *used = 0;
    if (c->state == SASL_STATE_DONE) {
        return SASL_STEP_DONE;
    }
    if (c->state == SASL_STATE_NEW || c->state == SASL_STATE_FAILED) {
        g_set_error(error, SASL_ERROR, SASL_ERROR_PROTOCOL,
                    "SASL negotiation with %s not under way", c->target);
        return SASL_STEP_FAILED;
    }
    while (st == SASL_STEP_CONTINUE && len - pos >= 5) {
        uint8_t status = data[pos];
        uint32_t n = sasl_be32(data + pos + 1);

        if (status < SASL_ST_START || status > SASL_ST_COMPLETE) {
            g_set_error(error, SASL_ERROR, SASL_ERROR_PROTOCOL,
                        "%s does not speak SASL (status byte 0x%02x): is "
                        "its hbase.thrift.security.qop set?",
                        c->target, status);
            return sasl_client_fail(c);
        }
        if (n > SASL_MAX_TOKEN) {
            g_set_error(error, SASL_ERROR, SASL_ERROR_PROTOCOL,
                        "%s sent a SASL negotiation message of %u bytes "
                        "(at most %u)",
                        c->target, n, SASL_MAX_TOKEN);
            return sasl_client_fail(c);
        }
        if (len - pos - 5 < n) {
            break;
        }
        st = sasl_client_message(c, status, data + pos + 5, n, out, error);
        pos += 5 + (size_t)n;
    }
    *used = pos;
    return st;
}

gboolean
sasl_client_wrap(struct sasl_client *c, const uint8_t *msg, size_t len,
                 GByteArray *out, GError **error)
{
    gss_buffer_desc in = { len, (void *)msg }, ob = GSS_C_EMPTY_BUFFER;
    OM_uint32 major, minor, min2;
    uint8_t hdr[4];

    g_return_val_if_fail(c->state == SASL_STATE_DONE, FALSE);
    /* several messages may share a frame: only the frame's own length
     * field bounds it */
    if (len > (size_t)G_MAXINT32 - SASL_WRAP_SLACK) {
        g_set_error(error, SASL_ERROR, SASL_ERROR_PROTOCOL,
                    "%zu bytes are too many for one SASL frame", len);
        return FALSE;
    }
    if (c->qop == SASL_QOP_AUTH) {
        sasl_put_be32(hdr, (uint32_t)len);
        g_byte_array_append(out, hdr, 4);
        g_byte_array_append(out, msg, (guint)len);
        return TRUE;
    }
    major = gss_wrap(&minor, c->ctx, c->qop == SASL_QOP_AUTH_CONF,
                     GSS_C_QOP_DEFAULT, &in, NULL, &ob);
    if (GSS_ERROR(major)) {
        g_autofree char *what =
            g_strdup_printf("cannot protect a message to %s", c->target);

        sasl_set_gss_error(error, SASL_ERROR_CONTEXT, what, major, minor);
        return FALSE;
    }
    sasl_put_be32(hdr, (uint32_t)ob.length);
    g_byte_array_append(out, hdr, 4);
    g_byte_array_append(out, ob.value, (guint)ob.length);
    gss_release_buffer(&min2, &ob);
    return TRUE;
}

gboolean
sasl_client_frame_size(const struct sasl_client *c, const uint8_t hdr[4],
                       size_t *size, GError **error)
{
    uint32_t n = sasl_be32(hdr);
    guint64 max = (guint64)c->max_message +
                  (c->qop == SASL_QOP_AUTH ? 0 : SASL_WRAP_SLACK);

    if ((guint64)n > max) {
        if (n & 0x80000000u) {
            g_set_error(error, SASL_ERROR, SASL_ERROR_PROTOCOL,
                        "%s sent a SASL frame of negative length (%d)",
                        c->target, (gint32)n);
        } else {
            g_set_error(
                error, SASL_ERROR, SASL_ERROR_PROTOCOL,
                "%s sent a SASL frame of %u bytes (at most %" G_GUINT64_FORMAT
                ")",
                c->target, n, max);
        }
        return FALSE;
    }
    *size = 4 + (size_t)n;
    return TRUE;
}

gboolean
sasl_client_unwrap(struct sasl_client *c, const uint8_t *data, size_t len,
                   size_t *used, GByteArray *out, GError **error)
{
    size_t pos = 0, size;

    g_return_val_if_fail(c->state == SASL_STATE_DONE, FALSE);
    *used = 0;
    while (len - pos >= 4) {
        gss_buffer_desc in, ob = GSS_C_EMPTY_BUFFER;
        OM_uint32 major, minor, min2;
        int conf = 0;

        if (!sasl_client_frame_size(c, data + pos, &size, error)) {
            return FALSE;
        }
        if (len - pos < size) {
            break;
        }
        if (c->qop == SASL_QOP_AUTH) {
            g_byte_array_append(out, data + pos + 4, (guint)(size - 4));
            pos += size;
            *used = pos;
            continue;
        }
        in.length = size - 4;
        in.value = (void *)(data + pos + 4);
        major = gss_unwrap(&minor, c->ctx, &in, &ob, &conf, NULL);
        /* a replayed, reordered or lost frame is as bad as a forged one */
        if (major != GSS_S_COMPLETE) {
            g_autofree char *what =
                g_strdup_printf("a SASL frame from %s fails its check",
                                c->target);

            gss_release_buffer(&min2, &ob);
            if (GSS_ERROR(major)) {
                sasl_set_gss_error(error, SASL_ERROR_CONTEXT, what, major,
                                   minor);
            } else {
                g_set_error(error, SASL_ERROR, SASL_ERROR_PROTOCOL,
                            "%s: replayed or out of order", what);
            }
            return FALSE;
        }
        if ((c->qop == SASL_QOP_AUTH_CONF && !conf) ||
            ob.length > c->max_message) {
            if (conf || c->qop != SASL_QOP_AUTH_CONF) {
                g_set_error(error, SASL_ERROR, SASL_ERROR_PROTOCOL,
                            "a SASL frame from %s unwraps to %zu bytes (at "
                            "most %u)",
                            c->target, (size_t)ob.length, c->max_message);
            } else {
                g_set_error(error, SASL_ERROR, SASL_ERROR_PROTOCOL,
                            "a SASL frame from %s is not sealed under "
                            "auth-conf",
                            c->target);
            }
            gss_release_buffer(&min2, &ob);
            return FALSE;
        }
        g_byte_array_append(out, ob.value, (guint)ob.length);
        gss_release_buffer(&min2, &ob);
        pos += size;
        *used = pos;
    }
    return TRUE;
}

/* ---------------------------------------------------------------------
 * SPNEGO, for HBase's HTTP mode
 */

char *
sasl_spnego_token(struct sasl_creds *creds, const char *server, GError **error)
{
    /* SPNEGO's OID, 1.3.6.1.5.5.2 */
    static gss_OID_desc spnego = { 6, (void *)"\x2b\x06\x01\x05\x05\x02" };
    gss_buffer_desc nb = { strlen(server), (void *)server };
    gss_buffer_desc ob = GSS_C_EMPTY_BUFFER;
    gss_name_t target = GSS_C_NO_NAME;
    gss_ctx_id_t ctx = GSS_C_NO_CONTEXT;
    OM_uint32 major, minor, min2;
    struct sasl_ticket *t = sasl_creds_take(creds, error);
    char *b64 = NULL;

    if (t == NULL) {
        return NULL;
    }
    major = gss_import_name(&minor, &nb, GSS_KRB5_NT_PRINCIPAL_NAME, &target);
    if (!GSS_ERROR(major)) {
        major = gss_init_sec_context(&minor, t->cred, &ctx, target, &spnego,
                                     GSS_C_REPLAY_FLAG | GSS_C_SEQUENCE_FLAG,
                                     0, GSS_C_NO_CHANNEL_BINDINGS,
                                     GSS_C_NO_BUFFER, NULL, &ob, NULL, NULL);
    }
    gss_release_name(&min2, &target);
    /* one token per request: the server's answer is not waited for */
    gss_delete_sec_context(&min2, &ctx, GSS_C_NO_BUFFER);
    if (GSS_ERROR(major)) {
        g_autofree char *what =
            g_strdup_printf("cannot authenticate to %s as %s", server,
                            creds->principal);

        gss_release_buffer(&min2, &ob);
        sasl_set_gss_error(error, SASL_ERROR_CONTEXT, what, major, minor);
    } else {
        b64 = g_base64_encode(ob.value, ob.length);
        gss_release_buffer(&min2, &ob);
    }
    sasl_ticket_unref(t);
    return b64;
}
