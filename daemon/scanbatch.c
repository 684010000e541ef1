/* scanbatch.c: one bucket's batch of rows, a row at a time. */
#include "scanbatch.h"

#include <string.h>

#include "legacy.h"
#include "salt.h"

void
scanbatch_init(struct scanbatch *b, const struct salt_table *salt,
               uint32_t bucket, const struct hbase1_field *key_field)
{
    memset(b, 0, sizeof(*b));
    b->salt = salt;
    b->bucket = bucket;
    b->key_field = key_field;
}

void
scanbatch_init_legacy(struct scanbatch *b, const struct salt_table *salt,
                      const struct hbase1_field *key_field)
{
    scanbatch_init(b, salt, salt->buckets, key_field);
    b->legacy = TRUE;
}

/*
 * Whether marks are the rows of the list at rd, as the scan of this very
 * reply left them: one per row and its end, in order, each row's first
 * field inside it, the first row where rd is.  Anything else (a framed
 * reply has none) and the rows are walked.
 */
static gboolean
scanbatch_marks_fit(const struct scanbatch *b, size_t len,
                    const struct wire_scan_mark *marks, size_t nmarks)
{
    if (marks == NULL || nmarks != (size_t)b->left + 1 ||
        marks[0].at != wire_reader_offset(&b->rd) ||
        marks[nmarks - 1].at > len) {
        return FALSE;
    }
    for (size_t i = 0; i + 1 < nmarks; i++) {
        if (marks[i + 1].at <= marks[i].at ||
            (marks[i].type != WIRE_T_STOP &&
             (marks[i].first <= marks[i].at ||
              marks[i].first >= marks[i + 1].at))) {
            return FALSE;
        }
    }
    return TRUE;
}

void
scanbatch_load(struct scanbatch *b, wire_proto_t proto, const uint8_t *msg,
               size_t len, const struct wire_limits *limits,
               const struct wire_scan_mark *marks, size_t nmarks)
{
    struct wire_msg m;
    uint8_t type, et;
    int16_t fid;

    wire_reader_init(&b->rd, proto, msg, len, TRUE, limits);
    wire_read_msg_begin(&b->rd, &m);
    wire_read_struct_begin(&b->rd);
    wire_read_field(&b->rd, &type, &fid);
    if (wire_read_list_begin(&b->rd, &et, &b->left) != WIRE_OK) {
        b->left = 0;
    }
    b->msg = msg;
    b->mark = b->left > 0 && scanbatch_marks_fit(b, len, marks, nmarks) ? marks
                                                                        : NULL;
}

/*
 * The row at b->rd by its mark, when its key is its first field: the
 * scan that marked it checked every byte of the reply, so only the key
 * is read.  FALSE: walk it instead.
 */
static gboolean
scanbatch_marked(struct scanbatch *b, const uint8_t **row, uint32_t *row_len)
{
    const struct wire_scan_mark *m = b->mark;
    const struct hbase1_field *kf = b->key_field;
    const uint8_t *start = b->msg + m->at, *end = b->msg + m[1].at;
    struct wire_reader kr;

    b->mark++;
    if (m->type != kf->type || m->fid != kf->fid) {
        return FALSE;
    }
    /* the key's own reader: its limits, its bytes up to the row's end */
    kr = b->rd;
    kr.pos = b->msg + m->first;
    kr.end = end;
    if (wire_read_binary(&kr, row, row_len) != WIRE_OK) {
        return FALSE;
    }
    b->key_first = TRUE;
    b->key_at = m->first - m->at;
    b->key_end = (uint32_t)(kr.pos - start);
    b->head = start;
    b->head_len = (size_t)(end - start);
    b->rd.pos = end;
    return TRUE;
}

/* Walks the row at b->rd once: its key (the first key field), its end. */
static gboolean
scanbatch_walk(struct scanbatch *b, const uint8_t **row, uint32_t *row_len)
{
    const struct hbase1_field *kf = b->key_field;
    const uint8_t *start = b->rd.pos;
    gboolean first = TRUE;
    uint8_t type;
    int16_t fid;

    *row = NULL;
    b->key_first = FALSE;
    if (wire_read_struct_begin(&b->rd) != WIRE_OK) {
        return FALSE;
    }
    while (wire_read_field(&b->rd, &type, &fid) == WIRE_OK &&
           type != WIRE_T_STOP) {
        if (*row == NULL && fid == kf->fid && type == kf->type) {
            const uint8_t *at = b->rd.pos;

            if (wire_read_binary(&b->rd, row, row_len) == WIRE_OK && first) {
                b->key_first = TRUE;
                b->key_at = (uint32_t)(at - start);
                b->key_end = (uint32_t)(b->rd.pos - start);
            }
        } else {
            wire_skip(&b->rd, type);
        }
        first = FALSE;
    }
    wire_read_struct_end(&b->rd);
    b->head = start;
    b->head_len = (size_t)(b->rd.pos - start);
    return b->rd.status == WIRE_OK && *row != NULL;
}

scanbatch_status_t
scanbatch_next(struct scanbatch *b)
{
    size_t plen = salt_bucket_prefix_len(b->salt, b->bucket);

    while (b->left > 0) {
        const uint8_t *row, *logical;
        uint32_t row_len = 0, bucket;
        size_t logical_len;

        b->left--;
        if ((b->mark == NULL || !scanbatch_marked(b, &row, &row_len)) &&
            !scanbatch_walk(b, &row, &row_len)) {
            b->left = 0;
            return SCANBATCH_MALFORMED;
        }
        b->salted = FALSE;
        b->phys = row;
        b->phys_len = row_len;
        if (b->salt->legacy.kind != LEGACY_NONE) {
            legacy_owner_t o = salt_owner(b->salt, row, row_len, &logical,
                                          &logical_len, &bucket);

            /* every row has one owner: the other side returns it */
            if (b->legacy ? o != LEGACY_OWNER_LEGACY
                          : o != LEGACY_OWNER_SALTED || bucket != b->bucket) {
                continue;
            }
            b->key = logical;
            b->key_len = logical_len;
            b->salted = !b->legacy;
            return SCANBATCH_ROW;
        }
        if (salt_strip(b->salt, row, row_len, &logical, &logical_len,
                       &bucket)) {
            if (bucket != b->bucket) {
                continue;
            }
            b->key = logical;
            b->key_len = logical_len;
            b->salted = TRUE;
        } else {
            /* no salt of ours: order it by what follows the prefix */
            b->key = row + MIN(plen, row_len);
            b->key_len = row_len - MIN(plen, row_len);
        }
        return SCANBATCH_ROW;
    }
    return SCANBATCH_END;
}

gboolean
scanbatch_copy_head(const struct scanbatch *b, wire_proto_t from,
                    struct wire_writer *wr)
{
    if (b->legacy && wr->proto == from) {
        /* stored under its logical key: as it came */
        wire_buf_append(wr->buf, b->head, b->head_len);
        return TRUE;
    }
    if (!b->key_first || !b->salted || wr->proto != from ||
        salt_bucket(b->salt, b->key, b->key_len) != b->bucket) {
        return FALSE;
    }
    wire_buf_append(wr->buf, b->head, b->key_at);
    wire_write_binary(wr, b->key, (uint32_t)b->key_len);
    wire_buf_append(wr->buf, b->head + b->key_end, b->head_len - b->key_end);
    return TRUE;
}
