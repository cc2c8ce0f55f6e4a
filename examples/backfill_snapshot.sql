-- Backfill pattern 2: an authoritative snapshot into a live SCD 1 target.
-- The change feed keeps the target current; a nightly full export is the
-- truth at its version. Both share one ordering: a change newer than the
-- export wins, the export wins over older changes, and keys missing from
-- the export go unless a newer change keeps them.
\set ON_ERROR_STOP 1
\pset footer off
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS autocdc;
DROP SCHEMA IF EXISTS bf_snapshot CASCADE;
CREATE SCHEMA bf_snapshot;
SET search_path = bf_snapshot, public;

-- The change feed, sequenced by a bigint (say, a log position).
CREATE TABLE customers_cdc (id int, name text, tier text, op text, lsn bigint);
-- Nightly exports, one table each, and the list of versions.
CREATE TABLE exports (version bigint, tbl regclass);
CREATE FUNCTION next_export(latest bigint) RETURNS TABLE (snapshot regclass, version bigint)
LANGUAGE sql STABLE SET search_path = bf_snapshot AS $$
  SELECT e.tbl, e.version FROM exports e
   WHERE latest IS NULL OR e.version > latest ORDER BY e.version LIMIT 1
$$;
CREATE TABLE customers (id int PRIMARY KEY, name text, tier text);

\o /dev/null
SELECT autocdc.create_auto_cdc_flow(target => 'bf_snapshot.customers', source => 'customers_cdc',
  keys => ARRAY['id'], sequence_by => 'lsn', apply_as_deletes => $$op = 'D'$$,
  except_column_list => ARRAY['op', 'lsn'], name => 'customers_cdc', pipeline => 'customers');
SELECT autocdc.create_auto_cdc_from_snapshot_flow(target => 'bf_snapshot.customers',
  source_function => 'next_export(bigint)', keys => ARRAY['id'],
  name => 'customers_export', pipeline => 'customers');
\o

-- The export at 100 and changes around it.
CREATE TABLE export_100 (id int, name text, tier text);
INSERT INTO export_100 VALUES (1, 'Ada', 'gold'), (2, 'Bob', 'silver'), (3, 'Cy', 'bronze');
INSERT INTO exports VALUES (100, 'export_100');
INSERT INTO customers_cdc VALUES
  (1, 'Ada', 'platinum', 'U', 120),   -- newer than the export: wins
  (2, 'Bob', 'gold', 'U', 90),        -- older: the export wins
  (4, 'Dee', 'silver', 'U', 110);     -- not in the export but newer: kept
\echo '== run 1 =='
SELECT flow, kind, rows_read, rows_upserted, rows_deleted, status FROM autocdc.run('customers');
SELECT * FROM customers ORDER BY id;

-- The export at 200 no longer has Cy nor Dee; Dee changed after it.
CREATE TABLE export_200 (id int, name text, tier text);
INSERT INTO export_200 VALUES (1, 'Ada', 'platinum'), (2, 'Bob', 'gold');
INSERT INTO exports VALUES (200, 'export_200');
INSERT INTO customers_cdc VALUES (4, 'Dee', 'gold', 'U', 210), (3, 'Cy', 'silver', 'U', 150);
\echo '== run 2: Cy goes (absent at 200, last change at 150), Dee stays (changed at 210) =='
SELECT flow, kind, rows_read, rows_upserted, rows_deleted, status FROM autocdc.run('customers');
SELECT * FROM customers ORDER BY id;
