/*-------------------------------------------------------------------------
 * scd1_fold.c
 *	  The SCD type 1 fold (doc/design.md §2.3 to §2.5, state §3.1): a run's events in key order
 *	  (events.c) folded key by key with what earlier runs applied, the
 *	  changes written set-based (scd1_write.c).
 *
 * Per key the state table keeps the sequence of the last upsert and of the
 * last delete, and for each partial-update ("tracked") column the sequence
 * of the event that set its value; a truncate is a delete of every key at
 * its sequence, kept once per target as its mark.  With that, a batch of
 * events in any order gives exactly the fold of all events read so far:
 *
 *   live    = last upsert > last delete and >= last truncate
 *   columns = from the last upsert; a tracked column from the last event
 *             that set it, unless a delete or truncate came after that.
 *
 * The keys' state and target rows are read in one statement, in the order
 * of the keys' numbers, and each row read folds its key's events as they
 * come out of the sort: memory holds one key at a time.  A bad event
 * raises the error that names it before anything is written.
 *-------------------------------------------------------------------------
 */
#include "scd1.h"
#include "events.h"
#include "progress.h"
#include "scd1_write.h"
#include "target_scan.h"
#include "validate.h"

#include "access/htup_details.h"
#include "access/relation.h"
#include "access/xact.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/datum.h"
#include "utils/lsyscache.h"
#include "portability/instr_time.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"
#include "utils/typcache.h"

/* How this flow sets a tracked column. */
typedef enum Setter
{
	SET_NEVER,					/* not among its columns */
	SET_ALWAYS,					/* by every upsert */
	SET_NOT_NULL,				/* by upserts where it is not NULL (ignore_null) */
	SET_LISTED					/* by upserts that list it (columns_to_update) */
} Setter;

/* Attributes of the rows the state statement returns (0-based). */
#define ST_ID		0
#define ST_UPS		1
#define ST_DEL		2
#define ST_DEAD_AT	3
#define ST_SUPS		4			/* the upsert sequence the state row holds */
#define ST_ROW		5			/* ctid, tableoid */
#define ST_TRACKED	7			/* a sequence per tracked column */

typedef struct Scd1Fold
{
	DestReceiver pub;			/* receives the keys' state and target rows */
	FlowDef    *f;
	Events	   *ev;
	Scd1Writes	w;
	FlowCounts *counts;
	int			nplain;
	int			ntracked;
	int			nwritten;		/* written columns: plain, then tracked */
	int		   *evatt;			/* per written column: its event attribute, or -1 */
	Setter	   *setter;			/* per written column */
	bool		has_not_null;	/* a column set by some upserts only */
	FmgrInfo   *eq;				/* per written column: its "=", fn_oid 0 if none */
	Oid		   *coll;
	Oid		   *types;
	int16	   *typlen;
	bool	   *typbyval;
	int			att_row;		/* the target row's ctid, tableoid, written columns */
	bool		seq_in_target;	/* then its __autocdc_sequence too (wcols) */
	bool		latest_only;	/* a new key's latest upsert and delete are its fold */
	bool		has_mark;		/* the target's truncate mark before this run */
	Datum		mark;
	bool		has_nt;			/* the mark after this batch */
	Datum		nt;
	int16		seqlen;
	bool		seqbyval;
	Datum		now;
	uint32		nfolded;		/* keys folded so far */
	bool	   *folded;			/* by key number, when the keys come in any order */
	HeapTuple  *trows;			/* by key number, its target row, when read by a scan */
	AttrNumber *tatts;			/* ... and the target's attributes of w.wcols */
	TupleDesc	tdesc;			/* ... the target's */
	TupleTableSlot *row;		/* ... where the statement's row and that one meet */
	MemoryContext keycxt;		/* reset per key */
	TupleTableSlot *winner;		/* the key's latest upsert */
	TupleTableSlot *latest;		/* the key's latest delete */
	bool	   *has_lps;		/* per written column: latest non-NULL setting */
	Datum	   *lps;
	Datum	   *lpv;
	bool	   *lpn;
	Datum	   *wvals;			/* the key's row after the fold */
	bool	   *wnulls;
	Datum	   *svals;			/* the key's state after the fold */
	bool	   *snulls;
} Scd1Fold;

