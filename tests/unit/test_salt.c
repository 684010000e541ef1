/* test_salt.c: unit tests of the salt mapping, pinned by vectors. */
#include <string.h>

#include <glib.h>
#include <xxhash.h>

#include "salt.h"

/*
 * The pinned storage format.  These vectors were computed outside salt.c by
 * a throwaway program that calls the shared libxxhash's XXH3_64bits()
 * (salt.c inlines the header instead), cuts the hashed part with a naive
 * byte loop and writes the salt with snprintf("%0*x" / "%0*u") or raw
 * bytes.  XXH3_64bits("") = 2d06800538d394c2 agrees with xxHash's own
 * published value.  If one of these fails, salt.c changed the storage
 * format: existing rows would no longer be found.  Do not "fix" the vector.
 */
struct vec_table {
    uint32_t buckets;
    salt_format_t format;
    const char *sep;
    size_t sep_len;
    salt_hash_t hash;
    uint32_t n;             /* N of length:N, K of delimiter:SEP:K */
    const char *delim;
    size_t delim_len;
};

static const struct vec_table vec_tables[] = {
    /* 0 */ {16, SALT_FORMAT_BYTE, "", 0, SALT_HASH_WHOLE, 0, NULL, 0},
    /* 1 */ {1, SALT_FORMAT_BYTE, "", 0, SALT_HASH_WHOLE, 0, NULL, 0},
    /* 2 */ {2, SALT_FORMAT_HEX, "", 0, SALT_HASH_WHOLE, 0, NULL, 0},
    /* 3 */ {256, SALT_FORMAT_BYTE, "-", 1, SALT_HASH_WHOLE, 0, NULL, 0},
    /* 4 */ {257, SALT_FORMAT_BYTE, "", 0, SALT_HASH_WHOLE, 0, NULL, 0},
    /* 5 */ {1000, SALT_FORMAT_DECIMAL, "-", 1, SALT_HASH_WHOLE, 0, NULL, 0},
    /* 6 */ {65536, SALT_FORMAT_HEX, "", 0, SALT_HASH_WHOLE, 0, NULL, 0},
    /* 7 */ {65536, SALT_FORMAT_BYTE, "", 0, SALT_HASH_WHOLE, 0, NULL, 0},
    /* 8 */ {65536, SALT_FORMAT_DECIMAL, "|", 1, SALT_HASH_WHOLE, 0, NULL, 0},
    /* 9 */ {16, SALT_FORMAT_HEX, "", 0, SALT_HASH_WHOLE, 0, NULL, 0},
    /* 10 */ {256, SALT_FORMAT_HEX, ":", 1, SALT_HASH_WHOLE, 0, NULL, 0},
    /* 11 */ {16, SALT_FORMAT_DECIMAL, "", 0, SALT_HASH_LENGTH, 4, NULL, 0},
    /* 12 */ {1000, SALT_FORMAT_BYTE, "", 0, SALT_HASH_DELIMITER, 1, "#", 1},
    /* 13 */ {16, SALT_FORMAT_HEX, "-", 1, SALT_HASH_DELIMITER, 2, "::", 2},
    /* 14 */ {10, SALT_FORMAT_DECIMAL, "", 0, SALT_HASH_WHOLE, 0, NULL, 0},
    /* 15 */ {1, SALT_FORMAT_DECIMAL, "_", 1, SALT_HASH_LENGTH, 1, NULL, 0},
    /* 16 */ {2, SALT_FORMAT_BYTE, "\x00\xff", 2, SALT_HASH_DELIMITER, 3,
              "\x00", 1},
};

/* Key 9 is 100 bytes, i * 7 + 3; "*" in a vector stands for it. */
static const struct {
    const char *p;
    size_t len;
} vec_keys[] = {
    {"", 0},
    {"\x00", 1},
    {"\xff", 1},
    {"\x00\xff\x00", 3},
    {"user42", 6},
    {"user42#2024-01-01#x", 19},
    {"a::b::c::d", 10},
    {"ab\x00" "cd\x00" "ef\x00" "gh", 11},
    {"\xff\xff\xff\xff\xff", 5},
    {NULL, 100},
};

#define LONG "*"

