/* emu_handler.c: the Thrift1 Hbase service implemented over the emulator's store. */
#include "emu_handler.h"

#include <string.h>

#include "emu_result.h"
#include "emu_scanner.h"

/*
 * Each method follows HBase's ThriftHBaseServiceHandler: the same column
 * parsing, the same exception for the same mistake (declared ones as
 * IOError/IllegalArgument/AlreadyExists, undeclared ones as the
 * TApplicationException libthrift sends), and the same quirks.
 */

#define EMU_APP_INTERNAL_ERROR 6

struct _EmuHandler {
    HbaseHbaseHandler parent;
    emu_store *store;
    struct emu_handler_options opts;
};

G_DEFINE_TYPE(EmuHandler, emu_handler, HBASE_TYPE_HBASE_HANDLER)

GQuark emu_handler_error_quark(void);
G_DEFINE_QUARK(emu_handler_error_quark, emu_handler_error)

#define EMU_DATA(b) ((const uint8_t *)((b) != NULL ? (b)->data : NULL))
#define EMU_LEN(b) ((size_t)((b) != NULL ? (b)->len : 0))

/* ---- errors ---- */

static void emu_handler_internal(GError **error, const char *method)
{
    g_set_error(error, emu_handler_error_quark(), EMU_APP_INTERNAL_ERROR,
                "Internal error processing %s", method);
}

/*
 * Thrift1's IOError message is the exception's toString(), "Class:
 * message".  What a region server threw reaches the client as a
 * RemoteException unwrapped into the same class whose message is the
 * remote toString(), so the class name shows twice.  The region-side
 * errors a single-row call meets: these.
 */
static char *emu_handler_remote_message(const char *msg)
{
    static const char *const remote[] = {
        "org.apache.hadoop.hbase.regionserver.NoSuchColumnFamilyException: ",
        "org.apache.hadoop.hbase.DoNotRetryIOException: Field is not a long",
    };

    for (guint i = 0; i < G_N_ELEMENTS(remote); i++) {
        const char *colon = strchr(remote[i], ':');

        if (g_str_has_prefix(msg, remote[i])) {
            return g_strdup_printf("%.*s: %s", (int)(colon - remote[i]),
                                   remote[i], msg);
        }
    }
    return g_strdup(msg);
}

#define EMU_HBASE "org.apache.hadoop.hbase."

/*
 * Thrift1 admin refusals as HBase 2.6.1 words them.  The master's reach
 * the client as unwrapped RemoteExceptions ("Class: Class: message", see
 * emu_handler_remote_message), in its procedures' words; enableTable of
 * an enabled table and compact of a missing one are the client's own.
 * Takes err; returns the error to answer.
 */
static GError *emu_handler_admin_error(GError *err, const char *method,
                                       const GByteArray *name)
{
    static const char *const not_found = EMU_HBASE "TableNotFoundException: ";
    static const char *const not_enabled = EMU_HBASE
        "TableNotEnabledException: ";
    static const char *const not_disabled = EMU_HBASE
        "TableNotDisabledException: ";
    const char *m = err->message;
    g_autoptr(GString) tn = g_string_new(NULL);
    GError *out = NULL;

    emu_store_append_binary(tn, EMU_DATA(name), EMU_LEN(name));
    if (strcmp(method, "enableTable") == 0 &&
        g_str_has_prefix(m, not_disabled)) {
        out = g_error_new(EMU_STORE_ERROR, err->code,
                          "%stableName=%s, state=ENABLED", not_disabled,
                          tn->str);
    } else if (strcmp(method, "deleteTable") == 0 &&
               g_str_has_prefix(m, not_disabled)) {
        out = g_error_new(EMU_STORE_ERROR, err->code,
                          "%s%sNot DISABLED; tableName=%s, state=ENABLED",
                          not_disabled, not_disabled, tn->str);
    } else if (strcmp(method, "disableTable") == 0 &&
               (g_str_has_prefix(m, not_found) ||
                g_str_has_prefix(m, not_enabled))) {
        out = g_error_new(EMU_STORE_ERROR, err->code, "%.*s%s",
                          (int)(strchr(m, ':') - m + 2), m, m);
    } else if (strcmp(method, "compact") == 0 &&
               g_str_has_prefix(m, "java.lang.IllegalArgumentException: "
                                   "Invalid table or region name")) {
        out = g_error_new(EMU_STORE_ERROR, EMU_STORE_ERROR_IO_NORETRY, "%s%s",
                          not_found, tn->str);
    } else if (strcmp(method, "createTable") == 0 &&
               strcmp(m, EMU_STORE_NO_FAMILY_MESSAGE) == 0) {
        out = g_error_new(EMU_STORE_ERROR, EMU_STORE_ERROR_IO_NORETRY,
                          EMU_HBASE "DoNotRetryIOException: %s", m);
    } else if (strcmp(method, "createTable") == 0 &&
               strstr(m, "User-space table qualifiers") != NULL) {
        /* TableName.valueOf's IllegalArgumentException escapes */
        out = g_error_new_literal(EMU_STORE_ERROR, EMU_STORE_ERROR_INTERNAL,
                                  m);
    }
    if (out == NULL) {
        return err;
    }
    g_error_free(err);
    return out;
}

/* Turns a store error into the exception the method declares. */
static gboolean emu_handler_fail(GError *err, const char *method,
                                 HbaseIOError **io, HbaseIllegalArgument **ia,
                                 HbaseAlreadyExists **exist, GError **error)
{
    g_autoptr(GError) e = err;
    int code = e ? e->code : EMU_STORE_ERROR_INTERNAL;

    if (code == EMU_STORE_ERROR_ILLEGAL && ia != NULL) {
        *ia = g_object_new(HBASE_TYPE_ILLEGAL_ARGUMENT, "message", e->message,
                           NULL);
    } else if (code == EMU_STORE_ERROR_EXISTS && exist != NULL) {
        *exist = g_object_new(HBASE_TYPE_ALREADY_EXISTS, "message", e->message,
                              NULL);
    } else if (code != EMU_STORE_ERROR_INTERNAL && io != NULL) {
        g_autofree char *msg = emu_handler_remote_message(e->message);

        *io = g_object_new(HBASE_TYPE_I_O_ERROR, "message", msg, "canRetry",
                           code == EMU_STORE_ERROR_IO, NULL);
    } else {
        emu_handler_internal(error, method);
    }
    return FALSE;
}

static GError *emu_handler_err(int code, const char *msg)
{
    return g_error_new_literal(EMU_STORE_ERROR, code, msg);
}

/* Get/Put/Delete refuse an empty or over-long row with an
 * IllegalArgumentException; whether that is declared depends on the
 * method, so the caller picks the code. */
static GError *emu_handler_check_row(const GByteArray *row, int code)
{
    if (EMU_LEN(row) == 0) {
        return emu_handler_err(code, "java.lang.IllegalArgumentException: "
                                     "Row length is 0");
    }
    if (EMU_LEN(row) > 32767) {
        return g_error_new(EMU_STORE_ERROR, code,
                           "java.lang.IllegalArgumentException: Row length "
                           "%u is > 32767",
                           row->len);
    }
    return NULL;
}

/* ---- shared read paths ---- */

static emu_colspec *emu_handler_colspec(emu_table *t, const GPtrArray *cols,
                                        GError **error)
{
    g_autoptr(emu_colspec) spec = emu_colspec_new(t);

    if (!emu_colspec_add_all(spec, t, cols, error)) {
        return NULL;
    }
    return g_steal_pointer(&spec);
}

/* The cells of one row under a read; empty when the row is missing. */
static void emu_handler_read_row(emu_table *t, const GByteArray *row,
                                 const struct emu_read *rd, GArray *cells)
{
    emu_row *r = emu_table_row_find(t, EMU_DATA(row), EMU_LEN(row));

    if (r != NULL) {
        emu_row_cells(t, r, rd, cells);
    }
}

