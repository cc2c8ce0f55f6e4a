/*-------------------------------------------------------------------------
 * scd1_batch.c
 *	  The SCD type 1 batch fold in C (see scd1_batch.h).
 *
 * The SQL fold sorts every event of a run by key and sequence, hashes every
 * (key, sequence) pair once more for the conflict check and joins every
 * event to the state twice; at a million events that is most of a run.
 * Here one pass over the events keeps, per key in a hash table, the latest
 * upsert (its row) and the latest delete, and marks the events that came
 * late (not above every sequence their key had): only those are sorted, to
 * find two events at one sequence.  Then one read each of the keys' state
 * and target rows, and the writes (scd1_write.c).
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
#include "scd1_batch_int.h"
#include "validate.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/datum.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"

/* The relation of the batch's keys: (__autocdc_id, keys). */
#define KEYS_RELATION "__autocdc_keys"
/* The target rows of keys whose applied upsert is read again: (row id, __autocdc_id). */
#define REPLAYS_RELATION "__autocdc_replays"

/*
 * The fold of one event into its key's entry.  Every event's row was kept;
 * the winner's is referenced, the others are garbage (batch.c compacts).
 */
static void
scd1_on_event(Batch *b, KeyFold *fold, BatchEvent *ev, MinimalTuple row)
{
	/* the event against the key's latest upsert and delete so far (1: none yet) */
	int			vs_bu = fold->has_bu ? batch_seq_cmp(b, ev->seq, fold->bu) : 1;
	int			vs_bd = fold->has_bd ? batch_seq_cmp(b, ev->seq, fold->bd) : 1;

	ev->late = vs_bu <= 0 || vs_bd <= 0;
	if (ev->kind == 'u' && vs_bu > 0)
	{
		fold->bu = ev->seq;
		fold->has_bu = true;
		fold->winner = row;
		b->live_row_bytes += row->t_len - (Size) fold->winner_len;
		fold->winner_len = row->t_len;
	}
	else if (ev->kind == 'd' && vs_bd > 0)
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

static inline bool
events_differ(const BatchEvent *a, const BatchEvent *c)
{
	return a->kind != c->kind || a->values_hash != c->values_hash;
}

/*
 * Two different events at one key and sequence in the batch?  Of two such
 * events the one read later is late (its key had that sequence already),
 * so only late events need a partner: they are grouped by key (a counting
 * sort) and ordered by sequence, then compared with each other and with
 * every other event of their key.
 */
static bool
batch_has_conflict(Batch *b)
{
	uint64		nlate = 0;
	uint32	   *first;			/* by key number: its late events' start */
	uint32	   *fill;
	BatchEvent *late;

	first = palloc0(sizeof(uint32) * ((Size) b->nkeysets + 1));
	for (uint64 i = 0; i < b->nevents; i++)
		if (b->events[i].late)
		{
			first[b->events[i].id + 1]++;
			nlate++;
		}
	if (nlate == 0)
		return false;
	for (uint32 k = 0; k < b->nkeysets; k++)
		first[k + 1] += first[k];
	fill = palloc(sizeof(uint32) * Max(b->nkeysets, 1));
	memcpy(fill, first, sizeof(uint32) * b->nkeysets);
	late = palloc_extended(sizeof(BatchEvent) * nlate, MCXT_ALLOC_HUGE);
	for (uint64 i = 0; i < b->nevents; i++)
		if (b->events[i].late)
			late[fill[b->events[i].id]++] = b->events[i];

	for (uint32 k = 0; k < b->nkeysets; k++)
	{
		uint32		n = first[k + 1] - first[k];

		if (n < 2)
			continue;
		sort_events(&late[first[k]], n, b);
		for (uint32 i = first[k] + 1; i < first[k + 1]; i++)
			if (batch_seq_cmp(b, late[i - 1].seq, late[i].seq) == 0 &&
				events_differ(&late[i - 1], &late[i]))
				return true;
	}

	for (uint64 i = 0; i < b->nevents; i++)
	{
		BatchEvent *ev = &b->events[i];
		uint32		lo,
					hi;

		if ((i & 0xFFFF) == 0)
			CHECK_FOR_INTERRUPTS();
		if (ev->late)
			continue;
		/* the first of the key's late events at or above ev's sequence */
		lo = first[ev->id];
		hi = first[ev->id + 1];
		while (lo < hi)
		{
			uint32		mid = lo + (hi - lo) / 2;

			if (batch_seq_cmp(b, late[mid].seq, ev->seq) < 0)
				lo = mid + 1;
			else
				hi = mid;
		}
		for (; lo < first[ev->id + 1] && batch_seq_cmp(b, late[lo].seq, ev->seq) == 0; lo++)
			if (events_differ(&late[lo], ev))
				return true;
	}
	pfree(late);
	pfree(fill);
	pfree(first);
	return false;
}

/*
 * Reads into "applied" the state of the batch's keys and where the target
 * holds their rows (and the row's values where an event may repeat the
 * applied upsert); then the checks against what earlier runs applied, and
 * the count of late or replayed events.  Returns false when an event
 * disagrees with the applied one.
 */
static bool
batch_check_applied(Batch *b, KeyApplied *applied, bool has_mark, Datum mark,
					int64 *skipped)
{
	FlowDef    *f = b->flow;
	StringInfoData sql;
	ListCell   *lc;
	int			ncols = b->evdesc->natts - b->kind_att - 1;
	Datum	   *values;
	bool	   *nulls;
	SPITupleTable *tt;
	uint32	   *cands;			/* keys whose applied upsert is read again */
	int			ncands = 0;
	int16		seqlen;
	bool		seqbyval;

	/* inner joins: against an empty table, the batch's keys are not even read */
	initStringInfo(&sql);
	appendStringInfo(&sql, "SELECT p.__autocdc_id, st.__autocdc_upsert_seq, st.__autocdc_delete_seq, "
					 "st.__autocdc_deleted_at, st.ctid, st.tableoid FROM %s p JOIN %s st ON ",
					 KEYS_RELATION, rel_qualified_name(f->state));
	append_keys_match(&sql, f, "p", "st");
	spi_exec(sql.data, 0, NULL, NULL, NULL, false);
	tt = SPI_tuptable;
	get_typlenbyval(f->seq_type, &seqlen, &seqbyval);
	for (uint64 r = 0; r < SPI_processed; r++)
	{
		HeapTuple	tup = tt->vals[r];
		bool		isnull;
		KeyApplied *fold = &applied[DatumGetInt32(heap_getattr(tup, 1, tt->tupdesc, &isnull))];

		fold->has_state = true;
		fold->old_ups = heap_getattr(tup, 2, tt->tupdesc, &isnull);
		fold->has_old_ups = !isnull;
		if (!isnull)
			fold->old_ups = datumCopy(fold->old_ups, seqbyval, seqlen);
		fold->old_del = heap_getattr(tup, 3, tt->tupdesc, &isnull);
		fold->has_old_del = !isnull;
		if (!isnull)
			fold->old_del = datumCopy(fold->old_del, seqbyval, seqlen);
		fold->dead_at = heap_getattr(tup, 4, tt->tupdesc, &isnull);
		fold->has_dead_at = !isnull;
		batch_get_row_id(tup, tt->tupdesc, 5, &fold->state_row);
	}
	SPI_freetuptable(tt);

	resetStringInfo(&sql);
	appendStringInfo(&sql, "SELECT p.__autocdc_id, t.ctid, t.tableoid FROM %s p JOIN %s t ON ",
					 KEYS_RELATION, rel_qualified_name(f->target));
	append_keys_match(&sql, f, "p", "t");
	spi_exec(sql.data, 0, NULL, NULL, NULL, false);
	tt = SPI_tuptable;
	for (uint64 r = 0; r < SPI_processed; r++)
	{
		HeapTuple	tup = tt->vals[r];
		bool		isnull;
		KeyApplied *fold = &applied[DatumGetInt32(heap_getattr(tup, 1, tt->tupdesc, &isnull))];

		fold->has_row = true;
		batch_get_row_id(tup, tt->tupdesc, 2, &fold->target_row);
	}
	SPI_freetuptable(tt);

	*skipped = 0;
	cands = palloc(sizeof(uint32) * Max(b->nkeysets, 1));
	for (uint64 i = 0; i < b->nevents; i++)
	{
		BatchEvent *ev = &b->events[i];
		KeyApplied *fold = &applied[ev->id];
		bool		under_mark = has_mark && batch_seq_cmp(b, ev->seq, mark) < 0;

		if ((i & 0xFFFF) == 0)
			CHECK_FOR_INTERRUPTS();

		if (under_mark)
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
			cands[ncands++] = ev->id;
		}
		if (under_mark)
			continue;			/* counted */
		if ((fold->has_old_ups && batch_seq_cmp(b, ev->seq, fold->old_ups) <= 0) ||
			(fold->has_old_del && batch_seq_cmp(b, ev->seq, fold->old_del) <= 0))
			(*skipped)++;
	}
	if (ncands == 0)
		return true;

	/* Replays of applied upserts: their values must be the target row's. */
	{
		TupleDesc	desc = batch_tid_desc(b, 1, false);
		BatchRelation replays;

		TupleDescInitEntry(desc, BATCH_ROW_ID_ATTS + 1, "__autocdc_id", INT4OID, -1, 0);
		batch_relation_begin(&replays, REPLAYS_RELATION, desc);
		for (int i = 0; i < ncands; i++)
		{
			KeyApplied *fold = &applied[cands[i]];
			Datum		row[BATCH_ROW_ID_ATTS + 1];
			bool		rownulls[BATCH_ROW_ID_ATTS + 1];

			if (!fold->has_row)
				continue;		/* nothing to compare with */
			batch_put_row_id(&fold->target_row, row, rownulls);
			row[BATCH_ROW_ID_ATTS] = Int32GetDatum((int32) cands[i]);
			rownulls[BATCH_ROW_ID_ATTS] = false;
			batch_relation_put(&replays, row, rownulls);
		}
		if (!batch_relation_register(&replays))
			return true;
		resetStringInfo(&sql);
		appendStringInfoString(&sql, "SELECT r.__autocdc_id");
		foreach(lc, f->columns)
			appendStringInfo(&sql, ", t.%s", quote_identifier(lfirst(lc)));
		appendStringInfo(&sql, " FROM %s r JOIN %s t ON %s", REPLAYS_RELATION,
						 rel_qualified_name(f->target), batch_row_id_match(f, false, "t", "r"));
		spi_exec_by_tid(sql.data);
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
		{
			SPI_freetuptable(tt);
			return false;
		}
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
	bool		has_mark = p->truncate_seq != NULL;
	Datum		mark = (Datum) 0;
	KeyApplied *applied;		/* by key number */
	uint32	   *order;

	b->compact_rows = true;	/* the winners' rows are all it keeps */
	if (!batch_read(b, p, events_sql))
		return false;
	/* what the checks allocate goes with the batch (batch_release) */
	old = MemoryContextSwitchTo(b->cxt);
	batch_index_keys(b);
	ok = !batch_has_conflict(b);
	if (ok)
	{
		if (has_mark)
		{
			Oid			in,
						ioparam;

			getTypeInputInfo(f->seq_type, &in, &ioparam);
			mark = OidInputFunctionCall(in, p->truncate_seq, ioparam, -1);
		}
		counts->read = b->nevents;
		order = batch_key_order(b);
		batch_register_keys(b, KEYS_RELATION, "__autocdc_id", order);
		applied = palloc0(sizeof(KeyApplied) * Max(b->nkeysets, 1));
		ok = batch_check_applied(b, applied, has_mark, mark, &counts->skipped);
		if (ok)
			scd1_batch_write(b, applied, order, has_mark, mark, counts);
	}
	MemoryContextSwitchTo(old);
	return ok;
}
