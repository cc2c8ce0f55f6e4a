/*-------------------------------------------------------------------------
 * stamp_index.c
 *	  Index access method autocdc_stamp: for each range of a source's heap
 *	  blocks, the highest stamp (__autocdc_xid) inserted there and whether
 *	  a NULL was.  A run's "stamp >= the checkpoint's xmin" and "stamp IS
 *	  NULL" scan it as a bitmap of whole ranges (rechecked).
 *
 * Why not BRIN: PostgreSQL 15's brininsert reads the metapage and the
 * revmap for every row, a quarter of a COPY's time.  Here a range's entry
 * only grows (a higher stamp, a NULL seen), so an insert statement that has
 * recorded its stamp in a range skips every later row it puts there: it
 * touches the index once per range and statement, not per row.  Nothing
 * ever lowers an entry (deleted rows leave it high: more blocks read, never
 * fewer), so no summarizing and no cleanup; REINDEX makes it exact again.
 *
 * Layout: block 0 is the metapage; block 1 + n holds the entries of ranges
 * n * STAMP_ENTRIES_PER_PAGE on.  Pages change through generic WAL.  An
 * entry page a crash left zeroed had no logged change, so it recorded no
 * row of a committed transaction.
 *-------------------------------------------------------------------------
 */
#include "autocdc.h"

#include "access/amapi.h"
#include "access/generic_xlog.h"
#include "access/genam.h"
#include "access/relscan.h"
#include "access/stratnum.h"
#include "access/table.h"
#include "access/tableam.h"
#include "access/xloginsert.h"
#include "catalog/index.h"
#include "catalog/pg_amop.h"
#include "catalog/pg_amproc.h"
#include "catalog/pg_opclass.h"
#include "catalog/pg_type.h"
#include "commands/vacuum.h"
#include "miscadmin.h"
#include "nodes/tidbitmap.h"
#include "optimizer/optimizer.h"
#include "pgstat.h"
#include "storage/bufmgr.h"
#include "storage/lmgr.h"
#include "utils/catcache.h"
#include "utils/rel.h"
#include "utils/selfuncs.h"
#include "utils/syscache.h"
#include "utils/xid8.h"

PG_FUNCTION_INFO_V1(autocdc_stamp_index_handler);

/* the operator class's strategies */
#define STAMP_STRATEGY_GT	1
#define STAMP_STRATEGY_GE	2
#define STAMP_NSTRATEGIES	2

#define STAMP_MAGIC			0x41434458	/* "ACDX" */
#define STAMP_LAYOUT		1
#define STAMP_META_BLKNO	0
/* small ranges: an incremental run reads at most this many blocks too many per range */
#define STAMP_PAGES_PER_RANGE 32

#define STAMP_HAS_VALUE		0x1
#define STAMP_HAS_NULL		0x2

typedef struct StampMeta
{
	uint32		magic;
	uint32		layout;
	uint32		pages_per_range;
} StampMeta;

typedef struct StampEntry
{
	uint64		max;			/* highest stamp, when STAMP_HAS_VALUE */
	uint32		flags;
	uint32		unused;
} StampEntry;

#define STAMP_ENTRIES_PER_PAGE \
	((BLCKSZ - MAXALIGN(SizeOfPageHeaderData)) / sizeof(StampEntry))

#define stamp_entries(page)	((StampEntry *) PageGetContents(page))

/* What this insert statement knows its range's entry already holds. */
typedef struct StampInsertCache
{
	BlockNumber range;
	StampEntry	entry;
} StampInsertCache;

typedef struct StampBuildState
{
	StampEntry *entries;
	BlockNumber nentries;
	BlockNumber allocated;
	double		indtuples;
} StampBuildState;

static void
init_meta_page(Page page)
{
	StampMeta  *meta;

	PageInit(page, BLCKSZ, 0);
	meta = (StampMeta *) PageGetContents(page);
	meta->magic = STAMP_MAGIC;
	meta->layout = STAMP_LAYOUT;
	meta->pages_per_range = STAMP_PAGES_PER_RANGE;
	((PageHeader) page)->pd_lower = (char *) (meta + 1) - (char *) page;
}

