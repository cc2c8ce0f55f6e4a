/*-------------------------------------------------------------------------
 * define_target.c
 *	  From a validated FlowSpec to objects: expressions analyzed and
 *	  normalized, the source prepared for incremental reads, the target
 *	  created or checked, its auxiliary state set up, the catalog written.
 *	  Also the cleanup when flows, targets or sources go away.
 *-------------------------------------------------------------------------
 */
#include "define.h"

#include "access/htup_details.h"
#include "access/relation.h"
#include "catalog/dependency.h"
#include "catalog/namespace.h"
#include "catalog/objectaddress.h"
#include "catalog/pg_class.h"
#include "catalog/pg_collation.h"
#include "catalog/pg_attribute.h"
#include "catalog/pg_index.h"
#include "catalog/pg_type.h"
#include "commands/event_trigger.h"
#include "commands/trigger.h"
#include "commands/extension.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "nodes/nodeFuncs.h"
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

PG_FUNCTION_INFO_V1(autocdc_on_sql_drop);

#if PG_VERSION_NUM >= 160000
#define owns_relation(relid) object_ownercheck(RelationRelationId, (relid), GetUserId())
#else
#define owns_relation(relid) pg_class_ownercheck((relid), GetUserId())
#endif

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

	initStringInfo(&sql);
	appendStringInfo(&sql, "SELECT (%s) FROM %s", expr,
					 rel_qualified_name(spec->source));

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
	if (rte->rtekind != RTE_RELATION || rte->relid != spec->source)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s must be an expression over one source row", what)));
	tle = linitial(q->targetList);
	*node = (Node *) tle->expr;

	nest = NewGUCNestLevel();
	(void) set_config_option("search_path", "pg_catalog", PGC_USERSET,
							 PGC_S_SESSION, GUC_ACTION_SAVE, true, 0, false);
	result = deparse_expression((Node *) tle->expr,
								deparse_context_for(get_rel_name(spec->source),
													spec->source),
								false, false);
	AtEOXact_GUC(true, nest);

	error_context_stack = errcb.previous;
	return result;
}

static void
require_sortable(Oid typid, const char *what)
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

void
define_analyze_expressions(FlowSpec *spec)
{
	Node	   *node;

	spec->seq_norm = analyze_expr(spec, spec->sequence_by, "sequence_by", &node);
	spec->seq_type = exprType(node);
	if (spec->seq_type == RECORDOID)
	{
		ListCell   *lc;

		if (!IsA(node, RowExpr))
			ereport(ERROR,
					(errcode(ERRCODE_DATATYPE_MISMATCH),
					 errmsg("sequence_by of an anonymous record type must be a ROW(...) expression")));
		foreach(lc, ((RowExpr *) node)->args)
		{
			require_sortable(exprType(lfirst(lc)), "every field of sequence_by");
			spec->seq_row_types = lappend_oid(spec->seq_row_types, exprType(lfirst(lc)));
			spec->seq_row_typmods = lappend_int(spec->seq_row_typmods, exprTypmod(lfirst(lc)));
		}
	}
	else
		require_sortable(spec->seq_type, "sequence_by");

	spec->deletes_norm = analyze_bool(spec, spec->deletes, "apply_as_deletes");
	spec->truncates_norm = analyze_bool(spec, spec->truncates, "apply_as_truncates");
}

char *
type_with_typmod(Oid typid, int32 typmod)
{
	return format_type_extended(typid, typmod,
								FORMAT_TYPE_TYPEMOD_GIVEN | FORMAT_TYPE_FORCE_QUALIFY);
}

void
append_collation(StringInfo buf, Oid collation, Oid typid)
{
	HeapTuple	tup;
	Form_pg_collation coll;

	if (!OidIsValid(collation) || collation == get_typcollation(typid))
		return;
	tup = SearchSysCache1(COLLOID, ObjectIdGetDatum(collation));
	if (!HeapTupleIsValid(tup))
		elog(ERROR, "cache lookup failed for collation %u", collation);
	coll = (Form_pg_collation) GETSTRUCT(tup);
	appendStringInfo(buf, " COLLATE %s",
					 quote_qualified_identifier(get_namespace_name(coll->collnamespace),
												NameStr(coll->collname)));
	ReleaseSysCache(tup);
}

