-- Flows over a source query: STREAM(rel) read incrementally, batch
-- queries for ONCE flows and snapshots, and what is refused.
-- Creates the extension when this file runs alone (make installcheck REGRESS=...).
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS autocdc;
RESET client_min_messages;
CREATE SCHEMA sq;
SET search_path = sq, public;

-- A change feed with text timestamps, filtered and cast on the way in.
CREATE TABLE events (id int, name text, op text, change_timestamp text, region text);
CREATE TABLE regions (code text PRIMARY KEY, label text);
INSERT INTO regions VALUES ('eu', 'Europe'), ('us', 'Americas');
SELECT autocdc.create_auto_cdc_flow(target => 'users', keys => ARRAY['id'],
  sequence_by => 'ts', apply_as_deletes => $$op = 'DELETE'$$, except_column_list => ARRAY['op'],
  source_query => $$SELECT e.id, e.name, e.op, e.change_timestamp::timestamp AS ts
                      FROM STREAM(events) e WHERE e.region <> 'test'$$,
  pipeline => 'sq');
SELECT name, kind, source, read_mode, sequence_by FROM autocdc.flows WHERE name = 'users';
SELECT source_query FROM autocdc.flow WHERE name = 'users';
\d users
-- Three runs: each reads the rows added since the last, none twice, none missed.
INSERT INTO events VALUES (1, 'Ann', 'INSERT', '2024-01-01 10:00', 'eu'),
                          (2, 'Bob', 'INSERT', '2024-01-01 10:00', 'us'),
                          (3, 'Tst', 'INSERT', '2024-01-01 10:00', 'test');
SELECT flow, rows_read, rows_upserted, status FROM autocdc.run('sq');
SELECT * FROM users ORDER BY id;
INSERT INTO events VALUES (1, 'Anna', 'UPDATE', '2024-01-02 10:00', 'eu'),
                          (2, 'Bob', 'DELETE', '2024-01-02 10:00', 'us');
SELECT flow, rows_read, rows_upserted, rows_deleted, status FROM autocdc.run('sq');
SELECT * FROM users ORDER BY id;
SELECT flow, rows_read, status FROM autocdc.run('sq');
INSERT INTO events VALUES (4, 'Dan', 'INSERT', '2024-01-03 10:00', 'eu'),
                          (1, 'Old', 'UPDATE', '2023-12-31 10:00', 'eu');
SELECT flow, rows_read, rows_upserted, rows_skipped, status FROM autocdc.run('sq');
SELECT * FROM users ORDER BY id;

-- An append flow over a join with a dimension table, STREAM spelled without
-- parentheses; the dimension is read as it is at each run.
SELECT autocdc.create_append_flow(target => 'activity',
  source_query => $$SELECT events.id, r.label AS region, events.op
                      FROM STREAM events JOIN regions r ON r.code = events.region$$,
  pipeline => 'sq');
SELECT flow, rows_read, status FROM autocdc.run('sq', flows => ARRAY['activity']);
SELECT * FROM activity ORDER BY id, op;
UPDATE regions SET label = 'EU' WHERE code = 'eu';
INSERT INTO events VALUES (5, 'Eve', 'INSERT', '2024-01-04 10:00', 'eu'),
                          (6, 'Fay', 'INSERT', '2024-01-04 10:00', 'xx');
SELECT flow, rows_read, status FROM autocdc.run('sq');
SELECT * FROM activity ORDER BY id, op;

-- Names are resolved once, at creation: a search_path change, or a table
-- of the same name earlier on it, changes nothing the flow reads.
CREATE SCHEMA shadow;
CREATE TABLE shadow.events (id int, name text, op text, change_timestamp text, region text);
CREATE TABLE shadow.regions (code text, label text);
INSERT INTO shadow.events VALUES (99, 'Shadow', 'INSERT', '2024-02-01 10:00', 'eu');
INSERT INTO shadow.regions VALUES ('eu', 'Shadow');
SET search_path = shadow, sq, public;
INSERT INTO sq.events VALUES (7, 'Gus', 'INSERT', '2024-01-05 10:00', 'eu');
SELECT flow, rows_read, status FROM autocdc.run('sq');
SELECT * FROM sq.activity WHERE id >= 7 ORDER BY id;
SELECT * FROM sq.users WHERE id >= 7 ORDER BY id;
SET search_path = sq, public;
DROP SCHEMA shadow CASCADE;
-- A column the stream gains (unused by the queries) changes nothing either.
ALTER TABLE events ADD COLUMN extra jsonb;
INSERT INTO events (id, name, op, change_timestamp, region) VALUES (8, 'Hal', 'INSERT', '2024-01-06 10:00', 'us');
SELECT flow, rows_read, status FROM autocdc.run('sq');

