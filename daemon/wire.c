/* wire.c: bounds-checked reader and writer for Thrift binary and compact. */
#include "wire.h"

#include <string.h>

/*
 * Nothing here trusts a length from the input: every count is checked
 * against the bytes left and a limit before anything is read, nesting is
 * capped, and a failure is sticky so callers can check once per message.
 */

const struct wire_limits wire_default_limits = {
    .max_message = 16u << 20,
    .max_string = 16u << 20,
    .max_container = 1u << 24,
    .max_depth = WIRE_MAX_DEPTH,
};

/* Compact protocol type ids. */
enum wire_ctype {
    CT_STOP = 0,
    CT_TRUE = 1,
    CT_FALSE = 2,
    CT_BYTE = 3,
    CT_I16 = 4,
    CT_I32 = 5,
    CT_I64 = 6,
    CT_DOUBLE = 7,
    CT_BINARY = 8,
    CT_LIST = 9,
    CT_SET = 10,
    CT_MAP = 11,
    CT_STRUCT = 12,
};

static const uint8_t wire_ctype_to_ttype[16] = {
    [CT_STOP] = WIRE_T_STOP,
    [CT_TRUE] = WIRE_T_BOOL,
    [CT_FALSE] = WIRE_T_BOOL,
    [CT_BYTE] = WIRE_T_BYTE,
    [CT_I16] = WIRE_T_I16,
    [CT_I32] = WIRE_T_I32,
    [CT_I64] = WIRE_T_I64,
    [CT_DOUBLE] = WIRE_T_DOUBLE,
    [CT_BINARY] = WIRE_T_STRING,
    [CT_LIST] = WIRE_T_LIST,
    [CT_SET] = WIRE_T_SET,
    [CT_MAP] = WIRE_T_MAP,
    [CT_STRUCT] = WIRE_T_STRUCT,
    [13] = 0xff,
    [14] = 0xff,
    [15] = 0xff,
};

static uint8_t
wire_ttype_to_ctype(uint8_t t)
{
    switch (t) {
    case WIRE_T_BOOL: return CT_TRUE;
    case WIRE_T_BYTE: return CT_BYTE;
    case WIRE_T_I16: return CT_I16;
    case WIRE_T_I32: return CT_I32;
    case WIRE_T_I64: return CT_I64;
    case WIRE_T_DOUBLE: return CT_DOUBLE;
    case WIRE_T_STRING: return CT_BINARY;
    case WIRE_T_LIST: return CT_LIST;
    case WIRE_T_SET: return CT_SET;
    case WIRE_T_MAP: return CT_MAP;
    case WIRE_T_STRUCT: return CT_STRUCT;
    default: return CT_STOP;
    }
}

const char *
wire_type_name(uint8_t type)
{
    switch (type) {
    case WIRE_T_STOP: return "stop";
    case WIRE_T_BOOL: return "bool";
    case WIRE_T_BYTE: return "byte";
    case WIRE_T_DOUBLE: return "double";
    case WIRE_T_I16: return "i16";
    case WIRE_T_I32: return "i32";
    case WIRE_T_I64: return "i64";
    case WIRE_T_STRING: return "string";
    case WIRE_T_STRUCT: return "struct";
    case WIRE_T_MAP: return "map";
    case WIRE_T_SET: return "set";
    case WIRE_T_LIST: return "list";
    default: return "invalid";
    }
}

/* ---- reader ---------------------------------------------------------- */

void
wire_reader_init(struct wire_reader *r, wire_proto_t proto, const uint8_t *buf,
                 size_t len, gboolean complete,
                 const struct wire_limits *limits)
{
    r->start = buf;
    r->pos = buf;
    r->end = buf + len;
    r->limits = limits != NULL ? limits : &wire_default_limits;
    r->proto = proto;
    r->status = WIRE_OK;
    r->error = NULL;
    r->complete = complete;
    r->depth = 0;
    r->last_fid[0] = 0;
    r->bool_pending = -1;
}

size_t
wire_reader_offset(const struct wire_reader *r)
{
    return (size_t)(r->pos - r->start);
}

wire_status_t
wire_reader_fail(struct wire_reader *r, const char *why)
{
    if (r->status == WIRE_OK) {
        r->status = WIRE_ERROR;
        r->error = why;
    }
    return r->status;
}

/* Running out of input: an error for a whole message, else wait. */
static wire_status_t
wire_short(struct wire_reader *r)
{
    if (r->status != WIRE_OK) {
        return r->status;
    }
    if (r->complete) {
        r->status = WIRE_ERROR;
        r->error = "message truncated";
    } else if ((size_t)(r->end - r->start) >= r->limits->max_message) {
        r->status = WIRE_ERROR;
        r->error = "message larger than the maximum size";
    } else {
        r->status = WIRE_AGAIN;
    }
    return r->status;
}

static inline gboolean
wire_need(struct wire_reader *r, size_t n)
{
    if (G_UNLIKELY(r->status != WIRE_OK)) {
        return FALSE;
    }
    if (G_UNLIKELY((size_t)(r->end - r->pos) < n)) {
        wire_short(r);
        return FALSE;
    }
    return TRUE;
}

static inline uint64_t
wire_be64(const uint8_t *p)
{
    return ((uint64_t)wire_be32(p) << 32) | wire_be32(p + 4);
}

static uint64_t
wire_varint(struct wire_reader *r, unsigned max_bytes)
{
    uint64_t v = 0;
    unsigned shift = 0;

    for (unsigned i = 0; i < max_bytes; i++) {
        uint8_t b;

        if (!wire_need(r, 1)) {
            return 0;
        }
        b = *r->pos++;
        v |= (uint64_t)(b & 0x7f) << shift;
        if ((b & 0x80) == 0) {
            return v;
        }
        shift += 7;
    }
    wire_reader_fail(r, "varint too long");
    return 0;
}

static inline int64_t
wire_unzigzag(uint64_t v)
{
    return (int64_t)(v >> 1) ^ -(int64_t)(v & 1);
}

/* A compact zigzag integer of at most max_bytes, failing as out_of_range
 * outside [min, max].  0 unless r is still OK. */
