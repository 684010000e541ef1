/* hbase1.h: the Thrift1 method table: where each call carries rows. */
#pragma once

#include <glib.h>
#include <stddef.h>
#include <stdint.h>

#include "hbase1_types.h"

/* The services, by id; filled (indexes, sorted names, scanner) at first
 * use. */
const struct hbase1_service *hbase1_service(hbase1_service_id_t id);

/* The method of a name as sent on the wire in service svc, or NULL. */
const struct hbase1_method *
hbase1_service_lookup(const struct hbase1_service *svc, const uint8_t *name,
                      size_t len);

/* Methods of every service: their number, and method by index. */
size_t hbase1_method_count(void);
const struct hbase1_method *hbase1_method_at(size_t index);

/* Thrift1's method of a name, or NULL (hbase1_service_lookup on
 * Thrift1). */
const struct hbase1_method *hbase1_lookup(const uint8_t *name, size_t len);

/* Every Thrift1 method, in IDL order. */
const struct hbase1_method *hbase1_methods(size_t *count);

/* The field of a schema with this id, or NULL. */
const struct hbase1_field *hbase1_schema_field(const struct hbase1_schema *s,
                                               int16_t fid);

/* The field of a schema with this role, or NULL. */
const struct hbase1_field *hbase1_schema_role(const struct hbase1_schema *s,
                                              uint8_t role);

/*
 * Which service a server speaks, from its reply to a call without
 * arguments: both services of HBase 2.x know getThriftServerType, and
 * each answers a method of the other one with TApplicationException
 * UNKNOWN_METHOD ("Invalid method name").  A server listed under the
 * wrong key otherwise looks healthy to a probe (it answers) while every
 * call it gets fails or, worse, is misread by the other service's
 * argument structs.
 */
typedef enum {
    HBASE1_KIND_KNOWN,          /* a reply, or another exception: the
                                   server knows the call */
    HBASE1_KIND_UNKNOWN_METHOD, /* TApplicationException UNKNOWN_METHOD */
    HBASE1_KIND_THRIFT1,        /* getThriftServerType said ONE */
    HBASE1_KIND_THRIFT2,        /* getThriftServerType said TWO */
} hbase1_kind_t;

/* The kind of one whole reply message (frame header already removed)
 * in protocol proto (a wire_proto_t) to method; FALSE when the bytes
 * are no reply to it. */
gboolean hbase1_kind_of_reply(int proto, const uint8_t *msg, size_t len,
                              const char *method, hbase1_kind_t *kind);

/* What to tell an operator who listed server (host:port) as a listed
 * server though it speaks the other service: "127.0.0.1:9092 is a
 * Thrift2 (THBaseService) server; list it under thrift2_servers, not
 * servers". */
char *hbase1_kind_misplaced(const char *server, hbase1_service_id_t listed);
