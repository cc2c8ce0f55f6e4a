-- Stored rows are updated and deleted straight in their table (SCD 1 rows
-- and state rows, SCD 2 and bitemporal versions closed and reopened) where
-- the UPDATE or DELETE by tid could do nothing else; otherwise through that
-- statement.  Either way a run gives the same rows, checks and errors.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS autocdc;
RESET client_min_messages;
CREATE SCHEMA du;
SET search_path = du, public;
CREATE TABLE src (id int, name text, n numeric, op text, seq int);
-- 3000 keys: first values, then updates, deletes of every tenth, updates again
INSERT INTO src SELECT k, 'a' || k, k, 'U', 1 FROM generate_series(1, 3000) k;

-- SCD 1 into a plain target (the direct path), a target with an expression
-- index on an updated column, a target an UPDATE trigger watches (the
-- statements), one whose stored generated column the UPDATE recomputes,
-- and one with a child table (a statement on the parent reaches it).
SELECT autocdc.create_auto_cdc_flow(target => 'plain', source => 'src', keys => ARRAY['id'],
  sequence_by => 'seq', apply_as_deletes => $$op = 'D'$$, except_column_list => ARRAY['op', 'seq'],
  stored_as_scd_type => 1, pipeline => 'du');
CREATE TABLE indexed (id int PRIMARY KEY, name text, n numeric CHECK (n >= 0), __autocdc_sequence int);
CREATE INDEX indexed_name ON indexed (upper(name));
SELECT autocdc.create_auto_cdc_flow(target => 'indexed', source => 'src', keys => ARRAY['id'],
  sequence_by => 'seq', apply_as_deletes => $$op = 'D'$$, except_column_list => ARRAY['op', 'seq'],
  stored_as_scd_type => 1, pipeline => 'du');
CREATE TABLE watched (id int PRIMARY KEY, name text, n numeric, __autocdc_sequence int);
CREATE TABLE watched_seen (op text, n bigint);
CREATE FUNCTION du.count_updates() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN INSERT INTO du.watched_seen SELECT TG_OP, count(*) FROM old_rows; RETURN NULL; END $$;
CREATE TRIGGER watched_upd AFTER UPDATE ON watched REFERENCING OLD TABLE AS old_rows
  FOR EACH STATEMENT EXECUTE FUNCTION du.count_updates();
CREATE TRIGGER watched_del AFTER DELETE ON watched REFERENCING OLD TABLE AS old_rows
  FOR EACH STATEMENT EXECUTE FUNCTION du.count_updates();
SELECT autocdc.create_auto_cdc_flow(target => 'watched', source => 'src', keys => ARRAY['id'],
  sequence_by => 'seq', apply_as_deletes => $$op = 'D'$$, except_column_list => ARRAY['op', 'seq'],
  stored_as_scd_type => 1, pipeline => 'du');
CREATE TABLE generated (id int PRIMARY KEY, name text, n numeric, __autocdc_sequence int,
  twice numeric GENERATED ALWAYS AS (n * 2) STORED);
SELECT autocdc.create_auto_cdc_flow(target => 'generated', source => 'src', keys => ARRAY['id'],
  sequence_by => 'seq', apply_as_deletes => $$op = 'D'$$, except_column_list => ARRAY['op', 'seq'],
  stored_as_scd_type => 1, pipeline => 'du');
CREATE TABLE parent (id int PRIMARY KEY, name text, n numeric, __autocdc_sequence int);
CREATE TABLE child () INHERITS (parent);
SELECT autocdc.create_auto_cdc_flow(target => 'parent', source => 'src', keys => ARRAY['id'],
  sequence_by => 'seq', apply_as_deletes => $$op = 'D'$$, except_column_list => ARRAY['op', 'seq'],
  stored_as_scd_type => 1, pipeline => 'du');
SELECT flow, rows_read, rows_upserted, rows_deleted, status FROM autocdc.run('du') ORDER BY flow;

INSERT INTO src SELECT k, 'b' || k, k + 1, 'U', 2 FROM generate_series(1, 3000) k;
INSERT INTO src SELECT k, NULL, NULL, 'D', 3 FROM generate_series(10, 3000, 10) k;
-- a repeat of an applied upsert changes nothing
INSERT INTO src SELECT k, 'b' || k, k + 1, 'U', 2 FROM generate_series(1, 5) k;
SELECT flow, rows_read, rows_upserted, rows_deleted, status FROM autocdc.run('du') ORDER BY flow;
-- deleted keys come back, some keys change again
INSERT INTO src SELECT k, 'c' || k, k + 2, 'U', 4 FROM generate_series(1, 3000, 7) k;
SELECT flow, rows_read, rows_upserted, rows_deleted, status FROM autocdc.run('du') ORDER BY flow;