/* {table, key, bucket, physical key as hex} */
static const struct {
    unsigned table;
    unsigned key;
    uint32_t bucket;
    const char *phys;
} vectors[] = {
    /* table 0: 16 byte whole */
    {0, 0,     2, "02"},
    {0, 1,    11, "0b00"},
    {0, 2,    14, "0eff"},
    {0, 3,    10, "0a00ff00"},
    {0, 4,    12, "0c757365723432"},
    {0, 5,     2, "0275736572343223323032342d30312d30312378"},
    {0, 6,    15, "0f613a3a623a3a633a3a64"},
    {0, 7,     2, "026162006364006566006768"},
    {0, 8,     7, "07ffffffffff"},
    {0, 9,    15, "0f" LONG ""},
    /* table 1: 1 byte whole */
    {1, 0,     0, "00"},
    {1, 1,     0, "0000"},
    {1, 2,     0, "00ff"},
    {1, 3,     0, "0000ff00"},
    {1, 4,     0, "00757365723432"},
    {1, 5,     0, "0075736572343223323032342d30312d30312378"},
    {1, 6,     0, "00613a3a623a3a633a3a64"},
    {1, 7,     0, "006162006364006566006768"},
    {1, 8,     0, "00ffffffffff"},
    {1, 9,     0, "00" LONG ""},
    /* table 2: 2 hex whole */
    {2, 0,     0, "30"},
    {2, 1,     1, "3100"},
    {2, 2,     0, "30ff"},
    {2, 3,     0, "3000ff00"},
    {2, 4,     0, "30757365723432"},
    {2, 5,     0, "3075736572343223323032342d30312d30312378"},
    {2, 6,     1, "31613a3a623a3a633a3a64"},
    {2, 7,     0, "306162006364006566006768"},
    {2, 8,     1, "31ffffffffff"},
    {2, 9,     1, "31" LONG ""},
    /* table 3: 256 byte sep - whole */
    {3, 0,   194, "c22d"},
    {3, 1,   219, "db2d00"},
    {3, 2,    46, "2e2dff"},
    {3, 3,   250, "fa2d00ff00"},
    {3, 4,   124, "7c2d757365723432"},
    {3, 5,    34, "222d75736572343223323032342d30312d30312378"},
    {3, 6,   223, "df2d613a3a623a3a633a3a64"},
    {3, 7,   162, "a22d6162006364006566006768"},
    {3, 8,     7, "072dffffffffff"},
    {3, 9,   159, "9f2d" LONG ""},
    /* table 4: 257 byte(2) whole */
    {4, 0,    39, "0027"},
    {4, 1,   211, "00d300"},
    {4, 2,    77, "004dff"},
    {4, 3,   230, "00e600ff00"},
    {4, 4,    61, "003d757365723432"},
    {4, 5,   102, "006675736572343223323032342d30312d30312378"},
    {4, 6,   233, "00e9613a3a623a3a633a3a64"},
    {4, 7,    95, "005f6162006364006566006768"},
    {4, 8,   250, "00faffffffffff"},
    {4, 9,   184, "00b8" LONG ""},
    /* table 5: 1000 decimal sep - whole */
    {5, 0,   138, "3133382d"},
    {5, 1,   883, "3838332d00"},
    {5, 2,   702, "3730322dff"},
    {5, 3,   530, "3533302d00ff00"},
    {5, 4,    28, "3032382d757365723432"},
    {5, 5,   906, "3930362d75736572343223323032342d30312d30312378"},
    {5, 6,   111, "3131312d613a3a623a3a633a3a64"},
    {5, 7,   706, "3730362d6162006364006566006768"},
    {5, 8,   351, "3335312dffffffffff"},
    {5, 9,   799, "3739392d" LONG ""},
    /* table 6: 65536 hex whole */
    {6, 0, 38082, "39346332"},
    {6, 1, 60635, "6563646200"},
    {6, 2, 55086, "64373265ff"},
    {6, 3, 19194, "3461666100ff00"},
    {6, 4,  9852, "32363763757365723432"},
    {6, 5, 57122, "6466323275736572343223323032342d30312d30312378"},
    {6, 6, 18399, "34376466613a3a623a3a633a3a64"},
    {6, 7, 47778, "626161326162006364006566006768"},
    {6, 8, 54023, "64333037ffffffffff"},
    {6, 9, 35999, "38633966" LONG ""},
    /* table 7: 65536 byte(2) whole */
    {7, 0, 38082, "94c2"},
    {7, 1, 60635, "ecdb00"},
    {7, 2, 55086, "d72eff"},
    {7, 3, 19194, "4afa00ff00"},
    {7, 4,  9852, "267c757365723432"},
    {7, 5, 57122, "df2275736572343223323032342d30312d30312378"},
    {7, 6, 18399, "47df613a3a623a3a633a3a64"},
    {7, 7, 47778, "baa26162006364006566006768"},
    {7, 8, 54023, "d307ffffffffff"},
    {7, 9, 35999, "8c9f" LONG ""},
    /* table 8: 65536 decimal sep | whole */
    {8, 0, 38082, "33383038327c"},
    {8, 1, 60635, "36303633357c00"},
    {8, 2, 55086, "35353038367cff"},
    {8, 3, 19194, "31393139347c00ff00"},
    {8, 4,  9852, "30393835327c757365723432"},
    {8, 5, 57122, "35373132327c75736572343223323032342d30312d30312378"},
    {8, 6, 18399, "31383339397c613a3a623a3a633a3a64"},
    {8, 7, 47778, "34373737387c6162006364006566006768"},
    {8, 8, 54023, "35343032337cffffffffff"},
    {8, 9, 35999, "33353939397c" LONG ""},
    /* table 9: 16 hex whole */
    {9, 0,     2, "32"},
    {9, 1,    11, "6200"},
    {9, 2,    14, "65ff"},
    {9, 3,    10, "6100ff00"},
    {9, 4,    12, "63757365723432"},
    {9, 5,     2, "3275736572343223323032342d30312d30312378"},
    {9, 6,    15, "66613a3a623a3a633a3a64"},
    {9, 7,     2, "326162006364006566006768"},
    {9, 8,     7, "37ffffffffff"},
    {9, 9,    15, "66" LONG ""},
    /* table 10: 256 hex sep : whole */
    {10, 0,   194, "63323a"},
    {10, 1,   219, "64623a00"},
    {10, 2,    46, "32653aff"},
    {10, 3,   250, "66613a00ff00"},
    {10, 4,   124, "37633a757365723432"},
    {10, 5,    34, "32323a75736572343223323032342d30312d30312378"},
    {10, 6,   223, "64663a613a3a623a3a633a3a64"},
    {10, 7,   162, "61323a6162006364006566006768"},
    {10, 8,     7, "30373affffffffff"},
    {10, 9,   159, "39663a" LONG ""},
    /* table 11: 16 decimal length:4 */
    {11, 0,     2, "3032"},
    {11, 1,    11, "313100"},
    {11, 2,    14, "3134ff"},
    {11, 3,    10, "313000ff00"},
    {11, 4,     2, "3032757365723432"},
    {11, 5,     2, "303275736572343223323032342d30312d30312378"},
    {11, 6,     5, "3035613a3a623a3a633a3a64"},
    {11, 7,    13, "31336162006364006566006768"},
    {11, 8,    12, "3132ffffffffff"},
    {11, 9,     3, "3033" LONG ""},
    /* table 12: 1000 byte(2) delimiter:#:1 */
    {12, 0,   138, "008a"},
    {12, 1,   883, "037300"},
    {12, 2,   702, "02beff"},
    {12, 3,   530, "021200ff00"},
    {12, 4,    28, "001c757365723432"},
    {12, 5,    28, "001c75736572343223323032342d30312d30312378"},
    {12, 6,   111, "006f613a3a623a3a633a3a64"},
    {12, 7,   706, "02c26162006364006566006768"},
    {12, 8,   351, "015fffffffffff"},
    {12, 9,   799, "031f" LONG ""},
    /* table 13: 16 hex sep - delimiter:\x3a\x3a:2 */
    {13, 0,     2, "322d"},
    {13, 1,    11, "622d00"},
    {13, 2,    14, "652dff"},
    {13, 3,    10, "612d00ff00"},
    {13, 4,    12, "632d757365723432"},
    {13, 5,     2, "322d75736572343223323032342d30312d30312378"},
    {13, 6,     5, "352d613a3a623a3a633a3a64"},
    {13, 7,     2, "322d6162006364006566006768"},
    {13, 8,     7, "372dffffffffff"},
    {13, 9,    15, "662d" LONG ""},
    /* table 14: 10 decimal whole */
    {14, 0,     8, "38"},
    {14, 1,     3, "3300"},
    {14, 2,     2, "32ff"},
    {14, 3,     0, "3000ff00"},
    {14, 4,     8, "38757365723432"},
    {14, 5,     6, "3675736572343223323032342d30312d30312378"},
    {14, 6,     1, "31613a3a623a3a633a3a64"},
    {14, 7,     6, "366162006364006566006768"},
    {14, 8,     1, "31ffffffffff"},
    {14, 9,     9, "39" LONG ""},
    /* table 15: 1 decimal sep _ length:1 */
    {15, 0,     0, "305f"},
    {15, 1,     0, "305f00"},
    {15, 2,     0, "305fff"},
    {15, 3,     0, "305f00ff00"},
    {15, 4,     0, "305f757365723432"},
    {15, 5,     0, "305f75736572343223323032342d30312d30312378"},
    {15, 6,     0, "305f613a3a623a3a633a3a64"},
    {15, 7,     0, "305f6162006364006566006768"},
    {15, 8,     0, "305fffffffffff"},
    {15, 9,     0, "305f" LONG ""},
    /* table 16: 2 byte sep \x00\xFF delimiter:\x00:3 */
    {16, 0,     0, "0000ff"},
    {16, 1,     1, "0100ff00"},
    {16, 2,     0, "0000ffff"},
    {16, 3,     0, "0000ff00ff00"},
    {16, 4,     0, "0000ff757365723432"},
    {16, 5,     0, "0000ff75736572343223323032342d30312d30312378"},
    {16, 6,     1, "0100ff613a3a623a3a633a3a64"},
    {16, 7,     0, "0000ff6162006364006566006768"},
    {16, 8,     1, "0100ffffffffffff"},
    {16, 9,     1, "0100ff" LONG ""},
};

