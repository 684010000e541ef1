/* fuzz_filterpb.c: Thrift2 filterBytes: read, checked, per bucket. */
#include "fuzz_common.h"

#include "filter.h"
#include "filterpb.h"
#include "scanfilter.h"

/*
 * Input: one flag byte, then filterBytes as a client sends them.
 *   bit 1     a reversed scan
 *   bits 2-4  the salted table (fuzz_common.h order)
 *   bit 5     com.example.CustomFilter and PrefixFilter (no package)
 *             declared custom filter classes
 * Checks: every error is one of filterpb's (or scanfilter's refusals); an
 * exact reading is valid filter language that serializes and parses back
 * the same; and every bucket's rewrite of accepted bytes reads again
 * (both ways, when the input reads exactly) with the shape it came with.
 */

static const char *const fuzz_custom[] = { "com.example.CustomFilter",
                                           "PrefixFilter", NULL };

static void
fuzz_exact(const uint8_t *data, size_t size)
{
    GError *error = NULL;
    struct filter_node *t = filterpb_to_filter(data, size, &error);
    struct filter_node *back;
    uint8_t *s;
    size_t n = 0;

    if (t == NULL) {
        FUZZ_CHECK(error != NULL && error->domain == FILTERPB_ERROR);
        g_error_free(error);
        return;
    }
    FUZZ_CHECK(filter_node_depth(t) <= FILTERPB_MAX_DEPTH + 1);
    FUZZ_CHECK(filter_validate(t, NULL));
    s = filter_serialize(t, &n, NULL);
    if (s != NULL) {
        back = filter_parse(s, n, FILTER_PARSE_STRICT, NULL);
        FUZZ_CHECK(back != NULL);
        filter_node_free(back);
        g_free(s);
    }
    filter_node_free(t);
}

static void
fuzz_salted(const uint8_t *data, size_t size, const struct salt_table *salt,
            gboolean reversed, const char *const *custom)
{
    GError *error = NULL;
    struct scanfilter *f = scanfilter_new_pb(data, size, salt, reversed,
                                             custom, &error);
    struct filter_node *exact = filterpb_to_filter(data, size, NULL);
    uint32_t buckets[3] = { 0, salt->buckets / 2, salt->buckets - 1 };
    uint32_t single;
    struct filterpb *orig;

    if (f == NULL) {
        FUZZ_CHECK(error != NULL);
        g_error_free(error);
        filter_node_free(exact);
        return;
    }
    orig = filterpb_decode_custom(data, size, FILTERPB_MODE_SALT, custom,
                                  NULL);
    FUZZ_CHECK(orig != NULL);
    (void)scanfilter_page_limit(f);
    if (scanfilter_single_bucket(f, &single)) {
        FUZZ_CHECK(single < salt->buckets);
    }
    if (!scanfilter_multi_bucket_ok(f)) {
        FUZZ_CHECK(scanfilter_multi_bucket_why(f) != NULL);
    }
    for (size_t i = 0; i < G_N_ELEMENTS(buckets); i++) {
        size_t n = 0;
        const uint8_t *out = scanfilter_for_bucket(f, buckets[i], &n);
        struct filterpb *again;
        struct filter_node *t;

        FUZZ_CHECK(n > 0);
        again = filterpb_decode_custom(out, n, FILTERPB_MODE_SALT, custom,
                                       &error);
        if (again == NULL) {
            fprintf(stderr, "bucket %u does not read: %s\n", buckets[i],
                    error->message);
        }
        FUZZ_CHECK(again != NULL);
        FUZZ_CHECK(filter_node_depth(filterpb_tree(again)) ==
                   filter_node_depth(filterpb_tree(orig)));
        filterpb_free(again);
        if (exact != NULL) {
            t = filterpb_to_filter(out, n, &error);
            if (t == NULL) {
                fprintf(stderr, "bucket %u has no exact reading: %s\n",
                        buckets[i], error->message);
            }
            FUZZ_CHECK(t != NULL);
            FUZZ_CHECK(filter_node_depth(t) == filter_node_depth(exact));
            filter_node_free(t);
        }
    }
    filterpb_free(orig);
    filter_node_free(exact);
    scanfilter_free(f);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    gboolean reversed;
    const struct salt_table *salt;
    const char *const *custom;

    if (size < 1) {
        return 0;
    }
    reversed = (data[0] & 2) != 0;
    custom = (data[0] & 0x20) ? fuzz_custom : NULL;
    salt = fuzz_salt((data[0] >> 2) & 7);
    data++;
    size--;

    fuzz_exact(data, size);
    fuzz_salted(data, size, salt, reversed, custom);
    return 0;
}
