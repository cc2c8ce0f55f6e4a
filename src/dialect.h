/*-------------------------------------------------------------------------
 * dialect.h
 *	  The reference system's SQL, run by autocdc.execute(): the lexical
 *	  pre-pass and tokens (dialect_lex.c), the clause grammar
 *	  (dialect_grammar.c), statements turned into function-API calls
 *	  (dialect.c) and flows turned back into text (dialect_ddl.c).
 *-------------------------------------------------------------------------
 */
#ifndef AUTOCDC_DIALECT_H
#define AUTOCDC_DIALECT_H

#include "autocdc.h"

#include "lib/stringinfo.h"
#include "nodes/pg_list.h"

/* One token of PostgreSQL's scanner, over the pre-passed text. */
typedef struct DlTok
{
	int			type;			/* core scanner token code, 0 at the end */
	char	   *str;			/* identifier (downcased unless quoted),
								 * keyword, string value or operator */
	bool		word;			/* an unquoted identifier or keyword */
	int			start;			/* byte offsets in the pre-passed text */
	int			end;
} DlTok;

typedef struct DlScript
{
	const char *orig;			/* the script as given */
	char	   *text;			/* after the lexical pre-pass */
	int			len;
	int		   *map;			/* text offset -> offset in orig (len + 1) */
	DlTok	   *toks;
	int			ntoks;			/* the last is the end token */
	char	   *live_schema;	/* LIVE: the first schema of search_path */
} DlScript;

/* dialect_lex.c */
extern DlScript *dl_scan(const char *script);
extern DlScript *dl_scan_pg(const char *text);
extern int	dl_orig_cursor(DlScript *s, int textoff);
extern char *dl_tok_orig_text(DlScript *s, int i);
extern bool dl_is_word(DlScript *s, int i, const char *w);
extern bool dl_is_char(DlScript *s, int i, char c);
extern char *dl_render(DlScript *s, int from, int to, bool struct_to_row);
extern int	dl_render_type(DlScript *s, int i, int to, StringInfo out);
extern char *dl_map_expression(const char *text, bool struct_to_row);
extern const char *dl_live_schema(DlScript *s, int i);

/* Arguments of a function-API call, in the order given. */
typedef enum DlArgType
{
	DL_TEXT, DL_TEXTS, DL_INT, DL_BOOL, DL_REGCLASS, DL_JSONB, DL_INTERVAL
} DlArgType;

typedef struct DlArg
{
	const char *name;
	DlArgType	type;
	char	   *text;			/* DL_TEXT, DL_REGCLASS, DL_JSONB, DL_INTERVAL */
	List	   *list;			/* DL_TEXTS */
	int			ival;			/* DL_INT, DL_BOOL */
} DlArg;

typedef enum DlStmtKind
{
	DL_CREATE_TABLE, DL_CREATE_FLOW, DL_DROP_FLOW, DL_REFRESH
} DlStmtKind;

/* A (possibly qualified) name as written; live: LIVE.x */
typedef struct DlName
{
	List	   *parts;			/* char * */
	bool		live;
	int			tok;			/* its first token */
} DlName;

typedef struct DlExpect
{
	char	   *name;
	char	   *cond;
	char		action;			/* 'w'arn, 'd'rop, 'f'ail */
} DlExpect;

typedef struct DlStmt
{
	DlStmtKind	kind;
	int			tok;			/* first token: the statement's position */
	/* CREATE STREAMING TABLE */
	bool		or_refresh;
	DlName	   *table;
	List	   *elements;		/* char *: column definitions, constraints */
	bool		has_columns;
	List	   *column_comments;	/* pairs: column, comment */
	char	   *comment;
	List	   *properties;		/* TBLPROPERTIES: pairs, key and value */
	List	   *expects;		/* DlExpect */
	/* flows (and a table's AS query) */
	const char *function;		/* create_..._flow */
	char	   *flow_name;		/* NULL: the table's name */
	DlName	   *target;
	DlName	   *source;			/* a relation source */
	List	   *args;			/* DlArg other than target, source, name */
	bool		into_table;		/* AUTO CDC / append (takes expectations) */
	/* DROP FLOW, REFRESH */
	bool		if_exists;
	bool		full;
} DlStmt;

/* dialect_grammar.c */
extern List *dl_parse(DlScript *s);
extern void dl_syntax_error(DlScript *s, int i, const char *detail);
extern void dl_add_arg(DlStmt *st, const char *name, DlArgType type, char *text,
					   List *list, int ival);
extern char *dl_name_sql(DlScript *s, DlName *n);
extern char *dl_name_last(DlName *n);

/* dialect.c */
extern List *dl_flow_call_args(DlScript *s, DlStmt *st, List *expects,
							   const char *retention);
extern char *dl_table_retention(DlStmt *table);


#endif							/* AUTOCDC_DIALECT_H */
