-- Bounded bookkeeping: empty runs stay out of the event log, each flow's
-- last run and running totals are kept in its checkpoint row (shown by
-- autocdc.flows), and log rows older than autocdc.event_log_retention are
-- pruned by runs, a bounded number at a time, while the totals stay.
-- Creates the extension when this file runs alone (make installcheck REGRESS=...).
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS autocdc;
RESET client_min_messages;
CREATE SCHEMA bk;
SET search_path = bk, public;
SHOW autocdc.log_empty_runs;
SHOW autocdc.event_log_retention;
CREATE TABLE src (id int, v text, op text, seq int);
SELECT autocdc.create_auto_cdc_flow(target => 'tgt', source => 'src', keys => ARRAY['id'],
  sequence_by => 'seq', apply_as_deletes => $$op = 'D'$$, except_column_list => ARRAY['op', 'seq'],
  name => 'bk_f', pipeline => 'bk');

-- What a flow's bookkeeping looks like in autocdc.flows.
CREATE VIEW bk_flow AS
SELECT last_status, last_error, last_rows_read, runs, rows_read_total, rows_upserted_total,
       rows_deleted_total, rows_skipped_total, failures_total
  FROM autocdc.flows WHERE name = 'bk_f';
SELECT string_agg(attname, ', ' ORDER BY attnum) AS last_columns_of_autocdc_flows
  FROM pg_attribute WHERE attrelid = 'autocdc.flows'::regclass AND attnum > 16;
SELECT (SELECT last_run_at IS NULL FROM autocdc.flows WHERE name = 'bk_f') AS never_ran, * FROM bk_flow;

-- A run that reads rows is logged; an empty one is not, but it is still
-- the flow's last run.
INSERT INTO src VALUES (1, 'a', 'U', 1), (2, 'b', 'U', 1), (1, 'a2', 'U', 2);
SELECT rows_read, rows_upserted, rows_deleted, rows_skipped, status FROM autocdc.run('bk');
SELECT rows_read, rows_upserted, rows_deleted, rows_skipped, status FROM autocdc.run('bk');
SELECT rows_read, rows_upserted, status FROM autocdc.event_log WHERE pipeline = 'bk' ORDER BY id;
SELECT * FROM bk_flow;
SELECT f.last_run_at > (SELECT max(logged_at) FROM autocdc.event_log WHERE flow = 'bk_f')
         AS last_run_after_the_last_logged
  FROM autocdc.flows f WHERE f.name = 'bk_f';

-- autocdc.log_empty_runs = on logs them again (superuser only).
SET autocdc.log_empty_runs = on;
SELECT rows_read, status FROM autocdc.run('bk');
RESET autocdc.log_empty_runs;
SELECT rows_read, status FROM autocdc.event_log WHERE pipeline = 'bk' ORDER BY id;

-- Deletes, late events and a failed run add up too.
INSERT INTO src VALUES (2, NULL, 'D', 2), (1, 'late', 'U', 1), (3, 'c', 'U', 1);
SELECT rows_read, rows_upserted, rows_deleted, rows_skipped, status FROM autocdc.run('bk');
INSERT INTO src VALUES (NULL, 'no key', 'U', 3);
SELECT rows_read, rows_upserted, rows_deleted, rows_skipped, status FROM autocdc.run('bk');
SELECT * FROM bk_flow;
DELETE FROM src WHERE id IS NULL;
INSERT INTO src VALUES (4, 'd', 'U', 1);
SELECT rows_read, rows_upserted, rows_deleted, rows_skipped, status FROM autocdc.run('bk');
SELECT * FROM tgt ORDER BY id;
SELECT * FROM bk_flow;
-- Nothing is pruned yet: the totals are those of the log, but for the
-- empty runs it left out.
SELECT f.rows_read_total = sum(e.rows_read) AS read, f.rows_upserted_total = sum(e.rows_upserted) AS upserted,
       f.rows_deleted_total = sum(e.rows_deleted) AS deleted, f.rows_skipped_total = sum(e.rows_skipped) AS skipped,
       f.failures_total = count(*) FILTER (WHERE e.status = 'failed') AS failures,
       f.runs - count(*) AS runs_not_logged
  FROM autocdc.flows f JOIN autocdc.event_log e ON e.flow = f.name
 WHERE f.name = 'bk_f' GROUP BY f.runs, f.rows_read_total, f.rows_upserted_total,
       f.rows_deleted_total, f.rows_skipped_total, f.failures_total;

