/*-------------------------------------------------------------------------
 * source_read.c
 *	  Which source rows a run reads, and how a row becomes an event.
 *
 * A table source carries __autocdc_xid, the inserting transaction (PgQ's
 * way).  A run reads the rows whose transaction is visible in the run's
 * snapshot and was not in the checkpoint's.  The run's own transaction is
 * apart: its rows are visible to the run without being "committed", so the
 * checkpoint records it with the command id reached, and a later run reads
 * its rows from that command on.  The index on __autocdc_xid bounds the
 * scan below by the checkpoint's xmin: cost follows new rows, not the table.
 * Rows without a stamp are given this transaction's before (stamp.c), so
 * the whole read too takes stamped rows only: a NULL committed meanwhile
 * is read once, by the next run.
 *-------------------------------------------------------------------------
 */
#include "source_read.h"
#include "collation.h"
#include "expect.h"
#include "source_query.h"
#include "typmod_coerce.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"

void
acdc_read_params_arrays(ReadParams *p, Oid *types, Datum *values, char *nulls)
{
	char	   *vals[READ_NPARAMS] = {p->snapshot, p->prev_snapshot,
		p->prev_own_xid, p->prev_own_cid, p->own_xid, p->truncate_seq};

	for (int i = 0; i < READ_NPARAMS; i++)
	{
		types[i] = TEXTOID;
		values[i] = vals[i] ? CStringGetTextDatum(vals[i]) : (Datum) 0;
		nulls[i] = vals[i] ? ' ' : 'n';
	}
}

/*
 * The source column cast to the target column's type when they differ (to a
 * domain's base type where typmod_coerce.c brings it to the domain).
 */
static void
append_event_column(StringInfo sql, FlowDef *flow, const char *col)
{
	AttrNumber	tatt = get_attnum(flow->target, col);
	AttrNumber	satt = flow->source_query ? InvalidAttrNumber : get_attnum(flow->source, col);
	Oid			ttype;

	if (tatt == InvalidAttrNumber)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_COLUMN),
				 errmsg("target \"%s\" of flow \"%s\" has no column \"%s\" any more",
						get_rel_name(flow->target), flow->name, col),
				 errhint("Add the column back, or drop and re-create the flow.")));
	if (satt == InvalidAttrNumber && !flow->source_query)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_COLUMN),
				 errmsg("source \"%s\" of flow \"%s\" has no column \"%s\" any more",
						get_rel_name(flow->source), flow->name, col),
				 errhint("Add the column back, or drop and re-create the flow.")));
	ttype = get_atttype(flow->target, tatt);
	appendStringInfo(sql, "%s.%s", SRC_ALIAS, quote_identifier(col));
	/* a query's result types are known to its analysis only: cast always */
	if (flow->source_query || get_atttype(flow->source, satt) != ttype)
		appendStringInfo(sql, "::%s", format_type_be_qualified(acdc_typmod_cast_type(ttype)));
	appendStringInfo(sql, " AS %s, ", quote_identifier(col));
}

/*
 * With columns_to_update, after the columns: per column whether the event
 * sets it (a NULL list sets every column; names match as stored, in "C"),
 * then the first name of the list that is no key, written column or the
 * list itself (NULL if none; NULL elements name nothing).
 */
