/* metrics_render.h: /metrics, the Prometheus text of the counters and of
 * what the engines report. */
#pragma once

#include <glib.h>

struct metrics;
struct proxy;

/* Prometheus text exposition format 0.0.4 of everything.  Main thread. */
void metrics_render(struct metrics *m, struct proxy *p, GString *out);
