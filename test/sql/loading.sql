-- Loading a table source the usual ways once flows read it: COPY with a
-- column list (text, csv, binary), INSERT ... VALUES without a column
-- list, INSERT ... SELECT from a plain table and from another source.
-- Every row is read exactly once, by each flow, over several runs.  COPY
-- without a column list cannot work (COPY wants a value for every column,
-- __autocdc_xid too): PostgreSQL's error is pinned.
-- Creates the extension when this file runs alone (make installcheck REGRESS=...).
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS autocdc;
RESET client_min_messages;
CREATE SCHEMA ld;
SET search_path = ld, public;

-- An SCD 1 flow keeps the latest row per id; an append flow logs every
-- row it reads, so a row read twice (or never) shows there.
CREATE TABLE stg (id int, name text, seq int);
SELECT autocdc.create_auto_cdc_flow(target => 'cur', source => 'stg', keys => ARRAY['id'],
  sequence_by => 'seq', pipeline => 'ld');
CREATE TABLE log (id int, name text, seq int);
SELECT autocdc.create_append_flow(target => 'log', source => 'stg', pipeline => 'ld');
CREATE VIEW read_once AS
  SELECT (SELECT count(*) FROM log) AS logged,
         (SELECT count(*) FROM (SELECT id, seq FROM log GROUP BY id, seq HAVING count(*) > 1) d) AS read_twice,
         (SELECT count(*) FROM (SELECT id, seq FROM stg EXCEPT SELECT id, seq FROM log) m) AS never_read;

-- COPY with a column list, text format.
COPY stg (id, name, seq) FROM STDIN;
1	one	1
2	two	1
\.
SELECT flow, rows_read, rows_upserted, status FROM autocdc.run('ld') ORDER BY flow;
SELECT flow, rows_read, rows_upserted, status FROM autocdc.run('ld') ORDER BY flow;

-- csv, a header line and a row changed.
COPY stg (id, name, seq) FROM STDIN (FORMAT csv, HEADER);
id,name,seq
3,three,1
1,"one, again",2
\.
SELECT flow, rows_read, rows_upserted, status FROM autocdc.run('ld') ORDER BY flow;
SELECT flow, rows_read, rows_upserted, status FROM autocdc.run('ld') ORDER BY flow;

-- Binary, as drivers send it: COPY ... FROM STDIN through psql's \copy.
\getenv abs_builddir PG_ABS_BUILDDIR
\set bin :abs_builddir '/results/loading.bin'
\setenv AUTOCDC_LOADING_BIN :bin
COPY (SELECT * FROM (VALUES (4, 'four', 1), (2, 'two, again', 2)) v (id, name, seq)) TO STDOUT (FORMAT binary) \g :bin
\copy stg (id, name, seq) FROM PROGRAM 'cat "$AUTOCDC_LOADING_BIN"' (FORMAT binary)
SELECT flow, rows_read, rows_upserted, status FROM autocdc.run('ld') ORDER BY flow;
SELECT flow, rows_read, rows_upserted, status FROM autocdc.run('ld') ORDER BY flow;

-- INSERT ... VALUES without a column list: the values are the user's
-- columns, the stamp column comes last and takes its default.
INSERT INTO stg VALUES (5, 'five', 1), (3, 'three, again', 2);
INSERT INTO stg VALUES (6, 'six', 1, DEFAULT);
SELECT flow, rows_read, rows_upserted, status FROM autocdc.run('ld') ORDER BY flow;
SELECT flow, rows_read, rows_upserted, status FROM autocdc.run('ld') ORDER BY flow;

-- INSERT ... SELECT from a plain table.
CREATE TABLE plain (id int, name text, seq int);
INSERT INTO plain VALUES (7, 'seven', 1), (4, 'four, again', 2);
INSERT INTO stg SELECT id, name, seq FROM plain;
INSERT INTO stg SELECT id, name, seq + 1 FROM plain WHERE id = 7;
SELECT flow, rows_read, rows_upserted, status FROM autocdc.run('ld') ORDER BY flow;
SELECT flow, rows_read, rows_upserted, status FROM autocdc.run('ld') ORDER BY flow;
SELECT * FROM cur ORDER BY id;
SELECT * FROM read_once;

