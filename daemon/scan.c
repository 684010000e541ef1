/* scan.c: the scan engine: opens the buckets, fetches, merges, expires. */
#include "scan.h"

#include <string.h>

#include <event2/event.h>

#include "backend.h"
#include "config.h"
#include "hbase1.h"
#include "keyviz.h"
#include "legacy.h"
#include "merge.h"
#include "metrics.h"
#include "salt.h"
#include "scanargs.h"
#include "scanbatch.h"
#include "scanfilter.h"
#include "scantab.h"

/*
 * A scan of a salted table is N scans, one per bucket that can hold a
 * matching row, each bounded by [salt|start, salt|stop):
 *
 *   scannerOpen*  --->  scannerOpenWithScan x N, in parallel
 *                        (bounds, filter rewritten per bucket:
 *                        scanargs.c)
 *
 *   bucket 0: [cur batch: r r r r][next batch, in flight or ready]
 *   bucket 1: [cur batch: r r    ][next ...]          tree of the
 *   ...                                               bucket heads,
 *   bucket N: [cur batch: r r r  ][next ...]          by logical key
 *                    |                                (merge.c)
 *   scannerGetList(n) <--- pop the smallest head n times, strip its salt
 *
 * Each bucket holds at most two batches: the one being merged and the
 * next, fetched ahead as soon as the current one is installed, so a
 * client's scannerGetList rarely waits for a round trip, and memory does
 * not depend on table size.  A row may only leave when every unfinished
 * bucket has a head: the one without could hold a smaller row.
 *
 * The batches are the backend's reply bytes, swapped out of the request
 * that fetched them.  Each row is walked once and copied once, straight
 * into the reply the client gets (scanbatch_copy_head; the list header
 * is written for the rows asked and patched at the end).  Unframed, the
 * walk is the resumable scan that finds where the reply ends
 * (req_msg_scan): it marks where each row and its key lie (cur_marks),
 * so that scanbatch_next only reads the key; framed, scanbatch_next
 * walks the row.  Below the engine a batch costs one more copy, out of
 * the connection's input buffer into the request.  Rows whose protocol
 * changes on the way, or whose key is not their first field, are
 * re-encoded field by field (codec_row_result) instead.
 */

/* HBase's message for an unknown, closed or expired scanner. */
#define SCAN_INVALID_ID "scanner ID is invalid"
/* Thrift2's (ThriftHBaseServiceHandler.getScannerRows) */
#define SCAN2_INVALID_ID "Invalid scanner Id"
/* Bytes a scan reply is grown by at most at once (scan_reply_room). */
#define SCAN_REPLY_ROOM_MAX (1u << 20)
/* How often each worker looks for idle scanners. */
#define SCAN_TIMER_MS 1000
/* Rows per bucket fetch when the client gives no caching. */
#define SCAN_DEFAULT_CACHING 100
#define SCAN_MIN_FETCH 16

/*
 * A scanner's life.  Only scan_set_state moves it, and only along these
 * arrows (checked with g_assert):
 *
 *   OPENING --> OPEN --> FAILED
 *      |         |         |
 *      +---------+---------+--> CLOSED
 */
enum scan_state {
    SCAN_OPENING = 0, /* backend opens in flight; no id yet */
    SCAN_OPEN,        /* serving calls */
    SCAN_FAILED,      /* a bucket failed: every call gets the error */
    SCAN_CLOSED,      /* closed or expired: out of the id table,
                               freed when nothing is in flight */
};

static const char *const scan_state_names[] = {
    [SCAN_OPENING] = "opening",
    [SCAN_OPEN] = "open",
    [SCAN_FAILED] = "failed",
    [SCAN_CLOSED] = "closed",
};

/*
 * A bucket's backend scanner.  Only scan_bucket_set_state moves it:
 *
 *   OPENING --> OPEN ------------------------> CLOSED
 *      |        |  ^                             ^
 *      |        v  |                             | (closed meanwhile, or
 *      |       LOST --> WAITING --> REOPENING ---+  nothing left to read)
 *      |        ^                       |
 *      |        +-----------------------+ (the reopen failed: again)
 *      +--> NONE <----------------------+ (no more resumes)
 *
 * LOST: the backend scanner is gone (its connection failed, or the
 * server no longer knows its id) while the client's scanner lives on.
 * The rows already fetched are still served; once they are, the bucket
 * backs off (WAITING) and opens its scan again on a server that is up
 * (REOPENING), from just after the last row it gave (scan_bucket_resume).
 */
enum scan_bucket_state {
    SCAN_B_OPENING = 0, /* its open is in flight */
    SCAN_B_OPEN,        /* backend_id is its backend scanner */
    SCAN_B_NONE,        /* its open failed: there is no backend scanner */
    SCAN_B_LOST,        /* its backend scanner is gone: a resume is owed */
    SCAN_B_WAITING,     /* backing off before the resume's open */
    SCAN_B_REOPENING,   /* the resume's open is in flight */
    SCAN_B_CLOSED,      /* its backend scanner is closed, or its close
                           owed (close_owed) */
};

static const char *const scan_bucket_state_names[] = {
    [SCAN_B_OPENING] = "opening", [SCAN_B_OPEN] = "open",
    [SCAN_B_NONE] = "none",       [SCAN_B_LOST] = "lost",
    [SCAN_B_WAITING] = "waiting", [SCAN_B_REOPENING] = "reopening",
    [SCAN_B_CLOSED] = "closed",
};

enum scan_op_kind {
    SCAN_OP_OPEN = 0,
    SCAN_OP_NEXT,
    SCAN_OP_CLOSE,
};

/* One client call on a scanner. */
struct scan_op {
    enum scan_op_kind kind;
    int32_t id;          /* proxy scanner id (NEXT, CLOSE) */
    int32_t want;        /* rows asked (NEXT) */
    int32_t got;         /* rows written so far */
    size_t frame_at;     /* NEXT: the reply's frame header */
    size_t list_at;      /* NEXT: its list header, written for
                                       want rows and patched at the end */
    struct req *req;     /* the client's request */
    struct worker *home; /* req's worker: finished there */
    gboolean once;       /* Thrift2's getScannerResults: open,
                                       one fetch of want rows, close */
};

/* One bucket's backend scanner and its buffered batches. */
struct scan_bucket {
    uint32_t bucket; /* salt bucket */
    enum scan_bucket_state state;
    int32_t backend_id;    /* backend scanner id once open */
    unsigned fetching:1;   /* a fetch is in flight */
    unsigned last:1;       /* the backend has no rows after next */
    unsigned done:1;       /* no rows left at all */
    unsigned close_owed:1; /* closed while fetching: the close
                                       goes when the fetch is back */
    unsigned next_ready:1; /* next holds a fetched batch */
    unsigned legacy:1;     /* no bucket: the legacy range */
    uint32_t fetch;        /* rows the next fetch asks for */
    struct wire_buf cur;   /* batch being merged (reply bytes) */
    struct wire_buf next;  /* the batch after it */
    struct wire_buf cur_marks, next_marks; /* where their rows lie
                                              (wire_scan_mark), if the
                                              reply came unframed */
    uint32_t next_count;                   /* rows in next */
    struct scanbatch rows;                 /* cur, a row at a time: the head */
    gboolean has_head;
    /* resuming (scan_bucket_resume) */
    struct scanner *sc;        /* owner (the backoff timer's argument) */
    int server;                /* backend server of its scanner */
    struct backend_conn *conn; /* the connection it was opened on
                                  (scan_bucket_conn), or NULL */
    struct wire_buf open_arg;  /* its open's argument struct as sent */
    GByteArray *resume_key;    /* stored key of the last row it gave
                                 before its last resume; NULL: none */
    unsigned skip_key:1;       /* reversed: rows of resume_key come
                                 again first, and are passed over */
    unsigned resumes;          /* resumes so far */
    struct event *timer;       /* backoff before a resume's open */
};

/* A client scanner: one owner (its worker), freed by scanner_free only. */
struct scanner {
    struct scantab_item item; /* id and owner worker: every other
                                       field is touched only there */
    enum scan_state state;
    const struct hbase1_scanner *calls; /* the service's scanner calls */
    const struct salt_table *salt;      /* NULL: one pass-through scanner */
    unsigned stats_id;                  /* its table's metrics slot + 1 */
    char table[128];                    /* for logs */
    int server;                /* backend server of all its scanners */
    struct worker_gen *gen;    /* generation salt points into */
    struct backend_pool *pool; /* pool of that server: kept when a
                                       reload replaces the worker's */
    gint64 last_used;          /* monotonic us, for expiry */
    unsigned inflight;         /* internal requests not back yet */
    /* pass-through */
    int32_t backend_id;
    /* merged */
    uint32_t fetch_rows;  /* rows of each bucket's first fetch */
    uint32_t fetch_max;   /* rows of a fetch, at most */
    int64_t limit;        /* PageFilter rows left; < 0: none */
    GByteArray *page_row; /* logical key of the last row given
                                     * under a limit (batchSize splits a
                                     * row; the page counts it once) */
    gboolean page_done;   /* the limit is reached */
    unsigned nbuckets;
    struct scan_bucket *buckets;
    struct merge merge; /* buckets with a head, by its key */
    unsigned nwaiting;  /* unfinished buckets with no head */
    unsigned nopening;  /* backend opens in flight */
    char *error;        /* why it failed; NULL: it has not */
    gboolean error_retry;
    gboolean error_transport; /* a backend connection failed under
                                       it (metrics: transport) */
    int32_t error_app;        /* an open failed with this
                                       TApplicationException type; -1:
                                       not one */
    /* calls */
    struct scan_op *op; /* being served */
    GQueue queued;      /* struct scan_op *, waiting their turn */
    gboolean pumping;   /* scan_pump is on the stack */
    gboolean pump_again;
    gboolean once;        /* no id: closed after its one fetch */
    gboolean close_asked; /* close once scan_pump returns */
    /* resuming */
    gboolean reversed;     /* high to low: a resume's start is inclusive */
    const char *no_resume; /* static text: why a lost bucket cannot be
                              reopened exactly; NULL: it can */
    unsigned max_resumes;  /* per bucket ([backend] scan_resume_attempts) */
};

