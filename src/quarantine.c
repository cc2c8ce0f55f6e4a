/*-------------------------------------------------------------------------
 * quarantine.c
 *	  autocdc.quarantine: the source rows a run set aside (dropped by an
 *	  expectation, or bad input of a flow with on_bad_event =>
 *	  'quarantine').  A run gathers them in a tuplestore in its flow's
 *	  subtransaction, so that an error sets nothing aside, and writes them
 *	  with one statement as the extension owner after the fold.  A row is
 *	  kept once per flow: a source read whole at every run (a view) reads
 *	  it again, and the unique (flow, row_hash) leaves it where it is.  The
 *	  hash takes the flow's owner, so that a row of a dropped flow of
 *	  another role with the same name neither hides nor reveals one; for an
 *	  append flow, which appends identical rows each, also the row's
 *	  ordinal among the identical rows of its run.
 *-------------------------------------------------------------------------
 */
#include "catalog.h"
#include "expect.h"
#include "relation.h"

#include "access/tupdesc.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "utils/builtins.h"
#include "utils/memutils.h"

typedef struct Quarantine
{
	FlowDef    *flow;
	MemoryContext cxt;
	BatchRelation rows;			/* (reason, expectations, row, sequence, conflicts_with) */
} Quarantine;

#define QUARANTINE_RELATION "__autocdc_quarantine"

/* The flow's subtransaction rolled back: its rows go, and so does the buffer. */
static void
quarantine_forget(void *arg)
{
	Quarantine *q = arg;

	q->flow->quarantine = NULL;
}

static Quarantine *
quarantine_begin(FlowDef *f)
{
	MemoryContext cxt = AllocSetContextCreate(CurTransactionContext, "autocdc quarantine",
											  ALLOCSET_SMALL_SIZES);
	MemoryContext old = MemoryContextSwitchTo(cxt);
	Quarantine *q = palloc0(sizeof(Quarantine));
	MemoryContextCallback *cb = palloc(sizeof(MemoryContextCallback));
	TupleDesc	desc = CreateTemplateTupleDesc(5);

	TupleDescInitEntry(desc, 1, "reason", TEXTOID, -1, 0);
	TupleDescInitEntry(desc, 2, "expectations", TEXTARRAYOID, -1, 0);
	TupleDescInitEntry(desc, 3, "row", JSONBOID, -1, 0);
	TupleDescInitEntry(desc, 4, "sequence", TEXTOID, -1, 0);
	TupleDescInitEntry(desc, 5, "conflicts_with", TEXTOID, -1, 0);
	q->flow = f;
	q->cxt = cxt;
	acdc_batch_relation_begin(&q->rows, QUARANTINE_RELATION, desc);
	cb->func = quarantine_forget;
	cb->arg = q;
	MemoryContextRegisterResetCallback(cxt, cb);
	MemoryContextSwitchTo(old);
	f->quarantine = q;
	return q;
}

/*
 * Sets a row aside: reason is "expectation" (with the names it failed as
 * text[]) or a bad input's ("null_key", "null_sequence", "conflict",
 * "conflict_applied"); row is the source row as jsonb; seq the sequence's
 * text (NULL when it is NULL); conflicts_with a JSON object naming the
 * applied event, or NULL.
 */
void
acdc_quarantine_add(FlowDef *f, const char *reason, Datum expectations, Datum row,
					const char *seq, const char *conflicts_with)
{
	Quarantine *q = f->quarantine ? f->quarantine : quarantine_begin(f);
	Datum		values[5];
	bool		nulls[5] = {false, expectations == (Datum) 0, false, seq == NULL,
	conflicts_with == NULL};
	MemoryContext old;

	/* in the caller's context, which goes per row: the store copies them */
	values[0] = CStringGetTextDatum(reason);
	values[1] = expectations;
	values[2] = row;
	values[3] = seq ? CStringGetTextDatum(seq) : (Datum) 0;
	values[4] = conflicts_with ? CStringGetTextDatum(conflicts_with) : (Datum) 0;
	old = MemoryContextSwitchTo(q->cxt);
	acdc_batch_relation_put(&q->rows, values, nulls);
	MemoryContextSwitchTo(old);
}

