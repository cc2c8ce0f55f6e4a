/*-------------------------------------------------------------------------
 * catalog_define.c
 *	  What creating and dropping flows reads and writes of autocdc's
 *	  catalog: pipeline, target, flow and checkpoint rows, and what the
 *	  event triggers and autocdc.uninstall look up there (catalog.h).
 *-------------------------------------------------------------------------
 */
#include "catalog.h"
#include "define.h"

#include "access/htup_details.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"

/* Column col of row of the last SPI result, as an Oid (InvalidOid for NULL). */
static Oid
oid_at(uint64 row, int col)
{
	bool		isnull;
	Datum		d = SPI_getbinval(SPI_tuptable->vals[row],
								  SPI_tuptable->tupdesc, col, &isnull);

	return isnull ? InvalidOid : DatumGetObjectId(d);
}

/* A List of Oids as an oid[] Datum. */
static Datum
oid_list_to_array(List *oids)
{
	Datum	   *elems = palloc(sizeof(Datum) * Max(list_length(oids), 1));
	ListCell   *lc;

	foreach(lc, oids)
		elems[foreach_current_index(lc)] = ObjectIdGetDatum(lfirst_oid(lc));
	return PointerGetDatum(construct_array(elems, list_length(oids), OIDOID,
										   sizeof(Oid), true, TYPALIGN_INT));
}

/*
 * The registration of a target fed by AUTO CDC flows, for a new flow to
 * agree with; false when no flow feeds it yet.
 */
bool
acdc_catalog_target_registration(Oid target, TargetRegistration *reg)
{
	Oid			argtypes[1] = {OIDOID};
	Datum		values[1] = {ObjectIdGetDatum(target)};
	HeapTuple	tup;
	TupleDesc	desc;
	bool		isnull;
	Datum		d;

	acdc_catalog_exec("SELECT scd_type, keys, sequence_type::pg_catalog.oid, "
				 "       sequence_composite::pg_catalog.oid, state_table::pg_catalog.oid, partial_columns, "
				 "       track_columns, sequence_in_target "
				 "  FROM autocdc.target WHERE target OPERATOR(pg_catalog.=) $1::pg_catalog.regclass",
				 1, argtypes, values, NULL);
	if (SPI_processed != 1)
		return false;
	tup = SPI_tuptable->vals[0];
	desc = SPI_tuptable->tupdesc;
	reg->seq_type = DatumGetObjectId(SPI_getbinval(tup, desc, 3, &isnull));
	d = SPI_getbinval(tup, desc, 4, &isnull);
	reg->composite = isnull ? InvalidOid : DatumGetObjectId(d);
	reg->state = DatumGetObjectId(SPI_getbinval(tup, desc, 5, &isnull));
	reg->partial_columns = acdc_text_array_to_list(SPI_getbinval(tup, desc, 6, &isnull));
	d = SPI_getbinval(tup, desc, 7, &isnull);
	reg->track_columns = isnull ? NIL : acdc_text_array_to_list(d);
	reg->seq_in_target = DatumGetBool(SPI_getbinval(tup, desc, 8, &isnull));
	return true;
}

/*
 * How a target is registered: its kind (FLOW_AUTO_CDC or FLOW_APPEND), SCD
 * type and keys; false when no flow feeds it.
 */
bool
acdc_catalog_target_kind(Oid target, FlowKind *kind, int *scd_type, List **keys)
{
	Oid			argtypes[1] = {OIDOID};
	Datum		values[1] = {ObjectIdGetDatum(target)};
	bool		isnull;
	Datum		d;

	acdc_catalog_exec("SELECT kind, scd_type::pg_catalog.int8, keys FROM autocdc.target "
				 " WHERE target OPERATOR(pg_catalog.=) $1::pg_catalog.regclass",
				 1, argtypes, values, NULL);
	if (SPI_processed != 1)
		return false;
	*kind = acdc_catalog_flow_kind(acdc_spi_value(0, 1));
	*scd_type = (int) acdc_spi_int64(0, 2);
	d = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 3, &isnull);
	*keys = isnull ? NIL : acdc_text_array_to_list(d);
	return true;
}

