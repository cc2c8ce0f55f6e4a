/*-------------------------------------------------------------------------
 * scd1_batch.c
 *	  The SCD type 1 batch fold in C (see scd1_batch.h).
 *
 * The SQL fold sorts every event of a run by key and sequence, hashes every
 * (key, sequence) pair once more for the conflict check and joins every
 * event to the state twice; at a million events that is most of a run.
 * Here one pass over the events keeps, per key in a hash table, the latest
 * upsert (its row), the latest delete, and whether the key's events came in
 * ascending sequence: only the events of keys that did not are sorted, to
 * find two events at one sequence.  The result, one row per key, is what
 * the SQL fold's "per" step computes, so the apply that follows is shared.
 *
 * Two events at one key and sequence are told apart by a 64-bit hash of
 * their binary values: a difference always shows; an equal hash of
 * different values (odds 2^-64 per such pair) would take them as one event.
 * Whatever looks wrong here (a NULL key or sequence, a conflict, even a
 * value equal by its type's "=" but not in binary) is left to the SQL fold,
 * which checks exactly and names the event.
 *-------------------------------------------------------------------------
 */
#include "scd1_batch.h"
#include "batch.h"
#include "validate.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"

/* Per key, what earlier runs applied (read after the pass). */
typedef struct KeyApplied
{
	bool		has_state;
	bool		has_old_ups;
	bool		has_old_del;
	bool		replayed;		/* an event repeats the applied upsert */
	Datum		old_ups;
	Datum		old_del;
	uint64		replay_hash;	/* that event's values_hash */
} KeyApplied;

/*
 * Keeps the slot's row as the key's winner, in the winner's memory when it
 * fits: a pfree and palloc per upsert would cost more cache misses.
 */
static void
batch_keep_winner(Batch *b, KeyFold *fold, TupleTableSlot *slot)
{
	MemoryContext old = MemoryContextSwitchTo(b->row_cxt);
	MinimalTuple tup = ExecCopySlotMinimalTuple(slot);

	MemoryContextSwitchTo(b->cxt);
	if (fold->winner == NULL || tup->t_len > fold->winner->t_len)
	{
		if (fold->winner)
			pfree(fold->winner);
		fold->winner = palloc(tup->t_len);
	}
	memcpy(fold->winner, tup, tup->t_len);
	MemoryContextSwitchTo(old);
}

/* The fold of one event into its key's entry. */
static void
scd1_on_event(Batch *b, KeyFold *fold, BatchEvent *ev, TupleTableSlot *slot)
{
	if ((fold->has_bu || fold->has_bd) && batch_seq_cmp(b, ev->seq, fold->last) <= 0)
		fold->disordered = true;
	fold->last = ev->seq;
	if (ev->kind == 'u')
	{
		if (!fold->has_bu || batch_seq_cmp(b, ev->seq, fold->bu) > 0)
		{
			fold->bu = ev->seq;
			fold->has_bu = true;
			batch_keep_winner(b, fold, slot);
		}
	}
	else if (!fold->has_bd || batch_seq_cmp(b, ev->seq, fold->bd) > 0)
	{
		fold->bd = ev->seq;
		fold->has_bd = true;
	}
}

static inline int
event_cmp(const BatchEvent *a, const BatchEvent *c, Batch *b)
{
	if (a->id != c->id)
		return a->id < c->id ? -1 : 1;
	return batch_seq_cmp(b, a->seq, c->seq);
}

/* sort_events(): qsort with event_cmp inlined */
#define ST_SORT sort_events
#define ST_ELEMENT_TYPE BatchEvent
#define ST_COMPARE(a, c, arg) event_cmp(a, c, arg)
#define ST_COMPARE_ARG_TYPE Batch
#define ST_SCOPE static
#define ST_DEFINE
#include "lib/sort_template.h"

/*
 * Two different events at one key and sequence in the batch?  Only keys
 * read out of ascending order can have two.
 */
static bool
batch_has_conflict(Batch *b)
{
	BatchEvent *sorted;
	uint64		n = 0;
	uint8	   *disordered = palloc0((b->nkeysets + 7) / 8);	/* fits in cache */

	for (uint32 id = 0; id < b->nkeysets; id++)
		if (b->keys[id]->disordered)
			disordered[id / 8] |= 1 << (id % 8);
#define IS_DISORDERED(id) (disordered[(id) / 8] & (1 << ((id) % 8)))
	for (uint64 i = 0; i < b->nevents; i++)
	{
		if ((i & 0xFFFF) == 0)
			CHECK_FOR_INTERRUPTS();
		if (IS_DISORDERED(b->events[i].id))
			n++;
	}
	if (n < 2)
		return false;
	sorted = palloc_extended(sizeof(BatchEvent) * n, MCXT_ALLOC_HUGE);
	n = 0;
	for (uint64 i = 0; i < b->nevents; i++)
		if (IS_DISORDERED(b->events[i].id))
			sorted[n++] = b->events[i];
#undef IS_DISORDERED
	sort_events(sorted, n, b);
	for (uint64 i = 1; i < n; i++)
		if (event_cmp(&sorted[i - 1], &sorted[i], b) == 0 &&
			(sorted[i - 1].kind != sorted[i].kind ||
			 sorted[i - 1].values_hash != sorted[i].values_hash))
			return true;
	pfree(sorted);
	pfree(disordered);
	return false;
}

