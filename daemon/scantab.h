/* scantab.h: the process-wide table of scanner ids, as HBase hands out. */
#pragma once

#include <glib.h>
#include <stdint.h>

struct worker;

/*
 * A scanner id is valid on any connection to any worker, as HBase's are,
 * but a scanner is only ever touched on the worker that owns it.  The
 * table maps ids to the item each scanner embeds, under one lock; what it
 * hands out may only be followed on the owner's thread (another worker
 * could see it freed as soon as the lock is dropped), so a lookup also
 * says who the owner is.
 */

/* Embedded in each scanner; the table reads only these fields. */
struct scantab_item {
    int32_t id;           /* 0 until added */
    struct worker *owner; /* set before adding, never changed */
};

struct scantab;

struct scantab *scantab_new(void);
/* Frees the table; free_item gets every item still in it (the workers
 * are gone by then). */
void scantab_free(struct scantab *t, void (*free_item)(struct scantab_item *));

/* Gives item the next free positive id, as HBase's counter does. */
int32_t scantab_add(struct scantab *t, struct scantab_item *item);
void scantab_remove(struct scantab *t, int32_t id);
/* The item of id or NULL, and its owner: follow it only on that thread. */
struct scantab_item *scantab_find(struct scantab *t, int32_t id,
                                  struct worker **owner);
/* Items of owner (called on its thread), in a new array. */
GPtrArray *scantab_owned(struct scantab *t, const struct worker *owner);
/* Items in the table now, over all workers. */
unsigned scantab_count(struct scantab *t);
