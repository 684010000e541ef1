/* hbase1.c: the Thrift1 method table (field ids from thrift/hbase.thrift). */
#include "hbase1.h"
#include "hbase2.h"

#include <string.h>

#include "hbase1_table.h"
#include "wire.h"

/* ---- structs ----------------------------------------------------------- */

/* BatchMutation { 1: row, 2: mutations } */
SCHEMA(batch_mutation, FALSE,
       F(1, WIRE_T_STRING, HBASE1_ROW, NULL, "BatchMutation.row"));

/* TIncrement { 1: table, 2: row, ... } */
SCHEMA(t_increment, TRUE,
       F(1, WIRE_T_STRING, HBASE1_TABLE, NULL, "TIncrement.table"),
       F(2, WIRE_T_STRING, HBASE1_ROW, NULL, "TIncrement.row"));

/* TAppend { 1: table, 2: row, ... } */
SCHEMA(t_append, TRUE,
       F(1, WIRE_T_STRING, HBASE1_TABLE, NULL, "TAppend.table"),
       F(2, WIRE_T_STRING, HBASE1_ROW, NULL, "TAppend.row"));

/* TRowResult { 1: row, 2: columns, 3: sortedColumns } */
SCHEMA(t_row_result, FALSE,
       F(1, WIRE_T_STRING, HBASE1_ROW_OUT, NULL, "TRowResult.row"));

/* ---- argument structs ---------------------------------------------------- */

/* (1: tableName, 2: row, ...): get, getVer*, getRow*, mutateRow*,
 * atomicIncrement, deleteAll*, checkAndPut */
SCHEMA(args_table_row, FALSE,
       F(1, WIRE_T_STRING, HBASE1_TABLE, NULL, "tableName"),
       F(2, WIRE_T_STRING, HBASE1_ROW, NULL, "row"));

/* (1: tableName, 2: list<Text> rows, ...): getRows* */
SCHEMA(args_table_rows, FALSE,
       F(1, WIRE_T_STRING, HBASE1_TABLE, NULL, "tableName"),
       F(2, WIRE_T_LIST, HBASE1_ROWS, NULL, "rows"));

/* (1: tableName, 2: list<BatchMutation>, ...): mutateRows* */
SCHEMA(args_table_batches, FALSE,
       F(1, WIRE_T_STRING, HBASE1_TABLE, NULL, "tableName"),
       F(2, WIRE_T_LIST, HBASE1_STRUCT_LIST, &batch_mutation, "rowBatches"));

/* (1: row): getRegionInfo's hbase:meta row "table,row,suffix" */
SCHEMA(args_meta_row, FALSE,
       F(1, WIRE_T_STRING, HBASE1_META_ROW, NULL, "row"));

/* (1: TIncrement) */
SCHEMA(args_increment, FALSE,
       F(1, WIRE_T_STRUCT, HBASE1_STRUCT, &t_increment, "increment"));

/* (1: list<TIncrement>) */
SCHEMA(args_increments, FALSE,
       F(1, WIRE_T_LIST, HBASE1_STRUCT_LIST, &t_increment, "increments"));

/* (1: TAppend) */
SCHEMA(args_append, FALSE,
       F(1, WIRE_T_STRUCT, HBASE1_STRUCT, &t_append, "append"));

/* (1: tableName, ...): scanner opens until the scan engine takes them */
SCHEMA(args_table, FALSE,
       F(1, WIRE_T_STRING, HBASE1_TABLE, NULL, "tableName"));

/* ---- scanner calls, for the scan engine ---------------------------------- */

/* Kept apart from 'args': the codec refuses any 'args' field sent twice,
 * and a pass-through scan sends its bounds on as they came. */

/* TScan { 1: startRow, 2: stopRow, 3: timestamp, 4: columns, 5: caching,
 * 6: filterString, 7: batchSize, 8: sortColumns, 9: reversed,
 * 10: cacheBlocks }: the order a bucket's TScan is written in */
SCHEMA(t_scan, FALSE,
       R(1, WIRE_T_STRING, HBASE1_ROLE_START, NULL, "TScan.startRow"),
       R(2, WIRE_T_STRING, HBASE1_ROLE_STOP, NULL, "TScan.stopRow"),
       P(3, WIRE_T_I64, HBASE1_ROLE_TIMESTAMP),
       P(4, WIRE_T_LIST, HBASE1_ROLE_COLUMNS),
       P(5, WIRE_T_I32, HBASE1_ROLE_CACHING),
       R(6, WIRE_T_STRING, HBASE1_ROLE_FILTER, NULL, "TScan.filterString"),
       P(7, WIRE_T_I32, HBASE1_ROLE_BATCH),
       P(8, WIRE_T_BOOL, HBASE1_ROLE_SORTED),
       R(9, WIRE_T_BOOL, HBASE1_ROLE_REVERSED, NULL, "TScan.reversed"),
       P(10, WIRE_T_BOOL, HBASE1_ROLE_CACHE_BLOCKS));

