/*-------------------------------------------------------------------------
 * validate.c
 *	  Bad input (doc/design.md §2.11): the checks every fold runs on a
 *	  run's events before applying any, and the error that names flow, key
 *	  and sequence.  Also the SQL helpers the folds share.
 *-------------------------------------------------------------------------
 */
#include "validate.h"

#include "executor/spi.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"

Oid
acdc_target_type(FlowDef *f, const char *col)
{
	return get_atttype(f->target, get_attnum(f->target, col));
}

/* "a.k1 = b.k1 AND ...", with each key type's own equality operator. */
void
acdc_append_keys_match(StringInfo sql, FlowDef *f, const char *a, const char *b)
{
	ListCell   *lc;
	bool		first = true;

	foreach(lc, f->keys)
	{
		const char *k = quote_identifier(lfirst(lc));

		if (!first)
			appendStringInfoString(sql, " AND ");
		acdc_append_seq_cmp(sql, psprintf("%s.%s", a, k), "=",
					   psprintf("%s.%s", b, k), acdc_target_type(f, lfirst(lc)));
		first = false;
	}
}

/* "a <op> b" on two values of the flow's sequence type. */
void
acdc_append_flow_seq_cmp(StringInfo sql, FlowDef *f, const char *a, const char *op,
					const char *b)
{
	acdc_append_seq_cmp(sql, a, op, b, f->seq_type);
}

/* "a.k1, a.k2" */
char *
acdc_validate_prefixed_keys(FlowDef *f, const char *a)
{
	StringInfoData buf;

	initStringInfo(&buf);
	acdc_append_column_list(&buf, f->keys, a);
	return buf.data;
}

/* An upsert whose columns_to_update lists a name the flow has no column of. */
void
acdc_validate_raise_unknown_column(FlowDef *f, const char *key, const char *seq, const char *name)
{
	StringInfoData keys;

	initStringInfo(&keys);
	acdc_append_column_list(&keys, f->keys, NULL);
	ereport(ERROR,
			(errcode(ERRCODE_UNDEFINED_COLUMN),
			 errmsg("flow \"%s\": event for key (%s)=(%s) at sequence %s lists unknown column \"%s\" in %s",
					f->name, keys.data, key, seq, name, quote_identifier(f->columns_to_update)),
			 errdetail("columns_to_update lists the columns an event sets, by their exact names: the keys and the columns the flow writes."),
			 errhint("Fix the list in the source row; nothing of this flow was applied in this run.")));
}

/* The error for a bad event: problem, its key as text ("a, b") and sequence. */
void
acdc_validate_raise(FlowDef *f, const char *problem, const char *key, const char *seq)
{
	StringInfoData keys;

	initStringInfo(&keys);
	acdc_append_column_list(&keys, f->keys, NULL);
	if (strcmp(problem, "null_sequence") == 0)
		ereport(ERROR,
				(errcode(ERRCODE_NOT_NULL_VIOLATION),
				 errmsg("flow \"%s\": event for key (%s)=(%s) has a NULL sequence",
						f->name, keys.data, key),
				 f->scd_type == ACDC_BITEMPORAL ?
				 errdetail("A bitemporal flow's events need both sequence_by and system_sequence_by.") :
				 errdetail("sequence_by is %s.", f->sequence_by),
				 errhint("Every change row needs a sequence; nothing of this flow was applied in this run.")));
	if (strcmp(problem, "null_key") == 0)
		ereport(ERROR,
				(errcode(ERRCODE_NOT_NULL_VIOLATION),
				 errmsg("flow \"%s\": event at sequence %s has a NULL key (%s)=(%s)",
						f->name, seq, keys.data, key),
				 errhint("Upserts and deletes need a key; nothing of this flow was applied in this run.")));
	/* SCD 1 compares a replayed upsert with the row it made (scd1_fold.c) */
	if (strcmp(problem, "conflict_target") == 0)
		ereport(ERROR,
				(errcode(ERRCODE_UNIQUE_VIOLATION),
				 errmsg("flow \"%s\": two different events for key (%s)=(%s) at sequence %s",
						f->name, keys.data, key, seq),
				 errdetail("A row read in this run differs from the target's row for the key, which an earlier run made from an upsert at that sequence: either the two events differ, or the row was changed by hand."),
				 errhint("Give every change of a key its own sequence, e.g. sequence_by => 'ROW(ts, id)'; if the row was changed by hand, rebuild the target with SELECT * FROM autocdc.run(%s, full_refresh => true). Nothing of this flow was applied in this run.",
						 quote_literal_cstr(f->pipeline))));
	ereport(ERROR,
			(errcode(ERRCODE_UNIQUE_VIOLATION),
			 errmsg("flow \"%s\": two different events for key (%s)=(%s) at sequence %s",
					f->name, keys.data, key, seq),
			 errdetail(strcmp(problem, "conflict") == 0
					   ? "The rows read in this run disagree."
					   : "A row read in this run disagrees with the event an earlier run applied."),
			 f->scd_type == ACDC_BITEMPORAL ?
			 errhint("A bitemporal flow's sequence is (sequence_by, system_sequence_by): give a correction a later system sequence; nothing of this flow was applied in this run.") :
			 errhint("Give every change of a key its own sequence, e.g. sequence_by => 'ROW(ts, id)'; nothing of this flow was applied in this run.")));
}


