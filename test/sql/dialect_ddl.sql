-- autocdc.flow_ddl(): the CREATE FLOW text of any flow; run again after
-- drop_flow, it makes a flow with the same definition.  A flow the dialect
-- cannot say (a source function, start_from, ...) comes back as its
-- function-API call.
SET client_min_messages = warning;
CREATE SCHEMA ddl;
SET search_path = ddl, public;
CREATE TABLE users (userId int, name text, city text, operation text, sequenceNum int, ts text);
CREATE TABLE "Mixed" ("Id" int, "Kind" text, seq int, note text);
CREATE TABLE snap (key int, city text);
CREATE TABLE orders_live (order_id int, amount numeric);
CREATE TABLE orders_old (order_id int, amount numeric);

-- Flows made with the dialect.
SELECT * FROM autocdc.execute($$
CREATE FLOW ddl_scd1 AS AUTO CDC INTO scd1 FROM STREAM(users) KEYS (userId)
  APPLY AS DELETE WHEN operation = "DELETE" APPLY AS TRUNCATE WHEN operation = "TRUNCATE"
  SEQUENCE BY sequenceNum COLUMNS * EXCEPT (operation, sequenceNum, ts) STORED AS SCD TYPE 1;
CREATE FLOW ddl_scd2 AS AUTO CDC INTO scd2 FROM users KEYS (userId)
  SEQUENCE BY STRUCT(CAST(ts AS TIMESTAMP_NTZ), sequenceNum) COLUMNS (name, city)
  STORED AS SCD TYPE 2 TRACK HISTORY ON (name);
CREATE FLOW ddl_scd2_except AS AUTO CDC INTO scd2_except FROM users KEYS (userId)
  SEQUENCE BY sequenceNum COLUMNS (name, city) STORED AS SCD TYPE 2 TRACK HISTORY ON * EXCEPT (city);
CREATE FLOW ddl_ign AS AUTO CDC INTO ign FROM users KEYS (userId) IGNORE NULL UPDATES
  SEQUENCE BY sequenceNum COLUMNS (name, city);
CREATE FLOW ddl_ign_on AS AUTO CDC ONCE INTO ign_on FROM users KEYS (userId)
  IGNORE NULL UPDATES ON (city) SEQUENCE BY sequenceNum::bigint COLUMNS (name, city);
CREATE FLOW ddl_ign_except AS AUTO CDC INTO ign_except FROM users KEYS (userId)
  IGNORE NULL UPDATES ON * EXCEPT (city) SEQUENCE BY sequenceNum COLUMNS (name, city);
CREATE FLOW `DDL Mixed Flow` AS AUTO CDC INTO `Mixed Target` FROM STREAM(`Mixed`) KEYS (`Id`)
  APPLY AS DELETE WHEN `Kind` = "it's \\gone" OR note = $q$x$q$ SEQUENCE BY seq;
CREATE FLOW ddl_snap_scd2 AS AUTO CDC INTO snap_scd2 FROM SNAPSHOT (SELECT * FROM snap)
  KEYS (key) STORED AS SCD TYPE 2 TRACK HISTORY ON (city);
CREATE FLOW ddl_snap_once AS AUTO CDC ONCE INTO snap_once FROM SNAPSHOT snap KEYS (key);
CREATE OR REFRESH STREAMING TABLE kept TBLPROPERTIES (pipelines.cdc.tombstoneGCThresholdInSeconds = 90);
CREATE FLOW ddl_kept AS AUTO CDC INTO kept FROM users KEYS (userId) SEQUENCE BY sequenceNum
  COLUMNS (name) STORED AS SCD TYPE 2;
CREATE OR REFRESH STREAMING TABLE ddl_orders AS SELECT * FROM STREAM(orders_live);
CREATE FLOW ddl_orders_old AS INSERT INTO ONCE ddl_orders BY NAME SELECT * FROM orders_old;
$$, 'ddl');

-- Flows made with the function API.
SELECT autocdc.create_auto_cdc_flow(target => 'ddl.api_cdc', source => 'users',
  keys => ARRAY['userId'], sequence_by => 'sequenceNum', apply_as_deletes => $$"operation" = 'a\b'$$,
  column_list => ARRAY['name', 'city'], name => 'ddl_api_cdc', pipeline => 'ddl');
SELECT autocdc.create_auto_cdc_flow(target => 'api_ts', source => 'users', name => 'ddl_api_ts',
  keys => ARRAY['userid'], sequence_by => 'ts::timestamp', column_list => ARRAY['name'],
  once => false, ignore_null_updates => false, pipeline => 'ddl');
SELECT autocdc.create_auto_cdc_flow(target => 'api_start', source => 'users', name => 'ddl_api_start',
  keys => ARRAY['userid'], sequence_by => 'sequenceNum', column_list => ARRAY['name'],
  start_from => 'now', pipeline => 'ddl');
SELECT autocdc.create_auto_cdc_flow(target => 'api_retention', source => 'users', name => 'ddl_api_retention',
  keys => ARRAY['userid'], sequence_by => 'sequenceNum', column_list => ARRAY['name'],
  tombstone_retention => '2 days', stored_as_scd_type => 2, pipeline => 'ddl');
