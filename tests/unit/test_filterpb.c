/* test_filterpb.c: Thrift2 filterBytes (protobuf Filter): read, checked,
 * rewritten per bucket like the filter string, refused when it must be. */
#include <string.h>

#include "filterpb.h"
#include "scanfilter.h"

/* 16 hex buckets, salt and '-' in front of every key: bucket 3 is "3-". */
static struct salt_table hex16;

#define PKG "org.apache.hadoop.hbase.filter."

/* ---- a protobuf writer for hand-made vectors -------------------------- */

static void
put_varint(GByteArray *b, uint64_t v)
{
    do {
        uint8_t c = (uint8_t)(v & 0x7f);

        v >>= 7;
        if (v != 0) {
            c |= 0x80;
        }
        g_byte_array_append(b, &c, 1);
    } while (v != 0);
}

static void
put_int(GByteArray *b, uint32_t num, int64_t v)
{
    put_varint(b, (uint64_t)num << 3);
    put_varint(b, (uint64_t)v);
}

static void
put_bytes(GByteArray *b, uint32_t num, const void *d, size_t len)
{
    put_varint(b, ((uint64_t)num << 3) | 2);
    put_varint(b, len);
    g_byte_array_append(b, d, (guint)len);
}

static void
put_str(GByteArray *b, uint32_t num, const char *s)
{
    put_bytes(b, num, s, strlen(s));
}

/* Appends field num holding msg, and frees msg. */
static void
put_msg(GByteArray *b, uint32_t num, GByteArray *msg)
{
    put_bytes(b, num, msg->data, msg->len);
    g_byte_array_unref(msg);
}

static GByteArray *
msg(void)
{
    return g_byte_array_new();
}

/* Filter { name = PKG cls, serialized_filter = ser }; frees ser. */
static GByteArray *
filter(const char *cls, GByteArray *ser)
{
    GByteArray *f = msg();
    g_autofree char *name = g_strconcat(PKG, cls, NULL);

    put_str(f, 1, name);
    put_msg(f, 2, ser);
    return f;
}

static GByteArray *
comparator(const char *cls, GByteArray *ser)
{
    return filter(cls, ser); /* same two fields */
}

static GByteArray *
binary(const char *cls, const char *value)
{
    GByteArray *s = msg(), *c = msg();

    put_str(c, 1, value);
    put_msg(s, 1, c);
    return comparator(cls, s);
}

static GByteArray *
regex(const char *pattern, int32_t flags, const char *charset,
      const char *engine)
{
    GByteArray *s = msg();

    put_str(s, 1, pattern);
    put_int(s, 2, flags);
    put_str(s, 3, charset);
    if (engine != NULL) {
        put_str(s, 4, engine);
    }
    return comparator("RegexStringComparator", s);
}

static GByteArray *
substring(const char *sub)
{
    GByteArray *s = msg();

    put_str(s, 1, sub);
    return comparator("SubstringComparator", s);
}

/* A CompareFilter-based filter (RowFilter, ValueFilter...); frees cmp. */
static GByteArray *
compare(const char *cls, int op, GByteArray *cmp)
{
    GByteArray *s = msg(), *cf = msg();

    put_int(cf, 1, op);
    if (cmp != NULL) {
        put_msg(cf, 2, cmp);
    }
    put_msg(s, 1, cf);
    return filter(cls, s);
}

static GByteArray *
bytes_filter(const char *cls, const char *value)
{
    GByteArray *s = msg();

    put_str(s, 1, value);
    return filter(cls, s);
}

static GByteArray *
page(int64_t n)
{
    GByteArray *s = msg();

    put_int(s, 1, n);
    return filter("PageFilter", s);
}

/* FilterList of the NULL-terminated filters, each freed. */
static GByteArray *
list(int op, ...)
{
    GByteArray *s = msg(), *k;
    va_list ap;

    put_int(s, 1, op);
    va_start(ap, op);
    while ((k = va_arg(ap, GByteArray *)) != NULL) {
        put_msg(s, 2, k);
    }
    va_end(ap);
    return filter("FilterList", s);
}

