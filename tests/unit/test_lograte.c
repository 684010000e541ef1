/* test_lograte.c: unit tests of the burst folding of like log lines
 * (lograte.c) and of telling plain Thrift from TLS on the TLS listener
 * (tls.c). */
#include <string.h>

#include <glib.h>

#include "lograte.h"
#include "tls.h"

/* The messages logged since the last test_lines_clear. */
static GPtrArray *test_lines;

static GLogWriterOutput
test_writer(GLogLevelFlags level, const GLogField *fields, gsize n,
            gpointer data)
{
    for (gsize i = 0; i < n; i++) {
        if (strcmp(fields[i].key, "MESSAGE") == 0) {
            g_ptr_array_add(test_lines, g_strdup(fields[i].value));
        }
    }
    return G_LOG_WRITER_HANDLED;
}

static void
test_burst_folds(void)
{
    g_ptr_array_set_size(test_lines, 0);
    /* the first of a kind is logged by the caller */
    g_assert_true(lograte_note(G_LOG_LEVEL_WARNING, "backend h:1",
                               ": timed out", NULL, 2));
    /* the next ones of that kind are counted; another kind is not */
    for (int i = 0; i < 15; i++) {
        g_assert_false(lograte_note(G_LOG_LEVEL_WARNING, "backend h:1",
                                    ": timed out", NULL, 2));
    }
    g_assert_true(lograte_note(G_LOG_LEVEL_WARNING, "backend h:2",
                               ": timed out", NULL, 1));
    g_assert_true(lograte_note(G_LOG_LEVEL_WARNING, "backend h:1",
                               ": connection reset", NULL, 1));
    /* a period not over yet: nothing */
    lograte_flush(FALSE);
    g_assert_cmpuint(test_lines->len, ==, 0);
    /* one line for the kind that counted some, none for the others */
    lograte_flush(TRUE);
    g_assert_cmpuint(test_lines->len, ==, 1);
    g_assert_cmpstr(g_ptr_array_index(test_lines, 0), ==,
                    "backend h:1: 15 more connections in the last 10 s: "
                    "timed out (30 requests failed)");
    /* the burst goes on in a new period: still counted */
    g_assert_false(lograte_note(G_LOG_LEVEL_MESSAGE, "backend h:1",
                                ": timed out", "x", 0));
    lograte_flush(TRUE);
    g_assert_cmpuint(test_lines->len, ==, 2);
    g_assert_cmpstr(g_ptr_array_index(test_lines, 1), ==,
                    "backend h:1: 1 more connection in the last 10 s "
                    "(last x): timed out");
    /* a period that counted none ends the burst: logged in full again */
    lograte_flush(TRUE);
    g_assert_cmpuint(test_lines->len, ==, 2);
    g_assert_true(lograte_note(G_LOG_LEVEL_WARNING, "backend h:1",
                               ": timed out", NULL, 0));
    lograte_flush(TRUE);
    lograte_flush(TRUE);
}

/* Events that are not connections say what they count: slow calls. */
static void
test_burst_of_calls(void)
{
    g_ptr_array_set_size(test_lines, 0);
    g_assert_true(lograte_note_of(G_LOG_LEVEL_WARNING, "call", "slow call", "",
                                  "get of table t, bucket 1", 0));
    g_assert_false(lograte_note_of(G_LOG_LEVEL_WARNING, "call", "slow call",
                                   "", "get of table t, bucket 2", 0));
    g_assert_false(lograte_note_of(G_LOG_LEVEL_WARNING, "call", "slow call",
                                   "", "getRows of table t, buckets 0-7", 0));
    lograte_flush(TRUE);
    g_assert_cmpuint(test_lines->len, ==, 1);
    g_assert_cmpstr(g_ptr_array_index(test_lines, 0), ==,
                    "slow call: 2 more calls in the last 10 s (last getRows "
                    "of table t, buckets 0-7)");
    lograte_flush(TRUE);
}

static void
test_head(struct tls_head *h, const char *bytes)
{
    memcpy(h->b, bytes, 5);
    h->len = 5;
}

