/* test_config.c: unit tests of the strict configuration parser. */
#include <stdarg.h>
#include <string.h>

#include <glib.h>
#include <glib/gstdio.h>

#include "config.h"
#include "salt.h"

static struct config *
load(const char *text, GError **error)
{
    return config_load_data(text, strlen(text), "test.conf", error);
}

/* The shipped example config: G_TEST_SRCDIR is tests/unit in the source
 * tree; a first argument that is a file overrides it. */
static char *shipped_path;

static void
assert_defaults(const struct config *cfg)
{
    g_assert_cmpstr(cfg->listen.host, ==, "127.0.0.1");
    g_assert_cmpuint(cfg->listen.port, ==, 9090);
    g_assert_cmpuint(cfg->workers, ==, 0);
    g_assert_cmpuint(cfg->max_frame_size, ==, 16u << 20);
    g_assert_cmpuint(cfg->max_connections, ==, 10000);
    g_assert_cmpuint(cfg->client_idle_timeout_ms, ==, 0);
    g_assert_cmpuint(cfg->n_servers, ==, 1);
    g_assert_cmpstr(cfg->servers[0].host, ==, "127.0.0.1");
    g_assert_cmpuint(cfg->servers[0].port, ==, 9091);
    g_assert_cmpint(cfg->protocol, ==, CONFIG_PROTOCOL_BINARY);
    g_assert_cmpint(cfg->transport, ==, CONFIG_TRANSPORT_BUFFERED);
    g_assert_nonnull(cfg->custom_filters);
    g_assert_null(cfg->custom_filters[0]);
    g_assert_cmpuint(cfg->connect_timeout_ms, ==, 2000);
    g_assert_cmpuint(cfg->request_timeout_ms, ==, 30000);
    /* unset: a third of request_timeout_ms */
    g_assert_cmpuint(cfg->read_retry_after_ms, ==, 10000);
    g_assert_cmpuint(cfg->slow_call_ms, ==, 1000);
    g_assert_cmpuint(cfg->pool_size, ==, 16);
    g_assert_cmpuint(cfg->scan_caching_max, ==, 1000);
    g_assert_cmpuint(cfg->scan_scanner_timeout_ms, ==, 60000);
    g_assert_false(cfg->admin_enabled);
    g_assert_null(cfg->admin_listen.host);
    g_assert_cmpuint(cfg->n_tables, ==, 0);
}

/* Test: no file at all gives the documented defaults and no tables. */
static void
test_defaults(void)
{
    g_autoptr(config_t) cfg = config_new_default();
    g_autoptr(config_t) empty = NULL;
    g_autoptr(config_t) groups = NULL;
    g_autoptr(GError) error = NULL;

    assert_defaults(cfg);
    g_assert_null(config_find_table(cfg, "events", 6));
    empty = load("", &error);
    g_assert_no_error(error);
    assert_defaults(empty);
    groups = load("# only comments\n\n[proxy]\n[backend]\n[scan]\n[admin]\n",
                  &error);
    g_assert_no_error(error);
    assert_defaults(groups);
}

/* Test: the shipped config parses and sets exactly the defaults. */
static void
test_shipped(void)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(config_t) cfg = config_load(shipped_path, &error);

    g_assert_no_error(error);
    assert_defaults(cfg);
    g_assert_cmpstr(cfg->source, ==, shipped_path);
}

/* Test: the shipped commented [table:events] example, uncommented, parses
 * to the table defaults. */
static void
test_shipped_example(void)
{
    g_autoptr(GError) error = NULL;
    g_autofree char *text = NULL;
    g_autoptr(GRegex) re = g_regex_new("^#([a-z\\[])", G_REGEX_MULTILINE, 0,
                                       NULL);
    g_autofree char *uncommented = NULL;
    g_autoptr(config_t) cfg = NULL;
    const struct config_table *t;
    struct salt_table want;

    g_assert_true(g_file_get_contents(shipped_path, &text, NULL, &error));
    uncommented = g_regex_replace(re, text, -1, 0, "\\1", 0, &error);
    g_assert_no_error(error);
    g_assert_nonnull(strstr(uncommented, "\n[table:events]\n"));
    cfg = load(uncommented, &error);
    g_assert_no_error(error);
    g_assert_cmpuint(cfg->n_tables, ==, 1);
    t = config_find_table(cfg, "events", 6);
    g_assert_nonnull(t);
    g_assert_true(salt_table_init(&want, 16, SALT_FORMAT_BYTE, "", 0, &error));
    g_assert_true(salt_table_equal(&t->salt, &want));
}

/* Test: every key set, several tables; values and table lookup. */
static void
test_full(void)
{
    static const char text[] =
        "[proxy]\n"
        "listen = [::1]:19090\n"
        "workers = 3\n"
        "max_frame_size = 64 KiB\n"
        "max_connections = 7\n"
        "client_idle_timeout_ms = 5000\n"
        "[backend]\n"
        "servers = hbase1.example:9090, 10.0.0.2:9091,[fe80::2]:9092\n"
        "protocol = compact\n"
        "transport = framed\n"
        "connect_timeout_ms = 100\n"
        "request_timeout_ms = 200\n"
        "pool_size = 1\n"
        "[scan]\n"
        "caching_max = 50\n"
        "scanner_timeout_ms = 1000\n"
        "[admin]\n"
        "listen = 0.0.0.0:9100\n"
        "[table:events]\n"
        "buckets = 1000\n"
        "salt_format = decimal\n"
        "salt_separator = -\n"
        "hash_part = delimiter:#:1\n"
        "[table:ns1:t.a-b]\n"
        "buckets = 65536\n"
        "salt_format = hex\n"
        "hash_part = length:8\n"
        "[table:default:plain]\n"
        "salt_separator = \\x00\\XFF\\s\n"
        "hash_part = delimiter:a\\x3a\\\\::2\n";
    g_autoptr(GError) error = NULL;
    g_autoptr(config_t) cfg = load(text, &error);
    const struct config_table *t;
    struct salt_table want;
    g_autofree char *s0 = NULL, *s2 = NULL;

    g_assert_no_error(error);
    g_assert_cmpstr(cfg->listen.host, ==, "::1");
    g_assert_cmpuint(cfg->listen.port, ==, 19090);
    g_assert_cmpuint(cfg->workers, ==, 3);
    g_assert_cmpuint(cfg->max_frame_size, ==, 65536);
    g_assert_cmpuint(cfg->max_connections, ==, 7);
    g_assert_cmpuint(cfg->client_idle_timeout_ms, ==, 5000);
    g_assert_cmpuint(cfg->n_servers, ==, 3);
    g_assert_cmpstr(cfg->servers[0].host, ==, "hbase1.example");
    g_assert_cmpuint(cfg->servers[0].port, ==, 9090);
    g_assert_cmpstr(cfg->servers[1].host, ==, "10.0.0.2");
    g_assert_cmpstr(cfg->servers[2].host, ==, "fe80::2");
    s0 = config_addr_to_string(&cfg->servers[0]);
    s2 = config_addr_to_string(&cfg->servers[2]);
    g_assert_cmpstr(s0, ==, "hbase1.example:9090");
    g_assert_cmpstr(s2, ==, "[fe80::2]:9092");
    g_assert_cmpint(cfg->protocol, ==, CONFIG_PROTOCOL_COMPACT);
    g_assert_cmpint(cfg->transport, ==, CONFIG_TRANSPORT_FRAMED);
    g_assert_cmpuint(cfg->connect_timeout_ms, ==, 100);
    g_assert_cmpuint(cfg->request_timeout_ms, ==, 200);
    g_assert_cmpuint(cfg->read_retry_after_ms, ==, 66);
    g_assert_cmpuint(cfg->pool_size, ==, 1);
    g_assert_cmpuint(cfg->scan_caching_max, ==, 50);
    g_assert_cmpuint(cfg->scan_scanner_timeout_ms, ==, 1000);
    g_assert_true(cfg->admin_enabled);
    g_assert_cmpstr(cfg->admin_listen.host, ==, "0.0.0.0");
    g_assert_cmpuint(cfg->admin_listen.port, ==, 9100);

    g_assert_cmpuint(cfg->n_tables, ==, 3);
    t = config_find_table(cfg, "events", 6);
    g_assert_nonnull(t);
    g_assert_true(salt_table_init(&want, 1000, SALT_FORMAT_DECIMAL, "-", 1,
                                  &error));
    g_assert_true(salt_table_hash_delimiter(&want, "#", 1, 1, &error));
    g_assert_true(salt_table_equal(&t->salt, &want));
    g_assert_true(config_find_table(cfg, "default:events", 14) == t);

    t = config_find_table(cfg, "ns1:t.a-b", 9);
    g_assert_nonnull(t);
    g_assert_true(salt_table_init(&want, 65536, SALT_FORMAT_HEX, "", 0,
                                  &error));
    g_assert_true(salt_table_hash_length(&want, 8, &error));
    g_assert_true(salt_table_equal(&t->salt, &want));

    /* "default:" is dropped from the config name too; escapes decoded;
     * SEP ends at the last ':' so it may hold ':' */
    t = config_find_table(cfg, "plain", 5);
    g_assert_nonnull(t);
    g_assert_cmpstr(t->name, ==, "plain");
    g_assert_true(salt_table_init(&want, 16, SALT_FORMAT_BYTE, "\x00\xff ", 3,
                                  &error));
    g_assert_true(salt_table_hash_delimiter(&want, "a:\\:", 4, 2, &error));
    g_assert_true(salt_table_equal(&t->salt, &want));
    g_assert_no_error(error);

    /* exact bytes only */
    g_assert_null(config_find_table(cfg, "event", 5));
    g_assert_null(config_find_table(cfg, "events2", 7));
    g_assert_null(config_find_table(cfg, "EVENTS", 6));
    g_assert_null(config_find_table(cfg, "t.a-b", 5));
    g_assert_null(config_find_table(cfg, "default:", 8));
    g_assert_null(config_find_table(cfg, "", 0));
    g_assert_nonnull(config_find_table(cfg, "eventsXX", 6));
}