static inline int
seq_cmp(Scd1Fold *F, Datum a, Datum b)
{
	return events_seq_cmp(F->ev, a, b);
}

/* The later of two sequences either of which may be absent; false if both are. */
static inline bool
later_seq(Scd1Fold *F, bool has_x, Datum x, bool has_y, Datum y, Datum *later)
{
	if (!has_x && !has_y)
		return false;
	*later = !has_y || (has_x && seq_cmp(F, x, y) >= 0) ? x : y;
	return true;
}

/* Both absent, or both there and equal. */
static inline bool
same_seq(Scd1Fold *F, bool has_x, Datum x, bool has_y, Datum y)
{
	return has_x == has_y && (!has_x || seq_cmp(F, x, y) == 0);
}

/* Whether what sequence x set survives the key's last delete and the mark. */
static inline bool
survives(Scd1Fold *F, bool has_x, Datum x, bool has_del, Datum del)
{
	return has_x && (!has_del || seq_cmp(F, x, del) > 0) &&
		(!F->has_nt || seq_cmp(F, x, F->nt) >= 0);
}

/* Written column j of the event equals the target row's, as SQL's "=" sees it. */
static bool
equals_target(Scd1Fold *F, int j, Datum ev, bool evnull, Datum t, bool tnull)
{
	if (evnull || tnull)
		return evnull && tnull;
	if (OidIsValid(F->eq[j].fn_oid))
		return DatumGetBool(FunctionCall2Coll(&F->eq[j], F->coll[j], t, ev));
	return strcmp(acdc_value_text(t, false, F->types[j]), acdc_value_text(ev, false, F->types[j])) == 0;
}

/*
 * An event at the sequence of what an earlier run applied for its key
 * must be that event again: an upsert at the applied delete's sequence, or
 * a delete at the applied upsert's, is another; an upsert at the applied
 * upsert's must carry the values its row got.
 */
/* False when the event was set aside (on_bad_event => 'quarantine'). */
static bool
check_applied(Scd1Fold *F, TupleTableSlot *e, char kind, TupleTableSlot *st)
{
	Datum		seq = e->tts_values[F->ev->seq_att];
	Datum	   *t = &st->tts_values[F->att_row + BATCH_ROW_ID_ATTS];
	bool	   *tnull = &st->tts_isnull[F->att_row + BATCH_ROW_ID_ATTS];

	if (kind == 'u' && !st->tts_isnull[ST_DEL] && seq_cmp(F, seq, st->tts_values[ST_DEL]) == 0)
		return acdc_events_set_aside(F->ev, "conflict_applied", e, 'd');
	if (kind == 'd' && !st->tts_isnull[ST_UPS] && seq_cmp(F, seq, st->tts_values[ST_UPS]) == 0)
		return acdc_events_set_aside(F->ev, "conflict_applied", e, 'u');
	if (kind != 'u' || st->tts_isnull[ST_UPS] || seq_cmp(F, seq, st->tts_values[ST_UPS]) != 0 ||
		st->tts_isnull[F->att_row])
		return true;
	slot_getallattrs(e);
	for (int j = 0; j < F->nwritten; j++)
	{
		int			a = F->evatt[j];

		if (a < 0 || (F->setter[j] == SET_NOT_NULL && e->tts_isnull[a]) ||
			(F->setter[j] == SET_LISTED && !events_sets(F->ev, e, F->evatt[j] - F->ev->first_col)))
			continue;
		if (!equals_target(F, j, e->tts_values[a], e->tts_isnull[a], t[j], tnull[j]))
			return acdc_events_set_aside(F->ev, "conflict_target", e, 'u');
	}
	return true;
}

/* Whether the event is late or replayed: at or below what was applied. */
static bool
is_skipped(Scd1Fold *F, Datum seq, TupleTableSlot *st)
{
	return (!st->tts_isnull[ST_UPS] && seq_cmp(F, seq, st->tts_values[ST_UPS]) <= 0) ||
		(!st->tts_isnull[ST_DEL] && seq_cmp(F, seq, st->tts_values[ST_DEL]) <= 0) ||
		(F->has_mark && seq_cmp(F, seq, F->mark) < 0);
}

