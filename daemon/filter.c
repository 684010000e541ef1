/* filter.c: HBase ParseFilter in C: parser, argument checks, serializer. */
#include <string.h>

#include "filter.h"

G_DEFINE_QUARK(filter_error_quark, filter_error)

static const char *const filter_names[FILTER_TYPE_COUNT] = {
    [FILTER_TYPE_UNKNOWN] = NULL,
    [FILTER_TYPE_KEY_ONLY] = "KeyOnlyFilter",
    [FILTER_TYPE_FIRST_KEY_ONLY] = "FirstKeyOnlyFilter",
    [FILTER_TYPE_PREFIX] = "PrefixFilter",
    [FILTER_TYPE_COLUMN_PREFIX] = "ColumnPrefixFilter",
    [FILTER_TYPE_MULTIPLE_COLUMN_PREFIX] = "MultipleColumnPrefixFilter",
    [FILTER_TYPE_COLUMN_COUNT_GET] = "ColumnCountGetFilter",
    [FILTER_TYPE_PAGE] = "PageFilter",
    [FILTER_TYPE_COLUMN_PAGINATION] = "ColumnPaginationFilter",
    [FILTER_TYPE_INCLUSIVE_STOP] = "InclusiveStopFilter",
    [FILTER_TYPE_TIMESTAMPS] = "TimestampsFilter",
    [FILTER_TYPE_ROW] = "RowFilter",
    [FILTER_TYPE_FAMILY] = "FamilyFilter",
    [FILTER_TYPE_QUALIFIER] = "QualifierFilter",
    [FILTER_TYPE_VALUE] = "ValueFilter",
    [FILTER_TYPE_COLUMN_RANGE] = "ColumnRangeFilter",
    [FILTER_TYPE_SINGLE_COLUMN_VALUE] = "SingleColumnValueFilter",
    [FILTER_TYPE_SINGLE_COLUMN_VALUE_EXCLUDE] =
        "SingleColumnValueExcludeFilter",
    [FILTER_TYPE_DEPENDENT_COLUMN] = "DependentColumnFilter",
    [FILTER_TYPE_COLUMN_VALUE] = "ColumnValueFilter",
};

static const char *const filter_op_symbols[] = {
    [FILTER_OP_NONE] = "",
    [FILTER_OP_LESS] = "<",
    [FILTER_OP_LESS_OR_EQUAL] = "<=",
    [FILTER_OP_EQUAL] = "=",
    [FILTER_OP_NOT_EQUAL] = "!=",
    [FILTER_OP_GREATER_OR_EQUAL] = ">=",
    [FILTER_OP_GREATER] = ">",
};

static const char *const filter_cmp_prefixes[] = {
    [FILTER_CMP_BINARY] = "binary",
    [FILTER_CMP_BINARY_PREFIX] = "binaryprefix",
    [FILTER_CMP_REGEX] = "regexstring",
    [FILTER_CMP_SUBSTRING] = "substring",
};

filter_type_t
filter_type_from_name(const uint8_t *name, size_t len)
{
    for (int t = 1; t < FILTER_TYPE_COUNT; t++) {
        if (strlen(filter_names[t]) == len &&
            memcmp(filter_names[t], name, len) == 0) {
            return (filter_type_t)t;
        }
    }
    return FILTER_TYPE_UNKNOWN;
}

const char *
filter_type_name(filter_type_t type)
{
    if ((int)type <= 0 || type >= FILTER_TYPE_COUNT) {
        return NULL;
    }
    return filter_names[type];
}

const char *
filter_op_symbol(filter_op_t op)
{
    if ((int)op < 0 || op > FILTER_OP_GREATER) {
        return "";
    }
    return filter_op_symbols[op];
}

const char *
filter_cmp_prefix(filter_cmp_type_t type)
{
    if ((int)type < 0 || type > FILTER_CMP_SUBSTRING) {
        return "";
    }
    return filter_cmp_prefixes[type];
}

/* Bytes for an error message: valid UTF-8 without control characters. */
static char *
filter_msg_bytes(const uint8_t *p, size_t len)
{
    GString *s = g_string_sized_new(len + 8);
    gboolean utf8 = g_utf8_validate((const char *)p, (gssize)len, NULL);

    for (size_t i = 0; i < len; i++) {
        if (p[i] < 0x20 || p[i] == 0x7f || (p[i] >= 0x80 && !utf8)) {
            g_string_append_printf(s, "\\x%02X", p[i]);
        } else {
            g_string_append_c(s, (char)p[i]);
        }
    }
    return g_string_free(s, FALSE);
}

/* ---- trees ---- */

static void
filter_arg_clear(struct filter_arg *a)
{
    g_free(a->data);
    a->data = NULL;
    a->len = 0;
}

static void
filter_arg_fill(struct filter_arg *a, filter_arg_kind_t kind, const void *data,
                size_t len)
{
    a->kind = kind;
    a->data = g_malloc(len + 1);
    if (len > 0) {
        memcpy(a->data, data, len);
    }
    a->data[len] = '\0';
    a->len = len;
}

struct filter_node *
filter_node_new_leaf(const void *name, size_t name_len)
{
    struct filter_node *n = g_new0(struct filter_node, 1);

    n->kind = FILTER_NODE_LEAF;
    n->name = g_malloc(name_len + 1);
    if (name_len > 0) {
        memcpy(n->name, name, name_len);
    }
    n->name[name_len] = '\0';
    n->name_len = name_len;
    n->type = filter_type_from_name(n->name, name_len);
    return n;
}

