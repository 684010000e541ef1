/* salt.c: the row-key salt mapping; see salt.h for the format. */
#include "salt.h"

#include <string.h>

/* Inline the hash: it runs once per row on the request path. */
#define XXH_INLINE_ALL
#include <xxhash.h>

G_DEFINE_QUARK(salt_error_quark, salt_error)

static const char salt_hex_digits[] = "0123456789abcdef";

/* Digits needed to write v in base, at least 1. */
static uint8_t
salt_digits(uint32_t v, uint32_t base)
{
    uint8_t n = 1;

    while (v >= base) {
        v /= base;
        n++;
    }
    return n;
}

gboolean
salt_table_init(struct salt_table *t, uint32_t buckets, salt_format_t format,
                const void *sep, size_t sep_len, GError **error)
{
    g_return_val_if_fail(t != NULL, FALSE);
    g_return_val_if_fail(error == NULL || *error == NULL, FALSE);

    if (buckets < 1 || buckets > SALT_MAX_BUCKETS) {
        g_set_error(error, SALT_ERROR, SALT_ERROR_BUCKETS,
                    "buckets must be 1..%u, not %u", SALT_MAX_BUCKETS,
                    buckets);
        return FALSE;
    }
    if (sep_len > SALT_MAX_SEPARATOR) {
        g_set_error(error, SALT_ERROR, SALT_ERROR_SEPARATOR,
                    "salt_separator must be at most %d bytes, not %zu",
                    SALT_MAX_SEPARATOR, sep_len);
        return FALSE;
    }

    /* Zero everything, padding included, so salt_table_equal may memcmp
     * the arrays and tables compare the same however they were built. */
    memset(t, 0, sizeof(*t));
    t->buckets = buckets;
    t->format = format;
    switch (format) {
    case SALT_FORMAT_BYTE: t->width = buckets > 256 ? 2 : 1; break;
    case SALT_FORMAT_HEX: t->width = salt_digits(buckets - 1, 16); break;
    case SALT_FORMAT_DECIMAL: t->width = salt_digits(buckets - 1, 10); break;
    default: g_return_val_if_reached(FALSE);
    }
    t->sep_len = (uint8_t)sep_len;
    if (sep_len > 0) {
        memcpy(t->sep, sep, sep_len);
    }
    t->hash = SALT_HASH_WHOLE;
    return TRUE;
}

const char *const salt_mapping_names[] = {
    [SALT_MAPPING_XXH3] = "xxh3",
    [SALT_MAPPING_PHOENIX] = "phoenix",
    [SALT_MAPPING_HBASEWD] = "hbasewd",
    [SALT_MAPPING_BIGTABLE] = "bigtable-sample",
    NULL,
};

const char *
salt_mapping_name(salt_mapping_t mapping)
{
    /* out of range reads as the default mapping */
    if ((unsigned)mapping >= G_N_ELEMENTS(salt_mapping_names) - 1) {
        return salt_mapping_names[SALT_MAPPING_XXH3];
    }
    return salt_mapping_names[mapping];
}

gboolean
salt_table_init_mapping(struct salt_table *t, salt_mapping_t mapping,
                        uint32_t n, GError **error)
{
    uint32_t max = mapping == SALT_MAPPING_BIGTABLE ? 32768 : 256;

    g_return_val_if_fail(t != NULL, FALSE);
    g_return_val_if_fail(error == NULL || *error == NULL, FALSE);
    g_return_val_if_fail(mapping == SALT_MAPPING_PHOENIX ||
                             mapping == SALT_MAPPING_HBASEWD ||
                             mapping == SALT_MAPPING_BIGTABLE,
                         FALSE);

    if (n < 1 || n > max) {
        g_set_error(error, SALT_ERROR, SALT_ERROR_BUCKETS,
                    "buckets of salt_mapping %s must be 1..%u, not %u",
                    salt_mapping_name(mapping), max, n);
        return FALSE;
    }
    memset(t, 0, sizeof(*t));
    t->mapping = mapping;
    t->modulus = n;
    t->buckets = n;
    t->format = SALT_FORMAT_BYTE;
    t->width = 1;
    t->hash = SALT_HASH_WHOLE;
    if (mapping == SALT_MAPPING_HBASEWD) {
        /* the byte of a key hashing to Integer.MIN_VALUE */
        uint32_t r = (uint32_t)((UINT64_C(1) << 31) % n);
        uint32_t odd = r == 0 ? 0 : 256 - r;

        if (odd >= n) {
            t->odd_salt = (uint8_t)odd;
            t->buckets = n + 1;
        }
    } else if (mapping == SALT_MAPPING_BIGTABLE) {
        t->buckets = 2 * n - 1;
        t->format = SALT_FORMAT_DECIMAL;
        /* "-" and the digits of N - 1, the longest salt */
        t->width = (uint8_t)(salt_digits(n - 1, 10) + (n > 1 ? 1 : 0));
        t->sep_len = 1;
        t->sep[0] = '-';
    }
    return TRUE;
}

