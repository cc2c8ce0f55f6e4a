/*-------------------------------------------------------------------------
 * define_target.c
 *	  The objects a flow definition makes or checks: the target (created
 *	  from the source's columns, or checked when it exists), the source's
 *	  read position column and trigger, the SCD 1 state table and the
 *	  composite type of a ROW(...) sequence.
 *-------------------------------------------------------------------------
 */
#include "define.h"
#include "source_query.h"
#include "append.h"
#include "collation.h"
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
#include "access/transam.h"
#include "commands/event_trigger.h"
#include "commands/extension.h"
#include "commands/trigger.h"
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

#if PG_VERSION_NUM >= 160000
#define owns_relation(relid) object_ownercheck(RelationRelationId, (relid), GetUserId())
#define pg_proc_aclcheck(fn, role, mode) object_aclcheck(ProcedureRelationId, (fn), (role), (mode))
#else
#define owns_relation(relid) pg_class_ownercheck((relid), GetUserId())
#endif

char *
acdc_type_with_typmod(Oid typid, int32 typmod)
{
	return format_type_extended(typid, typmod,
								FORMAT_TYPE_TYPEMOD_GIVEN | FORMAT_TYPE_FORCE_QUALIFY);
}

void
acdc_append_collation(StringInfo buf, Oid collation, Oid typid)
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

void
acdc_define_require_owner(Oid relid)
{
	if (!owns_relation(relid))
		aclcheck_error(ACLCHECK_NOT_OWNER, OBJECT_TABLE, get_rel_name(relid));
}

/*
 * A temporary table dies with its session while the flow would stay, and
 * its name and contents are the session's own: no flow reads or writes one.
 */
void
acdc_define_refuse_temporary(Oid relid, const char *what)
{
	if (isAnyTempNamespace(get_rel_namespace(relid)))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("a flow %s cannot be a temporary table", what),
				 errdetail("Table \"%s\" is temporary; it goes away with its session, the flow would not.",
						   get_rel_name(relid)),
				 errhint("Use an ordinary (or unlogged) table.")));
}

/*
 * A flow runs with the rights of its target's owner (README, Security), who
 * must therefore be able to read what the flow reads.
 */
void
acdc_define_require_run_access(FlowSpec *spec)
{
	Oid			runner = autocdc_relation_owner(spec->target);
	AclResult	acl;
	Oid			vtype = spec->kind == FLOW_SNAPSHOT ? spec->seq_type : InvalidOid;

	/* a query's relations, each (the stream's is among them) */
	if (spec->source_query)
		acdc_sq_require_select(spec->source, spec->source_query, vtype, runner);
	if (spec->version_query)
		acdc_sq_require_select(InvalidOid, spec->version_query, vtype, runner);
	if (OidIsValid(spec->source) && !spec->source_query)
	{
		acl = pg_class_aclcheck(spec->source, runner, ACL_SELECT);
		if (acl != ACLCHECK_OK)
			ereport(ERROR,
					(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
					 errmsg("role \"%s\", the owner of target \"%s\", may not read source \"%s\"",
							GetUserNameFromId(runner, false), get_rel_name(spec->target),
							get_rel_name(spec->source)),
					 errdetail("A flow runs with the rights of its target's owner."),
					 errhint("GRANT SELECT ON %s TO %s;", acdc_rel_qualified_name(spec->source),
							 quote_identifier(GetUserNameFromId(runner, false)))));
	}
	if (OidIsValid(spec->source_function))
	{
		acl = pg_proc_aclcheck(spec->source_function, runner, ACL_EXECUTE);
		if (acl != ACLCHECK_OK)
			ereport(ERROR,
					(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
					 errmsg("role \"%s\", the owner of target \"%s\", may not execute %s",
							GetUserNameFromId(runner, false), get_rel_name(spec->target),
							format_procedure(spec->source_function)),
					 errdetail("A flow runs with the rights of its target's owner."),
					 errhint("GRANT EXECUTE ON FUNCTION %s TO %s;",
							 format_procedure_qualified(spec->source_function),
							 quote_identifier(GetUserNameFromId(runner, false)))));
	}
}

/*
 * Writing a value of a type runs code of whoever made its parts: a domain's
 * CHECK and DEFAULT, a composite's fields, a range's subtype, an array's
 * element.  autocdc writes its columns as the target's owner (`runner`),
 * so a column it creates, and the sequence it casts, may only be of types
 * whose owners hold that role's privileges (built-in types, the runner's
 * own, a superuser's); otherwise one role's code would run with another's
 * rights.
 */
