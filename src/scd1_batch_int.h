/*-------------------------------------------------------------------------
 * scd1_batch_int.h
 *	  What the SCD 1 C fold (scd1_batch.c) hands its writes (scd1_write.c).
 *-------------------------------------------------------------------------
 */
#ifndef AUTOCDC_SCD1_BATCH_INT_H
#define AUTOCDC_SCD1_BATCH_INT_H

#include "batch.h"

/* Per key, what earlier runs applied: its state row and its target row. */
typedef struct KeyApplied
{
	bool		has_state;
	bool		has_old_ups;
	bool		has_old_del;
	bool		has_dead_at;
	bool		has_row;
	bool		replayed;		/* an event repeats the applied upsert */
	Datum		old_ups;
	Datum		old_del;
	Datum		dead_at;
	BatchRowId	state_row;
	BatchRowId	target_row;
	uint64		replay_hash;	/* that event's values_hash */
} KeyApplied;

/*
 * Folds each key of the batch with what was applied (the SQL fold's
 * "calc" and "fin") and writes target and state: keys in "order".
 */
extern void scd1_batch_write(Batch *b, KeyApplied *applied, uint32 *order,
							 bool has_mark, Datum mark, FlowCounts *counts);

#endif							/* AUTOCDC_SCD1_BATCH_INT_H */
