/* salt.h: the row-key salt mapping (a storage format), pure functions. */
#pragma once

#include <glib.h>
#include <stddef.h>
#include <stdint.h>

#include "legacy.h"

/*
 * THE MAPPING.  Changing anything below silently loses data: rows written
 * before the change are no longer found.  tests/unit/test_salt.c pins it
 * with vectors computed outside this file.
 *
 *   hashed  = the hashed part of the logical key (see hash_part below)
 *   bucket  = XXH3_64bits(hashed, len, seed 0) % buckets
 *   salt    = bucket written big-endian with a fixed width per table:
 *     byte     1 raw byte when buckets <= 256, else 2 raw bytes
 *     hex      lowercase hex digits; width = hex digits of (buckets - 1),
 *              at least 1 (16 -> 1 "0".."f", 256 -> 2, 257 -> 3, 65536 -> 4)
 *     decimal  zero-padded decimal; width = decimal digits of (buckets - 1),
 *              at least 1 (10 -> 1, 16 -> 2, 1000 -> 3, 65536 -> 5)
 *   physical = salt || separator || logical key
 *
 * hash_part (the hashed part is always a prefix of the key):
 *   whole            the whole key
 *   length:N         the first min(N, len) bytes (N >= 1)
 *   delimiter:SEP:K  the key up to, not including, the K-th occurrence of
 *                    SEP (K >= 1).  Occurrences are counted left to right
 *                    without overlap ("###" holds one "##").  Fewer than K
 *                    occurrences: the whole key.
 *
 * buckets == 1 still writes a salt ("\x00", "0"), so that going from 1 to
 * more buckets later is a migration like any other, not a special case.
 *
 * Ordering: a fixed-width prefix keeps each bucket's rows contiguous and in
 * logical order inside it, which the scan helpers below rely on.
 *
 * ADOPTED MAPPINGS (salt_mapping, salt_table_init_mapping): other tools'
 * formats, reproduced exactly so the proxy serves the rows those tools
 * wrote where they lie.  All hash the whole key; none has options.
 *   jbytes(k)  = Java's Arrays.hashCode(byte[]): h = 1, then for each byte
 *                h = 31 * h + b, b signed (-128..127), int32 wrapping
 *   jstring(k) = Java's String.hashCode(): h = 0, then h = 31 * h + u for
 *                each UTF-16 code unit u of k read as UTF-8 (a code point
 *                over U+FFFF is two units, its surrogate pair)
 *   x % N      = Java's: truncates toward zero, the sign of x
 *
 *   phoenix    Apache Phoenix SALT_BUCKETS = N, N 1..256: one raw byte
 *              abs(jbytes(key) % N), 0..N-1, then the key.
 *   hbasewd    HBaseWD RowKeyDistributorByHashPrefix(OneByteSimpleHash(N)),
 *              N 1..256: one raw byte (byte)(abs(jbytes(key)) % N), abs
 *              taken on the int.  abs(Integer.MIN_VALUE) stays negative,
 *              so a key hashing to it gets the byte (-(2^31 mod N)) & 0xff:
 *              0 when N is a power of two, else 256 - (2^31 mod N), which
 *              may lie outside 0..N-1 (N = 10: 0xf8).  HBaseWD's own scans
 *              never read such a byte; the proxy does: when it is >= N it
 *              is one more bucket, number N (buckets = N + 1).
 *   bigtable-sample  the Cloud Bigtable key-salting sample, N 1..32768:
 *              decimal(jstring(key) % N) "-" key.  The salt is negative
 *              for a negative hash ("-3-key"), no zero padding, no "-0".
 *              Bucket b < N is salt b, bucket N - 1 + i is salt -i
 *              (buckets = 2N - 1).  The sample's keys are Java strings
 *              written as UTF-8: only valid UTF-8 (no surrogate code
 *              points, no overlong forms) is such a key (salt_key_valid).
 *              Salts differ in length, but no salt "S-" is a prefix of
 *              another ('-' sorts below every digit), so each bucket's
 *              rows are still one contiguous range [S-, S.).
 *
 * For every mapping, buckets counts the distinct salts (what a full scan
 * reads) and modulus is the tool's N; for xxh3 and phoenix they are equal.
 */

