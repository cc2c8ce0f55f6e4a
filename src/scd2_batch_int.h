/*-------------------------------------------------------------------------
 * scd2_batch_int.h
 *	  What the two halves of the SCD type 2 C fold share: scd2_batch.c reads
 *	  and checks the batch and what is stored, scd2_write.c folds each key
 *	  and writes what changed.
 *-------------------------------------------------------------------------
 */
#ifndef AUTOCDC_SCD2_BATCH_INT_H
#define AUTOCDC_SCD2_BATCH_INT_H

#include "batch.h"
#include "scd2.h"

#include "access/htup.h"
#include "executor/spi.h"
#include "storage/itemptr.h"

#define BIT(j) (UINT64CONST(1) << (j))

/* An event of the fold, in the event store's shape. */
typedef struct Ev
{
	uint32		key;			/* key number */
	char		kind;			/* 'u', 'd', or 'a': the open version as an anchor */
	bool		fresh;			/* read in this run and not stored */
	uint64		inherit;		/* 'u': value columns left to inherit */
	Datum		seq;
	Datum	   *keys;			/* the key as this event spells it */
	Datum	   *vals;
	bool	   *nulls;
} Ev;

/* A version: stored (with its row id) or folded. */
typedef struct Version Version;
struct Version
{
	uint32		key;
	bool		open;			/* __end_at IS NULL */
	Datum		start;
	Datum		end;
	Datum	   *keys;			/* as its last event spells it */
	Datum	   *vals;
	bool	   *nulls;
	BatchRowId	row;
};

/* Per touched key: where its fold starts. */
typedef struct KeyMode
{
	bool		has_max;
	bool		touched;		/* has a new event */
	bool		anchored;		/* in order after its open version */
	bool		has_pdel;
	Datum		max_stored;		/* the highest stored sequence */
	Datum		smin;			/* earliest new event */
	Datum		pdel;			/* last stored delete before smin */
	Version    *openv;			/* the open version, or NULL */
} KeyMode;

typedef struct Fold2
{
	Batch	   *b;
	FlowDef    *f;
	Scd2Cols   *c;
	int			nvals;
	char	  **names;			/* value columns */
	int		   *evatt;			/* per value column: attribute in the event row, or -1 */
	uint64		ignore_null;	/* value columns in the flow's ignore_null */
	uint64		inheriting;
	uint64		tracked;
	FmgrInfo   *eq;
	Oid		   *coll;
	Form_pg_attribute *valatt;	/* the target's attributes */
	MinimalTuple *rows;			/* by event number */
	uint64		maxrows;
	KeyMode    *modes;			/* by key number */
	Ev		   *evs;			/* the batch's distinct events, by key and sequence */
	uint64		nevs;
	SPITupleTable *stored[3];	/* results values point into, freed after the writes */
	uint32	   *order;			/* key numbers in the keys' order (batch_key_order) */
	uint32	   *rank;			/* by key number: its place in that order */
} Fold2;


/* Orders by key (in the keys' order, see batch_key_order), then sequence. */
static inline int
keyseq_cmp(Fold2 *F, uint32 ka, Datum sa, uint32 kc, Datum sc)
{
	if (ka != kc)
		return F->rank[ka] < F->rank[kc] ? -1 : 1;
	return batch_seq_cmp(F->b, sa, sc);
}

extern bool vals_equal(Fold2 *F, int j, Datum a, bool anull, Datum b, bool bnull);
extern int	version_order(const void *x, const void *y, void *arg);
extern void init_value_entries(Fold2 *F, TupleDesc desc, int first);
extern char *value_list(Fold2 *F, const char *alias);

/* scd2_write.c */
extern void fold_key(Fold2 *F, Ev *ev, uint64 n, Version *out, uint64 *nout);
extern void write_all(Fold2 *F, Version *old, uint64 nold, Version *nv,
					  uint64 nnew, FlowCounts *counts);

#endif							/* AUTOCDC_SCD2_BATCH_INT_H */
