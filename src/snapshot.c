/*-------------------------------------------------------------------------
 * snapshot.c
 *	  AUTO CDC from snapshot (doc/design.md §2.7): a snapshot with version
 *	  v is the full state of the source at v, applied as events at sequence
 *	  v through the same folds as change rows.
 *
 *	  SCD 1: an upsert for every key it holds, and a truncate at v — every
 *	  key whose last event is older than v goes, an upsert at v survives.
 *	  That is also the one ordering domain of doc/design.md §2.8 when CDC
 *	  flows share the target: a newer CDC event outlives the snapshot, an
 *	  older one, even one arriving later, does not.
 *	  SCD 2: an upsert for every key it holds and a delete at v for every
 *	  open key it lacks (snapshot flows alone feed an SCD 2 target, in
 *	  version order, so the open versions are the state before v).
 *
 *	  A table or view source is read whole each run as versions 0, 1, 2...;
 *	  a source function is called with the latest version applied until it
 *	  returns no row.
 *-------------------------------------------------------------------------
 */
#include "snapshot.h"
#include "collation.h"
#include "progress.h"
#include "scd1.h"
#include "scd2.h"
#include "source_query.h"
#include "typmod_coerce.h"
#include "validate.h"

#include "access/relation.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"

/*
 * Where a snapshot is read: a relation, or a snapshot query's FROM item
 * (source_query.c) with the version it reads.
 */
typedef struct SnapSource
{
	Oid			rel;
	char	   *from;			/* NULL: rel */
} SnapSource;

static const char *
snap_from(SnapSource *snap)
{
	return snap->from ? snap->from : acdc_rel_qualified_name(snap->rel);
}

static const char *
snap_label(SnapSource *snap)
{
	return snap->from ? "snapshot_query" : get_rel_name(snap->rel);
}

/*
 * The snapshot's column for target column `col`: exact name, else the one
 * that matches in any case.  A query's result has the names creation
 * checked.
 */
static char *
snapshot_column(SnapSource *snap, const char *col, FlowDef *f)
{
	Relation	rel;
	TupleDesc	desc;
	char	   *found = NULL;
	int			nfound = 0;

	if (snap->from)
		return pstrdup(col);
	rel = relation_open(snap->rel, AccessShareLock);
	desc = RelationGetDescr(rel);

	for (int i = 0; i < desc->natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, i);

		if (att->attisdropped)
			continue;
		if (strcmp(NameStr(att->attname), col) == 0)
		{
			found = pstrdup(col);
			nfound = 1;
			break;
		}
		if (pg_strcasecmp(NameStr(att->attname), col) == 0)
		{
			found = pstrdup(NameStr(att->attname));
			nfound++;
		}
	}
	relation_close(rel, AccessShareLock);
	if (nfound != 1)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_COLUMN),
				 errmsg("snapshot \"%s\" of flow \"%s\" has %s column \"%s\"",
						get_rel_name(snap->rel), f->name, nfound ? "more than one" : "no", col),
				 errdetail("A snapshot has every column of the target but the history columns.")));
	return found;
}

/*
 * "s.col[::type]" for target column `col`; a key also in the target key's
 * collation, which matches keys as the target's unique index does.
 */
static char *
snap_value(SnapSource *snap, FlowDef *f, const char *col)
{
	StringInfoData buf;
	char	   *scol = snapshot_column(snap, col, f);
	/* a query's result types are known to its analysis only: cast always */
	Oid			stype = snap->from ? InvalidOid : get_atttype(snap->rel, get_attnum(snap->rel, scol));
	Oid			ttype = acdc_target_type(f, col);

	initStringInfo(&buf);
	appendStringInfo(&buf, "s.%s", quote_identifier(scol));
	if (stype != ttype)
		appendStringInfo(&buf, "::%s", format_type_be_qualified(acdc_typmod_cast_type(ttype)));
	if (acdc_list_has_string(f->keys, col))
		acdc_append_collate(&buf, acdc_column_collation(f->target, col));
	return buf.data;
}

/* "s.col[::type] AS col" for target column `col`. */
static void
append_snap_column(StringInfo sql, SnapSource *snap, FlowDef *f, const char *col)
{
	appendStringInfo(sql, "%s AS %s", snap_value(snap, f, col), quote_identifier(col));
}

