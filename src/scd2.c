/*-------------------------------------------------------------------------
 * scd2.c
 *	  The SCD type 2 fold (DESIGN §3), set-based, one statement per run.
 *
 * Every distinct event read is kept in the target's event store.  For each
 * key the run touches, history is folded again from a point where nothing
 * before can matter:
 *
 *   in order (every new event after every stored one) and an open version:
 *       from the open version, taken as an event that sets every column;
 *   otherwise: from the last stored delete before the earliest new event
 *       (nothing crosses a delete), replaying the stored events.
 *
 * The fold itself is window functions over those events: a delete starts a
 * new group; in a group, a column an upsert leaves to inherit takes the
 * value of the latest event that set it; an upsert whose tracked columns
 * differ from the previous upsert's starts a version; a version ends where
 * the next starts or at the delete that ends its group, and shows its last
 * event's values.  Only versions that differ from the stored ones are
 * written, so an in-order event touches only its key's open version.
 *
 * Most runs are folded in C instead (scd2_batch.c, the same fold); this one
 * takes the batches the C fold refuses, and is its reference.
 *-------------------------------------------------------------------------
 */
#include "scd2.h"
#include "batch.h"
#include "scd2_batch.h"
#include "retention.h"
#include "validate.h"

#include "access/relation.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"

/* Null-safe equality of column `col` of `a` and `b`. */
static void
col_eq(StringInfo sql, FlowDef *f, const char *a, const char *b, const char *col)
{
	const char *q = quote_identifier(col);

	append_nullsafe_eq(sql, psprintf("%s.%s", a, q), psprintf("%s.%s", b, q),
					   target_type(f, col));
}

/*
 * "SELECT [DISTINCT ON (keys, seq)] ... FROM ev e": events in the store's
 * shape, one per key and sequence when distinct.  A delete carries no
 * values; __autocdc_inherit lists what an upsert leaves to the previous
 * version: its NULL partial-update columns and the columns its flow does
 * not write.
 */
static void
append_normalized(StringInfo sql, FlowDef *f, Scd2Cols *c, bool distinct)
{
	ListCell   *lc;
	StringInfoData keys;
	bool		first = true;

	initStringInfo(&keys);
	append_column_list(&keys, f->keys, "e");
	appendStringInfoString(sql, "SELECT ");
	if (distinct)
		appendStringInfo(sql, "DISTINCT ON (%s, e.__autocdc_seq) ", keys.data);
	appendStringInfo(sql, "%s, e.__autocdc_seq, e.__autocdc_kind", keys.data);
	foreach(lc, c->values)
	{
		const char *q = quote_identifier(lfirst(lc));

		if (list_has_string(f->columns, lfirst(lc)))
			appendStringInfo(sql, ", CASE WHEN e.__autocdc_kind OPERATOR(pg_catalog.=) 'u' THEN e.%s END AS %s",
							 q, q);
		else
			appendStringInfo(sql, ", NULL::%s AS %s",
							 format_type_be_qualified(target_type(f, lfirst(lc))), q);
	}
	appendStringInfoString(sql, ", CASE WHEN e.__autocdc_kind OPERATOR(pg_catalog.=) 'u' THEN "
						   "NULLIF(pg_catalog.array_remove(ARRAY[");
	foreach(lc, c->values)
	{
		const char *lit = quote_literal_cstr(lfirst(lc));

		if (!first)
			appendStringInfoString(sql, ", ");
		first = false;
		if (!list_has_string(f->columns, lfirst(lc)))
			appendStringInfoString(sql, lit);
		else if (list_has_string(f->ignore_null, lfirst(lc)))
			appendStringInfo(sql, "CASE WHEN e.%s IS NULL THEN %s END",
							 quote_identifier(lfirst(lc)), lit);
		else
			appendStringInfoString(sql, "NULL");
	}
	appendStringInfoString(sql, "]::pg_catalog.text[], NULL), '{}'::pg_catalog.text[]) END AS __autocdc_inherit "
						   "FROM ev e");
	if (distinct)
		appendStringInfo(sql, " ORDER BY %s, e.__autocdc_seq", keys.data);
}

