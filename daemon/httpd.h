/* httpd.h: Thrift over HTTP POST for clients, as HBase's `hbase thrift -http` serves it, bridged into the ordinary client path. */
#pragma once

#include <glib.h>
#include <stdint.h>
#include <sys/socket.h>

#include <event2/event.h>

#define HTTPD_ERROR httpd_error_quark()
GQuark httpd_error_quark(void);

typedef enum {
    HTTPD_ERROR_LISTEN, /* cannot bind or listen */
} httpd_error_t;

struct hbase1_service;
struct evhttp_request;

/*
 * Gives the engine its end of a bridge: fd is one end of a socketpair on
 * which the HTTP connection's calls arrive as a buffered binary-protocol
 * stream, in order, and on which the replies are expected; peer is the
 * HTTP client's address, for the log.
 */
typedef void (*httpd_handoff_fn)(void *arg, evutil_socket_t fd,
                                 const struct sockaddr *peer, int peerlen,
                                 const struct hbase1_service *svc);

struct httpd;

/* An HTTP listener on base at sa, its calls for svc; bodies larger than
 * max_body are answered 413. */
struct httpd *httpd_new(struct event_base *base, const struct sockaddr *sa,
                        socklen_t salen, const struct hbase1_service *svc,
                        size_t max_body, httpd_handoff_fn handoff, void *arg,
                        GError **error) G_GNUC_WARN_UNUSED_RESULT;

/* The port it listens on (the one the kernel picked for port 0). */
unsigned httpd_port(const struct httpd *h);

/* The port a listening socket fd is bound to (for port 0: the one the
 * kernel picked); 0 when getsockname cannot say.  Every listener's:
 * httpd's, the admin endpoint's, the proxy's. */
uint16_t httpd_bound_port(evutil_socket_t fd);

/* Replies to req: code and reason, a body of len bytes (none for 0) of
 * the given Content-Type; headers set on req before are sent too. Out
 * of memory, the reply goes without its body. */
void httpd_send(struct evhttp_request *req, int code, const char *reason,
                const char *type, const void *body, size_t len);

/* Stops listening and closes every HTTP connection and bridge. */
void httpd_free(struct httpd *h);
