/*-------------------------------------------------------------------------
 * source_query.c
 *	  Flows over a source query.
 *
 * A source query marks one table STREAM(rel) (or STREAM rel).  The flow's
 * source is that table, prepared and read by transaction as any table
 * source (source_read.c); each run evaluates the query over the table's
 * new rows only.  The query is analyzed once, at creation, under the
 * creator's search_path: the marked relation is resolved to its OID and
 * the query is kept deparsed with search_path pinned to pg_catalog, every
 * name outside pg_catalog qualified, the marked relation written as the
 * name of a WITH query (SQ_STREAM_CTE) that each run defines over the
 * table's new rows:
 *
 *	 (WITH __autocdc_stream AS (SELECT * FROM rel AS __autocdc_src WHERE <new>)
 *	  SELECT * FROM (<kept query>) AS __autocdc_q)
 *
 * What the kept text resolves to is recorded and checked at each run like
 * the flow's expressions (expr_pin.c).  Over the stream a query may
 * project, cast, filter and join other tables read as they are; what
 * would need more than one new row at a time (aggregates, DISTINCT,
 * window functions, LIMIT, set operations) is refused.
 *
 * A query without STREAM is a batch source, read whole at each run: for
 * ONCE flows and snapshots only.  The snapshot and version queries of a
 * snapshot flow see last_snapshot_version() and current_snapshot_version()
 * as values of a second WITH query (SQ_VERSION_CTE) each run defines.
 *-------------------------------------------------------------------------
 */
#include "source_query.h"
#include "expr_pin.h"
#include "source_read.h"

#include <ctype.h>

#include "catalog/namespace.h"
#include "catalog/pg_class.h"
#include "catalog/pg_type.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "parser/analyze.h"
#include "parser/parser.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/ruleutils.h"

typedef struct QueryErrorArg
{
	const char *what;
	const char *sql;
} QueryErrorArg;

/* Errors point into the query, not into the caller's statement. */
static void
query_error_context(void *arg)
{
	QueryErrorArg *a = arg;
	int			pos = geterrposition();

	if (pos > 0)
	{
		errposition(0);
		internalerrposition(pos);
		internalerrquery(a->sql);
	}
	errcontext("while analyzing %s of the flow", a->what);
}

static RawStmt *
parse_select(const char *text, const char *what)
{
	List	   *raw = raw_parser(text, RAW_PARSE_DEFAULT);
	RawStmt    *rs;

	if (list_length(raw) != 1 ||
		!IsA((rs = linitial(raw))->stmt, SelectStmt) ||
		((SelectStmt *) rs->stmt)->valuesLists != NIL)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s must be one SELECT statement", what)));
	if (((SelectStmt *) rs->stmt)->intoClause)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s cannot use SELECT INTO", what)));
	return rs;
}

/* ---- last_snapshot_version() and current_snapshot_version() ---- */

typedef struct VersionCall
{
	int			start;
	bool		in_from;
	bool		aliased;
	bool		current;
} VersionCall;

typedef struct VersionSearch
{
	const char *text;
	List	   *calls;
} VersionSearch;

static bool
is_version_call(Node *node, bool *current)
{
	FuncCall   *fc = (FuncCall *) node;
	char	   *name;

	if (!IsA(node, FuncCall) || list_length(fc->funcname) != 1 || fc->args != NIL ||
		fc->agg_star || fc->over)
		return false;
	name = strVal(linitial(fc->funcname));
	*current = strcmp(name, "current_snapshot_version") == 0;
	return *current || strcmp(name, "last_snapshot_version") == 0;
}

static bool
find_version_calls(Node *node, VersionSearch *s)
{
	bool		current;
	VersionCall *vc;

	if (node == NULL)
		return false;
	if (IsA(node, RangeFunction) &&
		list_length(((RangeFunction *) node)->functions) == 1 &&
		is_version_call(linitial(linitial(((RangeFunction *) node)->functions)), &current))
	{
		vc = palloc0(sizeof(VersionCall));
		vc->start = ((FuncCall *) linitial(linitial(((RangeFunction *) node)->functions)))->location;
		vc->in_from = true;
		vc->aliased = ((RangeFunction *) node)->alias != NULL;
		vc->current = current;
		s->calls = lappend(s->calls, vc);
		return false;
	}
	if (is_version_call(node, &current))
	{
		vc = palloc0(sizeof(VersionCall));
		vc->start = ((FuncCall *) node)->location;
		vc->current = current;
		s->calls = lappend(s->calls, vc);
		return false;
	}
	return raw_expression_tree_walker(node, find_version_calls, s);
}

