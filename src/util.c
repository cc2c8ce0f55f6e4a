/*-------------------------------------------------------------------------
 * util.c
 *	  Identity switching, SPI wrappers and SQL text helpers shared by every
 *	  autocdc module.
 *-------------------------------------------------------------------------
 */
#include "autocdc.h"

#include <sys/mman.h>
#include <unistd.h>

#include "access/genam.h"
#include "access/xact.h"
#include "access/xlog.h"
#include "access/htup_details.h"
#include "access/relation.h"
#include "access/stratnum.h"
#include "access/table.h"
#include "catalog/indexing.h"
#include "catalog/pg_inherits.h"
#include "catalog/pg_extension.h"
#include "catalog/pg_class.h"
#include "catalog/pg_operator.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "parser/parse_coerce.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/partcache.h"
#include "utils/rel.h"
#include "utils/resowner.h"
#include "utils/syscache.h"
#include "utils/typcache.h"

/*
 * The installed extension's owner and version (NULL when it is not
 * installed), read from pg_extension's name index directly: every catalog
 * write asks, and this way needs no parse and plan each time.
 */
static Oid
extension_row(char **version)
{
	Relation	rel;
	ScanKeyData key;
	SysScanDesc scan;
	HeapTuple	tup;
	Oid			owner = InvalidOid;

	*version = NULL;
	rel = table_open(ExtensionRelationId, AccessShareLock);
	ScanKeyInit(&key, Anum_pg_extension_extname, BTEqualStrategyNumber,
				F_NAMEEQ, CStringGetDatum("autocdc"));
	scan = systable_beginscan(rel, ExtensionNameIndexId, true, NULL, 1, &key);
	tup = systable_getnext(scan);
	if (HeapTupleIsValid(tup))
	{
		bool		isnull;
		Datum		d = heap_getattr(tup, Anum_pg_extension_extversion,
									 RelationGetDescr(rel), &isnull);

		owner = ((Form_pg_extension) GETSTRUCT(tup))->extowner;
		if (!isnull)
			*version = text_to_cstring(DatumGetTextPP(d));
	}
	systable_endscan(scan);
	table_close(rel, AccessShareLock);
	return owner;
}

/* The version of autocdc's catalog in this database, or NULL. */
char *
autocdc_extension_version(void)
{
	char	   *version;

	(void) extension_row(&version);
	return version;
}

/*
 * The role that owns the extension (and so its catalog tables).  Catalog
 * writes run as this role, the way pg_cron does, so no function needs to be
 * SECURITY DEFINER.
 */
Oid
autocdc_extension_owner(void)
{
	char	   *version;
	Oid			owner = extension_row(&version);

	if (!OidIsValid(owner))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("extension \"autocdc\" is not installed in this database")));
	return owner;
}

/* Sets a setting until the current GUC nest level ends. */
static void
set_option_saved(const char *name, const char *value)
{
	(void) set_config_option(name, value, PGC_USERSET, PGC_S_SESSION,
							 GUC_ACTION_SAVE, true, 0, false);
}

/*
 * Act as `role` until autocdc_unbecome, with search_path pinned to
 * pg_catalog so that nothing a user put on their path can be picked up,
 * and the text forms of values pinned too.
 * `restricted` adds SECURITY_RESTRICTED_OPERATION, used for everything that
 * evaluates a flow's expressions.  An error unwinds both through the
 * (sub)transaction abort.
 */
void
autocdc_become(UserSwitch *sw, Oid role, bool restricted)
{
	int			sec;

	GetUserIdAndSecContext(&sw->save_userid, &sw->save_sec_context);
	sec = sw->save_sec_context | SECURITY_LOCAL_USERID_CHANGE;
	if (restricted)
		sec |= SECURITY_RESTRICTED_OPERATION;
	SetUserIdAndSecContext(role, sec);
	sw->save_nestlevel = NewGUCNestLevel();
	set_option_saved("search_path", AUTOCDC_RUN_SEARCH_PATH);

	/*
	 * Sequences, versions and truncate marks are kept as text: write and
	 * read them in one style whatever the session's, so they round-trip.
	 */
	set_option_saved("datestyle", "ISO, YMD");
	set_option_saved("intervalstyle", "postgres");
	set_option_saved("extra_float_digits", "3");

	/*
	 * A run's statements are planned on estimates that lag its batch (new
	 * rows, ephemeral relations), which can cross jit_above_cost; compiling
	 * then costs more than the statement (up to a few hundred ms).
	 */
	if (restricted)
		set_option_saved("jit", "off");
}