/* Two rows with one key in a snapshot are an error. */
static void
check_unique_keys(FlowDef *f, SnapSource *snap)
{
	StringInfoData sql,
				keys,
				keytext;
	ListCell   *lc;

	initStringInfo(&sql);
	initStringInfo(&keys);
	initStringInfo(&keytext);
	appendStringInfoString(&keytext, "pg_catalog.concat_ws(', '");
	foreach(lc, f->keys)
	{
		char	   *key = snap_value(snap, f, lfirst(lc));

		appendStringInfo(&keys, "%s%s", keys.len ? ", " : "", key);
		appendStringInfo(&keytext, ", COALESCE((%s)::pg_catalog.text, 'NULL')", key);
	}
	appendStringInfoChar(&keytext, ')');
	appendStringInfo(&sql, "SELECT %s, pg_catalog.count(*) FROM %s s GROUP BY %s "
					 "HAVING pg_catalog.count(*) OPERATOR(pg_catalog.>) 1 LIMIT 1",
					 keytext.data, snap_from(snap), keys.data);
	acdc_spi_exec(sql.data, 0, NULL, NULL, NULL, false);
	if (SPI_processed > 0)
	{
		resetStringInfo(&keys);
		acdc_append_column_list(&keys, f->keys, NULL);
		ereport(ERROR,
				(errcode(ERRCODE_UNIQUE_VIOLATION),
				 errmsg("snapshot \"%s\" of flow \"%s\" has %s rows for key (%s)=(%s)",
						snap_label(snap), f->name, acdc_spi_value(0, 2), keys.data, acdc_spi_value(0, 1)),
				 errdetail("A snapshot holds at most one row per key.")));
	}
}

/* The snapshot as events (see the header comment). */
static char *
snapshot_events(FlowDef *f, SnapSource *snap, const char *version)
{
	StringInfoData sql;
	ListCell   *lc;
	char	   *v = psprintf("%s::%s", quote_literal_cstr(version),
							 acdc_type_qualified_name(f->seq_type));
	List	   *all = list_concat_copy(f->keys, f->columns);

	if (type_is_collatable(f->seq_type))
	{
		initStringInfo(&sql);
		appendStringInfoString(&sql, v);
		acdc_append_collate(&sql, acdc_state_seq_collation(f->state, f->scd_type));
		v = sql.data;
	}
	initStringInfo(&sql);
	appendStringInfoString(&sql, "SELECT ");
	foreach(lc, all)
	{
		append_snap_column(&sql, snap, f, lfirst(lc));
		if (foreach_current_index(lc) == list_length(f->keys) - 1)
			appendStringInfo(&sql, ", %s AS __autocdc_seq, 'u'::pg_catalog.text AS __autocdc_kind", v);
		if (lnext(all, lc))
			appendStringInfoString(&sql, ", ");
	}
	appendStringInfo(&sql, " FROM %s s UNION ALL SELECT ", snap_from(snap));
	foreach(lc, all)
	{
		bool		key = foreach_current_index(lc) < list_length(f->keys);
		const char *q = quote_identifier(lfirst(lc));

		if (key && f->scd_type == 2)
			appendStringInfo(&sql, "t.%s", q);
		else
			appendStringInfo(&sql, "NULL::%s",
							 format_type_be_qualified(acdc_typmod_cast_type(acdc_target_type(f, lfirst(lc)))));
		if (foreach_current_index(lc) == list_length(f->keys) - 1)
			appendStringInfo(&sql, ", %s, %s", v, f->scd_type == 2 ? "'d'::pg_catalog.text" : "'t'::pg_catalog.text");
		if (lnext(all, lc))
			appendStringInfoString(&sql, ", ");
	}
	if (f->scd_type == 2)
	{
		appendStringInfo(&sql, " FROM %s t WHERE t.__end_at IS NULL AND NOT EXISTS (SELECT 1 FROM %s s WHERE ",
						 acdc_rel_qualified_name(f->target), snap_from(snap));
		foreach(lc, f->keys)
		{
			if (foreach_current_index(lc) > 0)
				appendStringInfoString(&sql, " AND ");
			acdc_append_seq_cmp(&sql, snap_value(snap, f, lfirst(lc)),
						   "=", psprintf("t.%s", quote_identifier(lfirst(lc))),
						   acdc_target_type(f, lfirst(lc)));
		}
		appendStringInfoChar(&sql, ')');
	}
	return sql.data;
}