/* The end of "name ( )" starting at `start`, or -1. */
static int
call_end(const char *text, int start)
{
	int			i = start;

	while (text[i] && (isalnum((unsigned char) text[i]) || text[i] == '_'))
		i++;
	while (isspace((unsigned char) text[i]))
		i++;
	if (text[i++] != '(')
		return -1;
	while (isspace((unsigned char) text[i]))
		i++;
	return text[i] == ')' ? i + 1 : -1;
}

/*
 * The query with each version function replaced: by a value of
 * SQ_VERSION_CTE (a relation of 0 or 1 row in FROM), or, with `nulls`,
 * by NULL (to learn the type of a version query's result).
 */
static char *
replace_version_calls(const char *text, const char *what, bool allow_current, bool nulls,
					  bool *in_from)
{
	VersionSearch s = {text, NIL};
	StringInfoData buf;
	ListCell   *lc;
	int			done = 0;

	(void) find_version_calls(parse_select(text, what)->stmt, &s);
	*in_from = false;
	foreach(lc, s.calls)
		*in_from = *in_from || ((VersionCall *) lfirst(lc))->in_from;
	if (s.calls == NIL)
		return pstrdup(text);
	initStringInfo(&buf);
	/* the walker meets calls in no particular order: splice by position */
	while (s.calls != NIL)
	{
		VersionCall *first = NULL;
		const char *fname;
		int			end;

		foreach(lc, s.calls)
			if (first == NULL || ((VersionCall *) lfirst(lc))->start < first->start)
				first = lfirst(lc);
		s.calls = list_delete_ptr(s.calls, first);
		fname = first->current ? "current_snapshot_version" : "last_snapshot_version";
		if (first->current && !allow_current)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("current_snapshot_version() cannot be used in %s", what),
					 errdetail("The version query chooses the version; current_snapshot_version() is the version chosen, in the snapshot query."),
					 errhint("Use last_snapshot_version(), the last version applied.")));
		end = call_end(text, first->start);
		if (end < 0)
			ereport(ERROR,
					(errcode(ERRCODE_SYNTAX_ERROR),
					 errmsg("write %s() without arguments in %s", fname, what)));
		appendBinaryStringInfo(&buf, text + done, first->start - done);
		if (nulls)
			appendStringInfoString(&buf, first->in_from ?
								   psprintf("(SELECT NULL AS %s WHERE false)", fname) : "NULL");
		else if (first->in_from)
			appendStringInfo(&buf, "(SELECT %s.%s FROM %s WHERE %s.%s IS NOT NULL)",
							 SQ_VERSION_CTE, fname, SQ_VERSION_CTE, SQ_VERSION_CTE, fname);
		else
			appendStringInfo(&buf, "(SELECT %s.%s FROM %s)", SQ_VERSION_CTE, fname, SQ_VERSION_CTE);
		if (first->in_from && !first->aliased)
			appendStringInfo(&buf, " AS %s", fname);
		done = end;
	}
	appendStringInfoString(&buf, text + done);
	return buf.data;
}

/* ---- STREAM(rel) ---- */

static bool
unquoted_word_at(const char *text, int loc, const char *word)
{
	return loc >= 0 && pg_strncasecmp(text + loc, word, strlen(word)) == 0;
}

