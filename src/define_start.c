/*-------------------------------------------------------------------------
 * define_start.c
 *	  start_from => 'now': a flow created over a source and a target that
 *	  already hold rows (flows re-created after a re-install, say) takes the
 *	  source's rows as read, and the target's rows as what came before.
 *
 * The checkpoint is written at creation as a run would write it: the
 * creating transaction's snapshot, its own xid and the command id reached,
 * so that rows committed before (or inserted earlier in the transaction)
 * are never read and every later row is.
 *
 * The target's rows have no sequence in the state.  SCD 1 needs none: a
 * key without state is older than any event (its next event overwrites or
 * deletes the row, a truncate removes it).  SCD 2 folds a key's events
 * again from its stored ones, so its existing history is turned into
 * events first: an upsert at each version's __start_at with its values, and
 * a delete at each __end_at no version of the key starts at.  Folding them
 * gives the history back, and later events (late ones too) fold into it.
 *-------------------------------------------------------------------------
 */
#include "catalog.h"
#include "define.h"
#include "source_read.h"

#include "access/relation.h"
#include "access/xact.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"

/* start_from: NULL or 'beginning' (false), 'now' (true); anything else is refused. */
bool
acdc_define_start_from_arg(FunctionCallInfo fcinfo, int n)
{
	char	   *v = acdc_define_text_arg(fcinfo, n);

	if (v == NULL || pg_strcasecmp(v, "beginning") == 0)
		return false;
	if (pg_strcasecmp(v, "now") == 0)
		return true;
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("invalid value for start_from: \"%s\"", v),
			 errhint("start_from is 'beginning' (the first run reads every source row, the default) or 'now' (rows already in the source are taken as read).")));
	return false;				/* keep compiler quiet */
}

/* Only a table source has rows that can be marked as read. */
void
acdc_define_refuse_start_now(FlowSpec *spec)
{
	if (!spec->start_now)
		return;
	if (spec->kind == FLOW_SNAPSHOT)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("start_from => 'now' does not apply to snapshot flows"),
				 errdetail("A snapshot flow compares each snapshot with the whole target: its first snapshot keeps the target's rows that it holds, changes those that differ and deletes the others."),
				 errhint("Leave start_from out.")));
	if (spec->scd_type == ACDC_BITEMPORAL)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("start_from => 'now' does not apply to bitemporal flows"),
				 errdetail("A bitemporal target is a function of the events read; rows it holds before them would be no event's."),
				 errhint("Leave start_from out.")));
	if (!spec->incremental)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("start_from => 'now' needs a table source"),
				 OidIsValid(spec->source) ?
				 errdetail("\"%s\" is not a table: it is read whole at every run, so none of its rows can be taken as read.",
						   get_rel_name(spec->source)) :
				 errdetail("A source query without STREAM(...) is read whole, so none of its rows can be taken as read.")));
}

/*
 * SCD 2: the target's versions as events in an empty event store (see the
 * header comment).  A store that holds events already describes the
 * target.
 */
static void
seed_event_store(FlowSpec *spec)
{
	Oid			events = acdc_catalog_target_state(spec->target);
	char	   *qevents = acdc_rel_qualified_name(events);
	char	   *qtarget = acdc_rel_qualified_name(spec->target);
	List	   *values = acdc_event_store_value_columns(events, spec->keys);
	List	   *all = list_concat_copy(spec->keys, values);
	StringInfoData sql,
				cols,
				tcols;
	ListCell   *lc;
	UserSwitch	sw;

	initStringInfo(&cols);
	acdc_append_column_list(&cols, all, NULL);
	initStringInfo(&tcols);
	acdc_append_column_list(&tcols, all, "t");
	initStringInfo(&sql);
	appendStringInfo(&sql, "INSERT INTO %s (%s, __autocdc_seq, __autocdc_kind) "
					 "SELECT %s, t.__start_at, 'u' FROM %s t WHERE NOT EXISTS (SELECT 1 FROM %s) "
					 "UNION ALL SELECT ",
					 qevents, cols.data, tcols.data, qtarget, qevents);
	resetStringInfo(&tcols);
	acdc_append_column_list(&tcols, spec->keys, "t");
	appendStringInfoString(&sql, tcols.data);
	foreach(lc, values)
		appendStringInfoString(&sql, ", NULL");
	appendStringInfo(&sql, ", t.__end_at, 'd' FROM %s t WHERE t.__end_at IS NOT NULL "
					 "AND NOT EXISTS (SELECT 1 FROM %s) "
					 "AND NOT EXISTS (SELECT 1 FROM %s n WHERE ",
					 qtarget, qevents, qtarget);
	foreach(lc, spec->keys)
	{
		const char *k = quote_identifier(lfirst(lc));

		acdc_append_nullsafe_eq(&sql, psprintf("n.%s", k), psprintf("t.%s", k),
						   get_atttype(spec->target, get_attnum(spec->target, lfirst(lc))));
		appendStringInfoString(&sql, " AND ");
	}
	acdc_append_seq_cmp(&sql, "n.__start_at", "=", "t.__end_at", spec->seq_type);
	appendStringInfoChar(&sql, ')');

	/* as the target's owner, whose the store is (define_register.c checks) */
	autocdc_become_owner_of(&sw, spec->target);
	acdc_spi_exec(sql.data, 0, NULL, NULL, NULL, false);
	autocdc_unbecome(&sw);
}

/*
 * Writes the new flow's checkpoint as a run at this point would, after
 * seeding an SCD 2 target's event store from its history.
 */
void
acdc_define_start_now(FlowSpec *spec)
{
	FlowDef		flow;
	char	   *snapshot;
	char	   *own_xid;
	CommandId	cid;

	if (spec->kind == FLOW_AUTO_CDC && spec->scd_type == 2)
		seed_event_store(spec);

	/* rows without a stamp (a partition attached) are in the source now too */
	memset(&flow, 0, sizeof(flow));
	flow.name = spec->name;
	flow.source = spec->source;
	flow.incremental = true;	/* acdc_define_refuse_start_now saw a table */
	acdc_stamp_unstamped_rows(&flow, false);

	acdc_spi_exec("SELECT pg_catalog.pg_current_snapshot()::pg_catalog.text, "
			 "pg_catalog.pg_current_xact_id_if_assigned()::pg_catalog.text",
			 0, NULL, NULL, NULL, true);
	snapshot = acdc_spi_value(0, 1);
	own_xid = acdc_spi_value(0, 2);
	/* rows this transaction inserted so far have cmin < cid: taken as read */
	CommandCounterIncrement();
	cid = GetCurrentCommandId(false);

	flow.once = spec->once;		/* a ONCE flow counts as done */
	acdc_catalog_save_checkpoint(&flow, snapshot, own_xid, (int64) cid, NULL);
	/* rows this transaction inserts from now on are read by the next run */
	acdc_stamp_note_run_reads();
}
