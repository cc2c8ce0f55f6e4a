/*-------------------------------------------------------------------------
 * worker_run.c
 *	  A run worker: one scheduled run of one pipeline.
 *
 *	  It connects as the bootstrap superuser, like the scheduler, so that
 *	  nothing of the owner's (its login rights, its role settings) can keep
 *	  it from recording an outcome.  It checks that the pipeline's owner
 *	  still exists, may log in and may connect to the database, then calls
 *	  autocdc.run(pipeline) as that owner in a security-restricted context,
 *	  as a superuser's manual run as that role would (autocdc.run() then
 *	  runs each flow as its own owner), and records the outcome as the
 *	  extension owner.  Its row of autocdc.run_history is committed as
 *	  'running' before the run begins.  Every step after connecting records
 *	  its failure; a run cancelled (pg_cancel_backend, or a timeout of its
 *	  own at autocdc.max_run_time) is rolled back and recorded as
 *	  interrupted (catalog_run.c); a worker that dies without recording an
 *	  outcome is recorded by the scheduler (worker.c).  A pipeline a manual
 *	  run holds is "busy" and tried again after naptime.
 *-------------------------------------------------------------------------
 */
#include "worker.h"
#include "catalog.h"

#include <signal.h>

#include "access/htup_details.h"
#include "access/xact.h"
#include "catalog/pg_authid.h"
#include "catalog/pg_type.h"
#include "commands/dbcommands.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "tcop/tcopprot.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"
#include "utils/timeout.h"

/*
 * The run this process is running for a scheduler (set once by the run
 * worker, which runs one run and exits); 0 in every other backend.
 */
int64		autocdc_scheduled_run_id = 0;

/*
 * A cancel that the run's code catches (PL/pgSQL can catch query_canceled)
 * is followed this long after by a termination, which nothing catches.
 */
#define RUN_TIME_GRACE_MS 2000

/* The autocdc.max_run_time timeouts; the process runs one run. */
static volatile sig_atomic_t run_time_exceeded = false;
static TimeoutId cancel_timeout;
static TimeoutId terminate_timeout;

/* Why a run that went on past autocdc.max_run_time failed. */
char *
acdc_run_time_exceeded_reason(void)
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
acdc_worker_force_settings(void)
{
	SetConfigOption("default_transaction_read_only", "off", PGC_SUSET, PGC_S_OVERRIDE);
	SetConfigOption("transaction_read_only", "off", PGC_SUSET, PGC_S_OVERRIDE);
}

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
 * At autocdc.max_run_time: a cancel, which the next CHECK_FOR_INTERRUPTS
 * raises as an error (autocdc.run() lets it through), ending the run.
 */
static void
cancel_run_handler(void)
{
	run_time_exceeded = true;
	QueryCancelPending = true;
	InterruptPending = true;
	SetLatch(MyLatch);
}

/* After the grace: the worker is terminated; the scheduler records why. */
static void
terminate_run_handler(void)
{
	run_time_exceeded = true;
	ProcDiePending = true;
	InterruptPending = true;
	SetLatch(MyLatch);
}

static void
register_run_timeouts(void)
{
	cancel_timeout = RegisterTimeout(USER_TIMEOUT, cancel_run_handler);
	terminate_timeout = RegisterTimeout(USER_TIMEOUT, terminate_run_handler);
}

static void
enable_run_timeouts(void)
{
	int64		limit_ms = (int64) autocdc_max_run_time_s * 1000;

	if (limit_ms <= 0)
		return;
	enable_timeout_after(cancel_timeout, (int) Min(limit_ms, INT_MAX));
	enable_timeout_after(terminate_timeout,
						 (int) Min(limit_ms + RUN_TIME_GRACE_MS, INT_MAX));
}

static void
disable_run_timeouts(void)
{
	disable_timeout(cancel_timeout, false);
	disable_timeout(terminate_timeout, false);
}

/* The pipeline's name and owner (in `cxt`); false when it was dropped. */
static bool
load_pipeline(int64 id, char **name, Oid *owner, MemoryContext cxt)
{
	char	   *found;

	if (!acdc_catalog_pipeline_by_id(id, &found, owner))
		return false;
	*name = MemoryContextStrdup(cxt, found);
	return true;
}

/*
 * A run acts as the pipeline's owner: it must still exist and be able to
 * connect to this database, as when runs connected as the owner.
 */
static void
check_owner(const char *pipeline, Oid owner)
{
	HeapTuple	tup = SearchSysCache1(AUTHOID, ObjectIdGetDatum(owner));
	bool		can_login;

	if (!HeapTupleIsValid(tup))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("the owner of pipeline \"%s\" (role OID %u) no longer exists",
						pipeline, owner),
				 errdetail("Scheduled runs act as the pipeline's owner."),
				 errhint("Unschedule the pipeline with autocdc.unschedule().")));
	can_login = ((Form_pg_authid) GETSTRUCT(tup))->rolcanlogin;
	ReleaseSysCache(tup);
	if (!can_login)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_AUTHORIZATION_SPECIFICATION),
				 errmsg("the owner of pipeline \"%s\", role %s, cannot log in", pipeline,
						GetUserNameFromId(owner, false)),
				 errdetail("Scheduled runs act as the pipeline's owner, which must be able to log in."),
				 errhint("Grant it LOGIN, or unschedule the pipeline.")));
	if (pg_database_aclcheck(MyDatabaseId, owner, ACL_CONNECT) != ACLCHECK_OK)
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("the owner of pipeline \"%s\", role %s, may not connect to database \"%s\"",
						pipeline, GetUserNameFromId(owner, false),
						get_database_name(MyDatabaseId)),
				 errdetail("Scheduled runs act as the pipeline's owner, which must have the CONNECT privilege."),
				 errhint("Grant it CONNECT on the database, or unschedule the pipeline.")));
}