/*
 * Writes the rows set aside, each with its key (the key columns of the
 * source row); counts those that were not in the quarantine already.
 */
void
acdc_quarantine_flush(FlowDef *f, FlowCounts *counts)
{
	Quarantine *q = f->quarantine;
	Oid			argtypes[6] = {INT8OID, TEXTOID, TEXTOID, TEXTARRAYOID, OIDOID, BOOLOID};
	Datum		values[6];
	char		nulls[6] = {' ', ' ', ' ', ' ', ' ', ' '};

	if (q == NULL)
		return;
	values[0] = Int64GetDatum(f->run_id);
	values[1] = CStringGetTextDatum(f->pipeline);
	values[2] = CStringGetTextDatum(f->name);
	values[3] = f->keys ? acdc_list_to_text_array(f->keys) : (Datum) 0;
	nulls[3] = f->keys ? ' ' : 'n';
	values[4] = ObjectIdGetDatum(f->owner);
	values[5] = BoolGetDatum(f->kind == FLOW_APPEND);
	acdc_batch_unregister_relations();
	if (acdc_batch_relation_register(&q->rows))
	{
		acdc_catalog_exec("INSERT INTO autocdc.quarantine (run_id, pipeline, flow, reason, "
						  "  expectations, \"row\", key, sequence, conflicts_with, row_hash, "
						  "  flow_owner, pipeline_owner) "
						  "SELECT $1, $2, $3, q.reason, q.expectations, q.\"row\", "
						  "  (SELECT pg_catalog.jsonb_object_agg(k, q.\"row\" OPERATOR(pg_catalog.->) k) "
						  "     FROM pg_catalog.unnest($4) k), "
						  "  q.sequence, q.conflicts_with::pg_catalog.jsonb, "
						  "  pg_catalog.md5($5::pg_catalog.text OPERATOR(pg_catalog.||) ':' "
						  "    OPERATOR(pg_catalog.||) q.\"row\"::pg_catalog.text "
						  "    OPERATOR(pg_catalog.||) CASE WHEN $6 THEN ':' OPERATOR(pg_catalog.||) "
						  "      (pg_catalog.row_number() OVER (PARTITION BY q.\"row\"::pg_catalog.text))::pg_catalog.text "
						  "      ELSE '' END), $5::pg_catalog.regrole, "
						  "  COALESCE((SELECT p.owner FROM autocdc.pipeline p "
						  "             WHERE p.name OPERATOR(pg_catalog.=) $2), $5::pg_catalog.regrole) "
						  "  FROM " QUARANTINE_RELATION " q "
						  "ON CONFLICT (flow, row_hash) DO NOTHING",
						  6, argtypes, values, nulls);
		counts->quarantined += SPI_processed;
	}
	acdc_batch_release_relations();
	MemoryContextDelete(q->cxt);	/* and f->quarantine with it */
}

/*
 * Rows older than autocdc.quarantine_retention, at most this many per
 * call (with the event log's pruning, catalog.c).
 */
#define QUARANTINE_PRUNE_BATCH 1000

void
acdc_quarantine_prune(void)
{
	Oid			argtypes[2] = {FLOAT8OID, INT4OID};
	Datum		values[2];

	if (autocdc_quarantine_retention_s < 0)
		return;
	values[0] = Float8GetDatum((double) autocdc_quarantine_retention_s);
	values[1] = Int32GetDatum(QUARANTINE_PRUNE_BATCH);
	acdc_catalog_exec("WITH old AS ("
					  " SELECT id FROM autocdc.quarantine "
					  "  WHERE quarantined_at OPERATOR(pg_catalog.<) "
					  "        (pg_catalog.now() OPERATOR(pg_catalog.-) pg_catalog.make_interval(secs => $1)) "
					  "  ORDER BY quarantined_at LIMIT $2 FOR UPDATE SKIP LOCKED) "
					  "DELETE FROM autocdc.quarantine q USING old "
					  " WHERE q.id OPERATOR(pg_catalog.=) old.id",
					  2, argtypes, values, NULL);
}
