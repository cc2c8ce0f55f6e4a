-- The SCD type 1 fold: whatever the arrival order and run split, the target
-- is the fold of all events read, per key, in sequence order.
-- Creates the extension when this file runs alone (make installcheck REGRESS=...).
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS autocdc;
RESET client_min_messages;
CREATE SCHEMA fold;
SET search_path = fold, public;

CREATE TABLE ev (id int, v text, op text, seq int);
SELECT autocdc.create_auto_cdc_flow(target => 't', source => 'ev', keys => ARRAY['id'],
  sequence_by => 'seq', apply_as_deletes => $$op = 'D'$$,
  except_column_list => ARRAY['op', 'seq'], pipeline => 'fold');

-- Newest first, across runs: older events change nothing.
INSERT INTO ev VALUES (1, 'c', 'U', 30);
SELECT rows_read, rows_upserted, rows_deleted, rows_skipped FROM autocdc.run('fold');
INSERT INTO ev VALUES (1, 'b', 'U', 20), (1, 'a', 'U', 10);
SELECT rows_read, rows_upserted, rows_deleted, rows_skipped FROM autocdc.run('fold');
SELECT * FROM t ORDER BY id;

-- A delete is remembered: a late upsert older than it cannot bring the key back.
INSERT INTO ev VALUES (1, null, 'D', 40);
SELECT rows_read, rows_upserted, rows_deleted FROM autocdc.run('fold');
INSERT INTO ev VALUES (1, 'late', 'U', 35);
SELECT rows_read, rows_upserted, rows_deleted, rows_skipped FROM autocdc.run('fold');
SELECT * FROM t ORDER BY id;
-- A newer upsert does.
INSERT INTO ev VALUES (1, 'again', 'U', 50);
SELECT rows_upserted FROM autocdc.run('fold');
SELECT * FROM t ORDER BY id;

-- A late delete newer than the row removes it; an older one does nothing.
INSERT INTO ev VALUES (2, 'x', 'U', 10), (2, 'y', 'U', 30);
SELECT rows_upserted FROM autocdc.run('fold');
INSERT INTO ev VALUES (2, null, 'D', 20);
SELECT rows_deleted, rows_skipped FROM autocdc.run('fold');
SELECT * FROM t ORDER BY id;
INSERT INTO ev VALUES (2, null, 'D', 31);
SELECT rows_deleted FROM autocdc.run('fold');
SELECT * FROM t ORDER BY id;

-- A delete of a key never seen is a tombstone too.
INSERT INTO ev VALUES (3, null, 'D', 100);
SELECT rows_deleted FROM autocdc.run('fold');
INSERT INTO ev VALUES (3, 'ghost', 'U', 90);
SELECT rows_upserted FROM autocdc.run('fold');
SELECT * FROM t WHERE id = 3;

-- Exact duplicates collapse, in one run and across runs; replays change nothing.
INSERT INTO ev VALUES (4, 'p', 'U', 1), (4, 'p', 'U', 1), (4, 'q', 'U', 2);
SELECT rows_read, rows_upserted FROM autocdc.run('fold');
INSERT INTO ev VALUES (4, 'q', 'U', 2), (4, 'p', 'U', 1);
SELECT rows_read, rows_upserted, rows_skipped FROM autocdc.run('fold');
SELECT * FROM t ORDER BY id;

-- An unchanged value at a newer sequence rewrites the row's
-- __autocdc_sequence only; the same event read again rewrites nothing: the
-- row keeps its tuple.
INSERT INTO ev VALUES (4, 'q', 'U', 3);
SELECT rows_read, rows_upserted FROM autocdc.run('fold');
SELECT id, v, __autocdc_sequence FROM t WHERE id = 4;
SELECT ctid AS before FROM t WHERE id = 4 \gset
INSERT INTO ev VALUES (4, 'q', 'U', 3);
SELECT rows_read, rows_upserted, rows_skipped FROM autocdc.run('fold');
SELECT ctid = :'before' AS same_tuple FROM t WHERE id = 4;

-- The state keeps dead keys only (no flow into t has partial-update
-- columns): a live key's upsert sequence is its row's.

SELECT state_table AS state FROM autocdc.target WHERE target = 'fold.t'::regclass \gset
SELECT id, __autocdc_deleted_at IS NOT NULL AS tombstone FROM :state ORDER BY id;

-- Tombstones go after autocdc.tombstone_retention (-1 keeps them forever).
SET autocdc.tombstone_retention = -1;
INSERT INTO ev VALUES (5, 'z', 'U', 1);
SELECT rows_upserted FROM autocdc.run('fold');
SELECT count(*) FILTER (WHERE __autocdc_deleted_at IS NOT NULL) AS tombstones FROM :state;
SET autocdc.tombstone_retention = 0;
INSERT INTO ev VALUES (6, 'z', 'U', 1);
SELECT rows_upserted FROM autocdc.run('fold');
SELECT count(*) FILTER (WHERE __autocdc_deleted_at IS NOT NULL) AS tombstones FROM :state;
RESET autocdc.tombstone_retention;

