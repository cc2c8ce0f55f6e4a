/*-------------------------------------------------------------------------
 * events_hash.c
 *	  A run's events grouped by key in memory (see events.h).
 *
 * While the batch fits in its memory bound, each event is kept once, as a
 * minimal tuple in arrival order, and numbered with its key through a hash
 * table on the keys' hash functions and btree equality.  Then the keys
 * alone are sorted, the events are placed by key in one pass (a counting
 * sort), and each key's few events are sorted by sequence: the order a
 * sort of all events gives (events at one key and sequence are one event
 * or a conflict) without its comparisons; the last upsert and the last
 * delete of each key are noted then, for a fold that needs no more of a
 * key no earlier run applied (acdc_events_key_latest).  The table is
 * probed a few events behind the read, its bucket fetched ahead: a probe
 * is a cache miss otherwise.  Past the bound the events go to a tuplesort
 * and the batch carries on sorted.  Keys of a type without a hash function are
 * always sorted.
 *-------------------------------------------------------------------------
 */
#include "events.h"

#include "common/hashfn.h"
#include "miscadmin.h"
#include "access/htup_details.h"
#include "utils/datum.h"
#include "utils/memutils.h"
#include "utils/typcache.h"

#if defined(__GNUC__) || defined(__clang__)
#define prefetch_line(p) __builtin_prefetch(p)
#else
#define prefetch_line(p) ((void) (p))
#endif

/* Events read but not yet numbered: the probes' prefetch distance. */
#define PENDING 8

/*
 * The tuples are carved out of large blocks one after the other (a palloc
 * chunk header each was a fifth of a tuple), and the arrivals come in
 * chunks of 2^ARRIVAL_SHIFT (growing an array copied them): both are
 * memory the backend touches for the first time, whose page faults were
 * most of the cost of keeping an event: their pages are made present
 * PREFAULT_STEP at a time just ahead of use (acdc_prefault), a step small
 * enough that the pages the kernel zeroes are still in cache when filled.
 */
#define TUPLE_BLOCK_FIRST ((Size) 64 * 1024)
#define TUPLE_BLOCK_LARGEST ((Size) 8 * 1024 * 1024)
#define ARRIVAL_SHIFT 12
#define PREFAULT_STEP ((Size) 256 * 1024)
#define ARRIVAL_CHUNK ((uint32) 1 << ARRIVAL_SHIFT)

typedef struct KeyEntry
{
	Datum		key0;			/* the first key column */
	uint32		id;				/* the key's number in arrival order */
	uint32		hash;
	uint32		count;			/* its events */
	char		status;
} KeyEntry;

typedef struct Arrival
{
	MinimalTuple tuple;
	Datum		seq;			/* points into the tuple unless by value */
	uint32		id:31;			/* its key */
	uint32		is_delete:1;
	uint32		hash;
} Arrival;

typedef struct SeqItem
{
	Datum		seq;
	MinimalTuple tuple;
	bool		is_delete;		/* the kind, without touching the tuple */
} SeqItem;

struct EventsHash;
static bool keys_equal(struct EventsHash *h, KeyEntry *entry);
static uint32 probe_hash(struct EventsHash *h);

/* SH_EQUAL's first argument is an entry's key0, the second the probe's. */
#define SH_PREFIX keytab
#define SH_ELEMENT_TYPE KeyEntry
#define SH_KEY_TYPE Datum
#define SH_KEY key0
#define SH_HASH_KEY(tb, k) probe_hash((struct EventsHash *) (tb)->private_data)
#define SH_EQUAL(tb, a, b) keys_equal((struct EventsHash *) (tb)->private_data, \
	(KeyEntry *) ((char *) &(a) - offsetof(KeyEntry, key0)))
#define SH_STORE_HASH
#define SH_GET_HASH(tb, a) a->hash
#define SH_SCOPE static inline
#define SH_USE_NONDEFAULT_ALLOCATOR
#define SH_DECLARE
#define SH_DEFINE
#include "lib/simplehash.h"

/* zeroed, as simplehash's own allocator does, its pages made present first */
static inline void *
keytab_allocate(keytab_hash *tb, Size size)
{
	void	   *p = acdc_alloc_prefaulted(tb->ctx, size);

	memset(p, 0, size);
	return p;
}

