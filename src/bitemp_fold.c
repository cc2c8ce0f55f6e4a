/*-------------------------------------------------------------------------
 * bitemp_fold.c
 *	  The bitemporal fold (doc/design.md §2.15), on SCD 2's chunks and event
 *	  store: events are sequenced by ROW(business, system), and every stored
 *	  event of a touched key is read again.
 *
 * Per key, at each of its system points S (the distinct system sequences
 * of its events), the events that count are, per business sequence, the
 * one with the highest system sequence <= S (a correction replaces the
 * event it corrects); SCD 2's fold of them is the history believed at S.
 * A version (business start, end and values) that is the same at
 * consecutive points is one row, its system interval from the first of
 * them to the point where it changes (NULL: still believed).  The rows so
 * derived are compared with the target's rows of the key by (business
 * start, system start): a row whose system end alone moved is updated in
 * place, others are deleted and inserted.
 *-------------------------------------------------------------------------
 */
#include "scd2_fold.h"
#include "direct_insert.h"
#include "validate.h"

#include "access/htup_details.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "portability/instr_time.h"
#include "utils/builtins.h"
#include "utils/datum.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/sortsupport.h"
#include "utils/typcache.h"

/* The two fields of the sequence: 0 business, 1 system. */
typedef struct BtFold
{
	Oid			type[2];
	int32		typmod[2];
	Oid			coll[2];
	SortSupportData cmp[2];
	int16		len[2];
	bool		byval[2];
	TupleDesc	desc;			/* the sequence's composite type */
	char	   *scratch;		/* an aligned copy of a short-header sequence */
	Size		scratch_len;
	MemoryContext key_cxt;		/* a key's fold, reset for the next key */
} BtFold;

/* A row of a bitemporal target: stored (with its row id) or folded. */
typedef struct BtRow
{
	uint32		key;
	Datum	   *keys;
	Datum	   *vals;
	bool	   *nulls;
	Datum		start;
	Datum		end;
	bool		open;			/* __end_at IS NULL */
	Datum		sstart;
	Datum		send;
	bool		sopen;			/* __system_end_at IS NULL */
	BatchRowId	row;
} BtRow;

void
acdc_bt_setup(Fold2 *F)
{
	BtFold	   *bt = palloc0(sizeof(BtFold));
	TupleDesc	desc = lookup_rowtype_tupdesc_copy(F->f->seq_type, -1);

	for (int i = 0; i < 2; i++)
	{
		Form_pg_attribute a = TupleDescAttr(desc, i);
		TypeCacheEntry *tc = lookup_type_cache(a->atttypid, TYPECACHE_LT_OPR);

		bt->type[i] = a->atttypid;
		bt->typmod[i] = a->atttypmod;
		bt->coll[i] = a->attcollation;
		bt->cmp[i].ssup_cxt = CurrentMemoryContext;
		bt->cmp[i].ssup_collation = a->attcollation;
		PrepareSortSupportFromOrderingOp(tc->lt_opr, &bt->cmp[i]);
		bt->len[i] = a->attlen;
		bt->byval[i] = a->attbyval;
	}
	bt->desc = desc;
	bt->scratch_len = 64;
	bt->scratch = palloc(bt->scratch_len);
	bt->key_cxt = AllocSetContextCreate(CurrentMemoryContext, "autocdc bitemporal key",
										ALLOCSET_DEFAULT_SIZES);
	F->bt = bt;
}

static inline int
bt_cmp(Fold2 *F, int field, Datum a, Datum b)
{
	return ApplySortComparator(a, false, b, false, &F->bt->cmp[field]);
}

/*
 * The two fields of an event's sequence, valid as long as the event (and
 * by-reference fields copied into the current context).  A short-header
 * value, as an event row holds it, is read from an aligned scratch copy,
 * not detoasted into a new one per event.
 */
