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
INSERT INTO quotes_cdc2 SELECT * FROM quotes_cdc ORDER BY system_ts DESC;
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
INSERT INTO quotes_cdc3 SELECT * FROM quotes_cdc WHERE system_ts = '12:30:00';
SELECT rows_read, rows_upserted, rows_deleted, status FROM autocdc.run('bt_ref3');
SELECT value, __start_at, __end_at, __system_start_at, __system_end_at FROM quotes3 ORDER BY 4, 2;
INSERT INTO quotes_cdc3 SELECT * FROM quotes_cdc WHERE system_ts = '12:25:00';
SELECT rows_read, rows_upserted, rows_deleted, status FROM autocdc.run('bt_ref3');
INSERT INTO quotes_cdc3 SELECT * FROM quotes_cdc WHERE system_ts = '12:20:00';
SELECT rows_read, rows_upserted, rows_deleted, status FROM autocdc.run('bt_ref3');
-- the late system events rewrote rows: history is reproducible from the events
INSERT INTO quotes_cdc3 SELECT * FROM quotes_cdc WHERE system_ts = '10:05:00';
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
