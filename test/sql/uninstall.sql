-- DROP EXTENSION refuses while targets have auxiliary state in its schema;
-- CASCADE takes the state, the catalog and the event trigger, and leaves
-- targets and sources alone.  CREATE EXTENSION again starts clean.
-- Creates the extension when this file runs alone (make installcheck REGRESS=...).
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS autocdc;
RESET client_min_messages;
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

-- autocdc.unprepare_source takes back what the first flow from a table
-- added to it: refused while a flow reads it, and for what it cannot undo.
CREATE TABLE un_part (id int, v text, seq int) PARTITION BY RANGE (id);
CREATE TABLE un_part_1 PARTITION OF un_part FOR VALUES FROM (0) TO (100);
SELECT autocdc.create_auto_cdc_flow(target => 'un_pt', source => 'un_part', keys => ARRAY['id'],
  sequence_by => 'seq', pipeline => 'uninstall');
CREATE ROLE un_other;
GRANT SELECT ON un_src TO un_other;
GRANT CREATE ON SCHEMA public TO un_other;
SET ROLE un_other;
SELECT autocdc.create_auto_cdc_flow(target => 'un_other_tgt', source => 'un_src', keys => ARRAY['id'],
  sequence_by => 'seq', pipeline => 'un_other');
SELECT autocdc.unprepare_source('un_src');
RESET ROLE;
SELECT autocdc.unprepare_source('un_src');
SELECT autocdc.unprepare_source('un_part_1');
CREATE VIEW un_view AS SELECT * FROM un_src;
SELECT autocdc.unprepare_source('un_view');
SELECT autocdc.drop_flow('un_tgt');
SELECT autocdc.drop_flow('un_pt');
-- A flow of a role the caller has no privileges of is counted, not named.
CREATE ROLE un_owner;
GRANT CREATE ON SCHEMA public TO un_owner;
SET ROLE un_owner;
CREATE TABLE un_owned (id int, v text, seq int);
GRANT SELECT ON un_owned TO un_other;
SELECT autocdc.create_auto_cdc_flow(target => 'un_owned_tgt', source => 'un_owned', keys => ARRAY['id'],
  sequence_by => 'seq', pipeline => 'un_owner');
SET ROLE un_other;
SELECT autocdc.create_auto_cdc_flow(target => 'un_other_tgt2', source => 'un_owned', keys => ARRAY['id'],
  sequence_by => 'seq', pipeline => 'un_other');
SET ROLE un_owner;
SELECT autocdc.unprepare_source('un_owned');
SELECT autocdc.drop_flow('un_owned_tgt');
SELECT autocdc.unprepare_source('un_owned');
SET ROLE un_other;
SELECT autocdc.drop_flow('un_other_tgt2');
SELECT autocdc.drop_flow('un_other_tgt');
DROP TABLE un_other_tgt, un_other_tgt2;
SET ROLE un_owner;
SELECT autocdc.unprepare_source('un_owned');
DROP TABLE un_owned, un_owned_tgt;
RESET ROLE;
REVOKE CREATE ON SCHEMA public FROM un_owner;
DROP ROLE un_owner;
REVOKE CREATE ON SCHEMA public FROM un_other;
REVOKE SELECT ON un_src FROM un_other;
DROP ROLE un_other;
-- No flow reads them now, but the view (SELECT *) uses the column.
SELECT autocdc.unprepare_source('un_src');
DROP VIEW un_view;
-- The trigger, the column, its default and its index go (from the
-- partitions too); a second call has nothing to do.
SELECT autocdc.unprepare_source('un_src');
SELECT autocdc.unprepare_source('un_part');
\d un_src
\d un_part_1
SELECT autocdc.unprepare_source('un_src');
-- Prepared again by a new flow, whose first run reads every row.
SELECT autocdc.create_auto_cdc_flow(target => 'un_tgt2', source => 'un_src', keys => ARRAY['id'],
  sequence_by => 'seq', pipeline => 'uninstall');
SELECT rows_read, rows_upserted FROM autocdc.run('uninstall');

-- What DROP EXTENSION autocdc CASCADE leaves on a source, and the SQL that
-- removes it afterwards: the column (its default, index and trigger went
-- with the extension).
SET client_min_messages = warning;
DROP EXTENSION autocdc CASCADE;
RESET client_min_messages;
\d un_src
ALTER TABLE un_src DROP COLUMN __autocdc_xid;
\d un_src
SELECT count(*) AS rows_kept FROM un_tgt2;
DROP TABLE un_src, un_tgt, un_tgt2, un_pt, un_part;
