/* client.c: one client connection: framing, request FIFO, back-pressure. */
#include "client.h"

#include <errno.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>

#include <event2/buffer.h>
#include <event2/event.h>
#include <openssl/err.h>
#include <openssl/ssl.h>

#include "backend.h"
#include "escape.h"
#include "hbase1.h"
#include "invariant.h"
#include "lograte.h"
#include "keyviz.h"
#include "metrics.h"
#include "scan.h"
#include "tls.h"

/* Stop reading a client whose unsent replies exceed this... */
#define CLIENT_OUT_HIGH (4u << 20)
/* ...and resume once they drained below this (le-proxy's idiom). */
#define CLIENT_OUT_LOW (CLIENT_OUT_HIGH / 2)
/* Stop reading a client with this many requests unanswered. */
#define CLIENT_MAX_PENDING 256
/* What a reply is assumed to cost before the client has had one. */
#define CLIENT_REPLY_GUESS (64u * 1024)
/* Input kept beyond one maximal message, so a whole frame fits. */
#define CLIENT_IN_SLACK 4096
/* A parked message's buffer above this is released once sent on. */
#define CLIENT_PARK_KEEP (64u * 1024)

static gboolean client_partial_check(struct client *c, gboolean partial,
                                     gboolean fresh);
static void client_read_cb(evutil_socket_t fd, short what, void *arg);
static void client_write_cb(struct bufferevent *bev, void *arg);
static void client_event_cb(struct bufferevent *bev, short what, void *arg);
static void client_tls_write_cb(evutil_socket_t fd, short what, void *arg);
static int client_tls_handshake(struct client *c);
static gboolean client_tls_read(struct client *c);
static void client_tls_send(struct client *c, const struct iovec *iov, int n);
static void client_tls_push(struct client *c);
static void client_tls_hs_failed(struct client *c, int sslerr, int saved,
                                 gboolean timeout);
static struct client_tls *client_tls_new(struct client *c, evutil_socket_t fd,
                                         SSL_CTX *ctx);
static void client_tls_free(struct client_tls *t);

/* ---- states ------------------------------------------------------------- */

static const char *const client_state_names[] = {
    [CLIENT_DETECT] = "detect",
    [CLIENT_ACTIVE] = "active",
    [CLIENT_DRAINING] = "draining",
};

/* The one place a client changes state (client.h's arrows). */
static void
client_set_state(struct client *c, enum client_state to)
{
    gboolean ok = to == CLIENT_ACTIVE     ? c->state == CLIENT_DETECT
                  : to == CLIENT_DRAINING ? c->state != CLIENT_DRAINING
                                          : FALSE;

    if (!ok) {
        invariant_no_arrow(G_STRLOC, client_state_names,
                           G_N_ELEMENTS(client_state_names), c->state, to,
                           "client %s", c->peer);
    }
    c->state = to;
}

/* req is one of c's, read from it and not yet handed back. */
static gboolean
client_owns(const struct client *c, const struct req *req)
{
    return req != NULL && req->client == c && req->sink == NULL &&
           req->state != REQ_FREE;
}

static void
client_peer_name(const struct sockaddr *sa, char *out, size_t outlen)
{
    char host[INET6_ADDRSTRLEN] = "?";
    unsigned port = 0;

    if (sa->sa_family == AF_INET) {
        const struct sockaddr_in *in = (const struct sockaddr_in *)sa;

        inet_ntop(AF_INET, &in->sin_addr, host, sizeof(host));
        port = ntohs(in->sin_port);
        g_snprintf(out, outlen, "%s:%u", host, port);
    } else if (sa->sa_family == AF_INET6) {
        const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)sa;

        inet_ntop(AF_INET6, &in6->sin6_addr, host, sizeof(host));
        port = ntohs(in6->sin6_port);
        g_snprintf(out, outlen, "[%s]:%u", host, port);
    } else {
        g_strlcpy(out, "unix", outlen);
    }
}

/* Reply bytes c has not written yet: its bufferevent's output, or for
 * TLS what SSL_write did not take. */
static size_t
client_out_len(const struct client *c)
{
    return c->tls != NULL
               ? evbuffer_get_length(c->tls->out)
               : evbuffer_get_length(bufferevent_get_output(c->bev));
}

/*
 * Whether c may take more requests now: not shutting down, not over its
 * pending cap, and its unsent replies plus what the requests it already
 * has may bring (each as large as its largest reply so far) under the
 * output watermark.  A request read is a reply we must hold, however
 * slowly the client reads: bounding them by bytes, not only by count,
 * is what keeps a client that pipelines big requests and never reads
 * from growing our memory (at most one reply once over the watermark).
 */
static gboolean
client_may_read(const struct client *c)
{
    size_t each = c->reply_max != 0 ? c->reply_max : CLIENT_REPLY_GUESS;

    return c->state != CLIENT_DRAINING && c->parked == NULL &&
           c->nreqs < CLIENT_MAX_PENDING &&
           client_out_len(c) + (size_t)c->nreqs * each < CLIENT_OUT_HIGH;
}

/* Watches c's socket for reading, with the idle timeout when there is
 * one (the handshake timeout until a TLS client's handshake is done): a
 * persistent event restarts its timeout on every read. */
static void
client_read_on(struct client *c)
{
    unsigned ms = c->tls != NULL && !c->tls->done
                      ? c->worker->gen->set.tls_handshake_ms
                      : c->worker->gen->set.client_idle_timeout_ms;
    struct timeval tv = { ms / 1000, (ms % 1000) * 1000 };

    event_add(c->rev, ms != 0 ? &tv : NULL);
}

/*
 * Turns reading on or off to match client_may_read.  Turning it back on
 * also reschedules the read callback (deferred, never re-entered from
 * here): requests already buffered get processed without new bytes.
 */
static void
client_update_reading(struct client *c)
{
    gboolean want = client_may_read(c);

    if (want && !c->reading) {
        c->reading = 1;
        /* while we did not read, the client could not finish its
         * message: its deadline starts again with our reading */
        c->partial_since = 0;
        client_read_on(c);
        /* OpenSSL may hold decrypted records the socket no longer shows */
        if (evbuffer_get_length(c->in) > 0 ||
            (c->tls != NULL && SSL_has_pending(c->tls->ssl))) {
            /* from the loop, never re-entered from here */
            event_active(c->rev, EV_READ, 0);
        }
    } else if (!want && c->reading) {
        c->reading = 0;
        /* TLS too: no SSL_read, no more records off the socket */
        event_del(c->rev);
    }
}

