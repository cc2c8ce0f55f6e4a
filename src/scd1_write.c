/*-------------------------------------------------------------------------
 * scd1_write.c
 *	  The writes of the SCD type 1 fold (see scd1_write.h).
 *
 * Each kind of change goes to SQL as a relation of its rows, one statement
 * each, and rows already stored are named by (tableoid, tid): a run of new
 * keys pays for its inserts and nothing else.
 *-------------------------------------------------------------------------
 */
#include "scd1_write.h"
#include "direct_insert.h"
#include "direct_update.h"
#include "validate.h"

#include "access/relation.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"

/* Entries for the written columns, from attribute "first" on, as the target has them. */
static void
written_entries(Scd1Writes *w, TupleDesc desc, int first)
{
	Relation	rel = relation_open(w->flow->target, AccessShareLock);
	TupleDesc	tdesc = RelationGetDescr(rel);
	ListCell   *lc;

	foreach(lc, w->written)
	{
		Form_pg_attribute att = TupleDescAttr(tdesc, get_attnum(w->flow->target, lfirst(lc)) - 1);
		int			a = first + foreach_current_index(lc);

		TupleDescInitEntry(desc, a, NameStr(att->attname), att->atttypid, att->atttypmod, 0);
		TupleDescInitEntryCollation(desc, a, att->attcollation);
	}
	relation_close(rel, AccessShareLock);
	if (w->seq_col)
		acdc_rel_copy_entry(desc, first + list_length(w->written), w->ev->desc, w->ev->seq_att,
							ACDC_SEQUENCE_COLUMN);
}

/* Entries for the state's columns after the keys (SCD1_STATE_FIXED, then tracked). */
static void
state_entries(Scd1Writes *w, TupleDesc desc, int first)
{
	Events	   *ev = w->ev;
	ListCell   *lc;
	int			i = 0;

	acdc_rel_copy_entry(desc, first, ev->desc, ev->seq_att, "__autocdc_upsert_seq");
	acdc_rel_copy_entry(desc, first + 1, ev->desc, ev->seq_att, "__autocdc_delete_seq");
	TupleDescInitEntry(desc, first + 2, "__autocdc_deleted_at", TIMESTAMPTZOID, -1, 0);
	for_each_from(lc, w->written, list_length(w->written) - w->ntracked)
		acdc_rel_copy_entry(desc, first + SCD1_STATE_FIXED + i++, ev->desc, ev->seq_att, lfirst(lc));
}

void
acdc_scd1_writes_begin(Scd1Writes *w, FlowDef *f, Events *ev, List *written, int ntracked)
{
	int			nk = ev->nkeys;
	int			nw;
	TupleDesc	desc;

	memset(w, 0, sizeof(*w));
	w->flow = f;
	w->ev = ev;
	w->written = written;
	w->ntracked = ntracked;
	w->seq_col = f->seq_in_target;
	w->wcols = w->seq_col ? lappend(list_copy(written), ACDC_SEQUENCE_COLUMN) : written;
	nw = list_length(w->wcols);
	w->by_keys = acdc_batch_rows_by_keys(f, NULL);
	w->values = palloc(sizeof(Datum) * (BATCH_ROW_ID_ATTS + 1 + nk + nw + SCD1_STATE_FIXED + ntracked));
	w->nulls = palloc(sizeof(bool) * (BATCH_ROW_ID_ATTS + 1 + nk + nw + SCD1_STATE_FIXED + ntracked));

	acdc_batch_relation_begin(&w->del, "__autocdc_del", acdc_rel_tid_desc(ev->desc, nk, 0, w->by_keys));
	desc = acdc_rel_tid_desc(ev->desc, nk, nw, w->by_keys);
	written_entries(w, desc, BATCH_ROW_ID_ATTS + 1);
	acdc_batch_relation_begin(&w->upd, "__autocdc_upd", desc);
	desc = acdc_rel_keyed_desc(ev->desc, nk, "__autocdc_id", nw);
	written_entries(w, desc, 2 + nk);
	acdc_batch_relation_begin(&w->ins, "__autocdc_ins", desc);
	desc = acdc_rel_tid_desc(ev->desc, nk, SCD1_STATE_FIXED + ntracked, false);
	state_entries(w, desc, BATCH_ROW_ID_ATTS + 1);
	acdc_batch_relation_begin(&w->stu, "__autocdc_stu", desc);
	desc = acdc_rel_keyed_desc(ev->desc, nk, "__autocdc_id", SCD1_STATE_FIXED + ntracked);
	state_entries(w, desc, 2 + nk);
	acdc_batch_relation_begin(&w->sti, "__autocdc_sti", desc);
	acdc_batch_relation_begin(&w->std, "__autocdc_std", acdc_rel_tid_desc(ev->desc, nk, 0, false));
}