static void
seq_fields(Fold2 *F, Datum seq, Datum *biz, Datum *sys, MemoryContext keep)
{
	BtFold	   *bt = F->bt;
	struct varlena *v = (struct varlena *) DatumGetPointer(seq);
	HeapTupleHeader th;
	HeapTupleData tup;
	bool		isnull[2];
	/* an external (toasted) value has a short header too: detoasted below */
	bool		scratch = VARATT_IS_SHORT(v) && !VARATT_IS_EXTERNAL(v);

	if (scratch)
	{
		Size		len = VARSIZE_SHORT(v) - VARHDRSZ_SHORT;

		if (bt->scratch_len < len + VARHDRSZ)
		{
			bt->scratch_len = len + VARHDRSZ;
			bt->scratch = repalloc(bt->scratch, bt->scratch_len);
		}
		SET_VARSIZE(bt->scratch, len + VARHDRSZ);
		memcpy(VARDATA(bt->scratch), VARDATA_SHORT(v), len);
		th = (HeapTupleHeader) bt->scratch;
	}
	else
	{
		/* a compressed or external value's copy lives as long as its fields are used */
		MemoryContext old = MemoryContextSwitchTo(keep);

		th = DatumGetHeapTupleHeader(seq);
		MemoryContextSwitchTo(old);
	}
	tup.t_len = HeapTupleHeaderGetDatumLength(th);
	ItemPointerSetInvalid(&tup.t_self);
	tup.t_tableOid = InvalidOid;
	tup.t_data = th;
	*biz = heap_getattr(&tup, 1, bt->desc, &isnull[0]);
	*sys = heap_getattr(&tup, 2, bt->desc, &isnull[1]);
	if (isnull[0] || isnull[1])
		elog(ERROR, "autocdc: a bitemporal event has a NULL sequence field");
	if (scratch && !(bt->byval[0] && bt->byval[1]))
	{
		MemoryContext old = MemoryContextSwitchTo(keep);

		if (!bt->byval[0])
			*biz = datumCopy(*biz, false, bt->len[0]);
		if (!bt->byval[1])
			*sys = datumCopy(*sys, false, bt->len[1]);
		MemoryContextSwitchTo(old);
	}
}

static int
row_order(const void *x, const void *y, void *arg)
{
	const BtRow *a = x;
	const BtRow *c = y;
	int			r;

	if (a->key != c->key)
		return a->key < c->key ? -1 : 1;
	r = bt_cmp(arg, 0, a->start, c->start);
	return r != 0 ? r : bt_cmp(arg, 1, a->sstart, c->sstart);
}

static int
datum_order(const void *x, const void *y, void *arg)
{
	return bt_cmp(arg, 1, *(const Datum *) x, *(const Datum *) y);
}

/* Whether two versions are one: business bounds and values. */
static bool
same_version(Fold2 *F, Version *a, Version *b)
{
	if (bt_cmp(F, 0, a->start, b->start) != 0 || a->open != b->open ||
		(!a->open && bt_cmp(F, 0, a->end, b->end) != 0))
		return false;
	for (int j = 0; j < F->nvals; j++)
		if (!acdc_vals_equal(F, j, a->vals[j], a->nulls[j], b->vals[j], b->nulls[j]))
			return false;
	return true;
}

/* A new row of v, its arrays copied to cxt (v's go with the key's fold). */
static BtRow *
add_row(Fold2 *F, BtRow **out, uint64 *nout, uint64 *max, Version *v, Datum sstart,
		MemoryContext cxt)
{
	BtRow	   *r;
	int			nv = Max(F->nvals, 1);

	if (*nout == *max)
	{
		*max *= 2;
		*out = repalloc_huge(*out, sizeof(BtRow) * *max);
	}
	r = &(*out)[(*nout)++];
	r->key = v->key;
	r->keys = v->keys;
	r->vals = MemoryContextAlloc(cxt, sizeof(Datum) * nv);
	memcpy(r->vals, v->vals, sizeof(Datum) * nv);
	r->nulls = MemoryContextAlloc(cxt, sizeof(bool) * nv);
	memcpy(r->nulls, v->nulls, sizeof(bool) * nv);
	r->start = v->start;
	r->end = v->end;
	r->open = v->open;
	r->sstart = sstart;
	r->sopen = true;
	return r;
}

/*
 * The key's rows from "old" (its stored rows) kept as they are: those that
 * began before m, its earliest new system sequence, for nothing before m
 * changed.  Those of them believed just before m (open, or closed at or
 * after m) are the versions folding goes on from, in prev (business order);
 * they are open again until a point closes them.
 */
