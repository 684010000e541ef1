/* test_keyviz.c: unit tests of the key visualizer's counters (keyviz.c):
 * the space-saving hot keys against exact counts, the range boundaries
 * following the keys used, and memory that does not grow with distinct
 * keys. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include <glib.h>

#include "codec.h"
#include "config.h"
#include "keyviz.h"
#include "salt.h"

#define T_INTERVAL 10 /* seconds */
#define T_US(s) ((gint64)(s)*G_USEC_PER_SEC)

/* One table, counted by two workers. */
struct tkv {
    struct config_table ct;
    struct config_keyviz set;
    struct keyviz *kv;
    gint64 now; /* seconds */
};

/* A table t of 16 buckets (prefix: hash_part = delimiter #), counted by
 * two workers; one read or write in thin feeds the sketches. */
static void
tkv_init_thin(struct tkv *t, unsigned ranges, unsigned hot, unsigned retain,
              gboolean prefix, unsigned thin)
{
    g_autoptr(GError) error = NULL;

    memset(t, 0, sizeof(*t));
    g_assert_true(salt_table_init(&t->ct.salt, 16, SALT_FORMAT_HEX, "-", 1,
                                  &error));
    if (prefix) {
        g_assert_true(salt_table_hash_delimiter(&t->ct.salt, "#", 1, 1,
                                                &error));
    }
    t->ct.name = (char *)"t";
    t->set.enabled = TRUE;
    t->set.interval_s = T_INTERVAL;
    t->set.ranges = ranges;
    t->set.hot_keys = hot;
    t->set.hot_key_sampling = thin;
    t->set.retain_s = retain * T_INTERVAL;
    t->kv = keyviz_new(&t->set, 2);
    keyviz_add_table(t->kv, 1, "t", &t->ct.salt);
    /* a round start: the first interval is whole */
    t->now = 1700000000 / T_INTERVAL * T_INTERVAL;
    keyviz_tick(t->kv, T_US(t->now));
}

/* Every read and write counted: what the sketch tests check. */
static void
tkv_init(struct tkv *t, unsigned ranges, unsigned hot, unsigned retain,
         gboolean prefix)
{
    tkv_init_thin(t, ranges, hot, retain, prefix, 1);
}

static void
tkv_note(struct tkv *t, unsigned worker, codec_key_kind_t kind,
         const char *key)
{
    struct codec_key_note n;
    size_t len = strlen(key);

    codec_key_note_fill(&n, &t->ct.salt, kind,
                        salt_bucket(&t->ct.salt, (const uint8_t *)key, len),
                        (const uint8_t *)key, len);
    n.stats_id = 1; /* keyviz_add_table's */
    keyviz_note(keyviz_worker(t->kv, worker), &n);
}

/* Ends the interval: the workers told as it ends, harvested a second
 * and a half after. */
static void
tkv_next(struct tkv *t)
{
    t->now += T_INTERVAL;
    keyviz_tick(t->kv, T_US(t->now));
    keyviz_tick(t->kv, T_US(t->now) + 1500000);
}

/* One hot entry read back from JSON. */
struct hot {
    char key[64];
    guint64 count, error, sd;
};

/* The entries of "what":[...] in json. */
static GArray *
hot_parse(const char *json, const char *what)
{
    g_autofree char *start = g_strdup_printf("\"%s\":[", what);
    const char *p = strstr(json, start);
    const char *end;
    GArray *out = g_array_new(FALSE, TRUE, sizeof(struct hot));
    g_autoptr(GRegex) rx = g_regex_new("\\{\"key\":\"([^\"]*)\",\"length\":"
                                       "\\d+,\"count\":(\\d+),\"error\":"
                                       "(\\d+),\"sd\":(\\d+)",
                                       0, 0, NULL);
    g_autoptr(GMatchInfo) mi = NULL;
    g_autofree char *part = NULL;

    g_assert_nonnull(p);
    p += strlen(start);
    end = strchr(p, ']');
    part = g_strndup(p, (gsize)(end - p));
    g_regex_match(rx, part, 0, &mi);
    while (g_match_info_matches(mi)) {
        struct hot h = { 0 };
        g_autofree char *k = g_match_info_fetch(mi, 1);
        g_autofree char *c = g_match_info_fetch(mi, 2);
        g_autofree char *e = g_match_info_fetch(mi, 3);
        g_autofree char *sd = g_match_info_fetch(mi, 4);

        g_strlcpy(h.key, k, sizeof(h.key));
        h.count = g_ascii_strtoull(c, NULL, 10);
        h.error = g_ascii_strtoull(e, NULL, 10);
        h.sd = g_ascii_strtoull(sd, NULL, 10);
        g_array_append_val(out, h);
        g_match_info_next(mi, NULL);
    }
    return out;
}