/* Creates the target from the source's columns, keys as primary key. */
static Oid
create_target(FlowSpec *spec, RangeVar *rv)
{
	Oid			nsp = RangeVarGetCreationNamespace(rv);
	StringInfoData sql;
	List	   *all = list_concat_copy(spec->keys, spec->columns);
	ListCell   *lc;

	if (isAnyTempNamespace(nsp))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("a flow target cannot be a temporary table")));
	initStringInfo(&sql);
	appendStringInfo(&sql, "CREATE TABLE %s (",
					 quote_qualified_identifier(get_namespace_name(nsp), rv->relname));
	foreach(lc, all)
	{
		SourceColumn *c = define_source_column(spec, lfirst(lc));

		appendStringInfo(&sql, "%s %s", quote_identifier(c->name),
						 type_with_typmod(c->typid, c->typmod));
		append_collation(&sql, c->collation, c->typid);
		appendStringInfoString(&sql, ", ");
	}
	if (spec->scd_type == 1)
	{
		appendStringInfoString(&sql, "PRIMARY KEY (");
		append_column_list(&sql, spec->keys, NULL);
		appendStringInfoString(&sql, "))");
	}
	else
	{
		/* keys NOT NULL; history columns and keys come with the sequence type */
		sql.len -= 2;
		sql.data[sql.len] = '\0';
		appendStringInfoChar(&sql, ')');
		foreach(lc, spec->keys)
			appendStringInfo(&sql, "; ALTER TABLE %s ALTER COLUMN %s SET NOT NULL",
							 quote_qualified_identifier(get_namespace_name(nsp), rv->relname),
							 quote_identifier(lfirst(lc)));
	}
	spi_exec(sql.data, 0, NULL, NULL, NULL, false);
	spec->target_created = true;
	return RangeVarGetRelid(rv, NoLock, false);
}

typedef bool (*IndexTest) (HeapTuple tup, Form_pg_index idx, Oid relid, void *arg);

/* Whether any index of the relation passes `test`. */
static bool
any_index(Oid relid, IndexTest test, void *arg)
{
	Relation	rel = relation_open(relid, AccessShareLock);
	List	   *indexes = RelationGetIndexList(rel);
	ListCell   *lc;
	bool		found = false;

	foreach(lc, indexes)
	{
		HeapTuple	tup = SearchSysCache1(INDEXRELID, ObjectIdGetDatum(lfirst_oid(lc)));

		if (!HeapTupleIsValid(tup))
			continue;
		found = test(tup, (Form_pg_index) GETSTRUCT(tup), relid, arg);
		ReleaseSysCache(tup);
		if (found)
			break;
	}
	relation_close(rel, AccessShareLock);
	return found;
}

/* A valid unique index on exactly the key columns, without expressions. */
static bool
is_unique_on_keys(HeapTuple tup, Form_pg_index idx, Oid relid, void *arg)
{
	List	   *keys = arg;

	if (!idx->indisunique || !idx->indisvalid ||
		idx->indnkeyatts != list_length(keys) ||
		!heap_attisnull(tup, Anum_pg_index_indexprs, NULL) ||
		!heap_attisnull(tup, Anum_pg_index_indpred, NULL))
		return false;
	for (int i = 0; i < idx->indnkeyatts; i++)
	{
		char	   *att = get_attname(relid, idx->indkey.values[i], true);

		if (att == NULL || !list_has_string(keys, att))
			return false;
	}
	return true;
}

bool
define_has_unique_index(Oid relid, List *columns)
{
	return any_index(relid, is_unique_on_keys, columns);
}

/* "name type [COLLATE c]" of a column of `relid`, for DDL. */
char *
define_column_ddl(Oid relid, const char *col)
{
	StringInfoData buf;
	Oid			typid;
	int32		typmod;
	Oid			coll;

	get_atttypetypmodcoll(relid, get_attnum(relid, col), &typid, &typmod, &coll);
	initStringInfo(&buf);
	appendStringInfo(&buf, "%s %s", quote_identifier(col), type_with_typmod(typid, typmod));
	append_collation(&buf, coll, typid);
	return buf.data;
}

/* An existing target must be ours to write and fit the flow's columns. */
static void
check_existing_target(FlowSpec *spec, Oid relid)
{
	char		relkind = get_rel_relkind(relid);
	char	   *relname = get_rel_name(relid);
	List	   *all = list_concat_copy(spec->keys, spec->columns);
	ListCell   *lc;

	if (relkind != RELKIND_RELATION && relkind != RELKIND_PARTITIONED_TABLE)
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("target \"%s\" is not a table", relname)));
	if (!owns_relation(relid))
		aclcheck_error(ACLCHECK_NOT_OWNER, OBJECT_TABLE, relname);
	if (relid == spec->source)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("a flow cannot read from its own target \"%s\"", relname)));

	foreach(lc, all)
	{
		SourceColumn *c = define_source_column(spec, lfirst(lc));
		AttrNumber	attnum = get_attnum(relid, c->name);
		Oid			ttype;

		if (attnum == InvalidAttrNumber)
			ereport(ERROR,
					(errcode(ERRCODE_UNDEFINED_COLUMN),
					 errmsg("target \"%s\" has no column \"%s\"", relname, c->name),
					 errhint("Add the column to the target, or leave it out of the flow with except_column_list.")));
		ttype = get_atttype(relid, attnum);
		if (!can_coerce_type(1, &c->typid, &ttype, COERCION_ASSIGNMENT))
			ereport(ERROR,
					(errcode(ERRCODE_DATATYPE_MISMATCH),
					 errmsg("column \"%s\" is of type %s in source \"%s\" but of type %s in target \"%s\"",
							c->name, format_type_be(c->typid), get_rel_name(spec->source),
							format_type_be(ttype), relname),
					 errhint("Make the types assignable, or leave the column out of the flow.")));
	}
	if (spec->scd_type == 2)
		scd2_check_existing_target(spec, relid);
	else if (!any_index(relid, is_unique_on_keys, spec->keys))
	{
		StringInfoData cols;

		initStringInfo(&cols);
		append_column_list(&cols, spec->keys, NULL);
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_TABLE_DEFINITION),
				 errmsg("target \"%s\" has no unique index on the keys (%s)", relname, cols.data),
				 errdetail("An SCD type 1 target holds one row per key."),
				 errhint("Create one: CREATE UNIQUE INDEX ON %s (%s);",
						 rel_qualified_name(relid), cols.data)));
	}
}

