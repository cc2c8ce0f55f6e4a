-- Backfill pattern 3: a legacy SCD 2 table replayed ONCE into a live SCD 2
-- target, sequenced by its valid-from column; the live feed goes on from
-- there. Late live changes land in the right place of the merged history.
\set ON_ERROR_STOP 1
\pset footer off
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS autocdc;
DROP SCHEMA IF EXISTS bf_legacy CASCADE;
CREATE SCHEMA bf_legacy;
SET search_path = bf_legacy, public;

-- What the old warehouse kept: one row per version.
CREATE TABLE legacy_products (sku text, price numeric, valid_from date, valid_to date);
INSERT INTO legacy_products VALUES
  ('A1', 10.00, '2024-01-01', '2024-06-01'),
  ('A1', 12.00, '2024-06-01', NULL),
  ('B2', 5.00,  '2024-02-01', NULL);
-- The live change feed, sequenced by the change date.
CREATE TABLE product_changes (sku text, price numeric, op text, changed_on date);

\o /dev/null
SELECT autocdc.create_auto_cdc_flow(target => 'bf_legacy.products', source => 'legacy_products',
  keys => ARRAY['sku'], sequence_by => 'valid_from', except_column_list => ARRAY['valid_from', 'valid_to'],
  stored_as_scd_type => 2, once => true, name => 'products_legacy', pipeline => 'products');
SELECT autocdc.create_auto_cdc_flow(target => 'bf_legacy.products', source => 'product_changes',
  keys => ARRAY['sku'], sequence_by => 'changed_on', apply_as_deletes => $$op = 'D'$$,
  except_column_list => ARRAY['op', 'changed_on'],
  stored_as_scd_type => 2, name => 'products_live', pipeline => 'products');
\o
INSERT INTO product_changes VALUES ('A1', 13.00, 'U', '2025-01-01'), ('B2', NULL, 'D', '2025-02-01');
\echo '== run 1: the legacy history, then the live changes =='
SELECT flow, rows_read, rows_upserted, status FROM autocdc.run('products');
SELECT * FROM products ORDER BY sku, __start_at;
-- A late correction dated inside the legacy period.
INSERT INTO product_changes VALUES ('A1', 11.00, 'U', '2024-03-15');
\echo '== run 2: a late live change splits a legacy version =='
SELECT flow, rows_read, rows_upserted, status FROM autocdc.run('products');
SELECT * FROM products ORDER BY sku, __start_at;
\echo '== the prices on 2024-04-01 =='
SELECT sku, price FROM autocdc.as_of(NULL::products, '2024-04-01') ORDER BY sku;