static inline void
keytab_free(keytab_hash *tb, void *pointer)
{
	pfree(pointer);
}

struct EventsHash
{
	Events	   *ev;
	MemoryContext mem;			/* the events' tuples and arrivals */
	char	   *block_free;		/* the rest of the last block of tuples */
	char	   *block_end;
	char	   *block_present;	/* the block's pages are present up to here */
	Size		block_size;		/* of the next block: doubles */
	keytab_hash *table;
	FmgrInfo   *hashfn;			/* per key column */
	Oid		   *coll;
	bool		seq_byval;
	Size		bound;			/* bytes */
	TupleTableSlot *scratch;	/* deforms a stored tuple: the probe's */
	TupleTableSlot *scratch2;	/* an entry's */
	/* events in arrival order; the last npending not yet numbered */
	Arrival   **arrivals;		/* in chunks */
	uint32		nchunks;
	uint32		maxchunks;
	uint32		nevents;
	uint32		npending;
	Arrival    *probe;			/* the event being numbered */
	Datum	   *probe_keys;		/* and its keys */
	/* keys by number */
	uint32		nkeys;
	uint32		maxkeys;
	MinimalTuple *kfirst;		/* the key's first event */
	uint32	   *kcount;			/* its events, from the table's counts at the end */
	/* after acdc_events_hash_order: the keys' values (by arrival) and arrivals by rank */
	Datum	   *keyvals;
	uint32	   *ranked;
	/* after acdc_events_hash_order, by key in key order: its latest upsert and delete */
	MinimalTuple (*latest)[2];
	/* after acdc_events_hash_order: the events in key and sequence order */
	SeqItem    *order;
	uint32	   *kstart;			/* by key number: where its events begin there */
	uint32		pos;
};

static uint32
probe_hash(struct EventsHash *h)
{
	return h->probe->hash;
}

/* The key columns of a stored event. */
static Datum *
tuple_keys(struct EventsHash *h, MinimalTuple tuple)
{
	ExecStoreMinimalTuple(tuple, h->scratch, false);
	slot_getsomeattrs(h->scratch, h->ev->nkeys);
	return h->scratch->tts_values;
}

/* Equality as the sort orders keys: each column's comparator says 0. */
static bool
keys_equal(struct EventsHash *h, KeyEntry *entry)
{
	Events	   *ev = h->ev;
	Datum	   *y = h->probe_keys;
	Datum	   *x;

	if (ApplySortComparator(entry->key0, false, y[0], false, &ev->cmp[0]) != 0)
		return false;
	if (ev->nkeys == 1)
		return true;
	ExecStoreMinimalTuple(h->kfirst[entry->id], h->scratch2, false);
	slot_getsomeattrs(h->scratch2, ev->nkeys);
	x = h->scratch2->tts_values;
	for (int i = 1; i < ev->nkeys; i++)
		if (ApplySortComparator(x[i], false, y[i], false, &ev->cmp[i]) != 0)
			return false;
	return true;
}

bool
acdc_events_hash_begin(Events *ev, Size bound)
{
	struct EventsHash *h;

	h = palloc0(sizeof(struct EventsHash));
	h->ev = ev;
	h->hashfn = palloc0(sizeof(FmgrInfo) * ev->nkeys);
	h->coll = palloc(sizeof(Oid) * ev->nkeys);
	for (int i = 0; i < ev->nkeys; i++)
	{
		Form_pg_attribute att = TupleDescAttr(ev->desc, i);
		TypeCacheEntry *tc = lookup_type_cache(att->atttypid, TYPECACHE_HASH_PROC_FINFO);

		if (!OidIsValid(tc->hash_proc))
		{
			pfree(h->hashfn);
			pfree(h->coll);
			pfree(h);
			return false;
		}
		fmgr_info_copy(&h->hashfn[i], &tc->hash_proc_finfo, CurrentMemoryContext);
		h->coll[i] = ev->cmp[i].ssup_collation;
	}
	h->seq_byval = TupleDescAttr(ev->desc, ev->seq_att)->attbyval;
	h->mem = AllocSetContextCreate(CurrentMemoryContext, "autocdc events by key",
								   ALLOCSET_DEFAULT_SIZES);
	h->block_size = TUPLE_BLOCK_FIRST;
	h->table = keytab_create(CurrentMemoryContext, 1024, h);
	h->bound = bound;
	h->scratch = MakeSingleTupleTableSlot(ev->desc, &TTSOpsMinimalTuple);
	h->scratch2 = MakeSingleTupleTableSlot(ev->desc, &TTSOpsMinimalTuple);
	h->maxchunks = 16;
	h->arrivals = palloc(sizeof(Arrival *) * h->maxchunks);
	h->maxkeys = 1024;
	h->kfirst = palloc(sizeof(MinimalTuple) * h->maxkeys);
	ev->hash = h;
	return true;
}