static uint8_t long_key[100];

static void
make_table(struct salt_table *t, uint32_t buckets, salt_format_t format,
           const char *sep, size_t sep_len)
{
    g_autoptr(GError) error = NULL;

    g_assert_true(salt_table_init(t, buckets, format, sep, sep_len, &error));
    g_assert_no_error(error);
}

static void
vec_table(unsigned i, struct salt_table *t)
{
    const struct vec_table *v = &vec_tables[i];
    g_autoptr(GError) error = NULL;

    make_table(t, v->buckets, v->format, v->sep, v->sep_len);
    if (v->hash == SALT_HASH_LENGTH)
        g_assert_true(salt_table_hash_length(t, v->n, &error));
    else if (v->hash == SALT_HASH_DELIMITER)
        g_assert_true(salt_table_hash_delimiter(t, v->delim, v->delim_len,
                                                v->n, &error));
    g_assert_no_error(error);
}

static const uint8_t *
vec_key(unsigned i, size_t *len)
{
    *len = vec_keys[i].len;
    return vec_keys[i].p != NULL ? (const uint8_t *)vec_keys[i].p : long_key;
}

/* Test: XXH3_64bits itself, against xxHash's published value. */
static void
test_xxh3(void)
{
    g_assert_cmphex(XXH3_64bits("", 0), ==, 0x2d06800538d394c2ull);
}

/* Test: every pinned vector, through salt_bucket, salt_key, salt_strip. */
static void
test_vectors(void)
{
    for (size_t i = 0; i < G_N_ELEMENTS(vectors); i++) {
        struct salt_table t;
        size_t klen, n, llen;
        const uint8_t *key = vec_key(vectors[i].key, &klen);
        const uint8_t *logical;
        uint8_t out[SALT_MAX_PREFIX + 100];
        uint32_t b;
        g_autofree char *hex = NULL;
        g_autofree char *want = NULL;

        vec_table(vectors[i].table, &t);
        g_assert_cmpuint(salt_bucket(&t, key, klen), ==, vectors[i].bucket);
        n = salt_key(&t, key, klen, out, sizeof(out));
        g_assert_cmpuint(n, ==, salt_prefix_len(&t) + klen);
        hex = salt_hex(out, n);
        if (g_str_has_suffix(vectors[i].phys, LONG)) {
            g_autofree char *lk = salt_hex(long_key, sizeof(long_key));
            g_autofree char *head = g_strndup(vectors[i].phys,
                                              strlen(vectors[i].phys) - 1);
            want = g_strconcat(head, lk, NULL);
        } else {
            want = g_strdup(vectors[i].phys);
        }
        if (g_strcmp0(hex, want) != 0)
            g_test_message("vector %zu: table %u key %u", i,
                           vectors[i].table, vectors[i].key);
        g_assert_cmpstr(hex, ==, want);

        g_assert_true(salt_strip(&t, out, n, &logical, &llen, &b));
        g_assert_cmpuint(b, ==, vectors[i].bucket);
        g_assert_cmpmem(logical, llen, key, klen);
    }
}

/* Test: salt width per format and bucket count, as documented in salt.h. */
static void
test_width(void)
{
    static const struct {
        uint32_t buckets;
        unsigned byte, hex, dec;
    } w[] = {
        {1, 1, 1, 1},     {2, 1, 1, 1},     {10, 1, 1, 1},
        {11, 1, 1, 2},    {16, 1, 1, 2},    {17, 1, 2, 2},
        {100, 1, 2, 2},   {101, 1, 2, 3},   {256, 1, 2, 3},
        {257, 2, 3, 3},   {1000, 2, 3, 3},  {1001, 2, 3, 4},
        {4096, 2, 3, 4},  {4097, 2, 4, 4},  {10001, 2, 4, 5},
        {65536, 2, 4, 5},
    };

    for (size_t i = 0; i < G_N_ELEMENTS(w); i++) {
        struct salt_table t;

        make_table(&t, w[i].buckets, SALT_FORMAT_BYTE, "", 0);
        g_assert_cmpuint(t.width, ==, w[i].byte);
        make_table(&t, w[i].buckets, SALT_FORMAT_HEX, "--", 2);
        g_assert_cmpuint(t.width, ==, w[i].hex);
        g_assert_cmpuint(salt_prefix_len(&t), ==, w[i].hex + 2);
        make_table(&t, w[i].buckets, SALT_FORMAT_DECIMAL, "", 0);
        g_assert_cmpuint(t.width, ==, w[i].dec);
    }
}

