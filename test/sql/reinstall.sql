-- Flows re-created after DROP EXTENSION autocdc CASCADE and CREATE EXTENSION
-- autocdc, over sources and targets that hold data (README "Uninstalling"):
-- start_from => 'now' takes the source's rows as read and the targets' rows
-- as what came before.
-- Creates the extension when this file runs alone (make installcheck REGRESS=...).
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS autocdc;
RESET client_min_messages;
CREATE SCHEMA ri;
SET search_path = ri, public;
CREATE TABLE s (id int, v text, seq int, del boolean NOT NULL DEFAULT false);
CREATE TABLE r (id int, v text, a int, b int);
CREATE TABLE l (id int, v text);
SELECT autocdc.create_auto_cdc_flow(target => 'ri_t1', source => 's', keys => ARRAY['id'],
  sequence_by => 'seq', apply_as_deletes => 'del', except_column_list => ARRAY['del'], pipeline => 'ri');
SELECT autocdc.create_auto_cdc_flow(target => 'ri_t2', source => 's', keys => ARRAY['id'],
  sequence_by => 'seq', apply_as_deletes => 'del', except_column_list => ARRAY['del'],
  stored_as_scd_type => 2, pipeline => 'ri');
SELECT autocdc.create_auto_cdc_flow(target => 'ri_t3', source => 'r', keys => ARRAY['id'],
  sequence_by => 'ROW(a, b)', stored_as_scd_type => 2, pipeline => 'ri');
SELECT autocdc.create_append_flow(target => 'ri_t4', source => 'l', pipeline => 'ri');
INSERT INTO s (id, v, seq) VALUES (1, 'a', 10), (2, 'b', 10), (3, 'c', 10), (1, 'a2', 20);
INSERT INTO s (id, seq, del) VALUES (3, 20, true);
INSERT INTO r VALUES (1, 'x', 1, 1), (1, 'y', 1, 2);
INSERT INTO l VALUES (1, 'x'), (2, 'y');
SELECT flow, rows_read, status FROM autocdc.run('ri');

-- The ROW() type of ri_t3's __start_at and __end_at lives in schema
-- autocdc: DROP EXTENSION ... CASCADE would drop the two columns with it,
-- and is refused until the type is moved out (the error names the columns
-- of every such table, the hint how to move their types).
DO $$
DECLARE
  d text; h text;
BEGIN
  DROP EXTENSION autocdc CASCADE;
EXCEPTION WHEN dependent_objects_still_exist THEN
  GET STACKED DIAGNOSTICS d = PG_EXCEPTION_DETAIL, h = PG_EXCEPTION_HINT;
  RAISE NOTICE E'%\nnames ri_t3''s columns: %\nhint moves its type: %', SQLERRM,
    d LIKE '%ri.ri_t3.\_\_end\_at, ri.ri_t3.\_\_start\_at%',
    h ~ 'ALTER TYPE autocdc\.__autocdc_seq_[0-9]+ SET SCHEMA ri;';
END $$;
-- README "Uninstalling": every such type moved into its table's schema.
DO $$ DECLARE t record; BEGIN
  FOR t IN SELECT DISTINCT ON (ty.typname) ty.typname, n.nspname
             FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid
             JOIN pg_namespace n ON n.oid = c.relnamespace
             JOIN pg_type ty ON ty.oid = a.atttypid
            WHERE ty.typnamespace = 'autocdc'::regnamespace AND n.nspname <> 'autocdc'
            ORDER BY ty.typname, n.nspname LOOP
    EXECUTE format('ALTER TYPE autocdc.%I SET SCHEMA %I', t.typname, t.nspname);
  END LOOP;
END $$;
SET client_min_messages = warning;
DROP EXTENSION autocdc CASCADE;
RESET client_min_messages;

-- Left: the targets with their rows, and on the sources the column
-- __autocdc_xid with its stamps (its default, index and trigger went with
-- the extension's function and operator class; a flow made again puts
-- them back).
SELECT * FROM ri_t1 ORDER BY id;
SELECT * FROM ri_t2 ORDER BY id, __start_at;
SELECT id, v, __start_at::text, __end_at::text FROM ri_t3 ORDER BY id, __start_at;
SELECT * FROM ri_t4 ORDER BY id;
SELECT c.relname, pg_get_expr(d.adbin, d.adrelid) AS "default",
       (SELECT string_agg(i.indexrelid::regclass::text, ', ') FROM pg_index i
         WHERE i.indrelid = c.oid AND a.attnum = ANY (i.indkey)) AS indexes,
       (SELECT count(*) FROM pg_trigger t WHERE t.tgrelid = c.oid) AS triggers
  FROM pg_class c JOIN pg_attribute a ON a.attrelid = c.oid AND a.attname = '__autocdc_xid'
  LEFT JOIN pg_attrdef d ON d.adrelid = c.oid AND d.adnum = a.attnum
 WHERE c.relnamespace = 'ri'::regnamespace AND c.relkind = 'r' ORDER BY 1;

CREATE EXTENSION autocdc;

-- start_from takes 'beginning' (the default) or 'now'; 'now' needs a table
-- source, and a snapshot flow compares whole snapshots instead.
SELECT autocdc.create_append_flow(target => 'ri_t4', source => 'l', pipeline => 'ri', start_from => 'later');
CREATE VIEW lv AS SELECT * FROM l;
SELECT autocdc.create_append_flow(target => 'ri_t4', source => 'lv', pipeline => 'ri', start_from => 'now');
SELECT autocdc.create_auto_cdc_from_snapshot_flow(target => 'ri_t5', source => 'l', keys => ARRAY['id'],
  pipeline => 'ri', start_from => 'now');