gboolean
salt_table_hash_length(struct salt_table *t, uint32_t n, GError **error)
{
    g_return_val_if_fail(error == NULL || *error == NULL, FALSE);

    g_return_val_if_fail(t->mapping == SALT_MAPPING_XXH3, FALSE);

    /* length:0 would put every row in one bucket: surely a mistake. */
    if (n < 1) {
        g_set_error(error, SALT_ERROR, SALT_ERROR_HASH_PART,
                    "hash_part length:N needs N >= 1");
        return FALSE;
    }
    t->hash = SALT_HASH_LENGTH;
    t->hash_len = n;
    t->hash_count = 0;
    t->delim_len = 0;
    memset(t->delim, 0, sizeof(t->delim));
    return TRUE;
}

gboolean
salt_table_hash_delimiter(struct salt_table *t, const void *delim,
                          size_t delim_len, uint32_t k, GError **error)
{
    g_return_val_if_fail(error == NULL || *error == NULL, FALSE);
    g_return_val_if_fail(t->mapping == SALT_MAPPING_XXH3, FALSE);

    if (delim_len < 1 || delim_len > SALT_MAX_DELIMITER) {
        g_set_error(error, SALT_ERROR, SALT_ERROR_HASH_PART,
                    "hash_part delimiter:SEP:K needs SEP of 1..%d bytes, "
                    "not %zu",
                    SALT_MAX_DELIMITER, delim_len);
        return FALSE;
    }
    if (k < 1) {
        g_set_error(error, SALT_ERROR, SALT_ERROR_HASH_PART,
                    "hash_part delimiter:SEP:K needs K >= 1");
        return FALSE;
    }
    t->hash = SALT_HASH_DELIMITER;
    t->hash_len = 0;
    t->hash_count = k;
    t->delim_len = (uint8_t)delim_len;
    memset(t->delim, 0, sizeof(t->delim));
    memcpy(t->delim, delim, delim_len);
    return TRUE;
}

gboolean
salt_table_equal(const struct salt_table *a, const struct salt_table *b)
{
    return a->buckets == b->buckets && a->format == b->format &&
           a->width == b->width && a->sep_len == b->sep_len &&
           memcmp(a->sep, b->sep, a->sep_len) == 0 && a->hash == b->hash &&
           a->hash_len == b->hash_len && a->hash_count == b->hash_count &&
           a->delim_len == b->delim_len &&
           memcmp(a->delim, b->delim, a->delim_len) == 0 &&
           a->mapping == b->mapping && a->modulus == b->modulus &&
           a->odd_salt == b->odd_salt &&
           legacy_rule_equal(&a->legacy, &b->legacy);
}

