/* scanargs.c: scanner calls read by role, and the scan sent each bucket. */
#include "scanargs.h"

#include <string.h>

#include "merge.h"
#include "salt.h"
#include "scanfilter.h"

/*
 * Java keeps the last of a field sent twice, as the parser does; but the
 * codec has routed the call by then, and a client that sends its bounds
 * or filter twice cannot mean both.  Salted scans refuse such a call, as
 * the codec refuses other calls: the fields that route it carry the
 * text to refuse it with, and *seen has a bit per schema field met.
 */
static void
scanargs_note(struct scanargs *a, uint32_t *seen,
              const struct hbase1_schema *s, const struct hbase1_field *f)
{
    uint32_t bit = 1u << (f - s->fields);

    if ((*seen & bit) != 0 && a->repeated == NULL) {
        a->repeated = f->repeated;
    }
    *seen |= bit;
}

/* The roles passed on as the client sent them, and where each is kept;
 * the engine reads or rewrites the others. */
static const struct {
    uint8_t role;
    glong offset; /* of its struct scanargs_passed */
} scanargs_passed_roles[] = {
    { HBASE1_ROLE_COLUMNS, G_STRUCT_OFFSET(struct scanargs, columns) },
    { HBASE1_ROLE_TIMESTAMP, G_STRUCT_OFFSET(struct scanargs, timestamp) },
    { HBASE1_ROLE_BATCH, G_STRUCT_OFFSET(struct scanargs, batch) },
    { HBASE1_ROLE_SORTED, G_STRUCT_OFFSET(struct scanargs, sorted) },
    { HBASE1_ROLE_CACHE_BLOCKS,
      G_STRUCT_OFFSET(struct scanargs, cache_blocks) },
    { HBASE1_ROLE_ATTRIBUTES, G_STRUCT_OFFSET(struct scanargs, attributes) },
};

/* Offset in struct scanargs of a passed-on role; -1: not one. */
static glong
scanargs_passed_offset(uint8_t role)
{
    for (size_t i = 0; i < G_N_ELEMENTS(scanargs_passed_roles); i++) {
        if (scanargs_passed_roles[i].role == role) {
            return scanargs_passed_roles[i].offset;
        }
    }
    return -1;
}

/* Writes field f from what the client sent for its role, if it did. */
static void
scanargs_pass_on(const struct scanargs *a, const struct hbase1_field *f,
                 struct wire_writer *wr)
{
    glong off = scanargs_passed_offset(f->role);
    const struct scanargs_passed *p;
    struct wire_reader copy;

    if (off < 0) {
        return;
    }
    p = G_STRUCT_MEMBER_P(a, off);
    if (p->set) {
        copy = p->at;
        wire_write_field(wr, f->type, f->fid);
        wire_copy(&copy, wr, f->type);
    }
}

static gboolean
scanargs_struct(struct scanargs *a, const struct hbase1_schema *s,
                struct wire_reader *r)
{
    uint32_t seen = 0;
    uint8_t type;
    int16_t fid;

    if (wire_read_struct_begin(r) != WIRE_OK) {
        return FALSE;
    }
    for (;;) {
        const struct hbase1_field *f;
        glong off;

        if (wire_read_field(r, &type, &fid) != WIRE_OK) {
            return FALSE;
        }
        if (type == WIRE_T_STOP) {
            break;
        }
        f = hbase1_schema_field(s, fid);
        if (f == NULL || f->type != type) {
            wire_skip(r, type);
            continue;
        }
        if (f->repeated != NULL) {
            scanargs_note(a, &seen, s, f);
        }
        if ((off = scanargs_passed_offset(f->role)) >= 0) {
            struct scanargs_passed *p = G_STRUCT_MEMBER_P(a, off);

            p->at = *r;
            p->set = TRUE;
            wire_skip(r, type);
            continue;
        }
        switch (f->role) {
        case HBASE1_ROLE_TABLE:
            wire_read_binary(r, &a->table, &a->table_len);
            break;
        case HBASE1_ROLE_START:
        case HBASE1_ROLE_PREFIX:
            wire_read_binary(r, &a->start, &a->start_len);
            break;
        case HBASE1_ROLE_STOP:
            wire_read_binary(r, &a->stop, &a->stop_len);
            a->has_stop = TRUE;
            break;
        case HBASE1_ROLE_SCAN:
            /* a second scan struct replaces fields of the first one */
            if (a->nscans < SCANARGS_MAX_SCANS) {
                a->scans[a->nscans++] = *r;
            }
            if (!scanargs_struct(a, f->sub, r)) {
                return FALSE;
            }
            break;
        case HBASE1_ROLE_CACHING:
            a->caching = wire_read_i32(r);
            a->has_caching = TRUE;
            break;
        case HBASE1_ROLE_FILTER:
            wire_read_binary(r, &a->filter, &a->filter_len);
            a->has_filter = TRUE;
            break;
        case HBASE1_ROLE_REVERSED: a->reversed = wire_read_bool(r); break;
        case HBASE1_ROLE_LIMIT:
            a->limit = wire_read_i32(r);
            a->has_limit = TRUE;
            break;
        case HBASE1_ROLE_FILTER_BYTES:
            wire_read_binary(r, &a->filter_bytes, &a->filter_bytes_len);
            a->has_filter_bytes = TRUE;
            break;
        case HBASE1_ROLE_ID:
            a->id = wire_read_i32(r);
            a->has_id = TRUE;
            break;
        case HBASE1_ROLE_NROWS: a->nrows = wire_read_i32(r); break;
        default: wire_skip(r, type); break;
        }
    }
    wire_read_struct_end(r);
    return r->status == WIRE_OK;
}

