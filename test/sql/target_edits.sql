-- Manual changes to a target (README "Changing a target by hand"): rows
-- edited, deleted or inserted by hand, and a target emptied by TRUNCATE.
-- Every scenario runs through two pipelines (te_c and te_sql) over one
-- source, whose targets must agree.
-- Creates the extension when this file runs alone (make installcheck REGRESS=...).
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS autocdc;
RESET client_min_messages;
CREATE SCHEMA te;
SET search_path = te, public;

CREATE TABLE src (id int, v text, seq int, del boolean NOT NULL DEFAULT false);
SELECT autocdc.create_auto_cdc_flow(target => 'te_c1', source => 'src', keys => ARRAY['id'],
  sequence_by => 'seq', apply_as_deletes => 'del', except_column_list => ARRAY['del'], pipeline => 'te_c');
SELECT autocdc.create_auto_cdc_flow(target => 'te_h', source => 'src', keys => ARRAY['id'],
  sequence_by => 'seq', apply_as_deletes => 'del', except_column_list => ARRAY['del'],
  stored_as_scd_type => 2, pipeline => 'te_c');
SELECT autocdc.create_auto_cdc_flow(target => 'te_c1_sql', source => 'src', keys => ARRAY['id'],
  sequence_by => 'seq', apply_as_deletes => 'del', except_column_list => ARRAY['del'], pipeline => 'te_sql');
SELECT autocdc.create_auto_cdc_flow(target => 'te_h_sql', source => 'src', keys => ARRAY['id'],
  sequence_by => 'seq', apply_as_deletes => 'del', except_column_list => ARRAY['del'],
  stored_as_scd_type => 2, pipeline => 'te_sql');

-- Runs both pipelines; then each te_sql target must equal its te_c twin.
CREATE FUNCTION run_both() RETURNS TABLE (flow text, rows_read bigint, rows_upserted bigint,
                                          rows_deleted bigint, status text)
LANGUAGE plpgsql AS $$
BEGIN
  RETURN QUERY SELECT r.flow, r.rows_read, r.rows_upserted, r.rows_deleted, r.status FROM autocdc.run('te_c') r;
  RETURN QUERY SELECT r.flow, r.rows_read, r.rows_upserted, r.rows_deleted, r.status FROM autocdc.run('te_sql') r;
END $$;
CREATE VIEW folds_differ AS
  SELECT 'te_c1' AS t, count(*) FROM ((TABLE te_c1 EXCEPT TABLE te_c1_sql) UNION ALL (TABLE te_c1_sql EXCEPT TABLE te_c1)) d
  UNION ALL
  SELECT 'te_h', count(*) FROM ((TABLE te_h EXCEPT TABLE te_h_sql) UNION ALL (TABLE te_h_sql EXCEPT TABLE te_h)) d;

INSERT INTO src (id, v, seq) VALUES (1, 'a', 10), (2, 'b', 10), (3, 'c', 10), (4, 'd', 10);
SELECT * FROM run_both();

-- By hand: keys 1 and 3 edited, key 2 deleted, key 9 (which no event has
-- named) inserted, in every target; in the SCD 2 ones also a closed
-- version of key 8, which no event has named either.
UPDATE te_c1 SET v = 'hand' WHERE id IN (1, 3);
UPDATE te_c1_sql SET v = 'hand' WHERE id IN (1, 3);
UPDATE te_h SET v = 'hand' WHERE id IN (1, 3);
UPDATE te_h_sql SET v = 'hand' WHERE id IN (1, 3);
DELETE FROM te_c1 WHERE id = 2;
DELETE FROM te_c1_sql WHERE id = 2;
DELETE FROM te_h WHERE id = 2;
DELETE FROM te_h_sql WHERE id = 2;
INSERT INTO te_c1 VALUES (9, 'hand', 0);
INSERT INTO te_c1_sql VALUES (9, 'hand', 0);
INSERT INTO te_h VALUES (9, 'hand', 0, 0, NULL), (8, 'hand', 0, 0, 5);
INSERT INTO te_h_sql VALUES (9, 'hand', 0, 0, NULL), (8, 'hand', 0, 0, 5);

