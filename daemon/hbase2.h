/* hbase2.h: Thrift2's THBaseService method table, as hbase1.c's service
 * registry takes it. */
#pragma once

#include "hbase1_types.h"

/* Thrift2's table, filled on first use by hbase1_service(). */
struct hbase1_service *hbase2_service_table(void);
