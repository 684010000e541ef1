/* emu_handler2.c: the Thrift2 THBaseService implemented over the emulator's store. */
#include "emu_handler2.h"

#include <string.h>

#include "emu_admin2.h"
#include "emu_result.h"
#include "emu_result2.h"
#include "emu_scanner.h"
#include "filterpb.h"

/*
 * Each method follows HBase 2.x's thrift2 ThriftHBaseServiceHandler and
 * ThriftUtilities: an IOException from the client library becomes
 * TIOError(message, canRetry = not a DoNotRetryIOException), anything
 * else (IllegalArgumentException from a Get/Put constructor, a
 * NullPointerException) escapes as libthrift's TApplicationException
 * INTERNAL_ERROR "Internal error processing <method>".
 */

#define EMU_APP_INTERNAL_ERROR 6
#define EMU_MAX_ROW 32767 /* HConstants.MAX_ROW_LENGTH */

struct _EmuHandler2 {
    Hbase2THBaseServiceHandler parent;
    emu_store *store;
    struct emu_handler_options opts;
};

G_DEFINE_TYPE(EmuHandler2, emu_handler2, HBASE2_TYPE_T_H_BASE_SERVICE_HANDLER)

static GQuark emu_handler2_error_quark(void);
G_DEFINE_QUARK(emu_handler2_error_quark, emu_handler2_error)

#define EMU_DATA(b) ((const uint8_t *)((b) != NULL ? (b)->data : NULL))
#define EMU_LEN(b) ((size_t)((b) != NULL ? (b)->len : 0))

/* ---- errors ---- */

gboolean emu_handler2_internal(GError **error, const char *method)
{
    g_set_error(error, emu_handler2_error_quark(), EMU_APP_INTERNAL_ERROR,
                "Internal error processing %s", method);
    return FALSE;
}

/*
 * TIOError's message is the exception's getMessage().  An exception the
 * master or a region server threw comes back as a RemoteException whose
 * message starts with the class name; the client's own
 * TableNotFoundException (region lookup, Admin's existence checks) and
 * TableNotEnabledException carry the bare table name.  Of the admin calls
 * only these reach the master with a missing or wrongly-stated table.
 */
static const char *emu_handler2_message(const char *msg, const char *method)
{
    static const char *const local[] = {
        "org.apache.hadoop.hbase.TableNotFoundException: ",
        "org.apache.hadoop.hbase.TableNotEnabledException: ",
        "org.apache.hadoop.hbase.client.RetriesExhaustedWithDetailsException: ",
    };
    static const char *const master[] = {
        "disableTable",    "deleteTable",        "truncateTable",
        "addColumnFamily", "deleteColumnFamily", "modifyColumnFamily",
        "modifyTable",
    };

    for (guint i = 0; i < G_N_ELEMENTS(master); i++) {
        if (strcmp(method, master[i]) == 0) {
            return msg;
        }
    }
    for (guint i = 0; i < G_N_ELEMENTS(local); i++) {
        if (g_str_has_prefix(msg, local[i])) {
            return msg + strlen(local[i]);
        }
    }
    return msg;
}

gboolean emu_handler2_fail(GError *err, const char *method,
                           Hbase2TIOError **io, GError **error)
{
    g_autoptr(GError) e = err;

    if (e == NULL || e->code == EMU_STORE_ERROR_INTERNAL ||
        (e->code == EMU_STORE_ERROR_ILLEGAL &&
         g_str_has_prefix(e->message, "java.lang.IllegalArgumentException"))) {
        return emu_handler2_internal(error, method);
    }
    *io = g_object_new(HBASE2_TYPE_T_I_O_ERROR, "message",
                       emu_handler2_message(e->message, method), "canRetry",
                       e->code == EMU_STORE_ERROR_IO, NULL);
    return FALSE;
}

static GError *emu_handler2_err(int code, const char *msg)
{
    return g_error_new_literal(EMU_STORE_ERROR, code, msg);
}

/* new Get/Put/Delete(row): an unchecked IllegalArgumentException. */
static GError *emu_handler2_check_row(const GByteArray *row)
{
    if (EMU_LEN(row) == 0) {
        return emu_handler2_err(EMU_STORE_ERROR_INTERNAL,
                                "java.lang.IllegalArgumentException: Row "
                                "length is 0");
    }
    if (EMU_LEN(row) > EMU_MAX_ROW) {
        return g_error_new(EMU_STORE_ERROR, EMU_STORE_ERROR_INTERNAL,
                           "java.lang.IllegalArgumentException: Row length "
                           "%u is > %d",
                           row->len, EMU_MAX_ROW);
    }
    return NULL;
}

/*
 * filterBytes as ThriftUtilities.filterFromThrift reads them: a
 * FilterProtos.Filter whose parse errors are IOExceptions (TIOError,
 * retryable), then ProtobufUtil.toFilter's DoNotRetryIOException around
 * ClassNotFoundException or the InvocationTargetException of a parseFrom
 * that failed.  On success *text is the same filter in the filter
 * language (g_free), compiled once here to catch what the class's
 * constructor would refuse (a regex that does not compile).  What has no
 * filter-language form the emulator cannot evaluate: it says so.
 */
static GError *emu_handler2_filter_bytes(const GByteArray *pb,
                                         gboolean reversed, uint8_t **text,
                                         size_t *len)
{
    g_autoptr(GError) ferr = NULL;
    g_autoptr(filter_node) tree = NULL;
    emu_filter *f;

    *text = NULL;
    *len = 0;
    tree = filterpb_to_filter(EMU_DATA(pb), EMU_LEN(pb), &ferr);
    if (tree == NULL) {
        switch (ferr->code) {
        case FILTERPB_ERROR_MALFORMED:
            return emu_handler2_err(EMU_STORE_ERROR_IO, ferr->message);
        case FILTERPB_ERROR_UNKNOWN_CLASS:
            return emu_handler2_err(EMU_STORE_ERROR_IO_NORETRY, ferr->message);
        case FILTERPB_ERROR_INVALID:
            return emu_handler2_err(EMU_STORE_ERROR_IO_NORETRY,
                                    "java.lang.reflect."
                                    "InvocationTargetException");
        default:
            return g_error_new(EMU_STORE_ERROR, EMU_STORE_ERROR_IO_NORETRY,
                               "emulator: filterBytes not supported: %s",
                               ferr->message);
        }
    }
    *text = filter_serialize(tree, len, &ferr);
    if (*text == NULL) {
        return g_error_new(EMU_STORE_ERROR, EMU_STORE_ERROR_IO_NORETRY,
                           "emulator: filterBytes not supported: %s",
                           ferr->message);
    }
    f = emu_filter_compile(*text, *len, reversed, NULL);
    if (f == NULL) {
        g_clear_pointer(text, g_free);
        return emu_handler2_err(EMU_STORE_ERROR_IO_NORETRY,
                                "java.lang.reflect.InvocationTargetException");
    }
    emu_filter_free(f);
    return NULL;
}

/* new TimeRange(min, max): negative or inverted bounds are refused. */
static GError *emu_handler2_check_range(int64_t min, int64_t max)
{
    if (min < 0 || max < 0 || max < min) {
        return g_error_new(EMU_STORE_ERROR, EMU_STORE_ERROR_INTERNAL,
                           "java.lang.IllegalArgumentException: invalid time "
                           "range [%" G_GINT64_FORMAT ", %" G_GINT64_FORMAT
                           ")",
                           min, max);
    }
    return NULL;
}

GByteArray *emu_handler2_bytes(const void *p, size_t len)
{
    GByteArray *b = g_byte_array_sized_new((guint)len);

    if (len > 0) {
        g_byte_array_append(b, p, (guint)len);
    }
    return b;
}

GByteArray *emu_handler2_table_name(const Hbase2TTableName *tn)
{
    GByteArray *b = g_byte_array_new();

    if (tn == NULL) {
        return b;
    }
    if (tn->__isset_ns && EMU_LEN(tn->ns) > 0) {
        g_byte_array_append(b, tn->ns->data, tn->ns->len);
        g_byte_array_append(b, (const guint8 *)":", 1);
    }
    if (tn->qualifier != NULL) {
        g_byte_array_append(b, tn->qualifier->data, tn->qualifier->len);
    }
    return b;
}

/* ---- reads ---- */

