/*-------------------------------------------------------------------------
 * batch.c
 *	  Reading a run's events in C (see batch.h).
 *
 * The events statement runs with a receiver instead of a result: no row is
 * materialized.  Keys are numbered through a simplehash table keyed on the
 * key's hash and "="; a single integer-like key is its own identity.
 * Whatever the SQL fold must take (a NULL key or sequence, a truncate) stops
 * the read and marks the batch refused.
 *-------------------------------------------------------------------------
 */
#include "batch.h"
#include "validate.h"

#include "access/htup_details.h"
#include "access/tupdesc.h"
#include "catalog/pg_collation.h"
#include "catalog/pg_type.h"
#include "common/hashfn.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/datum.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/typcache.h"

bool		autocdc_batch_fold = true;

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

typedef struct BatchReceiver
{
	DestReceiver pub;
	Batch	   *batch;
} BatchReceiver;

/*
 * The batch of the flow being run.  Its memory is the subtransaction's, so
 * an error frees it (its relations: batch_relation.c).
 */
static Batch *current_batch = NULL;

#if defined(__GNUC__) || defined(__clang__)
#define prefetch_line(p) __builtin_prefetch(p)
#else
#define prefetch_line(p) ((void) (p))
#endif

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

/* Value i of key number id. */
Datum
batch_key_value(Batch *b, uint32 id, int i)
{
	return b->plain_key ? b->keys[id]->key0 : b->keyvals[(Size) id * b->nkeys + i];
}

/* 64-bit hash of an upsert's binary values, from attribute "first" on. */
uint64
batch_values_hash(TupleDesc desc, int first, Datum *values, bool *isnull)
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

/* Chunks of the row arena; a row larger than a chunk gets one of its own. */
#define ROW_CHUNK_BYTES ((Size) 8 * 1024 * 1024)

struct RowChunk
{
	RowChunk   *next;
	Size		size;			/* of data */
	char		data[FLEXIBLE_ARRAY_MEMBER];
};

/* SCD 1 compacts once this much was handed out and half of it is garbage. */
#define ROW_COMPACT_MIN_BYTES ((Size) 64 * 1024 * 1024)

static char *
arena_alloc(Batch *b, Size len)
{
	RowArena   *a = &b->rows;
	char	   *p;

	len = MAXALIGN(len);
	if (a->pos == NULL || (Size) (a->end - a->pos) < len)
	{
		RowChunk   *chunk;

		if (a->spare != NULL && len <= a->spare->size)
		{
			chunk = a->spare;
			a->spare = chunk->next;
		}
		else
		{
			Size		size = Max(ROW_CHUNK_BYTES, len);

			chunk = MemoryContextAllocHuge(b->cxt, offsetof(RowChunk, data) + size);
			chunk->size = size;
		}
		chunk->next = a->chunks;
		a->chunks = chunk;
		a->pos = (char *) MAXALIGN(chunk->data);
		a->end = chunk->data + chunk->size;
		if ((Size) (a->end - a->pos) < len)
			elog(ERROR, "autocdc: row of %zu bytes does not fit its chunk", len);
	}
	p = a->pos;
	a->pos += len;
	a->used += len;
	return p;
}

/*
 * The slot's row (all attributes fetched), kept with the batch.  It is
 * heap_form_minimal_tuple's work, but written into the arena: no palloc
 * and no copy per event.
 */
static MinimalTuple
batch_keep_row(Batch *b, TupleTableSlot *slot)
{
	TupleDesc	desc = slot->tts_tupleDescriptor;
	bool		hasnull = false;
	Size		hoff,
				data_len,
				len;
	MinimalTuple tup;

	for (int i = 0; i < desc->natts; i++)
		hasnull |= slot->tts_isnull[i];
	len = SizeofMinimalTupleHeader;
	if (hasnull)
		len += BITMAPLEN(desc->natts);
	hoff = len = MAXALIGN(len);
	data_len = heap_compute_data_size(desc, slot->tts_values, slot->tts_isnull);
	len += data_len;
	tup = (MinimalTuple) arena_alloc(b, len);
	memset(tup, 0, len);		/* alignment padding included, as palloc0 */
	tup->t_len = len;
	HeapTupleHeaderSetNatts(tup, desc->natts);
	tup->t_hoff = hoff + MINIMAL_TUPLE_OFFSET;
	heap_fill_tuple(desc, slot->tts_values, slot->tts_isnull, (char *) tup + hoff,
					data_len, &tup->t_infomask, hasnull ? tup->t_bits : NULL);
	return tup;
}

