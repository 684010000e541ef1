/* bell.c: a doorbell other threads ring to wake an event loop. */
#include "bell.h"

#include <errno.h>
#include <stdint.h>
#include <sys/eventfd.h>
#include <unistd.h>

gboolean
bell_init(struct bell *b, struct event_base *base, event_callback_fn cb,
          void *arg)
{
    b->ev = NULL;
    b->fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (b->fd < 0) {
        return FALSE;
    }
    b->ev = event_new(base, b->fd, EV_READ | EV_PERSIST, cb, arg);
    if (b->ev == NULL || event_add(b->ev, NULL) < 0) {
        bell_free(b);
        return FALSE;
    }
    return TRUE;
}

void
bell_ring(struct bell *b)
{
    uint64_t one = 1;

    /* EAGAIN only when the counter is full: the loop is woken anyway */
    if (write(b->fd, &one, sizeof(one)) < 0 && errno != EAGAIN) {
        g_warning("cannot wake a worker: %s", g_strerror(errno));
    }
}

void
bell_answer(struct bell *b)
{
    uint64_t n;

    while (read(b->fd, &n, sizeof(n)) > 0) {
    }
}

void
bell_free(struct bell *b)
{
    g_clear_pointer(&b->ev, event_free);
    if (b->fd >= 0) {
        close(b->fd);
        b->fd = -1;
    }
}