/* The auxiliary state table of a registered target. */
Oid
acdc_catalog_target_state(Oid target)
{
	Oid			argtypes[1] = {OIDOID};
	Datum		values[1] = {ObjectIdGetDatum(target)};

	acdc_catalog_exec("SELECT state_table::pg_catalog.oid FROM autocdc.target "
				 " WHERE target OPERATOR(pg_catalog.=) $1::pg_catalog.regclass",
				 1, argtypes, values, NULL);
	return oid_at(0, 1);
}

/*
 * An AUTO CDC target as autocdc.compact needs it, in f: SCD type, keys,
 * sequence type, state and the first flow's name (NULL when none); false
 * when the target is not an AUTO CDC one.
 */
bool
acdc_catalog_compact_target(Oid target, FlowDef *f)
{
	Oid			types[1] = {OIDOID};
	Datum		values[1] = {ObjectIdGetDatum(target)};
	bool		isnull;

	acdc_catalog_exec("SELECT scd_type, keys, sequence_type::pg_catalog.oid, state_table::pg_catalog.oid, "
				 "       (SELECT min(f.name) FROM autocdc.flow f "
				 "         WHERE f.target OPERATOR(pg_catalog.=) t.target) "
				 "  FROM autocdc.target t WHERE target OPERATOR(pg_catalog.=) $1::pg_catalog.regclass "
				 "   AND kind OPERATOR(pg_catalog.=) 'auto_cdc'",
				 1, types, values, NULL);
	if (SPI_processed != 1)
		return false;
	f->name = acdc_spi_value(0, 5);
	f->scd_type = DatumGetInt32(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
	f->keys = acdc_text_array_to_list(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2, &isnull));
	f->seq_type = DatumGetObjectId(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 3, &isnull));
	f->state = DatumGetObjectId(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 4, &isnull));
	return true;
}

/* Registers the target of a first AUTO CDC flow, with no partial columns yet. */
void
acdc_catalog_insert_target(Oid target, int scd_type, List *keys, Oid seq_type,
					  Oid state, Oid composite, List *track_columns)
{
	Oid			argtypes[8] = {OIDOID, INT4OID, TEXTARRAYOID, OIDOID, OIDOID, OIDOID,
	TEXTARRAYOID, TEXTARRAYOID};
	Datum		values[8];
	char		nulls[8] = {' ', ' ', ' ', ' ', ' ', ' ', ' ', ' '};

	values[0] = ObjectIdGetDatum(target);
	values[1] = Int32GetDatum(scd_type);
	values[2] = acdc_list_to_text_array(keys);
	values[3] = ObjectIdGetDatum(seq_type);
	values[4] = ObjectIdGetDatum(state);
	values[5] = ObjectIdGetDatum(composite);
	if (!OidIsValid(composite))
		nulls[5] = 'n';
	values[6] = acdc_list_to_text_array(NIL);
	values[7] = track_columns ? acdc_list_to_text_array(track_columns) : (Datum) 0;
	if (track_columns == NIL)
		nulls[7] = 'n';
	acdc_catalog_exec("INSERT INTO autocdc.target (target, scd_type, keys, sequence_type, "
				 "  state_table, sequence_composite, partial_columns, track_columns, "
				 "  sequence_in_target) "
				 "VALUES ($1::pg_catalog.regclass, $2, $3, $4::pg_catalog.regtype, "
				 "  $5::pg_catalog.regclass, $6::pg_catalog.regtype, $7, $8, "
				 "  $2 OPERATOR(pg_catalog.=) 1)",
				 8, argtypes, values, nulls);
}

/* Registers an append flow's target, unless it is already. */
void
acdc_catalog_insert_append_target(Oid target)
{
	Oid			argtypes[1] = {OIDOID};
	Datum		values[1] = {ObjectIdGetDatum(target)};

	acdc_catalog_exec("INSERT INTO autocdc.target (target, kind) "
				 "VALUES ($1::pg_catalog.regclass, 'append') ON CONFLICT DO NOTHING",
				 1, argtypes, values, NULL);
}