struct filter_node *
filter_node_new_op(filter_node_kind_t kind)
{
    struct filter_node *n = g_new0(struct filter_node, 1);

    g_return_val_if_fail(kind != FILTER_NODE_LEAF, n);
    n->kind = kind;
    return n;
}

void
filter_node_add_child(struct filter_node *op, struct filter_node *child)
{
    g_return_if_fail(op != NULL && op->kind != FILTER_NODE_LEAF);
    op->children = g_renew(struct filter_node *, op->children,
                           op->nchildren + 1);
    op->children[op->nchildren++] = child;
}

void
filter_node_add_arg(struct filter_node *leaf, filter_arg_kind_t kind,
                    const void *data, size_t len)
{
    g_return_if_fail(leaf != NULL && leaf->kind == FILTER_NODE_LEAF);
    leaf->args = g_renew(struct filter_arg, leaf->args, leaf->nargs + 1);
    filter_arg_fill(&leaf->args[leaf->nargs++], kind, data, len);
}

void
filter_node_set_arg(struct filter_node *leaf, guint i, filter_arg_kind_t kind,
                    const void *data, size_t len)
{
    struct filter_arg fresh;

    g_return_if_fail(leaf != NULL && leaf->kind == FILTER_NODE_LEAF);
    g_return_if_fail(i < leaf->nargs);
    /* Fill first: data may point into the argument being replaced. */
    filter_arg_fill(&fresh, kind, data, len);
    filter_arg_clear(&leaf->args[i]);
    leaf->args[i] = fresh;
}

void
filter_node_set_comparator(struct filter_node *leaf, guint i,
                           filter_cmp_type_t type, const void *value,
                           size_t len)
{
    const char *prefix = filter_cmp_prefix(type);
    size_t plen = strlen(prefix);
    uint8_t *buf = g_malloc(plen + 1 + len);

    memcpy(buf, prefix, plen);
    buf[plen] = ':';
    if (len > 0) {
        memcpy(buf + plen + 1, value, len);
    }
    filter_node_set_arg(leaf, i, FILTER_ARG_QUOTED, buf, plen + 1 + len);
    g_free(buf);
}

void
filter_node_free(struct filter_node *node)
{
    if (node == NULL) {
        return;
    }
    for (guint i = 0; i < node->nargs; i++) {
        filter_arg_clear(&node->args[i]);
    }
    g_free(node->args);
    for (guint i = 0; i < node->nchildren; i++) {
        filter_node_free(node->children[i]);
    }
    g_free(node->children);
    g_free(node->name);
    g_free(node);
}

struct filter_node *
filter_node_copy(const struct filter_node *node)
{
    struct filter_node *n;

    if (node == NULL) {
        return NULL;
    }
    if (node->kind == FILTER_NODE_LEAF) {
        n = filter_node_new_leaf(node->name, node->name_len);
        n->type = node->type;
        for (guint i = 0; i < node->nargs; i++) {
            filter_node_add_arg(n, node->args[i].kind, node->args[i].data,
                                node->args[i].len);
        }
        return n;
    }
    n = filter_node_new_op(node->kind);
    n->children = g_new(struct filter_node *, MAX(node->nchildren, 1));
    for (guint i = 0; i < node->nchildren; i++) {
        n->children[i] = filter_node_copy(node->children[i]);
    }
    n->nchildren = node->nchildren;
    return n;
}

gboolean
filter_node_equal(const struct filter_node *a, const struct filter_node *b)
{
    if (a == NULL || b == NULL) {
        return a == b;
    }
    if (a->kind != b->kind || a->nargs != b->nargs ||
        a->nchildren != b->nchildren || a->name_len != b->name_len) {
        return FALSE;
    }
    if (a->name_len > 0 && memcmp(a->name, b->name, a->name_len) != 0) {
        return FALSE;
    }
    for (guint i = 0; i < a->nargs; i++) {
        if (a->args[i].kind != b->args[i].kind ||
            a->args[i].len != b->args[i].len ||
            (a->args[i].len > 0 &&
             memcmp(a->args[i].data, b->args[i].data, a->args[i].len) != 0)) {
            return FALSE;
        }
    }
    for (guint i = 0; i < a->nchildren; i++) {
        if (!filter_node_equal(a->children[i], b->children[i])) {
            return FALSE;
        }
    }
    return TRUE;
}

guint
filter_node_depth(const struct filter_node *node)
{
    guint d = 0;

    if (node == NULL) {
        return 0;
    }
    for (guint i = 0; i < node->nchildren; i++) {
        guint c =
            filter_node_depth(node->children[i]); /* MAX() evaluates twice */

        d = MAX(d, c);
    }
    return d + 1;
}

static gboolean
filter_walk_at(struct filter_node *node, guint depth, filter_visit_fn fn,
               gpointer user_data)
{
    if (!fn(node, depth, user_data)) {
        return FALSE;
    }
    for (guint i = 0; i < node->nchildren; i++) {
        if (!filter_walk_at(node->children[i], depth + 1, fn, user_data)) {
            return FALSE;
        }
    }
    return TRUE;
}

gboolean
filter_node_walk(struct filter_node *root, filter_visit_fn fn,
                 gpointer user_data)
{
    g_return_val_if_fail(root != NULL && fn != NULL, FALSE);
    return filter_walk_at(root, 1, fn, user_data);
}

gboolean
filter_node_reads_row(const struct filter_node *node)
{
    return node != NULL && node->kind == FILTER_NODE_LEAF &&
           (node->type == FILTER_TYPE_PREFIX ||
            node->type == FILTER_TYPE_INCLUSIVE_STOP ||
            node->type == FILTER_TYPE_ROW);
}

