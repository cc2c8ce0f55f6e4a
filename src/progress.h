/*-------------------------------------------------------------------------
 * progress.h
 *	  What a run is doing now, for other sessions (progress.c): the view
 *	  autocdc.progress when autocdc is preloaded, else pg_stat_activity's
 *	  query text of the session running it.
 *-------------------------------------------------------------------------
 */
#ifndef AUTOCDC_PROGRESS_H
#define AUTOCDC_PROGRESS_H

#include "flow.h"

/* What the flow's run does now; progress.c names them (README, autocdc.progress). */
typedef enum AcdcPhase
{
	ACDC_PHASE_STARTING,		/* locks, checks, the catalog */
	ACDC_PHASE_EMPTYING,		/* full refresh: the target and its state emptied */
	ACDC_PHASE_STAMPING,		/* source rows without a stamp get one */
	ACDC_PHASE_SNAPSHOT_CALL,	/* the source function asked for the next snapshot */
	ACDC_PHASE_SNAPSHOT_CHECK,	/* a snapshot's keys checked for duplicates */
	ACDC_PHASE_READING,			/* the events statement, into the sort */
	ACDC_PHASE_SORTING,			/* the sort, and the keys numbered */
	ACDC_PHASE_FOLDING,			/* events folded with state and target rows */
	ACDC_PHASE_WRITING,			/* the changes written to target and state */
	ACDC_PHASE_APPENDING,		/* append: INSERT ... SELECT */
	ACDC_PHASE_PURGING,			/* tombstones past retention deleted */
	ACDC_PHASE_CHECKPOINT		/* the checkpoint saved */
} AcdcPhase;

/* Events between two updates of events_read: a power of 2. */
#define ACDC_PROGRESS_EVENTS_BATCH	1024

/* From _PG_init while shared_preload_libraries is processed. */
extern void acdc_progress_init(void);

/*
 * A flow's run starts (phase "starting") and ends.  An error that rolls
 * back the subtransaction or transaction the flow began in ends it too.
 */
extern void acdc_progress_flow_begin(FlowDef *flow);
extern void acdc_progress_flow_end(void);

extern void acdc_progress_phase(AcdcPhase phase);
extern void acdc_progress_add_events(int64 n);
extern void acdc_progress_add_rows(int64 n);

#endif							/* AUTOCDC_PROGRESS_H */
