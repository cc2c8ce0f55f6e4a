/*-------------------------------------------------------------------------
 * scd2_stored.c
 *	  What the SCD type 2 fold reads of what is stored for a chunk's keys:
 *	  an index lookup per key for its open version and highest stored
 *	  sequence, the stored events at the chunk's sequences below that (the
 *	  check against what earlier runs applied), the last stored delete where
 *	  the fold cannot start at the open version, and the stored events and
 *	  versions from there.
 *-------------------------------------------------------------------------
 */
#include "scd2_fold.h"
#include "validate.h"

#include "access/relation.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/datum.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/typcache.h"

/* Stored inherit array: its mask, and whether it spells the same as ours. */
Bitmapset *
acdc_inherit_mask(Fold2 *F, Datum arr, bool isnull, Bitmapset *ours, bool *same)
{
	Datum	   *elems;
	bool	   *enulls;
	int			n;
	Bitmapset  *mask = NULL;
	int			k = 0;

	if (isnull)
	{
		*same = bms_is_empty(ours);
		return NULL;
	}
	deconstruct_array(DatumGetArrayTypeP(arr), TEXTOID, -1, false, TYPALIGN_INT,
					  &elems, &enulls, &n);
	*same = !bms_is_empty(ours);
	for (int i = 0; i < n; i++)
	{
		char	   *name = enulls[i] ? NULL : TextDatumGetCString(elems[i]);
		int			j;

		for (j = 0; j < F->nvals; j++)
			if (name && strcmp(name, F->names[j]) == 0)
				break;
		if (j < F->nvals)
			mask = bms_add_member(mask, j);
		/* the same spelling: our columns in order */
		while (k < F->nvals && !bms_is_member(k, ours))
			k++;
		if (k == F->nvals || j != k)
			*same = false;
		k++;
	}
	while (k < F->nvals && !bms_is_member(k, ours))
		k++;
	if (k < F->nvals)
		*same = false;
	return mask;
}

static int
ev_order(const void *x, const void *y, void *arg)
{
	const Ev   *a = x;
	const Ev   *c = y;

	return keyseq_cmp(arg, a->key, a->seq, c->key, c->seq);
}

/* Registers __autocdc_aff: the chunk's keys, (__autocdc_k, keys). */
static void
register_chunk_keys(Fold2 *F)
{
	BatchRelation r;
	Datum	   *values = palloc(sizeof(Datum) * (1 + F->ev->nkeys));
	bool	   *nulls = palloc(sizeof(bool) * (1 + F->ev->nkeys));

	acdc_batch_relation_begin(&r, "__autocdc_aff", acdc_rel_keyed_desc(F->ev->desc, F->ev->nkeys, "__autocdc_k", 0));
	for (uint32 k = 0; k < F->nkeysets; k++)
	{
		acdc_put_key(F, k, NULL, values, nulls);
		acdc_batch_relation_put(&r, values, nulls);
	}
	acdc_batch_relation_register(&r);
}

/* The key columns of a result row, from attribute "first" on. */
static Datum *
deform_keys(Fold2 *F, HeapTuple tup, TupleDesc desc, int first)
{
	Datum	   *keys = acdc_fold_alloc(F, sizeof(Datum) * F->ev->nkeys);
	bool		isnull;

	for (int i = 0; i < F->ev->nkeys; i++)
		keys[i] = heap_getattr(tup, first + i, desc, &isnull);
	return keys;
}

static void
deform_values(Fold2 *F, HeapTuple tup, TupleDesc desc, int first, Datum **vals, bool **nulls)
{
	*vals = acdc_fold_alloc(F, sizeof(Datum) * Max(F->nvals, 1));
	*nulls = acdc_fold_alloc(F, sizeof(bool) * Max(F->nvals, 1));
	for (int j = 0; j < F->nvals; j++)
		(*vals)[j] = heap_getattr(tup, first + j, desc, &(*nulls)[j]);
}

/*
 * Per key of the batch: its open version and its highest stored sequence.
 * Only events at or below that can be stored already.
 */