gboolean
scanargs_parse(struct scanargs *a, const struct hbase1_method *m,
               struct wire_reader *r)
{
    memset(a, 0, sizeof(*a));
    a->nrows = 1;
    /* the method decides, whether or not the client sent the prefix */
    a->prefix = hbase1_schema_role(m->scan_args, HBASE1_ROLE_PREFIX) != NULL;
    return scanargs_struct(a, m->scan_args, r);
}

/*
 * A salted table holds no logical key longer than limit (salt_max_row):
 * a bound longer than that is no stored key, and with the prefix in front
 * HBase would refuse it.  Such a bound becomes one of at most limit bytes
 * that selects the same stored keys.  With t the bound cut to limit bytes,
 * for every key k of at most limit bytes:
 *   k >= bound  <=>  k > t   <=>  k >= successor(t)
 *   k <  bound  <=>  k <= t  <=>  k <  successor(t)
 * so forward bounds become successor(t) (none: nothing follows, or no
 * stop), reversed ones (start the high inclusive row, stop the low
 * exclusive one) t itself.  A prefix longer than limit prefixes no stored
 * key.  Long bounds only are copied, never on an ordinary scan.
 */
gboolean
scanargs_fit_bounds(struct scanargs *a, size_t limit, uint8_t **start_buf,
                    uint8_t **stop_buf)
{
    gboolean moved = FALSE;

    if (a->prefix) {
        return a->start_len <= limit;
    }
    if (a->start_len > limit) {
        *start_buf = g_memdup2(a->start, limit);
        a->start = *start_buf;
        a->start_len = a->reversed
                           ? (uint32_t)limit
                           : (uint32_t)salt_successor(*start_buf, limit);
        if (a->start_len == 0) {
            return FALSE;
        }
        moved = TRUE;
    }
    if (a->has_stop && a->stop_len > limit) {
        *stop_buf = g_memdup2(a->stop, limit);
        a->stop = *stop_buf;
        a->stop_len = a->reversed ? (uint32_t)limit
                                  : (uint32_t)salt_successor(*stop_buf, limit);
        a->has_stop = a->stop_len > 0;
        moved = TRUE;
    }
    if (moved && a->has_stop && a->stop_len > 0 && a->start_len > 0) {
        /* empty now, and start == stop would read as HBase's one-row
         * "get scan" */
        int c = merge_key_cmp(a->start, a->start_len, a->stop, a->stop_len);

        return a->reversed ? c > 0 : c < 0;
    }
    return TRUE;
}

/* Whether the engine writes field f of a scan struct itself (a bound,
 * caching, the filter, reversed: per bucket; or a role it passes on from
 * where the client sent it). */
static gboolean
scanargs_written(const struct hbase1_field *f)
{
    switch (f->role) {
    case HBASE1_ROLE_START:
    case HBASE1_ROLE_PREFIX:
    case HBASE1_ROLE_STOP:
    case HBASE1_ROLE_CACHING:
    case HBASE1_ROLE_FILTER:
    case HBASE1_ROLE_FILTER_BYTES:
    case HBASE1_ROLE_REVERSED: return TRUE;
    default: return scanargs_passed_offset(f->role) >= 0;
    }
}

/* Copies every field of the client's scan structs that the engine does
 * not write: fields without a role (Thrift2's maxVersions, timeRange,
 * ...), limit, and any the schema does not list. */
