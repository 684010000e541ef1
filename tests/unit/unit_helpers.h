/* unit_helpers.h: what the unit tests share to build and read Thrift
 * messages: c_glib as an independent codec to hold ours to, byte arrays,
 * and wire's writer and reader set up on one message. */
#ifndef HSP_UNIT_HELPERS_H
#define HSP_UNIT_HELPERS_H

#include <glib.h>
#include <thrift/c_glib/protocol/thrift_protocol.h>
#include <thrift/c_glib/transport/thrift_memory_buffer.h>

#include "wire.h"

/* A c_glib protocol (binary or compact) over a fresh memory buffer *mem;
 * the caller unrefs both. */
ThriftProtocol *unit_protocol_new(wire_proto_t proto,
                                  ThriftMemoryBuffer **mem);

/* A copy of n bytes at p (g_byte_array_unref). */
GByteArray *unit_bytes(const void *p, size_t n);

/* One message encoded by c_glib: its bytes (g_byte_array_unref). */
GByteArray *unit_encode(wire_proto_t proto, const char *name,
                        ThriftMessageType type, gint32 seqid, gpointer body);

/* One message decoded by c_glib into body, every byte of it; its header
 * must be name, type and seqid. */
void unit_decode(wire_proto_t proto, const uint8_t *data, size_t len,
                 const char *name, ThriftMessageType type, gint32 seqid,
                 gpointer body);

/* Starts a message with wire's writer: buf made empty, w writing it, the
 * header written and the args (or result) struct opened. */
void unit_msg_begin(struct wire_writer *w, struct wire_buf *buf,
                    wire_proto_t proto, const char *name, uint8_t type,
                    int32_t seqid);

/* Reads a whole message's header with wire's reader, which must accept it;
 * r is then at the args (or result) struct. */
void unit_read_msg_begin(struct wire_reader *r, wire_proto_t proto,
                         const uint8_t *data, size_t len, struct wire_msg *m);

#endif
