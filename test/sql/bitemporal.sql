-- Bitemporal targets: business time (sequence_by) and system time
-- (system_sequence_by), order independent on both axes.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS autocdc;
RESET client_min_messages;
CREATE SCHEMA bt;
SET search_path = bt, public;

-- The reference example (reference §4.1): company A, one event per run.
CREATE TABLE quotes_cdc (company text, value text, business_ts time, system_ts time, op text);
SELECT autocdc.create_auto_cdc_flow(
  target => 'quotes', source => 'quotes_cdc', keys => ARRAY['company'],
  sequence_by => 'business_ts', system_sequence_by => 'system_ts',
  apply_as_deletes => $$op = 'DELETE'$$,
  except_column_list => ARRAY['business_ts', 'system_ts', 'op'],
  stored_as_scd_type => 'bitemporal', pipeline => 'bt_ref');
\d quotes
SELECT name, scd_type, stored_as, system_sequence_by FROM autocdc.flows WHERE name = 'quotes';
CREATE VIEW quotes_rows AS
  SELECT value, __start_at, __end_at, __system_start_at, __system_end_at FROM quotes
  ORDER BY __system_start_at, __start_at;
INSERT INTO quotes_cdc VALUES ('A', 'XFv1', '10:01:00', '10:05:00', 'INSERT');
SELECT rows_read, rows_upserted, rows_deleted, status FROM autocdc.run('bt_ref');
SELECT * FROM quotes_rows;
INSERT INTO quotes_cdc VALUES ('A', 'XFv2', '12:15:43', '12:20:00', 'UPDATE');
SELECT rows_read, rows_upserted, rows_deleted, status FROM autocdc.run('bt_ref');
SELECT * FROM quotes_rows;
-- late in business time: only the interval that was split gets a new belief
INSERT INTO quotes_cdc VALUES ('A', 'XFv3', '12:05:00', '12:25:00', 'UPDATE');
SELECT rows_read, rows_upserted, rows_deleted, status FROM autocdc.run('bt_ref');
SELECT * FROM quotes_rows;
-- the delete ends the history at its business time and opens no version
INSERT INTO quotes_cdc VALUES ('A', 'XFv2', '12:30:00', '12:30:00', 'DELETE');
SELECT rows_read, rows_upserted, rows_deleted, status FROM autocdc.run('bt_ref');
SELECT * FROM quotes_rows;
-- a run that reads nothing new changes nothing
SELECT rows_read, rows_upserted, rows_deleted, status FROM autocdc.run('bt_ref');

-- The same four events in one run, in another order, give the same six rows.
CREATE TABLE quotes_cdc2 (LIKE quotes_cdc);
SELECT autocdc.create_auto_cdc_flow(
  target => 'quotes2', source => 'quotes_cdc2', keys => ARRAY['company'],
  sequence_by => 'business_ts', system_sequence_by => 'system_ts',
  apply_as_deletes => $$op = 'DELETE'$$,
  except_column_list => ARRAY['business_ts', 'system_ts', 'op'],
  stored_as_scd_type => 'bitemporal', pipeline => 'bt_ref2');
INSERT INTO quotes_cdc2 (company, value, business_ts, system_ts, op) SELECT company, value, business_ts, system_ts, op FROM quotes_cdc ORDER BY system_ts DESC;
SELECT rows_read, rows_upserted, rows_deleted, status FROM autocdc.run('bt_ref2');
(SELECT value, __start_at, __end_at, __system_start_at, __system_end_at FROM quotes2
 EXCEPT SELECT * FROM quotes_rows)
UNION ALL
(SELECT * FROM quotes_rows
 EXCEPT SELECT value, __start_at, __end_at, __system_start_at, __system_end_at FROM quotes2);
-- ... and so do they in reverse system order, one per run
CREATE TABLE quotes_cdc3 (LIKE quotes_cdc);
SELECT autocdc.create_auto_cdc_flow(
  target => 'quotes3', source => 'quotes_cdc3', keys => ARRAY['company'],
  sequence_by => 'business_ts', system_sequence_by => 'system_ts',
  apply_as_deletes => $$op = 'DELETE'$$,
  except_column_list => ARRAY['business_ts', 'system_ts', 'op'],
  stored_as_scd_type => 'bitemporal', pipeline => 'bt_ref3');
