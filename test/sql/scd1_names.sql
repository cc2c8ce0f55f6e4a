-- Names with quotes, spaces, semicolons, capitals: quoted everywhere, never executed.
-- Creates the extension when this file runs alone (make installcheck REGRESS=...).
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS autocdc;
RESET client_min_messages;
CREATE SCHEMA "we""ird; schema";
SET search_path = "we""ird; schema", public;
CREATE TABLE "Change Log; DROP TABLE x" ("Key ""1""" int, "key;2" text, "Value Col" text,
    "select" text, "Seq No" bigint);
SELECT autocdc.create_auto_cdc_flow(
  target => '"we""ird; schema"."Target; Table"',
  source => '"Change Log; DROP TABLE x"',
  keys => ARRAY['Key "1"', 'key;2'],
  sequence_by => '"Seq No"',
  apply_as_deletes => $$"select" = 'delete'$$,
  except_column_list => ARRAY['select', 'Seq No'],
  ignore_null_updates => true,
  name => 'flow "with" quotes; and more',
  pipeline => 'pipe''line');
INSERT INTO "Change Log; DROP TABLE x" VALUES
  (1, 'a', 'first', 'upsert', 1), (1, 'a', NULL, 'upsert', 2), (2, 'b', 'gone', 'upsert', 1),
  (2, 'b', NULL, 'delete', 3);
SELECT flow, target, rows_read, rows_upserted, rows_deleted, status FROM autocdc.run('pipe''line');
SELECT * FROM "Target; Table" ORDER BY 1, 2;
\d "Target; Table"
SELECT name, source, target, keys FROM autocdc.flows WHERE pipeline = 'pipe''line';
SELECT autocdc.drop_flow('flow "with" quotes; and more');
-- Expressions are resolved at creation: a later search_path cannot redirect them.
CREATE FUNCTION public.seq_of(int) RETURNS int LANGUAGE sql IMMUTABLE AS 'SELECT $1 * 10';
CREATE TABLE s2 (id int, n int);
SELECT autocdc.create_auto_cdc_flow(target => 'n_t2', source => 's2', keys => ARRAY['id'],
  sequence_by => 'seq_of(n)', pipeline => 'names2');
SELECT sequence_by FROM autocdc.flows WHERE pipeline = 'names2';
CREATE FUNCTION "we""ird; schema".seq_of(int) RETURNS int LANGUAGE sql IMMUTABLE AS 'SELECT 1 / 0';
INSERT INTO s2 VALUES (1, 1);
SELECT rows_upserted, status FROM autocdc.run('names2');
RESET search_path;
