/*-------------------------------------------------------------------------
 * typmod_coerce.h
 *	  Values read for a target's columns brought to those columns' type
 *	  modifiers (varchar(5), numeric(6,2), timestamp(0), arrays of them) as
 *	  an INSERT's assignment brings them: rounded, or refused with the
 *	  INSERT's error ("value too long for type character varying(5)").
 *	  The read casts to the column's type only; the writes take the values
 *	  as of the column's modifier.
 *-------------------------------------------------------------------------
 */
#ifndef AUTOCDC_TYPMOD_COERCE_H
#define AUTOCDC_TYPMOD_COERCE_H

#include "postgres.h"

#include "access/tupdesc.h"
#include "nodes/pg_list.h"

typedef struct TypmodCoercion TypmodCoercion;

/*
 * c (NULL at first) with the coercions that desc's attributes first ..
 * first + n - 1 need, which go to target's columns names (n of them),
 * read as of the column's type or acdc_typmod_cast_type's; desc's types
 * and typmods are set to the columns'.  NULL while none needs one.
 */
extern TypmodCoercion *acdc_typmod_coercion(TypmodCoercion *c, Oid target, TupleDesc desc,
											int first, List *names);

/*
 * The type a read casts a value for a column of type "type" to: that type,
 * or for a domain its base type, which acdc_typmod_coercion then coerces to
 * the domain as an INSERT would, per event: the explicit cast to a domain
 * over varchar(5) truncates where the INSERT fails, and a cast in the read
 * would check a domain's NOT NULL and CHECK on values no write takes (a
 * delete's, a snapshot's deletes and truncate mark).
 */
extern Oid	acdc_typmod_cast_type(Oid type);

/*
 * values of desc's first natts attributes coerced in place, in the current
 * memory context (a delete's keys only: its values are not written); an
 * upsert's, whether or not it sets their columns.
 */
extern void acdc_typmod_apply(TypmodCoercion *c, Datum *values, bool *nulls, int natts);

#endif							/* AUTOCDC_TYPMOD_COERCE_H */
