/* filterpb.h: HBase's protobuf Filter (Thrift2 filterBytes): a bounds-checked
 * reader and writer, and its filter-language form (pure). */
#pragma once

#include <glib.h>
#include <stddef.h>
#include <stdint.h>

#include "filter.h"

/*
 * Thrift2's TScan.filterBytes (15) and TGet.filterBytes (18) hold a
 * serialized hbase.pb.Filter { 1: string name (a Java class name),
 * 2: bytes serialized_filter (that class's own message) }, which HBase
 * turns into a filter by reflection: FilterList, SkipFilter and
 * WhileMatchFilter nest further Filter messages, compare filters nest a
 * Comparator { 1: name, 2: serialized_comparator }.
 *
 * filterpb_decode reads such bytes into a tree of the same shape as the
 * filter language's (filter.h): FilterList MUST_PASS_ALL/ONE are AND/OR,
 * SkipFilter and WhileMatchFilter are SKIP and WHILE, and each filter is
 * a leaf.  Each leaf is written in the filter language (filter_leaf_params
 * reads it) when the filter has an exact string form; how a leaf is
 * written depends on the mode:
 *
 *   FILTERPB_MODE_EXACT  every leaf must mean in the filter language what
 *                        it means as protobuf, or decoding fails with
 *                        FILTERPB_ERROR_UNSUPPORTED.  A regex's flags
 *                        become inline flags ("(?i-s)...").  For the
 *                        emulator: filterpb_to_filter.
 *   FILTERPB_MODE_SALT   for the per-bucket rewrite (scanfilter_new_pb):
 *                        the row-key filters the rewrite handles are
 *                        written as it expects them (a regex as its bare
 *                        pattern, the flags kept aside and checked to be
 *                        ones the rewrite cannot change, operator '='),
 *                        PageFilter exactly, and every filter on an
 *                        explicit allow-list of filters that never read
 *                        the row key as a leaf of its type without
 *                        arguments: filterpb_encode copies those as
 *                        received.  Any other filter (a row-key filter
 *                        the rewrite cannot make exact, FuzzyRowFilter,
 *                        MultiRowRangeFilter, a class HBase lacks...) is
 *                        FILTERPB_ERROR_UNSUPPORTED.
 *
 * The protobuf rules are protobuf-java's (proto2): unknown fields are
 * skipped (groups included), a repeated non-repeated field keeps its last
 * value and a repeated message field merges, an enum value outside the
 * enum counts as absent, a missing required field is an error.  Every
 * length is checked against the bytes present before use.
 *
 * Errors, in the order HBase meets them (ThriftUtilities.filterFromThrift,
 * then ProtobufUtil.toFilter):
 *
 *   FILTERPB_ERROR_MALFORMED      the outer Filter message does not parse;
 *                                 the message is protobuf-java's.  HBase:
 *                                 TIOError(message, canRetry true).
 *   FILTERPB_ERROR_UNKNOWN_CLASS  the outer name is no HBase filter; the
 *                                 message is HBase's own text
 *                                 "java.lang.ClassNotFoundException: NAME".
 *                                 HBase: TIOError(message, canRetry false).
 *   FILTERPB_ERROR_INVALID        anything HBase's parseFrom refuses below
 *                                 the outer Filter: bytes that do not
 *                                 parse, a missing required field, an
 *                                 unknown nested class, a negative page
 *                                 size...  HBase: TIOError("java.lang.
 *                                 reflect.InvocationTargetException",
 *                                 canRetry false); our message says what.
 *   FILTERPB_ERROR_LIMIT          deeper than FILTERPB_MAX_DEPTH filters or
 *                                 longer than FILTERPB_MAX_LEN bytes.
 *   FILTERPB_ERROR_UNSUPPORTED    HBase would accept it, but it has no
 *                                 exact form in this mode (see above).
 *
 * A caller that refuses a request for one of these errors should answer as
 * HBase does for a filter it rejects: a TIOError with canRetry false (the
 * proxy's refusals are "java.lang.IllegalArgumentException: " + message).
 */