/* Test: lookup over many tables finds each and nothing else. */
static void
test_find_many(void)
{
    g_autoptr(GString) text = g_string_new("");
    g_autoptr(GError) error = NULL;
    g_autoptr(config_t) cfg = NULL;

    for (unsigned i = 0; i < 500; i++) {
        g_string_append_printf(text, "[table:t%u]\nbuckets = %u\n", i * 7,
                               i % 300 + 1);
    }
    cfg = load(text->str, &error);
    g_assert_no_error(error);
    g_assert_cmpuint(cfg->n_tables, ==, 500);
    for (unsigned i = 0; i < 3500; i++) {
        g_autofree char *name = g_strdup_printf("t%u", i);
        const struct config_table *t = config_find_table(cfg, name,
                                                         strlen(name));

        if (i % 7 != 0) {
            g_assert_null(t);
            continue;
        }
        g_assert_nonnull(t);
        g_assert_cmpstr(t->name, ==, name);
        g_assert_cmpuint(t->salt.buckets, ==, i / 7 % 300 + 1);
    }
}

/* Test: size and address forms that are accepted. */
static void
test_accepted_values(void)
{
    static const struct {
        const char *text;
        uint32_t size;
    } sizes[] = {
        { "1024", 1024 },      { "1024B", 1024 },    { "1KiB", 1024 },
        { "3 MiB", 3u << 20 }, { "1GiB", 1u << 30 }, { "16MiB", 16u << 20 },
    };
    static const struct {
        const char *text, *host;
        unsigned port;
    } addrs[] = {
        { "localhost:1", "localhost", 1 },
        { "[::]:65535", "::", 65535 },
        { "[2001:db8::1]:9090", "2001:db8::1", 9090 },
        { "0.0.0.0:80", "0.0.0.0", 80 },
        { "hbase-1.dc_2.example:9090", "hbase-1.dc_2.example", 9090 },
    };

    for (size_t i = 0; i < G_N_ELEMENTS(sizes); i++) {
        g_autoptr(GError) error = NULL;
        g_autofree char *text =
            g_strdup_printf("[proxy]\nmax_frame_size = %s\n", sizes[i].text);
        g_autoptr(config_t) cfg = load(text, &error);

        g_assert_no_error(error);
        g_assert_cmpuint(cfg->max_frame_size, ==, sizes[i].size);
    }
    for (size_t i = 0; i < G_N_ELEMENTS(addrs); i++) {
        g_autoptr(GError) error = NULL;
        g_autofree char *text = g_strdup_printf("[backend]\nservers = %s\n",
                                                addrs[i].text);
        g_autoptr(config_t) cfg = load(text, &error);

        g_assert_no_error(error);
        g_assert_cmpstr(cfg->servers[0].host, ==, addrs[i].host);
        g_assert_cmpuint(cfg->servers[0].port, ==, addrs[i].port);
    }
}

/* Assert that text fails with code, and the message holds each of the
 * NULL-terminated strings (file, line, group, key ...). */
static void
assert_fails(const char *text, int code, ...)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(config_t) cfg = load(text, &error);
    va_list ap;

    g_assert_null(cfg);
    if (error == NULL || !g_error_matches(error, CONFIG_ERROR, code)) {
        g_test_message("config:\n%s", text);
    }
    g_assert_error(error, CONFIG_ERROR, code);
    g_test_message("%s", error->message);
    va_start(ap, code);
    for (const char *want; (want = va_arg(ap, const char *)) != NULL;) {
        if (strstr(error->message, want) == NULL) {
            g_test_message("'%s' not in '%s'", want, error->message);
        }
        g_assert_nonnull(strstr(error->message, want));
    }
    va_end(ap);
}

/* Test: CONFIG_ERROR_NOT_FOUND and CONFIG_ERROR_IO from config_load. */
static void
test_error_file(void)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(config_t) cfg = config_load("/nonexistent/hsp.conf", &error);
    g_autofree char *dir = NULL;

    g_assert_null(cfg);
    g_assert_error(error, CONFIG_ERROR, CONFIG_ERROR_NOT_FOUND);
    g_assert_nonnull(strstr(error->message, "/nonexistent/hsp.conf"));
    g_clear_error(&error);

    dir = g_dir_make_tmp("hsp-config-XXXXXX", &error);
    g_assert_no_error(error);
    cfg = config_load(dir, &error);
    g_assert_null(cfg);
    g_assert_error(error, CONFIG_ERROR, CONFIG_ERROR_IO);
    g_assert_nonnull(strstr(error->message, dir));
    g_rmdir(dir);
}

/* Test: CONFIG_ERROR_PARSE, with line numbers where we can. */
static void
test_error_parse(void)
{
    assert_fails("[proxy]\nworkers = 1\nthis is not a key\n",
                 CONFIG_ERROR_PARSE, "test.conf:3:", NULL);
    assert_fails("workers = 1\n[proxy]\n", CONFIG_ERROR_PARSE,
                 "test.conf:1:", "before the first", NULL);
    assert_fails("[proxy\nworkers = 1\n", CONFIG_ERROR_PARSE,
                 "test.conf:1:", NULL);
    assert_fails("[proxy]\n= 1\n", CONFIG_ERROR_PARSE, "test.conf", NULL);
    {
        g_autoptr(GError) error = NULL;
        g_autoptr(config_t) cfg = config_load_data("[proxy]\0x", 9, "nul.conf",
                                                   &error);
        g_assert_null(cfg);
        g_assert_error(error, CONFIG_ERROR, CONFIG_ERROR_PARSE);
        g_assert_nonnull(strstr(error->message, "nul.conf"));
    }
}

