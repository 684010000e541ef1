/* scanfilter.c: a scan's filter string rewritten for each salt bucket. */
#include "scanfilter.h"

#include <string.h>

#include "filter.h"
#include "filterpb.h"

#define SCANFILTER_ERROR scanfilter_error_quark()
static G_DEFINE_QUARK(scanfilter_error_quark, scanfilter_error)

    struct scanfilter {
    const struct salt_table *salt;
    gboolean reversed;
    struct filter_node *tree; /* parsed and known (never NULL) */
    struct filterpb *pb;      /* filterBytes: what tree came from */
    GByteArray *text;         /* the original string or bytes */
    GByteArray *out;          /* the last bucket's string */
    int64_t page_limit;       /* -1: none */
    gboolean lift_page;       /* top-level PageFilters sent with no
                                       limit (scanfilter_lift_page) */
    gboolean single;          /* the filter fixes one bucket */
    uint32_t single_bucket;
    const char *multi_why; /* NULL: exact over many buckets */
};

/* ---- what can be rewritten ---------------------------------------------- */

/*
 * Index just past the character class opening at r[i] == '[', or len.
 * A ']' right after '[' or '[^' is literal; Java nests classes.
 */
static size_t
scanfilter_regex_class_end(const uint8_t *r, size_t len, size_t i)
{
    unsigned depth = 1;

    i++;
    if (i < len && r[i] == '^') {
        i++;
    }
    if (i < len && r[i] == ']') {
        i++;
    }
    for (; i < len; i++) {
        if (r[i] == '\\') {
            i++;
        } else if (r[i] == '[') {
            depth++;
        } else if (r[i] == ']' && --depth == 0) {
            return i + 1;
        }
    }
    return len;
}

/*
 * Regex constructs whose meaning depends on what precedes the match, and
 * (alt) an alternation.  Escaped characters, \Q...\E quotes and character
 * classes ("[^#]", "[|]") are literal text, not anchors or alternation.
 */
static gboolean
scanfilter_regex_looks_back(const uint8_t *r, size_t len, size_t from,
                            gboolean *alt)
{
    *alt = FALSE;
    for (size_t i = from; i < len; i++) {
        if (r[i] == '\\' && i + 1 < len) {
            uint8_t e = r[i + 1];

            if (e == 'A' || e == 'G' || e == 'b' || e == 'B') {
                return TRUE;
            }
            if (e == 'Q') {
                /* quoted up to \E or the end */
                for (i += 2; i + 1 < len; i++) {
                    if (r[i] == '\\' && r[i + 1] == 'E') {
                        break;
                    }
                }
            }
            i++;
        } else if (r[i] == '[') {
            i = scanfilter_regex_class_end(r, len, i) - 1;
        } else if (r[i] == '|') {
            *alt = TRUE;
        } else if (r[i] == '^') {
            return TRUE;
        } else if (r[i] == '(' && i + 2 < len && r[i + 1] == '?' &&
                   r[i + 2] == '<' && i + 3 < len &&
                   (r[i + 3] == '=' || r[i + 3] == '!')) {
            return TRUE;
        }
    }
    return FALSE;
}

static gboolean
scanfilter_regex_ok(const uint8_t *r, size_t len)
{
    gboolean alt;

    if (len > 0 && r[0] == '^') {
        /* a leading anchor pins the match to the start of the logical
         * key; alternation could carry it into one branch only */
        return !scanfilter_regex_looks_back(r, len, 1, &alt) && !alt;
    }
    return !scanfilter_regex_looks_back(r, len, 0, &alt);
}

/* A walk checking the leaves the rewrite must handle. */
struct scanfilter_check {
    const struct scanfilter *f;
    GError *error; /* the first leaf that cannot be */
};