char *
salt_table_describe(const struct salt_table *t)
{
    static const char *const formats[] = {
        [SALT_FORMAT_BYTE] = "byte",
        [SALT_FORMAT_HEX] = "hex",
        [SALT_FORMAT_DECIMAL] = "decimal",
    };
    g_autofree char *sep = NULL;
    g_autofree char *hash = NULL;
    g_autofree char *legacy = NULL;

    switch (t->mapping) {
    case SALT_MAPPING_PHOENIX:
        return g_strdup_printf("salt_mapping=phoenix buckets=%u (one salt "
                               "byte abs(Arrays.hashCode(key) %% %u))",
                               t->modulus, t->modulus);
    case SALT_MAPPING_HBASEWD:
        if (t->buckets > t->modulus) {
            return g_strdup_printf("salt_mapping=hbasewd buckets=%u (one "
                                   "salt byte abs(Arrays.hashCode(key)) %% "
                                   "%u; 0x%02x for a hash of "
                                   "Integer.MIN_VALUE)",
                                   t->modulus, t->modulus, t->odd_salt);
        }
        return g_strdup_printf("salt_mapping=hbasewd buckets=%u (one salt "
                               "byte abs(Arrays.hashCode(key)) %% %u)",
                               t->modulus, t->modulus);
    case SALT_MAPPING_BIGTABLE:
        return g_strdup_printf("salt_mapping=bigtable-sample buckets=%u "
                               "(decimal key.hashCode() %% %u, then '-'; "
                               "%u salts)",
                               t->modulus, t->modulus, t->buckets);
    default: break;
    }
    sep = salt_escape(t->sep, t->sep_len);
    switch (t->hash) {
    case SALT_HASH_LENGTH:
        hash = g_strdup_printf("length:%u", t->hash_len);
        break;
    case SALT_HASH_DELIMITER: {
        g_autofree char *d = salt_escape(t->delim, t->delim_len);
        hash = g_strdup_printf("delimiter:%s:%u", d, t->hash_count);
        break;
    }
    default: hash = g_strdup("whole"); break;
    }
    if (t->legacy.kind != LEGACY_NONE) {
        legacy = legacy_rule_describe(&t->legacy);
    }
    return g_strdup_printf("buckets=%u salt_format=%s (width %u) "
                           "salt_separator=\"%s\" hash_part=%s%s%s",
                           t->buckets, formats[t->format], t->width, sep, hash,
                           legacy != NULL ? " " : "",
                           legacy != NULL ? legacy : "");
}

size_t
salt_hashed_len(const struct salt_table *t, const uint8_t *key, size_t len)
{
    const uint8_t *p = key, *end = key + len;
    uint32_t found = 0;

    switch (t->hash) {
    case SALT_HASH_LENGTH: return len < t->hash_len ? len : t->hash_len;
    case SALT_HASH_DELIMITER:
        while ((size_t)(end - p) >= t->delim_len) {
            const uint8_t *hit = memmem(p, (size_t)(end - p), t->delim,
                                        t->delim_len);
            if (hit == NULL) {
                break;
            }
            if (++found == t->hash_count) {
                return (size_t)(hit - key);
            }
            p = hit + t->delim_len;
        }
        return len;
    default: return len;
    }
}

/* Java's Arrays.hashCode(byte[]): signed bytes, int32 wrapping (done in
 * uint32_t, where wrapping is defined, then read back as int32). */
static int32_t
salt_jbytes(const uint8_t *key, size_t len)
{
    uint32_t h = 1;

    for (size_t i = 0; i < len; i++) {
        h = 31 * h + (uint32_t)(int32_t)(int8_t)key[i];
    }
    return (int32_t)h;
}

/*
 * One UTF-8 sequence at p (RFC 3629: no overlong forms, no surrogates,
 * nothing over U+10FFFF): its length, with the code point in *cp; 0 when
 * p starts no valid sequence.
 */
static size_t
salt_utf8_next(const uint8_t *p, size_t left, uint32_t *cp)
{
    uint8_t c = p[0];
    size_t n;
    uint32_t v, min;

    if (c < 0x80) {
        *cp = c;
        return 1;
    }
    if (c >= 0xc2 && c <= 0xdf) {
        n = 2, v = c & 0x1f, min = 0x80;
    } else if (c >= 0xe0 && c <= 0xef) {
        n = 3, v = c & 0x0f, min = 0x800;
    } else if (c >= 0xf0 && c <= 0xf4) {
        n = 4, v = c & 0x07, min = 0x10000;
    } else {
        return 0;
    }
    if (left < n) {
        return 0;
    }
    for (size_t i = 1; i < n; i++) {
        if ((p[i] & 0xc0) != 0x80) {
            return 0;
        }
        v = v << 6 | (p[i] & 0x3f);
    }
    if (v < min || v > 0x10ffff || (v >= 0xd800 && v <= 0xdfff)) {
        return 0;
    }
    *cp = v;
    return n;
}

