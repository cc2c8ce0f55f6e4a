/*-------------------------------------------------------------------------
 * catalog.c
 *	  What a run reads and writes of autocdc's catalog: its flows (flow,
 *	  target), their checkpoints, the event log, the lineage; and
 *	  autocdc.source_progress.  The rest of the catalog's statements are in
 *	  catalog_define.c and catalog_run.c (catalog.h).  Statements run as
 *	  the extension owner; callers check the user's rights before.
 *-------------------------------------------------------------------------
 */
#include "catalog.h"
#include "expect.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/stratnum.h"
#include "access/table.h"
#include "access/xact.h"
#include "catalog/pg_extension.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/rel.h"
#include "utils/resowner.h"

static List *
array_col(int row, int col)
{
	bool		isnull;
	Datum		d = SPI_getbinval(SPI_tuptable->vals[row],
								  SPI_tuptable->tupdesc, col, &isnull);

	return isnull ? NIL : acdc_text_array_to_list(d);
}

/* A text[] column, copied out of the result (NULL for SQL NULL). */
static ArrayType *
settings_col(int row, int col)
{
	bool		isnull;
	Datum		d = SPI_getbinval(SPI_tuptable->vals[row],
								  SPI_tuptable->tupdesc, col, &isnull);

	return isnull ? NULL : DatumGetArrayTypePCopy(d);
}

static Oid
oid_col(int row, int col)
{
	bool		isnull;
	Datum		d = SPI_getbinval(SPI_tuptable->vals[row],
								  SPI_tuptable->tupdesc, col, &isnull);

	return isnull ? InvalidOid : DatumGetObjectId(d);
}

/*
 * Refuses a catalog made by an older script: the library is replaced at
 * once for every database, while each database's catalog changes only with
 * ALTER EXTENSION autocdc UPDATE, and running against the old one would
 * fail halfway, on some missing column.
 */
void
acdc_catalog_check_version(void)
{
	char	   *version = autocdc_extension_version();

	if (version != NULL && strcmp(version, AUTOCDC_CATALOG_VERSION) != 0)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("autocdc's catalog is at version %s", version),
				 errdetail("The installed autocdc library needs version %s.",
						   AUTOCDC_CATALOG_VERSION),
				 errhint("Run ALTER EXTENSION autocdc UPDATE.")));
}

/* The names autocdc.flow.kind and autocdc.target.kind hold, by FlowKind. */
static const char *const flow_kind_names[] = {
	[FLOW_AUTO_CDC] = "auto_cdc",
	[FLOW_SNAPSHOT] = "snapshot",
	[FLOW_APPEND] = "append",
};

/* The kind a catalog row names (its CHECK constraint allows no other). */
FlowKind
acdc_catalog_flow_kind(const char *name)
{
	for (int k = 0; k < (int) lengthof(flow_kind_names); k++)
		if (strcmp(name, flow_kind_names[k]) == 0)
			return (FlowKind) k;
	elog(ERROR, "unknown flow kind \"%s\" in autocdc's catalog", name);
	pg_unreachable();
}

const char *
acdc_catalog_flow_kind_name(FlowKind kind)
{
	Assert((int) kind >= 0 && (int) kind < (int) lengthof(flow_kind_names));
	return flow_kind_names[kind];
}

/*
 * Flows of one pipeline (or of every pipeline when NULL), optionally only
 * the named ones, ordered by name.  Checkpoints are not loaded here: they
 * are read under lock by acdc_catalog_lock_checkpoint.
 */
