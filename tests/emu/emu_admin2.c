/* emu_admin2.c: the Thrift2 administration methods (tables, namespaces, cluster) over the emulator's store. */
#include "emu_admin2.h"

#include <string.h>

#include "emu_handler.h"
#include "emu_handler2.h"

/*
 * Each method is Admin's call of the same name behind HBase's thrift2
 * handler: IOExceptions as TIOError, unchecked exceptions as
 * TApplicationException INTERNAL_ERROR.
 */

#define EMU_DATA(b) ((const uint8_t *)((b) != NULL ? (b)->data : NULL))
#define EMU_LEN(b) ((size_t)((b) != NULL ? (b)->len : 0))

/* Names of the Thrift enums, indexed by value, as HBase spells them. */
static const char *const emu_admin2_compression[] = {
    "LZO", "GZ", "NONE", "SNAPPY", "LZ4", "BZIP2", "ZSTD",
};
static const char *const emu_admin2_bloom[] = {
    "NONE",
    "ROW",
    "ROWCOL",
    "ROWPREFIX_FIXED_LENGTH",
};
static const char *const emu_admin2_durability[] = {
    "USE_DEFAULT", "SKIP_WAL", "ASYNC_WAL", "SYNC_WAL", "FSYNC_WAL",
};

/* TableDescriptor's key for its durability, kept among its values. */
#define EMU_ADMIN2_DURABILITY_KEY "DURABILITY"

/* InvalidFamilyOperationException is a DoNotRetryIOException. */
#define EMU_ADMIN2_BAD_FAMILY                                                 \
    "org.apache.hadoop.hbase.InvalidFamilyOperationException: "

static EmuHandler2 *emu_admin2_self(Hbase2THBaseServiceIf *iface)
{
    EmuHandler2 *self = EMU_HANDLER2(iface);

    emu_guard_latency(emu_handler2_options(self));
    return self;
}

static emu_store *emu_admin2_store(Hbase2THBaseServiceIf *iface)
{
    return emu_handler2_store(emu_admin2_self(iface));
}

static gint emu_admin2_enum_of(const char *const *names, guint n,
                               const char *name, gint dflt)
{
    for (guint i = 0; name != NULL && i < n; i++) {
        if (g_ascii_strcasecmp(names[i], name) == 0) {
            return (gint)i;
        }
    }
    return dflt;
}

/* Fills a TTableName from the store's name ("ns:q", or "q" in default). */
static void emu_admin2_fill_name(Hbase2TTableName *tn, const char *name)
{
    const char *colon = strchr(name, ':');

    if (colon != NULL) {
        tn->ns = emu_handler2_bytes(name, (size_t)(colon - name));
        tn->qualifier = emu_handler2_bytes(colon + 1, strlen(colon + 1));
    } else {
        tn->ns = emu_handler2_bytes("default", 7);
        tn->qualifier = emu_handler2_bytes(name, strlen(name));
    }
    tn->__isset_ns = TRUE;
}

static Hbase2TTableDescriptor *emu_admin2_descriptor(emu_table *t)
{
    Hbase2TTableDescriptor *d = g_object_new(HBASE2_TYPE_T_TABLE_DESCRIPTOR,
                                             NULL);
    const GPtrArray *values = emu_table_values(t);

    emu_admin2_fill_name(d->tableName, emu_table_name(t));
    for (guint i = 0; i < emu_table_family_count(t); i++) {
        const struct emu_family *f = emu_table_family(t, i);
        Hbase2TColumnFamilyDescriptor *cf = g_object_new(
            HBASE2_TYPE_T_COLUMN_FAMILY_DESCRIPTOR, NULL);

        cf->name = emu_handler2_bytes(f->name, f->name_len);
        cf->maxVersions = f->max_versions;
        cf->compressionType = emu_admin2_enum_of(
            emu_admin2_compression, G_N_ELEMENTS(emu_admin2_compression),
            f->compression, HBASE2_T_COMPRESSION_ALGORITHM_NONE);
        cf->bloomnFilterType = emu_admin2_enum_of(
            emu_admin2_bloom, G_N_ELEMENTS(emu_admin2_bloom), f->bloom_type,
            HBASE2_T_BLOOM_FILTER_TYPE_NONE);
        cf->inMemory = f->in_memory;
        cf->blockCacheEnabled = f->block_cache;
        cf->timeToLive = f->ttl;
        cf->__isset_maxVersions = cf->__isset_compressionType = TRUE;
        cf->__isset_bloomnFilterType = cf->__isset_inMemory = TRUE;
        cf->__isset_blockCacheEnabled = cf->__isset_timeToLive = TRUE;
        g_ptr_array_add(d->columns, cf);
    }
    d->__isset_columns = TRUE;
    /* tableDescriptorFromHBase: every value is an attribute, and the
     * durability is the DURABILITY value's, USE_DEFAULT without one. */
    d->durability = HBASE2_T_DURABILITY_USE_DEFAULT;
    for (guint i = 0; i + 1 < values->len; i += 2) {
        gsize kl, vl;
        const uint8_t *kp = g_bytes_get_data(g_ptr_array_index(values, i),
                                             &kl);
        const uint8_t *vp = g_bytes_get_data(g_ptr_array_index(values, i + 1),
                                             &vl);
        g_autofree char *v = g_strndup((const char *)vp, vl);

        g_hash_table_insert(d->attributes, emu_handler2_bytes(kp, kl),
                            emu_handler2_bytes(vp, vl));
        d->__isset_attributes = TRUE;
        if (kl == strlen(EMU_ADMIN2_DURABILITY_KEY) &&
            memcmp(kp, EMU_ADMIN2_DURABILITY_KEY, kl) == 0) {
            d->durability = emu_admin2_enum_of(
                emu_admin2_durability, G_N_ELEMENTS(emu_admin2_durability), v,
                HBASE2_T_DURABILITY_USE_DEFAULT);
        }
    }
    d->__isset_durability = TRUE;
    return d;
}

