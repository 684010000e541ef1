/* health.c: whether each backend server takes requests, and the thread
 * that probes them (HAProxy's check.c to backend.c's pools). */
#include "health.h"

#include <errno.h>
#include <signal.h>
#include <stddef.h>
#include <string.h>
#include <sys/socket.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>

#include "bell.h"
#include "hbase1.h"
#include "httpc.h"
#include "sasl.h"
#include "wire.h"

G_DEFINE_QUARK(health_error_quark, health_error)

/* Bytes in a probe failure's reason we build (a SASL failure names the
 * principal, the keytab and MIT's reason). */
#define HEALTH_MSG_MAX 512
/*
 * Health.  A server is DOWN after this many consecutive failures
 * (connect refused or timed out, request timed out, connection lost with
 * requests on it); any reply resets the count.  Not a config key: it
 * decides how soon traffic leaves a broken server, and the debounce
 * below already keeps one burst from counting three times.
 */
#define HEALTH_DOWN_AFTER 3
/*
 * One outage hits every connection of a server at once (a kill resets
 * them all, a stall times out every pipelined batch together): failures
 * closer together than this count once, so DOWN takes three separate
 * observations and one hiccup never ejects a server.
 */
#define HEALTH_FAIL_DEBOUNCE_MS 100
/* A DOWN server (or one that just failed a probe) is probed this often;
 * it is UP again within this long of answering. */
#define HEALTH_PROBE_DOWN_MS 250
/* How often the probe thread looks for probes that are due: a probe
 * starts within this long of its time (a read waits for it). */
#define HEALTH_TICK_MS 50
/* An UP server is probed this often, so an idle dead one is noticed. */
#define HEALTH_PROBE_UP_MS 5000
/* A probe without a reply after this long failed (capped further by
 * request_timeout_ms). */
#define HEALTH_PROBE_TIMEOUT_MS 4000
/*
 * A server that closes the probe's connection without a word, or answers
 * in another protocol or framing, most likely speaks another protocol or
 * transport than the proxy: probing it 4 times a second fills its log
 * with protocol errors and cannot succeed until someone edits a config.
 * Probes back off from the first to the most, doubling, while that lasts.
 */
#define HEALTH_PROBE_MISMATCH_FIRST_MS 2000
#define HEALTH_PROBE_MISMATCH_MAX_MS 32000

/*
 * One server's health: what it shares with the workers (see
 * health_shared), then what only the probe thread and the main thread's
 * health_use touch.  Entries live until the process exits.
 */
struct health_server {
    struct health_shared shared; /* the workers' part */
    struct health_table *table;
    struct sockaddr_storage addr; /* newest resolution (under table lock) */
    socklen_t addrlen;
    gint service;                   /* hbase1_service_id_t it speaks
                                       (atomic: set under lock, read by
                                       the probe thread) */
    gint current;                   /* in the newest generation (atomic) */
    gint probed;                    /* a probe has finished (atomic) */
    char sasl_server[256];          /* its principal (under table lock) */
    struct httpc_target http;       /* transport = http (under table lock) */
    struct sasl_client *probe_sasl; /* the probe's context, negotiating or
                                       done */
    struct evbuffer *probe_in;      /* the probe's reply, unwrapped */
    struct wire_buf probe_call;     /* sent once negotiated */
    struct bufferevent *probe;      /* probe in flight, or NULL */
    gboolean probe_connected;       /* the probe's connect succeeded */
    gint64 next_probe;              /* monotonic us */
    gint64 probe_started;           /* monotonic us the probe in flight
                                       (or the last) started */
    unsigned mismatch_ms;           /* probe interval while the server
                                       seems to speak another protocol or
                                       transport; 0 = it does not */
    const char *probe_method;       /* the call the probe waits on */
    char misplaced[256];            /* why it speaks the other service
                                       (under shared.lock), "" if it does
                                       not */
    guint64 probe_connect_failures; /* probes that could not connect
                                       (atomic: the scrape reads it) */
};

/* Every server ever configured, and the probe thread. */
struct health_table {
    GMutex lock;        /* guards entries and addresses */
    GPtrArray *entries; /* struct health_server * */
    wire_proto_t proto; /* restart-only settings */
    gboolean framed;
    unsigned request_timeout_ms; /* of the newest generation */
    struct event_base *base;     /* the probe thread's loop */
    struct event *tick;          /* starts due probes */
    struct bell bell;            /* a worker marked a server DOWN, or
                                       the main thread asks it to stop */
    gint stop_asked;             /* atomic */
    pthread_t thread;
    gboolean running;
    int32_t seqid;
    gboolean http;           /* transport = http: probes via httpc */
    struct sasl_creds *sasl; /* the process's tickets; NULL: no SASL */
    sasl_qop_t sasl_qop;
    uint32_t sasl_max;    /* max_reply_size (restart-only) */
    struct event *renew;  /* renews sasl (probe thread) */
    char sasl_error[512]; /* the renewal failure last logged */
};

