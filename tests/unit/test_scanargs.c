/* test_scanargs.c: scanner calls read by role, and the scan each bucket
 * is sent. */
#include <string.h>

#include "hbase1.h"
#include "salt.h"
#include "scanargs.h"
#include "scanfilter.h"
#include "unit_helpers.h"

/* 16 hex buckets, "b-" in front of every key of bucket b. */
static struct salt_table hex16;

static const struct hbase1_method *
method(const char *name)
{
    return hbase1_lookup((const uint8_t *)name, strlen(name));
}

/* A TScan setting every field, startRow twice when twice. */
static void
write_tscan(struct wire_writer *w, gboolean twice)
{
    wire_write_struct_begin(w);
    wire_write_field(w, WIRE_T_STRING, 1);
    wire_write_binary(w, twice ? "z" : "a", 1);
    if (twice) {
        wire_write_field(w, WIRE_T_STRING, 1);
        wire_write_binary(w, "a", 1);
    }
    wire_write_field(w, WIRE_T_STRING, 2);
    wire_write_binary(w, "m", 1);
    wire_write_field(w, WIRE_T_I64, 3);
    wire_write_i64(w, 99);
    wire_write_field(w, WIRE_T_LIST, 4);
    wire_write_list_begin(w, WIRE_T_STRING, 1);
    wire_write_binary(w, "f:q", 3);
    wire_write_container_end(w);
    wire_write_field(w, WIRE_T_I32, 5);
    wire_write_i32(w, 7);
    wire_write_field(w, WIRE_T_STRING, 6);
    wire_write_binary(w, "PrefixFilter('a')", 17);
    wire_write_field(w, WIRE_T_I32, 7);
    wire_write_i32(w, 3);
    wire_write_field(w, WIRE_T_BOOL, 8);
    wire_write_bool(w, TRUE);
    wire_write_field(w, WIRE_T_BOOL, 10);
    wire_write_bool(w, FALSE);
    /* not a field of TScan: passed on to every bucket as it came (a
     * newer server may know it; an older one skips it) */
    wire_write_field(w, WIRE_T_I32, 11);
    wire_write_i32(w, 1);
    wire_write_struct_end(w);
}

/* scannerOpenWithScan("t", TScan, {"k": "v"}), in out (made empty) */
static void
write_open(struct wire_buf *out, wire_proto_t proto, gboolean twice)
{
    struct wire_writer w;

    unit_msg_begin(&w, out, proto, "scannerOpenWithScan", WIRE_CALL, 5);
    wire_write_field(&w, WIRE_T_STRING, 1);
    wire_write_binary(&w, "t", 1);
    wire_write_field(&w, WIRE_T_STRUCT, 2);
    write_tscan(&w, twice);
    wire_write_field(&w, WIRE_T_MAP, 3);
    wire_write_map_begin(&w, WIRE_T_STRING, WIRE_T_STRING, 1);
    wire_write_binary(&w, "k", 1);
    wire_write_binary(&w, "v", 1);
    wire_write_container_end(&w);
    wire_write_struct_end(&w);
}

static gboolean
parse(const struct wire_buf *msg, wire_proto_t proto,
      const struct hbase1_method *m, struct scanargs *a)
{
    struct wire_reader r;
    struct wire_msg hdr;

    unit_read_msg_begin(&r, proto, msg->data, msg->len, &hdr);
    return scanargs_parse(a, m, &r);
}

static void
expect_binary(struct wire_reader *r, int16_t fid, const char *want)
{
    uint8_t type;
    int16_t got;
    const uint8_t *data;
    uint32_t len;

    wire_read_field(r, &type, &got);
    g_assert_cmpint(got, ==, fid);
    g_assert_cmpint(type, ==, WIRE_T_STRING);
    wire_read_binary(r, &data, &len);
    g_assert_cmpmem(data, len, want, strlen(want));
}

static void
expect_field(struct wire_reader *r, int16_t fid, uint8_t want_type)
{
    uint8_t type;
    int16_t got;

    wire_read_field(r, &type, &got);
    g_assert_cmpint(got, ==, fid);
    g_assert_cmpint(type, ==, want_type);
}

/* Test: a scannerOpenWithScan read by role and written for one bucket:
 * bounds and filter salted, caching the engine's, the rest as sent (in
 * the backend's protocol, whatever the client's) */
