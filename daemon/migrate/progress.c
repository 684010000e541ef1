/* progress.c: progress bars and lines for hbase-salt-migrate. */
#include "progress.h"

#include <string.h>

/* Digits of a key read after a unit's common prefix: as many as a double
 * tells apart. */
#define PROGRESS_DIGITS 12

/*
 * Where keys lie between a unit's first and last rows: after their common
 * prefix, each position is a digit whose range is that of the sampled
 * keys' bytes there (plus one, below them, for a key that ends before
 * it: a shorter key sorts first).
 */
struct progress_scale {
    GBytes *first, *last;
    size_t prefix;
    guint8 lo[PROGRESS_DIGITS], hi[PROGRESS_DIGITS];
    gboolean present[PROGRESS_DIGITS], absent[PROGRESS_DIGITS];
    double vfirst, vlast;
};

struct progress_unit {
    struct unit range;
    gboolean idle;
    gboolean set;                /* progress_unit_set was called */
    gboolean sampled;            /* the sample says how many rows it holds */
    gboolean whole;              /* ...exactly: it saw every one */
    guint nsample;               /* keys sampled */
    double sample_rows;          /* rows the sample estimates */
    struct progress_scale scale; /* sampled, not whole */
    guint64 rows;                /* done, before this run and in it */
    double at;                   /* where the last row done lies, 0..1 */
    gboolean done;
};

struct progress_slot {
    char *label; /* NULL: idle */
    guint unit;
    guint64 rows, bytes; /* this run */
    gint64 started_us;
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
    guint nunits;
    struct progress_unit *unit;
    guint units, units_done; /* not idle; finished */
    guint units_set;         /* progress_unit_set */
    guint64 rows, bytes;     /* this run */
    gint64 started_us;
    guint lines_drawn; /* tty: lines to move up before redrawing */
    gboolean stop;
    GThread *thread;
};

/* ---- the estimator ---------------------------------------------------- */

static double
progress_scale_value(const struct progress_scale *s, const uint8_t *key,
                     size_t len)
{
    double v = 0, w = 1;

    for (guint p = 0; p < PROGRESS_DIGITS; p++) {
        size_t i = s->prefix + p;
        guint radix = (s->present[p] ? s->hi[p] - s->lo[p] + 1u : 0u) +
                      (s->absent[p] ? 1u : 0u);
        guint d = 0;

        if (radix <= 1) {
            continue; /* every key alike here: no information */
        }
        if (i < len && s->present[p]) {
            d = (s->absent[p] ? 1u : 0u) +
                (guint)(CLAMP(key[i], s->lo[p], s->hi[p]) - s->lo[p]);
        }
        w /= radix;
        v += d * w;
    }
    return v;
}

static void
progress_scale_learn_key(struct progress_scale *s, const uint8_t *key,
                         size_t len)
{
    for (guint p = 0; p < PROGRESS_DIGITS; p++) {
        size_t i = s->prefix + p;

        if (i >= len) {
            s->absent[p] = TRUE;
        } else if (!s->present[p]) {
            s->present[p] = TRUE;
            s->lo[p] = s->hi[p] = key[i];
        } else {
            s->lo[p] = MIN(s->lo[p], key[i]);
            s->hi[p] = MAX(s->hi[p], key[i]);
        }
    }
}

/* The digits of keys (GBytes, first among them) and last. */
static void
progress_scale_init(struct progress_scale *s, GPtrArray *keys, GBytes *last)
{
    gsize fl, ll;
    const uint8_t *f = g_bytes_get_data(keys->pdata[0], &fl);
    const uint8_t *l = g_bytes_get_data(last, &ll);

    memset(s, 0, sizeof(*s));
    s->first = g_bytes_ref(keys->pdata[0]);
    s->last = g_bytes_ref(last);
    while (s->prefix < fl && s->prefix < ll && f[s->prefix] == l[s->prefix]) {
        s->prefix++;
    }
    for (guint i = 0; i < keys->len; i++) {
        gsize n;
        const uint8_t *k = g_bytes_get_data(keys->pdata[i], &n);

        progress_scale_learn_key(s, k, n);
    }
    progress_scale_learn_key(s, l, ll);
    s->vfirst = progress_scale_value(s, f, fl);
    s->vlast = progress_scale_value(s, l, ll);
}

