/*-------------------------------------------------------------------------
 * define_register.c
 *	  A flow into the catalog: its pipeline, its target's registration
 *	  (what every flow into the target agrees on), the flow row; and the
 *	  cleanup when flows, targets or sources go away.
 *-------------------------------------------------------------------------
 */
#include "catalog.h"
#include "define.h"
#include "validate.h"
#include "collation.h"
#include "expr_pin.h"

#include "access/htup_details.h"
#include "access/relation.h"
#include "catalog/dependency.h"
#include "catalog/namespace.h"
#include "catalog/objectaddress.h"
#include "catalog/pg_attribute.h"
#include "catalog/pg_class.h"
#include "catalog/pg_collation.h"
#include "catalog/pg_index.h"
#include "catalog/pg_type.h"
#include "commands/event_trigger.h"
#include "commands/extension.h"
#include "commands/trigger.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "nodes/nodeFuncs.h"
#include "parser/analyze.h"
#include "parser/parse_coerce.h"
#include "parser/parser.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/regproc.h"
#include "utils/rel.h"
#include "utils/ruleutils.h"
#include "utils/syscache.h"
#include "utils/typcache.h"

PG_FUNCTION_INFO_V1(autocdc_on_sql_drop);

/* The flow as the key-matching SQL builders need it: target and keys. */
static FlowDef *
spec_keys_flow(FlowSpec *spec)
{
	FlowDef    *f = palloc0(sizeof(FlowDef));

	f->target = spec->target;
	f->keys = spec->keys;
	return f;
}

/*
 * A new partial-update column of a target whose rows hold their upsert's
 * sequence: each live key's state row, made where there is none, gets it.
 */
static void
start_tracking_from_target(FlowSpec *spec, const char *qstate, const char *col)
{
	char	   *qtarget = acdc_rel_qualified_name(spec->target);
	const char *qcol = quote_identifier(col);
	StringInfoData sql;

	initStringInfo(&sql);
	appendStringInfo(&sql, "UPDATE %s st SET %s = t.%s FROM %s t WHERE st.__autocdc_deleted_at IS NULL AND ",
					 qstate, qcol, ACDC_SEQUENCE_COLUMN, qtarget);
	acdc_append_keys_match(&sql, spec_keys_flow(spec), "st", "t");
	appendStringInfo(&sql, "; INSERT INTO %s (", qstate);
	acdc_append_column_list(&sql, spec->keys, NULL);
	appendStringInfo(&sql, ", %s) SELECT ", qcol);
	acdc_append_column_list(&sql, spec->keys, "t");
	appendStringInfo(&sql, ", t.%s FROM %s t WHERE t.%s IS NOT NULL AND NOT EXISTS (SELECT 1 FROM %s st WHERE ",
					 ACDC_SEQUENCE_COLUMN, qtarget, ACDC_SEQUENCE_COLUMN, qstate);
	acdc_append_keys_match(&sql, spec_keys_flow(spec), "st", "t");
	appendStringInfoChar(&sql, ')');
	acdc_spi_exec(sql.data, 0, NULL, NULL, NULL, false);
}

/*
 * Adds to the state the partial-update columns this flow brings.  Live
 * keys' values came from their last upsert until now, hence the initial
 * setting sequence.
 */
static void
add_state_partial_columns(FlowSpec *spec, Oid state, List *tracked, List *wanted,
						  bool seq_in_target)
{
	ListCell   *lc;
	List	   *added = NIL;
	char	   *qstate = acdc_rel_qualified_name(state);
	char	   *seqtype = acdc_define_seq_column_type(spec);
	UserSwitch	sw;

	/* the state holds rows now: what ALTER and UPDATE set off runs as its owner */
	autocdc_become_owner_of(&sw, state);
	foreach(lc, wanted)
	{
		char	   *col = lfirst(lc);

		if (acdc_list_has_string(tracked, col))
			continue;
		added = lappend(added, col);
		if (ACDC_KEEPS_EVENTS(spec->scd_type))
			continue;			/* the event store records inheritance per event */
		acdc_spi_exec(psprintf("ALTER TABLE %s ADD COLUMN %s %s", qstate,
						  quote_identifier(col), seqtype),
				 0, NULL, NULL, NULL, false);
		if (seq_in_target)
			start_tracking_from_target(spec, qstate, col);
		else
			acdc_spi_exec(psprintf("UPDATE %s SET %s = __autocdc_upsert_seq WHERE __autocdc_deleted_at IS NULL",
							  qstate, quote_identifier(col)),
					 0, NULL, NULL, NULL, false);
	}
	autocdc_unbecome(&sw);

	if (added != NIL)
		acdc_catalog_target_set_partial_columns(spec->target,
										   list_concat_copy(tracked, added));
}

