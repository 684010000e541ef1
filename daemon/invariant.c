/* invariant.c: what an engine relies on, checked where it relies on it. */
#include "invariant.h"

#include "hsp-config.h"
#include "lograte.h"

static guint64 invariant_count; /* atomic */
static gboolean invariant_fatal = HSP_CHECKED;

gboolean
invariant_broken(const char *where, const char *fmt, ...)
{
    g_autofree char *what = NULL;
    g_autofree char *head = NULL;
    va_list ap;

    __atomic_add_fetch(&invariant_count, 1, __ATOMIC_RELAXED);
    va_start(ap, fmt);
    what = g_strdup_vprintf(fmt, ap);
    va_end(ap);
    if (__atomic_load_n(&invariant_fatal, __ATOMIC_RELAXED)) {
        g_error("invariant broken at %s: %s", where, what);
    }
    /* one place breaking on every request must not flood the log */
    head = g_strdup_printf("invariant broken at %s", where);
    if (lograte_note_of(G_LOG_LEVEL_CRITICAL, "time", head,
                        " (a defect of the proxy: please report it)", what,
                        0)) {
        g_critical("%s: %s (a defect of the proxy: please report it)", head,
                   what);
    }
    return FALSE;
}

void
invariant_no_arrow(const char *where, const char *const *names, unsigned n,
                   unsigned from, unsigned to, const char *fmt, ...)
{
    g_autofree char *who = NULL;
    va_list ap;

    va_start(ap, fmt);
    who = g_strdup_vprintf(fmt, ap);
    va_end(ap);
    invariant_broken(where, "%s: no way from %s to %s", who,
                     from < n ? names[from] : "?", to < n ? names[to] : "?");
}

guint64
invariant_errors(void)
{
    return __atomic_load_n(&invariant_count, __ATOMIC_RELAXED);
}

void
invariant_set_fatal(gboolean fatal)
{
    __atomic_store_n(&invariant_fatal, fatal, __ATOMIC_RELAXED);
}
