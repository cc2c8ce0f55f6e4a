/*-------------------------------------------------------------------------
 * direct_insert.c
 *	  A fold's new rows straight into a table, batched as COPY batches them,
 *	  where the SQL INSERT of the same rows could not do anything else.
 *-------------------------------------------------------------------------
 */
#include "direct_insert.h"
#include "autocdc.h"

#include "access/table.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "catalog/pg_am_d.h"
#include "catalog/pg_class.h"
#include "commands/trigger.h"
#include "executor/executor.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "utils/acl.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"

/* As COPY: at most this many rows, or about this many bytes, per batch. */
#define DIRECT_BATCH_ROWS	1000
#define DIRECT_BATCH_BYTES	65535

struct DirectInsert
{
	Relation	rel;
	EState	   *estate;
	ResultRelInfo *rri;
	int			ninput;
	AttrNumber *attnums;
	bool		check;			/* the table has NOT NULL or CHECK constraints */
	CommandId	cid;
	TupleTableSlot *slots[DIRECT_BATCH_ROWS];
	int			nslots;			/* made so far */
	int			nused;
	Size		bytes;
	uint64		n;
};

/* Whether any trigger fires for cmd (foreign key checks included). */
static bool
fires_on(TriggerDesc *t, CmdType cmd)
{
	if (t == NULL)
		return false;
	switch (cmd)
	{
		case CMD_INSERT:
			return t->trig_insert_before_row || t->trig_insert_after_row ||
				t->trig_insert_instead_row || t->trig_insert_before_statement ||
				t->trig_insert_after_statement || t->trig_insert_new_table;
		case CMD_UPDATE:
			return t->trig_update_before_row || t->trig_update_after_row ||
				t->trig_update_instead_row || t->trig_update_before_statement ||
				t->trig_update_after_statement || t->trig_update_old_table ||
				t->trig_update_new_table;
		case CMD_DELETE:
			return t->trig_delete_before_row || t->trig_delete_after_row ||
				t->trig_delete_instead_row || t->trig_delete_before_statement ||
				t->trig_delete_after_statement || t->trig_delete_old_table;
		default:
			elog(ERROR, "unexpected command %d", (int) cmd);
	}
	return true;
}

bool
acdc_direct_table_plain(Relation rel, CmdType cmd)
{
	Form_pg_class c = rel->rd_rel;

	/* heap: a row's size is its formed tuple's, with no copy made */
	if (c->relkind != RELKIND_RELATION || c->relam != HEAP_TABLE_AM_OID ||
		c->relispartition || c->relhasrules || c->relrowsecurity ||
		fires_on(rel->trigdesc, cmd))
		return false;
	/* a statement on a parent reaches its children's rows too */
	if (cmd != CMD_INSERT && c->relhassubclass)
		return false;
	return true;
}

void
acdc_direct_store(TupleTableSlot *slot, int ninput, const AttrNumber *attnums,
				  Datum *values, bool *nulls)
{
	for (int i = 0; i < ninput; i++)
		if (attnums[i] > 0)
		{
			slot->tts_values[attnums[i] - 1] = values[i];
			slot->tts_isnull[attnums[i] - 1] = nulls[i];
		}
	ExecStoreVirtualTuple(slot);
}

EState *
acdc_direct_result_rel(Relation rel, AclMode rights, Bitmapset *selected, Bitmapset *set,
					   ResultRelInfo **rri)
{
	EState	   *estate;
	RangeTblEntry *rte = makeNode(RangeTblEntry);

	rte->rtekind = RTE_RELATION;
	rte->relid = RelationGetRelid(rel);
	rte->relkind = rel->rd_rel->relkind;
	rte->rellockmode = RowExclusiveLock;
	rte->requiredPerms = rights;
	rte->selectedCols = selected;
	if (rights & ACL_INSERT)
		rte->insertedCols = set;
	else
		rte->updatedCols = set;
	/* the statement's check, hook included; without a right, the statement gives the error */
	if (!ExecCheckRTPerms(list_make1(rte), false))
		return NULL;
	estate = CreateExecutorState();
	ExecInitRangeTable(estate, list_make1(rte));
	*rri = makeNode(ResultRelInfo);
	InitResultRelInfo(*rri, rel, 1, NULL, 0);
	ExecOpenIndices(*rri, false);
	/* a deferred unique or exclusion check needs the statement's after-trigger queue */
	for (int i = 0; i < (*rri)->ri_NumIndices; i++)
		if (!(*rri)->ri_IndexRelationDescs[i]->rd_index->indimmediate)
		{
			ExecCloseIndices(*rri);
			FreeExecutorState(estate);
			return NULL;
		}
	return estate;
}

/*
 * Whether an INSERT of the mapped columns would only form, check and index
 * the rows: no code of the table's that the direct path does not run, no
 * value it does not have, no type coercion.
 */
static bool
insert_is_plain(Relation rel, TupleDesc desc, const AttrNumber *attnums)
{
	TupleDesc	td = RelationGetDescr(rel);

	if (!acdc_direct_table_plain(rel, CMD_INSERT))
		return false;
	for (int a = 0; a < td->natts; a++)
	{
		Form_pg_attribute att = TupleDescAttr(td, a);
		int			i;

		if (att->attisdropped)
			continue;
		if (att->attidentity || att->attgenerated)
			return false;
		for (i = 0; i < desc->natts; i++)
			if (attnums[i] == att->attnum)
				break;
		if (i == desc->natts)
		{
			/* a column the rows do not give: NULL, unless it has a default */
			if (att->atthasdef)
				return false;
			continue;
		}
		if (TupleDescAttr(desc, i)->atttypid != att->atttypid ||
			(att->atttypmod >= 0 && TupleDescAttr(desc, i)->atttypmod != att->atttypmod))
			return false;
	}
	return true;
}

