/* test_wire.c: the wire cursor against c_glib as an independent codec. */
#include <string.h>

#include "hbase_hbase_types.h"
#include "unit_helpers.h"
#include "wire.h"

/* Writes a TScan with our writer; c_glib must read back every field. */
static void
test_writer_against_c_glib(gconstpointer data)
{
    wire_proto_t proto = GPOINTER_TO_INT(data);
    struct wire_buf b;
    struct wire_writer w;
    ThriftMemoryBuffer *mem;
    ThriftProtocol *p;
    HbaseTScan *scan;
    GError *error = NULL;
    static const char stop[] = "st\0p\xff";

    wire_buf_init(&b);
    wire_writer_init(&w, proto, &b);
    wire_write_struct_begin(&w);
    wire_write_field(&w, WIRE_T_STRING, 1);
    wire_write_binary2(&w, "\x07", 1, "row", 3);
    wire_write_field(&w, WIRE_T_STRING, 2);
    wire_write_binary(&w, stop, sizeof(stop) - 1);
    wire_write_field(&w, WIRE_T_I64, 3);
    wire_write_i64(&w, -1234567890123LL);
    wire_write_field(&w, WIRE_T_LIST, 4);
    wire_write_list_begin(&w, WIRE_T_STRING, 20);
    for (int i = 0; i < 20; i++) {
        wire_write_binary(&w, "cf:q", 4);
    }
    wire_write_container_end(&w);
    wire_write_field(&w, WIRE_T_I32, 5);
    wire_write_i32(&w, -77);
    wire_write_field(&w, WIRE_T_BOOL, 8);
    wire_write_bool(&w, TRUE);
    wire_write_field(&w, WIRE_T_BOOL, 9);
    wire_write_bool(&w, FALSE);
    /* a field id far from the last one: compact's long header form */
    wire_write_field(&w, WIRE_T_DOUBLE, 300);
    wire_write_double(&w, 2.5);
    wire_write_struct_end(&w);

    p = unit_protocol_new(proto, &mem);
    g_byte_array_append(mem->buf, b.data, (guint)b.len);
    scan = g_object_new(HBASE_TYPE_T_SCAN, NULL);
    g_assert_cmpint(thrift_struct_read(THRIFT_STRUCT(scan), p, &error), >, 0);
    g_assert_no_error(error);
    g_assert_true(scan->__isset_startRow);
    g_assert_cmpmem(scan->startRow->data, scan->startRow->len, "\x07row", 4);
    g_assert_cmpmem(scan->stopRow->data, scan->stopRow->len, stop,
                    sizeof(stop) - 1);
    g_assert_cmpint(scan->timestamp, ==, -1234567890123LL);
    g_assert_cmpuint(scan->columns->len, ==, 20);
    g_assert_cmpint(scan->caching, ==, -77);
    g_assert_true(scan->__isset_sortColumns && scan->sortColumns);
    g_assert_true(scan->__isset_reversed && !scan->reversed);
    g_assert_false(scan->__isset_batchSize);
    g_assert_cmpuint(mem->buf->len, ==, 0);
    g_object_unref(scan);
    g_object_unref(p);
    g_object_unref(mem);
    wire_buf_free(&b);
}

static HbaseTRowResult *
test_row_result_new(gboolean sorted)
{
    HbaseTRowResult *rr = g_object_new(HBASE_TYPE_T_ROW_RESULT, NULL);

    rr->row = unit_bytes("\x00\xffkey", 5);
    rr->__isset_row = TRUE;
    for (int i = 0; i < 3; i++) {
        HbaseTCell *cell = g_object_new(HBASE_TYPE_T_CELL, NULL);
        char name[16];

        cell->value = unit_bytes("value", 5);
        cell->__isset_value = TRUE;
        cell->timestamp = 1000 + i;
        cell->__isset_timestamp = TRUE;
        g_snprintf(name, sizeof(name), "cf:q%d", i);
        if (sorted) {
            HbaseTColumn *col = g_object_new(HBASE_TYPE_T_COLUMN, NULL);

            col->columnName = unit_bytes(name, strlen(name));
            col->__isset_columnName = TRUE;
            col->cell = cell;
            col->__isset_cell = TRUE;
            g_ptr_array_add(rr->sortedColumns, col);
        } else {
            g_hash_table_insert(rr->columns, unit_bytes(name, strlen(name)),
                                cell);
        }
    }
    if (sorted) {
        rr->__isset_sortedColumns = TRUE;
    } else {
        rr->__isset_columns = TRUE;
    }
    return rr;
}

/*
 * c_glib writes a row result in one protocol, wire_copy transcodes it to
 * the other (or copies it), and c_glib reads it back unchanged.
 */
static void
test_copy_transcodes(gconstpointer data)
{
    int mode = GPOINTER_TO_INT(data);
    wire_proto_t from = (mode & 1) ? WIRE_COMPACT : WIRE_BINARY;
    wire_proto_t to = (mode & 2) ? WIRE_COMPACT : WIRE_BINARY;
    gboolean sorted = (mode & 4) != 0;
    ThriftMemoryBuffer *mem_in, *mem_out;
    ThriftProtocol *pin, *pout;
    HbaseTRowResult *rr = test_row_result_new(sorted), *back;
    struct wire_reader r;
    struct wire_buf b;
    struct wire_writer w;
    GError *error = NULL;

    pin = unit_protocol_new(from, &mem_in);
    g_assert_cmpint(thrift_struct_write(THRIFT_STRUCT(rr), pin, &error), >, 0);
    g_assert_no_error(error);

    wire_reader_init(&r, from, mem_in->buf->data, mem_in->buf->len, TRUE,
                     NULL);
    wire_buf_init(&b);
    wire_writer_init(&w, to, &b);
    g_assert_cmpint(wire_copy(&r, &w, WIRE_T_STRUCT), ==, WIRE_OK);
    g_assert_cmpuint(wire_reader_offset(&r), ==, mem_in->buf->len);
    if (from == to) {
        g_assert_cmpmem(b.data, b.len, mem_in->buf->data, mem_in->buf->len);
    }

    pout = unit_protocol_new(to, &mem_out);
    g_byte_array_append(mem_out->buf, b.data, (guint)b.len);
    back = g_object_new(HBASE_TYPE_T_ROW_RESULT, NULL);
    g_assert_cmpint(thrift_struct_read(THRIFT_STRUCT(back), pout, &error), >,
                    0);
    g_assert_no_error(error);
    g_assert_cmpmem(back->row->data, back->row->len, "\x00\xffkey", 5);
    g_assert_true(back->__isset_sortedColumns == sorted);
    g_assert_true(back->__isset_columns == !sorted);
    if (sorted) {
        g_assert_cmpuint(back->sortedColumns->len, ==, 3);
        for (guint i = 0; i < 3; i++) {
            HbaseTColumn *col = g_ptr_array_index(back->sortedColumns, i);

            g_assert_cmpint(col->cell->timestamp, ==, 1000 + (gint64)i);
        }
    } else {
        g_assert_cmpuint(g_hash_table_size(back->columns), ==, 3);
    }

    g_object_unref(back);
    g_object_unref(rr);
    g_object_unref(pin);
    g_object_unref(pout);
    g_object_unref(mem_in);
    g_object_unref(mem_out);
    wire_buf_free(&b);
}

