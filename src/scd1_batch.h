/*-------------------------------------------------------------------------
 * scd1_batch.h
 *	  The SCD type 1 batch fold in C: reads a run's events in one pass,
 *	  folds them per key in a hash table, checks them, and writes the
 *	  target and its state (scd1_write.c).
 *-------------------------------------------------------------------------
 */
#ifndef AUTOCDC_SCD1_BATCH_H
#define AUTOCDC_SCD1_BATCH_H

#include "batch.h"

/* Whether the C fold handles this flow's runs (else the SQL fold does). */
extern bool scd1_batch_eligible(FlowDef *flow, ReadParams *params);

/*
 * Reads and folds the run's events (events_sql), checks them against what
 * earlier runs applied, and applies them to target and state, setting
 * counts.  Returns false, having applied nothing, when the batch holds
 * something the SQL fold must handle: a truncate, or a bad event (the SQL
 * fold then raises the error that names it).  Either way the caller frees
 * the batch with batch_release() (batch.h).
 */
extern bool scd1_batch_fold(FlowDef *flow, ReadParams *params,
							const char *events_sql, FlowCounts *counts);

#endif							/* AUTOCDC_SCD1_BATCH_H */
