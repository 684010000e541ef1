/* scanfilter.h: a scan's filter string rewritten for each salt bucket. */
#pragma once

#include <glib.h>
#include <stddef.h>
#include <stdint.h>

#include "salt.h"

/*
 * Inside one bucket every physical row is prefix || logical row, with the
 * same prefix, so a filter that compares row keys keeps its meaning when
 * the prefix is put in front of what it compares against:
 *
 *   PrefixFilter('p')              PrefixFilter(prefix||'p')
 *   InclusiveStopFilter('k')       InclusiveStopFilter(prefix||'k')
 *   RowFilter(op, 'binary:k')      RowFilter(op, 'binary:'prefix||'k')
 *   RowFilter(op, 'binaryprefix:k')  likewise
 *   RowFilter(=, 'regexstring:r')  the regex anchored after the prefix
 *   RowFilter(=, 'substring:s')    a regex: s after the prefix, any case
 *
 * Everything else is kept as written.  What cannot be made exact per
 * bucket is refused rather than answered wrongly.  scanfilter_new fails
 * for row regexes that look at the start of the row in ways a prefix
 * changes, and for row regexes or substrings a salt byte >= 0x80 would
 * break.  scanfilter_multi_bucket_ok is FALSE, for scans over several
 * buckets, for filters that end or count a scan on what one bucket sees:
 * WHILE around a filter not monotonic in the row key (each bucket would
 * stop at its own first miss, not the scan's), WHILE inside OR or SKIP
 * (the row where it ends passes the OR unlike the rows after it, and each
 * bucket has one), a ColumnCountGetFilter
 * that can end the scan, a PageFilter nested in OR/SKIP/WHILE, and a
 * PageFilter followed in an AND by a filter that drops whole rows (it
 * counts rows it never returns).  A top-level PageFilter counts per
 * bucket as it counts per region, and the merge applies the scan-wide
 * limit.
 *
 * Nothing reaches a bucket unrewritten: a string that does not parse, or
 * a known filter with arguments HBase refuses, is refused with
 * ParseFilter's own message (HBase would refuse it too); one beyond the
 * parser's caps, and a filter name HBase does not build in, are refused
 * with the proxy's, unless the name is one of custom (the names [backend]
 * custom_filters declares the servers register: filters that do not read
 * the row key, kept as written with their arguments).
 */

struct scanfilter;

/* NULL with an error a client can read when the filter cannot be
 * rewritten exactly for this table.  custom: NULL-ended custom filter
 * names, or NULL for none. */
struct scanfilter *scanfilter_new(const uint8_t *text, size_t len,
                                  const struct salt_table *t,
                                  gboolean reversed, const char *const *custom,
                                  GError **error);
/*
 * The same for Thrift2's filterBytes (filterpb.h): the protobuf Filter is
 * read into the filter language's tree, the rewrite above applied to it,
 * and scanfilter_for_bucket then returns a protobuf Filter for the bucket:
 * lists, wrappers and the row-key filters written anew, every other filter
 * copied byte for byte.  Unlike a string, bytes this cannot rewrite
 * exactly are refused (NULL, FILTERPB_ERROR or the refusals above), never
 * sent unchanged: malformed bytes (FILTERPB_ERROR_MALFORMED, protobuf's
 * message), classes HBase lacks, filters that read the row key in ways
 * the rewrite cannot follow (FuzzyRowFilter, MultiRowRangeFilter, a
 * RowFilter with a LongComparator or a JONI or MULTILINE regex...), and
 * any filter not on filterpb's allow-list of filters that never read the
 * row key, nor of custom_classes (NULL-ended, or NULL: the classes of
 * the custom filters [backend] custom_filters declares, copied as
 * received).  The other functions below answer as for a string.
 *
 * A TGet is a scan of one row in one bucket: scanfilter_new_pb (reversed
 * FALSE), then scanfilter_for_bucket(f, salt_bucket(row)); the page limit
 * and the multi-bucket answers do not apply to it.  The same holds for a
 * TGet's filterString with scanfilter_new.
 */
struct scanfilter *scanfilter_new_pb(const uint8_t *pb, size_t len,
                                     const struct salt_table *t,
                                     gboolean reversed,
                                     const char *const *custom_classes,
                                     GError **error);
void scanfilter_free(struct scanfilter *f);

/* The filter string (or filterBytes) for one bucket; valid until the
 * next call. */
const uint8_t *scanfilter_for_bucket(const struct scanfilter *f,
                                     uint32_t bucket, size_t *len);

/*
 * Forward-looking salting (legacy.h): every bucket and the legacy range
 * drop rows the other side owns, after the backend's PageFilter would
 * have counted them.  Lifted, a top-level PageFilter goes to the backend
 * with no limit, and the merge alone applies scanfilter_page_limit.
 */
void scanfilter_lift_page(struct scanfilter *f);

/* The filter string for the legacy (unsalted) range: as the client wrote
 * it, PageFilter lifted if asked; valid until the next call. */
const uint8_t *scanfilter_for_legacy(const struct scanfilter *f, size_t *len);

/* Whether a PageFilter is anywhere in the filter: it counts the rows of
 * one backend scanner, a count a scanner opened again starts over. */
gboolean scanfilter_has_page(const struct scanfilter *f);

/* Rows the whole scan may return (a top-level PageFilter); -1: no limit. */
int64_t scanfilter_page_limit(const struct scanfilter *f);

/* Whether the filter confines the scan to one bucket (a top-level
 * PrefixFilter whose prefix fixes the hashed part). */
gboolean scanfilter_single_bucket(const struct scanfilter *f,
                                  uint32_t *bucket);

/* Whether the filter means the same spread over several buckets, and if
 * not, why (a message for the client). */
gboolean scanfilter_multi_bucket_ok(const struct scanfilter *f);
const char *scanfilter_multi_bucket_why(const struct scanfilter *f);
