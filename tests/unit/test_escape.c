/* test_escape.c: unit tests of the one escape syntax for keys and
 * separators (config values, --explain-key, hbase-emu --split-keys). */
#include <string.h>

#include <glib.h>

#include "escape.h"

static void
assert_decodes(const char *s, const void *want, size_t want_len)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(GBytes) got = escape_decode(s, &error);
    gsize len = 0;
    const void *p;

    g_assert_no_error(error);
    g_assert_nonnull(got);
    p = g_bytes_get_data(got, &len);
    g_assert_cmpmem(p, len, want, want_len);
}

static void
assert_refused(const char *s, const char *why)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(GBytes) got = escape_decode(s, &error);

    g_assert_null(got);
    g_assert_error(error, ESCAPE_ERROR, ESCAPE_ERROR_INVALID);
    g_assert_nonnull(strstr(error->message, why));
}

/* Test: every escape of the syntax, and bytes standing for themselves. */
static void
test_decode(void)
{
    assert_decodes("", "", 0);
    assert_decodes("user42#x", "user42#x", 8);
    assert_decodes("a b:c", "a b:c", 5);
    assert_decodes("\\x00", "\0", 1);
    assert_decodes("\\xff\\xFF\\Xa0\\XaB", "\xff\xff\xa0\xab", 4);
    assert_decodes("\\\\", "\\", 1);
    assert_decodes("\\s\\t\\n\\r", " \t\n\r", 4);
    /* an escape next to plain bytes, and \x taking exactly two digits */
    assert_decodes("k\\x2C1\\x41a", "k,1Aa", 5);
    assert_decodes("\\\\x41", "\\x41", 4);
    /* bytes above 0x7f pass as they are (a UTF-8 key, say) */
    assert_decodes("\xc3\xa9", "\xc3\xa9", 2);
}

/* Test: a backslash that starts no escape is refused, never taken as a
 * literal backslash. */
static void
test_refused(void)
{
    assert_refused("\\", "unknown escape");
    assert_refused("a\\", "unknown escape");
    assert_refused("\\q", "unknown escape");
    assert_refused("\\0", "unknown escape");
    assert_refused("\\x", "two hex digits");
    assert_refused("\\x4", "two hex digits");
    assert_refused("\\x4g", "two hex digits");
    assert_refused("\\xg4", "two hex digits");
    assert_refused("ok\\X", "two hex digits");
}

/* Test: escape_append writes what escape_decode reads back, for every
 * byte, with no ' ', '\\' or ':' left bare. */
static void
test_round_trip(void)
{
    uint8_t all[256];
    g_autoptr(GString) text = g_string_new(NULL);

    for (size_t i = 0; i < sizeof(all); i++) {
        all[i] = (uint8_t)i;
    }
    escape_append(text, all, sizeof(all));
    g_assert_null(strchr(text->str, ' '));
    g_assert_null(strchr(text->str, ':'));
    g_assert_nonnull(strstr(text->str, "\\x5c"));
    g_assert_nonnull(strstr(text->str, "xyz{|}~\\x7f"));
    assert_decodes(text->str, all, sizeof(all));
}

static gboolean
keep_lower(uint8_t ch)
{
    return ch >= 'a' && ch <= 'z';
}

/* Test: escape_hex_append keeps what keep accepts and writes every other
 * byte, NUL and 0xFF included, as upper-case \xNN. */
static void
test_hex_append(void)
{
    g_autoptr(GString) text = g_string_new("<");

    escape_hex_append(text, (const uint8_t *)"ab\0Z\xff\\c", 7, keep_lower);
    g_assert_cmpstr(text->str, ==, "<ab\\x00\\x5A\\xFF\\x5Cc");
    escape_hex_append(text, NULL, 0, keep_lower);
    g_assert_cmpstr(text->str, ==, "<ab\\x00\\x5A\\xFF\\x5Cc");
}

int
main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/escape/decode", test_decode);
    g_test_add_func("/escape/refused", test_refused);
    g_test_add_func("/escape/round-trip", test_round_trip);
    g_test_add_func("/escape/hex-append", test_hex_append);
    return g_test_run();
}