static G_ALWAYS_INLINE inline int64_t
wire_read_zigzag(struct wire_reader *r, unsigned max_bytes, int64_t min,
                 int64_t max, const char *out_of_range)
{
    int64_t v = wire_unzigzag(wire_varint(r, max_bytes));

    if (v < min || v > max) {
        wire_reader_fail(r, out_of_range);
        return 0;
    }
    return v;
}

/* A compact string or container size: a varint that must fit an i32, as
 * the binary protocol's sizes do.  0 unless r is still OK. */
static G_ALWAYS_INLINE inline int64_t
wire_read_compact_size(struct wire_reader *r)
{
    int64_t n = (int64_t)wire_varint(r, 5);

    if (n > INT32_MAX) {
        wire_reader_fail(r, "negative size");
        return 0;
    }
    return n;
}

/*
 * Whether 'need' bytes are left at r.  When they are not: an error if
 * they would take the message past max_message, else short.  The
 * resumable scan asks this too of a string it passes in pieces, so that
 * both scans fail the same way whatever has arrived.
 */
static inline gboolean
wire_check_room(struct wire_reader *r, uint64_t need)
{
    if (need > (uint64_t)(r->end - r->pos)) {
        if (need + (uint64_t)(r->pos - r->start) > r->limits->max_message) {
            wire_reader_fail(r, "size larger than the maximum message");
            return FALSE;
        }
        wire_short(r);
        return FALSE;
    }
    return TRUE;
}

/* Checks a string or container size against limits and bytes left.
 * Inline: every container and string read asks it. */
static G_ALWAYS_INLINE inline gboolean
wire_check_size(struct wire_reader *r, int64_t size, uint32_t limit,
                size_t min_elem, const char *what_limit)
{
    if (r->status != WIRE_OK) {
        return FALSE;
    }
    if (size < 0) {
        wire_reader_fail(r, "negative size");
        return FALSE;
    }
    if ((uint64_t)size > limit) {
        wire_reader_fail(r, what_limit);
        return FALSE;
    }
    return wire_check_room(r, (uint64_t)size * min_elem);
}

static gboolean
wire_enter(struct wire_reader *r)
{
    if (r->status != WIRE_OK) {
        return FALSE;
    }
    if (r->depth >= r->limits->max_depth || r->depth >= WIRE_MAX_DEPTH) {
        wire_reader_fail(r, "nesting deeper than the limit");
        return FALSE;
    }
    r->depth++;
    return TRUE;
}

/* A container of n elements of at least min_elem bytes each: its size
 * against the limit and the bytes left, then one level deeper. */
static G_ALWAYS_INLINE inline gboolean
wire_enter_container(struct wire_reader *r, int64_t n, size_t min_elem)
{
    return wire_check_size(r, n, r->limits->max_container, min_elem,
                           "container larger than the limit") &&
           wire_enter(r);
}

wire_status_t
wire_read_msg_begin(struct wire_reader *r, struct wire_msg *m)
{
    if (r->proto == WIRE_BINARY && r->status == WIRE_OK &&
        r->end - r->pos >= 8) {
        /* a strict binary header that is whole and valid, as every call
         * and reply of the proxy's clients and backends: the checks
         * below in one test (anything else goes the long way) */
        uint32_t first = wire_be32(r->pos), len = wire_be32(r->pos + 4);
        uint8_t type = (uint8_t)(first & 0xff);

        if ((first & 0xffff0000u) == 0x80010000u && len <= WIRE_MAX_NAME &&
            (size_t)(r->end - r->pos) - 8 >= (size_t)len + 4 &&
            type >= WIRE_CALL && type <= WIRE_ONEWAY) {
            m->name = r->pos + 8;
            m->name_len = len;
            m->type = type;
            m->seqid = (int32_t)wire_be32(r->pos + 8 + len);
            m->strict = TRUE;
            r->pos += 12 + (size_t)len;
            return WIRE_OK;
        }
    }
    memset(m, 0, sizeof(*m));
    if (r->proto == WIRE_BINARY) {
        int32_t first;

        if (!wire_need(r, 4)) {
            return r->status;
        }
        first = (int32_t)wire_be32(r->pos);
        if (first < 0) {
            uint32_t len;

            if (((uint32_t)first & 0xffff0000u) != 0x80010000u) {
                return wire_reader_fail(r, "bad binary protocol version");
            }
            m->strict = TRUE;
            m->type = (uint8_t)(first & 0xff);
            r->pos += 4;
            if (!wire_need(r, 4)) {
                return r->status;
            }
            len = wire_be32(r->pos);
            if (len > WIRE_MAX_NAME) {
                return wire_reader_fail(r, "method name too long");
            }
            r->pos += 4;
            if (!wire_need(r, len + 4)) {
                return r->status;
            }
            m->name = r->pos;
            m->name_len = len;
            r->pos += len;
            m->seqid = (int32_t)wire_be32(r->pos);
            r->pos += 4;
        } else {
            if (first > WIRE_MAX_NAME) {
                return wire_reader_fail(r, "method name too long");
            }
            r->pos += 4;
            if (!wire_need(r, (size_t)first + 5)) {
                return r->status;
            }
            m->strict = FALSE;
            m->name = r->pos;
            m->name_len = (uint32_t)first;
            r->pos += first;
            m->type = *r->pos++;
            m->seqid = (int32_t)wire_be32(r->pos);
            r->pos += 4;
        }
    } else {
        uint8_t b;
        uint64_t len;

        if (!wire_need(r, 2)) {
            return r->status;
        }
        if (r->pos[0] != 0x82) {
            return wire_reader_fail(r, "bad compact protocol id");
        }
        b = r->pos[1];
        if ((b & 0x1f) != 1) {
            return wire_reader_fail(r, "bad compact protocol version");
        }
        m->type = (uint8_t)(b >> 5);
        r->pos += 2;
        m->seqid = (int32_t)(uint32_t)wire_varint(r, 5);
        len = wire_varint(r, 5);
        if (r->status != WIRE_OK) {
            return r->status;
        }
        if (len > WIRE_MAX_NAME) {
            return wire_reader_fail(r, "method name too long");
        }
        if (!wire_need(r, len)) {
            return r->status;
        }
        m->name = r->pos;
        m->name_len = (uint32_t)len;
        r->pos += len;
        m->strict = TRUE;
    }
    if (m->type < WIRE_CALL || m->type > WIRE_ONEWAY) {
        return wire_reader_fail(r, "bad message type");
    }
    return r->status;
}

