/* job.h: one run of hbase-salt-migrate: its units, workers, and the
 * copy or verify of each unit. */
#pragma once

#include <glib.h>
#include <stdio.h>

#include "ckpt.h"
#include "config.h"
#include "progress.h"
#include "salt.h"
#include "unit.h"

struct job_opts {
    const char *from;           /* source table */
    const char *to;             /* destination table */
    guint parallel;             /* workers (scanners at once) */
    guint batch_rows;           /* rows per scanner fetch and write batch */
    gsize batch_bytes;          /* most bytes of one mutateRowsTs call */
    gboolean all_versions;      /* getVer per cell */
    gboolean dry_run;           /* read, count, write nothing */
    gboolean verify;            /* compare instead of copy */
    double max_rows_per_second; /* 0: no limit */
    guint retries;              /* attempts per unit after the first */
    guint max_diffs;            /* differences printed (all are counted) */
    gboolean units_mode;        /* print a result line per unit */
    gboolean sample;            /* sample each unit's keys for progress */
};

/* What a run did. */
struct job_result {
    guint units_ok, units_failed;
    guint units_interrupted; /* stopped by SIGINT/SIGTERM, or never begun */
    guint64 rows, cells, bytes, diffs; /* rows: of the source units */
    guint64 dest_rows; /* --verify: rows of the destination units */
    guint64 dest_only; /* --verify: of those, rows with no source row */
    guint64 writes;    /* mutateRowsTs calls acknowledged in this run */
};

struct job;

struct job *job_new(const struct config *cfg, const struct job_opts *opts);
void job_free(struct job *j);

/* The mappings the job uses, NULL for an unsalted table. */
const struct salt_table *job_source_salt(const struct job *j);
const struct salt_table *job_dest_salt(const struct job *j);

/* The description a checkpoint of this job carries. */
char *job_describe(const struct job *j);

/*
 * Runs every entry of ck not yet done (entries of the wrong side for the
 * mode are refused), opts->parallel at a time, with progress on prog,
 * result lines (units mode) on results and differences on diffs.  The
 * checkpoint is saved after every acknowledged batch.  Returns FALSE
 * only when it could not run at all; unit failures are in *res.
 */
gboolean job_run(struct job *j, struct ckpt *ck, struct progress *prog,
                 FILE *results, FILE *diffs, struct job_result *res,
                 GError **error);

/* Asks running workers to stop after their current batch. */
void job_interrupt(struct job *j);
