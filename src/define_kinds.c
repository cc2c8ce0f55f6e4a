/*-------------------------------------------------------------------------
 * define_kinds.c
 *	  autocdc.create_auto_cdc_from_snapshot_flow and
 *	  autocdc.create_append_flow: their arguments checked and turned into a
 *	  FlowSpec, then defined like an AUTO CDC flow (define_register.c).
 *-------------------------------------------------------------------------
 */
#include "define.h"
#include "source_query.h"
#include "collation.h"

#include "access/htup_details.h"
#include "catalog/namespace.h"
#include "catalog/pg_proc.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/regproc.h"
#include "utils/syscache.h"

PG_FUNCTION_INFO_V1(autocdc_create_auto_cdc_from_snapshot_flow);
PG_FUNCTION_INFO_V1(autocdc_create_append_flow);

#if PG_VERSION_NUM >= 160000
#define may_execute(fn) object_aclcheck(ProcedureRelationId, (fn), GetUserId(), ACL_EXECUTE)
#else
#define may_execute(fn) pg_proc_aclcheck((fn), GetUserId(), ACL_EXECUTE)
#endif

/*
 * A snapshot source function takes the latest applied version (NULL before
 * the first) and returns one row (snapshot regclass, version) for the next
 * snapshot, or none.  Its version type is the target's ordering.
 */
static Oid
check_source_function(Oid fn)
{
	HeapTuple	tup;
	Form_pg_proc proc;
	TupleDesc	desc;
	Oid			rettype;
	Oid			version_type;
	char	   *fname = format_procedure(fn);
	AclResult	acl;

	tup = SearchSysCache1(PROCOID, ObjectIdGetDatum(fn));
	if (!HeapTupleIsValid(tup))
		elog(ERROR, "cache lookup failed for function %u", fn);
	proc = (Form_pg_proc) GETSTRUCT(tup);
	if (proc->pronargs != 1 || proc->prokind != PROKIND_FUNCTION)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_FUNCTION_DEFINITION),
				 errmsg("source_function %s must be a function of one argument, the latest version", fname),
				 errhint("Declare it like: CREATE FUNCTION next_snapshot(latest bigint) RETURNS TABLE(snapshot regclass, version bigint) ...")));
	version_type = proc->proargtypes.values[0];
	ReleaseSysCache(tup);

	if (get_func_result_type(fn, &rettype, &desc) != TYPEFUNC_COMPOSITE ||
		desc->natts != 2 || TupleDescAttr(desc, 0)->atttypid != REGCLASSOID ||
		TupleDescAttr(desc, 1)->atttypid != version_type)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_FUNCTION_DEFINITION),
				 errmsg("source_function %s must return (snapshot regclass, version %s)",
						fname, format_type_be(version_type)),
				 errdetail("The version is of the type of the function's argument."),
				 errhint("Declare it like: CREATE FUNCTION next_snapshot(latest bigint) RETURNS TABLE(snapshot regclass, version bigint) ...")));
	acl = may_execute(fn);
	if (acl != ACLCHECK_OK)
		aclcheck_error(acl, OBJECT_FUNCTION, fname);
	acdc_define_require_sortable(version_type, "the snapshot version");
	return version_type;
}

