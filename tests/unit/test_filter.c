/* test_filter.c: the filter-language parser, checks and serializer. */
#include <string.h>

#include "filter.h"

static struct filter_node *
parse(const char *s, guint flags, GError **error)
{
    return filter_parse((const uint8_t *)s, strlen(s), flags, error);
}

/* A compact picture of a tree: OR(AND(A,B),C), leaves by name. */
static void
shape_into(GString *out, const struct filter_node *n)
{
    static const char *const kinds[] = { "", "AND", "OR", "SKIP", "WHILE" };

    if (n->kind == FILTER_NODE_LEAF) {
        g_string_append_len(out, (const char *)n->name, (gssize)n->name_len);
        return;
    }
    g_string_append_printf(out, "%s(", kinds[n->kind]);
    for (guint i = 0; i < n->nchildren; i++) {
        if (i > 0) {
            g_string_append_c(out, ',');
        }
        shape_into(out, n->children[i]);
    }
    g_string_append_c(out, ')');
}

static char *
shape(const char *s)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(filter_node) n = parse(s, FILTER_PARSE_DEFAULT, &error);
    GString *out = g_string_new(NULL);

    if (n == NULL) {
        g_string_append_printf(out, "ERR:%s", error->message);
        return g_string_free(out, FALSE);
    }
    shape_into(out, n);
    return g_string_free(out, FALSE);
}

static char *
canon(const char *s)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(filter_node) n = parse(s, FILTER_PARSE_DEFAULT, &error);
    uint8_t *out;

    g_assert_no_error(error);
    out = filter_serialize(n, NULL, &error);
    g_assert_no_error(error);
    return (char *)out;
}

static void
test_leaf(void)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(filter_node) n = parse("PrefixFilter('abc')",
                                     FILTER_PARSE_STRICT, &error);
    struct filter_params p;

    g_assert_no_error(error);
    g_assert_cmpint(n->kind, ==, FILTER_NODE_LEAF);
    g_assert_cmpint(n->type, ==, FILTER_TYPE_PREFIX);
    g_assert_cmpuint(n->nargs, ==, 1);
    g_assert_cmpint(n->args[0].kind, ==, FILTER_ARG_QUOTED);
    g_assert_cmpmem(n->args[0].data, n->args[0].len, "abc", 3);
    g_assert_true(filter_leaf_params(n, &p, &error));
    g_assert_cmpmem(p.bytes.data, p.bytes.len, "abc", 3);
    g_assert_true(filter_node_reads_row(n));
}

static void
test_quoting(void)
{
    static const uint8_t raw[] = "PrefixFilter('it''s\0\xff''')";
    g_autoptr(GError) error = NULL;
    g_autoptr(filter_node) n = filter_parse(raw, sizeof(raw) - 1, 0, &error);
    g_autofree uint8_t *out = NULL;
    size_t len;

    g_assert_no_error(error);
    g_assert_cmpmem(n->args[0].data, n->args[0].len, "it's\0\xff'", 7);
    out = filter_serialize(n, &len, &error);
    g_assert_no_error(error);
    g_assert_cmpmem(out, len, raw, sizeof(raw) - 1);

    /* Empty string, and a string of quotes only. */
    g_clear_pointer(&n, filter_node_free);
    n = parse("MultipleColumnPrefixFilter('', '''', '''''')", 0, &error);
    g_assert_no_error(error);
    g_assert_cmpuint(n->nargs, ==, 3);
    g_assert_cmpuint(n->args[0].len, ==, 0);
    g_assert_cmpmem(n->args[1].data, n->args[1].len, "'", 1);
    g_assert_cmpmem(n->args[2].data, n->args[2].len, "''", 2);

    /* Parentheses inside quotes do not end the expression. */
    g_clear_pointer(&n, filter_node_free);
    n = parse("PrefixFilter('a)b(')", 0, &error);
    g_assert_no_error(error);
    g_assert_cmpmem(n->args[0].data, n->args[0].len, "a)b(", 4);
}

