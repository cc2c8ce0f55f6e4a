-- Expectations on flows: warn keeps and counts, drop leaves a row out of
-- the run and quarantines it, fail fails the flow's run naming the row; a
-- NULL condition passes; conditions are resolved at creation and refused
-- when not boolean, volatile, aggregate, window or set-returning; snapshot
-- flows refuse them; add_expectation / drop_expectation change a flow for
-- the rows read from then on; the counts in the event log and the view
-- autocdc.expectations.
-- Creates the extension when this file runs alone (make installcheck REGRESS=...).
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS autocdc;
RESET client_min_messages;
CREATE SCHEMA ex;
SET search_path = ex, public;

-- An SCD 1 flow with one expectation of each kind.
CREATE TABLE orders (id int, amount numeric, status text, seq int);
SELECT autocdc.create_auto_cdc_flow(target => 'orders_t', source => 'orders',
  keys => ARRAY['id'], sequence_by => 'seq', pipeline => 'ex',
  expect => '{"known_status": "status IN (''new'', ''paid'')"}',
  expect_or_drop => '{"positive": "amount > 0"}',
  expect_or_fail => '{"small": "amount < 1000"}');
SELECT name, action, condition FROM autocdc.expectations WHERE flow = 'orders_t' ORDER BY name;
SELECT options->'expect', options->'expect_or_drop', options->'expect_or_fail', options->'on_bad_event'
  FROM autocdc.flows WHERE name = 'orders_t';

-- 1: kept; 2: unknown status (warn: kept, counted); 3: negative (dropped);
-- 4: NULL amount (NULL conditions pass); 5: both warn and drop fail.
INSERT INTO orders VALUES (1, 10, 'new', 1), (2, 20, 'odd', 1), (3, -5, 'new', 1),
  (4, NULL, 'paid', 1), (5, -1, 'odd', 1);
SELECT flow, rows_read, rows_upserted, rows_dropped, status FROM autocdc.run('ex');
TABLE orders_t ORDER BY id;
SELECT reason, expectations, "row", key, sequence, conflicts_with
  FROM autocdc.quarantine WHERE flow = 'orders_t' ORDER BY id;
SELECT rows_read, rows_dropped, rows_quarantined, expectations
  FROM autocdc.event_log WHERE flow = 'orders_t' ORDER BY id;
SELECT name, last_passed, last_failed, passed_total, failed_total
  FROM autocdc.expectations WHERE flow = 'orders_t' ORDER BY name;

-- A dropped row is dropped whatever run reads it: a later, dropped update
-- of key 1 leaves it as it was.
INSERT INTO orders VALUES (1, -10, 'paid', 2);
SELECT flow, rows_read, rows_upserted, rows_dropped, status FROM autocdc.run('ex');
TABLE orders_t ORDER BY id;

-- fail: the run fails naming the flow, the expectation, the key and the
-- sequence; nothing of the flow is applied (row 6 neither), nothing is
-- quarantined, and the counts are not recorded.
INSERT INTO orders VALUES (6, 5, 'new', 1), (7, 5000, 'new', 3), (8, -1, 'new', 1);
SELECT flow, rows_read, rows_dropped, status, error FROM autocdc.run('ex');
TABLE orders_t ORDER BY id;
SELECT count(*) FROM autocdc.quarantine WHERE flow = 'orders_t';
SELECT status, rows_dropped, rows_quarantined, expectations
  FROM autocdc.event_log WHERE flow = 'orders_t' ORDER BY id DESC LIMIT 1;
SELECT name, last_passed, last_failed, passed_total, failed_total
  FROM autocdc.expectations WHERE flow = 'orders_t' ORDER BY name;

-- drop_expectation: from then on the rows are not checked against it; the
-- failing row now applies, and so does row 6 (the failed run read nothing).
SELECT autocdc.drop_expectation('orders_t', 'small');
SELECT flow, rows_read, rows_upserted, rows_dropped, status FROM autocdc.run('ex');
TABLE orders_t ORDER BY id;
SELECT name FROM autocdc.expectations WHERE flow = 'orders_t' ORDER BY name;

-- add_expectation: applies to rows read from then on (not to rows applied).
SELECT autocdc.add_expectation('orders_t', 'not_huge', 'amount < 100', 'drop');
INSERT INTO orders VALUES (9, 500, 'new', 1), (10, 50, 'new', 1);
SELECT flow, rows_read, rows_upserted, rows_dropped, status FROM autocdc.run('ex');
TABLE orders_t ORDER BY id;
SELECT name, action, last_passed, last_failed, passed_total, failed_total
  FROM autocdc.expectations WHERE flow = 'orders_t' ORDER BY name;
SELECT reason, expectations, key, sequence FROM autocdc.quarantine
  WHERE flow = 'orders_t' ORDER BY id;

-- A run that reads nothing leaves the last counts as they are.
SELECT flow, rows_read, status FROM autocdc.run('ex');
SELECT name, last_passed, last_failed FROM autocdc.expectations WHERE flow = 'orders_t' ORDER BY name;

