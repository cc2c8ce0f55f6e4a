/*-------------------------------------------------------------------------
 * dialect.c
 *	  autocdc.execute(script, pipeline): the reference system's SQL, run
 *	  statement by statement in the caller's transaction, as the caller.
 *	  Every flow is made by a call of the function API (there is no second
 *	  way into the catalog); a table with columns by CREATE TABLE.  An
 *	  error of a statement points at it in the script.
 *-------------------------------------------------------------------------
 */
#include "dialect.h"

#include "catalog/namespace.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/json.h"
#include "utils/jsonb.h"
#include "utils/lsyscache.h"
#include "utils/regproc.h"
#include "utils/tuplestore.h"

PG_FUNCTION_INFO_V1(autocdc_execute);

/* A streaming table the script declared: what its flows take from it. */
typedef struct Decl
{
	char	   *schema;
	char	   *relname;
	List	   *expects;		/* DlExpect */
	char	   *comment;		/* COMMENT, for when a flow creates it */
	char	   *retention;		/* tombstone retention, as an interval */
	int			tok;			/* where the declaring statement begins */
	bool		used;			/* a flow of the script took its expectations */
} Decl;

typedef struct Exec
{
	DlScript   *s;
	char	   *pipeline;		/* NULL: the function API's default */
	List	   *decls;
} Exec;

/* The schema and name a table name stands for (the schema it would go to). */
static void
table_key(DlScript *s, DlName *n, char **schema, char **relname)
{
	int			nparts = list_length(n->parts);

	*relname = llast(n->parts);
	if (n->live)
		*schema = pstrdup(dl_live_schema(s, n->tok));
	else if (nparts > 1)
		*schema = list_nth(n->parts, nparts - 2);
	else
	{
		Oid			relid = RelnameGetRelid(*relname);

		*schema = OidIsValid(relid) ? get_namespace_name(get_rel_namespace(relid))
			: (s->live_schema ? s->live_schema : "");
	}
}

static Decl *
find_decl(Exec *ex, DlName *n, bool add)
{
	char	   *schema,
			   *relname;
	ListCell   *lc;
	Decl	   *d;

	table_key(ex->s, n, &schema, &relname);
	foreach(lc, ex->decls)
	{
		d = lfirst(lc);
		if (strcmp(d->schema, schema) == 0 && strcmp(d->relname, relname) == 0)
			return d;
	}
	if (!add)
		return NULL;
	d = palloc0(sizeof(Decl));
	d->schema = schema;
	d->relname = relname;
	ex->decls = lappend(ex->decls, d);
	return d;
}

static Oid
table_oid(Exec *ex, DlName *n)
{
	List	   *names = stringToQualifiedNameList(dl_name_sql(ex->s, n));

	return RangeVarGetRelid(makeRangeVarFromNameList(names), NoLock, true);
}

static void
spi_exec(const char *sql, int nargs, Oid *types, Datum *values, int expect)
{
	int			rc = SPI_execute_with_args(sql, nargs, types, values, NULL, false, 0);

	if (rc != expect)
		elog(ERROR, "SPI_execute_with_args failed: %s", SPI_result_code_string(rc));
}

static void
comment_on(const char *what, const char *object, const char *comment)
{
	spi_exec(psprintf("COMMENT ON %s %s IS %s", what, object, quote_literal_cstr(comment)),
			 0, NULL, NULL, SPI_OK_UTILITY);
}

/* {"name": "condition", ...} of the expectations with one action, or NULL */
static char *
expect_map(List *expects, char action)
{
	StringInfoData buf;
	ListCell   *lc;

	initStringInfo(&buf);
	foreach(lc, expects)
	{
		DlExpect   *e = lfirst(lc);

		if (e->action != action)
			continue;
		appendStringInfoString(&buf, buf.len == 0 ? "{" : ", ");
		escape_json(&buf, e->name);
		appendStringInfoString(&buf, ": ");
		escape_json(&buf, e->cond);
	}
	if (buf.len == 0)
		return NULL;
	appendStringInfoChar(&buf, '}');
	return buf.data;
}

/*
 * The named arguments of the call that makes the flow: target, source,
 * name, the clauses', and the expectations of its declared target.
 */
