/*-------------------------------------------------------------------------
 * record_cmp.h
 *	  A faster comparator for composite sequences and keys (record_cmp.c).
 *-------------------------------------------------------------------------
 */
#ifndef AUTOCDC_RECORD_CMP_H
#define AUTOCDC_RECORD_CMP_H

#include "autocdc.h"

#include "utils/sortsupport.h"

/* ssup (prepared for composite type typid) then orders as btrecordcmp, faster */
extern void acdc_record_sortsupport(SortSupport ssup, Oid typid);

#endif							/* AUTOCDC_RECORD_CMP_H */