static void
test_tokens(void)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(filter_node) n = NULL;
    struct filter_params p;

    n = parse(
        "SingleColumnValueFilter ( 'f','q' , >=,'binaryprefix:v:w', TRUE, fAlSe)",
        FILTER_PARSE_STRICT, &error);
    g_assert_no_error(error);
    g_assert_true(filter_leaf_params(n, &p, &error));
    g_assert_cmpint(p.op, ==, FILTER_OP_GREATER_OR_EQUAL);
    g_assert_cmpint(p.cmp.type, ==, FILTER_CMP_BINARY_PREFIX);
    g_assert_cmpmem(p.cmp.value, p.cmp.len, "v:w", 3); /* first ':' only */
    g_assert_true(p.filter_if_missing);
    g_assert_false(p.latest_version_only);

    g_clear_pointer(&n, filter_node_free);
    n = parse("ColumnPaginationFilter(10, 0)", FILTER_PARSE_STRICT, &error);
    g_assert_no_error(error);
    g_assert_true(filter_leaf_params(n, &p, &error));
    g_assert_cmpint(p.limit, ==, 10);

    g_clear_pointer(&n, filter_node_free);
    n = parse("TimestampsFilter(9223372036854775807, 0)", FILTER_PARSE_STRICT,
              &error);
    g_assert_no_error(error);

    /* Every operator spelling. */
    for (int op = FILTER_OP_LESS; op <= FILTER_OP_GREATER; op++) {
        g_autofree char *s = g_strdup_printf("ValueFilter(%s, 'binary:x')",
                                             filter_op_symbol(op));

        g_clear_pointer(&n, filter_node_free);
        n = parse(s, FILTER_PARSE_STRICT, &error);
        g_assert_no_error(error);
        g_assert_true(filter_leaf_params(n, &p, &error));
        g_assert_cmpint(p.op, ==, op);
    }
}

static void
test_precedence(void)
{
    static const struct {
        const char *in;
        const char *shape;
    } cases[] = {
        { "A()", "A" },
        { "A() AND B() OR C()", "OR(AND(A,B),C)" },
        { "A() OR B() AND C()", "OR(A,AND(B,C))" },
        { "A() AND B() AND C()", "AND(A,B,C)" },
        { "A() OR B() OR C() AND D()", "OR(A,B,AND(C,D))" },
        { "SKIP A() AND B()", "AND(SKIP(A),B)" },
        { "A() AND SKIP B()", "AND(A,SKIP(B))" },
        { "WHILE A() OR B()", "OR(WHILE(A),B)" },
        { "SKIP SKIP A()", "SKIP(SKIP(A))" },
        { "SKIP WHILE A()", "SKIP(WHILE(A))" },
        { "(A() OR B()) AND C()", "AND(OR(A,B),C)" },
        { "A() AND (B() OR C())", "AND(A,OR(B,C))" },
        { "SKIP (A() OR B())", "SKIP(OR(A,B))" },
        { "(SKIP A())", "SKIP(A)" },
        { "((A() AND B()))", "AND(A,B)" },
        { "A()AND B()", "AND(A,B)" },
        { "\t A()  OR\tB()", "ERR:Incorrect Filter String" },
        { "A() OR(B())", "OR(A,B)" },
        { "SKIP(A())", "SKIP(A)" },
        /* ParseFilter quirks, reproduced on purpose. */
        { "(A() OR B() AND C())", "ERR:Mismatched parenthesis" },
        { "(A()) AND (B()) OR C()", "AND(A,OR(B,C))" },
        { "(A()", "A" },
        { "A() AND (B() OR SKIP C())", "ERR:Incorrect Filter String" },
        { "(SKIP SKIP A())", "ERR:Mismatched parenthesis" },
        { "A() ANDB()", "ERR:Incorrect Filter String" },
        { "AND()", "AND" },
        { "ORDER()", "ORDER" },
        { "A() B()", "ERR:Incorrect Filter String" },
        { "A() AND",
          "ERR:Incorrect Filter String" }, /* no space after: a name */
        { "A() AND ",
          "ERR:Incorrect input string - an AND needs two filters" },
        { "A() OR ", "ERR:Incorrect input string - an OR needs two filters" },
        { "OR A()", "OR" }, /* no keyword at the start: a filter named OR */
        { "SKIP", "ERR:Incorrect Filter String" },
        { "A() SKIP", "ERR:Incorrect Filter String" },
        { "SKIP ", "ERR:Incorrect input string - a SKIP wraps a filter" },
        { "WHILE ()", "ERR:Incorrect Filter String" },
        { "WHILE ", "ERR:Incorrect input string - a WHILE wraps a filter" },
        { ")", "ERR:Mismatched parenthesis" },
        { "A())", "ERR:Mismatched parenthesis" },
        { "", "ERR:Incorrect Filter String" },
        { "   ", "ERR:Incorrect Filter String" },
        { "PrefixFilter('a'", "ERR:Incorrect Filter String" },
        { "PrefixFilter", "ERR:Incorrect Filter String" },
        { "Prefix)", "ERR:Incorrect Filter Name" },
        { "Prefix x)", "ERR:Incorrect argument list" },
    };

    for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
        g_autofree char *got = shape(cases[i].in);

        if (g_strcmp0(got, cases[i].shape) != 0) {
            g_error("'%s': got %s, want %s", cases[i].in, got, cases[i].shape);
        }
    }
}