static void
init_entry_page(Page page)
{
	PageInit(page, BLCKSZ, 0);
	memset(stamp_entries(page), 0, STAMP_ENTRIES_PER_PAGE * sizeof(StampEntry));
	((PageHeader) page)->pd_lower =
		(char *) (stamp_entries(page) + STAMP_ENTRIES_PER_PAGE) - (char *) page;
}

/* Whether entry e already holds what a row with this stamp adds. */
static inline bool
entry_covers(const StampEntry *e, bool isnull, uint64 stamp)
{
	if (isnull)
		return (e->flags & STAMP_HAS_NULL) != 0;
	return (e->flags & STAMP_HAS_VALUE) != 0 && stamp <= e->max;
}

static inline void
entry_add(StampEntry *e, bool isnull, uint64 stamp)
{
	if (isnull)
		e->flags |= STAMP_HAS_NULL;
	else if (!(e->flags & STAMP_HAS_VALUE) || stamp > e->max)
	{
		e->max = stamp;
		e->flags |= STAMP_HAS_VALUE;
	}
}

static void
check_meta(Relation index)
{
	Buffer		buf = ReadBuffer(index, STAMP_META_BLKNO);
	StampMeta  *meta;

	LockBuffer(buf, BUFFER_LOCK_SHARE);
	meta = (StampMeta *) PageGetContents(BufferGetPage(buf));
	if (meta->magic != STAMP_MAGIC || meta->layout != STAMP_LAYOUT ||
		meta->pages_per_range != STAMP_PAGES_PER_RANGE)
		ereport(ERROR,
				(errcode(ERRCODE_INDEX_CORRUPTED),
				 errmsg("index \"%s\" is not an autocdc_stamp index of this version",
						RelationGetRelationName(index)),
				 errhint("Use REINDEX to rebuild it.")));
	UnlockReleaseBuffer(buf);
}

/* Extends the index until block blkno exists, each new page initialized. */
static void
extend_to(Relation index, BlockNumber blkno)
{
	if (RelationGetNumberOfBlocks(index) > blkno)
		return;
	LockRelationForExtension(index, ExclusiveLock);
	while (RelationGetNumberOfBlocks(index) <= blkno)
	{
		/*
		 * Locked before it becomes valid: another backend's insert cannot
		 * see the page zeroed and record an entry this would wipe.
		 */
		Buffer		buf = ReadBufferExtended(index, MAIN_FORKNUM, P_NEW, RBM_ZERO_AND_LOCK, NULL);
		GenericXLogState *xs;
		Page		page;

		xs = GenericXLogStart(index);
		page = GenericXLogRegisterBuffer(xs, buf, GENERIC_XLOG_FULL_IMAGE);
		if (BufferGetBlockNumber(buf) == STAMP_META_BLKNO)
			init_meta_page(page);
		else
			init_entry_page(page);
		GenericXLogFinish(xs);
		UnlockReleaseBuffer(buf);
	}
	UnlockRelationForExtension(index, ExclusiveLock);
}

