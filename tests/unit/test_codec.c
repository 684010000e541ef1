/* test_codec.c: call and reply rewriting, checked by decoding with c_glib. */
#include <string.h>

#include "codec.h"
#include "config.h"
#include "hbase1.h"
#include "hbase2_hbase2_types.h"
#include "hbase_hbase_types.h"
#include "salt.h"
#include "unit_helpers.h"

static const char test_conf[] = "[table:salted]\n"
                                "buckets = 16\n"
                                "[table:hexed]\n"
                                "buckets = 300\n"
                                "salt_format = hex\n"
                                "salt_separator = -\n";

static struct config *test_cfg;

/* One message through the codec with the tests' config: the fields each
 * call sets, by name (a pointer to a compound literal, alive to the end
 * of the enclosing block). */
#define TEST_IO(...) (&(struct codec_io){ .cfg = test_cfg, __VA_ARGS__ })

static const struct salt_table *
test_table(const char *name)
{
    const struct config_table *t = config_find_table(test_cfg, name,
                                                     strlen(name));

    g_assert_nonnull(t);
    return &t->salt;
}

/* The physical key the mapping gives, as a byte array. */
static GByteArray *
test_physical(const char *table, const void *key, size_t len)
{
    uint8_t buf[256];
    size_t n = salt_key(test_table(table), key, len, buf, sizeof(buf));

    g_assert_cmpuint(n, >, 0);
    return unit_bytes(buf, n);
}

static void
test_assert_bytes(const GByteArray *got, const GByteArray *want)
{
    g_assert_cmpmem(got->data, got->len, want->data, want->len);
}

static const struct {
    const char *key;
    size_t len;
} test_rows[] = {
    { "a", 1 },
    { "b\0c", 3 },
    { "\xff\xff", 2 },
    { "user42", 6 },
};

static void
test_get_rows_request(gconstpointer data)
{
    int mode = GPOINTER_TO_INT(data);
    wire_proto_t from = (mode & 1) ? WIRE_COMPACT : WIRE_BINARY;
    wire_proto_t to = (mode & 2) ? WIRE_COMPACT : WIRE_BINARY;
    const char *table = (mode & 4) ? "hexed" : "salted";
    HbaseHbaseGetRowsArgs *args = g_object_new(HBASE_TYPE_HBASE_GET_ROWS_ARGS,
                                               NULL);
    HbaseHbaseGetRowsArgs *back;
    struct codec_call call;
    struct codec_error err;
    struct wire_buf out;
    GByteArray *msg;

    args->tableName = unit_bytes(table, strlen(table));
    args->__isset_tableName = TRUE;
    for (size_t i = 0; i < G_N_ELEMENTS(test_rows); i++) {
        g_ptr_array_add(args->rows,
                        unit_bytes(test_rows[i].key, test_rows[i].len));
    }
    args->__isset_rows = TRUE;
    g_hash_table_insert(args->attributes, unit_bytes("k", 1),
                        unit_bytes("v", 1));
    args->__isset_attributes = TRUE;
    msg = unit_encode(from, "getRows", T_CALL, 7, args);

    wire_buf_init(&out);
    g_assert_cmpint(codec_request(TEST_IO(.data = msg->data, .len = msg->len,
                                          .from = from, .to = to,
                                          .backend_seqid = 1234, .out = &out,
                                          .err = &err),
                                  &call),
                    ==, CODEC_OK);
    g_assert_cmpint(call.client_seqid, ==, 7);
    g_assert_cmpstr(call.name, ==, "getRows");
    g_assert_true(call.salt == test_table(table));

    back = g_object_new(HBASE_TYPE_HBASE_GET_ROWS_ARGS, NULL);
    unit_decode(to, out.data, out.len, "getRows", T_CALL, 1234, back);
    g_assert_cmpmem(back->tableName->data, back->tableName->len, table,
                    strlen(table));
    g_assert_cmpuint(back->rows->len, ==, G_N_ELEMENTS(test_rows));
    for (size_t i = 0; i < G_N_ELEMENTS(test_rows); i++) {
        g_autoptr(GByteArray) want = test_physical(table, test_rows[i].key,
                                                   test_rows[i].len);

        test_assert_bytes(g_ptr_array_index(back->rows, i), want);
    }
    g_assert_cmpuint(g_hash_table_size(back->attributes), ==, 1);

    g_object_unref(back);
    g_object_unref(args);
    g_byte_array_unref(msg);
    wire_buf_free(&out);
}

/* A table the config does not name: the body is the same bytes. */
static void
test_unsalted_passthrough(void)
{
    HbaseHbaseMutateRowArgs *args =
        g_object_new(HBASE_TYPE_HBASE_MUTATE_ROW_ARGS, NULL);
    HbaseMutation *mu = g_object_new(HBASE_TYPE_MUTATION, NULL);
    struct codec_call call;
    struct codec_error err;
    struct wire_buf out;
    g_autoptr(GByteArray) msg = NULL;
    g_autoptr(GByteArray) reencoded = NULL;

    args->tableName = unit_bytes("plain", 5);
    args->__isset_tableName = TRUE;
    args->row = unit_bytes("r1", 2);
    args->__isset_row = TRUE;
    mu->column = unit_bytes("cf:q", 4);
    mu->__isset_column = TRUE;
    mu->value = unit_bytes("value", 5);
    mu->__isset_value = TRUE;
    g_ptr_array_add(args->mutations, mu);
    args->__isset_mutations = TRUE;
    msg = unit_encode(WIRE_BINARY, "mutateRow", T_CALL, 3, args);
    /* what the output must be: the same call under the backend's seqid */
    reencoded = unit_encode(WIRE_BINARY, "mutateRow", T_CALL, 99, args);

    wire_buf_init(&out);
    g_assert_cmpint(codec_request(TEST_IO(.data = msg->data, .len = msg->len,
                                          .from = WIRE_BINARY,
                                          .to = WIRE_BINARY,
                                          .backend_seqid = 99, .out = &out,
                                          .err = &err),
                                  &call),
                    ==, CODEC_OK);
    g_assert_null(call.salt);
    g_assert_cmpmem(out.data, out.len, reencoded->data, reencoded->len);
    g_object_unref(args);
    wire_buf_free(&out);
}

/* A table the catalog holds as salted and the config leaves unsalted
 * (config_orphan): a call on its rows is refused with the reason and
 * writes nothing; a call on the table itself passes; others pass. */
static void
test_orphan_refused(void)
{
    static const char why[] = "table plain is not served: no section";
    HbaseHbaseMutateRowArgs *args =
        g_object_new(HBASE_TYPE_HBASE_MUTATE_ROW_ARGS, NULL);
    HbaseHbaseGetColumnDescriptorsArgs *desc =
        g_object_new(HBASE_TYPE_HBASE_GET_COLUMN_DESCRIPTORS_ARGS, NULL);
    struct config_orphans *set = g_malloc0(sizeof(*set) +
                                           2 * sizeof(set->items[0]));
    struct codec_call call;
    struct codec_error err;
    struct wire_buf out;
    const char *tables[] = { "plain", "default:plain", "plain2" };
    codec_status_t st;

    set->n = 2;
    set->items[0] = (struct config_orphan){ "other", 5, "other" };
    set->items[1] = (struct config_orphan){ "plain", 5, why };
    g_atomic_pointer_set(&test_cfg->catalog_orphans, set);
    wire_buf_init(&out);
    for (guint i = 0; i < G_N_ELEMENTS(tables); i++) {
        g_autoptr(GByteArray) msg = NULL;

        args->tableName = unit_bytes(tables[i], strlen(tables[i]));
        args->__isset_tableName = TRUE;
        args->row = unit_bytes("r1", 2);
        args->__isset_row = TRUE;
        msg = unit_encode(WIRE_BINARY, "mutateRow", T_CALL, 3, args);
        out.len = 0;
        st = codec_request(TEST_IO(.data = msg->data, .len = msg->len,
                                   .from = WIRE_BINARY, .to = WIRE_BINARY,
                                   .backend_seqid = 99, .out = &out,
                                   .err = &err),
                           &call);
        if (i < 2) {
            g_assert_cmpint(st, ==, CODEC_REJECT);
            g_assert_cmpstr(err.message, ==, why);
            g_assert_cmpint(err.answer, ==, CODEC_ANSWER_IO);
            g_assert_cmpint(err.can_retry, ==, 0);
            g_assert_cmpuint(out.len, ==, 0);
        } else {
            /* a name it is a prefix of: passes through */
            g_assert_cmpint(st, ==, CODEC_OK);
        }
        g_byte_array_unref(args->tableName);
        g_byte_array_unref(args->row);
    }
    args->tableName = NULL;
    args->row = NULL;
    {
        g_autoptr(GByteArray) msg = NULL;

        desc->tableName = unit_bytes("plain", 5);
        desc->__isset_tableName = TRUE;
        msg = unit_encode(WIRE_BINARY, "getColumnDescriptors", T_CALL, 4,
                          desc);
        out.len = 0;
        g_assert_cmpint(codec_request(TEST_IO(.data = msg->data,
                                              .len = msg->len,
                                              .from = WIRE_BINARY,
                                              .to = WIRE_BINARY,
                                              .backend_seqid = 99, .out = &out,
                                              .err = &err),
                                      &call),
                        ==, CODEC_OK);
    }
    g_atomic_pointer_set(&test_cfg->catalog_orphans, NULL);
    g_free(set);
    g_object_unref(args);
    g_object_unref(desc);
    wire_buf_free(&out);
}

/* getRegionInfo's argument through codec_request, as c_glib reads it. */
static GByteArray *
test_region_info_row(wire_proto_t proto, const void *meta, size_t len)
{
    HbaseHbaseGetRegionInfoArgs *args =
        g_object_new(HBASE_TYPE_HBASE_GET_REGION_INFO_ARGS, NULL);
    HbaseHbaseGetRegionInfoArgs *back =
        g_object_new(HBASE_TYPE_HBASE_GET_REGION_INFO_ARGS, NULL);
    struct codec_call call;
    struct codec_error err;
    struct wire_buf out;
    g_autoptr(GByteArray) msg = NULL;
    GByteArray *row;

    args->row = unit_bytes(meta, len);
    args->__isset_row = TRUE;
    msg = unit_encode(proto, "getRegionInfo", T_CALL, 5, args);
    wire_buf_init(&out);
    g_assert_cmpint(codec_request(TEST_IO(.data = msg->data, .len = msg->len,
                                          .from = proto, .to = proto,
                                          .backend_seqid = 7, .out = &out,
                                          .err = &err),
                                  &call),
                    ==, CODEC_OK);
    unit_decode(proto, out.data, out.len, "getRegionInfo", T_CALL, 7, back);
    row = g_byte_array_ref(back->row);
    g_object_unref(args);
    g_object_unref(back);
    wire_buf_free(&out);
    return row;
}

/* Test: getRegionInfo's hbase:meta row "table,row,suffix" gets the salt of
 * a salted table's row (split at the first comma and the last, as meta
 * keys are); anything else goes on as sent */
