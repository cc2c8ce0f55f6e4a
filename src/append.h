/*-------------------------------------------------------------------------
 * append.h
 *	  Append flows: new source rows inserted into the target by column name.
 *-------------------------------------------------------------------------
 */
#ifndef AUTOCDC_APPEND_H
#define AUTOCDC_APPEND_H

#include "flow.h"
#include "source_read.h"

extern void acdc_append_evolve_target(List *columns, const char *label, Oid target);
extern List *acdc_append_source_columns(FlowDef *f);
extern char *acdc_append_source_label(Oid source, const char *query);
extern void acdc_append_apply(FlowDef *flow, ReadParams *params, FlowCounts *counts);

#endif							/* AUTOCDC_APPEND_H */
