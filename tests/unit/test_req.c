/* test_req.c: a request's states, moved along their arrows only, and the
 * worker's free list they guard (req.h, worker.h, invariant.h). */
#include <string.h>

#include "invariant.h"
#include "req.h"
#include "worker.h"

/* What the daemon's library logs under (daemon/meson.build). */
#define TEST_DOMAIN "hbase-salt-proxy"

/* A worker with what worker_req_get and worker_req_put use: its
 * generation (whose uses it counts) and its free list. */
struct test_worker {
    struct worker w;
    struct worker_gen gen;
    unsigned uses[1];
};

static void
test_worker_init(struct test_worker *t)
{
    memset(t, 0, sizeof(*t));
    t->gen.uses = t->uses;
    t->w.gen = &t->gen;
    TAILQ_INIT(&t->w.free_reqs);
}

/* Every arrow of req.h, for a client's request and an internal one:
 * nothing is counted. */
static void
test_arrows(void)
{
    struct test_worker t;
    guint64 before = invariant_errors();
    struct req *req;

    test_worker_init(&t);
    /* read, parked, sent on, answered, written */
    req = worker_req_get(&t.w);
    g_assert_cmpint(req->state, ==, REQ_NEW);
    g_assert_cmpuint(t.uses[0], ==, 1);
    req_set_state(req, REQ_PARKED);
    req_set_state(req, REQ_SENT);
    req_set_state(req, REQ_DONE);
    worker_req_put(&t.w, req);
    g_assert_cmpint(req->state, ==, REQ_FREE);
    g_assert_cmpuint(t.uses[0], ==, 0);
    /* answered by the codec itself */
    req = worker_req_get(&t.w);
    req_set_state(req, REQ_DONE);
    worker_req_put(&t.w, req);
    /* sent on, its client gone (detached), its pool freed at exit */
    req = worker_req_get(&t.w);
    req_set_state(req, REQ_SENT);
    worker_req_put(&t.w, req);
    /* internal: from NEW to DONE through worker_req_finish, whose sink
     * owns it then */
    req = worker_req_get(&t.w);
    req->sink = (req_sink_fn)worker_req_put;
    worker_req_finish(&t.w, req);
    g_assert_cmpint(req->state, ==, REQ_FREE);
    g_assert_cmpuint(t.w.nfree_reqs, ==, 1);
    g_assert_cmpuint(invariant_errors(), ==, before);
    worker_req_free_all(&t.w);
}

/* What a release build does with a step along no arrow: says so, counts
 * it, and goes on. */
static void
test_wrong_arrows_counted(void)
{
    struct test_worker t;
    guint64 before = invariant_errors();
    struct client *someone = (struct client *)&t;
    struct req *req;

    invariant_set_fatal(FALSE);
    test_worker_init(&t);
    req = worker_req_get(&t.w);
    memcpy(req->call.name, "getRow", 7);
    req->call.name_len = 6;
    /* parked once sent on: the calls before it are behind it now */
    g_test_expect_message(TEST_DOMAIN, G_LOG_LEVEL_CRITICAL,
                          "invariant broken at *request getRow: no way "
                          "from sent to parked*");
    req_set_state(req, REQ_SENT);
    req_set_state(req, REQ_PARKED);
    g_test_assert_expected_messages();
    g_assert_cmpuint(invariant_errors(), ==, before + 1);
    /* still sent on (going on is the lesser harm) */
    g_assert_cmpint(req->state, ==, REQ_PARKED);

    /* freed while a backend holds it for its client (a line like the
     * one before it: folded into the period's count, lograte.h) */
    req_set_state(req, REQ_SENT);
    req->client = someone;
    worker_req_put(&t.w, req);
    g_assert_cmpuint(invariant_errors(), ==, before + 2);
    req->client = NULL;

    /* put back twice: the free list holds it once */
    g_test_expect_message(TEST_DOMAIN, G_LOG_LEVEL_CRITICAL,
                          "invariant broken at *request getRow put back "
                          "twice*");
    worker_req_put(&t.w, req);
    g_test_assert_expected_messages();
    g_assert_cmpuint(invariant_errors(), ==, before + 3);
    g_assert_cmpuint(t.w.nfree_reqs, ==, 1);
    g_assert_true(TAILQ_NEXT(TAILQ_FIRST(&t.w.free_reqs), backend_link) ==
                  NULL);
    g_assert_cmpuint(t.uses[0], ==, 0);

    /* an internal request parked: only a client's waits its turn */
    req = worker_req_get(&t.w);
    req->sink = (req_sink_fn)worker_req_put;
    req_set_state(req, REQ_PARKED);
    g_assert_cmpuint(invariant_errors(), ==, before + 4);
    invariant_set_fatal(TRUE);
    /* that one never reaches the free list: freed here, then the list */
    wire_buf_free(&req->reply);
    wire_buf_free(&req->raw);
    g_free(req);
    worker_req_free_all(&t.w);
}

/* A checked build (what the tests run) stops at the first one. */
static void
test_wrong_arrow_fatal(void)
{
    if (g_test_subprocess()) {
        struct test_worker t;
        struct req *req;

        invariant_set_fatal(TRUE);
        test_worker_init(&t);
        req = worker_req_get(&t.w);
        req_set_state(req, REQ_DONE);
        worker_req_put(&t.w, req);
        /* done twice */
        req_set_state(req, REQ_DONE);
        return;
    }
    g_test_trap_subprocess(NULL, 0, G_TEST_SUBPROCESS_DEFAULT);
    g_test_trap_assert_failed();
    g_test_trap_assert_stderr("*invariant broken at *req.c*request : no "
                              "way from free to done*");
}

/* HSP_CHECK: TRUE when it holds; else, in a release build, FALSE and
 * counted, the condition in the log. */
static void
test_check(void)
{
    guint64 before = invariant_errors();
    int busy = 0;

    g_assert_true(HSP_CHECK(busy == 0));
    invariant_set_fatal(FALSE);
    g_test_expect_message(TEST_DOMAIN, G_LOG_LEVEL_CRITICAL,
                          "*test_req.c:*: busy > 0*");
    g_assert_false(HSP_CHECK(busy > 0));
    g_test_assert_expected_messages();
    invariant_set_fatal(TRUE);
    g_assert_cmpuint(invariant_errors(), ==, before + 1);
}

int
main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/req/arrows", test_arrows);
    g_test_add_func("/req/wrong-arrows-counted", test_wrong_arrows_counted);
    g_test_add_func("/req/wrong-arrow-fatal", test_wrong_arrow_fatal);
    g_test_add_func("/req/check", test_check);
    return g_test_run();
}