/*
 * Java's String.hashCode() of the key read as UTF-8.  A byte that starts
 * no valid sequence counts as one U+FFFD: keys like that are refused
 * before they are stored (salt_key_valid), but the mapping stays total.
 */
static int32_t
salt_jstring(const uint8_t *key, size_t len)
{
    uint32_t h = 0, cp;
    size_t i = 0;

    while (i < len) {
        size_t n = salt_utf8_next(key + i, len - i, &cp);

        if (n == 0) {
            cp = 0xfffd;
            n = 1;
        }
        i += n;
        if (cp >= 0x10000) {
            h = 31 * h + (0xd800 + ((cp - 0x10000) >> 10));
            h = 31 * h + (0xdc00 + (cp & 0x3ff));
        } else {
            h = 31 * h + cp;
        }
    }
    return (int32_t)h;
}

int32_t
salt_java_hash(const struct salt_table *t, const uint8_t *key, size_t len)
{
    switch (t->mapping) {
    case SALT_MAPPING_PHOENIX:
    case SALT_MAPPING_HBASEWD: return salt_jbytes(key, len);
    case SALT_MAPPING_BIGTABLE: return salt_jstring(key, len);
    default: return 0;
    }
}

gboolean
salt_key_valid(const struct salt_table *t, const uint8_t *key, size_t len)
{
    uint32_t cp;

    if (t->mapping != SALT_MAPPING_BIGTABLE) {
        return TRUE;
    }
    for (size_t i = 0, n; i < len; i += n) {
        n = salt_utf8_next(key + i, len - i, &cp);
        if (n == 0) {
            return FALSE;
        }
    }
    return TRUE;
}

gboolean
salt_ascii(const struct salt_table *t)
{
    switch (t->mapping) {
    case SALT_MAPPING_BIGTABLE: return TRUE;
    case SALT_MAPPING_HBASEWD:
        return t->modulus <= 128 &&
               (t->buckets == t->modulus || t->odd_salt < 0x80);
    default: return t->format != SALT_FORMAT_BYTE || t->buckets <= 128;
    }
}

uint32_t
salt_bucket(const struct salt_table *t, const uint8_t *key, size_t len)
{
    static const uint8_t none[1];
    size_t n;
    int64_t h, r;

    switch (t->mapping) {
    case SALT_MAPPING_PHOENIX:
        /* abs(h % N): C's % truncates toward zero as Java's does */
        r = (int64_t)salt_jbytes(key, len) % t->modulus;
        return (uint32_t)(r < 0 ? -r : r);
    case SALT_MAPPING_HBASEWD:
        h = salt_jbytes(key, len);
        if (h == INT32_MIN) {
            /* Math.abs(Integer.MIN_VALUE) is itself: the remainder is
             * -(2^31 mod N), its byte 256 - that, or 0 */
            r = -h % t->modulus;
            if (r == 0) {
                return 0;
            }
            return t->buckets > t->modulus ? t->modulus : (uint32_t)(256 - r);
        }
        return (uint32_t)((h < 0 ? -h : h) % t->modulus);
    case SALT_MAPPING_BIGTABLE:
        r = (int64_t)salt_jstring(key, len) % t->modulus;
        return r >= 0 ? (uint32_t)r : t->modulus - 1 + (uint32_t)-r;
    default: break;
    }
    n = salt_hashed_len(t, key, len);
    /* Unsigned 64-bit hash and modulus: no sign trouble (prior art had). */
    return (uint32_t)(XXH3_64bits(n > 0 ? key : none, n) % t->buckets);
}

uint32_t
salt_bucket_part(const struct salt_table *t, const uint8_t *key, size_t len,
                 size_t *part_len, guint64 *part_hash)
{
    static const uint8_t none[1];
    size_t n = salt_hashed_len(t, key, len);

    *part_len = n;
    *part_hash = XXH3_64bits(n > 0 ? key : none, n);
    if (t->mapping != SALT_MAPPING_XXH3) {
        return salt_bucket(t, key, len);
    }
    /* salt_bucket's, from the hash at hand */
    return (uint32_t)(*part_hash % t->buckets);
}

/* The bigtable-sample salt of a bucket: its value, then its text. */
static int32_t
salt_bigtable_value(const struct salt_table *t, uint32_t bucket)
{
    return bucket < t->modulus ? (int32_t)bucket
                               : -(int32_t)(bucket - t->modulus + 1);
}

