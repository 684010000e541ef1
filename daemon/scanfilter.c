/* scanfilter.c: a scan's filter string rewritten for each salt bucket. */
#include "scanfilter.h"

#include <string.h>

#include "filter.h"

#define SCANFILTER_ERROR scanfilter_error_quark()
static G_DEFINE_QUARK(scanfilter-error-quark, scanfilter_error)

struct scanfilter {
    const struct salt_table *salt;
    gboolean reversed;
    struct filter_node *tree;       /* NULL: send the text unchanged */
    GByteArray *text;               /* the original string */
    GByteArray *out;                /* the last bucket's string */
    int64_t page_limit;             /* -1: none */
    gboolean single;                /* the filter fixes one bucket */
    uint32_t single_bucket;
    const char *multi_why;          /* NULL: exact over many buckets */
};

/* ---- what can be rewritten ---------------------------------------------- */

/* Regex constructs whose meaning depends on what precedes the match. */
static gboolean
scanfilter_regex_looks_back(const uint8_t *r, size_t len, size_t from)
{
    for (size_t i = from; i < len; i++) {
        if (r[i] == '\\' && i + 1 < len) {
            uint8_t e = r[i + 1];

            if (e == 'A' || e == 'G' || e == 'b' || e == 'B') {
                return TRUE;
            }
            i++;
        } else if (r[i] == '^') {
            return TRUE;
        } else if (r[i] == '(' && i + 2 < len && r[i + 1] == '?'
                   && r[i + 2] == '<' && i + 3 < len
                   && (r[i + 3] == '=' || r[i + 3] == '!')) {
            return TRUE;
        }
    }
    return FALSE;
}

static gboolean
scanfilter_regex_ok(const uint8_t *r, size_t len)
{
    if (len > 0 && r[0] == '^') {
        /* a leading anchor pins the match to the start of the logical
         * key; alternation could carry it into one branch only */
        return memchr(r, '|', len) == NULL
               && !scanfilter_regex_looks_back(r, len, 1);
    }
    return !scanfilter_regex_looks_back(r, len, 0);
}

/* A walk checking the leaves the rewrite must handle. */
struct scanfilter_check {
    const struct scanfilter *f;
    GError *error;                  /* the first leaf that cannot be */
};

static gboolean
scanfilter_check_leaf(struct filter_node *n, guint depth, gpointer data)
{
    struct scanfilter_check *ck = data;
    const struct scanfilter *f = ck->f;
    struct filter_params p;
    GError **error = &ck->error;

    if (n->kind != FILTER_NODE_LEAF || n->type != FILTER_TYPE_ROW
        || !filter_leaf_params(n, &p, NULL)) {
        return TRUE;
    }
    if (p.cmp.type == FILTER_CMP_REGEX
        && !scanfilter_regex_ok(p.cmp.value, p.cmp.len)) {
        g_set_error(error, SCANFILTER_ERROR, 0,
                    "hbase-salt-proxy: RowFilter regexstring:%.*s cannot be "
                    "applied exactly to a salted table: only a leading ^ is "
                    "supported as an anchor, without |, \\b, \\B, \\A, \\G "
                    "or lookbehind", (int)MIN(p.cmp.len, 200),
                    (const char *)p.cmp.value);
        return FALSE;
    }
    if (p.cmp.type == FILTER_CMP_SUBSTRING) {
        for (size_t i = 0; i < p.cmp.len; i++) {
            if (p.cmp.value[i] >= 0x80) {
                g_set_error(error, SCANFILTER_ERROR, 0,
                            "hbase-salt-proxy: RowFilter substring: with "
                            "non-ASCII bytes cannot be applied exactly to a "
                            "salted table");
                return FALSE;
            }
        }
    }
    if ((p.cmp.type == FILTER_CMP_REGEX || p.cmp.type == FILTER_CMP_SUBSTRING)
        && f->salt->format == SALT_FORMAT_BYTE && f->salt->buckets > 128) {
        /* a salt byte over 0x7f is no character a Java regex can name */
        g_set_error(error, SCANFILTER_ERROR, 0,
                    "hbase-salt-proxy: RowFilter regexstring:/substring: "
                    "on a salted table needs salts below 0x80: use "
                    "salt_format hex or decimal, or at most 128 buckets");
        return FALSE;
    }
    if ((p.cmp.type == FILTER_CMP_REGEX || p.cmp.type == FILTER_CMP_SUBSTRING)
        && f->salt->sep_len > 0) {
        for (size_t i = 0; i < f->salt->sep_len; i++) {
            if (f->salt->sep[i] >= 0x80) {
                g_set_error(error, SCANFILTER_ERROR, 0,
                            "hbase-salt-proxy: RowFilter regexstring:/"
                            "substring: on a salted table needs an ASCII "
                            "salt_separator");
                return FALSE;
            }
        }
    }
    return TRUE;
}

/*
 * Whether WHILE(node) stops every bucket where the whole scan would stop:
 * true when the rows node lets through come before every row it stops
 * at, in scan order (each bucket's first miss is then at or after the
 * scan's first miss, and every row after it misses too).
 */