List *
acdc_catalog_load_flows(const char *pipeline, List *flow_names)
{
	Oid			argtypes[2] = {TEXTOID, TEXTARRAYOID};
	Datum		values[2];
	char		nulls[2] = {' ', ' '};
	List	   *result = NIL;

	acdc_catalog_check_version();
	values[0] = pipeline ? CStringGetTextDatum(pipeline) : (Datum) 0;
	if (!pipeline)
		nulls[0] = 'n';
	values[1] = flow_names ? acdc_list_to_text_array(flow_names) : (Datum) 0;
	if (!flow_names)
		nulls[1] = 'n';

	acdc_catalog_exec("SELECT f.name, f.pipeline, f.owner::pg_catalog.oid, "
				 "       f.target::pg_catalog.oid, f.source::pg_catalog.oid, "
				 "       f.stored_as_scd_type, f.keys, f.columns, "
				 "       f.ignore_null_columns, f.sequence_by, "
				 "       f.apply_as_deletes, f.apply_as_truncates, f.once, "
				 "       f.read_mode OPERATOR(pg_catalog.=) 'incremental', "
				 "       t.state_table::pg_catalog.oid, "
				 "       t.sequence_type::pg_catalog.oid, t.track_columns, f.kind, "
				 "       f.source_function, f.expression_objects, f.settings, "
				 "       f.on_bad_event OPERATOR(pg_catalog.=) 'quarantine', "
				 "       f.source_query, f.version_query, f.columns_to_update "
				 "  FROM autocdc.flow f "
				 "  JOIN autocdc.target t ON t.target OPERATOR(pg_catalog.=) f.target "
				 " WHERE ($1 IS NULL OR f.pipeline OPERATOR(pg_catalog.=) $1) "
				 "   AND ($2 IS NULL OR f.name OPERATOR(pg_catalog.=) ANY ($2)) "
				 " ORDER BY f.name",
				 2, argtypes, values, nulls);

	for (uint64 i = 0; i < SPI_processed; i++)
	{
		FlowDef    *f = palloc0(sizeof(FlowDef));
		bool		isnull;

		f->name = acdc_spi_value(i, 1);
		f->pipeline = acdc_spi_value(i, 2);
		f->owner = oid_col(i, 3);
		f->target = oid_col(i, 4);
		f->source = oid_col(i, 5);
		f->scd_type = DatumGetInt32(SPI_getbinval(SPI_tuptable->vals[i],
												  SPI_tuptable->tupdesc, 6,
												  &isnull));
		f->keys = array_col(i, 7);
		f->columns = array_col(i, 8);
		f->ignore_null = array_col(i, 9);
		f->sequence_by = acdc_spi_value(i, 10);
		f->deletes = acdc_spi_value(i, 11);
		f->truncates = acdc_spi_value(i, 12);
		f->once = acdc_spi_bool(i, 13);
		f->incremental = acdc_spi_bool(i, 14);
		f->state = oid_col(i, 15);
		f->seq_type = oid_col(i, 16);
		f->track_columns = array_col(i, 17);
		f->kind = acdc_catalog_flow_kind(acdc_spi_value(i, 18));
		f->source_function = acdc_spi_value(i, 19);
		f->expression_objects = array_col(i, 20);
		f->expression_objects_unset = acdc_spi_value(i, 20) == NULL;
		f->settings = settings_col(i, 21);
		f->quarantine_bad = acdc_spi_bool(i, 22);
		f->source_query = acdc_spi_value(i, 23);
		f->version_query = acdc_spi_value(i, 24);
		f->columns_to_update = acdc_spi_value(i, 25);
		result = lappend(result, f);
	}
	acdc_expect_load(result);
	return result;
}

/*
 * Locks the flow's checkpoint row until the end of the transaction and
 * loads it.  Under
 * REPEATABLE READ a checkpoint moved by a concurrent run is a
 * serialization failure, so a stale checkpoint is never used.
 *
 * A checkpoint is foreign when it was taken in a cluster this database's
 * files never lived in: autocdc.lineage, which pg_dump leaves out, lists
 * the clusters they did (the one CREATE EXTENSION ran in, and those
 * pg_upgrade carried them to, recorded by runs).  A restore elsewhere
 * starts it anew; pg_upgrade keeps transaction ids, and the list.  A
 * checkpoint ahead of every transaction here is foreign too (one from
 * 0.1.0 names no cluster).
 */