/* Test: the last bucket's salt in each format. */
static void
test_prefix_last(void)
{
    struct salt_table t;
    uint8_t out[SALT_MAX_PREFIX];

    make_table(&t, 65536, SALT_FORMAT_DECIMAL, "-", 1);
    g_assert_cmpuint(salt_write_prefix(&t, 65535, out), ==, 6);
    g_assert_cmpmem(out, 6, "65535-", 6);
    g_assert_cmpuint(salt_write_prefix(&t, 7, out), ==, 6);
    g_assert_cmpmem(out, 6, "00007-", 6);
    make_table(&t, 65536, SALT_FORMAT_HEX, "", 0);
    salt_write_prefix(&t, 65535, out);
    g_assert_cmpmem(out, 4, "ffff", 4);
    make_table(&t, 65536, SALT_FORMAT_BYTE, "", 0);
    salt_write_prefix(&t, 0x1234, out);
    g_assert_cmpmem(out, 2, "\x12\x34", 2);
    make_table(&t, 16, SALT_FORMAT_HEX, "", 0);
    salt_write_prefix(&t, 15, out);
    g_assert_cmpmem(out, 1, "f", 1);
}

/* Test: bad policies are refused with SALT_ERROR codes. */
static void
test_init_errors(void)
{
    struct salt_table t;
    g_autoptr(GError) error = NULL;

    g_assert_false(salt_table_init(&t, 0, SALT_FORMAT_BYTE, "", 0, &error));
    g_assert_error(error, SALT_ERROR, SALT_ERROR_BUCKETS);
    g_clear_error(&error);
    g_assert_false(salt_table_init(&t, 65537, SALT_FORMAT_HEX, "", 0,
                                   &error));
    g_assert_error(error, SALT_ERROR, SALT_ERROR_BUCKETS);
    g_clear_error(&error);
    g_assert_false(salt_table_init(&t, 16, SALT_FORMAT_HEX,
                                   "0123456789abcdefX", 17, &error));
    g_assert_error(error, SALT_ERROR, SALT_ERROR_SEPARATOR);
    g_clear_error(&error);

    make_table(&t, 16, SALT_FORMAT_BYTE, "", 0);
    g_assert_false(salt_table_hash_length(&t, 0, &error));
    g_assert_error(error, SALT_ERROR, SALT_ERROR_HASH_PART);
    g_clear_error(&error);
    g_assert_false(salt_table_hash_delimiter(&t, "", 0, 1, &error));
    g_assert_error(error, SALT_ERROR, SALT_ERROR_HASH_PART);
    g_clear_error(&error);
    g_assert_false(salt_table_hash_delimiter(&t, "#", 1, 0, &error));
    g_assert_error(error, SALT_ERROR, SALT_ERROR_HASH_PART);
    g_clear_error(&error);
    g_assert_false(salt_table_hash_delimiter(&t, "12345678901234567", 17, 1,
                                             &error));
    g_assert_error(error, SALT_ERROR, SALT_ERROR_HASH_PART);
}

/* Test: salt_key refuses a short buffer instead of overrunning it. */
static void
test_key_outcap(void)
{
    struct salt_table t;
    uint8_t out[8];

    make_table(&t, 1000, SALT_FORMAT_DECIMAL, "-", 1);
    g_assert_cmpuint(salt_key(&t, (const uint8_t *)"abcd", 4, out, 8), ==,
                     8);
    g_assert_cmpuint(salt_key(&t, (const uint8_t *)"abcde", 5, out, 8), ==,
                     0);
    g_assert_cmpuint(salt_key(&t, (const uint8_t *)"", 0, out, 3), ==, 0);
    g_assert_cmpuint(salt_key(&t, (const uint8_t *)"", 0, out, 4), ==, 4);
}

/* Test: random keys round-trip through salt_key and salt_strip. */
static void
test_strip_roundtrip(void)
{
    g_autoptr(GRand) rand = g_rand_new_with_seed(7);

    for (unsigned ti = 0; ti < G_N_ELEMENTS(vec_tables); ti++) {
        struct salt_table t;

        vec_table(ti, &t);
        for (int i = 0; i < 2000; i++) {
            uint8_t key[40], out[SALT_MAX_PREFIX + 40];
            size_t klen = (size_t)g_rand_int_range(rand, 0, 40), llen, n;
            const uint8_t *logical;
            uint32_t b;

            for (size_t j = 0; j < klen; j++)
                key[j] = (uint8_t)g_rand_int_range(rand, 0, 256);
            n = salt_key(&t, key, klen, out, sizeof(out));
            g_assert_cmpuint(n, ==, salt_prefix_len(&t) + klen);
            g_assert_true(salt_strip(&t, out, n, &logical, &llen, &b));
            g_assert_cmpuint(b, ==, salt_bucket(&t, key, klen));
            g_assert_true(logical == out + salt_prefix_len(&t));
            g_assert_cmpmem(logical, llen, key, klen);
        }
        /* Every bucket's prefix strips back to that bucket. */
        for (uint32_t b = 0; b < t.buckets; b++) {
            uint8_t out[SALT_MAX_PREFIX];
            uint32_t got = G_MAXUINT32;
            size_t n = salt_write_prefix(&t, b, out);

            g_assert_true(salt_strip(&t, out, n, NULL, NULL, &got));
            g_assert_cmpuint(got, ==, b);
        }
    }
}

static gboolean
strips(const struct salt_table *t, const char *phys, size_t len)
{
    const uint8_t *logical = NULL;
    size_t llen = 0;
    uint32_t b = 0;

    return salt_strip(t, (const uint8_t *)phys, len, &logical, &llen, &b);
}

