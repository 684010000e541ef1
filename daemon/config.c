/* config.c: strict, consuming GKeyFile parser for the proxy configuration. */
#include "config.h"

#include <arpa/inet.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include "escape.h"
#include "filter.h"

G_DEFINE_QUARK(config_error_quark, config_error)

/*
 * The defaults.  Each is also written, commented, in
 * conf/hbase-salt-proxy.conf; test_config checks the two agree.  The
 * [table:*] defaults are part of the storage format of any table that
 * leaves them out: never change them.
 */
#define CONFIG_DEFAULT_LISTEN "127.0.0.1:9090"
#define CONFIG_DEFAULT_WORKERS 0
#define CONFIG_DEFAULT_MAX_FRAME_SIZE (16u << 20)
#define CONFIG_DEFAULT_MAX_CONNECTIONS 10000
#define CONFIG_DEFAULT_CLIENT_IDLE_TIMEOUT_MS 0
#define CONFIG_DEFAULT_SERVERS "127.0.0.1:9091"
#define CONFIG_DEFAULT_CONNECT_TIMEOUT_MS 2000
#define CONFIG_DEFAULT_REQUEST_TIMEOUT_MS 30000
#define CONFIG_DEFAULT_SLOW_CALL_MS 1000
#define CONFIG_DEFAULT_POOL_SIZE 16
/* Reopens of one bucket of a scan after its backend scanner was lost. */
#define CONFIG_DEFAULT_SCAN_RESUME_ATTEMPTS 3
#define CONFIG_MAX_SCAN_RESUME_ATTEMPTS 100
#define CONFIG_DEFAULT_SASL_SERVICE "hbase"
#define CONFIG_DEFAULT_CACHING_MAX 1000
#define CONFIG_DEFAULT_SCANNER_TIMEOUT_MS 60000
#define CONFIG_DEFAULT_CATALOG_TABLE "hbase_salt_catalog"
#define CONFIG_DEFAULT_STATE_DIR "/var/lib/hbase-salt-proxy"
#define CONFIG_DEFAULT_CATALOG_RECHECK_MS 2000
#define CONFIG_DEFAULT_TLS_HANDSHAKE_MS 10000
#define CONFIG_DEFAULT_BUCKETS 16

#define CONFIG_MAX_MS ((unsigned)G_MAXINT32)
/* HBase thrift1 drops a scanner idle this long: twice
 * hbase.client.scanner.timeout.period, 60 s by default. */
#define CONFIG_HBASE_SCANNER_EXPIRY_MS 120000
#define CONFIG_MAX_SERVERS 256
#define CONFIG_MAX_KEY_PART 32767 /* HBase's longest row key */
#define CONFIG_TABLE_PREFIX "table:"

/* One load: the key file, where each group and key sits, the result. */
struct config_ctx {
    const char *source; /* file name for messages */
    GKeyFile *kf;
    GHashTable *lines; /* "group" or "group\nkey" -> line number */
    struct config *cfg;
};

/* Line of a group (key NULL) or key, 0 if unknown. */
static unsigned
config_line(const struct config_ctx *c, const char *group, const char *key)
{
    g_autofree char *id = key != NULL ? g_strconcat(group, "\n", key, NULL)
                                      : g_strdup(group);

    return GPOINTER_TO_UINT(g_hash_table_lookup(c->lines, id));
}

/* Every error reads "SOURCE:LINE: [group] key: what". */
static void G_GNUC_PRINTF(6, 7)
    config_set_error(const struct config_ctx *c, GError **error,
                     config_error_t code, const char *group, const char *key,
                     const char *fmt, ...)
{
    g_autofree char *what = NULL;
    g_autofree char *where = NULL;
    unsigned line = group != NULL ? config_line(c, group, key) : 0;
    va_list ap;

    va_start(ap, fmt);
    what = g_strdup_vprintf(fmt, ap);
    va_end(ap);
    if (line > 0) {
        where = g_strdup_printf("%s:%u:", c->source, line);
    } else {
        where = g_strdup_printf("%s:", c->source);
    }
    if (group == NULL) {
        g_set_error(error, CONFIG_ERROR, code, "%s %s", where, what);
    } else if (key == NULL) {
        g_set_error(error, CONFIG_ERROR, code, "%s [%s]: %s", where, group,
                    what);
    } else {
        g_set_error(error, CONFIG_ERROR, code, "%s [%s] %s: %s", where, group,
                    key, what);
    }
}

/*
 * A first pass over the text, as GKeyFile reads it, for what GKeyFile does
 * not tell: line numbers for messages, and groups or keys given twice
 * (GKeyFile merges and overwrites them silently).
 */
static gboolean
config_scan_lines(struct config_ctx *c, const char *data, size_t len,
                  GError **error)
{
    g_autofree char *group = NULL;
    const char *p = data, *end = data + len;
    unsigned line = 0;

    while (p < end) {
        const char *eol = memchr(p, '\n', (size_t)(end - p));
        const char *s = p, *e = eol != NULL ? eol : end;
        const char *eq;
        g_autofree char *id = NULL;

        line++;
        p = eol != NULL ? eol + 1 : end;
        while (s < e && g_ascii_isspace(*s)) {
            s++;
        }
        while (e > s && g_ascii_isspace(e[-1])) {
            e--;
        }
        if (s == e || *s == '#') {
            continue;
        }
        if (*s == '[') {
            const char *close = e;
            while (close > s && close[-1] != ']') {
                close--;
            }
            if (close <= s + 1) {
                g_set_error(error, CONFIG_ERROR, CONFIG_ERROR_PARSE,
                            "%s:%u: group header without ']'", c->source,
                            line);
                return FALSE;
            }
            g_free(group);
            group = g_strndup(s + 1, (size_t)(close - 1 - (s + 1)));
            if (g_hash_table_contains(c->lines, group)) {
                g_set_error(error, CONFIG_ERROR, CONFIG_ERROR_DUPLICATE,
                            "%s:%u: [%s]: group given twice (first on "
                            "line %u)",
                            c->source, line, group,
                            config_line(c, group, NULL));
                return FALSE;
            }
            g_hash_table_insert(c->lines, g_strdup(group),
                                GUINT_TO_POINTER(line));
            continue;
        }
        eq = memchr(s, '=', (size_t)(e - s));
        if (eq == NULL || group == NULL) {
            g_set_error(error, CONFIG_ERROR, CONFIG_ERROR_PARSE, "%s:%u: %s",
                        c->source, line,
                        eq == NULL ? "expected 'key = value', '[group]' or "
                                     "'# comment'"
                                   : "key before the first [group]");
            return FALSE;
        }
        while (eq > s && g_ascii_isspace(eq[-1])) {
            eq--;
        }
        /* GKeyFile hides "key[locale]" from its key lists, so the leftover
         * check would miss it: no key of ours has one. */
        if (memchr(s, '[', (size_t)(eq - s)) != NULL) {
            g_set_error(error, CONFIG_ERROR, CONFIG_ERROR_INVALID_KEY,
                        "%s:%u: [%s] %.*s: unknown key (no key takes a "
                        "[locale])",
                        c->source, line, group, (int)(eq - s), s);
            return FALSE;
        }
        id = g_strdup_printf("%s\n%.*s", group, (int)(eq - s), s);
        if (g_hash_table_contains(c->lines, id)) {
            g_set_error(error, CONFIG_ERROR, CONFIG_ERROR_DUPLICATE,
                        "%s:%u: [%s] %.*s: key given twice (first on line "
                        "%u)",
                        c->source, line, group, (int)(eq - s), s,
                        GPOINTER_TO_UINT(g_hash_table_lookup(c->lines, id)));
            return FALSE;
        }
        g_hash_table_insert(c->lines, g_steal_pointer(&id),
                            GUINT_TO_POINTER(line));
    }
    return TRUE;
}

/* A hint for values that fail: the issue's own example had inline
 * comments, which GKeyFile keeps as part of the value. */
static const char *
config_hint(const char *value)
{
    return strstr(value, " #") != NULL || strstr(value, "\t#") != NULL
               ? " (comments go on a line of their own)"
               : "";
}

/* Take a key's raw value out of the file: NULL when absent. */
static char *
config_take(struct config_ctx *c, const char *group, const char *key)
{
    char *value = g_key_file_get_value(c->kf, group, key, NULL);

    if (value != NULL) {
        g_key_file_remove_key(c->kf, group, key, NULL);
    }
    return value;
}

/* Strict decimal: digits only, no sign, no blanks, no overflow. */
static gboolean
config_parse_u64(const char *s, size_t len, guint64 *out)
{
    guint64 v = 0;

    if (len == 0) {
        return FALSE;
    }
    for (size_t i = 0; i < len; i++) {
        if (!g_ascii_isdigit(s[i]) || v > (G_MAXUINT64 - 9) / 10) {
            return FALSE;
        }
        v = v * 10 + (guint64)(s[i] - '0');
    }
    *out = v;
    return TRUE;
}

static gboolean
config_take_uint(struct config_ctx *c, const char *group, const char *key,
                 unsigned min, unsigned max, unsigned def, unsigned *out,
                 GError **error)
{
    g_autofree char *value = config_take(c, group, key);
    guint64 v;

    if (value == NULL) {
        *out = def;
        return TRUE;
    }
    if (!config_parse_u64(value, strlen(value), &v) || v < min || v > max) {
        config_set_error(c, error, CONFIG_ERROR_INVALID_VALUE, group, key,
                         "'%s' is not a whole number in %u..%u%s", value, min,
                         max, config_hint(value));
        return FALSE;
    }
    *out = (unsigned)v;
    return TRUE;
}

/* A size in its largest exact unit: "1 KiB", "3 MiB", "1023 B". */
static char *
config_size_str(guint64 v)
{
    static const char *const units[] = { "B", "KiB", "MiB", "GiB" };
    unsigned u = 0;

    while (u + 1 < G_N_ELEMENTS(units) && v >= 1024 && v % 1024 == 0) {
        v /= 1024;
        u++;
    }
    return g_strdup_printf("%" G_GUINT64_FORMAT " %s", v, units[u]);
}

/* "16MiB", "16 MiB", "512B", "4096". */
static gboolean
config_take_size(struct config_ctx *c, const char *group, const char *key,
                 guint64 min, guint64 max, guint64 def, guint64 *out,
                 GError **error)
{
    static const struct {
        const char *suffix;
        unsigned shift;
    } units[] = {
        { "", 0 }, { "B", 0 }, { "KiB", 10 }, { "MiB", 20 }, { "GiB", 30 }
    };
    g_autofree char *value = config_take(c, group, key);
    g_autofree char *smin = config_size_str(min);
    g_autofree char *smax = config_size_str(max);
    size_t digits = 0;
    const char *unit;
    guint64 v;

    if (value == NULL) {
        *out = def;
        return TRUE;
    }
    while (g_ascii_isdigit(value[digits])) {
        digits++;
    }
    unit = value + digits;
    while (*unit == ' ') {
        unit++;
    }
    if (config_parse_u64(value, digits, &v)) {
        for (size_t i = 0; i < G_N_ELEMENTS(units); i++) {
            if (strcmp(unit, units[i].suffix) != 0) {
                continue;
            }
            if (v > (max >> units[i].shift)) {
                break;
            }
            v <<= units[i].shift;
            if (v < min) {
                break;
            }
            *out = v;
            return TRUE;
        }
    }
    config_set_error(c, error, CONFIG_ERROR_INVALID_VALUE, group, key,
                     "'%s' is not a size in %s..%s (bytes, or a number with "
                     "B, KiB, MiB or GiB)%s",
                     value, smin, smax, config_hint(value));
    return FALSE;
}

/* One of names[]; the index goes to *out. */
static gboolean
config_take_enum(struct config_ctx *c, const char *group, const char *key,
                 const char *const *names, unsigned def, unsigned *out,
                 GError **error)
{
    g_autofree char *value = config_take(c, group, key);
    g_autofree char *all = NULL;

    if (value == NULL) {
        *out = def;
        return TRUE;
    }
    for (unsigned i = 0; names[i] != NULL; i++) {
        if (strcmp(value, names[i]) == 0) {
            *out = i;
            return TRUE;
        }
    }
    all = g_strjoinv(" | ", (char **)names);
    config_set_error(c, error, CONFIG_ERROR_INVALID_VALUE, group, key,
                     "'%s' is not one of %s%s", value, all,
                     config_hint(value));
    return FALSE;
}

