/*-------------------------------------------------------------------------
 * scd1.c
 *	  The SCD type 1 fold (DESIGN §3), set-based, one statement per run.
 *
 * Per key the state table keeps the sequence of the last upsert and of the
 * last delete, and for each partial-update ("tracked") column the sequence
 * of the event that set its value; a truncate is a delete of every key at
 * its sequence, kept once per target.  With that, a batch of events in any
 * order gives exactly the fold of all events read so far:
 *
 *   live    = last upsert > last delete and >= last truncate
 *   columns = from the last upsert; a tracked column from the last event
 *             that set it, unless a delete or truncate came after that.
 *
 * Validation runs first and raises an error naming flow, key and sequence
 * for NULL keys or sequences and for two different events at one key and
 * sequence; the caller's subtransaction then applies nothing.
 *
 * Most runs of flows without partial columns are folded and written in C
 * (scd1_batch.c, scd1_write.c); this SQL fold takes the batches they refuse.
 *-------------------------------------------------------------------------
 */
#include "scd1.h"
#include "batch.h"
#include "scd1_batch.h"
#include "validate.h"

#include "catalog/pg_proc.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "utils/builtins.h"
#include "parser/parse_func.h"
#include "utils/lsyscache.h"

/* What the generated SQL needs to know about the flow's columns. */
typedef struct Scd1Cols
{
	List	   *plain;			/* written by every flow, never partial */
	List	   *tracked;		/* the state's partial columns */
	char	   *seqtype;		/* qualified sequence type */
	char	   *qtarget;
	char	   *qstate;
} Scd1Cols;

/* How the flow sets tracked column `col`: "always", "notnull" or "never". */
static const char *
setter_kind(FlowDef *f, const char *col)
{
	if (!list_has_string(f->columns, col))
		return "never";
	return list_has_string(f->ignore_null, col) ? "notnull" : "always";
}

/* "x IS NOT NULL AND (n_del IS NULL OR x > n_del) AND (n_t IS NULL OR x >= n_t)" */
static void
append_survives(StringInfo sql, FlowDef *f, const char *x)
{
	appendStringInfo(sql, "(%s IS NOT NULL AND (c.__autocdc_n_del IS NULL OR ", x);
	append_flow_seq_cmp(sql, f, x, ">", "c.__autocdc_n_del");
	appendStringInfoString(sql, ") AND (c.__autocdc_n_t IS NULL OR ");
	append_flow_seq_cmp(sql, f, x, ">=", "c.__autocdc_n_t");
	appendStringInfoString(sql, "))");
}

/*
 * The key's latest delete in the batch, over window "wk" when the sequence
 * type has a max aggregate (no extra sort), else over window "wd".
 */
static void
append_latest_delete(StringInfo sql, FlowDef *f, Scd1Cols *c)
{
	List	   *name = list_make1(makeString("max"));
	Oid			agg = LookupFuncName(name, 1, &f->seq_type, true);

	if (OidIsValid(agg) && get_func_prokind(agg) == PROKIND_AGGREGATE)
		appendStringInfo(sql, "%s(e.__autocdc_seq) FILTER (WHERE e.__autocdc_kind "
						 "OPERATOR(pg_catalog.=) 'd') OVER wk",
						 quote_qualified_identifier(get_namespace_name(get_func_namespace(agg)), "max"));
	else
		appendStringInfoString(sql, "pg_catalog.first_value(CASE WHEN e.__autocdc_kind "
							   "OPERATOR(pg_catalog.=) 'd' THEN e.__autocdc_seq END) OVER wd");
}