-- A run without new events leaves them alone.
SELECT * FROM run_both();
SELECT * FROM te_c1 ORDER BY id;
SELECT * FROM te_h ORDER BY id, __start_at;

-- Newer events: the hand-deleted key 2 comes back (SCD 2: from its new
-- event alone, because a version that started alone is kept only as its
-- row, and that row was deleted), the hand-inserted key 9 is overwritten
-- (SCD 2: its open version is closed), and key 8's hand-made version is
-- taken as the upsert that started it and is closed by the key's event.
-- An event older than the hand-edited key 1's row leaves an SCD 1 row
-- alone; SCD 2 folds it into key 1's history, where the edited row stands
-- for the upsert it started with.
INSERT INTO src (id, v, seq) VALUES (2, 'b2', 20), (9, 'i', 20), (8, 'h8', 20), (1, 'late', 5);
SELECT * FROM run_both();
SELECT * FROM te_c1 ORDER BY id;
SELECT * FROM te_h ORDER BY id, __start_at;
SELECT * FROM folds_differ;

-- A newer event overwrites the hand-edited key 3 (SCD 2: closes the
-- edited version, which keeps the edit as history); deletes of key 4 and
-- of key 9 work as for any key.
INSERT INTO src (id, v, seq) VALUES (3, 'c2', 20);
INSERT INTO src (id, seq, del) VALUES (4, 20, true), (9, 30, true);
SELECT * FROM run_both();
SELECT * FROM te_c1 ORDER BY id;
SELECT * FROM te_h ORDER BY id, __start_at;
SELECT * FROM folds_differ;

-- SCD 2, a closed version deleted by hand: the key's next event folds from
-- its open version and leaves the gap; a late event before the gap folds
-- that part of the history again from what is kept.  The deleted version
-- had started alone, so only its row held it, and it stays deleted.
DELETE FROM te_h WHERE id = 2 AND __end_at IS NOT NULL;
DELETE FROM te_h_sql WHERE id = 2 AND __end_at IS NOT NULL;
INSERT INTO src (id, v, seq) VALUES (2, 'b3', 30);
SELECT * FROM run_both();
SELECT * FROM te_h WHERE id = 2 ORDER BY __start_at;
INSERT INTO src (id, v, seq) VALUES (2, 'b-late', 15);
SELECT * FROM run_both();
SELECT * FROM te_h WHERE id = 2 ORDER BY __start_at;
SELECT * FROM folds_differ;

-- A delete for a key the state does not know, whose row was inserted by
-- hand, removes the row (SCD 2: closes the open version).
INSERT INTO te_c1 VALUES (7, 'hand', 0);
INSERT INTO te_c1_sql VALUES (7, 'hand', 0);
INSERT INTO te_h VALUES (7, 'hand', 0, 0, NULL);
INSERT INTO te_h_sql VALUES (7, 'hand', 0, 0, NULL);
INSERT INTO src (id, seq, del) VALUES (7, 20, true);
SELECT * FROM run_both();
SELECT * FROM te_c1 WHERE id = 7;
SELECT * FROM te_h WHERE id = 7 ORDER BY __start_at;
SELECT * FROM folds_differ;

-- A source read whole (a view) is read by ONCE flows only: a hand-edited
-- row stays until a full refresh reads the view again and rebuilds it.
CREATE VIEW src_v AS SELECT id, v, seq FROM src WHERE NOT del;
SELECT autocdc.create_auto_cdc_flow(target => 'te_v1', source => 'src_v', keys => ARRAY['id'],
  sequence_by => 'seq', pipeline => 'te_view', once => true);
SELECT autocdc.create_auto_cdc_flow(target => 'te_v2', source => 'src_v', keys => ARRAY['id'],
  sequence_by => 'seq', stored_as_scd_type => 2, pipeline => 'te_view', once => true);