/* STREAM rel parses as the table "stream" named rel, STREAM(rel) as a function. */
static bool
is_stream_mark(Node *node, const char *text)
{
	if (IsA(node, RangeVar))
	{
		RangeVar   *rv = (RangeVar *) node;

		return rv->schemaname == NULL && rv->catalogname == NULL &&
			strcmp(rv->relname, "stream") == 0 && rv->alias != NULL &&
			rv->alias->colnames == NIL && unquoted_word_at(text, rv->location, "stream");
	}
	if (IsA(node, RangeFunction))
	{
		RangeFunction *rf = (RangeFunction *) node;
		FuncCall   *fc;

		if (list_length(rf->functions) != 1)
			return false;
		fc = linitial(linitial(rf->functions));
		return IsA(fc, FuncCall) && list_length(fc->funcname) == 1 &&
			strcmp(strVal(linitial(fc->funcname)), "stream") == 0 &&
			unquoted_word_at(text, fc->location, "stream");
	}
	return false;
}

typedef struct StreamSearch
{
	const char *text;
	List	   *marks;			/* every mark, at any depth */
} StreamSearch;

static bool
find_marks(Node *node, StreamSearch *s)
{
	if (node == NULL)
		return false;
	if (is_stream_mark(node, s->text))
	{
		s->marks = lappend(s->marks, node);
		return false;
	}
	return raw_expression_tree_walker(node, find_marks, s);
}

typedef struct TopMark
{
	Node	  **slot;
	bool		nullable;		/* on the NULL side of an outer join */
} TopMark;

static void
find_top_mark(Node **slot, bool nullable, const char *text, TopMark *found)
{
	Node	   *n = *slot;

	if (is_stream_mark(n, text))
	{
		found->slot = slot;
		found->nullable = nullable;
	}
	else if (IsA(n, JoinExpr))
	{
		JoinExpr   *j = (JoinExpr *) n;

		find_top_mark(&j->larg, nullable || j->jointype == JOIN_RIGHT || j->jointype == JOIN_FULL,
					  text, found);
		find_top_mark(&j->rarg, nullable || j->jointype == JOIN_LEFT || j->jointype == JOIN_FULL,
					  text, found);
	}
}

static void
refuse_streaming(const char *what, const char *construct, const char *detail)
{
	ereport(ERROR,
			(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
			 errmsg("%s cannot use %s over STREAM", what, construct),
			 errdetail("%s", detail),
			 errhint("Each run evaluates the query over the stream's new rows only; aggregate in a view or query over the target instead.")));
}

static void
refuse_ambiguous_stream(const char *what, const char *spelled, bool function)
{
	ereport(ERROR,
			(errcode(ERRCODE_AMBIGUOUS_ALIAS),
			 errmsg("\"%s\" in %s is ambiguous", spelled, what),
			 errdetail(function ? "A function named \"stream\" is on the search_path; autocdc reads STREAM(...) as the mark of the streamed table."
					   : "A relation named \"stream\" is on the search_path; autocdc reads STREAM rel as the mark of the streamed table."),
			 errhint(function ? "Qualify the function with its schema to call it, or rename it."
					 : "Write \"stream\" quoted to read the relation stream, or STREAM(rel) to mark rel.")));
}

/*
 * The relation a mark names, resolved under the caller's search_path, and
 * the alias the query refers to it by.
 */