void
client_apply_limits(struct client *c)
{
    g_assert(c != NULL && c->worker != NULL);
    /* bounds what one client can make us buffer */
    c->in_max = (size_t)c->worker->gen->set.max_frame_size + 4 +
                CLIENT_IN_SLACK;
}

void
client_accept(struct worker *w, evutil_socket_t fd, const struct sockaddr *sa,
              int salen, const struct hbase1_service *svc, SSL_CTX *tls)
{
    const struct worker_settings *set = &w->gen->set;
    struct client *c;
    char peer[64];
    int one = 1;
    gint n;

    g_assert(w != NULL && sa != NULL && svc != NULL);
    HSP_CHECK(fd >= 0);
    client_peer_name(sa, peer, sizeof(peer));
    n = g_atomic_int_add(w->nconns, 1) + 1;
    if (w->state != WORKER_RUNNING ||
        (set->max_connections != 0 && (unsigned)n > set->max_connections)) {
        g_atomic_int_add(w->nconns, -1);
        METRICS_ADD(w->metrics->refused, 1);
        g_warning("client %s: refused: %s", peer,
                  w->state != WORKER_RUNNING ? "shutting down"
                                             : "max_connections reached");
        evutil_closesocket(fd);
        return;
    }
    /* requests and replies are small and latency-bound */
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));

    c = g_new0(struct client, 1);
    c->worker = w;
    c->svc = svc;
    /* g_new0: c->state is CLIENT_DETECT */
    TAILQ_INIT(&c->reqs);
    wire_buf_init(&c->park);
    g_strlcpy(c->peer, peer, sizeof(c->peer));
    if (tls != NULL) {
        c->tls = client_tls_new(c, fd, tls);
    } else {
        c->bev = bufferevent_socket_new(w->base, fd,
                                        BEV_OPT_CLOSE_ON_FREE |
                                            BEV_OPT_DEFER_CALLBACKS);
    }
    if (c->bev == NULL && c->tls == NULL) {
        g_warning("client %s: refused: cannot set up its socket buffer", peer);
        evutil_closesocket(fd);
        g_atomic_int_add(w->nconns, -1);
        g_free(c);
        return;
    }
    c->in = evbuffer_new();
    /* TLS too: SSL_read is called when the socket is readable */
    c->rev = event_new(w->base, fd, EV_READ | EV_PERSIST, client_read_cb, c);
    if (c->in == NULL || c->rev == NULL) {
        g_warning("client %s: refused: out of memory", peer);
        g_clear_pointer(&c->rev, event_free);
        g_clear_pointer(&c->in, evbuffer_free);
        if (c->tls != NULL) {
            client_tls_free(c->tls);
        } else {
            bufferevent_free(c->bev);
        }
        g_atomic_int_add(w->nconns, -1);
        g_free(c);
        return;
    }
    client_apply_limits(c);
    TAILQ_INSERT_TAIL(&w->clients, c, link);
    w->nclients++;
    METRICS_ADD(w->metrics->accepted, 1);
    c->reading = 1;
    if (c->tls == NULL) {
        bufferevent_setwatermark(c->bev, EV_WRITE, CLIENT_OUT_LOW, 0);
        bufferevent_setcb(c->bev, NULL, client_write_cb, client_event_cb, c);
        /* reading is ours (client_read_cb): the bufferevent only writes */
        bufferevent_enable(c->bev, EV_WRITE);
    }
    /* TLS: the handshake timeout, until client_tls_handshake is done */
    client_read_on(c);
    g_debug("client %s: connected (worker %u, %d open)", peer, w->id, n);
}

void
client_close(struct client *c)
{
    struct worker *w;
    struct req *req;

    g_assert(c != NULL);
    w = c->worker;
    while ((req = TAILQ_FIRST(&c->reqs)) != NULL) {
        TAILQ_REMOVE(&c->reqs, req, client_link);
        HSP_CHECK(client_owns(c, req));
        if (req->state == REQ_SENT) {
            /* a backend or the scan engine still holds it: it drops the
             * reply and frees it */
            req->client = NULL;
        } else {
            /* parked (never sent on: nobody else knows it) or done */
            HSP_CHECK(req->state == REQ_PARKED || req->state == REQ_DONE);
            HSP_CHECK(req->state == REQ_PARKED || req != c->parked);
            worker_req_put(w, req);
        }
    }
    c->nreqs = 0;
    if (c->held) {
        TAILQ_REMOVE(&w->held, c, held_link);
    }
    TAILQ_REMOVE(&w->clients, c, link);
    w->nclients--;
    g_atomic_int_add(w->nconns, -1);
    g_clear_pointer(&c->partial_timer, event_free);
    event_free(c->rev);
    evbuffer_free(c->in);
    wire_buf_free(&c->park);
    g_free(c->scan);
    if (c->tls != NULL) {
        client_tls_free(c->tls);
    } else {
        /* also cancels any deferred callback still queued for c */
        bufferevent_free(c->bev);
    }
    g_free(c);
}

/* Closes c after logging why; reasons are static text, never data. */
static void
client_close_why(struct client *c, const char *why)
{
    g_message("client %s: closing: %s", c->peer, why);
    client_close(c);
}

/* Where req's row keys went, for its slow-call line: "bucket 3",
 * "buckets 2-7", "legacy range", "buckets 2-7 and legacy range", or
 * nothing (no salted table). */
static void
client_slow_buckets(const struct req *req, GString *out)
{
    if (req->salted && req->bucket_lo == req->bucket_hi) {
        g_string_append_printf(out, ", bucket %u", req->bucket_lo);
    } else if (req->salted) {
        g_string_append_printf(out, ", buckets %u-%u", req->bucket_lo,
                               req->bucket_hi);
    }
    if (req->legacy) {
        g_string_append(out,
                        req->salted ? " and legacy range" : ", legacy range");
    }
}

/* A name from the wire in a log line: as it is when printable ("ns:t"),
 * else all in the escape syntax (escape.h), so no byte can forge a line. */
static void
client_log_name(GString *out, const char *name, size_t len)
{
    for (size_t i = 0; i < len; i++) {
        if ((uint8_t)name[i] <= ' ' || (uint8_t)name[i] >= 0x7f ||
            name[i] == '\\') {
            escape_append(out, (const uint8_t *)name, len);
            return;
        }
    }
    g_string_append_len(out, name, (gssize)len);
}

