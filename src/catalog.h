/*-------------------------------------------------------------------------
 * catalog.h
 *	  Every statement on autocdc's catalog (the tables pipeline, target,
 *	  flow, checkpoint, event_log, run_history and lineage, and the
 *	  sequence run_id_seq), each behind a named function, as pg_cron keeps
 *	  its job tables' in job_metadata.c.  They run as the extension owner
 *	  (acdc_catalog_exec) with SPI connected; callers check the user's rights.
 *
 *	  catalog.c          what a run reads and writes of its flows: their
 *	                     definitions, checkpoints, the target's shared
 *	                     state, the event log, the lineage (declared with
 *	                     FlowDef in flow.h); autocdc.source_progress
 *	  catalog_define.c   what creating and dropping flows reads and writes
 *	  catalog_run.c      a pipeline's runs: its schedule and lease, the run
 *	                     history, interrupted runs
 *-------------------------------------------------------------------------
 */
#ifndef AUTOCDC_CATALOG_H
#define AUTOCDC_CATALOG_H

#include "flow.h"
#include "datatype/timestamp.h"

struct FlowSpec;

/* A target's registration, as the flows into it agree on (catalog_define.c). */
typedef struct TargetRegistration
{
	Oid			seq_type;
	Oid			composite;		/* ROW(...) sequences' type, or InvalidOid */
	Oid			state;
	List	   *partial_columns;
	List	   *track_columns;	/* SCD 2: NIL tracks all */
	bool		seq_in_target;	/* SCD 1: see FlowDef */
} TargetRegistration;

extern bool acdc_catalog_target_registration(Oid target, TargetRegistration *reg);
extern int	acdc_catalog_flows_listing_tracked(Oid target, bool *tracking_all);
extern void acdc_catalog_target_set_track_columns(Oid target, List *cols);
extern bool acdc_catalog_target_kind(Oid target, FlowKind *kind, int *scd_type, List **keys);
extern Oid	acdc_catalog_target_state(Oid target);
extern bool acdc_catalog_compact_target(Oid target, FlowDef *f);
extern void acdc_catalog_insert_target(Oid target, int scd_type, List *keys,
								  Oid seq_type, Oid state, Oid composite,
								  List *track_columns);
extern void acdc_catalog_insert_append_target(Oid target);
extern void acdc_catalog_target_set_partial_columns(Oid target, List *columns);
extern bool acdc_catalog_target_set_retention(Oid target, Datum retention);
extern bool acdc_catalog_target_other_retention(Oid target, Datum retention,
										   char **kept, char **given);
extern List *acdc_catalog_flow_columns_of_target(Oid target);
extern void acdc_catalog_flow_kinds_of_target(Oid target, int64 *snapshots,
										 int64 *cdc, bool *cdc_partial,
										 bool *cdc_listed);
extern void acdc_catalog_insert_pipeline(const char *name, Oid owner);
extern Oid	acdc_catalog_flow_owner(const char *name);
extern Oid	acdc_catalog_lock_flow(const char *name);
extern void acdc_catalog_set_columns_to_update(const char *flow, const char *column);
extern void acdc_catalog_insert_flow(struct FlowSpec *spec,
								const char *source_function,
								List *expression_objects);
extern void acdc_catalog_insert_checkpoint(const char *flow, Oid source,
									  bool incremental);
extern void acdc_catalog_flow_set_expression_objects(const char *flow,
												List *objects);
extern void acdc_catalog_delete_flow(const char *name);
extern uint64 acdc_catalog_delete_flows_of_dropped(void);
extern void acdc_catalog_delete_orphans(List **states, List **composites);
extern List *acdc_catalog_unused_composites(Oid nsp);
extern void acdc_catalog_flows_over_sources(List *relids, List **names,
									   List **owners);
extern bool acdc_catalog_sources_read(List *relids);

/* A pipeline's runs (catalog_run.c). */
typedef struct CatalogPipeline
{
	int64		id;
	Oid			owner;
} CatalogPipeline;

extern bool acdc_catalog_pipeline_by_id(int64 id, char **name, Oid *owner);
extern List *acdc_catalog_pipeline_ids(List *names);
extern int64 acdc_catalog_next_run_id(void);
extern void acdc_catalog_pipeline_set_schedule(const char *pipeline,
										  Interval *every);
extern void acdc_catalog_pipeline_clear_schedule(const char *pipeline);
extern List *acdc_catalog_running_pipelines(void);
extern List *acdc_catalog_due_pipelines(int per_owner);
extern bool acdc_catalog_next_due_ms(int64 *ms);
extern bool acdc_pipeline_lease(int64 id);
extern void acdc_pipeline_record_outcome(int64 id, const char *status,
									const char *error, int64 rows_read,
									bool only_running);
extern int64 acdc_run_history_begin(const char *pipeline, Oid owner);
extern void acdc_run_history_end(int64 run_id, const char *pipeline,
							const char *status, const char *error,
							int64 rows_read);
extern void acdc_run_history_manual(int64 run_id, const char *pipeline,
							   TimestampTz started, const char *status,
							   const char *error, int64 rows_read);
extern bool acdc_record_interrupted_run(int64 pipeline_id, const char *reason,
								   bool skip_locked);
extern bool acdc_record_interrupted_manual_run(int64 pipeline_id, int64 run_id,
										  int pid, Oid run_by,
										  TimestampTz started,
										  const char *reason);

#endif							/* AUTOCDC_CATALOG_H */