static Oid
resolve_mark(Node *mark, const char *what, Alias **alias)
{
	RangeVar   *rv;
	Oid			relid;
	char		relkind;
	AclResult	acl;

	if (IsA(mark, RangeVar))
	{
		RangeVar   *m = (RangeVar *) mark;

		if (OidIsValid(RangeVarGetRelid(makeRangeVar(NULL, "stream", -1), NoLock, true)))
			refuse_ambiguous_stream(what, psprintf("STREAM %s", m->alias->aliasname), false);
		rv = makeRangeVar(NULL, m->alias->aliasname, m->location);
		*alias = NULL;
	}
	else
	{
		RangeFunction *rf = (RangeFunction *) mark;
		FuncCall   *fc = linitial(linitial(rf->functions));
		ColumnRef  *cr = fc->args ? linitial(fc->args) : NULL;
		List	   *names = NIL;
		ListCell   *lc;

		if (FuncnameGetCandidates(list_make1(makeString("stream")), -1, NIL,
								  false, false, false, true) != NULL)
			refuse_ambiguous_stream(what, "STREAM(...)", true);
		if (list_length(fc->args) != 1 || !IsA(cr, ColumnRef) || rf->lateral ||
			rf->ordinality || rf->is_rowsfrom || rf->coldeflist || fc->agg_order ||
			fc->agg_filter || fc->func_variadic || fc->agg_star || fc->agg_distinct)
			ereport(ERROR,
					(errcode(ERRCODE_SYNTAX_ERROR),
					 errmsg("STREAM in %s takes the name of one table", what),
					 errhint("Write FROM STREAM(schema.table) AS alias.")));
		foreach(lc, cr->fields)
		{
			if (!IsA(lfirst(lc), String))
				ereport(ERROR,
						(errcode(ERRCODE_SYNTAX_ERROR),
						 errmsg("STREAM in %s takes the name of one table", what)));
			names = lappend(names, lfirst(lc));
		}
		rv = makeRangeVarFromNameList(names);
		rv->location = fc->location;
		*alias = rf->alias;
		/* the names would follow the table's column order, which can change */
		if (rf->alias && rf->alias->colnames)
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("STREAM in %s cannot rename the table's columns", what),
					 errhint("Rename them in the select list: SELECT e.a AS b ... FROM STREAM(table) AS e.")));
	}
	relid = RangeVarGetRelid(rv, AccessShareLock, false);
	relkind = get_rel_relkind(relid);
	if (relkind != RELKIND_RELATION && relkind != RELKIND_PARTITIONED_TABLE)
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("\"%s\", marked STREAM in %s, is not a table", get_rel_name(relid), what),
				 errdetail("autocdc reads a stream's new rows by the transaction that inserted them, which only a table records."),
				 errhint("Mark the table the view reads, and write the view's query as the source query.")));
	acdc_define_refuse_temporary(relid, "source");
	acl = pg_class_aclcheck(relid, GetUserId(), ACL_SELECT);
	if (acl != ACLCHECK_OK)
		aclcheck_error(acl, OBJECT_TABLE, get_rel_name(relid));
	if (*alias == NULL)
		*alias = makeAlias(get_rel_name(relid), NIL);
	return relid;
}

static void
add_cte(SelectStmt *stmt, const char *name, const char *body)
{
	CommonTableExpr *cte = makeNode(CommonTableExpr);

	cte->ctename = pstrdup(name);
	cte->ctequery = ((RawStmt *) linitial(raw_parser(body, RAW_PARSE_DEFAULT)))->stmt;
	cte->location = -1;
	if (stmt->withClause == NULL)
	{
		stmt->withClause = makeNode(WithClause);
		stmt->withClause->location = -1;
	}
	stmt->withClause->ctes = lcons(cte, stmt->withClause->ctes);
}

/* The WITH queries the stored text refers to, as analysis sees them. */
static void
add_autocdc_ctes(SelectStmt *stmt, Oid stream, Oid version_type)
{
	if (OidIsValid(version_type))
	{
		char	   *t = format_type_be_qualified(version_type);

		add_cte(stmt, SQ_VERSION_CTE,
				psprintf("SELECT NULL::%s AS current_snapshot_version, NULL::%s AS last_snapshot_version",
						 t, t));
	}
	if (OidIsValid(stream))
		add_cte(stmt, SQ_STREAM_CTE, psprintf("SELECT * FROM %s", acdc_rel_qualified_name(stream)));
}

static Query *
analyze_raw(RawStmt *rs, const char *text, const char *what)
{
	ErrorContextCallback errcb;
	QueryErrorArg arg = {what, text};
	Query	   *q;

	errcb.callback = query_error_context;
	errcb.arg = &arg;
	errcb.previous = error_context_stack;
	error_context_stack = &errcb;
	q = parse_analyze_fixedparams(rs, text, NULL, 0, NULL);
	error_context_stack = errcb.previous;
	if (q->commandType != CMD_SELECT || q->utilityStmt || q->hasModifyingCTE ||
		q->rowMarks != NIL)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s must be a SELECT that only reads", what),
				 errdetail("Data-modifying WITH queries and FOR UPDATE/SHARE are not allowed.")));
	return q;
}