/*
 * A call slower than slow_call_ms (HBase's slowThriftCall): counted by
 * method, and logged naming where it went, the first of a burst in full
 * and the rest folded into one line a period (lograte.h).  Only slow
 * calls pay for the line.
 */
static void
client_slow_check(struct client *c, const struct req *req, gint64 us)
{
    unsigned ms = c->worker->gen->set.slow_call_ms;
    g_autoptr(GString) line = NULL;

    if (ms == 0 || us < (gint64)ms * 1000) {
        return;
    }
    if (req->call.method != NULL) {
        METRICS_ADD(c->worker->metrics->methods[req->call.method->index].slow,
                    1);
    }
    line = g_string_new(NULL);
    client_log_name(line, req->call.name, req->call.name_len);
    if (req->call.service != NULL &&
        req->call.service->id != HBASE1_SERVICE_THRIFT1) {
        g_string_append_printf(line, " (%s)", req->call.service->label);
    }
    if (req->call.table_len > 0) {
        g_string_append(line, " of table ");
        client_log_name(line, req->call.table, req->call.table_len);
    }
    client_slow_buckets(req, line);
    g_string_append_printf(line, ", backend %s: %" G_GINT64_FORMAT " ms",
                           req->backend_name != NULL ? req->backend_name
                                                     : "none",
                           us / 1000);
    if (lograte_note_of(G_LOG_LEVEL_WARNING, "call", "slow call", "",
                        line->str, 0)) {
        g_warning("slow call: %s (slow_call_ms = %u)", line->str, ms);
    }
}

/* Replies written by one sendmsg, at most. */
#define CLIENT_FLUSH_BATCH 16

void
client_flush(struct client *c)
{
    struct req *done[CLIENT_FLUSH_BATCH];
    struct iovec iov[CLIENT_FLUSH_BATCH];
    struct req *req;
    int n;

    g_assert(c != NULL && (c->bev != NULL || c->tls != NULL));
    do {
        n = 0;
        while (n < CLIENT_FLUSH_BATCH &&
               (req = TAILQ_FIRST(&c->reqs)) != NULL &&
               req->state == REQ_DONE) {
            TAILQ_REMOVE(&c->reqs, req, client_link);
            c->nreqs--;
            done[n] = req;
            iov[n].iov_base = req->reply.data;
            iov[n].iov_len = req->reply.len;
            n++;
        }
        /* counted before the write: a client that reads /metrics as soon
         * as it has its reply finds the call there */
        for (int i = 0; i < n; i++) {
            req = done[i];
            if (req->reply.len > 0) {
                size_t hdr = req->client_framed ? 4 : 0;
                gint64 us = req_now() - req->started;

                c->reply_max = MAX(c->reply_max, req->reply.len);
                METRICS_ADD(c->worker->metrics->bytes_out, req->reply.len);
                /* a backend's reply was read as it came; the proxy's own
                 * answers are read here */
                if (req->err_kind == METRICS_ERR_UNKNOWN) {
                    req->err_kind =
                        req->reply.len > hdr
                            ? metrics_reply_error(req->client_proto,
                                                  req->reply.data + hdr,
                                                  req->reply.len - hdr,
                                                  req->call.method)
                            : METRICS_ERR_NONE;
                }
                metrics_request_done(c->worker->metrics, req->call.method, us,
                                     (metrics_err_t)req->err_kind);
                /* the key visualizer counts it against its first key */
                if (req->err_kind != METRICS_ERR_NONE &&
                    req->call.first_key.salt != NULL &&
                    c->worker->metrics->kv != NULL) {
                    keyviz_error(c->worker->metrics->kv, &req->call.first_key);
                }
                client_slow_check(c, req, us);
            }
        }
        if (c->tls != NULL) {
            /* encrypted from the replies themselves, in one record when
             * they fit */
            client_tls_send(c, iov, n);
        } else {
            /* replies in order: one call, queued only if it falls short */
            req_write(c->bev, iov, n);
        }
        for (int i = 0; i < n; i++) {
            worker_req_put(c->worker, done[i]);
        }
    } while (n == CLIENT_FLUSH_BATCH);
    client_update_reading(c);
}

/* The end of the loop pass: one write per client for every reply it got
 * in the pass, whichever backend reads brought them. */
static void
client_flush_pass_cb(evutil_socket_t fd, short what, void *arg)
{
    struct worker *w = arg;
    struct client *c;

    while ((c = TAILQ_FIRST(&w->held)) != NULL) {
        HSP_CHECK(c->held);
        TAILQ_REMOVE(&w->held, c, held_link);
        c->held = 0;
        client_flush(c);
    }
}

/* Has the held clients written at the end of this loop pass. */
static void
client_flush_later(struct worker *w)
{
    if (w->flush_ev == NULL) {
        w->flush_ev = event_new(w->base, -1, 0, client_flush_pass_cb, w);
    }
    if (w->flush_ev == NULL) {
        client_flush_pass_cb(-1, 0, w);
        return;
    }
    /* no priorities: it runs after every callback already active, those
     * of this pass's other readable sockets included, before the loop
     * polls again */
    event_active(w->flush_ev, EV_READ, 0);
}

void
client_flush_held(struct worker *w)
{
    struct client *c, *next;
    gboolean later = FALSE;

    g_assert(w != NULL);
    for (c = TAILQ_FIRST(&w->held); c != NULL; c = next) {
        next = TAILQ_NEXT(c, held_link);
        HSP_CHECK(c->held);
        if (c->busy > 0) {
            /* more may come in this pass: wait for its end */
            later = TRUE;
            continue;
        }
        /* nothing more to wait for: written now, its requests free for
         * the calls read later in this pass (a pool that grew to the
         * pass's peak would stay that large) */
        TAILQ_REMOVE(&w->held, c, held_link);
        c->held = 0;
        client_flush(c);
    }
    if (later) {
        client_flush_later(w);
    }
}

void
client_answered(struct client *c, struct req *req)
{
    struct worker *w;

    g_assert(c != NULL);
    w = c->worker;
    /* worker_req_finish marked it done; it was sent on, so counted busy */
    if (!HSP_CHECK(client_owns(c, req) && req->state == REQ_DONE) ||
        !HSP_CHECK(c->busy > 0)) {
        return;
    }
    c->busy--;
    if (w->replies_held || c->busy > 0) {
        /* more replies come with this one (held: in this backend read)
         * or may come in this loop pass (busy: a pipelining client's,
         * from other reads): one write for all, at the pass's end */
        if (!c->held) {
            c->held = 1;
            TAILQ_INSERT_TAIL(&w->held, c, held_link);
        }
        if (!w->replies_held) {
            client_flush_later(w);
        }
    } else {
        /* a lone reply: written now, no callback more */
        client_flush(c);
    }
    if (c->parked != NULL && c->busy == 0) {
        /* what waited for this may go: from the loop, never re-entered
         * from here (we may be deep in a backend's read callback) */
        event_active(c->rev, EV_READ, 0);
    }
}