static gboolean
scanfilter_monotonic(const struct scanfilter *f, const struct filter_node *n)
{
    struct filter_params p;

    switch (n->kind) {
    case FILTER_NODE_AND:
    case FILTER_NODE_OR:
        for (guint i = 0; i < n->nchildren; i++) {
            if (!scanfilter_monotonic(f, n->children[i])) {
                return FALSE;
            }
        }
        return TRUE;
    case FILTER_NODE_LEAF:
        if (!filter_leaf_params(n, &p, NULL)) {
            return FALSE;
        }
        if (p.type == FILTER_TYPE_INCLUSIVE_STOP) {
            return TRUE;
        }
        if (p.type == FILTER_TYPE_ROW
            && (p.cmp.type == FILTER_CMP_BINARY
                || p.cmp.type == FILTER_CMP_BINARY_PREFIX)) {
            if (f->reversed) {
                return p.op == FILTER_OP_GREATER
                       || p.op == FILTER_OP_GREATER_OR_EQUAL;
            }
            return p.op == FILTER_OP_LESS || p.op == FILTER_OP_LESS_OR_EQUAL;
        }
        return FALSE;
    default:
        return FALSE;
    }
}

/* Finds what only holds over many buckets in some places of the tree. */
static void
scanfilter_check_multi(struct scanfilter *f, const struct filter_node *n,
                       gboolean top)
{
    if (f->multi_why != NULL) {
        return;
    }
    if (n->kind == FILTER_NODE_WHILE) {
        if (!scanfilter_monotonic(f, n->children[0])) {
            f->multi_why = "hbase-salt-proxy: WHILE around a filter that is "
                           "not monotonic in the row key cannot be applied "
                           "across salt buckets (each bucket would stop at "
                           "its own first miss); narrow the scan to one "
                           "bucket or drop the WHILE";
            return;
        }
    }
    if (n->kind == FILTER_NODE_LEAF && n->type == FILTER_TYPE_PAGE && !top) {
        f->multi_why = "hbase-salt-proxy: PageFilter inside OR, SKIP or WHILE "
                       "cannot be applied across salt buckets; use it at the "
                       "top level or in a top-level AND";
        return;
    }
    for (guint i = 0; i < n->nchildren; i++) {
        scanfilter_check_multi(f, n->children[i],
                               top && n->kind == FILTER_NODE_AND);
    }
}

/* A top-level PageFilter (alone or in the top AND) and PrefixFilter. */
static void
scanfilter_top_level(struct scanfilter *f, const struct filter_node *n)
{
    struct filter_params p;

    if (n->kind == FILTER_NODE_AND) {
        for (guint i = 0; i < n->nchildren; i++) {
            scanfilter_top_level(f, n->children[i]);
        }
        return;
    }
    if (n->kind != FILTER_NODE_LEAF || !filter_leaf_params(n, &p, NULL)) {
        return;
    }
    if (p.type == FILTER_TYPE_PAGE && p.limit >= 0
        && (f->page_limit < 0 || p.limit < f->page_limit)) {
        f->page_limit = p.limit;
    }
    if (p.type == FILTER_TYPE_PREFIX && !f->single) {
        f->single = salt_prefix_bucket(f->salt, p.bytes.data, p.bytes.len,
                                       &f->single_bucket);
    }
}

struct scanfilter *
scanfilter_new(const uint8_t *text, size_t len, const struct salt_table *t,
               gboolean reversed, GError **error)
{
    struct scanfilter *f = g_new0(struct scanfilter, 1);
    struct scanfilter_check ck = { f, NULL };

    f->salt = t;
    f->reversed = reversed;
    f->page_limit = -1;
    f->text = g_byte_array_new();
    g_byte_array_append(f->text, text, (guint)len);
    f->out = g_byte_array_new();
    f->tree = filter_parse(text, len, FILTER_PARSE_DEFAULT, NULL);
    if (f->tree == NULL || !filter_validate(f->tree, NULL)) {
        /* the backend reports what is wrong with it */
        g_clear_pointer(&f->tree, filter_node_free);
        return f;
    }
    filter_node_walk(f->tree, scanfilter_check_leaf, &ck);
    if (ck.error != NULL) {
        g_propagate_error(error, ck.error);
        scanfilter_free(f);
        return NULL;
    }
    scanfilter_top_level(f, f->tree);
    scanfilter_check_multi(f, f->tree, TRUE);
    return f;
}

void
scanfilter_free(struct scanfilter *f)
{
    if (f == NULL) {
        return;
    }
    if (f->tree != NULL) {
        filter_node_free(f->tree);
    }
    g_byte_array_unref(f->text);
    if (f->out != NULL) {
        g_byte_array_unref(f->out);
    }
    g_free(f);
}

int64_t
scanfilter_page_limit(const struct scanfilter *f)
{
    return f->page_limit;
}

gboolean
scanfilter_single_bucket(const struct scanfilter *f, uint32_t *bucket)
{
    if (f->single) {
        *bucket = f->single_bucket;
    }
    return f->single;
}

