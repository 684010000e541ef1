/* httpc.h: the backend side of HBase's HTTP mode: each Thrift message one POST over a kept-alive HTTP(S) connection, written and parsed by the engine's connections themselves, or bridged to a socket for blocking callers. */
#pragma once

#include <glib.h>
#include <sys/socket.h>

#include <event2/event.h>

#include "config.h"

#define HTTPC_ERROR httpc_error_quark()
GQuark httpc_error_quark(void);

typedef enum {
    HTTPC_ERROR_TLS,    /* the TLS settings do not make a context */
    HTTPC_ERROR_SOCKET, /* no socketpair, no buffer */
} httpc_error_t;

struct sasl_creds;

/* One server as HTTP mode dials it. */
struct httpc_target {
    char host[128]; /* as configured: Host header, the
                                       name TLS verifies */
    char addr[64];  /* resolved, numeric, for connect */
    uint16_t port;
    char principal[256]; /* SPNEGO: HTTP/host@REALM, "" none */
};

/*
 * The process's HTTP settings ([backend] transport = http): path, doAs,
 * TLS context.  Once, before any bridge is opened, from one thread;
 * read-only after.  A second call with the same file is a no-op.
 */
gboolean httpc_init(const struct config *cfg, GError **error);

/*
 * A reload: the TLS context again from [backend] tls_ca, tls_cert and
 * tls_key (a renewed or corrected file is what a reload is for); new
 * connections use it, open ones keep theirs.  One that does not load
 * fails the reload and the current one stays.  Main thread.
 */
gboolean httpc_reload_tls(const struct config *cfg, GError **error);

/* Fills t for the server a (its resolved address in ss). */
void httpc_target_init(struct httpc_target *t, const struct config *cfg,
                       const struct config_addr *a,
                       const struct sockaddr_storage *ss);

/*
 * A bridge to t on base (hconn.c, health.c): returns the caller's end, a connected stream
 * socket on which calls are written as binary, unframed messages and
 * replies come back in order, as from a socket-mode server.  An HTTP
 * status other than 200, or a failed connection, comes back as a
 * TApplicationException naming it.  creds: SPNEGO's tickets, or NULL.
 * The bridge goes when the engine closes its end.
 */
evutil_socket_t httpc_bridge_open(struct event_base *base,
                                  const struct httpc_target *t,
                                  struct sasl_creds *creds, GError **error);

/*
 * Why the last request to host:port (as configured) got no HTTP answer
 * (TLS verification, refused, closed), into why; FALSE when it has
 * answered since, or never failed.  Any thread.
 */
gboolean httpc_last_failure(const char *host, uint16_t port, char *why,
                            size_t len);

/* Frees the bridges of base, whose loop will not run again, and runs what
 * is still queued on it until nothing is: last before event_base_free,
 * once nothing else on base may run. */
void httpc_base_done(struct event_base *base);

/*
 * The engine's own HTTP connections (backend.c): each call one POST
 * written from the backend connection itself, each reply parsed where
 * socket mode parses the Thrift reply.  No bridge, no socketpair.
 */
struct httpc_conn;
struct bufferevent;
struct evbuffer;

typedef enum {
    HTTPC_AGAIN,   /* the reply is not whole yet */
    HTTPC_BODY,    /* a 200: its whole body was appended to body */
    HTTPC_REFUSED, /* another status: why is the call's exception text */
    HTTPC_BAD,     /* not the HTTP expected (why): the connection goes */
} httpc_reply_t;

/* The state of one connection to t: the request head made once.  t
 * outlives it (the worker generation's server). */
struct httpc_conn *httpc_conn_new(const struct httpc_target *t,
                                  struct sasl_creds *creds);
void httpc_conn_free(struct httpc_conn *h);

/* The bufferevent to connect to t: TLS (from the current context) with
 * [backend] https, else a plain socket one; NULL with error. */
struct bufferevent *httpc_conn_bufferevent(struct event_base *base,
                                           const struct httpc_target *t,
                                           GError **error);

/*
 * The POST of the len bytes at the front of held (drained), written on
 * bev (HTTPS: with one SSL_write when it can, else onto its output).
 * FALSE (why) when SPNEGO gives no token: the message is drained all the
 * same.
 */
gboolean httpc_conn_post(struct httpc_conn *h, struct evbuffer *held,
                         size_t len, struct bufferevent *bev, char *why,
                         size_t whylen);

/*
 * The reply at the front of raw, consumed as far as it came; body must
 * be empty at the start of a reply.  Every length is checked against
 * [backend] max_frame_size.
 */
httpc_reply_t httpc_conn_reply(struct httpc_conn *h, struct evbuffer *raw,
                               struct evbuffer *body, char *why,
                               size_t whylen);

/* Whether the last whole reply said the server closes the connection. */
gboolean httpc_conn_closing(const struct httpc_conn *h);

/* Why the connection of bev failed: the TLS error if there is one, else
 * err (a socket error). */
void httpc_conn_why(const struct httpc_target *t, struct bufferevent *bev,
                    int err, char *why, size_t len);