void
acdc_read_keys(Fold2 *F)
{
	FlowDef    *f = F->f;
	Form_pg_attribute seqatt = TupleDescAttr(F->ev->desc, F->ev->seq_att);
	StringInfoData sql;
	SPITupleTable *tt;

	F->modes = acdc_alloc_prefaulted(CurrentMemoryContext, sizeof(KeyMode) * Max(F->nkeysets, 1));
	memset(F->modes, 0, sizeof(KeyMode) * Max(F->nkeysets, 1));
	/* nothing stored: every key is new (chunks hold distinct keys) */
	if (F->all_new)
		return;
	register_chunk_keys(F);

	/*
	 * The highest sequence by the store's key; SCD 2: the last version by
	 * the primary key (the open one, unless the target was edited by
	 * hand), bitemporal: the open version by the partial unique index.
	 */
	initStringInfo(&sql);
	appendStringInfo(&sql, "SELECT a.__autocdc_k, o.ctid, o.tableoid, o.__start_at%s, %s, (SELECT s.__autocdc_seq FROM %s s WHERE ",
					 acdc_value_list(F, "o"), acdc_validate_prefixed_keys(f, "o"), F->c->qevents);
	acdc_append_keys_match(&sql, f, "s", "a");
	appendStringInfo(&sql, " ORDER BY s.__autocdc_seq DESC LIMIT 1), o.__end_at IS NULL FROM __autocdc_aff a "
					 "LEFT JOIN LATERAL (SELECT o.ctid, o.tableoid, o.* FROM %s o WHERE ", F->c->qtarget);
	acdc_append_keys_match(&sql, f, "o", "a");
	if (F->bt)
		appendStringInfoString(&sql, " AND o.__end_at IS NULL AND o.__system_end_at IS NULL OFFSET 0) o ON true");
	else
		appendStringInfoString(&sql, " ORDER BY o.__start_at DESC LIMIT 1) o ON true");
	acdc_spi_exec(sql.data, 0, NULL, NULL, NULL, false);
	tt = F->stored[2] = SPI_tuptable;
	for (uint64 r = 0; r < SPI_processed; r++)
	{
		HeapTuple	tup = tt->vals[r];
		bool		isnull;
		uint32		k = DatumGetInt32(heap_getattr(tup, 1, tt->tupdesc, &isnull));
		KeyMode    *m = &F->modes[k];
		Datum		d;
		Datum		last = heap_getattr(tup, 4, tt->tupdesc, &isnull);
		bool		has_last = !isnull;

		if (has_last && DatumGetBool(heap_getattr(tup, 6 + F->nvals + F->ev->nkeys, tt->tupdesc, &isnull)))
		{
			Version    *v = palloc(sizeof(Version));

			v->key = k;
			v->open = true;
			v->start = last;
			v->end = (Datum) 0;
			acdc_batch_get_row_id(tup, tt->tupdesc, 2, &v->row);
			deform_values(F, tup, tt->tupdesc, 5, &v->vals, &v->nulls);
			v->keys = deform_keys(F, tup, tt->tupdesc, 5 + F->nvals);
			m->openv = v;
		}
		d = heap_getattr(tup, 5 + F->nvals + F->ev->nkeys, tt->tupdesc, &isnull);
		m->has_max = !isnull;
		if (!isnull)
			m->max_stored = datumCopy(d, seqatt->attbyval, seqatt->attlen);
		if (!has_last || F->bt)
			continue;

		/*
		 * The store lacks only lone version starts (acdc_write_all), so
		 * the open version's start is stored if anything at or after it
		 * is; the key's highest applied event is the store's or the last
		 * version's start.
		 */
		if (m->openv)
			m->anchor_stored = m->has_max &&
				events_seq_cmp(F->ev, m->max_stored, last) >= 0;
		if (!m->has_max || events_seq_cmp(F->ev, m->max_stored, last) < 0)
		{
			m->has_max = true;
			m->max_stored = last;
		}
	}
}

/*
 * The chunk's events at or below their key's highest applied sequence that
 * are still fresh, as the relation "name" (a literal): (__autocdc_i, keys,
 * __autocdc_seq).  Returns false when there is none.
 */
