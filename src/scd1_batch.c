/*-------------------------------------------------------------------------
 * scd1_batch.c
 *	  The SCD type 1 batch fold in C (see scd1_batch.h).
 *
 * The SQL fold sorts every event of a run by key and sequence, hashes every
 * (key, sequence) pair once more for the conflict check and joins every
 * event to the state twice; at a million events that is most of a run.
 * Here one pass over the events keeps, per key in a hash table, the latest
 * upsert (its row), the latest delete, and whether the key's events came in
 * ascending sequence.  Only the events of keys that did not need sorting to
 * find two events at one sequence.  The result, one row per key, is what
 * the SQL fold's "per" step computes, so the apply that follows is shared.
 *
 * Two events at one key and sequence are told apart by a 64-bit hash of
 * their binary values: a difference always shows; an equal hash of
 * different values (odds 2^-64 per such pair) would take them as one event.
 * Whatever looks wrong here (a NULL key or sequence, a conflict, even a
 * value equal by its type's "=" but not in binary) is left to the SQL fold,
 * which checks exactly and names the event.
 *-------------------------------------------------------------------------
 */
#include "scd1_batch.h"
#include "validate.h"

#include "access/tupdesc.h"
#include "catalog/pg_collation.h"
#include "catalog/pg_type.h"
#include "common/hashfn.h"
#include "executor/spi.h"
#include "executor/tuptable.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/datum.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/sortsupport.h"
#include "utils/tuplestore.h"
#include "utils/typcache.h"

bool		autocdc_batch_fold = true;

/* One event as the checks need it after the pass. */
typedef struct BatchEvent
{
	uint32		id;				/* the key's number */
	char		kind;			/* 'u' or 'd' */
	uint64		values_hash;	/* upserts: hash of the binary values */
	Datum		seq;
} BatchEvent;

/*
 * Per key, in the hash table's entry so that one cache miss reaches it (at
 * a million events over 100k keys, misses are most of the pass): the fold
 * of its events.  Entries move while the table grows; events name their
 * key by number, and after the pass "folds" maps numbers to entries.
 */
typedef struct KeyFold
{
	uint32		hash;
	char		status;
	bool		has_bu;
	bool		has_bd;
	bool		disordered;		/* some event not above the one before */
	uint32		id;				/* the key's number */
	Datum		key0;			/* first key column */
	Datum		bu;				/* latest upsert's sequence */
	Datum		bd;				/* latest delete's sequence */
	Datum		last;			/* sequence of the key's latest-read event */
	MinimalTuple winner;		/* the latest upsert's event row */
} KeyFold;

/* Per key, what earlier runs applied (read after the pass). */
typedef struct KeyApplied
{
	bool		has_state;
	bool		has_old_ups;
	bool		has_old_del;
	bool		has_row;
	Datum		old_ups;
	Datum		old_del;
	uint64		row_hash;		/* hash of the target row's values */
} KeyApplied;

typedef struct Batch Batch;
static uint32 batch_key_hash(Batch *b, Datum key0);
static bool batch_key_equal(Batch *b, KeyFold *entry);

/* SH_EQUAL's first argument is always an entry's key0, the second the probe's. */
#define SH_PREFIX keytab
#define SH_ELEMENT_TYPE KeyFold
#define SH_KEY_TYPE Datum
#define SH_KEY key0
#define SH_HASH_KEY(tb, key) batch_key_hash((Batch *) (tb)->private_data, key)
#define SH_EQUAL(tb, a, b) batch_key_equal((Batch *) (tb)->private_data, \
	(KeyFold *) ((char *) &(a) - offsetof(KeyFold, key0)))
#define SH_STORE_HASH
#define SH_GET_HASH(tb, a) a->hash
#define SH_SCOPE static inline
#define SH_DECLARE
#define SH_DEFINE
#include "lib/simplehash.h"

struct Batch
{
	MemoryContext cxt;
	FlowDef    *flow;
	TupleDesc	evdesc;			/* keys, __autocdc_seq, __autocdc_kind, columns */
	int			nkeys;
	int			seq_att;
	int			kind_att;
	bool		plain_key;		/* one integer-like key: its Datum is its identity */
	FmgrInfo   *key_hash_fn;
	FmgrInfo   *key_eq_fn;
	Oid		   *key_coll;
	SortSupportData seq_sort;

