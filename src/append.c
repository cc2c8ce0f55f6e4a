/*-------------------------------------------------------------------------
 * append.c
 *	  Append flows: the rows a run reads from the source are inserted into
 *	  the target by column name.  A column the source gained is added to the
 *	  target (nullable) first; a column whose type the target cannot take is
 *	  an error.  With expectations, the rows read pass through them first
 *	  (append_checked).
 *-------------------------------------------------------------------------
 */
#include "append.h"
#include "define.h"
#include "expect.h"
#include "relation.h"
#include "progress.h"
#include "source_query.h"

#include "access/relation.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "parser/parse_coerce.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
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

/* Reads the rows with their expectations' results; keeps those that pass. */
typedef struct AppendReceiver
{
	DestReceiver pub;
	FlowDef    *flow;
	List	   *cols;
	MemoryContext cxt;			/* outlives the read statement */
	MemoryContext row_cxt;		/* reset after each row dropped */
	BatchRelation rows;			/* the rows kept: the copied columns */
	int			in_row_att;		/* the source row, or -1 */
	int			xatt;			/* the first expectation's result */
	int64		nread;
	Expectation *failed;		/* the first fail expectation a row failed */
	char	   *failed_row;
} AppendReceiver;

#define APPEND_ROWS_RELATION "__autocdc_rows"
#define APPEND_ROW_NAME_COLUMNS 3	/* a failed row is named by its first columns */

static void
append_startup(DestReceiver *self, int operation, TupleDesc typeinfo)
{
	AppendReceiver *r = (AppendReceiver *) self;
	int			ncols = list_length(r->cols);
	MemoryContext old = MemoryContextSwitchTo(r->cxt);
	TupleDesc	desc = CreateTemplateTupleDesc(ncols);

	for (int i = 0; i < ncols; i++)
		TupleDescCopyEntry(desc, i + 1, typeinfo, i + 1);
	r->xatt = typeinfo->natts - list_length(r->flow->expectations);
	r->in_row_att = acdc_expect_has_row(r->flow) ? r->xatt - 1 : -1;
	acdc_batch_relation_begin(&r->rows, APPEND_ROWS_RELATION, desc);
	MemoryContextSwitchTo(old);
}

/* "row (a, b)=(1, x)": its first columns */
static char *
row_text(AppendReceiver *r, TupleTableSlot *slot)
{
	StringInfoData names,
				vals;
	ListCell   *lc;
	int			i = 0;

	initStringInfo(&names);
	initStringInfo(&vals);
	foreach(lc, r->cols)
	{
		if (i == APPEND_ROW_NAME_COLUMNS)
			break;
		appendStringInfo(&names, "%s%s", i ? ", " : "", quote_identifier(lfirst(lc)));
		appendStringInfo(&vals, "%s%s", i ? ", " : "",
						 acdc_value_text(slot->tts_values[i], slot->tts_isnull[i],
										 TupleDescAttr(slot->tts_tupleDescriptor, i)->atttypid));
		i++;
	}
	return psprintf("row (%s)=(%s)", names.data, vals.data);
}

static bool
append_receive(TupleTableSlot *slot, DestReceiver *self)
{
	AppendReceiver *r = (AppendReceiver *) self;
	Expectation *failed;

	slot_getallattrs(slot);
	r->nread++;
	switch (acdc_expect_check(r->flow, slot, r->xatt, &failed))
	{
		case EXPECT_KEEP:
			acdc_batch_relation_put(&r->rows, slot->tts_values, slot->tts_isnull);
			break;
		case EXPECT_DROPPED:
			{
				MemoryContext old = MemoryContextSwitchTo(r->row_cxt);

				acdc_quarantine_add(r->flow, "expectation",
									acdc_expect_failed_names(r->flow, slot, r->xatt),
									slot->tts_values[r->in_row_att], NULL, NULL);
				MemoryContextSwitchTo(old);
				MemoryContextReset(r->row_cxt);
			}
			break;
		case EXPECT_FAILED:
			if (r->failed == NULL)
			{
				MemoryContext old = MemoryContextSwitchTo(r->cxt);

				r->failed = failed;
				r->failed_row = row_text(r, slot);
				MemoryContextSwitchTo(old);
			}
			break;
	}
	return true;
}

static void
append_noop(DestReceiver *self)
{
}

/*
 * An append flow with expectations: the rows read and their results go
 * through a receiver, and those kept are inserted from a tuplestore.
 */
static void
append_checked(FlowDef *f, ReadParams *p, List *cols, FlowCounts *counts)
{
	AppendReceiver r;
	StringInfoData sql;

	memset(&r, 0, sizeof(r));
	r.pub.receiveSlot = append_receive;
	r.pub.rStartup = append_startup;
	r.pub.rShutdown = append_noop;
	r.pub.rDestroy = append_noop;
	r.pub.mydest = DestNone;
	r.flow = f;
	r.cols = cols;
	r.cxt = CurrentMemoryContext;
	r.row_cxt = AllocSetContextCreate(CurrentMemoryContext, "autocdc row dropped",
									  ALLOCSET_SMALL_SIZES);
	initStringInfo(&sql);
	appendStringInfoString(&sql, "SELECT ");
	acdc_append_column_list(&sql, cols, SRC_ALIAS);
	acdc_expect_append_columns(&sql, f);
	acdc_read_append_from(&sql, f, p);
	acdc_progress_phase(ACDC_PHASE_READING);
	acdc_read_execute(sql.data, p, (DestReceiver *) &r);
	if (r.failed)
		acdc_expect_raise(f, r.failed, r.failed_row);
	counts->read = r.nread;
	acdc_progress_add_events(counts->read);

	acdc_progress_phase(ACDC_PHASE_APPENDING);
	resetStringInfo(&sql);
	appendStringInfo(&sql, "INSERT INTO %s (", acdc_rel_qualified_name(f->target));
	acdc_append_column_list(&sql, cols, NULL);
	appendStringInfoString(&sql, ") SELECT ");
	acdc_append_column_list(&sql, cols, NULL);
	appendStringInfoString(&sql, " FROM " APPEND_ROWS_RELATION);
	acdc_batch_unregister_relations();
	if (acdc_batch_relation_register(&r.rows))
		acdc_spi_exec(sql.data, 0, NULL, NULL, NULL, false);
	counts->upserted = r.rows.n > 0 ? SPI_processed : 0;
	acdc_batch_release_relations();
	MemoryContextDelete(r.row_cxt);
	acdc_progress_add_rows(counts->upserted);
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
	if (f->expectations != NIL)
	{
		append_checked(f, p, cols, counts);
		return;
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
