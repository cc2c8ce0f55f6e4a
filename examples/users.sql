-- The reference docs' users example: a change feed applied as SCD type 1.
-- Run it with `make demo`, or against your own database with psql -f.
\set ON_ERROR_STOP 1
\pset footer off
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS autocdc;
DROP SCHEMA IF EXISTS demo CASCADE;
CREATE SCHEMA demo;
SET search_path = demo, public;

-- 1. A staging table where change rows land (from Debezium, a batch job, ...).
CREATE TABLE users_cdc (
    userId      int,
    name        text,
    city        text,
    operation   text,     -- INSERT, UPDATE, DELETE or TRUNCATE
    sequenceNum int       -- the order of the changes
);

-- 2. A flow: keep demo.users current from it, as SCD type 1.
\o /dev/null
SELECT autocdc.create_auto_cdc_flow(
    target             => 'demo.users',
    source             => 'demo.users_cdc',
    keys               => ARRAY['userId'],
    sequence_by        => 'sequenceNum',
    apply_as_deletes   => $$operation = 'DELETE'$$,
    apply_as_truncates => $$operation = 'TRUNCATE'$$,
    except_column_list => ARRAY['operation', 'sequenceNum'],
    pipeline           => 'demo');
\o

-- 3. Changes arrive, out of order: 125's update at 5 comes after the one at 6.
INSERT INTO users_cdc (userId, name, city, operation, sequenceNum) VALUES
    (124, 'Raul',     'Oaxaca',      'INSERT', 1),
    (123, 'Isabel',   'Monterrey',   'INSERT', 1),
    (125, 'Mercedes', 'Tijuana',     'INSERT', 2),
    (126, 'Lily',     'Cancun',      'INSERT', 2),
    (123, null,       null,          'DELETE', 6),
    (125, 'Mercedes', 'Guadalajara', 'UPDATE', 6),
    (125, 'Mercedes', 'Mexicali',    'UPDATE', 5),
    (123, 'Isabel',   'Chihuahua',   'UPDATE', 5);

\echo '== staging rows (arrival order) =='
SELECT userId, name, city, operation, sequenceNum FROM users_cdc;

-- ... and a second flow from the same feed keeping full history (SCD type 2).
\o /dev/null
SELECT autocdc.create_auto_cdc_flow(
    target             => 'demo.users_history',
    source             => 'demo.users_cdc',
    keys               => ARRAY['userId'],
    sequence_by        => 'sequenceNum',
    apply_as_deletes   => $$operation = 'DELETE'$$,
    except_column_list => ARRAY['operation', 'sequenceNum'],
    stored_as_scd_type => 2,
    pipeline           => 'demo');
\o

-- 4. Run the pipeline: only rows committed since the last run are read.
\echo '== autocdc.run(''demo'') =='
SELECT flow, rows_read, rows_upserted, rows_deleted, rows_skipped, status
  FROM autocdc.run('demo');

\echo '== demo.users (SCD type 1) =='
SELECT * FROM users ORDER BY userId;

-- 5. More changes later: a late update (older than what was applied), a new
--    user, and a delete.
INSERT INTO users_cdc (userId, name, city, operation, sequenceNum) VALUES
    (126, 'Lily',  'Tulum',  'UPDATE', 1),     -- late: older than Lily's row
    (127, 'Ana',   'Puebla', 'INSERT', 7),
    (124, null,    null,     'DELETE', 8);
\echo '== second run: three new rows =='
SELECT flow, rows_read, rows_upserted, rows_deleted, rows_skipped, status
  FROM autocdc.run('demo');
\echo '== demo.users after the second run =='
SELECT * FROM users ORDER BY userId;
\echo '== demo.users_history (SCD type 2): the late update went into the past =='
SELECT * FROM users_history ORDER BY userId, __start_at;
\echo '== as of sequence 5 =='
SELECT * FROM autocdc.as_of(NULL::users_history, 5) ORDER BY userId;

\echo '== autocdc.event_log =='
SELECT logged_at::time(0) AS at, flow, rows_read, rows_upserted, rows_deleted, status
  FROM autocdc.event_log WHERE pipeline = 'demo' ORDER BY id;
