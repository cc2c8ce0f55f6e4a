/*-------------------------------------------------------------------------
 * dialect_ddl.c
 *	  autocdc.flow_ddl(name): a flow as the CREATE FLOW text that makes it
 *	  again, from the arguments it was made with (autocdc.flow.options).
 *	  The text is checked by parsing it back: when it would not give the
 *	  same arguments (a source function, start_from, an expression the
 *	  dialect would read otherwise, ...), the function-API call is
 *	  returned instead, which always does.
 *-------------------------------------------------------------------------
 */
#include "dialect.h"

#include "access/xact.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "parser/gramparse.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/jsonb.h"
#include "utils/memutils.h"
#include "utils/regproc.h"
#include "utils/resowner.h"

PG_FUNCTION_INFO_V1(autocdc_flow_ddl);

static DlArg *
find_arg(List *args, const char *name)
{
	ListCell   *lc;

	foreach(lc, args)
	{
		DlArg	   *a = lfirst(lc);

		if (strcmp(a->name, name) == 0)
			return a;
	}
	return NULL;
}

static List *
datum_to_list(Datum d)
{
	ArrayType  *arr = DatumGetArrayTypeP(d);
	Datum	   *elems;
	bool	   *nulls;
	int			n;
	List	   *l = NIL;

	deconstruct_array(arr, TEXTOID, -1, false, TYPALIGN_INT, &elems, &nulls, &n);
	for (int i = 0; i < n; i++)
		l = lappend(l, nulls[i] ? NULL : TextDatumGetCString(elems[i]));
	return l;
}

/* The flow's non-null options as arguments; its kind; false if not found. */
static bool
load_options(const char *flow, char **kind, bool *by_function, List **opts)
{
	Oid			type = TEXTOID;
	Datum		value = CStringGetTextDatum(flow);

	if (SPI_execute_with_args("SELECT f.kind, f.source_function IS NOT NULL, o.key, "
							  "  pg_catalog.jsonb_typeof(o.value), o.value OPERATOR(pg_catalog.#>>) '{}', "
							  "  CASE WHEN pg_catalog.jsonb_typeof(o.value) OPERATOR(pg_catalog.=) 'array' "
							  "  THEN ARRAY(SELECT pg_catalog.jsonb_array_elements_text(o.value)) END "
							  "FROM autocdc.flows f, pg_catalog.jsonb_each(f.options) o "
							  "WHERE f.name OPERATOR(pg_catalog.=) $1",
							  1, &type, &value, NULL, true, 0) != SPI_OK_SELECT)
		elog(ERROR, "SPI_execute_with_args failed");
	*opts = NIL;
	for (uint64 i = 0; i < SPI_processed; i++)
	{
		HeapTuple	tup = SPI_tuptable->vals[i];
		TupleDesc	desc = SPI_tuptable->tupdesc;
		char	   *jtype = SPI_getvalue(tup, desc, 4);
		DlArg	   *a;
		bool		isnull;

		*kind = SPI_getvalue(tup, desc, 1);
		*by_function = DatumGetBool(SPI_getbinval(tup, desc, 2, &isnull));
		if (strcmp(jtype, "null") == 0)
			continue;
		a = palloc0(sizeof(DlArg));
		a->name = SPI_getvalue(tup, desc, 3);
		a->text = SPI_getvalue(tup, desc, 5);
		if (strcmp(jtype, "number") == 0)
		{
			a->type = DL_INT;
			a->ival = atoi(a->text);
		}
		else if (strcmp(jtype, "boolean") == 0)
		{
			a->type = DL_BOOL;
			a->ival = strcmp(a->text, "true") == 0;
		}
		else if (strcmp(jtype, "array") == 0)
		{
			a->type = DL_TEXTS;
			a->list = datum_to_list(SPI_getbinval(tup, desc, 6, &isnull));
		}
		else
			a->type = strcmp(jtype, "object") == 0 ? DL_JSONB : DL_TEXT;
		*opts = lappend(*opts, a);
	}
	return SPI_processed > 0;
}

