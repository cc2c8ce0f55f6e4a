/*-------------------------------------------------------------------------
 * expr_pin.c
 *	  A flow's expressions are kept as qualified text (define_expr.c) and
 *	  parsed again by each run.  Text alone can be redirected: a closer
 *	  overload, an operator, a cast or a type added later where its names
 *	  lead would be what the run evaluates, with the flow owner's rights.
 *	  So the flow also keeps what its expressions resolved to
 *	  (autocdc.flow.expression_objects): each function, operator, cast,
 *	  type and collation, as class and identity text (OIDs do not survive a
 *	  dump or pg_upgrade), and for objects made after initdb their owner.
 *	  Before reading any event, a run analyzes the text again the way its
 *	  query will (same role, search_path, source row) and refuses the flow
 *	  when anything resolves differently.
 *
 *	  Parse analysis only looks names up: nothing is planned or folded
 *	  here, so no function of the expression runs.  It does convert
 *	  literals with their type's input function, as the run's own parse of
 *	  the same text would, as the same role in the same restricted context.
 *-------------------------------------------------------------------------
 */
#include "catalog.h"
#include "expr_pin.h"
#include "source_query.h"
#include "source_read.h"

#include "access/htup_details.h"
#include "access/transam.h"
#include "catalog/objectaddress.h"
#include "catalog/pg_class.h"
#include "catalog/pg_cast.h"
#include "catalog/pg_collation.h"
#include "catalog/pg_operator.h"
#include "catalog/pg_opfamily.h"
#include "catalog/pg_proc.h"
#include "catalog/pg_type.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "nodes/nodeFuncs.h"
#include "parser/analyze.h"
#include "parser/parser.h"
#include "utils/builtins.h"
#include "utils/fmgrprotos.h"
#include "utils/lsyscache.h"
#include "utils/syscache.h"

typedef struct PinContext
{
	const char *what;			/* "sequence_by", ... */
	List	   *objects;		/* "what: class identity [owned by role]" */
	bool		in_query;		/* walking a source query, not an expression */
} PinContext;

static bool pin_query_node(Node *node, PinContext *cxt);

/* The parts of a flow that are resolved by name, in the stored order. */
static const char *const pinned_parts[] = {
	"sequence_by", "apply_as_deletes", "apply_as_truncates", "source_function",
	"source_query", "snapshot_query", "version_query"
};

static Oid
object_owner(Oid classid, Oid objid)
{
	int			cacheid;
	HeapTuple	tup;
	Oid			owner = InvalidOid;

	switch (classid)
	{
		case ProcedureRelationId:
			cacheid = PROCOID;
			break;
		case OperatorRelationId:
			cacheid = OPEROID;
			break;
		case TypeRelationId:
			cacheid = TYPEOID;
			break;
		case CollationRelationId:
			cacheid = COLLOID;
			break;
		case RelationRelationId:
			cacheid = RELOID;
			break;
		default:
			return InvalidOid;	/* casts and operator families: no owner */
	}
	tup = SearchSysCache1(cacheid, ObjectIdGetDatum(objid));
	if (!HeapTupleIsValid(tup))
		return InvalidOid;
	if (classid == ProcedureRelationId)
		owner = ((Form_pg_proc) GETSTRUCT(tup))->proowner;
	else if (classid == OperatorRelationId)
		owner = ((Form_pg_operator) GETSTRUCT(tup))->oprowner;
	else if (classid == TypeRelationId)
		owner = ((Form_pg_type) GETSTRUCT(tup))->typowner;
	else if (classid == RelationRelationId)
		owner = ((Form_pg_class) GETSTRUCT(tup))->relowner;
	else
		owner = ((Form_pg_collation) GETSTRUCT(tup))->collowner;
	ReleaseSysCache(tup);
	return owner;
}

/*
 * Records one object, once.  The owner of an object made after initdb is
 * part of it: whoever owns a schema may drop an object in it and make
 * another of the same name.
 */
