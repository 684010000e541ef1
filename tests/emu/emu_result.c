/* emu_result.c: builds Thrift1 reply objects (TRowResult, TCell) from store cells. */
#include "emu_result.h"

#include <string.h>

#include "emu_store.h"

gint emu_result_cell_col_cmp(gconstpointer a, gconstpointer b)
{
    const struct emu_cell *x = a, *y = b;
    int c = emu_store_bytes_cmp(x->family, x->family_len, y->family,
                                y->family_len);

    return c != 0 ? c
                  : emu_store_bytes_cmp(x->qualifier, x->qualifier_len,
                                        y->qualifier, y->qualifier_len);
}

GByteArray *emu_result_column_name(const struct emu_cell *c)
{
    GByteArray *b = g_byte_array_sized_new(
        (guint)(c->family_len + 1 + c->qualifier_len));

    g_byte_array_append(b, c->family, (guint)c->family_len);
    g_byte_array_append(b, (const guint8 *)":", 1);
    g_byte_array_append(b, c->qualifier, (guint)c->qualifier_len);
    return b;
}

static void emu_result_fill_cell(HbaseTCell *tc, const struct emu_cell *c)
{
    tc->value = g_byte_array_sized_new((guint)c->value_len);
    g_byte_array_append(tc->value, c->value, (guint)c->value_len);
    tc->__isset_value = TRUE;
    tc->timestamp = c->timestamp;
    tc->__isset_timestamp = TRUE;
}

void emu_result_add_cells(GPtrArray *out, const struct emu_cell *cells,
                          guint n)
{
    for (guint i = 0; i < n; i++) {
        HbaseTCell *tc = g_object_new(HBASE_TYPE_T_CELL, NULL);

        emu_result_fill_cell(tc, &cells[i]);
        g_ptr_array_add(out, tc);
    }
}

static gboolean emu_result_same_column(const struct emu_cell *a,
                                       const struct emu_cell *b)
{
    return a->family_len == b->family_len &&
           a->qualifier_len == b->qualifier_len &&
           memcmp(a->family, b->family, a->family_len) == 0 &&
           memcmp(a->qualifier, b->qualifier, a->qualifier_len) == 0;
}

static HbaseTRowResult *emu_result_row(const uint8_t *key, size_t key_len,
                                       const struct emu_cell *cells, guint n,
                                       gboolean sorted)
{
    HbaseTRowResult *r = g_object_new(HBASE_TYPE_T_ROW_RESULT, NULL);

    r->row = g_byte_array_sized_new((guint)key_len);
    g_byte_array_append(r->row, key, (guint)key_len);
    r->__isset_row = TRUE;
    for (guint i = 0; i < n; i++) {
        const struct emu_cell *c = &cells[i];

        if (sorted) {
            HbaseTColumn *col = g_object_new(HBASE_TYPE_T_COLUMN, NULL);

            col->columnName = emu_result_column_name(c);
            col->__isset_columnName = TRUE;
            emu_result_fill_cell(col->cell, c);
            col->__isset_cell = TRUE;
            g_ptr_array_add(r->sortedColumns, col);
            continue;
        }
        /* Versions come newest first; the map keeps the last one put,
         * i.e. the oldest, so only the last of each run is inserted (the
         * generated map hashes keys by pointer and would keep both). */
        if (i + 1 < n && emu_result_same_column(c, &cells[i + 1])) {
            continue;
        }
        HbaseTCell *tc = g_object_new(HBASE_TYPE_T_CELL, NULL);
        emu_result_fill_cell(tc, c);
        g_hash_table_insert(r->columns, emu_result_column_name(c), tc);
    }
    if (sorted) {
        r->__isset_sortedColumns = TRUE;
    } else {
        r->__isset_columns = TRUE;
    }
    return r;
}

void emu_result_add_row(GPtrArray *out, const uint8_t *key, size_t key_len,
                        const struct emu_cell *cells, guint n, gboolean sorted,
                        int32_t batch)
{
    guint step = batch > 0 ? (guint)batch : n;

    if (n == 0) {
        return;
    }
    for (guint off = 0; off < n; off += step) {
        g_ptr_array_add(out, emu_result_row(key, key_len, cells + off,
                                            MIN(step, n - off), sorted));
    }
}
