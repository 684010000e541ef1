/* escape.h: the one escape syntax for bytes in configuration values and
 * on command lines (salt_separator, hash_part's SEP, keys). */
#pragma once

#include <glib.h>
#include <stddef.h>
#include <stdint.h>

/*
 * The syntax.  A value is read byte by byte; a backslash starts an escape:
 *
 *   \xNN \XNN   the byte NN: exactly two hex digits, either case, as the
 *               HBase shell prints bytes ("\x0A")
 *   \\          a backslash
 *   \s          a space (GKeyFile trims spaces at the ends of a value)
 *   \t \n \r    tab, newline, carriage return
 *
 * Every other byte stands for itself.  A backslash followed by anything
 * else, or at the end, is an error rather than a literal backslash, so that
 * a mistyped escape cannot silently become different bytes.
 */

#define ESCAPE_ERROR escape_error_quark()
GQuark escape_error_quark(void);

typedef enum {
    ESCAPE_ERROR_INVALID, /* a backslash that starts no escape above */
} escape_error_t;

/* The bytes s stands for; NULL and error set on a bad escape. */
GBytes *escape_decode(const char *s, GError **error) G_GNUC_WARN_UNUSED_RESULT;

/* Append p as escape_decode reads it back: printable ASCII as is, \xNN
 * for the rest and for '\\', ' ' (GKeyFile would trim it) and ':' (a
 * delimiter:SEP:K part ends at a ':'). */
void escape_append(GString *out, const uint8_t *p, size_t len);

/* Append p with each byte keep accepts as is and every other one as \xNN
 * (upper-case hex, as HBase's Bytes.toStringBinary writes it). */
void escape_hex_append(GString *out, const uint8_t *p, size_t len,
                       gboolean (*keep)(uint8_t ch));
