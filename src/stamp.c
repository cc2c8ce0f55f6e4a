/*-------------------------------------------------------------------------
 * stamp.c
 *	  The trigger that stamps every row inserted into a table source with
 *	  its inserting transaction, and what a run does to the stamps before
 *	  it reads (rows without one, the trigger's enabled state).
 *
 * A column default alone is not enough: INSERT ... SELECT * from another
 * source would copy old transaction ids that look already read, and those
 * rows would never be.  So the trigger overwrites a given stamp, unless no
 * flow has read this very table yet: then the rows come from a restore
 * (pg_restore's COPY into a table made anew), whose stamps say which rows
 * were read before the dump.
 *
 * A column added to a source comes after __autocdc_xid, and a value given
 * for it without a column list lands in __autocdc_xid (PostgreSQL 15's
 * xid8 reads text that is not a number as 0).  Replaced, it would be lost
 * without a word; so where a column follows __autocdc_xid, a stamp that
 * would be replaced is refused (not on logical replication's apply, which
 * sets columns by name), and so is, anywhere, a stamp no transaction gives.
 *
 * A row inserted after a run in the run's own transaction is stamped NULL:
 * the run's checkpoint could tell it apart by command id only, which a
 * dump loses.  The next run stamps it and reads it.
 *-------------------------------------------------------------------------
 */
#include "autocdc.h"
#include "catalog.h"
#include "progress.h"
#include "source_read.h"

#include "access/htup_details.h"
#include "access/transam.h"
#include "access/xact.h"
#include "catalog/partition.h"
#include "catalog/pg_type.h"
#include "commands/trigger.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/xid8.h"

PG_FUNCTION_INFO_V1(autocdc_stamp_xid);

/*
 * The table sources a run read in the current top-level transaction (in
 * TopTransactionContext).  Reset at its end only: a subtransaction that
 * aborts leaves its sources listed, which merely stamps more rows NULL
 * (the next run reads them all the same).
 */
static List *sources_read_this_xact = NIL;
static bool xact_callback_registered = false;

static void
stamp_xact_callback(XactEvent event, void *arg)
{
	if (event == XACT_EVENT_COMMIT || event == XACT_EVENT_ABORT ||
		event == XACT_EVENT_PREPARE || event == XACT_EVENT_PARALLEL_COMMIT ||
		event == XACT_EVENT_PARALLEL_ABORT)
		sources_read_this_xact = NIL;	/* its memory goes with the transaction */
}

/* Called by a run (or start_from => 'now') as it reads a table source. */
void
acdc_stamp_note_run_reads(Oid source)
{
	MemoryContext old;

	if (!xact_callback_registered)
	{
		RegisterXactCallback(stamp_xact_callback, NULL);
		xact_callback_registered = true;
	}
	old = MemoryContextSwitchTo(TopTransactionContext);
	sources_read_this_xact = list_append_unique_oid(sources_read_this_xact, source);
	MemoryContextSwitchTo(old);
}

/* Whether a run read this table, or a partitioned table it is in, in this transaction. */
static bool
read_in_this_xact(List *self_and_ancestors)
{
	ListCell   *lc;

	foreach(lc, self_and_ancestors)
		if (list_member_oid(sources_read_this_xact, lfirst_oid(lc)))
			return true;
	return false;
}

/* What the trigger works out once per statement (kept in fn_extra). */
typedef struct StampCache
{
	int			attnum;			/* of __autocdc_xid */
	char	   *next_column;	/* the first column after it, or NULL */
	List	   *rels;			/* the table and its partition ancestors */
	bool		decided;		/* keep_given below is known */
	bool		keep_given;		/* given stamps are a restore's: kept */
} StampCache;

static int
xid_column(TupleDesc desc)
{
	for (int i = 0; i < desc->natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, i);

		if (!att->attisdropped && strcmp(NameStr(att->attname), AUTOCDC_XID_COLUMN) == 0)
			return i + 1;
	}
	return 0;
}

/*
 * The name of the first column after attnum a value may be given for (not
 * a generated one), or NULL (in cxt).
 */