/*
 * The settings that change what a cast or a built-in function gives for
 * the same source row: time zone and the styles of dates, times,
 * intervals, floats and bytea (casts to and from text, to date, to
 * timestamptz), the zone abbreviations and locales that text input and
 * to_char read, XML parsing, text search's default configuration, and
 * how string literals in the kept expressions read.  A flow is created
 * under its creator's values and every run applies them, so a manual run
 * and the worker fold the same events.
 */
static const char *const pinned_settings[] = {
	"TimeZone", "DateStyle", "IntervalStyle", "extra_float_digits",
	"timezone_abbreviations", "bytea_output", "standard_conforming_strings",
	"xmloption", "xmlbinary", "lc_monetary", "lc_numeric", "lc_time",
	"default_text_search_config"
};

/* The pinned settings as in effect now, as 'name=value' (a text[]). */
Datum
autocdc_current_settings(void)
{
	List	   *items = NIL;

	for (int i = 0; i < lengthof(pinned_settings); i++)
		items = lappend(items, psprintf("%s=%s", pinned_settings[i],
										GetConfigOptionByName(pinned_settings[i], NULL, false)));
	return acdc_list_to_text_array(items);
}

/*
 * Applies a flow's pinned settings until the enclosing autocdc_unbecome
 * (the same GUC nest level); an invalid value (a locale this server lacks)
 * is an error.  A setting that already has its value is left alone (the
 * check of timezone_abbreviations reads a file).
 */
void
autocdc_apply_settings(ArrayType *settings)
{
	ListCell   *lc;

	if (settings == NULL)
		return;
	foreach(lc, acdc_text_array_to_list(PointerGetDatum(settings)))
	{
		char	   *name;
		char	   *value;

		ParseLongOption(lfirst(lc), &name, &value);
		if (value == NULL)
			continue;
		if (strcmp(GetConfigOptionByName(name, NULL, false), value) != 0)
			(void) set_config_option(name, value, PGC_USERSET, PGC_S_SESSION,
									 GUC_ACTION_SAVE, true, 0, false);
	}
}

/*
 * A value of the current result as text in the styles autocdc keeps
 * values in (truncate marks, snapshot versions): ISO dates, which read
 * back alike under every DateStyle, and floats in full, whatever the
 * flow's pinned settings are.
 */
char *
acdc_spi_value_canonical(int row, int col)
{
	int			nest = NewGUCNestLevel();
	char	   *v;

	set_option_saved("datestyle", "ISO, YMD");
	set_option_saved("intervalstyle", "postgres");
	set_option_saved("extra_float_digits", "3");
	set_option_saved("bytea_output", "hex");
	v = acdc_spi_value(row, col);
	AtEOXact_GUC(true, nest);
	return v;
}

/*
 * The value cast to text: the type's cast function where it has one (a
 * boolean is "true", as in SQL), else its output.
 */
char *
acdc_value_text(Datum value, bool isnull, Oid typid)
{
	Oid			func;
	Oid			out;
	bool		varlena;

	if (isnull)
		return "NULL";
	if (find_coercion_pathway(TEXTOID, typid, COERCION_EXPLICIT, &func) == COERCION_PATH_FUNC &&
		OidIsValid(func))
		return TextDatumGetCString(OidFunctionCall1(func, value));
	getTypeOutputInfo(typid, &out, &varlena);
	return OidOutputFunctionCall(out, value);
}

