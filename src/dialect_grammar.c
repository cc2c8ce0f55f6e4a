/*-------------------------------------------------------------------------
 * dialect_grammar.c
 *	  The clause grammar of the reference system's SQL (reference §1.2):
 *	  CREATE [OR REFRESH] STREAMING TABLE, CREATE FLOW ... AS AUTO CDC /
 *	  AUTO CDC FROM SNAPSHOT / INSERT INTO ... BY NAME, APPLY CHANGES INTO,
 *	  DROP FLOW, REFRESH STREAMING TABLE.  The clauses of AUTO CDC come in
 *	  any order, as Spark's open-source parser takes them.  Statements come
 *	  out as the named arguments of a function-API call; expressions and
 *	  queries as PostgreSQL text (dl_render).
 *-------------------------------------------------------------------------
 */
#include "dialect.h"

#include "mb/pg_wchar.h"
#include "nodes/parsenodes.h"
#include "parser/gramparse.h"
#include "utils/builtins.h"

typedef struct P
{
	DlScript   *s;
	int			i;
	unsigned	seen;			/* clauses of the current statement */
	int			clause;			/* where the current clause begins */
} P;

/* AUTO CDC clauses, as bits of P.seen */
enum
{
	C_KEYS = 1 << 0, C_IGNORE = 1 << 1, C_DELETE = 1 << 2, C_TRUNCATE = 1 << 3,
	C_SEQUENCE = 1 << 4, C_COLUMNS = 1 << 5, C_STORED = 1 << 6, C_TRACK = 1 << 7,
	C_VERSION = 1 << 8, C_COMMENT = 1 << 9, C_PROPS = 1 << 10, C_TO_UPDATE = 1 << 11,
	C_SYSTEM = 1 << 12
};

static const char *const cdc_clause_list =
"KEYS, IGNORE NULL UPDATES, APPLY AS DELETE WHEN, APPLY AS TRUNCATE WHEN, SEQUENCE BY, SYSTEM SEQUENCE BY, COLUMNS, COLUMNS TO UPDATE, STORED AS, TRACK HISTORY ON";
static const char *const snapshot_clauses = "WITH VERSION, KEYS, STORED AS, TRACK HISTORY ON";

void
dl_syntax_error(DlScript *s, int i, const char *detail)
{
	char	   *near = dl_tok_orig_text(s, i);

	ereport(ERROR,
			(errcode(ERRCODE_SYNTAX_ERROR),
			 near ? errmsg("syntax error at or near \"%s\"", near)
			 : errmsg("syntax error at end of input"),
			 detail ? errdetail("%s", detail) : 0,
			 internalerrquery(s->orig),
			 internalerrposition(dl_orig_cursor(s, s->toks[i].start))));
}

static void
clause_error(P *p, int code, const char *msg, const char *hint)
{
	ereport(ERROR,
			(errcode(code),
			 errmsg("%s", msg),
			 hint ? errhint("%s", hint) : 0,
			 internalerrquery(p->s->orig),
			 internalerrposition(dl_orig_cursor(p->s, p->s->toks[p->i].start))));
}

static bool
word(P *p, const char *w)
{
	return dl_is_word(p->s, p->i, w);
}

static bool
word_at(P *p, int k, const char *w)
{
	return dl_is_word(p->s, p->i + k, w);
}

static bool
accept(P *p, const char *w)
{
	if (!word(p, w))
		return false;
	p->i++;
	return true;
}

static void
expect(P *p, const char *w, const char *detail)
{
	if (!accept(p, w))
		dl_syntax_error(p->s, p->i, detail);
}

static bool
at_char(P *p, char c)
{
	return dl_is_char(p->s, p->i, c);
}

static void
expect_char(P *p, char c)
{
	if (!at_char(p, c))
		dl_syntax_error(p->s, p->i, NULL);
	p->i++;
}

static bool
at_end(P *p)
{
	return at_char(p, ';') || p->s->toks[p->i].type == 0;
}

