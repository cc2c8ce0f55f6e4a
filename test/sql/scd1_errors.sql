-- Misuse is refused at creation with a clear error; bad input fails the
-- flow's run as a whole, naming flow, key and sequence.
-- Creates the extension when this file runs alone (make installcheck REGRESS=...).
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS autocdc;
RESET client_min_messages;
CREATE SCHEMA err;
SET search_path = err, public;
\set VERBOSITY default
CREATE TABLE src (id int, v text, op text, seq int, __start_at int);

-- Creation errors.
SELECT autocdc.create_auto_cdc_flow(target => 'e_t', source => 'src', keys => ARRAY['nope'], sequence_by => 'seq');
SELECT autocdc.create_auto_cdc_flow(target => 'e_t', source => 'src', keys => ARRAY[]::text[], sequence_by => 'seq');
SELECT autocdc.create_auto_cdc_flow(target => 'e_t', source => 'src', keys => NULL, sequence_by => 'seq');
SELECT autocdc.create_auto_cdc_flow(target => 'e_t', source => 'src', keys => ARRAY['id'], sequence_by => 'seq');
SELECT autocdc.create_auto_cdc_flow(target => 'e_t', source => 'src', keys => ARRAY['id'], sequence_by => 'seq',
  except_column_list => ARRAY['__start_at', 'nope']);
SELECT autocdc.create_auto_cdc_flow(target => 'e_t', source => 'src', keys => ARRAY['id'], sequence_by => 'seq +',
  except_column_list => ARRAY['__start_at']);
SELECT autocdc.create_auto_cdc_flow(target => 'e_t', source => 'src', keys => ARRAY['id'], sequence_by => 'no_such_col',
  except_column_list => ARRAY['__start_at']);
SELECT autocdc.create_auto_cdc_flow(target => 'e_t', source => 'src', keys => ARRAY['id'], sequence_by => 'point(seq, seq)',
  except_column_list => ARRAY['__start_at']);
SELECT autocdc.create_auto_cdc_flow(target => 'e_t', source => 'src', keys => ARRAY['id'], sequence_by => 'count(*)',
  except_column_list => ARRAY['__start_at']);
SELECT autocdc.create_auto_cdc_flow(target => 'e_t', source => 'src', keys => ARRAY['id'], sequence_by => '(SELECT 1)',
  except_column_list => ARRAY['__start_at']);
SELECT autocdc.create_auto_cdc_flow(target => 'e_t', source => 'src', keys => ARRAY['id'], sequence_by => 'seq',
  apply_as_deletes => 'op', except_column_list => ARRAY['__start_at']);
SELECT autocdc.create_auto_cdc_flow(target => 'e_t', source => 'src', keys => ARRAY['id'], sequence_by => 'seq',
  apply_as_deletes => 'op = ''D''; DROP TABLE src', except_column_list => ARRAY['__start_at']);
SELECT autocdc.create_auto_cdc_flow(target => 'e_t', source => 'src', keys => ARRAY['id'], sequence_by => 'seq) FROM pg_class --',
  except_column_list => ARRAY['__start_at']);
-- A reserved name as key; empty names; what cannot be a source or a target.
SELECT autocdc.create_auto_cdc_flow(target => 'e_t', source => 'src', keys => ARRAY['__start_at'], sequence_by => 'seq');
SELECT autocdc.create_auto_cdc_flow(target => 'e_t', source => 'src', keys => ARRAY['id'], sequence_by => 'seq',
  except_column_list => ARRAY['__start_at'], name => '');
SELECT autocdc.create_auto_cdc_flow(target => 'e_t', source => 'src', keys => ARRAY['id'], sequence_by => 'seq',
  except_column_list => ARRAY['__start_at'], pipeline => '');
CREATE SEQUENCE not_a_source;
SELECT autocdc.create_auto_cdc_flow(target => 'e_t', source => 'not_a_source', keys => ARRAY['id'], sequence_by => 'seq');
CREATE VIEW not_a_target AS SELECT 1 AS id;
SELECT autocdc.create_auto_cdc_flow(target => 'not_a_target', source => 'src', keys => ARRAY['id'], sequence_by => 'seq',
  except_column_list => ARRAY['__start_at']);