static void
test_message_header(gconstpointer data)
{
    wire_proto_t proto = GPOINTER_TO_INT(data);
    struct wire_buf b;
    struct wire_writer w;
    struct wire_reader r;
    struct wire_msg m;
    size_t len, off;
    const char *why;

    wire_buf_init(&b);
    wire_writer_init(&w, proto, &b);
    off = wire_frame_begin(&b);
    wire_write_app_exception(&w, (const uint8_t *)"getRow", 6, 0x7fffffff,
                             WIRE_APP_UNKNOWN_METHOD, "Invalid method name");
    wire_frame_end(&b, off);

    g_assert_cmpint(wire_message_scan(proto, TRUE, b.data, b.len, NULL, &len,
                                      &why),
                    ==, WIRE_OK);
    g_assert_cmpuint(len, ==, b.len);
    g_assert_cmpint(wire_message_scan(proto, FALSE, b.data + 4, b.len - 4,
                                      NULL, &len, &why),
                    ==, WIRE_OK);
    g_assert_cmpuint(len, ==, b.len - 4);
    /* every strict prefix of an unframed message asks for more */
    for (size_t i = 0; i < b.len - 4; i++) {
        g_assert_cmpint(wire_message_scan(proto, FALSE, b.data + 4, i, NULL,
                                          &len, &why),
                        ==, WIRE_AGAIN);
        g_assert_cmpint(wire_message_scan(proto, TRUE, b.data, i + 4, NULL,
                                          &len, &why),
                        ==, WIRE_AGAIN);
    }

    wire_reader_init(&r, proto, b.data + 4, b.len - 4, TRUE, NULL);
    g_assert_cmpint(wire_read_msg_begin(&r, &m), ==, WIRE_OK);
    g_assert_cmpmem(m.name, m.name_len, "getRow", 6);
    g_assert_cmpint(m.type, ==, WIRE_EXCEPTION);
    g_assert_cmpint(m.seqid, ==, 0x7fffffff);
    wire_buf_free(&b);
}

static void
test_non_strict_binary(void)
{
    static const uint8_t msg[] = {
        0, 0, 0, 3, 'g', 'e', 't', WIRE_CALL, 0, 0, 0, 9, WIRE_T_STOP,
    };
    struct wire_reader r;
    struct wire_msg m;
    wire_proto_t proto;
    gboolean framed;
    const char *why;
    size_t len;

    wire_reader_init(&r, WIRE_BINARY, msg, sizeof(msg), TRUE, NULL);
    g_assert_cmpint(wire_read_msg_begin(&r, &m), ==, WIRE_OK);
    g_assert_false(m.strict);
    g_assert_cmpint(m.seqid, ==, 9);
    g_assert_cmpint(wire_detect(msg, sizeof(msg), &proto, &framed, &why), ==,
                    WIRE_OK);
    g_assert_true(proto == WIRE_BINARY && !framed);
    g_assert_cmpint(wire_message_scan(WIRE_BINARY, FALSE, msg, sizeof(msg),
                                      NULL, &len, &why),
                    ==, WIRE_OK);
    g_assert_cmpuint(len, ==, sizeof(msg));
}

static void
test_detect(void)
{
    static const struct {
        const char *bytes;
        size_t len;
        wire_status_t status;
        wire_proto_t proto;
        gboolean framed;
    } cases[] = {
        { "\x80\x01\x00\x01", 4, WIRE_OK, WIRE_BINARY, FALSE },
        { "\x82\x21", 2, WIRE_OK, WIRE_COMPACT, FALSE },
        { "\x00\x00\x00\x20\x80", 5, WIRE_OK, WIRE_BINARY, TRUE },
        { "\x00\x00\x00\x20\x82", 5, WIRE_OK, WIRE_COMPACT, TRUE },
        { "\x00\x00\x00\x20\x00", 5, WIRE_OK, WIRE_BINARY, TRUE },
        { "\x00\x00\x00\x06g", 5, WIRE_OK, WIRE_BINARY, FALSE },
        { "\x00\x00\x00", 3, WIRE_AGAIN, 0, 0 },
        { "", 0, WIRE_AGAIN, 0, 0 },
        { "GET / HTTP/1.1", 14, WIRE_ERROR, 0, 0 },
        { "\x00\x00\x00\x20\x01", 5, WIRE_ERROR, 0, 0 },
    };

    for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
        wire_proto_t proto = 99;
        gboolean framed = 99;
        const char *why;
        wire_status_t st = wire_detect((const uint8_t *)cases[i].bytes,
                                       cases[i].len, &proto, &framed, &why);

        g_assert_cmpint(st, ==, cases[i].status);
        if (st == WIRE_OK) {
            g_assert_cmpint(proto, ==, cases[i].proto);
            g_assert_cmpint(framed, ==, cases[i].framed);
        } else if (st == WIRE_ERROR) {
            g_assert_nonnull(why);
        }
    }
}

/* A CALL header for "m" (binary, strict) followed by the given body. */
static struct wire_buf
test_call(const uint8_t *body, size_t n)
{
    struct wire_buf b;
    struct wire_writer w;

    wire_buf_init(&b);
    wire_writer_init(&w, WIRE_BINARY, &b);
    wire_write_msg_begin(&w, (const uint8_t *)"m", 1, WIRE_CALL, 1);
    wire_buf_append(&b, body, n);
    return b;
}

