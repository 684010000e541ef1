/* bench_main.c: hbase-bench: options, libevent connections, workloads, client-side scan merges, report. */
#include "bench.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdarg.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>
#include <event2/event.h>
#include <openssl/ssl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

typedef enum {
    BENCH_W_GET,
    BENCH_W_PUT,
    BENCH_W_MIX,
    BENCH_W_MULTIGET,
    BENCH_W_SCAN_FULL,
    BENCH_W_SCAN_PREFIX,
    BENCH_W_SCAN_RANGE,
    BENCH_W_LOAD,
    BENCH_W_IDLE,
} bench_workload_t;

static const char *const bench_workload_names[] = {
    "get",         "put",        "mix",  "multiget", "scan-full",
    "scan-prefix", "scan-range", "load", "idle",
};

/* ---- options ---- */

static struct {
    char *target, *table, *column, *workload, *keys, *protocol, *transport;
    char *merge, *label, *salt_format, *scan_target, *service, *tls_ca;
    int connections, value_size, multiget_keys, scan_batch, scan_rows;
    int prefix_len, salt_buckets, batch, pid, backend_pid, max_connecting;
    int pipeline, prefix_fields;
    gint64 users, apps;
    double duration, warmup, zipf_s, celebrity, put_share, timeout;
    gint64 max_ops, rows, seed, scan_limit;
} bench_opt = {
    .target = NULL,
    .table = NULL,
    .column = NULL,
    .workload = NULL,
    .connections = 64,
    .value_size = 100,
    .multiget_keys = 100,
    .scan_batch = 1000,
    .scan_rows = 1000,
    .prefix_len = 8,
    .max_connecting = 256,
    .pipeline = 1,
    .duration = 0,
    .warmup = 0,
    .zipf_s = 0.99,
    .celebrity = 0,
    .put_share = 0.1,
    .timeout = 600,
    .rows = 1000000,
    .seed = 1,
    .users = 1000,
    .apps = 100,
};

/* one option per line, as --help lists them */
/* clang-format off */
static GOptionEntry bench_entries[] = {
    { "target", 0, 0, G_OPTION_ARG_STRING, &bench_opt.target, "loopback HOST:PORT to load (required)", "ADDR" },
    { "table", 0, 0, G_OPTION_ARG_STRING, &bench_opt.table, "table (default bench)", "T" },
    { "column", 0, 0, G_OPTION_ARG_STRING, &bench_opt.column, "column written and read (default f:v)", "F:Q" },
    { "workload", 'w', 0, G_OPTION_ARG_STRING, &bench_opt.workload, "get|put|mix|multiget|scan-full|scan-prefix|scan-range|load|idle", "W" },
    { "connections", 'c', 0, G_OPTION_ARG_INT, &bench_opt.connections, "concurrent clients (default 64)", "C" },
    { "duration", 'd', 0, G_OPTION_ARG_DOUBLE, &bench_opt.duration, "measured seconds (default 5 unless --ops)", "S" },
    { "warmup", 0, 0, G_OPTION_ARG_DOUBLE, &bench_opt.warmup, "unmeasured seconds first (duration mode)", "S" },
    { "ops", 'n', 0, G_OPTION_ARG_INT64, &bench_opt.max_ops, "stop after N operations", "N" },
    { "timeout", 0, 0, G_OPTION_ARG_DOUBLE, &bench_opt.timeout, "abort after S seconds whatever happens (default 600)", "S" },
    { "rows", 0, 0, G_OPTION_ARG_INT64, &bench_opt.rows, "key space k0..k(N-1) (default 1000000)", "N" },
    { "keys", 0, 0, G_OPTION_ARG_STRING, &bench_opt.keys, "uniform|zipf|monotonic over k keys, or the key shapes celebrity-user (user_id-xxx-yyy) and app-user-ts (app_id,user_token,timestamp) (default uniform)", "D" },
    { "zipf-s", 0, 0, G_OPTION_ARG_DOUBLE, &bench_opt.zipf_s, "Zipf exponent (default 0.99)", "S" },
    { "celebrity", 0, 0, G_OPTION_ARG_DOUBLE, &bench_opt.celebrity, "share of operations on one hot key (0..1); celebrity-user: the hot user's share of rows and writes", "P" },
    { "users", 0, 0, G_OPTION_ARG_INT64, &bench_opt.users, "celebrity-user: users; app-user-ts: users per app (default 1000)", "N" },
    { "apps", 0, 0, G_OPTION_ARG_INT64, &bench_opt.apps, "app-user-ts: apps (default 100)", "N" },
    { "put-share", 0, 0, G_OPTION_ARG_DOUBLE, &bench_opt.put_share, "mix: share of puts (default 0.1)", "P" },
    { "value-size", 0, 0, G_OPTION_ARG_INT, &bench_opt.value_size, "bytes per value (default 100)", "B" },
    { "batch", 0, 0, G_OPTION_ARG_INT, &bench_opt.batch, "rows per mutateRows (default 1; load 1000)", "B" },
    { "pipeline", 0, 0, G_OPTION_ARG_INT, &bench_opt.pipeline, "get/put/mix: calls sent at once on a connection before the first reply is read, each counted as an operation (default 1)", "N" },
    { "multiget-keys", 0, 0, G_OPTION_ARG_INT, &bench_opt.multiget_keys, "keys per getRows (default 100)", "K" },
    { "scan-batch", 0, 0, G_OPTION_ARG_INT, &bench_opt.scan_batch, "rows per scannerGetList (default 1000)", "N" },
    { "scan-rows", 0, 0, G_OPTION_ARG_INT, &bench_opt.scan_rows, "rows per range scan (default 1000)", "N" },
    { "scan-limit", 0, 0, G_OPTION_ARG_INT64, &bench_opt.scan_limit, "end each scan after N rows, closing its scanners (default 0: no limit)", "N" },
    { "prefix-len", 0, 0, G_OPTION_ARG_INT, &bench_opt.prefix_len, "bytes of key kept as scan prefix (default 8)", "N" },
    { "prefix-fields", 0, 0, G_OPTION_ARG_INT, &bench_opt.prefix_fields, "key shapes: scan prefix = the key up to its N-th separator (1: a user of celebrity-user, an app of app-user-ts; 2: a user of app-user-ts)", "N" },
    { "scan-target", 0, 0, G_OPTION_ARG_STRING, &bench_opt.scan_target, "celebrity-user prefix scans: any (a row drawn uniformly), celebrity, others (default any)", "T" },
    { "protocol", 0, 0, G_OPTION_ARG_STRING, &bench_opt.protocol, "binary|compact (default binary)", "P" },
    { "transport", 0, 0, G_OPTION_ARG_STRING, &bench_opt.transport, "buffered|framed (default buffered)", "T" },
    { "service", 0, 0, G_OPTION_ARG_STRING, &bench_opt.service, "thrift1 (Hbase) or thrift2 (THBaseService: get, put/putMultiple, getMultiple, openScanner/getScannerRows/closeScanner) (default thrift1)", "S" },
    { "salt-buckets", 0, 0, G_OPTION_ARG_INT, &bench_opt.salt_buckets, "client-side salting over N buckets (daemon/salt.h mapping); 0 = plain client", "N" },
    { "salt-format", 0, 0, G_OPTION_ARG_STRING, &bench_opt.salt_format, "byte|hex|decimal (default byte)", "F" },
    { "merge", 0, 0, G_OPTION_ARG_STRING, &bench_opt.merge, "client-side scans: heap (parallel) or sequential (HBaseWD)", "M" },
    { "pid", 0, 0, G_OPTION_ARG_INT, &bench_opt.pid, "process under test: CPU per op, RSS", "PID" },
    { "backend-pid", 0, 0, G_OPTION_ARG_INT, &bench_opt.backend_pid, "backend process: CPU per op", "PID" },
    { "max-connecting", 0, 0, G_OPTION_ARG_INT, &bench_opt.max_connecting, "connects in flight at once (default 256)", "N" },
    { "seed", 0, 0, G_OPTION_ARG_INT64, &bench_opt.seed, "random seed (default 1)", "N" },
    { "label", 0, 0, G_OPTION_ARG_STRING, &bench_opt.label, "label copied to the report", "TEXT" },
    { "tls-ca", 0, 0, G_OPTION_ARG_STRING, &bench_opt.tls_ca, "connect over TLS, verifying the server against this PEM CA (TLS 1.2+, no session reuse: every connection does a full handshake)", "FILE" },
    { NULL, 0, 0, 0, NULL, NULL, NULL },
};
/* clang-format on */

