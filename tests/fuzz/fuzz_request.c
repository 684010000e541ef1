/* fuzz_request.c: the client request path: framing, then codec_request. */
#include "fuzz_common.h"

#include "codec.h"
#include "hbase1.h"
#include "salt.h"
#include "wire.h"

/*
 * Input: one flag byte, then the bytes a client sends.
 *   bit 0  client speaks compact (else binary)
 *   bit 1  client uses framed transport
 *   bit 2  backend speaks compact
 *   bit 3  tight limits (small strings, containers, depth), as a small
 *          max_frame_size would give
 *   bit 4  the client speaks Thrift2 (THBaseService's method table)
 * Messages are cut from the stream with wire_message_scan (at most
 * max_message bytes looked at unframed), then each goes through
 * codec_request.  Every message codec_request produces must itself be one
 * whole, valid message.  Unframed, the daemon instead runs codec_request
 * on the raw stream (codec_io.stream), which finds the end as it
 * rewrites: it must agree with that two-pass reference exactly (status,
 * length, bytes), AGAIN where the scan wants more, CLOSE where it fails.
 *
 * What the codec accepts must be what HBase acts on: Java keeps the last
 * of a field sent twice, so a decoder of its own here reads each call
 * that way and checks that the codec routed it by that table, and that
 * the row the backend gets (as HBase would read it, last again) is that
 * row salted for that table.
 */

static const struct wire_limits fuzz_tight_limits = {
    .max_message = 4096,
    .max_string = 512,
    .max_container = 64,
    .max_depth = 8,
};

/* out[from..] must hold exactly one whole message in proto. */
static void
fuzz_check_message(wire_proto_t proto, const struct wire_buf *out, size_t from)
{
    const char *why = NULL;
    size_t n = 0;
    wire_status_t st;

    st = wire_message_scan(proto, FALSE, out->data + from, out->len - from,
                           &wire_default_limits, &n, &why);
    if (st != WIRE_OK) {
        fprintf(stderr, "output does not scan: %s\n",
                why != NULL ? why : "truncated");
    }
    FUZZ_CHECK(st == WIRE_OK);
    FUZZ_CHECK(n == out->len - from);
}

/*
 * The last top-level argument fid of the given type, as Java reads it.
 * FALSE when absent or when the message does not parse.
 */
static gboolean
fuzz_last_arg(wire_proto_t proto, const uint8_t *msg, size_t len, int16_t want,
              const uint8_t **data, uint32_t *data_len)
{
    struct wire_reader r;
    struct wire_msg m;
    gboolean found = FALSE;
    uint8_t type;
    int16_t fid;

    wire_reader_init(&r, proto, msg, len, TRUE, &wire_default_limits);
    if (wire_read_msg_begin(&r, &m) != WIRE_OK ||
        wire_read_struct_begin(&r) != WIRE_OK) {
        return FALSE;
    }
    while (wire_read_field(&r, &type, &fid) == WIRE_OK &&
           type != WIRE_T_STOP) {
        if (fid == want && type == WIRE_T_STRING) {
            found = wire_read_binary(&r, data, data_len) == WIRE_OK;
        } else if (wire_skip(&r, type) != WIRE_OK) {
            return FALSE;
        }
    }
    return found && r.status == WIRE_OK;
}

