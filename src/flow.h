/*-------------------------------------------------------------------------
 * flow.h
 *	  A flow as the run sees it, and the catalog access that loads and saves
 *	  it (catalog.c).
 *-------------------------------------------------------------------------
 */
#ifndef AUTOCDC_FLOW_H
#define AUTOCDC_FLOW_H

#include "autocdc.h"

/* What a flow does; autocdc.flow.kind and autocdc.target.kind name it. */
typedef enum FlowKind
{
	FLOW_AUTO_CDC,				/* 'auto_cdc': folds change events */
	FLOW_SNAPSHOT,				/* 'snapshot': compares snapshots */
	FLOW_APPEND					/* 'append': inserts source rows */
} FlowKind;

/*
 * stored_as_scd_type of a bitemporal flow, as FlowDef.scd_type and
 * autocdc.flow.stored_as_scd_type / autocdc.target.scd_type keep it
 * (autocdc.flows shows NULL and stored_as 'bitemporal').  SCD 2 and
 * bitemporal targets keep an event store.
 */
#define ACDC_BITEMPORAL 3
#define ACDC_KEEPS_EVENTS(scd_type) ((scd_type) == 2 || (scd_type) == ACDC_BITEMPORAL)

/* An expectation of a flow (expect.c): a condition over the source row. */
typedef enum ExpectAction
{
	EXPECT_WARN,				/* 'warn': counted */
	EXPECT_DROP,				/* 'drop': left out of the run, quarantined */
	EXPECT_FAIL					/* 'fail': fails the flow's run */
} ExpectAction;

typedef struct Expectation
{
	char	   *name;
	char	   *condition;		/* normalized boolean expression */
	ExpectAction action;
	List	   *objects;		/* what it resolved to (expr_pin.c) */
	int64		passed;			/* this run's counts */
	int64		failed;
} Expectation;

typedef struct FlowDef
{
	char	   *name;
	FlowKind	kind;
	char	   *pipeline;
	Oid			owner;			/* who created it */
	Oid			run_as;			/* the target's owner, set when it runs */
	Oid			target;
	Oid			source;			/* InvalidOid: a snapshot source function */
	char	   *source_function;	/* qualified signature, or NULL */
	char	   *source_query;	/* kept source (or snapshot) query, or NULL */
	char	   *version_query;	/* kept version query of a snapshot flow */
	int			scd_type;		/* 0 for append flows */
	List	   *keys;			/* key column names (target = source names) */
	List	   *columns;		/* non-key target columns this flow writes */
	List	   *ignore_null;	/* this flow's partial-update columns */
	char	   *columns_to_update;	/* source column listing each event's columns, or NULL */
	char	   *sequence_by;	/* normalized expression over the source row */
	char	   *deletes;		/* normalized boolean expression or NULL */
	char	   *truncates;		/* normalized boolean expression or NULL */
	bool		once;
	bool		incremental;	/* source carries __autocdc_xid */
	List	   *expression_objects; /* what the above resolved to (expr_pin.c) */
	bool		expression_objects_unset;	/* NULL: a flow from 0.1.0 */
	struct ArrayType *settings;	/* pinned at creation: 'name=value' */
	List	   *expectations;	/* Expectation, by name */
	bool		quarantine_bad; /* on_bad_event => 'quarantine' */
	int64		run_id;			/* the run it is part of (quarantine rows) */
	struct Quarantine *quarantine;	/* this run's rows set aside, or NULL */
	int64		rows_dropped;	/* this run's rows dropped by expectations */

	/* Shared by every flow into the target; the last two read under lock. */
	Oid			state;			/* auxiliary state table */
	Oid			seq_type;
	List	   *track_columns;	/* SCD 2: history tracked on these, NIL: all */
	List	   *state_partial;	/* columns whose setting sequence is kept */
	char	   *truncate_seq;	/* highest truncate applied, or NULL */
	double		tombstone_retention_s;	/* the target's, else the setting's; <0: forever */
	bool		seq_in_target;	/* SCD 1: the applied upsert's sequence is in the
								 * target's __autocdc_sequence, not the state */
	bool		held_rows;		/* ... and the target held rows after the last run */
	double		purge_age_s;	/* SCD 1: seconds since a run last looked for
								 * tombstones past retention, <0: never */
	bool		purged;			/* this run looked (see acdc_scd1_purge_tombstones) */

	/* Checkpoint, read under lock at run time. */
	char	   *ckpt_snapshot;	/* NULL before the first run */
	char	   *ckpt_own_xid;
	char	   *ckpt_own_cid;
	char	   *ckpt_version;	/* snapshot flows: last version applied */
	char	   *ckpt_cluster;	/* system identifier where it was taken */
	char	   *ckpt_foreign;	/* "cluster" or "ahead": taken in another
								 * cluster (catalog.c); NULL: ours */
	bool		once_done;
} FlowDef;

/* Counts a flow run reports. */
typedef struct FlowCounts
{
	int64		read;
	int64		upserted;
	int64		deleted;
	int64		skipped;
	int64		dropped;		/* left out by the flow's drop expectations */
	int64		quarantined;	/* rows newly put in autocdc.quarantine */
} FlowCounts;

extern void acdc_catalog_check_version(void);
extern FlowKind acdc_catalog_flow_kind(const char *name);
extern const char *acdc_catalog_flow_kind_name(FlowKind kind);
extern List *acdc_catalog_load_flows(const char *pipeline, List *flow_names);
extern void acdc_catalog_lock_checkpoint(FlowDef *flow);
extern void acdc_catalog_load_target_state(FlowDef *flow);
extern void acdc_catalog_save_checkpoint(FlowDef *flow, const char *snapshot,
									const char *own_xid, int64 own_cid,
									const char *version);
extern void acdc_catalog_note_cluster(void);
extern void acdc_catalog_reset_target(Oid target);
extern void acdc_catalog_set_truncate_seq(Oid target, const char *seq);
extern void acdc_catalog_set_held_rows(Oid target, bool held);
extern void acdc_catalog_set_tombstones_purged(Oid target);
extern void acdc_catalog_log_event(int64 run_id, FlowDef *flow, bool full_refresh,
							  FlowCounts *counts, const char *status,
							  const char *error, double seconds);
extern void acdc_catalog_prune_event_log(void);
extern Oid	acdc_catalog_pipeline_owner(const char *pipeline, int64 *id);

/* Acting for a flow: as its target's owner, under its pinned settings (run.c). */
extern void acdc_flow_become(UserSwitch *sw, FlowDef *f);

/* run.c: refuses a target whose auxiliary objects are not f->run_as's */
extern void acdc_flow_require_aux_owned(FlowDef *f);

#endif							/* AUTOCDC_FLOW_H */