static char *
column_after(TupleDesc desc, int attnum, MemoryContext cxt)
{
	for (int i = attnum; i < desc->natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, i);

		if (!att->attisdropped && !att->attgenerated)
			return MemoryContextStrdup(cxt, NameStr(att->attname));
	}
	return NULL;
}

/*
 * Refuses a value given for __autocdc_xid where a column comes after it:
 * most likely a value meant for that column.
 */
static void
refuse_misplaced(Relation rel, StampCache *cache)
{
	char	   *qname = acdc_rel_qualified_name(RelationGetRelid(rel));

	ereport(ERROR,
			(errcode(ERRCODE_GENERATED_ALWAYS),
			 errmsg("cannot insert a non-DEFAULT value into column \"%s\" of source \"%s\"",
					AUTOCDC_XID_COLUMN, RelationGetRelationName(rel)),
			 errdetail("Column \"%s\" comes after %s, which autocdc added when the table became a source: without a column list, a value meant for \"%s\" goes to %s.",
					   cache->next_column, AUTOCDC_XID_COLUMN, cache->next_column,
					   AUTOCDC_XID_COLUMN),
			 errhint("Name the columns, leaving %s out, as in INSERT INTO %s %s VALUES (...) or SELECT ..., or give DEFAULT in its place.",
					 AUTOCDC_XID_COLUMN,
					 qname, acdc_source_user_columns(RelationGetRelid(rel)))));
}

/*
 * Whether the row comes from a replication apply (PostgreSQL's subscription
 * workers, or a background worker of another replication system), which
 * sets columns by name: one in replica mode that is no client's session.
 * A client that sets session_replication_role itself (to load in bulk
 * without its triggers) still gives values by position.
 */
static bool
applied_by_replication(void)
{
	return SessionReplicationRole == SESSION_REPLICATION_ROLE_REPLICA &&
		!AmRegularBackendProcess();
}

/*
 * Refuses a stamp no transaction gives ('1' is the rows a table held when
 * it became a source): a value meant for another column, or an extra one.
 */
static void
check_given_stamp(Relation rel, StampCache *cache, FullTransactionId given)
{
	if (U64FromFullTransactionId(given) == 1 ||
		U64FromFullTransactionId(given) >= U64FromFullTransactionId(FirstNormalFullTransactionId))
		return;
	if (cache->next_column)
		refuse_misplaced(rel, cache);
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_TEXT_REPRESENTATION),
			 errmsg("invalid value " UINT64_FORMAT " for column %s of source \"%s\"",
					U64FromFullTransactionId(given), AUTOCDC_XID_COLUMN,
					RelationGetRelationName(rel)),
			 errdetail("The column records the transaction that inserted each row; text that is not a number reads as 0 there."),
			 errhint("Leave the column out of the INSERT or COPY, or give DEFAULT.")));
}

/*
 * Whether a flow over this table (or over a partitioned table it is a
 * partition of) has its checkpoint on this very table: one naming its oid,
 * written in a cluster this database's files lived in (an oid restored
 * from another cluster may coincide).  A checkpoint from 0.1.0, which
 * names no table, counts as this one.  If none has, the table was made
 * anew since, by a restore, and the stamps it is given are kept.
 */
static bool
read_here(Relation rel)
{
	List	   *rels = list_make1_oid(RelationGetRelid(rel));
	bool		result;
	char	   *version;

	/* a catalog not updated yet records no source: given stamps are replaced */
	version = autocdc_extension_version();
	if (version == NULL || strcmp(version, AUTOCDC_CATALOG_VERSION) != 0)
		return true;
	if (rel->rd_rel->relispartition)
		rels = list_concat(rels, get_partition_ancestors(RelationGetRelid(rel)));
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	result = acdc_catalog_sources_read(rels);
	SPI_finish();
	return result;
}

