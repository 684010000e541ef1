/* wire.h: bounds-checked reader and writer for Thrift binary and compact. */
#pragma once

#include <glib.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* Wire protocol of one side of a connection. */
typedef enum {
    WIRE_BINARY = 0,
    WIRE_COMPACT = 1,
} wire_proto_t;

/* Thrift type ids as the binary protocol writes them. */
enum wire_type {
    WIRE_T_STOP = 0,
    WIRE_T_BOOL = 2,
    WIRE_T_BYTE = 3,
    WIRE_T_DOUBLE = 4,
    WIRE_T_I16 = 6,
    WIRE_T_I32 = 8,
    WIRE_T_I64 = 10,
    WIRE_T_STRING = 11,
    WIRE_T_STRUCT = 12,
    WIRE_T_MAP = 13,
    WIRE_T_SET = 14,
    WIRE_T_LIST = 15,
};

enum wire_msg_type {
    WIRE_CALL = 1,
    WIRE_REPLY = 2,
    WIRE_EXCEPTION = 3,
    WIRE_ONEWAY = 4,
};

/* TApplicationException types. */
enum wire_app_error {
    WIRE_APP_UNKNOWN = 0,
    WIRE_APP_UNKNOWN_METHOD = 1,
    WIRE_APP_INVALID_MESSAGE_TYPE = 2,
    WIRE_APP_WRONG_METHOD_NAME = 3,
    WIRE_APP_BAD_SEQUENCE_ID = 4,
    WIRE_APP_MISSING_RESULT = 5,
    WIRE_APP_INTERNAL_ERROR = 6,
    WIRE_APP_PROTOCOL_ERROR = 7,
};

typedef enum {
    WIRE_OK = 0,
    WIRE_AGAIN = 1, /* the input ends before the item does: need more bytes */
    WIRE_ERROR = 2, /* malformed input, or over a limit */
} wire_status_t;

#define WIRE_MAX_DEPTH 64
#define WIRE_MAX_NAME 256 /* method names are short identifiers */

/* Limits applied to everything read; a value over a limit is an error. */
struct wire_limits {
    uint32_t max_message;   /* one whole message (or frame), bytes */
    uint32_t max_string;    /* one string or binary, bytes */
    uint32_t max_container; /* elements of one list, set or map */
    uint32_t max_depth;     /* nesting of structs and containers (<= 64) */
};

extern const struct wire_limits wire_default_limits;

/*
 * A reader over bytes in memory.  Every read checks the bytes left and the
 * limits first.  Status is sticky: after the first AGAIN or ERROR every
 * further read returns the same status and zero values, so a caller may
 * read a run of fields and check once.  When 'complete' is set the bytes
 * are a whole message, so running out is an ERROR ("truncated"), not AGAIN.
 */
struct wire_reader {
    const uint8_t *start; /* first byte of the input */
    const uint8_t *pos;   /* next byte to read */
    const uint8_t *end;   /* one past the last byte */
    const struct wire_limits *limits;
    wire_proto_t proto;
    wire_status_t status; /* sticky */
    const char *error;    /* static text when status is ERROR */
    gboolean complete;    /* running out of bytes is an error */
    uint32_t depth;       /* current nesting */
    int16_t last_fid[WIRE_MAX_DEPTH + 1]; /* compact: field id per level */
    int bool_pending; /* compact: bool held in field header */
};

/* A message header as read. */
struct wire_msg {
    const uint8_t *name; /* method name, not NUL-terminated */
    uint32_t name_len;
    uint8_t type; /* enum wire_msg_type */
    int32_t seqid;
    gboolean strict; /* binary: versioned header */
};

void wire_reader_init(struct wire_reader *r, wire_proto_t proto,
                      const uint8_t *buf, size_t len, gboolean complete,
                      const struct wire_limits *limits);
size_t wire_reader_offset(const struct wire_reader *r);

wire_status_t wire_read_msg_begin(struct wire_reader *r, struct wire_msg *m);
wire_status_t wire_read_struct_begin_full(struct wire_reader *r);

/* One level deeper; a walk enters a handful of structs per call: the
 * common case (a reader still OK, below the depth cap) is inline, the
 * rest (failures and their texts) in wire_read_struct_begin_full. */
