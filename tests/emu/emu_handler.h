/* emu_handler.h: the Thrift1 Hbase service implemented over the emulator's store. */
#pragma once

#include <glib-object.h>

#include "emu_guard.h"
#include "emu_store.h"
#include "hbase_hbase.h"

/* One cluster behind both services: the same id from each. */
#define EMU_CLUSTER_ID "6d2a4f1e-5c3b-4e8a-9b7d-0e1f2a3b4c5d"
/* grant/revoke without the AccessController coprocessor. */
#define EMU_NO_ACL_MESSAGE                                                    \
    "org.apache.hadoop.hbase.exceptions.UnknownProtocolException: No "        \
    "registered Master Coprocessor Endpoint found for "                       \
    "AccessControlService. Has it been enabled?"

/* The generated parent has no autoptr cleanup; G_DECLARE_* needs one. */
G_DEFINE_AUTOPTR_CLEANUP_FUNC(HbaseHbaseHandler, g_object_unref)

#define EMU_TYPE_HANDLER (emu_handler_get_type())
G_DECLARE_FINAL_TYPE(EmuHandler, emu_handler, EMU, HANDLER, HbaseHbaseHandler)

EmuHandler *emu_handler_new(emu_store *store,
                            const struct emu_handler_options *opts);
