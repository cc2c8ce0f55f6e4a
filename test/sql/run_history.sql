-- Manual runs in autocdc.run_history and autocdc.pipelines: each records
-- itself in the caller's transaction (a rolled-back or cancelled run leaves
-- nothing); empty runs stay out of the history unless
-- autocdc.log_empty_runs; a pipeline leased to a scheduled run is left to
-- it; other roles see none of it; old rows are pruned like the event log.
-- (Scheduled and interrupted runs: test/t/012_interrupted_runs.pl.)
-- Creates the extension when this file runs alone (make installcheck REGRESS=...).
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS autocdc;
RESET client_min_messages;
CREATE ROLE acdc_rh LOGIN;
CREATE ROLE acdc_rh_other LOGIN;
CREATE SCHEMA rh;
GRANT ALL ON SCHEMA rh TO acdc_rh;
SET ROLE acdc_rh;
SET search_path = rh, public;
CREATE TABLE src (id int, v text, seq int);
CREATE TABLE src2 (id int, v text, seq int);
SELECT autocdc.create_auto_cdc_flow(target => 'tgt', source => 'src', keys => ARRAY['id'],
  sequence_by => 'seq', name => 'rh_f', pipeline => 'rh');
SELECT autocdc.create_auto_cdc_flow(target => 'tgt2', source => 'src2', keys => ARRAY['id'],
  sequence_by => 'seq', name => 'rh_g', pipeline => 'rh2');
CREATE VIEW rh_pipeline AS
SELECT name, last_run_at IS NOT NULL AS ran, last_finished_at >= last_run_at AS finished_after,
       last_status, last_error, failures, next_run_at
  FROM autocdc.pipelines WHERE name LIKE 'rh%' ORDER BY name;
CREATE VIEW rh_history AS
SELECT pipeline, trigger, pid = pg_backend_pid() AS own_pid, status, rows_read, error, run_by,
       pipeline_owner, ended_at >= started_at AS ended_after,
       run_id = (SELECT max(e.run_id) FROM autocdc.event_log e WHERE e.pipeline = h.pipeline) AS logged_run
  FROM autocdc.run_history h WHERE pipeline LIKE 'rh%' ORDER BY run_id, pipeline;
SELECT * FROM rh_pipeline;
SELECT * FROM rh_history;

-- A run that reads rows: the pipeline's last run, and a history row whose
-- run id is its flows' in the event log.
INSERT INTO src VALUES (1, 'a', 1), (2, 'b', 1);
SELECT flow, rows_read, status FROM autocdc.run('rh');
SELECT * FROM rh_pipeline;
SELECT * FROM rh_history;

-- An empty run is the pipeline's last run, but stays out of the history ...
SELECT last_finished_at AS before FROM autocdc.pipelines WHERE name = 'rh' \gset
SELECT flow, rows_read, status FROM autocdc.run('rh');
SELECT last_finished_at > :'before' AS later FROM autocdc.pipelines WHERE name = 'rh';
SELECT count(*) AS history_rows FROM autocdc.run_history;
-- ... unless autocdc.log_empty_runs (superuser only).
RESET ROLE;
SET autocdc.log_empty_runs = on;
SET ROLE acdc_rh;
SELECT flow, rows_read, status FROM autocdc.run('rh');
RESET ROLE;
RESET autocdc.log_empty_runs;
SET ROLE acdc_rh;
SELECT * FROM rh_history;

-- A failed flow fails the pipeline's run, with the flows that failed.
INSERT INTO src VALUES (NULL, 'no key', 2);
SELECT flow, rows_read, status FROM autocdc.run('rh');
SELECT * FROM rh_pipeline;
SELECT status, rows_read, error FROM autocdc.run_history WHERE pipeline = 'rh' ORDER BY run_id DESC LIMIT 1;
DELETE FROM src WHERE id IS NULL;