/* Test: physical keys without a valid salt of the table are refused. */
static void
test_strip_invalid(void)
{
    struct salt_table t;

    /* byte, 16 buckets: 0x10 and up are out of range */
    make_table(&t, 16, SALT_FORMAT_BYTE, "", 0);
    g_assert_false(strips(&t, "", 0));
    g_assert_true(strips(&t, "\x0f", 1));
    g_assert_false(strips(&t, "\x10row", 4));
    g_assert_false(strips(&t, "\xffrow", 4));

    /* byte, 2 bytes: too short, out of range */
    make_table(&t, 300, SALT_FORMAT_BYTE, "", 0);
    g_assert_false(strips(&t, "\x01", 1));
    g_assert_true(strips(&t, "\x01\x2b", 2));
    g_assert_false(strips(&t, "\x01\x2c", 2));

    /* hex: uppercase, non-digits, out of range */
    make_table(&t, 200, SALT_FORMAT_HEX, "", 0);
    g_assert_true(strips(&t, "c7row", 5));
    g_assert_false(strips(&t, "c8row", 5));
    g_assert_false(strips(&t, "C7row", 5));
    g_assert_false(strips(&t, "g1row", 5));
    g_assert_false(strips(&t, "1", 1));
    g_assert_false(strips(&t, " 1row", 5));

    /* decimal: non-digits, out of range, too short */
    make_table(&t, 500, SALT_FORMAT_DECIMAL, "-", 1);
    g_assert_true(strips(&t, "499-", 4));
    g_assert_false(strips(&t, "500-row", 7));
    g_assert_false(strips(&t, "4a9-row", 7));
    g_assert_false(strips(&t, "+49-row", 7));
    g_assert_false(strips(&t, "49-", 3));

    /* separator mismatch, wrong length */
    g_assert_false(strips(&t, "049_row", 7));
    g_assert_false(strips(&t, "0049-row", 8));
    make_table(&t, 16, SALT_FORMAT_BYTE, "\x00\xff", 2);
    g_assert_true(strips(&t, "\x03\x00\xffr", 4));
    g_assert_false(strips(&t, "\x03\x00\xfer", 4));
    g_assert_false(strips(&t, "\x03\x00", 2));
}

/* Test: which prefixes fix the hashed part, per hash mode. */
static void
test_prefix_bucket(void)
{
    struct salt_table t;
    g_autoptr(GError) error = NULL;
    uint32_t b;

    make_table(&t, 65536, SALT_FORMAT_HEX, "", 0);
    g_assert_false(salt_prefix_bucket(&t, (const uint8_t *)"user42", 6, &b));
    g_assert_false(salt_prefix_bucket(&t, (const uint8_t *)"", 0, &b));

    g_assert_true(salt_table_hash_length(&t, 4, &error));
    g_assert_false(salt_prefix_bucket(&t, (const uint8_t *)"use", 3, &b));
    g_assert_true(salt_prefix_bucket(&t, (const uint8_t *)"user", 4, &b));
    g_assert_cmpuint(b, ==, salt_bucket(&t, (const uint8_t *)"user", 4));
    g_assert_true(salt_prefix_bucket(&t, (const uint8_t *)"user42", 6, &b));
    g_assert_cmpuint(b, ==, salt_bucket(&t, (const uint8_t *)"userXYZ", 7));

    g_assert_true(salt_table_hash_delimiter(&t, "##", 2, 2, &error));
    g_assert_false(salt_prefix_bucket(&t, (const uint8_t *)"a##b", 4, &b));
    g_assert_false(salt_prefix_bucket(&t, (const uint8_t *)"a##b#", 5, &b));
    g_assert_true(salt_prefix_bucket(&t, (const uint8_t *)"a##b##", 6, &b));
    g_assert_cmpuint(b, ==, salt_bucket(&t, (const uint8_t *)"a##b", 4));
    /* "###" holds one "##": occurrences do not overlap */
    g_assert_false(salt_prefix_bucket(&t, (const uint8_t *)"a###", 4, &b));
    g_assert_true(salt_prefix_bucket(&t, (const uint8_t *)"a####", 5, &b));
    g_assert_cmpuint(b, ==, salt_bucket(&t, (const uint8_t *)"a##", 3));
    g_assert_no_error(error);
}

/* Test: hashed part of keys, per mode. */
static void
test_hashed_len(void)
{
    struct salt_table t;
    g_autoptr(GError) error = NULL;

    make_table(&t, 16, SALT_FORMAT_BYTE, "", 0);
    g_assert_cmpuint(salt_hashed_len(&t, (const uint8_t *)"abc", 3), ==, 3);
    g_assert_true(salt_table_hash_length(&t, 2, &error));
    g_assert_cmpuint(salt_hashed_len(&t, (const uint8_t *)"abc", 3), ==, 2);
    g_assert_cmpuint(salt_hashed_len(&t, (const uint8_t *)"a", 1), ==, 1);
    g_assert_true(salt_table_hash_delimiter(&t, "#", 1, 2, &error));
    g_assert_cmpuint(salt_hashed_len(&t, (const uint8_t *)"a#b#c", 5), ==, 3);
    g_assert_cmpuint(salt_hashed_len(&t, (const uint8_t *)"a#b", 3), ==, 3);
    g_assert_cmpuint(salt_hashed_len(&t, (const uint8_t *)"##", 2), ==, 1);
    g_assert_true(salt_table_hash_delimiter(&t, "ab", 2, 1, &error));
    g_assert_cmpuint(salt_hashed_len(&t, (const uint8_t *)"xaab", 4), ==, 2);
    g_assert_cmpuint(salt_hashed_len(&t, (const uint8_t *)"xa", 2), ==, 2);
    g_assert_no_error(error);
}

/* A small universe of keys: every string over alphabet up to maxlen. */
static GPtrArray *
universe(const char *alphabet, size_t nalpha, size_t maxlen)
{
    GPtrArray *all = g_ptr_array_new_with_free_func(
        (GDestroyNotify)g_byte_array_unref);
    size_t from = 0;

    g_ptr_array_add(all, g_byte_array_new());
    for (size_t len = 1; len <= maxlen; len++) {
        size_t to = all->len;
        for (size_t i = from; i < to; i++) {
            GByteArray *base = all->pdata[i];
            for (size_t a = 0; a < nalpha; a++) {
                GByteArray *k = g_byte_array_new();
                g_byte_array_append(k, base->data, base->len);
                g_byte_array_append(k, (const uint8_t *)&alphabet[a], 1);
                g_ptr_array_add(all, k);
            }
        }
        from = to;
    }
    return all;
}

static int
cmp(const GByteArray *a, const GByteArray *b)
{
    size_t n = MIN(a->len, b->len);
    int c = n > 0 ? memcmp(a->data, b->data, n) : 0;

    return c != 0 ? c : (a->len > b->len) - (a->len < b->len);
}

/* Whether k lies in the client's logical range, HBase semantics. */
static gboolean
in_range(gboolean reversed, const GByteArray *start, const GByteArray *stop,
         const GByteArray *k)
{
    if (!reversed)
        return cmp(k, start) >= 0 && (stop->len == 0 || cmp(k, stop) < 0);
    return (start->len == 0 || cmp(k, start) <= 0) &&
           (stop->len == 0 || cmp(k, stop) > 0);
}