-- A key that stays dead keeps the time it died, so a late event does not
-- put off its purge; a delete after a newer upsert is a new death.  Keys 7
-- and 8 are folded in runs of their own.
SET autocdc.tombstone_retention = -1;
INSERT INTO ev VALUES (7, 'a', 'U', 1), (7, NULL, 'D', 10), (8, 'a', 'U', 1), (8, NULL, 'D', 10);
SELECT rows_deleted FROM autocdc.run('fold');
SELECT max(__autocdc_deleted_at) FILTER (WHERE id = 7) AS died7,
       max(__autocdc_deleted_at) FILTER (WHERE id = 8) AS died8 FROM :state \gset
INSERT INTO ev VALUES (7, 'late', 'U', 5);
SELECT rows_upserted, rows_skipped FROM autocdc.run('fold');
INSERT INTO ev VALUES (8, 'late', 'U', 5);
SELECT rows_upserted, rows_skipped FROM autocdc.run('fold');
SELECT id, __autocdc_upsert_seq, __autocdc_deleted_at = CASE id WHEN 7 THEN :'died7'::timestamptz
  ELSE :'died8'::timestamptz END AS same_death FROM :state WHERE id IN (7, 8) ORDER BY id;
INSERT INTO ev VALUES (7, 'b', 'U', 20), (7, NULL, 'D', 30);
SELECT rows_deleted FROM autocdc.run('fold');
INSERT INTO ev VALUES (8, 'b', 'U', 20), (8, NULL, 'D', 30);
SELECT rows_deleted FROM autocdc.run('fold');
SELECT id, __autocdc_delete_seq, __autocdc_deleted_at > CASE id WHEN 7 THEN :'died7'::timestamptz
  ELSE :'died8'::timestamptz END AS died_again FROM :state WHERE id IN (7, 8) ORDER BY id;
SELECT * FROM t WHERE id IN (7, 8);
RESET autocdc.tombstone_retention;

-- Partial updates: NULL keeps the previous value, exactly per column, in any order.
CREATE TABLE pev (id int, a int, b text, c text, op text, seq int);
SELECT autocdc.create_auto_cdc_flow(target => 'p', source => 'pev', keys => ARRAY['id'],
  sequence_by => 'seq', apply_as_deletes => $$op = 'D'$$,
  except_column_list => ARRAY['op', 'seq'], ignore_null_updates => true, pipeline => 'partial');
INSERT INTO pev VALUES (1, 1, 'b1', 'c1', 'U', 10), (1, null, 'b3', null, 'U', 30);
SELECT rows_upserted FROM autocdc.run('partial');
SELECT * FROM p ORDER BY id;
-- A late event supplies a column that later partial updates left NULL ...
INSERT INTO pev VALUES (1, 2, null, null, 'U', 20);
SELECT rows_upserted FROM autocdc.run('partial');
SELECT * FROM p ORDER BY id;
-- ... and a late delete resets what came before it.
INSERT INTO pev VALUES (1, null, null, null, 'D', 25);
SELECT rows_upserted FROM autocdc.run('partial');
SELECT * FROM p ORDER BY id;
-- NULLs in a new key's first event stay NULL.
INSERT INTO pev VALUES (2, null, 'only b', null, 'U', 50);
SELECT rows_upserted FROM autocdc.run('partial');
SELECT * FROM p ORDER BY id;

-- Only the listed columns are partial ...
CREATE TABLE lev (id int, a int, b text, seq int);
SELECT autocdc.create_auto_cdc_flow(target => 'l', source => 'lev', keys => ARRAY['id'],
  sequence_by => 'seq', except_column_list => ARRAY['seq'],
  ignore_null_updates_column_list => ARRAY['a'], pipeline => 'listed');
INSERT INTO lev VALUES (1, 1, 'x', 1), (1, null, null, 2);
SELECT rows_upserted FROM autocdc.run('listed');
SELECT * FROM l;
-- ... or all but the listed ones.
CREATE TABLE xev (id int, a int, b text, seq int);
SELECT autocdc.create_auto_cdc_flow(target => 'x', source => 'xev', keys => ARRAY['id'],
  sequence_by => 'seq', except_column_list => ARRAY['seq'],
  ignore_null_updates_except_column_list => ARRAY['a'], pipeline => 'except');
INSERT INTO xev VALUES (1, 1, 'x', 1), (1, null, null, 2);
SELECT rows_upserted FROM autocdc.run('except');
SELECT * FROM x;

