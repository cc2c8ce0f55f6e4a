/*-------------------------------------------------------------------------
 * append.h
 *	  Append flows: new source rows inserted into the target by column name.
 *-------------------------------------------------------------------------
 */
#ifndef AUTOCDC_APPEND_H
#define AUTOCDC_APPEND_H

#include "flow.h"
#include "source_read.h"

extern void acdc_append_evolve_target(Oid source, Oid target);
extern void acdc_append_apply(FlowDef *flow, ReadParams *params, FlowCounts *counts);

#endif							/* AUTOCDC_APPEND_H */
