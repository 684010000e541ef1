/* emu_transport.h: a c_glib transport that reads a message in place and writes to a byte array. */
#pragma once

#include <glib-object.h>
#include <thrift/c_glib/transport/thrift_transport.h>

/*
 * Input is read from up to two segments (a rewritten header, then the
 * rest of the message as received), without copying them; output is
 * appended to a GByteArray.  Reads past the end fail instead of blocking,
 * and checkReadBytesAvailable uses the real remaining size, so a count
 * cannot make c_glib allocate beyond the message.
 */
typedef struct _EmuTransport EmuTransport;
typedef struct {
    ThriftTransportClass parent_class;
} EmuTransportClass;

GType emu_transport_get_type(void);
#define EMU_TYPE_TRANSPORT (emu_transport_get_type())
#define EMU_TRANSPORT(o)                                                      \
    (G_TYPE_CHECK_INSTANCE_CAST((o), EMU_TYPE_TRANSPORT, EmuTransport))

EmuTransport *emu_transport_new(void);
/* Sets the bytes the next message is read from (not copied). */
void emu_transport_set_input(EmuTransport *t, const guint8 *head,
                             gsize head_len, const guint8 *body,
                             gsize body_len);
/* Bytes written since the last reset. */
GByteArray *emu_transport_output(EmuTransport *t);
void emu_transport_reset_output(EmuTransport *t);