static void
test_open_for_bucket(gconstpointer data)
{
    wire_proto_t from = GPOINTER_TO_INT(data);
    const struct hbase1_method *m = method("scannerOpenWithScan");
    struct wire_buf msg, out;
    struct wire_writer w;
    struct wire_reader r;
    struct scanargs a;
    struct scanfilter *f;
    struct scanargs_bucket b = { .salt = &hex16, .bucket = 3, .caching = 5 };
    uint8_t type, et, kt, vt;
    int16_t fid;
    uint32_t n;

    wire_buf_init(&out);
    write_open(&msg, from, FALSE);
    g_assert_true(parse(&msg, from, m, &a));
    g_assert_null(a.repeated);
    g_assert_cmpmem(a.table, a.table_len, "t", 1);
    g_assert_true(a.has_caching && a.caching == 7);
    g_assert_true(a.has_stop && !a.prefix && !a.reversed);
    f = scanfilter_new(a.filter, a.filter_len, &hex16, FALSE, NULL, NULL);
    b.filter = f;
    wire_writer_init(&w, WIRE_BINARY, &out);
    scanargs_write_open(&a, m->scanner, &b, &w);

    wire_reader_init(&r, WIRE_BINARY, out.data, out.len, TRUE, NULL);
    wire_read_struct_begin(&r);
    expect_binary(&r, 1, "t");
    expect_field(&r, 2, WIRE_T_STRUCT);
    wire_read_struct_begin(&r);
    expect_binary(&r, 1, "3-a");
    expect_binary(&r, 2, "3-m");
    expect_field(&r, 3, WIRE_T_I64);
    g_assert_cmpint(wire_read_i64(&r), ==, 99);
    expect_field(&r, 4, WIRE_T_LIST);
    wire_read_list_begin(&r, &et, &n);
    g_assert_cmpuint(n, ==, 1);
    wire_skip(&r, et);
    wire_read_container_end(&r);
    expect_field(&r, 5, WIRE_T_I32);
    g_assert_cmpint(wire_read_i32(&r), ==, 5);
    expect_binary(&r, 6, "PrefixFilter('3-a')");
    expect_field(&r, 7, WIRE_T_I32);
    g_assert_cmpint(wire_read_i32(&r), ==, 3);
    expect_field(&r, 8, WIRE_T_BOOL);
    g_assert_true(wire_read_bool(&r));
    /* not reversed: no field 9 */
    expect_field(&r, 10, WIRE_T_BOOL);
    g_assert_false(wire_read_bool(&r));
    /* the field the proxy does not know, after the ones it does */
    expect_field(&r, 11, WIRE_T_I32);
    g_assert_cmpint(wire_read_i32(&r), ==, 1);
    wire_read_field(&r, &type, &fid);
    g_assert_cmpint(type, ==, WIRE_T_STOP);
    wire_read_struct_end(&r);
    expect_field(&r, 3, WIRE_T_MAP);
    wire_read_map_begin(&r, &kt, &vt, &n);
    g_assert_cmpuint(n, ==, 1);
    wire_skip(&r, kt);
    wire_skip(&r, vt);
    wire_read_container_end(&r);
    wire_read_field(&r, &type, &fid);
    g_assert_cmpint(type, ==, WIRE_T_STOP);
    g_assert_cmpint(wire_read_struct_end(&r), ==, WIRE_OK);
    g_assert_cmpuint(wire_reader_offset(&r), ==, out.len);

    scanfilter_free(f);
    wire_buf_free(&msg);
    wire_buf_free(&out);
}

/* Test: a field the scan is routed by, sent twice, is named; Java's
 * last one is what is kept */
static void
test_repeated(void)
{
    struct wire_buf msg;
    struct scanargs a;

    write_open(&msg, WIRE_BINARY, TRUE);
    g_assert_true(parse(&msg, WIRE_BINARY, method("scannerOpenWithScan"), &a));
    g_assert_cmpstr(a.repeated, ==,
                    "hbase-salt-proxy: field TScan.startRow sent twice");
    g_assert_cmpmem(a.start, a.start_len, "a", 1);
    wire_buf_free(&msg);
}

/* Test: the calls on an open scanner: id, and a count only where the
 * method takes one, read and written by role */
