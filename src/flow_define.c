/*-------------------------------------------------------------------------
 * flow_define.c
 *	  autocdc.create_auto_cdc_flow and autocdc.drop_flow: validating a flow
 *	  definition, resolving every name once, preparing the source for
 *	  incremental reads, creating or checking the target, and setting up the
 *	  target's auxiliary state.
 *-------------------------------------------------------------------------
 */
#include "autocdc.h"
#include "catalog.h"
#include "define.h"
#include "source_query.h"

#include "access/relation.h"
#include "catalog/dependency.h"
#include "catalog/namespace.h"
#include "catalog/pg_class.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "parser/parse_coerce.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/json.h"
#include "utils/lsyscache.h"
#include "utils/regproc.h"
#include "utils/rel.h"
#include "utils/typcache.h"

PG_FUNCTION_INFO_V1(autocdc_create_auto_cdc_flow);
PG_FUNCTION_INFO_V1(autocdc_create_auto_cdc_flow_text);

static List *resolve_list(FlowSpec *spec, List *names, const char *what);

List *
acdc_define_resolve_names(FlowSpec *spec, List *names, const char *what)
{
	return names == NIL ? NIL : resolve_list(spec, names, what);
}

/*
 * Columns read from a target stand for the snapshots' columns: its history
 * columns (SCD 2) and upsert sequence (SCD 1) are not among them.
 */
void
acdc_define_drop_history_columns(FlowSpec *spec)
{
	List	   *kept = NIL;
	ListCell   *lc;

	foreach(lc, spec->source_columns)
	{
		SourceColumn *c = lfirst(lc);

		if (strcmp(c->name, "__start_at") != 0 && strcmp(c->name, "__end_at") != 0 &&
			strcmp(c->name, ACDC_SEQUENCE_COLUMN) != 0)
			kept = lappend(kept, c);
	}
	spec->source_columns = kept;
}
PG_FUNCTION_INFO_V1(autocdc_drop_flow);

/* Names a target may not carry as ordinary columns (doc/design.md §1.4). */
static const char *const reserved_columns[] = {
	"__start_at", "__end_at", "__system_start_at", "__system_end_at", NULL
};

static bool
is_reserved_column(const char *name)
{
	for (int i = 0; reserved_columns[i]; i++)
		if (pg_strcasecmp(name, reserved_columns[i]) == 0)
			return true;
	return pg_strncasecmp(name, AUTOCDC_RESERVED_PREFIX,
						  strlen(AUTOCDC_RESERVED_PREFIX)) == 0;
}

/* Text argument or NULL. */
char *
acdc_define_text_arg(FunctionCallInfo fcinfo, int n)
{
	return PG_ARGISNULL(n) ? NULL : text_to_cstring(PG_GETARG_TEXT_PP(n));
}

List *
acdc_define_list_arg(FunctionCallInfo fcinfo, int n)
{
	return PG_ARGISNULL(n) ? NULL : acdc_text_array_to_list(PG_GETARG_DATUM(n));
}

void
acdc_define_require_arg(FunctionCallInfo fcinfo, int n, const char *what)
{
	if (PG_ARGISNULL(n))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("%s must not be NULL", what)));
}

/*
 * The SQL function calling us has the arguments this library reads: a
 * catalog of another build of the same version (during development) or a
 * hand-made function would have the library read past them.
 */
void
acdc_define_require_nargs(FunctionCallInfo fcinfo, int n)
{
	if (PG_NARGS() != n)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("autocdc's catalog does not match its library"),
				 errdetail("The SQL function has %d arguments; the library reads %d.", PG_NARGS(), n),
				 errhint("Run ALTER EXTENSION autocdc UPDATE, or drop and create the extension again.")));
}

/* A flow reads a table or view (source) or a query (source_query): one of them. */
void
acdc_define_require_source(FunctionCallInfo fcinfo, int source, int query)
{
	if (PG_ARGISNULL(source) == PG_ARGISNULL(query))
		ereport(ERROR,
				(errcode(PG_ARGISNULL(source) ? ERRCODE_NULL_VALUE_NOT_ALLOWED : ERRCODE_INVALID_PARAMETER_VALUE),
				 PG_ARGISNULL(source) ? errmsg("source must not be NULL") :
				 errmsg("source and source_query cannot be used together"),
				 errhint("Give the table or view as source, or a query marking its stream as source_query => 'SELECT ... FROM STREAM(table)'.")));
}