static GByteArray *
wrap(const char *cls, GByteArray *kid)
{
    GByteArray *s = msg();

    put_msg(s, 1, kid);
    return filter(cls, s);
}

static GByteArray *
keyonly(gboolean len_as_val)
{
    GByteArray *s = msg();

    put_int(s, 1, len_as_val);
    return filter("KeyOnlyFilter", s);
}

/* LongComparator(v): 8 big-endian bytes in a ByteArrayComparable. */
static GByteArray *
long_cmp(uint8_t v)
{
    GByteArray *s = msg(), *c = msg();
    uint8_t be[8] = { 0, 0, 0, 0, 0, 0, 0, v };

    put_bytes(c, 1, be, sizeof(be));
    put_msg(s, 1, c);
    return comparator("LongComparator", s);
}

enum {
    LESS,
    LESS_OR_EQUAL,
    EQUAL,
    NOT_EQUAL,
    GREATER_OR_EQUAL,
    GREATER,
    NO_OP
};
enum { ALL = 1, ONE = 2 };

/* ---- helpers ---------------------------------------------------------- */

/* The exact filter-language string of pb, or NULL with *error. */
static char *
as_string(const uint8_t *pb, size_t len, GError **error)
{
    g_autoptr(filter_node) t = filterpb_to_filter(pb, len, error);
    uint8_t *s;
    size_t n = 0;

    if (t == NULL) {
        return NULL;
    }
    s = filter_serialize(t, &n, error);
    return (char *)s;
}

/* pb rewritten for bucket, then read back as a string. */
static char *
pb_bucket_string(GByteArray *pb, uint32_t bucket)
{
    g_autoptr(GError) error = NULL;
    struct scanfilter *f = scanfilter_new_pb(pb->data, pb->len, &hex16, FALSE,
                                             NULL, &error);
    const uint8_t *out;
    size_t n;
    char *s;

    g_assert_no_error(error);
    g_assert_nonnull(f);
    out = scanfilter_for_bucket(f, bucket, &n);
    s = as_string(out, n, &error);
    g_assert_no_error(error);
    scanfilter_free(f);
    return s;
}

static char *
string_bucket(const char *text, uint32_t bucket)
{
    g_autoptr(GError) error = NULL;
    struct scanfilter *f = scanfilter_new((const uint8_t *)text, strlen(text),
                                          &hex16, FALSE, NULL, &error);
    const uint8_t *out;
    size_t n;
    char *s;

    g_assert_no_error(error);
    out = scanfilter_for_bucket(f, bucket, &n);
    s = g_strndup((const char *)out, n);
    scanfilter_free(f);
    return s;
}

/*
 * pb means text: read exactly it is text, and for every bucket the
 * protobuf rewrite reads back as the string rewrite of text.
 */
static void
check_same(GByteArray *pb, const char *text)
{
    g_autoptr(GError) error = NULL;
    g_autofree char *exact = as_string(pb->data, pb->len, &error);
    g_autofree char *canon = string_bucket(text, 0);
    g_autoptr(filter_node) t = NULL;
    uint8_t *want_text;
    size_t n;

    g_assert_no_error(error);
    /* the same tree as the string, written canonically */
    t = filter_parse((const uint8_t *)text, strlen(text), FILTER_PARSE_STRICT,
                     &error);
    g_assert_no_error(error);
    want_text = filter_serialize(t, &n, &error);
    g_assert_no_error(error);
    g_assert_cmpstr(exact, ==, (const char *)want_text);
    g_free(want_text);
    for (uint32_t b = 0; b < 16; b += 5) {
        g_autofree char *got = pb_bucket_string(pb, b);
        g_autofree char *want = string_bucket(text, b);

        g_assert_cmpstr(got, ==, want);
    }
    (void)canon;
    g_byte_array_unref(pb);
}

/* pb is refused on hex16 with code. */
static void
check_refused(GByteArray *pb, int code, const char *needle)
{
    g_autoptr(GError) error = NULL;
    struct scanfilter *f = scanfilter_new_pb(pb->data, pb->len, &hex16, FALSE,
                                             NULL, &error);

    g_assert_null(f);
    g_assert_nonnull(error);
    if (code >= 0) {
        g_assert_error(error, FILTERPB_ERROR, code);
    }
    if (needle != NULL && strstr(error->message, needle) == NULL) {
        g_error("\"%s\" lacks \"%s\"", error->message, needle);
    }
    g_byte_array_unref(pb);
}

