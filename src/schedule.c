/*-------------------------------------------------------------------------
 * schedule.c
 *	  autocdc.schedule and autocdc.unschedule: which pipelines the
 *	  background worker runs, and how often.
 *-------------------------------------------------------------------------
 */
#include "worker.h"
#include "catalog.h"

#include "access/htup_details.h"
#include "catalog/pg_authid.h"
#include "catalog/pg_type.h"
#include "commands/dbcommands.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/syscache.h"
#include "utils/timestamp.h"
#include "utils/varlena.h"

PG_FUNCTION_INFO_V1(autocdc_schedule);
PG_FUNCTION_INFO_V1(autocdc_unschedule);

/* The pipeline's owner, after checking the caller may act for it. */
static Oid
owned_pipeline(const char *pipeline)
{
	Oid			owner = acdc_catalog_pipeline_owner(pipeline, NULL);

	/* another role's pipeline is as if it did not exist (autocdc.pipelines hides it) */
	if (!OidIsValid(owner) || !has_privs_of_role(GetUserId(), owner))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("pipeline \"%s\" does not exist", pipeline),
				 errhint("A pipeline is created by its first flow; autocdc.pipelines lists yours.")));
	return owner;
}

static bool
role_can_login(Oid role)
{
	HeapTuple	tup = SearchSysCache1(AUTHOID, ObjectIdGetDatum(role));
	bool		result;

	if (!HeapTupleIsValid(tup))
		return false;
	result = ((Form_pg_authid) GETSTRUCT(tup))->rolcanlogin;
	ReleaseSysCache(tup);
	return result;
}

static bool
database_is_served(void)
{
	char	   *raw = pstrdup(autocdc_databases);
	List	   *names;
	ListCell   *lc;
	char	   *me = get_database_name(MyDatabaseId);

	if (!SplitIdentifierString(raw, ',', &names))
		return false;
	foreach(lc, names)
		if (strcmp(lfirst(lc), me) == 0)
		return true;
	return false;
}

Datum
autocdc_schedule(PG_FUNCTION_ARGS)
{
	char	   *pipeline = text_to_cstring(PG_GETARG_TEXT_PP(0));
	Interval   *every = PG_GETARG_INTERVAL_P(1);
	Interval	zero = {0};
	Oid			owner;

	if (!autocdc_preloaded)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("scheduled runs need autocdc in shared_preload_libraries"),
				 errdetail("The background worker that runs scheduled pipelines starts with the server."),
				 errhint("Add autocdc to shared_preload_libraries in postgresql.conf and restart the server. autocdc.run() works without it.")));
	if (DatumGetInt32(DirectFunctionCall2(interval_cmp, IntervalPGetDatum(every),
										  IntervalPGetDatum(&zero))) < 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("the interval of a schedule must not be negative"),
				 errhint("Use '0' to run the pipeline continuously.")));
	if (DatumGetInt32(DirectFunctionCall2(interval_cmp, IntervalPGetDatum(every),
										  DirectFunctionCall3(interval_in,
															  CStringGetDatum("100 years"),
															  ObjectIdGetDatum(InvalidOid),
															  Int32GetDatum(-1)))) > 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("the interval of a schedule must be at most 100 years"),
				 errhint("Unschedule the pipeline instead: SELECT autocdc.unschedule(%s);",
						 quote_literal_cstr(pipeline))));

	autocdc_refuse_within_flow("autocdc.schedule()");
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	owner = owned_pipeline(pipeline);
	if (!role_can_login(owner))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_AUTHORIZATION_SPECIFICATION),
				 errmsg("the owner of pipeline \"%s\", role %s, cannot log in", pipeline,
						GetUserNameFromId(owner, false)),
				 errdetail("Scheduled runs act as the pipeline's owner, which must be able to log in."),
				 errhint("Grant it LOGIN, or run the pipeline with autocdc.run().")));
	if (!database_is_served())
		ereport(WARNING,
				(errmsg("database \"%s\" is not in autocdc.databases; its schedules do not run",
						get_database_name(MyDatabaseId)),
				 errhint("Add it to autocdc.databases and reload the configuration.")));

	acdc_catalog_pipeline_set_schedule(pipeline, every);
	SPI_finish();
	PG_RETURN_VOID();
}

Datum
autocdc_unschedule(PG_FUNCTION_ARGS)
{
	char	   *pipeline = text_to_cstring(PG_GETARG_TEXT_PP(0));

	autocdc_refuse_within_flow("autocdc.unschedule()");
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	(void) owned_pipeline(pipeline);
	acdc_catalog_pipeline_clear_schedule(pipeline);
	SPI_finish();
	PG_RETURN_VOID();
}