gboolean
scanfilter_multi_bucket_ok(const struct scanfilter *f)
{
    return f->multi_why == NULL;
}

const char *
scanfilter_multi_bucket_why(const struct scanfilter *f)
{
    return f->multi_why;
}

/* ---- rewriting ------------------------------------------------------ */

/* State of one bucket's rewrite. */
struct scanfilter_bucket {
    const struct scanfilter *f;
    uint8_t prefix[SALT_MAX_PREFIX];
    size_t plen;
    GByteArray *tmp;
};

/* Appends the prefix as \xNN escapes: valid in Java regex and PCRE. */
static void
scanfilter_regex_prefix(struct scanfilter_bucket *sb)
{
    char esc[8];

    g_byte_array_append(sb->tmp, (const guint8 *)"^", 1);
    for (size_t i = 0; i < sb->plen; i++) {
        g_snprintf(esc, sizeof(esc), "\\x%02x", sb->prefix[i]);
        g_byte_array_append(sb->tmp, (const guint8 *)esc, 4);
    }
}

static gboolean
scanfilter_rewrite_leaf(struct filter_node *n, guint depth, gpointer data)
{
    struct scanfilter_bucket *sb = data;
    struct filter_params p;
    GByteArray *t = sb->tmp;

    if (n->kind != FILTER_NODE_LEAF || !filter_leaf_params(n, &p, NULL)) {
        return TRUE;
    }
    g_byte_array_set_size(t, 0);
    switch (p.type) {
    case FILTER_TYPE_PREFIX:
    case FILTER_TYPE_INCLUSIVE_STOP:
        g_byte_array_append(t, sb->prefix, (guint)sb->plen);
        g_byte_array_append(t, p.bytes.data, (guint)p.bytes.len);
        filter_node_set_arg(n, 0, FILTER_ARG_QUOTED, t->data, t->len);
        break;
    case FILTER_TYPE_ROW:
        if (p.cmp.type == FILTER_CMP_BINARY
            || p.cmp.type == FILTER_CMP_BINARY_PREFIX) {
            g_byte_array_append(t, sb->prefix, (guint)sb->plen);
            g_byte_array_append(t, p.cmp.value, (guint)p.cmp.len);
            filter_node_set_comparator(n, 1, p.cmp.type, t->data, t->len);
        } else if (p.cmp.type == FILTER_CMP_REGEX) {
            scanfilter_regex_prefix(sb);
            if (p.cmp.len > 0 && p.cmp.value[0] == '^') {
                g_byte_array_append(t, (const guint8 *)"(?:", 3);
                g_byte_array_append(t, p.cmp.value + 1,
                                    (guint)p.cmp.len - 1);
            } else {
                g_byte_array_append(t, (const guint8 *)"(?s:.*?)(?:", 11);
                g_byte_array_append(t, p.cmp.value, (guint)p.cmp.len);
            }
            g_byte_array_append(t, (const guint8 *)")", 1);
            filter_node_set_comparator(n, 1, FILTER_CMP_REGEX, t->data,
                                       t->len);
        } else {
            /* substring: case-insensitive 'contains' after the prefix */
            char esc[8];

            scanfilter_regex_prefix(sb);
            g_byte_array_append(t, (const guint8 *)"(?s:.*?)(?i:", 12);
            for (size_t i = 0; i < p.cmp.len; i++) {
                uint8_t c = p.cmp.value[i];

                if (g_ascii_isalnum(c)) {
                    g_byte_array_append(t, &c, 1);
                } else {
                    g_snprintf(esc, sizeof(esc), "\\x%02x", c);
                    g_byte_array_append(t, (const guint8 *)esc, 4);
                }
            }
            g_byte_array_append(t, (const guint8 *)")", 1);
            filter_node_set_comparator(n, 1, FILTER_CMP_REGEX, t->data,
                                       t->len);
        }
        break;
    default:
        break;
    }
    return TRUE;
}

const uint8_t *
scanfilter_for_bucket(const struct scanfilter *f, uint32_t bucket,
                      size_t *len)
{
    struct scanfilter_bucket sb;
    g_autoptr(filter_node) copy = NULL;
    uint8_t *text;
    size_t n = 0;

    if (f->tree == NULL) {
        *len = f->text->len;
        return f->text->data;
    }
    sb.f = f;
    sb.plen = salt_write_prefix(f->salt, bucket, sb.prefix);
    sb.tmp = g_byte_array_new();
    copy = filter_node_copy(f->tree);
    filter_node_walk(copy, scanfilter_rewrite_leaf, &sb);
    g_byte_array_unref(sb.tmp);
    text = filter_serialize(copy, &n, NULL);
    g_byte_array_set_size(f->out, 0);
    if (text == NULL) {
        /* cannot happen for a tree that parsed; keep the original */
        g_byte_array_append(f->out, f->text->data, f->text->len);
    } else {
        g_byte_array_append(f->out, text, (guint)n);
        g_free(text);
    }
    *len = f->out->len;
    return f->out->data;
}