#define SCAN_TABLE R(1, WIRE_T_STRING, HBASE1_ROLE_TABLE, NULL, "tableName")
#define SCAN_START R(2, WIRE_T_STRING, HBASE1_ROLE_START, NULL, "startRow")

/* scannerOpenWithScan (1: tableName, 2: TScan scan, 3: attributes) */
SCHEMA(scan_with_scan, FALSE, SCAN_TABLE,
       R(2, WIRE_T_STRUCT, HBASE1_ROLE_SCAN, &t_scan, "scan"),
       P(3, WIRE_T_MAP, HBASE1_ROLE_ATTRIBUTES));

/* scannerOpen (1: tableName, 2: startRow, 3: columns, 4: attributes) */
SCHEMA(scan_open, FALSE, SCAN_TABLE, SCAN_START,
       P(3, WIRE_T_LIST, HBASE1_ROLE_COLUMNS),
       P(4, WIRE_T_MAP, HBASE1_ROLE_ATTRIBUTES));

/* scannerOpenWithStop (1: tableName, 2: startRow, 3: stopRow,
 * 4: columns, 5: attributes) */
SCHEMA(scan_with_stop, FALSE, SCAN_TABLE, SCAN_START,
       R(3, WIRE_T_STRING, HBASE1_ROLE_STOP, NULL, "stopRow"),
       P(4, WIRE_T_LIST, HBASE1_ROLE_COLUMNS),
       P(5, WIRE_T_MAP, HBASE1_ROLE_ATTRIBUTES));

/* scannerOpenWithPrefix (1: tableName, 2: startAndPrefix, 3: columns,
 * 4: attributes) */
SCHEMA(scan_with_prefix, FALSE, SCAN_TABLE,
       R(2, WIRE_T_STRING, HBASE1_ROLE_PREFIX, NULL, "startAndPrefix"),
       P(3, WIRE_T_LIST, HBASE1_ROLE_COLUMNS),
       P(4, WIRE_T_MAP, HBASE1_ROLE_ATTRIBUTES));

/* scannerOpenTs (1: tableName, 2: startRow, 3: columns, 4: timestamp,
 * 5: attributes) */
SCHEMA(scan_open_ts, FALSE, SCAN_TABLE, SCAN_START,
       P(3, WIRE_T_LIST, HBASE1_ROLE_COLUMNS),
       P(4, WIRE_T_I64, HBASE1_ROLE_TIMESTAMP),
       P(5, WIRE_T_MAP, HBASE1_ROLE_ATTRIBUTES));

/* scannerOpenWithStopTs (1: tableName, 2: startRow, 3: stopRow,
 * 4: columns, 5: timestamp, 6: attributes) */
SCHEMA(scan_with_stop_ts, FALSE, SCAN_TABLE, SCAN_START,
       R(3, WIRE_T_STRING, HBASE1_ROLE_STOP, NULL, "stopRow"),
       P(4, WIRE_T_LIST, HBASE1_ROLE_COLUMNS),
       P(5, WIRE_T_I64, HBASE1_ROLE_TIMESTAMP),
       P(6, WIRE_T_MAP, HBASE1_ROLE_ATTRIBUTES));

/* scannerGet, scannerClose (1: id) */
SCHEMA(scan_id, FALSE, P(1, WIRE_T_I32, HBASE1_ROLE_ID));

/* scannerGetList (1: id, 2: nbRows) */
SCHEMA(scan_id_rows, FALSE, P(1, WIRE_T_I32, HBASE1_ROLE_ID),
       P(2, WIRE_T_I32, HBASE1_ROLE_NROWS));

/* Filled from the scanner rows of the table below at first use. */
static struct hbase1_scanner table_scanner;

/* ---- result structs ------------------------------------------------------ */

/* success: list<TRowResult> */
SCHEMA(result_row_results, FALSE,
       F(0, WIRE_T_LIST, HBASE1_STRUCT_LIST, &t_row_result, "success"));