void
acdc_define_require_trusted_type(Oid typid, Oid runner, const char *what)
{
	HeapTuple	tup;
	Form_pg_type typ;
	char		typtype;
	Oid			owner;

	if (typid < FirstNormalObjectId)
		return;
	tup = SearchSysCache1(TYPEOID, ObjectIdGetDatum(typid));
	if (!HeapTupleIsValid(tup))
		elog(ERROR, "cache lookup failed for type %u", typid);
	typ = (Form_pg_type) GETSTRUCT(tup);
	typtype = typ->typtype;
	owner = typ->typowner;
	ReleaseSysCache(tup);

	if (typtype != TYPTYPE_ENUM && !has_privs_of_role(owner, runner))
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("%s is of type %s, which belongs to role \"%s\"",
						what, format_type_be(typid), GetUserNameFromId(owner, false)),
				 errdetail("autocdc writes it as role \"%s\", the target's owner, and a type's checks and defaults run with the rights of whoever writes it.",
						   GetUserNameFromId(runner, false)),
				 errhint("Use a type of the target's owner, or cast the column to a built-in type in a source_query over the source.")));
	if (OidIsValid(get_element_type(typid)))
		acdc_define_require_trusted_type(get_element_type(typid), runner, what);
	else if (typtype == TYPTYPE_DOMAIN)
		acdc_define_require_trusted_type(getBaseType(typid), runner, what);
	else if (typtype == TYPTYPE_RANGE)
		acdc_define_require_trusted_type(get_range_subtype(typid), runner, what);
	else if (typtype == TYPTYPE_MULTIRANGE)
		acdc_define_require_trusted_type(get_multirange_range(typid), runner, what);
	else if (typtype == TYPTYPE_COMPOSITE)
	{
		TupleDesc	desc = lookup_rowtype_tupdesc(typid, -1);

		for (int i = 0; i < desc->natts; i++)
			if (!TupleDescAttr(desc, i)->attisdropped)
				acdc_define_require_trusted_type(TupleDescAttr(desc, i)->atttypid, runner, what);
		ReleaseTupleDesc(desc);
	}
}

