-- Values go to their columns as an INSERT's assignment puts them: rounded
-- to a numeric's scale or a timestamp's precision, an over-long string or
-- array element refused with the INSERT's error, for every kind of flow
-- and whichever way the rows are written.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS autocdc;
RESET client_min_messages;
CREATE SCHEMA tm;
SET search_path = tm, public;
CREATE TABLE src (id text, v text, n numeric, at timestamp, tags text[], op text, seq int);
INSERT INTO src VALUES ('k1', 'short', 1.23456, '2026-01-01 10:00:00.6', '{ab,cd}', 'U', 1),
                       ('k2', 'tiny', 2.005, '2026-01-01 10:00:01.4', '{x}', 'U', 1);
-- an SCD 1 target keeping the values straight in (the direct path), one an
-- UPDATE trigger watches (the statements), an SCD 2 and a bitemporal target
CREATE TABLE s1 (id varchar(5) PRIMARY KEY, v varchar(5), n numeric(6,2), at timestamp(0),
  tags varchar(2)[], __autocdc_sequence int);
SELECT autocdc.create_auto_cdc_flow(target => 's1', source => 'src', keys => ARRAY['id'],
  sequence_by => 'seq', apply_as_deletes => $$op = 'D'$$, except_column_list => ARRAY['op', 'seq'],
  stored_as_scd_type => 1, pipeline => 'tm');
CREATE TABLE s1_watched (LIKE s1 INCLUDING ALL);
CREATE FUNCTION tm.nothing() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RETURN NULL; END $$;
CREATE TRIGGER s1_watched_upd AFTER INSERT OR UPDATE ON s1_watched
  FOR EACH STATEMENT EXECUTE FUNCTION tm.nothing();
SELECT autocdc.create_auto_cdc_flow(target => 's1_watched', source => 'src', keys => ARRAY['id'],
  sequence_by => 'seq', apply_as_deletes => $$op = 'D'$$, except_column_list => ARRAY['op', 'seq'],
  stored_as_scd_type => 1, pipeline => 'tm');
CREATE TABLE s2 (id varchar(5), v varchar(5), n numeric(6,2), at timestamp(0), tags varchar(2)[],
  __start_at int, __end_at int, PRIMARY KEY (id, __start_at));
SELECT autocdc.create_auto_cdc_flow(target => 's2', source => 'src', keys => ARRAY['id'],
  sequence_by => 'seq', apply_as_deletes => $$op = 'D'$$, except_column_list => ARRAY['op', 'seq'],
  stored_as_scd_type => 2, pipeline => 'tm');
SELECT flow, rows_upserted, status FROM autocdc.run('tm') ORDER BY flow;
SELECT * FROM s1 ORDER BY id;
SELECT NOT EXISTS (SELECT * FROM s1 EXCEPT SELECT * FROM s1_watched) AS watched_same;
SELECT id, v, n, at, tags, __start_at, __end_at FROM s2 ORDER BY id, __start_at;
-- an update rounds as well
INSERT INTO src VALUES ('k1', 'again', 9.999, '2026-01-02 00:00:00.5', '{ef}', 'U', 2);
SELECT flow, rows_upserted, status FROM autocdc.run('tm') ORDER BY flow;
SELECT * FROM s1 ORDER BY id;
SELECT id, v, n, at, tags, __start_at, __end_at FROM s2 ORDER BY id, __start_at;

-- Too long for the column: the run fails as the INSERT or UPDATE would.
INSERT INTO src VALUES ('k1', 'far too long', 1, NULL, NULL, 'U', 3);
SELECT flow, rows_upserted, status FROM autocdc.run('tm') ORDER BY flow;
SELECT DISTINCT error FROM autocdc.event_log WHERE pipeline = 'tm' AND status = 'failed';
DELETE FROM src WHERE seq = 3;
INSERT INTO src VALUES ('k3', 'ok', 1, NULL, '{abc}', 'U', 3);
SELECT flow, rows_upserted, status FROM autocdc.run('tm') ORDER BY flow;
SELECT DISTINCT error FROM autocdc.event_log WHERE pipeline = 'tm' AND status = 'failed'
  AND error LIKE '%(2)%';
