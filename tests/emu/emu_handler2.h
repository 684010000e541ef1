/* emu_handler2.h: the Thrift2 THBaseService implemented over the emulator's store. */
#pragma once

#include <glib-object.h>

#include "emu_guard.h"
#include "emu_store.h"
#include "hbase2_t_h_base_service.h"

/* The generated parent has no autoptr cleanup; G_DECLARE_* needs one. */
G_DEFINE_AUTOPTR_CLEANUP_FUNC(Hbase2THBaseServiceHandler, g_object_unref)

#define EMU_TYPE_HANDLER2 (emu_handler2_get_type())
G_DECLARE_FINAL_TYPE(EmuHandler2, emu_handler2, EMU, HANDLER2,
                     Hbase2THBaseServiceHandler)

/* A handler over the same store the Thrift1 handler serves. */
EmuHandler2 *emu_handler2_new(emu_store *store,
                              const struct emu_handler_options *opts);

/* For the administration methods (emu_admin2.c). */
emu_store *emu_handler2_store(EmuHandler2 *self);
const struct emu_handler_options *emu_handler2_options(EmuHandler2 *self);
/* Turns a store error into TIOError or, for what HBase does not declare,
 * the TApplicationException libthrift sends.  Takes err over; FALSE. */
gboolean emu_handler2_fail(GError *err, const char *method,
                           Hbase2TIOError **io, GError **error);
/* TApplicationException INTERNAL_ERROR "Internal error processing M". */
gboolean emu_handler2_internal(GError **error, const char *method);
/* TableName.valueOf(ns, qualifier) as the store names it. */
GByteArray *emu_handler2_table_name(const Hbase2TTableName *tn);
/* A new GByteArray holding a copy of p. */
GByteArray *emu_handler2_bytes(const void *p, size_t len);
