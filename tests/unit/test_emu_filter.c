/* test_emu_filter.c: the emulator's filter evaluation against HBase semantics. */
#include <string.h>

#include "emu_filter.h"
#include "filter.h"

/*
 * A row is written "key|fam:qual@ts=value|...", cells already in HBase
 * order.  run() scans the rows in the order given and prints what the
 * scan returns: "key[fam:qual@ts=value,...]" per row, then "END" if the
 * filter ended the scan before the rows ran out.
 */
struct test_row {
    char *key;
    struct emu_cell *cells;
    size_t ncells;
    GPtrArray *strings;
};

static void
test_row_parse(struct test_row *r, const char *spec)
{
    g_auto(GStrv) parts = g_strsplit(spec, "|", -1);
    guint n = g_strv_length(parts);

    r->strings = g_ptr_array_new_with_free_func(g_free);
    r->key = g_strdup(parts[0]);
    r->ncells = n - 1;
    r->cells = g_new0(struct emu_cell, MAX(n, 1));
    for (guint i = 1; i < n; i++) {
        struct emu_cell *c = &r->cells[i - 1];
        char *colon = strchr(parts[i], ':');
        char *at = strchr(parts[i], '@');
        char *eq = strchr(parts[i], '=');
        char *fam = g_strndup(parts[i], (gsize)(colon - parts[i]));
        char *qual = g_strndup(colon + 1, (gsize)(at - colon - 1));
        char *val = g_strdup(eq + 1);

        g_assert_true(colon != NULL && at != NULL && eq != NULL);
        g_ptr_array_add(r->strings, fam);
        g_ptr_array_add(r->strings, qual);
        g_ptr_array_add(r->strings, val);
        c->family = (const uint8_t *)fam;
        c->family_len = strlen(fam);
        c->qualifier = (const uint8_t *)qual;
        c->qualifier_len = strlen(qual);
        c->timestamp = g_ascii_strtoll(at + 1, NULL, 10);
        c->value = (const uint8_t *)val;
        c->value_len = strlen(val);
    }
}

static void
test_row_clear(struct test_row *r)
{
    g_free(r->key);
    g_free(r->cells);
    g_ptr_array_unref(r->strings);
}

static void
append_bytes(GString *out, const uint8_t *p, size_t len)
{
    for (size_t i = 0; i < len; i++) {
        if (p[i] < 0x20 || p[i] >= 0x7f) {
            g_string_append_printf(out, "\\x%02x", p[i]);
        } else {
            g_string_append_c(out, (char)p[i]);
        }
    }
}

static char *
run(const char *filter, gboolean reversed, const char *const *rows)
{
    g_autoptr(GError) error = NULL;
    emu_filter *f = emu_filter_compile((const uint8_t *)filter, strlen(filter),
                                       reversed, &error);
    GString *out = g_string_new(NULL);
    gboolean ended = FALSE;

    if (f == NULL) {
        g_string_printf(out, "ERR:%s", error->message);
        return g_string_free(out, FALSE);
    }
    for (size_t i = 0; rows[i] != NULL && !ended; i++) {
        struct test_row r;
        gboolean keep[64];
        emu_filter_result res;

        test_row_parse(&r, rows[i]);
        g_assert_cmpuint(r.ncells, <=, G_N_ELEMENTS(keep));
        res = emu_filter_row(f, (const uint8_t *)r.key, strlen(r.key), r.cells,
                             r.ncells, keep);
        if (res == EMU_FILTER_INCLUDE) {
            gboolean first = TRUE;

            if (out->len > 0) {
                g_string_append_c(out, ' ');
            }
            g_string_append_printf(out, "%s[", r.key);
            for (size_t k = 0; k < r.ncells; k++) {
                const struct emu_cell *c = &r.cells[k];

                if (!keep[k]) {
                    continue;
                }
                if (!first) {
                    g_string_append_c(out, ',');
                }
                first = FALSE;
                append_bytes(out, c->family, c->family_len);
                g_string_append_c(out, ':');
                append_bytes(out, c->qualifier, c->qualifier_len);
                g_string_append_printf(out, "@%" G_GINT64_FORMAT "=",
                                       c->timestamp);
                append_bytes(out, c->value, c->value_len);
            }
            g_string_append_c(out, ']');
        }
        if (res == EMU_FILTER_DONE || emu_filter_all_remaining(f)) {
            ended = rows[i + 1] != NULL || res == EMU_FILTER_DONE;
            if (ended) {
                g_string_append(out, out->len > 0 ? " END" : "END");
            }
            ended = TRUE;
        }
        test_row_clear(&r);
    }
    emu_filter_free(f);
    return g_string_free(out, FALSE);
}

