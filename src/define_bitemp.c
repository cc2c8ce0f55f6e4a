/*-------------------------------------------------------------------------
 * define_bitemp.c
 *	  What a bitemporal target needs (doc/design.md §2.15): its arguments'
 *	  checks, the business and system sequences as one ROW(business,
 *	  system) event sequence, the four history columns with their keys and
 *	  indexes, and autocdc.as_of / autocdc.history_as_of for the target.
 *	  The event store is SCD 2's, keyed by that sequence.
 *-------------------------------------------------------------------------
 */
#include "define.h"
#include "collation.h"

#include "catalog/pg_proc.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "parser/parse_func.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"

/* "SCD type 1", "SCD type 2" or "bitemporal", for messages. */
const char *
acdc_scd_type_name(int scd_type)
{
	return scd_type == ACDC_BITEMPORAL ? "bitemporal" :
		scd_type == 2 ? "SCD type 2" : "SCD type 1";
}

/* system_sequence_by: required for bitemporal flows, refused for others. */
void
acdc_bt_check_args(FlowSpec *spec, List *track_list, List *track_except)
{
	if (spec->scd_type != ACDC_BITEMPORAL)
	{
		if (spec->system_sequence_by != NULL)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("system_sequence_by applies only to bitemporal flows"),
					 errhint("Remove system_sequence_by, or use stored_as_scd_type => 'bitemporal'.")));
		return;
	}
	if (spec->system_sequence_by == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("a bitemporal flow needs system_sequence_by"),
				 errhint("Name the column or expression that orders events in system time, such as system_sequence_by => 'ingested_at'.")));
	if (spec->truncates != NULL)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("apply_as_truncates does not apply to bitemporal flows"),
				 errdetail("A bitemporal target keeps every belief about every key; a truncate has no place in it."),
				 errhint("Remove apply_as_truncates, or delete the keys with apply_as_deletes.")));
	if (track_list != NIL || track_except != NIL)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s does not apply to bitemporal flows",
						track_list != NIL ? "track_history_column_list"
						: "track_history_except_column_list"),
				 errdetail("A bitemporal target keeps history on every column."),
				 errhint("Remove the option, or use stored_as_scd_type => 2.")));
}

/*
 * The events' sequence: ROW(business, system), NULL when either is (the
 * NULL-sequence error of either).  Called once the ROW has its composite
 * type (seq_norm "(ROW(b, s))::type"); sys_norm and biz_norm are the parts.
 */
void
acdc_bt_wrap_sequence(FlowSpec *spec)
{
	spec->seq_norm = psprintf("CASE WHEN (%s) IS NULL OR (%s) IS NULL THEN NULL ELSE %s END",
							  spec->biz_norm, spec->sys_norm, spec->seq_norm);
}

/* Field n (0: business, 1: system) of the sequence: type and collation, for DDL. */
static char *
field_type(FlowSpec *spec, int n)
{
	StringInfoData buf;
	Oid			typid = list_nth_oid(spec->seq_row_types, n);

	initStringInfo(&buf);
	appendStringInfoString(&buf, acdc_type_with_typmod(typid, list_nth_int(spec->seq_row_typmods, n)));
	acdc_append_collation(&buf, list_nth_oid(spec->seq_row_colls, n), typid);
	return buf.data;
}

/*
 * A target autocdc created gets the four columns, the primary key (keys,
 * __start_at, __system_start_at) and a unique index on the keys for the
 * current belief of the open version; an index on the keys and the
 * system start serves history_as_of.
 */
