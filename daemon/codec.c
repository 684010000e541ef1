/* codec.c: rewrites one Thrift1 call for the backend and its reply back. */
#include "codec.h"

#include <stddef.h>
#include <string.h>

#include <xxhash.h>

#include "config.h"
#include "escape.h"
#include "filterpb.h"
#include "hbase1.h"
#include "legacy.h"
#include "salt.h"
#include "splits.h"
#include "tabstate.h"
#include "scanfilter.h"

/*
 * One pass over each message: fields the method table names are decoded
 * and rewritten, everything else is copied as bytes (or transcoded when
 * the two sides speak different protocols).  Nothing is allocated here
 * but a caller's tally growing (and a Thrift2 get's filter,
 * codec_filter_row); salted keys are written as two parts
 * (prefix, logical key) straight into the output buffer.  The codec
 * counts nothing: it reports the buckets it touched in the caller's
 * tally, and the engine that called it counts them.
 */

/* ---- tallies ------------------------------------------------------------ */

void
codec_tally_init(struct codec_tally *t)
{
    memset(t, 0, sizeof(*t));
}

void
codec_tally_clear(struct codec_tally *t)
{
    t->n = 0;
    t->unsalted = 0;
    t->nnotes = 0;
}

void
codec_tally_free(struct codec_tally *t)
{
    gboolean keys_on = t->keys_on;

    g_free(t->v);
    g_free(t->notes);
    codec_tally_init(t);
    t->keys_on = keys_on;
}

/* n for key, whose hash_part (part_len bytes) hashes to part_hash. */
static G_ALWAYS_INLINE inline void
codec_key_note_set(struct codec_key_note *n, const struct salt_table *salt,
                   codec_key_kind_t kind, uint32_t bucket, const uint8_t *key,
                   size_t len, size_t part_len, guint64 part_hash)
{
    n->salt = salt;
    n->key = key;
    n->part_hash = part_hash;
    n->key_hash = part_len == len ? part_hash : XXH3_64bits(key, len);
    n->len = (uint32_t)len;
    n->part_len = (uint32_t)part_len;
    n->bucket = bucket;
    n->bytes = 0;
    n->kind = (uint8_t)kind;
}

/* codec_key_note_fill, inline: a reply's rows are CODEC_KEY_ROW, known
 * where it is called, so a row's note is a few stores */
static G_ALWAYS_INLINE inline void
codec_key_note_fill_inline(struct codec_key_note *n,
                           const struct salt_table *salt,
                           codec_key_kind_t kind, uint32_t bucket,
                           const uint8_t *key, size_t len)
{
    /* a row handed back is counted by range and bucket only: the hot
     * keys and the key sample are of reads and writes */
    size_t part = kind == CODEC_KEY_ROW ? len
                                        : salt_hashed_len(salt, key, len);

    codec_key_note_set(n, salt, kind, bucket, key, len, part,
                       kind == CODEC_KEY_ROW ? 0 : XXH3_64bits(key, part));
}

void
codec_key_note_fill(struct codec_key_note *n, const struct salt_table *salt,
                    codec_key_kind_t kind, uint32_t bucket, const uint8_t *key,
                    size_t len)
{
    codec_key_note_fill_inline(n, salt, kind, bucket, key, len);
}

/* A new note of t, when the owner asked for keys and the batch has room;
 * else NULL.  The array grows to the most keys one batch met, then is
 * reused. */
static G_ALWAYS_INLINE inline struct codec_key_note *
codec_tally_note(struct codec_tally *t)
{
    if (t == NULL || !t->keys_on || t->nnotes == CODEC_NOTE_MAX) {
        return NULL;
    }
    if (t->nnotes == t->notes_cap) {
        t->notes_cap = t->notes_cap == 0 ? 16 : t->notes_cap * 2;
        t->notes = g_renew(struct codec_key_note, t->notes, t->notes_cap);
    }
    return &t->notes[t->nnotes++];
}

/* One logical key for the key visualizer, when the owner asked. */
static G_ALWAYS_INLINE inline void
codec_tally_key(struct codec_tally *t, const struct salt_table *salt,
                unsigned stats_id, codec_key_kind_t kind, uint32_t bucket,
                const uint8_t *key, size_t len)
{
    struct codec_key_note *n = codec_tally_note(t);

    if (n != NULL) {
        codec_key_note_fill_inline(n, salt, kind, bucket, key, len);
        n->stats_id = stats_id;
    }
}

/* The call remembers its first noted key (since the mark's count), for
 * an error its reply may carry: copied, as the reply comes after the
 * request's bytes are gone. */
static G_ALWAYS_INLINE inline void
codec_tally_first(const struct codec_tally *t, uint32_t since,
                  struct codec_call *call)
{
    const struct codec_key_note *n;

    call->first_key.salt = NULL;
    if (t == NULL || t->nnotes <= since) {
        return;
    }
    n = &t->notes[since];
    call->first_key.salt = n->salt;
    call->first_key.stats_id = n->stats_id;
    call->first_key.kept = (uint8_t)MIN(n->len, CODEC_NOTE_KEY_MAX);
    codec_note_copy(call->first_key.key, n->key, call->first_key.kept);
}

/* Shares a message's len bytes among the keys it noted since the mark's
 * count (an even share, the rest on the first). */
static G_ALWAYS_INLINE inline void
codec_tally_bytes(struct codec_tally *t, uint32_t since, size_t len)
{
    uint32_t n;
    size_t share;

    if (t == NULL || t->nnotes <= since) {
        return;
    }
    n = t->nnotes - since;
    if (n == 1) {
        /* a point call's one key */
        t->notes[since].bytes = (uint32_t)MIN(len, G_MAXUINT32);
        return;
    }
    share = len / n;
    for (uint32_t i = since; i < t->nnotes; i++) {
        t->notes[i].bytes = (uint32_t)MIN(share, G_MAXUINT32);
    }
    t->notes[since].bytes += (uint32_t)MIN(len - share * n, G_MAXUINT32 / 2);
}

/* One more row key (requests, of which writes) or row (rows) of
 * bucket. */
static void
codec_tally_add(struct codec_tally *t, const struct salt_table *salt,
                unsigned stats_id, uint32_t bucket, uint32_t requests,
                uint32_t writes, uint32_t rows)
{
    struct codec_bucket_count *e;

    if (t == NULL) {
        return;
    }
    if (t->n > 0) {
        e = &t->v[t->n - 1];
        if (e->salt == salt && e->bucket == bucket) {
            e->requests += requests;
            e->writes += writes;
            e->rows += rows;
            return;
        }
    }
    if (t->n == t->cap) {
        t->cap = t->cap == 0 ? 16 : t->cap * 2;
        t->v = g_renew(struct codec_bucket_count, t->v, t->cap);
    }
    e = &t->v[t->n++];
    /* the padding too: tallies compare as bytes (tests) */
    memset(e, 0, sizeof(*e));
    e->salt = salt;
    e->stats_id = stats_id;
    e->bucket = bucket;
    e->requests = requests;
    e->writes = writes;
    e->rows = rows;
}

/* Where a tally stood before a walk, to take the walk back. */
struct codec_tally_mark {
    uint32_t n;
    uint32_t nnotes;
    struct codec_bucket_count last; /* entry n - 1: only its counts move
                                       while it is the last */
    guint64 unsalted;
};

static void
codec_tally_mark(const struct codec_tally *t, struct codec_tally_mark *m)
{
    memset(m, 0, sizeof(*m));
    if (t == NULL) {
        return;
    }
    m->n = t->n;
    m->nnotes = t->nnotes;
    m->unsalted = t->unsalted;
    if (t->n > 0) {
        m->last = t->v[t->n - 1];
    }
}

/* Takes back what walks appended since m: a refused message, or one the
 * stream has not all of, counts nothing. */
static void
codec_tally_rewind(struct codec_tally *t, const struct codec_tally_mark *m)
{
    if (t == NULL) {
        return;
    }
    t->n = m->n;
    t->nnotes = m->nnotes;
    t->unsalted = m->unsalted;
    if (t->n > 0) {
        t->v[t->n - 1] = m->last;
    }
}