/* Reads the key's events in sequence order: its latest upsert, delete and settings. */
static void
read_key_events(Scd1Fold *F, uint32 id, TupleTableSlot *st, bool *has_bd, Datum *bd)
{
	Events	   *ev = F->ev;
	bool		known = !st->tts_isnull[ST_ROW] || !st->tts_isnull[F->att_row];

	*has_bd = false;
	if (!known && F->latest_only && acdc_events_key_latest(ev, id, F->winner, F->latest))
	{
		if (!TTS_EMPTY(F->winner))
			slot_getallattrs(F->winner);
		if (!TTS_EMPTY(F->latest))
		{
			slot_getallattrs(F->latest);
			*bd = F->latest->tts_values[ev->seq_att];
			*has_bd = true;
		}
		return;
	}
	ExecClearTuple(F->winner);
	ExecClearTuple(F->latest);
	memset(F->has_lps, 0, sizeof(bool) * F->nwritten);
	for (uint32 n = 0; n < ev->nevents[id]; n++)
	{
		TupleTableSlot *e = acdc_events_next(ev);
		Datum		seq;
		char		kind;

		if (e == NULL)
			elog(ERROR, "autocdc: flow \"%s\" ran out of events", F->f->name);
		seq = e->tts_values[ev->seq_att];
		kind = acdc_events_kind(ev, e);
		if (known && !check_applied(F, e, kind, st))
		{
			/* set aside: it only spells the key, when no other event does */
			if (TTS_EMPTY(F->latest))
				acdc_events_keep(ev, F->latest, e);
			continue;
		}
		if (is_skipped(F, seq, st))
			F->counts->skipped++;
		if (kind == 'u')
		{
			acdc_events_keep(ev, F->winner, e);
			if (F->has_not_null)
				slot_getallattrs(e);
			for (int j = F->nplain; j < F->nwritten; j++)
			{
				int			a = F->evatt[j];

				if (F->setter[j] == SET_NOT_NULL ? e->tts_isnull[a] :
					F->setter[j] != SET_LISTED || !events_sets(ev, e, a - ev->first_col))
					continue;
				/* in sequence order: the last that sets it wins */
				F->has_lps[j] = true;
				F->lps[j] = datumCopy(seq, F->seqbyval, F->seqlen);
				F->lpn[j] = e->tts_isnull[a];
				F->lpv[j] = F->lpn[j] ? (Datum) 0 :
					datumCopy(e->tts_values[a], TupleDescAttr(ev->desc, a)->attbyval,
							  TupleDescAttr(ev->desc, a)->attlen);
			}
		}
		else
		{
			acdc_events_keep(ev, F->latest, e);
			*bd = datumCopy(seq, F->seqbyval, F->seqlen);
			*has_bd = true;
		}
	}
	if (!TTS_EMPTY(F->winner))
		slot_getallattrs(F->winner);
	if (!TTS_EMPTY(F->latest))
		slot_getallattrs(F->latest);
}

/* Whether the key's state after the fold holds a tracked column's sequence. */
static bool
tracks_any(Scd1Fold *F)
{
	for (int k = 0; k < F->ntracked; k++)
		if (!F->snulls[SCD1_STATE_FIXED + k])
			return true;
	return false;
}

static void
get_row_id(TupleTableSlot *slot, int att, BatchRowId *id)
{
	id->tid = *(ItemPointer) DatumGetPointer(slot->tts_values[att]);
	id->rel = DatumGetObjectId(slot->tts_values[att + 1]);
}

/* Whether the values to write differ from the target row's (in binary). */
static bool
row_changed(Scd1Fold *F, Datum *t, bool *tnull)
{
	for (int j = 0; j < list_length(F->w.wcols); j++)
	{
		if (F->wnulls[j] || tnull[j])
		{
			if (F->wnulls[j] != tnull[j])
				return true;
			continue;
		}
		if (j == F->nwritten ?
			!datum_image_eq(F->wvals[j], t[j], F->seqbyval, F->seqlen) :
			!datum_image_eq(F->wvals[j], t[j], F->typbyval[j], F->typlen[j]))
			return true;
	}
	return false;
}

/*
 * Folds key id: its state and target row "st" (a row of the state
 * statement) with its events, and writes what changed.
 */
