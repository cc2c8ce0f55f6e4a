/*-------------------------------------------------------------------------
 * target_scan.c
 *	  The rows a table holds for a batch's keys, by one pass over its heap
 *	  (target_scan.h).
 *
 * When a batch's keys are many of a target's, the planner hashes the whole
 * target: it has no statistics of the keys' relation, so hashing that side
 * looks costly to it.  A pass here looks each row's keys up among the
 * batch's keys, already sorted in memory, and keeps only the rows of the
 * batch: no hash table of the target, no join.  With fewer keys than four
 * per page of the table, an index lookup per key is cheaper, and the join
 * stays.
 *-------------------------------------------------------------------------
 */
#include "target_scan.h"

#include "access/heapam.h"
#include "access/htup_details.h"
#include "access/tableam.h"
#include "access/sysattr.h"
#include "access/xact.h"
#include "catalog/pg_am.h"
#include "executor/executor.h"
#include "miscadmin.h"
#include "storage/bufmgr.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/rls.h"
#include "utils/snapmgr.h"

/* The table's attribute numbers of the key columns, or false if one does not compare as the batch's. */
static bool
key_attnums(Events *ev, Relation rel, List *keys, AttrNumber *atts)
{
	ListCell   *lc;

	foreach(lc, keys)
	{
		int			i = foreach_current_index(lc);
		AttrNumber	a = get_attnum(RelationGetRelid(rel), lfirst(lc));
		Form_pg_attribute att;
		Form_pg_attribute evatt = TupleDescAttr(ev->desc, i);

		if (a <= 0 || i >= ev->nkeys || ev->composite[i])
			return false;
		att = TupleDescAttr(RelationGetDescr(rel), a - 1);
		/* the join's "=" is the type's btree equality, under the column's collation */
		if (att->atttypid != evatt->atttypid ||
			att->attcollation != ev->cmp[i].ssup_collation)
			return false;
		atts[i] = a;
	}
	return list_length(keys) == ev->nkeys;
}

/*
 * Whether the statement that joins would be allowed to read relid's keys
 * and columns: its permission check, the executor's hook included (an
 * audit or label module sees the read); else the statement runs and says.
 */
static bool
may_read(Relation rel, List *keys, List *columns)
{
	RangeTblEntry *rte = makeNode(RangeTblEntry);
	ListCell   *lc;

	rte->rtekind = RTE_RELATION;
	rte->relid = RelationGetRelid(rel);
	rte->relkind = rel->rd_rel->relkind;
	rte->rellockmode = AccessShareLock;
	rte->requiredPerms = ACL_SELECT;
	foreach(lc, list_concat_copy(keys, columns))
	{
		AttrNumber	a = get_attnum(RelationGetRelid(rel), lfirst(lc));

		if (a <= 0)
			return false;
		rte->selectedCols = bms_add_member(rte->selectedCols,
										   a - FirstLowInvalidHeapAttributeNumber);
	}
	return ExecCheckRTPerms(list_make1(rte), false);
}

bool
acdc_target_scan_applies(Events *ev, Oid relid, List *keys, List *columns)
{
	Relation	rel;
	AttrNumber *atts;
	bool		applies;

	if (ev->hash == NULL || ev->nkeysets == 0)
		return false;
	rel = relation_open(relid, AccessShareLock);
	atts = palloc(sizeof(AttrNumber) * Max(ev->nkeys, 1));
	/* heap: a copied row keeps its tid (t_self), which the writes name it by */
	applies = rel->rd_rel->relkind == RELKIND_RELATION &&
		rel->rd_rel->relam == HEAP_TABLE_AM_OID &&
		!rel->rd_rel->relhassubclass &&
		check_enable_rls(relid, InvalidOid, true) != RLS_ENABLED &&
		key_attnums(ev, rel, keys, atts) &&
		may_read(rel, keys, columns);
	if (applies)
	{
		BlockNumber nblocks = RelationGetNumberOfBlocks(rel);

		/* a pass reads a page in about the time of four lookups (measured); the rows kept fit */
		applies = (uint64) ev->nkeysets >= (uint64) nblocks * 4 &&
			(uint64) nblocks * (BLCKSZ / 1024) <= (uint64) acdc_events_bound_kb();
	}
	pfree(atts);
	relation_close(rel, NoLock);
	return applies;
}

HeapTuple *
acdc_target_scan(Events *ev, Oid relid, List *keys, uint64 *nfound)
{
	Relation	rel = table_open(relid, AccessShareLock);
	AttrNumber *atts = palloc(sizeof(AttrNumber) * ev->nkeys);
	Datum	   *keyvals = palloc(sizeof(Datum) * ev->nkeys);
	HeapTuple  *rows = palloc_extended(sizeof(HeapTuple) * ev->nkeysets,
									   MCXT_ALLOC_HUGE | MCXT_ALLOC_ZERO);
	AttrNumber	last = 0;
	TupleTableSlot *slot;
	TableScanDesc scan;
	Snapshot	snap;
	uint64		n = 0;
	bool		twice = false;

	if (!key_attnums(ev, rel, keys, atts))
		elog(ERROR, "autocdc: the keys of \"%s\" do not compare as its batch's",
			 RelationGetRelationName(rel));
	for (int i = 0; i < ev->nkeys; i++)
		last = Max(last, atts[i]);

	/* what the next statement would see: the run's writes so far included */
	CommandCounterIncrement();
	snap = RegisterSnapshot(GetTransactionSnapshot());
	slot = table_slot_create(rel, NULL);
	scan = table_beginscan(rel, snap, 0, NULL);
	while (!twice && table_scan_getnextslot(scan, ForwardScanDirection, slot))
	{
		bool		null_key = false;
		uint32		id;

		CHECK_FOR_INTERRUPTS();
		slot_getsomeattrs(slot, last);
		for (int i = 0; i < ev->nkeys; i++)
		{
			/* "=" never matches a NULL */
			null_key |= slot->tts_isnull[atts[i] - 1];
			keyvals[i] = slot->tts_values[atts[i] - 1];
		}
		if (null_key || !acdc_events_hash_find_key(ev, keyvals, &id))
			continue;
		if (rows[id] != NULL)
			twice = true;
		else
		{
			rows[id] = ExecCopySlotHeapTuple(slot);
			n++;
		}
	}
	table_endscan(scan);
	ExecDropSingleTupleTableSlot(slot);
	UnregisterSnapshot(snap);
	table_close(rel, NoLock);
	pfree(atts);
	pfree(keyvals);
	*nfound = n;
	if (twice)
	{
		for (uint32 k = 0; k < ev->nkeysets; k++)
			if (rows[k] != NULL)
				heap_freetuple(rows[k]);
		pfree(rows);
		return NULL;
	}
	return rows;
}
