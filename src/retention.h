/*-------------------------------------------------------------------------
 * retention.h
 *	  What a target forgets: SCD 2 tombstones past the target's retention,
 *	  floors below which late events are skipped, autocdc.compact().
 *-------------------------------------------------------------------------
 */
#ifndef AUTOCDC_RETENTION_H
#define AUTOCDC_RETENTION_H

#include "flow.h"
#include "source_read.h"

extern void acdc_scd2_skip_below_floors(FlowDef *f, ReadParams *p, StringInfo events,
								   FlowCounts *skipped);
extern void acdc_scd2_purge_tombstones(FlowDef *f);

#endif							/* AUTOCDC_RETENTION_H */