static const char *
function_of(const char *kind)
{
	if (strcmp(kind, "snapshot") == 0)
		return "create_auto_cdc_from_snapshot_flow";
	if (strcmp(kind, "append") == 0)
		return "create_append_flow";
	return "create_auto_cdc_flow";
}

static void
append_value(StringInfo buf, DlArg *a)
{
	ListCell   *lc;

	switch (a->type)
	{
		case DL_INT:
		case DL_BOOL:
			appendStringInfoString(buf, a->text);
			break;
		case DL_TEXTS:
			if (a->list == NIL)
			{
				appendStringInfoString(buf, "ARRAY[]::text[]");
				break;
			}
			appendStringInfoString(buf, "ARRAY[");
			foreach(lc, a->list)
				appendStringInfo(buf, "%s%s", foreach_current_index(lc) > 0 ? ", " : "",
								 quote_literal_cstr(lfirst(lc)));
			appendStringInfoChar(buf, ']');
			break;
		default:
			appendStringInfoString(buf, quote_literal_cstr(a->text));
	}
}

/* SELECT autocdc.create_..._flow(name => ..., ...), in the signature's order */
static char *
function_call_text(const char *flow, const char *kind, List *opts)
{
	StringInfoData buf;
	Oid			type = TEXTOID;
	Datum		value = CStringGetTextDatum(function_of(kind));
	bool		isnull;
	List	   *argnames;
	ListCell   *lc;
	bool		first = true;

	/* create_auto_cdc_flow's int overload (its text one has the arguments in another order) */
	if (SPI_execute_with_args("SELECT p.proargnames FROM pg_catalog.pg_proc p "
							  "WHERE p.pronamespace OPERATOR(pg_catalog.=) 'autocdc'::pg_catalog.regnamespace "
							  "AND p.proname OPERATOR(pg_catalog.=) $1 "
							  "AND p.prosrc OPERATOR(pg_catalog.!~~) '%\\_text'",
							  1, &type, &value, NULL, true, 0) != SPI_OK_SELECT || SPI_processed != 1)
		elog(ERROR, "function autocdc.%s not found", function_of(kind));
	argnames = datum_to_list(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));

	initStringInfo(&buf);
	appendStringInfo(&buf, "SELECT autocdc.%s(", function_of(kind));
	foreach(lc, argnames)
	{
		char	   *argname = lfirst(lc);
		DlArg	   *a = find_arg(opts, argname);
		DlArg		named;

		if (strcmp(argname, "name") == 0)
		{
			memset(&named, 0, sizeof(named));
			named.type = DL_TEXT;
			named.text = (char *) flow;
			a = &named;
		}
		/* the default bad-input rule goes without saying */
		if (a == NULL || (strcmp(argname, "on_bad_event") == 0 && a->text &&
						  strcmp(a->text, "fail") == 0))
			continue;
		appendStringInfo(&buf, "%s\n    %s => ", first ? "" : ",", argname);
		append_value(&buf, a);
		first = false;
	}
	appendStringInfoString(&buf, ");");
	return buf.data;
}

static char *
backticked(const char *name)
{
	StringInfoData buf;

	initStringInfo(&buf);
	appendStringInfoChar(&buf, '`');
	for (const char *p = name; *p; p++)
	{
		if (*p == '`')
			appendStringInfoChar(&buf, '`');
		appendStringInfoChar(&buf, *p);
	}
	appendStringInfoChar(&buf, '`');
	return buf.data;
}

/* An identifier as the dialect writes it: `name` when it needs quotes. */
static char *
dialect_ident(const char *name)
{
	if (strcmp(quote_identifier(name), name) == 0 && strcmp(name, "live") != 0)
		return pstrdup(name);
	return backticked(name);
}

/* A qualified name's text in the dialect, or NULL when not in canonical form. */
static char *
dialect_name(const char *text)
{
	List	   *parts = stringToQualifiedNameList(text);
	StringInfoData canon,
				out;
	ListCell   *lc;

	initStringInfo(&canon);
	initStringInfo(&out);
	foreach(lc, parts)
	{
		char	   *part = strVal(lfirst(lc));
		const char *sep = foreach_current_index(lc) > 0 ? "." : "";

		appendStringInfo(&canon, "%s%s", sep, quote_identifier(part));
		appendStringInfo(&out, "%s%s", sep, dialect_ident(part));
	}
	return strcmp(canon.data, text) == 0 ? out.data : NULL;
}

