/* merge.c: the heap of bucket heads, in logical key order. */
#include "merge.h"

/* Whether input i's head comes strictly before input j's. */
static inline gboolean
merge_before(const struct merge *m, unsigned i, unsigned j)
{
    const struct merge_key *a = &m->keys[i], *b = &m->keys[j];
    int c = merge_key_cmp(a->data, a->len, b->data, b->len);

    return m->reversed ? c > 0 : c < 0;
}

void
merge_init(struct merge *m, unsigned n, gboolean reversed)
{
    m->keys = g_new0(struct merge_key, n);
    m->heap = g_new(unsigned, n);
    m->len = 0;
    m->n = n;
    m->reversed = reversed;
}

void
merge_clear(struct merge *m)
{
    g_clear_pointer(&m->keys, g_free);
    g_clear_pointer(&m->heap, g_free);
    m->len = 0;
    m->n = 0;
}

static inline void
merge_swap(struct merge *m, unsigned i, unsigned j)
{
    unsigned tmp = m->heap[i];

    m->heap[i] = m->heap[j];
    m->heap[j] = tmp;
}

static void
merge_down(struct merge *m, unsigned i)
{
    for (;;) {
        unsigned l = 2 * i + 1, r = l + 1, first = i;

        if (l < m->len && merge_before(m, m->heap[l], m->heap[first])) {
            first = l;
        }
        if (r < m->len && merge_before(m, m->heap[r], m->heap[first])) {
            first = r;
        }
        if (first == i) {
            return;
        }
        merge_swap(m, i, first);
        i = first;
    }
}

void
merge_push(struct merge *m, unsigned input, const uint8_t *key, size_t len)
{
    unsigned i = m->len++;

    g_assert(input < m->n && m->len <= m->n);
    m->keys[input].data = key;
    m->keys[input].len = len;
    m->heap[i] = input;
    while (i > 0) {
        unsigned parent = (i - 1) / 2;

        if (!merge_before(m, m->heap[i], m->heap[parent])) {
            return;
        }
        merge_swap(m, i, parent);
        i = parent;
    }
}

void
merge_top_next(struct merge *m, const uint8_t *key, size_t len)
{
    m->keys[m->heap[0]].data = key;
    m->keys[m->heap[0]].len = len;
    merge_down(m, 0);
}

void
merge_pop(struct merge *m)
{
    m->heap[0] = m->heap[--m->len];
    merge_down(m, 0);
}
