/* fuzz_http.c: HBase's HTTP replies as the engine parses them, httpc_conn_reply. */
#include "fuzz_common.h"

#include <event2/buffer.h>

#include "httpc.h"

/*
 * Input: byte 0 the size of the pieces the bytes arrive in (1..256), the
 * rest the server's side of a connection in HTTP mode.  As backend.c
 * does: each piece appended to the raw input, then replies taken one
 * after another until one is not whole (the next piece), is refused (a
 * status other than 200: the call's exception, the connection goes on) or
 * is bad (the connection closes).  Whatever the bytes, a body is never
 * larger than max_frame_size (small here, so that small inputs reach it),
 * every verdict but AGAIN says why, and nothing is read past the input.
 */

static const char fuzz_http_conf[] = "[proxy]\n"
                                     "max_frame_size = 4096\n"
                                     "[backend]\n"
                                     "servers = 127.0.0.1:9090\n"
                                     "transport = http\n";

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static struct httpc_target t;
    static gboolean ready;
    struct evbuffer *raw, *body;
    struct httpc_conn *h;
    size_t piece, off = 1;
    gboolean done = FALSE;

    if (!ready) {
        GError *error = NULL;
        struct config *cfg = config_load_data(fuzz_http_conf,
                                              strlen(fuzz_http_conf),
                                              "fuzz_http", &error);

        FUZZ_CHECK(cfg != NULL && httpc_init(cfg, &error));
        /* httpc keeps copies of what it needs */
        config_free(cfg);
        g_strlcpy(t.host, "hbase.example", sizeof(t.host));
        t.port = 9090;
        ready = TRUE;
    }
    if (size < 1) {
        return 0;
    }
    piece = (size_t)data[0] + 1;
    raw = evbuffer_new();
    body = evbuffer_new();
    h = httpc_conn_new(&t, NULL);
    while (!done && off < size) {
        size_t n = MIN(piece, size - off);

        evbuffer_add(raw, data + off, n);
        off += n;
        for (;;) {
            char why[512] = "";
            httpc_reply_t st = httpc_conn_reply(h, raw, body, why,
                                                sizeof(why));

            FUZZ_CHECK(evbuffer_get_length(body) <= 4096);
            if (st == HTTPC_AGAIN) {
                break;
            }
            FUZZ_CHECK(why[0] != '\0' || st == HTTPC_BODY);
            if (st == HTTPC_REFUSED) {
                FUZZ_CHECK(evbuffer_get_length(body) == 0);
                FUZZ_CHECK(strstr(why, "answered") != NULL);
            }
            if (st == HTTPC_BAD) {
                done = TRUE;
                break;
            }
            /* the engine takes the body as the call's reply */
            evbuffer_drain(body, evbuffer_get_length(body));
            if (httpc_conn_closing(h)) {
                done = TRUE;
                break;
            }
        }
    }
    httpc_conn_free(h);
    evbuffer_free(body);
    evbuffer_free(raw);
    return 0;
}
