/* scan.c: scanners: fan-out over salt buckets, ordered merge, global ids. */
#include "scan.h"

#include <string.h>

#include <event2/event.h>

#include "backend.h"
#include "config.h"
#include "hbase1.h"
#include "metrics.h"
#include "salt.h"
#include "scanfilter.h"

/*
 * A scan of a salted table is N scans, one per bucket that can hold a
 * matching row, each bounded by [salt|start, salt|stop):
 *
 *   scannerOpen*  --->  scannerOpenWithScan x N, in parallel
 *                        (bounds, filter rewritten per bucket)
 *
 *   bucket 0: [cur batch: r r r r][next batch, in flight or ready]
 *   bucket 1: [cur batch: r r    ][next ...]          heap of the
 *   ...                                               bucket heads,
 *   bucket N: [cur batch: r r r  ][next ...]          by logical key
 *                    |
 *   scannerGetList(n) <--- pop the smallest head n times, strip its salt
 *
 * Each bucket holds at most two batches: the one being merged and the
 * next, fetched ahead as soon as the current one is installed, so a
 * client's scannerGetList rarely waits for a round trip, and memory does
 * not depend on table size.  A row may only leave when every unfinished
 * bucket has a head: the one without could hold a smaller row.
 *
 * The batches are the backend's reply bytes, swapped out of the request
 * that fetched them; rows are decoded only to find their key, and copied
 * once, into the client's reply.
 */

/* HBase's message for an unknown, closed or expired scanner. */
#define SCAN_INVALID_ID "scanner ID is invalid"
/* How often each worker looks for idle scanners. */
#define SCAN_TIMER_MS 1000
/* Rows per bucket fetch when the client gives no caching. */
#define SCAN_DEFAULT_CACHING 100
#define SCAN_MIN_FETCH 16

/* The process-wide id -> scanner map. */
struct scan_table {
    GMutex lock;            /* guards everything below */
    GHashTable *by_id;      /* GINT_TO_POINTER(id) -> struct scanner * */
    int32_t next_id;        /* last id handed out */
};

enum scan_state {
    SCAN_OPENING = 0,       /* backend opens in flight */
    SCAN_OPEN,              /* serving calls */
    SCAN_FAILED,            /* a bucket failed: every call gets the error */
    SCAN_CLOSED,            /* closed or expired: freed when idle */
};

enum scan_op_kind {
    SCAN_OP_OPEN = 0,
    SCAN_OP_NEXT,
    SCAN_OP_CLOSE,
};

/* One client call on a scanner. */
struct scan_op {
    enum scan_op_kind kind;
    int32_t id;                     /* proxy scanner id (NEXT, CLOSE) */
    int32_t want;                   /* rows asked (NEXT) */
    int32_t got;                    /* rows written so far */
    struct proxy_req *req;          /* the client's request */
    struct proxy_worker *home;      /* req's worker: finished there */
};

/* One bucket's backend scanner and its buffered batches. */
struct scan_bucket {
    uint32_t bucket;                /* salt bucket */
    int32_t backend_id;             /* backend scanner id once open */
    unsigned opened:1;              /* backend_id is valid */
    unsigned fetching:1;            /* a fetch is in flight */
    unsigned last:1;                /* the backend has no rows after next */
    unsigned done:1;                /* no rows left at all */
    unsigned closed:1;              /* backend scanner closed */
    unsigned next_ready:1;          /* next holds a fetched batch */
    uint32_t fetch;                 /* rows the next fetch asks for */
    struct wire_buf cur;            /* batch being merged (reply bytes) */
    struct wire_buf next;           /* the batch after it */
    uint32_t next_count;            /* rows in next */
    struct wire_reader rd;          /* at the row after the head in cur */
    uint32_t left;                  /* rows in cur after the head */
    const uint8_t *head;            /* head row: TRowResult bytes in cur */
    size_t head_len;
    const uint8_t *key;             /* head's logical key, for the heap */
    size_t key_len;
    gboolean has_head;
    gboolean row_first;             /* head's row is its first field, at
                                       head + row_at .. head + row_end
                                       (length prefix included) */
    uint32_t row_at, row_end;
    uint32_t row_bucket;            /* bucket its salt names */
    gboolean row_salted;            /* a salt of ours, of this bucket */
};

struct scanner {
    int32_t id;                     /* proxy scanner id */
    struct proxy_worker *owner;     /* every field is touched only here */
    enum scan_state state;
    const struct salt_table *salt;  /* NULL: one pass-through scanner */
    char table[128];                /* for logs */
    int server;                     /* backend server of all its scanners */
    struct proxy_gen *gen;          /* generation salt points into */
    struct backend_pool *pool;      /* pool of that server: kept when a
                                       reload replaces the worker's */
    gint64 last_used;               /* monotonic us, for expiry */
    unsigned inflight;              /* internal requests not back yet */
    /* pass-through */
    int32_t backend_id;
    /* merged */
    gboolean reversed;
    uint32_t fetch_rows;            /* rows of each bucket's first fetch */
    uint32_t fetch_max;             /* rows of a fetch, at most */
    int64_t limit;                  /* PageFilter rows left; < 0: none */
    GByteArray *page_row;           /* logical key of the last row given
                                     * under a limit (batchSize splits a
                                     * row; the page counts it once) */
    gboolean page_done;             /* the limit is reached */
    unsigned nbuckets;
    struct scan_bucket *buckets;
    unsigned *heap;                 /* bucket indexes by head key */
    unsigned heap_len;
    unsigned nwaiting;              /* unfinished buckets with no head */
    unsigned nopening;              /* backend opens in flight */
    char *error;                    /* why it failed; NULL: it has not */
    gboolean error_retry;
    /* calls */
    struct scan_op *op;             /* being served */
    GQueue queued;                  /* struct scan_op *, waiting their turn */
    struct wire_buf rows;           /* op's rows so far, client protocol */
    gboolean pumping;               /* scan_pump is on the stack */
    gboolean pump_again;
};

static void scan_pump(struct scanner *sc);
static void scan_op_start(struct scanner *sc, struct scan_op *op);

/* ---- the id table ------------------------------------------------------- */

struct scan_table *
scan_table_new(void)
{
    struct scan_table *t = g_new0(struct scan_table, 1);

    g_mutex_init(&t->lock);
    t->by_id = g_hash_table_new(g_direct_hash, g_direct_equal);
    return t;
}

void
scan_table_free(struct scan_table *t)
{
    GHashTableIter it;
    gpointer key, value;

    /* the workers are gone: whatever is left only holds memory */
    g_hash_table_iter_init(&it, t->by_id);
    while (g_hash_table_iter_next(&it, &key, &value)) {
        struct scanner *sc = value;
        struct scan_op *op;

        for (unsigned i = 0; i < sc->nbuckets; i++) {
            wire_buf_free(&sc->buckets[i].cur);
            wire_buf_free(&sc->buckets[i].next);
        }
        while ((op = g_queue_pop_head(&sc->queued)) != NULL) {
            g_free(op);
        }
        g_free(sc->op);
        g_free(sc->buckets);
        g_free(sc->heap);
        g_free(sc->error);
        if (sc->page_row != NULL) {
            g_byte_array_unref(sc->page_row);
        }
        wire_buf_free(&sc->rows);
        g_free(sc);
    }
    g_hash_table_destroy(t->by_id);
    g_mutex_clear(&t->lock);
    g_free(t);
}

unsigned
scan_open_count(const struct scan_table *t)
{
    unsigned n;

    g_mutex_lock((GMutex *)&t->lock);
    n = g_hash_table_size(t->by_id);
    g_mutex_unlock((GMutex *)&t->lock);
    return n;
}

/* Hands out the next free positive id, as HBase's counter does. */
static int32_t
scan_table_add(struct scan_table *t, struct scanner *sc)
{
    int32_t id;

    g_mutex_lock(&t->lock);
    do {
        t->next_id = t->next_id == G_MAXINT32 ? 1 : t->next_id + 1;
        id = t->next_id;
    } while (g_hash_table_contains(t->by_id, GINT_TO_POINTER(id)));
    g_hash_table_insert(t->by_id, GINT_TO_POINTER(id), sc);
    g_mutex_unlock(&t->lock);
    return id;
}

