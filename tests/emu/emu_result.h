/* emu_result.h: builds Thrift1 reply objects (TRowResult, TCell) from store cells. */
#pragma once

#include <glib.h>

#include "emu_filter.h"
#include "hbase_hbase_types.h"

/*
 * Appends the TRowResults of one row to out (HbaseTRowResult *): one, or
 * with batch > 0 consecutive results of at most batch cells each.  Sets
 * either columns (oldest version of a column wins, as HBase's TreeMap
 * does) or sortedColumns, never both.
 */
void emu_result_add_row(GPtrArray *out, const uint8_t *key, size_t key_len,
                        const struct emu_cell *cells, guint n, gboolean sorted,
                        int32_t batch);

/* Appends one HbaseTCell per cell to out. */
void emu_result_add_cells(GPtrArray *out, const struct emu_cell *cells,
                          guint n);

/* Orders struct emu_cell by family, then qualifier, as Result sorts. */
gint emu_result_cell_col_cmp(gconstpointer a, gconstpointer b);

/* A new GByteArray holding "family:qualifier". */
GByteArray *emu_result_column_name(const struct emu_cell *c);
