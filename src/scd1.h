/*-------------------------------------------------------------------------
 * scd1.h
 *	  The SCD type 1 fold: applies a flow's new events to its target.
 *-------------------------------------------------------------------------
 */
#ifndef AUTOCDC_SCD1_H
#define AUTOCDC_SCD1_H

#include "flow.h"
#include "source_read.h"

extern char *acdc_scd1_apply(FlowDef *flow, ReadParams *params, FlowCounts *counts);

#endif							/* AUTOCDC_SCD1_H */
