/*-------------------------------------------------------------------------
 * uninstall.c
 *	  What uninstalling touches outside schema autocdc.
 *
 * autocdc.unprepare_source() takes back what the first flow from a table
 * added to it (acdc_define_prepare_source): the stamp trigger, the column
 * __autocdc_xid, and with the column its default and its index.  DROP
 * EXTENSION autocdc CASCADE takes only the trigger (it goes with the
 * extension's function); the rest is the user's to remove, explicitly.
 *
 * A column of a user's table is never dropped as a side effect: DROP
 * EXTENSION autocdc CASCADE would drop the history columns of SCD 2
 * targets sequenced by ROW(...), whose composite type lives in schema
 * autocdc, so an event trigger refuses it until the types are moved out.
 *-------------------------------------------------------------------------
 */
#include "autocdc.h"
#include "catalog.h"

#include "access/htup_details.h"
#include "catalog/namespace.h"
#include "catalog/pg_attribute.h"
#include "catalog/pg_class.h"
#include "catalog/pg_inherits.h"
#include "catalog/pg_type.h"
#include "commands/event_trigger.h"
#include "commands/trigger.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "storage/lmgr.h"
#include "utils/acl.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/syscache.h"

#if PG_VERSION_NUM >= 160000
#define owns_relation(relid) object_ownercheck(RelationRelationId, (relid), GetUserId())
#else
#define owns_relation(relid) pg_class_ownercheck((relid), GetUserId())
#endif

PG_FUNCTION_INFO_V1(autocdc_unprepare_source);
PG_FUNCTION_INFO_V1(autocdc_on_drop_extension);

/*
 * Refuses while a flow reads the table or one of its partitions (or
 * inheritance children, which share the column).  Another role's flows
 * are counted, not named, as everywhere else.
 */
static void
refuse_while_read(Oid relid)
{
	List	   *flows = NIL,
			   *owners = NIL;
	StringInfoData names;
	char	   *first = NULL;
	int			hidden = 0;
	ListCell   *lc,
			   *lo;

	acdc_catalog_flows_over_sources(find_all_inheritors(relid, NoLock, NULL),
							   &flows, &owners);
	if (flows == NIL)
		return;

	initStringInfo(&names);
	forboth(lc, flows, lo, owners)
	{
		Oid			owner = lfirst_oid(lo);
		char	   *name = lfirst(lc);

		if (!has_privs_of_role(GetUserId(), owner))
		{
			hidden++;
			continue;
		}
		appendStringInfo(&names, "%s\"%s\"", names.len > 0 ? ", " : "", name);
		if (first == NULL)
			first = name;
	}
	if (hidden > 0)
		appendStringInfo(&names, "%s%d flow%s of other roles", names.len > 0 ? " and " : "",
						 hidden, hidden > 1 ? "s" : "");
	ereport(ERROR,
			(errcode(ERRCODE_OBJECT_IN_USE),
			 errmsg("source \"%s\" is still read by flows", get_rel_name(relid)),
			 errdetail("Read by %s.", names.data),
			 first ? errhint("Drop them first, e.g. SELECT autocdc.drop_flow(%s);",
							 quote_literal_cstr(first))
			 : errhint("Their owners must drop them first.")));
}

Datum
autocdc_unprepare_source(PG_FUNCTION_ARGS)
{
	Oid			relid = PG_GETARG_OID(0);
	char		relkind = get_rel_relkind(relid);
	char	   *qname;
	HeapTuple	att;
	bool		has_column = false;
	bool		has_trigger;
	StringInfoData sql;
	UserSwitch	sw;

	autocdc_refuse_within_flow("autocdc.unprepare_source()");
	if (relkind == '\0')
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_TABLE),
				 errmsg("relation with OID %u does not exist", relid)));
	if (relkind != RELKIND_RELATION && relkind != RELKIND_PARTITIONED_TABLE)
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("\"%s\" is not a table", get_rel_name(relid)),
				 errdetail("autocdc prepares only tables; a view, materialized view or foreign table source is read whole and carries nothing of autocdc's.")));
	if (!owns_relation(relid))
		aclcheck_error(ACLCHECK_NOT_OWNER, OBJECT_TABLE, get_rel_name(relid));
	/* no flow may start reading it, nor a run read it, while it changes */
	LockRelationOid(relid, AccessExclusiveLock);
	qname = acdc_rel_qualified_name(relid);

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	refuse_while_read(relid);

	att = SearchSysCacheAttName(relid, AUTOCDC_XID_COLUMN);
	if (HeapTupleIsValid(att))
	{
		Form_pg_attribute form = (Form_pg_attribute) GETSTRUCT(att);

		has_column = true;
		if (form->attinhcount > 0)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_TABLE_DEFINITION),
					 errmsg("column %s of \"%s\" is inherited", AUTOCDC_XID_COLUMN,
							get_rel_name(relid)),
					 errdetail("Its parent was prepared as a source, and gave it to its partitions."),
					 errhint("Call autocdc.unprepare_source on the parent (for a partition, its partitioned table).")));
		ReleaseSysCache(att);
	}
	has_trigger = OidIsValid(get_trigger_oid(relid, AUTOCDC_STAMP_TRIGGER, true));
	if (!has_column && !has_trigger)
	{
		ereport(NOTICE,
				(errmsg("table \"%s\" carries nothing of autocdc's, skipping", get_rel_name(relid))));
		SPI_finish();
		PG_RETURN_VOID();
	}

	/* the column takes its default and every index on it along */
	initStringInfo(&sql);
	if (has_trigger)
		appendStringInfo(&sql, "DROP TRIGGER %s ON %s; ", AUTOCDC_STAMP_TRIGGER, qname);
	if (has_column)
		appendStringInfo(&sql, "ALTER TABLE %s DROP COLUMN %s", qname, AUTOCDC_XID_COLUMN);
	autocdc_become_owner_of(&sw, relid);
	acdc_spi_exec(sql.data, 0, NULL, NULL, NULL, false);
	autocdc_unbecome(&sw);
	SPI_finish();
	PG_RETURN_VOID();
}

