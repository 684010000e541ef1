/* req.h: one request on its way, its reply, and the socket I/O it needs. */
#pragma once

#include <glib.h>
#include <stdint.h>
#include <sys/queue.h>
#include <sys/uio.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/util.h>

#include "codec.h"
#include "wire.h"

/*
 * This layer knows requests and sockets only.  Who owns a request (a
 * client, a worker, a backend connection, a configuration generation) is
 * an opaque pointer here; the engines above give them meaning.
 */
struct client;
struct backend_conn;
struct worker;
struct worker_gen;
struct req;

/* Called on the owning worker with the raw reply of an internal request. */
typedef void (*req_sink_fn)(struct worker *w, struct req *req);

/*
 * Where a request is in its life.  Only req_set_state moves it, and only
 * along these arrows (a release build logs and counts any other, see
 * invariant.h):
 *
 *   FREE --> NEW --+--> PARKED --> SENT --> DONE --> FREE
 *                  +---------------> SENT
 *                  +-------------------------> DONE
 *
 * and back to FREE from NEW (never sent on), PARKED (its client closed)
 * and SENT once detached (its pool is freed at exit).
 *
 * A client's request goes NEW (read and rewritten) to SENT, through
 * PARKED when it must wait for the calls before it, or straight to DONE
 * when the codec answers it.  An internal request (sink set) goes NEW
 * to DONE: only the client marks what it sends on.
 */
enum req_state {
    REQ_FREE = 0, /* on its worker's free list */
    REQ_NEW,      /* taken (worker_req_get): its engine fills it */
    REQ_PARKED,   /* a client's: waits for the calls before it */
    REQ_SENT,     /* a client's: at a backend or the scan engine */
    REQ_DONE,     /* answered: reply (raw for an internal one) complete */
};

/*
 * One request on its way.  It sits on two queues at once: its client's
 * FIFO (replies leave in request order) and, while unanswered, the FIFO
 * of the backend connection it was sent on.  Whichever side lets go
 * last returns it to the worker's free list; a client that closes first
 * only detaches (client = NULL), so the backend never follows a dangling
 * pointer.
 */
struct req {
    TAILQ_ENTRY(req) client_link;  /* in client->reqs */
    TAILQ_ENTRY(req) backend_link; /* in conn->pending, or free list */
    struct client *client;         /* owner; NULL once it has closed */
    struct worker_gen *gen;        /* generation it was read under: its
                                       call's salt points there */
    req_sink_fn sink;              /* internal request (scan fan-out): gets
                                       the raw backend reply, no client */
    void *sink_arg;                /* the sink's object */
    uint32_t sink_tag;             /* the sink's index (a bucket) */
    int server;                    /* backend server to use, -1 = any */
    uint32_t backend_len;          /* bytes of its backend message: one
                                       never sent can move to another
                                       server */
    unsigned failed:1;             /* internal: raw holds error text */
    unsigned can_retry:1;          /* internal: the failure is transient */
    unsigned timed_out:1;          /* failed: its own deadline passed (not
                                      the connection under it) */
    unsigned stalled:1;            /* failed: its connection was closed
                                      because a call on it timed out (the
                                      server is slow, not gone) */
    unsigned rereads:3;            /* a read sent again after its
                                      connection failed: how many times */
    unsigned wait_probe:1;         /* a new read waiting for a server: only
                                      while one may come back */
    int stalled_on;                /* server it stalled on (a read is not
                                      sent there again), -1 = none */
    gint64 wait_until;             /* a read waiting for a server to take
                                      it again: when it stops waiting */
    struct backend_conn *conn;     /* waiting on it; NULL when answered */
    struct codec_call call;        /* what the reply needs to know */
    wire_proto_t client_proto;     /* copied: a detached req still knows */
    unsigned client_framed:1;      /* reply gets a frame header */
    uint8_t state;                 /* enum req_state (req_set_state) */
    int32_t backend_seqid;         /* seqid the backend sees */
    gint64 deadline;               /* monotonic us: fail if not answered */
    gint64 started;                /* monotonic us: read from the client */
    unsigned queued:1;             /* its wait for a free backend
                                      connection is counted */
    uint8_t err_kind;              /* metrics_err_t of its reply; 0 (not
                                      known yet): read from the reply */
    const char *backend_name;      /* "host:port" it was sent to (a health
                                      entry's: lives as long as the
                                      process), or NULL */
    /* salt buckets its row keys went to, for the slow-call line */
    uint32_t bucket_lo, bucket_hi; /* lowest and highest salted */
    unsigned salted:1;             /* some went to bucket_lo..bucket_hi */
    unsigned legacy:1;             /* some to the legacy range */
    /*
     * Two buffers for two kinds of request; each kind uses only its own.
     * reply: a client's request: the reply as the client gets it (its
     * protocol, seqid and frame), complete once DONE.
     * raw: an internal request (sink set): the backend's reply as it
     * came (no frame header), or, when failed, the text of the error;
     * a client's read: its backend message, to send it again to another
     * server if its connection fails before the answer (backend.c).
     * marks: an internal request's: where raw's rows lie, as the
     * resumable scan of an unframed reply found them (wire_scan_mark),
     * else empty.
     */
    struct wire_buf reply;
    struct wire_buf raw;
    struct wire_buf marks;
};

