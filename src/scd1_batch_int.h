/*-------------------------------------------------------------------------
 * scd1_batch_int.h
 *	  What the SCD 1 C fold (scd1_batch.c) hands its writes (scd1_write.c).
 *-------------------------------------------------------------------------
 */
#ifndef AUTOCDC_SCD1_BATCH_INT_H
#define AUTOCDC_SCD1_BATCH_INT_H

#include "batch.h"

#include "storage/itemptr.h"

/* The relation of the batch's keys: (__autocdc_id, keys). */
#define KEYS_RELATION "__autocdc_keys"
/* The target rows of keys whose applied upsert is read again: (__autocdc_id, __autocdc_tid). */
#define REPLAYS_RELATION "__autocdc_replays"

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
	ItemPointerData state_tid;
	ItemPointerData row_tid;
	uint64		replay_hash;	/* that event's values_hash */
} KeyApplied;

/* Entries for the key columns, as the events have them, from attribute "first". */
extern void scd1_key_entries(Batch *b, TupleDesc desc, int first);

/*
 * Folds each key of the batch with what was applied (the SQL fold's
 * "calc" and "fin") and writes target and state: keys in "order".
 */
extern void scd1_batch_write(Batch *b, KeyApplied *applied, uint32 *order,
							 bool has_mark, Datum mark, FlowCounts *counts);

#endif							/* AUTOCDC_SCD1_BATCH_INT_H */