INSERT INTO quotes_cdc3 (company, value, business_ts, system_ts, op) SELECT company, value, business_ts, system_ts, op FROM quotes_cdc WHERE system_ts = '12:30:00';
SELECT rows_read, rows_upserted, rows_deleted, status FROM autocdc.run('bt_ref3');
SELECT value, __start_at, __end_at, __system_start_at, __system_end_at FROM quotes3 ORDER BY 4, 2;
INSERT INTO quotes_cdc3 (company, value, business_ts, system_ts, op) SELECT company, value, business_ts, system_ts, op FROM quotes_cdc WHERE system_ts = '12:25:00';
SELECT rows_read, rows_upserted, rows_deleted, status FROM autocdc.run('bt_ref3');
INSERT INTO quotes_cdc3 (company, value, business_ts, system_ts, op) SELECT company, value, business_ts, system_ts, op FROM quotes_cdc WHERE system_ts = '12:20:00';
SELECT rows_read, rows_upserted, rows_deleted, status FROM autocdc.run('bt_ref3');
-- the late system events rewrote rows: history is reproducible from the events
INSERT INTO quotes_cdc3 (company, value, business_ts, system_ts, op) SELECT company, value, business_ts, system_ts, op FROM quotes_cdc WHERE system_ts = '10:05:00';
SELECT rows_read, rows_upserted, rows_deleted, status FROM autocdc.run('bt_ref3');
SELECT count(*) FROM (
  (SELECT value, __start_at, __end_at, __system_start_at, __system_end_at FROM quotes3
   EXCEPT SELECT * FROM quotes_rows)
  UNION ALL
  (SELECT * FROM quotes_rows
   EXCEPT SELECT value, __start_at, __end_at, __system_start_at, __system_end_at FROM quotes3)) d;

-- The three-status example (reference §4.1, TORTURE s09): five rows.
CREATE TABLE acct_cdc (customer_id int, status text, source_updated_at time, ingested_at time);
INSERT INTO acct_cdc VALUES (42, 'PENDING', '10:00', '10:01'), (42, 'ACTIVE', '10:02', '10:03'),
  (42, 'SUSPENDED', '10:04', '10:05');
SELECT autocdc.create_auto_cdc_flow(
  target => 'acct', source => 'acct_cdc', keys => ARRAY['customer_id'],
  sequence_by => 'source_updated_at', system_sequence_by => 'ingested_at',
  column_list => ARRAY['status'], stored_as_scd_type => 'bitemporal', pipeline => 'bt_s09');
SELECT rows_read, rows_upserted, rows_deleted, status FROM autocdc.run('bt_s09');
SELECT status, __start_at, __end_at, __system_start_at, __system_end_at FROM acct ORDER BY __start_at, __system_start_at;

-- as_of: what was believed at a system time about a business time;
-- history_as_of: the history as believed at a system time.
SELECT value, __start_at, __end_at FROM autocdc.as_of(NULL::quotes, '12:10', '12:22');
SELECT value, __start_at, __end_at FROM autocdc.as_of(NULL::quotes, '12:10', '12:26');
SELECT value, __start_at, __end_at FROM autocdc.as_of(NULL::quotes, '12:10');
SELECT value, __start_at, __end_at FROM autocdc.as_of(NULL::quotes, '12:31');
SELECT value, __start_at, __end_at FROM autocdc.as_of(NULL::quotes, '12:31', '12:29');
SELECT value, __start_at, __end_at FROM autocdc.as_of(NULL::quotes, '10:00', '12:29');
SELECT value, __start_at, __end_at FROM autocdc.history_as_of(NULL::quotes, '10:04') ORDER BY 2;
SELECT value, __start_at, __end_at FROM autocdc.history_as_of(NULL::quotes, '10:05') ORDER BY 2;
SELECT value, __start_at, __end_at FROM autocdc.history_as_of(NULL::quotes, '12:22') ORDER BY 2;
SELECT value, __start_at, __end_at FROM autocdc.history_as_of(NULL::quotes, '12:25') ORDER BY 2;
SELECT value, __start_at, __end_at FROM autocdc.history_as_of(NULL::quotes, '23:00') ORDER BY 2;
-- inlined: a condition on the key reaches the target's indexes
SET enable_seqscan = off;
EXPLAIN (COSTS OFF) SELECT * FROM autocdc.as_of(NULL::quotes, '12:10') WHERE company = 'A';
EXPLAIN (COSTS OFF) SELECT * FROM autocdc.as_of(NULL::quotes, '12:10', '12:22') WHERE company = 'A';
EXPLAIN (COSTS OFF) SELECT * FROM autocdc.history_as_of(NULL::quotes, '12:22') WHERE company = 'A';
RESET enable_seqscan;