static void
append_checks(StringInfo sql, FlowDef *f, Scd1Cols *c)
{
	ListCell   *lc;
	char	   *keytext = validate_keytext(f);

	validate_append_batch_checks(sql, f, keytext);

	/*
	 * Against what earlier runs applied at the same sequence; the applied
	 * upsert's values are known only as the target's row for the key.
	 */
	appendStringInfoString(sql, " UNION ALL (SELECT 4, CASE WHEN e.__autocdc_kind OPERATOR(pg_catalog.=) 'u' AND ");
	append_flow_seq_cmp(sql, f, "e.__autocdc_seq", "=", "st.__autocdc_upsert_seq");
	appendStringInfo(sql,
					 " THEN 'conflict_target' ELSE 'conflict_applied' END, %s, e.__autocdc_seq::pg_catalog.text "
					 "   FROM ev e JOIN %s st ON ",
					 keytext, c->qstate);
	append_keys_match(sql, f, "st", "e");
	appendStringInfo(sql, " LEFT JOIN %s t ON ", c->qtarget);
	append_keys_match(sql, f, "t", "e");
	appendStringInfoString(sql, " WHERE (e.__autocdc_kind OPERATOR(pg_catalog.=) 'u' AND ");
	append_flow_seq_cmp(sql, f, "e.__autocdc_seq", "=", "st.__autocdc_delete_seq");
	appendStringInfoString(sql, ") OR (e.__autocdc_kind OPERATOR(pg_catalog.=) 'd' AND ");
	append_flow_seq_cmp(sql, f, "e.__autocdc_seq", "=", "st.__autocdc_upsert_seq");
	appendStringInfoString(sql, ") OR (e.__autocdc_kind OPERATOR(pg_catalog.=) 'u' AND ");
	append_flow_seq_cmp(sql, f, "e.__autocdc_seq", "=", "st.__autocdc_upsert_seq");
	appendStringInfo(sql, " AND t.%s IS NOT NULL AND NOT (true",
					 quote_identifier(linitial(f->keys)));
	foreach(lc, f->columns)
	{
		const char *col = quote_identifier(lfirst(lc));
		Oid			typid = target_type(f, lfirst(lc));

		appendStringInfoString(sql, " AND ");
		if (list_has_string(f->ignore_null, lfirst(lc)))
			appendStringInfo(sql, "(e.%s IS NULL OR ", col);
		else
			appendStringInfoChar(sql, '(');
		append_nullsafe_eq(sql, psprintf("t.%s", col), psprintf("e.%s", col), typid);
		appendStringInfoChar(sql, ')');
	}
	appendStringInfoString(sql, ")) LIMIT 1) ORDER BY 1 LIMIT 1");
}

/* When the key died: kept while it stays dead at the same delete. */
static void
append_dead_at(StringInfo sql, FlowDef *f)
{
	appendStringInfoString(sql, "CASE WHEN c.__autocdc_n_live THEN NULL "
						   "WHEN c.__autocdc_o_dead_at IS NOT NULL AND ");
	append_nullsafe_eq(sql, "c.__autocdc_n_del", "c.__autocdc_o_del", f->seq_type);
	appendStringInfoString(sql, " THEN c.__autocdc_o_dead_at ELSE pg_catalog.now() END");
}

/*
 * per: one row per key of the batch, in one pass over its events (one
 * sort; joins between the batch's own derived sets would be planned as
 * nested loops when the source's statistics miss the new rows): the
 * latest upsert with its values, the latest delete, and for each partial
 * column the latest event that set it.
 */