/* ---- state ---- */

enum {
    BENCH_EXP_POINT,
    BENCH_EXP_MULTI,
    BENCH_EXP_OPEN,
    BENCH_EXP_LIST,
    BENCH_EXP_CLOSE
};

#define BENCH_MAXQ 64

struct bench_expect {
    uint8_t kind;
    uint32_t bucket;
};

struct bench_session;

struct bench_conn {
    struct bench_session *s;
    struct bufferevent *bev;
    struct bench_expect q[BENCH_MAXQ];
    unsigned qh, qn;
    struct wire_scan *scan; /* unframed replies: where one was left */
};

/* One fetched batch of a bucket scanner: logical row keys, copied out of
 * the reply (the reply buffer is drained right after). */
struct bench_batch {
    struct bench_batch *next;
    uint32_t n, pos;
    struct bench_rowref *rows;
};

struct bench_bucket {
    int32_t id;
    gboolean done, fetching;
    unsigned nbatches;
    struct bench_batch *head, *tail;
};

struct bench_scan {
    unsigned nb;
    struct bench_bucket *bk;
    unsigned *heap, hn;
    gboolean merging, merge_done;
    int stalled;    /* bucket the heap merge waits for, or -1 */
    unsigned seq_i; /* sequential: bucket being opened/closed */
    gboolean have_last;
    size_t last_len;
    uint8_t last[BENCH_KEY_MAX * 2];
    size_t start_len, stop_len;
    uint8_t start[BENCH_KEY_MAX * 2], stop[BENCH_KEY_MAX * 2];
};

struct bench_session {
    unsigned id;
    struct bench_conn *conns;
    unsigned nconns;
    gboolean in_op, stopped;
    uint64_t t0;
    unsigned outstanding; /* replies the current op waits for */
    uint64_t op_rows;
    unsigned op_calls;      /* calls in the operation (--pipeline) */
    struct bench_key *keys; /* multiget / put batch */
    unsigned *order;        /* multiget: key indices grouped by bucket */
    struct bench_scan scan;
};

static struct {
    struct event_base *base;
    struct sockaddr_storage addr;
    socklen_t addrlen;
    bench_workload_t workload;
    struct bench_codec codec;
    gboolean salted, sequential;
    struct salt_table salt;
    struct bench_keys keys;
    uint8_t *value;
    struct bench_session *sessions;
    unsigned nsessions, active;
    GPtrArray *conns; /* every bench_conn, connect order */
    unsigned next_connect, connected;
    gboolean measuring, stopping, finished;
    uint64_t t_start, t_stop;
    uint64_t ops_started, ops_done, errors, rows;
    uint64_t load_next;
    struct bench_hist hist;
    double cpu_start, cpu_end, bcpu_start, bcpu_end;
    double scpu_start, scpu_end;   /* hbase-bench itself */
    double mcpu_start, mcpu_end;   /* the whole machine */
    double steal_start, steal_end; /* taken by the hypervisor */
    long rss_start, rss_max, rss_end;
    struct event *ev_warm, *ev_stop, *ev_rss, *ev_abort;
    struct wire_buf out;
    struct bench_reply rep;
    const char *first_error;
    const char *table_name;
    gboolean idle_holding;
    bench_target_t scan_target;
    SSL_CTX *tls; /* --tls-ca */
} B;

static uint64_t
bench_now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static G_GNUC_NORETURN void bench_die(const char *fmt, ...)
    G_GNUC_PRINTF(1, 2);

static void
bench_die(const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    fputs("hbase-bench: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    exit(2);
}

static void
bench_error(const char *why)
{
    B.errors++;
    if (B.first_error == NULL) {
        B.first_error = why;
    }
}

/* ---- /proc of the process under test ---- */

/* utime + stime of every thread of pid, in seconds; -1 when unreadable. */
static double
bench_proc_cpu(int pid)
{
    char path[64], buf[1024];
    unsigned long long ut = 0, st = 0;
    FILE *f;
    size_t n;
    char *p;

    if (pid <= 0) {
        return -1;
    }
    snprintf(path, sizeof(path), "/proc/%d/stat", pid);
    f = fopen(path, "r");
    if (f == NULL) {
        return -1;
    }
    n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[n] = '\0';
    /* the command name may hold spaces and parentheses: skip to the last ')' */
    p = strrchr(buf, ')');
    if (p == NULL ||
        sscanf(p + 1, " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu",
               &ut, &st) != 2) {
        return -1;
    }
    return (double)(ut + st) / (double)sysconf(_SC_CLK_TCK);
}

/*
 * CPU seconds the whole machine has run since boot (/proc/stat: user,
 * nice, system, irq, softirq) and those its hypervisor stole; -1 when
 * unreadable.  Less the processes measured, it is what else shared the
 * cores during the window: what makes one run slower than the next.
 */
static void
bench_machine_cpu(double *busy, double *steal)
{
    unsigned long long v[8] = { 0 };
    FILE *f = fopen("/proc/stat", "r");
    int n = f != NULL
                ? fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu",
                         &v[0], &v[1], &v[2], &v[3], &v[4], &v[5], &v[6],
                         &v[7])
                : 0;
    double hz = (double)sysconf(_SC_CLK_TCK);

    if (f != NULL) {
        fclose(f);
    }
    *busy = n >= 7 ? (double)(v[0] + v[1] + v[2] + v[5] + v[6]) / hz : -1;
    *steal = n >= 8 ? (double)v[7] / hz : -1;
}

/* Closes the measured window's CPU counts. */
static void
bench_cpu_end(void)
{
    B.cpu_end = bench_proc_cpu(bench_opt.pid);
    B.bcpu_end = bench_proc_cpu(bench_opt.backend_pid);
    B.scpu_end = bench_proc_cpu(getpid());
    bench_machine_cpu(&B.mcpu_end, &B.steal_end);
}

static long
bench_proc_rss_kb(int pid)
{
    char path[64], line[256];
    long kb = -1;
    FILE *f;

    if (pid <= 0) {
        return -1;
    }
    snprintf(path, sizeof(path), "/proc/%d/status", pid);
    f = fopen(path, "r");
    if (f == NULL) {
        return -1;
    }
    while (fgets(line, sizeof(line), f) != NULL) {
        if (strncmp(line, "VmRSS:", 6) == 0) {
            kb = strtol(line + 6, NULL, 10);
            break;
        }
    }
    fclose(f);
    return kb;
}

/* ---- sending ---- */

static void
bench_send(struct bench_conn *c, uint8_t kind, uint32_t bucket)
{
    struct bench_expect *e;

    if (c->qn == BENCH_MAXQ) {
        bench_die("internal: too many requests in flight on one connection");
    }
    e = &c->q[(c->qh + c->qn++) % BENCH_MAXQ];
    e->kind = kind;
    e->bucket = bucket;
    c->s->outstanding++;
    if (bufferevent_write(c->bev, B.out.data, B.out.len) != 0) {
        bench_die("write failed");
    }
    wire_buf_clear(&B.out);
}

