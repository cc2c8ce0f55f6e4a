/*-------------------------------------------------------------------------
 * autocdc.c
 *	  Module entry: settings, and the launcher when preloaded.
 *-------------------------------------------------------------------------
 */
#include "autocdc.h"
#include "progress.h"
#include "worker.h"

#include <limits.h>

#include "executor/spi.h"
#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/guc.h"

PG_MODULE_MAGIC;

int			autocdc_tombstone_retention_s = 2 * 24 * 3600;
char	   *autocdc_databases = NULL;
int			autocdc_max_workers = 4;
int			autocdc_naptime_ms = 1000;
int			autocdc_max_retry_delay_s = 300;
int			autocdc_max_workers_per_role = -1;
int			autocdc_max_run_time_s = 3600;
bool		autocdc_preloaded = false;
bool		autocdc_log_empty_runs = false;
int			autocdc_event_log_retention_s = 7 * 24 * 3600;
int			autocdc_quarantine_retention_s = 30 * 24 * 3600;

extern PGDLLEXPORT void _PG_init(void);

PG_FUNCTION_INFO_V1(autocdc_settings);
/* 0 would let no role run anything: -1 is the automatic bound. */
static bool
check_max_workers_per_role(int *newval, void **extra, GucSource source)
{
	if (*newval == 0)
	{
		GUC_check_errdetail("Use -1 for max_workers - 1 (at least 1), or a positive number.");
		return false;
	}
	return true;
}

void
_PG_init(void)
{
	if (IsBinaryUpgrade)
		return;

	DefineCustomIntVariable("autocdc.tombstone_retention",
							"How long deleted keys are remembered, so that late events older than the delete cannot bring them back.",
							"For targets whose flows set no tombstone_retention of their own. Tombstones older than this are purged by the next run; -1 keeps them forever.",
							&autocdc_tombstone_retention_s,
							2 * 24 * 3600, -1, INT_MAX,
							PGC_SUSET, GUC_UNIT_S,
							NULL, NULL, NULL);
	DefineCustomStringVariable("autocdc.databases",
							   "Databases whose scheduled pipelines the background worker runs.",
							   "A comma-separated list of database names.",
							   &autocdc_databases,
							   "postgres",
							   PGC_SIGHUP, GUC_LIST_INPUT,
							   NULL, NULL, NULL);
	DefineCustomIntVariable("autocdc.max_workers",
							"How many scheduled runs may go on at once in each database.",
							"Each run is a background worker: max_worker_processes must leave room for them.",
							&autocdc_max_workers,
							4, 1, 64,
							PGC_SIGHUP, 0,
							NULL, NULL, NULL);
	DefineCustomIntVariable("autocdc.naptime",
							"How often schedulers look for due pipelines, and how long a continuous pipeline waits when nothing was new.",
							NULL,
							&autocdc_naptime_ms,
							1000, 10, 3600 * 1000,
							PGC_SIGHUP, GUC_UNIT_MS,
							NULL, NULL, NULL);
	DefineCustomIntVariable("autocdc.max_retry_delay",
							"The longest wait before retrying a pipeline whose scheduled runs keep failing.",
							"The wait doubles with each failure in a row, from the schedule's interval (or naptime) up to this.",
							&autocdc_max_retry_delay_s,
							300, 1, 7 * 24 * 3600,
							PGC_SIGHUP, GUC_UNIT_S,
							NULL, NULL, NULL);
	DefineCustomIntVariable("autocdc.max_workers_per_role",
							"How many of a database's scheduled runs one role's pipelines may take at once.",
							"-1: autocdc.max_workers - 1 (at least 1), so that one role cannot take every slot.",
							&autocdc_max_workers_per_role,
							-1, -1, 64,
							PGC_SIGHUP, 0,
							check_max_workers_per_role, NULL, NULL);
	DefineCustomIntVariable("autocdc.max_run_time",
							"The longest a scheduled run may take; a longer one is cancelled and counts as failed.",
							"0: no limit.",
							&autocdc_max_run_time_s,
							3600, 0, INT_MAX / 1000,
							PGC_SIGHUP, GUC_UNIT_S,
							NULL, NULL, NULL);
	DefineCustomBoolVariable("autocdc.log_empty_runs",
							 "Whether a flow's run that read nothing and succeeded is written to autocdc.event_log.",
							 "Off keeps continuous pipelines' idle runs out of the log; autocdc.flows shows every flow's last run either way.",
							 &autocdc_log_empty_runs,
							 false,
							 PGC_SUSET, 0,
							 NULL, NULL, NULL);
	DefineCustomIntVariable("autocdc.event_log_retention",
							"How long rows of autocdc.event_log are kept.",
							"Older rows are deleted by runs and by the background worker's schedulers, a bounded number at a time; -1 keeps them forever.",
							&autocdc_event_log_retention_s,
							7 * 24 * 3600, -1, INT_MAX,
							PGC_SUSET, GUC_UNIT_S,
							NULL, NULL, NULL);
	DefineCustomIntVariable("autocdc.quarantine_retention",
							"How long rows of autocdc.quarantine are kept.",
							"Older rows are deleted with the event log's, a bounded number at a time; -1 keeps them forever.",
							&autocdc_quarantine_retention_s,
							30 * 24 * 3600, -1, INT_MAX,
							PGC_SUSET, GUC_UNIT_S,
							NULL, NULL, NULL);
	MarkGUCPrefixReserved("autocdc");

	if (process_shared_preload_libraries_in_progress)
	{
		autocdc_preloaded = true;
		autocdc_register_launcher();
		acdc_manual_runs_init();
		acdc_progress_init();
	}
}

/*
 * autocdc.settings: every autocdc.* setting with its value and meaning.
 * Calling it loads the library, which defines the settings, so the view
 * works in any session, preloaded or not (SHOW autocdc.x needs the library
 * loaded first).
 */
Datum
autocdc_settings(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;

	InitMaterializedSRF(fcinfo, 0);
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	acdc_spi_exec("SELECT name, setting, unit, context, "
			 "       short_desc || COALESCE(' ' || extra_desc, '') "
			 "  FROM pg_catalog.pg_settings "
			 " WHERE name OPERATOR(pg_catalog.~~) 'autocdc.%' ORDER BY name",
			 0, NULL, NULL, NULL, true);
	for (uint64 i = 0; i < SPI_processed; i++)
	{
		Datum		values[5];
		bool		nulls[5];

		for (int c = 0; c < 5; c++)
			values[c] = SPI_getbinval(SPI_tuptable->vals[i], SPI_tuptable->tupdesc,
									  c + 1, &nulls[c]);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	SPI_finish();
	return (Datum) 0;
}
