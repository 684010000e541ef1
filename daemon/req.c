/* req.c: one request on its way, its reply, and the socket I/O it needs. */
#include "req.h"

#include <errno.h>
#include <string.h>
#include <sys/socket.h>

#include "invariant.h"

/* ---- states ------------------------------------------------------------- */

__thread gint64 req_clock;

static const char *const req_state_names[] = {
    [REQ_FREE] = "free", [REQ_NEW] = "new",   [REQ_PARKED] = "parked",
    [REQ_SENT] = "sent", [REQ_DONE] = "done",
};

/* Whether req may go from its state to 'to': the arrows of req.h. */
static gboolean
req_state_ok(const struct req *req, enum req_state to)
{
    enum req_state from = (enum req_state)req->state;

    switch (to) {
    case REQ_NEW: return from == REQ_FREE;
    case REQ_PARKED: return from == REQ_NEW && req->sink == NULL;
    case REQ_SENT:
        return (from == REQ_NEW || from == REQ_PARKED) && req->sink == NULL;
    case REQ_DONE: return from == REQ_NEW || from == REQ_SENT;
    case REQ_FREE:
        return from == REQ_NEW || from == REQ_PARKED || from == REQ_DONE ||
               (from == REQ_SENT && req->client == NULL);
    }
    return FALSE;
}

void
req_set_state(struct req *req, enum req_state to)
{
    g_assert(req != NULL);
    if (!req_state_ok(req, to)) {
        /* going on is the lesser harm: the state says what the caller
         * did, and the request still reaches the free list */
        invariant_no_arrow(G_STRLOC, req_state_names,
                           G_N_ELEMENTS(req_state_names), req->state, to,
                           "request %.*s%s", (int)req->call.name_len,
                           req->call.name,
                           req->sink != NULL ? " (internal)" : "");
    }
    req->state = (uint8_t)to;
}

/* ---- replies ------------------------------------------------------------ */

size_t
req_reply_begin(struct req *req)
{
    g_assert(req != NULL);
    /* a client's: an internal request's answer is raw */
    HSP_CHECK(req->sink == NULL);
    HSP_CHECK(req->state == REQ_NEW || req->state == REQ_SENT);
    wire_buf_clear(&req->reply);
    return req->client_framed ? wire_frame_begin(&req->reply) : 0;
}

void
req_reply_end(struct req *req, size_t frame)
{
    g_assert(req != NULL);
    if (req->client_framed && HSP_CHECK(frame + 4 <= req->reply.len)) {
        wire_frame_end(&req->reply, frame);
    }
}

void
req_io_error(struct req *req, const char *message, gboolean can_retry)
{
    size_t frame;

    g_assert(req != NULL && message != NULL);
    HSP_CHECK(req->state == REQ_NEW || req->state == REQ_SENT);
    if (req->sink != NULL) {
        /* internal: the sink wraps the text into its own reply */
        wire_buf_clear(&req->raw);
        req->failed = 1;
        req->can_retry = can_retry ? 1 : 0;
        wire_buf_append(&req->raw, message, strlen(message));
        return;
    }
    frame = req_reply_begin(req);
    codec_write_io_error(&req->call, req->client_proto, message, can_retry,
                         &req->reply);
    req_reply_end(req, frame);
}

void
req_note_bucket(struct req *req, uint32_t bucket, gboolean legacy)
{
    g_assert(req != NULL);
    if (legacy) {
        req->legacy = 1;
    } else if (!req->salted) {
        req->salted = 1;
        req->bucket_lo = req->bucket_hi = bucket;
    } else {
        req->bucket_lo = MIN(req->bucket_lo, bucket);
        req->bucket_hi = MAX(req->bucket_hi, bucket);
    }
}

/* ---- sockets and messages ----------------------------------------------- */