static void
test_errors(void)
{
    static const struct {
        const char *in;
        int code;
        const char *msg;
    } cases[] = {
        { "Foo('a')", FILTER_ERROR_UNKNOWN_FILTER,
          "Filter Name Foo not supported" },
        { "prefixfilter('a')", FILTER_ERROR_UNKNOWN_FILTER, "not supported" },
        { "TimeStampsFilter(1)", FILTER_ERROR_UNKNOWN_FILTER,
          "not supported" },
        { "RowFilter(=, 'foo:bar')", FILTER_ERROR_ARGUMENTS,
          "Incorrect comparatorType" },
        { "RowFilter(=, 'Binary:bar')", FILTER_ERROR_ARGUMENTS,
          "Incorrect comparatorType" },
        { "RowFilter(=, 'nocolon')", FILTER_ERROR_ARGUMENTS,
          "Incorrect comparator" },
        { "RowFilter(<, 'regexstring:a')", FILTER_ERROR_ARGUMENTS,
          "EQUAL and NOT_EQUAL" },
        { "ValueFilter(>=, 'substring:a')", FILTER_ERROR_ARGUMENTS,
          "EQUAL and NOT_EQUAL" },
        { "RowFilter(==, 'binary:a')", FILTER_ERROR_ARGUMENTS,
          "Invalid compare operator" },
        { "RowFilter('=', 'binary:a')", FILTER_ERROR_ARGUMENTS,
          "Invalid compare operator" },
        { "RowFilter(=)", FILTER_ERROR_ARGUMENTS, "Expected 2 but got: 1" },
        { "RowFilter(=, binary:a)", FILTER_ERROR_ARGUMENTS, "quoted" },
        { "PrefixFilter()", FILTER_ERROR_ARGUMENTS, "Expected 1" },
        { "PrefixFilter(abc)", FILTER_ERROR_ARGUMENTS, "quoted" },
        { "KeyOnlyFilter(yes)", FILTER_ERROR_ARGUMENTS,
          "Incorrect Boolean Expression" },
        { "KeyOnlyFilter('true')", FILTER_ERROR_ARGUMENTS,
          "Incorrect Boolean Expression" },
        /* Tabs separate tokens but not arguments, as in ParseFilter. */
        { "KeyOnlyFilter(\ttrue)", FILTER_ERROR_ARGUMENTS,
          "Incorrect Boolean Expression" },
        { "FirstKeyOnlyFilter(1)", FILTER_ERROR_ARGUMENTS, "Expected 0" },
        { "PageFilter(-1)", FILTER_ERROR_ARGUMENTS, "must be positive" },
        { "PageFilter(12a)", FILTER_ERROR_ARGUMENTS, "only contain digits" },
        { "PageFilter(9223372036854775808)", FILTER_ERROR_ARGUMENTS,
          "greater than" },
        { "ColumnCountGetFilter(2147483648)", FILTER_ERROR_ARGUMENTS,
          "greater than" },
        { "ColumnPaginationFilter(1)", FILTER_ERROR_ARGUMENTS, "Expected 2" },
        { "SingleColumnValueFilter('f', 'q', =, 'binary:v', true)",
          FILTER_ERROR_ARGUMENTS, "Expected 4 or 6 but got: 5" },
        { "DependentColumnFilter('f', 'q', true, =)", FILTER_ERROR_ARGUMENTS,
          "Expected 2, 3 or 5" },
        { "ColumnValueFilter('f', 'q', =)", FILTER_ERROR_ARGUMENTS,
          "Expected 4" },
        { "MultipleColumnPrefixFilter('a', 'a')", FILTER_ERROR_ARGUMENTS,
          "distinct" },
        { "ColumnRangeFilter('a', true, 'b')", FILTER_ERROR_ARGUMENTS,
          "Expected 4" },
        { "Mismatch(", FILTER_ERROR_SYNTAX, "Incorrect Filter String" },
        /* HBase reports the first failing leaf, left to right. */
        { "Foo() AND (", FILTER_ERROR_UNKNOWN_FILTER,
          "Filter Name Foo not supported" },
        { "PrefixFilter('a') OR Bar(1)", FILTER_ERROR_UNKNOWN_FILTER, "Bar" },
    };

    for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
        g_autoptr(GError) error = NULL;
        g_autoptr(filter_node) n = parse(cases[i].in, FILTER_PARSE_STRICT,
                                         &error);

        g_assert_null(n);
        if (!g_error_matches(error, FILTER_ERROR, cases[i].code) ||
            strstr(error->message, cases[i].msg) == NULL) {
            g_error("'%s': got %d '%s', want %d '%s'", cases[i].in,
                    error->code, error->message, cases[i].code, cases[i].msg);
        }
    }
}