static void
test_region_info_request(gconstpointer data)
{
    wire_proto_t proto = GPOINTER_TO_INT(data) ? WIRE_COMPACT : WIRE_BINARY;
    static const char *const same[] = {
        "salted,,99999999999999",
        "salted,user42",
        "plain,user42,9",
        "nocomma",
        "",
        "salted,",
    };
    static const struct {
        const char *table, *row, *suffix;
    } salted[] = {
        { "salted", "user42", ",99999999999999" },
        { "hexed", "a,b", ",9" },
        { "salted", "x", "," },
    };

    for (size_t i = 0; i < G_N_ELEMENTS(same); i++) {
        g_autoptr(GByteArray) got = test_region_info_row(proto, same[i],
                                                         strlen(same[i]));

        g_assert_cmpmem(got->data, got->len, same[i], strlen(same[i]));
    }
    for (size_t i = 0; i < G_N_ELEMENTS(salted); i++) {
        g_autofree char *meta = g_strconcat(salted[i].table, ",",
                                            salted[i].row, salted[i].suffix,
                                            NULL);
        g_autoptr(GByteArray) got = test_region_info_row(proto, meta,
                                                         strlen(meta));
        g_autoptr(GByteArray) phys = test_physical(salted[i].table,
                                                   salted[i].row,
                                                   strlen(salted[i].row));
        g_autoptr(GByteArray) want = g_byte_array_new();

        g_byte_array_append(want, (const guint8 *)salted[i].table,
                            (guint)strlen(salted[i].table));
        g_byte_array_append(want, (const guint8 *)",", 1);
        g_byte_array_append(want, phys->data, phys->len);
        g_byte_array_append(want, (const guint8 *)salted[i].suffix,
                            (guint)strlen(salted[i].suffix));
        test_assert_bytes(got, want);
    }
}

static void
test_mutate_rows_request(void)
{
    HbaseHbaseMutateRowsArgs *args =
        g_object_new(HBASE_TYPE_HBASE_MUTATE_ROWS_ARGS, NULL);
    HbaseHbaseMutateRowsArgs *back;
    struct codec_call call;
    struct codec_error err;
    struct wire_buf out;
    g_autoptr(GByteArray) msg = NULL;

    args->tableName = unit_bytes("salted", 6);
    args->__isset_tableName = TRUE;
    for (size_t i = 0; i < G_N_ELEMENTS(test_rows); i++) {
        HbaseBatchMutation *bm = g_object_new(HBASE_TYPE_BATCH_MUTATION, NULL);
        HbaseMutation *mu = g_object_new(HBASE_TYPE_MUTATION, NULL);

        bm->row = unit_bytes(test_rows[i].key, test_rows[i].len);
        bm->__isset_row = TRUE;
        mu->column = unit_bytes("cf:q", 4);
        mu->__isset_column = TRUE;
        mu->value = unit_bytes(test_rows[i].key, test_rows[i].len);
        mu->__isset_value = TRUE;
        g_ptr_array_add(bm->mutations, mu);
        bm->__isset_mutations = TRUE;
        g_ptr_array_add(args->rowBatches, bm);
    }
    args->__isset_rowBatches = TRUE;
    msg = unit_encode(WIRE_COMPACT, "mutateRows", T_CALL, 1, args);

    wire_buf_init(&out);
    g_assert_cmpint(codec_request(TEST_IO(.data = msg->data, .len = msg->len,
                                          .from = WIRE_COMPACT,
                                          .to = WIRE_BINARY,
                                          .backend_seqid = 5, .out = &out,
                                          .err = &err),
                                  &call),
                    ==, CODEC_OK);
    back = g_object_new(HBASE_TYPE_HBASE_MUTATE_ROWS_ARGS, NULL);
    unit_decode(WIRE_BINARY, out.data, out.len, "mutateRows", T_CALL, 5, back);
    for (size_t i = 0; i < G_N_ELEMENTS(test_rows); i++) {
        HbaseBatchMutation *bm = g_ptr_array_index(back->rowBatches, i);
        HbaseMutation *mu = g_ptr_array_index(bm->mutations, 0);
        g_autoptr(GByteArray) want = test_physical("salted", test_rows[i].key,
                                                   test_rows[i].len);

        test_assert_bytes(bm->row, want);
        /* values are never touched, even when they look like keys */
        g_assert_cmpmem(mu->value->data, mu->value->len, test_rows[i].key,
                        test_rows[i].len);
    }
    g_object_unref(back);
    g_object_unref(args);
    wire_buf_free(&out);
}

/* incrementRows names a table per element: each row follows its own. */
static void
test_increment_rows_mixed_tables(void)
{
    HbaseHbaseIncrementRowsArgs *args =
        g_object_new(HBASE_TYPE_HBASE_INCREMENT_ROWS_ARGS, NULL);
    HbaseHbaseIncrementRowsArgs *back;
    const char *tables[] = { "salted", "plain", "hexed" };
    struct codec_call call;
    struct codec_error err;
    struct wire_buf out;
    g_autoptr(GByteArray) msg = NULL;

    for (size_t i = 0; i < G_N_ELEMENTS(tables); i++) {
        HbaseTIncrement *inc = g_object_new(HBASE_TYPE_T_INCREMENT, NULL);

        /* row before table on the wire cannot happen with c_glib, but the
         * codec reads the table ahead anyway */
        inc->table = unit_bytes(tables[i], strlen(tables[i]));
        inc->__isset_table = TRUE;
        inc->row = unit_bytes("counter", 7);
        inc->__isset_row = TRUE;
        inc->column = unit_bytes("cf:n", 4);
        inc->__isset_column = TRUE;
        inc->ammount = 5;
        inc->__isset_ammount = TRUE;
        g_ptr_array_add(args->increments, inc);
    }
    args->__isset_increments = TRUE;
    msg = unit_encode(WIRE_BINARY, "incrementRows", T_CALL, 1, args);

    wire_buf_init(&out);
    g_assert_cmpint(codec_request(TEST_IO(.data = msg->data, .len = msg->len,
                                          .from = WIRE_BINARY,
                                          .to = WIRE_COMPACT,
                                          .backend_seqid = 2, .out = &out,
                                          .err = &err),
                                  &call),
                    ==, CODEC_OK);
    back = g_object_new(HBASE_TYPE_HBASE_INCREMENT_ROWS_ARGS, NULL);
    unit_decode(WIRE_COMPACT, out.data, out.len, "incrementRows", T_CALL, 2,
                back);
    for (size_t i = 0; i < G_N_ELEMENTS(tables); i++) {
        HbaseTIncrement *inc = g_ptr_array_index(back->increments, i);

        if (strcmp(tables[i], "plain") == 0) {
            g_assert_cmpmem(inc->row->data, inc->row->len, "counter", 7);
        } else {
            g_autoptr(GByteArray) want = test_physical(tables[i], "counter",
                                                       7);

            test_assert_bytes(inc->row, want);
        }
        g_assert_cmpint(inc->ammount, ==, 5);
    }
    g_object_unref(back);
    g_object_unref(args);
    wire_buf_free(&out);
}

static HbaseTRowResult *
test_row_result(const GByteArray *row)
{
    HbaseTRowResult *rr = g_object_new(HBASE_TYPE_T_ROW_RESULT, NULL);
    HbaseTCell *cell = g_object_new(HBASE_TYPE_T_CELL, NULL);

    rr->row = unit_bytes(row->data, row->len);
    rr->__isset_row = TRUE;
    cell->value = unit_bytes("v", 1);
    cell->__isset_value = TRUE;
    cell->timestamp = 1;
    cell->__isset_timestamp = TRUE;
    g_hash_table_insert(rr->columns, unit_bytes("cf:q", 4), cell);
    rr->__isset_columns = TRUE;
    return rr;
}

/* Row keys (requests) or rows (rows) a tally holds, over its buckets. */
static guint64
test_tally_sum(const struct codec_tally *t, gboolean rows)
{
    guint64 n = 0;

    for (uint32_t i = 0; i < t->n; i++) {
        n += rows ? t->v[i].rows : t->v[i].requests;
    }
    return n;
}

/* A reply for a getRows call made through codec_request. */
static void
test_call_for(const char *table, const char *method, struct codec_call *call)
{
    HbaseHbaseGetRowArgs *args = g_object_new(HBASE_TYPE_HBASE_GET_ROW_ARGS,
                                              NULL);
    struct codec_error err;
    struct wire_buf out;
    g_autoptr(GByteArray) msg = NULL;

    args->tableName = unit_bytes(table, strlen(table));
    args->__isset_tableName = TRUE;
    args->row = unit_bytes("x", 1);
    args->__isset_row = TRUE;
    msg = unit_encode(WIRE_BINARY, method, T_CALL, 42, args);
    wire_buf_init(&out);
    g_assert_cmpint(codec_request(TEST_IO(.data = msg->data, .len = msg->len,
                                          .from = WIRE_BINARY,
                                          .to = WIRE_BINARY,
                                          .backend_seqid = 8, .out = &out,
                                          .err = &err),
                                  call),
                    ==, CODEC_OK);
    wire_buf_free(&out);
    g_object_unref(args);
}

/* Test: a rows reply written ahead for max rows, its list header patched
 * for the rows appended (compact headers shrink when fewer came) */
static void
test_rows_reply_in_place(void)
{
    static const struct {
        uint32_t max, count;
    } cases[] = { { 100, 3 },   { 100, 100 }, { 20, 16 }, { 20, 14 },
                  { 200, 128 }, { 200, 127 }, { 0, 0 },   { 3, 3 } };
    struct codec_call call;

    test_call_for("plain", "getRows", &call);
    for (int p = 0; p < 2; p++) {
        wire_proto_t proto = p == 0 ? WIRE_BINARY : WIRE_COMPACT;

        for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
            struct wire_buf out;
            struct wire_writer w;
            struct wire_reader r;
            struct wire_msg m;
            uint8_t type, et;
            int16_t fid;
            uint32_t n;
            size_t at;

            wire_buf_init(&out);
            at = codec_rows_reply_begin(&call, proto, cases[i].max, &out);
            for (uint32_t k = 0; k < cases[i].count; k++) {
                g_autofree char *row = g_strdup_printf("row%u", k);

                wire_writer_init(&w, proto, &out);
                wire_write_struct_begin(&w);
                wire_write_field(&w, WIRE_T_STRING, 1);
                wire_write_binary(&w, row, (uint32_t)strlen(row));
                wire_write_struct_end(&w);
            }
            codec_rows_reply_end(proto, at, cases[i].max, cases[i].count,
                                 &out);

            unit_read_msg_begin(&r, proto, out.data, out.len, &m);
            g_assert_cmpint(m.type, ==, WIRE_REPLY);
            g_assert_cmpint(m.seqid, ==, 42);
            wire_read_struct_begin(&r);
            wire_read_field(&r, &type, &fid);
            g_assert_cmpint(type, ==, WIRE_T_LIST);
            g_assert_cmpint(fid, ==, 0);
            g_assert_cmpint(wire_read_list_begin(&r, &et, &n), ==, WIRE_OK);
            g_assert_cmpint(et, ==, WIRE_T_STRUCT);
            g_assert_cmpuint(n, ==, cases[i].count);
            for (uint32_t k = 0; k < n; k++) {
                g_autofree char *row = g_strdup_printf("row%u", k);
                const uint8_t *data;
                uint32_t len;

                wire_read_struct_begin(&r);
                wire_read_field(&r, &type, &fid);
                g_assert_cmpint(wire_read_binary(&r, &data, &len), ==,
                                WIRE_OK);
                g_assert_cmpmem(data, len, row, strlen(row));
                wire_read_field(&r, &type, &fid);
                g_assert_cmpint(type, ==, WIRE_T_STOP);
                wire_read_struct_end(&r);
            }
            wire_read_container_end(&r);
            wire_read_field(&r, &type, &fid);
            g_assert_cmpint(type, ==, WIRE_T_STOP);
            g_assert_cmpint(wire_read_struct_end(&r), ==, WIRE_OK);
            g_assert_cmpuint(wire_reader_offset(&r), ==, out.len);
            wire_buf_free(&out);
        }
    }
}

