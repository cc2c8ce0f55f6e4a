/*-------------------------------------------------------------------------
 * autocdc.h
 *	  What every autocdc module shares: settings, reserved names, SPI and
 *	  identity helpers, SQL text helpers.
 *-------------------------------------------------------------------------
 */
#ifndef AUTOCDC_H
#define AUTOCDC_H

#include "postgres.h"
#include "fmgr.h"
#include "lib/stringinfo.h"
#include "nodes/pg_list.h"

/*
 * The library is built with -fvisibility=hidden: only what PostgreSQL finds
 * by name is exported (the magic block, _PG_init, each SQL-callable function
 * and its pg_finfo_ record, the background worker entry points; declare those
 * PGDLLEXPORT).  PostgreSQL 16's headers make PGDLLEXPORT the default
 * visibility and PG_FUNCTION_INFO_V1 export the function itself; PostgreSQL
 * 15's leave PGDLLEXPORT empty outside Windows, so we do both here, before
 * any PG_MODULE_MAGIC or PG_FUNCTION_INFO_V1 is expanded.
 */
#if PG_VERSION_NUM < 160000 && defined(__GNUC__) && !defined(WIN32)
#undef PGDLLEXPORT
#define PGDLLEXPORT __attribute__((visibility("default")))

#undef PG_FUNCTION_INFO_V1
#define PG_FUNCTION_INFO_V1(funcname) \
	extern PGDLLEXPORT Datum funcname(PG_FUNCTION_ARGS); \
	extern PGDLLEXPORT const Pg_finfo_record *CppConcat(pg_finfo_, funcname)(void); \
	const Pg_finfo_record *CppConcat(pg_finfo_, funcname)(void) \
	{ \
		static const Pg_finfo_record finfo = {1}; \
		return &finfo; \
	} \
	extern int	no_such_variable
#endif

/* Hidden column a table gets when it becomes a source (doc/design.md §4.1). */
#define AUTOCDC_XID_COLUMN		"__autocdc_xid"
/*
 * The stamp of rows a table already held when it became a source: older
 * than every snapshot, so a whole read (first run, full refresh) reads them
 * and no incremental read does, and start_from => 'now' takes them as read.
 */
#define AUTOCDC_XID_BEFORE		"1"
#define AUTOCDC_RESERVED_PREFIX "__autocdc"
/* An SCD 1 target's column: the sequence of the row's applied upsert. */
#define ACDC_SEQUENCE_COLUMN "__autocdc_sequence"
#define AUTOCDC_STAMP_TRIGGER	"__autocdc_stamp_xid"

/* Settings (autocdc.c). */
extern int	autocdc_tombstone_retention_s;
extern char *autocdc_databases;
extern int	autocdc_max_workers;
extern int	autocdc_naptime_ms;
extern int	autocdc_max_retry_delay_s;
extern int	autocdc_max_workers_per_role;
extern int	autocdc_max_run_time_s;
extern bool autocdc_preloaded;
extern bool autocdc_log_empty_runs;
extern int	autocdc_event_log_retention_s;
extern int	autocdc_quarantine_retention_s;

/* The lock that keeps runs of a pipeline apart (pipeline_lock.c). */
extern bool acdc_pipeline_lock_try(int64 pipeline_id);
extern bool acdc_pipeline_lock_free(int64 pipeline_id);

/* The search_path a run's statements and expressions see (util.c). */
#define AUTOCDC_RUN_SEARCH_PATH	"pg_catalog, pg_temp"

/* Who runs a piece of work, with search_path pinned (util.c). */
typedef struct UserSwitch
{
	Oid			save_userid;
	int			save_sec_context;
	int			save_nestlevel;
} UserSwitch;

extern Oid	autocdc_extension_owner(void);
extern char *autocdc_extension_version(void);
extern ErrorData *autocdc_try(void (*fn) (void *arg), void *arg);
extern void autocdc_become(UserSwitch *sw, Oid role, bool restricted);
extern void autocdc_unbecome(UserSwitch *sw);
extern Oid	autocdc_relation_owner(Oid relid);
extern int64 autocdc_system_identifier(void);
extern void autocdc_refuse_within_flow(const char *function);	/* run.c */
extern void autocdc_become_owner_of(UserSwitch *sw, Oid relid);

/* Settings a flow pins at creation and its runs apply (util.c). */
struct ArrayType;
extern Datum autocdc_current_settings(void);
extern void autocdc_apply_settings(struct ArrayType *settings);

/*
 * Fresh memory a run is about to fill, its pages made present in one call
 * rather than one fault each (util.c); and size bytes of cxt so made.
 */
extern void acdc_prefault(void *p, Size size);
extern void *acdc_alloc_prefaulted(MemoryContext cxt, Size size);

/* SPI helpers: errors are raised, never returned. */
extern int	acdc_spi_exec(const char *sql, int nargs, Oid *argtypes, Datum *values,
					 const char *nulls, bool read_only);
extern uint64 acdc_spi_exec_by_tid(const char *sql);
extern void acdc_spi_exec_by_key(const char *sql);
extern void acdc_spi_exec_by_index(const char *sql, int nargs, Oid *argtypes,
								   Datum *values);
extern void acdc_catalog_exec(const char *sql, int nargs, Oid *argtypes,
						 Datum *values, const char *nulls);
extern char *acdc_spi_value(int row, int col);	/* NULL for SQL NULL */
extern char *acdc_spi_value_canonical(int row, int col);
extern bool acdc_spi_bool(int row, int col);
extern int64 acdc_spi_int64(int row, int col);

/* A value as "::text" spells it ("NULL" for NULL), and as the catalog keeps it. */
extern char *acdc_value_text(Datum value, bool isnull, Oid typid);
extern char *acdc_value_canonical(Datum value, Oid typid);

/* Lists and names. */
extern List *acdc_text_array_to_list(Datum array);
extern Datum acdc_list_to_text_array(List *names);
extern char *acdc_rel_qualified_name(Oid relid);
extern char *acdc_type_qualified_name(Oid typid);
extern void acdc_append_column_list(StringInfo buf, List *names, const char *prefix);
extern bool acdc_list_has_string(List *names, const char *name);
extern bool acdc_same_string_lists(List *a, List *b);
extern List *acdc_event_store_value_columns(Oid events, List *keys);
extern List *acdc_partition_key_columns(Oid relid, bool *expr);
extern int	acdc_list_index_of_string(List *names, const char *name);

/* Comparisons emitted into generated SQL, operators resolved from the type. */
extern void acdc_append_nullsafe_eq(StringInfo buf, const char *a, const char *b,
							   Oid typid);
extern void acdc_append_seq_cmp(StringInfo buf, const char *a, const char *op,
						   const char *b, Oid typid);

#endif							/* AUTOCDC_H */
