/* fuzz_detect.c: a client's first bytes: wire_detect, then framing. */
#include "fuzz_common.h"

#include "wire.h"

/*
 * Input: the bytes a client sends, from its first.  As client_detect and
 * req_msg_next do: wire_detect on up to 8 bytes, then whole messages
 * cut one after another (frame length checked first when framed; at most
 * max_message bytes looked at when not), until the bytes run out or an
 * error closes the connection.  The limits are small so that inputs of a
 * few KiB reach "larger than max_frame_size".
 */

static const struct wire_limits fuzz_limits = {
    .max_message = 2048,
    .max_string = 2048,
    .max_container = 1024,
    .max_depth = WIRE_MAX_DEPTH,
};

static uint32_t
fuzz_be32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 |
           p[3];
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    wire_proto_t proto = WIRE_BINARY;
    gboolean framed = FALSE;
    const char *why = NULL;
    wire_status_t st;

    st = wire_detect(data, MIN(size, (size_t)8), &proto, &framed, &why);
    if (st == WIRE_ERROR) {
        FUZZ_CHECK(why != NULL);
    }
    if (st != WIRE_OK) {
        return 0;
    }
    FUZZ_CHECK(proto == WIRE_BINARY || proto == WIRE_COMPACT);
    while (size > 0) {
        size_t want, msg_len = 0;

        if (framed) {
            uint32_t flen;

            if (size < 4) {
                break;
            }
            flen = fuzz_be32(data);
            if (flen == 0 || flen > 0x7fffffffu ||
                flen > fuzz_limits.max_message) {
                break;
            }
            if (size - 4 < flen) {
                break;
            }
            want = 4 + (size_t)flen;
        } else {
            want = MIN(size, (size_t)fuzz_limits.max_message);
        }
        st = wire_message_scan(proto, framed, data, want, &fuzz_limits,
                               &msg_len, &why);
        if (st == WIRE_ERROR) {
            FUZZ_CHECK(why != NULL);
            break;
        }
        if (st == WIRE_AGAIN) {
            /* a whole max_message that is not a message is an error */
            FUZZ_CHECK(!framed && want < fuzz_limits.max_message);
            break;
        }
        FUZZ_CHECK(msg_len > (framed ? 4u : 0u) && msg_len <= want);
        if (framed) {
            FUZZ_CHECK(msg_len == want);
        }
        data += msg_len;
        size -= msg_len;
    }
    return 0;
}