static char *
dialect_list(List *names)
{
	StringInfoData buf;
	ListCell   *lc;

	initStringInfo(&buf);
	appendStringInfoChar(&buf, '(');
	foreach(lc, names)
		appendStringInfo(&buf, "%s%s", foreach_current_index(lc) > 0 ? ", " : "",
						 dialect_ident(lfirst(lc)));
	appendStringInfoChar(&buf, ')');
	return buf.data;
}

/*
 * PostgreSQL text in the dialect: quoted identifiers in backticks,
 * backslashes of standard strings doubled, timestamp in a cast as
 * TIMESTAMP_NTZ.  (What this misses, the check after catches.)
 */
static char *
dialect_text(const char *pg)
{
	DlScript   *s = dl_scan_pg(pg);
	StringInfoData out;
	bool		type_next = false;

	initStringInfo(&out);
	for (int i = 0; i + 1 < s->ntoks; i++)
	{
		DlTok	   *t = &s->toks[i];
		char		c = s->text[t->start];

		if (i > 0)
			appendBinaryStringInfo(&out, s->text + s->toks[i - 1].end,
								   t->start - s->toks[i - 1].end);
		if (t->type == IDENT && c == '"')
			appendStringInfoString(&out, backticked(t->str));
		else if (t->type == SCONST && c == '\'')
		{
			for (int k = t->start; k < t->end; k++)
			{
				if (s->text[k] == '\\')
					appendStringInfoChar(&out, '\\');
				appendStringInfoChar(&out, s->text[k]);
			}
		}
		else if (type_next && dl_is_word(s, i, "timestamp") &&
				 !dl_is_word(s, i + 1, "with") && !dl_is_word(s, i + 1, "without"))
			appendStringInfoString(&out, "TIMESTAMP_NTZ");
		else
			appendBinaryStringInfo(&out, s->text + t->start, t->end - t->start);
		type_next = t->type == TYPECAST || dl_is_word(s, i, "as");
	}
	return out.data;
}

static const char *const cdc_keys[] = {
	"target", "source", "source_query", "keys", "sequence_by", "stored_as_scd_type",
	"apply_as_deletes", "apply_as_truncates", "column_list", "except_column_list",
	"track_history_column_list", "track_history_except_column_list",
	"ignore_null_updates", "ignore_null_updates_column_list",
	"ignore_null_updates_except_column_list", "once", "expect", "expect_or_drop",
	"expect_or_fail", "tombstone_retention", "system_sequence_by", "columns_to_update", NULL
};
static const char *const snapshot_keys[] = {
	"target", "source", "snapshot_query", "version_query", "keys", "stored_as_scd_type",
	"track_history_column_list", "track_history_except_column_list", "once",
	"tombstone_retention", NULL
};
static const char *const append_keys[] = {
	"target", "source", "source_query", "once", "expect", "expect_or_drop",
	"expect_or_fail", NULL
};

/* An option that is as if it were not given. */
static bool
is_default(DlArg *o)
{
	return strcmp(o->name, "name") == 0 || strcmp(o->name, "pipeline") == 0 ||
		(o->type == DL_BOOL && !o->ival) ||
		(strcmp(o->name, "on_bad_event") == 0 && strcmp(o->text, "fail") == 0);
}

static bool
expressible(List *opts, const char *const *keys)
{
	ListCell   *lc;

	foreach(lc, opts)
	{
		DlArg	   *o = lfirst(lc);
		bool		known = is_default(o);

		for (int k = 0; keys[k] && !known; k++)
			known = strcmp(keys[k], o->name) == 0;
		if (!known)
			return false;
	}
	return true;
}

