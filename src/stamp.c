/*-------------------------------------------------------------------------
 * stamp.c
 *	  The stamp of a table source's rows: column __autocdc_xid, given the
 *	  inserting transaction by its default, guarded by a row trigger, found
 *	  by an autocdc_stamp index (stamp_index.c); and what a run does to the
 *	  stamps before it reads (rows without one, the trigger's enabled state).
 *
 * No row trigger fires before the insert: one would make COPY insert row by
 * row.  The default gives the stamp; a stamp given explicitly (INSERT ...
 * SELECT * from another source, COPY with the column) would look already
 * read and the row would never be, so the trigger, AFTER INSERT with a WHEN
 * that lets every defaulted row pass without a call, refuses it.  Where a
 * column follows __autocdc_xid, such a value is most likely meant for that
 * column (PostgreSQL 15's xid8 reads text that is not a number as 0).
 * A table no flow has read here yet keeps the stamps it is given: pg_dump
 * creates triggers after the data, and a --schema-only restore followed by
 * a --data-only one makes the table anew (read_here).
 *
 * A row inserted after a run in the run's own transaction is stamped NULL:
 * the run's checkpoint could tell it apart by command id only, which a
 * dump loses.  The next run stamps it and reads it.  Any other stamp such
 * a row carries, even its transaction's, was given otherwise (a changed
 * default, the column named) and is refused.
 *-------------------------------------------------------------------------
 */
#include "autocdc.h"
#include "catalog.h"
#include "progress.h"
#include "source_read.h"

#include "access/htup_details.h"
#include "access/relation.h"
#include "access/transam.h"
#include "access/xact.h"
#include "catalog/namespace.h"
#include "catalog/partition.h"
#include "catalog/pg_type.h"
#include "commands/trigger.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "nodes/readfuncs.h"
#include "storage/lmgr.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/xid8.h"

PG_FUNCTION_INFO_V1(autocdc_stamp);
PG_FUNCTION_INFO_V1(autocdc_stamp_given);
PG_FUNCTION_INFO_V1(autocdc_refuse_given_stamp);
PG_FUNCTION_INFO_V1(autocdc_stamp_xid);

/*
 * Whether a run read a table source in the current top-level transaction.
 * Reset at its end only: a subtransaction that aborts leaves it set, which
 * merely stamps more rows NULL (the next run reads them all the same).
 */
static bool run_read_this_xact = false;
static bool xact_callback_registered = false;

static void
stamp_xact_callback(XactEvent event, void *arg)
{
	if (event == XACT_EVENT_COMMIT || event == XACT_EVENT_ABORT ||
		event == XACT_EVENT_PREPARE || event == XACT_EVENT_PARALLEL_COMMIT ||
		event == XACT_EVENT_PARALLEL_ABORT)
		run_read_this_xact = false;
}

/*
 * Called by a run (or start_from => 'now') as it reads a table source.  The
 * default cannot tell which table it stamps, so from here on every source's
 * new rows are stamped NULL in this transaction, not only this one's.
 */
void
acdc_stamp_note_run_reads(void)
{
	if (!xact_callback_registered)
	{
		RegisterXactCallback(stamp_xact_callback, NULL);
		xact_callback_registered = true;
	}
	run_read_this_xact = true;
}

/* The default of __autocdc_xid: the inserting transaction, or NULL (above). */
Datum
autocdc_stamp(PG_FUNCTION_ARGS)
{
	if (run_read_this_xact)
		PG_RETURN_NULL();
	PG_RETURN_FULLTRANSACTIONID(GetTopFullTransactionId());
}

/*
 * The trigger's WHEN: a stamp other than the default's (NULL passes).  After
 * a run in this transaction the default gives NULL, so any stamp was given
 * otherwise (another default, pg_current_xact_id() named): even this
 * transaction's would look read to the next run.
 */
Datum
autocdc_stamp_given(PG_FUNCTION_ARGS)
{
	FullTransactionId given = PG_GETARG_FULLTRANSACTIONID(0);

	PG_RETURN_BOOL(run_read_this_xact ||
				   !FullTransactionIdEquals(given, GetTopFullTransactionId()));
}

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

