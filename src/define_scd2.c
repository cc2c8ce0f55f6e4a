/*-------------------------------------------------------------------------
 * define_scd2.c
 *	  What an SCD type 2 target needs beyond an SCD 1 one: the history
 *	  columns and the constraints that keep history sound, the event store
 *	  the fold replays late events from, and autocdc.as_of for the target.
 *-------------------------------------------------------------------------
 */
#include "define.h"
#include "collation.h"

#include "catalog/namespace.h"
#include "catalog/pg_proc.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "parser/parse_func.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/typcache.h"

/*
 * Resolves track_history_column_list / track_history_except_column_list
 * against the flow's value columns; NIL means every value column.
 */
void
acdc_scd2_resolve_tracking(FlowSpec *spec, List *track_list, List *track_except)
{
	ListCell   *lc;

	spec->track_columns = NIL;
	foreach(lc, track_list != NIL ? track_list : track_except)
	{
		if (!acdc_list_has_string(spec->columns, lfirst(lc)))
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("column \"%s\" of the track-history list is not a value column of the flow",
							(char *) lfirst(lc)),
					 errhint("Keys and columns left out of the flow cannot be tracked.")));
	}
	if (track_list == NIL && track_except == NIL)
		return;
	foreach(lc, spec->columns)
	{
		if (track_list != NIL ? acdc_list_has_string(track_list, lfirst(lc))
			: !acdc_list_has_string(track_except, lfirst(lc)))
			spec->track_columns = lappend(spec->track_columns, lfirst(lc));
	}
	if (spec->track_columns == NIL)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("the flow would track no column"),
				 errhint("Track at least one value column, or leave the track-history options out to track all.")));
}

/*
 * The history columns of an existing target order versions as the
 * sequence does: in its collation (a composite __start_at: in its fields'
 * collations).  Checked for the first flow into it; the flows after it
 * are held to the first's ordering (acdc_define_check_seq_collation).
 */
void
acdc_scd2_check_history_collations(FlowSpec *spec, Oid relid)
{
	const char *detail = "The history columns order versions as the sequence orders events.";

	if (spec->seq_row_colls != NIL)
	{
		ListCell   *la,
				   *lb;
		List	   *fields = acdc_composite_field_collations(spec->seq_type);

		forboth(la, spec->seq_row_colls, lb, fields)
			if (lfirst_oid(la) != lfirst_oid(lb))
			ereport(ERROR,
					(errcode(ERRCODE_COLLATION_MISMATCH),
					 errmsg("field %d of type %s, the type of __start_at of \"%s\", has %s, but that field of sequence_by has %s",
							foreach_current_index(la) + 1, format_type_be(spec->seq_type),
							get_rel_name(relid), acdc_collation_text(lfirst_oid(lb)),
							acdc_collation_text(lfirst_oid(la))),
					 errdetail("%s", detail),
					 errhint("Write the fields of sequence_by with the collations of the type's, or give the type the fields' collations.")));
		return;
	}
	acdc_refuse_collation("sequence_by", spec->seq_coll, "__start_at", relid,
						  acdc_column_collation(relid, "__start_at"), detail, true);
	acdc_refuse_collation("sequence_by", spec->seq_coll, "__end_at", relid,
						  acdc_column_collation(relid, "__end_at"), detail, true);
}

/*
 * An existing SCD 2 target: __start_at and __end_at of the sequence type
 * (a ROW(...) sequence adopts a composite __start_at with the same
 * fields), and a unique index on the keys and __start_at.
 */
void
acdc_scd2_check_existing_target(FlowSpec *spec, Oid relid)
{
	AttrNumber	start = get_attnum(relid, "__start_at");
	AttrNumber	end = get_attnum(relid, "__end_at");
	char	   *relname = get_rel_name(relid);
	Oid			start_type;
	List	   *keys_start;

	if (start == InvalidAttrNumber || end == InvalidAttrNumber)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_COLUMN),
				 errmsg("SCD type 2 target \"%s\" needs columns __start_at and __end_at", relname),
				 errhint("Add them with the type of the sequence, or let autocdc create the target.")));
	start_type = get_atttype(relid, start);
	if (get_atttype(relid, end) != start_type)
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("__start_at and __end_at of \"%s\" must have one type", relname)));
	if (spec->seq_type == RECORDOID && type_is_rowtype(start_type) &&
		equal(spec->seq_row_types, acdc_define_composite_field_types(start_type)))
	{
		spec->seq_norm = psprintf("(%s)::%s", spec->seq_norm,
								  acdc_type_qualified_name(start_type));
		spec->seq_type = start_type;
	}
	if (spec->seq_type != start_type)
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("__start_at of \"%s\" is of type %s, but sequence_by is of type %s",
						relname, format_type_be(start_type),
						spec->seq_type == RECORDOID ? "record" : format_type_be(spec->seq_type)),
				 errdetail("The history columns have the type of the sequence.")));
	keys_start = lappend(list_copy(spec->keys), "__start_at");
	if (!acdc_define_has_unique_index(relid, keys_start))
	{
		StringInfoData cols;

		initStringInfo(&cols);
		acdc_append_column_list(&cols, keys_start, NULL);
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_TABLE_DEFINITION),
				 errmsg("SCD type 2 target \"%s\" has no unique index on (%s)", relname, cols.data),
				 errdetail("A key has one version per __start_at."),
				 errhint("%s", acdc_define_unique_index_hint(relid, keys_start))));
	}
}

