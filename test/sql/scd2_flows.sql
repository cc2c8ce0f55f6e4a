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
-- (name is all the value columns, which the other flows track: it agrees.)
SELECT autocdc.drop_flow('dim_tracking');

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

-- A flow that gives no track-history list tracks every value column of the
-- target; a flow listing them all, in any order, tracks the same, whichever
-- came first.  autocdc.target.track_columns is NULL (all) while no flow gives
-- a list, else the list.  Another set is refused, and so is a column added
-- to a target whose flows track all in both ways.
CREATE TABLE tr_a (id int, name text, amount int, seq int);
CREATE TABLE tr_b (id int, name text, amount int, seq int);
CREATE TABLE tr_wide (id int, name text, amount int, seq int, note text);
SELECT autocdc.create_auto_cdc_flow(target => 'tr1', source => 'tr_a', keys => ARRAY['id'],
  sequence_by => 'seq', stored_as_scd_type => 2, name => 'tr1_all', pipeline => 'fl2tr');
SELECT autocdc.create_auto_cdc_flow(target => 'tr1', source => 'tr_b', keys => ARRAY['id'],
  sequence_by => 'seq', stored_as_scd_type => 2, track_history_column_list => ARRAY['seq', 'name', 'amount'],
  name => 'tr1_listed', pipeline => 'fl2tr');
SELECT autocdc.create_auto_cdc_flow(target => 'tr2', source => 'tr_b', keys => ARRAY['id'],
  sequence_by => 'seq', stored_as_scd_type => 2, track_history_column_list => ARRAY['name', 'amount', 'seq'],
  name => 'tr2_listed', pipeline => 'fl2tr');
SELECT autocdc.create_auto_cdc_flow(target => 'tr2', source => 'tr_a', keys => ARRAY['id'],
  sequence_by => 'seq', stored_as_scd_type => 2, name => 'tr2_all', pipeline => 'fl2tr');
SELECT target, track_columns FROM autocdc.target WHERE target::text LIKE 'tr_' ORDER BY 1;
SELECT autocdc.create_auto_cdc_flow(target => 'tr1', source => 'tr_a', keys => ARRAY['id'],
  sequence_by => 'seq', stored_as_scd_type => 2, track_history_column_list => ARRAY['name', 'amount'],
  name => 'tr1_fewer', pipeline => 'fl2tr');
SELECT autocdc.create_auto_cdc_flow(target => 'tr2', source => 'tr_a', keys => ARRAY['id'],
  sequence_by => 'seq', stored_as_scd_type => 2, track_history_except_column_list => ARRAY['amount'],
  name => 'tr2_except', pipeline => 'fl2tr');
ALTER TABLE tr1 ADD COLUMN note text;
SELECT autocdc.create_auto_cdc_flow(target => 'tr1', source => 'tr_wide', keys => ARRAY['id'],
  sequence_by => 'seq', stored_as_scd_type => 2, track_history_column_list => ARRAY['name', 'amount', 'seq'],
  name => 'tr1_wide', pipeline => 'fl2tr');
SELECT autocdc.create_auto_cdc_flow(target => 'tr1', source => 'tr_wide', keys => ARRAY['id'],
  sequence_by => 'seq', stored_as_scd_type => 2, name => 'tr1_wide', pipeline => 'fl2tr');
-- Both flows fold into one history, on every value column.
INSERT INTO tr_a VALUES (1, 'one', 10, 1), (2, 'two', 20, 2), (1, 'one', 11, 5);
INSERT INTO tr_b VALUES (1, 'uno', 11, 3), (2, 'two', 20, 4), (2, 'dos', 20, 6);
SELECT flow, rows_read, status FROM autocdc.run('fl2tr');
SELECT * FROM tr1 ORDER BY id, __start_at;
SELECT * FROM tr2 ORDER BY id, __start_at;
-- An except list that comes to another flow's list agrees with it.
CREATE TABLE tr3 (id int, name text, amount int, seq int, __start_at int, __end_at int,
  PRIMARY KEY (id, __start_at));
SELECT autocdc.create_auto_cdc_flow(target => 'tr3', source => 'tr_a', keys => ARRAY['id'],
  sequence_by => 'seq', stored_as_scd_type => 2, track_history_column_list => ARRAY['amount', 'name'],
  name => 'tr3_listed', pipeline => 'fl2tr3');
SELECT autocdc.create_auto_cdc_flow(target => 'tr3', source => 'tr_b', keys => ARRAY['id'],
  sequence_by => 'seq', stored_as_scd_type => 2, track_history_except_column_list => ARRAY['seq'],
  name => 'tr3_except', pipeline => 'fl2tr3');
SELECT autocdc.create_auto_cdc_flow(target => 'tr3', source => 'tr_b', keys => ARRAY['id'],
  sequence_by => 'seq', stored_as_scd_type => 2, name => 'tr3_all', pipeline => 'fl2tr3');
SELECT flow, rows_read, status FROM autocdc.run('fl2tr3');
SELECT * FROM tr3 ORDER BY id, __start_at;
-- Flows that all give a list may bring the target a column they do not track.
ALTER TABLE tr3 ADD COLUMN note text;
SELECT autocdc.create_auto_cdc_flow(target => 'tr3', source => 'tr_wide', keys => ARRAY['id'],
  sequence_by => 'seq', stored_as_scd_type => 2, track_history_column_list => ARRAY['name', 'amount'],
  name => 'tr3_wide', pipeline => 'fl2tr3');
-- The events so far leave the new column to the version before them (the
-- store takes the upserts only the target's rows held): a late event of
-- the new flow that sets it hands it on to every later version.
CREATE FUNCTION tr3_stored() RETURNS TABLE (upserts bigint, leaving_note bigint) LANGUAGE plpgsql AS $$
BEGIN
  RETURN QUERY EXECUTE format('SELECT count(*) FILTER (WHERE __autocdc_kind = %L), '
    'count(*) FILTER (WHERE __autocdc_inherit = ARRAY[%L]) FROM %s', 'u', 'note',
    (SELECT state_table FROM autocdc.target WHERE target = 'tr3'::regclass));
END $$;
SELECT * FROM tr3_stored();
INSERT INTO tr_wide VALUES (1, 'one', 10, 0, 'noted');
SELECT flow, rows_read, status FROM autocdc.run('fl2tr3');
SELECT * FROM tr3 ORDER BY id, __start_at;
-- Once the listing flow is gone, the target tracks all again and a flow
-- bringing a new value column tracks it too.
SELECT autocdc.drop_flow('tr1_listed');
SELECT autocdc.create_auto_cdc_flow(target => 'tr1', source => 'tr_wide', keys => ARRAY['id'],
  sequence_by => 'seq', stored_as_scd_type => 2, name => 'tr1_wide', pipeline => 'fl2tr');
SELECT target, track_columns FROM autocdc.target WHERE target::text LIKE 'tr_' ORDER BY 1;
SELECT autocdc.drop_flow(name) FROM autocdc.flow WHERE pipeline IN ('fl2tr', 'fl2tr3') ORDER BY name;
RESET search_path;
