/*-------------------------------------------------------------------------
 * run.c
 *	  autocdc.run(): the set-returning function that runs flows, and
 *	  autocdc.refresh(): the procedure that runs them the same way, commits,
 *	  and raises an error if a flow failed.
 *
 * One run is one transaction of the caller (a manual run records itself
 * in autocdc.run_history and its pipelines' rows there too; a scheduled
 * run's worker records it).  Each flow runs in its own
 * subtransaction, as the flow's owner with search_path pinned; a flow that
 * fails is rolled back whole, logged, reported as a WARNING and a 'failed'
 * row, and the other flows go on.  A full refresh works per target: the
 * target is emptied and rebuilt by its flows in one subtransaction, so a
 * failure leaves it as it was.
 *-------------------------------------------------------------------------
 */
#include "catalog.h"
#include "append.h"
#include "collation.h"
#include "expect.h"
#include "expr_pin.h"
#include "progress.h"
#include "scd1.h"
#include "snapshot.h"
#include "scd2.h"
#include "source_read.h"
#include "worker.h"

#include "access/xact.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "catalog/pg_class.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/syscache.h"
#include "catalog/namespace.h"
#include "utils/resowner.h"
#include "utils/timestamp.h"

PG_FUNCTION_INFO_V1(autocdc_run);
PG_FUNCTION_INFO_V1(autocdc_refresh);

typedef struct FlowResult
{
	FlowDef    *flow;
	FlowCounts	counts;
	const char *status;
	char	   *error;
	char	   *hint;			/* the failed flow's own error's, or NULL */
	int			sqlerrcode;		/* the failed flow's own error's, or 0 */
	bool		verifying;		/* checking its kept expressions (expr_pin.c) */
	TimestampTz started;
	TimestampTz finished;
} FlowResult;

/*
 * Refuses a second concurrent run of a pipeline (the worker's included),
 * with a lock no SQL can take (pipeline_lock.c).
 */
static void
lock_pipeline(const char *pipeline, int64 id)
{
	if (!acdc_pipeline_lock_try(id))
		ereport(ERROR,
				(errcode(ERRCODE_LOCK_NOT_AVAILABLE),
				 errmsg("pipeline \"%s\" is already running", pipeline),
				 errdetail("Another session is running it now; runs of one pipeline never overlap."),
				 errhint("Run it again when that run has finished.")));
}

/*
 * Whether the pipeline exists and the caller has its owner's privileges;
 * its id into *id unless id is NULL.
 */
static bool
pipeline_is_callers(const char *pipeline, int64 *id)
{
	Oid			owner = acdc_catalog_pipeline_owner(pipeline, id);

	return OidIsValid(owner) && has_privs_of_role(GetUserId(), owner);
}

/* Producers before consumers: a flow whose target another flow reads runs first. */
static List *
order_flows(List *flows)
{
	List	   *pending = list_copy(flows);
	List	   *ordered = NIL;

	while (pending != NIL)
	{
		ListCell   *lc;
		FlowDef    *pick = NULL;

		foreach(lc, pending)
		{
			FlowDef    *f = lfirst(lc);
			ListCell   *lc2;
			bool		waits = false;

			foreach(lc2, pending)
			{
				FlowDef    *g = lfirst(lc2);

				if (g != f && g->target == f->source)
					waits = true;
			}
			if (!waits)
			{
				pick = f;
				break;
			}
		}
		if (pick == NULL)
			pick = linitial(pending);	/* a cycle: keep name order */
		ordered = lappend(ordered, pick);
		pending = list_delete_ptr(pending, pick);
	}
	return ordered;
}

static char *
query_text(const char *sql)
{
	acdc_spi_exec(sql, 0, NULL, NULL, NULL, false);
	return acdc_spi_value(0, 1);
}

/*
 * A checkpoint taken in another cluster (a dump restored elsewhere) names
 * transaction ids that mean nothing here: reading by them would skip rows
 * or read them twice, whichever way the counters stand.  Only a full
 * refresh, which reads the source whole, starts the flow again.
 */
static void
refuse_foreign_checkpoint(FlowDef *f)
{
	if (f->ckpt_foreign == NULL)
		return;
	ereport(ERROR,
			(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
			 errmsg("flow \"%s\" last read its source in another database cluster", f->name),
			 strcmp(f->ckpt_foreign, "cluster") == 0 ?
			 errdetail("Its checkpoint was taken in the cluster with system identifier %s, and this one is %lld; the transaction ids by which the source's rows are read are not comparable across clusters.",
					   f->ckpt_cluster, (long long) autocdc_system_identifier()) :
			 errdetail("Its checkpoint is ahead of every transaction of this cluster; the transaction ids by which the source's rows are read are not comparable across clusters."),
			 errhint("Run its pipeline once with full_refresh => true, which rebuilds the flow's target from the source as it is now (an append target is emptied and filled again with the rows in its sources): SELECT * FROM autocdc.run(%s, full_refresh => true);",
					 quote_literal_cstr(f->pipeline))));
}

