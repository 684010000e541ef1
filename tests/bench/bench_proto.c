/* bench_proto.c: Thrift1 and Thrift2 requests hbase-bench sends, and the replies it reads, via daemon/wire.h. */
#include "bench.h"

#include <string.h>

/* Start a call: optional frame, header, argument struct; returns the frame
 * offset for bench_req_end. */
static size_t
bench_req_begin(struct bench_codec *c, struct wire_buf *b,
                struct wire_writer *w, const char *method)
{
    size_t off = c->framed ? wire_frame_begin(b) : 0;

    wire_writer_init(w, c->proto, b);
    wire_write_msg_begin(w, (const uint8_t *)method, (uint32_t)strlen(method),
                         WIRE_CALL, ++c->seqid);
    wire_write_struct_begin(w);
    return off;
}

static void
bench_req_end(struct bench_codec *c, struct wire_buf *b, struct wire_writer *w,
              size_t off)
{
    wire_write_struct_end(w);
    if (c->framed) {
        wire_frame_end(b, off);
    }
}

static void
bench_field_str(struct wire_writer *w, int16_t fid, const void *p, size_t n)
{
    wire_write_field(w, WIRE_T_STRING, fid);
    wire_write_binary(w, p, (uint32_t)n);
}

/* "family:qualifier" as TColumn/TColumnValue's fields 1 and 2 (Thrift2
 * names the two apart; a column without ':' is a whole family). */
static void
bench_field_column2(struct wire_writer *w, const char *column)
{
    const char *colon = strchr(column, ':');
    size_t flen = colon != NULL ? (size_t)(colon - column) : strlen(column);

    bench_field_str(w, 1, column, flen);
    if (colon != NULL) {
        bench_field_str(w, 2, colon + 1, strlen(colon + 1));
    }
}

/* TGet { 1: row, 2: columns } */
static void
bench_tget(struct wire_writer *w, const struct bench_key *row,
           const char *column)
{
    wire_write_struct_begin(w);
    bench_field_str(w, 1, row->k, row->len);
    if (column != NULL) {
        wire_write_field(w, WIRE_T_LIST, 2);
        wire_write_list_begin(w, WIRE_T_STRUCT, 1);
        wire_write_struct_begin(w);
        bench_field_column2(w, column);
        wire_write_struct_end(w);
        wire_write_container_end(w);
    }
    wire_write_struct_end(w);
}

void
bench_req_get_row(struct bench_codec *c, struct wire_buf *b, const char *table,
                  const struct bench_key *row, const char *column)
{
    struct wire_writer w;
    size_t off;

    if (c->thrift2) {
        off = bench_req_begin(c, b, &w, "get");
        bench_field_str(&w, 1, table, strlen(table));
        wire_write_field(&w, WIRE_T_STRUCT, 2);
        bench_tget(&w, row, column);
        bench_req_end(c, b, &w, off);
        return;
    }
    off = bench_req_begin(c, b, &w, "getRowWithColumns");
    bench_field_str(&w, 1, table, strlen(table));
    bench_field_str(&w, 2, row->k, row->len);
    wire_write_field(&w, WIRE_T_LIST, 3);
    wire_write_list_begin(&w, WIRE_T_STRING, 1);
    wire_write_binary(&w, column, (uint32_t)strlen(column));
    wire_write_container_end(&w);
    bench_req_end(c, b, &w, off);
}

/* put(table, TPut) for one row, putMultiple(table, list<TPut>) for more:
 * TPut { 1: row, 2: list<TColumnValue { 1: family, 2: qualifier,
 * 3: value }> } */
static void
bench_req_puts2(struct bench_codec *c, struct wire_buf *b, const char *table,
                const struct bench_key *rows, unsigned n, const char *column,
                const uint8_t *value, uint32_t vlen)
{
    struct wire_writer w;
    size_t off = bench_req_begin(c, b, &w, n == 1 ? "put" : "putMultiple");

    bench_field_str(&w, 1, table, strlen(table));
    if (n == 1) {
        wire_write_field(&w, WIRE_T_STRUCT, 2);
    } else {
        wire_write_field(&w, WIRE_T_LIST, 2);
        wire_write_list_begin(&w, WIRE_T_STRUCT, n);
    }
    for (unsigned i = 0; i < n; i++) {
        wire_write_struct_begin(&w); /* TPut */
        bench_field_str(&w, 1, rows[i].k, rows[i].len);
        wire_write_field(&w, WIRE_T_LIST, 2);
        wire_write_list_begin(&w, WIRE_T_STRUCT, 1);
        wire_write_struct_begin(&w); /* TColumnValue */
        bench_field_column2(&w, column);
        bench_field_str(&w, 3, value, vlen);
        wire_write_struct_end(&w);
        wire_write_container_end(&w);
        wire_write_struct_end(&w);
    }
    if (n != 1) {
        wire_write_container_end(&w);
    }
    bench_req_end(c, b, &w, off);
}