/* In IDL order.  'index' is filled in by position. */
static struct hbase1_method hbase1_table[] = {
    M(enableTable, HBASE1_ADMIN, TRUE, NULL, NULL),
    M(disableTable, HBASE1_ADMIN, TRUE, NULL, NULL),
    M(isTableEnabled, HBASE1_ADMIN, TRUE, NULL, NULL),
    M(compact, HBASE1_ADMIN, TRUE, NULL, NULL),
    M(majorCompact, HBASE1_ADMIN, TRUE, NULL, NULL),
    M(getTableNames, HBASE1_ADMIN, TRUE, NULL, NULL),
    M(getTableNamesWithIsTableEnabled, HBASE1_ADMIN, TRUE, NULL, NULL),
    M(getColumnDescriptors, HBASE1_ADMIN, TRUE, NULL, NULL),
    M(getTableRegions, HBASE1_ADMIN, TRUE, NULL, NULL),
    MIA(createTable, HBASE1_ADMIN, NULL, NULL),
    M(deleteTable, HBASE1_ADMIN, TRUE, NULL, NULL),
    M(get, HBASE1_READ, TRUE, &args_table_row, NULL),
    M(getVer, HBASE1_READ, TRUE, &args_table_row, NULL),
    M(getVerTs, HBASE1_READ, TRUE, &args_table_row, NULL),
    M(getRow, HBASE1_READ, TRUE, &args_table_row, &result_row_results),
    M(getRowWithColumns, HBASE1_READ, TRUE, &args_table_row,
      &result_row_results),
    M(getRowTs, HBASE1_READ, TRUE, &args_table_row, &result_row_results),
    M(getRowWithColumnsTs, HBASE1_READ, TRUE, &args_table_row,
      &result_row_results),
    M(getRows, HBASE1_READ, TRUE, &args_table_rows, &result_row_results),
    M(getRowsWithColumns, HBASE1_READ, TRUE, &args_table_rows,
      &result_row_results),
    M(getRowsTs, HBASE1_READ, TRUE, &args_table_rows, &result_row_results),
    M(getRowsWithColumnsTs, HBASE1_READ, TRUE, &args_table_rows,
      &result_row_results),
    MIA(mutateRow, HBASE1_WRITE, &args_table_row, NULL),
    MIA(mutateRowTs, HBASE1_WRITE, &args_table_row, NULL),
    MIA(mutateRows, HBASE1_WRITE, &args_table_batches, NULL),
    MIA(mutateRowsTs, HBASE1_WRITE, &args_table_batches, NULL),
    MIA(atomicIncrement, HBASE1_WRITE, &args_table_row, NULL),
    M(deleteAll, HBASE1_WRITE, TRUE, &args_table_row, NULL),
    M(deleteAllTs, HBASE1_WRITE, TRUE, &args_table_row, NULL),
    M(deleteAllRow, HBASE1_WRITE, TRUE, &args_table_row, NULL),
    M(increment, HBASE1_WRITE, TRUE, &args_increment, NULL),
    M(incrementRows, HBASE1_WRITE, TRUE, &args_increments, NULL),
    M(deleteAllRowTs, HBASE1_WRITE, TRUE, &args_table_row, NULL),
    MS(scannerOpenWithScan, HBASE1_SCAN_OPEN, FALSE, &args_table, NULL,
       &scan_with_scan),
    MS(scannerOpen, HBASE1_SCAN_OPEN, FALSE, &args_table, NULL, &scan_open),
    MS(scannerOpenWithStop, HBASE1_SCAN_OPEN, FALSE, &args_table, NULL,
       &scan_with_stop),
    MS(scannerOpenWithPrefix, HBASE1_SCAN_OPEN, FALSE, &args_table, NULL,
       &scan_with_prefix),
    MS(scannerOpenTs, HBASE1_SCAN_OPEN, FALSE, &args_table, NULL,
       &scan_open_ts),
    MS(scannerOpenWithStopTs, HBASE1_SCAN_OPEN, FALSE, &args_table, NULL,
       &scan_with_stop_ts),
    MS(scannerGet, HBASE1_SCAN_NEXT, TRUE, NULL, &result_row_results,
       &scan_id),
    MS(scannerGetList, HBASE1_SCAN_NEXT, TRUE, NULL, &result_row_results,
       &scan_id_rows),
    MS(scannerClose, HBASE1_SCAN_CLOSE, TRUE, NULL, NULL, &scan_id),
    M(getRegionInfo, HBASE1_ADMIN, TRUE, &args_meta_row, NULL),
    M(append, HBASE1_WRITE, TRUE, &args_append, NULL),
    MIA(checkAndPut, HBASE1_WRITE, &args_table_row, NULL),
    M(getThriftServerType, HBASE1_ADMIN, FALSE, NULL, NULL),
    M(getClusterId, HBASE1_ADMIN, FALSE, NULL, NULL),
    M(grant, HBASE1_ADMIN, TRUE, NULL, NULL),
    M(revoke, HBASE1_ADMIN, TRUE, NULL, NULL),
};