List *
dl_flow_call_args(DlScript *s, DlStmt *st, List *expects, const char *retention)
{
	DlStmt		call;
	static const char actions[] = {'w', 'd', 'f'};
	static const char *const argnames[] = {"expect", "expect_or_drop", "expect_or_fail"};

	memset(&call, 0, sizeof(call));
	dl_add_arg(&call, "target", DL_TEXT, dl_name_sql(s, st->target), NIL, 0);
	if (st->source)
		dl_add_arg(&call, "source", DL_REGCLASS, dl_name_sql(s, st->source), NIL, 0);
	dl_add_arg(&call, "name", DL_TEXT,
			   st->flow_name ? st->flow_name : dl_name_last(st->target), NIL, 0);
	call.args = list_concat(call.args, st->args);
	/* append targets keep no tombstones */
	if (retention && strcmp(st->function, "create_append_flow") != 0)
		dl_add_arg(&call, "tombstone_retention", DL_INTERVAL, pstrdup(retention), NIL, 0);
	for (int i = 0; i < 3; i++)
	{
		char	   *map = expect_map(expects, actions[i]);

		if (map == NULL)
			continue;
		if (!st->into_table)
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("a snapshot flow cannot have expectations"),
					 errdetail("Its target \"%s\" declares CONSTRAINT ... EXPECT.", dl_name_last(st->target)),
					 errhint("Declare the expectations on a target no snapshot flow writes.")));
		dl_add_arg(&call, argnames[i], DL_JSONB, map, NIL, 0);
	}
	return call.args;
}

/*
 * The one table property autocdc implements: how long deleted keys are
 * remembered (the reference's pipelines.cdc.tombstoneGCThresholdInSeconds),
 * as an interval; the others are ignored, with a NOTICE.
 */
char *
dl_table_retention(DlStmt *table)
{
	char	   *retention = NULL;

	for (int i = 0; i + 1 < list_length(table->properties); i += 2)
	{
		char	   *key = list_nth(table->properties, i);
		char	   *value = list_nth(table->properties, i + 1);

		if (pg_strcasecmp(key, "pipelines.cdc.tombstoneGCThresholdInSeconds") != 0)
		{
			ereport(NOTICE,
					(errmsg("table property \"%s\" is ignored", key)));
			continue;
		}
		if (value[0] == '\0' || strspn(value, "0123456789") != strlen(value))
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("table property \"%s\" must be a whole number of seconds, not \"%s\"",
							key, value)));
		retention = psprintf("%s seconds", value);
	}
	return retention;
}

static Datum
arg_datum(DlArg *a, Oid *type)
{
	switch (a->type)
	{
		case DL_TEXT:
			*type = TEXTOID;
			return CStringGetTextDatum(a->text);
		case DL_INT:
			*type = INT4OID;
			return Int32GetDatum(a->ival);
		case DL_BOOL:
			*type = BOOLOID;
			return BoolGetDatum(a->ival != 0);
		case DL_REGCLASS:
			*type = REGCLASSOID;
			return DirectFunctionCall1(regclassin, CStringGetDatum(a->text));
		case DL_JSONB:
			*type = JSONBOID;
			return DirectFunctionCall1(jsonb_in, CStringGetDatum(a->text));
		case DL_INTERVAL:
			*type = INTERVALOID;
			return DirectFunctionCall3(interval_in, CStringGetDatum(a->text),
									   ObjectIdGetDatum(InvalidOid), Int32GetDatum(-1));
		case DL_TEXTS:
			{
				int			n = list_length(a->list);
				Datum	   *elems = palloc(Max(n, 1) * sizeof(Datum));
				ListCell   *lc;

				foreach(lc, a->list)
					elems[foreach_current_index(lc)] = CStringGetTextDatum(lfirst(lc));
				*type = TEXTARRAYOID;
				return PointerGetDatum(construct_array(elems, n, TEXTOID, -1, false, TYPALIGN_INT));
			}
	}
	return (Datum) 0;
}

/* SELECT autocdc.function(name => $1, ...) */
static void
call_function(const char *function, List *args)
{
	StringInfoData sql;
	int			n = list_length(args);
	Oid		   *types = palloc(Max(n, 1) * sizeof(Oid));
	Datum	   *values = palloc(Max(n, 1) * sizeof(Datum));
	ListCell   *lc;

	initStringInfo(&sql);
	appendStringInfo(&sql, "SELECT autocdc.%s(", function);
	foreach(lc, args)
	{
		DlArg	   *a = lfirst(lc);
		int			k = foreach_current_index(lc);

		values[k] = arg_datum(a, &types[k]);
		appendStringInfo(&sql, "%s%s => $%d", k > 0 ? ", " : "", a->name, k + 1);
	}
	appendStringInfoChar(&sql, ')');
	spi_exec(sql.data, n, types, values, SPI_OK_SELECT);
}

