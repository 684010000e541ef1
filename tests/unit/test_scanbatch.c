/* test_scanbatch.c: a bucket's batch of rows, walked a row at a time. */
#include <string.h>

#include "hbase1.h"
#include "salt.h"
#include "scanbatch.h"
#include "unit_helpers.h"

/* 16 hex buckets, "b-" in front of every key of bucket b. */
static struct salt_table hex16;
static const struct hbase1_field *key_field;

/* A row as a fetch carries it: key (salted or not), then one column. */
struct row {
    const char *key;
    gboolean salt;     /* give key its salt */
    gboolean key_last; /* the column before the key */
    gboolean no_key;
};

static void
write_row(struct wire_writer *w, const struct row *r)
{
    uint8_t phys[64];
    size_t n = strlen(r->key);

    if (r->salt) {
        n = salt_key(&hex16, (const uint8_t *)r->key, n, phys, sizeof(phys));
    } else {
        memcpy(phys, r->key, n);
    }
    wire_write_struct_begin(w);
    if (r->key_last) {
        wire_write_field(w, WIRE_T_I32, 5);
        wire_write_i32(w, 7);
    }
    if (!r->no_key) {
        wire_write_field(w, key_field->type, key_field->fid);
        wire_write_binary(w, phys, (uint32_t)n);
    }
    /* columns: map<Text, TCell> */
    wire_write_field(w, WIRE_T_MAP, 2);
    wire_write_map_begin(w, WIRE_T_STRING, WIRE_T_STRUCT, 1);
    wire_write_binary(w, "f:q", 3);
    wire_write_struct_begin(w);
    wire_write_field(w, WIRE_T_STRING, 1);
    wire_write_binary(w, "value", 5);
    wire_write_struct_end(w);
    wire_write_container_end(w);
    wire_write_struct_end(w);
}

/* A scannerGetList reply of rows, in out (made empty). */
static void
write_batch(struct wire_buf *out, wire_proto_t proto, const struct row *rows,
            uint32_t n)
{
    struct wire_writer w;

    unit_msg_begin(&w, out, proto, "scannerGetList", WIRE_REPLY, 1);
    wire_write_field(&w, WIRE_T_LIST, 0);
    wire_write_list_begin(&w, WIRE_T_STRUCT, n);
    for (uint32_t i = 0; i < n; i++) {
        write_row(&w, &rows[i]);
    }
    wire_write_container_end(&w);
    wire_write_struct_end(&w);
}

static uint32_t
bucket_of(const char *key)
{
    return salt_bucket(&hex16, (const uint8_t *)key, strlen(key));
}

/* A key of another bucket than b, into buf. */
static void
other_key(uint32_t b, char *buf, size_t size)
{
    for (int i = 0;; i++) {
        g_snprintf(buf, size, "o%d", i);
        if (bucket_of(buf) != b) {
            return;
        }
    }
}

/* Test: the rows of the bucket come out with their logical keys; a row
 * whose salt names another bucket is passed over */
static void
test_rows(gconstpointer data)
{
    wire_proto_t proto = GPOINTER_TO_INT(data);
    const char *mine = "k1";
    uint32_t b = bucket_of(mine);
    char other[16];
    struct wire_buf out;
    struct scanbatch sb;

    other_key(b, other, sizeof(other));
    {
        const struct row rows[] = {
            { mine, TRUE, FALSE, FALSE },
            { other, TRUE, FALSE, FALSE },
            { mine, TRUE, TRUE, FALSE },
            { "raw-key", FALSE, FALSE, FALSE },
        };

        write_batch(&out, proto, rows, G_N_ELEMENTS(rows));
    }
    scanbatch_init(&sb, &hex16, b, key_field);
    scanbatch_load(&sb, proto, out.data, out.len, NULL, NULL, 0);

    g_assert_cmpint(scanbatch_next(&sb), ==, SCANBATCH_ROW);
    g_assert_cmpmem(sb.key, sb.key_len, mine, 2);
    g_assert_true(sb.salted && sb.key_first);
    /* the other bucket's row is skipped; this one has its key second */
    g_assert_cmpint(scanbatch_next(&sb), ==, SCANBATCH_ROW);
    g_assert_cmpmem(sb.key, sb.key_len, mine, 2);
    g_assert_true(sb.salted);
    g_assert_false(sb.key_first);
    /* no salt of the table: ordered by what follows the prefix ("b-") */
    g_assert_cmpint(scanbatch_next(&sb), ==, SCANBATCH_ROW);
    g_assert_cmpmem(sb.key, sb.key_len, "w-key", 5);
    g_assert_false(sb.salted);
    g_assert_cmpint(scanbatch_next(&sb), ==, SCANBATCH_END);
    wire_buf_free(&out);
}

/* Test: the head is copied with its key unsalted, everything else as it
 * came; not when the protocol changes, the key is not first or the row
 * had no salt */
