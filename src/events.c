/*-------------------------------------------------------------------------
 * events.c
 *	  A run's events in key order (see events.h).
 *
 * The events statement runs with a receiver instead of a result: each row
 * is checked and kept grouped by key (events_hash.c) while the batch fits
 * in its memory, else in a tuplesort ordered by the keys' and the
 * sequence's btree orderings in their collations, which spills to disk, so
 * a batch of any size and any orderable type folds the same way.  One pass
 * over the ordered events numbers the keys, counts their events and finds
 * two events at one key and sequence, now next to each other; the fold
 * then reads them again, key by key.
 *-------------------------------------------------------------------------
 */
#include "events.h"
#include "typmod_coerce.h"
#include "expect.h"
#include "progress.h"
#include "record_cmp.h"
#include "relation.h"
#include "validate.h"

#include "access/htup_details.h"
#include "access/tupdesc.h"
#include "catalog/pg_collation.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/datum.h"
#include "utils/json.h"
#include "utils/lsyscache.h"
#include "portability/instr_time.h"
#include "utils/memutils.h"
#include "utils/typcache.h"

typedef struct EventsReceiver
{
	DestReceiver pub;
	Events	   *ev;
	bool		allow_truncate;
	char	   *null_key;		/* the first event with a NULL key: its key */
	char	   *null_key_seq;	/* and sequence */
	char	   *unknown;		/* the first name columns_to_update lists that is no column */
	char	   *unknown_key;	/* and its event's key */
	char	   *unknown_seq;	/* and sequence */
	Expectation *failed;		/* the first fail expectation a row failed */
	char	   *failed_row;		/* and that row */
} EventsReceiver;

/* The event's key as the bad-input errors spell it: "1, NULL". */
static char *
key_text(Events *ev, TupleTableSlot *slot)
{
	StringInfoData buf;

	initStringInfo(&buf);
	for (int i = 0; i < ev->nkeys; i++)
		appendStringInfo(&buf, "%s%s", i ? ", " : "",
						 acdc_value_text(slot->tts_values[i], slot->tts_isnull[i],
									TupleDescAttr(ev->desc, i)->atttypid));
	return buf.data;
}

static char *
seq_text(Events *ev, TupleTableSlot *slot)
{
	return acdc_value_text(slot->tts_values[ev->seq_att], false,
					  TupleDescAttr(ev->desc, ev->seq_att)->atttypid);
}

/*
 * Whether attribute att of the event is NULL as SQL's IS NULL sees it: a
 * composite value (a ROW(...) sequence) all of whose fields are NULL is
 * NULL too, as the checks of 0.1.0 found it.
 */
static bool
event_att_null(Events *ev, TupleTableSlot *slot, int att)
{
	HeapTupleHeader rec;
	TupleDesc	desc;
	HeapTupleData tup;
	bool		allnull = true;

	if (slot->tts_isnull[att])
		return true;
	if (!ev->composite[att])
		return false;
	rec = DatumGetHeapTupleHeader(slot->tts_values[att]);
	desc = lookup_rowtype_tupdesc(HeapTupleHeaderGetTypeId(rec), HeapTupleHeaderGetTypMod(rec));
	tup.t_len = HeapTupleHeaderGetDatumLength(rec);
	ItemPointerSetInvalid(&tup.t_self);
	tup.t_tableOid = InvalidOid;
	tup.t_data = rec;
	for (int i = 0; allnull && i < desc->natts; i++)
		if (!TupleDescAttr(desc, i)->attisdropped && !heap_attisnull(&tup, i + 1, desc))
			allnull = false;
	ReleaseTupleDesc(desc);
	return allnull;
}

char
acdc_events_kind(Events *ev, TupleTableSlot *slot)
{
	return *VARDATA_ANY(DatumGetPointer(slot->tts_values[ev->kind_att]));
}

/* The collation an attribute orders in. */
static Oid
att_collation(Form_pg_attribute att)
{
	if (OidIsValid(att->attcollation))
		return att->attcollation;
	return type_is_collatable(att->atttypid) ? DEFAULT_COLLATION_OID : InvalidOid;
}