void
bench_req_mutate_rows(struct bench_codec *c, struct wire_buf *b,
                      const char *table, const struct bench_key *rows,
                      unsigned n, const char *column, const uint8_t *value,
                      uint32_t vlen)
{
    struct wire_writer w;
    size_t off;

    if (c->thrift2) {
        bench_req_puts2(c, b, table, rows, n, column, value, vlen);
        return;
    }
    off = bench_req_begin(c, b, &w, "mutateRows");

    bench_field_str(&w, 1, table, strlen(table));
    wire_write_field(&w, WIRE_T_LIST, 2);
    wire_write_list_begin(&w, WIRE_T_STRUCT, n);
    for (unsigned i = 0; i < n; i++) {
        wire_write_struct_begin(&w); /* BatchMutation */
        bench_field_str(&w, 1, rows[i].k, rows[i].len);
        wire_write_field(&w, WIRE_T_LIST, 2);
        wire_write_list_begin(&w, WIRE_T_STRUCT, 1);
        wire_write_struct_begin(&w); /* Mutation */
        wire_write_field(&w, WIRE_T_BOOL, 1);
        wire_write_bool(&w, FALSE);
        bench_field_str(&w, 2, column, strlen(column));
        bench_field_str(&w, 3, value, vlen);
        wire_write_struct_end(&w);
        wire_write_container_end(&w);
        wire_write_struct_end(&w);
    }
    wire_write_container_end(&w);
    bench_req_end(c, b, &w, off);
}

void
bench_req_get_rows(struct bench_codec *c, struct wire_buf *b,
                   const char *table, const struct bench_key *rows,
                   const unsigned *idx, unsigned n)
{
    struct wire_writer w;
    size_t off = bench_req_begin(c, b, &w,
                                 c->thrift2 ? "getMultiple" : "getRows");

    bench_field_str(&w, 1, table, strlen(table));
    wire_write_field(&w, WIRE_T_LIST, 2);
    wire_write_list_begin(&w, c->thrift2 ? WIRE_T_STRUCT : WIRE_T_STRING, n);
    for (unsigned i = 0; i < n; i++) {
        const struct bench_key *k = &rows[idx != NULL ? idx[i] : i];

        if (c->thrift2) {
            bench_tget(&w, k, NULL); /* whole rows, as getRows reads */
        } else {
            wire_write_binary(&w, k->k, k->len);
        }
    }
    wire_write_container_end(&w);
    bench_req_end(c, b, &w, off);
}

void
bench_req_scan_open(struct bench_codec *c, struct wire_buf *b,
                    const char *table, const uint8_t *start, size_t start_len,
                    const uint8_t *stop, size_t stop_len, int32_t caching)
{
    struct wire_writer w;
    size_t off = bench_req_begin(c, b, &w,
                                 c->thrift2 ? "openScanner"
                                            : "scannerOpenWithScan");

    bench_field_str(&w, 1, table, strlen(table));
    wire_write_field(&w, WIRE_T_STRUCT, 2);
    wire_write_struct_begin(&w); /* TScan, either service's */
    if (start_len > 0) {
        bench_field_str(&w, 1, start, start_len);
    }
    if (stop_len > 0) {
        bench_field_str(&w, 2, stop, stop_len);
    }
    if (caching > 0) {
        /* Thrift1's TScan.caching is field 5, Thrift2's field 4 */
        wire_write_field(&w, WIRE_T_I32, c->thrift2 ? 4 : 5);
        wire_write_i32(&w, caching);
    }
    wire_write_struct_end(&w);
    bench_req_end(c, b, &w, off);
}

void
bench_req_scan_get_list(struct bench_codec *c, struct wire_buf *b, int32_t id,
                        int32_t n)
{
    struct wire_writer w;
    size_t off = bench_req_begin(c, b, &w,
                                 c->thrift2 ? "getScannerRows"
                                            : "scannerGetList");

    wire_write_field(&w, WIRE_T_I32, 1);
    wire_write_i32(&w, id);
    wire_write_field(&w, WIRE_T_I32, 2);
    wire_write_i32(&w, n);
    bench_req_end(c, b, &w, off);
}

void
bench_req_scan_close(struct bench_codec *c, struct wire_buf *b, int32_t id)
{
    struct wire_writer w;
    size_t off = bench_req_begin(c, b, &w,
                                 c->thrift2 ? "closeScanner" : "scannerClose");

    wire_write_field(&w, WIRE_T_I32, 1);
    wire_write_i32(&w, id);
    bench_req_end(c, b, &w, off);
}