-- Corrections: a later system time at the same business time replaces the
-- event it corrects (whole, with ignore_null_updates: inheritance then in
-- business order); a composite key; deletes; no-op repeats.
CREATE TABLE corr_cdc (region text, id int, price int, note text, b int, s int, op text);
SELECT autocdc.create_auto_cdc_flow(
  target => 'corr', source => 'corr_cdc', keys => ARRAY['region', 'id'],
  sequence_by => 'b', system_sequence_by => 's', apply_as_deletes => $$op = 'D'$$,
  column_list => ARRAY['price', 'note'], ignore_null_updates => true,
  stored_as_scd_type => 'bitemporal', pipeline => 'bt_corr');
INSERT INTO corr_cdc VALUES ('eu', 1, 10, 'first', 1, 100, 'U'), ('eu', 1, 20, NULL, 2, 100, 'U'),
  ('us', 1, 5, 'x', 1, 100, 'U');
SELECT rows_read, rows_upserted, rows_deleted, status FROM autocdc.run('bt_corr');
-- the correction of (eu, 1) at business 1 sets note; business 2 inherits it from then on
INSERT INTO corr_cdc VALUES ('eu', 1, 11, 'fixed', 1, 200, 'U');
-- a no-op repeat changes nothing; a delete of us/1 at business 3
INSERT INTO corr_cdc VALUES ('eu', 1, 20, NULL, 2, 100, 'U'), ('us', 1, NULL, NULL, 3, 300, 'D');
SELECT rows_read, rows_upserted, rows_deleted, rows_skipped, status FROM autocdc.run('bt_corr');
SELECT region, id, price, note, __start_at, __end_at, __system_start_at, __system_end_at
  FROM corr ORDER BY 1, 2, 5, 7;
-- a late event in system time (150) falls between beliefs 100 and 200: rows it
-- falls in are rewritten so that the rule holds again
INSERT INTO corr_cdc VALUES ('eu', 1, 15, 'mid', 1, 150, 'U');
SELECT rows_read, rows_upserted, rows_deleted, status FROM autocdc.run('bt_corr');
SELECT region, id, price, note, __start_at, __end_at, __system_start_at, __system_end_at
  FROM corr WHERE region = 'eu' ORDER BY 5, 7;
-- a correction that turns an upsert into a delete
INSERT INTO corr_cdc VALUES ('eu', 1, NULL, NULL, 2, 400, 'D');
SELECT rows_read, rows_upserted, rows_deleted, status FROM autocdc.run('bt_corr');
SELECT price, note, __start_at, __end_at FROM autocdc.as_of(NULL::corr, 5) WHERE region = 'eu';
SELECT price, note, __start_at, __end_at FROM autocdc.history_as_of(NULL::corr, 399) WHERE region = 'eu' ORDER BY 3;
SELECT price, note, __start_at, __end_at FROM autocdc.history_as_of(NULL::corr, 400) WHERE region = 'eu' ORDER BY 3;
-- two different events at one key, business and system sequence: the bad-input error
INSERT INTO corr_cdc VALUES ('eu', 2, 1, 'a', 1, 100, 'U'), ('eu', 2, 2, 'b', 1, 100, 'U');
SELECT rows_read, status, error FROM autocdc.run('bt_corr');
DELETE FROM corr_cdc WHERE region = 'eu' AND id = 2;
-- a NULL system sequence too
INSERT INTO corr_cdc VALUES ('eu', 3, 1, 'a', 1, NULL, 'U');
SELECT rows_read, status, error FROM autocdc.run('bt_corr');
DELETE FROM corr_cdc WHERE region = 'eu' AND id = 3;

-- Full refresh gives the same table.
CREATE TABLE corr_before AS SELECT * FROM corr;
CALL autocdc.refresh('bt_corr', full_refresh => true);
SELECT name, last_status, last_rows_read FROM autocdc.flows WHERE pipeline = 'bt_corr';
SELECT count(*) FROM ((TABLE corr EXCEPT TABLE corr_before) UNION ALL (TABLE corr_before EXCEPT TABLE corr)) d;