/* Marks a clause, refusing it twice. */
static void
once_only(P *p, unsigned clause, const char *what)
{
	if (p->seen & clause)
		ereport(ERROR,
				(errcode(ERRCODE_SYNTAX_ERROR),
				 errmsg("conflicting or redundant %s clauses", what),
				 internalerrquery(p->s->orig),
				 internalerrposition(dl_orig_cursor(p->s, p->s->toks[p->clause].start))));
	p->seen |= clause;
}

static char *
ident(P *p)
{
	DlTok	   *t = &p->s->toks[p->i];

	if (t->type != IDENT && t->type != UIDENT && !t->word)
		dl_syntax_error(p->s, p->i, NULL);
	p->i++;
	return t->str;
}

static DlName *
name(P *p)
{
	DlName	   *n = palloc0(sizeof(DlName));

	n->tok = p->i;
	n->live = word(p, "live") && dl_is_char(p->s, p->i + 1, '.');
	n->parts = list_make1(ident(p));
	while (at_char(p, '.'))
	{
		p->i++;
		n->parts = lappend(n->parts, ident(p));
	}
	if (n->live)
		n->parts = list_delete_first(n->parts);
	if (list_length(n->parts) > 3 || (n->live && list_length(n->parts) != 1))
		dl_syntax_error(p->s, n->tok, "A name has at most three parts; LIVE.name has two.");
	return n;
}

char *
dl_name_last(DlName *n)
{
	return llast(n->parts);
}

/* The name as PostgreSQL text; LIVE.x is x in the first schema of search_path. */
char *
dl_name_sql(DlScript *s, DlName *n)
{
	StringInfoData buf;
	ListCell   *lc;

	initStringInfo(&buf);
	if (n->live)
		appendStringInfo(&buf, "%s.", quote_identifier(dl_live_schema(s, n->tok)));
	foreach(lc, n->parts)
	{
		if (foreach_current_index(lc) > 0)
			appendStringInfoChar(&buf, '.');
		appendStringInfoString(&buf, quote_identifier(lfirst(lc)));
	}
	return buf.data;
}

static List *
ident_list(P *p)
{
	List	   *l = NIL;

	expect_char(p, '(');
	do
		l = lappend(l, ident(p));
	while (at_char(p, ',') && p->i++);
	expect_char(p, ')');
	return l;
}

/* (cols) or * EXCEPT (cols): true for the latter */
static bool
column_spec(P *p, List **cols)
{
	if (at_char(p, '*') || (p->s->toks[p->i].type == Op && strcmp(p->s->toks[p->i].str, "*") == 0))
	{
		p->i++;
		expect(p, "except", NULL);
		*cols = ident_list(p);
		return true;
	}
	*cols = ident_list(p);
	return false;
}

void
dl_add_arg(DlStmt *st, const char *argname, DlArgType type, char *text, List *list, int ival)
{
	DlArg	   *a = palloc0(sizeof(DlArg));

	a->name = argname;
	a->type = type;
	a->text = text;
	a->list = list;
	a->ival = ival;
	st->args = lappend(st->args, a);
}

/* Whether token i (at depth 0) begins an AUTO CDC clause. */
static bool
clause_start(P *p, int i)
{
	DlScript   *s = p->s;

	if (s->toks[i].type == 0 || dl_is_char(s, i, ';') || dl_is_char(s, i, ')'))
		return true;
	if (!s->toks[i].word)
		return false;
	return (dl_is_word(s, i, "keys") && dl_is_char(s, i + 1, '(')) ||
		(dl_is_word(s, i, "ignore") && dl_is_word(s, i + 1, "null")) ||
		(dl_is_word(s, i, "apply") && dl_is_word(s, i + 1, "as")) ||
		(dl_is_word(s, i, "sequence") && dl_is_word(s, i + 1, "by")) ||
		(dl_is_word(s, i, "system") && dl_is_word(s, i + 1, "sequence")) ||
		(dl_is_word(s, i, "columns") && (dl_is_char(s, i + 1, '(') || dl_is_char(s, i + 1, '*') ||
										 dl_is_word(s, i + 1, "to") ||
										 (s->toks[i + 1].type == Op && strcmp(s->toks[i + 1].str, "*") == 0))) ||
		(dl_is_word(s, i, "stored") && dl_is_word(s, i + 1, "as")) ||
		(dl_is_word(s, i, "track") && dl_is_word(s, i + 1, "history")) ||
		(dl_is_word(s, i, "with") && dl_is_word(s, i + 1, "version"));
}

