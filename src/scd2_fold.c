/*-------------------------------------------------------------------------
 * scd2_fold.c
 *	  The SCD type 2 fold (doc/design.md §2.6): a run's events in key order
 *	  (events.c) folded, chunk of keys by chunk, with what is stored
 *	  (scd2_stored.c), the versions that changed written (scd2_write.c).
 *
 * Every distinct event read is kept: in the target's event store, or, for
 * an upsert that sets every column and starts a version no other event
 * falls in, as that version's row, from which the fold reads it back
 * (scd2_stored.c) and which the writes store once another event joins it
 * (scd2_write.c).  For each key the run touches, history is folded again
 * from a point where nothing before can matter: from its open version
 * when every new event comes after everything applied, else from the last
 * stored delete before the earliest new event (nothing crosses a delete).  The fold walks the key's
 * events in sequence order: a delete ends a group and the version open in
 * it; in a group an upsert takes the columns it leaves to inherit from the
 * latest event that set them, and starts a version when a tracked column
 * changes; a version ends where the next starts or at the delete that ends
 * its group.
 *
 * A chunk holds the events of as many keys as fit in work_mem, with their
 * stored events and versions; a batch of any size goes chunk by chunk.
 *-------------------------------------------------------------------------
 */
#include "retention.h"
#include "scd2_fold.h"
#include "progress.h"
#include "validate.h"

#include "access/relation.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/datum.h"
#include "utils/lsyscache.h"
#include "portability/instr_time.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/typcache.h"

bool
acdc_vals_equal(Fold2 *F, int j, Datum a, bool anull, Datum b, bool bnull)
{
	if (anull || bnull)
		return anull && bnull;
	if (!OidIsValid(F->eq[j].fn_oid))	/* no "=": as SQL compares it, as text */
		return strcmp(acdc_value_text(a, false, F->valatt[j]->atttypid),
					  acdc_value_text(b, false, F->valatt[j]->atttypid)) == 0;
	return DatumGetBool(FunctionCall2Coll(&F->eq[j], F->coll[j], a, b));
}

/*
 * Blocks of the chunk's arena: 1 MB (a chunk of 1M events fills about 100),
 * or a sixteenth of the chunk's bound if less, which a block counts against.
 */
#define FOLD_ARENA_BLOCK ((Size) 1024 * 1024)

void *
acdc_fold_alloc(Fold2 *F, Size size)
{
	char	   *p;

	if (CurrentMemoryContext != F->chunk_cxt)
		return palloc(size);
	size = MAXALIGN(size);
	if (size > (Size) (F->arena_end - F->arena_free))
	{
		if (size > F->arena_block / 8)
			return acdc_alloc_prefaulted(F->chunk_cxt, size);
		F->arena_free = acdc_alloc_prefaulted(F->chunk_cxt, F->arena_block);
		F->arena_end = F->arena_free + F->arena_block;
	}
	p = F->arena_free;
	F->arena_free += size;
	return p;
}

/* An array of n elements of elem bytes grown to m, the new part's pages present. */
static void *
grow_prefaulted(void *old, Size elem, uint64 n, uint64 m)
{
	char	   *p = repalloc_huge(old, elem * m);

	acdc_prefault(p + elem * n, elem * (m - n));
	return p;
}

/* The event row in the store's shape. */
static void
normalize(Fold2 *F, TupleTableSlot *slot, Ev *e)
{
	e->keys = acdc_fold_alloc(F, sizeof(Datum) * F->ev->nkeys);
	for (int i = 0; i < F->ev->nkeys; i++)
		e->keys[i] = slot->tts_values[i];
	e->vals = acdc_fold_alloc(F, sizeof(Datum) * Max(F->nvals, 1));
	e->nulls = acdc_fold_alloc(F, sizeof(bool) * Max(F->nvals, 1));
	e->inherit = NULL;
	for (int j = 0; j < F->nvals; j++)
	{
		int			a = F->evatt[j];

		e->nulls[j] = true;
		e->vals[j] = (Datum) 0;
		if (e->kind != 'u')
			continue;
		/* a column the event does not list (columns_to_update) is inherited, as NULL */
		if (a >= 0 && events_sets(F->ev, slot, a - F->ev->first_col))
		{
			e->vals[j] = slot->tts_values[a];
			e->nulls[j] = slot->tts_isnull[a];
		}
		else
			a = -1;
		if (a < 0 || (bms_is_member(j, F->ignore_null) && e->nulls[j]))
			e->inherit = bms_add_member(e->inherit, j);
	}
}

