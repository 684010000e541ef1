/* codec.h: rewrites one Thrift1 call for the backend and its reply back. */
#pragma once

#include <glib.h>
#include <string.h>

#include "wire.h"

struct config;
struct salt_table;
struct tabstate;
struct hbase1_method;
struct hbase1_service;
struct hbase1_scanner;

/* Bytes of a logical key a note keeps: boundaries and hot keys are shown
 * by this prefix (the hashes cover the whole key). */
#define CODEC_NOTE_KEY_MAX 48
/* Copies n <= CODEC_NOTE_KEY_MAX bytes as a few fixed-size moves that
 * overlap (no call: a key visualizer's copy is on every request's path);
 * reads and writes only [0, n). */
static inline void
codec_note_copy(uint8_t *dst, const uint8_t *src, size_t n)
{
    if (n >= 16) {
        memcpy(dst, src, 16);
        if (n > 32) {
            memcpy(dst + 16, src + 16, 16);
        }
        memcpy(dst + n - 16, src + n - 16, 16);
    } else if (n >= 8) {
        memcpy(dst, src, 8);
        memcpy(dst + n - 8, src + n - 8, 8);
    } else if (n >= 4) {
        memcpy(dst, src, 4);
        memcpy(dst + n - 4, src + n - 4, 4);
    } else {
        for (size_t i = 0; i < n; i++) {
            dst[i] = src[i];
        }
    }
}

/* Bytes of a table name a call keeps for its log lines. */
#define CODEC_TABLE_MAX 128

/*
 * What a reply needs to know about its request.  Filled by
 * codec_request, kept by the I/O layer with the pending request, handed
 * to codec_reply.  Plain data: no allocation, nothing to free.
 */
struct codec_call {
    const struct hbase1_service *service; /* the connection's service */
    const struct hbase1_method *method;   /* NULL: name not in its table */
    const struct salt_table *salt; /* salted table of the call, or NULL */
    unsigned stats_id;             /* its metrics slot + 1 (tabstate.h),
                                      0: none; its rows count there */
    int32_t client_seqid;          /* echoed to the client */
    uint16_t name_len;
    gboolean client_strict;           /* binary: client used versioned
                                           headers */
    gboolean splits_set;              /* split keys of a salted table
                                           were written by the proxy */
    uint32_t splits_asked;            /* how many the client sent */
    uint32_t splits_sent;             /* how many were sent instead (0:
                                           none, the backend is framed) */
    uint16_t table_len;               /* the first table the call names,
                                           for logs (cut at
                                           CODEC_TABLE_MAX bytes); 0: none */
    const struct salt_table *kv_salt; /* the call's table is unsalted and
                                         the key visualizer counts it
                                         ([keyviz] unsalted_tables): its
                                         one-bucket salt, which salts
                                         nothing; else NULL */
    struct codec_key_note_ref {
        const struct salt_table *salt; /* NULL: no key noted */
        unsigned stats_id;
        uint8_t kept;
        /* last: codec_call_clear leaves it */
        uint8_t key[CODEC_NOTE_KEY_MAX];
    } first_key; /* the call's first noted key, which its error counts
                    against (tally keys_on only) */
    /* last: codec_call_clear leaves them but their terminators */
    char name[WIRE_MAX_NAME + 1];    /* method name as the client sent
                                        it, name_len bytes and a NUL */
    char table[CODEC_TABLE_MAX + 1]; /* table_len bytes and a NUL */
};

/* Empties call: every field zero, name and table "".  A call is cleared
 * twice per request and is most of a kilobyte, nearly all of it the two
 * texts, which are read only up to their lengths; first_key's bytes are
 * read only up to its kept, when its salt is set, which sets them. */
static inline void
codec_call_clear(struct codec_call *call)
{
    memset(call, 0, offsetof(struct codec_call, first_key.key));
    call->name[0] = '\0';
    call->table[0] = '\0';
}

/* The log line of a call whose split keys the codec replaced
 * (splits_set): the table, the counts, and the split points sent (or why
 * none were, over a framed transport), each
 * in the escape syntax (escape.h), ", " between them. */
char *codec_splits_describe(const struct codec_call *call);

/* Row keys sent to, and rows returned from, one bucket of a salted table. */
struct codec_bucket_count {
    const struct salt_table *salt; /* the table's mapping */
    unsigned stats_id;             /* its metrics slot + 1, 0: none */
    uint32_t bucket;               /* salt->buckets: a forward-looking
                                      table's legacy (unsalted) keys */
    uint32_t requests;             /* row keys salted into it */
    uint32_t writes;               /* of those, keys of mutations */
    uint32_t rows;                 /* rows unsalted from it */
};

/* What a logical key was to its call, for the key visualizer. */
typedef enum {
    CODEC_KEY_READ = 0,  /* a row key read */
    CODEC_KEY_WRITE = 1, /* a row key of a mutation */
    CODEC_KEY_ROW = 2,   /* a row handed back (get, scan) */
} codec_key_kind_t;

/* Notes one batch keeps at most: a larger batch notes its first ones. */
#define CODEC_NOTE_MAX 16384

