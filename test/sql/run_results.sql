-- autocdc.run()'s rows for flows that succeed, fail or are skipped;
-- CALL autocdc.refresh(), which commits what succeeded and then raises an
-- error for the flows that failed; the hint on errors of names a run's
-- pinned search_path does not find.
-- Creates the extension when this file runs alone (make installcheck REGRESS=...).
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS autocdc;
RESET client_min_messages;
CREATE SCHEMA rr;
SET search_path = rr, public;

-- run()'s columns, in order.
SELECT pg_catalog.pg_get_function_result('autocdc.run(text,boolean,text[])'::regprocedure);

-- Three flows of pipeline rr over one change table: a_good works; b_bad's
-- apply_as_deletes calls a function whose body names its table without
-- the schema, which a run (search_path = pg_catalog, pg_temp) does not
-- find; c_once is a ONCE flow.
CREATE TABLE changes (id int, v text, op text, seq int);
CREATE TABLE delete_ops (op text);
INSERT INTO delete_ops VALUES ('D');
CREATE FUNCTION is_delete(o text) RETURNS boolean LANGUAGE sql STABLE
  AS $$ SELECT EXISTS (SELECT 1 FROM delete_ops d WHERE d.op = o) $$;
SELECT autocdc.create_auto_cdc_flow(target => 'good_t', source => 'changes', keys => ARRAY['id'],
  sequence_by => 'seq', apply_as_deletes => $$op = 'D'$$, except_column_list => ARRAY['op', 'seq'],
  name => 'a_good', pipeline => 'rr');
SELECT autocdc.create_auto_cdc_flow(target => 'bad_t', source => 'changes', keys => ARRAY['id'],
  sequence_by => 'seq', apply_as_deletes => 'is_delete(op)', except_column_list => ARRAY['op', 'seq'],
  name => 'b_bad', pipeline => 'rr');
SELECT autocdc.create_auto_cdc_flow(target => 'once_t', source => 'changes', keys => ARRAY['id'],
  sequence_by => 'seq', except_column_list => ARRAY['op', 'seq'], once => true,
  name => 'c_once', pipeline => 'rr');
INSERT INTO changes VALUES (1, 'one', 'U', 1), (2, 'two', 'U', 1), (2, NULL, 'D', 2);

-- The whole row of each flow: success, failed (with its error, and a
-- WARNING whose hint names the pinned search_path), success.
SELECT flow, target, kind, rows_read, rows_upserted, rows_deleted, rows_skipped,
       rows_dropped, status, error, duration >= '0' AS timed
  FROM autocdc.run('rr') ORDER BY flow;
-- Run again: the ONCE flow is skipped, the failed flow fails again.
INSERT INTO changes VALUES (3, 'three', 'U', 1);
SELECT flow, target, kind, rows_read, rows_upserted, rows_deleted, rows_skipped,
       rows_dropped, status, error, duration >= '0' AS timed
  FROM autocdc.run('rr') ORDER BY flow;
-- The event log keeps the same error text (and rows_dropped).
SELECT flow, status, rows_dropped, error FROM autocdc.event_log
 WHERE pipeline = 'rr' ORDER BY id DESC LIMIT 2;

-- A full refresh of a target with two flows is all or nothing: the flow
-- rolled back with the failed one says why.
CREATE TABLE changes2 (LIKE changes);
SELECT autocdc.create_auto_cdc_flow(target => 'bad_t', source => 'changes2', keys => ARRAY['id'],
  sequence_by => 'seq', apply_as_deletes => $$op = 'D'$$, except_column_list => ARRAY['op', 'seq'],
  name => 'b_bad_more', pipeline => 'rr');
SELECT flow, rows_read, rows_dropped, status, error
  FROM autocdc.run('rr', full_refresh => true, flows => ARRAY['b_bad', 'b_bad_more']) ORDER BY flow;

