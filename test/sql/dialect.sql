-- autocdc.execute(): the reference system's SQL, accepted as written
-- (reference §1.2 and the worked examples of §6).
SET client_min_messages = notice;
CREATE SCHEMA cdc_data;
CREATE TABLE cdc_data.users (userId int, name text, city text, operation text, sequenceNum int);
INSERT INTO cdc_data.users VALUES
    (124, 'Raul',     'Oaxaca',      'INSERT', 1),
    (123, 'Isabel',   'Monterrey',   'INSERT', 1),
    (125, 'Mercedes', 'Tijuana',     'INSERT', 2),
    (126, 'Lily',     'Cancun',      'INSERT', 2),
    (123, null,       null,          'DELETE', 6),
    (125, 'Mercedes', 'Guadalajara', 'UPDATE', 6),
    (125, 'Mercedes', 'Mexicali',    'UPDATE', 5),
    (123, 'Isabel',   'Chihuahua',   'UPDATE', 5);
CREATE SCHEMA dl;
SET search_path = dl, public;

-- §1.2's example as the documentation writes it: SCD type 1 (§6.2).
SELECT * FROM autocdc.execute($$
CREATE OR REFRESH STREAMING TABLE target;
CREATE FLOW flow AS AUTO CDC INTO target
FROM stream(cdc_data.users)
KEYS (userId)
APPLY AS DELETE WHEN operation = "DELETE"
APPLY AS TRUNCATE WHEN operation = "TRUNCATE"
SEQUENCE BY sequenceNum
COLUMNS * EXCEPT (operation, sequenceNum)
STORED AS SCD TYPE 1;
REFRESH STREAMING TABLE target;
$$);
SELECT * FROM target ORDER BY userId;
SELECT name, kind, source, target, keys, sequence_by, scd_type,
       options->>'apply_as_deletes' AS deletes, options->>'apply_as_truncates' AS truncates,
       options->'except_column_list' AS except
  FROM autocdc.flows WHERE name = 'flow';

-- With §6.1's TRUNCATE row at sequence 3: only 125 is left (§6.2).
CREATE TABLE cdc_data.users_t AS SELECT * FROM cdc_data.users;
INSERT INTO cdc_data.users_t VALUES (null, null, null, 'TRUNCATE', 3);
SELECT * FROM autocdc.execute($$
CREATE OR REFRESH STREAMING TABLE target_t;
CREATE FLOW flow_t AS AUTO CDC INTO target_t
FROM stream(cdc_data.users_t)
KEYS (userId)
APPLY AS DELETE WHEN operation = "DELETE"
APPLY AS TRUNCATE WHEN operation = "TRUNCATE"
SEQUENCE BY sequenceNum
COLUMNS * EXCEPT (operation, sequenceNum)
STORED AS SCD TYPE 1;
REFRESH STREAMING TABLE target_t;
$$);
SELECT * FROM target_t ORDER BY userId;

-- The SCD type 2 variant (§6.3) and the one that tracks history on all
-- columns but city (§6.4), this one in the legacy APPLY CHANGES form into
-- LIVE.x: x in the first schema of search_path.
SELECT * FROM autocdc.execute($$
CREATE OR REFRESH STREAMING TABLE target_scd2;
CREATE FLOW flow_scd2 AS AUTO CDC INTO target_scd2
FROM stream(cdc_data.users)
KEYS (userId)
APPLY AS DELETE WHEN operation = "DELETE"
SEQUENCE BY sequenceNum
COLUMNS * EXCEPT (operation, sequenceNum)
STORED AS SCD TYPE 2;

CREATE OR REFRESH STREAMING LIVE TABLE target_history;
APPLY CHANGES INTO LIVE.target_history
FROM stream(cdc_data.users)
KEYS (userId)
APPLY AS DELETE WHEN operation = "DELETE"
SEQUENCE BY sequenceNum
COLUMNS * EXCEPT (operation, sequenceNum)
STORED AS SCD TYPE 2
TRACK HISTORY ON * EXCEPT (city);
REFRESH STREAMING TABLE target_scd2;
REFRESH STREAMING TABLE Live.target_history;
$$);
SELECT * FROM target_scd2 ORDER BY userId, __start_at;
SELECT * FROM target_history ORDER BY userId, __start_at;
SELECT name, target, scd_type, options->'track_history_except_column_list' AS track
  FROM autocdc.flows WHERE name IN ('flow_scd2', 'target_history') ORDER BY name;