	keytab_hash *tab;
	Datum	   *probe;			/* the key being looked up */
	uint32		probe_hash;
	Datum	   *keyvals;		/* nkeys values per key number */
	uint32		nkeysets;
	uint32		maxkeysets;
	KeyFold   **folds;			/* by key number, after the pass */
	KeyApplied *applied;		/* by key number */
	BatchEvent *events;
	uint64		nevents;
	uint64		maxevents;
	MemoryContext row_cxt;		/* reset per event */
	bool		refused;		/* the SQL fold must take this batch */
};

typedef struct BatchReceiver
{
	DestReceiver pub;
	Batch	   *batch;
} BatchReceiver;

/*
 * The batch of the flow being run.  Its memory is the subtransaction's, so
 * an error frees it; the relation's entry is static for the same reason: a
 * registration an error left behind can still be removed.
 */
static Batch *current_batch = NULL;
static EphemeralNamedRelationData batch_enr;

/* splitmix64's finalizer */
static inline uint32
mix64(uint64 x)
{
	x ^= x >> 30;
	x *= UINT64CONST(0xbf58476d1ce4e5b9);
	x ^= x >> 27;
	x *= UINT64CONST(0x94d049bb133111eb);
	x ^= x >> 31;
	return (uint32) x;
}

static uint32
batch_key_hash(Batch *b, Datum key0)
{
	return b->probe_hash;
}

/* Whether entry holds the probe's key. */
static bool
batch_key_equal(Batch *b, KeyFold *entry)
{
	Datum	   *rest;

	if (b->plain_key)
		return entry->key0 == b->probe[0];
	rest = &b->keyvals[(Size) entry->id * b->nkeys];
	for (int i = 0; i < b->nkeys; i++)
		if (!DatumGetBool(FunctionCall2Coll(&b->key_eq_fn[i], b->key_coll[i],
											i == 0 ? entry->key0 : rest[i], b->probe[i])))
			return false;
	return true;
}

static inline int
seq_cmp(Batch *b, Datum x, Datum y)
{
	return ApplySortComparator(x, false, y, false, &b->seq_sort);
}

/* 64-bit hash of an upsert's binary values, from attribute "first" on. */
static uint64
values_hash(TupleDesc desc, int first, Datum *values, bool *isnull)
{
	uint64		h = UINT64CONST(0x7a3c9f1d);

	for (int i = first; i < desc->natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, i);
		uint64		v;

		if (isnull[i])
			v = UINT64CONST(0x5bd1e995);
		else if (att->attbyval)
			v = hash_bytes_uint32_extended((uint32) values[i], (uint64) values[i] >> 32);
		else if (att->attlen > 0)
			v = hash_bytes_extended((unsigned char *) DatumGetPointer(values[i]),
									att->attlen, 0);
		else if (att->attlen == -1)
		{
			struct varlena *p = pg_detoast_datum_packed((struct varlena *) DatumGetPointer(values[i]));

			v = hash_bytes_extended((unsigned char *) VARDATA_ANY(p),
									VARSIZE_ANY_EXHDR(p), 1);
		}
		else
			v = hash_bytes_extended((unsigned char *) DatumGetCString(values[i]),
									strlen(DatumGetCString(values[i])), 2);
		h = hash_combine64(h, v);
	}
	return h;
}

/* Types whose "=" is equality of the Datum (and every Datum is distinct). */
static bool
is_plain_type(Oid typid)
{
	switch (typid)
	{
		case INT2OID:
		case INT4OID:
		case INT8OID:
		case OIDOID:
		case DATEOID:
		case TIMESTAMPOID:
		case TIMESTAMPTZOID:
		case BOOLOID:
			return true;
		default:
			return false;
	}
}