Datum
autocdc_stamp_xid(PG_FUNCTION_ARGS)
{
	TriggerData *trigdata = (TriggerData *) fcinfo->context;
	Relation	rel;
	StampCache *cache;
	Datum		value;
	bool		isnull;
	FullTransactionId own;
	HeapTuple	tuple;

	if (!CALLED_AS_TRIGGER(fcinfo) ||
		!TRIGGER_FIRED_BEFORE(trigdata->tg_event) ||
		!TRIGGER_FIRED_FOR_ROW(trigdata->tg_event) ||
		!TRIGGER_FIRED_BY_INSERT(trigdata->tg_event))
		ereport(ERROR,
				(errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
				 errmsg("autocdc._stamp_xid() must be fired BEFORE INSERT FOR EACH ROW")));

	rel = trigdata->tg_relation;
	cache = fcinfo->flinfo->fn_extra;
	if (cache == NULL)
	{
		cache = MemoryContextAllocZero(fcinfo->flinfo->fn_mcxt, sizeof(StampCache));
		cache->attnum = xid_column(RelationGetDescr(rel));
		if (cache->attnum <= 0)
			ereport(ERROR,
					(errcode(ERRCODE_UNDEFINED_COLUMN),
					 errmsg("table \"%s\" has no column %s", RelationGetRelationName(rel),
							AUTOCDC_XID_COLUMN),
					 errdetail("The table is the source of an autocdc flow, which records each row's transaction there."),
					 errhint("Add it back with ALTER TABLE %s ADD COLUMN %s xid8, or drop the table's flows and then the trigger %s.",
							 quote_identifier(RelationGetRelationName(rel)), AUTOCDC_XID_COLUMN,
							 AUTOCDC_STAMP_TRIGGER)));
		cache->next_column = column_after(RelationGetDescr(rel), cache->attnum,
										  fcinfo->flinfo->fn_mcxt);
		{
			MemoryContext old = MemoryContextSwitchTo(fcinfo->flinfo->fn_mcxt);

			cache->rels = list_make1_oid(RelationGetRelid(rel));
			if (rel->rd_rel->relispartition)
				cache->rels = list_concat(cache->rels,
										  get_partition_ancestors(RelationGetRelid(rel)));
			MemoryContextSwitchTo(old);
		}
		fcinfo->flinfo->fn_extra = cache;
	}

	own = GetTopFullTransactionId();
	value = heap_getattr(trigdata->tg_trigtuple, cache->attnum,
						 RelationGetDescr(rel), &isnull);
	if (!isnull &&
		!FullTransactionIdEquals(DatumGetFullTransactionId(value), own))
	{
		/* a stamp given explicitly (the column's default gives `own`) */
		check_given_stamp(rel, cache, DatumGetFullTransactionId(value));
		if (!cache->decided)
		{
			cache->keep_given = !read_here(rel);
			cache->decided = true;
		}
		if (cache->keep_given)
			return PointerGetDatum(trigdata->tg_trigtuple);
		/* likely meant for the column after it; the apply sets columns by name */
		if (cache->next_column && !applied_by_replication())
			refuse_misplaced(rel, cache);
	}
	isnull = sources_read_this_xact != NIL && read_in_this_xact(cache->rels);
	value = FullTransactionIdGetDatum(own);
	tuple = heap_modify_tuple_by_cols(trigdata->tg_trigtuple, RelationGetDescr(rel),
									  1, &cache->attnum, &value, &isnull);
	return PointerGetDatum(tuple);
}

/*
 * The stamp trigger must fire ALWAYS, on the source and each of its
 * partitions.  pg_restore --disable-triggers brings it back enabled in
 * origin mode only (rows applied by logical replication would go
 * unstamped): a run enables it ALWAYS again, as each table's owner, and
 * says so.  A missing trigger is refused: rows given old stamps since
 * would look already read — unless `refuse_missing` is false (a ONCE flow
 * done, which reads nothing: only its trigger's state is put right).
 */
