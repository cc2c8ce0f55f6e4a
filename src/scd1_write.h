/*-------------------------------------------------------------------------
 * scd1_write.h
 *	  The writes of the SCD type 1 fold (scd1_fold.c): each kind of change
 *	  to target and state gathered as a relation of its rows, then one
 *	  set-based statement per kind; truncates and tombstones.
 *-------------------------------------------------------------------------
 */
#ifndef AUTOCDC_SCD1_WRITE_H
#define AUTOCDC_SCD1_WRITE_H

#include "events.h"
#include "relation.h"

typedef struct Scd1Writes
{
	FlowDef    *flow;
	Events	   *ev;
	List	   *written;		/* target columns written: plain, then tracked */
	int			ntracked;		/* the last ntracked of them */
	bool		by_keys;		/* stored target rows also matched by keys */
	bool		seq_col;		/* the target keeps the upsert's sequence */
	List	   *wcols;			/* target columns set: written, then that one */
	BatchRelation del;			/* target rows, by row id */
	BatchRelation upd;
	BatchRelation ins;			/* target rows, new: (id, keys, written) */
	BatchRelation stu;			/* state rows, by row id */
	BatchRelation sti;			/* state rows, new */
	BatchRelation std;			/* state rows no longer needed, by row id */
	Datum	   *values;			/* room for one row of any of them */
	bool	   *nulls;
} Scd1Writes;

/*
 * The state's columns after the keys, as the writes take them: the
 * upsert's and the delete's sequence, when the key died, then one
 * sequence per tracked column.
 */
#define SCD1_STATE_FIXED 3

extern void acdc_scd1_writes_begin(Scd1Writes *w, FlowDef *flow, Events *ev,
							  List *written, int ntracked);
extern void acdc_scd1_write_delete(Scd1Writes *w, const BatchRowId *row, Datum *keys);
/* values: of w->wcols */
extern void acdc_scd1_write_update(Scd1Writes *w, const BatchRowId *row, Datum *keys,
							  Datum *values, bool *nulls);
extern void acdc_scd1_write_insert(Scd1Writes *w, uint32 id, Datum *keys,
							  Datum *values, bool *nulls);
/* row NULL: a new state row for key id */
extern void acdc_scd1_write_state(Scd1Writes *w, const BatchRowId *row, uint32 id,
							 Datum *keys, Datum *values, bool *nulls);
extern void acdc_scd1_drop_state(Scd1Writes *w, const BatchRowId *row);
/* Runs the statements; sets counts->upserted and counts->deleted. */
extern void acdc_scd1_writes_finish(Scd1Writes *w, FlowCounts *counts);

/* A truncate at t (the sequence as text) over the whole target: rows deleted. */
extern int64 acdc_scd1_write_truncate(FlowDef *flow, const char *t);
extern void acdc_scd1_purge_tombstones(FlowDef *flow);

#endif							/* AUTOCDC_SCD1_WRITE_H */