/*
 * The events' descriptor: the read's columns (keys, sequence, kind, the
 * flow's columns) without the extra ones of expect.c that follow them —
 * but the source row with on_bad_event => 'quarantine', which the checks
 * after the sort may set aside.
 */
static TupleDesc
events_desc(Events *ev, TupleDesc typeinfo)
{
	int			nx = list_length(ev->flow->expectations);
	bool		has_row = acdc_expect_has_row(ev->flow);
	int			natts;
	TupleDesc	desc;

	if (ev->flow->kind == FLOW_SNAPSHOT)
		nx = 0, has_row = false;	/* a snapshot's diff has neither */
	ev->in_xatt = typeinfo->natts - nx;
	ev->in_row_att = has_row ? ev->in_xatt - 1 : -1;
	ev->row_att = has_row && ev->flow->quarantine_bad ? ev->in_row_att : -1;
	natts = ev->row_att >= 0 ? ev->row_att + 1 : has_row ? ev->in_row_att : ev->in_xatt;
	ev->end_col = ev->row_att >= 0 ? ev->row_att : natts;
	desc = CreateTemplateTupleDesc(natts);
	for (int i = 0; i < natts; i++)
		TupleDescCopyEntry(desc, i + 1, typeinfo, i + 1);
	return desc;
}

/* A sort of the events by key and sequence, holding up to kb kilobytes. */
static Tuplesortstate *
events_sort_begin(Events *ev, int kb)
{
	return tuplesort_begin_heap(ev->desc, ev->nkeys + 1, ev->sort_atts, ev->sort_ops,
								ev->sort_colls, ev->sort_nulls_first,
								kb, NULL, TUPLESORT_RANDOMACCESS);
}

/*
 * The memory a batch's events may hold before they spill: half of
 * maintenance_work_mem, as a sort for an index may take, or work_mem if
 * that is more (doc/design.md §2.13).
 */
Size
acdc_events_bound_kb(void)
{
	return Max((Size) work_mem, (Size) maintenance_work_mem / 2);
}

/* Keeps an event: grouped by key while it fits, else sorted. */
static void
events_put(Events *ev, TupleTableSlot *slot)
{
	if (ev->hash != NULL)
	{
		if (acdc_events_hash_put(ev, slot))
			return;
		/* past the bound: the sort takes them, in work_mem, spilling */
		ev->sort = events_sort_begin(ev, work_mem);
		acdc_events_hash_spill(ev, ev->sort);
	}
	tuplesort_puttupleslot(ev->sort, slot);
}

/*
 * Sets aside a row read (slot as read, or as sorted with the source row at
 * row_att), with the expectations it failed when failed_names; what it
 * takes to say so is freed at once (the quarantine keeps a copy).
 */
static void
quarantine_row(Events *ev, const char *reason, TupleTableSlot *slot, int row_att,
			   bool failed_names, bool has_seq, const char *conflicts_with)
{
	MemoryContext old = MemoryContextSwitchTo(ev->row_cxt);

	acdc_quarantine_add(ev->flow, reason,
						failed_names ? acdc_expect_failed_names(ev->flow, slot, ev->in_xatt) : (Datum) 0,
						slot->tts_values[row_att], has_seq ? seq_text(ev, slot) : NULL,
						conflicts_with);
	MemoryContextSwitchTo(old);
	MemoryContextReset(ev->row_cxt);
}

