-- The source stamp (__autocdc_xid): rows without one are read, exactly
-- once, wherever they come from; given stamps are kept only by a table no
-- flow has read here yet (a restore); the trigger is kept enabled ALWAYS;
-- a checkpoint taken in another cluster is refused.
-- Creates the extension when this file runs alone (make installcheck REGRESS=...).
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS autocdc;
RESET client_min_messages;
CREATE SCHEMA st;
SET search_path = st, public;

-- A partition made LIKE the source, loaded, then attached: its rows have
-- no stamp.  Two flows over the source (SCD 1 and append) read each once.
CREATE TABLE ev (id int, v text, seq int) PARTITION BY RANGE (id);
CREATE TABLE ev_1 PARTITION OF ev FOR VALUES FROM (1) TO (100);
INSERT INTO ev VALUES (1, 'one', 1), (2, 'two', 1);
SELECT autocdc.create_auto_cdc_flow(target => 'st_cur', source => 'ev', keys => ARRAY['id'],
  sequence_by => 'seq', pipeline => 'st');
CREATE TABLE st_log (id int, v text, seq int);
SELECT autocdc.create_append_flow(target => 'st_log', source => 'ev', pipeline => 'st');
SELECT flow, rows_read, status FROM autocdc.run('st');
CREATE TABLE ev_2 (LIKE ev);
INSERT INTO ev_2 VALUES (100, 'hundred', 1), (101, 'hundred and one', 1);
SELECT count(*) AS unstamped FROM ev_2 WHERE __autocdc_xid IS NULL;
ALTER TABLE ev ATTACH PARTITION ev_2 FOR VALUES FROM (100) TO (200);
SELECT c.relname, t.tgenabled FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid
 WHERE t.tgname = '__autocdc_stamp_xid' AND c.oid IN (SELECT relid FROM pg_partition_tree('ev')) ORDER BY 1;
SELECT flow, rows_read, status FROM autocdc.run('st');
SELECT flow, rows_read, status FROM autocdc.run('st');
SELECT * FROM st_cur ORDER BY id;
SELECT * FROM st_log ORDER BY id;
SELECT count(*) AS unstamped FROM ev WHERE __autocdc_xid IS NULL;
-- A partition's trigger is enabled ALWAYS again too.
ALTER TABLE ev_2 ENABLE TRIGGER __autocdc_stamp_xid;
INSERT INTO ev VALUES (102, 'hundred and two', 1);
SELECT flow, rows_read, status FROM autocdc.run('st');
SELECT c.relname, t.tgenabled FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid
 WHERE t.tgname = '__autocdc_stamp_xid' AND c.oid IN (SELECT relid FROM pg_partition_tree('ev')) ORDER BY 1;

-- Rows loaded with the trigger disabled and the default dropped have no
-- stamp either; the run enables the trigger ALWAYS again and reads them.
CREATE TABLE src (id int, v text, seq int);
SELECT autocdc.create_auto_cdc_flow(target => 'st_tgt', source => 'src', keys => ARRAY['id'],
  sequence_by => 'seq', pipeline => 'st2');
CREATE TABLE st_tlog (id int, v text, seq int);
SELECT autocdc.create_append_flow(target => 'st_tlog', source => 'src', pipeline => 'st2');
INSERT INTO src VALUES (1, 'a', 1);
SELECT flow, rows_read FROM autocdc.run('st2');
ALTER TABLE src DISABLE TRIGGER __autocdc_stamp_xid;
ALTER TABLE src ALTER COLUMN __autocdc_xid DROP DEFAULT;
INSERT INTO src VALUES (2, 'b', 1), (3, 'c', 1);
SELECT count(*) AS unstamped FROM src WHERE __autocdc_xid IS NULL;
SELECT flow, rows_read FROM autocdc.run('st2');
SELECT tgenabled FROM pg_trigger WHERE tgrelid = 'src'::regclass AND tgname = '__autocdc_stamp_xid';
SELECT flow, rows_read FROM autocdc.run('st2');
-- Enabled for origin rows only, as pg_restore --disable-triggers leaves it.
ALTER TABLE src ENABLE TRIGGER __autocdc_stamp_xid;
INSERT INTO src VALUES (4, 'd', 1);
SELECT flow, rows_read FROM autocdc.run('st2');
SELECT tgenabled FROM pg_trigger WHERE tgrelid = 'src'::regclass AND tgname = '__autocdc_stamp_xid';
ALTER TABLE src ALTER COLUMN __autocdc_xid SET DEFAULT autocdc._stamp();