static void run_flow_inner(FlowResult *r, bool refresh);

/*
 * Acts for the flow: as its target's owner, restricted, with the settings
 * pinned at its creation, so every caller and the worker evaluate its
 * expressions alike.
 */
void
acdc_flow_become(UserSwitch *sw, FlowDef *f)
{
	autocdc_become(sw, f->run_as, true);
	autocdc_apply_settings(f->settings);
}

/*
 * A target emptied outside autocdc (TRUNCATE, or DELETE of every row)
 * while its state still holds live keys: an incremental run would fold new
 * events over rows that are gone and leave the other keys missing, so it
 * is refused.  Cheap: the state is looked at only when the target is empty.
 * An SCD 1 state keeps tombstones (dead keys) and an SCD 2 event store
 * deletes of keys never seen, so only a live key or an upsert counts.  An
 * SCD 1 target keeping its rows' sequences has live keys in its state only
 * for partial-update columns: that it held rows after its last run counts
 * (read after the lock, as the flows before in this run left it).
 */
static void
check_target_not_emptied(FlowDef *f)
{
	acdc_spi_exec(psprintf("SELECT NOT EXISTS (SELECT 1 FROM %s) AND (%s OR EXISTS (SELECT 1 FROM %s WHERE %s))",
					  acdc_rel_qualified_name(f->target),
					  (f->seq_in_target || f->scd_type == 2) && f->held_rows ? "true" : "false",
					  acdc_rel_qualified_name(f->state),
					  ACDC_KEEPS_EVENTS(f->scd_type) ? "__autocdc_kind OPERATOR(pg_catalog.=) 'u'"
					  : "__autocdc_deleted_at IS NULL"),
			 0, NULL, NULL, NULL, false);
	if (acdc_spi_bool(0, 1))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("target \"%s\" of flow \"%s\" was emptied outside autocdc",
						get_rel_name(f->target), f->name),
				 errdetail("The target holds no row while autocdc's state for it holds live keys: it was truncated, or all its rows were deleted, by hand. A run would apply new events over rows that are gone."),
				 errhint("Rebuild it from its sources: SELECT * FROM autocdc.run(%s, full_refresh => true);",
						 quote_literal_cstr(f->pipeline))));
}

/*
 * The target's auxiliary objects belong to its owner, who alone could
 * attach code to them.  After the target changed hands they still belong
 * to the one before, whose triggers on them would run as the new owner:
 * the flows must be made again, which makes them anew.
 */
static void
require_aux_owned_by(FlowDef *f, Oid aux)
{
	if (!OidIsValid(aux) || get_rel_name(aux) == NULL ||
		autocdc_relation_owner(aux) == f->run_as)
		return;
	ereport(ERROR,
			(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
			 errmsg("the auxiliary state of target \"%s\" belongs to role \"%s\", not to the target's owner \"%s\"",
					get_rel_name(f->target), GetUserNameFromId(autocdc_relation_owner(aux), false),
					GetUserNameFromId(f->run_as, false)),
			 errdetail("The target changed owner after its flows were created; what the former owner attached to the state would run with the new owner's rights."),
			 errhint("Drop the target's flows and create them again: SELECT autocdc.drop_flow(%s); then a full refresh rebuilds the target.",
					 quote_literal_cstr(f->name))));
}

/* The state and a ROW() composite of schema autocdc, both f->run_as's. */
void
acdc_flow_require_aux_owned(FlowDef *f)
{
	Oid			typrel = get_typ_typrelid(f->seq_type);

	require_aux_owned_by(f, f->state);
	if (OidIsValid(typrel) &&
		get_rel_namespace(typrel) == get_namespace_oid("autocdc", false))
		require_aux_owned_by(f, typrel);
}

/*
 * A flow runs as its target's owner (README, Security): the target's
 * triggers and the state's run with that role's rights and no other.  The
 * flow's creator chose its expressions and source, so it must still hold
 * that role's privileges; a creator who lost them, or was dropped, no
 * longer makes anything run.
 */
static void
resolve_run_role(FlowDef *f)
{
	f->run_as = autocdc_relation_owner(f->target);
	if (!SearchSysCacheExists1(AUTHOID, ObjectIdGetDatum(f->owner)))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_ROLE_SPECIFICATION),
				 errmsg("the role that created flow \"%s\" no longer exists", f->name),
				 errhint("Drop the flow and create it again: SELECT autocdc.drop_flow(%s);",
						 quote_literal_cstr(f->name))));
	acdc_flow_require_aux_owned(f);
	if (!has_privs_of_role(f->owner, f->run_as))
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("role \"%s\", which created flow \"%s\", no longer has the privileges of role \"%s\", the owner of its target",
						GetUserNameFromId(f->owner, false), f->name,
						GetUserNameFromId(f->run_as, false)),
				 errdetail("A flow runs as its target's owner, on behalf of the role that created it."),
				 errhint("Grant the role membership in the target's owner again, or drop the flow.")));
}