/*
 * One logical key of a salted table a walk met (codec_tally.keys_on):
 * fixed size, so the tally's array is the only memory, reused from one
 * batch to the next.  It points at the key rather than copying it: the
 * owner takes the tally right after each walk.
 */
struct codec_key_note {
    const struct salt_table *salt; /* the table's mapping */
    const uint8_t *key;            /* the whole key, where the walk read
                                      it: in the message walked, valid
                                      until its owner takes the tally
                                      (which it does before letting the
                                      message's bytes go) */
    unsigned stats_id;             /* its metrics slot + 1, 0: none (set
                                      by whoever fills the note) */
    guint64 key_hash;              /* XXH3 of the whole key (0 for a
                                      CODEC_KEY_ROW: not needed) */
    guint64 part_hash;             /* XXH3 of its hash_part (the same) */
    uint32_t len;                  /* bytes of the whole key */
    uint32_t part_len;             /* bytes of its hash_part */
    uint32_t bucket;               /* where it went (salt->buckets:
                                      legacy range) */
    uint32_t bytes;                /* its share of the message's bytes */
    uint8_t kind;                  /* codec_key_kind_t */
};

/* Fills n for key of salt (pure; the engines' scan rows use it too): n
 * points at key, which must outlive n's use. */
void codec_key_note_fill(struct codec_key_note *n,
                         const struct salt_table *salt, codec_key_kind_t kind,
                         uint32_t bucket, const uint8_t *key, size_t len);

/*
 * What rewrites did to salted tables, for the caller's counters: the
 * codec counts nothing itself.  Every codec call given one appends what
 * it sent on or handed back; a call refused (REJECT) or one that must
 * wait for more bytes (AGAIN) appends nothing, so a message counts once
 * however it arrives.  The caller owns it, reads it and empties it with
 * codec_tally_clear; its array grows to the most buckets one batch
 * touched and is kept for the next.  NULL wherever a tally is taken:
 * nothing is reported.
 */
struct codec_tally {
    struct codec_bucket_count *v; /* in the order met; one bucket met
                                       twice in a row is one entry */
    uint32_t n;                   /* entries used */
    uint32_t cap;                 /* entries allocated */
    guint64 unsalted;             /* rows of salted tables handed back
                                       as stored: no valid salt */
    gboolean keys_on;             /* note logical keys too (set by the
                                       owner: the key visualizer is on) */
    struct codec_key_note *notes; /* in the order met */
    uint32_t nnotes;              /* used */
    uint32_t notes_cap;           /* allocated */
};

void codec_tally_init(struct codec_tally *t);
void codec_tally_clear(struct codec_tally *t);
void codec_tally_free(struct codec_tally *t);

typedef enum {
    CODEC_OK = 0,     /* out holds the message to send on */
    CODEC_REJECT = 1, /* answer the client from here: an error, or what
                         HBase would answer (see codec_error) */
    CODEC_CLOSE = 2,  /* cannot even answer: close the connection */
    CODEC_SCAN = 3,   /* a scanner call: the scan engine takes it (call is
                         filled, out untouched) */
    CODEC_AGAIN = 4,  /* the stream ends inside the message: call again
                         with more bytes (codec_io.stream only) */
} codec_status_t;

/* How a call the codec answers itself is answered. */
typedef enum {
    CODEC_ANSWER_APP = 0, /* TApplicationException of app_type */
    CODEC_ANSWER_IO,      /* the method's IOError, as HBase does for bad
                              arguments */
    CODEC_ANSWER_IA,      /* the method's IllegalArgument, or its IOError
                              where it declares none */
    CODEC_ANSWER_EMPTY,   /* success: an empty list, as HBase answers a
                              read of a row it does not hold */
} codec_answer_t;

#define CODEC_ERROR_TEXT 256

/* Why a request was rejected, for the reply and the log. */
struct codec_error {
    int32_t app_type;            /* TApplicationException type */
    const char *message;         /* static text, or text[] */
    uint8_t answer;              /* codec_answer_t */
    uint8_t can_retry;           /* ANSWER_IO: the IOError's canRetry */
    char text[CODEC_ERROR_TEXT]; /* a message naming lengths and a table;
                              message points here then, so copy the
                              struct only with care */
};

/*
 * One message through the codec, in either direction: the bytes, where
 * they go, what decides how, and what came of it.  The caller fills it
 * with designated initialisers (a field left out is zero: its default)
 * for one codec_request or codec_reply, then reads err and used.  It
 * holds pointers only: nothing to free.
 */