-- A source whose trigger was dropped is refused, with the way back.
CREATE TABLE src3 (id int, v text, seq int);
CREATE TABLE st_log3 (id int, v text, seq int);
SELECT autocdc.create_append_flow(target => 'st_log3', source => 'src3', pipeline => 'st4');
DROP TRIGGER __autocdc_stamp_xid ON src3;
SELECT flow, status FROM autocdc.run('st4');
CREATE TRIGGER __autocdc_stamp_xid AFTER INSERT ON st.src3 FOR EACH ROW WHEN (autocdc._stamp_given(NEW.__autocdc_xid)) EXECUTE FUNCTION autocdc._refuse_given_stamp(); ALTER TABLE st.src3 ENABLE ALWAYS TRIGGER __autocdc_stamp_xid;
INSERT INTO src3 VALUES (1, 'a', 1);
SELECT flow, rows_read, status FROM autocdc.run('st4');

-- A row inserted after a run in the run's own transaction is stamped NULL
-- (a dump would lose the command id that told it apart); the next run,
-- in the transaction or after it, stamps it and reads it, once.
BEGIN;
INSERT INTO src VALUES (5, 'e', 1);
SELECT flow, rows_read FROM autocdc.run('st2');
INSERT INTO src VALUES (6, 'f', 1);
SELECT id, __autocdc_xid IS NULL AS unstamped FROM src WHERE id >= 5 ORDER BY id;
COMMIT;
SELECT flow, rows_read FROM autocdc.run('st2');
SELECT flow, rows_read FROM autocdc.run('st2');
BEGIN;
SELECT flow, rows_read FROM autocdc.run('st2');
INSERT INTO src VALUES (7, 'g', 1);
SELECT flow, rows_read FROM autocdc.run('st2');
INSERT INTO src VALUES (8, 'h', 1);
COMMIT;
SELECT flow, rows_read FROM autocdc.run('st2');
SELECT flow, rows_read FROM autocdc.run('st2');
-- A later transaction stamps its rows again.
BEGIN;
INSERT INTO src VALUES (9, 'i', 1);
SELECT count(*) FILTER (WHERE __autocdc_xid = pg_current_xact_id()) AS own FROM src WHERE id = 9;
COMMIT;
SELECT flow, rows_read FROM autocdc.run('st2');

-- A run leaves the stamp's default as it finds it.  Dropped, new rows
-- have no stamp and every run stamps and reads them, once; the default
-- stays dropped.
PREPARE stamp_default(regclass) AS
SELECT pg_get_expr(d.adbin, d.adrelid) AS stamp_default
  FROM pg_attribute a LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
 WHERE a.attrelid = $1 AND a.attname = '__autocdc_xid';