static void scan_pump(struct scanner *sc);
static void scan_op_start(struct scanner *sc, struct scan_op *op);
static void scan_reply_invalid(struct scan_op *op, struct worker *w);
static void scan_reply_void(struct scan_op *op, struct worker *w);

/* ---- states ------------------------------------------------------------- */

/* Whether a scanner may go from one state to the other. */
static gboolean
scan_state_ok(enum scan_state from, enum scan_state to)
{
    switch (to) {
    case SCAN_OPEN: return from == SCAN_OPENING;
    case SCAN_FAILED: return from == SCAN_OPEN;
    case SCAN_CLOSED: return from != SCAN_CLOSED;
    default: return FALSE;
    }
}

/* The one place a scanner changes state. */
static void
scan_set_state(struct scanner *sc, enum scan_state to)
{
    if (!scan_state_ok(sc->state, to)) {
        g_critical("scanner %d on %s: no way from %s to %s", sc->item.id,
                   sc->table, scan_state_names[sc->state],
                   scan_state_names[to]);
        g_assert_not_reached();
    }
    sc->state = to;
}

/* Whether a bucket may go from one state to the other. */
static gboolean
scan_bucket_state_ok(enum scan_bucket_state from, enum scan_bucket_state to)
{
    switch (to) {
    case SCAN_B_OPEN:
        return from == SCAN_B_OPENING || from == SCAN_B_REOPENING;
    case SCAN_B_NONE:
        return from == SCAN_B_OPENING || from == SCAN_B_REOPENING ||
               from == SCAN_B_LOST || from == SCAN_B_WAITING;
    case SCAN_B_LOST: return from == SCAN_B_OPEN || from == SCAN_B_REOPENING;
    case SCAN_B_WAITING: return from == SCAN_B_LOST;
    case SCAN_B_REOPENING: return from == SCAN_B_WAITING;
    case SCAN_B_CLOSED:
        return from == SCAN_B_OPEN || from == SCAN_B_LOST ||
               from == SCAN_B_WAITING || from == SCAN_B_REOPENING;
    default: return FALSE;
    }
}

/* The one place a bucket's backend scanner changes state. */
static void
scan_bucket_set_state(struct scan_bucket *b, enum scan_bucket_state to)
{
    if (!scan_bucket_state_ok(b->state, to)) {
        g_critical("scan bucket %u: no way from %s to %s", b->bucket,
                   scan_bucket_state_names[b->state],
                   scan_bucket_state_names[to]);
        g_assert_not_reached();
    }
    b->state = to;
}

/* ---- the scanner ------------------------------------------------------- */

static struct scanner *
scanner_new(struct worker *w, const struct codec_call *call,
            struct scan_op *op, const struct scanargs *a)
{
    struct scanner *sc = g_new0(struct scanner, 1);

    sc->item.owner = w;
    /* g_new0: sc->state is SCAN_OPENING */
    sc->calls = call->method->scanner;
    sc->salt = call->salt;
    sc->stats_id = call->stats_id;
    sc->backend_id = -1;
    sc->limit = -1;
    sc->error_app = -1;
    sc->op = op;
    g_queue_init(&sc->queued);
    g_snprintf(sc->table, sizeof(sc->table), "%.*s",
               (int)MIN(a->table_len, 127), (const char *)a->table);
    sc->pool = w->pool;
    /* sc points into its request's generation and pins its pool: both
     * live until it is freed (proxy_worker_gc) */
    sc->gen = op->req->gen;
    worker_gen_use(w, sc->gen);
    sc->pool->scanners++;
    /* a DOWN server would fail the scan before it starts */
    sc->server = backend_pool_pick_server(sc->pool, call->service->id);
    return sc;
}

/* The one way a scanner goes: calls still queued are told it is gone. */
static void
scanner_free(struct scanner *sc)
{
    struct scan_op *op;

    while ((op = g_queue_pop_head(&sc->queued)) != NULL) {
        scan_reply_invalid(op, sc->item.owner);
    }
    for (unsigned i = 0; i < sc->nbuckets; i++) {
        struct scan_bucket *b = &sc->buckets[i];

        wire_buf_free(&b->cur);
        wire_buf_free(&b->next);
        wire_buf_free(&b->cur_marks);
        wire_buf_free(&b->next_marks);
        wire_buf_free(&b->open_arg);
        g_clear_pointer(&b->resume_key, g_byte_array_unref);
        /* at exit the loop may be gone: the event goes with it */
        if (b->timer != NULL && sc->pool != NULL) {
            event_free(b->timer);
        }
    }
    g_free(sc->buckets);
    merge_clear(&sc->merge);
    g_free(sc->error);
    g_clear_pointer(&sc->page_row, g_byte_array_unref);
    if (sc->pool != NULL) {
        worker_gen_unuse(sc->item.owner, sc->gen);
        sc->pool->scanners--;
    }
    g_free(sc);
}

/* Process exit: the workers are gone, nobody waits for an answer. */
static void
scanner_free_at_exit(struct scantab_item *item)
{
    /* item is the scanner's first member */
    struct scanner *sc = (struct scanner *)item;

    g_queue_clear_full(&sc->queued, g_free);
    g_clear_pointer(&sc->op, g_free);
    /* pools and generations went with the workers */
    sc->pool = NULL;
    scanner_free(sc);
}

struct scantab *
scan_table_new(void)
{
    return scantab_new();
}

void
scan_table_free(struct scantab *t)
{
    g_return_if_fail(t != NULL);
    scantab_free(t, scanner_free_at_exit);
}

unsigned
scan_open_count(struct scantab *t)
{
    g_return_val_if_fail(t != NULL, 0);
    return scantab_count(t);
}

/* ---- answering the client ------------------------------------------------- */

static void
scan_finish_post(struct worker *w, void *arg)
{
    worker_req_finish(w, arg);
}

/* req's reply is written: finish it on its own worker. */
static void
scan_op_done(struct scan_op *op, struct worker *w)
{
    if (op->home == w) {
        worker_req_finish(w, op->req);
    } else {
        worker_post(op->home, scan_finish_post, op->req);
    }
    g_free(op);
}

/* Answers op with err (codec_write_error: the exception its method
 * declares, else a TApplicationException). */
static void
scan_reply_error(struct scan_op *op, struct worker *w,
                 const struct codec_error *err)
{
    struct req *req = op->req;
    size_t off = req_reply_begin(req);

    codec_write_error(&req->call, req->client_proto, err, &req->reply);
    req_reply_end(req, off);
    scan_op_done(op, w);
}

/*
 * A call on a scanner id that is not open (unknown, closed, expired):
 * Thrift1's IllegalArgument, or Thrift2's, whose closeScanner returns
 * normally for such an id (HBase 2.x: it may have expired).
 */
static void
scan_reply_invalid(struct scan_op *op, struct worker *w)
{
    const struct hbase1_service *svc = op->req->call.service;
    /* every call on an id (scannerGet*, scannerClose, getScannerRows,
     * closeScanner) declares the IllegalArgument */
    struct codec_error err = { WIRE_APP_INTERNAL_ERROR, SCAN_INVALID_ID,
                               CODEC_ANSWER_IA };

    if (svc != NULL && svc->id == HBASE1_SERVICE_THRIFT2) {
        if (op->kind == SCAN_OP_CLOSE) {
            scan_reply_void(op, w);
            return;
        }
        err.message = SCAN2_INVALID_ID;
    }
    scan_reply_error(op, w, &err);
}

static void
scan_reply_io(struct scan_op *op, struct worker *w, const char *msg,
              gboolean can_retry)
{
    struct codec_error err = { WIRE_APP_INTERNAL_ERROR, msg, CODEC_ANSWER_IO,
                               can_retry != FALSE };

    scan_reply_error(op, w, &err);
}

/* The IOError of a failed scanner (sc->error). */
static void
scan_reply_failed(const struct scanner *sc, struct scan_op *op,
                  struct worker *w)
{
    if (sc->error_transport) {
        op->req->err_kind = METRICS_ERR_TRANSPORT;
    }
    scan_reply_io(op, w, sc->error, sc->error_retry);
}

/* What op's slow-call line needs of sc: its server and buckets. */
static void
scan_op_note(const struct scanner *sc, struct scan_op *op)
{
    op->req->backend_name = backend_pool_server_name(sc->pool, sc->server);
    for (unsigned i = 0; i < sc->nbuckets; i++) {
        req_note_bucket(op->req, sc->buckets[i].bucket, sc->buckets[i].legacy);
    }
}

static void
scan_reply_i32(struct scan_op *op, struct worker *w, int32_t v)
{
    size_t off = req_reply_begin(op->req);

    codec_write_i32_reply(&op->req->call, op->req->client_proto, v,
                          &op->req->reply);
    req_reply_end(op->req, off);
    scan_op_done(op, w);
}