-- A batch query (no STREAM) is read whole: for ONCE flows only.
CREATE TABLE legacy (id int, name text, changed_at timestamp);
INSERT INTO legacy VALUES (10, 'Legacy', '2020-01-01');
SELECT autocdc.create_append_flow(target => 'activity', name => 'activity_backfill', once => true,
  source_query => $$SELECT id, 'old'::text AS region, 'BACKFILL'::text AS op FROM legacy$$,
  pipeline => 'sq');
SELECT autocdc.create_auto_cdc_flow(target => 'users', name => 'users_backfill', once => true,
  keys => ARRAY['id'], sequence_by => 'ts',
  source_query => $$SELECT id, name, changed_at AS ts FROM legacy$$, pipeline => 'sq');
SELECT flow, rows_read, status FROM autocdc.run('sq');
SELECT flow, rows_read, status FROM autocdc.run('sq');
SELECT * FROM activity WHERE op = 'BACKFILL';
SELECT * FROM users WHERE id = 10;

-- Refused at creation, each with why.
SELECT autocdc.create_append_flow(target => 'x', source_query => 'SELECT id FROM legacy');
SELECT autocdc.create_append_flow(target => 'x', source_query => 'SELECT region, count(*) FROM STREAM(events) GROUP BY region');
SELECT autocdc.create_append_flow(target => 'x', source_query => 'SELECT DISTINCT region FROM STREAM(events)');
SELECT autocdc.create_append_flow(target => 'x', source_query => 'SELECT id, row_number() OVER () FROM STREAM(events)');
SELECT autocdc.create_append_flow(target => 'x', source_query => 'SELECT id FROM STREAM(events) LIMIT 10');
SELECT autocdc.create_append_flow(target => 'x', source_query => 'SELECT id FROM STREAM(events) OFFSET 1');
SELECT autocdc.create_append_flow(target => 'x', source_query => 'SELECT id FROM STREAM(events) UNION ALL SELECT id FROM legacy');
SELECT autocdc.create_append_flow(target => 'x', source_query => 'SELECT a.id FROM STREAM(events) a JOIN STREAM(events) b ON a.id = b.id');
SELECT autocdc.create_append_flow(target => 'x', source_query => 'SELECT r.code FROM regions r LEFT JOIN STREAM(events) e ON e.region = r.code');
SELECT autocdc.create_append_flow(target => 'x', source_query => 'SELECT id FROM (SELECT * FROM STREAM(events)) s');
SELECT autocdc.create_append_flow(target => 'x', source_query => 'SELECT id FROM STREAM(nosuch)');
SELECT autocdc.create_append_flow(target => 'x', source_query => 'SELECT id FROM STREAM(events, legacy)');
SELECT autocdc.create_append_flow(target => 'x', source_query => 'SELECT id, id FROM STREAM(events)');
SELECT autocdc.create_append_flow(target => 'x', source_query => 'SELECT a FROM STREAM(events) AS e(a, b)');
SELECT autocdc.create_append_flow(target => 'x', source_query => 'SELECT nosuch FROM STREAM(events)');
SELECT autocdc.create_append_flow(target => 'x', source_query => 'DELETE FROM events');
CREATE TEMP TABLE tmp_dim (code text);
SELECT autocdc.create_append_flow(target => 'x', source_query => 'SELECT e.id FROM STREAM(events) e JOIN tmp_dim t ON t.code = e.region');
DROP TABLE tmp_dim;
SELECT autocdc.create_append_flow(target => 'x', source => 'events', source_query => 'SELECT id FROM STREAM(events)');
SELECT autocdc.create_append_flow(target => 'x');
SELECT autocdc.create_auto_cdc_flow(target => 'x', keys => ARRAY['id'], sequence_by => 'ts',
  source_query => $$SELECT id, change_timestamp::timestamp AS ts FROM events$$);
SELECT autocdc.create_auto_cdc_flow(target => 'x', keys => ARRAY['nosuch'], sequence_by => 'ts',
  source_query => $$SELECT id, change_timestamp::timestamp AS ts FROM STREAM(events)$$);