static void
append_per(StringInfo sql, FlowDef *f, Scd1Cols *c)
{
	ListCell   *lc;
	int			i;

	appendStringInfo(sql,
					 ", per AS (SELECT DISTINCT ON (%s) %s, "
					 "CASE WHEN e.__autocdc_kind OPERATOR(pg_catalog.=) 'u' THEN e.__autocdc_seq END AS __autocdc_bu, ",
					 validate_prefixed_keys(f, "e"), validate_prefixed_keys(f, "e"));
	append_latest_delete(sql, f, c);
	appendStringInfoString(sql, " AS __autocdc_bd");
	foreach(lc, c->plain)
		appendStringInfo(sql, ", e.%s", quote_identifier(lfirst(lc)));
	i = 0;
	foreach(lc, c->tracked)
	{
		const char *col = quote_identifier(lfirst(lc));
		const char *kind = setter_kind(f, lfirst(lc));

		if (strcmp(kind, "notnull") == 0)
			appendStringInfo(sql,
							 ", pg_catalog.first_value(CASE WHEN e.__autocdc_kind OPERATOR(pg_catalog.=) 'u' "
							 "AND e.%s IS NOT NULL THEN e.__autocdc_seq END) OVER wp%d AS __autocdc_lps%d, "
							 "pg_catalog.first_value(e.%s) OVER wp%d AS __autocdc_lpv%d",
							 col, i, i, col, i, i);
		else if (strcmp(kind, "always") == 0)
			appendStringInfo(sql, ", e.%s AS __autocdc_lpv%d", col, i);
		i++;
	}
	appendStringInfo(sql, " FROM ev e WHERE e.__autocdc_kind OPERATOR(pg_catalog.<>) 't' "
					 "WINDOW wk AS (PARTITION BY %s ORDER BY e.__autocdc_kind OPERATOR(pg_catalog.=) 'u' DESC, "
					 "e.__autocdc_seq DESC ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING), "
					 "wd AS (PARTITION BY %s ORDER BY e.__autocdc_kind OPERATOR(pg_catalog.=) 'd' DESC, "
					 "e.__autocdc_seq DESC ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING)",
					 validate_prefixed_keys(f, "e"), validate_prefixed_keys(f, "e"));
	i = 0;
	foreach(lc, c->tracked)
	{
		if (strcmp(setter_kind(f, lfirst(lc)), "notnull") == 0)
			appendStringInfo(sql, ", wp%d AS (PARTITION BY %s ORDER BY "
							 "(e.__autocdc_kind OPERATOR(pg_catalog.=) 'u' AND e.%s IS NOT NULL) DESC, "
							 "e.__autocdc_seq DESC ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING)",
							 i, validate_prefixed_keys(f, "e"), quote_identifier(lfirst(lc)));
		i++;
	}
	appendStringInfo(sql, " ORDER BY %s, e.__autocdc_kind OPERATOR(pg_catalog.=) 'u' DESC, e.__autocdc_seq DESC)",
					 validate_prefixed_keys(f, "e"));
}

/*
 * The apply, after the events "ev": merges the batch into state and
 * target; its result row is (read, upserted, deleted, skipped, state rows,
 * truncate mark, whether a truncate came).
 */