static gboolean emu_handler_get_cells(EmuHandler *self, GPtrArray *ret,
                                      const GByteArray *table,
                                      const GByteArray *row,
                                      const GByteArray *column, int64_t ts,
                                      int32_t versions, const char *method,
                                      HbaseIOError **io, GError **error)
{
    GError *err = emu_handler_check_row(row, EMU_STORE_ERROR_INTERNAL);
    g_autoptr(emu_table) t = NULL;
    g_autoptr(emu_colspec) spec = NULL;
    g_autoptr(GArray) cells = NULL;
    struct emu_guard g;

    if (err != NULL) {
        return emu_handler_fail(err, method, io, NULL, NULL, error);
    }
    if (ts < 0) {
        return emu_handler_fail(NULL, method, io, NULL, NULL, error);
    }
    if (versions <= 0) {
        /* Get.readVersions, before the table is looked up: a plain
         * IOException, so canRetry */
        return emu_handler_fail(
            emu_handler_err(EMU_STORE_ERROR_IO,
                            "java.io.IOException: versions must be "
                            "positive"),
            method, io, NULL, NULL, error);
    }
    t = emu_store_table_ref(self->store, EMU_DATA(table), EMU_LEN(table), TRUE,
                            &err);
    if (t == NULL) {
        return emu_handler_fail(err, method, io, NULL, NULL, error);
    }
    spec = emu_colspec_new(t);
    if (!emu_colspec_add(spec, t, EMU_DATA(column), EMU_LEN(column), &err)) {
        return emu_handler_fail(err, method, io, NULL, NULL, error);
    }
    struct emu_read rd = { spec, ts, versions };
    cells = g_array_new(FALSE, FALSE, sizeof(struct emu_cell));
    emu_guard_enter1(&g, &self->opts, t, EMU_DATA(row), EMU_LEN(row));
    emu_table_read_lock(t);
    emu_handler_read_row(t, row, &rd, cells);
    emu_result_add_cells(ret, (const struct emu_cell *)(void *)cells->data,
                         cells->len);
    emu_table_read_unlock(t);
    if (cells->len > 0) {
        __atomic_fetch_add(
            &emu_table_region(t, g_array_index(g.regions, guint, 0))
                 ->rows_read,
            1, __ATOMIC_RELAXED);
    }
    emu_guard_leave(&g);
    return TRUE;
}

static gboolean emu_handler_get_rows(EmuHandler *self, GPtrArray *ret,
                                     const GByteArray *table,
                                     const GPtrArray *rows,
                                     const GPtrArray *columns, int64_t ts,
                                     const char *method, HbaseIOError **io,
                                     GError **error)
{
    GError *err = NULL;
    g_autoptr(emu_table) t = NULL;
    g_autoptr(emu_colspec) spec = NULL;
    g_autoptr(GArray) cells = g_array_new(FALSE, FALSE,
                                          sizeof(struct emu_cell));
    g_autofree const uint8_t **keys = NULL;
    g_autofree size_t *lens = NULL;
    guint n = rows ? rows->len : 0;
    struct emu_guard g;

    for (guint i = 0; i < n; i++) {
        err = emu_handler_check_row(g_ptr_array_index(rows, i),
                                    EMU_STORE_ERROR_INTERNAL);
        if (err != NULL) {
            return emu_handler_fail(err, method, io, NULL, NULL, error);
        }
    }
    if (ts < 0) {
        return emu_handler_fail(NULL, method, io, NULL, NULL, error);
    }
    t = emu_store_table_ref(self->store, EMU_DATA(table), EMU_LEN(table), TRUE,
                            &err);
    if (t == NULL) {
        /* getRows*: table.get(List<Get>), one action a row (getRow* is
         * one Get) */
        return emu_handler_fail(g_str_has_prefix(method, "getRows")
                                    ? emu_store_batch_error(err, n)
                                    : err,
                                method, io, NULL, NULL, error);
    }
    spec = emu_handler_colspec(t, columns, &err);
    if (spec == NULL) {
        return emu_handler_fail(err, method, io, NULL, NULL, error);
    }
    struct emu_read rd = { spec, ts, 1 };
    keys = g_new(const uint8_t *, n + 1);
    lens = g_new(size_t, n + 1);
    for (guint i = 0; i < n; i++) {
        const GByteArray *r = g_ptr_array_index(rows, i);

        keys[i] = EMU_DATA(r);
        lens[i] = EMU_LEN(r);
    }
    emu_guard_enter(&g, &self->opts, t, keys, lens, n);
    emu_table_read_lock(t);
    for (guint i = 0; i < n; i++) {
        g_array_set_size(cells, 0);
        emu_handler_read_row(t, g_ptr_array_index(rows, i), &rd, cells);
        if (cells->len == 0) {
            continue; /* missing rows are left out, order kept */
        }
        emu_result_add_row(ret, keys[i], lens[i],
                           (const struct emu_cell *)(void *)cells->data,
                           cells->len, FALSE, 0);
        __atomic_fetch_add(
            &emu_table_region(t, emu_table_region_of(t, keys[i], lens[i]))
                 ->rows_read,
            1, __ATOMIC_RELAXED);
    }
    emu_table_read_unlock(t);
    emu_guard_leave(&g);
    return TRUE;
}

/* ---- mutations ---- */

/*
 * Parses Thrift Mutations into store mutations.  A put without a
 * qualifier is skipped (mutateRow) or refused (mutateRows, strict).
 */
static gboolean emu_handler_parse_muts(emu_table *t, const GPtrArray *ms,
                                       gboolean strict, GArray *out,
                                       GError **error)
{
    for (guint i = 0; ms != NULL && i < ms->len; i++) {
        const HbaseMutation *m = g_ptr_array_index(ms, i);
        struct emu_mut mu = { 0 };
        size_t fam_len;
        gboolean has_qual = emu_store_parse_column(
            EMU_DATA(m->column), EMU_LEN(m->column), &fam_len, &mu.qual,
            &mu.qual_len);

        if (!m->isDelete && !has_qual) {
            if (strict) {
                g_set_error_literal(error, EMU_STORE_ERROR,
                                    EMU_STORE_ERROR_ILLEGAL,
                                    "java.lang.IllegalArgumentException: "
                                    "Invalid famAndQf provided.");
                return FALSE;
            }
            g_debug("no column qualifier specified, put ignored");
            continue;
        }
        if (!m->isDelete && fam_len == 0) {
            /* Put.addImmutable's cell builder */
            g_set_error_literal(error, EMU_STORE_ERROR,
                                EMU_STORE_ERROR_ILLEGAL,
                                "java.lang.IllegalArgumentException: "
                                "Family cannot be null");
            return FALSE;
        }
        if (t == NULL) {
            continue; /* syntax pass only */
        }
        if (!emu_table_family_index(t, EMU_DATA(m->column), fam_len, &mu.fam,
                                    error)) {
            return FALSE;
        }
        if (m->isDelete) {
            mu.kind = has_qual ? EMU_MUT_DELETE_COLUMN : EMU_MUT_DELETE_FAMILY;
        } else {
            mu.kind = EMU_MUT_PUT;
            mu.value = EMU_DATA(m->value) ? EMU_DATA(m->value)
                                          : (const uint8_t *)"";
            mu.value_len = EMU_LEN(m->value);
        }
        g_array_append_val(out, mu);
    }
    return TRUE;
}

static gboolean emu_handler_mutate_row_ts(
    HbaseHbaseIf *iface, const GByteArray *table, const GByteArray *row,
    const GPtrArray *mutations, int64_t ts, const char *method,
    HbaseIOError **io, HbaseIllegalArgument **ia, GError **error)
{
    EmuHandler *self = EMU_HANDLER(iface);
    GError *err = NULL;
    g_autoptr(emu_table) t = NULL;
    g_autoptr(GArray) muts = g_array_new(FALSE, FALSE, sizeof(struct emu_mut));
    struct emu_guard g;

    /* the Put and Delete are built (new Put(row), addImmutable) before
     * the table is asked for anything */
    err = emu_handler_check_row(row, EMU_STORE_ERROR_ILLEGAL);
    if (err == NULL &&
        emu_handler_parse_muts(NULL, mutations, FALSE, muts, &err)) {
        t = emu_store_table_ref(self->store, EMU_DATA(table), EMU_LEN(table),
                                TRUE, &err);
    }
    if (t == NULL) {
        return emu_handler_fail(err, method, io, ia, NULL, error);
    }
    /* table.delete(delete), then table.put(put): two calls, so a Put
     * the region refuses (a missing family) leaves the Delete applied */
    emu_guard_enter1(&g, &self->opts, t, EMU_DATA(row), EMU_LEN(row));
    for (int pass = 0; pass < 2 && err == NULL; pass++) {
        g_autoptr(GPtrArray) part = g_ptr_array_new();

        for (guint i = 0; mutations != NULL && i < mutations->len; i++) {
            const HbaseMutation *m = g_ptr_array_index(mutations, i);

            if (m->isDelete == (pass == 0)) {
                g_ptr_array_add(part, (gpointer)m);
            }
        }
        g_array_set_size(muts, 0);
        if (!emu_handler_parse_muts(t, part, FALSE, muts, &err) ||
            muts->len == 0) {
            continue;
        }
        emu_table_write_lock(t);
        emu_table_mutate(t, row->data, row->len,
                         (const struct emu_mut *)(void *)muts->data, muts->len,
                         ts);
        emu_table_write_unlock(t);
    }
    emu_guard_leave(&g);
    if (err != NULL) {
        return emu_handler_fail(err, method, io, ia, NULL, error);
    }
    return TRUE;
}

/* mutateRows: every put first, then every delete, as HBase's handler
 * sends table.put(puts) before table.delete(deletes). */