/* Unknown names parse; validation tells them apart from bad syntax. */
static void
test_layers(void)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(filter_node) n =
        parse("Custom('x', 1) AND RowFilter(=, 'bogus:x')",
              FILTER_PARSE_DEFAULT, &error);

    g_assert_no_error(error);
    g_assert_cmpint(n->children[0]->type, ==, FILTER_TYPE_UNKNOWN);
    g_assert_false(filter_validate(n, &error));
    g_assert_error(error, FILTER_ERROR, FILTER_ERROR_UNKNOWN_FILTER);
    g_assert_cmpstr(error->message, ==, "Filter Name Custom not supported");
    g_clear_error(&error);
    g_assert_false(filter_validate(n->children[1], &error));
    g_assert_error(error, FILTER_ERROR, FILTER_ERROR_ARGUMENTS);
    g_assert_cmpstr(error->message, ==,
                    "Incorrect filter string RowFilter(=, 'bogus:x'): "
                    "Incorrect comparatorType");
    g_clear_error(&error);

    g_clear_pointer(&n, filter_node_free);
    n = parse("Custom('x'", FILTER_PARSE_DEFAULT, &error);
    g_assert_null(n);
    g_assert_error(error, FILTER_ERROR, FILTER_ERROR_SYNTAX);
}

static void
test_roundtrip(void)
{
    static const struct {
        const char *in;
        const char *out;
    } cases[] = {
        { "PrefixFilter ('a')", "PrefixFilter('a')" },
        { "KeyOnlyFilter ( )", "KeyOnlyFilter()" },
        { "A() AND B() OR C()", "(A() AND B()) OR C()" },
        { "A() OR B() AND C()", "A() OR (B() AND C())" },
        { "SKIP A() AND B()", "(SKIP A()) AND B()" },
        { "A() AND (B() AND C()) AND D()", "A() AND (B() AND C()) AND D()" },
        { "(A()) AND (B()) OR C()", "A() AND (B() OR C())" },
        { "A() OR SKIP C()", "A() OR (SKIP C())" },
        { "A() AND (B() OR (SKIP C()))", "A() AND (B() OR (SKIP C()))" },
        { "SKIP SKIP WHILE A()", "SKIP (SKIP (WHILE A()))" },
        { "SKIP (A() OR B()) AND WHILE C()",
          "(SKIP (A() OR B())) AND (WHILE C())" },
        { "RowFilter(!=,'regexstring:^a.*b$')",
          "RowFilter(!=, 'regexstring:^a.*b$')" },
        { "(OR())", "\tOR()" },
        { "(A() AND \tSKIP(1))", "A() AND \tSKIP(1)" },
        { "X(a\tb,'c'd)", "X(a\tb, 'c')" },
    };

    for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
        g_autofree char *got = canon(cases[i].in);
        g_autofree char *again = canon(got);
        g_autoptr(filter_node) a = parse(cases[i].in, 0, NULL);
        g_autoptr(filter_node) b = parse(got, 0, NULL);

        if (g_strcmp0(got, cases[i].out) != 0) {
            g_error("'%s': got '%s', want '%s'", cases[i].in, got,
                    cases[i].out);
        }
        g_assert_cmpstr(again, ==, got);
        g_assert_true(filter_node_equal(a, b));
    }
}