static void
test_copy_head(gconstpointer data)
{
    wire_proto_t proto = GPOINTER_TO_INT(data);
    wire_proto_t other = proto == WIRE_BINARY ? WIRE_COMPACT : WIRE_BINARY;
    const struct row rows[] = {
        { "k1", TRUE, FALSE, FALSE },
        { "k1", TRUE, TRUE, FALSE },
    };
    const struct row plain = { "k1", FALSE, FALSE, FALSE };
    struct wire_buf out, got, want;
    struct wire_writer w;
    struct scanbatch sb;

    wire_buf_init(&got);
    wire_buf_init(&want);
    write_batch(&out, proto, rows, G_N_ELEMENTS(rows));
    scanbatch_init(&sb, &hex16, bucket_of("k1"), key_field);
    scanbatch_load(&sb, proto, out.data, out.len, NULL, NULL, 0);

    g_assert_cmpint(scanbatch_next(&sb), ==, SCANBATCH_ROW);
    wire_writer_init(&w, proto, &got);
    g_assert_true(scanbatch_copy_head(&sb, proto, &w));
    wire_writer_init(&w, proto, &want);
    write_row(&w, &plain);
    g_assert_cmpmem(got.data, got.len, want.data, want.len);
    wire_writer_init(&w, other, &got);
    g_assert_false(scanbatch_copy_head(&sb, proto, &w));

    g_assert_cmpint(scanbatch_next(&sb), ==, SCANBATCH_ROW);
    wire_buf_clear(&got);
    wire_writer_init(&w, proto, &got);
    g_assert_false(scanbatch_copy_head(&sb, proto, &w));
    g_assert_cmpuint(got.len, ==, 0);
    wire_buf_free(&out);
    wire_buf_free(&got);
    wire_buf_free(&want);
}

/* Test: a row without a key, or cut short, ends the batch as malformed */
static void
test_malformed(void)
{
    const struct row rows[] = {
        { "k1", TRUE, FALSE, FALSE },
        { "k1", TRUE, FALSE, TRUE },
    };
    struct wire_buf out;
    struct scanbatch sb;

    write_batch(&out, WIRE_BINARY, rows, G_N_ELEMENTS(rows));
    scanbatch_init(&sb, &hex16, bucket_of("k1"), key_field);
    scanbatch_load(&sb, WIRE_BINARY, out.data, out.len, NULL, NULL, 0);
    g_assert_cmpint(scanbatch_next(&sb), ==, SCANBATCH_ROW);
    g_assert_cmpint(scanbatch_next(&sb), ==, SCANBATCH_MALFORMED);
    g_assert_cmpint(scanbatch_next(&sb), ==, SCANBATCH_END);

    /* the same batch cut inside its first row */
    scanbatch_init(&sb, &hex16, bucket_of("k1"), key_field);
    scanbatch_load(&sb, WIRE_BINARY, out.data, 40, NULL, NULL, 0);
    g_assert_cmpint(scanbatch_next(&sb), ==, SCANBATCH_MALFORMED);
    wire_buf_free(&out);
}

/* The marks the daemon's resumable scan leaves of a fetch reply. */
static void
scan_marks(wire_proto_t proto, const struct wire_buf *batch,
           struct wire_buf *marks)
{
    struct wire_scan sc;
    size_t len = 0;
    const char *why = NULL;

    wire_scan_init(&sc);
    wire_scan_mark(&sc, marks);
    g_assert_cmpint(wire_scan_feed(&sc, proto, batch->data, batch->len, NULL,
                                   &len, &why),
                    ==, WIRE_OK);
    g_assert_cmpuint(len, ==, batch->len);
}

/* Walks a and b (one loaded with marks) side by side: the same rows. */
static void
assert_same_rows(struct scanbatch *a, struct scanbatch *b, wire_proto_t proto)
{
    struct wire_buf ca, cb;
    scanbatch_status_t st;

    wire_buf_init(&ca);
    wire_buf_init(&cb);
    do {
        struct wire_writer wa, wb;

        st = scanbatch_next(a);
        g_assert_cmpint(scanbatch_next(b), ==, st);
        if (st != SCANBATCH_ROW) {
            break;
        }
        g_assert_cmpmem(a->key, a->key_len, b->key, b->key_len);
        g_assert_cmpmem(a->phys, a->phys_len, b->phys, b->phys_len);
        g_assert_cmpmem(a->head, a->head_len, b->head, b->head_len);
        g_assert_cmpint(a->salted, ==, b->salted);
        g_assert_cmpint(a->key_first, ==, b->key_first);
        wire_buf_clear(&ca);
        wire_buf_clear(&cb);
        wire_writer_init(&wa, proto, &ca);
        wire_writer_init(&wb, proto, &cb);
        g_assert_cmpint(scanbatch_copy_head(a, proto, &wa), ==,
                        scanbatch_copy_head(b, proto, &wb));
        g_assert_cmpmem(ca.data, ca.len, cb.data, cb.len);
    } while (st == SCANBATCH_ROW);
    wire_buf_free(&ca);
    wire_buf_free(&cb);
}