/* values[at..] := the keys; returns the attribute after them. */
static int
put_keys(Scd1Writes *w, int at, Datum *keys)
{
	for (int i = 0; i < w->ev->nkeys; i++)
	{
		w->values[at + i] = keys[i];
		w->nulls[at + i] = false;
	}
	return at + w->ev->nkeys;
}

/* values[at..] := n values; returns the attribute after them. */
static int
put_values(Scd1Writes *w, int at, int n, Datum *values, bool *nulls)
{
	memcpy(&w->values[at], values, sizeof(Datum) * n);
	memcpy(&w->nulls[at], nulls, sizeof(bool) * n);
	return at + n;
}

/* values[0..] := the key number and the keys; returns the attribute after them. */
static int
put_id(Scd1Writes *w, uint32 id, Datum *keys)
{
	w->values[0] = Int32GetDatum((int32) id);
	w->nulls[0] = false;
	return put_keys(w, 1, keys);
}

void
acdc_scd1_write_delete(Scd1Writes *w, const BatchRowId *row, Datum *keys)
{
	acdc_batch_put_row_id(row, w->values, w->nulls);
	if (w->by_keys)
		put_keys(w, BATCH_ROW_ID_ATTS, keys);
	acdc_batch_relation_put(&w->del, w->values, w->nulls);
}

void
acdc_scd1_write_update(Scd1Writes *w, const BatchRowId *row, Datum *keys,
				  Datum *values, bool *nulls)
{
	int			at;

	acdc_batch_put_row_id(row, w->values, w->nulls);
	at = put_values(w, BATCH_ROW_ID_ATTS, list_length(w->wcols), values, nulls);
	if (w->by_keys)
		put_keys(w, at, keys);
	acdc_batch_relation_put(&w->upd, w->values, w->nulls);
}

void
acdc_scd1_write_insert(Scd1Writes *w, uint32 id, Datum *keys, Datum *values, bool *nulls)
{
	put_values(w, put_id(w, id, keys), list_length(w->wcols), values, nulls);
	acdc_batch_relation_put(&w->ins, w->values, w->nulls);
}

void
acdc_scd1_write_state(Scd1Writes *w, const BatchRowId *row, uint32 id, Datum *keys,
				 Datum *values, bool *nulls)
{
	int			n = SCD1_STATE_FIXED + w->ntracked;

	if (row)
	{
		acdc_batch_put_row_id(row, w->values, w->nulls);
		put_values(w, BATCH_ROW_ID_ATTS, n, values, nulls);
		acdc_batch_relation_put(&w->stu, w->values, w->nulls);
	}
	else
	{
		put_values(w, put_id(w, id, keys), n, values, nulls);
		acdc_batch_relation_put(&w->sti, w->values, w->nulls);
	}
}

void
acdc_scd1_drop_state(Scd1Writes *w, const BatchRowId *row)
{
	acdc_batch_put_row_id(row, w->values, w->nulls);
	acdc_batch_relation_put(&w->std, w->values, w->nulls);
}

/* "c = u.c, ..." or " AND <t.c = u.c, NULLs equal> ..." over names. */
static void
append_columns(StringInfo sql, FlowDef *f, List *names, bool compare)
{
	ListCell   *lc;

	foreach(lc, names)
	{
		const char *col = quote_identifier(lfirst(lc));

		if (compare)
		{
			appendStringInfoString(sql, " AND ");
			acdc_append_nullsafe_eq(sql, psprintf("t.%s", col), psprintf("u.%s", col),
							   acdc_target_type(f, lfirst(lc)));
		}
		else
			appendStringInfo(sql, "%s%s = u.%s", foreach_current_index(lc) > 0 ? ", " : "", col, col);
	}
}

