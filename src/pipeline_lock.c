/*-------------------------------------------------------------------------
 * pipeline_lock.c
 *	  The lock that keeps runs of one pipeline apart (a manual run and the
 *	  worker's included).
 *
 * It is a transaction-level heavyweight lock on the pipeline as an object
 * of the table autocdc.pipeline: LOCKTAG_OBJECT keyed by this database,
 * that table's OID and the pipeline's id.  SQL has no way to take such a
 * lock (advisory locks are another lock type, and DDL locks objects only
 * under system catalogs' OIDs), so no role can hold a pipeline busy, and
 * two pipelines never share a key.
 *-------------------------------------------------------------------------
 */
#include "autocdc.h"

#include "catalog/namespace.h"
#include "miscadmin.h"
#include "storage/lock.h"
#include "utils/lsyscache.h"

static void
pipeline_locktag(LOCKTAG *tag, int64 id)
{
	Oid			relid = get_relname_relid("pipeline",
										  get_namespace_oid("autocdc", false));

	if (!OidIsValid(relid))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("extension \"autocdc\" is not installed in this database")));
	/* Ids come from an identity column: far below 2^48. */
	if (id < 0 || (id >> 48) != 0)
		elog(ERROR, "autocdc: pipeline id " INT64_FORMAT " out of range for its lock", id);
	SET_LOCKTAG_OBJECT(*tag, MyDatabaseId, relid, (uint32) id, (uint16) (id >> 32));
}

/* Takes the pipeline's run lock until the end of the transaction, if free. */
bool
acdc_pipeline_lock_try(int64 id)
{
	LOCKTAG		tag;

	pipeline_locktag(&tag, id);
	return LockAcquire(&tag, ExclusiveLock, false, true) != LOCKACQUIRE_NOT_AVAIL;
}

/* Whether no run holds the pipeline now (the lock is not kept). */
bool
acdc_pipeline_lock_free(int64 id)
{
	LOCKTAG		tag;

	pipeline_locktag(&tag, id);
	if (LockAcquire(&tag, ExclusiveLock, false, true) == LOCKACQUIRE_NOT_AVAIL)
		return false;
	LockRelease(&tag, ExclusiveLock, false);
	return true;
}
