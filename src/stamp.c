/*-------------------------------------------------------------------------
 * stamp.c
 *	  The trigger that stamps every row inserted into a table source with
 *	  its inserting transaction.  A column default alone is not enough:
 *	  INSERT ... SELECT * from another source would copy old transaction ids
 *	  that look already read, and those rows would never be.
 *-------------------------------------------------------------------------
 */
#include "autocdc.h"

#include "access/htup_details.h"
#include "access/xact.h"
#include "commands/trigger.h"
#include "fmgr.h"
#include "utils/builtins.h"
#include "utils/rel.h"
#include "utils/xid8.h"

PG_FUNCTION_INFO_V1(autocdc_stamp_xid);

static int
xid_column(TupleDesc desc)
{
	for (int i = 0; i < desc->natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, i);

		if (!att->attisdropped && strcmp(NameStr(att->attname), AUTOCDC_XID_COLUMN) == 0)
			return i + 1;
	}
	return 0;
}

Datum
autocdc_stamp_xid(PG_FUNCTION_ARGS)
{
	TriggerData *trigdata = (TriggerData *) fcinfo->context;
	Relation	rel;
	int			attnum;
	Datum		value;
	bool		isnull = false;
	HeapTuple	tuple;

	if (!CALLED_AS_TRIGGER(fcinfo) ||
		!TRIGGER_FIRED_BEFORE(trigdata->tg_event) ||
		!TRIGGER_FIRED_FOR_ROW(trigdata->tg_event) ||
		!TRIGGER_FIRED_BY_INSERT(trigdata->tg_event))
		ereport(ERROR,
				(errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
				 errmsg("autocdc._stamp_xid() must be fired BEFORE INSERT FOR EACH ROW")));

	rel = trigdata->tg_relation;
	attnum = xid_column(RelationGetDescr(rel));
	if (attnum <= 0)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_COLUMN),
				 errmsg("table \"%s\" has no column %s", RelationGetRelationName(rel),
						AUTOCDC_XID_COLUMN),
				 errdetail("The table is the source of an autocdc flow, which records each row's transaction there."),
				 errhint("Add it back with ALTER TABLE %s ADD COLUMN %s xid8, or drop the table's flows and then the trigger %s.",
						 quote_identifier(RelationGetRelationName(rel)), AUTOCDC_XID_COLUMN,
						 AUTOCDC_STAMP_TRIGGER)));
	value = FullTransactionIdGetDatum(GetTopFullTransactionId());
	tuple = heap_modify_tuple_by_cols(trigdata->tg_trigtuple, RelationGetDescr(rel),
									  1, &attnum, &value, &isnull);
	return PointerGetDatum(tuple);
}