/* Records a row of this stamp in range; *held is the entry after. */
static void
record_in_range(Relation index, BlockNumber range, bool isnull, uint64 stamp,
				StampEntry *held)
{
	BlockNumber blkno = 1 + range / STAMP_ENTRIES_PER_PAGE;
	int			slot = range % STAMP_ENTRIES_PER_PAGE;
	Buffer		buf;
	Page		page;
	StampEntry *e;

	extend_to(index, blkno);
	buf = ReadBuffer(index, blkno);
	LockBuffer(buf, BUFFER_LOCK_SHARE);
	page = BufferGetPage(buf);
	if (!PageIsNew(page) && entry_covers(&stamp_entries(page)[slot], isnull, stamp))
	{
		*held = stamp_entries(page)[slot];
		UnlockReleaseBuffer(buf);
		return;
	}
	LockBuffer(buf, BUFFER_LOCK_UNLOCK);
	LockBuffer(buf, BUFFER_LOCK_EXCLUSIVE);
	page = BufferGetPage(buf);
	if (PageIsNew(page) || !entry_covers(&stamp_entries(page)[slot], isnull, stamp))
	{
		GenericXLogState *xs = GenericXLogStart(index);
		bool		was_new = PageIsNew(page);

		page = GenericXLogRegisterBuffer(xs, buf, was_new ? GENERIC_XLOG_FULL_IMAGE : 0);
		if (was_new)
			init_entry_page(page);
		entry_add(&stamp_entries(page)[slot], isnull, stamp);
		GenericXLogFinish(xs);
		page = BufferGetPage(buf);
	}
	e = &stamp_entries(page)[slot];
	*held = *e;
	UnlockReleaseBuffer(buf);
}

static bool
stamp_insert(Relation index, Datum *values, bool *isnull, ItemPointer heap_tid,
			 Relation heap, IndexUniqueCheck checkUnique, bool indexUnchanged,
			 IndexInfo *indexInfo)
{
	StampInsertCache *cache = (StampInsertCache *) indexInfo->ii_AmCache;
	BlockNumber range = ItemPointerGetBlockNumber(heap_tid) / STAMP_PAGES_PER_RANGE;
	uint64		stamp = isnull[0] ? 0 : DatumGetUInt64(values[0]);

	/* entries only grow, so what this statement saw there still holds */
	if (cache != NULL && cache->range == range &&
		entry_covers(&cache->entry, isnull[0], stamp))
		return false;
	if (cache == NULL)
	{
		cache = MemoryContextAllocZero(indexInfo->ii_Context, sizeof(StampInsertCache));
		indexInfo->ii_AmCache = cache;
	}
	record_in_range(index, range, isnull[0], stamp, &cache->entry);
	cache->range = range;
	return false;
}

static void
build_callback(Relation index, ItemPointer tid, Datum *values, bool *isnull,
			   bool tupleIsAlive, void *arg)
{
	StampBuildState *st = (StampBuildState *) arg;
	BlockNumber range = ItemPointerGetBlockNumber(tid) / STAMP_PAGES_PER_RANGE;

	if (range >= st->allocated)
	{
		BlockNumber grown = Max(range + 1, st->allocated * 2);

		st->entries = repalloc(st->entries, grown * sizeof(StampEntry));
		memset(st->entries + st->allocated, 0, (grown - st->allocated) * sizeof(StampEntry));
		st->allocated = grown;
	}
	st->nentries = Max(st->nentries, range + 1);
	/* dead rows too: an entry may only be too high */
	entry_add(&st->entries[range], isnull[0], isnull[0] ? 0 : DatumGetUInt64(values[0]));
	st->indtuples += 1;
}

static IndexBuildResult *
stamp_build(Relation heap, Relation index, IndexInfo *indexInfo)
{
	StampBuildState st;
	IndexBuildResult *result;
	double		reltuples;
	BlockNumber npages;

	if (RelationGetNumberOfBlocks(index) != 0)
		elog(ERROR, "index \"%s\" already contains data", RelationGetRelationName(index));
	st.allocated = 64;
	st.entries = palloc0(st.allocated * sizeof(StampEntry));
	st.nentries = 0;
	st.indtuples = 0;
	reltuples = table_index_build_scan(heap, index, indexInfo, true, true,
									   build_callback, &st, NULL);

	npages = (st.nentries + STAMP_ENTRIES_PER_PAGE - 1) / STAMP_ENTRIES_PER_PAGE;
	extend_to(index, npages);	/* the metapage and empty entry pages */
	for (BlockNumber p = 0; p < npages; p++)
	{
		Buffer		buf = ReadBuffer(index, 1 + p);
		GenericXLogState *xs;
		Page		page;
		BlockNumber first = p * STAMP_ENTRIES_PER_PAGE;
		BlockNumber n = Min(st.nentries - first, STAMP_ENTRIES_PER_PAGE);

		LockBuffer(buf, BUFFER_LOCK_EXCLUSIVE);
		xs = GenericXLogStart(index);
		page = GenericXLogRegisterBuffer(xs, buf, GENERIC_XLOG_FULL_IMAGE);
		init_entry_page(page);
		memcpy(stamp_entries(page), st.entries + first, n * sizeof(StampEntry));
		GenericXLogFinish(xs);
		UnlockReleaseBuffer(buf);
	}
	pfree(st.entries);

	result = palloc(sizeof(IndexBuildResult));
	result->heap_tuples = reltuples;
	result->index_tuples = st.indtuples;
	return result;
}