/* A host name: letters, digits, '.', '-', '_'; no leading '.' or '-'. */
static gboolean
config_valid_hostname(const char *h)
{
    size_t len = strlen(h);

    if (len == 0 || len > 253 || h[0] == '.' || h[0] == '-') {
        return FALSE;
    }
    for (size_t i = 0; i < len; i++) {
        if (!g_ascii_isalnum(h[i]) && h[i] != '.' && h[i] != '-' &&
            h[i] != '_') {
            return FALSE;
        }
    }
    return TRUE;
}

/* "host:port", "1.2.3.4:port", "[v6]:port".  *why says what is wrong. */
static gboolean
config_parse_addr(const char *s, struct config_addr *out, const char **why)
{
    g_autofree char *host = NULL;
    const char *colon;
    guint64 port;

    if (s[0] == '[') {
        const char *close = strchr(s, ']');
        struct in6_addr a6;

        if (close == NULL || close[1] != ':') {
            *why = "expected [IPv6]:port";
            return FALSE;
        }
        host = g_strndup(s + 1, (size_t)(close - s - 1));
        if (inet_pton(AF_INET6, host, &a6) != 1) {
            *why = "not an IPv6 address inside [ ]";
            return FALSE;
        }
        colon = close + 1;
    } else {
        struct in_addr a4;

        colon = strrchr(s, ':');
        if (colon == NULL) {
            *why = "expected host:port";
            return FALSE;
        }
        host = g_strndup(s, (size_t)(colon - s));
        if (strchr(host, ':') != NULL) {
            *why = "IPv6 addresses need brackets, e.g. [::1]:9090";
            return FALSE;
        }
        /* All digits and dots: it must be a dotted quad, not a name. */
        if (host[0] != '\0' && strspn(host, "0123456789.") == strlen(host)) {
            if (inet_pton(AF_INET, host, &a4) != 1) {
                *why = "not an IPv4 address";
                return FALSE;
            }
        } else if (!config_valid_hostname(host)) {
            *why = "not a host name or address";
            return FALSE;
        }
    }
    if (!config_parse_u64(colon + 1, strlen(colon + 1), &port) || port < 1 ||
        port > 65535) {
        *why = "port must be 1..65535";
        return FALSE;
    }
    out->host = g_steal_pointer(&host);
    out->port = (uint16_t)port;
    return TRUE;
}

/* An address key; an empty value leaves *set FALSE when allowed. */
static gboolean
config_take_addr(struct config_ctx *c, const char *group, const char *key,
                 const char *def, gboolean allow_empty,
                 struct config_addr *out, gboolean *set, GError **error)
{
    g_autofree char *value = config_take(c, group, key);
    const char *v = value != NULL ? value : def;
    const char *why = NULL;

    *set = FALSE;
    if (v[0] == '\0' && allow_empty) {
        return TRUE;
    }
    if (v[0] == '\0') {
        config_set_error(c, error, CONFIG_ERROR_INVALID_VALUE, group, key,
                         "must not be empty (expected host:port)");
        return FALSE;
    }
    if (!config_parse_addr(v, out, &why)) {
        config_set_error(c, error, CONFIG_ERROR_INVALID_VALUE, group, key,
                         "'%s': %s%s", v, why, config_hint(v));
        return FALSE;
    }
    *set = TRUE;
    return TRUE;
}

static gboolean
config_parse_proxy(struct config_ctx *c, const char *g, GError **error)
{
    struct config *cfg = c->cfg;
    guint64 frame;
    gboolean set;

    g_clear_pointer(&cfg->listen.host, g_free);
    if (!config_take_addr(c, g, "listen", CONFIG_DEFAULT_LISTEN, FALSE,
                          &cfg->listen, &set, error) ||
        !config_take_uint(c, g, "workers", 0, 1024, CONFIG_DEFAULT_WORKERS,
                          &cfg->workers, error) ||
        !config_take_size(c, g, "max_frame_size", 1u << 10, 1u << 30,
                          CONFIG_DEFAULT_MAX_FRAME_SIZE, &frame, error) ||
        !config_take_uint(c, g, "max_connections", 1, 1000000,
                          CONFIG_DEFAULT_MAX_CONNECTIONS,
                          &cfg->max_connections, error) ||
        !config_take_uint(c, g, "client_idle_timeout_ms", 0, CONFIG_MAX_MS,
                          CONFIG_DEFAULT_CLIENT_IDLE_TIMEOUT_MS,
                          &cfg->client_idle_timeout_ms, error)) {
        return FALSE;
    }
    cfg->max_frame_size = (uint32_t)frame;
    return TRUE;
}

static void
config_addrs_free(struct config_addr *addrs, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        g_free(addrs[i].host);
    }
    g_free(addrs);
}

/*
 * A list of host:port in key of group g into *out, *n: def when the key
 * is absent (NULL: none, and then an empty list is allowed).
 */
static gboolean
config_take_servers(struct config_ctx *c, const char *g, const char *key,
                    const char *def, struct config_addr **out, size_t *n_out,
                    GError **error)
{
    g_autofree char *value = config_take(c, g, key);
    const char *text = value != NULL ? value : def != NULL ? def : "";
    g_auto(GStrv) parts = g_strsplit(text, ",", -1);
    size_t n = g_strv_length(parts);

    config_addrs_free(*out, *n_out);
    *out = g_new0(struct config_addr, MAX(n, 1));
    *n_out = 0;
    if (n == 0 && def == NULL) {
        return TRUE;
    }
    if (n == 0) {
        config_set_error(c, error, CONFIG_ERROR_INVALID_VALUE, g, key,
                         "needs at least one host:port");
        return FALSE;
    }
    if (n > CONFIG_MAX_SERVERS) {
        config_set_error(c, error, CONFIG_ERROR_INVALID_VALUE, g, key,
                         "more than %d servers", CONFIG_MAX_SERVERS);
        return FALSE;
    }
    for (size_t i = 0; i < n; i++) {
        struct config_addr *a = &(*out)[*n_out];
        const char *why = NULL;

        g_strstrip(parts[i]);
        if (parts[i][0] == '\0') {
            config_set_error(c, error, CONFIG_ERROR_INVALID_VALUE, g, key,
                             "empty entry in the list");
            return FALSE;
        }
        if (!config_parse_addr(parts[i], a, &why)) {
            config_set_error(c, error, CONFIG_ERROR_INVALID_VALUE, g, key,
                             "'%s': %s%s", parts[i], why,
                             config_hint(parts[i]));
            return FALSE;
        }
        (*n_out)++;
        for (size_t j = 0; j + 1 < *n_out; j++) {
            if ((*out)[j].port == a->port &&
                g_ascii_strcasecmp((*out)[j].host, a->host) == 0) {
                config_set_error(c, error, CONFIG_ERROR_INVALID_VALUE, g, key,
                                 "'%s' listed twice", parts[i]);
                return FALSE;
            }
        }
    }
    return TRUE;
}

const char *
config_qop_name(config_qop_t qop)
{
    switch (qop) {
    case CONFIG_QOP_AUTH_INT: return "auth-int";
    case CONFIG_QOP_AUTH_CONF: return "auth-conf";
    default: return "auth";
    }
}

/* A Kerberos name part: printable, no blank, none of '/', '@', '\\'. */
static gboolean
config_valid_krb5_part(const char *s, size_t len)
{
    if (len == 0) {
        return FALSE;
    }
    for (size_t i = 0; i < len; i++) {
        if (!g_ascii_isgraph(s[i]) || s[i] == '/' || s[i] == '@' ||
            s[i] == '\\') {
            return FALSE;
        }
    }
    return TRUE;
}

/* name[/instance]@REALM, or without the realm (krb5.conf's default). */
static gboolean
config_valid_principal(const char *p)
{
    const char *at = strchr(p, '@');
    size_t name_len = at != NULL ? (size_t)(at - p) : strlen(p);
    const char *slash = memchr(p, '/', name_len);

    if (at != NULL && !config_valid_krb5_part(at + 1, strlen(at + 1))) {
        return FALSE;
    }
    if (slash == NULL) {
        return config_valid_krb5_part(p, name_len);
    }
    return config_valid_krb5_part(p, (size_t)(slash - p)) &&
           config_valid_krb5_part(slash + 1,
                                  name_len - (size_t)(slash - p) - 1);
}

/* A string key; NULL when absent. */
static gboolean
config_take_sasl_string(struct config_ctx *c, const char *g, const char *key,
                        gboolean (*valid)(const char *), const char *what,
                        char **out, GError **error)
{
    char *value = config_take(c, g, key);

    if (value != NULL && !valid(value)) {
        config_set_error(c, error, CONFIG_ERROR_INVALID_VALUE, g, key,
                         "'%s' is not %s%s", value, what, config_hint(value));
        g_free(value);
        return FALSE;
    }
    g_free(*out);
    *out = value;
    return TRUE;
}

static gboolean
config_valid_service(const char *s)
{
    return config_valid_krb5_part(s, strlen(s));
}

#define CONFIG_CREDENTIAL_PREFIX "credential:"

/* An absolute path, or credential:NAME (a file systemd's LoadCredential=
 * put in $CREDENTIALS_DIRECTORY; NAME has no '/'). */
static gboolean
config_valid_file(const char *s)
{
    const char *name;

    if (!g_str_has_prefix(s, CONFIG_CREDENTIAL_PREFIX)) {
        return g_path_is_absolute(s);
    }
    name = s + strlen(CONFIG_CREDENTIAL_PREFIX);
    return name[0] != '\0' && strchr(name, '/') == NULL &&
           strcmp(name, ".") != 0 && strcmp(name, "..") != 0;
}

/*
 * *path (valid by config_valid_file, or NULL) as the file to open.  The
 * unit loads key files with LoadCredential=, so that they are read by
 * systemd as root and handed to the dynamic user; the directory exists
 * for the service's Exec*= commands only, hence resolved here, once.
 */
static gboolean
config_resolve_file(struct config_ctx *c, const char *g, const char *key,
                    char **path, GError **error)
{
    const char *dir, *name;

    if (*path == NULL || !g_str_has_prefix(*path, CONFIG_CREDENTIAL_PREFIX)) {
        return TRUE;
    }
    name = *path + strlen(CONFIG_CREDENTIAL_PREFIX);
    dir = g_getenv("CREDENTIALS_DIRECTORY");
    if (dir == NULL || !g_path_is_absolute(dir)) {
        config_set_error(c, error, CONFIG_ERROR_INVALID_VALUE, g, key,
                         "%s: CREDENTIALS_DIRECTORY is not set: "
                         "credential:NAME needs LoadCredential=NAME:FILE in "
                         "the systemd unit; or give an absolute path",
                         *path);
        return FALSE;
    }
    char *resolved = g_build_filename(dir, name, NULL);
    g_free(*path);
    *path = resolved;
    return TRUE;
}

/*
 * sasl = none | gssapi, and the sasl_* keys that only go with gssapi.
 * HBase runs SASL over the unframed transport only (its Thrift server
 * refuses to start with framed and a QOP), so framed is refused here.
 */
