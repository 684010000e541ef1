/* filterpb.c: HBase's protobuf Filter (Thrift2 filterBytes): reader, writer
 * and filter-language form (pure). */
#include "filterpb.h"

#include <string.h>

G_DEFINE_QUARK(filterpb_error_quark, filterpb_error)

/* ---- the protobuf wire format ------------------------------------------- */

/* protobuf-java's InvalidProtocolBufferException texts. */
#define PB_TRUNCATED                                                          \
    "While parsing a protocol message, the input ended unexpectedly in the "  \
    "middle of a field.  This could mean either that the input has been "     \
    "truncated or that an embedded message misreported its own length."
#define PB_BAD_VARINT "CodedInputStream encountered a malformed varint."
#define PB_ZERO_TAG "Protocol message contained an invalid tag (zero)."
#define PB_BAD_WIRE_TYPE "Protocol message tag had invalid wire type."
#define PB_END_GROUP                                                          \
    "Protocol message end-group tag did not match expected tag."
#define PB_NEGATIVE_SIZE                                                      \
    "CodedInputStream encountered an embedded string or message which "       \
    "claimed to have negative size."
#define PB_TOO_DEEP                                                           \
    "Protocol message had too many levels of nesting.  May be malicious.  "   \
    "Use CodedInputStream.setRecursionLimit() to increase the depth limit."
#define PB_GROUP_DEPTH 100 /* CodedInputStream's default recursion limit */

enum {
    PB_WT_VARINT = 0,
    PB_WT_FIXED64 = 1,
    PB_WT_BYTES = 2,
    PB_WT_GROUP_START = 3,
    PB_WT_GROUP_END = 4,
    PB_WT_FIXED32 = 5,
};

typedef struct {
    const uint8_t *data;
    size_t len;
} pb_span;

struct pb_in {
    const uint8_t *p;
    size_t len;
    size_t pos;
};

struct pb_field {
    uint32_t num;
    guint wt;
    uint64_t v; /* varint value */
    pb_span s;  /* length-delimited value */
};

static gboolean
pb_fail(GError **error, const char *msg)
{
    g_set_error_literal(error, FILTERPB_ERROR, FILTERPB_ERROR_INVALID, msg);
    return FALSE;
}

static gboolean
pb_varint(struct pb_in *in, uint64_t *out, GError **error)
{
    uint64_t v = 0;

    /* at most ten bytes; bits past the 64th are dropped, as in Java */
    for (unsigned i = 0; i < 10; i++) {
        uint8_t b;

        if (in->pos >= in->len) {
            return pb_fail(error, PB_TRUNCATED);
        }
        b = in->p[in->pos++];
        v |= (uint64_t)(b & 0x7f) << (7 * i);
        if ((b & 0x80) == 0) {
            *out = v;
            return TRUE;
        }
    }
    return pb_fail(error, PB_BAD_VARINT);
}

static gboolean
pb_skip(struct pb_in *in, size_t n, GError **error)
{
    if (n > in->len - in->pos) {
        return pb_fail(error, PB_TRUNCATED);
    }
    in->pos += n;
    return TRUE;
}

static gboolean pb_value(struct pb_in *in, struct pb_field *f, guint depth,
                         GError **error);

/* Reads a tag; FALSE at the end (no error) or on error (error set). */
static gboolean
pb_tag(struct pb_in *in, struct pb_field *f, GError **error)
{
    uint64_t tag;

    if (in->pos >= in->len) {
        return FALSE;
    }
    if (!pb_varint(in, &tag, error)) {
        return FALSE;
    }
    tag &= 0xffffffffu; /* readRawVarint32 keeps the low 32 bits */
    f->num = (uint32_t)(tag >> 3);
    f->wt = (guint)(tag & 7);
    if (f->num == 0) {
        return pb_fail(error, PB_ZERO_TAG);
    }
    return TRUE;
}

/* Skips a group up to its end tag for field num. */
static gboolean
pb_skip_group(struct pb_in *in, uint32_t num, guint depth, GError **error)
{
    struct pb_field f;
    GError *inner = NULL;

    if (depth >= PB_GROUP_DEPTH) {
        return pb_fail(error, PB_TOO_DEEP);
    }
    for (;;) {
        if (!pb_tag(in, &f, &inner)) {
            if (inner != NULL) {
                g_propagate_error(error, inner);
                return FALSE;
            }
            return pb_fail(error, PB_TRUNCATED);
        }
        if (f.wt == PB_WT_GROUP_END) {
            if (f.num != num) {
                return pb_fail(error, PB_END_GROUP);
            }
            return TRUE;
        }
        if (!pb_value(in, &f, depth + 1, error)) {
            return FALSE;
        }
    }
}

/* Reads (or skips) the value of a field whose tag is in f. */
static gboolean
pb_value(struct pb_in *in, struct pb_field *f, guint depth, GError **error)
{
    uint64_t n;

    switch (f->wt) {
    case PB_WT_VARINT: return pb_varint(in, &f->v, error);
    case PB_WT_FIXED64: return pb_skip(in, 8, error);
    case PB_WT_FIXED32: return pb_skip(in, 4, error);
    case PB_WT_BYTES:
        if (!pb_varint(in, &n, error)) {
            return FALSE;
        }
        if ((int32_t)(uint32_t)n < 0) {
            return pb_fail(error, PB_NEGATIVE_SIZE);
        }
        n = (uint32_t)n;
        if (n > in->len - in->pos) {
            return pb_fail(error, PB_TRUNCATED);
        }
        f->s.data = in->p + in->pos;
        f->s.len = (size_t)n;
        in->pos += (size_t)n;
        return TRUE;
    case PB_WT_GROUP_START: return pb_skip_group(in, f->num, depth, error);
    case PB_WT_GROUP_END:
        /* outside a group: the message ends on a tag it did not open */
        return pb_fail(error, PB_END_GROUP);
    default: return pb_fail(error, PB_BAD_WIRE_TYPE);
    }
}

/* The next field of a message: 1, 0 at its end, -1 on error. */
static int
pb_next(struct pb_in *in, struct pb_field *f, GError **error)
{
    GError *inner = NULL;

    memset(f, 0, sizeof(*f));
    if (!pb_tag(in, f, &inner)) {
        if (inner == NULL) {
            return 0;
        }
        g_propagate_error(error, inner);
        return -1;
    }
    return pb_value(in, f, 0, error) ? 1 : -1;
}

static void
pb_in_init(struct pb_in *in, pb_span s)
{
    in->p = s.data;
    in->len = s.len;
    in->pos = 0;
}

static gboolean
pb_missing(GError **error, const char *fields)
{
    g_set_error(error, FILTERPB_ERROR, FILTERPB_ERROR_INVALID,
                "Message missing required fields: %s", fields);
    return FALSE;
}

/* ---- writing ---------------------------------------------------------- */

static void
pb_put_varint(GByteArray *out, uint64_t v)
{
    uint8_t b[10];
    guint n = 0;

    do {
        b[n] = (uint8_t)(v & 0x7f);
        v >>= 7;
        if (v != 0) {
            b[n] |= 0x80;
        }
        n++;
    } while (v != 0);
    g_byte_array_append(out, b, n);
}

static void
pb_put_tag(GByteArray *out, uint32_t num, guint wt)
{
    pb_put_varint(out, ((uint64_t)num << 3) | wt);
}

static void
pb_put_bytes(GByteArray *out, uint32_t num, const void *data, size_t len)
{
    pb_put_tag(out, num, PB_WT_BYTES);
    pb_put_varint(out, len);
    if (len > 0) {
        g_byte_array_append(out, data, (guint)len);
    }
}

static void
pb_put_str(GByteArray *out, uint32_t num, const char *s)
{
    pb_put_bytes(out, num, s, strlen(s));
}

static void
pb_put_int(GByteArray *out, uint32_t num, int64_t v)
{
    pb_put_tag(out, num, PB_WT_VARINT);
    pb_put_varint(out, (uint64_t)v);
}

/* ---- what HBase knows --------------------------------------------------- */

#define PB_FILTER_PKG "org.apache.hadoop.hbase.filter."

typedef enum {
    PB_KIND_LEAF = 0, /* a filter of the filter language */
    PB_KIND_LIST,     /* FilterList */
    PB_KIND_SKIP,     /* SkipFilter */
    PB_KIND_WHILE,    /* WhileMatchFilter */
    PB_KIND_OTHER,    /* an HBase filter with no filter-language form */
    PB_KIND_CUSTOM,   /* SALT: a declared custom filter class, a leaf of
                         no known type copied as received */
} pb_kind_t;

