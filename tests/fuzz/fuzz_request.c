/* fuzz_request.c: the client request path: framing, then codec_request. */
#include "fuzz_common.h"

#include "codec.h"
#include "wire.h"

/*
 * Input: one flag byte, then the bytes a client sends.
 *   bit 0  client speaks compact (else binary)
 *   bit 1  client uses framed transport
 *   bit 2  backend speaks compact
 *   bit 3  tight limits (small strings, containers, depth), as a small
 *          max_frame_size would give
 * Messages are cut from the stream with wire_message_scan (at most
 * max_message bytes looked at unframed), then each goes through
 * codec_request.  Every message codec_request produces must itself be one
 * whole, valid message.  Unframed, the daemon instead runs
 * codec_request_stream on the raw stream, which finds the end as it
 * rewrites: it must agree with that two-pass reference exactly (status,
 * length, bytes), AGAIN where the scan wants more, CLOSE where it fails.
 */

static const struct wire_limits fuzz_tight_limits = {
    .max_message = 4096,
    .max_string = 512,
    .max_container = 64,
    .max_depth = 8,
};

/* out[from..] must hold exactly one whole message in proto. */
static void
fuzz_check_message(wire_proto_t proto, const struct wire_buf *out,
                   size_t from)
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

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const struct config *cfg = fuzz_config();
    const struct wire_limits *limits;
    wire_proto_t from, to;
    gboolean framed;
    struct wire_buf out, streamed;
    int32_t seqid = 1;

    if (size < 1) {
        return 0;
    }
    from = (data[0] & 1) ? WIRE_COMPACT : WIRE_BINARY;
    framed = (data[0] & 2) != 0;
    to = (data[0] & 4) ? WIRE_COMPACT : WIRE_BINARY;
    limits = (data[0] & 8) ? &fuzz_tight_limits : &wire_default_limits;
    data++;
    size--;

    wire_buf_init(&out);
    wire_buf_init(&streamed);
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
        size_t slen = 0;

        scan = wire_message_scan(from, framed, data, want, limits, &msg_len,
                                 &why);
        if (!framed) {
            fuzz_check_resumable(from, data, want, limits);
            wire_buf_clear(&streamed);
            sst = codec_request_stream(cfg, from, data, want, to, seqid,
                                       &streamed, &scall, &serr, limits,
                                       &slen);
            if (scan == WIRE_AGAIN) {
                FUZZ_CHECK(sst == CODEC_AGAIN && streamed.len == 0);
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
        st = codec_request(cfg, from, data + hdr, msg_len - hdr, to, seqid++,
                           &out, &call, &err, limits);
        if (!framed) {
            FUZZ_CHECK(sst == st);
            FUZZ_CHECK(st == CODEC_CLOSE || slen == msg_len);
            FUZZ_CHECK(streamed.len == out.len
                       && (out.len == 0
                           || memcmp(streamed.data, out.data, out.len) == 0));
            FUZZ_CHECK(st != CODEC_REJECT
                       || (serr.app_type == err.app_type
                           && serr.io == err.io));
        }
        switch (st) {
        case CODEC_OK:
            fuzz_check_message(to, &out, 0);
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
            FUZZ_CHECK(!"codec_request never waits: its message is whole");
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
    return 0;
}