/* Raw bytes are refused by both modes with code and message. */
static void
check_bad(const void *raw, size_t len, int code, const char *message)
{
    g_autoptr(GError) e1 = NULL;
    g_autoptr(GError) e2 = NULL;
    struct filterpb *f;
    struct filter_node *t;

    f = filterpb_decode(raw, len, FILTERPB_MODE_SALT, &e1);
    g_assert_null(f);
    g_assert_error(e1, FILTERPB_ERROR, code);
    t = filterpb_to_filter(raw, len, &e2);
    g_assert_null(t);
    g_assert_error(e2, FILTERPB_ERROR, code);
    if (message != NULL) {
        g_assert_cmpstr(e2->message, ==, message);
    }
}

/* ---- tests ------------------------------------------------------------ */

/* Test: each row-key filter and comparator, rewritten as the string is */
static void
test_row_filters(void)
{
    check_same(bytes_filter("PrefixFilter", "abc"), "PrefixFilter('abc')");
    check_same(bytes_filter("InclusiveStopFilter", "k9"),
               "InclusiveStopFilter('k9')");
    check_same(compare("RowFilter", EQUAL, binary("BinaryComparator", "k")),
               "RowFilter(=, 'binary:k')");
    check_same(compare("RowFilter", LESS, binary("BinaryComparator", "k")),
               "RowFilter(<, 'binary:k')");
    check_same(compare("RowFilter", GREATER_OR_EQUAL,
                       binary("BinaryPrefixComparator", "k1")),
               "RowFilter(>=, 'binaryprefix:k1')");
    check_same(compare("RowFilter", EQUAL,
                       regex("^ab.*", FILTERPB_RE_DOTALL, "UTF-8", "JAVA")),
               "RowFilter(=, 'regexstring:^ab.*')");
    check_same(compare("RowFilter", NOT_EQUAL,
                       regex("ab$", FILTERPB_RE_DOTALL, "UTF-8", NULL)),
               "RowFilter(!=, 'regexstring:ab$')");
    check_same(compare("RowFilter", EQUAL, substring("ab")),
               "RowFilter(=, 'substring:ab')");
    check_same(page(10), "PageFilter(10)");
}

/* Test: lists and wrappers nest; filters not on row keys come through */
static void
test_nesting(void)
{
    check_same(list(ONE,
                    list(ALL, bytes_filter("PrefixFilter", "a"),
                         keyonly(FALSE), NULL),
                    compare("RowFilter", EQUAL,
                            binary("BinaryComparator", "k")),
                    NULL),
               "(PrefixFilter('a') AND KeyOnlyFilter(false)) OR "
               "RowFilter(=, 'binary:k')");
    check_same(wrap("WhileMatchFilter",
                    compare("RowFilter", LESS,
                            binary("BinaryComparator", "a"))),
               "WHILE RowFilter(<, 'binary:a')");
    check_same(wrap("SkipFilter", compare("ValueFilter", NOT_EQUAL,
                                          binary("BinaryComparator", "0"))),
               "SKIP ValueFilter(!=, 'binary:0')");
    check_same(list(ALL, compare("ValueFilter", EQUAL, substring("x")),
                    compare("QualifierFilter", EQUAL,
                            regex("^q", FILTERPB_RE_DOTALL, "UTF-8", "JAVA")),
                    page(5), NULL),
               "ValueFilter(=, 'substring:x') AND "
               "QualifierFilter(=, 'regexstring:^q') AND PageFilter(5)");
}