/* An expression up to the next clause: PostgreSQL text. */
static char *
expression(P *p, bool struct_to_row)
{
	int			from = p->i;
	int			depth = 0;

	while (p->s->toks[p->i].type != 0)
	{
		if (depth == 0 && clause_start(p, p->i))
			break;
		if (at_char(p, '('))
			depth++;
		else if (at_char(p, ')'))
			depth--;
		p->i++;
	}
	if (p->i == from)
		dl_syntax_error(p->s, p->i, "An expression is expected here.");
	return dl_render(p->s, from, p->i, struct_to_row);
}

/* A query to the end of the statement, or to the ')' closing its group. */
static int
query_end(P *p)
{
	int			depth = 0;
	int			i = p->i;

	for (; p->s->toks[i].type != 0; i++)
	{
		if (depth == 0 && (dl_is_char(p->s, i, ';') || dl_is_char(p->s, i, ')')))
			break;
		if (dl_is_char(p->s, i, '('))
			depth++;
		else if (dl_is_char(p->s, i, ')'))
			depth--;
	}
	if (i == p->i)
		dl_syntax_error(p->s, i, "A query is expected here.");
	return i;
}

/*
 * SELECT * FROM [STREAM] (name) | [STREAM] name, exactly [from, to): the
 * relation itself is the source.
 */
static DlName *
simple_source(P *p, int from, int to, bool allow_bare)
{
	P			q = *p;
	DlName	   *n;
	bool		paren;

	q.i = from;
	/* (name) alone, where a query or a relation may be written */
	if (!(allow_bare && !word(&q, "select")))
	{
		if (!accept(&q, "select"))
			return NULL;
		if (!(at_char(&q, '*') || (q.s->toks[q.i].type == Op && strcmp(q.s->toks[q.i].str, "*") == 0)))
			return NULL;
		q.i++;
		if (!accept(&q, "from"))
			return NULL;
		accept(&q, "stream");
	}
	paren = at_char(&q, '(');
	if (paren)
		q.i++;
	if (q.s->toks[q.i].type != IDENT && !q.s->toks[q.i].word)
		return NULL;
	n = name(&q);
	if (paren && !at_char(&q, ')'))
		return NULL;
	if (paren)
		q.i++;
	return q.i == to ? n : NULL;
}

/* FROM source: [STREAM] (name) | STREAM name | name | (query) */
static void
cdc_source(P *p, DlStmt *st)
{
	bool		stream = accept(p, "stream");

	if (at_char(p, '('))
	{
		int			from = ++p->i;
		int			to = query_end(p);

		st->source = simple_source(p, from, to, true);
		if (st->source == NULL)
		{
			if (stream)
				dl_syntax_error(p->s, from, "STREAM takes a relation; write the query as FROM (SELECT ... FROM STREAM(relation) ...).");
			dl_add_arg(st, "source_query", DL_TEXT, dl_render(p->s, from, to, false), NIL, 0);
		}
		p->i = to;
		expect_char(p, ')');
		return;
	}
	st->source = name(p);
}

