/*-------------------------------------------------------------------------
 * collation.c
 *	  Collations of what autocdc derives from a sequence or a key.
 *
 * The history columns, the state's and the event store's sequence
 * columns and the fields of a ROW(...) sequence's composite carry the
 * collation of the sequence_by expression; the state's and event store's
 * key columns carry the target key's, which is the source key's.  The
 * folds' SQL then orders and compares in it without saying so.  Creation
 * refuses an existing target whose columns disagree (define_target.c,
 * define_scd2.c), and each run checks that nothing drifted since: a
 * target made by 0.1.0, which created these columns in the database's
 * default collation, or a source column given another collation.
 *-------------------------------------------------------------------------
 */
#include "collation.h"
#include "source_query.h"

#include "access/htup_details.h"
#include "catalog/namespace.h"
#include "catalog/pg_collation.h"
#include "nodes/nodeFuncs.h"
#include "parser/analyze.h"
#include "parser/parser.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/syscache.h"
#include "utils/typcache.h"

/* The collation a value of the type carries: `collation`, none for a type without. */
Oid
acdc_value_collation(Oid typid, Oid collation)
{
	return type_is_collatable(typid) ? collation : InvalidOid;
}

/*
 * The resolved collation of an analyzed expression autocdc will order by;
 * one whose implicit collations conflict has none, and would fail (or
 * order arbitrarily) later.
 */
Oid
acdc_expr_collation(Node *expr, const char *what)
{
	Oid			collation = acdc_value_collation(exprType(expr), exprCollation(expr));

	if (type_is_collatable(exprType(expr)) && !OidIsValid(collation))
		ereport(ERROR,
				(errcode(ERRCODE_INDETERMINATE_COLLATION),
				 errmsg("could not determine which collation to use for %s", what),
				 errdetail("autocdc orders by it, and its parts have different collations."),
				 errhint("Say which with a COLLATE clause in the expression.")));
	return collation;
}

/* The collation of a column, InvalidOid when it has none or does not exist. */
Oid
acdc_column_collation(Oid relid, const char *col)
{
	AttrNumber	attnum = get_attnum(relid, col);
	Oid			typid;
	int32		typmod;
	Oid			collation;

	if (attnum == InvalidAttrNumber)
		return InvalidOid;
	get_atttypetypmodcoll(relid, attnum, &typid, &typmod, &collation);
	return acdc_value_collation(typid, collation);
}

/* The collation of the sequence as the target's state keeps it. */
Oid
acdc_state_seq_collation(Oid state, int scd_type)
{
	return acdc_column_collation(state, ACDC_KEEPS_EVENTS(scd_type) ? "__autocdc_seq" : "__autocdc_upsert_seq");
}

/* The collations of a composite type's fields, as a list. */
List *
acdc_composite_field_collations(Oid typid)
{
	TupleDesc	desc = lookup_rowtype_tupdesc(typid, -1);
	List	   *result = NIL;

	for (int i = 0; i < desc->natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, i);

		if (!att->attisdropped)
			result = lappend_oid(result, acdc_value_collation(att->atttypid, att->attcollation));
	}
	ReleaseTupleDesc(desc);
	return result;
}

/* A collation's name as SQL, qualified: pg_catalog."default", public.ci. */
static char *
collation_sql_name(Oid collation)
{
	HeapTuple	tup = SearchSysCache1(COLLOID, ObjectIdGetDatum(collation));
	Form_pg_collation coll;
	char	   *result;

	if (!HeapTupleIsValid(tup))
		elog(ERROR, "cache lookup failed for collation %u", collation);
	coll = (Form_pg_collation) GETSTRUCT(tup);
	result = quote_qualified_identifier(get_namespace_name(coll->collnamespace),
										NameStr(coll->collname));
	ReleaseSysCache(tup);
	return result;
}

/* For messages: "en-x-icu" (quoted), or none. */
char *
acdc_collation_text(Oid collation)
{
	if (!OidIsValid(collation))
		return pstrdup("no collation");
	return psprintf("collation \"%s\"", get_collation_name(collation));
}