/* Physical key of a logical one (client-side salting), in place. */
static void
bench_salt_key(struct bench_key *k)
{
    uint8_t tmp[sizeof(k->k)];
    size_t n = salt_key(&B.salt, k->k, k->len, tmp, sizeof(tmp));

    memcpy(k->k, tmp, n);
    k->len = (uint8_t)n;
}

static int
bench_key_cmp(const uint8_t *a, size_t al, const uint8_t *b, size_t bl)
{
    int c = memcmp(a, b, MIN(al, bl));

    if (c != 0) {
        return c;
    }
    return al < bl ? -1 : al > bl ? 1 : 0;
}

/* Every scan must return rows in strictly increasing logical order. */
static void
bench_scan_row(struct bench_session *s, const uint8_t *p, size_t len)
{
    struct bench_scan *sc = &s->scan;

    if (sc->have_last && bench_key_cmp(sc->last, sc->last_len, p, len) >= 0) {
        bench_error("scan rows out of order");
    }
    len = MIN(len, sizeof(sc->last));
    memcpy(sc->last, p, len);
    sc->last_len = len;
    sc->have_last = TRUE;
    s->op_rows++;
}

/* Whether the scan has its --scan-limit rows: the client stops there and
 * closes, as an application reading the first N rows of a scan does. */
static gboolean
bench_scan_limited(const struct bench_session *s)
{
    return bench_opt.scan_limit > 0 &&
           s->op_rows >= (uint64_t)bench_opt.scan_limit;
}

/* Rows to ask of a plain scanner: the batch, but not past the limit (as
 * happybase's scan(limit=) asks min(batch_size, rows left)). */
static int32_t
bench_scan_want(const struct bench_session *s)
{
    if (bench_opt.scan_limit > 0) {
        return (int32_t)MIN((uint64_t)bench_opt.scan_batch,
                            (uint64_t)bench_opt.scan_limit - s->op_rows);
    }
    return bench_opt.scan_batch;
}

/* ---- operations ---- */

static void bench_op_start(struct bench_session *s);
static void bench_finish(void);

static void
bench_scan_reset(struct bench_scan *sc)
{
    for (unsigned i = 0; i < sc->nb; i++) {
        struct bench_bucket *bk = &sc->bk[i];

        while (bk->head != NULL) {
            struct bench_batch *n = bk->head->next;

            g_free(bk->head);
            bk->head = n;
        }
        memset(bk, 0, sizeof(*bk));
        bk->id = -1;
    }
    sc->hn = 0;
    sc->merging = sc->merge_done = FALSE;
    sc->stalled = -1;
    sc->seq_i = 0;
    sc->have_last = FALSE;
}

static gboolean
bench_should_stop(void)
{
    if (B.stopping) {
        return TRUE;
    }
    if (bench_opt.max_ops > 0 &&
        B.ops_started >= (uint64_t)bench_opt.max_ops) {
        return TRUE;
    }
    if (B.workload == BENCH_W_LOAD &&
        B.load_next >= (uint64_t)bench_opt.rows) {
        return TRUE;
    }
    return FALSE;
}

static void
bench_op_done(struct bench_session *s)
{
    uint64_t now = bench_now_ns();

    s->in_op = FALSE;
    if (B.measuring) {
        bench_hist_add(&B.hist, now - s->t0);
        B.ops_done += s->op_calls;
        B.rows += s->op_rows;
    }
    if (B.workload != BENCH_W_IDLE && !bench_should_stop()) {
        bench_op_start(s);
        return;
    }
    s->stopped = TRUE;
    if (--B.active == 0) {
        bench_finish();
    }
}

static void bench_op_point1(struct bench_session *s, gboolean put);

/* --pipeline N: N point calls written at once on the session's
 * connection, as an async client does; the operation ends with the last
 * reply.  Each call counts as one operation in the rates. */
static void
bench_op_point(struct bench_session *s, gboolean put)
{
    unsigned n = (unsigned)bench_opt.pipeline;

    s->op_calls = n;
    for (unsigned i = 0; i < n; i++) {
        if (B.workload == BENCH_W_MIX && i > 0) {
            put = bench_rand_unit(&B.keys.rng) < bench_opt.put_share;
        }
        bench_op_point1(s, put);
    }
}

static void
bench_op_point1(struct bench_session *s, gboolean put)
{
    struct bench_conn *c = &s->conns[0];
    unsigned n = (unsigned)MAX(bench_opt.batch, 1);

    if (!put) {
        struct bench_key k;

        bench_keys_next(&B.keys, FALSE, &k);
        if (B.salted) {
            bench_salt_key(&k);
        }
        bench_req_get_row(&B.codec, &B.out, B.table_name, &k,
                          bench_opt.column);
        bench_send(c, BENCH_EXP_POINT, 0);
        return;
    }
    for (unsigned i = 0; i < n; i++) {
        if (B.workload == BENCH_W_LOAD) {
            if (B.load_next >= (uint64_t)bench_opt.rows) {
                n = i;
                break;
            }
            bench_key_of_index(&B.keys, B.load_next++, &s->keys[i]);
        } else {
            bench_keys_next(&B.keys, TRUE, &s->keys[i]);
        }
        if (B.salted) {
            bench_salt_key(&s->keys[i]);
        }
    }
    s->op_rows += n; /* rows written */
    bench_req_mutate_rows(&B.codec, &B.out, B.table_name, s->keys, n,
                          bench_opt.column, B.value,
                          (uint32_t)bench_opt.value_size);
    bench_send(c, BENCH_EXP_POINT, 0);
}

static void
bench_op_multiget(struct bench_session *s)
{
    unsigned k = (unsigned)bench_opt.multiget_keys;
    uint32_t *bucket_of;

    for (unsigned i = 0; i < k; i++) {
        bench_keys_next(&B.keys, FALSE, &s->keys[i]);
    }
    if (!B.salted) {
        bench_req_get_rows(&B.codec, &B.out, B.table_name, s->keys, NULL, k);
        bench_send(&s->conns[0], BENCH_EXP_MULTI, 0);
        return;
    }
    /* what an application would do: group by bucket, one getRows per
     * bucket, all in parallel on the bucket's own connection */
    bucket_of = g_newa(uint32_t, k);
    for (unsigned i = 0; i < k; i++) {
        bucket_of[i] = salt_bucket(&B.salt, s->keys[i].k, s->keys[i].len);
        bench_salt_key(&s->keys[i]);
    }
    for (uint32_t b = 0; b < B.salt.buckets; b++) {
        unsigned m = 0;

        for (unsigned i = 0; i < k; i++) {
            if (bucket_of[i] == b) {
                s->order[m++] = i;
            }
        }
        if (m == 0) {
            continue;
        }
        bench_req_get_rows(&B.codec, &B.out, B.table_name, s->keys, s->order,
                           m);
        bench_send(&s->conns[b % s->nconns], BENCH_EXP_MULTI, b);
    }
}

/* TScan.caching of every scanner opened: the client's batch, as happybase
 * does (Table.scan(batch_size=N) sets caching = N and asks N rows per
 * scannerGetList), so that HBase, or the proxy sizing its per-bucket
 * fetches from it, fetches rows in the batch the client reads them. */
static int32_t
bench_scan_caching(void)
{
    return bench_opt.scan_batch;
}

static void
bench_scan_open_bucket(struct bench_session *s, struct bench_conn *c,
                       uint32_t b)
{
    struct bench_scan *sc = &s->scan;
    uint8_t start[BENCH_KEY_MAX * 2 + SALT_MAX_PREFIX];
    uint8_t stop[BENCH_KEY_MAX * 2 + SALT_MAX_PREFIX];
    size_t sl = salt_scan_start(&B.salt, b, FALSE, sc->start, sc->start_len,
                                start);
    size_t tl = salt_scan_stop(&B.salt, b, FALSE, sc->stop, sc->stop_len,
                               stop);

    bench_req_scan_open(&B.codec, &B.out, B.table_name, start, sl, stop, tl,
                        bench_scan_caching());
    bench_send(c, BENCH_EXP_OPEN, b);
}