/* The first column after attnum a value may be given for (not generated), or NULL. */
static char *
column_after(TupleDesc desc, int attnum)
{
	for (int i = attnum; i < desc->natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, i);

		if (!att->attisdropped && !att->attgenerated)
			return NameStr(att->attname);
	}
	return NULL;
}

/* Whether relid's stamp column has a default other than autocdc._stamp(). */
static bool
default_changed(Oid relid)
{
	Relation	rel = relation_open(relid, AccessShareLock);
	TupleConstr *constr = RelationGetDescr(rel)->constr;
	int			attnum = xid_column(RelationGetDescr(rel));
	bool		changed = false;

	for (int i = 0; constr != NULL && i < constr->num_defval; i++)
	{
		Node	   *expr;
		char	   *name;

		if (constr->defval[i].adnum != attnum)
			continue;
		expr = stringToNode(constr->defval[i].adbin);
		name = IsA(expr, FuncExpr) ? get_func_name(((FuncExpr *) expr)->funcid) : NULL;
		changed = name == NULL || strcmp(name, "_stamp") != 0 ||
			get_func_namespace(((FuncExpr *) expr)->funcid) != get_namespace_oid("autocdc", true);
	}
	relation_close(rel, AccessShareLock);
	return changed;
}

/*
 * A sentence for a refusal's hint when the stamp's default was changed, on
 * the table or on the partitioned table above it whose default an insert
 * through it takes; "" when neither was (a dropped default gives NULL,
 * which passes).
 */
static char *
changed_default_hint(Relation rel)
{
	Oid			relid = RelationGetRelid(rel);
	List	   *tables = list_make1_oid(relid);
	StringInfoData hint;
	ListCell   *lc;

	if (rel->rd_rel->relispartition)
		tables = list_concat(tables, get_partition_ancestors(relid));
	initStringInfo(&hint);
	foreach(lc, tables)
	{
		if (default_changed(lfirst_oid(lc)))
			appendStringInfo(&hint, " The default of %s on %s is no longer autocdc._stamp(); restore it with ALTER TABLE %s ALTER COLUMN %s SET DEFAULT autocdc._stamp().",
							 AUTOCDC_XID_COLUMN, acdc_rel_qualified_name(lfirst_oid(lc)),
							 acdc_rel_qualified_name(lfirst_oid(lc)), AUTOCDC_XID_COLUMN);
	}
	return hint.data;
}

/*
 * Whether the row comes from a replication apply (PostgreSQL's subscription
 * workers, or a background worker of another replication system), which
 * sets columns by name: one in replica mode that is no client's session.
 */
static bool
applied_by_replication(void)
{
	return SessionReplicationRole == SESSION_REPLICATION_ROLE_REPLICA &&
		!AmRegularBackendProcess();
}

/*
 * Whether a flow over this table (or over a partitioned table it is a
 * partition of) has its checkpoint on this very table: one naming its oid,
 * written in a cluster this database's files lived in.  A checkpoint from
 * 0.1.0, which names no table, counts as this one.  If none has, the table
 * was made anew since (pg_restore --schema-only, then --data-only), or no
 * flow over it ran yet: the stamps it is given are kept, and a first run
 * reads the table whole.
 */