static void
batch_startup(DestReceiver *self, int operation, TupleDesc typeinfo)
{
	Batch	   *b = ((BatchReceiver *) self)->batch;
	MemoryContext old = MemoryContextSwitchTo(b->cxt);

	b->evdesc = CreateTupleDescCopy(typeinfo);
	b->seq_att = b->nkeys;
	b->kind_att = b->nkeys + 1;
	for (int i = 0; i < b->nkeys; i++)
	{
		Form_pg_attribute att = TupleDescAttr(typeinfo, i);
		TypeCacheEntry *tc = lookup_type_cache(att->atttypid,
											   TYPECACHE_HASH_PROC_FINFO | TYPECACHE_EQ_OPR_FINFO);

		b->key_coll[i] = OidIsValid(att->attcollation) ? att->attcollation
			: (type_is_collatable(att->atttypid) ? DEFAULT_COLLATION_OID : InvalidOid);
		if (!OidIsValid(tc->hash_proc) || !OidIsValid(tc->eq_opr) ||
			(OidIsValid(b->key_coll[i]) && !get_collation_isdeterministic(b->key_coll[i])))
		{
			b->refused = true;
			break;
		}
		fmgr_info_copy(&b->key_hash_fn[i], &tc->hash_proc_finfo, b->cxt);
		fmgr_info_copy(&b->key_eq_fn[i], &tc->eq_opr_finfo, b->cxt);
	}
	b->plain_key = b->nkeys == 1 && is_plain_type(TupleDescAttr(typeinfo, 0)->atttypid);
	MemoryContextSwitchTo(old);
}

/* The key's entry, a new one for a key not seen before. */
static KeyFold *
batch_key(Batch *b, Datum *values)
{
	KeyFold    *entry;
	bool		found;
	uint32		h = 0;

	for (int i = 0; i < b->nkeys; i++)
		b->probe[i] = values[i];
	if (b->plain_key)
		h = mix64((uint64) values[0]);
	else
		for (int i = 0; i < b->nkeys; i++)
			h = hash_combine(h, DatumGetUInt32(FunctionCall1Coll(&b->key_hash_fn[i],
																 b->key_coll[i], values[i])));
	b->probe_hash = h;
	entry = keytab_insert(b->tab, values[0], &found);
	if (found)
		return entry;

	entry->id = b->nkeysets;
	entry->has_bu = entry->has_bd = entry->disordered = false;
	entry->winner = NULL;
	if (!b->plain_key)
	{
		if (b->nkeysets == b->maxkeysets)
		{
			b->maxkeysets *= 2;
			b->keyvals = repalloc_huge(b->keyvals, sizeof(Datum) * b->nkeys * b->maxkeysets);
		}
		for (int i = 0; i < b->nkeys; i++)
		{
			Form_pg_attribute att = TupleDescAttr(b->evdesc, i);

			b->keyvals[(Size) entry->id * b->nkeys + i] =
				datumCopy(values[i], att->attbyval, att->attlen);
		}
		entry->key0 = b->keyvals[(Size) entry->id * b->nkeys];
	}
	b->nkeysets++;
	return entry;
}

/*
 * Keeps the slot's row as the key's winner, in the winner's memory when it
 * fits: a pfree and palloc per upsert would cost more cache misses.
 */
static void
batch_keep_winner(Batch *b, KeyFold *fold, TupleTableSlot *slot)
{
	MemoryContext old = MemoryContextSwitchTo(b->row_cxt);
	MinimalTuple tup = ExecCopySlotMinimalTuple(slot);

	MemoryContextSwitchTo(b->cxt);
	if (fold->winner == NULL || tup->t_len > fold->winner->t_len)
	{
		if (fold->winner)
			pfree(fold->winner);
		fold->winner = palloc(tup->t_len);
	}
	memcpy(fold->winner, tup, tup->t_len);
	MemoryContextSwitchTo(old);
	MemoryContextReset(b->row_cxt);
}