static bool
column_has_default(Oid relid, AttrNumber attnum)
{
	HeapTuple	tup = SearchSysCache2(ATTNUM, ObjectIdGetDatum(relid),
									  Int16GetDatum(attnum));
	bool		result;

	if (!HeapTupleIsValid(tup))
		return false;
	result = ((Form_pg_attribute) GETSTRUCT(tup))->atthasdef;
	ReleaseSysCache(tup);
	return result;
}

static bool
leads_with_attnum(HeapTuple tup, Form_pg_index idx, Oid relid, void *arg)
{
	return idx->indkey.values[0] == *(AttrNumber *) arg;
}

/*
 * Gives a table source the hidden column that records the inserting
 * transaction, its default, its index and the trigger that stamps it
 * (DESIGN §4), whichever are missing (CREATE TABLE ... (LIKE source) copies
 * the column alone).  Rows already there keep NULL: the first run reads them.  Only
 * the table's owner may do this.
 */
static void
prepare_source(FlowSpec *spec)
{
	AttrNumber	attnum;
	StringInfoData sql;
	char	   *qname = rel_qualified_name(spec->source);
	bool		need_column,
				need_default,
				need_index,
				need_trigger;

	if (!spec->incremental)
		return;
	attnum = get_attnum(spec->source, AUTOCDC_XID_COLUMN);
	need_column = attnum == InvalidAttrNumber;
	if (!need_column && get_atttype(spec->source, attnum) != XID8OID)
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("column \"%s\" of source \"%s\" must be of type xid8",
						AUTOCDC_XID_COLUMN, get_rel_name(spec->source))));
	need_default = need_column || !column_has_default(spec->source, attnum);
	need_index = need_column || !any_index(spec->source, leads_with_attnum, &attnum);
	need_trigger = !OidIsValid(get_trigger_oid(spec->source, AUTOCDC_STAMP_TRIGGER, true));
	if (!need_column && !need_default && !need_index && !need_trigger)
		return;
	if (!owns_relation(spec->source))
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("source \"%s\" is not prepared for incremental reading",
						get_rel_name(spec->source)),
				 errdetail("autocdc gives a table the column %s (indexed, set by the trigger %s) the first time it becomes a source, and only its owner may do that.",
						   AUTOCDC_XID_COLUMN, AUTOCDC_STAMP_TRIGGER),
				 errhint("Ask the table's owner to create a flow from it first.")));

	initStringInfo(&sql);
	if (need_column)
		appendStringInfo(&sql, "ALTER TABLE %s ADD COLUMN %s pg_catalog.xid8; ",
						 qname, AUTOCDC_XID_COLUMN);
	if (need_default)
		appendStringInfo(&sql, "ALTER TABLE %s ALTER COLUMN %s SET DEFAULT pg_catalog.pg_current_xact_id(); ",
						 qname, AUTOCDC_XID_COLUMN);
	if (need_index)
		appendStringInfo(&sql, "CREATE INDEX ON %s (%s); ", qname, AUTOCDC_XID_COLUMN);
	/* ALWAYS: rows applied by logical replication are stamped here too. */
	if (need_trigger)
		appendStringInfo(&sql, "CREATE TRIGGER %s BEFORE INSERT ON %s FOR EACH ROW "
						 "EXECUTE FUNCTION autocdc._stamp_xid(); "
						 "ALTER TABLE %s ENABLE ALWAYS TRIGGER %s; ",
						 AUTOCDC_STAMP_TRIGGER, qname, qname, AUTOCDC_STAMP_TRIGGER);
	spi_exec(sql.data, 0, NULL, NULL, NULL, false);
}