/* ---- argument conversions (ParseFilter's convert* and create*) ---- */

static gboolean
filter_arg_to_number(const struct filter_arg *arg, guint64 max, gint64 *out,
                     GError **error)
{
    size_t i = 0;
    guint64 v = 0;
    gboolean neg = FALSE;

    /* A quoted argument still carries its quotes in HBase: not a digit. */
    if (arg->kind != FILTER_ARG_BARE || arg->len == 0) {
        g_set_error(error, FILTER_ERROR, FILTER_ERROR_ARGUMENTS,
                    "Byte Array should only contain digits");
        return FALSE;
    }
    if (arg->data[0] == '-') {
        neg = TRUE;
        i = 1;
    }
    for (; i < arg->len; i++) {
        uint8_t c = arg->data[i];

        if (c < '0' || c > '9') {
            g_set_error(error, FILTER_ERROR, FILTER_ERROR_ARGUMENTS,
                        "Byte Array should only contain digits");
            return FALSE;
        }
        v = v * 10 + (guint64)(c - '0');
        if (v > max) {
            g_set_error(error, FILTER_ERROR, FILTER_ERROR_ARGUMENTS,
                        "Integer cannot be greater than %" G_GUINT64_FORMAT,
                        max);
            return FALSE;
        }
    }
    *out = neg ? -(gint64)v : (gint64)v;
    return TRUE;
}

gboolean
filter_arg_to_int64(const struct filter_arg *arg, gint64 *out, GError **error)
{
    return filter_arg_to_number(arg, G_MAXINT64, out, error);
}

gboolean
filter_arg_to_int32(const struct filter_arg *arg, gint32 *out, GError **error)
{
    gint64 v;

    if (!filter_arg_to_number(arg, G_MAXINT32, &v, error)) {
        return FALSE;
    }
    *out = (gint32)v;
    return TRUE;
}

gboolean
filter_arg_to_bool(const struct filter_arg *arg, gboolean *out, GError **error)
{
    if (arg->kind == FILTER_ARG_BARE && arg->len == 4 &&
        g_ascii_strncasecmp((const char *)arg->data, "true", 4) == 0) {
        *out = TRUE;
        return TRUE;
    }
    if (arg->kind == FILTER_ARG_BARE && arg->len == 5 &&
        g_ascii_strncasecmp((const char *)arg->data, "false", 5) == 0) {
        *out = FALSE;
        return TRUE;
    }
    g_set_error(error, FILTER_ERROR, FILTER_ERROR_ARGUMENTS,
                "Incorrect Boolean Expression");
    return FALSE;
}

gboolean
filter_arg_to_op(const struct filter_arg *arg, filter_op_t *out,
                 GError **error)
{
    if (arg->kind == FILTER_ARG_BARE) {
        for (int op = FILTER_OP_LESS; op <= FILTER_OP_GREATER; op++) {
            const char *sym = filter_op_symbols[op];

            if (strlen(sym) == arg->len &&
                memcmp(sym, arg->data, arg->len) == 0) {
                *out = (filter_op_t)op;
                return TRUE;
            }
        }
    }
    g_set_error(error, FILTER_ERROR, FILTER_ERROR_ARGUMENTS,
                "Invalid compare operator");
    return FALSE;
}

static gboolean
filter_arg_to_bytes(const struct filter_arg *arg, struct filter_bytes *out,
                    GError **error)
{
    if (arg->kind != FILTER_ARG_QUOTED) {
        g_set_error(error, FILTER_ERROR, FILTER_ERROR_ARGUMENTS,
                    "removeQuotesFromByteArray needs a quoted byte array");
        return FALSE;
    }
    out->data = arg->data;
    out->len = arg->len;
    return TRUE;
}

gboolean
filter_arg_to_comparator(const struct filter_arg *arg,
                         struct filter_comparator *out, GError **error)
{
    struct filter_bytes b;
    const uint8_t *colon;
    size_t tlen;

    if (!filter_arg_to_bytes(arg, &b, error)) {
        return FALSE;
    }
    colon = b.len > 0 ? memchr(b.data, ':', b.len) : NULL;
    if (colon == NULL) {
        g_set_error(error, FILTER_ERROR, FILTER_ERROR_ARGUMENTS,
                    "Incorrect comparator");
        return FALSE;
    }
    tlen = (size_t)(colon - b.data);
    for (int t = FILTER_CMP_BINARY; t <= FILTER_CMP_SUBSTRING; t++) {
        if (strlen(filter_cmp_prefixes[t]) == tlen &&
            memcmp(filter_cmp_prefixes[t], b.data, tlen) == 0) {
            out->type = (filter_cmp_type_t)t;
            out->value = colon + 1;
            out->len = b.len - tlen - 1;
            return TRUE;
        }
    }
    g_set_error(error, FILTER_ERROR, FILTER_ERROR_ARGUMENTS,
                "Incorrect comparatorType");
    return FALSE;
}

/* ---- per-filter argument checks (each filter's createFilterFromArguments) ---- */

static gboolean
filter_check_count(guint n, gboolean ok, const char *expected, GError **error)
{
    if (!ok) {
        g_set_error(error, FILTER_ERROR, FILTER_ERROR_ARGUMENTS,
                    "Expected %s but got: %u", expected, n);
    }
    return ok;
}

