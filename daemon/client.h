/* client.h: one client connection: framing, request FIFO, back-pressure. */
#pragma once

#include <glib.h>
#include <sys/queue.h>
#include <sys/socket.h>

#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/util.h>

#include "tls.h"
#include "worker.h"

struct hbase1_service;

/*
 * Where a client connection is in its life.  Only client.c's
 * client_set_state moves it, along
 *
 *   DETECT --> ACTIVE --> DRAINING
 *     |                      ^
 *     +----------------------+  (shutdown before its first bytes)
 *
 * Its requests are on reqs in arrival order, each in a state of its own
 * (req.h): the head ones DONE are written, a PARKED one stops reading.
 */
enum client_state {
    CLIENT_DETECT = 0, /* no bytes yet: protocol and framing unknown */
    CLIENT_ACTIVE,     /* reading requests, writing replies */
    CLIENT_DRAINING,   /* shutdown: no new requests, finishing replies */
};

/* A client connection, owned by one worker. */
struct client {
    TAILQ_ENTRY(client) link;         /* in worker->clients */
    TAILQ_ENTRY(client) held_link;    /* in worker->held while held */
    unsigned held:1;                  /* replies done, write at release */
    struct worker *worker;            /* owner thread */
    const struct hbase1_service *svc; /* what its listener serves: Thrift1
                                       or Thrift2 (hbase1.h) */
    struct bufferevent *bev;          /* the socket; writes and their
                                       errors only; NULL for TLS */
    struct event *rev;                /* reads: req_read, no FIONREAD */
    struct evbuffer *in;              /* bytes read, not yet taken */
    size_t in_max;                    /* read no more while in holds this */
    enum client_state state;
    wire_proto_t proto;          /* detected on the first bytes */
    gboolean framed;             /* detected on the first bytes */
    struct req_queue reqs;       /* requests in arrival order */
    unsigned nreqs;              /* length of reqs */
    unsigned busy;               /* of which sent on (to a backend or
                                       the scan engine), unanswered */
    struct req *last_sent;       /* the newest of those; valid while
                                       busy > 0 */
    struct req *parked;          /* read, waits for busy == 0 before it
                                       is sent on; nothing more is read
                                       meanwhile */
    unsigned parked_scan:1;      /* parked is a scanner call */
    struct wire_scan *scan;      /* unframed: where the message under
                                       way was left (NULL until one came
                                       in pieces) */
    struct wire_buf park;        /* parked's message: for a backend,
                                       or, for a scanner call, as the
                                       client sent it */
    size_t reply_max;            /* largest reply sent so far, 0 = none:
                                       what one more request may cost */
    unsigned reading:1;          /* EV_READ currently enabled */
    gint64 partial_since;        /* monotonic us of the first byte of
                                       the message being received while
                                       we read; 0 = none under way */
    struct event *partial_timer; /* fires at partial_since + the idle
                                       timeout; NULL until first needed */
    char peer[64];               /* "addr:port" for logs */
    /* TLS clients ([tls] listen): NULL for a plain one, whose bev
     * writes; a TLS client has no bev (client_tls: SSL_read and
     * SSL_write on the socket itself). */
    struct client_tls *tls;
};

/*
 * A TLS client's connection: OpenSSL reads and writes the socket itself,
 * from and into the buffers the plain path uses (c->in, the replies), so
 * no byte is copied through a bufferevent and no callback waits for a
 * loop pass of its own.
 */
struct client_tls {
    SSL *ssl;
    evutil_socket_t fd;
    struct event *wev;           /* EV_WRITE: armed while OpenSSL must write
                             (out holds bytes, a handshake or a read
                             wants to write) */
    struct evbuffer *out;        /* plaintext SSL_write did not take yet: its
                             front is what a WANT_WRITE left pending */
    unsigned done:1;             /* the handshake finished */
    unsigned wev_on:1;           /* wev is added */
    unsigned dead:1;             /* a fatal error: no close_notify, close from
                             the loop */
    unsigned read_wants_write:1; /* SSL_read wants the socket writable */
    unsigned write_wants_read:1; /* SSL_write wants it readable */
    struct tls_head head;        /* the first record header, until done */
};

struct ssl_ctx_st;

/* Takes over an accepted socket; tls: the TLS listener's context (the
 * client takes its own reference), NULL for a plain one. */
void client_accept(struct worker *w, evutil_socket_t fd,
                   const struct sockaddr *sa, int salen,
                   const struct hbase1_service *svc, struct ssl_ctx_st *tls);

/* A request of c that was sent on was answered (req->reply is ready):
 * write every finished head reply (at the end of the loop pass while
 * replies are held or c waits for more), and send on what waited for
 * it. */
void client_answered(struct client *c, struct req *req);

/* Writes every finished reply at the head of c's queue. */
void client_flush(struct client *c);

/* worker_replies_release: the replies of every client of w held since
 * worker_replies_hold are written at the end of this loop pass, with
 * those other backend reads of the pass bring. */
void client_flush_held(struct worker *w);

/* Sizes c's input buffer bound to its worker's current max_frame_size
 * (at accept, and again when a reload changes it). */
void client_apply_limits(struct client *c);

/* Closes c; requests still at a backend are detached, not freed. */
void client_close(struct client *c);

/* Shutdown: stop reading c; TRUE once c has nothing left to send. */
gboolean client_drain(struct client *c);
