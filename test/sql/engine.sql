-- One fold engine for every flow kind: the batches the C folds of 0.1.0
-- refused (and left to folds in SQL) fold through it like any other.
-- Creates the extension when this file runs alone (make installcheck REGRESS=...).
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS autocdc;
RESET client_min_messages;
CREATE SCHEMA eng;
SET search_path = eng, public;
\set VERBOSITY default

-- A text sequence, in the collation "C": late events, deletes, replays.
CREATE TABLE ts_src (id int, v text, op text, seq text COLLATE "C");
SELECT autocdc.create_auto_cdc_flow(target => 'ts_t', source => 'ts_src', keys => ARRAY['id'],
  sequence_by => 'seq', apply_as_deletes => $$op = 'D'$$, except_column_list => ARRAY['op', 'seq'],
  pipeline => 'eng_ts');
SELECT autocdc.create_auto_cdc_flow(target => 'ts_h', source => 'ts_src', keys => ARRAY['id'],
  sequence_by => 'seq', apply_as_deletes => $$op = 'D'$$, except_column_list => ARRAY['op', 'seq'],
  stored_as_scd_type => 2, pipeline => 'eng_ts');
INSERT INTO ts_src VALUES (1, 'b', 'U', 'b'), (1, 'a', 'U', 'a'), (1, 'B', 'U', 'B'),
  (2, 'x', 'U', 'x'), (2, NULL, 'D', 'y'), (3, 'm', 'U', 'm');
SELECT flow, rows_read, rows_upserted, rows_deleted, rows_skipped, status FROM autocdc.run('eng_ts') ORDER BY flow;
SELECT * FROM ts_t ORDER BY id;
SELECT * FROM ts_h ORDER BY id, __start_at;
-- late ("A" < "B" < "a" in "C"), replayed, and newer
INSERT INTO ts_src VALUES (1, 'A', 'U', 'A'), (1, 'b', 'U', 'b'), (2, 'z', 'U', 'z'), (3, 'M', 'U', 'M');
SELECT flow, rows_read, rows_upserted, rows_deleted, rows_skipped, status FROM autocdc.run('eng_ts') ORDER BY flow;
SELECT * FROM ts_t ORDER BY id;
SELECT * FROM ts_h ORDER BY id, __start_at;

-- Partial updates (ignore_null_updates) with a truncate in the batch and
-- events before and after it, read in no order.
CREATE TABLE pt_src (id int, a text, b text, op text, seq int);
SELECT autocdc.create_auto_cdc_flow(target => 'pt_t', source => 'pt_src', keys => ARRAY['id'],
  sequence_by => 'seq', apply_as_deletes => $$op = 'D'$$, apply_as_truncates => $$op = 'T'$$,
  ignore_null_updates_column_list => ARRAY['a', 'b'], except_column_list => ARRAY['op', 'seq'],
  pipeline => 'eng_pt');
INSERT INTO pt_src VALUES (1, 'a1', 'b1', 'U', 1), (2, 'a2', 'b2', 'U', 2), (3, 'a3', NULL, 'U', 3);
SELECT rows_read, rows_upserted, rows_deleted, rows_skipped, status FROM autocdc.run('eng_pt');
SELECT * FROM pt_t ORDER BY id;
-- key 1: b set after the truncate at 10, a before it; key 2: only before;
-- key 3: a set after it; key 4: new, after it
INSERT INTO pt_src VALUES (1, NULL, 'b11', 'U', 11), (1, 'a5', NULL, 'U', 5), (NULL, NULL, NULL, 'T', 10),
  (2, NULL, 'b7', 'U', 7), (3, 'a12', NULL, 'U', 12), (4, NULL, 'b4', 'U', 14), (3, NULL, 'b9', 'U', 9);
SELECT rows_read, rows_upserted, rows_deleted, rows_skipped, status FROM autocdc.run('eng_pt');
SELECT * FROM pt_t ORDER BY id;
SELECT truncate_seq FROM autocdc.target WHERE target = 'pt_t'::regclass;
-- late events under the truncate mark are skipped; one above it sets its column
INSERT INTO pt_src VALUES (2, 'late', NULL, 'U', 8), (2, NULL, 'b13', 'U', 13);
SELECT rows_read, rows_upserted, rows_deleted, rows_skipped, status FROM autocdc.run('eng_pt');
SELECT * FROM pt_t ORDER BY id;

