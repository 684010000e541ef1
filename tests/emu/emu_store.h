/* emu_store.h: the emulator's in-memory tables, rows, cells and regions. */
#pragma once

#include <glib.h>
#include <stddef.h>
#include <stdint.h>

#include "emu_filter.h"

/*
 * Errors carry the HBase exception they stand for; the handler maps each
 * code to the Thrift exception HBase's handler would raise.
 */
#define EMU_STORE_ERROR (emu_store_error_quark())
GQuark emu_store_error_quark(void);

typedef enum {
    EMU_STORE_ERROR_IO,         /* IOError, canRetry true */
    EMU_STORE_ERROR_IO_NORETRY, /* IOError from a DoNotRetryIOException */
    EMU_STORE_ERROR_ILLEGAL,    /* IllegalArgument */
    EMU_STORE_ERROR_EXISTS,     /* AlreadyExists */
    EMU_STORE_ERROR_INTERNAL,   /* undeclared: TApplicationException 6 */
} emu_store_error_t;

/* HBase's LATEST_TIMESTAMP: "let the server pick". */
#define EMU_LATEST_TS INT64_MAX
/* No delete marker. */
#define EMU_NO_MARK INT64_MIN

typedef struct emu_store emu_store;
typedef struct emu_table emu_table;
typedef struct emu_row emu_row;

/* One column family as created; echoed back by getColumnDescriptors. */
struct emu_family {
    uint8_t *name; /* family name, NUL-terminated copy */
    size_t name_len;
    int32_t max_versions;
    char *compression;
    char *bloom_type;
    gboolean in_memory;
    gboolean block_cache;
    int32_t ttl;
    int32_t bloom_vector_size;
    int32_t bloom_nb_hashes;
};

/* A region: [start, end) of one table's key space, with counters. */
struct emu_region {
    GBytes *start;        /* empty: table start */
    GBytes *end;          /* empty: table end */
    int64_t id;           /* region id: the table's creation time, ms */
    GBytes *name;         /* "table,start,id.encoded." */
    GMutex serial;        /* held around a call with --region-serial */
    gint64 requests;      /* atomic: calls that touched this region */
    gint64 rows_read;     /* atomic: rows returned from this region */
    gint64 cells_written; /* atomic: cells put (incl. increments, appends) */
};

/* Store-wide settings, fixed at startup. */
struct emu_store_config {
    guint regions;         /* even split of the byte space */
    GPtrArray *split_keys; /* GBytes *, explicit split points, or NULL */
    char *server_name;     /* TRegionInfo.serverName */
    int32_t server_port;   /* TRegionInfo.port */
};

/* Which columns a read returns: per family, all, none or a qualifier set. */
typedef struct emu_colspec emu_colspec;

/*
 * A read: columns, time range, versions per column.  Fields after
 * max_versions are Thrift2's and read as "not asked for" when zero.
 */
struct emu_read {
    const emu_colspec *cols; /* NULL: everything */
    int64_t max_ts;          /* cells with ts < max_ts; EMU_LATEST_TS */
    int32_t max_versions;
    int64_t min_ts;           /* cells with ts >= min_ts */
    const int64_t *fam_min;   /* per family [min, max), replacing the */
    const int64_t *fam_max;   /* range above; NULL: none */
    gboolean has_store_limit; /* Get.setMaxResultsPerColumnFamily */
    int32_t store_limit;      /* cells per family at most */
    int32_t store_offset;     /* cells per family skipped first */
};

/* One mutation on one row, already parsed. */
typedef enum {
    EMU_MUT_PUT,
    EMU_MUT_DELETE_COLUMN,         /* all versions <= ts of fam:qual */
    EMU_MUT_DELETE_FAMILY,         /* all versions <= ts of the family */
    EMU_MUT_DELETE_VERSION,        /* fam:qual at exactly ts, or its newest */
    EMU_MUT_DELETE_FAMILY_VERSION, /* every column of the family at ts */
} emu_mut_kind;

struct emu_mut {
    emu_mut_kind kind;
    guint fam; /* family index in the table */
    const uint8_t *qual;
    size_t qual_len;
    const uint8_t *value;
    size_t value_len;
    gboolean has_ts; /* ts below instead of the call's */
    int64_t ts;
};

/* TableDescriptorChecker's refusal of a table without families. */
#define EMU_STORE_NO_FAMILY_MESSAGE                                           \
    "org.apache.hadoop.hbase.DoNotRetryIOException: Table should have at "    \
    "least one column family. Set hbase.table.sanity.checks to false at "     \
    "conf or table descriptor if you want to bypass sanity checks"

/* Frees a struct emu_family (for arrays handed to create_table). */
void emu_family_free(gpointer f);

