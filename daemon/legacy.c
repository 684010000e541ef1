/* legacy.c: forward-looking salting; see legacy.h for the rule. */
#include "legacy.h"

#include <string.h>

#include "escape.h"

G_DEFINE_QUARK(legacy_error_quark, legacy_error)

/* Row keys as HBase orders them: unsigned bytes, a prefix first. */
static int
legacy_cmp(const uint8_t *a, size_t alen, const uint8_t *b, size_t blen)
{
    size_t n = MIN(alen, blen);
    int c = n > 0 ? memcmp(a, b, n) : 0;

    if (c != 0) {
        return c;
    }
    return alen < blen ? -1 : alen > blen ? 1 : 0;
}

void
legacy_rule_init(struct legacy_rule *r)
{
    memset(r, 0, sizeof(*r));
    r->kind = LEGACY_NONE;
}

static gboolean
legacy_set_cutoff(struct legacy_rule *r, const void *cutoff, size_t cutoff_len,
                  GError **error)
{
    if (cutoff_len > LEGACY_MAX_BOUND) {
        g_set_error(error, LEGACY_ERROR, LEGACY_ERROR_INVALID,
                    "the cutoff must be at most %d bytes, not %zu",
                    LEGACY_MAX_BOUND, cutoff_len);
        return FALSE;
    }
    r->cutoff_len = (uint16_t)cutoff_len;
    if (cutoff_len > 0) {
        memcpy(r->cutoff, cutoff, cutoff_len);
    }
    return TRUE;
}

gboolean
legacy_rule_after(struct legacy_rule *r, const void *delim, size_t delim_len,
                  uint32_t k, const void *cutoff, size_t cutoff_len,
                  GError **error)
{
    struct legacy_rule n;

    g_return_val_if_fail(error == NULL || *error == NULL, FALSE);
    if (delim_len < 1 || delim_len > LEGACY_MAX_DELIMITER) {
        g_set_error(error, LEGACY_ERROR, LEGACY_ERROR_INVALID,
                    "after:SEP:K needs SEP of 1..%d bytes, not %zu",
                    LEGACY_MAX_DELIMITER, delim_len);
        return FALSE;
    }
    if (k > LEGACY_MAX_PART) {
        g_set_error(error, LEGACY_ERROR, LEGACY_ERROR_INVALID,
                    "after:SEP:K needs K in 1..%u or last", LEGACY_MAX_PART);
        return FALSE;
    }
    legacy_rule_init(&n);
    n.kind = LEGACY_COMPONENT;
    n.part = k == 0 ? LEGACY_PART_AFTER_LAST : LEGACY_PART_AFTER;
    n.count = k;
    n.delim_len = (uint8_t)delim_len;
    memcpy(n.delim, delim, delim_len);
    if (!legacy_set_cutoff(&n, cutoff, cutoff_len, error)) {
        return FALSE;
    }
    *r = n;
    return TRUE;
}

gboolean
legacy_rule_bytes(struct legacy_rule *r, uint32_t off, uint32_t len,
                  const void *cutoff, size_t cutoff_len, GError **error)
{
    struct legacy_rule n;

    g_return_val_if_fail(error == NULL || *error == NULL, FALSE);
    if (len < 1 || len > LEGACY_MAX_PART || off > LEGACY_MAX_PART) {
        g_set_error(error, LEGACY_ERROR, LEGACY_ERROR_INVALID,
                    "bytes:OFF:LEN needs OFF in 0..%u and LEN in 1..%u",
                    LEGACY_MAX_PART, LEGACY_MAX_PART);
        return FALSE;
    }
    legacy_rule_init(&n);
    n.kind = LEGACY_COMPONENT;
    n.part = LEGACY_PART_BYTES;
    n.off = off;
    n.len = len;
    if (!legacy_set_cutoff(&n, cutoff, cutoff_len, error)) {
        return FALSE;
    }
    *r = n;
    return TRUE;
}

gboolean
legacy_rule_range(struct legacy_rule *r, const void *start, size_t start_len,
                  const void *stop, size_t stop_len, GError **error)
{
    struct legacy_rule n;

    g_return_val_if_fail(error == NULL || *error == NULL, FALSE);
    if (start_len > LEGACY_MAX_BOUND || stop_len > LEGACY_MAX_BOUND) {
        g_set_error(error, LEGACY_ERROR, LEGACY_ERROR_INVALID,
                    "range bounds must be at most %d bytes", LEGACY_MAX_BOUND);
        return FALSE;
    }
    if (stop_len > 0 && legacy_cmp(start, start_len, stop, stop_len) >= 0) {
        g_set_error(error, LEGACY_ERROR, LEGACY_ERROR_INVALID,
                    "the range's start must sort before its stop (an "
                    "empty stop is no upper bound)");
        return FALSE;
    }
    legacy_rule_init(&n);
    n.kind = LEGACY_RANGE;
    n.start_len = (uint16_t)start_len;
    if (start_len > 0) {
        memcpy(n.start, start, start_len);
    }
    n.stop_len = (uint16_t)stop_len;
    if (stop_len > 0) {
        memcpy(n.stop, stop, stop_len);
    }
    *r = n;
    return TRUE;
}

gboolean
legacy_rule_equal(const struct legacy_rule *a, const struct legacy_rule *b)
{
    /* legacy_rule_init zeroes every byte a rule does not use */
    return memcmp(a, b, sizeof(*a)) == 0;
}

