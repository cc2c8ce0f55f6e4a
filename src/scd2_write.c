/*-------------------------------------------------------------------------
 * scd2_write.c
 *	  The SCD type 2 C fold's second half (see scd2_batch.c): each touched
 *	  key's events folded into versions, compared with the stored versions
 *	  by start, and what changed written: new events into the store,
 *	  versions deleted, their ends moved in place, or inserted.
 *-------------------------------------------------------------------------
 */
#include "scd2_batch_int.h"
#include "validate.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"

static Datum
inherit_array(Fold2 *F, uint64 mask)
{
	Datum	   *elems = palloc(sizeof(Datum) * Max(F->nvals, 1));
	int			n = 0;

	for (int j = 0; j < F->nvals; j++)
		if (mask & BIT(j))
			elems[n++] = CStringGetTextDatum(F->names[j]);
	return PointerGetDatum(construct_array(elems, n, TEXTOID, -1, false, TYPALIGN_INT));
}

/* Folds one key's events (sorted) into versions, appended to out. */
void
fold_key(Fold2 *F, Ev *ev, uint64 n, Version *out, uint64 *nout)
{
	Datum	   *run = palloc0(sizeof(Datum) * Max(F->nvals, 1));	/* latest setter's values */
	bool	   *run_null = palloc(sizeof(bool) * Max(F->nvals, 1));
	Datum	   *prev = NULL;	/* previous upsert's values in the group */
	bool	   *prev_null = NULL;
	Version    *cur = NULL;

	for (int j = 0; j < F->nvals; j++)
		run_null[j] = true;
	for (uint64 i = 0; i < n; i++)
	{
		Ev		   *e = &ev[i];
		Datum	   *vals;
		bool	   *nulls;
		bool		starts;

		if (e->kind == 'd')
		{
			if (cur)
			{
				cur->end = e->seq;
				cur->open = false;
				cur = NULL;
			}
			for (int j = 0; j < F->nvals; j++)
				run_null[j] = true;
			prev = NULL;
			continue;
		}
		vals = palloc(sizeof(Datum) * Max(F->nvals, 1));
		nulls = palloc(sizeof(bool) * Max(F->nvals, 1));
		for (int j = 0; j < F->nvals; j++)
		{
			bool		sets = e->kind == 'a' || !(e->inherit & BIT(j));

			if ((F->inheriting & BIT(j)) && !sets)
			{
				vals[j] = run[j];
				nulls[j] = run_null[j];
			}
			else
			{
				vals[j] = e->vals[j];
				nulls[j] = e->nulls[j];
			}
			if ((F->inheriting & BIT(j)) && sets)
			{
				run[j] = e->vals[j];
				run_null[j] = e->nulls[j];
			}
		}
		starts = prev == NULL;
		for (int j = 0; !starts && j < F->nvals; j++)
			if ((F->tracked & BIT(j)) &&
				!vals_equal(F, j, vals[j], nulls[j], prev[j], prev_null[j]))
				starts = true;
		if (starts)
		{
			if (cur)
			{
				cur->end = e->seq;
				cur->open = false;
			}
			cur = &out[(*nout)++];
			cur->key = e->key;
			cur->start = e->seq;
			cur->open = true;
		}
		cur->keys = e->keys;
		cur->vals = vals;
		cur->nulls = nulls;
		prev = vals;
		prev_null = nulls;
	}
}

static bool
same_values(Fold2 *F, Version *a, Version *b)
{
	for (int j = 0; j < F->nvals; j++)
		if (!vals_equal(F, j, a->vals[j], a->nulls[j], b->vals[j], b->nulls[j]))
			return false;
	return true;
}

static bool
same_end(Fold2 *F, Version *a, Version *b)
{
	return a->open == b->open &&
		(a->open || batch_seq_cmp(F->b, a->end, b->end) == 0);
}