static void
append_columns_to_update(StringInfo sql, FlowDef *flow)
{
	char	   *arr = psprintf("%s.%s::pg_catalog.text[]", SRC_ALIAS,
							   quote_identifier(flow->columns_to_update));
	StringInfoData known;
	ListCell   *lc;

	if (!flow->source_query && get_attnum(flow->source, flow->columns_to_update) == InvalidAttrNumber)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_COLUMN),
				 errmsg("source \"%s\" of flow \"%s\" has no column \"%s\" any more",
						get_rel_name(flow->source), flow->name, flow->columns_to_update),
				 errhint("Add the column back, or drop and re-create the flow.")));
	foreach(lc, flow->columns)
		appendStringInfo(sql, ", (%s IS NULL OR COALESCE(%s COLLATE pg_catalog.\"C\" "
						 "OPERATOR(pg_catalog.=) ANY (%s), false)) AS __autocdc_set%d",
						 arr, quote_literal_cstr(lfirst(lc)), arr, foreach_current_index(lc));
	initStringInfo(&known);
	appendStringInfo(&known, "ARRAY[%s", quote_literal_cstr(flow->columns_to_update));
	foreach(lc, list_concat_copy(flow->keys, flow->columns))
		appendStringInfo(&known, ", %s", quote_literal_cstr(lfirst(lc)));
	appendStringInfoString(&known, "]::pg_catalog.text[] COLLATE pg_catalog.\"C\"");
	/* the containment test in C first: the subquery runs for bad rows only */
	appendStringInfo(sql, ", CASE WHEN %s IS NULL OR %s OPERATOR(pg_catalog.<@) %s THEN NULL "
					 "ELSE (SELECT u.u FROM pg_catalog.unnest(%s) AS u(u) "
					 "WHERE u.u COLLATE pg_catalog.\"C\" OPERATOR(pg_catalog.<>) ALL (%s) LIMIT 1) "
					 "END AS __autocdc_unknown",
					 arr, arr, known.data, arr, known.data);
}

/*
 * Appends "SELECT <keys>, __autocdc_seq, __autocdc_kind, <columns> FROM
 * source WHERE <new rows>" (with columns_to_update, the columns are followed
 * by what append_columns_to_update adds): one event per row read.  The kind is 't'
 * (truncate), 'd' (delete) or 'u' (upsert); a NULL condition is false.
 */
void
acdc_read_append_events(StringInfo sql, FlowDef *flow, ReadParams *p)
{
	ListCell   *lc;

	if (p->events_sql)
	{
		appendStringInfoString(sql, p->events_sql);
		return;
	}

	appendStringInfoString(sql, "SELECT ");
	foreach(lc, flow->keys)
		append_event_column(sql, flow, lfirst(lc));
	/* ordered in the collation the target's columns keep it in (collation.c) */
	appendStringInfo(sql, "(%s)", flow->sequence_by);
	if (type_is_collatable(flow->seq_type))
		acdc_append_collate(sql, acdc_state_seq_collation(flow->state, flow->scd_type));
	appendStringInfoString(sql, " AS __autocdc_seq, ");
	if (flow->truncates || flow->deletes)
	{
		appendStringInfoString(sql, "CASE ");
		if (flow->truncates)
			appendStringInfo(sql, "WHEN (%s) THEN 't' ", flow->truncates);
		if (flow->deletes)
			appendStringInfo(sql, "WHEN (%s) THEN 'd' ", flow->deletes);
		appendStringInfoString(sql, "ELSE 'u' END AS __autocdc_kind");
	}
	else
		appendStringInfoString(sql, "'u'::pg_catalog.text AS __autocdc_kind");
	foreach(lc, flow->columns)
	{
		appendStringInfoString(sql, ", ");
		append_event_column(sql, flow, lfirst(lc));
		sql->len -= 2;			/* drop the trailing ", " */
		sql->data[sql->len] = '\0';
	}
	if (flow->columns_to_update)
		append_columns_to_update(sql, flow);
	acdc_expect_append_columns(sql, flow);
	acdc_read_append_from(sql, flow, p);
}

/* A table source read incrementally must still have its stamp column. */
void
acdc_read_require_xid_column(FlowDef *flow)
{
	if (get_attnum(flow->source, AUTOCDC_XID_COLUMN) == InvalidAttrNumber)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("source \"%s\" of flow \"%s\" lost its column %s",
						get_rel_name(flow->source), flow->name, AUTOCDC_XID_COLUMN),
				 errdetail("autocdc reads a table source by the transaction recorded in that column."),
				 errhint("Add it back with ALTER TABLE %s ADD COLUMN %s xid8 DEFAULT autocdc._stamp(), and its trigger if it went with it (%s), then run the pipeline with full_refresh => true.",
						 acdc_rel_qualified_name(flow->source), AUTOCDC_XID_COLUMN,
						 acdc_stamp_trigger_sql(acdc_rel_qualified_name(flow->source)))));
}

/*
 * Appends " FROM source AS __autocdc_src WHERE <the rows this run reads>"
 * (doc/design.md §4.2; see the header comment).
 */
