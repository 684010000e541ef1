/* admin.h: the HTTP admin endpoint: /metrics, /healthz, /config. */
#pragma once

#include <glib.h>

#include <event2/event.h>

#include "config.h"

struct proxy;
struct admin;

#define ADMIN_ERROR admin_error_quark()
GQuark admin_error_quark(void);

typedef enum {
    ADMIN_ERROR_LISTEN, /* cannot bind the admin address */
} admin_error_t;

/*
 * Serves on listen from base, the main thread's loop: a scrape reads the
 * workers' counters without stopping them (metrics.h), and never takes a
 * worker's time.  /healthz reports the backend health the workers
 * route by (backend.h: UP/DOWN, probed by a thread of its own).
 */
struct admin *admin_new(struct event_base *base, struct proxy *p,
                        const struct config_addr *listen, GError **error)
    G_GNUC_WARN_UNUSED_RESULT;
void admin_free(struct admin *a);

/* The bound port (listen may say 0). */
unsigned admin_port(const struct admin *a);
