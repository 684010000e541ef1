/* hconn.h: one blocking Thrift1 connection to an HBase Thrift server, and
 * the few calls a batch copy and the table catalog need, written and read
 * with wire.c (with SASL GSSAPI when the config says so). */
#pragma once

#include <glib.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "wire.h"

#define HCONN_ERROR hconn_error_quark()
GQuark hconn_error_quark(void);

typedef enum {
    HCONN_ERROR_IO,        /* connect, send, receive, timeout: retry helps */
    HCONN_ERROR_PROTOCOL,  /* a reply that is not what the call returns */
    HCONN_ERROR_REMOTE,    /* the server's IOError / IllegalArgument */
    HCONN_ERROR_APP,       /* a TApplicationException */
    HCONN_ERROR_MISPLACED, /* the server speaks the other service */
} hconn_error_t;

/* One cell as read: pointers into a reply kept by the hconn_rows that
 * holds it (or, for hconn_put cells, into the caller's memory). */
struct hconn_cell {
    const uint8_t *col; /* "family:qualifier" */
    uint32_t col_len;
    const uint8_t *val;
    uint32_t val_len;
    int64_t ts;
};

/* One row: its key and cells[first .. first + n) of the rows it is in. */
struct hconn_row {
    const uint8_t *key;
    uint32_t key_len;
    guint first;
    guint n;
};

/* Rows read by one or more calls; owns the replies they point into. */
struct hconn_rows {
    GArray *rows;       /* struct hconn_row */
    GArray *cells;      /* struct hconn_cell */
    GPtrArray *replies; /* GBytes: what the pointers above point into */
};

void hconn_rows_init(struct hconn_rows *r);
void hconn_rows_clear(struct hconn_rows *r); /* keeps the arrays */
void hconn_rows_free(struct hconn_rows *r);

/* A region: [start, end) of the table's physical keys, empty = open. */
struct hconn_region {
    GBytes *start;
    GBytes *end;
};

struct hconn;

/* Connects to the configured backend server cfg->servers[index %
 * n_servers] with its protocol, transport and timeouts. */
struct hconn *hconn_open(const struct config *cfg, size_t index,
                         GError **error) G_GNUC_WARN_UNUSED_RESULT;
/* The same to [backend] thrift2_servers[index % n], speaking Thrift2
 * (THBaseService) for the calls below that the table catalog makes:
 * hconn_table_exists, hconn_create_table, hconn_get_rows,
 * hconn_check_and_put, hconn_scan_first, hconn_table_empty,
 * hconn_get_table_regions, hconn_table_names. */
struct hconn *hconn_open_thrift2(const struct config *cfg, size_t index,
                                 GError **error) G_GNUC_WARN_UNUSED_RESULT;
/* The index-th of [backend] servers then thrift2_servers, each in its
 * own service (index below n_servers + n_thrift2_servers). */
struct hconn *hconn_open_listed(const struct config *cfg, size_t index,
                                GError **error) G_GNUC_WARN_UNUSED_RESULT;
void hconn_free(struct hconn *c);
const char *hconn_peer(const struct hconn *c);

/* Whether the server speaks the service c was opened for, by its
 * getThriftServerType (both services of HBase 2.x have it): FALSE with
 * HCONN_ERROR_MISPLACED and the sentence for the operator when it is
 * the other one.  A server without the method (HBase 1.x) passes. */
gboolean hconn_check_service(struct hconn *c, GError **error);

/* getTableRegions (Thrift2: getAllRegionLocations): regions in key order
 * (struct hconn_region, freed with the array); none for a table Thrift1
 * does not find, an error from Thrift2. */
GArray *hconn_get_table_regions(struct hconn *c, const char *table,
                                GError **error);
void hconn_regions_free(GArray *regions);

/* getTableNames (Thrift2: getTableNamesByPattern ".*"): every user
 * table's name, "ns:table" outside the default namespace, appended to
 * names (char *). */
gboolean hconn_table_names(struct hconn *c, GPtrArray *names, GError **error);