/* Creates the target from the source's columns, keys as primary key. */
Oid
acdc_define_create_target(FlowSpec *spec, RangeVar *rv)
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
		SourceColumn *c = acdc_define_source_column(spec, lfirst(lc));

		acdc_define_require_trusted_type(c->typid, GetUserId(),
									psprintf("column \"%s\"", c->name));
		appendStringInfo(&sql, "%s %s", quote_identifier(c->name),
						 acdc_type_with_typmod(c->typid, c->typmod));
		acdc_append_collation(&sql, c->collation, c->typid);
		appendStringInfoString(&sql, ", ");
	}
	if (spec->scd_type == 1)
	{
		appendStringInfoString(&sql, "PRIMARY KEY (");
		acdc_append_column_list(&sql, spec->keys, NULL);
		appendStringInfoString(&sql, "))");
	}
	else if (spec->scd_type == 0)
	{
		/* an append target: rows as they come */
		sql.len -= 2;
		sql.data[sql.len] = '\0';
		appendStringInfoChar(&sql, ')');
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
	acdc_spi_exec(sql.data, 0, NULL, NULL, NULL, false);
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

typedef struct UniqueColumns
{
	List	   *columns;		/* all must be in the index */
	List	   *partition;		/* the others it may hold */
} UniqueColumns;

/*
 * A valid unique index on the columns, without expressions: on exactly
 * them, or on a partitioned table on them and columns of its partition
 * keys, which PostgreSQL requires in its unique indexes (the columns are
 * then unique as autocdc writes the table, not by the index).
 */
static bool
is_unique_on_keys(HeapTuple tup, Form_pg_index idx, Oid relid, void *arg)
{
	UniqueColumns *want = arg;
	List	   *found = NIL;

	if (!idx->indisunique || !idx->indisvalid ||
		!heap_attisnull(tup, Anum_pg_index_indexprs, NULL) ||
		!heap_attisnull(tup, Anum_pg_index_indpred, NULL))
		return false;
	for (int i = 0; i < idx->indnkeyatts; i++)
	{
		char	   *att = get_attname(relid, idx->indkey.values[i], true);

		if (att != NULL && acdc_list_has_string(want->columns, att))
		{
			if (!acdc_list_has_string(found, att))
				found = lappend(found, att);
		}
		else if (att == NULL || !acdc_list_has_string(want->partition, att))
			return false;
	}
	return list_length(found) == list_length(want->columns);
}

bool
acdc_define_has_unique_index(Oid relid, List *columns)
{
	UniqueColumns want;
	bool		expr;

	want.columns = columns;
	want.partition = acdc_partition_key_columns(relid, &expr);
	return any_index(relid, is_unique_on_keys, &want);
}

/*
 * The hint of a target without a unique index on "columns": the index to
 * create, with the partition keys' columns on a partitioned table.
 */
char *
acdc_define_unique_index_hint(Oid relid, List *columns)
{
	bool		expr;
	List	   *part = acdc_partition_key_columns(relid, &expr);
	List	   *all = list_copy(columns);
	StringInfoData cols;
	ListCell   *lc;

	if (expr)
		return pstrdup("Partition the target by columns: a unique index cannot include a partition key expression.");
	foreach(lc, part)
		if (!acdc_list_has_string(all, lfirst(lc)))
			all = lappend(all, lfirst(lc));
	initStringInfo(&cols);
	acdc_append_column_list(&cols, all, NULL);
	if (part != NIL)
		return psprintf("Create one (on a partitioned table it holds the partition key's columns too): "
						"CREATE UNIQUE INDEX ON %s (%s);", acdc_rel_qualified_name(relid), cols.data);
	return psprintf("Create one: CREATE UNIQUE INDEX ON %s (%s);", acdc_rel_qualified_name(relid), cols.data);
}

/* "name type [COLLATE c]" of a column of `relid`, for DDL. */
char *
acdc_define_column_ddl(Oid relid, const char *col)
{
	StringInfoData buf;
	Oid			typid;
	int32		typmod;
	Oid			coll;

	get_atttypetypmodcoll(relid, get_attnum(relid, col), &typid, &typmod, &coll);
	initStringInfo(&buf);
	appendStringInfo(&buf, "%s %s", quote_identifier(col), acdc_type_with_typmod(typid, typmod));
	acdc_append_collation(&buf, coll, typid);
	return buf.data;
}

/* The sequence's type for a column autocdc creates, with its collation. */
char *
acdc_define_seq_column_type(FlowSpec *spec)
{
	StringInfoData buf;

	initStringInfo(&buf);
	appendStringInfoString(&buf, acdc_type_qualified_name(spec->seq_type));
	acdc_append_collation(&buf, spec->seq_coll, spec->seq_type);
	return buf.data;
}

/*
 * A flow joining a registered target orders as the flows before it: the
 * state's sequence column, or the fields of the ROW(...) sequence's type,
 * carry their collation.
 */
void
acdc_define_check_seq_collation(FlowSpec *spec, Oid state, Oid composite)
{
	Oid			have = acdc_state_seq_collation(state, spec->scd_type);
	Oid			want = spec->seq_coll;

	if (OidIsValid(composite) && OidIsValid(get_typ_typrelid(composite)))
	{
		ListCell   *la,
				   *lb;
		List	   *fields = acdc_composite_field_collations(composite);

		if (spec->seq_row_colls == NIL)
			return;				/* not a ROW(...): its type was checked */
		forboth(la, spec->seq_row_colls, lb, fields)
		{
			if (lfirst_oid(la) == lfirst_oid(lb))
				continue;
			have = lfirst_oid(lb);
			want = lfirst_oid(la);
			break;
		}
	}
	if (have != want)
		ereport(ERROR,
				(errcode(ERRCODE_COLLATION_MISMATCH),
				 errmsg("sequence_by of flow \"%s\" orders by %s, but the other flows into \"%s\" by %s",
						spec->name, acdc_collation_text(want), get_rel_name(spec->target),
						acdc_collation_text(have)),
				 errdetail("Flows into one target share one ordering."),
				 OidIsValid(have) ?
				 errhint("Write the sequence (or its fields) with COLLATE \"%s\".", get_collation_name(have)) : 0));
}

static void check_scd_target(FlowSpec *spec, Oid relid);

void
acdc_define_check_existing_target(FlowSpec *spec, Oid relid)
{
	if (spec->kind == FLOW_APPEND)
	{
		char		relkind = get_rel_relkind(relid);

		if (relkind != RELKIND_RELATION && relkind != RELKIND_PARTITIONED_TABLE)
			ereport(ERROR,
					(errcode(ERRCODE_WRONG_OBJECT_TYPE),
					 errmsg("target \"%s\" is not a table", get_rel_name(relid))));
		if (relid == spec->source)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("a flow cannot read from its own target \"%s\"", get_rel_name(relid))));
		acdc_append_evolve_target(spec->source_columns,
								  acdc_append_source_label(spec->source, spec->source_query),
								  relid);
		return;
	}
	check_scd_target(spec, relid);
}

