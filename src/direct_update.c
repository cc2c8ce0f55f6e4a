/*-------------------------------------------------------------------------
 * direct_update.c
 *	  A fold's updates and deletes of stored rows straight in their table,
 *	  where the SQL statement by tid could not do anything else.
 *
 * The statement would join a relation of the rows to the table by tid: a
 * TID scan per row, which asks the kernel for the table's size each time
 * (PostgreSQL 15 caches it only in recovery), then project and update.
 * Here each row is fetched at its tid, changed and written as ExecUpdate
 * and ExecDelete write it, with the statement's outcomes for a row gone.
 *-------------------------------------------------------------------------
 */
#include "direct_update.h"
#include "direct_insert.h"
#include "autocdc.h"

#include "access/table.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "executor/executor.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "storage/bufmgr.h"
#include "utils/datum.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"
#include "utils/typcache.h"

typedef struct DirectModify
{
	Relation	rel;
	EState	   *estate;
	ResultRelInfo *rri;
	CmdType		cmd;
	int			ninput;
	AttrNumber *attnums;		/* per input attribute: the column it sets, or 0 */
	FmgrInfo   *eq;				/* per input attribute set: its type's "=" */
	bool		check;
	bool		only_changed;
	BlockNumber nblocks;		/* the table's size, which cannot shrink under our lock */
	CommandId	cid;
	Snapshot	snapshot;
	TupleTableSlot *oldslot;
	TupleTableSlot *newslot;
	uint64		n;
} DirectModify;

/*
 * Input attributes named in cols, mapped to the table's columns; false when
 * a value is not already of its column's type (the statement would coerce
 * it), the column is an identity, or, for only_changed, the type has no
 * strict "=" (the statement compares text then, or calls it with NULLs).
 */
static bool
map_columns(DirectModify *d, TupleDesc desc, List *cols, bool only_changed)
{
	TupleDesc	td = RelationGetDescr(d->rel);

	d->ninput = desc->natts;
	d->attnums = palloc0(sizeof(AttrNumber) * desc->natts);
	if (only_changed)
		d->eq = palloc0(sizeof(FmgrInfo) * desc->natts);
	for (int i = BATCH_ROW_ID_ATTS; i < desc->natts; i++)
	{
		Form_pg_attribute in = TupleDescAttr(desc, i);
		Form_pg_attribute att;
		AttrNumber	a;

		if (acdc_list_index_of_string(cols, NameStr(in->attname)) < 0)
			continue;
		a = get_attnum(RelationGetRelid(d->rel), NameStr(in->attname));
		if (a <= 0)
			return false;
		att = TupleDescAttr(td, a - 1);
		/* an identity column's value is the statement's to refuse or take */
		if (att->atttypid != in->atttypid || att->attidentity ||
			(att->atttypmod >= 0 && att->atttypmod != in->atttypmod))
			return false;
		d->attnums[i] = a;
		if (only_changed)
		{
			TypeCacheEntry *tc = lookup_type_cache(att->atttypid, TYPECACHE_EQ_OPR);

			if (!OidIsValid(tc->eq_opr))
				return false;
			fmgr_info(get_opcode(tc->eq_opr), &d->eq[i]);
			/* a NULL is compared as unequal without calling it */
			if (!d->eq[i].fn_strict)
				return false;
		}
	}
	return true;
}

/* Whether a stored generated column may depend on what an UPDATE sets. */
static bool
has_generated(Relation rel)
{
	TupleConstr *constr = RelationGetDescr(rel)->constr;

	return constr && constr->has_generated_stored;
}