struct pb_class {
    const char *name; /* after PB_FILTER_PKG */
    pb_kind_t kind;
    filter_type_t type; /* PB_KIND_LEAF */
    gboolean reads_row; /* its meaning depends on the row key */
};

static const struct pb_class pb_classes[] = {
    { "ColumnCountGetFilter", PB_KIND_LEAF, FILTER_TYPE_COLUMN_COUNT_GET,
      FALSE },
    { "ColumnPaginationFilter", PB_KIND_LEAF, FILTER_TYPE_COLUMN_PAGINATION,
      FALSE },
    { "ColumnPrefixFilter", PB_KIND_LEAF, FILTER_TYPE_COLUMN_PREFIX, FALSE },
    { "ColumnRangeFilter", PB_KIND_LEAF, FILTER_TYPE_COLUMN_RANGE, FALSE },
    { "ColumnValueFilter", PB_KIND_LEAF, FILTER_TYPE_COLUMN_VALUE, FALSE },
    { "DependentColumnFilter", PB_KIND_LEAF, FILTER_TYPE_DEPENDENT_COLUMN,
      FALSE },
    { "FamilyFilter", PB_KIND_LEAF, FILTER_TYPE_FAMILY, FALSE },
    { "FirstKeyOnlyFilter", PB_KIND_LEAF, FILTER_TYPE_FIRST_KEY_ONLY, FALSE },
    { "InclusiveStopFilter", PB_KIND_LEAF, FILTER_TYPE_INCLUSIVE_STOP, TRUE },
    { "KeyOnlyFilter", PB_KIND_LEAF, FILTER_TYPE_KEY_ONLY, FALSE },
    { "MultipleColumnPrefixFilter", PB_KIND_LEAF,
      FILTER_TYPE_MULTIPLE_COLUMN_PREFIX, FALSE },
    { "PageFilter", PB_KIND_LEAF, FILTER_TYPE_PAGE, FALSE },
    { "PrefixFilter", PB_KIND_LEAF, FILTER_TYPE_PREFIX, TRUE },
    { "QualifierFilter", PB_KIND_LEAF, FILTER_TYPE_QUALIFIER, FALSE },
    { "RowFilter", PB_KIND_LEAF, FILTER_TYPE_ROW, TRUE },
    { "SingleColumnValueExcludeFilter", PB_KIND_LEAF,
      FILTER_TYPE_SINGLE_COLUMN_VALUE_EXCLUDE, FALSE },
    { "SingleColumnValueFilter", PB_KIND_LEAF, FILTER_TYPE_SINGLE_COLUMN_VALUE,
      FALSE },
    { "TimestampsFilter", PB_KIND_LEAF, FILTER_TYPE_TIMESTAMPS, FALSE },
    { "ValueFilter", PB_KIND_LEAF, FILTER_TYPE_VALUE, FALSE },
    { "FilterList", PB_KIND_LIST, FILTER_TYPE_UNKNOWN, FALSE },
    { "SkipFilter", PB_KIND_SKIP, FILTER_TYPE_UNKNOWN, FALSE },
    { "WhileMatchFilter", PB_KIND_WHILE, FILTER_TYPE_UNKNOWN, FALSE },
    /* HBase has these, the filter language does not */
    { "FuzzyRowFilter", PB_KIND_OTHER, FILTER_TYPE_UNKNOWN, TRUE },
    { "MultiRowRangeFilter", PB_KIND_OTHER, FILTER_TYPE_UNKNOWN, TRUE },
    { "RandomRowFilter", PB_KIND_OTHER, FILTER_TYPE_UNKNOWN, FALSE },
    { "FilterAllFilter", PB_KIND_OTHER, FILTER_TYPE_UNKNOWN, FALSE },
    { "FirstKeyValueMatchingQualifiersFilter", PB_KIND_OTHER,
      FILTER_TYPE_UNKNOWN, FALSE },
    { "FilterWrapper", PB_KIND_OTHER, FILTER_TYPE_UNKNOWN, TRUE },
};

typedef enum {
    PB_CMP_BINARY = FILTER_CMP_BINARY,
    PB_CMP_BINARY_PREFIX = FILTER_CMP_BINARY_PREFIX,
    PB_CMP_REGEX = FILTER_CMP_REGEX,
    PB_CMP_SUBSTRING = FILTER_CMP_SUBSTRING,
    PB_CMP_OTHER,   /* an HBase comparator with no filter-language form */
    PB_CMP_UNKNOWN, /* no HBase comparator */
} pb_cmp_kind_t;

static const struct {
    const char *name;
    pb_cmp_kind_t kind;
} pb_comparators[] = {
    { "BinaryComparator", PB_CMP_BINARY },
    { "BinaryPrefixComparator", PB_CMP_BINARY_PREFIX },
    { "RegexStringComparator", PB_CMP_REGEX },
    { "SubstringComparator", PB_CMP_SUBSTRING },
    { "LongComparator", PB_CMP_OTHER },
    { "BitComparator", PB_CMP_OTHER },
    { "NullComparator", PB_CMP_OTHER },
    { "BigDecimalComparator", PB_CMP_OTHER },
    { "BinaryComponentComparator", PB_CMP_OTHER },
};

static gboolean
pb_is_class(pb_span name, const char *short_name)
{
    size_t pl = strlen(PB_FILTER_PKG), sl = strlen(short_name);

    return name.len == pl + sl && memcmp(name.data, PB_FILTER_PKG, pl) == 0 &&
           memcmp(name.data + pl, short_name, sl) == 0;
}

static const struct pb_class *
pb_class_find(pb_span name)
{
    for (size_t i = 0; i < G_N_ELEMENTS(pb_classes); i++) {
        if (pb_is_class(name, pb_classes[i].name)) {
            return &pb_classes[i];
        }
    }
    return NULL;
}

/* Bytes for a message: printable ASCII as is, the rest \xNN, capped. */
static char *
pb_show(pb_span s)
{
    GString *out = g_string_new(NULL);

    for (size_t i = 0; i < s.len && i < 200; i++) {
        uint8_t c = s.data[i];

        if (c >= 0x20 && c < 0x7f && c != '\\') {
            g_string_append_c(out, (char)c);
        } else {
            g_string_append_printf(out, "\\x%02X", c);
        }
    }
    if (s.len > 200) {
        g_string_append(out, "...");
    }
    return g_string_free(out, FALSE);
}

/* ---- the decoded tree --------------------------------------------------- */

/* What a comparator message holds. */
struct pb_cmp {
    pb_cmp_kind_t kind;
    pb_span name;
    pb_span value;   /* Binary*: comparable.value; substring; pattern */
    int32_t flags;   /* regex */
    pb_span charset; /* regex */
    pb_span engine;  /* regex, when has_engine */
    gboolean has_engine;
};

/* One Filter message, parallel to a node of the filter-language tree. */
struct pb_node {
    pb_kind_t kind;
    const struct pb_class *cls;
    pb_span name;       /* the class name as received */
    pb_span serialized; /* its serialized_filter as received */
    int32_t op;         /* RowFilter: the compare_op received */
    struct pb_cmp cmp;  /* RowFilter: its comparator */
    struct pb_node **kids;
    guint nkids;
};

struct filterpb {
    filterpb_mode_t mode;
    GBytes *bytes; /* the input, which spans point into */
    struct pb_node *root;
    struct filter_node *tree;
};

static void
pb_node_free(struct pb_node *n)
{
    if (n == NULL) {
        return;
    }
    for (guint i = 0; i < n->nkids; i++) {
        pb_node_free(n->kids[i]);
    }
    g_free(n->kids);
    g_free(n);
}

/* State of one decode. */
struct pb_ctx {
    filterpb_mode_t mode;
    char *inexact; /* EXACT: why the first leaf has no string form */
    const char *const *custom; /* SALT: declared custom filter classes */
};

static const struct pb_class pb_custom_class = { "(custom)", PB_KIND_CUSTOM,
                                                 FILTER_TYPE_UNKNOWN, FALSE };

/* A declared custom class: its full Java name is one of c->custom. */
static const struct pb_class *
pb_custom_find(const struct pb_ctx *c, pb_span name)
{
    for (const char *const *k = c->custom; k != NULL && *k != NULL; k++) {
        if (strlen(*k) == name.len && memcmp(*k, name.data, name.len) == 0) {
            return &pb_custom_class;
        }
    }
    return NULL;
}