emu_store *emu_store_new(const struct emu_store_config *cfg);
void emu_store_free(emu_store *s);

/* Admin. Names are raw bytes; namespaces other than default need
 * emu_store_add_namespace (only --create-table does that). */
void emu_store_add_namespace(emu_store *s, const char *ns);
gboolean emu_store_create_table(emu_store *s, const uint8_t *name,
                                size_t name_len, GPtrArray *families,
                                GError **error);
/* As above with explicit split keys (GBytes *, NULL: the store's
 * default regions), checked as Admin.createTable checks them. */
gboolean emu_store_create_table_split(emu_store *s, const uint8_t *name,
                                      size_t name_len, GPtrArray *families,
                                      GPtrArray *split_keys,
                                      const GPtrArray *values, GError **error);
/*
 * A schema change (HBase's ModifyTableProcedure, which the column family
 * calls go through too): fn gets copies of the table's families (struct
 * emu_family *, freed by the array) and descriptor values (GBytes *
 * pairs), edits them in place and may refuse with an error.  Cells of a
 * family that is gone are dropped, a new family starts empty, each kept
 * family keeps at most its new maxVersions.  Regions, their names and
 * the enabled state stay.  The table becomes a new object: calls and
 * scanners that hold the old one go on reading the old cells, live as
 * long as the new object is (emu_table_is_live follows it).
 */
typedef gboolean (*emu_store_alter_fn)(const emu_table *t, GPtrArray *families,
                                       GPtrArray *values, gpointer data,
                                       GError **error);
gboolean emu_store_alter_table(emu_store *s, const uint8_t *name,
                               size_t name_len, emu_store_alter_fn fn,
                               gpointer data, GError **error);
/* Empties a disabled table, which comes back enabled; without
 * preserve_splits it has one region again. */
gboolean emu_store_truncate_table(emu_store *s, const uint8_t *name,
                                  size_t name_len, gboolean preserve_splits,
                                  GError **error);
/* Namespaces: create fails if it exists, delete if it is missing, holds
 * tables or is reserved (default, hbase). */
gboolean emu_store_create_namespace(emu_store *s, const char *ns,
                                    const GHashTable *conf, GError **error);
/* A namespace's configuration: kept as given (NULL or empty: none);
 * the getter's copy is the caller's, NULL when there is none. */
gboolean emu_store_set_namespace_conf(emu_store *s, const char *ns,
                                      const GHashTable *conf);
GHashTable *emu_store_namespace_conf(emu_store *s, const char *ns);
gboolean emu_store_delete_namespace(emu_store *s, const char *ns,
                                    GError **error);
gboolean emu_store_has_namespace(emu_store *s, const char *ns);
/* A missing table met by a batch of n actions (n > 0): HBase's
 * AsyncProcess fails each and answers RetriesExhaustedWithDetailsException
 * (retryable).  Takes err; returns the error to answer. */
GError *emu_store_batch_error(GError *err, guint n);
/* Namespace names, sorted. */
GPtrArray *emu_store_namespace_names(emu_store *s);
gboolean emu_store_delete_table(emu_store *s, const uint8_t *name,
                                size_t name_len, GError **error);
gboolean emu_store_set_enabled(emu_store *s, const uint8_t *name,
                               size_t name_len, gboolean enabled,
                               GError **error);
/* Table names (NUL-terminated strings) with their enabled flag, sorted. */
GPtrArray *emu_store_table_names(emu_store *s, GArray **enabled);
/* Compacts a table or a region by name; major drops delete markers. */
gboolean emu_store_compact(emu_store *s, const uint8_t *name, size_t len,
                           gboolean major, GError **error);
/* Finds the region whose meta row sorts last at or before meta_row. */
emu_table *emu_store_region_for_meta_row(emu_store *s, const uint8_t *row,
                                         size_t len, guint *region,
                                         GError **error);
const struct emu_store_config *emu_store_get_config(const emu_store *s);
/* Writes every region's counters in the documented text format. */
void emu_store_write_stats(emu_store *s, GString *out);

/*
 * A table reference for data calls: fails with HBase's error when the
 * table is missing (TableNotFoundException) or, with need_enabled, when
 * it is disabled (TableNotEnabledException).
 */
emu_table *emu_store_table_ref(emu_store *s, const uint8_t *name,
                               size_t name_len, gboolean need_enabled,
                               GError **error);
emu_table *emu_table_ref(emu_table *t);
void emu_table_unref(emu_table *t);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(emu_table, emu_table_unref)

