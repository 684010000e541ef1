/* emu_dispatch.c: one whole Thrift message in, its reply out: the generated processor of either service, without a socket. */
#include "emu_dispatch.h"

#include <string.h>

#include <thrift/c_glib/protocol/thrift_binary_protocol.h>
#include <thrift/c_glib/protocol/thrift_compact_protocol.h>

#include "emu_transport.h"
#include "hbase2_t_h_base_service.h"
#include "hbase_hbase.h"

/*
 *   message --wire_read_msg_begin--> name, type checked here
 *      (header rewritten to strict binary if needed) --EmuTransport-->
 *      generated processor (Hbase or THBaseService) --> handler --> store
 *   reply <-- EmuTransport output, or an exception built here
 *
 * c_glib never sees bytes the bounds-checking scanner has not accepted.
 */

struct emu_dispatch {
    emu_service_t service;
    wire_proto_t proto;
    const struct wire_limits *limits;
    ThriftProcessor *proc;
    EmuTransport *tr;
    ThriftProtocol *in, *out;
    GByteArray *err_reply; /* exceptions built without c_glib */
};

G_DEFINE_QUARK(emu_dispatch_error_quark, emu_dispatch_error)

emu_dispatch *emu_dispatch_new(emu_service_t service, GObject *handler,
                               wire_proto_t proto,
                               const struct wire_limits *limits)
{
    emu_dispatch *d = g_new0(emu_dispatch, 1);
    GType ptype = proto == WIRE_COMPACT ? THRIFT_TYPE_COMPACT_PROTOCOL
                                        : THRIFT_TYPE_BINARY_PROTOCOL;

    d->service = service;
    d->proto = proto;
    d->limits = limits;
    d->proc = service == EMU_SERVICE_HBASE2
                  ? g_object_new(HBASE2_TYPE_T_H_BASE_SERVICE_PROCESSOR,
                                 "handler", handler, NULL)
                  : g_object_new(HBASE_TYPE_HBASE_PROCESSOR, "handler",
                                 handler, NULL);
    d->tr = emu_transport_new();
    d->in = g_object_new(ptype, "transport", d->tr, NULL);
    d->out = g_object_new(ptype, "transport", d->tr, NULL);
    d->err_reply = g_byte_array_new();
    return d;
}

void emu_dispatch_free(emu_dispatch *d)
{
    if (d == NULL) {
        return;
    }
    g_object_unref(d->in);
    g_object_unref(d->out);
    g_object_unref(d->tr);
    g_object_unref(d->proc);
    g_byte_array_unref(d->err_reply);
    g_free(d);
}

/* The generated processors keep their method tables in the same place
 * under different struct names. */
static gboolean emu_dispatch_has_method(emu_dispatch *d, const char *name)
{
    GHashTable *map =
        d->service == EMU_SERVICE_HBASE2
            ? ((Hbase2THBaseServiceProcessor *)d->proc)->process_map
            : ((HbaseHbaseProcessor *)d->proc)->process_map;

    return g_hash_table_lookup(map, name) != NULL;
}

/* A TApplicationException built without c_glib, e.g. for a bad name. */
static emu_dispatch_result_t emu_dispatch_app_error(emu_dispatch *d,
                                                    const struct wire_msg *m,
                                                    int32_t type,
                                                    const char *text,
                                                    const GByteArray **reply)
{
    struct wire_buf b;
    struct wire_writer w;

    wire_buf_init(&b);
    wire_writer_init(&w, d->proto, &b);
    wire_write_app_exception(&w, m->name, m->name_len, m->seqid, type, text);
    g_byte_array_set_size(d->err_reply, 0);
    g_byte_array_append(d->err_reply, b.data, (guint)b.len);
    wire_buf_free(&b);
    *reply = d->err_reply;
    return EMU_DISPATCH_REPLY;
}

emu_dispatch_result_t emu_dispatch_call(emu_dispatch *d, const guint8 *msg,
                                        gsize len, const char *peer,
                                        const GByteArray **reply,
                                        GError **error)
{
    struct wire_reader r;
    struct wire_msg m;
    struct wire_buf head;
    g_autoptr(GError) err = NULL;
    g_autofree char *name = NULL;
    gboolean ok;

    *reply = NULL;
    wire_reader_init(&r, d->proto, msg, len, TRUE, d->limits);
    if (wire_read_msg_begin(&r, &m) != WIRE_OK) {
        g_set_error(error, EMU_DISPATCH_ERROR, 0, "bad message header: %s",
                    r.error ? r.error : "?");
        return EMU_DISPATCH_FAIL;
    }
    name = g_strndup((const char *)m.name, m.name_len);
    if (m.type != WIRE_CALL && m.type != WIRE_ONEWAY) {
        return emu_dispatch_app_error(d, &m, WIRE_APP_INVALID_MESSAGE_TYPE,
                                      "Invalid message type", reply);
    }
    /* Answered here rather than by c_glib's dispatcher, which leaks the
     * name on this path; the text is libthrift's. */
    if (memchr(m.name, 0, m.name_len) != NULL ||
        !emu_dispatch_has_method(d, name)) {
        g_autofree char *text = g_strdup_printf("Invalid method name: '%s'",
                                                name);

        return emu_dispatch_app_error(d, &m, WIRE_APP_UNKNOWN_METHOD, text,
                                      reply);
    }
    wire_buf_init(&head);
    if (d->proto == WIRE_BINARY && !m.strict) {
        /* c_glib 0.17 reads only versioned headers: rewrite this one. */
        struct wire_writer w;
        size_t off = wire_reader_offset(&r);

        wire_writer_init(&w, WIRE_BINARY, &head);
        wire_write_msg_begin(&w, m.name, m.name_len, m.type, m.seqid);
        emu_transport_set_input(d->tr, head.data, head.len, msg + off,
                                len - off);
    } else {
        emu_transport_set_input(d->tr, NULL, 0, msg, len);
    }
    emu_transport_reset_output(d->tr);
    ok = thrift_processor_process(d->proc, d->in, d->out, &err);
    wire_buf_free(&head);
    if (!ok) {
        /* The args did not decode into the method's struct. */
        g_message("%s: %s: %s", peer, name,
                  err ? err->message : "decode failed");
        return emu_dispatch_app_error(d, &m, WIRE_APP_PROTOCOL_ERROR,
                                      err ? err->message : "invalid arguments",
                                      reply);
    }
    if (m.type == WIRE_ONEWAY) {
        return EMU_DISPATCH_ONEWAY;
    }
    *reply = emu_transport_output(d->tr);
    return EMU_DISPATCH_REPLY;
}
