/* ckpt.h: the checkpoint of a copy: per unit, the last row whose batch
 * the destination acknowledged, in a file replaced atomically. */
#pragma once

#include <glib.h>
#include <stdint.h>

#include "unit.h"

/*
 * The file is text, rewritten whole (temporary file, fsync, rename, fsync
 * of the directory) after every acknowledged batch, so it is either the
 * state before a batch or the state after it, never half of either:
 *
 *   # hbase-salt-migrate checkpoint v1
 *   job JOB
 *   unit SIDE START END STATE rows=N cells=N bytes=N
 *
 * JOB describes the copy (tables, mappings, version mode) and must match
 * on resume.  The units are those of the first run, so a resumed run
 * copies the same key ranges even if HBase has split regions since.
 * STATE is "todo" (nothing written yet), "after=HEX" (every row of the
 * range up to and including the physical source row HEX is written, and
 * no row after it has been acknowledged), or "done".  rows, cells and
 * bytes count what the acknowledged batches wrote.
 */

struct ckpt_entry {
    struct unit unit;
    GBytes *after; /* last row written, NULL: none yet */
    gboolean done;
    guint64 rows, cells, bytes;
    gboolean idle; /* kept in the file, not part of this run (--units) */
};

struct ckpt {
    char *path; /* NULL: no checkpoint file, state in memory only */
    char *job;
    GPtrArray *entries; /* struct ckpt_entry */
};

/* A new checkpoint over units (copied), nothing done. */
struct ckpt *ckpt_new(const char *path, const char *job,
                      const struct unit *units, guint n);

/* Reads path; *out NULL (and TRUE) when the file does not exist. */
gboolean ckpt_load(const char *path, struct ckpt **out, GError **error);

/* Writes the file atomically (nothing when path is NULL). */
gboolean ckpt_save(const struct ckpt *c, GError **error);

void ckpt_free(struct ckpt *c);

/* The entry of a unit with this side and range, or NULL. */
struct ckpt_entry *ckpt_find(struct ckpt *c, const struct unit *u);

/* Adds a unit not yet in c (--units with a checkpoint); returns it. */
struct ckpt_entry *ckpt_add(struct ckpt *c, const struct unit *u);

/* "STATE rows=N cells=N bytes=N" of an entry (g_free). */
char *ckpt_entry_state(const struct ckpt_entry *e);
