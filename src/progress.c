/*-------------------------------------------------------------------------
 * progress.c
 *	  What a run is doing now, for other sessions (see progress.h).
 *
 * PostgreSQL 15 has no named DSM segments and a fixed list of progress
 * commands (pg_stat_progress_*), so when autocdc is preloaded it keeps a
 * slot per backend in its own shared memory: the flow running, its phase
 * and counters.  Only the owning backend writes its slot, bumping a change
 * count before and after as PgBackendStatus's st_changecount does; readers
 * copy the slot and retry while the count is odd or moved.  No lock is
 * taken, and the counters are updated per batch of events, per write
 * statement or per phase, never per event.
 *
 * When autocdc is not preloaded there is no such memory: a backend shows
 * the flow and phase as its pg_stat_activity query text instead, and puts
 * the text it replaced (the caller's query) back when the flow ends.  (A
 * run worker, only ever preloaded, keeps "autocdc run of pipeline p".)
 *
 * What this backend runs is known here only between a flow's begin and
 * its end, or the abort of the (sub)transaction it began in: transaction
 * callbacks end it then, and an exit callback frees the slot.
 *-------------------------------------------------------------------------
 */
#include "progress.h"

#include "access/xact.h"
#include "catalog/pg_authid.h"
#include "funcapi.h"
#include "mb/pg_wchar.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "port/atomics.h"
#include "storage/ipc.h"
#include "storage/lwlock.h"
#include "storage/shmem.h"
#include "utils/acl.h"
#include "utils/backend_status.h"
#include "utils/builtins.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

/* Longer pipeline and flow names are cut to this many bytes, less one. */
#define PROGRESS_NAME_LEN	128

static const char *const phase_names[] = {
	[ACDC_PHASE_STARTING] = "starting",
	[ACDC_PHASE_EMPTYING] = "emptying target",
	[ACDC_PHASE_STAMPING] = "stamping source rows",
	[ACDC_PHASE_SNAPSHOT_CALL] = "calling snapshot function",
	[ACDC_PHASE_SNAPSHOT_CHECK] = "checking snapshot keys",
	[ACDC_PHASE_READING] = "reading events",
	[ACDC_PHASE_SORTING] = "sorting events",
	[ACDC_PHASE_FOLDING] = "folding",
	[ACDC_PHASE_WRITING] = "writing",
	[ACDC_PHASE_APPENDING] = "appending",
	[ACDC_PHASE_PURGING] = "purging tombstones",
	[ACDC_PHASE_CHECKPOINT] = "saving checkpoint",
};

typedef struct ProgressSlot
{
	uint32		changecount;	/* odd while its owner writes */
	int			pid;			/* 0: no flow running */
	Oid			dboid;
	Oid			pipeline_owner; /* who may see the details */
	Oid			flow_owner;
	TimestampTz started_at;
	int			phase;
	int64		events_read;
	int64		rows_written;
	char		pipeline[PROGRESS_NAME_LEN];
	char		flow[PROGRESS_NAME_LEN];
} ProgressSlot;

typedef struct ProgressSlots
{
	int			nslots;
	ProgressSlot slots[FLEXIBLE_ARRAY_MEMBER];
} ProgressSlots;

static ProgressSlots *progress = NULL;
static shmem_request_hook_type prev_shmem_request_hook = NULL;
static shmem_startup_hook_type prev_shmem_startup_hook = NULL;
static bool callbacks_registered = false;

/*
 * This backend's flow: kept only while one runs, reset by its end or the
 * abort of the (sub)transaction it began in.
 */
typedef struct MyFlow
{
	int			nest_level;		/* where it began; 0: no flow */
	bool		report_activity;	/* also as pg_stat_activity's query */
	char	   *saved_activity; /* the query text it replaced (TopMemoryContext) */
	uint64		saved_query_id;
	char		pipeline[PROGRESS_NAME_LEN];
	char		flow[PROGRESS_NAME_LEN];
} MyFlow;

static MyFlow mine;

static Size
progress_size(void)
{
	return add_size(offsetof(ProgressSlots, slots),
					mul_size(MaxBackends, sizeof(ProgressSlot)));
}

static void
progress_shmem_request(void)
{
	if (prev_shmem_request_hook)
		prev_shmem_request_hook();
	RequestAddinShmemSpace(progress_size());
}