static void
scan_reply_void(struct scan_op *op, struct worker *w)
{
    size_t off = req_reply_begin(op->req);

    codec_write_void_reply(&op->req->call, op->req->client_proto,
                           &op->req->reply);
    req_reply_end(op->req, off);
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
scan_refuse(struct scan_op *op, struct worker *w, const char *why)
{
    g_autofree char *msg =
        g_strdup_printf("java.lang.IllegalArgumentException: %s", why);

    scan_reply_io(op, w, msg, FALSE);
}

/*
 * A bucket's open failed with a TApplicationException (HBase: an
 * exception its handler does not catch, such as a filter ParseFilter
 * rejects): the client gets the same, as from an unsalted table.  The
 * server names the method in "Internal error processing NAME": the one
 * the client called, not the bucket's open.
 */
static void
scan_reply_app(struct scan_op *op, struct worker *w, int32_t type,
               const char *msg)
{
    static const char internal[] = "Internal error processing ";
    struct codec_error err = { .app_type = type, .answer = CODEC_ANSWER_APP };

    if (g_str_has_prefix(msg, internal)) {
        g_snprintf(err.text, sizeof(err.text), "%s%s", internal,
                   op->req->call.name);
        err.message = err.text;
    } else {
        err.message = msg;
    }
    scan_reply_error(op, w, &err);
}

/* ---- internal requests to the backend ------------------------------------- */

/* An internal request of sc calling method m, its message begun in
 * w->scratch. */
static struct req *
scan_sub_begin(struct scanner *sc, int server, req_sink_fn sink, uint32_t tag,
               const struct hbase1_method *m, struct wire_writer *wr,
               size_t *frame)
{
    struct worker *w = sc->item.owner;
    const struct worker_settings *set = w->startup;
    struct req *sub = worker_req_get(w);

    sub->sink = sink;
    sub->sink_arg = sc;
    sub->sink_tag = tag;
    sub->server = server;
    sub->started = req_now(); /* its wait for a connection is counted */
    sub->backend_seqid = worker_next_seqid(w);
    memcpy(sub->call.name, m->name, m->name_len + 1u);
    sub->call.name_len = m->name_len;
    wire_buf_clear(&w->scratch);
    *frame = set->backend_framed ? wire_frame_begin(&w->scratch) : 0;
    wire_writer_init(wr, set->backend_proto, &w->scratch);
    wire_write_msg_begin(wr, (const uint8_t *)m->name, m->name_len, WIRE_CALL,
                         sub->backend_seqid);
    return sub;
}

/* Sends sub, behind after when it is not NULL; returns the connection
 * it waits on, NULL when it was answered at once (its sink has run). */
static struct backend_conn *
scan_sub_send(struct scanner *sc, struct req *sub, size_t frame,
              struct backend_conn *after)
{
    struct worker *w = sc->item.owner;

    if (w->startup->backend_framed) {
        wire_frame_end(&w->scratch, frame);
    }
    sc->inflight++;
    /* may call the sink at once, when no backend can take it */
    return backend_submit(sc->pool, sub, after, w->scratch.data,
                          w->scratch.len, FALSE);
}

/* Sends a call on a backend scanner: its id, and rows when m takes a
 * count (a close takes none: rows is -1 there); behind after if set. */
static void
scan_sub_id_call(struct scanner *sc, int server, struct backend_conn *after,
                 req_sink_fn sink, uint32_t tag, const struct hbase1_method *m,
                 int32_t backend_id, int32_t rows)
{
    struct wire_writer wr;
    size_t frame;
    struct req *sub = scan_sub_begin(sc, server, sink, tag, m, &wr, &frame);

    scanargs_write_id(m, backend_id, rows, &wr);
    scan_sub_send(sc, sub, frame, after);
}

/*
 * The connection b's backend scanner was opened on, while it takes
 * requests: its fetches and its close follow its open there.  Behind one
 * address may be several server processes (a load balancer, or a server
 * restarting while the old one drains its connections): a scanner id is
 * valid only on the process that made it.  NULL: any connection of its
 * server (the one it was opened on is gone).
 */
static struct backend_conn *
scan_bucket_conn(const struct scanner *sc, const struct scan_bucket *b)
{
    return b->conn != NULL && backend_conn_takes(sc->pool, b->conn) ? b->conn
                                                                    : NULL;
}

/*
 * Reads the header of an internal request's reply and enters its result
 * struct.  On failure fills why (transport errors, exceptions, an IOError
 * or IllegalArgument field) and returns FALSE.  On success the reader is
 * at the first field of the result, described by *type and *fid.
 */
static gboolean
scan_sub_reply(struct scanner *sc, struct req *sub, struct wire_reader *r,
               uint8_t *type, int16_t *fid, char **why, gboolean *can_retry,
               int32_t *app_type)
{
    const struct worker *w = sc->item.owner;
    struct wire_msg m;

    *can_retry = TRUE;
    *app_type = -1;
    if (sub->failed) {
        *why = g_strndup((const char *)sub->raw.data, sub->raw.len);
        *can_retry = sub->can_retry;
        return FALSE;
    }
    wire_reader_init(r, w->startup->backend_proto, sub->raw.data, sub->raw.len,
                     TRUE, &w->reply_limits);
    if (wire_read_msg_begin(r, &m) != WIRE_OK ||
        m.seqid != sub->backend_seqid || m.name_len != sub->call.name_len ||
        memcmp(m.name, sub->call.name, m.name_len) != 0) {
        *why = g_strdup_printf("hbase-salt-proxy: bad reply to %s from "
                               "the backend: %s",
                               sub->call.name,
                               r->error != NULL ? r->error : "out of step");
        return FALSE;
    }
    if (wire_read_struct_begin(r) != WIRE_OK ||
        wire_read_field(r, type, fid) != WIRE_OK) {
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

        /* what a client reading HBase's own exception sees: canRetry
         * when the IOError says so, else false (an IllegalArgument, an
         * IOError of a server older than the field) */
        *can_retry = FALSE;
        if (m.type == WIRE_EXCEPTION) {
            /* already inside the exception struct */
            t2 = *type;
            f2 = *fid;
        } else if (*type == WIRE_T_STRUCT &&
                   wire_read_struct_begin(r) == WIRE_OK) {
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
            } else if (f2 == 2 && t2 == WIRE_T_I32 &&
                       m.type == WIRE_EXCEPTION) {
                *app_type = wire_read_i32(r);
            } else {
                wire_skip(r, t2);
            }
            wire_read_field(r, &t2, &f2);
        }
        *why = text != NULL ? g_strndup((const char *)text, tlen)
                            : g_strdup("backend error");
        if (m.type == WIRE_EXCEPTION) {
            *can_retry = FALSE;
            if (*app_type < 0) {
                *app_type = WIRE_APP_UNKNOWN;
            }
        }
        return FALSE;
    }
    return TRUE;
}

/* What held sc (a request, a timer) let go: FALSE when sc is closed,
 * and freed if nothing else holds it. */
static gboolean
scan_release(struct scanner *sc)
{
    sc->inflight--;
    if (sc->state == SCAN_CLOSED) {
        if (sc->inflight == 0) {
            scanner_free(sc);
        }
        return FALSE;
    }
    return TRUE;
}

/* An internal request came back: account for it, maybe free sc. */
static gboolean
scan_sub_return(struct scanner *sc, struct req *sub)
{
    worker_req_put(sc->item.owner, sub);
    return scan_release(sc);
}

/* ---- closing ------------------------------------------------------------ */

static void
scan_close_sink(struct worker *w, struct req *sub)
{
    scan_sub_return(sub->sink_arg, sub);
}

static void
scan_bucket_close_send(struct scanner *sc, struct scan_bucket *b)
{
    scan_sub_id_call(sc, b->server, scan_bucket_conn(sc, b), scan_close_sink,
                     b->bucket, sc->calls->close, b->backend_id, -1);
}

static void
scan_bucket_close(struct scanner *sc, struct scan_bucket *b)
{
    if (b->state == SCAN_B_LOST || b->state == SCAN_B_WAITING ||
        b->state == SCAN_B_REOPENING) {
        /* no backend scanner now; a reopen in flight closes the one it
         * gets (scan_reopen_sink), a timer finds the bucket closed */
        scan_bucket_set_state(b, SCAN_B_CLOSED);
        return;
    }
    if (b->state == SCAN_B_OPEN) {
        scan_bucket_set_state(b, SCAN_B_CLOSED);
        if (b->fetching) {
            /* HBase's ClientScanner is not thread-safe: a close run
             * beside the read on another connection of the pool breaks
             * that read (NullPointerException in loadCache) or hangs it.
             * The close goes when the read is back (scan_fetch_sink). */
            b->close_owed = 1;
            return;
        }
        scan_bucket_close_send(sc, b);
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
        scantab_remove(sc->item.owner->scans, sc->item.id);
    }
    g_debug("scanner %d on %s closed, was %s", sc->item.id, sc->table,
            scan_state_names[sc->state]);
    scan_set_state(sc, SCAN_CLOSED);
    /* a close in flight keeps sc alive until it returns */
    sc->inflight++;
    if (sc->salt == NULL) {
        if (sc->backend_id >= 0) {
            scan_sub_id_call(sc, sc->server, NULL, scan_close_sink, 0,
                             sc->calls->close, sc->backend_id, -1);
        }
    } else {
        for (unsigned i = 0; i < sc->nbuckets; i++) {
            scan_bucket_close(sc, &sc->buckets[i]);
        }
    }
    sc->inflight--;
    if (sc->inflight == 0) {
        scanner_free(sc);
    }
}

/* ---- opening -------------------------------------------------------------- */

static void scan_fetch(struct scanner *sc, struct scan_bucket *b);
static void scan_bucket_resume(struct scanner *sc, struct scan_bucket *b);
static const char *scan_bucket_lost(struct scanner *sc, struct scan_bucket *b,
                                    const struct req *sub, const char *why);