/* Makes `obj` go away with the target (DROP TABLE target drops it too). */
void
define_depend_on_target(Oid classid, Oid objid, Oid target)
{
	ObjectAddress dependent,
				referenced;

	ObjectAddressSet(dependent, classid, objid);
	ObjectAddressSet(referenced, RelationRelationId, target);
	recordDependencyOn(&dependent, &referenced, DEPENDENCY_AUTO);
}

/*
 * A name for an auxiliary object of a target, "<prefix>_<target oid>", with
 * a counter when it is taken (after a dump and restore, OIDs are reused).
 */
void
define_free_name(char *name, const char *prefix, Oid target, bool type)
{
	Oid			nsp = get_namespace_oid("autocdc", false);

	for (int i = 0;; i++)
	{
		bool		taken;

		if (i == 0)
			snprintf(name, NAMEDATALEN, "%s_%u", prefix, target);
		else
			snprintf(name, NAMEDATALEN, "%s_%u_%d", prefix, target, i);
		taken = OidIsValid(get_relname_relid(name, nsp)) ||
			(type && OidIsValid(GetSysCacheOid2(TYPENAMENSP, Anum_pg_type_oid,
												CStringGetDatum(name),
												ObjectIdGetDatum(nsp))));
		if (!taken)
			return;
	}
}

static Oid
create_sequence_composite(FlowSpec *spec, Oid owner)
{
	StringInfoData sql;
	char		tname[NAMEDATALEN];
	ListCell   *lt,
			   *lm;
	int			i = 1;
	UserSwitch	sw;
	Oid			typid;

	define_free_name(tname, "__autocdc_seq", spec->target, true);
	initStringInfo(&sql);
	appendStringInfo(&sql, "CREATE TYPE autocdc.%s AS (", quote_identifier(tname));
	forboth(lt, spec->seq_row_types, lm, spec->seq_row_typmods)
	{
		appendStringInfo(&sql, "%sf%d %s", i > 1 ? ", " : "", i,
						 type_with_typmod(lfirst_oid(lt), lfirst_int(lm)));
		i++;
	}
	appendStringInfo(&sql, "); ALTER TYPE autocdc.%s OWNER TO %s",
					 quote_identifier(tname),
					 quote_identifier(GetUserNameFromId(owner, false)));
	autocdc_become(&sw, autocdc_extension_owner(), false);
	spi_exec(sql.data, 0, NULL, NULL, NULL, false);
	autocdc_unbecome(&sw);
	typid = GetSysCacheOid2(TYPENAMENSP, Anum_pg_type_oid,
							CStringGetDatum(tname),
							ObjectIdGetDatum(get_namespace_oid("autocdc", false)));
	define_depend_on_target(TypeRelationId, typid, spec->target);
	return typid;
}

/*
 * The state table: per key, the sequence of the last upsert and of the last
 * delete (the tombstone), when the key died, and for each partial-update
 * column the sequence of the event that set its value.
 */
static Oid
create_state_table(FlowSpec *spec, Oid owner)
{
	StringInfoData sql;
	char		sname[NAMEDATALEN];
	char	   *seqtype = type_qualified_name(spec->seq_type);
	char	   *qname;
	ListCell   *lc;
	UserSwitch	sw;
	Oid			relid;

	define_free_name(sname, "__autocdc_state", spec->target, false);
	qname = quote_qualified_identifier("autocdc", sname);
	initStringInfo(&sql);
	appendStringInfo(&sql, "CREATE TABLE %s (", qname);
	foreach(lc, spec->keys)
	{
		AttrNumber	att = get_attnum(spec->target, lfirst(lc));
		Oid			typid;
		int32		typmod;
		Oid			coll;

		get_atttypetypmodcoll(spec->target, att, &typid, &typmod, &coll);
		appendStringInfo(&sql, "%s %s", quote_identifier(lfirst(lc)),
						 type_with_typmod(typid, typmod));
		append_collation(&sql, coll, typid);
		appendStringInfoString(&sql, " NOT NULL, ");
	}
	appendStringInfo(&sql,
					 "__autocdc_upsert_seq %s, __autocdc_delete_seq %s, "
					 "__autocdc_deleted_at pg_catalog.timestamptz, PRIMARY KEY (",
					 seqtype, seqtype);
	append_column_list(&sql, spec->keys, NULL);
	appendStringInfo(&sql, ")) WITH (fillfactor = 90); "
					 "CREATE INDEX ON %s (__autocdc_deleted_at) WHERE __autocdc_deleted_at IS NOT NULL; "
					 "ALTER TABLE %s OWNER TO %s; "
					 "COMMENT ON TABLE %s IS %s",
					 qname, qname, quote_identifier(GetUserNameFromId(owner, false)),
					 qname,
					 quote_literal_cstr(psprintf("autocdc state of %s", rel_qualified_name(spec->target))));
	autocdc_become(&sw, autocdc_extension_owner(), false);
	spi_exec(sql.data, 0, NULL, NULL, NULL, false);
	autocdc_unbecome(&sw);
	relid = get_relname_relid(sname, get_namespace_oid("autocdc", false));
	define_depend_on_target(RelationRelationId, relid, spec->target);
	return relid;
}