static void
scanargs_copy_rest(const struct scanargs *a, const struct hbase1_schema *s,
                   struct wire_writer *wr)
{
    for (unsigned i = 0; i < a->nscans; i++) {
        struct wire_reader r = a->scans[i];
        uint8_t type;
        int16_t fid;

        if (wire_read_struct_begin(&r) != WIRE_OK) {
            continue;
        }
        while (wire_read_field(&r, &type, &fid) == WIRE_OK &&
               type != WIRE_T_STOP) {
            const struct hbase1_field *f = hbase1_schema_field(s, fid);

            if (f != NULL && f->type == type &&
                (scanargs_written(f) ||
                 (a->drop_limit && f->role == HBASE1_ROLE_LIMIT))) {
                wire_skip(&r, type);
                continue;
            }
            wire_write_field(wr, type, fid);
            if (wire_copy(&r, wr, type) != WIRE_OK) {
                break;
            }
        }
    }
}

/* A bound or the filter of the legacy range's scan. */
static void
scanargs_write_legacy(const struct scanargs *a, const struct hbase1_field *f,
                      const struct scanargs_bucket *b, struct wire_writer *wr)
{
    const uint8_t *ftext;
    size_t flen;

    switch (f->role) {
    case HBASE1_ROLE_START:
        wire_write_field(wr, f->type, f->fid);
        wire_write_binary(wr, b->legacy_start, (uint32_t)b->legacy_start_len);
        break;
    case HBASE1_ROLE_STOP:
        if (b->legacy_stop_len > 0) {
            wire_write_field(wr, f->type, f->fid);
            wire_write_binary(wr, b->legacy_stop,
                              (uint32_t)b->legacy_stop_len);
        }
        break;
    default:
        /* the filter the scan has, string or protobuf, at its own field */
        if (f->role == HBASE1_ROLE_FILTER_BYTES ? a->has_filter_bytes
                                                : a->has_filter) {
            ftext = scanfilter_for_legacy(b->filter, &flen);
            wire_write_field(wr, f->type, f->fid);
            wire_write_binary(wr, ftext, (uint32_t)flen);
        }
        break;
    }
}

/* The scan struct s for one bucket, its fields in the schema's order. */
static void
scanargs_write_scan(const struct scanargs *a, const struct hbase1_schema *s,
                    const struct scanargs_bucket *b, struct wire_writer *wr)
{
    size_t cap = salt_prefix_len(b->salt) + MAX(a->start_len, a->stop_len) + 1;
    g_autofree uint8_t *key = g_malloc(cap);
    size_t n, flen;
    const uint8_t *ftext;

    wire_write_struct_begin(wr);
    for (uint8_t i = 0; i < s->nfields; i++) {
        const struct hbase1_field *f = &s->fields[i];

        if (b->legacy &&
            (f->role == HBASE1_ROLE_START || f->role == HBASE1_ROLE_STOP ||
             f->role == HBASE1_ROLE_FILTER ||
             f->role == HBASE1_ROLE_FILTER_BYTES)) {
            scanargs_write_legacy(a, f, b, wr);
            continue;
        }
        switch (f->role) {
        case HBASE1_ROLE_START:
            n = salt_scan_start(b->salt, b->bucket, a->reversed, a->start,
                                a->start_len, key);
            wire_write_field(wr, f->type, f->fid);
            wire_write_binary(wr, key, (uint32_t)n);
            break;
        case HBASE1_ROLE_STOP:
            if (a->prefix) {
                /* rows with the prefix: stop at its successor, or the
                 * bucket's end */
                g_autofree uint8_t *succ = g_memdup2(a->start, a->start_len);
                size_t slen = salt_successor(succ, a->start_len);

                n = salt_scan_stop(b->salt, b->bucket, FALSE, succ, slen, key);
            } else {
                n = salt_scan_stop(b->salt, b->bucket, a->reversed, a->stop,
                                   a->has_stop ? a->stop_len : 0, key);
            }
            if (n > 0) {
                wire_write_field(wr, f->type, f->fid);
                wire_write_binary(wr, key, (uint32_t)n);
            }
            break;
        case HBASE1_ROLE_CACHING:
            wire_write_field(wr, f->type, f->fid);
            wire_write_i32(wr, (int32_t)b->caching);
            break;
        case HBASE1_ROLE_FILTER:
        case HBASE1_ROLE_FILTER_BYTES:
            /* the scan's one filter (string or protobuf) at its field */
            if (f->role == HBASE1_ROLE_FILTER_BYTES ? a->has_filter_bytes
                                                    : a->has_filter) {
                ftext = scanfilter_for_bucket(b->filter, b->bucket, &flen);
                wire_write_field(wr, f->type, f->fid);
                wire_write_binary(wr, ftext, (uint32_t)flen);
            }
            break;
        case HBASE1_ROLE_REVERSED:
            if (a->reversed) {
                wire_write_field(wr, f->type, f->fid);
                wire_write_bool(wr, TRUE);
            }
            break;
        default: scanargs_pass_on(a, f, wr); break;
        }
    }
    scanargs_copy_rest(a, s, wr);
    wire_write_struct_end(wr);
}

