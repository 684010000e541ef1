/* metrics.h: counters and histograms kept per worker, summed on scrape. */
#pragma once

#include <glib.h>
#include <stdint.h>

#include "config.h"
#include "wire.h"

struct codec_tally;
struct hbase1_method;
struct keyviz;
struct keyviz_worker;

/*
 * Every counter has one writer, the worker thread that owns it, and one
 * reader, the main thread rendering /metrics.  Both sides use relaxed
 * atomic loads and stores: no locked instruction on the hot path, no
 * torn or undefined reads on the scrape.  A scrape is a sum of values
 * each read at a slightly different instant, which Prometheus counters
 * tolerate by design.
 */
#define METRICS_ADD(field, n)                                                 \
    __atomic_store_n(&(field),                                                \
                     __atomic_load_n(&(field), __ATOMIC_RELAXED) + (n),       \
                     __ATOMIC_RELAXED)
#define METRICS_GET(field) __atomic_load_n(&(field), __ATOMIC_RELAXED)

/* Request latency: fixed log-spaced upper bounds, 100 us to 10 s, +Inf. */
#define METRICS_LAT_BUCKETS 16
/* Scan fan-out width: 1, 2, 4 ... 256, +Inf buckets. */
#define METRICS_FANOUT_BUCKETS 9
/* Rows per multi-row call: 1, 2, 5, 10 ... 10000, +Inf buckets. */
#define METRICS_BATCH_BUCKETS 13
/* Salted tables with per-bucket counters; later ones are not counted. */
#define METRICS_MAX_TABLES 4096

/* What a table's per-bucket counters count, one run of each. */
enum metrics_table_kind {
    METRICS_TABLE_READS = 0, /* row keys read (gets, scanner opens and
                                fetches) */
    METRICS_TABLE_WRITES,    /* row keys of mutations */
    METRICS_TABLE_ROWS,      /* rows returned */
    /* what became of a scan's bucket whose backend scanner was lost
     * (hsp_scan_resumes_total{table,outcome}) */
    METRICS_TABLE_RESUMED,          /* opened again and read on */
    METRICS_TABLE_RESUME_FAILED,    /* a reopen failed; another follows */
    METRICS_TABLE_RESUME_EXHAUSTED, /* no reopen left: the scan failed */
    METRICS_TABLE_RESUME_REFUSED,   /* not exact: the scan failed */
    METRICS_TABLE_KINDS
};

/*
 * How a reply failed, for hsp_request_errors_by_type_total and
 * hsp_backend_errors_total: the exception the client gets, or, whatever
 * the proxy answered, that the backend connection failed under it.
 */
typedef enum {
    METRICS_ERR_UNKNOWN = 0, /* not looked at yet */
    METRICS_ERR_NONE,        /* a result */
    METRICS_ERR_IO,          /* the method's IOError (TIOError) */
    METRICS_ERR_IA,          /* its IllegalArgument (TIllegalArgument) */
    METRICS_ERR_APP,         /* TApplicationException */
    METRICS_ERR_TRANSPORT,   /* connection refused, lost, timed out, bad
                                reply: the proxy's IOError */
    METRICS_ERR_KINDS
} metrics_err_t;

/* The label of an error kind (IO .. TRANSPORT): "IOError", ... */
extern const char *const metrics_err_label[METRICS_ERR_KINDS];

/* One Thrift method's counters on one worker. */
struct metrics_method {
    guint64 requests; /* replies, counted just before written */
    guint64 errors;   /* of which exceptions */
    guint64 lat[METRICS_LAT_BUCKETS + 1]; /* per bucket, not cumulative */
    guint64 lat_sum_us;
    guint64 slow;                             /* over slow_call_ms */
    guint64 batch[METRICS_BATCH_BUCKETS + 1]; /* multi-row calls by rows */
    guint64 batch_sum;                        /* rows over those calls */
};

