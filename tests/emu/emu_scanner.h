/* emu_scanner.h: process-wide HBase scanners that read the store lazily. */
#pragma once

#include <glib.h>

#include "emu_store.h"

typedef struct emu_scanner emu_scanner;

/*
 * Turns one row's cells into reply objects (GObjects) appended to out:
 * one, or with batch > 0 consecutive ones of at most batch cells.
 */
typedef void (*emu_scan_emit_fn)(GPtrArray *out, const uint8_t *key,
                                 size_t key_len, const struct emu_cell *cells,
                                 guint n, gboolean sorted, int32_t batch);

/*
 * What a scanner open asks for; bytes and arrays are copied at open.
 * Fields after 'filter_len' are Thrift2's and read as "not asked for"
 * when zero.
 */
struct emu_scan_spec {
    const uint8_t *start; /* inclusive; empty: table start (end if reversed) */
    size_t start_len;
    const uint8_t *stop; /* exclusive; empty: no stop */
    size_t stop_len;
    gboolean has_prefix; /* scannerOpenWithPrefix: stop at first miss */
    int64_t max_ts;      /* exclusive bound, EMU_LATEST_TS */
    emu_colspec *cols;   /* taken over; NULL: all columns */
    int32_t batch;       /* cells per TRowResult, <= 0: whole rows */
    gboolean sorted;     /* sortedColumns instead of columns */
    gboolean reversed;
    const uint8_t *filter; /* filter string or NULL */
    size_t filter_len;
    emu_scan_emit_fn emit;   /* NULL: Thrift1 TRowResults */
    int64_t min_ts;          /* inclusive lower time bound */
    int32_t max_versions;    /* <= 0: 1 */
    const int64_t *fam_min;  /* per-family time ranges, as in */
    const int64_t *fam_max;  /* struct emu_read; NULL: none */
    int32_t limit;           /* rows at most; <= 0: no limit */
    gboolean stop_inclusive; /* the stop row itself is returned */
};

/*
 * Starts the registry.  Idle scanners expire after timeout_ms, or
 * timeout2_ms for Thrift2's (those opened with an emit function): HBase's
 * two servers size their scanner caches differently.
 */
void emu_scanner_init(int64_t timeout_ms, int64_t timeout2_ms);
void emu_scanner_shutdown(void);

/* Opens a scanner; returns its id, or -1 with an IOError-shaped error. */
/* A scanner of no service's: no id, not listed (getScannerResults). */
emu_scanner *emu_scanner_new(emu_table *t, struct emu_scan_spec *spec,
                             GError **error);
gboolean emu_scanner_open(emu_table *t, struct emu_scan_spec *spec,
                          int32_t *id, GError **error);
/* A live scanner by id (ref'd), or NULL with "scanner ID is invalid". */
emu_scanner *emu_scanner_get(int32_t id, GError **error);
/*
 * As emu_scanner_get, for the service whose scanners emit with 'emit'
 * (NULL: Thrift1): HBase runs each service in its own process, so one
 * service's ids are unknown to the other.
 */
emu_scanner *emu_scanner_get_for(int32_t id, emu_scan_emit_fn emit,
                                 GError **error);
void emu_scanner_unref(emu_scanner *sc);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(emu_scanner, emu_scanner_unref)

emu_table *emu_scanner_table(emu_scanner *sc);
/* Key where the next read starts (for region attribution), copied. */
GBytes *emu_scanner_position(emu_scanner *sc);
/* Appends up to n reply objects to out; fewer only at the end. */
gboolean emu_scanner_fetch(emu_scanner *sc, int32_t n, GPtrArray *out,
                           GError **error);
/*
 * Marks a call running on sc (on: TRUE at its start, FALSE at its end,
 * latency included).  HBase's ClientScanner is not thread-safe: a close
 * while a call on the same scanner runs on another connection breaks that
 * call (NullPointerException in loadCache) and may hang it; the emulator
 * serves both, but says so on stderr, for the tests to see.
 */
void emu_scanner_busy(emu_scanner *sc, gboolean on);
gboolean emu_scanner_close(int32_t id, GError **error);
gboolean emu_scanner_close_for(int32_t id, emu_scan_emit_fn emit,
                               GError **error);
/* Drops expired scanners; returns how many are still open. */
guint emu_scanner_expire(void);
/*
 * Scanners belong to the listener (one HBase Thrift server) that opened
 * them: a thread serving a listener's calls names it once (0, the
 * default, is a listener too), scanners it opens are its, and ids of other
 * listeners' scanners are unknown to it.  Ids stay unique per service
 * across listeners, so a stale id is always an error, never another
 * scanner.  emu_scanner_drop_owner forgets a stopped listener's scanners;
 * it returns how many.
 */
void emu_scanner_set_owner(guint owner);
guint emu_scanner_drop_owner(guint owner);