/* State of one rewrite. */
struct codec_ctx {
    const struct config *cfg;
    const struct tabstate *ts; /* cfg's run-time state: refusals, metrics
                                  slots; NULL: none */
    unsigned stats_id;         /* a reply's: the call's table's slot */
    struct codec_error *err;
    struct codec_call *call;             /* a request's: notes its table */
    gboolean reply;                      /* walking a reply (unsalting) */
    struct codec_tally *tally;           /* what the walk did, or NULL */
    gboolean write;                      /* the call is a mutation: its keys
                                       count as writes */
    gboolean passthrough;                /* table not salted: copy rows, only
                                       check the fields routing reads */
    const struct salt_table *kv_salt;    /* the call's kv_salt: its keys
                                       are noted, not salted */
    const struct salt_table *unstorable; /* table of the first row too
                                       long for it once salted, or one
                                       its mapping cannot hold, or NULL */
    uint32_t unstorable_len;             /* that row's logical length */
    gboolean unstorable_clash;           /* that row is a legacy key that reads
                                       as a new key's salted row */
    gboolean unstorable_text;            /* it is no UTF-8 (bigtable-sample) */
    gboolean too_long;                   /* a row longer than HBase stores at
                                       all went on unsalted */
    const uint8_t *filter_row;           /* the row a FILTER_ROW field of the
                                       struct being walked applies to */
    uint32_t filter_row_len;
    gboolean has_filter_row;
    gboolean splits_set; /* split keys written by the proxy */
    uint32_t splits_asked, splits_sent;
    const char *refused;    /* a table the call names is refused by the
                            table catalog (tabstate_table.refusal) */
    gboolean refused_retry; /* and whether that clears by itself */
    /* last: codec_ctx_init clears what comes before, and the reader and
     * writer (half a kilobyte of per-level field ids) are set up by their
     * own init, the writer's before its first use */
    struct wire_reader r;
    struct wire_writer w;
};

static gboolean
codec_reject(struct codec_ctx *c, int32_t app_type, codec_answer_t answer,
             const char *message)
{
    c->err->app_type = app_type;
    c->err->answer = (uint8_t)answer;
    c->err->message = message;
    return FALSE;
}

/* Every salt the codec routes by is a configured table's (codec_peek_table
 * is where they come from), so the table's name is found next to it. */
static const struct config_table *
codec_table_of(const struct salt_table *salt)
{
    return (const struct config_table
                *)(const void *)((const char *)salt -
                                 offsetof(struct config_table, salt));
}

/* The metrics slot of salt's table: a request's from its generation's
 * state, a reply's from its call. */
static unsigned
codec_stats_id(const struct codec_ctx *c, const struct salt_table *salt)
{
    return c->reply ? c->stats_id
                    : tabstate_stats_id(c->ts, codec_table_of(salt));
}

/* The metrics slot of the call's table, 0: none. */
static unsigned
codec_call_stats_id(const struct codec_ctx *c, const struct codec_call *call)
{
    if (call->salt != NULL) {
        return codec_stats_id(c, call->salt);
    }
    /* an unsalted table the key visualizer counts ([keyviz]
     * unsalted_tables): its reply's rows are noted under it */
    return call->kv_salt != NULL ? codec_stats_id(c, call->kv_salt) : 0;
}

/* A named table's salt; notes a refusal by the table catalog. */
static const struct salt_table *
codec_table_salt(struct codec_ctx *c, const struct config_table *t)
{
    const char *why;

    if (t == NULL) {
        return NULL;
    }
    why = tabstate_refusal(c->ts, t);
    if (why != NULL && c->refused == NULL) {
        c->refused = why;
        c->refused_retry = tabstate_refusal_retry(c->ts, t);
    }
    return &t->salt;
}

/*
 * The configured table a call names, as config_find_table.  A name the
 * file has no section for yet the table catalog holds as salted
 * (config_orphan_refusal) refuses a call that reads or writes rows: they
 * would not be where the proxies salt them.  Calls on the table itself
 * (HBASE1_ADMIN: descriptors, regions, enable) still pass.
 */
static const struct config_table *
codec_find_table(struct codec_ctx *c, const void *name, size_t len)
{
    const struct config_table *t = config_find_table(c->cfg, name, len);
    const char *why;

    if (t != NULL || c->reply || c->call == NULL || c->call->method == NULL ||
        c->call->method->kind == HBASE1_ADMIN) {
        return t;
    }
    why = tabstate_orphan_refusal(c->ts, name, len);
    if (why != NULL && c->refused == NULL) {
        c->refused = why;
        c->refused_retry = FALSE; /* only an operator clears it */
    }
    return NULL;
}

/* A row HBase would take unsalted but not with the table's prefix, or
 * one the table's salt mapping cannot hold (salt_key_valid). */
static inline gboolean
codec_unstorable(const struct salt_table *salt, const uint8_t *key,
                 uint32_t len)
{
    return len <= SALT_HBASE_MAX_ROW &&
           (len > salt_max_row(salt) ||
            (len > 0 && !salt_key_valid(salt, key, len)));
}

/* A key the table cannot store: a new key too long once salted, or a
 * legacy key that clashes with a new key's row (legacy.h).  Legacy keys
 * are stored as they are, up to HBase's own limit. */
static gboolean
codec_key_unstorable(const struct salt_table *salt, const uint8_t *key,
                     uint32_t len)
{
    if (len == 0 || len > SALT_HBASE_MAX_ROW) {
        return FALSE;
    }
    switch (salt_route(salt, key, len)) {
    case LEGACY_ROUTE_LEGACY: return FALSE;
    case LEGACY_ROUTE_CLASH: return TRUE;
    default: return codec_unstorable(salt, key, len);
    }
}

/*
 * A call that names a row the table cannot store.  A write gets the
 * error HBase would give for it (its IllegalArgument), in the table's
 * own terms: the salted length HBase would quote is no length the client
 * sent.  A single-row read gets what HBase answers for an absent row.
 */
static void
codec_refuse_unstorable(struct codec_ctx *c,
                        const struct hbase1_method *method)
{
    const struct salt_table *salt = c->unstorable;
    const struct config_table *t = codec_table_of(salt);
    struct codec_error *err = c->err;
    int name_len = (int)MIN(t->name_len, (size_t)96);
    char sep[40] = "";

    err->app_type = WIRE_APP_INTERNAL_ERROR;
    if (method->kind == HBASE1_READ &&
        method->service->id == HBASE1_SERVICE_THRIFT1) {
        err->answer = CODEC_ANSWER_EMPTY;
        err->message = "hbase-salt-proxy: row longer than the table stores";
        return;
    }
    err->answer = CODEC_ANSWER_IA;
    if (c->unstorable_clash) {
        g_snprintf(err->text, sizeof(err->text),
                   "hbase-salt-proxy: table %.*s%s cannot store this "
                   "%u-byte row: its legacy rule keeps it unsalted, and "
                   "unsalted it is the stored row of a salted key",
                   name_len, t->name,
                   (size_t)name_len < t->name_len ? "..." : "",
                   c->unstorable_len);
        err->message = err->text;
        return;
    }
    if (c->unstorable_text) {
        g_snprintf(err->text, sizeof(err->text),
                   "hbase-salt-proxy: row is not UTF-8 text, and table "
                   "%.*s%s uses salt_mapping bigtable-sample, whose rows "
                   "are Java strings written as UTF-8",
                   name_len, t->name,
                   (size_t)name_len < t->name_len ? "..." : "");
        err->message = err->text;
        return;
    }
    if (salt->sep_len > 0) {
        g_snprintf(sep, sizeof(sep), " and %u-byte separator", salt->sep_len);
    }
    g_snprintf(err->text, sizeof(err->text),
               "hbase-salt-proxy: row length %u exceeds %zu, the longest "
               "row table %.*s%s can store (%u less its %u-byte salt%s)",
               c->unstorable_len, salt_max_row(salt), name_len, t->name,
               (size_t)name_len < t->name_len ? "..." : "", SALT_HBASE_MAX_ROW,
               salt->width, sep);
    err->message = err->text;
}

/* A call naming a table the catalog refuses: the method's IOError, with
 * the reason (which outlives the reply: the config keeps its texts). */
static void
codec_refuse_catalog(struct codec_ctx *c)
{
    c->err->app_type = WIRE_APP_INTERNAL_ERROR;
    c->err->answer = CODEC_ANSWER_IO;
    c->err->can_retry = c->refused_retry ? 1 : 0;
    c->err->message = c->refused;
}

/*
 * Whether a struct sends a field of its schema twice, reading ahead
 * without consuming.  Java keeps the last one; the proxy routes by what
 * it reads first, so such a call is refused (codec_walk_struct does the
 * same for the calls it walks).  Bytes that do not parse are left for
 * whoever reads them next to report.
 */