static bool
read_here(Relation rel)
{
	List	   *rels = list_make1_oid(RelationGetRelid(rel));
	bool		result;
	char	   *version;

	/* a catalog not updated yet records no source */
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

/*
 * A row a replication apply gave the publisher's stamp (a publication with
 * no column list) is stamped anew, as the table's owner: the apply sets
 * columns by name, so the value is no other column's, and refusing it would
 * stop the subscription.  One UPDATE per such row; a column list leaving
 * __autocdc_xid out costs nothing.
 */
static void
restamp_applied_row(Relation rel, ItemPointer tid)
{
	Oid			argtypes[1] = {TIDOID};
	Datum		values[1] = {PointerGetDatum(tid)};
	UserSwitch	sw;

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	autocdc_become_owner_of(&sw, RelationGetRelid(rel));
	/* autocdc._stamp(): NULL after a run in this transaction, as an insert's */
	acdc_spi_exec(psprintf("UPDATE ONLY %s SET %s = autocdc._stamp() "
						   "WHERE ctid OPERATOR(pg_catalog.=) $1",
						   acdc_rel_qualified_name(RelationGetRelid(rel)), AUTOCDC_XID_COLUMN),
				  1, argtypes, values, NULL, false);
	autocdc_unbecome(&sw);
	SPI_finish();
}

/*
 * The trigger: a stamp given explicitly is refused, unless no flow read
 * this table here yet (read_here) or a replication apply gave it.  The
 * row is in the table already; the error takes it out with the statement.
 * A value no transaction gives ('1' is the rows a table held when it
 * became a source) is refused always.
 */
Datum
autocdc_refuse_given_stamp(PG_FUNCTION_ARGS)
{
	TriggerData *trigdata = (TriggerData *) fcinfo->context;
	Relation	rel;
	TupleDesc	desc;
	int			attnum;
	char	   *next;
	char	   *qname;
	Datum		value;
	bool		isnull;
	uint64		given;
	bool		plausible;
	bool	   *decision;		/* decided, and keep given stamps */

	if (!CALLED_AS_TRIGGER(fcinfo) ||
		!TRIGGER_FIRED_AFTER(trigdata->tg_event) ||
		!TRIGGER_FIRED_FOR_ROW(trigdata->tg_event) ||
		!TRIGGER_FIRED_BY_INSERT(trigdata->tg_event))
		ereport(ERROR,
				(errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
				 errmsg("autocdc._refuse_given_stamp() must be fired AFTER INSERT FOR EACH ROW")));

	rel = trigdata->tg_relation;
	desc = RelationGetDescr(rel);
	attnum = xid_column(desc);
	if (attnum <= 0)
		return PointerGetDatum(NULL);	/* no stamp to guard: a run refuses the source */
	value = heap_getattr(trigdata->tg_trigtuple, attnum, desc, &isnull);
	if (isnull)
		return PointerGetDatum(NULL);
	if (FullTransactionIdEquals(DatumGetFullTransactionId(value),
								GetTopFullTransactionId()))
	{
		/* without the trigger's WHEN, defaulted rows come here too */
		if (!run_read_this_xact)
			return PointerGetDatum(NULL);
		ereport(ERROR,
				(errcode(ERRCODE_GENERATED_ALWAYS),
				 errmsg("cannot stamp a row of source \"%s\" with its own transaction after a run in that transaction",
						RelationGetRelationName(rel)),
				 errdetail("A run earlier in this transaction takes the transaction's rows as read; a row inserted after it must have no stamp, as the column's default autocdc._stamp() gives it, for the next run to read it."),
				 errhint("Leave %s out of the INSERT or COPY, or give DEFAULT.%s",
						 AUTOCDC_XID_COLUMN, changed_default_hint(rel))));
	}

	given = U64FromFullTransactionId(DatumGetFullTransactionId(value));
	next = column_after(desc, attnum);
	qname = acdc_rel_qualified_name(RelationGetRelid(rel));
	plausible = given == 1 ||
		given >= U64FromFullTransactionId(FirstNormalFullTransactionId);
	if (plausible)
	{
		/* decided once per statement: a restore's COPY calls this per row */
		if (fcinfo->flinfo->fn_extra == NULL)
			fcinfo->flinfo->fn_extra = MemoryContextAllocZero(fcinfo->flinfo->fn_mcxt,
															  sizeof(bool) * 2);
		decision = fcinfo->flinfo->fn_extra;
		if (!decision[0])
		{
			decision[1] = !read_here(rel);
			decision[0] = true;
		}
		if (decision[1])
			return PointerGetDatum(NULL);	/* kept */
	}
	if (plausible && applied_by_replication())
	{
		restamp_applied_row(rel, &trigdata->tg_trigtuple->t_self);
		return PointerGetDatum(NULL);
	}
	if (next)
		ereport(ERROR,
				(errcode(ERRCODE_GENERATED_ALWAYS),
				 errmsg("cannot insert a non-DEFAULT value into column \"%s\" of source \"%s\"",
						AUTOCDC_XID_COLUMN, RelationGetRelationName(rel)),
				 errdetail("Column \"%s\" comes after %s, which autocdc added when the table became a source: without a column list, a value meant for \"%s\" goes to %s.",
						   next, AUTOCDC_XID_COLUMN, next, AUTOCDC_XID_COLUMN),
				 errhint("Name the columns, leaving %s out, as in INSERT INTO %s %s VALUES (...) or SELECT ..., or give DEFAULT in its place.%s",
						 AUTOCDC_XID_COLUMN, qname, acdc_source_user_columns(RelationGetRelid(rel)),
						 changed_default_hint(rel))));
	if (plausible)
		ereport(ERROR,
				(errcode(ERRCODE_GENERATED_ALWAYS),
				 errmsg("cannot insert a non-DEFAULT value into column \"%s\" of source \"%s\"",
						AUTOCDC_XID_COLUMN, RelationGetRelationName(rel)),
				 errdetail("The column records the transaction that inserted each row, by which flows read it; a stamp copied from another row would make them take this row as read already."),
				 errhint("Leave the column out, as in INSERT INTO %s %s SELECT ..., or give DEFAULT.%s",
						 qname, acdc_source_user_columns(RelationGetRelid(rel)),
						 changed_default_hint(rel))));
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_TEXT_REPRESENTATION),
			 errmsg("invalid value " UINT64_FORMAT " for column %s of source \"%s\"",
					given, AUTOCDC_XID_COLUMN, RelationGetRelationName(rel)),
			 errdetail("The column records the transaction that inserted each row; text that is not a number reads as 0 there."),
			 errhint("Leave the column out of the INSERT or COPY, or give DEFAULT.%s",
					 changed_default_hint(rel))));
	return PointerGetDatum(NULL);	/* not reached */
}