/*
 * Adds to the state the partial-update columns this flow brings.  Live
 * keys' values came from their last upsert until now, hence the initial
 * setting sequence.
 */
static void
add_state_partial_columns(FlowSpec *spec, Oid state, List *tracked, List *wanted)
{
	ListCell   *lc;
	List	   *added = NIL;
	char	   *qstate = rel_qualified_name(state);
	char	   *seqtype = type_qualified_name(spec->seq_type);
	UserSwitch	sw;

	autocdc_become(&sw, autocdc_extension_owner(), false);
	foreach(lc, wanted)
	{
		char	   *col = lfirst(lc);

		if (list_has_string(tracked, col))
			continue;
		added = lappend(added, col);
		if (spec->scd_type == 2)
			continue;			/* the event store records inheritance per event */
		spi_exec(psprintf("ALTER TABLE %s ADD COLUMN %s %s", qstate,
						  quote_identifier(col), seqtype),
				 0, NULL, NULL, NULL, false);
		spi_exec(psprintf("UPDATE %s SET %s = __autocdc_upsert_seq WHERE __autocdc_deleted_at IS NULL",
						  qstate, quote_identifier(col)),
				 0, NULL, NULL, NULL, false);
	}
	autocdc_unbecome(&sw);

	if (added != NIL)
	{
		Oid			argtypes[2] = {OIDOID, TEXTARRAYOID};
		Datum		values[2] = {ObjectIdGetDatum(spec->target),
		list_to_text_array(list_concat_copy(tracked, added))};

		catalog_exec("UPDATE autocdc.target SET partial_columns = $2 "
					 " WHERE target OPERATOR(pg_catalog.=) $1::pg_catalog.regclass",
					 2, argtypes, values, NULL);
	}
}

bool
define_same_oid_lists(List *a, List *b)
{
	ListCell   *la,
			   *lb;

	if (list_length(a) != list_length(b))
		return false;
	forboth(la, a, lb, b)
		if (lfirst_oid(la) != lfirst_oid(lb))
		return false;
	return true;
}

static bool
same_string_sets(List *a, List *b)
{
	ListCell   *lc;

	if (list_length(a) != list_length(b))
		return false;
	foreach(lc, a)
		if (!list_has_string(b, lfirst(lc)))
		return false;
	return true;
}

/* Field types of a composite type, as a list. */
List *
define_composite_field_types(Oid typid)
{
	TupleDesc	desc = lookup_rowtype_tupdesc(typid, -1);
	List	   *result = NIL;

	for (int i = 0; i < desc->natts; i++)
		if (!TupleDescAttr(desc, i)->attisdropped)
			result = lappend_oid(result, TupleDescAttr(desc, i)->atttypid);
	ReleaseTupleDesc(desc);
	return result;
}

/*
 * The columns whose setting sequence the state must keep once this flow
 * joins the target: its partial-update columns, and every column that some
 * flow into the target does not write (for that flow, an upsert leaves the
 * column as it was, so a later delete must know when it was set).
 */
static List *
columns_needing_tracking(FlowSpec *spec)
{
	Oid			argtypes[1] = {OIDOID};
	Datum		values[1] = {ObjectIdGetDatum(spec->target)};
	List	   *all = list_copy(spec->columns);
	List	   *per_flow = list_make1(spec->columns);
	List	   *result = list_copy(spec->ignore_null);
	ListCell   *lc,
			   *lf;

	catalog_exec("SELECT columns FROM autocdc.flow "
				 " WHERE target OPERATOR(pg_catalog.=) $1::pg_catalog.regclass",
				 1, argtypes, values, NULL);
	for (uint64 i = 0; i < SPI_processed; i++)
	{
		bool		isnull;
		List	   *cols = text_array_to_list(SPI_getbinval(SPI_tuptable->vals[i],
															SPI_tuptable->tupdesc, 1, &isnull));

		per_flow = lappend(per_flow, cols);
		foreach(lc, cols)
			if (!list_has_string(all, lfirst(lc)))
			all = lappend(all, lfirst(lc));
	}
	foreach(lc, all)
	{
		foreach(lf, per_flow)
		{
			if (!list_has_string(lfirst(lf), lfirst(lc)) &&
				!list_has_string(result, lfirst(lc)))
				result = lappend(result, lfirst(lc));
		}
	}
	return result;
}

/*
 * Registers the target and its state, or, when other flows already feed
 * it, checks that this one agrees with them (DESIGN §3: several AUTO CDC
 * flows into one target).
 */