/* " COLLATE <collation>" for an expression; nothing for none. */
void
acdc_append_collate(StringInfo buf, Oid collation)
{
	if (OidIsValid(collation))
		appendStringInfo(buf, " COLLATE %s", collation_sql_name(collation));
}

/* "ALTER TABLE rel ALTER COLUMN col TYPE type COLLATE c" */
static char *
alter_column_sql(Oid relid, const char *col, Oid collation)
{
	Oid			typid;
	int32		typmod;
	Oid			have;

	get_atttypetypmodcoll(relid, get_attnum(relid, col), &typid, &typmod, &have);
	return psprintf("ALTER TABLE %s ALTER COLUMN %s TYPE %s COLLATE %s",
					acdc_rel_qualified_name(relid), quote_identifier(col),
					format_type_extended(typid, typmod,
										 FORMAT_TYPE_TYPEMOD_GIVEN | FORMAT_TYPE_FORCE_QUALIFY),
					collation_sql_name(collation));
}

/*
 * Creation refuses a column of an existing table whose collation is not
 * its origin's (`what`, in `want`): it would order or match differently.
 * An expression origin can take the column's collation instead.
 */
void
acdc_refuse_collation(const char *what, Oid want, const char *column,
					  Oid relid, Oid have, const char *detail, bool expression)
{
	if (want == have)
		return;
	ereport(ERROR,
			(errcode(ERRCODE_COLLATION_MISMATCH),
			 errmsg("column \"%s\" of \"%s\" has %s, but %s has %s",
					column, get_rel_name(relid), acdc_collation_text(have),
					what, acdc_collation_text(want)),
			 errdetail("%s", detail),
			 !OidIsValid(want) || !OidIsValid(have) ?
			 errhint("Give the column the type of %s.", what) :
			 expression ?
			 errhint("Write %s with COLLATE %s, or give the column its collation: %s;",
					 what, collation_sql_name(have), alter_column_sql(relid, column, want)) :
			 errhint("Give the column the collation of %s: %s;", what,
					 alter_column_sql(relid, column, want))));
}

/* Derived columns found in another collation than their origin's. */
typedef struct Mismatches
{
	StringInfoData detail;
	StringInfoData fix;
	int			n;
} Mismatches;

static void
check_column(Mismatches *m, Oid relid, const char *col, Oid want, const char *origin)
{
	Oid			have;

	if (!OidIsValid(relid) || get_attnum(relid, col) == InvalidAttrNumber)
		return;
	have = acdc_column_collation(relid, col);
	if (have == want || !OidIsValid(want) || !OidIsValid(have))
		return;
	appendStringInfo(&m->detail, "%sColumn \"%s\" of \"%s\" has %s, but %s has %s.",
					 m->n > 0 ? " " : "", col, get_rel_name(relid),
					 acdc_collation_text(have), origin, acdc_collation_text(want));
	appendStringInfo(&m->fix, "%s; ", alter_column_sql(relid, col, want));
	m->n++;
}

/*
 * The sequence_by expression's collation (or, for a ROW(...) sequence,
 * whether its fields' match the composite's), analyzed over the source
 * as the run will evaluate it.
 */
static Oid
analyzed_seq_collation(FlowDef *f, bool *row_mismatch)
{
	char	   *sql = psprintf("SELECT (%s) FROM %s AS __autocdc_src", f->sequence_by,
							   acdc_sq_flow_from(f));
	List	   *raw = raw_parser(sql, RAW_PARSE_DEFAULT);
	Query	   *q = parse_analyze_fixedparams(linitial(raw), sql, NULL, 0, NULL);
	Node	   *expr = (Node *) ((TargetEntry *) linitial(q->targetList))->expr;

	*row_mismatch = false;
	if (IsA(expr, RowExpr) && type_is_rowtype(exprType(expr)) &&
		exprType(expr) != RECORDOID)
	{
		List	   *fields = acdc_composite_field_collations(exprType(expr));
		ListCell   *la,
				   *lf;

		forboth(la, ((RowExpr *) expr)->args, lf, fields)
			if (acdc_expr_collation(lfirst(la), "a field of sequence_by") != lfirst_oid(lf))
			*row_mismatch = true;
		return InvalidOid;
	}
	return acdc_expr_collation(expr, "sequence_by");
}