/* The columns whose setting sequence the target's state keeps, all of them. */
void
acdc_catalog_target_set_partial_columns(Oid target, List *columns)
{
	Oid			argtypes[2] = {OIDOID, TEXTARRAYOID};
	Datum		values[2] = {ObjectIdGetDatum(target), acdc_list_to_text_array(columns)};

	acdc_catalog_exec("UPDATE autocdc.target SET partial_columns = $2 "
				 " WHERE target OPERATOR(pg_catalog.=) $1::pg_catalog.regclass",
				 2, argtypes, values, NULL);
}

/*
 * Gives the target the tombstone retention (an interval) when it has
 * none yet; false when it has one.
 */
bool
acdc_catalog_target_set_retention(Oid target, Datum retention)
{
	Oid			argtypes[2] = {OIDOID, INTERVALOID};
	Datum		values[2] = {ObjectIdGetDatum(target), retention};

	acdc_catalog_exec("UPDATE autocdc.target SET tombstone_retention = $2 "
				 " WHERE target OPERATOR(pg_catalog.=) $1::pg_catalog.regclass "
				 "   AND tombstone_retention IS NULL",
				 2, argtypes, values, NULL);
	return SPI_processed == 1;
}

/*
 * Whether the target keeps tombstones for another time than `retention`:
 * then the one it keeps, and the one given, as text into *kept and *given.
 */
bool
acdc_catalog_target_other_retention(Oid target, Datum retention, char **kept,
							   char **given)
{
	Oid			argtypes[2] = {OIDOID, INTERVALOID};
	Datum		values[2] = {ObjectIdGetDatum(target), retention};

	acdc_catalog_exec("SELECT tombstone_retention::pg_catalog.text, $2::pg_catalog.text "
				 "  FROM autocdc.target "
				 " WHERE target OPERATOR(pg_catalog.=) $1::pg_catalog.regclass "
				 "   AND tombstone_retention OPERATOR(pg_catalog.<>) $2",
				 2, argtypes, values, NULL);
	if (SPI_processed != 1)
		return false;
	*kept = acdc_spi_value(0, 1);
	*given = acdc_spi_value(0, 2);
	return true;
}

/* The columns each flow into the target writes: a List of Lists of names. */
List *
acdc_catalog_flow_columns_of_target(Oid target)
{
	Oid			argtypes[1] = {OIDOID};
	Datum		values[1] = {ObjectIdGetDatum(target)};
	List	   *result = NIL;

	acdc_catalog_exec("SELECT columns FROM autocdc.flow "
				 " WHERE target OPERATOR(pg_catalog.=) $1::pg_catalog.regclass",
				 1, argtypes, values, NULL);
	for (uint64 i = 0; i < SPI_processed; i++)
	{
		bool		isnull;

		result = lappend(result,
						 acdc_text_array_to_list(SPI_getbinval(SPI_tuptable->vals[i],
														  SPI_tuptable->tupdesc, 1, &isnull)));
	}
	return result;
}

/*
 * How many snapshot and AUTO CDC flows feed the target, and whether one of
 * the latter ignores NULL updates, or has columns_to_update.
 */
void
acdc_catalog_flow_kinds_of_target(Oid target, int64 *snapshots, int64 *cdc,
							 bool *cdc_partial, bool *cdc_listed)
{
	Oid			argtypes[1] = {OIDOID};
	Datum		values[1] = {ObjectIdGetDatum(target)};

	acdc_catalog_exec("SELECT pg_catalog.count(*) FILTER (WHERE kind OPERATOR(pg_catalog.=) 'snapshot'), "
				 "       pg_catalog.count(*) FILTER (WHERE kind OPERATOR(pg_catalog.=) 'auto_cdc'), "
				 "       COALESCE(pg_catalog.bool_or(ignore_null_columns OPERATOR(pg_catalog.<>) '{}') "
				 "                FILTER (WHERE kind OPERATOR(pg_catalog.=) 'auto_cdc'), false), "
				 "       COALESCE(pg_catalog.bool_or(columns_to_update IS NOT NULL), false) "
				 "  FROM autocdc.flow WHERE target OPERATOR(pg_catalog.=) $1::pg_catalog.regclass",
				 1, argtypes, values, NULL);
	*snapshots = acdc_spi_int64(0, 1);
	*cdc = acdc_spi_int64(0, 2);
	*cdc_partial = acdc_spi_bool(0, 3);
	*cdc_listed = acdc_spi_bool(0, 4);
}

