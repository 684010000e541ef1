/* splits.c: the region split points of a salted table, pure. */
#include "splits.h"

#include <string.h>

/* A bucket's prefix without its separator, as GBytes. */
static GBytes *
splits_prefix(const struct salt_table *t, uint32_t bucket, size_t *len,
              uint8_t *buf)
{
    *len = salt_write_prefix(t, bucket, buf) - t->sep_len;
    return g_bytes_new(buf, *len);
}

static gint
splits_cmp(gconstpointer a, gconstpointer b)
{
    GBytes *x = *(GBytes *const *)a, *y = *(GBytes *const *)b;
    gsize xl, yl;
    const uint8_t *xp = g_bytes_get_data(x, &xl);
    const uint8_t *yp = g_bytes_get_data(y, &yl);
    int c = memcmp(xp, yp, MIN(xl, yl));

    return c != 0 ? c : (xl > yl) - (xl < yl);
}

/* Cut one bucket into n regions: points prefix || sep || v_i for
 * i = 1..n-1, v_i the i-th n-th of the space of `width` bytes. */
static void
splits_inside(const struct salt_table *t, uint32_t bucket, uint32_t n,
              GPtrArray *out)
{
    uint8_t buf[SALT_MAX_PREFIX + 4];
    size_t plen = salt_write_prefix(t, bucket, buf);
    unsigned width = n <= 256 ? 1 : 2;
    uint64_t space = width == 1 ? 256 : 65536;

    for (uint32_t i = 1; i < n; i++) {
        uint64_t v = space * i / n;

        if (width == 2)
            buf[plen] = (uint8_t)(v >> 8);
        buf[plen + width - 1] = (uint8_t)v;
        g_ptr_array_add(out, g_bytes_new(buf, plen + width));
    }
}

void
splits_compute(const struct salt_table *t, uint32_t regions, GPtrArray *out)
{
    g_autoptr(GPtrArray) starts =
        g_ptr_array_new_with_free_func((GDestroyNotify)g_bytes_unref);
    uint32_t per, extra;

    regions = MIN(regions, SPLITS_MAX_REGIONS);
    per = regions / t->buckets;
    extra = regions % t->buckets;
    for (uint32_t b = 0; b < t->buckets; b++) {
        uint8_t buf[SALT_MAX_PREFIX];
        size_t len;

        g_ptr_array_add(starts, splits_prefix(t, b, &len, buf));
    }
    /* a format whose salts do not sort like their buckets still starts a
     * region at every salt: sort them, the lowest starts the table */
    g_ptr_array_sort(starts, splits_cmp);
    for (guint i = 1; i < starts->len; i++)
        g_ptr_array_add(out, g_bytes_ref(g_ptr_array_index(starts, i)));
    for (uint32_t b = 0; b < t->buckets; b++) {
        uint32_t n = per + (b < extra ? 1 : 0);

        if (n > 1)
            splits_inside(t, b, n, out);
    }
    g_ptr_array_sort(out, splits_cmp);
}
