/* test_splits.c: a salted table's regions start where its buckets do. */
#include <string.h>

#include "escape.h"
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
            for (guint k = 1; k < out->len; k++) {
                g_assert_cmpint(g_bytes_compare(out->pdata[k - 1],
                                                out->pdata[k]),
                                <, 0);
            }
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
                (memcmp(phys, s, MIN(pn, sl)) == 0 && pn < sl)) {
                break;
            }
            region++;
        }
        g_assert_cmpuint(region, ==, b);
    }
}

/* The most buckets one of the regions starting at `starts` (escaped,
 * space-separated; the table's start is implied) holds, the index of
 * that region, and the bucket points no region starts at. */
static uint32_t
shared(const struct salt_table *t, const char *starts, guint *fullest,
       char **missing)
{
    g_autoptr(GBytes) first = NULL;
    g_autoptr(GPtrArray) in =
        g_ptr_array_new_with_free_func((GDestroyNotify)g_bytes_unref);
    g_autoptr(GPtrArray) out =
        g_ptr_array_new_with_free_func((GDestroyNotify)g_bytes_unref);
    g_auto(GStrv) parts = g_strsplit(starts, " ", -1);
    GString *s = g_string_new(NULL);
    uint32_t most;

    /* the first region's start, as HBase reports it */
    g_ptr_array_add(in, g_bytes_new(NULL, 0));
    for (guint i = 0; parts[i] != NULL; i++) {
        g_autoptr(GError) err = NULL;
        GBytes *b = parts[i][0] != '\0' ? escape_decode(parts[i], &err) : NULL;

        g_assert_no_error(err);
        if (b != NULL) {
            g_ptr_array_add(in, b);
        }
    }
    most = splits_buckets_per_region(t, in, &first, out);
    /* the region's index in start order */
    *fullest = 0;
    for (guint i = 1; i < in->len; i++) {
        *fullest += g_bytes_compare(in->pdata[i], first) <= 0 ? 1 : 0;
    }
    for (guint i = 0; i < out->len; i++) {
        gsize n;
        const uint8_t *p = g_bytes_get_data(out->pdata[i], &n);
        g_autofree char *e = salt_escape(p, n);

        g_string_append_printf(s, "%s%s", i > 0 ? " " : "", e);
    }
    *missing = g_string_free(s, FALSE);
    return most;
}

/* A table of one region holds every bucket in it; regions at the bucket
 * points (or cut further inside the buckets) hold one each; regions cut
 * elsewhere (an existing table's, at its old keys, or an even split of
 * the byte space) hold several. */
static void
test_buckets_per_region(void)
{
    struct salt_table t;
    guint fullest;
    char *missing = NULL;

    table(&t, 16, SALT_FORMAT_BYTE, "");
    g_assert_cmpuint(shared(&t, "", &fullest, &missing), ==, 16);
    g_assert_cmpuint(fullest, ==, 0);
    g_assert_cmpstr(missing, ==,
                    "\\x01 \\x02 \\x03 \\x04 \\x05 \\x06 \\x07 \\x08 "
                    "\\x09 \\x0A \\x0B \\x0C \\x0D \\x0E \\x0F");
    g_clear_pointer(&missing, g_free);
    /* an existing table's regions, at its unsalted keys: all salts sort
     * before them */
    g_assert_cmpuint(shared(&t, "user3 user6", &fullest, &missing), ==, 16);
    g_assert_cmpuint(fullest, ==, 0);
    g_clear_pointer(&missing, g_free);
    /* at the bucket points, and more regions after them */
    g_assert_cmpuint(shared(&t,
                            "\\x01 \\x02 \\x03 \\x04 \\x05 \\x06 \\x07 "
                            "\\x08 \\x09 \\x0A \\x0B \\x0C \\x0D \\x0E "
                            "\\x0F \\x03\\x80 user3",
                            &fullest, &missing),
                     ==, 1);
    g_assert_cmpstr(missing, ==, "");
    g_clear_pointer(&missing, g_free);
    /* half of them: the region from \x06 holds 6..15 */
    g_assert_cmpuint(shared(&t, "\\x02 \\x04 \\x06", &fullest, &missing), ==,
                     10);
    g_assert_cmpuint(fullest, ==, 3);
    g_clear_pointer(&missing, g_free);
    /* cut inside buckets, not at their starts: from \x02\x80 on, the
     * end of bucket 2 and buckets 3..15 */
    g_assert_cmpuint(shared(&t, "\\x01\\x80 \\x02\\x80", &fullest, &missing),
                     ==, 14);
    g_assert_cmpuint(fullest, ==, 2);
    g_clear_pointer(&missing, g_free);
    /* each region holds the end of one bucket and the start of the
     * next */
    table(&t, 4, SALT_FORMAT_BYTE, "");
    g_assert_cmpuint(shared(&t,
                            "\\x00\\x80 \\x01\\x80 \\x02\\x80 "
                            "\\x03\\x80",
                            &fullest, &missing),
                     ==, 2);
    g_assert_cmpuint(fullest, ==, 1);
    g_assert_cmpstr(missing, ==, "\\x01 \\x02 \\x03");
    g_clear_pointer(&missing, g_free);
    /* a separator: "1-" keys end before "2", whatever sorts between */
    table(&t, 4, SALT_FORMAT_HEX, "-");
    g_assert_cmpuint(shared(&t, "1 2 3", &fullest, &missing), ==, 1);
    g_assert_cmpstr(missing, ==, "");
    g_clear_pointer(&missing, g_free);
    /* "1-" sorts before "1x": the first region holds buckets 0 and 1 */
    g_assert_cmpuint(shared(&t, "1x 3", &fullest, &missing), ==, 2);
    g_assert_cmpuint(fullest, ==, 0);
    g_assert_cmpstr(missing, ==, "1 2");
    g_clear_pointer(&missing, g_free);
    /* the last byte salt: its keys run to the table's end */
    table(&t, 256, SALT_FORMAT_BYTE, "");
    g_assert_cmpuint(shared(&t, "\\xFF", &fullest, &missing), ==, 255);
    g_assert_cmpuint(fullest, ==, 0);
    g_clear_pointer(&missing, g_free);
}

/* The shell's double-quoted strings: nothing but letters and digits
 * as themselves. */
static void
test_shell_string(void)
{
    g_autoptr(GString) s = g_string_new(NULL);

    splits_shell_string(s, (const uint8_t *)"a\x01\"#{x}\\Z9", 10);
    g_assert_cmpstr(s->str, ==, "\"a\\x01\\x22\\x23\\x7Bx\\x7D\\x5CZ9\"");
}

int
main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/splits/one_per_bucket", test_one_per_bucket);
    g_test_add_func("/splits/sub_splits", test_sub_splits);
    g_test_add_func("/splits/counts", test_counts);
    g_test_add_func("/splits/keys_in_their_bucket", test_keys_in_their_bucket);
    g_test_add_func("/splits/buckets_per_region", test_buckets_per_region);
    g_test_add_func("/splits/shell_string", test_shell_string);
    return g_test_run();
}
