/*-------------------------------------------------------------------------
 * scd2_write.c
 *	  The writes of the SCD type 2 fold: the new events into the store, and
 *	  the new versions compared with the stored ones by start: a version
 *	  whose end alone moved is updated in place, others are deleted and
 *	  inserted, through ephemeral relations.
 *-------------------------------------------------------------------------
 */
#include "scd2_fold.h"
#include "direct_insert.h"
#include "direct_update.h"
#include "validate.h"

#include "access/relation.h"
#include "access/xact.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/datum.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/timestamp.h"
#include "utils/typcache.h"

static Datum
inherit_array(Fold2 *F, Bitmapset *mask)
{
	Datum	   *elems = palloc(sizeof(Datum) * Max(F->nvals, 1));
	int			n = 0;

	for (int j = 0; j < F->nvals; j++)
		if (bms_is_member(j, mask))
			elems[n++] = CStringGetTextDatum(F->names[j]);
	return PointerGetDatum(construct_array(elems, n, TEXTOID, -1, false, TYPALIGN_INT));
}

static bool
same_values(Fold2 *F, Version *a, Version *b)
{
	for (int j = 0; j < F->nvals; j++)
		if (!acdc_vals_equal(F, j, a->vals[j], a->nulls[j], b->vals[j], b->nulls[j]))
			return false;
	return true;
}

static bool
same_end(Fold2 *F, Version *a, Version *b)
{
	return a->open == b->open &&
		(a->open || events_seq_cmp(F->ev, a->end, b->end) == 0);
}

/*
 * A relation (row id, __end_at[, __start_at, keys]) of stored versions to
 * change: with their keys and start on a target partitioned by those.
 */
static void
tid_relation(Fold2 *F, BatchRelation *r, const char *name, bool by_keys)
{
	TupleDesc	desc = acdc_rel_tid_desc(F->ev->desc, F->ev->nkeys, by_keys ? 2 : 1, by_keys);

	acdc_seq_entry(F, desc, BATCH_ROW_ID_ATTS + 1, "__end_at");
	if (by_keys)
		acdc_seq_entry(F, desc, BATCH_ROW_ID_ATTS + 2, "__start_at");
	acdc_batch_relation_begin(r, name, desc);
}

/* values and nulls: room for the row id, __end_at, __start_at and the keys */
static void
put_tid(Fold2 *F, BatchRelation *r, bool by_keys, Version *old, Version *nv,
		Datum *values, bool *nulls)
{
	acdc_batch_put_row_id(&old->row, values, nulls);
	values[BATCH_ROW_ID_ATTS] = nv ? nv->end : (Datum) 0;
	nulls[BATCH_ROW_ID_ATTS] = nv == NULL || nv->open;
	if (by_keys)
	{
		values[BATCH_ROW_ID_ATTS + 1] = old->start;
		nulls[BATCH_ROW_ID_ATTS + 1] = false;
		for (int i = 0; i < F->ev->nkeys; i++)
		{
			values[BATCH_ROW_ID_ATTS + 2 + i] = old->keys[i];
			nulls[BATCH_ROW_ID_ATTS + 2 + i] = false;
		}
	}
	acdc_batch_relation_put(r, values, nulls);
}

/*
 * A stored version t of the target that is the row d of a relation above:
 * by its keys and start alone (its primary key) when "by_start".
 */
static char *
stored_match(Fold2 *F, bool by_keys, bool by_start)
{
	StringInfoData sql;

	initStringInfo(&sql);
	if (by_start)
		acdc_append_keys_match(&sql, F->f, "t", "d");
	else
		appendStringInfoString(&sql, acdc_batch_row_id_match(F->f, by_keys, "t", "d"));
	if (by_keys)
	{
		appendStringInfoString(&sql, " AND ");
		acdc_append_flow_seq_cmp(&sql, F->f, "t.__start_at", "=", "d.__start_at");
	}
	return sql.data;
}

void
acdc_write_stored(Fold2 *F, BatchRelation *r, const char *column, const char *sql)
{
	if (F->by_start)
	{
		if (acdc_batch_relation_register(r))
			acdc_spi_exec(sql, 0, NULL, NULL, NULL, false);
	}
	else if (column)
		acdc_update_batch(r, F->f->target, list_make1((char *) column), false, sql);
	else
		acdc_delete_batch(r, F->f->target, sql);
}

/*
 * The head of a row of an event or a version: key number, keys (as "keys"
 * spells them), values.  Returns where the caller goes on.
 */
