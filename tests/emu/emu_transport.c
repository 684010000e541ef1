/* emu_transport.c: a c_glib transport that reads a message in place and writes to a byte array. */
#include "emu_transport.h"

#include <string.h>

struct _EmuTransport {
    ThriftTransport parent;
    const guint8 *seg[2]; /* header, then body */
    gsize seg_len[2];
    gsize seg_pos[2];
    GByteArray *out;
};

G_DEFINE_TYPE(EmuTransport, emu_transport, THRIFT_TYPE_TRANSPORT)

static gsize emu_transport_left(const EmuTransport *t)
{
    return (t->seg_len[0] - t->seg_pos[0]) + (t->seg_len[1] - t->seg_pos[1]);
}

static gboolean emu_transport_is_open(ThriftTransport *tr)
{
    return TRUE;
}

static gboolean emu_transport_nop(ThriftTransport *tr, GError **error)
{
    return TRUE;
}

static gint32 emu_transport_read(ThriftTransport *tr, gpointer buf,
                                 guint32 len, GError **error)
{
    EmuTransport *t = EMU_TRANSPORT(tr);
    guint8 *dst = buf;
    guint32 got = 0;

    if (emu_transport_left(t) < len) {
        /* The frame scanner vouched for the message; a short read means
         * c_glib wanted more than the message holds. */
        g_set_error(error, THRIFT_TRANSPORT_ERROR,
                    THRIFT_TRANSPORT_ERROR_RECEIVE,
                    "read of %u bytes past the end of the message", len);
        return -1;
    }
    for (int s = 0; s < 2 && got < len; s++) {
        gsize n = MIN(t->seg_len[s] - t->seg_pos[s], (gsize)(len - got));

        /* An empty segment may have a NULL base; memcpy needs a valid
         * pointer even for zero bytes. */
        if (n == 0) {
            continue;
        }
        memcpy(dst + got, t->seg[s] + t->seg_pos[s], n);
        t->seg_pos[s] += n;
        got += (guint32)n;
    }
    return (gint32)got;
}

static gint32 emu_transport_read_all(ThriftTransport *tr, gpointer buf,
                                     guint32 len, GError **error)
{
    return emu_transport_read(tr, buf, len, error);
}

static gboolean emu_transport_write(ThriftTransport *tr, const gpointer buf,
                                    const guint32 len, GError **error)
{
    g_byte_array_append(EMU_TRANSPORT(tr)->out, buf, len);
    return TRUE;
}

static gboolean emu_transport_check_read(ThriftTransport *tr, glong n,
                                         GError **error)
{
    if (n < 0 || (gsize)n > emu_transport_left(EMU_TRANSPORT(tr))) {
        g_set_error(error, THRIFT_TRANSPORT_ERROR,
                    THRIFT_TRANSPORT_ERROR_MAX_MESSAGE_SIZE_REACHED,
                    "MaxMessageSize reached");
        return FALSE;
    }
    return TRUE;
}

static gboolean emu_transport_size_nop(ThriftTransport *tr, glong n,
                                       GError **error)
{
    return TRUE;
}

static void emu_transport_finalize(GObject *o)
{
    g_byte_array_unref(EMU_TRANSPORT(o)->out);
    G_OBJECT_CLASS(emu_transport_parent_class)->finalize(o);
}

static void emu_transport_init(EmuTransport *t)
{
    t->out = g_byte_array_new();
}

static void emu_transport_class_init(EmuTransportClass *klass)
{
    ThriftTransportClass *tc = THRIFT_TRANSPORT_CLASS(klass);

    G_OBJECT_CLASS(klass)->finalize = emu_transport_finalize;
    tc->is_open = emu_transport_is_open;
    tc->open = emu_transport_nop;
    tc->close = emu_transport_nop;
    tc->peek = emu_transport_nop;
    tc->read = emu_transport_read;
    tc->read_all = emu_transport_read_all;
    tc->read_end = emu_transport_nop;
    tc->write = emu_transport_write;
    tc->write_end = emu_transport_nop;
    tc->flush = emu_transport_nop;
    tc->checkReadBytesAvailable = emu_transport_check_read;
    tc->updateKnownMessageSize = emu_transport_size_nop;
    tc->resetConsumedMessageSize = emu_transport_size_nop;
    tc->countConsumedMessageBytes = emu_transport_size_nop;
}

EmuTransport *emu_transport_new(void)
{
    return g_object_new(EMU_TYPE_TRANSPORT, NULL);
}

void emu_transport_set_input(EmuTransport *t, const guint8 *head,
                             gsize head_len, const guint8 *body,
                             gsize body_len)
{
    t->seg[0] = head;
    t->seg_len[0] = head_len;
    t->seg[1] = body;
    t->seg_len[1] = body_len;
    t->seg_pos[0] = t->seg_pos[1] = 0;
}

GByteArray *emu_transport_output(EmuTransport *t)
{
    return t->out;
}

void emu_transport_reset_output(EmuTransport *t)
{
    g_byte_array_set_size(t->out, 0);
}
