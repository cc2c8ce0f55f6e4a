/*-------------------------------------------------------------------------
 * direct_insert.h
 *	  Inserting a fold's new rows straight into a table, in batches as COPY
 *	  does (one WAL record per page, no tuplestore, no executor per row),
 *	  where no SQL INSERT could behave otherwise: a heap table with no
 *	  trigger, rule or row security, no default to compute, no deferred
 *	  constraint, and the rows already of the columns' types.  Elsewhere the caller goes
 *	  on through SQL.
 *-------------------------------------------------------------------------
 */
#ifndef AUTOCDC_DIRECT_INSERT_H
#define AUTOCDC_DIRECT_INSERT_H

#include "postgres.h"

#include "relation.h"

#include "access/tupdesc.h"
#include "nodes/execnodes.h"
#include "nodes/pg_list.h"
#include "utils/relcache.h"

/*
 * Whether cmd (CMD_INSERT, CMD_UPDATE or CMD_DELETE) on rel, a heap table
 * that is no partition, could run no code of the table's (no rule, row
 * security or trigger firing for cmd; for an UPDATE or DELETE no child
 * table either): then the direct paths (here and direct_update.h) do what
 * the statement would.
 */
extern bool acdc_direct_table_plain(Relation rel, CmdType cmd);

/*
 * An executor state with rel as its one result relation and its indexes
 * open in *rri, after the statement's check of the current user's rights
 * (with ExecutorCheckPerms_hook): the rights, the columns it reads and
 * those it sets (attribute numbers offset by
 * FirstLowInvalidHeapAttributeNumber).  NULL where a right is missing
 * (the statement then gives the error) or an index is checked at commit
 * (deferrable), which needs the statement's after-trigger queue.
 */
extern EState *acdc_direct_result_rel(Relation rel, AclMode rights, Bitmapset *selected,
									  Bitmapset *set, ResultRelInfo **rri);

/*
 * The input values whose attnums[i] is a column (> 0) into slot's columns,
 * its others as they are, and the slot stored as a virtual tuple.
 */
extern void acdc_direct_store(TupleTableSlot *slot, int ninput, const AttrNumber *attnums,
							  Datum *values, bool *nulls);

typedef struct DirectInsert DirectInsert;

/*
 * A direct insert into relid of rows shaped as "desc", whose attributes
 * named in cols go to the table's columns of those names (the others are
 * not inserted); NULL when the table needs the SQL INSERT.  Checks
 * constraints and fills every index as the INSERT would, with the current
 * user's rights; errors are the INSERT's.
 */
extern DirectInsert *acdc_direct_insert_begin(Oid relid, TupleDesc desc, List *cols);
extern void acdc_direct_insert_put(DirectInsert *d, Datum *values, bool *nulls);
/* Inserts what is left and closes the table; returns the rows inserted. */
extern uint64 acdc_direct_insert_end(DirectInsert *d);

/* "INSERT INTO qrel (cols) SELECT cols FROM r": r's columns of those names. */
extern char *acdc_insert_batch_sql(BatchRelation *r, const char *qrel, List *cols);

/*
 * The rows of r into relid (named qrel), its columns cols as above:
 * directly where acdc_direct_insert_begin allows, else by
 * acdc_insert_batch_sql with r registered.  Returns the rows inserted.
 */
extern uint64 acdc_insert_batch(BatchRelation *r, Oid relid, const char *qrel, List *cols);

#endif							/* AUTOCDC_DIRECT_INSERT_H */