static const struct hbase1_field *
codec_repeated_field(const struct codec_ctx *c, const struct hbase1_schema *s)
{
    struct wire_reader ahead = c->r;
    uint32_t seen = 0;
    uint8_t type;
    int16_t fid;

    if (wire_read_struct_begin(&ahead) != WIRE_OK) {
        return NULL;
    }
    while (wire_read_field(&ahead, &type, &fid) == WIRE_OK &&
           type != WIRE_T_STOP) {
        const struct hbase1_field *f = hbase1_schema_field(s, fid);

        if (f != NULL && f->type == type) {
            uint32_t bit = 1u << (f - s->fields);

            if ((seen & bit) != 0) {
                return f;
            }
            seen |= bit;
        }
        if (wire_skip(&ahead, type) != WIRE_OK) {
            return NULL;
        }
    }
    return NULL;
}

/* Skips to field fid (of type) of the struct at r; FALSE if absent. */
static gboolean
codec_seek_field(struct wire_reader *r, int16_t want, uint8_t want_type)
{
    uint8_t type;
    int16_t fid;

    for (;;) {
        if (wire_read_field(r, &type, &fid) != WIRE_OK ||
            type == WIRE_T_STOP) {
            return FALSE;
        }
        if (fid == want && type == want_type) {
            return TRUE;
        }
        if (wire_skip(r, type) != WIRE_OK) {
            return FALSE;
        }
    }
}

/* A request names its first table: kept for its log lines. */
static void
codec_note_table(struct codec_ctx *c, const uint8_t *name, size_t len)
{
    if (c->call == NULL || c->call->table_len > 0) {
        return;
    }
    len = MIN(len, (size_t)CODEC_TABLE_MAX);
    memcpy(c->call->table, name, len);
    c->call->table[len] = '\0';
    c->call->table_len = (uint16_t)len;
}

/*
 * The salt of the table named (and its name noted for the call).  An
 * unsalted one the key visualizer counts ([keyviz] unsalted_tables)
 * gives the call its kv_salt, when keys are noted at all; NULL is
 * returned all the same: nothing of it is salted.
 */
static const struct salt_table *
codec_named_table(struct codec_ctx *c, const uint8_t *name, size_t len)
{
    const struct config_table *t;

    codec_note_table(c, name, len);
    t = codec_find_table(c, name, len);
    if (t == NULL && c->call != NULL && c->tally != NULL &&
        c->tally->keys_on) {
        t = config_find_keyviz_unsalted(c->cfg, name, len);
        c->call->kv_salt = t != NULL ? &t->salt : NULL;
        return NULL;
    }
    return codec_table_salt(c, t);
}

/*
 * The salt of the table a Thrift2 TTableName names (in a descriptor's
 * field 1 when desc), read at r: "ns:qualifier", the default namespace
 * (absent, empty or "default") as the bare qualifier, as the config
 * names tables.
 */
static const struct salt_table *
codec_peek_table_name(struct codec_ctx *c, struct wire_reader *r,
                      gboolean desc, gboolean *found)
{
    const uint8_t *ns = NULL, *q = NULL;
    uint32_t ns_len = 0, q_len = 0;
    uint8_t type, name[512];
    int16_t fid;
    size_t n = 0;

    if (wire_read_struct_begin(r) != WIRE_OK) {
        return NULL;
    }
    if (desc && (!codec_seek_field(r, 1, WIRE_T_STRUCT) ||
                 wire_read_struct_begin(r) != WIRE_OK)) {
        return NULL;
    }
    for (;;) {
        if (wire_read_field(r, &type, &fid) != WIRE_OK) {
            return NULL;
        }
        if (type == WIRE_T_STOP) {
            break;
        }
        if (fid == 1 && type == WIRE_T_STRING) {
            wire_read_binary(r, &ns, &ns_len);
        } else if (fid == 2 && type == WIRE_T_STRING) {
            wire_read_binary(r, &q, &q_len);
        } else if (wire_skip(r, type) != WIRE_OK) {
            return NULL;
        }
    }
    if (q == NULL || (size_t)ns_len + 1 + q_len > sizeof(name)) {
        return NULL;
    }
    *found = TRUE;
    if (ns_len > 0 && !(ns_len == 7 && memcmp(ns, "default", 7) == 0)) {
        memcpy(name, ns, ns_len);
        name[ns_len] = ':';
        n = (size_t)ns_len + 1;
    }
    memcpy(name + n, q, q_len);
    return codec_named_table(c, name, n + q_len);
}

/* Reads ahead, without consuming, the table named by a struct's TABLE
 * field.  The reader is a plain struct, so a copy scans ahead for free. */
static const struct salt_table *
codec_peek_table(struct codec_ctx *c, const struct hbase1_schema *s,
                 gboolean *found)
{
    struct wire_reader ahead = c->r;
    uint8_t type;
    int16_t fid;

    *found = FALSE;
    if (wire_read_struct_begin(&ahead) != WIRE_OK) {
        return NULL;
    }
    for (;;) {
        const struct hbase1_field *f;

        if (wire_read_field(&ahead, &type, &fid) != WIRE_OK ||
            type == WIRE_T_STOP) {
            return NULL;
        }
        f = hbase1_schema_field(s, fid);
        if (f != NULL && f->action == HBASE1_TABLE && f->type == type) {
            const uint8_t *name;
            uint32_t len;

            if (wire_read_binary(&ahead, &name, &len) != WIRE_OK) {
                return NULL;
            }
            *found = TRUE;
            return codec_named_table(c, name, len);
        }
        if (f != NULL && f->type == type &&
            (f->action == HBASE1_TABLE_NAME ||
             f->action == HBASE1_TABLE_DESC)) {
            return codec_peek_table_name(c, &ahead,
                                         f->action == HBASE1_TABLE_DESC,
                                         found);
        }
        if (wire_skip(&ahead, type) != WIRE_OK) {
            return NULL;
        }
    }
}

/* Writes one logical key read from the call, salted. */
static void
codec_key_in(struct codec_ctx *c, const struct salt_table *salt,
             const uint8_t *key, uint32_t len)
{
    uint8_t prefix[SALT_MAX_PREFIX];
    size_t plen;
    uint32_t bucket;
    unsigned stats_id;
    legacy_route_t route;
    struct codec_key_note *note;

    if (salt == NULL) {
        if (c->kv_salt != NULL) {
            codec_tally_key(c->tally, c->kv_salt,
                            codec_stats_id(c, c->kv_salt),
                            c->write ? CODEC_KEY_WRITE : CODEC_KEY_READ, 0,
                            key, len);
        }
        wire_write_binary(&c->w, key, len);
        return;
    }
    if (len == 0 || len > SALT_HBASE_MAX_ROW) {
        /* HBase refuses empty rows and rows longer than it stores, each
         * method in its own way: such a row goes on unsalted so the
         * client hears exactly what an unsalted table would say */
        c->too_long = c->too_long || len > 0;
        wire_write_binary(&c->w, key, len);
        return;
    }
    route = salt_route(salt, key, len);
    if (route == LEGACY_ROUTE_LEGACY) {
        /* kept where it always was: unsalted; counted as the legacy
         * range, the index past the last bucket */
        codec_tally_add(c->tally, salt, codec_stats_id(c, salt), salt->buckets,
                        1, c->write, 0);
        codec_tally_key(c->tally, salt, codec_stats_id(c, salt),
                        c->write ? CODEC_KEY_WRITE : CODEC_KEY_READ,
                        salt->buckets, key, len);
        wire_write_binary(&c->w, key, len);
        return;
    }
    if ((route == LEGACY_ROUTE_CLASH || codec_unstorable(salt, key, len)) &&
        c->unstorable == NULL) {
        /* salted it is too long for HBase, or it is no key of the table:
         * sent only if another row of the call fails anyway, see
         * codec_request_args */
        c->unstorable = salt;
        c->unstorable_len = len;
        c->unstorable_clash = route == LEGACY_ROUTE_CLASH;
        c->unstorable_text = !c->unstorable_clash && len <= salt_max_row(salt);
    }
    /* once: a call, not an inline load (the note and the tally) */
    stats_id = codec_stats_id(c, salt);
    note = codec_tally_note(c->tally);
    if (note != NULL) {
        /* the hash that chose the bucket is the key visualizer's too */
        size_t part;
        guint64 hash;

        bucket = salt_bucket_part(salt, key, len, &part, &hash);
        codec_key_note_set(note, salt,
                           c->write ? CODEC_KEY_WRITE : CODEC_KEY_READ, bucket,
                           key, len, part, hash);
        note->stats_id = stats_id;
    } else {
        bucket = salt_bucket(salt, key, len);
    }
    codec_tally_add(c->tally, salt, stats_id, bucket, 1, c->write, 0);
    plen = salt_write_prefix(salt, bucket, prefix);
    wire_write_binary2(&c->w, prefix, (uint32_t)plen, key, len);
}