struct codec_io {
    /* the message: header and argument (or result) struct, no frame
     * header */
    const uint8_t *data;
    size_t len;        /* bytes at data */
    wire_proto_t from; /* protocol data is in */
    gboolean stream;   /* data is the front of an unframed stream: it
                            may end inside the message (AGAIN: nothing
                            written, nothing counted) or run on past it
                            (used says where it ends); one walk both
                            finds the end and rewrites, where
                            wire_message_scan then a whole-message call
                            would walk it twice */
    /* where it goes */
    wire_proto_t to;       /* protocol written to out */
    int32_t backend_seqid; /* request: the sequence id written for the
                              backend; reply: the one it must carry */
    struct wire_buf *out;  /* appended to; framing is the caller's.  Left
                              as it was unless OK */
    /* what decides how */
    const struct config *cfg;         /* request: salted tables, filters
                                         (required) */
    const struct tabstate *ts;        /* request: cfg's run-time state
                                         (tabstate.h): the catalog's
                                         refusals, the tables' metrics
                                         slots; NULL: none */
    const struct hbase1_service *svc; /* request: the connection's
                                         service, whose method table
                                         decides what is rewritten;
                                         NULL: Thrift1 */
    const struct wire_limits *limits; /* NULL: wire_default_limits */
    struct codec_tally *tally;        /* what was salted and unsalted;
                                         NULL: nothing reported */
    /* what came of it */
    struct codec_error *err; /* why, when not OK (required) */
    size_t used;             /* the message's length: len when whole; in
                                a stream the bytes to drop from it, 0 on
                                AGAIN and on a CLOSE for bytes that cannot
                                be a message */
    /* reply, when OK: its header as read, so that the caller tells an
     * exception from a result without reading the header again
     * (metrics_result_error) */
    uint8_t reply_type; /* WIRE_REPLY or WIRE_EXCEPTION */
    size_t reply_body;  /* where its struct begins in data */
};

/*
 * Rewrites a client message for the backend into io->out: row keys of
 * salted tables gain their salt, everything else is copied (or
 * transcoded from io->from to io->to), with io->backend_seqid in place
 * of the client's sequence id.  Fills call, which codec_reply needs
 * later.  OK: io->out holds the call; REJECT: codec_write_error builds
 * the answer from call and io->err; SCAN: the scan engine takes the
 * call; AGAIN (io->stream only): wait for more bytes; CLOSE: io->err
 * says why (in a stream, also bytes that cannot be a message).
 */
codec_status_t codec_request(struct codec_io *io, struct codec_call *call);

/*
 * Rewrites a backend reply to call for the client into io->out: checks
 * its sequence id (io->backend_seqid) and name against the call, strips
 * salts from the rows of salted tables, restores the client's sequence
 * id and protocol.  OK, AGAIN (io->stream only), or CLOSE with
 * io->err->message set: the backend connection is broken and the caller
 * answers the client with codec_write_io_error.  io->cfg and io->svc are
 * not used: call has what the request found.
 */
codec_status_t codec_reply(struct codec_io *io, const struct codec_call *call);

/*
 * How a filter scanfilter_new or scanfilter_new_pb refused (error) is
 * answered, as HBase answers the filters it rejects: text for the
 * TIOError, and its canRetry.  Bytes HBase itself rejects get HBase's
 * answer (filterpb.h); the others "java.lang.IllegalArgumentException: "
 * and why.
 */
void codec_filter_refusal(const GError *error, char *text, size_t size,
                          gboolean *can_retry);

/* The reply to a rejected call (REJECT): as err->answer says. */
void codec_write_error(const struct codec_call *call, wire_proto_t to,
                       const struct codec_error *err, struct wire_buf *out);

/*
 * The reply a client gets when its backend failed: the method's declared
 * IOError (message, canRetry) where it has one, else a
 * TApplicationException INTERNAL_ERROR with the same message.
 */
void codec_write_io_error(const struct codec_call *call, wire_proto_t to,
                          const char *message, gboolean can_retry,
                          struct wire_buf *out);

/* Replies the scan engine builds for a call (client protocol, no frame). */
void codec_write_i32_reply(const struct codec_call *call, wire_proto_t to,
                           int32_t value, struct wire_buf *out);
void codec_write_void_reply(const struct codec_call *call, wire_proto_t to,
                            struct wire_buf *out);
/* The declared IllegalArgument (field 2) of scanner calls. */
void codec_write_illegal_argument(const struct codec_call *call,
                                  wire_proto_t to, const char *message,
                                  struct wire_buf *out);
/*
 * A list<TRowResult> reply built where it is sent from: begin writes the
 * reply up to a list header for max rows and returns where that header
 * is; the caller appends the rows, encoded in 'to' (a struct encodes the
 * same whatever surrounds it); end writes the header for the count of
 * rows appended (at most max) and closes the reply.
 */
size_t codec_rows_reply_begin(const struct codec_call *call, wire_proto_t to,
                              uint32_t max, struct wire_buf *out);
void codec_rows_reply_end(wire_proto_t to, size_t list_at, uint32_t max,
                          uint32_t count, struct wire_buf *out);

/*
 * Copies one row of a scanner fetch (scanner->row: TRowResult, Thrift2's
 * TResult) from r to
 * w, stripping its row's salt when salt is set (rows without a valid salt
 * are copied as stored); tally gets its bucket, or counts it unsalted.
 */
wire_status_t codec_row_result(const struct hbase1_scanner *scanner,
                               struct wire_reader *r, struct wire_writer *w,
                               const struct salt_table *salt,
                               unsigned stats_id, struct codec_tally *tally);
