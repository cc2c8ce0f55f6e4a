/*-------------------------------------------------------------------------
 * target_scan.h
 *	  The rows a table holds for a batch's keys, read by one pass over the
 *	  table instead of a join with the batch's keys.
 *-------------------------------------------------------------------------
 */
#ifndef AUTOCDC_TARGET_SCAN_H
#define AUTOCDC_TARGET_SCAN_H

#include "events.h"

/*
 * Whether a pass over relid reads the rows of the batch's keys (the table's
 * columns named keys) more cheaply than looking them up, and gives what a
 * statement reading keys and columns would: an ordinary heap table whose
 * key columns compare as the batch's do, which the current user may read
 * (the executor's check, its hook included) without row security, and
 * small enough to keep its rows of the batch in memory.
 */
extern bool acdc_target_scan_applies(Events *ev, Oid relid, List *keys, List *columns);

/*
 * The rows of relid (with t_self set), by key number, NULL for a key it
 * has no row of, as a statement run now sees them; allocated in the
 * current memory context.  NULL if a key has two rows: the caller then
 * joins, and meets them as the join does.
 */
extern HeapTuple *acdc_target_scan(Events *ev, Oid relid, List *keys, uint64 *nfound);

#endif							/* AUTOCDC_TARGET_SCAN_H */