static gboolean scan_scanner_lost(const struct req *sub, const char *why);
static void scan_open_sink(struct worker *w, struct req *sub);

/* Every bucket's open came back: answer the client, start fetching. */
static void
scan_opened(struct scanner *sc, struct scan_op *op)
{
    struct worker *w = sc->item.owner;

    scan_op_note(sc, op);
    if (sc->error != NULL && sc->error_app >= 0) {
        scan_reply_app(op, w, sc->error_app, sc->error);
        scan_close(sc);
        return;
    }
    if (sc->error != NULL) {
        scan_reply_failed(sc, op, w);
        scan_close(sc);
        return;
    }
    scan_set_state(sc, SCAN_OPEN);
    sc->last_used = req_now();
    if (!sc->once) {
        scantab_add(w->scans, &sc->item);
        scan_reply_i32(op, w, sc->item.id);
    }
    /* every bucket waits for its first batch */
    sc->nwaiting = sc->nbuckets;
    for (unsigned i = 0; i < sc->nbuckets; i++) {
        scan_fetch(sc, &sc->buckets[i]);
    }
    if (sc->once) {
        /* the rows go straight into the reply to the open itself; no
         * client ever sees an id of this scanner */
        op->kind = SCAN_OP_NEXT;
        scan_op_start(sc, op);
    }
}

/*
 * A bucket's first open failed (sub, why): sends it again, at once, to a
 * server that is up when its connection was lost (as a resume with no row
 * given, scan_bucket_resume), within scan_resume_attempts.  FALSE: the
 * failure stands.
 */
static gboolean
scan_open_again(struct scanner *sc, struct scan_bucket *b,
                const struct req *sub, const char *why)
{
    struct wire_writer wr;
    size_t frame;
    struct req *again;

    if (sc->salt == NULL || sc->error != NULL ||
        !scan_scanner_lost(sub, why) || b->resumes >= sc->max_resumes) {
        return FALSE;
    }
    b->resumes++;
    b->server = backend_pool_pick_server(sc->pool,
                                         sc->calls->open->service->id);
    again = scan_sub_begin(sc, b->server, scan_open_sink,
                           (uint32_t)(b - sc->buckets), sc->calls->open, &wr,
                           &frame);
    wire_buf_append(&sc->item.owner->scratch, b->open_arg.data,
                    b->open_arg.len);
    g_message("scanner on %s: bucket %u: open sent again (%u)", sc->table,
              b->bucket, b->resumes);
    /* the scanner is OPENING: held by the request in flight */
    b->conn = scan_sub_send(sc, again, frame, NULL);
    return TRUE;
}

static void
scan_open_sink(struct worker *w, struct req *sub)
{
    struct scanner *sc = sub->sink_arg;
    struct wire_reader r;
    uint8_t type;
    int16_t fid;
    g_autofree char *why = NULL;
    gboolean retry;
    int32_t app_type;
    struct scan_op *op = sc->op;

    if (scan_sub_reply(sc, sub, &r, &type, &fid, &why, &retry, &app_type) &&
        type == WIRE_T_I32) {
        int32_t id = wire_read_i32(&r);

        if (sc->salt == NULL) {
            sc->backend_id = id;
        } else {
            sc->buckets[sub->sink_tag].backend_id = id;
            scan_bucket_set_state(&sc->buckets[sub->sink_tag], SCAN_B_OPEN);
        }
    } else if (scan_open_again(sc, &sc->buckets[sub->sink_tag], sub, why)) {
        /* still opening: nopening counts it */
        scan_sub_return(sc, sub);
        return;
    } else {
        if (sc->salt != NULL) {
            scan_bucket_set_state(&sc->buckets[sub->sink_tag], SCAN_B_NONE);
        }
        if (sc->error == NULL) {
            sc->error = g_steal_pointer(&why);
            sc->error_retry = retry;
            sc->error_transport = sub->failed;
            sc->error_app = app_type;
        }
    }
    scan_sub_return(sc, sub);
    if (--sc->nopening == 0) {
        sc->op = NULL;
        scan_opened(sc, op);
    }
}

/* Re-sends the client's open as it is (unsalted table, one scanner). */
static void
scan_open_pass(struct scanner *sc, struct wire_reader *body)
{
    struct wire_writer wr;
    size_t frame;
    struct req *sub;

    sc->nopening = 1;
    sub = scan_sub_begin(sc, sc->server, scan_open_sink, 0,
                         sc->op->req->call.method, &wr, &frame);
    wire_copy(body, &wr, WIRE_T_STRUCT);
    scan_sub_send(sc, sub, frame, NULL);
}

/* Rows of each bucket's fetches, from the client's caching. */
static void
scan_fetch_sizes(struct scanner *sc, const struct scanargs *a,
                 const struct config *cfg)
{
    uint32_t caching = a->has_caching && a->caching > 0 ? (uint32_t)a->caching
                                                        : SCAN_DEFAULT_CACHING;
    uint32_t per = (uint32_t)(((uint64_t)caching * 3 / 2 + sc->nbuckets - 1) /
                              sc->nbuckets);

    sc->fetch_rows = MIN(MAX(per, MIN(SCAN_MIN_FETCH, caching)),
                         cfg->scan_caching_max);
    if (sc->fetch_rows == 0) {
        sc->fetch_rows = 1;
    }
    /* A short scan reads a slice of each bucket; a long one should not
     * pay N times the calls of an unsalted scan: each bucket starts at
     * its share of caching and doubles per fetch up to caching. */
    sc->fetch_max = MAX(MIN(MAX(caching, SCAN_DEFAULT_CACHING),
                            cfg->scan_caching_max),
                        sc->fetch_rows);
}

/* The physical bounds of a scan's legacy keys (legacy.h). */
struct scan_legacy {
    const uint8_t *start, *stop;
    size_t start_len, stop_len;
    uint8_t *buf; /* a prefix's successor, g_free */
};

/* Whether the scan can meet a legacy key of the table, and where: the
 * client's bounds before scanargs_fit_bounds (legacy keys are stored
 * unsalted, up to HBase's own limit), narrowed by the rule. */
static gboolean
scan_legacy_bounds(const struct scanner *sc, const struct scanargs *a,
                   gboolean reversed, struct scan_legacy *lg)
{
    lg->start = a->start;
    lg->start_len = a->start_len;
    if (a->prefix) {
        lg->buf = g_memdup2(a->start, a->start_len);
        lg->stop = lg->buf;
        lg->stop_len = salt_successor(lg->buf, a->start_len);
    } else {
        lg->stop = a->stop;
        lg->stop_len = a->has_stop ? a->stop_len : 0;
    }
    return legacy_scan_bounds(&sc->salt->legacy, reversed, &lg->start,
                              &lg->start_len, &lg->stop, &lg->stop_len);
}

/* Opens one backend scanner per bucket read (only, when single; none
 * unless salted), and one for the legacy range when lg is set, all at
 * once; the last one back answers the client. */
static void
scan_open_buckets(struct scanner *sc, const struct scanargs *a,
                  gboolean reversed, const struct scanfilter *filter,
                  gboolean salted, gboolean single, uint32_t only,
                  const struct scan_legacy *lg)
{
    struct scanargs_bucket ab = { .salt = sc->salt, .filter = filter };
    unsigned nsalted = !salted ? 0 : single ? 1 : sc->salt->buckets;

    sc->nbuckets = nsalted + (lg != NULL ? 1 : 0);
    metrics_scan_open(sc->item.owner->metrics, sc->nbuckets);
    sc->buckets = g_new0(struct scan_bucket, sc->nbuckets);
    merge_init(&sc->merge, sc->nbuckets, reversed);
    scan_fetch_sizes(sc, a, sc->item.owner->gen->cfg);
    ab.caching = sc->fetch_rows;

    sc->nopening = sc->nbuckets;
    /* an open failing at once (no server up) must not free sc under us */
    sc->inflight++;
    for (unsigned i = 0; i < sc->nbuckets; i++) {
        struct scan_bucket *b = &sc->buckets[i];
        struct wire_writer wr;
        size_t frame, arg_at;
        struct req *sub;

        b->fetch = sc->fetch_rows;
        if (i == nsalted) {
            b->legacy = 1;
            b->bucket = sc->salt->buckets;
            scanbatch_init_legacy(&b->rows, sc->salt, sc->calls->key);
            ab.legacy = TRUE;
            ab.legacy_start = lg->start;
            ab.legacy_start_len = lg->start_len;
            ab.legacy_stop = lg->stop;
            ab.legacy_stop_len = lg->stop_len;
        } else {
            b->bucket = single ? only : i;
            scanbatch_init(&b->rows, sc->salt, b->bucket, sc->calls->key);
        }
        metrics_bucket_request(sc->item.owner->metrics, sc->salt, sc->stats_id,
                               b->bucket, 1);
        wire_buf_init(&b->cur);
        wire_buf_init(&b->next);
        wire_buf_init(&b->cur_marks);
        wire_buf_init(&b->next_marks);
        b->sc = sc;
        b->server = sc->server;
        wire_buf_init(&b->open_arg);
        sub = scan_sub_begin(sc, b->server, scan_open_sink, i, sc->calls->open,
                             &wr, &frame);
        ab.bucket = b->bucket;
        arg_at = wr.buf->len;
        scanargs_write_open(a, sc->calls, &ab, &wr);
        /* kept for a resume: the same scan from another row */
        wire_buf_append(&b->open_arg, wr.buf->data + arg_at,
                        wr.buf->len - arg_at);
        /* sc is held (inflight) across the loop */
        b->conn = scan_sub_send(sc, sub, frame, NULL);
    }
    g_debug("scan of %s: %u bucket(s)%s, %u rows per fetch", sc->table,
            nsalted, lg != NULL ? " and its legacy range" : "",
            sc->fetch_rows);
    /* Every open may have failed at once: the last one answered the
     * client and closed sc, which our guard kept alive, so freeing it
     * falls to us. */
    if (--sc->inflight == 0 && sc->state == SCAN_CLOSED) {
        scanner_free(sc);
    }
}

