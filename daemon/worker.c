/* worker.c: request objects, hooks and posted calls of a worker thread. */
#include "worker.h"

#include <string.h>

/* Free request objects kept per worker; beyond this they go to malloc. */
#define WORKER_FREE_REQS_MAX 1024
/* A kept request's reply buffer above this is released, not reused. */
#define WORKER_REPLY_KEEP (64u * 1024)

/* ---- request objects ---------------------------------------------------- */

struct req *
worker_req_get(struct worker *w)
{
    struct req *req = TAILQ_FIRST(&w->free_reqs);

    if (req != NULL) {
        TAILQ_REMOVE(&w->free_reqs, req, backend_link);
        w->nfree_reqs--;
    } else {
        req = g_new0(struct req, 1);
        wire_buf_init(&req->reply);
        wire_buf_init(&req->raw);
    }
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
    memset(&req->call, 0, sizeof(req->call));
    req->done = 0;
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
    return req;
}

void
worker_req_put(struct worker *w, struct req *req)
{
    worker_gen_unuse(w, req->gen);
    if (w->nfree_reqs >= WORKER_FREE_REQS_MAX) {
        wire_buf_free(&req->reply);
        wire_buf_free(&req->raw);
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
    TAILQ_INSERT_HEAD(&w->free_reqs, req, backend_link);
    w->nfree_reqs++;
}

void
worker_req_free_all(struct worker *w)
{
    struct req *req;

    while ((req = TAILQ_FIRST(&w->free_reqs)) != NULL) {
        TAILQ_REMOVE(&w->free_reqs, req, backend_link);
        wire_buf_free(&req->reply);
        wire_buf_free(&req->raw);
        g_free(req);
    }
    w->nfree_reqs = 0;
}

void
worker_req_finish(struct worker *w, struct req *req)
{
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
    w->replies_held = TRUE;
}

void
worker_replies_release(struct worker *w)
{
    w->replies_held = FALSE;
    w->hooks.flush_held(w);
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
    struct worker_call *call = g_new(struct worker_call, 1);
    gboolean first;

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

    g_mutex_lock(&w->inbox_lock);
    batch = w->inbox;
    g_queue_init(&w->inbox);
    g_mutex_unlock(&w->inbox_lock);
    while ((call = g_queue_pop_head(&batch)) != NULL) {
        call->fn(w, call->arg);
        g_free(call);
    }
}
