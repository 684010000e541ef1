/* test_splits.c: a salted table's regions start where its buckets do. */
#include <string.h>

#include "splits.h"

/* The split points of t for `regions`, escaped and space-separated. */
static char *
points(const struct salt_table *t, uint32_t regions)
{
    g_autoptr(GPtrArray) out =
        g_ptr_array_new_with_free_func((GDestroyNotify)g_bytes_unref);
    GString *s = g_string_new(NULL);

    splits_compute(t, regions, out);
    for (guint i = 0; i < out->len; i++) {
        gsize n;
        const uint8_t *p = g_bytes_get_data(out->pdata[i], &n);
        g_autofree char *e = salt_escape(p, n);

        g_string_append_printf(s, "%s%s", i > 0 ? " " : "", e);
    }
    return g_string_free(s, FALSE);
}

static void
table(struct salt_table *t, uint32_t buckets, salt_format_t f, const char *sep)
{
    g_autoptr(GError) err = NULL;

    g_assert_true(salt_table_init(t, buckets, f, sep, strlen(sep), &err));
    g_assert_no_error(err);
}

/* As many regions as buckets, or fewer asked: one per bucket. */
static void
test_one_per_bucket(void)
{
    struct salt_table t;
    g_autofree char *a = NULL, *b = NULL, *c = NULL;

    table(&t, 4, SALT_FORMAT_BYTE, "");
    a = points(&t, 1);
    g_assert_cmpstr(a, ==, "\\x01 \\x02 \\x03");
    b = points(&t, 4);
    g_assert_cmpstr(b, ==, a);
    table(&t, 12, SALT_FORMAT_DECIMAL, "-");
    c = points(&t, 0);
    /* the separator is not part of a split point */
    g_assert_cmpstr(c, ==, "01 02 03 04 05 06 07 08 09 10 11");
}

/* More regions than buckets: each bucket cut evenly, the first
 * regions % buckets one more time, exactly `regions` regions. */
static void
test_sub_splits(void)
{
    struct salt_table t;
    g_autofree char *a = NULL, *b = NULL;

    table(&t, 2, SALT_FORMAT_HEX, ":");
    a = points(&t, 4);
    g_assert_cmpstr(a, ==, "0:\\x80 1 1:\\x80");
    b = points(&t, 5);
    /* bucket 0 in three (0x55, 0xaa), bucket 1 in two */
    g_assert_cmpstr(b, ==, "0:U 0:\\xAA 1 1:\\x80");
}

/* Every point is distinct and sorted, and the count is right, for many
 * shapes; more than 256 regions in a bucket take two bytes. */
static void
test_counts(void)
{
    static const uint32_t buckets[] = { 1, 2, 16, 255, 256, 257, 1000 };
    static const uint32_t regions[] = { 1, 16, 100, 1000, 5000, 70000 };

    for (guint i = 0; i < G_N_ELEMENTS(buckets); i++) {
        for (guint j = 0; j < G_N_ELEMENTS(regions); j++) {
            struct salt_table t;
            g_autoptr(GPtrArray) out =
                g_ptr_array_new_with_free_func((GDestroyNotify)g_bytes_unref);
            uint32_t want = MAX(MIN(regions[j], SPLITS_MAX_REGIONS),
                                buckets[i]);

            table(&t, buckets[i], SALT_FORMAT_BYTE, "");
            splits_compute(&t, regions[j], out);
            g_assert_cmpuint(out->len, ==, want - 1);
            for (guint k = 1; k < out->len; k++)
                g_assert_cmpint(g_bytes_compare(out->pdata[k - 1],
                                                out->pdata[k]),
                                <, 0);
        }
    }
}

/* Every key lands in the region its bucket's points say: a key of
 * bucket b sorts at or after the first point of b and before b + 1's. */
static void
test_keys_in_their_bucket(void)
{
    struct salt_table t;
    g_autoptr(GPtrArray) out =
        g_ptr_array_new_with_free_func((GDestroyNotify)g_bytes_unref);

    table(&t, 16, SALT_FORMAT_HEX, "");
    splits_compute(&t, 16, out);
    for (unsigned i = 0; i < 2000; i++) {
        char key[32];
        uint8_t phys[64];
        size_t n = (size_t)g_snprintf(key, sizeof(key), "user%u", i);
        size_t pn = salt_key(&t, (const uint8_t *)key, n, phys, sizeof(phys));
        uint32_t b = salt_bucket(&t, (const uint8_t *)key, n);
        guint region = 0;

        g_assert_cmpuint(pn, >, 0);
        while (region < out->len) {
            gsize sl;
            const uint8_t *s = g_bytes_get_data(out->pdata[region], &sl);

            if (memcmp(phys, s, MIN(pn, sl)) < 0 ||
                (memcmp(phys, s, MIN(pn, sl)) == 0 && pn < sl))
                break;
            region++;
        }
        g_assert_cmpuint(region, ==, b);
    }
}

int
main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/splits/one_per_bucket", test_one_per_bucket);
    g_test_add_func("/splits/sub_splits", test_sub_splits);
    g_test_add_func("/splits/counts", test_counts);
    g_test_add_func("/splits/keys_in_their_bucket", test_keys_in_their_bucket);
    return g_test_run();
}