static void
events_startup(DestReceiver *self, int operation, TupleDesc typeinfo)
{
	Events	   *ev = ((EventsReceiver *) self)->ev;
	MemoryContext old = MemoryContextSwitchTo(ev->cxt);
	int			nsort = ev->nkeys + 1;
	AttrNumber *atts = palloc(sizeof(AttrNumber) * nsort);
	Oid		   *ops = palloc(sizeof(Oid) * nsort);
	Oid		   *colls = palloc(sizeof(Oid) * nsort);
	bool	   *nulls_first = palloc0(sizeof(bool) * nsort);

	ev->desc = events_desc(ev, typeinfo);
	ev->seq_att = ev->nkeys;
	ev->kind_att = ev->nkeys + 1;
	ev->first_col = ev->nkeys + 2;
	ev->set_att = ev->unknown_att = -1;
	if (ev->flow->columns_to_update)
	{
		ev->set_att = ev->first_col + list_length(ev->flow->columns);
		ev->unknown_att = ev->set_att + list_length(ev->flow->columns);
	}
	ev->cmp = palloc0(sizeof(SortSupportData) * nsort);
	/* the state keeps sequences of the catalog's type; expr_pin.c keeps the expression's */
	if (TupleDescAttr(ev->desc, ev->seq_att)->atttypid != ev->flow->seq_type)
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("flow \"%s\": its sequence is of type %s, its target's of type %s",
						ev->flow->name, format_type_be(TupleDescAttr(ev->desc, ev->seq_att)->atttypid),
						format_type_be(ev->flow->seq_type)),
				 errhint("Drop and re-create the flow, or change the source back.")));
	ev->composite = palloc0(sizeof(bool) * nsort);
	for (int i = 0; i < nsort; i++)
	{
		Form_pg_attribute att = TupleDescAttr(ev->desc, i);
		TypeCacheEntry *tc = lookup_type_cache(att->atttypid, TYPECACHE_LT_OPR);

		if (!OidIsValid(tc->lt_opr))
			ereport(ERROR,
					(errcode(ERRCODE_UNDEFINED_FUNCTION),
					 errmsg("flow \"%s\": type %s of %s has no ordering", ev->flow->name,
							format_type_be(att->atttypid),
							i < ev->nkeys ? quote_identifier(NameStr(att->attname)) : "its sequence"),
					 errhint("Keys and sequences need a btree operator class; change the column's type.")));
		ev->composite[i] = type_is_rowtype(att->atttypid);
		atts[i] = i + 1;
		ops[i] = tc->lt_opr;
		colls[i] = att_collation(att);
		ev->cmp[i].ssup_cxt = ev->cxt;
		ev->cmp[i].ssup_collation = colls[i];
		PrepareSortSupportFromOrderingOp(tc->lt_opr, &ev->cmp[i]);
		if (ev->composite[i])
			acdc_record_sortsupport(&ev->cmp[i], att->atttypid);
	}
	ev->sort_atts = atts;
	ev->sort_ops = ops;
	ev->sort_colls = colls;
	ev->sort_nulls_first = nulls_first;
	if (!acdc_events_hash_begin(ev, acdc_events_bound_kb() * 1024))
		ev->sort = events_sort_begin(ev, (int) Min(acdc_events_bound_kb(), (Size) MAX_KILOBYTES));
	/* values the writes take as of their columns' typmods, as an INSERT's */
	ev->coerce = acdc_typmod_coercion(NULL, ev->flow->target, ev->desc, 0, ev->flow->keys);
	if (ev->end_col - ev->first_col >= list_length(ev->flow->columns))
		ev->coerce = acdc_typmod_coercion(ev->coerce, ev->flow->target, ev->desc,
										  ev->first_col, ev->flow->columns);
	ev->slot = MakeSingleTupleTableSlot(ev->desc, &TTSOpsMinimalTuple);
	if (ev->desc->natts < typeinfo->natts || ev->coerce)
		ev->kept = MakeSingleTupleTableSlot(ev->desc, &TTSOpsVirtual);
	if (ev->coerce)
		ev->coerce_cxt = AllocSetContextCreate(ev->cxt, "autocdc coercion", ALLOCSET_SMALL_SIZES);
	MemoryContextSwitchTo(old);
}