/*
 * Before a run applies anything: the columns derived from the sequence
 * and the keys carry their origin's collation (see the header comment);
 * otherwise the run refuses, naming what to change.
 */
void
acdc_check_run_collations(FlowDef *f)
{
	Mismatches	m;
	Oid			seq;
	char	   *seq_origin = "the sequence";
	ListCell   *lc;

	/* a bitemporal flow's sequence type was made from its expressions' collations */
	if (f->kind == FLOW_APPEND || !OidIsValid(f->state) || f->scd_type == ACDC_BITEMPORAL)
		return;
	memset(&m, 0, sizeof(m));
	initStringInfo(&m.detail);
	initStringInfo(&m.fix);

	seq = acdc_state_seq_collation(f->state, f->scd_type);
	if (f->sequence_by && OidIsValid(f->source) &&
		(type_is_collatable(f->seq_type) || type_is_rowtype(f->seq_type)))
	{
		bool		row_mismatch;
		Oid			expr = analyzed_seq_collation(f, &row_mismatch);

		if (row_mismatch)
			ereport(ERROR,
					(errcode(ERRCODE_COLLATION_MISMATCH),
					 errmsg("the fields of type %s do not have the collations of flow \"%s\"'s sequence_by",
							format_type_be(f->seq_type), f->name),
					 errdetail("The type orders the versions of target \"%s\" otherwise than sequence_by orders its events (autocdc 0.1.0 created it in the database's default collation).",
							   get_rel_name(f->target)),
					 errhint("Drop the target's flows and the target and create them again: SELECT autocdc.drop_flow(%s);",
							 quote_literal_cstr(f->name))));
		if (type_is_collatable(f->seq_type))
		{
			seq = expr;
			seq_origin = "sequence_by";
			check_column(&m, f->state, f->scd_type == 2 ? "__autocdc_seq" : "__autocdc_upsert_seq",
						 seq, seq_origin);
		}
	}
	if (f->scd_type == 2)
	{
		check_column(&m, f->target, "__start_at", seq, seq_origin);
		check_column(&m, f->target, "__end_at", seq, seq_origin);
	}
	else
	{
		check_column(&m, f->state, "__autocdc_delete_seq", seq, seq_origin);
		if (f->seq_in_target)
			check_column(&m, f->target, ACDC_SEQUENCE_COLUMN, seq, seq_origin);
		foreach(lc, f->state_partial)
			check_column(&m, f->state, lfirst(lc), seq, seq_origin);
	}
	foreach(lc, f->keys)
	{
		Oid			key = acdc_column_collation(f->target, lfirst(lc));
		char	   *origin = psprintf("the target's key \"%s\"", (char *) lfirst(lc));

		check_column(&m, f->state, lfirst(lc), key, origin);
		/* (a query's result has no column to alter: creation checked it) */
		if (f->kind == FLOW_AUTO_CDC && !f->source_query)
			check_column(&m, f->source, lfirst(lc), key, origin);
	}
	if (m.n > 0)
		ereport(ERROR,
				(errcode(ERRCODE_COLLATION_MISMATCH),
				 errmsg("flow \"%s\": columns autocdc derives from the sequence or the keys of target \"%s\" do not carry their collation",
						f->name, get_rel_name(f->target)),
				 errdetail("%s They would order or match events differently from the sequence and the keys (autocdc 0.1.0 created such columns in the database's default collation).",
						   m.detail.data),
				 errhint("Give them their collation, then rebuild the target: %sSELECT * FROM autocdc.run(%s, full_refresh => true);",
						 m.fix.data, quote_literal_cstr(f->pipeline))));
}