void
acdc_catalog_insert_pipeline(const char *name, Oid owner)
{
	Oid			argtypes[2] = {TEXTOID, OIDOID};
	Datum		values[2] = {CStringGetTextDatum(name), ObjectIdGetDatum(owner)};

	acdc_catalog_exec("INSERT INTO autocdc.pipeline (name, owner) "
				 "VALUES ($1, $2::pg_catalog.regrole)",
				 2, argtypes, values, NULL);
}

/* The owner of the named flow, or InvalidOid when there is none. */
Oid
acdc_catalog_flow_owner(const char *name)
{
	Oid			argtypes[1] = {TEXTOID};
	Datum		values[1] = {CStringGetTextDatum(name)};

	acdc_catalog_exec("SELECT owner::pg_catalog.oid FROM autocdc.flow WHERE name OPERATOR(pg_catalog.=) $1",
				 1, argtypes, values, NULL);
	return SPI_processed > 0 ? oid_at(0, 1) : InvalidOid;
}

/*
 * Locks the named flow's row until the end of the transaction; returns its
 * owner, or InvalidOid when there is no such flow.
 */
Oid
acdc_catalog_lock_flow(const char *name)
{
	Oid			argtypes[1] = {TEXTOID};
	Datum		values[1] = {CStringGetTextDatum(name)};

	acdc_catalog_exec("SELECT owner::pg_catalog.oid FROM autocdc.flow "
				 " WHERE name OPERATOR(pg_catalog.=) $1 FOR UPDATE",
				 1, argtypes, values, NULL);
	return SPI_processed == 1 ? oid_at(0, 1) : InvalidOid;
}

/*
 * The flow's row, owned by the current user, with the qualified signature
 * of its source function (or NULL) and what its expressions resolved to.
 */
void
acdc_catalog_insert_flow(FlowSpec *spec, const char *source_function,
					List *expression_objects)
{
	Oid			types[21] = {TEXTOID, TEXTOID, OIDOID, OIDOID, TEXTARRAYOID,
		TEXTOID, INT4OID, TEXTOID, TEXTOID, TEXTARRAYOID, TEXTARRAYOID,
		BOOLOID, TEXTOID, TEXTOID, TEXTOID, TEXTOID, TEXTARRAYOID, TEXTARRAYOID,
	TEXTOID, TEXTOID, TEXTOID};
	Datum		vals[21];
	char		nulls[21];

	memset(nulls, ' ', sizeof(nulls));
#define SET_TEXT(i, v) do { if (v) vals[i] = CStringGetTextDatum(v); else nulls[i] = 'n'; } while (0)
	vals[0] = CStringGetTextDatum(spec->name);
	vals[1] = CStringGetTextDatum(spec->pipeline);
	vals[2] = ObjectIdGetDatum(spec->target);
	vals[3] = ObjectIdGetDatum(spec->source);
	if (!OidIsValid(spec->source))
		nulls[3] = 'n';
	vals[4] = acdc_list_to_text_array(spec->keys);
	if (spec->keys == NIL)
		nulls[4] = 'n';
	SET_TEXT(5, spec->seq_norm);
	vals[6] = Int32GetDatum(spec->scd_type);
	if (spec->scd_type == 0)
		nulls[6] = 'n';
	SET_TEXT(7, spec->deletes_norm);
	SET_TEXT(8, spec->truncates_norm);
	vals[9] = acdc_list_to_text_array(spec->columns);
	vals[10] = acdc_list_to_text_array(spec->ignore_null);
	vals[11] = BoolGetDatum(spec->once);
	vals[12] = CStringGetTextDatum(spec->incremental ? "incremental" : "full");
	vals[13] = CStringGetTextDatum(spec->options_json);
	vals[14] = CStringGetTextDatum(acdc_catalog_flow_kind_name(spec->kind));
	SET_TEXT(15, source_function);
	SET_TEXT(18, spec->source_query);
	SET_TEXT(19, spec->version_query);
	SET_TEXT(20, spec->sys_norm);
#undef SET_TEXT
	vals[16] = acdc_list_to_text_array(expression_objects);
	vals[17] = autocdc_current_settings();

	acdc_catalog_exec(psprintf("INSERT INTO autocdc.flow (name, pipeline, kind, target, source, keys, "
						  "  sequence_by, stored_as_scd_type, apply_as_deletes, apply_as_truncates, "
						  "  columns, ignore_null_columns, once, read_mode, owner, options, source_function, "
						  "  expression_objects, settings, source_query, version_query, system_sequence_by) "
						  "VALUES ($1, $2, $15, $3::pg_catalog.regclass, $4::pg_catalog.regclass, "
						  "  $5, $6, $7, $8, $9, $10, $11, $12, $13, %u::pg_catalog.oid::pg_catalog.regrole, "
						  "  $14::pg_catalog.jsonb, $16, $17, $18, $19, $20, $21)",
						  GetUserId()),
				 21, types, vals, nulls);
}