static void
stored_as(P *p, DlStmt *st, bool snapshot)
{
	once_only(p, C_STORED, "STORED AS");
	if (accept(p, "bitemporal"))
	{
		if (snapshot)
			dl_syntax_error(p->s, p->i - 1, "A snapshot flow is stored as SCD TYPE 1 or SCD TYPE 2.");
		dl_add_arg(st, "stored_as_scd_type", DL_TEXT, pstrdup("bitemporal"), NIL, 0);
		return;
	}
	expect(p, "scd", "STORED AS takes SCD TYPE 1, SCD TYPE 2 or BITEMPORAL.");
	expect(p, "type", NULL);
	if (word(p, "bitemporal"))
		ereport(ERROR,
				(errcode(ERRCODE_SYNTAX_ERROR),
				 errmsg("syntax error at or near \"%s\"", dl_tok_orig_text(p->s, p->i)),
				 errhint("Write STORED AS BITEMPORAL, without SCD TYPE."),
				 internalerrquery(p->s->orig),
				 internalerrposition(dl_orig_cursor(p->s, p->s->toks[p->i].start))));
	if (p->s->toks[p->i].type != ICONST)
		dl_syntax_error(p->s, p->i, "STORED AS takes SCD TYPE 1, SCD TYPE 2 or BITEMPORAL.");
	dl_add_arg(st, "stored_as_scd_type", DL_INT, NULL, NIL,
			   pg_strtoint32(dl_tok_orig_text(p->s, p->i)));
	p->i++;
}

static void
track_history(P *p, DlStmt *st)
{
	List	   *cols;

	once_only(p, C_TRACK, "TRACK HISTORY ON");
	expect(p, "history", NULL);
	expect(p, "on", NULL);
	if ((at_char(p, '*') || (p->s->toks[p->i].type == Op && strcmp(p->s->toks[p->i].str, "*") == 0))
		&& !word_at(p, 1, "except"))
	{
		p->i++;					/* TRACK HISTORY ON *: every column, the default */
		return;
	}
	if (column_spec(p, &cols))
		dl_add_arg(st, "track_history_except_column_list", DL_TEXTS, NULL, cols, 0);
	else
		dl_add_arg(st, "track_history_column_list", DL_TEXTS, NULL, cols, 0);
}

static void
keys_clause(P *p, DlStmt *st)
{
	once_only(p, C_KEYS, "KEYS");
	dl_add_arg(st, "keys", DL_TEXTS, NULL, ident_list(p), 0);
}

/* The clauses of AUTO CDC ... FROM source, in any order. */
static void
cdc_clauses(P *p, DlStmt *st)
{
	while (!at_end(p))
	{
		List	   *cols;

		p->clause = p->i;
		if (accept(p, "keys"))
			keys_clause(p, st);
		else if (accept(p, "ignore"))
		{
			once_only(p, C_IGNORE, "IGNORE NULL UPDATES");
			expect(p, "null", NULL);
			expect(p, "updates", NULL);
			if (!accept(p, "on"))
				dl_add_arg(st, "ignore_null_updates", DL_BOOL, NULL, NIL, 1);
			else if (column_spec(p, &cols))
				dl_add_arg(st, "ignore_null_updates_except_column_list", DL_TEXTS, NULL, cols, 0);
			else
				dl_add_arg(st, "ignore_null_updates_column_list", DL_TEXTS, NULL, cols, 0);
		}
		else if (word(p, "apply") && word_at(p, 1, "as"))
		{
			p->i += 2;
			if (accept(p, "delete"))
			{
				once_only(p, C_DELETE, "APPLY AS DELETE WHEN");
				expect(p, "when", NULL);
				dl_add_arg(st, "apply_as_deletes", DL_TEXT, expression(p, false), NIL, 0);
			}
			else if (accept(p, "truncate"))
			{
				once_only(p, C_TRUNCATE, "APPLY AS TRUNCATE WHEN");
				expect(p, "when", NULL);
				dl_add_arg(st, "apply_as_truncates", DL_TEXT, expression(p, false), NIL, 0);
			}
			else
				dl_syntax_error(p->s, p->i, "APPLY AS takes DELETE WHEN or TRUNCATE WHEN.");
		}
		else if (word(p, "sequence") && word_at(p, 1, "by"))
		{
			p->i += 2;
			once_only(p, C_SEQUENCE, "SEQUENCE BY");
			dl_add_arg(st, "sequence_by", DL_TEXT, expression(p, true), NIL, 0);
		}
		else if (word(p, "system") && word_at(p, 1, "sequence") && word_at(p, 2, "by"))
		{
			p->i += 3;
			once_only(p, C_SYSTEM, "SYSTEM SEQUENCE BY");
			dl_add_arg(st, "system_sequence_by", DL_TEXT, expression(p, true), NIL, 0);
		}
		else if (word(p, "columns") && word_at(p, 1, "to"))
		{
			p->i += 2;
			expect(p, "update", NULL);
			once_only(p, C_TO_UPDATE, "COLUMNS TO UPDATE");
			if (p->s->toks[p->i].type != IDENT && p->s->toks[p->i].type != UIDENT && !p->s->toks[p->i].word)
				dl_syntax_error(p->s, p->i, "COLUMNS TO UPDATE takes the name of the source's array column listing each change's columns.");
			dl_add_arg(st, "columns_to_update", DL_TEXT, ident(p), NIL, 0);
		}
		else if (accept(p, "columns"))
		{
			once_only(p, C_COLUMNS, "COLUMNS");
			if (column_spec(p, &cols))
				dl_add_arg(st, "except_column_list", DL_TEXTS, NULL, cols, 0);
			else
				dl_add_arg(st, "column_list", DL_TEXTS, NULL, cols, 0);
		}
		else if (word(p, "stored") && word_at(p, 1, "as"))
		{
			p->i += 2;
			stored_as(p, st, false);
		}
		else if (accept(p, "track"))
			track_history(p, st);
		else
			dl_syntax_error(p->s, p->i,
							psprintf("AUTO CDC takes these clauses here: %s.", cdc_clause_list));
	}
	if (!(p->seen & C_KEYS))
		clause_error(p, ERRCODE_SYNTAX_ERROR, "AUTO CDC needs a KEYS clause",
					 "Name the columns that identify a row: KEYS (id).");
	if (!(p->seen & C_SEQUENCE))
		clause_error(p, ERRCODE_SYNTAX_ERROR, "AUTO CDC needs a SEQUENCE BY clause",
					 "Name what orders the changes of a key: SEQUENCE BY sequenceNum.");
}

