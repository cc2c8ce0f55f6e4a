-- Every column autocdc derives from a sequence or a key carries the
-- collation of its origin, and the folds order and match in it.  The test
-- database sorts in C, where 'B' < 'a'; "en-x-icu" sorts 'a' < 'B'.
-- Creates the extension when this file runs alone (make installcheck REGRESS=...).
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS autocdc;
RESET client_min_messages;
CREATE SCHEMA coll;
SET search_path = coll, public;
SELECT 'a' < 'B' COLLATE "en-x-icu" AS icu_a_first, 'a' < 'B' COLLATE "C" AS c_a_first;
CREATE FUNCTION colls(r regclass) RETURNS TABLE (col name, collation text) LANGUAGE sql AS $$
  SELECT attname, CASE WHEN attcollation = 0 THEN '-' ELSE attcollation::regcollation::text END
    FROM pg_attribute WHERE attrelid = r AND attnum > 0 AND NOT attisdropped ORDER BY attnum $$;
CREATE FUNCTION state_of(t regclass) RETURNS regclass LANGUAGE sql AS $$
  SELECT state_table FROM autocdc.target WHERE target = t $$;

-- SCD 2 over a text sequence in en-x-icu: the history columns and the
-- event store's sequence carry it.
CREATE TABLE h_src (id int, v text, s text COLLATE "en-x-icu", op text);
SELECT autocdc.create_auto_cdc_flow(target => 'coll_hist', source => 'h_src', keys => ARRAY['id'],
  sequence_by => 's', apply_as_deletes => $$op = 'D'$$, except_column_list => ARRAY['op'],
  stored_as_scd_type => 2, pipeline => 'coll_h');
SELECT * FROM colls('coll_hist');
SELECT * FROM colls(state_of('coll_hist'));

-- Events where the two orders disagree, over three runs.  In en-x-icu key 1
-- goes a < B < c (a is late), key 2 goes b < C < D (C is in order).
INSERT INTO h_src VALUES (1, 'v-B', 'B', NULL), (2, 'w-b', 'b', NULL);
SELECT flow, rows_read, rows_upserted, status FROM autocdc.run('coll_h');
INSERT INTO h_src VALUES (1, 'v-a', 'a', NULL), (2, 'w-C', 'C', NULL);
SELECT flow, rows_read, rows_upserted, status FROM autocdc.run('coll_h');
INSERT INTO h_src VALUES (1, 'v-c', 'c', NULL), (2, NULL, 'D', 'D');
SELECT flow, rows_read, rows_upserted, rows_deleted, status FROM autocdc.run('coll_h');
SELECT id, v, __start_at, __end_at FROM coll_hist ORDER BY id, __start_at COLLATE "en-x-icu";
-- as_of orders in the history's collation, whatever the argument's.
SELECT id, v FROM autocdc.as_of(NULL::coll_hist, 'aa') ORDER BY id;
SELECT id, v FROM autocdc.as_of(NULL::coll_hist, 'Bz') ORDER BY id;
SELECT id, v FROM autocdc.as_of(NULL::coll_hist, 'Bz' COLLATE "C") ORDER BY id;
SELECT id, v FROM autocdc.as_of(NULL::coll_hist, 'Da') ORDER BY id;
-- The same events in one run give the same history.
CREATE TABLE h_once AS SELECT id, v, __start_at, __end_at FROM coll_hist;
SELECT flow, rows_read, status FROM autocdc.run('coll_h', full_refresh => true);
SELECT count(*) AS differing FROM
  ((TABLE h_once EXCEPT SELECT id, v, __start_at, __end_at FROM coll_hist)
   UNION ALL (SELECT id, v, __start_at, __end_at FROM coll_hist EXCEPT TABLE h_once)) d;

-- SCD 1 sequenced by an expression with an explicit COLLATE: the state's
-- sequence columns, partial-update ones too, carry it.
CREATE TABLE s1_src (id int, v text, note text, s text, op text);
SELECT autocdc.create_auto_cdc_flow(target => 'coll_s1t', source => 's1_src', keys => ARRAY['id'],
  sequence_by => 's COLLATE "en-x-icu"', apply_as_truncates => $$op = 'T'$$,
  except_column_list => ARRAY['op', 's'], ignore_null_updates_column_list => ARRAY['note'],
  pipeline => 'coll_s1');