-- A table or a function named stream is not silently taken for the mark.
CREATE TABLE stream (id int);
SELECT autocdc.create_append_flow(target => 'x', source_query => 'SELECT id FROM STREAM events');
SELECT autocdc.create_append_flow(target => 'x', source_query => 'SELECT id FROM "stream" events');
DROP TABLE stream;
CREATE FUNCTION stream(int) RETURNS int LANGUAGE sql AS 'SELECT 1';
SELECT autocdc.create_append_flow(target => 'x', source_query => 'SELECT id FROM STREAM(events)');
DROP FUNCTION stream(int);

-- A view is a batch source: refused for flows that read more than once.
CREATE VIEW events_view AS SELECT * FROM events;
SELECT autocdc.create_append_flow(target => 'x', source => 'events_view');
SELECT autocdc.create_auto_cdc_flow(target => 'x', source => 'events_view', keys => ARRAY['id'],
  sequence_by => 'change_timestamp');
SELECT autocdc.create_append_flow(target => 'x', source => 'events_view', once => true, name => 'view_once', pipeline => 'sq_view');
SELECT autocdc.drop_flow('view_once');
SELECT autocdc.create_append_flow(target => 'x', source_query => 'SELECT id FROM STREAM(events_view)');
-- ... but a query over the view's table, marked STREAM, reads its new rows.
SELECT autocdc.create_append_flow(target => 'from_query', pipeline => 'sq',
  source_query => 'SELECT id, name FROM STREAM(events) WHERE id > 6');
SELECT flow, rows_read FROM autocdc.run('sq', flows => ARRAY['from_query']);
SELECT flow, rows_read FROM autocdc.run('sq', flows => ARRAY['from_query']);

-- The creator must be able to read every table of the query, and the
-- target's owner too (a flow runs with its rights).
CREATE ROLE sq_user;
CREATE TABLE secret (code text, label text);
GRANT USAGE ON SCHEMA sq TO sq_user;
GRANT CREATE ON SCHEMA sq TO sq_user;
SET ROLE sq_user;
CREATE TABLE my_events (id int, code text);
SELECT autocdc.create_append_flow(target => 'my_activity', pipeline => 'sq_user',
  source_query => 'SELECT e.id, s.label FROM STREAM(my_events) e JOIN secret s USING (code)');
RESET ROLE;
CREATE ROLE sq_owner;
GRANT sq_owner TO sq_user;
CREATE TABLE owned_target (id int, label text);
ALTER TABLE owned_target OWNER TO sq_owner;
GRANT SELECT ON secret TO sq_user;
SET ROLE sq_user;
GRANT SELECT ON my_events TO sq_owner;
SELECT autocdc.create_append_flow(target => 'owned_target', pipeline => 'sq_user',
  source_query => 'SELECT e.id, s.label FROM STREAM(my_events) e JOIN secret s USING (code)');
RESET ROLE;
DROP TABLE my_events, owned_target;
DROP TABLE secret;
DROP ROLE sq_owner;

-- Snapshots from a query: read whole at each run, versions 0, 1, 2...
CREATE TABLE inventory (sku text, qty int, discontinued boolean);
INSERT INTO inventory VALUES ('a', 1, false), ('b', 2, false), ('z', 9, true);
SELECT autocdc.create_auto_cdc_from_snapshot_flow(target => 'stock', keys => ARRAY['sku'],
  snapshot_query => 'SELECT sku, qty::bigint AS qty FROM inventory WHERE NOT discontinued',
  pipeline => 'sq_snap');
SELECT flow, rows_read, rows_upserted, rows_deleted FROM autocdc.run('sq_snap');
SELECT * FROM stock ORDER BY sku;
UPDATE inventory SET qty = 5 WHERE sku = 'a';
UPDATE inventory SET discontinued = true WHERE sku = 'b';
SELECT flow, rows_read, rows_upserted, rows_deleted FROM autocdc.run('sq_snap');
SELECT * FROM stock ORDER BY sku;
SELECT snapshot_version FROM autocdc.flows WHERE name = 'stock';

