-- autocdc.execute() with flows over source queries: STREAM(rel) in
-- INSERT INTO ... BY NAME, in FROM (query) of AUTO CDC, in a streaming
-- table's AS query; snapshots FROM SNAPSHOT (query) WITH VERSION (query).
SET client_min_messages = notice;
CREATE SCHEMA dlq;
SET search_path = dlq, public;

-- An append flow whose query filters and casts: three refreshes, each
-- reading only the rows added since the last (none twice, none missed).
CREATE TABLE events (id int, name text, op text, change_timestamp text, region text);
SELECT * FROM autocdc.execute($$
CREATE OR REFRESH STREAMING TABLE eu_events;
CREATE FLOW dlq_eu AS INSERT INTO eu_events BY NAME
  SELECT id, name, CAST(change_timestamp AS TIMESTAMP_NTZ) AS at
    FROM STREAM(LIVE.events) WHERE region = "eu";
$$, 'dlq');
SELECT name, kind, source, options->>'source_query' AS source_query
  FROM autocdc.flows WHERE name = 'dlq_eu';
INSERT INTO events VALUES (1, 'Ann', 'INSERT', '2024-01-01 10:00', 'eu'),
                          (2, 'Bob', 'INSERT', '2024-01-01 10:00', 'us');
SELECT * FROM autocdc.execute('REFRESH STREAMING TABLE eu_events');
SELECT * FROM eu_events ORDER BY id, at;
INSERT INTO events VALUES (1, 'Anna', 'UPDATE', '2024-01-02 10:00', 'eu'),
                          (3, 'Cy', 'INSERT', '2024-01-02 11:00', 'eu');
SELECT * FROM autocdc.execute('REFRESH STREAMING TABLE eu_events');
SELECT * FROM eu_events ORDER BY id, at;
SELECT * FROM autocdc.execute('REFRESH STREAMING TABLE eu_events');
INSERT INTO events VALUES (4, 'Dee', 'INSERT', '2024-01-03 10:00', 'eu');
SELECT * FROM autocdc.execute('REFRESH STREAMING TABLE eu_events');
SELECT * FROM eu_events ORDER BY id, at;
SELECT runs, rows_read_total FROM autocdc.flows WHERE name = 'dlq_eu';

-- AUTO CDC from a query over the stream, and a streaming table defined by
-- its query (its default flow has its name).
SELECT * FROM autocdc.execute($$
CREATE OR REFRESH STREAMING TABLE users;
CREATE FLOW dlq_users AS AUTO CDC INTO users
  FROM (SELECT e.id, e.name, e.op, e.change_timestamp::TIMESTAMP_NTZ AS ts
          FROM STREAM(events) e WHERE e.region <> 'test')
  KEYS (id) APPLY AS DELETE WHEN op = "DELETE" SEQUENCE BY ts COLUMNS * EXCEPT (op);
CREATE OR REFRESH STREAMING TABLE dlq_names COMMENT 'names seen'
  AS SELECT id, upper(name) AS name FROM STREAM events;
REFRESH STREAMING TABLE users;
REFRESH STREAMING TABLE dlq_names;
$$, 'dlq');
SELECT * FROM users ORDER BY id;
SELECT * FROM dlq_names ORDER BY id, name;
SELECT obj_description('dlq_names'::regclass);
INSERT INTO events VALUES (2, NULL, 'DELETE', '2024-01-04 10:00', 'us');
SELECT * FROM autocdc.execute('REFRESH STREAMING TABLE users; REFRESH STREAMING TABLE dlq_names');
SELECT * FROM users ORDER BY id;
SELECT count(*) FROM dlq_names;

-- A query without STREAM is a batch source: refused for a flow that reads
-- more than once, the function API's error at the statement.
SELECT * FROM autocdc.execute($$CREATE FLOW dlq_batch AS INSERT INTO x BY NAME
  SELECT id FROM events WHERE id > 1$$);