static size_t
salt_bigtable_write(const struct salt_table *t, uint32_t bucket, uint8_t *out)
{
    int32_t v = salt_bigtable_value(t, bucket);
    uint32_t m = v < 0 ? (uint32_t)-v : (uint32_t)v;
    uint8_t d = salt_digits(m, 10);
    size_t n = v < 0 ? 1 : 0;

    if (v < 0) {
        out[0] = '-';
    }
    for (int i = d - 1; i >= 0; i--) {
        out[n + (size_t)i] = (uint8_t)('0' + m % 10);
        m /= 10;
    }
    n += d;
    out[n++] = '-';
    return n;
}

size_t
salt_bucket_prefix_len(const struct salt_table *t, uint32_t bucket)
{
    uint8_t prefix[SALT_MAX_PREFIX];

    if (t->mapping == SALT_MAPPING_BIGTABLE) {
        return salt_bigtable_write(t, bucket, prefix);
    }
    return salt_prefix_len(t);
}

size_t
salt_write_prefix(const struct salt_table *t, uint32_t bucket, uint8_t *out)
{
    uint32_t v = bucket;

    switch (t->mapping) {
    case SALT_MAPPING_BIGTABLE: return salt_bigtable_write(t, bucket, out);
    case SALT_MAPPING_HBASEWD:
        out[0] = bucket < t->modulus ? (uint8_t)bucket : t->odd_salt;
        return 1;
    default: break;
    }
    switch (t->format) {
    case SALT_FORMAT_BYTE:
        if (t->width == 2) {
            out[0] = (uint8_t)(v >> 8);
            out[1] = (uint8_t)v;
        } else {
            out[0] = (uint8_t)v;
        }
        break;
    case SALT_FORMAT_HEX:
        for (int i = t->width - 1; i >= 0; i--) {
            out[i] = (uint8_t)salt_hex_digits[v & 0xf];
            v >>= 4;
        }
        break;
    case SALT_FORMAT_DECIMAL:
        for (int i = t->width - 1; i >= 0; i--) {
            out[i] = (uint8_t)('0' + v % 10);
            v /= 10;
        }
        break;
    }
    if (t->sep_len > 0) {
        memcpy(out + t->width, t->sep, t->sep_len);
    }
    return salt_prefix_len(t);
}

size_t
salt_key(const struct salt_table *t, const uint8_t *key, size_t len,
         uint8_t *out, size_t outcap)
{
    size_t plen = salt_prefix_len(t);

    if (outcap < plen || outcap - plen < len) {
        return 0;
    }
    plen = salt_write_prefix(t, salt_bucket(t, key, len), out);
    if (len > 0) {
        memcpy(out + plen, key, len);
    }
    return plen + len;
}

/* salt_strip of bigtable-sample: "-?[1-9][0-9]*-" or "0-", |v| < N. */
static gboolean
salt_bigtable_strip(const struct salt_table *t, const uint8_t *phys,
                    size_t len, size_t *plen, uint32_t *bucket)
{
    size_t i = 0, start;
    uint32_t v = 0;
    gboolean neg = len > 0 && phys[0] == '-';

    i = neg ? 1 : 0;
    start = i;
    while (i < len && phys[i] >= '0' && phys[i] <= '9') {
        v = v * 10 + (uint32_t)(phys[i] - '0');
        if (v >= t->modulus) {
            return FALSE;
        }
        i++;
    }
    if (i == start || i >= len || phys[i] != '-') {
        return FALSE;
    }
    if (phys[start] == '0' && (i - start > 1 || neg)) {
        return FALSE;
    }
    *plen = i + 1;
    *bucket = neg ? t->modulus - 1 + v : v;
    return TRUE;
}