/* Test: CONFIG_ERROR_DUPLICATE for keys, groups and tables. */
static void
test_error_duplicate(void)
{
    assert_fails("[proxy]\nworkers = 1\n\nworkers = 2\n",
                 CONFIG_ERROR_DUPLICATE, "test.conf:4:", "[proxy] workers",
                 "line 2", NULL);
    assert_fails("[table:t]\nbuckets = 4\n[proxy]\n[table:t]\n",
                 CONFIG_ERROR_DUPLICATE, "test.conf:4:", "[table:t]", NULL);
    assert_fails("[table:t]\n[table:default:t]\n", CONFIG_ERROR_DUPLICATE,
                 "test.conf:2:", "[table:default:t]", "[table:t]", NULL);
}

/* Test: CONFIG_ERROR_INVALID_GROUP for unknown groups and bad tables. */
static void
test_error_group(void)
{
    assert_fails("[proxy]\n[proxi]\nworkers = 1\n", CONFIG_ERROR_INVALID_GROUP,
                 "test.conf:2:", "[proxi]", NULL);
    assert_fails("[table:]\n", CONFIG_ERROR_INVALID_GROUP,
                 "test.conf:1:", "[table:]", NULL);
    assert_fails("[table:my table]\n", CONFIG_ERROR_INVALID_GROUP,
                 "[table:my table]", NULL);
    assert_fails("[table:.hidden]\n", CONFIG_ERROR_INVALID_GROUP,
                 "[table:.hidden]", NULL);
    assert_fails("[table:a:b:c]\n", CONFIG_ERROR_INVALID_GROUP, NULL);
    assert_fails("[table:ns-x:t]\n", CONFIG_ERROR_INVALID_GROUP, NULL);
    assert_fails("[table:hbase:meta]\n", CONFIG_ERROR_INVALID_GROUP,
                 "[table:hbase:meta]", NULL);
    assert_fails("[events]\nbuckets = 4\n", CONFIG_ERROR_INVALID_GROUP,
                 "[events]", NULL);
}

/* Test: CONFIG_ERROR_INVALID_KEY: a typo names file, line, group, key. */
static void
test_error_key(void)
{
    assert_fails("[table:events]\nbuckets = 16\nbukets = 16\n",
                 CONFIG_ERROR_INVALID_KEY,
                 "test.conf:3:", "[table:events] bukets", "buckets", NULL);
    assert_fails("[proxy]\nlisten = 127.0.0.1:1\nlisten[de] = x\n",
                 CONFIG_ERROR_INVALID_KEY, "[proxy] listen[de]", NULL);
    assert_fails("[admin]\nport = 9100\n", CONFIG_ERROR_INVALID_KEY,
                 "test.conf:2:", "[admin] port", NULL);
    assert_fails("[backend]\nserver = a:1\n", CONFIG_ERROR_INVALID_KEY,
                 "[backend] server", NULL);
    assert_fails("[scan]\ncaching = 5\n", CONFIG_ERROR_INVALID_KEY,
                 "[scan] caching", NULL);
}

/* Test: CONFIG_ERROR_INVALID_VALUE, one case per kind of value; each
 * message names the file, the line, the group and the key. */
static void
test_error_value(void)
{
    static const struct {
        const char *group, *key, *value;
    } bad[] = {
        /* addresses */
        { "proxy", "listen", "" },
        { "proxy", "listen", "127.0.0.1" },
        { "proxy", "listen", "127.0.0.1:0" },
        { "proxy", "listen", "127.0.0.1:65536" },
        { "proxy", "listen", "127.0.0.1:http" },
        { "proxy", "listen", "::1:9090" },
        { "proxy", "listen", "[::1]9090" },
        { "proxy", "listen", "[::g]:9090" },
        { "proxy", "listen", "300.1.1.1:9090" },
        { "proxy", "listen", "bad host:9090" },
        { "proxy", "listen", ":9090" },
        { "proxy", "listen", "127.0.0.1:9090 # loopback" },
        { "admin", "listen", "9100" },
        { "backend", "servers", "" },
        { "backend", "servers", "a:1,,b:2" },
        { "backend", "servers", "a:1, b" },
        { "backend", "servers", "a:1, A:1" },
        /* integers and ranges */
        { "proxy", "workers", "-1" },
        { "proxy", "workers", "1025" },
        { "proxy", "workers", "two" },
        { "proxy", "workers", "0x10" },
        { "proxy", "workers", "99999999999999999999999" },
        { "proxy", "max_connections", "0" },
        { "proxy", "client_idle_timeout_ms", "2147483648" },
        { "backend", "connect_timeout_ms", "0" },
        { "backend", "request_timeout_ms", "" },
        /* at request_timeout_ms (30000) or past it: would never fire */
        { "backend", "read_retry_after_ms", "30000" },
        { "backend", "read_retry_after_ms", "-1" },
        { "backend", "read_retry_after_ms", "1s" },
        { "backend", "slow_call_ms", "-1" },
        { "backend", "slow_call_ms", "2147483648" },
        { "backend", "pool_size", "0" },
        { "scan", "caching_max", "0" },
        { "scan", "scanner_timeout_ms", "999" },
        /* sizes */
        { "proxy", "max_frame_size", "16MB" },
        { "proxy", "max_frame_size", "16 mib" },
        { "proxy", "max_frame_size", "1023" },
        { "proxy", "max_frame_size", "2GiB" },
        { "proxy", "max_frame_size", "MiB" },
        { "proxy", "max_frame_size", "99999999999999GiB" },
        /* enums */
        { "backend", "protocol", "json" },
        { "backend", "protocol", "Binary" },
        { "backend", "transport", "websocket" },
        { "table:t", "salt_format", "base64" },
        /* salt */
        { "table:t", "buckets", "0" },
        { "table:t", "buckets", "65537" },
        { "table:t", "salt_separator", "0123456789abcdefg" },
        { "table:t", "salt_separator", "\\q" },
        { "table:t", "salt_separator", "\\x4" },
        { "table:t", "hash_part", "prefix" },
        { "table:t", "hash_part", "length:0" },
        { "table:t", "hash_part", "length:" },
        { "table:t", "hash_part", "length:32768" },
        { "table:t", "hash_part", "delimiter:#" },
        { "table:t", "hash_part", "delimiter::1" },
        { "table:t", "hash_part", "delimiter:#:0" },
        { "table:t", "hash_part", "delimiter:#:x" },
        { "table:t", "hash_part", "delimiter:\\x:1" },
        { "table:t", "hash_part", "delimiter:0123456789abcdefg:1" },
        /* custom filters */
        { "backend", "custom_filters", "PrefixFilter" },
        { "backend", "custom_filters", "A:x.A, A:y.A" },
        { "backend", "custom_filters", "My Filter" },
        { "backend", "custom_filters", "A, , B" },
        { "backend", "custom_filters", "A:" },
        { "backend", "custom_filters", "A:com.x/A" },
        { "backend", "custom_filters", "A(1)" },
    };

    for (size_t i = 0; i < G_N_ELEMENTS(bad); i++) {
        g_autofree char *text = g_strdup_printf("# a comment\n[%s]\n%s = %s\n",
                                                bad[i].group, bad[i].key,
                                                bad[i].value);
        g_autofree char *where = g_strdup_printf("[%s] %s", bad[i].group,
                                                 bad[i].key);

        assert_fails(text, CONFIG_ERROR_INVALID_VALUE, "test.conf:3:", where,
                     NULL);
    }
    /* the inline-comment hint */
    assert_fails("[proxy]\nworkers = 2 # two\n", CONFIG_ERROR_INVALID_VALUE,
                 "own", NULL);
}

