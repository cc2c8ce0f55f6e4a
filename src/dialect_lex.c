/*-------------------------------------------------------------------------
 * dialect_lex.c
 *	  The reference dialect's lexical habits, then PostgreSQL's scanner.
 *
 *	  The pre-pass rewrites the raw script so that PostgreSQL's scanner
 *	  reads it as the reference system means it: "text" is a string
 *	  literal, `name` a quoted identifier, \' an escaped quote, comments
 *	  go.  It keeps, for every byte it writes, the offset of the byte of
 *	  the script it came from, so that errors point into the script as the
 *	  user wrote it.  Rendering hands expressions and queries on as
 *	  PostgreSQL text, with the reference's type names mapped where a type
 *	  is expected (casts, column definitions).
 *-------------------------------------------------------------------------
 */
#include "dialect.h"

#include "catalog/namespace.h"
#include "common/keywords.h"
#include "mb/pg_wchar.h"
#include "miscadmin.h"
#include "nodes/parsenodes.h"
#include "parser/gramparse.h"
#include "parser/scanner.h"
#include "parser/scansup.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"

typedef struct PrePass
{
	StringInfoData out;
	int		   *map;
	int			mapsize;
} PrePass;

static void
emit(PrePass *p, char c, int from)
{
	if (p->out.len + 1 >= p->mapsize)
	{
		p->mapsize *= 2;
		p->map = repalloc(p->map, p->mapsize * sizeof(int));
	}
	p->map[p->out.len] = from;
	appendStringInfoChar(&p->out, c);
}

static bool
ident_char(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		(c >= '0' && c <= '9') || c == '_' || c == '$' || c >= 0x80;
}

/* Length of a dollar-quote tag ($tag$) at s, or 0. */
static int
dollar_tag(const char *s)
{
	int			n = 1;

	if (s[0] != '$')
		return 0;
	if (s[1] >= '0' && s[1] <= '9')
		return 0;
	while (s[n] && s[n] != '$' && ident_char((unsigned char) s[n]))
		n++;
	return s[n] == '$' ? n + 1 : 0;
}

/*
 * A string in the reference's quotes ('...' or "..."), written as a
 * PostgreSQL standard string.  \\, \' and \" are the escaped characters;
 * another backslash stays as written; a doubled quote is one quote.
 */
static int
copy_string(PrePass *p, const char *s, int i, char q)
{
	emit(p, '\'', i++);
	while (s[i])
	{
		char		c = s[i];

		if (c == '\\' && (s[i + 1] == '\\' || s[i + 1] == '\'' || s[i + 1] == '"'))
		{
			if (s[i + 1] == '\'')
				emit(p, '\'', i);
			emit(p, s[i + 1], i + 1);
			i += 2;
			continue;
		}
		if (c == '\\' && s[i + 1])
		{
			emit(p, c, i);
			emit(p, s[i + 1], i + 1);
			i += 2;
			continue;
		}
		if (c == q && s[i + 1] == q)
		{
			if (q == '\'')
				emit(p, '\'', i);
			emit(p, q, i + 1);
			i += 2;
			continue;
		}
		if (c == q)
		{
			emit(p, '\'', i);
			return i + 1;
		}
		if (c == '\'')
			emit(p, '\'', i);	/* a ' inside "..." */
		emit(p, c, i++);
	}
	return i;					/* unterminated: the scanner says so */
}

/* `name` as "name". */
static int
copy_backticks(PrePass *p, const char *s, int i)
{
	emit(p, '"', i++);
	while (s[i])
	{
		if (s[i] == '`' && s[i + 1] == '`')
		{
			emit(p, '`', i);
			i += 2;
			continue;
		}
		if (s[i] == '`')
		{
			emit(p, '"', i);
			return i + 1;
		}
		if (s[i] == '"')
			emit(p, '"', i);
		emit(p, s[i], i);
		i++;
	}
	return i;
}

/* Copied as written: E'...' strings and $tag$...$tag$ bodies. */
static int
copy_verbatim_until(PrePass *p, const char *s, int i, const char *close, bool escapes)
{
	int			n = strlen(close);

	while (s[i])
	{
		if (escapes && s[i] == '\\' && s[i + 1])
		{
			emit(p, s[i], i);
			emit(p, s[i + 1], i + 1);
			i += 2;
			continue;
		}
		if (strncmp(s + i, close, n) == 0)
		{
			if (escapes && s[i + 1] == '\'')
			{
				emit(p, s[i], i);
				emit(p, s[i + 1], i + 1);
				i += 2;
				continue;
			}
			for (int k = 0; k < n; k++)
				emit(p, s[i + k], i + k);
			return i + n;
		}
		emit(p, s[i], i);
		i++;
	}
	return i;
}