/* Get.addFamily/addColumn for each TColumn, in order; NULL: all. */
static gboolean emu_handler2_colspec(emu_table *t, const GPtrArray *tcols,
                                     emu_colspec **out, GError **error)
{
    g_autoptr(emu_colspec) spec = NULL;
    g_autoptr(GPtrArray) cols = NULL;

    *out = NULL;
    if (tcols == NULL || tcols->len == 0) {
        return TRUE;
    }
    spec = emu_colspec_new(t);
    cols = g_ptr_array_new_with_free_func((GDestroyNotify)g_byte_array_unref);
    for (guint i = 0; i < tcols->len; i++) {
        const Hbase2TColumn *c = g_ptr_array_index(tcols, i);
        GByteArray *col = emu_handler2_bytes(EMU_DATA(c->family),
                                             EMU_LEN(c->family));

        /* The family cannot hold ':', so the first one splits them. */
        if (c->__isset_qualifier) {
            g_byte_array_append(col, (const guint8 *)":", 1);
            if (EMU_LEN(c->qualifier) > 0) {
                g_byte_array_append(col, c->qualifier->data,
                                    c->qualifier->len);
            }
        }
        g_ptr_array_add(cols, col);
    }
    if (!emu_colspec_add_all(spec, t, cols, error)) {
        return FALSE;
    }
    *out = g_steal_pointer(&spec);
    return TRUE;
}

/* A TGet made ready to read: getFromThrift's checks done. */
struct emu_get2 {
    const Hbase2TGet *tget;
    emu_colspec *cols;
    emu_filter *filter;
    struct emu_read rd;
};

static void emu_handler2_get_clear(struct emu_get2 *g)
{
    emu_colspec_free(g->cols);
    if (g->filter != NULL) {
        emu_filter_free(g->filter);
    }
    memset(g, 0, sizeof(*g));
}

static gboolean emu_handler2_get_prepare(emu_table *t, const Hbase2TGet *tg,
                                         struct emu_get2 *g, GError **error)
{
    GError *err = emu_handler2_check_row(tg->row);

    memset(g, 0, sizeof(*g));
    g->tget = tg;
    g->rd.max_ts = EMU_LATEST_TS;
    g->rd.max_versions = 1;
    if (err != NULL) {
        g_propagate_error(error, err);
        return FALSE;
    }
    /* The timestamp wins over the time range (getFromThrift). */
    if (tg->__isset_timestamp) {
        err = emu_handler2_check_range(
            tg->timestamp, tg->timestamp == EMU_LATEST_TS ? tg->timestamp
                                                          : tg->timestamp + 1);
        g->rd.min_ts = tg->timestamp;
        g->rd.max_ts = tg->timestamp == EMU_LATEST_TS ? EMU_LATEST_TS
                                                      : tg->timestamp + 1;
    } else if (tg->__isset_timeRange && tg->timeRange != NULL) {
        err = emu_handler2_check_range(tg->timeRange->minStamp,
                                       tg->timeRange->maxStamp);
        g->rd.min_ts = tg->timeRange->minStamp;
        g->rd.max_ts = tg->timeRange->maxStamp;
    }
    if (err == NULL && tg->__isset_maxVersions) {
        if (tg->maxVersions <= 0) {
            err = emu_handler2_err(EMU_STORE_ERROR_IO,
                                   "java.io.IOException: versions must be "
                                   "positive");
        }
        g->rd.max_versions = tg->maxVersions;
    }
    if (err != NULL) {
        g_propagate_error(error, err);
        return FALSE;
    }
    if (tg->__isset_storeLimit) {
        g->rd.has_store_limit = TRUE;
        g->rd.store_limit = tg->storeLimit;
    }
    if (tg->__isset_storeOffset) {
        g->rd.store_offset = MAX(tg->storeOffset, 0);
    }
    if (tg->__isset_filterString && tg->filterString != NULL) {
        g_autoptr(GError) ferr = NULL;

        g->filter = emu_filter_compile(EMU_DATA(tg->filterString),
                                       EMU_LEN(tg->filterString), FALSE,
                                       &ferr);
        if (g->filter == NULL) {
            /* ParseFilter's IllegalArgumentException is unchecked. */
            g_set_error(error, EMU_STORE_ERROR, EMU_STORE_ERROR_INTERNAL, "%s",
                        ferr ? ferr->message : "invalid filter");
            return FALSE;
        }
    }
    if (t == NULL) {
        return TRUE; /* getFromThrift's own checks only */
    }
    if (!emu_handler2_colspec(t, tg->__isset_columns ? tg->columns : NULL,
                              &g->cols, error)) {
        return FALSE;
    }
    g->rd.cols = g->cols;
    /* getFromThrift sets filterBytes last: it replaces filterString */
    if (tg->__isset_filterBytes && tg->filterBytes != NULL) {
        g_autofree uint8_t *text = NULL;
        size_t len;

        err = emu_handler2_filter_bytes(tg->filterBytes, FALSE, &text, &len);
        if (err != NULL) {
            g_propagate_error(error, err);
            return FALSE;
        }
        if (g->filter != NULL) {
            emu_filter_free(g->filter);
        }
        g->filter = emu_filter_compile(text, len, FALSE, error);
        if (g->filter == NULL) {
            return FALSE;
        }
    }
    return TRUE;
}

/* The cells the Get returns, filter applied; table read lock held and
 * the cells valid while it is. */
static void emu_handler2_get_cells(emu_table *t, struct emu_get2 *g,
                                   GArray *cells)
{
    const GByteArray *row = g->tget->row;
    emu_row *r = emu_table_row_find(t, EMU_DATA(row), EMU_LEN(row));

    g_array_set_size(cells, 0);
    if (r == NULL) {
        return;
    }
    emu_row_cells(t, r, &g->rd, cells);
    if (g->filter != NULL && cells->len > 0 &&
        emu_filter_row_cells(g->filter, row->data, row->len, cells) !=
            EMU_FILTER_INCLUDE) {
        g_array_set_size(cells, 0);
    }
    if (cells->len > 0) {
        __atomic_fetch_add(
            &emu_table_region(t, emu_table_region_of(t, row->data, row->len))
                 ->rows_read,
            1, __ATOMIC_RELAXED);
    }
}

/* How a batch of Gets answers: a TResult or an existence flag each. */
typedef void (*emu_get2_emit_fn)(gpointer out, const struct emu_get2 *g,
                                 const GArray *cells);

/* Into the TResult the processor made for get's answer. */
static void emu_handler2_emit_into(gpointer out, const struct emu_get2 *g,
                                   const GArray *cells)
{
    emu_result2_fill(out, EMU_DATA(g->tget->row), EMU_LEN(g->tget->row),
                     (const struct emu_cell *)(void *)cells->data, cells->len,
                     FALSE);
}

static void emu_handler2_emit_result(gpointer out, const struct emu_get2 *g,
                                     const GArray *cells)
{
    Hbase2TResult *r = g_object_new(HBASE2_TYPE_T_RESULT, NULL);

    emu_handler2_emit_into(r, g, cells);
    g_ptr_array_add(out, r);
}

static void emu_handler2_emit_exists(gpointer out, const struct emu_get2 *g,
                                     const GArray *cells)
{
    gboolean e = cells->len > 0;

    g_array_append_val((GArray *)out, e);
}

/*
 * Runs a list of Gets (getsFromThrift first, so a bad one fails the whole
 * call before anything is read) and emits one answer per Get, in order.
 * existence_only on get/getMultiple: HBase's Result then has no cell
 * array and resultFromHBase dereferences it (NullPointerException).
 */
static gboolean emu_handler2_gets(EmuHandler2 *self, const GByteArray *table,
                                  const GPtrArray *tgets, gboolean results,
                                  emu_get2_emit_fn emit, gpointer out,
                                  const char *method, Hbase2TIOError **io,
                                  GError **error)
{
    GError *err = NULL;
    g_autoptr(emu_table) t = NULL;
    guint n = tgets != NULL ? tgets->len : 0;
    g_autofree struct emu_get2 *gs = g_new0(struct emu_get2, n + 1);
    g_autofree const uint8_t **keys = g_new(const uint8_t *, n + 1);
    g_autofree size_t *lens = g_new(size_t, n + 1);
    g_autoptr(GArray) cells = g_array_new(FALSE, FALSE,
                                          sizeof(struct emu_cell));
    gboolean existence_only = FALSE;
    struct emu_guard g;
    guint ready = 0;

    /* getsFromThrift builds every Get (row, time range, versions, filter)
     * before the table is asked for anything */
    for (guint i = 0; err == NULL && i < n; i++) {
        struct emu_get2 pre;

        emu_handler2_get_prepare(NULL, g_ptr_array_index(tgets, i), &pre,
                                 &err);
        emu_handler2_get_clear(&pre);
    }
    if (err == NULL) {
        t = emu_store_table_ref(self->store, EMU_DATA(table), EMU_LEN(table),
                                TRUE, &err);
    }
    if (t == NULL && (strcmp(method, "getMultiple") == 0 ||
                      strcmp(method, "existsAll") == 0)) {
        err = emu_store_batch_error(err, n); /* table.get(List<Get>) */
    }
    if (t == NULL) {
        return emu_handler2_fail(err, method, io, error);
    }
    for (; ready < n; ready++) {
        const Hbase2TGet *tg = g_ptr_array_index(tgets, ready);

        if (!emu_handler2_get_prepare(t, tg, &gs[ready], &err)) {
            break;
        }
        keys[ready] = EMU_DATA(tg->row);
        lens[ready] = EMU_LEN(tg->row);
        existence_only |= tg->__isset_existence_only && tg->existence_only;
    }
    if (ready == n) {
        emu_guard_enter(&g, &self->opts, t, keys, lens, n);
        emu_table_read_lock(t);
        for (guint i = 0; i < n; i++) {
            emu_handler2_get_cells(t, &gs[i], cells);
            emit(out, &gs[i], cells);
        }
        emu_table_read_unlock(t);
        emu_guard_leave(&g);
    }
    for (guint i = 0; i < n; i++) {
        emu_handler2_get_clear(&gs[i]);
    }
    if (ready < n) {
        return emu_handler2_fail(err, method, io, error);
    }
    if (results && existence_only) {
        return emu_handler2_internal(error, method);
    }
    return TRUE;
}