/*
 * pipeline: a name, or NULL for the default pipeline, "default", which a
 * flow joins only when the caller owns it (see ensure_pipeline).
 */
void
acdc_define_pipeline_arg(FlowSpec *spec, FunctionCallInfo fcinfo, int n)
{
	spec->pipeline_named = !PG_ARGISNULL(n);
	spec->pipeline = spec->pipeline_named ? acdc_define_text_arg(fcinfo, n) : pstrdup("default");
}

/* stored_as_scd_type: 1 when NULL, else 1 or 2. */
/*
 * tombstone_retention: how long the target remembers deleted keys; NULL
 * leaves it to the target (or to autocdc.tombstone_retention).
 */
void
acdc_define_retention_arg(FlowSpec *spec, FunctionCallInfo fcinfo, int n)
{
	spec->retention_given = !PG_ARGISNULL(n);
	if (spec->retention_given)
		spec->tombstone_retention = PG_GETARG_DATUM(n);
}

int
acdc_define_scd_type_arg(FunctionCallInfo fcinfo, int n)
{
	int			scd_type = PG_ARGISNULL(n) ? 1 : PG_GETARG_INT32(n);

	if (scd_type != 1 && scd_type != 2)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("stored_as_scd_type must be 1 or 2, not %d", scd_type)));
	return scd_type;
}

/*
 * stored_as_scd_type given as text (the reference system's spelling): '1',
 * '2' or 'bitemporal'.
 */
static int
scd_type_text_arg(FunctionCallInfo fcinfo, int n)
{
	char	   *s;

	acdc_define_require_arg(fcinfo, n, "stored_as_scd_type");
	s = acdc_define_text_arg(fcinfo, n);
	if (strcmp(s, "1") == 0)
		return 1;
	if (strcmp(s, "2") == 0)
		return 2;
	if (pg_strcasecmp(s, "bitemporal") == 0)
		return ACDC_BITEMPORAL;
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("stored_as_scd_type must be 1, 2 or 'bitemporal', not %s",
					quote_literal_cstr(s))));
	return 0;					/* keep compiler quiet */
}

void
acdc_define_refuse_both(List *a, List *b, const char *aname, const char *bname)
{
	if (a != NIL && b != NIL)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s and %s cannot be used together", aname, bname),
				 errhint("Name the columns to use with %s, or the columns to leave out with %s.",
						 aname, bname)));
}

/*
 * Lays out a flow's arguments, in the SQL signature's order.
 */
enum
{
	ARG_TARGET, ARG_SOURCE, ARG_KEYS, ARG_SEQUENCE_BY, ARG_NAME, ARG_SCD_TYPE,
	ARG_DELETES, ARG_TRUNCATES, ARG_COLUMN_LIST, ARG_EXCEPT_COLUMN_LIST,
	ARG_TRACK_LIST, ARG_TRACK_EXCEPT, ARG_IGNORE_NULL, ARG_IGNORE_NULL_LIST,
	ARG_IGNORE_NULL_EXCEPT, ARG_ONCE, ARG_PIPELINE, ARG_RETENTION, ARG_START_FROM,
	ARG_SOURCE_QUERY, ARG_EXPECT, ARG_EXPECT_OR_DROP, ARG_EXPECT_OR_FAIL, ARG_ON_BAD_EVENT,
	ARG_SYSTEM_SEQUENCE_BY, ARG_COLUMNS_TO_UPDATE, ARG_COUNT
};

static const char *const arg_names[] = {
	"target", "source", "keys", "sequence_by", "name", "stored_as_scd_type",
	"apply_as_deletes", "apply_as_truncates", "column_list",
	"except_column_list", "track_history_column_list",
	"track_history_except_column_list", "ignore_null_updates",
	"ignore_null_updates_column_list", "ignore_null_updates_except_column_list",
	"once", "pipeline", "tombstone_retention", "start_from", "source_query",
	"expect", "expect_or_drop", "expect_or_fail", "on_bad_event",
	"system_sequence_by", "columns_to_update"
};

