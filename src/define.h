/*-------------------------------------------------------------------------
 * define.h
 *	  Flow definition: the validated form of create_auto_cdc_flow's
 *	  arguments (flow_define.c) and the steps that turn it into a source,
 *	  a target, auxiliary state and catalog rows (define_target.c).
 *-------------------------------------------------------------------------
 */
#ifndef AUTOCDC_DEFINE_H
#define AUTOCDC_DEFINE_H

#include "autocdc.h"
#include "flow.h"

#include "fmgr.h"
#include "nodes/primnodes.h"

typedef struct SourceColumn
{
	char	   *name;
	Oid			typid;
	int32		typmod;
	Oid			collation;
} SourceColumn;

typedef struct FlowSpec
{
	/* As given (names resolved against the source). */
	char	   *name;
	char	   *pipeline;
	bool		pipeline_named; /* false: the caller's default pipeline */
	char	   *target_name;
	Oid			source;
	List	   *keys;
	List	   *columns;		/* non-key columns written */
	List	   *ignore_null;	/* partial-update columns */
	char	   *columns_to_update;	/* its text[] column of the events' columns, or NULL */
	char	   *sequence_by;
	char	   *system_sequence_by;	/* bitemporal flows */
	char	   *deletes;
	char	   *truncates;
	bool		once;
	int			scd_type;
	char	   *options_json;
	bool		start_now;		/* start_from => 'now' */

	/* Derived. */
	bool		incremental;	/* source is a table: read by transaction */
	List	   *source_columns; /* SourceColumn, in attribute order */
	Oid			seq_type;		/* RECORDOID for ROW(...) until a type exists */
	List	   *seq_row_types;	/* field types of a ROW(...) sequence */
	List	   *seq_row_typmods;
	Oid			seq_coll;		/* the sequence's collation, InvalidOid if none */
	List	   *seq_row_colls;	/* field collations of a ROW(...) sequence */
	char	   *seq_norm;		/* expressions, names resolved, search_path-proof */
	char	   *biz_norm;		/* bitemporal: the two parts of seq_norm */
	char	   *sys_norm;
	char	   *deletes_norm;
	char	   *truncates_norm;
	Oid			target;
	bool		target_created; /* by this flow */
	List	   *track_columns;	/* SCD 2: tracked columns, NIL for all */
	FlowKind	kind;
	Oid			columns_rel;	/* where source_columns came from */
	Oid			source_function;	/* snapshot flows fed by a function */
	char	   *source_query;	/* kept source (or snapshot) query (source_query.c) */
	char	   *version_query;	/* kept version query of a snapshot flow */
	Datum		tombstone_retention;	/* interval, when retention_given */
	bool		retention_given;
	List	   *expectations;	/* Expectation, given conditions until resolved */
	bool		quarantine_bad; /* on_bad_event => 'quarantine' */
} FlowSpec;

extern void acdc_define_resolve_columns(FlowSpec *spec, List *column_list,
								   List *except_list, bool ignore_all,
								   List *ignore_list, List *ignore_except);
extern SourceColumn *acdc_define_source_column(FlowSpec *spec, const char *name);
extern void acdc_define_load_columns(FlowSpec *spec, Oid relid, bool check_select);
extern List *acdc_define_resolve_names(FlowSpec *spec, List *names, const char *what);
extern void acdc_define_drop_history_columns(FlowSpec *spec);
extern char *acdc_define_options_json(FunctionCallInfo fcinfo, int nargs,
								 const char *const *names);
extern char *acdc_define_text_arg(FunctionCallInfo fcinfo, int n);
extern List *acdc_define_list_arg(FunctionCallInfo fcinfo, int n);
extern void acdc_define_require_arg(FunctionCallInfo fcinfo, int n, const char *what);
extern void acdc_define_require_nargs(FunctionCallInfo fcinfo, int n);
extern void acdc_define_require_source(FunctionCallInfo fcinfo, int source, int query);
extern int	acdc_define_scd_type_arg(FunctionCallInfo fcinfo, int n);
extern void acdc_define_pipeline_arg(FlowSpec *spec, FunctionCallInfo fcinfo, int n);
extern void acdc_define_retention_arg(FlowSpec *spec, FunctionCallInfo fcinfo, int n);
extern void acdc_define_refuse_both(List *a, List *b, const char *aname, const char *bname);
extern void acdc_define_analyze_expressions(FlowSpec *spec);
extern char *acdc_define_analyze_condition(FlowSpec *spec, const char *expr, const char *what);