SELECT flow, status FROM autocdc.run('te_view');
UPDATE te_v1 SET v = 'hand' WHERE id = 3;
UPDATE te_v2 SET v = 'hand' WHERE id = 3 AND __end_at IS NULL;
SELECT flow, status FROM autocdc.run('te_view');
SELECT flow, status FROM autocdc.run('te_view', full_refresh => true);
SELECT * FROM te_v1 WHERE id = 3;
SELECT flow, status FROM autocdc.run('te_view');

-- TRUNCATE of a target whose state holds live keys: the next run detects
-- it and refuses; a full refresh rebuilds the target from its sources.
TRUNCATE te_c1, te_h;
INSERT INTO src (id, v, seq) VALUES (5, 'e', 40);
SELECT flow, rows_read, status FROM autocdc.run('te_c');
SELECT flow, status, error FROM autocdc.event_log WHERE pipeline = 'te_c' ORDER BY id DESC LIMIT 2;
SELECT count(*) FROM te_c1;
SELECT flow, rows_read, rows_upserted, status FROM autocdc.run('te_c', full_refresh => true);
SELECT * FROM te_c1 ORDER BY id;
SELECT * FROM te_h ORDER BY id, __start_at;
SELECT flow, rows_read, status FROM autocdc.run('te_c');
-- So does DELETE of every row.
DELETE FROM te_c1_sql;
SELECT flow, status FROM autocdc.run('te_sql');
SELECT flow, status FROM autocdc.run('te_sql', full_refresh => true);

-- A target that is empty because its events deleted every key is not
-- mistaken for a truncated one (the state keeps only tombstones; an SCD 2
-- event store that holds deletes only, of keys never seen, neither).
CREATE TABLE gone (id int, v text, seq int, del boolean NOT NULL DEFAULT false);
SELECT autocdc.create_auto_cdc_flow(target => 'te_gone1', source => 'gone', keys => ARRAY['id'],
  sequence_by => 'seq', apply_as_deletes => 'del', except_column_list => ARRAY['del'], pipeline => 'te_gone');
SELECT autocdc.create_auto_cdc_flow(target => 'te_gone2', source => 'gone', keys => ARRAY['id'],
  sequence_by => 'seq', apply_as_deletes => 'del', except_column_list => ARRAY['del'],
  stored_as_scd_type => 2, pipeline => 'te_gone');
CREATE TABLE gone_d (id int, v text, seq int, del boolean NOT NULL DEFAULT true);
SELECT autocdc.create_auto_cdc_flow(target => 'te_gone_d2', source => 'gone_d', keys => ARRAY['id'],
  sequence_by => 'seq', apply_as_deletes => 'del', except_column_list => ARRAY['del'],
  stored_as_scd_type => 2, pipeline => 'te_gone');
INSERT INTO gone VALUES (1, 'x', 1, false), (1, NULL, 2, true);
INSERT INTO gone_d VALUES (1, NULL, 1);
SELECT flow, rows_read, status FROM autocdc.run('te_gone');
INSERT INTO gone VALUES (2, NULL, 1, true);
INSERT INTO gone_d VALUES (2, NULL, 1);
SELECT flow, rows_read, status FROM autocdc.run('te_gone');
SELECT count(*) FROM te_gone1;

-- Snapshot targets are checked the same way.
CREATE TABLE snap (id int, v text);
INSERT INTO snap VALUES (1, 'one'), (2, 'two');
SELECT autocdc.create_auto_cdc_from_snapshot_flow(target => 'te_snap1', source => 'snap',
  keys => ARRAY['id'], pipeline => 'te_snap');
SELECT autocdc.create_auto_cdc_from_snapshot_flow(target => 'te_snap2', source => 'snap',
  keys => ARRAY['id'], stored_as_scd_type => 2, pipeline => 'te_snap');
SELECT flow, rows_read, status FROM autocdc.run('te_snap');
TRUNCATE te_snap1, te_snap2;
SELECT flow, status FROM autocdc.run('te_snap');
SELECT flow, status FROM autocdc.run('te_snap', full_refresh => true);
SELECT * FROM te_snap1 ORDER BY id;
SELECT id, v, __start_at, __end_at FROM te_snap2 ORDER BY id, __start_at;