static bool
batch_receive(TupleTableSlot *slot, DestReceiver *self)
{
	Batch	   *b = ((BatchReceiver *) self)->batch;
	MemoryContext old;
	Datum	   *values;
	bool	   *isnull;
	BatchEvent *ev;
	KeyFold    *fold;
	Form_pg_attribute seqatt;
	char		kind;

	if (b->refused)
		return false;
	slot_getallattrs(slot);
	values = slot->tts_values;
	isnull = slot->tts_isnull;
	kind = *VARDATA_ANY(DatumGetPointer(values[b->kind_att]));
	if (isnull[b->seq_att] || kind == 't')
	{
		b->refused = true;
		return false;
	}
	for (int i = 0; i < b->nkeys; i++)
		if (isnull[i])
		{
			b->refused = true;
			return false;
		}

	old = MemoryContextSwitchTo(b->cxt);
	if (b->nevents == b->maxevents)
	{
		b->maxevents *= 2;
		b->events = repalloc_huge(b->events, sizeof(BatchEvent) * b->maxevents);
	}
	ev = &b->events[b->nevents++];
	fold = batch_key(b, values);
	ev->id = fold->id;
	ev->kind = kind;
	seqatt = TupleDescAttr(b->evdesc, b->seq_att);
	ev->seq = seqatt->attbyval ? values[b->seq_att]
		: datumCopy(values[b->seq_att], false, seqatt->attlen);
	ev->values_hash = kind == 'u' ? values_hash(b->evdesc, b->kind_att + 1, values, isnull) : 0;

	if ((fold->has_bu || fold->has_bd) && seq_cmp(b, ev->seq, fold->last) <= 0)
		fold->disordered = true;
	fold->last = ev->seq;
	if (kind == 'u')
	{
		if (!fold->has_bu || seq_cmp(b, ev->seq, fold->bu) > 0)
		{
			fold->bu = ev->seq;
			fold->has_bu = true;
			batch_keep_winner(b, fold, slot);
		}
	}
	else if (!fold->has_bd || seq_cmp(b, ev->seq, fold->bd) > 0)
	{
		fold->bd = ev->seq;
		fold->has_bd = true;
	}
	MemoryContextSwitchTo(old);
	return true;
}

static void
batch_shutdown(DestReceiver *self)
{
}

static void
batch_destroy(DestReceiver *self)
{
}

/* After the pass: entries by key number, and room for what was applied. */
static void
batch_index_keys(Batch *b)
{
	keytab_iterator it;
	KeyFold    *entry;

	b->folds = MemoryContextAllocHuge(b->cxt, sizeof(KeyFold *) * Max(b->nkeysets, 1));
	b->applied = MemoryContextAllocHuge(b->cxt, sizeof(KeyApplied) * Max(b->nkeysets, 1));
	memset(b->applied, 0, sizeof(KeyApplied) * Max(b->nkeysets, 1));
	keytab_start_iterate(b->tab, &it);
	while ((entry = keytab_iterate(b->tab, &it)) != NULL)
		b->folds[entry->id] = entry;
}

static int
event_cmp(const void *x, const void *y, void *arg)
{
	const BatchEvent *a = x;
	const BatchEvent *b = y;

	if (a->id != b->id)
		return a->id < b->id ? -1 : 1;
	return seq_cmp((Batch *) arg, a->seq, b->seq);
}

/*
 * Two different events at one key and sequence in the batch?  Only keys
 * read out of ascending order can have two.
 */
static bool
batch_has_conflict(Batch *b)
{
	BatchEvent *sorted;
	uint64		n = 0;
	uint8	   *disordered = palloc0((b->nkeysets + 7) / 8);	/* fits in cache */

	for (uint32 id = 0; id < b->nkeysets; id++)
		if (b->folds[id]->disordered)
			disordered[id / 8] |= 1 << (id % 8);
#define IS_DISORDERED(id) (disordered[(id) / 8] & (1 << ((id) % 8)))
	for (uint64 i = 0; i < b->nevents; i++)
		if (IS_DISORDERED(b->events[i].id))
			n++;
	if (n < 2)
		return false;
	sorted = palloc_extended(sizeof(BatchEvent) * n, MCXT_ALLOC_HUGE);
	n = 0;
	for (uint64 i = 0; i < b->nevents; i++)
		if (IS_DISORDERED(b->events[i].id))
			sorted[n++] = b->events[i];
#undef IS_DISORDERED
	qsort_arg(sorted, n, sizeof(BatchEvent), event_cmp, b);
	for (uint64 i = 1; i < n; i++)
		if (event_cmp(&sorted[i - 1], &sorted[i], b) == 0 &&
			(sorted[i - 1].kind != sorted[i].kind ||
			 sorted[i - 1].values_hash != sorted[i].values_hash))
			return true;
	pfree(sorted);
	pfree(disordered);
	return false;
}