/* Applies one snapshot; returns the SCD 1 truncate mark after it. */
static char *
apply_one(FlowDef *f, SnapSource *snap, const char *version, FlowCounts *total)
{
	ReadParams	p;
	FlowCounts	counts = {0};
	char	   *new_t = NULL;

	if (!snap->from && (!OidIsValid(snap->rel) || get_rel_name(snap->rel) == NULL))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_TABLE),
				 errmsg("snapshot %s of flow \"%s\" does not exist", version, f->name)));
	acdc_progress_phase(ACDC_PHASE_SNAPSHOT_CHECK);
	check_unique_keys(f, snap);
	memset(&p, 0, sizeof(p));
	p.events_sql = snapshot_events(f, snap, version);
	p.truncate_seq = f->truncate_seq;
	if (f->scd_type == 2)
		acdc_scd2_apply(f, &p, &counts);
	else
	{
		new_t = acdc_scd1_apply(f, &p, &counts);
		f->truncate_seq = new_t;
		counts.read -= 1;		/* the truncate row is not a source row */
		acdc_progress_add_events(-1);
	}
	total->read += counts.read;
	total->upserted += counts.upserted;
	total->deleted += counts.deleted;
	total->skipped += counts.skipped;
	total->dropped += counts.dropped;
	return new_t;
}

/* The source function's qualified name, resolved from its stored signature. */
static char *
source_function_name(FlowDef *f)
{
	Oid			argtypes[1] = {TEXTOID};
	Datum		values[1] = {CStringGetTextDatum(f->source_function)};
	bool		isnull;
	Oid			fn;

	acdc_spi_exec("SELECT pg_catalog.to_regprocedure($1)::pg_catalog.oid", 1, argtypes, values, NULL, false);
	fn = DatumGetObjectId(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
	if (isnull)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_FUNCTION),
				 errmsg("source function %s of flow \"%s\" does not exist any more",
						f->source_function, f->name),
				 errhint("Create it again with the same signature, or drop the flow.")));
	return quote_qualified_identifier(get_namespace_name(get_func_namespace(fn)),
									  get_func_name(fn));
}

/* "$1::type [COLLATE ...]": a version as the target orders them. */
static char *
version_param(FlowDef *f)
{
	StringInfoData buf;

	initStringInfo(&buf);
	appendStringInfo(&buf, "$1::%s", acdc_type_qualified_name(f->seq_type));
	if (type_is_collatable(f->seq_type))
		acdc_append_collate(&buf, acdc_state_seq_collation(f->state, f->scd_type));
	return buf.data;
}

/*
 * A version query gives the next version (no row or NULL: the run ends), the
 * snapshot query that version's snapshot (source_query.c), until no
 * newer version comes.
 */
static char *
apply_by_version_query(FlowDef *f, char *latest, FlowCounts *counts)
{
	char	   *seqtype = acdc_type_qualified_name(f->seq_type);

	for (;;)
	{
		Oid			argtypes[1] = {TEXTOID};
		Datum		values[1];
		char		nulls[1] = {' '};
		char	   *version;
		SnapSource	snap = {InvalidOid, NULL};

		CHECK_FOR_INTERRUPTS();
		acdc_progress_phase(ACDC_PHASE_SNAPSHOT_CALL);
		values[0] = latest ? CStringGetTextDatum(latest) : (Datum) 0;
		if (!latest)
			nulls[0] = 'n';
		acdc_spi_exec(psprintf("SELECT v.v, $1::%s IS NULL OR v.v OPERATOR(pg_catalog.>) %s "
							   "FROM %s AS v(v)", seqtype, version_param(f),
							   acdc_sq_from(InvalidOid, f->version_query, NULL, f->seq_type,
											NULL, latest)),
					  1, argtypes, values, nulls, false);
		if (SPI_processed == 0)
			return latest;
		if (SPI_processed > 1)
			ereport(ERROR,
					(errcode(ERRCODE_CARDINALITY_VIOLATION),
					 errmsg("version_query of flow \"%s\" returned more than one version", f->name),
					 errdetail("It returns the next version only, or no row when there is none."),
					 errhint("End it with ORDER BY version LIMIT 1.")));
		version = acdc_spi_value_canonical(0, 1);
		if (version == NULL)
			return latest;		/* SELECT min(v) ... over no newer version */
		if (!acdc_spi_bool(0, 2))
		{
			ereport(NOTICE,
					(errmsg("flow \"%s\": snapshot version %s is not newer than %s, skipped",
							f->name, version, latest)));
			return latest;
		}
		snap.from = acdc_sq_from(InvalidOid, f->source_query, NULL, f->seq_type, version, latest);
		apply_one(f, &snap, version, counts);
		latest = version;
	}
}