/*
 * SCD 1 keeps one row per key but forms one per upsert: once half of what
 * was handed out is garbage, the winners move to fresh chunks.
 */
static void
batch_compact_winners(Batch *b)
{
	RowArena	old = b->rows;
	keytab_iterator it;
	KeyFold    *entry;

	b->rows.pos = b->rows.end = NULL;
	b->rows.chunks = NULL;
	b->rows.used = 0;
	keytab_start_iterate(b->tab, &it);
	while ((entry = keytab_iterate(b->tab, &it)) != NULL)
		if (entry->winner != NULL)
		{
			MinimalTuple moved = (MinimalTuple) arena_alloc(b, entry->winner_len);

			memcpy(moved, entry->winner, entry->winner_len);
			entry->winner = moved;
		}
	/* the old chunks are spare now; one of its own is freed */
	while (old.chunks != NULL)
	{
		RowChunk   *chunk = old.chunks;

		old.chunks = chunk->next;
		if (chunk->size > ROW_CHUNK_BYTES)
			pfree(chunk);
		else
		{
			chunk->next = b->rows.spare;
			b->rows.spare = chunk;
		}
	}
}

/*
 * Types whose "=" is equality of the Datum and whose order is the Datum's
 * as a signed integer (smaller ones are sign- or zero-extended).
 */
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
	/* the comparisons were set up for the catalog's type; a changed column is the SQL fold's */
	if (TupleDescAttr(typeinfo, b->seq_att)->atttypid != b->flow->seq_type)
		b->refused = true;
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
	if (!b->plain_key)
		b->key_slot = MakeSingleTupleTableSlot(b->evdesc, &TTSOpsMinimalTuple);
	MemoryContextSwitchTo(old);
}

/* The hash of the slot's key. */
static uint32
batch_key_hash_of(Batch *b, Datum *values)
{
	uint32		h = 0;

	if (b->plain_key)
		return mix64((uint64) values[0]);
	for (int i = 0; i < b->nkeys; i++)
		h = hash_combine(h, DatumGetUInt32(FunctionCall1Coll(&b->key_hash_fn[i],
															 b->key_coll[i], values[i])));
	return h;
}