static DirectModify *
modify_begin(Oid relid, CmdType cmd, TupleDesc desc, List *cols, bool only_changed)
{
	Relation	rel = table_open(relid, RowExclusiveLock);
	AclMode		rights = ACL_SELECT | (cmd == CMD_UPDATE ? ACL_UPDATE : ACL_DELETE);
	DirectModify *d = palloc0(sizeof(DirectModify));
	Bitmapset  *set = NULL;
	/* what the statement reads: the row id and, comparing, the columns it sets */
	Bitmapset  *selected = bms_make_singleton(SelfItemPointerAttributeNumber -
											  FirstLowInvalidHeapAttributeNumber);

	selected = bms_add_member(selected, TableOidAttributeNumber - FirstLowInvalidHeapAttributeNumber);
	d->rel = rel;
	d->cmd = cmd;
	d->only_changed = only_changed;
	if (!acdc_direct_table_plain(rel, cmd) ||
		(cmd == CMD_UPDATE && (has_generated(rel) || !map_columns(d, desc, cols, only_changed))))
	{
		table_close(rel, NoLock);
		return NULL;
	}
	for (int i = 0; cmd == CMD_UPDATE && i < d->ninput; i++)
		if (d->attnums[i] > 0)
			set = bms_add_member(set, d->attnums[i] - FirstLowInvalidHeapAttributeNumber);
	if (only_changed)
		selected = bms_union(selected, set);
	d->estate = acdc_direct_result_rel(rel, rights, selected, set, &d->rri);
	if (d->estate == NULL)
	{
		table_close(rel, NoLock);
		return NULL;
	}
	/* a table that publishes the command needs a replica identity: the statement's error */
	CheckCmdReplicaIdentity(rel, cmd);
	d->check = cmd == CMD_UPDATE && RelationGetDescr(rel)->constr != NULL;
	d->nblocks = RelationGetNumberOfBlocks(rel);
	d->oldslot = table_slot_create(rel, NULL);
	if (cmd == CMD_UPDATE)
		d->newslot = MakeSingleTupleTableSlot(RelationGetDescr(rel), &TTSOpsHeapTuple);
	/* as a statement: after what came before, in a snapshot that sees it */
	CommandCounterIncrement();
	d->cid = GetCurrentCommandId(true);
	PushActiveSnapshot(GetTransactionSnapshot());
	d->snapshot = GetActiveSnapshot();
	return d;
}

/* Whether the values to set all equal the stored row's, by their type's "=". */
static bool
unchanged(DirectModify *d, Datum *values, bool *nulls)
{
	Datum	   *old = d->oldslot->tts_values;
	bool	   *oldnull = d->oldslot->tts_isnull;
	MemoryContext mcxt = MemoryContextSwitchTo(GetPerTupleMemoryContext(d->estate));
	bool		same = true;

	for (int i = 0; same && i < d->ninput; i++)
	{
		int			a = d->attnums[i] - 1;
		Form_pg_attribute att;
		LOCAL_FCINFO(fcinfo, 2);
		Datum		r;

		if (a < 0)
			continue;
		if (nulls[i] || oldnull[a])
		{
			same = nulls[i] && oldnull[a];
			continue;
		}
		att = TupleDescAttr(RelationGetDescr(d->rel), a);
		if (datum_image_eq(values[i], old[a], att->attbyval, att->attlen))
			continue;
		InitFunctionCallInfoData(*fcinfo, &d->eq[i], 2, att->attcollation, NULL, NULL);
		fcinfo->args[0].value = old[a];
		fcinfo->args[0].isnull = false;
		fcinfo->args[1].value = values[i];
		fcinfo->args[1].isnull = false;
		r = FunctionCallInvoke(fcinfo);
		/* "COALESCE(t.c = u.c, ...)": NULL is not equal */
		same = !fcinfo->isnull && DatumGetBool(r);
	}
	MemoryContextSwitchTo(mcxt);
	return same;
}

/*
 * The stored row a relation row names, fetched into oldslot; false where the
 * statement's TID scan would find none (a tid past the table's end or of
 * another table, a row its snapshot does not see).
 */
static bool
fetch_row(DirectModify *d, Datum *values)
{
	ItemPointer tid = (ItemPointer) DatumGetPointer(values[0]);

	if (DatumGetObjectId(values[1]) != RelationGetRelid(d->rel) ||
		!ItemPointerIsValid(tid) || ItemPointerGetBlockNumber(tid) >= d->nblocks)
		return false;
	return table_tuple_fetch_row_version(d->rel, tid, d->snapshot, d->oldslot);
}

/*
 * After a write that found its row changed since the snapshot (result), what
 * ExecUpdate and ExecDelete do: under a transaction snapshot the
 * serialization error; else the row's newest version, locked, into oldslot
 * (true: write that instead, if the statement's conditions still hold), or
 * nothing (false: the row is gone, or this command changed it).
 */
static bool
follow_row(DirectModify *d, TM_Result result, TM_FailureData *tmfd, LockTupleMode mode)
{
	const char *what = d->cmd == CMD_UPDATE ? "updated" : "deleted";
	ItemPointerData tid = d->oldslot->tts_tid;

	for (;;)
	{
		switch (result)
		{
			case TM_SelfModified:
				if (tmfd->cmax != d->cid)
					ereport(ERROR,
							(errcode(ERRCODE_TRIGGERED_DATA_CHANGE_VIOLATION),
							 errmsg("tuple to be %s was already modified by an operation triggered by the current command",
									what),
							 errhint("Consider using an AFTER trigger instead of a BEFORE trigger to propagate changes to other rows.")));
				return false;
			case TM_Updated:
			case TM_Deleted:
				if (IsolationUsesXactSnapshot())
					ereport(ERROR,
							(errcode(ERRCODE_T_R_SERIALIZATION_FAILURE),
							 errmsg("could not serialize access due to concurrent %s",
									result == TM_Updated ? "update" : "delete")));
				if (result == TM_Deleted)
					return false;
				break;
			default:
				elog(ERROR, "unexpected result %d writing a row of \"%s\"", (int) result,
					 RelationGetRelationName(d->rel));
		}
		ExecClearTuple(d->oldslot);
		result = table_tuple_lock(d->rel, &tid, d->snapshot, d->oldslot, d->cid, mode,
								  LockWaitBlock, TUPLE_LOCK_FLAG_FIND_LAST_VERSION, tmfd);
		if (result == TM_Ok)
			return true;
	}
}

