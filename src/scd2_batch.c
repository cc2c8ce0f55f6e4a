/*-------------------------------------------------------------------------
 * scd2_batch.c
 *	  The SCD type 2 fold in C (see scd2_batch.h), the same fold as scd2.c's
 *	  window functions, over the same inputs.
 *
 * The SQL fold spends most of a large run in window functions and sorts
 * over every event (eight sorts of the batch at a million events).  Here
 * the events are read once and sorted once, by key and sequence; SQL is
 * asked only for what is stored, an index lookup per key: its open version
 * and highest stored sequence, the stored events at the batch's sequences
 * below that (the check against what earlier runs applied), the last
 * stored delete where the fold cannot start at the open version, and the
 * stored events and versions from there.  For each touched key the fold
 * (scd2_write.c) walks its events in sequence order: a delete ends a group
 * and the version open in it; in a group an upsert takes the columns it
 * leaves to inherit from the latest event that set them, and starts a
 * version when a tracked column changes.  The new versions are compared
 * with the stored ones by start: a version whose end alone moved is updated
 * in place, others are deleted and inserted, through ephemeral relations.
 *
 * Duplicates in the batch are told apart by a hash of their binary values
 * as in the SCD 1 fold; whatever looks wrong goes to the SQL fold.
 *-------------------------------------------------------------------------
 */
#include "retention.h"
#include "scd2_batch_int.h"
#include "validate.h"

#include "access/relation.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "storage/itemptr.h"
#include "utils/datum.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/typcache.h"




bool
vals_equal(Fold2 *F, int j, Datum a, bool anull, Datum b, bool bnull)
{
	if (anull || bnull)
		return anull && bnull;
	if (!OidIsValid(F->eq[j].fn_oid))	/* no "=": as SQL compares it, as text */
		return strcmp(value_text(a, false, F->valatt[j]->atttypid),
					  value_text(b, false, F->valatt[j]->atttypid)) == 0;
	return DatumGetBool(FunctionCall2Coll(&F->eq[j], F->coll[j], a, b));
}

/* The event row in the store's shape (append_normalized in scd2.c). */
static void
normalize(Fold2 *F, TupleTableSlot *slot, Ev *e)
{
	e->keys = palloc(sizeof(Datum) * F->ev->nkeys);
	for (int i = 0; i < F->ev->nkeys; i++)
		e->keys[i] = slot->tts_values[i];
	e->vals = palloc(sizeof(Datum) * Max(F->nvals, 1));
	e->nulls = palloc(sizeof(bool) * Max(F->nvals, 1));
	e->inherit = 0;
	for (int j = 0; j < F->nvals; j++)
	{
		int			a = F->evatt[j];

		e->nulls[j] = true;
		e->vals[j] = (Datum) 0;
		if (e->kind != 'u')
			continue;
		if (a >= 0)
		{
			e->vals[j] = slot->tts_values[a];
			e->nulls[j] = slot->tts_isnull[a];
		}
		if (a < 0 || ((F->ignore_null & BIT(j)) && e->nulls[j]))
			e->inherit |= BIT(j);
	}
}

