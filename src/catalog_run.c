/*-------------------------------------------------------------------------
 * catalog_run.c
 *	  A pipeline's runs in autocdc's catalog (catalog.h): its row's
 *	  schedule and scheduled-run state (autocdc.pipeline), one row per run
 *	  (autocdc.run_history), and what a run that was interrupted leaves
 *	  behind.
 *
 * The pipeline's row is written by the scheduler and the run workers
 * alike: the lease a run takes before its worker starts, the outcome that
 * replaces it, and the one back-off after a failure.  A lease marks the
 * pipeline running and moves its next run to where a failure would put
 * it, before the worker exists: a worker that crashes, is terminated,
 * cannot connect or cannot record its outcome is then tried again no
 * sooner than after a failed run, never in a tight loop.  The outcome the
 * worker records, or the interruption recorded when the worker stopped
 * without one, replaces the lease.
 *
 * A scheduled run's history row is committed as 'running' by its worker
 * before the run starts, so that other sessions see it, and completed in
 * the run's own transaction.  A run that is cancelled or times out is
 * rolled back whole; its worker records it in a new transaction.  A worker
 * that exits without an outcome (terminated, or a fatal error) is recorded
 * by its scheduler, and a run cut short by a crash or a restart by the
 * next scheduler, which finds its pipeline still leased.  Either way the
 * pipeline's row says 'interrupted', the run's history row too, and the
 * event log gets one 'interrupted' row per flow of the pipeline: all of
 * them were rolled back.  A manual run writes its row, and its pipeline's,
 * in the caller's transaction (README, Run history).
 *-------------------------------------------------------------------------
 */
#include "catalog.h"

#include "access/xact.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/timestamp.h"

/* The pipeline's name and owner; false when there is no such pipeline. */
bool
acdc_catalog_pipeline_by_id(int64 id, char **name, Oid *owner)
{
	Oid			argtypes[1] = {INT8OID};
	Datum		values[1] = {Int64GetDatum(id)};
	bool		isnull;

	acdc_catalog_exec("SELECT name, owner::pg_catalog.oid FROM autocdc.pipeline "
				 " WHERE id OPERATOR(pg_catalog.=) $1",
				 1, argtypes, values, NULL);
	if (SPI_processed != 1)
		return false;
	*name = acdc_spi_value(0, 1);
	*owner = DatumGetObjectId(SPI_getbinval(SPI_tuptable->vals[0],
											SPI_tuptable->tupdesc, 2, &isnull));
	return true;
}

/* The ids of the named pipelines, as int64 * in a List. */
List *
acdc_catalog_pipeline_ids(List *names)
{
	Oid			argtypes[1] = {TEXTARRAYOID};
	Datum		values[1];
	List	   *ids = NIL;

	if (names == NIL)
		return NIL;
	values[0] = acdc_list_to_text_array(names);
	acdc_catalog_exec("SELECT id FROM autocdc.pipeline WHERE name OPERATOR(pg_catalog.=) ANY ($1)",
				 1, argtypes, values, NULL);
	for (uint64 i = 0; i < SPI_processed; i++)
	{
		int64	   *id = palloc(sizeof(int64));

		*id = acdc_spi_int64(i, 1);
		ids = lappend(ids, id);
	}
	return ids;
}

/* A new run id, for a manual run (a scheduled run's is its history row's). */
int64
acdc_catalog_next_run_id(void)
{
	acdc_catalog_exec("SELECT pg_catalog.nextval('autocdc.run_id_seq')", 0, NULL, NULL, NULL);
	return acdc_spi_int64(0, 1);
}

/* The pipeline is run every `every` (0: continuously), from now on. */
void
acdc_catalog_pipeline_set_schedule(const char *pipeline, Interval *every)
{
	Oid			argtypes[2] = {TEXTOID, INTERVALOID};
	Datum		values[2];

	values[0] = CStringGetTextDatum(pipeline);
	values[1] = IntervalPGetDatum(every);
	acdc_catalog_exec("UPDATE autocdc.pipeline SET schedule = $2, next_run_at = pg_catalog.now(), "
				 "       failures = 0 WHERE name OPERATOR(pg_catalog.=) $1",
				 2, argtypes, values, NULL);
}