static void
prepass(PrePass *p, const char *s)
{
	int			i = 0;
	bool		after_ident = false;

	initStringInfo(&p->out);
	p->mapsize = strlen(s) + 16;
	p->map = palloc(p->mapsize * sizeof(int));
	while (s[i])
	{
		char		c = s[i];
		int			tag;

		if (c == '-' && s[i + 1] == '-')
		{
			emit(p, ' ', i);
			while (s[i] && s[i] != '\n')
				i++;
		}
		else if (c == '/' && s[i + 1] == '*')
		{
			int			depth = 0;
			int			start = i;

			emit(p, ' ', i);
			while (s[i])
			{
				if (s[i] == '/' && s[i + 1] == '*')
					depth++, i += 2;
				else if (s[i] == '*' && s[i + 1] == '/')
				{
					i += 2;
					if (--depth == 0)
						break;
				}
				else
					i++;
			}
			/* unterminated: left to the scanner, which says so */
			if (depth > 0)
			{
				p->out.len--;
				p->out.data[p->out.len] = '\0';
				for (int k = start; s[k]; k++)
					emit(p, s[k], k);
			}
		}
		else if ((c == 'E' || c == 'e') && s[i + 1] == '\'' && !after_ident)
		{
			emit(p, c, i);
			emit(p, '\'', i + 1);
			i = copy_verbatim_until(p, s, i + 2, "'", true);
		}
		else if (c == '\'' || c == '"')
			i = copy_string(p, s, i, c);
		else if (c == '`')
			i = copy_backticks(p, s, i);
		else if (c == '$' && !after_ident && (tag = dollar_tag(s + i)) > 0)
		{
			char	   *close = pnstrdup(s + i, tag);

			for (int k = 0; k < tag; k++)
				emit(p, s[i + k], i + k);
			i = copy_verbatim_until(p, s, i + tag, close, false);
		}
		else
		{
			emit(p, c, i++);
			after_ident = ident_char((unsigned char) c);
			continue;
		}
		after_ident = false;
	}
	p->map[p->out.len] = i;
}

/* The 1-based character position in the script of a pre-passed offset. */
int
dl_orig_cursor(DlScript *s, int textoff)
{
	return pg_mbstrlen_with_len(s->orig, s->map[textoff]) + 1;
}

/* Byte offset in the pre-passed text of a 1-based character position. */
static int
text_offset_of_cursor(DlScript *s, int cursor)
{
	const char *p = s->text;
	int			n = 1;

	while (*p && n < cursor)
	{
		p += pg_mblen(p);
		n++;
	}
	return p - s->text;
}

/*
 * Tokenizes the pre-passed text with PostgreSQL's scanner; its errors
 * (an unterminated string, ...) point into the original script.
 */
static void
tokenize(DlScript *s)
{
	core_yy_extra_type yyext;
	core_yyscan_t scanner;
	int			cap = 64;
	MemoryContext cxt = CurrentMemoryContext;

	s->toks = palloc(cap * sizeof(DlTok));
	s->ntoks = 0;
	PG_TRY();
	{
		scanner = scanner_init(s->text, &yyext, &ScanKeywords, ScanKeywordTokens);
		for (;;)
		{
			core_YYSTYPE lval;
			YYLTYPE		loc;
			int			t = core_yylex(&lval, &loc, scanner);
			DlTok	   *tok;

			if (s->ntoks + 1 >= cap)
			{
				cap *= 2;
				s->toks = repalloc(s->toks, cap * sizeof(DlTok));
			}
			tok = &s->toks[s->ntoks++];
			memset(tok, 0, sizeof(DlTok));
			tok->type = t;
			tok->start = t == 0 ? s->len : loc;
			if (t == 0)
				break;
			if (t == IDENT || t == UIDENT)
			{
				tok->str = lval.str;
				tok->word = s->text[loc] != '"' && s->text[loc] != 'U' && s->text[loc] != 'u';
				if (!tok->word && (s->text[loc] == 'U' || s->text[loc] == 'u'))
					tok->word = s->text[loc + 1] != '&';
			}
			else if (t == SCONST || t == USCONST || t == FCONST || t == Op ||
					 t == BCONST || t == XCONST)
				tok->str = lval.str;
			else if (t >= 256 && t != ICONST && t != PARAM && t != TYPECAST &&
					 t != DOT_DOT && t != COLON_EQUALS && t != EQUALS_GREATER &&
					 t != LESS_EQUALS && t != GREATER_EQUALS && t != NOT_EQUALS)
			{
				tok->str = pstrdup(lval.keyword);
				tok->word = true;
			}
		}
		scanner_finish(scanner);
	}
	PG_CATCH();
	{
		ErrorData  *ed;

		MemoryContextSwitchTo(cxt);
		ed = CopyErrorData();
		FlushErrorState();
		if (ed->cursorpos > 0)
		{
			int			off = text_offset_of_cursor(s, ed->cursorpos);
			char	   *near = ed->message ? strstr(ed->message, " at or near \"") : NULL;

			/* "at or near" quotes the pre-passed text: quote the script's */
			if (near && strncmp(s->text + off, near + 13, strlen(near + 13) - 1) == 0)
			{
				int			end = off + strlen(near + 13) - 1;
				int			from = s->map[off],
							to = end > off ? s->map[end - 1] + 1 : from;

				ed->message = psprintf("%.*s at or near \"%.*s\"", (int) (near - ed->message),
									   ed->message, to - from, s->orig + from);
			}
			ed->internalpos = dl_orig_cursor(s, off);
			ed->internalquery = pstrdup(s->orig);
			ed->cursorpos = 0;
		}
		ReThrowError(ed);
	}
	PG_END_TRY();

	/* a token ends where the next begins, less the blanks between */
	for (int i = 0; i < s->ntoks; i++)
	{
		int			end = i + 1 < s->ntoks ? s->toks[i + 1].start : s->len;

		while (end > s->toks[i].start && scanner_isspace(s->text[end - 1]))
			end--;
		s->toks[i].end = end;
	}
}