/* One worker's counters: written only by that worker's thread. */
struct metrics_worker {
    struct metrics_method *methods; /* by hbase1 method index */
    guint64 accepted;               /* client connections taken */
    guint64 refused;                /* over max_connections etc. */
    guint64 tls_handshakes;         /* TLS clients that finished
                                               the handshake */
    guint64 tls_failures;           /* that failed it or timed out */
    guint64 tls_plain;              /* of which spoke plain Thrift */
    guint64 bytes_in;               /* client request bytes */
    guint64 bytes_out;              /* client reply bytes */
    guint64 scans;                  /* scanners opened */
    guint64 scan_rows;              /* rows merged from buckets */
    guint64 unsalted_rows;          /* rows of salted tables
                                               handed back as stored */
    guint64 fanout[METRICS_FANOUT_BUCKETS + 1]; /* scans by width */
    guint64 fanout_sum;                         /* buckets over all scans */
    guint64 queue[METRICS_LAT_BUCKETS + 1];     /* requests by time waited for
                                               a backend connection */
    guint64 queue_sum_us;
    guint64 err_kinds[METRICS_ERR_KINDS]; /* replies by metrics_err_t */
    /* per salted table (stats_id - 1): METRICS_TABLE_KINDS runs of
     * buckets + 1 counters (metrics_table_at), the last of each run the
     * legacy range of a forward-looking table; allocated by the main
     * thread before any config naming the table reaches a worker */
    guint64 *tables[METRICS_MAX_TABLES];
    struct keyviz_worker *kv; /* its key visualizer counters,
                                               NULL: off */
};

/* Upper bounds of the latency buckets, in microseconds. */
extern const guint64 metrics_lat_le_us[METRICS_LAT_BUCKETS];
/* Upper bounds of the batch size buckets, in rows. */
extern const guint64 metrics_batch_le[METRICS_BATCH_BUCKETS];

/* A salted table that has counters: names never leave the registry, so a
 * table that comes back after a reload finds its counters again. */
struct metrics_table {
    char *name;
    uint32_t buckets;
    gboolean legacy;      /* forward-looking in some generation: its legacy
                        range has series too */
    gboolean keyviz_only; /* unsalted, counted by the key visualizer
                             alone ([keyviz] unsalted_tables): no
                             counters, no series */
};

/* The counter of kind and bucket (buckets: the legacy range) in a table's
 * block. */
static inline size_t
metrics_table_at(uint32_t buckets, enum metrics_table_kind kind,
                 uint32_t bucket)
{
    return (size_t)kind * (buckets + 1) + bucket;
}

/* The process's metrics; created with the proxy, main thread only.  The
 * scrape reads them (metrics_render.c). */
struct metrics {
    unsigned nworkers;
    struct metrics_worker *workers;
    size_t nmethods; /* methods of every service */
    /* per method index, its series' labels: method="get" for Thrift1 (as
     * always), method="get",service="thrift2" for Thrift2 */
    char **labels;
    GPtrArray *tables;       /* struct metrics_table *, by id - 1 */
    GHashTable *table_ids;   /* name -> GUINT_TO_POINTER(id) */
    guint64 reloads[3];      /* by metrics_reload_t */
    gboolean last_reload_ok; /* TRUE until a reload fails */
    gint64 last_reload_time; /* wall clock us, 0 = none yet */
    gint64 start_time;       /* wall clock us */
    struct keyviz *kv;       /* the key visualizer, NULL: off */
};

/* kv: the key visualizer's counters (taken over), or NULL. */
struct metrics *metrics_new(unsigned nworkers, struct keyviz *kv);
void metrics_free(struct metrics *m);
struct metrics_worker *metrics_worker(struct metrics *m, unsigned id);

/* Gives every salted table of ts's config a counter slot, in ts
 * (tabstate_table.stats_id; tables keep theirs across reloads by name:
 * their bucket count cannot change).  Before ts's generation is posted. */
struct tabstate;
void metrics_add_state(struct metrics *m, struct tabstate *ts);

/* Reload bookkeeping for hsp_config_*. */
typedef enum {
    METRICS_RELOAD_APPLIED = 0,
    METRICS_RELOAD_REFUSED, /* valid file, change not allowed */
    METRICS_RELOAD_INVALID, /* file did not load */
} metrics_reload_t;
void metrics_reload(struct metrics *m, metrics_reload_t result);