static gboolean emu_handler_mutate_rows_ts(
    HbaseHbaseIf *iface, const GByteArray *table, const GPtrArray *batches,
    int64_t ts, const char *method, HbaseIOError **io,
    HbaseIllegalArgument **ia, GError **error)
{
    EmuHandler *self = EMU_HANDLER(iface);
    GError *err = NULL;
    g_autoptr(emu_table) t = NULL;
    guint n = batches ? batches->len : 0;
    g_autofree const uint8_t **keys = g_new(const uint8_t *, n + 1);
    g_autofree size_t *lens = g_new(size_t, n + 1);
    g_autoptr(GPtrArray) parsed = g_ptr_array_new_with_free_func(
        (GDestroyNotify)g_array_unref);
    struct emu_guard g;

    /* The handler builds every Put and Delete before touching the table. */
    for (guint i = 0; i < n; i++) {
        const HbaseBatchMutation *b = g_ptr_array_index(batches, i);
        g_autoptr(GArray) tmp = g_array_new(FALSE, FALSE,
                                            sizeof(struct emu_mut));

        err = emu_handler_check_row(b->row, EMU_STORE_ERROR_INTERNAL);
        if (err != NULL) {
            return emu_handler_fail(err, method, io, ia, NULL, error);
        }
        if (!emu_handler_parse_muts(NULL, b->mutations, TRUE, tmp, &err)) {
            return emu_handler_fail(err, method, io, ia, NULL, error);
        }
    }
    t = emu_store_table_ref(self->store, EMU_DATA(table), EMU_LEN(table), TRUE,
                            &err);
    if (t == NULL) {
        return emu_handler_fail(err, method, io, ia, NULL, error);
    }
    for (guint i = 0; i < n; i++) {
        const HbaseBatchMutation *b = g_ptr_array_index(batches, i);
        GArray *m = g_array_new(FALSE, FALSE, sizeof(struct emu_mut));

        g_ptr_array_add(parsed, m);
        if (!emu_handler_parse_muts(t, b->mutations, TRUE, m, &err)) {
            return emu_handler_fail(err, method, io, ia, NULL, error);
        }
        keys[i] = b->row->data;
        lens[i] = b->row->len;
    }
    emu_guard_enter(&g, &self->opts, t, keys, lens, n);
    emu_table_write_lock(t);
    for (int pass = 0; pass < 2; pass++) {
        for (guint i = 0; i < n; i++) {
            GArray *m = g_ptr_array_index(parsed, i);
            g_autoptr(GArray) sel = g_array_new(FALSE, FALSE,
                                                sizeof(struct emu_mut));

            for (guint j = 0; j < m->len; j++) {
                struct emu_mut *mu = &g_array_index(m, struct emu_mut, j);

                if ((mu->kind == EMU_MUT_PUT) == (pass == 0)) {
                    g_array_append_val(sel, *mu);
                }
            }
            if (sel->len > 0) {
                emu_table_mutate(t, keys[i], lens[i],
                                 (const struct emu_mut *)(void *)sel->data,
                                 sel->len, ts);
            }
        }
    }
    emu_table_write_unlock(t);
    emu_guard_leave(&g);
    return TRUE;
}

/* ---- Hbase methods: admin ---- */

static gboolean emu_handler_enable_table(HbaseHbaseIf *iface,
                                         const HbaseBytes name,
                                         HbaseIOError **io, GError **error)
{
    EmuHandler *self = EMU_HANDLER(iface);
    GError *err = NULL;

    emu_guard_latency(&self->opts);
    if (!emu_store_set_enabled(self->store, EMU_DATA(name), EMU_LEN(name),
                               TRUE, &err)) {
        return emu_handler_fail(
            emu_handler_admin_error(err, "enableTable", name), "enableTable",
            io, NULL, NULL, error);
    }
    return TRUE;
}

static gboolean emu_handler_disable_table(HbaseHbaseIf *iface,
                                          const HbaseBytes name,
                                          HbaseIOError **io, GError **error)
{
    EmuHandler *self = EMU_HANDLER(iface);
    GError *err = NULL;

    emu_guard_latency(&self->opts);
    if (!emu_store_set_enabled(self->store, EMU_DATA(name), EMU_LEN(name),
                               FALSE, &err)) {
        return emu_handler_fail(
            emu_handler_admin_error(err, "disableTable", name), "disableTable",
            io, NULL, NULL, error);
    }
    return TRUE;
}

static gboolean emu_handler_is_table_enabled(HbaseHbaseIf *iface,
                                             gboolean *ret,
                                             const HbaseBytes name,
                                             HbaseIOError **io, GError **error)
{
    EmuHandler *self = EMU_HANDLER(iface);
    GError *err = NULL;
    g_autoptr(emu_table) t = NULL;

    emu_guard_latency(&self->opts);
    t = emu_store_table_ref(self->store, EMU_DATA(name), EMU_LEN(name), FALSE,
                            &err);
    if (t == NULL) {
        return emu_handler_fail(err, "isTableEnabled", io, NULL, NULL, error);
    }
    *ret = emu_table_is_live(t, NULL);
    return TRUE;
}

static gboolean emu_handler_compact_common(HbaseHbaseIf *iface,
                                           const HbaseBytes name,
                                           gboolean major, HbaseIOError **io,
                                           GError **error)
{
    EmuHandler *self = EMU_HANDLER(iface);
    GError *err = NULL;

    emu_guard_latency(&self->opts);
    if (!emu_store_compact(self->store, EMU_DATA(name), EMU_LEN(name), major,
                           &err)) {
        return emu_handler_fail(emu_handler_admin_error(err, "compact", name),
                                major ? "majorCompact" : "compact", io, NULL,
                                NULL, error);
    }
    return TRUE;
}

static gboolean emu_handler_compact(HbaseHbaseIf *iface, const HbaseBytes name,
                                    HbaseIOError **io, GError **error)
{
    return emu_handler_compact_common(iface, name, FALSE, io, error);
}

static gboolean emu_handler_major_compact(HbaseHbaseIf *iface,
                                          const HbaseBytes name,
                                          HbaseIOError **io, GError **error)
{
    return emu_handler_compact_common(iface, name, TRUE, io, error);
}

static GByteArray *emu_handler_bytes(const void *p, size_t len)
{
    GByteArray *b = g_byte_array_sized_new((guint)len);

    g_byte_array_append(b, p, (guint)len);
    return b;
}

static gboolean emu_handler_get_table_names(HbaseHbaseIf *iface,
                                            GPtrArray **ret, HbaseIOError **io,
                                            GError **error)
{
    EmuHandler *self = EMU_HANDLER(iface);
    g_autoptr(GPtrArray) names = NULL;

    emu_guard_latency(&self->opts);
    names = emu_store_table_names(self->store, NULL);
    for (guint i = 0; i < names->len; i++) {
        const char *n = g_ptr_array_index(names, i);

        g_ptr_array_add(*ret, emu_handler_bytes(n, strlen(n)));
    }
    return TRUE;
}

static gboolean emu_handler_get_table_names_with_is_table_enabled(
    HbaseHbaseIf *iface, GHashTable **ret, HbaseIOError **io, GError **error)
{
    EmuHandler *self = EMU_HANDLER(iface);
    g_autoptr(GPtrArray) names = NULL;
    g_autoptr(GArray) enabled = NULL;

    emu_guard_latency(&self->opts);
    names = emu_store_table_names(self->store, &enabled);
    for (guint i = 0; i < names->len; i++) {
        const char *n = g_ptr_array_index(names, i);
        gboolean *v = g_new(gboolean, 1);

        *v = g_array_index(enabled, gboolean, i);
        g_hash_table_insert(*ret, emu_handler_bytes(n, strlen(n)), v);
    }
    return TRUE;
}

static gboolean emu_handler_get_column_descriptors(HbaseHbaseIf *iface,
                                                   GHashTable **ret,
                                                   const HbaseText name,
                                                   HbaseIOError **io,
                                                   GError **error)
{
    EmuHandler *self = EMU_HANDLER(iface);
    GError *err = NULL;
    g_autoptr(emu_table) t = NULL;

    emu_guard_latency(&self->opts);
    t = emu_store_table_ref(self->store, EMU_DATA(name), EMU_LEN(name), FALSE,
                            &err);
    if (t == NULL) {
        return emu_handler_fail(err, "getColumnDescriptors", io, NULL, NULL,
                                error);
    }
    for (guint i = 0; i < emu_table_family_count(t); i++) {
        const struct emu_family *f = emu_table_family(t, i);
        HbaseColumnDescriptor *cd = g_object_new(
            HBASE_TYPE_COLUMN_DESCRIPTOR, "maxVersions", f->max_versions,
            "compression", f->compression, "inMemory", f->in_memory,
            "bloomFilterType", f->bloom_type, "bloomFilterVectorSize",
            f->bloom_vector_size, "bloomFilterNbHashes", f->bloom_nb_hashes,
            "blockCacheEnabled", f->block_cache, "timeToLive", f->ttl, NULL);
        GByteArray *key = emu_handler_bytes(f->name, f->name_len);

        g_byte_array_append(key, (const guint8 *)":", 1);
        cd->name = emu_handler_bytes(key->data, key->len);
        cd->__isset_name = TRUE;
        g_hash_table_insert(*ret, key, cd);
    }
    return TRUE;
}

