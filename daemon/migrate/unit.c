/* unit.c: work units, their text form, shards. */
#include "unit.h"

#include <string.h>

#include "merge.h"

G_DEFINE_QUARK(unit_error_quark, unit_error)

void
unit_clear(struct unit *u)
{
    g_clear_pointer(&u->start, g_bytes_unref);
    g_clear_pointer(&u->end, g_bytes_unref);
}

static GBytes *
unit_hex_decode(const char *s)
{
    size_t n = strlen(s);
    uint8_t *out;

    if (strcmp(s, "-") == 0) {
        return g_bytes_new(NULL, 0);
    }
    if (n == 0 || n % 2 != 0) {
        return NULL;
    }
    out = g_malloc(n / 2);
    for (size_t i = 0; i < n / 2; i++) {
        int hi = g_ascii_xdigit_value(s[2 * i]);
        int lo = g_ascii_xdigit_value(s[2 * i + 1]);

        if (hi < 0 || lo < 0) {
            g_free(out);
            return NULL;
        }
        out[i] = (uint8_t)(hi << 4 | lo);
    }
    return g_bytes_new_take(out, n / 2);
}

gboolean
unit_parse(const char *line, struct unit *u, gboolean *skip, GError **error)
{
    g_auto(GStrv) f = NULL;
    const char *p = line;
    guint n = 0;

    memset(u, 0, sizeof(*u));
    *skip = FALSE;
    while (*p == ' ' || *p == '\t') {
        p++;
    }
    if (*p == '\0' || *p == '\n' || *p == '\r' || *p == '#') {
        *skip = TRUE;
        return FALSE;
    }
    {
        g_autofree char *copy = g_strdup(p);

        g_strchomp(copy);
        for (char *q = copy; *q; q++) {
            if (*q == '\t') {
                *q = ' ';
            }
        }
        f = g_strsplit(copy, " ", -1);
    }
    /* drop empty fields from runs of spaces */
    for (guint i = 0; f[i] != NULL; i++) {
        if (f[i][0] != '\0') {
            char *tmp = f[n];

            f[n] = f[i];
            f[i] = tmp;
            n++;
        }
    }
    if (n != 3) {
        g_set_error(error, UNIT_ERROR, 0,
                    "a unit is \"SIDE START END\", got %u fields", n);
        return FALSE;
    }
    if (strcmp(f[0], "source") == 0) {
        u->side = UNIT_SOURCE;
    } else if (strcmp(f[0], "dest") == 0) {
        u->side = UNIT_DEST;
    } else {
        g_set_error(error, UNIT_ERROR, 0,
                    "unit side \"%s\" is neither source nor dest", f[0]);
        return FALSE;
    }
    u->start = unit_hex_decode(f[1]);
    u->end = unit_hex_decode(f[2]);
    if (u->start == NULL || u->end == NULL) {
        unit_clear(u);
        g_set_error(error, UNIT_ERROR, 0,
                    "unit keys are hex with an even number of digits, or "
                    "\"-\"");
        return FALSE;
    }
    if (g_bytes_get_size(u->end) > 0 &&
        g_bytes_compare(u->start, u->end) >= 0) {
        unit_clear(u);
        g_set_error(error, UNIT_ERROR, 0, "unit start is not before its end");
        return FALSE;
    }
    return TRUE;
}

static void
unit_hex_append(GString *s, GBytes *b)
{
    gsize len;
    const uint8_t *p = g_bytes_get_data(b, &len);

    if (len == 0) {
        g_string_append_c(s, '-');
        return;
    }
    for (gsize i = 0; i < len; i++) {
        g_string_append_printf(s, "%02x", p[i]);
    }
}

char *
unit_format(const struct unit *u)
{
    GString *s = g_string_new(u->side == UNIT_SOURCE ? "source " : "dest ");

    unit_hex_append(s, u->start);
    g_string_append_c(s, ' ');
    unit_hex_append(s, u->end);
    return g_string_free(s, FALSE);
}

int
unit_key_cmp(const uint8_t *a, size_t alen, const uint8_t *b, size_t blen)
{
    /* an empty GBytes has no data pointer: merge_key_cmp leaves memcmp
     * out when either side is empty */
    return merge_key_cmp(a, alen, b, blen);
}

gboolean
unit_contains(const struct unit *u, const uint8_t *key, size_t len)
{
    gsize sl, el;
    const uint8_t *s = g_bytes_get_data(u->start, &sl);
    const uint8_t *e = g_bytes_get_data(u->end, &el);

    if (unit_key_cmp(key, len, s, sl) < 0) {
        return FALSE;
    }
    return el == 0 || unit_key_cmp(key, len, e, el) < 0;
}

gboolean
unit_parse_shard(const char *text, guint *index, guint *count, GError **error)
{
    guint64 i, n;
    char *end;

    i = g_ascii_strtoull(text, &end, 10);
    if (end == text || *end != '/') {
        goto bad;
    }
    text = end + 1;
    n = g_ascii_strtoull(text, &end, 10);
    if (end == text || *end != '\0' || n < 1 || n > 100000 || i < 1 || i > n) {
        goto bad;
    }
    *index = (guint)i;
    *count = (guint)n;
    return TRUE;
bad:
    g_set_error(error, UNIT_ERROR, 0,
                "--shard takes I/N with 1 <= I <= N, e.g. 2/4");
    return FALSE;
}

/* Eight bytes of p from offset, big-endian, zero-padded, as a fraction. */
static double
unit_key_value(const uint8_t *p, size_t len, size_t off)
{
    double v = 0, scale = 1.0 / 256;

    for (size_t i = off; i < off + 8; i++) {
        v += (i < len ? p[i] : 0) * scale;
        scale /= 256;
    }
    return v;
}

double
unit_fraction(const struct unit *u, const uint8_t *key, size_t len)
{
    gsize sl, el;
    const uint8_t *s = g_bytes_get_data(u->start, &sl);
    const uint8_t *e = g_bytes_get_data(u->end, &el);
    size_t common = 0;
    double a, b, k, f;

    /* an open end is a key of all 0xff bytes */
    static const uint8_t top[8] = { 0xff, 0xff, 0xff, 0xff,
                                    0xff, 0xff, 0xff, 0xff };

    if (el == 0) {
        e = top;
        el = sizeof(top);
    }
    while (common < sl && common < el && common < len &&
           s[common] == e[common] && key[common] == s[common]) {
        common++;
    }
    a = unit_key_value(s, sl, common);
    b = unit_key_value(e, el, common);
    k = unit_key_value(key, len, common);
    if (b <= a) {
        return 0;
    }
    f = (k - a) / (b - a);
    return f < 0 ? 0 : f > 1 ? 1 : f;
}