/* The value's output under the settings acdc_spi_value_canonical pins. */
char *
acdc_value_canonical(Datum value, Oid typid)
{
	int			nest = NewGUCNestLevel();
	Oid			out;
	bool		varlena;
	char	   *v;

	set_option_saved("datestyle", "ISO, YMD");
	set_option_saved("intervalstyle", "postgres");
	set_option_saved("extra_float_digits", "3");
	set_option_saved("bytea_output", "hex");
	getTypeOutputInfo(typid, &out, &varlena);
	v = OidOutputFunctionCall(out, value);
	AtEOXact_GUC(true, nest);
	return v;
}

/*
 * This cluster's system identifier, as pg_control_system() shows it: what a
 * checkpoint records of where it was taken (transaction ids mean something
 * in one cluster only).
 */
int64
autocdc_system_identifier(void)
{
	return (int64) GetSystemIdentifier();
}

/* The role that owns a relation (its code runs as this role). */
Oid
autocdc_relation_owner(Oid relid)
{
	HeapTuple	tup = SearchSysCache1(RELOID, ObjectIdGetDatum(relid));
	Oid			owner;

	if (!HeapTupleIsValid(tup))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_TABLE),
				 errmsg("relation with OID %u does not exist", relid)));
	owner = ((Form_pg_class) GETSTRUCT(tup))->relowner;
	ReleaseSysCache(tup);
	return owner;
}

/*
 * Act as the owner of `relid`, in a security-restricted context: what a
 * statement on the table sets off (triggers, rules, domain checks,
 * defaults, index expressions) runs with the rights of whoever could
 * attach it, never with the caller's (CVE-2020-25695's lesson).
 */
void
autocdc_become_owner_of(UserSwitch *sw, Oid relid)
{
	autocdc_become(sw, autocdc_relation_owner(relid), true);
}

/*
 * Runs fn(arg) in a subtransaction.  Returns NULL when it succeeded, else
 * its error, after rolling the subtransaction back (an error left to
 * propagate from inside it would leave the caller's transaction aborted).
 */
ErrorData *
autocdc_try(void (*fn) (void *arg), void *arg)
{
	MemoryContext oldcxt = CurrentMemoryContext;
	ResourceOwner oldowner = CurrentResourceOwner;
	ErrorData  *edata = NULL;

	BeginInternalSubTransaction(NULL);
	MemoryContextSwitchTo(oldcxt);
	PG_TRY();
	{
		fn(arg);
		ReleaseCurrentSubTransaction();
		MemoryContextSwitchTo(oldcxt);
		CurrentResourceOwner = oldowner;
	}
	PG_CATCH();
	{
		MemoryContextSwitchTo(oldcxt);
		edata = CopyErrorData();
		FlushErrorState();
		RollbackAndReleaseCurrentSubTransaction();
		MemoryContextSwitchTo(oldcxt);
		CurrentResourceOwner = oldowner;
	}
	PG_END_TRY();
	return edata;
}

void
autocdc_unbecome(UserSwitch *sw)
{
	AtEOXact_GUC(false, sw->save_nestlevel);
	SetUserIdAndSecContext(sw->save_userid, sw->save_sec_context);
}

/* Runs one statement; SPI failures other than SQL errors are internal. */
int
acdc_spi_exec(const char *sql, int nargs, Oid *argtypes, Datum *values,
		 const char *nulls, bool read_only)
{
	int			rc;

	elog(DEBUG2, "autocdc: %s", sql);
	if (nargs > 0)
		rc = SPI_execute_with_args(sql, nargs, argtypes, values, nulls,
								   read_only, 0);
	else
		rc = SPI_execute(sql, read_only, 0);
	if (rc < 0)
		elog(ERROR, "autocdc: SPI failed (%s) running: %s",
			 SPI_result_code_string(rc), sql);
	return rc;
}

/*
 * Runs a statement that joins a relation of tids to a table by ctid, as a
 * nested loop of TID lookups: the planner, estimating the relation at its
 * full size, would rather make it a hash join over a scan of the whole
 * table; and with statistics that lag the table (gathered when it was
 * nearly empty) it would loop over a scan of the whole table instead,
 * once per row of the relation.  With keys beside the tids (partitioned
 * targets, to prune partitions by), it would take an index scan on them
 * for the lookup.  Returns the rows processed.
 */
