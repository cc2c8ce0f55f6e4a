/*-------------------------------------------------------------------------
 * events.h
 *	  A run's events in key order: read once from their statement, grouped
 *	  by key in memory or, past half of maintenance_work_mem, into a
 *	  tuplesort by key and sequence (spilling past work_mem), checked for
 *	  bad input, numbered by key, then handed to a fold key by key
 *	  (doc/design.md §2.13).
 *-------------------------------------------------------------------------
 */
#ifndef AUTOCDC_EVENTS_H
#define AUTOCDC_EVENTS_H

#include "flow.h"
#include "relation.h"
#include "source_read.h"

#include "executor/tuptable.h"
#include "utils/sortsupport.h"
#include "utils/tuplesort.h"

/* The relation of the batch's keys, (__autocdc_id int4, keys), in key order. */
#define EVENTS_KEYS_RELATION "__autocdc_keys"

typedef struct Events
{
	FlowDef    *flow;
	MemoryContext cxt;			/* everything here; freed by acdc_events_end */
	MemoryContext row_cxt;		/* reset after each row set aside */
	TupleDesc	desc;			/* keys, __autocdc_seq, __autocdc_kind, columns,
								 * with columns_to_update its booleans and name */
	int			nkeys;			/* keys are attributes 0 .. nkeys - 1 */
	int			seq_att;
	int			kind_att;
	int			first_col;		/* the flow's columns from here on */
	int			end_col;		/* ... up to here */
	int			set_att;		/* columns_to_update: per column, whether the event sets it; or -1 */
	int			unknown_att;	/* ... then the first unknown name it lists */
	int			row_att;		/* the source row (jsonb), kept for the quarantine; or -1 */
	int			in_row_att;		/* the read's source row, or -1 */
	int			in_xatt;		/* the read's first expectation result */
	TupleTableSlot *kept;		/* the read's row without its extra columns */
	struct TypmodCoercion *coerce;	/* values to their columns' typmods, or NULL */
	MemoryContext coerce_cxt;	/* ... reset for each row */
	bool		conflicts;		/* two different events at one key and sequence */
	AttrNumber *sort_atts;		/* how the sort sorts (events_startup) */
	Oid		   *sort_ops;
	Oid		   *sort_colls;
	bool	   *sort_nulls_first;
	SortSupportData *cmp;		/* nkeys + 1: keys, then the sequence */
	bool	   *composite;		/* nkeys + 1: of a composite type */
	Tuplesortstate *sort;		/* sorted events, or NULL while hashed */
	struct EventsHash *hash;	/* events grouped by key (events_hash.c), or NULL */
	int64		nread;			/* rows read, truncates included */
	int64		nsorted;		/* events in the sort: upserts and deletes */
	bool		in_memory;		/* sorted without spilling: tuples stay put */
	bool		has_truncate;
	Datum		truncate_seq;	/* the latest truncate read */
	uint32		nkeysets;		/* distinct keys */
	uint32	   *nevents;		/* by key number: its events */
	uint32		maxkeysets;
	Datum	   *keyrow;			/* room for a row of the keys' relation */
	bool	   *keyrow_nulls;
	TupleTableSlot *slot;		/* the event acdc_events_next returned */
	int64		returned;
} Events;

/*
 * Reads the run's events (events_sql, run with the read parameters) and
 * orders them; raises the flow's bad-input error for a NULL sequence, a
 * NULL key, or two different events at one key and sequence.  Then
 * registers EVENTS_KEYS_RELATION for SPI.  Truncates ('t') are kept as
 * truncate_seq only, and refused unless allow_truncate.
 */
extern Events *acdc_events_read(FlowDef *flow, ReadParams *params,
						   const char *events_sql, bool allow_truncate);

/*
 * The next event in key then sequence order, or NULL after the last; its
 * keys, sequence and kind are deformed (slot_getallattrs for the rest).
 * The slot's tuple is valid until the next call: acdc_events_keep keeps it.
 */
extern TupleTableSlot *acdc_events_next(Events *ev);
/*
 * At key id's first event: its latest upsert into u and latest delete into
 * d (the last of each that acdc_events_next would return; a slot without
 * one is cleared), its events passed over unread, kept until
 * acdc_events_end.
 * What a fold needs of a key that no earlier run applied and whose columns
 * all come from its last upsert.  False, with nothing done, when the events
 * were sorted instead of grouped in memory: read them with acdc_events_next.
 */
