/*-------------------------------------------------------------------------
 * scd1_write.c
 *	  The writes of the SCD type 1 C fold: per key, the batch's latest
 *	  upsert and delete and what earlier runs applied give the key's new
 *	  state and the change to its target row, as the SQL fold's apply
 *	  (scd1.c) computes them for flows without partial columns.
 *
 * Each kind of change goes to SQL as a relation of its rows, one statement
 * each, and rows already stored are named by (tableoid, tid): a run of
 * new keys pays for its inserts and nothing else, where the SQL fold's one
 * statement joins every key to state and target and scans the result five
 * times.
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

/* Entries for the flow's columns, as the events have them after __autocdc_kind. */
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

/* Entries for the state's two sequences and when the key died. */
static void
state_entries(Batch *b, TupleDesc desc, int first)
{
	batch_seq_entry(b, desc, first, "__autocdc_upsert_seq");
	batch_seq_entry(b, desc, first + 1, "__autocdc_delete_seq");
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

/* A change's first columns: the stored row's id, or a new row's key number and keys. */
static int
put_row_id(Batch *b, uint32 id, Datum *keys, bool stored, BatchRowId *row,
		   Datum *values, bool *nulls)
{
	if (stored)
	{
		batch_put_row_id(row, values, nulls);
		return BATCH_ROW_ID_ATTS;
	}
	batch_put_key(b, id, keys, values, nulls);
	return 1 + b->nkeys;
}

/* "t.c = u.c, ..." or " AND <t.c = u.c, NULLs equal> ..." over the flow's columns. */
static void
append_columns(StringInfo sql, FlowDef *f, bool compare)
{
	ListCell   *lc;

	foreach(lc, f->columns)
	{
		const char *col = quote_identifier(lfirst(lc));

		if (compare)
		{
			appendStringInfoString(sql, " AND ");
			append_nullsafe_eq(sql, psprintf("t.%s", col), psprintf("u.%s", col),
							   target_type(f, lfirst(lc)));
		}
		else
			appendStringInfo(sql, "%s%s = u.%s", foreach_current_index(lc) > 0 ? ", " : "", col, col);
	}
}

void
scd1_batch_write(Batch *b, KeyApplied *applied, uint32 *order, bool has_mark,
				 Datum mark, FlowCounts *counts)
{
	FlowDef    *f = b->flow;
	int			nk = b->nkeys;
	int			ncols = b->evdesc->natts - b->kind_att - 1;
	BatchRelation del,			/* target rows, by row id */
				upd,
				ins,			/* target rows, new */
				stu,			/* state rows, by row id */
				sti;			/* state rows, new */
	TupleDesc	desc;
	int			natts = 1 + nk + ncols + 3;
	Datum	   *values = palloc(sizeof(Datum) * natts);
	bool	   *nulls = palloc0(sizeof(bool) * natts);
	Datum	   *keys = palloc(sizeof(Datum) * nk);
	TupleTableSlot *wslot = MakeSingleTupleTableSlot(b->evdesc, &TTSOpsMinimalTuple);
	Datum		now = TimestampTzGetDatum(GetCurrentTransactionStartTimestamp());
	char	   *qtarget = rel_qualified_name(f->target);
	char	   *qstate = rel_qualified_name(f->state);
	bool		by_keys = batch_rows_by_keys(f, NULL);
	StringInfoData sql;

	batch_relation_begin(&del, "__autocdc_del", batch_tid_desc(b, 0, by_keys));
	desc = batch_tid_desc(b, ncols, by_keys);
	column_entries(b, desc, BATCH_ROW_ID_ATTS + 1);
	batch_relation_begin(&upd, "__autocdc_upd", desc);
	desc = batch_keyed_desc(b, "__autocdc_id", ncols);
	column_entries(b, desc, 2 + nk);
	batch_relation_begin(&ins, "__autocdc_ins", desc);
	desc = batch_tid_desc(b, 3, false);
	state_entries(b, desc, BATCH_ROW_ID_ATTS + 1);
	batch_relation_begin(&stu, "__autocdc_stu", desc);
	desc = batch_keyed_desc(b, "__autocdc_id", 3);
	state_entries(b, desc, 2 + nk);
	batch_relation_begin(&sti, "__autocdc_sti", desc);

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
			int			at = put_row_id(b, id, keys, true, &a->target_row, values, nulls);

			if (by_keys)
				batch_put_row_keys(b, at, keys, values, nulls);
			batch_relation_put(&del, values, nulls);
		}
		else if (live && u_wins && (!a->has_row || ncols > 0))
		{
			int			at = put_row_id(b, id, keys, a->has_row, &a->target_row, values, nulls);

			for (int i = 0; i < ncols; i++)
			{
				values[at + i] = wslot->tts_values[b->kind_att + 1 + i];
				nulls[at + i] = wslot->tts_isnull[b->kind_att + 1 + i];
			}
			if (a->has_row && by_keys)
				batch_put_row_keys(b, at + ncols, keys, values, nulls);
			batch_relation_put(a->has_row ? &upd : &ins, values, nulls);
		}

		/* the state, where it changed; a key stays dead since the same delete */
		same_del = same_seq(b, has_del, n_del, a->has_old_del, a->old_del);
		if (!a->has_state || live == a->has_dead_at || !same_del ||
			!same_seq(b, has_ups, n_ups, a->has_old_ups, a->old_ups))
		{
			int			at = put_row_id(b, id, keys, a->has_state, &a->state_row, values, nulls);

			values[at] = n_ups;
			nulls[at++] = !has_ups;
			values[at] = n_del;
			nulls[at++] = !has_del;
			values[at] = live ? (Datum) 0 : a->has_dead_at && same_del ? a->dead_at : now;
			nulls[at++] = live;
			batch_relation_put(a->has_state ? &stu : &sti, values, nulls);
		}
		ExecClearTuple(wslot);
	}
	ExecDropSingleTupleTableSlot(wslot);

	counts->upserted = counts->deleted = 0;
	initStringInfo(&sql);
	if (batch_relation_register(&del))
		counts->deleted = spi_exec_by_tid(psprintf("DELETE FROM %s t USING %s u WHERE %s",
												   qtarget, del.name,
												   batch_row_id_match(f, by_keys, "t", "u")));
	if (batch_relation_register(&upd))
	{
		appendStringInfo(&sql, "UPDATE %s t SET ", qtarget);
		append_columns(&sql, f, false);
		appendStringInfo(&sql, " FROM %s u WHERE %s AND NOT (true", upd.name,
						 batch_row_id_match(f, by_keys, "t", "u"));
		append_columns(&sql, f, true);
		appendStringInfoChar(&sql, ')');
		counts->upserted += spi_exec_by_tid(sql.data);
	}
	if (batch_relation_register(&ins))
	{
		List	   *written = list_concat_copy(f->keys, f->columns);

		resetStringInfo(&sql);
		appendStringInfo(&sql, "INSERT INTO %s (", qtarget);
		append_column_list(&sql, written, NULL);
		appendStringInfoString(&sql, ") SELECT ");
		append_column_list(&sql, written, "u");
		appendStringInfo(&sql, " FROM %s u", ins.name);
		spi_exec(sql.data, 0, NULL, NULL, NULL, false);
		counts->upserted += SPI_processed;
	}
	if (batch_relation_register(&stu))
		spi_exec_by_tid(psprintf("UPDATE %s t SET __autocdc_upsert_seq = u.__autocdc_upsert_seq, "
								 "__autocdc_delete_seq = u.__autocdc_delete_seq, "
								 "__autocdc_deleted_at = u.__autocdc_deleted_at FROM %s u "
								 "WHERE %s", qstate, stu.name, batch_row_id_match(f, false, "t", "u")));
	if (batch_relation_register(&sti))
		spi_exec(psprintf("INSERT INTO %s (%s, __autocdc_upsert_seq, __autocdc_delete_seq, "
						  "__autocdc_deleted_at) SELECT %s, u.__autocdc_upsert_seq, "
						  "u.__autocdc_delete_seq, u.__autocdc_deleted_at FROM %s u",
						  qstate, validate_prefixed_keys(f, NULL), validate_prefixed_keys(f, "u"), sti.name),
				 0, NULL, NULL, NULL, false);
}