static void pb_inexact(struct pb_ctx *c, const char *fmt, ...)
    G_GNUC_PRINTF(2, 3);

static void
pb_inexact(struct pb_ctx *c, const char *fmt, ...)
{
    va_list ap;

    if (c->inexact != NULL) {
        return;
    }
    va_start(ap, fmt);
    c->inexact = g_strdup_vprintf(fmt, ap);
    va_end(ap);
}

/* ---- messages ------------------------------------------------------------ */

/* Filter and Comparator: { 1: string name, 2: bytes serialized }. */
static gboolean
pb_read_named(pb_span msg, pb_span *name, pb_span *ser, GError **error)
{
    struct pb_in in;
    struct pb_field f;
    gboolean has_name = FALSE;
    int r;

    pb_in_init(&in, msg);
    ser->data = NULL;
    ser->len = 0;
    while ((r = pb_next(&in, &f, error)) > 0) {
        if (f.wt != PB_WT_BYTES) {
            continue;
        }
        if (f.num == 1) {
            *name = f.s;
            has_name = TRUE;
        } else if (f.num == 2) {
            *ser = f.s;
        }
    }
    if (r < 0) {
        return FALSE;
    }
    return has_name || pb_missing(error, "name");
}

/* CompareType to the filter language's operator; FALSE for other values. */
static gboolean
pb_op(int64_t v, int32_t *out)
{
    if (v < 0 || v > 6) {
        return FALSE;
    }
    *out = (int32_t)v;
    return TRUE;
}

static filter_op_t
pb_filter_op(int32_t op)
{
    static const filter_op_t map[] = {
        FILTER_OP_LESS,      FILTER_OP_LESS_OR_EQUAL,    FILTER_OP_EQUAL,
        FILTER_OP_NOT_EQUAL, FILTER_OP_GREATER_OR_EQUAL, FILTER_OP_GREATER,
        FILTER_OP_NONE,
    };

    return op >= 0 && op < (int32_t)G_N_ELEMENTS(map) ? map[op]
                                                      : FILTER_OP_NONE;
}

/* ByteArrayComparable { 1: bytes value }, merged into *value. */
static gboolean
pb_read_comparable(pb_span msg, pb_span *value, GError **error)
{
    struct pb_in in;
    struct pb_field f;
    int r;

    pb_in_init(&in, msg);
    while ((r = pb_next(&in, &f, error)) > 0) {
        if (f.num == 1 && f.wt == PB_WT_BYTES) {
            *value = f.s;
        }
    }
    return r == 0;
}

/* The comparator whose Comparator message fields are name and ser. */
static gboolean
pb_read_cmp(pb_span name, pb_span ser, struct pb_cmp *cmp, GError **error)
{
    struct pb_in in;
    struct pb_field f;
    gboolean has[4] = { FALSE, FALSE, FALSE, FALSE };
    int r;

    memset(cmp, 0, sizeof(*cmp));
    cmp->name = name;
    cmp->kind = PB_CMP_UNKNOWN;
    for (size_t i = 0; i < G_N_ELEMENTS(pb_comparators); i++) {
        if (pb_is_class(name, pb_comparators[i].name)) {
            cmp->kind = pb_comparators[i].kind;
        }
    }
    if (cmp->kind == PB_CMP_UNKNOWN || cmp->kind == PB_CMP_OTHER) {
        return TRUE; /* the caller decides */
    }
    pb_in_init(&in, ser);
    while ((r = pb_next(&in, &f, error)) > 0) {
        if (f.num < 1 || f.num > 4) {
            continue;
        }
        if (cmp->kind == PB_CMP_REGEX && f.num == 2) {
            if (f.wt == PB_WT_VARINT) {
                cmp->flags = (int32_t)(uint32_t)f.v;
                has[1] = TRUE;
            }
            continue;
        }
        if (f.wt != PB_WT_BYTES) {
            continue;
        }
        switch (cmp->kind) {
        case PB_CMP_BINARY:
        case PB_CMP_BINARY_PREFIX:
            if (f.num == 1) {
                has[0] = TRUE;
                if (!pb_read_comparable(f.s, &cmp->value, error)) {
                    return FALSE;
                }
            }
            break;
        case PB_CMP_SUBSTRING:
            if (f.num == 1) {
                has[0] = TRUE;
                cmp->value = f.s;
            }
            break;
        case PB_CMP_REGEX:
            has[f.num - 1] = TRUE;
            if (f.num == 1) {
                cmp->value = f.s;
            } else if (f.num == 3) {
                cmp->charset = f.s;
            } else if (f.num == 4) {
                cmp->engine = f.s;
            }
            break;
        default: break;
        }
    }
    if (r < 0) {
        return FALSE;
    }
    if (cmp->kind == PB_CMP_REGEX) {
        cmp->has_engine = has[3];
        if (!has[0] || !has[1] || !has[2]) {
            return pb_missing(error, !has[0]   ? "pattern"
                                     : !has[1] ? "pattern_flags"
                                               : "charset");
        }
        if (cmp->has_engine &&
            !(cmp->engine.len == 4 &&
              memcmp(cmp->engine.data, "JAVA", 4) == 0) &&
            !(cmp->engine.len == 4 &&
              memcmp(cmp->engine.data, "JONI", 4) == 0)) {
            return pb_fail(error, "No enum constant for the regex engine");
        }
        if ((cmp->flags & ~0x1ff) != 0) {
            return pb_fail(error, "Unknown regex flag");
        }
        return TRUE;
    }
    if (!has[0]) {
        return pb_missing(error, cmp->kind == PB_CMP_SUBSTRING ? "substr"
                                                               : "comparable");
    }
    return TRUE;
}

/* CompareFilter { 1: CompareType compare_op, 2: Comparator comparator }. */
struct pb_compare {
    gboolean has_op;
    int32_t op;
    gboolean has_cmp;
    gboolean cmp_has_name;
    pb_span cmp_name;
    pb_span cmp_ser;
};

/* A Comparator message, merged into cf. */
static gboolean
pb_merge_comparator(pb_span msg, struct pb_compare *cf, GError **error)
{
    struct pb_in in;
    struct pb_field f;
    int r;

    cf->has_cmp = TRUE;
    pb_in_init(&in, msg);
    while ((r = pb_next(&in, &f, error)) > 0) {
        if (f.wt != PB_WT_BYTES) {
            continue;
        }
        if (f.num == 1) {
            cf->cmp_name = f.s;
            cf->cmp_has_name = TRUE;
        } else if (f.num == 2) {
            cf->cmp_ser = f.s;
        }
    }
    return r == 0;
}

static gboolean
pb_merge_compare(pb_span msg, struct pb_compare *cf, GError **error)
{
    struct pb_in in;
    struct pb_field f;
    int r;

    pb_in_init(&in, msg);
    while ((r = pb_next(&in, &f, error)) > 0) {
        if (f.num == 1 && f.wt == PB_WT_VARINT &&
            pb_op((int64_t)f.v, &cf->op)) {
            cf->has_op = TRUE;
        } else if (f.num == 2 && f.wt == PB_WT_BYTES &&
                   !pb_merge_comparator(f.s, cf, error)) {
            return FALSE;
        }
    }
    return r == 0;
}

/* The comparator of a merged CompareFilter; FALSE on error. */
static gboolean
pb_compare_done(struct pb_compare *cf, gboolean need_cmp, struct pb_cmp *cmp,
                GError **error)
{
    memset(cmp, 0, sizeof(*cmp));
    if (!cf->has_op) {
        return pb_missing(error, "compare_op");
    }
    if (!cf->has_cmp) {
        if (need_cmp) {
            return pb_missing(error, "comparator");
        }
        cmp->kind = PB_CMP_UNKNOWN;
        return TRUE;
    }
    if (!cf->cmp_has_name) {
        return pb_missing(error, "comparator.name");
    }
    return pb_read_cmp(cf->cmp_name, cf->cmp_ser, cmp, error);
}

/* ---- leaves in the filter language ------------------------------------- */

static void
pb_arg_q(struct filter_node *l, pb_span s)
{
    filter_node_add_arg(l, FILTER_ARG_QUOTED, s.data, s.len);
}