void
acdc_catalog_lock_checkpoint(FlowDef *flow)
{
	Oid			argtypes[1] = {TEXTOID};
	Datum		values[1] = {CStringGetTextDatum(flow->name)};

	acdc_catalog_exec("SELECT c.snapshot::pg_catalog.text, c.own_xid::pg_catalog.text, "
				 "       c.own_cid::pg_catalog.text, c.once_done_at IS NOT NULL, c.snapshot_version, "
				 "       c.cluster_id::pg_catalog.text, "
				 "       CASE WHEN c.cluster_id OPERATOR(pg_catalog.<>) ALL "
				 "                 (SELECT l.system_identifier FROM autocdc.lineage l) THEN 'cluster' "
				 "            WHEN pg_catalog.pg_snapshot_xmax(c.snapshot) OPERATOR(pg_catalog.>) "
				 "                 pg_catalog.pg_snapshot_xmax(pg_catalog.pg_current_snapshot()) THEN 'ahead' END "
				 "  FROM autocdc.checkpoint c "
				 " WHERE c.flow OPERATOR(pg_catalog.=) $1 FOR UPDATE",
				 1, argtypes, values, NULL);
	if (SPI_processed != 1)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("flow \"%s\" was dropped while the run started", flow->name)));
	flow->ckpt_snapshot = acdc_spi_value(0, 1);
	flow->ckpt_own_xid = acdc_spi_value(0, 2);
	flow->ckpt_own_cid = acdc_spi_value(0, 3);
	flow->once_done = acdc_spi_bool(0, 4);
	flow->ckpt_version = acdc_spi_value(0, 5);
	flow->ckpt_cluster = acdc_spi_value(0, 6);
	flow->ckpt_foreign = acdc_spi_value(0, 7);
}

/*
 * What the flows into the target share and may have changed since the flow
 * was loaded: the columns the state tracks and the truncate mark.  Read once
 * the target is locked, which every writer of them holds.
 */
void
acdc_catalog_load_target_state(FlowDef *flow)
{
	Oid			argtypes[1] = {OIDOID};
	Datum		values[1] = {ObjectIdGetDatum(flow->target)};

	acdc_catalog_exec("SELECT partial_columns, truncate_seq, "
				 "       pg_catalog.date_part('epoch', tombstone_retention), "
				 "       sequence_in_target, held_rows, "
				 "       COALESCE(pg_catalog.date_part('epoch', pg_catalog.now() "
				 "                OPERATOR(pg_catalog.-) tombstones_purged_at), -1) "
				 "  FROM autocdc.target "
				 " WHERE target OPERATOR(pg_catalog.=) $1::pg_catalog.regclass",
				 1, argtypes, values, NULL);
	if (SPI_processed != 1)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("target of flow \"%s\" was dropped while the run started", flow->name)));
	flow->state_partial = array_col(0, 1);
	flow->truncate_seq = acdc_spi_value(0, 2);
	{
		bool		isnull;
		Datum		d = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 3, &isnull);

		/* NULL: the server-wide setting (-1 there keeps them forever) */
		flow->tombstone_retention_s = isnull ? (double) autocdc_tombstone_retention_s
			: DatumGetFloat8(d);
	}
	flow->seq_in_target = acdc_spi_bool(0, 4);
	flow->held_rows = acdc_spi_bool(0, 5);
	{
		bool		isnull;

		flow->purge_age_s = DatumGetFloat8(SPI_getbinval(SPI_tuptable->vals[0],
														 SPI_tuptable->tupdesc, 6, &isnull));
	}
	flow->purged = false;
}

void
acdc_catalog_save_checkpoint(FlowDef *flow, const char *snapshot,
						const char *own_xid, int64 own_cid, const char *version)
{
	Oid			argtypes[8] = {TEXTOID, TEXTOID, TEXTOID, INT8OID, BOOLOID, TEXTOID,
	OIDOID, INT8OID};
	Datum		values[8];
	char		nulls[8] = {' ', ' ', ' ', ' ', ' ', ' ', ' ', ' '};

	values[0] = CStringGetTextDatum(flow->name);
	values[1] = CStringGetTextDatum(snapshot);
	if (own_xid)
		values[2] = CStringGetTextDatum(own_xid);
	else
		nulls[2] = 'n';
	values[3] = Int64GetDatum(own_cid);
	values[4] = BoolGetDatum(flow->once);
	if (version)
		values[5] = CStringGetTextDatum(version);
	else
		nulls[5] = 'n';
	values[6] = ObjectIdGetDatum(flow->source);
	values[7] = Int64GetDatum(autocdc_system_identifier());
	if (!flow->incremental)
		nulls[6] = nulls[7] = 'n';
	/* after pg_upgrade, the first write here adds this cluster to the lineage */
	acdc_catalog_exec("WITH lineage AS ("
				 " INSERT INTO autocdc.lineage (system_identifier) "
				 " SELECT $8 WHERE $8 IS NOT NULL ON CONFLICT DO NOTHING) "
				 "UPDATE autocdc.checkpoint "
				 "   SET snapshot = autocdc._checkpoint_snapshot($2::pg_catalog.pg_snapshot, $3::pg_catalog.xid8), "
				 "       own_xid = $3::pg_catalog.xid8, own_cid = $4, "
				 "       once_done_at = CASE WHEN $5 THEN pg_catalog.now() END, "
				 "       snapshot_version = $6, source_oid = $7, cluster_id = $8 "
				 " WHERE flow OPERATOR(pg_catalog.=) $1",
				 8, argtypes, values, nulls);
}