static void
test_malformed_binary(void)
{
    static const struct {
        const char *name;
        const char *body;
        size_t len;
        wire_status_t complete; /* as a whole framed message */
        wire_status_t partial;  /* as the start of a stream */
    } cases[] = {
        /* string field 1 with length -1: the c_glib 0.17 crasher */
        { "negative string", "\x0b\x00\x01\xff\xff\xff\xff\x00", 8, WIRE_ERROR,
          WIRE_ERROR },
        { "string past the end",
          "\x0b\x00\x01\x00\x00\x00\x10"
          "ab",
          9, WIRE_ERROR, WIRE_AGAIN },
        { "string over the limit", "\x0b\x00\x01\x7f\x00\x00\x00", 7,
          WIRE_ERROR, WIRE_ERROR },
        { "negative list", "\x0f\x00\x01\x0b\xff\xff\xff\xfe", 8, WIRE_ERROR,
          WIRE_ERROR },
        { "negative map", "\x0d\x00\x01\x0b\x0b\x80\x00\x00\x00", 9,
          WIRE_ERROR, WIRE_ERROR },
        { "list of more than the bytes", "\x0f\x00\x01\x08\x00\x10\x00\x00", 8,
          WIRE_ERROR, WIRE_AGAIN },
        { "invalid field type", "\x01\x00\x01\x00", 4, WIRE_ERROR,
          WIRE_ERROR },
        { "invalid element type", "\x0f\x00\x01\x10\x00\x00\x00\x01\x00", 9,
          WIRE_ERROR, WIRE_ERROR },
        { "truncated field header", "\x08\x00", 2, WIRE_ERROR, WIRE_AGAIN },
        { "missing stop", "\x08\x00\x01\x00\x00\x00\x01", 7, WIRE_ERROR,
          WIRE_AGAIN },
    };

    for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
        struct wire_buf b = test_call((const uint8_t *)cases[i].body,
                                      cases[i].len);
        struct wire_limits lim = wire_default_limits;
        struct wire_reader r;
        struct wire_msg m;
        size_t len;
        const char *why;

        lim.max_string = 1 << 20;
        g_test_message("case: %s", cases[i].name);
        wire_reader_init(&r, WIRE_BINARY, b.data, b.len, TRUE, &lim);
        g_assert_cmpint(wire_read_msg_begin(&r, &m), ==, WIRE_OK);
        g_assert_cmpint(wire_skip(&r, WIRE_T_STRUCT), ==, cases[i].complete);
        g_assert_nonnull(r.error);
        g_assert_cmpint(wire_message_scan(WIRE_BINARY, FALSE, b.data, b.len,
                                          &lim, &len, &why),
                        ==, cases[i].partial);
        wire_buf_free(&b);
    }
}

static void
test_malformed_compact(void)
{
    static const struct {
        const char *name;
        const char *body;
        size_t len;
    } cases[] = {
        /* binary field 1 with a 5-byte varint length over INT32_MAX */
        { "huge string", "\x18\xff\xff\xff\xff\x0f", 6 },
        { "overlong varint", "\x15\xff\xff\xff\xff\xff\xff\x01", 8 },
        { "bad field type", "\x1d\x00", 2 },
        { "string past the end",
          "\x18\x05"
          "ab",
          4 },
        { "list past the end", "\x19\xf5\x80\x80\x80\x01", 6 },
        { "field id out of range", "\x05\xff\xff\x7f\x00\x00", 6 },
    };

    for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
        struct wire_reader r;

        g_test_message("case: %s", cases[i].name);
        wire_reader_init(&r, WIRE_COMPACT, (const uint8_t *)cases[i].body,
                         cases[i].len, TRUE, NULL);
        g_assert_cmpint(wire_skip(&r, WIRE_T_STRUCT), ==, WIRE_ERROR);
        g_assert_nonnull(r.error);
    }
}

static void
test_depth_cap(gconstpointer data)
{
    wire_proto_t proto = GPOINTER_TO_INT(data);
    struct wire_buf b;
    struct wire_writer w;
    struct wire_reader r;
    struct wire_limits lim = wire_default_limits;
    int depth = 200;

    wire_buf_init(&b);
    wire_writer_init(&w, proto, &b);
    /* struct { 1: list<list<list<...>>> } nested 200 deep */
    wire_write_struct_begin(&w);
    wire_write_field(&w, WIRE_T_LIST, 1);
    for (int i = 0; i < depth; i++) {
        wire_write_list_begin(&w, WIRE_T_LIST, 1);
    }
    wire_write_list_begin(&w, WIRE_T_I32, 0);
    for (int i = 0; i <= depth; i++) {
        wire_write_container_end(&w);
    }
    wire_write_struct_end(&w);

    wire_reader_init(&r, proto, b.data, b.len, TRUE, &lim);
    g_assert_cmpint(wire_skip(&r, WIRE_T_STRUCT), ==, WIRE_ERROR);
    g_assert_cmpstr(r.error, ==, "nesting deeper than the limit");

    lim.max_depth = 8;
    wire_reader_init(&r, proto, b.data, b.len, TRUE, &lim);
    g_assert_cmpint(wire_skip(&r, WIRE_T_STRUCT), ==, WIRE_ERROR);
    wire_buf_free(&b);
}

static void
test_frame_limits(void)
{
    static const uint8_t negative[] = { 0xff, 0xff, 0xff, 0xf0, 0x80 };
    static const uint8_t huge[] = { 0x7f, 0xff, 0xff, 0xff, 0x80 };
    static const uint8_t zero[] = { 0, 0, 0, 0 };
    size_t len;
    const char *why;

    g_assert_cmpint(wire_message_scan(WIRE_BINARY, TRUE, negative,
                                      sizeof(negative), NULL, &len, &why),
                    ==, WIRE_ERROR);
    g_assert_cmpint(wire_message_scan(WIRE_BINARY, TRUE, huge, sizeof(huge),
                                      NULL, &len, &why),
                    ==, WIRE_ERROR);
    g_assert_cmpstr(why, ==, "frame larger than the maximum size");
    g_assert_cmpint(wire_message_scan(WIRE_BINARY, TRUE, zero, sizeof(zero),
                                      NULL, &len, &why),
                    ==, WIRE_ERROR);
}

/* ---- the resumable scan -------------------------------------------------- */

/* A call with every kind of value: compact bools in headers and in
 * containers, field-id jumps, strings around the sizes that matter,
 * nesting, empty containers. */
