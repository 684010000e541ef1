/* test_migrate_unit.c: hbase-salt-migrate's work units (their text form,
 * shards, progress estimate) and its checkpoint file. */
#include <string.h>
#include <unistd.h>

#include <glib.h>
#include <glib/gstdio.h>

#include "ckpt.h"
#include "unit.h"

static struct unit
parse_ok(const char *line)
{
    struct unit u;
    gboolean skip = TRUE;
    g_autoptr(GError) error = NULL;

    g_assert_true(unit_parse(line, &u, &skip, &error));
    g_assert_no_error(error);
    g_assert_false(skip);
    return u;
}

static void
refused(const char *line, const char *why)
{
    struct unit u;
    gboolean skip = TRUE;
    g_autoptr(GError) error = NULL;

    g_assert_false(unit_parse(line, &u, &skip, &error));
    g_assert_false(skip);
    g_assert_nonnull(error);
    g_assert_nonnull(strstr(error->message, why));
}

/* Test: a unit line reads back to the same text; hex either case, open
 * ends, spaces and tabs; comments and blank lines skipped. */
static void
test_parse_format(void)
{
    static const char *const lines[] = {"source - -", "source - 00ff",
                                        "source 00ff -", "dest 41 42ff"};
    struct unit u;
    gboolean skip = FALSE;

    for (guint i = 0; i < G_N_ELEMENTS(lines); i++) {
        struct unit v = parse_ok(lines[i]);
        g_autofree char *text = unit_format(&v);

        g_assert_cmpstr(text, ==, lines[i]);
        unit_clear(&v);
    }
    u = parse_ok("  dest\tAB   cD0e\r\n");
    {
        g_autofree char *text = unit_format(&u);

        g_assert_cmpstr(text, ==, "dest ab cd0e");
    }
    g_assert_cmpint(u.side, ==, UNIT_DEST);
    unit_clear(&u);
    g_assert_false(unit_parse("# a comment", &u, &skip, NULL));
    g_assert_true(skip);
    g_assert_false(unit_parse("   ", &u, &skip, NULL));
    g_assert_true(skip);
    refused("source -", "got 2 fields");
    refused("source - - x", "got 4 fields");
    refused("sauce - -", "neither source nor dest");
    refused("source 0 -", "hex");
    refused("source 0g -", "hex");
    refused("source 42 41", "not before");
    refused("source 42 42", "not before");
}

/* Test: a unit holds [start, end), an open end holds everything. */
static void
test_contains(void)
{
    struct unit u = parse_ok("source 40 80");
    struct unit all = parse_ok("source - -");

    g_assert_true(unit_contains(&u, (const uint8_t *)"@", 1));
    g_assert_true(unit_contains(&u, (const uint8_t *)"\x7f\xff", 2));
    g_assert_false(unit_contains(&u, (const uint8_t *)"\x80", 1));
    g_assert_false(unit_contains(&u, (const uint8_t *)"?\xff", 2));
    g_assert_true(unit_contains(&all, (const uint8_t *)"", 0));
    g_assert_true(unit_contains(&all, (const uint8_t *)"\xff\xff", 2));
    unit_clear(&u);
    unit_clear(&all);
}

/* Test: shards split any list into disjoint parts that cover it. */
static void
test_shard(void)
{
    guint i, n;
    g_autoptr(GError) error = NULL;

    g_assert_true(unit_parse_shard("2/4", &i, &n, &error));
    g_assert_cmpuint(i, ==, 2);
    g_assert_cmpuint(n, ==, 4);
    for (guint k = 0; k < 4; k++) {
        const char *bad[] = {"0/2", "3/2", "1/0", "1", "a/b", "1/2x"};

        g_assert_false(unit_parse_shard(bad[k], &i, &n, NULL));
    }
    for (guint count = 1; count <= 5; count++) {
        for (guint k = 0; k < 17; k++) {
            guint owners = 0;

            for (guint s = 1; s <= count; s++)
                owners += unit_in_shard(k, s, count);
            g_assert_cmpuint(owners, ==, 1);
        }
    }
}