/* The argument types of the int overload, for the text one's options. */
static const Oid arg_types[] = {
	TEXTOID, REGCLASSOID, TEXTARRAYOID, TEXTOID, TEXTOID, TEXTOID,
	TEXTOID, TEXTOID, TEXTARRAYOID, TEXTARRAYOID, TEXTARRAYOID, TEXTARRAYOID,
	BOOLOID, TEXTARRAYOID, TEXTARRAYOID, BOOLOID, TEXTOID, INTERVALOID, TEXTOID,
	TEXTOID, JSONBOID, JSONBOID, JSONBOID, TEXTOID, TEXTOID, TEXTOID
};

static char *options_json(FunctionCallInfo fcinfo, int nargs,
						  const char *const *names, const Oid *types);

/* The arguments as given, as a jsonb text kept in autocdc.flow.options. */
char *
acdc_define_options_json(FunctionCallInfo fcinfo, int nargs, const char *const *names)
{
	return options_json(fcinfo, nargs, names, NULL);
}

/* types: the arguments' types, or NULL for the call's */
static char *
options_json(FunctionCallInfo fcinfo, int nargs, const char *const *names, const Oid *types)
{
	StringInfoData buf;

	initStringInfo(&buf);
	appendStringInfoChar(&buf, '{');
	for (int i = 0; i < nargs; i++)
	{
		Oid			typid = types ? types[i] : get_fn_expr_argtype(fcinfo->flinfo, i);
		Oid			outfn;
		bool		isvarlena;
		char	   *val;

		if (i > 0)
			appendStringInfoString(&buf, ", ");
		escape_json(&buf, names[i]);
		appendStringInfoString(&buf, ": ");
		if (PG_ARGISNULL(i) || !OidIsValid(typid))
		{
			appendStringInfoString(&buf, "null");
			continue;
		}
		if (typid == REGCLASSOID)
		{
			val = acdc_rel_qualified_name(PG_GETARG_OID(i));
			escape_json(&buf, val);
			continue;
		}
		if (typid == JSONBOID)
		{
			/* a map of expectations: kept as given */
			appendStringInfoString(&buf, DatumGetCString(DirectFunctionCall1(jsonb_out,
																			 PG_GETARG_DATUM(i))));
			continue;
		}
		if (typid == TEXTARRAYOID)
		{
			ListCell   *lc;
			bool		first = true;

			appendStringInfoChar(&buf, '[');
			foreach(lc, acdc_text_array_to_list(PG_GETARG_DATUM(i)))
			{
				if (!first)
					appendStringInfoString(&buf, ", ");
				escape_json(&buf, lfirst(lc));
				first = false;
			}
			appendStringInfoChar(&buf, ']');
			continue;
		}
		getTypeOutputInfo(typid, &outfn, &isvarlena);
		val = OidOutputFunctionCall(outfn, PG_GETARG_DATUM(i));
		if (typid == BOOLOID || typid == INT4OID)
			appendStringInfoString(&buf, strcmp(val, "t") == 0 ? "true" :
								   strcmp(val, "f") == 0 ? "false" : val);
		else
			escape_json(&buf, val);
	}
	appendStringInfoChar(&buf, '}');
	return buf.data;
}

static Datum create_flow(FunctionCallInfo fcinfo, bool text_type);

Datum
autocdc_create_auto_cdc_flow(PG_FUNCTION_ARGS)
{
	return create_flow(fcinfo, false);
}

/*
 * The text overload: (target, stored_as_scd_type text, then the int
 * overload's arguments without it).  Its stored_as_scd_type has no
 * default, so that a call leaving it out resolves to the int overload
 * only; called with the arguments in the int overload's places.
 */
Datum
autocdc_create_auto_cdc_flow_text(PG_FUNCTION_ARGS)
{
	LOCAL_FCINFO(inner, ARG_COUNT);

	acdc_define_require_nargs(fcinfo, ARG_COUNT);
	InitFunctionCallInfoData(*inner, fcinfo->flinfo, ARG_COUNT, fcinfo->fncollation,
							 NULL, NULL);
	for (int i = 0; i < ARG_COUNT; i++)
	{
		int			from = i == ARG_SCD_TYPE ? 1 :
		(i > ARG_TARGET && i < ARG_SCD_TYPE) ? i + 1 : i;

		inner->args[i] = fcinfo->args[from];
	}
	return create_flow(inner, true);
}