static void
bench_op_scan(struct bench_session *s)
{
    struct bench_scan *sc = &s->scan;
    struct bench_key k;

    bench_scan_reset(sc);
    sc->start_len = sc->stop_len = 0;
    if (B.workload == BENCH_W_SCAN_RANGE) {
        uint64_t span = (uint64_t)bench_opt.scan_rows;
        uint64_t top = (uint64_t)bench_opt.rows > span
                           ? (uint64_t)bench_opt.rows - span
                           : 0;
        uint64_t i = bench_rand(&B.keys.rng) % (top + 1);

        bench_key_of_index(&B.keys, i, &k);
        memcpy(sc->start, k.k, k.len);
        sc->start_len = k.len;
        bench_key_of_index(&B.keys, i + span, &k);
        memcpy(sc->stop, k.k, k.len);
        sc->stop_len = k.len;
    } else if (B.workload == BENCH_W_SCAN_PREFIX) {
        int64_t i = bench_keys_scan_index(&B.keys, B.scan_target);

        if (i < 0) {
            bench_die("--scan-target %s: that user has no rows",
                      bench_opt.scan_target);
        }
        bench_key_of_index(&B.keys, (uint64_t)i, &k);
        /* a shaped key's prefix is whole fields: one user, one app */
        sc->start_len =
            bench_opt.prefix_fields > 0
                ? bench_key_fields(&B.keys, &k,
                                   (unsigned)bench_opt.prefix_fields)
                : MIN((size_t)bench_opt.prefix_len, (size_t)k.len);
        memcpy(sc->start, k.k, sc->start_len);
        memcpy(sc->stop, sc->start, sc->start_len);
        sc->stop_len = salt_successor(sc->stop, sc->start_len);
    }
    if (!B.salted) {
        bench_req_scan_open(&B.codec, &B.out, B.table_name, sc->start,
                            sc->start_len, sc->stop, sc->stop_len,
                            bench_scan_caching());
        bench_send(&s->conns[0], BENCH_EXP_OPEN, 0);
    } else if (B.sequential) {
        /* HBaseWD: the scanners are opened one after the other */
        bench_scan_open_bucket(s, &s->conns[0], 0);
    } else {
        for (uint32_t b = 0; b < sc->nb; b++) {
            bench_scan_open_bucket(s, &s->conns[b], b);
        }
    }
}

static void
bench_op_start(struct bench_session *s)
{
    gboolean put;

    s->in_op = TRUE;
    s->op_rows = 0;
    s->op_calls = 1;
    s->t0 = bench_now_ns();
    B.ops_started++;
    switch (B.workload) {
    case BENCH_W_GET:
    case BENCH_W_IDLE: bench_op_point(s, FALSE); break;
    case BENCH_W_PUT:
    case BENCH_W_LOAD: bench_op_point(s, TRUE); break;
    case BENCH_W_MIX:
        put = bench_rand_unit(&B.keys.rng) < bench_opt.put_share;
        bench_op_point(s, put);
        break;
    case BENCH_W_MULTIGET: bench_op_multiget(s); break;
    default: bench_op_scan(s); break;
    }
}

/* ---- client-side merges ---- */

static struct bench_batch *
bench_batch_new(uint32_t bucket)
{
    GArray *rows = B.rep.rows;
    size_t bytes = 0;
    struct bench_batch *bt;
    uint8_t *arena;

    for (guint i = 0; i < rows->len; i++) {
        bytes += g_array_index(rows, struct bench_rowref, i).len;
    }
    bt = g_malloc(sizeof(*bt) + rows->len * sizeof(struct bench_rowref) +
                  bytes);
    bt->next = NULL;
    bt->n = rows->len;
    bt->pos = 0;
    bt->rows = (struct bench_rowref *)(bt + 1);
    arena = (uint8_t *)(bt->rows + rows->len);
    for (guint i = 0; i < rows->len; i++) {
        struct bench_rowref *r = &g_array_index(rows, struct bench_rowref, i);
        const uint8_t *logical = r->p;
        size_t llen = r->len;
        uint32_t got = bucket;

        if (!salt_strip(&B.salt, r->p, r->len, &logical, &llen, &got) ||
            got != bucket) {
            bench_error("row from the wrong bucket");
        }
        memcpy(arena, logical, llen);
        bt->rows[i].p = arena;
        bt->rows[i].len = (uint32_t)llen;
        arena += llen;
    }
    return bt;
}

static void
bench_bucket_append(struct bench_bucket *bk, struct bench_batch *bt)
{
    if (bk->tail != NULL) {
        bk->tail->next = bt;
    } else {
        bk->head = bt;
    }
    bk->tail = bt;
    bk->nbatches++;
}

/* Drop the head row; frees the batch when used up. */
static void
bench_bucket_pop(struct bench_bucket *bk)
{
    if (++bk->head->pos == bk->head->n) {
        struct bench_batch *bt = bk->head;

        bk->head = bt->next;
        if (bk->head == NULL) {
            bk->tail = NULL;
        }
        bk->nbatches--;
        g_free(bt);
    }
}

static const struct bench_rowref *
bench_bucket_head(const struct bench_bucket *bk)
{
    return &bk->head->rows[bk->head->pos];
}

static gboolean
bench_heap_less(struct bench_scan *sc, unsigned a, unsigned b)
{
    const struct bench_rowref *x = bench_bucket_head(&sc->bk[a]);
    const struct bench_rowref *y = bench_bucket_head(&sc->bk[b]);

    return bench_key_cmp(x->p, x->len, y->p, y->len) < 0;
}

static void
bench_heap_down(struct bench_scan *sc, unsigned i)
{
    for (;;) {
        unsigned l = 2 * i + 1, r = l + 1, m = i, t;

        if (l < sc->hn && bench_heap_less(sc, sc->heap[l], sc->heap[m])) {
            m = l;
        }
        if (r < sc->hn && bench_heap_less(sc, sc->heap[r], sc->heap[m])) {
            m = r;
        }
        if (m == i) {
            return;
        }
        t = sc->heap[i];
        sc->heap[i] = sc->heap[m];
        sc->heap[m] = t;
        i = m;
    }
}

static void
bench_heap_push(struct bench_scan *sc, unsigned b)
{
    unsigned i = sc->hn++;

    sc->heap[i] = b;
    while (i > 0) {
        unsigned p = (i - 1) / 2, t;

        if (!bench_heap_less(sc, sc->heap[i], sc->heap[p])) {
            break;
        }
        t = sc->heap[i];
        sc->heap[i] = sc->heap[p];
        sc->heap[p] = t;
        i = p;
    }
}

/* Keep one batch fetched ahead per bucket, as the proxy does. */
static void
bench_bucket_fetch(struct bench_session *s, uint32_t b)
{
    struct bench_bucket *bk = &s->scan.bk[b];

    if (bk->done || bk->fetching || bk->nbatches >= 2 || bk->id < 0 ||
        s->scan.merge_done) {
        return;
    }
    bk->fetching = TRUE;
    bench_req_scan_get_list(&B.codec, &B.out, bk->id, bench_opt.scan_batch);
    bench_send(&s->conns[b], BENCH_EXP_LIST, b);
}

/* The limit is reached: close every bucket scanner now, or when its
 * fetch in flight comes back. */
static void
bench_heap_stop(struct bench_session *s)
{
    struct bench_scan *sc = &s->scan;

    sc->merge_done = TRUE;
    for (unsigned b = 0; b < sc->nb; b++) {
        struct bench_bucket *bk = &sc->bk[b];

        if (bk->done || bk->fetching) {
            continue;
        }
        bk->done = TRUE;
        bench_req_scan_close(&B.codec, &B.out, bk->id);
        bench_send(&s->conns[b], BENCH_EXP_CLOSE, b);
    }
}