SELECT * FROM colls(state_of('coll_s1t'));
INSERT INTO s1_src VALUES (1, 'v-B', 'n-B', 'B', NULL), (2, 'w-b', NULL, 'b', NULL), (3, 'x-a', NULL, 'a', NULL);
SELECT flow, rows_read, rows_upserted, status FROM autocdc.run('coll_s1');
-- 'a' is older than 'B' in en-x-icu: a late event, skipped; 'C' is newer than 'b'.
INSERT INTO s1_src VALUES (1, 'v-a', 'n-a', 'a', NULL), (2, 'w-C', NULL, 'C', NULL);
SELECT flow, rows_read, rows_upserted, rows_skipped, status FROM autocdc.run('coll_s1');
SELECT * FROM coll_s1t ORDER BY id;
-- A truncate at 'Ba' removes the keys last set before it in en-x-icu (1 at B, 3 at a).
INSERT INTO s1_src VALUES (NULL, NULL, NULL, 'Ba', 'T');
SELECT flow, rows_read, rows_deleted, status FROM autocdc.run('coll_s1');
SELECT * FROM coll_s1t ORDER BY id;

-- A ROW(...) sequence: its composite type's fields carry the collations of
-- the row's expressions.
CREATE TABLE r_src (id int, v text, s text, n int);
SELECT autocdc.create_auto_cdc_flow(target => 'coll_row', source => 'r_src', keys => ARRAY['id'],
  sequence_by => 'ROW(s COLLATE "en-x-icu", n)', except_column_list => ARRAY['s', 'n'],
  stored_as_scd_type => 2, pipeline => 'coll_r');
SELECT c.* FROM autocdc.target t, pg_type ty, colls(ty.typrelid) c
 WHERE t.target = 'coll_row'::regclass AND ty.oid = t.sequence_composite;
INSERT INTO r_src VALUES (1, 'v-B', 'B', 1);
SELECT flow, rows_upserted, status FROM autocdc.run('coll_r');
INSERT INTO r_src VALUES (1, 'v-a', 'a', 1), (1, 'v-a2', 'a', 2);
SELECT flow, rows_upserted, status FROM autocdc.run('coll_r');
SELECT id, v, __end_at IS NULL AS open FROM coll_row ORDER BY __start_at;

\set VERBOSITY default
-- An existing target whose history columns sort otherwise is refused.
CREATE TABLE coll_h2 (id int, v text, s text COLLATE "en-x-icu", __start_at text, __end_at text,
  PRIMARY KEY (id, __start_at));
SELECT autocdc.create_auto_cdc_flow(target => 'coll_h2', source => 'h_src', keys => ARRAY['id'],
  sequence_by => 's', except_column_list => ARRAY['op'], stored_as_scd_type => 2, pipeline => 'coll_x');
-- So is one whose key matches otherwise than the source's.
CREATE TABLE k_src (k text COLLATE "en-x-icu", v int, seq int);
CREATE TABLE coll_k (k text PRIMARY KEY, v int, seq int);
SELECT autocdc.create_auto_cdc_flow(target => 'coll_k', source => 'k_src', keys => ARRAY['k'],
  sequence_by => 'seq', pipeline => 'coll_x');
-- And a flow that would order one target otherwise than its flows do.
SELECT autocdc.create_auto_cdc_flow(target => 'coll_hist', source => 'h_src', keys => ARRAY['id'],
  sequence_by => 's COLLATE "C"', except_column_list => ARRAY['op'], stored_as_scd_type => 2,
  name => 'h_c', pipeline => 'coll_h');
-- So does a ROW(...) sequence whose fields order otherwise, and an existing
-- target whose composite __start_at does.
SELECT autocdc.create_auto_cdc_flow(target => 'coll_row', source => 'r_src', keys => ARRAY['id'],
  sequence_by => 'ROW(s, n)', except_column_list => ARRAY['s', 'n'], stored_as_scd_type => 2,
  name => 'coll_row_c', pipeline => 'coll_r');
CREATE TYPE seq_pair AS (a text, b int);
CREATE TABLE coll_rx (id int, v text, __start_at seq_pair, __end_at seq_pair, PRIMARY KEY (id, __start_at));
SELECT autocdc.create_auto_cdc_flow(target => 'coll_rx', source => 'r_src', keys => ARRAY['id'],
  sequence_by => 'ROW(s COLLATE "en-x-icu", n)', except_column_list => ARRAY['s', 'n'],
  stored_as_scd_type => 2, pipeline => 'coll_x');
-- A sequence without a determinable collation is refused at creation.
CREATE TABLE amb_src (id int, a text COLLATE "en-x-icu", b text COLLATE "C");
SELECT autocdc.create_auto_cdc_flow(target => 'coll_amb', source => 'amb_src', keys => ARRAY['id'],
  sequence_by => 'a || b', pipeline => 'coll_x');
SELECT count(*) AS flows_refused_left_behind FROM autocdc.flows WHERE pipeline = 'coll_x';

-- Keys of a nondeterministic collation: equal keys are one key, as for the
-- target's unique index, in SCD 1 and SCD 2, split over runs.
CREATE COLLATION coll_ci (provider = icu, locale = 'und-u-ks-level2', deterministic = false);
CREATE TABLE ci_src (k text COLLATE coll_ci, v int, seq int);
SELECT autocdc.create_auto_cdc_flow(target => 'coll_ci1', source => 'ci_src', keys => ARRAY['k'],
  sequence_by => 'seq', except_column_list => ARRAY['seq'], pipeline => 'coll_ci');