static void emu_handler_fill_region(EmuHandler *self, HbaseTRegionInfo *ri,
                                    emu_table *t, guint i)
{
    const struct emu_store_config *cfg = emu_store_get_config(self->store);
    struct emu_region *reg = emu_table_region(t, i);
    gsize l;
    const void *p;

    p = g_bytes_get_data(reg->start, &l);
    ri->startKey = emu_handler_bytes(p, l);
    p = g_bytes_get_data(reg->end, &l);
    ri->endKey = emu_handler_bytes(p, l);
    p = g_bytes_get_data(reg->name, &l);
    ri->name = emu_handler_bytes(p, l);
    ri->id = reg->id;
    ri->version = 1;
    ri->serverName = emu_handler_bytes(cfg->server_name,
                                       strlen(cfg->server_name));
    ri->port = cfg->server_port;
    ri->__isset_startKey = ri->__isset_endKey = ri->__isset_name = TRUE;
    ri->__isset_id = ri->__isset_version = TRUE;
    ri->__isset_serverName = ri->__isset_port = TRUE;
}

static gboolean emu_handler_get_table_regions(HbaseHbaseIf *iface,
                                              GPtrArray **ret,
                                              const HbaseText name,
                                              HbaseIOError **io,
                                              GError **error)
{
    EmuHandler *self = EMU_HANDLER(iface);
    g_autoptr(emu_table) t = NULL;

    emu_guard_latency(&self->opts);
    t = emu_store_table_ref(self->store, EMU_DATA(name), EMU_LEN(name), FALSE,
                            NULL);
    if (t == NULL) {
        return TRUE; /* HBase answers an empty list for a missing table */
    }
    for (guint i = 0; i < emu_table_region_count(t); i++) {
        HbaseTRegionInfo *ri = g_object_new(HBASE_TYPE_T_REGION_INFO, NULL);

        emu_handler_fill_region(self, ri, t, i);
        g_ptr_array_add(*ret, ri);
    }
    return TRUE;
}

static gboolean emu_handler_create_table(
    HbaseHbaseIf *iface, const HbaseText name, const GPtrArray *cfs,
    HbaseIOError **io, HbaseIllegalArgument **ia, HbaseAlreadyExists **exist,
    GError **error)
{
    EmuHandler *self = EMU_HANDLER(iface);
    GError *err = NULL;
    g_autoptr(GPtrArray) fams = g_ptr_array_new_with_free_func(
        emu_family_free);

    emu_guard_latency(&self->opts);
    for (guint i = 0; cfs != NULL && i < cfs->len; i++) {
        const HbaseColumnDescriptor *cd = g_ptr_array_index(cfs, i);
        struct emu_family *f = g_new0(struct emu_family, 1);
        size_t fam_len;
        const uint8_t *q;
        size_t ql;

        g_ptr_array_add(fams, f);
        emu_store_parse_column(EMU_DATA(cd->name), EMU_LEN(cd->name), &fam_len,
                               &q, &ql);
        f->name = (uint8_t *)g_strndup((const char *)EMU_DATA(cd->name),
                                       fam_len);
        f->name_len = fam_len;
        if (fam_len == 0 || f->name[0] == '.' ||
            memchr(f->name, 0, fam_len) != NULL) {
            err = emu_handler_err(EMU_STORE_ERROR_ILLEGAL,
                                  fam_len == 0
                                      ? "java.lang.IllegalArgumentException: "
                                        "Column Family name can not be empty"
                                      : "java.lang.IllegalArgumentException: "
                                        "Illegal column family name");
            return emu_handler_fail(err, "createTable", io, ia, exist, error);
        }
        if (cd->maxVersions <= 0) {
            err = emu_handler_err(EMU_STORE_ERROR_ILLEGAL,
                                  "java.lang.IllegalArgumentException: "
                                  "Maximum versions must be positive");
            return emu_handler_fail(err, "createTable", io, ia, exist, error);
        }
        f->max_versions = cd->maxVersions;
        f->compression = g_ascii_strup(
            cd->compression ? cd->compression : "NONE", -1);
        f->bloom_type = g_ascii_strup(
            cd->bloomFilterType ? cd->bloomFilterType : "NONE", -1);
        f->in_memory = cd->inMemory;
        f->block_cache = cd->blockCacheEnabled;
        f->ttl = cd->timeToLive <= 0 ? G_MAXINT32 : cd->timeToLive;
        f->bloom_vector_size = cd->bloomFilterVectorSize;
        f->bloom_nb_hashes = cd->bloomFilterNbHashes;
    }
    if (!emu_store_create_table(self->store, EMU_DATA(name), EMU_LEN(name),
                                fams, &err)) {
        return emu_handler_fail(
            emu_handler_admin_error(err, "createTable", name), "createTable",
            io, ia, exist, error);
    }
    return TRUE;
}

static gboolean emu_handler_delete_table(HbaseHbaseIf *iface,
                                         const HbaseText name,
                                         HbaseIOError **io, GError **error)
{
    EmuHandler *self = EMU_HANDLER(iface);
    GError *err = NULL;

    emu_guard_latency(&self->opts);
    if (!emu_store_delete_table(self->store, EMU_DATA(name), EMU_LEN(name),
                                &err)) {
        return emu_handler_fail(
            emu_handler_admin_error(err, "deleteTable", name), "deleteTable",
            io, NULL, NULL, error);
    }
    return TRUE;
}

/* ---- Hbase methods: reads ---- */

static gboolean emu_handler_get(HbaseHbaseIf *iface, GPtrArray **ret,
                                const HbaseText table, const HbaseText row,
                                const HbaseText column,
                                const GHashTable *attributes,
                                HbaseIOError **io, GError **error)
{
    return emu_handler_get_cells(EMU_HANDLER(iface), *ret, table, row, column,
                                 EMU_LATEST_TS, 1, "get", io, error);
}

static gboolean emu_handler_get_ver(HbaseHbaseIf *iface, GPtrArray **ret,
                                    const HbaseText table, const HbaseText row,
                                    const HbaseText column,
                                    const gint32 versions,
                                    const GHashTable *attributes,
                                    HbaseIOError **io, GError **error)
{
    return emu_handler_get_cells(EMU_HANDLER(iface), *ret, table, row, column,
                                 EMU_LATEST_TS, versions, "getVer", io, error);
}

static gboolean emu_handler_get_ver_ts(HbaseHbaseIf *iface, GPtrArray **ret,
                                       const HbaseText table,
                                       const HbaseText row,
                                       const HbaseText column, const gint64 ts,
                                       const gint32 versions,
                                       const GHashTable *attributes,
                                       HbaseIOError **io, GError **error)
{
    return emu_handler_get_cells(EMU_HANDLER(iface), *ret, table, row, column,
                                 ts, versions, "getVerTs", io, error);
}

static gboolean emu_handler_get_row_common(HbaseHbaseIf *iface, GPtrArray *ret,
                                           const HbaseText table,
                                           const HbaseText row,
                                           const GPtrArray *columns,
                                           int64_t ts, const char *method,
                                           HbaseIOError **io, GError **error)
{
    g_autoptr(GPtrArray) rows = g_ptr_array_new();

    g_ptr_array_add(rows, (gpointer)row);
    return emu_handler_get_rows(EMU_HANDLER(iface), ret, table, rows, columns,
                                ts, method, io, error);
}

static gboolean emu_handler_get_row(HbaseHbaseIf *iface, GPtrArray **ret,
                                    const HbaseText table, const HbaseText row,
                                    const GHashTable *attributes,
                                    HbaseIOError **io, GError **error)
{
    return emu_handler_get_row_common(iface, *ret, table, row, NULL,
                                      EMU_LATEST_TS, "getRow", io, error);
}

static gboolean emu_handler_get_row_with_columns(
    HbaseHbaseIf *iface, GPtrArray **ret, const HbaseText table,
    const HbaseText row, const GPtrArray *columns,
    const GHashTable *attributes, HbaseIOError **io, GError **error)
{
    return emu_handler_get_row_common(iface, *ret, table, row, columns,
                                      EMU_LATEST_TS, "getRowWithColumns", io,
                                      error);
}

static gboolean emu_handler_get_row_ts(HbaseHbaseIf *iface, GPtrArray **ret,
                                       const HbaseText table,
                                       const HbaseText row, const gint64 ts,
                                       const GHashTable *attributes,
                                       HbaseIOError **io, GError **error)
{
    return emu_handler_get_row_common(iface, *ret, table, row, NULL, ts,
                                      "getRowTs", io, error);
}