static gboolean
config_parse_sasl(struct config_ctx *c, const char *g, GError **error)
{
    static const char *const modes[] = { "none", "gssapi", NULL };
    static const char *const qops[] = { "auth", "auth-int", "auth-conf",
                                        NULL };
    static const char *const keys[] = { "sasl_principal", "sasl_keytab",
                                        "sasl_service", "sasl_qop",
                                        "sasl_server_host" };
    struct config *cfg = c->cfg;
    unsigned mode, qop;

    if (!config_take_enum(c, g, "sasl", modes, CONFIG_SASL_NONE, &mode,
                          error)) {
        return FALSE;
    }
    cfg->sasl = (config_sasl_t)mode;
    if (cfg->sasl == CONFIG_SASL_NONE) {
        for (size_t i = 0; i < G_N_ELEMENTS(keys); i++) {
            g_autofree char *v = config_take(c, g, keys[i]);

            if (v != NULL) {
                config_set_error(c, error, CONFIG_ERROR_INVALID_KEY, g,
                                 keys[i], "goes with sasl = gssapi only");
                return FALSE;
            }
        }
        return TRUE;
    }
    if (cfg->transport == CONFIG_TRANSPORT_FRAMED) {
        config_set_error(c, error, CONFIG_ERROR_INVALID_VALUE, g, "sasl",
                         "the SASL transport is unframed only, as HBase "
                         "enforces: set transport = buffered");
        return FALSE;
    }
    if (!config_take_sasl_string(c, g, "sasl_principal",
                                 config_valid_principal,
                                 "a Kerberos principal (name[/instance]"
                                 "[@REALM])",
                                 &cfg->sasl_principal, error) ||
        !config_take_sasl_string(c, g, "sasl_keytab", config_valid_file,
                                 "an absolute path or credential:NAME",
                                 &cfg->sasl_keytab, error) ||
        !config_resolve_file(c, g, "sasl_keytab", &cfg->sasl_keytab, error) ||
        !config_take_sasl_string(c, g, "sasl_service", config_valid_service,
                                 "a service name (like hbase)",
                                 &cfg->sasl_service, error) ||
        !config_take_sasl_string(c, g, "sasl_server_host",
                                 config_valid_hostname, "a host name",
                                 &cfg->sasl_server_host, error) ||
        !config_take_enum(c, g, "sasl_qop", qops, 0, &qop, error)) {
        return FALSE;
    }
    if (cfg->transport == CONFIG_TRANSPORT_HTTP) {
        /* HTTP mode: the same Kerberos keys make SPNEGO tokens; HBase's
         * SPNEGO principal is HTTP/host (hbase.thrift.spnego.principal) */
        if (config_line(c, g, "sasl_qop") > 0) {
            config_set_error(c, error, CONFIG_ERROR_INVALID_KEY, g, "sasl_qop",
                             "goes with the socket transport: HTTP mode "
                             "authenticates each request with SPNEGO "
                             "(protect it with https = true)");
            return FALSE;
        }
        if (cfg->sasl_service == NULL) {
            cfg->sasl_service = g_strdup("HTTP");
        }
    }
    if (cfg->sasl_principal == NULL || cfg->sasl_keytab == NULL) {
        config_set_error(c, error, CONFIG_ERROR_INVALID_VALUE, g, "sasl",
                         "gssapi needs sasl_principal and sasl_keytab");
        return FALSE;
    }
    if (cfg->sasl_service == NULL) {
        cfg->sasl_service = g_strdup(CONFIG_DEFAULT_SASL_SERVICE);
    }
    cfg->sasl_qop = (config_qop_t)(1u << qop);
    return TRUE;
}

char *
config_sasl_server_principal(const struct config *cfg, const char *host)
{
    const char *at = cfg->sasl_principal != NULL
                         ? strrchr(cfg->sasl_principal, '@')
                         : NULL;
    g_autofree char *h = g_ascii_strdown(cfg->sasl_server_host != NULL
                                             ? cfg->sasl_server_host
                                             : host,
                                         -1);

    return g_strdup_printf("%s/%s%s",
                           cfg->sasl_service != NULL ? cfg->sasl_service
                                                     : "hbase",
                           h, at != NULL ? at : "");
}

/*
 * transport = http (HBase's `hbase thrift -http`): its keys, refused with
 * another transport.  HBase's HTTP mode speaks the binary protocol only.
 */
static gboolean
config_parse_backend_http(struct config_ctx *c, const char *g, GError **error)
{
    static const char *const keys[] = {
        "http_path",           "http_doas", "https",  "tls_ca",
        "tls_verify_hostname", "tls_cert",  "tls_key"
    };
    static const char *const bools[] = { "false", "true", NULL };
    struct config *cfg = c->cfg;
    unsigned https, verify;
    char **files[] = { &cfg->backend_tls_ca, &cfg->backend_tls_cert,
                       &cfg->backend_tls_key };
    static const char *const file_keys[] = { "tls_ca", "tls_cert", "tls_key" };

    if (cfg->transport != CONFIG_TRANSPORT_HTTP) {
        for (size_t i = 0; i < G_N_ELEMENTS(keys); i++) {
            g_autofree char *v = config_take(c, g, keys[i]);

            if (v != NULL) {
                config_set_error(c, error, CONFIG_ERROR_INVALID_KEY, g,
                                 keys[i], "goes with transport = http only");
                return FALSE;
            }
        }
        return TRUE;
    }
    if (cfg->protocol != CONFIG_PROTOCOL_BINARY) {
        config_set_error(c, error, CONFIG_ERROR_INVALID_VALUE, g, "protocol",
                         "HBase's HTTP mode speaks binary only");
        return FALSE;
    }
    cfg->http_path = config_take(c, g, "http_path");
    if (cfg->http_path == NULL) {
        cfg->http_path = g_strdup("/");
    } else if (cfg->http_path[0] != '/' ||
               strpbrk(cfg->http_path, " \t\r\n") != NULL) {
        config_set_error(c, error, CONFIG_ERROR_INVALID_VALUE, g, "http_path",
                         "'%s' is not a path starting with /", cfg->http_path);
        return FALSE;
    }
    cfg->http_doas = config_take(c, g, "http_doas");
    if (cfg->http_doas != NULL && (cfg->http_doas[0] == '\0' ||
                                   strpbrk(cfg->http_doas, "\r\n") != NULL)) {
        config_set_error(c, error, CONFIG_ERROR_INVALID_VALUE, g, "http_doas",
                         "not a user name");
        return FALSE;
    }
    if (!config_take_enum(c, g, "https", bools, 0, &https, error) ||
        !config_take_enum(c, g, "tls_verify_hostname", bools, 1, &verify,
                          error)) {
        return FALSE;
    }
    cfg->https = https == 1;
    cfg->backend_tls_verify_hostname = verify == 1;
    for (size_t i = 0; i < G_N_ELEMENTS(files); i++) {
        if (!config_take_sasl_string(c, g, file_keys[i], config_valid_file,
                                     "an absolute path or credential:NAME",
                                     files[i], error) ||
            !config_resolve_file(c, g, file_keys[i], files[i], error)) {
            return FALSE;
        }
        if (*files[i] != NULL && !cfg->https) {
            config_set_error(c, error, CONFIG_ERROR_INVALID_KEY, g,
                             file_keys[i], "goes with https = true only");
            return FALSE;
        }
    }
    if ((cfg->backend_tls_cert == NULL) != (cfg->backend_tls_key == NULL)) {
        config_set_error(c, error, CONFIG_ERROR_INVALID_VALUE, g, "tls_cert",
                         "a client certificate needs tls_cert and tls_key");
        return FALSE;
    }
    return TRUE;
}

/*
 * [backend] custom_filters: the filter names the servers' Thrift
 * configuration registers (hbase.thrift.filters), whose value may be
 * pasted as it is: "Name:fully.qualified.Class, ...", or names alone.
 * The class is not needed (filter strings name the filter); a built-in
 * name is refused, since it would turn a filter the proxy rewrites into
 * one it passes through.
 */