static void
add_object(PinContext *cxt, Oid classid, Oid objid)
{
	ObjectAddress addr;
	StringInfoData s;
	Oid			owner;

	if (!OidIsValid(objid))
		return;
	ObjectAddressSet(addr, classid, objid);
	initStringInfo(&s);
	appendStringInfo(&s, "%s: %s %s", cxt->what,
					 getObjectTypeDescription(&addr, false),
					 getObjectIdentity(&addr, false));
	if (objid >= FirstNormalObjectId &&
		OidIsValid(owner = object_owner(classid, objid)))
		appendStringInfo(&s, " owned by %s",
						 quote_identifier(GetUserNameFromId(owner, false)));
	if (!acdc_list_has_string(cxt->objects, s.data))
		cxt->objects = lappend(cxt->objects, s.data);
}

/* The cast a coercion follows, if the catalog has one (casts of base types). */
static void
add_cast(PinContext *cxt, Oid source, Oid target)
{
	HeapTuple	tup;

	tup = SearchSysCache2(CASTSOURCETARGET,
						  ObjectIdGetDatum(getBaseType(source)),
						  ObjectIdGetDatum(getBaseType(target)));
	if (!HeapTupleIsValid(tup))
		return;
	add_object(cxt, CastRelationId, ((Form_pg_cast) GETSTRUCT(tup))->oid);
	ReleaseSysCache(tup);
}

static void
add_operator(PinContext *cxt, Oid opno, Oid opfuncid)
{
	add_object(cxt, OperatorRelationId, opno);
	add_object(cxt, ProcedureRelationId,
			   OidIsValid(opfuncid) ? opfuncid : get_opcode(opno));
}

static void
add_row_compare(PinContext *cxt, RowCompareExpr *rc)
{
	ListCell   *lc;

	foreach(lc, rc->opnos)
		add_operator(cxt, lfirst_oid(lc), InvalidOid);
	foreach(lc, rc->opfamilies)
		add_object(cxt, OperatorFamilyRelationId, lfirst_oid(lc));
	foreach(lc, rc->inputcollids)
		add_object(cxt, CollationRelationId, lfirst_oid(lc));
}

/*
 * Walks an analyzed expression (what catalog/dependency.c's
 * find_expr_references_walker records, for the nodes define_expr.c
 * admits).  A node it does not know is refused: what is not recorded
 * could be redirected unseen.
 */
static bool
pin_walker(Node *node, void *context)
{
	PinContext *cxt = context;

	if (node == NULL)
		return false;
	switch (nodeTag(node))
	{
		case T_List:
		case T_CaseWhen:
			/* no type of their own */
			return expression_tree_walker(node, pin_walker, context);
		case T_FuncExpr:
			{
				FuncExpr   *fe = (FuncExpr *) node;

				add_object(cxt, ProcedureRelationId, fe->funcid);
				if ((fe->funcformat == COERCE_IMPLICIT_CAST ||
					 fe->funcformat == COERCE_EXPLICIT_CAST) && fe->args != NIL)
					add_cast(cxt, exprType(linitial(fe->args)), fe->funcresulttype);
			}
			break;
		case T_OpExpr:
		case T_DistinctExpr:
		case T_NullIfExpr:
			add_operator(cxt, ((OpExpr *) node)->opno, ((OpExpr *) node)->opfuncid);
			break;
		case T_ScalarArrayOpExpr:
			add_operator(cxt, ((ScalarArrayOpExpr *) node)->opno,
						 ((ScalarArrayOpExpr *) node)->opfuncid);
			break;
		case T_RowCompareExpr:
			add_row_compare(cxt, (RowCompareExpr *) node);
			break;
		case T_RelabelType:
			add_cast(cxt, exprType((Node *) ((RelabelType *) node)->arg),
					 ((RelabelType *) node)->resulttype);
			break;
		case T_CoerceViaIO:
			add_cast(cxt, exprType((Node *) ((CoerceViaIO *) node)->arg),
					 ((CoerceViaIO *) node)->resulttype);
			break;
		case T_ArrayCoerceExpr:
			add_cast(cxt, exprType((Node *) ((ArrayCoerceExpr *) node)->arg),
					 ((ArrayCoerceExpr *) node)->resulttype);
			break;
		case T_CollateExpr:
			add_object(cxt, CollationRelationId, ((CollateExpr *) node)->collOid);
			break;
		case T_SubscriptingRef:
			add_object(cxt, TypeRelationId, ((SubscriptingRef *) node)->refcontainertype);
			break;
		/*
		 * These resolve nothing by name beyond their result type and
		 * collations, which are recorded for every node below.
		 */
		case T_Var:
		case T_Const:
		case T_NamedArgExpr:
		case T_BoolExpr:
		case T_FieldSelect:
		case T_FieldStore:
		case T_ConvertRowtypeExpr:
		case T_CaseExpr:
		case T_CaseTestExpr:
		case T_ArrayExpr:
		case T_RowExpr:
		case T_CoalesceExpr:
		case T_MinMaxExpr:
		case T_SQLValueFunction:
		case T_XmlExpr:
		case T_NullTest:
		case T_BooleanTest:
		case T_CoerceToDomain:
		case T_CoerceToDomainValue:
			break;
		default:
			if (cxt->in_query)
				return pin_query_node(node, cxt);
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("%s uses a construct autocdc cannot pin", cxt->what),
					 errdetail("Expressions of flows are checked at each run to resolve to what they resolved to at creation; this one holds a node of type %d.",
							   (int) nodeTag(node))));
	}
	/* Every node's result type and collations: types and collations resolve by name too. */
	add_object(cxt, TypeRelationId, exprType(node));
	add_object(cxt, CollationRelationId, exprCollation(node));
	add_object(cxt, CollationRelationId, exprInputCollation(node));
	return expression_tree_walker(node, pin_walker, context);
}

