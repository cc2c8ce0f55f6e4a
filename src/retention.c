/*-------------------------------------------------------------------------
 * retention.c
 *	  What a target forgets: SCD 2 tombstones after the target's retention,
 *	  and autocdc.compact(), which drops what late events older than a
 *	  horizon can no longer need.
 *
 * Nothing of a key's history crosses a delete (scd2_fold.c): a fold that starts
 * after a stored delete reads no event before it, and rewrites no version
 * before it.  So the events stored before a delete are needed only by a
 * late event older than that delete.  Forgetting them keeps the delete as
 * the key's floor (its __autocdc_stored_at set to NULL): an event older
 * than a floor, arriving later, is skipped (counted in rows_skipped), the
 * history before the floor stays as it is, and every event after it is
 * folded exactly as before.
 *
 * SCD 1 keeps a deleted key's tombstone in its state row; forgetting it
 * (the retention's purge in scd1_write.c, or compact) lets a later event older
 * than the delete bring the key back, as the README says.
 *-------------------------------------------------------------------------
 */
#include "catalog.h"
#include "retention.h"
#include "validate.h"

#include "access/htup_details.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"

PG_FUNCTION_INFO_V1(autocdc_compact);

/*
 * " AND EXISTS (a floor of e's key after e)": a later delete of the key
 * whose earlier events were dropped.
 */
static void
append_floor_after(StringInfo sql, FlowDef *f, const char *qevents, const char *e)
{
	appendStringInfo(sql, "EXISTS (SELECT 1 FROM %s s WHERE ", qevents);
	acdc_append_keys_match(sql, f, "s", e);
	appendStringInfoString(sql, " AND s.__autocdc_kind OPERATOR(pg_catalog.=) 'd' "
						   "AND s.__autocdc_stored_at IS NULL AND ");
	acdc_append_flow_seq_cmp(sql, f, "s.__autocdc_seq", ">", psprintf("%s.__autocdc_seq", e));
	appendStringInfoChar(sql, ')');
}

/*
 * Leaves out of an SCD 2 run's events those older than a floor of their
 * key, counted as read and skipped.  Only targets with a floor pay for the
 * lookup (an index probe per event, most finding nothing).
 */
void
acdc_scd2_skip_below_floors(FlowDef *f, ReadParams *p, StringInfo events,
					   FlowCounts *skipped)
{
	char	   *qevents = acdc_rel_qualified_name(f->state);
	StringInfoData sql;
	Oid			types[READ_NPARAMS];
	Datum		values[READ_NPARAMS];
	char		nulls[READ_NPARAMS];
	char	   *inner = pstrdup(events->data);

	acdc_spi_exec(psprintf("SELECT EXISTS (SELECT 1 FROM %s WHERE __autocdc_kind OPERATOR(pg_catalog.=) 'd' "
					  "AND __autocdc_stored_at IS NULL)", qevents),
			 0, NULL, NULL, NULL, false);
	if (!acdc_spi_bool(0, 1))
		return;

	initStringInfo(&sql);
	appendStringInfo(&sql, "SELECT pg_catalog.count(*) FROM (%s) e WHERE ", inner);
	append_floor_after(&sql, f, qevents, "e");
	acdc_read_params_arrays(p, types, values, nulls);
	acdc_spi_exec(sql.data, READ_NPARAMS, types, values, nulls, false);
	skipped->read += acdc_spi_int64(0, 1);
	skipped->skipped += acdc_spi_int64(0, 1);

	resetStringInfo(events);
	appendStringInfo(events, "SELECT e.* FROM (%s) e WHERE NOT ", inner);
	append_floor_after(events, f, qevents, "e");
}

/*
 * Makes the deletes that qualify floors: drops every stored event of their
 * key before the last of them, and marks it.  `which` selects the deletes
 * (over alias d).  Returns the events dropped; *floors gets the keys given
 * a new floor.
 */
static int64
drop_below_deletes(FlowDef *f, const char *which, int nargs, Oid *types,
				   Datum *values, int64 *floors)
{
	char	   *qevents = acdc_rel_qualified_name(f->state);
	char	   *keys = acdc_validate_prefixed_keys(f, "d");
	StringInfoData sql;
	int64		dropped;

	initStringInfo(&sql);
	appendStringInfo(&sql, "WITH b AS MATERIALIZED (SELECT DISTINCT ON (%s) %s, d.__autocdc_seq "
					 "FROM %s d WHERE d.__autocdc_kind OPERATOR(pg_catalog.=) 'd' AND %s "
					 "ORDER BY %s, d.__autocdc_seq DESC), "
					 "gone AS (DELETE FROM %s s USING b WHERE ",
					 keys, keys, qevents, which, keys, qevents);
	acdc_append_keys_match(&sql, f, "s", "b");
	appendStringInfoString(&sql, " AND ");
	acdc_append_flow_seq_cmp(&sql, f, "s.__autocdc_seq", "<", "b.__autocdc_seq");
	appendStringInfo(&sql, " RETURNING 1), marked AS (UPDATE %s s SET __autocdc_stored_at = NULL "
					 "FROM b WHERE ", qevents);
	acdc_append_keys_match(&sql, f, "s", "b");
	appendStringInfoString(&sql, " AND ");
	acdc_append_flow_seq_cmp(&sql, f, "s.__autocdc_seq", "=", "b.__autocdc_seq");
	appendStringInfoString(&sql, " AND s.__autocdc_stored_at IS NOT NULL RETURNING 1) "
						   "SELECT (SELECT pg_catalog.count(*) FROM gone), "
						   "(SELECT pg_catalog.count(*) FROM marked)");
	acdc_spi_exec(sql.data, nargs, types, values, NULL, false);
	dropped = acdc_spi_int64(0, 1);
	*floors = acdc_spi_int64(0, 2);
	return dropped;
}

