/* scanbatch.h: one bucket's batch of rows, a row at a time: pure, no I/O. */
#pragma once

#include <glib.h>
#include <stddef.h>
#include <stdint.h>

#include "hbase1.h"
#include "wire.h"

struct salt_table;

/*
 * A batch is a fetch's whole reply, as the backend sent it.  The head is
 * the row the merge sees: its bytes in the batch and its logical key
 * (what the heap orders by).  Each row is walked once: by the resumable
 * scan that received an unframed reply, whose marks give its key and
 * where it ends, else by scanbatch_next; scanbatch_copy_head then writes
 * it for the client without walking it again.
 */
struct scanbatch {
    const struct salt_table *salt;        /* the scan's table */
    uint32_t bucket;                      /* the bucket it reads */
    const struct hbase1_field *key_field; /* the row's key in a row */
    struct wire_reader rd;                /* at the row after the head */
    uint32_t left;                        /* rows after the head */
    const uint8_t *msg;                   /* the reply */
    const struct wire_scan_mark *mark;    /* the row after the head's
                                             mark, or NULL: walk it */
    const uint8_t *head;                  /* head row: its struct's bytes */
    size_t head_len;
    const uint8_t *key; /* head's logical key */
    size_t key_len;
    const uint8_t *phys; /* head's key as stored (salted); NULL
                                       before the first row */
    uint32_t phys_len;
    gboolean key_first; /* the key is the row's first field,
                                       at head + key_at .. key_end
                                       (length prefix included) */
    uint32_t key_at, key_end;
    gboolean salted; /* the key had a salt of this bucket */
    gboolean legacy; /* reads the table's legacy keys, unsalted */
};

typedef enum {
    SCANBATCH_ROW = 0,   /* the head is the next row */
    SCANBATCH_END,       /* no row left in the batch */
    SCANBATCH_MALFORMED, /* a row that does not parse, or has
                                       no key: the batch is done */
} scanbatch_status_t;

void scanbatch_init(struct scanbatch *b, const struct salt_table *salt,
                    uint32_t bucket, const struct hbase1_field *key_field);

/* A batch of the legacy range (legacy.h): its rows are unsalted. */
void scanbatch_init_legacy(struct scanbatch *b, const struct salt_table *salt,
                           const struct hbase1_field *key_field);

/*
 * Starts on a fetch's reply (msg, len: its header, the result struct and
 * the list, which the caller has checked), before its first row.  marks
 * (nmarks of them, or NULL) are its rows' as the resumable scan found
 * them (wire_scan_mark): a row whose key is its first field is then
 * not walked again.  Marks that do not fit the reply are not used.
 */
void scanbatch_load(struct scanbatch *b, wire_proto_t proto,
                    const uint8_t *msg, size_t len,
                    const struct wire_limits *limits,
                    const struct wire_scan_mark *marks, size_t nmarks);

/*
 * Moves the head to the next row.  Rows whose salt names another bucket
 * (a reversed scan from a bucket's end can see the next bucket's first
 * row) are passed over; a row without a salt of the table is ordered by
 * what follows the prefix.  A table with a legacy rule keeps only the
 * rows this batch owns (salt_owner): a bucket's salted rows of new
 * keys, or the legacy range's legacy rows, ordered by their logical key.
 */
scanbatch_status_t scanbatch_next(struct scanbatch *b);

/*
 * Writes the head row for the client with its key unsalted when nothing
 * else changes: the same protocol (from is the batch's) and the key
 * first in the row, as HBase writes it; the salt must name the key's own
 * bucket, as codec_row_out checks.  The bytes around the key go as they
 * came.  FALSE, writing nothing: re-encode the row instead
 * (codec_row_result).
 */
gboolean scanbatch_copy_head(const struct scanbatch *b, wire_proto_t from,
                             struct wire_writer *wr);