CREATE TABLE src5 (id int, v text, seq int);
CREATE TABLE st_log5 (id int, v text, seq int);
SELECT autocdc.create_append_flow(target => 'st_log5', source => 'src5', pipeline => 'st5');
ALTER TABLE src5 ALTER COLUMN __autocdc_xid DROP DEFAULT;
INSERT INTO src5 VALUES (110, 'j', 1);
SELECT flow, rows_read FROM autocdc.run('st5');
INSERT INTO src5 VALUES (111, 'k', 1);
SELECT flow, rows_read FROM autocdc.run('st5');
SELECT flow, rows_read FROM autocdc.run('st5');
EXECUTE stamp_default('src5');
-- Changed to a constant, its rows are refused; changed to the transaction
-- id, its rows are kept, but not after a run in the same transaction,
-- which took that transaction's rows as read.
ALTER TABLE src5 ALTER COLUMN __autocdc_xid SET DEFAULT '5';
INSERT INTO src5 VALUES (112, 'l', 1);
ALTER TABLE src5 ALTER COLUMN __autocdc_xid SET DEFAULT pg_current_xact_id();
BEGIN;
INSERT INTO src5 VALUES (112, 'l', 1);
SELECT flow, rows_read FROM autocdc.run('st5');
SAVEPOINT s;
INSERT INTO src5 VALUES (113, 'm', 1);
ROLLBACK TO s;
INSERT INTO src5 (id, v, seq, __autocdc_xid) VALUES (113, 'm', 1, pg_current_xact_id());
ROLLBACK TO s;
COPY src5 (id, v, seq) FROM stdin;
113	m	1
\.
ROLLBACK TO s;
-- with the column left out and no default of its own, the row is read
ALTER TABLE src5 ALTER COLUMN __autocdc_xid DROP DEFAULT;
INSERT INTO src5 VALUES (113, 'm', 1);
COMMIT;
SELECT flow, rows_read FROM autocdc.run('st5');
ALTER TABLE src5 ALTER COLUMN __autocdc_xid SET DEFAULT pg_current_xact_id();
INSERT INTO src5 VALUES (114, 'n', 1);
SELECT flow, rows_read FROM autocdc.run('st5');
EXECUTE stamp_default('src5');
ALTER TABLE src5 ALTER COLUMN __autocdc_xid SET DEFAULT autocdc._stamp();
SELECT count(*) AS rows, count(DISTINCT id) AS ids FROM st_log5;
-- A partition takes its partitioned table's default through it: the hint
-- names the table whose default was changed.
CREATE TABLE pp5 (id int, v text, seq int) PARTITION BY LIST (id);
CREATE TABLE pp5_1 PARTITION OF pp5 FOR VALUES IN (1);
CREATE TABLE pp5_log (id int, v text, seq int);
SELECT autocdc.create_append_flow(target => 'pp5_log', source => 'pp5', pipeline => 'st6');
INSERT INTO pp5 VALUES (1, 'a', 1);
SELECT flow, rows_read FROM autocdc.run('st6');
ALTER TABLE ONLY pp5 ALTER COLUMN __autocdc_xid SET DEFAULT '7';
INSERT INTO pp5 VALUES (1, 'b', 1);
INSERT INTO pp5_1 VALUES (1, 'c', 1);
ALTER TABLE ONLY pp5 ALTER COLUMN __autocdc_xid SET DEFAULT autocdc._stamp();
INSERT INTO pp5 VALUES (1, 'd', 1);
SELECT flow, rows_read FROM autocdc.run('st6');
DEALLOCATE stamp_default;

-- INSERT ... SELECT * from another source copies its stamps, which look
-- read: the trigger refuses them, the whole statement; the same rows with
-- the column left out, or DEFAULT in its place, are stamped and read.
INSERT INTO src SELECT id + 10, v, seq, __autocdc_xid FROM ev WHERE id < 100;
INSERT INTO src SELECT id + 10, v, seq, __autocdc_xid FROM src WHERE id IN (1, 2);
SELECT count(*) FROM src WHERE id > 10;
INSERT INTO src (id, v, seq) SELECT id + 10, v, seq FROM ev WHERE id < 100;
INSERT INTO src VALUES (21, 'a', 1, DEFAULT), (22, 'b', 1, DEFAULT);
SELECT flow, rows_read FROM autocdc.run('st2');
SELECT * FROM st_tgt ORDER BY id;
SELECT id, count(*) FROM st_tlog GROUP BY id HAVING count(*) <> 1;
SELECT count(*) FROM st_tlog;
-- A session in replica mode (a bulk load without triggers) is refused too:
-- the trigger fires ALWAYS.
SET session_replication_role = replica;
INSERT INTO src SELECT id + 30, v, seq, __autocdc_xid FROM src WHERE id IN (1, 2);
RESET session_replication_role;

-- A checkpoint taken in another cluster is refused, whichever way the
-- transaction counters stand; a full refresh starts the flow again there.
UPDATE autocdc.checkpoint SET snapshot = '999999999:999999999:' WHERE flow = 'st_tgt';
SELECT flow, status FROM autocdc.run('st2', flows => ARRAY['st_tgt']);
UPDATE autocdc.checkpoint SET cluster_id = 42 WHERE flow = 'st_tlog';
-- As if restored there (pg_restore creates the trigger after the data): a
-- stamp of the other cluster, ahead of this one's transactions, is kept by
-- the COPY; the full refresh reads it too.
ALTER TABLE src DISABLE TRIGGER __autocdc_stamp_xid;
INSERT INTO src VALUES (41, 'ahead', 1, '99999999999');
ALTER TABLE src ENABLE ALWAYS TRIGGER __autocdc_stamp_xid;
SELECT __autocdc_xid FROM src WHERE id = 41;
\set VERBOSITY terse
SELECT flow, status FROM autocdc.run('st2');
\set VERBOSITY default
SELECT flow, rows_read, status FROM autocdc.run('st2', full_refresh => true);
SELECT flow, cluster_id = (SELECT system_identifier FROM pg_control_system()) AS rebased
  FROM autocdc.checkpoint WHERE flow IN ('st_tgt', 'st_tlog') ORDER BY flow;
