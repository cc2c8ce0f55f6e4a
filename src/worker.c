/*-------------------------------------------------------------------------
 * worker.c
 *	  Scheduled runs (doc/design.md §6.3): the launcher and the per-database
 *	  schedulers.
 *
 * The launcher (a static background worker connected to no database, so it
 * can read the shared catalog pg_database) keeps one scheduler running for
 * each database of autocdc.databases that exists and accepts connections;
 * a name that does not is reported once and looked up again at each pass.
 * A scheduler (connected to its database as the bootstrap superuser) finds
 * the pipelines due, leases each to a run (catalog_run.c) and starts a
 * run worker for it (worker_run.c): at most autocdc.max_workers at a time,
 * at most autocdc.max_workers_per_role for one owner's pipelines, the
 * owners with the fewest runs going first, never two for one pipeline.  It
 * records an interrupted run for a run worker that stopped without an
 * outcome and for a run left "running" by an earlier scheduler (a crash, a
 * restart).
 * Schedulers skip a database where the extension is not installed (and
 * pick it up once it is), and do nothing on a standby.  Both loops reset a
 * per-pass memory context.
 *-------------------------------------------------------------------------
 */
#include "worker.h"
#include "catalog.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "access/xact.h"
#include "catalog/indexing.h"
#include "catalog/pg_database.h"
#include "catalog/pg_type.h"
#include "commands/extension.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "postmaster/interrupt.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "storage/proc.h"
#include "tcop/tcopprot.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"
#include "utils/varlena.h"

/* How often the launcher looks at its schedulers. */
#define LAUNCHER_NAPTIME_MS 5000
/* A scheduler that keeps stopping is started again after at most this. */
#define SCHEDULER_MAX_RETRY_MS (5 * 60 * 1000)
/* A scheduler that ran this long before stopping is retried at once. */
#define SCHEDULER_STABLE_MS (60 * 1000)

typedef struct SchedulerSlot
{
	char		dbname[NAMEDATALEN];
	BackgroundWorkerHandle *handle;
	TimestampTz started_at;
	TimestampTz next_start;
	int			retry_ms;		/* wait after the next stop */
	bool		wanted;
	bool		reported;		/* the database's problem is in the log */
} SchedulerSlot;

typedef struct RunSlot
{
	int64		pipeline_id;
	Oid			owner;
	TimestampTz started_at;
	BackgroundWorkerHandle *handle;
} RunSlot;

typedef struct DuePipeline
{
	int64		id;
	Oid			owner;
	bool		done;			/* started or skipped in this pass */
} DuePipeline;

typedef enum DatabaseState
{
	DATABASE_OK,
	DATABASE_MISSING,
	DATABASE_NO_CONNECTIONS
} DatabaseState;

static void
fill_worker(BackgroundWorker *w, const char *function, const char *name)
{
	memset(w, 0, sizeof(*w));
	w->bgw_flags = BGWORKER_SHMEM_ACCESS | BGWORKER_BACKEND_DATABASE_CONNECTION;
	w->bgw_start_time = BgWorkerStart_RecoveryFinished;
	snprintf(w->bgw_library_name, BGW_MAXLEN, "autocdc");
	snprintf(w->bgw_function_name, BGW_MAXLEN, "%s", function);
	snprintf(w->bgw_name, BGW_MAXLEN, "%s", name);
	snprintf(w->bgw_type, BGW_MAXLEN, "%s", name);
}

/* Called from _PG_init when autocdc is in shared_preload_libraries. */
void
autocdc_register_launcher(void)
{
	BackgroundWorker w;

	fill_worker(&w, "autocdc_launcher_main", "autocdc launcher");
	w.bgw_restart_time = 1;
	RegisterBackgroundWorker(&w);
}

static bool
handle_running(BackgroundWorkerHandle *handle)
{
	pid_t		pid;

	return handle != NULL &&
		GetBackgroundWorkerPid(handle, &pid) != BGWH_STOPPED;
}

/*
 * Looks the database up in pg_database (a shared catalog), with its OID.
 * A heap scan: with no database, shared indexes cannot be opened until a
 * backend has written the shared relcache init file.
 */
