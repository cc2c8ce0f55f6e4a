/*-------------------------------------------------------------------------
 * run_history.c
 *	  autocdc.run_history, one row per run of a pipeline, and what a run
 *	  that was interrupted leaves behind.
 *
 * A scheduled run's row is committed as 'running' by its worker before the
 * run starts, so that other sessions see it, and completed in the run's
 * own transaction.  A run that is cancelled or times out is rolled back
 * whole; its worker records it in a new transaction.  A worker that exits
 * without an outcome (terminated, or a fatal error) is recorded by its
 * scheduler, and a run cut short by a crash or a restart by the next
 * scheduler, which finds its pipeline still leased.  Either way the
 * pipeline's row says 'interrupted', the run's history row too, and the
 * event log gets one 'interrupted' row per flow of the pipeline: all of
 * them were rolled back.  A manual run writes its row, and its pipeline's,
 * in the caller's transaction (README, Run history).
 *-------------------------------------------------------------------------
 */
#include "worker.h"

#include "access/xact.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/timestamp.h"

/*
 * The run this process is running for a scheduler (set once by the run
 * worker, which runs one run and exits); 0 in every other backend.
 */
int64		autocdc_scheduled_run_id = 0;

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
run_history_begin(const char *pipeline, Oid owner)
{
	Oid			argtypes[3] = {TEXTOID, OIDOID, INT4OID};
	Datum		values[3];

	values[0] = CStringGetTextDatum(pipeline);
	values[1] = ObjectIdGetDatum(owner);
	values[2] = Int32GetDatum(MyProcPid);
	catalog_exec("INSERT INTO autocdc.run_history (run_id, pipeline, trigger, pid, status, "
				 "       started_at, run_by, pipeline_owner) "
				 "VALUES (pg_catalog.nextval('autocdc.run_id_seq'), $1, 'scheduled', $3, 'running', "
				 "        pg_catalog.clock_timestamp(), $2::pg_catalog.regrole, $2::pg_catalog.regrole) "
				 "RETURNING run_id",
				 3, argtypes, values, NULL);
	return spi_int64(0, 1);
}

/* A scheduled run ends: its row says how (or goes, when the run did nothing). */
void
run_history_end(int64 run_id, const char *pipeline, const char *status,
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
		catalog_exec("DELETE FROM autocdc.run_history "
					 " WHERE run_id OPERATOR(pg_catalog.=) $1 AND pipeline OPERATOR(pg_catalog.=) $2",
					 2, argtypes, values, nulls);
	else
		catalog_exec("UPDATE autocdc.run_history SET status = $3, error = $4, rows_read = $5, "
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
	catalog_exec("UPDATE autocdc.pipeline SET last_started_at = $2, "
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
run_history_manual(int64 run_id, const char *pipeline, TimestampTz started,
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
		catalog_exec("INSERT INTO autocdc.run_history (run_id, pipeline, trigger, pid, status, "
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
	catalog_exec("UPDATE autocdc.run_history SET status = 'interrupted', error = $2, "
				 "       ended_at = pg_catalog.clock_timestamp() "
				 " WHERE pipeline OPERATOR(pg_catalog.=) $1 AND status OPERATOR(pg_catalog.=) 'running' "
				 "RETURNING run_id, started_at",
				 4, argtypes, values, nulls);
	if (SPI_processed == 0)
		catalog_exec("INSERT INTO autocdc.run_history (run_id, pipeline, trigger, status, "
					 "       started_at, ended_at, error, run_by, pipeline_owner) "
					 "VALUES (pg_catalog.nextval('autocdc.run_id_seq'), $1, 'scheduled', 'interrupted', "
					 "        COALESCE($4, pg_catalog.clock_timestamp()), pg_catalog.clock_timestamp(), $2, "
					 "        $3::pg_catalog.regrole, $3::pg_catalog.regrole) "
					 "RETURNING run_id, started_at",
					 4, argtypes, values, nulls);
	/* the latest, should there be more than one */
	for (uint64 i = 0; i < SPI_processed; i++)
		if (spi_int64(i, 1) > run_id)
		{
			run_id = spi_int64(i, 1);
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
	catalog_exec("WITH logged AS ("
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
record_interrupted_run(int64 pipeline_id, const char *reason, bool skip_locked)
{
	Oid			argtypes[1] = {INT8OID};
	Datum		values[1] = {Int64GetDatum(pipeline_id)};
	char	   *pipeline;
	TimestampTz started;
	TimestampTz run_started = 0;
	Oid			owner;
	bool		isnull;
	int64		run_id;

	catalog_exec(psprintf("SELECT name, owner::pg_catalog.oid, last_started_at "
						  "  FROM autocdc.pipeline WHERE id OPERATOR(pg_catalog.=) $1 "
						  "   AND last_status OPERATOR(pg_catalog.=) 'running' FOR UPDATE%s",
						  skip_locked ? " SKIP LOCKED" : ""),
				 1, argtypes, values, NULL);
	if (SPI_processed != 1)
		return false;
	pipeline = spi_value(0, 1);
	owner = DatumGetObjectId(SPI_getbinval(SPI_tuptable->vals[0],
										   SPI_tuptable->tupdesc, 2, &isnull));
	started = spi_timestamptz(0, 3);
	pipeline_record_outcome(pipeline_id, "interrupted", reason, 0, true);
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
record_interrupted_manual_run(int64 pipeline_id, int64 run_id, int pid, Oid run_by,
							  TimestampTz started, const char *reason)
{
	Oid			argtypes[6] = {INT8OID, INT8OID, INT4OID, OIDOID, TIMESTAMPTZOID, TEXTOID};
	Datum		values[6];
	char	   *pipeline;
	Oid			owner;
	bool		isnull;
	ManualOutcome o;

	values[0] = Int64GetDatum(pipeline_id);
	values[1] = Int64GetDatum(run_id);
	values[2] = Int32GetDatum(pid);
	values[3] = ObjectIdGetDatum(run_by);
	values[4] = TimestampTzGetDatum(started);
	values[5] = CStringGetTextDatum(reason);
	catalog_exec("SELECT name, owner::pg_catalog.oid FROM autocdc.pipeline "
				 " WHERE id OPERATOR(pg_catalog.=) $1",
				 1, argtypes, values, NULL);
	if (SPI_processed != 1)
		return false;
	pipeline = spi_value(0, 1);
	owner = DatumGetObjectId(SPI_getbinval(SPI_tuptable->vals[0],
										   SPI_tuptable->tupdesc, 2, &isnull));
	catalog_exec("INSERT INTO autocdc.run_history (run_id, pipeline, trigger, pid, status, "
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
