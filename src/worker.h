/*-------------------------------------------------------------------------
 * worker.h
 *	  Scheduled runs: the launcher, the per-database schedulers (worker.c),
 *	  the run workers (worker_run.c), the SQL functions that schedule
 *	  pipelines (schedule.c), and manual runs cut short (manual_runs.c).
 *	  What they write in a pipeline's row and in the run history is in
 *	  catalog_run.c (catalog.h).
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

/* The run a run worker runs (worker_run.c): 0 in every other backend. */
extern int64 autocdc_scheduled_run_id;
extern char *acdc_run_time_exceeded_reason(void);
extern void acdc_worker_force_settings(void);

/* Cancelled manual runs, kept in shared memory when preloaded (manual_runs.c). */
extern void acdc_manual_runs_init(void);
extern void acdc_manual_run_begin(int64 run_id, List *pipeline_ids);
extern void acdc_manual_run_interrupted(const char *reason);
extern void acdc_manual_run_end(void);
extern void acdc_manual_runs_record(void);

#endif							/* AUTOCDC_WORKER_H */