/* getColumnDescriptors: whether the table exists (it has families). */
gboolean hconn_table_exists(struct hconn *c, const char *table,
                            gboolean *exists, GError **error);

/* scannerOpenWithScan over [start, stop) with sortColumns (every cell of
 * a row as a list) and the given caching. */
gboolean hconn_scanner_open(struct hconn *c, const char *table,
                            const uint8_t *start, size_t start_len,
                            const uint8_t *stop, size_t stop_len,
                            int32_t caching, int32_t *id, GError **error);
/* hconn_scanner_open whose rows carry their key only (one cell, no
 * value): what reading a table's keys costs. */
gboolean hconn_scanner_open_keys(struct hconn *c, const char *table,
                                 const uint8_t *start, size_t start_len,
                                 const uint8_t *stop, size_t stop_len,
                                 int32_t caching, int32_t *id, GError **error);
/* The keys of the first n rows of [start, stop) (one cell a row, values
 * empty), appended to out: a cheap sample of where a range's rows lie.
 * reversed: the last n rows, start then the larger bound (inclusive, as
 * HBase's reversed scans take it) and stop the smaller (exclusive).
 * Thrift1 only. */
gboolean hconn_sample_keys(struct hconn *c, const char *table,
                           const uint8_t *start, size_t start_len,
                           const uint8_t *stop, size_t stop_len,
                           gboolean reversed, int32_t n,
                           struct hconn_rows *out, GError **error);
/* scannerGetList: appends the rows to out; none at the end of the scan. */
gboolean hconn_scanner_get_list(struct hconn *c, int32_t id, int32_t nrows,
                                struct hconn_rows *out, GError **error);
gboolean hconn_scanner_close(struct hconn *c, int32_t id, GError **error);

/* getRows: appends the rows that exist to out (missing rows are left
 * out, the others keep the order asked). */
gboolean hconn_get_rows(struct hconn *c, const char *table,
                        const GPtrArray *keys /* GBytes */,
                        struct hconn_rows *out, GError **error);

/* getVer: every version of one column of one row, newest first, appended
 * to out->cells (no row added). */
gboolean hconn_get_ver(struct hconn *c, const char *table, const uint8_t *row,
                       size_t row_len, const uint8_t *col, size_t col_len,
                       int32_t versions, struct hconn_rows *out,
                       GError **error);

/* mutateRowsTs: puts every cell of rows (their ts fields are ignored) at
 * timestamp ts, one BatchMutation per row. */
gboolean hconn_mutate_rows_ts(struct hconn *c, const char *table,
                              const struct hconn_row *rows, guint nrows,
                              const struct hconn_cell *cells, int64_t ts,
                              GError **error);

/* mutateRows: the same, at the server's clock (benchmark baseline). */
gboolean hconn_mutate_rows(struct hconn *c, const char *table,
                           const struct hconn_row *rows, guint nrows,
                           const struct hconn_cell *cells, GError **error);

/* createTable with one family keeping one version; *created FALSE when
 * the table was there already (AlreadyExists is no error here). */
gboolean hconn_create_table(struct hconn *c, const char *table,
                            const char *family, gboolean *created,
                            GError **error);

/* checkAndPut: puts cells[0] (Thrift1's checkAndPut takes one mutation)
 * if column holds value, or, value NULL, if column is absent; *applied
 * says whether it did. */
gboolean hconn_check_and_put(struct hconn *c, const char *table,
                             const uint8_t *row, size_t row_len,
                             const char *column, const uint8_t *value,
                             size_t value_len, const struct hconn_cell *cells,
                             guint ncells, gboolean *applied, GError **error);

/* The first n rows of a scan of the whole table, appended to out. */
gboolean hconn_scan_first(struct hconn *c, const char *table, int32_t n,
                          struct hconn_rows *out, GError **error);

/* Whether a scan of the whole table finds no row at all. */
gboolean hconn_table_empty(struct hconn *c, const char *table, gboolean *empty,
                           GError **error);

/* Calls sent since the connection opened (tests, statistics). */
guint64 hconn_calls(const struct hconn *c);