/*
 * Adds this cluster to autocdc.lineage when it is not there yet (after
 * pg_upgrade): what is written from now on is this cluster's.
 */
void
acdc_catalog_note_cluster(void)
{
	Oid			argtypes[1] = {INT8OID};
	Datum		values[1] = {Int64GetDatum(autocdc_system_identifier())};

	acdc_catalog_exec("INSERT INTO autocdc.lineage (system_identifier) VALUES ($1) "
				 "ON CONFLICT DO NOTHING",
				 1, argtypes, values, NULL);
}

/* Forgets every read position, ONCE mark and truncate of a target. */
void
acdc_catalog_reset_target(Oid target)
{
	Oid			argtypes[1] = {OIDOID};
	Datum		values[1] = {ObjectIdGetDatum(target)};

	acdc_catalog_exec("UPDATE autocdc.checkpoint c "
				 "   SET snapshot = NULL, own_xid = NULL, own_cid = NULL, once_done_at = NULL, "
				 "       snapshot_version = NULL "
				 "  FROM autocdc.flow f "
				 " WHERE f.name OPERATOR(pg_catalog.=) c.flow "
				 "   AND f.target OPERATOR(pg_catalog.=) $1::pg_catalog.regclass",
				 1, argtypes, values, NULL);
	acdc_catalog_exec("UPDATE autocdc.target SET truncate_seq = NULL, held_rows = false "
				 " WHERE target OPERATOR(pg_catalog.=) $1::pg_catalog.regclass",
				 1, argtypes, values, NULL);
}

void
acdc_catalog_set_truncate_seq(Oid target, const char *seq)
{
	Oid			argtypes[2] = {OIDOID, TEXTOID};
	Datum		values[2] = {ObjectIdGetDatum(target), CStringGetTextDatum(seq)};

	acdc_catalog_exec("UPDATE autocdc.target SET truncate_seq = $2 "
				 " WHERE target OPERATOR(pg_catalog.=) $1::pg_catalog.regclass",
				 2, argtypes, values, NULL);
}

void
acdc_catalog_set_tombstones_purged(Oid target)
{
	Oid			argtypes[1] = {OIDOID};
	Datum		values[1] = {ObjectIdGetDatum(target)};

	acdc_catalog_exec("UPDATE autocdc.target SET tombstones_purged_at = pg_catalog.now() "
				 " WHERE target OPERATOR(pg_catalog.=) $1::pg_catalog.regclass",
				 1, argtypes, values, NULL);
}

void
acdc_catalog_set_held_rows(Oid target, bool held)
{
	Oid			argtypes[2] = {OIDOID, BOOLOID};
	Datum		values[2] = {ObjectIdGetDatum(target), BoolGetDatum(held)};

	acdc_catalog_exec("UPDATE autocdc.target SET held_rows = $2 "
				 " WHERE target OPERATOR(pg_catalog.=) $1::pg_catalog.regclass",
				 2, argtypes, values, NULL);
}

/*
 * An empty run (it read nothing and did not fail, a ONCE flow's skipped
 * run included; never a full refresh) is left out of the log unless
 * autocdc.log_empty_runs: idle continuous pipelines would fill it.
 */
