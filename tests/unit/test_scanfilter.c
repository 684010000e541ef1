/* test_scanfilter.c: a scan's filter string rewritten for each bucket,
 * and the filters refused because salting would change their meaning. */
#include <string.h>

#include "scanfilter.h"

/* 16 hex buckets, salt and '-' in front of every key: bucket 3 is "3-". */
static struct salt_table hex16;
/* 16 hex buckets hashing up to the first '#': "user42#..." is one bucket. */
static struct salt_table by_user;
/* 200 byte-salted buckets: salts from 0x80 up break row regexes. */
static struct salt_table bytes200;

static struct scanfilter *
make(const struct salt_table *t, const char *text, gboolean reversed,
     GError **error)
{
    return scanfilter_new((const uint8_t *)text, strlen(text), t, reversed,
                          NULL, error);
}

/* The filter of bucket for text, which must be accepted. */
static char *
for_bucket(const struct salt_table *t, const char *text, uint32_t bucket)
{
    g_autoptr(GError) error = NULL;
    struct scanfilter *f = make(t, text, FALSE, &error);
    const uint8_t *out;
    size_t len;
    char *s;

    g_assert_no_error(error);
    g_assert_nonnull(f);
    out = scanfilter_for_bucket(f, bucket, &len);
    s = g_strndup((const char *)out, len);
    scanfilter_free(f);
    return s;
}

/* Why text cannot be spread over several buckets, or NULL if it can. */
static char *
multi_why(const struct salt_table *t, const char *text, gboolean reversed)
{
    g_autoptr(GError) error = NULL;
    struct scanfilter *f = make(t, text, reversed, &error);
    char *why;

    g_assert_no_error(error);
    why = scanfilter_multi_bucket_ok(f)
              ? NULL
              : g_strdup(scanfilter_multi_bucket_why(f));
    scanfilter_free(f);
    return why;
}

static void
check_bucket(const char *text, uint32_t bucket, const char *want)
{
    g_autofree char *got = for_bucket(&hex16, text, bucket);

    g_assert_cmpstr(got, ==, want);
}

/* Test: row-key filters gain the bucket's salt, wherever they sit */
static void
test_row_filters(void)
{
    check_bucket("PrefixFilter('abc')", 3, "PrefixFilter('3-abc')");
    check_bucket("PrefixFilter('abc')", 10, "PrefixFilter('a-abc')");
    check_bucket("InclusiveStopFilter('k9')", 3,
                 "InclusiveStopFilter('3-k9')");
    check_bucket("RowFilter(=, 'binary:k')", 0, "RowFilter(=, 'binary:0-k')");
    check_bucket("RowFilter(>=, 'binaryprefix:k1')", 15,
                 "RowFilter(>=, 'binaryprefix:f-k1')");
    check_bucket("(PrefixFilter('a') AND KeyOnlyFilter()) OR "
                 "RowFilter(=, 'binary:k')",
                 3,
                 "(PrefixFilter('3-a') AND KeyOnlyFilter()) OR "
                 "RowFilter(=, 'binary:3-k')");
    check_bucket("WHILE RowFilter(<, 'binary:a')", 3,
                 "WHILE RowFilter(<, 'binary:3-a')");
}

/* Test: regexes are anchored after the salt, substrings become such a
 * regex, any case, so nothing matches across the salt */
static void
test_regex(void)
{
    check_bucket("RowFilter(=, 'regexstring:^ab.*')", 3,
                 "RowFilter(=, 'regexstring:^\\x33\\x2d(?:ab.*)')");
    check_bucket("RowFilter(=, 'regexstring:ab$')", 3,
                 "RowFilter(=, 'regexstring:^\\x33\\x2d(?s:.*?)(?:ab$)')");
    check_bucket("RowFilter(=, 'substring:Ab')", 3,
                 "RowFilter(=, 'regexstring:^\\x33\\x2d(?s:.*?)(?i:Ab)')");
}

/* Test: what does not look at row keys is sent as written */
static void
test_unchanged(void)
{
    check_bucket("KeyOnlyFilter()", 3, "KeyOnlyFilter()");
    check_bucket("SingleColumnValueFilter('f', 'q', =, 'binary:v')", 3,
                 "SingleColumnValueFilter('f', 'q', =, 'binary:v')");
}

/* The refusal of text with no custom filters declared. */
static char *
refusal(const char *text, const char *const *custom)
{
    g_autoptr(GError) error = NULL;
    struct scanfilter *f = scanfilter_new((const uint8_t *)text, strlen(text),
                                          &hex16, FALSE, custom, &error);

    g_assert_null(f);
    g_assert_nonnull(error);
    return g_strdup(error->message);
}