static void
pb_arg_bare(struct filter_node *l, const char *s)
{
    filter_node_add_arg(l, FILTER_ARG_BARE, s, strlen(s));
}

static void
pb_arg_int(struct filter_node *l, int64_t v)
{
    char buf[32];

    g_snprintf(buf, sizeof(buf), "%" G_GINT64_FORMAT, v);
    pb_arg_bare(l, buf);
}

static void
pb_arg_bool(struct filter_node *l, gboolean v)
{
    pb_arg_bare(l, v ? "true" : "false");
}

static void
pb_arg_cmp(struct filter_node *l, filter_cmp_type_t type, const uint8_t *v,
           size_t len)
{
    filter_node_add_arg(l, FILTER_ARG_QUOTED, "", 0);
    filter_node_set_comparator(l, l->nargs - 1, type, v, len);
}

static gboolean
pb_ascii_ieq(pb_span s, const char *lit)
{
    return s.len == strlen(lit) &&
           g_ascii_strncasecmp((const char *)s.data, lit, s.len) == 0;
}

/* Inline flags a Java regex (and PCRE) reads the same: i, m, s, x. */
static gboolean
pb_regex_inline(int32_t flags, GString *out)
{
    static const struct {
        int32_t flag;
        char c;
    } letters[] = {
        { FILTERPB_RE_CASE_INSENSITIVE, 'i' },
        { FILTERPB_RE_MULTILINE, 'm' },
        { FILTERPB_RE_DOTALL, 's' },
        { FILTERPB_RE_COMMENTS, 'x' },
    };
    int32_t known = 0;
    GString *on = g_string_new(NULL), *off = g_string_new(NULL);

    for (size_t i = 0; i < G_N_ELEMENTS(letters); i++) {
        known |= letters[i].flag;
        g_string_append_c((flags & letters[i].flag) ? on : off, letters[i].c);
    }
    if ((flags & ~known) != 0) {
        g_string_free(on, TRUE);
        g_string_free(off, TRUE);
        return FALSE;
    }
    /* the filter language's regexstring: has DOTALL and nothing else */
    if (flags != FILTERPB_RE_DOTALL) {
        g_string_append(out, "(?");
        g_string_append(out, on->str);
        if ((flags & FILTERPB_RE_DOTALL) == 0) {
            g_string_append(out, "-s");
        }
        g_string_append(out, ")");
    }
    g_string_free(on, TRUE);
    g_string_free(off, TRUE);
    return TRUE;
}

/*
 * Appends the compare arguments (op, 'type:value') of an exact form, or
 * records why there is none.  what names the filter for the message.
 */
static gboolean
pb_arg_compare(struct pb_ctx *c, struct filter_node *l, int32_t op,
               const struct pb_cmp *cmp, const char *what)
{
    filter_op_t fop = pb_filter_op(op);
    g_autofree char *cname = pb_show(cmp->name);

    if (fop == FILTER_OP_NONE) {
        pb_inexact(c, "%s with compare_op NO_OP has no filter-language form",
                   what);
        return FALSE;
    }
    if (cmp->kind == PB_CMP_OTHER || cmp->kind == PB_CMP_UNKNOWN) {
        pb_inexact(c, "%s with comparator %s has no filter-language form",
                   what, cname);
        return FALSE;
    }
    if ((cmp->kind == PB_CMP_REGEX || cmp->kind == PB_CMP_SUBSTRING) &&
        fop != FILTER_OP_EQUAL && fop != FILTER_OP_NOT_EQUAL) {
        pb_inexact(c,
                   "%s with a %s and an operator other than EQUAL or "
                   "NOT_EQUAL has no filter-language form",
                   what, cname);
        return FALSE;
    }
    pb_arg_bare(l, filter_op_symbol(fop));
    if (cmp->kind == PB_CMP_REGEX) {
        GString *pat = g_string_new(NULL);

        if (cmp->has_engine && !pb_ascii_ieq(cmp->engine, "JAVA")) {
            pb_inexact(c, "%s with a JONI regex has no filter-language form",
                       what);
            g_string_free(pat, TRUE);
            return FALSE;
        }
        if (!(cmp->charset.len == 0 || pb_ascii_ieq(cmp->charset, "UTF-8") ||
              pb_ascii_ieq(cmp->charset, "UTF8"))) {
            pb_inexact(c,
                       "%s with a regex over a charset other than UTF-8 "
                       "has no filter-language form",
                       what);
            g_string_free(pat, TRUE);
            return FALSE;
        }
        if (!pb_regex_inline(cmp->flags, pat)) {
            pb_inexact(c,
                       "%s with regex flags 0x%x has no filter-language "
                       "form",
                       what, (unsigned)cmp->flags);
            g_string_free(pat, TRUE);
            return FALSE;
        }
        g_string_append_len(pat, (const char *)cmp->value.data,
                            (gssize)cmp->value.len);
        pb_arg_cmp(l, FILTER_CMP_REGEX, (const uint8_t *)pat->str, pat->len);
        g_string_free(pat, TRUE);
        return TRUE;
    }
    pb_arg_cmp(l, (filter_cmp_type_t)cmp->kind, cmp->value.data,
               cmp->value.len);
    return TRUE;
}

/* Java charsets in which a row decodes as its prefix's ASCII followed by
 * the rest decoded alone. */
static gboolean
pb_charset_splits(pb_span cs)
{
    static const char *const ok[] = {
        "UTF-8",     "UTF8",   "ISO-8859-1", "ISO8859_1",
        "ISO8859-1", "latin1", "US-ASCII",   "ASCII",
    };

    if (cs.len == 0) {
        return TRUE;
    }
    for (size_t i = 0; i < G_N_ELEMENTS(ok); i++) {
        if (pb_ascii_ieq(cs, ok[i])) {
            return TRUE;
        }
    }
    return FALSE;
}

/* Regex flags the per-bucket rewrite keeps exact: none changes what the
 * salt prefix matches, or where ^ and the wrapped pattern can match. */
#define PB_SALT_FLAGS                                                         \
    (FILTERPB_RE_UNIX_LINES | FILTERPB_RE_CASE_INSENSITIVE |                  \
     FILTERPB_RE_DOTALL | FILTERPB_RE_UNICODE_CASE |                          \
     FILTERPB_RE_UNICODE_CHARACTER_CLASS)

static gboolean pb_refuse(GError **error, const char *fmt, ...)
    G_GNUC_PRINTF(2, 3);

static gboolean
pb_refuse(GError **error, const char *fmt, ...)
{
    va_list ap;
    g_autofree char *msg = NULL;

    va_start(ap, fmt);
    msg = g_strdup_vprintf(fmt, ap);
    va_end(ap);
    g_set_error(error, FILTERPB_ERROR, FILTERPB_ERROR_UNSUPPORTED,
                "hbase-salt-proxy: %s cannot be applied exactly to a salted "
                "table",
                msg);
    return FALSE;
}

/* RowFilter for the rewrite: the form scanfilter rewrites. */
static gboolean
pb_row_for_salt(struct filter_node *l, const struct pb_node *n, GError **error)
{
    const struct pb_cmp *cmp = &n->cmp;
    filter_op_t fop = pb_filter_op(n->op);
    g_autofree char *cname = pb_show(cmp->name);

    if (fop == FILTER_OP_NONE) {
        return pb_refuse(error, "filterBytes RowFilter with NO_OP");
    }
    switch (cmp->kind) {
    case PB_CMP_BINARY:
    case PB_CMP_BINARY_PREFIX:
        pb_arg_bare(l, filter_op_symbol(fop));
        pb_arg_cmp(l, (filter_cmp_type_t)cmp->kind, cmp->value.data,
                   cmp->value.len);
        return TRUE;
    case PB_CMP_REGEX:
        if (cmp->has_engine && !pb_ascii_ieq(cmp->engine, "JAVA")) {
            return pb_refuse(error, "filterBytes RowFilter with a JONI regex");
        }
        if ((cmp->flags & ~PB_SALT_FLAGS) != 0) {
            return pb_refuse(error,
                             "filterBytes RowFilter regex with flags "
                             "0x%x (COMMENTS, MULTILINE, LITERAL or "
                             "CANON_EQ)",
                             (unsigned)cmp->flags);
        }
        if (!pb_charset_splits(cmp->charset)) {
            return pb_refuse(error, "filterBytes RowFilter regex over a "
                                    "charset other than UTF-8, ISO-8859-1 or "
                                    "US-ASCII");
        }
        if (!g_utf8_validate_len((const char *)cmp->value.data, cmp->value.len,
                                 NULL)) {
            return pb_refuse(error, "filterBytes RowFilter regex that is "
                                    "not UTF-8");
        }
        break;
    case PB_CMP_SUBSTRING: break;
    default:
        return pb_refuse(error, "filterBytes RowFilter with comparator %s",
                         cname);
    }
    /* match or not: the operator is kept aside, the rewrite sees '=' */
    pb_arg_bare(l, "=");
    pb_arg_cmp(l, (filter_cmp_type_t)cmp->kind, cmp->value.data,
               cmp->value.len);
    return TRUE;
}