static void
progress_scale_clear(struct progress_scale *s)
{
    g_clear_pointer(&s->first, g_bytes_unref);
    g_clear_pointer(&s->last, g_bytes_unref);
}

/* Where key lies from the first row (0) to the last (1). */
static double
progress_scale_at(const struct progress_scale *s, const uint8_t *key,
                  size_t len)
{
    gsize fl, ll;
    const uint8_t *f = g_bytes_get_data(s->first, &fl);
    const uint8_t *l = g_bytes_get_data(s->last, &ll);
    double v;

    if (unit_key_cmp(key, len, f, fl) <= 0) {
        return 0;
    }
    if (unit_key_cmp(key, len, l, ll) >= 0) {
        return 1;
    }
    if (s->vlast <= s->vfirst) {
        return 0;
    }
    v = (progress_scale_value(s, key, len) - s->vfirst) /
        (s->vlast - s->vfirst);
    return CLAMP(v, 0.0, 1.0);
}

/* Where key lies in unit u, 0..1: by its sample's digits, else by bytes
 * over the unit's key range. */
static double
progress_unit_at(const struct progress_unit *u, const uint8_t *key, size_t len)
{
    if (u->sampled && !u->whole) {
        return progress_scale_at(&u->scale, key, len);
    }
    return unit_fraction(&u->range, key, len);
}

/* The rows unit u holds as far as is known, or a negative number. */
static double
progress_unit_total(const struct progress_unit *u)
{
    double rows = (double)u->rows;

    if (u->done) {
        return rows;
    }
    if (u->sampled && u->whole) {
        return MAX(rows, (double)u->nsample);
    }
    /* past the sample, the rows done say more than it did */
    if (u->at > 0 && (!u->sampled || u->rows > u->nsample)) {
        return MAX(rows, rows / u->at);
    }
    if (u->sampled) {
        return MAX(rows, u->sample_rows);
    }
    return -1;
}

/* The fraction of the run's rows done, the rows in all (*total, negative
 * when nothing is known of any unit: then by units); under p->lock. */
static double
progress_estimate(const struct progress *p, double *total)
{
    double known = 0, done = 0, f;
    guint nknown = 0, nunknown = 0;

    for (guint i = 0; i < p->nunits; i++) {
        const struct progress_unit *u = &p->unit[i];
        double t;

        if (u->idle) {
            continue;
        }
        t = progress_unit_total(u);
        done += (double)u->rows;
        if (t < 0) {
            nunknown++;
        } else {
            known += t;
            nknown++;
        }
    }
    if (nknown == 0) {
        /* no sample and nothing run yet: by units, as a last resort */
        *total = -1;
        if (p->units == 0) {
            return 1;
        }
        f = p->units_done;
        for (guint i = 0; i < p->nslots; i++) {
            if (p->slots[i].label != NULL) {
                f += p->unit[p->slots[i].unit].at;
            }
        }
        return MIN(f / p->units, 1.0);
    }
    /* a unit nothing is known of holds as many as the others, on average */
    *total = known + nunknown * (known / nknown);
    if (*total <= 0) {
        return p->units == 0 ? 1 : (double)p->units_done / p->units;
    }
    return MIN(done / *total, 1.0);
}

double
progress_fraction(struct progress *p, double *total_rows)
{
    double f, total;

    g_mutex_lock(&p->lock);
    f = progress_estimate(p, &total);
    g_mutex_unlock(&p->lock);
    if (total_rows != NULL) {
        *total_rows = total;
    }
    return f;
}

void
progress_unit_set(struct progress *p, guint i, const struct unit *u,
                  gboolean idle, guint64 rows_before)
{
    struct progress_unit *pu = &p->unit[i];

    g_mutex_lock(&p->lock);
    if (!pu->set) {
        pu->set = TRUE;
        p->units_set++;
    }
    pu->rows = rows_before;
    unit_clear(&pu->range);
    pu->range.side = u->side;
    pu->range.start = g_bytes_ref(u->start);
    pu->range.end = g_bytes_ref(u->end);
    if (idle && !pu->idle) {
        p->units--;
    }
    pu->idle = idle;
    g_mutex_unlock(&p->lock);
}