/* The table a TTableName names, enabled or not. */
static emu_table *emu_admin2_table(emu_store *store,
                                   const Hbase2TTableName *tn, GError **error)
{
    g_autoptr(GByteArray) name = emu_handler2_table_name(tn);

    return emu_store_table_ref(store, name->data, name->len, FALSE, error);
}

static gboolean emu_admin2_get_table_descriptor(Hbase2THBaseServiceIf *iface,
                                                Hbase2TTableDescriptor **ret,
                                                const Hbase2TTableName *tn,
                                                Hbase2TIOError **io,
                                                GError **error)
{
    GError *err = NULL;
    g_autoptr(emu_table) t = emu_admin2_table(emu_admin2_store(iface), tn,
                                              &err);

    if (t == NULL) {
        return emu_handler2_fail(err, "getTableDescriptor", io, error);
    }
    g_object_unref(*ret);
    *ret = emu_admin2_descriptor(t);
    return TRUE;
}

static gboolean emu_admin2_get_table_descriptors(Hbase2THBaseServiceIf *iface,
                                                 GPtrArray **ret,
                                                 const GPtrArray *tables,
                                                 Hbase2TIOError **io,
                                                 GError **error)
{
    emu_store *store = emu_admin2_store(iface);

    /* listTableDescriptors(names) leaves out the tables that are not. */
    for (guint i = 0; tables != NULL && i < tables->len; i++) {
        g_autoptr(emu_table) t = emu_admin2_table(
            store, g_ptr_array_index(tables, i), NULL);

        if (t != NULL) {
            g_ptr_array_add(*ret, emu_admin2_descriptor(t));
        }
    }
    return TRUE;
}

static gboolean emu_admin2_table_exists(Hbase2THBaseServiceIf *iface,
                                        gboolean *ret,
                                        const Hbase2TTableName *tn,
                                        Hbase2TIOError **io, GError **error)
{
    g_autoptr(emu_table) t = emu_admin2_table(emu_admin2_store(iface), tn,
                                              NULL);

    *ret = t != NULL;
    return TRUE;
}

/*
 * Tables whose name matches regex as a whole (Java's matches()), a
 * default-namespace table also as "default:name"; NULL: every table.
 * The emulator has no system tables, so includeSysTables adds none.
 */
static gboolean emu_admin2_tables_matching(emu_store *store, const char *regex,
                                           GPtrArray *out, GError **error)
{
    g_autoptr(GPtrArray) names = emu_store_table_names(store, NULL);
    g_autoptr(GRegex) re = NULL;

    if (regex != NULL) {
        g_autofree char *anchored = g_strdup_printf("^(?:%s)$", regex);

        re = g_regex_new(anchored, 0, 0, error);
        if (re == NULL) {
            return FALSE;
        }
    }
    for (guint i = 0; i < names->len; i++) {
        const char *n = g_ptr_array_index(names, i);
        g_autofree char *qualified = strchr(n, ':') != NULL
                                         ? NULL
                                         : g_strconcat("default:", n, NULL);
        emu_table *t;

        if (re != NULL && !g_regex_match(re, n, 0, NULL) &&
            (qualified == NULL || !g_regex_match(re, qualified, 0, NULL))) {
            continue;
        }
        t = emu_store_table_ref(store, (const uint8_t *)n, strlen(n), FALSE,
                                NULL);
        if (t != NULL) {
            g_ptr_array_add(out, t);
        }
    }
    return TRUE;
}

/* Tables of one namespace, which must exist. */
static gboolean emu_admin2_tables_in(emu_store *store, const char *ns,
                                     GPtrArray *out, GError **error)
{
    g_autofree char *re = NULL;

    if (ns == NULL || !emu_store_has_namespace(store, ns)) {
        g_set_error(error, EMU_STORE_ERROR, EMU_STORE_ERROR_IO_NORETRY,
                    "org.apache.hadoop.hbase.NamespaceNotFoundException: %s",
                    ns ? ns : "null");
        return FALSE;
    }
    re = g_strdup_printf("%s:.*", ns);
    return emu_admin2_tables_matching(store, re, out, error);
}

typedef enum {
    EMU_ADMIN2_BY_PATTERN,
    EMU_ADMIN2_BY_NAMESPACE,
} emu_admin2_select;

/* The four list calls: descriptors or names, by pattern or namespace. */
static gboolean emu_admin2_list(Hbase2THBaseServiceIf *iface, GPtrArray *ret,
                                emu_admin2_select by, const char *arg,
                                gboolean descriptors, const char *method,
                                Hbase2TIOError **io, GError **error)
{
    emu_store *store = emu_admin2_store(iface);
    g_autoptr(GPtrArray) tables = g_ptr_array_new_with_free_func(
        (GDestroyNotify)emu_table_unref);
    g_autoptr(GError) err = NULL;
    gboolean ok = by == EMU_ADMIN2_BY_PATTERN
                      ? emu_admin2_tables_matching(store, arg, tables, &err)
                      : emu_admin2_tables_in(store, arg, tables, &err);

    if (!ok && by == EMU_ADMIN2_BY_PATTERN) {
        /* PatternSyntaxException is unchecked */
        return emu_handler2_internal(error, method);
    }
    if (!ok) {
        return emu_handler2_fail(g_steal_pointer(&err), method, io, error);
    }
    for (guint i = 0; i < tables->len; i++) {
        emu_table *t = g_ptr_array_index(tables, i);

        if (descriptors) {
            g_ptr_array_add(ret, emu_admin2_descriptor(t));
        } else {
            Hbase2TTableName *tn = g_object_new(HBASE2_TYPE_T_TABLE_NAME,
                                                NULL);

            emu_admin2_fill_name(tn, emu_table_name(t));
            g_ptr_array_add(ret, tn);
        }
    }
    return TRUE;
}