-- An append target has no state: a TRUNCATE of it is not detected, and
-- the next run appends only the rows that are new since the last one.
CREATE TABLE log_src (id int, v text);
INSERT INTO log_src VALUES (1, 'x'), (2, 'y');
SELECT autocdc.create_append_flow(target => 'te_log_t', source => 'log_src', pipeline => 'te_log');
SELECT flow, rows_read, status FROM autocdc.run('te_log');
TRUNCATE te_log_t;
INSERT INTO log_src VALUES (3, 'z');
SELECT flow, rows_read, status FROM autocdc.run('te_log');
SELECT * FROM te_log_t ORDER BY id;
SELECT flow, rows_read, status FROM autocdc.run('te_log', full_refresh => true);
SELECT * FROM te_log_t ORDER BY id;

-- SCD 2, applied events read again after hand edits.  An open version
-- deleted by hand: an event at the start of the version before it is still
-- known as applied (the last version bounds what was applied).  A row
-- inserted by hand is taken as the upsert at its start: the same event
-- read again is skipped, a different one is a conflict.
CREATE TABLE re (id int, v text, seq int, del boolean NOT NULL DEFAULT false);
SELECT autocdc.create_auto_cdc_flow(target => 'te_re', source => 're', keys => ARRAY['id'],
  sequence_by => 'seq', stored_as_scd_type => 2, apply_as_deletes => 'del',
  except_column_list => ARRAY['seq', 'del'], pipeline => 'te_re');
INSERT INTO re (id, v, seq) VALUES (1, 'a', 1), (1, 'b', 5);
SELECT flow, rows_read, rows_skipped, status FROM autocdc.run('te_re');
DELETE FROM te_re WHERE id = 1 AND __end_at IS NULL;
INSERT INTO re (id, v, seq) VALUES (1, 'a', 1);
SELECT flow, rows_read, rows_skipped, status FROM autocdc.run('te_re');
INSERT INTO te_re VALUES (3, 'hand', 0, 4);
INSERT INTO re (id, v, seq) VALUES (3, 'hand', 0);
SELECT flow, rows_read, rows_skipped, status FROM autocdc.run('te_re');
INSERT INTO re (id, v, seq) VALUES (3, 'x', 0);
SELECT flow, status, error FROM autocdc.run('te_re');
DELETE FROM re WHERE id = 3 AND v = 'x';
SELECT * FROM te_re ORDER BY id, __start_at;

-- SCD 2, a target whose trigger changes the rows written: the rows do not
-- hold the events, so the store keeps them all, and late events and
-- replays fold as in one batch.
CREATE TABLE tr_src (id int, v text, seq int);
SELECT autocdc.create_auto_cdc_flow(target => 'te_trg', source => 'tr_src', keys => ARRAY['id'],
  sequence_by => 'seq', stored_as_scd_type => 2, except_column_list => ARRAY['seq'], pipeline => 'te_trg');
CREATE FUNCTION te_upper() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN NEW.v := upper(NEW.v); RETURN NEW; END $$;
CREATE TRIGGER te_upper BEFORE INSERT ON te_trg FOR EACH ROW EXECUTE FUNCTION te_upper();
INSERT INTO tr_src VALUES (1, 'a', 1), (1, 'b', 5);
SELECT flow, rows_read, status FROM autocdc.run('te_trg');
INSERT INTO tr_src VALUES (1, 'a', 3);
SELECT flow, rows_read, status FROM autocdc.run('te_trg');
INSERT INTO tr_src VALUES (1, 'b', 5);
SELECT flow, rows_read, rows_skipped, status FROM autocdc.run('te_trg');
SELECT * FROM te_trg ORDER BY id, __start_at;

SELECT autocdc.drop_flow(name) FROM autocdc.flows WHERE pipeline LIKE 'te\_%' ORDER BY name;
RESET search_path;
SET client_min_messages = warning;
DROP SCHEMA te CASCADE;
RESET client_min_messages;
