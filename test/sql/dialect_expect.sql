-- autocdc.execute(): CONSTRAINT name EXPECT (cond) [ON VIOLATION {DROP ROW
-- | FAIL UPDATE}] on a streaming table: every flow the script makes into
-- it gets them (the expect, expect_or_drop, expect_or_fail arguments).
SET client_min_messages = notice;
CREATE SCHEMA dlx;
SET search_path = dlx, public;
CREATE TABLE orders (id int, amount numeric, status text, seq int);
SELECT * FROM autocdc.execute($$
CREATE OR REFRESH STREAMING TABLE orders_t (
  CONSTRAINT known_status EXPECT (status IN ("new", "paid")),
  CONSTRAINT positive EXPECT (amount > 0) ON VIOLATION DROP ROW,
  CONSTRAINT small EXPECT (amount < 1000) ON VIOLATION FAIL UPDATE
);
CREATE FLOW dlx_orders AS AUTO CDC INTO orders_t FROM STREAM(orders) KEYS (id) SEQUENCE BY seq;
CREATE OR REFRESH STREAMING TABLE dlx_log (
  id INT, amount DECIMAL(10, 2), status STRING, seq INT,
  CONSTRAINT positive EXPECT (amount > 0) ON VIOLATION DROP ROW
) AS SELECT * FROM STREAM(orders);
$$, 'dlx');
SELECT name, options->'expect' AS expect, options->'expect_or_drop' AS drop,
       options->'expect_or_fail' AS fail
  FROM autocdc.flows WHERE name LIKE 'dlx%' ORDER BY name;
INSERT INTO orders VALUES (1, 10, 'new', 1), (2, 20, 'odd', 1), (3, -5, 'new', 1);
SELECT * FROM autocdc.execute('REFRESH STREAMING TABLE orders_t; REFRESH STREAMING TABLE dlx_log');
SELECT * FROM orders_t ORDER BY id;
SELECT * FROM dlx_log ORDER BY id;
-- A failing expectation fails the refresh, and the script with it.
INSERT INTO orders VALUES (4, 5000, 'new', 1);
SELECT * FROM autocdc.execute('REFRESH STREAMING TABLE orders_t');
-- A snapshot flow into a table with expectations is refused.
SELECT * FROM autocdc.execute($$
CREATE OR REFRESH STREAMING TABLE snap_t (CONSTRAINT c EXPECT (id > 0));
CREATE FLOW dlx_snap AS AUTO CDC INTO snap_t FROM SNAPSHOT orders KEYS (id);
$$);
-- Expectations that go to no flow of the script are refused, not dropped
-- silently: on a table whose flow an earlier script made, and on a table
-- declared for flows of a later script.
SELECT * FROM autocdc.execute($$
CREATE OR REFRESH STREAMING TABLE orders_t (CONSTRAINT later EXPECT (amount < 100) ON VIOLATION DROP ROW);
$$);
SELECT * FROM autocdc.execute($$
CREATE OR REFRESH STREAMING TABLE later_t (CONSTRAINT c EXPECT (id > 0));
CREATE OR REFRESH STREAMING TABLE other_t;
$$);
SELECT flow, name FROM autocdc.expectations WHERE name IN ('later', 'c');
-- flow_ddl gives the expectations as a table statement before the flow;
-- the round trip keeps them.
SELECT autocdc.flow_ddl('dlx_orders');
CREATE TEMP TABLE before AS
  SELECT name, autocdc.flow_ddl(name) AS ddl, options - 'name' - 'pipeline' AS options
    FROM autocdc.flows WHERE name LIKE 'dlx%';
SELECT count(autocdc.drop_flow(name)) FROM before;
SELECT autocdc.execute(ddl, 'dlx') FROM before ORDER BY name;
SELECT b.name, b.options = f.options - 'name' - 'pipeline' AS same_options
  FROM before b JOIN autocdc.flows f USING (name) ORDER BY b.name;
SELECT count(autocdc.drop_flow(name)) FROM autocdc.flows WHERE name LIKE 'dlx%';
SET client_min_messages = warning;
DROP SCHEMA dlx CASCADE;