/* An existing AUTO CDC target must be ours to write and fit the flow's columns. */
static void
check_scd_target(FlowSpec *spec, Oid relid)
{
	char		relkind = get_rel_relkind(relid);
	char	   *relname = get_rel_name(relid);
	List	   *all = list_concat_copy(spec->keys, spec->columns);
	ListCell   *lc;

	if (relkind != RELKIND_RELATION && relkind != RELKIND_PARTITIONED_TABLE)
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("target \"%s\" is not a table", relname)));
	if (relid == spec->source)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("a flow cannot read from its own target \"%s\"", relname)));

	foreach(lc, all)
	{
		SourceColumn *c = acdc_define_source_column(spec, lfirst(lc));
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
					 errmsg("column \"%s\" is of type %s in %s but of type %s in target \"%s\"",
							c->name, format_type_be(c->typid),
							acdc_append_source_label(spec->source, spec->source_query),
							format_type_be(ttype), relname),
					 errhint("Make the types assignable, or leave the column out of the flow.")));
		if (acdc_list_has_string(spec->keys, c->name))
			acdc_refuse_collation(spec->source_query ?
								  psprintf("key \"%s\" of the source query", c->name) :
								  psprintf("key \"%s\" of \"%s\"", c->name,
										   get_rel_name(spec->columns_rel)),
								  acdc_value_collation(c->typid, c->collation), c->name, relid,
								  acdc_column_collation(relid, c->name),
								  "The target's unique index matches keys in the collation of its column; the flow would match them in the source's.",
								  false);
	}
	if (spec->scd_type == ACDC_BITEMPORAL)
		acdc_bt_check_existing_target(spec, relid);
	else if (spec->scd_type == 2)
		acdc_scd2_check_existing_target(spec, relid);
	else if (!acdc_define_has_unique_index(relid, spec->keys))
	{
		StringInfoData cols;

		initStringInfo(&cols);
		acdc_append_column_list(&cols, spec->keys, NULL);
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_TABLE_DEFINITION),
				 errmsg("target \"%s\" has no unique index on the keys (%s)", relname, cols.data),
				 errdetail("An SCD type 1 target holds one row per key."),
				 errhint("%s", acdc_define_unique_index_hint(relid, spec->keys))));
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
 * transaction, its default, its index and the trigger that guards it
 * (stamp.c), whichever are missing (CREATE TABLE ... (LIKE source)
 * copies the column alone).  Rows already there get the stamp '1' with the
 * new column: the first run reads them, no later one.  Only the table's owner
 * may do this.
 */
void
acdc_define_prepare_source(FlowSpec *spec)
{
	AttrNumber	attnum;
	StringInfoData sql;
	char	   *qname;
	bool		need_column,
				need_default,
				need_index,
				need_trigger;
	UserSwitch	sw;

	if (!spec->incremental)
		return;
	qname = acdc_rel_qualified_name(spec->source);
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
				 errdetail("autocdc gives a table the column %s (indexed, guarded by the trigger %s) the first time it becomes a source, and only its owner may do that.",
						   AUTOCDC_XID_COLUMN, AUTOCDC_STAMP_TRIGGER),
				 errhint("Ask the table's owner to create a flow from it first.")));

	initStringInfo(&sql);
	if (need_column)
		appendStringInfo(&sql, "ALTER TABLE %s ADD COLUMN %s pg_catalog.xid8 DEFAULT %s; ",
						 qname, AUTOCDC_XID_COLUMN, quote_literal_cstr(AUTOCDC_XID_BEFORE));
	if (need_default)
		appendStringInfo(&sql, "ALTER TABLE %s ALTER COLUMN %s SET DEFAULT autocdc._stamp(); ",
						 qname, AUTOCDC_XID_COLUMN);
	if (need_index)
		appendStringInfo(&sql, "%s ", acdc_stamp_index_sql(qname));
	/* ALWAYS: rows applied by logical replication are checked too */
	if (need_trigger)
		appendStringInfo(&sql, "%s ", acdc_stamp_trigger_sql(qname));
	autocdc_become_owner_of(&sw, spec->source);
	acdc_spi_exec(sql.data, 0, NULL, NULL, NULL, false);
	autocdc_unbecome(&sw);
}