static bool
same_string_sets(List *a, List *b)
{
	ListCell   *lc;

	if (list_length(a) != list_length(b))
		return false;
	foreach(lc, a)
		if (!acdc_list_has_string(b, lfirst(lc)))
		return false;
	return true;
}

/* Field types of a composite type, as a list. */
List *
acdc_define_composite_field_types(Oid typid)
{
	TupleDesc	desc = lookup_rowtype_tupdesc(typid, -1);
	List	   *result = NIL;

	for (int i = 0; i < desc->natts; i++)
		if (!TupleDescAttr(desc, i)->attisdropped)
			result = lappend_oid(result, TupleDescAttr(desc, i)->atttypid);
	ReleaseTupleDesc(desc);
	return result;
}

/*
 * The columns this flow sets in only some of its upserts: with
 * columns_to_update every one (an event sets those it lists), else its
 * ignore-null columns.
 */
static List *
partial_columns(FlowSpec *spec)
{
	return spec->columns_to_update != NULL ? spec->columns : spec->ignore_null;
}

/*
 * The columns whose setting sequence the state must keep once this flow
 * joins the target: its partial-update columns, and every column that some
 * flow into the target does not write (for that flow, an upsert leaves the
 * column as it was, so a later delete must know when it was set).
 */
static List *
columns_needing_tracking(FlowSpec *spec)
{
	List	   *all = list_copy(spec->columns);
	List	   *per_flow = list_make1(spec->columns);
	List	   *result = list_copy(partial_columns(spec));
	ListCell   *lc,
			   *lf;

	foreach(lf, acdc_catalog_flow_columns_of_target(spec->target))
	{
		List	   *cols = lfirst(lf);

		per_flow = lappend(per_flow, cols);
		foreach(lc, cols)
			if (!acdc_list_has_string(all, lfirst(lc)))
			all = lappend(all, lfirst(lc));
	}
	foreach(lc, all)
	{
		foreach(lf, per_flow)
		{
			if (!acdc_list_has_string(lfirst(lf), lfirst(lc)) &&
				!acdc_list_has_string(result, lfirst(lc)))
				result = lappend(result, lfirst(lc));
		}
	}
	return result;
}

/*
 * The target's tombstone retention: the first flow that gives one sets it;
 * a later flow may leave it out or give the same, never another.
 */
static void
register_retention(FlowSpec *spec)
{
	char	   *kept,
			   *given;

	if (!spec->retention_given)
		return;
	if (acdc_catalog_target_set_retention(spec->target, spec->tombstone_retention))
		return;
	if (acdc_catalog_target_other_retention(spec->target, spec->tombstone_retention,
									   &kept, &given))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("flow \"%s\" gives tombstone_retention %s, but target \"%s\" keeps tombstones for %s",
						spec->name, given, get_rel_name(spec->target), kept),
				 errdetail("The retention is the target's, shared by every flow into it."),
				 errhint("Leave tombstone_retention out to use the target's.")));
}

/*
 * A target whose state (or ROW() composite) still belongs to a former
 * owner of the target: code that role attached to it would run with the
 * new owner's rights, so no flow is added until the flows are made again.
 */
static void
refuse_aux_of_former_owner(FlowSpec *spec, Oid state, Oid composite)
{
	Oid			owner = autocdc_relation_owner(spec->target);
	Oid			aux[2] = {state, OidIsValid(composite) ? get_typ_typrelid(composite) : InvalidOid};

	for (int i = 0; i < 2; i++)
		if (OidIsValid(aux[i]) && get_rel_name(aux[i]) != NULL &&
			autocdc_relation_owner(aux[i]) != owner)
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					 errmsg("the auxiliary state of target \"%s\" belongs to role \"%s\", not to the target's owner \"%s\"",
							get_rel_name(spec->target),
							GetUserNameFromId(autocdc_relation_owner(aux[i]), false),
							GetUserNameFromId(owner, false)),
					 errdetail("The target changed owner after its flows were created; what the former owner attached to the state would run with the new owner's rights."),
					 errhint("Drop the target's flows (autocdc.drop_flow) and create them again.")));
}