void
acdc_catalog_pipeline_clear_schedule(const char *pipeline)
{
	Oid			argtypes[1] = {TEXTOID};
	Datum		values[1] = {CStringGetTextDatum(pipeline)};

	acdc_catalog_exec("UPDATE autocdc.pipeline SET schedule = NULL, next_run_at = NULL "
				 " WHERE name OPERATOR(pg_catalog.=) $1",
				 1, argtypes, values, NULL);
}

/* The pipelines leased to a run ('running'): their ids, as int64 * in a List. */
List *
acdc_catalog_running_pipelines(void)
{
	List	   *ids = NIL;

	acdc_catalog_exec("SELECT id FROM autocdc.pipeline WHERE last_status OPERATOR(pg_catalog.=) 'running'",
				 0, NULL, NULL, NULL);
	for (uint64 i = 0; i < SPI_processed; i++)
	{
		int64	   *id = palloc(sizeof(int64));

		*id = acdc_spi_int64(i, 1);
		ids = lappend(ids, id);
	}
	return ids;
}

/*
 * The due pipelines, oldest first, at most per_owner of each owner, as
 * CatalogPipeline * in a List.
 */
List *
acdc_catalog_due_pipelines(int per_owner)
{
	Oid			argtypes[1] = {INT4OID};
	Datum		values[1] = {Int32GetDatum(per_owner)};
	List	   *due = NIL;

	acdc_catalog_exec("SELECT id, owner FROM ("
				 "  SELECT id, owner::pg_catalog.oid, next_run_at, pg_catalog.row_number() OVER "
				 "         (PARTITION BY owner ORDER BY next_run_at NULLS FIRST, id) AS n "
				 "    FROM autocdc.pipeline "
				 "   WHERE schedule IS NOT NULL AND last_status IS DISTINCT FROM 'running' "
				 "     AND COALESCE(next_run_at, '-infinity') OPERATOR(pg_catalog.<=) pg_catalog.now()) d "
				 " WHERE n OPERATOR(pg_catalog.<=) $1 "
				 " ORDER BY next_run_at NULLS FIRST, id",
				 1, argtypes, values, NULL);
	for (uint64 i = 0; i < SPI_processed; i++)
	{
		CatalogPipeline *p = palloc(sizeof(CatalogPipeline));
		bool		isnull;

		p->id = acdc_spi_int64(i, 1);
		p->owner = DatumGetObjectId(SPI_getbinval(SPI_tuptable->vals[i],
												  SPI_tuptable->tupdesc, 2, &isnull));
		due = lappend(due, p);
	}
	return due;
}

/*
 * How long until the next scheduled pipeline is due, in ms, into *ms;
 * false when none is due later than now.
 */