static void
scan_sample(wire_proto_t proto, struct wire_buf *b, size_t big)
{
    struct wire_writer w;
    uint8_t *blob = g_malloc(big);

    for (size_t i = 0; i < big; i++) {
        blob[i] = (uint8_t)(i * 7);
    }
    wire_writer_init(&w, proto, b);
    wire_write_msg_begin(&w, (const uint8_t *)"mutateRows", 10, WIRE_CALL, 42);
    wire_write_struct_begin(&w);
    wire_write_field(&w, WIRE_T_STRING, 1);
    wire_write_binary(&w, "t", 1);
    wire_write_field(&w, WIRE_T_BOOL, 2);
    wire_write_bool(&w, TRUE);
    wire_write_field(&w, WIRE_T_LIST, 3);
    wire_write_list_begin(&w, WIRE_T_STRUCT, 3);
    for (int i = 0; i < 3; i++) {
        wire_write_struct_begin(&w);
        wire_write_field(&w, WIRE_T_STRING, 1);
        wire_write_binary(&w, blob, (uint32_t)(i == 1 ? big : 0));
        wire_write_field(&w, WIRE_T_MAP, 40);
        wire_write_map_begin(&w, WIRE_T_STRING, WIRE_T_STRUCT, (uint32_t)i);
        for (int j = 0; j < i; j++) {
            wire_write_binary(&w, "k", 1);
            wire_write_struct_begin(&w);
            wire_write_field(&w, WIRE_T_I64, 3);
            wire_write_i64(&w, -((int64_t)1 << 40));
            wire_write_field(&w, WIRE_T_DOUBLE, -2);
            wire_write_double(&w, 0.5);
            wire_write_struct_end(&w);
        }
        wire_write_container_end(&w);
        wire_write_field(&w, WIRE_T_BOOL, 41);
        wire_write_bool(&w, i == 2);
        wire_write_struct_end(&w);
    }
    wire_write_container_end(&w);
    wire_write_field(&w, WIRE_T_SET, 4);
    wire_write_set_begin(&w, WIRE_T_BOOL, 3);
    wire_write_bool(&w, TRUE);
    wire_write_bool(&w, FALSE);
    wire_write_bool(&w, TRUE);
    wire_write_container_end(&w);
    wire_write_field(&w, WIRE_T_LIST, 5);
    wire_write_list_begin(&w, WIRE_T_I32, 0);
    wire_write_container_end(&w);
    wire_write_field(&w, WIRE_T_I16, 300);
    wire_write_i16(&w, -5);
    wire_write_field(&w, WIRE_T_BYTE, 301);
    wire_write_byte(&w, 7);
    wire_write_struct_end(&w);
    g_free(blob);
}

/* Feeds buf to a fresh scan cut at the given points (ascending), marking
 * into marks if not NULL; returns the status of the last feed. */
static wire_status_t
scan_in_pieces(wire_proto_t proto, const uint8_t *buf, size_t len,
               const size_t *cuts, size_t ncuts, struct wire_buf *marks,
               size_t *msg_len, const char **why)
{
    struct wire_scan sc;
    wire_status_t st = WIRE_AGAIN;

    wire_scan_init(&sc);
    wire_scan_mark(&sc, marks);
    for (size_t i = 0; i <= ncuts; i++) {
        size_t upto = i < ncuts ? cuts[i] : len;

        st = wire_scan_feed(&sc, proto, buf, upto, NULL, msg_len, why);
        if (st != WIRE_AGAIN) {
            return st;
        }
    }
    return st;
}

/*
 * The marks a scan of buf[0..len) (one whole message) left are where its
 * result struct's list of structs has each element and its first field,
 * and where the list ends, as a reader walking it finds them.
 */
static void
scan_assert_marks(wire_proto_t proto, const uint8_t *buf, size_t len,
                  const struct wire_buf *marks)
{
    const struct wire_scan_mark *m = (const struct wire_scan_mark *)
                                         marks->data;
    size_t n = marks->len / sizeof(*m), i = 0;
    struct wire_reader r;
    struct wire_msg msg;
    uint8_t type, et;
    int16_t fid;
    uint32_t count;

    g_assert_cmpuint(marks->len % sizeof(*m), ==, 0);
    wire_reader_init(&r, proto, buf, len, TRUE, NULL);
    wire_read_msg_begin(&r, &msg);
    wire_read_struct_begin(&r);
    while (wire_read_field(&r, &type, &fid) == WIRE_OK &&
           type != WIRE_T_STOP) {
        if (type != WIRE_T_LIST) {
            wire_skip(&r, type);
            continue;
        }
        wire_read_list_begin(&r, &et, &count);
        for (uint32_t e = 0; e < count; e++) {
            if (et != WIRE_T_STRUCT) {
                wire_skip(&r, et);
                continue;
            }
            g_assert_cmpuint(i, <, n);
            g_assert_cmpuint(m[i].at, ==, wire_reader_offset(&r));
            wire_read_struct_begin(&r);
            wire_read_field(&r, &type, &fid);
            g_assert_cmpuint(m[i].first, ==, wire_reader_offset(&r));
            g_assert_cmpint(m[i].type, ==, type);
            g_assert_cmpint(m[i].fid, ==, type == WIRE_T_STOP ? 0 : fid);
            while (type != WIRE_T_STOP) {
                wire_skip(&r, type);
                wire_read_field(&r, &type, &fid);
            }
            wire_read_struct_end(&r);
            i++;
        }
        wire_read_container_end(&r);
        if (et == WIRE_T_STRUCT) {
            g_assert_cmpuint(i, <, n);
            g_assert_cmpuint(m[i].at, ==, wire_reader_offset(&r));
            g_assert_cmpint(m[i].type, ==, WIRE_T_STOP);
            i++;
        }
    }
    g_assert_cmpint(r.status, ==, WIRE_OK);
    g_assert_cmpuint(i, ==, n);
}

/* Test: cut anywhere, the scan finds the message's end; marking, it
 * marks the rows of its list of structs as a walk finds them */
static void
test_scan_splits(gconstpointer data)
{
    wire_proto_t proto = GPOINTER_TO_INT(data);
    static const size_t bigs[] = { 0, 1, 127, 128, 300, 70000 };
    GRand *rng = g_rand_new_with_seed(7);

    for (size_t k = 0; k < G_N_ELEMENTS(bigs); k++) {
        struct wire_buf b, marks;
        size_t whole, len, *cuts;
        const char *why;

        wire_buf_init(&b);
        wire_buf_init(&marks);
        scan_sample(proto, &b, bigs[k]);
        whole = b.len;
        /* a second message right behind: the scan stops at the first */
        scan_sample(proto, &b, 3);
        g_assert_cmpint(wire_message_scan(proto, FALSE, b.data, b.len, NULL,
                                          &len, &why),
                        ==, WIRE_OK);
        g_assert_cmpuint(len, ==, whole);

        /* one byte at a time: AGAIN at every strict prefix */
        cuts = g_new(size_t, whole);
        for (size_t i = 0; i < whole; i++) {
            cuts[i] = i;
        }
        g_assert_cmpint(scan_in_pieces(proto, b.data, b.len, cuts, whole,
                                       &marks, &len, &why),
                        ==, WIRE_OK);
        g_assert_cmpuint(len, ==, whole);
        scan_assert_marks(proto, b.data, whole, &marks);
        g_assert_cmpint(scan_in_pieces(proto, b.data, whole - 1, cuts,
                                       whole - 1, NULL, &len, &why),
                        ==, WIRE_AGAIN);
        /* random cuts */
        for (int round = 0; round < 50; round++) {
            size_t n = 0;

            for (size_t i = 1; i < b.len; i++) {
                if (g_rand_int_range(rng, 0, 64) == 0) {
                    cuts[n++] = i;
                    if (n == whole) {
                        break;
                    }
                }
            }
            g_assert_cmpint(scan_in_pieces(proto, b.data, b.len, cuts, n,
                                           &marks, &len, &why),
                            ==, WIRE_OK);
            g_assert_cmpuint(len, ==, whole);
            scan_assert_marks(proto, b.data, whole, &marks);
        }
        /* whole at once: each row walked in one go */
        g_assert_cmpint(scan_in_pieces(proto, b.data, b.len, NULL, 0, &marks,
                                       &len, &why),
                        ==, WIRE_OK);
        scan_assert_marks(proto, b.data, whole, &marks);
        g_free(cuts);
        wire_buf_free(&b);
        wire_buf_free(&marks);
    }
    g_rand_free(rng);
}

