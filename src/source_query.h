/*-------------------------------------------------------------------------
 * source_query.h
 *	  Flows over a source query (source_query.c): a query marking one
 *	  table STREAM(rel), read over that table's new rows at each run, or a
 *	  batch query read whole; and the snapshot and version queries of a
 *	  snapshot flow.
 *-------------------------------------------------------------------------
 */
#ifndef AUTOCDC_SOURCE_QUERY_H
#define AUTOCDC_SOURCE_QUERY_H

#include "define.h"

#include "nodes/parsenodes.h"

/* The names the stored text of a query refers to autocdc's parts by. */
#define SQ_STREAM_CTE	"__autocdc_stream"
#define SQ_VERSION_CTE	"__autocdc_version"

/* How a query may read its relations. */
typedef enum SourceQueryMode
{
	SQ_STREAM,					/* one relation marked STREAM, read incrementally */
	SQ_BATCH_OR_STREAM,			/* ONCE flows: STREAM optional */
	SQ_SNAPSHOT,				/* snapshot_query: read whole, no STREAM */
	SQ_VERSION					/* version_query: one column, the next version */
} SourceQueryMode;

extern void acdc_sq_define_source(FlowSpec *spec, const char *query, bool once);
extern void acdc_sq_define_snapshot(FlowSpec *spec, const char *snapshot_query,
									const char *version_query);
extern char *acdc_sq_from(Oid stream, const char *norm, const char *stream_where,
						  Oid version_type, const char *current, const char *last);
extern char *acdc_sq_flow_from(FlowDef *f);
extern Query *acdc_sq_analyze_stored(Oid stream, const char *norm, Oid version_type,
									 const char *what);
extern List *acdc_sq_stored_columns(Oid stream, const char *norm, Oid version_type,
									const char *what);
extern List *acdc_sq_objects(Oid stream, const char *norm, Oid version_type,
							 const char *what);
extern void acdc_sq_require_select(Oid stream, const char *norm, Oid version_type,
								   Oid role);
extern void acdc_sq_refuse_batch_source(FlowSpec *spec);

#endif							/* AUTOCDC_SOURCE_QUERY_H */
