/*-------------------------------------------------------------------------
 * expect_define.c
 *	  Expectations as a flow is created (expect, expect_or_drop,
 *	  expect_or_fail: maps of name to condition), and changed later
 *	  (autocdc.add_expectation, autocdc.drop_expectation).  Conditions are
 *	  resolved like sequence_by (define_expr.c) and what they resolve to is
 *	  kept with them (expr_pin.c); runs evaluate them as the target's owner.
 *-------------------------------------------------------------------------
 */
#include "catalog.h"
#include "define.h"
#include "expr_pin.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/jsonb.h"
#include "utils/lsyscache.h"

PG_FUNCTION_INFO_V1(autocdc_add_expectation);
PG_FUNCTION_INFO_V1(autocdc_drop_expectation);

static const char *const arg_names[] = {"expect", "expect_or_drop", "expect_or_fail"};
static const char *const action_names[] = {"warn", "drop", "fail"};

static Expectation *
find(List *exps, const char *name)
{
	ListCell   *lc;

	foreach(lc, exps)
		if (strcmp(((Expectation *) lfirst(lc))->name, name) == 0)
			return lfirst(lc);
	return NULL;
}

static void
require_name(const char *name)
{
	if (name[0] == '\0')
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("expectation names must not be empty")));
}

static Expectation *
new_expectation(const char *name, const char *condition, ExpectAction action)
{
	Expectation *e = palloc0(sizeof(Expectation));

	require_name(name);
	e->name = pstrdup(name);
	e->condition = pstrdup(condition);
	e->action = action;
	return e;
}

/* One map argument: {"name": "condition", ...}. */
static List *
map_arg(List *exps, Jsonb *jb, const char *arg, ExpectAction action)
{
	JsonbIterator *it;
	JsonbValue	v;
	JsonbIteratorToken tok;
	char	   *name = NULL;

	if (!JB_ROOT_IS_OBJECT(jb))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s must be a JSON object of expectation names and conditions", arg),
				 errhint("Write it like: %s => '{\"valid_id\": \"id IS NOT NULL\"}'.", arg)));
	it = JsonbIteratorInit(&jb->root);
	while ((tok = JsonbIteratorNext(&it, &v, true)) != WJB_DONE)
	{
		if (tok == WJB_KEY)
			name = pnstrdup(v.val.string.val, v.val.string.len);
		else if (tok == WJB_VALUE)
		{
			if (v.type != jbvString)
				ereport(ERROR,
						(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						 errmsg("condition of expectation \"%s\" in %s must be a string", name, arg)));
			if (find(exps, name))
				ereport(ERROR,
						(errcode(ERRCODE_DUPLICATE_OBJECT),
						 errmsg("expectation \"%s\" is given twice", name),
						 errhint("Give each expectation of a flow its own name.")));
			exps = lappend(exps, new_expectation(name, pnstrdup(v.val.string.val, v.val.string.len),
												 action));
		}
	}
	return exps;
}

static int
by_name(const ListCell *a, const ListCell *b)
{
	return strcmp(((Expectation *) lfirst(a))->name, ((Expectation *) lfirst(b))->name);
}

/* The three map arguments from argument `first` on, as Expectations by name. */
List *
acdc_expect_args(FunctionCallInfo fcinfo, int first)
{
	List	   *exps = NIL;

	for (int i = 0; i < 3; i++)
		if (!PG_ARGISNULL(first + i))
			exps = map_arg(exps, PG_GETARG_JSONB_P(first + i), arg_names[i], (ExpectAction) i);
	list_sort(exps, by_name);
	return exps;
}

/* on_bad_event: 'fail' (NULL too) or 'quarantine'; true for quarantine. */
bool
acdc_define_on_bad_event_arg(FunctionCallInfo fcinfo, int n)
{
	char	   *v = acdc_define_text_arg(fcinfo, n);

	if (v == NULL || strcmp(v, "fail") == 0)
		return false;
	if (strcmp(v, "quarantine") == 0)
		return true;
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("on_bad_event must be 'fail' or 'quarantine', not \"%s\"", v)));
	return false;				/* keep compiler quiet */
}

static char *
part_name(const char *name)
{
	return psprintf("expectation \"%s\"", name);
}

/* Resolves the condition over the flow's source; keeps it and its objects. */
static void
resolve(FlowSpec *spec, Expectation *e)
{
	char	   *what = part_name(e->name);

	e->condition = acdc_define_analyze_condition(spec, e->condition, what);
	e->objects = acdc_condition_objects(GetUserId(), spec->source_query, spec->source,
										 e->condition, what);
}

