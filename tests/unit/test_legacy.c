/* test_legacy.c: unit tests of forward-looking salting's rule (legacy.h)
 * and of the table setting that carries it (config.c). */
#include <string.h>

#include <glib.h>

#include "config.h"
#include "legacy.h"
#include "salt.h"

#define K(s) (const uint8_t *)(s), sizeof(s) - 1

static gboolean
is_legacy(const struct legacy_rule *r, const char *key, size_t len)
{
    return legacy_is_legacy(r, (const uint8_t *)key, len);
}
#define LEG(r, s) is_legacy(r, s, sizeof(s) - 1)

/* Test: after:SEP:last, the article's timestamp at the end of the key. */
static void
test_after_last(void)
{
    struct legacy_rule r;
    const uint8_t *part;
    size_t len;

    g_assert_true(legacy_rule_after(&r, "#", 1, 0, "1710000000", 10, NULL));
    g_assert_true(LEG(&r, "user42#1700000000"));
    g_assert_false(LEG(&r, "user42#1710000000")); /* == cutoff: new */
    g_assert_false(LEG(&r, "user42#1799999999"));
    g_assert_false(LEG(&r, "a#b#1710000001")); /* the last '#' */
    g_assert_true(LEG(&r, "a#1710000001#1"));
    g_assert_true(LEG(&r, "user42")); /* no '#': lacks it */
    g_assert_true(LEG(&r, ""));
    g_assert_true(LEG(&r, "user42#"));             /* empty < cutoff */
    g_assert_true(LEG(&r, "user42#171"));          /* a prefix sorts first */
    g_assert_false(LEG(&r, "user42#17100000000")); /* longer: after */
    g_assert_false(LEG(&r, "user42#2"));
    g_assert_true(LEG(&r, "user42#\x00\xff"));
    g_assert_false(LEG(&r, "user42#\xff"));
    g_assert_true(legacy_component(&r, K("x#y#zz"), &part, &len));
    g_assert_cmpmem(part, len, "zz", 2);
    /* occurrences without overlap: "###" holds one "##", at 0 */
    g_assert_true(legacy_rule_after(&r, "##", 2, 0, "", 0, NULL));
    g_assert_true(legacy_component(&r, K("a###"), &part, &len));
    g_assert_cmpmem(part, len, "#", 1);
    /* empty cutoff: every key with the part is new */
    g_assert_false(LEG(&r, "a##"));
    g_assert_true(LEG(&r, "a#b"));
}

/* Test: after:SEP:K counts from the left; fewer than K: legacy. */
static void
test_after_k(void)
{
    struct legacy_rule r;
    const uint8_t *part;
    size_t len;

    g_assert_true(legacy_rule_after(&r, "::", 2, 2, "m", 1, NULL));
    g_assert_true(legacy_component(&r, K("a::b::c::d"), &part, &len));
    g_assert_cmpmem(part, len, "c::d", 4);
    g_assert_true(LEG(&r, "a::b::c::d"));
    g_assert_false(LEG(&r, "a::b::m"));
    g_assert_false(LEG(&r, "a::b::z::a"));
    g_assert_true(LEG(&r, "a::zzz")); /* one '::': lacks it */
    g_assert_false(legacy_component(&r, K("a::zzz"), &part, &len));
    g_assert_true(LEG(&r, "a::b::")); /* empty part */
    g_assert_true(legacy_rule_after(&r, "\x00", 1, 1, "\x80", 1, NULL));
    g_assert_false(LEG(&r, "k\x00\x80"));
    g_assert_true(LEG(&r, "k\x00\x7f\xff"));
}

/* Test: bytes:OFF:LEN; a key shorter than OFF+LEN lacks the part. */
static void
test_bytes(void)
{
    struct legacy_rule r;
    const uint8_t *part;
    size_t len;

    g_assert_true(legacy_rule_bytes(&r, 4, 2, "24", 2, NULL));
    g_assert_true(legacy_component(&r, K("dev12399"), &part, &len));
    g_assert_cmpmem(part, len, "23", 2);
    g_assert_true(LEG(&r, "dev12399"));
    g_assert_false(LEG(&r, "dev124"));
    g_assert_false(LEG(&r, "dev1\xff\x00"));
    g_assert_true(LEG(&r, "dev12")); /* 5 bytes: lacks it */
    g_assert_true(LEG(&r, ""));
    g_assert_true(legacy_rule_bytes(&r, 0, 1, "\x05", 1, NULL));
    g_assert_true(LEG(&r, "\x04zzz"));
    g_assert_false(LEG(&r, "\x05"));
}

