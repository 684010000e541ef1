/* emu_admin2.h: the Thrift2 administration methods (tables, namespaces, cluster) over the emulator's store. */
#pragma once

#include "hbase2_t_h_base_service.h"

/* Installs the administration methods in the Thrift2 handler's class. */
void emu_admin2_class_init(Hbase2THBaseServiceHandlerClass *h);