static void
test_get_rows_reply(gconstpointer data)
{
    int mode = GPOINTER_TO_INT(data);
    wire_proto_t from = (mode & 1) ? WIRE_COMPACT : WIRE_BINARY;
    wire_proto_t to = (mode & 2) ? WIRE_COMPACT : WIRE_BINARY;
    HbaseHbaseGetRowsResult *res =
        g_object_new(HBASE_TYPE_HBASE_GET_ROWS_RESULT, NULL);
    HbaseHbaseGetRowsResult *back;
    struct codec_call call;
    struct codec_error err;
    struct wire_buf out;
    g_autoptr(GByteArray) msg = NULL;
    g_autoptr(GByteArray) legacy = unit_bytes("\x03legacy", 7);
    struct codec_tally tally;

    test_call_for("salted", "getRows", &call);
    for (size_t i = 0; i < G_N_ELEMENTS(test_rows); i++) {
        g_autoptr(GByteArray) phys = test_physical("salted", test_rows[i].key,
                                                   test_rows[i].len);

        g_ptr_array_add(res->success, test_row_result(phys));
    }
    /* a row written around the proxy: its first byte parses as a bucket,
     * but the rest does not hash to it (checked below) */
    g_assert_cmpuint(salt_bucket(test_table("salted"),
                                 (const uint8_t *)"legacy", 6),
                     !=, 3);
    g_ptr_array_add(res->success, test_row_result(legacy));
    res->__isset_success = TRUE;
    msg = unit_encode(from, "getRows", T_REPLY, 8, res);

    wire_buf_init(&out);
    codec_tally_init(&tally);
    g_assert_cmpint(codec_reply(TEST_IO(.data = msg->data, .len = msg->len,
                                        .from = from, .to = to,
                                        .backend_seqid = 8, .out = &out,
                                        .tally = &tally, .err = &err),
                                &call),
                    ==, CODEC_OK);
    /* every salted row is reported in its bucket, the legacy one as
     * handed back unsalted; nothing asked for */
    g_assert_cmpuint(test_tally_sum(&tally, TRUE), ==,
                     G_N_ELEMENTS(test_rows));
    g_assert_cmpuint(test_tally_sum(&tally, FALSE), ==, 0);
    g_assert_cmpuint(tally.unsalted, ==, 1);
    for (uint32_t i = 0; i < tally.n; i++) {
        g_assert_true(tally.v[i].salt == test_table("salted"));
    }
    codec_tally_free(&tally);
    back = g_object_new(HBASE_TYPE_HBASE_GET_ROWS_RESULT, NULL);
    unit_decode(to, out.data, out.len, "getRows", T_REPLY, 42, back);
    g_assert_cmpuint(back->success->len, ==, G_N_ELEMENTS(test_rows) + 1);
    for (size_t i = 0; i < G_N_ELEMENTS(test_rows); i++) {
        HbaseTRowResult *rr = g_ptr_array_index(back->success, i);

        g_assert_cmpmem(rr->row->data, rr->row->len, test_rows[i].key,
                        test_rows[i].len);
        g_assert_true(rr->__isset_columns && !rr->__isset_sortedColumns);
    }
    test_assert_bytes(((HbaseTRowResult *)
                           g_ptr_array_index(back->success,
                                             G_N_ELEMENTS(test_rows)))
                          ->row,
                      legacy);
    g_object_unref(back);
    g_object_unref(res);
    wire_buf_free(&out);
}

static void
test_reply_checks(void)
{
    HbaseHbaseGetRowResult *res = g_object_new(HBASE_TYPE_HBASE_GET_ROW_RESULT,
                                               NULL);
    HbaseHbaseGetRowResult *back;
    HbaseIOError *io = g_object_new(HBASE_TYPE_I_O_ERROR, NULL);
    struct codec_call call;
    struct codec_error err;
    struct wire_buf out;
    g_autoptr(GByteArray) msg = NULL;
    g_autoptr(GByteArray) other = NULL;

    test_call_for("salted", "getRow", &call);
    io->message = g_strdup("region offline");
    io->__isset_message = TRUE;
    res->io = io;
    res->__isset_io = TRUE;
    msg = unit_encode(WIRE_BINARY, "getRow", T_REPLY, 8, res);
    wire_buf_init(&out);

    /* wrong sequence id, wrong method: the backend stream is broken */
    g_assert_cmpint(codec_reply(TEST_IO(.data = msg->data, .len = msg->len,
                                        .from = WIRE_BINARY, .to = WIRE_BINARY,
                                        .backend_seqid = 9, .out = &out,
                                        .err = &err),
                                &call),
                    ==, CODEC_CLOSE);
    g_assert_nonnull(err.message);
    other = unit_encode(WIRE_BINARY, "getRows", T_REPLY, 8, res);
    g_assert_cmpint(codec_reply(TEST_IO(.data = other->data, .len = other->len,
                                        .from = WIRE_BINARY, .to = WIRE_BINARY,
                                        .backend_seqid = 8, .out = &out,
                                        .err = &err),
                                &call),
                    ==, CODEC_CLOSE);
    g_assert_cmpint(codec_reply(TEST_IO(.data = msg->data, .len = msg->len - 1,
                                        .from = WIRE_BINARY, .to = WIRE_BINARY,
                                        .backend_seqid = 8, .out = &out,
                                        .err = &err),
                                &call),
                    ==, CODEC_CLOSE);
    g_assert_cmpuint(out.len, ==, 0);

    /* exceptions pass through unchanged */
    g_assert_cmpint(codec_reply(TEST_IO(.data = msg->data, .len = msg->len,
                                        .from = WIRE_BINARY,
                                        .to = WIRE_COMPACT, .backend_seqid = 8,
                                        .out = &out, .err = &err),
                                &call),
                    ==, CODEC_OK);
    back = g_object_new(HBASE_TYPE_HBASE_GET_ROW_RESULT, NULL);
    unit_decode(WIRE_COMPACT, out.data, out.len, "getRow", T_REPLY, 42, back);
    g_assert_true(back->__isset_io);
    g_assert_cmpstr(back->io->message, ==, "region offline");
    g_object_unref(back);
    g_object_unref(res);
    wire_buf_free(&out);
}

static void
test_rejects(void)
{
    HbaseHbaseGetRowArgs *args = g_object_new(HBASE_TYPE_HBASE_GET_ROW_ARGS,
                                              NULL);
    HbaseHbaseScannerOpenArgs *scan =
        g_object_new(HBASE_TYPE_HBASE_SCANNER_OPEN_ARGS, NULL);
    HbaseHbaseGetRowArgs *back;
    HbaseHbaseGetRowResult *res;
    struct codec_call call;
    struct codec_error err;
    struct wire_buf out;
    g_autoptr(GByteArray) msg = NULL;
    g_autoptr(GByteArray) smsg = NULL;
    g_autoptr(GByteArray) reply = NULL;

    /* HBase refuses empty rows, method by method: an empty row goes on
     * unsalted so that the backend answers exactly as it would */
    args->tableName = unit_bytes("salted", 6);
    args->__isset_tableName = TRUE;
    args->row = unit_bytes("", 0);
    args->__isset_row = TRUE;
    msg = unit_encode(WIRE_BINARY, "getRow", T_CALL, 11, args);
    wire_buf_init(&out);
    g_assert_cmpint(codec_request(TEST_IO(.data = msg->data, .len = msg->len,
                                          .from = WIRE_BINARY,
                                          .to = WIRE_BINARY,
                                          .backend_seqid = 1, .out = &out,
                                          .err = &err),
                                  &call),
                    ==, CODEC_OK);
    back = g_object_new(HBASE_TYPE_HBASE_GET_ROW_ARGS, NULL);
    unit_decode(WIRE_BINARY, out.data, out.len, "getRow", T_CALL, 1, back);
    g_assert_cmpuint(back->row->len, ==, 0);
    g_object_unref(back);

    /* a rejected call is answered with the method's IOError */
    err.answer = CODEC_ANSWER_IO;
    err.message = "refused";
    wire_buf_clear(&out);
    codec_write_error(&call, WIRE_BINARY, &err, &out);
    res = g_object_new(HBASE_TYPE_HBASE_GET_ROW_RESULT, NULL);
    unit_decode(WIRE_BINARY, out.data, out.len, "getRow", T_REPLY, 11, res);
    g_assert_true(res->__isset_io);
    g_assert_cmpstr(res->io->message, ==, "refused");
    g_object_unref(res);

    /* a truncated body is a protocol error the client can survive */
    g_byte_array_unref(args->row);
    args->row = unit_bytes("r", 1);
    g_byte_array_unref(msg);
    msg = unit_encode(WIRE_BINARY, "getRow", T_CALL, 11, args);
    wire_buf_clear(&out);
    g_assert_cmpint(codec_request(TEST_IO(.data = msg->data,
                                          .len = msg->len - 2,
                                          .from = WIRE_BINARY,
                                          .to = WIRE_BINARY,
                                          .backend_seqid = 1, .out = &out,
                                          .err = &err),
                                  &call),
                    ==, CODEC_REJECT);
    g_assert_cmpint(err.app_type, ==, WIRE_APP_PROTOCOL_ERROR);
    g_assert_cmpint(err.answer, ==, CODEC_ANSWER_APP);
    /* a header that cannot be read cannot be answered */
    g_assert_cmpint(codec_request(TEST_IO(.data = msg->data, .len = 6,
                                          .from = WIRE_BINARY,
                                          .to = WIRE_BINARY,
                                          .backend_seqid = 1, .out = &out,
                                          .err = &err),
                                  &call),
                    ==, CODEC_CLOSE);
    /* a client must not send replies */
    reply = unit_encode(WIRE_BINARY, "getRow", T_REPLY, 4, args);
    g_assert_cmpint(codec_request(TEST_IO(.data = reply->data,
                                          .len = reply->len,
                                          .from = WIRE_BINARY,
                                          .to = WIRE_BINARY,
                                          .backend_seqid = 1, .out = &out,
                                          .err = &err),
                                  &call),
                    ==, CODEC_REJECT);
    g_assert_cmpint(err.app_type, ==, WIRE_APP_INVALID_MESSAGE_TYPE);

    /* scanner calls go to the scan engine, with the table's policy */
    scan->tableName = unit_bytes("salted", 6);
    scan->__isset_tableName = TRUE;
    scan->startRow = unit_bytes("", 0);
    scan->__isset_startRow = TRUE;
    smsg = unit_encode(WIRE_BINARY, "scannerOpen", T_CALL, 1, scan);
    wire_buf_clear(&out);
    g_assert_cmpint(codec_request(TEST_IO(.data = smsg->data, .len = smsg->len,
                                          .from = WIRE_BINARY,
                                          .to = WIRE_BINARY,
                                          .backend_seqid = 1, .out = &out,
                                          .err = &err),
                                  &call),
                    ==, CODEC_SCAN);
    g_assert_true(call.salt == test_table("salted"));
    g_assert_cmpuint(out.len, ==, 0);
    g_object_unref(scan);
    g_object_unref(args);
    wire_buf_free(&out);
}