/* A call the codec accepted, checked against a last-wins reading. */
static void
fuzz_check_routing(const struct config *cfg, const struct codec_call *call,
                   wire_proto_t from, const uint8_t *msg, size_t len,
                   wire_proto_t to, const struct wire_buf *out)
{
    const struct hbase1_field *tf, *rf;
    const struct config_table *t;
    const uint8_t *name, *row, *sent;
    uint32_t name_len, row_len, sent_len;
    uint8_t phys[SALT_HBASE_MAX_ROW + SALT_MAX_PREFIX];
    size_t n;

    if (call->method == NULL || call->method->args == NULL) {
        return;
    }
    tf = hbase1_schema_field(call->method->args, 1);
    if (tf == NULL || tf->action != HBASE1_TABLE ||
        !fuzz_last_arg(from, msg, len, 1, &name, &name_len)) {
        return;
    }
    t = config_find_table(cfg, name, name_len);
    FUZZ_CHECK(call->salt == (t != NULL ? &t->salt : NULL));

    rf = hbase1_schema_field(call->method->args, 2);
    if (out == NULL || t == NULL || rf == NULL || rf->action != HBASE1_ROW ||
        !fuzz_last_arg(from, msg, len, 2, &row, &row_len)) {
        return;
    }
    FUZZ_CHECK(fuzz_last_arg(to, out->data, out->len, 2, &sent, &sent_len));
    if (row_len == 0 || row_len > SALT_HBASE_MAX_ROW) {
        /* HBase refuses it as it would unsalted */
        FUZZ_CHECK(sent_len == row_len && memcmp(sent, row, row_len) == 0);
        return;
    }
    /* a row the table cannot store is never sent alone */
    FUZZ_CHECK(row_len <= salt_max_row(&t->salt));
    n = salt_key(&t->salt, row, row_len, phys, sizeof(phys));
    FUZZ_CHECK(n > 0 && n == sent_len && memcmp(sent, phys, n) == 0);
}

/* The key notes a walk of the len-byte message at msg left: none if
 * refused; each a key of a salted table, within the message; the
 * message's bytes shared among them. */