/* The per-key relation: (__autocdc_id, keys, __autocdc_bu, __autocdc_bd, columns). */
static void
batch_register(Batch *b)
{
	int			ncols = b->evdesc->natts - b->kind_att - 1;
	int			natts = 1 + b->nkeys + 2 + ncols;
	TupleDesc	desc = CreateTemplateTupleDesc(natts);
	Tuplestorestate *store;
	TupleTableSlot *wslot;
	Datum	   *values = palloc(sizeof(Datum) * natts);
	bool	   *nulls = palloc(sizeof(bool) * natts);
	int			a = 1;

	TupleDescInitEntry(desc, a++, "__autocdc_id", INT4OID, -1, 0);
	for (int i = 0; i < b->evdesc->natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(b->evdesc, i);

		if (i == b->kind_att)
			continue;
		if (i == b->seq_att)
		{
			TupleDescInitEntry(desc, a++, "__autocdc_bu", att->atttypid, att->atttypmod, 0);
			TupleDescInitEntry(desc, a++, "__autocdc_bd", att->atttypid, att->atttypmod, 0);
			continue;
		}
		TupleDescInitEntry(desc, a, NameStr(att->attname), att->atttypid, att->atttypmod, 0);
		TupleDescInitEntryCollation(desc, a++, att->attcollation);
	}

	store = tuplestore_begin_heap(false, false, work_mem);
	wslot = MakeSingleTupleTableSlot(b->evdesc, &TTSOpsMinimalTuple);
	for (uint32 id = 0; id < b->nkeysets; id++)
	{
		KeyFold    *fold = b->folds[id];

		values[0] = Int32GetDatum((int32) id);
		nulls[0] = false;
		for (int i = 0; i < b->nkeys; i++)
		{
			values[1 + i] = b->plain_key ? fold->key0 : b->keyvals[(Size) id * b->nkeys + i];
			nulls[1 + i] = false;
		}
		a = 1 + b->nkeys;
		values[a] = fold->bu;
		nulls[a++] = !fold->has_bu;
		values[a] = fold->bd;
		nulls[a++] = !fold->has_bd;
		if (fold->winner)
		{
			ExecStoreMinimalTuple(fold->winner, wslot, false);
			slot_getallattrs(wslot);
			/* the key as the winner spells it (numeric 1.0 = 1.00), as SQL's DISTINCT ON keeps it */
			for (int i = 0; i < b->nkeys; i++)
				values[1 + i] = wslot->tts_values[i];
			for (int i = 0; i < ncols; i++)
			{
				values[a + i] = wslot->tts_values[b->kind_att + 1 + i];
				nulls[a + i] = wslot->tts_isnull[b->kind_att + 1 + i];
			}
		}
		else
			for (int i = 0; i < ncols; i++)
				nulls[a + i] = true;
		tuplestore_putvalues(store, desc, values, nulls);
		ExecClearTuple(wslot);
	}
	ExecDropSingleTupleTableSlot(wslot);

	memset(&batch_enr, 0, sizeof(batch_enr));
	batch_enr.md.name = SCD1_BATCH_RELATION;
	batch_enr.md.reliddesc = InvalidOid;
	batch_enr.md.tupdesc = desc;
	batch_enr.md.enrtype = ENR_NAMED_TUPLESTORE;
	batch_enr.md.enrtuples = b->nkeysets;
	batch_enr.reldata = store;
	if (SPI_register_relation(&batch_enr) != SPI_OK_REL_REGISTER)
		elog(ERROR, "autocdc: could not register the batch relation");
}

/*
 * Reads the state of the batch's keys (and the target row where an event
 * may repeat the applied upsert); then the checks against what earlier runs
 * applied, and the count of late or replayed events.  Returns false when an
 * event disagrees with the applied one.
 */