wire_status_t
wire_read_struct_begin_full(struct wire_reader *r)
{
    if (!wire_enter(r)) {
        return r->status;
    }
    r->last_fid[r->depth] = 0;
    return r->status;
}

wire_status_t
wire_read_field_full(struct wire_reader *r, uint8_t *type, int16_t *fid)
{
    *type = WIRE_T_STOP;
    *fid = 0;
    if (r->proto == WIRE_BINARY) {
        uint8_t t;

        if (!wire_need(r, 1)) {
            return r->status;
        }
        t = *r->pos;
        if (t == WIRE_T_STOP) {
            r->pos++;
            return WIRE_OK;
        }
        if (!wire_type_valid(t)) {
            return wire_reader_fail(r, "invalid field type");
        }
        if (!wire_need(r, 3)) {
            return r->status;
        }
        *type = t;
        *fid = (int16_t)(((uint16_t)r->pos[1] << 8) | r->pos[2]);
        r->pos += 3;
    } else {
        uint8_t b, ct, delta;

        if (!wire_need(r, 1)) {
            return r->status;
        }
        b = *r->pos++;
        ct = b & 0x0f;
        if (ct == CT_STOP) {
            if (b != 0) {
                return wire_reader_fail(r, "invalid field header");
            }
            return WIRE_OK;
        }
        if (wire_ctype_to_ttype[ct] == 0xff) {
            return wire_reader_fail(r, "invalid field type");
        }
        delta = b >> 4;
        if (delta != 0) {
            *fid = (int16_t)(r->last_fid[r->depth] + delta);
        } else {
            *fid = (int16_t)wire_read_zigzag(r, 3, INT16_MIN, INT16_MAX,
                                             "field id out of range");
            if (r->status != WIRE_OK) {
                return r->status;
            }
        }
        r->last_fid[r->depth] = *fid;
        *type = wire_ctype_to_ttype[ct];
        if (ct == CT_TRUE || ct == CT_FALSE) {
            r->bool_pending = ct == CT_TRUE;
        }
    }
    return r->status;
}

gboolean
wire_read_bool(struct wire_reader *r)
{
    uint8_t b;

    if (r->proto == WIRE_COMPACT && r->bool_pending >= 0) {
        gboolean v = r->bool_pending == 1;

        r->bool_pending = -1;
        return r->status == WIRE_OK ? v : FALSE;
    }
    if (!wire_need(r, 1)) {
        return FALSE;
    }
    b = *r->pos++;
    /* compact containers write 1 for true and 2 for false */
    return r->proto == WIRE_COMPACT ? b == CT_TRUE : b != 0;
}

int8_t
wire_read_byte(struct wire_reader *r)
{
    if (!wire_need(r, 1)) {
        return 0;
    }
    return (int8_t)*r->pos++;
}

/* A binary protocol integer of n bytes, big-endian.  0 unless r is still
 * OK. */
static G_ALWAYS_INLINE inline uint64_t
wire_read_be(struct wire_reader *r, size_t n)
{
    uint64_t v;

    if (!wire_need(r, n)) {
        return 0;
    }
    /* n is 2, 4 or 8, a constant where this is inlined: one load and a
     * byte swap */
    v = n == 8   ? wire_be64(r->pos)
        : n == 4 ? wire_be32(r->pos)
                 : ((uint64_t)r->pos[0] << 8) | r->pos[1];
    r->pos += n;
    return v;
}

/* An integer of n bytes: a zigzag varint in compact (of at most the
 * bytes 8n bits take, failing as out_of_range outside [min, max]), n
 * bytes big-endian in binary (the caller's cast gives the sign). */
static G_ALWAYS_INLINE inline int64_t
wire_read_int(struct wire_reader *r, size_t n, int64_t min, int64_t max,
              const char *out_of_range)
{
    if (r->proto == WIRE_COMPACT) {
        return wire_read_zigzag(r, (unsigned)(8 * n + 6) / 7, min, max,
                                out_of_range);
    }
    return (int64_t)wire_read_be(r, n);
}

int16_t
wire_read_i16(struct wire_reader *r)
{
    return (int16_t)wire_read_int(r, 2, INT16_MIN, INT16_MAX,
                                  "i16 out of range");
}

int32_t
wire_read_i32(struct wire_reader *r)
{
    return (int32_t)wire_read_int(r, 4, INT32_MIN, INT32_MAX,
                                  "i32 out of range");
}

int64_t
wire_read_i64(struct wire_reader *r)
{
    return wire_read_int(r, 8, INT64_MIN, INT64_MAX, "i64 out of range");
}

double
wire_read_double(struct wire_reader *r)
{
    uint64_t bits = 0;
    double d;

    if (!wire_need(r, 8)) {
        return 0;
    }
    if (r->proto == WIRE_COMPACT) {
        for (int i = 7; i >= 0; i--) {
            bits = (bits << 8) | r->pos[i];
        }
    } else {
        bits = wire_be64(r->pos);
    }
    r->pos += 8;
    memcpy(&d, &bits, sizeof(d));
    return d;
}

/*
 * A string's length prefix, checked against max_string but not against
 * the bytes present (wire_read_binary does that next; the resumable scan
 * passes the bytes as they come).  0 unless r is still OK.
 */
static inline uint32_t
wire_read_binary_len(struct wire_reader *r)
{
    int64_t n;

    if (r->proto == WIRE_COMPACT) {
        n = wire_read_compact_size(r);
    } else {
        n = (int32_t)wire_read_be(r, 4);
    }
    /* no bytes asked for (min_elem 0): only the sign and the limit */
    if (!wire_check_size(r, n, r->limits->max_string, 0,
                         "string larger than the limit")) {
        return 0;
    }
    return (uint32_t)n;
}

wire_status_t
wire_read_binary_full(struct wire_reader *r, const uint8_t **data,
                      uint32_t *len)
{
    uint32_t n;

    *data = NULL;
    *len = 0;
    n = wire_read_binary_len(r);
    if (r->status != WIRE_OK || !wire_check_room(r, n)) {
        return r->status;
    }
    *data = r->pos;
    *len = n;
    r->pos += n;
    return r->status;
}