/*
 * Flows into one SCD 2 target keep one history, so they track one set of
 * columns: each flow the columns it lists, or, giving no list, every value
 * column of the target (its event store's and this flow's), which a list
 * of all of them equals, in any order.  The target's track_columns stays
 * NULL (all) while no flow gives a list, so that a flow bringing a new
 * value column tracks it too; once one does, it is that list.  A target
 * whose flows track all of its value columns in both ways cannot gain one.
 */
static void
agree_on_tracking(FlowSpec *spec, Oid state, List *stored)
{
	List	   *all = acdc_event_store_value_columns(state, spec->keys);
	bool		adds = false;
	bool		tracking_all;
	int			listing = acdc_catalog_flows_listing_tracked(spec->target, &tracking_all);
	List	   *mine;
	List	   *result;
	ListCell   *lc;

	foreach(lc, spec->columns)
		if (!acdc_list_has_string(all, lfirst(lc)))
		{
			all = lappend(all, lfirst(lc));
			adds = true;
		}
	mine = spec->track_columns != NIL ? spec->track_columns : all;
	if ((listing > 0 && !same_string_sets(mine, stored)) ||
		(tracking_all && !same_string_sets(mine, all)))
	{
		bool		grows = adds && listing > 0 && tracking_all;

		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("flow \"%s\" must track the history of the columns the other flows into \"%s\" track",
						spec->name, get_rel_name(spec->target)),
				 grows ? errdetail("Flows into one SCD type 2 target keep one history. A flow into it that gives no track-history list tracks every value column of the target, and this flow would add columns that the flows giving a list do not track.")
				 : errdetail("Flows into one SCD type 2 target keep one history."),
				 grows ? errhint("Give every flow into the target the same track-history list, or give none a list.") : 0));
	}
	result = listing == 0 && spec->track_columns == NIL ? NIL : mine;
	if ((result == NIL) != (stored == NIL) || !same_string_sets(result, stored))
		acdc_catalog_target_set_track_columns(spec->target, result);
}

/*
 * Registers the target and its state, or, when other flows already feed
 * it, checks that this one agrees with them (doc/design.md §2.9: several AUTO
 * CDC flows into one target).
 */
static void
register_target(FlowSpec *spec, Oid owner)
{
	TargetRegistration reg;

	if (acdc_catalog_target_registration(spec->target, &reg))
	{
		Oid			seqtype = reg.seq_type;
		Oid			composite = reg.composite;
		Oid			state = reg.state;
		List	   *tracked = reg.partial_columns;
		char	   *tname = get_rel_name(spec->target);

		refuse_aux_of_former_owner(spec, state, composite);
		if (spec->seq_type == RECORDOID && OidIsValid(composite) &&
			equal(spec->seq_row_types, acdc_define_composite_field_types(composite)))
		{
			spec->seq_norm = psprintf("(%s)::%s", spec->seq_norm,
									  acdc_type_qualified_name(composite));
			spec->seq_type = composite;
		}
		if (spec->seq_type != seqtype)
			ereport(ERROR,
					(errcode(ERRCODE_DATATYPE_MISMATCH),
					 errmsg("sequence_by of flow \"%s\" is of type %s, but the other flows into \"%s\" sequence by %s",
							spec->name,
							spec->seq_type == RECORDOID ? "record" : format_type_be(spec->seq_type),
							tname, format_type_be(seqtype)),
					 errdetail("Flows into one target share one ordering.")));
		acdc_define_check_seq_collation(spec, state, composite);
		if (spec->scd_type == ACDC_BITEMPORAL)
		{
			acdc_bt_wrap_sequence(spec);
			acdc_scd2_extend_event_store(spec, state);
		}
		if (spec->scd_type == 2)
		{
			agree_on_tracking(spec, state, reg.track_columns);
			acdc_scd2_extend_event_store(spec, state);
		}
		if (reg.seq_in_target)
			acdc_define_sequence_column(spec, false);
		add_state_partial_columns(spec, state, tracked,
								  columns_needing_tracking(spec), reg.seq_in_target);
		register_retention(spec);
		return;
	}

	/* First flow into this target. */
	{
		Oid			composite = InvalidOid;
		Oid			state;

		if (spec->seq_type == RECORDOID)
		{
			composite = acdc_define_create_sequence_composite(spec, owner);
			spec->seq_norm = psprintf("(%s)::%s", spec->seq_norm,
									  acdc_type_qualified_name(composite));
			spec->seq_type = composite;
		}
		if (spec->scd_type == ACDC_BITEMPORAL)
		{
			if (spec->target_created)
				acdc_bt_add_history_columns(spec);
			state = acdc_scd2_create_event_store(spec, owner);
			acdc_bt_create_functions(spec, owner);
			acdc_bt_wrap_sequence(spec);
		}
		else if (spec->scd_type == 2)
		{
			if (spec->target_created)
				acdc_scd2_add_history_columns(spec);
			else
				acdc_scd2_check_history_collations(spec, spec->target);
			state = acdc_scd2_create_event_store(spec, owner);
			acdc_scd2_create_as_of(spec, owner);
		}
		else
		{
			acdc_define_sequence_column(spec, true);
			state = acdc_define_create_state_table(spec, owner);
		}
		acdc_catalog_insert_target(spec->target, spec->scd_type, spec->keys,
							  spec->seq_type, state, composite,
							  spec->track_columns);
		add_state_partial_columns(spec, state, NIL, partial_columns(spec),
								  spec->scd_type == 1);
		register_retention(spec);
	}
}