/* ---- filters -------------------------------------------------------- */

/* The value fields of a filter's message, read once for every class. */
struct pb_fields {
    pb_span b[7]; /* bytes by field number (last wins) */
    gboolean has_b[7];
    int64_t v[7]; /* varints by field number (last wins) */
    gboolean has_v[7];
    GArray *stamps;      /* TimestampsFilter: int64 */
    GPtrArray *repeated; /* field 1 or 2 bytes, in order (prefixes, filters) */
    struct pb_compare
        cf; /* the CompareFilter found where the class keeps it */
};

static void
pb_fields_clear(struct pb_fields *p)
{
    g_clear_pointer(&p->stamps, g_array_unref);
    g_clear_pointer(&p->repeated, g_ptr_array_unref);
}

static gboolean
pb_packed_stamps(pb_span s, GArray *out, GError **error)
{
    struct pb_in in;

    pb_in_init(&in, s);
    while (in.pos < in.len) {
        uint64_t v;

        if (!pb_varint(&in, &v, error)) {
            return FALSE;
        }
        g_array_append_val(out, v);
    }
    return TRUE;
}

/* Where each class keeps what: the field numbers of its message. */
static gboolean
pb_read_fields(const struct pb_class *cls, pb_span msg, struct pb_fields *p,
               GError **error)
{
    struct pb_in in;
    struct pb_field f;
    int r;

    memset(p, 0, sizeof(*p));
    pb_in_init(&in, msg);
    while ((r = pb_next(&in, &f, error)) > 0) {
        gboolean compare_here = FALSE, scvf_here = FALSE;

        if (f.num >= 7) {
            continue;
        }
        switch (cls->type) {
        case FILTER_TYPE_ROW:
        case FILTER_TYPE_FAMILY:
        case FILTER_TYPE_QUALIFIER:
        case FILTER_TYPE_VALUE:
        case FILTER_TYPE_DEPENDENT_COLUMN: compare_here = f.num == 1; break;
        case FILTER_TYPE_SINGLE_COLUMN_VALUE_EXCLUDE:
            scvf_here = f.num == 1;
            break;
        case FILTER_TYPE_TIMESTAMPS:
            if (f.num == 1) {
                if (p->stamps == NULL) {
                    p->stamps = g_array_new(FALSE, FALSE, sizeof(uint64_t));
                }
                if (f.wt == PB_WT_VARINT) {
                    g_array_append_val(p->stamps, f.v);
                } else if (f.wt == PB_WT_BYTES &&
                           !pb_packed_stamps(f.s, p->stamps, error)) {
                    return FALSE;
                }
                continue;
            }
            break;
        case FILTER_TYPE_MULTIPLE_COLUMN_PREFIX:
            if (f.num == 1 && f.wt == PB_WT_BYTES) {
                if (p->repeated == NULL) {
                    p->repeated = g_ptr_array_new_with_free_func(g_free);
                }
                g_ptr_array_add(p->repeated, g_memdup2(&f.s, sizeof(f.s)));
                continue;
            }
            break;
        default:
            if (((cls->kind == PB_KIND_LIST && f.num == 2) ||
                 ((cls->kind == PB_KIND_SKIP || cls->kind == PB_KIND_WHILE) &&
                  f.num == 1)) &&
                f.wt == PB_WT_BYTES) {
                if (p->repeated == NULL) {
                    p->repeated = g_ptr_array_new_with_free_func(g_free);
                }
                g_ptr_array_add(p->repeated, g_memdup2(&f.s, sizeof(f.s)));
                continue;
            }
            break;
        }
        if (compare_here && f.wt == PB_WT_BYTES) {
            p->has_b[f.num] = TRUE;
            if (!pb_merge_compare(f.s, &p->cf, error)) {
                return FALSE;
            }
            continue;
        }
        if (scvf_here && f.wt == PB_WT_BYTES) {
            /* SingleColumnValueExcludeFilter { 1: SingleColumnValueFilter } */
            struct pb_in in2;
            struct pb_field g;
            int r2;

            p->has_b[1] = TRUE;
            pb_in_init(&in2, f.s);
            while ((r2 = pb_next(&in2, &g, error)) > 0) {
                if (g.num >= 7) {
                    continue;
                }
                if (g.num == 4 && g.wt == PB_WT_BYTES) {
                    if (!pb_merge_comparator(g.s, &p->cf, error)) {
                        return FALSE;
                    }
                } else if (g.num == 3 && g.wt == PB_WT_VARINT) {
                    if (pb_op((int64_t)g.v, &p->cf.op)) {
                        p->cf.has_op = TRUE;
                    }
                } else if (g.wt == PB_WT_BYTES) {
                    p->b[g.num] = g.s;
                    p->has_b[g.num] = TRUE;
                } else if (g.wt == PB_WT_VARINT) {
                    p->v[g.num] = (int64_t)g.v;
                    p->has_v[g.num] = TRUE;
                }
            }
            if (r2 < 0) {
                return FALSE;
            }
            continue;
        }
        if ((cls->type == FILTER_TYPE_SINGLE_COLUMN_VALUE ||
             cls->type == FILTER_TYPE_COLUMN_VALUE) &&
            f.num == 4 && f.wt == PB_WT_BYTES) {
            if (!pb_merge_comparator(f.s, &p->cf, error)) {
                return FALSE;
            }
            continue;
        }
        if ((cls->type == FILTER_TYPE_SINGLE_COLUMN_VALUE ||
             cls->type == FILTER_TYPE_COLUMN_VALUE) &&
            f.num == 3 && f.wt == PB_WT_VARINT) {
            if (pb_op((int64_t)f.v, &p->cf.op)) {
                p->cf.has_op = TRUE;
            }
            continue;
        }
        if (cls->kind == PB_KIND_LIST && f.num == 1) {
            /* Operator: MUST_PASS_ALL = 1, MUST_PASS_ONE = 2 */
            if (f.wt == PB_WT_VARINT && (f.v == 1 || f.v == 2)) {
                p->v[1] = (int64_t)f.v;
                p->has_v[1] = TRUE;
            }
            continue;
        }
        if (f.wt == PB_WT_BYTES) {
            p->b[f.num] = f.s;
            p->has_b[f.num] = TRUE;
        } else if (f.wt == PB_WT_VARINT) {
            p->v[f.num] = (int64_t)f.v;
            p->has_v[f.num] = TRUE;
        }
    }
    return r == 0;
}

static gboolean
pb_nonneg(int64_t v, const char *what, GError **error)
{
    if (v < 0) {
        g_set_error(error, FILTERPB_ERROR, FILTERPB_ERROR_INVALID,
                    "%s must be positive %" G_GINT64_FORMAT, what, v);
        return FALSE;
    }
    return TRUE;
}

static int64_t
pb_i32(int64_t v)
{
    return (int32_t)(uint32_t)(uint64_t)v;
}

/*
 * A filter of the filter language: checks what its parseFrom checks and
 * writes the leaf (exactly, or as the rewrite wants it, or typed only).
 */