static gboolean emu_handler_get_row_with_columns_ts(
    HbaseHbaseIf *iface, GPtrArray **ret, const HbaseText table,
    const HbaseText row, const GPtrArray *columns, const gint64 ts,
    const GHashTable *attributes, HbaseIOError **io, GError **error)
{
    return emu_handler_get_row_common(iface, *ret, table, row, columns, ts,
                                      "getRowWithColumnsTs", io, error);
}

static gboolean emu_handler_get_rows_m(HbaseHbaseIf *iface, GPtrArray **ret,
                                       const HbaseText table,
                                       const GPtrArray *rows,
                                       const GHashTable *attributes,
                                       HbaseIOError **io, GError **error)
{
    return emu_handler_get_rows(EMU_HANDLER(iface), *ret, table, rows, NULL,
                                EMU_LATEST_TS, "getRows", io, error);
}

static gboolean emu_handler_get_rows_with_columns(
    HbaseHbaseIf *iface, GPtrArray **ret, const HbaseText table,
    const GPtrArray *rows, const GPtrArray *columns,
    const GHashTable *attributes, HbaseIOError **io, GError **error)
{
    return emu_handler_get_rows(EMU_HANDLER(iface), *ret, table, rows, columns,
                                EMU_LATEST_TS, "getRowsWithColumns", io,
                                error);
}

static gboolean emu_handler_get_rows_ts(HbaseHbaseIf *iface, GPtrArray **ret,
                                        const HbaseText table,
                                        const GPtrArray *rows, const gint64 ts,
                                        const GHashTable *attributes,
                                        HbaseIOError **io, GError **error)
{
    return emu_handler_get_rows(EMU_HANDLER(iface), *ret, table, rows, NULL,
                                ts, "getRowsTs", io, error);
}

static gboolean emu_handler_get_rows_with_columns_ts(
    HbaseHbaseIf *iface, GPtrArray **ret, const HbaseText table,
    const GPtrArray *rows, const GPtrArray *columns, const gint64 ts,
    const GHashTable *attributes, HbaseIOError **io, GError **error)
{
    return emu_handler_get_rows(EMU_HANDLER(iface), *ret, table, rows, columns,
                                ts, "getRowsWithColumnsTs", io, error);
}

/* ---- Hbase methods: writes ---- */

static gboolean emu_handler_mutate_row(
    HbaseHbaseIf *iface, const HbaseText table, const HbaseText row,
    const GPtrArray *mutations, const GHashTable *attributes,
    HbaseIOError **io, HbaseIllegalArgument **ia, GError **error)
{
    return emu_handler_mutate_row_ts(iface, table, row, mutations,
                                     EMU_LATEST_TS, "mutateRow", io, ia,
                                     error);
}

static gboolean emu_handler_mutate_row_ts_m(
    HbaseHbaseIf *iface, const HbaseText table, const HbaseText row,
    const GPtrArray *mutations, const gint64 ts, const GHashTable *attributes,
    HbaseIOError **io, HbaseIllegalArgument **ia, GError **error)
{
    return emu_handler_mutate_row_ts(iface, table, row, mutations, ts,
                                     "mutateRowTs", io, ia, error);
}

static gboolean emu_handler_mutate_rows(
    HbaseHbaseIf *iface, const HbaseText table, const GPtrArray *batches,
    const GHashTable *attributes, HbaseIOError **io, HbaseIllegalArgument **ia,
    GError **error)
{
    return emu_handler_mutate_rows_ts(iface, table, batches, EMU_LATEST_TS,
                                      "mutateRows", io, ia, error);
}

static gboolean emu_handler_mutate_rows_ts_m(
    HbaseHbaseIf *iface, const HbaseText table, const GPtrArray *batches,
    const gint64 ts, const GHashTable *attributes, HbaseIOError **io,
    HbaseIllegalArgument **ia, GError **error)
{
    return emu_handler_mutate_rows_ts(iface, table, batches, ts,
                                      "mutateRowsTs", io, ia, error);
}

/* Table, row and family index for a single-cell read-modify-write. */
static emu_table *emu_handler_cell_target(EmuHandler *self,
                                          const GByteArray *table,
                                          const GByteArray *column,
                                          gboolean need_qual, guint *fam,
                                          const uint8_t **qual,
                                          size_t *qual_len, GError **error)
{
    size_t fam_len;
    g_autoptr(emu_table) t = NULL;
    gboolean has_qual = emu_store_parse_column(
        EMU_DATA(column), EMU_LEN(column), &fam_len, qual, qual_len);

    if (!has_qual && need_qual) {
        /* famAndQf[1] on a one-element array: an undeclared exception. */
        g_set_error_literal(error, EMU_STORE_ERROR, EMU_STORE_ERROR_INTERNAL,
                            "java.lang.ArrayIndexOutOfBoundsException: 1");
        return NULL;
    }
    if (!has_qual) {
        *qual = (const uint8_t *)"";
        *qual_len = 0;
    }
    t = emu_store_table_ref(self->store, EMU_DATA(table), EMU_LEN(table), TRUE,
                            error);
    if (t == NULL) {
        return NULL;
    }
    if (!emu_table_family_index(t, EMU_DATA(column), fam_len, fam, error)) {
        return NULL;
    }
    return g_steal_pointer(&t);
}

static gboolean emu_handler_atomic_increment(
    HbaseHbaseIf *iface, gint64 *ret, const HbaseText table,
    const HbaseText row, const HbaseText column, const gint64 value,
    HbaseIOError **io, HbaseIllegalArgument **ia, GError **error)
{
    EmuHandler *self = EMU_HANDLER(iface);
    GError *err = emu_handler_check_row(row, EMU_STORE_ERROR_INTERNAL);
    g_autoptr(emu_table) t = NULL;
    guint fam;
    const uint8_t *qual;
    size_t qual_len;
    int64_t ts;
    gboolean ok;
    struct emu_guard g;

    if (err != NULL) {
        return emu_handler_fail(err, "atomicIncrement", io, ia, NULL, error);
    }
    t = emu_handler_cell_target(self, table, column, FALSE, &fam, &qual,
                                &qual_len, &err);
    if (t == NULL) {
        return emu_handler_fail(err, "atomicIncrement", io, ia, NULL, error);
    }
    emu_guard_enter1(&g, &self->opts, t, EMU_DATA(row), EMU_LEN(row));
    emu_table_write_lock(t);
    ok = emu_table_increment(t, row->data, row->len, fam, qual, qual_len,
                             value, ret, &ts, &err);
    emu_table_write_unlock(t);
    emu_guard_leave(&g);
    if (!ok) {
        return emu_handler_fail(err, "atomicIncrement", io, ia, NULL, error);
    }
    return TRUE;
}

static gboolean emu_handler_increment_one(EmuHandler *self,
                                          const HbaseTIncrement *inc,
                                          const char *method,
                                          HbaseIOError **io, GError **error)
{
    GError *err = NULL;
    g_autoptr(emu_table) t = NULL;
    guint fam;
    const uint8_t *qual;
    size_t qual_len;
    int64_t result, ts;
    gboolean ok;
    struct emu_guard g;

    /* new Increment(row) refuses a row longer than 32767 bytes with an
     * IllegalArgumentException the handler does not catch */
    if (inc == NULL || EMU_LEN(inc->row) == 0 || EMU_LEN(inc->table) == 0 ||
        EMU_LEN(inc->row) > 32767) {
        return emu_handler_fail(NULL, method, io, NULL, NULL, error);
    }
    t = emu_handler_cell_target(self, inc->table, inc->column, TRUE, &fam,
                                &qual, &qual_len, &err);
    if (t == NULL) {
        return emu_handler_fail(err, method, io, NULL, NULL, error);
    }
    emu_guard_enter1(&g, &self->opts, t, EMU_DATA(inc->row),
                     EMU_LEN(inc->row));
    emu_table_write_lock(t);
    ok = emu_table_increment(t, inc->row->data, inc->row->len, fam, qual,
                             qual_len, inc->ammount, &result, &ts, &err);
    emu_table_write_unlock(t);
    emu_guard_leave(&g);
    if (!ok) {
        return emu_handler_fail(err, method, io, NULL, NULL, error);
    }
    return TRUE;
}

static gboolean emu_handler_increment(HbaseHbaseIf *iface,
                                      const HbaseTIncrement *inc,
                                      HbaseIOError **io, GError **error)
{
    return emu_handler_increment_one(EMU_HANDLER(iface), inc, "increment", io,
                                     error);
}