-- Keys of a type without a hash function (bit varying), and an SCD 2
-- value column without "=" (json, compared as text): key 1010's second
-- upsert changes nothing, so it starts no version.
CREATE TABLE vb_src (k varbit, doc json, seq int);
SELECT autocdc.create_auto_cdc_flow(target => 'vb_t', source => 'vb_src', keys => ARRAY['k'],
  sequence_by => 'seq', except_column_list => ARRAY['seq'], pipeline => 'eng_vb');
SELECT autocdc.create_auto_cdc_flow(target => 'vb_h', source => 'vb_src', keys => ARRAY['k'],
  sequence_by => 'seq', except_column_list => ARRAY['seq'], stored_as_scd_type => 2, pipeline => 'eng_vb');
INSERT INTO vb_src VALUES (B'101', '{"v": 1}', 1), (B'1010', '{"v": 2}', 1), (B'101', '{"v": 3}', 3),
  (B'101', '{"v": 2}', 2), (B'1010', '{"v": 2}', 2);
SELECT flow, rows_read, rows_upserted, rows_skipped, status FROM autocdc.run('eng_vb') ORDER BY flow;
SELECT k, doc::text FROM vb_t ORDER BY k;
SELECT k, doc::text, __start_at, __end_at FROM vb_h ORDER BY k, __start_at;
-- the same event again, and another at the same key and sequence
INSERT INTO vb_src VALUES (B'101', '{"v": 3}', 3);
SELECT flow, rows_read, rows_skipped, status FROM autocdc.run('eng_vb') ORDER BY flow;
INSERT INTO vb_src VALUES (B'101', '{"v": 4}', 3);
SELECT flow, status FROM autocdc.run('eng_vb') ORDER BY flow;
SELECT flow, error FROM autocdc.event_log WHERE pipeline = 'eng_vb' AND status = 'failed' ORDER BY flow;
DELETE FROM vb_src WHERE doc::text = '{"v": 4}';

-- A batch past its memory (half of maintenance_work_mem): the events
-- grouped by key in memory go to a sort on disk, the SCD 2 keys folded in
-- chunks.  Two pipelines over one source, one run with the
-- smallest work_mem, the other with plenty; the targets must be equal.
CREATE TABLE sp_src (id int, v text, op text, seq int);
SELECT autocdc.create_auto_cdc_flow(target => t, source => 'sp_src', keys => ARRAY['id'], sequence_by => 'seq',
  apply_as_deletes => $$op = 'D'$$, except_column_list => ARRAY['op', 'seq'],
  stored_as_scd_type => scd, pipeline => pl)
  FROM (VALUES ('sp1_small', 1, 'eng_small'), ('sp2_small', 2, 'eng_small'),
               ('sp1_big', 1, 'eng_big'), ('sp2_big', 2, 'eng_big')) f(t, scd, pl);
CREATE FUNCTION sp_feed(r int) RETURNS void LANGUAGE sql AS $$
  INSERT INTO sp_src
  SELECT g % 500, CASE WHEN g % 11 = 0 THEN NULL ELSE repeat(md5((g + r)::text), 3) END,
         CASE WHEN g % 11 = 0 THEN 'D' ELSE 'U' END,
         CASE WHEN g % 7 = 0 THEN r * 100000 + g - 900 ELSE r * 100000 + g END
  FROM generate_series(1, 20000) g;
$$;
CREATE FUNCTION sp_round(r int) RETURNS TABLE (same1 boolean, same2 boolean,
  versions bigint, live bigint) LANGUAGE plpgsql AS $$
BEGIN
  PERFORM sp_feed(r);
  SET LOCAL work_mem = '64kB';
  SET LOCAL maintenance_work_mem = '1MB';
  PERFORM autocdc.run('eng_small');
  SET LOCAL work_mem = '256MB';
  PERFORM autocdc.run('eng_big');
  RETURN QUERY SELECT
    NOT EXISTS ((TABLE sp1_small EXCEPT ALL TABLE sp1_big) UNION ALL (TABLE sp1_big EXCEPT ALL TABLE sp1_small)),
    NOT EXISTS ((TABLE sp2_small EXCEPT ALL TABLE sp2_big) UNION ALL (TABLE sp2_big EXCEPT ALL TABLE sp2_small)),
    (SELECT count(*) FROM sp2_small), (SELECT count(*) FROM sp1_small);
