/* tablecheck.h: what HBase says of each salted table that is worth a warning: a table that does not exist, buckets sharing a region. */
#pragma once

#include <glib.h>

#include "config.h"
#include "hconn.h"

/*
 * Asks HBase, through c, about every salted table of cfg and appends one
 * warning (char *, without the program's name) to warnings per table
 * that does not exist (naming the existing table whose name is closest,
 * as a misspelt section is served as configured yet salts nothing) and
 * per table whose buckets share a region (with the HBase shell `split`
 * commands that give each its own).  Sets each table's region_buckets
 * in ts, when given (NULL: --check-config).  FALSE when a call failed;
 * the warnings so far stay.
 */
struct tabstate;
gboolean tablecheck_run(struct hconn *c, const struct config *cfg,
                        struct tabstate *ts, GPtrArray *warnings,
                        GError **error);

/* /healthz: the tables whose buckets share a region at the last check,
 * one line each, appended to out; their number. */
unsigned tablecheck_describe(const struct tabstate *ts, GString *out);
