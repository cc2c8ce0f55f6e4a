/*-------------------------------------------------------------------------
 * manual_runs.c
 *	  Manual runs that are cancelled or whose session is terminated.
 *
 * A manual run writes its bookkeeping in its caller's transaction, which
 * a cancel rolls back.  When autocdc is preloaded, each backend keeps the
 * manual run it is doing in a slot of shared memory; a cancel or a
 * terminate marks the slot, and the scheduler of the database records the
 * run as interrupted (catalog_run.c) in a transaction of its own.  Without
 * preloading there is no shared memory, and nothing is recorded (README).
 *-------------------------------------------------------------------------
 */
#include "autocdc.h"
#include "catalog.h"
#include "worker.h"

#include "miscadmin.h"
#include "executor/spi.h"
#include "storage/ipc.h"
#include "storage/lwlock.h"
#include "storage/proc.h"
#include "storage/shmem.h"
#include "utils/timestamp.h"

#define MANUAL_RUN_PIPELINES	16	/* recorded per run; more are not */
#define MANUAL_RUN_REASON_LEN	256

typedef struct ManualRunSlot
{
	int			pid;			/* 0: no run */
	Oid			dboid;
	Oid			run_by;
	int64		run_id;
	TimestampTz started;
	int			npipelines;
	int64		pipelines[MANUAL_RUN_PIPELINES];
	bool		interrupted;	/* to be recorded by the scheduler */
	char		reason[MANUAL_RUN_REASON_LEN];
} ManualRunSlot;

typedef struct ManualRuns
{
	LWLock	   *lock;
	int			nslots;
	ManualRunSlot slots[FLEXIBLE_ARRAY_MEMBER];
} ManualRuns;

static ManualRuns *manual_runs = NULL;
static shmem_request_hook_type prev_shmem_request_hook = NULL;
static shmem_startup_hook_type prev_shmem_startup_hook = NULL;
static bool exit_callback_registered = false;

static Size
manual_runs_size(void)
{
	return add_size(offsetof(ManualRuns, slots),
					mul_size(MaxBackends, sizeof(ManualRunSlot)));
}

static void
manual_runs_shmem_request(void)
{
	if (prev_shmem_request_hook)
		prev_shmem_request_hook();
	RequestAddinShmemSpace(manual_runs_size());
	RequestNamedLWLockTranche("autocdc", 1);
}

static void
manual_runs_shmem_startup(void)
{
	bool		found;

	if (prev_shmem_startup_hook)
		prev_shmem_startup_hook();
	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
	manual_runs = ShmemInitStruct("autocdc manual runs", manual_runs_size(), &found);
	if (!found)
	{
		memset(manual_runs, 0, manual_runs_size());
		manual_runs->lock = &(GetNamedLWLockTranche("autocdc"))->lock;
		manual_runs->nslots = MaxBackends;
	}
	LWLockRelease(AddinShmemInitLock);
}

/* Called from _PG_init while shared_preload_libraries is processed. */
void
acdc_manual_runs_init(void)
{
	prev_shmem_request_hook = shmem_request_hook;
	shmem_request_hook = manual_runs_shmem_request;
	prev_shmem_startup_hook = shmem_startup_hook;
	shmem_startup_hook = manual_runs_shmem_startup;
}

/* This backend's slot, or NULL (not preloaded, or no backend id). */
static ManualRunSlot *
my_slot(void)
{
	if (manual_runs == NULL || MyBackendId < 1 || MyBackendId > manual_runs->nslots)
		return NULL;
	return &manual_runs->slots[MyBackendId - 1];
}

/* Marks the run going, if any, interrupted for `reason`. */
static void
mark_interrupted(ManualRunSlot *slot, const char *reason)
{
	LWLockAcquire(manual_runs->lock, LW_EXCLUSIVE);
	if (slot->pid == MyProcPid && !slot->interrupted)
	{
		slot->interrupted = true;
		strlcpy(slot->reason, reason, sizeof(slot->reason));
	}
	LWLockRelease(manual_runs->lock);
}

/* A session that ends during a run was terminated (a FATAL error). */
static void
manual_run_on_exit(int code, Datum arg)
{
	ManualRunSlot *slot = my_slot();

	if (slot && slot->pid == MyProcPid)
		mark_interrupted(slot, "the session running it was terminated (pg_terminate_backend or a fatal error)");
}

void
acdc_manual_run_begin(int64 run_id, List *pipeline_ids)
{
	ManualRunSlot *slot = my_slot();
	ListCell   *lc;

	if (slot == NULL)
		return;
	if (!exit_callback_registered)
	{
		before_shmem_exit(manual_run_on_exit, (Datum) 0);
		exit_callback_registered = true;
	}
	LWLockAcquire(manual_runs->lock, LW_EXCLUSIVE);
	slot->dboid = MyDatabaseId;
	slot->run_by = GetUserId();
	slot->run_id = run_id;
	slot->started = GetCurrentTimestamp();
	slot->npipelines = 0;
	foreach(lc, pipeline_ids)
		if (slot->npipelines < MANUAL_RUN_PIPELINES)
			slot->pipelines[slot->npipelines++] = *(int64 *) lfirst(lc);
	slot->interrupted = false;
	slot->reason[0] = '\0';
	slot->pid = MyProcPid;
	LWLockRelease(manual_runs->lock);
}

/* The run was cancelled: its transaction is about to roll back. */
void
acdc_manual_run_interrupted(const char *reason)
{
	ManualRunSlot *slot = my_slot();

	if (slot)
		mark_interrupted(slot, reason);
}

/* The run ended (well or not): nothing to record unless it was cancelled. */
void
acdc_manual_run_end(void)
{
	ManualRunSlot *slot = my_slot();

	if (slot == NULL)
		return;
	LWLockAcquire(manual_runs->lock, LW_EXCLUSIVE);
	if (slot->pid == MyProcPid && !slot->interrupted)
		slot->pid = 0;
	LWLockRelease(manual_runs->lock);
}

/*
 * The scheduler of this database records its interrupted manual runs.
 * Their slots are freed first, so that one that cannot be recorded is
 * logged once, not at every pass.  Runs inside the scheduler's transaction.
 */
void
acdc_manual_runs_record(void)
{
	List	   *found = NIL;
	ListCell   *lc;

	if (manual_runs == NULL)
		return;
	LWLockAcquire(manual_runs->lock, LW_EXCLUSIVE);
	for (int i = 0; i < manual_runs->nslots; i++)
	{
		ManualRunSlot *slot = &manual_runs->slots[i];

		if (slot->pid != 0 && slot->interrupted && slot->dboid == MyDatabaseId)
		{
			ManualRunSlot *copy = palloc(sizeof(ManualRunSlot));

			memcpy(copy, slot, sizeof(ManualRunSlot));
			found = lappend(found, copy);
			slot->pid = 0;
		}
	}
	LWLockRelease(manual_runs->lock);

	foreach(lc, found)
	{
		ManualRunSlot *run = lfirst(lc);

		for (int p = 0; p < run->npipelines; p++)
			(void) acdc_record_interrupted_manual_run(run->pipelines[p], run->run_id, run->pid,
												 run->run_by, run->started, run->reason);
	}
}