void
acdc_bt_add_history_columns(FlowSpec *spec)
{
	char	   *qname = acdc_rel_qualified_name(spec->target);
	char	   *btype = field_type(spec, 0);
	char	   *stype = field_type(spec, 1);
	StringInfoData keys;
	UserSwitch	sw;

	initStringInfo(&keys);
	acdc_append_column_list(&keys, spec->keys, NULL);
	autocdc_become_owner_of(&sw, spec->target);
	acdc_spi_exec(psprintf("ALTER TABLE %s ADD COLUMN __start_at %s NOT NULL, "
						   "ADD COLUMN __end_at %s, ADD COLUMN __system_start_at %s NOT NULL, "
						   "ADD COLUMN __system_end_at %s, "
						   "ADD PRIMARY KEY (%s, __start_at, __system_start_at); "
						   "CREATE UNIQUE INDEX ON %s (%s) WHERE __end_at IS NULL AND __system_end_at IS NULL",
						   qname, btype, btype, stype, stype, keys.data, qname, keys.data),
				  0, NULL, NULL, NULL, false);
	autocdc_unbecome(&sw);
}

static void
check_column(FlowSpec *spec, Oid relid, const char *col, int field)
{
	AttrNumber	att = get_attnum(relid, col);
	Oid			want = list_nth_oid(spec->seq_row_types, field);
	Oid			coll = list_nth_oid(spec->seq_row_colls, field);

	if (att == InvalidAttrNumber)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_COLUMN),
				 errmsg("bitemporal target \"%s\" needs columns __start_at, __end_at, __system_start_at and __system_end_at",
						get_rel_name(relid)),
				 errhint("Add them with the types of sequence_by and system_sequence_by, or let autocdc create the target.")));
	if (get_atttype(relid, att) != want)
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("%s of \"%s\" is of type %s, but %s is of type %s", col,
						get_rel_name(relid), format_type_be(get_atttype(relid, att)),
						field == 0 ? "sequence_by" : "system_sequence_by", format_type_be(want)),
				 errdetail("The history columns have the types of the sequences.")));
	acdc_refuse_collation(field == 0 ? "sequence_by" : "system_sequence_by", coll, col, relid,
						  acdc_column_collation(relid, col),
						  "The history columns order versions as the sequences order events.", true);
}

/*
 * An existing bitemporal target: the four columns of the sequences' types
 * and collations, and a unique index on (keys, __start_at,
 * __system_start_at).
 */
void
acdc_bt_check_existing_target(FlowSpec *spec, Oid relid)
{
	List	   *pk = list_copy(spec->keys);

	check_column(spec, relid, "__start_at", 0);
	check_column(spec, relid, "__end_at", 0);
	check_column(spec, relid, "__system_start_at", 1);
	check_column(spec, relid, "__system_end_at", 1);
	pk = lappend(lappend(pk, "__start_at"), "__system_start_at");
	if (!acdc_define_has_unique_index(relid, pk))
	{
		StringInfoData cols;

		initStringInfo(&cols);
		acdc_append_column_list(&cols, pk, NULL);
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_TABLE_DEFINITION),
				 errmsg("bitemporal target \"%s\" has no unique index on (%s)", get_rel_name(relid), cols.data),
				 errdetail("A key has one row per __start_at and __system_start_at."),
				 errhint("%s", acdc_define_unique_index_hint(relid, pk))));
	}
}

/* "$n" in the collation of field "field", whatever the caller's */
static char *
param(FlowSpec *spec, int n, int field)
{
	StringInfoData buf;

	initStringInfo(&buf);
	appendStringInfo(&buf, "$%d", n);
	acdc_append_collate(&buf, list_nth_oid(spec->seq_row_colls, field));
	return buf.data;
}

