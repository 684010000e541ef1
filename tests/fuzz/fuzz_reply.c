/* fuzz_reply.c: the backend reply path: codec_reply and codec_row_result. */
#include "fuzz_common.h"

#include "codec.h"
#include "hbase1.h"
#include "wire.h"

/*
 * Input: three selector bytes, then one backend reply (no frame).
 *   byte 0  bit 0 backend speaks compact, bit 1 client speaks compact,
 *           bit 2 tight limits
 *   byte 1  the method of the call, an index into the method table
 *   byte 2  the salted table of the call (fuzz_common.h order), 0xff none
 * The backend sequence id is FUZZ_SEQID.  The bytes are also fed to
 * codec_reply as the front of an unframed stream (codec_io.stream): where
 * wire_message_scan finds a whole message it must do exactly what
 * codec_reply does on that message (status, bytes, length); where the
 * scan wants more it waits or (a wrong header already) closes; where the
 * scan fails it closes.  The same bytes are then read
 * as a run of TRowResult structs through codec_row_result, the way the
 * scan engine unsalts bucket replies.
 */

#define FUZZ_SEQID 7

static const struct wire_limits fuzz_tight_limits = {
    .max_message = 4096,
    .max_string = 512,
    .max_container = 64,
    .max_depth = 8,
};

static void
fuzz_check_message(wire_proto_t proto, const struct wire_buf *out)
{
    const char *why = NULL;
    size_t n = 0;

    FUZZ_CHECK(wire_message_scan(proto, FALSE, out->data, out->len,
                                 &wire_default_limits, &n, &why) == WIRE_OK);
    FUZZ_CHECK(n == out->len);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const struct hbase1_method *m;
    const struct hbase1_scanner *scanner = NULL;
    const struct salt_table *salt;
    const struct wire_limits *limits;
    struct codec_call call;
    struct codec_error err;
    struct wire_reader r;
    struct wire_writer w;
    struct wire_buf out;
    wire_proto_t from, to;
    size_t nmethods;
    uint32_t rows = 0;

    if (size < 3) {
        return 0;
    }
    from = (data[0] & 1) ? WIRE_COMPACT : WIRE_BINARY;
    to = (data[0] & 2) ? WIRE_COMPACT : WIRE_BINARY;
    limits = (data[0] & 4) ? &fuzz_tight_limits : &wire_default_limits;
    /* Thrift1's methods, then Thrift2's */
    nmethods = hbase1_method_count();
    m = hbase1_method_at(data[1] % nmethods);
    /* the method's service's scanners, found by kind as the engine has
     * them: rows of TRowResult, or Thrift2's TResult */
    for (size_t i = 0; i < m->service->n && scanner == NULL; i++) {
        if (m->service->table[i].kind == HBASE1_SCAN_NEXT) {
            scanner = m->service->table[i].scanner;
        }
    }
    FUZZ_CHECK(scanner != NULL);
    salt = fuzz_salt(data[2]);
    data += 3;
    size -= 3;

    /* the call as codec_request leaves it */
    memset(&call, 0, sizeof(call));
    call.service = m->service;
    call.method = m;
    call.salt = salt;
    call.client_seqid = 99;
    call.client_strict = TRUE;
    call.name_len = m->name_len;
    memcpy(call.name, m->name, m->name_len);

    wire_buf_init(&out);
    {
        struct wire_buf streamed, whole;
        struct codec_tally tally;
        struct codec_error serr, werr;
        const char *why = NULL;
        size_t n = 0;
        wire_status_t scan;
        codec_status_t sst;
        struct codec_io sio = {
            .data = data,
            .len = size,
            .from = from,
            .stream = TRUE,
            .to = to,
            .backend_seqid = FUZZ_SEQID,
            .out = &streamed,
            .limits = limits,
            .tally = &tally,
            .err = &serr,
        };

        wire_buf_init(&streamed);
        wire_buf_init(&whole);
        scan = wire_message_scan(from, FALSE, data, size, limits, &n, &why);
        fuzz_check_resumable(from, data, size, limits);
        codec_tally_init(&tally);
        tally.keys_on = TRUE;
        sst = codec_reply(&sio, &call);
        /* rows handed back: noted as rows, each within its key */
        for (uint32_t i = 0; i < tally.nnotes; i++) {
            FUZZ_CHECK(tally.notes[i].kind == CODEC_KEY_ROW);
            /* within the reply */
            FUZZ_CHECK(tally.notes[i].key >= data &&
                       tally.notes[i].len <= size &&
                       (size_t)(tally.notes[i].key - data) <=
                           size - tally.notes[i].len);
            FUZZ_CHECK(tally.notes[i].bucket <= tally.notes[i].salt->buckets);
        }
        if (scan == WIRE_AGAIN) {
            FUZZ_CHECK(sst == CODEC_AGAIN || sst == CODEC_CLOSE);
            FUZZ_CHECK(sst != CODEC_AGAIN || streamed.len == 0);
            FUZZ_CHECK(sst != CODEC_AGAIN || tally.nnotes == 0);
        } else if (scan == WIRE_ERROR) {
            FUZZ_CHECK(sst == CODEC_CLOSE);
        } else {
            struct codec_io wio = {
                .data = data,
                .len = n,
                .from = from,
                .to = to,
                .backend_seqid = FUZZ_SEQID,
                .out = &whole,
                .limits = limits,
                .err = &werr,
            };
            codec_status_t wst = codec_reply(&wio, &call);

            FUZZ_CHECK(sst == wst);
            FUZZ_CHECK(wst != CODEC_OK || sio.used == n);
            FUZZ_CHECK(streamed.len == whole.len &&
                       (whole.len == 0 ||
                        memcmp(streamed.data, whole.data, whole.len) == 0));
        }
        wire_buf_free(&streamed);
        wire_buf_free(&whole);
        codec_tally_free(&tally);
    }
    if (codec_reply(&(struct codec_io){ .data = data,
                                        .len = size,
                                        .from = from,
                                        .to = to,
                                        .backend_seqid = FUZZ_SEQID,
                                        .out = &out,
                                        .limits = limits,
                                        .err = &err },
                    &call) == CODEC_OK) {
        fuzz_check_message(to, &out);
    } else {
        FUZZ_CHECK(err.message != NULL);
        FUZZ_CHECK(out.len == 0);
        codec_write_io_error(&call, to, err.message, TRUE, &out);
        fuzz_check_message(to, &out);
    }

    /* a bucket's rows, one after another */
    wire_buf_clear(&out);
    wire_reader_init(&r, from, data, size, TRUE, limits);
    wire_writer_init(&w, to, &out);
    while (r.pos < r.end &&
           codec_row_result(scanner, &r, &w, salt, NULL) == WIRE_OK) {
        rows++;
    }
    if (r.status == WIRE_OK) {
        /* what was written reads back as that many structs */
        struct wire_reader back;

        wire_reader_init(&back, to, out.data, out.len, TRUE,
                         &wire_default_limits);
        for (uint32_t i = 0; i < rows; i++) {
            FUZZ_CHECK(wire_skip(&back, WIRE_T_STRUCT) == WIRE_OK);
        }
        FUZZ_CHECK(back.pos == back.end);
    }
    wire_buf_free(&out);
    return 0;
}
