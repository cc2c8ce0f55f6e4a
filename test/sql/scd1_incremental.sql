-- Incremental, exactly once: each run reads the rows committed (or written
-- by its own transaction) since the last, never twice, never missed.
-- Creates the extension when this file runs alone (make installcheck REGRESS=...).
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS autocdc;
RESET client_min_messages;
CREATE SCHEMA inc;
SET search_path = inc, public;
CREATE TABLE src (id int, v text, seq int);
-- Rows already there when the table becomes a source are read by the first run.
INSERT INTO src VALUES (1, 'before', 1);
SELECT autocdc.create_auto_cdc_flow(target => 'tgt', source => 'src', keys => ARRAY['id'],
  sequence_by => 'seq', except_column_list => ARRAY['seq'], pipeline => 'inc');
-- The source got autocdc's hidden column, defaulting to the inserting transaction, and its index.
SELECT attname, atttypid::regtype, pg_get_expr(adbin, adrelid) AS default
  FROM pg_attribute LEFT JOIN pg_attrdef ON adrelid = attrelid AND adnum = attnum
 WHERE attrelid = 'src'::regclass AND attname = '__autocdc_xid';
SELECT indexdef FROM pg_indexes WHERE schemaname = 'inc' AND tablename = 'src';
SELECT rows_read, rows_upserted FROM autocdc.run('inc');
SELECT rows_read FROM autocdc.run('inc');

-- Rows inserted earlier in the run's transaction are read by that run; rows
-- it inserts after the run are read by the next run, once.
BEGIN;
INSERT INTO src VALUES (2, 'same tx, before run', 1);
SELECT rows_read, rows_upserted FROM autocdc.run('inc');
INSERT INTO src VALUES (3, 'same tx, after run', 1);
SELECT rows_read, rows_upserted FROM autocdc.run('inc');
INSERT INTO src VALUES (4, 'same tx, after second run', 1);
COMMIT;
SELECT rows_read, rows_upserted FROM autocdc.run('inc');
SELECT rows_read FROM autocdc.run('inc');
SELECT * FROM tgt ORDER BY id;

-- A rolled-back insert is never read; a rolled-back run leaves its rows for the next.
BEGIN;
INSERT INTO src VALUES (5, 'rolled back', 1);
ROLLBACK;
INSERT INTO src VALUES (6, 'six', 1);
BEGIN;
SELECT rows_read FROM autocdc.run('inc');
ROLLBACK;
SELECT rows_read, rows_upserted FROM autocdc.run('inc');
SELECT * FROM tgt ORDER BY id;

-- Savepoints: rows of a rolled-back subtransaction are gone, the others read.
BEGIN;
INSERT INTO src VALUES (7, 'kept', 1);
SAVEPOINT s;
INSERT INTO src VALUES (8, 'undone', 1);
ROLLBACK TO SAVEPOINT s;
COMMIT;
SELECT rows_read, rows_upserted FROM autocdc.run('inc');
SELECT id FROM tgt ORDER BY id;

-- Choosing flows: only those named run.
CREATE TABLE src2 (id int, v text, seq int);
SELECT autocdc.create_auto_cdc_flow(target => 'tgt2', source => 'src2', keys => ARRAY['id'],
  sequence_by => 'seq', pipeline => 'inc');
INSERT INTO src VALUES (9, 'nine', 1);
INSERT INTO src2 VALUES (1, 'one', 1);
SELECT flow, rows_read FROM autocdc.run('inc', flows => ARRAY['tgt2']);
SELECT flow, rows_read FROM autocdc.run('inc');

-- A view source has no transaction column: it is read whole, so only a ONCE
-- flow takes one (a flow that reads again is refused: source_query.sql),
-- and the event log says so.
CREATE VIEW src_view AS SELECT id, v, seq FROM src WHERE id < 3;
SELECT autocdc.create_auto_cdc_flow(target => 'from_view', source => 'src_view', keys => ARRAY['id'],
  sequence_by => 'seq', except_column_list => ARRAY['seq'], pipeline => 'view', once => true);
SELECT rows_read, rows_upserted FROM autocdc.run('view');
SELECT rows_read, rows_upserted, rows_skipped FROM autocdc.run('view');
SELECT read_mode, count(*) FROM autocdc.event_log WHERE pipeline = 'view' GROUP BY 1;
SELECT * FROM from_view ORDER BY id;

-- Run cost follows new rows: the read can use the index on the transaction column.
SET enable_seqscan = off;
SELECT pg_stat_force_next_flush();
SELECT pg_stat_clear_snapshot();
SELECT coalesce(idx_scan, 0) AS scans_before FROM pg_stat_user_indexes WHERE relid = 'src'::regclass \gset
SELECT rows_read FROM autocdc.run('inc', flows => ARRAY['tgt']);
SELECT pg_stat_force_next_flush();
SELECT pg_stat_clear_snapshot();
SELECT idx_scan > :scans_before AS index_used FROM pg_stat_user_indexes WHERE relid = 'src'::regclass;
RESET enable_seqscan;

-- A chain: one flow's target is another's source; the producer runs first,
-- and the consumer reads what the producer wrote in the same run.
CREATE TABLE chain_src (id int, v text, seq int);
SELECT autocdc.create_auto_cdc_flow(target => 'chain_mid', source => 'chain_src', keys => ARRAY['id'],
  sequence_by => 'seq', pipeline => 'chain', name => 'z_first');
SELECT autocdc.create_auto_cdc_flow(target => 'chain_end', source => 'chain_mid', keys => ARRAY['id'],
  sequence_by => 'seq', except_column_list => ARRAY['seq'], pipeline => 'chain', name => 'a_second');
INSERT INTO chain_src VALUES (1, 'one', 1), (2, 'two', 1);
SELECT flow, rows_read, rows_upserted FROM autocdc.run('chain');
SELECT * FROM chain_end ORDER BY id;
SELECT flow, rows_read, rows_upserted FROM autocdc.run('chain');
-- Every inserted row is stamped by the column's default; a trigger (AFTER
-- INSERT, enabled ALWAYS, so rows that logical replication applies too)
-- refuses rows copied with INSERT ... SELECT * from another source, whose
-- stale transaction ids would look already read.  Named columns are read.
SELECT tgname, tgenabled, pg_get_triggerdef(oid) FROM pg_trigger WHERE tgrelid = 'src'::regclass;
CREATE TABLE src_copy (LIKE src);
SELECT autocdc.create_auto_cdc_flow(target => 'tgt_copy', source => 'src_copy', keys => ARRAY['id'],
  sequence_by => 'seq', except_column_list => ARRAY['seq'], pipeline => 'copy');
SELECT rows_read FROM autocdc.run('copy');
INSERT INTO src_copy SELECT * FROM src;
SELECT count(*) FROM src_copy;
INSERT INTO src_copy (id, v, seq) SELECT id, v, seq FROM src;
SELECT rows_read FROM autocdc.run('copy');

-- A checkpoint from another cluster (a dump restored elsewhere) is refused,
-- with the way out; after it, runs are incremental again.
UPDATE autocdc.checkpoint SET snapshot = '999999999:999999999:' WHERE flow = 'tgt';
SELECT flow, status FROM autocdc.run('inc', flows => ARRAY['tgt']);
UPDATE src SET __autocdc_xid = NULL;
SELECT flow, rows_read, status FROM autocdc.run('inc', flows => ARRAY['tgt'], full_refresh => true);
INSERT INTO src VALUES (10, 'ten', 1);
SELECT flow, rows_read, status FROM autocdc.run('inc', flows => ARRAY['tgt']);
RESET search_path;