/* Regex and substring comparators only answer "matches or not". */
static gboolean
filter_check_eq_only(const struct filter_params *p, GError **error)
{
    if ((p->cmp.type == FILTER_CMP_REGEX ||
         p->cmp.type == FILTER_CMP_SUBSTRING) &&
        p->op != FILTER_OP_EQUAL && p->op != FILTER_OP_NOT_EQUAL) {
        g_set_error(error, FILTER_ERROR, FILTER_ERROR_ARGUMENTS,
                    "A regexstring comparator and substring comparator can "
                    "only be used with EQUAL and NOT_EQUAL");
        return FALSE;
    }
    return TRUE;
}

gboolean
filter_require_nonneg(gint64 v, const char *what, GQuark domain, gint code,
                      GError **error)
{
    if (v < 0) {
        g_set_error(error, domain, code,
                    "%s must be positive %" G_GINT64_FORMAT, what, v);
        return FALSE;
    }
    return TRUE;
}

static gboolean
filter_check_nonneg(gint64 v, const char *what, GError **error)
{
    return filter_require_nonneg(v, what, FILTER_ERROR, FILTER_ERROR_ARGUMENTS,
                                 error);
}

/* The argument checks proper; messages are the inner exception's. */
static gboolean
filter_leaf_check(const struct filter_node *leaf, struct filter_params *p,
                  GError **error)
{
    const struct filter_arg *a = leaf->args;
    guint n = leaf->nargs;
    gint32 i32;

    memset(p, 0, sizeof(*p));
    p->type = leaf->type;
    switch (leaf->type) {
    case FILTER_TYPE_UNKNOWN:
    case FILTER_TYPE_COUNT: break;
    case FILTER_TYPE_KEY_ONLY:
        if (!filter_check_count(n, n <= 1, "0 or 1", error)) {
            return FALSE;
        }
        return n == 0 || filter_arg_to_bool(&a[0], &p->len_as_value, error);
    case FILTER_TYPE_FIRST_KEY_ONLY:
        return filter_check_count(n, n == 0, "0", error);
    case FILTER_TYPE_PREFIX:
    case FILTER_TYPE_COLUMN_PREFIX:
    case FILTER_TYPE_INCLUSIVE_STOP:
        return filter_check_count(n, n == 1, "1", error) &&
               filter_arg_to_bytes(&a[0], &p->bytes, error);
    case FILTER_TYPE_MULTIPLE_COLUMN_PREFIX:
        for (guint i = 0; i < n; i++) {
            struct filter_bytes b;

            if (!filter_arg_to_bytes(&a[i], &b, error)) {
                return FALSE;
            }
            for (guint j = 0; j < i; j++) {
                if (a[j].len == b.len &&
                    (b.len == 0 || memcmp(a[j].data, b.data, b.len) == 0)) {
                    g_set_error(error, FILTER_ERROR, FILTER_ERROR_ARGUMENTS,
                                "prefixes must be distinct");
                    return FALSE;
                }
            }
        }
        return TRUE;
    case FILTER_TYPE_COLUMN_COUNT_GET:
        if (!filter_check_count(n, n == 1, "1", error) ||
            !filter_arg_to_int32(&a[0], &i32, error)) {
            return FALSE;
        }
        p->limit = i32;
        return filter_check_nonneg(p->limit, "limit", error);
    case FILTER_TYPE_PAGE:
        return filter_check_count(n, n == 1, "1", error) &&
               filter_arg_to_int64(&a[0], &p->limit, error) &&
               filter_check_nonneg(p->limit, "page size", error);
    case FILTER_TYPE_COLUMN_PAGINATION:
        if (!filter_check_count(n, n == 2, "2", error) ||
            !filter_arg_to_int32(&a[0], &i32, error)) {
            return FALSE;
        }
        p->limit = i32;
        if (!filter_arg_to_int32(&a[1], &i32, error)) {
            return FALSE;
        }
        p->offset = i32;
        return filter_check_nonneg(p->limit, "limit", error) &&
               filter_check_nonneg(p->offset, "offset", error);
    case FILTER_TYPE_TIMESTAMPS:
        for (guint i = 0; i < n; i++) {
            gint64 ts;

            if (!filter_arg_to_int64(&a[i], &ts, error) ||
                !filter_check_nonneg(ts, "timestamp", error)) {
                return FALSE;
            }
        }
        return TRUE;
    case FILTER_TYPE_ROW:
    case FILTER_TYPE_FAMILY:
    case FILTER_TYPE_QUALIFIER:
    case FILTER_TYPE_VALUE:
        return filter_check_count(n, n == 2, "2", error) &&
               filter_arg_to_op(&a[0], &p->op, error) &&
               filter_arg_to_comparator(&a[1], &p->cmp, error) &&
               filter_check_eq_only(p, error);
    case FILTER_TYPE_COLUMN_RANGE:
        return filter_check_count(n, n == 4, "4", error) &&
               filter_arg_to_bytes(&a[0], &p->min_column, error) &&
               filter_arg_to_bool(&a[1], &p->min_inclusive, error) &&
               filter_arg_to_bytes(&a[2], &p->max_column, error) &&
               filter_arg_to_bool(&a[3], &p->max_inclusive, error);
    case FILTER_TYPE_SINGLE_COLUMN_VALUE:
    case FILTER_TYPE_SINGLE_COLUMN_VALUE_EXCLUDE:
        p->latest_version_only = TRUE;
        if (!filter_check_count(n, n == 4 || n == 6, "4 or 6", error) ||
            !filter_arg_to_bytes(&a[0], &p->family, error) ||
            !filter_arg_to_bytes(&a[1], &p->qualifier, error) ||
            !filter_arg_to_op(&a[2], &p->op, error) ||
            !filter_arg_to_comparator(&a[3], &p->cmp, error) ||
            !filter_check_eq_only(p, error)) {
            return FALSE;
        }
        return n == 4 ||
               (filter_arg_to_bool(&a[4], &p->filter_if_missing, error) &&
                filter_arg_to_bool(&a[5], &p->latest_version_only, error));
    case FILTER_TYPE_DEPENDENT_COLUMN:
        if (!filter_check_count(n, n == 2 || n == 3 || n == 5, "2, 3 or 5",
                                error) ||
            !filter_arg_to_bytes(&a[0], &p->family, error) ||
            !filter_arg_to_bytes(&a[1], &p->qualifier, error)) {
            return FALSE;
        }
        if (n >= 3 && !filter_arg_to_bool(&a[2], &p->drop_dependent, error)) {
            return FALSE;
        }
        return n < 5 || (filter_arg_to_op(&a[3], &p->op, error) &&
                         filter_arg_to_comparator(&a[4], &p->cmp, error));
    case FILTER_TYPE_COLUMN_VALUE:
        return filter_check_count(n, n == 4, "4", error) &&
               filter_arg_to_bytes(&a[0], &p->family, error) &&
               filter_arg_to_bytes(&a[1], &p->qualifier, error) &&
               filter_arg_to_op(&a[2], &p->op, error) &&
               filter_arg_to_comparator(&a[3], &p->cmp, error) &&
               filter_check_eq_only(p, error);
    }
    return TRUE;
}

