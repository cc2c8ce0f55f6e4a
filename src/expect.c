/*-------------------------------------------------------------------------
 * expect.c
 *	  Expectations at run time: loaded with their flows, checked to resolve
 *	  as at creation, evaluated by the read statement (one boolean column
 *	  per expectation, "(cond) IS NOT FALSE": a NULL result passes, as in a
 *	  CHECK), counted per row read, and recorded after a successful run.
 *-------------------------------------------------------------------------
 */
#include "catalog.h"
#include "expect.h"
#include "expr_pin.h"
#include "source_read.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/json.h"

static const char *const action_names[] = {"warn", "drop", "fail"};

static ExpectAction
action_of(const char *name)
{
	for (int i = 0; i < lengthof(action_names); i++)
		if (strcmp(name, action_names[i]) == 0)
			return (ExpectAction) i;
	elog(ERROR, "autocdc: unknown expectation action \"%s\"", name);
	return EXPECT_WARN;			/* keep compiler quiet */
}

/* The expectations of the flows loaded, by name, into each FlowDef. */
void
acdc_expect_load(List *flows)
{
	List	   *names = NIL;
	ListCell   *lc;
	Oid			argtypes[1] = {TEXTARRAYOID};
	Datum		values[1];

	foreach(lc, flows)
		names = lappend(names, ((FlowDef *) lfirst(lc))->name);
	if (names == NIL)
		return;
	values[0] = acdc_list_to_text_array(names);
	acdc_catalog_exec("SELECT flow, name, condition, action, expression_objects "
					  "  FROM autocdc.expectation WHERE flow OPERATOR(pg_catalog.=) ANY ($1) "
					  " ORDER BY flow, name COLLATE pg_catalog.\"C\"",
					  1, argtypes, values, NULL);
	for (uint64 i = 0; i < SPI_processed; i++)
	{
		char	   *flow = acdc_spi_value(i, 1);
		Expectation *e = palloc0(sizeof(Expectation));
		bool		isnull;

		e->name = acdc_spi_value(i, 2);
		e->condition = acdc_spi_value(i, 3);
		e->action = action_of(acdc_spi_value(i, 4));
		e->objects = acdc_text_array_to_list(SPI_getbinval(SPI_tuptable->vals[i],
														   SPI_tuptable->tupdesc, 5, &isnull));
		foreach(lc, flows)
		{
			FlowDef    *f = lfirst(lc);

			if (strcmp(f->name, flow) == 0)
				f->expectations = lappend(f->expectations, e);
		}
	}
}

static char *
part_name(Expectation *e)
{
	return psprintf("expectation \"%s\"", e->name);
}

/*
 * Refuses the flow when a condition now resolves to other objects than at
 * creation (as acdc_verify_flow_expressions does for sequence_by), and
 * starts the run's counts.
 */
void
acdc_expect_verify(FlowDef *f)
{
	ListCell   *lc;

	f->rows_dropped = 0;
	foreach(lc, f->expectations)
	{
		Expectation *e = lfirst(lc);

		acdc_verify_condition(f, part_name(e), e->condition, e->objects);
		e->passed = e->failed = 0;
	}
}

/* Whether the read statement carries the source row (EXPECT_ROW_COLUMN). */
bool
acdc_expect_has_row(FlowDef *f)
{
	ListCell   *lc;

	if (f->quarantine_bad)
		return true;
	foreach(lc, f->expectations)
		if (((Expectation *) lfirst(lc))->action == EXPECT_DROP)
			return true;
	return false;
}

/*
 * Appends the extra columns of the read statement: the source row as jsonb
 * (without autocdc's stamp) when a row may be quarantined — every row's
 * with on_bad_event => 'quarantine', else only a dropped row's — then one
 * boolean per expectation, in name order.
 */
void
acdc_expect_append_columns(StringInfo sql, FlowDef *f)
{
	const char *row = "(pg_catalog.to_jsonb(" SRC_ALIAS ") OPERATOR(pg_catalog.-) '"
		AUTOCDC_XID_COLUMN "'::pg_catalog.text)";
	ListCell   *lc;
	int			i = 0;

	if (f->quarantine_bad)
		appendStringInfo(sql, ", %s AS " EXPECT_ROW_COLUMN, row);
	else if (acdc_expect_has_row(f))
	{
		bool		first = true;

		appendStringInfoString(sql, ", CASE WHEN ");
		foreach(lc, f->expectations)
		{
			Expectation *e = lfirst(lc);

			if (e->action != EXPECT_DROP)
				continue;
			appendStringInfo(sql, "%s(%s) IS NOT FALSE", first ? "" : " AND ", e->condition);
			first = false;
		}
		appendStringInfo(sql, " THEN NULL ELSE %s END AS " EXPECT_ROW_COLUMN, row);
	}
	foreach(lc, f->expectations)
		appendStringInfo(sql, ", (%s) IS NOT FALSE AS __autocdc_x%d",
						 ((Expectation *) lfirst(lc))->condition, i++);
}