int
acdc_version_order(const void *x, const void *y, void *arg)
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
			uint64		grown = Max(maxevs * 2, F->nevs + ev->nevents[k]);

			F->evs = grow_prefaulted(F->evs, sizeof(Ev), maxevs, grown);
			maxevs = grown;
		}
		if (key == maxkeys)
		{
			F->keyvals = grow_prefaulted(F->keyvals, sizeof(Datum) * ev->nkeys, maxkeys, (uint64) maxkeys * 2);
			maxkeys *= 2;
		}
		F->nread += ev->nevents[k];
		for (uint32 n = 0; n < ev->nevents[k]; n++)
		{
			TupleTableSlot *e = acdc_events_next(ev);
			Ev		   *x;

			if (e == NULL)
				elog(ERROR, "autocdc: flow \"%s\" ran out of events", F->f->name);
			/* a repeat of the event before it */
			if (n > 0 && events_seq_cmp(ev, F->evs[F->nevs - 1].seq, e->tts_values[ev->seq_att]) == 0)
				continue;
			/* the values point into the sort's row, or a copy kept with the chunk */
			if (ev->in_memory)
				acdc_events_keep(ev, slot, e);
			else
				ExecStoreMinimalTuple(ExecCopySlotMinimalTuple(e), slot, false);
			slot_getallattrs(slot);
			x = &F->evs[F->nevs++];
			x->key = key;
			x->kind = acdc_events_kind(ev, slot);
			x->fresh = true;
			x->in_store = false;
			x->seq = slot->tts_values[ev->seq_att];
			/*
			 * A bitemporal sequence, read while its row is at hand, into
			 * the chunk's memory in key order: its fold and compares go
			 * through it again and again.
			 */
			if (F->bt)
				x->seq = PointerGetDatum(pg_detoast_datum_copy((struct varlena *) DatumGetPointer(x->seq)));
			x->row = ev->row_att >= 0 ? slot->tts_values[ev->row_att] : (Datum) 0;
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
acdc_put_key(Fold2 *F, uint32 key, Datum *keys, Datum *values, bool *nulls)
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
acdc_seq_entry(Fold2 *F, TupleDesc desc, int attno, const char *name)
{
	acdc_rel_copy_entry(desc, attno, F->ev->desc, F->ev->seq_att, name);
}

void
acdc_init_value_entries(Fold2 *F, TupleDesc desc, int first)
{
	for (int j = 0; j < F->nvals; j++)
	{
		TupleDescInitEntry(desc, first + j, F->names[j], F->valatt[j]->atttypid,
						   F->valatt[j]->atttypmod, 0);
		TupleDescInitEntryCollation(desc, first + j, F->valatt[j]->attcollation);
	}
}

/* ", s.v1, s.v2" (", v1, v2" without an alias) */
char *
acdc_value_list(Fold2 *F, const char *alias)
{
	StringInfoData buf;

	initStringInfo(&buf);
	if (F->nvals > 0)
	{
		appendStringInfoString(&buf, ", ");
		acdc_append_column_list(&buf, F->c->values, alias);
	}
	return buf.data;
}

List *
acdc_keyed_columns(Fold2 *F, int nextra, const char *const *extra)
{
	List	   *cols = list_concat_copy(F->f->keys, F->c->values);

	for (int i = 0; i < nextra; i++)
		cols = lappend(cols, (char *) extra[i]);
	return cols;
}

/* Folds one key's events (sorted) into versions, appended to out. */
void
acdc_fold_key(Fold2 *F, Ev *ev, uint64 n, Version *out, uint64 *nout)
{
	Datum	   *run = palloc0(sizeof(Datum) * Max(F->nvals, 1));	/* latest setter's values */
	bool	   *run_null = palloc(sizeof(bool) * Max(F->nvals, 1));
	Datum	   *prev = NULL;	/* previous upsert's values in the group */
	bool	   *prev_null = NULL;
	Version    *cur = NULL;
	Ev		   *first = NULL;	/* the event that started cur */

	for (int j = 0; j < F->nvals; j++)
		run_null[j] = true;
	for (uint64 i = 0; i < n; i++)
	{
		Ev		   *e = &ev[i];
		Datum	   *vals;
		bool	   *nulls;
		bool		starts;

		e->alone = false;
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
		vals = acdc_fold_alloc(F, sizeof(Datum) * Max(F->nvals, 1));
		nulls = acdc_fold_alloc(F, sizeof(bool) * Max(F->nvals, 1));
		for (int j = 0; j < F->nvals; j++)
		{
			bool		sets = e->kind == 'a' || !bms_is_member(j, e->inherit);

			if (bms_is_member(j, F->inheriting) && !sets)
			{
				vals[j] = run[j];
				nulls[j] = run_null[j];
			}
			else
			{
				vals[j] = e->vals[j];
				nulls[j] = e->nulls[j];
			}
			if (bms_is_member(j, F->inheriting) && sets)
			{
				run[j] = e->vals[j];
				run_null[j] = e->nulls[j];
			}
		}
		starts = prev == NULL;
		for (int j = 0; !starts && j < F->nvals; j++)
			if (bms_is_member(j, F->tracked) &&
				!acdc_vals_equal(F, j, vals[j], nulls[j], prev[j], prev_null[j]))
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
			first = e;
			first->alone = true;
		}
		else
			first->alone = false;
		cur->keys = e->keys;
		cur->vals = vals;
		cur->nulls = nulls;
		prev = vals;
		prev_null = nulls;
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
		k = acdc_list_index_of_string(f->columns, name);
		F->evatt[j] = k < 0 ? -1 : list_length(f->keys) + 2 + k;
		if (acdc_list_has_string(f->ignore_null, name))
			F->ignore_null = bms_add_member(F->ignore_null, j);
		if (acdc_list_has_string(c->inheriting, name))
			F->inheriting = bms_add_member(F->inheriting, j);
		if (acdc_list_has_string(c->tracked, name))
			F->tracked = bms_add_member(F->tracked, j);
		j++;
	}
	/*
	 * A trigger on the target may change rows of it after each write
	 * statement, moving them off the tids read: then versions are named by
	 * their keys and start.  Looked up once per run, not per chunk.
	 */
	{
		bool		rules;

		acdc_batch_target_code(f, &F->by_start, &rules);
		F->by_keys = F->by_start || acdc_batch_rows_by_keys(f, "__start_at");
		/* else a row may not hold its upsert: then the store keeps every event */
		F->rows_exact = !F->by_start && !rules;
	}
	relation_close(rel, AccessShareLock);
}