/* A new flow's columns_to_update column, after its row. */
void
acdc_catalog_set_columns_to_update(const char *flow, const char *column)
{
	Oid			argtypes[2] = {TEXTOID, TEXTOID};
	Datum		values[2] = {CStringGetTextDatum(flow), CStringGetTextDatum(column)};

	acdc_catalog_exec("UPDATE autocdc.flow SET columns_to_update = $2 "
					  " WHERE name OPERATOR(pg_catalog.=) $1",
					  2, argtypes, values, NULL);
}

/*
 * A new flow's checkpoint row, with where it reads (an incremental flow's
 * source and this cluster): a restore's COPY into a table made anew keeps
 * stamps (stamp.c).
 */
void
acdc_catalog_insert_checkpoint(const char *flow, Oid source, bool incremental)
{
	Oid			ctypes[3] = {TEXTOID, OIDOID, INT8OID};
	Datum		cvals[3] = {CStringGetTextDatum(flow), ObjectIdGetDatum(source),
	Int64GetDatum(autocdc_system_identifier())};
	char		cnulls[3] = {' ', ' ', ' '};

	if (!incremental)
		cnulls[1] = cnulls[2] = 'n';
	else
		acdc_catalog_note_cluster();
	acdc_catalog_exec("INSERT INTO autocdc.checkpoint (flow, source_oid, cluster_id) "
				 "VALUES ($1, $2, $3)",
				 3, ctypes, cvals, cnulls);
}

/* Records what a 0.1.0 flow's expressions resolve to, unless recorded. */
void
acdc_catalog_flow_set_expression_objects(const char *flow, List *objects)
{
	Oid			argtypes[2] = {TEXTOID, TEXTARRAYOID};
	Datum		values[2] = {CStringGetTextDatum(flow), acdc_list_to_text_array(objects)};

	acdc_catalog_exec("UPDATE autocdc.flow SET expression_objects = $2 "
				 " WHERE name OPERATOR(pg_catalog.=) $1 AND expression_objects IS NULL",
				 2, argtypes, values, NULL);
}

void
acdc_catalog_delete_flow(const char *name)
{
	Oid			argtypes[1] = {TEXTOID};
	Datum		values[1] = {CStringGetTextDatum(name)};

	acdc_catalog_exec("DELETE FROM autocdc.flow WHERE name OPERATOR(pg_catalog.=) $1",
				 1, argtypes, values, NULL);
}

/*
 * In the sql_drop event trigger: deletes the flows whose target or source
 * was dropped; returns how many.
 */
uint64
acdc_catalog_delete_flows_of_dropped(void)
{
	acdc_catalog_exec("DELETE FROM autocdc.flow f "
				 " USING pg_catalog.pg_event_trigger_dropped_objects() d "
				 " WHERE d.classid OPERATOR(pg_catalog.=) 'pg_catalog.pg_class'::pg_catalog.regclass "
				 "   AND d.objsubid OPERATOR(pg_catalog.=) 0 "
				 "   AND (f.target::pg_catalog.oid OPERATOR(pg_catalog.=) d.objid "
				 "        OR f.source::pg_catalog.oid OPERATOR(pg_catalog.=) d.objid)",
				 0, NULL, NULL, NULL);
	return SPI_processed;
}