static gboolean
salt_prefix(struct filter_node *n, guint depth, gpointer user_data)
{
    const char *salt = user_data;
    struct filter_comparator cmp;
    GByteArray *b;

    if (!filter_node_reads_row(n)) {
        return TRUE;
    }
    b = g_byte_array_new();
    g_byte_array_append(b, (const guint8 *)salt, (guint)strlen(salt));
    if (n->type == FILTER_TYPE_ROW) {
        g_assert_true(filter_arg_to_comparator(&n->args[1], &cmp, NULL));
        g_byte_array_append(b, cmp.value, (guint)cmp.len);
        filter_node_set_comparator(n, 1, cmp.type, b->data, b->len);
    } else {
        g_byte_array_append(b, n->args[0].data, (guint)n->args[0].len);
        filter_node_set_arg(n, 0, FILTER_ARG_QUOTED, b->data, b->len);
    }
    g_byte_array_unref(b);
    return TRUE;
}

static gboolean
count_nodes(struct filter_node *n, guint depth, gpointer user_data)
{
    (*(guint *)user_data)++;
    return depth < 2; /* stop below the root's children */
}

/* What the proxy does per bucket: copy, rewrite row arguments, write. */
static void
test_rewrite(void)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(filter_node) n =
        parse("WHILE PrefixFilter('ab') AND RowFilter(<, "
              "'binaryprefix:x''y') AND KeyOnlyFilter()",
              FILTER_PARSE_STRICT, &error);
    g_autoptr(filter_node) c = filter_node_copy(n);
    g_autofree uint8_t *orig = NULL, *out = NULL;
    guint count = 0;

    g_assert_no_error(error);
    g_assert_true(filter_node_equal(n, c));
    g_assert_true(filter_node_walk(c, salt_prefix, (gpointer) "7|"));
    g_assert_false(filter_node_equal(n, c));
    out = filter_serialize(c, NULL, &error);
    g_assert_no_error(error);
    g_assert_cmpstr((char *)out, ==,
                    "(WHILE PrefixFilter('7|ab')) AND "
                    "RowFilter(<, 'binaryprefix:7|x''y') AND KeyOnlyFilter()");
    orig = filter_serialize(n, NULL, &error);
    g_assert_cmpstr((char *)orig, ==,
                    "(WHILE PrefixFilter('ab')) AND "
                    "RowFilter(<, 'binaryprefix:x''y') AND KeyOnlyFilter()");
    g_assert_true(filter_validate(c, &error));
    g_assert_cmpuint(filter_node_depth(c), ==, 3);
    g_assert_false(filter_node_walk(c, count_nodes, &count));
    g_assert_cmpuint(count, ==, 2);
}

static void
test_build(void)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(filter_node) and = filter_node_new_op(FILTER_NODE_AND);
    struct filter_node * or = filter_node_new_op(FILTER_NODE_OR);
    struct filter_node *leaf = filter_node_new_leaf("PageFilter", 10);
    g_autofree uint8_t *out = NULL;
    g_autoptr(filter_node) empty = filter_node_new_op(FILTER_NODE_OR);
    g_autoptr(filter_node) bad = filter_node_new_leaf("Bad Name", 8);

    g_assert_cmpint(leaf->type, ==, FILTER_TYPE_PAGE);
    filter_node_add_arg(leaf, FILTER_ARG_BARE, "5", 1);
    filter_node_add_child(or, leaf);
    filter_node_add_child(and, or); /* one-child lists write as the child */
    out = filter_serialize(and, NULL, &error);
    g_assert_no_error(error);
    g_assert_cmpstr((char *)out, ==, "PageFilter(5)");

    g_assert_null(filter_serialize(empty, NULL, &error));
    g_assert_error(error, FILTER_ERROR, FILTER_ERROR_SERIALIZE);
    g_clear_error(&error);
    g_assert_null(filter_serialize(bad, NULL, &error));
    g_assert_error(error, FILTER_ERROR, FILTER_ERROR_SERIALIZE);
}