/* Test: range: [start, stop) legacy, empty stop unbounded. */
static void
test_range(void)
{
    struct legacy_rule r;

    g_assert_true(legacy_rule_range(&r, "b", 1, "d", 1, NULL));
    g_assert_false(LEG(&r, "a"));
    g_assert_false(LEG(&r, "a\xff"));
    g_assert_true(LEG(&r, "b"));
    g_assert_true(LEG(&r, "c\xff\xff"));
    g_assert_false(LEG(&r, "d"));
    g_assert_false(LEG(&r, "d\x00"));
    g_assert_true(legacy_rule_range(&r, "", 0, "\x10", 1, NULL));
    g_assert_true(LEG(&r, "\x00"));
    g_assert_true(LEG(&r, "\x0f\xff"));
    g_assert_false(LEG(&r, "\x10"));
    g_assert_true(legacy_rule_range(&r, "m", 1, NULL, 0, NULL));
    g_assert_true(LEG(&r, "\xff\xff"));
    g_assert_false(LEG(&r, "l\xff"));
    legacy_rule_init(&r);
    g_assert_false(LEG(&r, "anything"));
}

/* Test: rules that cannot work are refused, leaving the rule as it was. */
static void
test_errors(void)
{
    struct legacy_rule r;
    uint8_t big[LEGACY_MAX_BOUND + 1] = { 0 };
    GError *error = NULL;

    legacy_rule_init(&r);
    g_assert_false(legacy_rule_after(&r, "", 0, 1, "x", 1, &error));
    g_assert_error(error, LEGACY_ERROR, LEGACY_ERROR_INVALID);
    g_clear_error(&error);
    g_assert_false(legacy_rule_after(&r, "0123456789abcdefg", 17, 1, "x", 1,
                                     &error));
    g_clear_error(&error);
    g_assert_false(legacy_rule_after(&r, "#", 1, 1, big, sizeof(big), &error));
    g_assert_nonnull(strstr(error->message, "cutoff"));
    g_clear_error(&error);
    g_assert_false(legacy_rule_bytes(&r, 0, 0, "x", 1, &error));
    g_clear_error(&error);
    g_assert_false(legacy_rule_range(&r, "b", 1, "b", 1, &error));
    g_clear_error(&error);
    g_assert_false(legacy_rule_range(&r, "c", 1, "b", 1, &error));
    g_clear_error(&error);
    g_assert_cmpint(r.kind, ==, LEGACY_NONE);
}

/* Test: equality and the description the reload refusal quotes. */
static void
test_equal_describe(void)
{
    struct legacy_rule a, b;
    g_autofree char *da = NULL;
    g_autofree char *db = NULL;
    g_autofree char *dn = NULL;

    g_assert_true(legacy_rule_after(&a, "#", 1, 0, "17", 2, NULL));
    g_assert_true(legacy_rule_after(&b, "#", 1, 0, "17", 2, NULL));
    g_assert_true(legacy_rule_equal(&a, &b));
    g_assert_true(legacy_rule_after(&b, "#", 1, 0, "18", 2, NULL));
    g_assert_false(legacy_rule_equal(&a, &b));
    g_assert_true(legacy_rule_after(&b, "#", 1, 1, "17", 2, NULL));
    g_assert_false(legacy_rule_equal(&a, &b));
    g_assert_true(legacy_rule_range(&b, "", 0, "17", 2, NULL));
    g_assert_false(legacy_rule_equal(&a, &b));
    da = legacy_rule_describe(&a);
    db = legacy_rule_describe(&b);
    g_assert_cmpstr(da, ==,
                    "legacy_component=after:#:last "
                    "legacy_cutoff=\"17\"");
    g_assert_cmpstr(db, ==,
                    "legacy_range_start=\"\" "
                    "legacy_range_stop=\"17\"");
    legacy_rule_init(&b);
    dn = legacy_rule_describe(&b);
    g_assert_cmpstr(dn, ==, "legacy=none");
}

/* 16 byte buckets, whole key, with a rule. */
static void
table16(struct salt_table *t, const struct legacy_rule *r)
{
    g_assert_true(salt_table_init(t, 16, SALT_FORMAT_BYTE, "", 0, NULL));
    t->legacy = *r;
}