/* Stored inherit array: its mask, and whether it spells the same as ours. */
static uint64
inherit_mask(Fold2 *F, Datum arr, bool isnull, uint64 ours, bool *same)
{
	Datum	   *elems;
	bool	   *enulls;
	int			n;
	uint64		mask = 0;
	int			k = 0;

	if (isnull)
	{
		*same = (ours == 0);
		return 0;
	}
	deconstruct_array(DatumGetArrayTypeP(arr), TEXTOID, -1, false, TYPALIGN_INT,
					  &elems, &enulls, &n);
	*same = (ours != 0);
	for (int i = 0; i < n; i++)
	{
		char	   *name = enulls[i] ? NULL : TextDatumGetCString(elems[i]);
		int			j;

		for (j = 0; j < F->nvals; j++)
			if (name && strcmp(name, F->names[j]) == 0)
				break;
		if (j < F->nvals)
			mask |= BIT(j);
		/* the same spelling: our columns in order */
		while (k < F->nvals && !(ours & BIT(k)))
			k++;
		if (k == F->nvals || j != k)
			*same = false;
		k++;
	}
	while (k < F->nvals && !(ours & BIT(k)))
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

int
version_order(const void *x, const void *y, void *arg)
{
	const Version *a = x;
	const Version *c = y;

	return keyseq_cmp(arg, a->key, a->start, c->key, c->start);
}

/*
 * Reads the events of the chunk's keys, from key "first" on, until their
 * rows pass "bound" bytes: the chunk's distinct events, by key and
 * sequence (two events at one key and sequence are one, events.c checked
 * that).  Returns the first key of the next chunk.
 */
static uint32
load_chunk(Fold2 *F, uint32 first, Size bound, MemoryContext cxt)
{
	Events	   *ev = F->ev;
	TupleTableSlot *slot = MakeSingleTupleTableSlot(ev->desc, &TTSOpsMinimalTuple);
	uint64		maxevs = 1024;
	uint32		maxkeys = 1024;
	uint32		k;

	F->nkeysets = 0;
	F->nevs = 0;
	F->nread = 0;
	F->evs = palloc(sizeof(Ev) * maxevs);
	F->keyvals = palloc(sizeof(Datum) * ev->nkeys * maxkeys);
	for (k = first; k < ev->nkeysets; k++)
	{
		uint32		key = F->nkeysets++;

		if (key > 0 && MemoryContextMemAllocated(cxt, true) >= bound)
		{
			F->nkeysets--;
			break;
		}
		CHECK_FOR_INTERRUPTS();
		if (F->nevs + ev->nevents[k] > maxevs)
		{
			maxevs = Max(maxevs * 2, F->nevs + ev->nevents[k]);
			F->evs = repalloc_huge(F->evs, sizeof(Ev) * maxevs);
		}
		if (key == maxkeys)
		{
			maxkeys *= 2;
			F->keyvals = repalloc_huge(F->keyvals, sizeof(Datum) * ev->nkeys * maxkeys);
		}
		F->nread += ev->nevents[k];
		for (uint32 n = 0; n < ev->nevents[k]; n++)
		{
			TupleTableSlot *e = events_next(ev);
			Ev		   *x;

			if (e == NULL)
				elog(ERROR, "autocdc: flow \"%s\" ran out of events", F->f->name);
			/* a repeat of the event before it */
			if (n > 0 && events_seq_cmp(ev, F->evs[F->nevs - 1].seq, e->tts_values[ev->seq_att]) == 0)
				continue;
			/* the values point into a copy of the row, kept with the chunk */
			ExecStoreMinimalTuple(ExecCopySlotMinimalTuple(e), slot, false);
			slot_getallattrs(slot);
			x = &F->evs[F->nevs++];
			x->key = key;
			x->kind = events_kind(ev, slot);
			x->fresh = true;
			x->seq = slot->tts_values[ev->seq_att];
			normalize(F, slot, x);
			if (n == 0)
				memcpy(&F->keyvals[(Size) key * ev->nkeys], slot->tts_values, sizeof(Datum) * ev->nkeys);
			ExecClearTuple(slot);
		}
	}
	ExecDropSingleTupleTableSlot(slot);
	return k;
}

/* values[0] := key number, values[1..] := its keys */
void
put_key(Fold2 *F, uint32 key, Datum *keys, Datum *values, bool *nulls)
{
	values[0] = Int32GetDatum((int32) key);
	nulls[0] = false;
	for (int i = 0; i < F->ev->nkeys; i++)
	{
		values[1 + i] = keys ? keys[i] : F->keyvals[(Size) key * F->ev->nkeys + i];
		nulls[1 + i] = false;
	}
}

/* Attribute attno of desc as "name", of the sequence's type and collation. */
void
seq_entry(Fold2 *F, TupleDesc desc, int attno, const char *name)
{
	rel_copy_entry(desc, attno, F->ev->desc, F->ev->seq_att, name);
}

/* Registers __autocdc_aff: the chunk's keys, (__autocdc_k, keys). */
static void
register_chunk_keys(Fold2 *F)
{
	BatchRelation r;
	Datum	   *values = palloc(sizeof(Datum) * (1 + F->ev->nkeys));
	bool	   *nulls = palloc(sizeof(bool) * (1 + F->ev->nkeys));

	batch_relation_begin(&r, "__autocdc_aff", rel_keyed_desc(F->ev->desc, F->ev->nkeys, "__autocdc_k", 0));
	for (uint32 k = 0; k < F->nkeysets; k++)
	{
		put_key(F, k, NULL, values, nulls);
		batch_relation_put(&r, values, nulls);
	}
	batch_relation_register(&r);
}

void
init_value_entries(Fold2 *F, TupleDesc desc, int first)
{
	for (int j = 0; j < F->nvals; j++)
	{
		TupleDescInitEntry(desc, first + j, F->names[j], F->valatt[j]->atttypid,
						   F->valatt[j]->atttypmod, 0);
		TupleDescInitEntryCollation(desc, first + j, F->valatt[j]->attcollation);
	}
}

/* The key columns of a result row, from attribute "first" on. */
static Datum *
deform_keys(Fold2 *F, HeapTuple tup, TupleDesc desc, int first)
{
	Datum	   *keys = palloc(sizeof(Datum) * F->ev->nkeys);
	bool		isnull;

	for (int i = 0; i < F->ev->nkeys; i++)
		keys[i] = heap_getattr(tup, first + i, desc, &isnull);
	return keys;
}

/* ", s.v1, s.v2" (", v1, v2" without an alias) */
char *
value_list(Fold2 *F, const char *alias)
{
	StringInfoData buf;

	initStringInfo(&buf);
	if (F->nvals > 0)
	{
		appendStringInfoString(&buf, ", ");
		append_column_list(&buf, F->c->values, alias);
	}
	return buf.data;
}

static void
deform_values(Fold2 *F, HeapTuple tup, TupleDesc desc, int first, Datum **vals, bool **nulls)
{
	*vals = palloc(sizeof(Datum) * Max(F->nvals, 1));
	*nulls = palloc(sizeof(bool) * Max(F->nvals, 1));
	for (int j = 0; j < F->nvals; j++)
		(*vals)[j] = heap_getattr(tup, first + j, desc, &(*nulls)[j]);
}

/*
 * Per key of the batch: its open version and its highest stored sequence.
 * Only events at or below that can be stored already.
 */
static void
read_keys(Fold2 *F)
{
	FlowDef    *f = F->f;
	Form_pg_attribute seqatt = TupleDescAttr(F->ev->desc, F->ev->seq_att);
	StringInfoData sql;
	SPITupleTable *tt;

	F->modes = palloc_extended(sizeof(KeyMode) * Max(F->nkeysets, 1), MCXT_ALLOC_HUGE | MCXT_ALLOC_ZERO);
	register_chunk_keys(F);

	/* the open version by the partial unique index, the highest sequence by the store's key */
	initStringInfo(&sql);
	appendStringInfo(&sql, "SELECT a.__autocdc_k, o.ctid, o.tableoid, o.__start_at%s, %s, (SELECT s.__autocdc_seq FROM %s s WHERE ",
					 value_list(F, "o"), validate_prefixed_keys(f, "o"), F->c->qevents);
	append_keys_match(&sql, f, "s", "a");
	appendStringInfo(&sql, " ORDER BY s.__autocdc_seq DESC LIMIT 1) FROM __autocdc_aff a "
					 "LEFT JOIN LATERAL (SELECT o.ctid, o.tableoid, o.* FROM %s o WHERE ", F->c->qtarget);
	append_keys_match(&sql, f, "o", "a");
	appendStringInfoString(&sql, " AND o.__end_at IS NULL OFFSET 0) o ON true");
	spi_exec(sql.data, 0, NULL, NULL, NULL, false);
	tt = F->stored[2] = SPI_tuptable;
	for (uint64 r = 0; r < SPI_processed; r++)
	{
		HeapTuple	tup = tt->vals[r];
		bool		isnull;
		uint32		k = DatumGetInt32(heap_getattr(tup, 1, tt->tupdesc, &isnull));
		KeyMode    *m = &F->modes[k];
		Datum		d;

		d = heap_getattr(tup, 4, tt->tupdesc, &isnull);
		if (!isnull)
		{
			Version    *v = palloc(sizeof(Version));

			v->key = k;
			v->open = true;
			v->start = d;
			v->end = (Datum) 0;
			batch_get_row_id(tup, tt->tupdesc, 2, &v->row);
			deform_values(F, tup, tt->tupdesc, 5, &v->vals, &v->nulls);
			v->keys = deform_keys(F, tup, tt->tupdesc, 5 + F->nvals);
			m->openv = v;
		}
		d = heap_getattr(tup, 5 + F->nvals + F->ev->nkeys, tt->tupdesc, &isnull);
		m->has_max = !isnull;
		if (!isnull)
			m->max_stored = datumCopy(d, seqatt->attbyval, seqatt->attlen);
	}
}

/*
 * The batch's events already in the store must be the same events; they
 * are not new.  Raises conflict_applied on a difference.
 */
static void
check_stored(Fold2 *F)
{
	FlowDef    *f = F->f;
	TupleDesc	desc = rel_keyed_desc(F->ev->desc, F->ev->nkeys, "__autocdc_i", 1);
	BatchRelation ev2;
	Datum	   *values = palloc(sizeof(Datum) * desc->natts);
	bool	   *nulls = palloc(sizeof(bool) * desc->natts);
	StringInfoData sql;
	SPITupleTable *tt;

	seq_entry(F, desc, desc->natts, "__autocdc_seq");
	batch_relation_begin(&ev2, "__autocdc_ev2", desc);
	for (uint64 i = 0; i < F->nevs; i++)
	{
		KeyMode    *m = &F->modes[F->evs[i].key];

		if (!m->has_max || events_seq_cmp(F->ev, F->evs[i].seq, m->max_stored) > 0)
			continue;
		put_key(F, F->evs[i].key, NULL, values, nulls);
		values[0] = Int32GetDatum((int32) i);
		values[desc->natts - 1] = F->evs[i].seq;
		nulls[desc->natts - 1] = false;
		batch_relation_put(&ev2, values, nulls);
	}
	if (!batch_relation_register(&ev2))
		return;

	/* one index lookup per event (OFFSET 0 keeps the lateral a lateral) */
	initStringInfo(&sql);
	appendStringInfo(&sql, "SELECT e.__autocdc_i, s.__autocdc_kind, s.__autocdc_inherit%s "
					 "FROM __autocdc_ev2 e CROSS JOIN LATERAL (SELECT s.* FROM %s s WHERE ",
					 value_list(F, "s"), F->c->qevents);
	append_keys_match(&sql, f, "s", "e");
	appendStringInfoString(&sql, " AND ");
	append_flow_seq_cmp(&sql, f, "s.__autocdc_seq", "=", "e.__autocdc_seq");
	appendStringInfoString(&sql, " OFFSET 0) s");
	spi_exec(sql.data, 0, NULL, NULL, NULL, false);
	tt = SPI_tuptable;
	for (uint64 r = 0; r < SPI_processed; r++)
	{
		HeapTuple	tup = tt->vals[r];
		bool		isnull;
		Ev		   *e = &F->evs[DatumGetInt32(heap_getattr(tup, 1, tt->tupdesc, &isnull))];
		char	   *kind = TextDatumGetCString(heap_getattr(tup, 2, tt->tupdesc, &isnull));
		Datum		inh = heap_getattr(tup, 3, tt->tupdesc, &isnull);
		bool		same;

		inherit_mask(F, inh, isnull, e->inherit, &same);
		for (int j = 0; same && j < F->nvals; j++)
		{
			bool		vnull;
			Datum		v = heap_getattr(tup, 4 + j, tt->tupdesc, &vnull);

			same = vals_equal(F, j, v, vnull, e->vals[j], e->nulls[j]);
		}
		if (kind[0] != e->kind || !same)
			events_report(F->ev, "conflict_applied", e->keys, e->seq);
		e->fresh = false;
	}
	SPI_freetuptable(tt);
}

/*
 * Per touched key (one with a new event), where its fold starts (mode in
 * scd2.c): anchored at its open version when every new event comes after
 * everything stored, else after the last stored delete before the earliest
 * new event.  Registers __autocdc_mode for the stored events and versions
 * to read.
 */
static uint64
read_modes(Fold2 *F)
{
	Events	   *ev = F->ev;
	FlowDef    *f = F->f;
	TupleDesc	desc = rel_keyed_desc(ev->desc, ev->nkeys, "__autocdc_k", 1);
	TupleDesc	mdesc = rel_keyed_desc(ev->desc, ev->nkeys, "__autocdc_k", 1);
	BatchRelation loose,		/* (__autocdc_k, keys, __autocdc_smin) */
				mode;			/* (__autocdc_k, keys, __autocdc_pdel) */
	int			base = 1 + ev->nkeys;
	Datum	   *values = palloc(sizeof(Datum) * (base + 1));
	bool	   *nulls = palloc(sizeof(bool) * (base + 1));
	Form_pg_attribute seqatt = TupleDescAttr(ev->desc, ev->seq_att);
	StringInfoData sql;

	seq_entry(F, desc, base + 1, "__autocdc_smin");
	batch_relation_begin(&loose, "__autocdc_aff2", desc);
	for (uint64 i = 0; i < F->nevs; i++)
	{
		Ev		   *e = &F->evs[i];
		KeyMode    *m = &F->modes[e->key];

		if (!e->fresh || m->touched)
			continue;
		m->touched = true;
		m->smin = e->seq;		/* events are in sequence order */
		m->anchored = m->openv != NULL &&
			(!m->has_max || events_seq_cmp(ev, m->max_stored, m->smin) < 0);
		if (m->anchored)
			continue;
		put_key(F, e->key, NULL, values, nulls);
		values[base] = e->seq;
		nulls[base] = false;
		batch_relation_put(&loose, values, nulls);
	}
	if (batch_relation_register(&loose))
	{
		SPITupleTable *tt;

		initStringInfo(&sql);
		appendStringInfo(&sql, "SELECT a.__autocdc_k, (SELECT s.__autocdc_seq FROM %s s WHERE ",
						 F->c->qevents);
		append_keys_match(&sql, f, "s", "a");
		appendStringInfoString(&sql, " AND s.__autocdc_kind OPERATOR(pg_catalog.=) 'd' AND ");
		append_flow_seq_cmp(&sql, f, "s.__autocdc_seq", "<", "a.__autocdc_smin");
		appendStringInfo(&sql, " ORDER BY s.__autocdc_seq DESC LIMIT 1) FROM %s a", loose.name);
		spi_exec(sql.data, 0, NULL, NULL, NULL, false);
		tt = SPI_tuptable;
		for (uint64 r = 0; r < SPI_processed; r++)
		{
			HeapTuple	tup = tt->vals[r];
			bool		isnull;
			KeyMode    *m = &F->modes[DatumGetInt32(heap_getattr(tup, 1, tt->tupdesc, &isnull))];
			Datum		d = heap_getattr(tup, 2, tt->tupdesc, &isnull);

			m->has_pdel = !isnull;
			if (!isnull)
				m->pdel = datumCopy(d, seqatt->attbyval, seqatt->attlen);
		}
		SPI_freetuptable(tt);
	}

	/* the keys not anchored, with where their fold starts, in the keys' order */
	seq_entry(F, mdesc, base + 1, "__autocdc_pdel");
	batch_relation_begin(&mode, "__autocdc_mode", mdesc);
	for (uint32 k = 0; k < F->nkeysets; k++)
	{
		KeyMode    *m = &F->modes[k];

		if (!m->touched || m->anchored)
			continue;
		put_key(F, k, NULL, values, nulls);
		values[base] = m->pdel;
		nulls[base] = !m->has_pdel;
		batch_relation_put(&mode, values, nulls);
	}
	batch_relation_register(&mode);
	return mode.n;
}

/*
 * "SELECT m.__autocdc_k, <cols> FROM __autocdc_mode m CROSS JOIN LATERAL
 * (SELECT a.ctid, a.tableoid, a.* FROM <rel> a WHERE <a's keys = m's>", for the caller
 * to finish: a lookup per key not anchored.
 */
static void
append_mode_lateral(StringInfo sql, Fold2 *F, const char *cols, const char *rel,
					const char *a)
{
	appendStringInfo(sql, "SELECT m.__autocdc_k, %s FROM __autocdc_mode m CROSS JOIN LATERAL "
					 "(SELECT %s.ctid, %s.tableoid, %s.* FROM %s %s WHERE ", cols, a, a, a, rel, a);
	append_keys_match(sql, F->f, a, "m");
}

/*
 * The fold's input besides the new events: for keys not anchored, the
 * stored events after the last delete (inp in scd2.c) and the stored
 * versions from there (oldv); for anchored keys, the open version, as a
 * stored version and as an event setting every column.  Both sorted.
 */
static void
read_stored(Fold2 *F, uint64 nloose, Ev **inp, uint64 *ninp, Version **old, uint64 *nold)
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
											  value_list(F, "s"), validate_prefixed_keys(f, "s")),
							F->c->qevents, "s");
		appendStringInfoString(&sql, " AND (m.__autocdc_pdel IS NULL OR ");
		append_flow_seq_cmp(&sql, f, "s.__autocdc_seq", ">", "m.__autocdc_pdel");
		appendStringInfoString(&sql, ") OFFSET 0) s");
		spi_exec(sql.data, 0, NULL, NULL, NULL, false);
		ev_tt = SPI_tuptable;
		nev = SPI_processed;

		/* two branches, so that each is a range scan of the (keys, __start_at) index */
		resetStringInfo(&sql);
		for (int branch = 0; branch < 2; branch++)
		{
			if (branch > 0)
				appendStringInfoString(&sql, " UNION ALL ");
			append_mode_lateral(&sql, F, psprintf("t.ctid, t.tableoid, t.__start_at, t.__end_at%s, %s",
												  value_list(F, "t"), validate_prefixed_keys(f, "t")),
								F->c->qtarget, "t");
			if (branch == 0)
				appendStringInfoString(&sql, " AND m.__autocdc_pdel IS NULL OFFSET 0) t");
			else
			{
				appendStringInfoString(&sql, " AND ");
				append_flow_seq_cmp(&sql, f, "t.__start_at", ">", "m.__autocdc_pdel");
				appendStringInfoString(&sql, " OFFSET 0) t WHERE m.__autocdc_pdel IS NOT NULL");
			}
		}
		spi_exec(sql.data, 0, NULL, NULL, NULL, false);
		ver_tt = SPI_tuptable;
		nver = SPI_processed;
	}
	F->stored[0] = ev_tt;
	F->stored[1] = ver_tt;

	/* room for the stored events and versions, an anchor per key, the new events */
	*old = palloc_extended(sizeof(Version) * (nver + F->nkeysets + 1), MCXT_ALLOC_HUGE);
	st = palloc_extended(sizeof(Ev) * (nev + F->nkeysets + 1), MCXT_ALLOC_HUGE);
	*inp = palloc_extended(sizeof(Ev) * (nev + F->nkeysets + F->nevs + 1), MCXT_ALLOC_HUGE);
	*nold = 0;
	*ninp = 0;
	for (uint64 r = 0; r < nver; r++)
	{
		HeapTuple	tup = ver_tt->vals[r];
		Version    *v = &(*old)[(*nold)++];
		bool		isnull;

		v->key = DatumGetInt32(heap_getattr(tup, 1, ver_tt->tupdesc, &isnull));
		batch_get_row_id(tup, ver_tt->tupdesc, 2, &v->row);
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
		inh = heap_getattr(tup, 4, ev_tt->tupdesc, &isnull);
		e->inherit = inherit_mask(F, inh, isnull, 0, &same);
		deform_values(F, tup, ev_tt->tupdesc, 5, &e->vals, &e->nulls);
		e->keys = deform_keys(F, tup, ev_tt->tupdesc, 5 + F->nvals);
	}
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
		e->inherit = 0;
		e->keys = m->openv->keys;
		e->vals = m->openv->vals;
		e->nulls = m->openv->nulls;
	}
	qsort_arg(*old, *nold, sizeof(Version), version_order, F);

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