#define SALT_MAX_BUCKETS 65536u
#define SALT_MAX_SEPARATOR 16 /* bytes of salt_separator */
#define SALT_MAX_DELIMITER 16 /* bytes of SEP in delimiter:SEP:K */
#define SALT_MAX_WIDTH 6      /* decimal 65535; bigtable "-32767" */
#define SALT_MAX_PREFIX (SALT_MAX_WIDTH + SALT_MAX_SEPARATOR)

#define SALT_ERROR salt_error_quark()
GQuark salt_error_quark(void);

typedef enum {
    SALT_ERROR_BUCKETS,   /* bucket count outside 1..65536 */
    SALT_ERROR_SEPARATOR, /* separator too long */
    SALT_ERROR_HASH_PART, /* bad length:N or delimiter:SEP:K */
} salt_error_t;

typedef enum {
    SALT_FORMAT_BYTE = 0,
    SALT_FORMAT_HEX = 1,
    SALT_FORMAT_DECIMAL = 2,
} salt_format_t;

typedef enum {
    SALT_MAPPING_XXH3 = 0, /* ours, the default */
    SALT_MAPPING_PHOENIX = 1,
    SALT_MAPPING_HBASEWD = 2,
    SALT_MAPPING_BIGTABLE = 3, /* the Cloud Bigtable key-salting sample */
} salt_mapping_t;

typedef enum {
    SALT_HASH_WHOLE = 0,
    SALT_HASH_LENGTH = 1,
    SALT_HASH_DELIMITER = 2,
} salt_hash_t;

/* One table's salt policy.  Plain data: copy it freely, nothing to free. */
struct salt_table {
    uint32_t buckets; /* distinct salts, 1..65536 */
    salt_format_t format;
    uint8_t width;                   /* bytes or digits of the salt itself */
    uint8_t sep_len;                 /* 0..SALT_MAX_SEPARATOR */
    uint8_t sep[SALT_MAX_SEPARATOR]; /* written after the salt */
    salt_hash_t hash;
    uint32_t hash_len;                 /* N of length:N */
    uint32_t hash_count;               /* K of delimiter:SEP:K */
    uint8_t delim_len;                 /* bytes of SEP */
    uint8_t delim[SALT_MAX_DELIMITER]; /* SEP of delimiter:SEP:K */
    salt_mapping_t mapping;
    uint32_t modulus;          /* N of the hash */
    uint8_t odd_salt;          /* hbasewd with buckets == N + 1:
                                          the salt byte of bucket N */
    struct legacy_rule legacy; /* keys kept unsalted (legacy.h);
                                          none after salt_table_init */
};

/* Set up a policy hashing the whole key; computes the width. */
gboolean salt_table_init(struct salt_table *t, uint32_t buckets,
                         salt_format_t format, const void *sep, size_t sep_len,
                         GError **error) G_GNUC_WARN_UNUSED_RESULT;

/* Set up an adopted mapping (see above) for the tool's n; mapping must
 * not be SALT_MAPPING_XXH3. */
gboolean salt_table_init_mapping(struct salt_table *t, salt_mapping_t mapping,
                                 uint32_t n, GError **error)
    G_GNUC_WARN_UNUSED_RESULT;

/* The config names of the mappings ([table:*] salt_mapping), indexed by
 * salt_mapping_t, then NULL. */
extern const char *const salt_mapping_names[];

/* The config name of a mapping: "xxh3", "phoenix", "hbasewd",
 * "bigtable-sample". */
const char *salt_mapping_name(salt_mapping_t mapping);

/* Switch the policy to length:N. */
gboolean salt_table_hash_length(struct salt_table *t, uint32_t n,
                                GError **error) G_GNUC_WARN_UNUSED_RESULT;

/* Switch the policy to delimiter:SEP:K. */
gboolean salt_table_hash_delimiter(struct salt_table *t, const void *delim,
                                   size_t delim_len, uint32_t k,
                                   GError **error) G_GNUC_WARN_UNUSED_RESULT;

