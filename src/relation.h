/*-------------------------------------------------------------------------
 * relation.h
 *	  The relations through which a fold hands rows to SQL: tuplestores
 *	  (spilling past work_mem) registered with SPI as ephemeral named
 *	  relations for the statements of one flow's run, and the stored rows
 *	  they name by (tableoid, ctid).
 *-------------------------------------------------------------------------
 */
#ifndef AUTOCDC_RELATION_H
#define AUTOCDC_RELATION_H

#include "flow.h"

#include "access/htup.h"
#include "access/tupdesc.h"
#include "storage/itemptr.h"
#include "utils/tuplestore.h"

/*
 * A relation for SQL built row by row: begun on a descriptor, filled, then
 * registered for SPI under its name until acdc_batch_unregister_relations.
 */
typedef struct BatchRelation
{
	const char *name;
	TupleDesc	desc;
	Tuplestorestate *store;
	uint64		n;
} BatchRelation;

extern void acdc_batch_relation_begin(BatchRelation *r, const char *name, TupleDesc desc);
extern void acdc_batch_relation_put(BatchRelation *r, Datum *values, bool *nulls);
extern bool acdc_batch_relation_register(BatchRelation *r);	/* false when empty */
/*
 * Unregisters them all; also called while a subtransaction aborts (where
 * SPI may be gone: no error, and the stores are freed with their memory).
 */
extern void acdc_batch_unregister_relations(void);
/* Unregisters them all and ends their stores: after the last statement on them. */
extern void acdc_batch_release_relations(void);

/*
 * A stored row: its tid in the table that holds it.  A tid alone repeats
 * across the partitions of a partitioned target, so rows are named by
 * (tableoid, ctid); the table's oid is read with the tid ("x.ctid,
 * x.tableoid") and goes to SQL with it.
 */
typedef struct BatchRowId
{
	ItemPointerData tid;
	Oid			rel;
} BatchRowId;

#define BATCH_ROW_ID_ATTS 2

/* The row id read from columns attno (ctid) and attno + 1 (tableoid). */
extern void acdc_batch_get_row_id(HeapTuple tup, TupleDesc desc, int attno, BatchRowId *id);
/* values[0..1] := the row id */
extern void acdc_batch_put_row_id(const BatchRowId *id, Datum *values, bool *nulls);

/*
 * Whether stored rows of the flow's target go to SQL with their keys (and
 * the column "also", when not NULL) too: on a partitioned target whose
 * partition keys are of those columns only.
 */
extern bool acdc_batch_rows_by_keys(FlowDef *flow, const char *also);
/* Whether the target has triggers that may change its rows (they then move off their tids), and rules. */
extern void acdc_batch_target_code(FlowDef *flow, bool *row_triggers, bool *rules);
/* "t.ctid = u.__autocdc_tid AND t.tableoid = u.__autocdc_rel[ AND <keys equal>]" */
extern char *acdc_batch_row_id_match(FlowDef *flow, bool keys, const char *t, const char *u);

/*
 * Descriptors over an event row's shape (its keys are attributes 0 ..
 * nkeys - 1 of evdesc): (idname int4, the keys, "extra" more), and
 * (__autocdc_tid, __autocdc_rel, "extra" more, then the keys when "keys").
 */
extern TupleDesc acdc_rel_keyed_desc(TupleDesc evdesc, int nkeys, const char *idname, int extra);
extern TupleDesc acdc_rel_tid_desc(TupleDesc evdesc, int nkeys, int extra, bool keys);
/* Attribute attno (1-based) of desc as "name" of attribute src of evdesc. */
extern void acdc_rel_copy_entry(TupleDesc desc, int attno, TupleDesc evdesc, int src, const char *name);

#endif							/* AUTOCDC_RELATION_H */
