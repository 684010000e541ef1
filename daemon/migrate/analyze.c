/* analyze.c: hbase-salt-migrate --analyze's arithmetic and report. */
#include "analyze.h"

#include <string.h>

#include "escape.h"
#include "salt.h"

const uint32_t analyze_candidates[ANALYZE_NCAND] = { 4, 8, 16, 32, 64 };

/* Separators looked for in keys, as delimiter:SEP:1 choices. */
static const char analyze_separators[] = "#:|_-/.,;";

/* Largest groups shown per choice. */
#define ANALYZE_GROUPS 5

void
analyze_sample_init(struct analyze_sample *s, guint cap)
{
    memset(s, 0, sizeof(*s));
    s->cap = MAX(cap, 1u);
    s->keys = g_ptr_array_new_with_free_func((GDestroyNotify)g_bytes_unref);
    s->rand = g_rand_new_with_seed(24);
}

void
analyze_sample_clear(struct analyze_sample *s)
{
    g_clear_pointer(&s->keys, g_ptr_array_unref);
    g_clear_pointer(&s->rand, g_rand_free);
}

void
analyze_sample_add(struct analyze_sample *s, const uint8_t *key, size_t len)
{
    guint64 j;

    s->seen++;
    if (s->keys->len < s->cap) {
        g_ptr_array_add(s->keys, g_bytes_new(key, len));
        return;
    }
    /* Algorithm R: every key read has the same chance to be kept */
    j = (guint64)(g_rand_double(s->rand) * (double)s->seen);
    if (j < s->cap) {
        g_bytes_unref(s->keys->pdata[j]);
        s->keys->pdata[j] = g_bytes_new(key, len);
    }
}

/* One hash_part choice and what it makes of the sample. */
struct analyze_choice {
    char *name;                    /* "whole", "delimiter:#:1" */
    struct salt_table salt;        /* xxh3, the hash_part; buckets set
                                         per candidate */
    double fullest[ANALYZE_NCAND]; /* share of rows in the fullest */
    double fullest_own;            /* with the table's bucket count */
    guint groups;                  /* distinct hash_part values */
    struct {
        GBytes *part;
        guint count;
    } top[ANALYZE_GROUPS];
    guint ntop;
};

static void
analyze_choice_clear(struct analyze_choice *c)
{
    g_free(c->name);
    for (guint i = 0; i < c->ntop; i++) {
        g_bytes_unref(c->top[i].part);
    }
}

/* The fullest bucket's share of the sample under c with n buckets. */
static double
analyze_fullest(const struct analyze_sample *s, struct analyze_choice *c,
                uint32_t n)
{
    g_autofree guint *count = g_new0(guint, n);
    guint max = 0;

    if (s->keys->len == 0) {
        return 0;
    }
    c->salt.buckets = n;
    c->salt.modulus = n;
    for (guint i = 0; i < s->keys->len; i++) {
        gsize len;
        const uint8_t *k = g_bytes_get_data(s->keys->pdata[i], &len);
        uint32_t b = salt_bucket(&c->salt, k, len);

        count[b]++;
        max = MAX(max, count[b]);
    }
    return (double)max / s->keys->len;
}