/* A single Get through the batch path. */
static gboolean emu_handler2_get1(EmuHandler2 *self, const GByteArray *table,
                                  const Hbase2TGet *tget, gboolean results,
                                  emu_get2_emit_fn emit, gpointer out,
                                  const char *method, Hbase2TIOError **io,
                                  GError **error)
{
    g_autoptr(GPtrArray) one = g_ptr_array_new();

    g_ptr_array_add(one, (gpointer)tget);
    return emu_handler2_gets(self, table, one, results, emit, out, method, io,
                             error);
}

static gboolean emu_handler2_exists(Hbase2THBaseServiceIf *iface,
                                    gboolean *ret, const GByteArray *table,
                                    const Hbase2TGet *tget,
                                    Hbase2TIOError **io, GError **error)
{
    g_autoptr(GArray) flags = g_array_new(FALSE, FALSE, sizeof(gboolean));

    if (!emu_handler2_get1(EMU_HANDLER2(iface), table, tget, FALSE,
                           emu_handler2_emit_exists, flags, "exists", io,
                           error)) {
        return FALSE;
    }
    *ret = g_array_index(flags, gboolean, 0);
    return TRUE;
}

static gboolean emu_handler2_exists_all(Hbase2THBaseServiceIf *iface,
                                        GArray **ret, const GByteArray *table,
                                        const GPtrArray *tgets,
                                        Hbase2TIOError **io, GError **error)
{
    return emu_handler2_gets(EMU_HANDLER2(iface), table, tgets, FALSE,
                             emu_handler2_emit_exists, *ret, "existsAll", io,
                             error);
}

static gboolean emu_handler2_get(Hbase2THBaseServiceIf *iface,
                                 Hbase2TResult **ret, const GByteArray *table,
                                 const Hbase2TGet *tget, Hbase2TIOError **io,
                                 GError **error)
{
    return emu_handler2_get1(EMU_HANDLER2(iface), table, tget, TRUE,
                             emu_handler2_emit_into, *ret, "get", io, error);
}

static gboolean emu_handler2_get_multiple(Hbase2THBaseServiceIf *iface,
                                          GPtrArray **ret,
                                          const GByteArray *table,
                                          const GPtrArray *tgets,
                                          Hbase2TIOError **io, GError **error)
{
    /* One TResult per TGet, a missing row as an empty one (§2.3). */
    return emu_handler2_gets(EMU_HANDLER2(iface), table, tgets, TRUE,
                             emu_handler2_emit_result, *ret, "getMultiple", io,
                             error);
}

/* ---- mutations ---- */

/* The parsed mutations of one row. */
struct emu_rowmut {
    const GByteArray *row;
    GArray *muts;       /* struct emu_mut */
    gboolean whole_row; /* a row delete, applied before muts */
    int64_t row_ts;     /* its timestamp, EMU_LATEST_TS: now */
};

static void emu_rowmut_clear(gpointer p)
{
    struct emu_rowmut *rm = p;

    if (rm->muts != NULL) {
        g_array_unref(rm->muts);
    }
}

static GArray *emu_rowmut_array(void)
{
    GArray *a = g_array_new(FALSE, TRUE, sizeof(struct emu_rowmut));

    g_array_set_clear_func(a, emu_rowmut_clear);
    return a;
}

static struct emu_rowmut *emu_rowmut_add(GArray *rms, const GByteArray *row)
{
    struct emu_rowmut rm = { row, NULL, FALSE, EMU_LATEST_TS };

    rm.muts = g_array_new(FALSE, TRUE, sizeof(struct emu_mut));
    g_array_append_val(rms, rm);
    return &g_array_index(rms, struct emu_rowmut, rms->len - 1);
}

static GError *emu_handler2_check_ts(int64_t ts)
{
    if (ts >= 0) {
        return NULL;
    }
    return g_error_new(EMU_STORE_ERROR, EMU_STORE_ERROR_INTERNAL,
                       "java.lang.IllegalArgumentException: Timestamp cannot "
                       "be negative. ts=%" G_GINT64_FORMAT,
                       ts);
}

/* putFromThrift; durability, attributes and visibility are accepted. */
typedef enum {
    EMU_MUT2_PUT,
    EMU_MUT2_DELETE,
    EMU_MUT2_ROW_MUTATIONS,
} emu_mut2_kind;

/*
 * What putFromThrift and the Put builder refuse on the client, before the
 * table is looked up: a bad row or timestamp, no columns, and a cell with
 * an empty family (CellBuilder's IllegalArgumentException): unchecked,
 * so INTERNAL_ERROR whether the table exists or not.
 */
static GError *emu_handler2_put_client_check(const Hbase2TPut *p)
{
    GError *err = emu_handler2_check_row(p->row);

    if (err == NULL && p->__isset_timestamp) {
        err = emu_handler2_check_ts(p->timestamp);
    }
    if (err == NULL &&
        (p->columnValues == NULL || p->columnValues->len == 0)) {
        err = emu_handler2_err(EMU_STORE_ERROR_INTERNAL,
                               "java.lang.IllegalArgumentException: No "
                               "columns to insert");
    }
    for (guint i = 0; err == NULL && i < p->columnValues->len; i++) {
        const Hbase2TColumnValue *cv = g_ptr_array_index(p->columnValues, i);

        if (cv->__isset_timestamp) {
            err = emu_handler2_check_ts(cv->timestamp);
        }
        if (err == NULL && EMU_LEN(cv->family) == 0) {
            err = emu_handler2_err(EMU_STORE_ERROR_INTERNAL,
                                   "java.lang.IllegalArgumentException: "
                                   "Family cannot be null");
        }
    }
    return err;
}

/* The client checks of every TPut among the items, in order. */
static GError *emu_handler2_puts_client_check(emu_mut2_kind kind,
                                              const GPtrArray *items)
{
    GError *err = NULL;

    for (guint i = 0; err == NULL && items != NULL && i < items->len; i++) {
        gconstpointer it = g_ptr_array_index(items, i);
        const Hbase2TRowMutations *m = it;

        if (kind == EMU_MUT2_PUT) {
            err = emu_handler2_put_client_check(it);
            continue;
        }
        for (guint j = 0; kind == EMU_MUT2_ROW_MUTATIONS && err == NULL &&
                          m->mutations != NULL && j < m->mutations->len;
             j++) {
            const Hbase2TMutation *mu = g_ptr_array_index(m->mutations, j);

            if (mu->__isset_put) {
                err = emu_handler2_put_client_check(mu->put);
            }
        }
    }
    return err;
}

static gboolean emu_handler2_parse_put(emu_table *t, const Hbase2TPut *p,
                                       struct emu_rowmut *rm, GError **error)
{
    GError *err = emu_handler2_put_client_check(p);

    if (err != NULL) {
        g_propagate_error(error, err);
        return FALSE;
    }
    for (guint i = 0; i < p->columnValues->len; i++) {
        const Hbase2TColumnValue *cv = g_ptr_array_index(p->columnValues, i);
        struct emu_mut mu = { 0 };

        if (!emu_table_family_index(t, EMU_DATA(cv->family),
                                    EMU_LEN(cv->family), &mu.fam, error)) {
            return FALSE;
        }
        mu.kind = EMU_MUT_PUT;
        mu.qual = EMU_DATA(cv->qualifier) ? EMU_DATA(cv->qualifier)
                                          : (const uint8_t *)"";
        mu.qual_len = EMU_LEN(cv->qualifier);
        mu.value = EMU_DATA(cv->value) ? EMU_DATA(cv->value)
                                       : (const uint8_t *)"";
        mu.value_len = EMU_LEN(cv->value);
        mu.has_ts = cv->__isset_timestamp || p->__isset_timestamp;
        mu.ts = cv->__isset_timestamp ? cv->timestamp : p->timestamp;
        g_array_append_val(rm->muts, mu);
    }
    return TRUE;
}

