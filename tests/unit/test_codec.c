/* test_codec.c: call and reply rewriting, checked by decoding with c_glib. */
#include <string.h>

#include <thrift/c_glib/protocol/thrift_binary_protocol.h>
#include <thrift/c_glib/protocol/thrift_compact_protocol.h>
#include <thrift/c_glib/transport/thrift_memory_buffer.h>

#include "codec.h"
#include "config.h"
#include "hbase_hbase_types.h"
#include "salt.h"

static const char test_conf[] =
    "[table:salted]\n"
    "buckets = 16\n"
    "[table:hexed]\n"
    "buckets = 300\n"
    "salt_format = hex\n"
    "salt_separator = -\n";

static struct config *test_cfg;

static ThriftProtocol *
test_protocol_new(wire_proto_t proto, ThriftMemoryBuffer **mem)
{
    *mem = g_object_new(THRIFT_TYPE_MEMORY_BUFFER, "buf_size", 1 << 24,
                        NULL);
    return g_object_new(proto == WIRE_BINARY ? THRIFT_TYPE_BINARY_PROTOCOL
                                             : THRIFT_TYPE_COMPACT_PROTOCOL,
                        "transport", *mem, NULL);
}

static GByteArray *
test_bytes(const void *p, size_t n)
{
    GByteArray *a = g_byte_array_new();

    g_byte_array_append(a, p, (guint)n);
    return a;
}

/* Encodes one message with c_glib; returns its bytes (g_byte_array_unref). */
static GByteArray *
test_encode(wire_proto_t proto, const char *name, ThriftMessageType type,
            gint32 seqid, gpointer body)
{
    ThriftMemoryBuffer *mem;
    ThriftProtocol *p = test_protocol_new(proto, &mem);
    GError *error = NULL;
    GByteArray *out;

    g_assert_cmpint(thrift_protocol_write_message_begin(p, name, type, seqid,
                                                        &error), >, 0);
    g_assert_cmpint(thrift_struct_write(THRIFT_STRUCT(body), p, &error), >,
                    0);
    g_assert_cmpint(thrift_protocol_write_message_end(p, &error), >=, 0);
    g_assert_no_error(error);
    out = test_bytes(mem->buf->data, mem->buf->len);
    g_object_unref(p);
    g_object_unref(mem);
    return out;
}

/* Decodes one message with c_glib into body; checks header fields. */
static void
test_decode(wire_proto_t proto, const uint8_t *data, size_t len,
            const char *name, ThriftMessageType type, gint32 seqid,
            gpointer body)
{
    ThriftMemoryBuffer *mem;
    ThriftProtocol *p = test_protocol_new(proto, &mem);
    GError *error = NULL;
    gchar *got_name = NULL;
    ThriftMessageType got_type;
    gint32 got_seqid;

    g_byte_array_append(mem->buf, data, (guint)len);
    g_assert_cmpint(thrift_protocol_read_message_begin(p, &got_name,
                                                       &got_type, &got_seqid,
                                                       &error), >, 0);
    g_assert_no_error(error);
    g_assert_cmpstr(got_name, ==, name);
    g_assert_cmpint(got_type, ==, type);
    g_assert_cmpint(got_seqid, ==, seqid);
    g_assert_cmpint(thrift_struct_read(THRIFT_STRUCT(body), p, &error), >, 0);
    g_assert_no_error(error);
    g_assert_cmpuint(mem->buf->len, ==, 0);
    g_free(got_name);
    g_object_unref(p);
    g_object_unref(mem);
}