static bool
events_receive(TupleTableSlot *slot, DestReceiver *self)
{
	EventsReceiver *r = (EventsReceiver *) self;
	Events	   *ev = r->ev;
	MemoryContext old;
	char		kind;

	/* other sessions see the count per batch (progress.c) */
	if ((++ev->nread & (ACDC_PROGRESS_EVENTS_BATCH - 1)) == 0)
	{
		acdc_progress_add_events(ACDC_PROGRESS_EVENTS_BATCH);
		if ((ev->nread & 0xFFFF) == 0)
			CHECK_FOR_INTERRUPTS();
	}
	slot_getallattrs(slot);
	/* a NULL sequence is the first of the bad inputs: raised at once */
	if (event_att_null(ev, slot, ev->seq_att))
	{
		if (!ev->flow->quarantine_bad)
			acdc_validate_raise(ev->flow, "null_sequence", key_text(ev, slot), NULL);
		quarantine_row(ev, "null_sequence", slot, ev->in_row_att, false, false, NULL);
		return true;
	}
	kind = acdc_events_kind(ev, slot);
	/* a NULL key next (raised after the read, after any NULL sequence) */
	if (kind != 't')
		for (int i = 0; i < ev->nkeys; i++)
			if (event_att_null(ev, slot, i))
			{
				if (ev->flow->quarantine_bad)
					quarantine_row(ev, "null_key", slot, ev->in_row_att, false, true, NULL);
				else if (r->null_key == NULL)
				{
					old = MemoryContextSwitchTo(ev->cxt);
					r->null_key = key_text(ev, slot);
					r->null_key_seq = seq_text(ev, slot);
					MemoryContextSwitchTo(old);
				}
				return true;
			}
	/* an upsert listing a name that is not a column of the flow (columns_to_update) */
	if (kind == 'u' && ev->unknown_att >= 0 && !slot->tts_isnull[ev->unknown_att])
	{
		if (ev->flow->quarantine_bad)
			quarantine_row(ev, "unknown_column", slot, ev->in_row_att, false, true, NULL);
		else if (r->unknown == NULL)
		{
			old = MemoryContextSwitchTo(ev->cxt);
			r->unknown = TextDatumGetCString(slot->tts_values[ev->unknown_att]);
			r->unknown_key = key_text(ev, slot);
			r->unknown_seq = seq_text(ev, slot);
			MemoryContextSwitchTo(old);
		}
		return true;
	}
	/* then the expectations (expect.c): a dropped row is no event */
	if (ev->in_xatt < slot->tts_tupleDescriptor->natts)
	{
		Expectation *failed;

		switch (acdc_expect_check(ev->flow, slot, ev->in_xatt, &failed))
		{
			case EXPECT_KEEP:
				break;
			case EXPECT_DROPPED:
				quarantine_row(ev, "expectation", slot, ev->in_row_att, true, true, NULL);
				return true;
			case EXPECT_FAILED:
				if (r->failed == NULL)
				{
					old = MemoryContextSwitchTo(ev->cxt);
					r->failed = failed;
					r->failed_row = psprintf("row for key (%s)=(%s) at sequence %s",
											 acdc_validate_prefixed_keys(ev->flow, NULL),
											 key_text(ev, slot), seq_text(ev, slot));
					MemoryContextSwitchTo(old);
				}
				return true;
		}
	}
	if (ev->kept)
	{
		ExecClearTuple(ev->kept);
		memcpy(ev->kept->tts_values, slot->tts_values, sizeof(Datum) * ev->desc->natts);
		memcpy(ev->kept->tts_isnull, slot->tts_isnull, sizeof(bool) * ev->desc->natts);
		if (ev->coerce && kind != 't')
		{
			MemoryContextReset(ev->coerce_cxt);
			old = MemoryContextSwitchTo(ev->coerce_cxt);
			acdc_typmod_apply(ev->coerce, ev->kept->tts_values, ev->kept->tts_isnull,
							  kind == 'u' ? ev->desc->natts : ev->nkeys);
			MemoryContextSwitchTo(old);
		}
		ExecStoreVirtualTuple(ev->kept);
		slot = ev->kept;
	}
	old = MemoryContextSwitchTo(ev->cxt);
	if (kind == 't')
	{
		Form_pg_attribute att = TupleDescAttr(ev->desc, ev->seq_att);
		Datum		seq = slot->tts_values[ev->seq_att];

		if (!r->allow_truncate)
			elog(ERROR, "autocdc: flow \"%s\" read a truncate", ev->flow->name);
		if (!ev->has_truncate || events_seq_cmp(ev, seq, ev->truncate_seq) > 0)
		{
			ev->truncate_seq = datumCopy(seq, att->attbyval, att->attlen);
			ev->has_truncate = true;
		}
	}
	else
	{
		events_put(ev, slot);
		ev->nsorted++;
	}
	MemoryContextSwitchTo(old);
	return true;
}