/* FROM SNAPSHOT (query) [WITH VERSION (query)] KEYS ... */
static void
snapshot_spec(P *p, DlStmt *st)
{
	int			qfrom = 0,
				qto = 0;
	char	   *version = NULL;

	st->function = "create_auto_cdc_from_snapshot_flow";
	st->into_table = false;
	if (at_char(p, '('))
	{
		qfrom = ++p->i;
		qto = query_end(p);
		p->i = qto;
		expect_char(p, ')');
	}
	else
		st->source = name(p);
	while (!at_end(p))
	{
		p->clause = p->i;
		if (accept(p, "keys"))
			keys_clause(p, st);
		else if (word(p, "with") && word_at(p, 1, "version"))
		{
			int			from;

			p->i += 2;
			once_only(p, C_VERSION, "WITH VERSION");
			expect_char(p, '(');
			from = p->i;
			p->i = query_end(p);
			version = dl_render(p->s, from, p->i, false);
			expect_char(p, ')');
		}
		else if (word(p, "stored") && word_at(p, 1, "as"))
		{
			p->i += 2;
			stored_as(p, st, true);
		}
		else if (accept(p, "track"))
			track_history(p, st);
		else
			dl_syntax_error(p->s, p->i,
							psprintf("AUTO CDC FROM SNAPSHOT takes these clauses here: %s.", snapshot_clauses));
	}
	if (!(p->seen & C_KEYS))
		clause_error(p, ERRCODE_SYNTAX_ERROR, "AUTO CDC FROM SNAPSHOT needs a KEYS clause",
					 "Name the columns that identify a row: KEYS (id).");
	if (qto > 0 && version == NULL)
		st->source = simple_source(p, qfrom, qto, true);
	if (qto > 0 && st->source == NULL)
		dl_add_arg(st, "snapshot_query", DL_TEXT, dl_render(p->s, qfrom, qto, false), NIL, 0);
	if (version != NULL)
	{
		if (st->source != NULL)
			dl_syntax_error(p->s, st->source->tok, "WITH VERSION goes with FROM SNAPSHOT (query).");
		dl_add_arg(st, "version_query", DL_TEXT, version, NIL, 0);
	}
}