static gboolean emu_admin2_get_table_descriptors_by_pattern(
    Hbase2THBaseServiceIf *iface, GPtrArray **ret, const gchar *regex,
    const gboolean include_sys, Hbase2TIOError **io, GError **error)
{
    return emu_admin2_list(iface, *ret, EMU_ADMIN2_BY_PATTERN, regex, TRUE,
                           "getTableDescriptorsByPattern", io, error);
}

static gboolean emu_admin2_get_table_descriptors_by_namespace(
    Hbase2THBaseServiceIf *iface, GPtrArray **ret, const gchar *name,
    Hbase2TIOError **io, GError **error)
{
    return emu_admin2_list(iface, *ret, EMU_ADMIN2_BY_NAMESPACE, name, TRUE,
                           "getTableDescriptorsByNamespace", io, error);
}

static gboolean emu_admin2_get_table_names_by_pattern(
    Hbase2THBaseServiceIf *iface, GPtrArray **ret, const gchar *regex,
    const gboolean include_sys, Hbase2TIOError **io, GError **error)
{
    return emu_admin2_list(iface, *ret, EMU_ADMIN2_BY_PATTERN, regex, FALSE,
                           "getTableNamesByPattern", io, error);
}

static gboolean emu_admin2_get_table_names_by_namespace(
    Hbase2THBaseServiceIf *iface, GPtrArray **ret, const gchar *name,
    Hbase2TIOError **io, GError **error)
{
    return emu_admin2_list(iface, *ret, EMU_ADMIN2_BY_NAMESPACE, name, FALSE,
                           "getTableNamesByNamespace", io, error);
}

/*
 * columnFamilyDescriptorFromThrift over ColumnFamilyDescriptorBuilder's
 * defaults (1 version, ROW bloom filter, block cache on, TTL forever).
 * The builder's IllegalArgumentExceptions are unchecked.
 */
static struct emu_family *emu_admin2_family(
    const Hbase2TColumnFamilyDescriptor *cf, GError **error)
{
    g_autoptr(GByteArray) name = emu_handler2_bytes(EMU_DATA(cf->name),
                                                    EMU_LEN(cf->name));
    struct emu_family *f;

    if (name->len == 0 || name->data[0] == '.' ||
        memchr(name->data, ':', name->len) != NULL ||
        memchr(name->data, 0, name->len) != NULL) {
        g_set_error_literal(error, EMU_STORE_ERROR, EMU_STORE_ERROR_INTERNAL,
                            "java.lang.IllegalArgumentException: Illegal "
                            "column family name");
        return NULL;
    }
    if (cf->__isset_maxVersions && cf->maxVersions <= 0) {
        g_set_error_literal(error, EMU_STORE_ERROR, EMU_STORE_ERROR_INTERNAL,
                            "java.lang.IllegalArgumentException: Maximum "
                            "versions must be positive");
        return NULL;
    }
    f = g_new0(struct emu_family, 1);
    f->name = (uint8_t *)g_strndup((const char *)name->data, name->len);
    f->name_len = name->len;
    f->max_versions = cf->__isset_maxVersions ? cf->maxVersions : 1;
    f->compression = g_strdup(cf->__isset_compressionType &&
                                      (guint)cf->compressionType <
                                          G_N_ELEMENTS(emu_admin2_compression)
                                  ? emu_admin2_compression[cf->compressionType]
                                  : "NONE");
    f->bloom_type = g_strdup(cf->__isset_bloomnFilterType &&
                                     (guint)cf->bloomnFilterType <
                                         G_N_ELEMENTS(emu_admin2_bloom)
                                 ? emu_admin2_bloom[cf->bloomnFilterType]
                                 : "ROW");
    f->in_memory = cf->__isset_inMemory && cf->inMemory;
    f->block_cache = !cf->__isset_blockCacheEnabled || cf->blockCacheEnabled;
    f->ttl = cf->__isset_timeToLive && cf->timeToLive > 0 ? cf->timeToLive
                                                          : G_MAXINT32;
    return f;
}

/*
 * tableDescriptorFromThrift's values: the attributes (an empty value
 * removes its key), then the durability under DURABILITY.  Flat GBytes
 * key/value pairs, each key once.
 */
static GPtrArray *emu_admin2_values(const Hbase2TTableDescriptor *desc)
{
    g_autoptr(GHashTable) map = g_hash_table_new_full(
        g_bytes_hash, g_bytes_equal, (GDestroyNotify)g_bytes_unref,
        (GDestroyNotify)g_bytes_unref);
    GPtrArray *out = g_ptr_array_new_with_free_func(
        (GDestroyNotify)g_bytes_unref);
    GHashTableIter it;
    gpointer k, v;

    if (desc->__isset_attributes && desc->attributes != NULL) {
        g_hash_table_iter_init(&it, desc->attributes);
        while (g_hash_table_iter_next(&it, &k, &v)) {
            GBytes *key = g_bytes_new(EMU_DATA((GByteArray *)k),
                                      EMU_LEN((GByteArray *)k));

            if (EMU_LEN((GByteArray *)v) == 0) {
                g_hash_table_remove(map, key), g_bytes_unref(key);
            } else {
                g_hash_table_replace(map, key,
                                     g_bytes_new(EMU_DATA((GByteArray *)v),
                                                 EMU_LEN((GByteArray *)v)));
            }
        }
    }
    if (desc->__isset_durability) {
        /* durabilityFromThrift: an unknown value is USE_DEFAULT */
        guint d = (guint)desc->durability < G_N_ELEMENTS(emu_admin2_durability)
                      ? (guint)desc->durability
                      : HBASE2_T_DURABILITY_USE_DEFAULT;

        g_hash_table_replace(
            map,
            g_bytes_new_static(EMU_ADMIN2_DURABILITY_KEY,
                               strlen(EMU_ADMIN2_DURABILITY_KEY)),
            g_bytes_new_static(emu_admin2_durability[d],
                               strlen(emu_admin2_durability[d])));
    }
    g_hash_table_iter_init(&it, map);
    while (g_hash_table_iter_next(&it, &k, &v)) {
        g_ptr_array_add(out, g_bytes_ref(k));
        g_ptr_array_add(out, g_bytes_ref(v));
    }
    return out;
}

