/* legacy.h: forward-looking salting: which logical keys stay unsalted. */
#pragma once

#include <glib.h>
#include <stddef.h>
#include <stdint.h>

/*
 * PART OF THE MAPPING.  A table may keep the rows it held before it was
 * salted where they are: a rule on the logical key says which keys are
 * legacy (stored unsalted, physical key = logical key) and which are new
 * (salted as salt.h says).  Changing the rule moves keys from one side to
 * the other, so a reload refuses it as it refuses any mapping change.
 *
 *   none        every key is new (the default; no legacy keys)
 *   component   a part of the key compared bytewise (unsigned, a prefix
 *               before every longer key) with a cutoff: keys whose part
 *               is >= cutoff are new, keys whose part is below it are
 *               legacy, and keys that lack the part are legacy.
 *       after:SEP:K    the bytes after the K-th SEP, to the end of the key
 *                      (SEP counted left to right without overlap, as in
 *                      hash_part); fewer than K SEPs: lacks it
 *       after:SEP:last the bytes after the last SEP; no SEP: lacks it
 *       bytes:OFF:LEN  key[OFF, OFF+LEN); a key shorter than OFF+LEN
 *                      lacks it
 *   range       keys in [start, stop) are legacy, every other key is
 *               new; an empty stop is no upper bound.
 *
 * A legacy key whose bytes read as the salted form of a new key (a valid
 * salt of the table for the bucket of what follows, which the rule calls
 * new) would share its physical row with that key.  The physical row
 * belongs to the new key; the legacy key is a CLASH: it cannot be stored
 * (a write is refused, a read finds nothing).  So every physical row
 * belongs to at most one logical key (salt_owner).
 */

#define LEGACY_MAX_BOUND 256    /* bytes of a cutoff or a range bound */
#define LEGACY_MAX_DELIMITER 16 /* bytes of SEP */
#define LEGACY_MAX_PART 32767u  /* K, OFF and LEN */

#define LEGACY_ERROR legacy_error_quark()
GQuark legacy_error_quark(void);

typedef enum {
    LEGACY_ERROR_INVALID, /* a rule that does not parse or fit */
} legacy_error_t;

typedef enum {
    LEGACY_NONE = 0,
    LEGACY_COMPONENT = 1,
    LEGACY_RANGE = 2,
} legacy_kind_t;

typedef enum {
    LEGACY_PART_AFTER = 0,      /* after the K-th SEP */
    LEGACY_PART_AFTER_LAST = 1, /* after the last SEP */
    LEGACY_PART_BYTES = 2,      /* key[OFF, OFF+LEN) */
} legacy_part_t;

/* Plain data: copy it freely, nothing to free.  legacy_rule_init zeroes
 * it all, so that equal rules compare equal byte for byte. */
struct legacy_rule {
    legacy_kind_t kind;
    legacy_part_t part; /* component */
    uint32_t count;     /* K of after:SEP:K */
    uint32_t off, len;  /* bytes:OFF:LEN */
    uint8_t delim_len;
    uint8_t delim[LEGACY_MAX_DELIMITER];
    uint16_t cutoff_len; /* component: new from here */
    uint8_t cutoff[LEGACY_MAX_BOUND];
    uint16_t start_len, stop_len; /* range: [start, stop) legacy */
    uint8_t start[LEGACY_MAX_BOUND];
    uint8_t stop[LEGACY_MAX_BOUND];
};

/* No rule: every key is new. */
void legacy_rule_init(struct legacy_rule *r);

/* component rule after:SEP:K (k >= 1) or, with k == 0, after:SEP:last. */
gboolean legacy_rule_after(struct legacy_rule *r, const void *delim,
                           size_t delim_len, uint32_t k, const void *cutoff,
                           size_t cutoff_len, GError **error)
    G_GNUC_WARN_UNUSED_RESULT;

/* component rule bytes:OFF:LEN (len >= 1). */
gboolean legacy_rule_bytes(struct legacy_rule *r, uint32_t off, uint32_t len,
                           const void *cutoff, size_t cutoff_len,
                           GError **error) G_GNUC_WARN_UNUSED_RESULT;

/* range rule: [start, stop) legacy; stop_len 0: no upper bound. */
gboolean legacy_rule_range(struct legacy_rule *r, const void *start,
                           size_t start_len, const void *stop, size_t stop_len,
                           GError **error) G_GNUC_WARN_UNUSED_RESULT;

gboolean legacy_rule_equal(const struct legacy_rule *a,
                           const struct legacy_rule *b);

/* Appends a component rule's legacy_component value as the config spells
 * it: bytes:OFF:LEN, after:DELIM:N or after:DELIM:last (DELIM escaped). */
void legacy_component_append(GString *out, const struct legacy_rule *r);

/* The rule as config text ("legacy_component=... legacy_cutoff=..."),
 * bytes escaped as the config file reads them.  g_free. */
char *legacy_rule_describe(const struct legacy_rule *r);

/* The component part of key; FALSE when the key lacks it (or the rule is
 * not a component rule). */
gboolean legacy_component(const struct legacy_rule *r, const uint8_t *key,
                          size_t len, const uint8_t **part, size_t *part_len);

/* Whether the rule calls key legacy.  The plain rule: see salt_route
 * for where a key goes. */
gboolean legacy_is_legacy(const struct legacy_rule *r, const uint8_t *key,
                          size_t len);

typedef enum {
    LEGACY_ROUTE_SALTED = 0, /* stored at salt || separator || key */
    LEGACY_ROUTE_LEGACY,     /* stored at key, unsalted */
    LEGACY_ROUTE_CLASH,      /* legacy, but key is a new key's physical
                                row: cannot be stored */
} legacy_route_t;

typedef enum {
    LEGACY_OWNER_SALTED = 0, /* a new key's row; *logical follows the salt */
    LEGACY_OWNER_LEGACY,     /* a legacy key's row; *logical is phys */
    LEGACY_OWNER_NONE,       /* no logical key of t is stored here (a row
                                written around the proxy) */
} legacy_owner_t;

/*
 * The physical bounds of a scan's legacy keys: the client's own bounds,
 * with HBase's semantics (forward [start, stop), reversed (stop, start],
 * empty = unbounded; a nonempty start equal to stop reads that one row),
 * narrowed to [start, stop) of a range rule where that can be said
 * exactly.  The pointers may be moved into the rule.  FALSE: no legacy
 * key is in range.
 */
gboolean legacy_scan_bounds(const struct legacy_rule *r, gboolean reversed,
                            const uint8_t **start, size_t *start_len,
                            const uint8_t **stop, size_t *stop_len);