static gboolean emu_handler_increment_rows(HbaseHbaseIf *iface,
                                           const GPtrArray *incs,
                                           HbaseIOError **io, GError **error)
{
    for (guint i = 0; incs != NULL && i < incs->len; i++) {
        if (!emu_handler_increment_one(EMU_HANDLER(iface),
                                       g_ptr_array_index(incs, i),
                                       "incrementRows", io, error)) {
            return FALSE;
        }
    }
    return TRUE;
}

static gboolean emu_handler_delete_all_ts_common(
    HbaseHbaseIf *iface, const HbaseText table, const HbaseText row,
    const HbaseText column, int64_t ts, const char *method, HbaseIOError **io,
    GError **error)
{
    EmuHandler *self = EMU_HANDLER(iface);
    GError *err = emu_handler_check_row(row, EMU_STORE_ERROR_INTERNAL);
    g_autoptr(emu_table) t = NULL;
    struct emu_mut mu = { 0 };
    size_t fam_len;
    struct emu_guard g;

    if (err != NULL) {
        return emu_handler_fail(err, method, io, NULL, NULL, error);
    }
    t = emu_store_table_ref(self->store, EMU_DATA(table), EMU_LEN(table), TRUE,
                            &err);
    if (t == NULL) {
        return emu_handler_fail(err, method, io, NULL, NULL, error);
    }
    mu.kind = emu_store_parse_column(EMU_DATA(column), EMU_LEN(column),
                                     &fam_len, &mu.qual, &mu.qual_len)
                  ? EMU_MUT_DELETE_COLUMN
                  : EMU_MUT_DELETE_FAMILY;
    if (!emu_table_family_index(t, EMU_DATA(column), fam_len, &mu.fam, &err)) {
        return emu_handler_fail(err, method, io, NULL, NULL, error);
    }
    emu_guard_enter1(&g, &self->opts, t, EMU_DATA(row), EMU_LEN(row));
    emu_table_write_lock(t);
    emu_table_mutate(t, row->data, row->len, &mu, 1, ts);
    emu_table_write_unlock(t);
    emu_guard_leave(&g);
    return TRUE;
}

static gboolean emu_handler_delete_all(HbaseHbaseIf *iface,
                                       const HbaseText table,
                                       const HbaseText row,
                                       const HbaseText column,
                                       const GHashTable *attributes,
                                       HbaseIOError **io, GError **error)
{
    return emu_handler_delete_all_ts_common(
        iface, table, row, column, EMU_LATEST_TS, "deleteAll", io, error);
}

static gboolean emu_handler_delete_all_ts(
    HbaseHbaseIf *iface, const HbaseText table, const HbaseText row,
    const HbaseText column, const gint64 ts, const GHashTable *attributes,
    HbaseIOError **io, GError **error)
{
    return emu_handler_delete_all_ts_common(iface, table, row, column, ts,
                                            "deleteAllTs", io, error);
}

static gboolean emu_handler_delete_row_common(
    HbaseHbaseIf *iface, const HbaseText table, const HbaseText row,
    int64_t ts, const char *method, HbaseIOError **io, GError **error)
{
    EmuHandler *self = EMU_HANDLER(iface);
    GError *err = emu_handler_check_row(row, EMU_STORE_ERROR_INTERNAL);
    g_autoptr(emu_table) t = NULL;
    struct emu_guard g;

    if (err != NULL) {
        return emu_handler_fail(err, method, io, NULL, NULL, error);
    }
    t = emu_store_table_ref(self->store, EMU_DATA(table), EMU_LEN(table), TRUE,
                            &err);
    if (t == NULL) {
        return emu_handler_fail(err, method, io, NULL, NULL, error);
    }
    emu_guard_enter1(&g, &self->opts, t, EMU_DATA(row), EMU_LEN(row));
    emu_table_write_lock(t);
    emu_table_delete_row(t, row->data, row->len, ts);
    emu_table_write_unlock(t);
    emu_guard_leave(&g);
    return TRUE;
}

static gboolean emu_handler_delete_all_row(HbaseHbaseIf *iface,
                                           const HbaseText table,
                                           const HbaseText row,
                                           const GHashTable *attributes,
                                           HbaseIOError **io, GError **error)
{
    return emu_handler_delete_row_common(iface, table, row, EMU_LATEST_TS,
                                         "deleteAllRow", io, error);
}

static gboolean emu_handler_delete_all_row_ts(
    HbaseHbaseIf *iface, const HbaseText table, const HbaseText row,
    const gint64 ts, const GHashTable *attributes, HbaseIOError **io,
    GError **error)
{
    return emu_handler_delete_row_common(iface, table, row, ts,
                                         "deleteAllRowTs", io, error);
}

static gboolean emu_handler_append(HbaseHbaseIf *iface, GPtrArray **ret,
                                   const HbaseTAppend *app, HbaseIOError **io,
                                   GError **error)
{
    EmuHandler *self = EMU_HANDLER(iface);
    GError *err = NULL;
    g_autoptr(emu_table) t = NULL;
    g_autoptr(GArray) cells = g_array_new(FALSE, FALSE,
                                          sizeof(struct emu_cell));
    g_autoptr(GPtrArray) values = g_ptr_array_new_with_free_func(
        (GDestroyNotify)g_byte_array_unref);
    guint n;
    struct emu_guard g;

    /* new Append(row) refuses an over-long row as Increment does */
    if (app == NULL || EMU_LEN(app->row) == 0 || EMU_LEN(app->table) == 0 ||
        EMU_LEN(app->row) > 32767 || app->columns == NULL ||
        app->values == NULL || app->columns->len != app->values->len) {
        return emu_handler_fail(NULL, "append", io, NULL, NULL, error);
    }
    n = app->columns->len;
    /* appendFromThrift builds the Append first: a column without a family
     * is the cell builder's IllegalArgumentException, table or not */
    for (guint i = 0; i < n; i++) {
        const GByteArray *c = g_ptr_array_index(app->columns, i);
        size_t fam_len, ql;
        const uint8_t *q;

        if (!emu_store_parse_column(EMU_DATA(c), EMU_LEN(c), &fam_len, &q,
                                    &ql) ||
            fam_len == 0) {
            return emu_handler_fail(NULL, "append", io, NULL, NULL, error);
        }
    }
    t = emu_store_table_ref(self->store, EMU_DATA(app->table),
                            EMU_LEN(app->table), TRUE, &err);
    if (t == NULL) {
        return emu_handler_fail(err, "append", io, NULL, NULL, error);
    }
    /* Every column must name an existing family before anything changes. */
    for (guint i = 0; i < n; i++) {
        const GByteArray *c = g_ptr_array_index(app->columns, i);
        size_t fam_len, ql;
        const uint8_t *q;
        guint fam;

        emu_store_parse_column(EMU_DATA(c), EMU_LEN(c), &fam_len, &q, &ql);
        if (!emu_table_family_index(t, EMU_DATA(c), fam_len, &fam, &err)) {
            return emu_handler_fail(err, "append", io, NULL, NULL, error);
        }
    }
    emu_guard_enter1(&g, &self->opts, t, EMU_DATA(app->row),
                     EMU_LEN(app->row));
    emu_table_write_lock(t);
    for (guint i = 0; i < n; i++) {
        const GByteArray *c = g_ptr_array_index(app->columns, i);
        const GByteArray *v = g_ptr_array_index(app->values, i);
        size_t fam_len, ql;
        const uint8_t *q;
        guint fam;
        GByteArray *nv;
        struct emu_cell cell = { 0 };

        emu_store_parse_column(EMU_DATA(c), EMU_LEN(c), &fam_len, &q, &ql);
        emu_table_family_index(t, EMU_DATA(c), fam_len, &fam, NULL);
        emu_table_append(t, app->row->data, app->row->len, fam, q, ql,
                         EMU_DATA(v) ? EMU_DATA(v) : (const uint8_t *)"",
                         EMU_LEN(v), &nv, &cell.timestamp);
        g_ptr_array_add(values, nv);
        cell.family = EMU_DATA(c);
        cell.family_len = fam_len;
        cell.qualifier = q;
        cell.qualifier_len = ql;
        cell.value = nv->data;
        cell.value_len = nv->len;
        g_array_append_val(cells, cell);
    }
    emu_table_write_unlock(t);
    emu_guard_leave(&g);
    /* Result.rawCells order: by column. */
    g_array_sort(cells, emu_result_cell_col_cmp);
    emu_result_add_cells(*ret, (const struct emu_cell *)(void *)cells->data,
                         cells->len);
    return TRUE;
}