static bool
batch_check_applied(Batch *b, ReadParams *p, int64 *skipped)
{
	FlowDef    *f = b->flow;
	StringInfoData sql;
	ListCell   *lc;
	Datum		mark = (Datum) 0;
	bool		has_mark = p->truncate_seq != NULL;
	int			ncols = b->evdesc->natts - b->kind_att - 1;
	Datum	   *values;
	bool	   *nulls;

	initStringInfo(&sql);
	appendStringInfo(&sql, "SELECT p.__autocdc_id, st.__autocdc_upsert_seq, st.__autocdc_delete_seq, "
					 "t.%s IS NOT NULL", quote_identifier(linitial(f->keys)));
	foreach(lc, f->columns)
		appendStringInfo(&sql, ", t.%s", quote_identifier(lfirst(lc)));
	appendStringInfo(&sql, " FROM %s p JOIN %s st ON ", SCD1_BATCH_RELATION,
					 rel_qualified_name(f->state));
	append_keys_match(&sql, f, "p", "st");
	appendStringInfo(&sql, " LEFT JOIN %s t ON ", rel_qualified_name(f->target));
	append_keys_match(&sql, f, "p", "t");
	spi_exec(sql.data, 0, NULL, NULL, NULL, false);

	values = palloc(sizeof(Datum) * (ncols + 4));
	nulls = palloc(sizeof(bool) * (ncols + 4));
	for (uint64 r = 0; r < SPI_processed; r++)
	{
		HeapTuple	tup = SPI_tuptable->vals[r];
		TupleDesc	desc = SPI_tuptable->tupdesc;
		bool		isnull;
		KeyApplied *fold = &b->applied[DatumGetInt32(SPI_getbinval(tup, desc, 1, &isnull))];

		fold->has_state = true;
		fold->old_ups = SPI_getbinval(tup, desc, 2, &isnull);
		fold->has_old_ups = !isnull;
		fold->old_del = SPI_getbinval(tup, desc, 3, &isnull);
		fold->has_old_del = !isnull;
		fold->has_row = DatumGetBool(SPI_getbinval(tup, desc, 4, &isnull));
		if (fold->has_row)
		{
			heap_deform_tuple(tup, desc, values, nulls);
			fold->row_hash = values_hash(desc, 4, values, nulls);
		}
	}

	if (has_mark)
	{
		Oid			in,
					ioparam;

		getTypeInputInfo(f->seq_type, &in, &ioparam);
		mark = OidInputFunctionCall(in, p->truncate_seq, ioparam, -1);
	}

	*skipped = 0;
	for (uint64 i = 0; i < b->nevents; i++)
	{
		BatchEvent *ev = &b->events[i];
		KeyApplied *fold = &b->applied[ev->id];

		if (has_mark && seq_cmp(b, ev->seq, mark) < 0)
			(*skipped)++;
		if (!fold->has_state)
			continue;
		if (ev->kind == 'u' && fold->has_old_del && seq_cmp(b, ev->seq, fold->old_del) == 0)
			return false;
		if (ev->kind == 'd' && fold->has_old_ups && seq_cmp(b, ev->seq, fold->old_ups) == 0)
			return false;
		if (ev->kind == 'u' && fold->has_old_ups && fold->has_row &&
			seq_cmp(b, ev->seq, fold->old_ups) == 0 && ev->values_hash != fold->row_hash)
			return false;
		if (has_mark && seq_cmp(b, ev->seq, mark) < 0)
			continue;			/* counted */
		if ((fold->has_old_ups && seq_cmp(b, ev->seq, fold->old_ups) <= 0) ||
			(fold->has_old_del && seq_cmp(b, ev->seq, fold->old_del) <= 0))
			(*skipped)++;
	}
	SPI_freetuptable(SPI_tuptable);
	return true;
}

/* The key and sequence types the C fold can hash and order like SQL does. */
bool
scd1_batch_eligible(FlowDef *f, ReadParams *p)
{
	TypeCacheEntry *tc;
	ListCell   *lc;

	if (!autocdc_batch_fold || p->events_sql != NULL || f->state_partial != NIL)
		return false;
	if (type_is_collatable(f->seq_type))
		return false;
	tc = lookup_type_cache(f->seq_type, TYPECACHE_LT_OPR);
	if (!OidIsValid(tc->lt_opr))
		return false;
	foreach(lc, f->keys)
	{
		tc = lookup_type_cache(target_type(f, lfirst(lc)),
							   TYPECACHE_HASH_PROC | TYPECACHE_EQ_OPR);
		if (!OidIsValid(tc->hash_proc) || !OidIsValid(tc->eq_opr))
			return false;
	}
	return true;
}

