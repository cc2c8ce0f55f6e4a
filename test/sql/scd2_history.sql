-- SCD type 2 history is the fold of the events, whatever order they come in.
-- Creates the extension when this file runs alone (make installcheck REGRESS=...).
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS autocdc;
RESET client_min_messages;
CREATE SCHEMA hist;
SET search_path = hist, public;
CREATE TABLE ev (id int, status text, note text, op text, seq int);
SELECT autocdc.create_auto_cdc_flow(target => 'h', source => 'ev', keys => ARRAY['id'],
  sequence_by => 'seq', apply_as_deletes => $$op = 'D'$$,
  except_column_list => ARRAY['op', 'seq'], stored_as_scd_type => 2, pipeline => 'hist');
CREATE VIEW overlapping AS
  SELECT a.id, a.__start_at, b.__start_at AS other_start
    FROM h a JOIN h b ON a.id = b.id AND a.__start_at < b.__start_at
   WHERE a.__end_at IS NULL OR a.__end_at > b.__start_at OR a.__end_at <= a.__start_at;

-- A late event goes into the middle (TORTURE s02): ACTIVE at 12, then PENDING at 10.
INSERT INTO ev VALUES (1, 'ACTIVE', NULL, 'U', 12);
SELECT rows_upserted FROM autocdc.run('hist');
INSERT INTO ev VALUES (1, 'PENDING', NULL, 'U', 10);
SELECT rows_upserted, rows_deleted FROM autocdc.run('hist');
SELECT id, status, __start_at, __end_at FROM h WHERE id = 1 ORDER BY __start_at;

-- A late update before a delete (TORTURE s06): ACTIVE 17, DELETE 20, late SUSPENDED 18.
INSERT INTO ev VALUES (2, 'ACTIVE', NULL, 'U', 17), (2, NULL, NULL, 'D', 20);
SELECT rows_upserted FROM autocdc.run('hist');
INSERT INTO ev VALUES (2, 'SUSPENDED', NULL, 'U', 18);
SELECT rows_upserted FROM autocdc.run('hist');
SELECT id, status, __start_at, __end_at FROM h WHERE id = 2 ORDER BY __start_at;

-- A late upsert older than a delete never resurrects the key past it (TOMB-NB).
INSERT INTO ev VALUES (3, 'Seattle', NULL, 'U', 10), (3, NULL, NULL, 'D', 20);
SELECT rows_upserted FROM autocdc.run('hist');
INSERT INTO ev VALUES (3, 'Tacoma', NULL, 'U', 15);
SELECT rows_upserted FROM autocdc.run('hist');
SELECT id, status, __start_at, __end_at FROM h WHERE id = 3 ORDER BY __start_at;

-- A late delete inside history closes the right version (TOMB-NB).
INSERT INTO ev VALUES (4, 'Portland', NULL, 'U', 10), (4, NULL, NULL, 'D', 20);
SELECT rows_upserted FROM autocdc.run('hist');
INSERT INTO ev VALUES (4, NULL, NULL, 'D', 15);
SELECT rows_upserted, rows_deleted FROM autocdc.run('hist');
SELECT id, status, __start_at, __end_at FROM h WHERE id = 4 ORDER BY __start_at;
-- ... and one that splits nothing but shortens: [10,30) and a late delete at 20.
INSERT INTO ev VALUES (5, 'x', NULL, 'U', 10), (5, 'y', NULL, 'U', 30);
SELECT rows_upserted FROM autocdc.run('hist');
INSERT INTO ev VALUES (5, NULL, NULL, 'D', 20);
SELECT rows_upserted FROM autocdc.run('hist');
SELECT id, status, __start_at, __end_at FROM h WHERE id = 5 ORDER BY __start_at;

-- Replays of 10, 20, 30, 40 and a delete at 50 (TORTURE s07) add nothing.
INSERT INTO ev VALUES (6, 'PENDING', 'Antalya', 'U', 10), (6, 'ACTIVE', 'Antalya', 'U', 20),
  (6, 'ACTIVE', 'Izmir', 'U', 30), (6, 'SUSPENDED', 'Ankara', 'U', 40), (6, NULL, NULL, 'D', 50);
SELECT rows_read, rows_upserted FROM autocdc.run('hist');
INSERT INTO ev (id, status, note, op, seq) SELECT id, status, note, op, seq FROM ev WHERE id = 6;
SELECT rows_read, rows_upserted, rows_deleted, rows_skipped FROM autocdc.run('hist');
SELECT id, status, note, __start_at, __end_at FROM h WHERE id = 6 ORDER BY __start_at;