gboolean
client_drain(struct client *c)
{
    g_assert(c != NULL);
    if (c->state != CLIENT_DRAINING) {
        client_set_state(c, CLIENT_DRAINING);
        client_update_reading(c);
    }
    return c->nreqs == 0 && client_out_len(c) == 0;
}

/* A request the codec answers itself (an error, or what HBase would
 * answer for a row it cannot hold): answer it in its turn, keep the
 * client. */
static void
client_reject(struct client *c, struct req *req, const struct codec_error *err)
{
    size_t frame;

    HSP_CHECK(client_owns(c, req) && req->state == REQ_NEW);
    frame = req_reply_begin(req);
    codec_write_error(&req->call, req->client_proto, err, &req->reply);
    req_reply_end(req, frame);
    req_set_state(req, REQ_DONE);
    g_debug("client %s: rejected %.*s: %s", c->peer, (int)req->call.name_len,
            req->call.name, err->message);
}

/*
 * Whether a call read from c may be sent on now without overtaking one
 * sent before it (see the top of proxy.c): nothing is unanswered, or it
 * is a backend call that can queue behind the previous one on that
 * one's connection, which the server answers in turn.  A scanner call
 * waits for everything before it: the scan engine spreads it over
 * connections of its own.
 */
static gboolean
client_may_send(const struct client *c, gboolean scan)
{
    const struct backend_conn *conn;

    if (c->busy == 0) {
        return TRUE;
    }
    if (scan) {
        return FALSE;
    }
    conn = c->last_sent->conn;
    return conn != NULL && backend_conn_takes(c->worker->pool, conn);
}

/* Sends req on (client_may_send said so): msg is the call as the client
 * sent it for the scan engine, else the framed backend message.  Either
 * may answer req at once. */
static void
client_send(struct client *c, struct req *req, gboolean scan,
            const uint8_t *msg, size_t len, gboolean more)
{
    struct backend_conn *after = c->busy > 0 ? c->last_sent->conn : NULL;

    HSP_CHECK(client_owns(c, req));
    /* before it goes: either may answer it at once */
    req_set_state(req, REQ_SENT);
    c->busy++;
    c->last_sent = req;
    if (scan) {
        scan_request(c->worker, req, msg, len);
    } else {
        backend_submit(c->worker->pool, req, after, msg, len, more);
    }
}

/* req must wait for the calls before it: keep its message, read no more
 * until it is sent on (client_unpark). */
static void
client_park(struct client *c, struct req *req, gboolean scan,
            const uint8_t *msg, size_t len)
{
    HSP_CHECK(client_owns(c, req) && c->parked == NULL);
    req_set_state(req, REQ_PARKED);
    wire_buf_clear(&c->park);
    wire_buf_append(&c->park, msg, len);
    c->parked = req;
    c->parked_scan = scan ? 1 : 0;
}

/* Sends the parked call on if it may go now; FALSE while it must wait. */
static gboolean
client_unpark(struct client *c)
{
    struct req *req = c->parked;

    if (!client_may_send(c, c->parked_scan)) {
        return FALSE;
    }
    c->parked = NULL;
    client_send(c, req, c->parked_scan, c->park.data, c->park.len, FALSE);
    if (c->park.cap > CLIENT_PARK_KEEP) {
        /* one big message must not pin its memory for the connection's
         * life */
        wire_buf_free(&c->park);
        wire_buf_init(&c->park);
    }
    return TRUE;
}

/* Takes what the codec did with req's row keys: the worker's counters,
 * and the buckets they went to, for req's slow-call line. */
static void
client_take_tally(struct worker *w, struct req *req)
{
    const struct codec_tally *t = &w->tally;

    for (uint32_t i = 0; i < t->n; i++) {
        const struct codec_bucket_count *e = &t->v[i];

        req_note_bucket(req, e->bucket, e->bucket >= e->salt->buckets);
    }
    metrics_take_tally(w->metrics, &w->tally);
}

/*
 * The call at the front of c's unframed stream (io: data, len, stream),
 * into the worker's scratch: rewritten by one walk when it came whole;
 * else c's scan walks on through what arrives, and the whole call is
 * rewritten once it is there, so every byte is walked a bounded number
 * of times however the client cuts it.  Answers as codec_request on a
 * stream.
 */
static codec_status_t
client_request_stream(struct client *c, struct req *req, struct codec_io *io)
{
    struct worker *w = c->worker;
    size_t mark = w->scratch.len;
    const char *why = NULL;
    codec_status_t cs;
    wire_status_t st;

    if (c->scan == NULL || !wire_scan_started(c->scan)) {
        cs = codec_request(io, &req->call);
        client_take_tally(w, req);
        if (cs != CODEC_AGAIN) {
            return cs;
        }
        if (c->scan == NULL) {
            c->scan = g_new(struct wire_scan, 1);
            wire_scan_init(c->scan);
        }
    }
    st = wire_scan_feed(c->scan, c->proto, io->data, io->len,
                        &w->client_limits, &io->used, &why);
    if (st == WIRE_AGAIN) {
        return CODEC_AGAIN;
    }
    wire_scan_init(c->scan);
    if (st == WIRE_ERROR) {
        io->err->message = why;
        return CODEC_CLOSE;
    }
    w->scratch.len = mark;
    io->len = io->used;
    io->stream = FALSE;
    cs = codec_request(io, &req->call);
    client_take_tally(w, req);
    return cs;
}

/* What client_request did with the bytes at the front of the input. */
typedef enum {
    CLIENT_TOOK,   /* one message taken: drop *used bytes */
    CLIENT_WAIT,   /* the message is not whole yet */
    CLIENT_CLOSED, /* c was closed: do not touch it again */
} client_took_t;

/*
 * The message at the front of c's input: a whole frame (body after the
 * 4-byte header) when framed, else avail bytes of an unframed stream in
 * which the codec finds the end as it rewrites.  left: the bytes in
 * c's input.
 */
