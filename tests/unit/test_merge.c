/* test_merge.c: the heap of bucket heads orders rows as HBase does. */
#include <string.h>

#include "merge.h"

/* One input: its rows' keys, NULL-terminated, in the scan's order. */
struct input {
    const char *const *keys;
    unsigned at; /* next row */
};

/*
 * Merges inputs as the scan engine does (push every head, then take the
 * top and move it on or drop it) and returns "input:key" of every row
 * taken, space-separated.
 */
static char *
run(struct input *in, unsigned n, gboolean reversed)
{
    struct merge m;
    GString *out = g_string_new(NULL);

    merge_init(&m, n, reversed);
    for (unsigned i = 0; i < n; i++) {
        const char *k = in[i].keys[0];

        if (k != NULL) {
            in[i].at = 1;
            merge_push(&m, i, (const uint8_t *)k, strlen(k));
        }
    }
    while (!merge_empty(&m)) {
        unsigned top = merge_top(&m);
        struct input *t = &in[top];
        const struct merge_key *key = merge_top_key(&m);
        const char *next = t->keys[t->at];

        g_string_append_printf(out, "%s%u:%.*s", out->len > 0 ? " " : "", top,
                               (int)key->len, (const char *)key->data);
        if (next != NULL) {
            t->at++;
            merge_top_next(&m, (const uint8_t *)next, strlen(next));
        } else {
            merge_pop(&m);
        }
    }
    merge_clear(&m);
    return g_string_free(out, FALSE);
}

/* Test: keys compare as unsigned bytes, a prefix before what extends it */
static void
test_key_cmp(void)
{
    g_assert_cmpint(merge_key_cmp(NULL, 0, NULL, 0), ==, 0);
    g_assert_cmpint(merge_key_cmp(NULL, 0, (const uint8_t *)"a", 1), <, 0);
    g_assert_cmpint(merge_key_cmp((const uint8_t *)"a", 1,
                                  (const uint8_t *)"a\0", 2),
                    <, 0);
    g_assert_cmpint(merge_key_cmp((const uint8_t *)"ab", 2,
                                  (const uint8_t *)"a", 1),
                    >, 0);
    g_assert_cmpint(merge_key_cmp((const uint8_t *)"\x80", 1,
                                  (const uint8_t *)"\x7f", 1),
                    >, 0);
    g_assert_cmpint(merge_key_cmp((const uint8_t *)"\xff", 1,
                                  (const uint8_t *)"\x00\xff", 2),
                    >, 0);
    g_assert_cmpint(merge_key_cmp((const uint8_t *)"k1", 2,
                                  (const uint8_t *)"k1", 2),
                    ==, 0);
}

/* Test: forward, the smallest head leaves first over all inputs */
static void
test_forward(void)
{
    static const char *const a[] = { "a", "d", "g", NULL };
    static const char *const b[] = { "b", "e", NULL };
    static const char *const c[] = { "c", "f", "h", "i", NULL };
    static const char *const none[] = { NULL };
    struct input in[] = { { a, 0 }, { b, 0 }, { none, 0 }, { c, 0 } };
    g_autofree char *got = run(in, G_N_ELEMENTS(in), FALSE);

    g_assert_cmpstr(got, ==, "0:a 1:b 3:c 0:d 1:e 3:f 0:g 3:h 3:i");
}

/* Test: reversed, the largest head leaves first */
static void
test_reversed(void)
{
    static const char *const a[] = { "z", "m", "a", NULL };
    static const char *const b[] = { "y", "n", "b", NULL };
    static const char *const c[] = { "zz", NULL };
    struct input in[] = { { a, 0 }, { b, 0 }, { c, 0 } };
    g_autofree char *got = run(in, G_N_ELEMENTS(in), TRUE);

    g_assert_cmpstr(got, ==, "2:zz 0:z 1:y 1:n 0:m 1:b 0:a");
}

/* Test: a key leaves before every longer key it prefixes, and bytes are
 * unsigned (reversed: the other way round) */
static void
test_shorter_first(void)
{
    static const char *const a[] = { "k", "k\x01", "\x80", NULL };
    static const char *const b[] = { "", "ka", NULL };
    static const char *const ra[] = { "\x80", "k\x01", "k", NULL };
    static const char *const rb[] = { "ka", "", NULL };
    struct input in[] = { { a, 0 }, { b, 0 } };
    struct input rin[] = { { ra, 0 }, { rb, 0 } };
    g_autofree char *got = run(in, G_N_ELEMENTS(in), FALSE);
    g_autofree char *rgot = run(rin, G_N_ELEMENTS(rin), TRUE);

    g_assert_cmpstr(got, ==, "1: 0:k 0:k\x01 1:ka 0:\x80");
    g_assert_cmpstr(rgot, ==, "0:\x80 1:ka 0:k\x01 0:k 1:");
}

/* Test: the partial rows of one row (batchSize) leave one after another,
 * even when another input's head has the same key */
static void
test_partial_rows(void)
{
    static const char *const a[] = { "a", "k", "k", "k", "z", NULL };
    static const char *const b[] = { "k", "m", NULL };
    static const char *const c[] = { "b", "k", "k", "n", NULL };
    struct input in[] = { { a, 0 }, { b, 0 }, { c, 0 } };
    g_autofree char *got = run(in, G_N_ELEMENTS(in), FALSE);
    g_auto(GStrv) rows = g_strsplit(got, " ", -1);
    int last = -1;
    unsigned runs_a = 0, runs_c = 0;

    /* every k of one input in one run; the order between inputs with the
     * same key is the heap's, and does not matter */
    for (guint i = 0; rows[i] != NULL; i++) {
        int input = rows[i][0] - '0';

        if (strcmp(rows[i] + 2, "k") == 0 && input != last) {
            runs_a += input == 0;
            runs_c += input == 2;
        }
        last = strcmp(rows[i] + 2, "k") == 0 ? input : -1;
    }
    g_assert_cmpuint(runs_a, ==, 1);
    g_assert_cmpuint(runs_c, ==, 1);
    g_assert_true(g_str_has_prefix(got, "0:a 2:b "));
    g_assert_true(g_str_has_suffix(got, " 1:m 2:n 0:z"));
    g_assert_cmpuint(g_strv_length(rows), ==, 11);
}

/* Test: a top whose next row has the same key as another head stays on
 * top: the tree moves it only for a strictly smaller key; which input
 * comes next among equal keys is the tree's, and does not matter */
static void
test_equal_keys_keep_top(void)
{
    static const char *const a[] = { "k", "k", "k", NULL };
    static const char *const b[] = { "k", NULL };
    static const char *const c[] = { "k", "k", NULL };
    struct input in[] = { { a, 0 }, { b, 0 }, { c, 0 } };
    g_autofree char *got = run(in, G_N_ELEMENTS(in), FALSE);

    g_assert_true(g_str_has_prefix(got, "0:k 0:k 0:k "));
    g_assert_true(strstr(got, "2:k 2:k") != NULL);
    g_assert_cmpuint(strlen(got), ==, strlen("0:k 0:k 0:k 2:k 2:k 1:k"));
}

int
main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/merge/key-cmp", test_key_cmp);
    g_test_add_func("/merge/forward", test_forward);
    g_test_add_func("/merge/reversed", test_reversed);
    g_test_add_func("/merge/shorter-first", test_shorter_first);
    g_test_add_func("/merge/partial-rows", test_partial_rows);
    g_test_add_func("/merge/equal-keys-keep-top", test_equal_keys_keep_top);
    return g_test_run();
}