/*
 * SCD 2 tombstones: the events before a delete stored longer ago than the
 * target's retention are forgotten, the delete kept as the key's floor.
 */
void
acdc_scd2_purge_tombstones(FlowDef *f)
{
	Oid			types[1] = {FLOAT8OID};
	Datum		values[1] = {Float8GetDatum(f->tombstone_retention_s)};
	int64		floors;

	if (f->tombstone_retention_s < 0)
		return;
	drop_below_deletes(f, "d.__autocdc_stored_at OPERATOR(pg_catalog.<) "
					   "(pg_catalog.now() OPERATOR(pg_catalog.-) pg_catalog.make_interval(secs => $1))",
					   1, types, values, &floors);
}

/* The target as compact needs it, or an error when it is not an AUTO CDC one. */
static FlowDef *
load_compact_target(Oid target)
{
	FlowDef    *f = palloc0(sizeof(FlowDef));

	if (!acdc_catalog_compact_target(target, f))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("\"%s\" is not the target of an AUTO CDC flow", get_rel_name(target)),
				 errdetail("Only SCD targets keep tombstones and events to compact.")));
	if (f->name == NULL)
		f->name = "compact";	/* named in hints */
	f->target = target;
	if (get_rel_name(f->state) == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("the auxiliary state of target \"%s\" was dropped", get_rel_name(target))));
	return f;
}

/*
 * autocdc.compact(target, before): forgets what no event at or after
 * `before` needs.  SCD 1: the state of dead keys whose events are all
 * older than `before` (their tombstones).
 * SCD 2: per key with a delete older than `before`, every stored event
 * before the last such delete, which becomes the key's floor.  Runs as the
 * target's owner, restricted, for a caller with that role's privileges;
 * the target is locked against runs.  Returns (keys_compacted, rows_dropped).
 */
Datum
autocdc_compact(PG_FUNCTION_ARGS)
{
	Oid			target = PG_GETARG_OID(0);
	char	   *before = text_to_cstring(PG_GETARG_TEXT_PP(1));
	TupleDesc	desc;
	Datum		result[2];
	bool		nulls[2] = {false, false};
	FlowDef    *f;
	UserSwitch	sw;
	Oid			owner;
	Oid			types[1];
	Datum		values[1];
	Oid			infunc,
				ioparam;
	const char *bval = "$1";
	int64		keys = 0,
				rows = 0;

	autocdc_refuse_within_flow("autocdc.compact()");
	if (get_call_result_type(fcinfo, NULL, &desc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");
	owner = autocdc_relation_owner(target);
	if (!has_privs_of_role(GetUserId(), owner))
		aclcheck_error(ACLCHECK_NOT_OWNER, OBJECT_TABLE, get_rel_name(target));
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	acdc_catalog_check_version();
	f = load_compact_target(target);
	if (f->scd_type == ACDC_BITEMPORAL)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("autocdc.compact() does not apply to bitemporal target \"%s\"", get_rel_name(target)),
				 errdetail("A bitemporal target keeps every event: a late event in system time may rewrite any belief.")));
	/* what the former owner attached to the state must not run as this one */
	f->run_as = owner;
	acdc_flow_require_aux_owned(f);

	/* read as the owner, who trusts the type (a domain's checks run) */
	autocdc_become(&sw, owner, true);
	getTypeInputInfo(f->seq_type, &infunc, &ioparam);
	types[0] = f->seq_type;
	values[0] = OidInputFunctionCall(infunc, before, ioparam, -1);
	acdc_spi_exec(psprintf("LOCK TABLE %s IN SHARE ROW EXCLUSIVE MODE",
					  acdc_rel_qualified_name(target)), 0, NULL, NULL, NULL, false);
	if (f->scd_type == 2)
	{
		StringInfoData which;

		initStringInfo(&which);
		acdc_append_flow_seq_cmp(&which, f, "d.__autocdc_seq", "<", bval);
		rows = drop_below_deletes(f, which.data, 1, types, values, &keys);
	}
	else
	{
		StringInfoData sql;

		initStringInfo(&sql);
		/* dead keys (deleted or truncated away) whose every event is older */
		appendStringInfo(&sql, "DELETE FROM %s s WHERE s.__autocdc_deleted_at IS NOT NULL AND ",
						 acdc_rel_qualified_name(f->state));
		acdc_append_flow_seq_cmp(&sql, f, "GREATEST(s.__autocdc_upsert_seq, s.__autocdc_delete_seq)", "<", bval);
		acdc_spi_exec(sql.data, 1, types, values, NULL, false);
		keys = rows = (int64) SPI_processed;
	}
	autocdc_unbecome(&sw);
	SPI_finish();

	result[0] = Int64GetDatum(keys);
	result[1] = Int64GetDatum(rows);
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(BlessTupleDesc(desc), result, nulls)));
}
