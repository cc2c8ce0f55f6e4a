/*-------------------------------------------------------------------------
 * append.c
 *	  Append flows: the rows a run reads from the source are inserted into
 *	  the target by column name.  A column the source gained is added to the
 *	  target (nullable) first; a column whose type the target cannot take is
 *	  an error.
 *-------------------------------------------------------------------------
 */
#include "append.h"
#include "define.h"
#include "progress.h"
#include "source_query.h"

#include "access/relation.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "parser/parse_coerce.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"

/* The columns an append flow copies: all of the source's but autocdc's own. */
static List *
source_columns(Oid source)
{
	Relation	rel = relation_open(source, AccessShareLock);
	TupleDesc	desc = RelationGetDescr(rel);
	List	   *result = NIL;

	for (int i = 0; i < desc->natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, i);
		SourceColumn *c;

		if (att->attisdropped || strcmp(NameStr(att->attname), AUTOCDC_XID_COLUMN) == 0)
			continue;
		c = palloc0(sizeof(SourceColumn));
		c->name = pstrdup(NameStr(att->attname));
		c->typid = att->atttypid;
		c->typmod = att->atttypmod;
		c->collation = att->attcollation;
		result = lappend(result, c);
	}
	relation_close(rel, AccessShareLock);
	return result;
}

/*
 * Schema evolution: source columns the target lacks are added to it; the
 * others must be assignable.  Runs as the target's owner.  `columns` are
 * the source's (SourceColumn), `label` names it in messages.
 */
void
acdc_append_evolve_target(List *columns, const char *label, Oid target)
{
	ListCell   *lc;
	UserSwitch	sw;

	autocdc_become_owner_of(&sw, target);

	foreach(lc, columns)
	{
		SourceColumn *c = lfirst(lc);
		char	   *col = c->name;
		AttrNumber	tatt = get_attnum(target, col);
		Oid			stype = c->typid,
					ttype;

		if (tatt == InvalidAttrNumber)
		{
			StringInfoData ddl;

			acdc_define_require_trusted_type(stype, autocdc_relation_owner(target),
										psprintf("new source column \"%s\"", col));
			initStringInfo(&ddl);
			appendStringInfo(&ddl, "ALTER TABLE %s ADD COLUMN %s %s",
							 acdc_rel_qualified_name(target), quote_identifier(col),
							 format_type_extended(stype, c->typmod,
												  FORMAT_TYPE_TYPEMOD_GIVEN | FORMAT_TYPE_FORCE_QUALIFY));
			acdc_append_collation(&ddl, c->collation, stype);
			acdc_spi_exec(ddl.data, 0, NULL, NULL, NULL, false);
			continue;
		}
		ttype = get_atttype(target, tatt);
		if (!can_coerce_type(1, &stype, &ttype, COERCION_ASSIGNMENT))
			ereport(ERROR,
					(errcode(ERRCODE_DATATYPE_MISMATCH),
					 errmsg("column \"%s\" is of type %s in %s but of type %s in append target \"%s\"",
							col, format_type_be(stype), label,
							format_type_be(ttype), get_rel_name(target)),
					 errhint("Make the types assignable, or append from a source query that casts the column.")));
	}
	autocdc_unbecome(&sw);
}

/* The columns a flow's source gives: its table's, or its query's result. */
List *
acdc_append_source_columns(FlowDef *f)
{
	if (f->source_query)
		return acdc_sq_stored_columns(f->source, f->source_query, InvalidOid, "source_query");
	return source_columns(f->source);
}

/* How messages name a flow's source. */
char *
acdc_append_source_label(Oid source, const char *query)
{
	if (query)
		return pstrdup("the source query");
	return psprintf("source \"%s\"", get_rel_name(source));
}

void
acdc_append_apply(FlowDef *f, ReadParams *p, FlowCounts *counts)
{
	List	   *cols;
	StringInfoData sql;
	Oid			types[READ_NPARAMS];
	Datum		values[READ_NPARAMS];
	char		nulls[READ_NPARAMS];

	{
		List	   *scols = acdc_append_source_columns(f);
		ListCell   *lc;

		acdc_append_evolve_target(scols, acdc_append_source_label(f->source, f->source_query),
								  f->target);
		cols = NIL;
		foreach(lc, scols)
			cols = lappend(cols, ((SourceColumn *) lfirst(lc))->name);
	}

	initStringInfo(&sql);
	appendStringInfo(&sql, "INSERT INTO %s (", acdc_rel_qualified_name(f->target));
	acdc_append_column_list(&sql, cols, NULL);
	appendStringInfoString(&sql, ") SELECT ");
	acdc_append_column_list(&sql, cols, SRC_ALIAS);
	acdc_read_append_from(&sql, f, p);

	acdc_read_params_arrays(p, types, values, nulls);
	acdc_progress_phase(ACDC_PHASE_APPENDING);
	acdc_spi_exec(sql.data, READ_NPARAMS, types, values, nulls, false);
	counts->read = SPI_processed;
	counts->upserted = SPI_processed;
	acdc_progress_add_events(counts->read);
	acdc_progress_add_rows(counts->upserted);
}