/*
 * The plan of a run over a source query rests on the statistics of its
 * table: when many rows came since they were gathered, the planner
 * believes a big batch is a handful of rows and may pick joins that grow
 * with its square.  So such a run analyzes the table first when it grew by
 * a tenth and 1 MB since its statistics were gathered (the size is known
 * at once, unlike activity counters), if the run's role owns it.  A flow
 * that reads its table alone joins nothing to it (the fold is in C), so
 * its plan is a scan, by the stamp index for new rows; there an ANALYZE
 * was a third of each run of ten batches into a table without statistics.
 */
static void
refresh_source_statistics(FlowDef *f)
{
	Oid			argtypes[1] = {OIDOID};
	Datum		values[1] = {ObjectIdGetDatum(f->source)};

	if (!f->incremental || !OidIsValid(f->source) || f->source_query == NULL ||
#if PG_VERSION_NUM >= 160000
		!object_ownercheck(RelationRelationId, f->source, f->run_as)
#else
		!pg_class_ownercheck(f->source, f->run_as)
#endif
		)
		return;
	acdc_spi_exec("SELECT (pg_catalog.pg_relation_size($1) OPERATOR(pg_catalog./) "
			 "        pg_catalog.current_setting('block_size')::pg_catalog.int8) OPERATOR(pg_catalog.>) "
			 "       ((c.relpages OPERATOR(pg_catalog.*) 1.1) OPERATOR(pg_catalog.+) 128) "
			 "  FROM pg_catalog.pg_class c WHERE c.oid OPERATOR(pg_catalog.=) $1",
			 1, argtypes, values, NULL, false);
	if (SPI_processed == 1 && acdc_spi_bool(0, 1))
		acdc_spi_exec(psprintf("ANALYZE %s", acdc_rel_qualified_name(f->source)),
				 0, NULL, NULL, NULL, false);
}

static void
flow_error_context(void *arg)
{
	FlowDef    *f = arg;

	if (f->sequence_by)
		errcontext("while running flow \"%s\" (sequence_by %s%s%s)", f->name,
				   f->sequence_by, f->deletes ? ", apply_as_deletes " : "",
				   f->deletes ? f->deletes : "");
	else
		errcontext("while running flow \"%s\"", f->name);
}

/* Runs one flow; errors propagate to the caller's subtransaction. */
static void
run_flow(FlowResult *r, bool refresh)
{
	ErrorContextCallback errcb;

	errcb.callback = flow_error_context;
	errcb.arg = r->flow;
	errcb.previous = error_context_stack;
	error_context_stack = &errcb;
	run_flow_inner(r, refresh);
	error_context_stack = errcb.previous;
}