static gboolean filter_write_leaf(GByteArray *out, const struct filter_node *n,
                                  GError **error);

gboolean
filter_leaf_params(const struct filter_node *leaf, struct filter_params *out,
                   GError **error)
{
    GError *inner = NULL;
    struct filter_params scratch;

    g_return_val_if_fail(leaf != NULL && leaf->kind == FILTER_NODE_LEAF,
                         FALSE);
    if (out == NULL) {
        out = &scratch;
    }
    if (leaf->type == FILTER_TYPE_UNKNOWN) {
        g_autofree char *name = filter_msg_bytes(leaf->name, leaf->name_len);

        memset(out, 0, sizeof(*out));
        g_set_error(error, FILTER_ERROR, FILTER_ERROR_UNKNOWN_FILTER,
                    "Filter Name %s not supported", name);
        return FALSE;
    }
    if (!filter_leaf_check(leaf, out, &inner)) {
        /* HBase loses the cause and names the expression; we keep both. */
        GByteArray *text = g_byte_array_new();
        g_autofree char *shown = NULL;

        if (!filter_write_leaf(text, leaf, NULL)) {
            g_byte_array_set_size(text, 0);
        }
        shown = filter_msg_bytes(text->data, text->len);
        g_byte_array_unref(text);
        g_set_error(error, FILTER_ERROR, FILTER_ERROR_ARGUMENTS,
                    "Incorrect filter string %s: %s", shown, inner->message);
        g_error_free(inner);
        return FALSE;
    }
    return TRUE;
}

gboolean
filter_validate(const struct filter_node *root, GError **error)
{
    g_return_val_if_fail(root != NULL, FALSE);
    if (root->kind == FILTER_NODE_LEAF) {
        return filter_leaf_params(root, NULL, error);
    }
    for (guint i = 0; i < root->nchildren; i++) {
        if (!filter_validate(root->children[i], error)) {
            return FALSE;
        }
    }
    return TRUE;
}

/* ---- the parser: ParseFilter.parseFilterString, same stack machine ---- */

enum filter_pop {
    FILTER_POP_LPAREN = 0,
    FILTER_POP_SKIP,  /* precedence 1 */
    FILTER_POP_WHILE, /* precedence 1 */
    FILTER_POP_AND,   /* precedence 2 */
    FILTER_POP_OR,    /* precedence 3 */
};

struct filter_parser {
    const uint8_t *s; /* whole filter string */
    size_t n;
    guint flags;
    GArray *ops;      /* enum filter_pop as guint8 */
    GPtrArray *nodes; /* struct filter_node *, owned */
    GArray *depths;   /* guint, parallel to nodes */
};

static int
filter_precedence(guint8 op)
{
    switch (op) {
    case FILTER_POP_SKIP:
    case FILTER_POP_WHILE: return 1;
    case FILTER_POP_AND: return 2;
    default: return 3;
    }
}

static void
filter_parser_push(struct filter_parser *p, struct filter_node *node,
                   guint depth)
{
    g_ptr_array_add(p->nodes, node);
    g_array_append_val(p->depths, depth);
}

/* Steals the top node; the caller owns it. */
static struct filter_node *
filter_parser_pop(struct filter_parser *p, guint *depth)
{
    guint last = p->nodes->len - 1;
    struct filter_node *node = g_ptr_array_steal_index(p->nodes, last);

    *depth = g_array_index(p->depths, guint, last);
    g_array_set_size(p->depths, last);
    return node;
}

static guint8
filter_ops_top(const struct filter_parser *p)
{
    return g_array_index(p->ops, guint8, p->ops->len - 1);
}

static void
filter_ops_drop(struct filter_parser *p)
{
    g_array_set_size(p->ops, p->ops->len - 1);
}

static gboolean
filter_syntax(GError **error, const char *msg)
{
    g_set_error_literal(error, FILTER_ERROR, FILTER_ERROR_SYNTAX, msg);
    return FALSE;
}

static gboolean
filter_depth_ok(guint depth, GError **error)
{
    if (depth > FILTER_MAX_DEPTH) {
        g_set_error(error, FILTER_ERROR, FILTER_ERROR_LIMIT,
                    "filter nests deeper than %u", FILTER_MAX_DEPTH);
        return FALSE;
    }
    return TRUE;
}

