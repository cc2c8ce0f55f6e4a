-- SCD type 2: the reference docs' users example, with and without track history.
-- Creates the extension when this file runs alone (make installcheck REGRESS=...).
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS autocdc;
RESET client_min_messages;
CREATE SCHEMA ref2;
SET search_path = ref2, public;
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
  sequence_by => 'sequenceNum', apply_as_deletes => $$operation = 'DELETE'$$,
  except_column_list => ARRAY['operation', 'sequenceNum'],
  stored_as_scd_type => 2, pipeline => 'ref2', name => 'users_scd2');
-- History columns typed like the sequence; one version per key and start,
-- enforced by the database (no index on the open versions: runs keep one).
\d users
SELECT flow, rows_read, rows_upserted, rows_deleted, rows_skipped, status FROM autocdc.run('ref2');
-- Unquoted __START_AT works, as PostgreSQL folds it.
SELECT userId, name, city, __START_AT, __END_AT FROM users ORDER BY userId, __START_AT;

-- Track history on all columns but city: city changes update in place.
SELECT autocdc.create_auto_cdc_flow(
  target => 'users_th', source => 'users_cdc', keys => ARRAY['userId'],
  sequence_by => 'sequenceNum', apply_as_deletes => $$operation = 'DELETE'$$,
  except_column_list => ARRAY['operation', 'sequenceNum'],
  stored_as_scd_type => 2, track_history_except_column_list => ARRAY['city'],
  pipeline => 'ref2_th');
SELECT flow, rows_read, rows_upserted, status FROM autocdc.run('ref2_th');
SELECT userId, name, city, __START_AT, __END_AT FROM users_th ORDER BY userId, __START_AT;

-- The same with the list form, arriving in three runs in reverse order.
CREATE TABLE users_cdc_rev (LIKE users_cdc);
SELECT autocdc.create_auto_cdc_flow(
  target => 'users_rev', source => 'users_cdc_rev', keys => ARRAY['userId'],
  sequence_by => 'sequenceNum', apply_as_deletes => $$operation = 'DELETE'$$,
  except_column_list => ARRAY['operation', 'sequenceNum'],
  stored_as_scd_type => 2, track_history_column_list => ARRAY['name'],
  pipeline => 'ref2_rev');
INSERT INTO users_cdc_rev (userId, name, city, operation, sequenceNum) SELECT userId, name, city, operation, sequenceNum FROM users_cdc WHERE sequenceNum >= 5;
SELECT rows_read, status FROM autocdc.run('ref2_rev');
INSERT INTO users_cdc_rev (userId, name, city, operation, sequenceNum) SELECT userId, name, city, operation, sequenceNum FROM users_cdc WHERE sequenceNum = 2;
SELECT rows_read, status FROM autocdc.run('ref2_rev');
INSERT INTO users_cdc_rev (userId, name, city, operation, sequenceNum) SELECT userId, name, city, operation, sequenceNum FROM users_cdc WHERE sequenceNum = 1;
SELECT rows_read, status FROM autocdc.run('ref2_rev');
SELECT userId, name, city, __START_AT, __END_AT FROM users_rev ORDER BY userId, __START_AT;

-- as_of: the versions valid at a point of the sequence, for any SCD 2 target.
SELECT * FROM autocdc.as_of(NULL::users, 5) ORDER BY userId;
SELECT * FROM autocdc.as_of(NULL::users, 0) ORDER BY userId;
SELECT name, city FROM autocdc.as_of(NULL::users, 100) WHERE userId = 125;
-- It is inlined, so a condition on the key reaches the primary key.
SET enable_seqscan = off;
EXPLAIN (COSTS OFF) SELECT * FROM autocdc.as_of(NULL::users, 5) WHERE userId = 125;
RESET enable_seqscan;
RESET search_path;
