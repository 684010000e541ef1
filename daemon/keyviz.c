/* keyviz.c: the key visualizer's counters, their history and JSON. */
#include "keyviz.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <xxhash.h>

#include "escape.h"
#include "hsp-config.h"
#include "invariant.h"
#include "salt.h"

static const char *const keyviz_metric_names[KEYVIZ_METRICS] = {
    "reads", "writes", "rows", "bytes_in", "bytes_out", "errors",
};

const uint32_t keyviz_candidates[KEYVIZ_NCAND] = { 4, 8, 16, 32, 64 };

const char *
keyviz_metric_name(unsigned metric)
{
    return metric < KEYVIZ_METRICS ? keyviz_metric_names[metric] : "?";
}

int
keyviz_metric_parse(const char *name)
{
    for (unsigned i = 0; name != NULL && i < KEYVIZ_METRICS; i++) {
        if (strcmp(name, keyviz_metric_names[i]) == 0) {
            return (int)i;
        }
    }
    return -1;
}

/* ---- types -------------------------------------------------------------- */

/* A key as kept: its first bytes (CODEC_NOTE_KEY_MAX at most). */
struct keyviz_key {
    uint8_t kept;
    uint8_t key[CODEC_NOTE_KEY_MAX];
};

/* Range boundaries: range i is [b[i - 1], b[i]), the first from the
 * empty key, the last to the end.  Main thread owns and frees them;
 * workers read the one published for their interval. */
struct keyviz_bounds {
    gint64 epoch; /* the interval they were made for */
    int refs;     /* main thread only */
    uint32_t n;   /* boundaries: n + 1 ranges */
    uint32_t cap; /* boundaries allocated */
    /* Quantile boundaries often share a long prefix (user0000..., a
     * date): the lookup compares that once, then works on what follows */
    uint32_t lcp;          /* bytes every boundary starts with */
    guint64 lcp_head;      /* the first MIN(lcp, 8) of them, big-endian */
    guint64 head_mask;     /* the top MIN(lcp, 8) bytes of a word */
    guint64 head_top;      /* lcp_head at the top of a word */
    guint64 *pfx;          /* each boundary's 8 bytes after the lcp,
                              big-endian, zero-padded: most comparisons
                              end there */
    uint16_t by_byte[257]; /* boundaries whose byte after the lcp is
                              below i (one ending there: below 0): a key
                              with byte f there lies between by_byte[f]
                              and by_byte[f + 1] */
    struct keyviz_key b[];
};

/* The range a worker found last, in its slot: the next key is often in
 * it too (a get's reply row is the key it read; keys come in order).  A
 * key whose first 16 bytes (keyviz_word16) lie strictly between lo and
 * hi, those of the range's boundaries, is in it; lo is one less when the
 * lower boundary has no more than 16 bytes (a key starting with them is
 * not below it).  lo >= hi: none. */
struct keyviz_range_cache {
    unsigned __int128 lo, hi;
    guint64 *row; /* the range's counters in the slot (keyviz_row_of):
                     no multiply on a hit */
};

/* One space-saving counter. */
struct keyviz_entry {
    guint64 hash; /* XXH3 of the whole key (or hash_part) */
    guint64 err;  /* what it may overcount */
    uint32_t len; /* bytes of the whole key */
    uint32_t bucket;
    int32_t next; /* the next entry of its index chain, -1: none */
    struct keyviz_key k;
};

/* A run of the sketch: the places in ord holding one count. */
struct keyviz_run {
    guint64 count;
    uint32_t first, last;
};

/*
 * A space-saving sketch of cap counters.  The counters are kept in order
 * of count, smallest first, at the places cap - n .. cap - 1 of ord (a
 * new counter, at 1, goes in front: no move), grouped in runs of equal
 * counts; the one to give away is the first.  A counter going up by one
 * swaps with the last of its run and that place passes to the run above
 * (or becomes a run of its own): O(1), no search.  A chained index by
 * hash (2 x cap heads) finds a key's counter.  No allocation once made.
 *
 * The filter in front (filtered space-saving): KEYVIZ_FILTER_FACTOR x cap
 * cells by another part of the hash.  Invariants, with mu the smallest
 * counter of a full sketch: every cell is <= mu, and a key not held has
 * had no more operations than its cell.  A key not held whose cell is
 * below mu only raises its cell; one whose cell is mu takes the smallest
 * counter over at mu + 1 (its cell + 1: no more than it can have had),
 * and the key given away leaves its count in its own cell (<= mu, as the
 * counter was mu).  So a count is never under, and over by at most mu;
 * each operation adds at most one to the counters' sum, so mu <= N / cap:
 * the bound of plain space-saving.  What it saves: a key met once no
 * longer takes a counter over (unlink, relink, key copy), only a cell.
 */
#define KEYVIZ_FILTER_FACTOR 4

struct keyviz_sketch {
    uint32_t cap, n;
    uint32_t mask;          /* index size - 1 (2 x cap, a power of 2) */
    uint32_t fmask;         /* filter cells - 1 (a power of 2) */
    uint32_t nruns, nfree;  /* runs handed out since the reset; free */
    struct keyviz_entry *e; /* cap */
    uint32_t *ord;          /* place -> entry */
    uint32_t *rid;          /* place -> its run */
    uint32_t *pos;          /* entry -> its place */
    struct keyviz_run *run; /* cap (there are never more runs than
                                counters) */
    uint32_t *free;         /* cap: runs given back */
    int32_t *index;         /* hash slot -> first entry of its chain,
                                -1: none */
    uint32_t *filt;         /* fmask + 1 cells, by the hash's top bits */
};

/* One sampled key. */
struct keyviz_sampled {
    guint64 key_hash, part_hash;
    uint8_t part_kept; /* bytes of k that are its hash_part */
    struct keyviz_key k;
};

/* One worker's counters of one table for one interval. */
struct keyviz_slot {
    gint64 epoch; /* the interval counted, -1: none */
    const struct keyviz_bounds *bounds;
    struct keyviz_range_cache last; /* of bounds */
    guint64 *counts;                /* ranges x KEYVIZ_METRICS */
    struct keyviz_sketch keys, parts;
    /* keys read or written that the draw took for the sample and the
     * sketches (their N) */
    guint64 seen;
    /* hash_part values have a sketch of their own (the table's hash_part
     * is not whole) */
    gboolean with_parts;
    uint32_t nsample;
    struct keyviz_sampled *sample; /* KEYVIZ_SAMPLE */
};

/* Slots per worker and table: the one counting, and three the harvest
 * may still read (an interval is read a second after it ended, so with
 * interval_s = 1 up to three later intervals may have begun). */
#define KEYVIZ_SLOTS 4

struct keyviz_wtable {
    struct keyviz_slot slot[KEYVIZ_SLOTS]; /* by epoch % KEYVIZ_SLOTS */
};

struct keyviz_worker {
    struct keyviz *kv;
    struct keyviz_wtable **tables; /* by stats_id - 1 */
    /* the slot found last: the next key is most likely of the same
     * table and interval (stats_id names a table across reloads) */
    unsigned last_id;
    gint64 last_epoch; /* -2: none */
    struct keyviz_slot *last_sl;
    guint64 rng; /* the draws' LCG state: one stream for all tables,
                    at hand with the worker */
    /* a read or write feeds the sketches and the sample when the LCG's
     * next state is at most this: one in hot_key_sampling, at random */
    guint64 take;
};

/* A hot key or hash_part value of an interval, merged. */
struct keyviz_hot {
    guint64 count, err;
    uint32_t len, bucket;
    struct keyviz_key k;
};

/* One harvested interval of one table. */
struct keyviz_interval {
    gint64 epoch;
    struct keyviz_bounds *bounds; /* a reference */
    guint64 *counts;              /* (bounds->n + 1) x KEYVIZ_METRICS */
    guint64 *bcounts;             /* (buckets + 1) x KEYVIZ_BUCKET_KINDS */
    guint64 ops;                  /* reads and writes */
    guint64 drawn;                /* of them taken by the draw: the
                                     sketches' N */
    uint32_t nranges;             /* bounds->n + 1 */
    uint32_t nhot, nparts;
    struct keyviz_hot *hot, *parts;
    /* fullest bucket's share of the sampled keys with buckets
     * keyviz_candidates[i], by the table's hash_part and by whole keys;
     * < 0: not predicted (an adopted mapping) */
    double pred_part[KEYVIZ_NCAND], pred_whole[KEYVIZ_NCAND];
    double pred_part_now, pred_whole_now; /* with the table's buckets */
};

struct keyviz_table {
    char *name;
    struct salt_table salt;
    struct keyviz_bounds *initial;    /* by first byte; never freed early */
    struct keyviz_bounds *ring[4];    /* published, by epoch & 3 */
    struct keyviz_bounds *retired[4]; /* what ring[i] held before: a
                                         worker may still be reading it */
    struct keyviz_bounds *latest;     /* the newest made from a sample */
    struct keyviz_interval **hist;    /* ring of nhist */
    uint32_t hist_head, hist_n;       /* oldest, count */
    /* the proxy's per-bucket totals when interval snap_epoch[i] began
     * (by epoch & 3; -1: none): an interval's bucket counts are the
     * difference to the next interval's */
    guint64 *snap[4];
    gint64 snap_epoch[4];
};