static uint64
keep_rows(Fold2 *F, BtRow *old, uint64 nold, Datum m, BtRow **out, uint64 *nout,
		  uint64 *max, Version *prev, uint64 *rowof)
{
	uint64		nprev = 0;

	for (uint64 i = 0; i < nold; i++)
	{
		BtRow	   *r = &old[i];
		BtRow	   *o;
		Version    *v;

		if (bt_cmp(F, 1, r->sstart, m) >= 0)
			continue;			/* folded again */
		if (*nout == *max)
		{
			*max *= 2;
			*out = repalloc_huge(*out, sizeof(BtRow) * *max);
		}
		o = &(*out)[(*nout)++];
		*o = *r;
		if (!r->sopen && bt_cmp(F, 1, r->send, m) < 0)
			continue;			/* a belief given up before m */
		o->sopen = true;
		v = &prev[nprev];
		v->key = r->key;
		v->open = r->open;
		v->start = r->start;
		v->end = r->end;
		v->keys = r->keys;
		v->vals = r->vals;
		v->nulls = r->nulls;
		rowof[nprev++] = *nout - 1;
	}
	return nprev;
}

/* A key's events and its system points, as fold_key folds them. */
typedef struct KeyFold
{
	Ev		   *ev;				/* by business, then system sequence */
	uint64		n;
	Datum	   *biz;			/* per event: its business sequence */
	int64	   *pidx;			/* per event: the point it is known from, or -1 (before all) */
	uint64	   *grpend;			/* per event: past the last event of its business sequence */
	Datum	   *points;			/* distinct, ascending */
	uint64		npoints;
	int64	   *first;			/* per point: its first and last event (pidx == p), or -1 */
	int64	   *last;
} KeyFold;

