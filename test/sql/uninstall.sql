-- DROP EXTENSION refuses while targets have auxiliary state in its schema;
-- CASCADE takes the state, the catalog and the event trigger, and leaves
-- targets and sources alone.  CREATE EXTENSION again starts clean.
CREATE TABLE un_src (id int, v text, seq int);
SELECT autocdc.create_auto_cdc_flow(target => 'un_tgt', source => 'un_src', keys => ARRAY['id'],
  sequence_by => 'seq', pipeline => 'uninstall');
INSERT INTO un_src VALUES (1, 'a', 1);
SELECT rows_upserted FROM autocdc.run('uninstall');
\set VERBOSITY terse
DROP EXTENSION autocdc;
SET client_min_messages = warning;
DROP EXTENSION autocdc CASCADE;
RESET client_min_messages;
\set VERBOSITY default
SELECT count(*) AS schema_left FROM pg_namespace WHERE nspname = 'autocdc';
SELECT count(*) AS trigger_left FROM pg_event_trigger WHERE evtname LIKE 'autocdc%';
SELECT * FROM un_tgt;
DROP TABLE un_tgt;    -- no event trigger any more, no error
CREATE EXTENSION autocdc;
SELECT autocdc.create_auto_cdc_flow(target => 'un_tgt', source => 'un_src', keys => ARRAY['id'],
  sequence_by => 'seq', pipeline => 'uninstall');
INSERT INTO un_src VALUES (2, 'b', 1);
SELECT rows_read, rows_upserted FROM autocdc.run('uninstall');
SELECT * FROM un_tgt ORDER BY id;