DELETE FROM src WHERE seq = 3;
INSERT INTO src VALUES ('key-too-long', 'ok', 1, NULL, NULL, 'U', 3);
SELECT flow, rows_upserted, status FROM autocdc.run('tm') ORDER BY flow;
DELETE FROM src WHERE seq = 3;
-- trailing spaces go, as an INSERT drops them
INSERT INTO src VALUES ('k4      ', 'pad        ', 4, NULL, NULL, 'U', 3);
SELECT flow, rows_upserted, status FROM autocdc.run('tm') ORDER BY flow;
SELECT id, length(id), v, length(v) FROM s1 WHERE id LIKE 'k4%';
-- a delete's values are not written: an over-long one is no error
INSERT INTO src VALUES ('k2', 'far too long', 1, NULL, '{abc}', 'D', 4);
SELECT flow, rows_deleted, status FROM autocdc.run('tm') ORDER BY flow;
SELECT count(*) FROM s1 WHERE id = 'k2';

-- a domain over a type with a modifier: the INSERT's error too, not the
-- cast's truncation; the domain's CHECK and NOT NULL still hold
CREATE DOMAIN tm.d5 AS varchar(5) NOT NULL CHECK (VALUE <> 'bad');
CREATE TABLE dom_src (id int, v text, seq int);
CREATE TABLE dom (id int PRIMARY KEY, v tm.d5, __autocdc_sequence int);
SELECT autocdc.create_auto_cdc_flow(target => 'dom', source => 'dom_src', keys => ARRAY['id'],
  sequence_by => 'seq', except_column_list => ARRAY['seq'], stored_as_scd_type => 1, pipeline => 'tm_dom');
INSERT INTO dom_src VALUES (1, 'abc  ', 1), (2, 'abcdefghij', 1);
SELECT flow, status FROM autocdc.run('tm_dom');
SELECT error FROM autocdc.event_log WHERE pipeline = 'tm_dom' ORDER BY id DESC LIMIT 1;
DELETE FROM dom_src WHERE id = 2;
INSERT INTO dom_src VALUES (3, 'bad', 1);
SELECT flow, status FROM autocdc.run('tm_dom');
SELECT error FROM autocdc.event_log WHERE pipeline = 'tm_dom' ORDER BY id DESC LIMIT 1;
DELETE FROM dom_src WHERE id = 3;
INSERT INTO dom_src VALUES (4, NULL, 1);
SELECT flow, status FROM autocdc.run('tm_dom');
SELECT error FROM autocdc.event_log WHERE pipeline = 'tm_dom' ORDER BY id DESC LIMIT 1;
DELETE FROM dom_src WHERE id = 4;
SELECT flow, rows_upserted, status FROM autocdc.run('tm_dom');
SELECT id, v, length(v) FROM dom ORDER BY id;
SELECT autocdc.drop_flow('dom');

-- a snapshot flow too
CREATE TABLE snap_src (id int, v text, w text);
INSERT INTO snap_src VALUES (1, 'abc', 'x'), (2, 'abcdef', 'y');
CREATE TABLE snap (id int PRIMARY KEY, v varchar(4), w tm.d5, __autocdc_sequence bigint);
SELECT autocdc.create_auto_cdc_from_snapshot_flow(target => 'snap', source => 'snap_src',
  keys => ARRAY['id'], stored_as_scd_type => 1, pipeline => 'tm_snap');
SELECT flow, status FROM autocdc.run('tm_snap');
SELECT error FROM autocdc.event_log WHERE pipeline = 'tm_snap' ORDER BY id DESC LIMIT 1;
UPDATE snap_src SET v = 'abcd' WHERE id = 2;
UPDATE snap_src SET w = 'toolong' WHERE id = 1;
SELECT flow, status FROM autocdc.run('tm_snap');
SELECT error FROM autocdc.event_log WHERE pipeline = 'tm_snap' ORDER BY id DESC LIMIT 1;
UPDATE snap_src SET w = 'x' WHERE id = 1;
SELECT flow, rows_upserted, status FROM autocdc.run('tm_snap');
SELECT * FROM snap ORDER BY id;