static void
test_plain_thrift_told_apart(void)
{
    static const struct {
        const char *head;
        gboolean thrift;
        wire_proto_t proto;
        gboolean framed;
    } cases[] = {
        { "\x16\x03\x01\x02\x00", FALSE, 0, FALSE }, /* ClientHello */
        { "\x80\x01\x00\x01\x00", TRUE, WIRE_BINARY, FALSE },
        { "\x82\x21\x00\x0dg", TRUE, WIRE_COMPACT, FALSE },
        { "\x00\x00\x00\x2a\x80", TRUE, WIRE_BINARY, TRUE },
        { "\x00\x00\x00\x2a\x82", TRUE, WIRE_COMPACT, TRUE },
        { "\x80\x02\x00\x01\x00", FALSE, 0, FALSE }, /* not version 1 */
        { "\x00\x00\x00\x0bg", FALSE, 0, FALSE },    /* non-strict */
        { "GET /", FALSE, 0, FALSE },
    };
    struct tls_head h = { { 0 }, 0 };
    wire_proto_t proto;
    gboolean framed;

    /* nothing read yet */
    g_assert_false(tls_head_is_thrift(&h, &proto, &framed));
    for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
        test_head(&h, cases[i].head);
        g_assert_cmpint(tls_head_is_thrift(&h, &proto, &framed), ==,
                        cases[i].thrift);
        if (cases[i].thrift) {
            g_assert_cmpint(proto, ==, cases[i].proto);
            g_assert_cmpint(framed, ==, cases[i].framed);
        }
    }
}

static void
test_plain_answer_reads_back(void)
{
    for (int proto = WIRE_BINARY; proto <= WIRE_COMPACT; proto++) {
        for (int framed = 0; framed <= 1; framed++) {
            struct wire_buf out;
            struct wire_reader r;
            struct wire_msg m;
            const uint8_t *p;
            uint32_t len;
            size_t skip = framed ? 4 : 0;
            uint8_t type;
            int16_t fid;

            wire_buf_init(&out);
            tls_plain_answer(proto, framed, &out);
            if (framed) {
                g_assert_cmpuint(out.len, >, 4);
                g_assert_cmpuint(((uint32_t)out.data[0] << 24 |
                                  (uint32_t)out.data[1] << 16 |
                                  (uint32_t)out.data[2] << 8 | out.data[3]),
                                 ==, out.len - 4);
            }
            wire_reader_init(&r, proto, out.data + skip, out.len - skip, TRUE,
                             &wire_default_limits);
            g_assert_cmpint(wire_read_msg_begin(&r, &m), ==, WIRE_OK);
            g_assert_cmpint(m.type, ==, WIRE_EXCEPTION);
            g_assert_cmpint(wire_read_struct_begin(&r), ==, WIRE_OK);
            g_assert_cmpint(wire_read_field(&r, &type, &fid), ==, WIRE_OK);
            g_assert_cmpint(fid, ==, 1);
            g_assert_cmpint(wire_read_binary(&r, &p, &len), ==, WIRE_OK);
            g_assert_nonnull(g_strstr_len((const char *)p, len,
                                          TLS_PLAIN_ADVICE));
            g_assert_cmpint(wire_read_field(&r, &type, &fid), ==, WIRE_OK);
            g_assert_cmpint(fid, ==, 2);
            g_assert_cmpint(wire_read_i32(&r), ==, WIRE_APP_PROTOCOL_ERROR);
            wire_buf_free(&out);
        }
    }
}

int
main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    /* lograte's lines are warnings, which g_test_init makes fatal */
    g_log_set_always_fatal(G_LOG_FATAL_MASK);
    test_lines = g_ptr_array_new_with_free_func(g_free);
    g_log_set_writer_func(test_writer, NULL, NULL);
    g_test_add_func("/lograte/burst-folds", test_burst_folds);
    g_test_add_func("/lograte/burst-of-calls", test_burst_of_calls);
    g_test_add_func("/tls/plain-thrift-told-apart",
                    test_plain_thrift_told_apart);
    g_test_add_func("/tls/plain-answer-reads-back",
                    test_plain_answer_reads_back);
    return g_test_run();
}
