/*-------------------------------------------------------------------------
 * batch_relation.c
 *	  The relations through which the C folds hand rows to SQL (see
 *	  batch.h): tuplestores registered with SPI as ephemeral named
 *	  relations for the statements of one flow's run.
 *-------------------------------------------------------------------------
 */
#include "batch.h"
#include "validate.h"

#include "access/htup_details.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "utils/memutils.h"

/*
 * The relations registered.  The entries are static, not in the batch's
 * memory: a registration an error left behind can still be removed.
 */
#define MAX_BATCH_RELATIONS 16
static EphemeralNamedRelationData batch_enrs[MAX_BATCH_RELATIONS];
static int	n_batch_enrs = 0;

/* Hands a result to SQL as the relation "name", until batch_release. */
static void
batch_register(const char *name, TupleDesc desc, Tuplestorestate *store,
			   uint64 ntuples)
{
	EphemeralNamedRelation enr;
	MemoryContext old;
	int			rc;

	if (n_batch_enrs == MAX_BATCH_RELATIONS)
		elog(ERROR, "autocdc: too many batch relations");
	enr = &batch_enrs[n_batch_enrs++];
	memset(enr, 0, sizeof(*enr));
	enr->md.name = (char *) name;	/* a literal */
	enr->md.reliddesc = InvalidOid;
	enr->md.tupdesc = desc;
	enr->md.enrtype = ENR_NAMED_TUPLESTORE;
	enr->md.enrtuples = ntuples;
	enr->reldata = store;

	/*
	 * SPI keeps its list of relations in the memory current at the first
	 * registration; that must outlive every batch of the run.
	 */
	old = MemoryContextSwitchTo(TopTransactionContext);
	rc = SPI_register_relation(enr);
	MemoryContextSwitchTo(old);
	if (rc != SPI_OK_REL_REGISTER)
		elog(ERROR, "autocdc: could not register relation %s", name);
}

void
batch_relation_begin(BatchRelation *r, const char *name, TupleDesc desc)
{
	r->name = name;
	r->desc = desc;
	r->store = tuplestore_begin_heap(false, false, BATCH_STORE_KB);
	r->n = 0;
}

void
batch_relation_put(BatchRelation *r, Datum *values, bool *nulls)
{
	tuplestore_putvalues(r->store, r->desc, values, nulls);
	r->n++;
}

bool
batch_relation_register(BatchRelation *r)
{
	batch_register(r->name, r->desc, r->store, r->n);
	return r->n > 0;
}

TupleDesc
batch_keyed_desc(Batch *b, const char *idname, int extra)
{
	TupleDesc	desc = CreateTemplateTupleDesc(1 + b->nkeys + extra);

	TupleDescInitEntry(desc, 1, idname, INT4OID, -1, 0);
	for (int i = 0; i < b->nkeys; i++)
	{
		Form_pg_attribute att = TupleDescAttr(b->evdesc, i);

		TupleDescInitEntry(desc, 2 + i, NameStr(att->attname), att->atttypid, att->atttypmod, 0);
		TupleDescInitEntryCollation(desc, 2 + i, att->attcollation);
	}
	return desc;
}

void
batch_get_row_id(HeapTuple tup, TupleDesc desc, int attno, BatchRowId *id)
{
	bool		isnull;

	id->tid = *(ItemPointer) DatumGetPointer(heap_getattr(tup, attno, desc, &isnull));
	id->rel = DatumGetObjectId(heap_getattr(tup, attno + 1, desc, &isnull));
}

/*
 * A tid alone is looked up in every partition of a partitioned target.
 * With the keys, when they hold the partition keys, the lookup goes to
 * the row's own partition (run-time partition pruning).
 */
bool
batch_rows_by_keys(FlowDef *flow, const char *also)
{
	bool		expr;
	List	   *cols = partition_key_columns(flow->target, &expr);
	ListCell   *lc;

	if (cols == NIL || expr)
		return false;
	foreach(lc, cols)
		if (!list_has_string(flow->keys, lfirst(lc)) &&
			(also == NULL || strcmp(also, lfirst(lc)) != 0))
			return false;
	return true;
}