/* Test: route and owner agree: every physical row has one owner, and a
 * legacy key that reads as a new key's row is a clash. */
static void
test_route_owner(void)
{
    struct legacy_rule r;
    struct salt_table t, plain;
    uint8_t phys[64];
    const uint8_t *logical;
    size_t n, llen;
    uint32_t bucket;

    /* keys from "m" on are legacy: salted rows ("\x00".."\x0f" ...) are
     * all outside it, so no clash can arise */
    g_assert_true(legacy_rule_range(&r, "m", 1, NULL, 0, NULL));
    table16(&t, &r);
    g_assert_cmpint(salt_route(&t, K("user1")), ==, LEGACY_ROUTE_LEGACY);
    g_assert_cmpint(salt_route(&t, K("abc")), ==, LEGACY_ROUTE_SALTED);
    g_assert_cmpint(salt_owner(&t, K("user1"), &logical, &llen, &bucket), ==,
                    LEGACY_OWNER_LEGACY);
    g_assert_cmpmem(logical, llen, "user1", 5);
    n = salt_key(&t, K("abc"), phys, sizeof(phys));
    g_assert_cmpint(salt_owner(&t, phys, n, &logical, &llen, &bucket), ==,
                    LEGACY_OWNER_SALTED);
    g_assert_cmpmem(logical, llen, "abc", 3);
    g_assert_cmpuint(bucket, ==, salt_bucket(&t, K("abc")));
    /* a salted row of a key the rule calls legacy belongs to nobody */
    n = salt_key(&t, K("user1"), phys, sizeof(phys));
    g_assert_cmpint(salt_owner(&t, phys, n, &logical, &llen, &bucket), ==,
                    LEGACY_OWNER_NONE);
    /* an unsalted new key belongs to nobody either */
    g_assert_cmpint(salt_owner(&t, K("abc"), &logical, &llen, &bucket), ==,
                    LEGACY_OWNER_NONE);

    /* keys below "m" are legacy: every salted row is in that range, and
     * a legacy key shaped as one is a clash */
    g_assert_true(legacy_rule_range(&r, "", 0, "m", 1, NULL));
    table16(&t, &r);
    n = salt_key(&t, K("zebra"), phys, sizeof(phys));
    g_assert_cmpint(salt_route(&t, K("zebra")), ==, LEGACY_ROUTE_SALTED);
    g_assert_cmpint(salt_route(&t, phys, n), ==, LEGACY_ROUTE_CLASH);
    g_assert_cmpint(salt_owner(&t, phys, n, &logical, &llen, &bucket), ==,
                    LEGACY_OWNER_SALTED);
    g_assert_cmpmem(logical, llen, "zebra", 5);
    /* the same bytes with the wrong bucket are a plain legacy key */
    phys[0] = (uint8_t)((phys[0] + 1) % 16);
    g_assert_cmpint(salt_route(&t, phys, n), ==, LEGACY_ROUTE_LEGACY);
    g_assert_cmpint(salt_owner(&t, phys, n, &logical, &llen, &bucket), ==,
                    LEGACY_OWNER_LEGACY);
    /* a legacy key's bytes under their salt are not its row: they are
     * the legacy key "\xNNabc" (below "m") itself */
    n = salt_key(&t, K("abc"), phys, sizeof(phys));
    g_assert_cmpint(salt_owner(&t, phys, n, &logical, &llen, &bucket), ==,
                    LEGACY_OWNER_LEGACY);
    g_assert_cmpmem(logical, llen, phys, n);

    /* the timestamp rule never clashes: a salted row ends as its key */
    g_assert_true(legacy_rule_after(&r, "#", 1, 0, "5", 1, NULL));
    table16(&t, &r);
    n = salt_key(&t, K("u#4"), phys, sizeof(phys));
    g_assert_cmpint(salt_route(&t, phys, n), ==, LEGACY_ROUTE_LEGACY);
    g_assert_cmpint(salt_owner(&t, phys, n, &logical, &llen, &bucket), ==,
                    LEGACY_OWNER_LEGACY);
    g_assert_cmpmem(logical, llen, phys, n);

    /* no rule: the plain mapping */
    g_assert_true(salt_table_init(&plain, 16, SALT_FORMAT_BYTE, "", 0, NULL));
    g_assert_cmpint(salt_route(&plain, K("user1")), ==, LEGACY_ROUTE_SALTED);
    g_assert_cmpint(salt_owner(&plain, K("user1"), &logical, &llen, &bucket),
                    ==, LEGACY_OWNER_NONE);
    /* the rule is part of the mapping */
    g_assert_false(salt_table_equal(&plain, &t));
}