/*
 * UP -> DOWN: the workers, on HEALTH_DOWN_AFTER debounced failures in a
 * row (health_failed); a DOWN server gets no request, scanner
 * calls pinned to it included, and when no server is UP requests fail
 * naming every server and why (backend_unavailable; a read first waits
 * while a DOWN server's next probe may find it back:
 * backend_may_come_back).
 * DOWN -> UP: the probe thread, when a probe (connect, getTableNames,
 * any whole reply) succeeds; probes run every HEALTH_PROBE_DOWN_MS
 * while a server is DOWN, the first one as soon as it goes DOWN, and
 * every HEALTH_PROBE_UP_MS while it is UP, where a failed probe counts
 * like a failed request.  A thread of its own, so probing goes on while
 * workers are busy and whether or not the admin endpoint is on.
 */

/*
 * The one place a server's state changes, from from to to: a CAS, so
 * that of threads seeing the same failure one alone makes the change
 * (and says so in the log): TRUE for that one.  UP -> DOWN: any thread
 * (health_failed, health_probe_misplaced); DOWN -> UP: the probe thread
 * (health_probe_finish).  Nothing else moves it.
 */
static gboolean
health_state_move(struct health_server *h, enum health_state from,
                  enum health_state to)
{
    g_assert(from != to);
    g_assert(to == HEALTH_DOWN ||
             pthread_equal(pthread_self(), h->table->thread));
    return g_atomic_int_compare_and_exchange(&h->shared.state, from, to);
}

static struct health_server *
health_find(struct health_table *t, const char *name)
{
    for (guint i = 0; i < t->entries->len; i++) {
        struct health_server *h = g_ptr_array_index(t->entries, i);

        if (strcmp(h->shared.name, name) == 0) {
            return h;
        }
    }
    return NULL;
}

/* The entry of name, made if new; t->lock held. */
static struct health_server *
health_get(struct health_table *t, const char *name)
{
    struct health_server *h = health_find(t, name);

    if (h == NULL) {
        h = g_new0(struct health_server, 1);
        h->table = t;
        g_strlcpy(h->shared.name, name, sizeof(h->shared.name));
        g_mutex_init(&h->shared.lock);
        h->shared.state = HEALTH_UP;
        g_ptr_array_add(t->entries, h);
    }
    return h;
}

struct health_shared *
health_lookup(struct health_table *t, const char *name)
{
    struct health_server *h;

    g_assert(t != NULL && name != NULL && name[0] != '\0');
    g_mutex_lock(&t->lock);
    h = health_get(t, name);
    g_mutex_unlock(&t->lock);
    return &h->shared;
}

struct sasl_creds *
health_sasl_creds(const struct health_table *t)
{
    return t->sasl;
}

/* The entry whose shared part s is. */
static struct health_server *
health_server_of(struct health_shared *s)
{
    return (struct health_server *)((char *)s -
                                    offsetof(struct health_server, shared));
}