static Datum
create_flow(FunctionCallInfo fcinfo, bool text_type)
{
	FlowSpec	spec;
	List	   *column_list,
			   *except_list,
			   *track_list,
			   *track_except,
			   *ignore_list,
			   *ignore_except;
	int			scd_type;

	/* an older catalog's function has other arguments: refuse before reading them */
	acdc_catalog_check_version();
	acdc_define_require_nargs(fcinfo, lengthof(arg_names));
	acdc_define_require_arg(fcinfo, ARG_TARGET, "target");
	acdc_define_require_source(fcinfo, ARG_SOURCE, ARG_SOURCE_QUERY);
	acdc_define_require_arg(fcinfo, ARG_KEYS, "keys");
	acdc_define_require_arg(fcinfo, ARG_SEQUENCE_BY, "sequence_by");

	memset(&spec, 0, sizeof(spec));
	spec.kind = FLOW_AUTO_CDC;
	spec.target_name = acdc_define_text_arg(fcinfo, ARG_TARGET);
	spec.source = PG_ARGISNULL(ARG_SOURCE) ? InvalidOid : PG_GETARG_OID(ARG_SOURCE);
	spec.keys = acdc_define_list_arg(fcinfo, ARG_KEYS);
	spec.sequence_by = acdc_define_text_arg(fcinfo, ARG_SEQUENCE_BY);
	spec.name = PG_ARGISNULL(ARG_NAME) ? spec.target_name : acdc_define_text_arg(fcinfo, ARG_NAME);
	spec.deletes = acdc_define_text_arg(fcinfo, ARG_DELETES);
	spec.truncates = acdc_define_text_arg(fcinfo, ARG_TRUNCATES);
	spec.once = !PG_ARGISNULL(ARG_ONCE) && PG_GETARG_BOOL(ARG_ONCE);
	acdc_define_pipeline_arg(&spec, fcinfo, ARG_PIPELINE);
	acdc_define_retention_arg(&spec, fcinfo, ARG_RETENTION);
	spec.start_now = acdc_define_start_from_arg(fcinfo, ARG_START_FROM);
	spec.expectations = acdc_expect_args(fcinfo, ARG_EXPECT);
	spec.quarantine_bad = acdc_define_on_bad_event_arg(fcinfo, ARG_ON_BAD_EVENT);
	spec.columns_to_update = acdc_define_text_arg(fcinfo, ARG_COLUMNS_TO_UPDATE);

	column_list = acdc_define_list_arg(fcinfo, ARG_COLUMN_LIST);
	except_list = acdc_define_list_arg(fcinfo, ARG_EXCEPT_COLUMN_LIST);
	track_list = acdc_define_list_arg(fcinfo, ARG_TRACK_LIST);
	track_except = acdc_define_list_arg(fcinfo, ARG_TRACK_EXCEPT);
	ignore_list = acdc_define_list_arg(fcinfo, ARG_IGNORE_NULL_LIST);
	ignore_except = acdc_define_list_arg(fcinfo, ARG_IGNORE_NULL_EXCEPT);

	scd_type = text_type ? scd_type_text_arg(fcinfo, ARG_SCD_TYPE) :
		acdc_define_scd_type_arg(fcinfo, ARG_SCD_TYPE);
	spec.scd_type = scd_type;
	spec.system_sequence_by = acdc_define_text_arg(fcinfo, ARG_SYSTEM_SEQUENCE_BY);
	acdc_bt_check_args(&spec, track_list, track_except);

	if (scd_type == 2 && spec.truncates != NULL)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("apply_as_truncates applies only to SCD type 1 flows"),
				 errdetail("A truncate would end every key's history at once; SCD type 2 keeps history instead."),
				 errhint("Remove apply_as_truncates, or delete the keys with apply_as_deletes.")));
	acdc_define_refuse_both(track_list, track_except, "track_history_column_list",
				"track_history_except_column_list");
	if (scd_type == 1 && (track_list != NIL || track_except != NIL))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s applies only to SCD type 2 flows",
						track_list != NIL ? "track_history_column_list"
						: "track_history_except_column_list"),
				 errdetail("An SCD type 1 target keeps no history to track."),
				 errhint("Remove the option, or use stored_as_scd_type => 2.")));
	if (spec.name[0] == '\0' || spec.pipeline[0] == '\0')
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("flow and pipeline names must not be empty")));
	if (spec.keys == NIL)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("keys must name at least one column")));
	acdc_define_refuse_both(column_list, except_list, "column_list", "except_column_list");
	acdc_define_refuse_both(ignore_list, ignore_except, "ignore_null_updates_column_list",
				"ignore_null_updates_except_column_list");
	if (spec.columns_to_update != NULL &&
		((!PG_ARGISNULL(ARG_IGNORE_NULL) && PG_GETARG_BOOL(ARG_IGNORE_NULL)) ||
		 ignore_list != NIL || ignore_except != NIL))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("columns_to_update and ignore_null_updates cannot be used together"),
				 errdetail("With columns_to_update, each event lists the columns it sets, NULL values included."),
				 errhint("Remove the ignore_null_updates options, or columns_to_update.")));

	StaticAssertStmt(lengthof(arg_names) == ARG_COUNT && lengthof(arg_types) == ARG_COUNT,
					 "one name and type per argument");
	spec.options_json = options_json(fcinfo, ARG_COUNT, arg_names,
									 text_type ? arg_types : NULL);

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	if (!PG_ARGISNULL(ARG_SOURCE_QUERY))
		acdc_sq_define_source(&spec, acdc_define_text_arg(fcinfo, ARG_SOURCE_QUERY), spec.once);
	else
	{
		acdc_define_load_columns(&spec, spec.source, true);
		acdc_sq_refuse_batch_source(&spec);
	}

	acdc_define_resolve_columns(&spec, column_list, except_list,
						   !PG_ARGISNULL(ARG_IGNORE_NULL) && PG_GETARG_BOOL(ARG_IGNORE_NULL),
						   ignore_list, ignore_except);
	if (scd_type == 2)
		acdc_scd2_resolve_tracking(&spec,
							  track_list ? resolve_list(&spec, track_list, "track_history_column_list") : NIL,
							  track_except ? resolve_list(&spec, track_except, "track_history_except_column_list") : NIL);
	acdc_define_analyze_expressions(&spec);
	acdc_define_create_flow(&spec);

	SPI_finish();
	PG_RETURN_VOID();
}