/* Test: [backend] custom_filters takes hbase.thrift.filters' value as it
 * is (Name:Class, comma separated) or names alone, and survives
 * config_to_text. */
static void
test_custom_filters(void)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(config_t) cfg = load("[backend]\ncustom_filters = "
                                   "ValuePass:hsp.ValuePassFilter ,Other$1\n",
                                   &error);
    g_autoptr(config_t) again = NULL;
    g_autofree char *text = NULL;

    g_assert_no_error(error);
    g_assert_cmpuint(g_strv_length(cfg->custom_filters), ==, 2);
    g_assert_cmpstr(cfg->custom_filters[0], ==, "ValuePass");
    g_assert_cmpstr(cfg->custom_filters[1], ==, "Other$1");
    /* the classes Thrift2's filterBytes name them by */
    g_assert_cmpuint(g_strv_length(cfg->custom_filter_classes), ==, 1);
    g_assert_cmpstr(cfg->custom_filter_classes[0], ==, "hsp.ValuePassFilter");
    text = config_to_text(cfg);
    g_assert_nonnull(strstr(text, "custom_filters = "
                                  "ValuePass:hsp.ValuePassFilter, Other$1\n"));
    again = load(text, &error);
    g_assert_no_error(error);
    g_assert_cmpstrv(again->custom_filters, cfg->custom_filters);
}

/* [thrift2] listen and [backend] thrift2_servers: off by default, the
 * listener needs servers to send to, and both survive config_to_text. */
static void
test_thrift2(void)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(config_t) def = load("", &error);
    g_autoptr(config_t) cfg = NULL;
    g_autoptr(config_t) again = NULL;
    g_autofree char *text = NULL;
    g_auto(GStrv) advice = NULL;

    g_assert_no_error(error);
    g_assert_false(def->thrift2_enabled);
    g_assert_cmpuint(def->n_thrift2_servers, ==, 0);

    cfg = load("[backend]\nthrift2_servers = 127.0.0.1:9092, h2:9093\n"
               "[thrift2]\nlisten = 127.0.0.1:9095\n",
               &error);
    g_assert_no_error(error);
    g_assert_true(cfg->thrift2_enabled);
    g_assert_cmpstr(cfg->thrift2_listen.host, ==, "127.0.0.1");
    g_assert_cmpuint(cfg->thrift2_listen.port, ==, 9095);
    g_assert_cmpuint(cfg->n_thrift2_servers, ==, 2);
    g_assert_cmpstr(cfg->thrift2_servers[1].host, ==, "h2");
    g_assert_cmpuint(cfg->n_servers, ==, 1);

    text = config_to_text(cfg);
    g_assert_nonnull(strstr(text, "thrift2_servers = 127.0.0.1:9092, "
                                  "h2:9093\n"));
    g_assert_nonnull(strstr(text, "[thrift2]\nlisten = 127.0.0.1:9095\n"));
    again = load(text, &error);
    g_assert_no_error(error);
    g_assert_true(again->thrift2_enabled);
    g_assert_cmpuint(again->n_thrift2_servers, ==, 2);

    /* a listener with nowhere to send its calls */
    assert_fails("[thrift2]\nlisten = 127.0.0.1:9095\n",
                 CONFIG_ERROR_INVALID_VALUE, "[thrift2] listen",
                 "thrift2_servers", NULL);
    assert_fails("[thrift2]\nlisten = 127.0.0.1:9095\nservers = x:1\n",
                 CONFIG_ERROR_INVALID_KEY, "[thrift2] servers", NULL);
    assert_fails("[backend]\nthrift2_servers = a:1,a:1\n",
                 CONFIG_ERROR_INVALID_VALUE, "thrift2_servers", "listed twice",
                 NULL);
    assert_fails("[backend]\nthrift2_servers = a:1,\n",
                 CONFIG_ERROR_INVALID_VALUE, "thrift2_servers", NULL);
    /* servers without a listener: valid, but said */
    g_clear_pointer(&cfg, config_free);
    cfg = load("[backend]\nthrift2_servers = 127.0.0.1:9092\n", &error);
    g_assert_no_error(error);
    advice = config_advice(cfg);
    g_assert_nonnull(advice[0]);
    g_assert_nonnull(strstr(advice[0], "thrift2_servers"));
}

/* Test: salt_mapping adopts another tool's salt; its N is required and
 * our own mapping's keys are refused beside it. */