static client_took_t
client_request(struct client *c, const uint8_t *buf, size_t avail, size_t left,
               size_t *used)
{
    struct worker *w = c->worker;
    const struct worker_settings *set = w->startup;
    struct req *req = worker_req_get(w);
    struct codec_error err; /* the codec sets what it uses */
    struct wire_buf *out = &w->scratch;
    size_t off = 0, hdr = c->framed ? 4 : 0, len, msg_len;
    const uint8_t *msg;
    codec_status_t st;
    struct codec_io io = {
        .data = buf + hdr,
        .len = avail - hdr,
        .from = c->proto,
        .stream = !c->framed,
        .to = set->backend_proto,
        .out = out,
        .cfg = w->gen->cfg,
        .ts = w->gen->ts,
        .svc = c->svc,
        .limits = &w->client_limits,
        .tally = &w->tally,
        .err = &err,
    };

    req->client = c;
    req->client_proto = c->proto;
    req->client_framed = c->framed ? 1 : 0;
    req->backend_seqid = worker_next_seqid(w);
    io.backend_seqid = req->backend_seqid;

    wire_buf_clear(out);
    if (set->backend_framed) {
        off = wire_frame_begin(out);
    }
    if (c->framed) {
        st = codec_request(&io, &req->call);
        client_take_tally(w, req);
        if (st == CODEC_REJECT) {
            const char *why = NULL;
            size_t n;

            /* a frame that does not hold a valid message: the stream
             * is not trusted any more, as HBase's server would not */
            if (wire_message_scan(c->proto, TRUE, buf, avail,
                                  &w->client_limits, &n, &why) != WIRE_OK) {
                worker_req_put(w, req);
                client_close_why(c, why != NULL ? why : "malformed message");
                return CLIENT_CLOSED;
            }
        }
    } else {
        st = client_request_stream(c, req, &io);
    }
    len = io.used;
    if (st == CODEC_AGAIN) {
        worker_req_put(w, req);
        if (avail >= w->client_limits.max_message) {
            client_close_why(c, "message larger than max_frame_size");
            return CLIENT_CLOSED;
        }
        return CLIENT_WAIT;
    }
    if (st == CODEC_CLOSE) {
        worker_req_put(w, req);
        client_close_why(c, err.message != NULL ? err.message
                                                : "malformed request");
        return CLIENT_CLOSED;
    }
    *used = hdr + len;
    req->started = req_now();
    METRICS_ADD(w->metrics->bytes_in, len);
    TAILQ_INSERT_TAIL(&c->reqs, req, client_link);
    c->nreqs++;
    if (st == CODEC_REJECT) {
        /* nothing reaches HBase: its answer depends on no other call */
        client_reject(c, req, &err);
        client_flush(c);
        return CLIENT_TOOK;
    }
    if (st == CODEC_OK) {
        /* HBase's batchGet and batchMutate: rows per multi-row call */
        metrics_batch(w->metrics, req->call.method, c->proto, buf + hdr, len);
    }
    if (st == CODEC_OK && req->call.splits_set) {
        g_autofree char *line = codec_splits_describe(&req->call);

        g_warning("%s", line);
    }
    if (st == CODEC_SCAN) {
        /* the scan engine answers it, maybe from another worker */
        msg = buf + hdr;
        msg_len = len;
    } else {
        if (set->backend_framed) {
            wire_frame_end(out, off);
        }
        msg = out->data;
        msg_len = out->len;
    }
    if (client_may_send(c, st == CODEC_SCAN)) {
        /* more calls already read: they may follow on the same
         * connection, in the same write (backend_uncork) */
        client_send(c, req, st == CODEC_SCAN, msg, msg_len, left > *used);
    } else {
        client_park(c, req, st == CODEC_SCAN, msg, msg_len);
    }
    return CLIENT_TOOK;
}

/* Reads the first bytes: which protocol and framing this client speaks.
 * Returns FALSE when c was closed or more bytes are needed. */
static gboolean
client_detect(struct client *c, struct evbuffer *in)
{
    const char *why = NULL;
    size_t have = MIN(evbuffer_get_length(in), (size_t)8);
    const uint8_t *p = evbuffer_pullup(in, (ev_ssize_t)have);
    gboolean framed = FALSE;
    wire_status_t st;

    st = wire_detect(p, have, &c->proto, &framed, &why);
    if (st == WIRE_AGAIN) {
        /* the first message has begun (or c was closed in there) */
        client_partial_check(c, have > 0, FALSE);
        return FALSE;
    }
    if (st == WIRE_ERROR) {
        client_close_why(c, why != NULL ? why : "not a Thrift message");
        return FALSE;
    }
    c->framed = framed;
    client_set_state(c, CLIENT_ACTIVE);
    g_debug("client %s: %s %s", c->peer,
            c->proto == WIRE_COMPACT ? "compact" : "binary",
            c->framed ? "framed" : "buffered");
    return TRUE;
}

/* The partial-message deadline passed (see client_partial_check). */
static void
client_partial_timer_cb(evutil_socket_t fd, short what, void *arg)
{
    struct client *c = arg;

    /* reset (to 0) whenever the message completed or we stopped reading,
     * which also re-arms or cancels this timer: still set, it is late */
    if (c->partial_since != 0 && c->reading) {
        client_close_why(c, "message not completed within the idle "
                            "timeout");
    }
}

/*
 * The idle timeout restarts on every read, so a client trickling a
 * message byte by byte (slowloris) would hold its connection forever:
 * a message under way must also be whole within client_idle_timeout_ms
 * of its first byte.  partial: c's input ends in an unfinished message
 * we wait on; fresh: that message began during this read.  Returns
 * FALSE when c was closed.
 */
static gboolean
client_partial_check(struct client *c, gboolean partial, gboolean fresh)
{
    unsigned ms = c->worker->gen->set.client_idle_timeout_ms;
    gint64 now;

    if (!partial || ms == 0) {
        c->partial_since = 0;
        if (c->partial_timer != NULL) {
            event_del(c->partial_timer);
        }
        return TRUE;
    }
    now = req_now();
    if (c->partial_since == 0 || fresh) {
        struct timeval tv = { ms / 1000, (ms % 1000) * 1000 };

        if (c->partial_timer == NULL) {
            c->partial_timer = evtimer_new(c->worker->base,
                                           client_partial_timer_cb, c);
        }
        c->partial_since = now;
        if (c->partial_timer != NULL) {
            evtimer_add(c->partial_timer, &tv);
        }
        return TRUE;
    }
    if (now - c->partial_since >= (gint64)ms * 1000) {
        client_close_why(c, "message not completed within the idle "
                            "timeout");
        return FALSE;
    }
    return TRUE;
}