static void
run_flow_inner(FlowResult *r, bool refresh)
{
	FlowDef    *f = r->flow;
	ReadParams	p;
	UserSwitch	sw;
	char	   *new_t;
	char	   *own_after;
	char	   *truncate_before;
	bool		held;
	char	   *version = NULL;
	CommandId	cid;

	acdc_catalog_lock_checkpoint(f);
	if (f->once && f->once_done && !refresh)
	{
		if (f->incremental)
			acdc_stamp_check_trigger(f, false);	/* as a restore left it */
		r->status = "skipped";
		return;
	}
	resolve_run_role(f);
	{
		/* the kept text parses as at creation (standard_conforming_strings) */
		int			nest = NewGUCNestLevel();

		autocdc_apply_settings(f->settings);
		r->verifying = true;
		acdc_verify_flow_expressions(f);
		acdc_expect_verify(f);
		r->verifying = false;
		AtEOXact_GUC(true, nest);
	}

	memset(&p, 0, sizeof(p));
	p.whole = refresh || f->once || f->ckpt_snapshot == NULL;
	if (!p.whole)
	{
		p.prev_snapshot = f->ckpt_snapshot;
		p.prev_own_xid = f->ckpt_own_xid;
		p.prev_own_cid = f->ckpt_own_cid;
		if (f->incremental)
			refuse_foreign_checkpoint(f);
	}

	if (f->kind != FLOW_APPEND && get_rel_name(f->state) == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("the auxiliary state of target \"%s\" was dropped", get_rel_name(f->target)),
				 errdetail("It is where autocdc remembers what the flows into the target applied."),
				 errhint("Drop the target's flows with autocdc.drop_flow and create them again; their first run rebuilds the target.")));
	acdc_flow_become(&sw, f);
	acdc_spi_exec(psprintf("LOCK TABLE %s IN SHARE ROW EXCLUSIVE MODE",
					  acdc_rel_qualified_name(f->target)), 0, NULL, NULL, NULL, false);
	autocdc_unbecome(&sw);
	acdc_catalog_load_target_state(f);
	if (!refresh && f->kind != FLOW_APPEND)
	{
		acdc_flow_become(&sw, f);
		check_target_not_emptied(f);
		autocdc_unbecome(&sw);
	}
	p.truncate_seq = truncate_before = f->truncate_seq;
	if (f->incremental)
	{
		acdc_read_require_xid_column(f);
		acdc_stamp_check_trigger(f, true);
		acdc_stamp_unstamped_rows(f, p.whole);
		acdc_stamp_note_run_reads();
	}

	acdc_flow_become(&sw, f);
	refresh_source_statistics(f);
	p.snapshot = query_text("SELECT pg_catalog.pg_current_snapshot()::pg_catalog.text");
	p.own_xid = query_text("SELECT pg_catalog.pg_current_xact_id_if_assigned()::pg_catalog.text");

	/*
	 * Rows this transaction inserted so far have cmin < cid; the checkpoint
	 * keeps cid so that rows it inserts later are read by a later run.
	 */
	CommandCounterIncrement();
	cid = GetCurrentCommandId(false);

	acdc_check_run_collations(f);
	new_t = NULL;
	switch (f->kind)
	{
		case FLOW_APPEND:
			acdc_append_apply(f, &p, &r->counts);
			break;
		case FLOW_SNAPSHOT:
			version = acdc_snapshot_apply(f, refresh, &r->counts);
			new_t = f->truncate_seq;
			break;
		case FLOW_AUTO_CDC:
			if (ACDC_KEEPS_EVENTS(f->scd_type))
				acdc_scd2_apply(f, &p, &r->counts);
			else
				new_t = acdc_scd1_apply(f, &p, &r->counts);
			break;
	}
	held = f->held_rows;
	/* SCD 2 history keeps its rows: only the first versions change it */
	if ((f->seq_in_target && !ACDC_KEEPS_EVENTS(f->scd_type) &&
		 (held ? r->counts.deleted > 0 : r->counts.upserted > 0)) ||
		(f->scd_type == 2 && !held && r->counts.upserted > 0))
	{
		acdc_spi_exec(psprintf("SELECT EXISTS (SELECT 1 FROM %s)", acdc_rel_qualified_name(f->target)),
				 0, NULL, NULL, NULL, false);
		held = acdc_spi_bool(0, 1);
	}
	own_after = query_text("SELECT pg_catalog.pg_current_xact_id_if_assigned()::pg_catalog.text");
	autocdc_unbecome(&sw);

	/* the rows set aside, and the expectations' counts (expect.c) */
	acdc_quarantine_flush(f, &r->counts);
	r->counts.dropped = f->rows_dropped;
	acdc_expect_record_run(f);

	acdc_progress_phase(ACDC_PHASE_CHECKPOINT);
	if (new_t && (truncate_before == NULL || strcmp(new_t, truncate_before) != 0))
		acdc_catalog_set_truncate_seq(f->target, new_t);
	if (held != f->held_rows)
		acdc_catalog_set_held_rows(f->target, held);
	if (f->purged)
		acdc_catalog_set_tombstones_purged(f->target);
	acdc_catalog_save_checkpoint(f, p.snapshot, own_after, (int64) cid, version);
	r->status = "success";
}

/* Empties a target and its state and forgets what its flows had read. */
static void
reset_target(FlowDef *f)
{
	UserSwitch	sw;

	resolve_run_role(f);
	acdc_flow_become(&sw, f);
	acdc_spi_exec(psprintf("LOCK TABLE %s IN SHARE ROW EXCLUSIVE MODE; DELETE FROM %s",
					  acdc_rel_qualified_name(f->target), acdc_rel_qualified_name(f->target)),
			 0, NULL, NULL, NULL, false);
	if (OidIsValid(f->state))	/* append targets have none */
		acdc_spi_exec(psprintf("DELETE FROM %s", acdc_rel_qualified_name(f->state)),
				 0, NULL, NULL, NULL, false);
	autocdc_unbecome(&sw);
	acdc_catalog_reset_target(f->target);
}

/*
 * A cancel, a timeout or a shutdown of the calling session stops the whole
 * run; anything a flow raised itself, whatever its SQLSTATE (a RAISE can
 * claim 57014), fails that flow only.  They differ by where they were
 * raised: interrupts are turned into errors in ProcessInterrupts alone.
 */