static gboolean
pb_leaf(struct pb_ctx *c, struct pb_node *n, struct filter_node *l,
        gboolean *exact_out, GError **error)
{
    const struct pb_class *cls = n->cls;
    struct pb_fields p;
    struct pb_cmp cmp;
    gboolean ok = FALSE, exact = TRUE;
    const char *what = cls->name;

    if (!pb_read_fields(cls, n->serialized, &p, error)) {
        goto out;
    }
    switch (cls->type) {
    case FILTER_TYPE_KEY_ONLY:
        if (!p.has_v[1]) {
            pb_missing(error, "len_as_val");
            goto out;
        }
        pb_arg_bool(l, p.v[1] != 0);
        break;
    case FILTER_TYPE_FIRST_KEY_ONLY: break;
    case FILTER_TYPE_PREFIX:
        /* absent: a null prefix, which lets every row through, as '' */
        pb_arg_q(l, p.b[1]);
        break;
    case FILTER_TYPE_INCLUSIVE_STOP:
        if (!p.has_b[1]) {
            /* a null stop row fails on the first row HBase compares */
            if (c->mode == FILTERPB_MODE_SALT) {
                pb_refuse(error, "filterBytes InclusiveStopFilter without "
                                 "stop_row_key");
                goto out;
            }
            pb_inexact(c, "InclusiveStopFilter without stop_row_key has no "
                          "filter-language form");
            exact = FALSE;
            break;
        }
        pb_arg_q(l, p.b[1]);
        break;
    case FILTER_TYPE_COLUMN_PREFIX:
        if (!p.has_b[1]) {
            pb_missing(error, "prefix");
            goto out;
        }
        pb_arg_q(l, p.b[1]);
        break;
    case FILTER_TYPE_MULTIPLE_COLUMN_PREFIX: {
        /* a sorted set: duplicates collapse */
        guint np = p.repeated != NULL ? p.repeated->len : 0;
        g_autoptr(GPtrArray) seen = g_ptr_array_new();

        for (guint i = 0; i < np; i++) {
            const pb_span *s = g_ptr_array_index(p.repeated, i);
            gboolean dup = FALSE;

            for (guint j = 0; j < seen->len && !dup; j++) {
                const pb_span *t = g_ptr_array_index(seen, j);

                dup = t->len == s->len &&
                      (s->len == 0 || memcmp(t->data, s->data, s->len) == 0);
            }
            if (!dup) {
                g_ptr_array_add(seen, (gpointer)s);
                pb_arg_q(l, *s);
            }
        }
        break;
    }
    case FILTER_TYPE_COLUMN_COUNT_GET:
        if (!p.has_v[1]) {
            pb_missing(error, "limit");
            goto out;
        }
        if (!pb_nonneg(pb_i32(p.v[1]), "limit", error)) {
            goto out;
        }
        pb_arg_int(l, pb_i32(p.v[1]));
        break;
    case FILTER_TYPE_PAGE:
        if (!p.has_v[1]) {
            pb_missing(error, "page_size");
            goto out;
        }
        if (!pb_nonneg(p.v[1], "page size", error)) {
            goto out;
        }
        pb_arg_int(l, p.v[1]);
        break;
    case FILTER_TYPE_COLUMN_PAGINATION:
        if (!p.has_v[1]) {
            pb_missing(error, "limit");
            goto out;
        }
        if (!pb_nonneg(pb_i32(p.v[1]), "limit", error)) {
            goto out;
        }
        if (p.has_b[3]) {
            pb_inexact(c, "ColumnPaginationFilter with column_offset has no "
                          "filter-language form");
            exact = FALSE;
            break;
        }
        if (!pb_nonneg(pb_i32(p.v[2]), "offset", error)) {
            goto out;
        }
        pb_arg_int(l, pb_i32(p.v[1]));
        pb_arg_int(l, pb_i32(p.v[2]));
        break;
    case FILTER_TYPE_TIMESTAMPS:
        for (guint i = 0; p.stamps != NULL && i < p.stamps->len; i++) {
            int64_t ts = (int64_t)g_array_index(p.stamps, uint64_t, i);

            if (!pb_nonneg(ts, "timestamp", error)) {
                goto out;
            }
            pb_arg_int(l, ts);
        }
        break;
    case FILTER_TYPE_COLUMN_RANGE:
        if ((p.has_b[1] && p.b[1].len == 0) ||
            (p.has_b[3] && p.b[3].len == 0)) {
            /* '' in the filter language means no bound; here it is one */
            pb_inexact(c, "ColumnRangeFilter with an empty bound has no "
                          "filter-language form");
            exact = FALSE;
            break;
        }
        pb_arg_q(l, p.b[1]);
        pb_arg_bool(l, p.v[2] != 0);
        pb_arg_q(l, p.b[3]);
        pb_arg_bool(l, p.v[4] != 0);
        break;
    case FILTER_TYPE_ROW:
    case FILTER_TYPE_FAMILY:
    case FILTER_TYPE_QUALIFIER:
    case FILTER_TYPE_VALUE:
        if (!p.has_b[1]) {
            pb_missing(error, "compare_filter");
            goto out;
        }
        if (!pb_compare_done(&p.cf, FALSE, &cmp, error)) {
            goto out;
        }
        if (cmp.kind == PB_CMP_UNKNOWN && p.cf.has_cmp &&
            c->mode == FILTERPB_MODE_EXACT) {
            g_autofree char *cn = pb_show(cmp.name);

            g_set_error(error, FILTERPB_ERROR, FILTERPB_ERROR_INVALID,
                        "java.lang.ClassNotFoundException: %s", cn);
            goto out;
        }
        if (cls->type == FILTER_TYPE_ROW) {
            n->op = p.cf.op;
            n->cmp = cmp;
            if (c->mode == FILTERPB_MODE_SALT) {
                if (!p.cf.has_cmp) {
                    pb_refuse(error, "filterBytes RowFilter without a "
                                     "comparator");
                    goto out;
                }
                if (!pb_row_for_salt(l, n, error)) {
                    goto out;
                }
                break;
            }
        }
        if (!p.cf.has_cmp) {
            /* a null comparator fails on the first cell HBase compares */
            pb_inexact(c,
                       "%s without a comparator has no filter-language "
                       "form",
                       what);
            exact = FALSE;
            break;
        }
        exact = pb_arg_compare(c, l, p.cf.op, &cmp, what);
        break;
    case FILTER_TYPE_SINGLE_COLUMN_VALUE:
    case FILTER_TYPE_SINGLE_COLUMN_VALUE_EXCLUDE:
        if (cls->type == FILTER_TYPE_SINGLE_COLUMN_VALUE_EXCLUDE &&
            !p.has_b[1]) {
            pb_missing(error, "single_column_value_filter");
            goto out;
        }
        if (!p.cf.has_cmp) {
            pb_missing(error, "comparator");
            goto out;
        }
        if (!pb_compare_done(&p.cf, TRUE, &cmp, error)) {
            goto out;
        }
        if (cmp.kind == PB_CMP_UNKNOWN && c->mode == FILTERPB_MODE_EXACT) {
            g_autofree char *cn = pb_show(cmp.name);

            g_set_error(error, FILTERPB_ERROR, FILTERPB_ERROR_INVALID,
                        "java.lang.ClassNotFoundException: %s", cn);
            goto out;
        }
        pb_arg_q(l, p.b[1]);
        pb_arg_q(l, p.b[2]);
        exact = pb_arg_compare(c, l, p.cf.op, &cmp, what);
        /* absent booleans are false, latest_version_only included */
        pb_arg_bool(l, p.v[5] != 0);
        pb_arg_bool(l, p.v[6] != 0);
        break;
    case FILTER_TYPE_DEPENDENT_COLUMN:
        if (!p.has_b[1]) {
            pb_missing(error, "compare_filter");
            goto out;
        }
        if (!pb_compare_done(&p.cf, FALSE, &cmp, error)) {
            goto out;
        }
        pb_arg_q(l, p.b[2]);
        pb_arg_q(l, p.b[3]);
        pb_arg_bool(l, p.v[4] != 0);
        if (p.cf.op == 6 && !p.cf.has_cmp) {
            break; /* DependentColumnFilter('f', 'q', drop) */
        }
        if (!p.cf.has_cmp) {
            pb_inexact(c, "DependentColumnFilter with an operator and no "
                          "comparator has no filter-language form");
            exact = FALSE;
            break;
        }
        if (cmp.kind == PB_CMP_UNKNOWN && c->mode == FILTERPB_MODE_EXACT) {
            g_autofree char *cn = pb_show(cmp.name);

            g_set_error(error, FILTERPB_ERROR, FILTERPB_ERROR_INVALID,
                        "java.lang.ClassNotFoundException: %s", cn);
            goto out;
        }
        exact = pb_arg_compare(c, l, p.cf.op, &cmp, what);
        break;
    case FILTER_TYPE_COLUMN_VALUE:
        if (!p.has_b[1] || !p.has_b[2] || !p.cf.has_cmp) {
            pb_missing(error, !p.has_b[1]   ? "family"
                              : !p.has_b[2] ? "qualifier"
                                            : "comparator");
            goto out;
        }
        if (!pb_compare_done(&p.cf, TRUE, &cmp, error)) {
            goto out;
        }
        if (cmp.kind == PB_CMP_UNKNOWN && c->mode == FILTERPB_MODE_EXACT) {
            g_autofree char *cn = pb_show(cmp.name);

            g_set_error(error, FILTERPB_ERROR, FILTERPB_ERROR_INVALID,
                        "java.lang.ClassNotFoundException: %s", cn);
            goto out;
        }
        pb_arg_q(l, p.b[1]);
        pb_arg_q(l, p.b[2]);
        exact = pb_arg_compare(c, l, p.cf.op, &cmp, what);
        break;
    default: break;
    }
    if (exact && c->mode == FILTERPB_MODE_EXACT &&
        !filter_leaf_params(l, NULL, NULL)) {
        /* the filter language checks more than parseFrom (e.g. distinct
         * prefixes); what it refuses has no string form */
        pb_inexact(c, "%s as received has no filter-language form", what);
        exact = FALSE;
    }
    if (c->mode == FILTERPB_MODE_SALT && cls->reads_row &&
        !filter_leaf_params(l, NULL, NULL)) {
        /* cannot happen: never let the rewrite skip a row-key leaf */
        pb_refuse(error, "filterBytes %s as received", what);
        goto out;
    }
    *exact_out = exact;
    ok = TRUE;
out:
    pb_fields_clear(&p);
    return ok;
}

