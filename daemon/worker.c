/* worker.c: request objects, hooks and posted calls of a worker thread. */
#include "worker.h"

#include <string.h>

#include "invariant.h"

/* Free request objects kept per worker; beyond this they go to malloc. */
#define WORKER_FREE_REQS_MAX 1024
/* A kept request's reply buffer above this is released, not reused. */
#define WORKER_REPLY_KEEP (64u * 1024)

/* ---- request objects ---------------------------------------------------- */

struct req *
worker_req_get(struct worker *w)
{
    struct req *req;

    g_assert(w != NULL && w->gen != NULL);
    req = TAILQ_FIRST(&w->free_reqs);
    if (req != NULL) {
        TAILQ_REMOVE(&w->free_reqs, req, backend_link);
        w->nfree_reqs--;
    } else {
        req = g_new0(struct req, 1);
        wire_buf_init(&req->reply);
        wire_buf_init(&req->raw);
        wire_buf_init(&req->marks);
    }
    req_set_state(req, REQ_NEW);
    req->client = NULL;
    req->gen = w->gen;
    worker_gen_use(w, req->gen);
    req->conn = NULL;
    req->sink = NULL;
    req->sink_arg = NULL;
    req->sink_tag = 0;
    req->server = -1;
    req->failed = 0;
    req->can_retry = 0;
    req->timed_out = 0;
    req->stalled = 0;
    req->rereads = 0;
    req->stalled_on = -1;
    req->wait_until = 0;
    req->wait_probe = 0;
    codec_call_clear(&req->call);
    req->client_framed = 0;
    req->backend_seqid = 0;
    req->deadline = 0;
    req->started = 0;
    req->queued = 0;
    req->err_kind = 0;
    req->backend_name = NULL;
    req->salted = 0;
    req->legacy = 0;
    wire_buf_clear(&req->reply);
    wire_buf_clear(&req->raw);
    wire_buf_clear(&req->marks);
    return req;
}

void
worker_req_put(struct worker *w, struct req *req)
{
    g_assert(w != NULL && req != NULL);
    if (req->state == REQ_FREE) {
        /* put twice: on the free list once is all it can stand */
        invariant_broken(G_STRLOC, "request %.*s put back twice",
                         (int)req->call.name_len, req->call.name);
        return;
    }
    req_set_state(req, REQ_FREE);
    worker_gen_unuse(w, req->gen);
    if (w->nfree_reqs >= WORKER_FREE_REQS_MAX) {
        wire_buf_free(&req->reply);
        wire_buf_free(&req->raw);
        wire_buf_free(&req->marks);
        g_free(req);
        return;
    }
    /* one huge reply must not pin its memory in the free list forever */
    if (req->reply.cap > WORKER_REPLY_KEEP) {
        wire_buf_free(&req->reply);
    }
    if (req->raw.cap > WORKER_REPLY_KEEP) {
        wire_buf_free(&req->raw);
    }
    if (req->marks.cap > WORKER_REPLY_KEEP) {
        wire_buf_free(&req->marks);
    }
    TAILQ_INSERT_HEAD(&w->free_reqs, req, backend_link);
    w->nfree_reqs++;
}

void
worker_req_free_all(struct worker *w)
{
    struct req *req;

    g_assert(w != NULL);
    while ((req = TAILQ_FIRST(&w->free_reqs)) != NULL) {
        HSP_CHECK(req->state == REQ_FREE);
        TAILQ_REMOVE(&w->free_reqs, req, backend_link);
        wire_buf_free(&req->reply);
        wire_buf_free(&req->raw);
        wire_buf_free(&req->marks);
        g_free(req);
    }
    w->nfree_reqs = 0;
}

void
worker_req_finish(struct worker *w, struct req *req)
{
    g_assert(w != NULL && req != NULL);
    /* a client's was marked sent on; an internal one is its engine's */
    HSP_CHECK(req->state == REQ_SENT ||
              (req->state == REQ_NEW && req->sink != NULL));
    req_set_state(req, REQ_DONE);
    req->conn = NULL;
    if (req->sink != NULL) {
        /* internal: the sink owns req from here */
        req->sink(w, req);
        return;
    }
    if (req->client == NULL) {
        worker_req_put(w, req);
        return;
    }
    w->hooks.answered(req->client, req);
}

void
worker_replies_hold(struct worker *w)
{
    g_assert(w != NULL);
    HSP_CHECK(!w->replies_held);
    w->replies_held = TRUE;
}

void
worker_replies_release(struct worker *w)
{
    g_assert(w != NULL);
    HSP_CHECK(w->replies_held);
    w->replies_held = FALSE;
    w->hooks.flush_held(w);
}

/* ---- states ------------------------------------------------------------- */

static const char *const worker_state_names[] = {
    [WORKER_IDLE] = "idle",
    [WORKER_RUNNING] = "running",
    [WORKER_STOPPING] = "stopping",
    [WORKER_STOPPED] = "stopped",
};

/* Whether a worker may go from one state to the other (worker.h). */
static gboolean
worker_state_ok(enum worker_state from, enum worker_state to)
{
    switch (to) {
    case WORKER_RUNNING: return from == WORKER_IDLE;
    case WORKER_STOPPING: return from == WORKER_RUNNING;
    case WORKER_STOPPED:
        return from == WORKER_RUNNING || from == WORKER_STOPPING;
    case WORKER_IDLE: return FALSE;
    }
    return FALSE;
}

void
worker_set_state(struct worker *w, enum worker_state to)
{
    g_assert(w != NULL);
    if (!worker_state_ok(w->state, to)) {
        invariant_no_arrow(G_STRLOC, worker_state_names,
                           G_N_ELEMENTS(worker_state_names), w->state, to,
                           "worker %u", w->id);
    }
    g_debug("worker %u: %s", w->id, worker_state_names[to]);
    w->state = to;
}

int32_t
worker_next_seqid(struct worker *w)
{
    int32_t id = w->next_seqid;

    /* stays positive: some servers dislike negative seqids */
    w->next_seqid = w->next_seqid == G_MAXINT32 ? 1 : w->next_seqid + 1;
    return id;
}

/* ---- calls between threads ---------------------------------------------- */

void
worker_post(struct worker *to, worker_post_fn fn, void *arg)
{
    struct worker_call *call;
    gboolean first;

    g_assert(to != NULL && fn != NULL);
    call = g_new(struct worker_call, 1);
    call->fn = fn;
    call->arg = arg;
    g_mutex_lock(&to->inbox_lock);
    first = g_queue_is_empty(&to->inbox);
    g_queue_push_tail(&to->inbox, call);
    g_mutex_unlock(&to->inbox_lock);
    /* a non-empty inbox has rung already and not been emptied yet */
    if (first) {
        bell_ring(&to->bell);
    }
}

void
worker_run_posted(struct worker *w)
{
    GQueue batch = G_QUEUE_INIT;
    struct worker_call *call;

    g_assert(w != NULL);
    g_mutex_lock(&w->inbox_lock);
    batch = w->inbox;
    g_queue_init(&w->inbox);
    g_mutex_unlock(&w->inbox_lock);
    while ((call = g_queue_pop_head(&batch)) != NULL) {
        call->fn(w, call->arg);
        g_free(call);
    }
}