static inline Arrival *
arrival_at(struct EventsHash *h, uint32 n)
{
	return &h->arrivals[n >> ARRIVAL_SHIFT][n & (ARRIVAL_CHUNK - 1)];
}

/* size bytes in mem (MAXALIGNed, not zeroed), until the grouping ends */
static void *
hash_alloc(struct EventsHash *h, Size size)
{
	char	   *p;

	size = MAXALIGN(size);
	if (size > (Size) (h->block_end - h->block_free))
	{
		if (size > h->block_size / 4)
			return acdc_alloc_prefaulted(h->mem, size);
		h->block_free = MemoryContextAllocExtended(h->mem, h->block_size, MCXT_ALLOC_HUGE);
		h->block_end = h->block_free + h->block_size;
		h->block_present = h->block_free;
		if (h->block_size < TUPLE_BLOCK_LARGEST)
			h->block_size *= 2;
	}
	p = h->block_free;
	h->block_free += size;
	if (h->block_free > h->block_present)
	{
		Size		step = Min(Max(PREFAULT_STEP, size), (Size) (h->block_end - h->block_present));

		acdc_prefault(h->block_present, step);
		h->block_present += step;
	}
	return p;
}

/*
 * Bytes held and to come: the tuples and arrivals, each event's place in
 * the order, the keys and the table.
 */
static Size
hash_space(struct EventsHash *h)
{
	return MemoryContextMemAllocated(h->mem, false) +
		(Size) h->nevents * sizeof(SeqItem) +
		(Size) h->maxkeys * (sizeof(MinimalTuple) * 3 + sizeof(uint32) * 3 +
							 sizeof(Datum) * h->ev->nkeys) +
		(Size) h->table->size * sizeof(KeyEntry);
}

/* Numbers an event read earlier with its key. */
static void
number_event(struct EventsHash *h, Arrival *a)
{
	KeyEntry   *entry;
	bool		found;
	Datum	   *keys = tuple_keys(h, a->tuple);

	h->probe = a;
	h->probe_keys = keys;
	entry = keytab_insert_hash(h->table, keys[0], a->hash, &found);
	if (!found)
	{
		if (h->nkeys == h->maxkeys)
		{
			h->maxkeys *= 2;
			h->kfirst = repalloc_huge(h->kfirst, sizeof(MinimalTuple) * h->maxkeys);
		}
		entry->id = h->nkeys++;
		entry->count = 0;
		h->kfirst[entry->id] = a->tuple;
	}
	a->id = entry->id;
	entry->count++;
}

static void
number_pending(struct EventsHash *h)
{
	for (uint32 n = h->nevents - h->npending; n < h->nevents; n++)
		number_event(h, arrival_at(h, n));
	h->npending = 0;
}

/*
 * The slot's values (deformed) as a minimal tuple in a block: what
 * heap_form_minimal_tuple makes, without a palloc chunk around it.
 */
