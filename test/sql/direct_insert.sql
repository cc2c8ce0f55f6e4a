-- New rows go straight into a table (SCD 2 versions, SCD 1 rows and
-- tombstones, event store rows), batched as COPY batches them, where an
-- INSERT could do nothing else; otherwise through the INSERT.  Either way
-- a run gives the same rows, checks and errors.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS autocdc;
RESET client_min_messages;
CREATE SCHEMA di;
SET search_path = di, public;
CREATE TABLE src (id int, name text, n int, op text, seq int);
-- 3000 keys, two versions each and a delete of every tenth: batches of rows
INSERT INTO src SELECT k, 'a' || k, k, 'U', 1 FROM generate_series(1, 3000) k;
INSERT INTO src SELECT k, 'b' || k, k + 1, 'U', 2 FROM generate_series(1, 3000) k;
INSERT INTO src SELECT k, NULL, NULL, 'D', 3 FROM generate_series(10, 3000, 10) k;

-- A target of autocdc's own: the direct path.  Its indexes are whole.
SELECT autocdc.create_auto_cdc_flow(target => 'plain', source => 'src', keys => ARRAY['id'],
  sequence_by => 'seq', apply_as_deletes => $$op = 'D'$$, except_column_list => ARRAY['op', 'seq'],
  stored_as_scd_type => 2, pipeline => 'di');
-- Constraints and an index the rows must meet and fill, on a target of its own.
CREATE TABLE checked (id int, name text, n int NOT NULL CHECK (n > 0),
  __start_at int, __end_at int, PRIMARY KEY (id, __start_at));
CREATE INDEX checked_name ON checked (upper(name));
SELECT autocdc.create_auto_cdc_flow(target => 'checked', source => 'src', keys => ARRAY['id'],
  sequence_by => 'seq', apply_as_deletes => $$op = 'D'$$, except_column_list => ARRAY['op', 'seq'],
  stored_as_scd_type => 2, pipeline => 'di');
-- A column the flow does not write, with a default: the INSERT fills it.
CREATE TABLE defaulted (id int, name text, n int, note text DEFAULT 'filled',
  __start_at int, __end_at int, PRIMARY KEY (id, __start_at));
SELECT autocdc.create_auto_cdc_flow(target => 'defaulted', source => 'src', keys => ARRAY['id'],
  sequence_by => 'seq', apply_as_deletes => $$op = 'D'$$, except_column_list => ARRAY['op', 'seq'],
  stored_as_scd_type => 2, pipeline => 'di');
SELECT flow, rows_read, rows_upserted, rows_deleted, status FROM autocdc.run('di') ORDER BY flow;
SELECT count(*), count(*) FILTER (WHERE __end_at IS NULL) AS open, sum(n), min(name), max(name) FROM plain;
SELECT NOT EXISTS (SELECT * FROM plain EXCEPT SELECT * FROM checked) AS checked_same,
  NOT EXISTS (SELECT id, name, n, __start_at, __end_at FROM defaulted EXCEPT SELECT * FROM plain) AS defaulted_same;
SELECT count(*) FILTER (WHERE note = 'filled') AS filled, count(*) FROM defaulted;
-- every index holds every row: looked up through each one alone
SET enable_seqscan = off;
SET enable_bitmapscan = off;
SELECT count(*) FROM checked WHERE upper(name) = 'B77';
SELECT count(*) FROM plain WHERE id = 77 AND __start_at = 2;
SELECT count(*) FROM plain WHERE id BETWEEN 1 AND 3000 AND __end_at IS NULL;
RESET enable_seqscan;
RESET enable_bitmapscan;
-- the statistics count every row written (flushed before they are read)
SELECT pg_stat_force_next_flush();
SELECT n_tup_ins FROM pg_stat_user_tables WHERE schemaname = 'di' AND relname = 'plain';

-- A row that breaks a constraint fails the run as the INSERT would, with nothing written.
INSERT INTO src VALUES (1, 'c1', 0, 'U', 4);
SELECT flow, status FROM autocdc.run('di') ORDER BY flow;
SELECT error FROM autocdc.event_log WHERE pipeline = 'di' AND flow = 'checked' ORDER BY id DESC LIMIT 1;
SELECT count(*) FROM checked WHERE id = 1;
SELECT count(*) FROM plain WHERE id = 1;
DELETE FROM src WHERE seq = 4;
INSERT INTO src VALUES (2, 'c2', NULL, 'U', 4);
SELECT flow, status FROM autocdc.run('di') ORDER BY flow;
SELECT error FROM autocdc.event_log WHERE pipeline = 'di' AND flow = 'checked' ORDER BY id DESC LIMIT 1;
DELETE FROM src WHERE seq = 4;
SELECT autocdc.drop_flow('checked');
SELECT autocdc.drop_flow('defaulted');

-- A CHECK runs as the target's owner, in a restricted context, as with the INSERT.
CREATE ROLE di_owner;
GRANT USAGE ON SCHEMA di TO di_owner;
GRANT CREATE ON SCHEMA di TO di_owner;
CREATE FUNCTION di.who() RETURNS boolean LANGUAGE plpgsql AS $$
BEGIN
  RAISE NOTICE 'check as %', current_user;
  BEGIN
    CREATE TEMP TABLE di_probe (x int);
    DROP TABLE di_probe;
  EXCEPTION WHEN insufficient_privilege THEN
    RAISE NOTICE 'temp table refused: %', SQLERRM;
  END;
  RETURN true;
END $$;
GRANT EXECUTE ON FUNCTION di.who() TO di_owner;
CREATE TABLE owned_src (id int, name text, seq int);
ALTER TABLE owned_src OWNER TO di_owner;
SET ROLE di_owner;
CREATE TABLE owned (id int, name text, __start_at int, __end_at int, PRIMARY KEY (id, __start_at),
  CHECK (di.who()));