static void
events_shutdown(DestReceiver *self)
{
}

static void
events_destroy(DestReceiver *self)
{
}

bool
acdc_events_same(Events *ev, TupleTableSlot *a, TupleTableSlot *b)
{
	if (acdc_events_kind(ev, a) != acdc_events_kind(ev, b))
		return false;
	if (acdc_events_kind(ev, a) != 'u')
		return true;			/* a delete's other columns do not matter */
	slot_getallattrs(a);
	slot_getallattrs(b);
	for (int i = ev->first_col; i < ev->end_col; i++)
	{
		Form_pg_attribute att = TupleDescAttr(ev->desc, i);

		/* a column neither sets is no part of them (columns_to_update) */
		if (ev->set_att >= 0 && i < ev->set_att &&
			!events_sets(ev, a, i - ev->first_col) && !events_sets(ev, b, i - ev->first_col))
			continue;

		if (a->tts_isnull[i] || b->tts_isnull[i])
		{
			if (a->tts_isnull[i] != b->tts_isnull[i])
				return false;
		}
		else if (!datum_image_eq(a->tts_values[i], b->tts_values[i], att->attbyval, att->attlen))
			return false;
	}
	return true;
}

void
acdc_events_report_conflict(Events *ev, const char *problem, TupleTableSlot *slot)
{
	acdc_validate_raise(ev->flow, problem, key_text(ev, slot), seq_text(ev, slot));
}

void
acdc_events_report(Events *ev, const char *problem, Datum *keys, Datum seq)
{
	StringInfoData buf;

	initStringInfo(&buf);
	for (int i = 0; i < ev->nkeys; i++)
		appendStringInfo(&buf, "%s%s", i ? ", " : "",
						 acdc_value_text(keys[i], false, TupleDescAttr(ev->desc, i)->atttypid));
	acdc_validate_raise(ev->flow, problem, buf.data,
				   acdc_value_text(seq, false, TupleDescAttr(ev->desc, ev->seq_att)->atttypid));
}

/* Keys of a and b: equal? */
static bool
same_key(Events *ev, TupleTableSlot *a, TupleTableSlot *b)
{
	for (int i = 0; i < ev->nkeys; i++)
		if (ApplySortComparator(a->tts_values[i], false, b->tts_values[i], false,
								&ev->cmp[i]) != 0)
			return false;
	return true;
}

/* Numbers the next key, with its first n events, in the keys' relation. */
void
acdc_events_new_key(Events *ev, BatchRelation *keys, Datum *keyvals, uint32 n)
{
	Datum	   *values = ev->keyrow;

	if (ev->nkeysets == PG_INT32_MAX)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("flow \"%s\": a run reads at most %d keys", ev->flow->name, PG_INT32_MAX)));
	if (ev->nkeysets == ev->maxkeysets)
	{
		ev->maxkeysets *= 2;
		ev->nevents = repalloc_huge(ev->nevents, sizeof(uint32) * ev->maxkeysets);
	}
	ev->nevents[ev->nkeysets] = n;
	values[0] = Int32GetDatum((int32) ev->nkeysets);
	memcpy(&values[1], keyvals, sizeof(Datum) * ev->nkeys);
	acdc_batch_relation_put(keys, values, ev->keyrow_nulls);
	ev->nkeysets++;
}

/* Two different events at one key and sequence: an error, or set aside after the pass. */
void
acdc_events_found_conflict(Events *ev, TupleTableSlot *slot)
{
	if (!ev->flow->quarantine_bad)
		acdc_events_report_conflict(ev, "conflict", slot);
	ev->conflicts = true;
}

