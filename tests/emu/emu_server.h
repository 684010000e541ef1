/* emu_server.h: the emulator's listener: one thread per connection, like HBase's thread-pool server. */
#pragma once

#include <glib.h>

#include <glib-object.h>

#include "emu_dispatch.h"
#include "emu_sasl.h"

struct emu_server_config {
    emu_service_t service;
    const char *host;
    int port;          /* 0: ephemeral */
    gboolean framed;   /* HBase -f */
    gboolean compact;  /* HBase -c */
    guint32 max_frame; /* bytes, one whole message */
    emu_sasl *sasl;    /* SASL GSSAPI (unframed only), or NULL */
    guint owner;       /* names the listener to emu_scanner_set_owner */
};

typedef struct emu_server emu_server;

/* Binds and listens; *bound_port is the port actually bound.  handler
 * implements the service cfg names (EmuHandler or EmuHandler2). */
emu_server *emu_server_new(const struct emu_server_config *cfg,
                           GObject *handler, int *bound_port, GError **error);
/* Accepts until emu_server_stop; returns when the listener closes. */
void emu_server_run(emu_server *srv);
/* Closes the listener (emu_server_run returns); safe from any thread. */
void emu_server_stop(emu_server *srv);
/*
 * As a Thrift server that dies: stops, shuts down every connection and
 * returns once their threads have ended, so that no call of this server
 * is still running (nor opening a scanner) when the caller drops its
 * scanners.  Then emu_server_free is safe once emu_server_run returned.
 */
void emu_server_halt(emu_server *srv);
void emu_server_free(emu_server *srv);
/* Sends all of p, retrying on EINTR; FALSE if the peer is gone. */
gboolean emu_server_send_all(int fd, const guint8 *p, gsize len);