/* Runs the pipeline as its owner and records the outcome, in one transaction. */
static void
run_pipeline(int64 id, const char *pipeline, Oid owner)
{
	Oid			argtypes[1] = {TEXTOID};
	Datum		values[1] = {CStringGetTextDatum(pipeline)};
	UserSwitch	sw;
	int64		failed,
				read;
	char	   *errors;
	const char *status;
	char	   *error;

	check_owner(pipeline, owner);
	enable_run_timeouts();
	autocdc_become(&sw, owner, true);
	acdc_spi_exec("SELECT pg_catalog.count(*) FILTER (WHERE r.status OPERATOR(pg_catalog.=) 'failed'), "
			 "       COALESCE(pg_catalog.sum(r.rows_read), 0)::pg_catalog.int8, "
			 "       pg_catalog.string_agg(r.flow, ', ') FILTER (WHERE r.status OPERATOR(pg_catalog.=) 'failed') "
			 "  FROM autocdc.run($1) r",
			 1, argtypes, values, NULL, false);
	autocdc_unbecome(&sw);
	disable_run_timeouts();

	/* A cancel a flow caught still ends the run, rolled back whole. */
	if (run_time_exceeded)
		ereport(ERROR,
				(errcode(ERRCODE_QUERY_CANCELED),
				 errmsg_internal("%s", acdc_run_time_exceeded_reason())));
	failed = acdc_spi_int64(0, 1);
	read = acdc_spi_int64(0, 2);
	errors = acdc_spi_value(0, 3);
	status = failed > 0 ? "failed" : "success";
	error = failed > 0 ? psprintf("flows failed: %s (see autocdc.event_log)", errors) : NULL;
	acdc_pipeline_record_outcome(id, status, error, read, false);
	acdc_run_history_end(autocdc_scheduled_run_id, pipeline, status, error, read);
}

/*
 * Whether the error ended the run from outside: a cancel (pg_cancel_backend,
 * autocdc.max_run_time), raised by ProcessInterrupts alone (a flow's own
 * RAISE of 57014 fails that flow, and autocdc.run() goes on).
 */
static bool
run_interrupted(ErrorData *edata)
{
	return run_time_exceeded ||
		(edata->sqlerrcode == ERRCODE_QUERY_CANCELED && edata->funcname != NULL &&
		 strcmp(edata->funcname, "ProcessInterrupts") == 0);
}

/* After an error anywhere in the run: records it, in a new transaction. */
static void
record_error(int64 id, const char *pipeline, ErrorData *edata)
{
	bool		interrupted = run_interrupted(edata);
	bool		busy = edata->sqlerrcode == ERRCODE_LOCK_NOT_AVAILABLE && !interrupted;
	char	   *reason = run_time_exceeded ? acdc_run_time_exceeded_reason() : edata->message;
	const char *name = pipeline ? pipeline : psprintf("(id " INT64_FORMAT ")", id);
	const char *status = interrupted ? "interrupted" : busy ? "busy" : "failed";

	if (busy)
		ereport(LOG,
				(errmsg("autocdc run of pipeline \"%s\" deferred: %s", name, reason)));
	else
		ereport(WARNING,
				(errmsg("autocdc run of pipeline \"%s\" %s: %s", name, status, reason)));
	begin_work("autocdc run: recording the outcome");
	if (interrupted)
	{
		/* its lease replaced already (a pipeline dropped, say): its own row still ends */
		if (!acdc_record_interrupted_run(id, reason, false) && autocdc_scheduled_run_id != 0)
			acdc_run_history_end(autocdc_scheduled_run_id, pipeline, status, reason, 0);
	}
	else
	{
		acdc_pipeline_record_outcome(id, status, reason, 0, false);
		if (autocdc_scheduled_run_id != 0)
			acdc_run_history_end(autocdc_scheduled_run_id, pipeline, status, reason, 0);
	}
	end_work();
}

void
autocdc_run_worker_main(Datum arg)
{
	RunWorkerArgs args;
	char	   *volatile pipeline = NULL;
	Oid			owner = InvalidOid;
	MemoryContext cxt = CurrentMemoryContext;
	volatile bool timeouts_set = false;
	bool		found;

	memcpy(&args, MyBgworkerEntry->bgw_extra, sizeof(args));
	pqsignal(SIGTERM, die);
	BackgroundWorkerUnblockSignals();
	/* Not as the owner: its login and settings must not stop the run's bookkeeping. */
	BackgroundWorkerInitializeConnectionByOid(args.dboid, InvalidOid, 0);
	pgstat_report_appname("autocdc run");

	PG_TRY();
	{
		acdc_worker_force_settings();
		register_run_timeouts();
		timeouts_set = true;
		begin_work("autocdc run: starting");
		found = load_pipeline(args.pipeline_id, (char **) &pipeline, &owner, cxt);
		/* committed at once: other sessions see the run going */
		if (found)
			autocdc_scheduled_run_id = acdc_run_history_begin(pipeline, owner);
		end_work();
		if (found)
		{
			begin_work(psprintf("autocdc run of pipeline %s", pipeline));
			run_pipeline(args.pipeline_id, pipeline, owner);
			end_work();
		}
	}
	PG_CATCH();
	{
		ErrorData  *edata;

		MemoryContextSwitchTo(cxt);
		edata = CopyErrorData();
		FlushErrorState();
		/* The error may come from a flow's subtransaction (a cancel). */
		AbortOutOfAnyTransaction();
		if (timeouts_set)
			disable_run_timeouts();
		QueryCancelPending = false;
		record_error(args.pipeline_id, pipeline, edata);
	}
	PG_END_TRY();
	proc_exit(0);
}