static bool
raised_by_interrupt(ErrorData *edata)
{
	/* a lock timeout, the flow's own or the caller's, fails the flow that waited */
	return edata->funcname != NULL && strcmp(edata->funcname, "ProcessInterrupts") == 0 &&
		edata->sqlerrcode != ERRCODE_LOCK_NOT_AVAILABLE;
}

/*
 * How many units are running in this backend: code a flow sets off (a
 * trigger on its target, a function in its expressions) may not call
 * autocdc's functions, which would change the catalog and the relations
 * the run holds under it.  Restored on every exit, errors included.
 */
static int	units_running = 0;

void
autocdc_refuse_within_flow(const char *function)
{
	if (units_running > 0)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("%s cannot be called while a flow runs", function),
				 errdetail("It was called by code the flow set off, such as a trigger on its target or a function in its expressions.")));
}

/*
 * A run from a trigger could lose a row: a BEFORE ROW trigger on a source
 * runs after the row was stamped but before it is written, so the run's
 * checkpoint would pass it unread.  Refused in every trigger, for one
 * simple rule.
 */
static void
refuse_from_trigger(const char *function)
{
	LOCAL_FCINFO(depth_fcinfo, 0);

	InitFunctionCallInfoData(*depth_fcinfo, NULL, 0, InvalidOid, NULL, NULL);
	if (DatumGetInt32(pg_trigger_depth(depth_fcinfo)) > 0)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("%s cannot be called from a trigger", function),
				 errdetail("A row the triggering statement inserts into a source could be taken as read before it is written, and never be read."),
				 errhint("Run the pipeline after the statement, or schedule it with autocdc.schedule().")));
}

/* One flow, or every selected flow of one target under full refresh. */
typedef struct RunUnit
{
	List	   *results;		/* FlowResult */
	bool		refresh;
} RunUnit;

static void
run_unit_flows(void *arg)
{
	RunUnit    *u = arg;
	ListCell   *lc;

	if (u->refresh)
	{
		acdc_progress_flow_begin(((FlowResult *) linitial(u->results))->flow);
		acdc_progress_phase(ACDC_PHASE_EMPTYING);
		reset_target(((FlowResult *) linitial(u->results))->flow);
	}
	foreach(lc, u->results)
	{
		FlowResult *r = lfirst(lc);

		r->started = GetCurrentTimestamp();
		acdc_progress_flow_begin(r->flow);
		run_flow(r, u->refresh);
		acdc_progress_flow_end();
		r->finished = GetCurrentTimestamp();
	}
}

/*
 * Whether PostgreSQL's lookup of a name raised the error: these files of
 * the server are where a relation, function, operator, type or another
 * object named in SQL is looked up (errors keep the base name of theirs).
 */
static bool
raised_by_name_lookup(ErrorData *edata)
{
	static const char *const lookups[] = {"namespace.c", "parse_relation.c",
		"parse_func.c", "parse_oper.c", "parse_type.c", "regproc.c"};

	if (edata->filename == NULL)
		return false;
	for (int i = 0; i < lengthof(lookups); i++)
		if (strcmp(edata->filename, lookups[i]) == 0)
			return true;
	return false;
}

/*
 * Runs pin search_path (autocdc_become): a name left without its schema in
 * a function a flow calls (a snapshot source function, a function in its
 * expressions, a trigger), or looked up by an expression at run time
 * (nextval('seq'), 'name'::regclass), is not found.  PostgreSQL's errors
 * for a relation, a function or operator, or a type (or another object)
 * not found get a hint saying so, after their own hint if they have one
 * (an unknown function's always has); autocdc's own errors do not.
 */
static void
add_search_path_hint(ErrorData *edata)
{
	const char *hint = "Runs set search_path to " AUTOCDC_RUN_SEARCH_PATH
		"; qualify names in the flow's expressions and in the functions it calls"
		" with their schema, or give those functions a SET search_path clause.";

	if ((edata->sqlerrcode != ERRCODE_UNDEFINED_TABLE &&
		 edata->sqlerrcode != ERRCODE_UNDEFINED_FUNCTION &&
		 edata->sqlerrcode != ERRCODE_UNDEFINED_OBJECT) ||
		!raised_by_name_lookup(edata))
		return;
	edata->hint = edata->hint ? psprintf("%s %s", edata->hint, hint) : pstrdup(hint);
}

/*
 * Runs a unit in a subtransaction.  On error the unit's results say why;
 * every error but an interrupt (out of memory included) fails the unit
 * only, since the subtransaction gives back all it took.
 */
