/*-------------------------------------------------------------------------
 * worker.c
 *	  Scheduled runs (DESIGN §6): the launcher and the per-database
 *	  schedulers.
 *
 * The launcher (a static background worker, no database connection) keeps
 * one scheduler running for each database of autocdc.databases.  A
 * scheduler (connected to its database) finds the pipelines due, and starts
 * a run worker for each (worker_run.c), at most autocdc.max_workers at a
 * time, never two for one pipeline.  Schedulers skip a database where the
 * extension is not installed (and pick it up once it is), and do nothing
 * on a standby.
 *-------------------------------------------------------------------------
 */
#include "worker.h"
#include "flow.h"

#include "access/xact.h"
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
#include "utils/memutils.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"
#include "utils/varlena.h"

/* A scheduler that stopped is started again after this long. */
#define SCHEDULER_RETRY_MS 5000

typedef struct SchedulerSlot
{
	char		dbname[NAMEDATALEN];
	BackgroundWorkerHandle *handle;
	TimestampTz next_start;
	bool		wanted;
} SchedulerSlot;

typedef struct RunSlot
{
	int64		pipeline_id;
	BackgroundWorkerHandle *handle;
} RunSlot;

static void
fill_worker(BackgroundWorker *w, const char *function, const char *name,
			bool connect)
{
	memset(w, 0, sizeof(*w));
	w->bgw_flags = BGWORKER_SHMEM_ACCESS |
		(connect ? BGWORKER_BACKEND_DATABASE_CONNECTION : 0);
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

	fill_worker(&w, "autocdc_launcher_main", "autocdc launcher", false);
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

/* Brings the schedulers in line with autocdc.databases. */
static void
launcher_reconcile(List **slots)
{
	char	   *raw = pstrdup(autocdc_databases);
	List	   *names = NIL;
	ListCell   *lc;
	TimestampTz now = GetCurrentTimestamp();

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
			MemoryContext old = MemoryContextSwitchTo(TopMemoryContext);

			slot = palloc0(sizeof(SchedulerSlot));
			strlcpy(slot->dbname, lfirst(lc), NAMEDATALEN);
			*slots = lappend(*slots, slot);
			MemoryContextSwitchTo(old);
		}
		slot->wanted = true;
	}

	foreach(lc, *slots)
	{
		SchedulerSlot *slot = lfirst(lc);

		if (!slot->wanted)
		{
			if (handle_running(slot->handle))
				TerminateBackgroundWorker(slot->handle);
			continue;
		}
		if (handle_running(slot->handle) || now < slot->next_start)
			continue;
		{
			BackgroundWorker w;

			fill_worker(&w, "autocdc_scheduler_main", "autocdc scheduler", true);
			w.bgw_restart_time = BGW_NEVER_RESTART;
			w.bgw_notify_pid = MyProcPid;
			strlcpy(w.bgw_extra, slot->dbname, BGW_EXTRALEN);
			if (slot->handle)
				pfree(slot->handle);
			slot->handle = NULL;
			if (!RegisterDynamicBackgroundWorker(&w, &slot->handle))
				ereport(LOG,
						(errcode(ERRCODE_CONFIGURATION_LIMIT_EXCEEDED),
						 errmsg("autocdc could not start the scheduler of database \"%s\": out of background worker slots",
								slot->dbname),
						 errhint("You might need to increase max_worker_processes.")));
			slot->next_start = TimestampTzPlusMilliseconds(now, SCHEDULER_RETRY_MS);
		}
	}
}

void
autocdc_launcher_main(Datum arg)
{
	List	   *slots = NIL;

	pqsignal(SIGHUP, SignalHandlerForConfigReload);
	pqsignal(SIGTERM, die);
	BackgroundWorkerUnblockSignals();
	ereport(LOG, (errmsg("autocdc launcher started")));

	for (;;)
	{
		CHECK_FOR_INTERRUPTS();
		if (ConfigReloadPending)
		{
			ConfigReloadPending = false;
			ProcessConfigFile(PGC_SIGHUP);
		}
		launcher_reconcile(&slots);
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 SCHEDULER_RETRY_MS, PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
	}
}

/* The catalog is there to read: the extension exists and is not being made. */
static bool
extension_ready(void)
{
	return !creating_extension && OidIsValid(get_extension_oid("autocdc", true));
}

/*
 * At a scheduler's start: a pipeline left "running" whose run lock is free
 * was cut short (a crash, a restart); say so.
 */