static guint64
json_u64(const char *json, const char *name)
{
    g_autofree char *at = g_strdup_printf("\"%s\":", name);
    const char *p = strstr(json, at);

    g_assert_nonnull(p);
    return g_ascii_strtoull(p + strlen(at), NULL, 10);
}

static unsigned pick_skewed(GRand *r);

/* Feeds n operations of keys drawn by pick (seeded the same each time)
 * over two workers, a third of them reads, counting each key in exact;
 * ends the interval and puts its /hotkeys.json in json. */
static void
feed_hot(struct tkv *t, unsigned n, unsigned (*pick)(GRand *r),
         GHashTable *exact, GString *json)
{
    g_autoptr(GRand) r = g_rand_new_with_seed(24);

    for (unsigned i = 0; i < n; i++) {
        char key[32];
        gpointer old;

        snprintf(key, sizeof(key), "key%06u", pick(r));
        tkv_note(t, i % 2, i % 3 == 0 ? CODEC_KEY_READ : CODEC_KEY_WRITE, key);
        old = g_hash_table_lookup(exact, key);
        g_hash_table_replace(exact, g_strdup(key),
                             GUINT_TO_POINTER(GPOINTER_TO_UINT(old) + 1));
    }
    tkv_next(t);
    g_assert_true(keyviz_hotkeys_json(t->kv, &(struct config){ 0 }, "t", 0,
                                      json));
}

/* The key exact counts most often. */
static const char *
exact_top(GHashTable *exact)
{
    const char *top_key = NULL;
    guint top = 0;
    GHashTableIter it;
    gpointer k, v;

    g_hash_table_iter_init(&it, exact);
    while (g_hash_table_iter_next(&it, &k, &v)) {
        if (GPOINTER_TO_UINT(v) > top) {
            top = GPOINTER_TO_UINT(v);
            top_key = k;
        }
    }
    return top_key;
}

/* Feeds n operations of keys drawn by pick over two workers, checks the
 * reported hot keys against the exact counts; returns the most a hot key
 * was over, and its bound in *bound_out. */
static guint64
check_sketch(unsigned n, unsigned (*pick)(GRand *r), guint64 *bound_out)
{
    struct tkv t;
    g_autoptr(GHashTable) exact = g_hash_table_new_full(g_str_hash,
                                                        g_str_equal, g_free,
                                                        NULL);
    g_autoptr(GString) json = g_string_new(NULL);
    g_autoptr(GArray) hot = NULL;
    guint64 bound, ops, worst = 0;
    const char *top_key = NULL;
    GHashTableIter it;
    gpointer k, v;

    tkv_init(&t, 64, 32, 4, FALSE);
    feed_hot(&t, n, pick, exact, json);
    ops = json_u64(json->str, "ops");
    bound = json_u64(json->str, "error_bound");
    g_assert_cmpuint(ops, ==, n);
    /* hot_key_sampling = 1: every operation drawn */
    g_assert_cmpuint(json_u64(json->str, "drawn"), ==, n);
    /* m = 8 x 32 counters: N / m */
    g_assert_cmpuint(bound, ==, n / 256);
    hot = hot_parse(json->str, "hot_keys");
    g_assert_cmpuint(hot->len, ==, 32);
    for (guint i = 0; i < hot->len; i++) {
        const struct hot *h = &g_array_index(hot, struct hot, i);
        guint64 truth = GPOINTER_TO_UINT(g_hash_table_lookup(exact, h->key));

        /* never under, at most the stated bound over; nothing spread */
        g_assert_cmpuint(h->sd, ==, 0);
        g_assert_cmpuint(h->count, >=, truth);
        g_assert_cmpuint(h->count - h->error, <=, truth);
        g_assert_cmpuint(h->error, <=, bound + 1);
        worst = MAX(worst, h->count - truth);
    }
    g_test_message("%u operations: hot keys overcounted by %" G_GUINT64_FORMAT
                   " at most, bound %" G_GUINT64_FORMAT,
                   n, worst, bound);
    top_key = exact_top(exact);
    /* every key above the bound is held; the hottest comes first when it
     * stands out by more than the bound */
    g_hash_table_iter_init(&it, exact);
    while (g_hash_table_iter_next(&it, &k, &v)) {
        gboolean found = FALSE;

        if (GPOINTER_TO_UINT(v) <= 2 * bound + hot->len) {
            continue;
        }
        for (guint i = 0; i < hot->len; i++) {
            found = found ||
                    strcmp(g_array_index(hot, struct hot, i).key, k) == 0;
        }
        g_assert_true(found);
    }
    if (pick(NULL) == 1) {
        g_assert_cmpstr(g_array_index(hot, struct hot, 0).key, ==, top_key);
    }
    keyviz_free(t.kv);
    *bound_out = bound;
    return worst;
}