/* expect_define.c: expectations at creation, add_expectation, drop_expectation */
extern List *acdc_expect_args(FunctionCallInfo fcinfo, int first);
extern bool acdc_define_on_bad_event_arg(FunctionCallInfo fcinfo, int n);
extern void acdc_expect_define(FlowSpec *spec);
extern void acdc_define_create_flow(FlowSpec *spec);
extern void acdc_define_drop_orphan_targets(void);

/* define_start.c: start_from */
extern bool acdc_define_start_from_arg(FunctionCallInfo fcinfo, int n);
extern void acdc_define_refuse_start_now(FlowSpec *spec);
extern void acdc_define_start_now(FlowSpec *spec);

/* Helpers define_target.c lends to define_scd2.c. */
extern char *acdc_type_with_typmod(Oid typid, int32 typmod);
extern void acdc_append_collation(StringInfo buf, Oid collation, Oid typid);
extern char *acdc_define_column_ddl(Oid relid, const char *col);
extern char *acdc_define_seq_column_type(FlowSpec *spec);
extern void acdc_define_check_seq_collation(FlowSpec *spec, Oid state, Oid composite);
extern void acdc_define_depend_on_target(Oid classid, Oid objid, Oid target);
extern void acdc_define_free_name(char *name, const char *prefix, Oid target, bool type);
extern List *acdc_define_composite_field_types(Oid typid);
extern bool acdc_define_has_unique_index(Oid relid, List *columns);
extern char *acdc_define_unique_index_hint(Oid relid, List *columns);
extern void acdc_define_require_owner(Oid relid);
extern void acdc_define_refuse_temporary(Oid relid, const char *what);
extern void acdc_define_require_run_access(FlowSpec *spec);
extern void acdc_define_require_trusted_type(Oid typid, Oid runner, const char *what);
extern void acdc_define_require_sortable(Oid typid, const char *what);
extern Oid	acdc_define_create_target(FlowSpec *spec, RangeVar *rv);
extern void acdc_define_check_existing_target(FlowSpec *spec, Oid relid);
extern void acdc_define_prepare_source(FlowSpec *spec);
extern Oid	acdc_define_create_sequence_composite(FlowSpec *spec, Oid owner);
extern Oid	acdc_define_create_state_table(FlowSpec *spec, Oid owner);
extern void acdc_define_sequence_column(FlowSpec *spec, bool first);
extern char *acdc_define_aux_table_head(StringInfo sql, FlowSpec *spec,
								   const char *prefix, char *sname);
extern Oid	acdc_define_create_aux_table(FlowSpec *spec, const char *ddl, const char *name,
									const char *what, Oid owner);

/* define_scd2.c */
extern void acdc_scd2_resolve_tracking(FlowSpec *spec, List *track_list, List *track_except);
extern void acdc_scd2_check_existing_target(FlowSpec *spec, Oid relid);
extern void acdc_scd2_check_history_collations(FlowSpec *spec, Oid relid);
extern void acdc_scd2_add_history_columns(FlowSpec *spec);
extern Oid	acdc_scd2_create_event_store(FlowSpec *spec, Oid owner);
extern void acdc_scd2_extend_event_store(FlowSpec *spec, Oid events);
extern void acdc_scd2_create_as_of(FlowSpec *spec, Oid owner);

/* define_bitemp.c */
extern const char *acdc_scd_type_name(int scd_type);
extern void acdc_bt_check_args(FlowSpec *spec, List *track_list, List *track_except);
extern void acdc_bt_wrap_sequence(FlowSpec *spec);
extern void acdc_bt_add_history_columns(FlowSpec *spec);
extern void acdc_bt_check_existing_target(FlowSpec *spec, Oid relid);
extern void acdc_bt_create_functions(FlowSpec *spec, Oid owner);

/* drop_deps.c */
extern void acdc_define_drop_unused_composites(void);

#endif							/* AUTOCDC_DEFINE_H */