static void
mark_interrupted_runs(void)
{
	spi_exec(psprintf("UPDATE autocdc.pipeline SET last_status = 'failed', "
					  " last_error = 'interrupted: the server or the run worker stopped during the run', "
					  " last_finished_at = pg_catalog.clock_timestamp(), "
					  " failures = failures OPERATOR(pg_catalog.+) 1 "
					  "WHERE last_status OPERATOR(pg_catalog.=) 'running' "
					  "  AND pg_catalog.pg_try_advisory_xact_lock(%d, pg_catalog.hashtext(name))",
					  PIPELINE_LOCK_CLASS),
			 0, NULL, NULL, NULL, false);
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

static void
start_run(List **runs, int64 id, Oid owner, MemoryContext keep)
{
	BackgroundWorker w;
	RunWorkerArgs args;
	MemoryContext old = MemoryContextSwitchTo(keep);
	RunSlot    *slot = palloc0(sizeof(RunSlot));

	fill_worker(&w, "autocdc_run_worker_main", "autocdc run", true);
	w.bgw_restart_time = BGW_NEVER_RESTART;
	w.bgw_notify_pid = MyProcPid;
	args.dboid = MyDatabaseId;
	args.owner = owner;
	args.pipeline_id = id;
	memcpy(w.bgw_extra, &args, sizeof(args));
	slot->pipeline_id = id;
	if (RegisterDynamicBackgroundWorker(&w, &slot->handle))
		*runs = lappend(*runs, slot);
	else
	{
		pfree(slot);
		ereport(LOG,
				(errcode(ERRCODE_CONFIGURATION_LIMIT_EXCEEDED),
				 errmsg("autocdc could not start a run: out of background worker slots"),
				 errhint("You might need to increase max_worker_processes, or lower autocdc.max_workers.")));
	}
	MemoryContextSwitchTo(old);
}

/*
 * One pass: starts the runs that are due.  Returns how long to sleep
 * before the next pass (ms).
 */
static long
scheduler_pass(List **runs, bool *cleaned, MemoryContext keep)
{
	long		sleep_ms = autocdc_naptime_ms;
	List	   *due = NIL;
	ListCell   *lc;
	MemoryContext old;

	SetCurrentStatementStartTimestamp();
	StartTransactionCommand();
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	PushActiveSnapshot(GetTransactionSnapshot());
	pgstat_report_activity(STATE_RUNNING, "autocdc scheduler: looking for due pipelines");

	if (extension_ready())
	{
		if (!*cleaned)
		{
			mark_interrupted_runs();
			*cleaned = true;
		}
		spi_exec("SELECT id, owner::pg_catalog.oid FROM autocdc.pipeline "
				 " WHERE schedule IS NOT NULL "
				 "   AND COALESCE(next_run_at, '-infinity') OPERATOR(pg_catalog.<=) pg_catalog.now() "
				 " ORDER BY next_run_at NULLS FIRST, id",
				 0, NULL, NULL, NULL, false);
		for (uint64 i = 0; i < SPI_processed; i++)
		{
			int64	   *pair = MemoryContextAlloc(keep, 2 * sizeof(int64));
			bool		isnull;

			pair[0] = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 1, &isnull));
			pair[1] = DatumGetObjectId(SPI_getbinval(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 2, &isnull));
			old = MemoryContextSwitchTo(keep);	/* outlives SPI_finish */
			due = lappend(due, pair);
			MemoryContextSwitchTo(old);
		}
		spi_exec("SELECT (EXTRACT(epoch FROM pg_catalog.min(next_run_at) OPERATOR(pg_catalog.-) pg_catalog.now()) "
				 "        OPERATOR(pg_catalog.*) 1000)::pg_catalog.int8 "
				 "  FROM autocdc.pipeline WHERE schedule IS NOT NULL "
				 "   AND next_run_at OPERATOR(pg_catalog.>) pg_catalog.now()",
				 0, NULL, NULL, NULL, false);
		if (spi_value(0, 1) != NULL)
			sleep_ms = Min(sleep_ms, Max(spi_int64(0, 1), 10));
		catalog_prune_event_log();
	}

	SPI_finish();
	PopActiveSnapshot();
	CommitTransactionCommand();
	pgstat_report_stat(true);
	pgstat_report_activity(STATE_IDLE, NULL);

	foreach(lc, due)
	{
		int64	   *pair = lfirst(lc);

		if (list_length(*runs) >= autocdc_max_workers)
			break;
		if (!pipeline_active(*runs, pair[0]))
			start_run(runs, pair[0], (Oid) pair[1], keep);
		pfree(pair);
	}
	list_free(due);
	return sleep_ms;
}

/* Forgets the run workers that have stopped. */
static void
reap_runs(List **runs)
{
	ListCell   *lc;

	foreach(lc, *runs)
	{
		RunSlot    *slot = lfirst(lc);

		if (!handle_running(slot->handle))
		{
			*runs = foreach_delete_current(*runs, lc);
			pfree(slot->handle);
			pfree(slot);
		}
	}
}

void
autocdc_scheduler_main(Datum arg)
{
	char		dbname[NAMEDATALEN];
	List	   *runs = NIL;
	bool		cleaned = false;
	MemoryContext keep;

	strlcpy(dbname, MyBgworkerEntry->bgw_extra, NAMEDATALEN);
	pqsignal(SIGHUP, SignalHandlerForConfigReload);
	pqsignal(SIGTERM, die);
	BackgroundWorkerUnblockSignals();
	BackgroundWorkerInitializeConnection(dbname, NULL, 0);
	pgstat_report_appname("autocdc scheduler");
	keep = AllocSetContextCreate(TopMemoryContext, "autocdc scheduler",
								 ALLOCSET_DEFAULT_SIZES);

	for (;;)
	{
		long		sleep_ms = autocdc_naptime_ms;

		CHECK_FOR_INTERRUPTS();
		if (ConfigReloadPending)
		{
			ConfigReloadPending = false;
			ProcessConfigFile(PGC_SIGHUP);
		}
		reap_runs(&runs);
		if (!RecoveryInProgress())
			sleep_ms = scheduler_pass(&runs, &cleaned, keep);
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 sleep_ms, PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
	}
}