static const char *const rows[] = {
    "r1|f:a@1=1|f:b@1=2",
    "r2a|f:a@2=3|g:c@2=4",
    "r2b|f:b@3=0",
    "r3|f:a@4=1|f:a@3=9|f:c@4=x",
    NULL,
};

static const char *const rows_rev[] = {
    "r3|f:a@4=1", "r2b|f:b@3=0", "r2a|f:a@2=3", "r1|f:a@1=1", NULL,
};

static const char *const cols[] = {
    "c1|f:a@5=v1|f:a@3=v0|f:b1@5=v2|f:b2@5=v3|f:c@7=v4|g:a@5=v5|g:b9@5=v6",
    NULL,
};

/* A row past the limit ends the scan (the store saw DONE_SCAN). */
static const char *const cols2[] = {
    "c1|f:a@5=v1|f:a@3=v0|f:b1@5=v2|f:b2@5=v3|f:c@7=v4|g:a@5=v5|g:b9@5=v6",
    "c2|f:a@1=z",
    NULL,
};

struct test_case {
    const char *filter;
    gboolean reversed;
    const char *const *rows;
    const char *want;
};

static const struct test_case cases[] = {
    /* Row-key filters. */
    { "PrefixFilter('r2')", FALSE, rows,
      "r2a[f:a@2=3,g:c@2=4] r2b[f:b@3=0] END" },
    { "PrefixFilter('r2')", TRUE, rows_rev, "r2b[f:b@3=0] r2a[f:a@2=3] END" },
    { "PrefixFilter('')", FALSE, rows_rev + 3, "r1[f:a@1=1]" },
    { "InclusiveStopFilter('r2a')", FALSE, rows,
      "r1[f:a@1=1,f:b@1=2] r2a[f:a@2=3,g:c@2=4] END" },
    { "InclusiveStopFilter('r2b')", TRUE, rows_rev,
      "r3[f:a@4=1] r2b[f:b@3=0] END" },
    { "RowFilter(<, 'binary:r2')", FALSE, rows, "r1[f:a@1=1,f:b@1=2]" },
    { "RowFilter(<=, 'binary:r2a')", FALSE, rows,
      "r1[f:a@1=1,f:b@1=2] r2a[f:a@2=3,g:c@2=4]" },
    { "RowFilter(>, 'binary:r2b')", FALSE, rows_rev, "r3[f:a@4=1]" },
    { "RowFilter(>=, 'binary:r2b')", FALSE, rows_rev,
      "r3[f:a@4=1] r2b[f:b@3=0]" },
    { "RowFilter(!=, 'binary:r2b')", FALSE, rows_rev,
      "r3[f:a@4=1] r2a[f:a@2=3] r1[f:a@1=1]" },
    { "RowFilter(=, 'binaryprefix:r2')", FALSE, rows_rev,
      "r2b[f:b@3=0] r2a[f:a@2=3]" },
    { "RowFilter(>, 'binaryprefix:r2')", FALSE, rows_rev, "r3[f:a@4=1]" },
    { "RowFilter(=, 'regexstring:^r[13]$')", FALSE, rows_rev,
      "r3[f:a@4=1] r1[f:a@1=1]" },
    { "RowFilter(=, 'regexstring:2')", FALSE, rows_rev,
      "r2b[f:b@3=0] r2a[f:a@2=3]" },
    { "RowFilter(!=, 'regexstring:2')", FALSE, rows_rev,
      "r3[f:a@4=1] r1[f:a@1=1]" },
    { "RowFilter(=, 'substring:R2A')", FALSE, rows_rev, "r2a[f:a@2=3]" },
    { "RowFilter(!=, 'substring:r2')", FALSE, rows_rev,
      "r3[f:a@4=1] r1[f:a@1=1]" },
    /* Cell filters and families as stores. */
    { "FamilyFilter(=, 'binary:g')", FALSE, rows, "r2a[g:c@2=4]" },
    { "FamilyFilter(<, 'binary:g')", FALSE, rows_rev + 1,
      "r2b[f:b@3=0] r2a[f:a@2=3] r1[f:a@1=1]" },
    { "QualifierFilter(>, 'binary:a')", FALSE, rows,
      "r1[f:b@1=2] r2a[g:c@2=4] r2b[f:b@3=0] r3[f:c@4=x]" },
    { "ValueFilter(=, 'binary:1')", FALSE, rows, "r1[f:a@1=1] r3[f:a@4=1]" },
    { "ValueFilter(=, 'regexstring:[a-z]')", FALSE, rows, "r3[f:c@4=x]" },
    { "ValueFilter(!=, 'substring:X')", FALSE, rows + 3,
      "r3[f:a@4=1,f:a@3=9]" },
    { "KeyOnlyFilter()", FALSE, rows,
      "r1[f:a@1=,f:b@1=] r2a[f:a@2=,g:c@2=] "
      "r2b[f:b@3=] r3[f:a@4=,f:a@3=,f:c@4=]" },
    { "KeyOnlyFilter(true)", FALSE, rows + 2,
      "r2b[f:b@3=\\x00\\x00\\x00\\x01] "
      "r3[f:a@4=\\x00\\x00\\x00\\x01,f:a@3=\\x00\\x00\\x00\\x01,f:c@4=\\x00\\x00\\x00\\x01]" },
    { "FirstKeyOnlyFilter()", FALSE, rows,
      "r1[f:a@1=1] r2a[f:a@2=3] r2b[f:b@3=0] r3[f:a@4=1]" },
    { "PageFilter(2)", FALSE, rows,
      "r1[f:a@1=1,f:b@1=2] r2a[f:a@2=3,g:c@2=4] END" },
    { "PageFilter(0)", FALSE, rows, "END" },
    { "ColumnPrefixFilter('b')", FALSE, cols,
      "c1[f:b1@5=v2,f:b2@5=v3,g:b9@5=v6]" },
    { "MultipleColumnPrefixFilter('c', 'b2', 'a')", FALSE, cols,
      "c1[f:a@5=v1,f:a@3=v0,f:b2@5=v3,f:c@7=v4,g:a@5=v5]" },
    { "ColumnRangeFilter('a', false, 'b2', true)", FALSE, cols,
      "c1[f:b1@5=v2,f:b2@5=v3]" },
    { "ColumnRangeFilter('', true, 'b1', false)", FALSE, cols,
      "c1[f:a@5=v1,f:a@3=v0,g:a@5=v5]" },
    { "ColumnCountGetFilter(3)", FALSE, cols2,
      "c1[f:a@5=v1,f:b1@5=v2,f:b2@5=v3] END" },
    { "ColumnPaginationFilter(2, 1)", FALSE, cols, "c1[f:b1@5=v2,f:b2@5=v3]" },
    { "TimestampsFilter(3, 7)", FALSE, cols, "c1[f:a@3=v0,f:c@7=v4]" },
    /* Column-value filters. */
    { "SingleColumnValueFilter('f', 'a', =, 'binary:1')", FALSE, rows,
      "r1[f:a@1=1,f:b@1=2] r2b[f:b@3=0] r3[f:a@4=1,f:a@3=9,f:c@4=x]" },
    { "SingleColumnValueFilter('f', 'a', =, 'binary:1', true, true)", FALSE,
      rows, "r1[f:a@1=1,f:b@1=2] r3[f:a@4=1,f:a@3=9,f:c@4=x]" },
    { "SingleColumnValueFilter('f', 'a', =, 'binary:9', true, true)", FALSE,
      rows, "" },
    { "SingleColumnValueFilter('f', 'a', =, 'binary:9', true, false)", FALSE,
      rows, "r3[f:a@4=1,f:a@3=9,f:c@4=x]" },
    { "SingleColumnValueExcludeFilter('f', 'a', =, 'binary:1', true, true)",
      FALSE, rows, "r1[f:b@1=2] r3[f:c@4=x]" },
    { "DependentColumnFilter('f', 'a')", FALSE, rows + 3,
      "r3[f:a@4=1,f:a@3=9,f:c@4=x]" },
    { "DependentColumnFilter('f', 'a', true)", FALSE, rows,
      "r1[f:b@1=2] r2a[g:c@2=4] r3[f:c@4=x]" },
    { "DependentColumnFilter('f', 'a', false, =, 'binary:9')", FALSE, rows + 3,
      "r3[f:a@3=9]" },
    { "ColumnValueFilter('f', 'a', =, 'binary:1')", FALSE, rows,
      "r1[f:a@1=1] r3[f:a@4=1]" },
    /* Lists and wrappers. */
    { "PrefixFilter('r2') AND QualifierFilter(=, 'binary:a')", FALSE, rows,
      "r2a[f:a@2=3] END" },
    { "QualifierFilter(=, 'binary:c') OR ValueFilter(=, 'binary:2')", FALSE,
      rows, "r1[f:b@1=2] r2a[g:c@2=4] r3[f:c@4=x]" },
    { "RowFilter(=, 'binary:r1') OR RowFilter(=, 'binary:r3')", FALSE, rows,
      "r1[f:a@1=1,f:b@1=2] r3[f:a@4=1,f:a@3=9,f:c@4=x]" },
    { "ColumnPrefixFilter('a') OR ColumnPrefixFilter('c')", FALSE, cols,
      "c1[f:a@5=v1,f:a@3=v0,f:c@7=v4,g:a@5=v5]" },
    { "KeyOnlyFilter() AND ValueFilter(=, 'binary:3')", FALSE, rows,
      "r2a[f:a@2=]" },
    { "SKIP ValueFilter(!=, 'binary:0')", FALSE, rows,
      "r1[f:a@1=1,f:b@1=2] r2a[f:a@2=3,g:c@2=4] r3[f:a@4=1,f:a@3=9,f:c@4=x]" },
    { "WHILE RowFilter(<, 'binary:r2b')", FALSE, rows,
      "r1[f:a@1=1,f:b@1=2] r2a[f:a@2=3,g:c@2=4] END" },
    /* WHILE on a cell filter: cells before the failing one, then the end. */
    { "WHILE ValueFilter(!=, 'binary:2')", FALSE, rows, "r1[f:a@1=1] END" },
    { "WHILE PrefixFilter('r1')", FALSE, rows, "r1[f:a@1=1,f:b@1=2] END" },
    /* Errors read as HBase's. */
    { "Foo('a')", FALSE, rows, "ERR:Filter Name Foo not supported" },
    { "PrefixFilter('a') AND Foo()", FALSE, rows,
      "ERR:Filter Name Foo not supported" },
    { "RowFilter(=, 'bad:x')", FALSE, rows,
      "ERR:Incorrect filter string RowFilter(=, 'bad:x'): Incorrect comparatorType" },
    { "RowFilter(>, 'substring:x')", FALSE, rows,
      "ERR:Incorrect filter string" },
    { "RowFilter(=, 'regexstring:(')", FALSE, rows,
      "ERR:Incorrect filter string" },
    { "PrefixFilter('a'", FALSE, rows, "ERR:Incorrect Filter String" },
};

