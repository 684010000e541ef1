/* emu_filter.h: the emulator's evaluation of HBase filter strings on rows. */
#pragma once

#include <glib.h>
#include <stddef.h>
#include <stdint.h>

/*
 * One cell of a row as the scanner hands it to the filter.  The scanner
 * has already applied the scan's column list, time range and version
 * limit; cells come in HBase order: family, then qualifier ascending
 * (unsigned bytes, shorter first), then timestamp descending.  A filter
 * may rewrite value/value_len (KeyOnlyFilter); lenbuf gives it storage
 * for KeyOnlyFilter(true)'s 4-byte length value.
 */
struct emu_cell {
    const uint8_t *family;
    size_t family_len;
    const uint8_t *qualifier;
    size_t qualifier_len;
    int64_t timestamp;
    const uint8_t *value;
    size_t value_len;
    uint8_t lenbuf[4];
};

typedef enum {
    EMU_FILTER_INCLUDE = 0, /* the row passes: emit the cells marked keep */
    EMU_FILTER_SKIP = 1,    /* the row is filtered out, the scan goes on */
    EMU_FILTER_DONE = 2,    /* this row is out and the scan ends here */
} emu_filter_result;

typedef struct emu_filter emu_filter;

/*
 * Compiles a filter string for one scanner.  On a string HBase would
 * reject, returns NULL with an error whose message reads as HBase's
 * (e.g. "Filter Name Foo not supported", "Incorrect comparatorType").
 * 'reversed' is the scan's direction (InclusiveStopFilter and friends
 * compare the other way).
 */
emu_filter *emu_filter_compile(const uint8_t *text, size_t len,
                               gboolean reversed, GError **error);
void emu_filter_free(emu_filter *f);

/*
 * Evaluates one row.  Per-scanner state (PageFilter's count, WHILE's
 * latch) lives in the filter, so one compiled filter serves one scan.
 * keep[i] is set for every cell that survives cell-level filters; the
 * row is INCLUDE only if at least one cell survives.
 */
emu_filter_result emu_filter_row(emu_filter *f, const uint8_t *row,
                                 size_t row_len, struct emu_cell *cells,
                                 size_t ncells, gboolean *keep);

/*
 * Evaluates one row whose cells (struct emu_cell) are in 'cells' and
 * keeps only the cells that survive; on anything but INCLUDE the array
 * is left as it came.
 */
emu_filter_result emu_filter_row_cells(emu_filter *f, const uint8_t *row,
                                       size_t row_len, GArray *cells);

/* True once the filter says nothing more can match (WHILE, PageFilter...). */
gboolean emu_filter_all_remaining(const emu_filter *f);
