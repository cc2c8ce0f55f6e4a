/*-------------------------------------------------------------------------
 * scd2.h
 *	  The SCD type 2 fold: applies a flow's new events to its history.
 *-------------------------------------------------------------------------
 */
#ifndef AUTOCDC_SCD2_H
#define AUTOCDC_SCD2_H

#include "flow.h"
#include "source_read.h"

/* What the fold needs to know about the target's columns. */
typedef struct Scd2Cols
{
	List	   *values;			/* the event store's value columns */
	List	   *tracked;		/* history is kept on these */
	List	   *inheriting;		/* columns some upsert may leave to inherit */
	char	   *qtarget;
	char	   *qevents;
} Scd2Cols;

extern void acdc_scd2_apply(FlowDef *flow, ReadParams *params, FlowCounts *counts);

#endif							/* AUTOCDC_SCD2_H */