/* Test: nothing reaches a bucket unrewritten: a filter name the proxy
 * does not know (it could read the row key), a string that does not
 * parse and bad arguments are refused, the last two with ParseFilter's
 * own message (they used to be sent as written to every bucket) */
static void
test_refused_unknown(void)
{
    static const char *const other[] = { "OtherFilter", NULL };
    g_autofree char *unknown = refusal("PrefixFilter('abc') AND MyFilter()",
                                       NULL);
    g_autofree char *undeclared = refusal("PrefixFilter('abc') AND MyFilter()",
                                          other);
    g_autofree char *garbage = refusal("Garbage((", NULL);
    g_autofree char *args = refusal("PrefixFilter('a', 'b')", NULL);

    g_assert_nonnull(strstr(unknown, "unknown filter MyFilter refused on a "
                                     "salted table"));
    g_assert_nonnull(strstr(unknown, "[backend] custom_filters"));
    g_assert_cmpstr(undeclared, ==, unknown);
    g_assert_nonnull(strstr(garbage, "Incorrect Filter String"));
    g_assert_nonnull(strstr(args, "PrefixFilter"));
}

/* Test: a declared custom filter is kept as written, arguments and all,
 * while the row-key filters beside it are rewritten; the analysis takes
 * it for one that may drop rows and is not monotonic in the key */
static void
test_custom(void)
{
    static const char *const custom[] = { "MyFilter", "Other", NULL };
    static const char *const text =
        "PrefixFilter('abc') AND MyFilter('x''y', 12, >=, true)";
    g_autoptr(GError) error = NULL;
    struct scanfilter *f = scanfilter_new((const uint8_t *)text, strlen(text),
                                          &hex16, FALSE, custom, &error);
    const uint8_t *out;
    size_t len;

    g_assert_no_error(error);
    out = scanfilter_for_bucket(f, 3, &len);
    g_assert_cmpmem(out, len,
                    "PrefixFilter('3-abc') AND MyFilter('x''y', 12, >=, "
                    "true)",
                    strlen("PrefixFilter('3-abc') AND MyFilter('x''y', 12, "
                           ">=, true)"));
    g_assert_true(scanfilter_multi_bucket_ok(f));
    scanfilter_free(f);

    f = scanfilter_new((const uint8_t *)"WHILE Other()", 13, &hex16, FALSE,
                       custom, &error);
    g_assert_no_error(error);
    g_assert_false(scanfilter_multi_bucket_ok(f));
    scanfilter_free(f);
    f = scanfilter_new((const uint8_t *)"PageFilter(3) AND Other()", 25,
                       &hex16, FALSE, custom, &error);
    g_assert_no_error(error);
    g_assert_false(scanfilter_multi_bucket_ok(f));
    scanfilter_free(f);
}

/* Test: row regexes a salt in front would change are refused */
static void
test_refused_regex(void)
{
    static const char *const bad[] = {
        "RowFilter(=, 'regexstring:\\bfoo')",
        "RowFilter(=, 'regexstring:a^b')",
    };

    for (size_t i = 0; i < G_N_ELEMENTS(bad); i++) {
        g_autoptr(GError) error = NULL;

        g_assert_null(make(&hex16, bad[i], FALSE, &error));
        g_assert_nonnull(error);
        g_assert_true(strstr(error->message, "only a leading ^") != NULL);
    }
}

/* Test: row regexes and substrings need salts below 0x80 */
static void
test_refused_high_salt(void)
{
    g_autoptr(GError) error = NULL;
    g_autofree char *prefix = NULL;

    g_assert_null(make(&bytes200, "RowFilter(=, 'substring:ab')", FALSE,
                       &error));
    g_assert_true(strstr(error->message, "salts below 0x80") != NULL);
    /* a prefix is bytes, whatever the salt */
    prefix = for_bucket(&bytes200, "PrefixFilter('ab')", 0x90);
    g_assert_cmpstr(prefix, ==,
                    "PrefixFilter('\x90"
                    "ab')");
}

/* Test: filters that end or count a scan on what one bucket sees are
 * refused over several buckets, with the reason */