static void
test_cases(void)
{
    for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
        g_autofree char *got = run(cases[i].filter, cases[i].reversed,
                                   cases[i].rows);
        gboolean ok = g_str_has_prefix(cases[i].want, "ERR:")
                          ? g_str_has_prefix(got, cases[i].want)
                          : g_strcmp0(got, cases[i].want) == 0;

        if (!ok) {
            g_error("%s%s:\n got  %s\n want %s", cases[i].filter,
                    cases[i].reversed ? " (reversed)" : "", got,
                    cases[i].want);
        }
    }
}

/* Row keys with NUL and 0xFF bytes, as salted keys carry. */
static void
test_binary_rows(void)
{
    static const uint8_t filter[] = "RowFilter(=, 'binaryprefix:\x00\xff')";
    static const uint8_t regex[] = "RowFilter(=, 'regexstring:^\x00\xff.b')";
    static const uint8_t row1[] = { 0x00, 0xff, 'a', 'b' };
    static const uint8_t row2[] = { 0x00, 0xfe, 'a' };
    struct emu_cell cell = {
        .family = (const uint8_t *)"f",
        .family_len = 1,
        .qualifier = (const uint8_t *)"q",
        .qualifier_len = 1,
        .timestamp = 1,
        .value = (const uint8_t *)"v",
        .value_len = 1,
    };
    gboolean keep;
    emu_filter *f = emu_filter_compile(filter, sizeof(filter) - 1, FALSE,
                                       NULL);

    g_assert_nonnull(f);
    g_assert_cmpint(emu_filter_row(f, row1, sizeof(row1), &cell, 1, &keep), ==,
                    EMU_FILTER_INCLUDE);
    g_assert_true(keep);
    g_assert_cmpint(emu_filter_row(f, row2, sizeof(row2), &cell, 1, &keep), ==,
                    EMU_FILTER_SKIP);
    emu_filter_free(f);

    f = emu_filter_compile(regex, sizeof(regex) - 1, FALSE, NULL);
    g_assert_nonnull(f);
    g_assert_cmpint(emu_filter_row(f, row1, sizeof(row1), &cell, 1, &keep), ==,
                    EMU_FILTER_INCLUDE);
    g_assert_cmpint(emu_filter_row(f, row2, sizeof(row2), &cell, 1, &keep), ==,
                    EMU_FILTER_SKIP);
    emu_filter_free(f);
}

/* Once DONE, every later row is DONE too. */
static void
test_done_sticks(void)
{
    static const char text[] = "InclusiveStopFilter('b')";
    emu_filter *f = emu_filter_compile((const uint8_t *)text, strlen(text),
                                       FALSE, NULL);
    gboolean keep;

    g_assert_cmpint(emu_filter_row(f, (const uint8_t *)"c", 1, NULL, 0, &keep),
                    ==, EMU_FILTER_DONE);
    g_assert_true(emu_filter_all_remaining(f));
    g_assert_cmpint(emu_filter_row(f, (const uint8_t *)"a", 1, NULL, 0, &keep),
                    ==, EMU_FILTER_DONE);
    emu_filter_free(f);
}

int
main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/emu-filter/cases", test_cases);
    g_test_add_func("/emu-filter/binary-rows", test_binary_rows);
    g_test_add_func("/emu-filter/done-sticks", test_done_sticks);
    return g_test_run();
}