SELECT autocdc.create_auto_cdc_flow(target => 'ri_t1', source => 's', keys => ARRAY['id'],
  sequence_by => 'seq', apply_as_deletes => 'del', except_column_list => ARRAY['del'], pipeline => 'ri',
  start_from => 'now');
SELECT autocdc.create_auto_cdc_flow(target => 'ri_t2', source => 's', keys => ARRAY['id'],
  sequence_by => 'seq', apply_as_deletes => 'del', except_column_list => ARRAY['del'],
  stored_as_scd_type => 2, pipeline => 'ri', start_from => 'now');
SELECT autocdc.create_auto_cdc_flow(target => 'ri_t3', source => 'r', keys => ARRAY['id'],
  sequence_by => 'ROW(a, b)', stored_as_scd_type => 2, pipeline => 'ri', start_from => 'now');
SELECT autocdc.create_append_flow(target => 'ri_t4', source => 'l', pipeline => 'ri', start_from => 'NOW');
SELECT name, options->'start_from' AS start_from, checkpoint IS NOT NULL AS has_checkpoint
  FROM autocdc.flows WHERE pipeline = 'ri' ORDER BY name;
-- Nothing to read yet.
SELECT flow, rows_read, rows_upserted, rows_deleted, status FROM autocdc.run('ri');

-- New rows: in order, late (before key 2's version), deletes, a key that
-- was deleted before the re-install (3), a new key (4).
INSERT INTO s (id, v, seq) VALUES (1, 'a3', 30), (2, 'b-late', 5), (3, 'c2', 30), (4, 'd', 10);
INSERT INTO s (id, seq, del) VALUES (4, 30, true);
INSERT INTO r VALUES (1, 'z', 2, 1), (1, 'w', 0, 5);
INSERT INTO l VALUES (3, 'z');
SELECT flow, rows_read, rows_upserted, rows_deleted, status FROM autocdc.run('ri');
SELECT * FROM ri_t1 ORDER BY id;
SELECT * FROM ri_t2 ORDER BY id, __start_at;
SELECT id, v, __start_at::text, __end_at::text FROM ri_t3 ORDER BY id, __start_at;
SELECT * FROM ri_t4 ORDER BY id;

-- Against flows that read every row from the beginning: the same targets.
-- The SCD 2 targets' history was turned into events at creation (the late
-- event fell into it); the SCD 1 target's rows kept their sequences in
-- __autocdc_sequence, so key 2's late event is older than its row.
SELECT autocdc.create_auto_cdc_flow(target => 'ri_t1_ref', source => 's', keys => ARRAY['id'],
  sequence_by => 'seq', apply_as_deletes => 'del', except_column_list => ARRAY['del'],
  pipeline => 'ri_ref', start_from => 'beginning');
SELECT autocdc.create_auto_cdc_flow(target => 'ri_t2_ref', source => 's', keys => ARRAY['id'],
  sequence_by => 'seq', apply_as_deletes => 'del', except_column_list => ARRAY['del'],
  stored_as_scd_type => 2, pipeline => 'ri_ref');
SELECT autocdc.create_auto_cdc_flow(target => 'ri_t3_ref', source => 'r', keys => ARRAY['id'],
  sequence_by => 'ROW(a, b)', stored_as_scd_type => 2, pipeline => 'ri_ref');
SELECT flow, rows_read, status FROM autocdc.run('ri_ref');
(TABLE ri_t1 EXCEPT TABLE ri_t1_ref) UNION ALL (TABLE ri_t1_ref EXCEPT TABLE ri_t1) ORDER BY 1, 2;
SELECT count(*) AS t2_differs FROM ((TABLE ri_t2 EXCEPT TABLE ri_t2_ref) UNION ALL (TABLE ri_t2_ref EXCEPT TABLE ri_t2)) d;
SELECT count(*) AS t3_differs
  FROM ((SELECT id, v, a, b, __start_at::text, __end_at::text FROM ri_t3
         EXCEPT SELECT id, v, a, b, __start_at::text, __end_at::text FROM ri_t3_ref)
        UNION ALL
        (SELECT id, v, a, b, __start_at::text, __end_at::text FROM ri_t3_ref
         EXCEPT SELECT id, v, a, b, __start_at::text, __end_at::text FROM ri_t3)) d;

-- In the creating transaction: rows inserted before the flow is created are
-- taken as read, rows inserted after it are read by the next run.
CREATE TABLE l2 (id int, v text);
BEGIN;
INSERT INTO l2 VALUES (1, 'before');
SELECT autocdc.create_append_flow(target => 'ri_t6', source => 'l2', pipeline => 'ri', start_from => 'now');
INSERT INTO l2 VALUES (2, 'after');
-- stamped NULL, as after a run: a dump and restore keeps it unread
SELECT id, __autocdc_xid IS NULL AS unstamped FROM l2 ORDER BY id;
SELECT flow, rows_read, status FROM autocdc.run('ri', flows => ARRAY['ri_t6']);
COMMIT;
SELECT * FROM ri_t6 ORDER BY id;
-- A ONCE flow created from now counts as done (a full refresh runs it).
SELECT autocdc.create_append_flow(target => 'ri_t7', source => 'l2', name => 'ri_t7', once => true,
  pipeline => 'ri', start_from => 'now');
SELECT name, once_done_at IS NOT NULL AS once_done FROM autocdc.flows WHERE name = 'ri_t7';
SELECT flow, rows_read, status FROM autocdc.run('ri', flows => ARRAY['ri_t7']);
SELECT count(*) FROM ri_t7;

SELECT autocdc.drop_flow(name) FROM autocdc.flows WHERE pipeline LIKE 'ri%' ORDER BY name;
RESET search_path;
SET client_min_messages = warning;
DROP SCHEMA ri CASCADE;
RESET client_min_messages;