static void
fold_key(Scd1Fold *F, uint32 id, TupleTableSlot *st)
{
	Datum	   *S = st->tts_values;
	bool	   *SN = st->tts_isnull;
	Datum	   *t = &S[F->att_row + BATCH_ROW_ID_ATTS];
	bool	   *tnull = &SN[F->att_row + BATCH_ROW_ID_ATTS];
	bool		has_state = !SN[ST_ROW];
	bool		has_row = !SN[F->att_row];
	bool		has_bu,
				has_bd,
				has_ups,
				has_sups,
				has_del,
				u_wins,
				live,
				same_del,
				changed;
	Datum		bu = (Datum) 0,
				bd = (Datum) 0,
				n_ups = (Datum) 0,
				n_del = (Datum) 0;
	Datum	   *keys;
	BatchRowId	row;

	read_key_events(F, id, st, &has_bd, &bd);
	has_bu = !TTS_EMPTY(F->winner);
	if (has_bu)
		bu = F->winner->tts_values[F->ev->seq_att];
	/* the key as its latest upsert spells it, else its latest delete (numeric 1.0 = 1.00) */
	keys = has_bu ? F->winner->tts_values : F->latest->tts_values;

	has_ups = later_seq(F, has_bu, bu, !SN[ST_UPS], S[ST_UPS], &n_ups);
	has_del = later_seq(F, has_bd, bd, !SN[ST_DEL], S[ST_DEL], &n_del);
	u_wins = has_bu && (SN[ST_UPS] || seq_cmp(F, bu, S[ST_UPS]) > 0);
	live = survives(F, has_ups, n_ups, has_del, n_del);

	for (int j = 0; j < F->nplain; j++)
	{
		F->wvals[j] = u_wins ? F->winner->tts_values[F->evatt[j]] : t[j];
		F->wnulls[j] = u_wins ? F->winner->tts_isnull[F->evatt[j]] : tnull[j];
	}
	changed = false;
	for (int j = F->nplain; j < F->nwritten; j++)
	{
		int			k = j - F->nplain;
		bool		has_old = !SN[ST_TRACKED + k];
		Datum		old = S[ST_TRACKED + k];
		bool		has_ss = false,
					has_ps,
					svnull = false;
		Datum		ss = (Datum) 0,
					sv = (Datum) 0,
					ps = (Datum) 0,
					pv = t[j];
		bool		pvnull = tnull[j];

		if (F->setter[j] == SET_ALWAYS && has_bu)
		{
			has_ss = true;
			ss = bu;
			sv = F->winner->tts_values[F->evatt[j]];
			svnull = F->winner->tts_isnull[F->evatt[j]];
		}
		else if (F->setter[j] != SET_ALWAYS && F->has_lps[j])
		{
			has_ss = true;
			ss = F->lps[j];
			sv = F->lpv[j];
			svnull = F->lpn[j];
		}
		has_ps = later_seq(F, has_ss, ss, has_old, old, &ps);
		if (has_ss && (!has_old || seq_cmp(F, ss, old) > 0))
		{
			pv = sv;
			pvnull = svnull;
		}
		/* the column's value and its sequence, unless a delete or truncate came after */
		if (survives(F, has_ps, ps, has_del, n_del))
		{
			F->svals[SCD1_STATE_FIXED + k] = ps;
			F->snulls[SCD1_STATE_FIXED + k] = false;
			F->wvals[j] = pv;
			F->wnulls[j] = pvnull;
		}
		else
		{
			F->snulls[SCD1_STATE_FIXED + k] = true;
			F->wnulls[j] = true;
		}
		if (!same_seq(F, !F->snulls[SCD1_STATE_FIXED + k], F->svals[SCD1_STATE_FIXED + k], has_old, old))
			changed = true;
	}

	if (F->seq_in_target)
	{
		F->wvals[F->nwritten] = n_ups;
		F->wnulls[F->nwritten] = !has_ups;
	}

	/* the target row */
	if (has_row)
		get_row_id(st, F->att_row, &row);
	if (has_row && !live)
		acdc_scd1_write_delete(&F->w, &row, keys);
	else if (has_row && live && row_changed(F, t, tnull))
		acdc_scd1_write_update(&F->w, &row, keys, F->wvals, F->wnulls);
	else if (!has_row && live && u_wins)
		acdc_scd1_write_insert(&F->w, id, keys, F->wvals, F->wnulls);

	/*
	 * The state, where it changed; a key stays dead since the same delete.
	 * A target keeping the sequence holds a live key's upsert, which is all
	 * a live key needs unless it has tracked columns: then their setters,
	 * and the last delete, which a late partial update must not cross.
	 */
	same_del = same_seq(F, has_del, n_del, !SN[ST_DEL], S[ST_DEL]);
	has_sups = has_ups && !(F->seq_in_target && live);
	if (F->seq_in_target && live && (F->ntracked == 0 || (!has_del && !tracks_any(F))))
	{
		if (has_state)
		{
			get_row_id(st, ST_ROW, &row);
			acdc_scd1_drop_state(&F->w, &row);
		}
	}
	else if (!has_state || live == !SN[ST_DEAD_AT] || !same_del || changed ||
			 !same_seq(F, has_sups, n_ups, !SN[ST_SUPS], S[ST_SUPS]))
	{
		F->svals[0] = n_ups;
		F->snulls[0] = !has_sups;
		F->svals[1] = n_del;
		F->snulls[1] = !has_del;
		F->svals[2] = live ? (Datum) 0 : !SN[ST_DEAD_AT] && same_del ? S[ST_DEAD_AT] : F->now;
		F->snulls[2] = live;
		if (has_state)
			get_row_id(st, ST_ROW, &row);
		acdc_scd1_write_state(&F->w, has_state ? &row : NULL, id, keys, F->svals, F->snulls);
	}
}