/* Test: a filter with no string form that ignores rows is copied as is */
static void
test_pass_through(void)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(GByteArray) vf = NULL;
    GByteArray *pb;
    struct scanfilter *f;
    const uint8_t *out;
    size_t n;

    /* ValueFilter(>, LongComparator(7)): no filter-language form */
    vf = compare("ValueFilter", GREATER, long_cmp(7));
    pb = list(ALL, bytes_filter("PrefixFilter", "a"),
              g_byte_array_new_take(g_memdup2(vf->data, vf->len), vf->len),
              NULL);
    f = scanfilter_new_pb(pb->data, pb->len, &hex16, FALSE, NULL, &error);
    g_assert_no_error(error);
    out = scanfilter_for_bucket(f, 3, &n);
    /* the ValueFilter's bytes are inside the output unchanged */
    g_assert_nonnull(memmem(out, n, vf->data, vf->len));
    g_assert_nonnull(memmem(out, n, "3-a", 3));
    /* and the emulator's reader says it has no string form */
    g_assert_null(filterpb_to_filter(pb->data, pb->len, &error));
    g_assert_error(error, FILTERPB_ERROR, FILTERPB_ERROR_UNSUPPORTED);
    scanfilter_free(f);
    g_byte_array_unref(pb);
}

/* Filter { name = cls (a full class name), serialized_filter = ser }. */
static GByteArray *
custom_filter(const char *cls, const char *ser)
{
    GByteArray *f = msg();

    put_str(f, 1, cls);
    put_str(f, 2, ser);
    return f;
}

/* Test: a declared custom filter class is copied as received beside the
 * rewritten row-key filters, even one whose simple name is a built-in
 * filter's; an undeclared one is refused on a salted table */
static void
test_custom_class(void)
{
    static const char *const custom[] = { "com.example.ValuePass",
                                          "PrefixFilter", NULL };
    g_autoptr(GError) error = NULL;
    g_autoptr(GByteArray) cf = custom_filter("com.example.ValuePass", "v\x01");
    g_autoptr(GByteArray) bare = custom_filter("PrefixFilter", "zz");
    GByteArray *pb;
    struct scanfilter *f;
    const uint8_t *out;
    size_t n;

    pb = list(ALL, bytes_filter("PrefixFilter", "abc"),
              g_byte_array_new_take(g_memdup2(cf->data, cf->len), cf->len),
              g_byte_array_new_take(g_memdup2(bare->data, bare->len),
                                    bare->len),
              NULL);
    f = scanfilter_new_pb(pb->data, pb->len, &hex16, FALSE, custom, &error);
    g_assert_no_error(error);
    out = scanfilter_for_bucket(f, 3, &n);
    g_assert_nonnull(memmem(out, n, cf->data, cf->len));
    g_assert_nonnull(memmem(out, n, bare->data, bare->len));
    g_assert_nonnull(memmem(out, n, "3-abc", 5));
    g_assert_null(memmem(out, n, "3-zz", 4));
    g_assert_true(scanfilter_multi_bucket_ok(f));
    scanfilter_free(f);
    check_refused(pb, FILTERPB_ERROR_UNSUPPORTED,
                  "com.example.ValuePass, which the proxy does not know");
}

/* Test: the regex keeps its flags, charset and operator per bucket */
static void
test_regex_flags(void)
{
    g_autoptr(GError) error = NULL;
    GByteArray *pb =
        compare("RowFilter", NOT_EQUAL,
                regex("ab", FILTERPB_RE_DOTALL | FILTERPB_RE_CASE_INSENSITIVE,
                      "ISO-8859-1", "JAVA"));
    struct scanfilter *f = scanfilter_new_pb(pb->data, pb->len, &hex16, FALSE,
                                             NULL, &error);
    GByteArray *want = compare("RowFilter", NOT_EQUAL,
                               regex("^\\x33\\x2d(?s:.*?)(?:ab)",
                                     FILTERPB_RE_DOTALL |
                                         FILTERPB_RE_CASE_INSENSITIVE,
                                     "ISO-8859-1", "JAVA"));
    const uint8_t *out;
    size_t n;
    g_autofree char *s = NULL;

    g_assert_no_error(error);
    out = scanfilter_for_bucket(f, 3, &n);
    g_assert_cmpmem(out, n, want->data, want->len);
    /* the exact reading has no charset but UTF-8 ... */
    g_assert_null(as_string(pb->data, pb->len, &error));
    g_assert_error(error, FILTERPB_ERROR, FILTERPB_ERROR_UNSUPPORTED);
    g_clear_error(&error);
    g_byte_array_unref(pb);
    /* ... and spells the flags inline */
    pb = compare("RowFilter", NOT_EQUAL,
                 regex("ab", FILTERPB_RE_CASE_INSENSITIVE, "UTF-8", "JAVA"));
    s = as_string(pb->data, pb->len, &error);
    g_assert_no_error(error);
    g_assert_cmpstr(s, ==, "RowFilter(!=, 'regexstring:(?i-s)ab')");
    scanfilter_free(f);
    g_byte_array_unref(pb);
    g_byte_array_unref(want);
}