/* Only the owner may follow the pointer: another worker could see it
 * freed as soon as the lock is dropped. */
static struct scanner *
scan_table_find(struct scan_table *t, int32_t id,
                struct proxy_worker **owner)
{
    struct scanner *sc;

    g_mutex_lock(&t->lock);
    sc = g_hash_table_lookup(t->by_id, GINT_TO_POINTER(id));
    *owner = sc != NULL ? sc->owner : NULL;
    g_mutex_unlock(&t->lock);
    return sc;
}

static void
scan_table_remove(struct scan_table *t, int32_t id)
{
    g_mutex_lock(&t->lock);
    g_hash_table_remove(t->by_id, GINT_TO_POINTER(id));
    g_mutex_unlock(&t->lock);
}

/* ---- answering the client ------------------------------------------------- */

static void
scan_finish_post(struct proxy_worker *w, void *arg)
{
    proxy_req_finish(w, arg);
}

/* req's reply is written: finish it on its own worker. */
static void
scan_op_done(struct scan_op *op, struct proxy_worker *w)
{
    if (op->home == w) {
        proxy_req_finish(w, op->req);
    } else {
        proxy_worker_post(op->home, scan_finish_post, op->req);
    }
    g_free(op);
}

static size_t
scan_reply_begin(struct proxy_req *req)
{
    wire_buf_clear(&req->reply);
    return req->client_framed ? wire_frame_begin(&req->reply) : 0;
}

static void
scan_reply_end(struct proxy_req *req, size_t off)
{
    if (req->client_framed) {
        wire_frame_end(&req->reply, off);
    }
}

static void
scan_reply_ia(struct scan_op *op, struct proxy_worker *w, const char *msg)
{
    size_t off = scan_reply_begin(op->req);

    codec_write_illegal_argument(&op->req->call, op->req->client_proto, msg,
                                 &op->req->reply);
    scan_reply_end(op->req, off);
    scan_op_done(op, w);
}

static void
scan_reply_io(struct scan_op *op, struct proxy_worker *w, const char *msg,
              gboolean can_retry)
{
    size_t off = scan_reply_begin(op->req);

    codec_write_io_error(&op->req->call, op->req->client_proto, msg,
                         can_retry, &op->req->reply);
    scan_reply_end(op->req, off);
    scan_op_done(op, w);
}

static void
scan_reply_i32(struct scan_op *op, struct proxy_worker *w, int32_t v)
{
    size_t off = scan_reply_begin(op->req);

    codec_write_i32_reply(&op->req->call, op->req->client_proto, v,
                          &op->req->reply);
    scan_reply_end(op->req, off);
    scan_op_done(op, w);
}

static void
scan_reply_void(struct scan_op *op, struct proxy_worker *w)
{
    size_t off = scan_reply_begin(op->req);

    codec_write_void_reply(&op->req->call, op->req->client_proto,
                           &op->req->reply);
    scan_reply_end(op->req, off);
    scan_op_done(op, w);
}

/*
 * Refuses a scannerOpen* whose filter cannot be applied exactly.  The
 * scannerOpen* methods declare only IOError: an IllegalArgument (field 2)
 * is a result no client can read (Thrift's "unknown result").  HBase
 * itself answers a filter it rejects with an IOError wrapping the
 * IllegalArgumentException, not to be retried; so does the proxy.
 */
static void
scan_refuse(struct scan_op *op, struct proxy_worker *w, const char *why)
{
    g_autofree char *msg = g_strdup_printf(
        "java.lang.IllegalArgumentException: %s", why);

    scan_reply_io(op, w, msg, FALSE);
}

/* ---- internal requests to the backend ------------------------------------- */

/* An internal request of sc, its message begun in w->scratch. */
static struct proxy_req *
scan_sub_begin(struct scanner *sc, proxy_sink_fn sink, uint32_t tag,
               const char *method, struct wire_writer *wr, size_t *frame)
{
    struct proxy_worker *w = sc->owner;
    const struct proxy_settings *set = &w->proxy->set;
    struct proxy_req *sub = proxy_req_get(w);

    sub->sink = sink;
    sub->sink_arg = sc;
    sub->sink_tag = tag;
    sub->server = sc->server;
    sub->backend_seqid = proxy_next_seqid(w);
    g_strlcpy(sub->call.name, method, sizeof(sub->call.name));
    sub->call.name_len = (uint16_t)strlen(method);
    wire_buf_clear(&w->scratch);
    *frame = set->backend_framed ? wire_frame_begin(&w->scratch) : 0;
    wire_writer_init(wr, set->backend_proto, &w->scratch);
    wire_write_msg_begin(wr, (const uint8_t *)method,
                         (uint32_t)strlen(method), WIRE_CALL,
                         sub->backend_seqid);
    return sub;
}

static void
scan_sub_send(struct scanner *sc, struct proxy_req *sub, size_t frame)
{
    struct proxy_worker *w = sc->owner;

    if (w->proxy->set.backend_framed) {
        wire_frame_end(&w->scratch, frame);
    }
    sc->inflight++;
    /* may call the sink at once, when no backend can take it */
    backend_submit(sc->pool, sub, NULL, w->scratch.data, w->scratch.len,
                   FALSE);
}

/* Sends a call whose only argument is the i32 scanner id (and nbRows). */
static void
scan_sub_id_call(struct scanner *sc, proxy_sink_fn sink, uint32_t tag,
                 const char *method, int32_t backend_id, int32_t rows)
{
    struct wire_writer wr;
    size_t frame;
    struct proxy_req *sub = scan_sub_begin(sc, sink, tag, method, &wr,
                                           &frame);

    wire_write_struct_begin(&wr);
    wire_write_field(&wr, WIRE_T_I32, 1);
    wire_write_i32(&wr, backend_id);
    if (rows >= 0) {
        wire_write_field(&wr, WIRE_T_I32, 2);
        wire_write_i32(&wr, rows);
    }
    wire_write_struct_end(&wr);
    scan_sub_send(sc, sub, frame);
}

/*
 * Reads the header of an internal request's reply and enters its result
 * struct.  On failure fills why (transport errors, exceptions, an IOError
 * or IllegalArgument field) and returns FALSE.  On success the reader is
 * at the first field of the result, described by *type and *fid.
 */
static gboolean
scan_sub_reply(struct scanner *sc, struct proxy_req *sub,
               struct wire_reader *r, uint8_t *type, int16_t *fid,
               char **why, gboolean *can_retry)
{
    const struct proxy_worker *w = sc->owner;
    struct wire_msg m;

    *can_retry = TRUE;
    if (sub->failed) {
        *why = g_strndup((const char *)sub->reply.data, sub->reply.len);
        *can_retry = sub->can_retry;
        return FALSE;
    }
    wire_reader_init(r, w->proxy->set.backend_proto, sub->reply.data,
                     sub->reply.len, TRUE, &w->reply_limits);
    if (wire_read_msg_begin(r, &m) != WIRE_OK
        || m.seqid != sub->backend_seqid
        || m.name_len != sub->call.name_len
        || memcmp(m.name, sub->call.name, m.name_len) != 0) {
        *why = g_strdup_printf("hbase-salt-proxy: bad reply to %s from "
                               "the backend: %s", sub->call.name,
                               r->error != NULL ? r->error : "out of step");
        return FALSE;
    }
    if (wire_read_struct_begin(r) != WIRE_OK
        || wire_read_field(r, type, fid) != WIRE_OK) {
        *why = g_strdup_printf("hbase-salt-proxy: malformed reply to %s",
                               sub->call.name);
        return FALSE;
    }
    if (m.type == WIRE_EXCEPTION || *fid != 0) {
        /* TApplicationException, IOError or IllegalArgument: each keeps
         * its message in field 1 */
        const uint8_t *text = NULL;
        uint32_t tlen = 0;
        uint8_t t2;
        int16_t f2;

        if (m.type == WIRE_EXCEPTION) {
            /* already inside the exception struct */
            t2 = *type;
            f2 = *fid;
        } else if (*type == WIRE_T_STRUCT
                   && wire_read_struct_begin(r) == WIRE_OK) {
            wire_read_field(r, &t2, &f2);
        } else {
            t2 = WIRE_T_STOP;
            f2 = 0;
        }
        while (r->status == WIRE_OK && t2 != WIRE_T_STOP) {
            if (f2 == 1 && t2 == WIRE_T_STRING) {
                wire_read_binary(r, &text, &tlen);
            } else if (f2 == 2 && t2 == WIRE_T_BOOL) {
                *can_retry = wire_read_bool(r);
            } else {
                wire_skip(r, t2);
            }
            wire_read_field(r, &t2, &f2);
        }
        *why = text != NULL ? g_strndup((const char *)text, tlen)
                            : g_strdup("backend error");
        if (m.type == WIRE_EXCEPTION) {
            *can_retry = FALSE;
        }
        return FALSE;
    }
    return TRUE;
}