static bool
run_is_logged(bool full_refresh, FlowCounts *counts, const char *status)
{
	return autocdc_log_empty_runs || full_refresh || counts->read > 0 ||
		strcmp(status, "failed") == 0;
}

/*
 * Records a flow's run: a row of autocdc.event_log (unless the run was
 * empty) and, in the same statement, the flow's last run and running totals
 * in its checkpoint row, which outlive the log's pruning.  Called after the
 * flow's subtransaction, so a failed run is recorded too.
 */
void
acdc_catalog_log_event(int64 run_id, FlowDef *flow, bool full_refresh,
				  FlowCounts *counts, const char *status, const char *error,
				  double seconds)
{
	Oid			argtypes[20] = {INT8OID, TEXTOID, TEXTOID, OIDOID, TEXTOID,
		BOOLOID, INT8OID, INT8OID, INT8OID, INT8OID, TEXTOID, TEXTOID,
	FLOAT8OID, OIDOID, TEXTOID, BOOLOID, OIDOID, INT8OID, INT8OID, TEXTOID};
	Datum		values[20];
	char		nulls[20];
	/* a failed run applied nothing: its counts are not data-quality metrics */
	char	   *quality = strcmp(status, "success") == 0 ? acdc_expect_counts_json(flow) : NULL;

	memset(nulls, ' ', sizeof(nulls));
	values[0] = Int64GetDatum(run_id);
	values[1] = CStringGetTextDatum(flow->pipeline);
	values[2] = CStringGetTextDatum(flow->name);
	values[3] = ObjectIdGetDatum(flow->target);
	values[4] = CStringGetTextDatum(flow->incremental && !flow->once ? "incremental" : "full");
	values[14] = CStringGetTextDatum(acdc_catalog_flow_kind_name(flow->kind));
	values[5] = BoolGetDatum(full_refresh);
	values[6] = Int64GetDatum(counts->read);
	values[7] = Int64GetDatum(counts->upserted);
	values[8] = Int64GetDatum(counts->deleted);
	values[9] = Int64GetDatum(counts->skipped);
	values[10] = CStringGetTextDatum(status);
	if (error)
		values[11] = CStringGetTextDatum(error);
	else
		nulls[11] = 'n';
	values[12] = Float8GetDatum(seconds);
	values[13] = ObjectIdGetDatum(GetUserId());
	values[15] = BoolGetDatum(run_is_logged(full_refresh, counts, status));
	values[16] = ObjectIdGetDatum(flow->owner);
	values[17] = Int64GetDatum(counts->dropped);
	values[18] = Int64GetDatum(counts->quarantined);
	values[19] = quality ? CStringGetTextDatum(quality) : (Datum) 0;
	nulls[19] = quality ? ' ' : 'n';

	acdc_catalog_exec("WITH logged AS ("
				 " INSERT INTO autocdc.event_log (run_id, pipeline, flow, target, kind, "
				 "  read_mode, full_refresh, rows_read, rows_upserted, rows_deleted, "
				 "  rows_skipped, rows_dropped, status, error, duration, run_by, flow_owner, pipeline_owner, "
				 "  rows_quarantined, expectations) "
				 " SELECT $1, $2, $3, $4::pg_catalog.regclass::pg_catalog.text, $15, $5, $6, $7, $8, $9, "
				 "  $10, $18, $11, $12, pg_catalog.make_interval(secs => $13), $14::pg_catalog.regrole, "
				 "  $17::pg_catalog.regrole, "
				 "  COALESCE((SELECT p.owner FROM autocdc.pipeline p WHERE p.name OPERATOR(pg_catalog.=) $2), "
				 "           $17::pg_catalog.regrole), "
				 "  $19, $20::pg_catalog.jsonb "
				 "  WHERE $16 "
				 " RETURNING logged_at) "
				 "UPDATE autocdc.checkpoint SET "
				 "  last_run_at = COALESCE((SELECT logged_at FROM logged), pg_catalog.clock_timestamp()), "
				 "  last_status = $11, last_error = $12, last_rows_read = $7, "
				 "  runs = runs OPERATOR(pg_catalog.+) 1, "
				 "  rows_read_total = rows_read_total OPERATOR(pg_catalog.+) $7, "
				 "  rows_upserted_total = rows_upserted_total OPERATOR(pg_catalog.+) $8, "
				 "  rows_deleted_total = rows_deleted_total OPERATOR(pg_catalog.+) $9, "
				 "  rows_skipped_total = rows_skipped_total OPERATOR(pg_catalog.+) $10, "
				 "  failures_total = failures_total OPERATOR(pg_catalog.+) "
				 "    CASE WHEN $11 OPERATOR(pg_catalog.=) 'failed' THEN 1 ELSE 0 END "
				 " WHERE flow OPERATOR(pg_catalog.=) $3",
				 20, argtypes, values, nulls);
}