extern bool acdc_events_key_latest(Events *ev, uint32 id, TupleTableSlot *u, TupleTableSlot *d);
/*
 * Key id's events are the next acdc_events_next returns, so that a fold
 * can take the keys in any order.  False, with nothing done, when the
 * events were sorted: then the keys come in order of their numbers.
 */
extern bool acdc_events_seek(Events *ev, uint32 id);
/* dst := src's event, until acdc_events_end (without a copy when sorted in memory) */
extern void acdc_events_keep(Events *ev, TupleTableSlot *dst, TupleTableSlot *src);

/* Sequence order: <0, 0, >0. */
static inline int
events_seq_cmp(Events *ev, Datum a, Datum b)
{
	return ApplySortComparator(a, false, b, false, &ev->cmp[ev->nkeys]);
}

/* The event's kind: 'u' or 'd'. */
extern char acdc_events_kind(Events *ev, TupleTableSlot *slot);

/* Whether upsert slot sets the flow's column j (columns_to_update; else always). */
static inline bool
events_sets(Events *ev, TupleTableSlot *slot, int j)
{
	return ev->set_att < 0 || DatumGetBool(slot->tts_values[ev->set_att + j]);
}

/* Whether two events of one key and sequence are one event (kind and, for upserts, values). */
extern bool acdc_events_same(Events *ev, TupleTableSlot *a, TupleTableSlot *b);

/*
 * The bad-input error for an event of the flow: problem is "conflict"
 * (two events of the batch), "conflict_applied" (against an event an
 * earlier run applied) or "conflict_target" (against the row an earlier
 * run's upsert made); slot holds the event.
 */
extern void acdc_events_report_conflict(Events *ev, const char *problem,
								   TupleTableSlot *slot) pg_attribute_noreturn();

/* The same for an event given as its keys and sequence. */
extern void acdc_events_report(Events *ev, const char *problem, Datum *keys,
						  Datum seq) pg_attribute_noreturn();

/*
 * An event that conflicts with one an earlier run applied (of kind
 * applied_kind, 'u' or 'd', at its sequence): with on_bad_event => 'fail'
 * the bad-input error (problem as above), else the event is quarantined,
 * naming the applied one, and false is returned: the fold leaves it out.
 */
extern bool acdc_events_set_aside(Events *ev, const char *problem, TupleTableSlot *slot,
								  char applied_kind);
/* The same for an event given as its keys, sequence and source row. */
extern bool acdc_events_set_aside_values(Events *ev, const char *problem, Datum *keys,
										 Datum seq, Datum row, char applied_kind);

/*
 * Inside events*.c: grouping by key while the batch fits in memory.
 * begin: false when a key type has no hash function.  put: false when the
 * event would pass the bound (spill them to sort then).  order: key then
 * sequence order, numbering the keys, for next.
 */
extern bool acdc_events_hash_begin(Events *ev, Size bound);
extern bool acdc_events_hash_put(Events *ev, TupleTableSlot *slot);
extern void acdc_events_hash_spill(Events *ev, Tuplesortstate *sort);
extern void acdc_events_hash_order(Events *ev, BatchRelation *keys, TupleTableSlot *work);
extern bool acdc_events_hash_next(Events *ev, TupleTableSlot *slot);
/* After acdc_events_hash_order: the number of the key equal to keys, if any. */
extern bool acdc_events_hash_find_key(Events *ev, Datum *keys, uint32 *id);
/* The memory a batch's events may take in memory, in kB. */
extern Size acdc_events_bound_kb(void);
extern void acdc_events_hash_key_latest(Events *ev, uint32 id, TupleTableSlot *u,
										TupleTableSlot *d);
extern void acdc_events_hash_seek(Events *ev, uint32 id);
extern void acdc_events_new_key(Events *ev, BatchRelation *keys, Datum *keyvals, uint32 n);
extern void acdc_events_found_conflict(Events *ev, TupleTableSlot *slot);

/* Frees the batch and unregisters its relations. */
extern void acdc_events_end(Events *ev);

#endif							/* AUTOCDC_EVENTS_H */