/* Damaged messages: fed in pieces, the scan says what wire_message_scan
 * says of the whole (the same end, the same error, or wait). */
static void
test_scan_agrees(gconstpointer data)
{
    wire_proto_t proto = GPOINTER_TO_INT(data);
    GRand *rng = g_rand_new_with_seed(11);
    struct wire_buf b, marks;

    wire_buf_init(&b);
    wire_buf_init(&marks);
    scan_sample(proto, &b, 200);
    for (int round = 0; round < 20000; round++) {
        uint8_t *m = g_memdup2(b.data, b.len);
        size_t len = b.len, cuts[8], n = 0, got = 0, want = 0;
        const char *why1 = NULL, *why2 = NULL;
        wire_status_t st1, st2;
        int flips = g_rand_int_range(rng, 1, 4);

        for (int f = 0; f < flips; f++) {
            m[g_rand_int_range(rng, 0, (gint32)len)] = (uint8_t)
                g_rand_int_range(rng, 0, 256);
        }
        if (g_rand_boolean(rng)) {
            len = (size_t)g_rand_int_range(rng, 1, (gint32)len);
        }
        for (size_t c = 1; c < len && n < G_N_ELEMENTS(cuts); c++) {
            if (g_rand_int_range(rng, 0, 40) == 0) {
                cuts[n++] = c;
            }
        }
        st1 = wire_message_scan(proto, FALSE, m, len, NULL, &want, &why1);
        /* marking, each row that has all arrived is walked at once */
        st2 = scan_in_pieces(proto, m, len, cuts, n,
                             round % 2 == 1 ? &marks : NULL, &got, &why2);
        g_assert_cmpint(st2, ==, st1);
        if (st1 == WIRE_OK) {
            g_assert_cmpuint(got, ==, want);
        }
        if (st1 == WIRE_ERROR) {
            g_assert_cmpstr(why2, ==, why1);
        }
        g_free(m);
    }
    wire_buf_free(&b);
    wire_buf_free(&marks);
    g_rand_free(rng);
}

/* Limits hold however the bytes are cut: a string that would pass
 * max_message fails as soon as its length is read. */
static void
test_scan_limits(void)
{
    struct wire_limits lim = wire_default_limits;
    struct wire_buf b;
    struct wire_scan sc;
    size_t len;
    const char *why;

    wire_buf_init(&b);
    scan_sample(WIRE_BINARY, &b, 5000);
    lim.max_message = 4096;
    wire_scan_init(&sc);
    g_assert_cmpint(wire_scan_feed(&sc, WIRE_BINARY, b.data, 200, &lim, &len,
                                   &why),
                    ==, WIRE_ERROR);
    g_assert_cmpstr(why, ==, "size larger than the maximum message");
    lim = wire_default_limits;
    lim.max_string = 1000;
    wire_scan_init(&sc);
    g_assert_cmpint(wire_scan_feed(&sc, WIRE_BINARY, b.data, 200, &lim, &len,
                                   &why),
                    ==, WIRE_ERROR);
    g_assert_cmpstr(why, ==, "string larger than the limit");
    wire_buf_free(&b);
}

/* A message nesting containers deeper than the scan's frames is an
 * error, found before anything is written past the last frame (a fuzzed
 * reply once wrote a list head one frame too far). */
static void
test_scan_depth(gconstpointer data)
{
    wire_proto_t proto = GPOINTER_TO_INT(data);
    static const uint8_t kinds[] = { WIRE_T_LIST, WIRE_T_MAP, WIRE_T_STRUCT };

    for (size_t k = 0; k < G_N_ELEMENTS(kinds); k++) {
        for (unsigned nest = WIRE_MAX_DEPTH - 2; nest <= WIRE_MAX_DEPTH + 8;
             nest++) {
            struct wire_buf b;
            struct wire_writer w;
            struct wire_scan sc;
            size_t len = 0;
            const char *why = NULL;
            wire_status_t st;

            unit_msg_begin(&w, &b, proto, "x", WIRE_REPLY, 1);
            wire_write_field(&w, kinds[k], 0);
            for (unsigned i = 0; i < nest; i++) {
                if (kinds[k] == WIRE_T_LIST) {
                    wire_write_list_begin(&w, WIRE_T_LIST, 1);
                } else if (kinds[k] == WIRE_T_MAP) {
                    wire_write_map_begin(&w, WIRE_T_BYTE, WIRE_T_MAP, 1);
                    wire_write_byte(&w, 1);
                } else {
                    wire_write_struct_begin(&w);
                    wire_write_field(&w, WIRE_T_STRUCT, 1);
                }
            }
            /* the innermost: an empty one, then every level closed */
            if (kinds[k] == WIRE_T_LIST) {
                wire_write_list_begin(&w, WIRE_T_BYTE, 0);
            } else if (kinds[k] == WIRE_T_MAP) {
                wire_write_map_begin(&w, WIRE_T_BYTE, WIRE_T_BYTE, 0);
            } else {
                wire_write_struct_begin(&w);
            }
            for (unsigned i = 0; i <= nest; i++) {
                if (kinds[k] == WIRE_T_STRUCT) {
                    wire_write_struct_end(&w);
                } else {
                    wire_write_container_end(&w);
                }
            }
            wire_write_struct_end(&w);
            wire_scan_init(&sc);
            st = wire_scan_feed(&sc, proto, b.data, b.len, NULL, &len, &why);
            /* the result struct is level 1 and the field's value level 2,
             * so nest + 2 levels in all */
            if (nest + 2 > WIRE_MAX_DEPTH) {
                g_assert_cmpint(st, ==, WIRE_ERROR);
                g_assert_cmpstr(why, ==, "nesting deeper than the limit");
            } else {
                g_assert_cmpint(st, ==, WIRE_OK);
                g_assert_cmpuint(len, ==, b.len);
            }
            wire_buf_free(&b);
        }
    }
}