/* The state's sequence columns after the keys, by name. */
static List *
state_columns(Scd1Writes *w)
{
	List	   *cols = list_make3("__autocdc_upsert_seq", "__autocdc_delete_seq",
								  "__autocdc_deleted_at");

	return list_concat(cols, list_copy_tail(w->written, list_length(w->written) - w->ntracked));
}

/*
 * The target's deletes, updates and inserts, a statement each.  A trigger
 * on the target (a foreign key's ON DELETE SET NULL on the target itself,
 * a user's trigger) may change other rows of it after a statement, moving
 * them off the tid a later statement names them by: their change would be
 * lost.  So on a target with such triggers they go in one statement, as
 * data-modifying CTEs: all see the rows as the state statement read them,
 * and the AFTER triggers fire after all of them.  (PostgreSQL refuses such
 * CTEs on a table with rules: there, the statements stay apart.)
 */
static void
write_target(Scd1Writes *w, FlowCounts *counts)
{
	FlowDef    *f = w->flow;
	char	   *qtarget = acdc_rel_qualified_name(f->target);
	char	   *stmt[3] = {NULL, NULL, NULL};	/* delete, update, insert */
	int			nstmt = 0;
	bool		row_triggers = false;
	bool		rules = false;
	List	   *icols = list_concat_copy(f->keys, w->wcols);
	StringInfoData sql;

	counts->upserted = counts->deleted = 0;
	initStringInfo(&sql);
	if (w->del.n > 0)
	{
		appendStringInfo(&sql, "DELETE FROM %s t USING %s u WHERE %s", qtarget, w->del.name,
						 acdc_batch_row_id_match(f, w->by_keys, "t", "u"));
		stmt[0] = pstrdup(sql.data);
		nstmt++;
	}
	if (w->upd.n > 0)
	{
		/* only rows a value changed in (a binary difference may be no change) */
		resetStringInfo(&sql);
		appendStringInfo(&sql, "UPDATE %s t SET ", qtarget);
		append_columns(&sql, f, w->wcols, false);
		appendStringInfo(&sql, " FROM %s u WHERE %s AND NOT (true", w->upd.name,
						 acdc_batch_row_id_match(f, w->by_keys, "t", "u"));
		append_columns(&sql, f, w->wcols, true);
		appendStringInfoChar(&sql, ')');
		stmt[1] = pstrdup(sql.data);
		nstmt++;
	}
	if (w->ins.n > 0)
	{
		stmt[2] = acdc_insert_batch_sql(&w->ins, qtarget, icols);
		nstmt++;
	}
	if (nstmt > 1)
		acdc_batch_target_code(f, &row_triggers, &rules);
	if (nstmt <= 1 || !row_triggers || rules)
	{
		/* a statement per kind, in this order; straight in the table where they can */
		counts->deleted = acdc_delete_batch(&w->del, f->target, stmt[0]);
		counts->upserted = acdc_update_batch(&w->upd, f->target, w->wcols, true, stmt[1]);
		counts->upserted += acdc_insert_batch(&w->ins, f->target, qtarget, icols);
	}
	else
	{
		acdc_batch_relation_register(&w->del);
		acdc_batch_relation_register(&w->upd);
		acdc_batch_relation_register(&w->ins);
		resetStringInfo(&sql);
		appendStringInfoString(&sql, "WITH ");
		for (int i = 0; i < 3; i++)
			appendStringInfo(&sql, "%s__autocdc_w%d AS (%s)", i > 0 ? ", " : "", i,
							 stmt[i] ? psprintf("%s RETURNING 1", stmt[i]) : "SELECT 1 WHERE false");
		appendStringInfoString(&sql, " SELECT (SELECT pg_catalog.count(*) FROM __autocdc_w0), "
							   "(SELECT pg_catalog.count(*) FROM __autocdc_w1) OPERATOR(pg_catalog.+) "
							   "(SELECT pg_catalog.count(*) FROM __autocdc_w2)");
		acdc_spi_exec_by_tid(sql.data);
		counts->deleted = acdc_spi_int64(0, 1);
		counts->upserted = acdc_spi_int64(0, 2);
	}
}