/* ---- hooks: one line at the place that knows --------------------------- */

/* A reply of method leaves for its client after us_taken; err says
 * whether it is an exception, and which (metrics_reply_error). */
void metrics_request_done(struct metrics_worker *mw,
                          const struct hbase1_method *method, gint64 us_taken,
                          metrics_err_t err);

/* What kind of reply a reply of method (NULL: unknown) is (no frame
 * header): a result, TApplicationException, or a result struct whose
 * first field is not the success field 0, the method's IOError (field 1)
 * or IllegalArgument (field 2).  Reads a few header bytes only. */
metrics_err_t metrics_reply_error(wire_proto_t proto, const uint8_t *msg,
                                  size_t len,
                                  const struct hbase1_method *method);

/* metrics_reply_error of a reply whose header was read already (type:
 * its message type; body, len: from its struct on). */
metrics_err_t metrics_result_error(wire_proto_t proto, uint8_t type,
                                   const uint8_t *body, size_t len,
                                   const struct hbase1_method *method);

/* A request waited us for a backend connection to be free for it: from
 * read whole to written to an idle connection, or, pipelined behind
 * others, to the reply of the one before it. */
void metrics_queue_wait(struct metrics_worker *mw, gint64 us);

/* The rows of a multi-row call of method (getRows*, mutateRows*,
 * getMultiple, putMultiple ...: msg is the client's whole call, no frame
 * header); a no-op for other methods. */
void metrics_batch(struct metrics_worker *mw,
                   const struct hbase1_method *method, wire_proto_t proto,
                   const uint8_t *msg, size_t len);

/* The counters of the table with metrics slot stats_id (tabstate.h; the
 * codec and the scan engine carry it next to the table's salt), NULL for
 * none. */
static inline guint64 *
metrics_table_block(struct metrics_worker *mw, unsigned stats_id)
{
    return stats_id != 0 ? mw->tables[stats_id - 1] : NULL;
}

/* n of a salted table's counters of kind at bucket (salt->buckets: the
 * legacy range of a forward-looking table). */
static inline void
metrics_bucket_add(struct metrics_worker *mw, const struct salt_table *salt,
                   unsigned stats_id, enum metrics_table_kind kind,
                   uint32_t bucket, guint64 n)
{
    guint64 *blk = metrics_table_block(mw, stats_id);

    if (blk != NULL) {
        METRICS_ADD(blk[metrics_table_at(salt->buckets, kind, bucket)], n);
    }
}

/* n row keys of a salted table went to bucket to be read (a point read,
 * or one bucket's scanner open or fetch). */
static inline void
metrics_bucket_request(struct metrics_worker *mw,
                       const struct salt_table *salt, unsigned stats_id,
                       uint32_t bucket, guint64 n)
{
    metrics_bucket_add(mw, salt, stats_id, METRICS_TABLE_READS, bucket, n);
}

/* n rows of a salted table came back from bucket. */
static inline void
metrics_bucket_row(struct metrics_worker *mw, const struct salt_table *salt,
                   unsigned stats_id, uint32_t bucket, guint64 n)
{
    metrics_bucket_add(mw, salt, stats_id, METRICS_TABLE_ROWS, bucket, n);
}

/* A bucket of a scan of salt (at bucket) came to a resume's outcome
 * (METRICS_TABLE_RESUMED .. METRICS_TABLE_RESUME_REFUSED). */
static inline void
metrics_scan_resume(struct metrics_worker *mw, const struct salt_table *salt,
                    unsigned stats_id, uint32_t bucket,
                    enum metrics_table_kind outcome)
{
    metrics_bucket_add(mw, salt, stats_id, outcome, bucket, 1);
}

/* Adds what the codec reported in t to mw's counters, and empties t. */
void metrics_take_tally(struct metrics_worker *mw, struct codec_tally *t);

/* A merged scan opened over width buckets. */
void metrics_scan_open(struct metrics_worker *mw, unsigned width);

/* A merged scan handed one row to its client. */
static inline void
metrics_scan_row(struct metrics_worker *mw)
{
    METRICS_ADD(mw->scan_rows, 1);
}