/*
 * deleteFromThrift: no columns is a row delete at TDelete.timestamp;
 * with columns, TDelete.timestamp is not used (HBase builds the Delete
 * without it) and each column's own timestamp applies.  An unset
 * deleteType reads as the IDL default DELETE_COLUMNS, as Java's does.
 */
static gboolean emu_handler2_parse_delete(emu_table *t, const Hbase2TDelete *d,
                                          struct emu_rowmut *rm,
                                          GError **error)
{
    GError *err = emu_handler2_check_row(d->row);
    Hbase2TDeleteType type = d->__isset_deleteType
                                 ? d->deleteType
                                 : HBASE2_T_DELETE_TYPE_DELETE_COLUMNS;

    if (err == NULL && d->__isset_timestamp) {
        err = emu_handler2_check_ts(d->timestamp);
    }
    if (err != NULL) {
        g_propagate_error(error, err);
        return FALSE;
    }
    if (!d->__isset_columns || d->columns == NULL) {
        rm->whole_row = TRUE;
        rm->row_ts = d->__isset_timestamp ? d->timestamp : EMU_LATEST_TS;
        return TRUE;
    }
    for (guint i = 0; i < d->columns->len; i++) {
        const Hbase2TColumn *c = g_ptr_array_index(d->columns, i);
        struct emu_mut mu = { 0 };

        if (!emu_table_family_index(t, EMU_DATA(c->family), EMU_LEN(c->family),
                                    &mu.fam, error)) {
            return FALSE;
        }
        mu.qual = EMU_DATA(c->qualifier) ? EMU_DATA(c->qualifier)
                                         : (const uint8_t *)"";
        mu.qual_len = EMU_LEN(c->qualifier);
        mu.has_ts = c->__isset_timestamp;
        mu.ts = c->timestamp;
        switch (type) {
        case HBASE2_T_DELETE_TYPE_DELETE_COLUMN:
            mu.kind = EMU_MUT_DELETE_VERSION;
            break;
        case HBASE2_T_DELETE_TYPE_DELETE_COLUMNS:
            mu.kind = EMU_MUT_DELETE_COLUMN;
            break;
        case HBASE2_T_DELETE_TYPE_DELETE_FAMILY:
            mu.kind = EMU_MUT_DELETE_FAMILY;
            break;
        case HBASE2_T_DELETE_TYPE_DELETE_FAMILY_VERSION:
            if (!c->__isset_timestamp) {
                g_set_error_literal(error, EMU_STORE_ERROR,
                                    EMU_STORE_ERROR_INTERNAL,
                                    "java.lang.IllegalArgumentException: "
                                    "Timestamp is required for TDelete with "
                                    "DeleteFamilyVersion type");
                return FALSE;
            }
            mu.kind = EMU_MUT_DELETE_FAMILY_VERSION;
            break;
        default:
            /* deleteFromThrift's switch has no case: nothing is added */
            continue;
        }
        g_array_append_val(rm->muts, mu);
    }
    return TRUE;
}

/* TRowMutations: every nested Put/Delete must be for the same row. */
static gboolean emu_handler2_parse_row_mutations(emu_table *t,
                                                 const Hbase2TRowMutations *m,
                                                 GArray *rms, GError **error)
{
    GError *err = emu_handler2_check_row(m->row);
    struct emu_rowmut *rm;

    if (err != NULL) {
        g_propagate_error(error, err);
        return FALSE;
    }
    rm = emu_rowmut_add(rms, m->row);
    for (guint i = 0; m->mutations != NULL && i < m->mutations->len; i++) {
        const Hbase2TMutation *mu = g_ptr_array_index(m->mutations, i);
        const GByteArray *row = mu->__isset_put ? mu->put->row
                                : mu->__isset_deleteSingle
                                    ? mu->deleteSingle->row
                                    : NULL;
        gboolean ok = TRUE;

        if (row == NULL) {
            continue; /* an empty union adds nothing */
        }
        if (row->len != m->row->len ||
            memcmp(row->data, m->row->data, row->len) != 0) {
            g_set_error_literal(error, EMU_STORE_ERROR, EMU_STORE_ERROR_IO,
                                "org.apache.hadoop.hbase.client."
                                "WrongRowIOException: The row in the "
                                "recently added Put/Delete doesn't match "
                                "the original one");
            return FALSE;
        }
        if (mu->__isset_put) {
            ok = emu_handler2_parse_put(t, mu->put, rm, error);
        } else {
            ok = emu_handler2_parse_delete(t, mu->deleteSingle, rm, error);
        }
        if (!ok) {
            return FALSE;
        }
    }
    return TRUE;
}

/* Applies one row's mutations; table write lock held. */
static void emu_handler2_apply_row(emu_table *t, const struct emu_rowmut *rm)
{
    const GByteArray *row = rm->row;

    if (rm->whole_row) {
        emu_table_delete_row(t, row->data, row->len, rm->row_ts);
    }
    if (rm->muts->len > 0) {
        emu_table_mutate(t, row->data, row->len,
                         (const struct emu_mut *)(void *)rm->muts->data,
                         rm->muts->len, EMU_LATEST_TS);
    }
}

/* Applies parsed rows in order under the guard and the write lock. */
static void emu_handler2_apply(EmuHandler2 *self, emu_table *t, GArray *rms)
{
    g_autofree const uint8_t **keys = g_new(const uint8_t *, rms->len + 1);
    g_autofree size_t *lens = g_new(size_t, rms->len + 1);
    struct emu_guard g;

    for (guint i = 0; i < rms->len; i++) {
        const struct emu_rowmut *rm = &g_array_index(rms, struct emu_rowmut,
                                                     i);

        keys[i] = rm->row->data;
        lens[i] = rm->row->len;
    }
    emu_guard_enter(&g, &self->opts, t, keys, lens, rms->len);
    emu_table_write_lock(t);
    for (guint i = 0; i < rms->len; i++) {
        emu_handler2_apply_row(t, &g_array_index(rms, struct emu_rowmut, i));
    }
    emu_table_write_unlock(t);
    emu_guard_leave(&g);
}

/* Parses every item (TPut, TDelete or TRowMutations) before writing any,
 * as the client library builds them all first, then applies them. */
/* The actions HBase's client sends for the items. */
static guint emu_handler2_actions(emu_mut2_kind kind, const GPtrArray *items)
{
    const Hbase2TRowMutations *m;

    if (items == NULL) {
        return 0;
    }
    if (kind != EMU_MUT2_ROW_MUTATIONS) {
        return items->len;
    }
    m = items->len > 0 ? g_ptr_array_index(items, 0) : NULL;
    return m != NULL && m->mutations != NULL ? m->mutations->len : 0;
}

static gboolean emu_handler2_write(EmuHandler2 *self, const GByteArray *table,
                                   emu_mut2_kind kind, const GPtrArray *items,
                                   gboolean multi, const char *method,
                                   Hbase2TIOError **io, GError **error)
{
    GError *err = NULL;
    g_autoptr(emu_table) t = NULL;
    g_autoptr(GArray) rms = emu_rowmut_array();

    err = emu_handler2_puts_client_check(kind, items);
    if (err == NULL) {
        t = emu_store_table_ref(self->store, EMU_DATA(table), EMU_LEN(table),
                                TRUE, &err);
    }
    if (t == NULL && multi) {
        /* a list of actions (putMultiple, deleteMultiple: one each; a
         * RowMutations: one a mutation) meets the missing table */
        err = emu_store_batch_error(err, emu_handler2_actions(kind, items));
    }
    if (t == NULL) {
        return emu_handler2_fail(err, method, io, error);
    }
    for (guint i = 0; items != NULL && i < items->len; i++) {
        gconstpointer it = g_ptr_array_index(items, i);
        gboolean ok;

        if (kind == EMU_MUT2_ROW_MUTATIONS) {
            ok = emu_handler2_parse_row_mutations(t, it, rms, &err);
        } else if (kind == EMU_MUT2_PUT) {
            const Hbase2TPut *p = it;

            ok = emu_handler2_parse_put(t, p, emu_rowmut_add(rms, p->row),
                                        &err);
        } else {
            const Hbase2TDelete *d = it;

            ok = emu_handler2_parse_delete(t, d, emu_rowmut_add(rms, d->row),
                                           &err);
        }
        if (!ok) {
            return emu_handler2_fail(err, method, io, error);
        }
    }
    if (rms->len > 0) {
        emu_handler2_apply(self, t, rms);
    } else {
        emu_guard_latency(&self->opts);
    }
    return TRUE;
}

