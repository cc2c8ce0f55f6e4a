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

		if (att->attisdropped || strcmp(NameStr(att->attname), AUTOCDC_XID_COLUMN) == 0)
			continue;
		result = lappend(result, pstrdup(NameStr(att->attname)));
	}
	relation_close(rel, AccessShareLock);
	return result;
}

/*
 * Schema evolution: source columns the target lacks are added to it; the
 * others must be assignable.  Runs as the target's owner.
 */
void
acdc_append_evolve_target(Oid source, Oid target)
{
	ListCell   *lc;
	UserSwitch	sw;

	autocdc_become_owner_of(&sw, target);

	foreach(lc, source_columns(source))
	{
		char	   *col = lfirst(lc);
		AttrNumber	satt = get_attnum(source, col);
		AttrNumber	tatt = get_attnum(target, col);
		Oid			stype,
					ttype;
		int32		stypmod;
		Oid			scoll;

		get_atttypetypmodcoll(source, satt, &stype, &stypmod, &scoll);
		if (tatt == InvalidAttrNumber)
		{
			StringInfoData ddl;

			acdc_define_require_trusted_type(stype, autocdc_relation_owner(target),
										psprintf("new source column \"%s\"", col));
			initStringInfo(&ddl);
			appendStringInfo(&ddl, "ALTER TABLE %s ADD COLUMN %s %s",
							 acdc_rel_qualified_name(target), quote_identifier(col),
							 format_type_extended(stype, stypmod,
												  FORMAT_TYPE_TYPEMOD_GIVEN | FORMAT_TYPE_FORCE_QUALIFY));
			acdc_append_collation(&ddl, scoll, stype);
			acdc_spi_exec(ddl.data, 0, NULL, NULL, NULL, false);
			continue;
		}
		ttype = get_atttype(target, tatt);
		if (!can_coerce_type(1, &stype, &ttype, COERCION_ASSIGNMENT))
			ereport(ERROR,
					(errcode(ERRCODE_DATATYPE_MISMATCH),
					 errmsg("column \"%s\" is of type %s in source \"%s\" but of type %s in append target \"%s\"",
							col, format_type_be(stype), get_rel_name(source),
							format_type_be(ttype), get_rel_name(target)),
					 errhint("Make the types assignable, or append from a view that casts the column.")));
	}
	autocdc_unbecome(&sw);
}

void
acdc_append_apply(FlowDef *f, ReadParams *p, FlowCounts *counts)
{
	List	   *cols;
	StringInfoData sql;
	Oid			types[READ_NPARAMS];
	Datum		values[READ_NPARAMS];
	char		nulls[READ_NPARAMS];

	acdc_append_evolve_target(f->source, f->target);
	cols = source_columns(f->source);

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