gboolean
salt_strip(const struct salt_table *t, const uint8_t *phys, size_t len,
           const uint8_t **logical, size_t *logical_len, uint32_t *bucket)
{
    size_t plen = salt_prefix_len(t);
    uint32_t v = 0;

    if (t->mapping == SALT_MAPPING_BIGTABLE) {
        if (!salt_bigtable_strip(t, phys, len, &plen, &v)) {
            return FALSE;
        }
        goto found;
    }
    if (len < plen) {
        return FALSE;
    }
    if (t->mapping == SALT_MAPPING_HBASEWD && phys[0] >= t->modulus) {
        if (t->buckets == t->modulus || phys[0] != t->odd_salt) {
            return FALSE;
        }
        v = t->modulus;
        goto found;
    }
    switch (t->format) {
    case SALT_FORMAT_BYTE:
        v = t->width == 2 ? (uint32_t)phys[0] << 8 | phys[1] : phys[0];
        break;
    case SALT_FORMAT_HEX:
        for (unsigned i = 0; i < t->width; i++) {
            uint8_t c = phys[i];
            if (c >= '0' && c <= '9') {
                v = v << 4 | (uint32_t)(c - '0');
            } else if (c >= 'a' && c <= 'f') {
                v = v << 4 | (uint32_t)(c - 'a' + 10);
            } else {
                return FALSE;
            }
        }
        break;
    case SALT_FORMAT_DECIMAL:
        for (unsigned i = 0; i < t->width; i++) {
            if (phys[i] < '0' || phys[i] > '9') {
                return FALSE;
            }
            v = v * 10 + (uint32_t)(phys[i] - '0');
        }
        break;
    }
    if (v >= t->buckets) {
        return FALSE;
    }
    if (t->sep_len > 0 && memcmp(phys + t->width, t->sep, t->sep_len) != 0) {
        return FALSE;
    }
found:
    if (logical != NULL) {
        *logical = phys + plen;
    }
    if (logical_len != NULL) {
        *logical_len = len - plen;
    }
    if (bucket != NULL) {
        *bucket = v;
    }
    return TRUE;
}

gboolean
salt_prefix_bucket(const struct salt_table *t, const uint8_t *prefix,
                   size_t len, uint32_t *bucket)
{
    switch (t->hash) {
    case SALT_HASH_LENGTH:
        if (len < t->hash_len) {
            return FALSE;
        }
        break;
    case SALT_HASH_DELIMITER:
        /* The K-th occurrence must lie wholly inside the prefix; then any
         * longer key finds the same K occurrences at the same places. */
        if (salt_hashed_len(t, prefix, len) == len) {
            return FALSE;
        }
        break;
    default: return FALSE;
    }
    *bucket = salt_bucket(t, prefix, len);
    return TRUE;
}

/* Whether p has no successor: empty or all 0xff. */
static gboolean
salt_all_ff(const uint8_t *p, size_t len)
{
    for (size_t i = 0; i < len; i++) {
        if (p[i] != 0xff) {
            return FALSE;
        }
    }
    return TRUE;
}

/* memcmp that allows NULL with n == 0 (an empty bound may be NULL). */
static int
salt_memcmp(const uint8_t *a, const uint8_t *b, size_t n)
{
    return n > 0 ? memcmp(a, b, n) : 0;
}

/* Whether key <= successor(p[0..plen)), without building the successor;
 * an all-0xff (or empty) p has no successor: every key is below it. */
static gboolean
salt_le_successor(const uint8_t *key, size_t klen, const uint8_t *p,
                  size_t plen)
{
    size_t j = plen;
    int c;

    while (j > 0 && p[j - 1] == 0xff) {
        j--;
    }
    if (j == 0) {
        return TRUE;
    }
    j--; /* successor = p[0..j) || p[j] + 1 */
    c = salt_memcmp(key, p, klen < j ? klen : j);
    if (c != 0) {
        return c < 0;
    }
    if (klen <= j) {
        return TRUE;
    }
    if (key[j] != p[j] + 1) {
        return key[j] < p[j] + 1;
    }
    return klen == j + 1;
}

/* Whether p[0..plen) <= lo || "\0", the key right after lo. */
static gboolean
salt_le_next(const uint8_t *p, size_t plen, const uint8_t *lo, size_t lolen)
{
    int c = salt_memcmp(p, lo, plen < lolen ? plen : lolen);

    if (c != 0) {
        return c < 0;
    }
    if (plen <= lolen) {
        return TRUE;
    }
    return p[lolen] == 0 && plen == lolen + 1;
}

/* Whether b == a || "\0". */
static gboolean
salt_is_next(const uint8_t *a, size_t alen, const uint8_t *b, size_t blen)
{
    return blen == alen + 1 && b[alen] == 0 && salt_memcmp(a, b, alen) == 0;
}

