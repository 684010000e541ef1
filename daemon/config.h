/* config.h: the configuration file, parsed strictly into plain structs. */
#pragma once

#include <glib.h>
#include <stddef.h>
#include <stdint.h>

#include "salt.h"

/*
 * GKeyFile syntax with these rules on top:
 *  - every group and key must be known; a typo is an error, never a
 *    silently unsalted table;
 *  - a group or a key may appear only once;
 *  - comments sit on their own line ('#' inside a value is part of it);
 *  - sizes take B, KiB, MiB, GiB or plain bytes;
 *  - salt_separator and the SEP of hash_part accept \xNN, \\, \s, \t, \n, \r
 *    escapes, so they may hold any byte (and \xNN is how --explain-key and
 *    the HBase shell print bytes).
 * Error messages start "FILE:LINE: [group] key: " (LINE, group and key
 * where they apply), so callers print them as they are.
 * A missing key takes its default; conf/hbase-salt-proxy.conf lists them.
 */

#define CONFIG_ERROR config_error_quark()
GQuark config_error_quark(void);

typedef enum {
    CONFIG_ERROR_NOT_FOUND,     /* the file does not exist */
    CONFIG_ERROR_IO,            /* the file cannot be read */
    CONFIG_ERROR_PARSE,         /* not key file syntax */
    CONFIG_ERROR_DUPLICATE,     /* a group or key given twice */
    CONFIG_ERROR_INVALID_GROUP, /* unknown group, or bad table name */
    CONFIG_ERROR_INVALID_KEY,   /* unknown key in a known group */
    CONFIG_ERROR_INVALID_VALUE, /* a value that does not parse or fit */
    CONFIG_ERROR_REFUSED,       /* valid, but not as a reload of another */
} config_error_t;

/* Values equal wire_proto_t's WIRE_BINARY / WIRE_COMPACT on purpose. */
typedef enum {
    CONFIG_PROTOCOL_BINARY = 0,
    CONFIG_PROTOCOL_COMPACT = 1,
} config_protocol_t;

typedef enum {
    CONFIG_TRANSPORT_BUFFERED = 0,
    CONFIG_TRANSPORT_FRAMED = 1,
    CONFIG_TRANSPORT_HTTP = 2, /* HBase's -http mode: a POST per message */
} config_transport_t;

/* SASL toward the backend.  The QOP values equal sasl_qop_t's (RFC 4752's
 * layer bits) on purpose. */
typedef enum {
    CONFIG_SASL_NONE = 0,
    CONFIG_SASL_GSSAPI = 1,
} config_sasl_t;

typedef enum {
    CONFIG_QOP_AUTH = 1,
    CONFIG_QOP_AUTH_INT = 2,
    CONFIG_QOP_AUTH_CONF = 4,
} config_qop_t;

/* host:port; host without IPv6 brackets, not resolved. */
struct config_addr {
    char *host;    /* "127.0.0.1", "::1", "hbase1.example" */
    uint16_t port; /* 1..65535 */
};

/* One salted table. */
struct config_table {
    char *name; /* as clients send it; "default:" dropped */
    size_t name_len;
    struct salt_table salt; /* the salt policy */
    gboolean keyviz_off;    /* keyviz = false: the key visualizer does not
                               count it */
};

/* A table the table catalog holds as salted that the file has no section
 * for (catalog.c): read or written unsalted, its rows would not be where
 * the proxies salt them, so calls that read or write rows are refused.
 * name and name_len first, as in config_table (one lookup serves both). */
struct config_orphan {
    char *name; /* as the catalog keys it: "table" or "ns:table" */
    size_t name_len;
    const char *why; /* the refusal */
};

/* The orphans one catalog scan found, sorted as config_find_table sorts
 * tables.  One allocation, never changed once published: a new scan
 * publishes another (tabstate.orphans). */
struct config_orphans {
    size_t n;
    struct config_orphan items[];
};

/* How /keyviz shows logical keys. */
typedef enum {
    CONFIG_KEYVIZ_SHOW = 0, /* in the escape syntax (escape.h) */
    CONFIG_KEYVIZ_HASH = 1, /* "#" and 16 hex digits of XXH3 */
    CONFIG_KEYVIZ_HIDE = 2, /* not at all */
} config_keyviz_keys_t;