/* Makes `obj` go away with the target (DROP TABLE target drops it too). */
void
acdc_define_depend_on_target(Oid classid, Oid objid, Oid target)
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
acdc_define_free_name(char *name, const char *prefix, Oid target, bool type)
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

Oid
acdc_define_create_sequence_composite(FlowSpec *spec, Oid owner)
{
	StringInfoData sql;
	char		tname[NAMEDATALEN];
	ListCell   *lt,
			   *lm;
	int			i = 1;
	UserSwitch	sw;
	Oid			typid;

	acdc_define_free_name(tname, "__autocdc_seq", spec->target, true);
	initStringInfo(&sql);
	appendStringInfo(&sql, "CREATE TYPE autocdc.%s AS (", quote_identifier(tname));
	forboth(lt, spec->seq_row_types, lm, spec->seq_row_typmods)
	{
		appendStringInfo(&sql, "%sf%d %s", i > 1 ? ", " : "", i,
						 acdc_type_with_typmod(lfirst_oid(lt), lfirst_int(lm)));
		/* a field orders in the collation of its expression */
		acdc_append_collation(&sql, list_nth_oid(spec->seq_row_colls, i - 1), lfirst_oid(lt));
		i++;
	}
	appendStringInfo(&sql, "); ALTER TYPE autocdc.%s OWNER TO %s",
					 quote_identifier(tname),
					 quote_identifier(GetUserNameFromId(owner, false)));
	autocdc_become(&sw, autocdc_extension_owner(), false);
	acdc_spi_exec(sql.data, 0, NULL, NULL, NULL, false);
	autocdc_unbecome(&sw);
	typid = GetSysCacheOid2(TYPENAMENSP, Anum_pg_type_oid,
							CStringGetDatum(tname),
							ObjectIdGetDatum(get_namespace_oid("autocdc", false)));
	/* no dependency on the target, whose columns use it: see drop_deps.c */
	return typid;
}

/*
 * The state table: per key, the sequence of the last upsert and of the last
 * delete (the tombstone), when the key died, and for each partial-update
 * column the sequence of the event that set its value.
 */
Oid
acdc_define_create_state_table(FlowSpec *spec, Oid owner)
{
	StringInfoData sql;
	char		sname[NAMEDATALEN];
	char	   *seqtype = acdc_define_seq_column_type(spec);

	initStringInfo(&sql);
	acdc_define_aux_table_head(&sql, spec, "__autocdc_state", sname);
	appendStringInfo(&sql,
					 "__autocdc_upsert_seq %s, __autocdc_delete_seq %s, "
					 "__autocdc_deleted_at pg_catalog.timestamptz, PRIMARY KEY (",
					 seqtype, seqtype);
	acdc_append_column_list(&sql, spec->keys, NULL);
	/*
	 * Half empty: most runs update most of their keys' rows, in place (HOT).
	 * No index on __autocdc_deleted_at (acdc_scd1_purge_tombstones).
	 */
	appendStringInfoString(&sql, ")) WITH (fillfactor = 50)");
	return acdc_define_create_aux_table(spec, sql.data, sname, "state", owner);
}

/* Every row of the target counts as written by hand: no applied upsert. */
static void
forget_sequences(Oid relid)
{
	UserSwitch	sw;

	autocdc_become_owner_of(&sw, relid);
	acdc_spi_exec(psprintf("UPDATE %s SET %s = NULL WHERE %s IS NOT NULL",
						   acdc_rel_qualified_name(relid), ACDC_SEQUENCE_COLUMN,
						   ACDC_SEQUENCE_COLUMN),
				  0, NULL, NULL, NULL, false);
	autocdc_unbecome(&sw);
}