void
scanargs_write_open(const struct scanargs *a, const struct hbase1_scanner *sc,
                    const struct scanargs_bucket *b, struct wire_writer *wr)
{
    const struct hbase1_schema *s = sc->open->scan_args;

    wire_write_struct_begin(wr);
    for (uint8_t i = 0; i < s->nfields; i++) {
        const struct hbase1_field *f = &s->fields[i];

        switch (f->role) {
        case HBASE1_ROLE_TABLE:
            wire_write_field(wr, f->type, f->fid);
            wire_write_binary(wr, a->table, a->table_len);
            break;
        case HBASE1_ROLE_SCAN:
            wire_write_field(wr, f->type, f->fid);
            scanargs_write_scan(a, f->sub, b, wr);
            break;
        default: scanargs_pass_on(a, f, wr); break;
        }
    }
    wire_write_struct_end(wr);
}

/* The scan struct at r (schema s) again, its start row replaced. */
static gboolean
scanargs_rewrite_scan(const struct hbase1_schema *s, struct wire_reader *r,
                      const uint8_t *start, uint32_t start_len,
                      struct wire_writer *wr, const uint8_t **stop,
                      uint32_t *stop_len)
{
    gboolean started = FALSE;
    uint8_t type;
    int16_t fid;

    if (wire_read_struct_begin(r) != WIRE_OK) {
        return FALSE;
    }
    wire_write_struct_begin(wr);
    while (wire_read_field(r, &type, &fid) == WIRE_OK && type != WIRE_T_STOP) {
        const struct hbase1_field *f = hbase1_schema_field(s, fid);
        uint8_t role = f != NULL && f->type == type ? f->role : 0;

        wire_write_field(wr, type, fid);
        if (role == HBASE1_ROLE_START) {
            wire_skip(r, type);
            wire_write_binary(wr, start, start_len);
            started = TRUE;
        } else if (role == HBASE1_ROLE_STOP) {
            wire_read_binary(r, stop, stop_len);
            wire_write_binary(wr, *stop, *stop_len);
        } else if (wire_copy(r, wr, type) != WIRE_OK) {
            return FALSE;
        }
    }
    wire_read_struct_end(r);
    /* scanargs_write_scan writes a start for every bucket */
    wire_write_struct_end(wr);
    return r->status == WIRE_OK && started;
}

gboolean
scanargs_rewrite_start(const struct hbase1_scanner *sc, wire_proto_t proto,
                       const struct wire_limits *limits, const uint8_t *args,
                       size_t len, const uint8_t *start, uint32_t start_len,
                       struct wire_writer *wr, const uint8_t **stop,
                       uint32_t *stop_len)
{
    const struct hbase1_schema *s = sc->open->scan_args;
    struct wire_reader r;
    gboolean scanned = FALSE;
    uint8_t type;
    int16_t fid;

    *stop = NULL;
    *stop_len = 0;
    wire_reader_init(&r, proto, args, len, TRUE, limits);
    if (wire_read_struct_begin(&r) != WIRE_OK) {
        return FALSE;
    }
    wire_write_struct_begin(wr);
    while (wire_read_field(&r, &type, &fid) == WIRE_OK &&
           type != WIRE_T_STOP) {
        const struct hbase1_field *f = hbase1_schema_field(s, fid);

        wire_write_field(wr, type, fid);
        if (f != NULL && f->type == type && f->role == HBASE1_ROLE_SCAN) {
            if (!scanargs_rewrite_scan(f->sub, &r, start, start_len, wr, stop,
                                       stop_len)) {
                return FALSE;
            }
            scanned = TRUE;
        } else if (wire_copy(&r, wr, type) != WIRE_OK) {
            return FALSE;
        }
    }
    wire_read_struct_end(&r);
    wire_write_struct_end(wr);
    return r.status == WIRE_OK && scanned;
}

void
scanargs_write_id(const struct hbase1_method *m, int32_t id, int32_t nrows,
                  struct wire_writer *wr)
{
    const struct hbase1_schema *s = m->scan_args;

    wire_write_struct_begin(wr);
    for (uint8_t i = 0; i < s->nfields; i++) {
        const struct hbase1_field *f = &s->fields[i];

        if (f->role == HBASE1_ROLE_ID) {
            wire_write_field(wr, f->type, f->fid);
            wire_write_i32(wr, id);
        } else if (f->role == HBASE1_ROLE_NROWS) {
            /* a client's negative count too: HBase's answer to it is
             * the client's (an unchecked exception) */
            wire_write_field(wr, f->type, f->fid);
            wire_write_i32(wr, nrows);
        }
    }
    wire_write_struct_end(wr);
}