/* Test: the page limit, single bucket and multi-bucket answers are the
 * string's */
static void
test_analysis(void)
{
    g_autoptr(GError) error = NULL;
    GByteArray *pb = list(ALL, bytes_filter("PrefixFilter", "u"), page(7),
                          NULL);
    struct scanfilter *f = scanfilter_new_pb(pb->data, pb->len, &hex16, FALSE,
                                             NULL, &error);

    g_assert_no_error(error);
    g_assert_cmpint(scanfilter_page_limit(f), ==, 7);
    g_assert_true(scanfilter_multi_bucket_ok(f));
    scanfilter_free(f);
    g_byte_array_unref(pb);

    pb = wrap("WhileMatchFilter", compare("RowFilter", NOT_EQUAL,
                                          binary("BinaryComparator", "a")));
    f = scanfilter_new_pb(pb->data, pb->len, &hex16, FALSE, NULL, &error);
    g_assert_no_error(error);
    g_assert_false(scanfilter_multi_bucket_ok(f));
    g_assert_nonnull(strstr(scanfilter_multi_bucket_why(f), "WHILE"));
    scanfilter_free(f);
    g_byte_array_unref(pb);
}

/* Test: row-key filters the rewrite cannot make exact, and unknown
 * classes, are refused with a message saying why */
static void
test_refused(void)
{
    GByteArray *s = msg();
    GByteArray *custom = msg();

    check_refused(filter("FuzzyRowFilter", msg()), FILTERPB_ERROR_UNSUPPORTED,
                  "FuzzyRowFilter");
    check_refused(filter("MultiRowRangeFilter", msg()),
                  FILTERPB_ERROR_UNSUPPORTED, "reads the row key");
    put_str(s, 1, "x");
    put_str(custom, 1, "com.example.MyRowFilter");
    put_msg(custom, 2, s);
    check_refused(custom, FILTERPB_ERROR_UNSUPPORTED,
                  "com.example.MyRowFilter");
    check_refused(compare("RowFilter", EQUAL, long_cmp(7)),
                  FILTERPB_ERROR_UNSUPPORTED, "LongComparator");
    check_refused(compare("RowFilter", EQUAL,
                          regex("^a", FILTERPB_RE_MULTILINE, "UTF-8", NULL)),
                  FILTERPB_ERROR_UNSUPPORTED, "flags");
    check_refused(compare("RowFilter", EQUAL,
                          regex("a", FILTERPB_RE_DOTALL, "UTF-8", "JONI")),
                  FILTERPB_ERROR_UNSUPPORTED, "JONI");
    check_refused(compare("RowFilter", EQUAL,
                          regex("a", FILTERPB_RE_DOTALL, "UTF-16", NULL)),
                  FILTERPB_ERROR_UNSUPPORTED, "charset");
    check_refused(compare("RowFilter", NO_OP, binary("BinaryComparator", "a")),
                  FILTERPB_ERROR_UNSUPPORTED, "NO_OP");
    check_refused(compare("RowFilter", EQUAL, NULL),
                  FILTERPB_ERROR_UNSUPPORTED, "comparator");
    check_refused(filter("InclusiveStopFilter", msg()),
                  FILTERPB_ERROR_UNSUPPORTED, "stop_row_key");
    /* scanfilter's own refusals hold for bytes too */
    check_refused(compare("RowFilter", EQUAL,
                          regex("a^b", FILTERPB_RE_DOTALL, "UTF-8", NULL)),
                  -1, "regexstring:a^b");
    /* nested deep inside a list */
    check_refused(list(ALL, page(1),
                       list(ONE, filter("FuzzyRowFilter", msg()), NULL), NULL),
                  FILTERPB_ERROR_UNSUPPORTED, "FuzzyRowFilter");
}