-- a domain without a modifier: its NOT NULL and CHECK hold for what is
-- written, not for what no write takes (a delete's values, a snapshot's
-- deletes and truncate); a partial update's unlisted value is checked
-- (a new key's row takes it) but not written over the row's
CREATE DOMAIN tm.text_nn AS text NOT NULL;
CREATE DOMAIN tm.pos AS int CHECK (VALUE > 0);
CREATE TABLE nn_src (id tm.text_nn, v text, n int, seq int, op text, cols text[]);
CREATE TABLE nn (id tm.text_nn PRIMARY KEY, v tm.text_nn, n tm.pos, __autocdc_sequence int);
SELECT autocdc.create_auto_cdc_flow(target => 'nn', source => 'nn_src', keys => ARRAY['id'],
  sequence_by => 'seq', apply_as_deletes => $$op = 'D'$$, except_column_list => ARRAY['seq', 'op', 'cols'],
  columns_to_update => 'cols', stored_as_scd_type => 1, pipeline => 'tm_nn');
INSERT INTO nn_src VALUES ('a', 'x', 1, 1, 'U', NULL), ('b', 'y', 2, 1, 'U', NULL),
  ('b', NULL, NULL, 2, 'D', NULL), ('a', 'unlisted', 5, 3, 'U', '{n}');
SELECT flow, rows_upserted, rows_deleted, status FROM autocdc.run('tm_nn');
SELECT * FROM nn ORDER BY id;
-- a column the update sets: NULL is refused, as is a value the CHECK refuses
INSERT INTO nn_src VALUES ('a', NULL, NULL, 4, 'U', '{v}');
SELECT flow, status FROM autocdc.run('tm_nn');
SELECT error FROM autocdc.event_log WHERE pipeline = 'tm_nn' ORDER BY id DESC LIMIT 1;
DELETE FROM nn_src WHERE seq = 4;
INSERT INTO nn_src VALUES ('c', 'z', 0, 1, 'U', NULL);
SELECT flow, status FROM autocdc.run('tm_nn');
SELECT error FROM autocdc.event_log WHERE pipeline = 'tm_nn' ORDER BY id DESC LIMIT 1;
DELETE FROM nn_src WHERE id = 'c';
SELECT flow, rows_upserted, status FROM autocdc.run('tm_nn');
SELECT * FROM nn ORDER BY id;
SELECT autocdc.drop_flow('nn');
CREATE TABLE nn_snap_src (id int, v text, n int);
INSERT INTO nn_snap_src VALUES (1, 'a', 1), (2, 'b', 2);
CREATE TABLE nn_snap1 (id int PRIMARY KEY, v tm.text_nn, n tm.pos, __autocdc_sequence bigint);
SELECT autocdc.create_auto_cdc_from_snapshot_flow(target => 'nn_snap1', source => 'nn_snap_src',
  keys => ARRAY['id'], stored_as_scd_type => 1, pipeline => 'tm_nn_snap');
CREATE TABLE nn_snap2 (id int, v tm.text_nn, n tm.pos, __start_at bigint, __end_at bigint, PRIMARY KEY (id, __start_at));
SELECT autocdc.create_auto_cdc_from_snapshot_flow(target => 'nn_snap2', source => 'nn_snap_src',
  keys => ARRAY['id'], stored_as_scd_type => 2, pipeline => 'tm_nn_snap');
SELECT flow, rows_upserted, status FROM autocdc.run('tm_nn_snap') ORDER BY flow;
UPDATE nn_snap_src SET v = 'c' WHERE id = 2;
DELETE FROM nn_snap_src WHERE id = 1;
SELECT flow, rows_upserted, rows_deleted, status FROM autocdc.run('tm_nn_snap') ORDER BY flow;
SELECT * FROM nn_snap1 ORDER BY id;
SELECT * FROM nn_snap2 ORDER BY id, __start_at;
UPDATE nn_snap_src SET n = -1;
SELECT flow, status FROM autocdc.run('tm_nn_snap') ORDER BY flow;
SELECT DISTINCT error FROM autocdc.event_log WHERE pipeline = 'tm_nn_snap' AND error IS NOT NULL;
SELECT autocdc.drop_flow('nn_snap1');
SELECT autocdc.drop_flow('nn_snap2');

-- a domain key whose column overrides the domain's collation
CREATE TABLE coll_src (k text COLLATE "C", v text, seq int);
CREATE TABLE coll_tgt (k tm.text_nn COLLATE "C" PRIMARY KEY, v text, __autocdc_sequence int);
SELECT autocdc.create_auto_cdc_flow(target => 'coll_tgt', source => 'coll_src', keys => ARRAY['k'],
  sequence_by => 'seq', except_column_list => ARRAY['seq'], pipeline => 'tm_coll');
INSERT INTO coll_src VALUES ('a', 'x', 1), ('B', 'y', 1), ('a', 'z', 2);
SELECT flow, rows_upserted, status FROM autocdc.run('tm_coll');
INSERT INTO coll_src VALUES ('a', 'w', 3), ('c', 'q', 1), ('B', 'late', 0);
SELECT flow, rows_upserted, rows_skipped, status FROM autocdc.run('tm_coll');
SELECT * FROM coll_tgt ORDER BY k;
SELECT autocdc.drop_flow('coll_tgt');

SELECT autocdc.drop_flow('s1');
SELECT autocdc.drop_flow('s1_watched');
SELECT autocdc.drop_flow('s2');
SELECT autocdc.drop_flow('snap');
SET client_min_messages = warning;
DROP SCHEMA tm CASCADE;
RESET client_min_messages;
