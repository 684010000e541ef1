/* bench.h: shared types of hbase-bench, the event-driven HBase Thrift load generator. */
#pragma once

#include <glib.h>
#include <stddef.h>
#include <stdint.h>

#include "salt.h"
#include "wire.h"

/* ---- latency histogram (HdrHistogram-like log buckets) ---- */

/* 64 linear sub-buckets per power of two: every recorded value is known to
 * within 1/64 (1.6 %), whatever its magnitude, in a fixed 30 KiB array. */
#define BENCH_HIST_SUB_BITS 6
#define BENCH_HIST_SLOTS                                                      \
    ((64 - BENCH_HIST_SUB_BITS + 1) << BENCH_HIST_SUB_BITS)

struct bench_hist {
    uint64_t count;
    uint64_t min, max;
    double sum;
    uint64_t slots[BENCH_HIST_SLOTS];
};

void bench_hist_reset(struct bench_hist *h);
void bench_hist_add(struct bench_hist *h, uint64_t v);
/* Value at quantile q (0..1): the midpoint of the slot holding it. */
uint64_t bench_hist_quantile(const struct bench_hist *h, double q);

/* ---- key popularity ---- */

typedef enum {
    BENCH_KEYS_UNIFORM = 0,
    BENCH_KEYS_ZIPF = 1,
    BENCH_KEYS_MONOTONIC = 2,
    BENCH_KEYS_CELEBRITY_USER = 3,
    BENCH_KEYS_APP_USER_TS = 4,
} bench_keydist_t;

/* Where a prefix scan of a shaped key space points (--scan-target). */
typedef enum {
    BENCH_TARGET_ANY = 0,       /* a row drawn uniformly: users by size */
    BENCH_TARGET_CELEBRITY = 1, /* the celebrity user's rows */
    BENCH_TARGET_OTHERS = 2,    /* any row but the celebrity's */
} bench_target_t;

/* Logical keys: "k%010u" for the loaded key space (sorts like its index,
 * so a range of R indices is a range of R rows), "t%016u" for
 * timestamp-like keys written by the monotonic workload.  Two shapes
 * model the salting articles' row keys instead of a popularity over k:
 *   celebrity-user  "u%07u-%06u-%03u"  user_id-xxx-yyy; one user (the
 *                   celebrity) owns a --celebrity share of the rows and of
 *                   the writes, the others share the rest evenly;
 *   app-user-ts     "a%05u,u%07u,%013u"  app_id,user_token,timestamp;
 *                   every user of every app has the same event count.
 * Index order is not key order for these, so a range of indices is not a
 * range of rows. */
#define BENCH_KEY_MAX 32

struct bench_key {
    uint8_t len;
    uint8_t k[BENCH_KEY_MAX + SALT_MAX_PREFIX];
};

struct bench_keys {
    bench_keydist_t dist;
    uint64_t rows; /* key space: indices 0..rows-1 */
    double zipf_s;
    double celebrity; /* share of operations on one hot key, or on
                             * the hot user (celebrity-user) */
    uint64_t celebrity_idx;
    uint64_t users; /* celebrity-user: users; app-user-ts: per app */
    uint64_t apps;  /* app-user-ts */
    uint64_t celebrity_user;
    uint64_t celebrity_rows; /* celebrity-user: indices 0..this-1 are its */
    double *zipf_cdf;        /* rows entries, rank order */
    uint64_t mono_next;      /* next monotonic sequence number */
    uint64_t mono_base;      /* microseconds at start: timestamp-like */
    uint64_t rng;
};

/* FALSE (with *why) when the shape's parameters cannot make its keys. */
gboolean bench_keys_init(struct bench_keys *ks, bench_keydist_t dist,
                         uint64_t rows, double zipf_s, double celebrity,
                         uint64_t users, uint64_t apps, uint64_t seed,
                         const char **why);
void bench_keys_free(struct bench_keys *ks);
uint64_t bench_rand(uint64_t *state);
double bench_rand_unit(uint64_t *state);
/* Index of the next key to read under the popularity model. */
uint64_t bench_keys_read_index(struct bench_keys *ks);
/* Next key to read, or to write (monotonic writes take fresh "t" keys). */
void bench_keys_next(struct bench_keys *ks, gboolean write,
                     struct bench_key *out);
void bench_key_of_index(const struct bench_keys *ks, uint64_t idx,
                        struct bench_key *out);
/* Whether keys sort like their indices (the k keys), so that indices i..j
 * are a range of rows. */
gboolean bench_keys_ordered(const struct bench_keys *ks);
/* Index of a row whose prefix a prefix scan reads; -1 when the target
 * has no rows. */
int64_t bench_keys_scan_index(struct bench_keys *ks, bench_target_t target);
/* Length of key up to and including its fields-th field separator (the
 * whole key when it has fewer): "u0000042-" for 1 field of celebrity-user,
 * "a00003,u0000007," for 2 of app-user-ts.  0 for the k keys. */
size_t bench_key_fields(const struct bench_keys *ks, const struct bench_key *k,
                        unsigned fields);

/* ---- requests and replies ---- */

struct bench_rowref {
    const uint8_t *p;
    uint32_t len;
};

struct bench_reply {
    gboolean ok;       /* a REPLY whose success field (or void) came */
    const char *error; /* why not, static or inside the message */
    int32_t i32;       /* success value of scannerOpen* */
    GArray *rows;      /* struct bench_rowref into the message */
};

struct bench_codec {
    wire_proto_t proto;
    gboolean framed;
    struct wire_limits limits;
    int32_t seqid;
    gboolean thrift2; /* THBaseService calls instead of Hbase's */
};

void bench_req_get_row(struct bench_codec *c, struct wire_buf *b,
                       const char *table, const struct bench_key *row,
                       const char *column);
void bench_req_mutate_rows(struct bench_codec *c, struct wire_buf *b,
                           const char *table, const struct bench_key *rows,
                           unsigned n, const char *column,
                           const uint8_t *value, uint32_t vlen);
void bench_req_get_rows(struct bench_codec *c, struct wire_buf *b,
                        const char *table, const struct bench_key *rows,
                        const unsigned *idx, unsigned n);
void bench_req_scan_open(struct bench_codec *c, struct wire_buf *b,
                         const char *table, const uint8_t *start,
                         size_t start_len, const uint8_t *stop,
                         size_t stop_len, int32_t caching);
void bench_req_scan_get_list(struct bench_codec *c, struct wire_buf *b,
                             int32_t id, int32_t n);
void bench_req_scan_close(struct bench_codec *c, struct wire_buf *b,
                          int32_t id);
/* Whole-message length at the start of buf: 0 = need more, -1 = garbage.
 * scan keeps the place of an unframed reply between calls. */
gssize bench_reply_length(struct bench_codec *c, struct wire_scan *scan,
                          const uint8_t *buf, size_t len);
/* Parse one whole reply message (frame header included). */
void bench_reply_parse(struct bench_codec *c, const uint8_t *msg, size_t len,
                       struct bench_reply *rep);