static void
test_id_calls(void)
{
    static const char *const names[] = { "scannerGetList", "scannerGet",
                                         "scannerClose" };

    for (size_t i = 0; i < G_N_ELEMENTS(names); i++) {
        const struct hbase1_method *m = method(names[i]);
        gboolean counts = i == 0;
        struct wire_buf msg;
        struct wire_writer w;
        struct scanargs a;

        /* the id and a count, whether the method takes one or not */
        unit_msg_begin(&w, &msg, WIRE_COMPACT, m->name, WIRE_CALL, 1);
        wire_write_field(&w, WIRE_T_I32, 1);
        wire_write_i32(&w, 41);
        wire_write_field(&w, WIRE_T_I32, 2);
        wire_write_i32(&w, 9);
        wire_write_struct_end(&w);
        g_assert_true(parse(&msg, WIRE_COMPACT, m, &a));
        g_assert_true(a.has_id);
        g_assert_cmpint(a.id, ==, 41);
        g_assert_cmpint(a.nrows, ==, counts ? 9 : 1);

        /* written back: the same struct, less a count it does not take */
        wire_buf_clear(&msg);
        wire_writer_init(&w, WIRE_BINARY, &msg);
        scanargs_write_id(m, 41, 9, &w);
        g_assert_cmpuint(msg.len, ==, counts ? 15 : 8);
        wire_buf_free(&msg);
    }
    g_assert_true(method("scannerGetList")->scanner->fetch ==
                  method("scannerGetList"));
    g_assert_true(method("scannerGet")->scanner->close ==
                  method("scannerClose"));
    g_assert_true(method("scannerOpen")->scanner->open ==
                  method("scannerOpenWithScan"));
}

/* Test: scannerOpenWithPrefix scans by prefix even without the prefix */
static void
test_prefix(void)
{
    struct wire_buf msg;
    struct wire_writer w;
    struct scanargs a;

    unit_msg_begin(&w, &msg, WIRE_BINARY, "scannerOpenWithPrefix", WIRE_CALL,
                   1);
    wire_write_field(&w, WIRE_T_STRING, 1);
    wire_write_binary(&w, "t", 1);
    wire_write_struct_end(&w);
    g_assert_true(parse(&msg, WIRE_BINARY, method("scannerOpenWithPrefix"),
                        &a));
    g_assert_true(a.prefix);
    g_assert_cmpuint(a.start_len, ==, 0);
    wire_buf_free(&msg);
}

/* Test: Thrift2's openScanner: bounds salted, caching the engine's, limit
 * read (and passed on), every field without a role the engine writes
 * (maxVersions, timeRange, colFamTimeRangeMap, readType, an unknown one)
 * passed on as it came, filterBytes noticed. */
