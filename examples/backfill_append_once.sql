-- Backfill pattern 1: yearly archives appended ONCE into a live append target.
-- A live feed keeps appending; each archive is loaded one time by its own
-- ONCE flow, and never again (a full refresh would load it again).
\set ON_ERROR_STOP 1
\pset footer off
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS autocdc;
DROP SCHEMA IF EXISTS bf_append CASCADE;
CREATE SCHEMA bf_append;
SET search_path = bf_append, public;

CREATE TABLE orders_live (order_id int, amount numeric, placed_at date);
CREATE TABLE orders_2023 (order_id int, amount numeric, placed_at date);
CREATE TABLE orders_2024 (order_id int, amount numeric, placed_at date);
INSERT INTO orders_2023 VALUES (1, 10.00, '2023-03-01'), (2, 12.50, '2023-11-30');
INSERT INTO orders_2024 VALUES (3, 8.00, '2024-06-15');
INSERT INTO orders_live VALUES (4, 99.99, '2025-01-02');

\o /dev/null
SELECT autocdc.create_append_flow(target => 'bf_append.orders', source => 'orders_live',
                                  name => 'orders_live', pipeline => 'orders');
SELECT autocdc.create_append_flow(target => 'bf_append.orders', source => 'orders_2023',
                                  name => 'orders_2023', once => true, pipeline => 'orders');
SELECT autocdc.create_append_flow(target => 'bf_append.orders', source => 'orders_2024',
                                  name => 'orders_2024', once => true, pipeline => 'orders');
\o
\echo '== first run: the live feed and both archives =='
SELECT flow, kind, rows_read, status FROM autocdc.run('orders');
INSERT INTO orders_live VALUES (5, 5.00, '2025-01-03');
\echo '== second run: only the new live row; the archives are done =='
SELECT flow, kind, rows_read, status FROM autocdc.run('orders');
\echo '== bf_append.orders =='
SELECT * FROM orders ORDER BY order_id;