/* Test: salt_fixed_bucket never claims one bucket for a range whose keys
 * fall in several: checked on every range over a small key universe. */
static void
test_fixed_bucket_sound(void)
{
    static const char alpha[] = {0x00, 0x01, '#', (char)0xfe, (char)0xff};
    g_autoptr(GPtrArray) keys = universe(alpha, sizeof(alpha), 4);
    g_autoptr(GPtrArray) bounds = universe(alpha, sizeof(alpha), 3);
    g_autoptr(GError) error = NULL;
    struct salt_table tables[5];
    unsigned claimed = 0;

    make_table(&tables[0], 65536, SALT_FORMAT_BYTE, "", 0);
    make_table(&tables[1], 65536, SALT_FORMAT_BYTE, "", 0);
    g_assert_true(salt_table_hash_length(&tables[1], 2, &error));
    make_table(&tables[2], 65536, SALT_FORMAT_BYTE, "", 0);
    g_assert_true(salt_table_hash_delimiter(&tables[2], "#", 1, 1, &error));
    make_table(&tables[3], 65536, SALT_FORMAT_BYTE, "", 0);
    g_assert_true(salt_table_hash_delimiter(&tables[3], "\xff\xff", 2, 1,
                                            &error));
    make_table(&tables[4], 65536, SALT_FORMAT_BYTE, "", 0);
    g_assert_true(salt_table_hash_length(&tables[4], 1, &error));
    g_assert_no_error(error);

    for (size_t ti = 0; ti < G_N_ELEMENTS(tables); ti++) {
        const struct salt_table *t = &tables[ti];
        g_autofree uint32_t *kb = g_new(uint32_t, keys->len);

        for (size_t k = 0; k < keys->len; k++) {
            GByteArray *key = keys->pdata[k];
            kb[k] = salt_bucket(t, key->data, key->len);
        }
        for (size_t s = 0; s < bounds->len; s++) {
            for (size_t e = 0; e < bounds->len; e++) {
                GByteArray *start = bounds->pdata[s], *stop = bounds->pdata[e];
                for (int rev = 0; rev < 2; rev++) {
                    uint32_t b;
                    if (!salt_fixed_bucket(t, rev, start->data, start->len,
                                           stop->data, stop->len, &b))
                        continue;
                    claimed++;
                    for (size_t k = 0; k < keys->len; k++) {
                        /* The empty key cannot exist in HBase. */
                        if (((GByteArray *)keys->pdata[k])->len == 0)
                            continue;
                        if (in_range(rev, start, stop, keys->pdata[k]))
                            g_assert_cmpuint(kb[k], ==, b);
                    }
                }
            }
        }
    }
    g_assert_cmpuint(claimed, >, 1000);
}

static gboolean
fixed(const struct salt_table *t, gboolean reversed, const char *start,
      size_t slen, const char *stop, size_t elen, uint32_t *b)
{
    return salt_fixed_bucket(t, reversed, (const uint8_t *)start, slen,
                             (const uint8_t *)stop, elen, b);
}

/* Test: the ranges that must narrow to one bucket do. */
static void
test_fixed_bucket_cases(void)
{
    struct salt_table t;
    g_autoptr(GError) error = NULL;
    uint32_t b;

    /* whole: single rows only */
    make_table(&t, 16, SALT_FORMAT_BYTE, "", 0);
    g_assert_true(fixed(&t, FALSE, "row1", 4, "row1", 4, &b));
    g_assert_cmpuint(b, ==, salt_bucket(&t, (const uint8_t *)"row1", 4));
    g_assert_true(fixed(&t, FALSE, "row1", 4, "row1\0", 5, &b));
    g_assert_cmpuint(b, ==, salt_bucket(&t, (const uint8_t *)"row1", 4));
    g_assert_true(fixed(&t, TRUE, "row1\0", 5, "row1", 4, &b));
    g_assert_cmpuint(b, ==, salt_bucket(&t, (const uint8_t *)"row1\0", 5));
    g_assert_false(fixed(&t, FALSE, "row1", 4, "row2", 4, &b));
    g_assert_false(fixed(&t, FALSE, "", 0, "", 0, &b));
    g_assert_false(fixed(&t, TRUE, "row1", 4, "row1\0", 5, &b));

    /* delimiter:#:1: a prefix scan on "user#" style keys */
    g_assert_true(salt_table_hash_delimiter(&t, "#", 1, 1, &error));
    g_assert_true(fixed(&t, FALSE, "u1#", 3, "u1$", 3, &b));
    g_assert_cmpuint(b, ==, salt_bucket(&t, (const uint8_t *)"u1", 2));
    g_assert_true(fixed(&t, FALSE, "u1#2024", 7, "u1#2025", 7, &b));
    g_assert_cmpuint(b, ==, salt_bucket(&t, (const uint8_t *)"u1", 2));
    g_assert_true(fixed(&t, FALSE, "u1#2024", 7, "u1$", 3, &b));
    g_assert_false(fixed(&t, FALSE, "u1#", 3, "u1%", 3, &b));
    g_assert_false(fixed(&t, FALSE, "u1#", 3, "", 0, &b));
    g_assert_false(fixed(&t, FALSE, "u1", 2, "u1$", 3, &b));
    /* happybase's reversed prefix scan: start=increment(prefix) */
    g_assert_true(fixed(&t, TRUE, "u1$", 3, "u1#", 3, &b) == FALSE);
    g_assert_true(fixed(&t, TRUE, "u1#\xff", 4, "u1#", 3, &b));
    g_assert_cmpuint(b, ==, salt_bucket(&t, (const uint8_t *)"u1", 2));
    g_assert_true(fixed(&t, TRUE, "u1#9", 4, "u1#0", 4, &b));
    g_assert_cmpuint(b, ==, salt_bucket(&t, (const uint8_t *)"u1", 2));
    /* (u1", u1#9] holds u1"x: not one bucket */
    g_assert_false(fixed(&t, TRUE, "u1#9", 4, "u1\"", 3, &b));
    g_assert_false(fixed(&t, TRUE, "", 0, "u1#", 3, &b));

    /* length:3: forward to the end of table only after an all-0xff part */
    g_assert_true(salt_table_hash_length(&t, 3, &error));
    g_assert_true(fixed(&t, FALSE, "abcd", 4, "abd", 3, &b));
    g_assert_cmpuint(b, ==, salt_bucket(&t, (const uint8_t *)"abc", 3));
    g_assert_true(fixed(&t, FALSE, "\xff\xff\xff\x01", 4, "", 0, &b));
    g_assert_false(fixed(&t, FALSE, "\xff\xfe\xff\x01", 4, "", 0, &b));
    g_assert_true(fixed(&t, FALSE, "ab\xff", 3, "ac", 2, &b));
    g_assert_false(fixed(&t, FALSE, "ab\xff", 3, "ac\x00", 3, &b));
    g_assert_no_error(error);
}