static wire_status_t
wire_read_seq_begin(struct wire_reader *r, uint8_t *elem_type, uint32_t *count)
{
    int64_t n;
    uint8_t t;

    *elem_type = WIRE_T_STOP;
    *count = 0;
    if (r->proto == WIRE_COMPACT) {
        uint8_t b;

        if (!wire_need(r, 1)) {
            return r->status;
        }
        b = *r->pos++;
        t = wire_ctype_to_ttype[b & 0x0f];
        n = b >> 4;
        if (n == 15) {
            n = wire_read_compact_size(r);
        }
    } else {
        if (!wire_need(r, 5)) {
            return r->status;
        }
        t = r->pos[0];
        n = (int32_t)wire_be32(r->pos + 1);
        r->pos += 5;
    }
    if (r->status != WIRE_OK) {
        return r->status;
    }
    if (!wire_type_valid(t)) {
        return wire_reader_fail(r, "invalid element type");
    }
    if (!wire_enter_container(r, n, 1)) {
        return r->status;
    }
    *elem_type = t;
    *count = (uint32_t)n;
    return r->status;
}

wire_status_t
wire_read_list_begin(struct wire_reader *r, uint8_t *elem_type,
                     uint32_t *count)
{
    return wire_read_seq_begin(r, elem_type, count);
}

wire_status_t
wire_read_set_begin(struct wire_reader *r, uint8_t *elem_type, uint32_t *count)
{
    return wire_read_seq_begin(r, elem_type, count);
}

wire_status_t
wire_read_map_begin(struct wire_reader *r, uint8_t *key_type,
                    uint8_t *val_type, uint32_t *count)
{
    int64_t n;
    uint8_t kt = WIRE_T_STOP, vt = WIRE_T_STOP;

    *key_type = WIRE_T_STOP;
    *val_type = WIRE_T_STOP;
    *count = 0;
    if (r->proto == WIRE_COMPACT) {
        n = wire_read_compact_size(r);
        if (n != 0 && wire_need(r, 1)) {
            uint8_t b = *r->pos++;

            kt = wire_ctype_to_ttype[b >> 4];
            vt = wire_ctype_to_ttype[b & 0x0f];
        }
    } else {
        if (!wire_need(r, 6)) {
            return r->status;
        }
        kt = r->pos[0];
        vt = r->pos[1];
        n = (int32_t)wire_be32(r->pos + 2);
        r->pos += 6;
    }
    if (r->status != WIRE_OK) {
        return r->status;
    }
    if (n != 0 && (!wire_type_valid(kt) || !wire_type_valid(vt))) {
        return wire_reader_fail(r, "invalid map key or value type");
    }
    if (!wire_enter_container(r, n, 2)) {
        return r->status;
    }
    *key_type = kt;
    *val_type = vt;
    *count = (uint32_t)n;
    return r->status;
}

wire_status_t
wire_skip(struct wire_reader *r, uint8_t type)
{
    const uint8_t *data;
    uint32_t len, count, i;
    uint8_t et, kt, vt;
    int16_t fid;

    if (r->status != WIRE_OK) {
        return r->status;
    }
    switch (type) {
    /* scalars are read and dropped: their checks are the reading's */
    case WIRE_T_BOOL: wire_read_bool(r); break;
    case WIRE_T_BYTE: wire_read_byte(r); break;
    case WIRE_T_I16: wire_read_i16(r); break;
    case WIRE_T_I32: wire_read_i32(r); break;
    case WIRE_T_I64: wire_read_i64(r); break;
    case WIRE_T_DOUBLE: wire_read_double(r); break;
    case WIRE_T_STRING: wire_read_binary(r, &data, &len); break;
    case WIRE_T_STRUCT:
        if (wire_read_struct_begin(r) != WIRE_OK) {
            break;
        }
        for (;;) {
            if (wire_read_field(r, &et, &fid) != WIRE_OK ||
                et == WIRE_T_STOP) {
                break;
            }
            if (wire_skip(r, et) != WIRE_OK) {
                break;
            }
        }
        wire_read_struct_end(r);
        break;
    case WIRE_T_LIST:
    case WIRE_T_SET:
        if (wire_read_seq_begin(r, &et, &count) != WIRE_OK) {
            break;
        }
        for (i = 0; i < count && r->status == WIRE_OK; i++) {
            wire_skip(r, et);
        }
        wire_read_container_end(r);
        break;
    case WIRE_T_MAP:
        if (wire_read_map_begin(r, &kt, &vt, &count) != WIRE_OK) {
            break;
        }
        for (i = 0; i < count && r->status == WIRE_OK; i++) {
            wire_skip(r, kt);
            wire_skip(r, vt);
        }
        wire_read_container_end(r);
        break;
    default: wire_reader_fail(r, "invalid type"); break;
    }
    return r->status;
}

/* ---- whole messages ---------------------------------------------------- */

wire_status_t
wire_message_scan(wire_proto_t proto, gboolean framed, const uint8_t *buf,
                  size_t len, const struct wire_limits *limits,
                  size_t *msg_len, const char **why)
{
    struct wire_reader r;
    struct wire_msg m;
    size_t hdr = 0, body = len;

    if (limits == NULL) {
        limits = &wire_default_limits;
    }
    *msg_len = 0;
    *why = NULL;
    if (framed) {
        int32_t flen;

        if (len < 4) {
            return WIRE_AGAIN;
        }
        flen = (int32_t)wire_be32(buf);
        if (flen <= 0) {
            *why = "invalid frame size";
            return WIRE_ERROR;
        }
        if ((uint32_t)flen > limits->max_message) {
            *why = "frame larger than the maximum size";
            return WIRE_ERROR;
        }
        if (len - 4 < (size_t)flen) {
            return WIRE_AGAIN;
        }
        hdr = 4;
        body = (size_t)flen;
    }
    wire_reader_init(&r, proto, buf + hdr, body, framed, limits);
    if (wire_read_msg_begin(&r, &m) == WIRE_OK) {
        wire_skip(&r, WIRE_T_STRUCT);
    }
    if (r.status == WIRE_OK) {
        *msg_len = hdr + (framed ? body : wire_reader_offset(&r));
    } else if (r.status == WIRE_ERROR) {
        *why = r.error;
    }
    return r.status;
}