static void scan_free(struct scanner *sc);

/* An internal request came back: account for it, maybe free sc. */
static gboolean
scan_sub_return(struct scanner *sc, struct proxy_req *sub)
{
    proxy_req_put(sc->owner, sub);
    sc->inflight--;
    if (sc->state == SCAN_CLOSED) {
        if (sc->inflight == 0) {
            scan_free(sc);
        }
        return FALSE;
    }
    return TRUE;
}

/* ---- lifetime ------------------------------------------------------------- */

/* sc points into its request's generation and pins its pool: both live
 * until it is freed (proxy_worker_gc). */
static void
scan_pin(struct scanner *sc, struct proxy_req *req)
{
    sc->gen = req->gen;
    proxy_gen_use(sc->owner, sc->gen);
    sc->pool->scanners++;
}

static void
scan_unpin(struct scanner *sc)
{
    proxy_gen_unuse(sc->owner, sc->gen);
    sc->pool->scanners--;
}

static void
scan_free(struct scanner *sc)
{
    struct scan_op *op;

    scan_unpin(sc);
    for (unsigned i = 0; i < sc->nbuckets; i++) {
        wire_buf_free(&sc->buckets[i].cur);
        wire_buf_free(&sc->buckets[i].next);
    }
    while ((op = g_queue_pop_head(&sc->queued)) != NULL) {
        scan_reply_ia(op, sc->owner, SCAN_INVALID_ID);
    }
    g_free(sc->buckets);
    g_free(sc->heap);
    g_free(sc->error);
    if (sc->page_row != NULL) {
        g_byte_array_unref(sc->page_row);
    }
    wire_buf_free(&sc->rows);
    g_free(sc);
}

static void
scan_close_sink(struct proxy_worker *w, struct proxy_req *sub)
{
    scan_sub_return(sub->sink_arg, sub);
}

static void
scan_bucket_close(struct scanner *sc, struct scan_bucket *b)
{
    if (b->opened && !b->closed) {
        b->closed = 1;
        scan_sub_id_call(sc, scan_close_sink, b->bucket, "scannerClose",
                         b->backend_id, -1);
    }
}

/* Closes every backend scanner; sc is freed once nothing is in flight. */
static void
scan_close(struct scanner *sc)
{
    if (sc->state == SCAN_CLOSED) {
        return;
    }
    if (sc->state != SCAN_OPENING) {
        scan_table_remove(sc->owner->proxy->scans, sc->id);
    }
    sc->state = SCAN_CLOSED;
    /* a close in flight keeps sc alive until it returns */
    sc->inflight++;
    if (sc->salt == NULL) {
        if (sc->backend_id >= 0) {
            scan_sub_id_call(sc, scan_close_sink, 0, "scannerClose",
                             sc->backend_id, -1);
        }
    } else {
        for (unsigned i = 0; i < sc->nbuckets; i++) {
            scan_bucket_close(sc, &sc->buckets[i]);
        }
    }
    sc->inflight--;
    if (sc->inflight == 0) {
        scan_free(sc);
    }
}

/* ---- opening -------------------------------------------------------------- */

/* What a scannerOpen* call asks for, pointing into the client's message. */
struct scan_spec {
    const uint8_t *table;
    uint32_t table_len;
    const uint8_t *start, *stop;
    uint32_t start_len, stop_len;
    gboolean has_stop;
    gboolean prefix;                /* scannerOpenWithPrefix */
    gboolean has_ts;
    int64_t ts;
    struct wire_reader columns;     /* positioned at the list */
    gboolean has_columns;
    struct wire_reader attributes;  /* positioned at the map */
    gboolean has_attributes;
    gboolean has_caching;
    int32_t caching;
    const uint8_t *filter;
    uint32_t filter_len;
    gboolean has_filter;
    gboolean has_batch;
    int32_t batch;
    gboolean has_sort;
    gboolean sort;
    gboolean reversed;
    gboolean has_cache_blocks;
    gboolean cache_blocks;
    const char *repeated;           /* static text: a field the scan is
                                       routed by came twice, or NULL */
};

/* Roles of the arguments of the scannerOpen* calls. */
enum scan_arg {
    SA_NONE = 0, SA_TABLE, SA_START, SA_STOP, SA_COLUMNS, SA_TS, SA_ATTRS,
    SA_SCAN,
};

static const struct {
    const char *name;
    uint8_t roles[7];               /* role of field id 1..7 */
    gboolean prefix;
} scan_open_methods[] = {
    { "scannerOpenWithScan", { SA_TABLE, SA_SCAN, SA_ATTRS }, FALSE },
    { "scannerOpen", { SA_TABLE, SA_START, SA_COLUMNS, SA_ATTRS }, FALSE },
    { "scannerOpenWithStop",
      { SA_TABLE, SA_START, SA_STOP, SA_COLUMNS, SA_ATTRS }, FALSE },
    { "scannerOpenWithPrefix", { SA_TABLE, SA_START, SA_COLUMNS, SA_ATTRS },
      TRUE },
    { "scannerOpenTs", { SA_TABLE, SA_START, SA_COLUMNS, SA_TS, SA_ATTRS },
      FALSE },
    { "scannerOpenWithStopTs",
      { SA_TABLE, SA_START, SA_STOP, SA_COLUMNS, SA_TS, SA_ATTRS }, FALSE },
};

/*
 * Java keeps the last of a field sent twice, as the parsers below do; but
 * the codec has routed the call by then, and a client that sends its
 * bounds or filter twice cannot mean both.  Salted scans refuse such a
 * call (scan_open), as the codec refuses other calls: *seen has bit n for
 * field id n already met.
 */
static void
scan_note_field(struct scan_spec *s, uint32_t *seen, unsigned n,
                const char *repeated)
{
    if ((*seen & (1u << n)) != 0 && s->repeated == NULL) {
        s->repeated = repeated;
    }
    *seen |= 1u << n;
}

static gboolean
scan_parse_tscan(struct wire_reader *r, struct scan_spec *s)
{
    uint32_t seen = 0;
    uint8_t type;
    int16_t fid;

    if (wire_read_struct_begin(r) != WIRE_OK) {
        return FALSE;
    }
    for (;;) {
        if (wire_read_field(r, &type, &fid) != WIRE_OK) {
            return FALSE;
        }
        if (type == WIRE_T_STOP) {
            break;
        }
        if (fid == 1 && type == WIRE_T_STRING) {
            scan_note_field(s, &seen, 1, "hbase-salt-proxy: field "
                            "TScan.startRow sent twice");
            wire_read_binary(r, &s->start, &s->start_len);
        } else if (fid == 2 && type == WIRE_T_STRING) {
            scan_note_field(s, &seen, 2, "hbase-salt-proxy: field "
                            "TScan.stopRow sent twice");
            wire_read_binary(r, &s->stop, &s->stop_len);
            s->has_stop = TRUE;
        } else if (fid == 3 && type == WIRE_T_I64) {
            s->ts = wire_read_i64(r);
            s->has_ts = TRUE;
        } else if (fid == 4 && type == WIRE_T_LIST) {
            s->columns = *r;
            s->has_columns = TRUE;
            wire_skip(r, type);
        } else if (fid == 5 && type == WIRE_T_I32) {
            s->caching = wire_read_i32(r);
            s->has_caching = TRUE;
        } else if (fid == 6 && type == WIRE_T_STRING) {
            scan_note_field(s, &seen, 6, "hbase-salt-proxy: field "
                            "TScan.filterString sent twice");
            wire_read_binary(r, &s->filter, &s->filter_len);
            s->has_filter = TRUE;
        } else if (fid == 7 && type == WIRE_T_I32) {
            s->batch = wire_read_i32(r);
            s->has_batch = TRUE;
        } else if (fid == 8 && type == WIRE_T_BOOL) {
            s->sort = wire_read_bool(r);
            s->has_sort = TRUE;
        } else if (fid == 9 && type == WIRE_T_BOOL) {
            scan_note_field(s, &seen, 9, "hbase-salt-proxy: field "
                            "TScan.reversed sent twice");
            s->reversed = wire_read_bool(r);
        } else if (fid == 10 && type == WIRE_T_BOOL) {
            s->cache_blocks = wire_read_bool(r);
            s->has_cache_blocks = TRUE;
        } else {
            wire_skip(r, type);
        }
    }
    wire_read_struct_end(r);
    return r->status == WIRE_OK;
}