static void
test_refused_multi(void)
{
    static const struct {
        const char *text;
        gboolean reversed;
        const char *why; /* part of the reason; NULL: accepted */
    } cases[] = {
        { "ColumnCountGetFilter(2)", FALSE, "ColumnCountGetFilter ends" },
        { "SKIP PageFilter(1)", FALSE, "PageFilter inside OR, SKIP" },
        { "PageFilter(1) AND SingleColumnValueFilter('f', 'q', =, "
          "'binary:v')",
          FALSE, "put the PageFilter last" },
        { "SingleColumnValueFilter('f', 'q', =, 'binary:v') AND "
          "PageFilter(1)",
          FALSE, NULL },
        { "WHILE RowFilter(=, 'binary:a')", FALSE, "not monotonic" },
        /* monotonic forward only: < holds up to a point going up */
        { "WHILE RowFilter(<, 'binary:a')", FALSE, NULL },
        { "WHILE RowFilter(<, 'binary:a')", TRUE, "not monotonic" },
        /* in a top-level AND the first miss ends the whole scan too */
        { "KeyOnlyFilter() AND WHILE RowFilter(<, 'binary:a')", FALSE, NULL },
        /* under OR the scan goes on past each bucket's own first miss */
        { "SKIP ColumnPrefixFilter('x') OR WHILE RowFilter(<, 'binary:#')",
          FALSE, "WHILE inside OR or SKIP" },
        { "PrefixFilter('b') OR WHILE RowFilter(<, 'binary:a')", FALSE,
          "WHILE inside OR or SKIP" },
        { "SKIP WHILE RowFilter(<, 'binary:a')", FALSE,
          "WHILE inside OR or SKIP" },
        { "PageFilter(10)", FALSE, NULL },
    };

    for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
        g_autofree char *why = multi_why(&hex16, cases[i].text,
                                         cases[i].reversed);

        if (cases[i].why == NULL) {
            g_assert_null(why);
        } else {
            g_assert_nonnull(why);
            g_assert_true(strstr(why, cases[i].why) != NULL);
        }
    }
}

/* Test: a top-level PageFilter limits the whole merged scan */
static void
test_page_limit(void)
{
    static const struct {
        const char *text;
        int64_t limit;
    } cases[] = {
        { "PageFilter(10)", 10 },
        { "PrefixFilter('a') AND PageFilter(3)", 3 },
        { "KeyOnlyFilter()", -1 },
        { "SKIP PageFilter(1)", -1 },
    };

    for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
        g_autoptr(GError) error = NULL;
        struct scanfilter *f = make(&hex16, cases[i].text, FALSE, &error);

        g_assert_no_error(error);
        g_assert_cmpint(scanfilter_page_limit(f), ==, cases[i].limit);
        scanfilter_free(f);
    }
}

/* Test: a top-level PrefixFilter that fixes the hashed part confines the
 * scan to its bucket */
static void
test_single_bucket(void)
{
    g_autoptr(GError) error = NULL;
    struct scanfilter *f;
    uint32_t bucket = G_MAXUINT32;

    f = make(&by_user, "PrefixFilter('user42#x')", FALSE, &error);
    g_assert_no_error(error);
    g_assert_true(scanfilter_single_bucket(f, &bucket));
    g_assert_cmpuint(bucket, ==,
                     salt_bucket(&by_user, (const uint8_t *)"user42", 6));
    scanfilter_free(f);
    /* the delimiter not reached: any bucket */
    f = make(&by_user, "PrefixFilter('user42')", FALSE, &error);
    g_assert_false(scanfilter_single_bucket(f, &bucket));
    scanfilter_free(f);
    f = make(&hex16, "PrefixFilter('user42#x')", FALSE, &error);
    g_assert_false(scanfilter_single_bucket(f, &bucket));
    scanfilter_free(f);
}

int
main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_assert_true(salt_table_init(&hex16, 16, SALT_FORMAT_HEX, "-", 1, NULL));
    g_assert_true(salt_table_init(&by_user, 16, SALT_FORMAT_HEX, "", 0, NULL));
    g_assert_true(salt_table_hash_delimiter(&by_user, "#", 1, 1, NULL));
    g_assert_true(salt_table_init(&bytes200, 200, SALT_FORMAT_BYTE, "", 0,
                                  NULL));
    g_test_add_func("/scanfilter/row-filters", test_row_filters);
    g_test_add_func("/scanfilter/regex", test_regex);
    g_test_add_func("/scanfilter/unchanged", test_unchanged);
    g_test_add_func("/scanfilter/refused-unknown", test_refused_unknown);
    g_test_add_func("/scanfilter/custom", test_custom);
    g_test_add_func("/scanfilter/refused-regex", test_refused_regex);
    g_test_add_func("/scanfilter/refused-high-salt", test_refused_high_salt);
    g_test_add_func("/scanfilter/refused-multi", test_refused_multi);
    g_test_add_func("/scanfilter/page-limit", test_page_limit);
    g_test_add_func("/scanfilter/single-bucket", test_single_bucket);
    return g_test_run();
}