/*
 * The pass over the ordered events: numbers the keys, counts their events,
 * registers the keys' relation, and finds two different events at one key
 * and sequence.  Grouped by key, the events are ordered in the same pass
 * (events_hash.c).
 */
static void
events_group(Events *ev)
{
	TupleTableSlot *cur = ev->slot;
	TupleTableSlot *prev = MakeSingleTupleTableSlot(ev->desc, &TTSOpsMinimalTuple);
	BatchRelation keys;
	bool		first = true;

	acdc_batch_relation_begin(&keys, EVENTS_KEYS_RELATION,
						 acdc_rel_keyed_desc(ev->desc, ev->nkeys, "__autocdc_id", 0));
	ev->maxkeysets = 1024;
	ev->nevents = palloc(sizeof(uint32) * ev->maxkeysets);
	ev->keyrow = palloc(sizeof(Datum) * (1 + ev->nkeys));
	ev->keyrow_nulls = palloc0(sizeof(bool) * (1 + ev->nkeys));
	if (ev->hash)
	{
		acdc_events_hash_order(ev, &keys, prev);
		ExecDropSingleTupleTableSlot(prev);
		acdc_batch_relation_register(&keys);
		return;
	}
	/* sorted in memory, the tuples stay where they are: no copies */
	for (int64 n = 0; tuplesort_gettupleslot(ev->sort, true, !ev->in_memory, cur, NULL); n++)
	{
		TupleTableSlot *t;

		if ((n & 0xFFFF) == 0)
			CHECK_FOR_INTERRUPTS();
		slot_getsomeattrs(cur, ev->first_col);
		if (!first && same_key(ev, prev, cur))
		{
			if (events_seq_cmp(ev, prev->tts_values[ev->seq_att], cur->tts_values[ev->seq_att]) == 0 &&
				!acdc_events_same(ev, prev, cur))
				acdc_events_found_conflict(ev, cur);
			ev->nevents[ev->nkeysets - 1]++;
		}
		else
			acdc_events_new_key(ev, &keys, cur->tts_values, 1);
		first = false;
		t = prev;
		prev = cur;
		cur = t;
	}
	ExecDropSingleTupleTableSlot(cur == ev->slot ? prev : cur);
	acdc_batch_relation_register(&keys);
	tuplesort_rescan(ev->sort);
}

/*
 * Sets aside every event of each key and sequence with two different
 * events (no winner is picked among them): the others go into a new sort,
 * which replaces the batch's.  Only with on_bad_event => 'quarantine'.
 */
static void
events_set_aside_conflicts(Events *ev)
{
	Tuplesortstate *kept;
	MemoryContext gcxt = AllocSetContextCreate(ev->cxt, "autocdc conflict group",
											   ALLOCSET_DEFAULT_SIZES);
	TupleTableSlot *first = MakeSingleTupleTableSlot(ev->desc, &TTSOpsMinimalTuple);
	TupleTableSlot *cur = ev->slot;
	List	   *group = NIL;	/* MinimalTuples of one key and sequence */
	bool		differ = false;
	bool		more = true;

	if (ev->hash)
	{
		/* grouped by key, they go to a sort (rare: a run with a conflict) */
		ev->sort = events_sort_begin(ev, work_mem);
		acdc_events_hash_spill(ev, ev->sort);
		tuplesort_performsort(ev->sort);
	}
	kept = events_sort_begin(ev, work_mem);
	while (more)
	{
		more = tuplesort_gettupleslot(ev->sort, true, true, cur, NULL);
		if (more)
			slot_getallattrs(cur);
		if (group != NIL && (!more || !same_key(ev, first, cur) ||
							 events_seq_cmp(ev, first->tts_values[ev->seq_att],
											cur->tts_values[ev->seq_att]) != 0))
		{
			ListCell   *lc;

			foreach(lc, group)
			{
				ExecStoreMinimalTuple(lfirst(lc), first, false);
				if (!differ)
				{
					tuplesort_puttupleslot(kept, first);
					continue;
				}
				slot_getallattrs(first);
				quarantine_row(ev, "conflict", first, ev->row_att, false, true, NULL);
				ev->nsorted--;
			}
			ExecClearTuple(first);
			MemoryContextReset(gcxt);
			group = NIL;
			differ = false;
		}
		if (!more)
			break;
		if (group != NIL && !acdc_events_same(ev, first, cur))
			differ = true;
		{
			MemoryContext old = MemoryContextSwitchTo(gcxt);

			group = lappend(group, ExecCopySlotMinimalTuple(cur));
			MemoryContextSwitchTo(old);
		}
		if (list_length(group) == 1)
		{
			ExecStoreMinimalTuple(linitial(group), first, false);
			slot_getallattrs(first);
		}
	}
	ExecDropSingleTupleTableSlot(first);
	MemoryContextDelete(gcxt);
	tuplesort_end(ev->sort);
	ev->sort = kept;
	tuplesort_performsort(ev->sort);
	{
		TuplesortInstrumentation stats;

		tuplesort_get_stats(ev->sort, &stats);
		ev->in_memory = stats.spaceType == SORT_SPACE_TYPE_MEMORY;
	}
	ev->nkeysets = 0;
	ev->conflicts = false;
	acdc_batch_unregister_relations();	/* the keys' relation, numbered again */
}

