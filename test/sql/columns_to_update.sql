-- columns_to_update: a text[] column of the source lists, per event, the
-- columns the event sets; unlisted ones keep their value, listed ones are
-- written even when NULL.  SCD 1 and SCD 2, every decided case, late events
-- supplying columns, unknown names (error and quarantine), refusals, the
-- dialect's COLUMNS TO UPDATE and flow_ddl.
-- Creates the extension when this file runs alone (make installcheck REGRESS=...).
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS autocdc;
RESET client_min_messages;
CREATE SCHEMA ctu;
SET search_path = ctu, public;

-- SCD 1.  The list column is left out of the target by itself.
CREATE TABLE ev (id int, a int, b text, c text, op text, seq int, cols text[]);
SELECT autocdc.create_auto_cdc_flow(target => 't', source => 'ev', keys => ARRAY['id'],
  sequence_by => 'seq', apply_as_deletes => $$op = 'D'$$, except_column_list => ARRAY['op', 'seq'],
  columns_to_update => 'cols', pipeline => 'p1');
SELECT attname FROM pg_attribute WHERE attrelid = 't'::regclass AND attnum > 0 ORDER BY attnum;
SELECT columns, options->'columns_to_update' AS ctu, columns_to_update FROM autocdc.flow WHERE name = 't';
SELECT partial_columns FROM autocdc.target WHERE target = 't'::regclass;

-- A NULL list sets every column (key 1); a list sets what it names, NULL
-- included, and leaves the rest (key 1 at 20: a := 2, c := NULL, b kept);
-- an empty list sets nothing, the key is live with no earlier values
-- (key 2); a listed key is ignored (key 3).
INSERT INTO ev VALUES
  (1, 1, 'b1', 'c1', 'U', 10, NULL),
  (1, 2, 'not b', NULL, 'U', 20, '{a,c}'),
  (2, 5, 'x', 'y', 'U', 10, '{}'),
  (3, 7, 'z', 'w', 'U', 10, '{b,id}');
SELECT rows_read, rows_upserted, rows_deleted FROM autocdc.run('p1');
TABLE t ORDER BY id;

-- Late events: one at 15 still supplies b, which no event after it lists;
-- one at 12 lists a, which the event at 20 set: it changes nothing.
INSERT INTO ev VALUES (1, 99, 'b late', 'c late', 'U', 15, '{b}'),
  (1, 98, 'no', 'no', 'U', 12, '{a}');
SELECT rows_read, rows_upserted, rows_skipped FROM autocdc.run('p1');
TABLE t ORDER BY id;

-- An empty list on a live key: its values as before.
INSERT INTO ev VALUES (3, 1, 'q', 'q', 'U', 20, '{}');
SELECT rows_upserted FROM autocdc.run('p1');
TABLE t ORDER BY id;

-- After a delete, an unlisted column is NULL; a late partial event before
-- the delete changes nothing; a late one after it still supplies its column.
INSERT INTO ev VALUES (1, NULL, NULL, NULL, 'D', 30, NULL),
  (1, 3, 'no', 'no', 'U', 40, '{a}');
SELECT rows_upserted, rows_deleted FROM autocdc.run('p1');
TABLE t ORDER BY id;
INSERT INTO ev VALUES (1, 4, 'b before', 'no', 'U', 25, '{b}'),
  (1, 4, 'b after', 'no', 'U', 35, '{b}');
SELECT rows_upserted FROM autocdc.run('p1');
TABLE t ORDER BY id;

-- The same events in one batch, in any order, give the same rows.
CREATE TABLE ev_all (LIKE ev);
SELECT autocdc.create_auto_cdc_flow(target => 't_all', source => 'ev_all', keys => ARRAY['id'],
  sequence_by => 'seq', apply_as_deletes => $$op = 'D'$$, except_column_list => ARRAY['op', 'seq'],
  columns_to_update => 'cols', pipeline => 'p1_all');
INSERT INTO ev_all (id, a, b, c, op, seq, cols) SELECT id, a, b, c, op, seq, cols FROM ev ORDER BY seq DESC, id;
SELECT rows_read FROM autocdc.run('p1_all');
SELECT count(*) AS differing FROM (TABLE t EXCEPT TABLE t_all) d;

-- Names match exactly as PostgreSQL stores them: "B" is no column of the
-- flow: the bad-input error names flow, key, sequence and name, and
-- nothing is applied.
INSERT INTO ev VALUES (4, 1, 'b', 'c', 'U', 10, '{a}'), (5, 1, 'b', 'c', 'U', 10, '{a,B}');
SELECT status, error FROM autocdc.run('p1');
TABLE t ORDER BY id;
-- a delete's list does not matter
DELETE FROM ev WHERE id = 5;
INSERT INTO ev VALUES (5, NULL, NULL, NULL, 'D', 10, '{nosuch}');
SELECT rows_read, rows_upserted, rows_deleted, status FROM autocdc.run('p1');
TABLE t ORDER BY id;