/* What an analyzed expression resolved to, each entry prefixed by `what`. */
List *
acdc_node_objects(Node *node, const char *what)
{
	PinContext	cxt;

	cxt.what = what;
	cxt.objects = NIL;
	cxt.in_query = false;
	(void) pin_walker(node, &cxt);
	return cxt.objects;
}

/*
 * The nodes of a query that are not expressions of one row: the
 * relations it reads, its joins, sort and group operators, aggregates,
 * window functions and subqueries.  Anything else is refused, as in an
 * expression.
 */
static bool
pin_query_node(Node *node, PinContext *cxt)
{
	switch (nodeTag(node))
	{
		case T_Query:
			/* a join's alias columns list every column of its sides: not what it reads */
			return query_tree_walker((Query *) node, pin_walker, cxt,
									 QTW_EXAMINE_RTES_BEFORE | QTW_EXAMINE_SORTGROUP |
									 QTW_IGNORE_JOINALIASES);
		case T_RangeTblEntry:
			if (((RangeTblEntry *) node)->rtekind == RTE_RELATION)
				add_object(cxt, RelationRelationId, ((RangeTblEntry *) node)->relid);
			return false;		/* query_tree_walker walks what it holds */
		case T_SortGroupClause:
			add_operator(cxt, ((SortGroupClause *) node)->eqop, InvalidOid);
			if (OidIsValid(((SortGroupClause *) node)->sortop))
				add_operator(cxt, ((SortGroupClause *) node)->sortop, InvalidOid);
			return false;
		case T_RangeTblRef:
			return false;
		case T_CommonTableExpr:
			/* autocdc's own: the stream's every column, which may come and go */
			if (strcmp(((CommonTableExpr *) node)->ctename, SQ_STREAM_CTE) == 0 ||
				strcmp(((CommonTableExpr *) node)->ctename, SQ_VERSION_CTE) == 0)
				return false;
			return expression_tree_walker(node, pin_walker, cxt);
		case T_TargetEntry:
		case T_FromExpr:
		case T_JoinExpr:
		case T_SetOperationStmt:
		case T_WindowClause:
		case T_RangeTblFunction:
			return expression_tree_walker(node, pin_walker, cxt);
		case T_Aggref:
			add_object(cxt, ProcedureRelationId, ((Aggref *) node)->aggfnoid);
			break;
		case T_WindowFunc:
			add_object(cxt, ProcedureRelationId, ((WindowFunc *) node)->winfnoid);
			break;
		case T_SubLink:
		case T_GroupingFunc:
		case T_Param:			/* a sublink's test on its subquery's result */
			break;
		default:
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("%s uses a construct autocdc cannot pin", cxt->what),
					 errdetail("The queries of flows are checked at each run to resolve to what they resolved to at creation; this one holds a node of type %d.",
							   (int) nodeTag(node))));
	}
	add_object(cxt, TypeRelationId, exprType(node));
	add_object(cxt, CollationRelationId, exprCollation(node));
	add_object(cxt, CollationRelationId, exprInputCollation(node));
	return expression_tree_walker(node, pin_walker, cxt);
}