/* Unknown names go to the backend as they are: it answers for itself. */
static void
test_unknown_method(void)
{
    HbaseHbaseGetRowArgs *args = g_object_new(HBASE_TYPE_HBASE_GET_ROW_ARGS,
                                              NULL);
    struct codec_call call;
    struct codec_error err;
    struct wire_buf out;
    g_autoptr(GByteArray) msg = NULL;
    g_autoptr(GByteArray) want = NULL;

    args->tableName = unit_bytes("salted", 6);
    args->__isset_tableName = TRUE;
    args->row = unit_bytes("r", 1);
    args->__isset_row = TRUE;
    msg = unit_encode(WIRE_BINARY, "getRowOrBefore", T_CALL, 1, args);
    want = unit_encode(WIRE_BINARY, "getRowOrBefore", T_CALL, 77, args);
    wire_buf_init(&out);
    g_assert_cmpint(codec_request(TEST_IO(.data = msg->data, .len = msg->len,
                                          .from = WIRE_BINARY,
                                          .to = WIRE_BINARY,
                                          .backend_seqid = 77, .out = &out,
                                          .err = &err),
                                  &call),
                    ==, CODEC_OK);
    g_assert_null(call.method);
    g_assert_cmpmem(out.data, out.len, want->data, want->len);
    g_object_unref(args);
    wire_buf_free(&out);
}

static void
test_io_error_reply(void)
{
    struct codec_call call;
    struct wire_buf out;
    HbaseHbaseGetRowResult *res;

    test_call_for("salted", "getRow", &call);
    wire_buf_init(&out);
    codec_write_io_error(&call, WIRE_COMPACT,
                         "hbase-salt-proxy: backend 127.0.0.1:1: refused",
                         TRUE, &out);
    res = g_object_new(HBASE_TYPE_HBASE_GET_ROW_RESULT, NULL);
    unit_decode(WIRE_COMPACT, out.data, out.len, "getRow", T_REPLY, 42, res);
    g_assert_true(res->__isset_io);
    g_assert_true(res->io->canRetry);
    g_assert_cmpstr(res->io->message, ==,
                    "hbase-salt-proxy: backend 127.0.0.1:1: refused");
    g_object_unref(res);
    wire_buf_free(&out);
}

/* The front of an unframed stream holds bytes up to where the read
 * stopped: a message cut anywhere must wait, and whole it must come out
 * exactly as from the two-pass path, with its own length only and each
 * row counted once however many times it was walked while incomplete. */
static void
test_stream(void)
{
    HbaseHbaseGetRowsArgs *args = g_object_new(HBASE_TYPE_HBASE_GET_ROWS_ARGS,
                                               NULL);
    HbaseHbaseGetRowsResult *res =
        g_object_new(HBASE_TYPE_HBASE_GET_ROWS_RESULT, NULL);
    HbaseHbaseScannerOpenArgs *scan =
        g_object_new(HBASE_TYPE_HBASE_SCANNER_OPEN_ARGS, NULL);
    g_autoptr(GByteArray) legacy = unit_bytes("\x03legacy", 7);
    g_autoptr(GByteArray) msg = NULL;
    g_autoptr(GByteArray) reply = NULL;
    g_autoptr(GByteArray) smsg = NULL;
    g_autoptr(GByteArray) stream = g_byte_array_new();
    struct codec_call call, scall;
    struct codec_error err;
    struct wire_buf whole, out;
    struct codec_tally tally, whole_tally;
    struct codec_io io;

    args->tableName = unit_bytes("salted", 6);
    args->__isset_tableName = TRUE;
    for (size_t i = 0; i < G_N_ELEMENTS(test_rows); i++) {
        g_ptr_array_add(args->rows,
                        unit_bytes(test_rows[i].key, test_rows[i].len));
    }
    args->__isset_rows = TRUE;
    msg = unit_encode(WIRE_BINARY, "getRows", T_CALL, 7, args);
    wire_buf_init(&whole);
    wire_buf_init(&out);
    codec_tally_init(&tally);
    codec_tally_init(&whole_tally);
    g_assert_cmpint(codec_request(TEST_IO(.data = msg->data, .len = msg->len,
                                          .from = WIRE_BINARY,
                                          .to = WIRE_COMPACT,
                                          .backend_seqid = 5, .out = &whole,
                                          .tally = &whole_tally, .err = &err),
                                  &call),
                    ==, CODEC_OK);
    g_assert_cmpuint(test_tally_sum(&whole_tally, FALSE), >, 0);

    /* the message, then the start of the next one */
    g_byte_array_append(stream, msg->data, msg->len);
    g_byte_array_append(stream, msg->data, 9);
    io = (struct codec_io){ .cfg = test_cfg,
                            .data = stream->data,
                            .from = WIRE_BINARY,
                            .stream = TRUE,
                            .to = WIRE_COMPACT,
                            .backend_seqid = 5,
                            .out = &out,
                            .tally = &tally,
                            .err = &err };
    for (size_t cut = 0; cut < msg->len; cut++) {
        io.len = cut;
        g_assert_cmpint(codec_request(&io, &call), ==, CODEC_AGAIN);
        g_assert_cmpuint(io.used, ==, 0);
        g_assert_cmpuint(out.len, ==, 0);
        /* a message not whole yet reports nothing */
        g_assert_cmpuint(tally.n, ==, 0);
    }
    io.len = stream->len;
    g_assert_cmpint(codec_request(&io, &call), ==, CODEC_OK);
    g_assert_cmpuint(io.used, ==, msg->len);
    /* the same buckets as the whole message, once */
    g_assert_cmpuint(tally.n, ==, whole_tally.n);
    g_assert_cmpmem(tally.v, tally.n * sizeof(*tally.v), whole_tally.v,
                    whole_tally.n * sizeof(*whole_tally.v));
    codec_tally_clear(&tally);
    g_assert_cmpmem(out.data, out.len, whole.data, whole.len);

    /* scanner calls and rejected calls stop early: the length is still
     * that of the whole message */
    scan->tableName = unit_bytes("salted", 6);
    scan->__isset_tableName = TRUE;
    scan->startRow = unit_bytes("", 0);
    scan->__isset_startRow = TRUE;
    smsg = unit_encode(WIRE_BINARY, "scannerOpen", T_CALL, 1, scan);
    wire_buf_clear(&out);
    io.data = smsg->data;
    io.len = smsg->len - 1;
    io.to = WIRE_BINARY;
    io.backend_seqid = 1;
    io.tally = NULL;
    g_assert_cmpint(codec_request(&io, &scall), ==, CODEC_AGAIN);
    io.len = smsg->len;
    g_assert_cmpint(codec_request(&io, &scall), ==, CODEC_SCAN);
    g_assert_cmpuint(io.used, ==, smsg->len);

    /* bytes that cannot be a message close the stream */
    {
        static const uint8_t junk[] = { 0x80, 0x01, 0x00, 0x01, 0xff, 0xff,
                                        0xff, 0xff, 0,    0,    0,    0 };

        io.data = junk;
        io.len = sizeof(junk);
        g_assert_cmpint(codec_request(&io, &scall), ==, CODEC_CLOSE);
        g_assert_nonnull(err.message);
    }

    /* a reply with a row written around the proxy: counted once */
    test_call_for("salted", "getRows", &call);
    g_ptr_array_add(res->success, test_row_result(legacy));
    res->__isset_success = TRUE;
    reply = unit_encode(WIRE_BINARY, "getRows", T_REPLY, 8, res);
    io.data = reply->data;
    io.backend_seqid = 8;
    io.tally = &tally;
    for (size_t cut = 0; cut < reply->len; cut++) {
        wire_buf_clear(&out);
        io.len = cut;
        g_assert_cmpint(codec_reply(&io, &call), ==, CODEC_AGAIN);
        g_assert_cmpuint(out.len, ==, 0);
    }
    g_assert_cmpuint(tally.unsalted, ==, 0);
    g_assert_cmpuint(tally.n, ==, 0);
    io.len = reply->len;
    g_assert_cmpint(codec_reply(&io, &call), ==, CODEC_OK);
    g_assert_cmpuint(io.used, ==, reply->len);
    g_assert_cmpuint(tally.unsalted, ==, 1);
    codec_tally_free(&tally);
    codec_tally_free(&whole_tally);

    g_object_unref(args);
    g_object_unref(res);
    g_object_unref(scan);
    wire_buf_free(&whole);
    wire_buf_free(&out);
}

/* ---- fields sent twice ---------------------------------------------------- */

/*
 * Calls written field by field: c_glib writes each field once, and these
 * tests need some twice.  wire's writer is held to c_glib by test_wire.c.
 */
static void
test_raw_str(struct wire_writer *w, int16_t fid, const char *s)
{
    wire_write_field(w, WIRE_T_STRING, fid);
    wire_write_binary(w, s, (uint32_t)strlen(s));
}

/* A field fid holding list<binary> { s }. */
static void
test_raw_list1(struct wire_writer *w, int16_t fid, const char *s)
{
    wire_write_field(w, WIRE_T_LIST, fid);
    wire_write_list_begin(w, WIRE_T_STRING, 1);
    wire_write_binary(w, s, (uint32_t)strlen(s));
    wire_write_container_end(w);
}

/* A struct { 1: table (when set), 2: row, [2: row2] } as field fid. */
static void
test_raw_table_row(struct wire_writer *w, int16_t fid, const char *table,
                   const char *table2, const char *row, const char *row2)
{
    if (fid != 0) {
        wire_write_field(w, WIRE_T_STRUCT, fid);
    }
    wire_write_struct_begin(w);
    if (table != NULL) {
        test_raw_str(w, 1, table);
    }
    if (table2 != NULL) {
        test_raw_str(w, 1, table2);
    }
    test_raw_str(w, 2, row);
    if (row2 != NULL) {
        test_raw_str(w, 2, row2);
    }
    wire_write_struct_end(w);
}

/* list<BatchMutation> as field 2, one batch whose row may come twice. */
static void
test_raw_batches(struct wire_writer *w, const char *row, const char *row2)
{
    wire_write_field(w, WIRE_T_LIST, 2);
    wire_write_list_begin(w, WIRE_T_STRUCT, 1);
    wire_write_struct_begin(w);
    test_raw_str(w, 1, row);
    if (row2 != NULL) {
        test_raw_str(w, 1, row2);
    }
    wire_write_field(w, WIRE_T_LIST, 2);
    wire_write_list_begin(w, WIRE_T_STRUCT, 0);
    wire_write_container_end(w);
    wire_write_struct_end(w);
    wire_write_container_end(w);
}

