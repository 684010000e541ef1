/* bench_keys.c: key models: uniform, Zipf(s), monotonic, a celebrity key, and the salting articles' key shapes. */
#include "bench.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* xorshift64*: fast, and good enough to pick keys. */
uint64_t
bench_rand(uint64_t *state)
{
    uint64_t x = *state;

    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    *state = x;
    return x * 0x2545F4914F6CDD1DULL;
}

double
bench_rand_unit(uint64_t *state)
{
    return (double)(bench_rand(state) >> 11) * (1.0 / 9007199254740992.0);
}

/* Loaded keys of app-user-ts carry this timestamp base (milliseconds,
 * November 2023), so that every run loads the same keys. */
#define BENCH_KEYS_TS_BASE 1700000000000ULL

gboolean
bench_keys_init(struct bench_keys *ks, bench_keydist_t dist, uint64_t rows,
                double zipf_s, double celebrity, uint64_t users, uint64_t apps,
                uint64_t seed, const char **why)
{
    memset(ks, 0, sizeof(*ks));
    ks->dist = dist;
    ks->rows = rows > 0 ? rows : 1;
    ks->zipf_s = zipf_s;
    ks->celebrity = celebrity;
    ks->celebrity_idx = ks->rows / 3;
    ks->users = users;
    ks->apps = apps;
    ks->rng = seed ? seed : 0x9E3779B97F4A7C15ULL;
    ks->mono_base = (uint64_t)g_get_real_time();
    if (dist == BENCH_KEYS_CELEBRITY_USER) {
        /* the fields are fixed-width: a wider id would break key order */
        if (users < 2 || users > 9999999) {
            *why = "celebrity-user needs --users 2..9999999";
            return FALSE;
        }
        /* a user in the middle of the id space, as the celebrity key is in
         * the middle of k: inside a region, not at the table's edge */
        ks->celebrity_user = users / 3;
        ks->celebrity_rows = (uint64_t)(celebrity * (double)ks->rows);
        if (ks->rows > 999999999) {
            *why = "celebrity-user: at most 999999999 rows (xxx-yyy)";
            return FALSE;
        }
    }
    if (dist == BENCH_KEYS_APP_USER_TS &&
        (apps < 1 || apps > 99999 || users < 1 || users > 9999999)) {
        *why = "app-user-ts needs --apps 1..99999 and --users 1..9999999";
        return FALSE;
    }
    if (dist == BENCH_KEYS_ZIPF) {
        double sum = 0;

        /* an explicit CDF: exact for any s, one binary search per key */
        ks->zipf_cdf = g_new(double, ks->rows);
        for (uint64_t i = 0; i < ks->rows; i++) {
            sum += 1.0 / pow((double)(i + 1), zipf_s);
            ks->zipf_cdf[i] = sum;
        }
        for (uint64_t i = 0; i < ks->rows; i++) {
            ks->zipf_cdf[i] /= sum;
        }
    }
    return TRUE;
}

gboolean
bench_keys_ordered(const struct bench_keys *ks)
{
    return ks->dist <= BENCH_KEYS_MONOTONIC;
}

void
bench_keys_free(struct bench_keys *ks)
{
    g_free(ks->zipf_cdf);
    ks->zipf_cdf = NULL;
}

/* Rank r to a key index by a fixed permutation, so the popular keys are
 * scattered over the key space (and its regions) as in real data, not
 * packed at its start. */
static uint64_t
bench_keys_scatter(const struct bench_keys *ks, uint64_t r)
{
    const uint64_t p =
        2654435761ULL; /* prime; coprime to rows unless it divides it */

    if (ks->rows % p == 0) {
        return r;
    }
    return (uint64_t)(((unsigned __int128)r * p) % ks->rows);
}