struct keyviz {
    struct config_keyviz set;
    keyviz_bucket_totals_fn totals; /* NULL: none (tests) */
    void *totals_ctx;
    gint64 snapped; /* the interval whose start was snapped last */
    unsigned nworkers;
    uint32_t sketch_cap;
    uint32_t thin;    /* hot_key_sampling: a sketch count stands for thin */
    uint32_t nhist;   /* intervals kept */
    gint64 epoch;     /* current interval, -1: not ticking
                                        (relaxed atomic) */
    gint64 harvested; /* newest interval harvested */
    gint64 told;      /* the epoch the last tick stored */
    struct keyviz_worker *workers;
    struct keyviz_table **tables; /* by stats_id - 1, NULL: none */
    size_t bytes;                 /* allocated, for keyviz_memory */
};

/* ---- keys --------------------------------------------------------------- */

static int
keyviz_key_cmp(const struct keyviz_key *a, const uint8_t *b, size_t blen)
{
    size_t n = MIN(a->kept, blen);
    int r = memcmp(a->key, b, n);

    if (r != 0) {
        return r;
    }
    return (a->kept > blen) - (a->kept < blen);
}

static G_ALWAYS_INLINE inline void
keyviz_key_set(struct keyviz_key *k, const uint8_t *p, size_t len)
{
    k->kept = (uint8_t)MIN(len, CODEC_NOTE_KEY_MAX);
    codec_note_copy(k->key, p, k->kept);
}

/* A key's first 8 bytes as a big-endian number, zero-padded.  When two
 * keys' prefixes differ, the numbers order them as their bytes do (a
 * shorter key's padding is below any byte the longer one has there, or
 * equal to it); only equal prefixes need the bytes compared. */
static inline guint64
keyviz_prefix(const uint8_t *key, size_t len)
{
    guint64 v = 0;

    if (len >= sizeof(v)) {
        memcpy(&v, key, sizeof(v)); /* one load, not a call */
    } else {
        memcpy(&v, key, len);
    }
    return GUINT64_FROM_BE(v);
}

/* A key's first 16 bytes as a big-endian number, zero-padded: ordered as
 * the keys are where they differ (keyviz_prefix's argument). */
static G_ALWAYS_INLINE inline unsigned __int128
keyviz_word16(const uint8_t *key, size_t len)
{
    guint64 hi, lo;

    if (len >= 16) {
        memcpy(&hi, key, sizeof(hi));
        memcpy(&lo, key + 8, sizeof(lo));
        lo = GUINT64_FROM_BE(lo);
    } else if (len > 8) {
        /* the last 8 bytes, shifted up: no copy of a variable length */
        memcpy(&hi, key, sizeof(hi));
        memcpy(&lo, key + len - 8, sizeof(lo));
        lo = GUINT64_FROM_BE(lo) << (8 * (16 - len));
    } else {
        return (unsigned __int128)keyviz_prefix(key, len) << 64;
    }
    return (unsigned __int128)GUINT64_FROM_BE(hi) << 64 | lo;
}

/* The first of p[lo..hi) not below kp (hi: none), without a branch a
 * step: a step is a load, a compare and a conditional move. */
static G_ALWAYS_INLINE inline uint32_t
keyviz_lower_bound(const guint64 *p, uint32_t lo, uint32_t hi, guint64 kp)
{
    const guint64 *base = p + lo;
    uint32_t n = hi - lo;

    if (n == 0) {
        return lo;
    }
    while (n > 1) {
        uint32_t half = n / 2;

        base = base[half] < kp ? base + half : base;
        n -= half;
    }
    return (uint32_t)(base - p) + (*base < kp);
}

/* Range r of b is the one found last. */
static G_ALWAYS_INLINE inline void
keyviz_range_remember(const struct keyviz_bounds *b,
                      struct keyviz_range_cache *rc, uint32_t r)
{
    rc->lo = 0;
    if (r > 0) {
        const struct keyviz_key *k = &b->b[r - 1];

        rc->lo = keyviz_word16(k->key, k->kept);
        /* ending in a byte past 0: a key with the same 16 bytes is
         * not shorter ("ab" and "ab\0" have the same word) */
        if (k->kept > 0 && k->kept <= 16 && k->key[k->kept - 1] != 0 &&
            rc->lo > 0) {
            rc->lo--;
        }
    }
    rc->hi = ~(unsigned __int128)0;
    if (r < b->n) {
        rc->hi = keyviz_word16(b->b[r].key, b->b[r].kept);
    }
}

/* The range of key, not the one found last: how many boundaries are <=
 * it. */