/* Test: read by the marks the scan that received the reply left, the
 * rows are the ones a walk finds, and a row is not walked again: bytes
 * after its key changed since the scan checked them go unread; marks
 * that do not fit the reply are not used */
static void
test_marks(gconstpointer data)
{
    wire_proto_t proto = GPOINTER_TO_INT(data);
    const char *mine = "k1";
    uint32_t b = bucket_of(mine);
    char other[16];
    struct wire_buf out, marks;
    const struct wire_scan_mark *m;
    size_t n;
    struct scanbatch walked, marked;

    other_key(b, other, sizeof(other));
    {
        const struct row rows[] = {
            { mine, TRUE, FALSE, FALSE }, { other, TRUE, FALSE, FALSE },
            { mine, TRUE, TRUE, FALSE },  { "raw-key", FALSE, FALSE, FALSE },
            { "k1", TRUE, FALSE, FALSE },
        };

        write_batch(&out, proto, rows, G_N_ELEMENTS(rows));
    }
    wire_buf_init(&marks);
    scan_marks(proto, &out, &marks);
    m = (const struct wire_scan_mark *)marks.data;
    n = marks.len / sizeof(*m);
    g_assert_cmpuint(n, ==, 6);

    scanbatch_init(&walked, &hex16, b, key_field);
    scanbatch_load(&walked, proto, out.data, out.len, NULL, NULL, 0);
    scanbatch_init(&marked, &hex16, b, key_field);
    scanbatch_load(&marked, proto, out.data, out.len, NULL, m, n);
    g_assert_nonnull(marked.mark);
    assert_same_rows(&walked, &marked, proto);

    /* one mark short, or marks out of order or past the reply: walked */
    scanbatch_init(&marked, &hex16, b, key_field);
    scanbatch_load(&marked, proto, out.data, out.len, NULL, m, n - 1);
    g_assert_null(marked.mark);
    {
        struct wire_scan_mark off[6];

        memcpy(off, m, sizeof(off));
        off[2].at = off[1].at;
        scanbatch_init(&marked, &hex16, b, key_field);
        scanbatch_load(&marked, proto, out.data, out.len, NULL, off, n);
        g_assert_null(marked.mark);
        memcpy(off, m, sizeof(off));
        off[5].at = (uint32_t)out.len + 1;
        scanbatch_load(&marked, proto, out.data, out.len, NULL, off, n);
        g_assert_null(marked.mark);
        memcpy(off, m, sizeof(off));
        off[0].first = off[1].at;
        scanbatch_load(&marked, proto, out.data, out.len, NULL, off, n);
        g_assert_null(marked.mark);
    }

    /* the first row's cell ends in a type that does not exist: walked,
     * the row is malformed; by its mark it is not read past its key */
    out.data[m[1].at - 2] = proto == WIRE_BINARY ? 7 : 0x0d;
    scanbatch_init(&walked, &hex16, b, key_field);
    scanbatch_load(&walked, proto, out.data, out.len, NULL, NULL, 0);
    g_assert_cmpint(scanbatch_next(&walked), ==, SCANBATCH_MALFORMED);
    scanbatch_init(&marked, &hex16, b, key_field);
    scanbatch_load(&marked, proto, out.data, out.len, NULL, m, n);
    g_assert_cmpint(scanbatch_next(&marked), ==, SCANBATCH_ROW);
    g_assert_cmpmem(marked.key, marked.key_len, mine, 2);
    g_assert_cmpuint(marked.head_len, ==, m[1].at - m[0].at);
    wire_buf_free(&out);
    wire_buf_free(&marks);
}

int
main(int argc, char **argv)
{
    const struct hbase1_method *m =
        hbase1_lookup((const uint8_t *)"scannerGetList", 14);

    g_test_init(&argc, &argv, NULL);
    g_assert_true(salt_table_init(&hex16, 16, SALT_FORMAT_HEX, "-", 1, NULL));
    key_field = m->scanner->key;
    g_test_add_data_func("/scanbatch/rows/binary",
                         GINT_TO_POINTER(WIRE_BINARY), test_rows);
    g_test_add_data_func("/scanbatch/rows/compact",
                         GINT_TO_POINTER(WIRE_COMPACT), test_rows);
    g_test_add_data_func("/scanbatch/copy-head/binary",
                         GINT_TO_POINTER(WIRE_BINARY), test_copy_head);
    g_test_add_data_func("/scanbatch/copy-head/compact",
                         GINT_TO_POINTER(WIRE_COMPACT), test_copy_head);
    g_test_add_func("/scanbatch/malformed", test_malformed);
    g_test_add_data_func("/scanbatch/marks/binary",
                         GINT_TO_POINTER(WIRE_BINARY), test_marks);
    g_test_add_data_func("/scanbatch/marks/compact",
                         GINT_TO_POINTER(WIRE_COMPACT), test_marks);
    return g_test_run();
}