/* Test: per-bucket scan bounds hold exactly the bucket's rows of the
 * logical range, checked over a small universe of physical keys. */
static void
test_scan_range_exact(void)
{
    static const char alpha[] = {0x00, 0x01, 0x02, 0x03, '#', (char)0xfe,
                                 (char)0xff};
    g_autoptr(GPtrArray) phys = universe(alpha, sizeof(alpha), 3);
    g_autoptr(GPtrArray) logical = universe(alpha, sizeof(alpha), 2);
    struct salt_table tables[3];

    make_table(&tables[0], 4, SALT_FORMAT_BYTE, "", 0);
    make_table(&tables[1], 4, SALT_FORMAT_BYTE, "\xff", 1);
    make_table(&tables[2], 256, SALT_FORMAT_BYTE, "", 0);

    for (size_t ti = 0; ti < G_N_ELEMENTS(tables); ti++) {
        const struct salt_table *t = &tables[ti];
        static const uint32_t some[] = {0, 1, 2, 3, 254, 255};

        for (size_t bi = 0; bi < G_N_ELEMENTS(some); bi++) {
            uint32_t b = some[bi];
            uint8_t prefix[SALT_MAX_PREFIX], end[SALT_MAX_PREFIX];
            size_t plen, elen;

            if (b >= t->buckets)
                continue;
            plen = salt_write_prefix(t, b, prefix);
            memcpy(end, prefix, plen);
            elen = salt_successor(end, plen);

            for (size_t s = 0; s < logical->len; s++) {
                for (size_t e = 0; e < logical->len; e++) {
                    GByteArray *start = logical->pdata[s];
                    GByteArray *stop = logical->pdata[e];
                    for (int rev = 0; rev < 2; rev++) {
                        uint8_t sbuf[SALT_MAX_PREFIX + 8];
                        uint8_t ebuf[SALT_MAX_PREFIX + 8];
                        GByteArray ps = {sbuf, 0}, pe = {ebuf, 0};

                        ps.len = (guint)salt_scan_start(
                            t, b, rev, start->data, start->len, sbuf);
                        pe.len = (guint)salt_scan_stop(
                            t, b, rev, stop->data, stop->len, ebuf);
                        for (size_t x = 0; x < phys->len; x++) {
                            GByteArray *k = phys->pdata[x];
                            gboolean ours = k->len >= plen &&
                                            memcmp(k->data, prefix, plen) == 0;
                            GByteArray l = {k->data + plen,
                                            (guint)(k->len - plen)};
                            gboolean want =
                                ours && in_range(rev, start, stop, &l);
                            gboolean got = in_range(rev, &ps, &pe, k);

                            if (got == want)
                                continue;
                            /* The two documented reversed-scan edges. */
                            if (rev && start->len == 0 && got && !ours &&
                                k->len == elen &&
                                memcmp(k->data, end, elen) == 0)
                                continue;
                            if (rev && stop->len == 0 && want &&
                                k->len == plen)
                                continue;
                            g_test_message("table %zu bucket %u rev %d "
                                           "phys %zu", ti, b, rev, x);
                            g_assert_cmpint(got, ==, want);
                        }
                    }
                }
            }
        }
    }
}

/* Test: the bound values themselves, at the 0xff edges. */
static void
test_scan_range_cases(void)
{
    struct salt_table t;
    uint8_t out[SALT_MAX_PREFIX + 8];

    make_table(&t, 16, SALT_FORMAT_BYTE, "", 0);
    g_assert_cmpuint(salt_scan_stop(&t, 15, FALSE, NULL, 0, out), ==, 1);
    g_assert_cmpmem(out, 1, "\x10", 1);
    g_assert_cmpuint(salt_scan_start(&t, 3, FALSE, NULL, 0, out), ==, 1);
    g_assert_cmpmem(out, 1, "\x03", 1);
    g_assert_cmpuint(salt_scan_start(&t, 3, TRUE, NULL, 0, out), ==, 1);
    g_assert_cmpmem(out, 1, "\x04", 1);
    g_assert_cmpuint(salt_scan_stop(&t, 3, TRUE, NULL, 0, out), ==, 1);
    g_assert_cmpmem(out, 1, "\x03", 1);
    g_assert_cmpuint(salt_scan_start(&t, 3, FALSE, (const uint8_t *)"ab", 2,
                                     out), ==, 3);
    g_assert_cmpmem(out, 3, "\x03" "ab", 3);

    make_table(&t, 256, SALT_FORMAT_BYTE, "", 0);
    g_assert_cmpuint(salt_scan_stop(&t, 255, FALSE, NULL, 0, out), ==, 0);
    g_assert_cmpuint(salt_scan_start(&t, 255, TRUE, NULL, 0, out), ==, 0);
    g_assert_cmpuint(salt_scan_stop(&t, 254, FALSE, NULL, 0, out), ==, 1);
    g_assert_cmpmem(out, 1, "\xff", 1);

    make_table(&t, 65536, SALT_FORMAT_BYTE, "", 0);
    g_assert_cmpuint(salt_scan_stop(&t, 0x12ff, FALSE, NULL, 0, out), ==, 1);
    g_assert_cmpmem(out, 1, "\x13", 1);
    g_assert_cmpuint(salt_scan_stop(&t, 0xffff, FALSE, NULL, 0, out), ==, 0);

    make_table(&t, 256, SALT_FORMAT_BYTE, "\xff", 1);
    g_assert_cmpuint(salt_scan_stop(&t, 7, FALSE, NULL, 0, out), ==, 1);
    g_assert_cmpmem(out, 1, "\x08", 1);

    make_table(&t, 16, SALT_FORMAT_HEX, "-", 1);
    g_assert_cmpuint(salt_scan_stop(&t, 15, FALSE, NULL, 0, out), ==, 2);
    g_assert_cmpmem(out, 2, "f.", 2);
    g_assert_cmpuint(salt_scan_stop(&t, 9, FALSE, (const uint8_t *)"x", 1,
                                    out), ==, 3);
    g_assert_cmpmem(out, 3, "9-x", 3);
}