static void
progress_shmem_startup(void)
{
	bool		found;

	if (prev_shmem_startup_hook)
		prev_shmem_startup_hook();
	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
	progress = ShmemInitStruct("autocdc progress", progress_size(), &found);
	if (!found)
	{
		memset(progress, 0, progress_size());
		progress->nslots = MaxBackends;
	}
	LWLockRelease(AddinShmemInitLock);
}

void
acdc_progress_init(void)
{
	prev_shmem_request_hook = shmem_request_hook;
	shmem_request_hook = progress_shmem_request;
	prev_shmem_startup_hook = shmem_startup_hook;
	shmem_startup_hook = progress_shmem_startup;
}

/* This backend's slot, or NULL (not preloaded, or no backend id). */
static volatile ProgressSlot *
my_slot(void)
{
	if (progress == NULL || MyBackendId < 1 || MyBackendId > progress->nslots)
		return NULL;
	return &progress->slots[MyBackendId - 1];
}

/* The change-count protocol of PgBackendStatus (utils/backend_status.h). */
static inline void
slot_write_begin(volatile ProgressSlot *slot)
{
	START_CRIT_SECTION();
	slot->changecount++;
	pg_write_barrier();
}

static inline void
slot_write_end(volatile ProgressSlot *slot)
{
	pg_write_barrier();
	slot->changecount++;
	END_CRIT_SECTION();
}

/* A copy of the slot as one write left it. */
static void
slot_read(volatile ProgressSlot *slot, ProgressSlot *copy)
{
	for (;;)
	{
		uint32		before = slot->changecount;
		uint32		after;

		pg_read_barrier();
		memcpy(copy, unvolatize(ProgressSlot *, slot), sizeof(ProgressSlot));
		pg_read_barrier();
		after = slot->changecount;
		if (before == after && (before & 1) == 0)
			return;
		CHECK_FOR_INTERRUPTS();
	}
}

static void
clip_name(char *dst, const char *src)
{
	int			len = pg_mbcliplen(src, strlen(src), PROGRESS_NAME_LEN - 1);

	memcpy(dst, src, len);
	dst[len] = '\0';
}

/* pg_stat_activity's query text for the flow in `phase`. */
static void
report_activity(AcdcPhase phase)
{
	char		text[2 * PROGRESS_NAME_LEN + 64];

	snprintf(text, sizeof(text), "autocdc run of pipeline \"%s\": flow \"%s\": %s",
			 mine.pipeline, mine.flow, phase_names[phase]);
	pgstat_report_activity(STATE_RUNNING, text);
}

/* Forgets the flow: the slot freed, the caller's query text back. */
static void
end_flow(void)
{
	volatile ProgressSlot *slot = my_slot();

	if (mine.nest_level == 0)
		return;
	if (slot && slot->pid != 0)
	{
		slot_write_begin(slot);
		slot->pid = 0;
		slot_write_end(slot);
	}
	if (mine.report_activity)
	{
		pgstat_report_activity(STATE_RUNNING, mine.saved_activity);
		pgstat_report_query_id(mine.saved_query_id, true);
	}
	if (mine.saved_activity)
		pfree(mine.saved_activity);
	memset(&mine, 0, sizeof(mine));
}

static void
progress_xact_callback(XactEvent event, void *arg)
{
	end_flow();					/* a run never outlives its transaction */
}

static void
progress_subxact_callback(SubXactEvent event, SubTransactionId mySubid,
						  SubTransactionId parentSubid, void *arg)
{
	if (event == SUBXACT_EVENT_ABORT_SUB && mine.nest_level >= GetCurrentTransactionNestLevel())
		end_flow();
}

static void
progress_on_exit(int code, Datum arg)
{
	volatile ProgressSlot *slot = my_slot();

	if (slot && slot->pid != 0)
	{
		slot_write_begin(slot);
		slot->pid = 0;
		slot_write_end(slot);
	}
}