static void
analyze_groups(const struct analyze_sample *s, struct analyze_choice *c)
{
    g_autoptr(GHashTable) groups =
        g_hash_table_new_full(g_bytes_hash, g_bytes_equal,
                              (GDestroyNotify)g_bytes_unref, NULL);
    GHashTableIter it;
    gpointer k, v;

    for (guint i = 0; i < s->keys->len; i++) {
        gsize len;
        const uint8_t *key = g_bytes_get_data(s->keys->pdata[i], &len);
        GBytes *part = g_bytes_new(key, salt_hashed_len(&c->salt, key, len));
        guint n = GPOINTER_TO_UINT(g_hash_table_lookup(groups, part));

        g_hash_table_replace(groups, part, GUINT_TO_POINTER(n + 1));
    }
    c->groups = g_hash_table_size(groups);
    g_hash_table_iter_init(&it, groups);
    while (g_hash_table_iter_next(&it, &k, &v)) {
        guint n = GPOINTER_TO_UINT(v), at = c->ntop;

        /* insertion into the short list, largest first */
        while (at > 0 && c->top[at - 1].count < n) {
            at--;
        }
        if (at >= ANALYZE_GROUPS) {
            continue;
        }
        if (c->ntop == ANALYZE_GROUPS) {
            g_bytes_unref(c->top[ANALYZE_GROUPS - 1].part);
        } else {
            c->ntop++;
        }
        memmove(&c->top[at + 1], &c->top[at],
                (c->ntop - 1 - at) * sizeof(c->top[0]));
        c->top[at].part = g_bytes_ref(k);
        c->top[at].count = n;
    }
}

/* A separator most sampled keys hold. */
static gboolean
analyze_frequent(const struct analyze_sample *s, char sep)
{
    guint with = 0;

    for (guint i = 0; i < s->keys->len; i++) {
        gsize len;
        const uint8_t *k = g_bytes_get_data(s->keys->pdata[i], &len);

        with += memchr(k, sep, len) != NULL ? 1 : 0;
    }
    return s->keys->len > 0 && with * 2 > s->keys->len;
}

static void
analyze_add_choice(GArray *choices, const struct salt_table *hash)
{
    struct analyze_choice c = { 0 };
    g_autoptr(GError) error = NULL;
    g_autofree char *desc = NULL;

    g_assert_true(salt_table_init(&c.salt, 16, SALT_FORMAT_HEX, "", 0,
                                  &error));
    if (hash->hash == SALT_HASH_LENGTH) {
        g_assert_true(salt_table_hash_length(&c.salt, hash->hash_len, &error));
        c.name = g_strdup_printf("length:%u", hash->hash_len);
    } else if (hash->hash == SALT_HASH_DELIMITER) {
        g_autoptr(GString) d = g_string_new(NULL);

        g_assert_true(salt_table_hash_delimiter(&c.salt, hash->delim,
                                                hash->delim_len,
                                                hash->hash_count, &error));
        escape_append(d, hash->delim, hash->delim_len);
        c.name = g_strdup_printf("delimiter:%s:%u", d->str, hash->hash_count);
    } else {
        c.name = g_strdup("whole");
    }
    for (guint i = 0; i < choices->len; i++) {
        if (strcmp(g_array_index(choices, struct analyze_choice, i).name,
                   c.name) == 0) {
            g_free(c.name);
            return;
        }
    }
    g_array_append_val(choices, c);
}

static void
analyze_json_str(GString *out, const char *s)
{
    g_string_append_c(out, '"');
    for (; *s != '\0'; s++) {
        if (*s == '"' || *s == '\\') {
            g_string_append_c(out, '\\');
            g_string_append_c(out, *s);
        } else if ((unsigned char)*s < 0x20) {
            g_string_append_printf(out, "\\u%04x", (unsigned char)*s);
        } else {
            g_string_append_c(out, *s);
        }
    }
    g_string_append_c(out, '"');
}