/*
 * Rows of autocdc.event_log and autocdc.run_history older than
 * autocdc.event_log_retention are deleted, at most this many of each per
 * call, so that a run or a scheduler pass does bounded work however much
 * has piled up.
 */
#define EVENT_LOG_PRUNE_BATCH 1000

static void
prune_event_log_batch(void *unused)
{
	Oid			argtypes[2] = {FLOAT8OID, INT4OID};
	Datum		values[2];

	acdc_quarantine_prune();
	if (autocdc_event_log_retention_s < 0)
		return;
	values[0] = Float8GetDatum((double) autocdc_event_log_retention_s);
	values[1] = Int32GetDatum(EVENT_LOG_PRUNE_BATCH);
	acdc_catalog_exec("WITH old AS ("
				 " SELECT id FROM autocdc.event_log "
				 "  WHERE logged_at OPERATOR(pg_catalog.<) "
				 "        (pg_catalog.now() OPERATOR(pg_catalog.-) pg_catalog.make_interval(secs => $1)) "
				 "  ORDER BY logged_at LIMIT $2 FOR UPDATE SKIP LOCKED) "
				 "DELETE FROM autocdc.event_log e USING old "
				 " WHERE e.id OPERATOR(pg_catalog.=) old.id",
				 2, argtypes, values, NULL);
	/*
	 * The run history likewise, but for runs still going: a 'running' row
	 * goes only once its pipeline is gone or no longer leased to a run.
	 */
	acdc_catalog_exec("WITH old AS ("
				 " SELECT run_id, pipeline FROM autocdc.run_history h "
				 "  WHERE started_at OPERATOR(pg_catalog.<) "
				 "        (pg_catalog.now() OPERATOR(pg_catalog.-) pg_catalog.make_interval(secs => $1)) "
				 "    AND (status OPERATOR(pg_catalog.<>) 'running' OR NOT EXISTS "
				 "         (SELECT FROM autocdc.pipeline p WHERE p.name OPERATOR(pg_catalog.=) h.pipeline "
				 "             AND p.last_status OPERATOR(pg_catalog.=) 'running')) "
				 "  ORDER BY started_at LIMIT $2 FOR UPDATE SKIP LOCKED) "
				 "DELETE FROM autocdc.run_history h USING old "
				 " WHERE h.run_id OPERATOR(pg_catalog.=) old.run_id "
				 "   AND h.pipeline OPERATOR(pg_catalog.=) old.pipeline",
				 2, argtypes, values, NULL);
}

/*
 * Under REPEATABLE READ a row that a concurrent prune deleted after this
 * transaction's snapshot is a serialization failure: it would fail the
 * caller's run for the log's sake, so the batch is given up instead (the
 * rows are gone anyway, or will be at the next prune).
 */
/*
 * Deletes the oldest expired rows of the event log (called at the end of a
 * run, and by each scheduler pass).  Rows another transaction is deleting
 * are skipped rather than waited for.  A SERIALIZABLE transaction leaves
 * the log alone: its read of the old rows could make the caller's own
 * commit fail.
 */
void
acdc_catalog_prune_event_log(void)
{
	if ((autocdc_event_log_retention_s < 0 && autocdc_quarantine_retention_s < 0) ||
		IsolationIsSerializable())
		return;
	if (IsolationUsesXactSnapshot())
	{
		ErrorData  *edata = autocdc_try(prune_event_log_batch, NULL);

		if (edata && edata->sqlerrcode != ERRCODE_T_R_SERIALIZATION_FAILURE)
			ReThrowError(edata);
	}
	else
		prune_event_log_batch(NULL);
}

