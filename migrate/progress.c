/* progress.c: progress bars and lines for hbase-salt-migrate. */
#include "progress.h"

#include <string.h>

struct progress_slot {
    char *label; /* NULL: idle */
    guint64 rows, bytes;
    gint64 started_us;
    double fraction;
};

struct progress {
    GMutex lock;
    GCond cond;
    FILE *out;
    gboolean tty;
    double interval_s;
    char *verb;
    guint nslots;
    struct progress_slot *slots;
    guint units, units_done;
    guint64 rows, bytes;
    gint64 started_us;
    guint lines_drawn; /* tty: lines to move up before redrawing */
    gboolean stop;
    GThread *thread;
};

struct progress *
progress_new(guint slots, guint units, FILE *out, gboolean tty,
             double interval_s, const char *verb)
{
    struct progress *p = g_new0(struct progress, 1);

    g_mutex_init(&p->lock);
    g_cond_init(&p->cond);
    p->out = out;
    p->tty = tty;
    p->interval_s = interval_s;
    p->verb = g_strdup(verb);
    p->nslots = slots;
    p->slots = g_new0(struct progress_slot, slots);
    p->units = units;
    p->started_us = g_get_monotonic_time();
    return p;
}

void
progress_free(struct progress *p)
{
    if (p == NULL)
        return;
    for (guint i = 0; i < p->nslots; i++)
        g_free(p->slots[i].label);
    g_free(p->slots);
    g_free(p->verb);
    g_mutex_clear(&p->lock);
    g_cond_clear(&p->cond);
    g_free(p);
}

static void
progress_human_bytes(char *buf, size_t len, double b)
{
    static const char *const unit[] = { "B", "KiB", "MiB", "GiB", "TiB" };
    guint i = 0;

    while (b >= 1024 && i < G_N_ELEMENTS(unit) - 1) {
        b /= 1024;
        i++;
    }
    g_snprintf(buf, len, i == 0 ? "%.0f %s" : "%.1f %s", b, unit[i]);
}

static void
progress_eta(char *buf, size_t len, double elapsed, double fraction)
{
    double left;

    if (fraction <= 0.0001 || elapsed < 0.5) {
        g_strlcpy(buf, "--:--", len);
        return;
    }
    left = elapsed * (1 - fraction) / fraction;
    if (left >= 3600)
        g_snprintf(buf, len, "%d:%02d:%02d", (int)(left / 3600),
                   (int)(left / 60) % 60, (int)left % 60);
    else
        g_snprintf(buf, len, "%02d:%02d", (int)(left / 60), (int)left % 60);
}

static void
progress_bar(GString *s, double fraction, guint width)
{
    guint full = (guint)(fraction * width + 0.5);

    g_string_append_c(s, '[');
    for (guint i = 0; i < width; i++)
        g_string_append_c(s, i < full ? '#' : '.');
    g_string_append_c(s, ']');
}

/* Overall fraction: finished units plus the parts of running ones. */
static double
progress_fraction(const struct progress *p)
{
    double f = p->units_done;

    if (p->units == 0)
        return 1;
    for (guint i = 0; i < p->nslots; i++)
        if (p->slots[i].label != NULL)
            f += p->slots[i].fraction;
    return f / p->units;
}

