/* filter.h: HBase filter-language parser, serializer and AST helpers (pure). */
#pragma once

#include <glib.h>
#include <stddef.h>
#include <stdint.h>

/*
 * The language is HBase's ParseFilter: FilterName('arg', 12, true, <=, ...)
 * combined with AND, OR, SKIP, WHILE and parentheses.  filter_parse follows
 * ParseFilter's own stack machine byte for byte, so strings HBase accepts
 * give the tree HBase builds, and strings it rejects are rejected, with
 * HBase's message.  Three layers of error, kept apart for the proxy:
 *
 *   FILTER_ERROR_SYNTAX / _LIMIT   the string does not parse (or is beyond
 *                                  our caps): pass it through untouched
 *   FILTER_ERROR_UNKNOWN_FILTER    parses, but names a filter we do not know
 *                                  (the server may have it registered)
 *   FILTER_ERROR_ARGUMENTS         a known filter with arguments HBase's
 *                                  createFilterFromArguments would refuse
 *
 * filter_parse without FILTER_PARSE_STRICT reports only the first layer and
 * keeps unknown or badly argued leaves in the tree; filter_validate (or
 * FILTER_PARSE_STRICT, which checks each leaf as HBase does, left to right)
 * reports the other two.
 *
 * filter_serialize writes a canonical string that ParseFilter parses into
 * the same tree: lists nested in lists and wrapped operands are
 * parenthesised, since ParseFilter mis-handles mixed operators inside one
 * pair of parentheses.
 */

#define FILTER_MAX_DEPTH 64       /* levels of AND/OR/SKIP/WHILE + leaf */
#define FILTER_MAX_LEN (1u << 20) /* bytes of filter string */

#define FILTER_ERROR filter_error_quark()
GQuark filter_error_quark(void);

typedef enum {
    FILTER_ERROR_SYNTAX,         /* ParseFilter would throw while parsing */
    FILTER_ERROR_LIMIT,          /* over FILTER_MAX_DEPTH / FILTER_MAX_LEN */
    FILTER_ERROR_UNKNOWN_FILTER, /* "Filter Name X not supported" */
    FILTER_ERROR_ARGUMENTS,      /* "Incorrect filter string X: why" */
    FILTER_ERROR_SERIALIZE,      /* tree cannot be written back safely */
} filter_error_t;

typedef enum {
    FILTER_NODE_LEAF = 0, /* FilterName(args) */
    FILTER_NODE_AND,      /* FilterList MUST_PASS_ALL, >= 1 children */
    FILTER_NODE_OR,       /* FilterList MUST_PASS_ONE, >= 1 children */
    FILTER_NODE_SKIP,     /* SkipFilter, 1 child */
    FILTER_NODE_WHILE,    /* WhileMatchFilter, 1 child */
} filter_node_kind_t;

/* The filters ParseFilter registers; UNKNOWN is any other name. */
typedef enum {
    FILTER_TYPE_UNKNOWN = 0,
    FILTER_TYPE_KEY_ONLY,
    FILTER_TYPE_FIRST_KEY_ONLY,
    FILTER_TYPE_PREFIX, /* reads the row key */
    FILTER_TYPE_COLUMN_PREFIX,
    FILTER_TYPE_MULTIPLE_COLUMN_PREFIX,
    FILTER_TYPE_COLUMN_COUNT_GET,
    FILTER_TYPE_PAGE,
    FILTER_TYPE_COLUMN_PAGINATION,
    FILTER_TYPE_INCLUSIVE_STOP, /* reads the row key */
    FILTER_TYPE_TIMESTAMPS,
    FILTER_TYPE_ROW, /* reads the row key */
    FILTER_TYPE_FAMILY,
    FILTER_TYPE_QUALIFIER,
    FILTER_TYPE_VALUE,
    FILTER_TYPE_COLUMN_RANGE,
    FILTER_TYPE_SINGLE_COLUMN_VALUE,
    FILTER_TYPE_SINGLE_COLUMN_VALUE_EXCLUDE,
    FILTER_TYPE_DEPENDENT_COLUMN,
    FILTER_TYPE_COLUMN_VALUE,
    FILTER_TYPE_COUNT,
} filter_type_t;

typedef enum {
    FILTER_ARG_QUOTED = 0, /* 'bytes' ('' unescaped; data holds raw bytes) */
    FILTER_ARG_BARE,       /* integer, boolean or compare operator token */
} filter_arg_kind_t;

typedef enum {
    FILTER_OP_NONE = 0,         /* no operator given (DependentColumnFilter) */
    FILTER_OP_LESS,             /* <  */
    FILTER_OP_LESS_OR_EQUAL,    /* <= */
    FILTER_OP_EQUAL,            /* =  */
    FILTER_OP_NOT_EQUAL,        /* != */
    FILTER_OP_GREATER_OR_EQUAL, /* >= */
    FILTER_OP_GREATER,          /* >  */
} filter_op_t;

typedef enum {
    FILTER_CMP_BINARY = 0,    /* binary: */
    FILTER_CMP_BINARY_PREFIX, /* binaryprefix: */
    FILTER_CMP_REGEX,         /* regexstring: */
    FILTER_CMP_SUBSTRING,     /* substring: */
} filter_cmp_type_t;

struct filter_arg {
    filter_arg_kind_t kind; /* quoted string or bare token */
    uint8_t *data;          /* owned; NUL-terminated for convenience */
    size_t len;             /* bytes in data, without the terminator */
};

typedef struct filter_node filter_node; /* for g_autoptr */