static void
scan_open(struct worker *w, struct scan_op *op, const uint8_t *msg, size_t len)
{
    struct req *req = op->req;
    struct scanner *sc;
    struct wire_reader r, body;
    struct wire_msg m;
    struct scanargs a;
    g_autoptr(GError) error = NULL;
    g_autofree uint8_t *start_buf = NULL;
    g_autofree uint8_t *stop_buf = NULL;
    struct scanfilter *filter = NULL;
    uint32_t only = 0;
    gboolean single = FALSE, parsed, reversed, salted, has_legacy;
    struct scan_legacy lg = { 0 };
    unsigned nstreams;

    wire_reader_init(&r, req->client_proto, msg, len, TRUE, &w->client_limits);
    wire_read_msg_begin(&r, &m);
    body = r;
    parsed = scanargs_parse(&a, req->call.method, &r);
    /* unsalted, a call with a field twice goes on as it came: HBase reads
     * it as it always does (the codec refused a second table name) */
    if (!parsed || (a.repeated != NULL && req->call.salt != NULL)) {
        struct codec_error err = { WIRE_APP_PROTOCOL_ERROR, a.repeated,
                                   CODEC_ANSWER_APP };

        if (!parsed) {
            err.message = r.error != NULL ? r.error : "malformed call";
        }
        scan_reply_error(op, w, &err);
        return;
    }
    if (req->call.salt != NULL && (a.start_len > SALT_HBASE_MAX_ROW ||
                                   a.stop_len > SALT_HBASE_MAX_ROW)) {
        /* HBase's Scan refuses such a bound with an exception its
         * handler does not catch: the answer an unsalted table gives */
        struct codec_error err = { WIRE_APP_INTERNAL_ERROR, NULL,
                                   CODEC_ANSWER_APP };

        g_snprintf(err.text, sizeof(err.text), "Internal error processing %s",
                   req->call.name);
        err.message = err.text;
        scan_reply_error(op, w, &err);
        return;
    }

    if (req->call.salt != NULL && a.has_filter_bytes && a.has_filter) {
        /* one of the two wins on the server; which one is rewritten,
         * counted and merged for must not be a guess */
        scan_refuse(op, w,
                    "hbase-salt-proxy: filterString and filterBytes "
                    "together on a salted table are not supported");
        return;
    }
    op->want = a.nrows;
    sc = scanner_new(w, &req->call, op, &a);
    sc->once = op->once;
    sc->max_resumes = w->gen->cfg->scan_resume_attempts;
    if (a.batch.set) {
        struct wire_reader br = a.batch.at;

        if (wire_read_i32(&br) > 0) {
            sc->no_resume = "batchSize splits its rows, and the cells of a "
                            "row that were not read yet cannot be selected "
                            "exactly";
        }
    }
    if (sc->salt == NULL) {
        scan_open_pass(sc, &body);
        return;
    }

    reversed = a.reversed && !a.prefix;
    sc->reversed = reversed;
    /* forward-looking salting: the legacy keys are one more range */
    has_legacy = sc->salt->legacy.kind != LEGACY_NONE &&
                 scan_legacy_bounds(sc, &a, reversed, &lg);
    salted = scanargs_fit_bounds(&a, salt_max_row(sc->salt), &start_buf,
                                 &stop_buf);
    if (!salted && !has_legacy) {
        /* no row the table can store is in range: a scanner with no
         * bucket to read, whose first read is its end */
        g_free(lg.buf);
        metrics_scan_open(w->metrics, 0);
        sc->op = NULL;
        scan_opened(sc, op);
        return;
    }

    /* which buckets can hold a row, and each one's filter */
    if (!salted) {
        single = FALSE;
    } else if (a.prefix) {
        single = salt_prefix_bucket(sc->salt, a.start, a.start_len, &only);
    } else {
        single = salt_fixed_bucket(sc->salt, reversed, a.start, a.start_len,
                                   a.stop, a.has_stop ? a.stop_len : 0, &only);
    }
    if (sc->salt->buckets == 1) {
        /* one bucket: nothing to merge, every filter keeps its meaning */
        single = TRUE;
        only = 0;
    }
    if (a.has_filter || a.has_filter_bytes) {
        filter = a.has_filter
                     ? scanfilter_new(a.filter, a.filter_len, sc->salt,
                                      reversed,
                                      (const char *const *)
                                          w->gen->cfg->custom_filters,
                                      &error)
                     : scanfilter_new_pb(a.filter_bytes, a.filter_bytes_len,
                                         sc->salt, reversed,
                                         (const char *const *)w->gen->cfg
                                             ->custom_filter_classes,
                                         &error);
        if (filter == NULL) {
            /* a filter whose meaning salting would change, or bytes HBase
             * itself refuses: answered as HBase would */
            char text[CODEC_ERROR_TEXT];
            gboolean retry;

            g_free(lg.buf);
            codec_filter_refusal(error, text, sizeof(text), &retry);
            scan_reply_io(op, w, text, retry);
            scanner_free(sc);
            return;
        }
        sc->limit = scanfilter_page_limit(filter);
        if (scanfilter_has_page(filter)) {
            sc->no_resume = "a PageFilter counts the rows of each backend "
                            "scanner, and one opened again would count "
                            "from zero";
        }
        if (!single) {
            single = scanfilter_single_bucket(filter, &only);
        }
        /* each range drops the rows the other side owns, after a
         * backend PageFilter counted them: the merge alone counts */
        if (sc->salt->legacy.kind != LEGACY_NONE) {
            scanfilter_lift_page(filter);
        }
    }
    if (a.has_limit && a.limit > 0 &&
        (sc->limit < 0 || sc->limit > (int64_t)a.limit)) {
        /* TScan.limit: each bucket reads at most that many rows, and the
         * merge stops after that many, batchSize's parts of a row being
         * one row, as HBase counts them */
        sc->limit = a.limit;
    }
    /* with forward-looking salting each range drops the rows the other
     * owns after a backend limit counted them: the merge alone counts */
    a.drop_limit = sc->salt->legacy.kind != LEGACY_NONE;
    if (sc->limit >= 0) {
        sc->page_row = g_byte_array_new();
    }
    nstreams = (salted ? (single ? 1 : sc->salt->buckets) : 0) +
               (has_legacy ? 1 : 0);
    if (filter != NULL && nstreams > 1 &&
        !scanfilter_multi_bucket_ok(filter)) {
        g_free(lg.buf);
        scan_refuse(op, w, scanfilter_multi_bucket_why(filter));
        scanfilter_free(filter);
        scanner_free(sc);
        return;
    }
    scan_open_buckets(sc, &a, reversed, filter, salted, single, only,
                      has_legacy ? &lg : NULL);
    scanfilter_free(filter);
    g_free(lg.buf);
}

/* ---- merging ------------------------------------------------------------ */

/* The key visualizer's count of b's head row, handed back as it came. */
static void
scan_keyviz_row(struct scanner *sc, const struct scan_bucket *b)
{
    struct keyviz_worker *kw = sc->item.owner->metrics->kv;
    struct codec_key_note n;

    if (kw == NULL) {
        return;
    }
    codec_key_note_fill(&n, sc->salt, CODEC_KEY_ROW,
                        b->rows.legacy ? sc->salt->buckets : b->bucket,
                        b->rows.key, b->rows.key_len);
    n.stats_id = sc->stats_id;
    n.bytes = (uint32_t)MIN(b->rows.head_len, G_MAXUINT32);
    keyviz_note(kw, &n);
}

/* Moves b's head to its next row in cur; FALSE when it has none. */
static gboolean
scan_bucket_advance(struct scanner *sc, struct scan_bucket *b)
{
    scanbatch_status_t st;

    while ((st = scanbatch_next(&b->rows)) == SCANBATCH_ROW && b->skip_key) {
        /* a reversed resume starts at the row it gave last, inclusive */
        if (b->rows.phys_len != b->resume_key->len ||
            memcmp(b->rows.phys, b->resume_key->data, b->rows.phys_len) != 0) {
            b->skip_key = 0;
            break;
        }
    }
    switch (st) {
    case SCANBATCH_ROW: return TRUE;
    case SCANBATCH_MALFORMED:
        g_free(sc->error);
        sc->error = g_strdup_printf("hbase-salt-proxy: malformed row "
                                    "from the backend scanning %s",
                                    sc->table);
        scan_set_state(sc, SCAN_FAILED);
        return FALSE;
    default: return FALSE;
    }
}

/* Makes next the current batch, before its first row. */
static void
scan_bucket_install(struct scanner *sc, struct scan_bucket *b)
{
    const struct worker *w = sc->item.owner;
    struct wire_buf tmp = b->cur, tmarks = b->cur_marks;

    b->cur = b->next;
    b->next = tmp;
    wire_buf_clear(&b->next);
    b->cur_marks = b->next_marks;
    b->next_marks = tmarks;
    wire_buf_clear(&b->next_marks);
    b->next_ready = 0;
    /* scan_fetch_sink checked the header */
    scanbatch_load(&b->rows, w->startup->backend_proto, b->cur.data,
                   b->cur.len, &w->reply_limits,
                   (const struct wire_scan_mark *)b->cur_marks.data,
                   b->cur_marks.len / sizeof(struct wire_scan_mark));
    if (b->next_count == 0 && b->last) {
        b->done = 1;
    }
}