-- INSERT ... SELECT * from another source, whose rows its own flow read
-- after stg's last run: their stamps are older than what stg's flows have
-- read, so kept they would never be read.  Refused; with the columns named
-- they are stamped anew and read once.
CREATE TABLE other (id int, name text, seq int);
CREATE TABLE other_cur (id int PRIMARY KEY, name text, seq int);
SELECT autocdc.create_auto_cdc_flow(target => 'other_cur', source => 'other', keys => ARRAY['id'],
  sequence_by => 'seq', pipeline => 'ld_other');
INSERT INTO other VALUES (8, 'eight', 1), (5, 'five, again', 2);
SELECT flow, rows_read, rows_upserted, status FROM autocdc.run('ld_other');
SELECT flow, rows_read, rows_upserted, status FROM autocdc.run('ld') ORDER BY flow;
INSERT INTO stg SELECT * FROM other;
INSERT INTO stg (id, name, seq) SELECT id, name, seq FROM other;
SELECT flow, rows_read, rows_upserted, status FROM autocdc.run('ld') ORDER BY flow;
SELECT flow, rows_read, rows_upserted, status FROM autocdc.run('ld') ORDER BY flow;
SELECT flow, rows_read, rows_upserted, status FROM autocdc.run('ld_other');
SELECT * FROM cur WHERE id IN (5, 8) ORDER BY id;
-- Into a source whose flows never ran: refused all the same.
CREATE TABLE stg2 (id int, name text, seq int);
CREATE TABLE log2 (id int, name text, seq int);
SELECT autocdc.create_append_flow(target => 'log2', source => 'stg2', pipeline => 'ld2');
INSERT INTO stg2 SELECT * FROM other;
INSERT INTO stg2 (id, name, seq) SELECT id, name, seq FROM other;
SELECT flow, rows_read, status FROM autocdc.run('ld2');
INSERT INTO stg2 (id, name, seq) SELECT id, name, seq FROM other WHERE id = 8;
SELECT flow, rows_read, status FROM autocdc.run('ld2');
SELECT flow, rows_read, status FROM autocdc.run('ld2');
SELECT id, count(*) FROM log2 GROUP BY id ORDER BY id;

-- COPY without a column list wants a value for __autocdc_xid too.
COPY stg FROM STDIN (FORMAT csv);
9,nine,1
\.
COPY stg FROM STDIN;
9	nine	1
\.
SELECT flow, rows_read, rows_upserted, status FROM autocdc.run('ld') ORDER BY flow;

-- UPDATE: a row already read is not read again (sources are append-only
-- logs); a row updated before its first read is read once, as updated.
UPDATE stg SET name = 'ONE' WHERE id = 1 AND seq = 1;
SELECT flow, rows_read, rows_upserted, status FROM autocdc.run('ld') ORDER BY flow;
INSERT INTO stg VALUES (10, 'ten', 1);
UPDATE stg SET name = 'TEN' WHERE id = 10;
SELECT flow, rows_read, rows_upserted, status FROM autocdc.run('ld') ORDER BY flow;
SELECT flow, rows_read, rows_upserted, status FROM autocdc.run('ld') ORDER BY flow;
SELECT * FROM cur WHERE id IN (1, 10) ORDER BY id;
SELECT * FROM log WHERE id IN (1, 10) ORDER BY id, seq;