-- The snapshot backfill: a change feed and versioned exports into one
-- SCD 1 target.  WITH VERSION picks the next export after
-- last_snapshot_version(); the snapshot reads current_snapshot_version().
CREATE TABLE customers_cdc (id int, name text, tier text, op text, lsn bigint);
CREATE TABLE exports (version bigint, id int, name text, tier text);
SELECT * FROM autocdc.execute($$
CREATE OR REFRESH STREAMING TABLE customers (id INT PRIMARY KEY, name STRING, tier STRING);
CREATE FLOW dlq_customers_cdc AS AUTO CDC INTO customers FROM STREAM(customers_cdc)
  KEYS (id) APPLY AS DELETE WHEN op = 'D' SEQUENCE BY lsn COLUMNS * EXCEPT (op, lsn);
CREATE FLOW dlq_customers_export AS AUTO CDC INTO customers
  FROM SNAPSHOT (SELECT id, name, tier FROM exports WHERE version = current_snapshot_version())
  WITH VERSION (SELECT min(version) FROM exports WHERE version > COALESCE(last_snapshot_version(), 0))
  KEYS (id) STORED AS SCD TYPE 1;
$$, 'dlq_customers');
INSERT INTO exports VALUES (100, 1, 'Ada', 'gold'), (100, 2, 'Bob', 'silver'), (100, 3, 'Cy', 'bronze');
INSERT INTO customers_cdc VALUES
  (1, 'Ada', 'platinum', 'U', 120),   -- newer than the export: wins
  (2, 'Bob', 'gold', 'U', 90),        -- older: the export wins
  (4, 'Dee', 'silver', 'U', 110);     -- not in the export but newer: kept
SELECT * FROM autocdc.execute('REFRESH STREAMING TABLE customers');
SELECT * FROM customers ORDER BY id;
INSERT INTO exports VALUES (200, 1, 'Ada', 'platinum'), (200, 2, 'Bob', 'gold');
INSERT INTO customers_cdc VALUES (4, 'Dee', 'gold', 'U', 210), (3, 'Cy', 'silver', 'U', 150);
SELECT * FROM autocdc.execute('REFRESH STREAMING TABLE customers');
SELECT * FROM customers ORDER BY id;
SELECT name, snapshot_version FROM autocdc.flows WHERE name = 'dlq_customers_export';

-- §6.5 (b): historical snapshots 1 and 2, history tracked on one column;
-- one refresh applies both, in version order.
CREATE TABLE snapshots (version int, key int, TrackingColumn text, NonTrackingColumn text);
INSERT INTO snapshots VALUES (1, 1, 'a1', 'b1'), (1, 2, 'a2', 'b2'), (1, 4, 'a4', 'b4'),
  (2, 2, 'a2_new', 'b2'), (2, 3, 'a3', 'b3'), (2, 4, 'a4', 'b4_new');
SELECT * FROM autocdc.execute($$
CREATE FLOW dlq_hist AS AUTO CDC INTO hist
  FROM SNAPSHOT (SELECT key, TrackingColumn, NonTrackingColumn FROM snapshots
                  WHERE version = current_snapshot_version())
  WITH VERSION (SELECT min(version) FROM snapshots
                 WHERE version > COALESCE(last_snapshot_version(), 0))
  KEYS (key) STORED AS SCD TYPE 2 TRACK HISTORY ON (TrackingColumn);
REFRESH STREAMING TABLE hist;
$$, 'dlq_hist');
SELECT * FROM hist ORDER BY key, __start_at;

-- flow_ddl of flows over queries, and the round trip.
CREATE TEMP TABLE before AS
  SELECT name, autocdc.flow_ddl(name) AS ddl, kind, source, target::text AS target, keys,
         sequence_by, scd_type, options - 'name' - 'pipeline' AS options
    FROM autocdc.flows WHERE name LIKE 'dlq%';
SELECT name, ddl FROM before ORDER BY name;
SELECT count(autocdc.drop_flow(name)) FROM before;
SELECT autocdc.execute(ddl) FROM before ORDER BY name;
SELECT b.name, (b.kind, b.source, b.target, b.keys, b.sequence_by, b.scd_type, b.options)
       IS NOT DISTINCT FROM
       (f.kind, f.source, f.target::text, f.keys, f.sequence_by, f.scd_type,
        f.options - 'name' - 'pipeline') AS same_definition
  FROM before b LEFT JOIN autocdc.flows f USING (name) ORDER BY b.name;

SELECT count(autocdc.drop_flow(name)) FROM autocdc.flows WHERE name LIKE 'dlq%';
SET client_min_messages = warning;
DROP SCHEMA dlq CASCADE;