/* The pending event's key entry, a new one for a key not seen before. */
static KeyFold *
batch_key(Batch *b, PendingEvent *pe)
{
	KeyFold    *entry;
	bool		found;
	Datum	   *values;

	if (b->plain_key)
		values = &pe->key0;
	else
	{
		ExecStoreMinimalTuple(pe->row, b->key_slot, false);
		slot_getsomeattrs(b->key_slot, b->nkeys);
		values = b->key_slot->tts_values;
	}
	for (int i = 0; i < b->nkeys; i++)
		b->probe[i] = values[i];
	b->probe_hash = pe->hash;
	entry = keytab_insert(b->tab, values[0], &found);
	if (found)
		return entry;

	entry->id = b->nkeysets;
	entry->has_bu = entry->has_bd = false;
	entry->winner = NULL;
	entry->winner_len = 0;
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

/* Numbers the oldest pending event and folds it. */
static void
batch_fold_pending(Batch *b)
{
	PendingEvent *pe = &b->pending[b->next_pending];
	KeyFold    *fold = batch_key(b, pe);
	BatchEvent *ev = &b->events[pe->event];

	ev->id = fold->id;
	b->on_event(b, fold, ev, pe->row);
	b->next_pending = (b->next_pending + 1) % BATCH_PREFETCH_DISTANCE;
	b->npending--;
}

static void
batch_fold_all_pending(Batch *b)
{
	MemoryContext old = MemoryContextSwitchTo(b->cxt);

	while (b->npending > 0)
		batch_fold_pending(b);
	MemoryContextSwitchTo(old);
}

static bool
batch_receive(TupleTableSlot *slot, DestReceiver *self)
{
	Batch	   *b = ((BatchReceiver *) self)->batch;
	MemoryContext old;
	Datum	   *values;
	bool	   *isnull;
	BatchEvent *ev;
	PendingEvent *pe;
	KeyFold    *bucket;
	uint32		hash;
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

	/*
	 * Past the bound (all the batch holds: events, keys, the folds' rows,
	 * and a grown event array), the SQL fold, which spills, takes the batch.
	 */
	if (((b->nevents & 0xFFFF) == 0 || b->nevents == b->maxevents) &&
		MemoryContextMemAllocated(b->cxt, true) +
		(b->nevents == b->maxevents ? sizeof(BatchEvent) * b->maxevents : 0) > BATCH_MEMORY_BYTES)
	{
		b->refused = true;
		return false;
	}
	if (b->compact_rows &&
		b->rows.used >= Max(ROW_COMPACT_MIN_BYTES, 2 * b->live_row_bytes))
	{
		batch_fold_all_pending(b);	/* their rows are not the winners yet */
		batch_compact_winners(b);
	}
	if (b->nevents == b->maxevents)
	{
		b->maxevents *= 2;
		b->events = repalloc_huge(b->events, sizeof(BatchEvent) * b->maxevents);
	}
	old = MemoryContextSwitchTo(b->cxt);
	ev = &b->events[b->nevents];
	ev->kind = kind;
	ev->late = false;
	seqatt = TupleDescAttr(b->evdesc, b->seq_att);
	ev->seq = seqatt->attbyval ? values[b->seq_att]
		: datumCopy(values[b->seq_att], false, seqatt->attlen);
	/* detoasted copies made while hashing go with the row */
	MemoryContextSwitchTo(b->row_cxt);
	ev->values_hash = kind == 'u' ? batch_values_hash(b->evdesc, b->kind_att + 1, values, isnull) : 0;
	hash = batch_key_hash_of(b, values);
	MemoryContextSwitchTo(b->cxt);

	if (b->npending == BATCH_PREFETCH_DISTANCE)
		batch_fold_pending(b);
	pe = &b->pending[(b->next_pending + b->npending++) % BATCH_PREFETCH_DISTANCE];
	pe->event = b->nevents++;
	pe->row = batch_keep_row(b, slot);
	pe->key0 = b->plain_key ? values[0] : (Datum) 0;
	pe->hash = hash;
	/* the entry's both ends: it may straddle two cache lines */
	bucket = &b->tab->data[hash & b->tab->sizemask];
	prefetch_line(bucket);
	prefetch_line((char *) (bucket + 1) - 1);

	MemoryContextSwitchTo(old);
	MemoryContextReset(b->row_cxt);
	return true;
}

static void
batch_shutdown(DestReceiver *self)
{
	Batch	   *b = ((BatchReceiver *) self)->batch;

	if (!b->refused)
		batch_fold_all_pending(b);
}

static void
batch_destroy(DestReceiver *self)
{
}

/* After the pass: entries by key number. */
void
batch_index_keys(Batch *b)
{
	keytab_iterator it;
	KeyFold    *entry;

	b->keys = MemoryContextAllocHuge(b->cxt, sizeof(KeyFold *) * Max(b->nkeysets, 1));
	keytab_start_iterate(b->tab, &it);
	while ((entry = keytab_iterate(b->tab, &it)) != NULL)
		b->keys[entry->id] = entry;
}

typedef struct KeyOrderArg
{
	Batch	   *b;
	SortSupportData *ssup;
} KeyOrderArg;

static int
key_order_cmp(const void *x, const void *y, void *arg)
{
	KeyOrderArg *ka = arg;
	uint32		a = *(const uint32 *) x;
	uint32		c = *(const uint32 *) y;

	for (int i = 0; i < ka->b->nkeys; i++)
	{
		int			r = ApplySortComparator(batch_key_value(ka->b, a, i), false,
											batch_key_value(ka->b, c, i), false,
											&ka->ssup[i]);

		if (r != 0)
			return r;
	}
	return 0;
}

/* A plain key's value and number, sorted by value with the compare inlined. */
typedef struct PlainKey
{
	int64		value;
	uint32		id;
} PlainKey;

#define ST_SORT sort_plain_keys
#define ST_ELEMENT_TYPE PlainKey
#define ST_COMPARE(a, c) ((a)->value < (c)->value ? -1 : (a)->value > (c)->value)
#define ST_SCOPE static
#define ST_DEFINE
#include "lib/sort_template.h"

/*
 * The key numbers in the order of the keys' values.  Rows written in that
 * order go into the target's and the state's indexes near one another;
 * in the order keys were first read they land on random pages.
 */
uint32 *
batch_key_order(Batch *b)
{
	uint32	   *order = palloc_extended(sizeof(uint32) * Max(b->nkeysets, 1), MCXT_ALLOC_HUGE);
	SortSupportData *ssup = palloc0(sizeof(SortSupportData) * b->nkeys);
	KeyOrderArg ka = {b, ssup};
	bool		sortable = true;

	if (b->plain_key)
	{
		PlainKey   *keys = palloc_extended(sizeof(PlainKey) * Max(b->nkeysets, 1), MCXT_ALLOC_HUGE);

		for (uint32 k = 0; k < b->nkeysets; k++)
		{
			keys[k].value = (int64) b->keys[k]->key0;
			keys[k].id = k;
		}
		sort_plain_keys(keys, b->nkeysets);
		for (uint32 k = 0; k < b->nkeysets; k++)
			order[k] = keys[k].id;
		pfree(keys);
		return order;
	}
	for (uint32 k = 0; k < b->nkeysets; k++)
		order[k] = k;
	for (int i = 0; i < b->nkeys; i++)
	{
		TypeCacheEntry *tc = lookup_type_cache(TupleDescAttr(b->evdesc, i)->atttypid, TYPECACHE_LT_OPR);

		if (!OidIsValid(tc->lt_opr))
		{
			sortable = false;
			break;
		}
		ssup[i].ssup_cxt = CurrentMemoryContext;
		ssup[i].ssup_collation = b->key_coll[i];
		PrepareSortSupportFromOrderingOp(tc->lt_opr, &ssup[i]);
	}
	if (sortable)
		qsort_arg(order, b->nkeysets, sizeof(uint32), key_order_cmp, &ka);
	return order;
}

bool
batch_may_fold(FlowDef *f, ReadParams *p)
{
	TypeCacheEntry *tc;

	if (!autocdc_batch_fold || p->events_sql != NULL)
		return false;
	if (type_is_collatable(f->seq_type))
		return false;
	tc = lookup_type_cache(f->seq_type, TYPECACHE_LT_OPR);
	return OidIsValid(tc->lt_opr);
}

/*
 * The batch lives in the flow's subtransaction: when an error rolls that
 * back, its memory goes, and so must every pointer to it and the relations
 * registered from it, before a later flow of the run could touch them.
 */
static void
batch_forget(void *arg)
{
	if (current_batch == arg)
		current_batch = NULL;
	batch_unregister_relations();
}

Batch *
batch_begin(FlowDef *f, BatchEventHook on_event, void *arg)
{
	Batch	   *b;
	TypeCacheEntry *tc;
	MemoryContextCallback *cb;

	batch_unregister_relations();
	current_batch = NULL;
	b = MemoryContextAllocZero(CurTransactionContext, sizeof(Batch));
	b->cxt = AllocSetContextCreate(CurTransactionContext, "autocdc batch fold",
								   ALLOCSET_DEFAULT_SIZES);
	cb = MemoryContextAlloc(b->cxt, sizeof(MemoryContextCallback));
	cb->func = batch_forget;
	cb->arg = b;
	MemoryContextRegisterResetCallback(b->cxt, cb);
	current_batch = b;
	b->flow = f;
	b->on_event = on_event;
	b->on_event_arg = arg;
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
	b->plain_seq = is_plain_type(f->seq_type);

	return b;
}

/* Reads the events; false when the batch is refused. */
bool
batch_read(Batch *b, ReadParams *p, const char *events_sql)
{
	BatchReceiver recv;
	SPIPlanPtr	plan;
	SPIExecuteOptions opts;
	Oid			types[READ_NPARAMS];
	Datum		values[READ_NPARAMS];
	char		nulls[READ_NPARAMS];
	ParamListInfo params;
	int			rc;

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

	return !b->refused;
}

/* Unregisters the batch's relations and frees it. */
void
batch_release(void)
{
	Batch	   *b = current_batch;

	batch_unregister_relations();
	if (b == NULL)
		return;
	current_batch = NULL;
	MemoryContextDelete(b->cxt);
	pfree(b);
}