/* Methods sorted by (length, bytes) for binary search. */
static const struct hbase1_method *hbase1_sorted[G_N_ELEMENTS(hbase1_table)];

static struct hbase1_service hbase1_thrift1 = {
    .id = HBASE1_SERVICE_THRIFT1,
    .label = "thrift1",
    .table = hbase1_table,
    .n = G_N_ELEMENTS(hbase1_table),
    .sorted = hbase1_sorted,
    .scanner = &table_scanner,
};

static int
hbase1_cmp_name(const uint8_t *a, size_t alen, const uint8_t *b, size_t blen)
{
    if (alen != blen) {
        return alen < blen ? -1 : 1;
    }
    return memcmp(a, b, alen);
}

static int
hbase1_cmp_sorted(const void *a, const void *b)
{
    const struct hbase1_method *x = *(const struct hbase1_method *const *)a;
    const struct hbase1_method *y = *(const struct hbase1_method *const *)b;

    return hbase1_cmp_name((const uint8_t *)x->name, x->name_len,
                           (const uint8_t *)y->name, y->name_len);
}

/* Derives how scanners are driven from the scanner rows (see hbase1.h):
 * the engine then never looks a method up by name. */
static void
hbase1_scanner_init(struct hbase1_scanner *sc,
                    const struct hbase1_method *table, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        const struct hbase1_method *m = &table[i];
        const struct hbase1_field *f;

        if (m->scanner != sc) {
            continue;
        }
        if (m->kind == HBASE1_SCAN_OPEN &&
            (f = hbase1_schema_role(m->scan_args, HBASE1_ROLE_SCAN)) != NULL) {
            sc->open = m;
            sc->scan = f->sub;
        } else if (m->kind == HBASE1_SCAN_NEXT &&
                   hbase1_schema_role(m->scan_args, HBASE1_ROLE_NROWS) !=
                       NULL) {
            sc->fetch = m;
            sc->rows = hbase1_schema_field(m->result, 0);
            sc->row = sc->rows->sub;
        } else if (m->kind == HBASE1_SCAN_CLOSE) {
            sc->close = m;
        }
    }
    g_assert(sc->open != NULL && sc->fetch != NULL && sc->close != NULL);
    for (uint8_t i = 0; i < sc->row->nfields; i++) {
        if (sc->row->fields[i].action == HBASE1_ROW_OUT) {
            sc->key = &sc->row->fields[i];
        }
    }
    g_assert(sc->key != NULL);
}

/* The services in id order; method indexes follow it. */
static struct hbase1_service *hbase1_services[HBASE1_NSERVICES];
static size_t hbase1_nmethods;

static void
hbase1_service_init(struct hbase1_service *svc, size_t first)
{
    for (size_t i = 0; i < svc->n; i++) {
        g_assert(first + i <= G_MAXUINT8);
        svc->table[i].index = (uint8_t)(first + i);
        svc->table[i].service = svc;
        svc->sorted[i] = &svc->table[i];
    }
    hbase1_scanner_init(svc->scanner, svc->table, svc->n);
    qsort(svc->sorted, svc->n, sizeof(svc->sorted[0]), hbase1_cmp_sorted);
}

static void
hbase1_init(void)
{
    static gsize done = 0;

    if (g_once_init_enter(&done)) {
        size_t first = 0;

        hbase1_services[HBASE1_SERVICE_THRIFT1] = &hbase1_thrift1;
        hbase1_services[HBASE1_SERVICE_THRIFT2] = hbase2_service_table();
        for (size_t s = 0; s < HBASE1_NSERVICES; s++) {
            hbase1_service_init(hbase1_services[s], first);
            first += hbase1_services[s]->n;
        }
        hbase1_nmethods = first;
        g_once_init_leave(&done, 1);
    }
}

const struct hbase1_service *
hbase1_service(hbase1_service_id_t id)
{
    hbase1_init();
    g_return_val_if_fail((size_t)id < HBASE1_NSERVICES, NULL);
    return hbase1_services[id];
}

const struct hbase1_method *
hbase1_service_lookup(const struct hbase1_service *svc, const uint8_t *name,
                      size_t len)
{
    size_t lo = 0, hi = svc->n;

    hbase1_init();
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        const struct hbase1_method *m = svc->sorted[mid];
        int c = hbase1_cmp_name(name, len, (const uint8_t *)m->name,
                                m->name_len);

        if (c == 0) {
            return m;
        }
        if (c < 0) {
            hi = mid;
        } else {
            lo = mid + 1;
        }
    }
    return NULL;
}