gssize
bench_reply_length(struct bench_codec *c, struct wire_scan *scan,
                   const uint8_t *buf, size_t len)
{
    size_t n = 0;
    const char *why = NULL;

    if (c->framed) {
        /* no need to walk the message: the frame says it */
        uint32_t flen;

        if (len < 4) {
            return 0;
        }
        flen = ((uint32_t)buf[0] << 24) | ((uint32_t)buf[1] << 16) |
               ((uint32_t)buf[2] << 8) | buf[3];
        if (flen > c->limits.max_message) {
            return -1;
        }
        return len >= (size_t)flen + 4 ? (gssize)flen + 4 : 0;
    }
    /* resumed where the last read left it: big replies arriving in many
     * reads cost one walk, as in the proxy */
    switch (wire_scan_feed(scan, c->proto, buf, len, &c->limits, &n, &why)) {
    case WIRE_OK: wire_scan_init(scan); return (gssize)n;
    case WIRE_AGAIN: return 0;
    default: return -1;
    }
}

/* One TRowResult or TResult (both carry the row in field 1; a Thrift2
 * TResult without it is a missing row): keep its key, skip the cells. */
static void
bench_reply_row(struct wire_reader *r, struct bench_reply *rep)
{
    struct bench_rowref ref = { NULL, 0 };
    uint8_t t;
    int16_t fid;

    wire_read_struct_begin(r);
    while (wire_read_field(r, &t, &fid) == WIRE_OK && t != WIRE_T_STOP) {
        if (fid == 1 && t == WIRE_T_STRING) {
            wire_read_binary(r, &ref.p, &ref.len);
        } else {
            wire_skip(r, t);
        }
    }
    wire_read_struct_end(r);
    if (ref.p != NULL) {
        g_array_append_val(rep->rows, ref);
    }
}

/* list<TRowResult> or list<TResult>: keep each row key, skip the cells. */
static void
bench_reply_rows(struct wire_reader *r, struct bench_reply *rep)
{
    uint8_t et;
    uint32_t n;

    if (wire_read_list_begin(r, &et, &n) != WIRE_OK) {
        return;
    }
    for (uint32_t i = 0; i < n && r->status == WIRE_OK; i++) {
        if (et != WIRE_T_STRUCT) {
            wire_skip(r, et);
        } else {
            bench_reply_row(r, rep);
        }
    }
    wire_read_container_end(r);
}

void
bench_reply_parse(struct bench_codec *c, const uint8_t *msg, size_t len,
                  struct bench_reply *rep)
{
    struct wire_reader r;
    struct wire_msg m;
    uint8_t t;
    int16_t fid;
    gboolean got_success = FALSE, got_exception = FALSE;

    rep->ok = FALSE;
    rep->error = NULL;
    rep->i32 = -1;
    g_array_set_size(rep->rows, 0);
    if (c->framed) {
        msg += 4;
        len -= 4;
    }
    wire_reader_init(&r, c->proto, msg, len, TRUE, &c->limits);
    if (wire_read_msg_begin(&r, &m) != WIRE_OK) {
        rep->error = r.error ? r.error : "bad message header";
        return;
    }
    if (m.type == WIRE_EXCEPTION) {
        rep->error = "TApplicationException";
        return;
    }
    if (m.type != WIRE_REPLY) {
        rep->error = "not a reply";
        return;
    }
    wire_read_struct_begin(&r);
    while (wire_read_field(&r, &t, &fid) == WIRE_OK && t != WIRE_T_STOP) {
        if (fid == 0 && t == WIRE_T_LIST) {
            bench_reply_rows(&r, rep);
            got_success = TRUE;
        } else if (fid == 0 && t == WIRE_T_STRUCT) {
            bench_reply_row(&r, rep); /* Thrift2 get: one TResult */
            got_success = TRUE;
        } else if (fid == 0 && t == WIRE_T_I32) {
            rep->i32 = wire_read_i32(&r);
            got_success = TRUE;
        } else {
            if (fid != 0) {
                got_exception = TRUE;
            }
            wire_skip(&r, t);
            got_success = got_success || fid == 0;
        }
    }
    wire_read_struct_end(&r);
    if (r.status != WIRE_OK) {
        rep->error = r.error ? r.error : "truncated reply";
        return;
    }
    if (got_exception) {
        rep->error = "IOError/IllegalArgument from the server";
        return;
    }
    (void)got_success; /* void methods carry no success field */
    rep->ok = TRUE;
}