static void
bench_heap_run(struct bench_session *s)
{
    struct bench_scan *sc = &s->scan;

    if (!sc->merging) {
        for (unsigned b = 0; b < sc->nb; b++) {
            if (!sc->bk[b].done && sc->bk[b].head == NULL) {
                return; /* every bucket's first batch is needed */
            }
        }
        for (unsigned b = 0; b < sc->nb; b++) {
            if (sc->bk[b].head != NULL) {
                bench_heap_push(sc, b);
            }
        }
        sc->merging = TRUE;
    }
    if (sc->stalled >= 0 || sc->merge_done) {
        return;
    }
    while (sc->hn > 0) {
        unsigned b = sc->heap[0];
        struct bench_bucket *bk = &sc->bk[b];
        const struct bench_rowref *r = bench_bucket_head(bk);

        bench_scan_row(s, r->p, r->len);
        bench_bucket_pop(bk);
        if (bench_scan_limited(s)) {
            bench_heap_stop(s);
            return;
        }
        bench_bucket_fetch(s, b);
        if (bk->head == NULL) {
            sc->heap[0] = sc->heap[--sc->hn];
            if (sc->hn > 0) {
                bench_heap_down(sc, 0);
            }
            if (!bk->done) {
                sc->stalled = (int)b; /* its next row may be the smallest */
                return;
            }
            continue;
        }
        bench_heap_down(sc, 0);
    }
    sc->merge_done = TRUE;
}

/* HBaseWD's DistributedScanner.nextInternal: refill every empty buffer
 * with a blocking next() (one call at a time), then an O(N) pass over the
 * heads for the smallest original key. */
static void
bench_seq_run(struct bench_session *s)
{
    struct bench_scan *sc = &s->scan;

    for (;;) {
        int best = -1;

        for (unsigned b = 0; b < sc->nb; b++) {
            struct bench_bucket *bk = &sc->bk[b];

            if (!bk->done && bk->head == NULL) {
                bk->fetching = TRUE;
                bench_req_scan_get_list(&B.codec, &B.out, bk->id,
                                        bench_opt.scan_batch);
                bench_send(&s->conns[0], BENCH_EXP_LIST, b);
                return;
            }
        }
        for (unsigned b = 0; b < sc->nb; b++) {
            if (sc->bk[b].head == NULL) {
                continue;
            }
            if (best < 0 || bench_heap_less(sc, b, (unsigned)best)) {
                best = (int)b;
            }
        }
        if (best < 0) {
            break;
        }
        {
            const struct bench_rowref *r = bench_bucket_head(&sc->bk[best]);

            bench_scan_row(s, r->p, r->len);
            bench_bucket_pop(&sc->bk[best]);
        }
        if (bench_scan_limited(s)) {
            break;
        }
    }
    sc->merge_done = TRUE;
    /* close() walks the scanners one by one too */
    sc->seq_i = 0;
    bench_req_scan_close(&B.codec, &B.out, sc->bk[0].id);
    bench_send(&s->conns[0], BENCH_EXP_CLOSE, 0);
}

/* ---- replies ---- */

static void
bench_on_reply(struct bench_conn *c, struct bench_expect e)
{
    struct bench_session *s = c->s;
    struct bench_scan *sc = &s->scan;
    struct bench_reply *rep = &B.rep;

    s->outstanding--;
    if (!rep->ok) {
        bench_error(rep->error ? rep->error : "failed reply");
        if (e.kind == BENCH_EXP_OPEN || e.kind == BENCH_EXP_LIST) {
            bench_die("scan failed: %s", rep->error ? rep->error : "?");
        }
    }
    switch (e.kind) {
    case BENCH_EXP_POINT:
    case BENCH_EXP_MULTI:
        s->op_rows += rep->rows->len; /* rows read; puts counted at send */
        if (s->outstanding == 0) {
            bench_op_done(s);
        }
        return;
    case BENCH_EXP_OPEN:
        if (!B.salted) {
            sc->bk[0].id = rep->i32;
            bench_req_scan_get_list(&B.codec, &B.out, rep->i32,
                                    bench_scan_want(s));
            bench_send(c, BENCH_EXP_LIST, 0);
        } else if (B.sequential) {
            sc->bk[e.bucket].id = rep->i32;
            if (e.bucket + 1 < sc->nb) {
                bench_scan_open_bucket(s, c, e.bucket + 1);
            } else {
                bench_seq_run(s);
            }
        } else {
            sc->bk[e.bucket].id = rep->i32;
            bench_bucket_fetch(s, e.bucket);
        }
        return;
    case BENCH_EXP_LIST:
        if (!B.salted) {
            for (guint i = 0; i < rep->rows->len; i++) {
                struct bench_rowref *r = &g_array_index(rep->rows,
                                                        struct bench_rowref,
                                                        i);

                bench_scan_row(s, r->p, r->len);
            }
            if (rep->rows->len > 0 && !bench_scan_limited(s)) {
                bench_req_scan_get_list(&B.codec, &B.out, sc->bk[0].id,
                                        bench_scan_want(s));
                bench_send(c, BENCH_EXP_LIST, 0);
            } else {
                bench_req_scan_close(&B.codec, &B.out, sc->bk[0].id);
                bench_send(c, BENCH_EXP_CLOSE, 0);
            }
            return;
        }
        {
            struct bench_bucket *bk = &sc->bk[e.bucket];

            bk->fetching = FALSE;
            if (!B.sequential && sc->merge_done && !bk->done) {
                /* stopped at the limit while this fetch was out */
                bk->done = TRUE;
                bench_req_scan_close(&B.codec, &B.out, bk->id);
                bench_send(c, BENCH_EXP_CLOSE, e.bucket);
                return;
            }
            if (rep->rows->len == 0) {
                bk->done = TRUE;
                if (!B.sequential) {
                    bench_req_scan_close(&B.codec, &B.out, bk->id);
                    bench_send(c, BENCH_EXP_CLOSE, e.bucket);
                }
            } else {
                bench_bucket_append(bk, bench_batch_new(e.bucket));
            }
            if (B.sequential) {
                bench_seq_run(s);
                return;
            }
            bench_bucket_fetch(s, e.bucket);
            if (sc->stalled == (int)e.bucket) {
                sc->stalled = -1;
                if (bk->head != NULL) {
                    bench_heap_push(sc, e.bucket);
                }
            }
            bench_heap_run(s);
            if (sc->merge_done && s->outstanding == 0) {
                bench_op_done(s);
            }
        }
        return;
    case BENCH_EXP_CLOSE:
        if (B.salted && B.sequential && ++sc->seq_i < sc->nb) {
            bench_req_scan_close(&B.codec, &B.out, sc->bk[sc->seq_i].id);
            bench_send(c, BENCH_EXP_CLOSE, sc->seq_i);
            return;
        }
        if (s->outstanding == 0 && (!B.salted || sc->merge_done)) {
            bench_op_done(s);
        }
        return;
    default: return;
    }
}

static void
bench_read_cb(struct bufferevent *bev, void *arg)
{
    struct bench_conn *c = arg;
    struct evbuffer *in = bufferevent_get_input(bev);

    for (;;) {
        size_t have = evbuffer_get_length(in);
        const uint8_t *data;
        gssize n;
        struct bench_expect e;

        if (have == 0) {
            return;
        }
        if (B.codec.framed) {
            uint8_t h[4];
            size_t need;

            if (have < 4) {
                return;
            }
            evbuffer_copyout(in, h, 4);
            need = 4 + (((size_t)h[0] << 24) | ((size_t)h[1] << 16) |
                        ((size_t)h[2] << 8) | h[3]);
            if (need > (size_t)B.codec.limits.max_message + 4) {
                bench_die("reply frame too large");
            }
            if (have < need) {
                return;
            }
            data = evbuffer_pullup(in, (ev_ssize_t)need);
            n = (gssize)need;
        } else {
            data = evbuffer_pullup(in, -1);
            if (c->scan == NULL) {
                c->scan = g_new(struct wire_scan, 1);
                wire_scan_init(c->scan);
            }
            n = bench_reply_length(&B.codec, c->scan, data, have);
            if (n == 0) {
                return;
            }
        }
        if (n < 0) {
            bench_die("unparseable reply from %s", bench_opt.target);
        }
        if (c->qn == 0) {
            bench_die("reply without a request");
        }
        e = c->q[c->qh];
        c->qh = (c->qh + 1) % BENCH_MAXQ;
        c->qn--;
        bench_reply_parse(&B.codec, data, (size_t)n, &B.rep);
        bench_on_reply(c, e);
        evbuffer_drain(in, (size_t)n);
        if (B.finished) {
            return;
        }
    }
}