/* The families of a TTableDescriptor, as TableDescriptorBuilder takes
 * them: a repeated name is an IllegalArgumentException. */
static GPtrArray *emu_admin2_families(const Hbase2TTableDescriptor *desc,
                                      GError **error)
{
    g_autoptr(GPtrArray) fams = g_ptr_array_new_with_free_func(
        emu_family_free);

    for (guint i = 0; desc->columns != NULL && i < desc->columns->len; i++) {
        struct emu_family *f = emu_admin2_family(
            g_ptr_array_index(desc->columns, i), error);

        if (f == NULL) {
            return NULL;
        }
        for (guint j = 0; j < fams->len; j++) {
            const struct emu_family *g = g_ptr_array_index(fams, j);

            if (g->name_len == f->name_len &&
                memcmp(g->name, f->name, f->name_len) == 0) {
                g_set_error(error, EMU_STORE_ERROR, EMU_STORE_ERROR_INTERNAL,
                            "java.lang.IllegalArgumentException: Family '%s' "
                            "already exists so cannot be added",
                            (const char *)f->name);
                emu_family_free(f);
                return NULL;
            }
        }
        g_ptr_array_add(fams, f);
    }
    return g_steal_pointer(&fams);
}

static gboolean emu_admin2_create_table(Hbase2THBaseServiceIf *iface,
                                        const Hbase2TTableDescriptor *desc,
                                        const GPtrArray *split_keys,
                                        Hbase2TIOError **io, GError **error)
{
    emu_store *store = emu_admin2_store(iface);
    GError *err = NULL;
    g_autoptr(GByteArray) name = emu_handler2_table_name(desc->tableName);
    g_autoptr(GPtrArray) fams = emu_admin2_families(desc, &err);
    g_autoptr(GPtrArray) values = emu_admin2_values(desc);
    g_autoptr(GPtrArray) splits = NULL;

    if (fams == NULL) {
        return emu_handler2_fail(err, "createTable", io, error);
    }
    if (fams->len == 0) {
        /* the master's sanity check comes before its existence check */
        return emu_handler2_fail(
            g_error_new_literal(EMU_STORE_ERROR, EMU_STORE_ERROR_IO_NORETRY,
                                EMU_STORE_NO_FAMILY_MESSAGE),
            "createTable", io, error);
    }
    /* splitKeyFromThrift: an empty list is no split keys at all. */
    if (split_keys != NULL && split_keys->len > 0) {
        splits = g_ptr_array_new_with_free_func((GDestroyNotify)g_bytes_unref);
        for (guint i = 0; i < split_keys->len; i++) {
            const GByteArray *k = g_ptr_array_index(split_keys, i);

            g_ptr_array_add(splits, g_bytes_new(EMU_DATA(k), EMU_LEN(k)));
        }
    }
    /* Without split keys: the store's regions (--regions, --split-keys),
     * as for a Thrift1 createTable. */
    if (!emu_store_create_table_split(store, name->data, name->len, fams,
                                      splits, values, &err)) {
        if (err->code == EMU_STORE_ERROR_EXISTS) {
            g_autofree char *n = g_strndup((const char *)name->data,
                                           name->len);

            g_clear_error(&err);
            err = g_error_new(EMU_STORE_ERROR, EMU_STORE_ERROR_IO_NORETRY,
                              "org.apache.hadoop.hbase.TableExistsException:"
                              " %s",
                              n);
        }
        return emu_handler2_fail(err, "createTable", io, error);
    }
    return TRUE;
}

static gboolean emu_admin2_delete_table(Hbase2THBaseServiceIf *iface,
                                        const Hbase2TTableName *tn,
                                        Hbase2TIOError **io, GError **error)
{
    emu_store *store = emu_admin2_store(iface);
    GError *err = NULL;
    g_autoptr(GByteArray) name = emu_handler2_table_name(tn);
    g_autoptr(emu_table) t = emu_store_table_ref(store, name->data, name->len,
                                                 FALSE, &err);

    /* Admin.deleteTable of a missing table: TableNotFoundException. */
    if (t == NULL ||
        !emu_store_delete_table(store, name->data, name->len, &err)) {
        return emu_handler2_fail(err, "deleteTable", io, error);
    }
    return TRUE;
}

static gboolean emu_admin2_truncate_table(Hbase2THBaseServiceIf *iface,
                                          const Hbase2TTableName *tn,
                                          const gboolean preserve_splits,
                                          Hbase2TIOError **io, GError **error)
{
    GError *err = NULL;
    g_autoptr(GByteArray) name = emu_handler2_table_name(tn);

    if (!emu_store_truncate_table(emu_admin2_store(iface), name->data,
                                  name->len, preserve_splits, &err)) {
        return emu_handler2_fail(err, "truncateTable", io, error);
    }
    return TRUE;
}

