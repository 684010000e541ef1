/* merge.h: the bucket heads, merged, in logical key order: pure, no I/O. */
#pragma once

#include <glib.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

/*
 * Inputs are numbered 0..n-1 (a scan's buckets); each one in the tree has
 * a head key, which points into the caller's memory and must stay valid
 * while it is in the tree.  The top is the input whose head comes first:
 * the smallest key as HBase orders row keys (unsigned bytes, a key before
 * every longer key it prefixes), the largest for a reversed scan.  Equal
 * keys never displace the top, so the partial rows of one row (TScan's
 * batchSize) leave one after another.
 */

struct merge_key {
    const uint8_t *data;
    size_t len;
};

/*
 * A winner tree over the inputs: leaf i (tree[leaves + i]) is input i,
 * or MERGE_NONE while it is not in; each node above holds the winner of
 * its two children, tree[1] the top.  A head that moves on replays only
 * its own path, one comparison a level (4 for 16 buckets), where a
 * binary heap's sift-down makes two a level.
 */
#define MERGE_NONE G_MAXUINT

struct merge {
    struct merge_key *keys; /* head key of each input */
    unsigned *tree;         /* 2 * leaves nodes, tree[0] unused */
    unsigned leaves;        /* n rounded up to a power of 2 */
    unsigned len;           /* inputs in the tree */
    unsigned n;             /* inputs */
    gboolean reversed;      /* largest key first */
};

/* Orders two keys as HBase's Bytes.compareTo does.  Inline: it is the
 * tree's inner loop, a few calls per merged row. */
static inline int
merge_key_cmp(const uint8_t *a, size_t alen, const uint8_t *b, size_t blen)
{
    size_t n = MIN(alen, blen);
    int c = n > 0 ? memcmp(a, b, n) : 0;

    if (c != 0) {
        return c;
    }
    return alen < blen ? -1 : alen > blen ? 1 : 0;
}

void merge_init(struct merge *m, unsigned n, gboolean reversed);
void merge_clear(struct merge *m);

/* Adds input i, not in the tree, with its head key. */
void merge_push(struct merge *m, unsigned i, const uint8_t *key, size_t len);

static inline gboolean
merge_empty(const struct merge *m)
{
    return m->len == 0;
}

/* The input whose head comes first; the tree must not be empty. */
static inline unsigned
merge_top(const struct merge *m)
{
    return m->tree[1];
}

static inline const struct merge_key *
merge_top_key(const struct merge *m)
{
    return &m->keys[m->tree[1]];
}

/* The top input's head moved on to key: it takes its place again. */
void merge_top_next(struct merge *m, const uint8_t *key, size_t len);
/* The top input has no head now: it leaves the tree. */
void merge_pop(struct merge *m);
