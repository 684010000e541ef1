/* fuzz_common.h: what every fuzz target shares: the libFuzzer entry point
 * and a configuration with salted tables in each salt format. */
#pragma once

#include <glib.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "wire.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/*
 * Tables in every salt format, separator, hash_part and salt_mapping,
 * plus names a request may use to reach none of them.  Index order
 * matters to the seeds: fuzz_reply picks a table by index (new tables go
 * last).
 */
static const char fuzz_conf_text[] = "[table:t]\n"
                                     "buckets = 8\n"
                                     "salt_format = hex\n"
                                     "salt_separator = -\n"
                                     "[table:b]\n"
                                     "buckets = 16\n"
                                     "[table:wide]\n"
                                     "buckets = 300\n"
                                     "salt_format = byte\n"
                                     "[table:dec]\n"
                                     "buckets = 1000\n"
                                     "salt_format = decimal\n"
                                     "salt_separator = \\x00\\xff\n"
                                     "hash_part = length:3\n"
                                     "[table:del]\n"
                                     "buckets = 65536\n"
                                     "salt_format = hex\n"
                                     "salt_separator = _\n"
                                     "hash_part = delimiter:#:2\n"
                                     "[table:one]\n"
                                     "buckets = 1\n"
                                     "salt_format = decimal\n"
                                     "[table:phx]\n"
                                     "salt_mapping = phoenix\n"
                                     "buckets = 200\n"
                                     "[table:wd]\n"
                                     "salt_mapping = hbasewd\n"
                                     "buckets = 10\n"
                                     "[table:bt]\n"
                                     "salt_mapping = bigtable-sample\n"
                                     "buckets = 12\n";

static const char *const fuzz_table_names[] = {
    "t", "b", "wide", "dec", "del", "one", "phx", "wd", "bt",
};

/* Loaded once; never freed, so leak checkers see it as reachable. */
static inline const struct config *
fuzz_config(void)
{
    static struct config *cfg;

    if (cfg == NULL) {
        GError *error = NULL;

        cfg = config_load_data(fuzz_conf_text, sizeof(fuzz_conf_text) - 1,
                               "fuzz", &error);
        if (cfg == NULL) {
            fprintf(stderr, "fuzz config: %s\n", error->message);
            abort();
        }
    }
    return cfg;
}

/* The salt of table i (mod the table count), or NULL for i == 0xff. */
static inline const struct salt_table *
fuzz_salt(unsigned i)
{
    const struct config *cfg = fuzz_config();
    const char *name;

    if (i == 0xff) {
        return NULL;
    }
    name = fuzz_table_names[i % G_N_ELEMENTS(fuzz_table_names)];
    return &config_find_table(cfg, name, strlen(name))->salt;
}

/* A broken invariant: abort so that libFuzzer keeps the input. */
#define FUZZ_CHECK(cond)                                                      \
    do {                                                                      \
        if (!(cond)) {                                                        \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__,  \
                    #cond);                                                   \
            abort();                                                          \
        }                                                                     \
    } while (0)

/*
 * The daemon finds an unframed message's end with a scan that resumes
 * where it stopped (wire_scan), however the bytes are cut.  Cut at every
 * point (at most 256 evenly spread points for a long input), it must say
 * exactly what wire_message_scan says of data[0..len) whole: the same
 * status, the same length, the same error.
 */
static inline void
fuzz_check_resumable(wire_proto_t proto, const uint8_t *data, size_t len,
                     const struct wire_limits *limits)
{
    const char *why = NULL, *swhy = NULL;
    size_t n = 0, sn = 0, step = len > 256 ? len / 256 : 1;
    wire_status_t whole, st;

    struct wire_buf marks;

    whole = wire_message_scan(proto, FALSE, data, len, limits, &n, &why);
    wire_buf_init(&marks);
    /* and marking a fetch's rows, as for a scan engine's fetch: each row
     * that has all arrived is then walked at once */
    for (size_t cut = 0; cut <= len; cut += step) {
        for (int mark = 0; mark < 2; mark++) {
            struct wire_scan sc;

            wire_scan_init(&sc);
            wire_scan_mark(&sc, mark ? &marks : NULL);
            st = wire_scan_feed(&sc, proto, data, cut, limits, &sn, &swhy);
            if (st == WIRE_AGAIN) {
                st = wire_scan_feed(&sc, proto, data, len, limits, &sn, &swhy);
            }
            FUZZ_CHECK(st == whole);
            FUZZ_CHECK(st != WIRE_OK || sn == n);
            FUZZ_CHECK(st != WIRE_ERROR || strcmp(swhy, why) == 0);
        }
    }
    wire_buf_free(&marks);
}