/*
 * The pipeline, created on first use.  Who runs a pipeline runs its flows,
 * so a flow never lands in another role's pipeline by default: the default
 * pipeline is joined only by its owner, a named one only by roles with its
 * owner's privileges.  Errors say no more than that the name is taken.
 */
static void
ensure_pipeline(FlowSpec *spec)
{
	Oid			owner = acdc_catalog_pipeline_owner(spec->pipeline, NULL);

	if (!OidIsValid(owner))
	{
		acdc_catalog_insert_pipeline(spec->pipeline, GetUserId());
		return;
	}
	if (spec->pipeline_named ? !has_privs_of_role(GetUserId(), owner)
		: owner != GetUserId())
		ereport(ERROR,
				(errcode(ERRCODE_DUPLICATE_OBJECT),
				 errmsg("pipeline name \"%s\" is taken by another role", spec->pipeline),
				 spec->pipeline_named ? 0 :
				 errdetail("A flow created without pipeline => joins the pipeline \"default\" only when it is the caller's own."),
				 errhint("Name a pipeline of your own: pipeline => 'name'.")));
}

/* Flows into one target use its keys, in order. */
static void
check_same_keys(FlowSpec *spec, List *keys, Oid target)
{
	ListCell   *la,
			   *lb;
	bool		same = list_length(keys) == list_length(spec->keys);

	if (same)
		forboth(la, keys, lb, spec->keys)
			if (strcmp(lfirst(la), lfirst(lb)) != 0)
			same = false;
	if (!same)
	{
		StringInfoData k;

		initStringInfo(&k);
		acdc_append_column_list(&k, keys, NULL);
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("flow \"%s\" must use the keys of the other flows into \"%s\": (%s)",
						spec->name, get_rel_name(target), k.data),
				 errdetail("Flows into one target agree on keys (same number and order), SCD type and sequence type.")));
	}
}

/*
 * Snapshot and AUTO CDC flows share one target only as doc/design.md
 * §2.8 allows: SCD 1, one snapshot flow, no ignore-null options on the CDC
 * flows (keys and sequence type are checked with every flow, in
 * register_target).
 */
static void
check_snapshot_mix(FlowSpec *spec, Oid target)
{
	int64		snapshots,
				cdc;
	bool		cdc_partial,
				cdc_listed;
	bool		snapshot = spec->kind == FLOW_SNAPSHOT;
	char	   *tname = get_rel_name(target);

	acdc_catalog_flow_kinds_of_target(target, &snapshots, &cdc, &cdc_partial, &cdc_listed);

	if (snapshot && snapshots > 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("target \"%s\" already has a snapshot flow", tname),
				 errdetail("A target takes at most one AUTO CDC from snapshot flow.")));
	if ((snapshot && cdc > 0) || (!snapshot && snapshots > 0))
	{
		if (spec->scd_type != 1)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("snapshot and AUTO CDC flows can share only an SCD type 1 target"),
					 errdetail("Target \"%s\" is of SCD type 2.", tname)));
		if (snapshot ? cdc_partial : spec->ignore_null != NIL)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("AUTO CDC flows that share target \"%s\" with a snapshot flow cannot ignore NULL updates", tname),
					 errdetail("A snapshot states every column of every key; a NULL in it is a value."),
					 errhint("Create the AUTO CDC flow without the ignore_null_updates options.")));
		if (snapshot ? cdc_listed : spec->columns_to_update != NULL)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("AUTO CDC flows that share target \"%s\" with a snapshot flow cannot have columns_to_update", tname),
					 errdetail("A snapshot states every column of every key."),
					 errhint("Create the AUTO CDC flow without columns_to_update, or give it a target of its own.")));
	}
}