/* One item as a list for emu_handler2_write. */
static gboolean emu_handler2_write1(EmuHandler2 *self, const GByteArray *table,
                                    emu_mut2_kind kind, gconstpointer item,
                                    const char *method, Hbase2TIOError **io,
                                    GError **error)
{
    g_autoptr(GPtrArray) one = g_ptr_array_new();

    g_ptr_array_add(one, (gpointer)item);
    /* a RowMutations is a batch of its mutations; a TPut or TDelete one
     * call of its own */
    return emu_handler2_write(self, table, kind, one,
                              kind == EMU_MUT2_ROW_MUTATIONS, method, io,
                              error);
}

static gboolean emu_handler2_put(Hbase2THBaseServiceIf *iface,
                                 const GByteArray *table,
                                 const Hbase2TPut *tput, Hbase2TIOError **io,
                                 GError **error)
{
    return emu_handler2_write1(EMU_HANDLER2(iface), table, EMU_MUT2_PUT, tput,
                               "put", io, error);
}

static gboolean emu_handler2_put_multiple(Hbase2THBaseServiceIf *iface,
                                          const GByteArray *table,
                                          const GPtrArray *tputs,
                                          Hbase2TIOError **io, GError **error)
{
    return emu_handler2_write(EMU_HANDLER2(iface), table, EMU_MUT2_PUT, tputs,
                              TRUE, "putMultiple", io, error);
}

static gboolean emu_handler2_delete_single(Hbase2THBaseServiceIf *iface,
                                           const GByteArray *table,
                                           const Hbase2TDelete *tdelete,
                                           Hbase2TIOError **io, GError **error)
{
    return emu_handler2_write1(EMU_HANDLER2(iface), table, EMU_MUT2_DELETE,
                               tdelete, "deleteSingle", io, error);
}

static gboolean emu_handler2_delete_multiple(
    Hbase2THBaseServiceIf *iface, GPtrArray **ret, const GByteArray *table,
    const GPtrArray *tdeletes, Hbase2TIOError **io, GError **error)
{
    /* HBase answers an empty list: every delete was applied. */
    return emu_handler2_write(EMU_HANDLER2(iface), table, EMU_MUT2_DELETE,
                              tdeletes, TRUE, "deleteMultiple", io, error);
}

static gboolean emu_handler2_mutate_row(Hbase2THBaseServiceIf *iface,
                                        const GByteArray *table,
                                        const Hbase2TRowMutations *trm,
                                        Hbase2TIOError **io, GError **error)
{
    return emu_handler2_write1(EMU_HANDLER2(iface), table,
                               EMU_MUT2_ROW_MUTATIONS, trm, "mutateRow", io,
                               error);
}

/*
 * HRegion's check for checkAndMutate: an empty or absent value matches a
 * missing cell or an empty one (NOT_EQUAL inverts that); otherwise the
 * given value is compared to the cell's newest version as "value OP
 * cell".  Table write lock held.
 */
static gboolean emu_handler2_check(emu_table *t, const GByteArray *row,
                                   guint fam, const GByteArray *qual,
                                   Hbase2TCompareOperator op,
                                   const GByteArray *value, gboolean *match,
                                   GError **error)
{
    size_t cur_len = 0;
    const uint8_t *cur = emu_table_cell_latest(
        t, row->data, row->len, fam,
        EMU_DATA(qual) ? EMU_DATA(qual) : (const uint8_t *)"", EMU_LEN(qual),
        &cur_len);
    gboolean value_null = EMU_LEN(value) == 0;
    int c;

    if (value_null) {
        *match = (cur == NULL || cur_len == 0) ==
                 (op != HBASE2_T_COMPARE_OPERATOR_NOT_EQUAL);
        return TRUE;
    }
    if (cur == NULL) {
        *match = FALSE;
        return TRUE;
    }
    c = emu_store_bytes_cmp(value->data, value->len, cur, cur_len);
    switch (op) {
    case HBASE2_T_COMPARE_OPERATOR_LESS:
        *match = c < 0;
        break;
    case HBASE2_T_COMPARE_OPERATOR_LESS_OR_EQUAL:
        *match = c <= 0;
        break;
    case HBASE2_T_COMPARE_OPERATOR_EQUAL:
        *match = c == 0;
        break;
    case HBASE2_T_COMPARE_OPERATOR_NOT_EQUAL:
        *match = c != 0;
        break;
    case HBASE2_T_COMPARE_OPERATOR_GREATER_OR_EQUAL:
        *match = c >= 0;
        break;
    case HBASE2_T_COMPARE_OPERATOR_GREATER:
        *match = c > 0;
        break;
    default:
        /* HRegion.matches has no case for NO_OP: the region server's
         * RuntimeException reaches the client as an IOException. */
        g_set_error_literal(error, EMU_STORE_ERROR, EMU_STORE_ERROR_IO,
                            "java.io.IOException: java.lang.RuntimeException"
                            ": Unknown Compare op NO_OP");
        return FALSE;
    }
    return TRUE;
}

#define EMU_NO_SUCH_FAMILY                                                    \
    "org.apache.hadoop.hbase.regionserver.NoSuchColumnFamilyException"

/* CheckAndMutate.Builder.build: the action is for the checked row. */
static GError *emu_handler2_check_action_row(const GByteArray *row,
                                             const GByteArray *action_row)
{
    g_autoptr(GString) msg = NULL;

    if (EMU_LEN(action_row) == EMU_LEN(row) &&
        (EMU_LEN(row) == 0 ||
         memcmp(action_row->data, row->data, row->len) == 0)) {
        return NULL;
    }
    msg = g_string_new("org.apache.hadoop.hbase.DoNotRetryIOException: The "
                       "row of the action <");
    emu_store_append_binary(msg, EMU_DATA(action_row), EMU_LEN(action_row));
    g_string_append(msg, "> doesn't match the original one <");
    emu_store_append_binary(msg, EMU_DATA(row), EMU_LEN(row));
    g_string_append_c(msg, '>');
    return emu_handler2_err(EMU_STORE_ERROR_IO_NORETRY, msg->str);
}

/* checkAndPut / checkAndDelete / checkAndMutate on one row. */
static gboolean emu_handler2_check_and(
    EmuHandler2 *self, gboolean *ret, const GByteArray *table,
    const GByteArray *row, const GByteArray *family,
    const GByteArray *qualifier, Hbase2TCompareOperator op,
    const GByteArray *value, emu_mut2_kind kind, gconstpointer item,
    const char *method, Hbase2TIOError **io, GError **error)
{
    GError *err = emu_handler2_check_row(row);
    g_autoptr(emu_table) t = NULL;
    g_autoptr(GArray) rms = emu_rowmut_array();
    g_autoptr(GPtrArray) one = NULL;
    g_autoptr(GError) later = NULL;
    guint fam;
    gboolean ok = TRUE;
    struct emu_guard g;

    if (err != NULL) {
        return emu_handler2_fail(err, method, io, error);
    }
    if ((guint)op > HBASE2_T_COMPARE_OPERATOR_NO_OP) {
        /* compareOpFromThrift gives null; the builder's check throws */
        return emu_handler2_internal(error, method);
    }
    if (kind == EMU_MUT2_ROW_MUTATIONS && value == NULL) {
        /* checkAndMutate passes the value through byteBufferToByteArray,
         * which dereferences it: a NullPointerException */
        return emu_handler2_internal(error, method);
    }
    /* the client builds the mutation before the table is looked up */
    one = g_ptr_array_new();
    g_ptr_array_add(one, (gpointer)item);
    err = emu_handler2_puts_client_check(kind, one);
    if (err == NULL) {
        t = emu_store_table_ref(self->store, EMU_DATA(table), EMU_LEN(table),
                                TRUE, &err);
    }
    if (t == NULL && kind == EMU_MUT2_ROW_MUTATIONS) {
        err = emu_store_batch_error(err, emu_handler2_actions(kind, one));
    }
    if (t == NULL) {
        return emu_handler2_fail(err, method, io, error);
    }
    if (kind == EMU_MUT2_ROW_MUTATIONS) {
        ok = emu_handler2_parse_row_mutations(t, item, rms, &err);
    } else if (kind == EMU_MUT2_PUT) {
        ok = emu_handler2_parse_put(
            t, item, emu_rowmut_add(rms, ((const Hbase2TPut *)item)->row),
            &err);
    } else {
        ok = emu_handler2_parse_delete(
            t, item, emu_rowmut_add(rms, ((const Hbase2TDelete *)item)->row),
            &err);
    }
    if (!ok && g_str_has_prefix(err->message, EMU_NO_SUCH_FAMILY)) {
        /* the region checks the mutation's families only once the
         * condition holds: a failed check answers false */
        later = err;
        err = NULL;
    } else if (!ok) {
        return emu_handler2_fail(err, method, io, error);
    }
    /* the region is located before CheckAndMutate's builder compares the
     * action's row (a missing table answers first), and after
     * deleteFromThrift's own refusals */
    if (kind != EMU_MUT2_ROW_MUTATIONS) {
        err = emu_handler2_check_action_row(
            row, kind == EMU_MUT2_PUT ? ((const Hbase2TPut *)item)->row
                                      : ((const Hbase2TDelete *)item)->row);
        if (err != NULL) {
            return emu_handler2_fail(err, method, io, error);
        }
    }
    for (guint i = 0; later == NULL && i < rms->len; i++) {
        const GByteArray *r = g_array_index(rms, struct emu_rowmut, i).row;

        if (r->len != row->len || memcmp(r->data, row->data, r->len) != 0) {
            return emu_handler2_fail(
                emu_handler2_err(EMU_STORE_ERROR_IO_NORETRY,
                                 "org.apache.hadoop.hbase."
                                 "DoNotRetryIOException: Action's getRow "
                                 "must match"),
                method, io, error);
        }
    }
    if (!emu_table_family_index(t, EMU_DATA(family), EMU_LEN(family), &fam,
                                &err)) {
        return emu_handler2_fail(err, method, io, error);
    }
    if (later != NULL) {
        emu_table_read_lock(t);
        ok = emu_handler2_check(t, row, fam, qualifier, op, value, ret, &err);
        emu_table_read_unlock(t);
        if (!ok) {
            return emu_handler2_fail(err, method, io, error);
        }
        if (*ret) {
            return emu_handler2_fail(g_steal_pointer(&later), method, io,
                                     error);
        }
        return TRUE;
    }
    emu_guard_enter1(&g, &self->opts, t, row->data, row->len);
    emu_table_write_lock(t);
    ok = emu_handler2_check(t, row, fam, qualifier, op, value, ret, &err);
    for (guint i = 0; ok && *ret && i < rms->len; i++) {
        emu_handler2_apply_row(t, &g_array_index(rms, struct emu_rowmut, i));
    }
    emu_table_write_unlock(t);
    emu_guard_leave(&g);
    if (!ok) {
        return emu_handler2_fail(err, method, io, error);
    }
    return TRUE;
}