static inline wire_status_t
wire_read_struct_begin(struct wire_reader *r)
{
    if (r->status == WIRE_OK && r->depth < r->limits->max_depth &&
        r->depth < WIRE_MAX_DEPTH) {
        r->depth++;
        r->last_fid[r->depth] = 0;
        return WIRE_OK;
    }
    return wire_read_struct_begin_full(r);
}
/* The types a field, element, key or value may have, as bits. */
#define WIRE_TYPES_VALID                                                      \
    ((1u << WIRE_T_BOOL) | (1u << WIRE_T_BYTE) | (1u << WIRE_T_DOUBLE) |      \
     (1u << WIRE_T_I16) | (1u << WIRE_T_I32) | (1u << WIRE_T_I64) |           \
     (1u << WIRE_T_STRING) | (1u << WIRE_T_STRUCT) | (1u << WIRE_T_MAP) |     \
     (1u << WIRE_T_SET) | (1u << WIRE_T_LIST))

static inline gboolean
wire_type_valid(uint8_t t)
{
    return t < 32 && (WIRE_TYPES_VALID & (1u << t)) != 0;
}

static inline uint32_t
wire_be32(const uint8_t *p)
{
    return ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) |
           ((uint32_t)p[2] << 8) | (uint32_t)p[3];
}

/* wire_read_field and wire_read_binary in full: every protocol, every
 * check, the failures' texts. */
wire_status_t wire_read_field_full(struct wire_reader *r, uint8_t *type,
                                   int16_t *fid);
wire_status_t wire_read_binary_full(struct wire_reader *r,
                                    const uint8_t **data, uint32_t *len);

/*
 * Next field header; *type == WIRE_T_STOP at the end of the struct.
 * A codec walk reads a dozen per call: a binary header that is whole and
 * valid is read inline, anything else (compact, short, invalid, a failed
 * reader) by wire_read_field_full, from the same place, so the result is
 * the same either way.
 */
static inline wire_status_t
wire_read_field(struct wire_reader *r, uint8_t *type, int16_t *fid)
{
    if (r->proto == WIRE_BINARY && r->status == WIRE_OK && r->pos < r->end) {
        uint8_t t = r->pos[0];

        if (t == WIRE_T_STOP) {
            *type = WIRE_T_STOP;
            *fid = 0;
            r->pos++;
            return WIRE_OK;
        }
        if (r->end - r->pos >= 3 && wire_type_valid(t)) {
            *type = t;
            *fid = (int16_t)(((uint16_t)r->pos[1] << 8) | r->pos[2]);
            r->pos += 3;
            return WIRE_OK;
        }
    }
    return wire_read_field_full(r, type, fid);
}
gboolean wire_read_bool(struct wire_reader *r);
int8_t wire_read_byte(struct wire_reader *r);
int16_t wire_read_i16(struct wire_reader *r);
int32_t wire_read_i32(struct wire_reader *r);
int64_t wire_read_i64(struct wire_reader *r);
double wire_read_double(struct wire_reader *r);
/* A string or binary: points into the input, not copied.  As for
 * wire_read_field, a binary string within the limit and the bytes at
 * hand is read inline, anything else by wire_read_binary_full. */
static inline wire_status_t
wire_read_binary(struct wire_reader *r, const uint8_t **data, uint32_t *len)
{
    if (r->proto == WIRE_BINARY && r->status == WIRE_OK &&
        r->end - r->pos >= 4) {
        int32_t n = (int32_t)wire_be32(r->pos);

        if (n >= 0 && (uint32_t)n <= r->limits->max_string &&
            (size_t)(r->end - r->pos) - 4 >= (uint32_t)n) {
            *data = r->pos + 4;
            *len = (uint32_t)n;
            r->pos += 4 + (uint32_t)n;
            return WIRE_OK;
        }
    }
    return wire_read_binary_full(r, data, len);
}
wire_status_t wire_read_list_begin(struct wire_reader *r, uint8_t *elem_type,
                                   uint32_t *count);
wire_status_t wire_read_set_begin(struct wire_reader *r, uint8_t *elem_type,
                                  uint32_t *count);
wire_status_t wire_read_map_begin(struct wire_reader *r, uint8_t *key_type,
                                  uint8_t *val_type, uint32_t *count);
/* Ends a struct, list, set or map (depth bookkeeping). */
static inline wire_status_t
wire_read_container_end(struct wire_reader *r)
{
    if (r->status == WIRE_OK && r->depth > 0) {
        r->depth--;
    }
    return r->status;
}

static inline wire_status_t
wire_read_struct_end(struct wire_reader *r)
{
    return wire_read_container_end(r);
}
/* Skips one value of the given type, with the depth cap. */
wire_status_t wire_skip(struct wire_reader *r, uint8_t type);
/* Marks the reader failed with a static message; returns WIRE_ERROR. */
wire_status_t wire_reader_fail(struct wire_reader *r, const char *why);