/* Salts one logical key on the way in. */
static gboolean
codec_row_in(struct codec_ctx *c, const struct salt_table *salt)
{
    const uint8_t *key;
    uint32_t len;

    if (wire_read_binary(&c->r, &key, &len) != WIRE_OK) {
        return FALSE;
    }
    codec_key_in(c, salt, key, len);
    return TRUE;
}

/*
 * An hbase:meta row key naming a row of a table, as getRegionInfo takes
 * it: "table,row,suffix" (HBase reverse-scans hbase:meta from it, so the
 * answer is the region holding row; clients write the suffix
 * 99999999999999).  Meta keys split at the first comma (table names have
 * none) and the last (the row may hold commas).  For a salted table the
 * row gains its salt, so the answer is the region holding the logical
 * row.  Anything else (no second comma, an empty row: the table's first
 * region, a legacy row, an unsalted table) goes on as it is.
 */
static gboolean
codec_meta_row_in(struct codec_ctx *c)
{
    const struct salt_table *salt;
    const uint8_t *meta, *first, *last, *row;
    uint8_t prefix[SALT_MAX_PREFIX];
    uint32_t len, table_len, row_len, bucket;
    size_t plen;

    if (wire_read_binary(&c->r, &meta, &len) != WIRE_OK) {
        return FALSE;
    }
    first = len > 0 ? memchr(meta, ',', len) : NULL;
    last = first;
    for (const uint8_t *p = meta + len; first != NULL && p > first + 1; p--) {
        if (p[-1] == ',') {
            last = p - 1;
            break;
        }
    }
    if (first == NULL || last == first) {
        wire_write_binary(&c->w, meta, len);
        return TRUE;
    }
    table_len = (uint32_t)(first - meta);
    row = first + 1;
    row_len = (uint32_t)(last - row);
    salt = codec_table_salt(c, config_find_table(c->cfg, meta, table_len));
    if (salt == NULL || row_len == 0 || row_len > SALT_HBASE_MAX_ROW ||
        salt_route(salt, row, row_len) == LEGACY_ROUTE_LEGACY) {
        wire_write_binary(&c->w, meta, len);
        return TRUE;
    }
    bucket = salt_bucket(salt, row, row_len);
    plen = salt_write_prefix(salt, bucket, prefix);
    wire_write_binary3(&c->w, meta, table_len + 1, prefix, (uint32_t)plen, row,
                       len - table_len - 1);
    return TRUE;
}

/*
 * The rows of a multi-row read of a salted table.  A row the table
 * cannot store is left out: no stored row can match it, and the reply
 * then lacks it as HBase's reply lacks any absent row.  The list's count
 * comes first on the wire, so the rows are counted ahead.
 */
static gboolean
codec_rows_in(struct codec_ctx *c, const struct salt_table *salt)
{
    struct wire_reader ahead;
    const uint8_t *key;
    uint8_t et;
    uint32_t count, kept = 0, len, i;

    if (wire_read_list_begin(&c->r, &et, &count) != WIRE_OK) {
        return FALSE;
    }
    if (et != WIRE_T_STRING) {
        /* not rows as Java reads them: the backend answers for it */
        wire_write_list_begin(&c->w, et, count);
        for (i = 0; i < count; i++) {
            if (wire_copy(&c->r, &c->w, et) != WIRE_OK) {
                return FALSE;
            }
        }
    } else {
        /* a short list fails below, on the reader that reports it */
        ahead = c->r;
        for (i = 0;
             i < count && wire_read_binary(&ahead, &key, &len) == WIRE_OK;
             i++) {
            kept += codec_key_unstorable(salt, key, len) ? 0 : 1;
        }
        wire_write_list_begin(&c->w, et, kept);
        for (i = 0; i < count; i++) {
            if (wire_read_binary(&c->r, &key, &len) != WIRE_OK) {
                return FALSE;
            }
            if (!codec_key_unstorable(salt, key, len)) {
                codec_key_in(c, salt, key, len);
            }
        }
    }
    wire_read_container_end(&c->r);
    wire_write_container_end(&c->w);
    return c->r.status == WIRE_OK;
}

/* Strips the salt of one physical key on the way out. */
static gboolean
codec_row_out(struct codec_ctx *c, const struct salt_table *salt)
{
    const uint8_t *phys, *logical;
    size_t logical_len;
    uint32_t len, bucket;

    if (wire_read_binary(&c->r, &phys, &len) != WIRE_OK) {
        return FALSE;
    }
    if (salt == NULL) {
        if (c->kv_salt != NULL) {
            codec_tally_key(c->tally, c->kv_salt, c->stats_id, CODEC_KEY_ROW,
                            0, phys, len);
        }
        wire_write_binary(&c->w, phys, len);
        return TRUE;
    }
    switch (salt_owner(salt, phys, len, &logical, &logical_len, &bucket)) {
    case LEGACY_OWNER_SALTED:
        codec_tally_add(c->tally, salt, c->stats_id, bucket, 0, 0, 1);
        codec_tally_key(c->tally, salt, c->stats_id, CODEC_KEY_ROW, bucket,
                        logical, logical_len);
        wire_write_binary(&c->w, logical, (uint32_t)logical_len);
        return TRUE;
    case LEGACY_OWNER_LEGACY:
        /* a legacy row: stored as its logical key */
        codec_tally_add(c->tally, salt, c->stats_id, salt->buckets, 0, 0, 1);
        codec_tally_key(c->tally, salt, c->stats_id, CODEC_KEY_ROW,
                        salt->buckets, phys, len);
        wire_write_binary(&c->w, phys, len);
        return TRUE;
    default:
        /* written around the proxy: hand it back as stored */
        if (c->tally != NULL) {
            c->tally->unsalted++;
        }
        wire_write_binary(&c->w, phys, len);
        return TRUE;
    }
}

static gboolean codec_walk_struct(struct codec_ctx *c,
                                  const struct hbase1_schema *s,
                                  const struct salt_table *salt);

/* Bytes.toStringBinary's bytes that print as themselves; the rest, the
 * backslash included, as \xNN. */
static gboolean
codec_java_printable(uint8_t ch)
{
    return g_ascii_isalnum(ch) ||
           (ch != '\0' && strchr(" `~!@#$%^&*()-_=+[]{}|;:'\",.<>/?", ch));
}

/* One Bytes.toStringBinary text back to its bytes; FALSE if it is none. */
static gboolean
codec_java_unquote(const char *p, size_t n, GByteArray *out)
{
    for (size_t i = 0; i < n; i++) {
        uint8_t ch = (uint8_t)p[i];

        if (ch == '\\' && i + 3 < n && p[i + 1] == 'x' &&
            g_ascii_isxdigit(p[i + 2]) && g_ascii_isxdigit(p[i + 3])) {
            ch = (uint8_t)(g_ascii_xdigit_value(p[i + 2]) * 16 +
                           g_ascii_xdigit_value(p[i + 3]));
            i += 3;
        } else if (!codec_java_printable(ch)) {
            return FALSE;
        }
        g_byte_array_append(out, &ch, 1);
    }
    return TRUE;
}

/*
 * An exception's message on its way out: each <ROW> in it that reads as
 * a physical row of the call's table (HBase quotes the rows of a
 * mutation whose rows do not match, in Bytes.toStringBinary's form) is
 * quoted as the client's logical row.  A quote that is not such a row,
 * or whose row holds a '>', is left as it is.
 */