static void
append_column_clause(StringInfo buf, List *opts, const char *clause,
					 const char *list_key, const char *except_key)
{
	DlArg	   *a = find_arg(opts, list_key);
	DlArg	   *e = find_arg(opts, except_key);

	if (a)
		appendStringInfo(buf, "\n  %s %s", clause, dialect_list(a->list));
	if (e)
		appendStringInfo(buf, "\n  %s * EXCEPT %s", clause, dialect_list(e->list));
}

/*
 * The table statement a flow's target-level options need: its
 * expectations (CONSTRAINT n EXPECT ...) and its tombstone retention (in
 * TBLPROPERTIES), or "".  NULL when the retention is not whole seconds.
 */
static char *
table_statement(List *opts, const char *target)
{
	static const char *const keys[] = {"expect", "expect_or_drop", "expect_or_fail"};
	static const char *const actions[] = {"", " ON VIOLATION DROP ROW", " ON VIOLATION FAIL UPDATE"};
	StringInfoData buf;
	DlArg	   *retention = find_arg(opts, "tombstone_retention");
	char	   *props = NULL;
	Oid			type = TEXTOID;
	Datum		value;

	initStringInfo(&buf);
	for (int k = 0; k < 3; k++)
	{
		DlArg	   *a = find_arg(opts, keys[k]);

		if (a == NULL)
			continue;
		value = CStringGetTextDatum(a->text);
		if (SPI_execute_with_args("SELECT key, value FROM pg_catalog.jsonb_each_text($1::pg_catalog.jsonb)",
								  1, &type, &value, NULL, true, 0) != SPI_OK_SELECT)
			elog(ERROR, "SPI_execute_with_args failed");
		for (uint64 i = 0; i < SPI_processed; i++)
			appendStringInfo(&buf, "%s\n    CONSTRAINT %s EXPECT (%s)%s", buf.len > 0 ? "," : "",
							 dialect_ident(SPI_getvalue(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 1)),
							 dialect_text(SPI_getvalue(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 2)),
							 actions[k]);
	}
	if (retention)
	{
		char	   *seconds;

		value = CStringGetTextDatum(retention->text);
		if (SPI_execute_with_args("SELECT pg_catalog.date_part('epoch', $1::pg_catalog.interval)::pg_catalog.numeric",
								  1, &type, &value, NULL, true, 0) != SPI_OK_SELECT)
			elog(ERROR, "SPI_execute_with_args failed");
		seconds = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1);
		if (strspn(seconds, "0123456789") != strlen(seconds))
			return NULL;
		props = psprintf(" TBLPROPERTIES (pipelines.cdc.tombstoneGCThresholdInSeconds = %s)", seconds);
	}
	if (buf.len == 0 && props == NULL)
		return "";
	return psprintf("CREATE OR REFRESH STREAMING TABLE %s%s%s%s%s;\n", target,
					buf.len > 0 ? " (" : "", buf.data, buf.len > 0 ? ")" : "",
					props ? props : "");
}