/* Parses the arguments of any scannerOpen*; r is at the args struct. */
static gboolean
scan_parse_open(struct wire_reader *r, const char *method,
                struct scan_spec *s)
{
    const uint8_t *roles = NULL;
    uint32_t seen = 0;
    uint8_t type;
    int16_t fid;

    memset(s, 0, sizeof(*s));
    for (size_t i = 0; i < G_N_ELEMENTS(scan_open_methods); i++) {
        if (strcmp(scan_open_methods[i].name, method) == 0) {
            roles = scan_open_methods[i].roles;
            s->prefix = scan_open_methods[i].prefix;
        }
    }
    if (roles == NULL || wire_read_struct_begin(r) != WIRE_OK) {
        return FALSE;
    }
    for (;;) {
        uint8_t role;

        if (wire_read_field(r, &type, &fid) != WIRE_OK) {
            return FALSE;
        }
        if (type == WIRE_T_STOP) {
            break;
        }
        role = fid >= 1 && fid <= 7 ? roles[fid - 1] : SA_NONE;
        if (role == SA_TABLE && type == WIRE_T_STRING) {
            scan_note_field(s, &seen, (unsigned)fid, "hbase-salt-proxy: "
                            "field tableName sent twice");
            wire_read_binary(r, &s->table, &s->table_len);
        } else if (role == SA_START && type == WIRE_T_STRING) {
            scan_note_field(s, &seen, (unsigned)fid, s->prefix
                            ? "hbase-salt-proxy: field startAndPrefix "
                              "sent twice"
                            : "hbase-salt-proxy: field startRow sent twice");
            wire_read_binary(r, &s->start, &s->start_len);
        } else if (role == SA_STOP && type == WIRE_T_STRING) {
            scan_note_field(s, &seen, (unsigned)fid, "hbase-salt-proxy: "
                            "field stopRow sent twice");
            wire_read_binary(r, &s->stop, &s->stop_len);
            s->has_stop = TRUE;
        } else if (role == SA_COLUMNS && type == WIRE_T_LIST) {
            s->columns = *r;
            s->has_columns = TRUE;
            wire_skip(r, type);
        } else if (role == SA_TS && type == WIRE_T_I64) {
            s->ts = wire_read_i64(r);
            s->has_ts = TRUE;
        } else if (role == SA_ATTRS && type == WIRE_T_MAP) {
            s->attributes = *r;
            s->has_attributes = TRUE;
            wire_skip(r, type);
        } else if (role == SA_SCAN && type == WIRE_T_STRUCT) {
            /* a second TScan would replace the whole first one */
            scan_note_field(s, &seen, (unsigned)fid, "hbase-salt-proxy: "
                            "field scan sent twice");
            if (!scan_parse_tscan(r, s)) {
                return FALSE;
            }
        } else {
            wire_skip(r, type);
        }
    }
    wire_read_struct_end(r);
    return r->status == WIRE_OK;
}

/* Orders two keys as HBase's Bytes.compareTo does. */
static int
scan_key_cmp(const uint8_t *a, size_t alen, const uint8_t *b, size_t blen)
{
    int c = memcmp(a, b, MIN(alen, blen));

    if (c != 0) {
        return c;
    }
    return alen < blen ? -1 : alen > blen ? 1 : 0;
}

/*
 * A salted table holds no logical key longer than limit (salt_max_row):
 * a bound longer than that is no stored key, and with the prefix in front
 * HBase would refuse it.  Such a bound becomes one of at most limit bytes
 * that selects the same stored keys.  With t the bound cut to limit bytes,
 * for every key k of at most limit bytes:
 *   k >= bound  <=>  k > t   <=>  k >= successor(t)
 *   k <  bound  <=>  k <= t  <=>  k <  successor(t)
 * so forward bounds become successor(t) (none: nothing follows, or no
 * stop), reversed ones (start the high inclusive row, stop the low
 * exclusive one) t itself.  A prefix longer than limit prefixes no stored
 * key.  The bytes are g_malloc'd into *start_buf and *stop_buf, for the
 * caller to free: long bounds only, never on an ordinary scan.  FALSE:
 * no stored row is in the range.
 */
static gboolean
scan_fit_bounds(size_t limit, struct scan_spec *s, uint8_t **start_buf,
                uint8_t **stop_buf)
{
    gboolean moved = FALSE;

    if (s->prefix) {
        return s->start_len <= limit;
    }
    if (s->start_len > limit) {
        *start_buf = g_memdup2(s->start, limit);
        s->start = *start_buf;
        s->start_len = s->reversed ? (uint32_t)limit
                                   : (uint32_t)salt_successor(*start_buf,
                                                              limit);
        if (s->start_len == 0) {
            return FALSE;
        }
        moved = TRUE;
    }
    if (s->has_stop && s->stop_len > limit) {
        *stop_buf = g_memdup2(s->stop, limit);
        s->stop = *stop_buf;
        s->stop_len = s->reversed ? (uint32_t)limit
                                  : (uint32_t)salt_successor(*stop_buf,
                                                             limit);
        s->has_stop = s->stop_len > 0;
        moved = TRUE;
    }
    if (moved && s->has_stop && s->stop_len > 0 && s->start_len > 0) {
        /* empty now, and start == stop would read as HBase's one-row
         * "get scan" */
        int c = scan_key_cmp(s->start, s->start_len, s->stop, s->stop_len);

        return s->reversed ? c > 0 : c < 0;
    }
    return TRUE;
}

/* Writes a TScan for one bucket of a salted scan. */
static void
scan_write_tscan(struct scanner *sc, const struct scan_spec *s,
                 const struct scanfilter *f, uint32_t bucket,
                 struct wire_writer *wr)
{
    const struct salt_table *t = sc->salt;
    size_t cap = salt_prefix_len(t) + MAX(s->start_len, s->stop_len) + 1;
    g_autofree uint8_t *key = g_malloc(cap);
    size_t n;

    wire_write_struct_begin(wr);
    n = salt_scan_start(t, bucket, s->reversed, s->start, s->start_len, key);
    wire_write_field(wr, WIRE_T_STRING, 1);
    wire_write_binary(wr, key, (uint32_t)n);
    if (s->prefix) {
        /* rows with the prefix: stop at its successor, or the bucket end */
        g_autofree uint8_t *succ = g_memdup2(s->start, s->start_len);
        size_t slen = salt_successor(succ, s->start_len);

        n = salt_scan_stop(t, bucket, FALSE, succ, slen, key);
    } else {
        n = salt_scan_stop(t, bucket, s->reversed, s->stop,
                           s->has_stop ? s->stop_len : 0, key);
    }
    if (n > 0) {
        wire_write_field(wr, WIRE_T_STRING, 2);
        wire_write_binary(wr, key, (uint32_t)n);
    }
    if (s->has_ts) {
        wire_write_field(wr, WIRE_T_I64, 3);
        wire_write_i64(wr, s->ts);
    }
    if (s->has_columns) {
        struct wire_reader cr = s->columns;

        wire_write_field(wr, WIRE_T_LIST, 4);
        wire_copy(&cr, wr, WIRE_T_LIST);
    }
    wire_write_field(wr, WIRE_T_I32, 5);
    wire_write_i32(wr, (int32_t)sc->fetch_rows);
    if (s->has_filter) {
        size_t flen;
        const uint8_t *ftext = scanfilter_for_bucket(f, bucket, &flen);

        wire_write_field(wr, WIRE_T_STRING, 6);
        wire_write_binary(wr, ftext, (uint32_t)flen);
    }
    if (s->has_batch) {
        wire_write_field(wr, WIRE_T_I32, 7);
        wire_write_i32(wr, s->batch);
    }
    if (s->has_sort) {
        wire_write_field(wr, WIRE_T_BOOL, 8);
        wire_write_bool(wr, s->sort);
    }
    if (s->reversed) {
        wire_write_field(wr, WIRE_T_BOOL, 9);
        wire_write_bool(wr, TRUE);
    }
    if (s->has_cache_blocks) {
        wire_write_field(wr, WIRE_T_BOOL, 10);
        wire_write_bool(wr, s->cache_blocks);
    }
    wire_write_struct_end(wr);
}

