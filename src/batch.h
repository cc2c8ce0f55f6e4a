/*-------------------------------------------------------------------------
 * batch.h
 *	  A run's events read in C, in one pass: each event numbered by its key
 *	  through a hash table, its sequence and a hash of its values kept; the
 *	  folds (scd1_batch.c, scd2_batch.c) add what they need per event
 *	  (batch.c).  Also the ephemeral relations through which they hand
 *	  results to SQL (batch_relation.c).
 *-------------------------------------------------------------------------
 */
#ifndef AUTOCDC_BATCH_H
#define AUTOCDC_BATCH_H

#include "flow.h"
#include "source_read.h"

#include "executor/tuptable.h"
#include "fmgr.h"
#include "storage/itemptr.h"
#include "utils/sortsupport.h"
#include "utils/tuplestore.h"

/* Developer setting autocdc.batch_fold (autocdc.c). */
extern bool autocdc_batch_fold;

/*
 * Memory for the relations handed to SQL, rather than work_mem: they are
 * derived from a batch held in memory anyway (BATCH_MEMORY_BYTES), and a
 * spilled relation is written and read once more for nothing.
 */
#define BATCH_STORE_KB (512 * 1024)

/* What a C fold may hold while it reads; a larger batch is the SQL fold's. */
#define BATCH_MEMORY_BYTES ((Size) 768 * 1024 * 1024)

/* One event as the checks need it after the pass. */
typedef struct BatchEvent
{
	uint32		id;				/* the key's number */
	char		kind;			/* 'u' or 'd' */
	bool		late;			/* SCD 1: not above every sequence its key had */
	uint64		values_hash;	/* upserts: hash of the binary values */
	Datum		seq;
} BatchEvent;

/*
 * Per key, in the hash table's entry so that one cache miss reaches it (at
 * a million events over 100k keys, misses are most of the pass).  Entries
 * move while the table grows; events name their key by number, and after
 * the pass "keys" maps numbers to entries.  The fold fields are SCD 1's.
 */
typedef struct KeyFold
{
	uint32		hash;
	char		status;
	bool		has_bu;
	bool		has_bd;
	uint32		id;				/* the key's number */
	uint32		winner_len;		/* winner's t_len, not to read the row for it */
	Datum		key0;			/* first key column */
	Datum		bu;				/* latest upsert's sequence */
	Datum		bd;				/* latest delete's sequence */
	MinimalTuple winner;		/* the latest upsert's event row (in "rows") */
} KeyFold;

/*
 * Rows the folds keep, formed straight into large chunks: a palloc and a
 * copy per event cost more than the rest of the fold's work on it, and
 * with a key's rows scattered over the heap every kept row was a cache
 * miss.  Chunks are handed out in order; a compaction (SCD 1) moves the
 * rows still wanted to fresh chunks and keeps the old ones for reuse.
 */
typedef struct RowChunk RowChunk;
typedef struct RowArena
{
	char	   *pos;			/* free space of the current chunk */
	char	   *end;
	RowChunk   *chunks;			/* in use, newest first */
	RowChunk   *spare;			/* emptied by a compaction, for reuse */
	Size		used;			/* bytes handed out since the last compaction */
} RowArena;

typedef struct Batch Batch;

/*
 * Called for every event read, in the order read, after it was numbered
 * and recorded; "row" is the event's row, kept in the batch's arena.
 */
typedef void (*BatchEventHook) (Batch *b, KeyFold *key, BatchEvent *ev,
								MinimalTuple row);

/*
 * An event read but not yet numbered: its key's bucket is being fetched
 * into cache meanwhile (at 100k keys and more nearly every lookup misses).
 */
typedef struct PendingEvent
{
	uint64		event;			/* index in "events" */
	MinimalTuple row;
	Datum		key0;			/* plain_key */
	uint32		hash;
} PendingEvent;

#define BATCH_PREFETCH_DISTANCE 8	/* measured: 2 to 16 do about as well */

struct Batch
{
	MemoryContext cxt;
	MemoryContext row_cxt;		/* reset per event */
	FlowDef    *flow;
	TupleDesc	evdesc;			/* keys, __autocdc_seq, __autocdc_kind, columns */
	int			nkeys;
	int			seq_att;
	int			kind_att;
	bool		plain_key;		/* one integer-like key: its Datum is its identity */
	bool		plain_seq;		/* an integer-like sequence: its Datum orders it */
	FmgrInfo   *key_hash_fn;
	FmgrInfo   *key_eq_fn;
	Oid		   *key_coll;
	SortSupportData seq_sort;