SELECT autocdc.create_auto_cdc_flow(target => 'coll_ci2', source => 'ci_src', keys => ARRAY['k'],
  sequence_by => 'seq', except_column_list => ARRAY['seq'], stored_as_scd_type => 2, pipeline => 'coll_ci');
SELECT * FROM colls(state_of('coll_ci1'));
INSERT INTO ci_src VALUES ('Abc', 1, 1), ('x', 10, 1);
SELECT flow, rows_read, rows_upserted, status FROM autocdc.run('coll_ci') ORDER BY flow;
INSERT INTO ci_src VALUES ('aBC', 2, 2), ('X', 11, 2);
SELECT flow, rows_read, rows_upserted, status FROM autocdc.run('coll_ci') ORDER BY flow;
INSERT INTO ci_src VALUES ('ABC', 0, 0);
SELECT flow, rows_read, rows_upserted, status FROM autocdc.run('coll_ci') ORDER BY flow;
SELECT lower(k) AS k, v FROM coll_ci1 ORDER BY 1;
SELECT lower(k) AS k, v, __start_at, __end_at FROM coll_ci2 ORDER BY 1, __start_at;
SELECT count(*) AS keys FROM coll_ci1 WHERE k = 'abc';

-- Snapshots of keys of that collation: one key, however spelt.
CREATE TABLE snap (k text COLLATE coll_ci, v int);
SELECT autocdc.create_auto_cdc_from_snapshot_flow(target => 'coll_snap1', source => 'snap',
  keys => ARRAY['k'], pipeline => 'coll_snap');
SELECT autocdc.create_auto_cdc_from_snapshot_flow(target => 'coll_snap2', source => 'snap',
  keys => ARRAY['k'], stored_as_scd_type => 2, pipeline => 'coll_snap');
INSERT INTO snap VALUES ('Abc', 1), ('x', 1);
SELECT flow, rows_read, rows_upserted, status FROM autocdc.run('coll_snap') ORDER BY flow;
UPDATE snap SET k = upper(k), v = 2 WHERE k = 'abc';
DELETE FROM snap WHERE k = 'X';
SELECT flow, rows_read, rows_upserted, rows_deleted, status FROM autocdc.run('coll_snap') ORDER BY flow;
SELECT lower(k) AS k, v FROM coll_snap1 ORDER BY 1;
SELECT lower(k) AS k, v, __start_at, __end_at FROM coll_snap2 ORDER BY 1, __start_at;
INSERT INTO snap VALUES ('aBc', 3);
\set VERBOSITY terse
SELECT flow, status FROM autocdc.run('coll_snap') ORDER BY flow;
\set VERBOSITY default

-- A target made by 0.1.0 had these columns in the default collation: the
-- next run refuses, naming what to change; with that done and a full
-- refresh, the target is right.
DO $$ BEGIN
  EXECUTE format('ALTER TABLE %s ALTER COLUMN __autocdc_seq TYPE text COLLATE "default"', coll.state_of('coll.coll_hist'));
  ALTER TABLE coll.coll_hist ALTER COLUMN __start_at TYPE text COLLATE "default",
    ALTER COLUMN __end_at TYPE text COLLATE "default";
END $$;
INSERT INTO h_src VALUES (3, 'z-a', 'a', NULL);
\set VERBOSITY terse
SELECT flow, status FROM autocdc.run('coll_h');
\set VERBOSITY default
SELECT error FROM autocdc.event_log
 WHERE pipeline = 'coll_h' ORDER BY id DESC LIMIT 1;
DO $$ BEGIN
  EXECUTE format('ALTER TABLE %s ALTER COLUMN __autocdc_seq TYPE text COLLATE "en-x-icu"', coll.state_of('coll.coll_hist'));
  ALTER TABLE coll.coll_hist ALTER COLUMN __start_at TYPE text COLLATE "en-x-icu",
    ALTER COLUMN __end_at TYPE text COLLATE "en-x-icu";
END $$;
SELECT flow, status FROM autocdc.run('coll_h', full_refresh => true);
SELECT id, v, __start_at, __end_at FROM coll_hist ORDER BY id, __start_at COLLATE "en-x-icu";

-- A source key column given another collation after creation is refused too.
ALTER TABLE ci_src ALTER COLUMN k TYPE text COLLATE "C";
INSERT INTO ci_src VALUES ('y', 1, 5);
\set VERBOSITY terse
SELECT flow, status FROM autocdc.run('coll_ci') ORDER BY flow;
\set VERBOSITY default

SELECT autocdc.drop_flow(name) FROM autocdc.flows WHERE pipeline LIKE 'coll_%' ORDER BY name;
DROP SCHEMA coll CASCADE;