static gboolean emu_admin2_set_enabled(Hbase2THBaseServiceIf *iface,
                                       const Hbase2TTableName *tn,
                                       gboolean enabled, const char *method,
                                       Hbase2TIOError **io, GError **error)
{
    GError *err = NULL;
    g_autoptr(GByteArray) name = emu_handler2_table_name(tn);

    if (!emu_store_set_enabled(emu_admin2_store(iface), name->data, name->len,
                               enabled, &err)) {
        return emu_handler2_fail(err, method, io, error);
    }
    return TRUE;
}

static gboolean emu_admin2_enable_table(Hbase2THBaseServiceIf *iface,
                                        const Hbase2TTableName *tn,
                                        Hbase2TIOError **io, GError **error)
{
    return emu_admin2_set_enabled(iface, tn, TRUE, "enableTable", io, error);
}

static gboolean emu_admin2_disable_table(Hbase2THBaseServiceIf *iface,
                                         const Hbase2TTableName *tn,
                                         Hbase2TIOError **io, GError **error)
{
    return emu_admin2_set_enabled(iface, tn, FALSE, "disableTable", io, error);
}

typedef enum {
    EMU_ADMIN2_ENABLED,
    EMU_ADMIN2_DISABLED,
    EMU_ADMIN2_AVAILABLE,
} emu_admin2_state;

/*
 * isTableEnabled / isTableDisabled: a missing table is
 * TableNotFoundException; isTableAvailable: a missing or disabled table is
 * not available.  With split
 * keys, available also needs exactly those region boundaries.
 */
static gboolean emu_admin2_state_of(Hbase2THBaseServiceIf *iface,
                                    gboolean *ret, const Hbase2TTableName *tn,
                                    emu_admin2_state what,
                                    const GPtrArray *split_keys,
                                    const char *method, Hbase2TIOError **io,
                                    GError **error)
{
    GError *err = NULL;
    g_autoptr(emu_table) t = emu_admin2_table(emu_admin2_store(iface), tn,
                                              &err);
    gboolean live;

    if (t == NULL && what == EMU_ADMIN2_AVAILABLE &&
        g_str_has_prefix(err->message,
                         "org.apache.hadoop.hbase.TableNotFoundException")) {
        /* isTableAvailable reads hbase:meta: no regions, not available */
        g_error_free(err);
        *ret = FALSE;
        return TRUE;
    }
    if (t == NULL) {
        return emu_handler2_fail(err, method, io, error);
    }
    live = emu_table_is_live(t, NULL);
    *ret = what == EMU_ADMIN2_DISABLED ? !live : live;
    if (what != EMU_ADMIN2_AVAILABLE || !*ret || split_keys == NULL ||
        split_keys->len == 0) {
        return TRUE;
    }
    *ret = emu_table_region_count(t) == split_keys->len + 1;
    for (guint i = 0; *ret && i < split_keys->len; i++) {
        const GByteArray *k = g_ptr_array_index(split_keys, i);
        guint r = emu_table_region_of(t, EMU_DATA(k), EMU_LEN(k));
        gsize sl;
        const uint8_t *sp = g_bytes_get_data(emu_table_region(t, r)->start,
                                             &sl);

        *ret = sl == EMU_LEN(k) && (sl == 0 || memcmp(sp, k->data, sl) == 0);
    }
    return TRUE;
}

static gboolean emu_admin2_is_table_enabled(Hbase2THBaseServiceIf *iface,
                                            gboolean *ret,
                                            const Hbase2TTableName *tn,
                                            Hbase2TIOError **io,
                                            GError **error)
{
    return emu_admin2_state_of(iface, ret, tn, EMU_ADMIN2_ENABLED, NULL,
                               "isTableEnabled", io, error);
}

static gboolean emu_admin2_is_table_disabled(Hbase2THBaseServiceIf *iface,
                                             gboolean *ret,
                                             const Hbase2TTableName *tn,
                                             Hbase2TIOError **io,
                                             GError **error)
{
    return emu_admin2_state_of(iface, ret, tn, EMU_ADMIN2_DISABLED, NULL,
                               "isTableDisabled", io, error);
}

static gboolean emu_admin2_is_table_available(Hbase2THBaseServiceIf *iface,
                                              gboolean *ret,
                                              const Hbase2TTableName *tn,
                                              Hbase2TIOError **io,
                                              GError **error)
{
    return emu_admin2_state_of(iface, ret, tn, EMU_ADMIN2_AVAILABLE, NULL,
                               "isTableAvailable", io, error);
}

static gboolean emu_admin2_is_table_available_with_split(
    Hbase2THBaseServiceIf *iface, gboolean *ret, const Hbase2TTableName *tn,
    const GPtrArray *split_keys, Hbase2TIOError **io, GError **error)
{
    return emu_admin2_state_of(iface, ret, tn, EMU_ADMIN2_AVAILABLE,
                               split_keys, "isTableAvailableWithSplit", io,
                               error);
}

/* ---- schema changes ---- */

/* Position of a family by name in an array of struct emu_family *. */
static gboolean emu_admin2_find_family(const GPtrArray *fams,
                                       const uint8_t *name, size_t len,
                                       guint *pos)
{
    for (guint i = 0; i < fams->len; i++) {
        const struct emu_family *f = g_ptr_array_index(fams, i);

        if (f->name_len == len &&
            (len == 0 || memcmp(f->name, name, len) == 0)) {
            *pos = i;
            return TRUE;
        }
    }
    return FALSE;
}

/* Bytes.toString of a family name: UTF-8, bad bytes replaced. */
static char *emu_admin2_family_string(const uint8_t *name, size_t len)
{
    return g_utf8_make_valid((const char *)name, (gssize)len);
}

/* What a schema call asks the store to do with the current schema. */
typedef enum {
    EMU_ADMIN2_ADD_FAMILY,
    EMU_ADMIN2_DELETE_FAMILY,
    EMU_ADMIN2_MODIFY_FAMILY,
    EMU_ADMIN2_REPLACE_ALL,
} emu_admin2_change_kind;