void
req_write(struct bufferevent *bev, const struct iovec *iov, int n)
{
    struct evbuffer *out = bufferevent_get_output(bev);
    evutil_socket_t fd = bufferevent_getfd(bev);
    ssize_t sent = 0;

    g_assert(bev != NULL);
    if (n <= 0) {
        return;
    }
    g_assert(iov != NULL);
    if (fd >= 0 && evbuffer_get_length(out) == 0 &&
        (bufferevent_get_enabled(bev) & EV_WRITE)) {
        struct msghdr mh = { 0 };

        mh.msg_iov = (struct iovec *)iov;
        mh.msg_iovlen = (size_t)n;
        /* one buffer, the usual case: send spares the kernel the copy
         * and check of a msghdr and its iovec array */
        sent = n == 1 ? send(fd, iov[0].iov_base, iov[0].iov_len,
                             MSG_DONTWAIT | MSG_NOSIGNAL)
                      : sendmsg(fd, &mh, MSG_DONTWAIT | MSG_NOSIGNAL);
        if (sent < 0) {
            /* EAGAIN or a real error: bev's write sees it either way */
            sent = 0;
        }
    }
    for (int i = 0; i < n; i++) {
        size_t len = iov[i].iov_len;

        if ((size_t)sent >= len) {
            sent -= (ssize_t)len;
            continue;
        }
        evbuffer_add(out, (const uint8_t *)iov[i].iov_base + sent,
                     len - (size_t)sent);
        sent = 0;
    }
}

ssize_t
req_read(uint8_t *rbuf, evutil_socket_t fd, struct evbuffer *in, size_t max)
{
    ssize_t n;

    g_assert(rbuf != NULL && in != NULL);
    n = recv(fd, rbuf, MIN(max, (size_t)REQ_READ_MAX), 0);
    if (n > 0 && evbuffer_add(in, rbuf, (size_t)n) < 0) {
        errno = ENOMEM;
        return -1;
    }
    return n;
}

wire_status_t
req_msg_peek(struct evbuffer *in, size_t have, gboolean framed,
             const struct wire_limits *limits, const uint8_t **buf,
             size_t *avail, const char **why)
{
    size_t want;
    const uint8_t *p;

    g_assert(in != NULL && limits != NULL);
    g_assert(buf != NULL && avail != NULL && why != NULL);
    *why = NULL;
    if (framed) {
        uint8_t hdr[4];
        uint32_t flen;

        if (have < 4) {
            return WIRE_AGAIN;
        }
        /* the length decides before the body is waited for */
        evbuffer_copyout(in, hdr, 4);
        flen = (uint32_t)hdr[0] << 24 | (uint32_t)hdr[1] << 16 |
               (uint32_t)hdr[2] << 8 | hdr[3];
        if (flen == 0 || flen > 0x7fffffffu) {
            *why = "invalid frame size";
            return WIRE_ERROR;
        }
        if (flen > limits->max_message) {
            *why = "frame larger than max_frame_size";
            return WIRE_ERROR;
        }
        if (have - 4 < flen) {
            return WIRE_AGAIN;
        }
        want = 4 + (size_t)flen;
    } else {
        /* the codec needs contiguous bytes; never more than one message */
        want = MIN(have, (size_t)limits->max_message);
    }
    p = evbuffer_pullup(in, (ev_ssize_t)want);
    if (p == NULL) {
        *why = "out of memory";
        return WIRE_ERROR;
    }
    *buf = p;
    *avail = want;
    return WIRE_OK;
}

wire_status_t
req_msg_next(struct evbuffer *in, wire_proto_t proto, gboolean framed,
             const struct wire_limits *limits, const uint8_t **msg,
             size_t *len, const char **why)
{
    const uint8_t *p = NULL;
    size_t want = 0;
    wire_status_t st;

    g_assert(msg != NULL && len != NULL);
    st = req_msg_peek(in, evbuffer_get_length(in), framed, limits, &p, &want,
                      why);
    if (st != WIRE_OK) {
        return st;
    }
    st = wire_message_scan(proto, framed, p, want, limits, len, why);
    if (st == WIRE_AGAIN && !framed && want >= limits->max_message) {
        *why = "message larger than max_frame_size";
        return WIRE_ERROR;
    }
    if (st == WIRE_OK) {
        *msg = p;
    }
    return st;
}

wire_status_t
req_msg_scan(struct evbuffer *in, wire_proto_t proto, struct wire_scan *scan,
             const struct wire_limits *limits, const uint8_t **msg,
             size_t *len, const char **why)
{
    const uint8_t *p = NULL;
    size_t want = 0;
    wire_status_t st;

    g_assert(scan != NULL && msg != NULL && len != NULL);
    st = req_msg_peek(in, evbuffer_get_length(in), FALSE, limits, &p, &want,
                      why);
    if (st != WIRE_OK) {
        return st;
    }
    st = wire_scan_feed(scan, proto, p, want, limits, len, why);
    if (st == WIRE_AGAIN && want >= limits->max_message) {
        *why = "message larger than max_frame_size";
        return WIRE_ERROR;
    }
    if (st == WIRE_OK) {
        *msg = p;
        wire_scan_init(scan);
    }
    return st;
}