static void
append_checks(StringInfo sql, FlowDef *f, Scd2Cols *c)
{
	ListCell   *lc;
	char	   *keytext = validate_keytext(f);

	validate_append_batch_checks(sql, f, keytext);
	/*
	 * Against the stored events: one key and sequence, one event.  Every
	 * event is compared, not one per key and sequence, which saves a sort:
	 * events of the batch that differ at one key and sequence are already
	 * a conflict of higher priority.
	 */
	appendStringInfo(sql, " UNION ALL (SELECT 4, 'conflict_applied', %s, e.__autocdc_seq::pg_catalog.text FROM (",
					 keytext);
	append_normalized(sql, f, c, false);
	appendStringInfo(sql, ") e JOIN %s s ON ", c->qevents);
	append_keys_match(sql, f, "s", "e");
	appendStringInfoString(sql, " AND ");
	append_flow_seq_cmp(sql, f, "s.__autocdc_seq", "=", "e.__autocdc_seq");
	appendStringInfoString(sql, " WHERE s.__autocdc_kind OPERATOR(pg_catalog.<>) e.__autocdc_kind "
						   "OR s.__autocdc_inherit::pg_catalog.text IS DISTINCT FROM e.__autocdc_inherit::pg_catalog.text");
	foreach(lc, c->values)
	{
		appendStringInfoString(sql, " OR NOT ");
		col_eq(sql, f, "s", "e", lfirst(lc));
	}
	appendStringInfoString(sql, " LIMIT 1) ORDER BY 1 LIMIT 1");
}

/* "k..., c..." of alias `a`, for the select lists of the fold. */
static char *
cols_of(FlowDef *f, Scd2Cols *c, const char *a)
{
	StringInfoData buf;

	initStringInfo(&buf);
	append_column_list(&buf, f->keys, a);
	if (c->values != NIL)
	{
		appendStringInfoString(&buf, ", ");
		append_column_list(&buf, c->values, a);
	}
	return buf.data;
}

/* "a.k..., NULL::type AS c..." for rows that carry no values. */
static char *
null_values_of(FlowDef *f, Scd2Cols *c, const char *a)
{
	StringInfoData buf;
	ListCell   *lc;

	initStringInfo(&buf);
	append_column_list(&buf, f->keys, a);
	foreach(lc, c->values)
		appendStringInfo(&buf, ", NULL::%s", format_type_be_qualified(target_type(f, lfirst(lc))));
	return buf.data;
}

