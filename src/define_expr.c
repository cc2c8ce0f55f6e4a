/*-------------------------------------------------------------------------
 * define_expr.c
 *	  A flow's expressions (sequence_by, apply_as_deletes,
 *	  apply_as_truncates): analyzed over the source row with the creator's
 *	  search_path, and kept deparsed with every name qualified.
 *-------------------------------------------------------------------------
 */
#include "define.h"
#include "collation.h"
#include "expr_pin.h"
#include "source_query.h"
#include "source_read.h"

#include "access/htup_details.h"
#include "access/relation.h"
#include "catalog/dependency.h"
#include "catalog/namespace.h"
#include "catalog/objectaddress.h"
#include "catalog/pg_attribute.h"
#include "catalog/pg_class.h"
#include "catalog/pg_collation.h"
#include "catalog/pg_index.h"
#include "catalog/pg_type.h"
#include "commands/event_trigger.h"
#include "commands/extension.h"
#include "commands/trigger.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/optimizer.h"
#include "parser/analyze.h"
#include "parser/parse_coerce.h"
#include "parser/parser.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/regproc.h"
#include "utils/rel.h"
#include "utils/ruleutils.h"
#include "utils/syscache.h"
#include "utils/typcache.h"

typedef struct ExprContextArg
{
	const char *what;
	const char *expr;
	const char *sql;
} ExprContextArg;

/*
 * Errors in a user expression point into the query autocdc built around
 * it, not into the caller's statement.
 */
static void
expr_error_context(void *arg)
{
	ExprContextArg *a = arg;
	int			pos = geterrposition();

	if (pos > 0)
	{
		errposition(0);
		internalerrposition(pos);
		internalerrquery(a->sql);
	}
	errcontext("while checking %s \"%s\" of the flow", a->what, a->expr);
}

/*
 * The expression of "SELECT (expr) FROM (query) AS __autocdc_src",
 * deparsed: ruleutils deparses a whole query only, so the text of the same
 * query selecting NULL::integer instead tells where the expression ends.
 */
static char *
deparse_over_query(Query *q)
{
	Query	   *ref = copyObject(q);
	TargetEntry *tle = linitial(q->targetList);
	TargetEntry *rtle = linitial(ref->targetList);
	const char *null_text = "NULL::integer";
	char	   *full,
			   *refs,
			   *mark;
	size_t		prefix,
				tail;

	tle->resname = rtle->resname = "__autocdc_expr";
	rtle->expr = (Expr *) makeNullConst(INT4OID, -1, InvalidOid);
	full = pg_get_querydef(q, false);
	refs = pg_get_querydef(ref, false);
	mark = strstr(refs, null_text);
	if (mark == NULL)
		elog(ERROR, "autocdc: could not deparse an expression over a source query");
	prefix = mark - refs;
	tail = strlen(mark + strlen(null_text));
	if (strlen(full) < prefix + tail || strncmp(full, refs, prefix) != 0 ||
		strcmp(full + strlen(full) - tail, mark + strlen(null_text)) != 0)
		elog(ERROR, "autocdc: could not deparse an expression over a source query");
	return pnstrdup(full + prefix, strlen(full) - prefix - tail);
}

/*
 * Analyzes a user expression over the source row under the caller's
 * search_path, and returns it deparsed with search_path pinned to
 * pg_catalog, so every function and type outside pg_catalog is written with
 * its schema: names are resolved once, at creation.
 */
static char *
analyze_expr(FlowSpec *spec, const char *expr, const char *what, Node **node)
{
	StringInfoData sql;
	List	   *raw;
	Query	   *q;
	TargetEntry *tle;
	RangeTblEntry *rte;
	ErrorContextCallback errcb;
	ExprContextArg ctxarg;
	int			nest;
	char	   *result;
	char	   *from = spec->source_query ?
		acdc_sq_from(spec->source, spec->source_query, NULL, InvalidOid, NULL, NULL) : NULL;

	initStringInfo(&sql);
	if (from)
		appendStringInfo(&sql, "SELECT (%s) FROM %s AS %s", expr, from, SRC_ALIAS);
	else
		appendStringInfo(&sql, "SELECT (%s) FROM %s", expr,
						 acdc_rel_qualified_name(spec->source));

	ctxarg.what = what;
	ctxarg.expr = expr;
	ctxarg.sql = sql.data;
	errcb.callback = expr_error_context;
	errcb.arg = &ctxarg;
	errcb.previous = error_context_stack;
	error_context_stack = &errcb;

	raw = raw_parser(sql.data, RAW_PARSE_DEFAULT);
	if (list_length(raw) != 1)
		ereport(ERROR,
				(errcode(ERRCODE_SYNTAX_ERROR),
				 errmsg("%s must be a single expression", what)));
	q = parse_analyze_fixedparams(linitial(raw), sql.data, NULL, 0, NULL);
	if (q->commandType != CMD_SELECT || q->utilityStmt ||
		list_length(q->targetList) != 1 || list_length(q->rtable) != 1 ||
		list_length(q->jointree->fromlist) != 1 || q->jointree->quals ||
		q->hasAggs || q->hasWindowFuncs || q->hasSubLinks ||
		q->hasTargetSRFs || q->groupClause || q->havingQual ||
		q->sortClause || q->limitCount || q->limitOffset ||
		q->setOperations || q->cteList || q->distinctClause)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s must be an expression over one source row", what),
				 errdetail("Aggregates, window functions, subqueries and set-returning functions are not allowed.")));
	rte = linitial(q->rtable);
	if (from ? rte->rtekind != RTE_SUBQUERY :
		(rte->rtekind != RTE_RELATION || rte->relid != spec->source))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s must be an expression over one source row", what)));
	tle = linitial(q->targetList);
	*node = (Node *) tle->expr;

	nest = NewGUCNestLevel();
	(void) set_config_option("search_path", "pg_catalog", PGC_USERSET,
							 PGC_S_SESSION, GUC_ACTION_SAVE, true, 0, false);
	result = from ? deparse_over_query(q) :
		deparse_expression((Node *) tle->expr,
						   deparse_context_for(get_rel_name(spec->source),
											   spec->source),
						   false, false);
	AtEOXact_GUC(true, nest);
	acdc_check_kept_expression(spec->source, from, (Node *) tle->expr, result, what);

	error_context_stack = errcb.previous;
	return result;
}