static void
fold2_setup(Fold2 *F, FlowDef *f, Scd2Cols *c)
{
	Relation	rel = relation_open(f->target, AccessShareLock);
	ListCell   *lc;
	int			j = 0;

	F->f = f;
	F->c = c;
	F->nvals = list_length(c->values);
	F->names = palloc(sizeof(char *) * Max(F->nvals, 1));
	F->eq = palloc0(sizeof(FmgrInfo) * Max(F->nvals, 1));
	F->coll = palloc(sizeof(Oid) * Max(F->nvals, 1));
	F->valatt = palloc(sizeof(Form_pg_attribute) * Max(F->nvals, 1));
	F->evatt = palloc(sizeof(int) * Max(F->nvals, 1));
	foreach(lc, c->values)
	{
		char	   *name = lfirst(lc);
		AttrNumber	att = get_attnum(f->target, name);
		Form_pg_attribute form = palloc(ATTRIBUTE_FIXED_PART_SIZE);
		TypeCacheEntry *tc;
		int			k;

		memcpy(form, TupleDescAttr(RelationGetDescr(rel), att - 1), ATTRIBUTE_FIXED_PART_SIZE);
		F->valatt[j] = form;
		F->names[j] = name;
		F->coll[j] = form->attcollation;
		tc = lookup_type_cache(form->atttypid, TYPECACHE_EQ_OPR_FINFO);
		fmgr_info_copy(&F->eq[j], &tc->eq_opr_finfo, CurrentMemoryContext);
		k = list_index_of_string(f->columns, name);
		F->evatt[j] = k < 0 ? -1 : list_length(f->keys) + 2 + k;
		if (list_has_string(f->ignore_null, name))
			F->ignore_null |= BIT(j);
		if (list_has_string(c->inheriting, name))
			F->inheriting |= BIT(j);
		if (list_has_string(c->tracked, name))
			F->tracked |= BIT(j);
		j++;
	}
	relation_close(rel, AccessShareLock);
}