struct emu_admin2_change {
    emu_admin2_change_kind kind;
    struct emu_family *family; /* add, modify: taken by the store side */
    const uint8_t *name;       /* delete: the family's name */
    size_t name_len;
    GPtrArray *families; /* replace: the new set, emptied on use */
    GPtrArray *values;   /* replace: the new values */
};

/*
 * HMaster's addColumn / deleteColumn / modifyColumn / modifyTable, each
 * checking the table's current descriptor as its TableDescriptorGetter
 * does; the sanity check (at least one family) follows in the store.
 */
static gboolean emu_admin2_apply(const emu_table *t, GPtrArray *fams,
                                 GPtrArray *values, gpointer data,
                                 GError **error)
{
    struct emu_admin2_change *c = data;
    g_autofree char *fname = NULL;
    guint pos;

    switch (c->kind) {
    case EMU_ADMIN2_ADD_FAMILY:
        if (emu_admin2_find_family(fams, c->family->name, c->family->name_len,
                                   &pos)) {
            fname = emu_admin2_family_string(c->family->name,
                                             c->family->name_len);
            g_set_error(error, EMU_STORE_ERROR, EMU_STORE_ERROR_IO_NORETRY,
                        EMU_ADMIN2_BAD_FAMILY
                        "Column family '%s' in table "
                        "'%s' already exists so cannot be added",
                        fname, emu_table_name(t));
            return FALSE;
        }
        g_ptr_array_add(fams, g_steal_pointer(&c->family));
        return TRUE;
    case EMU_ADMIN2_DELETE_FAMILY:
        fname = emu_admin2_family_string(c->name, c->name_len);
        if (!emu_admin2_find_family(fams, c->name, c->name_len, &pos)) {
            g_set_error(error, EMU_STORE_ERROR, EMU_STORE_ERROR_IO_NORETRY,
                        EMU_ADMIN2_BAD_FAMILY "Family '%s' does not exist, so "
                                              "it cannot be deleted",
                        fname);
            return FALSE;
        }
        if (fams->len == 1) {
            g_set_error(error, EMU_STORE_ERROR, EMU_STORE_ERROR_IO_NORETRY,
                        EMU_ADMIN2_BAD_FAMILY
                        "Family '%s' is the only column "
                        "family in the table, so it cannot be deleted",
                        fname);
            return FALSE;
        }
        g_ptr_array_remove_index(fams, pos);
        return TRUE;
    case EMU_ADMIN2_MODIFY_FAMILY:
        if (!emu_admin2_find_family(fams, c->family->name, c->family->name_len,
                                    &pos)) {
            fname = emu_admin2_family_string(c->family->name,
                                             c->family->name_len);
            g_set_error(error, EMU_STORE_ERROR, EMU_STORE_ERROR_IO_NORETRY,
                        EMU_ADMIN2_BAD_FAMILY "Family '%s' does not exist, so "
                                              "it cannot be modified",
                        fname);
            return FALSE;
        }
        /* the new descriptor replaces the old one whole */
        emu_family_free(fams->pdata[pos]);
        fams->pdata[pos] = g_steal_pointer(&c->family);
        return TRUE;
    case EMU_ADMIN2_REPLACE_ALL:
        g_ptr_array_set_size(fams, 0);
        for (guint i = 0; i < c->families->len; i++) {
            g_ptr_array_add(fams, c->families->pdata[i]);
        }
        g_ptr_array_set_free_func(c->families, NULL);
        g_ptr_array_set_size(c->families, 0);
        g_ptr_array_set_size(values, 0);
        for (guint i = 0; i < c->values->len; i++) {
            g_ptr_array_add(values, g_bytes_ref(c->values->pdata[i]));
        }
        return TRUE;
    }
    return TRUE;
}

static gboolean emu_admin2_change(Hbase2THBaseServiceIf *iface,
                                  const Hbase2TTableName *tn,
                                  struct emu_admin2_change *c,
                                  const char *method, Hbase2TIOError **io,
                                  GError **error)
{
    GError *err = NULL;
    g_autoptr(GByteArray) name = emu_handler2_table_name(tn);
    gboolean ok = emu_store_alter_table(emu_admin2_store(iface), name->data,
                                        name->len, emu_admin2_apply, c, &err);

    if (c->family != NULL) {
        emu_family_free(g_steal_pointer(&c->family));
    }
    if (!ok) {
        return emu_handler2_fail(err, method, io, error);
    }
    return TRUE;
}

/* columnFamilyDescriptorFromThrift first: its errors are unchecked. */
static gboolean emu_admin2_family_change(
    Hbase2THBaseServiceIf *iface, const Hbase2TTableName *tn,
    const Hbase2TColumnFamilyDescriptor *column, emu_admin2_change_kind kind,
    const char *method, Hbase2TIOError **io, GError **error)
{
    GError *err = NULL;
    struct emu_admin2_change c = { kind, emu_admin2_family(column, &err),
                                   NULL, 0,
                                   NULL, NULL };

    if (c.family == NULL) {
        return emu_handler2_fail(err, method, io, error);
    }
    return emu_admin2_change(iface, tn, &c, method, io, error);
}

static gboolean emu_admin2_add_column_family(
    Hbase2THBaseServiceIf *iface, const Hbase2TTableName *tn,
    const Hbase2TColumnFamilyDescriptor *column, Hbase2TIOError **io,
    GError **error)
{
    return emu_admin2_family_change(iface, tn, column, EMU_ADMIN2_ADD_FAMILY,
                                    "addColumnFamily", io, error);
}

