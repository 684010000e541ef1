/* hbase2.c: the Thrift2 method table (field ids from thrift/hbase2.thrift).
 *
 * The same struct types as Thrift1's table (hbase1.h): the codec and the
 * scan engine read whichever table the connection's service has.  Row
 * keys sit inside the request structs (TGet, TPut, TDelete, TIncrement,
 * TAppend, TRowMutations and the puts and deletes nested in it), next to
 * the table argument, and come back in TResult.row (and in the TDelete
 * list deleteMultiple returns).
 */
#include "hbase2.h"
#include "hbase1_table.h"
#include "wire.h"

/* ---- structs ----------------------------------------------------------- */

/* TGet { 1: row, ..., 6: filterString, ..., 15: filterBytes }: a filter
 * may name rows, which are salted on the server side: the string and the
 * protobuf are rewritten for the row's bucket */
SCHEMA(t_get, FALSE, F(1, WIRE_T_STRING, HBASE1_ROW, NULL, "TGet.row"),
       { .fid = 6,
         .type = WIRE_T_STRING,
         .action = HBASE1_FILTER_ROW,
         .repeated = "hbase-salt-proxy: field TGet.filterString sent "
                     "twice" },
       { .fid = 15,
         .type = WIRE_T_STRING,
         .action = HBASE1_FILTER_ROW,
         .role = HBASE1_ROLE_FILTER_BYTES,
         .repeated = "hbase-salt-proxy: field TGet.filterBytes sent "
                     "twice" });

/* TPut { 1: row, 2: columnValues, ... } */
SCHEMA(t_put, FALSE, F(1, WIRE_T_STRING, HBASE1_ROW, NULL, "TPut.row"));

/* TDelete { 1: row, 2: columns, ... } */
SCHEMA(t_delete, FALSE, F(1, WIRE_T_STRING, HBASE1_ROW, NULL, "TDelete.row"));

/* TIncrement { 1: row, 2: columns, ... } */
SCHEMA(t_increment, FALSE,
       F(1, WIRE_T_STRING, HBASE1_ROW, NULL, "TIncrement.row"));

/* TAppend { 1: row, 2: columns, ... } */
SCHEMA(t_append, FALSE, F(1, WIRE_T_STRING, HBASE1_ROW, NULL, "TAppend.row"));

/* union TMutation { 1: TPut put, 2: TDelete deleteSingle } */
SCHEMA(t_mutation, FALSE,
       F(1, WIRE_T_STRUCT, HBASE1_STRUCT, &t_put, "TMutation.put"),
       F(2, WIRE_T_STRUCT, HBASE1_STRUCT, &t_delete,
         "TMutation.deleteSingle"));

/* TRowMutations { 1: row, 2: list<TMutation> mutations }: HBase wants
 * every nested row equal to the outer one, and so they stay once salted */
SCHEMA(t_row_mutations, FALSE,
       F(1, WIRE_T_STRING, HBASE1_ROW, NULL, "TRowMutations.row"),
       F(2, WIRE_T_LIST, HBASE1_STRUCT_LIST, &t_mutation,
         "TRowMutations.mutations"));

/* TResult { 1: row, 2: columnValues, 3: stale, 4: partial }: a missing
 * row comes back without field 1, and stays so */
SCHEMA(t_result, FALSE,
       F(1, WIRE_T_STRING, HBASE1_ROW_OUT, NULL, "TResult.row"));

/* TDelete as deleteMultiple returns it (the deletes that failed) */
SCHEMA(t_delete_out, FALSE,
       F(1, WIRE_T_STRING, HBASE1_ROW_OUT, NULL, "TDelete.row"));

/* ---- argument structs ---------------------------------------------------- */

#define TABLE F(1, WIRE_T_STRING, HBASE1_TABLE, NULL, "table")

/* createTable (1: TTableDescriptor desc, 2: list<binary> splitKeys):
 * the descriptor's field 1 names the table */
SCHEMA(args_create_table, FALSE,
       F(1, WIRE_T_STRUCT, HBASE1_TABLE_DESC, NULL, "desc"),
       F(2, WIRE_T_LIST, HBASE1_SPLITS, NULL, "splitKeys"));

/* isTableAvailableWithSplit (1: TTableName tableName, 2: list<binary>
 * splitKeys) */
SCHEMA(args_table_splits, FALSE,
       F(1, WIRE_T_STRUCT, HBASE1_TABLE_NAME, NULL, "tableName"),
       F(2, WIRE_T_LIST, HBASE1_SPLITS, NULL, "splitKeys"));