static G_ALWAYS_INLINE inline uint32_t
keyviz_range_search(const struct keyviz_bounds *b,
                    struct keyviz_range_cache *rc, const uint8_t *key,
                    size_t len)
{
    uint32_t lo, hi, lcp = b->lcp;
    guint64 kp;

    if (G_LIKELY(len >= 8 && lcp <= 8 && len != lcp)) {
        /* the common case in two loads: the key's first 8 bytes hold the
         * common part, its next 8 the word searched on */
        guint64 w0, v;

        memcpy(&w0, key, sizeof(w0));
        w0 = GUINT64_FROM_BE(w0) & b->head_mask;
        if (w0 != b->head_top) {
            return w0 < b->head_top ? 0 : b->n;
        }
        if (len - lcp >= 8) {
            memcpy(&v, key + lcp, sizeof(v));
            kp = GUINT64_FROM_BE(v);
        } else {
            /* fewer than 8 bytes after the common part: the key's last
             * 8, shifted up, rather than a copy of a variable length */
            memcpy(&v, key + len - 8, sizeof(v));
            kp = GUINT64_FROM_BE(v) << (8 * (lcp + 8 - len));
        }
    } else {
        if (lcp > 0) {
            if (len < lcp) {
                /* a prefix of the common part is below every boundary */
                return memcmp(key, b->b[0].key, len) <= 0 ? 0 : b->n;
            }
            if (lcp <= 8) {
                guint64 head = keyviz_prefix(key, len) >> (64 - 8 * lcp);

                if (head != b->lcp_head) {
                    return head < b->lcp_head ? 0 : b->n;
                }
            } else {
                int r = memcmp(key, b->b[0].key, lcp);

                if (r != 0) {
                    return r < 0 ? 0 : b->n;
                }
            }
        }
        if (len == lcp) {
            /* the common part itself: above only a boundary equal to it */
            return b->by_byte[0];
        }
        if (len - lcp < 8 && len >= 8) {
            guint64 v;

            memcpy(&v, key + len - 8, sizeof(v));
            kp = GUINT64_FROM_BE(v) << (8 * (8 - (len - lcp)));
        } else {
            kp = keyviz_prefix(key + lcp, len - lcp);
        }
    }
    lo = b->by_byte[key[lcp]];
    hi = b->by_byte[key[lcp] + 1];
    /* the boundaries whose word is below the key's are below it */
    lo = keyviz_lower_bound(b->pfx, lo, hi, kp);
    if (lo < hi && b->pfx[lo] == kp) {
        /* words equal: the bytes after them decide (rare: a key equal
         * to a boundary, or sharing its first 8 bytes after the lcp) */
        while (lo < hi) {
            uint32_t mid = lo + (hi - lo) / 2;

            if (b->pfx[mid] < kp ||
                (b->pfx[mid] == kp &&
                 keyviz_key_cmp(&b->b[mid], key, len) <= 0)) {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
    }
    keyviz_range_remember(b, rc, lo);
    return lo;
}

/* Bytes of a table's per-bucket counters (its legacy range the last). */
static size_t
keyviz_bucket_bytes(uint32_t buckets)
{
    return (size_t)(buckets + 1) * KEYVIZ_BUCKET_KINDS * sizeof(guint64);
}

static void *
keyviz_alloc(struct keyviz *kv, size_t n)
{
    kv->bytes += n;
    return g_malloc0(n);
}

static void
keyviz_release(struct keyviz *kv, void *p, size_t n)
{
    if (p != NULL) {
        kv->bytes -= n;
        g_free(p);
    }
}

static struct keyviz_bounds *
keyviz_bounds_new(struct keyviz *kv, uint32_t n, gint64 epoch)
{
    struct keyviz_bounds *b = keyviz_alloc(kv,
                                           sizeof(*b) +
                                               n * sizeof(struct keyviz_key));

    b->n = n;
    b->cap = n;
    b->epoch = epoch;
    b->refs = 1;
    b->pfx = keyviz_alloc(kv, MAX(n, 1u) * sizeof(guint64));
    return b;
}

/* The boundaries are set: their common prefix, and what follows it. */
static void
keyviz_bounds_seal(struct keyviz_bounds *b)
{
    uint32_t i = 0;

    b->lcp = 0;
    b->head_mask = 0; /* no common part: every key passes */
    b->head_top = 0;
    if (b->n > 0) {
        /* sorted: what the first and the last share, all do */
        const struct keyviz_key *f = &b->b[0], *l = &b->b[b->n - 1];

        while (b->lcp < MIN(f->kept, l->kept) &&
               f->key[b->lcp] == l->key[b->lcp]) {
            b->lcp++;
        }
        if (b->lcp > 0) {
            b->lcp_head = keyviz_prefix(f->key, f->kept) >>
                          (64 - 8 * MIN(b->lcp, 8u));
            b->head_mask = G_MAXUINT64 << (64 - 8 * MIN(b->lcp, 8u));
            b->head_top = b->lcp_head << (64 - 8 * MIN(b->lcp, 8u));
        }
    }
    for (i = 0; i < b->n; i++) {
        b->pfx[i] = keyviz_prefix(b->b[i].key + b->lcp, b->b[i].kept - b->lcp);
    }
    i = 0;
    /* one boundary may end with the common prefix: the first */
    while (i < b->n && b->b[i].kept == b->lcp) {
        i++;
    }
    for (unsigned v = 0; v <= 256; v++) {
        while (i < b->n && b->b[i].key[b->lcp] < v) {
            i++;
        }
        b->by_byte[v] = (uint16_t)i;
    }
}

static void
keyviz_bounds_unref(struct keyviz *kv, struct keyviz_bounds *b)
{
    if (b != NULL && --b->refs == 0) {
        keyviz_release(kv, b->pfx, MAX(b->cap, 1u) * sizeof(guint64));
        keyviz_release(kv, b, sizeof(*b) + b->cap * sizeof(struct keyviz_key));
    }
}

/* ranges split by first byte: the best guess without a sample */
static struct keyviz_bounds *
keyviz_bounds_initial(struct keyviz *kv, unsigned ranges)
{
    uint32_t n = MIN(ranges, 256u) - 1;
    struct keyviz_bounds *b = keyviz_bounds_new(kv, n, -1);

    for (uint32_t i = 0; i < n; i++) {
        b->b[i].kept = 1;
        b->b[i].key[0] = (uint8_t)((i + 1) * 256 / (n + 1));
    }
    keyviz_bounds_seal(b);
    return b;
}

/* ---- the space-saving sketch -------------------------------------------- */

/* Filter cells of a sketch of cap counters: a power of 2. */
static uint32_t
keyviz_filter_cells(uint32_t cap)
{
    uint32_t n = 1;

    while (n < KEYVIZ_FILTER_FACTOR * cap) {
        n *= 2;
    }
    return n;
}

static size_t
keyviz_sketch_size(uint32_t cap)
{
    return cap * (sizeof(struct keyviz_entry) + 4 * sizeof(uint32_t) +
                  sizeof(struct keyviz_run)) +
           2 * cap * sizeof(int32_t) +
           keyviz_filter_cells(cap) * sizeof(uint32_t);
}

static void
keyviz_sketch_reset(struct keyviz_sketch *s)
{
    s->n = 0;
    s->nruns = 0;
    s->nfree = 0;
    memset(s->index, 0xff, (s->mask + 1) * sizeof(int32_t));
    memset(s->filt, 0, (s->fmask + 1) * sizeof(uint32_t));
}

static void
keyviz_sketch_init(struct keyviz *kv, struct keyviz_sketch *s, uint32_t cap)
{
    s->cap = cap;
    s->mask = 2 * cap - 1;
    s->e = keyviz_alloc(kv, cap * sizeof(struct keyviz_entry));
    s->ord = keyviz_alloc(kv, cap * sizeof(uint32_t));
    s->rid = keyviz_alloc(kv, cap * sizeof(uint32_t));
    s->pos = keyviz_alloc(kv, cap * sizeof(uint32_t));
    s->run = keyviz_alloc(kv, cap * sizeof(struct keyviz_run));
    s->free = keyviz_alloc(kv, cap * sizeof(uint32_t));
    s->index = keyviz_alloc(kv, 2 * cap * sizeof(int32_t));
    s->fmask = keyviz_filter_cells(cap) - 1;
    s->filt = keyviz_alloc(kv, (s->fmask + 1) * sizeof(uint32_t));
    keyviz_sketch_reset(s);
}

static void
keyviz_sketch_clear(struct keyviz *kv, struct keyviz_sketch *s)
{
    keyviz_release(kv, s->e, s->cap * sizeof(struct keyviz_entry));
    keyviz_release(kv, s->ord, s->cap * sizeof(uint32_t));
    keyviz_release(kv, s->rid, s->cap * sizeof(uint32_t));
    keyviz_release(kv, s->pos, s->cap * sizeof(uint32_t));
    keyviz_release(kv, s->run, s->cap * sizeof(struct keyviz_run));
    keyviz_release(kv, s->free, s->cap * sizeof(uint32_t));
    keyviz_release(kv, s->index, 2 * s->cap * sizeof(int32_t));
    keyviz_release(kv, s->filt, (s->fmask + 1) * sizeof(uint32_t));
}

/* Entry ei's count. */
static inline guint64
keyviz_sketch_count(const struct keyviz_sketch *s, uint32_t ei)
{
    return s->run[s->rid[s->pos[ei]]].count;
}

/* Place at becomes a run of its own, of count. */
static G_ALWAYS_INLINE inline void
keyviz_run_new(struct keyviz_sketch *s, uint32_t at, guint64 count)
{
    uint32_t r = s->nfree > 0 ? s->free[--s->nfree] : s->nruns++;

    s->run[r].count = count;
    s->run[r].first = at;
    s->run[r].last = at;
    s->rid[at] = r;
}

/* Place at, just in front of the run at + 1 (if any), takes count: it
 * joins that run when the counts are equal.  Tells whether it did. */
static G_ALWAYS_INLINE inline gboolean
keyviz_run_join(struct keyviz_sketch *s, uint32_t at, guint64 count)
{
    uint32_t up;

    if (at + 1 >= s->cap || s->run[up = s->rid[at + 1]].count != count) {
        return FALSE;
    }
    s->run[up].first = at;
    s->rid[at] = up;
    return TRUE;
}

/* The counter at place l, the last of run r (of count c), goes up by
 * one: that place passes to the run above. */
static G_ALWAYS_INLINE inline void
keyviz_run_up(struct keyviz_sketch *s, uint32_t r, uint32_t l, guint64 c)
{
    struct keyviz_run *run = &s->run[r];

    if (run->first == l) {
        /* its run's only member: the run goes up, or merges above */
        if (keyviz_run_join(s, l, c + 1)) {
            s->free[s->nfree++] = r;
        } else {
            run->count = c + 1;
        }
        return;
    }
    run->last = l - 1;
    if (!keyviz_run_join(s, l, c + 1)) {
        keyviz_run_new(s, l, c + 1);
    }
}

/* Entry ei's count goes up by one: it takes the last place of its run,
 * and that place passes to the run above. */
static G_ALWAYS_INLINE inline void
keyviz_sketch_bump(struct keyviz_sketch *s, uint32_t ei)
{
    uint32_t p = s->pos[ei], r = s->rid[p];
    const struct keyviz_run *run = &s->run[r];
    uint32_t l = run->last;

    if (p != l) {
        uint32_t other = s->ord[l];

        s->ord[l] = ei;
        s->ord[p] = other;
        s->pos[other] = p;
        s->pos[ei] = l;
    }
    keyviz_run_up(s, r, l, run->count);
}

/* The entry of hash, or -1. */
static G_ALWAYS_INLINE inline int32_t
keyviz_index_find(const struct keyviz_sketch *s, guint64 hash)
{
    int32_t i = s->index[(uint32_t)hash & s->mask];

    while (i >= 0 && s->e[i].hash != hash) {
        i = s->e[i].next;
    }
    return i;
}

/* Entry ei leaves its chain. */
static G_ALWAYS_INLINE inline void
keyviz_index_remove(struct keyviz_sketch *s, uint32_t ei)
{
    int32_t *at = &s->index[(uint32_t)s->e[ei].hash & s->mask];

    while (*at != (int32_t)ei) {
        at = &s->e[*at].next;
    }
    *at = s->e[ei].next;
}

/* One more operation on a key (hash identifies it; kept shows it). */
static G_ALWAYS_INLINE inline void
keyviz_sketch_add(struct keyviz_sketch *s, guint64 hash, const uint8_t *kept,
                  size_t kept_len, uint32_t len, uint32_t bucket)
{
    int32_t found = keyviz_index_find(s, hash);
    struct keyviz_entry *e;
    uint32_t ei, head;

    if (found >= 0) {
        keyviz_sketch_bump(s, (uint32_t)found);
        return;
    }
    if (s->n < s->cap) {
        /* a new counter at 1, in front of the others */
        uint32_t at = s->cap - 1 - s->n;

        ei = s->n++;
        s->ord[at] = ei;
        s->pos[ei] = at;
        if (!keyviz_run_join(s, at, 1)) {
            keyviz_run_new(s, at, 1);
        }
        e = &s->e[ei];
        e->err = 0;
    } else {
        uint32_t r = s->rid[0], l;
        guint64 c = s->run[r].count;
        /* the filter's cells hold 32 bits: past that (never, in an
         * interval of a worker) every newcomer is let in, as without it */
        uint32_t mu = c < G_MAXUINT32 ? (uint32_t)c : G_MAXUINT32;
        uint32_t *cell = &s->filt[(uint32_t)(hash >> 32) & s->fmask];

        if (*cell < mu) {
            /* a key not held, whose cell stays at most mu */
            (*cell)++;
            return;
        }
        /* its cell is mu: the smallest counter changes hands, its count
         * the most the newcomer can have had before.  Any counter of
         * the smallest run will do: its last, which going up moves to
         * no other place (no swap), and whose count is the run's.  The
         * key given away leaves that count in its cell */
        l = s->run[r].last;
        ei = s->ord[l];
        e = &s->e[ei];
#if HSP_CHECKED
        HSP_CHECK(s->filt[(uint32_t)(e->hash >> 32) & s->fmask] <= mu);
#endif
        s->filt[(uint32_t)(e->hash >> 32) & s->fmask] = mu;
        keyviz_index_remove(s, ei);
        e->err = c;
        keyviz_run_up(s, r, l, c);
    }
    e->hash = hash;
    e->len = len;
    e->bucket = bucket;
    keyviz_key_set(&e->k, kept, kept_len);
    head = (uint32_t)hash & s->mask;
    e->next = s->index[head];
    s->index[head] = (int32_t)ei;
}

/* The smallest counter of a full sketch (what any key it lacks may have
 * had), 0 for one not full. */
static guint64
keyviz_sketch_floor(const struct keyviz_sketch *s)
{
    return s->n == s->cap ? s->run[s->rid[0]].count : 0;
}

/* ---- the hot path ------------------------------------------------------- */

static void
keyviz_slot_init(struct keyviz *kv, struct keyviz_slot *sl, unsigned ranges)
{
    sl->epoch = -1;
    sl->counts = keyviz_alloc(kv, (size_t)ranges * KEYVIZ_METRICS * 8);
    keyviz_sketch_init(kv, &sl->keys, kv->sketch_cap);
    keyviz_sketch_init(kv, &sl->parts, kv->sketch_cap);
    sl->sample = keyviz_alloc(kv,
                              KEYVIZ_SAMPLE * sizeof(struct keyviz_sampled));
}

static void
keyviz_slot_clear(struct keyviz *kv, struct keyviz_slot *sl, unsigned ranges)
{
    keyviz_release(kv, sl->counts, (size_t)ranges * KEYVIZ_METRICS * 8);
    keyviz_sketch_clear(kv, &sl->keys);
    keyviz_sketch_clear(kv, &sl->parts);
    keyviz_release(kv, sl->sample,
                   KEYVIZ_SAMPLE * sizeof(struct keyviz_sampled));
}

/* The worker enters interval epoch in this slot: the interval before
 * last, which it held, was harvested long ago. */
static void
keyviz_slot_enter(struct keyviz *kv, const struct keyviz_table *t,
                  struct keyviz_slot *sl, gint64 epoch)
{
    const struct keyviz_bounds *b = __atomic_load_n(&t->ring[epoch & 3],
                                                    __ATOMIC_ACQUIRE);

    if (b == NULL || b->epoch != epoch) {
        b = t->initial;
    }
    memset(sl->counts, 0, (size_t)(b->n + 1) * KEYVIZ_METRICS * 8);
    keyviz_sketch_reset(&sl->keys);
    keyviz_sketch_reset(&sl->parts);
    sl->seen = 0;
    sl->nsample = 0;
    sl->with_parts = t->salt.hash != SALT_HASH_WHOLE;
    sl->bounds = b;
    sl->last.lo = ~(unsigned __int128)0;
    sl->last.hi = 0;
    /* last: the harvest trusts a slot whose epoch it reads */
    __atomic_store_n(&sl->epoch, epoch, __ATOMIC_RELEASE);
}

static G_ALWAYS_INLINE inline void
keyviz_sample_set(struct keyviz_sampled *s, const struct codec_key_note *n)
{
    s->key_hash = n->key_hash;
    s->part_hash = n->part_hash;
    s->part_kept = (uint8_t)MIN(n->part_len, CODEC_NOTE_KEY_MAX);
    keyviz_key_set(&s->k, n->key, n->len);
}

/* The worker's slot of salt's table for the current interval, entered
 * if new; NULL when the table is not counted (or nothing ticks yet). */
static G_ALWAYS_INLINE inline struct keyviz_slot *
keyviz_slot_of(struct keyviz_worker *w, const struct salt_table *salt,
               unsigned stats_id)
{
    /* every salt the codec notes lives in a config (as metrics.h) */
    const struct config_table *ct =
        (const struct config_table *)((const char *)salt -
                                      G_STRUCT_OFFSET(struct config_table,
                                                      salt));
    struct keyviz *kv = w->kv;
    gint64 epoch = __atomic_load_n(&kv->epoch, __ATOMIC_RELAXED);
    struct keyviz_wtable *wt;
    struct keyviz_slot *sl;

    if (stats_id == w->last_id && epoch == w->last_epoch && !ct->keyviz_off) {
        return w->last_sl;
    }
    if (epoch < 0 || stats_id == 0 || ct->keyviz_off ||
        stats_id > KEYVIZ_MAX_TABLES ||
        (wt = w->tables[stats_id - 1]) == NULL) {
        return NULL;
    }
    sl = &wt->slot[epoch % KEYVIZ_SLOTS];
    if (sl->epoch != epoch) {
        keyviz_slot_enter(kv, kv->tables[stats_id - 1], sl, epoch);
    }
    w->last_id = stats_id;
    w->last_epoch = epoch;
    w->last_sl = sl;
    return sl;
}

/* The counters of key's range in sl (those of the range found last, when
 * it is the key's). */
static G_ALWAYS_INLINE inline guint64 *
keyviz_row_of(struct keyviz_slot *sl, const uint8_t *key, size_t len)
{
    unsigned __int128 w = keyviz_word16(key, len);
    uint32_t r;

    if (sl->last.lo < w && w < sl->last.hi) {
        return sl->last.row;
    }
    r = keyviz_range_search(sl->bounds, &sl->last, key, len);
    sl->last.row = &sl->counts[(size_t)r * KEYVIZ_METRICS];
    return sl->last.row;
}

/* Counts n in sl, its table's slot; parts: whether its table's hash_part
 * values have a sketch of their own, -1: the slot says (read only for a
 * key read or written). */
static G_ALWAYS_INLINE inline void
keyviz_count(struct keyviz_worker *w, struct keyviz_slot *sl,
             const struct codec_key_note *n, int parts)
{
    guint64 *c = keyviz_row_of(sl, n->key, n->len);
    guint64 seen, x;

    if (n->kind == CODEC_KEY_ROW) {
        c[KEYVIZ_ROWS]++;
        c[KEYVIZ_BYTES_OUT] += n->bytes;
        return;
    }
    c[n->kind == CODEC_KEY_READ ? KEYVIZ_READS : KEYVIZ_WRITES]++;
    c[KEYVIZ_BYTES_IN] += n->bytes;
    /* the sketches and the sample take one read or write in
     * hot_key_sampling, drawn at random (not every n-th: a client cycling
     * through n keys would be seen as one): most of their cost goes, and
     * a hot key's count, scaled back, keeps a spread of
     * sqrt((thin - 1) x count) (keyviz.h).  A 64-bit LCG (Knuth's MMIX
     * constants), its high bits compared */
    x = w->rng * 6364136223846793005ull + 1442695040888963407ull;
    w->rng = x;
    if (x > w->take) {
        return;
    }
    keyviz_sketch_add(&sl->keys, n->key_hash, n->key, n->len, n->len,
                      n->bucket);
    if (parts < 0 ? sl->with_parts : parts) {
        keyviz_sketch_add(&sl->parts, n->part_hash, n->key, n->part_len,
                          n->part_len, n->bucket);
    }
    /* reservoir sampling (Algorithm R): each key read or written is in
     * the sample with the same chance */
    seen = ++sl->seen;
    if (seen <= KEYVIZ_SAMPLE) {
        keyviz_sample_set(&sl->sample[seen - 1], n);
        sl->nsample = (uint32_t)seen;
    } else {
        /* the LCG's next state times seen, the top 64 bits of the
         * product, is uniform in [0, seen): a multiply, not a division */
        x = w->rng * 6364136223846793005ull + 1442695040888963407ull;
        w->rng = x;
        x = (guint64)(((unsigned __int128)x * seen) >> 64);
        if (x < KEYVIZ_SAMPLE) {
            keyviz_sample_set(&sl->sample[x], n);
        }
    }
}

void
keyviz_notes(struct keyviz_worker *w, const struct codec_key_note *n,
             uint32_t count)
{
    const struct salt_table *salt = NULL;
    struct keyviz_slot *sl = NULL;
    gboolean parts = FALSE;

    if (count == 1) {
        /* a point call's batch: no loop state to keep */
        sl = keyviz_slot_of(w, n->salt, n->stats_id);
        if (sl != NULL) {
            keyviz_count(w, sl, n, -1);
        }
        return;
    }
    for (uint32_t i = 0; i < count; i++) {
        /* a call's keys are of one table, mostly: its slot once, and
         * whether its hash_part values have a sketch of their own */
        if (n[i].salt != salt) {
            salt = n[i].salt;
            sl = keyviz_slot_of(w, salt, n[i].stats_id);
            parts = salt->hash != SALT_HASH_WHOLE;
        }
        if (sl != NULL) {
            keyviz_count(w, sl, &n[i], parts);
        }
    }
}

void
keyviz_note(struct keyviz_worker *w, const struct codec_key_note *n)
{
    keyviz_notes(w, n, 1);
}

void
keyviz_error(struct keyviz_worker *w, const struct codec_key_note_ref *key)
{
    struct keyviz_slot *sl = keyviz_slot_of(w, key->salt, key->stats_id);

    if (sl == NULL) {
        return;
    }
    keyviz_row_of(sl, key->key, key->kept)[KEYVIZ_ERRORS]++;
}

/* ---- setup -------------------------------------------------------------- */

struct keyviz *
keyviz_new(const struct config_keyviz *set, unsigned nworkers)
{
    struct keyviz *kv = g_new0(struct keyviz, 1);

    kv->set = *set;
    kv->nworkers = nworkers;
    kv->sketch_cap = MAX(64u, KEYVIZ_SKETCH_FACTOR * set->hot_keys);
    kv->thin = MAX(1u, set->hot_key_sampling);
    kv->nhist = MAX(1u, set->retain_s / set->interval_s);
    kv->epoch = -1;
    kv->snapped = -1;
    kv->harvested = -1;
    kv->told = -1;
    kv->workers = g_new0(struct keyviz_worker, nworkers);
    for (unsigned i = 0; i < nworkers; i++) {
        kv->workers[i].kv = kv;
        kv->workers[i].last_epoch = -2;
        kv->workers[i].rng = 0x9e3779b97f4a7c15ull * (i + 1);
        kv->workers[i].take = G_MAXUINT64 / kv->thin;
        kv->workers[i].tables = g_new0(struct keyviz_wtable *,
                                       KEYVIZ_MAX_TABLES);
    }
    kv->tables = g_new0(struct keyviz_table *, KEYVIZ_MAX_TABLES);
    return kv;
}

/* Table t's (stats_id id) bucket totals as interval epoch begins (main
 * thread).  A table the totals do not know (an unsalted one) keeps no
 * snapshot: its one bucket is its ranges. */
static void
keyviz_snap_table(struct keyviz *kv, struct keyviz_table *t, unsigned id,
                  gint64 epoch)
{
    gboolean ok = kv->totals != NULL &&
                  kv->totals(kv->totals_ctx, id, t->salt.buckets,
                             t->snap[epoch & 3]);

    t->snap_epoch[epoch & 3] = ok ? epoch : -1;
}

void
keyviz_set_bucket_totals(struct keyviz *kv, keyviz_bucket_totals_fn fn,
                         void *ctx)
{
    if (kv != NULL) {
        kv->totals = fn;
        kv->totals_ctx = ctx;
    }
}

struct keyviz_worker *
keyviz_worker(struct keyviz *kv, unsigned id)
{
    return &kv->workers[id];
}

gboolean
keyviz_active(const struct keyviz *kv)
{
    return kv != NULL && kv->set.enabled;
}

void
keyviz_add_table(struct keyviz *kv, unsigned id, const char *name,
                 const struct salt_table *salt)
{
    struct keyviz_table *t;

    if (kv == NULL || !kv->set.enabled || id == 0 || id > KEYVIZ_MAX_TABLES ||
        kv->tables[id - 1] != NULL) {
        return;
    }
    t = keyviz_alloc(kv, sizeof(*t));
    t->name = g_strdup(name);
    t->salt = *salt;
    t->initial = keyviz_bounds_initial(kv, kv->set.ranges);
    t->hist = keyviz_alloc(kv, kv->nhist * sizeof(t->hist[0]));
    for (int i = 0; i < 4; i++) {
        t->snap[i] = keyviz_alloc(kv, keyviz_bucket_bytes(salt->buckets));
        t->snap_epoch[i] = -1;
    }
    if (kv->snapped >= 0) {
        /* added while an interval runs: its buckets count from now */
        keyviz_snap_table(kv, t, id, kv->snapped);
    }
    for (unsigned w = 0; w < kv->nworkers; w++) {
        struct keyviz_wtable *wt = keyviz_alloc(kv, sizeof(*wt));

        for (int s = 0; s < KEYVIZ_SLOTS; s++) {
            keyviz_slot_init(kv, &wt->slot[s], kv->set.ranges);
        }
        kv->workers[w].tables[id - 1] = wt;
    }
    /* published to the workers with the config that names the table */
    kv->tables[id - 1] = t;
}

static void
keyviz_interval_free(struct keyviz *kv, const struct keyviz_table *t,
                     struct keyviz_interval *iv)
{
    if (iv == NULL) {
        return;
    }
    keyviz_release(kv, iv->counts, (size_t)iv->nranges * KEYVIZ_METRICS * 8);
    keyviz_release(kv, iv->bcounts, keyviz_bucket_bytes(t->salt.buckets));
    keyviz_release(kv, iv->hot, iv->nhot * sizeof(struct keyviz_hot));
    keyviz_release(kv, iv->parts, iv->nparts * sizeof(struct keyviz_hot));
    keyviz_bounds_unref(kv, iv->bounds);
    keyviz_release(kv, iv, sizeof(*iv));
}

void
keyviz_free(struct keyviz *kv)
{
    if (kv == NULL) {
        return;
    }
    for (unsigned id = 0; id < KEYVIZ_MAX_TABLES; id++) {
        struct keyviz_table *t = kv->tables[id];

        if (t == NULL) {
            continue;
        }
        for (unsigned w = 0; w < kv->nworkers; w++) {
            struct keyviz_wtable *wt = kv->workers[w].tables[id];

            for (int s = 0; s < KEYVIZ_SLOTS; s++) {
                keyviz_slot_clear(kv, &wt->slot[s], kv->set.ranges);
            }
            keyviz_release(kv, wt, sizeof(*wt));
        }
        for (uint32_t i = 0; i < t->hist_n; i++) {
            keyviz_interval_free(kv, t,
                                 t->hist[(t->hist_head + i) % kv->nhist]);
        }
        for (int i = 0; i < 4; i++) {
            keyviz_bounds_unref(kv, t->ring[i]);
            keyviz_bounds_unref(kv, t->retired[i]);
        }
        keyviz_bounds_unref(kv, t->initial);
        keyviz_bounds_unref(kv, t->latest);
        for (int i = 0; i < 4; i++) {
            keyviz_release(kv, t->snap[i],
                           keyviz_bucket_bytes(t->salt.buckets));
        }
        keyviz_release(kv, t->hist, kv->nhist * sizeof(t->hist[0]));
        g_free(t->name);
        keyviz_release(kv, t, sizeof(*t));
    }
    for (unsigned w = 0; w < kv->nworkers; w++) {
        g_free(kv->workers[w].tables);
    }
    g_free(kv->workers);
    g_free(kv->tables);
    g_free(kv);
}

size_t
keyviz_memory(const struct keyviz *kv)
{
    return kv != NULL ? kv->bytes : 0;
}

size_t
keyviz_memory_bound(const struct keyviz *kv, uint32_t buckets)
{
    size_t ranges = kv->set.ranges;
    size_t slot = ranges * KEYVIZ_METRICS * 8 +
                  2 * keyviz_sketch_size(kv->sketch_cap) +
                  KEYVIZ_SAMPLE * sizeof(struct keyviz_sampled);
    size_t bounds = sizeof(struct keyviz_bounds) +
                    ranges * (sizeof(struct keyviz_key) + sizeof(guint64));
    size_t interval = sizeof(struct keyviz_interval) + bounds +
                      ranges * KEYVIZ_METRICS * 8 +
                      keyviz_bucket_bytes(buckets) +
                      2 * (size_t)kv->set.hot_keys * sizeof(struct keyviz_hot);

    /* the workers' slots, the table, its bucket totals, its initial,
     * published, retired and latest boundaries, and its history */
    return kv->nworkers *
               (sizeof(struct keyviz_wtable) + KEYVIZ_SLOTS * slot) +
           sizeof(struct keyviz_table) + 4 * keyviz_bucket_bytes(buckets) +
           10 * bounds +
           kv->nhist * (sizeof(struct keyviz_interval *) + interval);
}

/* ---- the harvest -------------------------------------------------------- */

struct keyviz_weighted {
    const struct keyviz_sampled *s;
    double w;
};

static int
keyviz_weighted_cmp(const void *pa, const void *pb)
{
    const struct keyviz_weighted *a = pa, *b = pb;

    return keyviz_key_cmp(&a->s->k, b->s->k.key, b->s->k.kept);
}

static int
keyviz_hot_cmp(const void *pa, const void *pb)
{
    const struct keyviz_hot *a = pa, *b = pb;

    if (a->count != b->count) {
        return a->count < b->count ? 1 : -1;
    }
    return keyviz_key_cmp(&a->k, b->k.key, b->k.kept);
}

/* Merges the workers' sketches (which) of an interval into its n
 * hottest, worker i's counts scaled by scale[i]. */
static struct keyviz_hot *
keyviz_merge_sketches(struct keyviz *kv, struct keyviz_slot **slots,
                      const double *scale, unsigned nslots, gboolean parts,
                      uint32_t *n_out)
{
    g_autoptr(GHashTable) seen = g_hash_table_new(g_int64_hash, g_int64_equal);
    g_autoptr(GArray) all = g_array_new(FALSE, TRUE,
                                        sizeof(struct keyviz_hot));
    struct keyviz_hot *out;
    uint32_t n;

    for (unsigned i = 0; i < nslots; i++) {
        const struct keyviz_sketch *s = parts ? &slots[i]->parts
                                              : &slots[i]->keys;

        for (uint32_t j = 0; j < s->n; j++) {
            const struct keyviz_entry *e = &s->e[j];
            struct keyviz_hot h = { 0 };
            double count = 0, err = 0;

            if (g_hash_table_contains(seen, &e->hash)) {
                continue;
            }
            g_hash_table_add(seen, (gpointer)&e->hash);
            h.len = e->len;
            h.bucket = e->bucket;
            h.k = e->k;
            /* every worker's count, or what its sketch may have missed */
            for (unsigned k = 0; k < nslots; k++) {
                const struct keyviz_sketch *o = parts ? &slots[k]->parts
                                                      : &slots[k]->keys;
                int32_t at = keyviz_index_find(o, e->hash);

                if (at >= 0) {
                    count += scale[k] *
                             (double)keyviz_sketch_count(o, (uint32_t)at);
                    err += scale[k] * (double)o->e[at].err;
                } else {
                    count += scale[k] * (double)keyviz_sketch_floor(o);
                    err += scale[k] * (double)keyviz_sketch_floor(o);
                }
            }
            /* both rounded down: err stays within error_bound, which
             * does too */
            h.count = (guint64)count;
            h.err = (guint64)err;
            g_array_append_val(all, h);
        }
    }
    g_array_sort(all, keyviz_hot_cmp);
    n = MIN(all->len, kv->set.hot_keys);
    out = keyviz_alloc(kv, n * sizeof(struct keyviz_hot));
    if (n > 0) {
        memcpy(out, all->data, n * sizeof(struct keyviz_hot));
    }
    *n_out = n;
    return out;
}

/* The fullest bucket's share of the weighted sample with buckets b,
 * hashing each key's hash_part (parts) or whole key. */
static double
keyviz_predict(const struct keyviz_weighted *ws, size_t n, double total,
               uint32_t buckets, gboolean parts)
{
    g_autofree double *load = g_new0(double, buckets);
    double max = 0;

    if (total <= 0) {
        return 0;
    }
    for (size_t i = 0; i < n; i++) {
        guint64 h = parts ? ws[i].s->part_hash : ws[i].s->key_hash;

        load[h % buckets] += ws[i].w;
    }
    for (uint32_t b = 0; b < buckets; b++) {
        max = MAX(max, load[b]);
    }
    return max / total;
}

/*
 * The next boundaries: quantiles of the weighted sample, each the
 * hash_part of a sampled key.  A range never splits the keys of one
 * hash_part value (the rows that share a bucket), and one value heavier
 * than a range gets a range of its own: a celebrity shows as one hot
 * range, not as many lukewarm ones.
 */
static struct keyviz_bounds *
keyviz_bounds_from(struct keyviz *kv, struct keyviz_weighted *ws, size_t n,
                   double total, gint64 epoch)
{
    uint32_t want = kv->set.ranges - 1, got = 0;
    struct keyviz_bounds *b = keyviz_bounds_new(kv, want, epoch);
    double acc = 0;
    uint32_t next = 1;

    for (size_t i = 0; i < n && got < want; i++) {
        const struct keyviz_sampled *s = ws[i].s;

        /* a boundary where the running weight passes next / ranges */
        if (acc >= total * next / kv->set.ranges && s->part_kept > 0 &&
            (got == 0 ||
             keyviz_key_cmp(&b->b[got - 1], s->k.key, s->part_kept) < 0)) {
            keyviz_key_set(&b->b[got++], s->k.key, s->part_kept);
            while (next < kv->set.ranges &&
                   acc >= total * next / kv->set.ranges) {
                next++;
            }
        }
        acc += ws[i].w;
    }
    /* fewer distinct keys than ranges: fewer ranges */
    b->n = got;
    keyviz_bounds_seal(b);
    return b;
}

/* Every table's bucket totals as interval epoch begins (main thread, at
 * the tick that makes it current). */
static void
keyviz_snap(struct keyviz *kv, gint64 epoch)
{
    for (unsigned id = 0; id < KEYVIZ_MAX_TABLES; id++) {
        if (kv->tables[id] != NULL) {
            keyviz_snap_table(kv, kv->tables[id], id + 1, epoch);
        }
    }
}

/* The proxy's per-bucket counts in interval epoch into out: the totals
 * at its start subtracted from those at the next snapshot's.  FALSE
 * when there are none (out untouched): an unsalted table, or one whose
 * interval began before it was counted. */
static gboolean
keyviz_bucket_delta(const struct keyviz_table *t, gint64 epoch, guint64 *out)
{
    const guint64 *from = NULL, *to = NULL;
    gint64 next = G_MAXINT64;

    for (int i = 0; i < 4; i++) {
        if (t->snap_epoch[i] == epoch) {
            from = t->snap[i];
        } else if (t->snap_epoch[i] > epoch && t->snap_epoch[i] < next) {
            /* the first snapshot after it: the next interval's start,
             * or a later one if the ticks skipped an interval */
            next = t->snap_epoch[i];
            to = t->snap[i];
        }
    }
    if (from == NULL || to == NULL) {
        return FALSE;
    }
    for (size_t j = 0; j < (size_t)(t->salt.buckets + 1) * KEYVIZ_BUCKET_KINDS;
         j++) {
        /* running totals only grow */
        out[j] = to[j] >= from[j] ? to[j] - from[j] : 0;
    }
    return TRUE;
}

/* Publishes nb (the caller's reference, taken over) for the interval
 * it was made for: the workers take it when they enter that interval. */
static void
keyviz_publish(struct keyviz *kv, struct keyviz_table *t,
               struct keyviz_bounds *nb)
{
    int slot = (int)(nb->epoch & 3);

    /* the bounds replaced are freed only at the next replacement, four
     * intervals on: a worker entering an interval just now may have
     * loaded the pointer before the store */
    keyviz_bounds_unref(kv, t->retired[slot]);
    t->retired[slot] = t->ring[slot];
    __atomic_store_n(&t->ring[slot], nb, __ATOMIC_RELEASE);
}

/* Intervals the newest boundaries may be carried over thin samples. */
#define KEYVIZ_CARRY_MAX 10

/*
 * An interval that drew no key (a quiet table: no call at all, or too few
 * for one in hot_key_sampling to be drawn, or only rows handed back)
 * gives no sample to place boundaries by: the next interval keeps the
 * newest boundaries a sample gave, rather than falling back to the
 * first-byte split, which would put a table's traffic in one range as
 * soon as it comes back, and for two intervals.
 */
static void
keyviz_carry(struct keyviz *kv, struct keyviz_table *t, gint64 target)
{
    struct keyviz_bounds *nb;

    if (t->latest == NULL) {
        return;
    }
    nb = keyviz_bounds_new(kv, t->latest->n, target);
    memcpy(nb->b, t->latest->b, t->latest->n * sizeof(nb->b[0]));
    keyviz_bounds_seal(nb);
    keyviz_publish(kv, t, nb);
}

static void
keyviz_harvest_table(struct keyviz *kv, struct keyviz_table *t, unsigned id,
                     gint64 epoch, gboolean publish)
{
    g_autofree struct keyviz_slot **slots = g_new0(struct keyviz_slot *,
                                                   kv->nworkers);
    unsigned nslots = 0;
    struct keyviz_interval *iv;
    const struct keyviz_bounds *bounds = NULL;
    g_autofree struct keyviz_weighted *ws = NULL;
    g_autofree double *scale = g_new(double, kv->nworkers);
    size_t nw = 0;
    double total = 0;
    uint32_t nranges;
    gboolean xxh3 = t->salt.mapping == SALT_MAPPING_XXH3;
    gboolean by_totals;

    for (unsigned w = 0; w < kv->nworkers; w++) {
        struct keyviz_slot *sl =
            &kv->workers[w].tables[id]->slot[epoch % KEYVIZ_SLOTS];

        if (__atomic_load_n(&sl->epoch, __ATOMIC_ACQUIRE) == epoch) {
            slots[nslots++] = sl;
        }
    }
    if (nslots == 0) {
        if (publish) {
            keyviz_carry(kv, t, kv->epoch + 1);
        }
        return;
    }
    iv = keyviz_alloc(kv, sizeof(*iv));
    iv->epoch = epoch;
    /* every worker entered the interval with what was published for it;
     * one that entered before the publication used the initial split,
     * and its ranges are left out (its keys and buckets still count) */
    bounds = slots[0]->bounds;
    for (unsigned i = 1; i < nslots; i++) {
        if (slots[i]->bounds != t->initial) {
            bounds = slots[i]->bounds;
        }
    }
    iv->bounds = (struct keyviz_bounds *)bounds;
    iv->bounds->refs++;
    nranges = bounds->n + 1;
    iv->nranges = nranges;
    iv->counts = keyviz_alloc(kv, (size_t)nranges * KEYVIZ_METRICS * 8);
    iv->bcounts = keyviz_alloc(kv, keyviz_bucket_bytes(t->salt.buckets));
    by_totals = keyviz_bucket_delta(t, epoch, iv->bcounts);
    ws = g_new0(struct keyviz_weighted, (size_t)nslots * KEYVIZ_SAMPLE);
    for (unsigned i = 0; i < nslots; i++) {
        struct keyviz_slot *sl = slots[i];
        guint64 ops = 0; /* the worker's reads and writes */

        if (sl->bounds == bounds) {
            for (size_t j = 0; j < (size_t)nranges * KEYVIZ_METRICS; j++) {
                iv->counts[j] += sl->counts[j];
            }
        }
        for (uint32_t r = 0; r <= sl->bounds->n; r++) {
            const guint64 *c = &sl->counts[(size_t)r * KEYVIZ_METRICS];

            ops += c[KEYVIZ_READS] + c[KEYVIZ_WRITES];
            if (!by_totals && t->salt.buckets == 1) {
                /* one bucket (an unsalted table): the ranges' counts
                 * are its counts */
                iv->bcounts[0] += c[KEYVIZ_READS];
                iv->bcounts[1] += c[KEYVIZ_WRITES];
                iv->bcounts[2] += c[KEYVIZ_ROWS];
            }
        }
        HSP_CHECK(sl->seen <= ops); /* the draw takes some of them, and
                                       no worker writes the slot now */
        iv->ops += ops;
        iv->drawn += sl->seen;
        /* what one drawn operation stands for: the worker's operations
         * over those it drew, not hot_key_sampling itself.  Every key's
         * draw is of the same stream, so a stream that happened to take
         * more than one in thin (the LCG's seeds are fixed: every run of
         * a proxy draws alike) would put every count over by as much */
        scale[i] = sl->seen > 0 ? (double)ops / (double)sl->seen : kv->thin;
        /* each sampled key stands for ops / nsample of its worker's */
        for (uint32_t j = 0; j < sl->nsample; j++) {
            ws[nw].s = &sl->sample[j];
            ws[nw].w = (double)ops / sl->nsample;
            total += ws[nw].w;
            nw++;
        }
    }
    iv->hot = keyviz_merge_sketches(kv, slots, scale, nslots, FALSE,
                                    &iv->nhot);
    iv->parts = keyviz_merge_sketches(kv, slots, scale, nslots, TRUE,
                                      &iv->nparts);
    for (int i = 0; i < KEYVIZ_NCAND; i++) {
        iv->pred_part[i] = xxh3 ? keyviz_predict(ws, nw, total,
                                                 keyviz_candidates[i], TRUE)
                                : -1;
        iv->pred_whole[i] = xxh3 ? keyviz_predict(ws, nw, total,
                                                  keyviz_candidates[i], FALSE)
                                 : -1;
    }
    iv->pred_part_now = xxh3 ? keyviz_predict(ws, nw, total, t->salt.buckets,
                                              TRUE)
                             : -1;
    iv->pred_whole_now = xxh3 ? keyviz_predict(ws, nw, total, t->salt.buckets,
                                               FALSE)
                              : -1;

    /* the boundaries of the next interval not begun: the workers take
     * them when they enter it */
    if (nw > 0 && publish) {
        struct keyviz_bounds *nb;

        qsort(ws, nw, sizeof(ws[0]), keyviz_weighted_cmp);
        nb = keyviz_bounds_from(kv, ws, nw, total, kv->epoch + 1);
        /* a thin sample (a quiet interval's few draws) would shrink the
         * table's map to a few ranges, and keep it so while it stays
         * quiet: it replaces the newest boundaries only if it places at
         * least half as many, or if those are KEYVIZ_CARRY_MAX intervals
         * old (the keys in use may have moved) */
        if (t->latest == NULL || 2 * nb->n >= t->latest->n ||
            nb->epoch - t->latest->epoch >= KEYVIZ_CARRY_MAX) {
            keyviz_bounds_unref(kv, t->latest);
            t->latest = nb;
            nb->refs++;
            keyviz_publish(kv, t, nb);
        } else {
            keyviz_bounds_unref(kv, nb);
            keyviz_carry(kv, t, kv->epoch + 1);
        }
    } else if (publish) {
        keyviz_carry(kv, t, kv->epoch + 1);
    }

    /* into the history, the oldest out */
    if (t->hist_n == kv->nhist) {
        keyviz_interval_free(kv, t, t->hist[t->hist_head]);
        t->hist[t->hist_head] = NULL;
        t->hist_head = (t->hist_head + 1) % kv->nhist;
        t->hist_n--;
    }
    t->hist[(t->hist_head + t->hist_n) % kv->nhist] = iv;
    t->hist_n++;
}

void
keyviz_tick(struct keyviz *kv, gint64 now_us)
{
    gint64 epoch, ready, told;

    if (kv == NULL || !kv->set.enabled || now_us < 0) {
        return;
    }
    told = kv->told;
    epoch = now_us / G_USEC_PER_SEC / kv->set.interval_s;
    if (epoch > kv->snapped) {
        /* the buckets' side of the interval beginning: taken as its
         * ranges begin, when the workers see the new number */
        keyviz_snap(kv, epoch);
        kv->snapped = epoch;
    }
    __atomic_store_n(&kv->epoch, epoch, __ATOMIC_RELAXED);
    kv->told = epoch;
    /* an interval is read a second after it ended: no worker still in
     * it by then (a worker notes in microseconds) */
    ready = (now_us - G_USEC_PER_SEC) / G_USEC_PER_SEC / kv->set.interval_s -
            1;
    if (kv->harvested < 0) {
        /* the first tick: what came before was not counted */
        kv->harvested = ready;
        return;
    }
    /* ...and a tick after the workers were told it ended: they learn the
     * interval from the tick's store, so after a tick just before its
     * end they go on counting into it until the next one, and one that
     * read the number just before this tick's store may be in it still */
    ready = MIN(ready, told - 1);
    while (kv->harvested < ready) {
        kv->harvested++;
        for (unsigned id = 0; id < KEYVIZ_MAX_TABLES; id++) {
            if (kv->tables[id] != NULL) {
                /* one publication a tick: the newest interval's */
                keyviz_harvest_table(kv, kv->tables[id], id, kv->harvested,
                                     kv->harvested == ready);
            }
        }
    }
}

/* ---- JSON --------------------------------------------------------------- */

static void
keyviz_json_str(GString *out, const char *s)
{
    g_string_append_c(out, '"');
    for (; *s != '\0'; s++) {
        if (*s == '"' || *s == '\\') {
            g_string_append_printf(out, "\\%c", *s);
        } else if ((unsigned char)*s < 0x20) {
            g_string_append_printf(out, "\\u%04x", (unsigned char)*s);
        } else {
            g_string_append_c(out, *s);
        }
    }
    g_string_append_c(out, '"');
}

/* A key as keys (show or hash) says: escaped, or "#" and its XXH3 in
 * hex.  truncated: the key went on past what was kept. */
static void
keyviz_key_text(GString *out, unsigned keys, const struct keyviz_key *k,
                gboolean truncated)
{
    if (keys == CONFIG_KEYVIZ_HASH) {
        g_string_append_printf(out, "#%016" G_GINT64_MODIFIER "x",
                               (guint64)XXH3_64bits(k->key, k->kept));
    } else {
        escape_append(out, k->key, k->kept);
    }
    if (truncated) {
        g_string_append(out, "...");
    }
}

/* A key as keys says, as a JSON string, or null to hide it. */
static void
keyviz_json_key(GString *out, unsigned keys, const struct keyviz_key *k,
                gboolean truncated)
{
    g_autoptr(GString) s = g_string_new(NULL);

    if (keys == CONFIG_KEYVIZ_HIDE) {
        g_string_append(out, "null");
        return;
    }
    keyviz_key_text(s, keys, k, truncated);
    keyviz_json_str(out, s->str);
}

static const struct keyviz_table *
keyviz_find(const struct keyviz *kv, const char *name)
{
    for (unsigned id = 0; kv != NULL && name != NULL && id < KEYVIZ_MAX_TABLES;
         id++) {
        if (kv->tables[id] != NULL &&
            strcmp(kv->tables[id]->name, name) == 0) {
            return kv->tables[id];
        }
    }
    return NULL;
}

void
keyviz_tables_json(const struct keyviz *kv, GString *out)
{
    gboolean first = TRUE;

    g_string_append_c(out, '[');
    for (unsigned id = 0; kv != NULL && id < KEYVIZ_MAX_TABLES; id++) {
        if (kv->tables[id] != NULL) {
            if (!first) {
                g_string_append_c(out, ',');
            }
            first = FALSE;
            keyviz_json_str(out, kv->tables[id]->name);
        }
    }
    g_string_append_c(out, ']');
}

static char *
keyviz_hash_part_text(const struct salt_table *s)
{
    g_autoptr(GString) d = g_string_new(NULL);

    switch (s->hash) {
    case SALT_HASH_LENGTH: return g_strdup_printf("length:%u", s->hash_len);
    case SALT_HASH_DELIMITER:
        escape_append(d, s->delim, s->delim_len);
        return g_strdup_printf("delimiter:%s:%u", d->str, s->hash_count);
    default: return g_strdup("whole");
    }
}

/* Whether advice lists that bucket count anyway. */
static gboolean
keyviz_candidate(uint32_t buckets)
{
    for (int i = 0; i < KEYVIZ_NCAND; i++) {
        if (keyviz_candidates[i] == buckets) {
            return TRUE;
        }
    }
    return FALSE;
}

static void
keyviz_json_hot(GString *out, unsigned keys, const struct keyviz_hot *h,
                uint32_t n, guint64 ops, uint32_t thin)
{
    g_string_append_c(out, '[');
    for (uint32_t i = 0; i < n; i++) {
        g_string_append_printf(out, "%s{\"key\":", i > 0 ? "," : "");
        keyviz_json_key(out, keys, &h[i].k, h[i].len > h[i].k.kept);
        /* sd: how far the draw spreads a count of that size.  Scaled by
         * the operations over those drawn, a key of share p among ops
         * has a variance of about (thin - 1) x count x (1 - p): a key
         * that is all the operations is drawn as often as they are */
        double p = ops > 0 ? MIN(1.0, (double)h[i].count / ops) : 0.0;

        g_string_append_printf(out,
                               ",\"length\":%u,\"count\":%" G_GUINT64_FORMAT
                               ",\"error\":%" G_GUINT64_FORMAT
                               ",\"sd\":%.0f,\"share\":%.4f,\"bucket\":%u}",
                               h[i].len, h[i].count, h[i].err,
                               sqrt((double)(thin - 1) * (double)h[i].count *
                                    (1.0 - p)),
                               p, h[i].bucket);
    }
    g_string_append_c(out, ']');
}

/* Hot keys, hash_part values, buckets and advice of one interval. */
static void
keyviz_json_detail(GString *out, const struct keyviz *kv, unsigned keys,
                   const struct keyviz_table *t,
                   const struct keyviz_interval *iv)
{
    g_autofree char *hp = keyviz_hash_part_text(&t->salt);
    uint32_t nb = t->salt.buckets, hottest = 0;
    guint64 load = 0, max = 0;
    gboolean whole = t->salt.hash == SALT_HASH_WHOLE;

    g_string_append_printf(out,
                           "\"interval\":{\"start\":%" G_GINT64_FORMAT
                           ",\"end\":%" G_GINT64_FORMAT
                           "},\"ops\":%" G_GUINT64_FORMAT
                           ",\"sampling\":%u,\"drawn\":%" G_GUINT64_FORMAT
                           ",\"error_bound\":%" G_GUINT64_FORMAT
                           ",\"hot_keys\":",
                           iv->epoch * kv->set.interval_s,
                           (iv->epoch + 1) * kv->set.interval_s, iv->ops,
                           kv->thin, iv->drawn, iv->ops / kv->sketch_cap);
    keyviz_json_hot(out, keys, iv->hot, iv->nhot, iv->ops, kv->thin);
    g_string_append(out, ",\"hot_parts\":");
    keyviz_json_hot(out, keys, whole ? iv->hot : iv->parts,
                    whole ? iv->nhot : iv->nparts, iv->ops, kv->thin);
    g_string_append(out, ",\"buckets\":[");
    for (uint32_t b = 0; b <= nb; b++) {
        const guint64 *c = &iv->bcounts[(size_t)b * KEYVIZ_BUCKET_KINDS];

        if (b == nb && c[0] + c[1] + c[2] == 0) {
            break; /* no legacy range, or nothing in it */
        }
        if (b == nb) {
            g_string_append(out, ",{\"bucket\":\"legacy\"");
        } else {
            g_string_append_printf(out, "%s{\"bucket\":%u", b > 0 ? "," : "",
                                   b);
        }
        g_string_append_printf(out,
                               ",\"reads\":%" G_GUINT64_FORMAT
                               ",\"writes\":%" G_GUINT64_FORMAT
                               ",\"rows\":%" G_GUINT64_FORMAT "}",
                               c[0], c[1], c[2]);
        if (b < nb) {
            load += c[0] + c[1];
            if (c[0] + c[1] > max) {
                max = c[0] + c[1];
                hottest = b;
            }
        }
    }
    g_string_append_printf(out,
                           "],\"advice\":{\"buckets\":%u,\"hash_part\":", nb);
    keyviz_json_str(out, hp);
    g_string_append_printf(out,
                           ",\"hottest_bucket\":%u,\"hottest_bucket_share\":"
                           "%.4f,\"even_share\":%.4f,\"notes\":[",
                           hottest, load > 0 ? (double)max / load : 0.0,
                           1.0 / nb);
    {
        g_autoptr(GString) note = g_string_new(NULL);
        gboolean any = FALSE;

        /* a single key worth a word: 5 % of the load or more */
        if (iv->nhot > 0 && iv->ops > 0 && iv->hot[0].count * 20 >= iv->ops) {
            const struct keyviz_hot *h = &iv->hot[0];

            g_string_printf(note,
                            "The hottest key takes %.1f%% of the table's "
                            "reads and writes, all of them in bucket %u: "
                            "salting spreads rows, not a single row, so "
                            "no bucket count or hash_part changes that; "
                            "only the application can (spread the key "
                            "itself, or cache it).",
                            100.0 * h->count / iv->ops, h->bucket);
            if (keys != CONFIG_KEYVIZ_HIDE) {
                g_string_append(note, " Key: ");
                keyviz_key_text(note, keys, &h->k, h->len > h->k.kept);
                g_string_append_c(note, '.');
            }
            keyviz_json_str(out, note->str);
            any = TRUE;
        }
        if (!whole && iv->nparts > 0 && iv->ops > 0) {
            const struct keyviz_hot *h = &iv->parts[0];

            g_string_printf(note,
                            "With hash_part = %s every row sharing a "
                            "hash_part value lands in one bucket: the "
                            "hottest value takes %.1f%% of reads and "
                            "writes, all in bucket %u.",
                            hp, 100.0 * h->count / iv->ops, h->bucket);
            if (iv->pred_whole_now >= 0) {
                g_string_append_printf(note,
                                       " Hashing whole keys, this "
                                       "interval's fullest bucket would "
                                       "take %.1f%% instead of %.1f%%.",
                                       100 * iv->pred_whole_now,
                                       100 * iv->pred_part_now);
            }
            if (any) {
                g_string_append_c(out, ',');
            }
            keyviz_json_str(out, note->str);
            any = TRUE;
        }
        if (load > 0 && (double)max / load > 2.0 / nb) {
            g_string_printf(note,
                            "Bucket %u takes %.1f%% of reads and writes, "
                            "%.1f times its even share.",
                            hottest, 100.0 * max / load,
                            (double)max / load * nb);
            if (any) {
                g_string_append_c(out, ',');
            }
            keyviz_json_str(out, note->str);
        }
    }
    g_string_append(out, "],\"predicted\":[");
    for (int i = 0; i <= KEYVIZ_NCAND; i++) {
        uint32_t b = i < KEYVIZ_NCAND ? keyviz_candidates[i] : nb;
        double p = i < KEYVIZ_NCAND ? iv->pred_part[i] : iv->pred_part_now;
        double w = i < KEYVIZ_NCAND ? iv->pred_whole[i] : iv->pred_whole_now;

        if (p < 0) {
            break;
        }
        if (i == KEYVIZ_NCAND && keyviz_candidate(nb)) {
            break; /* listed already */
        }
        g_string_append_printf(out, "%s{\"buckets\":%u,\"hash_part\":",
                               i > 0 ? "," : "", b);
        keyviz_json_str(out, hp);
        g_string_append_printf(out, ",\"fullest_share\":%.4f}", p);
        if (!whole) {
            g_string_append_printf(out,
                                   ",{\"buckets\":%u,\"hash_part\":\"whole\","
                                   "\"fullest_share\":%.4f}",
                                   b, w);
        }
    }
    g_string_append(out, "]}");
}

static const struct keyviz_interval *
keyviz_at(const struct keyviz *kv, const struct keyviz_table *t, guint i)
{
    return t->hist[(t->hist_head + i) % kv->nhist];
}

gboolean
keyviz_json(const struct keyviz *kv, const struct config *cfg,
            const char *table, unsigned metric, gint64 since_s, GString *out)
{
    const struct keyviz_table *t = keyviz_find(kv, table);
    unsigned keys = cfg->keyviz.keys;
    gboolean first = TRUE;

    if (t == NULL) {
        g_string_append_printf(out,
                               "no table '%s' counted: see "
                               "/keyviz.json's tables\n",
                               table != NULL ? table : "");
        return FALSE;
    }
    g_string_append(out, "{\"table\":");
    keyviz_json_str(out, t->name);
    g_string_append_printf(out,
                           ",\"metric\":\"%s\",\"metrics\":[\"reads\","
                           "\"writes\",\"rows\",\"bytes_in\",\"bytes_out\","
                           "\"errors\"],"
                           "\"interval_s\":%u,\"keys\":\"%s\",\"tables\":",
                           keyviz_metric_name(metric), kv->set.interval_s,
                           keys == CONFIG_KEYVIZ_HIDE   ? "hide"
                           : keys == CONFIG_KEYVIZ_HASH ? "hash"
                                                        : "show");
    keyviz_tables_json(kv, out);
    g_string_append(out, ",\"intervals\":[");
    for (guint i = 0; i < t->hist_n; i++) {
        const struct keyviz_interval *iv = keyviz_at(kv, t, i);
        guint64 sum = 0;

        if ((iv->epoch + 1) * kv->set.interval_s <= since_s) {
            continue;
        }
        g_string_append_printf(out,
                               "%s{\"start\":%" G_GINT64_FORMAT
                               ",\"end\":%" G_GINT64_FORMAT ",\"ranges\":[",
                               first ? "" : ",",
                               iv->epoch * kv->set.interval_s,
                               (iv->epoch + 1) * kv->set.interval_s);
        first = FALSE;
        for (uint32_t r = 0; r <= iv->bounds->n; r++) {
            guint64 v = iv->counts[(size_t)r * KEYVIZ_METRICS + metric];

            sum += v;
            g_string_append_printf(out, "%s{\"start\":", r > 0 ? "," : "");
            if (r == 0) {
                g_string_append(out,
                                keys == CONFIG_KEYVIZ_HIDE ? "null" : "\"\"");
            } else {
                keyviz_json_key(out, keys, &iv->bounds->b[r - 1], FALSE);
            }
            g_string_append(out, ",\"end\":");
            if (r == iv->bounds->n) {
                g_string_append(out, "null");
            } else {
                keyviz_json_key(out, keys, &iv->bounds->b[r], FALSE);
            }
            g_string_append_printf(out, ",\"value\":%" G_GUINT64_FORMAT "}",
                                   v);
        }
        g_string_append_printf(out, "],\"total\":%" G_GUINT64_FORMAT "}", sum);
    }
    g_string_append(out, "],\"latest\":");
    if (t->hist_n == 0) {
        g_string_append(out, "null");
    } else {
        g_string_append_c(out, '{');
        keyviz_json_detail(out, kv, keys, t, keyviz_at(kv, t, t->hist_n - 1));
        g_string_append_c(out, '}');
    }
    g_string_append(out, "}\n");
    return TRUE;
}

gboolean
keyviz_hotkeys_json(const struct keyviz *kv, const struct config *cfg,
                    const char *table, gint64 at_s, GString *out)
{
    const struct keyviz_table *t = keyviz_find(kv, table);
    const struct keyviz_interval *iv = NULL;

    if (t == NULL) {
        g_string_append_printf(out, "no table '%s' counted\n",
                               table != NULL ? table : "");
        return FALSE;
    }
    for (guint i = t->hist_n; i-- > 0;) {
        const struct keyviz_interval *c = keyviz_at(kv, t, i);

        if (at_s == 0 || c->epoch == at_s / kv->set.interval_s) {
            iv = c;
            break;
        }
    }
    g_string_append(out, "{\"table\":");
    keyviz_json_str(out, t->name);
    if (iv == NULL) {
        g_string_append(out, ",\"interval\":null}\n");
        return TRUE;
    }
    g_string_append_c(out, ',');
    keyviz_json_detail(out, kv, cfg->keyviz.keys, t, iv);
    g_string_append(out, "}\n");
    return TRUE;
}