static void
run_unit(List *unit, bool refresh)
{
	RunUnit		u = {unit, refresh};
	ErrorData  *edata = NULL;
	FlowResult *culprit = NULL;
	ListCell   *lc;

	units_running++;
	PG_TRY();
	{
		edata = autocdc_try(run_unit_flows, &u);
	}
	PG_FINALLY();
	{
		units_running--;
	}
	PG_END_TRY();

	if (edata == NULL)
		return;
	if (raised_by_interrupt(edata))
		ReThrowError(edata);

	foreach(lc, unit)
	{
		FlowResult *r = lfirst(lc);

		if (culprit == NULL && r->status == NULL)
			culprit = r;
	}
	if (culprit == NULL)
		culprit = linitial(unit);
	/* the kept expressions name every object with its schema */
	if (!culprit->verifying)
		add_search_path_hint(edata);
	foreach(lc, unit)
	{
		FlowResult *r = lfirst(lc);

		memset(&r->counts, 0, sizeof(FlowCounts));
		r->status = "failed";
		if (r->started == 0)
			r->started = GetCurrentTimestamp();
		r->finished = GetCurrentTimestamp();
		r->error = r == culprit ? pstrdup(edata->message)
			: psprintf("not applied: flow \"%s\" into the same target failed",
					   culprit->flow->name);
	}
	culprit->sqlerrcode = edata->sqlerrcode;
	culprit->hint = edata->hint ? pstrdup(edata->hint) : NULL;
	ereport(WARNING,
			(errcode(edata->sqlerrcode),
			 errmsg_internal("%s", edata->message),
			 edata->detail ? errdetail_internal("%s", edata->detail) : 0,
			 edata->hint ? errhint("%s", edata->hint) : 0,
			 edata->context ? errcontext("%s", edata->context) : 0,
			 errcontext("autocdc flow \"%s\" of pipeline \"%s\" failed; its changes were rolled back",
						culprit->flow->name, culprit->flow->pipeline)));
	FreeErrorData(edata);
}

/*
 * The flows the caller may run: those of pipelines whose owner's privileges
 * it has, checking and locking each pipeline once (their names into
 * *pipelines).  The others are as if they did not exist.
 */
static List *
runnable_flows(List *flows, List **pipelines)
{
	List	   *result = NIL;
	List	   *allowed = NIL,
			   *denied = NIL;
	ListCell   *lc;

	foreach(lc, flows)
	{
		FlowDef    *f = lfirst(lc);

		if (!acdc_list_has_string(allowed, f->pipeline) && !acdc_list_has_string(denied, f->pipeline))
		{
			int64		id;

			if (pipeline_is_callers(f->pipeline, &id))
			{
				lock_pipeline(f->pipeline, id);
				allowed = lappend(allowed, f->pipeline);
			}
			else
				denied = lappend(denied, f->pipeline);
		}
		if (acdc_list_has_string(allowed, f->pipeline))
			result = lappend(result, f);
	}
	*pipelines = allowed;
	return result;
}

static void run_flows(List *results, bool refresh, int64 run_id, List *pipelines,
					  TimestampTz started);

/*
 * A manual run's outcome per pipeline it ran, in autocdc.run_history and
 * the pipeline's row, as a scheduled run's (catalog_run.c).
 */
static void
record_manual_run(int64 run_id, List *pipelines, List *results, TimestampTz started)
{
	ListCell   *lc;

	foreach(lc, pipelines)
	{
		const char *pipeline = lfirst(lc);
		StringInfoData failed;
		int64		read = 0;
		ListCell   *lr;

		initStringInfo(&failed);
		foreach(lr, results)
		{
			FlowResult *r = lfirst(lr);

			if (strcmp(r->flow->pipeline, pipeline) != 0)
				continue;
			read += r->counts.read;
			if (strcmp(r->status, "failed") == 0)
				appendStringInfo(&failed, "%s%s", failed.len > 0 ? ", " : "", r->flow->name);
		}
		acdc_run_history_manual(run_id, pipeline, started,
						   failed.len > 0 ? "failed" : "success",
						   failed.len > 0 ? psprintf("flows failed: %s (see autocdc.event_log)", failed.data) : NULL,
						   read);
	}
}

/*
 * The engine of run() and refresh(): runs the flows asked for, logs and
 * records them, and returns their FlowResults, in the order run.  Needs
 * an SPI connection.
 */