/* Whether two policies map every key the same way (legacy rule
 * included). */
gboolean salt_table_equal(const struct salt_table *a,
                          const struct salt_table *b);

/* Policy as config text, e.g. "buckets=16 salt_format=hex ..." (g_free). */
char *salt_table_describe(const struct salt_table *t);

/* Length of the hashed part of a key (it is always a prefix of the key). */
size_t salt_hashed_len(const struct salt_table *t, const uint8_t *key,
                       size_t len);

/* Bucket of a logical key, 0..buckets-1. */
uint32_t salt_bucket(const struct salt_table *t, const uint8_t *key,
                     size_t len);

/* salt_bucket, also giving the hashed part's length and its XXH3 (for
 * SALT_MAPPING_XXH3 the hash the bucket is taken from): the key
 * visualizer counts by them without hashing the key again. */
uint32_t salt_bucket_part(const struct salt_table *t, const uint8_t *key,
                          size_t len, size_t *part_len, guint64 *part_hash);

/* Bytes in front of every logical key: salt width + separator; for
 * bigtable-sample, whose salts differ in length, the longest prefix. */
static inline size_t
salt_prefix_len(const struct salt_table *t)
{
    return (size_t)t->width + t->sep_len;
}

/* Bytes in front of the logical keys of one bucket (< buckets). */
size_t salt_bucket_prefix_len(const struct salt_table *t, uint32_t bucket);

/* Whether the table can hold this logical key at all: FALSE only for a
 * bigtable-sample table and a key that is not valid UTF-8 (no key the
 * sample writes).  Lengths are salt_max_row's business. */
gboolean salt_key_valid(const struct salt_table *t, const uint8_t *key,
                        size_t len);

/* Whether every salt byte (separators aside) is below 0x80. */
gboolean salt_ascii(const struct salt_table *t);

/* The tool's own hash of a key for an adopted mapping (jbytes or
 * jstring above, as an int32); 0 for xxh3.  For tests and --explain-key. */
int32_t salt_java_hash(const struct salt_table *t, const uint8_t *key,
                       size_t len);

/* HBase refuses longer rows (HConstants.MAX_ROW_LENGTH). */
#define SALT_HBASE_MAX_ROW 32767u

/* The longest logical key the table can store: every physical key is
 * longer than its logical key by the prefix, and HBase's limit counts
 * the physical one.  Not part of the mapping, a consequence of it.
 * bigtable-sample counts its longest prefix, for every key. */
static inline size_t
salt_max_row(const struct salt_table *t)
{
    return SALT_HBASE_MAX_ROW - salt_prefix_len(t);
}

/* Write salt and separator of a bucket (< buckets) to out, which holds
 * salt_prefix_len(t) bytes; returns the length written, which is
 * salt_prefix_len(t) but for bigtable-sample's shorter salts. */
size_t salt_write_prefix(const struct salt_table *t, uint32_t bucket,
                         uint8_t *out);

/* Write the physical key of a logical key.  Returns its length, or 0
 * (writing nothing) when outcap < salt_prefix_len(t) + len (the longest
 * prefix, whatever the key's bucket). */
size_t salt_key(const struct salt_table *t, const uint8_t *key, size_t len,
                uint8_t *out, size_t outcap);

/* Split a physical key into bucket and logical key (pointing into phys).
 * FALSE when it carries no valid salt of this table: shorter than the
 * prefix, a byte that is no digit of the format (hex must be lowercase),
 * a bucket >= buckets, or a separator mismatch; for an adopted mapping,
 * a salt the tool never writes ("03-", "-0-", an hbasewd byte >= N but
 * its odd one).  It does not recompute the
 * hash: compare *bucket with salt_bucket() of the logical key for that. */
gboolean salt_strip(const struct salt_table *t, const uint8_t *phys,
                    size_t len, const uint8_t **logical, size_t *logical_len,
                    uint32_t *bucket);