void
health_failed(struct health_shared *s, const char *why)
{
    struct health_server *h = health_server_of(s);
    struct health_table *t = h->table;
    gint64 now = req_now();
    gint64 last = __atomic_load_n(&h->shared.last_fail, __ATOMIC_RELAXED);
    gint n;

    g_assert(why != NULL);
    g_mutex_lock(&h->shared.lock);
    g_strlcpy(h->shared.why, why, sizeof(h->shared.why));
    g_mutex_unlock(&h->shared.lock);
    if (now - last < (gint64)HEALTH_FAIL_DEBOUNCE_MS * 1000 ||
        !__atomic_compare_exchange_n(&h->shared.last_fail, &last, now, FALSE,
                                     __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
        return; /* the same burst, or another thread counted it */
    }
    n = g_atomic_int_add(&h->shared.failures, 1) + 1;
    if (n >= HEALTH_DOWN_AFTER &&
        health_state_move(h, HEALTH_UP, HEALTH_DOWN)) {
        g_mutex_lock(&h->shared.lock);
        h->shared.down_at = now;
        g_mutex_unlock(&h->shared.lock);
        g_atomic_int_set(&h->shared.probe_now, 1);
        g_warning("backend %s: down after %d failures in a row (last: "
                  "%s); it gets no requests until it answers a probe, "
                  "and while no server is up requests fail (reads once "
                  "the next probe finds it still down)",
                  h->shared.name, n, why);
        if (t->bell.fd >= 0) {
            bell_ring(&t->bell);
        }
    }
}

struct health_table *
health_new(const struct worker_settings *startup)
{
    struct health_table *t = g_new0(struct health_table, 1);

    g_assert(startup != NULL);
    t->bell.fd = -1;
    g_mutex_init(&t->lock);
    t->entries = g_ptr_array_new();
    t->proto = startup->backend_proto;
    t->framed = startup->backend_framed;
    t->http = startup->backend_http;
    if (startup->backend_sasl) {
        t->sasl = sasl_creds_new(startup->sasl_principal,
                                 startup->sasl_keytab);
        t->sasl_qop = (sasl_qop_t)startup->backend_sasl_qop;
        t->sasl_max = startup->max_reply_size;
    }
    health_use(t, startup);
    return t;
}

void
health_use(struct health_table *t, const struct worker_settings *set)
{
    g_assert(t != NULL && set != NULL);
    g_mutex_lock(&t->lock);
    for (guint i = 0; i < t->entries->len; i++) {
        struct health_server *h = g_ptr_array_index(t->entries, i);

        g_atomic_int_set(&h->current, 0);
    }
    for (unsigned i = 0; i < set->nservers; i++) {
        struct health_server *h = health_get(t, set->servers[i].name);

        memcpy(&h->addr, &set->servers[i].addr, set->servers[i].addrlen);
        h->addrlen = set->servers[i].addrlen;
        if (g_atomic_int_get(&h->service) != set->servers[i].service) {
            /* listed under the other key now: ask it again at once */
            g_atomic_int_set(&h->shared.probe_now, 1);
        }
        g_atomic_int_set(&h->service, set->servers[i].service);
        g_strlcpy(h->sasl_server, set->servers[i].sasl_server,
                  sizeof(h->sasl_server));
        h->http = set->servers[i].http;
        g_atomic_int_set(&h->current, 1);
    }
    t->request_timeout_ms = set->request_timeout_ms;
    g_mutex_unlock(&t->lock);
}

/* The names of the settings in the config's words, for messages. */
static const char *
health_proto_name(wire_proto_t proto)
{
    return proto == WIRE_COMPACT ? "compact" : "binary";
}

static const char *
health_framing_name(gboolean framed)
{
    return framed ? "framed" : "buffered";
}

/* The probe of h ended (probe thread).  mismatch: what the server did
 * suggests it speaks another protocol or transport (why says what). */
static void
health_probe_finish(struct health_server *h, gboolean ok, const char *why,
                    gboolean mismatch)
{
    struct health_table *t = h->table;
    char text[320];
    unsigned interval = ok ? HEALTH_PROBE_UP_MS : HEALTH_PROBE_DOWN_MS;

    g_clear_pointer(&h->probe, bufferevent_free);
    g_clear_pointer(&h->probe_sasl, sasl_client_free);
    g_clear_pointer(&h->probe_in, evbuffer_free);
    wire_buf_clear(&h->probe_call);
    if (ok && h->misplaced[0] != '\0') {
        g_mutex_lock(&h->shared.lock);
        h->misplaced[0] = '\0';
        g_mutex_unlock(&h->shared.lock);
        h->mismatch_ms = 0;
        g_message("backend %s: answers as a %s server now", h->shared.name,
                  g_atomic_int_get(&h->service) == HBASE1_SERVICE_THRIFT2
                      ? "Thrift2 (THBaseService)"
                      : "Thrift1 (Hbase)");
    }
    if (mismatch) {
        if (h->mismatch_ms == 0 && h->misplaced[0] != '\0') {
            /* health_probe_misplaced said why */
            h->mismatch_ms = HEALTH_PROBE_MISMATCH_FIRST_MS;
        } else if (h->mismatch_ms == 0) {
            h->mismatch_ms = HEALTH_PROBE_MISMATCH_FIRST_MS;
            /* once per episode: the reason does not change probe to probe */
            g_warning("backend %s: %s: it likely speaks another protocol or "
                      "transport than [backend] protocol = %s and [backend] "
                      "transport = %s (HBase's Thrift server: -c/--compact, "
                      "-f/--framed; hsha, nonblocking and threadedselector "
                      "are always framed); probing it every %u to %u s "
                      "until it answers",
                      h->shared.name, why, health_proto_name(t->proto),
                      health_framing_name(t->framed),
                      HEALTH_PROBE_MISMATCH_FIRST_MS / 1000,
                      HEALTH_PROBE_MISMATCH_MAX_MS / 1000);
        } else {
            h->mismatch_ms = MIN(h->mismatch_ms * 2,
                                 HEALTH_PROBE_MISMATCH_MAX_MS);
        }
        interval = h->mismatch_ms;
    } else if (h->mismatch_ms != 0 && ok) {
        h->mismatch_ms = 0;
        g_message("backend %s: answers probes in [backend] protocol = %s, "
                  "transport = %s again",
                  h->shared.name, health_proto_name(t->proto),
                  health_framing_name(t->framed));
    } else if (h->mismatch_ms != 0) {
        /* refused or silent now: no sign either way; keep the pace */
        interval = h->mismatch_ms;
    }
    h->next_probe = req_now() + (gint64)interval * 1000;
    g_atomic_int_set(&h->probed, 1);
    if (!ok) {
        g_snprintf(text, sizeof(text), "probe: %s", why);
        g_debug("health: backend %s: %s", h->shared.name, text);
        health_failed(&h->shared, text);
        /* after the failure is counted: a read that sees this time sees
         * the server DOWN (health_down_since).  When the probe started,
         * not ended: a probe sent before the server came back may fail
         * after a read came, which says nothing of the server then */
        __atomic_store_n(&h->shared.probe_failed_at,
                         h->mismatch_ms != 0 ? G_MAXINT64 : h->probe_started,
                         __ATOMIC_RELAXED);
        return;
    }
    __atomic_store_n(&h->shared.probe_failed_at, 0, __ATOMIC_RELAXED);
    g_atomic_int_set(&h->shared.failures, 0);
    if (health_state_move(h, HEALTH_DOWN, HEALTH_UP)) {
        gint64 down_at;

        g_mutex_lock(&h->shared.lock);
        down_at = h->shared.down_at;
        g_mutex_unlock(&h->shared.lock);
        g_message("backend %s: up again after %.1f s down", h->shared.name,
                  (double)(req_now() - down_at) / G_USEC_PER_SEC);
    }
}

/*
 * Bytes that are not a reply in our protocol and framing: if they are
 * one in another, say which (the server answered, so it is no crash).
 */
static gboolean
health_probe_misspoken(struct health_server *h, struct evbuffer *in, char *why,
                       size_t whylen)
{
    struct health_table *t = h->table;
    size_t len = MIN(evbuffer_get_length(in), (size_t)64);
    const uint8_t *p = evbuffer_pullup(in, (ev_ssize_t)len);
    const char *dwhy = NULL;
    wire_proto_t proto;
    gboolean framed;

    if (p == NULL || wire_detect(p, len, &proto, &framed, &dwhy) != WIRE_OK ||
        (proto == t->proto && framed == t->framed)) {
        return FALSE;
    }
    g_snprintf(why, whylen,
               "probe: the reply is in the %s protocol, %s "
               "transport",
               health_proto_name(proto), health_framing_name(framed));
    return TRUE;
}

/*
 * The probe's bytes over SASL: negotiation, then the getTableNames call
 * wrapped, then the reply unwrapped into h->probe_in.  FALSE when the
 * probe ended or has nothing to parse yet.
 */
static gboolean
health_probe_sasl(struct health_server *h, struct bufferevent *bev)
{
    struct evbuffer *raw = bufferevent_get_input(bev);
    g_autoptr(GError) error = NULL;
    g_autoptr(GByteArray) out = g_byte_array_new();
    char why[HEALTH_MSG_MAX];

    if (h->probe_in == NULL) {
        size_t used = 0;
        sasl_step_t st = sasl_client_feed(h->probe_sasl,
                                          evbuffer_pullup(raw, -1),
                                          evbuffer_get_length(raw), &used, out,
                                          &error);

        evbuffer_drain(raw, used);
        if (st == SASL_STEP_FAILED) {
            g_snprintf(why, sizeof(why), "SASL: %s", error->message);
            health_probe_finish(h, FALSE, why, FALSE);
            return FALSE;
        }
        if (st == SASL_STEP_CONTINUE) {
            bufferevent_write(bev, out->data, out->len);
            return FALSE;
        }
        if (!sasl_client_wrap(h->probe_sasl, h->probe_call.data,
                              h->probe_call.len, out, &error)) {
            g_snprintf(why, sizeof(why), "SASL: %s", error->message);
            health_probe_finish(h, FALSE, why, FALSE);
            return FALSE;
        }
        bufferevent_write(bev, out->data, out->len);
        g_byte_array_set_size(out, 0);
        h->probe_in = evbuffer_new();
    }
    for (;;) {
        size_t avail = evbuffer_get_length(raw), size = 0, used = 0;
        uint8_t hdr[4];

        if (avail < 4) {
            break;
        }
        evbuffer_copyout(raw, hdr, 4);
        if (!sasl_client_frame_size(h->probe_sasl, hdr, &size, &error) ||
            avail < size) {
            break;
        }
        if (!sasl_client_unwrap(h->probe_sasl,
                                evbuffer_pullup(raw, (ev_ssize_t)size), size,
                                &used, out, &error)) {
            break;
        }
        evbuffer_drain(raw, used);
    }
    if (error != NULL) {
        g_snprintf(why, sizeof(why), "SASL: %s", error->message);
        health_probe_finish(h, FALSE, why, FALSE);
        return FALSE;
    }
    evbuffer_add(h->probe_in, out->data, out->len);
    return evbuffer_get_length(h->probe_in) > 0;
}

/* The call a probe of h sends: one without arguments, cheap for HBase,
 * in the service h speaks (Thrift2 has no getTableNames). */
static const char *
health_probe_method(struct health_server *h)
{
    return g_atomic_int_get(&h->service) == HBASE1_SERVICE_THRIFT2
               ? "getThriftServerType"
               : "getTableNames";
}

/* The probe's call of method (no arguments) into buf, which it
 * initializes; h waits on it from now. */
static void
health_probe_call(struct health_server *h, const char *method,
                  struct wire_buf *buf)
{
    struct health_table *t = h->table;
    struct wire_writer wr;
    size_t off = 0;

    wire_buf_init(buf);
    if (t->framed) {
        off = wire_frame_begin(buf);
    }
    wire_writer_init(&wr, t->proto, buf);
    t->seqid = t->seqid == G_MAXINT32 ? 1 : t->seqid + 1;
    wire_write_msg_begin(&wr, (const uint8_t *)method, strlen(method),
                         WIRE_CALL, t->seqid);
    wire_write_struct_begin(&wr);
    wire_write_struct_end(&wr);
    if (t->framed) {
        wire_frame_end(buf, off);
    }
    h->probe_method = method;
}

/* A further call on the probe's connection, once the first answered
 * (SASL negotiated by then). */
static void
health_probe_send(struct health_server *h, struct bufferevent *bev,
                  const char *method)
{
    struct wire_buf buf;
    g_autoptr(GByteArray) out = g_byte_array_new();
    g_autoptr(GError) error = NULL;
    char why[HEALTH_MSG_MAX];

    health_probe_call(h, method, &buf);
    if (h->probe_sasl != NULL) {
        if (!sasl_client_wrap(h->probe_sasl, buf.data, buf.len, out, &error)) {
            wire_buf_free(&buf);
            g_snprintf(why, sizeof(why), "SASL: %s", error->message);
            health_probe_finish(h, FALSE, why, FALSE);
            return;
        }
        bufferevent_write(bev, out->data, out->len);
    } else {
        bufferevent_write(bev, buf.data, buf.len);
    }
    wire_buf_free(&buf);
}

/* The probe found h speaking the other service (text says so): DOWN
 * at once, whatever the failure count, as no call of ours can succeed
 * there (the table catalog asks only while a server is UP), and probed
 * at the mismatch pace until the configuration lists it right. */
static void
health_probe_misplaced(struct health_server *h, const char *text)
{
    gboolean first;

    g_mutex_lock(&h->shared.lock);
    first = strcmp(h->misplaced, text) != 0;
    g_strlcpy(h->misplaced, text, sizeof(h->misplaced));
    if (health_state_move(h, HEALTH_UP, HEALTH_DOWN)) {
        h->shared.down_at = req_now();
    }
    g_mutex_unlock(&h->shared.lock);
    if (first) {
        g_warning("backend %s; it gets no requests and the table "
                  "catalog is not asked through it; probing it every %u "
                  "to %u s until it answers as the service it is listed "
                  "for",
                  text, HEALTH_PROBE_MISMATCH_FIRST_MS / 1000,
                  HEALTH_PROBE_MISMATCH_MAX_MS / 1000);
    }
    health_probe_finish(h, FALSE, text, TRUE);
}

/*
 * A whole reply to the probe's call: the server answers.  Unless it
 * answers as the other service: a Thrift1 server's getTableNames is an
 * unknown method to a Thrift2 one, whose getThriftServerType then says
 * TWO; a Thrift2 probe's getThriftServerType says ONE on a Thrift1 one.
 * (A server without getThriftServerType, HBase 1.x, is taken as it is
 * listed.)
 */
static void
health_probe_reply(struct health_server *h, struct bufferevent *bev,
                   struct evbuffer *in, const uint8_t *msg, size_t len)
{
    hbase1_service_id_t listed = g_atomic_int_get(&h->service);
    size_t hdr = h->table->framed ? 4 : 0;
    hbase1_kind_t kind;
    g_autofree char *text = NULL;

    if (len < hdr ||
        !hbase1_kind_of_reply((int)h->table->proto, msg + hdr, len - hdr,
                              h->probe_method, &kind)) {
        /* a whole message all the same: someone answers */
        health_probe_finish(h, TRUE, NULL, FALSE);
        return;
    }
    evbuffer_drain(in, len);
    if (listed == HBASE1_SERVICE_THRIFT1 &&
        kind == HBASE1_KIND_UNKNOWN_METHOD &&
        strcmp(h->probe_method, "getTableNames") == 0) {
        /* which service then: ask it, on the same connection */
        health_probe_send(h, bev, "getThriftServerType");
        return;
    }
    if (listed == HBASE1_SERVICE_THRIFT1 &&
        strcmp(h->probe_method, "getThriftServerType") == 0) {
        text = kind == HBASE1_KIND_THRIFT2
                   ? hbase1_kind_misplaced(h->shared.name, listed)
                   : g_strdup_printf("%s answers getTableNames with "
                                     "\"Invalid method name\": it is no "
                                     "Thrift1 (Hbase) server",
                                     h->shared.name);
    } else if (listed == HBASE1_SERVICE_THRIFT2 &&
               kind == HBASE1_KIND_THRIFT1) {
        text = hbase1_kind_misplaced(h->shared.name, listed);
    }
    if (text != NULL) {
        health_probe_misplaced(h, text);
    } else {
        health_probe_finish(h, TRUE, NULL, FALSE);
    }
}

static void
health_probe_read_cb(struct bufferevent *bev, void *arg)
{
    struct health_server *h = arg;
    struct evbuffer *in = bufferevent_get_input(bev);
    const uint8_t *msg = NULL;
    const char *why = NULL;
    size_t len = 0;
    wire_status_t st;

    if (h->probe_sasl != NULL) {
        if (!health_probe_sasl(h, bev)) {
            return;
        }
        in = h->probe_in;
    }
    st = req_msg_next(in, h->table->proto, h->table->framed,
                      &wire_default_limits, &msg, &len, &why);
    if (st == WIRE_OK) {
        health_probe_reply(h, bev, in, msg, len);
    } else if (st == WIRE_ERROR) {
        char text[128];

        if (health_probe_misspoken(h, in, text, sizeof(text))) {
            health_probe_finish(h, FALSE, text + strlen("probe: "), TRUE);
        } else {
            health_probe_finish(h, FALSE, why != NULL ? why : "bad reply",
                                FALSE);
        }
    }
}

static void
health_probe_event_cb(struct bufferevent *bev, short what, void *arg)
{
    struct health_server *h = arg;
    char why[128];

    if (what & BEV_EVENT_CONNECTED) {
        h->probe_connected = TRUE;
        return;
    }
    if (what & BEV_EVENT_TIMEOUT) {
        health_probe_finish(h, FALSE, "no reply in time", FALSE);
    } else if ((what & BEV_EVENT_EOF) && h->probe_sasl != NULL &&
               h->probe_in == NULL) {
        health_probe_finish(h, FALSE,
                            "SASL: the server closed the "
                            "connection during the negotiation (does it "
                            "run with hbase.thrift.security.qop?)",
                            FALSE);
    } else if (what & BEV_EVENT_EOF) {
        /* the request went out and the server hung up without a byte:
         * what HBase does with a message in another protocol or framing
         * ("Bad version in readMessageBegin", "Read a negative frame
         * size", "Expected protocol id") */
        /* (in HTTP mode the bridge closes for a failed connection, and
         * has logged why) */
        gboolean silent = !h->table->http &&
                          evbuffer_get_length(bufferevent_get_input(bev)) == 0;

        health_probe_finish(h, FALSE,
                            silent ? "connection closed without "
                                     "a reply to getTableNames"
                                   : "connection closed",
                            silent);
    } else if (what & BEV_EVENT_ERROR) {
        int err = EVUTIL_SOCKET_ERROR();

        if (!h->probe_connected) {
            __atomic_add_fetch(&h->probe_connect_failures, 1,
                               __ATOMIC_RELAXED);
            g_snprintf(why, sizeof(why), "connect: %s",
                       evutil_socket_error_to_string(err));
        } else {
            g_snprintf(why, sizeof(why), "%s",
                       evutil_socket_error_to_string(err));
        }
        health_probe_finish(h, FALSE, why, FALSE);
    }
}

/* Connects to h and sends getTableNames (Thrift2: getThriftServerType):
 * a reply proves the server speaks Thrift, not just that a port is
 * open. */
static void
health_probe_start(struct health_table *t, struct health_server *h)
{
    unsigned ms = t->request_timeout_ms != 0
                      ? MIN(MAX(t->request_timeout_ms, 100u),
                            HEALTH_PROBE_TIMEOUT_MS)
                      : HEALTH_PROBE_TIMEOUT_MS;
    struct timeval tv = { ms / 1000, (ms % 1000) * 1000 };
    struct sockaddr_storage addr;
    socklen_t addrlen;
    struct wire_buf buf;
    struct httpc_target http;
    evutil_socket_t fd = -1;

    h->probe_started = req_now();
    g_mutex_lock(&t->lock);
    memcpy(&addr, &h->addr, sizeof(addr));
    addrlen = h->addrlen;
    http = h->http;
    g_mutex_unlock(&t->lock);
    if (t->http) {
        g_autoptr(GError) err = NULL;
        char why[HEALTH_MSG_MAX];

        fd = httpc_bridge_open(t->base, &http, t->sasl, &err);
        if (fd < 0) {
            g_snprintf(why, sizeof(why), "HTTP: %s", err->message);
            health_probe_finish(h, FALSE, why, FALSE);
            return;
        }
    }
    h->probe = bufferevent_socket_new(t->base, fd, BEV_OPT_CLOSE_ON_FREE);
    if (h->probe == NULL) {
        health_probe_finish(h, FALSE, "cannot create a socket buffer", FALSE);
        return;
    }
    bufferevent_setcb(h->probe, health_probe_read_cb, NULL,
                      health_probe_event_cb, h);
    bufferevent_set_timeouts(h->probe, &tv, &tv);
    bufferevent_enable(h->probe, EV_READ | EV_WRITE);
    health_probe_call(h, health_probe_method(h), &buf);
    if (t->sasl != NULL && !t->http) {
        g_autoptr(GByteArray) out = g_byte_array_new();
        g_autoptr(GError) error = NULL;
        char why[HEALTH_MSG_MAX];

        /* the call waits for the negotiation */
        wire_buf_clear(&h->probe_call);
        wire_buf_append(&h->probe_call, buf.data, buf.len);
        wire_buf_free(&buf);
        g_mutex_lock(&t->lock);
        h->probe_sasl = sasl_client_new(t->sasl, h->sasl_server, t->sasl_qop,
                                        t->sasl_max);
        g_mutex_unlock(&t->lock);
        if (sasl_client_start(h->probe_sasl, out, &error) ==
            SASL_STEP_FAILED) {
            g_snprintf(why, sizeof(why), "SASL: %s", error->message);
            health_probe_finish(h, FALSE, why, FALSE);
            return;
        }
        bufferevent_write(h->probe, out->data, out->len);
    } else {
        bufferevent_write(h->probe, buf.data, buf.len);
        wire_buf_free(&buf);
    }
    h->probe_connected = fd >= 0;
    if (fd < 0 &&
        bufferevent_socket_connect(h->probe, (struct sockaddr *)&addr,
                                   (int)addrlen) < 0) {
        __atomic_add_fetch(&h->probe_connect_failures, 1, __ATOMIC_RELAXED);
        health_probe_finish(h, FALSE, "connect failed", FALSE);
    }
}

/* Starts the probes that are due: DOWN servers (whatever generation
 * still uses them) and the current ones. */
static void
health_tick_cb(evutil_socket_t fd, short what, void *arg)
{
    struct health_table *t = arg;
    gint64 now = req_now();
    GPtrArray *due = g_ptr_array_new();

    g_mutex_lock(&t->lock);
    for (guint i = 0; i < t->entries->len; i++) {
        struct health_server *h = g_ptr_array_index(t->entries, i);
        gboolean down = g_atomic_int_get(&h->shared.state) == HEALTH_DOWN;

        if (h->probe != NULL || h->addrlen == 0) {
            continue;
        }
        /* a server that just went DOWN is probed at once */
        if (down ? (g_atomic_int_and(&h->shared.probe_now, 0) != 0 ||
                    now >= h->next_probe)
                 : (g_atomic_int_get(&h->current) && now >= h->next_probe)) {
            g_ptr_array_add(due, h);
        }
    }
    g_mutex_unlock(&t->lock);
    for (guint i = 0; i < due->len; i++) {
        health_probe_start(t, g_ptr_array_index(due, i));
    }
    g_ptr_array_free(due, TRUE);
}

/* The bell: a probe is due at once, or the thread must stop.  A
 * loopbreak from another thread would be lost before the loop runs; a
 * ring is not. */
static void
health_bell_cb(evutil_socket_t fd, short what, void *arg)
{
    struct health_table *t = arg;

    bell_answer(&t->bell);
    if (g_atomic_int_get(&t->stop_asked)) {
        event_base_loopbreak(t->base);
        return;
    }
    health_tick_cb(-1, 0, t);
}

/*
 * Gets the process a new Kerberos ticket (probe thread, or the main
 * thread before any worker runs).  A failure is logged when its reason
 * is new; connections keep using the current ticket while it lasts, and
 * fail with the reason once none is left.
 */
static void
health_sasl_renew(struct health_table *t)
{
    g_autoptr(GError) error = NULL;
    gint64 now, exp, next;
    const char *who = sasl_creds_principal(t->sasl);

    if (!sasl_creds_renew(t->sasl, &error)) {
        if (strcmp(t->sasl_error, error->message) != 0) {
            g_strlcpy(t->sasl_error, error->message, sizeof(t->sasl_error));
            g_warning("SASL: %s", error->message);
        }
        return;
    }
    now = g_get_real_time();
    exp = sasl_creds_expiry(t->sasl);
    next = sasl_creds_renew_at(t->sasl);
    if (t->sasl_error[0] != '\0') {
        g_message("SASL: got a Kerberos ticket for %s again", who);
        t->sasl_error[0] = '\0';
    }
    g_message("SASL: Kerberos ticket for %s valid for %" G_GINT64_FORMAT
              " s more, renewed in %" G_GINT64_FORMAT " s",
              who, (exp - now) / G_USEC_PER_SEC,
              (next - now) / G_USEC_PER_SEC);
}

/* Arms the renewal for when the credentials ask for it. */
static void
health_sasl_renew_arm(struct health_table *t)
{
    gint64 delta = MAX(sasl_creds_renew_at(t->sasl) - g_get_real_time(), 0);
    struct timeval tv = { (time_t)(delta / G_USEC_PER_SEC),
                          (suseconds_t)(delta % G_USEC_PER_SEC) };

    evtimer_add(t->renew, &tv);
}

static void
health_sasl_renew_cb(evutil_socket_t fd, short what, void *arg)
{
    struct health_table *t = arg;

    health_sasl_renew(t);
    health_sasl_renew_arm(t);
}

static void *
health_main(void *arg)
{
    struct health_table *t = arg;

    event_base_dispatch(t->base);
    return NULL;
}

gboolean
health_start(struct health_table *t, GError **error)
{
    struct timeval every = { 0, HEALTH_TICK_MS * 1000 };
    sigset_t all, old;
    int rc;

    /* once: the thread's events are made here */
    g_assert(t != NULL && !t->running && t->base == NULL);
    g_assert(error == NULL || *error == NULL);
    t->base = event_base_new();
    if (t->base == NULL) {
        g_set_error(error, HEALTH_ERROR, HEALTH_ERROR_LIBEVENT,
                    "health: event_base_new failed");
        return FALSE;
    }
    t->tick = event_new(t->base, -1, EV_PERSIST, health_tick_cb, t);
    if (t->tick == NULL || !bell_init(&t->bell, t->base, health_bell_cb, t)) {
        g_set_error(error, HEALTH_ERROR, HEALTH_ERROR_LIBEVENT,
                    "health: cannot make its events: %s", g_strerror(errno));
        return FALSE;
    }
    event_add(t->tick, &every);
    if (t->sasl != NULL) {
        /* the first ticket before any connection wants it; a failure is
         * logged and retried, and requests fail with its reason */
        t->renew = evtimer_new(t->base, health_sasl_renew_cb, t);
        if (t->renew == NULL) {
            g_set_error(error, HEALTH_ERROR, HEALTH_ERROR_LIBEVENT,
                        "health: cannot make the renewal timer");
            return FALSE;
        }
        health_sasl_renew(t);
        health_sasl_renew_arm(t);
    }
    /* the first round right away, so /healthz is soon meaningful */
    bell_ring(&t->bell);
    /* signals stay with the main thread */
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &old);
    rc = pthread_create(&t->thread, NULL, health_main, t);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc != 0) {
        g_set_error(error, HEALTH_ERROR, HEALTH_ERROR_LIBEVENT,
                    "cannot start the health thread: %s", g_strerror(rc));
        return FALSE;
    }
    t->running = TRUE;
    return TRUE;
}