uint64
acdc_spi_exec_by_tid(const char *sql)
{
	int			nest = NewGUCNestLevel();

	set_option_saved("enable_hashjoin", "off");
	set_option_saved("enable_mergejoin", "off");
	set_option_saved("enable_seqscan", "off");
	set_option_saved("enable_indexscan", "off");
	set_option_saved("enable_bitmapscan", "off");
	acdc_spi_exec(sql, 0, NULL, NULL, NULL, false);
	AtEOXact_GUC(true, nest);
	return SPI_processed;
}

/*
 * Runs a statement whose lookups must go through the keys' index (one
 * probe per row, in its order: no sort), not a bitmap, a scan of the
 * table, or a scan of a partial index holding every delete of an event
 * store sorted afterwards: each reads the whole store per probe.  The
 * planner takes those when statistics say the store is empty (pg_class
 * reltuples 0 over thousands of pages, as a run killed before analyze can
 * leave them): a run over a million events had not finished after twenty
 * minutes.
 */
void
acdc_spi_exec_by_key(const char *sql)
{
	int			nest = NewGUCNestLevel();

	set_option_saved("enable_bitmapscan", "off");
	set_option_saved("enable_seqscan", "off");
	set_option_saved("enable_sort", "off");
	acdc_spi_exec(sql, 0, NULL, NULL, NULL, false);
	AtEOXact_GUC(true, nest);
}

/*
 * Runs a statement (with arguments) whose scan must go through an index,
 * not the table: on a table without statistics the planner takes a
 * sequential scan for an EXISTS it expects to stop early, and reads the
 * whole table when no row matches.
 */
void
acdc_spi_exec_by_index(const char *sql, int nargs, Oid *argtypes, Datum *values)
{
	int			nest = NewGUCNestLevel();

	set_option_saved("enable_seqscan", "off");
	acdc_spi_exec(sql, nargs, argtypes, values, NULL, false);
	AtEOXact_GUC(true, nest);
}

/* Runs a statement on autocdc's own catalog as the extension owner. */
void
acdc_catalog_exec(const char *sql, int nargs, Oid *argtypes, Datum *values,
			 const char *nulls)
{
	UserSwitch	sw;
	Oid			owner = autocdc_extension_owner();

	autocdc_become(&sw, owner, false);
	acdc_spi_exec(sql, nargs, argtypes, values, nulls, false);
	autocdc_unbecome(&sw);
}

char *
acdc_spi_value(int row, int col)
{
	return SPI_getvalue(SPI_tuptable->vals[row], SPI_tuptable->tupdesc, col);
}

bool
acdc_spi_bool(int row, int col)
{
	bool		isnull;
	Datum		d = SPI_getbinval(SPI_tuptable->vals[row],
								  SPI_tuptable->tupdesc, col, &isnull);

	return !isnull && DatumGetBool(d);
}

int64
acdc_spi_int64(int row, int col)
{
	bool		isnull;
	Datum		d = SPI_getbinval(SPI_tuptable->vals[row],
								  SPI_tuptable->tupdesc, col, &isnull);

	return isnull ? 0 : DatumGetInt64(d);
}

List *
acdc_text_array_to_list(Datum array)
{
	ArrayType  *arr = DatumGetArrayTypeP(array);
	Datum	   *elems;
	bool	   *nulls;
	int			n;
	List	   *result = NIL;

	if (ARR_NDIM(arr) > 1)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("column lists must be one-dimensional text arrays")));
	deconstruct_array(arr, TEXTOID, -1, false, TYPALIGN_INT,
					  &elems, &nulls, &n);
	for (int i = 0; i < n; i++)
	{
		if (nulls[i])
			ereport(ERROR,
					(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
					 errmsg("column lists must not contain NULL")));
		result = lappend(result, TextDatumGetCString(elems[i]));
	}
	return result;
}