/* AUTO CDC [ONCE] INTO target FROM ... (after AUTO CDC or APPLY CHANGES) */
static void
auto_cdc(P *p, DlStmt *st, bool legacy)
{
	bool		once = !legacy && accept(p, "once");

	expect(p, "into", NULL);
	st->target = name(p);
	expect(p, "from", NULL);
	if (once)
		dl_add_arg(st, "once", DL_BOOL, NULL, NIL, 1);
	if (!legacy && accept(p, "snapshot"))
	{
		snapshot_spec(p, st);
		return;
	}
	st->function = "create_auto_cdc_flow";
	st->into_table = true;
	cdc_source(p, st);
	cdc_clauses(p, st);
}

/* The query of INSERT INTO ... BY NAME, or of CREATE STREAMING TABLE ... AS */
static void
append_query(P *p, DlStmt *st)
{
	int			from = p->i;
	int			to = query_end(p);

	if (!dl_is_char(p->s, to, ';') && p->s->toks[to].type != 0)
		dl_syntax_error(p->s, to, NULL);
	st->function = "create_append_flow";
	st->into_table = true;
	st->source = simple_source(p, from, to, false);
	if (st->source == NULL)
		dl_add_arg(st, "source_query", DL_TEXT, dl_render(p->s, from, to, false), NIL, 0);
	p->i = to;
}

static void
insert_into(P *p, DlStmt *st)
{
	bool		once = accept(p, "once");

	expect(p, "into", NULL);
	once = accept(p, "once") || once;
	st->target = name(p);
	if (once)
		dl_add_arg(st, "once", DL_BOOL, NULL, NIL, 1);
	if (word(p, "replace"))
		clause_error(p, ERRCODE_FEATURE_NOT_SUPPORTED,
					 "INSERT INTO ... REPLACE is not supported",
					 "An append flow inserts every new row; use an AUTO CDC flow to replace rows by key.");
	expect(p, "by", "INSERT INTO target is followed by BY NAME and the query.");
	expect(p, "name", NULL);
	if (word(p, "replace"))
		clause_error(p, ERRCODE_FEATURE_NOT_SUPPORTED,
					 "INSERT INTO ... REPLACE is not supported",
					 "An append flow inserts every new row; use an AUTO CDC flow to replace rows by key.");
	append_query(p, st);
}

static void
create_flow(P *p, DlStmt *st)
{
	st->kind = DL_CREATE_FLOW;
	st->flow_name = ident(p);
	if (accept(p, "comment"))
	{
		if (p->s->toks[p->i].type != SCONST)
			dl_syntax_error(p->s, p->i, "COMMENT takes a string.");
		st->comment = p->s->toks[p->i++].str;
	}
	expect(p, "as", "CREATE FLOW name is followed by AS AUTO CDC or AS INSERT INTO.");
	if (accept(p, "auto"))
	{
		expect(p, "cdc", NULL);
		auto_cdc(p, st, false);
	}
	else if (accept(p, "insert"))
		insert_into(p, st);
	else
		dl_syntax_error(p->s, p->i, "CREATE FLOW name AS is followed by AUTO CDC or INSERT INTO.");
}

/* CONSTRAINT name EXPECT (cond) [ON VIOLATION {DROP ROW | FAIL UPDATE}] */
static void
expectation(P *p, DlStmt *st, int to)
{
	DlExpect   *e = palloc0(sizeof(DlExpect));
	int			from;

	p->i++;						/* CONSTRAINT */
	e->name = ident(p);
	expect(p, "expect", NULL);
	expect_char(p, '(');
	from = p->i;
	p->i = query_end(p);
	e->cond = dl_render(p->s, from, p->i, false);
	expect_char(p, ')');
	e->action = 'w';
	if (accept(p, "on"))
	{
		expect(p, "violation", NULL);
		if (accept(p, "drop"))
		{
			expect(p, "row", NULL);
			e->action = 'd';
		}
		else if (accept(p, "fail"))
		{
			expect(p, "update", NULL);
			e->action = 'f';
		}
		else
			dl_syntax_error(p->s, p->i, "ON VIOLATION takes DROP ROW or FAIL UPDATE.");
	}
	if (p->i != to)
		dl_syntax_error(p->s, p->i, NULL);
	st->expects = lappend(st->expects, e);
}