/* What an analyzed query resolved to: relations, functions, operators, types. */
List *
acdc_query_objects(Query *query, const char *what)
{
	PinContext	cxt;

	cxt.what = what;
	cxt.objects = NIL;
	cxt.in_query = true;
	(void) pin_query_node((Node *) query, &cxt);
	return cxt.objects;
}

typedef struct PinErrorArg
{
	const char *what;
	const char *sql;
} PinErrorArg;

/* Errors point into the statement analyzed, not the caller's. */
static void
pin_error_context(void *arg)
{
	PinErrorArg *a = arg;
	int			pos = geterrposition();

	if (pos > 0)
	{
		errposition(0);
		internalerrposition(pos);
		internalerrquery(a->sql);
	}
	errcontext("while checking what %s of the flow resolves to", a->what);
}

/*
 * Analyzes a stored expression as the run's query holds it: over the
 * source row under the run's alias.  The shape define_expr.c admitted is
 * checked again, as the text is pasted into that query.
 */
static Node *
analyze_stored(Oid source, const char *from, const char *expr, const char *what)
{
	char	   *sql = psprintf("SELECT (%s) FROM %s AS %s", expr,
							   from ? from : acdc_rel_qualified_name(source), SRC_ALIAS);
	RangeTblEntry *rte;
	ErrorContextCallback errcb;
	PinErrorArg arg = {what, sql};
	List	   *raw;
	Query	   *q = NULL;

	errcb.callback = pin_error_context;
	errcb.arg = &arg;
	errcb.previous = error_context_stack;
	error_context_stack = &errcb;
	raw = raw_parser(sql, RAW_PARSE_DEFAULT);
	if (list_length(raw) == 1)
		q = parse_analyze_fixedparams(linitial(raw), sql, NULL, 0, NULL);
	if (q == NULL || q->commandType != CMD_SELECT || q->utilityStmt ||
		list_length(q->targetList) != 1 || list_length(q->rtable) != 1 ||
		list_length(q->jointree->fromlist) != 1 || q->jointree->quals ||
		q->hasAggs || q->hasWindowFuncs || q->hasSubLinks ||
		q->hasTargetSRFs || q->groupClause || q->havingQual ||
		q->sortClause || q->limitCount || q->limitOffset ||
		q->setOperations || q->cteList || q->distinctClause ||
		(rte = linitial(q->rtable), from ? rte->rtekind != RTE_SUBQUERY : rte->relid != source))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("stored %s is not an expression over one source row", what)));
	error_context_stack = errcb.previous;
	return (Node *) ((TargetEntry *) linitial(q->targetList))->expr;
}

static List *
expression_part(List *objects, Oid source, const char *from, const char *expr,
				const char *what)
{
	if (expr == NULL)
		return objects;
	return list_concat(objects, acdc_node_objects(analyze_stored(source, from, expr, what), what));
}

/*
 * The source function of a snapshot flow, from its stored signature (exact
 * argument types: no overload resolution), as snapshot.c resolves it.
 * Nothing when it is gone: snapshot.c says so.
 */
static List *
source_function_part(List *objects, const char *signature)
{
	LOCAL_FCINFO(fcinfo, 1);
	Datum		fn;
	PinContext	cxt = {"source_function", NIL};

	if (signature == NULL)
		return objects;
	InitFunctionCallInfoData(*fcinfo, NULL, 1, InvalidOid, NULL, NULL);
	fcinfo->args[0].value = CStringGetTextDatum(signature);
	fcinfo->args[0].isnull = false;
	fn = to_regprocedure(fcinfo);
	if (fcinfo->isnull)
		return objects;
	add_object(&cxt, ProcedureRelationId, DatumGetObjectId(fn));
	return list_concat(objects, cxt.objects);
}