-- SCD 2 history is tracked on value columns, and on at least one.
SELECT autocdc.create_auto_cdc_flow(target => 'e_t', source => 'src', keys => ARRAY['id'], sequence_by => 'seq',
  except_column_list => ARRAY['__start_at'], stored_as_scd_type => 2, track_history_column_list => ARRAY['id']);
SELECT autocdc.create_auto_cdc_flow(target => 'e_t', source => 'src', keys => ARRAY['id'], sequence_by => 'seq',
  except_column_list => ARRAY['__start_at'], stored_as_scd_type => 2,
  track_history_except_column_list => ARRAY['v', 'op', 'seq']);
DROP SEQUENCE not_a_source;
DROP VIEW not_a_target;
SELECT to_regclass('e_t') AS no_target_made;
SELECT autocdc.create_auto_cdc_flow(target => 'e_t', source => 'src', keys => ARRAY['id'], sequence_by => 'seq',
  column_list => ARRAY['v'], except_column_list => ARRAY['op']);
SELECT autocdc.create_auto_cdc_flow(target => 'e_t', source => 'src', keys => ARRAY['id'], sequence_by => 'seq',
  except_column_list => ARRAY['id']);
SELECT autocdc.create_auto_cdc_flow(target => 'e_t', source => 'src', keys => ARRAY['id'], sequence_by => 'seq',
  except_column_list => ARRAY['__start_at'], track_history_column_list => ARRAY['v']);
SELECT autocdc.create_auto_cdc_flow(target => 'e_t', source => 'src', keys => ARRAY['id'], sequence_by => 'seq',
  except_column_list => ARRAY['__start_at'], stored_as_scd_type => 3);
SELECT autocdc.create_auto_cdc_flow(target => 'e_t', source => 'src', keys => ARRAY['id'], sequence_by => 'seq',
  except_column_list => ARRAY['__start_at'], stored_as_scd_type => 2, apply_as_truncates => $$op = 'T'$$);
SELECT autocdc.create_auto_cdc_flow(target => 'e_t', source => 'src', keys => ARRAY['id'], sequence_by => 'seq',
  except_column_list => ARRAY['__start_at'], stored_as_scd_type => 2, track_history_column_list => ARRAY['nope']);
SELECT autocdc.create_auto_cdc_flow(target => 'e_t', source => 'src', keys => ARRAY['id'], sequence_by => 'seq',
  except_column_list => ARRAY['__start_at'], stored_as_scd_type => 2, track_history_column_list => ARRAY['v'],
  track_history_except_column_list => ARRAY['op']);
SELECT autocdc.create_auto_cdc_flow(target => 'e_t', source => 'src', keys => ARRAY['id'], sequence_by => 'seq',
  except_column_list => ARRAY['__start_at'], ignore_null_updates_column_list => ARRAY['id']);
SELECT autocdc.create_auto_cdc_flow(target => 'e_t', source => 'src', keys => ARRAY['id'], sequence_by => 'seq',
  except_column_list => ARRAY['__start_at', 'op'], ignore_null_updates_column_list => ARRAY['op']);
SELECT autocdc.create_auto_cdc_flow(target => 'e_t', source => 'src', keys => ARRAY['id', 'ID'], sequence_by => 'seq',
  except_column_list => ARRAY['__start_at']);
SELECT autocdc.create_auto_cdc_flow(target => 'src', source => 'src', keys => ARRAY['id'], sequence_by => 'seq',
  except_column_list => ARRAY['__start_at']);
SELECT autocdc.create_auto_cdc_flow(target => 'pg_temp.t', source => 'src', keys => ARRAY['id'], sequence_by => 'seq',
  except_column_list => ARRAY['__start_at']);
-- An existing target must fit: a unique index on the keys, every column, assignable types.
CREATE TABLE no_key (id int, v text, op text, seq int);
SELECT autocdc.create_auto_cdc_flow(target => 'no_key', source => 'src', keys => ARRAY['id'], sequence_by => 'seq',
  except_column_list => ARRAY['__start_at']);