/*
 * Finds the end of one whole message at the start of buf: for framed
 * transport the 4-byte length and its frame, else the header and one
 * argument struct.  *msg_len is the byte count including any frame
 * header.  Returns AGAIN when more bytes are needed, ERROR (with *why)
 * when the bytes cannot start a valid message.
 */
wire_status_t wire_message_scan(wire_proto_t proto, gboolean framed,
                                const uint8_t *buf, size_t len,
                                const struct wire_limits *limits,
                                size_t *msg_len, const char **why);

/*
 * Finds the end of an unframed message as its bytes arrive, walking each
 * byte once however they are cut: it keeps its place (how far it got, the
 * nesting, what comes next, the rest of a string to pass) between calls,
 * where wire_message_scan starts again from the first byte.  Feed it the
 * message from its first byte, as much as has arrived; each call resumes
 * where the last one stopped.  Items are taken whole or not at all (a
 * string's bytes may come in pieces), so AGAIN leaves it consistent.
 * However the bytes are cut, its verdict is the one wire_message_scan
 * gives of them whole (status, length, error text): it reads each item
 * with the reader's own functions, whose checks come in one order
 * (bytes, types, sizes, nesting last).
 */
struct wire_scan_frame {
    uint8_t kind;           /* WIRE_T_STRUCT, _LIST (sets too), _MAP */
    uint8_t elem, key, val; /* element types of a container */
    uint32_t left;          /* container: items (keys and values
                                        apart for a map) still to come */
    int16_t last_fid;       /* compact: previous field id */
};

/*
 * Where one element of a list of structs in the result struct lies (a
 * fetch's rows), as the scan passed it, so that the scan engine reads a
 * row's key and bounds without walking the row again (scanbatch.h).
 * After the last element one more mark gives where the list ends.
 */
struct wire_scan_mark {
    uint32_t at;    /* the element's first byte, from the message's */
    uint32_t first; /* its first field's value, when type is not STOP */
    int16_t fid;    /* the first field's id and type; WIRE_T_STOP: */
    uint8_t type;   /* the element is empty (or the end mark) */
};

struct wire_scan {
    size_t pos;              /* bytes of the message walked */
    size_t skip;             /* bytes of a string still to pass */
    uint32_t depth;          /* frame[1..depth] in use; 0: header
                                        not read yet */
    uint8_t next;            /* type of the value that comes next,
                                        WIRE_T_STOP: none */
    gboolean bool_in_header; /* compact: next is a bool already
                                        read with its field header */
    gboolean mark_first;     /* the last mark waits for its element's
                                        first field */
    struct wire_buf *marks;  /* wire_scan_mark of this message, or
                                        NULL: none kept */
    struct wire_scan_frame frame[WIRE_MAX_DEPTH + 1];
};

/* Starts a scan, keeping no marks. */
void wire_scan_init(struct wire_scan *s);

/*
 * Has the scan, not started yet, mark the elements of a list of structs
 * in the result struct into marks (emptied first), or none if NULL.
 * The marks take at most as many bytes as the message: past that (a
 * list of near-empty structs) they are dropped, and marks left empty.
 */
void wire_scan_mark(struct wire_scan *s, struct wire_buf *marks);

/* Whether s has walked part of a message (a call may then resume it). */
static inline gboolean
wire_scan_started(const struct wire_scan *s)
{
    return s->depth > 0 || s->skip > 0;
}

/*
 * Walks on through buf[0..len), the message so far (len never less than
 * on the previous call).  OK: *msg_len is the length of the whole
 * message (the scan is then spent: init it again for the next one).
 * AGAIN: more bytes needed.  ERROR: *why says what is wrong.
 */
wire_status_t wire_scan_feed(struct wire_scan *s, wire_proto_t proto,
                             const uint8_t *buf, size_t len,
                             const struct wire_limits *limits, size_t *msg_len,
                             const char **why);

/*
 * Guesses the protocol and framing of a client from its first bytes.
 * AGAIN until enough bytes have arrived to tell; ERROR for bytes that
 * start no Thrift message.
 */
wire_status_t wire_detect(const uint8_t *buf, size_t len, wire_proto_t *proto,
                          gboolean *framed, const char **why);

/* A growable output buffer, reused across messages. */
struct wire_buf {
    uint8_t *data;
    size_t len;
    size_t cap;
};

void wire_buf_init(struct wire_buf *b);
void wire_buf_clear(struct wire_buf *b); /* len = 0, keeps memory */
void wire_buf_free(struct wire_buf *b);
/* Grows b to hold n more bytes: wire_buf_reserve's rare path. */
uint8_t *wire_buf_grow(struct wire_buf *b, size_t n);

