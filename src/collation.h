/*-------------------------------------------------------------------------
 * collation.h
 *	  Every column autocdc derives from a sequence or a key carries the
 *	  collation of its origin, and order-dependent SQL uses it
 *	  (collation.c).
 *-------------------------------------------------------------------------
 */
#ifndef AUTOCDC_COLLATION_H
#define AUTOCDC_COLLATION_H

#include "flow.h"

#include "nodes/nodes.h"

extern Oid	acdc_value_collation(Oid typid, Oid collation);
extern Oid	acdc_expr_collation(Node *expr, const char *what);
extern Oid	acdc_column_collation(Oid relid, const char *col);
extern Oid	acdc_state_seq_collation(Oid state, int scd_type);
extern List *acdc_composite_field_collations(Oid typid);
extern char *acdc_collation_text(Oid collation);
extern void acdc_append_collate(StringInfo buf, Oid collation);
extern void acdc_refuse_collation(const char *what, Oid want, const char *column,
								  Oid relid, Oid have, const char *detail,
								  bool expression);
extern void acdc_check_run_collations(FlowDef *f);

#endif							/* AUTOCDC_COLLATION_H */