static void
fuzz_check_notes(const struct codec_tally *t, codec_status_t st,
                 const uint8_t *msg, size_t len)
{
    guint64 bytes = 0;

    FUZZ_CHECK(st != CODEC_REJECT || t->nnotes == 0);
    for (uint32_t i = 0; i < t->nnotes; i++) {
        const struct codec_key_note *n = &t->notes[i];

        FUZZ_CHECK(n->salt != NULL && n->kind != CODEC_KEY_ROW);
        FUZZ_CHECK(n->key >= msg && n->len <= len &&
                   (size_t)(n->key - msg) <= len - n->len);
        FUZZ_CHECK(n->part_len <= n->len);
        FUZZ_CHECK(n->bucket <= n->salt->buckets);
        bytes += n->bytes;
    }
    FUZZ_CHECK(st != CODEC_OK || t->nnotes == 0 || bytes == len);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const struct config *cfg = fuzz_config();
    const struct wire_limits *limits;
    wire_proto_t from, to;
    gboolean framed;
    const struct hbase1_service *svc;
    struct wire_buf out, streamed;
    struct codec_tally tally, stally;
    int32_t seqid = 1;

    if (size < 1) {
        return 0;
    }
    from = (data[0] & 1) ? WIRE_COMPACT : WIRE_BINARY;
    framed = (data[0] & 2) != 0;
    to = (data[0] & 4) ? WIRE_COMPACT : WIRE_BINARY;
    limits = (data[0] & 8) ? &fuzz_tight_limits : &wire_default_limits;
    svc = hbase1_service((data[0] & 16) ? HBASE1_SERVICE_THRIFT2
                                        : HBASE1_SERVICE_THRIFT1);
    data++;
    size--;

    wire_buf_init(&out);
    wire_buf_init(&streamed);
    /* the key visualizer's notes: the same from either path, none from a
     * refused message, each message's bytes shared among its keys */
    codec_tally_init(&tally);
    codec_tally_init(&stally);
    tally.keys_on = TRUE;
    stally.keys_on = TRUE;
    while (size > 0) {
        struct codec_call call;
        struct codec_error err;
        const char *why = NULL;
        size_t msg_len = 0, hdr = framed ? 4 : 0;
        size_t want = framed ? size : MIN(size, (size_t)limits->max_message);
        codec_status_t st, sst = CODEC_AGAIN;
        wire_status_t scan;
        struct codec_call scall;
        struct codec_error serr;
        /* the same message, whole (framed) and on the stream */
        struct codec_io io = {
            .from = from,
            .to = to,
            .out = &out,
            .cfg = cfg,
            .svc = svc,
            .limits = limits,
            .tally = &tally,
            .err = &err,
        };
        struct codec_io sio = io;

        scan = wire_message_scan(from, framed, data, want, limits, &msg_len,
                                 &why);
        if (!framed) {
            fuzz_check_resumable(from, data, want, limits);
            wire_buf_clear(&streamed);
            sio.data = data;
            sio.len = want;
            sio.stream = TRUE;
            sio.backend_seqid = seqid;
            sio.out = &streamed;
            sio.tally = &stally;
            sio.err = &serr;
            sst = codec_request(&sio, &scall);
            if (scan == WIRE_AGAIN) {
                FUZZ_CHECK(sst == CODEC_AGAIN && streamed.len == 0);
                FUZZ_CHECK(stally.nnotes == 0);
            } else if (scan == WIRE_ERROR) {
                FUZZ_CHECK(sst == CODEC_CLOSE && serr.message != NULL);
            } else {
                FUZZ_CHECK(sst != CODEC_AGAIN);
            }
        }
        if (scan != WIRE_OK) {
            break;
        }
        FUZZ_CHECK(msg_len > hdr && msg_len <= want);

        wire_buf_clear(&out);
        io.data = data + hdr;
        io.len = msg_len - hdr;
        io.backend_seqid = seqid++;
        st = codec_request(&io, &call);
        FUZZ_CHECK(io.used == io.len);
        fuzz_check_notes(&tally, st, data + hdr, msg_len - hdr);
        if (!framed) {
            FUZZ_CHECK(st == CODEC_CLOSE || stally.nnotes == tally.nnotes);
            for (uint32_t i = 0; st != CODEC_CLOSE && i < tally.nnotes; i++) {
                FUZZ_CHECK(stally.notes[i].key_hash ==
                               tally.notes[i].key_hash &&
                           stally.notes[i].bucket == tally.notes[i].bucket &&
                           stally.notes[i].kind == tally.notes[i].kind);
            }
        }
        codec_tally_clear(&tally);
        codec_tally_clear(&stally);
        if (!framed) {
            FUZZ_CHECK(sst == st);
            FUZZ_CHECK(st == CODEC_CLOSE || sio.used == msg_len);
            FUZZ_CHECK(streamed.len == out.len &&
                       (out.len == 0 ||
                        memcmp(streamed.data, out.data, out.len) == 0));
            FUZZ_CHECK(st != CODEC_REJECT || (serr.app_type == err.app_type &&
                                              serr.answer == err.answer));
        }
        switch (st) {
        case CODEC_OK:
            fuzz_check_message(to, &out, 0);
            fuzz_check_routing(cfg, &call, from, data + hdr, msg_len - hdr, to,
                               &out);
            /* what the backend fails with still reaches the client */
            wire_buf_clear(&out);
            codec_write_io_error(&call, from, "backend gone", TRUE, &out);
            fuzz_check_message(from, &out, 0);
            break;
        case CODEC_REJECT:
            FUZZ_CHECK(out.len == 0);
            FUZZ_CHECK(err.message != NULL);
            codec_write_error(&call, from, &err, &out);
            fuzz_check_message(from, &out, 0);
            break;
        case CODEC_SCAN:
            FUZZ_CHECK(out.len == 0);
            fuzz_check_routing(cfg, &call, from, data + hdr, msg_len - hdr, to,
                               NULL);
            /* the replies the scan engine builds for this call */
            codec_write_i32_reply(&call, from, 42, &out);
            fuzz_check_message(from, &out, 0);
            wire_buf_clear(&out);
            codec_write_illegal_argument(&call, from, "no", &out);
            fuzz_check_message(from, &out, 0);
            wire_buf_clear(&out);
            codec_write_void_reply(&call, from, &out);
            fuzz_check_message(from, &out, 0);
            break;
        case CODEC_AGAIN:
            FUZZ_CHECK(!"codec_request never waits on a whole message");
            break;
        case CODEC_CLOSE:
            FUZZ_CHECK(err.message != NULL);
            size = 0; /* the daemon closes the connection */
            continue;
        }
        FUZZ_CHECK(call.name_len <= WIRE_MAX_NAME);
        data += msg_len;
        size -= msg_len;
    }
    wire_buf_free(&out);
    wire_buf_free(&streamed);
    codec_tally_free(&tally);
    codec_tally_free(&stally);
    return 0;
}