void
health_stop(struct health_table *t)
{
    if (t == NULL || !t->running) {
        return;
    }
    g_atomic_int_set(&t->stop_asked, 1);
    bell_ring(&t->bell);
    pthread_join(t->thread, NULL);
    t->running = FALSE;
}

void
health_free(struct health_table *t)
{
    if (t == NULL) {
        return;
    }
    health_stop(t);
    for (guint i = 0; i < t->entries->len; i++) {
        struct health_server *h = g_ptr_array_index(t->entries, i);

        g_clear_pointer(&h->probe, bufferevent_free);
        sasl_client_free(h->probe_sasl);
        g_clear_pointer(&h->probe_in, evbuffer_free);
        wire_buf_free(&h->probe_call);
        g_mutex_clear(&h->shared.lock);
        g_free(h);
    }
    g_ptr_array_free(t->entries, TRUE);
    g_clear_pointer(&t->tick, event_free);
    g_clear_pointer(&t->renew, event_free);
    bell_free(&t->bell);
    if (t->base != NULL) {
        /* the probes' bridges (HTTP mode), and what the probes' own
         * bufferevents left queued: nothing of the table's runs now */
        httpc_base_done(t->base);
    }
    sasl_creds_free(t->sasl);
    g_clear_pointer(&t->base, event_base_free);
    g_mutex_clear(&t->lock);
    g_free(t);
}

void
health_foreach(struct health_table *t, health_fn fn, void *arg)
{
    g_assert(t != NULL && fn != NULL);
    g_mutex_lock(&t->lock);
    for (guint i = 0; i < t->entries->len; i++) {
        struct health_server *h = g_ptr_array_index(t->entries, i);

        if (g_atomic_int_get(&h->current)) {
            struct health_info info = {
                .name = h->shared.name,
                .up = g_atomic_int_get(&h->shared.state) == HEALTH_UP,
                .probed = g_atomic_int_get(&h->probed) != 0,
                .probe_connect_failures =
                    __atomic_load_n(&h->probe_connect_failures,
                                    __ATOMIC_RELAXED),
                .retired_requests = h->shared.retired_requests,
                .retired_failures = h->shared.retired_failures,
                .retired_connect_failures = h->shared.retired_connect_failures,
            };

            memcpy(info.retired_errors, h->shared.retired_errors,
                   sizeof(info.retired_errors));
            g_mutex_lock(&h->shared.lock);
            g_strlcpy(info.misplaced, h->misplaced, sizeof(info.misplaced));
            g_mutex_unlock(&h->shared.lock);
            fn(&info, arg);
        }
    }
    g_mutex_unlock(&t->lock);
}