/* {"kind": "upsert", "sequence": "5"}: the applied event a new one conflicts with */
static char *
applied_json(char kind, const char *seq)
{
	StringInfoData buf;

	initStringInfo(&buf);
	appendStringInfo(&buf, "{\"kind\": \"%s\", \"sequence\": ", kind == 'd' ? "delete" : "upsert");
	escape_json(&buf, seq);
	appendStringInfoChar(&buf, '}');
	return buf.data;
}

bool
acdc_events_set_aside(Events *ev, const char *problem, TupleTableSlot *slot, char applied_kind)
{
	if (!ev->flow->quarantine_bad)
		acdc_events_report_conflict(ev, problem, slot);
	slot_getallattrs(slot);
	quarantine_row(ev, "conflict_applied", slot, ev->row_att, false, true,
				   applied_json(applied_kind, seq_text(ev, slot)));
	return false;
}

bool
acdc_events_set_aside_values(Events *ev, const char *problem, Datum *keys, Datum seq,
							 Datum row, char applied_kind)
{
	char	   *seqtext;

	if (!ev->flow->quarantine_bad)
		acdc_events_report(ev, problem, keys, seq);
	seqtext = acdc_value_text(seq, false, TupleDescAttr(ev->desc, ev->seq_att)->atttypid);
	acdc_quarantine_add(ev->flow, "conflict_applied", (Datum) 0, row, seqtext,
						applied_json(applied_kind, seqtext));
	return false;
}

/*
 * The batch lives in the flow's subtransaction: when an error rolls that
 * back, its memory goes, and so must the relations registered from it.
 */
static void
events_forget(void *arg)
{
	acdc_batch_unregister_relations();
}