static void
append_apply(StringInfo sql, FlowDef *f, Scd1Cols *c)
{
	ListCell   *lc;
	StringInfoData keys,
				kk_keys,
				f_keys;
	int			i;
	const char *k1 = quote_identifier(linitial(f->keys));

	initStringInfo(&keys);
	initStringInfo(&kk_keys);
	initStringInfo(&f_keys);
	append_column_list(&keys, f->keys, NULL);
	append_column_list(&kk_keys, f->keys, "pk");
	append_column_list(&f_keys, f->keys, "c");

	appendStringInfo(sql,
					 ", tr AS (SELECT (SELECT e.__autocdc_seq FROM ev e "
					 "    WHERE e.__autocdc_kind OPERATOR(pg_catalog.=) 't' ORDER BY 1 DESC LIMIT 1) AS b_t), "
					 "tt AS (SELECT GREATEST(tr.b_t, $6::%s) AS t FROM tr)",
					 c->seqtype);
	append_per(sql, f, c);

	/* calc: old state, batch winners, merged sequences, candidate values */
	appendStringInfo(sql,
					 ", calc AS (SELECT %s, "
					 "  st.__autocdc_upsert_seq AS __autocdc_o_ups, "
					 "  st.__autocdc_delete_seq AS __autocdc_o_del, "
					 "  st.__autocdc_deleted_at AS __autocdc_o_dead_at, "
					 "  (st.%s IS NOT NULL) AS __autocdc_o_state, "
					 "  (t.%s IS NOT NULL) AS __autocdc_o_row, "
					 "  GREATEST(st.__autocdc_upsert_seq, pk.__autocdc_bu) AS __autocdc_n_ups, "
					 "  GREATEST(st.__autocdc_delete_seq, pk.__autocdc_bd) AS __autocdc_n_del, "
					 "  tt.t AS __autocdc_n_t, "
					 "  (pk.__autocdc_bu IS NOT NULL AND (st.__autocdc_upsert_seq IS NULL OR ",
					 kk_keys.data, k1, k1);
	append_flow_seq_cmp(sql, f, "pk.__autocdc_bu", ">", "st.__autocdc_upsert_seq");
	appendStringInfoString(sql, ")) AS __autocdc_u_wins");
	foreach(lc, c->plain)
	{
		const char *col = quote_identifier(lfirst(lc));

		appendStringInfo(sql,
						 ", CASE WHEN pk.__autocdc_bu IS NOT NULL AND (st.__autocdc_upsert_seq IS NULL OR ");
		append_flow_seq_cmp(sql, f, "pk.__autocdc_bu", ">", "st.__autocdc_upsert_seq");
		appendStringInfo(sql, ") THEN pk.%s ELSE t.%s END AS %s", col, col, col);
	}
	i = 0;
	foreach(lc, c->tracked)
	{
		const char *col = quote_identifier(lfirst(lc));
		const char *kind = setter_kind(f, lfirst(lc));
		char	   *ss = strcmp(kind, "notnull") == 0 ? psprintf("pk.__autocdc_lps%d", i)
			: strcmp(kind, "always") == 0 ? "pk.__autocdc_bu" : NULL;
		char	   *sv = psprintf("pk.__autocdc_lpv%d", i);

		appendStringInfo(sql, ", st.%s AS __autocdc_o_ps%d", col, i);
		if (ss == NULL)
			appendStringInfo(sql, ", st.%s AS __autocdc_ps%d, t.%s AS __autocdc_pv%d",
							 col, i, col, i);
		else
		{
			appendStringInfo(sql, ", GREATEST(st.%s, %s) AS __autocdc_ps%d, "
							 "CASE WHEN %s IS NOT NULL AND (st.%s IS NULL OR ",
							 col, ss, i, ss, col);
			append_flow_seq_cmp(sql, f, ss, ">", psprintf("st.%s", col));
			appendStringInfo(sql, ") THEN %s ELSE t.%s END AS __autocdc_pv%d", sv, col, i);
		}
		i++;
	}
	appendStringInfo(sql, " FROM per pk CROSS JOIN tt LEFT JOIN %s st ON ", c->qstate);
	append_keys_match(sql, f, "pk", "st");
	appendStringInfo(sql, " LEFT JOIN %s t ON ", c->qtarget);
	append_keys_match(sql, f, "pk", "t");
	appendStringInfoChar(sql, ')');

	/* fin: liveness and final tracked columns */
	appendStringInfoString(sql, ", fin AS (SELECT c.*, ");
	append_survives(sql, f, "c.__autocdc_n_ups");
	appendStringInfoString(sql, " AS __autocdc_n_live");
	for (i = 0; i < list_length(c->tracked); i++)
	{
		char	   *ps = psprintf("c.__autocdc_ps%d", i);

		appendStringInfoString(sql, ", CASE WHEN ");
		append_survives(sql, f, ps);
		appendStringInfo(sql, " THEN %s END AS __autocdc_fs%d, CASE WHEN ", ps, i);
		append_survives(sql, f, ps);
		appendStringInfo(sql, " THEN c.__autocdc_pv%d END AS __autocdc_fv%d", i, i);
	}
	appendStringInfoString(sql, " FROM calc c)");

	/* Target writes: delete, update where a value changed, insert. */
	appendStringInfo(sql, ", del AS (DELETE FROM %s t USING fin c WHERE ", c->qtarget);
	append_keys_match(sql, f, "t", "c");
	appendStringInfoString(sql, " AND c.__autocdc_o_row AND NOT c.__autocdc_n_live RETURNING 1)");

	if (c->plain != NIL || c->tracked != NIL)
	{
		bool		first = true;

		appendStringInfo(sql, ", upd AS (UPDATE %s t SET ", c->qtarget);
		foreach(lc, c->plain)
		{
			appendStringInfo(sql, "%s%s = c.%s", first ? "" : ", ",
							 quote_identifier(lfirst(lc)), quote_identifier(lfirst(lc)));
			first = false;
		}
		i = 0;
		foreach(lc, c->tracked)
		{
			appendStringInfo(sql, "%s%s = c.__autocdc_fv%d", first ? "" : ", ",
							 quote_identifier(lfirst(lc)), i++);
			first = false;
		}
		appendStringInfoString(sql, " FROM fin c WHERE ");
		append_keys_match(sql, f, "t", "c");
		appendStringInfoString(sql, " AND c.__autocdc_o_row AND c.__autocdc_n_live AND NOT (true");
		foreach(lc, c->plain)
		{
			const char *col = quote_identifier(lfirst(lc));

			appendStringInfoString(sql, " AND ");
			append_nullsafe_eq(sql, psprintf("t.%s", col), psprintf("c.%s", col),
							   target_type(f, lfirst(lc)));
		}
		i = 0;
		foreach(lc, c->tracked)
		{
			appendStringInfoString(sql, " AND ");
			append_nullsafe_eq(sql, psprintf("t.%s", quote_identifier(lfirst(lc))),
							   psprintf("c.__autocdc_fv%d", i++),
							   target_type(f, lfirst(lc)));
		}
		appendStringInfoString(sql, ") RETURNING 1)");
	}
	else
		appendStringInfoString(sql, ", upd AS (SELECT 1 WHERE false)");

	appendStringInfo(sql, ", ins AS (INSERT INTO %s (%s", c->qtarget, keys.data);
	foreach(lc, c->plain)
		appendStringInfo(sql, ", %s", quote_identifier(lfirst(lc)));
	foreach(lc, c->tracked)
		appendStringInfo(sql, ", %s", quote_identifier(lfirst(lc)));
	appendStringInfo(sql, ") SELECT %s", f_keys.data);
	foreach(lc, c->plain)
		appendStringInfo(sql, ", c.%s", quote_identifier(lfirst(lc)));
	for (i = 0; i < list_length(c->tracked); i++)
		appendStringInfo(sql, ", c.__autocdc_fv%d", i);
	appendStringInfoString(sql, " FROM fin c WHERE NOT c.__autocdc_o_row AND c.__autocdc_n_live AND c.__autocdc_u_wins RETURNING 1)");

	/*
	 * State: written only where it changed; an UPDATE and an INSERT, not ON
	 * CONFLICT, which costs a speculative insertion per row (the target's
	 * lock keeps other runs off the state).
	 */
	appendStringInfo(sql, ", sstu AS (UPDATE %s st SET __autocdc_upsert_seq = c.__autocdc_n_ups, "
					 "__autocdc_delete_seq = c.__autocdc_n_del, __autocdc_deleted_at = ", c->qstate);
	append_dead_at(sql, f);
	i = 0;
	foreach(lc, c->tracked)
		appendStringInfo(sql, ", %s = c.__autocdc_fs%d", quote_identifier(lfirst(lc)), i++);
	appendStringInfoString(sql, " FROM fin c WHERE ");
	append_keys_match(sql, f, "st", "c");
	appendStringInfoString(sql, " AND c.__autocdc_o_state AND (c.__autocdc_n_live OPERATOR(pg_catalog.=) "
						   "(c.__autocdc_o_dead_at IS NOT NULL) OR NOT (");
	append_nullsafe_eq(sql, "c.__autocdc_n_ups", "c.__autocdc_o_ups", f->seq_type);
	appendStringInfoString(sql, " AND ");
	append_nullsafe_eq(sql, "c.__autocdc_n_del", "c.__autocdc_o_del", f->seq_type);
	for (i = 0; i < list_length(c->tracked); i++)
	{
		appendStringInfoString(sql, " AND ");
		append_nullsafe_eq(sql, psprintf("c.__autocdc_fs%d", i),
						   psprintf("c.__autocdc_o_ps%d", i), f->seq_type);
	}
	appendStringInfo(sql, ")) RETURNING 1), ssti AS (INSERT INTO %s (%s, __autocdc_upsert_seq, "
					 "__autocdc_delete_seq, __autocdc_deleted_at", c->qstate, keys.data);
	foreach(lc, c->tracked)
		appendStringInfo(sql, ", %s", quote_identifier(lfirst(lc)));
	appendStringInfo(sql, ") SELECT %s, c.__autocdc_n_ups, c.__autocdc_n_del, ", f_keys.data);
	append_dead_at(sql, f);
	for (i = 0; i < list_length(c->tracked); i++)
		appendStringInfo(sql, ", c.__autocdc_fs%d", i);
	appendStringInfoString(sql, " FROM fin c WHERE NOT c.__autocdc_o_state RETURNING 1)");

	/* Counts; skipped = late or replayed events (at or below what was applied). */
	appendStringInfoString(sql, " SELECT (SELECT pg_catalog.count(*) FROM ev), "
						   "(SELECT pg_catalog.count(*) FROM ins) OPERATOR(pg_catalog.+) (SELECT pg_catalog.count(*) FROM upd), "
						   "(SELECT pg_catalog.count(*) FROM del), ");
	/* against the state as it was (the statement's snapshot): an index lookup per event */
	appendStringInfo(sql, "(SELECT pg_catalog.count(*) FROM ev e LEFT JOIN %s st ON ",
					 c->qstate);
	append_keys_match(sql, f, "e", "st");
	appendStringInfoString(sql, " WHERE e.__autocdc_kind OPERATOR(pg_catalog.<>) 't' AND (COALESCE(");
	append_flow_seq_cmp(sql, f, "e.__autocdc_seq", "<=",
						"GREATEST(st.__autocdc_upsert_seq, st.__autocdc_delete_seq)");
	appendStringInfoString(sql, ", false) OR COALESCE(");
	append_flow_seq_cmp(sql, f, "e.__autocdc_seq", "<", psprintf("$6::%s", c->seqtype));
	appendStringInfoString(sql, ", false)))");
	appendStringInfoString(sql, ", (SELECT pg_catalog.count(*) FROM sstu) OPERATOR(pg_catalog.+) (SELECT pg_catalog.count(*) FROM ssti), "
						   "(SELECT tt.t FROM tt), "
						   "(SELECT tr.b_t IS NOT NULL AND ($6 IS NULL OR ");
	append_flow_seq_cmp(sql, f, "tr.b_t", ">", psprintf("$6::%s", c->seqtype));
	appendStringInfoString(sql, ") FROM tr)");
}

