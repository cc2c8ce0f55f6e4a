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

-- Two runs of one pipeline never overlap (the isolation tests show it
-- concurrently); DROP SCHEMA takes everything with it.
DROP SCHEMA life CASCADE;
SELECT count(*) FROM autocdc.flows WHERE pipeline IN ('life', 'drops');
RESET search_path;
