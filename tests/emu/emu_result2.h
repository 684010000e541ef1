/* emu_result2.h: builds Thrift2 reply objects (TResult, TColumnValue) from store cells. */
#pragma once

#include <glib.h>

#include "emu_filter.h"
#include "hbase2_hbase2_types.h"

/*
 * Fills r from one row's cells as resultFromHBase does: row set only when
 * there are cells (a missing row has none), every cell with its
 * timestamp and type Put, stale and partial always written.
 */
void emu_result2_fill(Hbase2TResult *r, const uint8_t *key, size_t key_len,
                      const struct emu_cell *cells, guint n, gboolean partial);

/*
 * The scanner's emit function for Thrift2: one TResult per row, or with
 * batch > 0 consecutive ones of at most batch cells, each but the last
 * marked partial (Result.mayHaveMoreCellsInRow).  'sorted' is unused:
 * Thrift2 results are always a list.
 */
void emu_result2_add_row(GPtrArray *out, const uint8_t *key, size_t key_len,
                         const struct emu_cell *cells, guint n,
                         gboolean sorted, int32_t batch);