static void
register_target(FlowSpec *spec, Oid owner)
{
	Oid			argtypes[1] = {OIDOID};
	Datum		values[1] = {ObjectIdGetDatum(spec->target)};
	bool		isnull;

	catalog_exec("SELECT scd_type, keys, sequence_type::pg_catalog.oid, "
				 "       sequence_composite::pg_catalog.oid, state_table::pg_catalog.oid, partial_columns, "
				 "       track_columns "
				 "  FROM autocdc.target WHERE target OPERATOR(pg_catalog.=) $1::pg_catalog.regclass",
				 1, argtypes, values, NULL);
	if (SPI_processed == 1)
	{
		HeapTuple	tup = SPI_tuptable->vals[0];
		TupleDesc	desc = SPI_tuptable->tupdesc;
		List	   *keys = text_array_to_list(SPI_getbinval(tup, desc, 2, &isnull));
		Oid			seqtype = DatumGetObjectId(SPI_getbinval(tup, desc, 3, &isnull));
		Datum		comp = SPI_getbinval(tup, desc, 4, &isnull);
		Oid			composite = isnull ? InvalidOid : DatumGetObjectId(comp);
		Oid			state = DatumGetObjectId(SPI_getbinval(tup, desc, 5, &isnull));
		List	   *tracked = text_array_to_list(SPI_getbinval(tup, desc, 6, &isnull));
		ListCell   *la,
				   *lb;
		bool		same_keys = list_length(keys) == list_length(spec->keys);
		char	   *tname = get_rel_name(spec->target);

		if (same_keys)
			forboth(la, keys, lb, spec->keys)
				if (strcmp(lfirst(la), lfirst(lb)) != 0)
				same_keys = false;
		if (!same_keys)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("flow \"%s\" must use the keys of the other flows into \"%s\"",
							spec->name, tname),
					 errdetail("Flows into one target agree on keys, SCD type and sequence type.")));
		if (spec->seq_type == RECORDOID && OidIsValid(composite) &&
			define_same_oid_lists(spec->seq_row_types, define_composite_field_types(composite)))
		{
			spec->seq_norm = psprintf("(%s)::%s", spec->seq_norm,
									  type_qualified_name(composite));
			spec->seq_type = composite;
		}
		if (spec->seq_type != seqtype)
			ereport(ERROR,
					(errcode(ERRCODE_DATATYPE_MISMATCH),
					 errmsg("sequence_by of flow \"%s\" is of type %s, but the other flows into \"%s\" sequence by %s",
							spec->name,
							spec->seq_type == RECORDOID ? "record" : format_type_be(spec->seq_type),
							tname, format_type_be(seqtype)),
					 errdetail("Flows into one target share one ordering.")));
		if (spec->scd_type == 2)
		{
			Datum		tc = SPI_getbinval(tup, desc, 7, &isnull);
			List	   *track = isnull ? NIL : text_array_to_list(tc);

			if (!same_string_sets(track, spec->track_columns))
				ereport(ERROR,
						(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						 errmsg("flow \"%s\" must track the history of the columns the other flows into \"%s\" track",
								spec->name, tname),
						 errdetail("Flows into one SCD type 2 target keep one history.")));
			scd2_extend_event_store(spec, state);
		}
		add_state_partial_columns(spec, state, tracked,
								  columns_needing_tracking(spec));
		return;
	}

	/* First flow into this target. */
	{
		Oid			composite = InvalidOid;
		Oid			state;
		Oid			argtypes2[8] = {OIDOID, INT4OID, TEXTARRAYOID, OIDOID, OIDOID, OIDOID,
		TEXTARRAYOID, TEXTARRAYOID};
		Datum		values2[8];
		char		nulls2[8] = {' ', ' ', ' ', ' ', ' ', ' ', ' ', ' '};

		if (spec->seq_type == RECORDOID)
		{
			composite = create_sequence_composite(spec, owner);
			spec->seq_norm = psprintf("(%s)::%s", spec->seq_norm,
									  type_qualified_name(composite));
			spec->seq_type = composite;
		}
		if (spec->scd_type == 2)
		{
			if (spec->target_created)
				scd2_add_history_columns(spec);
			state = scd2_create_event_store(spec, owner);
			scd2_create_as_of(spec, owner);
		}
		else
			state = create_state_table(spec, owner);
		values2[0] = ObjectIdGetDatum(spec->target);
		values2[1] = Int32GetDatum(spec->scd_type);
		values2[2] = list_to_text_array(spec->keys);
		values2[3] = ObjectIdGetDatum(spec->seq_type);
		values2[4] = ObjectIdGetDatum(state);
		values2[5] = ObjectIdGetDatum(composite);
		if (!OidIsValid(composite))
			nulls2[5] = 'n';
		values2[6] = list_to_text_array(NIL);
		values2[7] = spec->track_columns ? list_to_text_array(spec->track_columns) : (Datum) 0;
		if (spec->track_columns == NIL)
			nulls2[7] = 'n';
		catalog_exec("INSERT INTO autocdc.target (target, scd_type, keys, sequence_type, "
					 "  state_table, sequence_composite, partial_columns, track_columns) "
					 "VALUES ($1::pg_catalog.regclass, $2, $3, $4::pg_catalog.regtype, "
					 "  $5::pg_catalog.regclass, $6::pg_catalog.regtype, $7, $8)",
					 8, argtypes2, values2, nulls2);
		add_state_partial_columns(spec, state, NIL, spec->ignore_null);
	}
}