-- A run of every pipeline: one history row per pipeline, one run id.
INSERT INTO src VALUES (3, 'c', 1);
INSERT INTO src2 VALUES (1, 'x', 1);
SELECT flow, rows_read, status FROM autocdc.run() ORDER BY flow;
SELECT * FROM rh_pipeline;
SELECT count(DISTINCT run_id) AS run_ids, count(*) AS rows_of_the_last_run
  FROM autocdc.run_history
 WHERE run_id = (SELECT max(run_id) FROM autocdc.run_history);

-- A manual run rolled back leaves nothing: it wrote in its caller's
-- transaction.  So does one cancelled by statement_timeout.
SELECT count(*) AS history_rows FROM autocdc.run_history \gset
SELECT last_finished_at AS before FROM autocdc.pipelines WHERE name = 'rh' \gset
INSERT INTO src VALUES (4, 'd', 1);
BEGIN;
SELECT flow, rows_read, status FROM autocdc.run('rh');
ROLLBACK;
CREATE FUNCTION rh.slow(s int) RETURNS int LANGUAGE plpgsql
  AS 'BEGIN PERFORM pg_sleep(10); RETURN s; END';
SELECT autocdc.create_auto_cdc_flow(target => 'tgt3', source => 'src', keys => ARRAY['id'],
  sequence_by => 'rh.slow(seq)', name => 'rh_slow', pipeline => 'rh_slow');
-- Where the timeout lands (CONTEXT) depends on the machine's speed (under
-- valgrind it can be before the slow function): only the error is shown.
SET statement_timeout = '200ms';
\set VERBOSITY terse
SELECT flow, rows_read, status FROM autocdc.run('rh_slow');
\set VERBOSITY default
RESET statement_timeout;
SELECT count(*) = :history_rows AS no_history_row FROM autocdc.run_history;
SELECT last_finished_at = :'before' AS unchanged FROM autocdc.pipelines WHERE name = 'rh';
SELECT * FROM rh_pipeline WHERE name = 'rh_slow';
SELECT count(*) AS log_rows FROM autocdc.event_log WHERE pipeline = 'rh_slow';
SELECT autocdc.drop_flow('rh_slow');

-- A pipeline leased to a scheduled run ('running') is left to that run:
-- the manual run is in the history only.
RESET ROLE;
UPDATE autocdc.pipeline SET last_status = 'running', last_error = NULL WHERE name = 'rh';
SET ROLE acdc_rh;
SELECT flow, rows_read, status FROM autocdc.run('rh');
SELECT name, last_status, last_error FROM autocdc.pipelines WHERE name = 'rh';
SELECT trigger, status, rows_read FROM autocdc.run_history WHERE pipeline = 'rh' ORDER BY run_id DESC LIMIT 1;
RESET ROLE;
UPDATE autocdc.pipeline SET last_status = 'success' WHERE name = 'rh';

-- Another role sees none of it and can change none of it.
SET ROLE acdc_rh_other;
SELECT count(*) AS visible FROM autocdc.run_history;
DELETE FROM autocdc.run_history;
RESET ROLE;

-- Rows older than autocdc.event_log_retention are pruned by the next run
-- (the one that prunes them included, which is younger).
UPDATE autocdc.run_history SET started_at = started_at - interval '8 days' WHERE pipeline = 'rh';
SET ROLE acdc_rh;
INSERT INTO src VALUES (5, 'e', 1);
SELECT flow, rows_read, status FROM autocdc.run('rh');
SELECT pipeline, status, rows_read FROM autocdc.run_history WHERE pipeline LIKE 'rh%' ORDER BY run_id, pipeline;

RESET ROLE;
RESET search_path;
SELECT autocdc.drop_flow('rh_f');
SELECT autocdc.drop_flow('rh_g');
DROP SCHEMA rh CASCADE;
DELETE FROM autocdc.run_history WHERE pipeline LIKE 'rh%';
DELETE FROM autocdc.event_log WHERE pipeline LIKE 'rh%';
DELETE FROM autocdc.pipeline WHERE name LIKE 'rh%';
DROP ROLE acdc_rh;
DROP ROLE acdc_rh_other;