const char *emu_table_name(const emu_table *t);
gboolean emu_table_is_live(emu_table *t, GError **error);
guint emu_table_family_count(const emu_table *t);
const struct emu_family *emu_table_family(const emu_table *t, guint i);
/* Descriptor values (GBytes *: key, value, ...), sorted by key. */
const GPtrArray *emu_table_values(const emu_table *t);
/* Creation time in ms: every region's id. */
int64_t emu_table_created_ms(const emu_table *t);
/* Index of a family by name, or FALSE with NoSuchColumnFamilyException. */
gboolean emu_table_family_index(const emu_table *t, const uint8_t *fam,
                                size_t len, guint *index, GError **error);
guint emu_table_region_count(const emu_table *t);
struct emu_region *emu_table_region(emu_table *t, guint i);
guint emu_table_region_of(const emu_table *t, const uint8_t *key, size_t len);

/* Column specs: HBase's Get.addFamily/addColumn, applied in order. */
emu_colspec *emu_colspec_new(const emu_table *t);
void emu_colspec_free(emu_colspec *c);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(emu_colspec, emu_colspec_free)
gboolean emu_colspec_add(emu_colspec *c, const emu_table *t,
                         const uint8_t *col, size_t len, GError **error);
/* Every column (GByteArray *) in turn; of several missing families the
 * bytewise first is named, as HBase's region checks its sorted map. */
gboolean emu_colspec_add_all(emu_colspec *c, const emu_table *t,
                             const GPtrArray *cols, GError **error);

/* Splits "fam:qual" at the first ':' as CellUtil.parseColumn does. */
gboolean emu_store_parse_column(const uint8_t *col, size_t len,
                                size_t *fam_len, const uint8_t **qual,
                                size_t *qual_len);

/* Locking: readers share a table, writers hold it alone. */
void emu_table_read_lock(emu_table *t);
void emu_table_read_unlock(emu_table *t);
void emu_table_write_lock(emu_table *t);
void emu_table_write_unlock(emu_table *t);

/* Row access; call with the table lock held. */
emu_row *emu_table_row_find(emu_table *t, const uint8_t *key, size_t len);
/* Node of the first row at or after key (forward) / at or before key
 * (reversed), or strictly after / before without inclusive; key NULL
 * means the table's first / last row.  Valid while the lock is held. */
GTreeNode *emu_table_seek(emu_table *t, const uint8_t *key, size_t len,
                          gboolean reversed, gboolean inclusive);
GTreeNode *emu_table_node_step(GTreeNode *n, gboolean reversed);
emu_row *emu_table_node_row(GTreeNode *n);
const uint8_t *emu_row_key(const emu_row *r, size_t *len);
/*
 * Appends the cells of r that a read returns to out (struct emu_cell), in
 * HBase order; the cells point into the store and are valid while the
 * table lock is held.
 */
void emu_row_cells(const emu_table *t, const emu_row *r,
                   const struct emu_read *rd, GArray *out);

/*
 * Applies mutations to one row under the write lock: deletes first, then
 * puts, each group at timestamp ts (EMU_LATEST_TS: a server timestamp,
 * strictly increasing per row).  Returns the timestamp used.
 */
int64_t emu_table_mutate(emu_table *t, const uint8_t *key, size_t len,
                         const struct emu_mut *muts, guint n, int64_t ts);
/* Deletes every cell of the row with ts <= ts (Delete(row, ts)). */
void emu_table_delete_row(emu_table *t, const uint8_t *key, size_t len,
                          int64_t ts);
/*
 * Read-modify-write of one cell under the write lock: increment (8-byte
 * big-endian) or append.  The new cell is returned through *value.
 */
gboolean emu_table_increment(emu_table *t, const uint8_t *key, size_t len,
                             guint fam, const uint8_t *qual, size_t qual_len,
                             int64_t amount, int64_t *result, int64_t *ts_out,
                             GError **error);
void emu_table_append(emu_table *t, const uint8_t *key, size_t len, guint fam,
                      const uint8_t *qual, size_t qual_len,
                      const uint8_t *value, size_t value_len,
                      GByteArray **result, int64_t *ts_out);
/* Newest visible version of one cell, or NULL. */
const uint8_t *emu_table_cell_latest(emu_table *t, const uint8_t *key,
                                     size_t len, guint fam,
                                     const uint8_t *qual, size_t qual_len,
                                     size_t *value_len);

/* HBase's Bytes.compareTo: unsigned bytes, a prefix sorts first. */
int emu_store_bytes_cmp(const uint8_t *a, size_t alen, const uint8_t *b,
                        size_t blen);

/* Milliseconds since the epoch. */
int64_t emu_store_now_ms(void);
/* Bytes.toStringBinary: printable ASCII kept, the rest as \xNN. */
void emu_store_append_binary(GString *out, const uint8_t *p, size_t len);