static gboolean emu_handler2_check_and_put(
    Hbase2THBaseServiceIf *iface, gboolean *ret, const GByteArray *table,
    const GByteArray *row, const GByteArray *family,
    const GByteArray *qualifier, const GByteArray *value,
    const Hbase2TPut *tput, Hbase2TIOError **io, GError **error)
{
    /* No value: ifNotExists, which HRegion checks as EQUAL to nothing. */
    return emu_handler2_check_and(EMU_HANDLER2(iface), ret, table, row, family,
                                  qualifier, HBASE2_T_COMPARE_OPERATOR_EQUAL,
                                  value, EMU_MUT2_PUT, tput, "checkAndPut", io,
                                  error);
}

static gboolean emu_handler2_check_and_delete(
    Hbase2THBaseServiceIf *iface, gboolean *ret, const GByteArray *table,
    const GByteArray *row, const GByteArray *family,
    const GByteArray *qualifier, const GByteArray *value,
    const Hbase2TDelete *tdelete, Hbase2TIOError **io, GError **error)
{
    return emu_handler2_check_and(EMU_HANDLER2(iface), ret, table, row, family,
                                  qualifier, HBASE2_T_COMPARE_OPERATOR_EQUAL,
                                  value, EMU_MUT2_DELETE, tdelete,
                                  "checkAndDelete", io, error);
}

static gboolean emu_handler2_check_and_mutate(
    Hbase2THBaseServiceIf *iface, gboolean *ret, const GByteArray *table,
    const GByteArray *row, const GByteArray *family,
    const GByteArray *qualifier, const Hbase2TCompareOperator op,
    const GByteArray *value, const Hbase2TRowMutations *trm,
    Hbase2TIOError **io, GError **error)
{
    return emu_handler2_check_and(EMU_HANDLER2(iface), ret, table, row, family,
                                  qualifier, op, value, EMU_MUT2_ROW_MUTATIONS,
                                  trm, "checkAndMutate", io, error);
}

/* ---- increment and append ---- */

/* One cell of a read-modify-write, checked before anything changes. */
struct emu_rmw {
    guint fam;
    const uint8_t *qual;
    size_t qual_len;
    const GByteArray *family;
};

static gboolean emu_handler2_rmw_targets(emu_table *t, const GByteArray *row,
                                         const GPtrArray *cols,
                                         gboolean increment, GArray *out,
                                         GError **error)
{
    GError *err = emu_handler2_check_row(row);

    if (err == NULL && (cols == NULL || cols->len == 0)) {
        err = emu_handler2_err(EMU_STORE_ERROR_INTERNAL,
                               "java.lang.IllegalArgumentException: No "
                               "columns to insert");
    }
    if (err != NULL) {
        g_propagate_error(error, err);
        return FALSE;
    }
    for (guint i = 0; i < cols->len; i++) {
        struct emu_rmw w = { 0 };
        const GByteArray *q;

        if (increment) {
            const Hbase2TColumnIncrement *ci = g_ptr_array_index(cols, i);

            w.family = ci->family;
            q = ci->qualifier;
        } else {
            const Hbase2TColumnValue *cv = g_ptr_array_index(cols, i);

            w.family = cv->family;
            q = cv->qualifier;
        }
        if (!emu_table_family_index(t, EMU_DATA(w.family), EMU_LEN(w.family),
                                    &w.fam, error)) {
            return FALSE;
        }
        w.qual = EMU_DATA(q) ? EMU_DATA(q) : (const uint8_t *)"";
        w.qual_len = EMU_LEN(q);
        g_array_append_val(out, w);
    }
    return TRUE;
}

/*
 * increment / append: all cells of the row change under one lock hold,
 * after every increment target was checked to hold a long (HBase checks
 * the whole row before writing).  The answer holds the new cells in
 * column order, or nothing with returnResults false.
 */
static gboolean emu_handler2_rmw(EmuHandler2 *self, Hbase2TResult *ret,
                                 const GByteArray *table,
                                 const GByteArray *row, const GPtrArray *cols,
                                 gboolean increment, gboolean return_results,
                                 const char *method, Hbase2TIOError **io,
                                 GError **error)
{
    GError *err = NULL;
    g_autoptr(emu_table) t = NULL;
    g_autoptr(GArray) targets = g_array_new(FALSE, TRUE,
                                            sizeof(struct emu_rmw));
    g_autoptr(GArray) cells = g_array_new(FALSE, TRUE,
                                          sizeof(struct emu_cell));
    g_autoptr(GPtrArray) values = g_ptr_array_new_with_free_func(
        (GDestroyNotify)g_byte_array_unref);
    struct emu_guard g;

    t = emu_store_table_ref(self->store, EMU_DATA(table), EMU_LEN(table), TRUE,
                            &err);
    if (t == NULL) {
        return emu_handler2_fail(err, method, io, error);
    }
    if (!emu_handler2_rmw_targets(t, row, cols, increment, targets, &err)) {
        return emu_handler2_fail(err, method, io, error);
    }
    emu_guard_enter1(&g, &self->opts, t, row->data, row->len);
    emu_table_write_lock(t);
    for (guint i = 0; increment && err == NULL && i < targets->len; i++) {
        const struct emu_rmw *w = &g_array_index(targets, struct emu_rmw, i);
        size_t len = 0;

        if (emu_table_cell_latest(t, row->data, row->len, w->fam, w->qual,
                                  w->qual_len, &len) != NULL &&
            len != 8) {
            err = g_error_new(EMU_STORE_ERROR, EMU_STORE_ERROR_IO_NORETRY,
                              "org.apache.hadoop.hbase.DoNotRetryIOException"
                              ": Field is not a long, it's %zu bytes wide",
                              len);
        }
    }
    for (guint i = 0; err == NULL && i < targets->len; i++) {
        const struct emu_rmw *w = &g_array_index(targets, struct emu_rmw, i);
        struct emu_cell cell = { 0 };
        GByteArray *nv = NULL;

        if (increment) {
            const Hbase2TColumnIncrement *ci = g_ptr_array_index(cols, i);
            int64_t result;
            uint8_t be[8];

            emu_table_increment(t, row->data, row->len, w->fam, w->qual,
                                w->qual_len, ci->amount, &result,
                                &cell.timestamp, NULL);
            for (int b = 7; b >= 0; b--) {
                be[b] = (uint8_t)((uint64_t)result & 0xff);
                result = (int64_t)((uint64_t)result >> 8);
            }
            nv = emu_handler2_bytes(be, 8);
        } else {
            const Hbase2TColumnValue *cv = g_ptr_array_index(cols, i);

            emu_table_append(t, row->data, row->len, w->fam, w->qual,
                             w->qual_len,
                             EMU_DATA(cv->value) ? EMU_DATA(cv->value)
                                                 : (const uint8_t *)"",
                             EMU_LEN(cv->value), &nv, &cell.timestamp);
        }
        g_ptr_array_add(values, nv);
        cell.family = EMU_DATA(w->family);
        cell.family_len = EMU_LEN(w->family);
        cell.qualifier = w->qual;
        cell.qualifier_len = w->qual_len;
        cell.value = nv->data;
        cell.value_len = nv->len;
        g_array_append_val(cells, cell);
    }
    emu_table_write_unlock(t);
    emu_guard_leave(&g);
    if (err != NULL) {
        return emu_handler2_fail(err, method, io, error);
    }
    g_array_sort(cells, emu_result_cell_col_cmp);
    emu_result2_fill(ret, row->data, row->len,
                     (const struct emu_cell *)(void *)cells->data,
                     return_results ? cells->len : 0, FALSE);
    return TRUE;
}