static void
insert_row(const char *flow, Expectation *e)
{
	Oid			argtypes[5] = {TEXTOID, TEXTOID, TEXTOID, TEXTOID, TEXTARRAYOID};
	Datum		values[5];

	values[0] = CStringGetTextDatum(flow);
	values[1] = CStringGetTextDatum(e->name);
	values[2] = CStringGetTextDatum(e->condition);
	values[3] = CStringGetTextDatum(action_names[e->action]);
	values[4] = acdc_list_to_text_array(e->objects);
	acdc_catalog_exec("INSERT INTO autocdc.expectation (flow, name, condition, action, "
					  "  expression_objects) VALUES ($1, $2, $3, $4, $5)",
					  5, argtypes, values, NULL);
}

/*
 * autocdc.flow.options, the arguments the flow is made with (flow_ddl
 * writes them out), with the expectation added under its action's
 * argument (condition as given) or, with condition NULL, removed.
 */
static void
update_options(const char *flow, const char *name, const char *condition, ExpectAction action)
{
	Oid			argtypes[4] = {TEXTOID, TEXTOID, TEXTOID, TEXTOID};
	Datum		values[4];
	char		nulls[4] = {' ', ' ', ' ', ' '};

	values[0] = CStringGetTextDatum(flow);
	values[1] = CStringGetTextDatum(name);
	values[2] = condition ? CStringGetTextDatum(condition) : (Datum) 0;
	nulls[2] = condition ? ' ' : 'n';
	values[3] = CStringGetTextDatum(arg_names[action]);
	/* each map less the name, a map left empty as null; then the new one */
	acdc_catalog_exec("UPDATE autocdc.flow f SET options = f.options OPERATOR(pg_catalog.||) "
					  "  COALESCE((SELECT pg_catalog.jsonb_object_agg(k, CASE "
					  "      WHEN $3 IS NOT NULL AND k OPERATOR(pg_catalog.=) $4 "
					  "      THEN m.map OPERATOR(pg_catalog.||) pg_catalog.jsonb_build_object($2, $3) "
					  "      WHEN m.map OPERATOR(pg_catalog.-) $2 OPERATOR(pg_catalog.=) '{}'::pg_catalog.jsonb "
					  "      THEN 'null'::pg_catalog.jsonb "
					  "      ELSE m.map OPERATOR(pg_catalog.-) $2 END) "
					  "    FROM pg_catalog.unnest(ARRAY['expect', 'expect_or_drop', 'expect_or_fail']) k, "
					  "         LATERAL (SELECT CASE WHEN pg_catalog.jsonb_typeof(f.options OPERATOR(pg_catalog.->) k) "
					  "                                   OPERATOR(pg_catalog.=) 'object' "
					  "                              THEN f.options OPERATOR(pg_catalog.->) k "
					  "                              ELSE '{}'::pg_catalog.jsonb END) m (map) "
					  "   WHERE m.map OPERATOR(pg_catalog.<>) '{}'::pg_catalog.jsonb "
					  "      OR ($3 IS NOT NULL AND k OPERATOR(pg_catalog.=) $4)), '{}'::pg_catalog.jsonb) "
					  " WHERE f.name OPERATOR(pg_catalog.=) $1",
					  4, argtypes, values, nulls);
}

/* A new flow's expectations and on_bad_event, after its row. */
void
acdc_expect_define(FlowSpec *spec)
{
	ListCell   *lc;

	if (spec->expectations != NIL && spec->kind == FLOW_SNAPSHOT)
		elog(ERROR, "autocdc: a snapshot flow has expectations");
	foreach(lc, spec->expectations)
	{
		Expectation *e = lfirst(lc);

		resolve(spec, e);
		insert_row(spec->name, e);
	}
	if (spec->quarantine_bad)
	{
		Oid			argtypes[1] = {TEXTOID};
		Datum		values[1] = {CStringGetTextDatum(spec->name)};

		acdc_catalog_exec("UPDATE autocdc.flow SET on_bad_event = 'quarantine' "
						  " WHERE name OPERATOR(pg_catalog.=) $1",
						  1, argtypes, values, NULL);
	}
}

/*
 * The flow, locked until the end of the transaction along with its
 * checkpoint (a run going on finishes first: the change applies to the
 * rows read after it); another role's flow is as if it did not exist.
 */