static const struct {
    const char *method;
    const char *twice; /* field named in the refusal, NULL: accepted */
} test_repeats[] = {
    { "mutateRow", "tableName" }, /* unsalted, then salted */
    { "mutateRow", "tableName" }, /* salted, then unsalted */
    { "getRow", "row" },
    { "getRow", NULL }, /* row twice, unsalted table */
    { "getRows", "rows" },
    { "mutateRows", "BatchMutation.row" },
    { "mutateRowsTs", "rowBatches" },
    { "increment", "TIncrement.table" },
    { "incrementRows", "TIncrement.row" },
    { "append", "append" },
    { "scannerOpen", "tableName" },
    { "mutateRow", NULL }, /* attributes twice */
    { "checkAndPut", "row" },
    { "get", NULL }, /* tableName twice, once no string */
};

static void
test_repeat_build(guint i, wire_proto_t proto, struct wire_buf *buf)
{
    struct wire_writer w;

    unit_msg_begin(&w, buf, proto, test_repeats[i].method, WIRE_CALL, 3);
    switch (i) {
    case 0:
        test_raw_str(&w, 1, "plain");
        test_raw_str(&w, 1, "salted");
        test_raw_str(&w, 2, "r");
        break;
    case 1:
        test_raw_str(&w, 2, "r");
        test_raw_str(&w, 1, "salted");
        test_raw_str(&w, 1, "plain");
        break;
    case 2:
    case 12:
        test_raw_str(&w, 1, "salted");
        test_raw_str(&w, 2, "a");
        test_raw_str(&w, 2, "b");
        break;
    case 3:
        test_raw_str(&w, 1, "plain");
        test_raw_str(&w, 2, "a");
        test_raw_str(&w, 2, "b");
        break;
    case 4:
        test_raw_str(&w, 1, "salted");
        test_raw_list1(&w, 2, "a");
        test_raw_list1(&w, 2, "b");
        break;
    case 5:
        test_raw_str(&w, 1, "salted");
        test_raw_batches(&w, "a", "b");
        break;
    case 6:
        test_raw_str(&w, 1, "salted");
        test_raw_batches(&w, "a", NULL);
        test_raw_batches(&w, "b", NULL);
        break;
    case 7: test_raw_table_row(&w, 1, "plain", "salted", "r", NULL); break;
    case 8:
        wire_write_field(&w, WIRE_T_LIST, 1);
        wire_write_list_begin(&w, WIRE_T_STRUCT, 1);
        test_raw_table_row(&w, 0, "salted", NULL, "a", "b");
        wire_write_container_end(&w);
        break;
    case 9:
        test_raw_table_row(&w, 1, "salted", NULL, "a", NULL);
        test_raw_table_row(&w, 1, "salted", NULL, "b", NULL);
        break;
    case 10:
        test_raw_str(&w, 1, "plain");
        test_raw_str(&w, 1, "salted");
        test_raw_str(&w, 2, "");
        break;
    case 11:
        test_raw_str(&w, 1, "salted");
        test_raw_str(&w, 2, "r");
        for (int k = 0; k < 2; k++) {
            wire_write_field(&w, WIRE_T_MAP, 4);
            wire_write_map_begin(&w, WIRE_T_STRING, WIRE_T_STRING, 1);
            wire_write_binary(&w, "k", 1);
            wire_write_binary(&w, k == 0 ? "first" : "last", k == 0 ? 5 : 4);
            wire_write_container_end(&w);
        }
        break;
    case 13:
        /* Java skips a field of the wrong type: one tableName counts */
        test_raw_str(&w, 1, "salted");
        wire_write_field(&w, WIRE_T_I32, 1);
        wire_write_i32(&w, 5);
        test_raw_str(&w, 2, "r");
        break;
    default: g_assert_not_reached();
    }
    wire_write_struct_end(&w);
}

/*
 * Java keeps the last of a field sent twice; the proxy routes by what it
 * reads.  A call that repeats a field the proxy routes or rewrites by is
 * refused before anything is sent, naming the field; a field that does
 * not matter to routing goes through as it came, for HBase to pick.
 */
static void
test_repeated_fields(void)
{
    for (int p = 0; p < 2; p++) {
        wire_proto_t proto = p == 0 ? WIRE_BINARY : WIRE_COMPACT;

        for (guint i = 0; i < G_N_ELEMENTS(test_repeats); i++) {
            struct codec_call call;
            struct codec_error err;
            struct codec_tally tally;
            struct wire_buf msg, out;
            codec_status_t st;
            struct codec_io io;

            test_repeat_build(i, proto, &msg);
            wire_buf_init(&out);
            codec_tally_init(&tally);
            st = codec_request(TEST_IO(.data = msg.data, .len = msg.len,
                                       .from = proto, .to = proto,
                                       .backend_seqid = 9, .out = &out,
                                       .tally = &tally, .err = &err),
                               &call);
            /* a refused call reports no bucket, whatever it salted
             * before the repeat was found */
            if (st == CODEC_REJECT) {
                g_assert_cmpuint(tally.n, ==, 0);
            }
            codec_tally_free(&tally);
            if (test_repeats[i].twice == NULL) {
                g_assert_cmpint(st, ==, i == 10 ? CODEC_SCAN : CODEC_OK);
                g_assert_cmpuint(out.len, >, 0);
            } else {
                g_autofree char *want =
                    g_strdup_printf("hbase-salt-proxy: field %s sent twice",
                                    test_repeats[i].twice);

                g_test_message("case %u %s", i, test_repeats[i].method);
                g_assert_cmpint(st, ==, CODEC_REJECT);
                g_assert_cmpuint(out.len, ==, 0);
                g_assert_cmpint(err.app_type, ==, WIRE_APP_PROTOCOL_ERROR);
                g_assert_cmpint(err.answer, ==, CODEC_ANSWER_APP);
                g_assert_cmpstr(err.message, ==, want);
                /* the unframed path agrees and knows the message's end */
                io = (struct codec_io){ .cfg = test_cfg,
                                        .data = msg.data,
                                        .len = msg.len,
                                        .from = proto,
                                        .stream = TRUE,
                                        .to = proto,
                                        .backend_seqid = 9,
                                        .out = &out,
                                        .err = &err };
                g_assert_cmpint(codec_request(&io, &call), ==, CODEC_REJECT);
                g_assert_cmpuint(io.used, ==, msg.len);
                g_assert_cmpstr(err.message, ==, want);
                g_assert_cmpuint(out.len, ==, 0);
            }
            if (i == 11) {
                /* both maps go on: HBase picks the last, as it would */
                g_assert_nonnull(memmem(out.data, out.len, "first", 5));
                g_assert_nonnull(memmem(out.data, out.len, "last", 4));
            }
            if (i == 13) {
                g_assert_true(call.salt == test_table("salted"));
            }
            wire_buf_free(&msg);
            wire_buf_free(&out);
        }
    }
}

/*
 * A reply whose TRowResult sends its row twice (HBase does not, a broken
 * backend might): each is unsalted, so a client keeping the last, as
 * Java's does, sees the last one's logical key.
 */
static void
test_repeated_reply_row(void)
{
    g_autoptr(GByteArray) a = test_physical("salted", "a", 1);
    g_autoptr(GByteArray) b = test_physical("salted", "bb", 2);
    struct codec_call call;
    struct codec_error err;
    struct wire_buf msg, out;
    struct wire_writer w;
    struct wire_reader r;
    struct wire_msg m;
    const uint8_t *row;
    uint32_t len, count;
    uint8_t type, et;
    int16_t fid;

    test_call_for("salted", "getRow", &call);
    unit_msg_begin(&w, &msg, WIRE_BINARY, "getRow", WIRE_REPLY, 8);
    wire_write_field(&w, WIRE_T_LIST, 0);
    wire_write_list_begin(&w, WIRE_T_STRUCT, 1);
    wire_write_struct_begin(&w);
    wire_write_field(&w, WIRE_T_STRING, 1);
    wire_write_binary(&w, a->data, a->len);
    wire_write_field(&w, WIRE_T_STRING, 1);
    wire_write_binary(&w, b->data, b->len);
    wire_write_struct_end(&w);
    wire_write_container_end(&w);
    wire_write_struct_end(&w);

    wire_buf_init(&out);
    g_assert_cmpint(codec_reply(TEST_IO(.data = msg.data, .len = msg.len,
                                        .from = WIRE_BINARY, .to = WIRE_BINARY,
                                        .backend_seqid = 8, .out = &out,
                                        .err = &err),
                                &call),
                    ==, CODEC_OK);
    unit_read_msg_begin(&r, WIRE_BINARY, out.data, out.len, &m);
    wire_read_struct_begin(&r);
    wire_read_field(&r, &type, &fid);
    wire_read_list_begin(&r, &et, &count);
    g_assert_cmpuint(count, ==, 1);
    wire_read_struct_begin(&r);
    wire_read_field(&r, &type, &fid);
    wire_read_binary(&r, &row, &len);
    g_assert_cmpmem(row, len, "a", 1);
    wire_read_field(&r, &type, &fid);
    g_assert_cmpint(fid, ==, 1);
    wire_read_binary(&r, &row, &len);
    g_assert_cmpmem(row, len, "bb", 2);
    g_assert_cmpint(r.status, ==, WIRE_OK);
    wire_buf_free(&msg);
    wire_buf_free(&out);
}

/* ---- rows near HBase's length limit ---------------------------------------- */

/* Where a call carries its table and rows. */
enum test_shape {
    TEST_ROW,     /* 1: tableName, 2: row */
    TEST_ROWS,    /* 1: tableName, 2: list<Text> rows */
    TEST_BATCHES, /* 1: tableName, 2: list<BatchMutation> */
    TEST_STRUCT,  /* 1: TIncrement or TAppend { 1: table, 2: row } */
    TEST_STRUCTS, /* 1: list<TIncrement> */
};

static const struct {
    const char *method;
    enum test_shape shape;
    gboolean read;     /* a read: absent rows, no error */
    int16_t error_fid; /* result field of the refusal of a write */
} test_limit_calls[] = {
    { "get", TEST_ROW, TRUE, 0 },
    { "getVer", TEST_ROW, TRUE, 0 },
    { "getVerTs", TEST_ROW, TRUE, 0 },
    { "getRow", TEST_ROW, TRUE, 0 },
    { "getRowWithColumns", TEST_ROW, TRUE, 0 },
    { "getRowTs", TEST_ROW, TRUE, 0 },
    { "getRowWithColumnsTs", TEST_ROW, TRUE, 0 },
    { "getRows", TEST_ROWS, TRUE, 0 },
    { "getRowsWithColumns", TEST_ROWS, TRUE, 0 },
    { "getRowsTs", TEST_ROWS, TRUE, 0 },
    { "getRowsWithColumnsTs", TEST_ROWS, TRUE, 0 },
    { "mutateRow", TEST_ROW, FALSE, 2 },
    { "mutateRowTs", TEST_ROW, FALSE, 2 },
    { "mutateRows", TEST_BATCHES, FALSE, 2 },
    { "mutateRowsTs", TEST_BATCHES, FALSE, 2 },
    { "atomicIncrement", TEST_ROW, FALSE, 2 },
    { "checkAndPut", TEST_ROW, FALSE, 2 },
    { "deleteAll", TEST_ROW, FALSE, 1 },
    { "deleteAllTs", TEST_ROW, FALSE, 1 },
    { "deleteAllRow", TEST_ROW, FALSE, 1 },
    { "deleteAllRowTs", TEST_ROW, FALSE, 1 },
    { "increment", TEST_STRUCT, FALSE, 1 },
    { "incrementRows", TEST_STRUCTS, FALSE, 1 },
    { "append", TEST_STRUCT, FALSE, 1 },
};