/* Takes every whole request buffered, as long as c may take more. */
static void
client_process(struct client *c)
{
    struct evbuffer *in = c->in;
    gboolean partial = FALSE, fresh = FALSE;
    size_t left;

    if (c->state == CLIENT_DETECT && !client_detect(c, in)) {
        return;
    }
    if (c->parked != NULL && !client_unpark(c)) {
        /* still waiting: reading stays off until it is sent on */
        client_update_reading(c);
        return;
    }
    /* the input's length, kept here: only this loop takes from it */
    for (left = evbuffer_get_length(in); left > 0 && client_may_read(c);) {
        const uint8_t *buf = NULL;
        const char *why = NULL;
        size_t avail = 0, used = 0;
        wire_status_t st;

        st = req_msg_peek(in, left, c->framed, &c->worker->client_limits, &buf,
                          &avail, &why);
        if (st == WIRE_AGAIN) {
            partial = TRUE;
            break;
        }
        if (st == WIRE_ERROR) {
            client_close_why(c, why != NULL ? why : "malformed message");
            return;
        }
        switch (client_request(c, buf, avail, left, &used)) {
        case CLIENT_CLOSED: return;
        case CLIENT_WAIT: partial = TRUE; break;
        case CLIENT_TOOK:
            evbuffer_drain(in, used);
            left -= used;
            /* what follows in the buffer arrived with this read */
            fresh = TRUE;
            continue;
        }
        break;
    }
    if (!client_partial_check(c, partial, fresh)) {
        return;
    }
    client_update_reading(c);
}

/* The socket is readable (or the idle timeout passed, or reading was
 * turned back on with requests already buffered). */
static void
client_read(evutil_socket_t fd, short what, void *arg)
{
    struct client *c = arg;
    struct worker *w = c->worker;
    size_t have = evbuffer_get_length(c->in);

    if (what & EV_TIMEOUT) {
        if (c->tls != NULL && !c->tls->done) {
            client_tls_hs_failed(c, SSL_ERROR_NONE, 0, TRUE);
            return;
        }
        if (c->nreqs > 0) {
            /* quiet because it waits for us, not idle: keep it */
            return;
        }
        client_close_why(c, "idle timeout");
        return;
    }
    if (c->tls != NULL) {
        if (c->tls->dead) {
            /* a write failed in this pass: its close is queued */
            client_close(c);
            return;
        }
        if (!c->tls->done && client_tls_handshake(c) <= 0) {
            return; /* under way, or c was closed */
        }
        if (!client_tls_read(c)) {
            return;
        }
    } else if (c->reading && have < c->in_max) {
        ssize_t n = req_read(c->worker->rbuf, fd, c->in, c->in_max - have);

        if (n == 0) {
            /* clients do not half-close while waiting; answers are moot */
            g_debug("client %s: closed by peer (%u requests in flight)",
                    c->peer, c->nreqs);
            client_close(c);
            return;
        }
        if (n < 0 && errno != EAGAIN && errno != EINTR) {
            client_close_why(c, g_strerror(errno));
            return;
        }
    }
    client_process(c);
    /* c may be gone: what it sent on must still leave */
    backend_uncork(w);
}

static void
client_read_cb(evutil_socket_t fd, short what, void *arg)
{
    /* one clock reading for the calls of this read (req.h) */
    req_clock_hold();
    client_read(fd, what, arg);
    req_clock_release();
}

/* Output drained below the low watermark: maybe read again. */
static void
client_write_cb(struct bufferevent *bev, void *arg)
{
    client_update_reading(arg);
}

/* The bufferevent only writes: its events are write errors. */
static void
client_event_cb(struct bufferevent *bev, short what, void *arg)
{
    struct client *c = arg;

    if (what & (BEV_EVENT_ERROR | BEV_EVENT_EOF)) {
        int err = EVUTIL_SOCKET_ERROR();

        client_close_why(c, (what & BEV_EVENT_ERROR)
                                ? evutil_socket_error_to_string(err)
                                : "connection closed while we wrote");
    }
}

/*
 * A handshake failed: if the client sent plain Thrift, count it, say so
 * (one line a period however many: lograte.h) and answer it in its own
 * protocol, so it reads an exception that says what to do instead of
 * EOF.  OpenSSL sent nothing on such bytes (no alert for what does not
 * look like TLS), so the answer is the first thing the client reads;
 * one small write to an empty socket buffer, not waited for.
 */
static gboolean
client_tls_plain(struct client *c)
{
    wire_proto_t proto;
    gboolean framed;
    struct wire_buf out;
    evutil_socket_t fd = c->tls->fd;

    if (!tls_head_is_thrift(&c->tls->head, &proto, &framed)) {
        return FALSE;
    }
    METRICS_ADD(c->worker->metrics->tls_plain, 1);
    if (lograte_note(G_LOG_LEVEL_WARNING, "plain Thrift on the TLS listener",
                     "; " TLS_PLAIN_ADVICE, c->peer, 0)) {
        g_warning(
            "plain Thrift on the TLS listener from %s; " TLS_PLAIN_ADVICE,
            c->peer);
    }
    wire_buf_init(&out);
    tls_plain_answer(proto, framed, &out);
    if (fd >= 0) {
        /* best effort: the connection closes next either way */
        (void)send(fd, out.data, out.len, MSG_DONTWAIT | MSG_NOSIGNAL);
    }
    wire_buf_free(&out);
    return TRUE;
}

/* ---- TLS: OpenSSL on the socket itself ---------------------------------- */

/*
 * The TLS listener's clients are served from the buffers the plain path
 * uses: SSL_read into the worker's read buffer and on to c->in, SSL_write
 * from the replies (several gathered into one record).  A bufferevent in
 * between copied every byte once more each way and ran its callbacks a
 * loop pass later.
 */

/* SSL_write takes at most this much of t->out at once: more than the one
 * record a WANT_WRITE leaves pending, which must be offered again. */
#define CLIENT_TLS_PUSH_MAX (64u * 1024)