Datum
acdc_list_to_text_array(List *names)
{
	int			n = list_length(names);
	Datum	   *elems = palloc(sizeof(Datum) * (n > 0 ? n : 1));
	int			i = 0;
	ListCell   *lc;

	foreach(lc, names)
		elems[i++] = CStringGetTextDatum((char *) lfirst(lc));
	return PointerGetDatum(construct_array(elems, n, TEXTOID, -1, false,
										   TYPALIGN_INT));
}

char *
acdc_rel_qualified_name(Oid relid)
{
	char	   *relname = get_rel_name(relid);

	if (relname == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_TABLE),
				 errmsg("relation with OID %u does not exist", relid)));
	return quote_qualified_identifier(get_namespace_name(get_rel_namespace(relid)),
									  relname);
}

char *
acdc_type_qualified_name(Oid typid)
{
	return format_type_be_qualified(typid);
}

/* Appends "prefix.a, prefix.b" (or "a, b"), each name quoted. */
void
acdc_append_column_list(StringInfo buf, List *names, const char *prefix)
{
	ListCell   *lc;
	bool		first = true;

	foreach(lc, names)
	{
		if (!first)
			appendStringInfoString(buf, ", ");
		if (prefix)
			appendStringInfo(buf, "%s.", prefix);
		appendStringInfoString(buf, quote_identifier((char *) lfirst(lc)));
		first = false;
	}
}

/* The position of name in names, or -1. */
int
acdc_list_index_of_string(List *names, const char *name)
{
	ListCell   *lc;

	foreach(lc, names)
		if (strcmp(lfirst(lc), name) == 0)
			return foreach_current_index(lc);
	return -1;
}

bool
acdc_list_has_string(List *names, const char *name)
{
	ListCell   *lc;

	foreach(lc, names)
		if (strcmp((char *) lfirst(lc), name) == 0)
			return true;
	return false;
}

/* Two lists of strings, equal element by element. */
bool
acdc_same_string_lists(List *a, List *b)
{
	ListCell   *la,
			   *lb;

	if (list_length(a) != list_length(b))
		return false;
	forboth(la, a, lb, b)
		if (strcmp(lfirst(la), lfirst(lb)) != 0)
		return false;
	return true;
}

static void
append_operator(StringInfo buf, Oid opoid)
{
	HeapTuple	tup = SearchSysCache1(OPEROID, ObjectIdGetDatum(opoid));
	Form_pg_operator op;

	if (!HeapTupleIsValid(tup))
		elog(ERROR, "cache lookup failed for operator %u", opoid);
	op = (Form_pg_operator) GETSTRUCT(tup);
	appendStringInfo(buf, "OPERATOR(%s.%s)",
					 quote_identifier(get_namespace_name(op->oprnamespace)),
					 NameStr(op->oprname));
	ReleaseSysCache(tup);
}

/*
 * Null-safe equality with the type's own default equality operator, named
 * with its schema so a pinned search_path finds it; types without one
 * (json, point, ...) are compared by their text form.
 */
void
acdc_append_nullsafe_eq(StringInfo buf, const char *a, const char *b, Oid typid)
{
	TypeCacheEntry *tc = lookup_type_cache(typid, TYPECACHE_EQ_OPR);

	if (OidIsValid(tc->eq_opr))
	{
		appendStringInfo(buf, "COALESCE((%s) ", a);
		append_operator(buf, tc->eq_opr);
		appendStringInfo(buf, " (%s), (%s) IS NULL AND (%s) IS NULL)", b, a, b);
	}
	else
		appendStringInfo(buf, "((%s)::pg_catalog.text IS NOT DISTINCT FROM (%s)::pg_catalog.text)",
						 a, b);
}