/* The flow's CREATE FLOW statement, or NULL if the dialect cannot say it. */
static char *
create_flow_text(const char *flow, const char *kind, List *opts)
{
	StringInfoData buf;
	DlArg	   *target = find_arg(opts, "target");
	DlArg	   *source = find_arg(opts, "source");
	DlArg	   *query = find_arg(opts, "source_query");
	DlArg	   *once = find_arg(opts, "once");
	DlArg	   *a;
	bool		is_once = once && once->ival;
	char	   *tname,
			   *sname = NULL,
			   *table;

	if (!expressible(opts, strcmp(kind, "snapshot") == 0 ? snapshot_keys
					 : strcmp(kind, "append") == 0 ? append_keys : cdc_keys))
		return NULL;
	if (target == NULL || (tname = dialect_name(target->text)) == NULL)
		return NULL;
	if (source && (sname = dialect_name(source->text)) == NULL)
		return NULL;

	if ((table = table_statement(opts, tname)) == NULL)
		return NULL;
	initStringInfo(&buf);
	appendStringInfoString(&buf, table);
	appendStringInfo(&buf, "CREATE FLOW %s AS ", dialect_ident(flow));
	if (strcmp(kind, "append") == 0)
	{
		appendStringInfo(&buf, "INSERT %sINTO %s BY NAME\n  ", is_once ? "ONCE " : "", tname);
		if (sname)
			appendStringInfo(&buf, is_once ? "SELECT * FROM %s" : "SELECT * FROM STREAM(%s)", sname);
		else if (query)
			appendStringInfoString(&buf, dialect_text(query->text));
		else
			return NULL;
		appendStringInfoChar(&buf, ';');
		return buf.data;
	}
	appendStringInfo(&buf, "AUTO CDC %sINTO %s", is_once ? "ONCE " : "", tname);
	if (strcmp(kind, "snapshot") == 0)
	{
		DlArg	   *snap = find_arg(opts, "snapshot_query");
		DlArg	   *version = find_arg(opts, "version_query");

		if (sname)
			appendStringInfo(&buf, "\n  FROM SNAPSHOT (SELECT * FROM %s)", sname);
		else if (snap)
			appendStringInfo(&buf, "\n  FROM SNAPSHOT (%s)", dialect_text(snap->text));
		else
			return NULL;
		if (version)
			appendStringInfo(&buf, "\n  WITH VERSION (%s)", dialect_text(version->text));
	}
	else if (sname)
		appendStringInfo(&buf, is_once ? "\n  FROM %s" : "\n  FROM STREAM(%s)", sname);
	else if (query)
		appendStringInfo(&buf, "\n  FROM (%s)", dialect_text(query->text));
	else
		return NULL;
	if ((a = find_arg(opts, "keys")) != NULL)
		appendStringInfo(&buf, "\n  KEYS %s", dialect_list(a->list));
	if ((a = find_arg(opts, "ignore_null_updates")) != NULL && a->ival)
		appendStringInfoString(&buf, "\n  IGNORE NULL UPDATES");
	append_column_clause(&buf, opts, "IGNORE NULL UPDATES ON", "ignore_null_updates_column_list",
						 "ignore_null_updates_except_column_list");
	if ((a = find_arg(opts, "apply_as_deletes")) != NULL)
		appendStringInfo(&buf, "\n  APPLY AS DELETE WHEN %s", dialect_text(a->text));
	if ((a = find_arg(opts, "apply_as_truncates")) != NULL)
		appendStringInfo(&buf, "\n  APPLY AS TRUNCATE WHEN %s", dialect_text(a->text));
	if ((a = find_arg(opts, "sequence_by")) != NULL)
		appendStringInfo(&buf, "\n  SEQUENCE BY %s", dialect_text(a->text));
	append_column_clause(&buf, opts, "COLUMNS", "column_list", "except_column_list");
	if ((a = find_arg(opts, "system_sequence_by")) != NULL)
		appendStringInfo(&buf, "\n  SYSTEM SEQUENCE BY %s", dialect_text(a->text));
	if ((a = find_arg(opts, "columns_to_update")) != NULL)
		appendStringInfo(&buf, "\n  COLUMNS TO UPDATE %s", dialect_ident(a->text));
	if ((a = find_arg(opts, "stored_as_scd_type")) != NULL && a->type == DL_TEXT &&
		pg_strcasecmp(a->text, "bitemporal") == 0)
		appendStringInfoString(&buf, "\n  STORED AS BITEMPORAL");
	else if (a != NULL)
		appendStringInfo(&buf, "\n  STORED AS SCD TYPE %d", a->type == DL_TEXT ? atoi(a->text) : a->ival);
	append_column_clause(&buf, opts, "TRACK HISTORY ON", "track_history_column_list",
						 "track_history_except_column_list");
	appendStringInfoChar(&buf, ';');
	return buf.data;
}

static char *
jsonb_normal(const char *text)
{
	return DatumGetCString(DirectFunctionCall1(jsonb_out,
											   DirectFunctionCall1(jsonb_in, CStringGetDatum(text))));
}

static char *
interval_normal(const char *text)
{
	return DatumGetCString(DirectFunctionCall1(interval_out,
											   DirectFunctionCall3(interval_in, CStringGetDatum(text),
																   ObjectIdGetDatum(InvalidOid),
																   Int32GetDatum(-1))));
}

