/*-------------------------------------------------------------------------
 * scd1_write.c
 *	  The writes of the SCD type 1 C fold: per key, the batch's latest
 *	  upsert and delete and what earlier runs applied give the key's new
 *	  state and the change to its target row, as the SQL fold's apply
 *	  (scd1.c) computes them for flows without partial columns.
 *
 * Each kind of change goes to SQL as a relation of its rows, one statement
 * each, and rows already stored are named by tid: a run of new keys pays
 * for its inserts and nothing else, where the SQL fold's one statement
 * joins every key to state and target and scans the result five times.
 *-------------------------------------------------------------------------
 */
#include "scd1_batch_int.h"
#include "validate.h"

#include "access/xact.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/timestamp.h"

/* One relation of changes being built. */
typedef struct Change
{
	const char *name;
	TupleDesc	desc;
	Tuplestorestate *store;
	uint64		n;
} Change;

static void
change_begin(Change *ch, const char *name, int natts)
{
	ch->name = name;
	ch->desc = CreateTemplateTupleDesc(natts);
	ch->store = tuplestore_begin_heap(false, false, BATCH_STORE_KB);
	ch->n = 0;
}

static void
change_put(Change *ch, Datum *values, bool *nulls)
{
	tuplestore_putvalues(ch->store, ch->desc, values, nulls);
	ch->n++;
}

/* Registers the relation for the statement that applies it; false when empty. */
static bool
change_register(Change *ch)
{
	if (ch->n == 0)
		return false;
	batch_register(ch->name, ch->desc, ch->store, ch->n);
	return true;
}

void
scd1_key_entries(Batch *b, TupleDesc desc, int first)
{
	for (int i = 0; i < b->nkeys; i++)
	{
		Form_pg_attribute att = TupleDescAttr(b->evdesc, i);

		TupleDescInitEntry(desc, first + i, NameStr(att->attname), att->atttypid, att->atttypmod, 0);
		TupleDescInitEntryCollation(desc, first + i, att->attcollation);
	}
}

/* The flow's columns, as the events have them after __autocdc_kind. */
static void
column_entries(Batch *b, TupleDesc desc, int first)
{
	for (int i = b->kind_att + 1; i < b->evdesc->natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(b->evdesc, i);
		int			a = first + i - b->kind_att - 1;

		TupleDescInitEntry(desc, a, NameStr(att->attname), att->atttypid, att->atttypmod, 0);
		TupleDescInitEntryCollation(desc, a, att->attcollation);
	}
}

/* The state's two sequences and when the key died. */
static void
state_entries(Batch *b, TupleDesc desc, int first)
{
	Form_pg_attribute seq = TupleDescAttr(b->evdesc, b->seq_att);

	TupleDescInitEntry(desc, first, "__autocdc_upsert_seq", seq->atttypid, seq->atttypmod, 0);
	TupleDescInitEntry(desc, first + 1, "__autocdc_delete_seq", seq->atttypid, seq->atttypmod, 0);
	TupleDescInitEntry(desc, first + 2, "__autocdc_deleted_at", TIMESTAMPTZOID, -1, 0);
}

/* Both absent, or both there and equal. */
static inline bool
same_seq(Batch *b, bool has_x, Datum x, bool has_y, Datum y)
{
	return has_x == has_y && (!has_x || batch_seq_cmp(b, x, y) == 0);
}

/* The later of two sequences either of which may be absent; false if both are. */
static inline bool
later_seq(Batch *b, bool has_x, Datum x, bool has_y, Datum y, Datum *later)
{
	if (!has_x && !has_y)
		return false;
	*later = !has_y || (has_x && batch_seq_cmp(b, x, y) >= 0) ? x : y;
	return true;
}

/* A change's first columns: the stored row's tid, or a new row's keys. */
static int
put_row_id(Datum *values, bool stored, ItemPointer tid, Datum *keys, int nk)
{
	if (stored)
	{
		values[0] = PointerGetDatum(tid);
		return 1;
	}
	for (int i = 0; i < nk; i++)
		values[i] = keys[i];
	return nk;
}