-- Several flows into one target, agreeing on keys and both sequence types.
CREATE TABLE corr_cdc_b (LIKE corr_cdc);
SELECT autocdc.create_auto_cdc_flow(
  target => 'corr', source => 'corr_cdc_b', keys => ARRAY['region', 'id'],
  sequence_by => 'b', system_sequence_by => 's', apply_as_deletes => $$op = 'D'$$,
  column_list => ARRAY['price', 'note'], stored_as_scd_type => 'bitemporal',
  pipeline => 'bt_corr', name => 'corr_b');
INSERT INTO corr_cdc_b VALUES ('jp', 9, 1, 'from b', 1, 100, 'U');
SELECT flow, rows_read, rows_upserted, status FROM autocdc.run('bt_corr') ORDER BY flow;
SELECT region, id, price, note FROM autocdc.as_of(NULL::corr, 1) ORDER BY 1, 2;
SELECT autocdc.create_auto_cdc_flow(
  target => 'corr', source => 'corr_cdc_b', keys => ARRAY['region', 'id'],
  sequence_by => 'b', system_sequence_by => 's::bigint', stored_as_scd_type => 'bitemporal',
  column_list => ARRAY['price', 'note'],
  pipeline => 'bt_corr', name => 'corr_c');
SELECT autocdc.create_auto_cdc_flow(
  target => 'corr', source => 'corr_cdc_b', keys => ARRAY['region', 'id'],
  sequence_by => 'b', stored_as_scd_type => 2, pipeline => 'bt_corr', name => 'corr_d',
  column_list => ARRAY['price', 'note']);

-- A ONCE backfill beside a live flow, and bad input set aside with
-- on_bad_event => 'quarantine'.
CREATE TABLE hist_old (id int, v text, b int, s int);
INSERT INTO hist_old VALUES (1, 'old', 1, 1), (2, 'old', 1, 1);
CREATE TABLE hist_live (id int, v text, b int, s int);
SELECT autocdc.create_auto_cdc_flow(target => 'hist', source => 'hist_old', keys => ARRAY['id'],
  sequence_by => 'b', system_sequence_by => 's', stored_as_scd_type => 'bitemporal', once => true,
  column_list => ARRAY['v'], pipeline => 'bt_hist', name => 'hist_backfill');
SELECT autocdc.create_auto_cdc_flow(target => 'hist', source => 'hist_live', keys => ARRAY['id'],
  sequence_by => 'b', system_sequence_by => 's', stored_as_scd_type => 'bitemporal',
  column_list => ARRAY['v'], on_bad_event => 'quarantine', pipeline => 'bt_hist', name => 'hist_live');
INSERT INTO hist_live VALUES (1, 'new', 2, 2), (2, 'bad', 2, NULL), (2, 'x', 3, 3), (2, 'y', 3, 3);
SELECT flow, rows_read, rows_upserted, rows_deleted, status FROM autocdc.run('bt_hist') ORDER BY flow;
SELECT flow, rows_read, status FROM autocdc.run('bt_hist') ORDER BY flow;
SELECT id, v, __start_at, __end_at, __system_start_at, __system_end_at FROM hist ORDER BY 1, 3, 5;
SELECT reason, "row"->>'v' AS v FROM autocdc.quarantine WHERE flow = 'hist_live' ORDER BY 2;

-- The overload forms: int 1/2, text '1'/'2'/'bitemporal', and leaving it out.
CREATE TABLE ov_src (id int, v text, b int, s int);
SELECT autocdc.create_auto_cdc_flow(target => 'ov0', source => 'ov_src', keys => ARRAY['id'], sequence_by => 'b', pipeline => 'bt_ov');
SELECT autocdc.create_auto_cdc_flow(target => 'ov1', source => 'ov_src', keys => ARRAY['id'], sequence_by => 'b', stored_as_scd_type => 1, pipeline => 'bt_ov');
SELECT autocdc.create_auto_cdc_flow(target => 'ov2', source => 'ov_src', keys => ARRAY['id'], sequence_by => 'b', stored_as_scd_type => 2, pipeline => 'bt_ov');
SELECT autocdc.create_auto_cdc_flow(target => 'ov3', source => 'ov_src', keys => ARRAY['id'], sequence_by => 'b', stored_as_scd_type => '1', pipeline => 'bt_ov');
SELECT autocdc.create_auto_cdc_flow(target => 'ov4', source => 'ov_src', keys => ARRAY['id'], sequence_by => 'b', stored_as_scd_type => '2', pipeline => 'bt_ov');
SELECT autocdc.create_auto_cdc_flow(target => 'ov5', source => 'ov_src', keys => ARRAY['id'], sequence_by => 'b', stored_as_scd_type => 'BITEMPORAL', system_sequence_by => 's', pipeline => 'bt_ov');
SELECT autocdc.create_auto_cdc_flow('ov6', source => 'ov_src', keys => ARRAY['id'], sequence_by => 'b', stored_as_scd_type => 'bitemporal', system_sequence_by => 's', pipeline => 'bt_ov');
SELECT name, scd_type, stored_as, system_sequence_by, options->'stored_as_scd_type' AS given
  FROM autocdc.flows WHERE pipeline = 'bt_ov' ORDER BY name;