static DatabaseState
database_state(const char *dbname, Oid *dboid)
{
	Relation	rel;
	ScanKeyData key;
	SysScanDesc scan;
	HeapTuple	tup;
	DatabaseState state = DATABASE_MISSING;
	MemoryContext cxt = CurrentMemoryContext;

	StartTransactionCommand();
	rel = table_open(DatabaseRelationId, AccessShareLock);
	ScanKeyInit(&key, Anum_pg_database_datname, BTEqualStrategyNumber,
				F_NAMEEQ, CStringGetDatum(dbname));
	scan = systable_beginscan(rel, DatabaseNameIndexId, false, NULL, 1, &key);
	tup = systable_getnext(scan);
	if (HeapTupleIsValid(tup))
	{
		Form_pg_database db = (Form_pg_database) GETSTRUCT(tup);

		*dboid = db->oid;
		state = db->datallowconn ? DATABASE_OK : DATABASE_NO_CONNECTIONS;
	}
	systable_endscan(scan);
	table_close(rel, AccessShareLock);
	CommitTransactionCommand();
	MemoryContextSwitchTo(cxt);
	return state;
}

/* The slot of each name of autocdc.databases (new slots in `keep`). */
static void
want_databases(List **slots, MemoryContext keep)
{
	char	   *raw = pstrdup(autocdc_databases);
	List	   *names = NIL;
	ListCell   *lc;

	if (!SplitIdentifierString(raw, ',', &names))
		ereport(LOG,
				(errmsg("autocdc.databases is not a valid list of database names: \"%s\"",
						autocdc_databases)));
	foreach(lc, *slots)
		((SchedulerSlot *) lfirst(lc))->wanted = false;
	foreach(lc, names)
	{
		ListCell   *ls;
		SchedulerSlot *slot = NULL;

		foreach(ls, *slots)
			if (strcmp(((SchedulerSlot *) lfirst(ls))->dbname, lfirst(lc)) == 0)
			slot = lfirst(ls);
		if (slot == NULL)
		{
			MemoryContext old = MemoryContextSwitchTo(keep);

			slot = palloc0(sizeof(SchedulerSlot));
			strlcpy(slot->dbname, lfirst(lc), NAMEDATALEN);
			slot->retry_ms = LAUNCHER_NAPTIME_MS;
			*slots = lappend(*slots, slot);
			MemoryContextSwitchTo(old);
		}
		slot->wanted = true;
	}
}