/* "(a op b)" for op in < > <= >= =, using the type's btree operators. */
void
acdc_append_seq_cmp(StringInfo buf, const char *a, const char *op, const char *b,
			   Oid typid)
{
	TypeCacheEntry *tc = lookup_type_cache(typid, TYPECACHE_LT_OPR |
										   TYPECACHE_GT_OPR |
										   TYPECACHE_EQ_OPR);
	Oid			opoid;

	if (strcmp(op, "<") == 0)
		opoid = tc->lt_opr;
	else if (strcmp(op, ">") == 0)
		opoid = tc->gt_opr;
	else if (strcmp(op, "=") == 0)
		opoid = tc->eq_opr;
	else if (strcmp(op, "<=") == 0)
		opoid = OidIsValid(tc->gt_opr) ? get_negator(tc->gt_opr) : InvalidOid;
	else if (strcmp(op, ">=") == 0)
		opoid = OidIsValid(tc->lt_opr) ? get_negator(tc->lt_opr) : InvalidOid;
	else
		elog(ERROR, "unexpected comparison \"%s\"", op);
	if (!OidIsValid(opoid))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_FUNCTION),
				 errmsg("type %s has no \"%s\" operator for sequencing",
						format_type_be(typid), op)));
	appendStringInfo(buf, "((%s) ", a);
	append_operator(buf, opoid);
	appendStringInfo(buf, " (%s))", b);
}

/*
 * The columns of the partition keys of a partitioned table, at every
 * level (NIL for a table); *expr is set when a partition key has an
 * expression.
 */
List *
acdc_partition_key_columns(Oid relid, bool *expr)
{
	List	   *cols = NIL;
	ListCell   *lc;

	*expr = false;
	if (get_rel_relkind(relid) != RELKIND_PARTITIONED_TABLE)
		return NIL;
	foreach(lc, find_all_inheritors(relid, AccessShareLock, NULL))
	{
		Relation	rel;
		PartitionKey key;

		if (get_rel_relkind(lfirst_oid(lc)) != RELKIND_PARTITIONED_TABLE)
			continue;
		rel = relation_open(lfirst_oid(lc), AccessShareLock);
		key = RelationGetPartitionKey(rel);
		for (int i = 0; i < key->partnatts; i++)
		{
			if (key->partattrs[i] == 0)
				*expr = true;
			else
			{
				char	   *col = get_attname(RelationGetRelid(rel), key->partattrs[i], false);

				if (!acdc_list_has_string(cols, col))
					cols = lappend(cols, col);
			}
		}
		relation_close(rel, AccessShareLock);
	}
	return cols;
}

/* The value columns of an SCD 2 event store: all but the keys and autocdc's own. */
List *
acdc_event_store_value_columns(Oid events, List *keys)
{
	Relation	rel = relation_open(events, AccessShareLock);
	TupleDesc	desc = RelationGetDescr(rel);
	List	   *result = NIL;

	for (int i = 0; i < desc->natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, i);
		char	   *name = NameStr(att->attname);

		if (att->attisdropped || acdc_list_has_string(keys, name) ||
			strncmp(name, AUTOCDC_RESERVED_PREFIX, strlen(AUTOCDC_RESERVED_PREFIX)) == 0)
			continue;
		result = lappend(result, pstrdup(name));
	}
	relation_close(rel, AccessShareLock);
	return result;
}

/*
 * Makes the pages of [p, p + size) present and writable in one call
 * (MADV_POPULATE_WRITE, Linux 5.14 on).  A run fills hundreds of MB of
 * memory the backend has not touched, and a fault per 4 kB page of it took
 * a fifth of an SCD 1 run over 1M events (perf: the fault's entry and
 * exit, not the zeroing).  Only advice: where the kernel refuses it the
 * pages fault in as before.
 */
void
acdc_prefault(void *p, Size size)
{
#ifdef MADV_POPULATE_WRITE
	uintptr_t	page = (uintptr_t) sysconf(_SC_PAGESIZE);
	uintptr_t	start = (uintptr_t) p - (uintptr_t) p % page;
	int			save_errno = errno;

	if (size > 0)
		(void) madvise((void *) start, (uintptr_t) p + size - start, MADV_POPULATE_WRITE);
	errno = save_errno;
#endif
}

/* size bytes of cxt (not zeroed), their pages present (above) */
void *
acdc_alloc_prefaulted(MemoryContext cxt, Size size)
{
	void	   *p = MemoryContextAllocExtended(cxt, size, MCXT_ALLOC_HUGE);

	acdc_prefault(p, size);
	return p;
}