/*
 * The pipeline's owner, or InvalidOid when there is no such pipeline; its
 * id into *id unless id is NULL.
 */
Oid
acdc_catalog_pipeline_owner(const char *pipeline, int64 *id)
{
	Oid			argtypes[1] = {TEXTOID};
	Datum		values[1] = {CStringGetTextDatum(pipeline)};

	acdc_catalog_exec("SELECT owner::pg_catalog.oid, id FROM autocdc.pipeline "
				 " WHERE name OPERATOR(pg_catalog.=) $1",
				 1, argtypes, values, NULL);
	if (SPI_processed != 1)
		return InvalidOid;
	if (id)
		*id = acdc_spi_int64(0, 2);
	return oid_col(0, 1);
}

PG_FUNCTION_INFO_V1(autocdc_source_progress);

/*
 * autocdc.source_progress: per table source, the transaction below which
 * every flow over it has read every row (the least xmin of their
 * checkpoints, which keep a run's own transaction out of theirs).  NULL
 * while a flow has not run yet, and for sources a snapshot flow reads
 * whole.  Computed over every flow, as a prune must be safe for all; shown
 * to whoever sees one of the source's flows or has its owner's privileges.
 */
Datum
autocdc_source_progress(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	Oid			argtypes[1] = {OIDOID};
	Datum		values[1] = {ObjectIdGetDatum(GetUserId())};

	InitMaterializedSRF(fcinfo, 0);
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	acdc_catalog_exec("SELECT p.source, p.flows, p.read_below, "
				 "       pg_catalog.format('%I OPERATOR(pg_catalog.<) %L::pg_catalog.xid8', "
				 "                         '" AUTOCDC_XID_COLUMN "', p.read_below) "
				 "  FROM (SELECT s.source, pg_catalog.count(*) AS flows, r.relowner, "
				 "               CASE WHEN pg_catalog.bool_and(f.kind OPERATOR(pg_catalog.<>) 'snapshot' "
				 "                      AND f.read_mode OPERATOR(pg_catalog.=) 'incremental' "
				 "                      AND c.snapshot IS NOT NULL) "
				 "                    THEN pg_catalog.min(pg_catalog.pg_snapshot_xmin(c.snapshot)) END AS read_below, "
				 "               pg_catalog.bool_or(pg_catalog.pg_has_role($1, f.owner::pg_catalog.oid, 'USAGE')) AS sees "
				 /* a source's rows are read too by flows over its partitions and its parents */
				 "          FROM (SELECT DISTINCT source FROM autocdc.flow WHERE source IS NOT NULL) s "
				 "          JOIN pg_catalog.pg_class r ON r.oid OPERATOR(pg_catalog.=) s.source "
				 "           AND r.relkind OPERATOR(pg_catalog.=) ANY ('{r,p}'::pg_catalog.\"char\"[]) "
				 "          JOIN autocdc.flow f ON f.source OPERATOR(pg_catalog.=) s.source "
				 "            OR f.source::pg_catalog.oid OPERATOR(pg_catalog.=) ANY (ARRAY("
				 "                 SELECT a.relid::pg_catalog.oid FROM pg_catalog.pg_partition_ancestors(s.source) a "
				 "                 UNION SELECT t.relid::pg_catalog.oid FROM pg_catalog.pg_partition_tree(s.source) t)) "
				 "          LEFT JOIN autocdc.checkpoint c ON c.flow OPERATOR(pg_catalog.=) f.name "
				 "         GROUP BY s.source, r.relowner) p "
				 " WHERE p.sees OR pg_catalog.pg_has_role($1, p.relowner, 'USAGE') "
				 " ORDER BY p.source::pg_catalog.text",
				 1, argtypes, values, NULL);
	for (uint64 i = 0; i < SPI_processed; i++)
	{
		Datum		vals[4];
		bool		nulls[4];

		for (int c = 0; c < 4; c++)
			vals[c] = SPI_getbinval(SPI_tuptable->vals[i], SPI_tuptable->tupdesc,
									c + 1, &nulls[c]);
		nulls[3] = nulls[2];
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, vals, nulls);
	}
	SPI_finish();
	return (Datum) 0;
}