void
progress_unit_sample(struct progress *p, guint i, GPtrArray *keys,
                     gboolean whole, GBytes *last)
{
    struct progress_unit *u = &p->unit[i];
    static const uint8_t top[8] = { 0xff, 0xff, 0xff, 0xff,
                                    0xff, 0xff, 0xff, 0xff };
    g_autoptr(GBytes) end = NULL;
    double a;

    g_mutex_lock(&p->lock);
    progress_scale_clear(&u->scale);
    u->sampled = u->whole = FALSE;
    u->nsample = keys->len;
    if (whole) {
        u->sampled = u->whole = TRUE;
    } else if (keys->len >= 2) {
        /* the last row unknown: the range's end (an open one is all 0xff) */
        if (last == NULL) {
            end = g_bytes_get_size(u->range.end) > 0
                      ? g_bytes_ref(u->range.end)
                      : g_bytes_new_static(top, sizeof(top));
        }
        progress_scale_init(&u->scale, keys, last != NULL ? last : end);
        /* keys->len rows reach a: the unit holds about len / a */
        a = progress_scale_at(&u->scale,
                              g_bytes_get_data(keys->pdata[keys->len - 1],
                                               NULL),
                              g_bytes_get_size(keys->pdata[keys->len - 1]));
        if (a > 1e-12) {
            u->sampled = TRUE;
            u->sample_rows = MIN((keys->len - 1) / a + 1, 1e15);
        } else {
            progress_scale_clear(&u->scale); /* it tells nothing */
        }
    }
    g_mutex_unlock(&p->lock);
}

/* ---- the display ------------------------------------------------------ */

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
    p->nunits = p->units = units;
    p->unit = g_new0(struct progress_unit, units);
    for (guint i = 0; i < units; i++) {
        p->unit[i].range.start = g_bytes_new(NULL, 0);
        p->unit[i].range.end = g_bytes_new(NULL, 0);
    }
    p->started_us = g_get_monotonic_time();
    return p;
}