static gboolean
codec_message_out(struct codec_ctx *c, const struct salt_table *salt)
{
    g_autoptr(GString) text = NULL;
    g_autoptr(GByteArray) row = NULL;
    const uint8_t *msg;
    uint32_t len;
    size_t i = 0;

    if (wire_read_binary(&c->r, &msg, &len) != WIRE_OK) {
        return FALSE;
    }
    text = g_string_sized_new(len);
    row = g_byte_array_new();
    while (i < len) {
        const uint8_t *open = memchr(msg + i, '<', len - i);
        const uint8_t *close, *logical;
        size_t logical_len;
        uint32_t bucket;

        if (open == NULL) {
            break;
        }
        g_string_append_len(text, (const char *)msg + i, open - (msg + i));
        i = (size_t)(open - msg) + 1;
        close = memchr(msg + i, '>', len - i);
        g_byte_array_set_size(row, 0);
        if (close == NULL ||
            !codec_java_unquote((const char *)msg + i, close - (msg + i),
                                row) ||
            salt_owner(salt, row->data, row->len, &logical, &logical_len,
                       &bucket) != LEGACY_OWNER_SALTED) {
            g_string_append_c(text, '<');
            continue;
        }
        g_string_append_c(text, '<');
        escape_hex_append(text, logical, logical_len, codec_java_printable);
        g_string_append_c(text, '>');
        i = (size_t)(close - msg) + 1;
    }
    g_string_append_len(text, (const char *)msg + i, len - i);
    wire_write_binary(&c->w, (const uint8_t *)text->str, (uint32_t)text->len);
    return TRUE;
}

void
codec_filter_refusal(const GError *error, char *text, size_t size,
                     gboolean *can_retry)
{
    const char *why = error != NULL ? error->message : "filter refused";

    *can_retry = FALSE;
    if (error != NULL && error->domain == FILTERPB_ERROR) {
        switch (error->code) {
        case FILTERPB_ERROR_MALFORMED:
            /* protobuf-java's own message, and HBase lets it be retried */
            *can_retry = TRUE;
            g_strlcpy(text, why, size);
            return;
        case FILTERPB_ERROR_UNKNOWN_CLASS: g_strlcpy(text, why, size); return;
        case FILTERPB_ERROR_INVALID:
            g_strlcpy(text, "java.lang.reflect.InvocationTargetException",
                      size);
            return;
        default: break;
        }
    }
    g_snprintf(text, size, "java.lang.IllegalArgumentException: %s", why);
}

/*
 * A filter string applied to one row (a Thrift2 get's): rewritten for
 * the bucket of that row as a scan's filter is for each bucket
 * (scanfilter.h), so comparisons with row keys keep their meaning; one
 * salting would change is refused as the scan engine refuses it.  The
 * only place the codec allocates: a get with a filter on a salted table.
 */
static gboolean
codec_filter_row(struct codec_ctx *c, const struct hbase1_field *field,
                 const struct salt_table *salt)
{
    g_autoptr(GError) error = NULL;
    gboolean pb = field->role == HBASE1_ROLE_FILTER_BYTES;
    struct scanfilter *f;
    const uint8_t *text, *out;
    uint32_t len;
    size_t olen;

    if (wire_read_binary(&c->r, &text, &len) != WIRE_OK) {
        return FALSE;
    }
    if (salt == NULL || !c->has_filter_row || c->filter_row_len == 0 ||
        c->filter_row_len > SALT_HBASE_MAX_ROW ||
        salt_route(salt, c->filter_row, c->filter_row_len) ==
            LEGACY_ROUTE_LEGACY) {
        /* no row it could match (HBase answers for the row), or one kept
         * unsalted by the table's legacy rule: the filter as written */
        wire_write_binary(&c->w, text, len);
        return TRUE;
    }
    f = pb ? scanfilter_new_pb(text, len, salt, FALSE,
                               (const char *const *)
                                   c->cfg->custom_filter_classes,
                               &error)
           : scanfilter_new(text, len, salt, FALSE,
                            (const char *const *)c->cfg->custom_filters,
                            &error);
    if (f == NULL) {
        gboolean retry = FALSE;

        codec_filter_refusal(error, c->err->text, sizeof(c->err->text),
                             &retry);
        codec_reject(c, WIRE_APP_INTERNAL_ERROR, CODEC_ANSWER_IO,
                     c->err->text);
        c->err->can_retry = retry ? 1 : 0;
        return FALSE;
    }
    out = scanfilter_for_bucket(f,
                                salt_bucket(salt, c->filter_row,
                                            c->filter_row_len),
                                &olen);
    wire_write_binary(&c->w, out, (uint32_t)olen);
    scanfilter_free(f);
    return TRUE;
}

/* Reads ahead, without consuming, the ROW field of struct s for its
 * FILTER_ROW field (the filter may come first on the wire). */
static void
codec_peek_filter_row(struct codec_ctx *c, const struct hbase1_schema *s)
{
    struct wire_reader ahead = c->r;
    uint8_t type;
    int16_t fid;

    c->has_filter_row = FALSE;
    if (wire_read_struct_begin(&ahead) != WIRE_OK) {
        return;
    }
    while (wire_read_field(&ahead, &type, &fid) == WIRE_OK &&
           type != WIRE_T_STOP) {
        const struct hbase1_field *f = hbase1_schema_field(s, fid);

        if (f != NULL && f->action == HBASE1_ROW && f->type == type) {
            c->has_filter_row = wire_read_binary(&ahead, &c->filter_row,
                                                 &c->filter_row_len) ==
                                WIRE_OK;
            return;
        }
        if (wire_skip(&ahead, type) != WIRE_OK) {
            return;
        }
    }
}

/* The regions asked by a client that sent count split keys. */
static uint32_t
codec_splits_regions(uint32_t count)
{
    return count >= SPLITS_MAX_REGIONS ? SPLITS_MAX_REGIONS : count + 1;
}

/*
 * The split keys of a salted table's createTable or
 * isTableAvailableWithSplit: the client's keys are logical row keys, which
 * the salt puts anywhere, so the buckets' split points (splits.h) go
 * instead, for as many regions as the client asked (at least one per
 * bucket).  read: the client sent the list (else it is written new, for
 * as many regions as buckets).  The caller logs the replacement.
 *
 * Over a framed transport the list goes empty: HBase's Thrift2 server
 * (ThriftUtilities.splitKeyFromThrift, 2.x to master) takes each key's
 * ByteBuffer.array(), which a framed read shares with the whole request,
 * so every split key arrives as the request's bytes: with two or more
 * HBase refuses the call ("All split keys must be unique", an internal
 * error), with one it cuts the table at that garbage.  The table is made
 * whole instead; the log line says how to pre-split it by hand.
 */
static gboolean
codec_splits(struct codec_ctx *c, const struct salt_table *salt, gboolean read)
{
    g_autoptr(GPtrArray) points =
        g_ptr_array_new_with_free_func((GDestroyNotify)g_bytes_unref);
    uint32_t count = 0;
    uint8_t et;

    if (read) {
        if (wire_read_list_begin(&c->r, &et, &count) != WIRE_OK) {
            return FALSE;
        }
        for (uint32_t i = 0; i < count; i++) {
            if (wire_skip(&c->r, et) != WIRE_OK) {
                return FALSE;
            }
        }
        wire_read_container_end(&c->r);
    }
    if (c->cfg->transport != CONFIG_TRANSPORT_FRAMED) {
        splits_compute(salt, codec_splits_regions(count), points);
    }
    wire_write_list_begin(&c->w, WIRE_T_STRING, points->len);
    for (guint i = 0; i < points->len; i++) {
        gsize n;
        const uint8_t *p = g_bytes_get_data(points->pdata[i], &n);

        wire_write_binary(&c->w, p, (uint32_t)n);
    }
    wire_write_container_end(&c->w);
    c->splits_set = TRUE;
    c->splits_asked = count;
    c->splits_sent = points->len;
    return c->r.status == WIRE_OK;
}

char *
codec_splits_describe(const struct codec_call *call)
{
    const struct config_table *t = codec_table_of(call->salt);
    g_autoptr(GPtrArray) points =
        g_ptr_array_new_with_free_func((GDestroyNotify)g_bytes_unref);
    GString *out = g_string_new(NULL);

    if (call->splits_sent == 0) {
        /* framed: see codec_splits */
        g_string_append_printf(
            out,
            "%.*s of salted table %s: the client's %u split keys dropped, "
            "none sent: HBase's Thrift2 server reads split keys sent over a "
            "framed transport as the whole request, so the table is not "
            "pre-split at its buckets; split it in the HBase shell at the "
            "points hbase-salt-proxy --split-keys %s prints",
            (int)call->name_len, call->name, t->name, call->splits_asked,
            t->name);
        return g_string_free(out, FALSE);
    }
    /* the same points codec_splits sent: splits_compute is a function
     * of the mapping and the region count */
    splits_compute(call->salt, codec_splits_regions(call->splits_asked),
                   points);
    g_string_append_printf(out,
                           "%.*s of salted table %s: the client's %u split "
                           "keys replaced by the salt buckets' %u (%u "
                           "regions): ",
                           (int)call->name_len, call->name, t->name,
                           call->splits_asked, points->len, points->len + 1);
    splits_join(out, points, escape_append);
    return g_string_free(out, FALSE);
}