/* "t.c = u.c, ..." or " AND <t.c = u.c, NULLs equal> ..." over the flow's columns. */
static void
append_columns(StringInfo sql, Batch *b, bool compare)
{
	for (int i = b->kind_att + 1; i < b->evdesc->natts; i++)
	{
		const char *name = NameStr(TupleDescAttr(b->evdesc, i)->attname);
		const char *col = quote_identifier(name);

		if (compare)
		{
			appendStringInfoString(sql, " AND ");
			append_nullsafe_eq(sql, psprintf("t.%s", col), psprintf("u.%s", col),
							   target_type(b->flow, name));
		}
		else
			appendStringInfo(sql, "%s%s = u.%s", i > b->kind_att + 1 ? ", " : "", col, col);
	}
}

/* "k1, ..., c1, ..." with prefix */
static char *
insert_columns(Batch *b, const char *prefix, bool with_columns)
{
	StringInfoData s;
	int			last = with_columns ? b->evdesc->natts : b->nkeys;

	initStringInfo(&s);
	for (int i = 0; i < last; i++)
	{
		if (i == b->seq_att || i == b->kind_att)
			continue;
		appendStringInfo(&s, "%s%s%s", s.len > 0 ? ", " : "", prefix,
						 quote_identifier(NameStr(TupleDescAttr(b->evdesc, i)->attname)));
	}
	return s.data;
}