/* The flow's row and its checkpoint's. */
static void
insert_flow_row(FlowSpec *spec)
{
	char	   *fn = OidIsValid(spec->source_function) ?
		format_procedure_qualified(spec->source_function) : NULL;
	FlowQueries queries = {spec->source_query, spec->version_query,
	spec->kind == FLOW_SNAPSHOT ? spec->seq_type : InvalidOid};

	acdc_catalog_insert_flow(spec, fn,
						acdc_expression_objects(GetUserId(), &queries, spec->source,
												spec->seq_norm, spec->deletes_norm,
												spec->truncates_norm, fn));
	acdc_expect_define(spec);
	if (spec->columns_to_update != NULL)
		acdc_catalog_set_columns_to_update(spec->name, spec->columns_to_update);
	acdc_catalog_insert_checkpoint(spec->name, spec->source, spec->incremental);
}

/*
 * The sequence is written to the state, the history columns and the
 * truncate marks, and cast from text: its type must be one the runner
 * trusts (a ROW(...) sequence's fields each).
 */
static void
check_sequence_types(FlowSpec *spec)
{
	Oid			runner = autocdc_relation_owner(spec->target);
	ListCell   *lc;

	if (spec->seq_type != RECORDOID)
		acdc_define_require_trusted_type(spec->seq_type, runner,
									spec->kind == FLOW_SNAPSHOT ?
									"the snapshot version" : "sequence_by");
	foreach(lc, spec->seq_row_types)
		acdc_define_require_trusted_type(lfirst_oid(lc), runner, "a field of sequence_by");
}

void
acdc_define_create_flow(FlowSpec *spec)
{
	List	   *names;
	RangeVar   *rv;
	Oid			existing;
	Oid			taken_by;
	bool		append = spec->kind == FLOW_APPEND;
	bool		snapshot = spec->kind == FLOW_SNAPSHOT;

	autocdc_refuse_within_flow("creating a flow");
	acdc_catalog_check_version();
	acdc_define_refuse_start_now(spec);
	ensure_pipeline(spec);
	taken_by = acdc_catalog_flow_owner(spec->name);
	if (OidIsValid(taken_by))
	{
		if (has_privs_of_role(GetUserId(), taken_by))
			ereport(ERROR,
					(errcode(ERRCODE_DUPLICATE_OBJECT),
					 errmsg("flow \"%s\" already exists", spec->name),
					 errhint("Give the flow another name with name => '...', or drop it first with SELECT autocdc.drop_flow(%s);",
							 quote_literal_cstr(spec->name))));
		ereport(ERROR,
				(errcode(ERRCODE_DUPLICATE_OBJECT),
				 errmsg("flow name \"%s\" is taken by another role", spec->name),
				 errhint("Give the flow another name with name => '...'.")));
	}

	names = stringToQualifiedNameList(spec->target_name);
	rv = makeRangeVarFromNameList(names);
	existing = RangeVarGetRelid(rv, NoLock, true);
	if (OidIsValid(existing))
	{
		int			scd = 0;
		List	   *keys = NIL;
		FlowKind	kind;
		bool		registered;

		/* nothing about another role's target is told before this */
		acdc_define_refuse_temporary(existing, "target");
		acdc_define_require_owner(existing);
		registered = acdc_catalog_target_kind(existing, &kind, &scd, &keys);

		if (registered && (kind == FLOW_APPEND) != append)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg(append ? "an append flow cannot write to \"%s\", the target of AUTO CDC flows"
							: "an AUTO CDC flow cannot write to \"%s\", the target of append flows",
							get_rel_name(existing)),
					 errdetail("An AUTO CDC target holds what its flows fold; rows appended beside them would not be part of it.")));
		if (registered && !append && scd != spec->scd_type &&
			(spec->scd_type == ACDC_BITEMPORAL || scd == ACDC_BITEMPORAL))
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 snapshot ? errmsg("a snapshot flow cannot write to \"%s\", a bitemporal target",
									   get_rel_name(existing)) :
					 errmsg("flow \"%s\" must be %s like the other flows into \"%s\"",
							spec->name, acdc_scd_type_name(scd), get_rel_name(existing)),
					 snapshot ? errdetail("Snapshots cannot be folded into a bitemporal target.") :
					 errdetail("Flows into one target agree on keys, SCD type and sequence type."),
					 snapshot ? errhint("Feed the target with AUTO CDC flows only.") : 0));
		if (registered && !append && scd != spec->scd_type)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("flow \"%s\" must store SCD type %d like the other flows into \"%s\"",
							spec->name, scd, get_rel_name(existing)),
					 errdetail("Flows into one target agree on keys, SCD type and sequence type.")));
		if (registered && !append)
			check_same_keys(spec, keys, existing);
		acdc_define_check_existing_target(spec, existing);
		if (registered && !append)
			check_snapshot_mix(spec, existing);
		acdc_spi_exec(psprintf("LOCK TABLE %s IN SHARE ROW EXCLUSIVE MODE",
						  acdc_rel_qualified_name(existing)), 0, NULL, NULL, NULL, false);
		spec->target = existing;
	}
	/* (a function-fed snapshot flow's target exists: define_kinds.c checked) */
	if (!snapshot)
		acdc_define_prepare_source(spec);
	if (!OidIsValid(existing))
		spec->target = acdc_define_create_target(spec, rv);
	acdc_define_require_run_access(spec);
	if (!append)
		check_sequence_types(spec);

	if (append)
		acdc_catalog_insert_append_target(spec->target);
	else
		register_target(spec, autocdc_relation_owner(spec->target));
	insert_flow_row(spec);
	if (spec->start_now)
		acdc_define_start_now(spec);
}

