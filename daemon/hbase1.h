/* hbase1.h: the Thrift1 method table: where each call carries rows. */
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
    HBASE1_TABLE = 1,    /* binary: the table every row below belongs to */
    HBASE1_ROW,          /* binary: a logical row key, gains its salt */
    HBASE1_ROWS,         /* list<binary>: logical row keys */
    HBASE1_ROW_OUT,      /* binary: a physical row key, loses its salt */
    HBASE1_STRUCT,       /* struct described by 'sub' */
    HBASE1_STRUCT_LIST,  /* list<struct>, each described by 'sub' */
};

struct hbase1_schema;

/* One field that matters. */
struct hbase1_field {
    int16_t fid;                       /* field id */
    uint8_t type;                      /* wire type expected; another type
                                          is copied through untouched */
    uint8_t action;                    /* enum hbase1_action */
    const struct hbase1_schema *sub;   /* STRUCT, STRUCT_LIST */
    const char *repeated;              /* PROTOCOL_ERROR text for a call
                                          that sends this field twice */
};

/* The fields of one struct that matter. */
struct hbase1_schema {
    const struct hbase1_field *fields;
    uint8_t nfields;
    gboolean scoped_table;             /* names its own table (TIncrement,
                                          TAppend): rows inside follow it */
};

/* What kind of call, for routing and metrics. */
enum hbase1_kind {
    HBASE1_ADMIN = 0,      /* no row keys */
    HBASE1_READ,           /* point or multi-row read */
    HBASE1_WRITE,          /* mutation */
    HBASE1_SCAN_OPEN,      /* scannerOpen* */
    HBASE1_SCAN_NEXT,      /* scannerGet, scannerGetList */
    HBASE1_SCAN_CLOSE,     /* scannerClose */
};

struct hbase1_method {
    const char *name;                   /* as on the wire */
    uint8_t name_len;
    uint8_t kind;                       /* enum hbase1_kind */
    uint8_t index;                      /* position in the table */
    gboolean declares_io;               /* result field 1 is IOError */
    gboolean declares_ia;               /* result field 2 is
                                           IllegalArgument */
    const struct hbase1_schema *args;   /* NULL: no row keys in the call */
    const struct hbase1_schema *result; /* NULL: reply has no row keys */
};

/* The method of a name as sent on the wire, or NULL. */
const struct hbase1_method *hbase1_lookup(const uint8_t *name, size_t len);

/* Every method, in IDL order. */
const struct hbase1_method *hbase1_methods(size_t *count);

/* The field of a schema with this id, or NULL. */
const struct hbase1_field *hbase1_schema_field(const struct hbase1_schema *s,
                                               int16_t fid);