/*
 * What a flow's expressions and source function resolve to, analyzed as
 * `owner` with search_path pinned, as a run evaluates them.  The creation
 * of a flow stores this; each run compares it.
 */
List *
acdc_expression_objects(Oid owner, const FlowQueries *queries, Oid source,
						const char *sequence_by, const char *deletes,
						const char *truncates, const char *source_function)
{
	UserSwitch	sw;
	List	   *objects = NIL;
	char	   *from = NULL;

	autocdc_become(&sw, owner, true);
	if (queries && queries->source_query)
	{
		const char *part = OidIsValid(queries->version_type) ? "snapshot_query" : "source_query";

		objects = acdc_sq_objects(source, queries->source_query, queries->version_type, part);
		if (queries->version_query)
			objects = list_concat(objects,
								  acdc_sq_objects(InvalidOid, queries->version_query,
												  queries->version_type, "version_query"));
		from = acdc_sq_from(source, queries->source_query, NULL, queries->version_type,
							NULL, NULL);
	}
	objects = expression_part(objects, source, from, sequence_by, "sequence_by");
	objects = expression_part(objects, source, from, deletes, "apply_as_deletes");
	objects = expression_part(objects, source, from, truncates, "apply_as_truncates");
	objects = source_function_part(objects, source_function);
	autocdc_unbecome(&sw);
	return objects;
}

/* The first entry of a that b lacks, or NULL. */
static char *
first_missing(List *a, List *b)
{
	ListCell   *lc;

	foreach(lc, a)
		if (!acdc_list_has_string(b, lfirst(lc)))
			return lfirst(lc);
	return NULL;
}

/*
 * At creation: the text kept must resolve to what the expression as given
 * resolved to (ruleutils qualifies names and spells implicit casts out, so
 * it does; this makes sure).
 */
void
acdc_check_kept_expression(Oid source, const char *from, Node *analyzed,
						   const char *kept, const char *what)
{
	List	   *given = acdc_node_objects(analyzed, what);
	List	   *stored;
	UserSwitch	sw;
	ListCell   *a,
			   *b;

	autocdc_become(&sw, GetUserId(), true);
	stored = acdc_node_objects(analyze_stored(source, from, kept, what), what);
	autocdc_unbecome(&sw);
	if (list_length(given) == list_length(stored))
	{
		bool		same = true;

		forboth(a, given, b, stored)
			same = same && strcmp(lfirst(a), lfirst(b)) == 0;
		if (same)
			return;
	}
	ereport(ERROR,
			(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
			 errmsg("%s cannot be kept in a form that resolves to the same objects", what),
			 errdetail("With its names qualified it reads %s, which resolves to %s instead of %s.",
					   kept, first_missing(stored, given) ? first_missing(stored, given) : "other objects",
					   first_missing(given, stored) ? first_missing(given, stored) : "the same objects in another arrangement"),
			 errhint("Qualify the names in the expression and write its casts out.")));
}

/* The entries of one part, without their prefix. */
static List *
part_entries(List *objects, const char *part)
{
	List	   *result = NIL;
	size_t		len = strlen(part);
	ListCell   *lc;

	foreach(lc, objects)
	{
		char	   *s = lfirst(lc);

		if (strncmp(s, part, len) == 0 && strncmp(s + len, ": ", 2) == 0)
			result = lappend(result, s + len + 2);
	}
	return result;
}

/*
 * Refuses the flow, naming what the part resolves to now that it did not
 * at creation, and what it resolved to then that it does not now.
 */