static gboolean emu_handler_check_and_put(
    HbaseHbaseIf *iface, gboolean *ret, const HbaseText table,
    const HbaseText row, const HbaseText column, const HbaseText value,
    const HbaseMutation *mput, const GHashTable *attributes, HbaseIOError **io,
    HbaseIllegalArgument **ia, GError **error)
{
    EmuHandler *self = EMU_HANDLER(iface);
    GError *err = NULL;
    g_autoptr(emu_table) t = NULL;
    g_autoptr(GError) later = NULL;
    struct emu_mut put = { 0 };
    guint fam;
    const uint8_t *qual;
    size_t qual_len, fam_len, put_fam_len, cur_len = 0;
    const uint8_t *cur;
    gboolean match;
    struct emu_guard g;

    /* The Put is built first: its faults are IllegalArgument or, for a
     * missing qualifier or Mutation, undeclared. */
    if (mput == NULL) {
        return emu_handler_fail(NULL, "checkAndPut", io, ia, NULL, error);
    }
    err = emu_handler_check_row(row, EMU_STORE_ERROR_ILLEGAL);
    if (err != NULL) {
        return emu_handler_fail(err, "checkAndPut", io, ia, NULL, error);
    }
    /* both columns are split (famAndQf[1]) before the table is looked
     * up; the region checks the checked family, and the Put's only once
     * the condition holds */
    if (!emu_store_parse_column(EMU_DATA(mput->column), EMU_LEN(mput->column),
                                &put_fam_len, &put.qual, &put.qual_len) ||
        !emu_store_parse_column(EMU_DATA(column), EMU_LEN(column), &fam_len,
                                &qual, &qual_len)) {
        return emu_handler_fail(NULL, "checkAndPut", io, ia, NULL, error);
    }
    t = emu_handler_cell_target(self, table, column, TRUE, &fam, &qual,
                                &qual_len, &err);
    if (t == NULL) {
        return emu_handler_fail(err, "checkAndPut", io, ia, NULL, error);
    }
    if (!emu_table_family_index(t, EMU_DATA(mput->column), put_fam_len,
                                &put.fam, &later)) {
        put.fam = G_MAXUINT;
    }
    put.kind = EMU_MUT_PUT;
    put.value = EMU_DATA(mput->value) ? EMU_DATA(mput->value)
                                      : (const uint8_t *)"";
    put.value_len = EMU_LEN(mput->value);
    emu_guard_enter1(&g, &self->opts, t, EMU_DATA(row), EMU_LEN(row));
    emu_table_write_lock(t);
    cur = emu_table_cell_latest(t, row->data, row->len, fam, qual, qual_len,
                                &cur_len);
    if (value == NULL) {
        match = cur == NULL; /* ifNotExists */
    } else if (value->len == 0) {
        match = cur == NULL || cur_len == 0; /* HBase: empty matches absent */
    } else {
        match = cur != NULL && cur_len == value->len &&
                memcmp(cur, value->data, cur_len) == 0;
    }
    if (match && later == NULL) {
        emu_table_mutate(t, row->data, row->len, &put, 1, EMU_LATEST_TS);
    }
    emu_table_write_unlock(t);
    emu_guard_leave(&g);
    if (match && later != NULL) {
        return emu_handler_fail(g_steal_pointer(&later), "checkAndPut", io, ia,
                                NULL, error);
    }
    *ret = match;
    return TRUE;
}

/* ---- Hbase methods: scanners ---- */

static gboolean emu_handler_open(EmuHandler *self, HbaseScannerID *ret,
                                 const GByteArray *table,
                                 struct emu_scan_spec *spec,
                                 const GPtrArray *columns, const char *method,
                                 HbaseIOError **io, GError **error)
{
    GError *err = NULL;
    g_autoptr(emu_table) t = NULL;
    struct emu_guard g;
    gboolean ok;

    /* Scan.withStartRow/withStopRow refuse bounds longer than a row can
     * be with an IllegalArgumentException, which the scannerOpen*
     * handlers do not catch, before they look at anything else */
    if (spec->start_len > 32767 || spec->stop_len > 32767) {
        return emu_handler_fail(NULL, method, io, NULL, NULL, error);
    }
    if (spec->max_ts < 0) {
        return emu_handler_fail(NULL, method, io, NULL, NULL, error);
    }
    t = emu_store_table_ref(self->store, EMU_DATA(table), EMU_LEN(table), TRUE,
                            &err);
    if (t == NULL) {
        return emu_handler_fail(err, method, io, NULL, NULL, error);
    }
    spec->cols = emu_handler_colspec(t, columns, &err);
    if (spec->cols == NULL) {
        return emu_handler_fail(err, method, io, NULL, NULL, error);
    }
    emu_guard_enter(&g, &self->opts, t, &spec->start, &spec->start_len, 1);
    ok = emu_scanner_open(t, spec, ret, &err);
    emu_colspec_free(spec->cols);
    emu_guard_leave(&g);
    if (!ok &&
        g_str_has_prefix(err->message, "java.lang.IllegalArgumentException")) {
        /* ParseFilter's IllegalArgumentException (a bad filter string or
         * regex): scannerOpenWithScan catches only IOException */
        g_error_free(err);
        return emu_handler_fail(NULL, method, io, NULL, NULL, error);
    }
    if (!ok) {
        return emu_handler_fail(err, method, io, NULL, NULL, error);
    }
    return TRUE;
}

static void emu_handler_spec_init(struct emu_scan_spec *spec,
                                  const GByteArray *start,
                                  const GByteArray *stop, int64_t ts)
{
    memset(spec, 0, sizeof(*spec));
    spec->start = EMU_DATA(start);
    spec->start_len = EMU_LEN(start);
    spec->stop = EMU_DATA(stop);
    spec->stop_len = EMU_LEN(stop);
    spec->max_ts = ts;
}

static gboolean emu_handler_scanner_open_with_scan(
    HbaseHbaseIf *iface, HbaseScannerID *ret, const HbaseText table,
    const HbaseTScan *scan, const GHashTable *attributes, HbaseIOError **io,
    GError **error)
{
    struct emu_scan_spec spec;

    if (scan == NULL) {
        return emu_handler_fail(NULL, "scannerOpenWithScan", io, NULL, NULL,
                                error);
    }
    emu_handler_spec_init(
        &spec, scan->__isset_startRow ? scan->startRow : NULL,
        scan->__isset_stopRow ? scan->stopRow : NULL,
        scan->__isset_timestamp ? scan->timestamp : EMU_LATEST_TS);
    spec.batch = scan->__isset_batchSize ? scan->batchSize : 0;
    spec.sorted = scan->__isset_sortColumns && scan->sortColumns;
    spec.reversed = scan->__isset_reversed && scan->reversed;
    if (scan->__isset_filterString && scan->filterString != NULL) {
        spec.filter = scan->filterString->len ? scan->filterString->data
                                              : (const uint8_t *)"";
        spec.filter_len = scan->filterString->len;
    }
    return emu_handler_open(EMU_HANDLER(iface), ret, table, &spec,
                            scan->__isset_columns ? scan->columns : NULL,
                            "scannerOpenWithScan", io, error);
}

static gboolean emu_handler_scanner_open(
    HbaseHbaseIf *iface, HbaseScannerID *ret, const HbaseText table,
    const HbaseText start, const GPtrArray *columns,
    const GHashTable *attributes, HbaseIOError **io, GError **error)
{
    struct emu_scan_spec spec;

    emu_handler_spec_init(&spec, start, NULL, EMU_LATEST_TS);
    return emu_handler_open(EMU_HANDLER(iface), ret, table, &spec, columns,
                            "scannerOpen", io, error);
}

static gboolean emu_handler_scanner_open_with_stop(
    HbaseHbaseIf *iface, HbaseScannerID *ret, const HbaseText table,
    const HbaseText start, const HbaseText stop, const GPtrArray *columns,
    const GHashTable *attributes, HbaseIOError **io, GError **error)
{
    struct emu_scan_spec spec;

    emu_handler_spec_init(&spec, start, stop, EMU_LATEST_TS);
    return emu_handler_open(EMU_HANDLER(iface), ret, table, &spec, columns,
                            "scannerOpenWithStop", io, error);
}

static gboolean emu_handler_scanner_open_with_prefix(
    HbaseHbaseIf *iface, HbaseScannerID *ret, const HbaseText table,
    const HbaseText prefix, const GPtrArray *columns,
    const GHashTable *attributes, HbaseIOError **io, GError **error)
{
    struct emu_scan_spec spec;

    emu_handler_spec_init(&spec, prefix, NULL, EMU_LATEST_TS);
    spec.has_prefix = TRUE;
    return emu_handler_open(EMU_HANDLER(iface), ret, table, &spec, columns,
                            "scannerOpenWithPrefix", io, error);
}

static gboolean emu_handler_scanner_open_ts(
    HbaseHbaseIf *iface, HbaseScannerID *ret, const HbaseText table,
    const HbaseText start, const GPtrArray *columns, const gint64 ts,
    const GHashTable *attributes, HbaseIOError **io, GError **error)
{
    struct emu_scan_spec spec;

    emu_handler_spec_init(&spec, start, NULL, ts);
    return emu_handler_open(EMU_HANDLER(iface), ret, table, &spec, columns,
                            "scannerOpenTs", io, error);
}

