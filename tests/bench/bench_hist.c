/* bench_hist.c: log-bucketed latency histogram with bounded relative error. */
#include "bench.h"

#include <string.h>

void
bench_hist_reset(struct bench_hist *h)
{
    memset(h, 0, sizeof(*h));
    h->min = UINT64_MAX;
}

/* Slot e*64 + (v >> e) with e = msb(v) - 6 (or 0): values below 128 get a
 * slot each, every larger power of two spreads over 64 slots. */
static unsigned
bench_hist_slot(uint64_t v)
{
    unsigned msb = v == 0 ? 0 : 63u - (unsigned)__builtin_clzll(v);
    unsigned e = msb > BENCH_HIST_SUB_BITS ? msb - BENCH_HIST_SUB_BITS : 0;

    return (e << BENCH_HIST_SUB_BITS) + (unsigned)(v >> e);
}

static uint64_t
bench_hist_slot_mid(unsigned slot)
{
    unsigned e = slot >= (2u << BENCH_HIST_SUB_BITS)
                     ? (slot >> BENCH_HIST_SUB_BITS) - 1
                     : 0;
    uint64_t m = slot - ((uint64_t)e << BENCH_HIST_SUB_BITS);

    return (m << e) + (((uint64_t)1 << e) - 1) / 2;
}

void
bench_hist_add(struct bench_hist *h, uint64_t v)
{
    h->slots[bench_hist_slot(v)]++;
    h->count++;
    h->sum += (double)v;
    if (v < h->min) {
        h->min = v;
    }
    if (v > h->max) {
        h->max = v;
    }
}

uint64_t
bench_hist_quantile(const struct bench_hist *h, double q)
{
    uint64_t want, seen = 0;

    if (h->count == 0) {
        return 0;
    }
    want = (uint64_t)(q * (double)h->count + 0.5);
    if (want < 1) {
        want = 1;
    }
    if (want > h->count) {
        want = h->count;
    }
    for (unsigned i = 0; i < BENCH_HIST_SLOTS; i++) {
        seen += h->slots[i];
        if (seen >= want) {
            uint64_t mid = bench_hist_slot_mid(i);

            /* the exact extremes beat a slot midpoint */
            return MIN(MAX(mid, h->min), h->max);
        }
    }
    return h->max;
}