END $$;
SELECT pg_stat_force_next_flush();
SELECT temp_files AS temp_files_before FROM pg_stat_database WHERE datname = current_database() \gset
SELECT r, same1, same2, versions, live FROM generate_series(1, 2) r, sp_round(r);
SELECT pg_stat_force_next_flush();
SELECT temp_files > :temp_files_before AS spilled FROM pg_stat_database WHERE datname = current_database();
SELECT flow, rows_read, rows_upserted, rows_deleted, rows_skipped, status FROM autocdc.event_log
  WHERE pipeline IN ('eng_small', 'eng_big') ORDER BY id;

-- An SCD 2 target of 100 value columns, partial updates on the last ones:
-- the fold's column sets are not bounded at 64.
SELECT format('CREATE TABLE wide_src (id int, seq int, %s)', string_agg(format('c%s int', g), ', '))
  FROM generate_series(1, 99) g \gexec
SELECT autocdc.create_auto_cdc_flow(target => 'wide_h', source => 'wide_src', keys => ARRAY['id'],
  sequence_by => 'seq', stored_as_scd_type => 2, ignore_null_updates_column_list => ARRAY['c98', 'c99'],
  track_history_except_column_list => ARRAY['seq', 'c97'], pipeline => 'eng_wide');
INSERT INTO wide_src (id, seq, c1, c97, c98, c99) VALUES (1, 1, 1, 97, 98, 99), (1, 2, 2, 97, NULL, -99),
  (1, 3, 2, 0, NULL, NULL), (1, 4, 3, 97, 0, NULL);
SELECT rows_read, rows_upserted, status FROM autocdc.run('eng_wide');
SELECT id, c1, c97, c98, c99, __start_at, __end_at FROM wide_h ORDER BY __start_at;

RESET search_path;

-- A ROW(...) sequence all of whose fields are NULL is a NULL sequence, and
-- a composite key all of whose fields are NULL a NULL key, as SQL's IS
-- NULL sees them (a row with some fields NULL is neither).
SET search_path = eng, public;
CREATE TYPE nk AS (a int, b text);
CREATE TABLE nr_src (id int, k nk, v int, ts int, n int);
SELECT autocdc.create_auto_cdc_flow(target => 'nr1', source => 'nr_src', keys => ARRAY['id'],
  sequence_by => 'ROW(ts, n)', except_column_list => ARRAY['k', 'ts', 'n'], pipeline => 'eng_nr');
SELECT autocdc.create_auto_cdc_flow(target => 'nr2', source => 'nr_src', keys => ARRAY['k'],
  sequence_by => 'ROW(ts, n)', except_column_list => ARRAY['id', 'ts', 'n'],
  stored_as_scd_type => 2, pipeline => 'eng_nr');
INSERT INTO nr_src VALUES (1, ROW(1, 'x'), 1, 1, NULL), (2, ROW(NULL, NULL), 2, NULL, 1);
SELECT flow, rows_read, rows_upserted, status FROM autocdc.run('eng_nr') ORDER BY flow;
INSERT INTO nr_src VALUES (3, ROW(3, 'z'), 3, NULL, NULL);
\set VERBOSITY terse
SELECT flow, rows_read, rows_upserted, status FROM autocdc.run('eng_nr') ORDER BY flow;
\set VERBOSITY default
SELECT * FROM nr1 ORDER BY id;
SELECT * FROM nr2 ORDER BY k;
RESET search_path;

-- The target's deletes, updates and inserts are one statement: a foreign
-- key of the target on itself (ON DELETE SET NULL) and a trigger that
-- changes other rows of the target act after all of them, and no update
-- is lost.
SET search_path = eng, public;
CREATE TABLE emp (id int PRIMARY KEY, mgr int REFERENCES emp (id) ON DELETE SET NULL, name text);
CREATE TABLE emp_src (id int, mgr int, name text, op text, seq int);
SELECT autocdc.create_auto_cdc_flow(target => 'emp', source => 'emp_src', keys => ARRAY['id'],
  sequence_by => 'seq', apply_as_deletes => $$op = 'D'$$, except_column_list => ARRAY['op', 'seq'],
  pipeline => 'eng_fk');
INSERT INTO emp_src VALUES (1, NULL, 'boss', 'U', 1), (2, 1, 'ann', 'U', 1), (3, 1, 'bob', 'U', 1);
SELECT flow, rows_read, rows_upserted, rows_deleted, status FROM autocdc.run('eng_fk');
INSERT INTO emp_src VALUES (1, NULL, NULL, 'D', 2), (2, 1, 'ann2', 'U', 2), (3, NULL, 'bob2', 'U', 2);
SELECT flow, rows_read, rows_upserted, rows_deleted, status FROM autocdc.run('eng_fk');
SELECT * FROM emp ORDER BY id;
CREATE TABLE tg (id int PRIMARY KEY, v text, hits int DEFAULT 0);
CREATE FUNCTION tg_bump() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  UPDATE eng.tg SET hits = hits + 1 WHERE id <> OLD.id;
  RETURN NULL;
