/*-------------------------------------------------------------------------
 * relation.c
 *	  The relations through which a fold hands rows to SQL (relation.h).
 *-------------------------------------------------------------------------
 */
#include "relation.h"
#include "validate.h"

#include "access/htup_details.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "miscadmin.h"
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
acdc_batch_relation_begin(BatchRelation *r, const char *name, TupleDesc desc)
{
	r->name = name;
	r->desc = desc;
	r->store = tuplestore_begin_heap(false, false, work_mem);
	r->n = 0;
}

void
acdc_batch_relation_put(BatchRelation *r, Datum *values, bool *nulls)
{
	tuplestore_putvalues(r->store, r->desc, values, nulls);
	r->n++;
}

bool
acdc_batch_relation_register(BatchRelation *r)
{
	batch_register(r->name, r->desc, r->store, r->n);
	return r->n > 0;
}

void
acdc_batch_get_row_id(HeapTuple tup, TupleDesc desc, int attno, BatchRowId *id)
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
acdc_batch_rows_by_keys(FlowDef *flow, const char *also)
{
	bool		expr;
	List	   *cols = acdc_partition_key_columns(flow->target, &expr);
	ListCell   *lc;

	if (cols == NIL || expr)
		return false;
	foreach(lc, cols)
		if (!acdc_list_has_string(flow->keys, lfirst(lc)) &&
			(also == NULL || strcmp(also, lfirst(lc)) != 0))
			return false;
	return true;
}

/*
 * What code the flow's target or a partition of it carries that the
 * writes must allow for: a trigger that may change its rows (anything but
 * a foreign key's checks, those of a key referencing it with NO ACTION or
 * RESTRICT, and the stamp of a target that is another flow's source), so
 * that a statement's triggers may move rows a later statement names by
 * tid; and a rule (data-modifying statements in WITH are refused then).
 */
void
acdc_batch_target_code(FlowDef *flow, bool *row_triggers, bool *rules)
{
	Oid			argtypes[1] = {OIDOID};
	Datum		values[1] = {ObjectIdGetDatum(flow->target)};

	acdc_spi_exec("WITH p AS (SELECT p.relid::pg_catalog.oid AS relid "
				  "           FROM pg_catalog.pg_partition_tree($1::pg_catalog.regclass) p "
				  "           UNION SELECT $1) "
				  "SELECT EXISTS (SELECT 1 FROM pg_catalog.pg_trigger g JOIN p ON g.tgrelid OPERATOR(pg_catalog.=) p.relid "
				  "  WHERE g.tgfoid OPERATOR(pg_catalog.<>) ALL (ARRAY['pg_catalog.\"RI_FKey_check_ins\"', "
				  "  'pg_catalog.\"RI_FKey_check_upd\"', 'pg_catalog.\"RI_FKey_noaction_del\"', "
				  "  'pg_catalog.\"RI_FKey_noaction_upd\"', 'pg_catalog.\"RI_FKey_restrict_del\"', "
				  "  'pg_catalog.\"RI_FKey_restrict_upd\"', 'autocdc._refuse_given_stamp']::pg_catalog.regproc[]::pg_catalog.oid[])), "
				  "EXISTS (SELECT 1 FROM pg_catalog.pg_rewrite r JOIN p ON r.ev_class OPERATOR(pg_catalog.=) p.relid)",
				  1, argtypes, values, NULL, false);
	*row_triggers = acdc_spi_bool(0, 1);
	*rules = acdc_spi_bool(0, 2);
	SPI_freetuptable(SPI_tuptable);
}

void
acdc_batch_put_row_id(const BatchRowId *id, Datum *values, bool *nulls)
{
	values[0] = PointerGetDatum(&id->tid);
	values[1] = ObjectIdGetDatum(id->rel);
	nulls[0] = nulls[1] = false;
}

/*
 * The tableoid is a filter after the TID lookup: on a partitioned table
 * each partition (each one the keys may be in) is looked up at the tid,
 * and only the row of the right one is kept.
 */
char *
acdc_batch_row_id_match(FlowDef *flow, bool keys, const char *t, const char *u)
{
	StringInfoData sql;

	initStringInfo(&sql);
	appendStringInfo(&sql, "%s.ctid OPERATOR(pg_catalog.=) %s.__autocdc_tid AND "
					 "%s.tableoid OPERATOR(pg_catalog.=) %s.__autocdc_rel", t, u, t, u);
	if (keys)
	{
		appendStringInfoString(&sql, " AND ");
		acdc_append_keys_match(&sql, flow, t, u);
	}
	return sql.data;
}

void
acdc_batch_unregister_relations(void)
{
	while (n_batch_enrs > 0)
		(void) SPI_unregister_relation(batch_enrs[--n_batch_enrs].md.name);
}

/*
 * Unregisters the relations and ends their tuplestores, whose temporary
 * files belong to the subtransaction: they must be closed before it ends.
 */
void
acdc_batch_release_relations(void)
{
	while (n_batch_enrs > 0)
	{
		EphemeralNamedRelation enr = &batch_enrs[--n_batch_enrs];

		(void) SPI_unregister_relation(enr->md.name);
		tuplestore_end((Tuplestorestate *) enr->reldata);
	}
}

TupleDesc
acdc_rel_keyed_desc(TupleDesc evdesc, int nkeys, const char *idname, int extra)
{
	TupleDesc	desc = CreateTemplateTupleDesc(1 + nkeys + extra);

	TupleDescInitEntry(desc, 1, idname, INT4OID, -1, 0);
	for (int i = 0; i < nkeys; i++)
		acdc_rel_copy_entry(desc, 2 + i, evdesc, i, NULL);
	return desc;
}

TupleDesc
acdc_rel_tid_desc(TupleDesc evdesc, int nkeys, int extra, bool keys)
{
	int			first = BATCH_ROW_ID_ATTS + extra + 1;
	TupleDesc	desc = CreateTemplateTupleDesc(first - 1 + (keys ? nkeys : 0));

	TupleDescInitEntry(desc, 1, "__autocdc_tid", TIDOID, -1, 0);
	TupleDescInitEntry(desc, 2, "__autocdc_rel", OIDOID, -1, 0);
	for (int i = 0; keys && i < nkeys; i++)
		acdc_rel_copy_entry(desc, first + i, evdesc, i, NULL);
	return desc;
}

void
acdc_rel_copy_entry(TupleDesc desc, int attno, TupleDesc evdesc, int src, const char *name)
{
	Form_pg_attribute att = TupleDescAttr(evdesc, src);

	TupleDescInitEntry(desc, attno, name ? name : NameStr(att->attname),
					   att->atttypid, att->atttypmod, 0);
	TupleDescInitEntryCollation(desc, attno, att->attcollation);
}