static void scan_fetch(struct scanner *sc, struct scan_bucket *b);

/* Every bucket's open came back: answer the client, start fetching. */
static void
scan_opened(struct scanner *sc, struct scan_op *op)
{
    struct proxy_worker *w = sc->owner;

    if (sc->error != NULL) {
        scan_reply_io(op, w, sc->error, sc->error_retry);
        scan_close(sc);
        return;
    }
    sc->id = scan_table_add(w->proxy->scans, sc);
    sc->state = SCAN_OPEN;
    sc->last_used = proxy_now();
    scan_reply_i32(op, w, sc->id);
    /* every bucket waits for its first batch */
    sc->nwaiting = sc->nbuckets;
    for (unsigned i = 0; i < sc->nbuckets; i++) {
        scan_fetch(sc, &sc->buckets[i]);
    }
}

static void
scan_open_sink(struct proxy_worker *w, struct proxy_req *sub)
{
    struct scanner *sc = sub->sink_arg;
    struct wire_reader r;
    uint8_t type;
    int16_t fid;
    g_autofree char *why = NULL;
    gboolean retry;
    struct scan_op *op = sc->op;

    if (scan_sub_reply(sc, sub, &r, &type, &fid, &why, &retry)
        && type == WIRE_T_I32) {
        int32_t id = wire_read_i32(&r);

        if (sc->salt == NULL) {
            sc->backend_id = id;
        } else {
            sc->buckets[sub->sink_tag].backend_id = id;
            sc->buckets[sub->sink_tag].opened = 1;
        }
    } else if (sc->error == NULL) {
        sc->error = g_steal_pointer(&why);
        sc->error_retry = retry;
    }
    scan_sub_return(sc, sub);
    if (--sc->nopening == 0) {
        sc->op = NULL;
        scan_opened(sc, op);
    }
}

/* Re-sends the client's open as it is (unsalted table, one scanner). */
static void
scan_open_pass(struct scanner *sc, const struct wire_msg *m,
               struct wire_reader *body)
{
    struct wire_writer wr;
    size_t frame;
    struct proxy_req *sub;

    sc->nopening = 1;
    sub = scan_sub_begin(sc, scan_open_sink, 0, sc->op->req->call.name, &wr,
                         &frame);
    wire_copy(body, &wr, WIRE_T_STRUCT);
    (void)m;
    scan_sub_send(sc, sub, frame);
}

static void
scan_open(struct proxy_worker *w, struct scan_op *op, const uint8_t *msg,
          size_t len)
{
    struct proxy_req *req = op->req;
    const struct config *cfg = w->gen->cfg;
    struct scanner *sc;
    struct wire_reader r, body;
    struct wire_msg m;
    struct scan_spec spec;
    g_autoptr(GError) error = NULL;
    g_autofree uint8_t *start_buf = NULL;
    g_autofree uint8_t *stop_buf = NULL;
    struct scanfilter *filter = NULL;
    uint32_t only = 0;
    gboolean single, parsed;

    wire_reader_init(&r, req->client_proto, msg, len, TRUE,
                     &w->client_limits);
    wire_read_msg_begin(&r, &m);
    body = r;
    parsed = scan_parse_open(&r, req->call.name, &spec);
    /* unsalted, a call with a field twice goes on as it came: HBase reads
     * it as it always does (the codec refused a second table name) */
    if (!parsed || (spec.repeated != NULL && req->call.salt != NULL)) {
        struct codec_error err = { WIRE_APP_PROTOCOL_ERROR,
                                   spec.repeated, CODEC_ANSWER_APP };
        size_t off = scan_reply_begin(req);

        if (!parsed) {
            err.message = r.error != NULL ? r.error : "malformed call";
        }

        codec_write_error(&req->call, req->client_proto, &err, &req->reply);
        scan_reply_end(req, off);
        scan_op_done(op, w);
        return;
    }
    if (req->call.salt != NULL && (spec.start_len > SALT_HBASE_MAX_ROW
                                   || spec.stop_len > SALT_HBASE_MAX_ROW)) {
        /* HBase's Scan refuses such a bound with an exception its
         * handler does not catch: the answer an unsalted table gives */
        struct codec_error err = { WIRE_APP_INTERNAL_ERROR, NULL,
                                   CODEC_ANSWER_APP };
        size_t off = scan_reply_begin(req);

        g_snprintf(err.text, sizeof(err.text),
                   "Internal error processing %s", req->call.name);
        err.message = err.text;
        codec_write_error(&req->call, req->client_proto, &err, &req->reply);
        scan_reply_end(req, off);
        scan_op_done(op, w);
        return;
    }

    sc = g_new0(struct scanner, 1);
    sc->owner = w;
    sc->state = SCAN_OPENING;
    sc->salt = req->call.salt;
    sc->backend_id = -1;
    sc->limit = -1;
    sc->op = op;
    g_queue_init(&sc->queued);
    wire_buf_init(&sc->rows);
    g_snprintf(sc->table, sizeof(sc->table), "%.*s",
               (int)MIN(spec.table_len, 127), (const char *)spec.table);
    sc->pool = w->pool;
    scan_pin(sc, req);
    /* a DOWN server would fail the scan before it starts */
    sc->server = backend_pool_pick_server(sc->pool);

    if (sc->salt == NULL) {
        scan_open_pass(sc, &m, &body);
        return;
    }

    sc->reversed = spec.reversed && !spec.prefix;
    if (!scan_fit_bounds(salt_max_row(sc->salt), &spec, &start_buf,
                         &stop_buf)) {
        /* no row the table can store is in range: a scanner with no
         * bucket to read, whose first read is its end */
        metrics_scan_open(0);
        sc->op = NULL;
        scan_opened(sc, op);
        return;
    }

    /* which buckets can hold a row, and each one's filter */
    if (spec.prefix) {
        single = salt_prefix_bucket(sc->salt, spec.start, spec.start_len,
                                    &only);
    } else {
        single = salt_fixed_bucket(sc->salt, sc->reversed, spec.start,
                                   spec.start_len, spec.stop,
                                   spec.has_stop ? spec.stop_len : 0, &only);
    }
    if (sc->salt->buckets == 1) {
        /* one bucket: nothing to merge, every filter keeps its meaning */
        single = TRUE;
        only = 0;
    }
    if (spec.has_filter) {
        filter = scanfilter_new(spec.filter, spec.filter_len, sc->salt,
                                sc->reversed, &error);
        if (filter == NULL) {
            /* a filter whose meaning salting would change: refuse it */
            scan_refuse(op, w, error->message);
            scan_unpin(sc);
            wire_buf_free(&sc->rows);
            g_free(sc);
            return;
        }
        sc->limit = scanfilter_page_limit(filter);
        if (sc->limit >= 0) {
            sc->page_row = g_byte_array_new();
        }
        if (!single) {
            single = scanfilter_single_bucket(filter, &only);
        }
    }
    if (filter != NULL && !single && !scanfilter_multi_bucket_ok(filter)) {
        scan_refuse(op, w, scanfilter_multi_bucket_why(filter));
        scanfilter_free(filter);
        /* a PageFilter among the refused gave sc its page_row */
        if (sc->page_row != NULL) {
            g_byte_array_unref(sc->page_row);
        }
        scan_unpin(sc);
        wire_buf_free(&sc->rows);
        g_free(sc);
        return;
    }
    sc->nbuckets = single ? 1 : sc->salt->buckets;
    metrics_scan_open(sc->nbuckets);
    sc->buckets = g_new0(struct scan_bucket, sc->nbuckets);
    sc->heap = g_new(unsigned, sc->nbuckets);
    {
        uint32_t caching = spec.has_caching && spec.caching > 0
                               ? (uint32_t)spec.caching
                               : SCAN_DEFAULT_CACHING;
        uint32_t per = (uint32_t)(((uint64_t)caching * 3 / 2
                                   + sc->nbuckets - 1) / sc->nbuckets);

        sc->fetch_rows = MIN(MAX(per, MIN(SCAN_MIN_FETCH, caching)),
                             cfg->scan_caching_max);
        if (sc->fetch_rows == 0) {
            sc->fetch_rows = 1;
        }
        /* A short scan reads a slice of each bucket; a long one should not
         * pay N times the calls of an unsalted scan: each bucket starts at
         * its share of caching and doubles per fetch up to caching. */
        sc->fetch_max = MAX(MIN(MAX(caching, SCAN_DEFAULT_CACHING),
                                cfg->scan_caching_max), sc->fetch_rows);
    }

    /* every open goes out now; the last one back answers the client */
    sc->nopening = sc->nbuckets;
    sc->inflight++;
    for (unsigned i = 0; i < sc->nbuckets; i++) {
        struct scan_bucket *b = &sc->buckets[i];
        struct wire_writer wr;
        size_t frame;
        struct proxy_req *sub;

        b->bucket = single ? only : i;
        b->fetch = sc->fetch_rows;
        metrics_bucket_request(sc->salt, b->bucket, 1);
        wire_buf_init(&b->cur);
        wire_buf_init(&b->next);
        sub = scan_sub_begin(sc, scan_open_sink, i, "scannerOpenWithScan",
                             &wr, &frame);
        wire_write_struct_begin(&wr);
        wire_write_field(&wr, WIRE_T_STRING, 1);
        wire_write_binary(&wr, spec.table, spec.table_len);
        wire_write_field(&wr, WIRE_T_STRUCT, 2);
        scan_write_tscan(sc, &spec, filter, b->bucket, &wr);
        if (spec.has_attributes) {
            struct wire_reader ar = spec.attributes;

            wire_write_field(&wr, WIRE_T_MAP, 3);
            wire_copy(&ar, &wr, WIRE_T_MAP);
        }
        wire_write_struct_end(&wr);
        scan_sub_send(sc, sub, frame);
    }
    scanfilter_free(filter);
    g_debug("scan of %s: %u bucket(s), %u rows per fetch", sc->table,
            sc->nbuckets, sc->fetch_rows);
    /* Every open may have failed at once (no server up): the last one
     * answered the client and closed sc, which our guard kept alive, so
     * freeing it falls to us. */
    if (--sc->inflight == 0 && sc->state == SCAN_CLOSED) {
        scan_free(sc);
    }
}