/*
 * The state statement's row of key id (without the target's columns) and
 * the key's target row read by the scan, as the statement with the join
 * would return them.
 */
static TupleTableSlot *
with_target_row(Scd1Fold *F, uint32 id, TupleTableSlot *st)
{
	TupleTableSlot *r = F->row;
	HeapTuple	t = F->trows[id];
	int			nw = list_length(F->w.wcols);

	ExecClearTuple(r);
	memcpy(r->tts_values, st->tts_values, sizeof(Datum) * F->att_row);
	memcpy(r->tts_isnull, st->tts_isnull, sizeof(bool) * F->att_row);
	r->tts_isnull[F->att_row] = r->tts_isnull[F->att_row + 1] = (t == NULL);
	if (t != NULL)
	{
		r->tts_values[F->att_row] = PointerGetDatum(&t->t_self);
		r->tts_values[F->att_row + 1] = ObjectIdGetDatum(F->f->target);
	}
	for (int j = 0; j < nw; j++)
	{
		int			a = F->att_row + BATCH_ROW_ID_ATTS + j;

		r->tts_isnull[a] = true;
		if (t != NULL)
			r->tts_values[a] = heap_getattr(t, F->tatts[j], F->tdesc, &r->tts_isnull[a]);
	}
	/* COALESCE(st.__autocdc_upsert_seq, t.__autocdc_sequence) */
	if (F->seq_in_target && r->tts_isnull[ST_UPS])
	{
		r->tts_values[ST_UPS] = r->tts_values[F->att_row + BATCH_ROW_ID_ATTS + F->nwritten];
		r->tts_isnull[ST_UPS] = r->tts_isnull[F->att_row + BATCH_ROW_ID_ATTS + F->nwritten];
	}
	return ExecStoreVirtualTuple(r);
}

static bool
scd1_receive(TupleTableSlot *slot, DestReceiver *self)
{
	Scd1Fold   *F = (Scd1Fold *) self;
	MemoryContext old;
	uint32		id;

	slot_getallattrs(slot);
	id = (uint32) DatumGetInt32(slot->tts_values[ST_ID]);
	if (F->folded ? id >= F->ev->nkeysets || F->folded[id] : id != F->nfolded)
		elog(ERROR, "autocdc: flow \"%s\": key %u read out of order", F->f->name, id);
	if (F->folded)
	{
		F->folded[id] = true;
		acdc_events_seek(F->ev, id);
	}
	F->nfolded++;
	old = MemoryContextSwitchTo(F->keycxt);
	if (F->trows)
		slot = with_target_row(F, id, slot);
	fold_key(F, id, slot);
	MemoryContextSwitchTo(old);
	MemoryContextReset(F->keycxt);
	return true;
}

static void
scd1_startup(DestReceiver *self, int operation, TupleDesc typeinfo)
{
}