void
acdc_stamp_check_trigger(FlowDef *f, bool refuse_missing)
{
	Oid			argtypes[2] = {OIDOID, TEXTOID};
	Datum		values[2] = {ObjectIdGetDatum(f->source),
	CStringGetTextDatum(AUTOCDC_STAMP_TRIGGER)};
	List	   *fix = NIL;
	List	   *states = NIL;
	ListCell   *lc,
			   *ls;

	acdc_spi_exec("SELECT r.relid::pg_catalog.oid, t.tgenabled::pg_catalog.text "
			 "  FROM (SELECT $1 AS relid, 0 AS level UNION "
			 "        SELECT p.relid::pg_catalog.oid, p.level "
			 "          FROM pg_catalog.pg_partition_tree($1::pg_catalog.regclass) p) r "
			 "  JOIN pg_catalog.pg_class c ON c.oid OPERATOR(pg_catalog.=) r.relid "
			 "  LEFT JOIN pg_catalog.pg_trigger t ON t.tgrelid OPERATOR(pg_catalog.=) r.relid "
			 "        AND t.tgname OPERATOR(pg_catalog.=) $2::pg_catalog.name "
			 " WHERE c.relkind OPERATOR(pg_catalog.=) ANY ('{r,p}') "
			 "   AND (t.tgenabled IS NULL OR t.tgenabled OPERATOR(pg_catalog.<>) 'A') "
			 " ORDER BY r.level, r.relid",
			 2, argtypes, values, NULL, false);
	for (uint64 i = 0; i < SPI_processed; i++)
	{
		char	   *state = acdc_spi_value(i, 2);
		bool		isnull;
		Oid			relid = DatumGetObjectId(SPI_getbinval(SPI_tuptable->vals[i],
														   SPI_tuptable->tupdesc, 1, &isnull));

		if (state == NULL && !refuse_missing)
			continue;
		if (state == NULL)
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					 errmsg("source \"%s\" of flow \"%s\" lost its trigger %s",
							get_rel_name(relid), f->name, AUTOCDC_STAMP_TRIGGER),
					 errdetail("The trigger stamps each row inserted into a table source with its transaction, by which runs read it."),
					 errhint("Its owner can create it again: CREATE TRIGGER %s BEFORE INSERT ON %s FOR EACH ROW EXECUTE FUNCTION autocdc._stamp_xid(); ALTER TABLE %s ENABLE ALWAYS TRIGGER %s;",
							 AUTOCDC_STAMP_TRIGGER, acdc_rel_qualified_name(relid),
							 acdc_rel_qualified_name(relid), AUTOCDC_STAMP_TRIGGER)));
		fix = lappend_oid(fix, relid);
		states = lappend(states, state);
	}
	forboth(lc, fix, ls, states)
	{
		Oid			relid = lfirst_oid(lc);
		UserSwitch	sw;

		autocdc_become_owner_of(&sw, relid);
		acdc_spi_exec(psprintf("ALTER TABLE %s ENABLE ALWAYS TRIGGER %s",
						  acdc_rel_qualified_name(relid), AUTOCDC_STAMP_TRIGGER),
				 0, NULL, NULL, NULL, false);
		autocdc_unbecome(&sw);
		ereport(NOTICE,
				(errmsg("trigger %s of table \"%s\" enabled ALWAYS again",
						AUTOCDC_STAMP_TRIGGER, get_rel_name(relid)),
				 errdetail("Its state was '%s'; only ALWAYS ('A') stamps every row, rows applied by logical replication included.",
						   (char *) lfirst(ls))));
	}
}

/*
 * Gives the rows without a stamp this transaction's, so that every flow
 * over the source reads them once, in this run or a later one: a partition
 * attached with its rows, rows loaded with the trigger disabled and no
 * default, a row inserted after a run in its transaction.  A run that reads
 * the source whole (first run, ONCE, full refresh) does the same to rows
 * stamped at or past the next transaction id: they come from a restore
 * from another cluster, and no snapshot here would ever show them.  (The
 * bound is read before the statement, so a row stamped meanwhile by a
 * concurrent run is not taken for one.)  Done as the source's owner: its
 * UPDATE triggers fire.
 */
