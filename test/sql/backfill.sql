-- Snapshot + CDC in one ordering domain, and append flows.
-- Creates the extension when this file runs alone (make installcheck REGRESS=...).
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS autocdc;
RESET client_min_messages;
CREATE SCHEMA bf;
SET search_path = bf, public;

-- An authoritative snapshot (versions by function) and a live CDC feed on one SCD 1 target.
CREATE TABLE accounts (id int PRIMARY KEY, status text);
CREATE TABLE acc_snap_10 (id int, status text);
CREATE TABLE acc_snap_20 (id int, status text);
INSERT INTO acc_snap_10 VALUES (1, 'snap10'), (2, 'snap10'), (3, 'snap10');
INSERT INTO acc_snap_20 VALUES (1, 'snap20'), (3, 'snap20');
CREATE TABLE acc_versions (version bigint);
CREATE FUNCTION next_acc(latest bigint) RETURNS TABLE (snapshot regclass, version bigint)
LANGUAGE sql AS $$
  SELECT format('bf.acc_snap_%s', v.version)::regclass, v.version FROM bf.acc_versions v
   WHERE latest IS NULL OR v.version > latest ORDER BY v.version LIMIT 1
$$;
CREATE TABLE acc_cdc (id int, status text, op text, seq bigint);
SELECT autocdc.create_auto_cdc_from_snapshot_flow(target => 'accounts', source_function => 'next_acc(bigint)',
  keys => ARRAY['ID'], name => 'acc_snapshot', pipeline => 'bf');
SELECT autocdc.create_auto_cdc_flow(target => 'accounts', source => 'acc_cdc', keys => ARRAY['id'],
  sequence_by => 'seq', apply_as_deletes => $$op = 'D'$$, except_column_list => ARRAY['op', 'seq'],
  name => 'acc_cdc', pipeline => 'bf');
INSERT INTO acc_versions VALUES (10);
-- CDC: key 1 newer than snapshot 10, key 2 older, key 4 newer and absent from it.
INSERT INTO acc_cdc VALUES (1, 'cdc15', 'U', 15), (2, 'cdc5', 'U', 5), (4, 'cdc12', 'U', 12);
SELECT flow, kind, rows_read, status FROM autocdc.run('bf');
SELECT * FROM accounts ORDER BY id;
-- Snapshot 20 lacks keys 2 and 4: deleted at 20, unless a newer event keeps them.
INSERT INTO acc_versions VALUES (20);
INSERT INTO acc_cdc VALUES (4, 'cdc25', 'U', 25), (3, 'cdc18', 'U', 18);
SELECT flow, kind, rows_read, status FROM autocdc.run('bf');
SELECT * FROM accounts ORDER BY id;
-- A late CDC event older than snapshot 20 for a key it removed stays out;
-- a newer one restores the key.
INSERT INTO acc_cdc VALUES (2, 'cdc19', 'U', 19);
SELECT flow, rows_read, rows_upserted FROM autocdc.run('bf');
INSERT INTO acc_cdc VALUES (2, 'cdc21', 'U', 21);
SELECT flow, rows_read, rows_upserted FROM autocdc.run('bf');
SELECT * FROM accounts ORDER BY id;
-- A late CDC event older than snapshot 20 for a key it holds loses to it.
INSERT INTO acc_cdc VALUES (1, 'cdc17', 'U', 17);
SELECT flow, rows_read, rows_upserted, rows_skipped FROM autocdc.run('bf');
SELECT * FROM accounts WHERE id = 1;

-- The rules for sharing a target, each with its error.
CREATE TABLE acc_cdc2 (id int, status text, seq bigint);
SELECT autocdc.create_auto_cdc_flow(target => 'accounts', source => 'acc_cdc2', keys => ARRAY['id'],
  sequence_by => 'seq', except_column_list => ARRAY['seq'], ignore_null_updates => true,
  name => 'acc_partial', pipeline => 'bf');
SELECT autocdc.create_auto_cdc_from_snapshot_flow(target => 'accounts', source => 'acc_snap_10',
  keys => ARRAY['id'], name => 'acc_second_snapshot', pipeline => 'bf');