static void
create_function(FlowSpec *spec, Oid owner, const char *fname, int nargs, Oid *argtypes,
				const char *args, const char *body, const char *comment)
{
	List	   *name = list_make2(makeString("autocdc"), makeString(pstrdup(fname)));
	char	   *sig;
	UserSwitch	sw;
	Oid			fn;
	StringInfoData types;

	if (OidIsValid(LookupFuncName(name, nargs, argtypes, true)))
		return;					/* an earlier flow made it */
	initStringInfo(&types);
	for (int i = 0; i < nargs; i++)
		appendStringInfo(&types, "%s%s", i > 0 ? ", " : "", acdc_type_qualified_name(argtypes[i]));
	sig = psprintf("autocdc.%s(%s)", fname, types.data);
	autocdc_become(&sw, autocdc_extension_owner(), false);
	acdc_spi_exec(psprintf("CREATE FUNCTION autocdc.%s(%s) RETURNS SETOF %s "
						   "LANGUAGE sql STABLE AS %s; "
						   "ALTER FUNCTION %s OWNER TO %s; COMMENT ON FUNCTION %s IS %s",
						   fname, args, acdc_type_qualified_name(argtypes[0]),
						   quote_literal_cstr(body), sig,
						   quote_identifier(GetUserNameFromId(owner, false)), sig,
						   quote_literal_cstr(comment)),
				  0, NULL, NULL, NULL, false);
	autocdc_unbecome(&sw);
	fn = LookupFuncName(name, nargs, argtypes, false);
	acdc_define_depend_on_target(ProcedureRelationId, fn, spec->target);
}

/* "__system_start_at <= s AND (__system_end_at IS NULL OR __system_end_at > s)" */
static void
append_holds(StringInfo buf, FlowSpec *spec, const char *start, const char *end,
			 const char *at, int field)
{
	Oid			typid = list_nth_oid(spec->seq_row_types, field);

	acdc_append_seq_cmp(buf, start, "<=", at, typid);
	appendStringInfo(buf, " AND (%s IS NULL OR ", end);
	acdc_append_seq_cmp(buf, end, ">", at, typid);
	appendStringInfoChar(buf, ')');
}

/*
 * autocdc.as_of(NULL::target, business_at, system_at DEFAULT NULL): the
 * rows believed at system_at (NULL: now) to hold at business_at; and
 * autocdc.history_as_of(NULL::target, system_at): the history believed
 * at system_at.  SQL functions the planner inlines, one pair per target,
 * gone with it.
 */
void
acdc_bt_create_functions(FlowSpec *spec, Oid owner)
{
	char	   *qtarget = acdc_rel_qualified_name(spec->target);
	Oid			rowtype = get_rel_type_id(spec->target);
	Oid			btype = list_nth_oid(spec->seq_row_types, 0);
	Oid			stype = list_nth_oid(spec->seq_row_types, 1);
	Oid			as_of_types[3] = {rowtype, btype, stype};
	Oid			hist_types[2] = {rowtype, stype};
	StringInfoData body;

	initStringInfo(&body);
	appendStringInfo(&body, "SELECT * FROM %s WHERE ", qtarget);
	append_holds(&body, spec, "__start_at", "__end_at", param(spec, 2, 0), 0);
	appendStringInfo(&body, " AND CASE WHEN $3 IS NULL THEN __system_end_at IS NULL ELSE ");
	append_holds(&body, spec, "__system_start_at", "__system_end_at", param(spec, 3, 1), 1);
	appendStringInfoString(&body, " END");
	create_function(spec, owner, "as_of", 3, as_of_types,
					psprintf("target %s, business_at %s, system_at %s DEFAULT NULL",
							 acdc_type_qualified_name(rowtype), acdc_type_qualified_name(btype),
							 acdc_type_qualified_name(stype)),
					body.data,
					psprintf("rows of bitemporal %s believed at a system time (NULL: now) to hold at a business time", qtarget));

	resetStringInfo(&body);
	appendStringInfo(&body, "SELECT * FROM %s WHERE ", qtarget);
	append_holds(&body, spec, "__system_start_at", "__system_end_at", param(spec, 2, 1), 1);
	create_function(spec, owner, "history_as_of", 2, hist_types,
					psprintf("target %s, system_at %s", acdc_type_qualified_name(rowtype),
							 acdc_type_qualified_name(stype)),
					body.data,
					psprintf("the history of bitemporal %s as it was believed at a system time", qtarget));
}