/*
 * Folds the run's events (events_sql) into the SCD 2 target, chunk by
 * chunk of keys: each chunk's events, stored events and versions are held
 * in memory up to about work_mem, then written.
 */
static void
fold_chunks(FlowDef *f, ReadParams *p, const char *events_sql,
				 Scd2Cols *c, FlowCounts *counts)
{
	Fold2		F;
	Events	   *ev;
	MemoryContext chunk_cxt;
	MemoryContext oldcxt;
	MemoryContext callercxt;
	Size		bound = (Size) work_mem * 1024;

	ev = acdc_events_read(f, p, events_sql, false);
	/* what the fold allocates goes with the events, also when an error ends the flow */
	callercxt = MemoryContextSwitchTo(ev->cxt);
	memset(&F, 0, sizeof(F));
	F.ev = ev;
	fold2_setup(&F, f, c);
	if (f->scd_type == ACDC_BITEMPORAL)
		acdc_bt_setup(&F);
	else
	{
		/* a first run, say: then no lookup per key finds anything */
		acdc_spi_exec(psprintf("SELECT NOT EXISTS (SELECT FROM %s) AND NOT EXISTS (SELECT FROM %s)",
							   c->qtarget, c->qevents),
					  0, NULL, NULL, NULL, false);
		F.all_new = acdc_spi_bool(0, 1);
	}
	counts->read = ev->nread;
	counts->upserted = counts->deleted = counts->skipped = 0;
	chunk_cxt = AllocSetContextCreate(ev->cxt, "autocdc SCD 2 chunk",
									  ALLOCSET_DEFAULT_SIZES);
	F.chunk_cxt = chunk_cxt;
	F.arena_block = Min(FOLD_ARENA_BLOCK, Max(bound / 16, (Size) 8192));
	for (uint32 k = 0; k < ev->nkeysets;)
	{
		Ev		   *inp;
		Version    *old,
				   *nv;
		uint64		ninp,
					nold,
					nnew = 0;

		instr_time	t[4];
		uint32		first = k;
		int64		written = counts->upserted + counts->deleted;

		acdc_progress_phase(ACDC_PHASE_FOLDING);
		oldcxt = MemoryContextSwitchTo(chunk_cxt);
		/* the last chunk's blocks went with its reset */
		F.arena_free = F.arena_end = NULL;
		INSTR_TIME_SET_CURRENT(t[0]);
		k = load_chunk(&F, k, bound, chunk_cxt);
		INSTR_TIME_SET_CURRENT(t[1]);
		acdc_read_keys(&F);
		acdc_check_stored(&F);
		acdc_read_stored(&F, acdc_read_modes(&F), &inp, &ninp, &old, &nold);
		INSTR_TIME_SET_CURRENT(t[2]);
		if (F.bt)
		{
			/* every touched key's stored events and rows: its beliefs folded again */
			acdc_progress_phase(ACDC_PHASE_WRITING);
			acdc_bt_fold_write(&F, inp, ninp, counts);
			acdc_progress_add_rows(counts->upserted + counts->deleted - written);
			goto chunk_done;
		}
		nv = acdc_alloc_prefaulted(chunk_cxt, sizeof(Version) * Max(ninp, 1));
		for (uint64 i = 0; i < ninp;)
		{
			uint64		n = i;

			CHECK_FOR_INTERRUPTS();
			while (n < ninp && inp[n].key == inp[i].key)
				n++;
			acdc_fold_key(&F, &inp[i], n - i, nv, &nnew);
			i = n;
		}
		INSTR_TIME_SET_CURRENT(t[3]);
		acdc_progress_phase(ACDC_PHASE_WRITING);
		acdc_write_all(&F, inp, ninp, old, nold, nv, nnew, counts);
		acdc_progress_add_rows(counts->upserted + counts->deleted - written);
		INSTR_TIME_SET_CURRENT(t[0]);
		INSTR_TIME_SUBTRACT(t[0], t[3]);
		INSTR_TIME_SUBTRACT(t[3], t[2]);
		INSTR_TIME_SUBTRACT(t[2], t[1]);
		elog(DEBUG1, "autocdc: flow \"%s\": keys %u to %u: stored read in %.1f ms, folded in %.1f ms, written in %.1f ms",
			 f->name, first, k - 1, INSTR_TIME_GET_MILLISEC(t[2]), INSTR_TIME_GET_MILLISEC(t[3]),
			 INSTR_TIME_GET_MILLISEC(t[0]));
chunk_done:
		/* the results the fold's values pointed into */
		for (int i = 0; i < lengthof(F.stored); i++)
		{
			if (F.stored[i])
				SPI_freetuptable(F.stored[i]);
			F.stored[i] = NULL;
		}
		acdc_batch_release_relations();
		MemoryContextSwitchTo(oldcxt);
		MemoryContextReset(chunk_cxt);
	}
	if (acdc_events_next(ev) != NULL)
		elog(ERROR, "autocdc: flow \"%s\" left events unfolded", f->name);
	MemoryContextSwitchTo(callercxt);
	acdc_events_end(ev);		/* and chunk_cxt, its child */
}