Datum
autocdc_create_auto_cdc_from_snapshot_flow(PG_FUNCTION_ARGS)
{
	FlowSpec	spec;
	List	   *track_list,
			   *track_except;
	char	   *snapshot_query,
			   *version_query;

	/* an older catalog's function has other arguments: refuse before reading them */
	acdc_catalog_check_version();
	acdc_define_require_nargs(fcinfo, 14);
	acdc_define_require_arg(fcinfo, 0, "target");
	acdc_define_require_arg(fcinfo, 1, "keys");
	memset(&spec, 0, sizeof(spec));
	spec.kind = FLOW_SNAPSHOT;
	spec.target_name = acdc_define_text_arg(fcinfo, 0);
	spec.keys = acdc_text_array_to_list(PG_GETARG_DATUM(1));
	spec.source = PG_ARGISNULL(2) ? InvalidOid : PG_GETARG_OID(2);
	spec.source_function = PG_ARGISNULL(3) ? InvalidOid : PG_GETARG_OID(3);
	spec.name = PG_ARGISNULL(4) ? spec.target_name : acdc_define_text_arg(fcinfo, 4);
	spec.scd_type = acdc_define_scd_type_arg(fcinfo, 5);
	track_list = acdc_define_list_arg(fcinfo, 6);
	track_except = acdc_define_list_arg(fcinfo, 7);
	spec.once = !PG_ARGISNULL(8) && PG_GETARG_BOOL(8);
	acdc_define_pipeline_arg(&spec, fcinfo, 9);
	acdc_define_retention_arg(&spec, fcinfo, 10);
	spec.start_now = acdc_define_start_from_arg(fcinfo, 11);
	snapshot_query = acdc_define_text_arg(fcinfo, 12);
	version_query = acdc_define_text_arg(fcinfo, 13);

	if (OidIsValid(spec.source) + OidIsValid(spec.source_function) + (snapshot_query != NULL) != 1)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("a snapshot flow needs exactly one of source, source_function and snapshot_query"),
				 errhint("source => 'table_or_view' or snapshot_query => 'SELECT ...' takes it whole at each run; source_function => 'f(bigint)'::regprocedure or a version_query gives versioned snapshots.")));
	if (version_query && !snapshot_query)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("version_query needs snapshot_query"),
				 errdetail("The version query chooses the next version; the snapshot query reads that version's snapshot."),
				 errhint("Give snapshot_query => 'SELECT ... WHERE version = current_snapshot_version()'.")));
	if (spec.scd_type == 1 && (track_list != NIL || track_except != NIL))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("track-history options apply only to SCD type 2 flows"),
				 errhint("Remove them, or use stored_as_scd_type => 2.")));
	acdc_define_refuse_both(track_list, track_except, "track_history_column_list",
					   "track_history_except_column_list");
	if (spec.keys == NIL || spec.name[0] == '\0' || spec.pipeline[0] == '\0')
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("keys must name at least one column, and names must not be empty")));
	acdc_define_refuse_start_now(&spec);
	spec.options_json = acdc_define_options_json(fcinfo, 14,
											(const char *const[]) {"target", "keys", "source",
												"source_function", "name", "stored_as_scd_type",
												"track_history_column_list", "track_history_except_column_list",
												"once", "pipeline", "tombstone_retention", "start_from",
											"snapshot_query", "version_query"});

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");

	if (snapshot_query)
	{
		acdc_sq_define_snapshot(&spec, snapshot_query, version_query);
		/* a version has no collation of its own: its type's orders it */
		if (version_query)
			spec.seq_coll = acdc_value_collation(spec.seq_type, get_typcollation(spec.seq_type));
	}
	else if (OidIsValid(spec.source))
	{
		/* read whole at each run: versions 0, 1, 2, ... */
		acdc_define_load_columns(&spec, spec.source, true);
		spec.seq_type = INT8OID;
	}
	else
	{
		List	   *names = stringToQualifiedNameList(spec.target_name);
		Oid			target = RangeVarGetRelid(makeRangeVarFromNameList(names), NoLock, true);

		spec.seq_type = check_source_function(spec.source_function);
		/* a version has no collation of its own: its type's orders it */
		spec.seq_coll = acdc_value_collation(spec.seq_type, get_typcollation(spec.seq_type));
		if (!OidIsValid(target))
			ereport(ERROR,
					(errcode(ERRCODE_UNDEFINED_TABLE),
					 errmsg("target \"%s\" of a snapshot flow fed by a function must exist", spec.target_name),
					 errhint("Create the target table first; autocdc cannot know the snapshots' columns before the function returns one.")));
		/* nothing about another role's table is told before this */
		acdc_define_refuse_temporary(target, "target");
		acdc_define_require_owner(target);
		acdc_define_load_columns(&spec, target, false);
		acdc_define_drop_history_columns(&spec);
	}
	spec.incremental = false;
	acdc_define_resolve_columns(&spec, NIL, NIL, false, NIL, NIL);
	if (spec.scd_type == 2)
		acdc_scd2_resolve_tracking(&spec,
							  acdc_define_resolve_names(&spec, track_list, "track_history_column_list"),
							  acdc_define_resolve_names(&spec, track_except, "track_history_except_column_list"));
	acdc_define_create_flow(&spec);
	SPI_finish();
	PG_RETURN_VOID();
}

/* create_append_flow's source_query, then expect, expect_or_drop, expect_or_fail: its last arguments */
#define APPEND_ARG_SOURCE_QUERY 6
#define APPEND_ARG_EXPECT 7

Datum
autocdc_create_append_flow(PG_FUNCTION_ARGS)
{
	FlowSpec	spec;

	/* an older catalog's function has other arguments: refuse before reading them */
	acdc_catalog_check_version();
	acdc_define_require_nargs(fcinfo, APPEND_ARG_EXPECT + 3);
	acdc_define_require_arg(fcinfo, 0, "target");
	acdc_define_require_source(fcinfo, 1, APPEND_ARG_SOURCE_QUERY);
	memset(&spec, 0, sizeof(spec));
	spec.kind = FLOW_APPEND;
	spec.target_name = acdc_define_text_arg(fcinfo, 0);
	spec.source = PG_ARGISNULL(1) ? InvalidOid : PG_GETARG_OID(1);
	spec.name = PG_ARGISNULL(2) ? spec.target_name : acdc_define_text_arg(fcinfo, 2);
	spec.once = !PG_ARGISNULL(3) && PG_GETARG_BOOL(3);
	acdc_define_pipeline_arg(&spec, fcinfo, 4);
	spec.start_now = acdc_define_start_from_arg(fcinfo, 5);
	spec.expectations = acdc_expect_args(fcinfo, APPEND_ARG_EXPECT);
	if (spec.name[0] == '\0' || spec.pipeline[0] == '\0')
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("flow and pipeline names must not be empty")));
	spec.options_json = acdc_define_options_json(fcinfo, APPEND_ARG_EXPECT + 3,
											(const char *const[]) {"target", "source", "name", "once",
												"pipeline", "start_from", "source_query",
											"expect", "expect_or_drop", "expect_or_fail"});

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	if (!PG_ARGISNULL(APPEND_ARG_SOURCE_QUERY))
		acdc_sq_define_source(&spec, acdc_define_text_arg(fcinfo, APPEND_ARG_SOURCE_QUERY), spec.once);
	else
	{
		acdc_define_load_columns(&spec, spec.source, true);
		acdc_sq_refuse_batch_source(&spec);
	}
	{
		ListCell   *lc;

		foreach(lc, spec.source_columns)
			spec.columns = lappend(spec.columns, ((SourceColumn *) lfirst(lc))->name);
	}
	acdc_define_create_flow(&spec);
	SPI_finish();
	PG_RETURN_VOID();
}
