/*-------------------------------------------------------------------------
 * validate.h
 *	  Checks on a run's events shared by the folds, and SQL helpers for
 *	  the statements the folds generate.
 *-------------------------------------------------------------------------
 */
#ifndef AUTOCDC_VALIDATE_H
#define AUTOCDC_VALIDATE_H

#include "flow.h"
#include "source_read.h"

extern Oid	target_type(FlowDef *f, const char *col);
extern void append_keys_match(StringInfo sql, FlowDef *f, const char *a,
							  const char *b);
extern void append_flow_seq_cmp(StringInfo sql, FlowDef *f, const char *a,
								const char *op, const char *b);
extern char *validate_keytext(FlowDef *f);
extern char *validate_prefixed_keys(FlowDef *f, const char *a);
extern void validate_append_batch_checks(StringInfo sql, FlowDef *f,
										 const char *keytext);
extern void validate_and_apply(FlowDef *f, ReadParams *p, const char *events,
							   const char *checks, const char *apply,
							   FlowCounts *counts);

#endif							/* AUTOCDC_VALIDATE_H */
