/* merge.c: the bucket heads, merged in logical key order. */
#include "merge.h"

/*
 * The winner of a node whose children's winners are a and b; prev, the
 * node's winner so far, keeps its place against an equal key, so that
 * the top moving on to the next part of the same row stays the top.
 */
static inline unsigned
merge_pick(const struct merge *m, unsigned a, unsigned b, unsigned prev)
{
    const struct merge_key *ka, *kb;
    int c;

    if (a == MERGE_NONE) {
        return b;
    }
    if (b == MERGE_NONE) {
        return a;
    }
    ka = &m->keys[a];
    kb = &m->keys[b];
    c = merge_key_cmp(ka->data, ka->len, kb->data, kb->len);
    if (m->reversed) {
        c = -c;
    }
    if (c != 0) {
        return c < 0 ? a : b;
    }
    return prev == b ? b : a;
}

/* Input i's head changed (came, moved on or left): replays its path. */
static void
merge_replay(struct merge *m, unsigned i)
{
    for (unsigned k = (m->leaves + i) / 2; k >= 1; k /= 2) {
        m->tree[k] = merge_pick(m, m->tree[2 * k], m->tree[2 * k + 1],
                                m->tree[k]);
    }
}

void
merge_init(struct merge *m, unsigned n, gboolean reversed)
{
    m->leaves = 1;
    while (m->leaves < n) {
        m->leaves *= 2;
    }
    m->keys = g_new0(struct merge_key, n);
    m->tree = g_new(unsigned, 2 * m->leaves);
    for (unsigned k = 0; k < 2 * m->leaves; k++) {
        m->tree[k] = MERGE_NONE;
    }
    m->len = 0;
    m->n = n;
    m->reversed = reversed;
}

void
merge_clear(struct merge *m)
{
    g_clear_pointer(&m->keys, g_free);
    g_clear_pointer(&m->tree, g_free);
    m->len = 0;
    m->n = 0;
    m->leaves = 0;
}

void
merge_push(struct merge *m, unsigned input, const uint8_t *key, size_t len)
{
    g_assert(input < m->n && m->tree[m->leaves + input] == MERGE_NONE);
    m->keys[input].data = key;
    m->keys[input].len = len;
    m->tree[m->leaves + input] = input;
    m->len++;
    merge_replay(m, input);
}

void
merge_top_next(struct merge *m, const uint8_t *key, size_t len)
{
    unsigned i = m->tree[1];

    m->keys[i].data = key;
    m->keys[i].len = len;
    merge_replay(m, i);
}

void
merge_pop(struct merge *m)
{
    unsigned i = m->tree[1];

    m->tree[m->leaves + i] = MERGE_NONE;
    m->len--;
    merge_replay(m, i);
}