/* The per-key relation: (__autocdc_id, keys, __autocdc_bu, __autocdc_bd, columns). */
static void
batch_register_per(Batch *b)
{
	int			ncols = b->evdesc->natts - b->kind_att - 1;
	int			natts = 1 + b->nkeys + 2 + ncols;
	TupleDesc	desc = CreateTemplateTupleDesc(natts);
	Tuplestorestate *store;
	TupleTableSlot *wslot;
	Datum	   *values = palloc(sizeof(Datum) * natts);
	bool	   *nulls = palloc(sizeof(bool) * natts);
	int			a = 1;
	uint32	   *order;

	TupleDescInitEntry(desc, a++, "__autocdc_id", INT4OID, -1, 0);
	for (int i = 0; i < b->evdesc->natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(b->evdesc, i);

		if (i == b->kind_att)
			continue;
		if (i == b->seq_att)
		{
			TupleDescInitEntry(desc, a++, "__autocdc_bu", att->atttypid, att->atttypmod, 0);
			TupleDescInitEntry(desc, a++, "__autocdc_bd", att->atttypid, att->atttypmod, 0);
			continue;
		}
		TupleDescInitEntry(desc, a, NameStr(att->attname), att->atttypid, att->atttypmod, 0);
		TupleDescInitEntryCollation(desc, a++, att->attcollation);
	}

	store = tuplestore_begin_heap(false, false, BATCH_STORE_KB);
	wslot = MakeSingleTupleTableSlot(b->evdesc, &TTSOpsMinimalTuple);
	order = batch_key_order(b);
	for (uint32 n = 0; n < b->nkeysets; n++)
	{
		uint32		id = order[n];
		KeyFold    *fold = b->keys[id];

		values[0] = Int32GetDatum((int32) id);
		nulls[0] = false;
		for (int i = 0; i < b->nkeys; i++)
		{
			values[1 + i] = b->plain_key ? fold->key0 : b->keyvals[(Size) id * b->nkeys + i];
			nulls[1 + i] = false;
		}
		a = 1 + b->nkeys;
		values[a] = fold->bu;
		nulls[a++] = !fold->has_bu;
		values[a] = fold->bd;
		nulls[a++] = !fold->has_bd;
		if (fold->winner)
		{
			ExecStoreMinimalTuple(fold->winner, wslot, false);
			slot_getallattrs(wslot);
			/* the key as the winner spells it (numeric 1.0 = 1.00), as SQL's DISTINCT ON keeps it */
			for (int i = 0; i < b->nkeys; i++)
				values[1 + i] = wslot->tts_values[i];
			for (int i = 0; i < ncols; i++)
			{
				values[a + i] = wslot->tts_values[b->kind_att + 1 + i];
				nulls[a + i] = wslot->tts_isnull[b->kind_att + 1 + i];
			}
		}
		else
			for (int i = 0; i < ncols; i++)
				nulls[a + i] = true;
		tuplestore_putvalues(store, desc, values, nulls);
		ExecClearTuple(wslot);
	}
	ExecDropSingleTupleTableSlot(wslot);

	batch_register(SCD1_BATCH_RELATION, desc, store, b->nkeysets);
}

/*
 * Reads the state of the batch's keys (and the target row where an event
 * may repeat the applied upsert); then the checks against what earlier runs
 * applied, and the count of late or replayed events.  Returns false when an
 * event disagrees with the applied one.
 */