static void
append_apply(StringInfo sql, FlowDef *f, Scd2Cols *c)
{
	ListCell   *lc;
	StringInfoData keys;
	int			i;

	initStringInfo(&keys);
	append_column_list(&keys, f->keys, NULL);

	appendStringInfoString(sql, ", evn AS MATERIALIZED (");
	append_normalized(sql, f, c, true);
	appendStringInfo(sql, "), newev AS MATERIALIZED (SELECT n.* FROM evn n WHERE NOT EXISTS "
					 "(SELECT 1 FROM %s s WHERE ", c->qevents);
	append_keys_match(sql, f, "s", "n");
	appendStringInfoString(sql, " AND ");
	append_flow_seq_cmp(sql, f, "s.__autocdc_seq", "=", "n.__autocdc_seq");
	appendStringInfo(sql, ")), ins_ev AS (INSERT INTO %s (%s, __autocdc_seq, __autocdc_kind, ",
					 c->qevents, cols_of(f, c, NULL));
	appendStringInfo(sql, "__autocdc_inherit) SELECT %s, n.__autocdc_seq, n.__autocdc_kind, "
					 "n.__autocdc_inherit FROM newev n RETURNING 1)", cols_of(f, c, "n"));

	/* Per touched key: where to fold from. */
	appendStringInfo(sql, ", aff AS (SELECT DISTINCT ON (%s) %s, __autocdc_seq AS __autocdc_smin "
					 "FROM newev ORDER BY %s, __autocdc_seq)", keys.data, keys.data, keys.data);
	appendStringInfo(sql, ", mode AS (SELECT %s, a.__autocdc_smin, o.__start_at AS __autocdc_open, "
					 "(o.__start_at IS NOT NULL AND NOT EXISTS (SELECT 1 FROM %s s WHERE ",
					 validate_prefixed_keys(f, "a"), c->qevents);
	append_keys_match(sql, f, "s", "a");
	appendStringInfoString(sql, " AND ");
	append_flow_seq_cmp(sql, f, "s.__autocdc_seq", ">=", "a.__autocdc_smin");
	appendStringInfo(sql, ")) AS __autocdc_anchored, (SELECT s.__autocdc_seq FROM %s s WHERE ",
					 c->qevents);
	append_keys_match(sql, f, "s", "a");
	appendStringInfoString(sql, " AND s.__autocdc_kind OPERATOR(pg_catalog.=) 'd' AND ");
	append_flow_seq_cmp(sql, f, "s.__autocdc_seq", "<", "a.__autocdc_smin");
	appendStringInfo(sql, " ORDER BY s.__autocdc_seq DESC LIMIT 1) AS __autocdc_pdel "
					 "FROM aff a LEFT JOIN %s o ON ", c->qtarget);
	append_keys_match(sql, f, "o", "a");
	appendStringInfoString(sql, " AND o.__end_at IS NULL)");

	/* The events to fold. */
	appendStringInfo(sql, ", inp AS (SELECT %s, o.__start_at AS __autocdc_seq, 'a'::pg_catalog.text AS __autocdc_kind, "
					 "NULL::pg_catalog.text[] AS __autocdc_inherit FROM mode m JOIN %s o ON ",
					 cols_of(f, c, "o"), c->qtarget);
	append_keys_match(sql, f, "o", "m");
	appendStringInfo(sql, " AND o.__end_at IS NULL WHERE m.__autocdc_anchored "
					 "UNION ALL SELECT %s, n.__autocdc_seq, n.__autocdc_kind, n.__autocdc_inherit "
					 "FROM newev n", cols_of(f, c, "n"));
	appendStringInfo(sql, " UNION ALL SELECT %s, s.__autocdc_seq, s.__autocdc_kind, s.__autocdc_inherit "
					 "FROM %s s JOIN mode m ON ", cols_of(f, c, "s"), c->qevents);
	append_keys_match(sql, f, "s", "m");
	appendStringInfoString(sql, " WHERE NOT m.__autocdc_anchored AND (m.__autocdc_pdel IS NULL OR ");
	append_flow_seq_cmp(sql, f, "s.__autocdc_seq", ">", "m.__autocdc_pdel");
	appendStringInfoString(sql, "))");

	/* Groups between deletes; inherited values. */
	appendStringInfo(sql, ", g1 AS (SELECT i.*, pg_catalog.sum(CASE WHEN i.__autocdc_kind "
					 "OPERATOR(pg_catalog.=) 'd' THEN 1 ELSE 0 END) OVER (PARTITION BY %s "
					 "ORDER BY i.__autocdc_seq ROWS UNBOUNDED PRECEDING) AS __autocdc_grp FROM inp i)",
					 validate_prefixed_keys(f, "i"));
	appendStringInfoString(sql, ", g2 AS (SELECT g.*");
	i = 0;
	foreach(lc, c->inheriting)
	{
		appendStringInfo(sql, ", pg_catalog.count(*) FILTER (WHERE g.__autocdc_kind OPERATOR(pg_catalog.<>) 'd' "
						 "AND NOT COALESCE(%s OPERATOR(pg_catalog.=) ANY (g.__autocdc_inherit), false)) "
						 "OVER (PARTITION BY %s, g.__autocdc_grp ORDER BY g.__autocdc_seq "
						 "ROWS UNBOUNDED PRECEDING) AS __autocdc_cg%d",
						 quote_literal_cstr(lfirst(lc)), validate_prefixed_keys(f, "g"), i++);
	}
	appendStringInfo(sql, " FROM g1 g), g3 AS (SELECT %s, g.__autocdc_seq, g.__autocdc_kind, g.__autocdc_grp",
					 validate_prefixed_keys(f, "g"));
	foreach(lc, c->values)
	{
		const char *q = quote_identifier(lfirst(lc));
		int			j = list_index_of_string(c->inheriting, lfirst(lc));

		if (j < 0)
			appendStringInfo(sql, ", g.%s", q);
		else
			appendStringInfo(sql, ", pg_catalog.first_value(g.%s) OVER (PARTITION BY %s, g.__autocdc_grp, "
							 "g.__autocdc_cg%d ORDER BY g.__autocdc_seq) AS %s",
							 q, validate_prefixed_keys(f, "g"), j, q);
	}
	appendStringInfoString(sql, " FROM g2 g)");

	/* Versions: a change of a tracked column starts one. */
	appendStringInfoString(sql, ", u AS (SELECT g.*, pg_catalog.lag(g.__autocdc_seq) OVER w AS __autocdc_prev");
	i = 0;
	foreach(lc, c->tracked)
		appendStringInfo(sql, ", pg_catalog.lag(g.%s) OVER w AS __autocdc_lag%d",
						 quote_identifier(lfirst(lc)), i++);
	appendStringInfo(sql, " FROM g3 g WHERE g.__autocdc_kind OPERATOR(pg_catalog.<>) 'd' "
					 "WINDOW w AS (PARTITION BY %s, g.__autocdc_grp ORDER BY g.__autocdc_seq))",
					 validate_prefixed_keys(f, "g"));
	appendStringInfoString(sql, ", v AS (SELECT u.*, pg_catalog.sum(CASE WHEN u.__autocdc_prev IS NULL OR NOT (true");
	i = 0;
	foreach(lc, c->tracked)
	{
		appendStringInfoString(sql, " AND ");
		append_nullsafe_eq(sql, psprintf("u.%s", quote_identifier(lfirst(lc))),
						   psprintf("u.__autocdc_lag%d", i++), target_type(f, lfirst(lc)));
	}
	appendStringInfo(sql, ") THEN 1 ELSE 0 END) OVER (PARTITION BY %s, u.__autocdc_grp ORDER BY u.__autocdc_seq "
					 "ROWS UNBOUNDED PRECEDING) AS __autocdc_ver FROM u)",
					 validate_prefixed_keys(f, "u"));
	appendStringInfo(sql, ", vv AS (SELECT DISTINCT ON (%s, v.__autocdc_grp, v.__autocdc_ver) %s, "
					 "v.__autocdc_grp, pg_catalog.first_value(v.__autocdc_seq) OVER (PARTITION BY %s, "
					 "v.__autocdc_grp, v.__autocdc_ver ORDER BY v.__autocdc_seq) AS __autocdc_start FROM v "
					 "ORDER BY %s, v.__autocdc_grp, v.__autocdc_ver, v.__autocdc_seq DESC)",
					 validate_prefixed_keys(f, "v"), cols_of(f, c, "v"),
					 validate_prefixed_keys(f, "v"), validate_prefixed_keys(f, "v"));
	/*
	 * A version ends where the next item of its key starts: the next
	 * version, or the delete that closes its group.  One window over both,
	 * rather than a join between sets of the batch (see scd1.c).
	 */
	appendStringInfo(sql, ", vd AS (SELECT %s, vv.__autocdc_start, false AS __autocdc_is_del FROM vv "
					 "UNION ALL SELECT %s, g.__autocdc_seq, true FROM g1 g "
					 "WHERE g.__autocdc_kind OPERATOR(pg_catalog.=) 'd')",
					 cols_of(f, c, "vv"), null_values_of(f, c, "g"));
	appendStringInfo(sql, ", nv AS (SELECT %s, x.__autocdc_start AS __start_at, x.__autocdc_end AS __end_at "
					 "FROM (SELECT vd.*, pg_catalog.lead(vd.__autocdc_start) OVER (PARTITION BY %s "
					 "ORDER BY vd.__autocdc_start) AS __autocdc_end FROM vd) x WHERE NOT x.__autocdc_is_del)",
					 cols_of(f, c, "x"), validate_prefixed_keys(f, "vd"));

	/* The stored versions folded again, and the difference written. */
	appendStringInfo(sql, ", oldv AS (SELECT t.ctid AS __autocdc_tid, t.tableoid AS __autocdc_rel, "
					 "%s, t.__start_at, t.__end_at "
					 "FROM %s t JOIN mode m ON ", cols_of(f, c, "t"), c->qtarget);
	append_keys_match(sql, f, "t", "m");
	appendStringInfoString(sql, " WHERE (m.__autocdc_anchored AND ");
	append_flow_seq_cmp(sql, f, "t.__start_at", ">=", "m.__autocdc_open");
	appendStringInfoString(sql, ") OR (NOT m.__autocdc_anchored AND (m.__autocdc_pdel IS NULL OR ");
	append_flow_seq_cmp(sql, f, "t.__start_at", ">", "m.__autocdc_pdel");
	appendStringInfoString(sql, ")))");

	/*
	 * diff: old and new versions side by side, by key and start; a pair
	 * with the same end and values is left alone (found by one sort).
	 */
	appendStringInfo(sql, ", both_v AS (SELECT o.__autocdc_tid, o.__autocdc_rel, %s, o.__start_at, o.__end_at, "
					 "true AS __autocdc_old FROM oldv o UNION ALL SELECT NULL, NULL, %s, n.__start_at, n.__end_at, false FROM nv n), "
					 "paired AS (SELECT b.*, pg_catalog.count(*) OVER wv AS __autocdc_n",
					 cols_of(f, c, "o"), cols_of(f, c, "n"));
	appendStringInfoString(sql, ", pg_catalog.first_value(b.__end_at) OVER wv AS __autocdc_first_end"
						   ", pg_catalog.last_value(b.__end_at) OVER wv AS __autocdc_last_end");
	{
		ListCell   *lc;
		int			j = 0;

		foreach(lc, c->values)
		{
			appendStringInfo(sql, ", pg_catalog.first_value(b.%s) OVER wv AS __autocdc_f%d"
							 ", pg_catalog.last_value(b.%s) OVER wv AS __autocdc_l%d",
							 quote_identifier(lfirst(lc)), j, quote_identifier(lfirst(lc)), j);
			j++;
		}
		appendStringInfo(sql, " FROM both_v b WINDOW wv AS (PARTITION BY %s, b.__start_at ORDER BY b.__autocdc_old "
						 "ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING)), "
						 "diff AS (SELECT p.*, (p.__autocdc_n OPERATOR(pg_catalog.=) 2 AND ",
						 validate_prefixed_keys(f, "b"));
		append_nullsafe_eq(sql, "p.__autocdc_last_end", "p.__autocdc_first_end", f->seq_type);
		j = 0;
		foreach(lc, c->values)
		{
			appendStringInfoString(sql, " AND ");
			append_nullsafe_eq(sql, psprintf("p.__autocdc_l%d", j),
							   psprintf("p.__autocdc_f%d", j), target_type(f, lfirst(lc)));
			j++;
		}
		appendStringInfoString(sql, ") AS __autocdc_same FROM paired p)");
	}
	/*
	 * (tableoid, ctid): a tid repeats across the partitions of a
	 * partitioned target; with the keys and start where they hold the
	 * partition key, so that each lookup goes to its partition.
	 */
	appendStringInfo(sql, ", del AS (DELETE FROM %s t USING diff d WHERE t.ctid OPERATOR(pg_catalog.=) d.__autocdc_tid "
					 "AND t.tableoid OPERATOR(pg_catalog.=) d.__autocdc_rel ", c->qtarget);
	if (batch_rows_by_keys(f, "__start_at"))
	{
		appendStringInfoString(sql, "AND ");
		append_keys_match(sql, f, "t", "d");
		appendStringInfoString(sql, " AND ");
		append_flow_seq_cmp(sql, f, "t.__start_at", "=", "d.__start_at");
		appendStringInfoChar(sql, ' ');
	}
	appendStringInfoString(sql, "AND d.__autocdc_old AND NOT d.__autocdc_same RETURNING 1)");
	/* The count of del in the WHERE makes the deletes come first (unique indexes). */
	appendStringInfo(sql, ", ins AS (INSERT INTO %s (%s, __start_at, __end_at) SELECT %s, d.__start_at, d.__end_at "
					 "FROM diff d WHERE (SELECT pg_catalog.count(*) FROM del) OPERATOR(pg_catalog.>=) 0 "
					 "AND NOT d.__autocdc_old AND NOT d.__autocdc_same RETURNING 1)",
					 c->qtarget, cols_of(f, c, NULL), cols_of(f, c, "d"));

	appendStringInfoString(sql, " SELECT (SELECT pg_catalog.count(*) FROM ev), (SELECT pg_catalog.count(*) FROM ins), "
						   "(SELECT pg_catalog.count(*) FROM diff d WHERE d.__autocdc_old AND d.__autocdc_n OPERATOR(pg_catalog.=) 1), "
						   "(SELECT pg_catalog.count(*) FROM ev) OPERATOR(pg_catalog.-) "
						   "(SELECT pg_catalog.count(*) FROM newev), (SELECT pg_catalog.count(*) FROM ins_ev)"
						   ", (SELECT pg_catalog.count(*) FROM del)");
}