static bool
same_arg(DlArg *a, DlArg *o)
{
	switch (a->type)
	{
		case DL_TEXT:
		case DL_REGCLASS:
			if (strcmp(a->name, "stored_as_scd_type") == 0)
				return o->type == DL_TEXT && pg_strcasecmp(a->text, o->text) == 0;
			return o->type == DL_TEXT && strcmp(a->text, o->text) == 0;
		case DL_TEXTS:
			return o->type == DL_TEXTS && acdc_same_string_lists(a->list, o->list);
		case DL_INT:
			/* stored_as_scd_type => '2' (text) is STORED AS SCD TYPE 2 */
			if (o->type == DL_TEXT)
				return strcmp(o->text, psprintf("%d", a->ival)) == 0;
			return o->type == a->type && a->ival == o->ival;
		case DL_BOOL:
			return o->type == a->type && a->ival == o->ival;
		case DL_JSONB:
			return o->type == DL_JSONB && strcmp(jsonb_normal(a->text), jsonb_normal(o->text)) == 0;
		case DL_INTERVAL:
			return o->type == DL_TEXT && strcmp(interval_normal(a->text), o->text) == 0;
	}
	return false;
}

/* Whether the statement, parsed, gives the call the flow was made with. */
static bool
gives_same_call(const char *script, List *opts)
{
	DlScript   *s = dl_scan(script);
	List	   *stmts = dl_parse(s);
	DlStmt	   *st = llast(stmts);
	DlStmt	   *table = list_length(stmts) > 1 ? linitial(stmts) : NULL;
	List	   *args = dl_flow_call_args(s, st, table ? table->expects : NIL,
										 table ? dl_table_retention(table) : NULL);
	ListCell   *lc;

	foreach(lc, args)
	{
		DlArg	   *a = lfirst(lc);
		DlArg	   *o = find_arg(opts, a->name);

		if (strcmp(a->name, "name") == 0)
			continue;
		if (o == NULL || !same_arg(a, o))
			return false;
	}
	foreach(lc, opts)
	{
		DlArg	   *o = lfirst(lc);

		if (!is_default(o) && find_arg(args, o->name) == NULL)
			return false;
	}
	return true;
}

/* gives_same_call, an error in it (the text does not parse) being a no */
static bool
checks_out(const char *script, List *opts)
{
	MemoryContext cxt = CurrentMemoryContext;
	ResourceOwner owner = CurrentResourceOwner;
	volatile bool ok = false;

	BeginInternalSubTransaction(NULL);
	MemoryContextSwitchTo(cxt);
	PG_TRY();
	{
		ok = gives_same_call(script, opts);
		ReleaseCurrentSubTransaction();
	}
	PG_CATCH();
	{
		MemoryContextSwitchTo(cxt);
		FlushErrorState();
		RollbackAndReleaseCurrentSubTransaction();
		ok = false;
	}
	PG_END_TRY();
	MemoryContextSwitchTo(cxt);
	CurrentResourceOwner = owner;
	return ok;
}

Datum
autocdc_flow_ddl(PG_FUNCTION_ARGS)
{
	char	   *flow = text_to_cstring(PG_GETARG_TEXT_PP(0));
	char	   *kind = NULL;
	bool		by_function = false;
	List	   *opts;
	char	   *ddl = NULL;
	MemoryContext cxt = CurrentMemoryContext;

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	if (!load_options(flow, &kind, &by_function, &opts))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("flow \"%s\" does not exist", flow),
				 errhint("The view autocdc.flows lists your flows.")));
	if (!by_function)
		ddl = create_flow_text(flow, kind, opts);
	if (ddl != NULL && !checks_out(ddl, opts))
		ddl = NULL;
	if (ddl == NULL)
		ddl = function_call_text(flow, kind, opts);
	ddl = MemoryContextStrdup(cxt, ddl);
	SPI_finish();
	PG_RETURN_TEXT_P(cstring_to_text(ddl));
}
