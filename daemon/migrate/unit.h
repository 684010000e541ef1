/* unit.h: a work unit of a migration (one key range of one table), its
 * text form, and how units are shared among hosts.  Pure. */
#pragma once

#include <glib.h>
#include <stddef.h>
#include <stdint.h>

/*
 * A unit line, as --units reads and --list-units writes it:
 *
 *   SIDE START END
 *
 * SIDE is "source" (rows of the source table: copied, or verified against
 * the destination) or "dest" (rows of the destination table: --verify
 * checks that each also exists in the source).  START and END are the
 * physical row keys bounding the range, [START, END), in lowercase or
 * uppercase hex, "-" for an open end (the table's start or end).  Fields
 * are separated by spaces or tabs; blank lines and lines starting with
 * '#' are skipped.  E.g. "source - 4000" and "source 4000 -".
 *
 * A result line (stdout in --units mode) is the unit followed by its
 * outcome:
 *
 *   SIDE START END ok rows=N cells=N bytes=N
 *   SIDE START END differ rows=N cells=N bytes=N diffs=N
 *   SIDE START END error MESSAGE
 */

typedef enum {
    UNIT_SOURCE = 0,
    UNIT_DEST = 1,
} unit_side_t;

#define UNIT_ERROR unit_error_quark()
GQuark unit_error_quark(void);

struct unit {
    unit_side_t side;
    GBytes *start; /* physical, inclusive; empty: table start */
    GBytes *end;   /* physical, exclusive; empty: table end */
};

void unit_clear(struct unit *u);

/* Parses one line; FALSE with *skip for blank and comment lines, FALSE
 * with an error for a malformed one. */
gboolean unit_parse(const char *line, struct unit *u, gboolean *skip,
                    GError **error);

/* "SIDE START END" (g_free). */
char *unit_format(const struct unit *u);

/* Keys in HBase's order: bytewise, a prefix first. */
int unit_key_cmp(const uint8_t *a, size_t alen, const uint8_t *b, size_t blen);

/* Whether a key lies in [start, end). */
gboolean unit_contains(const struct unit *u, const uint8_t *key, size_t len);

/* Parses "I/N" (1 <= I <= N). */
gboolean unit_parse_shard(const char *text, guint *index, guint *count,
                          GError **error);

/* Whether the k-th unit (0-based, in the order listed) is shard
 * index/count's: every count-th unit from index - 1, so each shard gets
 * regions from all over the table. */
static inline gboolean
unit_in_shard(guint k, guint index, guint count)
{
    return count <= 1 || k % count == index - 1;
}

/* How far key lies through [start, end), 0..1, read from the bytes after
 * their common prefix as a fraction of the key space (an estimate: rows
 * are not spread evenly). */
double unit_fraction(const struct unit *u, const uint8_t *key, size_t len);
