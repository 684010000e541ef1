/* escape.c: the escape syntax of escape.h, both ways. */
#include "escape.h"

#include <string.h>

G_DEFINE_QUARK(escape_error_quark, escape_error)

GBytes *
escape_decode(const char *s, GError **error)
{
    g_autoptr(GByteArray) out = NULL;

    g_return_val_if_fail(s != NULL, NULL);
    g_return_val_if_fail(error == NULL || *error == NULL, NULL);

    out = g_byte_array_sized_new((guint)strlen(s));
    for (size_t i = 0; s[i] != '\0'; i++) {
        uint8_t b = (uint8_t)s[i];

        if (b == '\\') {
            switch (s[++i]) {
            case '\\': b = '\\'; break;
            case 's': b = ' '; break;
            case 't': b = '\t'; break;
            case 'n': b = '\n'; break;
            case 'r': b = '\r'; break;
            case 'x':
            case 'X':
                if (!g_ascii_isxdigit(s[i + 1]) ||
                    !g_ascii_isxdigit(s[i + 2])) {
                    g_set_error(error, ESCAPE_ERROR, ESCAPE_ERROR_INVALID,
                                "\\x needs two hex digits");
                    return NULL;
                }
                b = (uint8_t)(g_ascii_xdigit_value(s[i + 1]) << 4 |
                              g_ascii_xdigit_value(s[i + 2]));
                i += 2;
                break;
            default:
                g_set_error(error, ESCAPE_ERROR, ESCAPE_ERROR_INVALID,
                            "unknown escape (use \\xNN, \\\\, \\s, \\t, "
                            "\\n, \\r)");
                return NULL;
            }
        }
        g_byte_array_append(out, &b, 1);
    }
    return g_byte_array_free_to_bytes(g_steal_pointer(&out));
}

void
escape_hex_append(GString *out, const uint8_t *p, size_t len,
                  gboolean (*keep)(uint8_t ch))
{
    for (size_t i = 0; i < len; i++) {
        if (keep(p[i])) {
            g_string_append_c(out, (char)p[i]);
        } else {
            g_string_append_printf(out, "\\x%02X", p[i]);
        }
    }
}

void
escape_append(GString *out, const uint8_t *p, size_t len)
{
    for (size_t i = 0; i < len; i++) {
        if (p[i] > ' ' && p[i] < 0x7f && p[i] != '\\' && p[i] != ':') {
            g_string_append_c(out, (char)p[i]);
        } else {
            g_string_append_printf(out, "\\x%02x", p[i]);
        }
    }
}