static const struct salt_table *
test_table(const char *name)
{
    const struct config_table *t =
        config_find_table(test_cfg, name, strlen(name));

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
    return test_bytes(buf, n);
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
    { "a", 1 }, { "b\0c", 3 }, { "\xff\xff", 2 }, { "user42", 6 },
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

    args->tableName = test_bytes(table, strlen(table));
    args->__isset_tableName = TRUE;
    for (size_t i = 0; i < G_N_ELEMENTS(test_rows); i++) {
        g_ptr_array_add(args->rows,
                        test_bytes(test_rows[i].key, test_rows[i].len));
    }
    args->__isset_rows = TRUE;
    g_hash_table_insert(args->attributes, test_bytes("k", 1),
                        test_bytes("v", 1));
    args->__isset_attributes = TRUE;
    msg = test_encode(from, "getRows", T_CALL, 7, args);

    wire_buf_init(&out);
    g_assert_cmpint(codec_request(test_cfg, from, msg->data, msg->len, to,
                                  1234, &out, &call, &err, NULL), ==,
                    CODEC_OK);
    g_assert_cmpint(call.client_seqid, ==, 7);
    g_assert_cmpstr(call.name, ==, "getRows");
    g_assert_true(call.salt == test_table(table));

    back = g_object_new(HBASE_TYPE_HBASE_GET_ROWS_ARGS, NULL);
    test_decode(to, out.data, out.len, "getRows", T_CALL, 1234, back);
    g_assert_cmpmem(back->tableName->data, back->tableName->len, table,
                    strlen(table));
    g_assert_cmpuint(back->rows->len, ==, G_N_ELEMENTS(test_rows));
    for (size_t i = 0; i < G_N_ELEMENTS(test_rows); i++) {
        g_autoptr(GByteArray) want =
            test_physical(table, test_rows[i].key, test_rows[i].len);

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

    args->tableName = test_bytes("plain", 5);
    args->__isset_tableName = TRUE;
    args->row = test_bytes("r1", 2);
    args->__isset_row = TRUE;
    mu->column = test_bytes("cf:q", 4);
    mu->__isset_column = TRUE;
    mu->value = test_bytes("value", 5);
    mu->__isset_value = TRUE;
    g_ptr_array_add(args->mutations, mu);
    args->__isset_mutations = TRUE;
    msg = test_encode(WIRE_BINARY, "mutateRow", T_CALL, 3, args);
    /* what the output must be: the same call under the backend's seqid */
    reencoded = test_encode(WIRE_BINARY, "mutateRow", T_CALL, 99, args);

    wire_buf_init(&out);
    g_assert_cmpint(codec_request(test_cfg, WIRE_BINARY, msg->data, msg->len,
                                  WIRE_BINARY, 99, &out, &call, &err, NULL),
                    ==, CODEC_OK);
    g_assert_null(call.salt);
    g_assert_cmpmem(out.data, out.len, reencoded->data, reencoded->len);
    g_object_unref(args);
    wire_buf_free(&out);
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

    args->tableName = test_bytes("salted", 6);
    args->__isset_tableName = TRUE;
    for (size_t i = 0; i < G_N_ELEMENTS(test_rows); i++) {
        HbaseBatchMutation *bm = g_object_new(HBASE_TYPE_BATCH_MUTATION,
                                              NULL);
        HbaseMutation *mu = g_object_new(HBASE_TYPE_MUTATION, NULL);

        bm->row = test_bytes(test_rows[i].key, test_rows[i].len);
        bm->__isset_row = TRUE;
        mu->column = test_bytes("cf:q", 4);
        mu->__isset_column = TRUE;
        mu->value = test_bytes(test_rows[i].key, test_rows[i].len);
        mu->__isset_value = TRUE;
        g_ptr_array_add(bm->mutations, mu);
        bm->__isset_mutations = TRUE;
        g_ptr_array_add(args->rowBatches, bm);
    }
    args->__isset_rowBatches = TRUE;
    msg = test_encode(WIRE_COMPACT, "mutateRows", T_CALL, 1, args);

    wire_buf_init(&out);
    g_assert_cmpint(codec_request(test_cfg, WIRE_COMPACT, msg->data,
                                  msg->len, WIRE_BINARY, 5, &out, &call, &err,
                                  NULL), ==, CODEC_OK);
    back = g_object_new(HBASE_TYPE_HBASE_MUTATE_ROWS_ARGS, NULL);
    test_decode(WIRE_BINARY, out.data, out.len, "mutateRows", T_CALL, 5,
                back);
    for (size_t i = 0; i < G_N_ELEMENTS(test_rows); i++) {
        HbaseBatchMutation *bm = g_ptr_array_index(back->rowBatches, i);
        HbaseMutation *mu = g_ptr_array_index(bm->mutations, 0);
        g_autoptr(GByteArray) want =
            test_physical("salted", test_rows[i].key, test_rows[i].len);

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
        inc->table = test_bytes(tables[i], strlen(tables[i]));
        inc->__isset_table = TRUE;
        inc->row = test_bytes("counter", 7);
        inc->__isset_row = TRUE;
        inc->column = test_bytes("cf:n", 4);
        inc->__isset_column = TRUE;
        inc->ammount = 5;
        inc->__isset_ammount = TRUE;
        g_ptr_array_add(args->increments, inc);
    }
    args->__isset_increments = TRUE;
    msg = test_encode(WIRE_BINARY, "incrementRows", T_CALL, 1, args);

    wire_buf_init(&out);
    g_assert_cmpint(codec_request(test_cfg, WIRE_BINARY, msg->data, msg->len,
                                  WIRE_COMPACT, 2, &out, &call, &err, NULL),
                    ==, CODEC_OK);
    back = g_object_new(HBASE_TYPE_HBASE_INCREMENT_ROWS_ARGS, NULL);
    test_decode(WIRE_COMPACT, out.data, out.len, "incrementRows", T_CALL, 2,
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

    rr->row = test_bytes(row->data, row->len);
    rr->__isset_row = TRUE;
    cell->value = test_bytes("v", 1);
    cell->__isset_value = TRUE;
    cell->timestamp = 1;
    cell->__isset_timestamp = TRUE;
    g_hash_table_insert(rr->columns, test_bytes("cf:q", 4), cell);
    rr->__isset_columns = TRUE;
    return rr;
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

    args->tableName = test_bytes(table, strlen(table));
    args->__isset_tableName = TRUE;
    args->row = test_bytes("x", 1);
    args->__isset_row = TRUE;
    msg = test_encode(WIRE_BINARY, method, T_CALL, 42, args);
    wire_buf_init(&out);
    g_assert_cmpint(codec_request(test_cfg, WIRE_BINARY, msg->data, msg->len,
                                  WIRE_BINARY, 8, &out, call, &err, NULL), ==,
                    CODEC_OK);
    wire_buf_free(&out);
    g_object_unref(args);
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
    g_autoptr(GByteArray) legacy = test_bytes("\x03legacy", 7);
    guint64 unsalted_before = codec_unsalted_rows();

    test_call_for("salted", "getRows", &call);
    for (size_t i = 0; i < G_N_ELEMENTS(test_rows); i++) {
        g_autoptr(GByteArray) phys =
            test_physical("salted", test_rows[i].key, test_rows[i].len);

        g_ptr_array_add(res->success, test_row_result(phys));
    }
    /* a row written around the proxy: its first byte parses as a bucket,
     * but the rest does not hash to it (checked below) */
    g_assert_cmpuint(salt_bucket(test_table("salted"),
                                 (const uint8_t *)"legacy", 6), !=, 3);
    g_ptr_array_add(res->success, test_row_result(legacy));
    res->__isset_success = TRUE;
    msg = test_encode(from, "getRows", T_REPLY, 8, res);

    wire_buf_init(&out);
    g_assert_cmpint(codec_reply(&call, from, msg->data, msg->len, 8, to, &out,
                                &err, NULL), ==, CODEC_OK);
    back = g_object_new(HBASE_TYPE_HBASE_GET_ROWS_RESULT, NULL);
    test_decode(to, out.data, out.len, "getRows", T_REPLY, 42, back);
    g_assert_cmpuint(back->success->len, ==, G_N_ELEMENTS(test_rows) + 1);
    for (size_t i = 0; i < G_N_ELEMENTS(test_rows); i++) {
        HbaseTRowResult *rr = g_ptr_array_index(back->success, i);

        g_assert_cmpmem(rr->row->data, rr->row->len, test_rows[i].key,
                        test_rows[i].len);
        g_assert_true(rr->__isset_columns && !rr->__isset_sortedColumns);
    }
    test_assert_bytes(((HbaseTRowResult *)g_ptr_array_index(
                           back->success, G_N_ELEMENTS(test_rows)))->row,
                      legacy);
    g_assert_cmpuint(codec_unsalted_rows(), ==, unsalted_before + 1);
    g_object_unref(back);
    g_object_unref(res);
    wire_buf_free(&out);
}

static void
test_reply_checks(void)
{
    HbaseHbaseGetRowResult *res =
        g_object_new(HBASE_TYPE_HBASE_GET_ROW_RESULT, NULL);
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
    msg = test_encode(WIRE_BINARY, "getRow", T_REPLY, 8, res);
    wire_buf_init(&out);

    /* wrong sequence id, wrong method: the backend stream is broken */
    g_assert_cmpint(codec_reply(&call, WIRE_BINARY, msg->data, msg->len, 9,
                                WIRE_BINARY, &out, &err, NULL), ==,
                    CODEC_CLOSE);
    g_assert_nonnull(err.message);
    other = test_encode(WIRE_BINARY, "getRows", T_REPLY, 8, res);
    g_assert_cmpint(codec_reply(&call, WIRE_BINARY, other->data, other->len,
                                8, WIRE_BINARY, &out, &err, NULL), ==,
                    CODEC_CLOSE);
    g_assert_cmpint(codec_reply(&call, WIRE_BINARY, msg->data, msg->len - 1,
                                8, WIRE_BINARY, &out, &err, NULL), ==,
                    CODEC_CLOSE);
    g_assert_cmpuint(out.len, ==, 0);

    /* exceptions pass through unchanged */
    g_assert_cmpint(codec_reply(&call, WIRE_BINARY, msg->data, msg->len, 8,
                                WIRE_COMPACT, &out, &err, NULL), ==,
                    CODEC_OK);
    back = g_object_new(HBASE_TYPE_HBASE_GET_ROW_RESULT, NULL);
    test_decode(WIRE_COMPACT, out.data, out.len, "getRow", T_REPLY, 42, back);
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
    args->tableName = test_bytes("salted", 6);
    args->__isset_tableName = TRUE;
    args->row = test_bytes("", 0);
    args->__isset_row = TRUE;
    msg = test_encode(WIRE_BINARY, "getRow", T_CALL, 11, args);
    wire_buf_init(&out);
    g_assert_cmpint(codec_request(test_cfg, WIRE_BINARY, msg->data, msg->len,
                                  WIRE_BINARY, 1, &out, &call, &err, NULL), ==,
                    CODEC_OK);
    back = g_object_new(HBASE_TYPE_HBASE_GET_ROW_ARGS, NULL);
    test_decode(WIRE_BINARY, out.data, out.len, "getRow", T_CALL, 1, back);
    g_assert_cmpuint(back->row->len, ==, 0);
    g_object_unref(back);

    /* a rejected call is answered with the method's IOError */
    err.io = TRUE;
    err.message = "refused";
    wire_buf_clear(&out);
    codec_write_error(&call, WIRE_BINARY, &err, &out);
    res = g_object_new(HBASE_TYPE_HBASE_GET_ROW_RESULT, NULL);
    test_decode(WIRE_BINARY, out.data, out.len, "getRow", T_REPLY, 11, res);
    g_assert_true(res->__isset_io);
    g_assert_cmpstr(res->io->message, ==, "refused");
    g_object_unref(res);

    /* a truncated body is a protocol error the client can survive */
    g_byte_array_unref(args->row);
    args->row = test_bytes("r", 1);
    g_byte_array_unref(msg);
    msg = test_encode(WIRE_BINARY, "getRow", T_CALL, 11, args);
    wire_buf_clear(&out);
    g_assert_cmpint(codec_request(test_cfg, WIRE_BINARY, msg->data,
                                  msg->len - 2, WIRE_BINARY, 1, &out, &call,
                                  &err, NULL), ==, CODEC_REJECT);
    g_assert_cmpint(err.app_type, ==, WIRE_APP_PROTOCOL_ERROR);
    g_assert_false(err.io);
    /* a header that cannot be read cannot be answered */
    g_assert_cmpint(codec_request(test_cfg, WIRE_BINARY, msg->data, 6,
                                  WIRE_BINARY, 1, &out, &call, &err, NULL), ==,
                    CODEC_CLOSE);
    /* a client must not send replies */
    reply = test_encode(WIRE_BINARY, "getRow", T_REPLY, 4, args);
    g_assert_cmpint(codec_request(test_cfg, WIRE_BINARY, reply->data,
                                  reply->len, WIRE_BINARY, 1, &out, &call,
                                  &err, NULL), ==, CODEC_REJECT);
    g_assert_cmpint(err.app_type, ==, WIRE_APP_INVALID_MESSAGE_TYPE);

    /* scanner calls go to the scan engine, with the table's policy */
    scan->tableName = test_bytes("salted", 6);
    scan->__isset_tableName = TRUE;
    scan->startRow = test_bytes("", 0);
    scan->__isset_startRow = TRUE;
    smsg = test_encode(WIRE_BINARY, "scannerOpen", T_CALL, 1, scan);
    wire_buf_clear(&out);
    g_assert_cmpint(codec_request(test_cfg, WIRE_BINARY, smsg->data,
                                  smsg->len, WIRE_BINARY, 1, &out, &call, &err,
                                  NULL), ==, CODEC_SCAN);
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

    args->tableName = test_bytes("salted", 6);
    args->__isset_tableName = TRUE;
    args->row = test_bytes("r", 1);
    args->__isset_row = TRUE;
    msg = test_encode(WIRE_BINARY, "getRowOrBefore", T_CALL, 1, args);
    want = test_encode(WIRE_BINARY, "getRowOrBefore", T_CALL, 77, args);
    wire_buf_init(&out);
    g_assert_cmpint(codec_request(test_cfg, WIRE_BINARY, msg->data, msg->len,
                                  WIRE_BINARY, 77, &out, &call, &err, NULL),
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
    test_decode(WIRE_COMPACT, out.data, out.len, "getRow", T_REPLY, 42, res);
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
    g_autoptr(GByteArray) legacy = test_bytes("\x03legacy", 7);
    g_autoptr(GByteArray) msg = NULL;
    g_autoptr(GByteArray) reply = NULL;
    g_autoptr(GByteArray) smsg = NULL;
    g_autoptr(GByteArray) stream = g_byte_array_new();
    struct codec_call call, scall;
    struct codec_error err;
    struct wire_buf whole, out;
    guint64 unsalted;
    size_t used;

    args->tableName = test_bytes("salted", 6);
    args->__isset_tableName = TRUE;
    for (size_t i = 0; i < G_N_ELEMENTS(test_rows); i++) {
        g_ptr_array_add(args->rows,
                        test_bytes(test_rows[i].key, test_rows[i].len));
    }
    args->__isset_rows = TRUE;
    msg = test_encode(WIRE_BINARY, "getRows", T_CALL, 7, args);
    wire_buf_init(&whole);
    wire_buf_init(&out);
    g_assert_cmpint(codec_request(test_cfg, WIRE_BINARY, msg->data, msg->len,
                                  WIRE_COMPACT, 5, &whole, &call, &err, NULL),
                    ==, CODEC_OK);

    /* the message, then the start of the next one */
    g_byte_array_append(stream, msg->data, msg->len);
    g_byte_array_append(stream, msg->data, 9);
    for (size_t cut = 0; cut < msg->len; cut++) {
        g_assert_cmpint(codec_request_stream(test_cfg, WIRE_BINARY,
                                             stream->data, cut, WIRE_COMPACT,
                                             5, &out, &call, &err, NULL,
                                             &used), ==, CODEC_AGAIN);
        g_assert_cmpuint(out.len, ==, 0);
    }
    g_assert_cmpint(codec_request_stream(test_cfg, WIRE_BINARY, stream->data,
                                         stream->len, WIRE_COMPACT, 5, &out,
                                         &call, &err, NULL, &used), ==,
                    CODEC_OK);
    g_assert_cmpuint(used, ==, msg->len);
    g_assert_cmpmem(out.data, out.len, whole.data, whole.len);

    /* scanner calls and rejected calls stop early: the length is still
     * that of the whole message */
    scan->tableName = test_bytes("salted", 6);
    scan->__isset_tableName = TRUE;
    scan->startRow = test_bytes("", 0);
    scan->__isset_startRow = TRUE;
    smsg = test_encode(WIRE_BINARY, "scannerOpen", T_CALL, 1, scan);
    wire_buf_clear(&out);
    g_assert_cmpint(codec_request_stream(test_cfg, WIRE_BINARY, smsg->data,
                                         smsg->len - 1, WIRE_BINARY, 1, &out,
                                         &scall, &err, NULL, &used), ==,
                    CODEC_AGAIN);
    g_assert_cmpint(codec_request_stream(test_cfg, WIRE_BINARY, smsg->data,
                                         smsg->len, WIRE_BINARY, 1, &out,
                                         &scall, &err, NULL, &used), ==,
                    CODEC_SCAN);
    g_assert_cmpuint(used, ==, smsg->len);

    /* bytes that cannot be a message close the stream */
    {
        static const uint8_t junk[] = { 0x80, 0x01, 0x00, 0x01, 0xff, 0xff,
                                        0xff, 0xff, 0, 0, 0, 0 };

        g_assert_cmpint(codec_request_stream(test_cfg, WIRE_BINARY, junk,
                                             sizeof(junk), WIRE_BINARY, 1,
                                             &out, &scall, &err, NULL,
                                             &used), ==, CODEC_CLOSE);
        g_assert_nonnull(err.message);
    }

    /* a reply with a row written around the proxy: counted once */
    test_call_for("salted", "getRows", &call);
    g_ptr_array_add(res->success, test_row_result(legacy));
    res->__isset_success = TRUE;
    reply = test_encode(WIRE_BINARY, "getRows", T_REPLY, 8, res);
    unsalted = codec_unsalted_rows();
    for (size_t cut = 0; cut < reply->len; cut++) {
        wire_buf_clear(&out);
        g_assert_cmpint(codec_reply_stream(&call, WIRE_BINARY, reply->data,
                                           cut, 8, WIRE_BINARY, &out, &err,
                                           NULL, &used), ==, CODEC_AGAIN);
        g_assert_cmpuint(out.len, ==, 0);
    }
    g_assert_cmpuint(codec_unsalted_rows(), ==, unsalted);
    g_assert_cmpint(codec_reply_stream(&call, WIRE_BINARY, reply->data,
                                       reply->len, 8, WIRE_BINARY, &out, &err,
                                       NULL, &used), ==, CODEC_OK);
    g_assert_cmpuint(used, ==, reply->len);
    g_assert_cmpuint(codec_unsalted_rows(), ==, unsalted + 1);

    g_object_unref(args);
    g_object_unref(res);
    g_object_unref(scan);
    wire_buf_free(&whole);
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
        g_autofree char *req = g_strdup_printf(
            "/codec/request/get-rows/%s-to-%s/%s",
            (mode & 1) ? "compact" : "binary",
            (mode & 2) ? "compact" : "binary", (mode & 4) ? "hex" : "byte");

        g_test_add_data_func(req, GINT_TO_POINTER(mode),
                             test_get_rows_request);
        if (mode < 4) {
            g_autofree char *rep = g_strdup_printf(
                "/codec/reply/get-rows/%s-to-%s",
                (mode & 1) ? "compact" : "binary",
                (mode & 2) ? "compact" : "binary");

            g_test_add_data_func(rep, GINT_TO_POINTER(mode),
                                 test_get_rows_reply);
        }
    }
    g_test_add_func("/codec/request/unsalted", test_unsalted_passthrough);
    g_test_add_func("/codec/request/mutate-rows", test_mutate_rows_request);
    g_test_add_func("/codec/request/increment-rows",
                    test_increment_rows_mixed_tables);
    g_test_add_func("/codec/request/unknown-method", test_unknown_method);
    g_test_add_func("/codec/request/rejects", test_rejects);
    g_test_add_func("/codec/reply/checks", test_reply_checks);
    g_test_add_func("/codec/reply/io-error", test_io_error_reply);
    g_test_add_func("/codec/stream", test_stream);
    rc = g_test_run();
    config_free(test_cfg);
    return rc;
}