static void
refuse_flow(FlowDef *f, const char *part, List *was_list, List *now_list)
{
	char	   *was = first_missing(was_list, now_list);
	char	   *now = first_missing(now_list, was_list);

	ereport(ERROR,
			(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
			 strcmp(part, "source_function") == 0 ?
			 errmsg("source function of flow \"%s\" now resolves to another function", f->name) :
			 strstr(part, "_query") != NULL ?
			 errmsg("%s of flow \"%s\" now resolves to other objects", part, f->name) :
			 errmsg("expression of flow \"%s\" now resolves to other objects", f->name),
			 was && now ?
			 errdetail("When the flow was created, %s resolved to %s; now it resolves to %s instead.",
					   part, was, now) :
			 now ?
			 errdetail("%s now also resolves to %s, which it did not when the flow was created.",
					   part, now) :
			 was ?
			 errdetail("%s no longer resolves to %s, which it did when the flow was created.",
					   part, was) :
			 errdetail("%s resolves to the objects it resolved to when the flow was created, but in another arrangement.",
					   part),
			 errhint("Nothing of the flow was evaluated. Remove what was added or changed; or, if the new objects are meant, drop and re-create the flow: SELECT autocdc.drop_flow(%s);",
					 quote_literal_cstr(f->name))));
}

/* 0.1.0 flows had nothing recorded: their first run records it. */
static void
record_expression_objects(FlowDef *f, List *objects)
{
	if (f->source_function && part_entries(objects, "source_function") == NIL)
		return;					/* gone: snapshot.c refuses the run */
	acdc_catalog_flow_set_expression_objects(f->name, objects);
	f->expression_objects = objects;
	f->expression_objects_unset = false;
}

/*
 * Refuses the flow when its expressions or source function now resolve to
 * anything else than when it was created.  Run before anything of the
 * flow is evaluated.
 */
void
acdc_verify_flow_expressions(FlowDef *f)
{
	FlowQueries queries = {f->source_query, f->version_query,
	f->kind == FLOW_SNAPSHOT ? f->seq_type : InvalidOid};
	List	   *now = acdc_expression_objects(f->run_as, &queries, f->source,
											  f->sequence_by, f->deletes, f->truncates,
											  f->source_function);

	if (f->expression_objects_unset)
	{
		record_expression_objects(f, now);
		return;
	}
	for (int i = 0; i < lengthof(pinned_parts); i++)
	{
		const char *part = pinned_parts[i];
		List	   *was_list = part_entries(f->expression_objects, part);
		List	   *now_list = part_entries(now, part);
		ListCell   *w,
				   *n;

		if (strcmp(part, "source_function") == 0 && now_list == NIL)
			continue;			/* source function gone: snapshot.c says so */
		if (list_length(was_list) != list_length(now_list))
			refuse_flow(f, part, was_list, now_list);
		forboth(w, was_list, n, now_list)
			if (strcmp(lfirst(w), lfirst(n)) != 0)
				refuse_flow(f, part, was_list, now_list);
	}
}

/*
 * What an expectation's condition resolves to, analyzed as `owner` as a
 * run evaluates it; entries are prefixed with `what` (expectation "name").
 */
List *
acdc_condition_objects(Oid owner, const char *source_query, Oid source, const char *cond,
					   const char *what)
{
	UserSwitch	sw;
	List	   *objects;
	char	   *from = NULL;

	autocdc_become(&sw, owner, true);
	/* over a source query, the condition reads its result (as in source_read.c) */
	if (source_query)
		from = acdc_sq_from(source, source_query, NULL, InvalidOid, NULL, NULL);
	objects = expression_part(NIL, source, from, cond, what);
	autocdc_unbecome(&sw);
	return objects;
}

/* Refuses the flow when the condition resolves to other objects than `was`. */
void
acdc_verify_condition(FlowDef *f, const char *what, const char *cond, List *was)
{
	List	   *was_list = part_entries(was, what);
	List	   *now_list = part_entries(acdc_condition_objects(f->run_as, f->source_query,
															   f->source, cond, what),
										what);
	ListCell   *w,
			   *n;

	if (list_length(was_list) != list_length(now_list))
		refuse_flow(f, what, was_list, now_list);
	forboth(w, was_list, n, now_list)
		if (strcmp(lfirst(w), lfirst(n)) != 0)
			refuse_flow(f, what, was_list, now_list);
}