/* A relation (__autocdc_tid, __end_at) of stored versions to change. */
static TupleDesc
tid_desc(Fold2 *F)
{
	TupleDesc	desc = CreateTemplateTupleDesc(2);

	TupleDescInitEntry(desc, 1, "__autocdc_tid", TIDOID, -1, 0);
	init_seq_entry(F, desc, 2, "__end_at");
	return desc;
}

static void
put_tid(Tuplestorestate *store, TupleDesc desc, Version *old, Version *nv)
{
	Datum		values[2] = {PointerGetDatum(&old->tid), nv ? nv->end : (Datum) 0};
	bool		nulls[2] = {false, nv == NULL || nv->open};

	tuplestore_putvalues(store, desc, values, nulls);
}

/* Writes a tuplestore of versions: keys, values, __start_at, __end_at. */
static void
put_version(Fold2 *F, TupleDesc desc, Tuplestorestate *store, Version *v,
			Datum *values, bool *nulls)
{
	int			nk = F->b->nkeys;

	put_key(F, v->key, v->keys, values, nulls);
	for (int j = 0; j < F->nvals; j++)
	{
		values[1 + nk + j] = v->vals[j];
		nulls[1 + nk + j] = v->nulls[j];
	}
	values[1 + nk + F->nvals] = v->start;
	nulls[1 + nk + F->nvals] = false;
	values[2 + nk + F->nvals] = v->end;
	nulls[2 + nk + F->nvals] = v->open;
	tuplestore_putvalues(store, desc, values, nulls);
}