static bool
register_applied_candidates(Fold2 *F, const char *name)
{
	TupleDesc	desc = acdc_rel_keyed_desc(F->ev->desc, F->ev->nkeys, "__autocdc_i", 1);
	BatchRelation ev2;
	Datum	   *values = palloc(sizeof(Datum) * desc->natts);
	bool	   *nulls = palloc(sizeof(bool) * desc->natts);

	acdc_seq_entry(F, desc, desc->natts, "__autocdc_seq");
	acdc_batch_relation_begin(&ev2, name, desc);
	for (uint64 i = 0; i < F->nevs; i++)
	{
		KeyMode    *m = &F->modes[F->evs[i].key];

		if (!F->evs[i].fresh || !m->has_max ||
			events_seq_cmp(F->ev, F->evs[i].seq, m->max_stored) > 0)
			continue;
		acdc_put_key(F, F->evs[i].key, NULL, values, nulls);
		values[0] = Int32GetDatum((int32) i);
		values[desc->natts - 1] = F->evs[i].seq;
		nulls[desc->natts - 1] = false;
		acdc_batch_relation_put(&ev2, values, nulls);
	}
	return acdc_batch_relation_register(&ev2);
}

/*
 * Looks the candidates up in rel (one index lookup each; OFFSET 0 keeps the
 * lateral a lateral), at seqcol: in the store, or among the target's
 * versions, whose starts are the upserts the store lacks.  A match must be
 * the same event, else conflict_applied; either way it is not new.
 */
static void
check_applied_in(Fold2 *F, const char *cands, const char *rel, const char *seqcol, bool store)
{
	StringInfoData sql;
	SPITupleTable *tt;
	char	   *col = psprintf("s.%s", seqcol);

	initStringInfo(&sql);
	appendStringInfo(&sql, "SELECT e.__autocdc_i, %s%s "
					 "FROM %s e CROSS JOIN LATERAL (SELECT s.* FROM %s s WHERE ",
					 store ? "s.__autocdc_kind, s.__autocdc_inherit" : "'u'::pg_catalog.text, NULL::pg_catalog.text[]",
					 acdc_value_list(F, "s"), cands, rel);
	acdc_append_keys_match(&sql, F->f, "s", "e");
	appendStringInfoString(&sql, " AND ");
	acdc_append_flow_seq_cmp(&sql, F->f, col, "=", "e.__autocdc_seq");
	appendStringInfoString(&sql, " OFFSET 0) s");
	acdc_spi_exec(sql.data, 0, NULL, NULL, NULL, false);
	tt = SPI_tuptable;
	for (uint64 r = 0; r < SPI_processed; r++)
	{
		HeapTuple	tup = tt->vals[r];
		bool		isnull;
		Ev		   *e = &F->evs[DatumGetInt32(heap_getattr(tup, 1, tt->tupdesc, &isnull))];
		char	   *kind = TextDatumGetCString(heap_getattr(tup, 2, tt->tupdesc, &isnull));
		Datum		inh = heap_getattr(tup, 3, tt->tupdesc, &isnull);
		bool		same;

		acdc_inherit_mask(F, inh, isnull, e->inherit, &same);
		for (int j = 0; same && j < F->nvals; j++)
		{
			bool		vnull;
			Datum		v = heap_getattr(tup, 4 + j, tt->tupdesc, &vnull);

			same = acdc_vals_equal(F, j, v, vnull, e->vals[j], e->nulls[j]);
		}
		/* set aside (quarantined), it is neither new nor skipped */
		if ((kind[0] != e->kind || !same) &&
			!acdc_events_set_aside_values(F->ev, "conflict_applied", e->keys, e->seq, e->row, kind[0]))
			F->nread--;
		e->fresh = false;
	}
	SPI_freetuptable(tt);
}

/*
 * The batch's events already applied must be the same events; they are
 * not new.  Raises conflict_applied on a difference.
 */