static gboolean
config_parse_custom_filters(struct config_ctx *c, const char *g,
                            GError **error)
{
    g_autofree char *value = config_take(c, g, "custom_filters");
    g_auto(GStrv) parts = NULL;
    /* the strings are freed with an array refused, kept with one taken */
    GPtrArray *names = g_ptr_array_new_with_free_func(g_free);
    GPtrArray *specs = g_ptr_array_new_with_free_func(g_free);
    GPtrArray *classes = g_ptr_array_new_with_free_func(g_free);

    if (value != NULL && value[0] != '\0') {
        parts = g_strsplit(value, ",", -1);
    }
    for (guint i = 0; parts != NULL && parts[i] != NULL; i++) {
        char *spec = g_strstrip(parts[i]);
        const char *colon = strchr(spec, ':');
        size_t nlen = colon != NULL ? (size_t)(colon - spec) : strlen(spec);
        const char *bad = NULL;

        for (size_t j = 0; j < nlen && bad == NULL; j++) {
            if (!g_ascii_isalnum(spec[j]) && spec[j] != '_' &&
                spec[j] != '$') {
                bad = "a name is letters, digits, _ and $";
            }
        }
        if (nlen == 0) {
            bad = "an empty name";
        } else if (colon != NULL &&
                   (colon[1] == '\0' ||
                    strspn(colon + 1, "abcdefghijklmnopqrstuvwxyz"
                                      "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                      "0123456789_$.") != strlen(colon + 1))) {
            bad = "a class is a fully qualified Java class name";
        } else if (filter_type_from_name((const uint8_t *)spec, nlen) !=
                   FILTER_TYPE_UNKNOWN) {
            bad = "that is a filter HBase has built in, which the proxy "
                  "rewrites";
        }
        for (guint j = 0; j < names->len && bad == NULL; j++) {
            if (strlen(names->pdata[j]) == nlen &&
                memcmp(names->pdata[j], spec, nlen) == 0) {
                bad = "named twice";
            }
        }
        if (bad != NULL) {
            config_set_error(c, error, CONFIG_ERROR_INVALID_VALUE, g,
                             "custom_filters",
                             "'%s': %s (Name or "
                             "Name:fully.qualified.Class, comma separated)",
                             spec, bad);
            g_ptr_array_free(names, TRUE);
            g_ptr_array_free(specs, TRUE);
            g_ptr_array_free(classes, TRUE);
            return FALSE;
        }
        g_ptr_array_add(names, g_strndup(spec, nlen));
        g_ptr_array_add(specs, g_strdup(spec));
        if (colon != NULL) {
            g_ptr_array_add(classes, g_strdup(colon + 1));
        }
    }
    g_ptr_array_add(names, NULL);
    g_ptr_array_add(specs, NULL);
    g_ptr_array_add(classes, NULL);
    g_strfreev(c->cfg->custom_filters);
    g_strfreev(c->cfg->custom_filter_specs);
    g_strfreev(c->cfg->custom_filter_classes);
    c->cfg->custom_filters = (char **)g_ptr_array_free(names, FALSE);
    c->cfg->custom_filter_specs = (char **)g_ptr_array_free(specs, FALSE);
    c->cfg->custom_filter_classes = (char **)g_ptr_array_free(classes, FALSE);
    return TRUE;
}

/*
 * read_retry_after_ms: a read with no answer this long is sent to another
 * server (backend.c).  Omitted: a third of request_timeout_ms, so a read
 * on a stalled server has two thirds of its time left elsewhere (rounded
 * down: off under 3 ms, where no third is left to move in, and never a
 * value the explicit key would refuse); 0 turns it off; a value at or past request_timeout_ms would never fire, and is
 * refused rather than silently doing nothing.
 */
static gboolean
config_parse_read_retry(struct config_ctx *c, const char *g, GError **error)
{
    struct config *cfg = c->cfg;
    unsigned v;

    if (!config_take_uint(c, g, "read_retry_after_ms", 0, CONFIG_MAX_MS,
                          G_MAXUINT, &v, error)) {
        return FALSE;
    }
    if (v == G_MAXUINT) {
        cfg->read_retry_after_ms = cfg->request_timeout_ms / 3;
        return TRUE;
    }
    if (v >= cfg->request_timeout_ms) {
        config_set_error(c, error, CONFIG_ERROR_INVALID_VALUE, g,
                         "read_retry_after_ms",
                         "%u is not less than request_timeout_ms (%u): a "
                         "read would time out before it is sent again (0 "
                         "turns the retry off)",
                         v, cfg->request_timeout_ms);
        return FALSE;
    }
    cfg->read_retry_after_ms = v;
    return TRUE;
}

static gboolean
config_parse_backend(struct config_ctx *c, const char *g, GError **error)
{
    static const char *const protocols[] = { "binary", "compact", NULL };
    static const char *const transports[] = { "buffered", "framed", "http",
                                              NULL };
    struct config *cfg = c->cfg;
    unsigned protocol, transport;

    if (!config_take_servers(c, g, "servers", CONFIG_DEFAULT_SERVERS,
                             &cfg->servers, &cfg->n_servers, error) ||
        !config_take_servers(c, g, "thrift2_servers", NULL,
                             &cfg->thrift2_servers, &cfg->n_thrift2_servers,
                             error) ||
        !config_take_enum(c, g, "protocol", protocols, CONFIG_PROTOCOL_BINARY,
                          &protocol, error) ||
        !config_take_enum(c, g, "transport", transports,
                          CONFIG_TRANSPORT_BUFFERED, &transport, error) ||
        !config_take_uint(c, g, "connect_timeout_ms", 1, CONFIG_MAX_MS,
                          CONFIG_DEFAULT_CONNECT_TIMEOUT_MS,
                          &cfg->connect_timeout_ms, error) ||
        !config_take_uint(c, g, "request_timeout_ms", 1, CONFIG_MAX_MS,
                          CONFIG_DEFAULT_REQUEST_TIMEOUT_MS,
                          &cfg->request_timeout_ms, error) ||
        !config_take_uint(c, g, "slow_call_ms", 0, CONFIG_MAX_MS,
                          CONFIG_DEFAULT_SLOW_CALL_MS, &cfg->slow_call_ms,
                          error) ||
        !config_take_uint(c, g, "pool_size", 1, 1024, CONFIG_DEFAULT_POOL_SIZE,
                          &cfg->pool_size, error) ||
        !config_take_uint(c, g, "scan_resume_attempts", 0,
                          CONFIG_MAX_SCAN_RESUME_ATTEMPTS,
                          CONFIG_DEFAULT_SCAN_RESUME_ATTEMPTS,
                          &cfg->scan_resume_attempts, error) ||
        !config_parse_read_retry(c, g, error)) {
        return FALSE;
    }
    cfg->protocol = (config_protocol_t)protocol;
    cfg->transport = (config_transport_t)transport;
    return config_parse_backend_http(c, g, error) &&
           config_parse_sasl(c, g, error) &&
           config_parse_custom_filters(c, g, error);
}

static gboolean
config_parse_scan(struct config_ctx *c, const char *g, GError **error)
{
    struct config *cfg = c->cfg;

    return config_take_uint(c, g, "caching_max", 1, 1000000,
                            CONFIG_DEFAULT_CACHING_MAX, &cfg->scan_caching_max,
                            error) &&
           config_take_uint(c, g, "scanner_timeout_ms", 1000, CONFIG_MAX_MS,
                            CONFIG_DEFAULT_SCANNER_TIMEOUT_MS,
                            &cfg->scan_scanner_timeout_ms, error);
}

static gboolean
config_parse_thrift2(struct config_ctx *c, const char *g, GError **error)
{
    struct config *cfg = c->cfg;

    g_clear_pointer(&cfg->thrift2_listen.host, g_free);
    return config_take_addr(c, g, "listen", "", TRUE, &cfg->thrift2_listen,
                            &cfg->thrift2_enabled, error);
}

static gboolean config_valid_table_part(const char *s, size_t len,
                                        gboolean qualifier);

/* [ns:]qualifier, each part as HBase allows it. */
static gboolean
config_valid_table_name(const char *name)
{
    const char *sep = strchr(name, ':');

    return sep != NULL
               ? config_valid_table_part(name, (size_t)(sep - name), FALSE) &&
                     config_valid_table_part(sep + 1, strlen(sep + 1), TRUE)
               : config_valid_table_part(name, strlen(name), TRUE);
}

static void
config_table_clear_name(gpointer p)
{
    g_free(((struct config_table *)p)->name);
}

/* [http]: Thrift over HTTP POST for clients (HBase's -http mode), for
 * Thrift1 and, separately, Thrift2. */
static gboolean
config_parse_http(struct config_ctx *c, const char *g, GError **error)
{
    struct config *cfg = c->cfg;

    g_clear_pointer(&cfg->http_listen.host, g_free);
    g_clear_pointer(&cfg->http2_listen.host, g_free);
    return config_take_addr(c, g, "listen", "", TRUE, &cfg->http_listen,
                            &cfg->http_enabled, error) &&
           config_take_addr(c, g, "thrift2_listen", "", TRUE,
                            &cfg->http2_listen, &cfg->http2_enabled, error);
}

/*
 * [tls]: a second Thrift1 listener, TLS, for clients on other hosts.  The
 * files are only named here; proxy.c builds the context (and refuses a
 * start or reload whose files do not make one).
 */
static gboolean
config_parse_tls(struct config_ctx *c, const char *g, GError **error)
{
    static const char *const files[] = { "cert", "key", "client_ca" };
    struct config *cfg = c->cfg;
    char **outs[] = { &cfg->tls_cert, &cfg->tls_key, &cfg->tls_client_ca };

    g_clear_pointer(&cfg->tls_listen.host, g_free);
    if (!config_take_addr(c, g, "listen", "", TRUE, &cfg->tls_listen,
                          &cfg->tls_enabled, error) ||
        !config_take_uint(c, g, "handshake_timeout_ms", 100, CONFIG_MAX_MS,
                          CONFIG_DEFAULT_TLS_HANDSHAKE_MS,
                          &cfg->tls_handshake_timeout_ms, error)) {
        return FALSE;
    }
    for (size_t i = 0; i < G_N_ELEMENTS(files); i++) {
        g_clear_pointer(outs[i], g_free);
        if (!config_take_sasl_string(c, g, files[i], config_valid_file,
                                     "an absolute path or credential:NAME",
                                     outs[i], error) ||
            !config_resolve_file(c, g, files[i], outs[i], error)) {
            return FALSE;
        }
        if (*outs[i] != NULL && !cfg->tls_enabled) {
            config_set_error(c, error, CONFIG_ERROR_INVALID_KEY, g, files[i],
                             "goes with a [tls] listen address only");
            return FALSE;
        }
    }
    if (cfg->tls_enabled && (cfg->tls_cert == NULL || cfg->tls_key == NULL)) {
        config_set_error(c, error, CONFIG_ERROR_INVALID_VALUE, g, "listen",
                         "a TLS listener needs cert and key");
        return FALSE;
    }
    return TRUE;
}

/*
 * [catalog]: the HBase table holding every salted table's mapping.  On
 * by default: several proxies with different mappings writing one table
 * lose rows, and only a record next to the data can stop that.
 */
static gboolean
config_parse_catalog(struct config_ctx *c, const char *g, GError **error)
{
    struct config *cfg = c->cfg;
    g_autofree char *table = NULL;
    g_autofree char *dir = NULL;

    g_clear_pointer(&cfg->catalog_table, g_free);
    g_clear_pointer(&cfg->catalog_state_dir, g_free);
    table = config_take(c, g, "table");
    if (table == NULL) {
        table = g_strdup(CONFIG_DEFAULT_CATALOG_TABLE);
    } else if (table[0] != '\0') {
        if (!config_valid_table_name(table)) {
            config_set_error(c, error, CONFIG_ERROR_INVALID_VALUE, g, "table",
                             "'%s' is not an HBase table name%s", table,
                             config_hint(table));
            return FALSE;
        }
    }
    dir = config_take(c, g, "state_dir");
    if (dir != NULL && !g_path_is_absolute(dir)) {
        config_set_error(c, error, CONFIG_ERROR_INVALID_VALUE, g, "state_dir",
                         "'%s' is not an absolute path", dir);
        return FALSE;
    }
    if (dir == NULL) {
        /* systemd's StateDirectory= says where it is */
        const char *env = g_getenv("STATE_DIRECTORY");

        dir = g_strdup(env != NULL && g_path_is_absolute(env)
                           ? env
                           : CONFIG_DEFAULT_STATE_DIR);
    }
    if (!config_take_uint(c, g, "recheck_ms", 100, CONFIG_MAX_MS,
                          CONFIG_DEFAULT_CATALOG_RECHECK_MS,
                          &cfg->catalog_recheck_ms, error)) {
        return FALSE;
    }
    if (table[0] != '\0') {
        cfg->catalog_table = g_steal_pointer(&table);
    }
    cfg->catalog_state_dir = g_steal_pointer(&dir);
    return TRUE;
}

static gboolean
config_parse_admin(struct config_ctx *c, const char *g, GError **error)
{
    struct config *cfg = c->cfg;

    g_clear_pointer(&cfg->admin_listen.host, g_free);
    return config_take_addr(c, g, "listen", "", TRUE, &cfg->admin_listen,
                            &cfg->admin_enabled, error);
}

static int config_table_cmp(gconstpointer a, gconstpointer b);

/* unsalted_tables = NAME[, NAME...]: each an HBase table name, once;
 * whether one has a section is checked once every section is read
 * (config_check_keyviz_unsalted). */
static gboolean
config_take_keyviz_unsalted(struct config_ctx *c, const char *g,
                            GError **error)
{
    g_autofree char *value = config_take(c, g, "unsalted_tables");
    g_auto(GStrv) names = NULL;
    g_autoptr(GArray) tables = g_array_new(FALSE, TRUE,
                                           sizeof(struct config_table));
    struct config *cfg = c->cfg;

    g_array_set_clear_func(tables, config_table_clear_name);
    if (value == NULL || value[0] == '\0') {
        return TRUE;
    }
    names = g_strsplit(value, ",", -1);
    for (guint i = 0; names[i] != NULL; i++) {
        struct config_table t = { 0 };
        const char *name = g_strstrip(names[i]);

        /* as [table:NAME]: "default:x" is x */
        if (g_str_has_prefix(name, "default:") &&
            strchr(name + 8, ':') == NULL) {
            name += strlen("default:");
        }
        if (!config_valid_table_name(name) ||
            g_str_has_prefix(name, "hbase:")) {
            config_set_error(c, error, CONFIG_ERROR_INVALID_VALUE, g,
                             "unsalted_tables",
                             "'%s' is not a table name the key visualizer "
                             "can count ([ns:]name, not of HBase's own "
                             "namespace; names separated by commas)",
                             name);
            return FALSE;
        }
        for (guint j = 0; j < tables->len; j++) {
            if (strcmp(g_array_index(tables, struct config_table, j).name,
                       name) == 0) {
                config_set_error(c, error, CONFIG_ERROR_DUPLICATE, g,
                                 "unsalted_tables", "'%s' named twice", name);
                return FALSE;
            }
        }
        /* one bucket, nothing salted: the counters' shape */
        if (!salt_table_init(&t.salt, 1, SALT_FORMAT_HEX, "", 0, NULL)) {
            return FALSE;
        }
        t.name = g_strdup(name);
        t.name_len = strlen(name);
        g_array_append_val(tables, t);
    }
    g_array_sort(tables, config_table_cmp);
    g_array_set_clear_func(tables, NULL);
    cfg->n_keyviz_unsalted = tables->len;
    cfg->keyviz_unsalted = (struct config_table *)(void *)
        g_array_free(g_steal_pointer(&tables), FALSE);
    return TRUE;
}

/* An unsalted table to count that has a section: it is salted. */
static gboolean
config_check_keyviz_unsalted(struct config_ctx *c, GError **error)
{
    const struct config *cfg = c->cfg;

    for (size_t i = 0; i < cfg->n_keyviz_unsalted; i++) {
        const char *name = cfg->keyviz_unsalted[i].name;

        if (config_find_table(cfg, name, strlen(name)) != NULL) {
            config_set_error(c, error, CONFIG_ERROR_INVALID_VALUE, "keyviz",
                             "unsalted_tables",
                             "'%s' has a [table:%s] section: it is salted, "
                             "and counted as such already",
                             name, name);
            return FALSE;
        }
    }
    return TRUE;
}

static gboolean
config_parse_keyviz(struct config_ctx *c, const char *g, GError **error)
{
    static const char *const bools[] = { "false", "true", NULL };
    static const char *const keys[] = { "show", "hash", "hide", NULL };
    struct config_keyviz *k = &c->cfg->keyviz;
    unsigned enabled;

    if (!config_take_enum(c, g, "enabled", bools, 1, &enabled, error) ||
        !config_take_uint(c, g, "interval_s", 1, 3600, 60, &k->interval_s,
                          error) ||
        !config_take_uint(c, g, "ranges", 1, 4096, 256, &k->ranges, error) ||
        !config_take_uint(c, g, "hot_keys", 1, 1024, 32, &k->hot_keys,
                          error) ||
        !config_take_uint(c, g, "hot_key_sampling", 1, 64, 8,
                          &k->hot_key_sampling, error) ||
        !config_take_uint(c, g, "retain_s", 1, 7 * 86400, 6 * 3600,
                          &k->retain_s, error) ||
        !config_take_enum(c, g, "keys", keys, CONFIG_KEYVIZ_SHOW, &k->keys,
                          error) ||
        !config_take_keyviz_unsalted(c, g, error)) {
        return FALSE;
    }
    k->enabled = enabled == 1;
    if (k->retain_s < k->interval_s) {
        config_set_error(c, error, CONFIG_ERROR_INVALID_VALUE, g, "retain_s",
                         "%u is shorter than interval_s (%u): not one "
                         "interval would be kept",
                         k->retain_s, k->interval_s);
        return FALSE;
    }
    return TRUE;
}

/* HBase's rules: [ns:]qualifier, ns [A-Za-z0-9_]+, qualifier
 * [A-Za-z0-9_][A-Za-z0-9_.-]*. */
static gboolean
config_valid_table_part(const char *s, size_t len, gboolean qualifier)
{
    if (len == 0 || (qualifier && (s[0] == '.' || s[0] == '-'))) {
        return FALSE;
    }
    for (size_t i = 0; i < len; i++) {
        if (!g_ascii_isalnum(s[i]) && s[i] != '_' &&
            !(qualifier && (s[i] == '.' || s[i] == '-'))) {
            return FALSE;
        }
    }
    return TRUE;
}

/* hash_part = whole | length:N | delimiter:SEP:K */
static gboolean
config_take_hash_part(struct config_ctx *c, const char *g,
                      struct salt_table *t, GError **error)
{
    g_autofree char *value = config_take(c, g, "hash_part");
    g_autoptr(GError) ierror = NULL;
    const char *why = NULL;
    guint64 n;

    if (value == NULL || strcmp(value, "whole") == 0) {
        return TRUE;
    }
    if (g_str_has_prefix(value, "length:")) {
        const char *num = value + strlen("length:");
        if (!config_parse_u64(num, strlen(num), &n) || n < 1 ||
            n > CONFIG_MAX_KEY_PART) {
            why = "length:N needs N in 1..32767";
            goto fail;
        }
        if (!salt_table_hash_length(t, (uint32_t)n, &ierror)) {
            goto fail_salt;
        }
        return TRUE;
    }
    if (g_str_has_prefix(value, "delimiter:")) {
        /* The last ':' ends SEP, so SEP may hold ':' itself. */
        const char *sep = value + strlen("delimiter:");
        const char *colon = strrchr(sep, ':');
        g_autofree char *raw = NULL;
        g_autoptr(GBytes) bytes = NULL;
        gsize len;
        const void *p;

        if (colon == NULL || colon == sep) {
            why = "delimiter:SEP:K needs a SEP and a K";
            goto fail;
        }
        if (!config_parse_u64(colon + 1, strlen(colon + 1), &n) || n < 1 ||
            n > CONFIG_MAX_KEY_PART) {
            why = "delimiter:SEP:K needs K in 1..32767";
            goto fail;
        }
        raw = g_strndup(sep, (size_t)(colon - sep));
        bytes = escape_decode(raw, &ierror);
        if (bytes == NULL) {
            why = ierror->message;
            goto fail;
        }
        p = g_bytes_get_data(bytes, &len);
        if (!salt_table_hash_delimiter(t, p, len, (uint32_t)n, &ierror)) {
            goto fail_salt;
        }
        return TRUE;
    }
    why = "expected whole, length:N or delimiter:SEP:K";
fail:
    config_set_error(c, error, CONFIG_ERROR_INVALID_VALUE, g, "hash_part",
                     "'%s': %s%s", value, why, config_hint(value));
    return FALSE;
fail_salt:
    config_set_error(c, error, CONFIG_ERROR_INVALID_VALUE, g, "hash_part",
                     "'%s': %s", value, ierror->message);
    return FALSE;
}

/* A bytes value with the escapes of salt_separator; NULL when absent
 * (*ok TRUE) or invalid (*ok FALSE, error set). */
static GBytes *
config_take_bytes(struct config_ctx *c, const char *g, const char *key,
                  gboolean *ok, GError **error)
{
    g_autofree char *raw = config_take(c, g, key);
    g_autoptr(GError) ierror = NULL;
    GBytes *b;

    *ok = TRUE;
    if (raw == NULL) {
        return NULL;
    }
    b = escape_decode(raw, &ierror);
    if (b == NULL) {
        config_set_error(c, error, CONFIG_ERROR_INVALID_VALUE, g, key,
                         "'%s': %s", raw, ierror->message);
        *ok = FALSE;
    }
    return b;
}

/*
 * Forward-looking salting (legacy.h): legacy_component = after:SEP:K |
 * after:SEP:last | bytes:OFF:LEN with legacy_cutoff, or legacy_range_start
 * and legacy_range_stop.  Absent: every key is salted.
 */
static gboolean
config_take_legacy(struct config_ctx *c, const char *g, struct salt_table *t,
                   GError **error)
{
    g_autofree char *comp = config_take(c, g, "legacy_component");
    g_autoptr(GBytes) cutoff = NULL;
    g_autoptr(GBytes) start = NULL;
    g_autoptr(GBytes) stop = NULL;
    g_autoptr(GError) ierror = NULL;
    const char *key = "legacy_component";
    const char *why = NULL;
    gboolean ok;
    guint64 a, b;

    cutoff = config_take_bytes(c, g, "legacy_cutoff", &ok, error);
    if (!ok) {
        return FALSE;
    }
    start = config_take_bytes(c, g, "legacy_range_start", &ok, error);
    if (!ok) {
        return FALSE;
    }
    stop = config_take_bytes(c, g, "legacy_range_stop", &ok, error);
    if (!ok) {
        return FALSE;
    }
    legacy_rule_init(&t->legacy);
    if (t->mapping != SALT_MAPPING_XXH3 &&
        (comp != NULL || cutoff != NULL || start != NULL || stop != NULL)) {
        config_set_error(c, error, CONFIG_ERROR_INVALID_VALUE, g,
                         comp != NULL     ? "legacy_component"
                         : cutoff != NULL ? "legacy_cutoff"
                         : start != NULL  ? "legacy_range_start"
                                          : "legacy_range_stop",
                         "a legacy rule goes with salt_mapping = xxh3 only, "
                         "not %s",
                         salt_mapping_name(t->mapping));
        return FALSE;
    }
    if (comp == NULL && cutoff == NULL) {
        if (start == NULL && stop == NULL) {
            return TRUE;
        }
        key = start != NULL ? "legacy_range_start" : "legacy_range_stop";
        if (legacy_rule_range(&t->legacy,
                              start != NULL ? g_bytes_get_data(start, NULL)
                                            : NULL,
                              start != NULL ? g_bytes_get_size(start) : 0,
                              stop != NULL ? g_bytes_get_data(stop, NULL)
                                           : NULL,
                              stop != NULL ? g_bytes_get_size(stop) : 0,
                              &ierror)) {
            return TRUE;
        }
        config_set_error(c, error, CONFIG_ERROR_INVALID_VALUE, g, key, "%s",
                         ierror->message);
        return FALSE;
    }
    if (start != NULL || stop != NULL) {
        config_set_error(c, error, CONFIG_ERROR_INVALID_VALUE, g,
                         start != NULL ? "legacy_range_start"
                                       : "legacy_range_stop",
                         "a table has one legacy rule: legacy_component "
                         "with legacy_cutoff, or legacy_range_start/stop, "
                         "not both");
        return FALSE;
    }
    if (comp == NULL || cutoff == NULL) {
        config_set_error(c, error, CONFIG_ERROR_INVALID_VALUE, g,
                         comp == NULL ? "legacy_cutoff" : "legacy_component",
                         "needs %s too (the key part is compared with the "
                         "cutoff)",
                         comp == NULL ? "legacy_component" : "legacy_cutoff");
        return FALSE;
    }
    if (g_str_has_prefix(comp, "bytes:")) {
        const char *off = comp + strlen("bytes:");
        const char *colon = strchr(off, ':');

        if (colon == NULL ||
            !config_parse_u64(off, (size_t)(colon - off), &a) ||
            !config_parse_u64(colon + 1, strlen(colon + 1), &b) ||
            a > LEGACY_MAX_PART || b < 1 || b > LEGACY_MAX_PART) {
            why = "bytes:OFF:LEN needs OFF in 0..32767 and LEN in 1..32767";
            goto fail;
        }
        ok = legacy_rule_bytes(&t->legacy, (uint32_t)a, (uint32_t)b,
                               g_bytes_get_data(cutoff, NULL),
                               g_bytes_get_size(cutoff), &ierror);
    } else if (g_str_has_prefix(comp, "after:")) {
        /* the last ':' ends SEP, so SEP may hold ':' itself */
        const char *sep = comp + strlen("after:");
        const char *colon = strrchr(sep, ':');
        g_autofree char *raw = NULL;
        g_autoptr(GBytes) delim = NULL;

        if (colon == NULL || colon == sep) {
            why = "after:SEP:K needs a SEP and a K (or last)";
            goto fail;
        }
        if (strcmp(colon + 1, "last") == 0) {
            a = 0;
        } else if (!config_parse_u64(colon + 1, strlen(colon + 1), &a) ||
                   a < 1 || a > LEGACY_MAX_PART) {
            why = "after:SEP:K needs K in 1..32767, or last";
            goto fail;
        }
        raw = g_strndup(sep, (size_t)(colon - sep));
        delim = escape_decode(raw, &ierror);
        if (delim == NULL) {
            why = ierror->message;
            goto fail;
        }
        ok = legacy_rule_after(&t->legacy, g_bytes_get_data(delim, NULL),
                               g_bytes_get_size(delim), (uint32_t)a,
                               g_bytes_get_data(cutoff, NULL),
                               g_bytes_get_size(cutoff), &ierror);
    } else {
        why = "expected after:SEP:K, after:SEP:last or bytes:OFF:LEN";
        goto fail;
    }
    if (!ok) {
        /* the component parsed: what is left to fail is the cutoff */
        config_set_error(c, error, CONFIG_ERROR_INVALID_VALUE, g,
                         g_error_matches(ierror, LEGACY_ERROR,
                                         LEGACY_ERROR_INVALID) &&
                                 strstr(ierror->message, "cutoff") != NULL
                             ? "legacy_cutoff"
                             : key,
                         "%s", ierror->message);
        return FALSE;
    }
    return TRUE;
fail:
    config_set_error(c, error, CONFIG_ERROR_INVALID_VALUE, g, key,
                     "'%s': %s%s", comp, why, config_hint(comp));
    return FALSE;
}

/*
 * salt_mapping = phoenix | hbasewd | bigtable-sample: the other tool's
 * salt, whole.  buckets is its N and has no default (a wrong N loses every
 * row); the keys of our own mapping would describe a salt the tool never
 * wrote, so they are refused rather than ignored.
 */
static gboolean
config_take_adopted(struct config_ctx *c, const char *g,
                    salt_mapping_t mapping, struct salt_table *t,
                    GError **error)
{
    static const char *const own[] = { "salt_format", "salt_separator",
                                       "hash_part" };
    const char *name = salt_mapping_name(mapping);
    g_autofree char *value = config_take(c, g, "buckets");
    g_autoptr(GError) ierror = NULL;
    guint64 n;

    for (size_t i = 0; i < G_N_ELEMENTS(own); i++) {
        g_autofree char *v = config_take(c, g, own[i]);

        if (v != NULL) {
            config_set_error(c, error, CONFIG_ERROR_INVALID_VALUE, g, own[i],
                             "cannot be set with salt_mapping = %s, whose "
                             "salt is fixed (%s in front of the whole key): "
                             "remove it",
                             name,
                             mapping == SALT_MAPPING_BIGTABLE
                                 ? "decimal hash and '-'"
                                 : "one raw byte");
            return FALSE;
        }
    }
    if (value == NULL) {
        config_set_error(c, error, CONFIG_ERROR_INVALID_VALUE, g,
                         "salt_mapping",
                         "salt_mapping = %s needs buckets, "
                         "the bucket count the tool wrote with (%s); it has "
                         "no default",
                         name,
                         mapping == SALT_MAPPING_PHOENIX
                             ? "the table's SALT_BUCKETS"
                         : mapping == SALT_MAPPING_HBASEWD
                             ? "OneByteSimpleHash's maxBuckets"
                             : "the sample's SALT_RANGE");
        return FALSE;
    }
    if (!config_parse_u64(value, strlen(value), &n) || n > G_MAXUINT32) {
        config_set_error(c, error, CONFIG_ERROR_INVALID_VALUE, g, "buckets",
                         "'%s' is not a whole number%s", value,
                         config_hint(value));
        return FALSE;
    }
    if (!salt_table_init_mapping(t, mapping, (uint32_t)n, &ierror)) {
        config_set_error(c, error, CONFIG_ERROR_INVALID_VALUE, g, "buckets",
                         "%s", ierror->message);
        return FALSE;
    }
    return TRUE;
}

/* Our own mapping: buckets, salt_format, salt_separator, hash_part. */
static gboolean
config_take_xxh3(struct config_ctx *c, const char *g, struct salt_table *t,
                 GError **error)
{
    static const char *const formats[] = { "byte", "hex", "decimal", NULL };
    g_autofree char *sep_raw = NULL;
    g_autoptr(GBytes) sep = NULL;
    g_autoptr(GError) ierror = NULL;
    unsigned buckets, format;

    if (!config_take_uint(c, g, "buckets", 1, SALT_MAX_BUCKETS,
                          CONFIG_DEFAULT_BUCKETS, &buckets, error) ||
        !config_take_enum(c, g, "salt_format", formats, SALT_FORMAT_BYTE,
                          &format, error)) {
        return FALSE;
    }
    sep_raw = config_take(c, g, "salt_separator");
    sep = escape_decode(sep_raw != NULL ? sep_raw : "", &ierror);
    if (sep == NULL) {
        config_set_error(c, error, CONFIG_ERROR_INVALID_VALUE, g,
                         "salt_separator", "'%s': %s", sep_raw,
                         ierror->message);
        return FALSE;
    }
    if (!salt_table_init(t, buckets, (salt_format_t)format,
                         g_bytes_get_data(sep, NULL), g_bytes_get_size(sep),
                         &ierror)) {
        config_set_error(c, error, CONFIG_ERROR_INVALID_VALUE, g,
                         "salt_separator", "%s", ierror->message);
        return FALSE;
    }
    return config_take_hash_part(c, g, t, error);
}

static gboolean
config_parse_table(struct config_ctx *c, const char *g, GArray *tables,
                   GHashTable *names, GError **error)
{
    const char *name = g + strlen(CONFIG_TABLE_PREFIX);
    const char *colon;
    struct config_table table = { 0 };
    unsigned mapping;
    gboolean dflt;

    /* HBase treats "default:x" and "x" as one table: so must we, or rows
     * written under one name would go unsalted under the other. */
    dflt = g_str_has_prefix(name, "default:");
    if (dflt) {
        name += strlen("default:");
    }
    colon = strchr(name, ':');
    /* "default:ns:x" names no HBase table, and as "ns:x" it would be
     * stored under a name config_find_table never looks up */
    if (dflt && colon != NULL) {
        colon = name;
    }
    if (colon != NULL
            ? !config_valid_table_part(name, (size_t)(colon - name), FALSE) ||
                  !config_valid_table_part(colon + 1, strlen(colon + 1), TRUE)
            : !config_valid_table_part(name, strlen(name), TRUE)) {
        config_set_error(c, error, CONFIG_ERROR_INVALID_GROUP, g, NULL,
                         "'%s' is not an HBase table name ([ns:]name, "
                         "letters, digits, '_', and '.' or '-' after the "
                         "first character of the name)",
                         name);
        return FALSE;
    }
    if (g_str_has_prefix(name, "hbase:")) {
        config_set_error(c, error, CONFIG_ERROR_INVALID_GROUP, g, NULL,
                         "tables of HBase's own namespace cannot be salted");
        return FALSE;
    }
    if (g_hash_table_contains(names, name)) {
        config_set_error(c, error, CONFIG_ERROR_DUPLICATE, g, NULL,
                         "table '%s' configured twice (also as [%s])", name,
                         (const char *)g_hash_table_lookup(names, name));
        return FALSE;
    }

    if (!config_take_enum(c, g, "salt_mapping", salt_mapping_names,
                          SALT_MAPPING_XXH3, &mapping, error)) {
        return FALSE;
    }
    if (mapping != SALT_MAPPING_XXH3
            ? !config_take_adopted(c, g, (salt_mapping_t)mapping, &table.salt,
                                   error)
            : !config_take_xxh3(c, g, &table.salt, error)) {
        return FALSE;
    }
    if (!config_take_legacy(c, g, &table.salt, error)) {
        return FALSE;
    }
    {
        static const char *const bools[] = { "false", "true", NULL };
        unsigned on;

        if (!config_take_enum(c, g, "keyviz", bools, 1, &on, error)) {
            return FALSE;
        }
        table.keyviz_off = on == 0;
    }

    table.name = g_strdup(name);
    table.name_len = strlen(name);
    g_array_append_val(tables, table);
    g_hash_table_insert(names, g_strdup(name), g_strdup(g));
    return TRUE;
}

/* The keys each group knows, for "unknown key" messages. */
static const char *
config_known_keys(const char *group)
{
    if (strcmp(group, "proxy") == 0) {
        return "listen, workers, max_frame_size, max_connections, "
               "client_idle_timeout_ms";
    }
    if (strcmp(group, "backend") == 0) {
        return "servers, thrift2_servers, protocol, transport, "
               "connect_timeout_ms, request_timeout_ms, slow_call_ms, "
               "scan_resume_attempts, read_retry_after_ms, "
               "pool_size, sasl, "
               "sasl_principal, sasl_keytab, sasl_service, sasl_qop, "
               "sasl_server_host, http_path, http_doas, https, tls_ca, "
               "tls_verify_hostname, tls_cert, tls_key, custom_filters";
    }
    if (strcmp(group, "thrift2") == 0) {
        return "listen";
    }
    if (strcmp(group, "scan") == 0) {
        return "caching_max, scanner_timeout_ms";
    }
    if (strcmp(group, "admin") == 0) {
        return "listen";
    }
    if (strcmp(group, "catalog") == 0) {
        return "table, state_dir, recheck_ms";
    }
    if (strcmp(group, "http") == 0) {
        return "listen, thrift2_listen";
    }
    if (strcmp(group, "tls") == 0) {
        return "listen, cert, key, client_ca, handshake_timeout_ms";
    }
    if (strcmp(group, "keyviz") == 0) {
        return "enabled, interval_s, ranges, hot_keys, hot_key_sampling, "
               "retain_s, keys, unsalted_tables";
    }
    return "buckets, salt_format, salt_separator, hash_part, salt_mapping, "
           "legacy_component, legacy_cutoff, legacy_range_start, "
           "legacy_range_stop, keyviz";
}

/* Whatever a group parser did not consume is a typo. */
static gboolean
config_check_leftovers(struct config_ctx *c, const char *g, GError **error)
{
    g_auto(GStrv) keys = g_key_file_get_keys(c->kf, g, NULL, NULL);

    if (keys == NULL || keys[0] == NULL) {
        return TRUE;
    }
    config_set_error(c, error, CONFIG_ERROR_INVALID_KEY, g, keys[0],
                     "unknown key (known here: %s)", config_known_keys(g));
    return FALSE;
}

static int
config_table_cmp(gconstpointer pa, gconstpointer pb)
{
    const struct config_table *a = pa, *b = pb;
    size_t n = MIN(a->name_len, b->name_len);
    int r = memcmp(a->name, b->name, n);

    if (r != 0) {
        return r;
    }
    return (a->name_len > b->name_len) - (a->name_len < b->name_len);
}

/* The fixed groups, in the order an absent one takes its defaults. */
static const struct config_group {
    const char *name;
    gboolean (*parse)(struct config_ctx *c, const char *g, GError **error);
} config_groups[] = {
    { "proxy", config_parse_proxy },     { "backend", config_parse_backend },
    { "scan", config_parse_scan },       { "admin", config_parse_admin },
    { "thrift2", config_parse_thrift2 }, { "catalog", config_parse_catalog },
    { "tls", config_parse_tls },         { "http", config_parse_http },
    { "keyviz", config_parse_keyviz },
};

static const struct config_group *
config_group_find(const char *g)
{
    for (size_t i = 0; i < G_N_ELEMENTS(config_groups); i++) {
        if (strcmp(config_groups[i].name, g) == 0) {
            return &config_groups[i];
        }
    }
    return NULL;
}

static gboolean
config_parse(struct config_ctx *c, GError **error)
{
    g_auto(GStrv) groups = g_key_file_get_groups(c->kf, NULL);
    g_autoptr(GArray) tables = g_array_new(FALSE, TRUE,
                                           sizeof(struct config_table));
    g_autoptr(GHashTable) names = g_hash_table_new_full(g_str_hash,
                                                        g_str_equal, g_free,
                                                        g_free);
    gboolean ok = TRUE;

    for (size_t i = 0; ok && groups[i] != NULL; i++) {
        const char *g = groups[i];

        const struct config_group *known = config_group_find(g);

        if (known != NULL) {
            ok = known->parse(c, g, error);
        } else if (g_str_has_prefix(g, CONFIG_TABLE_PREFIX)) {
            ok = config_parse_table(c, g, tables, names, error);
        } else {
            config_set_error(c, error, CONFIG_ERROR_INVALID_GROUP, g, NULL,
                             "unknown group (known: [proxy], [backend], "
                             "[scan], [admin], [thrift2], [catalog], "
                             "[tls], [http], [keyviz], [table:NAME])");
            ok = FALSE;
        }
        ok = ok && config_check_leftovers(c, g, error);
    }
    /* Absent groups still set their defaults: a missing group reads as
     * one with no keys. */
    for (size_t i = 0; ok && i < G_N_ELEMENTS(config_groups); i++) {
        const struct config_group *d = &config_groups[i];

        if (!g_key_file_has_group(c->kf, d->name)) {
            ok = d->parse(c, d->name, error);
        }
    }
    if (ok && c->cfg->http2_enabled && c->cfg->n_thrift2_servers == 0) {
        config_set_error(c, error, CONFIG_ERROR_INVALID_VALUE, "http",
                         "thrift2_listen",
                         "needs [backend] thrift2_servers, the HBase "
                         "Thrift2 servers its clients' calls go to");
        ok = FALSE;
    }
    if (ok && c->cfg->thrift2_enabled && c->cfg->n_thrift2_servers == 0) {
        /* a Thrift2 client's calls go to Thrift2 servers only: HBase
         * runs the two services as separate servers */
        config_set_error(c, error, CONFIG_ERROR_INVALID_VALUE, "thrift2",
                         "listen",
                         "needs [backend] thrift2_servers, the HBase "
                         "Thrift2 servers (hbase thrift2) its clients' "
                         "calls go to");
        ok = FALSE;
    }

    g_array_sort(tables, config_table_cmp);
    c->cfg->n_tables = tables->len;
    c->cfg->tables = (struct config_table *)(void *)
        g_array_free(g_steal_pointer(&tables), FALSE);
    return ok && config_check_keyviz_unsalted(c, error);
}

struct config *
config_load_data(const char *data, size_t len, const char *name_for_errors,
                 GError **error)
{
    g_autoptr(config_t) cfg = g_new0(struct config, 1);
    g_autoptr(GKeyFile) kf = g_key_file_new();
    g_autoptr(GHashTable) lines = g_hash_table_new_full(g_str_hash,
                                                        g_str_equal, g_free,
                                                        NULL);
    g_autoptr(GError) ierror = NULL;
    struct config_ctx c = {
        .source = name_for_errors != NULL ? name_for_errors : "(config)",
        .kf = kf,
        .lines = lines,
        .cfg = cfg,
    };

    g_return_val_if_fail(data != NULL || len == 0, NULL);
    g_return_val_if_fail(error == NULL || *error == NULL, NULL);

    cfg->source = g_strdup(c.source);
    if (len > 0 && memchr(data, '\0', len) != NULL) {
        g_set_error(error, CONFIG_ERROR, CONFIG_ERROR_PARSE,
                    "%s: contains a NUL byte", c.source);
        return NULL;
    }
    if (!config_scan_lines(&c, data != NULL ? data : "", len, error)) {
        return NULL;
    }
    if (!g_key_file_load_from_data(kf, data != NULL ? data : "", len,
                                   G_KEY_FILE_NONE, &ierror)) {
        g_set_error(error, CONFIG_ERROR, CONFIG_ERROR_PARSE,
                    "%s: not a valid configuration file: %s", c.source,
                    ierror->message);
        return NULL;
    }

    if (!config_parse(&c, error)) {
        return NULL;
    }
    return g_steal_pointer(&cfg);
}

struct config *
config_load(const char *path, GError **error)
{
    g_autofree char *data = NULL;
    g_autoptr(GError) ierror = NULL;
    gsize len = 0;

    g_return_val_if_fail(path != NULL, NULL);

    if (!g_file_get_contents(path, &data, &len, &ierror)) {
        gboolean noent = g_error_matches(ierror, G_FILE_ERROR,
                                         G_FILE_ERROR_NOENT);

        /* GLib's text names the file but not what it is for */
        g_set_error(error, CONFIG_ERROR,
                    noent ? CONFIG_ERROR_NOT_FOUND : CONFIG_ERROR_IO,
                    "%s: cannot read the configuration file: %s", path,
                    noent ? "no such file" : ierror->message);
        return NULL;
    }
    return config_load_data(data, len, path, error);
}

struct config *
config_new_default(void)
{
    g_autoptr(GError) error = NULL;
    struct config *cfg = config_load_data("", 0, "(defaults)", &error);

    /* The built-in defaults always validate; test_config holds them to it. */
    g_assert_no_error(error);
    return cfg;
}

void
config_free(struct config *cfg)
{
    if (cfg == NULL) {
        return;
    }
    g_free(cfg->source);
    g_free(cfg->listen.host);
    config_addrs_free(cfg->servers, cfg->n_servers);
    config_addrs_free(cfg->thrift2_servers, cfg->n_thrift2_servers);
    g_strfreev(cfg->custom_filters);
    g_strfreev(cfg->custom_filter_specs);
    g_strfreev(cfg->custom_filter_classes);
    g_free(cfg->thrift2_listen.host);
    g_free(cfg->sasl_principal);
    g_free(cfg->sasl_keytab);
    g_free(cfg->sasl_service);
    g_free(cfg->sasl_server_host);
    g_free(cfg->http_path);
    g_free(cfg->http_doas);
    g_free(cfg->backend_tls_ca);
    g_free(cfg->backend_tls_cert);
    g_free(cfg->backend_tls_key);
    g_free(cfg->admin_listen.host);
    g_free(cfg->catalog_table);
    g_free(cfg->catalog_state_dir);
    g_free(cfg->tls_listen.host);
    g_free(cfg->http_listen.host);
    g_free(cfg->http2_listen.host);
    g_free(cfg->tls_cert);
    g_free(cfg->tls_key);
    g_free(cfg->tls_client_ca);
    for (size_t i = 0; i < cfg->n_tables; i++) {
        g_free(cfg->tables[i].name);
    }
    g_free(cfg->tables);
    for (size_t i = 0; i < cfg->n_keyviz_unsalted; i++) {
        g_free(cfg->keyviz_unsalted[i].name);
    }
    g_free(cfg->keyviz_unsalted);
    g_free(cfg);
}

/* Binary search of n items stride bytes apart, each starting with a
 * name and its length (config_table, config_orphan), for name: "default:x"
 * finds "x", as HBase treats them as one table. */
static const void *
config_find_named(const void *items, size_t n, size_t stride, const void *name,
                  size_t len)
{
    const uint8_t *key = name;
    size_t lo = 0, hi = n;

    G_STATIC_ASSERT(offsetof(struct config_table, name) == 0 &&
                    offsetof(struct config_orphan, name) == 0);
    G_STATIC_ASSERT(offsetof(struct config_table, name_len) ==
                    offsetof(struct config_orphan, name_len));
    if (len > 8 && memcmp(key, "default:", 8) == 0) {
        key += 8;
        len -= 8;
    }
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        const char *item = (const char *)items + mid * stride;
        const char *item_name = *(char *const *)(const void *)item;
        size_t item_len =
            *(const size_t *)(const void *)(item +
                                            offsetof(struct config_table,
                                                     name_len));
        int r = memcmp(item_name, key, MIN(item_len, len));

        if (r == 0) {
            r = (item_len > len) - (item_len < len);
        }
        if (r == 0) {
            return item;
        }
        if (r < 0) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    return NULL;
}

const struct config_table *
config_find_table(const struct config *cfg, const void *name, size_t len)
{
    return config_find_named(cfg->tables, cfg->n_tables,
                             sizeof(struct config_table), name, len);
}

const struct config_table *
config_find_keyviz_unsalted(const struct config *cfg, const void *name,
                            size_t len)
{
    return config_find_named(cfg->keyviz_unsalted, cfg->n_keyviz_unsalted,
                             sizeof(struct config_table), name, len);
}

const char *
config_orphans_find(const struct config_orphans *set, const void *name,
                    size_t len)
{
    const struct config_orphan *o;

    if (set == NULL) {
        return NULL;
    }
    o = config_find_named(set->items, set->n, sizeof(struct config_orphan),
                          name, len);
    return o != NULL ? o->why : NULL;
}

char *
config_addr_to_string(const struct config_addr *addr)
{
    if (strchr(addr->host, ':') != NULL) {
        return g_strdup_printf("[%s]:%u", addr->host, addr->port);
    }
    return g_strdup_printf("%s:%u", addr->host, addr->port);
}

/* The legacy rule's keys, each on its line; nothing for none. */
static void
config_legacy_to_text(GString *out, const struct legacy_rule *r)
{
    switch (r->kind) {
    case LEGACY_COMPONENT:
        g_string_append(out, "legacy_component = ");
        legacy_component_append(out, r);
        g_string_append(out, "\nlegacy_cutoff = ");
        escape_append(out, r->cutoff, r->cutoff_len);
        g_string_append_c(out, '\n');
        break;
    case LEGACY_RANGE:
        g_string_append(out, "legacy_range_start = ");
        escape_append(out, r->start, r->start_len);
        g_string_append(out, "\nlegacy_range_stop = ");
        escape_append(out, r->stop, r->stop_len);
        g_string_append_c(out, '\n');
        break;
    default: break;
    }
}

char *
config_to_text(const struct config *cfg)
{
    GString *out = g_string_new(NULL);
    g_autofree char *listen = config_addr_to_string(&cfg->listen);
    g_autofree char *frame = config_size_str(cfg->max_frame_size);

    g_string_append_printf(out,
                           "# effective configuration, loaded from %s\n"
                           "\n[proxy]\nlisten = %s\nworkers = %u\n"
                           "max_frame_size = %s\nmax_connections = %u\n"
                           "client_idle_timeout_ms = %u\n\n[backend]\n"
                           "servers = ",
                           cfg->source != NULL ? cfg->source : "(defaults)",
                           listen, cfg->workers, frame, cfg->max_connections,
                           cfg->client_idle_timeout_ms);
    for (size_t i = 0; i < cfg->n_servers; i++) {
        g_autofree char *s = config_addr_to_string(&cfg->servers[i]);

        g_string_append_printf(out, "%s%s", i > 0 ? ", " : "", s);
    }
    g_string_append(out, "\nthrift2_servers = ");
    for (size_t i = 0; i < cfg->n_thrift2_servers; i++) {
        g_autofree char *s = config_addr_to_string(&cfg->thrift2_servers[i]);

        g_string_append_printf(out, "%s%s", i > 0 ? ", " : "", s);
    }
    g_string_append_printf(out,
                           "\nprotocol = %s\ntransport = %s\n"
                           "connect_timeout_ms = %u\nrequest_timeout_ms = %u\n"
                           "slow_call_ms = %u\npool_size = %u\n"
                           "scan_resume_attempts = %u\n"
                           "read_retry_after_ms = %u\n",
                           cfg->protocol == CONFIG_PROTOCOL_COMPACT ? "compact"
                                                                    : "binary",
                           cfg->transport == CONFIG_TRANSPORT_HTTP ? "http"
                           : cfg->transport == CONFIG_TRANSPORT_FRAMED
                               ? "framed"
                               : "buffered",
                           cfg->connect_timeout_ms, cfg->request_timeout_ms,
                           cfg->slow_call_ms, cfg->pool_size,
                           cfg->scan_resume_attempts,
                           cfg->read_retry_after_ms);
    if (cfg->custom_filter_specs != NULL && cfg->custom_filter_specs[0]) {
        g_autofree char *specs = g_strjoinv(", ", cfg->custom_filter_specs);

        g_string_append_printf(out, "custom_filters = %s\n", specs);
    }
    if (cfg->transport == CONFIG_TRANSPORT_HTTP) {
        g_string_append_printf(out, "http_path = %s\nhttps = %s\n",
                               cfg->http_path, cfg->https ? "true" : "false");
        if (cfg->http_doas != NULL) {
            g_string_append_printf(out, "http_doas = %s\n", cfg->http_doas);
        }
        if (cfg->https) {
            g_string_append_printf(out, "tls_verify_hostname = %s\n",
                                   cfg->backend_tls_verify_hostname ? "true"
                                                                    : "false");
            if (cfg->backend_tls_ca != NULL) {
                g_string_append_printf(out, "tls_ca = %s\n",
                                       cfg->backend_tls_ca);
            }
            if (cfg->backend_tls_cert != NULL) {
                g_string_append_printf(out, "tls_cert = %s\ntls_key = %s\n",
                                       cfg->backend_tls_cert,
                                       cfg->backend_tls_key);
            }
        }
    }
    if (cfg->sasl == CONFIG_SASL_GSSAPI) {
        g_string_append_printf(out,
                               "sasl = gssapi\nsasl_principal = %s\n"
                               "sasl_keytab = %s\nsasl_service = %s\n",
                               cfg->sasl_principal, cfg->sasl_keytab,
                               cfg->sasl_service);
        if (cfg->transport != CONFIG_TRANSPORT_HTTP) {
            g_string_append_printf(out, "sasl_qop = %s\n",
                                   config_qop_name(cfg->sasl_qop));
        }
        if (cfg->sasl_server_host != NULL) {
            g_string_append_printf(out, "sasl_server_host = %s\n",
                                   cfg->sasl_server_host);
        }
    } else {
        g_string_append(out, "sasl = none\n");
    }
    g_string_append_printf(out,
                           "\n[scan]\ncaching_max = %u\n"
                           "scanner_timeout_ms = %u\n\n[admin]\nlisten = ",
                           cfg->scan_caching_max,
                           cfg->scan_scanner_timeout_ms);
    if (cfg->admin_enabled) {
        g_autofree char *admin = config_addr_to_string(&cfg->admin_listen);

        g_string_append(out, admin);
    }
    g_string_append(out, "\n\n[thrift2]\nlisten = ");
    if (cfg->thrift2_enabled) {
        g_autofree char *t2 = config_addr_to_string(&cfg->thrift2_listen);

        g_string_append(out, t2);
    }
    g_string_append_printf(out,
                           "\n\n[catalog]\ntable = %s\nstate_dir = %s\n"
                           "recheck_ms = %u\n",
                           cfg->catalog_table != NULL ? cfg->catalog_table
                                                      : "",
                           cfg->catalog_state_dir, cfg->catalog_recheck_ms);
    g_string_append(out, "\n[tls]\nlisten = ");
    if (cfg->tls_enabled) {
        g_autofree char *tl = config_addr_to_string(&cfg->tls_listen);

        g_string_append_printf(out, "%s\ncert = %s\nkey = %s\n", tl,
                               cfg->tls_cert, cfg->tls_key);
        if (cfg->tls_client_ca != NULL) {
            g_string_append_printf(out, "client_ca = %s\n",
                                   cfg->tls_client_ca);
        }
    } else {
        g_string_append_c(out, '\n');
    }
    g_string_append_printf(out, "handshake_timeout_ms = %u\n",
                           cfg->tls_handshake_timeout_ms);
    {
        g_autofree char *h1 = cfg->http_enabled
                                  ? config_addr_to_string(&cfg->http_listen)
                                  : g_strdup("");
        g_autofree char *h2 = cfg->http2_enabled
                                  ? config_addr_to_string(&cfg->http2_listen)
                                  : g_strdup("");

        g_string_append_printf(out,
                               "\n[http]\nlisten = %s\n"
                               "thrift2_listen = %s\n",
                               h1, h2);
    }
    {
        static const char *const keys[] = { "show", "hash", "hide" };

        g_string_append_printf(out,
                               "\n[keyviz]\nenabled = %s\ninterval_s = %u\n"
                               "ranges = %u\nhot_keys = %u\n"
                               "hot_key_sampling = %u\nretain_s = %u\n"
                               "keys = %s\n",
                               cfg->keyviz.enabled ? "true" : "false",
                               cfg->keyviz.interval_s, cfg->keyviz.ranges,
                               cfg->keyviz.hot_keys,
                               cfg->keyviz.hot_key_sampling,
                               cfg->keyviz.retain_s, keys[cfg->keyviz.keys]);
        for (size_t i = 0; i < cfg->n_keyviz_unsalted; i++) {
            g_string_append_printf(out, "%s%s",
                                   i == 0 ? "unsalted_tables = " : ", ",
                                   cfg->keyviz_unsalted[i].name);
        }
        if (cfg->n_keyviz_unsalted > 0) {
            g_string_append_c(out, '\n');
        }
    }
    for (size_t i = 0; i < cfg->n_tables; i++) {
        g_string_append_printf(out, "\n[table:%s]\n", cfg->tables[i].name);
        config_mapping_to_text(out, &cfg->tables[i].salt);
        if (cfg->tables[i].keyviz_off) {
            g_string_append(out, "keyviz = false\n");
        }
    }
    return g_string_free(out, FALSE);
}

gboolean
config_mapping_parse(const char *table, const char *text,
                     struct salt_table *out, GError **error)
{
    g_autofree char *data =
        g_strdup_printf("[catalog]\ntable =\n\n[table:%s]\n%s", table, text);
    g_autofree char *what = g_strdup_printf("catalog entry of %s", table);
    g_autoptr(config_t) cfg = config_load_data(data, strlen(data), what,
                                               error);

    if (cfg == NULL) {
        return FALSE;
    }
    if (cfg->n_tables != 1) {
        g_set_error(error, CONFIG_ERROR, CONFIG_ERROR_INVALID_GROUP,
                    "%s: holds %zu table sections", what, cfg->n_tables);
        return FALSE;
    }
    *out = cfg->tables[0].salt;
    return TRUE;
}

void
config_mapping_to_text(GString *out, const struct salt_table *t)
{
    static const char *const formats[] = {
        [SALT_FORMAT_BYTE] = "byte",
        [SALT_FORMAT_HEX] = "hex",
        [SALT_FORMAT_DECIMAL] = "decimal",
    };

    if (t->mapping != SALT_MAPPING_XXH3) {
        /* the tool's salt: nothing else to say */
        g_string_append_printf(out, "buckets = %u\nsalt_mapping = %s\n",
                               t->modulus, salt_mapping_name(t->mapping));
        return;
    }
    g_string_append_printf(out,
                           "buckets = %u\n"
                           "salt_format = %s\nsalt_separator = ",
                           t->buckets, formats[t->format]);
    escape_append(out, t->sep, t->sep_len);
    g_string_append(out, "\nhash_part = ");
    switch (t->hash) {
    case SALT_HASH_LENGTH:
        g_string_append_printf(out, "length:%u", t->hash_len);
        break;
    case SALT_HASH_DELIMITER:
        g_string_append(out, "delimiter:");
        escape_append(out, t->delim, t->delim_len);
        g_string_append_printf(out, ":%u", t->hash_count);
        break;
    default: g_string_append(out, "whole"); break;
    }
    g_string_append(out, "\nsalt_mapping = xxh3\n");
    config_legacy_to_text(out, &t->legacy);
}

/* Whether a listener moved, appeared or went: compared as printed, so
 * that the same address spelt the same way is no change. */
static gboolean
config_listen_changed(gboolean was_on, const struct config_addr *was,
                      gboolean is_on, const struct config_addr *is)
{
    g_autofree char *a = was_on ? config_addr_to_string(was) : NULL;
    g_autofree char *b = is_on ? config_addr_to_string(is) : NULL;

    return g_strcmp0(a, b) != 0;
}

gboolean
config_reload_check(const struct config *old, const struct config *cfg,
                    GError **error)
{
    g_autofree char *a = NULL;
    g_autofree char *b = NULL;

    for (size_t i = 0; i < old->n_tables; i++) {
        const struct config_table *t = &old->tables[i];
        const struct config_table *n = config_find_table(cfg, t->name,
                                                         t->name_len);

        if (n == NULL) {
            a = salt_table_describe(&t->salt);
            g_set_error(error, CONFIG_ERROR, CONFIG_ERROR_REFUSED,
                        "[table:%s] was removed: the table's rows are "
                        "stored salted (%s), and without its section the "
                        "proxy would pass the table through unsalted, so "
                        "existing rows would become unreachable; put the "
                        "section back",
                        t->name, a);
            return FALSE;
        }
        if (!salt_table_equal(&t->salt, &n->salt)) {
            a = salt_table_describe(&t->salt);
            b = salt_table_describe(&n->salt);
            g_set_error(error, CONFIG_ERROR, CONFIG_ERROR_REFUSED,
                        "[table:%s]: the salt mapping would change from "
                        "'%s' to '%s': existing rows would become "
                        "unreachable (a new mapping needs a new table and "
                        "a copy of the data)",
                        t->name, a, b);
            return FALSE;
        }
    }
#define CONFIG_RESTART_ONLY(changed, what)                                    \
    if (changed) {                                                            \
        g_set_error(error, CONFIG_ERROR, CONFIG_ERROR_REFUSED,                \
                    "%s changed: that needs a restart, not a reload", what);  \
        return FALSE;                                                         \
    }
    CONFIG_RESTART_ONLY(config_listen_changed(TRUE, &old->listen, TRUE,
                                              &cfg->listen),
                        "[proxy] listen")
    CONFIG_RESTART_ONLY(old->workers != cfg->workers, "[proxy] workers")
    CONFIG_RESTART_ONLY(old->protocol != cfg->protocol, "[backend] protocol")
    CONFIG_RESTART_ONLY(old->transport != cfg->transport,
                        "[backend] transport")
    /* one set of Kerberos credentials per process, and connections
     * that outlive a reload */
    CONFIG_RESTART_ONLY(
        old->sasl != cfg->sasl ||
            g_strcmp0(old->sasl_principal, cfg->sasl_principal) != 0 ||
            g_strcmp0(old->sasl_keytab, cfg->sasl_keytab) != 0 ||
            g_strcmp0(old->sasl_service, cfg->sasl_service) != 0 ||
            old->sasl_qop != cfg->sasl_qop ||
            g_strcmp0(old->sasl_server_host, cfg->sasl_server_host) != 0,
        "[backend] sasl or a sasl_* key")
    CONFIG_RESTART_ONLY(g_strcmp0(old->http_path, cfg->http_path) != 0 ||
                            g_strcmp0(old->http_doas, cfg->http_doas) != 0 ||
                            old->https != cfg->https ||
                            g_strcmp0(old->backend_tls_ca,
                                      cfg->backend_tls_ca) != 0 ||
                            old->backend_tls_verify_hostname !=
                                cfg->backend_tls_verify_hostname ||
                            g_strcmp0(old->backend_tls_cert,
                                      cfg->backend_tls_cert) != 0 ||
                            g_strcmp0(old->backend_tls_key,
                                      cfg->backend_tls_key) != 0,
                        "[backend] an http_*, https or tls_* key")
#define CONFIG_LISTEN_RESTART_ONLY(on, addr, what)                            \
    CONFIG_RESTART_ONLY(config_listen_changed(old->on, &old->addr, cfg->on,   \
                                              &cfg->addr),                    \
                        what)
    CONFIG_LISTEN_RESTART_ONLY(admin_enabled, admin_listen, "[admin] listen")
    CONFIG_LISTEN_RESTART_ONLY(thrift2_enabled, thrift2_listen,
                               "[thrift2] listen")
    /* the certificate, key and client CA are read again on every reload */
    CONFIG_LISTEN_RESTART_ONLY(tls_enabled, tls_listen, "[tls] listen")
    CONFIG_LISTEN_RESTART_ONLY(http_enabled, http_listen, "[http] listen")
    CONFIG_LISTEN_RESTART_ONLY(http2_enabled, http2_listen,
                               "[http] thrift2_listen")
#undef CONFIG_LISTEN_RESTART_ONLY
    /* the counters are sized by these when the proxy starts; keys and a
     * table's keyviz key may change */
    CONFIG_RESTART_ONLY(old->keyviz.enabled != cfg->keyviz.enabled ||
                            old->keyviz.interval_s != cfg->keyviz.interval_s ||
                            old->keyviz.ranges != cfg->keyviz.ranges ||
                            old->keyviz.hot_keys != cfg->keyviz.hot_keys ||
                            old->keyviz.hot_key_sampling !=
                                cfg->keyviz.hot_key_sampling ||
                            old->keyviz.retain_s != cfg->keyviz.retain_s,
                        "[keyviz] enabled, interval_s, ranges, hot_keys, "
                        "hot_key_sampling or retain_s")
#undef CONFIG_RESTART_ONLY
    return TRUE;
}

char **
config_advice(const struct config *cfg)
{
    g_autoptr(GPtrArray) out = g_ptr_array_new_with_free_func(g_free);

    for (size_t i = 0; i < cfg->n_tables; i++) {
        const struct config_table *t = &cfg->tables[i];

        /* a scan holds one connection per bucket on its worker */
        if (cfg->pool_size < t->salt.buckets) {
            g_ptr_array_add(
                out,
                g_strdup_printf(
                    "[backend] pool_size = %u is below the %u buckets of "
                    "[table:%s]: a scan of it reads at most %u buckets at a "
                    "time per worker and waits for the rest; raise pool_size "
                    "to at least %u",
                    cfg->pool_size, t->salt.buckets, t->name, cfg->pool_size,
                    t->salt.buckets));
        }
    }
    if (cfg->n_thrift2_servers > 0 && !cfg->thrift2_enabled) {
        g_ptr_array_add(
            out,
            g_strdup(
                "[backend] thrift2_servers is set but [thrift2] listen is "
                "not: no client reaches those servers; set [thrift2] listen "
                "to serve Thrift2 clients"));
    }
    if (cfg->scan_scanner_timeout_ms >= CONFIG_HBASE_SCANNER_EXPIRY_MS) {
        g_ptr_array_add(
            out,
            g_strdup_printf(
                "[scan] scanner_timeout_ms = %u is not below HBase's %u ms "
                "scanner expiry: HBase may drop a bucket scanner of a client "
                "scanner the proxy still keeps, and that scanner then fails; "
                "keep it below %u",
                cfg->scan_scanner_timeout_ms, CONFIG_HBASE_SCANNER_EXPIRY_MS,
                CONFIG_HBASE_SCANNER_EXPIRY_MS));
    }
    if (cfg->sasl == CONFIG_SASL_GSSAPI && cfg->sasl_server_host == NULL) {
        for (size_t i = 0; i < cfg->n_servers; i++) {
            const char *h = cfg->servers[i].host;

            /* Kerberos names hosts, not addresses */
            if (strchr(h, ':') != NULL ||
                strspn(h, "0123456789.") == strlen(h)) {
                g_autofree char *sp = config_sasl_server_principal(cfg, h);

                g_ptr_array_add(
                    out,
                    g_strdup_printf(
                        "[backend] sasl: server %s is an address, so its "
                        "principal would be %s; HBase's principals name hosts: "
                        "list the server by name, or set sasl_server_host",
                        h, sp));
                break;
            }
        }
    }
    g_ptr_array_add(out, NULL);
    return (char **)g_ptr_array_free(g_steal_pointer(&out), FALSE);
}