/* The scan's verdict st/got/swhy is the whole message's whole/want/why. */
static void
scan_assert_same(wire_status_t st, size_t got, const char *swhy,
                 wire_status_t whole, size_t want, const char *why)
{
    g_assert_cmpint(st, ==, whole);
    if (whole == WIRE_OK) {
        g_assert_cmpuint(got, ==, want);
    } else if (whole == WIRE_ERROR) {
        g_assert_cmpstr(swhy, ==, why);
    }
}

/*
 * Fed buf[0..len) cut at any point, and a byte at a time, the resumable
 * scan says what wire_message_scan says of the whole: the same status,
 * the same end, the same error.
 */
static void
scan_check_every_cut(wire_proto_t proto, const uint8_t *buf, size_t len,
                     const struct wire_limits *lim)
{
    const char *why = NULL, *swhy = NULL;
    size_t want = 0, got = 0;
    wire_status_t whole, st;
    struct wire_scan sc;
    struct wire_buf marks;

    whole = wire_message_scan(proto, FALSE, buf, len, lim, &want, &why);
    wire_buf_init(&marks);
    for (size_t cut = 0; cut <= len; cut++) {
        /* and marking: the rows that have all arrived walked at once */
        for (int mark = 0; mark < 2; mark++) {
            wire_scan_init(&sc);
            wire_scan_mark(&sc, mark ? &marks : NULL);
            st = wire_scan_feed(&sc, proto, buf, cut, lim, &got, &swhy);
            if (st == WIRE_AGAIN) {
                st = wire_scan_feed(&sc, proto, buf, len, lim, &got, &swhy);
            }
            scan_assert_same(st, got, swhy, whole, want, why);
        }
    }
    wire_buf_free(&marks);
    wire_scan_init(&sc);
    st = WIRE_AGAIN;
    for (size_t upto = 0; upto <= len && st == WIRE_AGAIN; upto++) {
        st = wire_scan_feed(&sc, proto, buf, upto, lim, &got, &swhy);
    }
    scan_assert_same(st, got, swhy, whole, want, why);
}

/* What follows the last allowed level in test_scan_depth_head. */
enum scan_head {
    SCAN_HEAD_WHOLE,    /* a whole container: too deep */
    SCAN_HEAD_CUT,      /* the head's first byte only: wait */
    SCAN_HEAD_NO_ITEMS, /* the head, its items not arrived: wait */
    SCAN_HEAD_BAD_TYPE, /* an element type that does not exist */
};

/*
 * A container one level past the depth limit is refused only once its
 * head is read, as wire_skip reads it (bytes, types, size, then depth):
 * before, the resumable scan refused it at once, so a message whose
 * head had not all arrived was an error to one scan and a wait to the
 * other, and what the daemon did with it depended on where TCP cut it.
 */
static void
test_scan_depth_head(gconstpointer data)
{
    wire_proto_t proto = GPOINTER_TO_INT(data);
    static const uint8_t kinds[] = { WIRE_T_LIST, WIRE_T_MAP };
    static const uint32_t depths[] = { 8, WIRE_MAX_DEPTH };

    for (size_t k = 0; k < G_N_ELEMENTS(kinds); k++) {
        for (size_t d = 0; d < G_N_ELEMENTS(depths); d++) {
            struct wire_limits lim = wire_default_limits;

            lim.max_depth = depths[d];
            for (int v = SCAN_HEAD_WHOLE; v <= SCAN_HEAD_BAD_TYPE; v++) {
                struct wire_buf b;
                struct wire_writer w;
                size_t head, len = 0;
                const char *why = NULL;
                wire_status_t st;

                unit_msg_begin(&w, &b, proto, "x", WIRE_CALL, 1);
                wire_write_field(&w, kinds[k], 1);
                /* levels 2 .. max_depth, then the one too deep */
                for (uint32_t i = 2; i <= lim.max_depth; i++) {
                    if (kinds[k] == WIRE_T_LIST) {
                        wire_write_list_begin(&w, WIRE_T_LIST, 1);
                    } else {
                        wire_write_map_begin(&w, WIRE_T_BYTE, WIRE_T_MAP, 1);
                        wire_write_byte(&w, 1);
                    }
                }
                head = b.len;
                if (kinds[k] == WIRE_T_LIST) {
                    wire_write_list_begin(&w, WIRE_T_BYTE, 300);
                } else {
                    wire_write_map_begin(&w, WIRE_T_BYTE, WIRE_T_BYTE, 300);
                }
                if (v == SCAN_HEAD_WHOLE) {
                    for (int i = 0; i < (kinds[k] == WIRE_T_MAP ? 600 : 300);
                         i++) {
                        wire_write_byte(&w, 0);
                    }
                } else if (v == SCAN_HEAD_CUT) {
                    b.len = head + 1;
                } else if (v == SCAN_HEAD_BAD_TYPE) {
                    /* binary: the (key) type byte first; compact: a list
                     * has it in its first byte's low half, a map in the
                     * byte after its count's varint */
                    size_t at = proto == WIRE_BINARY || kinds[k] == WIRE_T_LIST
                                    ? head
                                    : b.len - 1;

                    b.data[at] = proto == WIRE_BINARY ? 1
                                                      : (b.data[at] | 0x0d);
                }
                st = wire_message_scan(proto, FALSE, b.data, b.len, &lim, &len,
                                       &why);
                switch (v) {
                case SCAN_HEAD_WHOLE:
                    g_assert_cmpint(st, ==, WIRE_ERROR);
                    g_assert_cmpstr(why, ==, "nesting deeper than the limit");
                    break;
                case SCAN_HEAD_CUT:
                case SCAN_HEAD_NO_ITEMS:
                    g_assert_cmpint(st, ==, WIRE_AGAIN);
                    break;
                default:
                    g_assert_cmpint(st, ==, WIRE_ERROR);
                    g_assert_cmpstr(why, ==,
                                    kinds[k] == WIRE_T_LIST
                                        ? "invalid element type"
                                        : "invalid map key or value type");
                    break;
                }
                scan_check_every_cut(proto, b.data, b.len, &lim);
                wire_buf_free(&b);
            }
        }
    }
}

/*
 * Inputs on which fuzz_request and fuzz_reply found the two scans apart
 * (issue 23), as the targets read them: base64, selector bytes first.
 * Each is also in tests/fuzz/corpus.
 */