/* Whether every key starting with prefix has the same hashed part, so a
 * prefix scan needs one bucket; sets *bucket then.  whole: never;
 * length:N: len >= N; delimiter:SEP:K: prefix holds K occurrences. */
gboolean salt_prefix_bucket(const struct salt_table *t, const uint8_t *prefix,
                            size_t len, uint32_t *bucket);

/*
 * Whether every key a scan can return lies in one bucket; sets *bucket then.
 * start/stop are the client's logical rows with HBase semantics: forward
 * [start, stop), reversed (stop, start], empty = unbounded.  TRUE when the
 * range holds at most the single row start (stop == start, or forward
 * stop == start "\0", reversed start == stop "\0"; covers HBase's "get
 * scan" quirk either way), or when all its keys share a prefix that fixes
 * the hashed part (salt_prefix_bucket), e.g. start "u1#" stop "u1$" with
 * delimiter:#:1.  FALSE means: scan every bucket.
 */
gboolean salt_fixed_bucket(const struct salt_table *t, gboolean reversed,
                           const uint8_t *start, size_t start_len,
                           const uint8_t *stop, size_t stop_len,
                           uint32_t *bucket);

/*
 * Per-bucket physical bounds of a logical scan.  out holds
 * salt_prefix_len(t) + len bytes; the return is the bound's length, 0 for
 * an empty (unbounded) bound.  With reversed == FALSE start is inclusive
 * and stop exclusive; reversed, start is the high inclusive row and stop
 * the low exclusive one, as in HBase.
 *
 *   forward  start: prefix || start (empty start: prefix)
 *            stop:  prefix || stop; empty stop: the end of the bucket, i.e.
 *                   the prefix incremented (trailing 0xff bytes dropped);
 *                   0 (table end) only when the prefix is all 0xff, where
 *                   nothing can follow the bucket anyway.
 *   reversed start: prefix || start; empty start: the end of the bucket as
 *                   above.  HBase includes a row equal to it, which belongs
 *                   to the next bucket (or is no salted row): the caller
 *                   must drop rows whose salt_strip bucket is not this one.
 *            stop:  prefix || stop; empty stop: the prefix itself, which as
 *                   an exclusive bound leaves out only the physical key of
 *                   the empty logical key; HBase holds no empty rows, and
 *                   the proxy must refuse to write one.
 */
size_t salt_scan_start(const struct salt_table *t, uint32_t bucket,
                       gboolean reversed, const uint8_t *start, size_t len,
                       uint8_t *out);
size_t salt_scan_stop(const struct salt_table *t, uint32_t bucket,
                      gboolean reversed, const uint8_t *stop, size_t len,
                      uint8_t *out);

/* Turn key into the first key after every key it prefixes: drop trailing
 * 0xff bytes, then add one to the last byte.  Returns the new length; 0
 * means there is none (all 0xff or empty): the bound is the table end. */
size_t salt_successor(uint8_t *key, size_t len);

/* Bytes as HBase's shell prints them (Bytes.toStringBinary): printable
 * ASCII as is, anything else and '\\' as \xNN uppercase.  g_free. */
char *salt_escape(const uint8_t *p, size_t len);

/* Bytes as lowercase hex.  g_free. */
char *salt_hex(const uint8_t *p, size_t len);

/* Multi-line report for --explain-key: policy, hashed part, bucket,
 * physical key in hex and escaped.  g_free. */
char *salt_explain(const struct salt_table *t, const uint8_t *key, size_t len);

/* Forward-looking salting (legacy.h holds the rule): */

/* Where a logical key of table t is stored. */
legacy_route_t salt_route(const struct salt_table *t, const uint8_t *key,
                          size_t len);

/*
 * Which logical key a stored row of table t belongs to: SALTED when phys
 * carries a valid salt of t naming the bucket of what follows, and the
 * rule calls that new (*bucket is set); else LEGACY when the rule calls
 * phys itself legacy; else NONE.  *logical points into phys.
 */
legacy_owner_t salt_owner(const struct salt_table *t, const uint8_t *phys,
                          size_t len, const uint8_t **logical,
                          size_t *logical_len, uint32_t *bucket);