static gboolean emu_handler2_increment(Hbase2THBaseServiceIf *iface,
                                       Hbase2TResult **ret,
                                       const GByteArray *table,
                                       const Hbase2TIncrement *inc,
                                       Hbase2TIOError **io, GError **error)
{
    return emu_handler2_rmw(EMU_HANDLER2(iface), *ret, table, inc->row,
                            inc->columns, TRUE,
                            !inc->__isset_returnResults || inc->returnResults,
                            "increment", io, error);
}

static gboolean emu_handler2_append(Hbase2THBaseServiceIf *iface,
                                    Hbase2TResult **ret,
                                    const GByteArray *table,
                                    const Hbase2TAppend *app,
                                    Hbase2TIOError **io, GError **error)
{
    return emu_handler2_rmw(EMU_HANDLER2(iface), *ret, table, app->row,
                            app->columns, FALSE,
                            !app->__isset_returnResults || app->returnResults,
                            "append", io, error);
}

/* ---- scanners ---- */

/*
 * scanFromThrift into a scanner spec: the time range only when both
 * stamps are set; colFamTimeRangeMap replaces it per family (families
 * the table lacks are ignored); a non-empty start equal to the stop is
 * the deprecated setters' "get scan", which returns that row (§4).
 * caching, readType, cacheBlocks, consistency, replica id, attributes and
 * authorizations change nothing an emulator client can see.
 */
static gboolean emu_handler2_scan_spec(emu_table *t, const Hbase2TScan *sc,
                                       struct emu_scan_spec *spec,
                                       int64_t **fam_ranges,
                                       uint8_t **filter_text, GError **error)
{
    GError *err = NULL;
    const GByteArray *start = sc->__isset_startRow ? sc->startRow : NULL;
    const GByteArray *stop = sc->__isset_stopRow ? sc->stopRow : NULL;
    int64_t lo = 0, hi = EMU_LATEST_TS;

    memset(spec, 0, sizeof(*spec));
    *fam_ranges = NULL;
    *filter_text = NULL;
    if (sc->__isset_timeRange && sc->timeRange != NULL) {
        lo = sc->timeRange->minStamp;
        hi = sc->timeRange->maxStamp;
        err = emu_handler2_check_range(lo, hi);
    }
    if (err == NULL && sc->__isset_colFamTimeRangeMap &&
        sc->colFamTimeRangeMap != NULL &&
        g_hash_table_size(sc->colFamTimeRangeMap) > 0) {
        guint nf = emu_table_family_count(t);
        int64_t *r = g_new(int64_t, 2 * nf);
        GHashTableIter it;
        gpointer k, v;

        *fam_ranges = r;
        for (guint i = 0; i < nf; i++) {
            r[i] = lo;
            r[nf + i] = hi;
        }
        /* Iterated, never looked up: c_glib hashes binary keys by
         * pointer (reference section 7). */
        g_hash_table_iter_init(&it, sc->colFamTimeRangeMap);
        while (err == NULL && g_hash_table_iter_next(&it, &k, &v)) {
            const GByteArray *fam = k;
            const Hbase2TTimeRange *tr = v;
            guint fi;

            if (tr == NULL) {
                continue;
            }
            err = emu_handler2_check_range(tr->minStamp, tr->maxStamp);
            if (err == NULL &&
                emu_table_family_index(t, EMU_DATA(fam), EMU_LEN(fam), &fi,
                                       NULL)) {
                r[fi] = tr->minStamp;
                r[nf + fi] = tr->maxStamp;
            }
        }
        spec->fam_min = r;
        spec->fam_max = r + nf;
    }
    if (err != NULL) {
        g_propagate_error(error, err);
        return FALSE;
    }
    spec->start = EMU_DATA(start);
    spec->start_len = EMU_LEN(start);
    spec->stop = EMU_DATA(stop);
    spec->stop_len = EMU_LEN(stop);
    spec->stop_inclusive = spec->start_len > 0 &&
                           spec->start_len == spec->stop_len &&
                           memcmp(spec->start, spec->stop, spec->start_len) ==
                               0;
    spec->min_ts = lo;
    spec->max_ts = hi;
    spec->max_versions = sc->__isset_maxVersions ? sc->maxVersions : 1;
    spec->batch = sc->__isset_batchSize ? sc->batchSize : 0;
    spec->reversed = sc->__isset_reversed && sc->reversed;
    spec->limit = sc->__isset_limit ? sc->limit : 0;
    spec->emit = emu_result2_add_row;
    if (sc->__isset_filterString && sc->filterString != NULL) {
        g_autoptr(GError) ferr = NULL;
        emu_filter *f;

        spec->filter = sc->filterString->len ? sc->filterString->data
                                             : (const uint8_t *)"";
        spec->filter_len = sc->filterString->len;
        /* Compiled here too: ParseFilter's errors are unchecked, so they
         * are TApplicationExceptions on Thrift2, not TIOError. */
        f = emu_filter_compile(spec->filter, spec->filter_len, spec->reversed,
                               &ferr);
        if (f == NULL) {
            g_set_error(error, EMU_STORE_ERROR, EMU_STORE_ERROR_INTERNAL, "%s",
                        ferr ? ferr->message : "invalid filter");
            return FALSE;
        }
        emu_filter_free(f);
    }
    /* scanFromThrift sets filterBytes last: it replaces filterString */
    if (sc->__isset_filterBytes && sc->filterBytes != NULL) {
        err = emu_handler2_filter_bytes(sc->filterBytes, spec->reversed,
                                        filter_text, &spec->filter_len);
        if (err != NULL) {
            g_propagate_error(error, err);
            return FALSE;
        }
        spec->filter = *filter_text;
    }
    return emu_handler2_colspec(t, sc->__isset_columns ? sc->columns : NULL,
                                &spec->cols, error);
}

/* Opens a scanner: listed under an id, or with unlisted, handed over
 * without one (getScannerResults: the handler's own ResultScanner, never
 * in the scanner map, so it takes no id). */
static gboolean emu_handler2_open(EmuHandler2 *self, int32_t *id,
                                  emu_scanner **unlisted,
                                  const GByteArray *table,
                                  const Hbase2TScan *tscan, const char *method,
                                  Hbase2TIOError **io, GError **error)
{
    GError *err = NULL;
    g_autoptr(emu_table) t = NULL;
    g_autofree int64_t *ranges = NULL;
    g_autofree uint8_t *filter_text = NULL;
    struct emu_scan_spec spec;
    struct emu_guard g;
    gboolean ok;

    t = emu_store_table_ref(self->store, EMU_DATA(table), EMU_LEN(table), TRUE,
                            &err);
    if (t == NULL) {
        return emu_handler2_fail(err, method, io, error);
    }
    if (!emu_handler2_scan_spec(t, tscan, &spec, &ranges, &filter_text,
                                &err)) {
        return emu_handler2_fail(err, method, io, error);
    }
    emu_guard_enter1(&g, &self->opts, t, spec.start, spec.start_len);
    if (unlisted != NULL) {
        *unlisted = emu_scanner_new(t, &spec, &err);
        ok = *unlisted != NULL;
    } else {
        ok = emu_scanner_open(t, &spec, id, &err);
    }
    emu_colspec_free(spec.cols);
    emu_guard_leave(&g);
    if (!ok) {
        return emu_handler2_fail(err, method, io, error);
    }
    return TRUE;
}

static gboolean emu_handler2_open_scanner(Hbase2THBaseServiceIf *iface,
                                          gint32 *ret, const GByteArray *table,
                                          const Hbase2TScan *tscan,
                                          Hbase2TIOError **io, GError **error)
{
    return emu_handler2_open(EMU_HANDLER2(iface), ret, NULL, table, tscan,
                             "openScanner", io, error);
}

static gboolean emu_handler2_fetch(EmuHandler2 *self, emu_scanner *sc,
                                   int32_t n, GPtrArray *out, GError **error)
{
    g_autoptr(GBytes) pos = emu_scanner_position(sc);
    gsize plen;
    const uint8_t *p = g_bytes_get_data(pos, &plen);
    struct emu_guard g;
    gboolean ok;

    emu_scanner_busy(sc, TRUE);
    emu_guard_enter1(&g, &self->opts, emu_scanner_table(sc), p, plen);
    ok = emu_scanner_fetch(sc, n, out, error);
    emu_guard_leave(&g);
    emu_scanner_busy(sc, FALSE);
    return ok;
}

