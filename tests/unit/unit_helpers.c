/* unit_helpers.c: see unit_helpers.h. */
#include <string.h>

#include <thrift/c_glib/protocol/thrift_binary_protocol.h>
#include <thrift/c_glib/protocol/thrift_compact_protocol.h>
#include <thrift/c_glib/thrift_struct.h>

#include "unit_helpers.h"

ThriftProtocol *
unit_protocol_new(wire_proto_t proto, ThriftMemoryBuffer **mem)
{
    *mem = g_object_new(THRIFT_TYPE_MEMORY_BUFFER, "buf_size", 1 << 24, NULL);
    return g_object_new(proto == WIRE_BINARY ? THRIFT_TYPE_BINARY_PROTOCOL
                                             : THRIFT_TYPE_COMPACT_PROTOCOL,
                        "transport", *mem, NULL);
}

GByteArray *
unit_bytes(const void *p, size_t n)
{
    GByteArray *a = g_byte_array_new();

    g_byte_array_append(a, p, (guint)n);
    return a;
}

GByteArray *
unit_encode(wire_proto_t proto, const char *name, ThriftMessageType type,
            gint32 seqid, gpointer body)
{
    ThriftMemoryBuffer *mem;
    ThriftProtocol *p = unit_protocol_new(proto, &mem);
    GError *error = NULL;
    GByteArray *out;

    g_assert_cmpint(thrift_protocol_write_message_begin(p, name, type, seqid,
                                                        &error),
                    >, 0);
    g_assert_cmpint(thrift_struct_write(THRIFT_STRUCT(body), p, &error), >, 0);
    g_assert_cmpint(thrift_protocol_write_message_end(p, &error), >=, 0);
    g_assert_no_error(error);
    out = unit_bytes(mem->buf->data, mem->buf->len);
    g_object_unref(p);
    g_object_unref(mem);
    return out;
}

void
unit_decode(wire_proto_t proto, const uint8_t *data, size_t len,
            const char *name, ThriftMessageType type, gint32 seqid,
            gpointer body)
{
    ThriftMemoryBuffer *mem;
    ThriftProtocol *p = unit_protocol_new(proto, &mem);
    GError *error = NULL;
    gchar *got_name = NULL;
    ThriftMessageType got_type;
    gint32 got_seqid;

    g_byte_array_append(mem->buf, data, (guint)len);
    g_assert_cmpint(thrift_protocol_read_message_begin(p, &got_name, &got_type,
                                                       &got_seqid, &error),
                    >, 0);
    g_assert_no_error(error);
    g_assert_cmpstr(got_name, ==, name);
    g_assert_cmpint(got_type, ==, type);
    g_assert_cmpint(got_seqid, ==, seqid);
    g_assert_cmpint(thrift_struct_read(THRIFT_STRUCT(body), p, &error), >, 0);
    g_assert_no_error(error);
    g_assert_cmpuint(mem->buf->len, ==, 0);
    g_free(got_name);
    g_object_unref(p);
    g_object_unref(mem);
}

void
unit_msg_begin(struct wire_writer *w, struct wire_buf *buf, wire_proto_t proto,
               const char *name, uint8_t type, int32_t seqid)
{
    wire_buf_init(buf);
    wire_writer_init(w, proto, buf);
    wire_write_msg_begin(w, (const uint8_t *)name, (uint32_t)strlen(name),
                         type, seqid);
    wire_write_struct_begin(w);
}

void
unit_read_msg_begin(struct wire_reader *r, wire_proto_t proto,
                    const uint8_t *data, size_t len, struct wire_msg *m)
{
    wire_reader_init(r, proto, data, len, TRUE, NULL);
    g_assert_cmpint(wire_read_msg_begin(r, m), ==, WIRE_OK);
}
