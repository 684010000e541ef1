/* scanargs.h: scanner calls read by role, and the scan sent each bucket. */
#pragma once

#include <glib.h>
#include <stddef.h>
#include <stdint.h>

#include "hbase1.h"
#include "wire.h"

struct salt_table;
struct scanfilter;

/* Scan structs of one call whose every field is kept (see scans). */
#define SCANARGS_MAX_SCANS 4

/* A field passed on to every bucket as the client sent it. */
struct scanargs_passed {
    struct wire_reader at; /* positioned at the value */
    gboolean set;
};

/*
 * What a scanner call asks for, read by role from the method table
 * (hbase1.h), whatever service or method it came as: the scannerOpen*
 * variants, their TScan, and the id and row count of the calls on an
 * open scanner.  Pointers and readers point into the client's message.
 * Java keeps the last of a field sent twice, and so does the parser.
 */
struct scanargs {
    const uint8_t *table;
    uint32_t table_len;
    const uint8_t *start, *stop;
    uint32_t start_len, stop_len;
    gboolean has_stop;
    gboolean prefix; /* start is also every row's prefix */
    gboolean has_caching;
    int32_t caching;
    const uint8_t *filter;
    uint32_t filter_len;
    gboolean has_filter;
    gboolean reversed;
    gboolean has_limit; /* Thrift2's TScan.limit */
    int32_t limit;
    gboolean drop_limit;       /* not passed on to the buckets: the merge
                            alone applies it */
    gboolean has_filter_bytes; /* Thrift2's TScan.filterBytes: a protobuf
                                  filter, rewritten per bucket */
    const uint8_t *filter_bytes;
    uint32_t filter_bytes_len;
    /* the scan structs as sent (a second one adds to the first, as in
     * Java): every field the engine does not write itself (no role, or
     * one it only passes on) goes to each bucket from here, so a field
     * the proxy does not know is never dropped; more structs than this
     * are read, but only these copied */
    struct wire_reader scans[SCANARGS_MAX_SCANS];
    unsigned nscans; /* passed on: the roles scanargs_passed names */
    struct scanargs_passed columns, timestamp, batch, sorted, cache_blocks,
        attributes;
    gboolean has_id;
    int32_t id;           /* scanner id */
    int32_t nrows;        /* rows asked; 1 for a call without */
    const char *repeated; /* static text: a field the scan is
                                       routed by came twice, or NULL */
};

/*
 * Reads the arguments of scanner call m; r is at the argument struct.
 * FALSE: the struct is malformed (r->error says why).
 */
gboolean scanargs_parse(struct scanargs *a, const struct hbase1_method *m,
                        struct wire_reader *r);

/*
 * Bounds longer than the longest logical key the table stores (limit)
 * made into bounds of at most limit bytes that select the same rows;
 * new bytes go to *start_buf, *stop_buf for the caller to g_free.
 * FALSE: no row the table can store is in range.
 */
gboolean scanargs_fit_bounds(struct scanargs *a, size_t limit,
                             uint8_t **start_buf, uint8_t **stop_buf);

/* How a scan is spread over the buckets of its table. */
struct scanargs_bucket {
    const struct salt_table *salt;
    uint32_t bucket;                 /* the bucket this open reads */
    uint32_t caching;                /* rows of the first fetch */
    const struct scanfilter *filter; /* per-bucket filter, or NULL */
    gboolean legacy;                 /* not a bucket: the table's legacy
                                        (unsalted) keys, read within the
                                        bounds below with the filter as
                                        the client wrote it */
    const uint8_t *legacy_start, *legacy_stop;
    size_t legacy_start_len, legacy_stop_len; /* stop 0: unbounded */
};

/*
 * The argument struct of the service's open call (sc->open) for one
 * bucket: the table, a scan bounded to the bucket with the filter
 * rewritten for it, everything else as the client gave it.  For the
 * legacy range (b->legacy): its bounds as they are, the filter
 * unrewritten.
 */
void scanargs_write_open(const struct scanargs *a,
                         const struct hbase1_scanner *sc,
                         const struct scanargs_bucket *b,
                         struct wire_writer *wr);

/*
 * An open's argument struct as scanargs_write_open wrote it for one
 * bucket (args, in proto), written again with its scan's start row
 * replaced by start: the same scan from another row.  *stop, *stop_len:
 * the scan's stop row in args (length 0: none).  FALSE: args do not
 * parse within limits (those the client's open was read with; nothing
 * written is of use then).
 */
gboolean scanargs_rewrite_start(const struct hbase1_scanner *sc,
                                wire_proto_t proto,
                                const struct wire_limits *limits,
                                const uint8_t *args, size_t len,
                                const uint8_t *start, uint32_t start_len,
                                struct wire_writer *wr, const uint8_t **stop,
                                uint32_t *stop_len);

/* The argument struct of a call on an open scanner (fetch, close, or a
 * pass-through call): its id, and nrows when m takes a count. */
void scanargs_write_id(const struct hbase1_method *m, int32_t id,
                       int32_t nrows, struct wire_writer *wr);