/*
 * Deletes the rows no flow needs any more: checkpoints of flows that are
 * gone (no foreign keys, for pg_restore -j), pipelines and target
 * registrations without flows.  The targets' state tables go to *states,
 * their ROW() composite types (when they have one) to *composites.
 */
void
acdc_catalog_delete_orphans(List **states, List **composites)
{
	acdc_catalog_exec("DELETE FROM autocdc.checkpoint c WHERE NOT EXISTS "
				 "  (SELECT 1 FROM autocdc.flow f WHERE f.name OPERATOR(pg_catalog.=) c.flow)",
				 0, NULL, NULL, NULL);
	acdc_catalog_exec("DELETE FROM autocdc.expectation e WHERE NOT EXISTS "
				 "  (SELECT 1 FROM autocdc.flow f WHERE f.name OPERATOR(pg_catalog.=) e.flow)",
				 0, NULL, NULL, NULL);
	acdc_catalog_exec("DELETE FROM autocdc.pipeline p WHERE NOT EXISTS "
				 "  (SELECT 1 FROM autocdc.flow f WHERE f.pipeline OPERATOR(pg_catalog.=) p.name)",
				 0, NULL, NULL, NULL);
	acdc_catalog_exec("DELETE FROM autocdc.target t WHERE NOT EXISTS "
				 "  (SELECT 1 FROM autocdc.flow f WHERE f.target OPERATOR(pg_catalog.=) t.target) "
				 "RETURNING t.state_table::pg_catalog.oid, t.sequence_composite::pg_catalog.oid",
				 0, NULL, NULL, NULL);
	for (uint64 i = 0; i < SPI_processed; i++)
	{
		bool		isnull;
		Datum		d;

		d = SPI_getbinval(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 1, &isnull);
		*states = lappend_oid(*states, DatumGetObjectId(d));
		d = SPI_getbinval(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 2, &isnull);
		if (!isnull)
			*composites = lappend_oid(*composites, DatumGetObjectId(d));
	}
}

/*
 * In the sql_drop event trigger, when relations went: the ROW() composite
 * types in autocdc's namespace nsp that no target is registered with and
 * nothing uses any more.
 */
List *
acdc_catalog_unused_composites(Oid nsp)
{
	Oid			argtypes[1] = {OIDOID};
	Datum		values[1] = {ObjectIdGetDatum(nsp)};
	List	   *types = NIL;

	acdc_catalog_exec("SELECT t.oid FROM pg_catalog.pg_type t "
				 " WHERE EXISTS (SELECT 1 FROM pg_catalog.pg_event_trigger_dropped_objects() o "
				 "                WHERE o.classid OPERATOR(pg_catalog.=) 'pg_catalog.pg_class'::pg_catalog.regclass) "
				 "   AND t.typnamespace OPERATOR(pg_catalog.=) $1 "
				 "   AND t.typtype OPERATOR(pg_catalog.=) 'c' "
				 "   AND pg_catalog.starts_with(t.typname::pg_catalog.text, '__autocdc_seq_') "
				 "   AND NOT EXISTS (SELECT 1 FROM autocdc.target g "
				 "                    WHERE g.sequence_composite::pg_catalog.oid OPERATOR(pg_catalog.=) t.oid) "
				 "   AND NOT EXISTS (SELECT 1 FROM pg_catalog.pg_depend d "
				 "                    WHERE d.refclassid OPERATOR(pg_catalog.=) 'pg_catalog.pg_type'::pg_catalog.regclass "
				 "                      AND d.refobjid OPERATOR(pg_catalog.=) t.oid "
				 "                      AND d.deptype OPERATOR(pg_catalog.<>) 'i')",
				 1, argtypes, values, NULL);
	for (uint64 i = 0; i < SPI_processed; i++)
	{
		bool		isnull;

		types = lappend_oid(types,
							DatumGetObjectId(SPI_getbinval(SPI_tuptable->vals[i],
														   SPI_tuptable->tupdesc, 1, &isnull)));
	}
	return types;
}

/*
 * The flows that read one of the relations (Oids), by name: their names
 * to *names and their owners, in the same order, to *owners.
 */
