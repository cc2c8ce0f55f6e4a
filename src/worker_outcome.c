/*-------------------------------------------------------------------------
 * worker_outcome.c
 *	  What a pipeline's row says about its scheduled runs, written by the
 *	  scheduler and the run workers alike: the lease a run takes before its
 *	  worker starts, the outcome that replaces it, and the one back-off
 *	  after a failure.
 *
 * A lease marks the pipeline running and moves its next run to where a
 * failure would put it, before the worker exists: a worker that crashes,
 * is terminated, cannot connect or cannot record its outcome is then
 * tried again no sooner than after a failed run, never in a tight loop.
 * The outcome the worker records, or the interruption recorded when the
 * worker stopped without one (run_history.c), replaces the lease.
 *-------------------------------------------------------------------------
 */
#include "worker.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "utils/builtins.h"
#include "utils/guc.h"

/*
 * The wait before the next try after `failures` (an SQL expression on p,
 * the pipeline's row) failures in a row: the schedule's interval (at least
 * autocdc.naptime), doubled with each failure after the first, at most
 * autocdc.max_retry_delay.  The settings are integers, pasted as literals.
 */
static char *
retry_delay_sql(const char *failures)
{
	return psprintf("pg_catalog.make_interval(secs => LEAST(%d::pg_catalog.float8, "
					"      GREATEST(EXTRACT(epoch FROM p.schedule)::pg_catalog.float8, %d OPERATOR(pg_catalog./) 1000.0::pg_catalog.float8) "
					"      OPERATOR(pg_catalog.*) pg_catalog.power(2::pg_catalog.float8, LEAST((%s) OPERATOR(pg_catalog.-) 1, 30))))",
					autocdc_max_retry_delay_s, autocdc_naptime_ms, failures);
}

/*
 * Leases a due pipeline to a run about to start: running, and next due as
 * if this run failed.  False when it is no longer due, or when another
 * transaction holds its row (a manual run's, which has it busy anyway).
 */
bool
pipeline_lease(int64 id)
{
	Oid			argtypes[1] = {INT8OID};
	Datum		values[1] = {Int64GetDatum(id)};

	/* a manual run's transaction may hold the row until it ends: not waited for */
	catalog_exec("SELECT 1 FROM autocdc.pipeline WHERE id OPERATOR(pg_catalog.=) $1 "
				 "   FOR UPDATE SKIP LOCKED",
				 1, argtypes, values, NULL);
	if (SPI_processed != 1)
		return false;
	catalog_exec(psprintf("UPDATE autocdc.pipeline p SET last_status = 'running', last_error = NULL, "
						  "       last_started_at = pg_catalog.clock_timestamp(), "
						  "       next_run_at = pg_catalog.clock_timestamp() OPERATOR(pg_catalog.+) %s "
						  " WHERE p.id OPERATOR(pg_catalog.=) $1 AND p.schedule IS NOT NULL "
						  "   AND p.last_status IS DISTINCT FROM 'running' "
						  "   AND COALESCE(p.next_run_at, '-infinity') OPERATOR(pg_catalog.<=) pg_catalog.now()",
						  retry_delay_sql("p.failures OPERATOR(pg_catalog.+) 1")),
				 1, argtypes, values, NULL);
	return SPI_processed == 1;
}

/*
 * Records how a run went ('success', 'failed', 'interrupted' or 'busy') and
 * when the next one is due: the schedule's next tick; for a continuous
 * pipeline at once, or after naptime when nothing was new (rows_read 0);
 * after naptime when busy; after a failure or an interruption (which
 * counts as one: a run that keeps being cut short must not loop), the
 * back-off.  With only_running, only over a
 * lease nothing replaced yet.
 */
void
pipeline_record_outcome(int64 id, const char *status, const char *error,
						int64 rows_read, bool only_running)
{
	Oid			argtypes[4] = {INT8OID, TEXTOID, TEXTOID, INT8OID};
	Datum		values[4];
	char		nulls[4] = {' ', ' ', ' ', ' '};

	values[0] = Int64GetDatum(id);
	values[1] = CStringGetTextDatum(status);
	if (error)
		values[2] = CStringGetTextDatum(error);
	else
		nulls[2] = 'n';
	values[3] = Int64GetDatum(rows_read);
	catalog_exec(psprintf("UPDATE autocdc.pipeline p SET last_status = $2, last_error = $3, "
						  "  last_finished_at = pg_catalog.clock_timestamp(), "
						  "  failures = CASE $2 WHEN 'failed' THEN p.failures OPERATOR(pg_catalog.+) 1 "
						  "                     WHEN 'interrupted' THEN p.failures OPERATOR(pg_catalog.+) 1 "
						  "                     WHEN 'success' THEN 0 ELSE p.failures END, "
						  "  next_run_at = CASE "
						  "    WHEN p.schedule IS NULL THEN NULL "
						  "    WHEN $2 OPERATOR(pg_catalog.=) ANY ('{failed,interrupted}') THEN pg_catalog.clock_timestamp() OPERATOR(pg_catalog.+) %s "
						  "    WHEN $2 OPERATOR(pg_catalog.=) 'busy' OR (p.schedule OPERATOR(pg_catalog.=) '0' AND $4 OPERATOR(pg_catalog.=) 0) "
						  "      THEN pg_catalog.clock_timestamp() OPERATOR(pg_catalog.+) "
						  "           pg_catalog.make_interval(secs => %d OPERATOR(pg_catalog./) 1000.0) "
						  "    WHEN p.schedule OPERATOR(pg_catalog.=) '0' THEN pg_catalog.clock_timestamp() "
						  "    ELSE GREATEST(pg_catalog.clock_timestamp(), p.last_started_at OPERATOR(pg_catalog.+) p.schedule) END "
						  "WHERE p.id OPERATOR(pg_catalog.=) $1%s",
						  retry_delay_sql("p.failures OPERATOR(pg_catalog.+) 1"),
						  autocdc_naptime_ms,
						  only_running ? " AND p.last_status OPERATOR(pg_catalog.=) 'running'" : ""),
				 4, argtypes, values, nulls);
}

/* Why a run that went on past autocdc.max_run_time failed. */
char *
run_time_exceeded_reason(void)
{
	return psprintf("the run exceeded autocdc.max_run_time (%s)",
					GetConfigOptionByName("autocdc.max_run_time", NULL, false));
}

/*
 * Settings a worker's own bookkeeping needs whatever the database's
 * settings say (it connects as the bootstrap superuser, so the database's
 * and that role's settings apply): it must be able to write its catalog.
 */
void
worker_force_settings(void)
{
	SetConfigOption("default_transaction_read_only", "off", PGC_SUSET, PGC_S_OVERRIDE);
	SetConfigOption("transaction_read_only", "off", PGC_SUSET, PGC_S_OVERRIDE);
}
