/*-------------------------------------------------------------------------
 * autocdc.c
 *	  Module entry: settings.
 *-------------------------------------------------------------------------
 */
#include "autocdc.h"

#include <limits.h>

#include "fmgr.h"
#include "utils/guc.h"

PG_MODULE_MAGIC;

int			autocdc_tombstone_retention_s = 2 * 24 * 3600;

void		_PG_init(void);

void
_PG_init(void)
{
	DefineCustomIntVariable("autocdc.tombstone_retention",
							"How long deleted keys are remembered, so that late events older than the delete cannot bring them back.",
							"Tombstones older than this are purged by the next run; -1 keeps them forever.",
							&autocdc_tombstone_retention_s,
							2 * 24 * 3600, -1, INT_MAX,
							PGC_USERSET, GUC_UNIT_S,
							NULL, NULL, NULL);
	MarkGUCPrefixReserved("autocdc");
}