static FlowDef *
lock_flow(const char *name)
{
	Oid			owner = acdc_catalog_lock_flow(name);
	Oid			argtypes[1] = {TEXTOID};
	Datum		values[1] = {CStringGetTextDatum(name)};
	List	   *flows;

	if (!OidIsValid(owner) || !has_privs_of_role(GetUserId(), owner))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("flow \"%s\" does not exist", name),
				 errhint("The view autocdc.flows lists your flows.")));
	acdc_catalog_exec("SELECT 1 FROM autocdc.checkpoint WHERE flow OPERATOR(pg_catalog.=) $1 FOR UPDATE",
					  1, argtypes, values, NULL);
	flows = acdc_catalog_load_flows(NULL, list_make1(pstrdup(name)));
	if (list_length(flows) != 1)
		elog(ERROR, "autocdc: flow \"%s\" vanished", name);
	return linitial(flows);
}

Datum
autocdc_add_expectation(PG_FUNCTION_ARGS)
{
	char	   *flow;
	char	   *action;
	FlowDef    *f;
	FlowSpec	spec;
	Expectation *e;
	char	   *given;
	int			i;

	acdc_catalog_check_version();
	autocdc_refuse_within_flow("autocdc.add_expectation()");
	acdc_define_require_arg(fcinfo, 0, "flow");
	acdc_define_require_arg(fcinfo, 1, "name");
	acdc_define_require_arg(fcinfo, 2, "condition");
	flow = acdc_define_text_arg(fcinfo, 0);
	action = PG_ARGISNULL(3) ? "warn" : acdc_define_text_arg(fcinfo, 3);
	for (i = 0; i < lengthof(action_names); i++)
		if (strcmp(action, action_names[i]) == 0)
			break;
	if (i == lengthof(action_names))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("on_violation must be 'warn', 'drop' or 'fail', not \"%s\"", action)));
	e = new_expectation(acdc_define_text_arg(fcinfo, 1), acdc_define_text_arg(fcinfo, 2),
						(ExpectAction) i);
	given = pstrdup(e->condition);

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	f = lock_flow(flow);
	if (f->kind == FLOW_SNAPSHOT)
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("snapshot flow \"%s\" cannot have expectations", flow),
				 errdetail("A row a snapshot leaves out reads as a deleted key.")));
	/* the condition runs as the target's owner: only that role adds one */
	acdc_define_require_owner(f->target);
	if (find(f->expectations, e->name))
		ereport(ERROR,
				(errcode(ERRCODE_DUPLICATE_OBJECT),
				 errmsg("flow \"%s\" already has expectation \"%s\"", flow, e->name),
				 errhint("Drop it first with SELECT autocdc.drop_expectation(%s, %s);",
						 quote_literal_cstr(flow), quote_literal_cstr(e->name))));
	memset(&spec, 0, sizeof(spec));
	spec.source = f->source;
	spec.source_query = f->source_query;	/* a condition reads the query's result */
	{
		/* parsed as runs parse it, under the flow's pinned settings */
		int			nest = NewGUCNestLevel();

		autocdc_apply_settings(f->settings);
		resolve(&spec, e);
		AtEOXact_GUC(true, nest);
	}
	insert_row(flow, e);
	update_options(flow, e->name, given, e->action);
	SPI_finish();
	PG_RETURN_VOID();
}

Datum
autocdc_drop_expectation(PG_FUNCTION_ARGS)
{
	char	   *flow = text_to_cstring(PG_GETARG_TEXT_PP(0));
	char	   *name = text_to_cstring(PG_GETARG_TEXT_PP(1));
	Oid			argtypes[2] = {TEXTOID, TEXTOID};
	Datum		values[2] = {CStringGetTextDatum(flow), CStringGetTextDatum(name)};
	FlowDef    *f;

	acdc_catalog_check_version();
	autocdc_refuse_within_flow("autocdc.drop_expectation()");
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	f = lock_flow(flow);
	if (find(f->expectations, name) == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("flow \"%s\" has no expectation \"%s\"", flow, name),
				 errhint("The view autocdc.expectations lists them.")));
	acdc_catalog_exec("DELETE FROM autocdc.expectation WHERE flow OPERATOR(pg_catalog.=) $1 "
					  "   AND name OPERATOR(pg_catalog.=) $2",
					  2, argtypes, values, NULL);
	update_options(flow, name, NULL, EXPECT_WARN);
	SPI_finish();
	PG_RETURN_VOID();
}