/* Test: the emulator's reading of classes HBase has not, by depth */
static void
test_unknown_class(void)
{
    g_autoptr(GError) error = NULL;
    GByteArray *f = msg(), *l;

    put_str(f, 1, "com.example.Foo");
    g_assert_null(filterpb_to_filter(f->data, f->len, &error));
    g_assert_error(error, FILTERPB_ERROR, FILTERPB_ERROR_UNKNOWN_CLASS);
    g_assert_cmpstr(error->message, ==,
                    "java.lang.ClassNotFoundException: com.example.Foo");
    g_clear_error(&error);
    l = list(ALL, f, NULL);
    g_assert_null(filterpb_to_filter(l->data, l->len, &error));
    g_assert_error(error, FILTERPB_ERROR, FILTERPB_ERROR_INVALID);
    g_byte_array_unref(l);
}

/* Test: bytes that are no protobuf Filter fail with protobuf's message,
 * never reading past the end */
static void
test_malformed(void)
{
    static const uint8_t trunc_varint[] = { 0x0a, 0x80 };
    static const uint8_t past_end[] = { 0x0a, 0x05, 'a' };
    static const uint8_t wire_type7[] = { 0x0f, 0x00 };
    static const uint8_t zero_tag[] = { 0x00, 0x00 };
    static const uint8_t long_varint[] = {
        0x08, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01
    };
    static const uint8_t negative[] = { 0x0a, 0xff, 0xff, 0xff, 0xff, 0x0f };
    static const uint8_t bad_end_group[] = { 0x1b, 0x24 };
    static const uint8_t lone_end_group[] = { 0x0c };
    static const uint8_t open_group[] = { 0x1b, 0x08, 0x01 };
    static const uint8_t trunc_fixed[] = { 0x19, 0x01, 0x02 };

    check_bad("", 0, FILTERPB_ERROR_MALFORMED,
              "Message missing required fields: name");
    check_bad(trunc_varint, sizeof(trunc_varint), FILTERPB_ERROR_MALFORMED,
              "While parsing a protocol message, the input ended "
              "unexpectedly in the middle of a field.  This could mean "
              "either that the input has been truncated or that an "
              "embedded message misreported its own length.");
    check_bad(past_end, sizeof(past_end), FILTERPB_ERROR_MALFORMED, NULL);
    check_bad(wire_type7, sizeof(wire_type7), FILTERPB_ERROR_MALFORMED,
              "Protocol message tag had invalid wire type.");
    check_bad(zero_tag, sizeof(zero_tag), FILTERPB_ERROR_MALFORMED,
              "Protocol message contained an invalid tag (zero).");
    check_bad(long_varint, sizeof(long_varint), FILTERPB_ERROR_MALFORMED,
              "CodedInputStream encountered a malformed varint.");
    check_bad(negative, sizeof(negative), FILTERPB_ERROR_MALFORMED,
              "CodedInputStream encountered an embedded string or message "
              "which claimed to have negative size.");
    check_bad(bad_end_group, sizeof(bad_end_group), FILTERPB_ERROR_MALFORMED,
              "Protocol message end-group tag did not match expected tag.");
    check_bad(lone_end_group, sizeof(lone_end_group), FILTERPB_ERROR_MALFORMED,
              "Protocol message end-group tag did not match expected tag.");
    check_bad(open_group, sizeof(open_group), FILTERPB_ERROR_MALFORMED, NULL);
    check_bad(trunc_fixed, sizeof(trunc_fixed), FILTERPB_ERROR_MALFORMED,
              NULL);
}

/* Test: malformed or out-of-range nested messages are the class's
 * parseFrom failing (HBase: InvocationTargetException) */
