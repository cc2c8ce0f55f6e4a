-- Flows act with their owner's rights; other roles cannot use them.
-- Creates the extension when this file runs alone (make installcheck REGRESS=...).
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS autocdc;
RESET client_min_messages;
CREATE ROLE acdc_alice LOGIN;
CREATE ROLE acdc_bob LOGIN;
CREATE SCHEMA sec AUTHORIZATION acdc_alice;
GRANT USAGE ON SCHEMA sec TO acdc_bob;
SET ROLE acdc_alice;
CREATE TABLE sec.src (id int, v text, seq int);
CREATE TABLE sec.private_src (id int, v text, seq int);
-- The run evaluates expressions as the flow's owner, whoever calls it.
CREATE TABLE sec.who (u name);
CREATE FUNCTION sec.record_user(int) RETURNS int LANGUAGE sql
  AS 'INSERT INTO sec.who VALUES (current_user) RETURNING $1';
SELECT autocdc.create_auto_cdc_flow(target => 'sec.tgt', source => 'sec.src', keys => ARRAY['id'],
  sequence_by => 'sec.record_user(seq)', pipeline => 'alice');
INSERT INTO sec.src VALUES (1, 'a', 1);
GRANT SELECT ON sec.src TO acdc_bob;
RESET ROLE;

-- Bob may not run, add to or drop Alice's pipeline, nor use her tables.
SET ROLE acdc_bob;
SELECT * FROM autocdc.run('alice');
SELECT autocdc.drop_flow('sec.tgt');
SELECT autocdc.create_auto_cdc_flow(target => 'sec.bob_tgt', source => 'sec.src', keys => ARRAY['id'],
  sequence_by => 'seq', pipeline => 'alice');
SELECT autocdc.create_auto_cdc_flow(target => 'sec.bob_tgt', source => 'sec.private_src', keys => ARRAY['id'],
  sequence_by => 'seq', pipeline => 'bob');
SELECT autocdc.create_auto_cdc_flow(target => 'sec.tgt', source => 'sec.src', keys => ARRAY['id'],
  sequence_by => 'seq', pipeline => 'bob', name => 'bob_into_alice');
SELECT autocdc.create_auto_cdc_flow(target => 'sec.bob_tgt', source => 'sec.src', keys => ARRAY['id'],
  sequence_by => 'seq', pipeline => 'bob');
-- Running all pipelines runs only one's own (Bob has none).
SELECT count(*) FROM autocdc.run();
-- The catalog is not writable directly.
DELETE FROM autocdc.flow;
RESET ROLE;

-- A superuser running Alice's pipeline runs it as Alice.
SELECT flow, rows_upserted, status FROM autocdc.run('alice');
SELECT DISTINCT u FROM sec.who;
SELECT owner FROM autocdc.flows WHERE pipeline = 'alice';
-- Her flow cannot reach what she cannot: revoke her source, the run fails cleanly.
INSERT INTO sec.src VALUES (2, 'b', 2);
ALTER TABLE sec.src OWNER TO CURRENT_USER;
REVOKE ALL ON sec.src FROM acdc_alice;
SELECT flow, rows_upserted, status FROM autocdc.run('alice');
SELECT error FROM autocdc.event_log WHERE pipeline = 'alice' ORDER BY id DESC LIMIT 1;
ALTER TABLE sec.src OWNER TO acdc_alice;

-- A function planted in public to shadow a built-in is never called by a run.
CREATE FUNCTION public.pg_current_snapshot() RETURNS pg_snapshot LANGUAGE sql AS $$SELECT '1:1:'::pg_snapshot$$;
CREATE FUNCTION public.now() RETURNS timestamptz LANGUAGE sql AS $$SELECT 'epoch'::timestamptz$$;
SET search_path = public, pg_catalog;
SET ROLE acdc_alice;
INSERT INTO sec.src VALUES (3, 'c', 3);
SELECT flow, rows_read, rows_upserted, status FROM autocdc.run('alice');
SELECT id, v FROM sec.tgt ORDER BY id;
RESET ROLE;
RESET search_path;
DROP FUNCTION public.pg_current_snapshot();
DROP FUNCTION public.now();

-- Clean up: no role is left behind, so that the file runs again on this server.
SET client_min_messages = warning;
DROP SCHEMA sec CASCADE;
RESET client_min_messages;
SELECT count(*) AS flows_left FROM autocdc.flows WHERE pipeline = 'alice';
DROP ROLE acdc_alice, acdc_bob;