static gboolean emu_admin2_delete_column_family(Hbase2THBaseServiceIf *iface,
                                                const Hbase2TTableName *tn,
                                                const GByteArray *column,
                                                Hbase2TIOError **io,
                                                GError **error)
{
    struct emu_admin2_change c = {
        EMU_ADMIN2_DELETE_FAMILY, NULL, EMU_DATA(column),
        EMU_LEN(column),          NULL, NULL
    };

    return emu_admin2_change(iface, tn, &c, "deleteColumnFamily", io, error);
}

static gboolean emu_admin2_modify_column_family(
    Hbase2THBaseServiceIf *iface, const Hbase2TTableName *tn,
    const Hbase2TColumnFamilyDescriptor *column, Hbase2TIOError **io,
    GError **error)
{
    return emu_admin2_family_change(iface, tn, column,
                                    EMU_ADMIN2_MODIFY_FAMILY,
                                    "modifyColumnFamily", io, error);
}

/* The descriptor replaces the table's whole: families left out lose
 * their cells, families named anew start from the builder's defaults. */
static gboolean emu_admin2_modify_table(Hbase2THBaseServiceIf *iface,
                                        const Hbase2TTableDescriptor *desc,
                                        Hbase2TIOError **io, GError **error)
{
    GError *err = NULL;
    g_autoptr(GPtrArray) fams = emu_admin2_families(desc, &err);
    g_autoptr(GPtrArray) values = NULL;
    struct emu_admin2_change c = {
        EMU_ADMIN2_REPLACE_ALL, NULL, NULL, 0, NULL, NULL
    };

    if (fams == NULL) {
        return emu_handler2_fail(err, "modifyTable", io, error);
    }
    /* HMaster checks the new descriptor before it looks for the table */
    if (fams->len == 0) {
        return emu_handler2_fail(
            g_error_new_literal(EMU_STORE_ERROR, EMU_STORE_ERROR_IO_NORETRY,
                                EMU_STORE_NO_FAMILY_MESSAGE),
            "modifyTable", io, error);
    }
    values = emu_admin2_values(desc);
    c.families = fams;
    c.values = values;
    return emu_admin2_change(iface, desc->tableName, &c, "modifyTable", io,
                             error);
}

/* ---- namespaces ---- */

static gboolean emu_admin2_create_namespace(
    Hbase2THBaseServiceIf *iface, const Hbase2TNamespaceDescriptor *nd,
    Hbase2TIOError **io, GError **error)
{
    GError *err = NULL;

    if (nd->name == NULL) {
        return emu_handler2_internal(error, "createNamespace");
    }
    if (!emu_store_create_namespace(emu_admin2_store(iface), nd->name,
                                    nd->configuration, &err)) {
        return emu_handler2_fail(err, "createNamespace", io, error);
    }
    return TRUE;
}

static gboolean emu_admin2_missing_namespace(const char *ns,
                                             const char *method,
                                             Hbase2TIOError **io,
                                             GError **error)
{
    return emu_handler2_fail(
        g_error_new(EMU_STORE_ERROR, EMU_STORE_ERROR_IO_NORETRY,
                    "org.apache.hadoop.hbase.NamespaceNotFoundException: %s",
                    ns ? ns : "null"),
        method, io, error);
}

/* The configuration replaces the old one (an empty one: none). */
static gboolean emu_admin2_modify_namespace(
    Hbase2THBaseServiceIf *iface, const Hbase2TNamespaceDescriptor *nd,
    Hbase2TIOError **io, GError **error)
{
    if (nd->name == NULL ||
        !emu_store_set_namespace_conf(emu_admin2_store(iface), nd->name,
                                      nd->configuration)) {
        return emu_admin2_missing_namespace(nd->name, "modifyNamespace", io,
                                            error);
    }
    return TRUE;
}

static gboolean emu_admin2_delete_namespace(Hbase2THBaseServiceIf *iface,
                                            const gchar *name,
                                            Hbase2TIOError **io,
                                            GError **error)
{
    GError *err = NULL;

    if (name == NULL) {
        return emu_handler2_internal(error, "deleteNamespace");
    }
    if (!emu_store_delete_namespace(emu_admin2_store(iface), name, &err)) {
        return emu_handler2_fail(err, "deleteNamespace", io, error);
    }
    return TRUE;
}

/* namespaceDescriptorFromHBase: the configuration only when there is
 * one (HBase keeps an empty one as none). */
static void emu_admin2_fill_conf(Hbase2THBaseServiceIf *iface,
                                 Hbase2TNamespaceDescriptor *nd)
{
    g_autoptr(GHashTable) c = emu_store_namespace_conf(emu_admin2_store(iface),
                                                       nd->name);
    GHashTableIter it;
    gpointer k, v;

    nd->__isset_configuration = c != NULL;
    if (c == NULL) {
        return;
    }
    g_hash_table_iter_init(&it, c);
    while (g_hash_table_iter_next(&it, &k, &v)) {
        g_hash_table_insert(nd->configuration, g_strdup(k), g_strdup(v));
    }
}

static gboolean emu_admin2_get_namespace_descriptor(
    Hbase2THBaseServiceIf *iface, Hbase2TNamespaceDescriptor **ret,
    const gchar *name, Hbase2TIOError **io, GError **error)
{
    if (name == NULL ||
        !emu_store_has_namespace(emu_admin2_store(iface), name)) {
        return emu_admin2_missing_namespace(name, "getNamespaceDescriptor", io,
                                            error);
    }
    g_free((*ret)->name);
    (*ret)->name = g_strdup(name);
    emu_admin2_fill_conf(iface, *ret);
    return TRUE;
}