static void
test_salt_mapping(void)
{
    static const char text[] = "[table:phx]\n"
                               "salt_mapping = phoenix\n"
                               "buckets = 256\n"
                               "[table:wd]\n"
                               "buckets = 10\n"
                               "salt_mapping = hbasewd\n"
                               "[table:bt]\n"
                               "salt_mapping = bigtable-sample\n"
                               "buckets = 4\n"
                               "[table:own]\n"
                               "salt_mapping = xxh3\n"
                               "buckets = 4\n";
    g_autoptr(GError) error = NULL;
    g_autoptr(config_t) cfg = load(text, &error);
    g_autoptr(config_t) again = NULL;
    g_autoptr(config_t) changed = NULL;
    g_autofree char *out = NULL;
    struct salt_table want;
    const struct config_table *t;

    g_assert_no_error(error);
    t = config_find_table(cfg, "phx", 3);
    g_assert_true(salt_table_init_mapping(&want, SALT_MAPPING_PHOENIX, 256,
                                          &error));
    g_assert_true(salt_table_equal(&t->salt, &want));
    t = config_find_table(cfg, "wd", 2);
    g_assert_true(salt_table_init_mapping(&want, SALT_MAPPING_HBASEWD, 10,
                                          &error));
    g_assert_true(salt_table_equal(&t->salt, &want));
    g_assert_cmpuint(t->salt.buckets, ==, 11);
    t = config_find_table(cfg, "bt", 2);
    g_assert_true(salt_table_init_mapping(&want, SALT_MAPPING_BIGTABLE, 4,
                                          &error));
    g_assert_true(salt_table_equal(&t->salt, &want));
    g_assert_cmpuint(t->salt.buckets, ==, 7);
    t = config_find_table(cfg, "own", 3);
    g_assert_true(salt_table_init(&want, 4, SALT_FORMAT_BYTE, "", 0, &error));
    g_assert_true(salt_table_equal(&t->salt, &want));
    g_assert_no_error(error);

    /* the effective config names the tool and its N, and loads back */
    out = config_to_text(cfg);
    g_assert_nonnull(strstr(out, "[table:bt]\nbuckets = 4\n"
                                 "salt_mapping = bigtable-sample\n"));
    g_assert_nonnull(strstr(out, "[table:wd]\nbuckets = 10\n"
                                 "salt_mapping = hbasewd\n"));
    g_assert_nonnull(strstr(out, "hash_part = whole\nsalt_mapping = xxh3\n"));
    again = load(out, &error);
    g_assert_no_error(error);
    g_assert_true(config_reload_check(cfg, again, &error));
    g_assert_no_error(error);

    /* same N, another tool: every row elsewhere, so no reload */
    changed = load("[table:phx]\nsalt_mapping = hbasewd\nbuckets = 256\n"
                   "[table:wd]\nbuckets = 10\nsalt_mapping = hbasewd\n"
                   "[table:bt]\nsalt_mapping = bigtable-sample\n"
                   "buckets = 4\n[table:own]\nbuckets = 4\n",
                   &error);
    g_assert_no_error(error);
    g_assert_false(config_reload_check(cfg, changed, &error));
    g_assert_error(error, CONFIG_ERROR, CONFIG_ERROR_REFUSED);
    g_assert_nonnull(strstr(error->message, "phx"));
    g_clear_error(&error);

    /* the bad combinations */
    assert_fails("[table:t]\nsalt_mapping = phoenix\n",
                 CONFIG_ERROR_INVALID_VALUE,
                 "test.conf:2:", "[table:t] salt_mapping", "needs buckets",
                 "SALT_BUCKETS", NULL);
    assert_fails("[table:t]\nsalt_mapping = bigtable-sample\n",
                 CONFIG_ERROR_INVALID_VALUE, "SALT_RANGE", NULL);
    assert_fails("[table:t]\nsalt_mapping = phoenix\nbuckets = 257\n",
                 CONFIG_ERROR_INVALID_VALUE,
                 "test.conf:3:", "[table:t] buckets", "1..256", NULL);
    assert_fails("[table:t]\nsalt_mapping = hbasewd\nbuckets = 0\n",
                 CONFIG_ERROR_INVALID_VALUE, "[table:t] buckets", "1..256",
                 NULL);
    assert_fails("[table:t]\nsalt_mapping = bigtable-sample\n"
                 "buckets = 32769\n",
                 CONFIG_ERROR_INVALID_VALUE, "[table:t] buckets", "1..32768",
                 NULL);
    assert_fails("[table:t]\nsalt_mapping = phoenix\nbuckets = -4\n",
                 CONFIG_ERROR_INVALID_VALUE, "[table:t] buckets",
                 "not a whole number", NULL);
    assert_fails("[table:t]\nsalt_mapping = hbasewd\nbuckets = 8\n"
                 "salt_format = byte\n",
                 CONFIG_ERROR_INVALID_VALUE,
                 "test.conf:4:", "[table:t] salt_format",
                 "salt_mapping = hbasewd", "remove it", NULL);
    assert_fails("[table:t]\nsalt_separator = -\n"
                 "salt_mapping = bigtable-sample\nbuckets = 4\n",
                 CONFIG_ERROR_INVALID_VALUE,
                 "test.conf:2:", "[table:t] salt_separator",
                 "decimal hash and '-'", NULL);
    assert_fails("[table:t]\nsalt_mapping = phoenix\nbuckets = 4\n"
                 "hash_part = whole\n",
                 CONFIG_ERROR_INVALID_VALUE, "[table:t] hash_part", NULL);
    assert_fails("[table:t]\nsalt_mapping = Phoenix\nbuckets = 4\n",
                 CONFIG_ERROR_INVALID_VALUE, "[table:t] salt_mapping",
                 "xxh3 | phoenix | hbasewd | bigtable-sample", NULL);
    assert_fails("[table:t]\nsalt_mapping = phoenix\nbuckets = 4\n"
                 "salt_mapping = hbasewd\n",
                 CONFIG_ERROR_DUPLICATE, NULL);
}

/* Test: [backend] sasl = gssapi and its keys: defaults, the server
 * principal, the effective text loading back, and every refusal. */
static void
test_sasl(void)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(config_t) cfg = NULL;
    g_autoptr(config_t) again = NULL;
    g_autoptr(config_t) plain = NULL;
    g_autofree char *text = NULL;
    g_autofree char *sp = NULL;

    plain = load("", &error);
    g_assert_no_error(error);
    g_assert_cmpint(plain->sasl, ==, CONFIG_SASL_NONE);
    g_assert_null(plain->sasl_principal);
    text = config_to_text(plain);
    g_assert_nonnull(strstr(text, "\nsasl = none\n"));
    g_clear_pointer(&text, g_free);

    cfg = load("[backend]\nservers = HBase1.Example:9090\nsasl = gssapi\n"
               "sasl_principal = app/proxy1@EXAMPLE.COM\n"
               "sasl_keytab = /etc/hsp/app.keytab\n",
               &error);
    g_assert_no_error(error);
    g_assert_cmpint(cfg->sasl, ==, CONFIG_SASL_GSSAPI);
    g_assert_cmpstr(cfg->sasl_service, ==, "hbase");
    g_assert_cmpint(cfg->sasl_qop, ==, CONFIG_QOP_AUTH);
    g_assert_null(cfg->sasl_server_host);
    sp = config_sasl_server_principal(cfg, cfg->servers[0].host);
    g_assert_cmpstr(sp, ==, "hbase/hbase1.example@EXAMPLE.COM");
    g_clear_pointer(&sp, g_free);
    g_clear_pointer(&cfg, config_free);

    cfg = load("[backend]\nsasl = gssapi\nsasl_principal = app\n"
               "sasl_keytab = /k\nsasl_service = hbase2\n"
               "sasl_qop = auth-conf\nsasl_server_host = thrift.example\n",
               &error);
    g_assert_no_error(error);
    g_assert_cmpint(cfg->sasl_qop, ==, CONFIG_QOP_AUTH_CONF);
    sp = config_sasl_server_principal(cfg, "127.0.0.1");
    /* no realm in the principal: krb5.conf's default realm applies */
    g_assert_cmpstr(sp, ==, "hbase2/thrift.example");
    text = config_to_text(cfg);
    g_assert_nonnull(strstr(text, "sasl = gssapi\nsasl_principal = app\n"
                                  "sasl_keytab = /k\nsasl_service = hbase2\n"
                                  "sasl_qop = auth-conf\n"
                                  "sasl_server_host = thrift.example\n"));
    again = load(text, &error);
    g_assert_no_error(error);
    g_assert_true(config_reload_check(cfg, again, &error));
    g_assert_no_error(error);
    /* credentials are per process: a change needs a restart */
    g_assert_false(config_reload_check(cfg, plain, &error));
    g_assert_error(error, CONFIG_ERROR, CONFIG_ERROR_REFUSED);
    g_assert_nonnull(strstr(error->message, "sasl"));
    g_clear_error(&error);

    /* an address as the host of a principal is worth a warning */
    {
        g_autoptr(config_t) ip = NULL;
        g_auto(GStrv) advice = NULL;

        ip = load("[backend]\nservers = 10.0.0.7:9090\nsasl = gssapi\n"
                  "sasl_principal = app@R\nsasl_keytab = /k\n",
                  &error);
        g_assert_no_error(error);
        advice = config_advice(ip);
        g_assert_nonnull(advice[0]);
        g_assert_nonnull(strstr(advice[0], "hbase/10.0.0.7@R"));
        g_assert_nonnull(strstr(advice[0], "sasl_server_host"));
        g_clear_pointer(&advice, g_strfreev);
        advice = config_advice(cfg);
        g_assert_null(advice[0]);
    }
    assert_fails("[backend]\nsasl = kerberos\n", CONFIG_ERROR_INVALID_VALUE,
                 "[backend] sasl", "none | gssapi", NULL);
    assert_fails("[backend]\nsasl_principal = app\n", CONFIG_ERROR_INVALID_KEY,
                 "[backend] sasl_principal", "sasl = gssapi", NULL);
    assert_fails("[backend]\nsasl = gssapi\nsasl_keytab = /k\n",
                 CONFIG_ERROR_INVALID_VALUE, "sasl_principal and sasl_keytab",
                 NULL);
    assert_fails("[backend]\nsasl = gssapi\nsasl_principal = app\n",
                 CONFIG_ERROR_INVALID_VALUE, "sasl_principal and sasl_keytab",
                 NULL);
    assert_fails("[backend]\ntransport = framed\nsasl = gssapi\n"
                 "sasl_principal = app\nsasl_keytab = /k\n",
                 CONFIG_ERROR_INVALID_VALUE, "test.conf:3:",
                 "the SASL transport is unframed only, as HBase enforces",
                 NULL);
    assert_fails("[backend]\nsasl = gssapi\nsasl_principal = a b@R\n"
                 "sasl_keytab = /k\n",
                 CONFIG_ERROR_INVALID_VALUE, "[backend] sasl_principal", NULL);
    assert_fails("[backend]\nsasl = gssapi\nsasl_principal = a@\n"
                 "sasl_keytab = /k\n",
                 CONFIG_ERROR_INVALID_VALUE, "[backend] sasl_principal", NULL);
    assert_fails("[backend]\nsasl = gssapi\nsasl_principal = app\n"
                 "sasl_keytab = app.keytab\n",
                 CONFIG_ERROR_INVALID_VALUE, "[backend] sasl_keytab",
                 "absolute", NULL);
    assert_fails("[backend]\nsasl = gssapi\nsasl_principal = app\n"
                 "sasl_keytab = /k\nsasl_service = hbase/x\n",
                 CONFIG_ERROR_INVALID_VALUE, "[backend] sasl_service", NULL);
    assert_fails("[backend]\nsasl = gssapi\nsasl_principal = app\n"
                 "sasl_keytab = /k\nsasl_qop = privacy\n",
                 CONFIG_ERROR_INVALID_VALUE, "[backend] sasl_qop",
                 "auth | auth-int | auth-conf", NULL);
    assert_fails("[backend]\nsasl = gssapi\nsasl_principal = app\n"
                 "sasl_keytab = /k\nsasl_server_host = a host\n",
                 CONFIG_ERROR_INVALID_VALUE, "[backend] sasl_server_host",
                 NULL);
    assert_fails("[backend]\nsasl = gssapi\nsasl_principal = app\n"
                 "sasl_keytab = /k\nsasl_realm = X\n",
                 CONFIG_ERROR_INVALID_KEY, "sasl_server_host", NULL);
}