CREATE TABLE acc_cdc3 (id int, status text, seq int);
SELECT autocdc.create_auto_cdc_flow(target => 'accounts', source => 'acc_cdc3', keys => ARRAY['id'],
  sequence_by => 'seq', except_column_list => ARRAY['seq'], name => 'acc_int_seq', pipeline => 'bf');
CREATE TABLE acc_cdc4 (id int, status text, seq bigint);
SELECT autocdc.create_auto_cdc_flow(target => 'accounts', source => 'acc_cdc4', keys => ARRAY['status'],
  sequence_by => 'seq', except_column_list => ARRAY['seq'], name => 'acc_keys', pipeline => 'bf');
CREATE TABLE partial_first (id int, status text, seq bigint);
SELECT autocdc.create_auto_cdc_flow(target => 'pf', source => 'partial_first', keys => ARRAY['id'],
  sequence_by => 'seq', ignore_null_updates => true, pipeline => 'bf2');
SELECT autocdc.create_auto_cdc_from_snapshot_flow(target => 'pf', source => 'acc_snap_10',
  keys => ARRAY['id'], name => 'pf_snapshot', pipeline => 'bf2');
CREATE TABLE h2_src (id int, status text, seq bigint);
SELECT autocdc.create_auto_cdc_flow(target => 'h2', source => 'h2_src', keys => ARRAY['id'],
  sequence_by => 'seq', stored_as_scd_type => 2, pipeline => 'bf2');
SELECT autocdc.create_auto_cdc_from_snapshot_flow(target => 'h2', source => 'acc_snap_10',
  keys => ARRAY['id'], stored_as_scd_type => 2, name => 'h2_snapshot', pipeline => 'bf2');

-- Append flows: rows inserted by column name, target created from the source.
CREATE TABLE events_2023 (id int, payload text);
CREATE TABLE events_live (payload text, id int);
INSERT INTO events_2023 VALUES (1, 'old one'), (2, 'old two');
INSERT INTO events_live VALUES ('live one', 10);
SELECT autocdc.create_append_flow(target => 'events', source => 'events_live', pipeline => 'app');
SELECT autocdc.create_append_flow(target => 'events', source => 'events_2023', name => 'events_backfill_2023',
  once => true, pipeline => 'app');
\d events
SELECT flow, kind, rows_read, rows_upserted, status FROM autocdc.run('app');
SELECT * FROM events ORDER BY id;
-- Incremental: only new rows; the ONCE flow never again.
INSERT INTO events_live VALUES ('live two', 11);
INSERT INTO events_2023 VALUES (3, 'too late');
SELECT flow, rows_read, status FROM autocdc.run('app');
-- Schema evolution: a column the source gains is added to the target.
ALTER TABLE events_live ADD COLUMN region text;
INSERT INTO events_live (payload, id, region) VALUES ('live three', 12, 'eu');
SELECT flow, rows_read, status FROM autocdc.run('app');
SELECT * FROM events ORDER BY id;
-- A type the target cannot take is an error.
CREATE TABLE events_bad (id text, payload text);
INSERT INTO events_bad VALUES ('x', 'bad');
SELECT autocdc.create_append_flow(target => 'events', source => 'events_bad', name => 'events_bad', pipeline => 'app');
-- Append and AUTO CDC targets do not mix.
SELECT autocdc.create_append_flow(target => 'accounts', source => 'events_live', name => 'app_into_cdc', pipeline => 'app');
CREATE TABLE ev_cdc (id int, payload text, seq int);
SELECT autocdc.create_auto_cdc_flow(target => 'events', source => 'ev_cdc', keys => ARRAY['id'],
  sequence_by => 'seq', name => 'cdc_into_append', pipeline => 'app');
-- Full refresh: the target is emptied and rebuilt from every source row,
-- ONCE flows included.
SELECT flow, rows_read, status FROM autocdc.run('app', full_refresh => true);
SELECT * FROM events ORDER BY id;
SELECT name, once_done_at IS NOT NULL AS once_done FROM autocdc.flows WHERE pipeline = 'app' ORDER BY 1;
RESET search_path;