/* Test: salt_successor. */
static void
test_successor(void)
{
    uint8_t a[] = {'a', 0xff, 0xff}, b[] = {0xff, 0xff}, c[] = {0x00};

    g_assert_cmpuint(salt_successor(a, 3), ==, 1);
    g_assert_cmpuint(a[0], ==, 'b');
    g_assert_cmpuint(salt_successor(b, 2), ==, 0);
    g_assert_cmpuint(salt_successor(c, 1), ==, 1);
    g_assert_cmpuint(c[0], ==, 1);
    g_assert_cmpuint(salt_successor(NULL, 0), ==, 0);
}

/* Test: 100000 random keys spread over 16 buckets within 5% of even. */
static void
test_spread(void)
{
    g_autoptr(GRand) rand = g_rand_new_with_seed(20240601);
    struct salt_table t;
    unsigned count[16] = {0};
    const unsigned n = 100000;

    make_table(&t, 16, SALT_FORMAT_HEX, "", 0);
    for (unsigned i = 0; i < n; i++) {
        uint8_t key[24];
        size_t len = (size_t)g_rand_int_range(rand, 1, 24);

        for (size_t j = 0; j < len; j++)
            key[j] = (uint8_t)g_rand_int_range(rand, 0, 256);
        count[salt_bucket(&t, key, len)]++;
    }
    for (unsigned b = 0; b < 16; b++) {
        g_assert_cmpuint(count[b], >=, n / 16 * 95 / 100);
        g_assert_cmpuint(count[b], <=, n / 16 * 105 / 100);
    }

    /* Sequential keys, the hotspot salting exists for, spread as well. */
    memset(count, 0, sizeof(count));
    for (unsigned i = 0; i < n; i++) {
        char key[32];
        int len = g_snprintf(key, sizeof(key), "row%08u", i);
        count[salt_bucket(&t, (const uint8_t *)key, (size_t)len)]++;
    }
    for (unsigned b = 0; b < 16; b++) {
        g_assert_cmpuint(count[b], >=, n / 16 * 95 / 100);
        g_assert_cmpuint(count[b], <=, n / 16 * 105 / 100);
    }
}

/* Test: with delimiter:#:1, keys sharing the first field share a bucket,
 * and different first fields still spread. */
static void
test_delimiter_share(void)
{
    struct salt_table t;
    g_autoptr(GError) error = NULL;
    g_autoptr(GHashTable) seen = g_hash_table_new(NULL, NULL);

    make_table(&t, 16, SALT_FORMAT_BYTE, "", 0);
    g_assert_true(salt_table_hash_delimiter(&t, "#", 1, 1, &error));
    g_assert_no_error(error);
    for (unsigned u = 0; u < 200; u++) {
        g_autofree char *user = g_strdup_printf("user%u", u);
        uint32_t want = salt_bucket(&t, (const uint8_t *)user, strlen(user));

        g_hash_table_add(seen, GUINT_TO_POINTER(want + 1));
        for (unsigned i = 0; i < 50; i++) {
            g_autofree char *key =
                g_strdup_printf("%s#%u#%s", user, i * 7919, i % 2 ? "x" : "");
            g_assert_cmpuint(salt_bucket(&t, (const uint8_t *)key,
                                         strlen(key)), ==, want);
        }
    }
    g_assert_cmpuint(g_hash_table_size(seen), ==, 16);
}

/* Test: HBase shell escaping and the --explain-key report. */
static void
test_explain(void)
{
    struct salt_table t;
    g_autofree char *esc = salt_escape((const uint8_t *)"a\\b\x00~\x7f ", 7);
    g_autofree char *hex = salt_hex((const uint8_t *)"\x00\xab", 2);
    g_autofree char *report = NULL;
    g_autofree char *want_line = NULL;
    uint8_t phys[SALT_MAX_PREFIX + 16];
    size_t n;
    g_autofree char *phex = NULL;

    g_assert_cmpstr(esc, ==, "a\\x5Cb\\x00~\\x7F ");
    g_assert_cmpstr(hex, ==, "00ab");

    make_table(&t, 16, SALT_FORMAT_BYTE, "", 0);
    report = salt_explain(&t, (const uint8_t *)"user42", 6);
    n = salt_key(&t, (const uint8_t *)"user42", 6, phys, sizeof(phys));
    phex = salt_hex(phys, n);
    want_line = g_strdup_printf("physical (hex): %s\n", phex);
    g_assert_nonnull(strstr(report, want_line));
    g_assert_nonnull(strstr(report, "physical:       \\x0Cuser42\n"));
    g_assert_nonnull(strstr(report, "bucket:         12 of 16\n"));
    g_assert_nonnull(strstr(report, "row limit:      32766 bytes (HBase's "
                                    "32767 less the 1-byte prefix)\n"));
}

int
main(int argc, char **argv)
{
    for (size_t i = 0; i < sizeof(long_key); i++)
        long_key[i] = (uint8_t)(i * 7 + 3);

    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/salt/xxh3", test_xxh3);
    g_test_add_func("/salt/vectors", test_vectors);
    g_test_add_func("/salt/width", test_width);
    g_test_add_func("/salt/prefix-last", test_prefix_last);
    g_test_add_func("/salt/init-errors", test_init_errors);
    g_test_add_func("/salt/key-outcap", test_key_outcap);
    g_test_add_func("/salt/strip/roundtrip", test_strip_roundtrip);
    g_test_add_func("/salt/strip/invalid", test_strip_invalid);
    g_test_add_func("/salt/hashed-len", test_hashed_len);
    g_test_add_func("/salt/prefix-bucket", test_prefix_bucket);
    g_test_add_func("/salt/fixed-bucket/sound", test_fixed_bucket_sound);
    g_test_add_func("/salt/fixed-bucket/cases", test_fixed_bucket_cases);
    g_test_add_func("/salt/scan-range/exact", test_scan_range_exact);
    g_test_add_func("/salt/scan-range/cases", test_scan_range_cases);
    g_test_add_func("/salt/successor", test_successor);
    g_test_add_func("/salt/spread", test_spread);
    g_test_add_func("/salt/delimiter-share", test_delimiter_share);
    g_test_add_func("/salt/explain", test_explain);
    return g_test_run();
}