/* The stored text analyzed as a run's statement holds it. */
Query *
acdc_sq_analyze_stored(Oid stream, const char *norm, Oid version_type, const char *what)
{
	RawStmt    *rs = parse_select(norm, what);

	add_autocdc_ctes((SelectStmt *) rs->stmt, stream, version_type);
	return analyze_raw(rs, norm, what);
}

/* Over the stream: what one new row at a time can give. */
static void
check_streaming_shape(Query *q, const char *what)
{
	ListCell   *lc;

	if (q->hasAggs || q->groupClause || q->groupingSets || q->havingQual)
		refuse_streaming(what, "aggregates", "An aggregate over the new rows of one run would be an aggregate of an arbitrary batch.");
	if (q->hasWindowFuncs)
		refuse_streaming(what, "window functions", "A window over the new rows of one run would see an arbitrary batch.");
	if (q->distinctClause)
		refuse_streaming(what, "DISTINCT", "DISTINCT over the new rows of one run would not remove duplicates across runs.");
	if (q->limitCount || q->limitOffset)
		refuse_streaming(what, "LIMIT or OFFSET", "A limit over the new rows of one run would drop rows that are never read again.");
	if (q->sortClause)
		refuse_streaming(what, "ORDER BY", "The rows of a run are events ordered by sequence_by, not by the query.");
	if (q->hasTargetSRFs)
		refuse_streaming(what, "set-returning functions in the select list", "Only projections, casts, WHERE and joins to tables are supported over a stream.");
	if (q->hasSubLinks)
		refuse_streaming(what, "subqueries", "Only projections, casts, WHERE and joins to tables are supported over a stream.");
	foreach(lc, q->rtable)
	{
		RangeTblEntry *rte = lfirst(lc);

		if (rte->rtekind == RTE_RELATION || rte->rtekind == RTE_JOIN ||
			(rte->rtekind == RTE_CTE && strcmp(rte->ctename, SQ_STREAM_CTE) == 0))
			continue;
		refuse_streaming(what, rte->rtekind == RTE_SUBQUERY ? "subqueries in FROM"
						 : rte->rtekind == RTE_FUNCTION ? "functions in FROM"
						 : "this kind of FROM item",
						 "Over a stream a query joins tables and views, read as they are at the run.");
	}
}

/* The query's result columns, which play the source table's columns. */
static List *
output_columns(Query *q, const char *what)
{
	List	   *result = NIL;
	ListCell   *lc,
			   *lc2;

	foreach(lc, q->targetList)
	{
		TargetEntry *tle = lfirst(lc);
		SourceColumn *c;

		if (tle->resjunk || strcmp(tle->resname, AUTOCDC_XID_COLUMN) == 0)
			continue;
		foreach(lc2, result)
			if (strcmp(((SourceColumn *) lfirst(lc2))->name, tle->resname) == 0)
				ereport(ERROR,
						(errcode(ERRCODE_DUPLICATE_COLUMN),
						 errmsg("column \"%s\" appears twice in the result of %s", tle->resname, what),
						 errhint("Name each column of the result with AS.")));
		c = palloc0(sizeof(SourceColumn));
		c->name = pstrdup(tle->resname);
		c->typid = exprType((Node *) tle->expr);
		c->typmod = exprTypmod((Node *) tle->expr);
		c->collation = exprCollation((Node *) tle->expr);
		result = lappend(result, c);
	}
	return result;
}

List *
acdc_sq_stored_columns(Oid stream, const char *norm, Oid version_type, const char *what)
{
	return output_columns(acdc_sq_analyze_stored(stream, norm, version_type, what), what);
}