/* An unlogged table's index: the init fork holds the metapage. */
static void
stamp_buildempty(Relation index)
{
	Page		page = (Page) palloc(BLCKSZ);

	init_meta_page(page);
	PageSetChecksumInplace(page, STAMP_META_BLKNO);
	smgrwrite(RelationGetSmgr(index), INIT_FORKNUM, STAMP_META_BLKNO, (char *) page, true);
	log_newpage(&(RelationGetSmgr(index))->smgr_rnode.node, INIT_FORKNUM,
				STAMP_META_BLKNO, page, true);
	smgrimmedsync(RelationGetSmgr(index), INIT_FORKNUM);
	pfree(page);
}

/* Nothing points at a row: a deleted row leaves its range's entry as it is. */
static IndexBulkDeleteResult *
stamp_bulkdelete(IndexVacuumInfo *info, IndexBulkDeleteResult *stats,
				 IndexBulkDeleteCallback callback, void *callback_state)
{
	if (stats == NULL)
		stats = palloc0(sizeof(IndexBulkDeleteResult));
	return stats;
}

static IndexBulkDeleteResult *
stamp_vacuumcleanup(IndexVacuumInfo *info, IndexBulkDeleteResult *stats)
{
	if (info->analyze_only)
		return stats;
	if (stats == NULL)
		stats = palloc0(sizeof(IndexBulkDeleteResult));
	stats->num_pages = RelationGetNumberOfBlocks(info->index);
	stats->num_index_tuples = info->num_heap_tuples;
	stats->estimated_count = info->estimated_count;
	return stats;
}

/*
 * The scan reads every entry page, whatever the selectivity: a handful
 * of pages for millions of rows.
 */
static void
stamp_costestimate(PlannerInfo *root, IndexPath *path, double loop_count,
				   Cost *indexStartupCost, Cost *indexTotalCost,
				   Selectivity *indexSelectivity, double *indexCorrelation,
				   double *indexPages)
{
	IndexOptInfo *index = path->indexinfo;
	GenericCosts costs;
	double		ranges = Max(1.0, (double) index->rel->pages / STAMP_PAGES_PER_RANGE);

	MemSet(&costs, 0, sizeof(costs));
	genericcostestimate(root, path, loop_count, &costs);
	*indexStartupCost = index->pages * seq_page_cost +
		ranges * list_length(path->indexclauses) * cpu_operator_cost;
	*indexTotalCost = *indexStartupCost;
	*indexSelectivity = costs.indexSelectivity;
	*indexCorrelation = 1.0;	/* stamps grow with the blocks rows are appended to */
	*indexPages = index->pages;
}

static bytea *
stamp_options(Datum reloptions, bool validate)
{
	if (validate && reloptions != (Datum) 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("access method \"autocdc_stamp\" takes no storage parameters")));
	return NULL;
}