/* [tls]: off by default; listen needs cert and key; files as paths or
 * credentials; keys without a listener refused; the listener's address
 * is restart-only, its files are not. */
static void
test_tls(void)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(config_t) cfg = NULL;
    g_autoptr(config_t) other = NULL;
    g_autofree char *text = NULL;

    cfg = load("", &error);
    g_assert_no_error(error);
    g_assert_false(cfg->tls_enabled);
    g_assert_cmpuint(cfg->tls_handshake_timeout_ms, ==, 10000);
    g_clear_pointer(&cfg, config_free);
    cfg = load("[tls]\nlisten = 0.0.0.0:9443\ncert = /etc/t.pem\n"
               "key = /etc/t.key\nclient_ca = /etc/ca.pem\n",
               &error);
    g_assert_no_error(error);
    g_assert_true(cfg->tls_enabled);
    g_assert_cmpuint(cfg->tls_listen.port, ==, 9443);
    g_assert_cmpstr(cfg->tls_key, ==, "/etc/t.key");
    g_assert_cmpstr(cfg->tls_client_ca, ==, "/etc/ca.pem");
    text = config_to_text(cfg);
    g_assert_nonnull(strstr(text, "\n[tls]\nlisten = 0.0.0.0:9443\n"
                                  "cert = /etc/t.pem\nkey = /etc/t.key\n"
                                  "client_ca = /etc/ca.pem\n"));
    g_clear_pointer(&text, g_free);
    other = load("[tls]\nlisten = 0.0.0.0:9443\ncert = /etc/u.pem\n"
                 "key = /etc/u.key\n",
                 &error);
    g_assert_no_error(error);
    g_assert_true(config_reload_check(cfg, other, &error));
    g_clear_pointer(&other, config_free);
    other = load("[tls]\nlisten = 0.0.0.0:9444\ncert = /etc/t.pem\n"
                 "key = /etc/t.key\n",
                 &error);
    g_assert_no_error(error);
    g_assert_false(config_reload_check(cfg, other, &error));
    g_assert_nonnull(strstr(error->message, "[tls] listen"));
    g_clear_error(&error);
    assert_fails("[tls]\nlisten = 127.0.0.1:9443\ncert = /c.pem\n",
                 CONFIG_ERROR_INVALID_VALUE, "needs cert and key", NULL);
    assert_fails("[tls]\ncert = /c.pem\n", CONFIG_ERROR_INVALID_KEY,
                 "[tls] cert", "listen address only", NULL);
    assert_fails("[tls]\nlisten = 127.0.0.1:9443\ncert = c.pem\n"
                 "key = /k\n",
                 CONFIG_ERROR_INVALID_VALUE, "absolute path or credential",
                 NULL);
    g_clear_pointer(&cfg, config_free);
    g_clear_pointer(&other, config_free);
    /* [backend] transport = http */
    cfg = load("[backend]\ntransport = http\nhttps = true\n"
               "tls_ca = /etc/ca.pem\nhttp_doas = alice\nsasl = gssapi\n"
               "sasl_principal = app@R\nsasl_keytab = /k\n",
               &error);
    g_assert_no_error(error);
    g_assert_cmpint(cfg->transport, ==, CONFIG_TRANSPORT_HTTP);
    g_assert_true(cfg->https && cfg->backend_tls_verify_hostname);
    g_assert_cmpstr(cfg->http_path, ==, "/");
    /* SPNEGO's server principal is HTTP/host */
    g_assert_cmpstr(cfg->sasl_service, ==, "HTTP");
    text = config_to_text(cfg);
    g_assert_nonnull(strstr(text, "transport = http\nconnect_timeout_ms"));
    g_assert_nonnull(strstr(text, "http_path = /\nhttps = true\n"
                                  "http_doas = alice\n"));
    g_clear_pointer(&text, g_free);
    g_clear_pointer(&cfg, config_free);
    assert_fails("[backend]\ntransport = buffered\nhttps = true\n",
                 CONFIG_ERROR_INVALID_KEY, "goes with transport = http", NULL);
    assert_fails("[backend]\ntransport = http\nprotocol = compact\n",
                 CONFIG_ERROR_INVALID_VALUE, "binary only", NULL);
    assert_fails("[backend]\ntransport = http\ntls_ca = /ca\n",
                 CONFIG_ERROR_INVALID_KEY, "https = true only", NULL);
    assert_fails("[backend]\ntransport = http\nsasl = gssapi\n"
                 "sasl_principal = a\nsasl_keytab = /k\n"
                 "sasl_qop = auth\n",
                 CONFIG_ERROR_INVALID_KEY, "SPNEGO", NULL);
    /* [http] */
    cfg = load("[http]\nlisten = 127.0.0.1:9092\n", &error);
    g_assert_no_error(error);
    g_assert_true(cfg->http_enabled);
    g_assert_false(cfg->http2_enabled);
    other = load("[http]\nlisten = 127.0.0.1:9094\n", &error);
    g_assert_no_error(error);
    g_assert_false(config_reload_check(cfg, other, &error));
    g_assert_nonnull(strstr(error->message, "[http] listen"));
    g_clear_error(&error);
    assert_fails("[http]\nthrift2_listen = 127.0.0.1:9093\n",
                 CONFIG_ERROR_INVALID_VALUE, "thrift2_servers", NULL);
    assert_fails("[http]\npath = /x\n", CONFIG_ERROR_INVALID_KEY,
                 "listen, thrift2_listen", NULL);
    assert_fails("[tls]\nlisten = 127.0.0.1:9443\ncert = /c\nkey = /k\n"
                 "certificate = /c\n",
                 CONFIG_ERROR_INVALID_KEY,
                 "listen, cert, key, client_ca, handshake_timeout_ms", NULL);
}