ExpectVerdict
acdc_expect_check(FlowDef *f, TupleTableSlot *slot, int xatt, Expectation **failed)
{
	ExpectVerdict verdict = EXPECT_KEEP;
	ListCell   *lc;
	int			i = xatt;

	*failed = NULL;
	foreach(lc, f->expectations)
	{
		Expectation *e = lfirst(lc);

		if (DatumGetBool(slot->tts_values[i++]))
		{
			e->passed++;
			continue;
		}
		e->failed++;
		if (e->action == EXPECT_FAIL && *failed == NULL)
		{
			*failed = e;
			verdict = EXPECT_FAILED;
		}
		else if (e->action == EXPECT_DROP && verdict == EXPECT_KEEP)
			verdict = EXPECT_DROPPED;
	}
	if (verdict == EXPECT_DROPPED)
		f->rows_dropped++;
	return verdict;
}

/* The names of the expectations the row failed, as text[]. */
Datum
acdc_expect_failed_names(FlowDef *f, TupleTableSlot *slot, int xatt)
{
	List	   *names = NIL;
	ListCell   *lc;
	int			i = xatt;

	foreach(lc, f->expectations)
		if (!DatumGetBool(slot->tts_values[i++]))
			names = lappend(names, ((Expectation *) lfirst(lc))->name);
	return acdc_list_to_text_array(names);
}

/* A fail expectation's error; row names the row ("key (k)=(1) at sequence 2"). */
void
acdc_expect_raise(FlowDef *f, Expectation *e, const char *row)
{
	ereport(ERROR,
			(errcode(ERRCODE_CHECK_VIOLATION),
			 errmsg("flow \"%s\": %s fails expectation \"%s\"", f->name, row, e->name),
			 errdetail("The expectation is: %s.", e->condition),
			 errhint("No run has read the row yet: correct or delete it in the source, or change the expectation with autocdc.drop_expectation and autocdc.add_expectation. Nothing of this flow was applied in this run.")));
}

/* {"name": {"passed": n, "failed": n}, ...}, or NULL without expectations. */
char *
acdc_expect_counts_json(FlowDef *f)
{
	StringInfoData buf;
	ListCell   *lc;

	if (f->expectations == NIL)
		return NULL;
	initStringInfo(&buf);
	appendStringInfoChar(&buf, '{');
	foreach(lc, f->expectations)
	{
		Expectation *e = lfirst(lc);

		if (buf.len > 1)
			appendStringInfoString(&buf, ", ");
		escape_json(&buf, e->name);
		appendStringInfo(&buf, ": {\"passed\": " INT64_FORMAT ", \"failed\": " INT64_FORMAT "}",
						 e->passed, e->failed);
	}
	appendStringInfoChar(&buf, '}');
	return buf.data;
}

/* The run's counts into the catalog: last run (that read rows) and running totals. */
void
acdc_expect_record_run(FlowDef *f)
{
	Oid			argtypes[2] = {TEXTOID, TEXTOID};
	Datum		values[2];
	ListCell   *lc;
	bool		checked = false;

	/* a run that read nothing leaves the last counts alone (idle pipelines) */
	foreach(lc, f->expectations)
	{
		Expectation *e = lfirst(lc);

		checked = checked || e->passed > 0 || e->failed > 0;
	}
	if (!checked)
		return;
	values[0] = CStringGetTextDatum(f->name);
	values[1] = CStringGetTextDatum(acdc_expect_counts_json(f));
	acdc_catalog_exec("UPDATE autocdc.expectation e SET last_run_at = pg_catalog.now(), "
					  "  last_passed = (c.value OPERATOR(pg_catalog.->>) 'passed')::pg_catalog.int8, "
					  "  last_failed = (c.value OPERATOR(pg_catalog.->>) 'failed')::pg_catalog.int8, "
					  "  passed_total = e.passed_total OPERATOR(pg_catalog.+) (c.value OPERATOR(pg_catalog.->>) 'passed')::pg_catalog.int8, "
					  "  failed_total = e.failed_total OPERATOR(pg_catalog.+) (c.value OPERATOR(pg_catalog.->>) 'failed')::pg_catalog.int8 "
					  "  FROM pg_catalog.jsonb_each($2::pg_catalog.jsonb) c "
					  " WHERE e.flow OPERATOR(pg_catalog.=) $1 AND e.name OPERATOR(pg_catalog.=) c.key",
					  2, argtypes, values, NULL);
}