/*
 * The trigger of sources made before the update to 0.2.0 (BEFORE INSERT,
 * stamping every row), kept for the library to serve them until ALTER
 * EXTENSION autocdc UPDATE replaces it (autocdc_convert_source).
 */
Datum
autocdc_stamp_xid(PG_FUNCTION_ARGS)
{
	TriggerData *trigdata = (TriggerData *) fcinfo->context;
	Relation	rel;
	int			attnum;
	Datum		value;
	bool		isnull = false;

	if (!CALLED_AS_TRIGGER(fcinfo) ||
		!TRIGGER_FIRED_BEFORE(trigdata->tg_event) ||
		!TRIGGER_FIRED_FOR_ROW(trigdata->tg_event) ||
		!TRIGGER_FIRED_BY_INSERT(trigdata->tg_event))
		ereport(ERROR,
				(errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
				 errmsg("autocdc._stamp_xid() must be fired BEFORE INSERT FOR EACH ROW")));
	rel = trigdata->tg_relation;
	attnum = xid_column(RelationGetDescr(rel));
	if (attnum <= 0)
		return PointerGetDatum(trigdata->tg_trigtuple);
	value = FullTransactionIdGetDatum(GetTopFullTransactionId());
	return PointerGetDatum(heap_modify_tuple_by_cols(trigdata->tg_trigtuple,
													 RelationGetDescr(rel),
													 1, &attnum, &value, &isnull));
}

/* The statement that creates the trigger on a table (qualified name). */
char *
acdc_stamp_trigger_sql(const char *qname)
{
	return psprintf("CREATE TRIGGER %s AFTER INSERT ON %s FOR EACH ROW "
					"WHEN (autocdc._stamp_given(NEW.%s)) "
					"EXECUTE FUNCTION autocdc._refuse_given_stamp(); "
					"ALTER TABLE %s ENABLE ALWAYS TRIGGER %s;",
					AUTOCDC_STAMP_TRIGGER, qname, AUTOCDC_XID_COLUMN,
					qname, AUTOCDC_STAMP_TRIGGER);
}