/* [catalog]: defaults, off, bad values; a table's mapping text (what the
 * catalog stores) reading back to the same mapping, comments allowed,
 * and a different or unknown one told apart. */
static void
test_catalog(void)
{
    static const char *const sections[] = {
        "buckets = 16\n",
        "buckets = 8\nsalt_format = hex\nsalt_separator = -\n"
        "hash_part = delimiter:#:2\n",
        "buckets = 100\nsalt_format = decimal\nhash_part = length:4\n",
        "buckets = 8\nlegacy_component = after:#:last\n"
        "legacy_cutoff = 1710000000\n",
        "buckets = 8\nlegacy_range_stop = 2024\n",
        "salt_mapping = phoenix\nbuckets = 200\n",
        "salt_mapping = bigtable-sample\nbuckets = 4\n",
    };
    g_autoptr(GError) error = NULL;
    g_autoptr(config_t) cfg = NULL;
    g_autofree char *text = NULL;

    cfg = load("", &error);
    g_assert_no_error(error);
    g_assert_cmpstr(cfg->catalog_table, ==, "hbase_salt_catalog");
    g_assert_true(g_path_is_absolute(cfg->catalog_state_dir));
    g_assert_cmpuint(cfg->catalog_recheck_ms, ==, 2000);
    g_clear_pointer(&cfg, config_free);
    cfg = load("[catalog]\ntable =\nstate_dir = /srv/hsp\n", &error);
    g_assert_no_error(error);
    g_assert_null(cfg->catalog_table);
    g_assert_cmpstr(cfg->catalog_state_dir, ==, "/srv/hsp");
    text = config_to_text(cfg);
    g_assert_nonnull(strstr(text, "\n[catalog]\ntable = \n"
                                  "state_dir = /srv/hsp\n"));
    g_clear_pointer(&text, g_free);
    g_clear_pointer(&cfg, config_free);
    cfg = load("[catalog]\ntable = ops:salt_catalog\n", &error);
    g_assert_no_error(error);
    g_assert_cmpstr(cfg->catalog_table, ==, "ops:salt_catalog");
    g_clear_pointer(&cfg, config_free);
    assert_fails("[catalog]\ntable = bad/name\n", CONFIG_ERROR_INVALID_VALUE,
                 "[catalog] table", NULL);
    assert_fails("[catalog]\nstate_dir = var/lib\n",
                 CONFIG_ERROR_INVALID_VALUE, "[catalog] state_dir", NULL);
    assert_fails("[catalog]\ntabel = x\n", CONFIG_ERROR_INVALID_KEY,
                 "table, state_dir, recheck_ms", NULL);

    for (size_t i = 0; i < G_N_ELEMENTS(sections); i++) {
        g_autofree char *file = g_strdup_printf("[table:t]\n%s", sections[i]);
        g_autoptr(GString) entry = g_string_new("# registered by a test\n");
        struct salt_table back;

        cfg = load(file, &error);
        g_assert_no_error(error);
        config_mapping_to_text(entry, &cfg->tables[0].salt);
        g_assert_true(config_mapping_parse("t", entry->str, &back, &error));
        g_assert_no_error(error);
        g_assert_true(salt_table_equal(&back, &cfg->tables[0].salt));
        /* every other one differs */
        for (size_t j = 0; j < G_N_ELEMENTS(sections); j++) {
            g_autoptr(config_t) other = NULL;
            g_autofree char *f2 = g_strdup_printf("[table:t]\n%s",
                                                  sections[j]);

            if (j == i) {
                continue;
            }
            other = load(f2, &error);
            g_assert_no_error(error);
            g_assert_false(salt_table_equal(&back, &other->tables[0].salt));
        }
        g_clear_pointer(&cfg, config_free);
    }
    /* an entry a later version wrote with a key this one lacks */
    {
        struct salt_table back;

        g_assert_false(config_mapping_parse("t",
                                            "buckets = 8\nsalt_rotation = 3\n",
                                            &back, &error));
        g_assert_error(error, CONFIG_ERROR, CONFIG_ERROR_INVALID_KEY);
        g_assert_nonnull(strstr(error->message, "catalog entry of t"));
        g_clear_error(&error);
    }
}

/* Test: [keyviz] and a table's keyviz key: defaults, strict values, the
 * effective text loads back, and what a reload may change. */
static void
test_keyviz(void)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(config_t) cfg = NULL;
    g_autoptr(config_t) back = NULL;
    g_autoptr(config_t) other = NULL;
    g_autofree char *text = NULL;

    cfg = load("", &error);
    g_assert_no_error(error);
    g_assert_true(cfg->keyviz.enabled);
    g_assert_cmpuint(cfg->keyviz.interval_s, ==, 60);
    g_assert_cmpuint(cfg->keyviz.ranges, ==, 256);
    g_assert_cmpuint(cfg->keyviz.hot_keys, ==, 32);
    g_assert_cmpuint(cfg->keyviz.hot_key_sampling, ==, 8);
    g_assert_cmpuint(cfg->keyviz.retain_s, ==, 21600);
    g_assert_cmpuint(cfg->keyviz.keys, ==, CONFIG_KEYVIZ_SHOW);
    g_clear_pointer(&cfg, config_free);
    cfg = load("[keyviz]\nenabled = false\ninterval_s = 10\nranges = 64\n"
               "hot_keys = 8\nretain_s = 600\nkeys = hash\n"
               "[table:t]\nkeyviz = false\n[table:u]\nkeyviz = true\n",
               &error);
    g_assert_no_error(error);
    g_assert_false(cfg->keyviz.enabled);
    g_assert_cmpuint(cfg->keyviz.interval_s, ==, 10);
    g_assert_cmpuint(cfg->keyviz.keys, ==, CONFIG_KEYVIZ_HASH);
    g_assert_true(config_find_table(cfg, "t", 1)->keyviz_off);
    g_assert_false(config_find_table(cfg, "u", 1)->keyviz_off);
    text = config_to_text(cfg);
    g_assert_nonnull(strstr(text, "\n[keyviz]\nenabled = false\n"
                                  "interval_s = 10\nranges = 64\n"
                                  "hot_keys = 8\nhot_key_sampling = 8\n"
                                  "retain_s = 600\nkeys = hash\n"));
    back = load(text, &error);
    g_assert_no_error(error);
    g_assert_true(config_find_table(back, "t", 1)->keyviz_off);
    g_assert_cmpuint(back->keyviz.retain_s, ==, 600);
    /* keys and a table's keyviz change on reload; the sizes do not */
    other = load("[keyviz]\nenabled = false\ninterval_s = 10\nranges = 64\n"
                 "hot_keys = 8\nretain_s = 600\nkeys = hide\n"
                 "[table:t]\n[table:u]\nkeyviz = false\n",
                 &error);
    g_assert_no_error(error);
    g_assert_true(config_reload_check(cfg, other, &error));
    g_assert_no_error(error);
    g_clear_pointer(&other, config_free);
    other = load("[keyviz]\nenabled = false\ninterval_s = 20\nranges = 64\n"
                 "hot_keys = 8\nretain_s = 600\n[table:t]\n[table:u]\n",
                 &error);
    g_assert_no_error(error);
    g_assert_false(config_reload_check(cfg, other, &error));
    g_assert_error(error, CONFIG_ERROR, CONFIG_ERROR_REFUSED);
    g_assert_nonnull(strstr(error->message, "[keyviz]"));
    assert_fails("[keyviz]\nkeys = maybe\n", CONFIG_ERROR_INVALID_VALUE,
                 "[keyviz] keys", "show | hash | hide", NULL);
    assert_fails("[keyviz]\ninterval_s = 0\n", CONFIG_ERROR_INVALID_VALUE,
                 "[keyviz] interval_s", "1..3600", NULL);
    assert_fails("[keyviz]\nranges = 5000\n", CONFIG_ERROR_INVALID_VALUE,
                 "[keyviz] ranges", NULL);
    assert_fails("[keyviz]\ninterval_s = 120\nretain_s = 60\n",
                 CONFIG_ERROR_INVALID_VALUE, "[keyviz] retain_s",
                 "shorter than interval_s", NULL);
    assert_fails("[keyviz]\nenabled = yes\n", CONFIG_ERROR_INVALID_VALUE,
                 "[keyviz] enabled", NULL);
    assert_fails("[keyviz]\nintervals = 1\n", CONFIG_ERROR_INVALID_KEY,
                 "enabled, interval_s, ranges, hot_keys, hot_key_sampling, "
                 "retain_s, keys",
                 NULL);
    assert_fails("[keyviz]\nhot_key_sampling = 0\n",
                 CONFIG_ERROR_INVALID_VALUE, "[keyviz] hot_key_sampling",
                 "1..64", NULL);
    /* the sketches are sized and scaled by it when the proxy starts */
    g_clear_error(&error);
    g_clear_pointer(&other, config_free);
    other = load("[keyviz]\nenabled = false\ninterval_s = 10\nranges = 64\n"
                 "hot_keys = 8\nhot_key_sampling = 1\nretain_s = 600\n"
                 "[table:t]\n[table:u]\n",
                 &error);
    g_assert_no_error(error);
    g_assert_false(config_reload_check(cfg, other, &error));
    g_assert_nonnull(strstr(error->message, "hot_key_sampling"));
    g_clear_error(&error);
    g_clear_pointer(&other, config_free);
    assert_fails("[table:t]\nkeyviz = off\n", CONFIG_ERROR_INVALID_VALUE,
                 "[table:t] keyviz", NULL);
}

