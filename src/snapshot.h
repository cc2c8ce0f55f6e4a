/*-------------------------------------------------------------------------
 * snapshot.h
 *	  AUTO CDC from snapshot: full snapshots applied as events.
 *-------------------------------------------------------------------------
 */
#ifndef AUTOCDC_SNAPSHOT_H
#define AUTOCDC_SNAPSHOT_H

#include "flow.h"

extern char *acdc_snapshot_apply(FlowDef *flow, bool refresh, FlowCounts *counts);

#endif							/* AUTOCDC_SNAPSHOT_H */