static void
create_flow(Exec *ex, DlStmt *st)
{
	Decl	   *d = find_decl(ex, st->target, false);
	bool		existed = OidIsValid(table_oid(ex, st->target));
	List	   *args = dl_flow_call_args(ex->s, st, d ? d->expects : NIL,
										 d ? d->retention : NULL);

	if (d)
		d->used = true;

	if (st->kind == DL_CREATE_FLOW && st->comment)
		ereport(NOTICE,
				(errmsg("the comment of flow \"%s\" is not kept", st->flow_name)));
	if (ex->pipeline)
	{
		DlStmt		extra;

		memset(&extra, 0, sizeof(extra));
		dl_add_arg(&extra, "pipeline", DL_TEXT, ex->pipeline, NIL, 0);
		args = list_concat(args, extra.args);
	}
	call_function(st->function, args);
	if (!existed && d && d->comment)
		comment_on("TABLE", dl_name_sql(ex->s, st->target), d->comment);
}

static void
create_table(Exec *ex, DlStmt *st)
{
	char	   *sqlname = dl_name_sql(ex->s, st->table);
	Oid			relid = table_oid(ex, st->table);
	Decl	   *d = find_decl(ex, st->table, true);
	ListCell   *lc;

	if (OidIsValid(relid) && !st->or_refresh)
		ereport(ERROR,
				(errcode(ERRCODE_DUPLICATE_TABLE),
				 errmsg("relation \"%s\" already exists", dl_name_last(st->table)),
				 errhint("CREATE OR REFRESH STREAMING TABLE keeps an existing table.")));
	d->expects = st->expects;
	d->tok = st->tok;
	d->used = false;
	d->comment = st->comment;
	d->retention = dl_table_retention(st);
	if (!OidIsValid(relid) && st->has_columns)
	{
		StringInfoData sql;

		initStringInfo(&sql);
		appendStringInfo(&sql, "CREATE TABLE %s (", sqlname);
		foreach(lc, st->elements)
			appendStringInfo(&sql, "%s%s", foreach_current_index(lc) > 0 ? ", " : "",
							 (char *) lfirst(lc));
		appendStringInfoChar(&sql, ')');
		spi_exec(sql.data, 0, NULL, NULL, SPI_OK_UTILITY);
		for (int i = 0; i + 1 < list_length(st->column_comments); i += 2)
			comment_on("COLUMN", psprintf("%s.%s", sqlname,
										  quote_identifier(list_nth(st->column_comments, i))),
					   list_nth(st->column_comments, i + 1));
		relid = table_oid(ex, st->table);
	}
	if (OidIsValid(relid) && st->comment)
		comment_on("TABLE", sqlname, st->comment);
	if (st->function)
		create_flow(ex, st);
}

static void
drop_flow(Exec *ex, DlStmt *st)
{
	Oid			type = TEXTOID;
	Datum		value = CStringGetTextDatum(st->flow_name);

	if (st->if_exists)
	{
		spi_exec("SELECT 1 FROM autocdc.flows WHERE name OPERATOR(pg_catalog.=) $1",
				 1, &type, &value, SPI_OK_SELECT);
		if (SPI_processed == 0)
		{
			ereport(NOTICE,
					(errmsg("flow \"%s\" does not exist, skipping", st->flow_name)));
			return;
		}
	}
	spi_exec("SELECT autocdc.drop_flow($1)", 1, &type, &value, SPI_OK_SELECT);
}

/* REFRESH STREAMING TABLE t [FULL]: run() of the flows into t */
static void
refresh(Exec *ex, DlStmt *st)
{
	Oid			types[2] = {REGCLASSOID, BOOLOID};
	Datum		values[2];
	bool		isnull;
	StringInfoData detail;
	char	   *name = dl_name_last(st->table);

	values[0] = DirectFunctionCall1(regclassin, CStringGetDatum(dl_name_sql(ex->s, st->table)));
	values[1] = BoolGetDatum(st->full);
	spi_exec("SELECT pg_catalog.array_agg(name ORDER BY name) FROM autocdc.flows "
			 "WHERE target OPERATOR(pg_catalog.=) $1", 1, types, values, SPI_OK_SELECT);
	values[0] = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull);
	if (isnull)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("streaming table \"%s\" has no flows", name),
				 errhint("The view autocdc.flows lists your flows and their targets.")));
	values[0] = PointerGetDatum(DatumGetArrayTypePCopy(values[0]));
	types[0] = TEXTARRAYOID;
	spi_exec("SELECT flow, error FROM autocdc.run(flows => $1, full_refresh => $2) "
			 "WHERE status OPERATOR(pg_catalog.=) 'failed'", 2, types, values, SPI_OK_SELECT);
	if (SPI_processed == 0)
		return;
	initStringInfo(&detail);
	for (uint64 i = 0; i < SPI_processed; i++)
	{
		char	   *flow = SPI_getvalue(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 1);
		char	   *error = SPI_getvalue(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 2);
		char	   *named = psprintf("flow \"%s\"", flow);

		/* most errors of a run name their flow already */
		appendStringInfo(&detail, "%s%s%s", i > 0 ? "\n" : "",
						 strncmp(error, named, strlen(named)) == 0 ? "" : psprintf("%s: ", named),
						 error);
	}
	ereport(ERROR,
			(errcode(ERRCODE_TRIGGERED_ACTION_EXCEPTION),
			 errmsg("refresh of streaming table \"%s\" failed", name),
			 errdetail_internal("%s", detail.data)));
}