static List *
run_requested(const char *pipeline, bool refresh, List *names)
{
	List	   *flows,
			   *results = NIL,
			   *pipelines;
	ListCell   *lc;
	int64		run_id;
	TimestampTz started = GetCurrentTimestamp();

	if (pipeline && !pipeline_is_callers(pipeline, NULL))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("pipeline \"%s\" does not exist", pipeline),
				 errhint("A pipeline is created by its first flow; autocdc.pipelines lists yours.")));
	flows = runnable_flows(acdc_catalog_load_flows(pipeline, names), &pipelines);
	foreach(lc, names)
	{
		ListCell   *lc2;
		bool		found = false;

		foreach(lc2, flows)
			if (strcmp(((FlowDef *) lfirst(lc2))->name, lfirst(lc)) == 0)
			found = true;
		if (!found)
			ereport(ERROR,
					(errcode(ERRCODE_UNDEFINED_OBJECT),
					 errmsg("flow \"%s\" does not exist%s", (char *) lfirst(lc),
							pipeline ? psprintf(" in pipeline \"%s\"", pipeline) : "")));
	}
	flows = order_flows(flows);

	/* a scheduled run's id is its run_history row's, made by its worker */
	run_id = autocdc_scheduled_run_id;
	if (run_id == 0)
		run_id = acdc_catalog_next_run_id();

	foreach(lc, flows)
	{
		FlowResult *r = palloc0(sizeof(FlowResult));

		r->flow = lfirst(lc);
		results = lappend(results, r);
	}

	if (autocdc_scheduled_run_id != 0)
		run_flows(results, refresh, run_id, pipelines, started);
	else
	{
		MemoryContext cxt = CurrentMemoryContext;

		/* a cancel rolls the bookkeeping back: shared memory keeps it (manual_runs.c) */
		acdc_manual_run_begin(run_id, acdc_catalog_pipeline_ids(pipelines));
		PG_TRY();
		{
			run_flows(results, refresh, run_id, pipelines, started);
		}
		PG_CATCH();
		{
			if (geterrcode() == ERRCODE_QUERY_CANCELED)
			{
				MemoryContext ecxt = MemoryContextSwitchTo(cxt);
				ErrorData  *e = CopyErrorData();

				MemoryContextSwitchTo(ecxt);
				acdc_manual_run_interrupted(e->message);
			}
			else
				acdc_manual_run_end();
			PG_RE_THROW();
		}
		PG_END_TRY();
		acdc_manual_run_end();
	}
	return results;
}

static Interval *
result_duration(FlowResult *r)
{
	Interval   *dur = palloc0(sizeof(Interval));

	dur->time = r->finished - r->started;
	return dur;
}

/* Runs the flows, logs and records the run. */
static void
run_flows(List *results, bool refresh, int64 run_id, List *pipelines,
		  TimestampTz started)
{
	List	   *done_targets = NIL;
	ListCell   *lc;

	foreach(lc, results)
	{
		FlowResult *r = lfirst(lc);
		List	   *unit = list_make1(r);

		r->flow->run_id = run_id;

		if (refresh)
		{
			ListCell   *lc2;

			if (list_member_oid(done_targets, r->flow->target))
				continue;
			done_targets = lappend_oid(done_targets, r->flow->target);
			for_each_cell(lc2, results, lnext(results, lc))
				if (((FlowResult *) lfirst(lc2))->flow->target == r->flow->target)
				unit = lappend(unit, lfirst(lc2));
		}
		run_unit(unit, refresh);
	}

	foreach(lc, results)
	{
		FlowResult *r = lfirst(lc);

		acdc_catalog_log_event(run_id, r->flow, refresh, &r->counts, r->status,
						  r->error, (double) result_duration(r)->time / USECS_PER_SEC);
	}
	if (autocdc_scheduled_run_id == 0)
		record_manual_run(run_id, pipelines, results, started);
	acdc_catalog_prune_event_log();
}

