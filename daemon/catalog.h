/* catalog.h: the table catalog in HBase: each salted table's mapping, registered by the first proxy to serve it and checked by every other. */
#pragma once

#include <glib.h>

#include "config.h"
#include "tabstate.h"

struct event_base;

/* The one column a catalog row holds: the mapping as text. */
#define CATALOG_FAMILY "m"
#define CATALOG_COLUMN "m:mapping"
/* The last verified entries, under [catalog] state_dir. */
#define CATALOG_STATE_FILE "catalog.conf"

/* What one check found. */
struct catalog_report {
    gboolean reached;    /* HBase answered every question asked */
    unsigned served;     /* entry present and equal */
    unsigned registered; /* entry absent, registered now */
    unsigned refused;    /* another mapping, or rows it would hide */
    unsigned unverified; /* HBase not asked: not served */
    unsigned from_state; /* HBase not asked: served by the state file */
    char *error;         /* why HBase could not be asked, or NULL */
};

void catalog_report_clear(struct catalog_report *r);

/*
 * Checks every salted table of cfg against the catalog table (blocking:
 * one connection to a [backend] server, under its timeouts), registering
 * the tables it does not hold yet, and sets each table's refusal
 * (tabstate_table.refusal) for the request path.  When HBase cannot be
 * asked, the tables whose mapping equals the last verified one (the
 * state file) are served and the others refused until a later check.
 * Writes the state file after a complete check.  Returns report->reached.
 */
gboolean catalog_check(struct tabstate *ts, struct catalog_report *report);

/*
 * --check-config: the same comparison, writing nothing: one line per
 * table appended to out, *mismatches counting the tables a start would
 * refuse.  FALSE when HBase cannot be asked.
 */
gboolean catalog_compare(const struct config *cfg, GString *out,
                         unsigned *mismatches, GError **error);

/*
 * --check-config: what a start would warn about the tables as HBase holds
 * them (tablecheck_run: a table that does not exist, buckets sharing a
 * region), one line each appended to warnings (char *), through the
 * server the catalog is kept through, with or without a catalog.  FALSE
 * when HBase cannot be asked.
 */
gboolean catalog_advice(const struct config *cfg, GPtrArray *warnings,
                        GError **error);

/*
 * The catalog's entries for tables cfg has no section for (config_orphan),
 * with one scan, published for the request path; each newly refused table
 * logged once.  When HBase cannot be asked, the last ones found stay.
 * catalog_check does it too; main.c every recheck_ms, so an entry another
 * proxy or hbase-salt-migrate registers later is refused here within it.
 */
void catalog_check_orphans(struct tabstate *ts);

/* A reload: the orphans old refused that cfg has no section for either
 * (a reload never drops a section), when both keep the same catalog on
 * the same servers; catalog_check then scans no more, the next periodic
 * check does.  Reloads cost no scan each, and HBase not answering one
 * leaves the refusals in place. */
void catalog_inherit_orphans(struct tabstate *ts, const struct tabstate *old);

/* Whether any table of ts waits for a check that reached HBase. */
gboolean catalog_pending(const struct tabstate *ts);

/* The refused tables of ts, one line each, appended to out; their
 * number.  Orphans (catalog_check_orphans) included. */
unsigned catalog_describe_refused(const struct tabstate *ts, GString *out);

struct hconn;

/*
 * hbase-salt-migrate's check of one table it reads (write FALSE) or
 * writes, on c, made with the proxy's own code before a single row
 * moves: a table with a section in cfg is judged as a proxy's start
 * judges it and, with write, registered by the proxy's rules when the
 * catalog does not hold it yet; a table without a section must have no
 * entry (read or written unsalted, its rows would not be where the
 * proxies salt them).  *refusal: why the table must not be used, as the
 * proxy words and logs it (g_warning), NULL when it may.  FALSE when
 * HBase could not be asked.
 */
gboolean catalog_check_copy(struct hconn *c, const struct config *cfg,
                            const char *table, gboolean write, char **refusal,
                            GError **error);

/*
 * The catalog's own thread: the checks above block on HBase (a server
 * that accepts and never answers holds one for request_timeout_ms per
 * call), so after start they run here, one at a time in the order
 * asked, and never on the main loop, which also serves the admin
 * endpoint (/metrics, /healthz) and signals.  What a check finds goes
 * into the tabstate it was given (atomics, tabstate.h); a job's done
 * callback, if any, runs on the loop's thread afterwards.
 */
struct catalog_thread;

/* A job finished (ran) or was dropped unrun by catalog_thread_free
 * (!ran); reached: catalog_check reached HBase.  The loop's thread. */
typedef void (*catalog_done_fn)(void *arg, gboolean ran, gboolean reached);

typedef enum {
    CATALOG_JOB_CHECK,   /* catalog_check: a reload's new tables */
    CATALOG_JOB_RECHECK, /* catalog_check again while HBase has not
                            answered one, else catalog_check_orphans */
} catalog_job_t;

/* Starts the thread; done callbacks run on base's thread.  Signals stay
 * with the caller's thread. */
struct catalog_thread *catalog_thread_new(struct event_base *base,
                                          GError **error);

/* Queues a job on ts (a reference is taken); done may be NULL. */
void catalog_thread_push(struct catalog_thread *ct, catalog_job_t kind,
                         struct tabstate *ts, catalog_done_fn done, void *arg);

/* Jobs queued or running that kind, for not asking twice. */
unsigned catalog_thread_queued(struct catalog_thread *ct, catalog_job_t kind);

/* Stops the thread: the job under way finishes (its calls are bounded by
 * the [backend] timeouts), the queued ones are dropped (done with
 * !ran); joined and freed.  The loop's thread. */
void catalog_thread_free(struct catalog_thread *ct);
