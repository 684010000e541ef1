/* hbase1_table.h: the macros the method tables (hbase1.c, hbase2.c) are
 * written with.  Private to those two files. */
#pragma once

/* Included after hbase1.h and wire.h, whose names the macros expand to
 * (not included here: hbase1.c includes this file, and the layers keep
 * includes from going round in a circle). */

/* Java keeps the last of a field sent twice, the proxy would route by the
 * first: a call that repeats a field named here is refused instead, with
 * a message naming the field (name_: as in the IDL, Struct.field when
 * nested). */
#define F(fid_, type_, action_, sub_, name_)                                  \
    {                                                                         \
        .fid = (fid_), .type = (type_), .action = (action_), .sub = (sub_),   \
        .repeated = "hbase-salt-proxy: field " name_ " sent twice"            \
    }
/* A field of a scanner schema: R routes the scan (sent twice, it is
 * refused, as F), P is passed on or read as it comes (the last one
 * counts, as in Java). */
#define R(fid_, type_, role_, sub_, name_)                                    \
    {                                                                         \
        .fid = (fid_), .type = (type_), .role = (role_), .sub = (sub_),       \
        .repeated = "hbase-salt-proxy: field " name_ " sent twice"            \
    }
#define P(fid_, type_, role_)                                                 \
    {                                                                         \
        .fid = (fid_), .type = (type_), .role = (role_)                       \
    }
#define SCHEMA(name_, scoped_, ...)                                           \
    static const struct hbase1_field name_##_fields[] = { __VA_ARGS__ };      \
    static const struct hbase1_schema name_ = {                               \
        .fields = name_##_fields,                                             \
        .nfields = G_N_ELEMENTS(name_##_fields),                              \
        .scoped_table = (scoped_),                                            \
    }

/* A field of a salted call the proxy cannot rewrite yet: refused with
 * text_ (an IOError), copied as it is for an unsalted table. */
#define X(fid_, type_, role_, text_)                                          \
    {                                                                         \
        .fid = (fid_), .type = (type_), .action = HBASE1_REFUSE_SALTED,       \
        .role = (role_), .refuse = (text_)                                    \
    }

#define M(name_, kind_, io_, args_, result_)                                  \
    {                                                                         \
        .name = #name_, .name_len = sizeof(#name_) - 1, .kind = (kind_),      \
        .declares_io = (io_), .args = (args_), .result = (result_)            \
    }
/* The same for a method that also throws 2:IllegalArgument ia. */
#define MIA(name_, kind_, args_, result_)                                     \
    {                                                                         \
        .name = #name_, .name_len = sizeof(#name_) - 1, .kind = (kind_),      \
        .declares_io = TRUE, .declares_ia = TRUE, .args = (args_),            \
        .result = (result_)                                                   \
    }

/* A scanner call: routed by 'args' (its table) as every call is, then
 * read by the scan engine through 'scan_args'.  The file defines
 * table_scanner, its service's struct hbase1_scanner. */
#define MS(name_, kind_, ia_, args_, result_, scan_args_)                     \
    {                                                                         \
        .name = #name_, .name_len = sizeof(#name_) - 1, .kind = (kind_),      \
        .declares_io = TRUE, .declares_ia = (ia_), .args = (args_),           \
        .result = (result_), .scan_args = (scan_args_),                       \
        .scanner = &table_scanner                                             \
    }