struct bounds_case {
    gboolean reversed;
    const char *start, *stop; /* NUL-free here */
    gboolean ok;
    const char *want_start, *want_stop;
};

/* Test: a range rule narrows a scan's legacy range exactly. */
static void
test_scan_bounds(void)
{
    static const struct bounds_case cases[] = {
        { FALSE, "", "", TRUE, "b", "d" },
        { FALSE, "a", "c", TRUE, "b", "c" },
        { FALSE, "c", "", TRUE, "c", "d" },
        { FALSE, "d", "", FALSE, NULL, NULL },
        { FALSE, "", "b", FALSE, NULL, NULL },
        { FALSE, "a", "b", FALSE, NULL, NULL },
        { FALSE, "c", "c", TRUE, "c", "c" },    /* one-row scan, legacy */
        { FALSE, "a", "a", FALSE, NULL, NULL }, /* one-row scan, new */
        { TRUE, "", "", TRUE, "d", "" },
        { TRUE, "z", "a", TRUE, "d", "a" },
        { TRUE, "c", "", TRUE, "c", "" },
        { TRUE, "a\xff", "", FALSE, NULL, NULL },
        { TRUE, "z", "d", FALSE, NULL, NULL },
        { TRUE, "c", "c", TRUE, "c", "c" },
    };
    struct legacy_rule r, comp;

    g_assert_true(legacy_rule_range(&r, "b", 1, "d", 1, NULL));
    for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
        const struct bounds_case *c = &cases[i];
        const uint8_t *s = (const uint8_t *)c->start;
        const uint8_t *e = (const uint8_t *)c->stop;
        size_t sl = strlen(c->start), el = strlen(c->stop);
        gboolean ok = legacy_scan_bounds(&r, c->reversed, &s, &sl, &e, &el);

        g_test_message("case %zu", i);
        g_assert_cmpint(ok, ==, c->ok);
        if (ok) {
            g_assert_cmpmem(s, sl, c->want_start, strlen(c->want_start));
            g_assert_cmpmem(e, el, c->want_stop, strlen(c->want_stop));
        }
    }
    /* a component rule leaves the bounds as they are */
    g_assert_true(legacy_rule_after(&comp, "#", 1, 0, "5", 1, NULL));
    {
        const uint8_t *s = (const uint8_t *)"x", *e = (const uint8_t *)"y";
        size_t sl = 1, el = 1;

        g_assert_true(legacy_scan_bounds(&comp, FALSE, &s, &sl, &e, &el));
        g_assert_cmpmem(s, sl, "x", 1);
        g_assert_cmpmem(e, el, "y", 1);
    }
}

static struct config *
load(const char *text, GError **error)
{
    return config_load_data(text, strlen(text), "t.conf", error);
}

/* Test: the table keys, their round trip through config_to_text, and the
 * reload refusal: the rule is part of the mapping. */
static void
test_config(void)
{
    static const char *const good[] = {
        "[table:t]\nlegacy_component = after:#:last\n"
        "legacy_cutoff = 1710000000\n",
        "[table:t]\nlegacy_component = after:\\x00\\x3a:3\n"
        "legacy_cutoff = \\xff\\x00\n",
        "[table:t]\nlegacy_component = bytes:8:4\nlegacy_cutoff =\n",
        "[table:t]\nlegacy_range_start = a\\x00\nlegacy_range_stop = m\n",
        "[table:t]\nlegacy_range_stop = m\n",
        "[table:t]\nlegacy_range_start = m\n",
    };
    g_autoptr(GError) error = NULL;

    for (size_t i = 0; i < G_N_ELEMENTS(good); i++) {
        g_autoptr(config_t) cfg = load(good[i], &error);
        g_autoptr(config_t) back = NULL;
        g_autoptr(config_t) plain = NULL;
        g_autofree char *text = NULL;

        g_assert_no_error(error);
        g_assert_cmpint(cfg->tables[0].salt.legacy.kind, !=, LEGACY_NONE);
        text = config_to_text(cfg);
        back = load(text, &error);
        g_assert_no_error(error);
        g_assert_true(salt_table_equal(&cfg->tables[0].salt,
                                       &back->tables[0].salt));
        g_assert_true(config_reload_check(cfg, back, NULL));
        /* adding, dropping or changing the rule is refused */
        plain = load("[table:t]\n", &error);
        g_assert_no_error(error);
        g_assert_false(config_reload_check(plain, cfg, &error));
        g_assert_error(error, CONFIG_ERROR, CONFIG_ERROR_REFUSED);
        g_assert_nonnull(strstr(error->message, "legacy_"));
        g_clear_error(&error);
        g_assert_false(config_reload_check(cfg, plain, &error));
        g_clear_error(&error);
    }
    {
        g_autoptr(config_t) a = load(good[0], &error);
        g_autoptr(config_t) b = load("[table:t]\nlegacy_component = "
                                     "after:#:last\nlegacy_cutoff = "
                                     "1720000000\n",
                                     &error);

        g_assert_no_error(error);
        g_assert_false(config_reload_check(a, b, &error));
        g_assert_nonnull(strstr(error->message, "1710000000"));
        g_assert_nonnull(strstr(error->message, "1720000000"));
        g_clear_error(&error);
    }
}