-- An update that changes nothing is a no-op; in order, a new event touches
-- only its key's open version: closed versions keep their tuples.
SELECT ctid AS closed_tuple FROM h WHERE id = 1 AND __start_at = 10 \gset
INSERT INTO ev VALUES (1, 'ACTIVE', NULL, 'U', 13);
SELECT rows_read, rows_upserted FROM autocdc.run('hist');
INSERT INTO ev VALUES (1, 'CLOSED', NULL, 'U', 14);
SELECT rows_read, rows_upserted FROM autocdc.run('hist');
SELECT ctid = :'closed_tuple' AS untouched FROM h WHERE id = 1 AND __start_at = 10;
SELECT id, status, __start_at, __end_at FROM h WHERE id = 1 ORDER BY __start_at;

SELECT count(*) AS overlapping_versions FROM overlapping;

-- Track history: only changes to tracked columns make versions (TORTURE s08);
-- an untracked change updates the version it falls in, and stays exact when a
-- late event later splits that version.
CREATE TABLE sync (id int, status text, synced_at int, seq int);
SELECT autocdc.create_auto_cdc_flow(target => 'synced', source => 'sync', keys => ARRAY['id'],
  sequence_by => 'seq', except_column_list => ARRAY['seq'], stored_as_scd_type => 2,
  track_history_except_column_list => ARRAY['synced_at'], pipeline => 'sync');
INSERT INTO sync SELECT 1, 'ACTIVE', s, s FROM generate_series(10, 60, 10) s;
SELECT rows_read, rows_upserted FROM autocdc.run('sync');
SELECT id, status, synced_at, __start_at, __end_at FROM synced ORDER BY __start_at;
INSERT INTO sync VALUES (1, 'PAUSED', 35, 35);
SELECT rows_read, rows_upserted FROM autocdc.run('sync');
SELECT id, status, synced_at, __start_at, __end_at FROM synced ORDER BY __start_at;

-- Partial updates: a NULL inherits the previous version's value; a delete resets.
CREATE TABLE pev (id int, a text, b text, op text, seq int);
SELECT autocdc.create_auto_cdc_flow(target => 'p2', source => 'pev', keys => ARRAY['id'],
  sequence_by => 'seq', apply_as_deletes => $$op = 'D'$$, except_column_list => ARRAY['op', 'seq'],
  stored_as_scd_type => 2, ignore_null_updates => true, pipeline => 'partial2');
INSERT INTO pev VALUES (1, 'a1', 'b1', 'U', 10), (1, NULL, 'b2', 'U', 20), (1, 'a3', NULL, 'U', 30);
SELECT rows_upserted FROM autocdc.run('partial2');
SELECT * FROM p2 ORDER BY __start_at;
-- A late event changes what the later NULLs inherit.
INSERT INTO pev VALUES (1, 'a15', NULL, 'U', 15);
SELECT rows_upserted FROM autocdc.run('partial2');
SELECT * FROM p2 ORDER BY __start_at;
-- A late delete resets: after it, NULLs inherit nothing.
INSERT INTO pev VALUES (1, NULL, NULL, 'D', 18);
SELECT rows_upserted FROM autocdc.run('partial2');
SELECT * FROM p2 ORDER BY __start_at;

-- A ROW(...) sequence: history columns take its composite type.
CREATE TABLE rev (id int, ts int, n int, v text);
SELECT autocdc.create_auto_cdc_flow(target => 'r2', source => 'rev', keys => ARRAY['id'],
  sequence_by => 'ROW(ts, n)', except_column_list => ARRAY['ts', 'n'],
  stored_as_scd_type => 2, pipeline => 'row2');
INSERT INTO rev VALUES (1, 1, 2, 'b'), (1, 1, 1, 'a'), (1, 2, 0, 'c');
SELECT rows_upserted FROM autocdc.run('row2');
SELECT id, v, __start_at, __end_at FROM r2 ORDER BY __start_at;
SELECT v FROM autocdc.as_of(NULL::r2, (SELECT __end_at FROM r2 WHERE v = 'a'));
-- Late events fold again from the start of the last version before them
-- (no stored delete bounds them): in three runs, with an untracked change
-- absorbed and a late delete, the same history as one run over them all.
CREATE TABLE lev (id int, v text, w text, op text, seq int);
CREATE TABLE lev_all (id int, v text, w text, op text, seq int);
SELECT autocdc.create_auto_cdc_flow(target => 'l_inc', source => 'lev', keys => ARRAY['id'],
  sequence_by => 'seq', apply_as_deletes => $$op = 'D'$$, except_column_list => ARRAY['op', 'seq'],
  stored_as_scd_type => 2, track_history_except_column_list => ARRAY['w'], pipeline => 'late_inc');