/* The operator class: xid8's > and >=, no support function. */
static bool
stamp_validate(Oid opclassoid)
{
	HeapTuple	tup = SearchSysCache1(CLAOID, ObjectIdGetDatum(opclassoid));
	Form_pg_opclass opclass;
	CatCList   *ops,
			   *procs;
	bool		valid = true;

	if (!HeapTupleIsValid(tup))
		elog(ERROR, "cache lookup failed for operator class %u", opclassoid);
	opclass = (Form_pg_opclass) GETSTRUCT(tup);
	if (opclass->opcintype != XID8OID)
	{
		ereport(INFO,
				(errcode(ERRCODE_INVALID_OBJECT_DEFINITION),
				 errmsg("autocdc_stamp operator class \"%s\" is not for type xid8",
						NameStr(opclass->opcname))));
		valid = false;
	}
	ops = SearchSysCacheList1(AMOPSTRATEGY, ObjectIdGetDatum(opclass->opcfamily));
	for (int i = 0; i < ops->n_members; i++)
	{
		Form_pg_amop op = (Form_pg_amop) GETSTRUCT(&ops->members[i]->tuple);

		if (op->amopstrategy < 1 || op->amopstrategy > STAMP_NSTRATEGIES ||
			op->amoplefttype != XID8OID || op->amoprighttype != XID8OID ||
			op->amoppurpose != AMOP_SEARCH)
		{
			ereport(INFO,
					(errcode(ERRCODE_INVALID_OBJECT_DEFINITION),
					 errmsg("autocdc_stamp operator family of \"%s\" has an operator it cannot use: strategy %d",
							NameStr(opclass->opcname), op->amopstrategy)));
			valid = false;
		}
	}
	ReleaseSysCacheList(ops);
	procs = SearchSysCacheList1(AMPROCNUM, ObjectIdGetDatum(opclass->opcfamily));
	if (procs->n_members > 0)
	{
		ereport(INFO,
				(errcode(ERRCODE_INVALID_OBJECT_DEFINITION),
				 errmsg("autocdc_stamp operator family of \"%s\" has support functions, which it does not use",
						NameStr(opclass->opcname))));
		valid = false;
	}
	ReleaseSysCacheList(procs);
	ReleaseSysCache(tup);
	return valid;
}

static IndexScanDesc
stamp_beginscan(Relation index, int nkeys, int norderbys)
{
	IndexScanDesc scan = RelationGetIndexScan(index, nkeys, norderbys);

	check_meta(index);
	return scan;
}

static void
stamp_rescan(IndexScanDesc scan, ScanKey keys, int nkeys, ScanKey orderbys, int norderbys)
{
	if (keys && scan->numberOfKeys > 0)
		memmove(scan->keyData, keys, scan->numberOfKeys * sizeof(ScanKeyData));
}

/* Whether a range with entry e may hold a row that every key accepts. */
static bool
entry_may_match(const StampEntry *e, ScanKey keys, int nkeys)
{
	for (int k = 0; k < nkeys; k++)
	{
		ScanKey		key = &keys[k];
		uint64		arg;

		if (key->sk_flags & SK_ISNULL)
		{
			if (key->sk_flags & SK_SEARCHNULL)
			{
				if (!(e->flags & STAMP_HAS_NULL))
					return false;
			}
			else if (key->sk_flags & SK_SEARCHNOTNULL)
			{
				if (!(e->flags & STAMP_HAS_VALUE))
					return false;
			}
			else
				return false;	/* a strict operator against NULL */
			continue;
		}
		if (!(e->flags & STAMP_HAS_VALUE))
			return false;
		arg = DatumGetUInt64(key->sk_argument);
		switch (key->sk_strategy)
		{
			case STAMP_STRATEGY_GT:
				if (!(e->max > arg))
					return false;
				break;
			case STAMP_STRATEGY_GE:
				if (!(e->max >= arg))
					return false;
				break;
			default:
				elog(ERROR, "autocdc_stamp: unexpected strategy %d", key->sk_strategy);
		}
	}
	return true;
}