	struct keytab_hash *tab;
	Datum	   *probe;			/* the key being looked up */
	uint32		probe_hash;
	Datum	   *keyvals;		/* nkeys values per key number (not plain_key) */
	uint32		nkeysets;
	uint32		maxkeysets;
	KeyFold   **keys;			/* by key number, after batch_index_keys */
	BatchEvent *events;
	uint64		nevents;
	uint64		maxevents;
	RowArena	rows;
	bool		compact_rows;	/* only the winners' rows are wanted (SCD 1) */
	Size		live_row_bytes; /* SCD 1: the winners' bytes, of rows.used */
	PendingEvent pending[BATCH_PREFETCH_DISTANCE];	/* a ring */
	int			npending;
	int			next_pending;	/* the oldest */
	TupleTableSlot *key_slot;	/* a pending row's keys (not plain_key) */
	BatchEventHook on_event;
	void	   *on_event_arg;	/* the fold's own state, for on_event */
	bool		refused;		/* the SQL fold must take this batch */
};

static inline int
batch_seq_cmp(Batch *b, Datum x, Datum y)
{
	/* an integer-like sequence compares as its Datum, without a call */
	if (b->plain_seq)
		return (int64) x < (int64) y ? -1 : (int64) x > (int64) y;
	return ApplySortComparator(x, false, y, false, &b->seq_sort);
}

/*
 * Whether a C fold may take the flow's run: the setting is on, the events
 * come from the source, the sequence orders without a collation.  Keys are
 * checked when the read starts, on the events' own types (batch_startup).
 */
extern bool batch_may_fold(FlowDef *flow, ReadParams *params);
extern Batch *batch_begin(FlowDef *flow, BatchEventHook on_event, void *arg);
extern bool batch_read(Batch *b, ReadParams *params, const char *events_sql);
extern void batch_index_keys(Batch *b);
extern Datum batch_key_value(Batch *b, uint32 id, int i);
extern uint32 *batch_key_order(Batch *b);
extern uint64 batch_values_hash(TupleDesc desc, int first, Datum *values,
								bool *isnull);
extern void batch_release(void);
extern void batch_unregister_relations(void);	/* batch_release's */

/*
 * A relation for SQL built row by row: begun on a descriptor, filled, then
 * registered for SPI under its name until batch_release.
 */
typedef struct BatchRelation
{
	const char *name;
	TupleDesc	desc;
	Tuplestorestate *store;
	uint64		n;
} BatchRelation;

extern void batch_relation_begin(BatchRelation *r, const char *name, TupleDesc desc);
extern void batch_relation_put(BatchRelation *r, Datum *values, bool *nulls);
extern bool batch_relation_register(BatchRelation *r);	/* false when empty */

/* Descriptors: (idname int4, keys as the events have them, "extra" more) */
extern TupleDesc batch_keyed_desc(Batch *b, const char *idname, int extra);

/*
 * A stored row: its tid in the table that holds it.  A tid alone repeats
 * across the partitions of a partitioned target, so rows are named by
 * (tableoid, ctid); the table's oid is read with the tid ("x.ctid,
 * x.tableoid") and goes to SQL with it.
 */
typedef struct BatchRowId
{
	ItemPointerData tid;
	Oid			rel;
} BatchRowId;

/* The row id read from columns attno (ctid) and attno + 1 (tableoid). */
extern void batch_get_row_id(HeapTuple tup, TupleDesc desc, int attno, BatchRowId *id);

/*
 * Whether stored rows of the flow's target go to SQL with their keys (and
 * the column "also", when not NULL) too: on a partitioned target whose
 * partition keys are of those columns only.
 */
extern bool batch_rows_by_keys(FlowDef *flow, const char *also);

/*
 * (__autocdc_tid, __autocdc_rel, "extra" more from attribute
 * BATCH_ROW_ID_ATTS + 1, then the keys as the events have them when "keys")
 */
#define BATCH_ROW_ID_ATTS 2
extern TupleDesc batch_tid_desc(Batch *b, int extra, bool keys);
/* values[0..1] := the row id */
extern void batch_put_row_id(const BatchRowId *id, Datum *values, bool *nulls);
/* values[at..] := the keys */
extern void batch_put_row_keys(Batch *b, int at, Datum *keys, Datum *values, bool *nulls);
/* "t.ctid = u.__autocdc_tid AND t.tableoid = u.__autocdc_rel[ AND <keys equal>]" */
extern char *batch_row_id_match(FlowDef *flow, bool keys, const char *t, const char *u);

/* attribute attno as "name" of the sequence's type */
extern void batch_seq_entry(Batch *b, TupleDesc desc, int attno, const char *name);

/*
 * values[0] := key number id, values[1..nkeys] := its key, as "keys" spells
 * it when given (equal keys may differ in binary: numeric 1.0 and 1.00).
 */
extern void batch_put_key(Batch *b, uint32 id, Datum *keys, Datum *values,
						  bool *nulls);
extern void batch_register_keys(Batch *b, const char *name, const char *idname,
								uint32 *order);

#endif							/* AUTOCDC_BATCH_H */