static void
test_limits(void)
{
    GString *s = g_string_new(NULL);
    g_autoptr(GError) error = NULL;
    g_autoptr(filter_node) n = NULL;
    g_autofree uint8_t *big = NULL;

    for (int i = 0; i < FILTER_MAX_DEPTH - 1; i++) {
        g_string_append(s, "SKIP ");
    }
    g_string_append(s, "KeyOnlyFilter()");
    n = parse(s->str, FILTER_PARSE_STRICT, &error);
    g_assert_no_error(error);
    g_assert_cmpuint(filter_node_depth(n), ==, FILTER_MAX_DEPTH);
    g_clear_pointer(&n, filter_node_free);

    g_string_prepend(s, "WHILE ");
    n = parse(s->str, FILTER_PARSE_STRICT, &error);
    g_assert_null(n);
    g_assert_error(error, FILTER_ERROR, FILTER_ERROR_LIMIT);
    g_clear_error(&error);

    /* Deep parentheses and long flat lists cost no depth. */
    g_string_truncate(s, 0);
    for (int i = 0; i < 10000; i++) {
        g_string_append_c(s, '(');
    }
    g_string_append(s, "A()");
    for (int i = 0; i < 5000; i++) {
        g_string_append(s, " AND A()");
    }
    n = parse(s->str, 0, &error);
    g_assert_no_error(error);
    g_assert_cmpuint(n->nchildren, ==, 5001);
    g_clear_pointer(&n, filter_node_free);

    big = g_malloc0(FILTER_MAX_LEN + 1);
    n = filter_parse(big, FILTER_MAX_LEN + 1, 0, &error);
    g_assert_null(n);
    g_assert_error(error, FILTER_ERROR, FILTER_ERROR_LIMIT);
    g_string_free(s, TRUE);
}

/*
 * Hostile input: random strings over the bytes that steer the parser.
 * Whatever parses must write back to a string that parses to the same
 * tree and writes back identically.
 */
static void
test_hostile(void)
{
    static const char *const atoms[] = {
        "(",
        ")",
        "'",
        "''",
        " ",
        "\t",
        ",",
        "AND",
        "OR",
        "SKIP",
        "WHILE",
        "A",
        "PrefixFilter",
        "RowFilter",
        "=",
        "binary:",
        "1",
        "-",
        "true",
        "\0",
        "\xff",
        "KeyOnlyFilter()",
        "x",
    };
    guint parsed = 0, written = 0;

    for (int iter = 0; iter < 40000; iter++) {
        GByteArray *in = g_byte_array_new();
        guint natoms = (guint)g_test_rand_int_range(1, 24);
        struct filter_node *n;
        GError *error = NULL;

        for (guint k = 0; k < natoms; k++) {
            const char *a =
                atoms[g_test_rand_int_range(0, G_N_ELEMENTS(atoms))];
            size_t alen = a[0] == '\0' ? 1 : strlen(a);

            g_byte_array_append(in, (const guint8 *)a, (guint)alen);
        }
        n = filter_parse(in->data, in->len, FILTER_PARSE_STRICT, NULL);
        filter_node_free(n);
        n = filter_parse(in->data, in->len, 0, &error);
        if (n != NULL) {
            size_t len1, len2;
            uint8_t *s1 = filter_serialize(n, &len1, NULL);

            parsed++;
            if (s1 != NULL) {
                struct filter_node *m = filter_parse(s1, len1, 0, &error);
                uint8_t *s2;

                g_assert_no_error(error);
                g_assert_true(filter_node_equal(n, m));
                s2 = filter_serialize(m, &len2, NULL);
                g_assert_cmpmem(s1, len1, s2, len2);
                written++;
                g_free(s2);
                filter_node_free(m);
            }
            g_free(s1);
            filter_node_free(n);
        } else {
            g_assert_nonnull(error);
            g_clear_error(&error);
        }
        g_byte_array_unref(in);
    }
    g_test_message("parsed %u, written back %u", parsed, written);
    g_assert_cmpuint(written, >, 100);
}

int
main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/filter/leaf", test_leaf);
    g_test_add_func("/filter/quoting", test_quoting);
    g_test_add_func("/filter/tokens", test_tokens);
    g_test_add_func("/filter/precedence", test_precedence);
    g_test_add_func("/filter/errors", test_errors);
    g_test_add_func("/filter/layers", test_layers);
    g_test_add_func("/filter/roundtrip", test_roundtrip);
    g_test_add_func("/filter/rewrite", test_rewrite);
    g_test_add_func("/filter/build", test_build);
    g_test_add_func("/filter/limits", test_limits);
    g_test_add_func("/filter/hostile", test_hostile);
    return g_test_run();
}
