/* scantab.c: the process-wide table of scanner ids. */
#include "scantab.h"

struct scantab {
    GMutex lock;       /* guards everything below */
    GHashTable *by_id; /* GINT_TO_POINTER(id) -> struct scantab_item */
    int32_t next_id;   /* last id handed out */
};

struct scantab *
scantab_new(void)
{
    struct scantab *t = g_new0(struct scantab, 1);

    g_mutex_init(&t->lock);
    t->by_id = g_hash_table_new(g_direct_hash, g_direct_equal);
    return t;
}

void
scantab_free(struct scantab *t, void (*free_item)(struct scantab_item *))
{
    GHashTableIter it;
    gpointer key, value;

    g_hash_table_iter_init(&it, t->by_id);
    while (g_hash_table_iter_next(&it, &key, &value)) {
        free_item(value);
    }
    g_hash_table_destroy(t->by_id);
    g_mutex_clear(&t->lock);
    g_free(t);
}

int32_t
scantab_add(struct scantab *t, struct scantab_item *item)
{
    int32_t id;

    g_mutex_lock(&t->lock);
    do {
        t->next_id = t->next_id == G_MAXINT32 ? 1 : t->next_id + 1;
        id = t->next_id;
    } while (g_hash_table_contains(t->by_id, GINT_TO_POINTER(id)));
    item->id = id;
    g_hash_table_insert(t->by_id, GINT_TO_POINTER(id), item);
    g_mutex_unlock(&t->lock);
    return id;
}

void
scantab_remove(struct scantab *t, int32_t id)
{
    g_mutex_lock(&t->lock);
    g_hash_table_remove(t->by_id, GINT_TO_POINTER(id));
    g_mutex_unlock(&t->lock);
}

struct scantab_item *
scantab_find(struct scantab *t, int32_t id, struct worker **owner)
{
    struct scantab_item *item;

    g_mutex_lock(&t->lock);
    item = g_hash_table_lookup(t->by_id, GINT_TO_POINTER(id));
    *owner = item != NULL ? item->owner : NULL;
    g_mutex_unlock(&t->lock);
    return item;
}

GPtrArray *
scantab_owned(struct scantab *t, const struct worker *owner)
{
    GPtrArray *found = g_ptr_array_new();
    GHashTableIter it;
    gpointer key, value;

    g_mutex_lock(&t->lock);
    g_hash_table_iter_init(&it, t->by_id);
    while (g_hash_table_iter_next(&it, &key, &value)) {
        struct scantab_item *item = value;

        if (item->owner == owner) {
            g_ptr_array_add(found, item);
        }
    }
    g_mutex_unlock(&t->lock);
    return found;
}

unsigned
scantab_count(struct scantab *t)
{
    g_autoptr(GMutexLocker) locked = g_mutex_locker_new(&t->lock);

    return g_hash_table_size(t->by_id);
}