void
acdc_stamp_unstamped_rows(FlowDef *f, bool whole)
{
	char	   *where;
	char	   *qname = acdc_rel_qualified_name(f->source);
	Oid			argtypes[1] = {TEXTOID};
	Datum		values[1];
	char		next[32];
	UserSwitch	sw;

	snprintf(next, sizeof(next), UINT64_FORMAT,
			 U64FromFullTransactionId(ReadNextFullTransactionId()));
	values[0] = CStringGetTextDatum(next);
	if (whole)
		where = psprintf(" WHERE %s IS NULL OR %s OPERATOR(pg_catalog.>=) $1::pg_catalog.xid8",
						 AUTOCDC_XID_COLUMN, AUTOCDC_XID_COLUMN);
	else
		where = psprintf(" WHERE %s IS NULL", AUTOCDC_XID_COLUMN);

	autocdc_become_owner_of(&sw, f->source);
	acdc_spi_exec(psprintf("SELECT EXISTS (SELECT FROM %s%s)", qname, where),
			 1, argtypes, values, NULL, false);
	if (acdc_spi_bool(0, 1))
	{
		MemoryContext cxt = CurrentMemoryContext;

		acdc_progress_phase(ACDC_PHASE_STAMPING);

		/*
		 * Rows another transaction holds (a concurrent run stamping them, a
		 * writer) are left: they keep no stamp and a later run stamps them,
		 * so no run waits on a lock another role's open transaction holds.
		 */
		PG_TRY();
		{
			acdc_spi_exec(psprintf("UPDATE %s s SET %s = pg_catalog.pg_current_xact_id() "
							  "FROM (SELECT tableoid AS r, ctid AS t FROM %s%s FOR UPDATE SKIP LOCKED) n "
							  "WHERE s.tableoid OPERATOR(pg_catalog.=) n.r "
							  "AND s.ctid OPERATOR(pg_catalog.=) n.t",
							  qname, AUTOCDC_XID_COLUMN, qname, where),
					 1, argtypes, values, NULL, false);
		}
		PG_CATCH();
		{
			ErrorData  *e;

			/* the owner sees rows the reading role may not: show none */
			MemoryContextSwitchTo(cxt);
			e = CopyErrorData();
			FlushErrorState();
			e->detail = pstrdup("The error was raised while stamping the source's rows that had no stamp, as its owner.");
			e->detail_log = NULL;
			e->context = NULL;
			ReThrowError(e);
		}
		PG_END_TRY();
	}
	autocdc_unbecome(&sw);
}

/*
 * For the update from 0.1.0, whose sources kept no stamp for the rows they
 * held when they became sources (the first run read them whole): those
 * rows get the stamp such rows get now, so that no run reads them again.
 * Rows of a partition attached under 0.1.0 were never read, and are taken
 * as read too (README, Upgrading).  Done as the source's owner.
 */
PG_FUNCTION_INFO_V1(autocdc_stamp_rows_before);

Datum
autocdc_stamp_rows_before(PG_FUNCTION_ARGS)
{
	Oid			source = PG_GETARG_OID(0);
	char	   *qname;
	char	   *where;
	UserSwitch	sw;
	uint64		stamped = 0;

	if (get_attnum(source, AUTOCDC_XID_COLUMN) == InvalidAttrNumber)
		PG_RETURN_INT64(0);
	qname = acdc_rel_qualified_name(source);
	where = psprintf(" WHERE %s IS NULL", AUTOCDC_XID_COLUMN);
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	autocdc_become_owner_of(&sw, source);
	acdc_spi_exec(psprintf("SELECT EXISTS (SELECT FROM %s%s)", qname, where),
			 0, NULL, NULL, NULL, false);
	if (acdc_spi_bool(0, 1))
	{
		acdc_spi_exec(psprintf("UPDATE %s SET %s = %s%s", qname, AUTOCDC_XID_COLUMN,
						  quote_literal_cstr(AUTOCDC_XID_BEFORE), where),
				 0, NULL, NULL, NULL, false);
		stamped = SPI_processed;
	}
	autocdc_unbecome(&sw);
	SPI_finish();
	PG_RETURN_INT64((int64) stamped);
}
