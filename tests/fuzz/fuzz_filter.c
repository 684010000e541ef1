/* fuzz_filter.c: the filter language: parse, check, serialize, per bucket. */
#include "fuzz_common.h"

#include "filter.h"
#include "scanfilter.h"

/*
 * Input: one flag byte, then a filter string as a client sends it.
 *   bit 0     parse with FILTER_PARSE_STRICT
 *   bit 1     a reversed scan
 *   bits 2-4  the salted table (fuzz_common.h order)
 *   bit 5     UnknownFilter and MyFilter declared custom filters
 * Checks: a string that parses serializes (when it can) to a string that
 * parses into an equal tree and serializes to the same bytes again; a
 * copy is equal; a filter the scan accepts parses, and names only known
 * filters with valid arguments or declared ones; and every per-bucket
 * rewrite of it does the same.
 */

static const char *const fuzz_custom[] = { "UnknownFilter", "MyFilter", NULL };

static gboolean
fuzz_leaf(struct filter_node *n, guint depth, gpointer data)
{
    struct filter_params p;
    GError *error = NULL;

    FUZZ_CHECK(depth <= FILTER_MAX_DEPTH);
    if (n->kind == FILTER_NODE_LEAF && n->type != FILTER_TYPE_UNKNOWN) {
        if (!filter_leaf_params(n, &p, &error)) {
            FUZZ_CHECK(error != NULL);
            g_error_free(error);
        }
    }
    (void)filter_node_reads_row(n);
    return TRUE;
}

static void
fuzz_tree(const uint8_t *text, size_t len, guint flags)
{
    struct filter_node *n, *m, *copy;
    GError *error = NULL;
    uint8_t *s1, *s2;
    size_t len1 = 0, len2 = 0;

    n = filter_parse(text, len, flags, &error);
    if (n == NULL) {
        FUZZ_CHECK(error != NULL && error->domain == FILTER_ERROR);
        g_error_free(error);
        return;
    }
    FUZZ_CHECK(error == NULL);
    FUZZ_CHECK(filter_node_depth(n) <= FILTER_MAX_DEPTH);
    if (!filter_validate(n, &error)) {
        FUZZ_CHECK(error != NULL);
        FUZZ_CHECK(!(flags & FILTER_PARSE_STRICT));
        g_clear_error(&error);
    }
    filter_node_walk(n, fuzz_leaf, NULL);

    copy = filter_node_copy(n);
    FUZZ_CHECK(filter_node_equal(n, copy));
    filter_node_free(copy);

    s1 = filter_serialize(n, &len1, &error);
    if (s1 == NULL) {
        FUZZ_CHECK(error != NULL);
        g_clear_error(&error);
    } else {
        m = filter_parse(s1, len1, FILTER_PARSE_DEFAULT, &error);
        if (m == NULL) {
            fprintf(stderr, "serialized %.*s does not parse: %s\n", (int)len1,
                    (const char *)s1, error->message);
        }
        FUZZ_CHECK(m != NULL);
        FUZZ_CHECK(filter_node_equal(n, m));
        s2 = filter_serialize(m, &len2, NULL);
        FUZZ_CHECK(s2 != NULL);
        FUZZ_CHECK(len1 == len2 && memcmp(s1, s2, len1) == 0);
        g_free(s2);
        filter_node_free(m);
        g_free(s1);
    }
    filter_node_free(n);
}

static gboolean
fuzz_known_leaf(struct filter_node *n, guint depth, gpointer data)
{
    const char *const *custom = data;

    if (n->kind != FILTER_NODE_LEAF) {
        return TRUE;
    }
    if (n->type != FILTER_TYPE_UNKNOWN) {
        return filter_leaf_params(n, NULL, NULL);
    }
    for (; custom != NULL && *custom != NULL; custom++) {
        if (strlen(*custom) == n->name_len &&
            memcmp(*custom, n->name, n->name_len) == 0) {
            return TRUE;
        }
    }
    return FALSE;
}

/* Whether text parses and names only known (valid) or custom filters:
 * what the scan accepts, and what it sends to each bucket. */
static gboolean
fuzz_rewritable(const uint8_t *text, size_t len, const char *const *custom)
{
    struct filter_node *n = filter_parse(text, len, FILTER_PARSE_DEFAULT,
                                         NULL);
    gboolean ok = n != NULL &&
                  filter_node_walk(n, fuzz_known_leaf, (gpointer)custom);

    if (n != NULL) {
        filter_node_free(n);
    }
    return ok;
}

static void
fuzz_scanfilter(const uint8_t *text, size_t len, const struct salt_table *salt,
                gboolean reversed, const char *const *custom)
{
    GError *error = NULL;
    struct scanfilter *f = scanfilter_new(text, len, salt, reversed, custom,
                                          &error);
    uint32_t buckets[4] = { 0, 1, salt->buckets - 1, 0 };
    uint32_t single = 0;

    if (f == NULL) {
        FUZZ_CHECK(error != NULL);
        g_error_free(error);
        return;
    }
    /* never sent to a bucket unrewritten */
    FUZZ_CHECK(fuzz_rewritable(text, len, custom));
    /* a top-level PageFilter is one the walk finds too */
    FUZZ_CHECK(scanfilter_page_limit(f) < 0 || scanfilter_has_page(f));
    if (scanfilter_single_bucket(f, &single)) {
        FUZZ_CHECK(single < salt->buckets);
        buckets[3] = single;
    }
    if (!scanfilter_multi_bucket_ok(f)) {
        FUZZ_CHECK(scanfilter_multi_bucket_why(f) != NULL);
    }
    for (size_t i = 0; i < G_N_ELEMENTS(buckets); i++) {
        size_t n = 0;
        const uint8_t *out;

        if (buckets[i] >= salt->buckets) {
            continue;
        }
        out = scanfilter_for_bucket(f, buckets[i], &n);
        FUZZ_CHECK(out != NULL || n == 0);
        FUZZ_CHECK(fuzz_rewritable(out, n, custom));
    }
    scanfilter_free(f);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    guint flags;
    gboolean reversed;
    uint8_t flags_byte;
    const struct salt_table *salt;

    if (size < 1) {
        return 0;
    }
    flags = (data[0] & 1) ? FILTER_PARSE_STRICT : FILTER_PARSE_DEFAULT;
    reversed = (data[0] & 2) != 0;
    flags_byte = data[0];
    salt = fuzz_salt((data[0] >> 2) & 7);
    data++;
    size--;

    fuzz_tree(data, size, flags);
    fuzz_scanfilter(data, size, salt, reversed,
                    (flags_byte & 0x20) ? fuzz_custom : NULL);
    return 0;
}