/* Whether a DROP statement is DROP EXTENSION ... autocdc ... CASCADE. */
static bool
drops_autocdc_cascade(Node *parsetree)
{
	DropStmt   *stmt;
	ListCell   *lc;

	if (parsetree == NULL || !IsA(parsetree, DropStmt))
		return false;
	stmt = (DropStmt *) parsetree;
	if (stmt->removeType != OBJECT_EXTENSION || stmt->behavior != DROP_CASCADE)
		return false;
	foreach(lc, stmt->objects)
		if (IsA(lfirst(lc), String) && strcmp(strVal(lfirst(lc)), "autocdc") == 0)
			return true;
	return false;
}

/*
 * ddl_command_start event trigger for DROP EXTENSION: refuses a CASCADE
 * that would drop columns of tables outside schema autocdc (their type is
 * autocdc's).
 */
Datum
autocdc_on_drop_extension(PG_FUNCTION_ARGS)
{
	EventTriggerData *trigdata;
	char	   *cols;
	char	   *moves;

	if (!CALLED_AS_EVENT_TRIGGER(fcinfo))
		ereport(ERROR,
				(errcode(ERRCODE_E_R_I_E_EVENT_TRIGGER_PROTOCOL_VIOLATED),
				 errmsg("function autocdc._on_drop_extension must be called as an event trigger")));
	trigdata = (EventTriggerData *) fcinfo->context;
	if (!drops_autocdc_cascade(trigdata->parsetree) ||
		!OidIsValid(get_namespace_oid("autocdc", true)))
		PG_RETURN_VOID();

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	acdc_spi_exec("WITH u AS (SELECT n.nspname, c.relname, a.attname, t.typname "
			 "  FROM pg_catalog.pg_attribute a "
			 "  JOIN pg_catalog.pg_class c ON c.oid OPERATOR(pg_catalog.=) a.attrelid "
			 "  JOIN pg_catalog.pg_namespace n ON n.oid OPERATOR(pg_catalog.=) c.relnamespace "
			 "  JOIN pg_catalog.pg_type t ON t.oid OPERATOR(pg_catalog.=) a.atttypid "
			 " WHERE t.typnamespace OPERATOR(pg_catalog.=) 'autocdc'::pg_catalog.regnamespace "
			 "   AND c.relnamespace OPERATOR(pg_catalog.<>) 'autocdc'::pg_catalog.regnamespace "
			 "   AND c.relkind OPERATOR(pg_catalog.=) ANY ('{r,p,f}') "
			 "   AND a.attnum OPERATOR(pg_catalog.>) 0 AND NOT a.attisdropped) "
			 "SELECT (SELECT pg_catalog.string_agg(pg_catalog.format('%I.%I.%I', nspname, relname, attname), ', ' "
			 "                                     ORDER BY nspname, relname, attname) FROM u), "
			 "       (SELECT pg_catalog.string_agg(DISTINCT pg_catalog.format('ALTER TYPE autocdc.%I SET SCHEMA %I;', "
			 "                                     typname, nspname), ' ') FROM u)",
			 0, NULL, NULL, NULL, true);
	cols = acdc_spi_value(0, 1);
	moves = acdc_spi_value(0, 2);
	if (cols == NULL)
	{
		SPI_finish();
		PG_RETURN_VOID();
	}
	ereport(ERROR,
			(errcode(ERRCODE_DEPENDENT_OBJECTS_STILL_EXIST),
			 errmsg("DROP EXTENSION autocdc CASCADE would drop columns of tables outside schema autocdc"),
			 errdetail("Columns %s have a type of schema autocdc: the sequence columns of targets sequenced by ROW(...) (the history columns of SCD 2 and bitemporal targets, the __autocdc_sequence of SCD 1 targets).",
					   cols),
			 errhint("Move the types out of schema autocdc first, then drop the extension: %s",
					 moves)));
	PG_RETURN_VOID();			/* keep compiler quiet */
}