/* A column definition: name, type (mapped), the rest; COMMENT '...' apart */
static char *
column_definition(P *p, DlStmt *st, int to)
{
	StringInfoData buf;
	char	   *col = ident(p);
	int			from,
				c;
	int			depth = 0;

	initStringInfo(&buf);
	appendStringInfoString(&buf, quote_identifier(col));
	if (p->i >= to)
		dl_syntax_error(p->s, p->i, "A column definition gives the column's type.");
	appendStringInfoChar(&buf, ' ');
	from = dl_render_type(p->s, p->i, to, &buf);
	for (c = from; c < to; c++)
	{
		if (dl_is_char(p->s, c, '('))
			depth++;
		else if (dl_is_char(p->s, c, ')'))
			depth--;
		else if (depth == 0 && dl_is_word(p->s, c, "comment") && p->s->toks[c + 1].type == SCONST)
			break;
	}
	if (from < c)
	{
		/* the blanks between the type and the rest, as written */
		appendBinaryStringInfo(&buf, p->s->text + p->s->toks[from - 1].end,
							   p->s->toks[from].start - p->s->toks[from - 1].end);
		appendStringInfoString(&buf, dl_render(p->s, from, c, false));
	}
	if (c < to)
	{
		st->column_comments = lappend(st->column_comments, col);
		st->column_comments = lappend(st->column_comments, p->s->toks[c + 1].str);
		if (c + 2 < to)
			appendStringInfo(&buf, " %s", dl_render(p->s, c + 2, to, false));
	}
	p->i = to;
	return buf.data;
}

/* ( column definitions, table constraints, expectations ) */
static void
table_elements(P *p, DlStmt *st)
{
	expect_char(p, '(');
	for (;;)
	{
		int			from = p->i;
		int			depth = 0;
		int			to;

		for (to = from; p->s->toks[to].type != 0; to++)
		{
			if (depth == 0 && (dl_is_char(p->s, to, ',') || dl_is_char(p->s, to, ')')))
				break;
			if (dl_is_char(p->s, to, '('))
				depth++;
			else if (dl_is_char(p->s, to, ')'))
				depth--;
		}
		if (to == from)
			dl_syntax_error(p->s, to, NULL);
		if (word(p, "constraint") && dl_is_word(p->s, from + 2, "expect"))
			expectation(p, st, to);
		else if (word(p, "constraint") || word(p, "primary") || word(p, "unique") ||
				 word(p, "check") || word(p, "foreign") || word(p, "exclude"))
		{
			st->elements = lappend(st->elements, dl_render(p->s, from, to, false));
			p->i = to;
		}
		else
		{
			st->elements = lappend(st->elements, column_definition(p, st, to));
			st->has_columns = true;
		}
		if (!at_char(p, ','))
			break;
		p->i++;
	}
	expect_char(p, ')');
}

/* TBLPROPERTIES (key [=] value, ...): a key is dotted words or a string */
static void
tblproperties(P *p, DlStmt *st)
{
	once_only(p, C_PROPS, "TBLPROPERTIES");
	expect_char(p, '(');
	for (;;)
	{
		StringInfoData key;
		DlTok	   *v;

		initStringInfo(&key);
		for (;;)
		{
			DlTok	   *k = &p->s->toks[p->i];

			if (k->type == SCONST)
				appendStringInfoString(&key, k->str);
			else if (k->word || k->type == IDENT)
				appendStringInfoString(&key, k->word ? dl_tok_orig_text(p->s, p->i) : k->str);
			else
				dl_syntax_error(p->s, p->i, "TBLPROPERTIES takes (key = value, ...).");
			p->i++;
			if (!at_char(p, '.'))
				break;
			appendStringInfoChar(&key, '.');
			p->i++;
		}
		if (at_char(p, '='))
			p->i++;
		v = &p->s->toks[p->i];
		if (v->type != SCONST && v->type != ICONST && v->type != FCONST && !v->word)
			dl_syntax_error(p->s, p->i, "TBLPROPERTIES takes (key = value, ...).");
		st->properties = lappend(st->properties, key.data);
		st->properties = lappend(st->properties,
								 v->type == SCONST ? v->str : dl_tok_orig_text(p->s, p->i));
		p->i++;
		if (!at_char(p, ','))
			break;
		p->i++;
	}
	expect_char(p, ')');
}

