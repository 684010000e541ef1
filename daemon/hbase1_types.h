/* hbase1_types.h: the structs a service's method table is written in
 * (fields, schemas, methods, scanners, services), shared by Thrift1's
 * table (hbase1.c) and Thrift2's (hbase2.c). */
#pragma once

#include <glib.h>
#include <stddef.h>
#include <stdint.h>

/*
 * A call is described by data, not code: a schema per struct lists the
 * fields that matter for routing and what to do with them.  Every field
 * not listed (values, columns, attributes, timestamps) is copied through
 * untouched.  Adding a method is adding a row to the table in hbase1.c.
 */

enum hbase1_action {
    HBASE1_TABLE = 1,     /* binary: the table every row below belongs to */
    HBASE1_ROW,           /* binary: a logical row key, gains its salt */
    HBASE1_ROWS,          /* list<binary>: logical row keys */
    HBASE1_ROW_OUT,       /* binary: a physical row key, loses its salt */
    HBASE1_STRUCT,        /* struct described by 'sub' */
    HBASE1_STRUCT_LIST,   /* list<struct>, each described by 'sub' */
    HBASE1_TABLE_NAME,    /* struct TTableName {1: ns, 2: qualifier}: the
                             table every row below belongs to (Thrift2) */
    HBASE1_TABLE_DESC,    /* struct whose field 1 is a TTableName: a
                             TTableDescriptor (Thrift2's createTable) */
    HBASE1_SPLITS,        /* list<binary>: region split points; for a
                             salted table replaced by the salt buckets'
                             (splits.h), as many regions as asked, and
                             supplied when the call sends none */
    HBASE1_REFUSE_SALTED, /* a field the proxy cannot yet rewrite for a
                             salted table (Thrift2's filterBytes): a call
                             of a salted table sending it is refused with
                             the text in 'refuse'; unsalted, it is copied */
    HBASE1_META_ROW,      /* binary: an hbase:meta row key naming a row
                             of a table, "table,row,suffix" (Thrift1's
                             getRegionInfo): for a salted table the row
                             part gains its salt */
    HBASE1_FILTER_ROW,    /* binary: a filter applied to the row of the
                            struct it sits in (Thrift2's TGet.filterString,
                            or with role FILTER_BYTES its protobuf
                            filterBytes): rewritten for that row's bucket,
                            or refused when salting would change its
                            meaning */
    HBASE1_MESSAGE_OUT,   /* string: an exception's message (TIOError's),
                             whose rows quoted as HBase quotes them,
                             <Bytes.toStringBinary>, lose their salt */
};

/*
 * What a field of a scanner call, or of the scan struct it carries, means
 * to the scan engine (scanargs.c reads and writes them by role, never by
 * field id).  Thrift1's TScan and Thrift2's TScan put the same roles at
 * other ids and types; a role a service lacks is simply not in its
 * schema.
 */
enum hbase1_role {
    HBASE1_ROLE_NONE = 0,
    HBASE1_ROLE_TABLE,        /* binary: the table scanned */
    HBASE1_ROLE_START,        /* binary: first row (reversed: the highest) */
    HBASE1_ROLE_PREFIX,       /* binary: first row, and every row's prefix */
    HBASE1_ROLE_STOP,         /* binary: the row the scan stops before */
    HBASE1_ROLE_COLUMNS,      /* list: columns to return, passed on */
    HBASE1_ROLE_TIMESTAMP,    /* i64: newest version read, passed on */
    HBASE1_ROLE_ATTRIBUTES,   /* map: passed on */
    HBASE1_ROLE_SCAN,         /* struct: the scan itself, roles in 'sub' */
    HBASE1_ROLE_CACHING,      /* i32: rows per round trip */
    HBASE1_ROLE_FILTER,       /* binary: filter string, rewritten per
                                 bucket */
    HBASE1_ROLE_BATCH,        /* i32: cells per partial row */
    HBASE1_ROLE_SORTED,       /* bool: sorted columns, passed on */
    HBASE1_ROLE_REVERSED,     /* bool: high to low */
    HBASE1_ROLE_CACHE_BLOCKS, /* bool: passed on */
    HBASE1_ROLE_ID,           /* i32: a scanner id */
    HBASE1_ROLE_NROWS,        /* i32: rows asked of a scanner */
    HBASE1_ROLE_LIMIT,        /* i32: rows of the whole scan (Thrift2's
                                 TScan.limit): each bucket gets it, the
                                 merge applies it once */
    HBASE1_ROLE_FILTER_BYTES, /* binary: a serialized filter the engine
                                 cannot rewrite yet: salted scans sending
                                 it are refused */
};