/* Test: the progress estimate runs 0..1 through a range. */
static void
test_fraction(void)
{
    struct unit u = parse_ok("source 4000 8000");
    struct unit open = parse_ok("source 80 -");

    g_assert_cmpfloat_with_epsilon(
        unit_fraction(&u, (const uint8_t *)"\x40\x00", 2), 0, 1e-9);
    g_assert_cmpfloat_with_epsilon(
        unit_fraction(&u, (const uint8_t *)"\x60", 1), 0.5, 1e-6);
    g_assert_cmpfloat_with_epsilon(
        unit_fraction(&u, (const uint8_t *)"\x90", 1), 1, 1e-9);
    g_assert_cmpfloat_with_epsilon(
        unit_fraction(&open, (const uint8_t *)"\xc0", 1), 0.5, 1e-2);
    unit_clear(&u);
    unit_clear(&open);
}

/* Test: a checkpoint reads back as written; a missing file is no
 * checkpoint; a damaged one is refused. */
static void
test_checkpoint(void)
{
    g_autofree char *dir = g_dir_make_tmp("hsm-ckpt-XXXXXX", NULL);
    g_autofree char *path = g_build_filename(dir, "ck", NULL);
    g_autofree char *tmp = g_strconcat(path, ".tmp", NULL);
    struct unit units[3] = {parse_ok("source - 40"), parse_ok("source 40 -"),
                            parse_ok("dest - -")};
    struct ckpt *c = ckpt_new(path, "from a to b versions=all", units, 3);
    struct ckpt *back = NULL;
    struct ckpt_entry *e;
    g_autoptr(GError) error = NULL;

    g_assert_true(ckpt_load(path, &back, &error));
    g_assert_null(back);
    e = c->entries->pdata[0];
    e->after = g_bytes_new("\x00\xff", 2);
    e->rows = 7;
    e->cells = 9;
    e->bytes = 100;
    e = c->entries->pdata[1];
    e->done = TRUE;
    e->rows = 3;
    g_assert_true(ckpt_save(c, &error));
    g_assert_no_error(error);
    g_assert_false(g_file_test(tmp, G_FILE_TEST_EXISTS));
    g_assert_true(ckpt_load(path, &back, &error));
    g_assert_no_error(error);
    g_assert_nonnull(back);
    g_assert_cmpstr(back->job, ==, "from a to b versions=all");
    g_assert_cmpuint(back->entries->len, ==, 3);
    for (guint i = 0; i < 3; i++) {
        struct ckpt_entry *a = c->entries->pdata[i];
        struct ckpt_entry *b = ckpt_find(back, &units[i]);
        g_autofree char *sa = ckpt_entry_state(a);
        g_autofree char *sb = NULL;

        g_assert_nonnull(b);
        sb = ckpt_entry_state(b);
        g_assert_cmpstr(sa, ==, sb);
    }
    {
        struct ckpt_entry *b = back->entries->pdata[0];
        g_autofree char *s = ckpt_entry_state(b);

        g_assert_cmpstr(s, ==, "after=00ff rows=7 cells=9 bytes=100");
    }
    ckpt_free(back);
    back = NULL;
    g_assert_true(g_file_set_contents(
        path, "# hbase-salt-migrate checkpoint v1\njob x\nunit source - - "
              "sideways rows=0 cells=0 bytes=0\n",
        -1, NULL));
    g_assert_false(ckpt_load(path, &back, &error));
    g_assert_nonnull(strstr(error->message, ":3: malformed"));
    g_clear_error(&error);
    g_assert_true(g_file_set_contents(path, "hello\n", -1, NULL));
    g_assert_false(ckpt_load(path, &back, &error));
    g_assert_nonnull(strstr(error->message, "not a hbase-salt-migrate"));
    ckpt_free(c);
    for (guint i = 0; i < 3; i++)
        unit_clear(&units[i]);
    g_unlink(path);
    g_rmdir(dir);
}

int
main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/migrate/unit/parse_format", test_parse_format);
    g_test_add_func("/migrate/unit/contains", test_contains);
    g_test_add_func("/migrate/unit/shard", test_shard);
    g_test_add_func("/migrate/unit/fraction", test_fraction);
    g_test_add_func("/migrate/checkpoint", test_checkpoint);
    return g_test_run();
}