/* run()'s rows: one per flow, in the order they ran (sql/autocdc--*.sql). */
static void
put_result_rows(List *results, ReturnSetInfo *rsinfo)
{
	ListCell   *lc;

	foreach(lc, results)
	{
		FlowResult *r = lfirst(lc);
		Datum		values[11];
		bool		nulls[11] = {0};

		values[0] = CStringGetTextDatum(r->flow->name);
		values[1] = ObjectIdGetDatum(r->flow->target);
		values[2] = CStringGetTextDatum(acdc_catalog_flow_kind_name(r->flow->kind));
		values[3] = Int64GetDatum(r->counts.read);
		values[4] = Int64GetDatum(r->counts.upserted);
		values[5] = Int64GetDatum(r->counts.deleted);
		values[6] = Int64GetDatum(r->counts.skipped);
		values[7] = Int64GetDatum(r->counts.dropped);
		values[8] = CStringGetTextDatum(r->status);
		if (r->error)
			values[9] = CStringGetTextDatum(r->error);
		else
			nulls[9] = true;
		values[10] = IntervalPGetDatum(result_duration(r));
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
}

Datum
autocdc_run(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	char	   *pipeline = PG_ARGISNULL(0) ? NULL : text_to_cstring(PG_GETARG_TEXT_PP(0));
	bool		refresh = !PG_ARGISNULL(1) && PG_GETARG_BOOL(1);
	List	   *names = PG_ARGISNULL(2) ? NIL : acdc_text_array_to_list(PG_GETARG_DATUM(2));

	autocdc_refuse_within_flow("autocdc.run()");
	refuse_from_trigger("autocdc.run()");
	InitMaterializedSRF(fcinfo, 0);
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	put_result_rows(run_requested(pipeline, refresh, names), rsinfo);
	SPI_finish();
	return (Datum) 0;
}

/*
 * refresh() commits, so it must be called where a COMMIT could be: by
 * CALL outside a transaction block, or from a procedure so called.  In a
 * transaction block it could only run as run() does and then raise,
 * which would roll back the flows that succeeded with the block: refused,
 * as VACUUM is.
 */
static void
refuse_atomic_call(FunctionCallInfo fcinfo)
{
	if (fcinfo->context != NULL && IsA(fcinfo->context, CallContext) &&
		!castNode(CallContext, fcinfo->context)->atomic)
		return;
	ereport(ERROR,
			(errcode(ERRCODE_ACTIVE_SQL_TRANSACTION),
			 IsTransactionBlock() ?
			 errmsg("autocdc.refresh() cannot run inside a transaction block") :
			 errmsg("autocdc.refresh() cannot be executed from a function"),
			 errdetail("It commits the changes of the flows that succeeded before it raises an error for those that failed."),
			 errhint("CALL it on its own, outside BEGIN and COMMIT, or use SELECT * FROM autocdc.run(...), which runs in your transaction.")));
}

/* A SQLSTATE that says failure: a flow may raise any, a warning's even. */
static int
failure_errcode(int sqlerrcode)
{
	char	   *state = unpack_sql_state(sqlerrcode);

	if (strncmp(state, "00", 2) == 0 || strncmp(state, "01", 2) == 0 ||
		strncmp(state, "02", 2) == 0)
		return ERRCODE_TRIGGERED_ACTION_EXCEPTION;
	return sqlerrcode;
}

/*
 * refresh()'s error for the flows that failed, after its commit: the
 * failed flow's SQLSTATE when one failed (flows rolled back with it
 * included), each flow's error in the detail, the failed flows' hints.
 */
static void
raise_for_failed_flows(List *results)
{
	StringInfoData names,
				detail,
				hint;
	ListCell   *lc;
	int			nfailed = 0,
				nculprits = 0,
				sqlerrcode = ERRCODE_TRIGGERED_ACTION_EXCEPTION;
	FlowResult *first = NULL;

	initStringInfo(&names);
	initStringInfo(&detail);
	initStringInfo(&hint);
	foreach(lc, results)
	{
		FlowResult *r = lfirst(lc);

		if (strcmp(r->status, "failed") != 0)
			continue;
		if (nfailed++ == 0)
			first = r;
		appendStringInfo(&names, "%s\"%s\"", names.len > 0 ? ", " : "", r->flow->name);
		appendStringInfo(&detail, "%sflow \"%s\": %s", detail.len > 0 ? "\n" : "",
						 r->flow->name, r->error);
		if (r->sqlerrcode != 0 && nculprits++ == 0)
			sqlerrcode = failure_errcode(r->sqlerrcode);
		if (r->hint && strstr(hint.data, r->hint) == NULL)
			appendStringInfo(&hint, "%s ", r->hint);
	}
	if (nfailed == 0)
		return;
	if (nculprits > 1)
		sqlerrcode = ERRCODE_TRIGGERED_ACTION_EXCEPTION;
	appendStringInfoString(&hint, "The flows that succeeded were committed; autocdc.event_log has each flow's outcome.");
	ereport(ERROR,
			(errcode(sqlerrcode),
			 nfailed == 1 ?
			 errmsg("flow %s of pipeline \"%s\" failed", names.data, first->flow->pipeline) :
			 errmsg("flows %s failed", names.data),
			 errdetail_internal("%s", detail.data),
			 errhint("%s", hint.data)));
}

/*
 * CALL autocdc.refresh(): run() for cron and CI.  Runs the flows as run()
 * does, commits what succeeded with its log and run history, then raises
 * an error if a flow failed, so that psql exits non-zero.
 */
Datum
autocdc_refresh(PG_FUNCTION_ARGS)
{
	char	   *pipeline = PG_ARGISNULL(0) ? NULL : text_to_cstring(PG_GETARG_TEXT_PP(0));
	bool		refresh = !PG_ARGISNULL(1) && PG_GETARG_BOOL(1);
	List	   *names = PG_ARGISNULL(2) ? NIL : acdc_text_array_to_list(PG_GETARG_DATUM(2));
	List	   *results;

	autocdc_refuse_within_flow("autocdc.refresh()");
	refuse_from_trigger("autocdc.refresh()");
	refuse_atomic_call(fcinfo);
	/* nonatomic: its memory, results included, outlives SPI_commit */
	if (SPI_connect_ext(SPI_OPT_NONATOMIC) != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	results = run_requested(pipeline, refresh, names);
	SPI_commit();
	raise_for_failed_flows(results);
	SPI_finish();
	PG_RETURN_VOID();
}