void
acdc_scd1_writes_finish(Scd1Writes *w, FlowCounts *counts)
{
	FlowDef    *f = w->flow;
	char	   *qstate = acdc_rel_qualified_name(f->state);
	List	   *scols = state_columns(w);
	ListCell   *lc;
	StringInfoData sql;

	write_target(w, counts);
	initStringInfo(&sql);
	appendStringInfo(&sql, "UPDATE %s t SET ", qstate);
	foreach(lc, scols)
		appendStringInfo(&sql, "%s%s = u.%s", foreach_current_index(lc) > 0 ? ", " : "",
						 quote_identifier(lfirst(lc)), quote_identifier(lfirst(lc)));
	appendStringInfo(&sql, " FROM %s u WHERE %s", w->stu.name,
					 acdc_batch_row_id_match(f, false, "t", "u"));
	acdc_update_batch(&w->stu, f->state, scols, false, sql.data);
	acdc_delete_batch(&w->std, f->state,
					  psprintf("DELETE FROM %s t USING %s u WHERE %s", qstate, w->std.name,
							   acdc_batch_row_id_match(f, false, "t", "u")));
	acdc_insert_batch(&w->sti, f->state, qstate, list_concat_copy(f->keys, scols));
}

/*
 * Whether key's row (alias t) holds the sequence at "tcast": its applied
 * upsert is not older than the truncate, from the state (0.1.0 targets) or
 * from the row itself.
 */
static void
append_upsert_survives(StringInfo sql, FlowDef *f, const char *tcast)
{
	if (!f->seq_in_target)
	{
		appendStringInfo(sql, "EXISTS (SELECT 1 FROM %s st WHERE ", acdc_rel_qualified_name(f->state));
		acdc_append_keys_match(sql, f, "st", "t");
		appendStringInfoString(sql, " AND ");
		acdc_append_flow_seq_cmp(sql, f, "st.__autocdc_upsert_seq", ">=", tcast);
		appendStringInfoChar(sql, ')');
		return;
	}
	appendStringInfoString(sql, "COALESCE(");
	acdc_append_flow_seq_cmp(sql, f, "t." ACDC_SEQUENCE_COLUMN, ">=", tcast);
	appendStringInfoString(sql, ", false)");
}

/*
 * Whether the live key of state row st dies by the truncate.  On a target
 * keeping the sequence, its row tells; the state row then takes the
 * sequence, as a tombstone's.
 */
static char *
truncate_kills(FlowDef *f, const char *tcast)
{
	StringInfoData sql;

	initStringInfo(&sql);
	appendStringInfoString(&sql, "(st.__autocdc_deleted_at IS NULL AND ");
	if (f->seq_in_target)
	{
		appendStringInfo(&sql, "NOT EXISTS (SELECT 1 FROM %s t WHERE ", acdc_rel_qualified_name(f->target));
		acdc_append_keys_match(&sql, f, "st", "t");
		appendStringInfoString(&sql, " AND ");
		append_upsert_survives(&sql, f, tcast);
		appendStringInfoChar(&sql, ')');
	}
	else
		acdc_append_flow_seq_cmp(&sql, f, "st.__autocdc_upsert_seq", "<", tcast);
	appendStringInfoChar(&sql, ')');
	return sql.data;
}

/*
 * A truncate at T deletes every key whose last upsert is older than T,
 * including rows no event ever wrote, and clears tracked columns set
 * before T.  Runs over the whole target: truncates are whole-table events.
 * A key without a state row (its target keeps the sequence) gets no
 * tombstone: the target's truncate mark is one for every key before it.
 */
