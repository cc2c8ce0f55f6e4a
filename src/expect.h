/*-------------------------------------------------------------------------
 * expect.h
 *	  A flow's expectations at run time (expect.c) and the quarantine that
 *	  keeps the rows a run sets aside (quarantine.c); doc/design.md §2.14.
 *-------------------------------------------------------------------------
 */
#ifndef AUTOCDC_EXPECT_H
#define AUTOCDC_EXPECT_H

#include "flow.h"

#include "executor/tuptable.h"

/* The read statement's extra columns: the source row, one per expectation. */
#define EXPECT_ROW_COLUMN "__autocdc_row"

extern void acdc_expect_load(List *flows);
extern void acdc_expect_verify(FlowDef *f);
extern bool acdc_expect_has_row(FlowDef *f);
extern void acdc_expect_append_columns(StringInfo sql, FlowDef *f);

/*
 * What the expectations say of a row read, whose results start at
 * attribute xatt (0-based) of slot: each is counted; the result is the
 * row's fate.  *failed is the first fail expectation it failed.
 */
typedef enum ExpectVerdict
{
	EXPECT_KEEP,
	EXPECT_DROPPED,
	EXPECT_FAILED
} ExpectVerdict;
extern ExpectVerdict acdc_expect_check(FlowDef *f, TupleTableSlot *slot, int xatt,
									   Expectation **failed);
extern Datum acdc_expect_failed_names(FlowDef *f, TupleTableSlot *slot, int xatt);
extern void acdc_expect_raise(FlowDef *f, Expectation *e, const char *row) pg_attribute_noreturn();
extern char *acdc_expect_counts_json(FlowDef *f);
extern void acdc_expect_record_run(FlowDef *f);

/* quarantine.c */
extern void acdc_quarantine_add(FlowDef *f, const char *reason, Datum expectations,
								Datum row, const char *seq, const char *conflicts_with);
extern void acdc_quarantine_flush(FlowDef *f, FlowCounts *counts);
extern void acdc_quarantine_prune(void);

#endif							/* AUTOCDC_EXPECT_H */