-- Historical snapshots: WITH VERSION picks the next version after
-- last_snapshot_version(); the snapshot query reads current_snapshot_version().
CREATE TABLE snapshot_files (version int, sku text, price numeric);
INSERT INTO snapshot_files VALUES (1, 'a', 10), (1, 'b', 20), (2, 'a', 11), (3, 'b', 21), (3, 'c', 30);
SELECT autocdc.create_auto_cdc_from_snapshot_flow(target => 'prices', keys => ARRAY['sku'],
  stored_as_scd_type => 2, pipeline => 'sq_hist',
  snapshot_query => 'SELECT sku, price FROM snapshot_files WHERE version = current_snapshot_version()',
  version_query => $$SELECT min(version) FROM snapshot_files
                     WHERE version > COALESCE(last_snapshot_version(), 0)$$);
SELECT version_query FROM autocdc.flow WHERE name = 'prices';
SELECT flow, rows_read, rows_upserted, rows_deleted FROM autocdc.run('sq_hist');
SELECT * FROM prices ORDER BY sku, __start_at;
SELECT snapshot_version FROM autocdc.flows WHERE name = 'prices';
INSERT INTO snapshot_files VALUES (4, 'c', 31);
SELECT flow, rows_read, rows_upserted, rows_deleted FROM autocdc.run('sq_hist');
SELECT * FROM prices ORDER BY sku, __start_at;
SELECT flow, rows_read FROM autocdc.run('sq_hist');
-- last_snapshot_version() as a relation of 0 or 1 row, in FROM.
SELECT autocdc.create_auto_cdc_from_snapshot_flow(target => 'prices_from', keys => ARRAY['sku'],
  pipeline => 'sq_hist2',
  snapshot_query => 'SELECT sku, price FROM snapshot_files WHERE version = current_snapshot_version()',
  version_query => $$SELECT f.version FROM snapshot_files f
                     WHERE NOT EXISTS (SELECT FROM last_snapshot_version() l WHERE f.version <= l.last_snapshot_version::int)
                     ORDER BY f.version LIMIT 1$$);
SELECT flow, rows_read FROM autocdc.run('sq_hist2');
SELECT * FROM prices_from ORDER BY sku;
SELECT snapshot_version FROM autocdc.flows WHERE name = 'prices_from';
-- Without the cast, the version's type cannot be learnt.
SELECT autocdc.create_auto_cdc_from_snapshot_flow(target => 'y', keys => ARRAY['sku'],
  snapshot_query => 'SELECT sku FROM inventory',
  version_query => 'SELECT f.version FROM snapshot_files f, last_snapshot_version() l WHERE f.version > l.last_snapshot_version');
-- Refused: a version query giving more than one column, a STREAM in a
-- snapshot, current_snapshot_version() in the version query, a version
-- query without a snapshot query.
SELECT autocdc.create_auto_cdc_from_snapshot_flow(target => 'y', keys => ARRAY['sku'],
  snapshot_query => 'SELECT sku FROM inventory', version_query => 'SELECT 1 AS a, 2 AS b');
SELECT autocdc.create_auto_cdc_from_snapshot_flow(target => 'y', keys => ARRAY['sku'],
  snapshot_query => 'SELECT sku FROM STREAM(inventory)');
SELECT autocdc.create_auto_cdc_from_snapshot_flow(target => 'y', keys => ARRAY['sku'],
  snapshot_query => 'SELECT sku FROM inventory', version_query => 'SELECT current_snapshot_version()');
SELECT autocdc.create_auto_cdc_from_snapshot_flow(target => 'y', keys => ARRAY['sku'],
  source => 'inventory', version_query => 'SELECT 1');
SELECT autocdc.create_auto_cdc_from_snapshot_flow(target => 'y', keys => ARRAY['sku'],
  source => 'inventory', snapshot_query => 'SELECT sku FROM inventory');
-- A version query returning two rows fails the run.
SELECT autocdc.create_auto_cdc_from_snapshot_flow(target => 'twice', keys => ARRAY['sku'],
  pipeline => 'sq_twice', snapshot_query => 'SELECT sku FROM inventory',
  version_query => 'SELECT version FROM snapshot_files');
SELECT flow, status, error FROM autocdc.run('sq_twice');

-- SCD 2 over a source query, and start_from => 'now': the stream's rows
-- already there are taken as read.
CREATE TABLE moves (id int, city text, at text);
INSERT INTO moves VALUES (1, 'Oslo', '2024-01-01');
SELECT autocdc.create_auto_cdc_flow(target => 'residents', keys => ARRAY['id'], sequence_by => 'at',
  stored_as_scd_type => 2, start_from => 'now', pipeline => 'sq_scd2',
  source_query => 'SELECT id, initcap(city) AS city, at::date AS at FROM STREAM(moves)');