/* The statement that creates the index on the stamp. */
char *
acdc_stamp_index_sql(const char *qname)
{
	return psprintf("CREATE INDEX ON %s USING autocdc_stamp (%s);",
					qname, AUTOCDC_XID_COLUMN);
}

/*
 * The stamp trigger must fire ALWAYS, on the source and each of its
 * partitions.  pg_restore --disable-triggers brings it back enabled in
 * origin mode only (rows applied by logical replication would go
 * unchecked): a run enables it ALWAYS again, as each table's owner, and
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
					 errdetail("The trigger refuses a row inserted into a table source with a stamp its default did not give, which runs would take as read."),
					 errhint("Its owner can create it again: %s",
							 acdc_stamp_trigger_sql(acdc_rel_qualified_name(relid)))));
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
	/* through the stamp's index, even on a source without statistics */
	acdc_spi_exec_by_index(psprintf("SELECT EXISTS (SELECT FROM %s%s)", qname, where),
						   1, argtypes, values);
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

/*
 * For the update from 0.1.0: a source's BEFORE INSERT trigger, which
 * stamped every row, is replaced by the default autocdc._stamp() and the
 * trigger that refuses a given stamp, and its B-tree on the stamp by an
 * autocdc_stamp index.  Done as the source's owner; partitions follow their
 * partitioned table.
 */
PG_FUNCTION_INFO_V1(autocdc_convert_source);

Datum
autocdc_convert_source(PG_FUNCTION_ARGS)
{
	Oid			source = PG_GETARG_OID(0);
	AttrNumber	attnum = get_attnum(source, AUTOCDC_XID_COLUMN);
	char	   *qname = acdc_rel_qualified_name(source);
	Oid			argtypes[2] = {OIDOID, INT2OID};
	Datum		values[2] = {ObjectIdGetDatum(source), Int16GetDatum(attnum)};
	StringInfoData sql;
	UserSwitch	sw;

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	initStringInfo(&sql);
	appendStringInfo(&sql, "DROP TRIGGER IF EXISTS %s ON %s; ", AUTOCDC_STAMP_TRIGGER, qname);
	if (attnum != InvalidAttrNumber)
	{
		appendStringInfo(&sql, "ALTER TABLE %s ALTER COLUMN %s SET DEFAULT autocdc._stamp(); ",
						 qname, AUTOCDC_XID_COLUMN);
		/* the B-tree 0.1.0 made: one column, the stamp */
		acdc_spi_exec("SELECT pg_catalog.quote_ident(n.nspname) OPERATOR(pg_catalog.||) '.' "
					  "       OPERATOR(pg_catalog.||) pg_catalog.quote_ident(c.relname) "
					  "  FROM pg_catalog.pg_index i "
					  "  JOIN pg_catalog.pg_class c ON c.oid OPERATOR(pg_catalog.=) i.indexrelid "
					  "  JOIN pg_catalog.pg_namespace n ON n.oid OPERATOR(pg_catalog.=) c.relnamespace "
					  "  JOIN pg_catalog.pg_am a ON a.oid OPERATOR(pg_catalog.=) c.relam "
					  " WHERE i.indrelid OPERATOR(pg_catalog.=) $1 AND i.indnatts OPERATOR(pg_catalog.=) 1 "
					  "   AND i.indkey[0] OPERATOR(pg_catalog.=) $2 AND a.amname OPERATOR(pg_catalog.=) 'btree' "
					  "   AND i.indexprs IS NULL AND i.indpred IS NULL",
					  2, argtypes, values, NULL, false);
		for (uint64 i = 0; i < SPI_processed; i++)
			appendStringInfo(&sql, "DROP INDEX %s; ", acdc_spi_value(i, 1));
		appendStringInfo(&sql, "%s %s", acdc_stamp_index_sql(qname),
						 acdc_stamp_trigger_sql(qname));
	}
	autocdc_become_owner_of(&sw, source);
	acdc_spi_exec(sql.data, 0, NULL, NULL, NULL, false);
	autocdc_unbecome(&sw);
	SPI_finish();
	PG_RETURN_VOID();
}
