/*-------------------------------------------------------------------------
 * typmod_coerce.c
 *	  Values read for a target's columns brought to the columns' type
 *	  modifiers as an INSERT's assignment does (typmod_coerce.h).
 *
 * The parser's own coercion (coerce_to_target_type, COERCION_ASSIGNMENT)
 * is built once per column over a parameter and evaluated per value, so a
 * value gets exactly the length or precision coercion the INSERT of it
 * would run, arrays element by element.
 *-------------------------------------------------------------------------
 */
#include "typmod_coerce.h"
#include "autocdc.h"

#include "executor/executor.h"
#include "nodes/makefuncs.h"
#include "nodes/params.h"
#include "optimizer/optimizer.h"
#include "parser/parse_coerce.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"

struct TypmodCoercion
{
	int			n;
	int		   *att;			/* per coercion: the attribute it applies to */
	Oid		   *type;			/* ... and its type */
	ExprState **expr;
	ExprContext *econtext;
	ParamListInfo params;
};

TypmodCoercion *
acdc_typmod_coercion(TypmodCoercion *c, Oid target, TupleDesc desc, int first, List *names)
{
	ListCell   *lc;

	foreach(lc, names)
	{
		int			a = first + foreach_current_index(lc);
		Form_pg_attribute att = TupleDescAttr(desc, a);
		AttrNumber	tatt = get_attnum(target, lfirst(lc));
		Oid			ttype;
		int32		ttypmod;
		Oid			tcoll;
		Oid			intype;
		Param	   *p;
		Node	   *e;

		if (tatt == InvalidAttrNumber)
			continue;			/* the read reports a column gone */
		get_atttypetypmodcoll(target, tatt, &ttype, &ttypmod, &tcoll);
		if (ttype == att->atttypid ? ttypmod < 0 || att->atttypmod == ttypmod :
			acdc_typmod_cast_type(ttype) != att->atttypid)
			continue;
		p = makeNode(Param);
		p->paramkind = PARAM_EXTERN;
		p->paramid = 1;
		p->paramtype = att->atttypid;
		p->paramtypmod = att->atttypmod;
		p->paramcollid = att->attcollation;
		p->location = -1;
		e = coerce_to_target_type(NULL, (Node *) p, att->atttypid, ttype, ttypmod,
								  COERCION_ASSIGNMENT, COERCE_IMPLICIT_CAST, -1);
		if (e == NULL)
			elog(ERROR, "autocdc: no coercion of %s to %s", format_type_be(att->atttypid),
				 format_type_be(ttype));
		intype = att->atttypid;
		if (att->atttypid != ttype)
		{
			/* a domain's values, in the column's collation (a key's is the source's) */
			att->atttypid = ttype;
			att->attcollation = tcoll;
		}
		att->atttypmod = ttypmod;
		if (e == (Node *) p)
			continue;
		if (c == NULL)
		{
			c = palloc0(sizeof(TypmodCoercion));
			c->econtext = CreateStandaloneExprContext();
			c->params = makeParamList(1);
			c->params->numParams = 1;
			c->econtext->ecxt_param_list_info = c->params;
		}
		c->att = c->n ? repalloc(c->att, sizeof(int) * (c->n + 1)) : palloc(sizeof(int));
		c->type = c->n ? repalloc(c->type, sizeof(Oid) * (c->n + 1)) : palloc(sizeof(Oid));
		c->expr = c->n ? repalloc(c->expr, sizeof(ExprState *) * (c->n + 1)) : palloc(sizeof(ExprState *));
		c->att[c->n] = a;
		c->type[c->n] = intype;
		c->expr[c->n++] = ExecInitExpr((Expr *) expression_planner((Expr *) e), NULL);
	}
	return c;
}

Oid
acdc_typmod_cast_type(Oid type)
{
	return getBaseType(type);
}

void
acdc_typmod_apply(TypmodCoercion *c, Datum *values, bool *nulls, int natts)
{
	ParamExternData *prm = &c->params->params[0];

	for (int i = 0; i < c->n; i++)
	{
		int			a = c->att[i];

		if (a >= natts)
			continue;

		/* a NULL too: a domain may refuse it */
		prm->value = values[a];
		prm->isnull = nulls[a];
		prm->pflags = PARAM_FLAG_CONST;
		prm->ptype = c->type[i];
		values[a] = ExecEvalExpr(c->expr[i], c->econtext, &nulls[a]);
	}
}
