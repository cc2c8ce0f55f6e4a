/*-------------------------------------------------------------------------
 * source_columns.c
 *	  A warning when a column is added to a table source after
 *	  __autocdc_xid.
 *
 * autocdc adds __autocdc_xid as a table's last column when it becomes a
 * source, so INSERT ... VALUES and COPY without a column list go on giving
 * the user's columns.  A column added later comes after it: from then on a
 * value given without a column list for the new column lands in
 * __autocdc_xid.  PostgreSQL refuses an integer there, the stamp trigger
 * (stamp.c) any other value once a flow read the table; but PostgreSQL
 * cannot move a column, so ALTER TABLE says so at once, with the column
 * list to use.
 *-------------------------------------------------------------------------
 */
#include "autocdc.h"
#include "source_read.h"

#include "access/relation.h"
#include "catalog/pg_class.h"
#include "commands/event_trigger.h"
#include "commands/trigger.h"
#include "executor/spi.h"
#include "nodes/parsenodes.h"
#include "tcop/deparse_utility.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"

PG_FUNCTION_INFO_V1(autocdc_on_alter_table_end);

/*
 * "(a, b, c)": the columns a value may be given for, quoted: not
 * __autocdc_xid, nor a generated column (INSERT and COPY refuse one).
 */
char *
acdc_source_user_columns(Oid relid)
{
	Relation	rel = relation_open(relid, AccessShareLock);
	TupleDesc	desc = RelationGetDescr(rel);
	StringInfoData list;

	initStringInfo(&list);
	for (int i = 0; i < desc->natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, i);

		if (att->attisdropped || att->attgenerated ||
			strcmp(NameStr(att->attname), AUTOCDC_XID_COLUMN) == 0)
			continue;
		appendStringInfo(&list, "%s%s", list.len ? ", " : "(",
						 quote_identifier(NameStr(att->attname)));
	}
	appendStringInfoChar(&list, ')');
	relation_close(rel, AccessShareLock);
	return list.data;
}

/*
 * Warns if the column `attnum` added to the source `relid` comes after the
 * stamp, unless it is generated: no value can be given for it.
 */
static void
warn_if_after_stamp(Oid relid, AttrNumber attnum)
{
	AttrNumber	xid = get_attnum(relid, AUTOCDC_XID_COLUMN);
	char	   *qname;
	char	   *columns;

	if (xid == InvalidAttrNumber || attnum <= xid ||
		get_attgenerated(relid, attnum) != '\0' ||
		!OidIsValid(get_trigger_oid(relid, AUTOCDC_STAMP_TRIGGER, true)))
		return;
	qname = acdc_rel_qualified_name(relid);
	columns = acdc_source_user_columns(relid);
	ereport(WARNING,
			(errcode(ERRCODE_WARNING),
			 errmsg("column \"%s\" of source \"%s\" comes after %s",
					get_attname(relid, attnum, false), get_rel_name(relid),
					AUTOCDC_XID_COLUMN),
			 errdetail("autocdc added %s when the table became a source: without a column list, INSERT ... VALUES and COPY now take a value for it before this column's.",
					   AUTOCDC_XID_COLUMN),
			 errhint("Name the columns, as in INSERT INTO %s %s VALUES (...) or COPY %s %s FROM STDIN.",
					 qname, columns, qname, columns)));
}

/*
 * ddl_command_end of ALTER TABLE: each column added to the table the
 * statement names (not to its partitions, which say the same) is checked.
 * Only catalogs are read; nobody's code runs.
 */
Datum
autocdc_on_alter_table_end(PG_FUNCTION_ARGS)
{
	if (!CALLED_AS_EVENT_TRIGGER(fcinfo))
		ereport(ERROR,
				(errcode(ERRCODE_E_R_I_E_EVENT_TRIGGER_PROTOCOL_VIOLATED),
				 errmsg("function autocdc._on_alter_table_end must be called as an event trigger")));

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	if (SPI_execute("SELECT command FROM pg_catalog.pg_event_trigger_ddl_commands() "
					"WHERE command_tag OPERATOR(pg_catalog.=) 'ALTER TABLE'", true, 0) != SPI_OK_SELECT)
		elog(ERROR, "SPI_execute failed");
	for (uint64 i = 0; i < SPI_processed; i++)
	{
		bool		isnull;
		Datum		d = SPI_getbinval(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 1, &isnull);
		CollectedCommand *cmd = (CollectedCommand *) DatumGetPointer(d);
		ListCell   *lc;

		if (isnull || cmd->type != SCT_AlterTable)
			continue;
		foreach(lc, cmd->d.alterTable.subcmds)
		{
			CollectedATSubcmd *sub = lfirst(lc);
			AlterTableCmd *at = (AlterTableCmd *) sub->parsetree;

			if (IsA(at, AlterTableCmd) &&
				(at->subtype == AT_AddColumn || at->subtype == AT_AddColumnRecurse) &&
				sub->address.classId == RelationRelationId &&
				sub->address.objectId == cmd->d.alterTable.objectId &&
				sub->address.objectSubId > 0)
				warn_if_after_stamp(sub->address.objectId, sub->address.objectSubId);
		}
	}
	SPI_finish();
	PG_RETURN_VOID();
}
