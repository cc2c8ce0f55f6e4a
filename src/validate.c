/*-------------------------------------------------------------------------
 * validate.c
 *	  Bad input (doc/design.md §2.11): the checks every fold runs on a
 *	  run's events before applying any, and the error that names flow, key
 *	  and sequence.  Also the SQL helpers the folds share.
 *-------------------------------------------------------------------------
 */
#include "validate.h"

#include "executor/spi.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"

Oid
target_type(FlowDef *f, const char *col)
{
	return get_atttype(f->target, get_attnum(f->target, col));
}

/* "a.k1 = b.k1 AND ...", with each key type's own equality operator. */
void
append_keys_match(StringInfo sql, FlowDef *f, const char *a, const char *b)
{
	ListCell   *lc;
	bool		first = true;

	foreach(lc, f->keys)
	{
		const char *k = quote_identifier(lfirst(lc));

		if (!first)
			appendStringInfoString(sql, " AND ");
		append_seq_cmp(sql, psprintf("%s.%s", a, k), "=",
					   psprintf("%s.%s", b, k), target_type(f, lfirst(lc)));
		first = false;
	}
}

/* "a <op> b" on two values of the flow's sequence type. */
void
append_flow_seq_cmp(StringInfo sql, FlowDef *f, const char *a, const char *op,
					const char *b)
{
	append_seq_cmp(sql, a, op, b, f->seq_type);
}

/* "a.k1, a.k2" */
char *
validate_prefixed_keys(FlowDef *f, const char *a)
{
	StringInfoData buf;

	initStringInfo(&buf);
	append_column_list(&buf, f->keys, a);
	return buf.data;
}

/* The key of event row "e" as text, NULLs spelled out, for messages. */
char *
validate_keytext(FlowDef *f)
{
	StringInfoData keytext;
	ListCell   *lc;

	initStringInfo(&keytext);
	appendStringInfoString(&keytext, "pg_catalog.concat_ws(', '");
	foreach(lc, f->keys)
		appendStringInfo(&keytext, ", COALESCE(e.%s::pg_catalog.text, 'NULL')",
						 quote_identifier(lfirst(lc)));
	appendStringInfoChar(&keytext, ')');
	return keytext.data;
}

/*
 * Appends "(<check 1>) UNION ALL (<2>) UNION ALL (<3>)" over the events
 * "ev", each check yielding (priority, problem, key, sequence).  A fold appends
 * its checks against what it applied before, then " ORDER BY 1 LIMIT 1".
 * Two events at one key and sequence conflict when their kinds differ or,
 * for upserts, their values do (a delete's other columns do not matter).
 */
void
validate_append_batch_checks(StringInfo sql, FlowDef *f, const char *keytext)
{
	ListCell   *lc;
	StringInfoData keys;

	initStringInfo(&keys);
	append_column_list(&keys, f->keys, NULL);

	appendStringInfo(sql,
					 "(SELECT 1, 'null_sequence', %s, NULL::pg_catalog.text FROM ev e "
					 "   WHERE e.__autocdc_seq IS NULL LIMIT 1)"
					 " UNION ALL (SELECT 2, 'null_key', %s, e.__autocdc_seq::pg_catalog.text FROM ev e "
					 "   WHERE e.__autocdc_kind OPERATOR(pg_catalog.<>) 't' AND (false",
					 keytext, keytext);
	foreach(lc, f->keys)
		appendStringInfo(sql, " OR e.%s IS NULL", quote_identifier(lfirst(lc)));
	/*
	 * Conflicts: first the (key, sequence) pairs read more than once, by
	 * hashing, then only their rows compared as text; comparing every row
	 * would cost a sort of all of them.
	 */
	appendStringInfo(sql,
					 ") LIMIT 1)"
					 " UNION ALL (SELECT 3, 'conflict', %s, e.__autocdc_seq::pg_catalog.text FROM ev e "
					 "   JOIN (SELECT %s, __autocdc_seq FROM ev "
					 "          WHERE __autocdc_kind OPERATOR(pg_catalog.<>) 't' "
					 "          GROUP BY %s, __autocdc_seq HAVING pg_catalog.count(*) OPERATOR(pg_catalog.>) 1) d ON ",
					 keytext, keys.data, keys.data);
	append_keys_match(sql, f, "d", "e");
	appendStringInfoString(sql, " AND ");
	append_seq_cmp(sql, "d.__autocdc_seq", "=", "e.__autocdc_seq", f->seq_type);
	appendStringInfo(sql,
					 "   WHERE e.__autocdc_kind OPERATOR(pg_catalog.<>) 't' "
					 "   GROUP BY %s, e.__autocdc_seq "
					 "   HAVING pg_catalog.count(DISTINCT ROW(e.__autocdc_kind, "
					 "            CASE WHEN e.__autocdc_kind OPERATOR(pg_catalog.=) 'u' THEN ROW(NULL",
					 validate_prefixed_keys(f, "e"));
	foreach(lc, f->columns)
		appendStringInfo(sql, ", e.%s", quote_identifier(lfirst(lc)));
	appendStringInfoString(sql, ")::pg_catalog.text END)::pg_catalog.text) OPERATOR(pg_catalog.>) 1 LIMIT 1)");
}