struct hbase1_schema;

/* One field that matters. */
struct hbase1_field {
    int16_t fid;                     /* field id */
    uint8_t type;                    /* wire type expected; another type
                                          is copied through untouched */
    uint8_t action;                  /* enum hbase1_action */
    uint8_t role;                    /* enum hbase1_role: scanner
                                          schemas only */
    const struct hbase1_schema *sub; /* STRUCT, STRUCT_LIST */
    const char *repeated;            /* PROTOCOL_ERROR text for a call
                                          that sends this field twice */
    const char *refuse;              /* HBASE1_REFUSE_SALTED: the
                                          IOError's text */
};

/* The fields of one struct that matter. */
struct hbase1_schema {
    const struct hbase1_field *fields;
    uint8_t nfields;
    gboolean scoped_table; /* names its own table (TIncrement,
                                          TAppend): rows inside follow it */
};

/* What kind of call, for routing and metrics.  The scanner kinds come
 * last: every call from HBASE1_SCAN_OPEN on goes to the scan engine. */
enum hbase1_kind {
    HBASE1_ADMIN = 0,  /* no row keys */
    HBASE1_READ,       /* point or multi-row read */
    HBASE1_WRITE,      /* mutation */
    HBASE1_SCAN_OPEN,  /* starts a scanner: scannerOpen* */
    HBASE1_SCAN_NEXT,  /* feeds rows from one: scannerGet(List) */
    HBASE1_SCAN_CLOSE, /* ends one: scannerClose */
    HBASE1_SCAN_ONCE,  /* opens, feeds and ends in one call (Thrift2's
                              getScannerResults); none in Thrift1 */
};

struct hbase1_scanner;
struct hbase1_service;

struct hbase1_method {
    const char *name; /* as on the wire */
    uint8_t name_len;
    uint8_t kind;                          /* enum hbase1_kind */
    uint8_t index;                         /* position in the table */
    gboolean declares_io;                  /* result field 1 is IOError */
    gboolean declares_ia;                  /* result field 2 is
                                           IllegalArgument */
    const struct hbase1_schema *args;      /* NULL: no row keys in the call */
    const struct hbase1_schema *result;    /* NULL: reply has no row keys */
    const struct hbase1_schema *scan_args; /* scanner calls: every
                                           argument the engine reads, by
                                           role; NULL for other calls */
    const struct hbase1_scanner *scanner;  /* scanner calls: how the
                                           service's scanners are driven */
    const struct hbase1_service *service;  /* the table it is a row of */
};

/*
 * How one service's scanners are driven, for the scan engine: the calls
 * it sends each backend scanner (in the same service), and where the
 * rows of a fetch sit.  Everything is derived from the method rows at
 * first use: open is the SCAN_OPEN call that carries a scan struct,
 * fetch the SCAN_NEXT call that takes a row count, close the SCAN_CLOSE
 * call; the row schema is the element of fetch's success list, its key
 * the ROW_OUT field (TRowResult.row; Thrift2's TResult.row).
 */
struct hbase1_scanner {
    const struct hbase1_method *open;  /* scannerOpenWithScan */
    const struct hbase1_method *fetch; /* scannerGetList */
    const struct hbase1_method *close; /* scannerClose */
    const struct hbase1_schema *scan;  /* open's scan struct: TScan */
    const struct hbase1_schema *row;   /* one row of a fetch: TRowResult */
    const struct hbase1_field *rows;   /* fetch's success list field */
    const struct hbase1_field *key;    /* the row's key field in row */
};

/*
 * One Thrift service the proxy speaks, and its method table: Thrift1's
 * `service Hbase` (hbase1.c) or Thrift2's `service THBaseService`
 * (hbase2.c).  The same name (get, append, ...) is another method in
 * each, so every lookup goes through the service a connection speaks.
 * Method indexes run on from one service to the next: metrics keep one
 * array over both.
 */
typedef enum {
    HBASE1_SERVICE_THRIFT1 = 0,
    HBASE1_SERVICE_THRIFT2 = 1,
} hbase1_service_id_t;

#define HBASE1_NSERVICES 2

struct hbase1_service {
    uint8_t id;                  /* hbase1_service_id_t */
    const char *label;           /* "thrift1", "thrift2": logs and
                                         metrics labels */
    struct hbase1_method *table; /* in IDL order */
    size_t n;
    const struct hbase1_method **sorted; /* n entries, by (length, name) */
    struct hbase1_scanner *scanner;      /* filled at first use */
    gsize once;
};