static gboolean
codec_walk_field(struct codec_ctx *c, const struct hbase1_field *f,
                 const struct salt_table *salt)
{
    uint8_t et;
    uint32_t count, i;

    if (c->passthrough && c->kv_salt == NULL) {
        /* nothing to rewrite; codec_walk_struct checked the field (an
         * unsalted table the key visualizer counts is walked on: its
         * row keys are noted, and pass as they are, salt being NULL) */
        return wire_copy(&c->r, &c->w, f->type) == WIRE_OK;
    }
    switch (f->action) {
    case HBASE1_TABLE:
    case HBASE1_TABLE_NAME:
    case HBASE1_TABLE_DESC: return wire_copy(&c->r, &c->w, f->type) == WIRE_OK;
    case HBASE1_SPLITS:
        if (!c->reply && salt != NULL) {
            return codec_splits(c, salt, TRUE);
        }
        return wire_copy(&c->r, &c->w, f->type) == WIRE_OK;
    case HBASE1_FILTER_ROW:
        if (!c->reply && salt != NULL) {
            return codec_filter_row(c, f, salt);
        }
        return wire_copy(&c->r, &c->w, f->type) == WIRE_OK;
    case HBASE1_REFUSE_SALTED:
        if (!c->reply && salt != NULL) {
            return codec_reject(c, WIRE_APP_INTERNAL_ERROR, CODEC_ANSWER_IO,
                                f->refuse);
        }
        return wire_copy(&c->r, &c->w, f->type) == WIRE_OK;
    case HBASE1_MESSAGE_OUT:
        if (c->reply && salt != NULL) {
            return codec_message_out(c, salt);
        }
        return wire_copy(&c->r, &c->w, f->type) == WIRE_OK;
    case HBASE1_ROW: return codec_row_in(c, salt);
    case HBASE1_META_ROW:
        if (!c->reply) {
            return codec_meta_row_in(c);
        }
        return wire_copy(&c->r, &c->w, f->type) == WIRE_OK;
    case HBASE1_ROW_OUT: return codec_row_out(c, salt);
    case HBASE1_STRUCT: return codec_walk_struct(c, f->sub, salt);
    case HBASE1_ROWS:
        if (!c->reply && salt != NULL) {
            return codec_rows_in(c, salt);
        }
        /* fall through */
    case HBASE1_STRUCT_LIST:
        if (wire_read_list_begin(&c->r, &et, &count) != WIRE_OK) {
            return FALSE;
        }
        wire_write_list_begin(&c->w, et, count);
        for (i = 0; i < count; i++) {
            gboolean ok;

            if (f->action == HBASE1_ROWS && et == WIRE_T_STRING) {
                ok = c->reply ? codec_row_out(c, salt) : codec_row_in(c, salt);
            } else if (f->action == HBASE1_STRUCT_LIST &&
                       et == WIRE_T_STRUCT) {
                ok = codec_walk_struct(c, f->sub, salt);
            } else {
                ok = wire_copy(&c->r, &c->w, et) == WIRE_OK;
            }
            if (!ok) {
                return FALSE;
            }
        }
        wire_read_container_end(&c->r);
        wire_write_container_end(&c->w);
        return c->r.status == WIRE_OK;
    default: return wire_copy(&c->r, &c->w, f->type) == WIRE_OK;
    }
}

static gboolean
codec_walk_struct(struct codec_ctx *c, const struct hbase1_schema *s,
                  const struct salt_table *salt)
{
    uint32_t seen = 0; /* schema fields met, by index */
    uint8_t type;
    int16_t fid;

    if (s->scoped_table) {
        gboolean found;

        salt = codec_peek_table(c, s, &found);
    }
    if (!c->reply && salt != NULL && !c->passthrough) {
        for (uint8_t i = 0; i < s->nfields; i++) {
            if (s->fields[i].action == HBASE1_FILTER_ROW) {
                codec_peek_filter_row(c, s);
                break;
            }
        }
    }
    if (wire_read_struct_begin(&c->r) != WIRE_OK) {
        return FALSE;
    }
    wire_write_struct_begin(&c->w);
    for (;;) {
        const uint8_t *at = c->r.pos;
        const struct hbase1_field *f;
        uint32_t bit;

        if (wire_read_field(&c->r, &type, &fid) != WIRE_OK) {
            return FALSE;
        }
        if (type == WIRE_T_STOP) {
            break;
        }
        f = hbase1_schema_field(s, fid);
        if (f == NULL || f->type != type) {
            /* no key in it: header and value as they came */
            if (wire_copy_field(&c->r, &c->w, at, type, fid) != WIRE_OK) {
                return FALSE;
            }
            continue;
        }
        bit = 1u << (f - s->fields);
        /* A reply's rows are each unsalted as they come, and a client
         * keeping the last sees the last one's logical key: only a
         * call's fields decide where the proxy sends it.  Unsalted,
         * only a second table name would change that. */
        if (!c->reply && (seen & bit) != 0 && f->repeated != NULL &&
            (!c->passthrough || f->action == HBASE1_TABLE)) {
            return codec_reject(c, WIRE_APP_PROTOCOL_ERROR, CODEC_ANSWER_APP,
                                f->repeated);
        }
        seen |= bit;
        wire_write_field(&c->w, type, fid);
        if (!codec_walk_field(c, f, salt)) {
            return FALSE;
        }
    }
    if (!c->reply && salt != NULL && !c->passthrough) {
        /* a salted table's createTable without split keys still gets
         * one region per bucket */
        for (uint8_t i = 0; i < s->nfields; i++) {
            if (s->fields[i].action == HBASE1_SPLITS &&
                (seen & (1u << i)) == 0) {
                wire_write_field(&c->w, WIRE_T_LIST, s->fields[i].fid);
                if (!codec_splits(c, salt, FALSE)) {
                    return FALSE;
                }
            }
        }
    }
    wire_read_struct_end(&c->r);
    wire_write_struct_end(&c->w);
    return c->r.status == WIRE_OK;
}

static void
codec_call_init(struct codec_call *call, const struct hbase1_service *svc,
                const struct wire_msg *m)
{
    /* wire_read_msg_begin caps names at WIRE_MAX_NAME */
    memcpy(call->name, m->name, m->name_len);
    call->name[m->name_len] = '\0';
    call->name_len = (uint16_t)m->name_len;
    call->client_seqid = m->seqid;
    call->client_strict = m->strict;
    call->service = svc;
    call->method = hbase1_service_lookup(svc, m->name, m->name_len);
    call->salt = NULL;
    call->kv_salt = NULL;
    call->stats_id = 0;
    call->first_key.salt = NULL;
}

/* A walk over io: a whole message, or the front of a stream. */
static void
codec_ctx_init(struct codec_ctx *c, const struct codec_io *io, gboolean reply)
{
    memset(c, 0, offsetof(struct codec_ctx, r));
    c->cfg = io->cfg;
    c->ts = io->ts;
    c->err = io->err;
    c->reply = reply;
    c->tally = io->tally;
    wire_reader_init(&c->r, io->from, io->data, io->len, !io->stream,
                     io->limits);
}

/*
 * The call's message header, into m and call (its method looked up in
 * the table of io's service).  CLOSE: no header; REJECT: not a call.
 */
static codec_status_t
codec_request_head(struct codec_ctx *c, const struct codec_io *io,
                   struct codec_call *call, struct wire_msg *m)
{
    struct codec_error *err = c->err;