/*
 * Gives a target autocdc created the history columns and their primary
 * key: one version per key and start.  The fold keeps one open version
 * per key; no partial unique index enforces it: its predicate made every
 * close a non-HOT update, and it cost an eighth of a run over a history.
 */
void
acdc_scd2_add_history_columns(FlowSpec *spec)
{
	char	   *qname = acdc_rel_qualified_name(spec->target);
	char	   *seqtype = acdc_define_seq_column_type(spec);
	StringInfoData keys;

	UserSwitch	sw;

	initStringInfo(&keys);
	acdc_append_column_list(&keys, spec->keys, NULL);
	autocdc_become_owner_of(&sw, spec->target);
	acdc_spi_exec(psprintf("ALTER TABLE %s ADD COLUMN __start_at %s NOT NULL, "
					  "ADD COLUMN __end_at %s, ADD PRIMARY KEY (%s, __start_at)",
					  qname, seqtype, seqtype, keys.data),
			 0, NULL, NULL, NULL, false);
	autocdc_unbecome(&sw);
}

/*
 * The event store: every distinct event read that the history cannot give
 * back (all but the upserts that start a version alone, which its row
 * holds), so that a late event can be folded into history exactly,
 * including the updates that were absorbed in place or changed nothing
 * when they came.  __autocdc_inherit lists the
 * columns an upsert leaves to the previous version (partial-update NULLs,
 * columns its flow does not write).
 */
Oid
acdc_scd2_create_event_store(FlowSpec *spec, Oid owner)
{
	StringInfoData sql;
	char		sname[NAMEDATALEN];
	char	   *qname;
	ListCell   *lc;

	initStringInfo(&sql);
	qname = acdc_define_aux_table_head(&sql, spec, "__autocdc_events", sname);
	appendStringInfo(&sql, "__autocdc_seq %s NOT NULL, __autocdc_kind pg_catalog.text NOT NULL, ",
					 acdc_define_seq_column_type(spec));
	foreach(lc, spec->columns)
		appendStringInfo(&sql, "%s, ", acdc_define_column_ddl(spec->target, lfirst(lc)));
	/* when an event was stored (retention); a delete's is NULL once it is a floor (retention.c) */
	appendStringInfoString(&sql, "__autocdc_inherit pg_catalog.text[], "
						   "__autocdc_stored_at pg_catalog.timestamptz DEFAULT pg_catalog.now(), PRIMARY KEY (");
	acdc_append_column_list(&sql, spec->keys, NULL);
	appendStringInfo(&sql, ", __autocdc_seq)); "
					 "CREATE INDEX ON %s (__autocdc_stored_at) WHERE __autocdc_kind OPERATOR(pg_catalog.=) 'd'",
					 qname);
	return acdc_define_create_aux_table(spec, sql.data, sname, "events", owner);
}

/* "s.k1 = t.k1 AND ... AND ", by the key types' equality */
static void
append_keys_equal(StringInfo sql, FlowSpec *spec)
{
	ListCell   *lc;

	foreach(lc, spec->keys)
	{
		const char *k = quote_identifier(lfirst(lc));

		acdc_append_seq_cmp(sql, psprintf("s.%s", k), "=", psprintf("t.%s", k),
							get_atttype(spec->target, get_attnum(spec->target, lfirst(lc))));
		appendStringInfoString(sql, " AND ");
	}
}

/*
 * SCD 2: the upserts the store lacks, the starts of versions no other event
 * falls in, from the target's rows, which hold them exactly.
 */
