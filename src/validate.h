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

extern Oid	acdc_target_type(FlowDef *f, const char *col);
extern void acdc_append_keys_match(StringInfo sql, FlowDef *f, const char *a,
							  const char *b);
extern void acdc_append_flow_seq_cmp(StringInfo sql, FlowDef *f, const char *a,
								const char *op, const char *b);
extern char *acdc_validate_prefixed_keys(FlowDef *f, const char *a);
/*
 * The error for a bad event (the same from every fold): problem is
 * "null_sequence", "null_key", "conflict" (two events of the batch),
 * "conflict_applied" (against an event an earlier run applied) or
 * "conflict_target" (against the row an earlier run's upsert made); key is
 * the key's values as text ("1, a"), seq the sequence's.
 */
extern void acdc_validate_raise_unknown_column(FlowDef *f, const char *key, const char *seq,
											   const char *name) pg_attribute_noreturn();
extern void acdc_validate_raise(FlowDef *f, const char *problem, const char *key,
						   const char *seq) pg_attribute_noreturn();

#endif							/* AUTOCDC_VALIDATE_H */