-- A column added to the source after its flows were made comes after
-- __autocdc_xid (ALTER TABLE warns): without a column list, a value meant
-- for it lands in __autocdc_xid.  An integer is refused by PostgreSQL;
-- text (which xid8 reads as 0 on PostgreSQL 15, or as a number) by autocdc:
-- any value given for __autocdc_xid is, once a column follows it.
ALTER TABLE stg ADD COLUMN note text;
INSERT INTO stg VALUES (11, 'eleven', 1, 42);
INSERT INTO stg VALUES (11, 'eleven', 1, 'a note');
INSERT INTO stg VALUES (10, 'ten', 2, '42');
COPY stg FROM STDIN (FORMAT csv);
11,eleven,1,a note
\.
COPY stg FROM STDIN (FORMAT csv);
11,eleven,1,42,a note
\.
INSERT INTO stg SELECT * FROM stg WHERE id = 1;
-- Also in a session that sets replica mode itself (to load without its
-- triggers): only a replication apply, no client's session, sets columns
-- by name.
SET session_replication_role = replica;
INSERT INTO stg VALUES (10, 'ten', 2, '42');
RESET session_replication_role;
-- Named columns, or DEFAULT in the place of __autocdc_xid, work.
INSERT INTO stg VALUES (11, 'eleven', 1, DEFAULT, 'a note');
INSERT INTO stg (id, name, seq, note) VALUES (12, 'twelve', 1, 'a note');
COPY stg (id, name, seq, note) FROM STDIN (FORMAT csv);
13,thirteen,1,a note
\.
SELECT flow, rows_read, rows_upserted, status FROM autocdc.run('ld') ORDER BY flow;
SELECT flow, rows_read, rows_upserted, status FROM autocdc.run('ld') ORDER BY flow;
SELECT id, name, seq, note FROM stg WHERE id >= 10 ORDER BY id, seq;
SELECT * FROM read_once;
-- A table with no column after __autocdc_xid says so too.
INSERT INTO stg2 VALUES (14, 'fourteen', 1, 'oops');
-- ALTER TABLE warns once for a partitioned source, only for columns after
-- __autocdc_xid, and not for a table that is no source.
CREATE TABLE pstg (id int, name text, seq int) PARTITION BY RANGE (id);
CREATE TABLE pstg_1 PARTITION OF pstg FOR VALUES FROM (1) TO (100);
CREATE TABLE plog (id int, name text, seq int);
SELECT autocdc.create_append_flow(target => 'plog', source => 'pstg', pipeline => 'ldp');
ALTER TABLE pstg ADD COLUMN a text, ADD COLUMN b int;
ALTER TABLE pstg_1 ALTER COLUMN a SET DEFAULT 'x';
ALTER TABLE plain ADD COLUMN note text;
INSERT INTO pstg (id, name, seq, a, b) VALUES (1, 'one', 1, 'a', 2);
INSERT INTO pstg VALUES (2, 'two', 1, DEFAULT, 'a', 2);
SELECT flow, rows_read, status FROM autocdc.run('ldp');
SELECT id, name, a, b FROM pstg ORDER BY id;

-- Generated columns take no value: one added after __autocdc_xid brings
-- no warning, and the column lists of the hints leave them out.  A stamp
-- given by name is refused as any given stamp is (pg_dump --data-only's
-- COPY names __autocdc_xid: pg_restore --disable-triggers keeps its
-- stamps).
CREATE TABLE gstg (id int, dbl int GENERATED ALWAYS AS (id * 2) STORED, seq int);
CREATE TABLE glog (id int, dbl int, seq int);
SELECT autocdc.create_append_flow(target => 'glog', source => 'gstg', pipeline => 'ldg');
INSERT INTO gstg VALUES (1, DEFAULT, 1);
SELECT flow, rows_read, status FROM autocdc.run('ldg');
ALTER TABLE gstg ADD COLUMN tripled int GENERATED ALWAYS AS (id * 3) STORED;
COPY gstg (id, seq, __autocdc_xid) FROM STDIN;
1	1	5
\.
SELECT flow, rows_read, status FROM autocdc.run('ldg');
ALTER TABLE gstg ADD COLUMN note text;
COPY gstg (id, seq, note) FROM STDIN;
2	1	a note
\.
INSERT INTO gstg VALUES (3, DEFAULT, 1, '7', DEFAULT, 'a note');
SELECT flow, rows_read, status FROM autocdc.run('ldg');
SELECT id, dbl, seq FROM glog ORDER BY id, seq;

DROP SCHEMA ld CASCADE;