/* A call of the given shape on table with rows[0..n) (one but for
 * TEST_ROWS and TEST_BATCHES), as the client or the backend sees it. */
static void
test_raw_call(wire_proto_t proto, const char *method, enum test_shape shape,
              const char *table, GByteArray *const *rows, guint n,
              int32_t seqid, struct wire_buf *buf)
{
    struct wire_writer w;

    unit_msg_begin(&w, buf, proto, method, WIRE_CALL, seqid);
    if (shape == TEST_STRUCTS) {
        wire_write_field(&w, WIRE_T_LIST, 1);
        wire_write_list_begin(&w, WIRE_T_STRUCT, n);
    }
    if (shape == TEST_STRUCT || shape == TEST_STRUCTS) {
        for (guint i = 0; i < n; i++) {
            if (shape == TEST_STRUCT) {
                wire_write_field(&w, WIRE_T_STRUCT, 1);
            }
            wire_write_struct_begin(&w);
            test_raw_str(&w, 1, table);
            wire_write_field(&w, WIRE_T_STRING, 2);
            wire_write_binary(&w, rows[i]->data, rows[i]->len);
            wire_write_struct_end(&w);
        }
        if (shape == TEST_STRUCTS) {
            wire_write_container_end(&w);
        }
        wire_write_struct_end(&w);
        return;
    }
    test_raw_str(&w, 1, table);
    if (shape == TEST_ROW) {
        wire_write_field(&w, WIRE_T_STRING, 2);
        wire_write_binary(&w, rows[0]->data, rows[0]->len);
    } else {
        wire_write_field(&w, WIRE_T_LIST, 2);
        wire_write_list_begin(&w,
                              shape == TEST_ROWS ? WIRE_T_STRING
                                                 : WIRE_T_STRUCT,
                              n);
        for (guint i = 0; i < n; i++) {
            if (shape == TEST_BATCHES) {
                wire_write_struct_begin(&w);
                wire_write_field(&w, WIRE_T_STRING, 1);
            }
            wire_write_binary(&w, rows[i]->data, rows[i]->len);
            if (shape == TEST_BATCHES) {
                wire_write_struct_end(&w);
            }
        }
        wire_write_container_end(&w);
    }
    /* a field after the rows: the walk must go on past a refused row */
    test_raw_str(&w, 3, "cf:q");
    wire_write_struct_end(&w);
}

/* A logical key of len bytes, or its physical key on table. */
static GByteArray *
test_long_key(const char *table, size_t len, gboolean salted)
{
    GByteArray *key = g_byte_array_sized_new((guint)len + SALT_MAX_PREFIX);
    uint8_t prefix[SALT_MAX_PREFIX];
    size_t plen = 0;

    g_byte_array_set_size(key, (guint)len);
    memset(key->data, 'k', len);
    key->data[len / 2] = (uint8_t)len; /* keys of other lengths differ */
    if (salted && table != NULL) {
        const struct salt_table *t = test_table(table);

        plen = salt_write_prefix(t, salt_bucket(t, key->data, len), prefix);
        g_byte_array_prepend(key, prefix, (guint)plen);
    }
    return key;
}

/* The reply the codec builds for a refused call: which result field. */
static void
test_check_answer(const struct codec_call *call, const struct codec_error *err,
                  int16_t want_fid, const char *want_message)
{
    struct wire_buf out;
    struct wire_reader r;
    struct wire_msg m;
    const uint8_t *text;
    uint32_t len, count;
    uint8_t type, et;
    int16_t fid;

    wire_buf_init(&out);
    codec_write_error(call, WIRE_COMPACT, err, &out);
    unit_read_msg_begin(&r, WIRE_COMPACT, out.data, out.len, &m);
    g_assert_cmpint(m.type, ==, WIRE_REPLY);
    g_assert_cmpint(m.seqid, ==, 3);
    wire_read_struct_begin(&r);
    wire_read_field(&r, &type, &fid);
    g_assert_cmpint(fid, ==, want_fid);
    if (want_fid == 0) {
        g_assert_cmpint(type, ==, WIRE_T_LIST);
        wire_read_list_begin(&r, &et, &count);
        g_assert_cmpuint(count, ==, 0);
        wire_read_container_end(&r);
    } else {
        g_assert_cmpint(type, ==, WIRE_T_STRUCT);
        wire_read_struct_begin(&r);
        wire_read_field(&r, &type, &fid);
        g_assert_cmpint(fid, ==, 1);
        wire_read_binary(&r, &text, &len);
        g_assert_cmpmem(text, len, want_message, strlen(want_message));
        wire_skip(&r, WIRE_T_STRUCT);
    }
    g_assert_cmpint(r.status, ==, WIRE_OK);
    wire_buf_free(&out);
}

/*
 * HBase stores rows of up to 32767 bytes, salt included.  At the table's
 * limit a row is salted as ever; beyond it a write is refused here with
 * the table's own limit, a read answers as for an absent row (a multi-row
 * read drops just that row); beyond HBase's own limit the row goes on
 * unsalted, for HBase to refuse as it would on an unsalted table.
 */
static void
test_row_limit(gconstpointer data)
{
    const char *table = data;
    const struct salt_table *t = test_table(table);
    size_t limit = salt_max_row(t);
    size_t lens[] = { limit, limit + 1, SALT_HBASE_MAX_ROW,
                      SALT_HBASE_MAX_ROW + 1 };
    g_autofree char *want = g_strdup_printf(
        "hbase-salt-proxy: row length %zu exceeds %zu, the longest row "
        "table %s can store (32767 less its %s)",
        limit + 1, limit, table,
        strcmp(table, "salted") == 0 ? "1-byte salt"
                                     : "3-byte salt and 1-byte separator");

    g_assert_cmpuint(limit, ==, strcmp(table, "salted") == 0 ? 32766 : 32763);
    for (guint m = 0; m < G_N_ELEMENTS(test_limit_calls); m++) {
        const char *method = test_limit_calls[m].method;
        enum test_shape shape = test_limit_calls[m].shape;

        g_test_message("%s on %s", method, table);
        for (guint l = 0; l < G_N_ELEMENTS(lens); l++) {
            g_autoptr(GByteArray) key = test_long_key(table, lens[l], FALSE);
            g_autoptr(GByteArray) phys = test_long_key(table, lens[l], TRUE);
            gboolean storable = lens[l] <= limit;
            gboolean hbase_refuses = lens[l] > SALT_HBASE_MAX_ROW;
            struct wire_buf msg, out, expect;
            struct codec_call call;
            struct codec_error err;
            codec_status_t st;

            test_raw_call(WIRE_BINARY, method, shape, table, &key, 1, 3, &msg);
            wire_buf_init(&out);
            st = codec_request(TEST_IO(.data = msg.data, .len = msg.len,
                                       .from = WIRE_BINARY, .to = WIRE_BINARY,
                                       .backend_seqid = 9, .out = &out,
                                       .err = &err),
                               &call);
            if (storable || hbase_refuses ||
                (shape == TEST_ROWS && test_limit_calls[m].read)) {
                /* salted, or on as it came, or left out of the list */
                g_assert_cmpint(st, ==, CODEC_OK);
                test_raw_call(WIRE_BINARY, method, shape, table,
                              storable ? &phys : &key,
                              shape == TEST_ROWS && !storable && !hbase_refuses
                                  ? 0
                                  : 1,
                              9, &expect);
                g_assert_cmpmem(out.data, out.len, expect.data, expect.len);
                wire_buf_free(&expect);
            } else {
                g_assert_cmpint(st, ==, CODEC_REJECT);
                g_assert_cmpuint(out.len, ==, 0);
                if (test_limit_calls[m].read) {
                    g_assert_cmpint(err.answer, ==, CODEC_ANSWER_EMPTY);
                    test_check_answer(&call, &err, 0, NULL);
                } else if (lens[l] == limit + 1) {
                    g_assert_cmpint(err.answer, ==, CODEC_ANSWER_IA);
                    g_assert_cmpstr(err.message, ==, want);
                    test_check_answer(&call, &err,
                                      test_limit_calls[m].error_fid, want);
                } else {
                    g_assert_cmpint(err.answer, ==, CODEC_ANSWER_IA);
                    g_assert_nonnull(strstr(err.message,
                                            "row length 32767 exceeds"));
                }
            }
            wire_buf_free(&msg);
            wire_buf_free(&out);
        }
    }
}

/*
 * A multi-row call mixing rows of every length: the rows the table can
 * hold go on salted, the one HBase refuses anyway unsalted (so HBase
 * answers as for an unsalted table), the others are dropped or refused.
 */
static void
test_row_limit_mixed(void)
{
    const char *table = "hexed";
    size_t limit = salt_max_row(test_table(table));
    g_autoptr(GByteArray) a = unit_bytes("a", 1);
    g_autoptr(GByteArray) b = unit_bytes("b", 1);
    g_autoptr(GByteArray) pa = test_physical(table, "a", 1);
    g_autoptr(GByteArray) pb = test_physical(table, "b", 1);
    g_autoptr(GByteArray) over = test_long_key(table, limit + 1, FALSE);
    g_autoptr(GByteArray) max = test_long_key(table, SALT_HBASE_MAX_ROW,
                                              FALSE);
    g_autoptr(GByteArray) huge = test_long_key(table, SALT_HBASE_MAX_ROW + 1,
                                               FALSE);
    g_autoptr(GByteArray) pover = test_long_key(table, limit + 1, TRUE);
    GByteArray *rows[] = { a, over, max, huge, b };
    GByteArray *sent[] = { pa, huge, pb };
    GByteArray *writes[] = { a, over, b };
    GByteArray *written[] = { pa, pover, huge };
    GByteArray *with_huge[] = { a, over, huge };
    struct wire_buf msg, out, expect;
    struct codec_call call;
    struct codec_error err;

    /* getRows: the unstorable rows are left out, the others read */
    test_raw_call(WIRE_BINARY, "getRows", TEST_ROWS, table, rows, 5, 3, &msg);
    wire_buf_init(&out);
    g_assert_cmpint(codec_request(TEST_IO(.data = msg.data, .len = msg.len,
                                          .from = WIRE_BINARY,
                                          .to = WIRE_BINARY,
                                          .backend_seqid = 9, .out = &out,
                                          .err = &err),
                                  &call),
                    ==, CODEC_OK);
    test_raw_call(WIRE_BINARY, "getRows", TEST_ROWS, table, sent, 3, 9,
                  &expect);
    g_assert_cmpmem(out.data, out.len, expect.data, expect.len);
    wire_buf_free(&msg);
    wire_buf_free(&expect);

    /* mutateRows: one row too long refuses the batch, nothing is sent */
    test_raw_call(WIRE_COMPACT, "mutateRows", TEST_BATCHES, table, writes, 3,
                  3, &msg);
    wire_buf_clear(&out);
    g_assert_cmpint(codec_request(TEST_IO(.data = msg.data, .len = msg.len,
                                          .from = WIRE_COMPACT,
                                          .to = WIRE_BINARY,
                                          .backend_seqid = 9, .out = &out,
                                          .err = &err),
                                  &call),
                    ==, CODEC_REJECT);
    g_assert_cmpint(err.answer, ==, CODEC_ANSWER_IA);
    g_assert_cmpuint(out.len, ==, 0);
    wire_buf_free(&msg);

    /* with a row HBase refuses anyway, HBase answers, as unsalted */
    test_raw_call(WIRE_BINARY, "mutateRows", TEST_BATCHES, table, with_huge, 3,
                  3, &msg);
    g_assert_cmpint(codec_request(TEST_IO(.data = msg.data, .len = msg.len,
                                          .from = WIRE_BINARY,
                                          .to = WIRE_BINARY,
                                          .backend_seqid = 9, .out = &out,
                                          .err = &err),
                                  &call),
                    ==, CODEC_OK);
    test_raw_call(WIRE_BINARY, "mutateRows", TEST_BATCHES, table, written, 3,
                  9, &expect);
    g_assert_cmpmem(out.data, out.len, expect.data, expect.len);
    wire_buf_free(&msg);
    wire_buf_free(&expect);
    wire_buf_free(&out);
}