RESET ROLE;
INSERT INTO owned_src VALUES (1, 'x', 1);
SET ROLE di_owner;
SELECT autocdc.create_auto_cdc_flow(target => 'owned', source => 'owned_src', keys => ARRAY['id'],
  sequence_by => 'seq', except_column_list => ARRAY['seq'], stored_as_scd_type => 2, pipeline => 'di_owned');
RESET ROLE;
SELECT flow, rows_upserted, status FROM autocdc.run('di_owned');
SELECT * FROM owned;

-- An owner who took its own INSERT right away gets the INSERT's error.
ALTER TABLE owned DROP CONSTRAINT owned_check;
INSERT INTO owned_src VALUES (2, 'y', 1);
SET ROLE di_owner;
REVOKE INSERT ON owned FROM di_owner;
RESET ROLE;
SELECT flow, status FROM autocdc.run('di_owned');
SELECT error FROM autocdc.event_log WHERE pipeline = 'di_owned' ORDER BY id DESC LIMIT 1;
SET ROLE di_owner;
GRANT INSERT ON owned TO di_owner;
RESET ROLE;
SELECT flow, rows_upserted, status FROM autocdc.run('di_owned');
SELECT * FROM owned ORDER BY id;

-- A deferrable unique constraint is checked at commit, through the INSERT.
CREATE TABLE deferred_tgt (id int, name text, __start_at int, __end_at int,
  UNIQUE (id, __start_at) DEFERRABLE INITIALLY DEFERRED);
SELECT autocdc.create_auto_cdc_flow(target => 'deferred_tgt', source => 'owned_src', keys => ARRAY['id'],
  sequence_by => 'seq', except_column_list => ARRAY['seq'], stored_as_scd_type => 2, pipeline => 'di_deferred');
SELECT flow, rows_upserted, status FROM autocdc.run('di_deferred');
SELECT * FROM deferred_tgt ORDER BY id;

-- SCD 1: new rows and tombstones go straight in as well, through an INSERT
-- where a trigger must see them.  A batch spilled past work_mem is read
-- back from its file, closed before the run ends (no leaked file warning).
CREATE TABLE s1_src (id int, name text, op text, seq int);
INSERT INTO s1_src SELECT k, 'a' || k, 'U', 1 FROM generate_series(1, 5000) k;
INSERT INTO s1_src SELECT k, NULL, 'D', 2 FROM generate_series(4001, 5000) k;
SELECT autocdc.create_auto_cdc_flow(target => 's1_plain', source => 's1_src', keys => ARRAY['id'],
  sequence_by => 'seq', apply_as_deletes => $$op = 'D'$$, except_column_list => ARRAY['op', 'seq'],
  stored_as_scd_type => 1, pipeline => 'di_s1');
CREATE TABLE s1_counted (id int PRIMARY KEY, name text, __autocdc_sequence int);
CREATE TABLE s1_seen (n bigint);
CREATE FUNCTION di.count_rows() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN INSERT INTO di.s1_seen SELECT count(*) FROM new_rows; RETURN NULL; END $$;
CREATE TRIGGER s1_counted_ins AFTER INSERT ON s1_counted REFERENCING NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION di.count_rows();
SELECT autocdc.create_auto_cdc_flow(target => 's1_counted', source => 's1_src', keys => ARRAY['id'],
  sequence_by => 'seq', apply_as_deletes => $$op = 'D'$$, except_column_list => ARRAY['op', 'seq'],
  stored_as_scd_type => 1, pipeline => 'di_s1');
CREATE TABLE s1_checked (id int PRIMARY KEY, name text CHECK (name <> 'a77'), __autocdc_sequence int);
SELECT autocdc.create_auto_cdc_flow(target => 's1_checked', source => 's1_src', keys => ARRAY['id'],
  sequence_by => 'seq', apply_as_deletes => $$op = 'D'$$, except_column_list => ARRAY['op', 'seq'],
  stored_as_scd_type => 1, pipeline => 'di_s1_checked');
SET work_mem = '64kB';
SELECT flow, rows_read, rows_upserted, rows_deleted, status FROM autocdc.run('di_s1') ORDER BY flow;
RESET work_mem;
SELECT count(*), min(id), max(id), count(*) FILTER (WHERE name = 'a' || id) AS named FROM s1_plain;
SELECT NOT EXISTS (SELECT * FROM s1_plain EXCEPT SELECT * FROM s1_counted) AS same, (TABLE s1_seen) AS trigger_saw;
-- the deleted keys' tombstones, in the state table
CREATE FUNCTION di.tombstones(t regclass, OUT n bigint, OUT lo int, OUT hi int) LANGUAGE plpgsql AS $$
BEGIN
  EXECUTE format('SELECT count(*), min(id), max(id) FROM %s WHERE __autocdc_deleted_at IS NOT NULL',
    (SELECT state_table FROM autocdc.target WHERE target = t)) INTO n, lo, hi;
END $$;
SELECT * FROM di.tombstones('s1_plain');
SELECT flow, status FROM autocdc.run('di_s1_checked');
SELECT error FROM autocdc.event_log WHERE pipeline = 'di_s1_checked' ORDER BY id DESC LIMIT 1;
SELECT count(*) FROM s1_checked;

SELECT autocdc.drop_flow('owned');
SELECT autocdc.drop_flow('deferred_tgt');
SELECT autocdc.drop_flow('plain');
SELECT autocdc.drop_flow('s1_plain');
SELECT autocdc.drop_flow('s1_counted');
SELECT autocdc.drop_flow('s1_checked');
SET client_min_messages = warning;
DROP SCHEMA di CASCADE;
RESET client_min_messages;
DROP ROLE di_owner;
