/* scan.h: the scan engine: fan-out over salt buckets, merge, expiry. */
#pragma once

#include <event2/util.h>

#include "worker.h"

/*
 * Every scanner call (scannerOpen*, scannerGet, scannerGetList,
 * scannerClose) comes here, salted table or not, so that every scanner id
 * a client sees is the proxy's: an i32 valid on any connection to any
 * worker, as HBase's are.  A scanner lives on the worker that opened it;
 * calls arriving on another worker are posted to it and answered back.
 */

struct scantab;

/* The process's scanner ids (scantab.c); freeing it frees the scanners
 * left, once the workers are gone. */
struct scantab *scan_table_new(void);
void scan_table_free(struct scantab *t);

/* Arms w's expiry timer; called on w's thread as it starts. */
void scan_worker_start(struct worker *w);
void scan_timer_cb(evutil_socket_t fd, short what, void *arg);
/* Shutdown: closes w's idle scanners and their backend scanners. */
void scan_worker_stop(struct worker *w);

/*
 * A scanner call of a client on worker w (msg: the whole call, no frame
 * header, in req->client_proto).  Takes req over: it is finished, on w,
 * when the answer is ready.
 */
void scan_request(struct worker *w, struct req *req, const uint8_t *msg,
                  size_t len);

/* Scanners open now, over all workers. */
unsigned scan_open_count(struct scantab *t);
