/* httpc.h: the backend side of HBase's HTTP mode: each Thrift message one POST over a kept-alive HTTP(S) connection, bridged to a socket the engine uses as a buffered transport. */
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

/* One server as the bridge dials it. */
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
 * A bridge to t on base: returns the engine's end, a connected stream
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

/* Frees the bridges of base, whose loop will not run again: before
 * event_base_free. */
void httpc_base_done(struct event_base *base);