-- Composite keys, a ROW(...) sequence ordered field by field, timestamps.
CREATE TABLE cev (region text, id int, ts timestamptz, n int, val text);
SELECT autocdc.create_auto_cdc_flow(target => 'c', source => 'cev',
  keys => ARRAY['region', 'id'], sequence_by => 'ROW(ts, n)',
  except_column_list => ARRAY['ts', 'n'], pipeline => 'composite');
INSERT INTO cev VALUES
  ('eu', 1, '2026-01-01 10:00+00', 2, 'second'),
  ('eu', 1, '2026-01-01 10:00+00', 1, 'first'),
  ('us', 1, '2026-01-01 09:00+00', 9, 'us old'),
  ('us', 1, '2026-01-01 11:00+00', 0, 'us new');
SELECT rows_read, rows_upserted FROM autocdc.run('composite');
SELECT * FROM c ORDER BY region, id;
SELECT sequence_type::text LIKE 'autocdc.__autocdc_seq_%' AS own_type, sequence_composite = sequence_type AS composite
  FROM autocdc.target WHERE target = 'fold.c'::regclass;

-- A key no earlier run applied folds to its latest upsert and latest delete,
-- whatever the order they came in: out of order, exact duplicates, a delete
-- last or not, more events than the grouping sorts by insertion (key 5).
-- Its state then holds both sequences, as a later run's conflict shows.
CREATE TABLE nev (id int, v text, op text, seq int);
SELECT autocdc.create_auto_cdc_flow(target => 'n', source => 'nev', keys => ARRAY['id'],
  sequence_by => 'seq', apply_as_deletes => $$op = 'D'$$,
  except_column_list => ARRAY['op', 'seq'], pipeline => 'newkeys');
INSERT INTO nev VALUES
  (1, 'a', 'U', 10), (1, 'c', 'U', 30), (1, 'b', 'U', 20),
  (2, 'a', 'U', 10), (2, null, 'D', 20), (2, 'b', 'U', 15),
  (3, null, 'D', 5), (3, 'a', 'U', 3),
  (4, 'x', 'U', 1), (4, 'y', 'U', 2), (4, 'x', 'U', 1), (4, 'y', 'U', 2),
  (6, 'a', 'U', 1), (6, null, 'D', 2), (6, 'b', 'U', 3);
INSERT INTO nev SELECT 5, 'v' || s, CASE WHEN s % 7 = 0 THEN 'D' ELSE 'U' END, s
  FROM pg_catalog.generate_series(1, 40) s ORDER BY (s * 17) % 41;
SELECT rows_read, rows_upserted, rows_deleted, rows_skipped FROM autocdc.run('newkeys');
SELECT id, v, __autocdc_sequence FROM n ORDER BY id;
SELECT state_table AS nstate FROM autocdc.target WHERE target = 'fold.n'::regclass \gset
SELECT id, __autocdc_upsert_seq, __autocdc_delete_seq FROM :nstate ORDER BY id;
-- key 2 died at 20 after its upsert at 15: a delete at 15 is another event
INSERT INTO nev VALUES (2, null, 'D', 15);
SELECT status FROM autocdc.run('newkeys');
SELECT error FROM autocdc.event_log WHERE pipeline = 'newkeys' ORDER BY id DESC LIMIT 1;

-- New keys in a batch with a truncate, then in a batch after its mark;
-- a numeric key spelled two ways is one key, spelled as its latest upsert.
CREATE TABLE tev (id numeric, v text, op text, seq int);
SELECT autocdc.create_auto_cdc_flow(target => 'tt', source => 'tev', keys => ARRAY['id'],
  sequence_by => 'seq', apply_as_deletes => $$op = 'D'$$, apply_as_truncates => $$op = 'T'$$,
  except_column_list => ARRAY['op', 'seq'], pipeline => 'newtrunc');
INSERT INTO tev VALUES
  (1, 'before', 'U', 10), (null, null, 'T', 20), (1, 'after', 'U', 30),
  (2, 'gone', 'U', 15), (3, null, 'D', 25), (3, 'late', 'U', 5),
  (4.0, 'four', 'U', 40), (4.00, 'four again', 'U', 41);
SELECT rows_read, rows_upserted, rows_deleted, rows_skipped FROM autocdc.run('newtrunc');
SELECT id, v, __autocdc_sequence FROM tt ORDER BY id;
INSERT INTO tev VALUES (5, 'old', 'U', 19), (6, 'new', 'U', 21), (6, 'newer', 'U', 22);
SELECT rows_read, rows_upserted, rows_deleted, rows_skipped FROM autocdc.run('newtrunc');
SELECT id, v, __autocdc_sequence FROM tt ORDER BY id;

RESET search_path;