static MinimalTuple
kept_minimal_tuple(struct EventsHash *h, TupleTableSlot *slot)
{
	TupleDesc	desc = slot->tts_tupleDescriptor;
	bool		hasnull = false;
	Size		hoff;
	Size		data_len;
	MinimalTuple tuple;

	if (desc->natts > MaxTupleAttributeNumber)
		ereport(ERROR,
				(errcode(ERRCODE_TOO_MANY_COLUMNS),
				 errmsg("number of columns (%d) exceeds limit (%d)",
						desc->natts, MaxTupleAttributeNumber)));
	for (int i = 0; i < desc->natts && !hasnull; i++)
		hasnull = slot->tts_isnull[i];
	/* the data MAXALIGNed as in a heap tuple, whose header starts MINIMAL_TUPLE_OFFSET earlier */
	hoff = SizeofMinimalTupleHeader + (hasnull ? BITMAPLEN(desc->natts) : 0);
	hoff = MAXALIGN(hoff + MINIMAL_TUPLE_OFFSET) - MINIMAL_TUPLE_OFFSET;
	data_len = heap_compute_data_size(desc, slot->tts_values, slot->tts_isnull);
	/* zeroed, as heap_form_minimal_tuple's palloc0 (padding too) */
	tuple = hash_alloc(h, hoff + data_len);
	memset(tuple, 0, hoff + data_len);
	tuple->t_len = hoff + data_len;
	HeapTupleHeaderSetNatts(tuple, desc->natts);
	tuple->t_hoff = hoff + MINIMAL_TUPLE_OFFSET;
	heap_fill_tuple(desc, slot->tts_values, slot->tts_isnull, (char *) tuple + hoff, data_len,
					&tuple->t_infomask, hasnull ? tuple->t_bits : NULL);
	return tuple;
}

bool
acdc_events_hash_put(Events *ev, TupleTableSlot *slot)
{
	struct EventsHash *h = ev->hash;
	Arrival    *a;
	uint32		hash = 0;

	if ((h->nevents & 1023) == 0 && h->nevents > 0 && hash_space(h) > h->bound)
		return false;
	if (h->nevents == PG_INT32_MAX - 1)	/* key numbers take 31 bits */
		return false;
	for (int i = 0; i < ev->nkeys; i++)
	{
		uint32		k = DatumGetUInt32(FunctionCall1Coll(&h->hashfn[i], h->coll[i],
														 slot->tts_values[i]));

		hash = i == 0 ? k : hash_combine(hash, k);
	}
	if ((h->nevents & (ARRIVAL_CHUNK - 1)) == 0)
	{
		if (h->nchunks == h->maxchunks)
		{
			h->maxchunks *= 2;
			h->arrivals = repalloc(h->arrivals, sizeof(Arrival *) * h->maxchunks);
		}
		/* apart from the tuples: freed once the events are in order */
		h->arrivals[h->nchunks++] = acdc_alloc_prefaulted(h->mem, sizeof(Arrival) * ARRIVAL_CHUNK);
	}
	a = arrival_at(h, h->nevents++);
	a->tuple = kept_minimal_tuple(h, slot);
	a->hash = hash;
	a->is_delete = acdc_events_kind(ev, slot) == 'd';
	if (h->seq_byval)
		a->seq = slot->tts_values[ev->seq_att];
	else
	{
		/* the copy was just written: deforming it is cheap */
		ExecStoreMinimalTuple(a->tuple, h->scratch, false);
		slot_getsomeattrs(h->scratch, ev->seq_att + 1);
		a->seq = h->scratch->tts_values[ev->seq_att];
	}
	prefetch_line(&h->table->data[hash & h->table->sizemask]);
	if (++h->npending == PENDING)
	{
		number_event(h, arrival_at(h, h->nevents - PENDING));
		h->npending--;
	}
	return true;
}

/* Before or after acdc_events_hash_order: all events to the sort, and the rest freed. */
void
acdc_events_hash_spill(Events *ev, Tuplesortstate *sort)
{
	struct EventsHash *h = ev->hash;

	for (uint32 n = 0; n < h->nevents; n++)
	{
		if ((n & 0xFFFF) == 0)
			CHECK_FOR_INTERRUPTS();
		ExecStoreMinimalTuple(h->order ? h->order[n].tuple : arrival_at(h, n)->tuple,
							  h->scratch, false);
		tuplesort_puttupleslot(sort, h->scratch);
	}
	ExecDropSingleTupleTableSlot(h->scratch);
	ExecDropSingleTupleTableSlot(h->scratch2);
	if (h->table)
		keytab_destroy(h->table);
	MemoryContextDelete(h->mem);
	pfree(h->arrivals);
	if (h->order)
		pfree(h->order);
	pfree(h->kfirst);
	if (h->latest)
		pfree(h->latest);
	if (h->kstart)
		pfree(h->kstart);
	pfree(h);
	ev->hash = NULL;
}