SELECT count(*), sum(n), min(name), max(name), count(*) FILTER (WHERE name LIKE 'c%') AS third FROM plain;
SELECT NOT EXISTS (SELECT * FROM plain EXCEPT SELECT * FROM indexed)
   AND NOT EXISTS (SELECT * FROM indexed EXCEPT SELECT * FROM plain) AS indexed_same,
  NOT EXISTS (SELECT * FROM plain EXCEPT SELECT * FROM watched)
   AND NOT EXISTS (SELECT * FROM watched EXCEPT SELECT * FROM plain) AS watched_same,
  NOT EXISTS (SELECT * FROM plain EXCEPT SELECT id, name, n, __autocdc_sequence FROM generated)
   AND NOT EXISTS (SELECT id, name, n, __autocdc_sequence FROM generated EXCEPT SELECT * FROM plain) AS generated_same,
  NOT EXISTS (SELECT * FROM plain EXCEPT SELECT * FROM parent)
   AND NOT EXISTS (SELECT * FROM parent EXCEPT SELECT * FROM plain) AS parent_same;
SELECT count(*) FILTER (WHERE twice = n * 2) AS recomputed, count(*) FROM generated;
-- the trigger saw its statements' rows
SELECT op, sum(n) FROM watched_seen GROUP BY op ORDER BY op;
-- every index holds every row: looked up through each one alone
SET enable_seqscan = off;
SET enable_bitmapscan = off;
SELECT id, name FROM indexed WHERE upper(name) = 'C8';
SELECT id, name FROM indexed WHERE upper(name) IN ('A8', 'B8');
SELECT count(*) FROM indexed WHERE id BETWEEN 1 AND 3000;
RESET enable_seqscan;
RESET enable_bitmapscan;
-- the statistics count the updates and deletes (flushed before they are read)
SELECT pg_stat_force_next_flush();
SELECT relname, n_tup_upd, n_tup_del FROM pg_stat_user_tables
  WHERE schemaname = 'du' AND relname IN ('plain', 'indexed') ORDER BY relname;

-- A row that breaks a constraint fails the run as the UPDATE would, with nothing written.
INSERT INTO src VALUES (1, 'bad', -1, 'U', 5), (2, 'fine', 2, 'U', 5);
SELECT flow, status FROM autocdc.run('du') ORDER BY flow;
SELECT error FROM autocdc.event_log WHERE pipeline = 'du' AND flow = 'indexed' ORDER BY id DESC LIMIT 1;
SELECT id, name, n FROM indexed WHERE id IN (1, 2) ORDER BY id;
DELETE FROM src WHERE seq = 5;
SELECT autocdc.drop_flow('indexed');
SELECT autocdc.drop_flow('watched');
SELECT autocdc.drop_flow('generated');
SELECT autocdc.drop_flow('parent');

-- A table that publishes updates needs a replica identity: the UPDATE's error.
CREATE TABLE published (id int, name text, n numeric, __autocdc_sequence int);
CREATE UNIQUE INDEX ON published (id);
SELECT autocdc.create_auto_cdc_flow(target => 'published', source => 'src', keys => ARRAY['id'],
  sequence_by => 'seq', apply_as_deletes => $$op = 'D'$$, except_column_list => ARRAY['op', 'seq'],
  stored_as_scd_type => 1, pipeline => 'du_pub');
SELECT flow, rows_upserted, status FROM autocdc.run('du_pub');
SET client_min_messages = error;
CREATE PUBLICATION du_pub FOR TABLE published WITH (publish = 'update');
RESET client_min_messages;
INSERT INTO src VALUES (3, 'published', 3, 'U', 6);
SELECT flow, status FROM autocdc.run('du_pub');
SELECT error FROM autocdc.event_log WHERE pipeline = 'du_pub' ORDER BY id DESC LIMIT 1;
DROP PUBLICATION du_pub;
SELECT flow, rows_upserted, status FROM autocdc.run('du_pub');
SELECT id, name FROM published WHERE id = 3;
SELECT autocdc.drop_flow('published');

-- A column made an identity after its rows went in is the UPDATE's to refuse.
CREATE TABLE ident_src (id int, n int, seq int);
CREATE TABLE ident (id int PRIMARY KEY, n int NOT NULL, __autocdc_sequence int);
SELECT autocdc.create_auto_cdc_flow(target => 'ident', source => 'ident_src', keys => ARRAY['id'],
  sequence_by => 'seq', except_column_list => ARRAY['seq'], stored_as_scd_type => 1, pipeline => 'du_ident');
INSERT INTO ident_src VALUES (1, 10, 1);
SELECT flow, rows_upserted, status FROM autocdc.run('du_ident');
ALTER TABLE ident ALTER COLUMN n ADD GENERATED ALWAYS AS IDENTITY;
INSERT INTO ident_src VALUES (1, 11, 2);
SELECT flow, status FROM autocdc.run('du_ident');
SELECT error FROM autocdc.event_log WHERE pipeline = 'du_ident' ORDER BY id DESC LIMIT 1;
SELECT * FROM ident;
SELECT autocdc.drop_flow('ident');