static const char *
run_statement(Exec *ex, DlStmt *st)
{
	switch (st->kind)
	{
		case DL_CREATE_TABLE:
			create_table(ex, st);
			return "CREATE STREAMING TABLE";
		case DL_CREATE_FLOW:
			create_flow(ex, st);
			return "CREATE FLOW";
		case DL_DROP_FLOW:
			drop_flow(ex, st);
			return "DROP FLOW";
		case DL_REFRESH:
			refresh(ex, st);
			return "REFRESH STREAMING TABLE";
	}
	return NULL;
}

/*
 * Expectations declared on a streaming table go to the flows the script
 * makes into it: declared for none, they would be silently not enforced.
 */
static void
refuse_unused_expectations(Exec *ex)
{
	ListCell   *lc;

	foreach(lc, ex->decls)
	{
		Decl	   *d = lfirst(lc);

		if (d->expects == NIL || d->used)
			continue;
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("the expectations of streaming table \"%s\" apply to no flow", d->relname),
				 errdetail("CONSTRAINT ... EXPECT applies to the flows the same script makes into the table."),
				 errhint("Make the table's flows in the same script, or add the expectations to existing flows with autocdc.add_expectation()."),
				 internalerrquery(ex->s->orig),
				 internalerrposition(dl_orig_cursor(ex->s, ex->s->toks[d->tok].start))));
	}
}

/*
 * Runs a statement; an error that does not point into the script yet is
 * given the statement's position (and loses the context lines of the
 * internal call, which are not what the user wrote).
 */
static const char *
run_at_position(Exec *ex, DlStmt *st)
{
	MemoryContext cxt = CurrentMemoryContext;
	const char *tag = NULL;

	PG_TRY();
	{
		tag = run_statement(ex, st);
	}
	PG_CATCH();
	{
		ErrorData  *ed;

		MemoryContextSwitchTo(cxt);
		ed = CopyErrorData();
		if (ed->internalquery == NULL || strcmp(ed->internalquery, ex->s->orig) != 0)
		{
			FlushErrorState();
			ed->cursorpos = 0;
			ed->internalquery = pstrdup(ex->s->orig);
			ed->internalpos = dl_orig_cursor(ex->s, ex->s->toks[st->tok].start);
			ed->context = NULL;
			ReThrowError(ed);
		}
		PG_RE_THROW();
	}
	PG_END_TRY();
	return tag;
}

Datum
autocdc_execute(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	Exec		ex;
	List	   *stmts;
	ListCell   *lc;

	if (PG_ARGISNULL(0))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("script must not be NULL")));
	InitMaterializedSRF(fcinfo, MAT_SRF_USE_EXPECTED_DESC);
	memset(&ex, 0, sizeof(ex));
	ex.s = dl_scan(text_to_cstring(PG_GETARG_TEXT_PP(0)));
	if (!PG_ARGISNULL(1))
	{
		ex.pipeline = text_to_cstring(PG_GETARG_TEXT_PP(1));
		if (strcmp(ex.pipeline, "default") == 0)
			ex.pipeline = NULL;	/* as when the function API is not given one */
	}
	stmts = dl_parse(ex.s);

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	foreach(lc, stmts)
	{
		const char *tag = run_at_position(&ex, lfirst(lc));
		Datum		value = CStringGetTextDatum(tag);
		bool		isnull = false;

		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, &value, &isnull);
	}
	refuse_unused_expectations(&ex);
	SPI_finish();
	return (Datum) 0;
}
