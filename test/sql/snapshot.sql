-- AUTO CDC from snapshot: the reference docs' four examples, then the rules.
-- Creates the extension when this file runs alone (make installcheck REGRESS=...).
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS autocdc;
RESET client_min_messages;
CREATE SCHEMA snap;
SET search_path = snap, public;

-- (c) Periodic snapshot (newest docs): a table read whole each run, versions 0, 1.
CREATE TABLE cities (key int, city text);
INSERT INTO cities VALUES (1, 'Oaxaca'), (2, 'Monterrey'), (3, 'Tijuana');
SELECT autocdc.create_auto_cdc_from_snapshot_flow(target => 'cities_scd2', source => 'cities',
  keys => ARRAY['key'], stored_as_scd_type => 2, pipeline => 'snap_c');
SELECT autocdc.create_auto_cdc_from_snapshot_flow(target => 'cities_scd1', source => 'cities',
  keys => ARRAY['key'], pipeline => 'snap_c');
SELECT flow, kind, rows_read, rows_upserted, rows_deleted, status FROM autocdc.run('snap_c');
SELECT * FROM cities_scd2 ORDER BY key, __start_at;
TRUNCATE cities;
INSERT INTO cities VALUES (2, 'Carmel'), (3, 'Los Angeles'), (4, 'Death Valley'), (6, 'Kings Canyon');
SELECT flow, kind, rows_read, rows_upserted, rows_deleted, status FROM autocdc.run('snap_c');
SELECT * FROM cities_scd2 ORDER BY key, __start_at;
SELECT * FROM cities_scd1 ORDER BY key;
SELECT flow, snapshot_version FROM autocdc.checkpoint WHERE flow LIKE 'cities%' ORDER BY 1;

-- (a) Periodic snapshot versioned by time (older docs), with a source function.
CREATE TABLE snaps_a (version timestamp, key int, value text);
INSERT INTO snaps_a VALUES ('2024-01-01 00:00:00', 1, 'a1'), ('2024-01-01 00:00:00', 2, 'a2'),
  ('2024-01-01 12:00:00', 2, 'b2'), ('2024-01-01 12:00:00', 3, 'a3');
-- Runs see search_path pinned to pg_catalog: a source function names its
-- objects with their schema, or sets its own search_path.
CREATE FUNCTION next_a(latest timestamp) RETURNS TABLE (snapshot regclass, version timestamp)
LANGUAGE plpgsql SET search_path = snap AS $$
DECLARE v timestamp;
BEGIN
  SELECT min(s.version) INTO v FROM snaps_a s WHERE latest IS NULL OR s.version > latest;
  IF v IS NULL THEN RETURN; END IF;
  EXECUTE format('CREATE OR REPLACE VIEW snap_a_current AS SELECT key, value FROM snaps_a WHERE version = %L', v);
  RETURN QUERY SELECT 'snap_a_current'::regclass, v;
END $$;
CREATE TABLE hist_a (key int, value text, __start_at timestamp, __end_at timestamp, PRIMARY KEY (key, __start_at));
SELECT autocdc.create_auto_cdc_from_snapshot_flow(target => 'hist_a', source_function => 'next_a(timestamp)',
  keys => ARRAY['Key'], stored_as_scd_type => 2, pipeline => 'snap_a');
SELECT flow, rows_read, rows_upserted, rows_deleted, status FROM autocdc.run('snap_a');
SELECT * FROM hist_a ORDER BY key, __start_at;
SELECT flow, snapshot_version FROM autocdc.checkpoint WHERE flow = 'hist_a';
-- No new snapshot: nothing to do.
SELECT flow, rows_read, status FROM autocdc.run('snap_a');

-- (b) Historical snapshots with track history on one column (older docs).
CREATE TABLE snap_b1 (Key int, TrackingColumn text, NonTrackingColumn text);
CREATE TABLE snap_b2 (LIKE snap_b1);
INSERT INTO snap_b1 VALUES (1, 'a1', 'b1'), (2, 'a2', 'b2'), (4, 'a4', 'b4');
INSERT INTO snap_b2 VALUES (2, 'a2_new', 'b2'), (3, 'a3', 'b3'), (4, 'a4', 'b4_new');
CREATE FUNCTION next_b(latest bigint) RETURNS TABLE (snapshot regclass, version bigint)
LANGUAGE sql AS $$
  SELECT format('snap.snap_b%s', coalesce(latest, 0) + 1)::regclass, coalesce(latest, 0) + 1
   WHERE to_regclass(format('snap.snap_b%s', coalesce(latest, 0) + 1)) IS NOT NULL
$$;
CREATE TABLE hist_b (Key int, TrackingColumn text, NonTrackingColumn text,
  __start_at bigint, __end_at bigint, PRIMARY KEY (Key, __start_at));
SELECT autocdc.create_auto_cdc_from_snapshot_flow(target => 'hist_b', source_function => 'next_b(bigint)',
  keys => ARRAY['Key'], stored_as_scd_type => 2, track_history_column_list => ARRAY['TrackingColumn'],
  pipeline => 'snap_b');
SELECT flow, rows_read, rows_upserted, rows_deleted, status FROM autocdc.run('snap_b');
SELECT * FROM hist_b ORDER BY key, __start_at;