char *
analyze_report(const char *table, const struct config_table *ct,
               const struct analyze_sample *s, gboolean json)
{
    g_autoptr(GArray) choices = g_array_new(FALSE, TRUE,
                                            sizeof(struct analyze_choice));
    GString *out = g_string_new(NULL);
    g_autoptr(GString) section = g_string_new(NULL);
    struct salt_table whole = { 0 }, proposed;
    uint32_t own = ct != NULL ? ct->salt.buckets : 16;
    guint best = 0;
    double n = s->keys->len;
    g_autoptr(GError) error = NULL;

    g_array_set_clear_func(choices, (GDestroyNotify)analyze_choice_clear);
    analyze_add_choice(choices, &whole);
    if (ct != NULL && ct->salt.mapping == SALT_MAPPING_XXH3) {
        analyze_add_choice(choices, &ct->salt);
    }
    for (const char *p = analyze_separators; *p != '\0'; p++) {
        if (analyze_frequent(s, *p)) {
            struct salt_table d = { 0 };

            d.hash = SALT_HASH_DELIMITER;
            d.delim[0] = (uint8_t)*p;
            d.delim_len = 1;
            d.hash_count = 1;
            analyze_add_choice(choices, &d);
        }
    }
    for (guint i = 0; i < choices->len; i++) {
        struct analyze_choice *c = &g_array_index(choices,
                                                  struct analyze_choice, i);

        for (int j = 0; j < ANALYZE_NCAND; j++) {
            c->fullest[j] = analyze_fullest(s, c, analyze_candidates[j]);
        }
        c->fullest_own = analyze_fullest(s, c, own);
        analyze_groups(s, c);
    }
    /*
     * The proposal, at the table's bucket count (16 for a table without
     * a section): a hash_part that keeps groups together (one bucket per
     * group: their scans read one bucket) when its fullest bucket holds
     * at most 1.5 times its even share; else whole keys, which spread
     * every row.
     */
    for (guint i = 1; i < choices->len; i++) {
        const struct analyze_choice *c = &g_array_index(choices,
                                                        struct analyze_choice,
                                                        i);
        const struct analyze_choice *b = &g_array_index(choices,
                                                        struct analyze_choice,
                                                        best);

        if (c->fullest_own * own <= 1.5 &&
            (best == 0 || c->fullest_own < b->fullest_own)) {
            best = i;
        }
    }
    {
        const struct analyze_choice *b = &g_array_index(choices,
                                                        struct analyze_choice,
                                                        best);

        if (ct != NULL && ct->salt.mapping == SALT_MAPPING_XXH3) {
            g_assert_true(salt_table_init(&proposed, own, ct->salt.format,
                                          ct->salt.sep, ct->salt.sep_len,
                                          &error));
        } else {
            g_assert_true(salt_table_init(&proposed, own, SALT_FORMAT_HEX, "",
                                          0, &error));
        }
        proposed.hash = b->salt.hash;
        proposed.hash_len = b->salt.hash_len;
        proposed.hash_count = b->salt.hash_count;
        proposed.delim_len = b->salt.delim_len;
        memcpy(proposed.delim, b->salt.delim, sizeof(proposed.delim));
        g_string_append_printf(section, "[table:%s]\n", table);
        config_mapping_to_text(section, &proposed);
    }

    if (json) {
        g_string_append(out, "{\"table\":");
        analyze_json_str(out, table);
        g_string_append_printf(out,
                               ",\"rows_read\":%" G_GUINT64_FORMAT
                               ",\"sample\":%u,\"complete\":%s,\"regions\":%u,"
                               "\"regions_read\":%u,\"seconds\":%.1f,"
                               "\"choices\":[",
                               s->seen, s->keys->len,
                               s->complete ? "true" : "false", s->regions,
                               s->regions_done, s->seconds);
    } else {
        g_string_append_printf(out,
                               "table %s: %" G_GUINT64_FORMAT " rows read "
                               "from %u of %u regions in %.1f s%s; %u keys "
                               "sampled\n\n"
                               "share of rows in the fullest bucket (the "
                               "even share on the last line):\n%-24s",
                               table, s->seen, s->regions_done, s->regions,
                               s->seconds,
                               s->complete ? ", the whole table"
                                           : " (time limit: the start of "
                                             "each region only)",
                               s->keys->len, "hash_part");
        for (int j = 0; j < ANALYZE_NCAND; j++) {
            g_string_append_printf(out, "  %8u", analyze_candidates[j]);
        }
        g_string_append(out, "  buckets\n");
    }
    for (guint i = 0; i < choices->len; i++) {
        const struct analyze_choice *c = &g_array_index(choices,
                                                        struct analyze_choice,
                                                        i);

        if (json) {
            g_string_append_printf(out, "%s{\"hash_part\":", i > 0 ? "," : "");
            analyze_json_str(out, c->name);
            g_string_append_printf(out, ",\"groups\":%u,\"fullest\":[",
                                   c->groups);
            for (int j = 0; j < ANALYZE_NCAND; j++) {
                g_string_append_printf(out,
                                       "%s{\"buckets\":%u,\"fullest_share\":"
                                       "%.4f}",
                                       j > 0 ? "," : "", analyze_candidates[j],
                                       c->fullest[j]);
            }
            g_string_append(out, "],\"largest_groups\":[");
            for (guint j = 0; j < c->ntop; j++) {
                g_autoptr(GString) k = g_string_new(NULL);
                gsize len;
                const uint8_t *p = g_bytes_get_data(c->top[j].part, &len);

                escape_append(k, p, len);
                g_string_append_printf(out, "%s{\"key\":", j > 0 ? "," : "");
                analyze_json_str(out, k->str);
                g_string_append_printf(out, ",\"rows\":%u,\"share\":%.4f}",
                                       c->top[j].count,
                                       n > 0 ? c->top[j].count / n : 0.0);
            }
            g_string_append(out, "]}");
        } else {
            g_string_append_printf(out, "%-24s", c->name);
            for (int j = 0; j < ANALYZE_NCAND; j++) {
                g_string_append_printf(out, "  %7.1f%%", 100 * c->fullest[j]);
            }
            g_string_append_c(out, '\n');
        }
    }
    if (json) {
        const struct analyze_choice *b = &g_array_index(choices,
                                                        struct analyze_choice,
                                                        best);

        g_string_append_printf(out,
                               "],\"proposed\":{\"buckets\":%u,"
                               "\"hash_part\":",
                               own);
        analyze_json_str(out, b->name);
        g_string_append_printf(out, ",\"fullest_share\":%.4f,\"section\":",
                               b->fullest_own);
        analyze_json_str(out, section->str);
        g_string_append(out, "}}\n");
        return g_string_free(out, FALSE);
    }
    g_string_append_printf(out, "%-24s", "(even share)");
    for (int j = 0; j < ANALYZE_NCAND; j++) {
        g_string_append_printf(out, "  %7.1f%%",
                               100.0 / analyze_candidates[j]);
    }
    g_string_append(out, "\n\nlargest groups (rows sharing a hash_part "
                         "value share one bucket, whatever the count):\n");
    for (guint i = 0; i < choices->len; i++) {
        const struct analyze_choice *c = &g_array_index(choices,
                                                        struct analyze_choice,
                                                        i);

        g_string_append_printf(out, "  %s (%u groups):", c->name, c->groups);
        if (c->ntop > 0 && c->top[0].count == 1) {
            g_string_append(out, " one row each\n");
            continue;
        }
        for (guint j = 0; j < c->ntop; j++) {
            gsize len;
            const uint8_t *p = g_bytes_get_data(c->top[j].part, &len);

            g_string_append_c(out, ' ');
            escape_append(out, p, len);
            g_string_append_printf(out, " %.1f%%%s",
                                   n > 0 ? 100 * c->top[j].count / n : 0.0,
                                   j + 1 < c->ntop ? "," : "");
        }
        g_string_append_c(out, '\n');
    }
    {
        const struct analyze_choice *b = &g_array_index(choices,
                                                        struct analyze_choice,
                                                        best);

        g_string_append_printf(out,
                               "\nproposed (fullest bucket %.1f%% of rows, "
                               "even share %.1f%%):\n%s",
                               100 * b->fullest_own, 100.0 / own,
                               section->str);
        if (ct != NULL && !salt_table_equal(&ct->salt, &proposed)) {
            g_string_append(out, "# a new mapping needs a new table: copy "
                                 "into it with hbase-salt-migrate\n");
        }
    }
    return g_string_free(out, FALSE);
}
