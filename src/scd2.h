/*-------------------------------------------------------------------------
 * scd2.h
 *	  The SCD type 2 fold: applies a flow's new events to its history.
 *-------------------------------------------------------------------------
 */
#ifndef AUTOCDC_SCD2_H
#define AUTOCDC_SCD2_H

#include "flow.h"
#include "source_read.h"

extern void scd2_apply(FlowDef *flow, ReadParams *params, FlowCounts *counts);

#endif							/* AUTOCDC_SCD2_H */