TupleDesc
batch_tid_desc(Batch *b, int extra, bool keys)
{
	int			first = BATCH_ROW_ID_ATTS + extra + 1;
	TupleDesc	desc = CreateTemplateTupleDesc(first - 1 + (keys ? b->nkeys : 0));

	TupleDescInitEntry(desc, 1, "__autocdc_tid", TIDOID, -1, 0);
	TupleDescInitEntry(desc, 2, "__autocdc_rel", OIDOID, -1, 0);
	for (int i = 0; keys && i < b->nkeys; i++)
	{
		Form_pg_attribute att = TupleDescAttr(b->evdesc, i);

		TupleDescInitEntry(desc, first + i, NameStr(att->attname), att->atttypid, att->atttypmod, 0);
		TupleDescInitEntryCollation(desc, first + i, att->attcollation);
	}
	return desc;
}

void
batch_put_row_id(const BatchRowId *id, Datum *values, bool *nulls)
{
	values[0] = PointerGetDatum(&id->tid);
	values[1] = ObjectIdGetDatum(id->rel);
	nulls[0] = nulls[1] = false;
}

void
batch_put_row_keys(Batch *b, int at, Datum *keys, Datum *values, bool *nulls)
{
	for (int i = 0; i < b->nkeys; i++)
	{
		values[at + i] = keys[i];
		nulls[at + i] = false;
	}
}

/*
 * The tableoid is a filter after the TID lookup: on a partitioned table
 * each partition (each one the keys may be in) is looked up at the tid,
 * and only the row of the right one is kept.
 */
char *
batch_row_id_match(FlowDef *flow, bool keys, const char *t, const char *u)
{
	StringInfoData sql;

	initStringInfo(&sql);
	appendStringInfo(&sql, "%s.ctid OPERATOR(pg_catalog.=) %s.__autocdc_tid AND "
					 "%s.tableoid OPERATOR(pg_catalog.=) %s.__autocdc_rel", t, u, t, u);
	if (keys)
	{
		appendStringInfoString(&sql, " AND ");
		append_keys_match(&sql, flow, t, u);
	}
	return sql.data;
}

void
batch_seq_entry(Batch *b, TupleDesc desc, int attno, const char *name)
{
	Form_pg_attribute att = TupleDescAttr(b->evdesc, b->seq_att);

	TupleDescInitEntry(desc, attno, name, att->atttypid, att->atttypmod, 0);
}

void
batch_put_key(Batch *b, uint32 id, Datum *keys, Datum *values, bool *nulls)
{
	values[0] = Int32GetDatum((int32) id);
	nulls[0] = false;
	for (int i = 0; i < b->nkeys; i++)
	{
		values[1 + i] = keys ? keys[i] : batch_key_value(b, id, i);
		nulls[1 + i] = false;
	}
}

/*
 * Registers "name": every key of the batch as (idname, keys), in "order"
 * (key numbers, as batch_key_order gives them: lookups by key then go
 * through an index in its order).
 */
void
batch_register_keys(Batch *b, const char *name, const char *idname, uint32 *order)
{
	BatchRelation r;
	Datum	   *values = palloc(sizeof(Datum) * (1 + b->nkeys));
	bool	   *nulls = palloc(sizeof(bool) * (1 + b->nkeys));

	batch_relation_begin(&r, name, batch_keyed_desc(b, idname, 0));
	for (uint32 n = 0; n < b->nkeysets; n++)
	{
		batch_put_key(b, order[n], NULL, values, nulls);
		batch_relation_put(&r, values, nulls);
	}
	batch_relation_register(&r);
	pfree(values);
	pfree(nulls);
}

/* Also called while a subtransaction aborts, where SPI may be gone: no error. */
void
batch_unregister_relations(void)
{
	while (n_batch_enrs > 0)
		(void) SPI_unregister_relation(batch_enrs[--n_batch_enrs].md.name);
}
