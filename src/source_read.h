/*-------------------------------------------------------------------------
 * source_read.h
 *	  Reading new source rows as events (doc/design.md §4): the SQL that
 *	  selects the rows a run must read, and the parameters it is run with.
 *-------------------------------------------------------------------------
 */
#ifndef AUTOCDC_SOURCE_READ_H
#define AUTOCDC_SOURCE_READ_H

#include "flow.h"

#include "tcop/dest.h"

/*
 * Parameters of every statement that reads events; the SQL refers to them
 * as $1..$6 in this order.
 */
#define READ_NPARAMS 6
typedef struct ReadParams
{
	char	   *snapshot;		/* $1: the run's snapshot */
	char	   *prev_snapshot;	/* $2: the checkpoint's, or NULL */
	char	   *prev_own_xid;	/* $3 */
	char	   *prev_own_cid;	/* $4 (bigint as text) */
	char	   *own_xid;		/* $5: this transaction, if it has an xid */
	char	   *truncate_seq;	/* $6: the target's truncate mark */
	bool		whole;			/* read every row (first run, ONCE, refresh) */
	const char *events_sql;		/* events from elsewhere (a snapshot) */
} ReadParams;

extern void acdc_read_params_arrays(ReadParams *p, Oid *types, Datum *values,
							   char *nulls);
extern void acdc_read_append_events(StringInfo sql, FlowDef *flow, ReadParams *p);
extern void acdc_read_append_from(StringInfo sql, FlowDef *flow, ReadParams *p);
extern void acdc_read_require_xid_column(FlowDef *flow);
extern void acdc_read_execute(const char *sql, ReadParams *params, DestReceiver *dest);

/* The stamps of a table source (stamp.c). */
extern void acdc_stamp_note_run_reads(void);
extern void acdc_stamp_check_trigger(FlowDef *flow, bool refuse_missing);
extern void acdc_stamp_unstamped_rows(FlowDef *flow, bool whole);
extern char *acdc_stamp_trigger_sql(const char *qname);
extern char *acdc_stamp_index_sql(const char *qname);

/* "(a, b)": a table source's columns but __autocdc_xid (source_columns.c). */
extern char *acdc_source_user_columns(Oid relid);

#define SRC_ALIAS "__autocdc_src"

#endif							/* AUTOCDC_SOURCE_READ_H */