/* ---- merging ---------------------------------------------------------- */

/* Orders two logical keys as HBase does; reversed scans go high to low. */
static inline int
scan_cmp(const struct scanner *sc, const struct scan_bucket *a,
         const struct scan_bucket *b)
{
    size_t n = MIN(a->key_len, b->key_len);
    int c = n > 0 ? memcmp(a->key, b->key, n) : 0;

    if (c == 0) {
        c = a->key_len < b->key_len ? -1 : a->key_len > b->key_len;
    }
    return sc->reversed ? -c : c;
}

static void
scan_heap_down(struct scanner *sc, unsigned i)
{
    for (;;) {
        unsigned l = 2 * i + 1, r = l + 1, m = i, tmp;

        if (l < sc->heap_len && scan_cmp(sc, &sc->buckets[sc->heap[l]],
                                         &sc->buckets[sc->heap[m]]) < 0) {
            m = l;
        }
        if (r < sc->heap_len && scan_cmp(sc, &sc->buckets[sc->heap[r]],
                                         &sc->buckets[sc->heap[m]]) < 0) {
            m = r;
        }
        if (m == i) {
            return;
        }
        tmp = sc->heap[i];
        sc->heap[i] = sc->heap[m];
        sc->heap[m] = tmp;
        i = m;
    }
}

static void
scan_heap_push(struct scanner *sc, unsigned bi)
{
    unsigned i = sc->heap_len++;

    sc->heap[i] = bi;
    while (i > 0) {
        unsigned parent = (i - 1) / 2, tmp;

        if (scan_cmp(sc, &sc->buckets[sc->heap[i]],
                     &sc->buckets[sc->heap[parent]]) >= 0) {
            return;
        }
        tmp = sc->heap[i];
        sc->heap[i] = sc->heap[parent];
        sc->heap[parent] = tmp;
        i = parent;
    }
}

static void
scan_heap_pop(struct scanner *sc)
{
    sc->heap[0] = sc->heap[--sc->heap_len];
    scan_heap_down(sc, 0);
}

/*
 * Moves b's head to its next row in cur.  Rows of another bucket (a
 * reversed scan from the end of a bucket can see the next bucket's first
 * key) are skipped.  FALSE when cur has no row left.
 */
static gboolean
scan_bucket_advance(struct scanner *sc, struct scan_bucket *b)
{
    size_t plen = salt_prefix_len(sc->salt);

    while (b->left > 0) {
        struct wire_reader peek = b->rd;
        const uint8_t *start = b->rd.pos, *row = NULL, *logical;
        uint32_t row_len = 0, bucket;
        size_t logical_len;
        uint8_t type;
        int16_t fid;

        gboolean first = TRUE;

        b->left--;
        b->row_first = FALSE;
        if (wire_read_struct_begin(&peek) == WIRE_OK) {
            while (wire_read_field(&peek, &type, &fid) == WIRE_OK
                   && type != WIRE_T_STOP) {
                if (fid == 1 && type == WIRE_T_STRING) {
                    const uint8_t *at = peek.pos;

                    if (wire_read_binary(&peek, &row, &row_len) == WIRE_OK
                        && first) {
                        b->row_first = TRUE;
                        b->row_at = (uint32_t)(at - start);
                        b->row_end = (uint32_t)(peek.pos - start);
                    }
                    break;
                }
                first = FALSE;
                wire_skip(&peek, type);
            }
        }
        if (wire_skip(&b->rd, WIRE_T_STRUCT) != WIRE_OK || row == NULL) {
            g_free(sc->error);
            sc->error = g_strdup_printf("hbase-salt-proxy: malformed row "
                                        "from the backend scanning %s",
                                        sc->table);
            sc->state = SCAN_FAILED;
            b->left = 0;
            return FALSE;
        }
        b->row_salted = FALSE;
        if (salt_strip(sc->salt, row, row_len, &logical, &logical_len,
                       &bucket)) {
            if (bucket != b->bucket) {
                continue;
            }
            b->key = logical;
            b->key_len = logical_len;
            b->row_bucket = bucket;
            b->row_salted = TRUE;
        } else {
            /* no salt of ours: order it by what follows the prefix */
            b->key = row + MIN(plen, row_len);
            b->key_len = row_len - MIN(plen, row_len);
        }
        b->head = start;
        b->head_len = (size_t)(b->rd.pos - start);
        return TRUE;
    }
    return FALSE;
}

/* Makes next the current batch; positions b->rd at its first row. */
static void
scan_bucket_install(struct scanner *sc, struct scan_bucket *b)
{
    const struct proxy_settings *set = &sc->owner->proxy->set;
    struct wire_buf tmp = b->cur;
    struct wire_msg m;
    uint8_t type, et;
    int16_t fid;

    b->cur = b->next;
    b->next = tmp;
    wire_buf_clear(&b->next);
    b->next_ready = 0;
    /* scan_fetch_sink checked the header: this cannot fail */
    wire_reader_init(&b->rd, set->backend_proto, b->cur.data, b->cur.len,
                     TRUE, &sc->owner->reply_limits);
    wire_read_msg_begin(&b->rd, &m);
    wire_read_struct_begin(&b->rd);
    wire_read_field(&b->rd, &type, &fid);
    wire_read_list_begin(&b->rd, &et, &b->left);
    if (b->next_count == 0 && b->last) {
        b->done = 1;
    }
}