static gboolean emu_handler_scanner_open_with_stop_ts(
    HbaseHbaseIf *iface, HbaseScannerID *ret, const HbaseText table,
    const HbaseText start, const HbaseText stop, const GPtrArray *columns,
    const gint64 ts, const GHashTable *attributes, HbaseIOError **io,
    GError **error)
{
    struct emu_scan_spec spec;

    emu_handler_spec_init(&spec, start, stop, ts);
    return emu_handler_open(EMU_HANDLER(iface), ret, table, &spec, columns,
                            "scannerOpenWithStopTs", io, error);
}

static gboolean emu_handler_scanner_get_list(HbaseHbaseIf *iface,
                                             GPtrArray **ret,
                                             const HbaseScannerID id,
                                             const gint32 n, HbaseIOError **io,
                                             HbaseIllegalArgument **ia,
                                             GError **error)
{
    EmuHandler *self = EMU_HANDLER(iface);
    GError *err = NULL;
    g_autoptr(emu_scanner) sc = emu_scanner_get(id, &err);
    g_autoptr(GBytes) pos = NULL;
    struct emu_guard g;
    gsize plen;
    const uint8_t *p;
    gboolean ok;

    if (sc == NULL) {
        return emu_handler_fail(err, "scannerGetList", io, ia, NULL, error);
    }
    if (n < 0) {
        /* ResultScanner.next(n) sizes an ArrayList by n: unchecked, the
         * scanner as it was */
        emu_handler_internal(error, "scannerGetList");
        return FALSE;
    }
    pos = emu_scanner_position(sc);
    p = g_bytes_get_data(pos, &plen);
    emu_scanner_busy(sc, TRUE);
    emu_guard_enter(&g, &self->opts, emu_scanner_table(sc), &p, &plen, 1);
    ok = emu_scanner_fetch(sc, n, *ret, &err);
    emu_guard_leave(&g);
    emu_scanner_busy(sc, FALSE);
    if (!ok) {
        return emu_handler_fail(err, "scannerGetList", io, ia, NULL, error);
    }
    return TRUE;
}

static gboolean emu_handler_scanner_get(HbaseHbaseIf *iface, GPtrArray **ret,
                                        const HbaseScannerID id,
                                        HbaseIOError **io,
                                        HbaseIllegalArgument **ia,
                                        GError **error)
{
    return emu_handler_scanner_get_list(iface, ret, id, 1, io, ia, error);
}

static gboolean emu_handler_scanner_close(HbaseHbaseIf *iface,
                                          const HbaseScannerID id,
                                          HbaseIOError **io,
                                          HbaseIllegalArgument **ia,
                                          GError **error)
{
    GError *err = NULL;

    emu_guard_latency(&EMU_HANDLER(iface)->opts);
    if (!emu_scanner_close(id, &err)) {
        return emu_handler_fail(err, "scannerClose", io, ia, NULL, error);
    }
    return TRUE;
}

/* ---- Hbase methods: cluster ---- */

static gboolean emu_handler_get_region_info(HbaseHbaseIf *iface,
                                            HbaseTRegionInfo **ret,
                                            const HbaseText row,
                                            HbaseIOError **io, GError **error)
{
    EmuHandler *self = EMU_HANDLER(iface);
    GError *err = NULL;
    g_autoptr(emu_table) t = NULL;
    guint region;

    emu_guard_latency(&self->opts);
    t = emu_store_region_for_meta_row(self->store, EMU_DATA(row), EMU_LEN(row),
                                      &region, &err);
    if (t == NULL) {
        return emu_handler_fail(err, "getRegionInfo", io, NULL, NULL, error);
    }
    emu_handler_fill_region(self, *ret, t, region);
    return TRUE;
}

static gboolean emu_handler_get_thrift_server_type(HbaseHbaseIf *iface,
                                                   HbaseTThriftServerType *ret,
                                                   GError **error)
{
    emu_guard_latency(&EMU_HANDLER(iface)->opts);
    *ret = HBASE_T_THRIFT_SERVER_TYPE_ONE;
    return TRUE;
}

static gboolean emu_handler_get_cluster_id(HbaseHbaseIf *iface, gchar **ret,
                                           GError **error)
{
    emu_guard_latency(&EMU_HANDLER(iface)->opts);
    g_free(*ret);
    *ret = g_strdup(EMU_CLUSTER_ID);
    return TRUE;
}

/* Without the AccessController coprocessor HBase has no ACL service. */
static gboolean emu_handler_acl(HbaseHbaseIf *iface, const char *method,
                                HbaseIOError **io, GError **error)
{
    emu_guard_latency(&EMU_HANDLER(iface)->opts);
    return emu_handler_fail(
        emu_handler_err(EMU_STORE_ERROR_IO_NORETRY, EMU_NO_ACL_MESSAGE),
        method, io, NULL, NULL, error);
}

static gboolean emu_handler_grant(HbaseHbaseIf *iface, gboolean *ret,
                                  const HbaseTAccessControlEntity *info,
                                  HbaseIOError **io, GError **error)
{
    return emu_handler_acl(iface, "grant", io, error);
}

static gboolean emu_handler_revoke(HbaseHbaseIf *iface, gboolean *ret,
                                   const HbaseTAccessControlEntity *info,
                                   HbaseIOError **io, GError **error)
{
    return emu_handler_acl(iface, "revoke", io, error);
}

/* ---- GObject ---- */

static void emu_handler_init(EmuHandler *self)
{
}

static void emu_handler_class_init(EmuHandlerClass *klass)
{
    HbaseHbaseHandlerClass *h = HBASE_HBASE_HANDLER_CLASS(klass);

    h->enable_table = emu_handler_enable_table;
    h->disable_table = emu_handler_disable_table;
    h->is_table_enabled = emu_handler_is_table_enabled;
    h->compact = emu_handler_compact;
    h->major_compact = emu_handler_major_compact;
    h->get_table_names = emu_handler_get_table_names;
    h->get_table_names_with_is_table_enabled =
        emu_handler_get_table_names_with_is_table_enabled;
    h->get_column_descriptors = emu_handler_get_column_descriptors;
    h->get_table_regions = emu_handler_get_table_regions;
    h->create_table = emu_handler_create_table;
    h->delete_table = emu_handler_delete_table;
    h->get = emu_handler_get;
    h->get_ver = emu_handler_get_ver;
    h->get_ver_ts = emu_handler_get_ver_ts;
    h->get_row = emu_handler_get_row;
    h->get_row_with_columns = emu_handler_get_row_with_columns;
    h->get_row_ts = emu_handler_get_row_ts;
    h->get_row_with_columns_ts = emu_handler_get_row_with_columns_ts;
    h->get_rows = emu_handler_get_rows_m;
    h->get_rows_with_columns = emu_handler_get_rows_with_columns;
    h->get_rows_ts = emu_handler_get_rows_ts;
    h->get_rows_with_columns_ts = emu_handler_get_rows_with_columns_ts;
    h->mutate_row = emu_handler_mutate_row;
    h->mutate_row_ts = emu_handler_mutate_row_ts_m;
    h->mutate_rows = emu_handler_mutate_rows;
    h->mutate_rows_ts = emu_handler_mutate_rows_ts_m;
    h->atomic_increment = emu_handler_atomic_increment;
    h->delete_all = emu_handler_delete_all;
    h->delete_all_ts = emu_handler_delete_all_ts;
    h->delete_all_row = emu_handler_delete_all_row;
    h->increment = emu_handler_increment;
    h->increment_rows = emu_handler_increment_rows;
    h->delete_all_row_ts = emu_handler_delete_all_row_ts;
    h->scanner_open_with_scan = emu_handler_scanner_open_with_scan;
    h->scanner_open = emu_handler_scanner_open;
    h->scanner_open_with_stop = emu_handler_scanner_open_with_stop;
    h->scanner_open_with_prefix = emu_handler_scanner_open_with_prefix;
    h->scanner_open_ts = emu_handler_scanner_open_ts;
    h->scanner_open_with_stop_ts = emu_handler_scanner_open_with_stop_ts;
    h->scanner_get = emu_handler_scanner_get;
    h->scanner_get_list = emu_handler_scanner_get_list;
    h->scanner_close = emu_handler_scanner_close;
    h->get_region_info = emu_handler_get_region_info;
    h->append = emu_handler_append;
    h->check_and_put = emu_handler_check_and_put;
    h->get_thrift_server_type = emu_handler_get_thrift_server_type;
    h->get_cluster_id = emu_handler_get_cluster_id;
    h->grant = emu_handler_grant;
    h->revoke = emu_handler_revoke;
}

EmuHandler *emu_handler_new(emu_store *store,
                            const struct emu_handler_options *opts)
{
    EmuHandler *self = g_object_new(EMU_TYPE_HANDLER, NULL);

    self->store = store;
    self->opts = *opts;
    return self;
}