/* The new events into the store, then the changed versions. */
void
write_all(Fold2 *F, Version *old, uint64 nold, Version *nv, uint64 nnew,
		  FlowCounts *counts)
{
	Batch	   *b = F->b;
	int			nk = b->nkeys;
	TupleDesc	edesc = keyed_desc(F, "__autocdc_k", F->nvals + 3);
	TupleDesc	idesc = keyed_desc(F, "__autocdc_k", F->nvals + 2);
	Tuplestorestate *estore = tuplestore_begin_heap(false, false, BATCH_STORE_KB);
	Tuplestorestate *istore = tuplestore_begin_heap(false, false, BATCH_STORE_KB);
	TupleDesc	tdesc = tid_desc(F);
	Tuplestorestate *dstore = tuplestore_begin_heap(false, false, BATCH_STORE_KB);
	Tuplestorestate *cstore = tuplestore_begin_heap(false, false, BATCH_STORE_KB);	/* ends set */
	Tuplestorestate *ostore = tuplestore_begin_heap(false, false, BATCH_STORE_KB);	/* reopened */
	int			natts = 1 + nk + F->nvals + 3;
	Datum	   *values = palloc(sizeof(Datum) * natts);
	bool	   *nulls = palloc(sizeof(bool) * natts);
	uint64		nfresh = 0,
				ndel = 0,
				nins = 0,
				nclose = 0,
				nreopen = 0;
	uint64		i = 0,
				j = 0;
	char	   *keys;
	char	   *vals;

	counts->deleted = 0;
	init_value_entries(F, edesc, 2 + nk);
	init_seq_entry(F, edesc, 2 + nk + F->nvals, "__autocdc_seq");
	TupleDescInitEntry(edesc, 3 + nk + F->nvals, "__autocdc_kind", TEXTOID, -1, 0);
	TupleDescInitEntry(edesc, 4 + nk + F->nvals, "__autocdc_inherit", TEXTARRAYOID, -1, 0);
	for (uint64 k = 0; k < F->nevs; k++)
	{
		Ev		   *e = &F->evs[k];
		char		kind[2] = {e->kind, '\0'};

		if (!e->fresh)
			continue;
		put_key(F, e->key, e->keys, values, nulls);
		for (int c = 0; c < F->nvals; c++)
		{
			values[1 + nk + c] = e->vals[c];
			nulls[1 + nk + c] = e->nulls[c];
		}
		values[1 + nk + F->nvals] = e->seq;
		nulls[1 + nk + F->nvals] = false;
		values[2 + nk + F->nvals] = CStringGetTextDatum(kind);
		nulls[2 + nk + F->nvals] = false;
		nulls[3 + nk + F->nvals] = e->kind != 'u' || e->inherit == 0;
		values[3 + nk + F->nvals] = nulls[3 + nk + F->nvals] ? (Datum) 0 : inherit_array(F, e->inherit);
		tuplestore_putvalues(estore, edesc, values, nulls);
		nfresh++;
	}

	/* diff by key and start (diff in scd2.c) */
	init_value_entries(F, idesc, 2 + nk);
	init_seq_entry(F, idesc, 2 + nk + F->nvals, "__start_at");
	init_seq_entry(F, idesc, 3 + nk + F->nvals, "__end_at");
	while (i < nold || j < nnew)
	{
		int			c = i == nold ? 1 : j == nnew ? -1 : version_order(&old[i], &nv[j], F);

		if (c == 0 && same_values(F, &old[i], &nv[j]))
		{
			/* the same version, or only its end moved: changed in place */
			if (!same_end(F, &old[i], &nv[j]))
			{
				put_tid(nv[j].open ? ostore : cstore, tdesc, &old[i], &nv[j]);
				if (nv[j].open)
					nreopen++;
				else
					nclose++;
			}
			i++;
			j++;
			continue;
		}
		if (c <= 0)
		{
			put_tid(dstore, tdesc, &old[i], NULL);
			if (c < 0)
				counts->deleted++;
			ndel++;
			i++;
		}
		if (c >= 0)
		{
			put_version(F, idesc, istore, &nv[j], values, nulls);
			nins++;
			j++;
		}
	}
	batch_register("__autocdc_newev", edesc, estore, nfresh);
	batch_register("__autocdc_ins", idesc, istore, nins);
	batch_register("__autocdc_del", tdesc, dstore, ndel);
	batch_register("__autocdc_close", tdesc, cstore, nclose);
	batch_register("__autocdc_reopen", tdesc, ostore, nreopen);

	keys = validate_prefixed_keys(F->f, NULL);
	vals = value_list(F, "x");
	if (nfresh > 0)
		spi_exec(psprintf("INSERT INTO %s (%s%s, __autocdc_seq, __autocdc_kind, __autocdc_inherit) "
						  "SELECT %s%s, x.__autocdc_seq, x.__autocdc_kind, x.__autocdc_inherit "
						  "FROM __autocdc_newev x", F->c->qevents, keys, value_list(F, NULL),
						  validate_prefixed_keys(F->f, "x"), vals),
				 0, NULL, NULL, NULL, false);
	/* deletes, then versions closed, then reopened, then inserts: one open version at a time */
	if (ndel > 0)
		spi_exec_by_tid(psprintf("DELETE FROM %s t USING __autocdc_del d "
							 "WHERE t.ctid OPERATOR(pg_catalog.=) d.__autocdc_tid", F->c->qtarget));
	if (nclose > 0)
		spi_exec_by_tid(psprintf("UPDATE %s t SET __end_at = d.__end_at FROM __autocdc_close d "
							 "WHERE t.ctid OPERATOR(pg_catalog.=) d.__autocdc_tid", F->c->qtarget));
	if (nreopen > 0)
		spi_exec_by_tid(psprintf("UPDATE %s t SET __end_at = NULL FROM __autocdc_reopen d "
							 "WHERE t.ctid OPERATOR(pg_catalog.=) d.__autocdc_tid", F->c->qtarget));
	if (nins > 0)
		spi_exec(psprintf("INSERT INTO %s (%s%s, __start_at, __end_at) "
						  "SELECT %s%s, x.__start_at, x.__end_at FROM __autocdc_ins x",
						  F->c->qtarget, keys, value_list(F, NULL),
						  validate_prefixed_keys(F->f, "x"), vals),
				 0, NULL, NULL, NULL, false);
	counts->upserted = nins + nclose + nreopen;
	counts->skipped = b->nevents - nfresh;
}

