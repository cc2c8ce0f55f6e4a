/*-------------------------------------------------------------------------
 * worker_run.c
 *	  A run worker: one scheduled run of one pipeline, connected to the
 *	  database as the pipeline's owner, so it can do nothing its owner
 *	  could not (autocdc.run() then runs each flow as its own owner).
 *
 *	  It marks the pipeline running, runs it, and records the outcome and
 *	  the next run: the schedule's next tick; for a continuous pipeline at
 *	  once, or after autocdc.naptime when nothing was new; after a failure,
 *	  a delay that doubles with each failure in a row, up to
 *	  autocdc.max_retry_delay.  A pipeline a manual run holds is "busy" and
 *	  tried again after naptime.
 *-------------------------------------------------------------------------
 */
#include "worker.h"

#include "access/xact.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "storage/ipc.h"
#include "tcop/tcopprot.h"
#include "utils/builtins.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"

static void
begin_work(const char *what)
{
	SetCurrentStatementStartTimestamp();
	StartTransactionCommand();
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	PushActiveSnapshot(GetTransactionSnapshot());
	pgstat_report_activity(STATE_RUNNING, what);
}

static void
end_work(void)
{
	SPI_finish();
	PopActiveSnapshot();
	CommitTransactionCommand();
	pgstat_report_stat(true);
	pgstat_report_activity(STATE_IDLE, NULL);
}

/*
 * Marks the pipeline running and returns its name, or NULL when it is no
 * longer scheduled or no longer belongs to `owner`.
 */
static char *
mark_running(RunWorkerArgs *args)
{
	Oid			argtypes[2] = {INT8OID, OIDOID};
	Datum		values[2] = {Int64GetDatum(args->pipeline_id), ObjectIdGetDatum(args->owner)};
	char	   *name = NULL;

	begin_work("autocdc run: starting");
	catalog_exec("UPDATE autocdc.pipeline SET last_status = 'running', last_error = NULL, "
				 "       last_started_at = pg_catalog.clock_timestamp() "
				 " WHERE id OPERATOR(pg_catalog.=) $1 AND schedule IS NOT NULL "
				 "   AND owner OPERATOR(pg_catalog.=) $2::pg_catalog.regrole "
				 "RETURNING name",
				 2, argtypes, values, NULL);
	if (SPI_processed == 1)
		name = MemoryContextStrdup(TopMemoryContext, spi_value(0, 1));
	end_work();
	return name;
}

/* Records how the run went and when the next one is due. */
static void
record_outcome(int64 id, const char *status, const char *error, int64 rows_read)
{
	Oid			argtypes[6] = {INT8OID, TEXTOID, TEXTOID, INT4OID, INT4OID, INT8OID};
	Datum		values[6];
	char		nulls[6] = {' ', ' ', ' ', ' ', ' ', ' '};

	values[0] = Int64GetDatum(id);
	values[1] = CStringGetTextDatum(status);
	if (error)
		values[2] = CStringGetTextDatum(error);
	else
		nulls[2] = 'n';
	values[3] = Int32GetDatum(autocdc_naptime_ms);
	values[4] = Int32GetDatum(autocdc_max_retry_delay_s);
	values[5] = Int64GetDatum(rows_read);
	catalog_exec("UPDATE autocdc.pipeline p SET last_status = $2, last_error = $3, "
				 "  last_finished_at = pg_catalog.clock_timestamp(), "
				 "  failures = CASE $2 WHEN 'failed' THEN p.failures OPERATOR(pg_catalog.+) 1 "
				 "                     WHEN 'success' THEN 0 ELSE p.failures END, "
				 "  next_run_at = CASE "
				 "    WHEN p.schedule IS NULL THEN NULL "
				 "    WHEN $2 OPERATOR(pg_catalog.=) 'failed' THEN pg_catalog.clock_timestamp() OPERATOR(pg_catalog.+) "
				 "      LEAST(pg_catalog.make_interval(secs => $5), "
				 "            GREATEST(p.schedule, pg_catalog.make_interval(secs => $4 OPERATOR(pg_catalog./) 1000.0)) "
				 "            OPERATOR(pg_catalog.*) pg_catalog.power(2, LEAST(p.failures, 30))) "
				 "    WHEN $2 OPERATOR(pg_catalog.=) 'busy' OR (p.schedule OPERATOR(pg_catalog.=) '0' AND $6 OPERATOR(pg_catalog.=) 0) "
				 "      THEN pg_catalog.clock_timestamp() OPERATOR(pg_catalog.+) "
				 "           pg_catalog.make_interval(secs => $4 OPERATOR(pg_catalog./) 1000.0) "
				 "    WHEN p.schedule OPERATOR(pg_catalog.=) '0' THEN pg_catalog.clock_timestamp() "
				 "    ELSE GREATEST(pg_catalog.clock_timestamp(), p.last_started_at OPERATOR(pg_catalog.+) p.schedule) END "
				 "WHERE p.id OPERATOR(pg_catalog.=) $1",
				 6, argtypes, values, nulls);
}

void
autocdc_run_worker_main(Datum arg)
{
	RunWorkerArgs args;
	char	   *pipeline;
	MemoryContext cxt = CurrentMemoryContext;

	memcpy(&args, MyBgworkerEntry->bgw_extra, sizeof(args));
	pqsignal(SIGTERM, die);
	BackgroundWorkerUnblockSignals();
	BackgroundWorkerInitializeConnectionByOid(args.dboid, args.owner, 0);
	pgstat_report_appname("autocdc run");

	pipeline = mark_running(&args);
	if (pipeline == NULL)
		proc_exit(0);			/* unscheduled or handed over meanwhile */

	PG_TRY();
	{
		Oid			argtypes[1] = {TEXTOID};
		Datum		values[1] = {CStringGetTextDatum(pipeline)};
		int64		failed,
					read;
		char	   *errors;

		begin_work(psprintf("autocdc run of pipeline %s", pipeline));
		spi_exec("SELECT pg_catalog.count(*) FILTER (WHERE r.status OPERATOR(pg_catalog.=) 'failed'), "
				 "       COALESCE(pg_catalog.sum(r.rows_read), 0)::pg_catalog.int8, "
				 "       pg_catalog.string_agg(r.flow, ', ') FILTER (WHERE r.status OPERATOR(pg_catalog.=) 'failed') "
				 "  FROM autocdc.run($1) r",
				 1, argtypes, values, NULL, false);
		failed = spi_int64(0, 1);
		read = spi_int64(0, 2);
		errors = spi_value(0, 3);
		record_outcome(args.pipeline_id, failed > 0 ? "failed" : "success",
					   failed > 0 ? psprintf("flows failed: %s (see autocdc.event_log)", errors) : NULL,
					   read);
		end_work();
	}
	PG_CATCH();
	{
		ErrorData  *edata;
		bool		busy;

		MemoryContextSwitchTo(cxt);
		edata = CopyErrorData();
		FlushErrorState();
		AbortCurrentTransaction();
		busy = edata->sqlerrcode == ERRCODE_LOCK_NOT_AVAILABLE;
		ereport(busy ? LOG : WARNING,
				(errmsg("autocdc run of pipeline \"%s\" %s: %s", pipeline,
						busy ? "deferred" : "failed", edata->message)));
		begin_work("autocdc run: recording a failure");
		record_outcome(args.pipeline_id, busy ? "busy" : "failed", edata->message, 0);
		end_work();
	}
	PG_END_TRY();
	proc_exit(0);
}
