/*-------------------------------------------------------------------------
 * worker.h
 *	  Scheduled runs: the launcher, the per-database schedulers (worker.c),
 *	  the run workers (worker_run.c), what they write in a pipeline's row
 *	  (worker_outcome.c), and the SQL functions that schedule pipelines
 *	  (schedule.c), and the run history (run_history.c).
 *-------------------------------------------------------------------------
 */
#ifndef AUTOCDC_WORKER_H
#define AUTOCDC_WORKER_H

#include "autocdc.h"
#include "datatype/timestamp.h"

/* What a scheduler tells a run worker, in bgw_extra. */
typedef struct RunWorkerArgs
{
	Oid			dboid;
	int64		pipeline_id;
} RunWorkerArgs;

extern void autocdc_register_launcher(void);
extern PGDLLEXPORT void autocdc_launcher_main(Datum arg);
extern PGDLLEXPORT void autocdc_scheduler_main(Datum arg);
extern PGDLLEXPORT void autocdc_run_worker_main(Datum arg);

/* A pipeline's scheduled-run state (worker_outcome.c). */
extern bool pipeline_lease(int64 id);
extern void pipeline_record_outcome(int64 id, const char *status,
									const char *error, int64 rows_read,
									bool only_running);
extern char *run_time_exceeded_reason(void);
extern void worker_force_settings(void);

/* autocdc.run_history and interrupted runs (run_history.c). */
extern int64 autocdc_scheduled_run_id;
extern int64 run_history_begin(const char *pipeline, Oid owner);
extern void run_history_end(int64 run_id, const char *pipeline, const char *status,
							const char *error, int64 rows_read);
extern void run_history_manual(int64 run_id, const char *pipeline, TimestampTz started,
							   const char *status, const char *error, int64 rows_read);
extern bool record_interrupted_run(int64 pipeline_id, const char *reason, bool skip_locked);
extern bool record_interrupted_manual_run(int64 pipeline_id, int64 run_id, int pid, Oid run_by,
										  TimestampTz started, const char *reason);

/* Cancelled manual runs, kept in shared memory when preloaded (manual_runs.c). */
extern void manual_runs_init(void);
extern void manual_run_begin(int64 run_id, List *pipeline_ids);
extern void manual_run_interrupted(const char *reason);
extern void manual_run_end(void);
extern void manual_runs_record(void);

#endif							/* AUTOCDC_WORKER_H */