static void
test_scan_fuzz_inputs(void)
{
    static const struct wire_limits tight = {
        .max_message = 4096,
        .max_string = 512,
        .max_container = 64,
        .max_depth = 8,
    };
    static const struct {
        gboolean reply; /* fuzz_reply: 3 selector bytes, else 1 */
        const char *b64;
    } inputs[] = {
        { FALSE, "AYIhGA5h8f/JycnJycnJycnJycnJycnJycnJycnJycnJycnJycnJycnJyZLJ"
                 "yclJycnJMEtLS0sLAAMAAAACS0tLS0tLS0tLS0tLS0tLS0tLS0tLS0tLS0tL"
                 "S0tLS8nJycnJycnJycnJycnJycnJycnJycnJycnJyYaGhoaGyUtLS0tLS0tL"
                 "S0tLS0tLS0tLS0tLS0tLS0tLS0tLS0tLS0tLS0tbS0tLS0tLS0tLS0tLS0tL"
                 "S0tLS0tLS8nJycm0ycldycnJycnJg8nJAwDJyckAAB+CIRMHZWNtZcnJycnJ"
                 "bgxkZWRpc2Fi////////aXIhbsl06QoAAA==" },
        { TRUE, "Aw4AgkEHBmdldFJhGAkAPBgGDAByb3eampqampqampqampqampqampqampqa"
                "mpqampqampqampqampqampqampqampqampqampqampqampqampqampowGwGM"
                "A2Q6YRiBdhYCAAAYCzAtYWpjI2RlAA==" },
        { TRUE,
          "/zj/goEWFv8A+wBpKAVlZGwTExMTExMTExMTExMTExMTExMCfHx8fHx8fHxb" },
    };

    for (size_t i = 0; i < G_N_ELEMENTS(inputs); i++) {
        gsize n = 0;
        g_autofree guchar *in = g_base64_decode(inputs[i].b64, &n);
        wire_proto_t proto = (in[0] & 1) ? WIRE_COMPACT : WIRE_BINARY;
        const struct wire_limits *lim;
        size_t skip = inputs[i].reply ? 3 : 1, len;

        g_assert_cmpuint(n, >, skip);
        if (inputs[i].reply) {
            lim = (in[0] & 4) ? &tight : &wire_default_limits;
        } else {
            lim = (in[0] & 8) ? &tight : &wire_default_limits;
        }
        len = MIN(n - skip, (size_t)lim->max_message);
        scan_check_every_cut(proto, in + skip, len, lim);
    }
}

/* Two readers over the same bytes end in the same state. */
static void
assert_readers_equal(const struct wire_reader *a, const struct wire_reader *b)
{
    g_assert_true(a->pos == b->pos);
    g_assert_cmpint(a->status, ==, b->status);
    g_assert_cmpstr(a->error, ==, b->error);
    g_assert_cmpuint(a->depth, ==, b->depth);
}

/* A reader over in[0..len) in one of test_inline_paths' states: fresh,
 * over a whole message, waiting (AGAIN), failed. */
static void
inline_reader(struct wire_reader *r, int proto, const uint8_t *in, size_t len,
              int state, const struct wire_limits *lim)
{
    wire_reader_init(r, proto, in, len, state == 1, lim);
    if (state == 2) {
        r->status = WIRE_AGAIN;
    } else if (state == 3) {
        wire_reader_fail(r, "failed before");
    }
}

/*
 * The inline readers of wire.h (field header, string, struct entry) take
 * the common case themselves and hand the rest to the full functions:
 * whatever the bytes, limits and reader state, both give the same
 * result.  Every field header byte, cut at every length, and strings of
 * every size around the limits, on fresh, complete, AGAIN and failed
 * readers, in both protocols.
 */
static void
test_inline_paths(void)
{
    const struct wire_limits lim = {
        .max_message = 24, .max_string = 8, .max_container = 8, .max_depth = 3
    };

    for (int proto = WIRE_BINARY; proto <= WIRE_COMPACT; proto++) {
        for (int state = 0; state < 4; state++) {
            for (unsigned t = 0; t < 256; t++) {
                const uint8_t in[4] = { (uint8_t)t, 0x01, 0x02, 0x00 };

                for (size_t len = 0; len <= sizeof(in); len++) {
                    struct wire_reader a, b;
                    uint8_t ta = 0xee, tb = 0xee;
                    int16_t fa = 7, fb = 7;

                    inline_reader(&a, proto, in, len, state, &lim);
                    b = a;
                    g_assert_cmpint(wire_read_field(&a, &ta, &fa), ==,
                                    wire_read_field_full(&b, &tb, &fb));
                    g_assert_cmpuint(ta, ==, tb);
                    g_assert_cmpint(fa, ==, fb);
                    assert_readers_equal(&a, &b);
                }
            }
            for (int64_t n = -2; n <= 30; n++) {
                uint8_t in[40] = { 0 };
                uint32_t be = (uint32_t)(n == 30 ? INT32_MAX : n);

                /* binary: a big-endian i32; compact: the varint of n
                 * (a negative n reads as a huge varint) */
                if (proto == WIRE_BINARY) {
                    in[0] = (uint8_t)(be >> 24);
                    in[1] = (uint8_t)(be >> 16);
                    in[2] = (uint8_t)(be >> 8);
                    in[3] = (uint8_t)be;
                } else {
                    uint32_t v = be;
                    size_t i = 0;

                    while (v >= 0x80) {
                        in[i++] = (uint8_t)(v | 0x80);
                        v >>= 7;
                    }
                    in[i] = (uint8_t)v;
                }
                for (size_t len = 0; len <= sizeof(in); len++) {
                    struct wire_reader a, b;
                    const uint8_t *da = in, *db = in;
                    uint32_t la = 99, lb = 99;

                    inline_reader(&a, proto, in, len, state, &lim);
                    b = a;
                    g_assert_cmpint(wire_read_binary(&a, &da, &la), ==,
                                    wire_read_binary_full(&b, &db, &lb));
                    g_assert_true(da == db);
                    g_assert_cmpuint(la, ==, lb);
                    assert_readers_equal(&a, &b);
                }
            }
            for (uint32_t depth = 0; depth <= WIRE_MAX_DEPTH; depth++) {
                static const uint8_t in[1] = { 0 };
                struct wire_reader a, b;

                inline_reader(&a, proto, in, sizeof(in), state, &lim);
                a.depth = depth;
                b = a;
                g_assert_cmpint(wire_read_struct_begin(&a), ==,
                                wire_read_struct_begin_full(&b));
                assert_readers_equal(&a, &b);
            }
        }
    }
}

/* A strict binary header: version word, name of name_len bytes ('m'),
 * sequence id 7, into out; returns its length. */