/*
 * Folds the run's events (events_sql) into the SCD 2 target, chunk by
 * chunk of keys: each chunk's events, stored events and versions are held
 * in memory up to about work_mem, then written.
 */
static void
scd2_batch_apply(FlowDef *f, ReadParams *p, const char *events_sql,
				 Scd2Cols *c, FlowCounts *counts)
{
	Fold2		F;
	Events	   *ev;
	MemoryContext chunk_cxt;
	MemoryContext oldcxt;
	Size		bound = (Size) work_mem * 1024;

	if (list_length(c->values) > 64)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("flow \"%s\": SCD type 2 target \"%s\" has %d value columns",
						f->name, get_rel_name(f->target), list_length(c->values)),
				 errdetail("An SCD type 2 target holds at most 64 columns besides its keys."),
				 errhint("Keep the history of fewer columns in this target, e.g. in a second target.")));
	ev = events_read(f, p, events_sql, false);
	memset(&F, 0, sizeof(F));
	F.ev = ev;
	fold2_setup(&F, f, c);
	counts->read = ev->nread;
	counts->upserted = counts->deleted = counts->skipped = 0;
	chunk_cxt = AllocSetContextCreate(CurrentMemoryContext, "autocdc SCD 2 chunk",
									  ALLOCSET_DEFAULT_SIZES);
	for (uint32 k = 0; k < ev->nkeysets;)
	{
		Ev		   *inp;
		Version    *old,
				   *nv;
		uint64		ninp,
					nold,
					nnew = 0;

		oldcxt = MemoryContextSwitchTo(chunk_cxt);
		k = load_chunk(&F, k, bound, chunk_cxt);
		read_keys(&F);
		check_stored(&F);
		read_stored(&F, read_modes(&F), &inp, &ninp, &old, &nold);
		nv = palloc_extended(sizeof(Version) * Max(ninp, 1), MCXT_ALLOC_HUGE);
		for (uint64 i = 0; i < ninp;)
		{
			uint64		n = i;

			CHECK_FOR_INTERRUPTS();
			while (n < ninp && inp[n].key == inp[i].key)
				n++;
			fold_key(&F, &inp[i], n - i, nv, &nnew);
			i = n;
		}
		write_all(&F, old, nold, nv, nnew, counts);
		/* the results the fold's values pointed into */
		for (int i = 0; i < lengthof(F.stored); i++)
		{
			if (F.stored[i])
				SPI_freetuptable(F.stored[i]);
			F.stored[i] = NULL;
		}
		batch_release_relations();
		MemoryContextSwitchTo(oldcxt);
		MemoryContextReset(chunk_cxt);
	}
	if (events_next(ev) != NULL)
		elog(ERROR, "autocdc: flow \"%s\" left events unfolded", f->name);
	events_end(ev);
	MemoryContextDelete(chunk_cxt);
}

/*
 * Applies the flow's new events to its SCD 2 target.  Runs as the flow's
 * owner; the caller provides the transaction boundaries.
 */
void
scd2_apply(FlowDef *f, ReadParams *p, FlowCounts *counts)
{
	Scd2Cols	c;
	StringInfoData events;
	ListCell   *lc;
	FlowCounts	below;

	memset(&c, 0, sizeof(c));
	c.qtarget = rel_qualified_name(f->target);
	c.qevents = rel_qualified_name(f->state);
	c.values = event_store_value_columns(f->state, f->keys);
	c.tracked = f->track_columns != NIL ? f->track_columns : c.values;
	foreach(lc, f->state_partial)
		if (list_has_string(c.values, lfirst(lc)))
			c.inheriting = lappend(c.inheriting, lfirst(lc));

	/* first: reading the events checks that the flow's columns still exist */
	initStringInfo(&events);
	read_append_events(&events, f, p);
	memset(&below, 0, sizeof(below));
	scd2_skip_below_floors(f, p, &events, &below);
	scd2_batch_apply(f, p, events.data, &c, counts);
	counts->read += below.read;
	counts->skipped += below.skipped;
	scd2_purge_tombstones(f);
}