/* ---- decoding ---------------------------------------------------------- */

static gboolean pb_decode(struct pb_ctx *c, pb_span name, pb_span ser,
                          guint depth, struct pb_node **out_pb,
                          struct filter_node **out, GError **error);

/*
 * The Filter of a non-repeated message field that came n times: protobuf
 * merges them, which for Filter's two scalar fields is the last name and
 * the last serialized_filter seen over all of them.
 */
static gboolean
pb_merge_filters(GPtrArray *occ, pb_span *name, pb_span *ser, GError **error)
{
    gboolean has_name = FALSE;

    ser->data = NULL;
    ser->len = 0;
    for (guint i = 0; occ != NULL && i < occ->len; i++) {
        const pb_span *m = g_ptr_array_index(occ, i);
        struct pb_in in;
        struct pb_field f;
        int r;

        pb_in_init(&in, *m);
        while ((r = pb_next(&in, &f, error)) > 0) {
            if (f.wt != PB_WT_BYTES) {
                continue;
            }
            if (f.num == 1) {
                *name = f.s;
                has_name = TRUE;
            } else if (f.num == 2) {
                *ser = f.s;
            }
        }
        if (r < 0) {
            return FALSE;
        }
    }
    return has_name || pb_missing(error, "name");
}

/* Lists and wrappers: their children, then the node. */
static gboolean
pb_decode_op(struct pb_ctx *c, struct pb_node *n, guint depth,
             struct filter_node **out, GError **error)
{
    struct pb_fields p;
    struct filter_node *t = NULL, *kt;
    guint nk;
    gboolean ok = FALSE;

    if (!pb_read_fields(n->cls, n->serialized, &p, error)) {
        goto out;
    }
    nk = p.repeated != NULL ? p.repeated->len : 0;
    if (n->kind == PB_KIND_LIST) {
        if (!p.has_v[1]) {
            pb_missing(error, "operator");
            goto out;
        }
        t = filter_node_new_op(p.v[1] == 1 ? FILTER_NODE_AND : FILTER_NODE_OR);
        if (nk == 0) {
            pb_inexact(c, "an empty FilterList has no filter-language form");
        }
        n->kids = g_new0(struct pb_node *, MAX(nk, 1));
        for (guint i = 0; i < nk; i++) {
            const pb_span *m = g_ptr_array_index(p.repeated, i);
            pb_span name, ser;

            if (!pb_read_named(*m, &name, &ser, error) ||
                !pb_decode(c, name, ser, depth + 1, &n->kids[i], &kt, error)) {
                goto out;
            }
            n->nkids++;
            filter_node_add_child(t, kt);
        }
    } else {
        pb_span name, ser;

        if (nk == 0) {
            pb_missing(error, "filter");
            goto out;
        }
        t = filter_node_new_op(n->kind == PB_KIND_SKIP ? FILTER_NODE_SKIP
                                                       : FILTER_NODE_WHILE);
        n->kids = g_new0(struct pb_node *, 1);
        if (!pb_merge_filters(p.repeated, &name, &ser, error) ||
            !pb_decode(c, name, ser, depth + 1, &n->kids[0], &kt, error)) {
            goto out;
        }
        n->nkids = 1;
        filter_node_add_child(t, kt);
    }
    *out = g_steal_pointer(&t);
    ok = TRUE;
out:
    filter_node_free(t);
    pb_fields_clear(&p);
    return ok;
}

/* Decodes the Filter { name, ser } at depth (1: the outer one). */
static gboolean
pb_decode(struct pb_ctx *c, pb_span name, pb_span ser, guint depth,
          struct pb_node **out_pb, struct filter_node **out, GError **error)
{
    struct pb_node *n;
    struct filter_node *t = NULL;
    gboolean exact = TRUE;

    *out_pb = NULL;
    *out = NULL;
    if (depth > FILTERPB_MAX_DEPTH) {
        g_set_error(error, FILTERPB_ERROR, FILTERPB_ERROR_LIMIT,
                    "hbase-salt-proxy: filterBytes nests filters deeper than "
                    "%u",
                    FILTERPB_MAX_DEPTH);
        return FALSE;
    }
    n = g_new0(struct pb_node, 1);
    n->name = name;
    n->serialized = ser;
    n->cls = pb_class_find(name);
    if (n->cls == NULL && c->mode == FILTERPB_MODE_SALT) {
        n->cls = pb_custom_find(c, name);
    }
    if (n->cls == NULL) {
        g_autofree char *shown = pb_show(name);

        if (c->mode == FILTERPB_MODE_SALT) {
            g_set_error(error, FILTERPB_ERROR, FILTERPB_ERROR_UNSUPPORTED,
                        "hbase-salt-proxy: filterBytes names filter class %s, "
                        "which the proxy does not know: it may read the row "
                        "key, so it cannot be applied to a salted table",
                        shown);
        } else {
            g_set_error(error, FILTERPB_ERROR,
                        depth == 1 ? FILTERPB_ERROR_UNKNOWN_CLASS
                                   : FILTERPB_ERROR_INVALID,
                        "java.lang.ClassNotFoundException: %s", shown);
        }
        pb_node_free(n);
        return FALSE;
    }
    n->kind = n->cls->kind;
    switch (n->kind) {
    case PB_KIND_LEAF:
        t = filter_node_new_leaf(n->cls->name, strlen(n->cls->name));
        if (!pb_leaf(c, n, t, &exact, error)) {
            g_prefix_error(error, "%s: ", n->cls->name);
            goto fail;
        }
        if (!exact) {
            /* typed, without arguments: copied as received if at all */
            filter_node_free(t);
            t = filter_node_new_leaf(n->cls->name, strlen(n->cls->name));
        }
        break;
    case PB_KIND_OTHER:
        if (c->mode == FILTERPB_MODE_SALT) {
            pb_refuse(error, "filterBytes %s%s", n->cls->name,
                      n->cls->reads_row ? " (it reads the row key)"
                                        : " (not supported by the proxy)");
            goto fail;
        }
        pb_inexact(c, "%s has no filter-language form", n->cls->name);
        t = filter_node_new_leaf(n->cls->name, strlen(n->cls->name));
        break;
    case PB_KIND_CUSTOM:
        /* named by its class; of no type even when its simple name is a
         * built-in filter's, so the rewrite leaves it alone */
        t = filter_node_new_leaf(name.data, name.len);
        t->type = FILTER_TYPE_UNKNOWN;
        break;
    default: {
        GError *inner = NULL;

        if (!pb_decode_op(c, n, depth, &t, &inner)) {
            if (inner->code == FILTERPB_ERROR_INVALID) {
                g_prefix_error(&inner, "%s: ", n->cls->name);
            }
            g_propagate_error(error, inner);
            goto fail;
        }
        break;
    }
    }
    *out_pb = n;
    *out = t;
    return TRUE;
fail:
    filter_node_free(t);
    pb_node_free(n);
    return FALSE;
}