/* Deparsed with every name outside pg_catalog qualified, autocdc's WITH queries left out. */
static char *
deparse_kept(Query *q)
{
	Query	   *copy = copyObject(q);
	List	   *ctes = NIL;
	ListCell   *lc;
	int			nest;
	char	   *result;

	foreach(lc, copy->cteList)
	{
		CommonTableExpr *cte = lfirst(lc);

		if (strcmp(cte->ctename, SQ_STREAM_CTE) != 0 && strcmp(cte->ctename, SQ_VERSION_CTE) != 0)
			ctes = lappend(ctes, cte);
	}
	copy->cteList = ctes;
	nest = NewGUCNestLevel();
	(void) set_config_option("search_path", "pg_catalog", PGC_USERSET,
							 PGC_S_SESSION, GUC_ACTION_SAVE, true, 0, false);
	result = pg_get_querydef(copy, false);
	AtEOXact_GUC(true, nest);
	return result;
}

/* What a query resolves to; the stored text must resolve to the same. */
List *
acdc_sq_objects(Oid stream, const char *norm, Oid version_type, const char *what)
{
	return acdc_query_objects(acdc_sq_analyze_stored(stream, norm, version_type, what), what);
}

static void
check_kept_query(Query *given, Oid stream, const char *norm, Oid version_type,
				 const char *what)
{
	List	   *a = acdc_query_objects(given, what);
	List	   *b;
	UserSwitch	sw;

	autocdc_become(&sw, GetUserId(), true);
	b = acdc_sq_objects(stream, norm, version_type, what);
	autocdc_unbecome(&sw);
	if (!acdc_same_string_lists(a, b))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("%s cannot be kept in a form that resolves to the same objects", what),
				 errdetail("With its names qualified it reads: %s", norm),
				 errhint("Qualify the names in the query and write its casts out.")));
}

/* Who runs the flow must be able to read every relation the query reads, none temporary. */
static bool
check_select_walker(Node *node, void *context)
{
	if (node == NULL)
		return false;
	if (IsA(node, Query))
		return query_tree_walker((Query *) node, check_select_walker, context,
								 QTW_EXAMINE_RTES_BEFORE);
	if (IsA(node, RangeTblEntry))
	{
		RangeTblEntry *rte = (RangeTblEntry *) node;
		Oid			role = *(Oid *) context;

		if (rte->rtekind == RTE_RELATION && isAnyTempNamespace(get_rel_namespace(rte->relid)))
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("the query of a flow cannot read a temporary table"),
					 errdetail("Table \"%s\" is temporary; it goes away with its session, the flow would not.",
							   get_rel_name(rte->relid)),
					 errhint("Use an ordinary (or unlogged) table.")));
		if (rte->rtekind == RTE_RELATION &&
			pg_class_aclcheck(rte->relid, role, ACL_SELECT) != ACLCHECK_OK)
		{
			if (role == GetUserId())
				aclcheck_error(ACLCHECK_NO_PRIV, OBJECT_TABLE, get_rel_name(rte->relid));
			ereport(ERROR,
					(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
					 errmsg("role \"%s\", the owner of the flow's target, may not read \"%s\", which the source query reads",
							GetUserNameFromId(role, false), get_rel_name(rte->relid)),
					 errdetail("A flow runs with the rights of its target's owner."),
					 errhint("GRANT SELECT ON %s TO %s;", acdc_rel_qualified_name(rte->relid),
							 quote_identifier(GetUserNameFromId(role, false)))));
		}
		return false;
	}
	return expression_tree_walker(node, check_select_walker, context);
}

/* Every relation the stored query reads, readable by `role`. */
void
acdc_sq_require_select(Oid stream, const char *norm, Oid version_type, Oid role)
{
	Query	   *q = acdc_sq_analyze_stored(stream, norm, version_type, "source_query");

	(void) check_select_walker((Node *) q, &role);
}

/*
 * Analyzes a query as the creator wrote it and returns its kept text;
 * *stream is the relation it marks STREAM (InvalidOid: none), *columns
 * its result columns.
 */