/* ---- messages as they arrive ------------------------------------------- */

void
wire_scan_init(struct wire_scan *s)
{
    s->pos = 0;
    s->skip = 0;
    s->depth = 0;
    s->next = WIRE_T_STOP;
    s->bool_in_header = FALSE;
    s->mark_first = FALSE;
    s->marks = NULL;
}

void
wire_scan_mark(struct wire_scan *s, struct wire_buf *marks)
{
    g_assert(!wire_scan_started(s));
    s->marks = marks;
    if (marks != NULL) {
        wire_buf_clear(marks);
    }
}

/* Marks an element, or the end of its list, at s->pos; left: the
 * elements after it. */
static void
wire_scan_mark_at(struct wire_scan *s, gboolean element, uint32_t left)
{
    struct wire_scan_mark m = {
        .at = (uint32_t)s->pos,
        .type = WIRE_T_STOP,
    };

    /* as many bytes as the message at most: a row is larger than its
     * mark, only a list of empty structs is not (and is walked) */
    if (s->marks->len + sizeof(m) > MAX(s->pos, 4096)) {
        wire_buf_clear(s->marks);
        s->marks = NULL;
        s->mark_first = FALSE;
        return;
    }
    if (s->marks->len == 0) {
        /* room for the list's at once, as the rows of a fetch are */
        wire_buf_reserve(s->marks,
                         MIN(((size_t)left + 2) * sizeof(m), 64u << 10));
    }
    *(struct wire_scan_mark *)wire_buf_reserve(s->marks, sizeof(m)) = m;
    s->marks->len += sizeof(m);
    s->mark_first = element;
}

/* The marked element's first field header was just read. */
static void
wire_scan_mark_field(struct wire_scan *s, uint8_t type, int16_t fid)
{
    struct wire_scan_mark *m = (struct wire_scan_mark *)(s->marks->data +
                                                         s->marks->len) -
                               1;

    m->first = (uint32_t)s->pos;
    m->fid = fid;
    m->type = type;
    s->mark_first = FALSE;
}

/*
 * Takes the value s->next at r: a scalar whole, or the head of a string
 * or of a nested struct or container (pushed as a frame).  Each head is
 * read by the reader's own function, so its checks come in the order
 * wire_skip meets them: the head's bytes, its types, its size, and the
 * nesting last.  A container deeper than the limit whose head has not
 * all arrived is thus AGAIN here as it is for wire_message_scan, not an
 * error that would depend on where TCP cut the bytes.  The head goes to
 * locals first: the frame it takes, frame[depth + 1], exists only once
 * the reader has passed the depth.
 */
static void
wire_scan_value(struct wire_scan *s, struct wire_reader *r)
{
    struct wire_scan_frame *f;
    uint8_t kind, elem = WIRE_T_STOP, key = WIRE_T_STOP, val = WIRE_T_STOP;
    uint32_t count = 0;

    switch (s->next) {
    case WIRE_T_STRING: s->skip = wire_read_binary_len(r); return;
    case WIRE_T_STRUCT:
        if (wire_read_struct_begin(r) != WIRE_OK) {
            return;
        }
        kind = WIRE_T_STRUCT;
        break;
    case WIRE_T_LIST:
    case WIRE_T_SET:
        if (wire_read_seq_begin(r, &elem, &count) != WIRE_OK) {
            return;
        }
        kind = WIRE_T_LIST;
        break;
    case WIRE_T_MAP:
        if (wire_read_map_begin(r, &key, &val, &count) != WIRE_OK) {
            return;
        }
        kind = WIRE_T_MAP;
        count *= 2; /* keys and values apart; count <= INT32_MAX */
        break;
    default:
        /* a compact struct's bool came with its field header */
        if (!(s->next == WIRE_T_BOOL && s->bool_in_header)) {
            wire_skip(r, s->next);
        }
        return;
    }
    /* r->depth was s->depth, and wire_enter let it grow only below
     * WIRE_MAX_DEPTH */
    s->depth = r->depth;
    f = &s->frame[s->depth];
    f->kind = kind;
    f->elem = elem;
    f->key = key;
    f->val = val;
    f->left = count;
    f->last_fid = 0;
}

/*
 * A marked element, at r, walked at once when all of it has arrived: a
 * row is then read as wire_skip reads it, item after item without
 * keeping a place between them, which costs a fraction of taking each
 * item as a step of the scan.  Its verdict is the scan's: the same
 * reader functions meet the same checks in the same order.  FALSE when
 * the element goes on past what has arrived: r and the mark are as
 * they were, and the scan takes it a step at a time.
 */
static gboolean
wire_scan_element(struct wire_scan *s, struct wire_reader *r)
{
    uint8_t type = WIRE_T_STOP;
    int16_t fid;
    gboolean first = TRUE;

    if (wire_read_struct_begin(r) == WIRE_OK) {
        while (wire_read_field(r, &type, &fid) == WIRE_OK) {
            if (first) {
                s->pos = wire_reader_offset(r);
                wire_scan_mark_field(s, type, fid);
                first = FALSE;
            }
            if (type == WIRE_T_STOP || wire_skip(r, type) != WIRE_OK) {
                break;
            }
        }
        if (r->status == WIRE_OK) {
            wire_read_struct_end(r);
            s->pos = wire_reader_offset(r);
            return TRUE;
        }
    }
    if (r->status == WIRE_ERROR) {
        return TRUE;
    }
    /* not all here: back to the element's first byte */
    r->status = WIRE_OK;
    r->error = NULL;
    s->mark_first = TRUE;
    return FALSE;
}