END $$;
CREATE TRIGGER tg_bump AFTER DELETE ON tg FOR EACH ROW EXECUTE FUNCTION tg_bump();
CREATE TABLE tg_src (id int, v text, op text, seq int);
SELECT autocdc.create_auto_cdc_flow(target => 'tg', source => 'tg_src', keys => ARRAY['id'],
  sequence_by => 'seq', apply_as_deletes => $$op = 'D'$$, except_column_list => ARRAY['op', 'seq'],
  pipeline => 'eng_tg');
INSERT INTO tg_src VALUES (1, 'a', 'U', 1), (2, 'b', 'U', 1);
SELECT flow, rows_read, rows_upserted, rows_deleted, status FROM autocdc.run('eng_tg');
INSERT INTO tg_src VALUES (1, NULL, 'D', 2), (2, 'b2', 'U', 2), (3, 'c', 'U', 2);
SELECT flow, rows_read, rows_upserted, rows_deleted, status FROM autocdc.run('eng_tg');
SELECT * FROM tg ORDER BY id;
-- a target with a rule, on which PostgreSQL refuses data-modifying CTEs,
-- is written a statement at a time
CREATE TABLE ru (id int PRIMARY KEY, v text);
CREATE TABLE ru_audit (id int, old_v text, new_v text);
CREATE RULE ru_audit AS ON UPDATE TO ru DO ALSO INSERT INTO eng.ru_audit VALUES (OLD.id, OLD.v, NEW.v);
CREATE TABLE ru_src (id int, v text, op text, seq int);
SELECT autocdc.create_auto_cdc_flow(target => 'ru', source => 'ru_src', keys => ARRAY['id'],
  sequence_by => 'seq', apply_as_deletes => $$op = 'D'$$, except_column_list => ARRAY['op', 'seq'],
  pipeline => 'eng_ru');
INSERT INTO ru_src VALUES (1, 'a', 'U', 1), (2, 'b', 'U', 1);
SELECT flow, rows_read, rows_deleted, status FROM autocdc.run('eng_ru');
INSERT INTO ru_src VALUES (1, NULL, 'D', 2), (2, 'b2', 'U', 2), (3, 'c', 'U', 2);
SELECT flow, rows_read, rows_deleted, status FROM autocdc.run('eng_ru');
SELECT * FROM ru ORDER BY id;
SELECT * FROM ru_audit;
RESET search_path;

-- SCD 2 likewise: with a trigger on the target that changes other rows of
-- it, versions are named by keys and start, not by a tid the trigger may
-- have moved them off (key 4's open version is closed after the delete of
-- key 2's version at 3 set the trigger off).
SET search_path = eng, public;
CREATE TABLE hg_src (id int, v text, op text, seq int);
SELECT autocdc.create_auto_cdc_flow(target => 'hg', source => 'hg_src', keys => ARRAY['id'],
  sequence_by => 'seq', apply_as_deletes => $$op = 'D'$$, except_column_list => ARRAY['op', 'seq'],
  stored_as_scd_type => 2, pipeline => 'eng_hg');
ALTER TABLE hg ADD COLUMN hits int DEFAULT 0;
CREATE FUNCTION hg_bump() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  UPDATE eng.hg SET hits = hits + 1 WHERE id <> OLD.id;
  RETURN NULL;
END $$;
CREATE TRIGGER hg_bump AFTER DELETE OR UPDATE ON hg FOR EACH ROW
  WHEN (pg_trigger_depth() = 0) EXECUTE FUNCTION hg_bump();
INSERT INTO hg_src VALUES (2, 'b', 'U', 1), (2, 'c', 'U', 3), (4, 'd', 'U', 1);
SELECT flow, rows_read, rows_upserted, rows_deleted, status FROM autocdc.run('eng_hg');
INSERT INTO hg_src VALUES (2, 'c', 'U', 2), (4, 'e', 'U', 5);
SELECT flow, rows_read, rows_upserted, rows_deleted, status FROM autocdc.run('eng_hg');
SELECT id, v, __start_at, __end_at, hits FROM hg ORDER BY id, __start_at;
RESET search_path;