/* popArguments: builds one node from the top operator, pushes it. */
static gboolean
filter_pop_arguments(struct filter_parser *p, GError **error)
{
    guint8 top;
    struct filter_node *node, *child;
    guint depth, maxd = 0;

    /* Java's peek() throws EmptyStackException here. */
    if (p->ops->len == 0) {
        return filter_syntax(error, "Incorrect Filter String");
    }
    top = filter_ops_top(p);

    if (top == FILTER_POP_AND || top == FILTER_POP_OR) {
        const char *msg =
            top == FILTER_POP_OR
                ? "Incorrect input string - an OR needs two filters"
                : "Incorrect input string - an AND needs two filters";
        GPtrArray *rev = g_ptr_array_new();

        node = filter_node_new_op(top == FILTER_POP_OR ? FILTER_NODE_OR
                                                       : FILTER_NODE_AND);
        while (p->ops->len > 0 && filter_ops_top(p) == top) {
            if (p->nodes->len == 0) {
                break;
            }
            child = filter_parser_pop(p, &depth);
            maxd = MAX(maxd, depth);
            g_ptr_array_add(rev, child);
            filter_ops_drop(p);
        }
        if (p->nodes->len == 0) {
            g_ptr_array_set_free_func(rev, (GDestroyNotify)filter_node_free);
            g_ptr_array_unref(rev);
            filter_node_free(node);
            return filter_syntax(error, msg);
        }
        child = filter_parser_pop(p, &depth);
        maxd = MAX(maxd, depth);
        g_ptr_array_add(rev, child);
        node->nchildren = rev->len;
        node->children = g_new(struct filter_node *, rev->len);
        for (guint i = 0; i < rev->len; i++) {
            node->children[i] = rev->pdata[rev->len - 1 - i];
        }
        g_ptr_array_unref(rev);
        filter_parser_push(p, node, maxd + 1);
        return filter_depth_ok(maxd + 1, error);
    }
    if (top == FILTER_POP_SKIP || top == FILTER_POP_WHILE) {
        if (p->nodes->len == 0) {
            return filter_syntax(
                error,
                top == FILTER_POP_SKIP
                    ? "Incorrect input string - a SKIP wraps a filter"
                    : "Incorrect input string - a WHILE wraps a filter");
        }
        child = filter_parser_pop(p, &depth);
        node = filter_node_new_op(top == FILTER_POP_SKIP ? FILTER_NODE_SKIP
                                                         : FILTER_NODE_WHILE);
        filter_node_add_child(node, child);
        filter_ops_drop(p);
        filter_parser_push(p, node, depth + 1);
        return filter_depth_ok(depth + 1, error);
    }
    /* LPAREN: the filter below it stands for the group. */
    if (p->nodes->len == 0) {
        return filter_syntax(error, "Incorrect Filter String");
    }
    filter_ops_drop(p);
    return TRUE;
}

static gboolean
filter_reduce(struct filter_parser *p, guint8 op, GError **error)
{
    while (p->ops->len > 0 && filter_ops_top(p) != FILTER_POP_LPAREN &&
           filter_precedence(filter_ops_top(p)) < filter_precedence(op)) {
        if (!filter_pop_arguments(p, error)) {
            return FALSE;
        }
    }
    g_array_append_val(p->ops, op);
    return TRUE;
}

/*
 * checkForOr/And/Skip/While: the keyword, preceded by a space or ')' (SKIP
 * and WHILE also '(' or the string start) and followed by a space or '('.
 * Java reads past either end and catches the exception: that is a "no".
 */
static gboolean
filter_keyword(const uint8_t *s, size_t n, size_t i, const char *kw,
               gboolean wrapper)
{
    size_t k = strlen(kw);

    if (i + k >= n || memcmp(s + i, kw, k) != 0) {
        return FALSE;
    }
    if (i == 0) {
        if (!wrapper) {
            return FALSE;
        }
    } else if (!(s[i - 1] == ' ' || s[i - 1] == ')' ||
                 (wrapper && s[i - 1] == '('))) {
        return FALSE;
    }
    return s[i + k] == ' ' || s[i + k] == '(';
}

static gboolean
filter_quote_unescaped(const uint8_t *s, size_t n, size_t i)
{
    return i == n - 1 || s[i + 1] != '\'';
}

/* extractFilterSimpleExpression: up to the first ')' outside quotes. */
static gboolean
filter_extract(const uint8_t *s, size_t n, size_t start, size_t *end,
               GError **error)
{
    size_t quotes = 0;

    for (size_t i = start; i < n; i++) {
        if (s[i] == '\'') {
            if (filter_quote_unescaped(s, n, i)) {
                quotes++;
            } else {
                i++;
            }
        }
        if (s[i] == ')' && quotes % 2 == 0) {
            *end = i;
            return TRUE;
        }
    }
    return filter_syntax(error, "Incorrect Filter String");
}