static void
test_thrift2_open(void)
{
    const struct hbase1_service *svc = hbase1_service(HBASE1_SERVICE_THRIFT2);
    const struct hbase1_method *m =
        hbase1_service_lookup(svc, (const uint8_t *)"openScanner", 11);
    struct scanargs_bucket b = { .salt = &hex16, .bucket = 5, .caching = 9 };
    /* hbase.pb.Filter { PrefixFilter { prefix: "ab" } } */
    static const char pb[] =
        "\x0a\x2borg.apache.hadoop.hbase.filter.PrefixFilter"
        "\x12\x04\x0a\x02"
        "ab";
    struct scanfilter *f;
    struct wire_buf msg, out;
    struct wire_writer w;
    struct wire_reader r;
    struct scanargs a;
    uint8_t type;
    int16_t fid;
    int seen = 0;

    g_assert_nonnull(m);
    g_assert_true(m->scanner == svc->scanner);
    g_assert_true(svc->scanner->open == m);
    g_assert_cmpstr(svc->scanner->fetch->name, ==, "getScannerRows");
    g_assert_cmpstr(svc->scanner->close->name, ==, "closeScanner");
    wire_buf_init(&out);
    unit_msg_begin(&w, &msg, WIRE_COMPACT, "openScanner", WIRE_CALL, 1);
    wire_write_field(&w, WIRE_T_STRING, 1);
    wire_write_binary(&w, "t", 1);
    wire_write_field(&w, WIRE_T_STRUCT, 2);
    wire_write_struct_begin(&w);
    wire_write_field(&w, WIRE_T_STRING, 1);
    wire_write_binary(&w, "a", 1);
    wire_write_field(&w, WIRE_T_STRING, 2);
    wire_write_binary(&w, "m", 1);
    wire_write_field(&w, WIRE_T_I32, 4);
    wire_write_i32(&w, 70);
    wire_write_field(&w, WIRE_T_I32, 5);
    wire_write_i32(&w, 2);
    wire_write_field(&w, WIRE_T_STRUCT, 6);
    wire_write_struct_begin(&w);
    wire_write_field(&w, WIRE_T_I64, 1);
    wire_write_i64(&w, 10);
    wire_write_field(&w, WIRE_T_I64, 2);
    wire_write_i64(&w, 20);
    wire_write_struct_end(&w);
    wire_write_field(&w, WIRE_T_I32, 14);
    wire_write_i32(&w, 2);
    wire_write_field(&w, WIRE_T_I32, 15);
    wire_write_i32(&w, 12);
    wire_write_field(&w, WIRE_T_STRING, 18);
    wire_write_binary(&w, pb, sizeof(pb) - 1);
    wire_write_field(&w, WIRE_T_I64, 40);
    wire_write_i64(&w, 4040);
    wire_write_struct_end(&w);
    wire_write_struct_end(&w);
    g_assert_true(parse(&msg, WIRE_COMPACT, m, &a));
    g_assert_true(a.has_limit && a.limit == 12);
    g_assert_true(a.has_filter_bytes);
    g_assert_true(a.has_caching && a.caching == 70);
    wire_writer_init(&w, WIRE_BINARY, &out);
    b.filter = f = scanfilter_new_pb(a.filter_bytes, a.filter_bytes_len,
                                     &hex16, FALSE, NULL, NULL);
    g_assert_nonnull(f);
    scanargs_write_open(&a, m->scanner, &b, &w);
    scanfilter_free(f);

    wire_reader_init(&r, WIRE_BINARY, out.data, out.len, TRUE, NULL);
    wire_read_struct_begin(&r);
    expect_binary(&r, 1, "t");
    expect_field(&r, 2, WIRE_T_STRUCT);
    wire_read_struct_begin(&r);
    expect_binary(&r, 1, "5-a");
    expect_binary(&r, 2, "5-m");
    expect_field(&r, 4, WIRE_T_I32);
    g_assert_cmpint(wire_read_i32(&r), ==, 9);
    while (wire_read_field(&r, &type, &fid) == WIRE_OK &&
           type != WIRE_T_STOP) {
        switch (fid) {
        case 5: g_assert_cmpint(wire_read_i32(&r), ==, 2); break;
        case 6:
            g_assert_cmpint(type, ==, WIRE_T_STRUCT);
            wire_skip(&r, type);
            break;
        case 14: g_assert_cmpint(wire_read_i32(&r), ==, 2); break;
        case 15: g_assert_cmpint(wire_read_i32(&r), ==, 12); break;
        case 18: {
            /* the PrefixFilter rewritten for bucket 5, as protobuf */
            const uint8_t *data;
            uint32_t len;

            wire_read_binary(&r, &data, &len);
            g_assert_nonnull(memmem(data, len, "PrefixFilter", 12));
            g_assert_nonnull(memmem(data, len, "5-ab", 4));
            break;
        }
        case 40: g_assert_cmpint(wire_read_i64(&r), ==, 4040); break;
        default: g_assert_not_reached();
        }
        seen |= 1 << (fid % 31);
    }
    g_assert_cmpint(seen, ==,
                    (1 << 5) | (1 << 6) | (1 << 14) | (1 << 15) | (1 << 18) |
                        (1 << (40 % 31)));
    wire_buf_free(&msg);
    wire_buf_free(&out);
}

int
main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_assert_true(salt_table_init(&hex16, 16, SALT_FORMAT_HEX, "-", 1, NULL));
    g_test_add_data_func("/scanargs/open-for-bucket/binary",
                         GINT_TO_POINTER(WIRE_BINARY), test_open_for_bucket);
    g_test_add_data_func("/scanargs/open-for-bucket/compact",
                         GINT_TO_POINTER(WIRE_COMPACT), test_open_for_bucket);
    g_test_add_func("/scanargs/repeated", test_repeated);
    g_test_add_func("/scanargs/id-calls", test_id_calls);
    g_test_add_func("/scanargs/prefix", test_prefix);
    g_test_add_func("/scanargs/thrift2-open", test_thrift2_open);
    return g_test_run();
}