bool
acdc_catalog_next_due_ms(int64 *ms)
{
	acdc_catalog_exec("SELECT (EXTRACT(epoch FROM pg_catalog.min(next_run_at) OPERATOR(pg_catalog.-) pg_catalog.now()) "
				 "        OPERATOR(pg_catalog.*) 1000)::pg_catalog.int8 "
				 "  FROM autocdc.pipeline WHERE schedule IS NOT NULL "
				 "   AND next_run_at OPERATOR(pg_catalog.>) pg_catalog.now()",
				 0, NULL, NULL, NULL);
	if (acdc_spi_value(0, 1) == NULL)
		return false;
	*ms = acdc_spi_int64(0, 1);
	return true;
}

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
acdc_pipeline_lease(int64 id)
{
	Oid			argtypes[1] = {INT8OID};
	Datum		values[1] = {Int64GetDatum(id)};

	/* a manual run's transaction may hold the row until it ends: not waited for */
	acdc_catalog_exec("SELECT 1 FROM autocdc.pipeline WHERE id OPERATOR(pg_catalog.=) $1 "
				 "   FOR UPDATE SKIP LOCKED",
				 1, argtypes, values, NULL);
	if (SPI_processed != 1)
		return false;
	acdc_catalog_exec(psprintf("UPDATE autocdc.pipeline p SET last_status = 'running', last_error = NULL, "
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
acdc_pipeline_record_outcome(int64 id, const char *status, const char *error,
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
	acdc_catalog_exec(psprintf("UPDATE autocdc.pipeline p SET last_status = $2, last_error = $3, "
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

/*
 * A run that did nothing (read nothing and succeeded, or found its
 * pipeline busy) is kept out of the history unless autocdc.log_empty_runs,
 * as it is out of the event log: continuous pipelines would fill it.
 */
static bool
run_is_kept(const char *status, int64 rows_read)
{
	if (autocdc_log_empty_runs)
		return true;
	if (strcmp(status, "busy") == 0)
		return false;
	return strcmp(status, "success") != 0 || rows_read > 0;
}

/*
 * A scheduled run starts: its row, 'running', with a new run id (which
 * its flows' event log rows carry).  The caller commits it at once.
 */
int64
acdc_run_history_begin(const char *pipeline, Oid owner)
{
	Oid			argtypes[3] = {TEXTOID, OIDOID, INT4OID};
	Datum		values[3];

	values[0] = CStringGetTextDatum(pipeline);
	values[1] = ObjectIdGetDatum(owner);
	values[2] = Int32GetDatum(MyProcPid);
	acdc_catalog_exec("INSERT INTO autocdc.run_history (run_id, pipeline, trigger, pid, status, "
				 "       started_at, run_by, pipeline_owner) "
				 "VALUES (pg_catalog.nextval('autocdc.run_id_seq'), $1, 'scheduled', $3, 'running', "
				 "        pg_catalog.clock_timestamp(), $2::pg_catalog.regrole, $2::pg_catalog.regrole) "
				 "RETURNING run_id",
				 3, argtypes, values, NULL);
	return acdc_spi_int64(0, 1);
}

/* A scheduled run ends: its row says how (or goes, when the run did nothing). */
void
acdc_run_history_end(int64 run_id, const char *pipeline, const char *status,
				const char *error, int64 rows_read)
{
	Oid			argtypes[5] = {INT8OID, TEXTOID, TEXTOID, TEXTOID, INT8OID};
	Datum		values[5];
	char		nulls[5] = {' ', ' ', ' ', ' ', ' '};

	values[0] = Int64GetDatum(run_id);
	values[1] = CStringGetTextDatum(pipeline);
	values[2] = CStringGetTextDatum(status);
	if (error)
		values[3] = CStringGetTextDatum(error);
	else
		nulls[3] = 'n';
	values[4] = Int64GetDatum(rows_read);
	if (!run_is_kept(status, rows_read))
		acdc_catalog_exec("DELETE FROM autocdc.run_history "
					 " WHERE run_id OPERATOR(pg_catalog.=) $1 AND pipeline OPERATOR(pg_catalog.=) $2",
					 2, argtypes, values, nulls);
	else
		acdc_catalog_exec("UPDATE autocdc.run_history SET status = $3, error = $4, rows_read = $5, "
					 "       ended_at = pg_catalog.clock_timestamp() "
					 " WHERE run_id OPERATOR(pg_catalog.=) $1 AND pipeline OPERATOR(pg_catalog.=) $2",
					 5, argtypes, values, nulls);
}

typedef struct ManualOutcome
{
	const char *pipeline;
	TimestampTz started;
	const char *status;
	const char *error;
} ManualOutcome;

/*
 * The pipeline's last run, as a scheduled run's outcome sets it; its
 * schedule (next run, failures in a row) is the scheduler's alone.  A
 * pipeline leased to a scheduled run ('running') is left to that run,
 * which finds the pipeline busy (this run holds it) and says so: this
 * also never waits for, nor holds up, the scheduler's row.
 */
static void
update_pipeline_row(void *arg)
{
	ManualOutcome *o = arg;
	Oid			argtypes[4] = {TEXTOID, TIMESTAMPTZOID, TEXTOID, TEXTOID};
	Datum		values[4];
	char		nulls[4] = {' ', ' ', ' ', ' '};

	values[0] = CStringGetTextDatum(o->pipeline);
	values[1] = TimestampTzGetDatum(o->started);
	values[2] = CStringGetTextDatum(o->status);
	if (o->error)
		values[3] = CStringGetTextDatum(o->error);
	else
		nulls[3] = 'n';
	acdc_catalog_exec("UPDATE autocdc.pipeline SET last_started_at = $2, "
				 "       last_finished_at = pg_catalog.clock_timestamp(), "
				 "       last_status = $3, last_error = $4 "
				 " WHERE name OPERATOR(pg_catalog.=) $1 "
				 "   AND last_status IS DISTINCT FROM 'running'",
				 4, argtypes, values, nulls);
}

/*
 * A manual run of one pipeline ended (in the caller's transaction): its
 * history row and its pipeline's last run.  Under REPEATABLE READ or
 * SERIALIZABLE a pipeline row the scheduler changed since the snapshot is
 * a serialization failure; the row is then left as it is rather than fail
 * the caller's run for it (the history row says how the run went).
 */
void
acdc_run_history_manual(int64 run_id, const char *pipeline, TimestampTz started,
				   const char *status, const char *error, int64 rows_read)
{
	ManualOutcome o = {pipeline, started, status, error};
	ErrorData  *edata;

	if (run_is_kept(status, rows_read))
	{
		Oid			argtypes[8] = {INT8OID, TEXTOID, INT4OID, TEXTOID, TIMESTAMPTZOID,
		INT8OID, TEXTOID, OIDOID};
		Datum		values[8];
		char		nulls[8] = {' ', ' ', ' ', ' ', ' ', ' ', ' ', ' '};

		values[0] = Int64GetDatum(run_id);
		values[1] = CStringGetTextDatum(pipeline);
		values[2] = Int32GetDatum(MyProcPid);
		values[3] = CStringGetTextDatum(status);
		values[4] = TimestampTzGetDatum(started);
		values[5] = Int64GetDatum(rows_read);
		if (error)
			values[6] = CStringGetTextDatum(error);
		else
			nulls[6] = 'n';
		values[7] = ObjectIdGetDatum(GetUserId());
		acdc_catalog_exec("INSERT INTO autocdc.run_history (run_id, pipeline, trigger, pid, status, "
					 "       started_at, ended_at, rows_read, error, run_by, pipeline_owner) "
					 "SELECT $1, $2, 'manual', $3, $4, $5, pg_catalog.clock_timestamp(), $6, $7, "
					 "       $8::pg_catalog.regrole, p.owner "
					 "  FROM autocdc.pipeline p WHERE p.name OPERATOR(pg_catalog.=) $2",
					 8, argtypes, values, nulls);
	}
	edata = autocdc_try(update_pipeline_row, &o);
	if (edata && edata->sqlerrcode != ERRCODE_T_R_SERIALIZATION_FAILURE)
		ReThrowError(edata);
	if (edata)
		FreeErrorData(edata);
}

/* A timestamptz column of the last SPI result; 0 (never a real one here) for NULL. */
static TimestampTz
spi_timestamptz(int row, int col)
{
	bool		isnull;
	Datum		d = SPI_getbinval(SPI_tuptable->vals[row], SPI_tuptable->tupdesc, col, &isnull);

	return isnull ? 0 : DatumGetTimestampTz(d);
}

/*
 * The history row of the pipeline's interrupted run, 'interrupted' now:
 * the rows it left 'running' (one, normally), or a new row when the run
 * stopped before it wrote one.  Returns its run id, with when it started.
 */
static int64
interrupt_history(const char *pipeline, Oid owner, TimestampTz started,
				  const char *reason, TimestampTz *run_started)
{
	Oid			argtypes[4] = {TEXTOID, TEXTOID, OIDOID, TIMESTAMPTZOID};
	Datum		values[4];
	char		nulls[4] = {' ', ' ', ' ', ' '};
	int64		run_id = 0;

	values[0] = CStringGetTextDatum(pipeline);
	values[1] = CStringGetTextDatum(reason);
	values[2] = ObjectIdGetDatum(owner);
	values[3] = TimestampTzGetDatum(started);
	if (started == 0)
		nulls[3] = 'n';
	acdc_catalog_exec("UPDATE autocdc.run_history SET status = 'interrupted', error = $2, "
				 "       ended_at = pg_catalog.clock_timestamp() "
				 " WHERE pipeline OPERATOR(pg_catalog.=) $1 AND status OPERATOR(pg_catalog.=) 'running' "
				 "RETURNING run_id, started_at",
				 4, argtypes, values, nulls);
	if (SPI_processed == 0)
		acdc_catalog_exec("INSERT INTO autocdc.run_history (run_id, pipeline, trigger, status, "
					 "       started_at, ended_at, error, run_by, pipeline_owner) "
					 "VALUES (pg_catalog.nextval('autocdc.run_id_seq'), $1, 'scheduled', 'interrupted', "
					 "        COALESCE($4, pg_catalog.clock_timestamp()), pg_catalog.clock_timestamp(), $2, "
					 "        $3::pg_catalog.regrole, $3::pg_catalog.regrole) "
					 "RETURNING run_id, started_at",
					 4, argtypes, values, nulls);
	/* the latest, should there be more than one */
	for (uint64 i = 0; i < SPI_processed; i++)
		if (acdc_spi_int64(i, 1) > run_id)
		{
			run_id = acdc_spi_int64(i, 1);
			*run_started = spi_timestamptz(i, 2);
		}
	return run_id;
}

/*
 * One 'interrupted' row per flow of the pipeline in the event log, and
 * the flows' last run in their checkpoint rows: the run's transaction was
 * rolled back whole, flows it had finished included.  Scheduled runs act
 * as the pipeline's owner.
 */
static void
interrupt_flows(int64 run_id, const char *pipeline, Oid owner,
				TimestampTz run_started, const char *reason)
{
	Oid			argtypes[5] = {INT8OID, TEXTOID, TEXTOID, TIMESTAMPTZOID, OIDOID};
	Datum		values[5];

	values[0] = Int64GetDatum(run_id);
	values[1] = CStringGetTextDatum(pipeline);
	values[2] = CStringGetTextDatum(reason);
	values[3] = TimestampTzGetDatum(run_started);
	values[4] = ObjectIdGetDatum(owner);
	acdc_catalog_exec("WITH logged AS ("
				 " INSERT INTO autocdc.event_log (run_id, pipeline, flow, target, kind, read_mode, "
				 "  full_refresh, status, error, duration, run_by, flow_owner, pipeline_owner) "
				 " SELECT $1, f.pipeline, f.name, f.target::pg_catalog.text, f.kind, "
				 "  CASE WHEN f.read_mode OPERATOR(pg_catalog.=) 'incremental' AND NOT f.once "
				 "       THEN 'incremental' ELSE 'full' END, "
				 "  false, 'interrupted', $3, "
				 "  GREATEST(pg_catalog.clock_timestamp() OPERATOR(pg_catalog.-) $4, '0'), "
				 "  $5::pg_catalog.regrole, f.owner, $5::pg_catalog.regrole "
				 "   FROM autocdc.flow f WHERE f.pipeline OPERATOR(pg_catalog.=) $2 "
				 " RETURNING flow, logged_at) "
				 "UPDATE autocdc.checkpoint c SET last_run_at = l.logged_at, "
				 "       last_status = 'interrupted', last_error = $3, last_rows_read = 0, "
				 "       runs = c.runs OPERATOR(pg_catalog.+) 1 "
				 "  FROM logged l WHERE c.flow OPERATOR(pg_catalog.=) l.flow",
				 5, argtypes, values, NULL);
}

/*
 * Records the interruption of the pipeline's scheduled run, if its row
 * still says 'running' (nothing recorded an outcome): the pipeline's last
 * status, backed off as after a failure; its history row; its flows' event
 * log rows.  With skip_locked (the scheduler), a pipeline row another
 * transaction holds is left for a later pass rather than waited for.
 * Returns whether it recorded anything.
 */
bool
acdc_record_interrupted_run(int64 pipeline_id, const char *reason, bool skip_locked)
{
	Oid			argtypes[1] = {INT8OID};
	Datum		values[1] = {Int64GetDatum(pipeline_id)};
	char	   *pipeline;
	TimestampTz started;
	TimestampTz run_started = 0;
	Oid			owner;
	bool		isnull;
	int64		run_id;

	acdc_catalog_exec(psprintf("SELECT name, owner::pg_catalog.oid, last_started_at "
						  "  FROM autocdc.pipeline WHERE id OPERATOR(pg_catalog.=) $1 "
						  "   AND last_status OPERATOR(pg_catalog.=) 'running' FOR UPDATE%s",
						  skip_locked ? " SKIP LOCKED" : ""),
				 1, argtypes, values, NULL);
	if (SPI_processed != 1)
		return false;
	pipeline = acdc_spi_value(0, 1);
	owner = DatumGetObjectId(SPI_getbinval(SPI_tuptable->vals[0],
										   SPI_tuptable->tupdesc, 2, &isnull));
	started = spi_timestamptz(0, 3);
	acdc_pipeline_record_outcome(pipeline_id, "interrupted", reason, 0, true);
	run_id = interrupt_history(pipeline, owner, started, reason, &run_started);
	interrupt_flows(run_id, pipeline, owner, run_started, reason);
	return true;
}

/*
 * A manual run that was cancelled (or whose session was terminated): its
 * caller's transaction rolled its bookkeeping back, so the scheduler of
 * its database records it from what the run left in shared memory
 * (manual_runs.c).  False when the pipeline is gone.
 */
bool
acdc_record_interrupted_manual_run(int64 pipeline_id, int64 run_id, int pid, Oid run_by,
							  TimestampTz started, const char *reason)
{
	Oid			argtypes[6] = {INT8OID, INT8OID, INT4OID, OIDOID, TIMESTAMPTZOID, TEXTOID};
	Datum		values[6];
	char	   *pipeline;
	Oid			owner;
	ManualOutcome o;

	values[0] = Int64GetDatum(pipeline_id);
	values[1] = Int64GetDatum(run_id);
	values[2] = Int32GetDatum(pid);
	values[3] = ObjectIdGetDatum(run_by);
	values[4] = TimestampTzGetDatum(started);
	values[5] = CStringGetTextDatum(reason);
	if (!acdc_catalog_pipeline_by_id(pipeline_id, &pipeline, &owner))
		return false;
	acdc_catalog_exec("INSERT INTO autocdc.run_history (run_id, pipeline, trigger, pid, status, "
				 "       started_at, ended_at, rows_read, error, run_by, pipeline_owner) "
				 "SELECT $2, p.name, 'manual', $3, 'interrupted', $5, pg_catalog.clock_timestamp(), "
				 "       0, $6, $4::pg_catalog.regrole, p.owner "
				 "  FROM autocdc.pipeline p WHERE p.id OPERATOR(pg_catalog.=) $1 "
				 "ON CONFLICT DO NOTHING",
				 6, argtypes, values, NULL);
	interrupt_flows(run_id, pipeline, owner, started, reason);
	o.pipeline = pipeline;
	o.started = started;
	o.status = "interrupted";
	o.error = reason;
	update_pipeline_row(&o);
	return true;
}