/*
 * Applies the flow's next snapshots, in version order.  Runs as the flow's
 * owner.  Returns the last version applied (the checkpoint's when none was).
 */
char *
acdc_snapshot_apply(FlowDef *f, bool refresh, FlowCounts *counts)
{
	char	   *latest = refresh ? NULL : f->ckpt_version;
	char	   *seqtype = acdc_type_qualified_name(f->seq_type);
	char	   *fname;
	StringInfoData newer;

	if (f->version_query)
		return apply_by_version_query(f, latest, counts);
	if (OidIsValid(f->source) || f->source_query)
	{
		char	   *version = latest ? psprintf(INT64_FORMAT, pg_strtoint64(latest) + 1) : "0";
		SnapSource	snap = {f->source, NULL};

		if (f->source_query)
			snap.from = acdc_sq_from(InvalidOid, f->source_query, NULL, f->seq_type,
									 version, latest);
		apply_one(f, &snap, version, counts);
		return version;
	}

	fname = source_function_name(f);
	for (;;)
	{
		Oid			argtypes[1] = {TEXTOID};
		Datum		values[1];
		char		nulls[1] = {' '};
		bool		isnull;
		Oid			snap;
		char	   *version;

		CHECK_FOR_INTERRUPTS();
		acdc_progress_phase(ACDC_PHASE_SNAPSHOT_CALL);
		values[0] = latest ? CStringGetTextDatum(latest) : (Datum) 0;
		if (!latest)
			nulls[0] = 'n';
		/* newer in the target's ordering (collation.c) */
		initStringInfo(&newer);
		appendStringInfo(&newer, "$1::%s", seqtype);
		if (type_is_collatable(f->seq_type))
			acdc_append_collate(&newer, acdc_state_seq_collation(f->state, f->scd_type));
		acdc_spi_exec(psprintf("SELECT s.snapshot, s.version, "
						  "$1::%s IS NULL OR s.version OPERATOR(pg_catalog.>) %s "
						  "FROM %s($1::%s) AS s(snapshot, version)",
						  seqtype, newer.data, fname, seqtype),
				 1, argtypes, values, nulls, false);
		if (SPI_processed == 0)
		{
			if (latest == NULL)
				ereport(ERROR,
						(errcode(ERRCODE_NO_DATA_FOUND),
						 errmsg("source function of flow \"%s\" returned no snapshot before the first one was applied",
								f->name),
						 errhint("The function must return the first snapshot when called with NULL.")));
			return latest;
		}
		if (SPI_processed > 1)
			ereport(ERROR,
					(errcode(ERRCODE_CARDINALITY_VIOLATION),
					 errmsg("source function of flow \"%s\" returned more than one snapshot", f->name),
					 errdetail("It returns the next snapshot only, or no row when there is none.")));
		snap = DatumGetObjectId(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
		version = acdc_spi_value_canonical(0, 2);
		if (isnull || version == NULL)
			ereport(ERROR,
					(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
					 errmsg("source function of flow \"%s\" returned a NULL %s", f->name,
							isnull ? "snapshot" : "version")));
		if (!acdc_spi_bool(0, 3))
		{
			ereport(NOTICE,
					(errmsg("flow \"%s\": snapshot version %s is not newer than %s, skipped",
							f->name, version, latest)));
			return latest;
		}
		{
			SnapSource	source = {snap, NULL};

			apply_one(f, &source, version, counts);
		}
		latest = version;
	}
}