static int
put_keyed_values(Fold2 *F, uint32 key, Datum *keys, Datum *vals, bool *vnulls,
				 Datum *values, bool *nulls)
{
	int			at = 1 + F->ev->nkeys;

	acdc_put_key(F, key, keys, values, nulls);
	for (int j = 0; j < F->nvals; j++, at++)
	{
		values[at] = vals[j];
		nulls[at] = vnulls[j];
	}
	return at;
}

/*
 * What the store must hold of a folded event (SCD 2): all but an upsert
 * that sets every column and starts a version alone, which the target's
 * row of that version holds (when no trigger or rule may change it).
 */
static bool
must_store(Fold2 *F, Ev *e)
{
	return !e->in_store &&
		(!F->rows_exact || e->kind == 'd' || !e->alone || !bms_is_empty(e->inherit));
}

/*
 * Events into the store: the chunk's new events (every one, for a
 * bitemporal target), or (evs) those of the SCD 2 fold's input that it must
 * now hold.  The chunk's events that are not new are counted skipped.
 */
static void
write_events(Fold2 *F, Ev *evs, uint64 nevs, FlowCounts *counts)
{
	int			nk = F->ev->nkeys;
	BatchRelation newev;
	TupleDesc	edesc = acdc_rel_keyed_desc(F->ev->desc, nk, "__autocdc_k", F->nvals + 4);
	int			natts = 1 + nk + F->nvals + 4;
	Datum	   *values = palloc(sizeof(Datum) * natts);
	bool	   *nulls = palloc(sizeof(bool) * natts);
	uint64		nfresh = 0;
	/* when stored: the column's default now(), given so that the rows can go straight in */
	Datum		stored_at = TimestampTzGetDatum(GetCurrentTransactionStartTimestamp());
	static const char *const event[] = {"__autocdc_seq", "__autocdc_kind", "__autocdc_inherit",
	"__autocdc_stored_at"};

	acdc_init_value_entries(F, edesc, 2 + nk);
	acdc_seq_entry(F, edesc, 2 + nk + F->nvals, "__autocdc_seq");
	TupleDescInitEntry(edesc, 3 + nk + F->nvals, "__autocdc_kind", TEXTOID, -1, 0);
	TupleDescInitEntry(edesc, 4 + nk + F->nvals, "__autocdc_inherit", TEXTARRAYOID, -1, 0);
	TupleDescInitEntry(edesc, 5 + nk + F->nvals, "__autocdc_stored_at", TIMESTAMPTZOID, -1, 0);
	acdc_batch_relation_begin(&newev, "__autocdc_newev", edesc);
	for (uint64 k = 0; k < F->nevs; k++)
		nfresh += F->evs[k].fresh;
	if (evs == NULL)
	{
		evs = F->evs;
		nevs = F->nevs;
	}
	for (uint64 k = 0; k < nevs; k++)
	{
		Ev		   *e = &evs[k];
		/* an anchor is its version's start upsert */
		char		kind[2] = {e->kind == 'a' ? 'u' : e->kind, '\0'};
		int			at;

		if (evs == F->evs ? !e->fresh : !must_store(F, e))
			continue;
		at = put_keyed_values(F, e->key, e->keys, e->vals, e->nulls, values, nulls);
		values[at] = e->seq;
		nulls[at++] = false;
		values[at] = CStringGetTextDatum(kind);
		nulls[at++] = false;
		nulls[at] = e->kind != 'u' || bms_is_empty(e->inherit);
		values[at] = nulls[at] ? (Datum) 0 : inherit_array(F, e->inherit);
		values[++at] = stored_at;
		nulls[at] = false;
		acdc_batch_relation_put(&newev, values, nulls);
	}
	acdc_insert_batch(&newev, F->f->state, F->c->qevents,
					  acdc_keyed_columns(F, lengthof(event), event));
	counts->skipped += F->nread - nfresh;
}

/* The chunk's new events into the store (a bitemporal target keeps them all). */
void
acdc_write_new_events(Fold2 *F, FlowCounts *counts)
{
	write_events(F, NULL, 0, counts);
}

/* values := the version as a row of idesc (key number, keys, values, start, end) */
static void
put_version(Fold2 *F, Version *v, Datum *values, bool *nulls)
{
	int			at = put_keyed_values(F, v->key, v->keys, v->vals, v->nulls, values, nulls);

	values[at] = v->start;
	nulls[at++] = false;
	values[at] = v->end;
	nulls[at] = v->open;
}