static gboolean emu_handler2_get_scanner_rows(Hbase2THBaseServiceIf *iface,
                                              GPtrArray **ret, const gint32 id,
                                              const gint32 n,
                                              Hbase2TIOError **io,
                                              Hbase2TIllegalArgument **ia,
                                              GError **error)
{
    EmuHandler2 *self = EMU_HANDLER2(iface);
    GError *err = NULL;
    g_autoptr(emu_scanner) sc = emu_scanner_get_for(id, emu_result2_add_row,
                                                    NULL);

    if (sc == NULL) {
        emu_guard_latency(&self->opts);
        *ia = g_object_new(HBASE2_TYPE_T_ILLEGAL_ARGUMENT, "message",
                           "Invalid scanner Id", NULL);
        return FALSE;
    }
    if (n < 0) { /* as scannerGetList's */
        return emu_handler2_internal(error, "getScannerRows");
    }
    if (!emu_handler2_fetch(self, sc, n, *ret, &err)) {
        return emu_handler2_fail(err, "getScannerRows", io, error);
    }
    return TRUE;
}

static gboolean emu_handler2_close_scanner(Hbase2THBaseServiceIf *iface,
                                           const gint32 id,
                                           Hbase2TIOError **io,
                                           Hbase2TIllegalArgument **ia,
                                           GError **error)
{
    emu_guard_latency(&EMU_HANDLER2(iface)->opts);
    /* 2.x logs an unknown or expired id and returns normally (§2.3). */
    if (!emu_scanner_close_for(id, emu_result2_add_row, NULL)) {
        g_debug("closeScanner: scanner ID %d is invalid", id);
    }
    return TRUE;
}

static gboolean emu_handler2_get_scanner_results(
    Hbase2THBaseServiceIf *iface, GPtrArray **ret, const GByteArray *table,
    const Hbase2TScan *tscan, const gint32 n, Hbase2TIOError **io,
    GError **error)
{
    EmuHandler2 *self = EMU_HANDLER2(iface);
    GError *err = NULL;
    g_autoptr(emu_scanner) sc = NULL;
    gboolean ok;

    if (!emu_handler2_open(self, NULL, &sc, table, tscan, "getScannerResults",
                           io, error)) {
        return FALSE;
    }
    if (n < 0) { /* as scannerGetList's: ResultScanner.next(n) sizes a list
                  by n, an exception no handler catches */
        return emu_handler2_internal(error, "getScannerResults");
    }
    ok = emu_handler2_fetch(self, sc, n, *ret, &err);
    if (!ok) {
        return emu_handler2_fail(err, "getScannerResults", io, error);
    }
    return TRUE;
}

/* ---- regions ---- */

static void emu_handler2_fill_location(EmuHandler2 *self,
                                       Hbase2THRegionLocation *loc,
                                       emu_table *t, guint i)
{
    const struct emu_store_config *cfg = emu_store_get_config(self->store);
    struct emu_region *reg = emu_table_region(t, i);
    Hbase2THRegionInfo *ri = loc->regionInfo;
    Hbase2TServerName *sn = loc->serverName;
    const char *name = emu_table_name(t);
    gsize l;
    const void *p;

    g_free(sn->hostName);
    sn->hostName = g_strdup(cfg->server_name);
    sn->port = cfg->server_port;
    sn->__isset_port = TRUE;
    /* One region server, started with the first table it serves. */
    sn->startCode = reg->id;
    sn->__isset_startCode = TRUE;
    ri->regionId = reg->id;
    ri->tableName = emu_handler2_bytes(name, strlen(name));
    p = g_bytes_get_data(reg->start, &l);
    ri->startKey = emu_handler2_bytes(p, l);
    p = g_bytes_get_data(reg->end, &l);
    ri->endKey = emu_handler2_bytes(p, l);
    ri->__isset_startKey = ri->__isset_endKey = TRUE;
    ri->offline = ri->split = FALSE;
    ri->__isset_offline = ri->__isset_split = TRUE;
    ri->replicaId = 0;
    ri->__isset_replicaId = TRUE;
}

/* The table a region locator is for, enabled or not; NULL after
 * answering the error. */
static emu_table *emu_handler2_locator(EmuHandler2 *self,
                                       const GByteArray *table,
                                       const char *method, Hbase2TIOError **io,
                                       GError **error)
{
    GError *err = NULL;
    emu_table *t;

    emu_guard_latency(&self->opts);
    t = emu_store_table_ref(self->store, EMU_DATA(table), EMU_LEN(table),
                            FALSE, &err);
    if (t == NULL) {
        emu_handler2_fail(err, method, io, error);
    }
    return t;
}

static gboolean emu_handler2_get_region_location(
    Hbase2THBaseServiceIf *iface, Hbase2THRegionLocation **ret,
    const GByteArray *table, const GByteArray *row, const gboolean reload,
    Hbase2TIOError **io, GError **error)
{
    EmuHandler2 *self = EMU_HANDLER2(iface);
    g_autoptr(emu_table) t = emu_handler2_locator(
        self, table, "getRegionLocation", io, error);

    if (t == NULL) {
        return FALSE;
    }
    emu_handler2_fill_location(
        self, *ret, t, emu_table_region_of(t, EMU_DATA(row), EMU_LEN(row)));
    return TRUE;
}

static gboolean emu_handler2_get_all_region_locations(
    Hbase2THBaseServiceIf *iface, GPtrArray **ret, const GByteArray *table,
    Hbase2TIOError **io, GError **error)
{
    EmuHandler2 *self = EMU_HANDLER2(iface);
    GError *err = NULL;
    g_autoptr(emu_table) t = NULL;

    emu_guard_latency(&self->opts);
    t = emu_store_table_ref(self->store, EMU_DATA(table), EMU_LEN(table),
                            FALSE, &err);
    if (t == NULL &&
        g_str_has_prefix(err->message, "org.apache.hadoop.hbase."
                                       "TableNotFoundException")) {
        /* RegionLocator.getAllRegionLocations scans hbase:meta for the
         * table's rows: none, an empty list */
        g_error_free(err);
        return TRUE;
    }
    if (t == NULL) {
        return emu_handler2_fail(err, "getAllRegionLocations", io, error);
    }
    for (guint i = 0; i < emu_table_region_count(t); i++) {
        Hbase2THRegionLocation *loc = g_object_new(
            HBASE2_TYPE_T_H_REGION_LOCATION, NULL);

        emu_handler2_fill_location(self, loc, t, i);
        g_ptr_array_add(*ret, loc);
    }
    return TRUE;
}

/* ---- accessors for emu_admin2.c ---- */

emu_store *emu_handler2_store(EmuHandler2 *self)
{
    return self->store;
}

const struct emu_handler_options *emu_handler2_options(EmuHandler2 *self)
{
    return &self->opts;
}

/* ---- GObject ---- */

static void emu_handler2_init(EmuHandler2 *self)
{
}

static void emu_handler2_class_init(EmuHandler2Class *klass)
{
    Hbase2THBaseServiceHandlerClass *h = HBASE2_T_H_BASE_SERVICE_HANDLER_CLASS(
        klass);

    h->exists = emu_handler2_exists;
    h->exists_all = emu_handler2_exists_all;
    h->get = emu_handler2_get;
    h->get_multiple = emu_handler2_get_multiple;
    h->put = emu_handler2_put;
    h->check_and_put = emu_handler2_check_and_put;
    h->put_multiple = emu_handler2_put_multiple;
    h->delete_single = emu_handler2_delete_single;
    h->delete_multiple = emu_handler2_delete_multiple;
    h->check_and_delete = emu_handler2_check_and_delete;
    h->increment = emu_handler2_increment;
    h->append = emu_handler2_append;
    h->open_scanner = emu_handler2_open_scanner;
    h->get_scanner_rows = emu_handler2_get_scanner_rows;
    h->close_scanner = emu_handler2_close_scanner;
    h->mutate_row = emu_handler2_mutate_row;
    h->get_scanner_results = emu_handler2_get_scanner_results;
    h->get_region_location = emu_handler2_get_region_location;
    h->get_all_region_locations = emu_handler2_get_all_region_locations;
    h->check_and_mutate = emu_handler2_check_and_mutate;
    emu_admin2_class_init(h);
}

EmuHandler2 *emu_handler2_new(emu_store *store,
                              const struct emu_handler_options *opts)
{
    EmuHandler2 *self = g_object_new(EMU_TYPE_HANDLER2, NULL);

    self->store = store;
    self->opts = *opts;
    return self;
}