void
acdc_check_stored(Fold2 *F)
{
	if (F->all_new || !register_applied_candidates(F, "__autocdc_ev2"))
		return;
	check_applied_in(F, "__autocdc_ev2", F->c->qevents, "__autocdc_seq", true);
	/* a bitemporal store holds every event */
	if (F->bt || !register_applied_candidates(F, "__autocdc_ev3"))
		return;
	check_applied_in(F, "__autocdc_ev3", F->c->qtarget, "__start_at", false);
}

/*
 * Per touched key (one with a new event), where its fold starts:
 * anchored at its open version when every new event comes after
 * everything stored; else at the start of the last version that begins
 * before the earliest new event, when that start is an upsert setting
 * every column (stored without columns to inherit, or the version's row
 * alone) and no stored delete lies between: the fold from there is the
 * fold from the key's first event, since a version start ends what came
 * before it; else after the last stored delete before the earliest new
 * event.  Registers __autocdc_mode for the stored events and versions to
 * read.
 */
uint64
acdc_read_modes(Fold2 *F)
{
	Events	   *ev = F->ev;
	FlowDef    *f = F->f;
	TupleDesc	desc = acdc_rel_keyed_desc(ev->desc, ev->nkeys, "__autocdc_k", 1);
	TupleDesc	mdesc = acdc_rel_keyed_desc(ev->desc, ev->nkeys, "__autocdc_k", 2);
	BatchRelation loose,		/* (__autocdc_k, keys, __autocdc_smin) */
				mode;			/* (__autocdc_k, keys, __autocdc_pdel, __autocdc_from) */
	int			base = 1 + ev->nkeys;
	Datum	   *values = palloc(sizeof(Datum) * (base + 2));
	bool	   *nulls = palloc(sizeof(bool) * (base + 2));
	Form_pg_attribute seqatt = TupleDescAttr(ev->desc, ev->seq_att);
	StringInfoData sql;
	uint64		nfrom = 0;		/* keys folded from a version's start */

	acdc_seq_entry(F, desc, base + 1, "__autocdc_smin");
	acdc_batch_relation_begin(&loose, "__autocdc_aff2", desc);
	for (uint64 i = 0; i < F->nevs; i++)
	{
		Ev		   *e = &F->evs[i];
		KeyMode    *m = &F->modes[e->key];

		if (!e->fresh || m->touched)
			continue;
		m->touched = true;
		m->smin = e->seq;		/* events are in sequence order */
		m->anchored = m->openv != NULL && F->bt == NULL &&
			(!m->has_max || events_seq_cmp(ev, m->max_stored, m->smin) < 0);
		/* bitemporal: every stored event of the key (no delete bounds a belief) */
		if (m->anchored || F->bt || F->all_new)
			continue;
		acdc_put_key(F, e->key, NULL, values, nulls);
		values[base] = e->seq;
		nulls[base] = false;
		acdc_batch_relation_put(&loose, values, nulls);
	}
	if (acdc_batch_relation_register(&loose))
	{
		SPITupleTable *tt;

		/*
		 * The last stored delete before the earliest new event; the last
		 * version's start before it, and whether the store holds that
		 * start without columns to inherit (NULL: not stored, so the
		 * version's row alone).
		 */
		initStringInfo(&sql);
		appendStringInfo(&sql, "SELECT a.__autocdc_k, (SELECT s.__autocdc_seq FROM %s s WHERE ",
						 F->c->qevents);
		acdc_append_keys_match(&sql, f, "s", "a");
		appendStringInfoString(&sql, " AND s.__autocdc_kind OPERATOR(pg_catalog.=) 'd' AND ");
		acdc_append_flow_seq_cmp(&sql, f, "s.__autocdc_seq", "<", "a.__autocdc_smin");
		appendStringInfoString(&sql, " ORDER BY s.__autocdc_seq DESC LIMIT 1), v.__start_at, ");
		/* with no column to inherit, every upsert sets every column the fold keeps */
		if (bms_is_empty(F->inheriting))
			appendStringInfoString(&sql, "NULL::pg_catalog.bool");
		else
		{
			appendStringInfo(&sql, "(SELECT s.__autocdc_kind OPERATOR(pg_catalog.=) 'u' AND s.__autocdc_inherit IS NULL FROM %s s WHERE ",
							 F->c->qevents);
			acdc_append_keys_match(&sql, f, "s", "a");
			appendStringInfoString(&sql, " AND ");
			acdc_append_flow_seq_cmp(&sql, f, "s.__autocdc_seq", "=", "v.__start_at");
			appendStringInfoChar(&sql, ')');
		}
		appendStringInfo(&sql, " FROM %s a LEFT JOIN LATERAL (SELECT t.__start_at FROM %s t WHERE ",
						 loose.name, F->c->qtarget);
		acdc_append_keys_match(&sql, f, "t", "a");
		appendStringInfoString(&sql, " AND ");
		acdc_append_flow_seq_cmp(&sql, f, "t.__start_at", "<", "a.__autocdc_smin");
		appendStringInfoString(&sql, " ORDER BY t.__start_at DESC LIMIT 1) v ON true");
		acdc_spi_exec_by_key(sql.data);
		tt = SPI_tuptable;
		for (uint64 r = 0; r < SPI_processed; r++)
		{
			HeapTuple	tup = tt->vals[r];
			bool		isnull,
						vnull,
						fnull;
			KeyMode    *m = &F->modes[DatumGetInt32(heap_getattr(tup, 1, tt->tupdesc, &isnull))];
			Datum		d = heap_getattr(tup, 2, tt->tupdesc, &isnull);
			Datum		v = heap_getattr(tup, 3, tt->tupdesc, &vnull);
			Datum		full = heap_getattr(tup, 4, tt->tupdesc, &fnull);

			m->has_pdel = !isnull;
			if (!isnull)
				m->pdel = datumCopy(d, seqatt->attbyval, seqatt->attlen);
			m->has_from = !vnull && (fnull || DatumGetBool(full)) &&
				(!m->has_pdel || events_seq_cmp(ev, v, m->pdel) > 0);
			if (m->has_from)
				m->from = datumCopy(v, seqatt->attbyval, seqatt->attlen);
		}
		SPI_freetuptable(tt);
	}

	if (F->all_new)
		return 0;
	/* the keys not anchored, with where their fold starts, in the keys' order */
	acdc_seq_entry(F, mdesc, base + 1, "__autocdc_pdel");
	acdc_seq_entry(F, mdesc, base + 2, "__autocdc_from");
	acdc_batch_relation_begin(&mode, "__autocdc_mode", mdesc);
	for (uint32 k = 0; k < F->nkeysets; k++)
	{
		KeyMode    *m = &F->modes[k];

		if (!m->touched || m->anchored)
			continue;
		acdc_put_key(F, k, NULL, values, nulls);
		/* from the version's start, or after the delete */
		values[base] = m->pdel;
		nulls[base] = !m->has_pdel || m->has_from;
		values[base + 1] = m->from;
		nulls[base + 1] = !m->has_from;
		nfrom += m->has_from;
		acdc_batch_relation_put(&mode, values, nulls);
	}
	acdc_batch_relation_register(&mode);
	if (mode.n > 0)
		elog(DEBUG1, "autocdc: flow \"%s\": %llu keys folded again, %llu of them from a version's start",
			 f->name, (unsigned long long) mode.n, (unsigned long long) nfrom);
	return mode.n;
}