/* Whether the slot's database can have a scheduler now; says why not once. */
static bool
database_ready(SchedulerSlot *slot, Oid *dboid)
{
	DatabaseState state = database_state(slot->dbname, dboid);

	if (state == DATABASE_OK)
	{
		slot->reported = false;
		return true;
	}
	if (!slot->reported)
		ereport(LOG,
				(errcode(state == DATABASE_MISSING ? ERRCODE_UNDEFINED_DATABASE
						 : ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 state == DATABASE_MISSING
				 ? errmsg("database \"%s\" of autocdc.databases does not exist", slot->dbname)
				 : errmsg("database \"%s\" of autocdc.databases does not accept connections", slot->dbname),
				 errdetail("Its scheduled pipelines do not run until it does; autocdc looks again every %d seconds.",
						   LAUNCHER_NAPTIME_MS / 1000),
				 errhint("Correct autocdc.databases and reload the configuration, or create the database.")));
	slot->reported = true;
	return false;
}

static void
start_scheduler(SchedulerSlot *slot, Oid dboid, TimestampTz now, MemoryContext keep)
{
	BackgroundWorker w;
	MemoryContext old = MemoryContextSwitchTo(keep);

	fill_worker(&w, "autocdc_scheduler_main", "autocdc scheduler");
	w.bgw_restart_time = BGW_NEVER_RESTART;
	w.bgw_notify_pid = MyProcPid;
	w.bgw_main_arg = ObjectIdGetDatum(dboid);
	if (slot->handle)
		pfree(slot->handle);
	slot->handle = NULL;
	if (!RegisterDynamicBackgroundWorker(&w, &slot->handle))
		ereport(LOG,
				(errcode(ERRCODE_CONFIGURATION_LIMIT_EXCEEDED),
				 errmsg("autocdc could not start the scheduler of database \"%s\": out of background worker slots",
						slot->dbname),
				 errhint("You might need to increase max_worker_processes.")));
	slot->started_at = now;
	MemoryContextSwitchTo(old);
}

/*
 * After a scheduler stopped: start it again soon if it had been running a
 * while, else wait twice as long as last time.
 */
static void
scheduler_stopped(SchedulerSlot *slot, TimestampTz now)
{
	if (TimestampDifferenceExceeds(slot->started_at, now, SCHEDULER_STABLE_MS))
		slot->retry_ms = LAUNCHER_NAPTIME_MS;
	slot->next_start = TimestampTzPlusMilliseconds(slot->started_at, slot->retry_ms);
	slot->retry_ms = Min(slot->retry_ms * 2, SCHEDULER_MAX_RETRY_MS);
	pfree(slot->handle);
	slot->handle = NULL;
}

/* Brings the schedulers in line with autocdc.databases. */
static void
launcher_reconcile(List **slots, MemoryContext keep)
{
	TimestampTz now = GetCurrentTimestamp();
	ListCell   *lc;

	want_databases(slots, keep);
	foreach(lc, *slots)
	{
		SchedulerSlot *slot = lfirst(lc);
		Oid			dboid;

		if (slot->handle && !handle_running(slot->handle))
			scheduler_stopped(slot, now);
		if (!slot->wanted)
		{
			if (slot->handle)
				TerminateBackgroundWorker(slot->handle);
			else
			{
				*slots = foreach_delete_current(*slots, lc);
				pfree(slot);
			}
			continue;
		}
		if (slot->handle || now < slot->next_start)
			continue;
		if (database_ready(slot, &dboid))
			start_scheduler(slot, dboid, now, keep);
	}
}

void
autocdc_launcher_main(Datum arg)
{
	List	   *slots = NIL;
	MemoryContext keep,
				pass;

	pqsignal(SIGHUP, SignalHandlerForConfigReload);
	pqsignal(SIGTERM, die);
	BackgroundWorkerUnblockSignals();
	/* No database: it reads only the shared pg_database. */
	BackgroundWorkerInitializeConnection(NULL, NULL, 0);
	pgstat_report_appname("autocdc launcher");
	ereport(LOG, (errmsg("autocdc launcher started")));
	keep = AllocSetContextCreate(TopMemoryContext, "autocdc launcher",
								 ALLOCSET_DEFAULT_SIZES);
	pass = AllocSetContextCreate(TopMemoryContext, "autocdc launcher pass",
								 ALLOCSET_DEFAULT_SIZES);

	for (;;)
	{
		MemoryContextSwitchTo(pass);
		CHECK_FOR_INTERRUPTS();
		if (ConfigReloadPending)
		{
			ConfigReloadPending = false;
			ProcessConfigFile(PGC_SIGHUP);
		}
		launcher_reconcile(&slots, keep);
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 LAUNCHER_NAPTIME_MS, PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
		MemoryContextReset(pass);
	}
}

/* The catalog is there to read: the extension exists and is not being made. */
static bool
extension_ready(void)
{
	return !creating_extension && OidIsValid(get_extension_oid("autocdc", true));
}

static bool
pipeline_active(List *runs, int64 id)
{
	ListCell   *lc;

	foreach(lc, runs)
		if (((RunSlot *) lfirst(lc))->pipeline_id == id)
		return true;
	return false;
}

static int
role_runs(List *runs, Oid owner)
{
	ListCell   *lc;
	int			n = 0;

	foreach(lc, runs)
		if (((RunSlot *) lfirst(lc))->owner == owner)
		n++;
	return n;
}

/* autocdc.max_workers_per_role; -1: all slots but one, at least one. */
static int
per_role_limit(void)
{
	if (autocdc_max_workers_per_role > 0)
		return autocdc_max_workers_per_role;
	return Max(1, autocdc_max_workers - 1);
}

/*
 * Why a run worker stopped without an outcome: terminated past
 * autocdc.max_run_time (its code caught the cancel), or anything else.
 */
static const char *
stopped_reason(RunSlot *slot)
{
	if (autocdc_max_run_time_s > 0 &&
		TimestampDifferenceExceeds(slot->started_at, GetCurrentTimestamp(),
								   autocdc_max_run_time_s * 1000))
		return acdc_run_time_exceeded_reason();
	return "the run worker exited without recording an outcome: "
		"it was terminated (pg_terminate_backend) or stopped by a fatal error (see the server log)";
}

/*
 * One pipeline's bookkeeping, in a subtransaction: a row that makes it
 * fail (an interval overflowing, say) is logged and skips that pipeline,
 * never stops the scheduler that serves every other.
 */
typedef struct PipelineStep
{
	int64		id;
	const char *reason;			/* of an interruption */
	bool		leased;
} PipelineStep;

static void
lease_step(void *arg)
{
	PipelineStep *s = arg;

	s->leased = acdc_pipeline_lease(s->id);
}

static void
interrupted_step(void *arg)
{
	PipelineStep *s = arg;

	(void) acdc_record_interrupted_run(s->id, s->reason, true);
}

static bool
pipeline_step(void (*fn) (void *), PipelineStep *s)
{
	ErrorData  *edata = autocdc_try(fn, s);

	if (edata == NULL)
		return true;
	ereport(LOG,
			(errmsg("autocdc could not update the schedule of pipeline %lld: %s",
					(long long) s->id, edata->message)));
	FreeErrorData(edata);
	return false;
}

static void
record_interrupted(int64 id, const char *reason)
{
	PipelineStep s = {id, reason, false};

	(void) pipeline_step(interrupted_step, &s);
}

/*
 * Forgets the run workers that have stopped; with `record`, a stopped
 * worker's lease that nothing replaced becomes an interrupted run, backed
 * off like a failure.  A stopped worker holds no lock, so its lock needs
 * no test.
 */
static void
reap_runs(List **runs, bool record)
{
	ListCell   *lc;

	foreach(lc, *runs)
	{
		RunSlot    *slot = lfirst(lc);

		if (handle_running(slot->handle))
			continue;
		if (record)
			record_interrupted(slot->pipeline_id, stopped_reason(slot));
		*runs = foreach_delete_current(*runs, lc);
		pfree(slot->handle);
		pfree(slot);
	}
}

/*
 * A pipeline left "running" that is none of this scheduler's runs and whose
 * run lock is free was cut short (a crash, a restart, a scheduler that
 * stopped); say so.
 */
static void
mark_interrupted_runs(List *runs)
{
	ListCell   *lc;

	foreach(lc, acdc_catalog_running_pipelines())
	{
		int64		id = *(int64 *) lfirst(lc);

		if (!pipeline_active(runs, id) && acdc_pipeline_lock_free(id))
			record_interrupted(id, "the run stopped without an outcome: the server restarted or shut down during it, "
							   "or its run worker exited while no scheduler watched it");
	}
}

/* The due pipelines, oldest first, at most max_workers of each owner. */
static List *
load_due(MemoryContext cxt)
{
	List	   *due = NIL;
	ListCell   *lc;

	foreach(lc, acdc_catalog_due_pipelines(autocdc_max_workers))
	{
		CatalogPipeline *p = lfirst(lc);
		DuePipeline *d = MemoryContextAllocZero(cxt, sizeof(DuePipeline));

		d->id = p->id;
		d->owner = p->owner;
		due = lappend(due, d);
	}
	return due;
}

/*
 * The next due pipeline to start: of the owners under their limit, one
 * with the fewest runs going, its oldest.  NULL when none may start.
 */
static DuePipeline *
pick_due(List *due, List *runs)
{
	DuePipeline *best = NULL;
	int			best_runs = 0;
	ListCell   *lc;

	foreach(lc, due)
	{
		DuePipeline *d = lfirst(lc);
		int			n;

		if (d->done || pipeline_active(runs, d->id))
			continue;
		n = role_runs(runs, d->owner);
		if (n < per_role_limit() && (best == NULL || n < best_runs))
		{
			best = d;
			best_runs = n;
		}
	}
	return best;
}

/* Starts a run worker for a leased pipeline; false when there is no slot. */
static bool
start_run(List **runs, DuePipeline *d, MemoryContext keep)
{
	BackgroundWorker w;
	RunWorkerArgs args;
	MemoryContext old = MemoryContextSwitchTo(keep);
	RunSlot    *slot = palloc0(sizeof(RunSlot));
	bool		started;

	fill_worker(&w, "autocdc_run_worker_main", "autocdc run");
	w.bgw_restart_time = BGW_NEVER_RESTART;
	w.bgw_notify_pid = MyProcPid;
	memset(&args, 0, sizeof(args));
	args.dboid = MyDatabaseId;
	args.pipeline_id = d->id;
	memcpy(w.bgw_extra, &args, sizeof(args));
	slot->pipeline_id = d->id;
	slot->owner = d->owner;
	slot->started_at = GetCurrentTimestamp();
	started = RegisterDynamicBackgroundWorker(&w, &slot->handle);
	if (started)
		*runs = lappend(*runs, slot);
	else
		pfree(slot);
	MemoryContextSwitchTo(old);
	if (!started)
	{
		ereport(LOG,
				(errcode(ERRCODE_CONFIGURATION_LIMIT_EXCEEDED),
				 errmsg("autocdc could not start a run: out of background worker slots"),
				 errhint("You might need to increase max_worker_processes, or lower autocdc.max_workers.")));
		acdc_pipeline_record_outcome(d->id, "failed",
								"the run worker could not start: out of background worker slots",
								0, true);
	}
	return started;
}

static void
start_due_runs(List **runs, List *due, MemoryContext keep)
{
	DuePipeline *d;

	while (list_length(*runs) < autocdc_max_workers &&
		   (d = pick_due(due, *runs)) != NULL)
	{
		PipelineStep s = {d->id, NULL, false};

		d->done = true;
		if (pipeline_step(lease_step, &s) && s.leased && !start_run(runs, d, keep))
			break;
	}
}

/* How long until the next pipeline is due (ms), at most `sleep_ms`. */
static long
next_due_ms(long sleep_ms)
{
	int64		due_ms;

	if (acdc_catalog_next_due_ms(&due_ms))
		sleep_ms = Min(sleep_ms, Max(due_ms, 10));
	return sleep_ms;
}

/* Manual runs cancelled or terminated (manual_runs.c), apart from the rest. */
static void
manual_runs_step(void *arg)
{
	acdc_manual_runs_record();
}

static void
record_manual_runs(void)
{
	ErrorData  *edata = autocdc_try(manual_runs_step, NULL);

	if (edata == NULL)
		return;
	ereport(LOG,
			(errmsg("autocdc could not record an interrupted manual run: %s",
					edata->message)));
	FreeErrorData(edata);
}

/*
 * One pass: records the runs that ended without an outcome, starts the
 * runs that are due.  Returns how long to sleep before the next pass (ms).
 */
static long
scheduler_pass(List **runs, MemoryContext keep, MemoryContext pass)
{
	long		sleep_ms = autocdc_naptime_ms;

	SetCurrentStatementStartTimestamp();
	StartTransactionCommand();
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	PushActiveSnapshot(GetTransactionSnapshot());
	pgstat_report_activity(STATE_RUNNING, "autocdc scheduler: looking for due pipelines");

	if (extension_ready())
	{
		reap_runs(runs, true);
		mark_interrupted_runs(*runs);
		record_manual_runs();
		start_due_runs(runs, load_due(pass), keep);
		sleep_ms = next_due_ms(sleep_ms);
		acdc_catalog_prune_event_log();
	}
	else
		reap_runs(runs, false);

	SPI_finish();
	PopActiveSnapshot();
	CommitTransactionCommand();
	MemoryContextSwitchTo(pass);
	pgstat_report_stat(true);
	pgstat_report_activity(STATE_IDLE, NULL);
	return sleep_ms;
}

void
autocdc_scheduler_main(Datum arg)
{
	List	   *runs = NIL;
	MemoryContext keep,
				pass;

	pqsignal(SIGHUP, SignalHandlerForConfigReload);
	pqsignal(SIGTERM, die);
	BackgroundWorkerUnblockSignals();
	BackgroundWorkerInitializeConnectionByOid(DatumGetObjectId(arg), InvalidOid, 0);
	pgstat_report_appname("autocdc scheduler");
	acdc_worker_force_settings();
	keep = AllocSetContextCreate(TopMemoryContext, "autocdc scheduler",
								 ALLOCSET_DEFAULT_SIZES);
	pass = AllocSetContextCreate(TopMemoryContext, "autocdc scheduler pass",
								 ALLOCSET_DEFAULT_SIZES);

	for (;;)
	{
		long		sleep_ms = autocdc_naptime_ms;

		MemoryContextSwitchTo(pass);
		CHECK_FOR_INTERRUPTS();
		if (ConfigReloadPending)
		{
			ConfigReloadPending = false;
			ProcessConfigFile(PGC_SIGHUP);
		}
		if (RecoveryInProgress())
			reap_runs(&runs, false);
		else
			sleep_ms = scheduler_pass(&runs, keep, pass);
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 sleep_ms, PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
		MemoryContextReset(pass);
	}
}