/* Test: [keyviz] unsalted_tables: tables without a section, each with a
 * one-bucket salt that salts nothing; strict names, none twice, none
 * salted; the effective text loads back. */
static void
test_keyviz_unsalted(void)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(config_t) cfg = NULL;
    g_autoptr(config_t) back = NULL;
    g_autofree char *text = NULL;
    const struct config_table *t;

    cfg = load("", &error);
    g_assert_no_error(error);
    g_assert_cmpuint(cfg->n_keyviz_unsalted, ==, 0);
    g_clear_pointer(&cfg, config_free);
    cfg = load("[keyviz]\nunsalted_tables = logs , default:users,ns:a-b\n"
               "[table:t]\n",
               &error);
    g_assert_no_error(error);
    g_assert_cmpuint(cfg->n_keyviz_unsalted, ==, 3);
    t = config_find_keyviz_unsalted(cfg, "users", 5);
    g_assert_nonnull(t);
    g_assert_cmpuint(t->salt.buckets, ==, 1);
    g_assert_nonnull(config_find_keyviz_unsalted(cfg, "default:logs", 12));
    g_assert_nonnull(config_find_keyviz_unsalted(cfg, "ns:a-b", 6));
    /* counted, not salted */
    g_assert_null(config_find_table(cfg, "users", 5));
    g_assert_null(config_find_keyviz_unsalted(cfg, "t", 1));
    text = config_to_text(cfg);
    g_assert_nonnull(strstr(text, "\nunsalted_tables = logs, ns:a-b, "
                                  "users\n"));
    back = load(text, &error);
    g_assert_no_error(error);
    g_assert_cmpuint(back->n_keyviz_unsalted, ==, 3);
    assert_fails("[keyviz]\nunsalted_tables = a, b c\n",
                 CONFIG_ERROR_INVALID_VALUE, "[keyviz] unsalted_tables",
                 "'b c'", NULL);
    assert_fails("[keyviz]\nunsalted_tables = a,,b\n",
                 CONFIG_ERROR_INVALID_VALUE, "[keyviz] unsalted_tables", NULL);
    assert_fails("[keyviz]\nunsalted_tables = hbase:meta\n",
                 CONFIG_ERROR_INVALID_VALUE, "[keyviz] unsalted_tables", NULL);
    assert_fails("[keyviz]\nunsalted_tables = a, default:a\n",
                 CONFIG_ERROR_DUPLICATE, "[keyviz] unsalted_tables",
                 "'a' named twice", NULL);
    assert_fails("[keyviz]\nunsalted_tables = t\n[table:t]\n",
                 CONFIG_ERROR_INVALID_VALUE, "[keyviz] unsalted_tables",
                 "[table:t] section", NULL);
}

/* The default read_retry_after_ms is a third of request_timeout_ms,
 * rounded down: off (0) under 3 ms, never a value the key itself would
 * refuse, so the effective configuration written out loads back (found
 * by fuzz_config: request_timeout_ms = 1 gave 1, not below 1). */
static void
test_read_retry_default_small_timeouts(void)
{
    for (unsigned ms = 1; ms <= 7; ms++) {
        g_autofree char *text =
            g_strdup_printf("[backend]\nrequest_timeout_ms = %u\n", ms);
        g_autoptr(GError) error = NULL;
        g_autoptr(config_t) cfg = load(text, &error);
        g_autoptr(config_t) back = NULL;
        g_autofree char *out = NULL;

        g_assert_no_error(error);
        g_assert_cmpuint(cfg->read_retry_after_ms, ==, ms / 3);
        g_assert_cmpuint(cfg->read_retry_after_ms, <, ms);
        out = config_to_text(cfg);
        back = config_load_data(out, strlen(out), "to_text", &error);
        g_assert_no_error(error);
        g_assert_cmpuint(back->read_retry_after_ms, ==, ms / 3);
    }
}

int
main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);

    if (argc > 1 && g_file_test(argv[1], G_FILE_TEST_IS_REGULAR)) {
        shipped_path = g_strdup(argv[1]);
    } else {
        shipped_path = g_test_build_filename(G_TEST_DIST, "..", "..", "conf",
                                             "hbase-salt-proxy.conf", NULL);
    }

    g_test_add_func("/config/defaults", test_defaults);
    g_test_add_func("/config/read_retry_default_small",
                    test_read_retry_default_small_timeouts);
    g_test_add_func("/config/shipped", test_shipped);
    g_test_add_func("/config/shipped-example", test_shipped_example);
    g_test_add_func("/config/full", test_full);
    g_test_add_func("/config/find-many", test_find_many);
    g_test_add_func("/config/accepted-values", test_accepted_values);
    g_test_add_func("/config/error/file", test_error_file);
    g_test_add_func("/config/error/parse", test_error_parse);
    g_test_add_func("/config/error/duplicate", test_error_duplicate);
    g_test_add_func("/config/error/group", test_error_group);
    g_test_add_func("/config/error/key", test_error_key);
    g_test_add_func("/config/error/value", test_error_value);
    g_test_add_func("/config/thrift2", test_thrift2);
    g_test_add_func("/config/custom-filters", test_custom_filters);
    g_test_add_func("/config/salt-mapping", test_salt_mapping);
    g_test_add_func("/config/sasl", test_sasl);
    g_test_add_func("/config/catalog", test_catalog);
    g_test_add_func("/config/tls", test_tls);
    g_test_add_func("/config/keyviz", test_keyviz);
    g_test_add_func("/config/keyviz_unsalted", test_keyviz_unsalted);
    return g_test_run();
}
