/* splits.c: the region split points of a salted table, pure. */
#include "splits.h"

#include <string.h>

#include "escape.h"

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

        if (width == 2) {
            buf[plen] = (uint8_t)(v >> 8);
        }
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
    for (guint i = 1; i < starts->len; i++) {
        g_ptr_array_add(out, g_bytes_ref(g_ptr_array_index(starts, i)));
    }
    for (uint32_t b = 0; b < t->buckets; b++) {
        uint32_t n = per + (b < extra ? 1 : 0);

        if (n > 1) {
            splits_inside(t, b, n, out);
        }
    }
    g_ptr_array_sort(out, splits_cmp);
}

/* What the shell's double quotes take as is: letters and digits. */
static gboolean
splits_shell_safe(uint8_t ch)
{
    return g_ascii_isalnum(ch);
}

void
splits_shell_string(GString *out, const uint8_t *p, size_t n)
{
    g_string_append_c(out, '"');
    escape_hex_append(out, p, n, splits_shell_safe);
    g_string_append_c(out, '"');
}

void
splits_join(GString *out, const GPtrArray *points,
            void (*quote)(GString *out, const uint8_t *p, size_t n))
{
    for (guint i = 0; i < points->len; i++) {
        gsize n;
        const uint8_t *p = g_bytes_get_data(points->pdata[i], &n);

        if (i > 0) {
            g_string_append(out, ", ");
        }
        quote(out, p, n);
    }
}

/* How many of the sorted bounds sort before key (or at it, with_equal). */
static guint
splits_count_below(const GPtrArray *bounds, const uint8_t *key, size_t len,
                   gboolean with_equal)
{
    g_autoptr(GBytes) k = g_bytes_new_static(key, len);
    guint lo = 0, hi = bounds->len;

    while (lo < hi) {
        guint mid = lo + (hi - lo) / 2;
        gint c = g_bytes_compare(g_ptr_array_index(bounds, mid), k);

        if (c < 0 || (c == 0 && with_equal)) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    return lo;
}

uint32_t
splits_buckets_per_region(const struct salt_table *t, const GPtrArray *starts,
                          GBytes **fullest, GPtrArray *missing)
{
    g_autoptr(GPtrArray) bounds =
        g_ptr_array_new_with_free_func((GDestroyNotify)g_bytes_unref);
    g_autoptr(GPtrArray) points =
        g_ptr_array_new_with_free_func((GDestroyNotify)g_bytes_unref);
    g_autofree gint64 *diff = NULL;
    gint64 run = 0;
    uint32_t most = 0;
    guint top = 0;

    for (guint i = 0; i < starts->len; i++) {
        if (g_bytes_get_size(g_ptr_array_index(starts, i)) > 0) {
            g_ptr_array_add(bounds, g_bytes_ref(starts->pdata[i]));
        }
    }
    g_ptr_array_sort(bounds, splits_cmp);
    /* region r holds the keys from bounds[r - 1] (the table's start for
     * r = 0) up to bounds[r]: a bucket's keys [prefix, prefix end) touch
     * the regions from the one holding its prefix to the one holding the
     * last key before its end; diff counts them as a running sum */
    diff = g_new0(gint64, bounds->len + 2);
    for (uint32_t b = 0; b < t->buckets; b++) {
        uint8_t buf[SALT_MAX_PREFIX];
        size_t len = salt_write_prefix(t, b, buf);
        guint first = splits_count_below(bounds, buf, len, TRUE);
        /* 0: every byte 0xFF, the bucket runs to the table's end */
        size_t end_len = salt_successor(buf, len);
        guint last = end_len > 0
                         ? splits_count_below(bounds, buf, end_len, FALSE)
                         : bounds->len;

        diff[first]++;
        diff[MAX(first, last) + 1]--;
    }
    for (guint r = 0; r <= bounds->len; r++) {
        run += diff[r];
        if (run > (gint64)most) {
            most = (uint32_t)run;
            top = r;
        }
    }
    *fullest = top > 0 ? g_bytes_ref(g_ptr_array_index(bounds, top - 1))
                       : g_bytes_new(NULL, 0);
    splits_compute(t, t->buckets, points);
    for (guint i = 0; i < points->len; i++) {
        gsize n;
        const uint8_t *p = g_bytes_get_data(points->pdata[i], &n);
        guint below = splits_count_below(bounds, p, n, TRUE);

        /* bounds[below - 1] is the last one at or before the point */
        if (below == 0 || !g_bytes_equal(g_ptr_array_index(bounds, below - 1),
                                         points->pdata[i])) {
            g_ptr_array_add(missing, g_bytes_ref(points->pdata[i]));
        }
    }
    return most;
}