static bool
batch_check_applied(Batch *b, ReadParams *p, int64 *skipped)
{
	FlowDef    *f = b->flow;
	StringInfoData sql;
	ListCell   *lc;
	Datum		mark = (Datum) 0;
	bool		has_mark = p->truncate_seq != NULL;
	int			ncols = b->evdesc->natts - b->kind_att - 1;
	Datum	   *values;
	bool	   *nulls;
	SPITupleTable *tt;
	Datum	   *cands;
	int			ncands = 0;
	KeyApplied *applied;		/* by key number */

	initStringInfo(&sql);
	appendStringInfo(&sql, "SELECT p.__autocdc_id, st.__autocdc_upsert_seq, st.__autocdc_delete_seq "
					 "FROM %s p JOIN %s st ON ", SCD1_BATCH_RELATION, rel_qualified_name(f->state));
	append_keys_match(&sql, f, "p", "st");
	spi_exec(sql.data, 0, NULL, NULL, NULL, false);
	tt = SPI_tuptable;

	applied = palloc0(sizeof(KeyApplied) * Max(b->nkeysets, 1));
	for (uint64 r = 0; r < SPI_processed; r++)
	{
		HeapTuple	tup = tt->vals[r];
		bool		isnull;
		KeyApplied *fold = &applied[DatumGetInt32(heap_getattr(tup, 1, tt->tupdesc, &isnull))];

		fold->has_state = true;
		fold->old_ups = heap_getattr(tup, 2, tt->tupdesc, &isnull);
		fold->has_old_ups = !isnull;
		fold->old_del = heap_getattr(tup, 3, tt->tupdesc, &isnull);
		fold->has_old_del = !isnull;
	}

	if (has_mark)
	{
		Oid			in,
					ioparam;

		getTypeInputInfo(f->seq_type, &in, &ioparam);
		mark = OidInputFunctionCall(in, p->truncate_seq, ioparam, -1);
	}

	*skipped = 0;
	cands = palloc(sizeof(Datum) * Max(b->nkeysets, 1));
	for (uint64 i = 0; i < b->nevents; i++)
	{
		BatchEvent *ev = &b->events[i];
		KeyApplied *fold = &applied[ev->id];

		if ((i & 0xFFFF) == 0)
			CHECK_FOR_INTERRUPTS();

		if (has_mark && batch_seq_cmp(b, ev->seq, mark) < 0)
			(*skipped)++;
		if (!fold->has_state)
			continue;
		if (ev->kind == 'u' && fold->has_old_del && batch_seq_cmp(b, ev->seq, fold->old_del) == 0)
			return false;
		if (ev->kind == 'd' && fold->has_old_ups && batch_seq_cmp(b, ev->seq, fold->old_ups) == 0)
			return false;
		/* the applied upsert again: compared with the target row below */
		if (ev->kind == 'u' && fold->has_old_ups && !fold->replayed &&
			batch_seq_cmp(b, ev->seq, fold->old_ups) == 0)
		{
			fold->replayed = true;
			fold->replay_hash = ev->values_hash;
			cands[ncands++] = Int32GetDatum((int32) ev->id);
		}
		if (has_mark && batch_seq_cmp(b, ev->seq, mark) < 0)
			continue;			/* counted */
		if ((fold->has_old_ups && batch_seq_cmp(b, ev->seq, fold->old_ups) <= 0) ||
			(fold->has_old_del && batch_seq_cmp(b, ev->seq, fold->old_del) <= 0))
			(*skipped)++;
	}
	SPI_freetuptable(tt);
	if (ncands == 0)
		return true;

	/* Replays of applied upserts: their values must be the target row's. */
	{
		Oid			argtypes[1] = {INT4ARRAYOID};
		Datum		arg[1] = {PointerGetDatum(construct_array(cands, ncands, INT4OID, 4, true, TYPALIGN_INT))};

		resetStringInfo(&sql);
		appendStringInfoString(&sql, "SELECT p.__autocdc_id");
		foreach(lc, f->columns)
			appendStringInfo(&sql, ", t.%s", quote_identifier(lfirst(lc)));
		appendStringInfo(&sql, " FROM %s p JOIN %s t ON ", SCD1_BATCH_RELATION,
						 rel_qualified_name(f->target));
		append_keys_match(&sql, f, "p", "t");
		appendStringInfoString(&sql, " WHERE p.__autocdc_id OPERATOR(pg_catalog.=) ANY ($1)");
		spi_exec(sql.data, 1, argtypes, arg, NULL, false);
	}
	tt = SPI_tuptable;
	values = palloc(sizeof(Datum) * (ncols + 1));
	nulls = palloc(sizeof(bool) * (ncols + 1));
	for (uint64 r = 0; r < SPI_processed; r++)
	{
		HeapTuple	tup = tt->vals[r];
		KeyApplied *fold;

		heap_deform_tuple(tup, tt->tupdesc, values, nulls);
		fold = &applied[DatumGetInt32(values[0])];
		if (batch_values_hash(tt->tupdesc, 1, values, nulls) != fold->replay_hash)
			return false;
	}
	SPI_freetuptable(tt);
	return true;
}

/* The types and flows the C fold handles like the SQL fold. */
bool
scd1_batch_eligible(FlowDef *f, ReadParams *p)
{
	return f->state_partial == NIL && batch_may_fold(f, p);
}

bool
scd1_batch_fold(FlowDef *f, ReadParams *p, const char *events_sql,
				FlowCounts *counts)
{
	Batch	   *b = batch_begin(f, scd1_on_event, NULL);
	MemoryContext old;
	bool		ok;

	if (!batch_read(b, p, events_sql))
		return false;
	/* what the checks allocate goes with the batch (batch_release) */
	old = MemoryContextSwitchTo(b->cxt);
	batch_index_keys(b);
	ok = !batch_has_conflict(b);
	if (ok)
	{
		counts->read = b->nevents;
		batch_register_per(b);
		ok = batch_check_applied(b, p, &counts->skipped);
	}
	MemoryContextSwitchTo(old);
	return ok;
}