typedef struct KeySort
{
	struct EventsHash *h;
	Datum	   *keyvals;		/* nkeys per key number */
} KeySort;

/* Two keys (nkeys values each) in the sort's order. */
static int
keyvals_cmp(Events *ev, const Datum *x, const Datum *y)
{
	for (int i = 0; i < ev->nkeys; i++)
	{
		int			c = ApplySortComparator(x[i], false, y[i], false, &ev->cmp[i]);

		if (c != 0)
			return c;
	}
	return 0;
}

static int
cmp_keys(const void *a, const void *b, void *arg)
{
	KeySort    *ks = arg;
	Events	   *ev = ks->h->ev;

	return keyvals_cmp(ev, &ks->keyvals[(Size) *(const uint32 *) a * ev->nkeys],
					   &ks->keyvals[(Size) *(const uint32 *) b * ev->nkeys]);
}

static int
cmp_seqs(const void *a, const void *b, void *arg)
{
	Events	   *ev = arg;

	return events_seq_cmp(ev, ((const SeqItem *) a)->seq, ((const SeqItem *) b)->seq);
}

/* Sorts a key's events by sequence: insertion sort for the usual few. */
static void
sort_key_events(Events *ev, SeqItem *items, uint32 n)
{
	if (n > 16)
	{
		qsort_arg(items, n, sizeof(SeqItem), cmp_seqs, ev);
		return;
	}
	for (uint32 i = 1; i < n; i++)
	{
		SeqItem		x = items[i];
		uint32		j = i;

		while (j > 0 && events_seq_cmp(ev, items[j - 1].seq, x.seq) > 0)
		{
			items[j] = items[j - 1];
			j--;
		}
		items[j] = x;
	}
}

/*
 * The keys in order, each numbered with its events counted; each key's
 * events by sequence, where two different events at one sequence are the
 * conflict the sorted pass finds (events.c).  work: a slot of the events.
 */
void
acdc_events_hash_order(Events *ev, BatchRelation *keysrel, TupleTableSlot *work)
{
	struct EventsHash *h = ev->hash;
	uint32		nk;
	uint32	   *keys;
	uint32	   *rank;
	uint32	   *next;
	KeySort		ks;
	uint32		start = 0;

	number_pending(h);
	nk = h->nkeys;
	h->kcount = palloc_extended(sizeof(uint32) * Max(nk, 1), MCXT_ALLOC_HUGE);
	{
		keytab_iterator it;
		KeyEntry   *entry;

		keytab_start_iterate(h->table, &it);
		while ((entry = keytab_iterate(h->table, &it)) != NULL)
			h->kcount[entry->id] = entry->count;
	}
	keytab_destroy(h->table);
	h->table = NULL;

	/* the keys, sorted */
	ks.h = h;
	ks.keyvals = acdc_alloc_prefaulted(CurrentMemoryContext, sizeof(Datum) * ev->nkeys * Max(nk, 1));
	keys = palloc_extended(sizeof(uint32) * Max(nk, 1), MCXT_ALLOC_HUGE);
	for (uint32 k = 0; k < nk; k++)
	{
		memcpy(&ks.keyvals[(Size) k * ev->nkeys], tuple_keys(h, h->kfirst[k]),
			   sizeof(Datum) * ev->nkeys);
		keys[k] = k;
	}
	qsort_arg(keys, nk, sizeof(uint32), cmp_keys, &ks);

	/* where each key's events go, then each event to its key's place */
	rank = palloc_extended(sizeof(uint32) * Max(nk, 1), MCXT_ALLOC_HUGE);
	next = palloc_extended(sizeof(uint32) * Max(nk, 1), MCXT_ALLOC_HUGE);
	for (uint32 r = 0; r < nk; r++)
	{
		rank[keys[r]] = r;
		next[r] = start;
		start += h->kcount[keys[r]];
	}
	h->order = acdc_alloc_prefaulted(CurrentMemoryContext, sizeof(SeqItem) * Max(h->nevents, 1));
	for (uint32 n = 0; n < h->nevents; n++)
	{
		Arrival    *a = arrival_at(h, n);
		SeqItem    *it = &h->order[next[rank[a->id]]++];

		it->seq = a->seq;
		it->tuple = a->tuple;
		it->is_delete = a->is_delete;
	}
	for (uint32 c = 0; c < h->nchunks; c++)
		pfree(h->arrivals[c]);
	h->nchunks = 0;

	/* each key's events by sequence, its number, its conflicts and latest events */
	h->latest = acdc_alloc_prefaulted(CurrentMemoryContext, sizeof(MinimalTuple) * 2 * Max(nk, 1));
	h->kstart = palloc_extended(sizeof(uint32) * Max(nk, 1), MCXT_ALLOC_HUGE);
	start = 0;
	for (uint32 r = 0; r < nk; r++)
	{
		uint32		n = h->kcount[keys[r]];
		SeqItem    *items = &h->order[start];

		h->kstart[r] = start;

		if ((r & 0xFFFF) == 0)
			CHECK_FOR_INTERRUPTS();
		sort_key_events(ev, items, n);
		for (uint32 i = 1; i < n; i++)
		{
			if (events_seq_cmp(ev, items[i - 1].seq, items[i].seq) != 0)
				continue;
			ExecStoreMinimalTuple(items[i - 1].tuple, work, false);
			ExecStoreMinimalTuple(items[i].tuple, ev->slot, false);
			slot_getsomeattrs(work, ev->first_col);
			slot_getsomeattrs(ev->slot, ev->first_col);
			if (!acdc_events_same(ev, work, ev->slot))
				acdc_events_found_conflict(ev, ev->slot);
		}
		/* in sequence order the last of each kind (one event at a sequence, or a conflict) */
		h->latest[r][0] = h->latest[r][1] = NULL;
		for (uint32 i = 0; i < n; i++)
			h->latest[r][items[i].is_delete] = items[i].tuple;
		acdc_events_new_key(ev, keysrel, &ks.keyvals[(Size) keys[r] * ev->nkeys], n);
		start += n;
	}
	ExecClearTuple(ev->slot);
	ExecClearTuple(work);
	pfree(next);
	pfree(rank);
	h->keyvals = ks.keyvals;
	h->ranked = keys;
	h->pos = 0;
}