/* ---- run control ---- */

static void
bench_finish(void)
{
    if (B.finished) {
        return;
    }
    if (B.workload == BENCH_W_IDLE && !B.idle_holding) {
        /* every client did its one call: now they sit idle for the
         * duration while the RSS of --pid is sampled */
        struct timeval tv;

        B.idle_holding = TRUE;
        tv.tv_sec = (time_t)bench_opt.duration;
        tv.tv_usec = (suseconds_t)((bench_opt.duration - (double)tv.tv_sec) *
                                   1e6);
        event_add(B.ev_stop, &tv);
        return;
    }
    B.finished = TRUE;
    if (B.t_stop == 0) {
        B.t_stop = bench_now_ns();
        bench_cpu_end();
    }
    event_base_loopexit(B.base, NULL);
}

static void
bench_measure_begin(void)
{
    bench_hist_reset(&B.hist);
    B.ops_done = B.rows = 0;
    B.measuring = TRUE;
    B.t_start = bench_now_ns();
    B.cpu_start = bench_proc_cpu(bench_opt.pid);
    B.bcpu_start = bench_proc_cpu(bench_opt.backend_pid);
    B.scpu_start = bench_proc_cpu(getpid());
    bench_machine_cpu(&B.mcpu_start, &B.steal_start);
    if (B.workload != BENCH_W_IDLE) {
        B.rss_start = bench_proc_rss_kb(bench_opt.pid);
    }
    if (bench_opt.duration > 0 && B.workload != BENCH_W_IDLE) {
        struct timeval tv;

        tv.tv_sec = (time_t)bench_opt.duration;
        tv.tv_usec = (suseconds_t)((bench_opt.duration - (double)tv.tv_sec) *
                                   1e6);
        event_add(B.ev_stop, &tv);
    }
}

static void
bench_warm_cb(evutil_socket_t fd, short what, void *arg)
{
    bench_measure_begin();
}

static void
bench_stop_cb(evutil_socket_t fd, short what, void *arg)
{
    /* the window closes now: later completions are not counted */
    B.t_stop = bench_now_ns();
    bench_cpu_end();
    B.rss_end = bench_proc_rss_kb(bench_opt.pid);
    B.measuring = FALSE;
    B.stopping = TRUE;
    if (B.active == 0) {
        bench_finish();
    }
}

static void
bench_abort_cb(evutil_socket_t fd, short what, void *arg)
{
    bench_die("--timeout of %.0f s reached (%u sessions still busy)",
              bench_opt.timeout, B.active);
}

static void
bench_rss_cb(evutil_socket_t fd, short what, void *arg)
{
    long kb = bench_proc_rss_kb(bench_opt.pid);

    if (kb > B.rss_max) {
        B.rss_max = kb;
    }
}

static void
bench_all_connected(void)
{
    if (B.workload == BENCH_W_IDLE || bench_opt.warmup <= 0 ||
        bench_opt.max_ops > 0) {
        bench_measure_begin();
    } else {
        struct timeval tv;

        tv.tv_sec = (time_t)bench_opt.warmup;
        tv.tv_usec = (suseconds_t)((bench_opt.warmup - (double)tv.tv_sec) *
                                   1e6);
        event_add(B.ev_warm, &tv);
    }
    B.active = B.nsessions;
    for (unsigned i = 0; i < B.nsessions; i++) {
        if (bench_should_stop() && B.workload != BENCH_W_IDLE) {
            B.sessions[i].stopped = TRUE;
            B.active--;
            continue;
        }
        bench_op_start(&B.sessions[i]);
    }
    if (B.active == 0) {
        bench_finish();
    }
}

static void bench_connect_next(void);

static void
bench_event_cb(struct bufferevent *bev, short what, void *arg)
{
    if (what & BEV_EVENT_CONNECTED) {
        int one = 1;

        setsockopt(bufferevent_getfd(bev), IPPROTO_TCP, TCP_NODELAY, &one,
                   sizeof(one));
        bufferevent_enable(bev, EV_READ | EV_WRITE);
        if (++B.connected == B.conns->len) {
            bench_all_connected();
        } else {
            bench_connect_next();
        }
        return;
    }
    bench_die("connection to %s %s%s%s", bench_opt.target,
              (what & BEV_EVENT_EOF) ? "closed by the peer" : "failed",
              (what & BEV_EVENT_ERROR) ? ": " : "",
              (what & BEV_EVENT_ERROR)
                  ? evutil_socket_error_to_string(EVUTIL_SOCKET_ERROR())
                  : "");
}

static void
bench_connect_next(void)
{
    /* a bounded number of connects in flight keeps 10 000 connects from
     * overflowing the listen backlog (SYN retries cost a second each) */
    while (B.next_connect < B.conns->len &&
           B.next_connect - B.connected < (unsigned)bench_opt.max_connecting) {
        struct bench_conn *c = g_ptr_array_index(B.conns, B.next_connect++);

        if (B.tls != NULL) {
            SSL *ssl = SSL_new(B.tls);

            /* the handshake ends in BEV_EVENT_CONNECTED, as a connect */
            c->bev = bufferevent_openssl_socket_new(B.base, -1, ssl,
                                                    BUFFEREVENT_SSL_CONNECTING,
                                                    BEV_OPT_CLOSE_ON_FREE);
        } else {
            c->bev = bufferevent_socket_new(B.base, -1, BEV_OPT_CLOSE_ON_FREE);
        }
        /* libevent reads 4 KiB at a time by default: a 150 KB scan reply in
         * buffered transport would be re-walked from its start 40 times */
        bufferevent_set_max_single_read(c->bev, 1 << 20);
        bufferevent_setcb(c->bev, bench_read_cb, NULL, bench_event_cb, c);
        if (bufferevent_socket_connect(c->bev, (struct sockaddr *)&B.addr,
                                       (int)B.addrlen) != 0) {
            bench_die("connect to %s: %s", bench_opt.target, strerror(errno));
        }
    }
}

/* Loopback only: this tool must never load anything but this machine. */
static void
bench_parse_target(const char *t)
{
    g_autofree char *host = NULL;
    const char *colon;
    long port;
    char *end;

    if (t == NULL) {
        bench_die("--target HOST:PORT is required");
    }
    if (t[0] == '[') {
        const char *rb = strchr(t, ']');

        if (rb == NULL || rb[1] != ':') {
            bench_die("bad --target %s", t);
        }
        host = g_strndup(t + 1, (gsize)(rb - t - 1));
        colon = rb + 1;
    } else {
        colon = strrchr(t, ':');
        if (colon == NULL) {
            bench_die("bad --target %s (HOST:PORT)", t);
        }
        host = g_strndup(t, (gsize)(colon - t));
    }
    port = strtol(colon + 1, &end, 10);
    if (*end != '\0' || port < 1 || port > 65535) {
        bench_die("bad port in --target %s", t);
    }
    memset(&B.addr, 0, sizeof(B.addr));
    if (strcmp(host, "localhost") == 0) {
        g_free(g_steal_pointer(&host)), host = g_strdup("127.0.0.1");
    }
    {
        struct sockaddr_in *a4 = (struct sockaddr_in *)&B.addr;
        struct sockaddr_in6 *a6 = (struct sockaddr_in6 *)&B.addr;

        if (inet_pton(AF_INET, host, &a4->sin_addr) == 1) {
            if ((ntohl(a4->sin_addr.s_addr) >> 24) != 127) {
                bench_die("refusing non-loopback target %s", t);
            }
            a4->sin_family = AF_INET;
            a4->sin_port = htons((uint16_t)port);
            B.addrlen = sizeof(*a4);
        } else if (inet_pton(AF_INET6, host, &a6->sin6_addr) == 1) {
            if (!IN6_IS_ADDR_LOOPBACK(&a6->sin6_addr)) {
                bench_die("refusing non-loopback target %s", t);
            }
            a6->sin6_family = AF_INET6;
            a6->sin6_port = htons((uint16_t)port);
            B.addrlen = sizeof(*a6);
        } else {
            bench_die("--target needs a literal loopback address, not %s",
                      host);
        }
    }
}

