/*-------------------------------------------------------------------------
 * scd2_fold.h
 *	  What the parts of the SCD type 2 fold share: scd2_fold.c reads a
 *	  chunk of keys' events and folds each key, scd2_stored.c reads what is
 *	  stored for them, scd2_write.c writes what changed.
 *-------------------------------------------------------------------------
 */
#ifndef AUTOCDC_SCD2_FOLD_H
#define AUTOCDC_SCD2_FOLD_H

#include "events.h"
#include "relation.h"
#include "scd2.h"

#include "access/htup.h"
#include "nodes/bitmapset.h"
#include "executor/spi.h"
#include "storage/itemptr.h"


/* An event of the fold, in the event store's shape. */
typedef struct Ev
{
	uint32		key;			/* key number */
	char		kind;			/* 'u', 'd', or 'a': the open version as an anchor */
	bool		fresh;			/* read in this run and not applied before */
	bool		in_store;		/* the event store holds it */
	bool		alone;			/* the fold: it starts a version no other event falls in */
	Bitmapset  *inherit;		/* 'u': value columns left to inherit */
	Datum		seq;
	Datum	   *keys;			/* the key as this event spells it */
	Datum	   *vals;
	bool	   *nulls;
	Datum		row;			/* the source row (jsonb) with on_bad_event => 'quarantine' */
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
	bool		anchor_stored;	/* the open version's start event is in the store */
	Datum		max_stored;		/* the highest applied sequence: stored, or the last version's start */
	Datum		smin;			/* earliest new event */
	Datum		pdel;			/* last stored delete before smin */
	bool		has_from;
	Datum		from;			/* else: the start of the last version before smin */
	Version    *openv;			/* the open version, or NULL */
} KeyMode;

typedef struct Fold2
{
	Events	   *ev;				/* the run's events in key order */
	uint32		nkeysets;		/* the keys of this chunk of them */
	Datum	   *keyvals;		/* nkeys values per key of the chunk */
	uint64		nread;			/* the chunk's events, repeats included */
	FlowDef    *f;
	Scd2Cols   *c;
	int			nvals;
	char	  **names;			/* value columns */
	int		   *evatt;			/* per value column: attribute in the event row, or -1 */
	Bitmapset  *ignore_null;	/* value columns in the flow's ignore_null */
	Bitmapset  *inheriting;
	Bitmapset  *tracked;
	bool		by_start;		/* stored versions named by keys and start, not tid */
	bool		by_keys;		/* ... or by tid, with keys and start */
	bool		rows_exact;		/* no trigger or rule may change what the writes put */
	FmgrInfo   *eq;
	Oid		   *coll;
	Form_pg_attribute *valatt;	/* the target's attributes */
	KeyMode    *modes;			/* by key number */
	Ev		   *evs;			/* the batch's distinct events, by key and sequence */
	uint64		nevs;
	SPITupleTable *stored[3];	/* results values point into, freed after the writes */
	struct BtFold *bt;			/* a bitemporal target's (bitemp_fold.c), or NULL */
	bool		all_new;		/* target and store were empty when the run began */
	MemoryContext chunk_cxt;	/* what lives as long as the chunk */
	char	   *arena_free;		/* ... carved from prefaulted blocks of it */
	char	   *arena_end;
	Size		arena_block;	/* their size: a small part of the chunk's bound */
} Fold2;


/* Orders by key (numbered in the keys' order), then sequence. */
static inline int
keyseq_cmp(Fold2 *F, uint32 ka, Datum sa, uint32 kc, Datum sc)
{
	if (ka != kc)
		return ka < kc ? -1 : 1;
	return events_seq_cmp(F->ev, sa, sc);
}

extern bool acdc_vals_equal(Fold2 *F, int j, Datum a, bool anull, Datum b, bool bnull);

/*
 * size bytes (not zeroed) that live as long as the chunk when the current
 * memory context is the chunk's, else a palloc: the fold's many small
 * values, in memory whose pages are present (acdc_prefault).
 */
extern void *acdc_fold_alloc(Fold2 *F, Size size);
extern int	acdc_version_order(const void *x, const void *y, void *arg);
extern void acdc_init_value_entries(Fold2 *F, TupleDesc desc, int first);
extern char *acdc_value_list(Fold2 *F, const char *alias);
/* The keys, the value columns, then the nextra names given: a row's columns. */
extern List *acdc_keyed_columns(Fold2 *F, int nextra, const char *const *extra);
/* values[0] := key number, values[1..] := its keys (as "keys" spells them, else the chunk's) */
extern void acdc_put_key(Fold2 *F, uint32 key, Datum *keys, Datum *values, bool *nulls);
extern void acdc_seq_entry(Fold2 *F, TupleDesc desc, int attno, const char *name);

/* scd2_stored.c */
extern Bitmapset *acdc_inherit_mask(Fold2 *F, Datum arr, bool isnull, Bitmapset *ours, bool *same);
extern void acdc_read_keys(Fold2 *F);
extern void acdc_check_stored(Fold2 *F);
extern uint64 acdc_read_modes(Fold2 *F);
extern void acdc_read_stored(Fold2 *F, uint64 nloose, Ev **inp, uint64 *ninp,
						Version **old, uint64 *nold);

/* scd2_write.c */
extern void acdc_write_new_events(Fold2 *F, FlowCounts *counts);
extern void acdc_write_all(Fold2 *F, Ev *inp, uint64 ninp, Version *old, uint64 nold,
					  Version *nv, uint64 nnew, FlowCounts *counts);
/*
 * sql (an UPDATE setting column, or with column NULL a DELETE) on the
 * stored rows r names: by keys and start where the fold names them so,
 * else by tid, straight in the table where it can (direct_update.h).
 */
extern void acdc_write_stored(Fold2 *F, BatchRelation *r, const char *column, const char *sql);

/* scd2_fold.c: one key's events (sorted) into versions, appended to out */
extern void acdc_fold_key(Fold2 *F, Ev *ev, uint64 n, Version *out, uint64 *nout);

/* bitemp_fold.c: the bitemporal fold over SCD 2's chunks and store */
extern void acdc_bt_setup(Fold2 *F);
extern void acdc_bt_fold_write(Fold2 *F, Ev *inp, uint64 ninp, FlowCounts *counts);

#endif							/* AUTOCDC_SCD2_FOLD_H */