static gboolean emu_admin2_list_namespace_descriptors(
    Hbase2THBaseServiceIf *iface, GPtrArray **ret, Hbase2TIOError **io,
    GError **error)
{
    g_autoptr(GPtrArray) names = emu_store_namespace_names(
        emu_admin2_store(iface));

    for (guint i = 0; i < names->len; i++) {
        Hbase2TNamespaceDescriptor *nd = g_object_new(
            HBASE2_TYPE_T_NAMESPACE_DESCRIPTOR, NULL);

        nd->name = g_strdup(g_ptr_array_index(names, i));
        emu_admin2_fill_conf(iface, nd);
        g_ptr_array_add(*ret, nd);
    }
    return TRUE;
}

static gboolean emu_admin2_list_namespaces(Hbase2THBaseServiceIf *iface,
                                           GPtrArray **ret,
                                           Hbase2TIOError **io, GError **error)
{
    g_autoptr(GPtrArray) names = emu_store_namespace_names(
        emu_admin2_store(iface));

    for (guint i = 0; i < names->len; i++) {
        g_ptr_array_add(*ret, g_strdup(g_ptr_array_index(names, i)));
    }
    return TRUE;
}

/* ---- cluster ---- */

static gboolean emu_admin2_get_thrift_server_type(Hbase2THBaseServiceIf *iface,
                                                  Hbase2TThriftServerType *ret,
                                                  GError **error)
{
    emu_admin2_self(iface);
    *ret = HBASE2_T_THRIFT_SERVER_TYPE_TWO;
    return TRUE;
}

static gboolean emu_admin2_get_cluster_id(Hbase2THBaseServiceIf *iface,
                                          gchar **ret, GError **error)
{
    emu_admin2_self(iface);
    g_free(*ret);
    *ret = g_strdup(EMU_CLUSTER_ID);
    return TRUE;
}

/* Nothing is ever slow enough to be logged: an empty slow log. */
static gboolean emu_admin2_get_slow_log_responses(
    Hbase2THBaseServiceIf *iface, GPtrArray **ret,
    const GHashTable *server_names, const Hbase2TLogQueryFilter *filter,
    Hbase2TIOError **io, GError **error)
{
    emu_admin2_self(iface);
    return TRUE;
}

/* One answer per server named, each cleared. */
static gboolean emu_admin2_clear_slow_log_responses(
    Hbase2THBaseServiceIf *iface, GArray **ret, const GHashTable *server_names,
    Hbase2TIOError **io, GError **error)
{
    guint n = server_names != NULL
                  ? g_hash_table_size((GHashTable *)server_names)
                  : 0;

    emu_admin2_self(iface);
    for (guint i = 0; i < n; i++) {
        gboolean cleared = TRUE;

        g_array_append_val(*ret, cleared);
    }
    return TRUE;
}

static gboolean emu_admin2_acl(Hbase2THBaseServiceIf *iface,
                               const char *method, Hbase2TIOError **io,
                               GError **error)
{
    emu_admin2_self(iface);
    return emu_handler2_fail(g_error_new_literal(EMU_STORE_ERROR,
                                                 EMU_STORE_ERROR_IO_NORETRY,
                                                 EMU_NO_ACL_MESSAGE),
                             method, io, error);
}

static gboolean emu_admin2_grant(Hbase2THBaseServiceIf *iface, gboolean *ret,
                                 const Hbase2TAccessControlEntity *info,
                                 Hbase2TIOError **io, GError **error)
{
    return emu_admin2_acl(iface, "grant", io, error);
}

static gboolean emu_admin2_revoke(Hbase2THBaseServiceIf *iface, gboolean *ret,
                                  const Hbase2TAccessControlEntity *info,
                                  Hbase2TIOError **io, GError **error)
{
    return emu_admin2_acl(iface, "revoke", io, error);
}

void emu_admin2_class_init(Hbase2THBaseServiceHandlerClass *h)
{
    h->get_table_descriptor = emu_admin2_get_table_descriptor;
    h->get_table_descriptors = emu_admin2_get_table_descriptors;
    h->table_exists = emu_admin2_table_exists;
    h->get_table_descriptors_by_pattern =
        emu_admin2_get_table_descriptors_by_pattern;
    h->get_table_descriptors_by_namespace =
        emu_admin2_get_table_descriptors_by_namespace;
    h->get_table_names_by_pattern = emu_admin2_get_table_names_by_pattern;
    h->get_table_names_by_namespace = emu_admin2_get_table_names_by_namespace;
    h->create_table = emu_admin2_create_table;
    h->delete_table = emu_admin2_delete_table;
    h->truncate_table = emu_admin2_truncate_table;
    h->enable_table = emu_admin2_enable_table;
    h->disable_table = emu_admin2_disable_table;
    h->is_table_enabled = emu_admin2_is_table_enabled;
    h->is_table_disabled = emu_admin2_is_table_disabled;
    h->is_table_available = emu_admin2_is_table_available;
    h->is_table_available_with_split =
        emu_admin2_is_table_available_with_split;
    h->add_column_family = emu_admin2_add_column_family;
    h->delete_column_family = emu_admin2_delete_column_family;
    h->modify_column_family = emu_admin2_modify_column_family;
    h->modify_table = emu_admin2_modify_table;
    h->create_namespace = emu_admin2_create_namespace;
    h->modify_namespace = emu_admin2_modify_namespace;
    h->delete_namespace = emu_admin2_delete_namespace;
    h->get_namespace_descriptor = emu_admin2_get_namespace_descriptor;
    h->list_namespace_descriptors = emu_admin2_list_namespace_descriptors;
    h->list_namespaces = emu_admin2_list_namespaces;
    h->get_thrift_server_type = emu_admin2_get_thrift_server_type;
    h->get_cluster_id = emu_admin2_get_cluster_id;
    h->get_slow_log_responses = emu_admin2_get_slow_log_responses;
    h->clear_slow_log_responses = emu_admin2_clear_slow_log_responses;
    h->grant = emu_admin2_grant;
    h->revoke = emu_admin2_revoke;
}