SELECT count(*) FROM st_tlog;
INSERT INTO src VALUES (40, 'new', 1);
SELECT flow, rows_read, status FROM autocdc.run('st2');

-- Snapshot flows keep no transaction ids: never refused so, a function
-- source included.
CREATE TABLE snap_1 (k int, v text);
INSERT INTO snap_1 VALUES (1, 'x');
CREATE FUNCTION next_snap(latest bigint) RETURNS TABLE (snapshot regclass, version bigint)
LANGUAGE sql AS $$
  SELECT 'st.snap_1'::regclass, 1::bigint WHERE latest IS NULL
$$;
CREATE TABLE st_snap (k int PRIMARY KEY, v text);
SELECT autocdc.create_auto_cdc_from_snapshot_flow(target => 'st_snap', source_function => 'next_snap(bigint)',
  keys => ARRAY['k'], pipeline => 'st3');
SELECT flow, rows_read, status FROM autocdc.run('st3');
UPDATE autocdc.checkpoint SET snapshot = '999999999:999999999:', cluster_id = 42 WHERE flow = 'st_snap';
SELECT flow, rows_read, status FROM autocdc.run('st3');

-- After a run, every source's new rows are stamped NULL in that
-- transaction (the column's default cannot tell which table it fills):
-- rows a run writes into a target that is itself a source (a chained
-- pipeline) too.  The next run over it stamps and reads them, once.
CREATE TABLE ch_src (id int, v text);
SELECT autocdc.create_append_flow(target => 'ch_mid', source => 'ch_src', pipeline => 'ch1');
SELECT autocdc.create_append_flow(target => 'ch_out', source => 'ch_mid', pipeline => 'ch2');
BEGIN;
INSERT INTO ch_src VALUES (1, 'a');
SELECT flow, rows_read FROM autocdc.run('ch1');
SELECT count(*) AS rows, count(*) FILTER (WHERE __autocdc_xid IS NULL) AS unstamped FROM ch_mid;
INSERT INTO ch_src VALUES (2, 'b');
SELECT id, __autocdc_xid IS NULL AS unstamped FROM ch_src ORDER BY id;
COMMIT;
SELECT flow, rows_read FROM autocdc.run('ch2');
SELECT flow, rows_read FROM autocdc.run('ch1');
SELECT flow, rows_read FROM autocdc.run('ch2');
SELECT * FROM ch_out ORDER BY id;

-- A source's rows are read by the flows over its partitions and its
-- parents too: autocdc.source_progress bounds it by all of them.
CREATE TABLE pp (id int, v text) PARTITION BY LIST (id);
CREATE TABLE pp1 PARTITION OF pp FOR VALUES IN (1);
CREATE TABLE pp2 PARTITION OF pp FOR VALUES IN (2);
SELECT autocdc.create_append_flow(target => 'pp_all', source => 'pp', pipeline => 'pp_a');
SELECT autocdc.create_append_flow(target => 'pp_one', source => 'pp1', pipeline => 'pp_b');
INSERT INTO pp VALUES (1, 'x'), (2, 'y');
SELECT flow, rows_read FROM autocdc.run('pp_a');
SELECT source, flows, read_below IS NULL AS not_yet FROM autocdc.source_progress
 WHERE source IN ('pp'::regclass, 'pp1'::regclass) ORDER BY source::text;
SELECT flow, rows_read FROM autocdc.run('pp_b');
SELECT source, flows, read_below IS NOT NULL AS bounded,
       read_below = (SELECT min(pg_snapshot_xmin(c.snapshot)) FROM autocdc.checkpoint c
                      WHERE c.flow IN ('pp_all', 'pp_one')) AS by_both
  FROM autocdc.source_progress
 WHERE source IN ('pp'::regclass, 'pp1'::regclass) ORDER BY source::text;


DROP TABLE ch_src, ch_mid, ch_out, pp, pp_all, pp_one CASCADE;
DROP TABLE st_cur, st_log, st_tgt, st_tlog, st_snap, st_log3, st_log5, pp5_log CASCADE;
DROP SCHEMA st CASCADE;