/*
 * "SELECT m.__autocdc_k, <cols> FROM __autocdc_mode m CROSS JOIN LATERAL
 * (SELECT a.ctid, a.tableoid, a.* FROM <rel> a WHERE <a's keys = m's>", for the caller
 * to finish: a lookup per key not anchored, run through the keys' index
 * (acdc_spi_exec_by_key): without statistics the planner takes a bitmap
 * scan per key, whose set-up costs more than the few rows it finds.
 */
static void
append_mode_lateral(StringInfo sql, Fold2 *F, const char *cols, const char *rel,
					const char *a)
{
	appendStringInfo(sql, "SELECT m.__autocdc_k, %s FROM __autocdc_mode m CROSS JOIN LATERAL "
					 "(SELECT %s.ctid, %s.tableoid, %s.* FROM %s %s WHERE ", cols, a, a, a, rel, a);
	acdc_append_keys_match(sql, F->f, a, "m");
}

/*
 * The upserts that started the stored versions and are not in the store
 * (st[0..nst), stored events): a version whose start the store lacks has
 * no other event in it (acdc_write_all), so its row holds that upsert's
 * values and keys exactly.  Returns the new count of st.
 */
static uint64
add_version_starts(Fold2 *F, Ev *st, uint64 nst, Version *vers, uint64 nver)
{
	uint64		nstored = nst;

	qsort_arg(st, nstored, sizeof(Ev), ev_order, F);
	for (uint64 r = 0; r < nver; r++)
	{
		Version    *v = &vers[r];
		Ev		   *e = &st[nst];

		e->key = v->key;
		e->seq = v->start;
		if (bsearch_arg(e, st, nstored, sizeof(Ev), ev_order, F) != NULL)
			continue;
		e->kind = 'u';
		e->fresh = false;
		e->in_store = false;
		e->inherit = NULL;
		e->keys = v->keys;
		e->vals = v->vals;
		e->nulls = v->nulls;
		e->row = (Datum) 0;
		nst++;
	}
	return nst;
}