Events *
acdc_events_read(FlowDef *f, ReadParams *p, const char *events_sql, bool allow_truncate)
{
	Events	   *ev;
	EventsReceiver recv;
	MemoryContext cxt;
	MemoryContextCallback *cb;
	MemoryContext old;
	instr_time	t0,
				t1,
				t2,
				t3;

	acdc_batch_unregister_relations();
	cxt = AllocSetContextCreate(CurTransactionContext, "autocdc events",
								ALLOCSET_DEFAULT_SIZES);
	ev = MemoryContextAllocZero(cxt, sizeof(Events));
	ev->cxt = cxt;
	ev->flow = f;
	ev->nkeys = list_length(f->keys);
	ev->row_cxt = AllocSetContextCreate(cxt, "autocdc row set aside", ALLOCSET_SMALL_SIZES);
	cb = MemoryContextAlloc(cxt, sizeof(MemoryContextCallback));
	cb->func = events_forget;
	cb->arg = ev;
	MemoryContextRegisterResetCallback(cxt, cb);

	memset(&recv, 0, sizeof(recv));
	recv.pub.receiveSlot = events_receive;
	recv.pub.rStartup = events_startup;
	recv.pub.rShutdown = events_shutdown;
	recv.pub.rDestroy = events_destroy;
	recv.pub.mydest = DestNone;
	recv.ev = ev;
	recv.allow_truncate = allow_truncate;
	INSTR_TIME_SET_CURRENT(t0);
	acdc_progress_phase(ACDC_PHASE_READING);
	acdc_read_execute(events_sql, p, (DestReceiver *) &recv);
	acdc_progress_add_events(ev->nread & (ACDC_PROGRESS_EVENTS_BATCH - 1));
	if (recv.null_key)
		acdc_validate_raise(f, "null_key", recv.null_key, recv.null_key_seq);
	if (recv.unknown)
		acdc_validate_raise_unknown_column(f, recv.unknown_key, recv.unknown_seq, recv.unknown);
	if (recv.failed)
		acdc_expect_raise(f, recv.failed, recv.failed_row);
	INSTR_TIME_SET_CURRENT(t1);

	acdc_progress_phase(ACDC_PHASE_SORTING);
	old = MemoryContextSwitchTo(cxt);
	if (ev->hash)
		ev->in_memory = true;
	else
	{
		TuplesortInstrumentation stats;

		tuplesort_performsort(ev->sort);
		tuplesort_get_stats(ev->sort, &stats);
		ev->in_memory = stats.spaceType == SORT_SPACE_TYPE_MEMORY;
	}
	INSTR_TIME_SET_CURRENT(t2);
	events_group(ev);
	if (ev->conflicts)
	{
		events_set_aside_conflicts(ev);
		events_group(ev);
	}
	MemoryContextSwitchTo(old);
	INSTR_TIME_SET_CURRENT(t3);
	INSTR_TIME_SUBTRACT(t3, t2);
	INSTR_TIME_SUBTRACT(t2, t1);
	INSTR_TIME_SUBTRACT(t1, t0);
	elog(DEBUG1, "autocdc: flow \"%s\": %lld events read in %.1f ms, sorted in %.1f ms, %u keys numbered in %.1f ms",
		 f->name, (long long) ev->nread, INSTR_TIME_GET_MILLISEC(t1), INSTR_TIME_GET_MILLISEC(t2),
		 ev->nkeysets, INSTR_TIME_GET_MILLISEC(t3));
	return ev;
}

TupleTableSlot *
acdc_events_next(Events *ev)
{
	if ((++ev->returned & 0xFFFF) == 0)
		CHECK_FOR_INTERRUPTS();
	if (ev->hash ? !acdc_events_hash_next(ev, ev->slot) :
		!tuplesort_gettupleslot(ev->sort, true, false, ev->slot, NULL))
		return NULL;
	slot_getsomeattrs(ev->slot, ev->first_col);
	return ev->slot;
}

bool
acdc_events_key_latest(Events *ev, uint32 id, TupleTableSlot *u, TupleTableSlot *d)
{
	if (ev->hash == NULL)
		return false;
	ev->returned += ev->nevents[id];
	acdc_events_hash_key_latest(ev, id, u, d);
	return true;
}

bool
acdc_events_seek(Events *ev, uint32 id)
{
	if (ev->hash == NULL)
		return false;
	acdc_events_hash_seek(ev, id);
	return true;
}

void
acdc_events_keep(Events *ev, TupleTableSlot *dst, TupleTableSlot *src)
{
	bool		should_free;

	if (!ev->in_memory)
	{
		ExecCopySlot(dst, src);
		return;
	}
	ExecStoreMinimalTuple(ExecFetchSlotMinimalTuple(src, &should_free), dst, false);
}

void
acdc_events_end(Events *ev)
{
	acdc_batch_release_relations();
	if (ev->sort)
		tuplesort_end(ev->sort);
	MemoryContextDelete(ev->cxt);
}