-- A dropped row is no event: it conflicts with nothing (on_bad_event is
-- 'fail' here), and the row kept at that key and sequence applies.
INSERT INTO orders VALUES (11, 30, 'new', 1), (11, -30, 'new', 1);
SELECT flow, rows_read, rows_upserted, rows_dropped, status, error FROM autocdc.run('ex');
SELECT * FROM orders_t WHERE id = 11;

-- add_expectation's errors.
SELECT autocdc.add_expectation('orders_t', 'not_huge', 'amount < 100');
SELECT autocdc.add_expectation('orders_t', 'x', 'amount < 100', 'ignore');
SELECT autocdc.add_expectation('no_such_flow', 'x', 'true');
SELECT autocdc.add_expectation('orders_t', '', 'true');
SELECT autocdc.drop_expectation('orders_t', 'no_such');

-- Bad conditions are refused at creation, with the flow not made.
SELECT autocdc.create_auto_cdc_flow(target => 'bad_t', source => 'orders',
  keys => ARRAY['id'], sequence_by => 'seq', expect => '{"e": "amount + 1"}');
SELECT autocdc.create_auto_cdc_flow(target => 'bad_t', source => 'orders',
  keys => ARRAY['id'], sequence_by => 'seq', expect => '{"e": "random() < 0.5"}');
SELECT autocdc.create_auto_cdc_flow(target => 'bad_t', source => 'orders',
  keys => ARRAY['id'], sequence_by => 'seq', expect => '{"e": "count(*) > 0"}');
SELECT autocdc.create_auto_cdc_flow(target => 'bad_t', source => 'orders',
  keys => ARRAY['id'], sequence_by => 'seq', expect => '{"e": "row_number() OVER () > 0"}');
SELECT autocdc.create_auto_cdc_flow(target => 'bad_t', source => 'orders',
  keys => ARRAY['id'], sequence_by => 'seq', expect => '{"e": "generate_series(1, 2) > 0"}');
SELECT autocdc.create_auto_cdc_flow(target => 'bad_t', source => 'orders',
  keys => ARRAY['id'], sequence_by => 'seq', expect => '{"e": "no_such_column > 0"}');
SELECT autocdc.create_auto_cdc_flow(target => 'bad_t', source => 'orders',
  keys => ARRAY['id'], sequence_by => 'seq', expect => '{"e": "amount > (SELECT 1)"}');
SELECT autocdc.create_auto_cdc_flow(target => 'bad_t', source => 'orders',
  keys => ARRAY['id'], sequence_by => 'seq', expect => '["amount > 0"]');
SELECT autocdc.create_auto_cdc_flow(target => 'bad_t', source => 'orders',
  keys => ARRAY['id'], sequence_by => 'seq', expect => '{"e": 1}');
SELECT autocdc.create_auto_cdc_flow(target => 'bad_t', source => 'orders',
  keys => ARRAY['id'], sequence_by => 'seq', expect => '{"e": "amount > 0"}',
  expect_or_drop => '{"e": "amount > 1"}');
SELECT autocdc.create_auto_cdc_flow(target => 'bad_t', source => 'orders',
  keys => ARRAY['id'], sequence_by => 'seq', on_bad_event => 'ignore');
SELECT autocdc.add_expectation('orders_t', 'v', 'random() < 0.5');
SELECT autocdc.add_expectation('orders_t', 'v', 'amount');
SELECT count(*) FROM pg_class WHERE relname = 'bad_t';

-- A stable function is allowed; the condition is kept with its names
-- qualified, and a run that finds it resolving to something else refuses
-- the flow.
CREATE FUNCTION ok_status(s text) RETURNS boolean LANGUAGE sql STABLE
  AS $$ SELECT s <> 'bad' $$;
CREATE TABLE st (id int, s text, seq int);
SELECT autocdc.create_auto_cdc_flow(target => 'st_t', source => 'st',
  keys => ARRAY['id'], sequence_by => 'seq', pipeline => 'ex_st',
  expect_or_drop => '{"status_ok": "ok_status(s)"}');
SELECT condition FROM autocdc.expectations WHERE flow = 'st_t';
INSERT INTO st VALUES (1, 'good', 1), (2, 'bad', 1);
SELECT flow, rows_read, rows_upserted, rows_dropped, status FROM autocdc.run('ex_st');
TABLE st_t ORDER BY id;
CREATE FUNCTION ok_status(s varchar) RETURNS boolean LANGUAGE sql STABLE
  AS $$ SELECT true $$;
DROP FUNCTION ok_status(text);
SELECT flow, status, error FROM autocdc.run('ex_st');

-- Snapshot flows refuse expectations.
CREATE TABLE snap (id int, v text);
SELECT autocdc.create_auto_cdc_from_snapshot_flow(target => 'snap_t', keys => ARRAY['id'],
  source => 'snap', pipeline => 'ex_snap');
SELECT autocdc.add_expectation('snap_t', 'v', 'v IS NOT NULL');