static char *
define_query(const char *given, const char *what, SourceQueryMode mode,
			 Oid version_type, Oid *stream, List **columns)
{
	bool		in_from;
	char	   *text = OidIsValid(version_type) ?
		replace_version_calls(given, what, mode == SQ_SNAPSHOT, false, &in_from) : pstrdup(given);
	RawStmt    *rs = parse_select(text, what);
	SelectStmt *stmt = (SelectStmt *) rs->stmt;
	StreamSearch s = {text, NIL};
	Query	   *q;
	char	   *norm;

	*stream = InvalidOid;
	(void) find_marks((Node *) stmt, &s);
	if (s.marks != NIL && (mode == SQ_SNAPSHOT || mode == SQ_VERSION))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("%s cannot read a STREAM", what),
				 errdetail("A snapshot is read whole at each run."),
				 errhint("Remove STREAM(...): name the table as it is.")));
	if (s.marks == NIL && mode == SQ_STREAM)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s must mark the table it reads incrementally with STREAM(...)", what),
				 errdetail("A query without STREAM is a batch source: each run would read all of it again."),
				 errhint("Write FROM STREAM(table), or create the flow with once => true to read the query once.")));
	if (list_length(s.marks) > 1)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("%s marks more than one relation STREAM", what),
				 errdetail("A flow reads the new rows of one table; the other tables of the query are read as they are."),
				 errhint("Mark one table STREAM(...), or create one flow per stream.")));
	if (s.marks != NIL)
	{
		TopMark		top = {NULL, false};
		ListCell   *lc;
		Alias	   *alias;
		RangeVar   *cte_ref;

		if (stmt->op != SETOP_NONE)
			refuse_streaming(what, "set operations", "A UNION, INTERSECT or EXCEPT over a stream is not supported; create one flow per branch.");
		if (stmt->withClause)
			refuse_streaming(what, "WITH queries", "Only projections, casts, WHERE and joins to tables are supported over a stream.");
		foreach(lc, stmt->fromClause)
			find_top_mark((Node **) &lfirst(lc), false, text, &top);
		if (top.slot == NULL)
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("STREAM must be in the FROM clause of %s itself", what),
					 errhint("Mark the stream in the outermost FROM clause, not in a subquery.")));
		if (top.nullable)
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("the STREAM of %s cannot be on the nullable side of an outer join", what),
					 errdetail("The rows of the other side that match no new row would be read again at every run."),
					 errhint("Join the other tables to the stream: FROM STREAM(table) LEFT JOIN other ...")));
		*stream = resolve_mark(*top.slot, what, &alias);
		cte_ref = makeRangeVar(NULL, SQ_STREAM_CTE, exprLocation(*top.slot));
		cte_ref->alias = alias;
		*top.slot = (Node *) cte_ref;
	}
	add_autocdc_ctes(stmt, *stream, version_type);
	q = analyze_raw(rs, text, what);
	if (OidIsValid(*stream))
		check_streaming_shape(q, what);
	*columns = output_columns(q, what);
	if (*columns == NIL)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s returns no columns", what)));
	norm = deparse_kept(q);
	check_kept_query(q, *stream, norm, version_type, what);
	acdc_sq_require_select(*stream, norm, version_type, GetUserId());
	return norm;
}

/*
 * source_query of an AUTO CDC or append flow: the flow's source becomes
 * the table marked STREAM, its columns the query's result columns.
 */
void
acdc_sq_define_source(FlowSpec *spec, const char *query, bool once)
{
	Oid			stream;

	spec->source_query = define_query(query, "source_query",
									  once ? SQ_BATCH_OR_STREAM : SQ_STREAM,
									  InvalidOid, &stream, &spec->source_columns);
	spec->source = stream;
	spec->incremental = OidIsValid(stream);
	spec->columns_rel = stream;
}

static void
version_probe_context(void *arg)
{
	errhint("The version's type is the type of version_query's result, found with NULL for last_snapshot_version(); in FROM, cast its column to that type: l.last_snapshot_version::bigint.");
}

/*
 * snapshot_query and version_query of a snapshot flow.  Without a version
 * query the snapshot is versioned 0, 1, 2... like a table read whole;
 * with one, the version is of the type its one column has.
 */