/* Gives b a head if it can; keeps the heap and the waiting count right. */
static void
scan_bucket_refill(struct scanner *sc, struct scan_bucket *b, unsigned bi)
{
    for (;;) {
        if (scan_bucket_advance(sc, b)) {
            b->has_head = TRUE;
            scan_heap_push(sc, bi);
            return;
        }
        if (sc->state == SCAN_FAILED) {
            return;
        }
        if (b->next_ready) {
            scan_bucket_install(sc, b);
            if (b->done) {
                break;
            }
            scan_fetch(sc, b);
            continue;
        }
        break;
    }
    b->has_head = FALSE;
    if (b->last && !b->next_ready && !b->fetching) {
        b->done = 1;
    }
    if (b->done) {
        scan_bucket_close(sc, b);
    } else {
        sc->nwaiting++;
        scan_fetch(sc, b);
    }
}

static void
scan_fetch_sink(struct proxy_worker *w, struct proxy_req *sub)
{
    struct scanner *sc = sub->sink_arg;
    struct scan_bucket *b = &sc->buckets[sub->sink_tag];
    struct wire_reader r;
    uint8_t type, et;
    int16_t fid;
    uint32_t count = 0;
    g_autofree char *why = NULL;
    gboolean retry;

    b->fetching = 0;
    if (sc->state == SCAN_CLOSED) {
        scan_sub_return(sc, sub);
        return;
    }
    if (!scan_sub_reply(sc, sub, &r, &type, &fid, &why, &retry)
        || type != WIRE_T_LIST
        || wire_read_list_begin(&r, &et, &count) != WIRE_OK) {
        if (sc->state != SCAN_FAILED) {
            g_free(sc->error);
            const char *inner = why != NULL ? why : "bad reply";

            /* our own reasons carry the prefix already: say it once */
            if (g_str_has_prefix(inner, "hbase-salt-proxy: ")) {
                inner += strlen("hbase-salt-proxy: ");
            }
            sc->error = g_strdup_printf("hbase-salt-proxy: scan of %s "
                                        "failed in bucket %u: %s", sc->table,
                                        b->bucket, inner);
            sc->error_retry = retry;
            sc->state = SCAN_FAILED;
            /* the reason may quote the backend, and so row data: only at
             * debug; the client gets it in full */
            g_warning("scanner %d on %s failed in bucket %u", sc->id,
                      sc->table, b->bucket);
            g_debug("%s", sc->error);
        }
        scan_sub_return(sc, sub);
        scan_pump(sc);
        return;
    }
    /* keep the reply bytes: swap buffers instead of copying rows */
    {
        struct wire_buf tmp = b->next;

        b->next = sub->reply;
        sub->reply = tmp;
    }
    b->next_ready = 1;
    b->next_count = count;
    /* HBase returns a short batch only at the end of a scan */
    if (count < b->fetch) {
        b->last = 1;
    }
    b->fetch = MIN(b->fetch * 2, sc->fetch_max);
    scan_sub_return(sc, sub);
    if (!b->has_head && !b->done) {
        /* the merge was waiting for this bucket */
        sc->nwaiting--;
        scan_bucket_refill(sc, b, (unsigned)(b - sc->buckets));
    }
    scan_pump(sc);
}

/* Keeps one batch in flight per unfinished bucket. */
static void
scan_fetch(struct scanner *sc, struct scan_bucket *b)
{
    if (b->fetching || b->next_ready || b->last || b->done || !b->opened
        || sc->state != SCAN_OPEN) {
        return;
    }
    b->fetching = 1;
    metrics_bucket_request(sc->salt, b->bucket, 1);
    scan_sub_id_call(sc, scan_fetch_sink, (uint32_t)(b - sc->buckets),
                     "scannerGetList", b->backend_id, (int32_t)b->fetch);
}

/* Answers the current NEXT op with the rows gathered. */
static void
scan_next_done(struct scanner *sc)
{
    struct scan_op *op = sc->op;
    size_t off = scan_reply_begin(op->req);

    codec_write_rows_reply(&op->req->call, op->req->client_proto,
                           (uint32_t)op->got, sc->rows.data, sc->rows.len,
                           &op->req->reply);
    scan_reply_end(op->req, off);
    sc->op = NULL;
    sc->last_used = proxy_now();
    scan_op_done(op, sc->owner);
}

/* Starts the next queued op, if any and none is running. */
static void
scan_next_op(struct scanner *sc)
{
    struct scan_op *op;

    if (sc->op == NULL && (op = g_queue_pop_head(&sc->queued)) != NULL) {
        scan_op_start(sc, op);
    }
}

/* Whether b's head continues the row last given under a PageFilter. */
static gboolean
scan_page_same_row(const struct scanner *sc, const struct scan_bucket *b)
{
    return sc->page_row->len > 0 && sc->page_row->len == b->key_len
           && memcmp(sc->page_row->data, b->key, b->key_len) == 0;
}


/*
 * The head row of b for the client when nothing but its key changes: the
 * same protocol on both sides and the row first in the struct (as HBase
 * writes it), so the bytes around the key are copied as they came and
 * the rest of the row is not walked again.  The salt must still check
 * out as codec_row_out checks it; FALSE: let codec_row_result do it.
 */
static gboolean
scan_row_copy(struct scanner *sc, struct scan_bucket *b,
              struct wire_writer *wr)
{
    if (!b->row_first || !b->row_salted
        || wr->proto != sc->owner->proxy->set.backend_proto
        || salt_bucket(sc->salt, b->key, b->key_len) != b->row_bucket) {
        return FALSE;
    }
    metrics_bucket_row(sc->salt, b->row_bucket, 1);
    wire_buf_append(wr->buf, b->head, b->row_at);
    wire_write_binary(wr, b->key, (uint32_t)b->key_len);
    wire_buf_append(wr->buf, b->head + b->row_end,
                    b->head_len - b->row_end);
    return TRUE;
}

/* Moves rows from the bucket heads to the current op while it can. */
static void
scan_pump(struct scanner *sc)
{
    if (sc->pumping) {
        sc->pump_again = TRUE;
        return;
    }
    sc->pumping = TRUE;
    do {
        struct scan_op *op = sc->op;

        sc->pump_again = FALSE;
        if (op == NULL || op->kind != SCAN_OP_NEXT || sc->salt == NULL) {
            break;
        }
        if (sc->state == SCAN_FAILED) {
            sc->op = NULL;
            scan_reply_io(op, sc->owner, sc->error, sc->error_retry);
            sc->pump_again = TRUE;
            scan_next_op(sc);
            continue;
        }
        while (op->got < op->want && !sc->page_done && sc->nwaiting == 0
               && sc->heap_len > 0 && sc->state == SCAN_OPEN) {
            unsigned bi = sc->heap[0];
            struct scan_bucket *b = &sc->buckets[bi];
            struct wire_reader rr;
            struct wire_writer wr;

            if (sc->limit >= 0 && !scan_page_same_row(sc, b)) {
                /* PageFilter counts rows, not the partial rows of
                 * batchSize: the next row only while the page lasts */
                if (sc->limit == 0) {
                    sc->page_done = TRUE;
                    break;
                }
                sc->limit--;
                g_byte_array_set_size(sc->page_row, 0);
                g_byte_array_append(sc->page_row, b->key,
                                    (guint)b->key_len);
            }
            wire_writer_init(&wr, op->req->client_proto, &sc->rows);
            if (!scan_row_copy(sc, b, &wr)) {
                wire_reader_init(&rr, sc->owner->proxy->set.backend_proto,
                                 b->head, b->head_len, TRUE,
                                 &sc->owner->reply_limits);
                codec_row_result(&rr, &wr, sc->salt);
            }
            op->got++;
            metrics_scan_row();
            if (scan_bucket_advance(sc, b)) {
                scan_heap_down(sc, 0);
            } else {
                scan_heap_pop(sc);
                scan_bucket_refill(sc, b, bi);
            }
        }
        if (sc->state == SCAN_FAILED) {
            sc->pump_again = TRUE;
            continue;
        }
        if (op->got >= op->want || sc->page_done
            || (sc->nwaiting == 0 && sc->heap_len == 0)) {
            scan_next_done(sc);
            scan_next_op(sc);
            sc->pump_again = sc->op != NULL;
        }
    } while (sc->pump_again);
    sc->pumping = FALSE;
}