/*
 * The fold's input besides the new events: for keys not anchored, the
 * stored events after the last delete and the stored versions from
 * there; for anchored keys, the open version, as a
 * stored version and as an event setting every column.  Both sorted.
 */
void
acdc_read_stored(Fold2 *F, uint64 nloose, Ev **inp, uint64 *ninp, Version **old, uint64 *nold)
{
	FlowDef    *f = F->f;
	StringInfoData sql;
	SPITupleTable *ev_tt = NULL,
			   *ver_tt = NULL;
	uint64		nev = 0,
				nver = 0,
				nst = 0;
	Ev		   *st;				/* stored events and anchors */

	if (nloose > 0)
	{
		initStringInfo(&sql);
		append_mode_lateral(&sql, F, psprintf("s.__autocdc_seq, s.__autocdc_kind, s.__autocdc_inherit%s, %s",
											  acdc_value_list(F, "s"), acdc_validate_prefixed_keys(f, "s")),
							F->c->qevents, "s");
		appendStringInfoString(&sql, " AND (m.__autocdc_pdel IS NULL OR ");
		acdc_append_flow_seq_cmp(&sql, f, "s.__autocdc_seq", ">", "m.__autocdc_pdel");
		appendStringInfoString(&sql, ") AND (m.__autocdc_from IS NULL OR ");
		acdc_append_flow_seq_cmp(&sql, f, "s.__autocdc_seq", ">=", "m.__autocdc_from");
		appendStringInfoString(&sql, ") OFFSET 0) s");
		acdc_spi_exec_by_key(sql.data);
		ev_tt = SPI_tuptable;
		nev = SPI_processed;

		/* three branches, so that each is a range scan of the (keys, __start_at) index */
		resetStringInfo(&sql);
		for (int branch = 0; branch < 3 && F->bt == NULL; branch++)
		{
			if (branch > 0)
				appendStringInfoString(&sql, " UNION ALL ");
			append_mode_lateral(&sql, F, psprintf("t.ctid, t.tableoid, t.__start_at, t.__end_at%s, %s",
												  acdc_value_list(F, "t"), acdc_validate_prefixed_keys(f, "t")),
								F->c->qtarget, "t");
			if (branch == 0)
				appendStringInfoString(&sql, " AND m.__autocdc_pdel IS NULL AND m.__autocdc_from IS NULL OFFSET 0) t");
			else if (branch == 1)
			{
				appendStringInfoString(&sql, " AND ");
				acdc_append_flow_seq_cmp(&sql, f, "t.__start_at", ">", "m.__autocdc_pdel");
				appendStringInfoString(&sql, " OFFSET 0) t WHERE m.__autocdc_pdel IS NOT NULL");
			}
			else
			{
				appendStringInfoString(&sql, " AND ");
				acdc_append_flow_seq_cmp(&sql, f, "t.__start_at", ">=", "m.__autocdc_from");
				appendStringInfoString(&sql, " OFFSET 0) t WHERE m.__autocdc_from IS NOT NULL");
			}
		}
		if (F->bt == NULL)
		{
			acdc_spi_exec_by_key(sql.data);
			ver_tt = SPI_tuptable;
			nver = SPI_processed;
		}
	}
	F->stored[0] = ev_tt;
	F->stored[1] = ver_tt;

	/* room for the stored events and versions, their starts, an anchor per key, the new events */
	*old = acdc_alloc_prefaulted(CurrentMemoryContext, sizeof(Version) * (nver + F->nkeysets + 1));
	st = acdc_alloc_prefaulted(CurrentMemoryContext, sizeof(Ev) * (nev + nver + F->nkeysets + 1));
	*inp = acdc_alloc_prefaulted(CurrentMemoryContext, sizeof(Ev) * (nev + nver + F->nkeysets + F->nevs + 1));
	*nold = 0;
	*ninp = 0;
	for (uint64 r = 0; r < nver; r++)
	{
		HeapTuple	tup = ver_tt->vals[r];
		Version    *v = &(*old)[(*nold)++];
		bool		isnull;

		v->key = DatumGetInt32(heap_getattr(tup, 1, ver_tt->tupdesc, &isnull));
		acdc_batch_get_row_id(tup, ver_tt->tupdesc, 2, &v->row);
		v->start = heap_getattr(tup, 4, ver_tt->tupdesc, &isnull);
		v->end = heap_getattr(tup, 5, ver_tt->tupdesc, &isnull);
		v->open = isnull;
		deform_values(F, tup, ver_tt->tupdesc, 6, &v->vals, &v->nulls);
		v->keys = deform_keys(F, tup, ver_tt->tupdesc, 6 + F->nvals);
	}
	for (uint64 r = 0; r < nev; r++)
	{
		HeapTuple	tup = ev_tt->vals[r];
		Ev		   *e = &st[nst++];
		bool		isnull,
					same;
		Datum		inh;

		e->key = DatumGetInt32(heap_getattr(tup, 1, ev_tt->tupdesc, &isnull));
		e->seq = heap_getattr(tup, 2, ev_tt->tupdesc, &isnull);
		e->kind = TextDatumGetCString(heap_getattr(tup, 3, ev_tt->tupdesc, &isnull))[0];
		e->fresh = false;
		e->in_store = true;
		inh = heap_getattr(tup, 4, ev_tt->tupdesc, &isnull);
		e->inherit = acdc_inherit_mask(F, inh, isnull, NULL, &same);
		deform_values(F, tup, ev_tt->tupdesc, 5, &e->vals, &e->nulls);
		e->keys = deform_keys(F, tup, ev_tt->tupdesc, 5 + F->nvals);
	}
	nst = add_version_starts(F, st, nst, *old, *nold);
	for (uint32 k = 0; k < F->nkeysets; k++)
	{
		KeyMode    *m = &F->modes[k];
		Ev		   *e;

		if (!m->touched || !m->anchored)
			continue;
		(*old)[(*nold)++] = *m->openv;
		e = &st[nst++];
		e->key = k;
		e->seq = m->openv->start;
		e->kind = 'a';
		e->fresh = false;
		e->in_store = m->anchor_stored;
		e->inherit = NULL;
		e->keys = m->openv->keys;
		e->vals = m->openv->vals;
		e->nulls = m->openv->nulls;
	}
	qsort_arg(*old, *nold, sizeof(Version), acdc_version_order, F);

	/* the new events are in order already: sort the few others, then merge */
	qsort_arg(st, nst, sizeof(Ev), ev_order, F);
	for (uint64 i = 0, j = 0; i < F->nevs || j < nst;)
	{
		if (i < F->nevs && !F->evs[i].fresh)
			i++;
		else if (j < nst && (i == F->nevs || ev_order(&st[j], &F->evs[i], F) < 0))
			(*inp)[(*ninp)++] = st[j++];
		else
			(*inp)[(*ninp)++] = F->evs[i++];
	}
}