void
acdc_catalog_flows_over_sources(List *relids, List **names, List **owners)
{
	Oid			argtypes[1] = {OIDARRAYOID};
	Datum		values[1] = {oid_list_to_array(relids)};

	acdc_catalog_exec("SELECT name, owner::pg_catalog.oid FROM autocdc.flow "
				 " WHERE source::pg_catalog.oid OPERATOR(pg_catalog.=) ANY ($1) ORDER BY name",
				 1, argtypes, values, NULL);
	for (uint64 i = 0; i < SPI_processed; i++)
	{
		*names = lappend(*names, acdc_spi_value(i, 1));
		*owners = lappend_oid(*owners, oid_at(i, 2));
	}
}

/*
 * Whether an incremental flow reads one of the relations (Oids) from a
 * checkpoint taken here: one with no source recorded yet (0.1.0), or one
 * recorded for this very source in a cluster of the lineage.
 */
bool
acdc_catalog_sources_read(List *relids)
{
	Oid			argtypes[1] = {OIDARRAYOID};
	Datum		values[1] = {oid_list_to_array(relids)};

	acdc_catalog_exec("SELECT EXISTS (SELECT FROM autocdc.checkpoint c "
				 "  JOIN autocdc.flow f ON f.name OPERATOR(pg_catalog.=) c.flow "
				 " WHERE f.source::pg_catalog.oid OPERATOR(pg_catalog.=) ANY ($1) "
				 "   AND f.read_mode OPERATOR(pg_catalog.=) 'incremental' "
				 "   AND (c.source_oid IS NULL "
				 "        OR (c.source_oid OPERATOR(pg_catalog.=) f.source::pg_catalog.oid "
				 "            AND c.cluster_id IN (SELECT l.system_identifier FROM autocdc.lineage l))))",
				 1, argtypes, values, NULL);
	return acdc_spi_bool(0, 1);
}

/*
 * How many of the flows already into a target give a track-history list
 * (autocdc.flow.options holds the arguments as given), and whether one
 * gives none.
 */
int
acdc_catalog_flows_listing_tracked(Oid target, bool *tracking_all)
{
	Oid			argtypes[1] = {OIDOID};
	Datum		values[1] = {ObjectIdGetDatum(target)};
	int			listing = 0;

	*tracking_all = false;
	/* a list given is a JSON array there, an empty one the same as none */
	acdc_catalog_exec("SELECT pg_catalog.jsonb_typeof(l) OPERATOR(pg_catalog.=) 'array' "
				 "         AND l OPERATOR(pg_catalog.<>) '[]'::pg_catalog.jsonb "
				 "       OR pg_catalog.jsonb_typeof(e) OPERATOR(pg_catalog.=) 'array' "
				 "         AND e OPERATOR(pg_catalog.<>) '[]'::pg_catalog.jsonb "
				 "  FROM autocdc.flow, "
				 "       LATERAL (SELECT options OPERATOR(pg_catalog.->) 'track_history_column_list'::pg_catalog.text, "
				 "         options OPERATOR(pg_catalog.->) 'track_history_except_column_list'::pg_catalog.text) o (l, e) "
				 " WHERE target OPERATOR(pg_catalog.=) $1::pg_catalog.regclass",
				 1, argtypes, values, NULL);
	for (uint64 i = 0; i < SPI_processed; i++)
	{
		if (acdc_spi_bool(i, 1))
			listing++;
		else
			*tracking_all = true;
	}
	return listing;
}

/* The columns an SCD 2 target's history is tracked on (NIL: all). */
void
acdc_catalog_target_set_track_columns(Oid target, List *cols)
{
	Oid			argtypes[2] = {OIDOID, TEXTARRAYOID};
	Datum		values[2] = {ObjectIdGetDatum(target),
	cols != NIL ? acdc_list_to_text_array(cols) : (Datum) 0};

	acdc_catalog_exec("UPDATE autocdc.target SET track_columns = $2 "
				 " WHERE target OPERATOR(pg_catalog.=) $1::pg_catalog.regclass",
				 2, argtypes, values, cols != NIL ? "  " : " n");
}
