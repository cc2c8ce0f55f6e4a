/*-------------------------------------------------------------------------
 * direct_update.h
 *	  Updating and deleting a fold's stored rows, named by tid, straight in
 *	  their table (heap_update and heap_delete as the executor calls them,
 *	  indexes and constraints as it keeps them) where the SQL UPDATE or
 *	  DELETE joined to a relation of the rows could do nothing else: the
 *	  same conditions as direct_insert.h, for the statement's own command.
 *	  Elsewhere the caller's statement runs.
 *-------------------------------------------------------------------------
 */
#ifndef AUTOCDC_DIRECT_UPDATE_H
#define AUTOCDC_DIRECT_UPDATE_H

#include "postgres.h"

#include "relation.h"

#include "nodes/pg_list.h"

/*
 * The rows of r (a row id, then values) into relid: r's attributes named
 * in cols set those columns of the row its id names.  With only_changed a
 * row whose columns all equal the values (by their type's "=", as the
 * statement compares them) is left as it is.  Where the direct path does
 * not apply, r is registered and sql, which names it, runs by tid.
 * Returns the rows updated; r's store is ended either way.
 */
extern uint64 acdc_update_batch(BatchRelation *r, Oid relid, List *cols,
								bool only_changed, const char *sql);

/* The rows r names (by its row id) deleted from relid, likewise. */
extern uint64 acdc_delete_batch(BatchRelation *r, Oid relid, const char *sql);

#endif							/* AUTOCDC_DIRECT_UPDATE_H */
