/* emu_dispatch.h: one whole Thrift message in, its reply out: the generated processor of either service, without a socket. */
#pragma once

#include <glib-object.h>

#include "wire.h"

/* Which Thrift service a listener serves (HBase runs them separately). */
typedef enum {
    EMU_SERVICE_HBASE1, /* service Hbase: `hbase thrift` */
    EMU_SERVICE_HBASE2, /* service THBaseService: `hbase thrift2` */
} emu_service_t;

typedef enum {
    EMU_DISPATCH_REPLY,  /* a reply (or an exception) to send */
    EMU_DISPATCH_ONEWAY, /* handled; nothing to send */
    EMU_DISPATCH_FAIL,   /* no message header to answer: close */
} emu_dispatch_result_t;

#define EMU_DISPATCH_ERROR (emu_dispatch_error_quark())
GQuark emu_dispatch_error_quark(void);

/* One per thread: it owns a processor, a transport and two protocols. */
typedef struct emu_dispatch emu_dispatch;

/* handler implements service (EmuHandler or EmuHandler2); limits bound
 * what the message header may claim. */
emu_dispatch *emu_dispatch_new(emu_service_t service, GObject *handler,
                               wire_proto_t proto,
                               const struct wire_limits *limits);
void emu_dispatch_free(emu_dispatch *d);

/* msg is one whole message the frame scanner accepted.  On REPLY *reply
 * points at the reply, valid until the next call; on FAIL error says why.
 * peer names the client in log lines. */
emu_dispatch_result_t emu_dispatch_call(emu_dispatch *d, const guint8 *msg,
                                        gsize len, const char *peer,
                                        const GByteArray **reply,
                                        GError **error);