/* Test: wrong settings name their key. */
static void
test_config_errors(void)
{
    static const struct {
        const char *text, *key;
    } bad[] = {
        { "legacy_component = after:#:last\n", "legacy_component" },
        { "legacy_cutoff = 5\n", "legacy_cutoff" },
        { "legacy_component = after:#:0\nlegacy_cutoff = 5\n",
          "legacy_component" },
        { "legacy_component = after::1\nlegacy_cutoff = 5\n",
          "legacy_component" },
        { "legacy_component = after:#\nlegacy_cutoff = 5\n",
          "legacy_component" },
        { "legacy_component = bytes:1:0\nlegacy_cutoff = 5\n",
          "legacy_component" },
        { "legacy_component = bytes:1\nlegacy_cutoff = 5\n",
          "legacy_component" },
        { "legacy_component = prefix\nlegacy_cutoff = 5\n",
          "legacy_component" },
        { "legacy_component = after:#:1\nlegacy_cutoff = \\x\n",
          "legacy_cutoff" },
        { "legacy_component = after:#:1\nlegacy_cutoff = 5\n"
          "legacy_range_stop = m\n",
          "legacy_range_stop" },
        { "legacy_range_start = m\nlegacy_range_stop = a\n",
          "legacy_range_start" },
    };

    for (size_t i = 0; i < G_N_ELEMENTS(bad); i++) {
        g_autofree char *text = g_strconcat("[table:t]\n", bad[i].text, NULL);
        g_autofree char *want = g_strdup_printf("[table:t] %s:", bad[i].key);
        g_autoptr(GError) error = NULL;
        g_autoptr(config_t) cfg = load(text, &error);

        g_test_message("case %zu: %s", i, bad[i].text);
        g_assert_null(cfg);
        g_assert_error(error, CONFIG_ERROR, CONFIG_ERROR_INVALID_VALUE);
        g_assert_nonnull(strstr(error->message, want));
    }
}

/* Test: --explain-key says where a legacy key is. */
static void
test_explain(void)
{
    struct legacy_rule r;
    struct salt_table t;
    g_autofree char *legacy = NULL;
    g_autofree char *fresh = NULL;

    g_assert_true(legacy_rule_after(&r, "#", 1, 0, "5", 1, NULL));
    table16(&t, &r);
    legacy = salt_explain(&t, K("u#4"));
    g_assert_nonnull(strstr(legacy, "physical (hex): 752334\n"));
    g_assert_nonnull(strstr(legacy, "unsalted"));
    fresh = salt_explain(&t, K("u#5"));
    g_assert_null(strstr(fresh, "physical (hex): 752335\n"));
    g_assert_null(strstr(fresh, "unsalted"));
}

int
main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/legacy/after-last", test_after_last);
    g_test_add_func("/legacy/after-k", test_after_k);
    g_test_add_func("/legacy/bytes", test_bytes);
    g_test_add_func("/legacy/range", test_range);
    g_test_add_func("/legacy/errors", test_errors);
    g_test_add_func("/legacy/equal-describe", test_equal_describe);
    g_test_add_func("/legacy/route-owner", test_route_owner);
    g_test_add_func("/legacy/scan-bounds", test_scan_bounds);
    g_test_add_func("/legacy/config", test_config);
    g_test_add_func("/legacy/config-errors", test_config_errors);
    g_test_add_func("/legacy/explain", test_explain);
    return g_test_run();
}