-- refresh(): the good flow's rows are committed, then an error names the
-- failed flow (with the failed flow's SQLSTATE: 42P01).
INSERT INTO changes VALUES (4, 'four', 'U', 1), (1, 'one again', 'U', 2);
CALL autocdc.refresh('rr');
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM good_t ORDER BY id;
SELECT flow, status, rows_read, error FROM autocdc.event_log
 WHERE run_id = (SELECT max(run_id) FROM autocdc.event_log WHERE pipeline = 'rr') ORDER BY flow;
SELECT trigger, status, error FROM autocdc.run_history
 WHERE pipeline = 'rr' ORDER BY run_id DESC LIMIT 1;
-- Several failed flows (a full refresh of bad_t): each in the detail.
CALL autocdc.refresh('rr', full_refresh => true, flows => ARRAY['b_bad', 'b_bad_more']);
\echo :LAST_ERROR_SQLSTATE

-- refresh() cannot commit in a transaction block or from a function.
INSERT INTO changes VALUES (5, 'five', 'U', 1);
BEGIN;
CALL autocdc.refresh('rr');
ROLLBACK;
CREATE FUNCTION refresh_rr() RETURNS void LANGUAGE plpgsql AS $$
BEGIN CALL autocdc.refresh('rr'); END $$;
SELECT refresh_rr();
SELECT count(*) AS five_not_applied FROM good_t WHERE id = 5;
-- A DO block at top level may commit: it runs as CALL does.
DO $$ BEGIN CALL autocdc.refresh('rr', flows => ARRAY['a_good']); END $$;
SELECT count(*) AS five_applied FROM good_t WHERE id = 5;

-- The function qualifies its table: refresh() raises nothing.  It has no
-- SET search_path (it could not commit), and resolves no name through the
-- caller's: an operator put before pg_catalog's is not called.
CREATE OR REPLACE FUNCTION is_delete(o text) RETURNS boolean LANGUAGE sql STABLE
  AS $$ SELECT EXISTS (SELECT 1 FROM rr.delete_ops d WHERE d.op = o) $$;
CREATE SCHEMA rr_trap;
CREATE FUNCTION rr_trap.trap(text, text) RETURNS boolean LANGUAGE plpgsql
  AS $$ BEGIN RAISE EXCEPTION 'trap called'; END $$;
CREATE OPERATOR rr_trap.= (leftarg = text, rightarg = text, function = rr_trap.trap);
SET search_path = rr_trap, pg_catalog, rr, public;
CALL autocdc.refresh('rr');
SET search_path = rr, public;
DROP OPERATOR rr_trap.= (text, text);
DROP FUNCTION rr_trap.trap(text, text);
DROP SCHEMA rr_trap;
SELECT * FROM bad_t ORDER BY id;
SELECT status, error FROM autocdc.run_history WHERE pipeline = 'rr' ORDER BY run_id DESC LIMIT 1;

-- Code a flow sets off may not call refresh() (nor run()).
CREATE TABLE inner_src (id int, v text, seq int);
CREATE FUNCTION call_refresh() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN CALL autocdc.refresh('rr'); RETURN NEW; END $$;
SELECT autocdc.create_auto_cdc_flow(target => 'inner_t', source => 'inner_src', keys => ARRAY['id'],
  sequence_by => 'seq', name => 'inner_f', pipeline => 'rr_inner');
CREATE TRIGGER call_refresh BEFORE INSERT ON inner_t FOR EACH ROW EXECUTE FUNCTION call_refresh();
INSERT INTO inner_src VALUES (1, 'x', 1);
SELECT flow, status, error FROM autocdc.run('rr_inner');

-- A snapshot source function that calls a function without its schema:
-- PostgreSQL's own hint, then the search_path one.
CREATE TABLE snap_1 (id int, v text);
INSERT INTO snap_1 VALUES (1, 'a');
CREATE TABLE snap_t (id int PRIMARY KEY, v text);
CREATE FUNCTION first_version(latest bigint) RETURNS bigint LANGUAGE sql
  AS $$ SELECT CASE WHEN latest IS NULL THEN 1 END $$;
CREATE FUNCTION next_snap(latest bigint) RETURNS TABLE (snapshot regclass, version bigint)
LANGUAGE sql AS $$
  SELECT 'rr.snap_1'::regclass, first_version(latest) WHERE latest IS NULL
$$;
SELECT autocdc.create_auto_cdc_from_snapshot_flow(target => 'snap_t', source_function => 'next_snap(bigint)',
  keys => ARRAY['id'], name => 'snap_f', pipeline => 'rr_snap');
SELECT flow, status, error FROM autocdc.run('rr_snap');
CALL autocdc.refresh('rr_snap');
\echo :LAST_ERROR_SQLSTATE
-- ... and a snapshot named without its schema.
CREATE OR REPLACE FUNCTION next_snap(latest bigint) RETURNS TABLE (snapshot regclass, version bigint)
LANGUAGE sql AS $$
  SELECT 'snap_1'::regclass, 1::bigint WHERE latest IS NULL
$$;
SELECT flow, status, error FROM autocdc.run('rr_snap');
-- autocdc's own errors get no such hint (a snapshot that is no relation).
CREATE OR REPLACE FUNCTION next_snap(latest bigint) RETURNS TABLE (snapshot regclass, version bigint)
LANGUAGE sql AS $$
  SELECT 0::oid::regclass, 1::bigint WHERE latest IS NULL
$$;
SELECT flow, status, error FROM autocdc.run('rr_snap');

-- A type named without its schema, in a function of a flow's expression ...
CREATE TYPE op_kind AS ENUM ('U', 'D');
CREATE TABLE kinds_src (id int, v text, op text, seq int);
CREATE FUNCTION is_del(o text) RETURNS boolean LANGUAGE sql IMMUTABLE
  AS $$ SELECT o::op_kind = 'D' $$;
SELECT autocdc.create_auto_cdc_flow(target => 'kinds_t', source => 'kinds_src', keys => ARRAY['id'],
  sequence_by => 'seq', apply_as_deletes => 'is_del(op)', except_column_list => ARRAY['op', 'seq'],
  name => 'kinds_f', pipeline => 'rr_kinds');
INSERT INTO kinds_src VALUES (1, 'one', 'U', 1);
SELECT flow, status, error FROM autocdc.run('rr_kinds');
-- ... but not a function the expression names that was dropped since: the
-- flow keeps its expressions with every name qualified.
DROP FUNCTION is_del(text);
SELECT flow, status, error FROM autocdc.run('rr_kinds');

-- run() from a trigger is refused: from a BEFORE ROW trigger on its source
-- it would take the row being inserted as read before it is written.
CREATE TABLE trg_src (id int, v text, seq int);
SELECT autocdc.create_append_flow(target => 'trg_t', source => 'trg_src', pipeline => 'rr_trg', name => 'trg_f');
CREATE FUNCTION kick_run() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN PERFORM * FROM autocdc.run('rr_trg'); RETURN NEW; END $$;
CREATE TRIGGER kick_run BEFORE INSERT ON trg_src FOR EACH ROW EXECUTE FUNCTION kick_run();
INSERT INTO trg_src VALUES (6, 'f', 1), (7, 'g', 1);
CREATE OR REPLACE FUNCTION kick_run() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN PERFORM * FROM autocdc.run('rr_trg'); RETURN NULL; END $$;
DROP TRIGGER kick_run ON trg_src;
CREATE TRIGGER kick_run AFTER INSERT ON trg_src FOR EACH STATEMENT EXECUTE FUNCTION kick_run();
INSERT INTO trg_src VALUES (6, 'f', 1), (7, 'g', 1);
DROP TRIGGER kick_run ON trg_src;
INSERT INTO trg_src VALUES (6, 'f', 1), (7, 'g', 1);
SELECT flow, rows_read, status FROM autocdc.run('rr_trg');
SELECT id, v FROM trg_t ORDER BY id;

RESET search_path;
SET client_min_messages = warning;
SELECT autocdc.drop_flow(name) FROM autocdc.flows WHERE pipeline LIKE 'rr%' ORDER BY name;
DROP SCHEMA rr CASCADE;
RESET client_min_messages;