/*
 * New versions into the target: straight in where an INSERT could do
 * nothing else (direct_insert.c), else by an INSERT from a relation of them.
 */
static void
insert_versions(Fold2 *F, TupleDesc idesc, Version **toins, uint64 n,
				Datum *values, bool *nulls)
{
	static const char *const period[] = {"__start_at", "__end_at"};
	List	   *cols = acdc_keyed_columns(F, lengthof(period), period);
	DirectInsert *d;
	BatchRelation ins;

	if (n == 0)
		return;
	d = acdc_direct_insert_begin(F->f->target, idesc, cols);
	if (d)
	{
		for (uint64 i = 0; i < n; i++)
		{
			put_version(F, toins[i], values, nulls);
			acdc_direct_insert_put(d, values, nulls);
		}
		acdc_direct_insert_end(d);
		return;
	}
	acdc_batch_relation_begin(&ins, "__autocdc_ins", idesc);
	for (uint64 i = 0; i < n; i++)
	{
		put_version(F, toins[i], values, nulls);
		acdc_batch_relation_put(&ins, values, nulls);
	}
	acdc_batch_relation_register(&ins);
	acdc_spi_exec(acdc_insert_batch_sql(&ins, F->c->qtarget, cols), 0, NULL, NULL, NULL, false);
}

/*
 * The events the store must now hold (of the fold's input, inp), then the
 * changed versions.
 */
void
acdc_write_all(Fold2 *F, Ev *inp, uint64 ninp, Version *old, uint64 nold,
			   Version *nv, uint64 nnew, FlowCounts *counts)
{
	int			nk = F->ev->nkeys;
	BatchRelation del,
				close,			/* ends set */
				reopen;			/* ends taken away (set to NULL) */
	BatchRelation *ends[] = {&close, &reopen};	/* in this order */
	TupleDesc	idesc = acdc_rel_keyed_desc(F->ev->desc, nk, "__autocdc_k", F->nvals + 2);
	int			natts = 1 + nk + F->nvals + 3;
	Datum	   *values = palloc(sizeof(Datum) * natts);
	bool	   *nulls = palloc(sizeof(bool) * natts);
	uint64		i = 0,
				j = 0;
	Version   **toins;			/* the versions to insert */
	uint64		ninsert = 0;
	bool		by_start = F->by_start;
	bool		by_keys = F->by_keys;
	char	   *match;

	write_events(F, inp, ninp, counts);

	/* the new versions against the stored, by key and start */
	acdc_init_value_entries(F, idesc, 2 + nk);
	acdc_seq_entry(F, idesc, 2 + nk + F->nvals, "__start_at");
	acdc_seq_entry(F, idesc, 3 + nk + F->nvals, "__end_at");
	toins = palloc_extended(sizeof(Version *) * Max(nnew, 1), MCXT_ALLOC_HUGE);
	tid_relation(F, &del, "__autocdc_del", by_keys);
	tid_relation(F, &close, "__autocdc_close", by_keys);
	tid_relation(F, &reopen, "__autocdc_reopen", by_keys);
	while (i < nold || j < nnew)
	{
		int			c = i == nold ? 1 : j == nnew ? -1 : acdc_version_order(&old[i], &nv[j], F);

		if (c == 0 && same_values(F, &old[i], &nv[j]))
		{
			/* the same version, or only its end moved: changed in place */
			if (!same_end(F, &old[i], &nv[j]))
				put_tid(F, nv[j].open ? &reopen : &close, by_keys, &old[i], &nv[j], values, nulls);
			i++;
			j++;
			continue;
		}
		if (c <= 0)
		{
			put_tid(F, &del, by_keys, &old[i], NULL, values, nulls);
			if (c < 0)
				counts->deleted++;	/* added to, chunk by chunk */
			i++;
		}
		if (c >= 0)
			toins[ninsert++] = &nv[j++];
	}

	match = stored_match(F, by_keys, by_start);
	/* deletes, then versions closed, then reopened, then inserts: one open version at a time */
	acdc_write_stored(F, &del, NULL, psprintf("DELETE FROM %s t USING %s d WHERE %s",
											  F->c->qtarget, del.name, match));
	for (int r = 0; r < lengthof(ends); r++)
		acdc_write_stored(F, ends[r], "__end_at",
						  psprintf("UPDATE %s t SET __end_at = d.__end_at FROM %s d WHERE %s",
								   F->c->qtarget, ends[r]->name, match));
	insert_versions(F, idesc, toins, ninsert, values, nulls);
	counts->upserted += ninsert + close.n + reopen.n;
}