gboolean
salt_fixed_bucket(const struct salt_table *t, gboolean reversed,
                  const uint8_t *start, size_t start_len, const uint8_t *stop,
                  size_t stop_len, uint32_t *bucket)
{
    /* One row at most: its own bucket, whatever the hash mode. */
    if (start_len > 0 &&
        ((stop_len == start_len && salt_memcmp(start, stop, start_len) == 0) ||
         (!reversed && salt_is_next(start, start_len, stop, stop_len)) ||
         (reversed && salt_is_next(stop, stop_len, start, start_len)))) {
        *bucket = salt_bucket(t, start, start_len);
        return TRUE;
    }
    if (t->hash == SALT_HASH_WHOLE) {
        return FALSE;
    }

    /*
     * Find the longest P such that every key of the range starts with P;
     * a longer P only fixes more of the hashed part, so the longest is the
     * one to try.  Keys with prefix P are exactly [P, successor(P)).
     */
    if (!reversed) {
        /* [start, stop): P is a prefix of start, stop <= successor(P). */
        for (size_t i = start_len;; i--) {
            gboolean ok = stop_len == 0
                              ? salt_all_ff(start, i)
                              : salt_le_successor(stop, stop_len, start, i);
            if (ok) {
                return salt_prefix_bucket(t, start, i, bucket);
            }
            if (i == 0) {
                return FALSE;
            }
        }
    }
    /* (stop, start]: P is a prefix of start, P <= stop || "\0". */
    for (size_t i = start_len;; i--) {
        if (salt_le_next(start, i, stop, stop_len)) {
            return salt_prefix_bucket(t, start, i, bucket);
        }
        if (i == 0) {
            return FALSE;
        }
    }
}

size_t
salt_successor(uint8_t *key, size_t len)
{
    while (len > 0 && key[len - 1] == 0xff) {
        len--;
    }
    if (len > 0) {
        key[len - 1]++;
    }
    return len;
}

/* The end of a bucket: its prefix incremented; 0 = table end. */
static size_t
salt_bucket_end(const struct salt_table *t, uint32_t bucket, uint8_t *out)
{
    return salt_successor(out, salt_write_prefix(t, bucket, out));
}

/* prefix || key */
static size_t
salt_bound(const struct salt_table *t, uint32_t bucket, const uint8_t *key,
           size_t len, uint8_t *out)
{
    size_t plen = salt_write_prefix(t, bucket, out);

    if (len > 0) {
        memcpy(out + plen, key, len);
    }
    return plen + len;
}

size_t
salt_scan_start(const struct salt_table *t, uint32_t bucket, gboolean reversed,
                const uint8_t *start, size_t len, uint8_t *out)
{
    if (reversed && len == 0) {
        return salt_bucket_end(t, bucket, out);
    }
    return salt_bound(t, bucket, start, len, out);
}

size_t
salt_scan_stop(const struct salt_table *t, uint32_t bucket, gboolean reversed,
               const uint8_t *stop, size_t len, uint8_t *out)
{
    if (!reversed && len == 0) {
        return salt_bucket_end(t, bucket, out);
    }
    return salt_bound(t, bucket, stop, len, out);
}

char *
salt_escape(const uint8_t *p, size_t len)
{
    GString *s = g_string_sized_new(len + 8);

    for (size_t i = 0; i < len; i++) {
        if (p[i] >= ' ' && p[i] <= '~' && p[i] != '\\') {
            g_string_append_c(s, (char)p[i]);
        } else {
            g_string_append_printf(s, "\\x%02X", p[i]);
        }
    }
    return g_string_free(s, FALSE);
}

char *
salt_hex(const uint8_t *p, size_t len)
{
    char *s = g_malloc(len * 2 + 1);

    for (size_t i = 0; i < len; i++) {
        s[2 * i] = salt_hex_digits[p[i] >> 4];
        s[2 * i + 1] = salt_hex_digits[p[i] & 0xf];
    }
    s[len * 2] = '\0';
    return s;
}