/*
 * A truncate at T deletes every key whose last upsert is older than T,
 * including rows no event ever wrote, and clears tracked columns set
 * before T.  Runs over the whole target: truncates are whole-table events.
 */
static int64
apply_truncate(FlowDef *f, Scd1Cols *c, const char *t)
{
	StringInfoData sql;
	ListCell   *lc;
	int			i;
	Oid			argtypes[1] = {TEXTOID};
	Datum		values[1] = {CStringGetTextDatum(t)};
	char	   *tcast = psprintf("$1::%s", c->seqtype);

	initStringInfo(&sql);
	appendStringInfo(&sql, "WITH del AS (DELETE FROM %s t WHERE NOT EXISTS (SELECT 1 FROM %s st WHERE ",
					 c->qtarget, c->qstate);
	append_keys_match(&sql, f, "st", "t");
	appendStringInfoString(&sql, " AND ");
	append_flow_seq_cmp(&sql, f, "st.__autocdc_upsert_seq", ">=", tcast);
	appendStringInfoString(&sql, ") RETURNING 1)");
	if (c->tracked != NIL)
	{
		appendStringInfo(&sql, ", pu AS (UPDATE %s t SET ", c->qtarget);
		i = 0;
		foreach(lc, c->tracked)
		{
			const char *col = quote_identifier(lfirst(lc));

			appendStringInfo(&sql, "%s%s = CASE WHEN COALESCE(", i++ ? ", " : "", col);
			append_flow_seq_cmp(&sql, f, psprintf("st.%s", col), "<", tcast);
			appendStringInfo(&sql, ", st.%s IS NULL) THEN NULL ELSE t.%s END", col, col);
		}
		appendStringInfo(&sql, " FROM %s st WHERE ", c->qstate);
		append_keys_match(&sql, f, "st", "t");
		appendStringInfoString(&sql, " AND ");
		append_flow_seq_cmp(&sql, f, "st.__autocdc_upsert_seq", ">=", tcast);
		appendStringInfoString(&sql, " RETURNING 1)");
	}
	appendStringInfo(&sql, ", su AS (UPDATE %s st SET __autocdc_deleted_at = "
					 "CASE WHEN st.__autocdc_deleted_at IS NULL AND ", c->qstate);
	append_flow_seq_cmp(&sql, f, "st.__autocdc_upsert_seq", "<", tcast);
	appendStringInfoString(&sql, " THEN pg_catalog.now() ELSE st.__autocdc_deleted_at END");
	foreach(lc, c->tracked)
	{
		const char *col = quote_identifier(lfirst(lc));

		appendStringInfo(&sql, ", %s = CASE WHEN COALESCE(", col);
		append_flow_seq_cmp(&sql, f, psprintf("st.%s", col), "<", tcast);
		appendStringInfo(&sql, ", false) THEN NULL ELSE st.%s END", col);
	}
	appendStringInfoString(&sql, " WHERE (st.__autocdc_deleted_at IS NULL AND ");
	append_flow_seq_cmp(&sql, f, "st.__autocdc_upsert_seq", "<", tcast);
	appendStringInfoChar(&sql, ')');
	foreach(lc, c->tracked)
	{
		appendStringInfoString(&sql, " OR ");
		append_flow_seq_cmp(&sql, f, psprintf("st.%s", quote_identifier(lfirst(lc))), "<", tcast);
	}
	/* Data-modifying CTEs run to completion whether or not they are read. */
	appendStringInfoString(&sql, " RETURNING 1) SELECT pg_catalog.count(*) FROM del");

	spi_exec(sql.data, 1, argtypes, values, NULL, false);
	return spi_int64(0, 1);
}

