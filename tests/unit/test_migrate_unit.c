/* test_migrate_unit.c: hbase-salt-migrate's work units (their text form,
 * shards, progress estimate) and its checkpoint file. */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <glib.h>
#include <glib/gstdio.h>

#include "analyze.h"
#include "ckpt.h"
#include "progress.h"
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
    static const char *const lines[] = { "source - -", "source - 00ff",
                                         "source 00ff -", "dest 41 42ff" };
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
        const char *bad[] = { "0/2", "3/2", "1/0", "1", "a/b", "1/2x" };

        g_assert_false(unit_parse_shard(bad[k], &i, &n, NULL));
    }
    for (guint count = 1; count <= 5; count++) {
        for (guint k = 0; k < 17; k++) {
            guint owners = 0;

            for (guint s = 1; s <= count; s++) {
                owners += unit_in_shard(k, s, count);
            }
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

    g_assert_cmpfloat_with_epsilon(unit_fraction(&u,
                                                 (const uint8_t *)"\x40\x00",
                                                 2),
                                   0, 1e-9);
    g_assert_cmpfloat_with_epsilon(unit_fraction(&u, (const uint8_t *)"\x60",
                                                 1),
                                   0.5, 1e-6);
    g_assert_cmpfloat_with_epsilon(unit_fraction(&u, (const uint8_t *)"\x90",
                                                 1),
                                   1, 1e-9);
    g_assert_cmpfloat_with_epsilon(unit_fraction(&open,
                                                 (const uint8_t *)"\xc0", 1),
                                   0.5, 1e-2);
    unit_clear(&u);
    unit_clear(&open);
}

/* n keys PREFIX000000, PREFIX000001..., as GBytes. */
static GPtrArray *
text_keys(const char *prefix, guint n)
{
    GPtrArray *keys =
        g_ptr_array_new_with_free_func((GDestroyNotify)g_bytes_unref);

    for (guint i = 0; i < n; i++) {
        char *k = g_strdup_printf("%s%06u", prefix, i);

        g_ptr_array_add(keys, g_bytes_new_take(k, strlen(k)));
    }
    return keys;
}

static GBytes *
key(const char *text)
{
    return g_bytes_new(text, strlen(text));
}

static void
add_rows(struct progress *p, guint unit, guint64 rows, const char *last,
         gboolean done)
{
    progress_slot_begin(p, 0, unit, "unit", 0, NULL);
    if (rows > 0) {
        progress_slot_add(p, 0, rows, rows * 10, (const uint8_t *)last,
                          strlen(last));
    }
    if (done) {
        progress_slot_end(p, 0, TRUE);
    }
}

/*
 * Test: progress by rows, not units.  Four units as hbase-emu splits a
 * table (at 40, 80, c0): 100 000 rows "000000".."099999" in the first
 * (10 %), 900 000 text keys "user000000".."user899999" in the second
 * (90 %), the last two empty.  The estimate of unit counts said 96 %
 * with the first three done and the second a ninth through ("units 3/4",
 * 'u' lying 0.83 through 40..80); the truth is 20 %.
 */
static void
test_progress_uneven_text_keys(void)
{
    static const char *const bounds[] = { "", "\x40", "\x80", "\xc0", "" };
    FILE *null = fopen("/dev/null", "w");
    struct progress *p = progress_new(1, 4, null, FALSE, 10, "copy");
    g_autoptr(GPtrArray) k0 = text_keys("", PROGRESS_SAMPLE_ROWS);
    g_autoptr(GPtrArray) k1 = text_keys("user", PROGRESS_SAMPLE_ROWS);
    g_autoptr(GPtrArray) none = text_keys("", 0);
    g_autoptr(GBytes) l0 = key("099999");
    g_autoptr(GBytes) l1 = key("user899999");
    double total, f;

    g_assert_nonnull(null);
    for (guint i = 0; i < 4; i++) {
        struct unit u = { UNIT_SOURCE, key(bounds[i]), key(bounds[i + 1]) };

        progress_unit_set(p, i, &u, FALSE, 0);
        unit_clear(&u);
    }
    progress_unit_sample(p, 0, k0, FALSE, l0);
    progress_unit_sample(p, 1, k1, FALSE, l1);
    progress_unit_sample(p, 2, none, TRUE, NULL);
    progress_unit_sample(p, 3, none, TRUE, NULL);

    /* the samples alone: about a million rows, none done */
    f = progress_fraction(p, &total);
    g_assert_cmpfloat(f, ==, 0);
    g_assert_cmpfloat(total, >, 0.9e6);
    g_assert_cmpfloat(total, <, 1.1e6);

    /* the empty units finish at once: no work done */
    add_rows(p, 2, 0, "", TRUE);
    add_rows(p, 3, 0, "", TRUE);
    g_assert_cmpfloat(progress_fraction(p, NULL), <, 0.001);

    /* just past the sample of the large unit: 1 000 of its rows */
    add_rows(p, 1, 1000, "user000999", FALSE);
    g_assert_cmpfloat_with_epsilon(progress_fraction(p, NULL), 0.001, 0.001);

    /* the small unit done, the large one a ninth through: 20 % */
    add_rows(p, 0, 100000, "099999", TRUE);
    add_rows(p, 1, 100000, "user099999", FALSE);
    f = progress_fraction(p, &total);
    g_assert_cmpfloat_with_epsilon(f, 0.2, 0.02);
    g_assert_cmpfloat_with_epsilon(total, 1e6, 0.05e6);

    /* two thirds of the large unit: 70 % */
    add_rows(p, 1, 600000, "user599999", FALSE);
    g_assert_cmpfloat_with_epsilon(progress_fraction(p, NULL), 0.7, 0.02);

    /* all of it */
    add_rows(p, 1, 900000, "user899999", TRUE);
    g_assert_cmpfloat_with_epsilon(progress_fraction(p, NULL), 1, 1e-9);
    progress_free(p);
    fclose(null);
}

/* Test: binary keys and a unit resumed from a checkpoint: rows done
 * before the run count as done, and the rest by where the resume point
 * lies. */
static void
test_progress_binary_resumed(void)
{
    FILE *null = fopen("/dev/null", "w");
    struct progress *p = progress_new(1, 2, null, FALSE, 10, "copy");
    g_autoptr(GPtrArray) k =
        g_ptr_array_new_with_free_func((GDestroyNotify)g_bytes_unref);
    g_autoptr(GBytes) last = NULL;
    g_autoptr(GBytes) after = NULL;
    uint8_t b[2];

    g_assert_nonnull(null);
    /* unit 0: 65 536 two-byte keys 0000..ffff; unit 1 done before: 1 000 */
    for (guint i = 0; i < 2; i++) {
        struct unit u = { UNIT_SOURCE, g_bytes_new(NULL, 0),
                          g_bytes_new(NULL, 0) };

        progress_unit_set(p, i, &u, FALSE, 0);
        unit_clear(&u);
    }
    for (guint i = 0; i < PROGRESS_SAMPLE_ROWS; i++) {
        b[0] = (uint8_t)(i >> 8);
        b[1] = (uint8_t)i;
        g_ptr_array_add(k, g_bytes_new(b, 2));
    }
    b[0] = b[1] = 0xff;
    last = g_bytes_new(b, 2);
    progress_unit_sample(p, 0, k, FALSE, last);
    progress_add_done(p, 1, 1000);
    /* resumed at 8000: half its rows done before this run */
    b[0] = 0x80;
    b[1] = 0x00;
    after = g_bytes_new(b, 2);
    progress_slot_begin(p, 0, 0, "unit", 32768, after);
    g_assert_cmpfloat_with_epsilon(progress_fraction(p, NULL),
                                   (32768.0 + 1000) / (65536 + 1000), 0.01);
    progress_free(p);
    fclose(null);
}

/* Test: a resumed run's lines count the rows done before it from the
 * first line on: none is printed before every unit is set, and a unit
 * resumed but not begun yet counts its earlier rows (CI saw "units 0/4,
 * rows 0" first under load: drawn before the units were known). */
static void
test_progress_lines_count_earlier_rows(void)
{
    FILE *out = tmpfile();
    struct progress *p = progress_new(1, 3, out, FALSE, 0.005, "copy");
    g_autofree char *text = NULL;
    g_auto(GStrv) lines = NULL;
    guint seen = 0;
    long size;

    g_assert_nonnull(out);
    progress_start(p);
    /* the thread ticks while the units are still unknown */
    g_usleep(40 * 1000);
    for (guint i = 0; i < 3; i++) {
        struct unit u = { UNIT_SOURCE, g_bytes_new(NULL, 0),
                          g_bytes_new(NULL, 0) };

        /* unit 0 done before, unit 1 half done and not begun, unit 2 new */
        progress_unit_set(p, i, &u, FALSE, i == 0 ? 30 : i == 1 ? 12 : 0);
        unit_clear(&u);
        g_usleep(10 * 1000);
    }
    progress_add_done(p, 0, 30);
    g_usleep(40 * 1000);
    progress_stop(p);
    progress_free(p);
    size = ftell(out);
    g_assert_cmpint(size, >, 0);
    text = g_malloc0((gsize)size + 1);
    rewind(out);
    g_assert_cmpuint(fread(text, 1, (size_t)size, out), ==, (gsize)size);
    fclose(out);
    lines = g_strsplit(text, "\n", -1);
    for (guint i = 0; lines[i] != NULL; i++) {
        const char *r = strstr(lines[i], ", rows ");

        if (r == NULL) {
            continue;
        }
        seen++;
        /* 30 done and 12 of the resumed unit's, whatever else */
        g_assert_cmpuint(g_ascii_strtoull(r + 7, NULL, 10), >=, 42);
    }
    /* periodic lines and the final one */
    g_assert_cmpuint(seen, >=, 2);
}

/* Test: a checkpoint reads back as written; a missing file is no
 * checkpoint; a damaged one is refused. */
static void
test_checkpoint(void)
{
    g_autofree char *dir = g_dir_make_tmp("hsm-ckpt-XXXXXX", NULL);
    g_autofree char *path = g_build_filename(dir, "ck", NULL);
    g_autofree char *tmp = g_strconcat(path, ".tmp", NULL);
    struct unit units[3] = { parse_ok("source - 40"), parse_ok("source 40 -"),
                             parse_ok("dest - -") };
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
        path,
        "# hbase-salt-migrate checkpoint v1\njob x\nunit source - - "
        "sideways rows=0 cells=0 bytes=0\n",
        -1, NULL));
    g_assert_false(ckpt_load(path, &back, &error));
    g_assert_nonnull(strstr(error->message, ":3: malformed"));
    g_clear_error(&error);
    g_assert_true(g_file_set_contents(path, "hello\n", -1, NULL));
    g_assert_false(ckpt_load(path, &back, &error));
    g_assert_nonnull(strstr(error->message, "not a hbase-salt-migrate"));
    ckpt_free(c);
    for (guint i = 0; i < 3; i++) {
        unit_clear(&units[i]);
    }
    g_unlink(path);
    g_rmdir(dir);
}