-- (d) Versioned function source (newest docs): snapshot_1 then snapshot_2.
CREATE TABLE snapshot_1 (key int, city text);
CREATE TABLE snapshot_2 (key int, city text);
INSERT INTO snapshot_1 VALUES (1, 'Oaxaca'), (2, 'Monterrey'), (3, 'Tijuana');
INSERT INTO snapshot_2 VALUES (2, 'Carmel'), (3, 'Los Angeles'), (4, 'Death Valley');
CREATE FUNCTION next_d(latest bigint) RETURNS TABLE (snapshot regclass, version bigint)
LANGUAGE sql AS $$
  SELECT format('snap.snapshot_%s', coalesce(latest, 0) + 1)::regclass, coalesce(latest, 0) + 1
   WHERE coalesce(latest, 0) < 2
$$;
CREATE TABLE hist_d (key int, city text, __start_at bigint, __end_at bigint, PRIMARY KEY (key, __start_at));
SELECT autocdc.create_auto_cdc_from_snapshot_flow(target => 'hist_d', source_function => 'next_d(bigint)',
  keys => ARRAY['key'], stored_as_scd_type => 2, pipeline => 'snap_d', once => true);
SELECT flow, rows_read, rows_upserted, rows_deleted, status FROM autocdc.run('snap_d');
SELECT * FROM hist_d ORDER BY key, __start_at;
SELECT flow, status FROM autocdc.run('snap_d');

-- Every row a snapshot holds takes the snapshot's version as its
-- __autocdc_sequence: a row is rewritten even where no value changed.
SELECT ctid AS kept FROM cities_scd1 WHERE key = 6 \gset
SELECT flow, rows_upserted FROM autocdc.run('snap_c', flows => ARRAY['cities_scd1']);
SELECT ctid = :'kept' AS untouched FROM cities_scd1 WHERE key = 6;

-- Errors: two rows with one key; no first snapshot; bad functions and arguments.
INSERT INTO cities VALUES (2, 'Carmel again');
SELECT flow, status FROM autocdc.run('snap_c');
DELETE FROM cities WHERE city = 'Carmel again';
CREATE FUNCTION next_none(latest bigint) RETURNS TABLE (snapshot regclass, version bigint)
LANGUAGE sql AS $$ SELECT NULL::regclass, NULL::bigint WHERE false $$;
CREATE TABLE t_none (key int PRIMARY KEY, city text);
SELECT autocdc.create_auto_cdc_from_snapshot_flow(target => 't_none', source_function => 'next_none(bigint)',
  keys => ARRAY['key'], pipeline => 'snap_none');
SELECT flow, status FROM autocdc.run('snap_none');
CREATE FUNCTION bad_sig(latest bigint) RETURNS int LANGUAGE sql AS 'SELECT 1';
SELECT autocdc.create_auto_cdc_from_snapshot_flow(target => 't_none', source_function => 'bad_sig(bigint)',
  keys => ARRAY['key'], name => 'bad', pipeline => 'snap_none');
SELECT autocdc.create_auto_cdc_from_snapshot_flow(target => 't_none', keys => ARRAY['key'], pipeline => 'snap_none', name => 'neither');
SELECT autocdc.create_auto_cdc_from_snapshot_flow(target => 't_missing', source_function => 'next_d(bigint)',
  keys => ARRAY['key'], pipeline => 'snap_none');
SELECT autocdc.create_auto_cdc_from_snapshot_flow(target => 't_none', source => 'cities', keys => ARRAY['key'],
  track_history_column_list => ARRAY['city'], name => 'th1', pipeline => 'snap_none');
-- A snapshot not newer than the last applied is skipped; the function
-- returns one row, without NULLs.
CREATE TABLE t_back (key int PRIMARY KEY, city text);
CREATE FUNCTION next_back(latest bigint) RETURNS TABLE (snapshot regclass, version bigint)
LANGUAGE sql AS $$ SELECT 'snap.cities'::regclass, CASE WHEN latest IS NULL THEN 5 ELSE 3 END::bigint $$;
SELECT autocdc.create_auto_cdc_from_snapshot_flow(target => 't_back', source_function => 'next_back(bigint)',
  keys => ARRAY['key'], pipeline => 'snap_back');
SELECT flow, rows_read, rows_upserted, status FROM autocdc.run('snap_back');
SELECT flow, rows_read, rows_upserted, status FROM autocdc.run('snap_back');
SELECT * FROM t_back ORDER BY key;
CREATE TABLE t_two (key int PRIMARY KEY, city text);
CREATE FUNCTION next_two(latest bigint) RETURNS TABLE (snapshot regclass, version bigint)
LANGUAGE sql AS $$ VALUES ('snap.cities'::regclass, 1::bigint), ('snap.cities'::regclass, 2::bigint) $$;
SELECT autocdc.create_auto_cdc_from_snapshot_flow(target => 't_two', source_function => 'next_two(bigint)',
  keys => ARRAY['key'], pipeline => 'snap_two');
SELECT flow, status FROM autocdc.run('snap_two');
CREATE FUNCTION next_null(latest bigint) RETURNS TABLE (snapshot regclass, version bigint)
LANGUAGE sql AS $$ SELECT NULL::regclass, 1::bigint $$;
CREATE TABLE t_null (key int PRIMARY KEY, city text);
SELECT autocdc.create_auto_cdc_from_snapshot_flow(target => 't_null', source_function => 'next_null(bigint)',
  keys => ARRAY['key'], pipeline => 'snap_null');
SELECT flow, status FROM autocdc.run('snap_null');
SELECT (SELECT count(*) FROM t_two) AS two_applied, (SELECT count(*) FROM t_null) AS null_applied;
RESET search_path;