int64
acdc_scd1_write_truncate(FlowDef *f, const char *t)
{
	StringInfoData sql;
	ListCell   *lc;
	int			i;
	Oid			argtypes[1] = {TEXTOID};
	Datum		values[1] = {CStringGetTextDatum(t)};
	char	   *tcast = psprintf("$1::%s", acdc_type_qualified_name(f->seq_type));
	char	   *qtarget = acdc_rel_qualified_name(f->target);
	char	   *qstate = acdc_rel_qualified_name(f->state);
	List	   *tracked = f->state_partial;
	char	   *kills = truncate_kills(f, tcast);

	initStringInfo(&sql);
	appendStringInfo(&sql, "WITH del AS (DELETE FROM %s t WHERE NOT ", qtarget);
	append_upsert_survives(&sql, f, tcast);
	appendStringInfoString(&sql, " RETURNING 1)");
	if (tracked != NIL)
	{
		appendStringInfo(&sql, ", pu AS (UPDATE %s t SET ", qtarget);
		i = 0;
		foreach(lc, tracked)
		{
			const char *col = quote_identifier(lfirst(lc));

			appendStringInfo(&sql, "%s%s = CASE WHEN COALESCE(", i++ ? ", " : "", col);
			acdc_append_flow_seq_cmp(&sql, f, psprintf("st.%s", col), "<", tcast);
			appendStringInfo(&sql, ", st.%s IS NULL) THEN NULL ELSE t.%s END", col, col);
		}
		appendStringInfo(&sql, " FROM %s st WHERE ", qstate);
		acdc_append_keys_match(&sql, f, "st", "t");
		appendStringInfoString(&sql, " AND ");
		if (f->seq_in_target)
			append_upsert_survives(&sql, f, tcast);
		else
			acdc_append_flow_seq_cmp(&sql, f, "st.__autocdc_upsert_seq", ">=", tcast);
		appendStringInfoString(&sql, " RETURNING 1)");
	}
	appendStringInfo(&sql, ", su AS (UPDATE %s st SET __autocdc_deleted_at = "
					 "CASE WHEN %s THEN pg_catalog.now() ELSE st.__autocdc_deleted_at END",
					 qstate, kills);
	if (f->seq_in_target)
	{
		appendStringInfo(&sql, ", __autocdc_upsert_seq = CASE WHEN %s THEN (SELECT t.%s FROM %s t WHERE ",
						 kills, ACDC_SEQUENCE_COLUMN, qtarget);
		acdc_append_keys_match(&sql, f, "st", "t");
		appendStringInfoString(&sql, ") ELSE st.__autocdc_upsert_seq END");
	}
	foreach(lc, tracked)
	{
		const char *col = quote_identifier(lfirst(lc));

		appendStringInfo(&sql, ", %s = CASE WHEN COALESCE(", col);
		acdc_append_flow_seq_cmp(&sql, f, psprintf("st.%s", col), "<", tcast);
		appendStringInfo(&sql, ", false) THEN NULL ELSE st.%s END", col);
	}
	appendStringInfo(&sql, " WHERE %s", kills);
	foreach(lc, tracked)
	{
		appendStringInfoString(&sql, " OR ");
		acdc_append_flow_seq_cmp(&sql, f, psprintf("st.%s", quote_identifier(lfirst(lc))), "<", tcast);
	}
	/* Data-modifying CTEs run to completion whether or not they are read. */
	appendStringInfoString(&sql, " RETURNING 1) SELECT pg_catalog.count(*) FROM del");

	acdc_spi_exec(sql.data, 1, argtypes, values, NULL, false);
	return acdc_spi_int64(0, 1);
}

/*
 * Tombstones older than the target's retention (its tombstone_retention,
 * else autocdc.tombstone_retention) are forgotten.  Looking for them scans
 * the state: an index on when keys died would cost every delete a WAL
 * record (most of SCD 1's WAL beyond the target's own), so a run looks at
 * most once per tenth of the retention, and a tombstone lives up to 1.1
 * times it.
 */
void
acdc_scd1_purge_tombstones(FlowDef *f)
{
	Oid			argtypes[1] = {FLOAT8OID};
	Datum		values[1] = {Float8GetDatum(f->tombstone_retention_s)};

	if (f->tombstone_retention_s < 0 ||
		(f->purge_age_s >= 0 && f->purge_age_s < f->tombstone_retention_s / 10))
		return;
	f->purged = true;
	acdc_spi_exec(psprintf("DELETE FROM %s WHERE __autocdc_deleted_at OPERATOR(pg_catalog.<) "
					  "(pg_catalog.now() OPERATOR(pg_catalog.-) pg_catalog.make_interval(secs => $1))",
					  acdc_rel_qualified_name(f->state)),
			 1, argtypes, values, NULL, false);
}