static void
scd1_noop(DestReceiver *self)
{
}

/*
 * Each key's state and target row; in the order of the keys' numbers when
 * the fold cannot find a key's events by its number (sorted events).
 */
static char *
state_statement(Scd1Fold *F)
{
	FlowDef    *f = F->f;
	StringInfoData sql;
	ListCell   *lc;

	initStringInfo(&sql);
	/* the applied upsert: a tombstone's, else the live row's (or, from 0.1.0, the state's) */
	appendStringInfo(&sql, "SELECT k.__autocdc_id, %s, st.__autocdc_delete_seq, "
					 "st.__autocdc_deleted_at, st.__autocdc_upsert_seq, st.ctid, st.tableoid",
					 F->seq_in_target && !F->trows ?
					 "COALESCE(st.__autocdc_upsert_seq, t." ACDC_SEQUENCE_COLUMN ")"
					 : "st.__autocdc_upsert_seq");
	for_each_from(lc, F->w.written, F->nplain)
		appendStringInfo(&sql, ", st.%s", quote_identifier(lfirst(lc)));
	if (!F->trows)
	{
		appendStringInfoString(&sql, ", t.ctid, t.tableoid");
		foreach(lc, F->w.wcols)
			appendStringInfo(&sql, ", t.%s", quote_identifier(lfirst(lc)));
	}
	appendStringInfo(&sql, " FROM %s k LEFT JOIN %s st ON ", EVENTS_KEYS_RELATION,
					 acdc_rel_qualified_name(f->state));
	acdc_append_keys_match(&sql, f, "k", "st");
	if (!F->trows)
	{
		appendStringInfo(&sql, " LEFT JOIN %s t ON ", acdc_rel_qualified_name(f->target));
		acdc_append_keys_match(&sql, f, "k", "t");
	}
	/* sorting the rows cost 5% of a run where the events can be found by key */
	if (F->folded == NULL)
		appendStringInfoString(&sql, " ORDER BY k.__autocdc_id");
	return sql.data;
}