void
acdc_sq_define_snapshot(FlowSpec *spec, const char *snapshot_query,
						const char *version_query)
{
	Oid			stream;
	List	   *cols;

	spec->seq_type = INT8OID;
	if (version_query)
	{
		bool		in_from;
		char	   *probe = replace_version_calls(version_query, "version_query", false, true,
												  &in_from);
		Query	   *q;
		ErrorContextCallback errcb;

		/* the version's type is the result's, learnt with NULL for the versions */
		errcb.callback = version_probe_context;
		errcb.arg = NULL;
		errcb.previous = error_context_stack;
		if (in_from)
			error_context_stack = &errcb;
		q = analyze_raw(parse_select(probe, "version_query"), probe, "version_query");
		error_context_stack = errcb.previous;

		cols = output_columns(q, "version_query");
		if (list_length(cols) != 1)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("version_query must return one column, the next version"),
					 errhint("Return no row when there is no newer snapshot.")));
		spec->seq_type = ((SourceColumn *) linitial(cols))->typid;
		if (spec->seq_type == RECORDOID || spec->seq_type == UNKNOWNOID)
			ereport(ERROR,
					(errcode(ERRCODE_DATATYPE_MISMATCH),
					 errmsg("version_query must return a version of a named type, not %s",
							format_type_be(spec->seq_type)),
					 errhint("Cast the version to its type, or to a composite type for several values.")));
		acdc_define_require_sortable(spec->seq_type, "the snapshot version");
		spec->version_query = define_query(version_query, "version_query", SQ_VERSION,
										   spec->seq_type, &stream, &cols);
	}
	spec->source_query = define_query(snapshot_query, "snapshot_query", SQ_SNAPSHOT,
									  spec->seq_type, &stream, &spec->source_columns);
	spec->source = InvalidOid;
	spec->incremental = false;
	spec->columns_rel = InvalidOid;
}

/*
 * The FROM item a run reads a source query through: the stream's rows
 * restricted by `stream_where` (NULL: all), the version values given as
 * text (NULL: NULL).
 */
char *
acdc_sq_from(Oid stream, const char *norm, const char *stream_where,
			 Oid version_type, const char *current, const char *last)
{
	StringInfoData buf;
	bool		with = false;

	initStringInfo(&buf);
	appendStringInfoChar(&buf, '(');
	if (OidIsValid(version_type))
	{
		char	   *t = format_type_be_qualified(version_type);

		appendStringInfo(&buf, "WITH %s AS (SELECT %s::%s AS current_snapshot_version, %s::%s AS last_snapshot_version)",
						 SQ_VERSION_CTE, current ? quote_literal_cstr(current) : "NULL", t,
						 last ? quote_literal_cstr(last) : "NULL", t);
		with = true;
	}
	if (OidIsValid(stream))
	{
		appendStringInfo(&buf, "%s %s AS (SELECT * FROM %s AS %s%s%s)",
						 with ? "," : "WITH", SQ_STREAM_CTE, acdc_rel_qualified_name(stream),
						 SRC_ALIAS, stream_where ? " WHERE " : "", stream_where ? stream_where : "");
		with = true;
	}
	appendStringInfo(&buf, " SELECT * FROM (%s) AS __autocdc_q)", norm);
	return buf.data;
}

/* The FROM item of a flow's source as its expressions are analyzed over. */
char *
acdc_sq_flow_from(FlowDef *f)
{
	if (f->source_query == NULL)
		return acdc_rel_qualified_name(f->source);
	return acdc_sq_from(f->source, f->source_query, NULL, InvalidOid, NULL, NULL);
}

/*
 * A view, materialized view or foreign table is read whole at each run:
 * only a flow that reads once may take one (snapshots compare it whole).
 */
void
acdc_sq_refuse_batch_source(FlowSpec *spec)
{
	if (spec->once || spec->incremental)
		return;
	acdc_define_refuse_start_now(spec); /* its own message first */
	ereport(ERROR,
			(errcode(ERRCODE_WRONG_OBJECT_TYPE),
			 errmsg("source \"%s\" of flow \"%s\" is not a table", get_rel_name(spec->source), spec->name),
			 errdetail("A view, materialized view or foreign table is read whole at each run: each run would read every row again."),
			 errhint("Read the table it reads through source_query => 'SELECT ... FROM STREAM(table) ...', or create the flow with once => true.")));
}