/* Room for n more bytes at the end of b (not counted in len yet).  The
 * writer reserves per item, a score of times per call: the common case,
 * room left, is inline so that it costs a compare, not a call. */
static inline uint8_t *
wire_buf_reserve(struct wire_buf *b, size_t n)
{
    if (G_UNLIKELY(b->cap - b->len < n)) {
        return wire_buf_grow(b, n);
    }
    return b->data + b->len;
}

static inline void
wire_buf_append(struct wire_buf *b, const void *p, size_t n)
{
    if (n == 0) {
        return;
    }
    memcpy(wire_buf_reserve(b, n), p, n);
    b->len += n;
}

/* A writer appends one protocol's encoding to a wire_buf. */
struct wire_writer {
    struct wire_buf *buf;
    wire_proto_t proto;
    uint32_t depth;
    int16_t last_fid[WIRE_MAX_DEPTH + 1]; /* compact: field id per level */
    int16_t bool_fid;                     /* compact: pending bool field id */
    gboolean bool_field_pending;
};

void wire_writer_init(struct wire_writer *w, wire_proto_t proto,
                      struct wire_buf *buf);
void wire_write_msg_begin(struct wire_writer *w, const uint8_t *name,
                          uint32_t name_len, uint8_t type, int32_t seqid);
void wire_write_struct_begin(struct wire_writer *w);
void wire_write_struct_end(struct wire_writer *w); /* writes STOP too */
void wire_write_field(struct wire_writer *w, uint8_t type, int16_t fid);
void wire_write_bool(struct wire_writer *w, gboolean v);
void wire_write_byte(struct wire_writer *w, int8_t v);
void wire_write_i16(struct wire_writer *w, int16_t v);
void wire_write_i32(struct wire_writer *w, int32_t v);
void wire_write_i64(struct wire_writer *w, int64_t v);
void wire_write_double(struct wire_writer *w, double v);
void wire_write_binary(struct wire_writer *w, const void *data, uint32_t len);
/* A binary made of two parts, e.g. salt prefix and logical key. */
void wire_write_binary2(struct wire_writer *w, const void *a, uint32_t alen,
                        const void *b, uint32_t blen);
/* Of three, e.g. "table," salt "row,suffix" (a meta row); the parts'
 * total must fit a uint32_t, as any binary read from the wire does. */
void wire_write_binary3(struct wire_writer *w, const void *a, uint32_t alen,
                        const void *b, uint32_t blen, const void *c,
                        uint32_t clen);
void wire_write_list_begin(struct wire_writer *w, uint8_t elem_type,
                           uint32_t count);
void wire_write_set_begin(struct wire_writer *w, uint8_t elem_type,
                          uint32_t count);
void wire_write_map_begin(struct wire_writer *w, uint8_t key_type,
                          uint8_t val_type, uint32_t count);
void wire_write_container_end(struct wire_writer *w);

/* Bytes of a list or set header at most: compact, a byte and a 5-byte
 * varint; binary, a byte and an i32. */
#define WIRE_SEQ_HEADER_MAX 6
/* The header of a list or set of count elements, as the writer writes
 * it; returns its length.  Lets a header written ahead be patched once
 * the count is known. */
size_t wire_seq_header(wire_proto_t proto, uint8_t elem_type, uint32_t count,
                       uint8_t out[WIRE_SEQ_HEADER_MAX]);

/*
 * Copies one value of the given type from r to w: a byte copy when both
 * use the same protocol, a re-encoding otherwise.
 */
wire_status_t wire_copy(struct wire_reader *r, struct wire_writer *w,
                        uint8_t type);

/*
 * Copies one field whose header r has just read (from 'at', where the
 * header starts) to w, as wire_write_field then wire_copy would: in one
 * append of its bytes as they are when both sides use the binary
 * protocol (whose headers have one encoding) and it is no bool (whose
 * byte wire_copy writes as 0 or 1).
 */
wire_status_t wire_copy_field(struct wire_reader *r, struct wire_writer *w,
                              const uint8_t *at, uint8_t type, int16_t fid);

/* Writes a whole TApplicationException message. */
void wire_write_app_exception(struct wire_writer *w, const uint8_t *name,
                              uint32_t name_len, int32_t seqid, int32_t type,
                              const char *message);

/* Framed transport: 4-byte big-endian length in front of a message. */
size_t wire_frame_begin(struct wire_buf *b); /* returns offset */
void wire_frame_end(struct wire_buf *b, size_t offset);

const char *wire_type_name(uint8_t type);