/*
 * The number of the batch's key equal to keys (as the sort compares them),
 * by binary search over the keys in order; false when the batch has none.
 */
bool
acdc_events_hash_find_key(Events *ev, Datum *keys, uint32 *id)
{
	struct EventsHash *h = ev->hash;
	uint32		lo = 0,
				hi = h->nkeys;

	while (lo < hi)
	{
		uint32		mid = lo + (hi - lo) / 2;
		int			c = keyvals_cmp(ev, keys, &h->keyvals[(Size) h->ranked[mid] * ev->nkeys]);

		if (c == 0)
		{
			*id = mid;
			return true;
		}
		if (c < 0)
			hi = mid;
		else
			lo = mid + 1;
	}
	return false;
}

bool
acdc_events_hash_next(Events *ev, TupleTableSlot *slot)
{
	struct EventsHash *h = ev->hash;

	if (h->pos >= h->nevents)
	{
		ExecClearTuple(slot);
		return false;
	}
	/* the events' tuples lie where they arrived: fetch them ahead */
	if (h->pos + PENDING < h->nevents)
		prefetch_line(h->order[h->pos + PENDING].tuple);
	ExecStoreMinimalTuple(h->order[h->pos++].tuple, slot, false);
	return true;
}

/* Key id's events come next (ids are ranks: the keys are numbered in order). */
void
acdc_events_hash_seek(Events *ev, uint32 id)
{
	ev->hash->pos = ev->hash->kstart[id];
}

/*
 * Key id's latest upsert into u and latest delete into d, or the slot
 * cleared; its events are passed over unread.
 */
void
acdc_events_hash_key_latest(Events *ev, uint32 id, TupleTableSlot *u, TupleTableSlot *d)
{
	struct EventsHash *h = ev->hash;
	TupleTableSlot *slots[2] = {u, d};

	h->pos += ev->nevents[id];
	for (int k = 0; k < 2; k++)
	{
		if (h->latest[id][k])
			ExecStoreMinimalTuple(h->latest[id][k], slots[k], false);
		else
			ExecClearTuple(slots[k]);
	}
}