TAILQ_HEAD(req_queue, req);

/* Bytes one req_read takes from a socket, at most. */
#define REQ_READ_MAX (64u * 1024)

/*
 * The thread's held clock (req_clock_hold): 0 when not held, -1 held and
 * not read yet, else the time read.
 */
extern __thread gint64 req_clock;

/*
 * Monotonic clock in microseconds: request deadlines and latencies.
 * While a worker's read callback holds it (req_clock_hold), the first
 * reading serves the rest of the callback: a point call read it six
 * times, and the calls of one read are read together anyway.  What
 * needs it finer than one callback's work (a few microseconds a call)
 * does not exist: deadlines and timers are milliseconds, the latency
 * histograms' narrowest bucket is 0.1 ms.
 */
static inline gint64
req_now(void)
{
    gint64 now;

    if (req_clock > 0) {
        return req_clock;
    }
    now = g_get_monotonic_time();
    if (req_clock < 0) {
        req_clock = now;
    }
    return now;
}

/* From here to req_clock_release, req_now reads the clock once.  Only
 * around work that does not wait (a socket's read callback): nothing
 * blocks in between, so the time read stays the time. */
static inline void
req_clock_hold(void)
{
    req_clock = -1;
}

static inline void
req_clock_release(void)
{
    req_clock = 0;
}

/* The one place a request changes state: checks the arrow (above). */
void req_set_state(struct req *req, enum req_state to);

/*
 * A reply for req's client is written between these two: begin empties
 * req->reply and opens a frame when the client is framed (its result
 * goes to end, which closes the frame).
 */
size_t req_reply_begin(struct req *req);
void req_reply_end(struct req *req, size_t frame);

/*
 * Fills req->reply with an IOError for the client, framed as it needs;
 * for an internal request, req->raw with message and failed set.
 * message is the whole text, e.g. "hbase-salt-proxy: backend h:p: ...".
 */
void req_io_error(struct req *req, const char *message, gboolean can_retry);

/* req's row keys went to bucket (legacy: to a forward-looking table's
 * legacy range instead), for its slow-call line. */
void req_note_bucket(struct req *req, uint32_t bucket, gboolean legacy);

/*
 * Writes iov[0..n) to bev's socket at once when nothing is queued before
 * it, and queues in bev's output only what the socket did not take: the
 * write event (two epoll_ctl calls) is armed only on a short write, as
 * HAProxy does.  Errors are left for bev's own write to find and report.
 */
void req_write(struct bufferevent *bev, const struct iovec *iov, int n);

/*
 * Reads what fd has, at most max bytes, onto the end of in: one recv into
 * rbuf (REQ_READ_MAX bytes, the caller's, e.g. its worker's), then
 * appended.  Not evbuffer_read, which asks FIONREAD first: an ioctl for
 * every read.  Returns the bytes read, 0 at the end of the stream, -1
 * with errno set (EAGAIN: nothing to read).
 */
ssize_t req_read(uint8_t *rbuf, evutil_socket_t fd, struct evbuffer *in,
                 size_t max);

/*
 * The bytes at the start of in, pulled up contiguous, for a codec that
 * finds the message's end itself: framed, one whole frame (header
 * included) or AGAIN; unframed, whatever is there up to one maximal
 * message.  ERROR: *why says what is wrong with the frame header.
 * have: evbuffer_get_length(in), which every caller has at hand.
 */
wire_status_t req_msg_peek(struct evbuffer *in, size_t have, gboolean framed,
                           const struct wire_limits *limits,
                           const uint8_t **buf, size_t *avail,
                           const char **why);

/*
 * req_msg_next for an unframed stream, with scan keeping its place in
 * the message between calls (wire_scan): however the message arrives,
 * each byte is walked once.  scan is ready for the next message after OK.
 */
wire_status_t req_msg_scan(struct evbuffer *in, wire_proto_t proto,
                           struct wire_scan *scan,
                           const struct wire_limits *limits,
                           const uint8_t **msg, size_t *len, const char **why);

/*
 * Finds one whole message at the start of in, pulled up contiguous.
 * OK: *msg and *len cover it including any frame header.  AGAIN: wait
 * for more bytes.  ERROR: *why says what is wrong with the stream.
 */
wire_status_t req_msg_next(struct evbuffer *in, wire_proto_t proto,
                           gboolean framed, const struct wire_limits *limits,
                           const uint8_t **msg, size_t *len, const char **why);