/*
 * Applies the flow's new events to its SCD 2 target.  Runs as the flow's
 * owner; the caller provides the transaction boundaries.
 */
void
scd2_apply(FlowDef *f, ReadParams *p, FlowCounts *counts)
{
	Scd2Cols	c;
	StringInfoData events,
				checks,
				apply;
	ListCell   *lc;
	FlowCounts	below;
	bool		done = false;

	memset(&c, 0, sizeof(c));
	c.qtarget = rel_qualified_name(f->target);
	c.qevents = rel_qualified_name(f->state);
	c.values = event_store_value_columns(f->state, f->keys);
	c.tracked = f->track_columns != NIL ? f->track_columns : c.values;
	foreach(lc, f->state_partial)
		if (list_has_string(c.values, lfirst(lc)))
			c.inheriting = lappend(c.inheriting, lfirst(lc));

	/* first: reading the events checks that the flow's columns still exist */
	initStringInfo(&events);
	read_append_events(&events, f, p);
	memset(&below, 0, sizeof(below));
	scd2_skip_below_floors(f, p, &events, &below);
	if (scd2_batch_eligible(f, p, &c))
	{
		done = scd2_batch_apply(f, p, events.data, &c, counts);
		batch_release();
	}
	if (!done)
	{
		initStringInfo(&checks);
		append_checks(&checks, f, &c);
		initStringInfo(&apply);
		append_apply(&apply, f, &c);
		validate_and_apply(f, p, events.data, checks.data, apply.data, counts);
	}
	counts->read += below.read;
	counts->skipped += below.skipped;
	scd2_purge_tombstones(f);
}
