/*-------------------------------------------------------------------------
 * drop_deps.c
 *	  What goes with a target that pg_depend cannot say across pg_dump and
 *	  pg_upgrade.
 *
 * pg_dump and pg_upgrade rebuild dependencies from the DDL they replay, so
 * the AUTO dependency of a target's autocdc.as_of function on the target
 * does not survive them, and DROP TABLE of a restored SCD 2 target would
 * fail: the function still uses the target's row type.  A DROP that can
 * take tables with it first gives the dependency back.
 *
 * A ROW() composite type is used by its target's columns, so a dependency
 * of the type on the target would be a loop pg_dump cannot order (it would
 * create the table before its columns' type).  The type depends on nothing;
 * the sql_drop trigger drops it once nothing uses it and no target is
 * registered with it.
 *-------------------------------------------------------------------------
 */
#include "catalog.h"
#include "define.h"

#include "access/xact.h"
#include "catalog/dependency.h"
#include "catalog/namespace.h"
#include "catalog/objectaddress.h"
#include "catalog/pg_proc.h"
#include "catalog/pg_type.h"
#include "commands/event_trigger.h"
#include "commands/extension.h"
#include "executor/spi.h"
#include "utils/lsyscache.h"

PG_FUNCTION_INFO_V1(autocdc_on_drop_start);

/*
 * The as_of functions (SCD 2: as_of; bitemporal: as_of and history_as_of)
 * of targets with flows or not any more that lost
 * their dependency on the table whose row type is their first argument.
 */
#define LOST_AS_OF_SQL \
	"SELECT p.oid, c.oid FROM pg_catalog.pg_proc p " \
	"  JOIN pg_catalog.pg_type t ON t.oid OPERATOR(pg_catalog.=) p.proargtypes[0] " \
	"  JOIN pg_catalog.pg_class c ON c.oid OPERATOR(pg_catalog.=) t.typrelid " \
	" WHERE p.pronamespace OPERATOR(pg_catalog.=) $1 " \
	"   AND (p.proname OPERATOR(pg_catalog.=) 'as_of' AND p.pronargs OPERATOR(pg_catalog.=) ANY ('{2,3}'::pg_catalog.int2[]) " \
	"        OR p.proname OPERATOR(pg_catalog.=) 'history_as_of' AND p.pronargs OPERATOR(pg_catalog.=) 2) " \
	"   AND c.relkind OPERATOR(pg_catalog.=) ANY ('{r,p}'::pg_catalog.\"char\"[]) AND NOT EXISTS " \
	"  (SELECT 1 FROM pg_catalog.pg_depend d " \
	"    WHERE d.classid OPERATOR(pg_catalog.=) 'pg_catalog.pg_proc'::pg_catalog.regclass " \
	"      AND d.objid OPERATOR(pg_catalog.=) p.oid " \
	"      AND d.refclassid OPERATOR(pg_catalog.=) 'pg_catalog.pg_class'::pg_catalog.regclass " \
	"      AND d.refobjid OPERATOR(pg_catalog.=) c.oid " \
	"      AND d.deptype OPERATOR(pg_catalog.=) 'a')"

/* autocdc's catalog, or InvalidOid while the extension is not (fully) there. */
static Oid
autocdc_catalog_namespace(void)
{
	Oid			nsp;

	if (!OidIsValid(get_extension_oid("autocdc", true)))
		return InvalidOid;
	nsp = get_namespace_oid("autocdc", true);
	if (!OidIsValid(nsp) || !OidIsValid(get_relname_relid("target", nsp)))
		return InvalidOid;
	return nsp;
}

/*
 * ddl_command_start of DROP TABLE, DROP SCHEMA, DROP OWNED and DROP ACCESS
 * METHOD: every as_of function depends on its target again, so that it goes
 * with it (also when the target lost its last flow, and so its
 * registration).  Nobody's code runs; if the DROP fails, this rolls back
 * with it.
 */
Datum
autocdc_on_drop_start(PG_FUNCTION_ARGS)
{
	Oid			nsp;
	Oid			argtypes[1] = {OIDOID};
	Datum		values[1];

	if (!CALLED_AS_EVENT_TRIGGER(fcinfo))
		ereport(ERROR,
				(errcode(ERRCODE_E_R_I_E_EVENT_TRIGGER_PROTOCOL_VIOLATED),
				 errmsg("function autocdc._on_drop_start must be called as an event trigger")));
	nsp = autocdc_catalog_namespace();
	if (!OidIsValid(nsp))
		PG_RETURN_VOID();

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	values[0] = ObjectIdGetDatum(nsp);
	acdc_catalog_exec(LOST_AS_OF_SQL, 1, argtypes, values, NULL);
	for (uint64 i = 0; i < SPI_processed; i++)
	{
		bool		isnull;
		Oid			fn = DatumGetObjectId(SPI_getbinval(SPI_tuptable->vals[i],
														SPI_tuptable->tupdesc, 1, &isnull));
		Oid			target = DatumGetObjectId(SPI_getbinval(SPI_tuptable->vals[i],
															SPI_tuptable->tupdesc, 2, &isnull));

		acdc_define_depend_on_target(ProcedureRelationId, fn, target);
	}
	if (SPI_processed > 0)
		CommandCounterIncrement();
	SPI_finish();
	PG_RETURN_VOID();
}

/*
 * In the sql_drop trigger, when relations went: drops the ROW() composite
 * types no target is registered with and nothing uses any more (their
 * target and its state are gone).  Needs SPI connected.
 */
void
acdc_define_drop_unused_composites(void)
{
	Oid			nsp = get_namespace_oid("autocdc", false);
	ListCell   *lc;

	foreach(lc, acdc_catalog_unused_composites(nsp))
	{
		ObjectAddress addr;

		ObjectAddressSet(addr, TypeRelationId, lfirst_oid(lc));
		performDeletion(&addr, DROP_RESTRICT, PERFORM_DELETION_INTERNAL);
	}
}