/* (1: table, 2: TGet): exists, get */
SCHEMA(args_get, FALSE, TABLE,
       F(2, WIRE_T_STRUCT, HBASE1_STRUCT, &t_get, "tget"));

/* (1: table, 2: list<TGet>): existsAll, getMultiple */
SCHEMA(args_gets, FALSE, TABLE,
       F(2, WIRE_T_LIST, HBASE1_STRUCT_LIST, &t_get, "tgets"));

/* (1: table, 2: TPut) */
SCHEMA(args_put, FALSE, TABLE,
       F(2, WIRE_T_STRUCT, HBASE1_STRUCT, &t_put, "tput"));

/* (1: table, 2: list<TPut>) */
SCHEMA(args_puts, FALSE, TABLE,
       F(2, WIRE_T_LIST, HBASE1_STRUCT_LIST, &t_put, "tputs"));

/* (1: table, 2: TDelete) */
SCHEMA(args_delete, FALSE, TABLE,
       F(2, WIRE_T_STRUCT, HBASE1_STRUCT, &t_delete, "tdelete"));

/* (1: table, 2: list<TDelete>) */
SCHEMA(args_deletes, FALSE, TABLE,
       F(2, WIRE_T_LIST, HBASE1_STRUCT_LIST, &t_delete, "tdeletes"));

/* (1: table, 2: row, 3: family, 4: qualifier, 5: value, 6: TPut) */
SCHEMA(args_check_put, FALSE, TABLE,
       F(2, WIRE_T_STRING, HBASE1_ROW, NULL, "row"),
       F(6, WIRE_T_STRUCT, HBASE1_STRUCT, &t_put, "tput"));

/* (1: table, 2: row, 3: family, 4: qualifier, 5: value, 6: TDelete) */
SCHEMA(args_check_delete, FALSE, TABLE,
       F(2, WIRE_T_STRING, HBASE1_ROW, NULL, "row"),
       F(6, WIRE_T_STRUCT, HBASE1_STRUCT, &t_delete, "tdelete"));

/* (1: table, 2: TIncrement) */
SCHEMA(args_increment, FALSE, TABLE,
       F(2, WIRE_T_STRUCT, HBASE1_STRUCT, &t_increment, "tincrement"));

/* (1: table, 2: TAppend) */
SCHEMA(args_append, FALSE, TABLE,
       F(2, WIRE_T_STRUCT, HBASE1_STRUCT, &t_append, "tappend"));

/* (1: table, 2: TRowMutations) */
SCHEMA(args_mutate_row, FALSE, TABLE,
       F(2, WIRE_T_STRUCT, HBASE1_STRUCT, &t_row_mutations, "trowMutations"));

/* (1: table, 2: row, 3: family, 4: qualifier, 5: compareOperator,
 * 6: value, 7: TRowMutations) */
SCHEMA(args_check_mutate, FALSE, TABLE,
       F(2, WIRE_T_STRING, HBASE1_ROW, NULL, "row"),
       F(7, WIRE_T_STRUCT, HBASE1_STRUCT, &t_row_mutations, "rowMutations"));

/* (1: table, 2: row, 3: reload) */
SCHEMA(args_table_row, FALSE, TABLE,
       F(2, WIRE_T_STRING, HBASE1_ROW, NULL, "row"));

/* (1: table, ...): the scanner opens, routed by their table */
SCHEMA(args_table, FALSE, TABLE);

/* ---- scanner calls, for the scan engine ---------------------------------- */

/* TScan, every field in IDL order.  Fields without a role the engine
 * writes (maxVersions, timeRange, authorizations, colFamTimeRangeMap,
 * readType, consistency, targetReplicaId, and any the IDL adds later)
 * go to every bucket as the client sent them. */