void
progress_free(struct progress *p)
{
    if (p == NULL) {
        return;
    }
    for (guint i = 0; i < p->nslots; i++) {
        g_free(p->slots[i].label);
    }
    for (guint i = 0; i < p->nunits; i++) {
        unit_clear(&p->unit[i].range);
        progress_scale_clear(&p->unit[i].scale);
    }
    g_free(p->unit);
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

/* The time left for left_rows at rows per elapsed seconds. */
static void
progress_eta(char *buf, size_t len, double elapsed, guint64 rows,
             double left_rows)
{
    double left;

    if (rows == 0 || elapsed < 0.5 || left_rows < 0) {
        g_strlcpy(buf, "--:--", len);
        return;
    }
    left = left_rows * elapsed / rows;
    if (left >= 360000) {
        g_strlcpy(buf, ">100h", len);
    } else if (left >= 3600) {
        g_snprintf(buf, len, "%d:%02d:%02d", (int)(left / 3600),
                   (int)(left / 60) % 60, (int)left % 60);
    } else {
        g_snprintf(buf, len, "%02d:%02d", (int)(left / 60), (int)left % 60);
    }
}

static void
progress_bar(GString *s, double fraction, guint width)
{
    guint full = (guint)(fraction * width + 0.5);

    g_string_append_c(s, '[');
    for (guint i = 0; i < width; i++) {
        g_string_append_c(s, i < full ? '#' : '.');
    }
    g_string_append_c(s, ']');
}

static void
progress_draw(struct progress *p, gboolean final)
{
    g_autoptr(GString) s = g_string_new(NULL);
    gint64 now = g_get_monotonic_time();
    double elapsed = (now - p->started_us) / 1e6;
    double total, fraction = progress_estimate(p, &total), left = -1;
    guint64 done_rows = 0;
    char bytes[32], eta[32];
    guint lines = 0;

    /* the rows shown are those of every run, as the units and the percent
     * are: a resumed run said "rows 1000 of ~3701, 100%" with 2701 rows
     * copied before it; the rate and the bytes are this run's */
    for (guint i = 0; i < p->nunits; i++) {
        if (!p->unit[i].idle) {
            done_rows += p->unit[i].rows;
        }
    }
    if (total >= 0) {
        left = MAX(total - (double)done_rows, 0.0);
    } else if (fraction > 0) {
        left = (double)done_rows * (1 - fraction) / fraction;
    }
    progress_human_bytes(bytes, sizeof(bytes), (double)p->bytes);
    progress_eta(eta, sizeof(eta), elapsed, p->rows, left);
    if (!p->tty) {
        g_autofree char *of = total >= 0 && !final
                                  ? g_strdup_printf(" of ~%.0f", total)
                                  : g_strdup("");

        g_string_printf(s,
                        "%s: units %u/%u, rows %" G_GUINT64_FORMAT
                        "%s, %s, %.0f rows/s, %.0f%%, ETA %s%s\n",
                        p->verb, p->units_done, p->units, done_rows, of, bytes,
                        elapsed > 0 ? p->rows / elapsed : 0.0,
                        100 * (final ? 1.0 : fraction), final ? "00:00" : eta,
                        final ? " (end)" : "");
        fputs(s->str, p->out);
        fflush(p->out);
        return;
    }
    /* move up over the previous drawing and clear it */
    for (guint i = 0; i < p->lines_drawn; i++) {
        g_string_append(s, "\033[1A\033[2K");
    }
    for (guint i = 0; i < p->nslots && !final; i++) {
        const struct progress_slot *sl = &p->slots[i];
        const struct progress_unit *u;
        double se, ut, uf;
        char sb[32], seta[32];

        if (sl->label == NULL) {
            continue;
        }
        u = &p->unit[sl->unit];
        ut = progress_unit_total(u);
        uf = ut > 0 ? (double)u->rows / ut : u->at;
        se = (now - sl->started_us) / 1e6;
        progress_human_bytes(sb, sizeof(sb), (double)sl->bytes);
        progress_eta(seta, sizeof(seta), se, sl->rows,
                     ut >= 0 ? MAX(ut - (double)u->rows, 0.0) : -1);
        g_string_append_printf(s, "  %-28.28s ", sl->label);
        progress_bar(s, uf, 20);
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
                           p->units_done, p->units, done_rows, bytes,
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
        if (!p->stop && p->units_set == p->nunits) {
            progress_draw(p, FALSE);
        }
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
    if (p->thread != NULL) {
        g_thread_join(p->thread);
    }
    p->thread = NULL;
    g_mutex_lock(&p->lock);
    progress_draw(p, TRUE);
    g_mutex_unlock(&p->lock);
}

void
progress_slot_begin(struct progress *p, guint slot, guint i, const char *label,
                    guint64 rows, GBytes *after)
{
    struct progress_slot *sl = &p->slots[slot];
    struct progress_unit *u = &p->unit[i];

    g_mutex_lock(&p->lock);
    g_free(sl->label);
    sl->label = g_strdup(label);
    sl->unit = i;
    sl->rows = sl->bytes = 0;
    sl->started_us = g_get_monotonic_time();
    /* a unit resumed (or retried) starts where its rows done end */
    u->rows = rows;
    u->at = after != NULL ? progress_unit_at(u, g_bytes_get_data(after, NULL),
                                             g_bytes_get_size(after))
                          : 0;
    g_mutex_unlock(&p->lock);
}

void
progress_slot_end(struct progress *p, guint slot, gboolean unit_done)
{
    struct progress_slot *sl = &p->slots[slot];

    g_mutex_lock(&p->lock);
    if (unit_done) {
        p->unit[sl->unit].done = TRUE;
        p->units_done++;
    }
    g_clear_pointer(&sl->label, g_free);
    g_mutex_unlock(&p->lock);
}

void
progress_slot_add(struct progress *p, guint slot, guint64 rows, guint64 bytes,
                  const uint8_t *key, size_t len)
{
    struct progress_slot *sl = &p->slots[slot];
    struct progress_unit *u = &p->unit[sl->unit];

    g_mutex_lock(&p->lock);
    sl->rows += rows;
    sl->bytes += bytes;
    u->rows += rows;
    u->at = progress_unit_at(u, key, len);
    p->rows += rows;
    p->bytes += bytes;
    g_mutex_unlock(&p->lock);
}

void
progress_add_done(struct progress *p, guint i, guint64 rows)
{
    g_mutex_lock(&p->lock);
    p->unit[i].rows = rows;
    p->unit[i].done = TRUE;
    p->units_done++;
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