-- A full refresh folds the same rows again.
CREATE TEMP TABLE t_before AS TABLE t;
SELECT status FROM autocdc.run('p1', full_refresh => true);
SELECT count(*) AS differing FROM ((TABLE t EXCEPT TABLE t_before) UNION ALL (TABLE t_before EXCEPT TABLE t)) d;

-- Two events at one key and sequence that differ only in columns neither
-- lists are one event; a different list is a different event.
INSERT INTO ev VALUES (6, 1, 'same', 'x', 'U', 10, '{a,b}'), (6, 1, 'same', 'y', 'U', 10, '{a,b}');
SELECT rows_read, rows_upserted, status FROM autocdc.run('p1');
TABLE t ORDER BY id;
INSERT INTO ev VALUES (6, 1, 'same', 'x', 'U', 10, '{a,b,c}');
SELECT status, error FROM autocdc.run('p1');
DELETE FROM ev WHERE id = 6 AND cols = '{a,b,c}';

-- With on_bad_event => 'quarantine' the event goes to the quarantine; a
-- column the flow leaves out (seq) is unknown too; NULL elements name nothing.
CREATE TABLE evq (id int, a int, b text, seq int, cols text[]);
SELECT autocdc.create_auto_cdc_flow(target => 'tq', source => 'evq', keys => ARRAY['id'],
  sequence_by => 'seq', except_column_list => ARRAY['seq'], columns_to_update => 'cols',
  pipeline => 'pq', on_bad_event => 'quarantine');
INSERT INTO evq VALUES (1, 1, 'b', 10, '{a,b}'), (2, 2, 'b', 10, '{a,zz}'), (1, 5, 'no', 20, '{A}'),
  (3, 3, 'c', 10, '{seq}'), (4, 4, 'd', 10, '{NULL,a}');
SELECT rows_read, rows_upserted, status FROM autocdc.run('pq');
TABLE tq ORDER BY id;
SELECT reason, key, sequence, "row" FROM autocdc.quarantine WHERE flow = 'tq' ORDER BY id;
-- what the dialect cannot say comes back as the call
SELECT autocdc.flow_ddl('tq');
-- the list column dropped from the source
ALTER TABLE evq DROP COLUMN cols;
SELECT status, error FROM autocdc.run('pq');

-- Refusals.
\set VERBOSITY default
SELECT autocdc.create_auto_cdc_flow(target => 'r1', source => 'ev', keys => ARRAY['id'],
  sequence_by => 'seq', columns_to_update => 'cols', ignore_null_updates => true);
SELECT autocdc.create_auto_cdc_flow(target => 'r1', source => 'ev', keys => ARRAY['id'],
  sequence_by => 'seq', columns_to_update => 'cols', ignore_null_updates_column_list => ARRAY['a']);
SELECT autocdc.create_auto_cdc_flow(target => 'r1', source => 'ev', keys => ARRAY['id'],
  sequence_by => 'seq', columns_to_update => 'nosuch');
SELECT autocdc.create_auto_cdc_flow(target => 'r1', source => 'ev', keys => ARRAY['id'],
  sequence_by => 'seq', columns_to_update => 'op');
SELECT autocdc.create_auto_cdc_flow(target => 'r1', source => 'ev', keys => ARRAY['id'],
  sequence_by => 'seq', columns_to_update => 'id');
SELECT autocdc.create_auto_cdc_flow(target => 'r1', source => 'ev', keys => ARRAY['id'],
  sequence_by => 'seq', columns_to_update => 'cols', stored_as_scd_type => 3);
-- a target with a snapshot flow, and the other way round
CREATE TABLE snap (id int, a int, b text, c text);
SELECT autocdc.create_auto_cdc_from_snapshot_flow(target => 'ts', source => 'snap', keys => ARRAY['id'],
  pipeline => 'ps');
SELECT autocdc.create_auto_cdc_flow(target => 'ts', source => 'ev', keys => ARRAY['id'],
  sequence_by => 'seq', except_column_list => ARRAY['op', 'seq'], columns_to_update => 'cols',
  name => 'ts_cdc', pipeline => 'ps');
SELECT autocdc.create_auto_cdc_from_snapshot_flow(target => 't', source => 'snap', keys => ARRAY['id'],
  name => 't_snap', pipeline => 'p1');
\set VERBOSITY terse
-- the list may come from a source query, where a cast makes it text[]
CREATE TABLE evs (id int, a int, seq int, cols varchar[]);
SELECT autocdc.create_auto_cdc_flow(target => 'r2', source => 'evs', keys => ARRAY['id'],
  sequence_by => 'seq', columns_to_update => 'cols');
SELECT autocdc.create_auto_cdc_flow(target => 'tsq', keys => ARRAY['id'], sequence_by => 'seq',
  source_query => 'SELECT id, a, a * 10 AS a10, seq, cols::text[] AS changed FROM STREAM(evs)',
  except_column_list => ARRAY['seq'], columns_to_update => 'changed', pipeline => 'psq');