void
acdc_define_require_sortable(Oid typid, const char *what)
{
	TypeCacheEntry *tc = lookup_type_cache(typid, TYPECACHE_LT_OPR | TYPECACHE_GT_OPR);

	if (!OidIsValid(tc->lt_opr) || !OidIsValid(tc->gt_opr))
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("%s must be of a sortable type, not %s", what,
						format_type_be(typid)),
				 errhint("Use a column or expression whose type has a default btree ordering, or ROW(a, b) to order by several.")));
}

static char *
analyze_bool(FlowSpec *spec, const char *expr, const char *what)
{
	Node	   *node;
	char	   *norm;

	if (expr == NULL)
		return NULL;
	norm = analyze_expr(spec, expr, what, &node);
	if (exprType(node) != BOOLOID)
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("%s must be a boolean expression, not type %s", what,
						format_type_be(exprType(node))),
				 errhint("Write a condition such as: operation = 'DELETE'.")));
	return norm;
}

/* One of a bitemporal flow's sequences: a sortable type of its own, not a ROW(...). */
static char *
analyze_bt_part(FlowSpec *spec, const char *expr, const char *what)
{
	Node	   *node;
	char	   *norm = analyze_expr(spec, expr, what, &node);
	Oid			typid = exprType(node);

	if (typid == RECORDOID)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("%s of a bitemporal flow cannot be a ROW(...) expression", what),
				 errhint("Use a column or expression of one type with a default btree ordering.")));
	acdc_define_require_sortable(typid, what);
	spec->seq_row_types = lappend_oid(spec->seq_row_types, typid);
	spec->seq_row_typmods = lappend_int(spec->seq_row_typmods, exprTypmod(node));
	spec->seq_row_colls = lappend_oid(spec->seq_row_colls, acdc_expr_collation(node, what));
	return norm;
}

/*
 * A bitemporal flow's events are sequenced by ROW(business, system): the
 * fold orders them so, and the event store is keyed by it (its composite
 * type is made as for a ROW(...) sequence_by).
 */
static void
analyze_bitemporal(FlowSpec *spec)
{
	spec->biz_norm = analyze_bt_part(spec, spec->sequence_by, "sequence_by");
	spec->sys_norm = analyze_bt_part(spec, spec->system_sequence_by, "system_sequence_by");
	spec->seq_norm = psprintf("ROW(%s, %s)", spec->biz_norm, spec->sys_norm);
	spec->seq_type = RECORDOID;
	spec->seq_coll = InvalidOid;
}

void
acdc_define_analyze_expressions(FlowSpec *spec)
{
	Node	   *node;

	if (spec->scd_type == ACDC_BITEMPORAL)
	{
		analyze_bitemporal(spec);
		spec->deletes_norm = analyze_bool(spec, spec->deletes, "apply_as_deletes");
		return;
	}
	spec->seq_norm = analyze_expr(spec, spec->sequence_by, "sequence_by", &node);
	spec->seq_type = exprType(node);
	spec->seq_coll = acdc_expr_collation(node, "sequence_by");
	if (spec->seq_type == RECORDOID)
	{
		ListCell   *lc;

		if (!IsA(node, RowExpr))
			ereport(ERROR,
					(errcode(ERRCODE_DATATYPE_MISMATCH),
					 errmsg("sequence_by of an anonymous record type must be a ROW(...) expression")));
		foreach(lc, ((RowExpr *) node)->args)
		{
			acdc_define_require_sortable(exprType(lfirst(lc)), "every field of sequence_by");
			spec->seq_row_types = lappend_oid(spec->seq_row_types, exprType(lfirst(lc)));
			spec->seq_row_typmods = lappend_int(spec->seq_row_typmods, exprTypmod(lfirst(lc)));
			spec->seq_row_colls = lappend_oid(spec->seq_row_colls,
											  acdc_expr_collation(lfirst(lc), "a field of sequence_by"));
		}
	}
	else
		acdc_define_require_sortable(spec->seq_type, "sequence_by");

	spec->deletes_norm = analyze_bool(spec, spec->deletes, "apply_as_deletes");
	spec->truncates_norm = analyze_bool(spec, spec->truncates, "apply_as_truncates");
}


/*
 * An expectation's condition: a boolean expression over one source row
 * that gives the same result whenever the row is read again (stable is
 * allowed, volatile is not); aggregates, window functions, subqueries and
 * set-returning functions are refused by analyze_expr.  Returns its kept form.
 */
char *
acdc_define_analyze_condition(FlowSpec *spec, const char *expr, const char *what)
{
	Node	   *node;
	char	   *norm = analyze_expr(spec, expr, what, &node);

	if (exprType(node) != BOOLOID)
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("%s must be a boolean expression, not type %s", what,
						format_type_be(exprType(node))),
				 errhint("Write a condition such as: amount >= 0.")));
	if (contain_volatile_functions(node))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s must not call volatile functions", what),
				 errdetail("A row read again must meet or fail it again."),
				 errhint("Use immutable or stable functions only.")));
	return norm;
}