-- Refusals.
SELECT autocdc.create_auto_cdc_flow(target => 'bad1', source => 'ov_src', keys => ARRAY['id'], sequence_by => 'b', stored_as_scd_type => 'bitemporal');
SELECT autocdc.create_auto_cdc_flow(target => 'bad2', source => 'ov_src', keys => ARRAY['id'], sequence_by => 'b', stored_as_scd_type => 2, system_sequence_by => 's');
SELECT autocdc.create_auto_cdc_flow(target => 'bad3', source => 'ov_src', keys => ARRAY['id'], sequence_by => 'b', stored_as_scd_type => 'scd2');
SELECT autocdc.create_auto_cdc_flow(target => 'bad4', source => 'ov_src', keys => ARRAY['id'], sequence_by => 'b', system_sequence_by => 's', stored_as_scd_type => 'bitemporal', apply_as_truncates => 'false');
SELECT autocdc.create_auto_cdc_flow(target => 'bad5', source => 'ov_src', keys => ARRAY['id'], sequence_by => 'b', system_sequence_by => 's', stored_as_scd_type => 'bitemporal', track_history_column_list => ARRAY['v']);
SELECT autocdc.create_auto_cdc_flow(target => 'bad6', source => 'ov_src', keys => ARRAY['id'], sequence_by => 'ROW(b, s)', system_sequence_by => 's', stored_as_scd_type => 'bitemporal');
SELECT autocdc.create_auto_cdc_from_snapshot_flow(target => 'ov5', source => 'ov_src', keys => ARRAY['id'], name => 'bad7');
SELECT autocdc.create_auto_cdc_flow(target => 'ov2', source => 'ov_src', keys => ARRAY['id'], sequence_by => 'b', system_sequence_by => 's', stored_as_scd_type => 'bitemporal', name => 'bad8');
CREATE TABLE bad9 (id int PRIMARY KEY, v text, __start_at int, __end_at int);
SELECT autocdc.create_auto_cdc_flow(target => 'bad9', source => 'ov_src', keys => ARRAY['id'], sequence_by => 'b', system_sequence_by => 's', stored_as_scd_type => 'bitemporal', column_list => ARRAY['v']);
SELECT autocdc.compact('ov5', '1');

-- The dialect: STORED AS BITEMPORAL and SYSTEM SEQUENCE BY; flow_ddl round-trips it.
CREATE TABLE dl_src (id int, v text, b int, s int, op text);
SELECT autocdc.execute($$
CREATE FLOW dl_bt AS AUTO CDC INTO dl_t FROM STREAM(dl_src)
  KEYS (id) APPLY AS DELETE WHEN op = 'D' SEQUENCE BY b SYSTEM SEQUENCE BY s
  COLUMNS * EXCEPT (op, b, s) STORED AS BITEMPORAL$$, pipeline => 'bt_dl');
SELECT autocdc.flow_ddl('dl_bt');
SELECT name, stored_as, system_sequence_by FROM autocdc.flows WHERE name = 'dl_bt';
INSERT INTO dl_src VALUES (1, 'a', 1, 1, 'U'), (1, 'b', 2, 2, 'U');
SELECT rows_read, rows_upserted, status FROM autocdc.run('bt_dl');
SELECT id, v, __start_at, __end_at, __system_start_at, __system_end_at FROM dl_t ORDER BY 3, 5;
SELECT autocdc.flow_ddl('ov6');
SELECT autocdc.execute($$CREATE FLOW dl_bad AS AUTO CDC INTO dl_t2 FROM STREAM(dl_src)
  KEYS (id) SEQUENCE BY b STORED AS SCD TYPE BITEMPORAL$$);

DROP SCHEMA bt CASCADE;