INSERT INTO evs VALUES (1, 1, 1, NULL), (1, 2, 2, '{a}'), (2, 3, 1, '{a10}');
SELECT rows_read, status FROM autocdc.run('psq');
TABLE tsq ORDER BY id;

-- SCD 2: an unlisted column is inherited from the version before; an
-- event that changes no tracked value is absorbed; late events supply
-- columns to the versions after them up to an event that lists them.
CREATE TABLE ev2 (id int, a int, b text, op text, seq int, cols text[]);
SELECT autocdc.create_auto_cdc_flow(target => 'h', source => 'ev2', keys => ARRAY['id'],
  sequence_by => 'seq', apply_as_deletes => $$op = 'D'$$, except_column_list => ARRAY['op'],
  stored_as_scd_type => 2, columns_to_update => 'cols', pipeline => 'p2');
SELECT attname FROM pg_attribute WHERE attrelid = 'h'::regclass AND attnum > 0 ORDER BY attnum;
INSERT INTO ev2 VALUES
  (1, 1, 'x', 'U', 10, NULL),
  (1, 2, 'not b', 'U', 20, '{a,seq}'),
  (1, 2, 'other', 'U', 30, '{a}'),
  (1, 9, 'nine', 'U', 40, '{}'),
  (2, 7, 'q', 'U', 10, '{b}');
SELECT rows_read, rows_upserted, rows_deleted FROM autocdc.run('p2');
SELECT * FROM h ORDER BY id, __start_at;
-- late: b at 15 splits the first version and goes on into the one at 20
INSERT INTO ev2 VALUES (1, 0, 'late', 'U', 15, '{b}');
SELECT rows_read, rows_upserted FROM autocdc.run('p2');
SELECT * FROM h ORDER BY id, __start_at;
-- a listed NULL is written; after a delete an unlisted column is NULL
INSERT INTO ev2 VALUES (2, 0, NULL, 'U', 20, '{b}'),
  (1, NULL, NULL, 'D', 50, NULL), (1, 3, 'no', 'U', 60, '{a}');
SELECT rows_read, rows_upserted, rows_deleted FROM autocdc.run('p2');
SELECT * FROM h ORDER BY id, __start_at;
-- the same events in one batch, in reverse order
CREATE TABLE ev2_all (LIKE ev2);
SELECT autocdc.create_auto_cdc_flow(target => 'h_all', source => 'ev2_all', keys => ARRAY['id'],
  sequence_by => 'seq', apply_as_deletes => $$op = 'D'$$, except_column_list => ARRAY['op'],
  stored_as_scd_type => 2, columns_to_update => 'cols', pipeline => 'p2_all');
INSERT INTO ev2_all (id, a, b, op, seq, cols) SELECT id, a, b, op, seq, cols FROM ev2 ORDER BY seq DESC, id;
SELECT rows_read FROM autocdc.run('p2_all');
SELECT count(*) AS differing FROM (TABLE h EXCEPT TABLE h_all) d;
-- an unknown name
INSERT INTO ev2 VALUES (3, 1, 'b', 'U', 10, '{a,b,c}');
SELECT status, error FROM autocdc.run('p2');
DELETE FROM ev2 WHERE id = 3;

-- The dialect: COLUMNS TO UPDATE, and flow_ddl gives it back.
CREATE TABLE evd (id int, a int, b text, seq int, changed text[]);
SELECT * FROM autocdc.execute($$
CREATE FLOW dl_ctu AS AUTO CDC INTO dl_t FROM STREAM(evd) KEYS (id)
  SEQUENCE BY seq COLUMNS * EXCEPT (seq) COLUMNS TO UPDATE changed STORED AS SCD TYPE 2;
$$);
INSERT INTO evd VALUES (1, 1, 'x', 1, NULL), (1, 2, 'no', 2, '{a}');
SELECT rows_read, status FROM autocdc.run('default');
SELECT * FROM dl_t ORDER BY id, __start_at;
SELECT autocdc.flow_ddl('dl_ctu');
SELECT autocdc.flow_ddl('t');
-- run again after drop_flow, the text makes the same flow
CREATE TEMP TABLE ddl_before AS
  SELECT options, columns FROM autocdc.flow WHERE name = 'dl_ctu';
SELECT autocdc.flow_ddl('dl_ctu') AS ddl \gset
SELECT autocdc.drop_flow('dl_ctu');
SELECT * FROM autocdc.execute(:'ddl');
SELECT f.options = b.options AS same_options, f.columns = b.columns AS same_columns,
       f.columns_to_update
  FROM autocdc.flow f, ddl_before b WHERE f.name = 'dl_ctu';
\set VERBOSITY default
SELECT * FROM autocdc.execute($$
CREATE FLOW dl_ctu2 AS AUTO CDC INTO dl_t2 FROM STREAM(evd) KEYS (id)
  SEQUENCE BY seq COLUMNS TO UPDATE changed COLUMNS TO UPDATE changed;
$$);
\set VERBOSITY terse

RESET search_path;