INSERT INTO moves VALUES (1, 'bergen', '2024-02-01'), (2, 'molde', '2024-02-01');
SELECT flow, rows_read, rows_upserted FROM autocdc.run('sq_scd2');
SELECT * FROM residents ORDER BY id, __start_at;

-- The query is kept with its names qualified and its casts written out: an
-- overload added later is not what the flow calls.  What it resolves to is
-- pinned as the expressions are: a function of the same signature made
-- again by another role stops the flow before anything is read.
CREATE FUNCTION label_of(code text) RETURNS text LANGUAGE sql IMMUTABLE AS 'SELECT upper(code)';
CREATE TABLE pin_src (id int, code varchar(10));
SELECT autocdc.create_append_flow(target => 'pinned', pipeline => 'sq_pin',
  source_query => 'SELECT id, label_of(code) AS label FROM STREAM(pin_src)');
SELECT source_query FROM autocdc.flow WHERE name = 'pinned';
SELECT regexp_replace(e, ' owned by .*', '') AS pinned FROM autocdc.flows, unnest(expression_objects) e
 WHERE name = 'pinned' AND e LIKE 'source_query: %' AND e NOT LIKE '%pg_catalog.%' ORDER BY 1;
INSERT INTO pin_src VALUES (1, 'eu');
SELECT flow, rows_read, status FROM autocdc.run('sq_pin');
CREATE FUNCTION label_of(code varchar) RETURNS text LANGUAGE sql IMMUTABLE AS $$SELECT 'overload'$$;
INSERT INTO pin_src VALUES (2, 'us');
SELECT flow, rows_read, status FROM autocdc.run('sq_pin');
DROP FUNCTION label_of(text);
SET ROLE sq_user;
CREATE FUNCTION sq.label_of(code text) RETURNS text LANGUAGE sql IMMUTABLE AS $$SELECT 'hijacked'$$;
RESET ROLE;
INSERT INTO pin_src VALUES (3, 'xx');
SELECT flow, rows_read, status FROM autocdc.run('sq_pin');
SELECT error FROM autocdc.event_log WHERE flow = 'pinned' ORDER BY id DESC LIMIT 1;
SELECT * FROM pinned ORDER BY id;
DROP FUNCTION label_of(text);
DROP FUNCTION label_of(varchar);

-- Statistics: a run analyzes the table of a source query that grew by a
-- tenth and 1 MB since its statistics (the query's joins rest on them), and
-- leaves a table read alone as it is (its read is a scan: reltuples stays
-- -1, never analyzed).
CREATE TABLE st_plain (id int, v text, seq int);
CREATE TABLE st_query (id int, v text, seq int);
SELECT autocdc.create_auto_cdc_flow(target => 'st_plain_t', source => 'st_plain', keys => ARRAY['id'],
  sequence_by => 'seq', pipeline => 'stats');
SELECT autocdc.create_auto_cdc_flow(target => 'st_query_t', keys => ARRAY['id'], sequence_by => 'seq',
  source_query => 'SELECT id, v, seq FROM STREAM(st_query)', pipeline => 'stats');
INSERT INTO st_plain (id, v, seq) SELECT i, repeat('x', 100), i FROM generate_series(1, 20000) i;
INSERT INTO st_query (id, v, seq) SELECT id, v, seq FROM st_plain;
SELECT relname, reltuples FROM pg_class WHERE oid IN ('st_plain'::regclass, 'st_query'::regclass) ORDER BY relname;
SELECT flow, rows_read, rows_upserted, status FROM autocdc.run('stats') ORDER BY flow;
SELECT relname, reltuples FROM pg_class WHERE oid IN ('st_plain'::regclass, 'st_query'::regclass) ORDER BY relname;
SELECT (SELECT count(*) FROM st_plain_t) AS plain_rows, (SELECT count(*) FROM st_query_t) AS query_rows;

SELECT name, options->'source_query' AS source_query, options->'snapshot_query' AS snapshot_query
  FROM autocdc.flows WHERE pipeline LIKE 'sq%' ORDER BY name;

SET client_min_messages = warning;
DROP SCHEMA sq CASCADE;
RESET client_min_messages;
DROP ROLE sq_user;