/*
 * Resolves a user-written column name against the source: an exact match,
 * else the only case-insensitive one (so keys => ARRAY['userId'] finds the
 * column an unquoted userId created).
 */
static char *
resolve_column(FlowSpec *spec, const char *name, const char *what)
{
	ListCell   *lc;
	char	   *found = NULL;
	int			nfound = 0;

	foreach(lc, spec->source_columns)
	{
		SourceColumn *c = lfirst(lc);

		if (strcmp(c->name, name) == 0)
			return c->name;
	}
	foreach(lc, spec->source_columns)
	{
		SourceColumn *c = lfirst(lc);

		if (pg_strcasecmp(c->name, name) == 0)
		{
			found = c->name;
			nfound++;
		}
	}
	if (nfound == 1)
		return found;
	ereport(ERROR,
			(errcode(nfound > 1 ? ERRCODE_AMBIGUOUS_COLUMN : ERRCODE_UNDEFINED_COLUMN),
			 spec->source_query ?
			 errmsg("column \"%s\" named in %s %s in the result of the source query",
					name, what, nfound > 1 ? "is ambiguous" : "does not exist") :
			 errmsg("column \"%s\" named in %s %s in source \"%s\"",
					name, what, nfound > 1 ? "is ambiguous" : "does not exist",
					acdc_rel_qualified_name(spec->columns_rel)),
			 nfound > 1 ? errhint("Write the column's name with its exact case.") : 0));
	return NULL;				/* keep compiler quiet */
}