static void
test_invalid_nested(void)
{
    GByteArray *s;
    GByteArray *pb;
    static const uint8_t trunc[] = { 0x0a, 0x09 };

    s = msg();
    g_byte_array_append(s, trunc, sizeof(trunc));
    pb = filter("PrefixFilter", s);
    check_bad(pb->data, pb->len, FILTERPB_ERROR_INVALID, NULL);
    g_byte_array_unref(pb);

    pb = page(-1);
    check_bad(pb->data, pb->len, FILTERPB_ERROR_INVALID, NULL);
    g_byte_array_unref(pb);

    pb = filter("PageFilter", msg()); /* page_size is required */
    check_bad(pb->data, pb->len, FILTERPB_ERROR_INVALID, NULL);
    g_byte_array_unref(pb);

    s = msg();
    put_int(s, 1, 3); /* no such FilterList operator: absent */
    pb = filter("FilterList", s);
    check_bad(pb->data, pb->len, FILTERPB_ERROR_INVALID, NULL);
    g_byte_array_unref(pb);

    pb = compare("RowFilter", EQUAL,
                 regex("a", FILTERPB_RE_DOTALL, "UTF-8", "PCRE"));
    check_bad(pb->data, pb->len, FILTERPB_ERROR_INVALID, NULL);
    g_byte_array_unref(pb);
}

/* Test: nesting beyond the limit is refused, not recursed into */
static void
test_depth(void)
{
    GByteArray *pb = bytes_filter("PrefixFilter", "a");

    for (int i = 0; i < FILTERPB_MAX_DEPTH + 5; i++) {
        pb = wrap("SkipFilter", pb);
    }
    check_bad(pb->data, pb->len, FILTERPB_ERROR_LIMIT, NULL);
    g_byte_array_unref(pb);
}

/* Test: protobuf-java's rules: unknown fields (groups too) skipped, the
 * last value of a field wins, a repeated message field merges */
static void
test_proto_rules(void)
{
    g_autoptr(GError) error = NULL;
    GByteArray *pb = msg(), *s = msg(), *k1, *k2;
    g_autofree char *str = NULL;
    g_autofree char *str2 = NULL;

    put_str(pb, 1, PKG "KeyOnlyFilter"); /* replaced below */
    put_int(pb, 9, 5);                   /* unknown varint */
    put_varint(pb, (7 << 3) | 3);        /* unknown group ... */
    put_int(pb, 1, 1);
    put_varint(pb, (7 << 3) | 4); /* ... ended */
    put_str(pb, 1, PKG "PrefixFilter");
    put_str(s, 1, "old");
    put_str(s, 1, "new");
    put_msg(pb, 2, s);
    str = as_string(pb->data, pb->len, &error);
    g_assert_no_error(error);
    g_assert_cmpstr(str, ==, "PrefixFilter('new')");
    g_byte_array_unref(pb);

    /* WhileMatchFilter { filter: {name}, filter: {serialized} } merges */
    k1 = msg();
    put_str(k1, 1, PKG "PrefixFilter");
    k2 = msg();
    s = msg();
    put_str(s, 1, "p");
    put_msg(k2, 2, s);
    s = msg();
    put_msg(s, 1, k1);
    put_msg(s, 1, k2);
    pb = filter("WhileMatchFilter", s);
    str2 = as_string(pb->data, pb->len, &error);
    g_assert_no_error(error);
    g_assert_cmpstr(str2, ==, "WHILE PrefixFilter('p')");
    g_byte_array_unref(pb);
}

int
main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_assert_true(salt_table_init(&hex16, 16, SALT_FORMAT_HEX, "-", 1, NULL));
    g_test_add_func("/filterpb/row-filters", test_row_filters);
    g_test_add_func("/filterpb/nesting", test_nesting);
    g_test_add_func("/filterpb/pass-through", test_pass_through);
    g_test_add_func("/filterpb/regex-flags", test_regex_flags);
    g_test_add_func("/filterpb/analysis", test_analysis);
    g_test_add_func("/filterpb/refused", test_refused);
    g_test_add_func("/filterpb/unknown-class", test_unknown_class);
    g_test_add_func("/filterpb/custom-class", test_custom_class);
    g_test_add_func("/filterpb/malformed", test_malformed);
    g_test_add_func("/filterpb/invalid-nested", test_invalid_nested);
    g_test_add_func("/filterpb/depth", test_depth);
    g_test_add_func("/filterpb/proto-rules", test_proto_rules);
    return g_test_run();
}