DlScript *
dl_scan(const char *script)
{
	DlScript   *s = palloc0(sizeof(DlScript));
	PrePass		p;
	List	   *path;

	s->orig = script;
	prepass(&p, script);
	s->text = p.out.data;
	s->len = p.out.len;
	s->map = p.map;
	path = fetch_search_path(false);
	s->live_schema = path != NIL ? get_namespace_name(linitial_oid(path)) : NULL;
	tokenize(s);
	return s;
}

/* A token as the user wrote it. */
char *
dl_tok_orig_text(DlScript *s, int i)
{
	DlTok	   *t = &s->toks[i];
	int			from,
				to;

	if (t->type == 0)
		return NULL;
	from = s->map[t->start];
	to = s->map[t->end - 1] + 1;
	return pnstrdup(s->orig + from, to - from);
}

bool
dl_is_word(DlScript *s, int i, const char *w)
{
	return i < s->ntoks && s->toks[i].word && strcmp(s->toks[i].str, w) == 0;
}

bool
dl_is_char(DlScript *s, int i, char c)
{
	return i < s->ntoks && s->toks[i].type == (unsigned char) c;
}

static bool
is_op(DlScript *s, int i, const char *op)
{
	return i < s->ntoks && s->toks[i].type == Op && strcmp(s->toks[i].str, op) == 0;
}

static void
append_tok(DlScript *s, int i, StringInfo out)
{
	appendBinaryStringInfo(out, s->text + s->toks[i].start,
						   s->toks[i].end - s->toks[i].start);
}

static void
append_gap(DlScript *s, int i, StringInfo out)
{
	appendBinaryStringInfo(out, s->text + s->toks[i - 1].end,
						   s->toks[i].start - s->toks[i - 1].end);
}

/* The type at token i; *pending counts '>' an inner ">>" closed early. */
static int
render_type(DlScript *s, int i, int to, StringInfo out, int *pending)
{
	const char *w;

	check_stack_depth();		/* ARRAY<ARRAY<... nests without bound */
	if (i >= to)
		return i;
	if (!s->toks[i].word)
	{
		append_tok(s, i, out);
		return i + 1;
	}
	w = s->toks[i].str;
	if (strcmp(w, "string") == 0)
		appendStringInfoString(out, "text");
	else if (strcmp(w, "long") == 0)
		appendStringInfoString(out, "bigint");
	else if (strcmp(w, "tinyint") == 0)
		appendStringInfoString(out, "smallint");
	else if (strcmp(w, "binary") == 0)
		appendStringInfoString(out, "bytea");
	else if (strcmp(w, "timestamp_ntz") == 0)
		appendStringInfoString(out, "timestamp");
	else if (strcmp(w, "float") == 0 && !dl_is_char(s, i + 1, '('))
		appendStringInfoString(out, "real");
	else if (strcmp(w, "double") == 0 && !dl_is_word(s, i + 1, "precision"))
		appendStringInfoString(out, "double precision");
	else if (strcmp(w, "timestamp") == 0 && !dl_is_word(s, i + 1, "with") &&
			 !dl_is_word(s, i + 1, "without"))
		appendStringInfoString(out, "timestamptz");
	else if (strcmp(w, "array") == 0 && (dl_is_char(s, i + 1, '<') || is_op(s, i + 1, "<")))
	{
		int			inner_pending = 0;
		int			depth = 0;
		bool		closed;

		i = render_type(s, i + 2, to, out, &inner_pending);
		closed = inner_pending > 0;
		/* what follows the element's name, (p, s) say, up to the '>' */
		while (!closed && i < to)
		{
			DlTok	   *t = &s->toks[i];

			if (depth == 0 && t->type == '>')
			{
				i++;
				closed = true;
				break;
			}
			if (depth == 0 && t->type == Op && t->str[0] == '>' &&
				strspn(t->str, ">") == strlen(t->str))
			{
				*pending += strlen(t->str) - 1;
				i++;
				closed = true;
				break;
			}
			if (t->type == '(')
				depth++;
			else if (t->type == ')' && depth-- == 0)
				break;			/* the cast's or list's ')': no '>' came */
			append_gap(s, i, out);
			append_tok(s, i, out);
			i++;
		}
		if (!closed)
			dl_syntax_error(s, i, "ARRAY<type> ends with >.");
		if (inner_pending > 0)
			*pending += inner_pending - 1;
		appendStringInfoString(out, "[]");
		return i;
	}
	else
		append_tok(s, i, out);
	return i + 1;
}