struct filterpb *
filterpb_decode(const uint8_t *pb, size_t len, filterpb_mode_t mode,
                GError **error)
{
    return filterpb_decode_custom(pb, len, mode, NULL, error);
}

struct filterpb *
filterpb_decode_custom(const uint8_t *pb, size_t len, filterpb_mode_t mode,
                       const char *const *custom, GError **error)
{
    struct filterpb *f;
    struct pb_ctx c = { mode, NULL, custom };
    GError *inner = NULL;
    pb_span msg, name, ser;
    gsize n = 0;

    if (len > FILTERPB_MAX_LEN) {
        g_set_error(error, FILTERPB_ERROR, FILTERPB_ERROR_LIMIT,
                    "hbase-salt-proxy: filterBytes longer than %u bytes",
                    FILTERPB_MAX_LEN);
        return NULL;
    }
    f = g_new0(struct filterpb, 1);
    f->mode = mode;
    f->bytes = g_bytes_new(pb, len);
    msg.data = g_bytes_get_data(f->bytes, &n);
    msg.len = n;
    if (!pb_read_named(msg, &name, &ser, &inner)) {
        /* ThriftUtilities' FilterProtos.Filter.parseFrom */
        inner->code = FILTERPB_ERROR_MALFORMED;
        g_propagate_error(error, inner);
        filterpb_free(f);
        return NULL;
    }
    if (!pb_decode(&c, name, ser, 1, &f->root, &f->tree, error)) {
        g_free(c.inexact);
        filterpb_free(f);
        return NULL;
    }
    if (mode == FILTERPB_MODE_EXACT && c.inexact != NULL) {
        g_set_error(error, FILTERPB_ERROR, FILTERPB_ERROR_UNSUPPORTED, "%s",
                    c.inexact);
        g_free(c.inexact);
        filterpb_free(f);
        return NULL;
    }
    g_free(c.inexact);
    return f;
}

void
filterpb_free(struct filterpb *f)
{
    if (f == NULL) {
        return;
    }
    pb_node_free(f->root);
    filter_node_free(f->tree);
    g_bytes_unref(f->bytes);
    g_free(f);
}

const struct filter_node *
filterpb_tree(const struct filterpb *f)
{
    return f->tree;
}

struct filter_node *
filterpb_to_filter(const uint8_t *pb, size_t len, GError **error)
{
    struct filterpb *f = filterpb_decode(pb, len, FILTERPB_MODE_EXACT, error);
    struct filter_node *t;

    if (f == NULL) {
        return NULL;
    }
    t = g_steal_pointer(&f->tree);
    filterpb_free(f);
    return t;
}

/* ---- encoding ---------------------------------------------------------- */

/* Appends field num holding the message that fill wrote. */
static void
pb_put_msg(GByteArray *out, uint32_t num, const GByteArray *msg)
{
    pb_put_bytes(out, num, msg->data, msg->len);
}

/* A Comparator message for the rewritten leaf's comparator. */
static void
pb_put_comparator(GByteArray *out, const struct pb_node *n,
                  const struct filter_comparator *cmp)
{
    g_autoptr(GByteArray) ser = g_byte_array_new();
    g_autoptr(GByteArray) inner = g_byte_array_new();
    g_autoptr(GByteArray) c = g_byte_array_new();
    g_autofree char *name = NULL;

    switch (cmp->type) {
    case FILTER_CMP_BINARY:
    case FILTER_CMP_BINARY_PREFIX:
        name = g_strconcat(PB_FILTER_PKG,
                           cmp->type == FILTER_CMP_BINARY
                               ? "BinaryComparator"
                               : "BinaryPrefixComparator",
                           NULL);
        pb_put_bytes(inner, 1, cmp->value, cmp->len);
        pb_put_msg(ser, 1, inner);
        break;
    case FILTER_CMP_SUBSTRING:
        name = g_strconcat(PB_FILTER_PKG, "SubstringComparator", NULL);
        pb_put_bytes(ser, 1, cmp->value, cmp->len);
        break;
    case FILTER_CMP_REGEX:
        name = g_strconcat(PB_FILTER_PKG, "RegexStringComparator", NULL);
        pb_put_bytes(ser, 1, cmp->value, cmp->len);
        if (n->cmp.kind == PB_CMP_REGEX) {
            /* the client's regex: its flags, charset and engine */
            pb_put_int(ser, 2, n->cmp.flags);
            pb_put_bytes(ser, 3, n->cmp.charset.data, n->cmp.charset.len);
            if (n->cmp.has_engine) {
                pb_put_bytes(ser, 4, n->cmp.engine.data, n->cmp.engine.len);
            }
        } else {
            /* what the filter language's regexstring: makes */
            pb_put_int(ser, 2, FILTERPB_RE_DOTALL);
            pb_put_str(ser, 3, "UTF-8");
            pb_put_str(ser, 4, "JAVA");
        }
        break;
    }
    pb_put_str(c, 1, name);
    pb_put_msg(c, 2, ser);
    pb_put_msg(out, 2, c);
}

static gboolean
pb_shape(GError **error)
{
    g_set_error_literal(error, FILTERPB_ERROR, FILTERPB_ERROR_UNSUPPORTED,
                        "hbase-salt-proxy: the filter tree does not fit the "
                        "filterBytes it was decoded from");
    return FALSE;
}

/* The Filter message (its fields) of n, rewritten as t says. */
static gboolean
pb_encode(const struct pb_node *n, const struct filter_node *t,
          GByteArray *out, GError **error)
{
    g_autoptr(GByteArray) ser = g_byte_array_new();
    struct filter_params p;

    switch (n->kind) {
    case PB_KIND_LIST:
    case PB_KIND_SKIP:
    case PB_KIND_WHILE:
        if (t->nchildren != n->nkids ||
            (n->kind == PB_KIND_LIST && t->kind != FILTER_NODE_AND &&
             t->kind != FILTER_NODE_OR) ||
            (n->kind == PB_KIND_SKIP && t->kind != FILTER_NODE_SKIP) ||
            (n->kind == PB_KIND_WHILE && t->kind != FILTER_NODE_WHILE)) {
            return pb_shape(error);
        }
        if (n->kind == PB_KIND_LIST) {
            pb_put_int(ser, 1, t->kind == FILTER_NODE_AND ? 1 : 2);
        }
        for (guint i = 0; i < n->nkids; i++) {
            g_autoptr(GByteArray) kid = g_byte_array_new();

            if (!pb_encode(n->kids[i], t->children[i], kid, error)) {
                return FALSE;
            }
            pb_put_msg(ser, n->kind == PB_KIND_LIST ? 2 : 1, kid);
        }
        break;
    case PB_KIND_LEAF:
        if (t->kind != FILTER_NODE_LEAF || t->type != n->cls->type) {
            return pb_shape(error);
        }
        if (!n->cls->reads_row) {
            g_byte_array_append(ser, n->serialized.data,
                                (guint)n->serialized.len);
            break;
        }
        if (!filter_leaf_params(t, &p, NULL)) {
            return pb_shape(error);
        }
        if (p.type == FILTER_TYPE_PREFIX ||
            p.type == FILTER_TYPE_INCLUSIVE_STOP) {
            pb_put_bytes(ser, 1, p.bytes.data, p.bytes.len);
        } else {
            g_autoptr(GByteArray) cf = g_byte_array_new();

            /* the received operator: '=' stood in for it in the tree */
            pb_put_int(cf, 1, n->op);
            pb_put_comparator(cf, n, &p.cmp);
            pb_put_msg(ser, 1, cf);
        }
        break;
    case PB_KIND_CUSTOM:
        if (t->kind != FILTER_NODE_LEAF || t->type != FILTER_TYPE_UNKNOWN) {
            return pb_shape(error);
        }
        g_byte_array_append(ser, n->serialized.data, (guint)n->serialized.len);
        break;
    default: return pb_shape(error);
    }
    pb_put_bytes(out, 1, n->name.data, n->name.len);
    pb_put_msg(out, 2, ser);
    return TRUE;
}

uint8_t *
filterpb_encode(const struct filterpb *f, const struct filter_node *tree,
                size_t *len, GError **error)
{
    GByteArray *out;

    g_return_val_if_fail(f->mode == FILTERPB_MODE_SALT, NULL);
    out = g_byte_array_new();
    if (!pb_encode(f->root, tree, out, error)) {
        g_byte_array_unref(out);
        return NULL;
    }
    *len = out->len;
    return g_byte_array_free(out, FALSE);
}