/* getFilterArguments over one simple expression e[0..m). */
static gboolean
filter_parse_args(struct filter_node *leaf, const uint8_t *e, size_t m,
                  GError **error)
{
    const uint8_t *lp = memchr(e, '(', m);

    if (lp == NULL) {
        return filter_syntax(error, "Incorrect argument list");
    }
    for (size_t i = (size_t)(lp - e) + 1; i < m; i++) {
        if (e[i] == ' ' || e[i] == ',' || e[i] == ')') {
            continue;
        }
        if (e[i] == '\'') {
            size_t start = i;

            for (size_t j = start + 1; j < m; j++) {
                if (e[j] == '\'') {
                    if (filter_quote_unescaped(e, m, j)) {
                        GByteArray *b = g_byte_array_new();

                        /* createUnescapdArgument: '' becomes ' */
                        for (size_t k = start + 1; k < j; k++) {
                            if (e[k] == '\'' && k != j - 1 &&
                                e[k + 1] == '\'') {
                                k++;
                            }
                            g_byte_array_append(b, &e[k], 1);
                        }
                        filter_node_add_arg(leaf, FILTER_ARG_QUOTED, b->data,
                                            b->len);
                        g_byte_array_unref(b);
                        /* Java sets i = j + 1 and then i++: one byte skipped. */
                        i = j + 1;
                        break;
                    }
                    j++;
                } else if (j == m - 1) {
                    return filter_syntax(error, "Incorrect argument list");
                }
            }
        } else {
            size_t j;

            for (j = i; j < m; j++) {
                if (e[j] == ' ' || e[j] == ',' || e[j] == ')') {
                    break;
                }
                if (j == m - 1) {
                    return filter_syntax(error, "Incorrect argument list");
                }
            }
            if (j >= m) {
                return filter_syntax(error, "Incorrect argument list");
            }
            filter_node_add_arg(leaf, FILTER_ARG_BARE, e + i, j - i);
            i = j;
        }
    }
    return TRUE;
}

/* parseSimpleFilterExpression. */
static struct filter_node *
filter_parse_simple(const uint8_t *e, size_t m, guint flags, GError **error)
{
    size_t name_end = 0;
    struct filter_node *leaf;

    for (size_t i = 0; i < m; i++) {
        if (e[i] == '(' || e[i] == ' ') {
            name_end = i;
            break;
        }
    }
    if (name_end == 0) {
        filter_syntax(error, "Incorrect Filter Name");
        return NULL;
    }
    leaf = filter_node_new_leaf(e, name_end);
    if (!filter_parse_args(leaf, e, m, error) ||
        ((flags & FILTER_PARSE_STRICT) &&
         !filter_leaf_params(leaf, NULL, error))) {
        filter_node_free(leaf);
        return NULL;
    }
    return leaf;
}

static gboolean
filter_parse_loop(struct filter_parser *p, GError **error)
{
    const uint8_t *s = p->s;
    size_t n = p->n;

    for (size_t i = 0; i < n; i++) {
        guint8 op;

        if (s[i] == '(') {
            op = FILTER_POP_LPAREN;
            g_array_append_val(p->ops, op);
        } else if (s[i] == ' ' || s[i] == '\t') {
            continue;
        } else if (filter_keyword(s, n, i, "OR", FALSE)) {
            i += 1;
            if (!filter_reduce(p, FILTER_POP_OR, error)) {
                return FALSE;
            }
        } else if (filter_keyword(s, n, i, "AND", FALSE)) {
            i += 2;
            if (!filter_reduce(p, FILTER_POP_AND, error)) {
                return FALSE;
            }
        } else if (filter_keyword(s, n, i, "SKIP", TRUE)) {
            i += 3;
            if (!filter_reduce(p, FILTER_POP_SKIP, error)) {
                return FALSE;
            }
        } else if (filter_keyword(s, n, i, "WHILE", TRUE)) {
            i += 4;
            if (!filter_reduce(p, FILTER_POP_WHILE, error)) {
                return FALSE;
            }
        } else if (s[i] == ')') {
            guint8 top;

            if (p->ops->len == 0) {
                return filter_syntax(error, "Mismatched parenthesis");
            }
            /*
             * As in Java: an LPAREN on top stays on the stack, and after
             * each reduction the next operator is popped unexamined.
             */
            top = filter_ops_top(p);
            while (top != FILTER_POP_LPAREN) {
                if (!filter_pop_arguments(p, error)) {
                    return FALSE;
                }
                if (p->ops->len == 0) {
                    return filter_syntax(error, "Mismatched parenthesis");
                }
                top = filter_ops_top(p);
                filter_ops_drop(p);
            }
        } else {
            size_t end;
            struct filter_node *leaf;

            if (!filter_extract(s, n, i, &end, error)) {
                return FALSE;
            }
            leaf = filter_parse_simple(s + i, end - i + 1, p->flags, error);
            if (leaf == NULL) {
                return FALSE;
            }
            filter_parser_push(p, leaf, 1);
            i = end;
        }
    }
    while (p->ops->len > 0) {
        if (!filter_pop_arguments(p, error)) {
            return FALSE;
        }
    }
    if (p->nodes->len != 1) {
        return filter_syntax(error, "Incorrect Filter String");
    }
    return TRUE;
}

struct filter_node *
filter_parse(const uint8_t *text, size_t len, guint flags, GError **error)
{
    struct filter_parser p = { 0 };
    struct filter_node *root = NULL;
    guint depth;

    g_return_val_if_fail(text != NULL || len == 0, NULL);
    if (len > FILTER_MAX_LEN) {
        g_set_error(error, FILTER_ERROR, FILTER_ERROR_LIMIT,
                    "filter string longer than %u bytes", FILTER_MAX_LEN);
        return NULL;
    }
    p.s = text;
    p.n = len;
    p.flags = flags;
    p.ops = g_array_new(FALSE, FALSE, sizeof(guint8));
    p.nodes = g_ptr_array_new_with_free_func((GDestroyNotify)filter_node_free);
    p.depths = g_array_new(FALSE, FALSE, sizeof(guint));
    if (filter_parse_loop(&p, error)) {
        root = filter_parser_pop(&p, &depth);
    }
    g_array_unref(p.ops);
    g_ptr_array_unref(p.nodes);
    g_array_unref(p.depths);
    return root;
}