static void
create_table(P *p, DlStmt *st)
{
	st->kind = DL_CREATE_TABLE;
	accept(p, "live");
	expect(p, "table", NULL);
	st->table = name(p);
	if (at_char(p, '('))
		table_elements(p, st);
	while (!at_end(p))
	{
		p->clause = p->i;
		if (accept(p, "comment"))
		{
			once_only(p, C_COMMENT, "COMMENT");
			if (p->s->toks[p->i].type != SCONST)
				dl_syntax_error(p->s, p->i, "COMMENT takes a string.");
			st->comment = p->s->toks[p->i++].str;
		}
		else if (accept(p, "tblproperties"))
			tblproperties(p, st);
		else if (accept(p, "as"))
		{
			st->target = st->table;
			append_query(p, st);
		}
		else if (word(p, "flow") && word_at(p, 1, "auto") && word_at(p, 2, "cdc"))
		{
			/* FLOW AUTO CDC FROM ... (outside pipelines, reference §1.3) */
			p->i += 3;
			expect(p, "from", NULL);
			st->target = st->table;
			st->function = "create_auto_cdc_flow";
			st->into_table = true;
			cdc_source(p, st);
			cdc_clauses(p, st);
		}
		else
			dl_syntax_error(p->s, p->i,
							"CREATE STREAMING TABLE takes these clauses here: COMMENT, TBLPROPERTIES, AS query, FLOW AUTO CDC.");
	}
}

static DlStmt *
statement(P *p)
{
	DlStmt	   *st = palloc0(sizeof(DlStmt));

	st->tok = p->i;
	p->seen = 0;
	if (accept(p, "create"))
	{
		if (accept(p, "or"))
		{
			expect(p, "refresh", NULL);
			st->or_refresh = true;
		}
		if (accept(p, "streaming"))
			create_table(p, st);
		else if (!st->or_refresh && accept(p, "flow"))
			create_flow(p, st);
		else
			dl_syntax_error(p->s, p->i, st->or_refresh ?
							"CREATE OR REFRESH is followed by STREAMING TABLE." :
							"CREATE is followed by STREAMING TABLE or FLOW.");
	}
	else if (accept(p, "apply"))
	{
		expect(p, "changes", NULL);
		st->kind = DL_CREATE_FLOW;
		auto_cdc(p, st, true);
	}
	else if (accept(p, "drop"))
	{
		expect(p, "flow", "DROP is followed by FLOW.");
		st->kind = DL_DROP_FLOW;
		if (accept(p, "if"))
		{
			expect(p, "exists", NULL);
			st->if_exists = true;
		}
		st->flow_name = ident(p);
	}
	else if (accept(p, "refresh"))
	{
		expect(p, "streaming", NULL);
		expect(p, "table", NULL);
		st->kind = DL_REFRESH;
		st->table = name(p);
		st->full = accept(p, "full");
	}
	else
		dl_syntax_error(p->s, p->i,
						"A statement is one of CREATE [OR REFRESH] STREAMING TABLE, CREATE FLOW, APPLY CHANGES INTO, DROP FLOW, REFRESH STREAMING TABLE.");
	if (!at_end(p))
		dl_syntax_error(p->s, p->i, NULL);
	return st;
}

/* The script's statements, separated by semicolons. */
List *
dl_parse(DlScript *s)
{
	P			p = {s, 0, 0};
	List	   *stmts = NIL;

	for (;;)
	{
		while (at_char(&p, ';'))
			p.i++;
		if (s->toks[p.i].type == 0)
			break;
		stmts = lappend(stmts, statement(&p));
	}
	return stmts;
}
