/*-------------------------------------------------------------------------
 * record_cmp.c
 *	  A sort comparator for a composite sequence or key (a ROW(...)
 *	  sequence, a bitemporal flow's (business, system) pair) that orders as
 *	  btrecordcmp does, field by field, without its cost per call: the
 *	  record's descriptor is looked up once, each field compares through
 *	  its own sort support, and a short-header value (as a sorted or hashed
 *	  event row holds it) is read from an aligned scratch copy instead of
 *	  a palloc'd one.
 *
 * Any value it does not expect (another row type, a compressed or
 * external value) goes to the comparator it replaces.
 *-------------------------------------------------------------------------
 */
#include "record_cmp.h"

#include "access/htup_details.h"
#include "access/tupdesc.h"
#include "catalog/pg_type.h"
#include "utils/lsyscache.h"
#include "utils/typcache.h"

typedef struct RecCmp
{
	SortSupportData orig;		/* btrecordcmp's, for what this one does not expect */
	MemoryContext cxt;
	Oid			typid;
	int32		typmod;
	TupleDesc	desc;
	SortSupportData *fields;
	Datum	   *values[2];
	bool	   *nulls[2];
	char	   *scratch[2];		/* aligned copies of short-header values */
	Size		scratch_len[2];
} RecCmp;

/* The record header of a, or NULL if it is not one this comparator reads. */
static HeapTupleHeader
rec_header(RecCmp *rc, Datum a, int side)
{
	struct varlena *v = (struct varlena *) DatumGetPointer(a);
	HeapTupleHeader h;

	/* an external pointer has a short header too: test it first */
	if (VARATT_IS_EXTERNAL(v) || VARATT_IS_COMPRESSED(v))
		return NULL;
	if (VARATT_IS_SHORT(v))
	{
		Size		len = VARSIZE_SHORT(v) - VARHDRSZ_SHORT;

		if (rc->scratch_len[side] < len + VARHDRSZ)
		{
			Size		want = Max(len + VARHDRSZ, 64);

			rc->scratch[side] = rc->scratch[side] ?
				repalloc(rc->scratch[side], want) :
				MemoryContextAlloc(rc->cxt, want);
			rc->scratch_len[side] = want;
		}
		SET_VARSIZE(rc->scratch[side], len + VARHDRSZ);
		memcpy(VARDATA(rc->scratch[side]), VARDATA_SHORT(v), len);
		h = (HeapTupleHeader) rc->scratch[side];
	}
	else
		h = (HeapTupleHeader) v;
	if (HeapTupleHeaderGetTypeId(h) != rc->typid ||
		HeapTupleHeaderGetTypMod(h) != rc->typmod)
		return NULL;
	return h;
}

static void
rec_deform(RecCmp *rc, HeapTupleHeader h, int side)
{
	HeapTupleData tup;

	tup.t_len = HeapTupleHeaderGetDatumLength(h);
	ItemPointerSetInvalid(&tup.t_self);
	tup.t_tableOid = InvalidOid;
	tup.t_data = h;
	heap_deform_tuple(&tup, rc->desc, rc->values[side], rc->nulls[side]);
}

static int
rec_cmp(Datum a, Datum b, SortSupport ssup)
{
	RecCmp	   *rc = (RecCmp *) ssup->ssup_extra;
	HeapTupleHeader ha = rec_header(rc, a, 0);
	HeapTupleHeader hb = ha ? rec_header(rc, b, 1) : NULL;

	if (hb == NULL)
		return rc->orig.comparator(a, b, &rc->orig);
	rec_deform(rc, ha, 0);
	rec_deform(rc, hb, 1);
	for (int i = 0; i < rc->desc->natts; i++)
	{
		bool		na = rc->nulls[0][i];
		bool		nb = rc->nulls[1][i];
		int			c;

		/* NULL after everything else, as btrecordcmp has it */
		if (na || nb)
		{
			if (na && nb)
				continue;
			return na ? 1 : -1;
		}
		c = ApplySortComparator(rc->values[0][i], false, rc->values[1][i], false,
								&rc->fields[i]);
		if (c != 0)
			return c;
	}
	return 0;
}

/*
 * ssup, prepared for composite type typid, compares through rec_cmp when
 * every field of the type orders by its type's default btree operator
 * class; else it is left as it is.
 */
void
acdc_record_sortsupport(SortSupport ssup, Oid typid)
{
	TupleDesc	desc;
	RecCmp	   *rc;
	MemoryContext old;

	typid = getBaseType(typid);
	if (ssup->ssup_reverse || ssup->abbreviate || typid == RECORDOID)
		return;
	old = MemoryContextSwitchTo(ssup->ssup_cxt);
	desc = lookup_rowtype_tupdesc_copy(typid, -1);
	for (int i = 0; i < desc->natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, i);

		/* btrecordcmp pairs live columns past dropped ones: leave that to it */
		if (att->attisdropped ||
			!OidIsValid(lookup_type_cache(att->atttypid, TYPECACHE_LT_OPR)->lt_opr))
		{
			MemoryContextSwitchTo(old);
			return;
		}
	}
	rc = palloc0(sizeof(RecCmp));
	rc->orig = *ssup;
	rc->cxt = ssup->ssup_cxt;
	rc->typid = typid;
	rc->typmod = -1;
	rc->desc = desc;
	rc->fields = palloc0(sizeof(SortSupportData) * Max(desc->natts, 1));
	for (int s = 0; s < 2; s++)
	{
		rc->values[s] = palloc(sizeof(Datum) * Max(desc->natts, 1));
		rc->nulls[s] = palloc(sizeof(bool) * Max(desc->natts, 1));
	}
	for (int i = 0; i < desc->natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, i);

		rc->fields[i].ssup_cxt = ssup->ssup_cxt;
		rc->fields[i].ssup_collation = att->attcollation;
		PrepareSortSupportFromOrderingOp(lookup_type_cache(att->atttypid, TYPECACHE_LT_OPR)->lt_opr,
										 &rc->fields[i]);
	}
	MemoryContextSwitchTo(old);
	ssup->ssup_extra = rc;
	ssup->comparator = rec_cmp;
}