SCHEMA(t_scan, FALSE,
       R(1, WIRE_T_STRING, HBASE1_ROLE_START, NULL, "TScan.startRow"),
       R(2, WIRE_T_STRING, HBASE1_ROLE_STOP, NULL, "TScan.stopRow"),
       P(3, WIRE_T_LIST, HBASE1_ROLE_COLUMNS),
       P(4, WIRE_T_I32, HBASE1_ROLE_CACHING),
       P(5, WIRE_T_I32, HBASE1_ROLE_NONE),    /* maxVersions */
       P(6, WIRE_T_STRUCT, HBASE1_ROLE_NONE), /* timeRange */
       R(7, WIRE_T_STRING, HBASE1_ROLE_FILTER, NULL, "TScan.filterString"),
       P(8, WIRE_T_I32, HBASE1_ROLE_BATCH),
       P(9, WIRE_T_MAP, HBASE1_ROLE_ATTRIBUTES),
       P(10, WIRE_T_STRUCT, HBASE1_ROLE_NONE), /* authorizations */
       R(11, WIRE_T_BOOL, HBASE1_ROLE_REVERSED, NULL, "TScan.reversed"),
       P(12, WIRE_T_BOOL, HBASE1_ROLE_CACHE_BLOCKS),
       P(13, WIRE_T_MAP, HBASE1_ROLE_NONE), /* colFamTimeRangeMap */
       P(14, WIRE_T_I32, HBASE1_ROLE_NONE), /* readType */
       R(15, WIRE_T_I32, HBASE1_ROLE_LIMIT, NULL, "TScan.limit"),
       P(16, WIRE_T_I32, HBASE1_ROLE_NONE), /* consistency */
       P(17, WIRE_T_I32, HBASE1_ROLE_NONE), /* targetReplicaId */
       P(18, WIRE_T_STRING, HBASE1_ROLE_FILTER_BYTES));

#define SCAN_TABLE R(1, WIRE_T_STRING, HBASE1_ROLE_TABLE, NULL, "table")
#define SCAN_SCAN R(2, WIRE_T_STRUCT, HBASE1_ROLE_SCAN, &t_scan, "tscan")

/* openScanner (1: table, 2: TScan) */
SCHEMA(scan_open, FALSE, SCAN_TABLE, SCAN_SCAN);

/* getScannerResults (1: table, 2: TScan, 3: numRows) */
SCHEMA(scan_once, FALSE, SCAN_TABLE, SCAN_SCAN,
       P(3, WIRE_T_I32, HBASE1_ROLE_NROWS));

/* getScannerRows (1: scannerId, 2: numRows) */
SCHEMA(scan_id_rows, FALSE, P(1, WIRE_T_I32, HBASE1_ROLE_ID),
       P(2, WIRE_T_I32, HBASE1_ROLE_NROWS));

/* closeScanner (1: scannerId) */
SCHEMA(scan_id, FALSE, P(1, WIRE_T_I32, HBASE1_ROLE_ID));

/* Filled from the scanner rows of the table below at first use. */
static struct hbase1_scanner table_scanner;

/* ---- result structs ------------------------------------------------------ */

/* success: TResult */
SCHEMA(result_result, FALSE,
       F(0, WIRE_T_STRUCT, HBASE1_STRUCT, &t_result, "success"));

/* success: list<TResult>, one per TGet in order (missing rows included,
 * without a row) */
SCHEMA(result_results, FALSE,
       F(0, WIRE_T_LIST, HBASE1_STRUCT_LIST, &t_result, "success"));

/* success: list<TDelete> */
SCHEMA(result_deletes, FALSE,
       F(0, WIRE_T_LIST, HBASE1_STRUCT_LIST, &t_delete_out, "success"));

/* TIOError { 1: message, 2: canRetry }: HBase quotes the rows of a
 * mutation whose rows do not match ("The row of the action <ROW> doesn't
 * match the original one <ROW>"), salted as the proxy sent them */
SCHEMA(t_io_error, FALSE,
       F(1, WIRE_T_STRING, HBASE1_MESSAGE_OUT, NULL, "TIOError.message"));

/* io: TIOError, of the mutations that answer nothing else */
SCHEMA(result_io, FALSE,
       F(1, WIRE_T_STRUCT, HBASE1_STRUCT, &t_io_error, "io"));