struct filter_node {
    filter_node_kind_t kind; /* leaf or operator */
    /* leaves */
    filter_type_t type; /* FILTER_TYPE_UNKNOWN for other names */
    uint8_t *name;      /* owned, NUL-terminated; raw bytes */
    size_t name_len;
    struct filter_arg *args; /* owned array of nargs */
    guint nargs;
    /* operators */
    struct filter_node **children; /* owned array of nchildren */
    guint nchildren;
};

/* A comparator argument 'type:value' split at the first ':'. */
struct filter_comparator {
    filter_cmp_type_t type;
    const uint8_t *value; /* points into the argument it came from */
    size_t len;
};

/* A byte string that points into a leaf's argument. */
struct filter_bytes {
    const uint8_t *data;
    size_t len;
};

/*
 * Typed view of a known leaf's arguments, filled by filter_leaf_params.
 * Fields a filter does not take stay zero.  TimestampsFilter's and
 * MultipleColumnPrefixFilter's lists are its args (all checked).
 */
struct filter_params {
    filter_type_t type;
    filter_op_t op;               /* compare filters; NONE if absent */
    struct filter_comparator cmp; /* valid when op != NONE */
    struct filter_bytes bytes;    /* Prefix, ColumnPrefix, InclusiveStop */
    struct filter_bytes family; /* SCVF, SCVEF, DependentColumn, ColumnValue */
    struct filter_bytes qualifier;
    struct filter_bytes min_column; /* ColumnRange; len 0 = unbounded */
    struct filter_bytes max_column;
    gboolean min_inclusive;
    gboolean max_inclusive;
    gboolean len_as_value;        /* KeyOnlyFilter(true) */
    gboolean filter_if_missing;   /* SCVF: default FALSE */
    gboolean latest_version_only; /* SCVF: default TRUE */
    gboolean drop_dependent;      /* DependentColumnFilter */
    gint64 limit;  /* Page size, ColumnCountGet, ColumnPagination */
    gint64 offset; /* ColumnPagination */
};

typedef enum {
    FILTER_PARSE_DEFAULT = 0,
    FILTER_PARSE_STRICT = 1 << 0, /* reject unknown names and bad arguments */
} filter_parse_flags_t;

/* Parsing and checking. */
struct filter_node *filter_parse(const uint8_t *text, size_t len, guint flags,
                                 GError **error) G_GNUC_WARN_UNUSED_RESULT;
gboolean filter_validate(const struct filter_node *root, GError **error);
gboolean filter_leaf_params(const struct filter_node *leaf,
                            struct filter_params *out, GError **error);

/* Writing back.  Returns a g_malloc'd, NUL-terminated string of *len bytes. */
uint8_t *filter_serialize(const struct filter_node *root, size_t *len,
                          GError **error) G_GNUC_WARN_UNUSED_RESULT;

/* Trees. */
struct filter_node *filter_node_new_leaf(const void *name, size_t name_len)
    G_GNUC_WARN_UNUSED_RESULT;
struct filter_node *filter_node_new_op(filter_node_kind_t kind)
    G_GNUC_WARN_UNUSED_RESULT;
void filter_node_add_child(struct filter_node *op, struct filter_node *child);
void filter_node_add_arg(struct filter_node *leaf, filter_arg_kind_t kind,
                         const void *data, size_t len);
void filter_node_set_arg(struct filter_node *leaf, guint i,
                         filter_arg_kind_t kind, const void *data, size_t len);
void filter_node_set_comparator(struct filter_node *leaf, guint i,
                                filter_cmp_type_t type, const void *value,
                                size_t len);
struct filter_node *filter_node_copy(const struct filter_node *node)
    G_GNUC_WARN_UNUSED_RESULT;
void filter_node_free(struct filter_node *node);
gboolean filter_node_equal(const struct filter_node *a,
                           const struct filter_node *b);
guint filter_node_depth(const struct filter_node *node);

/*
 * Pre-order walk; 'depth' is 1 at the root.  The callback may change the
 * node's arguments (not its children array).  Returning FALSE stops the
 * walk, and filter_node_walk then returns FALSE.
 */
typedef gboolean (*filter_visit_fn)(struct filter_node *node, guint depth,
                                    gpointer user_data);
gboolean filter_node_walk(struct filter_node *root, filter_visit_fn fn,
                          gpointer user_data);

/* TRUE for the leaves whose meaning depends on the row key. */
gboolean filter_node_reads_row(const struct filter_node *node);

/* Names and tokens. */
filter_type_t filter_type_from_name(const uint8_t *name, size_t len);
const char *filter_type_name(filter_type_t type);
const char *filter_op_symbol(filter_op_t op);
const char *filter_cmp_prefix(filter_cmp_type_t type); /* "binary" ... */

/* Argument conversions with HBase's rules and messages. */
gboolean filter_arg_to_int64(const struct filter_arg *arg, gint64 *out,
                             GError **error);
gboolean filter_arg_to_int32(const struct filter_arg *arg, gint32 *out,
                             GError **error);
gboolean filter_arg_to_bool(const struct filter_arg *arg, gboolean *out,
                            GError **error);
gboolean filter_arg_to_op(const struct filter_arg *arg, filter_op_t *out,
                          GError **error);
gboolean filter_arg_to_comparator(const struct filter_arg *arg,
                                  struct filter_comparator *out,
                                  GError **error);
/* HBase's check of a count a filter takes, with its message ("what must
 * be positive v"), as an error of domain and code: the filter language's
 * and filterBytes' decoders report it in their own domains. */
gboolean filter_require_nonneg(gint64 v, const char *what, GQuark domain,
                               gint code, GError **error);

G_DEFINE_AUTOPTR_CLEANUP_FUNC(filter_node, filter_node_free)