void
scd1_batch_write(Batch *b, KeyApplied *applied, uint32 *order, bool has_mark,
				 Datum mark, FlowCounts *counts)
{
	FlowDef    *f = b->flow;
	int			nk = b->nkeys;
	int			ncols = b->evdesc->natts - b->kind_att - 1;
	Change		del,
				upd,
				ins,
				stu,
				sti;
	Datum	   *values = palloc(sizeof(Datum) * (nk + ncols + 4));
	bool	   *nulls = palloc0(sizeof(bool) * (nk + ncols + 4));
	Datum	   *keys = palloc(sizeof(Datum) * nk);
	TupleTableSlot *wslot = MakeSingleTupleTableSlot(b->evdesc, &TTSOpsMinimalTuple);
	Datum		now = TimestampTzGetDatum(GetCurrentTransactionStartTimestamp());
	char	   *qtarget = rel_qualified_name(f->target);
	char	   *qstate = rel_qualified_name(f->state);
	StringInfoData sql;

	change_begin(&del, "__autocdc_del", 1);
	TupleDescInitEntry(del.desc, 1, "__autocdc_tid", TIDOID, -1, 0);
	change_begin(&upd, "__autocdc_upd", 1 + ncols);
	TupleDescInitEntry(upd.desc, 1, "__autocdc_tid", TIDOID, -1, 0);
	column_entries(b, upd.desc, 2);
	change_begin(&ins, "__autocdc_ins", nk + ncols);
	scd1_key_entries(b, ins.desc, 1);
	column_entries(b, ins.desc, 1 + nk);
	change_begin(&stu, "__autocdc_stu", 4);
	TupleDescInitEntry(stu.desc, 1, "__autocdc_tid", TIDOID, -1, 0);
	state_entries(b, stu.desc, 2);
	change_begin(&sti, "__autocdc_sti", nk + 3);
	scd1_key_entries(b, sti.desc, 1);
	state_entries(b, sti.desc, 1 + nk);

	for (uint32 n = 0; n < b->nkeysets; n++)
	{
		uint32		id = order[n];
		KeyFold    *fold = b->keys[id];
		KeyApplied *a = &applied[id];
		Datum		n_ups = (Datum) 0,
					n_del = (Datum) 0;
		bool		has_ups = later_seq(b, fold->has_bu, fold->bu, a->has_old_ups, a->old_ups, &n_ups);
		bool		has_del = later_seq(b, fold->has_bd, fold->bd, a->has_old_del, a->old_del, &n_del);
		bool		u_wins = fold->has_bu &&
			(!a->has_old_ups || batch_seq_cmp(b, fold->bu, a->old_ups) > 0);
		bool		live = has_ups &&
			(!has_del || batch_seq_cmp(b, n_ups, n_del) > 0) &&
			(!has_mark || batch_seq_cmp(b, n_ups, mark) >= 0);
		bool		same_del;

		if ((n & 0xFFFF) == 0)
			CHECK_FOR_INTERRUPTS();
		/* the key as the winner spells it (numeric 1.0 = 1.00), as SQL's DISTINCT ON keeps it */
		if (fold->winner)
		{
			ExecStoreMinimalTuple(fold->winner, wslot, false);
			slot_getallattrs(wslot);
		}
		for (int i = 0; i < nk; i++)
			keys[i] = fold->winner ? wslot->tts_values[i] : batch_key_value(b, id, i);

		/* the target row */
		if (a->has_row && !live)
		{
			values[0] = PointerGetDatum(&a->row_tid);
			change_put(&del, values, nulls);
		}
		else if (live && u_wins && (!a->has_row || ncols > 0))
		{
			int			at = put_row_id(values, a->has_row, &a->row_tid, keys, nk);

			for (int i = 0; i < ncols; i++)
			{
				values[at + i] = wslot->tts_values[b->kind_att + 1 + i];
				nulls[at + i] = wslot->tts_isnull[b->kind_att + 1 + i];
			}
			change_put(a->has_row ? &upd : &ins, values, nulls);
			memset(nulls, 0, sizeof(bool) * (nk + ncols + 4));
		}

		/* the state, where it changed; a key stays dead since the same delete */
		same_del = same_seq(b, has_del, n_del, a->has_old_del, a->old_del);
		if (!a->has_state || live == a->has_dead_at || !same_del ||
			!same_seq(b, has_ups, n_ups, a->has_old_ups, a->old_ups))
		{
			int			at = put_row_id(values, a->has_state, &a->state_tid, keys, nk);

			values[at] = n_ups;
			nulls[at++] = !has_ups;
			values[at] = n_del;
			nulls[at++] = !has_del;
			values[at] = live ? (Datum) 0 : a->has_dead_at && same_del ? a->dead_at : now;
			nulls[at++] = live;
			change_put(a->has_state ? &stu : &sti, values, nulls);
			memset(nulls, 0, sizeof(bool) * (nk + ncols + 4));
		}
		ExecClearTuple(wslot);
	}
	ExecDropSingleTupleTableSlot(wslot);

	counts->upserted = counts->deleted = 0;
	initStringInfo(&sql);
	if (change_register(&del))
		counts->deleted = spi_exec_by_tid(psprintf("DELETE FROM %s t USING %s u WHERE "
												   "t.ctid OPERATOR(pg_catalog.=) u.__autocdc_tid",
												   qtarget, del.name));
	if (change_register(&upd))
	{
		appendStringInfo(&sql, "UPDATE %s t SET ", qtarget);
		append_columns(&sql, b, false);
		appendStringInfo(&sql, " FROM %s u WHERE t.ctid OPERATOR(pg_catalog.=) u.__autocdc_tid "
						 "AND NOT (true", upd.name);
		append_columns(&sql, b, true);
		appendStringInfoChar(&sql, ')');
		counts->upserted += spi_exec_by_tid(sql.data);
	}
	if (change_register(&ins))
	{
		spi_exec(psprintf("INSERT INTO %s (%s) SELECT %s FROM %s u", qtarget,
						  insert_columns(b, "", true), insert_columns(b, "u.", true), ins.name),
				 0, NULL, NULL, NULL, false);
		counts->upserted += SPI_processed;
	}
	if (change_register(&stu))
		spi_exec_by_tid(psprintf("UPDATE %s t SET __autocdc_upsert_seq = u.__autocdc_upsert_seq, "
								 "__autocdc_delete_seq = u.__autocdc_delete_seq, "
								 "__autocdc_deleted_at = u.__autocdc_deleted_at FROM %s u "
								 "WHERE t.ctid OPERATOR(pg_catalog.=) u.__autocdc_tid", qstate, stu.name));
	if (change_register(&sti))
		spi_exec(psprintf("INSERT INTO %s (%s, __autocdc_upsert_seq, __autocdc_delete_seq, "
						  "__autocdc_deleted_at) SELECT %s, u.__autocdc_upsert_seq, "
						  "u.__autocdc_delete_seq, u.__autocdc_deleted_at FROM %s u",
						  qstate, insert_columns(b, "", false), insert_columns(b, "u.", false), sti.name),
				 0, NULL, NULL, NULL, false);
}