/*
 * The condition on a table source's rows (alias SRC_ALIAS) that selects
 * the rows this run reads (doc/design.md §4.2; see the header comment).
 */
static char *
read_window(FlowDef *flow, ReadParams *p)
{
	const char *x = SRC_ALIAS "." AUTOCDC_XID_COLUMN;

	acdc_read_require_xid_column(flow);
	if (p->whole || p->prev_snapshot == NULL)
		return psprintf("(pg_catalog.pg_visible_in_snapshot(%s, $1::pg_catalog.pg_snapshot)"
						" OR COALESCE(%s OPERATOR(pg_catalog.=) $5::pg_catalog.xid8, false))",
						x, x);
	return psprintf("%s OPERATOR(pg_catalog.>=) pg_catalog.pg_snapshot_xmin($2::pg_catalog.pg_snapshot)"
					" AND (pg_catalog.pg_visible_in_snapshot(%s, $1::pg_catalog.pg_snapshot)"
					"      OR COALESCE(%s OPERATOR(pg_catalog.=) $5::pg_catalog.xid8, false))"
					" AND NOT (pg_catalog.pg_visible_in_snapshot(%s, $2::pg_catalog.pg_snapshot)"
					"      OR COALESCE(%s OPERATOR(pg_catalog.=) $3::pg_catalog.xid8"
					"                  AND %s.cmin::pg_catalog.text::pg_catalog.int8 OPERATOR(pg_catalog.<) $4::pg_catalog.int8, false))",
					x, x, x, x, x, SRC_ALIAS);
}

/*
 * Appends " FROM source AS __autocdc_src WHERE <the rows this run reads>";
 * over a source query, " FROM (query over the stream's rows this run
 * reads) AS __autocdc_src" (source_query.c).
 */
void
acdc_read_append_from(StringInfo sql, FlowDef *flow, ReadParams *p)
{
	if (flow->source_query)
	{
		appendStringInfo(sql, " FROM %s AS %s",
						 acdc_sq_from(flow->source, flow->source_query,
									  flow->incremental ? read_window(flow, p) : NULL,
									  InvalidOid, NULL, NULL),
						 SRC_ALIAS);
		return;
	}
	appendStringInfo(sql, " FROM %s AS %s", acdc_rel_qualified_name(flow->source),
					 SRC_ALIAS);

	if (!flow->incremental)
		return;					/* views and foreign tables: read whole */
	appendStringInfo(sql, " WHERE %s", read_window(flow, p));
}

/*
 * Runs a statement that reads events with the run's parameters, its rows
 * going to dest as they come (nothing is materialized).
 */
void
acdc_read_execute(const char *sql, ReadParams *p, DestReceiver *dest)
{
	SPIPlanPtr	plan;
	SPIExecuteOptions opts;
	Oid			types[READ_NPARAMS];
	Datum		values[READ_NPARAMS];
	char		nulls[READ_NPARAMS];
	ParamListInfo params;
	int			rc;

	acdc_read_params_arrays(p, types, values, nulls);
	params = makeParamList(READ_NPARAMS);
	for (int i = 0; i < READ_NPARAMS; i++)
	{
		params->params[i].value = values[i];
		params->params[i].isnull = nulls[i] == 'n';
		params->params[i].pflags = PARAM_FLAG_CONST;
		params->params[i].ptype = types[i];
	}
	elog(DEBUG2, "autocdc: %s", sql);
	plan = SPI_prepare(sql, READ_NPARAMS, types);
	if (plan == NULL)
		elog(ERROR, "autocdc: SPI_prepare failed (%s) for: %s",
			 SPI_result_code_string(SPI_result), sql);
	memset(&opts, 0, sizeof(opts));
	opts.params = params;
	opts.read_only = false;	/* a read-only call would not see this run's earlier writes */
	opts.dest = dest;
	rc = SPI_execute_plan_extended(plan, &opts);
	if (rc < 0)
		elog(ERROR, "autocdc: SPI failed (%s) for: %s", SPI_result_code_string(rc), sql);
	SPI_freeplan(plan);
}