/*
 * An SCD 1 target made by 0.2.0 keeps the sequence of each key's applied
 * upsert in __autocdc_sequence (doc/design.md §3.1), added for the first
 * flow into it as the target's owner.  One the target has already must
 * order as the sequence does; the flows after the first need it there.
 * The first flow finds there what the flows of an earlier registration
 * applied (their last one was dropped): unless it starts from now (a
 * re-install, over the same sources), its first run reads from the
 * beginning, and those sequences would make its events late (a snapshot's
 * versions start again at 0), so the rows count as written by hand.
 */
void
acdc_define_sequence_column(FlowSpec *spec, bool first)
{
	Oid			relid = spec->target;
	AttrNumber	att = get_attnum(relid, ACDC_SEQUENCE_COLUMN);
	UserSwitch	sw;

	if (att == InvalidAttrNumber && !first)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_COLUMN),
				 errmsg("SCD type 1 target \"%s\" has no column %s", get_rel_name(relid),
						ACDC_SEQUENCE_COLUMN),
				 errdetail("It holds the sequence of each row's last applied upsert."),
				 errhint("Drop the target's flows and create them again; their first run rebuilds the target.")));
	if (att != InvalidAttrNumber)
	{
		if (get_atttype(relid, att) != spec->seq_type)
			ereport(ERROR,
					(errcode(ERRCODE_DATATYPE_MISMATCH),
					 errmsg("%s of \"%s\" is of type %s, but sequence_by is of type %s",
							ACDC_SEQUENCE_COLUMN, get_rel_name(relid),
							format_type_be(get_atttype(relid, att)), format_type_be(spec->seq_type))));
		if (spec->seq_row_colls == NIL)
			acdc_refuse_collation("sequence_by", spec->seq_coll, ACDC_SEQUENCE_COLUMN, relid,
								  acdc_column_collation(relid, ACDC_SEQUENCE_COLUMN),
								  "The column orders upserts as the sequence orders events.", true);
		if (first && !spec->start_now)
			forget_sequences(relid);
		return;
	}
	autocdc_become_owner_of(&sw, relid);
	acdc_spi_exec(psprintf("ALTER TABLE %s ADD COLUMN %s %s", acdc_rel_qualified_name(relid),
					  ACDC_SEQUENCE_COLUMN, acdc_define_seq_column_type(spec)),
			 0, NULL, NULL, NULL, false);
	autocdc_unbecome(&sw);
}

/*
 * Starts the DDL of an auxiliary table of the target: "CREATE TABLE
 * autocdc.<free name> (<key> NOT NULL, ...".  The name goes to sname;
 * returns it qualified and quoted.
 */
char *
acdc_define_aux_table_head(StringInfo sql, FlowSpec *spec, const char *prefix,
					  char *sname)
{
	char	   *qname;
	ListCell   *lc;

	acdc_define_free_name(sname, prefix, spec->target, false);
	qname = quote_qualified_identifier("autocdc", sname);
	appendStringInfo(sql, "CREATE TABLE %s (", qname);
	foreach(lc, spec->keys)
		appendStringInfo(sql, "%s NOT NULL, ",
						 acdc_define_column_ddl(spec->target, lfirst(lc)));
	return qname;
}

/*
 * Runs the DDL of an auxiliary table of the target (in schema autocdc,
 * where only the extension owner may create), gives it to the target's
 * owner, and makes it go with the target.
 */
Oid
acdc_define_create_aux_table(FlowSpec *spec, const char *ddl, const char *name,
						const char *what, Oid owner)
{
	char	   *qname = quote_qualified_identifier("autocdc", name);
	UserSwitch	sw;
	Oid			relid;

	autocdc_become(&sw, autocdc_extension_owner(), false);
	acdc_spi_exec(ddl, 0, NULL, NULL, NULL, false);
	acdc_spi_exec(psprintf("ALTER TABLE %s OWNER TO %s; COMMENT ON TABLE %s IS %s",
					  qname, quote_identifier(GetUserNameFromId(owner, false)), qname,
					  quote_literal_cstr(psprintf("autocdc %s of %s", what,
												  acdc_rel_qualified_name(spec->target)))),
			 0, NULL, NULL, NULL, false);
	autocdc_unbecome(&sw);
	relid = get_relname_relid(name, get_namespace_oid("autocdc", false));
	acdc_define_depend_on_target(RelationRelationId, relid, spec->target);
	return relid;
}