/* [keyviz]: the key visualizer (keyviz.h). */
struct config_keyviz {
    gboolean enabled;          /* counts anything at all */
    unsigned interval_s;       /* one column of the heatmap */
    unsigned ranges;           /* key ranges per table and interval, at most */
    unsigned hot_keys;         /* hot keys (and hash_part values) kept */
    unsigned hot_key_sampling; /* one read or write in this feeds the
                                  hot-key sketches and the key sample */
    unsigned retain_s;         /* history kept */
    unsigned keys;             /* config_keyviz_keys_t */
};

struct config {
    char *source; /* file name, for messages */

    /* [proxy] */
    struct config_addr listen;       /* where clients connect */
    unsigned workers;                /* worker threads; 0 = one per core */
    uint32_t max_frame_size;         /* bytes of one message or frame */
    unsigned max_connections;        /* client connections at once */
    unsigned client_idle_timeout_ms; /* close idle clients; 0 = never */

    /* [backend] */
    struct config_addr *servers; /* HBase Thrift1 servers, >= 1 */
    size_t n_servers;
    struct config_addr *thrift2_servers; /* HBase Thrift2 servers (hbase
                                       thrift2), for [thrift2] clients;
                                       may be none */
    size_t n_thrift2_servers;
    config_protocol_t protocol; /* what the servers speak */
    config_transport_t transport;
    unsigned connect_timeout_ms;
    unsigned request_timeout_ms;   /* one request, sent to reply */
    unsigned slow_call_ms;         /* a call taking longer is slow (counted,
                                       logged); 0 = none is */
    unsigned pool_size;            /* connections per server per worker */
    unsigned scan_resume_attempts; /* reopens of a scan's bucket whose
                                      backend scanner was lost */
    unsigned read_retry_after_ms;  /* a read unanswered this long goes to
                                      another server; 0 = never early
                                      (default: request_timeout_ms / 3) */
    config_sasl_t sasl;            /* Kerberos toward the servers */
    char *sasl_principal;          /* ours, from sasl_keytab; NULL if off */
    char *sasl_keytab;             /* absolute path; NULL if off */
    char *sasl_service;            /* first part of the server principal */
    config_qop_t sasl_qop;         /* what the servers require */
    char *sasl_server_host;        /* NULL: each server's own host */
    /* transport = http only: */
    char *http_path;                      /* the servlet's path, "/" */
    char *http_doas;                      /* doAs header, NULL: none */
    gboolean https;                       /* TLS to the servers */
    char *backend_tls_ca;                 /* CA file; NULL: the system's */
    gboolean backend_tls_verify_hostname; /* the name in servers, checked */
    char *backend_tls_cert;               /* client certificate, or NULL */
    char *backend_tls_key;
    char **custom_filters;        /* filter names the servers register
                                       (hbase.thrift.filters): NULL-ended,
                                       empty when none; NULL only before a
                                       [backend] group is read */
    char **custom_filter_specs;   /* the same as written, with classes */
    char **custom_filter_classes; /* the classes given, NULL-ended */

    /* [scan] */
    unsigned scan_caching_max;        /* cap on rows per bucket fetch */
    unsigned scan_scanner_timeout_ms; /* expire idle proxy scanners */

    /* [thrift2] */
    gboolean thrift2_enabled;          /* FALSE when [thrift2] listen is empty
                                       (the default) */
    struct config_addr thrift2_listen; /* where Thrift2 clients connect */

