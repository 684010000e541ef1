/* bell.h: a doorbell other threads ring to wake an event loop. */
#pragma once

#include <glib.h>

#include <event2/event.h>

/*
 * A doorbell other threads ring to wake a loop: an eventfd the loop
 * watches.  The bases run without libevent's locks (evthread), which
 * cost a mutex round trip in every event_add on the request path; this
 * is the only way into a loop from another thread.
 */
struct bell {
    int fd;           /* eventfd, or -1 */
    struct event *ev; /* persistent read event on fd */
};

gboolean bell_init(struct bell *b, struct event_base *base,
                   event_callback_fn cb, void *arg);
/* Any thread; rings coalesce until the callback runs. */
void bell_ring(struct bell *b);
/* In the callback: take the rings so the next one wakes the loop again. */
void bell_answer(struct bell *b);
void bell_free(struct bell *b);