    codec_call_clear(call);
    c->call = call;
    /* not text[]: the message says whether it is used */
    err->app_type = 0;
    err->message = NULL;
    err->answer = CODEC_ANSWER_APP;
    err->can_retry = 0;
    if (wire_read_msg_begin(&c->r, m) != WIRE_OK) {
        err->app_type = WIRE_APP_PROTOCOL_ERROR;
        err->message = c->r.error != NULL ? c->r.error : "bad message header";
        return CODEC_CLOSE;
    }
    codec_call_init(call,
                    io->svc != NULL ? io->svc
                                    : hbase1_service(HBASE1_SERVICE_THRIFT1),
                    m);
    if (m->type != WIRE_CALL) {
        codec_reject(c, WIRE_APP_INVALID_MESSAGE_TYPE, CODEC_ANSWER_APP,
                     "hbase-salt-proxy: expected a call message");
        return CODEC_REJECT;
    }
    c->write = call->method != NULL && call->method->kind == HBASE1_WRITE;
    return CODEC_OK;
}

/*
 * A scanner call (kind HBASE1_SCAN_OPEN and after): SCAN, the scan
 * engine takes it; REJECT; or OK for a one-shot scan of an unsalted
 * table (getScannerResults), which has no scanner id to keep: it goes on
 * as any other call.
 */
static codec_status_t
codec_request_scanner(struct codec_ctx *c, struct codec_call *call)
{
    const struct hbase1_method *method = call->method;
    struct codec_error *err = c->err;
    gboolean named = FALSE;

    if (method->args != NULL) {
        const struct hbase1_field *twice = codec_repeated_field(c,
                                                                method->args);

        if (twice != NULL) {
            codec_reject(c, WIRE_APP_PROTOCOL_ERROR, CODEC_ANSWER_APP,
                         twice->repeated);
            return CODEC_REJECT;
        }
        call->salt = codec_peek_table(c, method->args, &named);
        call->stats_id = codec_call_stats_id(c, call);
    }
    if (c->r.status != WIRE_OK) {
        err->app_type = WIRE_APP_PROTOCOL_ERROR;
        err->message = c->r.error;
        return CODEC_REJECT;
    }
    if (c->refused != NULL) {
        codec_refuse_catalog(c);
        return CODEC_REJECT;
    }
    if (method->kind != HBASE1_SCAN_ONCE || call->salt != NULL) {
        return CODEC_SCAN;
    }
    call->salt = NULL;
    return CODEC_OK;
}

/*
 * The call after its header m, rewritten into io->out: OK, or REJECT
 * with io->out as it was.
 */
static codec_status_t
codec_request_args(struct codec_ctx *c, const struct codec_io *io,
                   const struct wire_msg *m, struct codec_call *call)
{
    const struct hbase1_method *method = call->method;
    struct codec_error *err = c->err;
    struct wire_buf *out = io->out;
    size_t mark = out->len;
    gboolean ok;

    wire_writer_init(&c->w, io->to, out);
    wire_write_msg_begin(&c->w, m->name, m->name_len, WIRE_CALL,
                         io->backend_seqid);
    if (method == NULL || method->args == NULL) {
        /* no row keys: unknown names too, the backend answers those */
        ok = wire_copy(&c->r, &c->w, WIRE_T_STRUCT) == WIRE_OK;
    } else {
        gboolean named = FALSE;

        call->salt = codec_peek_table(c, method->args, &named);
        call->stats_id = codec_call_stats_id(c, call);
        if (c->r.status != WIRE_OK) {
            ok = FALSE;
        } else {
            /* a table the config does not salt: bytes pass through, but
             * a second table name would be the one HBase writes to */
            c->passthrough = named && call->salt == NULL;
            c->kv_salt = call->kv_salt;
            ok = codec_walk_struct(c, method->args, call->salt);
        }
    }
    if (ok && c->refused != NULL) {
        /* nothing of it reaches HBase */
        out->len = mark;
        codec_refuse_catalog(c);
        return CODEC_REJECT;
    }
    if (ok && c->unstorable != NULL && !c->too_long) {
        out->len = mark;
        codec_refuse_unstorable(c, method);
        return CODEC_REJECT;
    }
    if (!ok) {
        out->len = mark;
        if (err->message == NULL) {
            err->app_type = WIRE_APP_PROTOCOL_ERROR;
            err->message = c->r.error != NULL ? c->r.error : "malformed call";
        }
        return CODEC_REJECT;
    }
    call->splits_set = c->splits_set;
    call->splits_asked = c->splits_asked;
    call->splits_sent = c->splits_sent;
    return CODEC_OK;
}

/*
 * One walk of codec_request over io's bytes.  *rs: the reader's final
 * status (AGAIN when the bytes ran out first); io->used: where it
 * stopped, the message's length when OK.
 */
static codec_status_t
codec_request_walk(struct codec_io *io, struct codec_call *call,
                   wire_status_t *rs)
{
    struct codec_ctx c;
    struct wire_msg m;
    codec_status_t st;

    codec_ctx_init(&c, io, FALSE);
    st = codec_request_head(&c, io, call, &m);
    if (st == CODEC_OK && call->method != NULL &&
        call->method->kind >= HBASE1_SCAN_OPEN) {
        st = codec_request_scanner(&c, call);
    }
    if (st == CODEC_OK) {
        st = codec_request_args(&c, io, &m, call);
    }
    *rs = c.r.status;
    io->used = wire_reader_offset(&c.r);
    return st;
}

/*
 * The end of codec_request on a stream, after the walk (st, rs) from the
 * marks of io->out and the tally: AGAIN takes everything back; a walk
 * that stopped early (REJECT, SCAN) leaves the end of the message to be
 * found the plain way.
 */
static codec_status_t
codec_request_stream_end(struct codec_io *io, struct codec_call *call,
                         codec_status_t st, wire_status_t rs, size_t mark,
                         const struct codec_tally_mark *tm)
{
    const char *why = NULL;

    if (rs == WIRE_AGAIN) {
        /* rows of a message we will walk again */
        io->out->len = mark;
        codec_tally_rewind(io->tally, tm);
        io->used = 0;
        return CODEC_AGAIN;
    }
    if (st == CODEC_OK || st == CODEC_CLOSE) {
        codec_tally_bytes(io->tally, tm->nnotes, io->used);
        codec_tally_first(io->tally, tm->nnotes, call);
        return st;
    }
    if (st == CODEC_REJECT) {
        codec_tally_rewind(io->tally, tm);
    }
    switch (wire_message_scan(io->from, FALSE, io->data, io->len, io->limits,
                              &io->used, &why)) {
    case WIRE_OK: return st;
    case WIRE_AGAIN:
        io->out->len = mark;
        io->used = 0;
        return CODEC_AGAIN;
    default:
        io->out->len = mark;
        io->used = 0;
        io->err->app_type = WIRE_APP_PROTOCOL_ERROR;
        io->err->message = why != NULL ? why : "malformed message";
        return CODEC_CLOSE;
    }
}

codec_status_t
codec_request(struct codec_io *io, struct codec_call *call)
{
    struct codec_tally_mark tm;
    size_t mark;
    wire_status_t rs;
    codec_status_t st;

    g_assert(io->cfg != NULL && io->out != NULL && io->err != NULL);
    g_assert(call != NULL);
    mark = io->out->len;
    codec_tally_mark(io->tally, &tm);
    st = codec_request_walk(io, call, &rs);
    if (io->stream) {
        return codec_request_stream_end(io, call, st, rs, mark, &tm);
    }
    io->used = io->len;
    if (st == CODEC_REJECT) {
        codec_tally_rewind(io->tally, &tm);
    } else {
        codec_tally_bytes(io->tally, tm.nnotes, io->len);
    }
    codec_tally_first(io->tally, tm.nnotes, call);
    return st;
}