static void
fold_setup(Scd1Fold *F, FlowDef *f, Events *ev, FlowCounts *counts, ReadParams *p)
{
	List	   *plain = NIL;
	List	   *written;
	ListCell   *lc;
	int			nw;

	memset(F, 0, sizeof(*F));
	F->pub.receiveSlot = scd1_receive;
	F->pub.rStartup = scd1_startup;
	F->pub.rShutdown = scd1_noop;
	F->pub.rDestroy = scd1_noop;
	F->pub.mydest = DestNone;
	F->f = f;
	F->ev = ev;
	F->counts = counts;
	F->seq_in_target = f->seq_in_target;
	foreach(lc, f->columns)
		if (!acdc_list_has_string(f->state_partial, lfirst(lc)))
			plain = lappend(plain, lfirst(lc));
	F->nplain = list_length(plain);
	F->ntracked = list_length(f->state_partial);
	written = list_concat(plain, f->state_partial);
	nw = F->nwritten = list_length(written);
	acdc_scd1_writes_begin(&F->w, f, ev, written, F->ntracked);
	F->att_row = ST_TRACKED + F->ntracked;

	F->evatt = palloc(sizeof(int) * Max(nw, 1));
	F->setter = palloc(sizeof(Setter) * Max(nw, 1));
	F->eq = palloc0(sizeof(FmgrInfo) * Max(nw, 1));
	F->coll = palloc(sizeof(Oid) * Max(nw, 1));
	F->types = palloc(sizeof(Oid) * Max(nw, 1));
	F->typlen = palloc(sizeof(int16) * Max(nw, 1));
	F->typbyval = palloc(sizeof(bool) * Max(nw, 1));
	foreach(lc, written)
	{
		int			j = foreach_current_index(lc);
		int			k = acdc_list_index_of_string(f->columns, lfirst(lc));
		AttrNumber	att = get_attnum(f->target, lfirst(lc));
		TypeCacheEntry *tc;
		int32		typmod;

		F->evatt[j] = k < 0 ? -1 : ev->first_col + k;
		F->setter[j] = k < 0 ? SET_NEVER :
			f->columns_to_update ? SET_LISTED :
			acdc_list_has_string(f->ignore_null, lfirst(lc)) ? SET_NOT_NULL : SET_ALWAYS;
		if (F->setter[j] == SET_NOT_NULL || F->setter[j] == SET_LISTED)
			F->has_not_null = true;
		get_atttypetypmodcoll(f->target, att, &F->types[j], &typmod, &F->coll[j]);
		get_typlenbyval(F->types[j], &F->typlen[j], &F->typbyval[j]);
		tc = lookup_type_cache(F->types[j], TYPECACHE_EQ_OPR_FINFO);
		if (OidIsValid(tc->eq_opr))
			fmgr_info_copy(&F->eq[j], &tc->eq_opr_finfo, CurrentMemoryContext);
	}
	F->has_lps = palloc0(sizeof(bool) * Max(nw, 1));
	F->lps = palloc(sizeof(Datum) * Max(nw, 1));
	F->lpv = palloc(sizeof(Datum) * Max(nw, 1));
	F->lpn = palloc(sizeof(bool) * Max(nw, 1));
	F->wvals = palloc(sizeof(Datum) * (nw + 1));
	F->wnulls = palloc(sizeof(bool) * (nw + 1));
	F->svals = palloc0(sizeof(Datum) * (SCD1_STATE_FIXED + F->ntracked));
	F->snulls = palloc0(sizeof(bool) * (SCD1_STATE_FIXED + F->ntracked));
	get_typlenbyval(TupleDescAttr(ev->desc, ev->seq_att)->atttypid, &F->seqlen, &F->seqbyval);
	F->now = TimestampTzGetDatum(GetCurrentTransactionStartTimestamp());
	F->keycxt = AllocSetContextCreate(CurrentMemoryContext, "autocdc key", ALLOCSET_SMALL_SIZES);
	F->winner = MakeSingleTupleTableSlot(ev->desc, &TTSOpsMinimalTuple);
	F->latest = MakeSingleTupleTableSlot(ev->desc, &TTSOpsMinimalTuple);
	/* grouped in memory, a key's events are found by its number */
	if (ev->hash != NULL)
		F->folded = palloc_extended(sizeof(bool) * Max(ev->nkeysets, 1),
									 MCXT_ALLOC_HUGE | MCXT_ALLOC_ZERO);

	/* the mark before the run, then after this batch's truncates */
	if (p->truncate_seq != NULL)
	{
		Oid			in,
					ioparam;

		getTypeInputInfo(f->seq_type, &in, &ioparam);
		F->mark = OidInputFunctionCall(in, p->truncate_seq, ioparam, -1);
		F->has_mark = true;
	}
	F->has_nt = later_seq(F, ev->has_truncate, ev->truncate_seq, F->has_mark, F->mark, &F->nt);

	/*
	 * A key no earlier run applied has nothing to check its events against,
	 * and none is skipped without a mark; with no column set by some upserts
	 * only, its latest upsert and delete are all its fold reads.
	 */
	F->latest_only = F->ntracked == 0 && !F->has_not_null && !F->has_mark;
}

/*
 * Reads the target rows of the batch's keys by a scan (target_scan.c)
 * where that is cheaper than the state statement's join; then the
 * statement reads the state alone.  Returns the rows found, or -1.
 */
static int64
scan_target(Scd1Fold *F)
{
	FlowDef    *f = F->f;
	int			nw = list_length(F->w.wcols);
	int			natts = F->att_row + BATCH_ROW_ID_ATTS + nw;
	TupleDesc	desc;
	Relation	rel;
	uint64		nfound;
	ListCell   *lc;

	if (F->folded == NULL || !acdc_target_scan_applies(F->ev, f->target, f->keys, F->w.wcols))
		return -1;
	F->trows = acdc_target_scan(F->ev, f->target, f->keys, &nfound);
	if (F->trows == NULL)
		return -1;
	rel = relation_open(f->target, AccessShareLock);
	/* with its constraints: a column added later has its missing value there */
	F->tdesc = CreateTupleDescCopyConstr(RelationGetDescr(rel));
	relation_close(rel, NoLock);
	F->tatts = palloc(sizeof(AttrNumber) * Max(nw, 1));
	foreach(lc, F->w.wcols)
		F->tatts[foreach_current_index(lc)] = get_attnum(f->target, lfirst(lc));

	/* the shape of the state statement's rows with the join */
	desc = CreateTemplateTupleDesc(natts);
	for (int a = 1; a <= natts; a++)
	{
		Oid			type = f->seq_type;

		if (a == ST_ID + 1)
			type = INT4OID;
		else if (a == ST_DEAD_AT + 1)
			type = TIMESTAMPTZOID;
		else if (a == ST_ROW + 1 || a == F->att_row + 1)
			type = TIDOID;
		else if (a == ST_ROW + 2 || a == F->att_row + 2)
			type = OIDOID;
		else if (a > F->att_row + BATCH_ROW_ID_ATTS)
			type = TupleDescAttr(F->tdesc, F->tatts[a - F->att_row - BATCH_ROW_ID_ATTS - 1] - 1)->atttypid;
		TupleDescInitEntry(desc, a, NULL, type, -1, 0);
	}
	F->row = MakeSingleTupleTableSlot(desc, &TTSOpsVirtual);
	return (int64) nfound;
}