DirectInsert *
acdc_direct_insert_begin(Oid relid, TupleDesc desc, List *cols)
{
	Relation	rel = table_open(relid, RowExclusiveLock);
	AttrNumber *attnums = palloc0(sizeof(AttrNumber) * Max(desc->natts, 1));
	DirectInsert *d;
	Bitmapset  *inserted = NULL;
	EState	   *estate;
	ResultRelInfo *rri;

	for (int i = 0; i < desc->natts; i++)
	{
		const char *name = NameStr(TupleDescAttr(desc, i)->attname);

		if (acdc_list_index_of_string(cols, name) >= 0)
			attnums[i] = get_attnum(relid, name);
	}
	if (!insert_is_plain(rel, desc, attnums))
	{
		table_close(rel, NoLock);
		pfree(attnums);
		return NULL;
	}
	for (int i = 0; i < desc->natts; i++)
		if (attnums[i] > 0)
			inserted = bms_add_member(inserted, attnums[i] - FirstLowInvalidHeapAttributeNumber);
	estate = acdc_direct_result_rel(rel, ACL_INSERT, NULL, inserted, &rri);
	if (estate == NULL)
	{
		table_close(rel, NoLock);
		pfree(attnums);
		return NULL;
	}
	d = palloc0(sizeof(DirectInsert));
	d->rel = rel;
	d->ninput = desc->natts;
	d->attnums = attnums;
	d->estate = estate;
	d->rri = rri;
	d->check = RelationGetDescr(rel)->constr != NULL;
	/* as a statement: after what came before, in a snapshot that sees it */
	CommandCounterIncrement();
	d->cid = GetCurrentCommandId(true);
	PushActiveSnapshot(GetTransactionSnapshot());
	return d;
}

static void
flush(DirectInsert *d)
{
	if (d->nused == 0)
		return;
	table_multi_insert(d->rel, d->slots, d->nused, d->cid, 0, NULL);
	for (int i = 0; i < d->nused; i++)
	{
		if (d->rri->ri_NumIndices > 0)
			list_free(ExecInsertIndexTuples(d->rri, d->slots[i], d->estate,
											false, false, NULL, NIL));
		ExecClearTuple(d->slots[i]);
	}
	ResetPerTupleExprContext(d->estate);
	d->n += d->nused;
	d->nused = 0;
	d->bytes = 0;
}

void
acdc_direct_insert_put(DirectInsert *d, Datum *values, bool *nulls)
{
	TupleTableSlot *slot;

	CHECK_FOR_INTERRUPTS();
	if (d->nused == d->nslots)
		d->slots[d->nslots++] = table_slot_create(d->rel, NULL);
	slot = d->slots[d->nused];
	ExecClearTuple(slot);
	memset(slot->tts_isnull, true, sizeof(bool) * slot->tts_tupleDescriptor->natts);
	acdc_direct_store(slot, d->ninput, d->attnums, values, nulls);
	if (d->check)
		ExecConstraints(d->rri, slot, d->estate);
	/* the row's own copy, whose size bounds the batch */
	d->bytes += ExecFetchSlotHeapTuple(slot, true, NULL)->t_len;
	if (++d->nused == DIRECT_BATCH_ROWS || d->bytes >= DIRECT_BATCH_BYTES)
		flush(d);
}

uint64
acdc_direct_insert_end(DirectInsert *d)
{
	uint64		n;

	flush(d);
	/* what follows sees the rows, as after an SPI statement */
	CommandCounterIncrement();
	PopActiveSnapshot();
	for (int i = 0; i < d->nslots; i++)
		ExecDropSingleTupleTableSlot(d->slots[i]);
	ExecCloseIndices(d->rri);
	FreeExecutorState(d->estate);
	table_close(d->rel, NoLock);
	n = d->n;
	pfree(d->attnums);
	pfree(d);
	return n;
}

char *
acdc_insert_batch_sql(BatchRelation *r, const char *qrel, List *cols)
{
	StringInfoData sql;

	initStringInfo(&sql);
	appendStringInfo(&sql, "INSERT INTO %s (", qrel);
	acdc_append_column_list(&sql, cols, NULL);
	appendStringInfoString(&sql, ") SELECT ");
	acdc_append_column_list(&sql, cols, "u");
	appendStringInfo(&sql, " FROM %s u", r->name);
	return sql.data;
}

uint64
acdc_insert_batch(BatchRelation *r, Oid relid, const char *qrel, List *cols)
{
	DirectInsert *d = NULL;
	TupleTableSlot *slot;

	if (r->n > 0 && (d = acdc_direct_insert_begin(relid, r->desc, cols)) == NULL)
	{
		acdc_batch_relation_register(r);
		acdc_spi_exec(acdc_insert_batch_sql(r, qrel, cols), 0, NULL, NULL, NULL, false);
		return SPI_processed;
	}
	if (d)
	{
		slot = MakeSingleTupleTableSlot(r->desc, &TTSOpsMinimalTuple);
		tuplestore_rescan(r->store);
		while (tuplestore_gettupleslot(r->store, true, false, slot))
		{
			slot_getallattrs(slot);
			acdc_direct_insert_put(d, slot->tts_values, slot->tts_isnull);
		}
		ExecDropSingleTupleTableSlot(slot);
		acdc_direct_insert_end(d);
	}
	/* unregistered: its temporary files must not outlive the subtransaction */
	tuplestore_end(r->store);
	r->store = NULL;
	return r->n;
}