static int
bench_lookup(const char *what, const char *v, const char *const *names, int n,
             int dflt)
{
    if (v == NULL) {
        return dflt;
    }
    for (int i = 0; i < n; i++) {
        if (strcmp(v, names[i]) == 0) {
            return i;
        }
    }
    bench_die("unknown %s '%s'", what, v);
}

static void
bench_json_str(GString *g, const char *s)
{
    g_string_append_c(g, '"');
    for (; s != NULL && *s; s++) {
        if (*s == '"' || *s == '\\') {
            g_string_append_c(g, '\\');
        }
        if ((unsigned char)*s >= 0x20) {
            g_string_append_c(g, *s);
        }
    }
    g_string_append_c(g, '"');
}

static void
bench_report(void)
{
    double el = (double)(B.t_stop - B.t_start) / 1e9;
    double ops_s = el > 0 ? (double)B.ops_done / el : 0;
    double cpu = B.cpu_start >= 0 && B.cpu_end >= 0 ? B.cpu_end - B.cpu_start
                                                    : -1;
    double bcpu = B.bcpu_start >= 0 && B.bcpu_end >= 0
                      ? B.bcpu_end - B.bcpu_start
                      : -1;
    double cpu_op = cpu >= 0 && B.ops_done ? cpu * 1e6 / (double)B.ops_done
                                           : -1;
    double bcpu_op = bcpu >= 0 && B.ops_done ? bcpu * 1e6 / (double)B.ops_done
                                             : -1;
    double scpu = B.scpu_start >= 0 && B.scpu_end >= 0
                      ? B.scpu_end - B.scpu_start
                      : -1;
    double scpu_op = scpu >= 0 && B.ops_done ? scpu * 1e6 / (double)B.ops_done
                                             : -1;
    double mcpu = B.mcpu_start >= 0 && B.mcpu_end >= 0
                      ? B.mcpu_end - B.mcpu_start
                      : -1;
    double steal = B.steal_start >= 0 && B.steal_end >= 0
                       ? B.steal_end - B.steal_start
                       : -1;
    double p50 = (double)bench_hist_quantile(&B.hist, 0.50) / 1e3;
    double p99 = (double)bench_hist_quantile(&B.hist, 0.99) / 1e3;
    double p999 = (double)bench_hist_quantile(&B.hist, 0.999) / 1e3;
    double mean = B.hist.count ? B.hist.sum / (double)B.hist.count / 1e3 : 0;
    const char *mode = !B.salted      ? "plain"
                       : B.sequential ? "salted-sequential"
                                      : "salted-heap";
    GString *g = g_string_new("{\"label\":");

    if (B.rss_end <= 0) {
        B.rss_end = bench_proc_rss_kb(bench_opt.pid);
    }
    if (B.rss_end > B.rss_max) {
        B.rss_max = B.rss_end;
    }
    bench_json_str(g, bench_opt.label ? bench_opt.label : "");
    g_string_append_printf(g, ",\"workload\":\"%s\",\"mode\":\"%s\"",
                           bench_workload_names[B.workload], mode);
    g_string_append_printf(
        g,
        ",\"target\":\"%s\",\"protocol\":\"%s\",\"transport\":\"%s\","
        "\"connections\":%d,\"buckets\":%u,\"ops\":%" G_GUINT64_FORMAT
        ",\"errors\":%" G_GUINT64_FORMAT ",\"rows\":%" G_GUINT64_FORMAT
        ",\"elapsed_s\":%.4f,\"ops_per_s\":%.1f,\"rows_per_s\":%.1f,"
        "\"p50_us\":%.1f,\"p99_us\":%.1f,\"p999_us\":%.1f,\"mean_us\":%.1f,"
        "\"max_us\":%.1f,\"cpu_s\":%.3f,\"cpu_us_per_op\":%.3f,"
        "\"backend_cpu_us_per_op\":%.3f,\"client_cpu_us_per_op\":%.3f,"
        "\"machine_cpu_s\":%.3f,\"steal_s\":%.3f,\"rss_start_kb\":%ld,"
        "\"rss_max_kb\":%ld,\"rss_end_kb\":%ld}",
        bench_opt.target, B.codec.proto == WIRE_COMPACT ? "compact" : "binary",
        B.codec.framed ? "framed" : "buffered", bench_opt.connections,
        B.salted ? B.salt.buckets : 0, B.ops_done, B.errors, B.rows, el, ops_s,
        el > 0 ? (double)B.rows / el : 0, p50, p99, p999, mean,
        (double)(B.hist.count ? B.hist.max : 0) / 1e3, cpu, cpu_op, bcpu_op,
        scpu_op, mcpu, steal, B.rss_start, B.rss_max, B.rss_end);
    printf("%s\n", g->str);
    fflush(stdout);
    fprintf(stderr,
            "%s %s %s c=%d: %" G_GUINT64_FORMAT " ops in %.2f s = %.0f ops/s"
            " (%.0f rows/s), p50 %.0f us p99 %.0f us p999 %.0f us",
            bench_opt.label ? bench_opt.label : "", bench_opt.workload, mode,
            bench_opt.connections, B.ops_done, el, ops_s,
            el > 0 ? (double)B.rows / el : 0, p50, p99, p999);
    if (cpu_op >= 0) {
        fprintf(stderr, ", pid %d %.2f us CPU/op", bench_opt.pid, cpu_op);
    }
    if (B.rss_max > 0) {
        fprintf(stderr, ", RSS %ld->%ld (max %ld) KiB", B.rss_start, B.rss_end,
                B.rss_max);
    }
    if (B.errors) {
        fprintf(stderr, ", %" G_GUINT64_FORMAT " ERRORS (first: %s)", B.errors,
                B.first_error);
    }
    fputc('\n', stderr);
    g_string_free(g, TRUE);
}