wire_status_t
wire_scan_feed(struct wire_scan *s, wire_proto_t proto, const uint8_t *buf,
               size_t len, const struct wire_limits *limits, size_t *msg_len,
               const char **why)
{
    struct wire_reader r;

    *msg_len = 0;
    *why = NULL;
    /* a reader over the whole message so far, so that its limits count
     * from the first byte; each item starts it at the scan's place */
    wire_reader_init(&r, proto, buf, len, FALSE, limits);
    if (s->pos > len) {
        wire_reader_fail(&r, "message shorter than already scanned");
    }
    while (r.status == WIRE_OK) {
        struct wire_scan_frame *top;

        if (s->skip > 0) {
            size_t n = MIN(s->skip, len - s->pos);

            s->pos += n;
            s->skip -= n;
            if (s->skip > 0) {
                /* what wire_read_binary says of a string cut short */
                r.pos = buf + s->pos;
                wire_check_room(&r, s->skip);
                break;
            }
        }
        r.pos = buf + s->pos;
        r.depth = s->depth;
        r.bool_pending = -1;
        if (s->depth == 0) {
            struct wire_msg m;

            /* the header, then the argument or result struct */
            if (wire_read_msg_begin(&r, &m) != WIRE_OK ||
                wire_read_struct_begin(&r) != WIRE_OK) {
                break;
            }
            s->frame[1].kind = WIRE_T_STRUCT;
            s->frame[1].last_fid = 0;
            s->depth = 1;
            s->pos = wire_reader_offset(&r);
            continue;
        }
        top = &s->frame[s->depth];
        r.last_fid[s->depth] = top->last_fid;
        if (s->next != WIRE_T_STOP) {
            wire_scan_value(s, &r);
            if (r.status == WIRE_OK) {
                s->next = WIRE_T_STOP;
                s->pos = wire_reader_offset(&r);
            }
            continue;
        }
        if (top->kind == WIRE_T_STRUCT) {
            uint8_t type;
            int16_t fid;

            if (wire_read_field(&r, &type, &fid) != WIRE_OK) {
                break;
            }
            s->pos = wire_reader_offset(&r);
            top->last_fid = r.last_fid[s->depth];
            if (s->mark_first) {
                wire_scan_mark_field(s, type, fid);
            }
            if (type == WIRE_T_STOP) {
                if (--s->depth == 0) {
                    *msg_len = s->pos;
                    return WIRE_OK;
                }
                continue;
            }
            s->next = type;
            s->bool_in_header = proto == WIRE_COMPACT && type == WIRE_T_BOOL;
            continue;
        }
        /* the result struct's list of structs: a fetch's rows */
        if (s->marks != NULL && s->depth == 2 && top->kind == WIRE_T_LIST &&
            top->elem == WIRE_T_STRUCT) {
            size_t at = s->pos;

            wire_scan_mark_at(s, top->left > 0, top->left);
            if (top->left > 0 && s->marks != NULL &&
                wire_scan_element(s, &r)) {
                /* whole (or wrong: r says why) */
                top->left--;
                continue;
            }
            s->pos = at;
        }
        if (top->left == 0) {
            s->depth--;
            continue;
        }
        top->left--;
        s->next = top->kind == WIRE_T_LIST
                      ? top->elem
                      : (top->left % 2 == 1 ? top->key : top->val);
        s->bool_in_header = FALSE;
    }
    if (r.status == WIRE_ERROR) {
        *why = r.error;
    }
    return r.status;
}

wire_status_t
wire_detect(const uint8_t *buf, size_t len, wire_proto_t *proto,
            gboolean *framed, const char **why)
{
    uint8_t b4;

    *why = NULL;
    if (len < 1) {
        return WIRE_AGAIN;
    }
    if (buf[0] == 0x80) {
        *proto = WIRE_BINARY;
        *framed = FALSE;
        return WIRE_OK;
    }
    if (buf[0] == 0x82) {
        *proto = WIRE_COMPACT;
        *framed = FALSE;
        return WIRE_OK;
    }
    if (buf[0] != 0x00) {
        /* a frame over 16 MiB or a name longer than that: not Thrift */
        *why = "not a Thrift message";
        return WIRE_ERROR;
    }
    if (len < 5) {
        return WIRE_AGAIN;
    }
    b4 = buf[4];
    if (b4 == 0x80) {
        *proto = WIRE_BINARY;
        *framed = TRUE;
    } else if (b4 == 0x82) {
        *proto = WIRE_COMPACT;
        *framed = TRUE;
    } else if (b4 == 0x00) {
        /* a frame holding a non-strict binary message */
        *proto = WIRE_BINARY;
        *framed = TRUE;
    } else if (g_ascii_isalpha(b4) || b4 == '_') {
        /* a non-strict binary header: name length, then the name */
        *proto = WIRE_BINARY;
        *framed = FALSE;
    } else {
        *why = "not a Thrift message";
        return WIRE_ERROR;
    }
    return WIRE_OK;
}

/* ---- output buffer ------------------------------------------------------ */

void
wire_buf_init(struct wire_buf *b)
{
    b->data = NULL;
    b->len = 0;
    b->cap = 0;
}

void
wire_buf_clear(struct wire_buf *b)
{
    b->len = 0;
}

void
wire_buf_free(struct wire_buf *b)
{
    g_free(b->data);
    wire_buf_init(b);
}

uint8_t *
wire_buf_grow(struct wire_buf *b, size_t n)
{
    size_t cap = b->cap != 0 ? b->cap : 256;

    while (cap - b->len < n) {
        cap *= 2;
    }
    b->data = g_realloc(b->data, cap);
    b->cap = cap;
    return b->data + b->len;
}

/* ---- writer ----------------------------------------------------------- */

void
wire_writer_init(struct wire_writer *w, wire_proto_t proto,
                 struct wire_buf *buf)
{
    w->buf = buf;
    w->proto = proto;
    w->depth = 0;
    w->last_fid[0] = 0;
    w->bool_fid = 0;
    w->bool_field_pending = FALSE;
}

static inline void
wire_put_u8(struct wire_writer *w, uint8_t v)
{
    uint8_t *p = wire_buf_reserve(w->buf, 1);

    *p = v;
    w->buf->len++;
}

/* v's low n bytes at p, big-endian. */
static inline void
wire_store_be(uint8_t *p, uint64_t v, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        p[i] = (uint8_t)(v >> (8 * (n - 1 - i)));
    }
}

static inline void
wire_put_be(struct wire_writer *w, uint64_t v, size_t n)
{
    wire_store_be(wire_buf_reserve(w->buf, n), v, n);
    w->buf->len += n;
}

/* v as a varint at p: 5 bytes at most for a uint32, 10 for a uint64.
 * Returns the bytes written. */
