-- ONCE, full refresh, several flows into one target, dropping things.
-- Creates the extension when this file runs alone (make installcheck REGRESS=...).
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS autocdc;
RESET client_min_messages;
CREATE SCHEMA life;
SET search_path = life, public;

-- Several AUTO CDC flows into one target share one fold: a ONCE backfill
-- from a legacy table and a live feed, whatever order their events come in.
CREATE TABLE legacy (id int, name text, seq int);
INSERT INTO legacy VALUES (1, 'legacy one', 1), (2, 'legacy two', 1), (3, 'legacy three', 5);
CREATE TABLE live (id int, name text, extra text, op text, seq int);
INSERT INTO live VALUES (1, 'live one', 'x', 'U', 3), (3, 'stale three', 'y', 'U', 2);
SELECT autocdc.create_auto_cdc_flow(target => 'customers', source => 'live', keys => ARRAY['id'],
  sequence_by => 'seq', apply_as_deletes => $$op = 'D'$$, except_column_list => ARRAY['op', 'seq'],
  name => 'live_feed', pipeline => 'life');
SELECT autocdc.create_auto_cdc_flow(target => 'customers', source => 'legacy', keys => ARRAY['id'],
  sequence_by => 'seq', except_column_list => ARRAY['seq'],
  name => 'backfill', once => true, pipeline => 'life');
-- The backfill writes no "extra": the target's state tracks who set it.
SELECT partial_columns FROM autocdc.target WHERE target = 'customers'::regclass;
SELECT flow, rows_read, rows_upserted, status FROM autocdc.run('life');
SELECT * FROM customers ORDER BY id;
SELECT name, once, once_done_at IS NOT NULL AS once_done FROM autocdc.flows WHERE pipeline = 'life' ORDER BY name;
-- The ONCE flow never runs again, and later rows of its source are not read.
INSERT INTO legacy VALUES (4, 'too late', 1);
INSERT INTO live VALUES (2, NULL, NULL, 'D', 9);
SELECT flow, rows_read, rows_deleted, status FROM autocdc.run('life');
SELECT * FROM customers ORDER BY id;

-- Full refresh: empties the target and its state, forgets checkpoints and
-- ONCE marks, and rebuilds from every source row, in one transaction.
UPDATE customers SET name = 'tampered' WHERE id = 1;
SELECT flow, rows_read, rows_upserted, rows_deleted, status FROM autocdc.run('life', full_refresh => true);
SELECT * FROM customers ORDER BY id;
SELECT flow, rows_read, status FROM autocdc.run('life');

-- A failing flow in a full refresh leaves its target as it was.
INSERT INTO live VALUES (NULL, 'bad', NULL, 'U', 10);
SELECT flow, status FROM autocdc.run('life', full_refresh => true);
SELECT * FROM customers ORDER BY id;
DELETE FROM live WHERE id IS NULL;

-- drop_flow keeps the target; the last flow takes the state with it.
SELECT autocdc.drop_flow('backfill');
SELECT count(*) FROM autocdc.target WHERE target = 'customers'::regclass;
SELECT autocdc.drop_flow('live_feed');
SELECT count(*) FROM autocdc.target WHERE target = 'customers'::regclass;
SELECT count(*) FROM pg_class WHERE relnamespace = 'autocdc'::regnamespace AND relname LIKE '__autocdc_state_%'
   AND obj_description(oid) LIKE '%life.customers%';
SELECT count(*) FROM customers;

-- Dropping a target or a source cleans up its flows and state.
CREATE TABLE s1 (id int, v text, seq int);
CREATE TABLE s2 (id int, v text, seq int);
SELECT autocdc.create_auto_cdc_flow(target => 'l_t1', source => 's1', keys => ARRAY['id'], sequence_by => 'seq', pipeline => 'drops');
SELECT autocdc.create_auto_cdc_flow(target => 'l_t2', source => 's2', keys => ARRAY['id'], sequence_by => 'seq', pipeline => 'drops');
SELECT name FROM autocdc.flows WHERE pipeline = 'drops' ORDER BY 1;
DROP TABLE l_t1;
SELECT name FROM autocdc.flows WHERE pipeline = 'drops' ORDER BY 1;
DROP TABLE s2;
SELECT name FROM autocdc.flows WHERE pipeline = 'drops' ORDER BY 1;
SELECT count(*) FROM autocdc.target WHERE target::text IN ('life.l_t1', 'life.l_t2', 'l_t1', 'l_t2');
SELECT count(*) FROM pg_class WHERE relnamespace = 'autocdc'::regnamespace AND relname LIKE '__autocdc_state_%'
   AND (obj_description(oid) LIKE '%life.l_t1' OR obj_description(oid) LIKE '%life.l_t2');
SELECT * FROM autocdc.run('drops');

-- Flows made again after the last one was dropped read from the beginning:
-- the sequences their predecessors left in __autocdc_sequence are gone
-- (the rows count as written by hand), or a snapshot, its versions from 0
-- again, would leave rows it lacks and keep rows older than theirs, and a
-- CDC flow would find its events at those sequences different.
CREATE TABLE rs (id int PRIMARY KEY, v text);
INSERT INTO rs VALUES (1, 'a'), (2, 'b');
SELECT autocdc.create_auto_cdc_from_snapshot_flow(target => 'rs_t', source => 'rs', keys => ARRAY['id'],
  pipeline => 'again');
SELECT count(*) FROM (SELECT autocdc.run('again') FROM generate_series(1, 3)) r;
SELECT * FROM rs_t ORDER BY id;
SELECT autocdc.drop_flow('rs_t');
DELETE FROM rs WHERE id = 2;
UPDATE rs SET v = 'A' WHERE id = 1;
INSERT INTO rs VALUES (3, 'c');
SELECT autocdc.create_auto_cdc_from_snapshot_flow(target => 'rs_t', source => 'rs', keys => ARRAY['id'],
  pipeline => 'again');
SELECT flow, rows_read, rows_upserted, rows_deleted, rows_skipped, status FROM autocdc.run('again');
SELECT * FROM rs_t ORDER BY id;
CREATE TABLE rc (id int, v text, w text, seq int);
INSERT INTO rc VALUES (1, 'a', 'x', 10), (2, 'b', 'y', 10);
SELECT autocdc.create_auto_cdc_flow(target => 'rc_t', source => 'rc', keys => ARRAY['id'],
  sequence_by => 'seq', column_list => ARRAY['id', 'v'], pipeline => 'again');
SELECT flow, rows_upserted, status FROM autocdc.run('again') WHERE flow = 'rc_t';
SELECT autocdc.drop_flow('rc_t');
ALTER TABLE rc_t ADD COLUMN w text;
SELECT autocdc.create_auto_cdc_flow(target => 'rc_t', source => 'rc', keys => ARRAY['id'],
  sequence_by => 'seq', column_list => ARRAY['id', 'v', 'w'], pipeline => 'again');
SELECT flow, rows_read, rows_upserted, rows_skipped, status, error FROM autocdc.run('again') WHERE flow = 'rc_t';
SELECT * FROM rc_t ORDER BY id;

-- Two runs of one pipeline never overlap (the isolation tests show it
-- concurrently); DROP SCHEMA takes everything with it.
DROP SCHEMA life CASCADE;
SELECT count(*) FROM autocdc.flows WHERE pipeline IN ('life', 'drops', 'again');
RESET search_path;