bool
scd1_batch_fold(FlowDef *f, ReadParams *p, const char *events_sql,
				FlowCounts *counts)
{
	Batch	   *b;
	BatchReceiver recv;
	SPIPlanPtr	plan;
	SPIExecuteOptions opts;
	Oid			types[READ_NPARAMS];
	Datum		values[READ_NPARAMS];
	char		nulls[READ_NPARAMS];
	ParamListInfo params;
	TypeCacheEntry *tc;
	int			rc;

	SPI_unregister_relation(SCD1_BATCH_RELATION);
	current_batch = NULL;
	b = MemoryContextAllocZero(CurTransactionContext, sizeof(Batch));
	b->cxt = AllocSetContextCreate(CurTransactionContext, "autocdc batch fold",
								   ALLOCSET_DEFAULT_SIZES);
	current_batch = b;
	b->flow = f;
	b->nkeys = list_length(f->keys);
	b->key_hash_fn = MemoryContextAllocZero(b->cxt, sizeof(FmgrInfo) * b->nkeys);
	b->key_eq_fn = MemoryContextAllocZero(b->cxt, sizeof(FmgrInfo) * b->nkeys);
	b->key_coll = MemoryContextAllocZero(b->cxt, sizeof(Oid) * b->nkeys);
	b->probe = MemoryContextAllocZero(b->cxt, sizeof(Datum) * b->nkeys);
	b->maxkeysets = 1024;
	b->keyvals = MemoryContextAlloc(b->cxt, sizeof(Datum) * b->nkeys * b->maxkeysets);
	b->row_cxt = AllocSetContextCreate(b->cxt, "autocdc batch row", ALLOCSET_SMALL_SIZES);
	b->maxevents = 4096;
	b->events = MemoryContextAlloc(b->cxt, sizeof(BatchEvent) * b->maxevents);
	b->tab = keytab_create(b->cxt, 1024, b);
	tc = lookup_type_cache(f->seq_type, TYPECACHE_LT_OPR);
	b->seq_sort.ssup_cxt = b->cxt;
	b->seq_sort.ssup_collation = InvalidOid;
	PrepareSortSupportFromOrderingOp(tc->lt_opr, &b->seq_sort);

	memset(&recv, 0, sizeof(recv));
	recv.pub.receiveSlot = batch_receive;
	recv.pub.rStartup = batch_startup;
	recv.pub.rShutdown = batch_shutdown;
	recv.pub.rDestroy = batch_destroy;
	recv.pub.mydest = DestNone;
	recv.batch = b;

	read_params_arrays(p, types, values, nulls);
	params = makeParamList(READ_NPARAMS);
	for (int i = 0; i < READ_NPARAMS; i++)
	{
		params->params[i].value = values[i];
		params->params[i].isnull = nulls[i] == 'n';
		params->params[i].pflags = PARAM_FLAG_CONST;
		params->params[i].ptype = types[i];
	}
	elog(DEBUG2, "autocdc: %s", events_sql);
	plan = SPI_prepare(events_sql, READ_NPARAMS, types);
	if (plan == NULL)
		elog(ERROR, "autocdc: SPI_prepare failed (%s) for: %s",
			 SPI_result_code_string(SPI_result), events_sql);
	memset(&opts, 0, sizeof(opts));
	opts.params = params;
	opts.read_only = false;	/* a read-only call would not see this run's earlier writes */
	opts.dest = (DestReceiver *) &recv;
	rc = SPI_execute_plan_extended(plan, &opts);
	if (rc < 0)
		elog(ERROR, "autocdc: SPI failed (%s) reading events", SPI_result_code_string(rc));
	SPI_freeplan(plan);

	if (b->refused)
		return false;
	batch_index_keys(b);
	if (batch_has_conflict(b))
		return false;
	counts->read = b->nevents;
	batch_register(b);
	return batch_check_applied(b, p, &counts->skipped);
}

void
scd1_batch_release(void)
{
	Batch	   *b = current_batch;

	SPI_unregister_relation(SCD1_BATCH_RELATION);
	if (b == NULL)
		return;
	current_batch = NULL;
	MemoryContextDelete(b->cxt);
	pfree(b);
}
