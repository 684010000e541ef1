/* emu_http.h: Thrift over HTTP(S), as HBase's `hbase thrift -http` (Jetty and ThriftHttpServlet) serves it. */
#pragma once

#include <glib-object.h>

#include "emu_dispatch.h"
#include "emu_spnego.h"

/* A server certificate and key (hbase.thrift.ssl.enabled), shareable by
 * several listeners. */
typedef struct emu_http_tls emu_http_tls;

emu_http_tls *emu_http_tls_new(const char *cert_file, const char *key_file,
                               GError **error) G_GNUC_WARN_UNUSED_RESULT;

struct emu_http_config {
    emu_service_t service;
    const char *host;
    int port;                /* 0: ephemeral */
    guint32 max_body;        /* largest request body, bytes */
    guint threads;           /* event loops sharing the listener */
    emu_http_tls *tls;       /* HTTPS, or NULL */
    emu_spnego *spnego;      /* Kerberos on every request, or NULL */
    gboolean proxyuser;      /* hbase.thrift.support.proxyuser */
    gboolean allow_options;  /* hbase.thrift.http.allow.options.method */
    const char *server_user; /* the effective user without SPNEGO */
    guint owner;             /* names the listener to emu_scanner_set_owner */
};

typedef struct emu_http emu_http;

/* Binds and listens; *bound_port is the port actually bound.  handler
 * implements cfg->service. */
emu_http *emu_http_new(const struct emu_http_config *cfg, GObject *handler,
                       int *bound_port, GError **error);
/* Serves until emu_http_stop; returns when every loop has stopped. */
void emu_http_run(emu_http *h);
/* Safe from any thread. */
void emu_http_stop(emu_http *h);
