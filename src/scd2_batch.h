/*-------------------------------------------------------------------------
 * scd2_batch.h
 *	  The SCD type 2 fold in C: a run's events read in one pass, sorted per
 *	  key, checked against the event store, and each touched key's history
 *	  folded again in C; SQL then writes the new events and the versions
 *	  that changed.
 *-------------------------------------------------------------------------
 */
#ifndef AUTOCDC_SCD2_BATCH_H
#define AUTOCDC_SCD2_BATCH_H

#include "scd2.h"

/* Whether the C fold handles this flow's runs (else the SQL fold does). */
extern bool scd2_batch_eligible(FlowDef *flow, ReadParams *params, Scd2Cols *c);

/*
 * Applies the run's events (events_sql).  Returns false, having applied
 * nothing, when the batch holds something the SQL fold must handle (it
 * then raises the error that names a bad event).
 */
extern bool scd2_batch_apply(FlowDef *flow, ReadParams *params,
							 const char *events_sql, Scd2Cols *c,
							 FlowCounts *counts);

#endif							/* AUTOCDC_SCD2_BATCH_H */