/*
 * Raises the error for the bad event whose problem, key and sequence are
 * the result's columns col, col + 1 and col + 2.
 */
static void
validate_report(FlowDef *f, int col)
{
	char	   *problem = spi_value(0, col);
	char	   *key = spi_value(0, col + 1);
	char	   *seq = spi_value(0, col + 2);
	StringInfoData keys;

	initStringInfo(&keys);
	append_column_list(&keys, f->keys, NULL);
	if (strcmp(problem, "null_sequence") == 0)
		ereport(ERROR,
				(errcode(ERRCODE_NOT_NULL_VIOLATION),
				 errmsg("flow \"%s\": event for key (%s)=(%s) has a NULL sequence",
						f->name, keys.data, key),
				 errdetail("sequence_by is %s.", f->sequence_by),
				 errhint("Every change row needs a sequence; nothing of this flow was applied in this run.")));
	if (strcmp(problem, "null_key") == 0)
		ereport(ERROR,
				(errcode(ERRCODE_NOT_NULL_VIOLATION),
				 errmsg("flow \"%s\": event at sequence %s has a NULL key (%s)=(%s)",
						f->name, seq, keys.data, key),
				 errhint("Upserts and deletes need a key; nothing of this flow was applied in this run.")));
	/* SCD 1 compares a replayed upsert with the row it made (see scd1.c) */
	if (strcmp(problem, "conflict_target") == 0)
		ereport(ERROR,
				(errcode(ERRCODE_UNIQUE_VIOLATION),
				 errmsg("flow \"%s\": two different events for key (%s)=(%s) at sequence %s",
						f->name, keys.data, key, seq),
				 errdetail("A row read in this run differs from the target's row for the key, which an earlier run made from an upsert at that sequence: either the two events differ, or the row was changed by hand."),
				 errhint("Give every change of a key its own sequence, e.g. sequence_by => 'ROW(ts, id)'; if the row was changed by hand, rebuild the target with SELECT * FROM autocdc.run(%s, full_refresh => true). Nothing of this flow was applied in this run.",
						 quote_literal_cstr(f->pipeline))));
	ereport(ERROR,
			(errcode(ERRCODE_UNIQUE_VIOLATION),
			 errmsg("flow \"%s\": two different events for key (%s)=(%s) at sequence %s",
					f->name, keys.data, key, seq),
			 errdetail(strcmp(problem, "conflict") == 0
					   ? "The rows read in this run disagree."
					   : "A row read in this run disagrees with the event an earlier run applied."),
			 errhint("Give every change of a key its own sequence, e.g. sequence_by => 'ROW(ts, id)'; nothing of this flow was applied in this run.")));
}


/*
 * Runs a fold's checks and its apply as one statement, so that the events
 * (read_append_events) are read and materialized once.  Both are written
 * against the events "ev": the checks as a query yielding the first problem, the apply as
 * the CTEs after ev and a final SELECT whose first four columns are the
 * counts.  The checks see all events; the apply sees none when they found
 * a problem, so nothing is applied before the error is raised (the
 * statement's other writes are rolled back with it).  The apply's result
 * stays in SPI_tuptable.
 */
void
validate_and_apply(FlowDef *f, ReadParams *p, const char *events,
				   const char *checks, const char *apply, FlowCounts *counts)
{
	Oid			types[READ_NPARAMS];
	Datum		values[READ_NPARAMS];
	char		nulls[READ_NPARAMS];
	StringInfoData sql;
	int			natts;

	initStringInfo(&sql);
	appendStringInfo(&sql,
					 "WITH __autocdc_ev_raw AS MATERIALIZED (%s), __autocdc_problem (priority, problem, key, seq) AS MATERIALIZED ("
					 "WITH ev AS NOT MATERIALIZED (SELECT * FROM __autocdc_ev_raw) %s), "
					 "ev AS NOT MATERIALIZED (SELECT * FROM __autocdc_ev_raw "
					 "  WHERE NOT EXISTS (SELECT FROM __autocdc_problem))%s, "
					 "(SELECT problem FROM __autocdc_problem), (SELECT key FROM __autocdc_problem), "
					 "(SELECT seq FROM __autocdc_problem)",
					 events, checks, apply);

	read_params_arrays(p, types, values, nulls);
	spi_exec(sql.data, READ_NPARAMS, types, values, nulls, false);
	natts = SPI_tuptable->tupdesc->natts;
	if (spi_value(0, natts - 2) != NULL)
		validate_report(f, natts - 2);
	counts->read = spi_int64(0, 1);
	counts->upserted = spi_int64(0, 2);
	counts->deleted = spi_int64(0, 3);
	counts->skipped = spi_int64(0, 4);
}