static size_t
wire_store_varint(uint8_t *p, uint64_t v)
{
    size_t n = 0;

    while (v >= 0x80) {
        p[n++] = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    p[n++] = (uint8_t)v;
    return n;
}

static void
wire_put_varint(struct wire_writer *w, uint64_t v)
{
    w->buf->len += wire_store_varint(wire_buf_reserve(w->buf, 10), v);
}

static inline uint64_t
wire_zigzag(int64_t v)
{
    return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);
}

void
wire_write_msg_begin(struct wire_writer *w, const uint8_t *name,
                     uint32_t name_len, uint8_t type, int32_t seqid)
{
    if (w->proto == WIRE_BINARY) {
        /* version and type, name, sequence id: one reserve for all */
        uint8_t *p = wire_buf_reserve(w->buf, (size_t)12 + name_len);

        wire_store_be(p, 0x80010000u | type, 4);
        wire_store_be(p + 4, name_len, 4);
        if (name_len > 0) {
            memcpy(p + 8, name, name_len);
        }
        wire_store_be(p + 8 + name_len, (uint32_t)seqid, 4);
        w->buf->len += (size_t)12 + name_len;
    } else {
        wire_put_u8(w, 0x82);
        wire_put_u8(w, (uint8_t)(1 | (type << 5)));
        wire_put_varint(w, (uint32_t)seqid);
        wire_put_varint(w, name_len);
        wire_buf_append(w->buf, name, name_len);
    }
}

/* One level deeper (WIRE_MAX_DEPTH at most), its field ids counted from
 * 0. */
static void
wire_writer_enter(struct wire_writer *w)
{
    if (w->depth < WIRE_MAX_DEPTH) {
        w->depth++;
    }
    w->last_fid[w->depth] = 0;
}

void
wire_write_struct_begin(struct wire_writer *w)
{
    wire_writer_enter(w);
}

void
wire_write_struct_end(struct wire_writer *w)
{
    wire_put_u8(w, WIRE_T_STOP);
    if (w->depth > 0) {
        w->depth--;
    }
}

static void
wire_write_field_header(struct wire_writer *w, uint8_t ctype, int16_t fid)
{
    int16_t last = w->last_fid[w->depth];

    if (fid > last && fid - last <= 15) {
        wire_put_u8(w, (uint8_t)(((fid - last) << 4) | ctype));
    } else {
        wire_put_u8(w, ctype);
        wire_put_varint(w, wire_zigzag(fid));
    }
    w->last_fid[w->depth] = fid;
}

void
wire_write_field(struct wire_writer *w, uint8_t type, int16_t fid)
{
    if (w->proto == WIRE_BINARY) {
        uint8_t *p = wire_buf_reserve(w->buf, 3);

        p[0] = type;
        p[1] = (uint8_t)((uint16_t)fid >> 8);
        p[2] = (uint8_t)fid;
        w->buf->len += 3;
        return;
    }
    if (type == WIRE_T_BOOL) {
        /* the value travels in the header: wait for wire_write_bool */
        w->bool_field_pending = TRUE;
        w->bool_fid = fid;
        return;
    }
    wire_write_field_header(w, wire_ttype_to_ctype(type), fid);
}

void
wire_write_bool(struct wire_writer *w, gboolean v)
{
    if (w->proto == WIRE_BINARY) {
        wire_put_u8(w, v ? 1 : 0);
    } else if (w->bool_field_pending) {
        w->bool_field_pending = FALSE;
        wire_write_field_header(w, v ? CT_TRUE : CT_FALSE, w->bool_fid);
    } else {
        wire_put_u8(w, v ? CT_TRUE : CT_FALSE);
    }
}

void
wire_write_byte(struct wire_writer *w, int8_t v)
{
    wire_put_u8(w, (uint8_t)v);
}

/* An integer of n bytes: a zigzag varint in compact, n bytes big-endian
 * in binary. */
static void
wire_write_int(struct wire_writer *w, int64_t v, size_t n)
{
    if (w->proto == WIRE_COMPACT) {
        wire_put_varint(w, wire_zigzag(v));
    } else {
        wire_put_be(w, (uint64_t)v, n);
    }
}

void
wire_write_i16(struct wire_writer *w, int16_t v)
{
    wire_write_int(w, v, 2);
}

void
wire_write_i32(struct wire_writer *w, int32_t v)
{
    wire_write_int(w, v, 4);
}

void
wire_write_i64(struct wire_writer *w, int64_t v)
{
    wire_write_int(w, v, 8);
}

void
wire_write_double(struct wire_writer *w, double v)
{
    uint64_t bits;
    uint8_t *p = wire_buf_reserve(w->buf, 8);

    memcpy(&bits, &v, sizeof(bits));
    for (int i = 0; i < 8; i++) {
        int shift = w->proto == WIRE_COMPACT ? 8 * i : 8 * (7 - i);

        p[i] = (uint8_t)(bits >> shift);
    }
    w->buf->len += 8;
}

void
wire_write_binary3(struct wire_writer *w, const void *a, uint32_t alen,
                   const void *b, uint32_t blen, const void *c, uint32_t clen)
{
    uint32_t len = alen + blen + clen;
    /* room for all of it at once: a length (varint or i32) and the parts */
    uint8_t *p = wire_buf_reserve(w->buf, (size_t)5 + len);
    uint8_t *q = p;

    if (w->proto == WIRE_COMPACT) {
        q += wire_store_varint(q, len);
    } else {
        wire_store_be(q, len, 4);
        q += 4;
    }
    if (alen > 0) {
        memcpy(q, a, alen);
        q += alen;
    }
    if (blen > 0) {
        memcpy(q, b, blen);
        q += blen;
    }
    if (clen > 0) {
        memcpy(q, c, clen);
        q += clen;
    }
    w->buf->len += (size_t)(q - p);
}

void
wire_write_binary2(struct wire_writer *w, const void *a, uint32_t alen,
                   const void *b, uint32_t blen)
{
    wire_write_binary3(w, a, alen, b, blen, NULL, 0);
}

void
wire_write_binary(struct wire_writer *w, const void *data, uint32_t len)
{
    wire_write_binary2(w, data, len, NULL, 0);
}