int
main(int argc, char **argv)
{
    g_autoptr(GOptionContext) ctx = g_option_context_new(
        "- load generator for HBase Thrift (loopback only)");
    g_autoptr(GError) err = NULL;
    static const char *const dists[] = { "uniform", "zipf", "monotonic",
                                         "celebrity-user", "app-user-ts" };
    static const char *const targets[] = { "any", "celebrity", "others" };
    const char *why = NULL;
    static const char *const protos[] = { "binary", "compact" };
    static const char *const transports[] = { "buffered", "framed" };
    static const char *const merges[] = { "heap", "sequential" };
    static const char *const services[] = { "thrift1", "thrift2" };
    static const char *const formats[] = { "byte", "hex", "decimal" };
    struct rlimit rl;
    unsigned per_session, needed_keys;

    g_option_context_add_main_entries(ctx, bench_entries, NULL);
    if (!g_option_context_parse(ctx, &argc, &argv, &err)) {
        bench_die("%s", err->message);
    }
    bench_parse_target(bench_opt.target);
    if (bench_opt.tls_ca != NULL) {
        B.tls = SSL_CTX_new(TLS_client_method());
        SSL_CTX_set_min_proto_version(B.tls, TLS1_2_VERSION);
        if (SSL_CTX_load_verify_locations(B.tls, bench_opt.tls_ca, NULL) !=
            1) {
            bench_die("--tls-ca %s: cannot load it", bench_opt.tls_ca);
        }
        SSL_CTX_set_verify(B.tls, SSL_VERIFY_PEER, NULL);
    }
    if (bench_opt.table == NULL) {
        bench_opt.table = g_strdup("bench");
    }
    if (bench_opt.column == NULL) {
        bench_opt.column = g_strdup("f:v");
    }
    if (bench_opt.workload == NULL) {
        bench_opt.workload = g_strdup("get");
    }
    B.workload = (bench_workload_t)
        bench_lookup("workload", bench_opt.workload, bench_workload_names,
                     G_N_ELEMENTS(bench_workload_names), 0);
    B.codec.proto = (wire_proto_t)bench_lookup("protocol", bench_opt.protocol,
                                               protos, 2, 0);
    B.codec.framed = bench_lookup("transport", bench_opt.transport, transports,
                                  2, 0) == 1;
    B.codec.limits = wire_default_limits;
    B.codec.limits.max_message = 256u << 20;
    B.codec.limits.max_string = 256u << 20;
    B.codec.thrift2 = bench_lookup("service", bench_opt.service, services, 2,
                                   0) == 1;
    B.sequential = bench_lookup("merge", bench_opt.merge, merges, 2, 0) == 1;
    if (bench_opt.connections < 1 || bench_opt.connections > 100000) {
        bench_die("--connections must be 1..100000");
    }
    if (bench_opt.pipeline < 1 || bench_opt.pipeline > BENCH_MAXQ) {
        bench_die("--pipeline must be 1..%d", BENCH_MAXQ);
    }
    if (bench_opt.rows < 1 || bench_opt.value_size < 0 ||
        bench_opt.value_size > (64 << 20) || bench_opt.scan_batch < 1 ||
        bench_opt.multiget_keys < 1 || bench_opt.multiget_keys > 2000000 ||
        bench_opt.batch < 0 || bench_opt.batch > 1000000 ||
        bench_opt.celebrity < 0 || bench_opt.celebrity > 1 ||
        bench_opt.max_connecting < 1 || bench_opt.timeout <= 0 ||
        bench_opt.scan_limit < 0 || bench_opt.prefix_fields < 0) {
        bench_die("option out of range");
    }
    B.scan_target = (bench_target_t)bench_lookup("scan target",
                                                 bench_opt.scan_target,
                                                 targets, 3, 0);
    if (bench_opt.batch == 0) {
        bench_opt.batch = B.workload == BENCH_W_LOAD ? 1000 : 1;
    }
    /* bounded in time: a run without --ops gets a duration */
    if (bench_opt.duration <= 0 && bench_opt.max_ops <= 0 &&
        B.workload != BENCH_W_LOAD) {
        bench_opt.duration = 5;
    }
    if (bench_opt.salt_buckets < 0 ||
        (guint)bench_opt.salt_buckets > SALT_MAX_BUCKETS) {
        bench_die("--salt-buckets out of range");
    }
    B.salted = bench_opt.salt_buckets > 0;
    if (B.salted &&
        !salt_table_init(&B.salt, (uint32_t)bench_opt.salt_buckets,
                         (salt_format_t)bench_lookup("salt format",
                                                     bench_opt.salt_format,
                                                     formats, 3, 0),
                         NULL, 0, &err)) {
        bench_die("%s", err->message);
    }
    if (!B.salted) {
        B.sequential = FALSE;
    }
    B.table_name = bench_opt.table;

    /* 10 000 idle connections need the descriptors */
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
    }
    if (bench_opt.users < 0 || bench_opt.apps < 0 ||
        !bench_keys_init(&B.keys,
                         (bench_keydist_t)bench_lookup("key distribution",
                                                       bench_opt.keys, dists,
                                                       G_N_ELEMENTS(dists), 0),
                         (uint64_t)bench_opt.rows, bench_opt.zipf_s,
                         bench_opt.celebrity, (uint64_t)bench_opt.users,
                         (uint64_t)bench_opt.apps, (uint64_t)bench_opt.seed,
                         &why)) {
        bench_die("%s", why ? why : "--users/--apps out of range");
    }
    /* a range of indices is a range of rows only for the k keys */
    if (B.workload == BENCH_W_SCAN_RANGE && !bench_keys_ordered(&B.keys)) {
        bench_die("scan-range needs uniform, zipf or monotonic keys; use "
                  "scan-prefix with --prefix-fields for a key shape");
    }
    B.value = g_malloc((gsize)bench_opt.value_size + 1);
    for (int i = 0; i < bench_opt.value_size; i++) {
        B.value[i] = (uint8_t)('a' + bench_rand(&B.keys.rng) % 26);
    }
    wire_buf_init(&B.out);
    B.rep.rows = g_array_new(FALSE, FALSE, sizeof(struct bench_rowref));
    bench_hist_reset(&B.hist);
    B.cpu_start = B.cpu_end = B.bcpu_start = B.bcpu_end = -1;
    B.scpu_start = B.scpu_end = -1;
    B.mcpu_start = B.mcpu_end = B.steal_start = B.steal_end = -1;
    B.rss_start = B.rss_max = bench_proc_rss_kb(bench_opt.pid);
    B.rss_end = -1;

    B.base = event_base_new();
    if (B.base == NULL) {
        bench_die("event_base_new failed");
    }
    B.ev_warm = evtimer_new(B.base, bench_warm_cb, NULL);
    B.ev_stop = evtimer_new(B.base, bench_stop_cb, NULL);
    B.ev_abort = evtimer_new(B.base, bench_abort_cb, NULL);
    {
        struct timeval tv = { (time_t)bench_opt.timeout, 0 };

        event_add(B.ev_abort, &tv);
    }
    if (bench_opt.pid > 0) {
        struct timeval tv = { 0, 50000 };

        B.ev_rss = event_new(B.base, -1, EV_PERSIST, bench_rss_cb, NULL);
        event_add(B.ev_rss, &tv);
    }

    /* a client-side salted scan or multi-get needs a connection per bucket
     * to run its buckets in parallel; everything else needs one */
    per_session = 1;
    if (B.salted && !B.sequential &&
        (B.workload == BENCH_W_MULTIGET || B.workload >= BENCH_W_SCAN_FULL) &&
        B.workload <= BENCH_W_SCAN_RANGE) {
        per_session = B.salt.buckets;
    }
    needed_keys = (unsigned)MAX(bench_opt.batch, bench_opt.multiget_keys);
    B.nsessions = (unsigned)bench_opt.connections;
    B.sessions = g_new0(struct bench_session, B.nsessions);
    B.conns = g_ptr_array_new();
    for (unsigned i = 0; i < B.nsessions; i++) {
        struct bench_session *s = &B.sessions[i];

        s->id = i;
        s->nconns = per_session;
        s->conns = g_new0(struct bench_conn, per_session);
        for (unsigned j = 0; j < per_session; j++) {
            s->conns[j].s = s;
            g_ptr_array_add(B.conns, &s->conns[j]);
        }
        s->keys = g_new(struct bench_key, needed_keys);
        s->order = g_new(unsigned, needed_keys);
        s->scan.nb = B.salted ? B.salt.buckets : 1;
        s->scan.bk = g_new0(struct bench_bucket, s->scan.nb);
        s->scan.heap = g_new(unsigned, s->scan.nb);
        bench_scan_reset(&s->scan);
    }
    bench_connect_next();
    event_base_dispatch(B.base);
    if (B.t_stop == 0) {
        B.t_stop = bench_now_ns();
    }
    bench_report();
    return B.errors > 0 ? 1 : 0;
}