/* Bytes of the rule as the config file writes them (escape.h), quoted. */
static void
legacy_append_value(GString *out, const char *key, const uint8_t *p,
                    size_t len)
{
    g_string_append_printf(out, "%s=\"", key);
    escape_append(out, p, len);
    g_string_append_c(out, '"');
}

void
legacy_component_append(GString *out, const struct legacy_rule *r)
{
    g_assert(r->kind == LEGACY_COMPONENT);
    if (r->part == LEGACY_PART_BYTES) {
        g_string_append_printf(out, "bytes:%u:%u", r->off, r->len);
        return;
    }
    g_string_append(out, "after:");
    escape_append(out, r->delim, r->delim_len);
    if (r->part == LEGACY_PART_AFTER_LAST) {
        g_string_append(out, ":last");
    } else {
        g_string_append_printf(out, ":%u", r->count);
    }
}

char *
legacy_rule_describe(const struct legacy_rule *r)
{
    GString *out = g_string_new(NULL);

    switch (r->kind) {
    case LEGACY_COMPONENT:
        g_string_append(out, "legacy_component=");
        legacy_component_append(out, r);
        g_string_append_c(out, ' ');
        legacy_append_value(out, "legacy_cutoff", r->cutoff, r->cutoff_len);
        break;
    case LEGACY_RANGE:
        legacy_append_value(out, "legacy_range_start", r->start, r->start_len);
        g_string_append_c(out, ' ');
        legacy_append_value(out, "legacy_range_stop", r->stop, r->stop_len);
        break;
    default: g_string_append(out, "legacy=none"); break;
    }
    return g_string_free(out, FALSE);
}

gboolean
legacy_component(const struct legacy_rule *r, const uint8_t *key, size_t len,
                 const uint8_t **part, size_t *part_len)
{
    const uint8_t *p = key, *end = key + len, *after = NULL;
    uint32_t found = 0;

    if (r->kind != LEGACY_COMPONENT) {
        return FALSE;
    }
    if (r->part == LEGACY_PART_BYTES) {
        if (len < r->off || len - r->off < r->len) {
            return FALSE;
        }
        *part = key + r->off;
        *part_len = r->len;
        return TRUE;
    }
    /* occurrences left to right, without overlap, as hash_part counts */
    while ((size_t)(end - p) >= r->delim_len) {
        const uint8_t *hit = memmem(p, (size_t)(end - p), r->delim,
                                    r->delim_len);

        if (hit == NULL) {
            break;
        }
        p = hit + r->delim_len;
        after = p;
        if (r->part == LEGACY_PART_AFTER && ++found == r->count) {
            break;
        }
    }
    if (after == NULL || (r->part == LEGACY_PART_AFTER && found != r->count)) {
        return FALSE;
    }
    *part = after;
    *part_len = (size_t)(end - after);
    return TRUE;
}

gboolean
legacy_is_legacy(const struct legacy_rule *r, const uint8_t *key, size_t len)
{
    const uint8_t *part;
    size_t part_len;

    switch (r->kind) {
    case LEGACY_COMPONENT:
        if (!legacy_component(r, key, len, &part, &part_len)) {
            return TRUE;
        }
        return legacy_cmp(part, part_len, r->cutoff, r->cutoff_len) < 0;
    case LEGACY_RANGE:
        return legacy_cmp(key, len, r->start, r->start_len) >= 0 &&
               (r->stop_len == 0 ||
                legacy_cmp(key, len, r->stop, r->stop_len) < 0);
    default: return FALSE;
    }
}

/* The larger of two lower bounds, the smaller of two upper ones; an
 * empty bound is unbounded either way. */
static void
legacy_max_low(const uint8_t **a, size_t *alen, const uint8_t *b, size_t blen)
{
    if (blen > 0 && legacy_cmp(*a, *alen, b, blen) < 0) {
        *a = b;
        *alen = blen;
    }
}

static void
legacy_min_high(const uint8_t **a, size_t *alen, const uint8_t *b, size_t blen)
{
    if (blen > 0 && (*alen == 0 || legacy_cmp(b, blen, *a, *alen) < 0)) {
        *a = b;
        *alen = blen;
    }
}

gboolean
legacy_scan_bounds(const struct legacy_rule *r, gboolean reversed,
                   const uint8_t **start, size_t *start_len,
                   const uint8_t **stop, size_t *stop_len)
{
    if (r->kind != LEGACY_RANGE) {
        return TRUE;
    }
    if (*start_len > 0 && *start_len == *stop_len &&
        memcmp(*start, *stop, *start_len) == 0) {
        /* HBase's one-row scan: that row, if it is legacy */
        return legacy_is_legacy(r, *start, *start_len);
    }
    if (!reversed) {
        legacy_max_low(start, start_len, r->start, r->start_len);
        legacy_min_high(stop, stop_len, r->stop, r->stop_len);
        return *stop_len == 0 ||
               legacy_cmp(*start, *start_len, *stop, *stop_len) < 0;
    }
    /* (stop, start]: the high end may drop to r->stop, inclusive here,
     * which is no legacy key; the exclusive low end cannot be raised to
     * an inclusive r->start exactly, and stays */
    legacy_min_high(start, start_len, r->stop, r->stop_len);
    if (*start_len == 0) {
        return TRUE;
    }
    if (legacy_cmp(*start, *start_len, r->start, r->start_len) < 0) {
        return FALSE;
    }
    return *stop_len == 0 ||
           legacy_cmp(*stop, *stop_len, *start, *start_len) < 0;
}