size_t
hbase1_method_count(void)
{
    hbase1_init();
    return hbase1_nmethods;
}

const struct hbase1_method *
hbase1_method_at(size_t index)
{
    hbase1_init();
    for (size_t s = 0; s < HBASE1_NSERVICES; s++) {
        if (index < hbase1_services[s]->n) {
            return &hbase1_services[s]->table[index];
        }
        index -= hbase1_services[s]->n;
    }
    return NULL;
}

const struct hbase1_method *
hbase1_lookup(const uint8_t *name, size_t len)
{
    return hbase1_service_lookup(&hbase1_thrift1, name, len);
}

const struct hbase1_method *
hbase1_methods(size_t *count)
{
    hbase1_init();
    *count = G_N_ELEMENTS(hbase1_table);
    return hbase1_table;
}

const struct hbase1_field *
hbase1_schema_field(const struct hbase1_schema *s, int16_t fid)
{
    for (uint8_t i = 0; i < s->nfields; i++) {
        if (s->fields[i].fid == fid) {
            return &s->fields[i];
        }
    }
    return NULL;
}

const struct hbase1_field *
hbase1_schema_role(const struct hbase1_schema *s, uint8_t role)
{
    for (uint8_t i = 0; i < s->nfields; i++) {
        if (s->fields[i].role == role) {
            return &s->fields[i];
        }
    }
    return NULL;
}

/* ---- which service a server speaks ------------------------------------ */

/* TApplicationException's type for a method the service does not have. */
#define HBASE1_APP_UNKNOWN_METHOD 1

/* TThriftServerType, as both IDLs number it. */
#define HBASE1_SERVER_TYPE_ONE 1
#define HBASE1_SERVER_TYPE_TWO 2

/* The i32 field fid of the struct the reader is at, or -1 if absent. */
static int32_t
hbase1_kind_i32(struct wire_reader *r, int16_t want)
{
    int32_t value = -1;
    uint8_t ft;
    int16_t fid;

    wire_read_struct_begin(r);
    while (wire_read_field(r, &ft, &fid) == WIRE_OK && ft != WIRE_T_STOP) {
        if (fid == want && ft == WIRE_T_I32) {
            value = wire_read_i32(r);
        } else {
            wire_skip(r, ft);
        }
    }
    wire_read_struct_end(r);
    return r->status == WIRE_OK ? value : -1;
}

gboolean
hbase1_kind_of_reply(int proto, const uint8_t *msg, size_t len,
                     const char *method, hbase1_kind_t *kind)
{
    struct wire_reader r;
    struct wire_msg m;
    int32_t v;

    *kind = HBASE1_KIND_KNOWN;
    wire_reader_init(&r, (wire_proto_t)proto, msg, len, TRUE,
                     &wire_default_limits);
    if (wire_read_msg_begin(&r, &m) != WIRE_OK ||
        m.name_len != strlen(method) ||
        memcmp(m.name, method, m.name_len) != 0) {
        return FALSE;
    }
    if (m.type == WIRE_EXCEPTION) {
        /* TApplicationException { 1: message, 2: type } */
        v = hbase1_kind_i32(&r, 2);
        if (r.status != WIRE_OK) {
            return FALSE;
        }
        if (v == HBASE1_APP_UNKNOWN_METHOD) {
            *kind = HBASE1_KIND_UNKNOWN_METHOD;
        }
        return TRUE;
    }
    if (m.type != WIRE_REPLY) {
        return FALSE;
    }
    if (strcmp(method, "getThriftServerType") != 0) {
        return TRUE;
    }
    /* the result struct: field 0, the enum */
    v = hbase1_kind_i32(&r, 0);
    if (r.status != WIRE_OK) {
        return FALSE;
    }
    if (v == HBASE1_SERVER_TYPE_ONE) {
        *kind = HBASE1_KIND_THRIFT1;
    } else if (v == HBASE1_SERVER_TYPE_TWO) {
        *kind = HBASE1_KIND_THRIFT2;
    }
    return TRUE;
}

char *
hbase1_kind_misplaced(const char *server, hbase1_service_id_t listed)
{
    if (listed == HBASE1_SERVICE_THRIFT2) {
        return g_strdup_printf("%s is a Thrift1 (Hbase) server; list it "
                               "under servers, not thrift2_servers",
                               server);
    }
    return g_strdup_printf("%s is a Thrift2 (THBaseService) server; list it "
                           "under thrift2_servers, not servers",
                           server);
}