SELECT autocdc.create_auto_cdc_flow(target => 'l_all', source => 'lev_all', keys => ARRAY['id'],
  sequence_by => 'seq', apply_as_deletes => $$op = 'D'$$, except_column_list => ARRAY['op', 'seq'],
  stored_as_scd_type => 2, track_history_except_column_list => ARRAY['w'], pipeline => 'late_all');
INSERT INTO lev VALUES (1, 'a', 'x', 'U', 10), (1, 'b', 'x', 'U', 20), (1, 'b', 'y', 'U', 25),
  (1, 'c', 'y', 'U', 30), (1, 'c', 'y', 'U', 35), (2, 'a', 'x', 'U', 10), (2, 'b', 'x', 'U', 20),
  (2, 'b', 'x', 'D', 40), (2, 'z', 'x', 'U', 50), (2, 'q', 'x', 'U', 60);
SELECT rows_upserted FROM autocdc.run('late_inc');
INSERT INTO lev VALUES (1, 'b', 'z', 'U', 27), (1, 'c', 'y', 'U', 22), (1, 'd', 'y', 'U', 33),
  (2, 'b', 'w', 'U', 55), (2, 'n', 'x', 'U', 45);
SELECT rows_upserted FROM autocdc.run('late_inc');
INSERT INTO lev VALUES (1, 'e', 'y', 'U', 21), (1, 'c', 'y', 'D', 31), (2, 'z', 'x', 'U', 52);
SELECT rows_upserted, rows_deleted FROM autocdc.run('late_inc');
INSERT INTO lev_all SELECT id, v, w, op, seq FROM lev;
SELECT rows_upserted, rows_deleted FROM autocdc.run('late_all');
SELECT id, v, w, __start_at, __end_at FROM l_inc ORDER BY id, __start_at;
SELECT NOT EXISTS (SELECT id, v, w, __start_at, __end_at FROM l_inc
                   EXCEPT SELECT id, v, w, __start_at, __end_at FROM l_all)
   AND NOT EXISTS (SELECT id, v, w, __start_at, __end_at FROM l_all
                   EXCEPT SELECT id, v, w, __start_at, __end_at FROM l_inc) AS same_history;

-- With partial updates, a version may start at an update that inherits a
-- column: the fold then starts after the last delete, as before.
CREATE TABLE lpev (id int, a text, b text, op text, seq int);
CREATE TABLE lpev_all (id int, a text, b text, op text, seq int);
SELECT autocdc.create_auto_cdc_flow(target => 'lp_inc', source => 'lpev', keys => ARRAY['id'],
  sequence_by => 'seq', apply_as_deletes => $$op = 'D'$$, except_column_list => ARRAY['op', 'seq'],
  stored_as_scd_type => 2, ignore_null_updates => true, pipeline => 'latep_inc');
SELECT autocdc.create_auto_cdc_flow(target => 'lp_all', source => 'lpev_all', keys => ARRAY['id'],
  sequence_by => 'seq', apply_as_deletes => $$op = 'D'$$, except_column_list => ARRAY['op', 'seq'],
  stored_as_scd_type => 2, ignore_null_updates => true, pipeline => 'latep_all');
INSERT INTO lpev VALUES (1, 'a', 'x', 'U', 10), (1, 'b', NULL, 'U', 20), (1, NULL, 'y', 'U', 30);
SELECT rows_upserted FROM autocdc.run('latep_inc');
INSERT INTO lpev VALUES (1, NULL, 'z', 'U', 25), (1, 'c', NULL, 'U', 35);
SELECT rows_upserted FROM autocdc.run('latep_inc');
INSERT INTO lpev_all SELECT id, a, b, op, seq FROM lpev;
SELECT rows_upserted FROM autocdc.run('latep_all');
SELECT id, a, b, __start_at, __end_at FROM lp_inc ORDER BY id, __start_at;
SELECT NOT EXISTS (SELECT id, a, b, __start_at, __end_at FROM lp_inc
                   EXCEPT SELECT id, a, b, __start_at, __end_at FROM lp_all)
   AND NOT EXISTS (SELECT id, a, b, __start_at, __end_at FROM lp_all
                   EXCEPT SELECT id, a, b, __start_at, __end_at FROM lp_inc) AS same_history;

RESET search_path;
