/* emu_server.h: the emulator's listener: one thread per connection, like HBase's thread-pool server. */
#pragma once

#include <glib.h>

#include "emu_handler.h"

struct emu_server_config {
    const char *host;
    int port;                 /* 0: ephemeral */
    gboolean framed;          /* HBase -f */
    gboolean compact;         /* HBase -c */
    guint32 max_frame;        /* bytes, one whole message */
};

typedef struct emu_server emu_server;

/* Binds and listens; *bound_port is the port actually bound. */
emu_server *emu_server_new(const struct emu_server_config *cfg,
                           EmuHandler *handler, int *bound_port,
                           GError **error);
/* Accepts until emu_server_stop; returns when the listener closes. */
void emu_server_run(emu_server *srv);
void emu_server_stop(emu_server *srv);
void emu_server_free(emu_server *srv);