void
acdc_progress_flow_begin(FlowDef *f)
{
	volatile ProgressSlot *slot = my_slot();
	Oid			pipeline_owner = InvalidOid;

	if (!callbacks_registered)
	{
		RegisterXactCallback(progress_xact_callback, NULL);
		RegisterSubXactCallback(progress_subxact_callback, NULL);
		before_shmem_exit(progress_on_exit, (Datum) 0);
		callbacks_registered = true;
	}
	end_flow();
	/* the caller's query text is replaced only when nothing else shows the run */
	mine.report_activity = slot == NULL;
	if (mine.report_activity && MyBEEntry && pgstat_track_activities)
	{
		mine.saved_activity = MemoryContextStrdup(TopMemoryContext,
												  (const char *) MyBEEntry->st_activity_raw);
		mine.saved_query_id = pgstat_get_my_query_id();
	}
	else
		mine.report_activity = false;
	clip_name(mine.pipeline, f->pipeline);
	clip_name(mine.flow, f->name);
	mine.nest_level = GetCurrentTransactionNestLevel();

	if (slot)
	{
		pipeline_owner = acdc_catalog_pipeline_owner(f->pipeline, NULL);
		slot_write_begin(slot);
		slot->dboid = MyDatabaseId;
		slot->pipeline_owner = pipeline_owner;
		slot->flow_owner = f->owner;
		slot->started_at = GetCurrentTimestamp();
		slot->phase = ACDC_PHASE_STARTING;
		slot->events_read = 0;
		slot->rows_written = 0;
		strlcpy((char *) slot->pipeline, mine.pipeline, PROGRESS_NAME_LEN);
		strlcpy((char *) slot->flow, mine.flow, PROGRESS_NAME_LEN);
		slot->pid = MyProcPid;
		slot_write_end(slot);
	}
	if (mine.report_activity)
		report_activity(ACDC_PHASE_STARTING);
}

void
acdc_progress_flow_end(void)
{
	end_flow();
}

void
acdc_progress_phase(AcdcPhase phase)
{
	volatile ProgressSlot *slot = my_slot();

	if (mine.nest_level == 0)
		return;
	if (slot)
	{
		slot_write_begin(slot);
		slot->phase = phase;
		slot_write_end(slot);
	}
	if (mine.report_activity)
		report_activity(phase);
}

/* Adds to one of this backend's counters, while a flow runs. */
static void
add_to_counter(bool events, int64 n)
{
	volatile ProgressSlot *slot = my_slot();

	if (slot == NULL || mine.nest_level == 0)
		return;
	slot_write_begin(slot);
	if (events)
		slot->events_read += n;
	else
		slot->rows_written += n;
	slot_write_end(slot);
}

void
acdc_progress_add_events(int64 n)
{
	add_to_counter(true, n);
}

void
acdc_progress_add_rows(int64 n)
{
	add_to_counter(false, n);
}

/*
 * Whether the caller may see what a run does: as pg_stat_activity shows a
 * query, to members of the pipeline's or the flow's owner (as
 * autocdc.event_log's rows) and of pg_read_all_stats.
 */
static bool
may_see(ProgressSlot *s)
{
	Oid			me = GetUserId();

	return has_privs_of_role(me, ROLE_PG_READ_ALL_STATS) ||
		(OidIsValid(s->pipeline_owner) && has_privs_of_role(me, s->pipeline_owner)) ||
		(OidIsValid(s->flow_owner) && has_privs_of_role(me, s->flow_owner));
}

PG_FUNCTION_INFO_V1(autocdc_progress);

/*
 * autocdc.progress: a row per flow running in this database that the
 * caller may see (may_see).  Without preloading there is no
 * slot, and no row: pg_stat_activity shows the runs then (README).
 */
Datum
autocdc_progress(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;

	InitMaterializedSRF(fcinfo, 0);
	if (progress == NULL)
		return (Datum) 0;
	for (int i = 0; i < progress->nslots; i++)
	{
		ProgressSlot s;
		Datum		values[7];
		bool		nulls[7] = {0};

		slot_read(&progress->slots[i], &s);
		if (s.pid == 0 || s.dboid != MyDatabaseId ||
			s.phase < 0 || s.phase >= lengthof(phase_names))
			continue;
		/* as autocdc.event_log's policy hides another role's rows */
		if (!may_see(&s))
			continue;
		values[0] = Int32GetDatum(s.pid);
		values[1] = CStringGetTextDatum(s.pipeline);
		values[2] = CStringGetTextDatum(s.flow);
		values[3] = CStringGetTextDatum(phase_names[s.phase]);
		values[4] = Int64GetDatum(s.events_read);
		values[5] = Int64GetDatum(s.rows_written);
		values[6] = TimestampTzGetDatum(s.started_at);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	return (Datum) 0;
}
