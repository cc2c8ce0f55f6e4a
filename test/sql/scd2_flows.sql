-- Several flows into one SCD 2 target, existing targets, and what is refused.
-- Creates the extension when this file runs alone (make installcheck REGRESS=...).
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS autocdc;
RESET client_min_messages;
CREATE SCHEMA fl2;
SET search_path = fl2, public;

-- A legacy SCD 2 table replayed ONCE, sequenced by its valid-from column,
-- then a live feed: one history.
CREATE TABLE legacy (id int, name text, valid_from int, valid_to int);
INSERT INTO legacy VALUES (1, 'one a', 1, 5), (1, 'one b', 5, NULL), (2, 'two a', 2, NULL);
CREATE TABLE live (id int, name text, op text, seq int);
SELECT autocdc.create_auto_cdc_flow(target => 'dim', source => 'legacy', keys => ARRAY['id'],
  sequence_by => 'valid_from', except_column_list => ARRAY['valid_from', 'valid_to'],
  stored_as_scd_type => 2, once => true, name => 'dim_backfill', pipeline => 'fl2');
SELECT autocdc.create_auto_cdc_flow(target => 'dim', source => 'live', keys => ARRAY['id'],
  sequence_by => 'seq', apply_as_deletes => $$op = 'D'$$, except_column_list => ARRAY['op', 'seq'],
  stored_as_scd_type => 2, name => 'dim_live', pipeline => 'fl2');
INSERT INTO live VALUES (1, 'one c', 'U', 8), (2, NULL, 'D', 9), (1, 'one a2', 'U', 3);
SELECT flow, rows_read, rows_upserted, status FROM autocdc.run('fl2');
SELECT * FROM dim ORDER BY id, __start_at;
-- A full refresh rebuilds the same history.
SELECT flow, rows_read, status FROM autocdc.run('fl2', full_refresh => true);
SELECT * FROM dim ORDER BY id, __start_at;

-- Flows into one target must agree.
CREATE TABLE other (id int, name text, seq text);
SELECT autocdc.create_auto_cdc_flow(target => 'dim', source => 'other', keys => ARRAY['id'],
  sequence_by => 'seq', except_column_list => ARRAY['seq'], stored_as_scd_type => 2,
  name => 'dim_text_seq', pipeline => 'fl2');
SELECT autocdc.create_auto_cdc_flow(target => 'dim', source => 'live', keys => ARRAY['id'],
  sequence_by => 'seq', except_column_list => ARRAY['op', 'seq'], name => 'dim_scd1', pipeline => 'fl2');
SELECT autocdc.create_auto_cdc_flow(target => 'dim', source => 'live', keys => ARRAY['id'],
  sequence_by => 'seq', except_column_list => ARRAY['op', 'seq'], stored_as_scd_type => 2,
  track_history_column_list => ARRAY['name'], name => 'dim_tracking', pipeline => 'fl2');

-- An existing table as SCD 2 target needs the history columns and a unique
-- (keys, __start_at) index; one that has them is used as it is.
CREATE TABLE bare (id int PRIMARY KEY, name text);
SELECT autocdc.create_auto_cdc_flow(target => 'bare', source => 'live', keys => ARRAY['id'],
  sequence_by => 'seq', except_column_list => ARRAY['op', 'seq'], stored_as_scd_type => 2, pipeline => 'fl2b');
CREATE TABLE wrong_type (id int, name text, __start_at bigint, __end_at bigint, PRIMARY KEY (id, __start_at));
SELECT autocdc.create_auto_cdc_flow(target => 'wrong_type', source => 'live', keys => ARRAY['id'],
  sequence_by => 'seq', except_column_list => ARRAY['op', 'seq'], stored_as_scd_type => 2, pipeline => 'fl2b');
CREATE TABLE no_index (id int, name text, __start_at int, __end_at int);
SELECT autocdc.create_auto_cdc_flow(target => 'no_index', source => 'live', keys => ARRAY['id'],
  sequence_by => 'seq', except_column_list => ARRAY['op', 'seq'], stored_as_scd_type => 2, pipeline => 'fl2b');
CREATE TABLE ready (id int, name text, __start_at int, __end_at int, PRIMARY KEY (id, __start_at));
SELECT autocdc.create_auto_cdc_flow(target => 'ready', source => 'live', keys => ARRAY['id'],
  sequence_by => 'seq', apply_as_deletes => $$op = 'D'$$, except_column_list => ARRAY['op', 'seq'],
  stored_as_scd_type => 2, pipeline => 'fl2b');
SELECT flow, rows_read, rows_upserted, status FROM autocdc.run('fl2b');
SELECT * FROM ready ORDER BY id, __start_at;
SELECT count(*) FROM autocdc.as_of(NULL::ready, 8);

-- A different event at a sequence already stored is caught, however late.
INSERT INTO live VALUES (1, 'not one c', 'U', 8);
SELECT flow, status FROM autocdc.run('fl2b');
SELECT error FROM autocdc.event_log WHERE pipeline = 'fl2b' ORDER BY id DESC LIMIT 1;
DELETE FROM live WHERE name = 'not one c';

-- Dropping the last flow drops the event store; as_of stays with the table.
SELECT autocdc.drop_flow('ready');
SELECT count(*) FROM pg_class WHERE relnamespace = 'autocdc'::regnamespace
   AND obj_description(oid) = 'autocdc events of fl2.ready';
SELECT count(*) FROM autocdc.as_of(NULL::ready, 8);
DROP TABLE ready;
SELECT count(*) FROM pg_proc WHERE proname = 'as_of' AND pronamespace = 'autocdc'::regnamespace
   AND pg_get_function_identity_arguments(oid) LIKE '%ready%';
RESET search_path;