/* ---- Thrift2 ------------------------------------------------------------- */

/* A binary field of a struct being written. */
static void
test_w_bin(struct wire_writer *w, int16_t fid, const char *s, size_t n)
{
    wire_write_field(w, WIRE_T_STRING, fid);
    wire_write_binary(w, s, (uint32_t)n);
}

/* TPut { 1: row, 2: [TColumnValue{a, q, v}], 99: an unknown field } */
static void
test_w_put(struct wire_writer *w, const char *row)
{
    wire_write_struct_begin(w);
    test_w_bin(w, 1, row, strlen(row));
    wire_write_field(w, WIRE_T_LIST, 2);
    wire_write_list_begin(w, WIRE_T_STRUCT, 1);
    wire_write_struct_begin(w);
    test_w_bin(w, 1, "a", 1);
    test_w_bin(w, 2, "q", 1);
    test_w_bin(w, 3, "v", 1);
    wire_write_struct_end(w);
    wire_write_container_end(w);
    test_w_bin(w, 99, "unknown", 7);
    wire_write_struct_end(w);
}

/* checkAndMutate(table, row, family, qualifier, op, value, TRowMutations
 * with a put and a delete): every row salted, nested ones too. */
static void
test_thrift2_check_and_mutate(gconstpointer data)
{
    int mode = GPOINTER_TO_INT(data);
    wire_proto_t from = (mode & 1) ? WIRE_COMPACT : WIRE_BINARY;
    wire_proto_t to = (mode & 2) ? WIRE_COMPACT : WIRE_BINARY;
    const struct hbase1_service *svc = hbase1_service(HBASE1_SERVICE_THRIFT2);
    Hbase2THBaseServiceCheckAndMutateArgs *back =
        g_object_new(HBASE2_TYPE_T_H_BASE_SERVICE_CHECK_AND_MUTATE_ARGS, NULL);
    g_autoptr(GByteArray) phys = test_physical("salted", "k\x01\xff", 3);
    struct wire_buf msg, out;
    struct wire_writer w;
    struct codec_call call;
    struct codec_error err;
    Hbase2TMutation *m0, *m1;

    wire_buf_init(&out);
    unit_msg_begin(&w, &msg, from, "checkAndMutate", WIRE_CALL, 5);
    test_w_bin(&w, 1, "salted", 6);
    test_w_bin(&w, 2, "k\x01\xff", 3);
    test_w_bin(&w, 3, "a", 1);
    test_w_bin(&w, 4, "q", 1);
    wire_write_field(&w, WIRE_T_I32, 5);
    wire_write_i32(&w, 2);
    test_w_bin(&w, 6, "v", 1);
    wire_write_field(&w, WIRE_T_STRUCT, 7);
    wire_write_struct_begin(&w);
    test_w_bin(&w, 1, "k\x01\xff", 3);
    wire_write_field(&w, WIRE_T_LIST, 2);
    wire_write_list_begin(&w, WIRE_T_STRUCT, 2);
    wire_write_struct_begin(&w);
    wire_write_field(&w, WIRE_T_STRUCT, 1);
    test_w_put(&w, "k\x01\xff");
    wire_write_struct_end(&w);
    wire_write_struct_begin(&w);
    wire_write_field(&w, WIRE_T_STRUCT, 2);
    wire_write_struct_begin(&w);
    test_w_bin(&w, 1, "k\x01\xff", 3);
    wire_write_struct_end(&w);
    wire_write_struct_end(&w);
    wire_write_container_end(&w);
    wire_write_struct_end(&w);
    wire_write_struct_end(&w);

    g_assert_cmpint(codec_request(TEST_IO(.data = msg.data, .len = msg.len,
                                          .from = from, .to = to,
                                          .backend_seqid = 77, .out = &out,
                                          .svc = svc,
                                          .limits = &wire_default_limits,
                                          .err = &err),
                                  &call),
                    ==, CODEC_OK);
    g_assert_true(call.service == svc);
    g_assert_nonnull(call.method);
    g_assert_true(call.method->service == svc);
    g_assert_true(call.salt == test_table("salted"));
    unit_decode(to, out.data, out.len, "checkAndMutate", T_CALL, 77, back);
    test_assert_bytes(back->row, phys);
    test_assert_bytes(back->rowMutations->row, phys);
    g_assert_cmpuint(back->rowMutations->mutations->len, ==, 2);
    m0 = g_ptr_array_index(back->rowMutations->mutations, 0);
    m1 = g_ptr_array_index(back->rowMutations->mutations, 1);
    test_assert_bytes(m0->put->row, phys);
    g_assert_cmpuint(m0->put->columnValues->len, ==, 1);
    test_assert_bytes(m1->deleteSingle->row, phys);
    /* the field the proxy does not know went on as it came */
    g_assert_nonnull(memmem(out.data, out.len, "unknown", 7));
    g_object_unref(back);
    wire_buf_free(&msg);
    wire_buf_free(&out);
}

/* Bytes.toStringBinary, as HBase quotes rows in its messages. */
static void
test_java_quote(GString *out, const GByteArray *b)
{
    for (guint i = 0; i < b->len; i++) {
        uint8_t ch = b->data[i];

        if (g_ascii_isalnum(ch) ||
            (ch != 0 && strchr(" `~!@#$%^&*()-_=+[]{}|;:'\",.<>/?", ch))) {
            g_string_append_c(out, (char)ch);
        } else {
            g_string_append_printf(out, "\\x%02X", ch);
        }
    }
}

/* A mutateRow HBase refuses because its rows do not match: HBase quotes
 * them, salted as the proxy sent them; the client reads its own rows. A
 * quote that is no row of the table stays as it came. */
static void
test_thrift2_error_rows(gconstpointer data)
{
    int mode = GPOINTER_TO_INT(data);
    wire_proto_t from = (mode & 1) ? WIRE_COMPACT : WIRE_BINARY;
    wire_proto_t to = (mode & 2) ? WIRE_COMPACT : WIRE_BINARY;
    const struct hbase1_service *svc = hbase1_service(HBASE1_SERVICE_THRIFT2);
    Hbase2THBaseServiceMutateRowResult *res =
        g_object_new(HBASE2_TYPE_T_H_BASE_SERVICE_MUTATE_ROW_RESULT, NULL);
    Hbase2THBaseServiceMutateRowResult *back =
        g_object_new(HBASE2_TYPE_T_H_BASE_SERVICE_MUTATE_ROW_RESULT, NULL);
    Hbase2TIOError *io = g_object_new(HBASE2_TYPE_T_I_O_ERROR, NULL);
    g_autoptr(GByteArray) mine = test_physical("salted", "u1\xff", 3);
    g_autoptr(GByteArray) other = test_physical("salted", "u1\xffx", 4);
    g_autoptr(GString) text = g_string_new("The row of the action <");
    g_autoptr(GByteArray) reply = NULL;
    struct wire_buf msg, out;
    struct wire_writer w;
    struct codec_call call;
    struct codec_error err;

    wire_buf_init(&out);
    unit_msg_begin(&w, &msg, from, "mutateRow", WIRE_CALL, 5);
    test_w_bin(&w, 1, "salted", 6);
    wire_write_field(&w, WIRE_T_STRUCT, 2);
    wire_write_struct_begin(&w);
    test_w_bin(&w, 1, "u1\xff", 3);
    wire_write_field(&w, WIRE_T_LIST, 2);
    wire_write_list_begin(&w, WIRE_T_STRUCT, 1);
    wire_write_struct_begin(&w);
    wire_write_field(&w, WIRE_T_STRUCT, 1);
    test_w_put(&w, "u1\xffx");
    wire_write_struct_end(&w);
    wire_write_container_end(&w);
    wire_write_struct_end(&w);
    wire_write_struct_end(&w);
    g_assert_cmpint(codec_request(TEST_IO(.data = msg.data, .len = msg.len,
                                          .from = from, .to = to,
                                          .backend_seqid = 77, .out = &out,
                                          .svc = svc,
                                          .limits = &wire_default_limits,
                                          .err = &err),
                                  &call),
                    ==, CODEC_OK);
    g_assert_true(call.salt == test_table("salted"));

    test_java_quote(text, other);
    g_string_append(text, "> doesn't match the original one <");
    test_java_quote(text, mine);
    g_string_append(text, ">; <abc> <\\x0");
    io->message = g_strdup(text->str);
    io->__isset_message = TRUE;
    res->io = io;
    res->__isset_io = TRUE;
    reply = unit_encode(to, "mutateRow", T_REPLY, 77, res);
    out.len = 0;
    g_assert_cmpint(codec_reply(TEST_IO(.data = reply->data, .len = reply->len,
                                        .from = to, .to = from,
                                        .backend_seqid = 77, .out = &out,
                                        .err = &err),
                                &call),
                    ==, CODEC_OK);
    unit_decode(from, out.data, out.len, "mutateRow", T_REPLY, 5, back);
    g_assert_nonnull(back->io);
    g_assert_cmpstr(back->io->message, ==,
                    "The row of the action <u1\\xFFx> doesn't match the "
                    "original one <u1\\xFF>; <abc> <\\x0");
    g_object_unref(res);
    g_object_unref(back);
    wire_buf_free(&msg);
    wire_buf_free(&out);
}

/* getMultiple's reply: each TResult's row unsalted, a missing row's
 * TResult left without one, in place. */