char *
salt_explain(const struct salt_table *t, const uint8_t *key, size_t len)
{
    size_t hlen = salt_hashed_len(t, key, len);
    uint32_t bucket = salt_bucket(t, key, len);
    size_t plen = salt_prefix_len(t);
    g_autofree uint8_t *phys = g_malloc(plen + len + 1);
    size_t n = salt_key(t, key, len, phys, plen + len + 1);
    legacy_route_t route = salt_route(t, key, len);
    g_autofree char *policy = salt_table_describe(t);
    g_autofree char *logical = salt_escape(key, len);
    g_autofree char *hashed = salt_escape(key, hlen);
    g_autofree char *salt = salt_escape(phys,
                                        salt_bucket_prefix_len(t, bucket));
    g_autofree char *hex = salt_hex(phys, n);
    g_autofree char *esc = NULL;
    const char *stored = "";

    if (route != LEGACY_ROUTE_SALTED) {
        /* a legacy key stays where it is, unsalted */
        memcpy(phys, key, len);
        n = len;
        g_free(hex);
        hex = salt_hex(phys, n);
        stored = route == LEGACY_ROUTE_LEGACY
                     ? "stored:         unsalted (a legacy key of the "
                       "table's legacy rule)\n"
                     : "stored:         nowhere: a legacy key that reads "
                       "as the salted row of a new key (refused)\n";
    }
    esc = salt_escape(phys, n);
    g_autofree char *java = NULL;

    if (t->mapping != SALT_MAPPING_XXH3) {
        java = g_strdup_printf("java hash:      %d (%s)%s\n",
                               salt_java_hash(t, key, len),
                               t->mapping == SALT_MAPPING_BIGTABLE
                                   ? "String.hashCode of the key as UTF-8"
                                   : "Arrays.hashCode of the key bytes",
                               salt_key_valid(t, key, len)
                                   ? ""
                                   : "; the key is not valid UTF-8: no key "
                                     "the sample writes, the proxy refuses "
                                     "it");
    }
    return g_strdup_printf("policy:         %s\n"
                           "logical key:    %s\n"
                           "hashed part:    %s (%zu of %zu bytes)\n"
                           "%s"
                           "bucket:         %u of %u\n"
                           "salt prefix:    %s\n"
                           "%s"
                           "physical (hex): %s\n"
                           "physical:       %s\n"
                           "row limit:      %zu bytes (HBase's %u less the "
                           "%zu-byte prefix)%s\n",
                           policy, logical, hashed, hlen, len,
                           java != NULL ? java : "", bucket, t->buckets, salt,
                           stored, hex, esc, salt_max_row(t),
                           SALT_HBASE_MAX_ROW, plen,
                           len > salt_max_row(t)
                               ? "; this key is longer: never stored"
                               : "");
}

/* Whether phys is the physical row of a new key of t. */
static gboolean
salt_new_row(const struct salt_table *t, const uint8_t *phys, size_t len,
             const uint8_t **logical, size_t *logical_len, uint32_t *bucket)
{
    return salt_strip(t, phys, len, logical, logical_len, bucket) &&
           salt_bucket(t, *logical, *logical_len) == *bucket &&
           !legacy_is_legacy(&t->legacy, *logical, *logical_len);
}

legacy_route_t
salt_route(const struct salt_table *t, const uint8_t *key, size_t len)
{
    const uint8_t *logical;
    size_t logical_len;
    uint32_t bucket;

    if (t->legacy.kind == LEGACY_NONE ||
        !legacy_is_legacy(&t->legacy, key, len)) {
        return LEGACY_ROUTE_SALTED;
    }
    if (salt_new_row(t, key, len, &logical, &logical_len, &bucket)) {
        return LEGACY_ROUTE_CLASH;
    }
    return LEGACY_ROUTE_LEGACY;
}

legacy_owner_t
salt_owner(const struct salt_table *t, const uint8_t *phys, size_t len,
           const uint8_t **logical, size_t *logical_len, uint32_t *bucket)
{
    if (salt_new_row(t, phys, len, logical, logical_len, bucket)) {
        return LEGACY_OWNER_SALTED;
    }
    if (legacy_is_legacy(&t->legacy, phys, len)) {
        *logical = phys;
        *logical_len = len;
        return LEGACY_OWNER_LEGACY;
    }
    return LEGACY_OWNER_NONE;
}