/* Takes the accepted fd (NULL: the caller closes it). */
static struct client_tls *
client_tls_new(struct client *c, evutil_socket_t fd, SSL_CTX *ctx)
{
    struct client_tls *t = g_new0(struct client_tls, 1);

    t->fd = fd;
    t->ssl = SSL_new(ctx);
    t->out = evbuffer_new();
    t->wev = event_new(c->worker->base, fd, EV_WRITE | EV_PERSIST,
                       client_tls_write_cb, c);
    if (t->ssl == NULL || t->out == NULL || t->wev == NULL ||
        SSL_set_fd(t->ssl, fd) != 1) {
        ERR_clear_error();
        t->fd = -1; /* the caller's to close */
        client_tls_free(t);
        return NULL;
    }
    SSL_set_accept_state(t->ssl);
    /* a reply's bytes may move (t->out) between a WANT_WRITE and its
     * retry; a record written counts, however much is left */
    SSL_set_mode(t->ssl, SSL_MODE_ENABLE_PARTIAL_WRITE |
                             SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
    /* whatever the socket has in one read, not a header and a body */
    SSL_set_read_ahead(t->ssl, 1);
    tls_head_watch(t->ssl, &t->head);
    return t;
}

static void
client_tls_free(struct client_tls *t)
{
    if (t == NULL) {
        return;
    }
    if (t->ssl != NULL) {
        if (t->done && !t->dead) {
            /* close_notify, best effort: the socket closes next */
            (void)SSL_shutdown(t->ssl);
            ERR_clear_error();
        }
        SSL_free(t->ssl);
    }
    g_clear_pointer(&t->wev, event_free);
    g_clear_pointer(&t->out, evbuffer_free);
    if (t->fd >= 0) {
        evutil_closesocket(t->fd);
    }
    g_free(t);
}

/* Watches c's socket for writability, or stops. */
static void
client_tls_wev(struct client *c, gboolean on)
{
    struct client_tls *t = c->tls;

    if (on && !t->wev_on) {
        event_add(t->wev, NULL);
    } else if (!on && t->wev_on) {
        event_del(t->wev);
    }
    t->wev_on = on ? 1 : 0;
}

/* A fatal error writing: logged now, c closed from the loop (callers of
 * client_flush go on using c). */
static void
client_tls_fatal(struct client *c, int sslerr, int saved)
{
    struct client_tls *t = c->tls;
    char why[256];

    if (sslerr == SSL_ERROR_SYSCALL && ERR_peek_error() == 0) {
        g_strlcpy(why, saved != 0 ? g_strerror(saved) : "connection closed",
                  sizeof(why));
        ERR_clear_error();
    } else {
        tls_last_error(why, sizeof(why), "TLS error");
    }
    g_message("client %s: closing: %s", c->peer, why);
    t->dead = 1;
    client_tls_wev(c, TRUE);
    event_active(t->wev, EV_WRITE, 0);
}

/*
 * Moves the handshake on: 1 done, 0 under way (the events wait for what
 * OpenSSL wants), -1 failed and c closed.
 */
static int
client_tls_handshake(struct client *c)
{
    struct client_tls *t = c->tls;
    int r, err, saved;

    ERR_clear_error();
    errno = 0;
    r = SSL_do_handshake(t->ssl);
    saved = errno;
    if (r == 1) {
        t->done = 1;
        tls_head_unwatch(t->ssl);
        client_tls_wev(c, FALSE);
        METRICS_ADD(c->worker->metrics->tls_handshakes, 1);
        /* from now on the idle timeout, or none: a persistent event
         * keeps re-arming the timeout it was last added with, whatever
         * event_add says later, until assigned again */
        event_del(c->rev);
        event_assign(c->rev, c->worker->base, t->fd, EV_READ | EV_PERSIST,
                     client_read_cb, c);
        if (c->reading) {
            client_read_on(c);
        }
        g_debug("client %s: TLS %s, %s", c->peer, SSL_get_version(t->ssl),
                SSL_get_cipher_name(t->ssl));
        return 1;
    }
    err = SSL_get_error(t->ssl, r);
    if (err == SSL_ERROR_WANT_READ || err == SSL_ERROR_WANT_WRITE) {
        client_tls_wev(c, err == SSL_ERROR_WANT_WRITE);
        return 0;
    }
    client_tls_hs_failed(c, err, saved, FALSE);
    return -1;
}

/*
 * A handshake failed (timeout: none came in time): if the client sent
 * plain Thrift, it is answered (client_tls_plain); one that connected
 * and left without a byte was a port check.  Closes c.
 */
static void
client_tls_hs_failed(struct client *c, int sslerr, int saved, gboolean timeout)
{
    struct client_tls *t = c->tls;
    struct worker *w = c->worker;
    unsigned long e = ERR_peek_error();
    gboolean eof;
    char why[256];

    eof = !timeout && (sslerr == SSL_ERROR_ZERO_RETURN ||
                       (sslerr == SSL_ERROR_SYSCALL && e == 0 && saved == 0) ||
                       (e != 0 && ERR_GET_REASON(e) ==
                                      SSL_R_UNEXPECTED_EOF_WHILE_READING));
    if (eof && BIO_number_read(SSL_get_rbio(t->ssl)) == 0) {
        ERR_clear_error();
        g_debug("client %s: closed before its TLS handshake", c->peer);
        client_close(c);
        return;
    }
    if (timeout) {
        g_snprintf(why, sizeof(why), "no handshake within %u ms",
                   w->gen->set.tls_handshake_ms);
    } else if (eof) {
        g_strlcpy(why, "closed during the handshake", sizeof(why));
    } else if (e != 0) {
        ERR_error_string_n(e, why, sizeof(why));
    } else {
        g_strlcpy(why, g_strerror(saved), sizeof(why));
    }
    ERR_clear_error();
    t->dead = 1;
    METRICS_ADD(w->metrics->tls_failures, 1);
    if (!client_tls_plain(c)) {
        g_warning("client %s: TLS handshake failed: %s", c->peer, why);
    }
    client_close(c);
}

/*
 * Decrypts what c's socket has onto c->in, as req_read does for a plain
 * one: within in_max, and on while OpenSSL holds more than it returned
 * (read-ahead), so the socket is read once per readiness.  FALSE when c
 * was closed.
 */
static gboolean
client_tls_read(struct client *c)
{
    struct client_tls *t = c->tls;
    uint8_t *rbuf = c->worker->rbuf;
    size_t have = evbuffer_get_length(c->in);
    int n, err, saved;

    if (t->write_wants_read) {
        /* an SSL_write waited for this readiness */
        t->write_wants_read = 0;
        client_tls_push(c);
        if (t->dead) {
            client_close(c);
            return FALSE;
        }
    }
    /* no ERR_clear_error before each call (hundreds of instructions):
     * every failure below leaves the error queue empty, as does the
     * handshake, so SSL_get_error reads only what this call queued */
    while (c->reading && have < c->in_max) {
        errno = 0;
        n = SSL_read(t->ssl, rbuf,
                     (int)MIN(c->in_max - have, (size_t)REQ_READ_MAX));
        saved = errno;
        if (n > 0) {
            if (evbuffer_add(c->in, rbuf, (size_t)n) < 0) {
                client_close_why(c, "out of memory");
                return FALSE;
            }
            have += (size_t)n;
            if (!SSL_has_pending(t->ssl)) {
                return TRUE;
            }
            continue;
        }
        err = SSL_get_error(t->ssl, n);
        if (err == SSL_ERROR_WANT_READ) {
            return TRUE;
        }
        if (err == SSL_ERROR_WANT_WRITE) {
            /* a record OpenSSL must send first: on when writable */
            t->read_wants_write = 1;
            client_tls_wev(c, TRUE);
            return TRUE;
        }
        if (err == SSL_ERROR_ZERO_RETURN ||
            (err == SSL_ERROR_SYSCALL && ERR_peek_error() == 0 &&
             saved == 0)) {
            ERR_clear_error();
            /* clients do not half-close while waiting; answers are moot */
            g_debug("client %s: closed by peer (%u requests in flight)",
                    c->peer, c->nreqs);
            t->dead = 1;
            client_close(c);
            return FALSE;
        }
        /* logged; closed here, not from the loop: nothing of c is
         * used after a read that fails */
        client_tls_fatal(c, err, saved);
        client_close(c);
        return FALSE;
    }
    if (c->reading && SSL_has_pending(t->ssl)) {
        /* c->in is full: what OpenSSL holds is read once it drains,
         * the socket will not say so */
        event_active(c->rev, EV_READ, 0);
    }
    return TRUE;
}

/*
 * Encrypts and writes len bytes at p: returns how many OpenSSL took, all
 * unless the socket filled (the rest must be offered again, from its
 * first byte, once writable), or -1 after a fatal error.
 */
static ssize_t
client_tls_write(struct client *c, const uint8_t *p, size_t len)
{
    struct client_tls *t = c->tls;
    size_t off = 0;
    int n, err, saved;

    while (off < len) {
        /* the queue is empty: see client_tls_read */
        errno = 0;
        n = SSL_write(t->ssl, p + off, (int)MIN(len - off, (size_t)INT_MAX));
        saved = errno;
        if (n > 0) {
            off += (size_t)n;
            continue;
        }
        err = SSL_get_error(t->ssl, n);
        if (err == SSL_ERROR_WANT_WRITE) {
            client_tls_wev(c, TRUE);
            return (ssize_t)off;
        }
        if (err == SSL_ERROR_WANT_READ) {
            /* on at the next readable (client_tls_read) */
            t->write_wants_read = 1;
            event_add(c->rev, NULL);
            return (ssize_t)off;
        }
        client_tls_fatal(c, err, saved);
        return -1;
    }
    return (ssize_t)off;
}

/*
 * Writes c's finished replies iov[0..n): straight from them when nothing
 * waits before them, several gathered into one record in the worker's
 * read buffer (free between reads); only what the socket does not take
 * is copied to t->out.
 */
static void
client_tls_send(struct client *c, const struct iovec *iov, int n)
{
    struct client_tls *t = c->tls;
    uint8_t *g = c->worker->rbuf;
    size_t glen = 0;
    ssize_t took;
    int i = 0;

    if (t->dead) {
        return;
    }
    if (evbuffer_get_length(t->out) == 0) {
        for (i = 0; i <= n; i++) {
            size_t len = i < n ? iov[i].iov_len : 0;

            if (i < n && glen + len <= REQ_READ_MAX) {
                memcpy(g + glen, iov[i].iov_base, len);
                glen += len;
                continue;
            }
            if (glen > 0) {
                took = client_tls_write(c, g, glen);
                if (took < 0) {
                    return;
                }
                if ((size_t)took < glen) {
                    evbuffer_add(t->out, g + took, glen - (size_t)took);
                    break;
                }
                glen = 0;
            }
            if (i == n) {
                return;
            }
            if (len > REQ_READ_MAX) {
                /* larger than the gather buffer: from its own */
                took = client_tls_write(c, iov[i].iov_base, len);
                if (took < 0) {
                    return;
                }
                if ((size_t)took < len) {
                    evbuffer_add(t->out, (uint8_t *)iov[i].iov_base + took,
                                 len - (size_t)took);
                    i++;
                    break;
                }
                continue;
            }
            memcpy(g, iov[i].iov_base, len);
            glen = len;
        }
    }
    for (; i < n; i++) {
        evbuffer_add(t->out, iov[i].iov_base, iov[i].iov_len);
    }
}

/* Writes what t->out holds, as far as the socket takes it. */
static void
client_tls_push(struct client *c)
{
    struct client_tls *t = c->tls;
    size_t len;

    while (!t->dead && (len = evbuffer_get_length(t->out)) > 0) {
        size_t m = MIN(len, (size_t)CLIENT_TLS_PUSH_MAX);
        const uint8_t *p = evbuffer_pullup(t->out, (ev_ssize_t)m);
        ssize_t took;

        if (p == NULL) {
            client_tls_fatal(c, SSL_ERROR_NONE, ENOMEM);
            return;
        }
        took = client_tls_write(c, p, m);
        if (took < 0) {
            return;
        }
        evbuffer_drain(t->out, (size_t)took);
        if ((size_t)took < m) {
            break;
        }
    }
    if (t->dead) {
        return;
    }
    if (evbuffer_get_length(t->out) == 0 && !t->read_wants_write) {
        client_tls_wev(c, FALSE);
    }
    if (evbuffer_get_length(t->out) < CLIENT_OUT_LOW) {
        /* as the plain path's write watermark */
        client_update_reading(c);
    }
}

/* c's socket is writable: OpenSSL wanted it for the handshake, a read,
 * or replies it could not write; or c failed and closes now. */
static void
client_tls_write_cb(evutil_socket_t fd, short what, void *arg)
{
    struct client *c = arg;
    struct client_tls *t = c->tls;

    if (t->dead) {
        client_close(c);
        return;
    }
    if (!t->done) {
        /* the handshake's flight; then what was read with it */
        client_read_cb(fd, EV_READ, c);
        return;
    }
    if (t->read_wants_write) {
        t->read_wants_write = 0;
        event_active(c->rev, EV_READ, 0);
    }
    client_tls_push(c);
}