static void
test_thrift2_get_multiple_reply(gconstpointer data)
{
    int mode = GPOINTER_TO_INT(data);
    wire_proto_t from = (mode & 1) ? WIRE_COMPACT : WIRE_BINARY;
    wire_proto_t to = (mode & 2) ? WIRE_COMPACT : WIRE_BINARY;
    const struct hbase1_service *svc = hbase1_service(HBASE1_SERVICE_THRIFT2);
    Hbase2THBaseServiceGetMultipleResult *back =
        g_object_new(HBASE2_TYPE_T_H_BASE_SERVICE_GET_MULTIPLE_RESULT, NULL);
    g_autoptr(GByteArray) phys = test_physical("hexed", "user42", 6);
    struct codec_call call = { 0 };
    struct codec_error err;
    struct wire_buf msg, out;
    struct wire_writer w;
    Hbase2TResult *r0, *r1;

    call.service = svc;
    call.method = hbase1_service_lookup(svc, (const uint8_t *)"getMultiple",
                                        11);
    g_assert_nonnull(call.method);
    call.salt = test_table("hexed");
    call.client_seqid = 3;
    call.name_len = 11;
    memcpy(call.name, "getMultiple", 12);
    wire_buf_init(&out);
    unit_msg_begin(&w, &msg, from, "getMultiple", WIRE_REPLY, 40);
    wire_write_field(&w, WIRE_T_LIST, 0);
    wire_write_list_begin(&w, WIRE_T_STRUCT, 2);
    wire_write_struct_begin(&w);
    test_w_bin(&w, 1, (const char *)phys->data, phys->len);
    wire_write_field(&w, WIRE_T_LIST, 2);
    wire_write_list_begin(&w, WIRE_T_STRUCT, 0);
    wire_write_container_end(&w);
    wire_write_struct_end(&w);
    wire_write_struct_begin(&w);
    wire_write_field(&w, WIRE_T_LIST, 2);
    wire_write_list_begin(&w, WIRE_T_STRUCT, 0);
    wire_write_container_end(&w);
    wire_write_struct_end(&w);
    wire_write_container_end(&w);
    wire_write_struct_end(&w);

    g_assert_cmpint(codec_reply(TEST_IO(.data = msg.data, .len = msg.len,
                                        .from = from, .to = to,
                                        .backend_seqid = 40, .out = &out,
                                        .limits = &wire_default_limits,
                                        .err = &err),
                                &call),
                    ==, CODEC_OK);
    unit_decode(to, out.data, out.len, "getMultiple", T_REPLY, 3, back);
    g_assert_cmpuint(back->success->len, ==, 2);
    r0 = g_ptr_array_index(back->success, 0);
    r1 = g_ptr_array_index(back->success, 1);
    g_assert_true(r0->__isset_row);
    g_assert_cmpmem(r0->row->data, r0->row->len, "user42", 6);
    g_assert_false(r1->__isset_row);
    g_object_unref(back);
    wire_buf_free(&msg);
    wire_buf_free(&out);
}

/* The same name is another method per service; a TGet's filterBytes
 * naming a filter class the rewrite cannot follow is refused on a salted
 * table (TIOError), copied on an unsalted one. */
static void
test_thrift2_get_services(void)
{
    const struct hbase1_service *one = hbase1_service(HBASE1_SERVICE_THRIFT1);
    const struct hbase1_service *two = hbase1_service(HBASE1_SERVICE_THRIFT2);
    const struct hbase1_method *g1 =
        hbase1_service_lookup(one, (const uint8_t *)"get", 3);
    const struct hbase1_method *g2 =
        hbase1_service_lookup(two, (const uint8_t *)"get", 3);
    Hbase2THBaseServiceGetResult *res =
        g_object_new(HBASE2_TYPE_T_H_BASE_SERVICE_GET_RESULT, NULL);
    const char *tables[] = { "salted", "plain" };

    g_assert_nonnull(g1);
    g_assert_nonnull(g2);
    g_assert_true(g1 != g2);
    g_assert_cmpuint(g1->index, !=, g2->index);
    g_assert_true(hbase1_method_at(g2->index) == g2);
    g_assert_null(hbase1_service_lookup(two, (const uint8_t *)"getRow", 6));
    g_assert_null(hbase1_service_lookup(one, (const uint8_t *)"openScanner",
                                        11));
    for (size_t i = 0; i < G_N_ELEMENTS(tables); i++) {
        struct wire_buf msg, out;
        struct wire_writer w;
        struct codec_call call;
        struct codec_error err;
        codec_status_t st;

        wire_buf_init(&out);
        unit_msg_begin(&w, &msg, WIRE_BINARY, "get", WIRE_CALL, 1);
        test_w_bin(&w, 1, tables[i], strlen(tables[i]));
        wire_write_field(&w, WIRE_T_STRUCT, 2);
        wire_write_struct_begin(&w);
        test_w_bin(&w, 1, "row", 3);
        test_w_bin(&w, 15, "\x0a\x01x", 3);
        wire_write_struct_end(&w);
        wire_write_struct_end(&w);
        st = codec_request(TEST_IO(.data = msg.data, .len = msg.len,
                                   .from = WIRE_BINARY, .to = WIRE_BINARY,
                                   .backend_seqid = 2, .out = &out, .svc = two,
                                   .limits = &wire_default_limits,
                                   .err = &err),
                           &call);
        if (i == 0) {
            g_assert_cmpint(st, ==, CODEC_REJECT);
            g_assert_cmpint(err.answer, ==, CODEC_ANSWER_IO);
            g_assert_cmpuint(out.len, ==, 0);
            codec_write_error(&call, WIRE_BINARY, &err, &out);
            unit_decode(WIRE_BINARY, out.data, out.len, "get", T_REPLY, 1,
                        res);
            g_assert_true(res->__isset_io);
            /* a class the proxy cannot follow: refused, not sent */
            g_assert_nonnull(strstr(res->io->message,
                                    "java.lang.IllegalArgumentException"));
            g_assert_false(res->io->canRetry);
        } else {
            g_assert_cmpint(st, ==, CODEC_OK);
            g_assert_nonnull(memmem(out.data, out.len, "\x0a\x01x", 3));
        }
        wire_buf_free(&msg);
        wire_buf_free(&out);
    }
    g_object_unref(res);
}

/* A Thrift2 get's filter string is rewritten for its row's bucket, also
 * when it comes before the row on the wire. */
static void
test_thrift2_get_filter(void)
{
    const struct hbase1_service *two = hbase1_service(HBASE1_SERVICE_THRIFT2);
    const struct salt_table *t = test_table("hexed");
    Hbase2THBaseServiceGetArgs *back =
        g_object_new(HBASE2_TYPE_T_H_BASE_SERVICE_GET_ARGS, NULL);
    g_autoptr(GByteArray) phys = test_physical("hexed", "abc", 3);
    g_autofree char *want =
        g_strdup_printf("PrefixFilter('%03x-ab')",
                        salt_bucket(t, (const uint8_t *)"abc", 3));
    struct wire_buf msg, out;
    struct wire_writer w;
    struct codec_call call;
    struct codec_error err;

    wire_buf_init(&out);
    unit_msg_begin(&w, &msg, WIRE_BINARY, "get", WIRE_CALL, 1);
    test_w_bin(&w, 1, "hexed", 5);
    wire_write_field(&w, WIRE_T_STRUCT, 2);
    wire_write_struct_begin(&w);
    test_w_bin(&w, 6, "PrefixFilter('ab')", 18);
    test_w_bin(&w, 1, "abc", 3);
    wire_write_struct_end(&w);
    wire_write_struct_end(&w);
    g_assert_cmpint(codec_request(TEST_IO(.data = msg.data, .len = msg.len,
                                          .from = WIRE_BINARY,
                                          .to = WIRE_BINARY,
                                          .backend_seqid = 2, .out = &out,
                                          .svc = two,
                                          .limits = &wire_default_limits,
                                          .err = &err),
                                  &call),
                    ==, CODEC_OK);
    unit_decode(WIRE_BINARY, out.data, out.len, "get", T_CALL, 2, back);
    test_assert_bytes(back->tget->row, phys);
    g_assert_true(back->tget->__isset_filterString);
    g_assert_cmpmem(back->tget->filterString->data,
                    back->tget->filterString->len, want, strlen(want));
    g_object_unref(back);
    wire_buf_free(&msg);
    wire_buf_free(&out);
}

int
main(int argc, char **argv)
{
    GError *error = NULL;
    int rc;

    g_test_init(&argc, &argv, NULL);
    test_cfg = config_load_data(test_conf, sizeof(test_conf) - 1, "test",
                                &error);
    g_assert_no_error(error);
    for (int mode = 0; mode < 8; mode++) {
        g_autofree char *req =
            g_strdup_printf("/codec/request/get-rows/%s-to-%s/%s",
                            (mode & 1) ? "compact" : "binary",
                            (mode & 2) ? "compact" : "binary",
                            (mode & 4) ? "hex" : "byte");

        g_test_add_data_func(req, GINT_TO_POINTER(mode),
                             test_get_rows_request);
        if (mode < 4) {
            g_autofree char *rep =
                g_strdup_printf("/codec/reply/get-rows/%s-to-%s",
                                (mode & 1) ? "compact" : "binary",
                                (mode & 2) ? "compact" : "binary");

            g_test_add_data_func(rep, GINT_TO_POINTER(mode),
                                 test_get_rows_reply);
        }
    }
    g_test_add_func("/codec/request/unsalted", test_unsalted_passthrough);
    g_test_add_func("/codec/request/orphan", test_orphan_refused);
    g_test_add_data_func("/codec/request/region-info/binary",
                         GINT_TO_POINTER(0), test_region_info_request);
    g_test_add_data_func("/codec/request/region-info/compact",
                         GINT_TO_POINTER(1), test_region_info_request);
    for (int mode = 0; mode < 4; mode++) {
        g_autofree char *cm =
            g_strdup_printf("/codec/thrift2/check-and-mutate/%d", mode);
        g_autofree char *gm =
            g_strdup_printf("/codec/thrift2/get-multiple-reply/%d", mode);

        g_test_add_data_func(cm, GINT_TO_POINTER(mode),
                             test_thrift2_check_and_mutate);
        g_autofree char *er = g_strdup_printf("/codec/thrift2/error-rows/%d",
                                              mode);

        g_test_add_data_func(er, GINT_TO_POINTER(mode),
                             test_thrift2_error_rows);
        g_test_add_data_func(gm, GINT_TO_POINTER(mode),
                             test_thrift2_get_multiple_reply);
    }
    g_test_add_func("/codec/thrift2/get-services", test_thrift2_get_services);
    g_test_add_func("/codec/thrift2/get-filter", test_thrift2_get_filter);
    g_test_add_func("/codec/request/mutate-rows", test_mutate_rows_request);
    g_test_add_func("/codec/request/increment-rows",
                    test_increment_rows_mixed_tables);
    g_test_add_func("/codec/request/unknown-method", test_unknown_method);
    g_test_add_func("/codec/reply/rows-in-place", test_rows_reply_in_place);
    g_test_add_func("/codec/request/rejects", test_rejects);
    g_test_add_func("/codec/reply/checks", test_reply_checks);
    g_test_add_func("/codec/reply/io-error", test_io_error_reply);
    g_test_add_func("/codec/stream", test_stream);
    g_test_add_func("/codec/request/repeated", test_repeated_fields);
    g_test_add_func("/codec/reply/repeated-row", test_repeated_reply_row);
    g_test_add_data_func("/codec/request/row-limit/byte", "salted",
                         test_row_limit);
    g_test_add_data_func("/codec/request/row-limit/hex", "hexed",
                         test_row_limit);
    g_test_add_func("/codec/request/row-limit/mixed", test_row_limit_mixed);
    rc = g_test_run();
    config_free(test_cfg);
    return rc;
}