static int64
stamp_getbitmap(IndexScanDesc scan, TIDBitmap *tbm)
{
	Relation	index = scan->indexRelation;
	Relation	heap = table_open(IndexGetRelation(RelationGetRelid(index), false),
								  AccessShareLock);
	BlockNumber heap_blocks = RelationGetNumberOfBlocks(heap);
	BlockNumber index_blocks = RelationGetNumberOfBlocks(index);
	StampEntry *entries = palloc(STAMP_ENTRIES_PER_PAGE * sizeof(StampEntry));
	int64		pages = 0;

	table_close(heap, AccessShareLock);
	pgstat_count_index_scan(index);
	for (BlockNumber blkno = 1; blkno < index_blocks; blkno++)
	{
		BlockNumber first_range = (blkno - 1) * STAMP_ENTRIES_PER_PAGE;
		Buffer		buf;
		Page		page;
		bool		isnew;

		if ((uint64) first_range * STAMP_PAGES_PER_RANGE >= heap_blocks)
			break;
		CHECK_FOR_INTERRUPTS();
		buf = ReadBuffer(index, blkno);
		LockBuffer(buf, BUFFER_LOCK_SHARE);
		page = BufferGetPage(buf);
		isnew = PageIsNew(page);
		if (!isnew)
			memcpy(entries, stamp_entries(page), STAMP_ENTRIES_PER_PAGE * sizeof(StampEntry));
		UnlockReleaseBuffer(buf);
		if (isnew)
			continue;
		for (int slot = 0; slot < STAMP_ENTRIES_PER_PAGE; slot++)
		{
			uint64		first = (uint64) (first_range + slot) * STAMP_PAGES_PER_RANGE;
			uint64		end = Min(first + STAMP_PAGES_PER_RANGE, heap_blocks);

			if (first >= heap_blocks)
				break;
			if (!entry_may_match(&entries[slot], scan->keyData, scan->numberOfKeys))
				continue;
			for (uint64 b = first; b < end; b++)
				tbm_add_page(tbm, (BlockNumber) b);
			pages += end - first;
		}
	}
	pfree(entries);
	return pages * 10;			/* a guess at the rows: the pages are lossy */
}

static void
stamp_endscan(IndexScanDesc scan)
{
}

Datum
autocdc_stamp_index_handler(PG_FUNCTION_ARGS)
{
	IndexAmRoutine *am = makeNode(IndexAmRoutine);

	am->amstrategies = STAMP_NSTRATEGIES;
	am->amsupport = 0;
	am->amoptsprocnum = 0;
	am->amcanorder = false;
	am->amcanorderbyop = false;
	am->amcanbackward = false;
	am->amcanunique = false;
	am->amcanmulticol = false;
	am->amoptionalkey = true;
	am->amsearcharray = false;
	am->amsearchnulls = true;
	am->amstorage = false;
	am->amclusterable = false;
	am->ampredlocks = false;
	am->amcanparallel = false;
	am->amcaninclude = false;
	am->amusemaintenanceworkmem = false;
	am->amparallelvacuumoptions = VACUUM_OPTION_NO_PARALLEL;
	am->amkeytype = InvalidOid;

	am->ambuild = stamp_build;
	am->ambuildempty = stamp_buildempty;
	am->aminsert = stamp_insert;
	am->ambulkdelete = stamp_bulkdelete;
	am->amvacuumcleanup = stamp_vacuumcleanup;
	am->amcanreturn = NULL;
	am->amcostestimate = stamp_costestimate;
	am->amoptions = stamp_options;
	am->amproperty = NULL;
	am->ambuildphasename = NULL;
	am->amvalidate = stamp_validate;
	am->amadjustmembers = NULL;
	am->ambeginscan = stamp_beginscan;
	am->amrescan = stamp_rescan;
	am->amgettuple = NULL;
	am->amgetbitmap = stamp_getbitmap;
	am->amendscan = stamp_endscan;
	am->ammarkpos = NULL;
	am->amrestrpos = NULL;
	am->amestimateparallelscan = NULL;
	am->aminitparallelscan = NULL;
	am->amparallelrescan = NULL;

	PG_RETURN_POINTER(am);
}