static codec_status_t
codec_reply_body(struct codec_ctx *c, struct codec_io *io,
                 const struct codec_call *call)
{
    struct codec_error *err = c->err;
    struct wire_buf *out = io->out;
    size_t mark = out->len;
    struct wire_msg m;
    gboolean ok;

    err->message = NULL;
    err->answer = CODEC_ANSWER_APP;
    err->app_type = WIRE_APP_INTERNAL_ERROR;
    if (wire_read_msg_begin(&c->r, &m) != WIRE_OK) {
        err->message = c->r.error != NULL ? c->r.error : "bad reply header";
        return CODEC_CLOSE;
    }
    if (m.type != WIRE_REPLY && m.type != WIRE_EXCEPTION) {
        err->message = "backend sent a message that is not a reply";
        return CODEC_CLOSE;
    }
    if (m.seqid != io->backend_seqid) {
        err->message = "backend reply has the wrong sequence id";
        return CODEC_CLOSE;
    }
    if (m.name_len != call->name_len ||
        memcmp(m.name, call->name, m.name_len) != 0) {
        err->message = "backend reply is for another method";
        return CODEC_CLOSE;
    }
    io->reply_type = m.type;
    io->reply_body = wire_reader_offset(&c->r);

    wire_writer_init(&c->w, io->to, out);
    wire_write_msg_begin(&c->w, m.name, m.name_len, m.type,
                         call->client_seqid);
    /* an unsalted table the key visualizer counts: walked for its rows,
     * which pass as they are */
    c->kv_salt = call->kv_salt;
    if (m.type == WIRE_REPLY &&
        (call->salt != NULL || call->kv_salt != NULL) &&
        call->method != NULL && call->method->result != NULL) {
        ok = codec_walk_struct(c, call->method->result, call->salt);
    } else {
        ok = wire_copy(&c->r, &c->w, WIRE_T_STRUCT) == WIRE_OK;
    }
    if (!ok) {
        out->len = mark;
        err->message = c->r.error != NULL ? c->r.error : "malformed reply";
        return CODEC_CLOSE;
    }
    return CODEC_OK;
}

codec_status_t
codec_reply(struct codec_io *io, const struct codec_call *call)
{
    size_t mark;
    struct codec_tally_mark tm;
    struct codec_ctx c;
    codec_status_t st;

    g_assert(io->out != NULL && io->err != NULL && call != NULL);
    mark = io->out->len;
    codec_tally_mark(io->tally, &tm);
    codec_ctx_init(&c, io, TRUE);
    c.stats_id = call->stats_id;
    st = codec_reply_body(&c, io, call);
    if (!io->stream) {
        io->used = io->len;
    } else if (c.r.status == WIRE_AGAIN) {
        /* rows of a reply we will walk again, as codec_request on a
         * stream */
        io->out->len = mark;
        codec_tally_rewind(io->tally, &tm);
        io->used = 0;
        return CODEC_AGAIN;
    } else if (st != CODEC_OK) {
        io->used = 0;
    } else {
        io->used = wire_reader_offset(&c.r);
    }
    codec_tally_bytes(io->tally, tm.nnotes, io->used);
    return st;
}

/* The reply struct's one field, then STOP. */
static void
codec_reply_begin(const struct codec_call *call, struct wire_writer *w)
{
    wire_write_msg_begin(w, (const uint8_t *)call->name, call->name_len,
                         WIRE_REPLY, call->client_seqid);
    wire_write_struct_begin(w);
}

/* A reply carrying a declared exception in result field fid, up to its
 * message: IOError and IllegalArgument both hold it in field 1. */
static void
codec_write_exception_begin(const struct codec_call *call,
                            struct wire_writer *w, int16_t fid,
                            const char *message)
{
    codec_reply_begin(call, w);
    wire_write_field(w, WIRE_T_STRUCT, fid);
    wire_write_struct_begin(w);
    wire_write_field(w, WIRE_T_STRING, 1);
    wire_write_binary(w, message, (uint32_t)strlen(message));
}

/* The reply carrying the method's IllegalArgument (field 2). */
static void
codec_write_ia(const struct codec_call *call, struct wire_writer *w,
               const char *message)
{
    codec_write_exception_begin(call, w, 2, message);
    wire_write_struct_end(w);
    wire_write_struct_end(w);
}

/* The reply carrying the method's IOError (field 1). */
static void
codec_write_io(const struct codec_call *call, struct wire_writer *w,
               const char *message, gboolean can_retry)
{
    codec_write_exception_begin(call, w, 1, message);
    wire_write_field(w, WIRE_T_BOOL, 2);
    wire_write_bool(w, can_retry);
    wire_write_struct_end(w);
    wire_write_struct_end(w);
}

void
codec_write_error(const struct codec_call *call, wire_proto_t to,
                  const struct codec_error *err, struct wire_buf *out)
{
    struct wire_writer w;

    wire_writer_init(&w, to, out);
    switch (err->answer) {
    case CODEC_ANSWER_EMPTY:
        /* list<TCell> or list<TRowResult>: structs either way */
        codec_reply_begin(call, &w);
        wire_write_field(&w, WIRE_T_LIST, 0);
        wire_write_list_begin(&w, WIRE_T_STRUCT, 0);
        wire_write_container_end(&w);
        wire_write_struct_end(&w);
        return;
    case CODEC_ANSWER_IA:
        if (call->method != NULL && call->method->declares_ia) {
            codec_write_ia(call, &w, err->message);
            return;
        }
        /* none declared: the method's IOError */
        G_GNUC_FALLTHROUGH;
    case CODEC_ANSWER_IO:
        if (call->method != NULL && call->method->declares_io) {
            codec_write_io(call, &w, err->message, err->can_retry != 0);
            return;
        }
        break;
    default: break;
    }
    wire_write_app_exception(&w, (const uint8_t *)call->name, call->name_len,
                             call->client_seqid, err->app_type, err->message);
}

void
codec_write_io_error(const struct codec_call *call, wire_proto_t to,
                     const char *message, gboolean can_retry,
                     struct wire_buf *out)
{
    struct wire_writer w;

    wire_writer_init(&w, to, out);
    if (call->method != NULL && call->method->declares_io) {
        codec_write_io(call, &w, message, can_retry);
        return;
    }
    wire_write_app_exception(&w, (const uint8_t *)call->name, call->name_len,
                             call->client_seqid, WIRE_APP_INTERNAL_ERROR,
                             message);
}

void
codec_write_i32_reply(const struct codec_call *call, wire_proto_t to,
                      int32_t value, struct wire_buf *out)
{
    struct wire_writer w;

    wire_writer_init(&w, to, out);
    codec_reply_begin(call, &w);
    wire_write_field(&w, WIRE_T_I32, 0);
    wire_write_i32(&w, value);
    wire_write_struct_end(&w);
}

void
codec_write_void_reply(const struct codec_call *call, wire_proto_t to,
                       struct wire_buf *out)
{
    struct wire_writer w;

    wire_writer_init(&w, to, out);
    codec_reply_begin(call, &w);
    wire_write_struct_end(&w);
}

void
codec_write_illegal_argument(const struct codec_call *call, wire_proto_t to,
                             const char *message, struct wire_buf *out)
{
    struct wire_writer w;

    wire_writer_init(&w, to, out);
    codec_write_ia(call, &w, message);
}

size_t
codec_rows_reply_begin(const struct codec_call *call, wire_proto_t to,
                       uint32_t max, struct wire_buf *out)
{
    struct wire_writer w;
    size_t at;

    wire_writer_init(&w, to, out);
    codec_reply_begin(call, &w);
    wire_write_field(&w, WIRE_T_LIST, 0);
    at = out->len;
    wire_write_list_begin(&w, WIRE_T_STRUCT, max);
    return at;
}

void
codec_rows_reply_end(wire_proto_t to, size_t list_at, uint32_t max,
                     uint32_t count, struct wire_buf *out)
{
    uint8_t hdr[WIRE_SEQ_HEADER_MAX], ahead[WIRE_SEQ_HEADER_MAX];
    size_t n = wire_seq_header(to, WIRE_T_STRUCT, count, hdr);
    size_t had = wire_seq_header(to, WIRE_T_STRUCT, max, ahead);
    struct wire_writer w;

    g_return_if_fail(count <= max && list_at + had <= out->len);
    if (n < had) {
        /* compact counts are varints: fewer rows than asked (the end of
         * a scan) can take a shorter header, and the rows move up */
        memmove(out->data + list_at + n, out->data + list_at + had,
                out->len - list_at - had);
        out->len -= had - n;
    }
    memcpy(out->data + list_at, hdr, n);
    /* the list has no end mark; the result struct's STOP follows it */
    wire_writer_init(&w, to, out);
    wire_write_struct_end(&w);
}

wire_status_t
codec_row_result(const struct hbase1_scanner *scanner, struct wire_reader *r,
                 struct wire_writer *w, const struct salt_table *salt,
                 unsigned stats_id, struct codec_tally *tally)
{
    /* a reply's walk never rejects: no need to clear text[] per row */
    struct codec_error err;
    struct codec_ctx c = {
        .err = &err, .reply = TRUE, .tally = tally, .stats_id = stats_id
    };
    c.r = *r;
    c.w = *w;
    codec_walk_struct(&c, scanner->row, salt);
    *r = c.r;
    *w = c.w;
    return r->status;
}