int
dl_render_type(DlScript *s, int i, int to, StringInfo out)
{
	int			pending = 0;
	int			end = render_type(s, i, to, out, &pending);

	/* a '>' more than the ARRAY<s opened */
	if (pending > 0)
		dl_syntax_error(s, end - 1, NULL);
	return end;
}

/*
 * Tokens [from, to) as PostgreSQL text: as written, but with the types of
 * casts mapped, LIVE.x naming x in the first schema of search_path, and,
 * for SEQUENCE BY, STRUCT(a, b) as ROW(a, b).
 */
char *
dl_render(DlScript *s, int from, int to, bool struct_to_row)
{
	StringInfoData out;
	int			depth = 0;
	int			casts[64];
	int			ncasts = 0;

	initStringInfo(&out);
	for (int i = from; i < to;)
	{
		DlTok	   *t = &s->toks[i];

		if (i > from)
			append_gap(s, i, &out);
		if (t->type == '(')
			depth++;
		else if (t->type == ')')
		{
			depth--;
			while (ncasts > 0 && casts[ncasts - 1] > depth)
				ncasts--;
		}
		if (t->type == TYPECAST && i + 1 < to)
		{
			append_tok(s, i, &out);
			append_gap(s, i + 1, &out);
			i = dl_render_type(s, i + 1, to, &out);
			continue;
		}
		if (dl_is_word(s, i, "as") && ncasts > 0 && casts[ncasts - 1] == depth && i + 1 < to)
		{
			append_tok(s, i, &out);
			append_gap(s, i + 1, &out);
			i = dl_render_type(s, i + 1, to, &out);
			continue;
		}
		if (dl_is_word(s, i, "cast") && dl_is_char(s, i + 1, '(') && ncasts < lengthof(casts))
			casts[ncasts++] = depth + 1;
		if (struct_to_row && dl_is_word(s, i, "struct") && dl_is_char(s, i + 1, '('))
			appendStringInfoString(&out, "ROW");
		else if (dl_is_word(s, i, "live") && dl_is_char(s, i + 1, '.') &&
				 (i == from || !dl_is_char(s, i - 1, '.')) && i + 2 < to &&
				 s->toks[i + 2].str != NULL && s->toks[i + 2].type != SCONST)
			appendStringInfoString(&out, quote_identifier(dl_live_schema(s, i)));
		else
			append_tok(s, i, &out);
		i++;
	}
	return out.data;
}

/* The schema LIVE stands for: the first of search_path. */
const char *
dl_live_schema(DlScript *s, int i)
{
	if (s->live_schema == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_SCHEMA),
				 errmsg("no schema has been selected for LIVE"),
				 errdetail("LIVE.name names a relation of the first schema of search_path, which is empty."),
				 internalerrquery(s->orig),
				 internalerrposition(dl_orig_cursor(s, s->toks[i].start))));
	return s->live_schema;
}

/* An expression written in the dialect, as PostgreSQL text. */
char *
dl_map_expression(const char *text, bool struct_to_row)
{
	DlScript   *s = dl_scan(text);

	return dl_render(s, 0, s->ntoks - 1, struct_to_row);
}

/* PostgreSQL text, tokenized as it is (for turning it back into the dialect). */
DlScript *
dl_scan_pg(const char *text)
{
	DlScript   *s = palloc0(sizeof(DlScript));

	s->orig = text;
	s->text = pstrdup(text);
	s->len = strlen(text);
	s->map = palloc((s->len + 1) * sizeof(int));
	for (int i = 0; i <= s->len; i++)
		s->map[i] = i;
	tokenize(s);
	return s;
}