static gboolean
scanfilter_check_leaf(struct filter_node *n, guint depth, gpointer data)
{
    struct scanfilter_check *ck = data;
    const struct scanfilter *f = ck->f;
    struct filter_params p;
    GError **error = &ck->error;

    if (n->kind != FILTER_NODE_LEAF || n->type != FILTER_TYPE_ROW ||
        !filter_leaf_params(n, &p, NULL)) {
        return TRUE;
    }
    if (p.cmp.type == FILTER_CMP_REGEX &&
        !scanfilter_regex_ok(p.cmp.value, p.cmp.len)) {
        g_set_error(error, SCANFILTER_ERROR, 0,
                    "hbase-salt-proxy: RowFilter regexstring:%.*s cannot be "
                    "applied exactly to a salted table: only a leading ^ is "
                    "supported as an anchor, without |, \\b, \\B, \\A, \\G "
                    "or lookbehind",
                    (int)MIN(p.cmp.len, 200), (const char *)p.cmp.value);
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
    if ((p.cmp.type == FILTER_CMP_REGEX ||
         p.cmp.type == FILTER_CMP_SUBSTRING) &&
        !salt_ascii(f->salt)) {
        /* a salt byte over 0x7f is no character a Java regex can name */
        g_set_error(error, SCANFILTER_ERROR, 0,
                    "hbase-salt-proxy: RowFilter regexstring:/substring: "
                    "on a salted table needs salts below 0x80: %s",
                    f->salt->mapping == SALT_MAPPING_XXH3
                        ? "use salt_format hex or decimal, or at most 128 "
                          "buckets"
                        : "this table's salt_mapping writes salt bytes "
                          "over 0x7f; use a BinaryComparator or a prefix");
        return FALSE;
    }
    if ((p.cmp.type == FILTER_CMP_REGEX ||
         p.cmp.type == FILTER_CMP_SUBSTRING) &&
        f->salt->sep_len > 0) {
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
        if (p.type == FILTER_TYPE_ROW &&
            (p.cmp.type == FILTER_CMP_BINARY ||
             p.cmp.type == FILTER_CMP_BINARY_PREFIX)) {
            if (f->reversed) {
                return p.op == FILTER_OP_GREATER ||
                       p.op == FILTER_OP_GREATER_OR_EQUAL;
            }
            return p.op == FILTER_OP_LESS || p.op == FILTER_OP_LESS_OR_EQUAL;
        }
        return FALSE;
    default: return FALSE;
    }
}

/*
 * Whether filterRow of n can drop a row: *strong when it can drop one
 * whose key n let through (SingleColumnValueFilter, SKIP, ...), *weak
 * when it can return TRUE at all (RowFilter and PrefixFilter latch TRUE
 * once they refused the key; inside an OR a sibling may still have let
 * the key through).  Mirrors FilterList's filterRow: AND short-circuits
 * on the first TRUE, OR is TRUE only when every child is.
 */
static void
scanfilter_row_drop(const struct filter_node *n, gboolean *strong,
                    gboolean *weak)
{
    gboolean s, w, all_weak = TRUE, any_strong = FALSE, any_weak = FALSE;

    switch (n->kind) {
    case FILTER_NODE_LEAF:
        /* a custom filter (UNKNOWN) may drop a row in filterRow */
        *strong = n->type == FILTER_TYPE_SINGLE_COLUMN_VALUE ||
                  n->type == FILTER_TYPE_SINGLE_COLUMN_VALUE_EXCLUDE ||
                  n->type == FILTER_TYPE_UNKNOWN;
        *weak = *strong || n->type == FILTER_TYPE_ROW ||
                n->type == FILTER_TYPE_PREFIX;
        return;
    case FILTER_NODE_SKIP: *strong = *weak = TRUE; return;
    case FILTER_NODE_WHILE:
        scanfilter_row_drop(n->children[0], strong, weak);
        return;
    case FILTER_NODE_AND:
    case FILTER_NODE_OR:
        for (guint i = 0; i < n->nchildren; i++) {
            scanfilter_row_drop(n->children[i], &s, &w);
            any_strong = any_strong || s;
            any_weak = any_weak || w;
            all_weak = all_weak && w;
        }
        if (n->kind == FILTER_NODE_AND) {
            *strong = any_strong;
            *weak = any_weak;
        } else {
            *strong = all_weak && any_strong;
            *weak = all_weak;
        }
        return;
    default: *strong = *weak = TRUE; return;
    }
}

/*
 * A PageFilter counts a row in filterRow before the AND asks the filters
 * after it, so a row one of them then drops is counted but not returned:
 * the scan ends after pageSize counted rows, fewer returned.  Per bucket
 * each bucket counts its own dropped rows and the merged result is not
 * the scan's.  Filters before the PageFilter are fine (AND stops at the
 * first that drops).  Walks the top-level AND chain in filterRow order.
 */
static gboolean
scanfilter_page_then_drop(const struct filter_node *n, gboolean *seen_page)
{
    gboolean strong, weak;

    if (n->kind == FILTER_NODE_AND) {
        for (guint i = 0; i < n->nchildren; i++) {
            if (scanfilter_page_then_drop(n->children[i], seen_page)) {
                return TRUE;
            }
        }
        return FALSE;
    }
    if (n->kind == FILTER_NODE_LEAF && n->type == FILTER_TYPE_PAGE) {
        *seen_page = TRUE;
        return FALSE;
    }
    if (!*seen_page) {
        return FALSE;
    }
    scanfilter_row_drop(n, &strong, &weak);
    return strong;
}

/* Whether filterAllRemaining of n can ever turn TRUE. */
static gboolean
scanfilter_can_end(const struct filter_node *n)
{
    switch (n->kind) {
    case FILTER_NODE_LEAF:
        return n->type == FILTER_TYPE_PREFIX ||
               n->type == FILTER_TYPE_INCLUSIVE_STOP ||
               n->type == FILTER_TYPE_PAGE ||
               n->type == FILTER_TYPE_COLUMN_COUNT_GET;
    case FILTER_NODE_AND:
        for (guint i = 0; i < n->nchildren; i++) {
            if (scanfilter_can_end(n->children[i])) {
                return TRUE;
            }
        }
        return FALSE;
    case FILTER_NODE_OR:
        for (guint i = 0; i < n->nchildren; i++) {
            if (!scanfilter_can_end(n->children[i])) {
                return FALSE;
            }
        }
        return n->nchildren > 0;
    case FILTER_NODE_WHILE: return TRUE;
    default: return FALSE; /* SkipFilter does not delegate it */
    }
}

/*
 * Whether n can end the whole scan at a row that depends on the row's
 * cells rather than its key: ColumnCountGetFilter's filterAllRemaining
 * turns TRUE inside the first row with more columns than its limit, and
 * the scan stops there ("unsuitable as a Scan filter", says HBase).  Each
 * bucket would stop at its own such row, not the scan's.
 */
static gboolean
scanfilter_cell_end(const struct filter_node *n)
{
    gboolean any = FALSE;

    switch (n->kind) {
    case FILTER_NODE_LEAF: return n->type == FILTER_TYPE_COLUMN_COUNT_GET;
    case FILTER_NODE_AND:
    case FILTER_NODE_WHILE:
        for (guint i = 0; i < n->nchildren; i++) {
            any = any || scanfilter_cell_end(n->children[i]);
        }
        return any;
    case FILTER_NODE_OR:
        for (guint i = 0; i < n->nchildren; i++) {
            any = any || scanfilter_cell_end(n->children[i]);
        }
        return any && scanfilter_can_end(n);
    default: return FALSE;
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
    if (n->kind == FILTER_NODE_WHILE && !top) {
        /* a WHILE ends where its row first misses; under OR or SKIP the
         * scan goes on, and the row where it ended passes the OR unlike
         * the rows after it: each bucket has such a row of its own */
        f->multi_why = "hbase-salt-proxy: WHILE inside OR or SKIP cannot be "
                       "applied across salt buckets (each bucket would end "
                       "it at its own first miss); use WHILE at the top "
                       "level or in a top-level AND, or narrow the scan to "
                       "one bucket";
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
    if (p.type == FILTER_TYPE_PAGE && p.limit >= 0 &&
        (f->page_limit < 0 || p.limit < f->page_limit)) {
        f->page_limit = p.limit;
    }
    if (p.type == FILTER_TYPE_PREFIX && !f->single) {
        f->single = salt_prefix_bucket(f->salt, p.bytes.data, p.bytes.len,
                                       &f->single_bucket);
    }
}

static uint8_t *scanfilter_rewrite_pb(const struct scanfilter *f,
                                      uint32_t bucket, size_t *len,
                                      GError **error);

static struct scanfilter *
scanfilter_alloc(const uint8_t *text, size_t len, const struct salt_table *t,
                 gboolean reversed)
{
    struct scanfilter *f = g_new0(struct scanfilter, 1);

    f->salt = t;
    f->reversed = reversed;
    f->page_limit = -1;
    f->text = g_byte_array_new();
    g_byte_array_append(f->text, text, (guint)len);
    f->out = g_byte_array_new();
    return f;
}

/* Checks and analyses f->tree; FALSE (error set) when it is refused. */
static gboolean
scanfilter_analyse(struct scanfilter *f, GError **error)
{
    struct scanfilter_check ck = { f, NULL };

    filter_node_walk(f->tree, scanfilter_check_leaf, &ck);
    if (ck.error != NULL) {
        g_propagate_error(error, ck.error);
        return FALSE;
    }
    scanfilter_top_level(f, f->tree);
    scanfilter_check_multi(f, f->tree, TRUE);
    if (f->multi_why == NULL && scanfilter_cell_end(f->tree)) {
        f->multi_why = "hbase-salt-proxy: ColumnCountGetFilter ends the "
                       "scan at the first row with more columns than its "
                       "limit, which is not monotonic in the row key: it "
                       "cannot be applied across salt buckets (each bucket "
                       "would stop at its own such row); narrow the scan "
                       "to one bucket or use a get";
    }
    if (f->multi_why == NULL) {
        gboolean seen_page = FALSE;

        if (scanfilter_page_then_drop(f->tree, &seen_page)) {
            f->multi_why = "hbase-salt-proxy: PageFilter followed in its "
                           "AND by a filter that can drop a row after the "
                           "page counted it (SingleColumnValueFilter, SKIP) "
                           "cannot be applied across salt buckets (each "
                           "bucket would count its own dropped rows); put "
                           "the PageFilter last in the AND";
        }
    }
    return TRUE;
}

/* Whether name is one of the custom filters the servers register. */
static gboolean
scanfilter_is_custom(const char *const *custom, const uint8_t *name,
                     size_t len)
{
    for (; custom != NULL && *custom != NULL; custom++) {
        if (strlen(*custom) == len && memcmp(*custom, name, len) == 0) {
            return TRUE;
        }
    }
    return FALSE;
}

struct scanfilter_known {
    const char *const *custom;
    GError *error; /* the first leaf refused */
};

/*
 * Every leaf a filter HBase builds in, with arguments it accepts, or a
 * declared custom filter.  Any other name may be a filter the servers
 * register that reads the row key: sent to every bucket as written it
 * would compare salted keys with logical ones and quietly match nothing.
 */
static gboolean
scanfilter_known_leaf(struct filter_node *n, guint depth, gpointer data)
{
    struct scanfilter_known *k = data;
    GError *inner = NULL;
    g_autofree char *name = NULL;

    if (n->kind != FILTER_NODE_LEAF) {
        return TRUE;
    }
    if (n->type != FILTER_TYPE_UNKNOWN) {
        /* HBase's own message for arguments it refuses */
        if (!filter_leaf_params(n, NULL, &inner)) {
            g_propagate_error(&k->error, inner);
            return FALSE;
        }
        return TRUE;
    }
    if (scanfilter_is_custom(k->custom, n->name, n->name_len)) {
        return TRUE;
    }
    name = g_strescape((const char *)n->name, NULL);
    /* short enough for a client's error text (CODEC_ERROR_TEXT) */
    g_set_error(&k->error, SCANFILTER_ERROR, 0,
                "hbase-salt-proxy: unknown filter %.40s refused on a salted "
                "table (it could read row keys); if the servers register it "
                "and it reads no row key, declare it in [backend] "
                "custom_filters",
                name);
    return FALSE;
}

struct scanfilter *
scanfilter_new(const uint8_t *text, size_t len, const struct salt_table *t,
               gboolean reversed, const char *const *custom, GError **error)
{
    struct scanfilter *f = scanfilter_alloc(text, len, t, reversed);
    struct scanfilter_known k = { custom, NULL };
    GError *inner = NULL;

    /*
     * Never sent unrewritten: a string the parser refuses is refused
     * (with ParseFilter's own message, as HBase would refuse it; beyond
     * the parser's caps, where HBase might accept it, with ours), and so
     * is a name it does not know, unless declared.
     */
    f->tree = filter_parse(text, len, FILTER_PARSE_DEFAULT, &inner);
    if (f->tree == NULL) {
        if (inner == NULL) {
            g_set_error(error, SCANFILTER_ERROR, 0,
                        "hbase-salt-proxy: the filter string does not parse");
        } else if (g_error_matches(inner, FILTER_ERROR, FILTER_ERROR_LIMIT)) {
            g_set_error(error, SCANFILTER_ERROR, 0,
                        "hbase-salt-proxy: a filter string on a salted "
                        "table must be rewritten for each salt bucket, and "
                        "this one is beyond what the proxy parses: %s",
                        inner->message);
            g_error_free(inner);
        } else {
            g_propagate_error(error, inner);
        }
        scanfilter_free(f);
        return NULL;
    }
    filter_node_walk(f->tree, scanfilter_known_leaf, &k);
    if (k.error != NULL) {
        g_propagate_error(error, k.error);
        scanfilter_free(f);
        return NULL;
    }
    if (!scanfilter_analyse(f, error)) {
        scanfilter_free(f);
        return NULL;
    }
    return f;
}

struct scanfilter *
scanfilter_new_pb(const uint8_t *pb, size_t len, const struct salt_table *t,
                  gboolean reversed, const char *const *custom_classes,
                  GError **error)
{
    struct scanfilter *f = scanfilter_alloc(pb, len, t, reversed);
    g_autofree uint8_t *probe = NULL;
    size_t n = 0;

    f->pb = filterpb_decode_custom(pb, len, FILTERPB_MODE_SALT, custom_classes,
                                   error);
    if (f->pb == NULL) {
        scanfilter_free(f);
        return NULL;
    }
    /* leaves that never read the row key have no arguments here: the
     * analysis reads only their types, the writer copies them */
    f->tree = filter_node_copy(filterpb_tree(f->pb));
    if (!scanfilter_analyse(f, error)) {
        scanfilter_free(f);
        return NULL;
    }
    /* every bucket is written the same way: one that fails fails all */
    probe = scanfilter_rewrite_pb(f, 0, &n, error);
    if (probe == NULL) {
        scanfilter_free(f);
        return NULL;
    }
    return f;
}

void
scanfilter_free(struct scanfilter *f)
{
    if (f == NULL) {
        return;
    }
    g_clear_pointer(&f->tree, filter_node_free);
    filterpb_free(f->pb);
    g_byte_array_unref(f->text);
    g_clear_pointer(&f->out, g_byte_array_unref);
    g_free(f);
}

static gboolean
scanfilter_page_leaf(struct filter_node *n, guint depth, gpointer arg)
{
    gboolean *seen = arg;

    if (n->kind == FILTER_NODE_LEAF && n->type == FILTER_TYPE_PAGE) {
        *seen = TRUE;
        return FALSE;
    }
    return TRUE;
}

gboolean
scanfilter_has_page(const struct scanfilter *f)
{
    gboolean seen = FALSE;

    filter_node_walk(f->tree, scanfilter_page_leaf, &seen);
    return seen;
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
        if (p.cmp.type == FILTER_CMP_BINARY ||
            p.cmp.type == FILTER_CMP_BINARY_PREFIX) {
            g_byte_array_append(t, sb->prefix, (guint)sb->plen);
            g_byte_array_append(t, p.cmp.value, (guint)p.cmp.len);
            filter_node_set_comparator(n, 1, p.cmp.type, t->data, t->len);
        } else if (p.cmp.type == FILTER_CMP_REGEX) {
            scanfilter_regex_prefix(sb);
            if (p.cmp.len > 0 && p.cmp.value[0] == '^') {
                g_byte_array_append(t, (const guint8 *)"(?:", 3);
                g_byte_array_append(t, p.cmp.value + 1, (guint)p.cmp.len - 1);
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
    default: break;
    }
    return TRUE;
}

/* A copy of f's tree rewritten for one bucket. */
static struct filter_node *
scanfilter_rewrite(const struct scanfilter *f, uint32_t bucket)
{
    struct scanfilter_bucket sb;
    struct filter_node *copy;

    sb.f = f;
    sb.plen = salt_write_prefix(f->salt, bucket, sb.prefix);
    sb.tmp = g_byte_array_new();
    copy = filter_node_copy(f->tree);
    filter_node_walk(copy, scanfilter_rewrite_leaf, &sb);
    g_byte_array_unref(sb.tmp);
    return copy;
}

static uint8_t *
scanfilter_rewrite_pb(const struct scanfilter *f, uint32_t bucket, size_t *len,
                      GError **error)
{
    g_autoptr(filter_node) copy = scanfilter_rewrite(f, bucket);

    return filterpb_encode(f->pb, copy, len, error);
}

void
scanfilter_lift_page(struct scanfilter *f)
{
    f->lift_page = TRUE;
}

/* The PageFilters scanfilter_top_level finds, given the largest limit. */
static void
scanfilter_lift(struct filter_node *n)
{
    static const char most[] = "9223372036854775807";
    struct filter_params p;

    if (n->kind == FILTER_NODE_AND) {
        for (guint i = 0; i < n->nchildren; i++) {
            scanfilter_lift(n->children[i]);
        }
        return;
    }
    if (n->kind == FILTER_NODE_LEAF && filter_leaf_params(n, &p, NULL) &&
        p.type == FILTER_TYPE_PAGE && p.limit >= 0) {
        filter_node_set_arg(n, 0, FILTER_ARG_BARE, most, strlen(most));
    }
}

/* copy as the client sent its filter (text, or filterBytes) in f->out. */
static const uint8_t *
scanfilter_emit(const struct scanfilter *f, struct filter_node *copy,
                size_t *len)
{
    uint8_t *text;
    size_t n = 0;

    if (f->lift_page) {
        scanfilter_lift(copy);
    }
    g_byte_array_set_size(f->out, 0);
    if (f->pb != NULL) {
        /* scanfilter_new_pb wrote bucket 0: this cannot fail; if it
         * did, no filter at all would be a wrong answer, an empty
         * message an error from HBase */
        text = filterpb_encode(f->pb, copy, &n, NULL);
        if (text != NULL) {
            g_byte_array_append(f->out, text, (guint)n);
            g_free(text);
        }
        *len = f->out->len;
        return f->out->data;
    }
    text = filter_serialize(copy, &n, NULL);
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

const uint8_t *
scanfilter_for_bucket(const struct scanfilter *f, uint32_t bucket, size_t *len)
{
    g_autoptr(filter_node) copy = NULL;

    copy = scanfilter_rewrite(f, bucket);
    return scanfilter_emit(f, copy, len);
}

const uint8_t *
scanfilter_for_legacy(const struct scanfilter *f, size_t *len)
{
    g_autoptr(filter_node) copy = NULL;

    if (!f->lift_page) {
        *len = f->text->len;
        return f->text->data;
    }
    copy = filter_node_copy(f->tree);
    return scanfilter_emit(f, copy, len);
}
