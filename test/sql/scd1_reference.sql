-- The reference docs' users example (SCD type 1), with and without truncate.
-- Creates the extension when this file runs alone (make installcheck REGRESS=...).
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS autocdc;
RESET client_min_messages;
CREATE SCHEMA ref;
SET search_path = ref, public;
CREATE TABLE users_cdc (userId int, name text, city text, operation text, sequenceNum int);
INSERT INTO users_cdc VALUES
  (124, 'Raul',     'Oaxaca',      'INSERT', 1),
  (123, 'Isabel',   'Monterrey',   'INSERT', 1),
  (125, 'Mercedes', 'Tijuana',     'INSERT', 2),
  (126, 'Lily',     'Cancun',      'INSERT', 2),
  (123, null,       null,          'DELETE', 6),
  (125, 'Mercedes', 'Guadalajara', 'UPDATE', 6),
  (125, 'Mercedes', 'Mexicali',    'UPDATE', 5),
  (123, 'Isabel',   'Chihuahua',   'UPDATE', 5);

SELECT autocdc.create_auto_cdc_flow(
  target => 'users', source => 'users_cdc', keys => ARRAY['userId'],
  sequence_by => 'sequenceNum',
  apply_as_deletes => $$operation = 'DELETE'$$,
  except_column_list => ARRAY['operation', 'sequenceNum'],
  pipeline => 'ref');
-- The target was created from the source's columns, keys as primary key.
\d users
SELECT flow, target, kind, rows_read, rows_upserted, rows_deleted, rows_skipped, status
  FROM autocdc.run('ref');
SELECT * FROM users ORDER BY userId;

-- Truncate: the same feed plus a TRUNCATE at sequence 3.
CREATE TABLE users_cdc2 (LIKE users_cdc);
INSERT INTO users_cdc2 SELECT * FROM users_cdc;
INSERT INTO users_cdc2 VALUES (null, null, null, 'TRUNCATE', 3);
SELECT autocdc.create_auto_cdc_flow(
  target => 'users_t', source => 'users_cdc2', keys => ARRAY['userId'],
  sequence_by => 'sequenceNum',
  apply_as_deletes => $$operation = 'DELETE'$$,
  apply_as_truncates => $$operation = 'TRUNCATE'$$,
  except_column_list => ARRAY['operation', 'sequenceNum'],
  pipeline => 'ref_t');
SELECT flow, rows_read, rows_upserted, rows_deleted, status FROM autocdc.run('ref_t');
SELECT * FROM users_t ORDER BY userId;

-- The same truncate arriving in a later run removes the rows it covers.
CREATE TABLE users_cdc3 (LIKE users_cdc);
INSERT INTO users_cdc3 SELECT * FROM users_cdc;
SELECT autocdc.create_auto_cdc_flow(
  target => 'users_t3', source => 'users_cdc3', keys => ARRAY['userId'],
  sequence_by => 'sequenceNum',
  apply_as_deletes => $$operation = 'DELETE'$$,
  apply_as_truncates => $$operation = 'TRUNCATE'$$,
  except_column_list => ARRAY['operation', 'sequenceNum'],
  pipeline => 'ref_t3');
SELECT rows_read, rows_upserted, status FROM autocdc.run('ref_t3');
SELECT * FROM users_t3 ORDER BY userId;
INSERT INTO users_cdc3 VALUES (null, null, null, 'TRUNCATE', 3);
SELECT rows_read, rows_upserted, rows_deleted, status FROM autocdc.run('ref_t3');
SELECT * FROM users_t3 ORDER BY userId;
-- A late insert older than the truncate stays out; a newer one comes in.
INSERT INTO users_cdc3 VALUES (127, 'Ana', 'Puebla', 'INSERT', 2), (128, 'Luis', 'Leon', 'INSERT', 4);
SELECT rows_read, rows_upserted, rows_skipped, status FROM autocdc.run('ref_t3');
SELECT * FROM users_t3 ORDER BY userId;

-- The event log has a row per flow per run.
SELECT pipeline, flow, target, kind, read_mode, rows_read, rows_upserted, rows_deleted, rows_skipped, status, error
  FROM autocdc.event_log WHERE pipeline LIKE 'ref%' ORDER BY id;
RESET search_path;