/* --analyze: the reservoir keeps a uniform sample, and the report finds
 * the celebrity's hash_part, predicts the spread, and proposes whole keys
 * when a group would keep 30 % in one bucket. */
static void
test_analyze(void)
{
    struct analyze_sample s;
    g_autoptr(GRand) r = g_rand_new_with_seed(3);
    g_autofree char *json = NULL;
    g_autofree char *text = NULL;
    guint celeb = 0, kept_celeb = 0;

    analyze_sample_init(&s, 4000);
    for (int i = 0; i < 40000; i++) {
        char key[32];

        if (g_rand_double(r) < 0.3) {
            snprintf(key, sizeof(key), "celeb#%d", i);
            celeb++;
        } else {
            snprintf(key, sizeof(key), "user%03d#%d",
                     g_rand_int_range(r, 0, 400), i);
        }
        analyze_sample_add(&s, (const uint8_t *)key, strlen(key));
    }
    g_assert_cmpuint(s.seen, ==, 40000);
    g_assert_cmpuint(s.keys->len, ==, 4000);
    for (guint i = 0; i < s.keys->len; i++) {
        gsize len;
        const char *k = g_bytes_get_data(s.keys->pdata[i], &len);

        kept_celeb += len > 5 && memcmp(k, "celeb", 5) == 0 ? 1 : 0;
    }
    /* a uniform sample: the share within a few standard deviations */
    g_assert_cmpfloat(fabs((double)kept_celeb / 4000 - celeb / 40000.0), <,
                      0.03);
    s.regions = s.regions_done = 1;
    s.complete = TRUE;
    json = analyze_report("ev", NULL, &s, TRUE);
    g_test_message("%s", json);
    g_assert_nonnull(strstr(json, "{\"hash_part\":\"delimiter:#:1\","));
    g_assert_nonnull(strstr(json, "\"largest_groups\":[{\"key\":\"celeb\""));
    g_assert_nonnull(strstr(json, "\"proposed\":{\"buckets\":16,"
                                  "\"hash_part\":\"whole\""));
    text = analyze_report("ev", NULL, &s, FALSE);
    g_assert_nonnull(strstr(text, "whole (4000 groups): one row each\n"));
    g_assert_nonnull(strstr(text, "[table:ev]\nbuckets = 16\n"));
    analyze_sample_clear(&s);
}

int
main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/migrate/unit/parse_format", test_parse_format);
    g_test_add_func("/migrate/unit/contains", test_contains);
    g_test_add_func("/migrate/unit/shard", test_shard);
    g_test_add_func("/migrate/unit/fraction", test_fraction);
    g_test_add_func("/migrate/progress/uneven_text_keys",
                    test_progress_uneven_text_keys);
    g_test_add_func("/migrate/progress/binary_resumed",
                    test_progress_binary_resumed);
    g_test_add_func("/migrate/progress/lines_count_earlier_rows",
                    test_progress_lines_count_earlier_rows);
    g_test_add_func("/migrate/checkpoint", test_checkpoint);
    g_test_add_func("/migrate/analyze", test_analyze);
    return g_test_run();
}