#define FILTERPB_MAX_DEPTH FILTER_MAX_DEPTH /* nested Filter messages */
#define FILTERPB_MAX_LEN FILTER_MAX_LEN     /* bytes of filterBytes */

#define FILTERPB_ERROR filterpb_error_quark()
GQuark filterpb_error_quark(void);

typedef enum {
    FILTERPB_ERROR_MALFORMED,
    FILTERPB_ERROR_UNKNOWN_CLASS,
    FILTERPB_ERROR_INVALID,
    FILTERPB_ERROR_LIMIT,
    FILTERPB_ERROR_UNSUPPORTED,
} filterpb_error_t;

typedef enum {
    FILTERPB_MODE_EXACT = 0,
    FILTERPB_MODE_SALT,
} filterpb_mode_t;

/* Java Pattern flags a RegexStringComparator carries. */
#define FILTERPB_RE_UNIX_LINES 0x01
#define FILTERPB_RE_CASE_INSENSITIVE 0x02
#define FILTERPB_RE_COMMENTS 0x04
#define FILTERPB_RE_MULTILINE 0x08
#define FILTERPB_RE_LITERAL 0x10
#define FILTERPB_RE_DOTALL                                                    \
    0x20 /* what the filter language's regexstring: uses */
#define FILTERPB_RE_UNICODE_CASE 0x40
#define FILTERPB_RE_CANON_EQ 0x80
#define FILTERPB_RE_UNICODE_CHARACTER_CLASS 0x100

/* A decoded Filter: the tree and the bytes its leaves were read from. */
struct filterpb;

struct filterpb *filterpb_decode(const uint8_t *pb, size_t len,
                                 filterpb_mode_t mode, GError **error)
    G_GNUC_WARN_UNUSED_RESULT;
/* The same; in FILTERPB_MODE_SALT a filter whose class (its full Java
 * name) is one of custom (NULL-ended, or NULL), the custom filters the
 * servers register that do not read the row key, is a leaf of type
 * FILTER_TYPE_UNKNOWN named by its class, copied as received. */
struct filterpb *
filterpb_decode_custom(const uint8_t *pb, size_t len, filterpb_mode_t mode,
                       const char *const *custom, GError **error)
    G_GNUC_WARN_UNUSED_RESULT;
void filterpb_free(struct filterpb *f);

/* The tree in the filter language (owned by f; copy it to change it). */
const struct filter_node *filterpb_tree(const struct filterpb *f);

/*
 * Writes a Filter message for a tree of filterpb_tree's shape whose
 * row-key leaves (PrefixFilter, InclusiveStopFilter, RowFilter) may have
 * new arguments, e.g. a copy rewritten by scanfilter for one bucket: those
 * leaves are written from the tree (a RowFilter keeps the received
 * operator and, for a regex, its flags, charset and engine; a substring
 * comparator the tree turned into a regex is written as the
 * RegexStringComparator the filter language would make), lists and
 * wrappers anew, and every other leaf byte for byte as received.  Returns
 * g_malloc'd bytes, or NULL (FILTERPB_ERROR_UNSUPPORTED) if the tree does
 * not fit f.  Only for FILTERPB_MODE_SALT.
 */
uint8_t *filterpb_encode(const struct filterpb *f,
                         const struct filter_node *tree, size_t *len,
                         GError **error) G_GNUC_WARN_UNUSED_RESULT;

/*
 * The exact filter-language tree of filterBytes (FILTERPB_MODE_EXACT);
 * the caller frees it.  The emulator evaluates filterBytes with it.
 */
struct filter_node *filterpb_to_filter(const uint8_t *pb, size_t len,
                                       GError **error)
    G_GNUC_WARN_UNUSED_RESULT;