    /* [admin] */
    gboolean admin_enabled; /* FALSE when [admin] listen is empty */
    struct config_addr admin_listen;
    /* [keyviz] */
    struct config_keyviz keyviz;
    /* [keyviz] unsalted_tables: tables without a section the key
     * visualizer counts all the same, sorted by name; each a one-bucket
     * salt_table that salts nothing (its buckets count one, its advice
     * says what salting would do) */
    struct config_table *keyviz_unsalted;
    size_t n_keyviz_unsalted;
    /* [http] */
    gboolean http_enabled; /* Thrift1 over HTTP: listen is set */
    struct config_addr http_listen;
    gboolean http2_enabled; /* Thrift2 over HTTP: thrift2_listen */
    struct config_addr http2_listen;
    /* [tls] */
    gboolean tls_enabled;          /* FALSE when [tls] listen is empty */
    struct config_addr tls_listen; /* where TLS clients connect */
    char *tls_cert;                /* PEM chain, leaf first */
    char *tls_key;                 /* its PEM private key */
    char *tls_client_ca;           /* NULL: no client certificate asked */
    unsigned tls_handshake_timeout_ms;
    /* [catalog] */
    char *catalog_table;         /* NULL when off (table = empty) */
    char *catalog_state_dir;     /* the last verified catalog */
    unsigned catalog_recheck_ms; /* while unverified or unreachable */

    /* [table:NAME], sorted by name (memcmp, shorter first) */
    struct config_table *tables;
    size_t n_tables;
};

/* The configuration with no file at all: defaults, no tables. */
struct config *config_new_default(void);

/* Read and validate a file.  CONFIG_ERROR_NOT_FOUND lets a caller fall
 * back to config_new_default() for a default path that is absent. */
struct config *config_load(const char *path, GError **error)
    G_GNUC_WARN_UNUSED_RESULT;

/* The same from memory (tests, fuzzing); name_for_errors names the source
 * in messages.  data need not be NUL-terminated. */
struct config *config_load_data(const char *data, size_t len,
                                const char *name_for_errors, GError **error)
    G_GNUC_WARN_UNUSED_RESULT;

void config_free(struct config *cfg);

/* For g_autoptr(config_t) cfg = NULL; (a typedef named "config" would make
 * -Wshadow flag every variable called config). */
typedef struct config config_t;
G_DEFINE_AUTOPTR_CLEANUP_FUNC(config_t, config_free)

/* The salted table a client names, or NULL for an unsalted one.  name is
 * the table name bytes as on the wire; "default:x" finds "x" as HBase
 * treats them as one table.  Binary search, no allocation. */
const struct config_table *config_find_table(const struct config *cfg,
                                             const void *name, size_t len);

/* The unsalted table of [keyviz] unsalted_tables a client names, or
 * NULL; as config_find_table. */
const struct config_table *
config_find_keyviz_unsalted(const struct config *cfg, const void *name,
                            size_t len);

/* The effective configuration as a file this parser loads back: every
 * key with its value, defaults included.  g_free. */
char *config_to_text(const struct config *cfg);

/* The server principal for a server at host: service/host@REALM, host
 * lower case (sasl_server_host when set), REALM the client principal's.
 * g_free. */
char *config_sasl_server_principal(const struct config *cfg, const char *host);
const char *config_qop_name(config_qop_t qop);

/* The reason set holds for name (as config_find_table takes it), or NULL
 * (set NULL included). */
const char *config_orphans_find(const struct config_orphans *set,
                                const void *name, size_t len);

/* A table's mapping as the key lines of its section (buckets = ...),
 * defaults included: the text the table catalog stores. */
void config_mapping_to_text(GString *out, const struct salt_table *t);

/* The mapping a table catalog entry holds: text as config_mapping_to_text
 * wrote it (comment lines allowed), parsed by the same rules. */
gboolean config_mapping_parse(const char *table, const char *text,
                              struct salt_table *out, GError **error);

/* "host:port", with brackets for IPv6.  g_free. */
char *config_addr_to_string(const struct config_addr *addr);

/*
 * Whether cfg may replace old by a reload (SIGHUP): refused, with the
 * reason, when it changes the salt mapping of a salted table (dropping
 * its section included) or a setting only a restart can change.  The one
 * rule: the daemon applies it on SIGHUP and --check-config --pid against
 * the running process's configuration.
 */
gboolean config_reload_check(const struct config *old,
                             const struct config *cfg, GError **error)
    G_GNUC_WARN_UNUSED_RESULT;

/* Settings that are valid but likely wrong, one sentence each naming the
 * key, for a warning at start, reload and --check-config.  g_strfreev. */
char **config_advice(const struct config *cfg);