static size_t
strict_header(uint8_t *out, uint32_t version, uint32_t name_len)
{
    out[0] = (uint8_t)(version >> 24);
    out[1] = (uint8_t)(version >> 16);
    out[2] = (uint8_t)(version >> 8);
    out[3] = (uint8_t)version;
    out[4] = (uint8_t)(name_len >> 24);
    out[5] = (uint8_t)(name_len >> 16);
    out[6] = (uint8_t)(name_len >> 8);
    out[7] = (uint8_t)name_len;
    memset(out + 8, 'm', name_len);
    memcpy(out + 8 + name_len, "\0\0\0\7", 4);
    return 12 + (size_t)name_len;
}

/*
 * wire_read_msg_begin takes a whole valid strict binary header in one
 * test: it must still refuse each bad header with its own error, and
 * wait (or call a cut header truncated) at every length.
 */
static void
test_strict_header(void)
{
    static const struct {
        uint32_t version, name_len;
        const char *error; /* NULL: valid */
    } cases[] = {
        { 0x80010001u, 0, NULL },
        { 0x80010002u, 4, NULL },
        { 0x80010004u, WIRE_MAX_NAME, NULL },
        { 0x80010001u, WIRE_MAX_NAME + 1, "method name too long" },
        { 0x80010001u, 0x80000000u, "method name too long" },
        { 0x80010000u, 4, "bad message type" },
        { 0x80010005u, 4, "bad message type" },
        { 0x80010101u, 4, NULL }, /* the byte before the type is free */
        { 0x80020001u, 4, "bad binary protocol version" },
        { 0x81010001u, 4, "bad binary protocol version" },
    };

    for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
        uint8_t in[12 + WIRE_MAX_NAME + 1];
        uint32_t name_len = MIN(cases[i].name_len, (uint32_t)WIRE_MAX_NAME);
        size_t len = strict_header(in, cases[i].version, name_len);
        struct wire_reader r;
        struct wire_msg m;

        /* the length word says more than the name written: as sent */
        in[4] = (uint8_t)(cases[i].name_len >> 24);
        in[5] = (uint8_t)(cases[i].name_len >> 16);
        in[6] = (uint8_t)(cases[i].name_len >> 8);
        in[7] = (uint8_t)cases[i].name_len;
        wire_reader_init(&r, WIRE_BINARY, in, len, TRUE, NULL);
        if (cases[i].error != NULL) {
            g_assert_cmpint(wire_read_msg_begin(&r, &m), ==, WIRE_ERROR);
            g_assert_cmpstr(r.error, ==, cases[i].error);
            continue;
        }
        g_assert_cmpint(wire_read_msg_begin(&r, &m), ==, WIRE_OK);
        g_assert_true(m.strict);
        g_assert_cmpuint(m.type, ==, cases[i].version & 0xff);
        g_assert_cmpuint(m.name_len, ==, name_len);
        g_assert_true(m.name == in + 8);
        g_assert_cmpint(m.seqid, ==, 7);
        g_assert_cmpuint(wire_reader_offset(&r), ==, len);
        for (size_t cut = 0; cut < len; cut++) {
            wire_reader_init(&r, WIRE_BINARY, in, cut, FALSE, NULL);
            g_assert_cmpint(wire_read_msg_begin(&r, &m), ==, WIRE_AGAIN);
            wire_reader_init(&r, WIRE_BINARY, in, cut, TRUE, NULL);
            g_assert_cmpint(wire_read_msg_begin(&r, &m), ==, WIRE_ERROR);
            g_assert_cmpstr(r.error, ==, "message truncated");
        }
    }
}

int
main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_data_func("/wire/writer/binary", GINT_TO_POINTER(WIRE_BINARY),
                         test_writer_against_c_glib);
    g_test_add_data_func("/wire/writer/compact", GINT_TO_POINTER(WIRE_COMPACT),
                         test_writer_against_c_glib);
    for (int mode = 0; mode < 8; mode++) {
        g_autofree char *path = g_strdup_printf("/wire/copy/%s-to-%s/%s",
                                                (mode & 1) ? "compact"
                                                           : "binary",
                                                (mode & 2) ? "compact"
                                                           : "binary",
                                                (mode & 4) ? "sorted" : "map");

        g_test_add_data_func(path, GINT_TO_POINTER(mode),
                             test_copy_transcodes);
    }
    g_test_add_data_func("/wire/header/binary", GINT_TO_POINTER(WIRE_BINARY),
                         test_message_header);
    g_test_add_data_func("/wire/header/compact", GINT_TO_POINTER(WIRE_COMPACT),
                         test_message_header);
    g_test_add_func("/wire/header/non-strict", test_non_strict_binary);
    g_test_add_func("/wire/detect", test_detect);
    g_test_add_func("/wire/malformed/binary", test_malformed_binary);
    g_test_add_func("/wire/malformed/compact", test_malformed_compact);
    g_test_add_data_func("/wire/depth/binary", GINT_TO_POINTER(WIRE_BINARY),
                         test_depth_cap);
    g_test_add_data_func("/wire/depth/compact", GINT_TO_POINTER(WIRE_COMPACT),
                         test_depth_cap);
    g_test_add_func("/wire/frame-limits", test_frame_limits);
    g_test_add_data_func("/wire/scan/splits/binary",
                         GINT_TO_POINTER(WIRE_BINARY), test_scan_splits);
    g_test_add_data_func("/wire/scan/splits/compact",
                         GINT_TO_POINTER(WIRE_COMPACT), test_scan_splits);
    g_test_add_data_func("/wire/scan/agrees/binary",
                         GINT_TO_POINTER(WIRE_BINARY), test_scan_agrees);
    g_test_add_data_func("/wire/scan/agrees/compact",
                         GINT_TO_POINTER(WIRE_COMPACT), test_scan_agrees);
    g_test_add_func("/wire/scan/limits", test_scan_limits);
    g_test_add_data_func("/wire/scan/depth/binary",
                         GINT_TO_POINTER(WIRE_BINARY), test_scan_depth);
    g_test_add_data_func("/wire/scan/depth/compact",
                         GINT_TO_POINTER(WIRE_COMPACT), test_scan_depth);
    g_test_add_data_func("/wire/scan/depth-head/binary",
                         GINT_TO_POINTER(WIRE_BINARY), test_scan_depth_head);
    g_test_add_data_func("/wire/scan/depth-head/compact",
                         GINT_TO_POINTER(WIRE_COMPACT), test_scan_depth_head);
    g_test_add_func("/wire/scan/fuzz-inputs", test_scan_fuzz_inputs);
    g_test_add_func("/wire/inline-paths", test_inline_paths);
    g_test_add_func("/wire/header/strict-binary", test_strict_header);
    return g_test_run();
}