/* Whether anything but its own array type uses a type (a column, say). */
static bool
type_in_use(Oid typid)
{
	Oid			argtypes[1] = {OIDOID};
	Datum		values[1] = {ObjectIdGetDatum(typid)};

	acdc_spi_exec("SELECT 1 FROM pg_catalog.pg_depend "
			 " WHERE refclassid OPERATOR(pg_catalog.=) 'pg_catalog.pg_type'::pg_catalog.regclass "
			 "   AND refobjid OPERATOR(pg_catalog.=) $1 AND deptype OPERATOR(pg_catalog.<>) 'i' LIMIT 1",
			 1, argtypes, values, NULL, true);
	return SPI_processed > 0;
}

/*
 * Drops the state (and sequence type) of targets no flow feeds any more,
 * and their registration, the checkpoints of flows that are gone, and
 * pipelines left without flows (so that no
 * name stays taken by nothing).  Internal deletion: the objects are
 * autocdc's, and what their owner built on them (a view over the state)
 * goes with them, so that nobody's DROP of a source can be blocked by it.
 */
void
acdc_define_drop_orphan_targets(void)
{
	List	   *states = NIL,
			   *types = NIL;
	ListCell   *lc;

	acdc_catalog_delete_orphans(&states, &types);
	foreach(lc, states)
	{
		ObjectAddress addr;

		if (get_rel_name(lfirst_oid(lc)) == NULL)
			continue;			/* went with its target */
		ObjectAddressSet(addr, RelationRelationId, lfirst_oid(lc));
		performDeletion(&addr, DROP_CASCADE, PERFORM_DELETION_INTERNAL);
	}
	foreach(lc, types)
	{
		ObjectAddress addr;

		if (!SearchSysCacheExists1(TYPEOID, ObjectIdGetDatum(lfirst_oid(lc))) ||
			type_in_use(lfirst_oid(lc)))
			continue;			/* gone, or still a type of the target's columns */
		ObjectAddressSet(addr, TypeRelationId, lfirst_oid(lc));
		performDeletion(&addr, DROP_RESTRICT, PERFORM_DELETION_INTERNAL);
	}
}

/*
 * sql_drop event trigger: a dropped target or source takes its flows with
 * it; targets left without flows lose their state.
 */
Datum
autocdc_on_sql_drop(PG_FUNCTION_ARGS)
{
	Oid			nsp;

	if (!CALLED_AS_EVENT_TRIGGER(fcinfo))
		ereport(ERROR,
				(errcode(ERRCODE_E_R_I_E_EVENT_TRIGGER_PROTOCOL_VIOLATED),
				 errmsg("function autocdc._on_sql_drop must be called as an event trigger")));
	if (!OidIsValid(get_extension_oid("autocdc", true)))
		PG_RETURN_VOID();
	nsp = get_namespace_oid("autocdc", true);
	if (!OidIsValid(nsp) || !OidIsValid(get_relname_relid("flow", nsp)))
		PG_RETURN_VOID();

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	if (acdc_catalog_delete_flows_of_dropped() > 0)
		acdc_define_drop_orphan_targets();
	acdc_define_drop_unused_composites();
	SPI_finish();
	PG_RETURN_VOID();
}