/* Zipf-like: key i with weight 1 / (i + 1), 10000 keys. */
static unsigned
pick_skewed(GRand *r)
{
    static double *cdf;

    if (r == NULL) {
        return 1;
    }
    if (cdf == NULL) {
        double sum = 0;

        cdf = g_new(double, 10000);
        for (int i = 0; i < 10000; i++) {
            sum += 1.0 / (i + 1);
            cdf[i] = sum;
        }
        for (int i = 0; i < 10000; i++) {
            cdf[i] /= sum;
        }
    }
    {
        double x = g_rand_double(r);
        unsigned lo = 0, hi = 9999;

        while (lo < hi) {
            unsigned mid = (lo + hi) / 2;

            if (cdf[mid] < x) {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        return lo;
    }
}

static unsigned
pick_uniform(GRand *r)
{
    return r == NULL ? 0 : (unsigned)g_rand_int_range(r, 0, 5000);
}

static void
test_sketch_skewed(void)
{
    guint64 bound;

    check_sketch(200000, pick_skewed, &bound);
}

/* Keys drawn evenly are the plain space-saving sketch's worst case: a
 * counter changes hands at nearly every operation and every hot count is
 * over by about the bound.  The filter keeps keys met rarely in its
 * cells, so the counters, and the hot counts, stay close to the truth:
 * within half the bound. */
static void
test_sketch_uniform(void)
{
    guint64 bound;
    guint64 worst = check_sketch(200000, pick_uniform, &bound);

    g_assert_cmpuint(worst, <=, bound / 2);
}

/* One read or write in 8 feeds the sketches (the default): every count
 * is the sketch's times about 8 (each worker's operations over those it
 * drew), over by at most its error and spread by the draw (sd); with the same seeds the draw is the same each run.  The
 * ranges still count every operation. */
static void
test_sketch_sampled(void)
{
    struct tkv t;
    g_autoptr(GHashTable) exact = g_hash_table_new_full(g_str_hash,
                                                        g_str_equal, g_free,
                                                        NULL);
    g_autoptr(GString) json = g_string_new(NULL);
    g_autoptr(GArray) hot = NULL;
    const unsigned n = 200000;
    const char *top_key = NULL;
    double worst = 0;

    tkv_init_thin(&t, 64, 32, 4, FALSE, 8);
    feed_hot(&t, n, pick_skewed, exact, json);
    g_assert_cmpuint(json_u64(json->str, "ops"), ==, n);
    g_assert_cmpuint(json_u64(json->str, "sampling"), ==, 8);
    /* about an eighth drawn */
    g_assert_cmpuint(json_u64(json->str, "drawn"), >, n / 8 - 1000);
    g_assert_cmpuint(json_u64(json->str, "drawn"), <, n / 8 + 1000);
    hot = hot_parse(json->str, "hot_keys");
    g_assert_cmpuint(hot->len, ==, 32);
    for (guint i = 0; i < hot->len; i++) {
        const struct hot *h = &g_array_index(hot, struct hot, i);
        double truth = GPOINTER_TO_UINT(g_hash_table_lookup(exact, h->key));
        double sd = sqrt(7.0 * (double)h->count *
                         (1.0 - (double)h->count / n));

        g_assert_cmpfloat(fabs((double)h->sd - sd), <=, 1);
        g_assert_cmpfloat((double)h->count - (double)h->error - 4 * sd, <=,
                          truth);
        g_assert_cmpfloat((double)h->count + 4 * sd, >=, truth);
        worst = MAX(worst, fabs((double)h->count - truth) / MAX(sd, 1));
    }
    g_test_message("%u operations, one in 8 drawn: hot keys off by %.2f sd "
                   "at most",
                   n, worst);
    top_key = exact_top(exact);
    /* the hottest stands out by far more than the spread */
    g_assert_cmpstr(g_array_index(hot, struct hot, 0).key, ==, top_key);
    keyviz_free(t.kv);
}

/* The draw's scale is each worker's operations over those it drew, not
 * hot_key_sampling itself: the LCG's seeds are fixed, so every run
 * draws alike, and a stream that happens to take more than one in 8 of
 * its first operations would put every count over by as much, run after
 * run (one in 8 drew 2 % more of these workloads' first 60 000: the
 * celebrity came out 1.0 sd over on average).  40 workloads of a
 * celebrity with 30 % of the writes among 500 users, spread over two
 * workers at random: its count within 4 sd each time, and within 0.5 sd
 * on average (the mean of 40 unbiased ones has an sd of 0.16). */
static void
test_sketch_sampled_unbiased(void)
{
    const int trials = 40;
    double zsum = 0;

    for (int tr = 0; tr < trials; tr++) {
        struct tkv t;
        g_autoptr(GRand) r = g_rand_new_with_seed(1000 + tr);
        g_autoptr(GString) json = g_string_new(NULL);
        g_autoptr(GArray) hot = NULL;
        unsigned celeb = 0;
        const struct hot *h;
        double z;

        tkv_init_thin(&t, 64, 16, 4, TRUE, 8);
        for (unsigned i = 0; i < 60000; i++) {
            char key[48];

            if (g_rand_double(r) < 0.3) {
                snprintf(key, sizeof(key), "celeb#%u", i);
                celeb++;
            } else {
                snprintf(key, sizeof(key), "user%04u#%u",
                         (unsigned)g_rand_int_range(r, 0, 500), i);
            }
            tkv_note(&t, (unsigned)g_rand_int_range(r, 0, 2), CODEC_KEY_WRITE,
                     key);
        }
        tkv_next(&t);
        g_assert_true(keyviz_hotkeys_json(t.kv, &(struct config){ 0 }, "t", 0,
                                          json));
        hot = hot_parse(json->str, "hot_parts");
        h = &g_array_index(hot, struct hot, 0);
        g_assert_cmpstr(h->key, ==, "celeb");
        z = ((double)h->count - celeb) /
            sqrt(7.0 * celeb * (1.0 - celeb / 60000.0));
        g_assert_cmpfloat(fabs(z), <, 4);
        zsum += z;
        keyviz_free(t.kv);
    }
    g_test_message("the celebrity's count: %.3f sd off on average over %d "
                   "workloads",
                   zsum / trials, trials);
    g_assert_cmpfloat(fabs(zsum / trials), <, 0.5);
}

/* The workers learn the interval from the tick's store.  After a tick
 * just before an interval's end they go on counting into it until the
 * next tick, and one that read the number just before that tick's store
 * may still be writing while it runs: an interval is harvested only a
 * tick after the workers were told it ended. */
static void
test_harvest_waits_a_tick(void)
{
    struct tkv t;
    g_autoptr(GString) json = g_string_new(NULL);

    tkv_init(&t, 64, 32, 4, FALSE);
    /* just before the first interval ends: the workers still count in it */
    keyviz_tick(t.kv, T_US(t.now + T_INTERVAL) - 1000);
    for (int i = 0; i < 10; i++) {
        tkv_note(&t, 0, CODEC_KEY_WRITE, "k");
    }
    /* a second and a bit after its end: this tick tells them it ended,
     * and it may not read it yet */
    keyviz_tick(t.kv, T_US(t.now + T_INTERVAL) + 1002000);
    g_assert_true(keyviz_hotkeys_json(t.kv, &(struct config){ 0 }, "t", 0,
                                      json));
    g_assert_nonnull(strstr(json->str, "\"interval\":null"));
    /* the next tick does */
    keyviz_tick(t.kv, T_US(t.now + T_INTERVAL) + 2002000);
    g_string_truncate(json, 0);
    g_assert_true(keyviz_hotkeys_json(t.kv, &(struct config){ 0 }, "t", 0,
                                      json));
    g_assert_cmpuint(json_u64(json->str, "ops"), ==, 10);
    keyviz_free(t.kv);
}

/* The proxy's per-bucket running totals, as metrics keeps them. */
static guint64 fake_totals[17 * KEYVIZ_BUCKET_KINDS];

static gboolean
fake_bucket_totals(void *ctx, unsigned id, uint32_t buckets, guint64 *out)
{
    g_assert_null(ctx);
    g_assert_cmpuint(id, ==, 1);
    g_assert_cmpuint(buckets, ==, 16);
    memcpy(out, fake_totals, sizeof(fake_totals));
    return TRUE;
}

/* bucket b's "reads", "writes", "rows" in a hotkeys.json answer. */
static void
bucket_counts(const char *json, unsigned b, guint64 out[3])
{
    g_autofree char *at = g_strdup_printf("{\"bucket\":%u,", b);
    const char *p = strstr(json, at);

    g_assert_nonnull(p);
    g_assert_cmpint(sscanf(p + strlen(at),
                           "\"reads\":%" G_GUINT64_FORMAT
                           ",\"writes\":%" G_GUINT64_FORMAT
                           ",\"rows\":%" G_GUINT64_FORMAT,
                           &out[0], &out[1], &out[2]),
                    ==, 3);
}

/* The physical side is the proxy's own per-bucket counters, per
 * interval: what they gained while it ran, not before or after. */
static void
test_buckets_per_interval(void)
{
    struct tkv t;
    g_autoptr(GString) json = g_string_new(NULL);
    guint64 c[3];

    memset(fake_totals, 0, sizeof(fake_totals));
    fake_totals[3 * KEYVIZ_BUCKET_KINDS + 1] = 1000; /* before: not shown */
    tkv_init(&t, 16, 4, 4, FALSE);
    keyviz_set_bucket_totals(t.kv, fake_bucket_totals, NULL);
    /* the interval running when the source came: counted from the next */
    tkv_next(&t);
    fake_totals[3 * KEYVIZ_BUCKET_KINDS + 0] += 7;
    fake_totals[3 * KEYVIZ_BUCKET_KINDS + 1] += 5;
    fake_totals[16 * KEYVIZ_BUCKET_KINDS + 2] += 2; /* the legacy range */
    tkv_note(&t, 0, CODEC_KEY_WRITE, "k1");
    tkv_next(&t);
    fake_totals[9 * KEYVIZ_BUCKET_KINDS + 2] += 11;
    tkv_note(&t, 1, CODEC_KEY_READ, "k2");
    tkv_next(&t);

    g_assert_true(keyviz_hotkeys_json(t.kv, &(struct config){ 0 }, "t",
                                      t.now - 2 * T_INTERVAL, json));
    bucket_counts(json->str, 3, c);
    g_assert_cmpuint(c[0], ==, 7);
    g_assert_cmpuint(c[1], ==, 5);
    g_assert_cmpuint(c[2], ==, 0);
    bucket_counts(json->str, 9, c);
    g_assert_cmpuint(c[0] + c[1] + c[2], ==, 0);
    g_assert_nonnull(strstr(json->str, "{\"bucket\":\"legacy\",\"reads\":0,"
                                       "\"writes\":0,\"rows\":2}"));
    g_assert_nonnull(strstr(json->str, "\"hottest_bucket\":3,"));

    g_string_truncate(json, 0);
    g_assert_true(keyviz_hotkeys_json(t.kv, &(struct config){ 0 }, "t", 0,
                                      json));
    bucket_counts(json->str, 9, c);
    g_assert_cmpuint(c[2], ==, 11);
    bucket_counts(json->str, 3, c);
    g_assert_cmpuint(c[0] + c[1] + c[2], ==, 0);
    keyviz_free(t.kv);
}

/* The ranges' counts of the newest interval, by range start. */
static GArray *
ranges_of_last(struct tkv *t, guint64 *total)
{
    g_autoptr(GString) json = g_string_new(NULL);
    g_autoptr(GRegex) rx = g_regex_new("\"value\":(\\d+)", 0, 0, NULL);
    g_autoptr(GMatchInfo) mi = NULL;
    GArray *out = g_array_new(FALSE, TRUE, sizeof(guint64));
    const char *last;

    g_assert_true(keyviz_json(t->kv, &(struct config){ 0 }, "t", KEYVIZ_WRITES,
                              0, json));
    /* the last of the intervals, before the newest one's details */
    g_string_truncate(json,
                      (gsize)(strstr(json->str, "\"latest\"") - json->str));
    last = g_strrstr(json->str, "{\"start\":17");
    g_assert_nonnull(last);
    *total = 0;
    g_regex_match(rx, last, 0, &mi);
    while (g_match_info_matches(mi)) {
        g_autofree char *v = g_match_info_fetch(mi, 1);
        guint64 x = g_ascii_strtoull(v, NULL, 10);

        g_array_append_val(out, x);
        *total += x;
        g_match_info_next(mi, NULL);
    }
    return out;
}

static void
test_ranges_follow_keys(void)
{
    struct tkv t;
    g_autoptr(GRand) r = g_rand_new_with_seed(7);
    g_autoptr(GArray) first = NULL;
    g_autoptr(GArray) later = NULL;
    guint64 total, max = 0;
    unsigned used = 0;

    /* every key in a corner of the key space: "user" then 5 digits */
    tkv_init(&t, 64, 32, 8, TRUE);
    for (int iv = 0; iv < 3; iv++) {
        for (int i = 0; i < 20000; i++) {
            char key[32];

            snprintf(key, sizeof(key), "user%05d#%d",
                     g_rand_int_range(r, 0, 50000), i);
            tkv_note(&t, (unsigned)i % 2, CODEC_KEY_WRITE, key);
        }
        tkv_next(&t);
        if (iv == 0) {
            /* split by first byte: all in one range */
            first = ranges_of_last(&t, &total);
            g_assert_cmpuint(total, ==, 20000);
            for (guint j = 0; j < first->len; j++) {
                used += g_array_index(first, guint64, j) > 0 ? 1 : 0;
            }
            g_assert_cmpuint(used, ==, 1);
        }
    }
    /* re-derived: the corner gets the resolution, the load spread evenly
     * over the ranges (quantiles of a 1024-key sample: loose bounds) */
    later = ranges_of_last(&t, &total);
    g_assert_cmpuint(total, ==, 20000);
    used = 0;
    for (guint j = 0; j < later->len; j++) {
        guint64 v = g_array_index(later, guint64, j);

        used += v > 0 ? 1 : 0;
        max = MAX(max, v);
    }
    g_assert_cmpuint(later->len, >, 48);
    g_assert_cmpuint(used, >, 48);
    g_assert_cmpuint(max, <, 4 * 20000 / 64);
    keyviz_free(t.kv);
}

/* Ranges in use (a count above 0) of the newest interval, and its total. */
static unsigned
ranges_used_last(struct tkv *t, guint64 *total)
{
    g_autoptr(GArray) r = ranges_of_last(t, total);
    unsigned used = 0;

    for (guint j = 0; j < r->len; j++) {
        used += g_array_index(r, guint64, j) > 0 ? 1 : 0;
    }
    return used;
}

/* 20000 writes in a corner of the key space, then the interval's end. */
static void
corner_writes(struct tkv *t, GRand *r)
{
    for (int i = 0; i < 20000; i++) {
        char key[32];

        snprintf(key, sizeof(key), "user%05d#%d",
                 g_rand_int_range(r, 0, 50000), i);
        tkv_note(t, (unsigned)i % 2, CODEC_KEY_WRITE, key);
    }
    tkv_next(t);
}

/* A quiet interval (no call; only rows handed back, which the sample
 * does not take; a few writes, of which the draw takes one or two) keeps
 * the ranges a sample gave: the traffic coming back is spread over them,
 * not in the one range of the first-byte split, nor in the two or three
 * a thin sample places. */
static void
test_ranges_survive_quiet(void)
{
    for (int mode = 0; mode < 3; mode++) {
        struct tkv t;
        g_autoptr(GRand) r = g_rand_new_with_seed(11);
        guint64 total;

        tkv_init_thin(&t, 64, 32, 8, TRUE, 8);
        for (int iv = 0; iv < 3; iv++) {
            corner_writes(&t, r);
        }
        g_assert_cmpuint(ranges_used_last(&t, &total), >, 48);
        /* two intervals without a draw */
        for (int iv = 0; iv < 2; iv++) {
            if (mode == 1) {
                tkv_note(&t, 0, CODEC_KEY_ROW, "user00001#1");
            }
            for (int i = 0; mode == 2 && i < 24; i++) {
                char key[32];

                snprintf(key, sizeof(key), "user%05d#q%d", i * 2000, i);
                tkv_note(&t, (unsigned)i % 2, CODEC_KEY_WRITE, key);
            }
            tkv_next(&t);
        }
        corner_writes(&t, r);
        g_assert_cmpuint(ranges_used_last(&t, &total), >, 48);
        g_assert_cmpuint(total, ==, 20000);
        keyviz_free(t.kv);
    }
}

/* The newest interval's range boundaries (their "end"s, keys shown as
 * they are: the test's keys are printable), as strings. */
static GPtrArray *
bounds_of_last(struct tkv *t)
{
    g_autoptr(GString) json = g_string_new(NULL);
    g_autoptr(GRegex) rx = g_regex_new("\"end\":\"([^\"]*)\"", 0, 0, NULL);
    g_autoptr(GMatchInfo) mi = NULL;
    GPtrArray *out = g_ptr_array_new_with_free_func(g_free);
    const char *last;

    g_assert_true(keyviz_json(t->kv, &(struct config){ 0 }, "t", KEYVIZ_WRITES,
                              0, json));
    g_string_truncate(json,
                      (gsize)(strstr(json->str, "\"latest\"") - json->str));
    last = g_strrstr(json->str, "{\"start\":17");
    g_assert_nonnull(last);
    g_regex_match(rx, last, 0, &mi);
    while (g_match_info_matches(mi)) {
        g_ptr_array_add(out, g_match_info_fetch(mi, 1));
        g_match_info_next(mi, NULL);
    }
    return out;
}

static gint
keys_cmp(gconstpointer a, gconstpointer b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Every key lands in the range its bytes say, when the boundaries share
 * a long prefix (user0000..., and pad more zeros): below, inside, equal
 * to and past the common part, shorter and longer keys. */
static GPtrArray *
check_ranges_exact(const char *pad, GPtrArray *extra)
{
    static const char *const odd[] = { "",
                                       "a",
                                       "user",
                                       "user0000",
                                       "user00000",
                                       "user0000000",
                                       "user00009",
                                       "user0000z",
                                       "user1",
                                       "zzz",
                                       "user0000123456789012345678" };
    struct tkv t;
    g_autoptr(GRand) r = g_rand_new_with_seed(11);
    g_autoptr(GPtrArray) keys = g_ptr_array_new_with_free_func(g_free);
    GPtrArray *bounds = NULL;
    g_autoptr(GArray) got = NULL;
    g_autofree guint64 *want = NULL;
    guint64 total;
    guint nmeasured;

    tkv_init(&t, 64, 32, 8, FALSE);
    /* two intervals: the first one's sample makes the third's ranges */
    for (int iv = 0; iv < 2; iv++) {
        for (int i = 0; i < 5000; i++) {
            char key[32];

            snprintf(key, sizeof(key), "user0000%s%04d", pad,
                     g_rand_int_range(r, 0, 10000));
            tkv_note(&t, (unsigned)i % 2, CODEC_KEY_WRITE, key);
        }
        tkv_next(&t);
    }
    for (int i = 0; i < 3000; i++) {
        g_ptr_array_add(keys, g_strdup_printf("user0000%s%0*d", pad,
                                              g_rand_int_range(r, 1, 7),
                                              g_rand_int_range(r, 0, 10000)));
    }
    for (guint i = 0; i < G_N_ELEMENTS(odd); i++) {
        g_ptr_array_add(keys, g_strdup(odd[i]));
    }
    for (guint i = 0; extra != NULL && i < extra->len; i++) {
        g_ptr_array_add(keys, g_strdup(g_ptr_array_index(extra, i)));
    }
    for (guint i = 0; i < keys->len; i++) {
        tkv_note(&t, i % 2, CODEC_KEY_WRITE, g_ptr_array_index(keys, i));
    }
    /* and in order, each twice, one worker upwards and one downwards: a
     * worker remembers the range it found last, which the next key falls
     * in or not (ties with a boundary's bytes, keys across one) */
    nmeasured = keys->len;
    g_ptr_array_sort(keys, keys_cmp);
    for (guint i = 0; i < nmeasured; i++) {
        for (int twice = 0; twice < 2; twice++) {
            tkv_note(&t, 0, CODEC_KEY_WRITE, g_ptr_array_index(keys, i));
            tkv_note(&t, 1, CODEC_KEY_WRITE,
                     g_ptr_array_index(keys, nmeasured - 1 - i));
            g_ptr_array_add(keys, g_strdup(g_ptr_array_index(keys, i)));
            g_ptr_array_add(keys, g_strdup(g_ptr_array_index(keys, i)));
        }
    }
    tkv_next(&t);
    bounds = bounds_of_last(&t);
    got = ranges_of_last(&t, &total);
    /* quantile boundaries, all starting with the common part */
    g_assert_cmpuint(bounds->len, >, 32);
    g_assert_cmpuint(got->len, ==, bounds->len + 1);
    g_assert_true(g_str_has_prefix(g_ptr_array_index(bounds, 0), "user0000"));
    want = g_new0(guint64, got->len);
    for (guint i = 0; i < keys->len; i++) {
        guint n = 0;

        /* how many boundaries are <= the key, by strcmp: byte order */
        while (n < bounds->len && strcmp(g_ptr_array_index(bounds, n),
                                         g_ptr_array_index(keys, i)) <= 0) {
            n++;
        }
        want[n]++;
    }
    for (guint j = 0; j < got->len; j++) {
        g_assert_cmpuint(g_array_index(got, guint64, j), ==, want[j]);
    }
    keyviz_free(t.kv);
    return bounds;
}

/* The boundaries themselves and their neighbours in byte order: ties with
 * a boundary's words, keys just past and just below one. */
static GPtrArray *
keys_around(GPtrArray *bounds)
{
    GPtrArray *out = g_ptr_array_new_with_free_func(g_free);

    for (guint i = 0; i < bounds->len; i++) {
        const char *b = g_ptr_array_index(bounds, i);
        size_t len = strlen(b);

        g_ptr_array_add(out, g_strdup(b));
        g_ptr_array_add(out, g_strdup_printf("%s0", b));
        g_ptr_array_add(out, g_strdup_printf("%s\x01", b));
        g_ptr_array_add(out, g_strdup_printf("%s0123456789abcdef", b));
        if (len > 0) {
            g_ptr_array_add(out, g_strndup(b, len - 1));
        }
    }
    return out;
}

static void
test_ranges_exact(void)
{
    /* 8 bytes shared, 12: past one 8-byte word, 13: keys of 17 bytes, one
     * past the 16 a worker remembers its range by; run again with keys
     * at the boundaries the first run found (the same: same seeds) */
    static const char *const pads[] = { "", "0000", "00000" };

    for (guint i = 0; i < G_N_ELEMENTS(pads); i++) {
        g_autoptr(GPtrArray) bounds = check_ranges_exact(pads[i], NULL);
        g_autoptr(GPtrArray) around = keys_around(bounds);
        g_autoptr(GPtrArray) again = check_ranges_exact(pads[i], around);

        g_assert_cmpuint(again->len, ==, bounds->len);
        for (guint j = 0; j < bounds->len; j++) {
            g_assert_cmpstr(g_ptr_array_index(again, j), ==,
                            g_ptr_array_index(bounds, j));
        }
    }
}

static void
test_hot_prefix_gets_a_range(void)
{
    struct tkv t;
    g_autoptr(GRand) r = g_rand_new_with_seed(9);
    g_autoptr(GString) json = g_string_new(NULL);
    const char *last;
    guint64 total;
    g_autoptr(GArray) v = NULL;

    tkv_init(&t, 32, 8, 8, TRUE);
    for (int iv = 0; iv < 3; iv++) {
        for (int i = 0; i < 10000; i++) {
            char key[32];

            if (g_rand_double(r) < 0.3) {
                snprintf(key, sizeof(key), "celeb#%d", i);
            } else {
                snprintf(key, sizeof(key), "u%04d#%d",
                         g_rand_int_range(r, 0, 1000), i);
            }
            tkv_note(&t, 0, CODEC_KEY_WRITE, key);
        }
        tkv_next(&t);
    }
    v = ranges_of_last(&t, &total);
    g_assert_true(keyviz_json(t.kv, &(struct config){ 0 }, "t", KEYVIZ_WRITES,
                              0, json));
    g_string_truncate(json,
                      (gsize)(strstr(json->str, "\"latest\"") - json->str));
    last = g_strrstr(json->str, "{\"start\":17");
    /* the celebrity's hash_part starts a range that holds all its rows */
    g_assert_nonnull(strstr(last, "{\"start\":\"celeb\",\"end\":\"u"));
    {
        guint64 max = 0;

        for (guint j = 0; j < v->len; j++) {
            max = MAX(max, g_array_index(v, guint64, j));
        }
        g_assert_cmpfloat((double)max / total, >, 0.27);
        g_assert_cmpfloat((double)max / total, <, 0.33);
    }
    keyviz_free(t.kv);
}

static void
test_memory_bounded(void)
{
    struct tkv t;
    size_t after_first = 0;
    guint64 key = 0;

    /* the defaults: 256 ranges, 32 hot keys; 4 intervals kept */
    tkv_init(&t, 256, 32, 4, FALSE);
    g_assert_cmpuint(keyviz_memory(t.kv), <=, keyviz_memory_bound(t.kv, 16));
    /* 10^7 distinct keys in one interval, then 10^6 new ones in each of
     * four more */
    for (int iv = 0; iv < 5; iv++) {
        for (int i = 0; i < (iv == 0 ? 10000000 : 1000000); i++) {
            char k[24];

            snprintf(k, sizeof(k), "k%016" G_GINT64_MODIFIER "x",
                     (guint64)(key++ * 0x9e3779b97f4a7c15ull));
            tkv_note(&t, (unsigned)i % 2, CODEC_KEY_WRITE, k);
        }
        tkv_next(&t);
        g_assert_cmpuint(keyviz_memory(t.kv), <=,
                         keyviz_memory_bound(t.kv, 16));
        if (iv == 3) {
            after_first = keyviz_memory(t.kv);
        }
    }
    g_assert_cmpuint(key, ==, 14000000);
    /* the history is full: no growth from then on (an interval's size
     * varies only with how many distinct boundaries its sample gave) */
    g_assert_cmpuint(keyviz_memory(t.kv), <=, after_first + after_first / 20);
    g_test_message("memory %zu bytes, bound %zu", keyviz_memory(t.kv),
                   keyviz_memory_bound(t.kv, 16));
    keyviz_free(t.kv);
    /* the bound with the defaults' history (6 h of 60 s intervals: 360) */
    tkv_init(&t, 256, 32, 360, FALSE);
    g_test_message("bound with 360 intervals kept, 2 workers, 16 buckets: "
                   "%zu bytes",
                   keyviz_memory_bound(t.kv, 16));
    keyviz_free(t.kv);
}

static void
test_metric_names(void)
{
    for (unsigned m = 0; m < KEYVIZ_METRICS; m++) {
        g_assert_cmpint(keyviz_metric_parse(keyviz_metric_name(m)), ==,
                        (int)m);
    }
    g_assert_cmpint(keyviz_metric_parse("ops"), ==, -1);
    g_assert_cmpint(keyviz_metric_parse(NULL), ==, -1);
}

int
main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/keyviz/sketch_skewed", test_sketch_skewed);
    g_test_add_func("/keyviz/sketch_uniform", test_sketch_uniform);
    g_test_add_func("/keyviz/sketch_sampled", test_sketch_sampled);
    g_test_add_func("/keyviz/sketch_sampled_unbiased",
                    test_sketch_sampled_unbiased);
    g_test_add_func("/keyviz/buckets_per_interval", test_buckets_per_interval);
    g_test_add_func("/keyviz/harvest_waits_a_tick", test_harvest_waits_a_tick);
    g_test_add_func("/keyviz/ranges_follow_keys", test_ranges_follow_keys);
    g_test_add_func("/keyviz/ranges_survive_quiet", test_ranges_survive_quiet);
    g_test_add_func("/keyviz/ranges_exact", test_ranges_exact);
    g_test_add_func("/keyviz/hot_prefix_gets_a_range",
                    test_hot_prefix_gets_a_range);
    g_test_add_func("/keyviz/memory_bounded", test_memory_bounded);
    g_test_add_func("/keyviz/metric_names", test_metric_names);
    return g_test_run();
}