/* In IDL order.  'index' is filled in by position, after Thrift1's. */
static struct hbase1_method hbase2_table[] = {
    M(exists, HBASE1_READ, TRUE, &args_get, NULL),
    M(existsAll, HBASE1_READ, TRUE, &args_gets, NULL),
    M(get, HBASE1_READ, TRUE, &args_get, &result_result),
    M(getMultiple, HBASE1_READ, TRUE, &args_gets, &result_results),
    M(put, HBASE1_WRITE, TRUE, &args_put, &result_io),
    M(checkAndPut, HBASE1_WRITE, TRUE, &args_check_put, &result_io),
    M(putMultiple, HBASE1_WRITE, TRUE, &args_puts, &result_io),
    M(deleteSingle, HBASE1_WRITE, TRUE, &args_delete, &result_io),
    M(deleteMultiple, HBASE1_WRITE, TRUE, &args_deletes, &result_deletes),
    M(checkAndDelete, HBASE1_WRITE, TRUE, &args_check_delete, &result_io),
    M(increment, HBASE1_WRITE, TRUE, &args_increment, &result_result),
    M(append, HBASE1_WRITE, TRUE, &args_append, &result_result),
    MS(openScanner, HBASE1_SCAN_OPEN, FALSE, &args_table, NULL, &scan_open),
    MS(getScannerRows, HBASE1_SCAN_NEXT, TRUE, NULL, &result_results,
       &scan_id_rows),
    MS(closeScanner, HBASE1_SCAN_CLOSE, TRUE, NULL, NULL, &scan_id),
    M(mutateRow, HBASE1_WRITE, TRUE, &args_mutate_row, &result_io),
    MS(getScannerResults, HBASE1_SCAN_ONCE, FALSE, &args_table,
       &result_results, &scan_once),
    /* the region holding a physical row: its keys stay physical */
    M(getRegionLocation, HBASE1_ADMIN, TRUE, &args_table_row, NULL),
    M(getAllRegionLocations, HBASE1_ADMIN, TRUE, NULL, NULL),
    M(checkAndMutate, HBASE1_WRITE, TRUE, &args_check_mutate, &result_io),
    M(getTableDescriptor, HBASE1_ADMIN, TRUE, NULL, NULL),
    M(getTableDescriptors, HBASE1_ADMIN, TRUE, NULL, NULL),
    M(tableExists, HBASE1_ADMIN, TRUE, NULL, NULL),
    M(getTableDescriptorsByPattern, HBASE1_ADMIN, TRUE, NULL, NULL),
    M(getTableDescriptorsByNamespace, HBASE1_ADMIN, TRUE, NULL, NULL),
    M(getTableNamesByPattern, HBASE1_ADMIN, TRUE, NULL, NULL),
    M(getTableNamesByNamespace, HBASE1_ADMIN, TRUE, NULL, NULL),
    M(createTable, HBASE1_ADMIN, TRUE, &args_create_table, NULL),
    M(deleteTable, HBASE1_ADMIN, TRUE, NULL, NULL),
    M(truncateTable, HBASE1_ADMIN, TRUE, NULL, NULL),
    M(enableTable, HBASE1_ADMIN, TRUE, NULL, NULL),
    M(disableTable, HBASE1_ADMIN, TRUE, NULL, NULL),
    M(isTableEnabled, HBASE1_ADMIN, TRUE, NULL, NULL),
    M(isTableDisabled, HBASE1_ADMIN, TRUE, NULL, NULL),
    M(isTableAvailable, HBASE1_ADMIN, TRUE, NULL, NULL),
    M(isTableAvailableWithSplit, HBASE1_ADMIN, TRUE, &args_table_splits, NULL),
    M(addColumnFamily, HBASE1_ADMIN, TRUE, NULL, NULL),
    M(deleteColumnFamily, HBASE1_ADMIN, TRUE, NULL, NULL),
    M(modifyColumnFamily, HBASE1_ADMIN, TRUE, NULL, NULL),
    M(modifyTable, HBASE1_ADMIN, TRUE, NULL, NULL),
    M(createNamespace, HBASE1_ADMIN, TRUE, NULL, NULL),
    M(modifyNamespace, HBASE1_ADMIN, TRUE, NULL, NULL),
    M(deleteNamespace, HBASE1_ADMIN, TRUE, NULL, NULL),
    M(getNamespaceDescriptor, HBASE1_ADMIN, TRUE, NULL, NULL),
    M(listNamespaceDescriptors, HBASE1_ADMIN, TRUE, NULL, NULL),
    M(listNamespaces, HBASE1_ADMIN, TRUE, NULL, NULL),
    M(getThriftServerType, HBASE1_ADMIN, FALSE, NULL, NULL),
    M(getClusterId, HBASE1_ADMIN, FALSE, NULL, NULL),
    M(getSlowLogResponses, HBASE1_ADMIN, TRUE, NULL, NULL),
    M(clearSlowLogResponses, HBASE1_ADMIN, TRUE, NULL, NULL),
    M(grant, HBASE1_ADMIN, TRUE, NULL, NULL),
    M(revoke, HBASE1_ADMIN, TRUE, NULL, NULL),
};

static const struct hbase1_method *hbase2_sorted[G_N_ELEMENTS(hbase2_table)];

static struct hbase1_service hbase2_thrift2 = {
    .id = HBASE1_SERVICE_THRIFT2,
    .label = "thrift2",
    .table = hbase2_table,
    .n = G_N_ELEMENTS(hbase2_table),
    .sorted = hbase2_sorted,
    .scanner = &table_scanner,
};

struct hbase1_service *
hbase2_service_table(void)
{
    return &hbase2_thrift2;
}