/* ---- the serializer ---- */

static gboolean
filter_serialize_error(GError **error, const char *msg)
{
    g_set_error_literal(error, FILTER_ERROR, FILTER_ERROR_SERIALIZE, msg);
    return FALSE;
}

static void
filter_put(GByteArray *out, const char *s)
{
    g_byte_array_append(out, (const guint8 *)s, (guint)strlen(s));
}

static gboolean
filter_write_leaf(GByteArray *out, const struct filter_node *n, GError **error)
{
    static const char *const keywords[] = { "OR", "AND", "SKIP", "WHILE" };

    /*
     * Names are written raw; bytes that steer ParseFilter's scanners
     * would not read back the same, so refuse them.
     */
    if (n->name_len == 0 || n->name[0] == '\t') {
        return filter_serialize_error(error, "filter name cannot be written");
    }
    for (size_t i = 0; i < n->name_len; i++) {
        uint8_t c = n->name[i];

        if (c == ' ' || c == '(' || c == ')' || c == '\'') {
            return filter_serialize_error(error,
                                          "filter name cannot be written");
        }
    }
    /* A leaf named like a keyword reads as one unless a tab precedes it. */
    for (size_t k = 0; k < G_N_ELEMENTS(keywords); k++) {
        if (strlen(keywords[k]) == n->name_len &&
            memcmp(keywords[k], n->name, n->name_len) == 0) {
            filter_put(out, "\t");
        }
    }
    g_byte_array_append(out, n->name, (guint)n->name_len);
    filter_put(out, "(");
    for (guint i = 0; i < n->nargs; i++) {
        const struct filter_arg *a = &n->args[i];

        if (i > 0) {
            filter_put(out, ", ");
        }
        if (a->kind == FILTER_ARG_QUOTED) {
            filter_put(out, "'");
            for (size_t k = 0; k < a->len; k++) {
                if (a->data[k] == '\'') {
                    filter_put(out, "'");
                }
                g_byte_array_append(out, &a->data[k], 1);
            }
            filter_put(out, "'");
            continue;
        }
        if (a->len == 0) {
            return filter_serialize_error(error, "empty bare argument");
        }
        for (size_t k = 0; k < a->len; k++) {
            uint8_t c = a->data[k];

            if (c == ' ' || c == ',' || c == ')' || c == '\'') {
                return filter_serialize_error(
                    error, "bare argument cannot be written");
            }
        }
        g_byte_array_append(out, a->data, (guint)a->len);
    }
    filter_put(out, ")");
    return TRUE;
}

/* FilterList(x) behaves as x; writing it bare avoids "((x))" pitfalls. */
static const struct filter_node *
filter_unwrap(const struct filter_node *n)
{
    while ((n->kind == FILTER_NODE_AND || n->kind == FILTER_NODE_OR) &&
           n->nchildren == 1) {
        n = n->children[0];
    }
    return n;
}

static gboolean filter_write(GByteArray *out, const struct filter_node *n,
                             guint depth, GError **error);

/* An operand of a list or wrapper: leaves bare, anything else in (). */
static gboolean
filter_write_operand(GByteArray *out, const struct filter_node *n, guint depth,
                     GError **error)
{
    n = filter_unwrap(n);
    if (n->kind == FILTER_NODE_LEAF) {
        return filter_write_leaf(out, n, error);
    }
    filter_put(out, "(");
    if (!filter_write(out, n, depth, error)) {
        return FALSE;
    }
    filter_put(out, ")");
    return TRUE;
}

static gboolean
filter_write(GByteArray *out, const struct filter_node *n, guint depth,
             GError **error)
{
    if (depth > FILTER_MAX_DEPTH) {
        g_set_error(error, FILTER_ERROR, FILTER_ERROR_LIMIT,
                    "filter nests deeper than %u", FILTER_MAX_DEPTH);
        return FALSE;
    }
    n = filter_unwrap(n);
    switch (n->kind) {
    case FILTER_NODE_LEAF: return filter_write_leaf(out, n, error);
    case FILTER_NODE_AND:
    case FILTER_NODE_OR:
        if (n->nchildren == 0) {
            return filter_serialize_error(error, "empty filter list");
        }
        for (guint i = 0; i < n->nchildren; i++) {
            if (i > 0) {
                filter_put(out, n->kind == FILTER_NODE_AND ? " AND " : " OR ");
            }
            if (!filter_write_operand(out, n->children[i], depth + 1, error)) {
                return FALSE;
            }
        }
        return TRUE;
    case FILTER_NODE_SKIP:
    case FILTER_NODE_WHILE:
        if (n->nchildren != 1) {
            return filter_serialize_error(
                error, "SKIP/WHILE needs exactly one filter");
        }
        filter_put(out, n->kind == FILTER_NODE_SKIP ? "SKIP " : "WHILE ");
        return filter_write_operand(out, n->children[0], depth + 1, error);
    }
    return filter_serialize_error(error, "bad node kind");
}

uint8_t *
filter_serialize(const struct filter_node *root, size_t *len, GError **error)
{
    GByteArray *out;

    g_return_val_if_fail(root != NULL, NULL);
    out = g_byte_array_new();
    if (!filter_write(out, root, 1, error)) {
        g_byte_array_unref(out);
        return NULL;
    }
    if (len != NULL) {
        *len = out->len;
    }
    g_byte_array_append(out, (const guint8 *)"", 1);
    return g_byte_array_free(out, FALSE);
}