CREATE TABLE no_col (id int PRIMARY KEY, v text);
SELECT autocdc.create_auto_cdc_flow(target => 'no_col', source => 'src', keys => ARRAY['id'], sequence_by => 'seq',
  except_column_list => ARRAY['__start_at']);
CREATE TABLE bad_type (id int PRIMARY KEY, v point, op text, seq int);
SELECT autocdc.create_auto_cdc_flow(target => 'bad_type', source => 'src', keys => ARRAY['id'], sequence_by => 'seq',
  except_column_list => ARRAY['__start_at']);
-- Nothing was left behind by the failed attempts.
SELECT count(*) FROM autocdc.flow f JOIN pg_class c ON c.oid = f.target WHERE c.relnamespace = 'err'::regnamespace;
SELECT to_regclass('err.e_t') AS created_target, count(*) AS pipelines FROM autocdc.pipeline WHERE name = 'default';

-- A working flow; a second flow of the same name is refused.
SELECT autocdc.create_auto_cdc_flow(target => 'e_t', source => 'src', keys => ARRAY['ID'], sequence_by => 'seq',
  apply_as_deletes => $$op = 'D'$$, except_column_list => ARRAY['__start_at', 'op', 'seq'], pipeline => 'err');
SELECT autocdc.create_auto_cdc_flow(target => 'e_t', source => 'src', keys => ARRAY['id'], sequence_by => 'seq',
  except_column_list => ARRAY['__start_at'], pipeline => 'err');
-- A second flow into the same target must agree with it.
CREATE TABLE src_b (id bigint, v text, seq text);
SELECT autocdc.create_auto_cdc_flow(target => 'e_t', source => 'src_b', keys => ARRAY['id'], sequence_by => 'seq',
  name => 'e_t_b', pipeline => 'err');
SELECT autocdc.create_auto_cdc_flow(target => 'e_t', source => 'src_b', keys => ARRAY['id', 'v'], sequence_by => 'seq::int',
  name => 'e_t_b', pipeline => 'err');

-- Bad input at run time: nothing of the flow is applied, and the run says why.
INSERT INTO src VALUES (1, 'good', 'U', 1), (2, 'no seq', 'U', NULL);
SELECT flow, rows_read, rows_upserted, status FROM autocdc.run('err');
SELECT count(*) FROM e_t;
SELECT status, error FROM autocdc.event_log WHERE pipeline = 'err' ORDER BY id DESC LIMIT 1;
DELETE FROM src WHERE seq IS NULL;   -- sources are logs, but a fix is a fix
INSERT INTO src VALUES (NULL, 'no key', 'U', 3);
SELECT flow, rows_upserted, status FROM autocdc.run('err');
DELETE FROM src WHERE id IS NULL;
INSERT INTO src VALUES (3, 'one thing', 'U', 5), (3, 'another', 'U', 5);
SELECT flow, rows_upserted, status FROM autocdc.run('err');
DELETE FROM src WHERE id = 3;
-- Exact duplicates are fine, and two deletes at one sequence are one delete.
INSERT INTO src VALUES (3, 'same', 'U', 5), (3, 'same', 'U', 5), (4, 'x', 'D', 7), (4, NULL, 'D', 7);
SELECT flow, rows_read, rows_upserted, status FROM autocdc.run('err');
-- A different event at a sequence an earlier run applied is caught too.
INSERT INTO src VALUES (3, 'changed my mind', 'U', 5);
SELECT flow, rows_upserted, status FROM autocdc.run('err');
INSERT INTO src VALUES (3, NULL, 'D', 5);
SELECT flow, rows_upserted, status FROM autocdc.run('err');
SELECT * FROM e_t ORDER BY id;

-- Run-time errors of the interface.
SELECT * FROM autocdc.run('no_such_pipeline');
SELECT * FROM autocdc.run('err', flows => ARRAY['nope']);
SELECT autocdc.drop_flow('nope');
RESET search_path;
