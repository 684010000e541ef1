/* fuzz_config.c: the configuration parser, config_load_data. */
#include "fuzz_common.h"

#include "salt.h"

/*
 * Input: a whole configuration file.  A file that loads must describe
 * itself consistently: every table is found under its own name and under
 * "default:NAME", and its salt mapping round-trips a key taken from the
 * input (salt_key, then salt_strip gives the key and its bucket back).
 */

static void
fuzz_table(const struct config *cfg, const struct config_table *t,
           const uint8_t *key, size_t klen)
{
    uint8_t phys[SALT_MAX_PREFIX + 64];
    uint8_t bound[SALT_MAX_PREFIX + 64];
    const uint8_t *logical = NULL;
    size_t llen = 0, plen;
    uint32_t bucket = 0, b;
    char *dflt, *desc;

    FUZZ_CHECK(config_find_table(cfg, t->name, t->name_len) == t);
    dflt = g_strdup_printf("default:%.*s", (int)t->name_len, t->name);
    FUZZ_CHECK(config_find_table(cfg, dflt, strlen(dflt)) == t);
    g_free(dflt);
    desc = salt_table_describe(&t->salt);
    g_free(desc);

    FUZZ_CHECK(t->salt.buckets >= 1 && t->salt.buckets <= SALT_MAX_BUCKETS);
    FUZZ_CHECK(salt_prefix_len(&t->salt) <= SALT_MAX_PREFIX);
    b = salt_bucket(&t->salt, key, klen);
    FUZZ_CHECK(b < t->salt.buckets);
    FUZZ_CHECK(salt_bucket_prefix_len(&t->salt, b) <=
               salt_prefix_len(&t->salt));
    plen = salt_key(&t->salt, key, klen, phys, sizeof(phys));
    FUZZ_CHECK(plen == salt_bucket_prefix_len(&t->salt, b) + klen);
    FUZZ_CHECK(salt_strip(&t->salt, phys, plen, &logical, &llen, &bucket));
    FUZZ_CHECK(bucket == b && llen == klen);
    FUZZ_CHECK(klen == 0 || memcmp(logical, key, klen) == 0);
    FUZZ_CHECK(salt_hashed_len(&t->salt, key, klen) <= klen);

    /* scan bounds of the first and the last bucket fit their buffer */
    FUZZ_CHECK(salt_scan_start(&t->salt, 0, FALSE, key, klen, bound) <=
               salt_prefix_len(&t->salt) + klen);
    FUZZ_CHECK(salt_scan_stop(&t->salt, t->salt.buckets - 1, TRUE, key, klen,
                              bound) <= salt_prefix_len(&t->salt) + klen);
    if (salt_prefix_bucket(&t->salt, key, klen, &bucket)) {
        FUZZ_CHECK(bucket < t->salt.buckets);
    }
}

/* config_to_text writes a file that loads back into the same settings. */
static void
fuzz_round_trip(const struct config *cfg)
{
    GError *error = NULL;
    char *text = config_to_text(cfg);
    struct config *back = config_load_data(text, strlen(text), "to_text",
                                           &error);

    if (back == NULL) {
        fprintf(stderr, "config_to_text output does not load: %s\n%s\n",
                error->message, text);
    }
    FUZZ_CHECK(back != NULL);
    FUZZ_CHECK(back->workers == cfg->workers);
    FUZZ_CHECK(back->max_frame_size == cfg->max_frame_size);
    FUZZ_CHECK(back->max_connections == cfg->max_connections);
    FUZZ_CHECK(back->client_idle_timeout_ms == cfg->client_idle_timeout_ms);
    FUZZ_CHECK(back->listen.port == cfg->listen.port);
    FUZZ_CHECK(g_strcmp0(back->listen.host, cfg->listen.host) == 0);
    FUZZ_CHECK(back->n_servers == cfg->n_servers);
    for (size_t i = 0; i < cfg->n_servers; i++) {
        FUZZ_CHECK(back->servers[i].port == cfg->servers[i].port);
        FUZZ_CHECK(g_strcmp0(back->servers[i].host, cfg->servers[i].host) ==
                   0);
    }
    FUZZ_CHECK(back->protocol == cfg->protocol);
    FUZZ_CHECK(back->transport == cfg->transport);
    FUZZ_CHECK(back->connect_timeout_ms == cfg->connect_timeout_ms);
    FUZZ_CHECK(back->request_timeout_ms == cfg->request_timeout_ms);
    FUZZ_CHECK(back->slow_call_ms == cfg->slow_call_ms);
    FUZZ_CHECK(back->pool_size == cfg->pool_size);
    FUZZ_CHECK(back->scan_caching_max == cfg->scan_caching_max);
    FUZZ_CHECK(back->scan_scanner_timeout_ms == cfg->scan_scanner_timeout_ms);
    FUZZ_CHECK(back->admin_enabled == cfg->admin_enabled);
    FUZZ_CHECK(back->n_tables == cfg->n_tables);
    for (size_t i = 0; i < cfg->n_tables; i++) {
        const struct config_table *a = &cfg->tables[i];
        const struct config_table *b = &back->tables[i];

        FUZZ_CHECK(a->name_len == b->name_len &&
                   memcmp(a->name, b->name, a->name_len) == 0);
        FUZZ_CHECK(salt_table_equal(&a->salt, &b->salt));
    }
    config_free(back);
    g_free(text);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    GError *error = NULL;
    struct config *cfg;
    size_t klen = MIN(size, (size_t)64);

    cfg = config_load_data((const char *)data, size, "fuzz.conf", &error);
    if (cfg == NULL) {
        FUZZ_CHECK(error != NULL && error->domain == CONFIG_ERROR);
        FUZZ_CHECK(error->message != NULL);
        g_error_free(error);
        return 0;
    }
    FUZZ_CHECK(error == NULL);
    FUZZ_CHECK(cfg->n_servers >= 1);
    for (size_t i = 0; i < cfg->n_servers; i++) {
        g_free(config_addr_to_string(&cfg->servers[i]));
    }
    g_free(config_addr_to_string(&cfg->listen));
    for (size_t i = 0; i < cfg->n_tables; i++) {
        /* the last bytes of the file make a key as good as any */
        fuzz_table(cfg, &cfg->tables[i], data + size - klen, klen);
        if (i > 0) {
            const struct config_table *a = &cfg->tables[i - 1];
            const struct config_table *b = &cfg->tables[i];
            int c = memcmp(a->name, b->name, MIN(a->name_len, b->name_len));

            /* sorted by name, shorter first, no duplicates */
            FUZZ_CHECK(c < 0 || (c == 0 && a->name_len < b->name_len));
        }
    }
    fuzz_round_trip(cfg);
    config_free(cfg);
    return 0;
}
