-- A whole pipeline in the reference system's SQL, run by autocdc.execute():
-- the users change feed as SCD type 1 and as SCD type 2 with history on
-- all columns but city, an append flow over a filtered query, a ONCE
-- backfill, and a periodic snapshot.
-- Run it with `make demo`, or against your own database with psql -f.
\set ON_ERROR_STOP 1
\pset footer off
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS autocdc;
DROP SCHEMA IF EXISTS demo_sql CASCADE;
CREATE SCHEMA demo_sql;
SET search_path = demo_sql, public;

-- What lands from outside: a change feed, a login log, last year's logins,
-- and a table of cities refreshed in place.
CREATE TABLE users_cdc (userId int, name text, city text, operation text, sequenceNum int);
CREATE TABLE logins (userId int, at text, client text);
CREATE TABLE logins_2024 (userId int, at timestamp, client text);
CREATE TABLE cities (city text, country text);
INSERT INTO logins_2024 VALUES (124, '2024-12-31 23:59', 'web');
INSERT INTO cities VALUES ('Oaxaca', 'MX'), ('Monterrey', 'MX'), ('Tijuana', 'MX');

\echo '== the pipeline, as the reference writes it =='
SELECT * FROM autocdc.execute($$
-- SCD type 1: the current row of each user.
CREATE OR REFRESH STREAMING TABLE users COMMENT "current users";
CREATE FLOW users AS AUTO CDC INTO LIVE.users
  FROM STREAM(LIVE.users_cdc)
  KEYS (userId)
  APPLY AS DELETE WHEN operation = "DELETE"
  APPLY AS TRUNCATE WHEN operation = "TRUNCATE"
  SEQUENCE BY sequenceNum
  COLUMNS * EXCEPT (operation, sequenceNum)
  STORED AS SCD TYPE 1;

-- SCD type 2, a new version only when a tracked column changes.
CREATE OR REFRESH STREAMING TABLE users_history;
CREATE FLOW users_history AS AUTO CDC INTO users_history
  FROM STREAM(users_cdc)
  KEYS (userId)
  APPLY AS DELETE WHEN operation = "DELETE"
  SEQUENCE BY sequenceNum
  COLUMNS * EXCEPT (operation, sequenceNum)
  STORED AS SCD TYPE 2
  TRACK HISTORY ON * EXCEPT (city);

-- Logins from the web, typed on the way in; last year's loaded once.
CREATE OR REFRESH STREAMING TABLE web_logins (
  userId INT, at TIMESTAMP_NTZ, client STRING COMMENT 'always web here')
  AS SELECT userId, CAST(at AS TIMESTAMP_NTZ) AS at, client
       FROM STREAM(logins) WHERE client = "web";
CREATE FLOW web_logins_2024 AS INSERT INTO ONCE web_logins BY NAME
  SELECT * FROM logins_2024;

-- The cities table, read whole at each refresh, kept with history.
CREATE FLOW cities AS AUTO CDC INTO cities_history
  FROM SNAPSHOT (SELECT * FROM cities) KEYS (city) STORED AS SCD TYPE 2;
$$, 'demo_sql');

\echo '== changes arrive, out of order =='
INSERT INTO users_cdc VALUES
    (124, 'Raul',     'Oaxaca',      'INSERT', 1),
    (123, 'Isabel',   'Monterrey',   'INSERT', 1),
    (125, 'Mercedes', 'Tijuana',     'INSERT', 2),
    (126, 'Lily',     'Cancun',      'INSERT', 2),
    (123, null,       null,          'DELETE', 6),
    (125, 'Mercedes', 'Guadalajara', 'UPDATE', 6),
    (125, 'Mercedes', 'Mexicali',    'UPDATE', 5),
    (123, 'Isabel',   'Chihuahua',   'UPDATE', 5);
INSERT INTO logins VALUES (124, '2025-01-02 08:00', 'web'), (125, '2025-01-02 09:00', 'app');

SELECT * FROM autocdc.execute($$
REFRESH STREAMING TABLE users;
REFRESH STREAMING TABLE users_history;
REFRESH STREAMING TABLE web_logins;
REFRESH STREAMING TABLE cities_history;
$$);
\echo '== users (SCD type 1) =='
SELECT * FROM users ORDER BY userId;
\echo '== users_history (SCD type 2, history on all but city) =='
SELECT * FROM users_history ORDER BY userId, __start_at;
\echo '== web_logins =='
SELECT * FROM web_logins ORDER BY at;

\echo '== more changes, and a new cities table =='
INSERT INTO users_cdc VALUES (127, 'Ana', 'Puebla', 'INSERT', 7), (124, null, null, 'DELETE', 8);
INSERT INTO logins VALUES (127, '2025-01-03 10:00', 'web');
UPDATE cities SET country = 'México' WHERE city = 'Oaxaca';
DELETE FROM cities WHERE city = 'Tijuana';
SELECT * FROM autocdc.execute($$
REFRESH STREAMING TABLE users; REFRESH STREAMING TABLE users_history;
REFRESH STREAMING TABLE web_logins; REFRESH STREAMING TABLE cities_history;
$$);
SELECT * FROM users ORDER BY userId;
SELECT * FROM web_logins ORDER BY at;
SELECT * FROM cities_history ORDER BY city, __start_at;

\echo '== the flows, as CREATE FLOW statements again (autocdc.flow_ddl) =='
SELECT name, autocdc.flow_ddl(name) FROM autocdc.flows WHERE pipeline = 'demo_sql' ORDER BY name;
\echo '== autocdc.event_log =='
SELECT flow, rows_read, rows_upserted, rows_deleted, status
  FROM autocdc.event_log WHERE pipeline = 'demo_sql' ORDER BY id;