static void
progress_draw(struct progress *p, gboolean final)
{
    g_autoptr(GString) s = g_string_new(NULL);
    gint64 now = g_get_monotonic_time();
    double elapsed = (now - p->started_us) / 1e6;
    double fraction = progress_fraction(p);
    char bytes[32], eta[32];
    guint lines = 0;

    progress_human_bytes(bytes, sizeof(bytes), (double)p->bytes);
    progress_eta(eta, sizeof(eta), elapsed, fraction);
    if (!p->tty) {
        g_string_printf(s,
                        "%s: units %u/%u, rows %" G_GUINT64_FORMAT
                        ", %s, %.0f rows/s, %.0f%%, ETA %s%s\n",
                        p->verb, p->units_done, p->units, p->rows, bytes,
                        elapsed > 0 ? p->rows / elapsed : 0.0, 100 * fraction,
                        final ? "00:00" : eta, final ? " (end)" : "");
        fputs(s->str, p->out);
        fflush(p->out);
        return;
    }
    /* move up over the previous drawing and clear it */
    for (guint i = 0; i < p->lines_drawn; i++)
        g_string_append(s, "\033[1A\033[2K");
    for (guint i = 0; i < p->nslots && !final; i++) {
        const struct progress_slot *sl = &p->slots[i];
        double se;
        char sb[32], seta[32];

        if (sl->label == NULL)
            continue;
        se = (now - sl->started_us) / 1e6;
        progress_human_bytes(sb, sizeof(sb), (double)sl->bytes);
        progress_eta(seta, sizeof(seta), se, sl->fraction);
        g_string_append_printf(s, "  %-28.28s ", sl->label);
        progress_bar(s, sl->fraction, 20);
        g_string_append_printf(s,
                               " %10" G_GUINT64_FORMAT
                               " rows %10s %8.0f rows/s ETA %s\n",
                               sl->rows, sb, se > 0 ? sl->rows / se : 0.0,
                               seta);
        lines++;
    }
    g_string_append_printf(s, "%s ", p->verb);
    progress_bar(s, final ? 1.0 : fraction, 30);
    g_string_append_printf(s,
                           " units %u/%u %" G_GUINT64_FORMAT
                           " rows %s %.0f rows/s ETA %s\n",
                           p->units_done, p->units, p->rows, bytes,
                           elapsed > 0 ? p->rows / elapsed : 0.0,
                           final ? "00:00" : eta);
    lines++;
    p->lines_drawn = lines;
    fputs(s->str, p->out);
    fflush(p->out);
}

static gpointer
progress_thread(gpointer data)
{
    struct progress *p = data;

    g_mutex_lock(&p->lock);
    while (!p->stop) {
        gint64 until = g_get_monotonic_time() +
                       (gint64)(p->interval_s * G_TIME_SPAN_SECOND);

        while (!p->stop && g_cond_wait_until(&p->cond, &p->lock, until))
            ;
        if (!p->stop)
            progress_draw(p, FALSE);
    }
    g_mutex_unlock(&p->lock);
    return NULL;
}

void
progress_start(struct progress *p)
{
    p->thread = g_thread_new("progress", progress_thread, p);
}

void
progress_stop(struct progress *p)
{
    g_mutex_lock(&p->lock);
    p->stop = TRUE;
    g_cond_broadcast(&p->cond);
    g_mutex_unlock(&p->lock);
    if (p->thread != NULL)
        g_thread_join(p->thread);
    p->thread = NULL;
    g_mutex_lock(&p->lock);
    progress_draw(p, TRUE);
    g_mutex_unlock(&p->lock);
}

void
progress_slot_begin(struct progress *p, guint slot, const char *label)
{
    struct progress_slot *sl = &p->slots[slot];

    g_mutex_lock(&p->lock);
    g_free(sl->label);
    sl->label = g_strdup(label);
    sl->rows = sl->bytes = 0;
    sl->fraction = 0;
    sl->started_us = g_get_monotonic_time();
    g_mutex_unlock(&p->lock);
}

void
progress_slot_end(struct progress *p, guint slot, gboolean unit_done)
{
    struct progress_slot *sl = &p->slots[slot];

    g_mutex_lock(&p->lock);
    g_clear_pointer(&sl->label, g_free);
    if (unit_done)
        p->units_done++;
    g_mutex_unlock(&p->lock);
}

void
progress_slot_add(struct progress *p, guint slot, guint64 rows, guint64 bytes,
                  double fraction)
{
    struct progress_slot *sl = &p->slots[slot];

    g_mutex_lock(&p->lock);
    sl->rows += rows;
    sl->bytes += bytes;
    sl->fraction = fraction;
    p->rows += rows;
    p->bytes += bytes;
    g_mutex_unlock(&p->lock);
}

void
progress_add_done(struct progress *p, guint units)
{
    g_mutex_lock(&p->lock);
    p->units_done += units;
    g_mutex_unlock(&p->lock);
}

void
progress_totals(struct progress *p, guint64 *rows, guint64 *bytes,
                double *seconds)
{
    g_mutex_lock(&p->lock);
    *rows = p->rows;
    *bytes = p->bytes;
    *seconds = (g_get_monotonic_time() - p->started_us) / 1e6;
    g_mutex_unlock(&p->lock);
}
