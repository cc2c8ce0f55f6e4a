/*-------------------------------------------------------------------------
 * worker.h
 *	  Scheduled runs: the launcher, the per-database schedulers (worker.c)
 *	  and the run workers (worker_run.c), and the SQL functions that
 *	  schedule pipelines (schedule.c).
 *-------------------------------------------------------------------------
 */
#ifndef AUTOCDC_WORKER_H
#define AUTOCDC_WORKER_H

#include "autocdc.h"

/* What a scheduler tells a run worker, in bgw_extra. */
typedef struct RunWorkerArgs
{
	Oid			dboid;
	Oid			owner;
	int64		pipeline_id;
} RunWorkerArgs;

extern void autocdc_register_launcher(void);
extern PGDLLEXPORT void autocdc_launcher_main(Datum arg);
extern PGDLLEXPORT void autocdc_scheduler_main(Datum arg);
extern PGDLLEXPORT void autocdc_run_worker_main(Datum arg);

#endif							/* AUTOCDC_WORKER_H */