SourceColumn *
acdc_define_source_column(FlowSpec *spec, const char *name)
{
	ListCell   *lc;

	foreach(lc, spec->source_columns)
	{
		SourceColumn *c = lfirst(lc);

		if (strcmp(c->name, name) == 0)
			return c;
	}
	elog(ERROR, "column \"%s\" not found in source", name);
	return NULL;
}

static List *
resolve_list(FlowSpec *spec, List *names, const char *what)
{
	List	   *result = NIL;
	ListCell   *lc;

	foreach(lc, names)
	{
		char	   *col = resolve_column(spec, lfirst(lc), what);

		if (acdc_list_has_string(result, col))
			ereport(ERROR,
					(errcode(ERRCODE_DUPLICATE_COLUMN),
					 errmsg("column \"%s\" appears twice in %s", col, what)));
		result = lappend(result, col);
	}
	return result;
}

/*
 * Reads the columns a flow takes from relation `relid` (its source, or
 * the target of a snapshot flow fed by a function) and notes whether it
 * can be read incrementally.
 */
void
acdc_define_load_columns(FlowSpec *spec, Oid relid, bool check_select)
{
	Relation	rel;
	TupleDesc	desc;
	AclResult	acl;

	rel = relation_open(relid, AccessShareLock);
	switch (rel->rd_rel->relkind)
	{
		case RELKIND_RELATION:
		case RELKIND_PARTITIONED_TABLE:
			spec->incremental = true;
			break;
		case RELKIND_VIEW:
		case RELKIND_MATVIEW:
		case RELKIND_FOREIGN_TABLE:
			spec->incremental = false;
			break;
		default:
			ereport(ERROR,
					(errcode(ERRCODE_WRONG_OBJECT_TYPE),
					 errmsg("\"%s\" cannot be a flow source", RelationGetRelationName(rel)),
					 errdetail("A source must be a table, view, materialized view or foreign table.")));
	}
	acdc_define_refuse_temporary(relid, check_select ? "source" : "target");
	if (check_select)
	{
		acl = pg_class_aclcheck(relid, GetUserId(), ACL_SELECT);
		if (acl != ACLCHECK_OK)
			aclcheck_error(acl, OBJECT_TABLE, RelationGetRelationName(rel));
	}

	desc = RelationGetDescr(rel);
	for (int i = 0; i < desc->natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, i);
		SourceColumn *c;

		if (att->attisdropped || strcmp(NameStr(att->attname), AUTOCDC_XID_COLUMN) == 0)
			continue;
		c = palloc0(sizeof(SourceColumn));
		c->name = pstrdup(NameStr(att->attname));
		c->typid = att->atttypid;
		c->typmod = att->atttypmod;
		c->collation = att->attcollation;
		spec->source_columns = lappend(spec->source_columns, c);
	}
	relation_close(rel, AccessShareLock);

	spec->columns_rel = relid;
}

/*
 * columns_to_update: a text[] column of the source (or of the source
 * query's result), not a key.
 */
static char *
resolve_columns_to_update(FlowSpec *spec)
{
	char	   *col = resolve_column(spec, spec->columns_to_update, "columns_to_update");
	SourceColumn *c = acdc_define_source_column(spec, col);

	if (spec->scd_type != 1 && spec->scd_type != 2)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("columns_to_update applies only to SCD type 1 and 2 flows")));
	if (acdc_list_has_string(spec->keys, col))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("key column \"%s\" cannot be the columns_to_update column", col)));
	if (c->typid != TEXTARRAYOID)
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("columns_to_update column \"%s\" is of type %s, not text[]",
						col, format_type_be(c->typid)),
				 errhint("Cast it in a source_query: SELECT ..., col::text[] AS col FROM STREAM(source).")));
	return col;
}

/*
 * Reads the source's columns and works out the key columns, the non-key
 * columns the flow writes and its partial-update (ignore-null) columns.
 */
