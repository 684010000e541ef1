/* bench_keys.c: key popularity models: uniform, Zipf(s), monotonic, plus a celebrity key. */
#include "bench.h"

#include <math.h>
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

void
bench_keys_init(struct bench_keys *ks, bench_keydist_t dist, uint64_t rows,
                double zipf_s, double celebrity, uint64_t seed)
{
    memset(ks, 0, sizeof(*ks));
    ks->dist = dist;
    ks->rows = rows > 0 ? rows : 1;
    ks->zipf_s = zipf_s;
    ks->celebrity = celebrity;
    ks->celebrity_idx = ks->rows / 3;
    ks->rng = seed ? seed : 0x9E3779B97F4A7C15ULL;
    ks->mono_base = (uint64_t)g_get_real_time();
    if (dist == BENCH_KEYS_ZIPF) {
        double sum = 0;

        /* an explicit CDF: exact for any s, one binary search per key */
        ks->zipf_cdf = g_new(double, ks->rows);
        for (uint64_t i = 0; i < ks->rows; i++) {
            sum += 1.0 / pow((double)(i + 1), zipf_s);
            ks->zipf_cdf[i] = sum;
        }
        for (uint64_t i = 0; i < ks->rows; i++)
            ks->zipf_cdf[i] /= sum;
    }
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
    const uint64_t p = 2654435761ULL; /* prime; coprime to rows unless it divides it */

    if (ks->rows % p == 0)
        return r;
    return (uint64_t)(((unsigned __int128)r * p) % ks->rows);
}

uint64_t
bench_keys_read_index(struct bench_keys *ks)
{
    if (ks->celebrity > 0 && bench_rand_unit(&ks->rng) < ks->celebrity)
        return ks->celebrity_idx;
    switch (ks->dist) {
    case BENCH_KEYS_ZIPF: {
        double u = bench_rand_unit(&ks->rng);
        uint64_t lo = 0, hi = ks->rows - 1;

        while (lo < hi) {
            uint64_t mid = lo + (hi - lo) / 2;

            if (ks->zipf_cdf[mid] < u)
                lo = mid + 1;
            else
                hi = mid;
        }
        return bench_keys_scatter(ks, lo);
    }
    case BENCH_KEYS_MONOTONIC:
        return ks->mono_next++ % ks->rows;
    case BENCH_KEYS_UNIFORM:
    default:
        return bench_rand(&ks->rng) % ks->rows;
    }
}

void
bench_key_of_index(uint64_t idx, struct bench_key *out)
{
    out->len = (uint8_t)snprintf((char *)out->k, sizeof(out->k), "k%010llu",
                                 (unsigned long long)idx);
}

void
bench_keys_next(struct bench_keys *ks, gboolean write, struct bench_key *out)
{
    if (write && ks->dist == BENCH_KEYS_MONOTONIC &&
        !(ks->celebrity > 0 && bench_rand_unit(&ks->rng) < ks->celebrity)) {
        /* a timestamp-like key: always past every key written before */
        out->len = (uint8_t)snprintf(
            (char *)out->k, sizeof(out->k), "t%016llu",
            (unsigned long long)(ks->mono_base + ks->mono_next++));
        return;
    }
    if (write && ks->dist == BENCH_KEYS_MONOTONIC) {
        bench_key_of_index(ks->celebrity_idx, out);
        return;
    }
    bench_key_of_index(bench_keys_read_index(ks), out);
}