-- Clauses in any order (as Spark's parser takes them): three orders, one
-- definition, §6.4's rows.
SELECT * FROM autocdc.execute($$
CREATE FLOW p1 AS AUTO CDC INTO perm1 FROM STREAM cdc_data.users KEYS (userId)
  APPLY AS DELETE WHEN operation = 'DELETE' SEQUENCE BY sequenceNum
  COLUMNS * EXCEPT (operation, sequenceNum) STORED AS SCD TYPE 2 TRACK HISTORY ON * EXCEPT (city);
CREATE FLOW p2 AS AUTO CDC INTO perm2 FROM STREAM(cdc_data.users)
  TRACK HISTORY ON * EXCEPT (city) STORED AS SCD TYPE 2 COLUMNS * EXCEPT (operation, sequenceNum)
  SEQUENCE BY sequenceNum APPLY AS DELETE WHEN operation = 'DELETE' KEYS (userId);
CREATE FLOW p3 AS AUTO CDC INTO perm3 FROM cdc_data.users SEQUENCE BY sequenceNum
  KEYS (userId) STORED AS SCD TYPE 2 APPLY AS DELETE WHEN operation = 'DELETE'
  TRACK HISTORY ON * EXCEPT (city) COLUMNS * EXCEPT (operation, sequenceNum);
REFRESH STREAMING TABLE perm1;
REFRESH STREAMING TABLE perm2;
REFRESH STREAMING TABLE perm3;
$$);
SELECT count(DISTINCT options - 'name' - 'target') AS definitions
  FROM autocdc.flows WHERE name IN ('p1', 'p2', 'p3');
SELECT (SELECT array_agg(t ORDER BY t::text) FROM perm1 t)::text
       = (SELECT array_agg(t ORDER BY t::text) FROM perm2 t)::text AS same12,
       (SELECT array_agg(t ORDER BY t::text) FROM perm1 t)::text
       = (SELECT array_agg(t ORDER BY t::text) FROM target_history t)::text AS same_as_6_4;
SELECT * FROM perm3 ORDER BY userId, __start_at;

-- Outside pipelines (reference §1.3): the table and its AUTO CDC flow in
-- one statement; the flow is named as the table.
SELECT * FROM autocdc.execute($$
CREATE OR REFRESH STREAMING TABLE users_dbsql
  TBLPROPERTIES (pipelines.channel = 'PREVIEW')
  FLOW AUTO CDC FROM STREAM cdc_data.users KEYS (userId)
  APPLY AS DELETE WHEN operation = "DELETE" SEQUENCE BY sequenceNum
  COLUMNS * EXCEPT (operation, sequenceNum);
REFRESH STREAMING TABLE users_dbsql;
$$);
SELECT name, kind, target FROM autocdc.flows WHERE name = 'users_dbsql';
SELECT * FROM users_dbsql ORDER BY userId;

-- The one table property autocdc implements: how long a target remembers
-- deleted keys; its flows get it as tombstone_retention.
SELECT * FROM autocdc.execute($$
CREATE OR REFRESH STREAMING TABLE users_kept
  TBLPROPERTIES ('pipelines.cdc.tombstoneGCThresholdInSeconds' = '3600', delta.enableChangeDataFeed = true);
CREATE FLOW users_kept AS AUTO CDC INTO users_kept FROM cdc_data.users KEYS (userId)
  APPLY AS DELETE WHEN operation = "DELETE" SEQUENCE BY sequenceNum
  COLUMNS * EXCEPT (operation, sequenceNum);
$$);
SELECT name, tombstone_retention, options->'tombstone_retention' AS option
  FROM autocdc.flows WHERE name = 'users_kept';

-- IGNORE NULL UPDATES, its column forms, and COLUMNS (list).
SELECT * FROM autocdc.execute($$
CREATE FLOW ign_all AS AUTO CDC INTO ign_all FROM cdc_data.users KEYS (userId)
  SEQUENCE BY sequenceNum IGNORE NULL UPDATES COLUMNS (name, city);
CREATE FLOW ign_on AS AUTO CDC INTO ign_on FROM cdc_data.users KEYS (userId)
  IGNORE NULL UPDATES ON (city) SEQUENCE BY sequenceNum COLUMNS (name, city);
CREATE FLOW ign_except AS AUTO CDC INTO ign_except FROM cdc_data.users KEYS (userId)
  IGNORE NULL UPDATES ON * EXCEPT (city) SEQUENCE BY sequenceNum COLUMNS (name, city);
$$);
SELECT name, options->'ignore_null_updates' AS all, options->'ignore_null_updates_column_list' AS on,
       options->'ignore_null_updates_except_column_list' AS except, options->'column_list' AS columns
  FROM autocdc.flows WHERE name LIKE 'ign%' ORDER BY name;

-- The lexical habits: "..." is a string, `...` an identifier, \' an
-- escaped quote; comments go; dollar quotes stay PostgreSQL's.
CREATE TABLE "Events" ("Id" int, "Kind" text, seq int, note text);
INSERT INTO "Events" VALUES (1, 'new', 1, 'hello'), (1, 'it''s gone', 2, NULL),
                            (2, 'new', 1, 'x'), (3, 'new', 1, 'say ''bye'''), (4, 'new', 1, 'dollar "quoted"');
SELECT * FROM autocdc.execute($script$
-- a comment; with a semicolon
CREATE FLOW `Mixed Flow` AS AUTO CDC INTO `Ev Target` /* a /* nested */ comment; */
FROM STREAM(`Events`)
KEYS (`Id`)
APPLY AS DELETE WHEN `Kind` = "it's gone" OR note = 'say \'bye\'' OR note = $q$dollar "quoted"$q$
SEQUENCE BY seq;  -- the end
REFRESH STREAMING TABLE `Ev Target`
$script$);
SELECT name, target, keys, options->>'apply_as_deletes' AS deletes
  FROM autocdc.flows WHERE name = 'Mixed Flow';
SELECT * FROM "Ev Target" ORDER BY "Id";

-- Types: column definitions and casts take the reference's type names;
-- STRUCT(a, b) in SEQUENCE BY is ROW(a, b).
SELECT * FROM autocdc.execute($$
CREATE STREAMING TABLE typed (
  id INT NOT NULL COMMENT 'the key',
  s STRING, l LONG, ti TINYINT, si SMALLINT, bi BIGINT, f FLOAT, d DOUBLE,
  dd DECIMAL(10, 2), n NUMERIC(5,1), b BOOLEAN, dt DATE, bin BINARY,
  ts TIMESTAMP, tsn TIMESTAMP_NTZ, vc VARCHAR(20), c CHAR(3),
  a ARRAY<STRING>, aa ARRAY<ARRAY<INT>>, ad ARRAY<DECIMAL(4,2)>,
  `Mixed Case` STRING COMMENT "with a comment",
  CONSTRAINT typed_pk PRIMARY KEY (id)
) COMMENT 'every mapped type';
$$);
SELECT attname, format_type(atttypid, atttypmod) AS type, attnotnull,
       col_description(attrelid, attnum) AS comment
  FROM pg_attribute WHERE attrelid = 'typed'::regclass AND attnum > 0 ORDER BY attnum;
SELECT obj_description('typed'::regclass) AS table_comment;
CREATE TABLE typed_src (id int, ts text, v text, n text);
INSERT INTO typed_src VALUES (1, '2024-01-01 10:00', 'a', '1'), (1, '2024-01-01 10:00', 'b', '2'),
                             (1, '2024-01-01 09:00', 'c', '3');
SELECT * FROM autocdc.execute($$
CREATE FLOW typed_flow AS AUTO CDC INTO typed_target FROM typed_src KEYS (id)
  SEQUENCE BY STRUCT(CAST(ts AS TIMESTAMP_NTZ), v::STRING)
  COLUMNS (v);
CREATE FLOW cast_flow AS AUTO CDC INTO cast_target FROM typed_src KEYS (id)
  SEQUENCE BY CAST(n AS INT) + CAST(n AS LONG)::DOUBLE
  APPLY AS DELETE WHEN CAST(v AS BINARY) = CAST("zz" AS BINARY) AND ts::TIMESTAMP IS NULL;
REFRESH STREAMING TABLE typed_target;
$$);
SELECT name, options->>'sequence_by' AS sequence_by, options->>'apply_as_deletes' AS deletes
  FROM autocdc.flows WHERE name IN ('typed_flow', 'cast_flow') ORDER BY name;
SELECT * FROM typed_target;

-- A declared table with columns, then two flows into it; DROP FLOW.
CREATE TABLE cdc_data.more_users (userId int, name text, city text, operation text, sequenceNum int);
INSERT INTO cdc_data.more_users VALUES (200, 'Ana', 'Puebla', 'INSERT', 1);
SELECT * FROM autocdc.execute($$
CREATE OR REFRESH STREAMING TABLE all_users (
  userId INT NOT NULL, name STRING, city STRING, CONSTRAINT all_users_pk PRIMARY KEY (userId));
CREATE FLOW all_users_a AS AUTO CDC INTO all_users FROM STREAM(cdc_data.users) KEYS (userId)
  APPLY AS DELETE WHEN operation = "DELETE" SEQUENCE BY sequenceNum COLUMNS (name, city);
CREATE FLOW all_users_b AS AUTO CDC INTO all_users FROM STREAM(cdc_data.more_users) KEYS (userId)
  SEQUENCE BY sequenceNum COLUMNS (name, city);
REFRESH STREAMING TABLE all_users;
DROP FLOW all_users_b;
DROP FLOW IF EXISTS all_users_b;
$$);
SELECT * FROM all_users ORDER BY userId;
SELECT name FROM autocdc.flows WHERE name LIKE 'all_users%';

-- OR REFRESH keeps an existing table.
SELECT * FROM autocdc.execute($$CREATE OR REFRESH STREAMING TABLE all_users (x INT)$$);
SELECT count(*) FROM all_users;

-- Append flows: INSERT INTO ... BY NAME, and the backfill of yearly
-- archives with INSERT INTO ONCE; a table's AS query is its default flow.
CREATE TABLE orders_live (order_id int, amount numeric, placed_at date);
CREATE TABLE orders_2023 (order_id int, amount numeric, placed_at date);
CREATE TABLE orders_2024 (order_id int, amount numeric, placed_at date);
INSERT INTO orders_2023 VALUES (1, 10.00, '2023-03-01'), (2, 12.50, '2023-11-30');
INSERT INTO orders_2024 VALUES (3, 8.00, '2024-06-15');
INSERT INTO orders_live VALUES (4, 99.99, '2025-01-02');
SELECT * FROM autocdc.execute($$
CREATE OR REFRESH STREAMING TABLE orders AS SELECT * FROM STREAM(orders_live);
CREATE FLOW orders_2023 AS INSERT INTO ONCE orders BY NAME SELECT * FROM orders_2023;
CREATE FLOW orders_2024 AS INSERT ONCE INTO orders BY NAME SELECT * FROM orders_2024;
REFRESH STREAMING TABLE orders;
$$, pipeline => 'orders');
INSERT INTO orders_live VALUES (5, 5.00, '2025-01-03');
SELECT * FROM autocdc.execute('REFRESH STREAMING TABLE orders');
SELECT * FROM orders ORDER BY order_id;
SELECT name, pipeline, kind, source, once FROM autocdc.flows WHERE target = 'orders'::regclass ORDER BY name;
-- FULL runs the ONCE flows again.
SELECT * FROM autocdc.execute('REFRESH STREAMING TABLE orders FULL');
SELECT count(*) FROM orders;

-- The legacy SCD 2 migration: the old history replayed ONCE, the live
-- feed from there on.
CREATE TABLE legacy_products (sku text, price numeric, valid_from date, valid_to date);
INSERT INTO legacy_products VALUES
  ('A1', 10.00, '2024-01-01', '2024-06-01'),
  ('A1', 12.00, '2024-06-01', NULL),
  ('B2', 5.00,  '2024-02-01', NULL);
CREATE TABLE product_changes (sku text, price numeric, op text, changed_on date);
INSERT INTO product_changes VALUES ('A1', 13.00, 'U', '2025-01-01'), ('B2', NULL, 'D', '2025-02-01');
SELECT * FROM autocdc.execute($$
CREATE OR REFRESH STREAMING TABLE products;
CREATE FLOW products_legacy AS AUTO CDC ONCE INTO products
  FROM legacy_products KEYS (sku) SEQUENCE BY valid_from
  COLUMNS * EXCEPT (valid_from, valid_to) STORED AS SCD TYPE 2;
CREATE FLOW products_live AS AUTO CDC INTO products
  FROM STREAM(product_changes) KEYS (sku) APPLY AS DELETE WHEN op = "D"
  SEQUENCE BY changed_on COLUMNS * EXCEPT (op, changed_on) STORED AS SCD TYPE 2;
REFRESH STREAMING TABLE products;
$$, 'products');
SELECT * FROM products ORDER BY sku, __start_at;
INSERT INTO product_changes VALUES ('A1', 11.00, 'U', '2024-03-15');
SELECT * FROM autocdc.execute('REFRESH STREAMING TABLE products');
SELECT * FROM products ORDER BY sku, __start_at;

-- A periodic snapshot (§6.5 c): the table read whole at each refresh.
CREATE TABLE cities (key int, city text);
INSERT INTO cities VALUES (1, 'Oaxaca'), (2, 'Monterrey'), (3, 'Tijuana');
SELECT * FROM autocdc.execute($$
CREATE FLOW cities_scd2 AS AUTO CDC INTO cities_history FROM SNAPSHOT (SELECT * FROM cities)
  KEYS (key) STORED AS SCD TYPE 2;
CREATE FLOW cities_scd1 AS AUTO CDC INTO cities_now FROM SNAPSHOT cities KEYS (key);
REFRESH STREAMING TABLE cities_history;
REFRESH STREAMING TABLE cities_now;
$$);
TRUNCATE cities;
INSERT INTO cities VALUES (2, 'Carmel'), (3, 'Los Angeles'), (4, 'Death Valley'), (6, 'Kings Canyon');
SELECT * FROM autocdc.execute($$REFRESH STREAMING TABLE cities_history; REFRESH STREAMING TABLE cities_now$$);
SELECT * FROM cities_history ORDER BY key, __start_at;
SELECT * FROM cities_now ORDER BY key;

-- All or nothing: a failing statement takes the ones before it back.
SELECT * FROM autocdc.execute($$
CREATE FLOW undone AS AUTO CDC INTO undone FROM cdc_data.users KEYS (userId) SEQUENCE BY sequenceNum;
CREATE FLOW undone2 AS AUTO CDC INTO undone FROM cdc_data.users KEYS (nosuch) SEQUENCE BY sequenceNum;
$$);
SELECT count(*) FROM autocdc.flows WHERE name LIKE 'undone%';
SELECT to_regclass('undone');

-- execute() runs as its caller.
SELECT prosecdef FROM pg_proc WHERE oid = 'autocdc.execute'::regproc;

SELECT count(autocdc.drop_flow(f.name)) FROM autocdc.flows f JOIN pg_class c ON c.oid = f.target
 WHERE c.relnamespace = 'dl'::regnamespace;
SET client_min_messages = warning;
DROP SCHEMA dl, cdc_data CASCADE;
