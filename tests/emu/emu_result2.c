/* emu_result2.c: builds Thrift2 reply objects (TResult, TColumnValue) from store cells. */
#include "emu_result2.h"

/* Cell.Type.Put's code, which TColumnValue.type carries. */
#define EMU_RESULT2_TYPE_PUT 4

static GByteArray *emu_result2_bytes(const uint8_t *p, size_t len)
{
    GByteArray *b = g_byte_array_sized_new((guint)len);

    if (len > 0) {
        g_byte_array_append(b, p, (guint)len);
    }
    return b;
}

void emu_result2_fill(Hbase2TResult *r, const uint8_t *key, size_t key_len,
                      const struct emu_cell *cells, guint n, gboolean partial)
{
    if (n > 0) {
        r->row = emu_result2_bytes(key, key_len);
        r->__isset_row = TRUE;
    }
    for (guint i = 0; i < n; i++) {
        const struct emu_cell *c = &cells[i];
        Hbase2TColumnValue *cv = g_object_new(HBASE2_TYPE_T_COLUMN_VALUE,
                                              NULL);

        cv->family = emu_result2_bytes(c->family, c->family_len);
        cv->qualifier = emu_result2_bytes(c->qualifier, c->qualifier_len);
        cv->value = emu_result2_bytes(c->value, c->value_len);
        cv->timestamp = c->timestamp;
        cv->__isset_timestamp = TRUE;
        cv->type = EMU_RESULT2_TYPE_PUT;
        cv->__isset_type = TRUE;
        g_ptr_array_add(r->columnValues, cv);
    }
    r->stale = FALSE;
    r->__isset_stale = TRUE;
    r->partial = partial;
    r->__isset_partial = TRUE;
}

void emu_result2_add_row(GPtrArray *out, const uint8_t *key, size_t key_len,
                         const struct emu_cell *cells, guint n,
                         gboolean sorted, int32_t batch)
{
    guint step = batch > 0 ? (guint)batch : n;

    for (guint off = 0; off < n; off += step) {
        Hbase2TResult *r = g_object_new(HBASE2_TYPE_T_RESULT, NULL);
        guint len = MIN(step, n - off);

        emu_result2_fill(r, key, key_len, cells + off, len, off + len < n);
        g_ptr_array_add(out, r);
    }
}