static void
update_row(DirectModify *d, Datum *values, bool *nulls)
{
	TupleTableSlot *newslot = d->newslot;
	int			natts = RelationGetDescr(d->rel)->natts;
	TM_FailureData tmfd;
	LockTupleMode lockmode;
	bool		update_indexes;
	TM_Result	result;

	if (!fetch_row(d, values))
		return;
	for (;;)
	{
		slot_getallattrs(d->oldslot);
		if (d->only_changed && unchanged(d, values, nulls))
			return;
		ExecClearTuple(newslot);
		memcpy(newslot->tts_values, d->oldslot->tts_values, sizeof(Datum) * natts);
		memcpy(newslot->tts_isnull, d->oldslot->tts_isnull, sizeof(bool) * natts);
		acdc_direct_store(newslot, d->ninput, d->attnums, values, nulls);
		if (d->check)
			ExecConstraints(d->rri, newslot, d->estate);
		result = table_tuple_update(d->rel, &d->oldslot->tts_tid, newslot, d->cid, d->snapshot,
									InvalidSnapshot, true, &tmfd, &lockmode, &update_indexes);
		if (result == TM_Ok)
			break;
		if (!follow_row(d, result, &tmfd, lockmode))
			return;
	}
	if (update_indexes && d->rri->ri_NumIndices > 0)
		list_free(ExecInsertIndexTuples(d->rri, newslot, d->estate, true, false, NULL, NIL));
	d->n++;
}

static void
delete_row(DirectModify *d, Datum *values)
{
	TM_FailureData tmfd;
	TM_Result	result;

	if (!fetch_row(d, values))
		return;
	while ((result = table_tuple_delete(d->rel, &d->oldslot->tts_tid, d->cid, d->snapshot,
										InvalidSnapshot, true, &tmfd, false)) != TM_Ok)
		if (!follow_row(d, result, &tmfd, LockTupleExclusive))
			return;
	d->n++;
}

static uint64
modify_end(DirectModify *d)
{
	uint64		n = d->n;

	/* what follows sees the changes, as after an SPI statement */
	CommandCounterIncrement();
	PopActiveSnapshot();
	ExecDropSingleTupleTableSlot(d->oldslot);
	if (d->newslot)
		ExecDropSingleTupleTableSlot(d->newslot);
	ExecCloseIndices(d->rri);
	FreeExecutorState(d->estate);
	table_close(d->rel, NoLock);
	return n;
}

/* The rows of r through d, or through sql where d is NULL; ends r's store. */
static uint64
modify_batch(DirectModify *d, BatchRelation *r, const char *sql)
{
	TupleTableSlot *slot;

	if (d == NULL)
	{
		/* the store is ended when the relations are released */
		if (!acdc_batch_relation_register(r))
			return 0;
		return acdc_spi_exec_by_tid(sql);
	}
	slot = MakeSingleTupleTableSlot(r->desc, &TTSOpsMinimalTuple);
	tuplestore_rescan(r->store);
	while (tuplestore_gettupleslot(r->store, true, false, slot))
	{
		CHECK_FOR_INTERRUPTS();
		slot_getallattrs(slot);
		if (d->cmd == CMD_UPDATE)
			update_row(d, slot->tts_values, slot->tts_isnull);
		else
			delete_row(d, slot->tts_values);
		ExecClearTuple(d->oldslot);
		ResetPerTupleExprContext(d->estate);
	}
	ExecDropSingleTupleTableSlot(slot);
	/* unregistered: its temporary files must not outlive the subtransaction */
	tuplestore_end(r->store);
	r->store = NULL;
	return modify_end(d);
}

uint64
acdc_update_batch(BatchRelation *r, Oid relid, List *cols, bool only_changed, const char *sql)
{
	if (r->n == 0)
		return modify_batch(NULL, r, sql);
	return modify_batch(modify_begin(relid, CMD_UPDATE, r->desc, cols, only_changed), r, sql);
}

uint64
acdc_delete_batch(BatchRelation *r, Oid relid, const char *sql)
{
	if (r->n == 0)
		return modify_batch(NULL, r, sql);
	return modify_batch(modify_begin(relid, CMD_DELETE, r->desc, NIL, false), r, sql);
}
