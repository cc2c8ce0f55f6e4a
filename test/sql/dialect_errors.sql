-- autocdc.execute(): errors point into the script (psql shows LINE and
-- caret); semantic errors are the function API's, at their statement.
SET client_min_messages = notice;
CREATE SCHEMA dle;
SET search_path = dle, public;
CREATE TABLE src (id int, v text, op text, seq int);

-- An unknown clause: what may come there.
SELECT * FROM autocdc.execute($$
CREATE FLOW dle_f AS AUTO CDC INTO t FROM src
  KEYS (id)
  ORDER BY seq
$$);
-- A missing required clause is named.
SELECT * FROM autocdc.execute('CREATE FLOW dle_f AS AUTO CDC INTO t FROM src SEQUENCE BY seq');
SELECT * FROM autocdc.execute('CREATE FLOW dle_f AS AUTO CDC INTO t FROM src KEYS (id)');
SELECT * FROM autocdc.execute('CREATE FLOW dle_f AS AUTO CDC INTO t FROM SNAPSHOT (SELECT * FROM src)');
-- A clause twice.
SELECT * FROM autocdc.execute('CREATE FLOW dle_f AS AUTO CDC INTO t FROM src KEYS (id) SEQUENCE BY seq KEYS (v)');
-- Not a statement of the dialect.
SELECT * FROM autocdc.execute($$CREATE STREAMING TABLE t;
SELECT 1$$);
SELECT * FROM autocdc.execute('CREATE VIEW v AS SELECT 1');
-- Bad tokens and the end of input.
SELECT * FROM autocdc.execute('CREATE FLOW dle_f AS AUTO CDC INTO t FROM src KEYS id SEQUENCE BY seq');
SELECT * FROM autocdc.execute('CREATE FLOW dle_f AS AUTO CDC INTO t FROM src KEYS (id');
SELECT * FROM autocdc.execute($$CREATE FLOW dle_f AS AUTO CDC INTO t FROM src KEYS (id)
  APPLY AS DELETE WHEN op = "D SEQUENCE BY seq$$);
SELECT * FROM autocdc.execute($$CREATE FLOW dle_f AS AUTO CDC INTO t FROM src /* a comment
  KEYS (id) SEQUENCE BY seq$$);
SELECT * FROM autocdc.execute('CREATE FLOW dle_f AS INSERT INTO t SELECT * FROM src');
SELECT * FROM autocdc.execute('CREATE FLOW dle_f AS AUTO CDC INTO t FROM STREAM(SELECT id, seq FROM src) KEYS (id) SEQUENCE BY seq');
-- Positions are the script's, as written: after a comment, a "string"
-- and a multi-byte character.
SELECT * FROM autocdc.execute($$-- é "x"
CREATE FLOW dle_f AS AUTO CDC INTO t FROM src KEYS (id) APPLY AS DELETE WHEN v = "é" SEQUENCE BY seq
  STORED AS SCD TYPE 2 COLUMNS EXCEPT (v)$$);

-- STORED AS BITEMPORAL needs SYSTEM SEQUENCE BY, which needs it; the wrong spelling gets a hint.
SELECT * FROM autocdc.execute('CREATE FLOW dle_f AS AUTO CDC INTO t FROM src KEYS (id) SEQUENCE BY seq STORED AS BITEMPORAL');
SELECT * FROM autocdc.execute('CREATE FLOW dle_f AS AUTO CDC INTO t FROM src KEYS (id) SEQUENCE BY seq STORED AS SCD TYPE BITEMPORAL');
SELECT * FROM autocdc.execute('CREATE FLOW dle_f AS AUTO CDC INTO t FROM src KEYS (id) SEQUENCE BY seq SYSTEM SEQUENCE BY seq');
SELECT * FROM autocdc.execute('CREATE FLOW dle_f AS AUTO CDC INTO t FROM src KEYS (id) SEQUENCE BY seq COLUMNS TO UPDATE (v)');
SELECT * FROM autocdc.execute('CREATE FLOW dle_f AS INSERT INTO t BY NAME REPLACE WHERE id > 1 SELECT * FROM src');
SELECT * FROM autocdc.execute('CREATE FLOW dle_f AS AUTO CDC INTO t FROM SNAPSHOT src KEYS (id) STORED AS BITEMPORAL');

-- Semantic errors: the function API's, at the statement's position.
SELECT * FROM autocdc.execute($$
CREATE OR REFRESH STREAMING TABLE t;
CREATE FLOW dle_f AS AUTO CDC INTO t FROM src KEYS (nosuch) SEQUENCE BY seq;
$$);
SELECT * FROM autocdc.execute($$CREATE FLOW dle_f AS AUTO CDC INTO t FROM nosuch KEYS (id) SEQUENCE BY seq$$);
SELECT * FROM autocdc.execute($$CREATE FLOW dle_f AS AUTO CDC INTO t FROM src KEYS (id) SEQUENCE BY seq
  STORED AS SCD TYPE 3$$);
SELECT * FROM autocdc.execute($$CREATE FLOW dle_f AS AUTO CDC INTO t FROM src KEYS (id) SEQUENCE BY seq
  STORED AS SCD TYPE 2 APPLY AS TRUNCATE WHEN op = 'T'$$);
SELECT * FROM autocdc.execute($$CREATE FLOW dle_f AS AUTO CDC INTO t FROM src KEYS (id) SEQUENCE BY nosuch + 1$$);
SELECT * FROM autocdc.execute('DROP FLOW nosuch');
SELECT * FROM autocdc.execute('DROP FLOW IF EXISTS nosuch');
SELECT * FROM autocdc.execute('REFRESH STREAMING TABLE src');
SELECT * FROM autocdc.execute('REFRESH STREAMING TABLE nosuch');
SELECT * FROM autocdc.execute('CREATE STREAMING TABLE src');
SELECT * FROM autocdc.execute('CREATE STREAMING TABLE t2 (id INT, v NOSUCHTYPE)');
-- ARRAY<type> must be closed by one '>' per ARRAY<, in a column and in a cast.
SELECT * FROM autocdc.execute('CREATE STREAMING TABLE t2 (id INT, a ARRAY<STRING, v INT)');
SELECT * FROM autocdc.execute('CREATE STREAMING TABLE t2 (a ARRAY<INT>> NOT NULL)');
SELECT * FROM autocdc.execute($$CREATE FLOW dle_f AS AUTO CDC INTO t FROM src KEYS (id)
  SEQUENCE BY CAST(seq AS ARRAY<INT)$$);
SELECT count(*) FROM pg_class WHERE relname = 't2' AND relnamespace = 'dle'::regnamespace;
-- ARRAY< nested without bound is an error, not a crash of the server.
SELECT * FROM autocdc.execute('CREATE STREAMING TABLE t2 (a ' || repeat('ARRAY<', 300000) || 'INT'
  || repeat(' >', 300000) || ')');
-- LIVE needs a schema on search_path.
SET search_path = '';
SELECT * FROM autocdc.execute('REFRESH STREAMING TABLE live.t');
SET search_path = dle, public;
-- A flow's COMMENT and TBLPROPERTIES are not kept: said so.
SELECT * FROM autocdc.execute($$
CREATE OR REFRESH STREAMING TABLE t (id INT PRIMARY KEY, v STRING) TBLPROPERTIES ('delta.x' = 1, pipelines.channel = "PREVIEW");
CREATE FLOW dle_f COMMENT 'a comment' AS AUTO CDC INTO t FROM src KEYS (id) SEQUENCE BY seq COLUMNS (v);
$$);
SELECT * FROM autocdc.execute($$CREATE OR REFRESH STREAMING TABLE t
  TBLPROPERTIES (pipelines.cdc.tombstoneGCThresholdInSeconds = '2 days')$$);
-- A failing refresh fails the script.
INSERT INTO src VALUES (1, 'a', NULL, 1), (1, 'b', NULL, 1);
SELECT * FROM autocdc.execute('REFRESH STREAMING TABLE t');
SELECT count(*) FROM t;
-- An empty script, and one of semicolons only.
SELECT * FROM autocdc.execute('');
SELECT * FROM autocdc.execute(' ; ;');
SELECT * FROM autocdc.execute(NULL);
SELECT autocdc.drop_flow('dle_f');
SET client_min_messages = warning;
DROP SCHEMA dle CASCADE;