-- SCD 2 with a drop expectation: the dropped version never appears.
CREATE TABLE h (id int, v text, seq int);
SELECT autocdc.create_auto_cdc_flow(target => 'h_t', source => 'h', keys => ARRAY['id'],
  sequence_by => 'seq', stored_as_scd_type => 2, pipeline => 'ex_h',
  expect_or_drop => '{"v_set": "v IS NOT NULL"}',
  expect_or_fail => '{"seq_small": "seq < 100"}');
INSERT INTO h VALUES (1, 'a', 1), (1, NULL, 2), (1, 'c', 3);
SELECT flow, rows_read, rows_upserted, rows_dropped, status FROM autocdc.run('ex_h');
SELECT id, v, __start_at, __end_at FROM h_t ORDER BY id, __start_at;
INSERT INTO h VALUES (2, 'x', 100);
SELECT flow, status, error FROM autocdc.run('ex_h');

-- Append flows: drop and warn, and fail naming the row by its first columns.
CREATE TABLE clicks (page text, ms int, at int);
SELECT autocdc.create_append_flow(target => 'clicks_t', source => 'clicks', pipeline => 'ex_a',
  expect => '{"fast": "ms < 100"}', expect_or_drop => '{"page_set": "page IS NOT NULL"}',
  expect_or_fail => '{"ms_positive": "ms >= 0"}');
SELECT options FROM autocdc.flows WHERE name = 'clicks_t';
INSERT INTO clicks VALUES ('a', 10, 1), ('b', 500, 2), (NULL, 5, 3), ('d', NULL, 4);
SELECT flow, rows_read, rows_upserted, rows_dropped, status FROM autocdc.run('ex_a');
TABLE clicks_t ORDER BY at;
SELECT reason, expectations, "row", key, sequence FROM autocdc.quarantine
  WHERE flow = 'clicks_t' ORDER BY id;
SELECT rows_read, rows_dropped, rows_quarantined, expectations
  FROM autocdc.event_log WHERE flow = 'clicks_t' ORDER BY id;
INSERT INTO clicks VALUES ('e', -1, 5);
SELECT flow, status, error FROM autocdc.run('ex_a');
TABLE clicks_t ORDER BY at;

-- A view is read whole (by a ONCE flow, and again by a full refresh): its
-- dropped row is quarantined once.
CREATE TABLE base (id int, v int, seq int);
CREATE VIEW base_v AS SELECT id, v, seq FROM base;
SELECT autocdc.create_auto_cdc_flow(target => 'v_t', source => 'base_v',
  keys => ARRAY['id'], sequence_by => 'seq', pipeline => 'ex_v', once => true,
  expect_or_drop => '{"v_positive": "v > 0"}');
INSERT INTO base VALUES (1, 1, 1), (2, -2, 1);
SELECT flow, rows_read, rows_upserted, rows_dropped, status FROM autocdc.run('ex_v');
SELECT flow, rows_read, rows_upserted, rows_dropped, status FROM autocdc.run('ex_v', full_refresh => true);
SELECT rows_read, rows_dropped, rows_quarantined FROM autocdc.event_log
  WHERE flow = 'v_t' ORDER BY id;
SELECT count(*) FROM autocdc.quarantine WHERE flow = 'v_t';
SELECT name, last_passed, last_failed, passed_total, failed_total
  FROM autocdc.expectations WHERE flow = 'v_t';
TABLE v_t ORDER BY id;

-- Dropping the flow drops its expectations; its quarantined rows stay
-- until the retention (README, Quarantine).
SELECT autocdc.drop_flow('v_t');
SELECT count(*) FROM autocdc.expectation WHERE flow = 'v_t';
SELECT count(*) FROM autocdc.quarantine WHERE flow = 'v_t';

DROP SCHEMA ex CASCADE;

-- Over a source query, conditions read the query's result (given at
-- creation or added later).
CREATE TABLE sq_ev (id int, v int, seq int, op text);
SELECT autocdc.create_auto_cdc_flow(target => 'sq_t', keys => ARRAY['id'], sequence_by => 'seq',
  source_query => 'SELECT id, v * 10 AS v10, seq FROM STREAM(sq_ev) WHERE op IS DISTINCT FROM ''skip''',
  expect_or_drop => '{"pos": "v10 > 0"}', pipeline => 'ex_sq');
INSERT INTO sq_ev VALUES (1, 1, 1, NULL), (2, -1, 1, NULL), (3, 20, 1, NULL), (4, 5, 1, 'skip');
SELECT flow, rows_read, rows_upserted, rows_dropped, status FROM autocdc.run('ex_sq');
TABLE sq_t ORDER BY id;
SELECT reason, expectations, "row" FROM autocdc.quarantine WHERE flow = 'sq_t';
SELECT autocdc.add_expectation('sq_t', 'not_twenty', 'v10 <> 20', 'fail');
SELECT autocdc.add_expectation('sq_t', 'bad', 'v > 0', 'warn');
INSERT INTO sq_ev VALUES (5, 2, 2, NULL);
SELECT flow, status, error FROM autocdc.run('ex_sq');
SELECT autocdc.drop_flow('sq_t');
DROP TABLE sq_t, sq_ev;