/* The pipeline, created on first use; only its owner adds flows to it. */
static void
ensure_pipeline(FlowSpec *spec)
{
	Oid			owner = catalog_pipeline_owner(spec->pipeline);

	if (!OidIsValid(owner))
	{
		Oid			argtypes[2] = {TEXTOID, OIDOID};
		Datum		values[2] = {CStringGetTextDatum(spec->pipeline),
		ObjectIdGetDatum(GetUserId())};

		catalog_exec("INSERT INTO autocdc.pipeline (name, owner) "
					 "VALUES ($1, $2::pg_catalog.regrole)",
					 2, argtypes, values, NULL);
		return;
	}
	if (!has_privs_of_role(GetUserId(), owner))
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("permission denied to add a flow to pipeline \"%s\"", spec->pipeline),
				 errdetail("The pipeline belongs to role %s.", GetUserNameFromId(owner, false)),
				 errhint("Use a pipeline of your own: pipeline => 'name'.")));
}

/* The SCD type of a target other flows feed, 0 if none does. */
static int
registered_scd_type(Oid relid)
{
	Oid			argtypes[1] = {OIDOID};
	Datum		values[1] = {ObjectIdGetDatum(relid)};

	catalog_exec("SELECT scd_type::pg_catalog.int8 FROM autocdc.target "
				 " WHERE target OPERATOR(pg_catalog.=) $1::pg_catalog.regclass",
				 1, argtypes, values, NULL);
	return SPI_processed == 1 ? (int) spi_int64(0, 1) : 0;
}

void
define_create_flow(FlowSpec *spec)
{
	List	   *names;
	RangeVar   *rv;
	Oid			existing;
	Oid			argtypes[1] = {TEXTOID};
	Datum		values[1] = {CStringGetTextDatum(spec->name)};

	ensure_pipeline(spec);
	catalog_exec("SELECT 1 FROM autocdc.flow WHERE name OPERATOR(pg_catalog.=) $1",
				 1, argtypes, values, NULL);
	if (SPI_processed > 0)
		ereport(ERROR,
				(errcode(ERRCODE_DUPLICATE_OBJECT),
				 errmsg("flow \"%s\" already exists", spec->name),
				 errhint("Give the flow another name with name => '...', or drop it first with autocdc.drop_flow('%s').",
						 spec->name)));

	names = stringToQualifiedNameList(spec->target_name);
	rv = makeRangeVarFromNameList(names);
	existing = RangeVarGetRelid(rv, NoLock, true);
	if (OidIsValid(existing))
	{
		int			scd = registered_scd_type(existing);

		if (scd != 0 && scd != spec->scd_type)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("flow \"%s\" must store SCD type %d like the other flows into \"%s\"",
							spec->name, scd, get_rel_name(existing)),
					 errdetail("Flows into one target agree on keys, SCD type and sequence type.")));
		check_existing_target(spec, existing);
		spi_exec(psprintf("LOCK TABLE %s IN SHARE ROW EXCLUSIVE MODE",
						  rel_qualified_name(existing)), 0, NULL, NULL, NULL, false);
		spec->target = existing;
	}
	prepare_source(spec);
	if (!OidIsValid(existing))
		spec->target = create_target(spec, rv);

	register_target(spec, GetUserId());

	{
		Oid			types[14] = {TEXTOID, TEXTOID, OIDOID, OIDOID, TEXTARRAYOID,
			TEXTOID, INT4OID, TEXTOID, TEXTOID, TEXTARRAYOID, TEXTARRAYOID,
		BOOLOID, TEXTOID, TEXTOID};
		Datum		vals[14];
		char		nulls[14];

		memset(nulls, ' ', sizeof(nulls));
		vals[0] = CStringGetTextDatum(spec->name);
		vals[1] = CStringGetTextDatum(spec->pipeline);
		vals[2] = ObjectIdGetDatum(spec->target);
		vals[3] = ObjectIdGetDatum(spec->source);
		vals[4] = list_to_text_array(spec->keys);
		vals[5] = CStringGetTextDatum(spec->seq_norm);
		vals[6] = Int32GetDatum(spec->scd_type);
		vals[7] = spec->deletes_norm ? CStringGetTextDatum(spec->deletes_norm) : (Datum) 0;
		nulls[7] = spec->deletes_norm ? ' ' : 'n';
		vals[8] = spec->truncates_norm ? CStringGetTextDatum(spec->truncates_norm) : (Datum) 0;
		nulls[8] = spec->truncates_norm ? ' ' : 'n';
		vals[9] = list_to_text_array(spec->columns);
		vals[10] = list_to_text_array(spec->ignore_null);
		vals[11] = BoolGetDatum(spec->once);
		vals[12] = CStringGetTextDatum(spec->incremental ? "incremental" : "full");
		vals[13] = CStringGetTextDatum(spec->options_json);

		catalog_exec(psprintf("INSERT INTO autocdc.flow (name, pipeline, kind, target, source, keys, "
							  "  sequence_by, stored_as_scd_type, apply_as_deletes, apply_as_truncates, "
							  "  columns, ignore_null_columns, once, read_mode, owner, options) "
							  "VALUES ($1, $2, 'auto_cdc', $3::pg_catalog.regclass, $4::pg_catalog.regclass, "
							  "  $5, $6, $7, $8, $9, $10, $11, $12, $13, %u::pg_catalog.oid::pg_catalog.regrole, $14::pg_catalog.jsonb)",
							  GetUserId()),
					 14, types, vals, nulls);
		catalog_exec("INSERT INTO autocdc.checkpoint (flow) VALUES ($1)",
					 1, types, vals, NULL);
	}
}