-- A ONCE flow's later runs are skipped: empty, so not logged either.
CREATE TABLE once_src (id int, v text);
INSERT INTO once_src VALUES (1, 'x'), (2, 'y');
SELECT autocdc.create_append_flow(target => 'once_tgt', source => 'once_src', name => 'bk_once',
  once => true, pipeline => 'bk_once');
SELECT rows_read, status FROM autocdc.run('bk_once');
SELECT rows_read, status FROM autocdc.run('bk_once');
SELECT flow, rows_read, status FROM autocdc.event_log WHERE pipeline = 'bk_once' ORDER BY id;
SELECT last_status, last_rows_read, runs, rows_read_total FROM autocdc.flows WHERE name = 'bk_once';

-- Only a superuser may change the retention.
CREATE ROLE acdc_erin;
SET ROLE acdc_erin;
SET autocdc.event_log_retention = '1d';
SET autocdc.log_empty_runs = on;
RESET ROLE;
DROP ROLE acdc_erin;

-- Retention: rows older than it are pruned by the next run; -1 keeps them.
UPDATE autocdc.event_log SET logged_at = logged_at - interval '8 days'
 WHERE pipeline = 'bk' AND status = 'failed';
SET autocdc.event_log_retention = -1;
SELECT rows_read, status FROM autocdc.run('bk');
SELECT status, count(*) FROM autocdc.event_log WHERE pipeline = 'bk' GROUP BY 1 ORDER BY 1;
RESET autocdc.event_log_retention;
SELECT rows_read, status FROM autocdc.run('bk');
SELECT status, count(*) FROM autocdc.event_log WHERE pipeline = 'bk' GROUP BY 1 ORDER BY 1;
-- The flow's totals, failures included, outlive its rows.
SELECT * FROM bk_flow;

-- A shorter retention (a value with a unit) prunes more.
UPDATE autocdc.event_log SET logged_at = logged_at - interval '3 hours' WHERE pipeline = 'bk';
SET autocdc.event_log_retention = '2h';
SELECT rows_read, status FROM autocdc.run('bk');
SELECT count(*) AS bk_rows_left FROM autocdc.event_log WHERE pipeline = 'bk';
RESET autocdc.event_log_retention;

-- A run prunes at most 1000 rows, the oldest first: a backlog goes in steps.
INSERT INTO autocdc.event_log (logged_at, run_id, pipeline, flow, target, kind, read_mode,
                               full_refresh, status, duration, run_by, flow_owner, pipeline_owner)
SELECT timestamptz '2000-01-01 00:00:00+00' + i * interval '1 second', 0, 'bk_old', 'bk_old', 'bk.tgt',
       'auto_cdc', 'incremental', false, 'success', '0', 'postgres', 'postgres', 'postgres'
  FROM generate_series(1, 1500) i;
SELECT rows_read, status FROM autocdc.run('bk');
SELECT count(*) AS left, min(logged_at) = timestamptz '2000-01-01 00:00:00+00' + interval '1001 seconds' AS oldest_went_first
  FROM autocdc.event_log WHERE pipeline = 'bk_old';
SELECT rows_read, status FROM autocdc.run('bk');
SELECT count(*) AS left FROM autocdc.event_log WHERE pipeline = 'bk_old';

-- Totals of a dropped flow go with it.
SELECT autocdc.drop_flow('bk_once');
SELECT count(*) FROM autocdc.checkpoint WHERE flow = 'bk_once';

DROP VIEW bk_flow;
RESET search_path;
