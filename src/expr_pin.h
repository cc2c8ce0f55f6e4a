/*-------------------------------------------------------------------------
 * expr_pin.h
 *	  What a flow's stored expressions resolve to, recorded at creation and
 *	  checked before each run (expr_pin.c).
 *-------------------------------------------------------------------------
 */
#ifndef AUTOCDC_EXPR_PIN_H
#define AUTOCDC_EXPR_PIN_H

#include "flow.h"

#include "nodes/parsenodes.h"

/* A flow's source query, snapshot and version queries as kept, or NULLs. */
typedef struct FlowQueries
{
	const char *source_query;	/* or snapshot_query */
	const char *version_query;
	Oid			version_type;	/* snapshot flows: the version's type */
} FlowQueries;

extern List *acdc_node_objects(Node *node, const char *what);
extern List *acdc_query_objects(Query *query, const char *what);
extern List *acdc_expression_objects(Oid owner, const FlowQueries *queries,
									 Oid source, const char *sequence_by,
									 const char *deletes,
									 const char *truncates,
									 const char *source_function);
extern void acdc_check_kept_expression(Oid source, const char *from,
									   Node *analyzed, const char *kept,
									   const char *what);
extern void acdc_verify_flow_expressions(FlowDef *f);
extern List *acdc_condition_objects(Oid owner, const char *source_query, Oid source,
									 const char *cond, const char *what);
extern void acdc_verify_condition(FlowDef *f, const char *what, const char *cond,
								  List *was);

#endif							/* AUTOCDC_EXPR_PIN_H */
