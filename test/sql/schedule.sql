-- Scheduling, and what each role may see and do.  (The worker itself is
-- tested in test/t/001_worker.pl; this database is not in
-- autocdc.databases, so nothing here runs by itself.)
-- Creates the extension when this file runs alone (make installcheck REGRESS=...).
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS autocdc;
RESET client_min_messages;
CREATE ROLE acdc_carol LOGIN;
CREATE ROLE acdc_dave LOGIN;
CREATE ROLE acdc_nologin NOLOGIN;
CREATE SCHEMA sch;
GRANT ALL ON SCHEMA sch TO acdc_carol, acdc_dave, acdc_nologin;

SET ROLE acdc_carol;
CREATE TABLE sch.carol_src (id int, v text, seq int);
SELECT autocdc.create_auto_cdc_flow(target => 'sch.carol_tgt', source => 'sch.carol_src',
  keys => ARRAY['id'], sequence_by => 'seq', pipeline => 'carol');
INSERT INTO sch.carol_src VALUES (1, 'a', 1);
SELECT count(*) FROM autocdc.run('carol');
SELECT autocdc.schedule('carol', '5 minutes');
SELECT name, owner, schedule, next_run_at IS NOT NULL AS due, last_status, flows FROM autocdc.pipelines;
SELECT autocdc.schedule('carol', '-1 second');
SELECT autocdc.schedule('carol', '101 years');
RESET ROLE;

SET ROLE acdc_dave;
-- Dave sees none of Carol's pipeline, flows, checkpoints, targets or log ...
SELECT count(*) AS pipelines FROM autocdc.pipelines;
SELECT count(*) AS flows FROM autocdc.flows;
SELECT count(*) AS checkpoints FROM autocdc.checkpoint;
SELECT count(*) AS targets FROM autocdc.target;
SELECT count(*) AS log_rows FROM autocdc.event_log;
-- ... and can change none of it.
SELECT autocdc.schedule('carol', '1 minute');
SELECT autocdc.unschedule('carol');
SELECT * FROM autocdc.run('carol');
SELECT autocdc.drop_flow('sch.carol_tgt');
UPDATE autocdc.pipeline SET schedule = '1 second';
SELECT autocdc.schedule('no_such_pipeline', '1 minute');
RESET ROLE;

-- A pipeline whose owner cannot log in cannot be scheduled: runs act as the owner.
SET ROLE acdc_nologin;
CREATE TABLE sch.nl_src (id int, v text, seq int);
SELECT autocdc.create_auto_cdc_flow(target => 'sch.nl_tgt', source => 'sch.nl_src',
  keys => ARRAY['id'], sequence_by => 'seq', pipeline => 'nologin');
SELECT autocdc.schedule('nologin', '1 minute');
RESET ROLE;

-- A superuser sees every pipeline; Carol unschedules hers.
SELECT name, owner, schedule FROM autocdc.pipelines WHERE name IN ('carol', 'nologin') ORDER BY name;
SET ROLE acdc_carol;
SELECT autocdc.unschedule('carol');
SELECT name, schedule, next_run_at FROM autocdc.pipelines;
RESET ROLE;

-- Clean up: no role is left behind, so that the file runs again on this server.
SET client_min_messages = warning;
DROP SCHEMA sch CASCADE;
RESET client_min_messages;
SELECT count(*) AS pipelines_left FROM autocdc.pipelines WHERE name IN ('carol', 'nologin');
DROP ROLE acdc_carol, acdc_dave, acdc_nologin;