uint64_t
bench_keys_read_index(struct bench_keys *ks)
{
    /* the shapes read rows uniformly: a user is read as often as it has
     * rows, so the celebrity gets its share of reads as of writes */
    if (!bench_keys_ordered(ks)) {
        return bench_rand(&ks->rng) % ks->rows;
    }
    if (ks->celebrity > 0 && bench_rand_unit(&ks->rng) < ks->celebrity) {
        return ks->celebrity_idx;
    }
    switch (ks->dist) {
    case BENCH_KEYS_ZIPF: {
        double u = bench_rand_unit(&ks->rng);
        uint64_t lo = 0, hi = ks->rows - 1;

        while (lo < hi) {
            uint64_t mid = lo + (hi - lo) / 2;

            if (ks->zipf_cdf[mid] < u) {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        return bench_keys_scatter(ks, lo);
    }
    case BENCH_KEYS_MONOTONIC: return ks->mono_next++ % ks->rows;
    case BENCH_KEYS_UNIFORM:
    default: return bench_rand(&ks->rng) % ks->rows;
    }
}

int64_t
bench_keys_scan_index(struct bench_keys *ks, bench_target_t target)
{
    uint64_t c = ks->celebrity_rows;

    if (ks->dist != BENCH_KEYS_CELEBRITY_USER || target == BENCH_TARGET_ANY) {
        return (int64_t)bench_keys_read_index(ks);
    }
    if (target == BENCH_TARGET_CELEBRITY) {
        return c == 0 ? -1 : (int64_t)(bench_rand(&ks->rng) % c);
    }
    return c >= ks->rows
               ? -1
               : (int64_t)(c + bench_rand(&ks->rng) % (ks->rows - c));
}

static void bench_key_printf(struct bench_key *out, const char *fmt, ...)
    G_GNUC_PRINTF(2, 3);

/* Every key shape is fixed-width fields, so that it sorts like its fields. */
static void
bench_key_printf(struct bench_key *out, const char *fmt, ...)
{
    va_list ap;
    int n;

    va_start(ap, fmt);
    n = vsnprintf((char *)out->k, BENCH_KEY_MAX + 1, fmt, ap);
    va_end(ap);
    out->len = (uint8_t)MIN(n, BENCH_KEY_MAX);
}

#define BENCH_KEY_USER "u%07llu-%06llu-%03llu"
#define BENCH_KEY_APP "a%05llu,u%07llu,%013llu"

void
bench_key_of_index(const struct bench_keys *ks, uint64_t idx,
                   struct bench_key *out)
{
    if (ks->dist == BENCH_KEYS_CELEBRITY_USER) {
        uint64_t user, item;

        if (idx < ks->celebrity_rows) {
            user = ks->celebrity_user;
            item = idx;
        } else {
            /* the others in turn, so that every one has the same count */
            uint64_t j = idx - ks->celebrity_rows, o = j % (ks->users - 1);

            user = o < ks->celebrity_user ? o : o + 1;
            item = j / (ks->users - 1);
        }
        bench_key_printf(out, BENCH_KEY_USER, (unsigned long long)user,
                         (unsigned long long)(item / 1000),
                         (unsigned long long)(item % 1000));
        return;
    }
    if (ks->dist == BENCH_KEYS_APP_USER_TS) {
        uint64_t pairs = ks->apps * ks->users, g = idx % pairs;

        bench_key_printf(out, BENCH_KEY_APP,
                         (unsigned long long)(g / ks->users),
                         (unsigned long long)(g % ks->users),
                         (unsigned long long)(BENCH_KEYS_TS_BASE +
                                              idx / pairs));
        return;
    }
    bench_key_printf(out, "k%010llu", (unsigned long long)idx);
}

size_t
bench_key_fields(const struct bench_keys *ks, const struct bench_key *k,
                 unsigned fields)
{
    char sep = ks->dist == BENCH_KEYS_CELEBRITY_USER ? '-'
               : ks->dist == BENCH_KEYS_APP_USER_TS  ? ','
                                                     : '\0';

    if (sep == '\0') {
        return 0;
    }
    for (size_t i = 0; i < k->len; i++) {
        if (k->k[i] == (uint8_t)sep && --fields == 0) {
            return i + 1;
        }
    }
    return k->len;
}

/* A new row of a shaped key space: the writer picks its user (the
 * celebrity at its share) and appends a row the load did not write. */
static void
bench_keys_new_row(struct bench_keys *ks, struct bench_key *out)
{
    uint64_t seq = ks->mono_next++;

    if (ks->dist == BENCH_KEYS_CELEBRITY_USER) {
        uint64_t user = ks->celebrity_user;

        if (!(bench_rand_unit(&ks->rng) < ks->celebrity)) {
            user = bench_rand(&ks->rng) % (ks->users - 1);
            user += user >= ks->celebrity_user;
        }
        /* xxx random: the rows of a user land all over its key range */
        bench_key_printf(out, BENCH_KEY_USER, (unsigned long long)user,
                         (unsigned long long)(bench_rand(&ks->rng) % 1000000),
                         (unsigned long long)(seq % 1000));
        return;
    }
    /* an event now: after every loaded event of its user */
    bench_key_printf(out, BENCH_KEY_APP,
                     (unsigned long long)(bench_rand(&ks->rng) % ks->apps),
                     (unsigned long long)(bench_rand(&ks->rng) % ks->users),
                     (unsigned long long)(ks->mono_base / 1000 + seq));
}

void
bench_keys_next(struct bench_keys *ks, gboolean write, struct bench_key *out)
{
    if (!bench_keys_ordered(ks)) {
        if (write) {
            bench_keys_new_row(ks, out);
        } else {
            bench_key_of_index(ks, bench_keys_read_index(ks), out);
        }
        return;
    }
    if (write && ks->dist == BENCH_KEYS_MONOTONIC &&
        !(ks->celebrity > 0 && bench_rand_unit(&ks->rng) < ks->celebrity)) {
        /* a timestamp-like key: always past every key written before */
        out->len = (uint8_t)snprintf((char *)out->k, sizeof(out->k),
                                     "t%016llu",
                                     (unsigned long long)(ks->mono_base +
                                                          ks->mono_next++));
        return;
    }
    if (write && ks->dist == BENCH_KEYS_MONOTONIC) {
        bench_key_of_index(ks, ks->celebrity_idx, out);
        return;
    }
    bench_key_of_index(ks, bench_keys_read_index(ks), out);
}