/*
 * Tombstones older than the target's retention (its tombstone_retention,
 * else autocdc.tombstone_retention) are forgotten.
 */
static void
purge_tombstones(FlowDef *f, Scd1Cols *c)
{
	Oid			argtypes[1] = {FLOAT8OID};
	Datum		values[1] = {Float8GetDatum(f->tombstone_retention_s)};

	if (f->tombstone_retention_s < 0)
		return;
	spi_exec(psprintf("DELETE FROM %s WHERE __autocdc_deleted_at OPERATOR(pg_catalog.<) "
					  "(pg_catalog.now() OPERATOR(pg_catalog.-) pg_catalog.make_interval(secs => $1))",
					  c->qstate),
			 1, argtypes, values, NULL, false);
}

/*
 * Applies the flow's new events to its SCD 1 target.  Runs as the flow's
 * owner; the caller provides the transaction boundaries.  Returns the
 * target's truncate mark after the run (NULL if there is none).
 */
char *
scd1_apply(FlowDef *f, ReadParams *p, FlowCounts *counts)
{
	Scd1Cols	c;
	StringInfoData events,
				checks,
				apply;
	ListCell   *lc;
	char	   *new_t;
	bool		truncated;
	bool		batched;

	memset(&c, 0, sizeof(c));
	c.seqtype = type_qualified_name(f->seq_type);
	c.qtarget = rel_qualified_name(f->target);
	c.qstate = rel_qualified_name(f->state);
	c.tracked = f->state_partial;
	foreach(lc, f->columns)
		if (!list_has_string(c.tracked, lfirst(lc)))
			c.plain = lappend(c.plain, lfirst(lc));

	/* first: reading the events checks that the flow's columns still exist */
	initStringInfo(&events);
	read_append_events(&events, f, p);
	batched = scd1_batch_eligible(f, p);
	if (batched && !scd1_batch_fold(f, p, events.data, counts))
		batched = false;		/* the SQL fold takes the batch */
	batch_release();
	if (batched)
	{
		/* a batch with a truncate is the SQL fold's: the mark stays */
		new_t = p->truncate_seq;
		truncated = false;
	}
	else
	{
		initStringInfo(&checks);
		append_checks(&checks, f, &c);
		initStringInfo(&apply);
		append_apply(&apply, f, &c);
		validate_and_apply(f, p, events.data, checks.data, apply.data, counts);
		new_t = spi_value_canonical(0, 6);
		truncated = spi_bool(0, 7);
	}

	if (truncated)
		counts->deleted += apply_truncate(f, &c, new_t);
	purge_tombstones(f, &c);
	return new_t;
}