/*
 * Drops the state (and sequence type) of targets no flow feeds any more,
 * and their registration.  Internal deletion: the objects are autocdc's.
 */
void
define_drop_orphan_targets(void)
{
	List	   *states = NIL,
			   *types = NIL;
	ListCell   *lc;

	catalog_exec("DELETE FROM autocdc.target t WHERE NOT EXISTS "
				 "  (SELECT 1 FROM autocdc.flow f WHERE f.target OPERATOR(pg_catalog.=) t.target) "
				 "RETURNING t.state_table::pg_catalog.oid, t.sequence_composite::pg_catalog.oid",
				 0, NULL, NULL, NULL);
	for (uint64 i = 0; i < SPI_processed; i++)
	{
		bool		isnull;
		Datum		d;

		d = SPI_getbinval(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 1, &isnull);
		states = lappend_oid(states, DatumGetObjectId(d));
		d = SPI_getbinval(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 2, &isnull);
		if (!isnull)
			types = lappend_oid(types, DatumGetObjectId(d));
	}
	foreach(lc, states)
	{
		ObjectAddress addr;

		if (get_rel_name(lfirst_oid(lc)) == NULL)
			continue;			/* went with its target */
		ObjectAddressSet(addr, RelationRelationId, lfirst_oid(lc));
		performDeletion(&addr, DROP_RESTRICT, PERFORM_DELETION_INTERNAL);
	}
	foreach(lc, types)
	{
		ObjectAddress addr;

		if (!SearchSysCacheExists1(TYPEOID, ObjectIdGetDatum(lfirst_oid(lc))))
			continue;
		ObjectAddressSet(addr, TypeRelationId, lfirst_oid(lc));
		performDeletion(&addr, DROP_RESTRICT, PERFORM_DELETION_INTERNAL);
	}
}

/*
 * sql_drop event trigger: a dropped target or source takes its flows with
 * it; targets left without flows lose their state.
 */
Datum
autocdc_on_sql_drop(PG_FUNCTION_ARGS)
{
	Oid			nsp;

	if (!CALLED_AS_EVENT_TRIGGER(fcinfo))
		ereport(ERROR,
				(errcode(ERRCODE_E_R_I_E_EVENT_TRIGGER_PROTOCOL_VIOLATED),
				 errmsg("function autocdc._on_sql_drop must be called as an event trigger")));
	if (!OidIsValid(get_extension_oid("autocdc", true)))
		PG_RETURN_VOID();
	nsp = get_namespace_oid("autocdc", true);
	if (!OidIsValid(nsp) || !OidIsValid(get_relname_relid("flow", nsp)))
		PG_RETURN_VOID();

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	catalog_exec("DELETE FROM autocdc.flow f "
				 " USING pg_catalog.pg_event_trigger_dropped_objects() d "
				 " WHERE d.classid OPERATOR(pg_catalog.=) 'pg_catalog.pg_class'::pg_catalog.regclass "
				 "   AND d.objsubid OPERATOR(pg_catalog.=) 0 "
				 "   AND (f.target::pg_catalog.oid OPERATOR(pg_catalog.=) d.objid "
				 "        OR f.source::pg_catalog.oid OPERATOR(pg_catalog.=) d.objid)",
				 0, NULL, NULL, NULL);
	if (SPI_processed > 0)
		define_drop_orphan_targets();
	SPI_finish();
	PG_RETURN_VOID();
}