-- The writes run as the target's owner, with its rights: an owner who took
-- its own UPDATE right away gets the UPDATE's error.
CREATE ROLE du_owner;
GRANT USAGE, CREATE ON SCHEMA du TO du_owner;
CREATE TABLE owned_src (id int, name text, seq int);
ALTER TABLE owned_src OWNER TO du_owner;
INSERT INTO owned_src VALUES (1, 'x', 1);
SET ROLE du_owner;
SELECT autocdc.create_auto_cdc_flow(target => 'owned', source => 'owned_src', keys => ARRAY['id'],
  sequence_by => 'seq', except_column_list => ARRAY['seq'], stored_as_scd_type => 1, pipeline => 'du_owned');
RESET ROLE;
SELECT flow, rows_upserted, status FROM autocdc.run('du_owned');
INSERT INTO owned_src VALUES (1, 'y', 2);
SET ROLE du_owner;
REVOKE UPDATE ON owned FROM du_owner;
RESET ROLE;
SELECT flow, status FROM autocdc.run('du_owned');
SELECT error FROM autocdc.event_log WHERE pipeline = 'du_owned' ORDER BY id DESC LIMIT 1;
SET ROLE du_owner;
GRANT UPDATE ON owned TO du_owner;
RESET ROLE;
SELECT flow, rows_upserted, status FROM autocdc.run('du_owned');
SELECT id, name FROM owned;
SELECT autocdc.drop_flow('owned');

-- SCD 2: versions closed in place, a user's one-open-version index whole.
CREATE TABLE s2_src (id int, name text, op text, seq int);
INSERT INTO s2_src SELECT k, 'a' || k, 'U', 10 FROM generate_series(1, 2000) k;
SELECT autocdc.create_auto_cdc_flow(target => 's2_plain', source => 's2_src', keys => ARRAY['id'],
  sequence_by => 'seq', apply_as_deletes => $$op = 'D'$$, except_column_list => ARRAY['op', 'seq'],
  stored_as_scd_type => 2, pipeline => 'du_s2');
CREATE UNIQUE INDEX s2_plain_open ON s2_plain (id) WHERE __end_at IS NULL;
CREATE TABLE s2_watched (id int, name text, __start_at int, __end_at int, PRIMARY KEY (id, __start_at));
CREATE TRIGGER s2_watched_upd AFTER UPDATE ON s2_watched REFERENCING OLD TABLE AS old_rows
  FOR EACH STATEMENT EXECUTE FUNCTION du.count_updates();
SELECT autocdc.create_auto_cdc_flow(target => 's2_watched', source => 's2_src', keys => ARRAY['id'],
  sequence_by => 'seq', apply_as_deletes => $$op = 'D'$$, except_column_list => ARRAY['op', 'seq'],
  stored_as_scd_type => 2, pipeline => 'du_s2');
SELECT flow, rows_upserted, status FROM autocdc.run('du_s2') ORDER BY flow;
-- new versions close the open ones; a late event reopens nothing but splits one
INSERT INTO s2_src SELECT k, 'b' || k, 'U', 20 FROM generate_series(1, 2000) k;
INSERT INTO s2_src SELECT k, NULL, 'D', 30 FROM generate_series(5, 2000, 5) k;
SELECT flow, rows_upserted, rows_deleted, status FROM autocdc.run('du_s2') ORDER BY flow;
INSERT INTO s2_src SELECT k, 'late' || k, 'U', 15 FROM generate_series(1, 2000, 3) k;
SELECT flow, rows_upserted, rows_deleted, status FROM autocdc.run('du_s2') ORDER BY flow;
SELECT count(*), count(*) FILTER (WHERE __end_at IS NULL) AS open,
  count(*) FILTER (WHERE name LIKE 'late%' AND __end_at = 20) AS late_closed FROM s2_plain;
SELECT NOT EXISTS (SELECT * FROM s2_plain EXCEPT SELECT * FROM s2_watched)
   AND NOT EXISTS (SELECT * FROM s2_watched EXCEPT SELECT * FROM s2_plain) AS watched_same;
SELECT * FROM s2_plain WHERE id IN (3, 4, 5) ORDER BY id, __start_at;
SET enable_seqscan = off;
SET enable_bitmapscan = off;
SELECT count(*) FROM s2_plain WHERE id BETWEEN 1 AND 2000 AND __end_at IS NULL;
SELECT count(*) FROM s2_plain WHERE id = 7 AND __start_at = 15;
RESET enable_seqscan;
RESET enable_bitmapscan;

SELECT autocdc.drop_flow('plain');
SELECT autocdc.drop_flow('s2_plain');
SELECT autocdc.drop_flow('s2_watched');
SET client_min_messages = warning;
DROP SCHEMA du CASCADE;
RESET client_min_messages;
DROP ROLE du_owner;