/* Gives b a head if it can; keeps the merge and the waiting count right. */
static void
scan_bucket_refill(struct scanner *sc, struct scan_bucket *b, unsigned bi)
{
    for (;;) {
        if (scan_bucket_advance(sc, b)) {
            b->has_head = TRUE;
            merge_push(&sc->merge, bi, b->rows.key, b->rows.key_len);
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
        if (b->state == SCAN_B_LOST) {
            /* every row it had is given: reopen after the last one */
            scan_bucket_resume(sc, b);
        } else {
            scan_fetch(sc, b);
        }
    }
}

/* A call on b failed (why; NULL: a bad reply): so does the scan, with
 * not_resumed ("" or NULL: nothing) saying why b was not reopened. */
static void
scan_bucket_failed(struct scanner *sc, const struct scan_bucket *b,
                   const char *why, gboolean retry, gboolean transport,
                   const char *not_resumed)
{
    const char *inner = why != NULL ? why : "bad reply";
    gboolean note = not_resumed != NULL && *not_resumed != '\0';
    char where[48];

    if (sc->state != SCAN_OPEN) {
        return;
    }
    g_free(sc->error);
    /* our own reasons carry the prefix already: say it once */
    if (g_str_has_prefix(inner, "hbase-salt-proxy: ")) {
        inner += strlen("hbase-salt-proxy: ");
    }
    /* the legacy range's index is one past the last bucket: no bucket the
     * operator can find in --explain-key */
    if (b->legacy) {
        g_strlcpy(where, "its legacy (unsalted) range", sizeof(where));
    } else {
        g_snprintf(where, sizeof(where), "bucket %u", b->bucket);
    }
    sc->error = g_strdup_printf("hbase-salt-proxy: scan of %s failed in %s: "
                                "%s%s%s",
                                sc->table, where, inner,
                                note ? "; not resumed: " : "",
                                note ? not_resumed : "");
    sc->error_retry = retry;
    sc->error_transport = transport;
    scan_set_state(sc, SCAN_FAILED);
    /* the reason may quote the backend, and so row data: only at debug;
     * the client gets it in full */
    g_warning("scanner %d on %s failed in %s%s%s", sc->item.id, sc->table,
              where, note ? ", not resumed: " : "", note ? not_resumed : "");
    g_debug("%s", sc->error);
}

static void
scan_fetch_sink(struct worker *w, struct req *sub)
{
    struct scanner *sc = sub->sink_arg;
    struct scan_bucket *b = &sc->buckets[sub->sink_tag];
    struct wire_reader r;
    uint8_t type, et;
    int16_t fid;
    uint32_t count = 0;
    g_autofree char *why = NULL;
    gboolean retry;
    int32_t app_type;

    b->fetching = 0;
    if (sc->state == SCAN_CLOSED) {
        if (b->close_owed) {
            b->close_owed = 0;
            scan_bucket_close_send(sc, b);
        }
        scan_sub_return(sc, sub);
        return;
    }
    if (!scan_sub_reply(sc, sub, &r, &type, &fid, &why, &retry, &app_type) ||
        type != sc->calls->rows->type ||
        wire_read_list_begin(&r, &et, &count) != WIRE_OK) {
        const char *not_resumed = NULL;

        if (sc->state == SCAN_OPEN &&
            (not_resumed = scan_bucket_lost(sc, b, sub, why)) == NULL) {
            /* reopened elsewhere once its rows are given */
            scan_sub_return(sc, sub);
            scan_pump(sc);
            return;
        }
        scan_bucket_failed(sc, b, why, retry, sub->failed, not_resumed);
        scan_sub_return(sc, sub);
        scan_pump(sc);
        return;
    }
    /* keep the reply bytes: swap buffers instead of copying rows */
    {
        struct wire_buf tmp = b->next, tmarks = b->next_marks;

        b->next = sub->raw;
        sub->raw = tmp;
        b->next_marks = sub->marks;
        sub->marks = tmarks;
    }
    b->next_ready = 1;
    b->next_count = count;
    if (count > 0) {
        /* scan_resume_attempts bounds the reopens in a row that read
         * nothing: a long scan may outlive several server restarts */
        b->resumes = 0;
    }
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
    if (b->fetching || b->next_ready || b->last || b->done ||
        b->state != SCAN_B_OPEN || sc->state != SCAN_OPEN) {
        return;
    }
    b->fetching = 1;
    /* the legacy range counts as bucket = buckets: bucket="legacy" */
    metrics_bucket_request(sc->item.owner->metrics, sc->salt, sc->stats_id,
                           b->bucket, 1);
    scan_sub_id_call(sc, b->server, scan_bucket_conn(sc, b), scan_fetch_sink,
                     (uint32_t)(b - sc->buckets), sc->calls->fetch,
                     b->backend_id, (int32_t)b->fetch);
}

/* ---- resuming ------------------------------------------------------------ */

/*
 * A bucket whose backend scanner is lost is opened again, on a server
 * that is up, as HBase's own ClientScanner reopens a region's scanner
 * after UnknownScannerException or a server's death: the same scan
 * (columns, time range, the filter as rewritten for the bucket, caching,
 * batchSize) from just after the last row it gave.  Forward, that is the
 * row's key + 0x00, the least key after it.  Reversed, a start row is
 * inclusive and no finite key is the greatest before a row: the scan
 * starts at the row itself and passes over it when it comes again.  The
 * rows the bucket had fetched are given first, so the last one given is
 * the last one fetched.  What cannot be made exact fails the scan
 * loudly (sc->no_resume).  HBase keeps a scan's read point (mvcc) when it
 * reopens a region's scanner, which no Thrift call can carry: a resumed
 * bucket sees the writes committed since the scan began beyond its last
 * row, as a Thrift server restart would (the time range, kept, bounds
 * the versions read).
 */

/* A reopen after the first waits this long, doubling each time. */
#define SCAN_RESUME_BACKOFF_MS 200
#define SCAN_RESUME_BACKOFF_MAX_MS 3000

static void scan_reopen_sink(struct worker *w, struct req *sub);

/* Logs (and counts) what a bucket's resume came to. */
static void
scan_resume_note(const struct scanner *sc, const struct scan_bucket *b,
                 enum metrics_table_kind outcome, const char *what)
{
    metrics_scan_resume(sc->item.owner->metrics, sc->salt, sc->stats_id,
                        b->bucket, outcome);
    /* the legacy range's index is no bucket an operator can look up */
    if (b->legacy) {
        g_message("scanner %d on %s: legacy (unsalted) range: resume %u: %s",
                  sc->item.id, sc->table, b->resumes, what);
    } else {
        g_message("scanner %d on %s: bucket %u: resume %u: %s", sc->item.id,
                  sc->table, b->bucket, b->resumes, what);
    }
}

/* Whether a failed call on b's backend scanner lost it: its connection
 * failed (or no server could take it), or the server no longer knows
 * the id (restarted, or it expired there). */
static gboolean
scan_scanner_lost(const struct req *sub, const char *why)
{
    /* a call that timed out spent its time already: the server is slow,
     * not gone, and the client hears so; so do those behind it on its
     * connection (a reopen there would wait as long again) */
    return (sub->failed && !sub->timed_out && !sub->stalled) ||
           (why != NULL && (strstr(why, SCAN_INVALID_ID) != NULL ||
                            strstr(why, SCAN2_INVALID_ID) != NULL));
}

/*
 * b's fetch failed (sub, why) while sc serves: NULL when b will be
 * reopened, else why not ("": the failure is no lost scanner).
 */
static const char *
scan_bucket_lost(struct scanner *sc, struct scan_bucket *b,
                 const struct req *sub, const char *why)
{
    if (!scan_scanner_lost(sub, why)) {
        return "";
    }
    if (sc->no_resume != NULL) {
        scan_resume_note(sc, b, METRICS_TABLE_RESUME_REFUSED, "refused");
        return sc->no_resume;
    }
    if (b->resumes >= sc->max_resumes) {
        scan_resume_note(sc, b, METRICS_TABLE_RESUME_EXHAUSTED, "exhausted");
        return "[backend] scan_resume_attempts reopens of the bucket were "
               "made already";
    }
    scan_bucket_set_state(b, SCAN_B_LOST);
    if (!b->has_head) {
        /* the merge waits on it: every row it had is given */
        scan_bucket_resume(sc, b);
    }
    return NULL;
}

/* Sends b's open again, from after resume_key. */
static void
scan_bucket_reopen(struct scanner *sc, struct scan_bucket *b)
{
    struct worker *w = sc->item.owner;
    wire_proto_t proto = w->startup->backend_proto;
    g_autoptr(GByteArray) start = g_byte_array_new();
    struct wire_buf arg;
    struct wire_writer wr;
    const uint8_t *stop;
    uint32_t stop_len;
    size_t frame;
    struct req *sub;
    struct backend_conn *conn;

    if (b->resume_key != NULL) {
        g_byte_array_append(start, b->resume_key->data, b->resume_key->len);
        if (!sc->reversed) {
            static const uint8_t zero = 0;

            g_byte_array_append(start, &zero, 1);
        }
    }
    wire_buf_init(&arg);
    wire_writer_init(&wr, proto, &arg);
    if (b->resume_key == NULL) {
        /* nothing given yet: the scan as first sent */
        wire_buf_append(&arg, b->open_arg.data, b->open_arg.len);
        stop_len = 0;
    } else if (!scanargs_rewrite_start(sc->calls, proto, &w->client_limits,
                                       b->open_arg.data, b->open_arg.len,
                                       start->data, start->len, &wr, &stop,
                                       &stop_len)) {
        wire_buf_free(&arg);
        scan_bucket_set_state(b, SCAN_B_NONE);
        scan_bucket_failed(sc, b, "its open cannot be written again", FALSE,
                           FALSE, "");
        scan_pump(sc);
        return;
    }
    if (!sc->reversed && stop_len > 0 &&
        merge_key_cmp(start->data, start->len, stop, stop_len) >= 0) {
        /* its last row was the last before its stop: nothing is left
         * (and start == stop would read as a one-row get scan) */
        wire_buf_free(&arg);
        scan_bucket_set_state(b, SCAN_B_CLOSED);
        b->done = 1;
        sc->nwaiting--;
        scan_resume_note(sc, b, METRICS_TABLE_RESUMED, "nothing left to read");
        scan_pump(sc);
        return;
    }
    scan_bucket_set_state(b, SCAN_B_REOPENING);
    b->server = backend_pool_pick_server(sc->pool,
                                         sc->calls->open->service->id);
    metrics_bucket_request(w->metrics, sc->salt, sc->stats_id, b->bucket, 1);
    sub = scan_sub_begin(sc, b->server, scan_reopen_sink,
                         (uint32_t)(b - sc->buckets), sc->calls->open, &wr,
                         &frame);
    wire_buf_append(&w->scratch, arg.data, arg.len);
    wire_buf_free(&arg);
    /* its sink may run at once, and close sc: held until it is back */
    sc->inflight++;
    conn = scan_sub_send(sc, sub, frame, NULL);
    if (scan_release(sc)) {
        b->conn = conn;
    }
}

static void
scan_resume_cb(evutil_socket_t fd, short what, void *arg)
{
    struct scan_bucket *b = arg;
    struct scanner *sc = b->sc;

    if (!scan_release(sc) || b->state != SCAN_B_WAITING ||
        sc->state != SCAN_OPEN) {
        /* closed, or failed meanwhile: the close takes it from here */
        return;
    }
    scan_bucket_reopen(sc, b);
}

/* b is LOST and has given every row it had: reopen it, after a backoff
 * from the second time on (the first goes to another server, at once). */
static void
scan_bucket_resume(struct scanner *sc, struct scan_bucket *b)
{
    unsigned ms = 0;
    struct timeval tv;

    g_assert(b->state == SCAN_B_LOST && !b->has_head);
    if (b->rows.phys != NULL) {
        /* the last row it gave: cur is not replaced before a reopen */
        if (b->resume_key == NULL) {
            b->resume_key = g_byte_array_new();
        }
        g_byte_array_set_size(b->resume_key, 0);
        g_byte_array_append(b->resume_key, b->rows.phys, b->rows.phys_len);
        b->rows.phys = NULL;
    }
    if (b->resumes > 0) {
        ms = MIN(SCAN_RESUME_BACKOFF_MS << MIN(b->resumes - 1, 8),
                 SCAN_RESUME_BACKOFF_MAX_MS);
    }
    b->resumes++;
    scan_bucket_set_state(b, SCAN_B_WAITING);
    if (b->timer == NULL) {
        b->timer = evtimer_new(sc->item.owner->base, scan_resume_cb, b);
    }
    tv.tv_sec = ms / 1000;
    tv.tv_usec = (ms % 1000) * 1000;
    /* the timer holds sc as a request in flight would */
    sc->inflight++;
    evtimer_add(b->timer, &tv);
}

static void
scan_reopen_sink(struct worker *w, struct req *sub)
{
    struct scanner *sc = sub->sink_arg;
    struct scan_bucket *b = &sc->buckets[sub->sink_tag];
    struct wire_reader r;
    uint8_t type;
    int16_t fid;
    g_autofree char *why = NULL;
    gboolean retry, ok;
    int32_t app_type, id = -1;

    ok = scan_sub_reply(sc, sub, &r, &type, &fid, &why, &retry, &app_type) &&
         type == WIRE_T_I32;
    if (ok) {
        id = wire_read_i32(&r);
    }
    if (sc->state == SCAN_CLOSED || b->state != SCAN_B_REOPENING) {
        /* closed meanwhile: so is the scanner it opened */
        if (ok) {
            scan_sub_id_call(sc, b->server, scan_bucket_conn(sc, b),
                             scan_close_sink, b->bucket, sc->calls->close, id,
                             -1);
        }
        scan_sub_return(sc, sub);
        return;
    }
    if (ok) {
        b->backend_id = id;
        scan_bucket_set_state(b, SCAN_B_OPEN);
        b->skip_key = sc->reversed && b->resume_key != NULL;
        scan_resume_note(sc, b, METRICS_TABLE_RESUMED, "resumed");
        scan_sub_return(sc, sub);
        scan_fetch(sc, b);
        return;
    }
    if (sub->failed && b->resumes < sc->max_resumes) {
        /* no server took it, or it died too: again, later */
        scan_resume_note(sc, b, METRICS_TABLE_RESUME_FAILED, "failed");
        scan_bucket_set_state(b, SCAN_B_LOST);
        scan_sub_return(sc, sub);
        scan_bucket_resume(sc, b);
        return;
    }
    scan_resume_note(sc, b, METRICS_TABLE_RESUME_EXHAUSTED, "exhausted");
    scan_bucket_set_state(b, SCAN_B_NONE);
    scan_bucket_failed(sc, b, why, retry, sub->failed,
                       sub->failed ? "[backend] scan_resume_attempts reopens "
                                     "of the bucket failed"
                                   : "its scan could not be opened again");
    scan_sub_return(sc, sub);
    scan_pump(sc);
}

/* Begins the current NEXT op's reply: its rows go straight into it. */
static void
scan_next_begin(struct scanner *sc)
{
    struct scan_op *op = sc->op;

    op->got = 0;
    op->frame_at = req_reply_begin(op->req);
    op->list_at = codec_rows_reply_begin(&op->req->call, op->req->client_proto,
                                         (uint32_t)MAX(op->want, 0),
                                         &op->req->reply);
}

/* Answers the current NEXT op with the rows gathered. */
static void
scan_next_done(struct scanner *sc)
{
    struct scan_op *op = sc->op;

    codec_rows_reply_end(op->req->client_proto, op->list_at,
                         (uint32_t)MAX(op->want, 0), (uint32_t)op->got,
                         &op->req->reply);
    req_reply_end(op->req, op->frame_at);
    sc->op = NULL;
    sc->last_used = req_now();
    if (sc->once) {
        sc->close_asked = TRUE;
    }
    scan_op_done(op, sc->item.owner);
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

/* sc's op is answered outside scan_pump: a one-call scanner
 * (getScannerResults) or one whose close is asked closes now, any other
 * starts its next queued op. */
static void
scan_op_answered(struct scanner *sc)
{
    if (sc->once || sc->close_asked) {
        sc->close_asked = FALSE;
        scan_close(sc);
        return;
    }
    scan_next_op(sc);
}

/* Whether b's head continues the row last given under a PageFilter. */
static gboolean
scan_page_same_row(const struct scanner *sc, const struct scan_bucket *b)
{
    return sc->page_row->len > 0 && sc->page_row->len == b->rows.key_len &&
           memcmp(sc->page_row->data, b->rows.key, b->rows.key_len) == 0;
}

/*
 * Makes room in op's reply for a row of row_len bytes: when it has none,
 * for as many as the rows still to come (SCAN_REPLY_ROOM_MAX at most),
 * so that a reply of 1 000 rows is not grown by doubling from nothing,
 * each step copying all of it again (the worker frees reply buffers
 * over WORKER_REPLY_KEEP between requests).
 */
static void
scan_reply_room(struct scan_op *op, size_t row_len)
{
    struct wire_buf *reply = &op->req->reply;
    size_t rows = (size_t)MAX(op->want - op->got, 1);

    if (reply->cap - reply->len < row_len) {
        wire_buf_reserve(reply, MAX(row_len,
                                    MIN(rows * row_len, SCAN_REPLY_ROOM_MAX)));
    }
}

/* Moves rows from the bucket heads to the current op while it can. */
static void
scan_pump(struct scanner *sc)
{
    wire_proto_t from;

    if (sc->pumping) {
        sc->pump_again = TRUE;
        return;
    }
    sc->pumping = TRUE;
    from = sc->item.owner->startup->backend_proto;
    do {
        struct scan_op *op = sc->op;

        sc->pump_again = FALSE;
        if (op == NULL || op->kind != SCAN_OP_NEXT || sc->salt == NULL) {
            break;
        }
        if (sc->state == SCAN_FAILED) {
            sc->op = NULL;
            scan_reply_failed(sc, op, sc->item.owner);
            sc->pump_again = TRUE;
            scan_next_op(sc);
            continue;
        }
        while (op->got < op->want && !sc->page_done && sc->nwaiting == 0 &&
               !merge_empty(&sc->merge) && sc->state == SCAN_OPEN) {
            unsigned bi = merge_top(&sc->merge);
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
                g_byte_array_append(sc->page_row, b->rows.key,
                                    (guint)b->rows.key_len);
            }
            scan_reply_room(op, b->rows.head_len);
            wire_writer_init(&wr, op->req->client_proto, &op->req->reply);
            if (scanbatch_copy_head(&b->rows, from, &wr)) {
                metrics_bucket_row(sc->item.owner->metrics, sc->salt,
                                   sc->stats_id, b->bucket, 1);
                scan_keyviz_row(sc, b);
            } else {
                /* it reports the rows it unsalts, to be counted */
                wire_reader_init(&rr, from, b->rows.head, b->rows.head_len,
                                 TRUE, &sc->item.owner->reply_limits);
                codec_row_result(sc->calls, &rr, &wr, sc->salt, sc->stats_id,
                                 &sc->item.owner->tally);
                metrics_take_tally(sc->item.owner->metrics,
                                   &sc->item.owner->tally);
            }
            op->got++;
            metrics_scan_row(sc->item.owner->metrics);
            if (scan_bucket_advance(sc, b)) {
                merge_top_next(&sc->merge, b->rows.key, b->rows.key_len);
            } else {
                merge_pop(&sc->merge);
                scan_bucket_refill(sc, b, bi);
            }
        }
        if (sc->state == SCAN_FAILED) {
            sc->pump_again = TRUE;
            continue;
        }
        if (op->got >= op->want || sc->page_done ||
            (sc->nwaiting == 0 && merge_empty(&sc->merge))) {
            scan_next_done(sc);
            scan_next_op(sc);
            sc->pump_again = sc->op != NULL;
        }
    } while (sc->pump_again);
    sc->pumping = FALSE;
    if (sc->close_asked) {
        /* a getScannerResults answered: sc may be freed here */
        sc->close_asked = FALSE;
        scan_close(sc);
    }
}

/* ---- pass-through (unsalted) scanners ---------------------------------- */

static void
scan_pass_sink(struct worker *w, struct req *sub)
{
    struct scanner *sc = sub->sink_arg;
    struct scan_op *op = sc->op;
    struct req *req = op->req;
    const struct worker_settings *set = w->startup;
    struct codec_error err = { 0 };
    size_t off;

    sc->op = NULL;
    if (sub->failed) {
        g_autofree char *why = g_strndup((const char *)sub->raw.data,
                                         sub->raw.len);

        req->err_kind = METRICS_ERR_TRANSPORT;
        scan_reply_io(op, w, why, sub->can_retry);
    } else {
        struct codec_io io = {
            .data = sub->raw.data,
            .len = sub->raw.len,
            .from = set->backend_proto,
            .to = req->client_proto,
            .backend_seqid = sub->backend_seqid,
            .out = &req->reply,
            .limits = &w->reply_limits,
            .tally = &w->tally,
            .err = &err,
        };

        off = req_reply_begin(req);
        if (codec_reply(&io, &req->call) != CODEC_OK) {
            metrics_take_tally(w->metrics, &w->tally);
            scan_reply_io(op, w, err.message, FALSE);
        } else {
            metrics_take_tally(w->metrics, &w->tally);
            req_reply_end(req, off);
            scan_op_done(op, w);
        }
    }
    sc->last_used = req_now();
    if (scan_sub_return(sc, sub)) {
        scan_next_op(sc);
    }
}

/* ---- calls on open scanners ---------------------------------------------- */

static void
scan_op_start(struct scanner *sc, struct scan_op *op)
{
    struct worker *w = sc->item.owner;

    scan_op_note(sc, op);
    sc->last_used = req_now();
    if (op->kind == SCAN_OP_CLOSE && sc->salt == NULL) {
        /* pass-through: the backend's own answer (IllegalArgument for a
         * scanner it expired); sc is freed when it is back */
        scantab_remove(w->scans, sc->item.id);
        scan_set_state(sc, SCAN_CLOSED);
    } else if (op->kind == SCAN_OP_CLOSE) {
        scan_reply_void(op, w);
        scan_close(sc);
        return;
    }
    sc->op = op;
    if (sc->salt == NULL) {
        struct wire_writer wr;
        size_t frame;
        const struct hbase1_method *m = op->req->call.method;
        struct req *sub = scan_sub_begin(sc, sc->server, scan_pass_sink, 0, m,
                                         &wr, &frame);

        sub->call = op->req->call;
        /* the count goes on only where the call takes one */
        scanargs_write_id(m, sc->backend_id, op->want, &wr);
        scan_sub_send(sc, sub, frame, NULL);
        return;
    }
    if (op->want < 0) {
        /* HBase's handlers call ResultScanner.next(n), which sizes a list
         * by n: a negative one throws an exception they do not catch, a
         * TApplicationException to the client; the scanner is as it was
         * (getScannerResults' one-call scanner closes all the same) */
        sc->op = NULL;
        scan_reply_app(op, w, WIRE_APP_INTERNAL_ERROR,
                       "Internal error processing ");
        scan_op_answered(sc);
        return;
    }
    scan_next_begin(sc);
    if (op->want == 0) {
        /* HBase: nbRows 0 is an empty list */
        scan_next_done(sc);
        scan_op_answered(sc);
        return;
    }
    scan_pump(sc);
}

/* The scanner of a client's id, and who owns it: follow it only there. */
static struct scanner *
scan_find(struct worker *w, int32_t id, struct worker **owner)
{
    /* the item is the scanner's first member */
    return (struct scanner *)scantab_find(w->scans, id, owner);
}

/* On the owner's thread: find the scanner again, it may be gone. */
static void
scan_op_run(struct worker *w, void *arg)
{
    struct scan_op *op = arg;
    struct worker *owner;
    struct scanner *sc = scan_find(w, op->id, &owner);

    if (sc == NULL || owner != w || sc->state == SCAN_CLOSED) {
        scan_reply_invalid(op, w);
        return;
    }
    if (sc->op != NULL) {
        g_queue_push_tail(&sc->queued, op);
        return;
    }
    scan_op_start(sc, op);
}

void
scan_request(struct worker *w, struct req *req, const uint8_t *msg, size_t len)
{
    struct scan_op *op;
    const struct hbase1_method *m;
    struct wire_reader r;
    struct wire_msg hdr;
    struct worker *owner = NULL;
    struct scanargs a;

    g_return_if_fail(w != NULL && req != NULL);
    g_return_if_fail(msg != NULL || len == 0);
    m = req->call.method;
    /* the codec sends only scanner calls here */
    g_return_if_fail(m != NULL && m->kind >= HBASE1_SCAN_OPEN);
    op = g_new0(struct scan_op, 1);
    op->req = req;
    op->home = w;
    switch (m->kind) {
    case HBASE1_SCAN_OPEN:
        op->kind = SCAN_OP_OPEN;
        scan_open(w, op, msg, len);
        return;
    case HBASE1_SCAN_ONCE:
        /* the codec sends only a salted table's here; an unsalted one
         * goes to the backend as any other call */
        op->kind = SCAN_OP_OPEN;
        op->once = TRUE;
        scan_open(w, op, msg, len);
        return;
    case HBASE1_SCAN_NEXT: op->kind = SCAN_OP_NEXT; break;
    case HBASE1_SCAN_CLOSE: op->kind = SCAN_OP_CLOSE; break;
    default: {
        /* the codec sends only the kinds this engine drives */
        struct codec_error err = { WIRE_APP_UNKNOWN_METHOD,
                                   "hbase-salt-proxy: scanner call not "
                                   "supported",
                                   CODEC_ANSWER_APP };

        scan_reply_error(op, w, &err);
        return;
    }
    }
    wire_reader_init(&r, req->client_proto, msg, len, TRUE, &w->client_limits);
    wire_read_msg_begin(&r, &hdr);
    if (!scanargs_parse(&a, m, &r)) {
        struct codec_error err = { WIRE_APP_PROTOCOL_ERROR,
                                   r.error != NULL ? r.error
                                                   : "malformed call",
                                   CODEC_ANSWER_APP };

        scan_reply_error(op, w, &err);
        return;
    }
    op->id = a.id;
    op->want = a.nrows;
    if (!a.has_id || scan_find(w, op->id, &owner) == NULL) {
        scan_reply_invalid(op, w);
        return;
    }
    if (owner != w) {
        worker_post(owner, scan_op_run, op);
        return;
    }
    scan_op_run(w, op);
}

/* ---- expiry and shutdown ------------------------------------------------ */

/* Scanners of w that match: idle ones, or all of them (idle < 0). */
static GPtrArray *
scan_owned(struct worker *w, gint64 idle)
{
    gint64 now = req_now();
    GPtrArray *found = scantab_owned(w->scans, w);

    /* on w's thread: its scanners' fields may be read */
    for (guint i = found->len; i-- > 0;) {
        const struct scanner *sc = g_ptr_array_index(found, i);

        if (idle >= 0 && (sc->op != NULL || sc->last_used + idle >= now)) {
            g_ptr_array_remove_index_fast(found, i);
        }
    }
    return found;
}

void
scan_worker_stop(struct worker *w)
{
    GPtrArray *all;

    g_return_if_fail(w != NULL && w->scans != NULL);
    all = scan_owned(w, -1);

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
scan_worker_start(struct worker *w)
{
    struct timeval tv = { SCAN_TIMER_MS / 1000,
                          (SCAN_TIMER_MS % 1000) * 1000 };

    g_return_if_fail(w != NULL && w->scan_timer != NULL);
    event_add(w->scan_timer, &tv);
}

void
scan_timer_cb(evutil_socket_t fd, short what, void *arg)
{
    struct worker *w = arg;
    gint64 idle = (gint64)w->gen->cfg->scan_scanner_timeout_ms * 1000;
    GPtrArray *expired = scan_owned(w, idle);

    for (guint i = 0; i < expired->len; i++) {
        struct scanner *sc = g_ptr_array_index(expired, i);

        g_message("scanner %d on %s expired after %u ms idle", sc->item.id,
                  sc->table, w->gen->cfg->scan_scanner_timeout_ms);
        scan_close(sc);
    }
    g_ptr_array_free(expired, TRUE);
}