static void
store_version_starts(FlowSpec *spec, Oid events, const char *qevents)
{
	List	   *all = list_concat_copy(spec->keys,
									   acdc_event_store_value_columns(events, spec->keys));
	StringInfoData sql;

	initStringInfo(&sql);
	appendStringInfo(&sql, "INSERT INTO %s (", qevents);
	acdc_append_column_list(&sql, all, NULL);
	appendStringInfoString(&sql, ", __autocdc_seq, __autocdc_kind) SELECT ");
	acdc_append_column_list(&sql, all, "t");
	appendStringInfo(&sql, ", t.__start_at, 'u' FROM %s t WHERE NOT EXISTS (SELECT FROM %s s WHERE ",
					 acdc_rel_qualified_name(spec->target), qevents);
	append_keys_equal(&sql, spec);
	acdc_append_seq_cmp(&sql, "s.__autocdc_seq", "=", "t.__start_at",
						get_atttype(events, get_attnum(events, "__autocdc_seq")));
	/* nor those before the key's floor (a delete purged before: retention.c) */
	appendStringInfo(&sql, ") AND NOT EXISTS (SELECT FROM %s s WHERE ", qevents);
	append_keys_equal(&sql, spec);
	appendStringInfoString(&sql, "s.__autocdc_kind OPERATOR(pg_catalog.=) 'd' AND s.__autocdc_stored_at IS NULL AND ");
	acdc_append_seq_cmp(&sql, "s.__autocdc_seq", ">", "t.__start_at",
						get_atttype(events, get_attnum(events, "__autocdc_seq")));
	appendStringInfoChar(&sql, ')');
	acdc_spi_exec(sql.data, 0, NULL, NULL, NULL, false);
}

/*
 * A later flow may write columns earlier flows did not: the store gets
 * them, and the events so far (SCD 2: stored first, when only the target
 * held them) leave them to the previous version.
 */
void
acdc_scd2_extend_event_store(FlowSpec *spec, Oid events)
{
	ListCell   *lc;
	char	   *qevents = acdc_rel_qualified_name(events);
	UserSwitch	sw;
	bool		starts_stored = spec->scd_type == ACDC_BITEMPORAL;

	/* the store holds rows now: what ALTER and UPDATE set off runs as its owner */
	autocdc_become_owner_of(&sw, events);
	foreach(lc, spec->columns)
	{
		if (get_attnum(events, lfirst(lc)) != InvalidAttrNumber)
			continue;
		if (!starts_stored)
			store_version_starts(spec, events, qevents);
		starts_stored = true;
		acdc_spi_exec(psprintf("ALTER TABLE %s ADD COLUMN %s; "
						  "UPDATE %s SET __autocdc_inherit = "
						  "pg_catalog.array_append(__autocdc_inherit, %s::pg_catalog.text) "
						  "WHERE __autocdc_kind OPERATOR(pg_catalog.=) 'u'",
						  qevents, acdc_define_column_ddl(spec->target, lfirst(lc)),
						  qevents, quote_literal_cstr(lfirst(lc))),
				 0, NULL, NULL, NULL, false);
	}
	autocdc_unbecome(&sw);
}

/*
 * autocdc.as_of(NULL::target, at): the versions valid at `at`.  One SQL
 * function per target, so the planner inlines it and a condition on the
 * keys reaches the primary key; it goes away with the target.
 */
void
acdc_scd2_create_as_of(FlowSpec *spec, Oid owner)
{
	char	   *qtarget = acdc_rel_qualified_name(spec->target);
	char	   *rowtype = acdc_type_qualified_name(get_rel_type_id(spec->target));
	char	   *seqtype = acdc_type_qualified_name(spec->seq_type);
	StringInfoData body,
				at;
	UserSwitch	sw;
	Oid			argtypes[2] = {get_rel_type_id(spec->target), spec->seq_type};
	List	   *name = list_make2(makeString("autocdc"), makeString("as_of"));
	Oid			fn;

	/* `at` compares in the history's collation, whatever the caller's */
	initStringInfo(&at);
	appendStringInfoString(&at, "$2");
	acdc_append_collate(&at, spec->seq_coll);
	initStringInfo(&body);
	appendStringInfo(&body, "SELECT * FROM %s WHERE ", qtarget);
	acdc_append_seq_cmp(&body, "__start_at", "<=", at.data, spec->seq_type);
	appendStringInfoString(&body, " AND (__end_at IS NULL OR ");
	acdc_append_seq_cmp(&body, "__end_at", ">", at.data, spec->seq_type);
	appendStringInfoChar(&body, ')');

	fn = LookupFuncName(name, 2, argtypes, true);
	if (OidIsValid(fn))
		return;					/* an earlier flow made it */
	autocdc_become(&sw, autocdc_extension_owner(), false);
	acdc_spi_exec(psprintf("CREATE FUNCTION autocdc.as_of(target %s, at %s) RETURNS SETOF %s "
					  "LANGUAGE sql STABLE AS %s; "
					  "ALTER FUNCTION autocdc.as_of(%s, %s) OWNER TO %s; "
					  "COMMENT ON FUNCTION autocdc.as_of(%s, %s) IS %s",
					  rowtype, seqtype, rowtype, quote_literal_cstr(body.data),
					  rowtype, seqtype, quote_identifier(GetUserNameFromId(owner, false)),
					  rowtype, seqtype,
					  quote_literal_cstr(psprintf("versions of %s valid at a point of its sequence", qtarget))),
			 0, NULL, NULL, NULL, false);
	autocdc_unbecome(&sw);
	fn = LookupFuncName(name, 2, argtypes, false);
	acdc_define_depend_on_target(ProcedureRelationId, fn, spec->target);
}