size_t
wire_seq_header(wire_proto_t proto, uint8_t elem_type, uint32_t count,
                uint8_t out[WIRE_SEQ_HEADER_MAX])
{
    size_t n = 0;

    if (proto == WIRE_COMPACT) {
        uint8_t ct = wire_ttype_to_ctype(elem_type);

        if (count < 15) {
            out[n++] = (uint8_t)((count << 4) | ct);
            return n;
        }
        out[n++] = (uint8_t)(0xf0 | ct);
        return n + wire_store_varint(out + n, count);
    }
    out[n++] = elem_type;
    wire_store_be(out + n, count, 4);
    return n + 4;
}

static void
wire_write_seq_begin(struct wire_writer *w, uint8_t elem_type, uint32_t count)
{
    uint8_t hdr[WIRE_SEQ_HEADER_MAX];
    size_t n = wire_seq_header(w->proto, elem_type, count, hdr);

    wire_buf_append(w->buf, hdr, n);
    wire_writer_enter(w);
}

void
wire_write_list_begin(struct wire_writer *w, uint8_t elem_type, uint32_t count)
{
    wire_write_seq_begin(w, elem_type, count);
}

void
wire_write_set_begin(struct wire_writer *w, uint8_t elem_type, uint32_t count)
{
    wire_write_seq_begin(w, elem_type, count);
}

void
wire_write_map_begin(struct wire_writer *w, uint8_t key_type, uint8_t val_type,
                     uint32_t count)
{
    if (w->proto == WIRE_COMPACT) {
        wire_put_varint(w, count);
        if (count != 0) {
            wire_put_u8(w, (uint8_t)((wire_ttype_to_ctype(key_type) << 4) |
                                     wire_ttype_to_ctype(val_type)));
        }
    } else {
        wire_put_u8(w, key_type);
        wire_put_u8(w, val_type);
        wire_put_be(w, count, 4);
    }
    wire_writer_enter(w);
}

void
wire_write_container_end(struct wire_writer *w)
{
    if (w->depth > 0) {
        w->depth--;
    }
}

wire_status_t
wire_copy(struct wire_reader *r, struct wire_writer *w, uint8_t type)
{
    const uint8_t *data, *from;
    uint32_t len, count, i;
    uint8_t et, kt, vt;
    int16_t fid;

    if (r->status != WIRE_OK) {
        return r->status;
    }
    if (type == WIRE_T_BOOL) {
        /* a compact bool field lives in its header: never a byte copy */
        wire_write_bool(w, wire_read_bool(r));
        return r->status;
    }
    if (r->proto == w->proto) {
        from = r->pos;
        if (wire_skip(r, type) == WIRE_OK) {
            wire_buf_append(w->buf, from, (size_t)(r->pos - from));
        }
        return r->status;
    }
    switch (type) {
    case WIRE_T_BYTE: wire_write_byte(w, wire_read_byte(r)); break;
    case WIRE_T_I16: wire_write_i16(w, wire_read_i16(r)); break;
    case WIRE_T_I32: wire_write_i32(w, wire_read_i32(r)); break;
    case WIRE_T_I64: wire_write_i64(w, wire_read_i64(r)); break;
    case WIRE_T_DOUBLE: wire_write_double(w, wire_read_double(r)); break;
    case WIRE_T_STRING:
        if (wire_read_binary(r, &data, &len) == WIRE_OK) {
            wire_write_binary(w, data, len);
        }
        break;
    case WIRE_T_STRUCT:
        if (wire_read_struct_begin(r) != WIRE_OK) {
            break;
        }
        wire_write_struct_begin(w);
        for (;;) {
            if (wire_read_field(r, &et, &fid) != WIRE_OK ||
                et == WIRE_T_STOP) {
                break;
            }
            wire_write_field(w, et, fid);
            if (wire_copy(r, w, et) != WIRE_OK) {
                break;
            }
        }
        wire_read_struct_end(r);
        wire_write_struct_end(w);
        break;
    case WIRE_T_LIST:
    case WIRE_T_SET:
        if (wire_read_seq_begin(r, &et, &count) != WIRE_OK) {
            break;
        }
        wire_write_seq_begin(w, et, count);
        for (i = 0; i < count && r->status == WIRE_OK; i++) {
            wire_copy(r, w, et);
        }
        wire_read_container_end(r);
        wire_write_container_end(w);
        break;
    case WIRE_T_MAP:
        if (wire_read_map_begin(r, &kt, &vt, &count) != WIRE_OK) {
            break;
        }
        wire_write_map_begin(w, kt, vt, count);
        for (i = 0; i < count && r->status == WIRE_OK; i++) {
            wire_copy(r, w, kt);
            wire_copy(r, w, vt);
        }
        wire_read_container_end(r);
        wire_write_container_end(w);
        break;
    default: wire_reader_fail(r, "invalid type"); break;
    }
    return r->status;
}

wire_status_t
wire_copy_field(struct wire_reader *r, struct wire_writer *w,
                const uint8_t *at, uint8_t type, int16_t fid)
{
    if (r->proto == WIRE_BINARY && w->proto == WIRE_BINARY &&
        type != WIRE_T_BOOL) {
        if (wire_skip(r, type) == WIRE_OK) {
            wire_buf_append(w->buf, at, (size_t)(r->pos - at));
        }
        return r->status;
    }
    wire_write_field(w, type, fid);
    return wire_copy(r, w, type);
}

void
wire_write_app_exception(struct wire_writer *w, const uint8_t *name,
                         uint32_t name_len, int32_t seqid, int32_t type,
                         const char *message)
{
    wire_write_msg_begin(w, name, name_len, WIRE_EXCEPTION, seqid);
    wire_write_struct_begin(w);
    wire_write_field(w, WIRE_T_STRING, 1);
    wire_write_binary(w, message, (uint32_t)strlen(message));
    wire_write_field(w, WIRE_T_I32, 2);
    wire_write_i32(w, type);
    wire_write_struct_end(w);
}

size_t
wire_frame_begin(struct wire_buf *b)
{
    size_t off = b->len;

    wire_buf_reserve(b, 4);
    b->len += 4;
    return off;
}

void
wire_frame_end(struct wire_buf *b, size_t offset)
{
    wire_store_be(b->data + offset, (uint32_t)(b->len - offset - 4), 4);
}