SELECT autocdc.create_auto_cdc_flow(target => 'api_retention_frac', source => 'users', name => 'ddl_api_retention_frac',
  keys => ARRAY['userid'], sequence_by => 'sequenceNum', column_list => ARRAY['name'],
  tombstone_retention => '1.5 seconds', pipeline => 'ddl');
SELECT autocdc.create_auto_cdc_flow(target => 'DDL.Api_Case', source => 'users',
  keys => ARRAY['userid'], sequence_by => 'sequenceNum', column_list => ARRAY['name'],
  name => 'ddl_api_case', pipeline => 'ddl');
SELECT autocdc.create_auto_cdc_flow(target => 'api_float', source => 'users', name => 'ddl_api_float',
  keys => ARRAY['userid'], sequence_by => 'sequenceNum::float', column_list => ARRAY['name'],
  pipeline => 'ddl');
CREATE TABLE snap_fn_target (key int PRIMARY KEY, city text);
CREATE FUNCTION next_snap(latest bigint) RETURNS TABLE (snapshot regclass, version bigint)
LANGUAGE sql STABLE AS $$ SELECT 'ddl.snap'::regclass, 1::bigint WHERE latest IS NULL $$;
SELECT autocdc.create_auto_cdc_from_snapshot_flow(target => 'snap_fn_target', keys => ARRAY['key'],
  source_function => 'next_snap(bigint)', name => 'ddl_snap_fn', pipeline => 'ddl');
SELECT autocdc.create_append_flow(target => 'api_append', source => 'orders_live', name => 'ddl_api_append', pipeline => 'ddl');

-- The texts.
CREATE TEMP TABLE before AS
  SELECT name, autocdc.flow_ddl(name) AS ddl, kind, source, target::text AS target, keys,
         sequence_by, scd_type, options - 'name' - 'pipeline' AS options
    FROM autocdc.flows WHERE pipeline = 'ddl';
SELECT name, ddl FROM before ORDER BY name;

-- Dropped and made again from the texts: the same definitions.
SELECT count(autocdc.drop_flow(name)) FROM before;
SELECT count(*) FROM autocdc.flows WHERE pipeline = 'ddl';
SELECT autocdc.execute(ddl, 'ddl') FROM before WHERE ddl NOT LIKE 'SELECT %' ORDER BY name;
SELECT ddl FROM before WHERE ddl LIKE 'SELECT %' ORDER BY name \gexec
SELECT b.name, f.name IS NOT NULL AS made_again,
       (b.kind, b.source, b.target, b.keys, b.sequence_by, b.scd_type, b.options)
       IS NOT DISTINCT FROM
       (f.kind, f.source, f.target::text, f.keys, f.sequence_by, f.scd_type,
        f.options - 'name' - 'pipeline') AS same_definition
  FROM before b LEFT JOIN autocdc.flows f USING (name) ORDER BY b.name;
SELECT b.name, b.sequence_by, f.sequence_by FROM before b JOIN autocdc.flows f USING (name)
 WHERE b.sequence_by IS DISTINCT FROM f.sequence_by;

-- A flow that is not there.
SELECT autocdc.flow_ddl('nosuch');

-- Expectations added and dropped after creation are the flow's: its text
-- says them, and makes them again.
SELECT autocdc.create_auto_cdc_flow(target => 'exp_later', source => 'users', name => 'ddl_exp_later',
  keys => ARRAY['userId'], sequence_by => 'sequenceNum', column_list => ARRAY['name', 'city'],
  expect => '{"named": "name IS NOT NULL"}', pipeline => 'ddl');
SELECT autocdc.add_expectation('ddl_exp_later', 'city_set', $$city <> ''$$, 'drop');
SELECT autocdc.add_expectation('ddl_exp_later', 'positive', 'userId > 0', 'fail');
SELECT autocdc.drop_expectation('ddl_exp_later', 'named');
SELECT autocdc.flow_ddl('ddl_exp_later');
CREATE TEMP TABLE exp_before AS
  SELECT e.name, e.action, e.condition, f.options - 'name' - 'pipeline' AS options
    FROM autocdc.expectations e JOIN autocdc.flows f ON f.name = e.flow
   WHERE e.flow = 'ddl_exp_later';
SELECT autocdc.flow_ddl('ddl_exp_later') AS ddl \gset
SELECT autocdc.drop_flow('ddl_exp_later');
SELECT autocdc.execute(:'ddl', 'ddl');
SELECT coalesce(a.name, b.name) AS name, a.action, a.condition,
       (a.action, a.condition, a.options) IS NOT DISTINCT FROM (b.action, b.condition, b.options)
       AS same
  FROM (SELECT e.name, e.action, e.condition, f.options - 'name' - 'pipeline' AS options
          FROM autocdc.expectations e JOIN autocdc.flows f ON f.name = e.flow
         WHERE e.flow = 'ddl_exp_later') a
  FULL JOIN exp_before b USING (name) ORDER BY 1;
SELECT autocdc.drop_flow('ddl_exp_later');

SELECT count(autocdc.drop_flow(name)) FROM autocdc.flows WHERE pipeline = 'ddl';
DROP SCHEMA ddl CASCADE;