void
acdc_define_resolve_columns(FlowSpec *spec, List *column_list, List *except_list,
					   bool ignore_all, List *ignore_list, List *ignore_except)
{
	List	   *keys,
			   *chosen = NIL,
			   *except = NIL;
	ListCell   *lc;

	if (spec->source_columns == NIL)
		acdc_define_load_columns(spec, spec->source, true);

	keys = resolve_list(spec, spec->keys, "keys");
	if (column_list != NIL)
		chosen = resolve_list(spec, column_list, "column_list");
	if (except_list != NIL)
		except = resolve_list(spec, except_list, "except_column_list");

	foreach(lc, keys)
	{
		if (acdc_list_has_string(except, lfirst(lc)))
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("key column \"%s\" cannot be excluded by except_column_list",
							(char *) lfirst(lc))));
		if (is_reserved_column(lfirst(lc)))
			ereport(ERROR,
					(errcode(ERRCODE_RESERVED_NAME),
					 errmsg("column name \"%s\" is reserved by autocdc", (char *) lfirst(lc))));
	}

	spec->keys = keys;
	if (spec->columns_to_update != NULL)
		spec->columns_to_update = resolve_columns_to_update(spec);
	spec->columns = NIL;
	foreach(lc, spec->source_columns)
	{
		SourceColumn *c = lfirst(lc);

		if (acdc_list_has_string(keys, c->name))
			continue;
		/* the list of an event's columns is no column of the target */
		if (spec->columns_to_update != NULL && strcmp(c->name, spec->columns_to_update) == 0)
			continue;
		/* nor is an SCD 1 target's own sequence, when one is the source */
		if (column_list == NIL && strcmp(c->name, ACDC_SEQUENCE_COLUMN) == 0)
			continue;
		if (column_list != NIL ? !acdc_list_has_string(chosen, c->name)
			: acdc_list_has_string(except, c->name))
			continue;
		if (is_reserved_column(c->name))
			ereport(ERROR,
					(errcode(ERRCODE_RESERVED_NAME),
					 errmsg("source column \"%s\" uses a name reserved by autocdc", c->name),
					 errdetail("Targets reserve __start_at, __end_at, __system_start_at, __system_end_at and the prefix __autocdc."),
					 errhint("Leave the column out with except_column_list, or rename it in a source_query over the source.")));
		spec->columns = lappend(spec->columns, c->name);
	}

	/* Partial updates: all non-key columns, the listed ones, or all but. */
	spec->ignore_null = NIL;
	if (ignore_list != NIL)
		ignore_list = resolve_list(spec, ignore_list, "ignore_null_updates_column_list");
	if (ignore_except != NIL)
		ignore_except = resolve_list(spec, ignore_except, "ignore_null_updates_except_column_list");
	foreach(lc, ignore_list != NIL ? ignore_list : ignore_except)
	{
		char	   *col = lfirst(lc);

		if (acdc_list_has_string(keys, col))
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("key column \"%s\" cannot take part in ignore-null updates", col),
					 errdetail("A key is never NULL in an upsert.")));
		if (!acdc_list_has_string(spec->columns, col))
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("column \"%s\" of the ignore-null list is not written by the flow", col),
					 errhint("Columns left out by column_list or except_column_list cannot be partial.")));
	}
	foreach(lc, spec->columns)
	{
		char	   *col = lfirst(lc);

		if (ignore_list != NIL ? acdc_list_has_string(ignore_list, col)
			: ignore_except != NIL ? !acdc_list_has_string(ignore_except, col)
			: ignore_all)
			spec->ignore_null = lappend(spec->ignore_null, col);
	}
}

/*
 * Drops a flow.  The target table stays; when its last flow goes, so do its
 * auxiliary state and registration.
 */
Datum
autocdc_drop_flow(PG_FUNCTION_ARGS)
{
	char	   *name = text_to_cstring(PG_GETARG_TEXT_PP(0));
	Oid			owner;

	autocdc_refuse_within_flow("autocdc.drop_flow()");
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");

	owner = acdc_catalog_lock_flow(name);
	/* another role's flow is as if it did not exist (autocdc.flows hides it) */
	if (!OidIsValid(owner) || !has_privs_of_role(GetUserId(), owner))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("flow \"%s\" does not exist", name),
				 errhint("The view autocdc.flows lists your flows.")));

	acdc_catalog_delete_flow(name);
	acdc_define_drop_orphan_targets();
	SPI_finish();
	PG_RETURN_VOID();
}