/* ---- pass-through (unsalted) scanners ---------------------------------- */

static void
scan_pass_sink(struct proxy_worker *w, struct proxy_req *sub)
{
    struct scanner *sc = sub->sink_arg;
    struct scan_op *op = sc->op;
    struct proxy_req *req = op->req;
    const struct proxy_settings *set = &w->proxy->set;
    struct codec_error err = { 0 };
    size_t off;

    sc->op = NULL;
    if (sub->failed) {
        g_autofree char *why = g_strndup((const char *)sub->reply.data,
                                         sub->reply.len);

        scan_reply_io(op, w, why, sub->can_retry);
    } else {
        off = scan_reply_begin(req);
        if (codec_reply(&req->call, set->backend_proto, sub->reply.data,
                        sub->reply.len, sub->backend_seqid,
                        req->client_proto, &req->reply, &err,
                        &w->reply_limits) != CODEC_OK) {
            scan_reply_io(op, w, err.message, FALSE);
        } else {
            scan_reply_end(req, off);
            scan_op_done(op, w);
        }
    }
    sc->last_used = proxy_now();
    if (scan_sub_return(sc, sub)) {
        scan_next_op(sc);
    }
}

/* ---- calls on open scanners ---------------------------------------------- */

static void
scan_op_start(struct scanner *sc, struct scan_op *op)
{
    struct proxy_worker *w = sc->owner;

    sc->last_used = proxy_now();
    if (op->kind == SCAN_OP_CLOSE && sc->salt == NULL) {
        /* pass-through: the backend's own answer (IllegalArgument for a
         * scanner it expired); sc is freed when it is back */
        scan_table_remove(w->proxy->scans, sc->id);
        sc->state = SCAN_CLOSED;
    } else if (op->kind == SCAN_OP_CLOSE) {
        scan_reply_void(op, w);
        scan_close(sc);
        return;
    }
    sc->op = op;
    if (sc->salt == NULL) {
        struct wire_writer wr;
        size_t frame;
        struct proxy_req *sub = scan_sub_begin(sc, scan_pass_sink, 0,
                                               op->req->call.name, &wr,
                                               &frame);

        sub->call = op->req->call;
        wire_write_struct_begin(&wr);
        wire_write_field(&wr, WIRE_T_I32, 1);
        wire_write_i32(&wr, sc->backend_id);
        if (strcmp(op->req->call.name, "scannerGetList") == 0) {
            wire_write_field(&wr, WIRE_T_I32, 2);
            wire_write_i32(&wr, op->want);
        }
        wire_write_struct_end(&wr);
        scan_sub_send(sc, sub, frame);
        return;
    }
    op->got = 0;
    wire_buf_clear(&sc->rows);
    if (op->want <= 0) {
        /* HBase: nbRows <= 0 is an empty list */
        scan_next_done(sc);
        scan_next_op(sc);
        return;
    }
    scan_pump(sc);
}

/* On the owner's thread: find the scanner again, it may be gone. */
static void
scan_op_run(struct proxy_worker *w, void *arg)
{
    struct scan_op *op = arg;
    struct proxy_worker *owner;
    struct scanner *sc = scan_table_find(w->proxy->scans, op->id, &owner);

    if (sc == NULL || owner != w || sc->state == SCAN_CLOSED) {
        scan_reply_ia(op, w, SCAN_INVALID_ID);
        return;
    }
    if (sc->op != NULL) {
        g_queue_push_tail(&sc->queued, op);
        return;
    }
    scan_op_start(sc, op);
}

void
scan_request(struct proxy_worker *w, struct proxy_req *req,
             const uint8_t *msg, size_t len)
{
    struct scan_op *op = g_new0(struct scan_op, 1);
    const struct hbase1_method *m = req->call.method;
    struct wire_reader r;
    struct wire_msg hdr;
    struct proxy_worker *owner = NULL;
    uint8_t type;
    int16_t fid;
    gboolean have_id = FALSE;

    op->req = req;
    op->home = w;
    if (m->kind == HBASE1_SCAN_OPEN) {
        op->kind = SCAN_OP_OPEN;
        scan_open(w, op, msg, len);
        return;
    }
    op->kind = m->kind == HBASE1_SCAN_CLOSE ? SCAN_OP_CLOSE : SCAN_OP_NEXT;
    op->want = 1;
    wire_reader_init(&r, req->client_proto, msg, len, TRUE,
                     &w->client_limits);
    wire_read_msg_begin(&r, &hdr);
    wire_read_struct_begin(&r);
    while (wire_read_field(&r, &type, &fid) == WIRE_OK
           && type != WIRE_T_STOP) {
        if (fid == 1 && type == WIRE_T_I32) {
            op->id = wire_read_i32(&r);
            have_id = TRUE;
        } else if (fid == 2 && type == WIRE_T_I32
                   && strcmp(m->name, "scannerGetList") == 0) {
            op->want = wire_read_i32(&r);
        } else {
            wire_skip(&r, type);
        }
    }
    if (r.status != WIRE_OK) {
        struct codec_error err = { WIRE_APP_PROTOCOL_ERROR,
                                   r.error != NULL ? r.error
                                                   : "malformed call",
                                   FALSE };
        size_t off = scan_reply_begin(req);

        codec_write_error(&req->call, req->client_proto, &err, &req->reply);
        scan_reply_end(req, off);
        scan_op_done(op, w);
        return;
    }
    if (!have_id || scan_table_find(w->proxy->scans, op->id, &owner) == NULL) {
        scan_reply_ia(op, w, SCAN_INVALID_ID);
        return;
    }
    if (owner != w) {
        proxy_worker_post(owner, scan_op_run, op);
        return;
    }
    scan_op_run(w, op);
}

/* ---- expiry and shutdown ------------------------------------------------ */

/* Scanners of w that match: idle ones, or all of them (idle < 0). */
static GPtrArray *
scan_owned(struct proxy_worker *w, gint64 idle)
{
    struct scan_table *t = w->proxy->scans;
    gint64 now = proxy_now();
    GPtrArray *found = g_ptr_array_new();
    GHashTableIter it;
    gpointer key, value;

    g_mutex_lock(&t->lock);
    g_hash_table_iter_init(&it, t->by_id);
    while (g_hash_table_iter_next(&it, &key, &value)) {
        struct scanner *sc = value;

        /* only the owner reads its scanners' fields */
        if (sc->owner == w
            && (idle < 0 || (sc->op == NULL && sc->last_used + idle < now))) {
            g_ptr_array_add(found, sc);
        }
    }
    g_mutex_unlock(&t->lock);
    return found;
}

void
scan_worker_stop(struct proxy_worker *w)
{
    GPtrArray *all = scan_owned(w, -1);

    /* their backend scanners would live on until HBase expires them */
    for (guint i = 0; i < all->len; i++) {
        struct scanner *sc = g_ptr_array_index(all, i);

        if (sc->op == NULL) {
            scan_close(sc);
        }
    }
    g_ptr_array_free(all, TRUE);
}

void
scan_worker_start(struct proxy_worker *w)
{
    struct timeval tv = { SCAN_TIMER_MS / 1000, (SCAN_TIMER_MS % 1000) * 1000 };

    event_add(w->scan_timer, &tv);
}

void
scan_timer_cb(evutil_socket_t fd, short what, void *arg)
{
    struct proxy_worker *w = arg;
    gint64 idle = (gint64)w->gen->cfg->scan_scanner_timeout_ms * 1000;
    GPtrArray *expired = scan_owned(w, idle);

    for (guint i = 0; i < expired->len; i++) {
        struct scanner *sc = g_ptr_array_index(expired, i);

        g_message("scanner %d on %s expired after %u ms idle", sc->id,
                  sc->table, w->gen->cfg->scan_scanner_timeout_ms);
        scan_close(sc);
    }
    g_ptr_array_free(expired, TRUE);
}