/* The point of system sequence s: its index in points (s is one of them). */
static int64
point_of(Fold2 *F, KeyFold *k, Datum s)
{
	uint64		lo = 0,
				hi = k->npoints;

	while (lo < hi)
	{
		uint64		mid = lo + (hi - lo) / 2;

		if (bt_cmp(F, 1, k->points[mid], s) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return (int64) lo;
}

/*
 * The key's points: the distinct system sequences from m (its earliest
 * new one) on, each event's point, and each point's events.  Returns the
 * last event known before the first point, or -1.
 */
static int64
key_points(Fold2 *F, KeyFold *k, Datum *sys, Datum m)
{
	uint64		d = 0;
	int64		before = -1;

	k->points = palloc(sizeof(Datum) * k->n);
	k->npoints = 0;
	for (uint64 i = 0; i < k->n; i++)
		if (bt_cmp(F, 1, sys[i], m) >= 0)
			k->points[k->npoints++] = sys[i];
	qsort_arg(k->points, k->npoints, sizeof(Datum), datum_order, F);
	for (uint64 i = 0; i < k->npoints; i++)
		if (d == 0 || bt_cmp(F, 1, k->points[d - 1], k->points[i]) != 0)
			k->points[d++] = k->points[i];
	k->npoints = d;
	k->pidx = palloc(sizeof(int64) * k->n);
	k->first = palloc(sizeof(int64) * Max(d, 1));
	k->last = palloc(sizeof(int64) * Max(d, 1));
	for (uint64 p = 0; p < d; p++)
		k->first[p] = k->last[p] = -1;
	for (uint64 i = 0; i < k->n; i++)
	{
		int64		p = bt_cmp(F, 1, sys[i], m) < 0 ? -1 : point_of(F, k, sys[i]);

		k->pidx[i] = p;
		if (p < 0)
			before = (int64) i;
		else
		{
			if (k->first[p] < 0)
				k->first[p] = (int64) i;
			k->last[p] = (int64) i;
		}
	}
	k->grpend = palloc(sizeof(uint64) * k->n);
	for (uint64 i = 0; i < k->n;)
	{
		uint64		g = i;

		while (g < k->n && bt_cmp(F, 0, k->biz[g], k->biz[i]) == 0)
			g++;
		for (; i < g; i++)
			k->grpend[i] = g;
	}
	return before;
}

/* The events that count at point p: per business sequence, the latest known at p. */
static uint64
point_events(KeyFold *k, uint64 p, Ev *eff)
{
	uint64		neff = 0;

	for (uint64 i = 0; i < k->n; i = k->grpend[i])
	{
		int64		last = -1;

		for (uint64 g = i; g < k->grpend[i]; g++)
			if (k->pidx[g] <= (int64) p)
				last = (int64) g;
		if (last >= 0)
		{
			eff[neff] = k->ev[last];
			eff[neff].seq = k->biz[last];
			neff++;
		}
	}
	return neff;
}

/*
 * Whether point p only appends to what was known before it (up to event
 * "known"): each of its events after them all, at a later business
 * sequence.  Then the history at p is the one before it, its open version
 * (if the last event known was an upsert) folded on with them, as SCD 2
 * folds on from its open version: the versions before it are done.
 * Returns the events to fold on with (in eff), or -1 if p does not append.
 */
static int64
point_appends(Fold2 *F, KeyFold *k, uint64 p, int64 known, Version *prev, uint64 nprev, Ev *eff)
{
	int64		neff = 0;

	if (p == 0 || k->first[p] <= known ||
		(known >= 0 && bt_cmp(F, 0, k->biz[k->first[p]], k->biz[known]) == 0))
		return -1;
	if (nprev > 0 && prev[nprev - 1].open)
	{
		Version    *v = &prev[nprev - 1];
		Ev		   *a = &eff[neff++];

		memset(a, 0, sizeof(Ev));
		a->key = v->key;
		a->kind = 'a';
		a->seq = v->start;
		a->keys = v->keys;
		a->vals = v->vals;
		a->nulls = v->nulls;
	}
	for (int64 i = k->first[p]; i <= k->last[p]; i++)
		if (k->pidx[i] == (int64) p)
		{
			eff[neff] = k->ev[i];
			eff[neff].seq = k->biz[i];
			neff++;
		}
	return neff;
}

/*
 * One key's events (sorted by business, then system sequence) into its
 * rows, appended to out; old holds its stored rows (by business start,
 * then system start).  Only the system points from its earliest new event
 * on are folded: the rows before it stand.  The fold's own allocations go
 * with the key: only the rows' arrays are kept, in the caller's context.
 */
static void
fold_key(Fold2 *F, Ev *ev, uint64 n, BtRow *old, uint64 nold,
		 BtRow **out, uint64 *nout, uint64 *max)
{
	MemoryContext cxt;
	KeyFold		k;
	Datum	   *sys;
	Ev		   *eff;
	Version    *prev,
			   *cur;
	uint64	   *rowof,			/* prev's row in out */
			   *currow;
	uint64		nprev = 0;
	int64		known;			/* the last event known at the point before */
	bool		has_m = false;
	Datum		m = (Datum) 0;

	MemoryContextReset(F->bt->key_cxt);
	cxt = MemoryContextSwitchTo(F->bt->key_cxt);
	k.ev = ev;
	k.n = n;
	k.biz = palloc(sizeof(Datum) * n);
	sys = palloc(sizeof(Datum) * n);
	for (uint64 i = 0; i < n; i++)
	{
		seq_fields(F, ev[i].seq, &k.biz[i], &sys[i], cxt);
		if (ev[i].fresh && (!has_m || bt_cmp(F, 1, sys[i], m) < 0))
		{
			m = sys[i];
			has_m = true;
		}
	}
	if (!has_m)
	{
		MemoryContextSwitchTo(cxt);
		return;					/* nothing new (the caller reads touched keys only) */
	}
	known = key_points(F, &k, sys, m);
	eff = palloc(sizeof(Ev) * (n + 1));
	prev = palloc(sizeof(Version) * (n + nold + 1));
	cur = palloc(sizeof(Version) * (n + nold + 1));
	rowof = palloc(sizeof(uint64) * (n + nold + 1));
	currow = palloc(sizeof(uint64) * (n + nold + 1));
	nprev = keep_rows(F, old, nold, m, out, nout, max, prev, rowof);

	for (uint64 p = 0; p < k.npoints; p++)
	{
		Datum		at = k.points[p];
		uint64		ncur = 0,
					a = 0,
					b = 0;
		int64		neff;
		Version    *swap;
		uint64	   *swapr;

		CHECK_FOR_INTERRUPTS();
		neff = point_appends(F, &k, p, known, prev, nprev, eff);
		if (neff >= 0)
		{
			/* the versions before the open one stand as they were */
			ncur = nprev > 0 && prev[nprev - 1].open ? nprev - 1 : nprev;
			memcpy(cur, prev, sizeof(Version) * ncur);
			memcpy(currow, rowof, sizeof(uint64) * ncur);
			a = b = ncur;
		}
		else
			neff = (int64) point_events(&k, p, eff);
		acdc_fold_key(F, eff, (uint64) neff, cur, &ncur);
		known = Max(known, k.last[p]);

		/* versions believed before and now, both in business order */
		for (; b < ncur; b++)
		{
			while (a < nprev && bt_cmp(F, 0, prev[a].start, cur[b].start) < 0)
			{
				(*out)[rowof[a]].send = at;
				(*out)[rowof[a]].sopen = false;
				a++;
			}
			if (a < nprev && same_version(F, &prev[a], &cur[b]))
			{
				currow[b] = rowof[a++];
				continue;
			}
			if (a < nprev && bt_cmp(F, 0, prev[a].start, cur[b].start) == 0)
			{
				(*out)[rowof[a]].send = at;
				(*out)[rowof[a]].sopen = false;
				a++;
			}
			add_row(F, out, nout, max, &cur[b], at, cxt);
			currow[b] = *nout - 1;
		}
		for (; a < nprev; a++)
		{
			(*out)[rowof[a]].send = at;
			(*out)[rowof[a]].sopen = false;
		}
		swap = prev;
		prev = cur;
		cur = swap;
		swapr = rowof;
		rowof = currow;
		currow = swapr;
		nprev = ncur;
	}
	MemoryContextSwitchTo(cxt);
}

/* The key's target rows, read for the chunk's touched keys (registered as __autocdc_mode). */
static BtRow *
read_rows(Fold2 *F, uint64 *nold)
{
	StringInfoData sql;
	SPITupleTable *tt;
	BtRow	   *old;

	initStringInfo(&sql);
	appendStringInfo(&sql, "SELECT m.__autocdc_k, t.ctid, t.tableoid, t.__start_at, t.__end_at, "
					 "t.__system_start_at, t.__system_end_at%s, %s FROM __autocdc_mode m CROSS JOIN LATERAL "
					 "(SELECT t.ctid, t.tableoid, t.* FROM %s t WHERE ",
					 acdc_value_list(F, "t"), acdc_validate_prefixed_keys(F->f, "t"), F->c->qtarget);
	acdc_append_keys_match(&sql, F->f, "t", "m");
	appendStringInfoString(&sql, " OFFSET 0) t");
	acdc_spi_exec(sql.data, 0, NULL, NULL, NULL, false);
	tt = F->stored[1] = SPI_tuptable;
	*nold = SPI_processed;
	old = palloc_extended(sizeof(BtRow) * Max(*nold, 1), MCXT_ALLOC_HUGE);
	for (uint64 r = 0; r < *nold; r++)
	{
		HeapTuple	tup = tt->vals[r];
		BtRow	   *v = &old[r];
		bool		isnull;
		int			at = 8;

		v->key = DatumGetInt32(heap_getattr(tup, 1, tt->tupdesc, &isnull));
		acdc_batch_get_row_id(tup, tt->tupdesc, 2, &v->row);
		v->start = heap_getattr(tup, 4, tt->tupdesc, &isnull);
		v->end = heap_getattr(tup, 5, tt->tupdesc, &v->open);
		v->sstart = heap_getattr(tup, 6, tt->tupdesc, &isnull);
		v->send = heap_getattr(tup, 7, tt->tupdesc, &v->sopen);
		v->vals = palloc(sizeof(Datum) * Max(F->nvals, 1));
		v->nulls = palloc(sizeof(bool) * Max(F->nvals, 1));
		for (int j = 0; j < F->nvals; j++)
			v->vals[j] = heap_getattr(tup, at++, tt->tupdesc, &v->nulls[j]);
		v->keys = palloc(sizeof(Datum) * F->ev->nkeys);
		for (int i = 0; i < F->ev->nkeys; i++)
			v->keys[i] = heap_getattr(tup, at++, tt->tupdesc, &isnull);
	}
	qsort_arg(old, *nold, sizeof(BtRow), row_order, F);
	return old;
}

static void
field_entry(Fold2 *F, TupleDesc desc, int attno, const char *name, int field)
{
	TupleDescInitEntry(desc, attno, name, F->bt->type[field], F->bt->typmod[field], 0);
	TupleDescInitEntryCollation(desc, attno, F->bt->coll[field]);
}

/* (row id, __system_end_at, __start_at, __system_start_at, keys) of stored rows to change */
static void
tid_relation(Fold2 *F, BatchRelation *r, const char *name)
{
	TupleDesc	desc = acdc_rel_tid_desc(F->ev->desc, F->ev->nkeys, 3, true);

	field_entry(F, desc, BATCH_ROW_ID_ATTS + 1, "__system_end_at", 1);
	field_entry(F, desc, BATCH_ROW_ID_ATTS + 2, "__start_at", 0);
	field_entry(F, desc, BATCH_ROW_ID_ATTS + 3, "__system_start_at", 1);
	acdc_batch_relation_begin(r, name, desc);
}

static void
put_tid(Fold2 *F, BatchRelation *r, BtRow *old, BtRow *nv, Datum *values, bool *nulls)
{
	acdc_batch_put_row_id(&old->row, values, nulls);
	values[BATCH_ROW_ID_ATTS] = nv ? nv->send : (Datum) 0;
	nulls[BATCH_ROW_ID_ATTS] = nv == NULL || nv->sopen;
	values[BATCH_ROW_ID_ATTS + 1] = old->start;
	nulls[BATCH_ROW_ID_ATTS + 1] = false;
	values[BATCH_ROW_ID_ATTS + 2] = old->sstart;
	nulls[BATCH_ROW_ID_ATTS + 2] = false;
	for (int i = 0; i < F->ev->nkeys; i++)
	{
		values[BATCH_ROW_ID_ATTS + 3 + i] = old->keys[i];
		nulls[BATCH_ROW_ID_ATTS + 3 + i] = false;
	}
	acdc_batch_relation_put(r, values, nulls);
}

static bool
same_row(Fold2 *F, BtRow *a, BtRow *b)
{
	if (a->open != b->open || (!a->open && bt_cmp(F, 0, a->end, b->end) != 0))
		return false;
	for (int j = 0; j < F->nvals; j++)
		if (!acdc_vals_equal(F, j, a->vals[j], a->nulls[j], b->vals[j], b->nulls[j]))
			return false;
	return true;
}

/* Stored row t of the target that is row d of a relation above. */
static char *
stored_match(Fold2 *F)
{
	StringInfoData sql;

	initStringInfo(&sql);
	if (F->by_start)
		acdc_append_keys_match(&sql, F->f, "t", "d");
	else
		appendStringInfoString(&sql, acdc_batch_row_id_match(F->f, F->by_keys, "t", "d"));
	if (F->by_start || F->by_keys)
		appendStringInfoString(&sql, " AND t.__start_at OPERATOR(pg_catalog.=) d.__start_at"
							   " AND t.__system_start_at OPERATOR(pg_catalog.=) d.__system_start_at");
	return sql.data;
}

/* The rows against the stored, by key, business start and system start; then the writes. */
static void
write_rows(Fold2 *F, BtRow *old, uint64 nold, BtRow *nv, uint64 nnew, FlowCounts *counts)
{
	int			nk = F->ev->nkeys;
	BatchRelation ins,
				del,
				close,
				reopen;
	BatchRelation *ends[] = {&close, &reopen};
	TupleDesc	idesc = acdc_rel_keyed_desc(F->ev->desc, nk, "__autocdc_k", F->nvals + 4);
	int			natts = 1 + nk + F->nvals + 4;
	Datum	   *values = palloc(sizeof(Datum) * natts);
	bool	   *nulls = palloc(sizeof(bool) * natts);
	uint64		i = 0,
				j = 0;
	char	   *match;
	static const char *const periods[] = {"__start_at", "__end_at", "__system_start_at", "__system_end_at"};

	acdc_init_value_entries(F, idesc, 2 + nk);
	field_entry(F, idesc, 2 + nk + F->nvals, "__start_at", 0);
	field_entry(F, idesc, 3 + nk + F->nvals, "__end_at", 0);
	field_entry(F, idesc, 4 + nk + F->nvals, "__system_start_at", 1);
	field_entry(F, idesc, 5 + nk + F->nvals, "__system_end_at", 1);
	acdc_batch_relation_begin(&ins, "__autocdc_ins", idesc);
	tid_relation(F, &del, "__autocdc_del");
	tid_relation(F, &close, "__autocdc_close");
	tid_relation(F, &reopen, "__autocdc_reopen");
	while (i < nold || j < nnew)
	{
		int			c = i == nold ? 1 : j == nnew ? -1 : row_order(&old[i], &nv[j], F);

		if (c == 0 && same_row(F, &old[i], &nv[j]))
		{
			if (old[i].sopen != nv[j].sopen ||
				(!nv[j].sopen && bt_cmp(F, 1, old[i].send, nv[j].send) != 0))
				put_tid(F, nv[j].sopen ? &reopen : &close, &old[i], &nv[j], values, nulls);
			i++;
			j++;
			continue;
		}
		if (c <= 0)
		{
			put_tid(F, &del, &old[i], NULL, values, nulls);
			i++;
		}
		if (c >= 0)
		{
			int			at = 1 + nk;

			acdc_put_key(F, nv[j].key, nv[j].keys, values, nulls);
			for (int v = 0; v < F->nvals; v++, at++)
			{
				values[at] = nv[j].vals[v];
				nulls[at] = nv[j].nulls[v];
			}
			values[at] = nv[j].start;
			nulls[at++] = false;
			values[at] = nv[j].end;
			nulls[at++] = nv[j].open;
			values[at] = nv[j].sstart;
			nulls[at++] = false;
			values[at] = nv[j].send;
			nulls[at] = nv[j].sopen;
			acdc_batch_relation_put(&ins, values, nulls);
			j++;
		}
	}

	match = stored_match(F);
	/* deletes, then rows closed, then reopened, then inserts: one current open row at a time */
	acdc_write_stored(F, &del, NULL, psprintf("DELETE FROM %s t USING %s d WHERE %s",
											  F->c->qtarget, del.name, match));
	for (int r = 0; r < lengthof(ends); r++)
		acdc_write_stored(F, ends[r], "__system_end_at",
						  psprintf("UPDATE %s t SET __system_end_at = d.__system_end_at FROM %s d WHERE %s",
								   F->c->qtarget, ends[r]->name, match));
	acdc_insert_batch(&ins, F->f->target, F->c->qtarget, acdc_keyed_columns(F, lengthof(periods), periods));
	counts->upserted += ins.n + reopen.n;
	counts->deleted += del.n + close.n;
}

/*
 * The chunk's fold: inp holds every stored and new event of its touched
 * keys, by key and sequence.
 */
void
acdc_bt_fold_write(Fold2 *F, Ev *inp, uint64 ninp, FlowCounts *counts)
{
	uint64		nold,
				nnew = 0,
				max = Max(ninp, 16);
	BtRow	   *old;
	BtRow	   *nv;
	instr_time	t[5],
				tread;

	if (ninp == 0)
	{
		/* nothing new: no key's beliefs change */
		acdc_write_new_events(F, counts);
		return;
	}
	INSTR_TIME_SET_CURRENT(t[0]);
	old = read_rows(F, &nold);
	INSTR_TIME_SET_CURRENT(t[4]);
	tread = t[4];
	INSTR_TIME_SUBTRACT(tread, t[0]);
	max = Max(max, nold);
	nv = palloc_extended(sizeof(BtRow) * max, MCXT_ALLOC_HUGE);

	for (uint64 i = 0, o = 0; i < ninp;)
	{
		uint64		n = i,
					no,
					from = nnew;

		while (n < ninp && inp[n].key == inp[i].key)
			n++;
		while (o < nold && old[o].key < inp[i].key)
			o++;
		for (no = o; no < nold && old[no].key == inp[i].key;)
			no++;
		fold_key(F, &inp[i], n - i, &old[o], no - o, &nv, &nnew, &max);
		/* keys come in order: sorting each key's rows sorts them all */
		qsort_arg(&nv[from], nnew - from, sizeof(BtRow), row_order, F);
		i = n;
		o = no;
	}
	INSTR_TIME_SET_CURRENT(t[1]);
	acdc_write_new_events(F, counts);
	INSTR_TIME_SET_CURRENT(t[2]);
	write_rows(F, old, nold, nv, nnew, counts);
	INSTR_TIME_SET_CURRENT(t[3]);
	INSTR_TIME_SUBTRACT(t[3], t[2]);
	INSTR_TIME_SUBTRACT(t[2], t[1]);
	INSTR_TIME_SUBTRACT(t[1], t[0]);
	elog(DEBUG1, "autocdc: flow \"%s\": bitemporal: %lu rows of %lu stored read in %.1f ms, read and folded in %.1f ms, events stored in %.1f ms, rows written in %.1f ms",
		 F->f->name, (unsigned long) nnew, (unsigned long) nold, INSTR_TIME_GET_MILLISEC(tread), INSTR_TIME_GET_MILLISEC(t[1]),
		 INSTR_TIME_GET_MILLISEC(t[2]), INSTR_TIME_GET_MILLISEC(t[3]));
}