/*
 * Applies the flow's new events to its SCD 1 target.  Runs as the flow's
 * owner; the caller provides the transaction boundaries.  Returns the
 * target's truncate mark after the run (NULL if there is none).
 */
char *
acdc_scd1_apply(FlowDef *f, ReadParams *p, FlowCounts *counts)
{
	StringInfoData events;
	Events	   *ev;
	Scd1Fold	F;
	SPIExecuteOptions opts;
	char	   *new_t = p->truncate_seq;
	bool		truncated;
	int			rc;
	MemoryContext old;
	instr_time	t0,
				t1,
				t2;
	int64		scanned;

	/* reading the events checks that the flow's columns still exist */
	initStringInfo(&events);
	acdc_read_append_events(&events, f, p);
	ev = acdc_events_read(f, p, events.data, true);
	/* what the fold allocates goes with the events, also when an error ends the flow */
	old = MemoryContextSwitchTo(ev->cxt);
	fold_setup(&F, f, ev, counts, p);
	counts->read = ev->nread;
	counts->skipped = 0;
	truncated = ev->has_truncate && (!F.has_mark || seq_cmp(&F, ev->truncate_seq, F.mark) > 0);

	memset(&opts, 0, sizeof(opts));
	opts.read_only = false;
	opts.dest = (DestReceiver *) &F;
	INSTR_TIME_SET_CURRENT(t0);
	acdc_progress_phase(ACDC_PHASE_FOLDING);
	scanned = scan_target(&F);
	rc = SPI_execute_extended(state_statement(&F), &opts);
	if (rc < 0)
		elog(ERROR, "autocdc: SPI failed (%s) reading the state of flow \"%s\"",
			 SPI_result_code_string(rc), f->name);
	if (F.nfolded != ev->nkeysets || (F.folded == NULL && acdc_events_next(ev) != NULL))
		elog(ERROR, "autocdc: flow \"%s\" folded %u of %u keys", f->name, F.nfolded, ev->nkeysets);
	INSTR_TIME_SET_CURRENT(t1);
	acdc_progress_phase(ACDC_PHASE_WRITING);
	acdc_scd1_writes_finish(&F.w, counts);
	acdc_progress_add_rows(counts->upserted + counts->deleted);
	INSTR_TIME_SET_CURRENT(t2);
	INSTR_TIME_SUBTRACT(t2, t1);
	INSTR_TIME_SUBTRACT(t1, t0);
	elog(DEBUG1, "autocdc: flow \"%s\": folded with state and target in %.1f ms%s, written in %.1f ms",
		 f->name, INSTR_TIME_GET_MILLISEC(t1),
		 scanned < 0 ? "" : psprintf(" (%lld target rows of its keys read by a scan)", (long long) scanned),
		 INSTR_TIME_GET_MILLISEC(t2));
	MemoryContextSwitchTo(old);
	if (truncated)
		new_t = acdc_value_canonical(F.nt, f->seq_type);
	acdc_events_end(ev);

	if (truncated)
	{
		int64		deleted = acdc_scd1_write_truncate(f, new_t);

		counts->deleted += deleted;
		acdc_progress_add_rows(deleted);
	}
	acdc_progress_phase(ACDC_PHASE_PURGING);
	acdc_scd1_purge_tombstones(f);
	return new_t;
}