/*
 * Applies the flow's new events to its SCD 2 target.  Runs as the flow's
 * owner; the caller provides the transaction boundaries.
 */
void
acdc_scd2_apply(FlowDef *f, ReadParams *p, FlowCounts *counts)
{
	Scd2Cols	c;
	StringInfoData events;
	ListCell   *lc;
	FlowCounts	below;

	memset(&c, 0, sizeof(c));
	c.qtarget = acdc_rel_qualified_name(f->target);
	c.qevents = acdc_rel_qualified_name(f->state);
	c.values = acdc_event_store_value_columns(f->state, f->keys);
	c.tracked = f->track_columns != NIL ? f->track_columns : c.values;
	foreach(lc, f->state_partial)
		if (acdc_list_has_string(c.values, lfirst(lc)))
			c.inheriting = lappend(c.inheriting, lfirst(lc));

	/* first: reading the events checks that the flow's columns still exist */
	initStringInfo(&events);
	acdc_read_append_events(&events, f, p);
	memset(&below, 0, sizeof(below));
	acdc_scd2_skip_below_floors(f, p, &events, &below);
	fold_chunks(f, p, events.data, &c, counts);
	counts->read += below.read;
	counts->skipped += below.skipped;
	acdc_progress_add_events(below.read);
	/* a bitemporal target keeps every event: a late one may rewrite any belief */
	if (f->scd_type == ACDC_BITEMPORAL)
		return;
	acdc_progress_phase(ACDC_PHASE_PURGING);
	acdc_scd2_purge_tombstones(f);
}
