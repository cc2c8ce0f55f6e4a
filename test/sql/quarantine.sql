-- on_bad_event => 'quarantine': NULL sequences, NULL keys and conflicting
-- events go to autocdc.quarantine instead of failing the run (both events
-- of a conflict in one run; an event conflicting with one an earlier run
-- applied alone, naming it), SCD 1 and SCD 2; bad-input checks come before
-- expectations; a row is quarantined once; fixing and replaying a row;
-- row-level security on the quarantine; its retention.
-- Creates the extension when this file runs alone (make installcheck REGRESS=...).
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS autocdc;
RESET client_min_messages;
CREATE SCHEMA qu;
SET search_path = qu, public;

-- The default is 'fail', as before.
CREATE TABLE c1 (id int, v text, op text, seq int);
SELECT autocdc.create_auto_cdc_flow(target => 't1', source => 'c1', keys => ARRAY['id'],
  sequence_by => 'seq', apply_as_deletes => $$op = 'D'$$, except_column_list => ARRAY['op'],
  pipeline => 'qu', on_bad_event => 'quarantine',
  expect_or_drop => '{"v_short": "length(v) < 5"}');
SELECT options->'on_bad_event' FROM autocdc.flows WHERE name = 't1';

-- Each bad-input kind in one run: a NULL sequence (key 1), a NULL key, two
-- different events at key 3 and sequence 1 (both set aside, no winner), an
-- exact repeat (one event, kept), and rows that are fine.  The NULL key row
-- also fails the expectation: bad input comes first.
INSERT INTO c1 VALUES (1, 'a', 'U', NULL), (NULL, 'toolong', 'U', 1),
  (3, 'x', 'U', 1), (3, 'y', 'U', 1), (3, 'z', 'U', 2),
  (4, 'p', 'U', 1), (4, 'p', 'U', 1), (5, 'q', 'U', 1), (6, 'toolong', 'U', 1);
SELECT flow, rows_read, rows_upserted, rows_dropped, status, error FROM autocdc.run('qu');
TABLE t1 ORDER BY id;
SELECT reason, expectations, "row", key, sequence, conflicts_with
  FROM autocdc.quarantine WHERE flow = 't1' ORDER BY reason, sequence, "row"->>'v';
SELECT rows_read, rows_upserted, rows_dropped, rows_quarantined FROM autocdc.event_log
  WHERE flow = 't1' ORDER BY id;

-- Events conflicting with ones an earlier run applied are set aside alone,
-- naming the applied event: an upsert at key 5's applied upsert with other
-- values (the target's row stands for it) and an upsert at the sequence of
-- a delete applied to key 4; then a delete at key 3's applied upsert.
INSERT INTO c1 VALUES (4, NULL, 'D', 2);
SELECT flow, rows_read, rows_deleted, status FROM autocdc.run('qu');
INSERT INTO c1 VALUES (5, 'oth', 'U', 1), (4, 'back', 'U', 2), (5, 'r', 'U', 3);
SELECT flow, rows_read, rows_upserted, rows_deleted, rows_skipped, status, error FROM autocdc.run('qu');
INSERT INTO c1 VALUES (3, NULL, 'D', 2);
SELECT flow, rows_read, rows_upserted, rows_deleted, rows_skipped, status, error FROM autocdc.run('qu');
TABLE t1 ORDER BY id;
SELECT reason, "row", key, sequence, conflicts_with
  FROM autocdc.quarantine WHERE flow = 't1' AND reason = 'conflict_applied' ORDER BY "row"->>'op', "row"->>'v';
-- An exact repeat of an applied event is no conflict: skipped, as always.
INSERT INTO c1 VALUES (5, 'r', 'U', 3);
SELECT flow, rows_read, rows_skipped, status FROM autocdc.run('qu');
SELECT rows_quarantined FROM autocdc.event_log WHERE flow = 't1' ORDER BY id DESC LIMIT 1;

-- Fixing and replaying: insert the row corrected into the source (here the
-- NULL sequence given one, the conflict of key 3 resolved by a later
-- sequence), then delete it from the quarantine.
INSERT INTO c1 SELECT id, v, op, 7 FROM jsonb_populate_record(NULL::c1,
  (SELECT "row" FROM autocdc.quarantine WHERE flow = 't1' AND reason = 'null_sequence'));
INSERT INTO c1 VALUES (3, 'y', 'U', 8);
DELETE FROM autocdc.quarantine WHERE flow = 't1' AND reason IN ('null_sequence', 'conflict');
SELECT flow, rows_read, rows_upserted, status FROM autocdc.run('qu');
TABLE t1 ORDER BY id;

-- SCD 2: in-run conflicts and one with a stored event.
CREATE TABLE c2 (id int, v text, seq int);
SELECT autocdc.create_auto_cdc_flow(target => 't2', source => 'c2', keys => ARRAY['id'],
  sequence_by => 'seq', stored_as_scd_type => 2, pipeline => 'qu2', on_bad_event => 'quarantine');
INSERT INTO c2 VALUES (1, 'a', 1), (1, 'b', 2), (2, 'x', 1), (2, 'y', 1), (NULL, 'n', 1), (3, 's', NULL);
SELECT flow, rows_read, rows_upserted, status, error FROM autocdc.run('qu2');
SELECT id, v, __start_at, __end_at FROM t2 ORDER BY id, __start_at;
INSERT INTO c2 VALUES (1, 'other', 1), (1, 'c', 3);
SELECT flow, rows_read, rows_upserted, rows_skipped, status, error FROM autocdc.run('qu2');
SELECT id, v, __start_at, __end_at FROM t2 ORDER BY id, __start_at;
SELECT reason, "row", key, sequence, conflicts_with
  FROM autocdc.quarantine WHERE flow = 't2' ORDER BY reason, "row"->>'v';

-- With on_bad_event => 'fail' (the default) the same conflict fails the run.
CREATE TABLE c3 (id int, v text, seq int);
SELECT autocdc.create_auto_cdc_flow(target => 't3', source => 'c3', keys => ARRAY['id'],
  sequence_by => 'seq', pipeline => 'qu3');
INSERT INTO c3 VALUES (1, 'a', 1), (1, 'b', 1);
SELECT flow, status, error FROM autocdc.run('qu3');

-- A view is read whole (by a ONCE flow, and again by a full refresh): its
-- bad rows are quarantined once.
CREATE VIEW c2v AS SELECT * FROM c2;
SELECT autocdc.create_auto_cdc_flow(target => 't2v', source => 'c2v', keys => ARRAY['id'],
  sequence_by => 'seq', pipeline => 'qu2v', on_bad_event => 'quarantine', once => true);
SELECT flow, rows_read, status FROM autocdc.run('qu2v');
SELECT flow, rows_read, status FROM autocdc.run('qu2v', full_refresh => true);
SELECT rows_read, rows_quarantined FROM autocdc.event_log WHERE flow = 't2v' ORDER BY id;
SELECT reason, count(*) FROM autocdc.quarantine WHERE flow = 't2v' GROUP BY reason ORDER BY reason;

-- Row-level security: each role sees the quarantined rows of its own
-- flows; nobody but autocdc inserts or changes them.
CREATE ROLE acdc_qa LOGIN;
CREATE ROLE acdc_qb LOGIN;
CREATE SCHEMA qa AUTHORIZATION acdc_qa;
SET ROLE acdc_qa;
CREATE TABLE qa.src (id int, v int, seq int);
SELECT autocdc.create_auto_cdc_flow(target => 'qa.t', source => 'qa.src', keys => ARRAY['id'],
  sequence_by => 'seq', pipeline => 'qa', expect_or_drop => '{"v_positive": "v > 0"}');
INSERT INTO qa.src VALUES (1, -1, 1), (2, 2, 1);
SELECT flow, rows_read, rows_dropped, status FROM autocdc.run('qa');
SELECT flow, reason, "row" FROM autocdc.quarantine ORDER BY id;
SELECT flow, name, last_failed FROM autocdc.expectations;
UPDATE autocdc.quarantine SET reason = 'null_key';
SET ROLE acdc_qb;
SELECT count(*) FROM autocdc.quarantine;
SELECT count(*) FROM autocdc.expectations;
DELETE FROM autocdc.quarantine;
SELECT autocdc.add_expectation('qa.t', 'x', 'true');
SELECT autocdc.drop_expectation('qa.t', 'v_positive');
RESET ROLE;
SELECT flow, reason FROM autocdc.quarantine WHERE flow = 'qa.t';
-- Its owner deletes a row it replayed (only its own).
SET ROLE acdc_qa;
INSERT INTO qa.src SELECT id, 1, 2 FROM jsonb_populate_record(NULL::qa.src,
  (SELECT "row" FROM autocdc.quarantine WHERE flow = 'qa.t'));
SELECT flow, rows_read, rows_upserted, status FROM autocdc.run('qa');
TABLE qa.t ORDER BY id;
DELETE FROM autocdc.quarantine;
RESET ROLE;
SELECT count(*) FROM autocdc.quarantine WHERE flow = 'qa.t';
SELECT count(*) > 0 AS others_kept FROM autocdc.quarantine;

-- Retention: rows older than autocdc.quarantine_retention go with the
-- event log's pruning at the end of a run.
SET autocdc.quarantine_retention = 0;
SELECT count(*) > 0 AS some FROM autocdc.quarantine;
SELECT flow, status FROM autocdc.run('qu3');
SELECT count(*) FROM autocdc.quarantine;
RESET autocdc.quarantine_retention;

-- A flow name used again by another role after a drop: a row set aside by
-- the new flow that is equal to one the old flow set aside is its own (it
-- is neither lost nor a sign of the other role's row).
SET ROLE acdc_qa;
SELECT autocdc.create_append_flow(name => 'qre', target => 'qa.tre', source => 'qa.src',
  pipeline => 'qa', expect_or_drop => '{"v_big": "v > 1"}');
SELECT flow, rows_read, rows_dropped, status FROM autocdc.run('qa', flows => ARRAY['qre']);
SELECT autocdc.drop_flow('qre');
RESET ROLE;
CREATE SCHEMA qb AUTHORIZATION acdc_qb;
SET ROLE acdc_qb;
CREATE TABLE qb.src (id int, v int, seq int);
INSERT INTO qb.src VALUES (1, -1, 1);
SELECT autocdc.create_append_flow(name => 'qre', target => 'qb.tre', source => 'qb.src',
  pipeline => 'qb', expect_or_drop => '{"v_big": "v > 1"}');
SELECT flow, rows_read, rows_dropped, status FROM autocdc.run('qb');
SELECT rows_dropped, rows_quarantined FROM autocdc.event_log WHERE flow = 'qre';
SELECT flow, "row" FROM autocdc.quarantine;
RESET ROLE;
SELECT flow_owner, "row" FROM autocdc.quarantine WHERE flow = 'qre' ORDER BY flow_owner::text, "row"->>'seq';
SET ROLE acdc_qb;
-- An append flow appends identical rows each: each one dropped is set
-- aside (a view read again still adds none).
INSERT INTO qb.src VALUES (2, -2, 1), (2, -2, 1), (3, 3, 1), (3, 3, 1);
SELECT flow, rows_read, rows_dropped, status FROM autocdc.run('qb');
SELECT count(*) FROM qb.tre;
SELECT "row", count(*) FROM autocdc.quarantine GROUP BY "row" ORDER BY "row"->>'id';
CREATE VIEW qb.srcv AS SELECT id, v, seq FROM qb.src;
SELECT autocdc.create_append_flow(name => 'qrev', target => 'qb.trev', source => 'qb.srcv',
  pipeline => 'qbv', once => true, expect_or_drop => '{"v_big": "v > 1"}');
SELECT flow, rows_read, rows_dropped, status FROM autocdc.run('qbv');
SELECT flow, rows_read, rows_dropped, status FROM autocdc.run('qbv', full_refresh => true);
SELECT rows_dropped, rows_quarantined FROM autocdc.event_log WHERE flow = 'qrev' ORDER BY id;
RESET ROLE;

-- A flow in a pipeline of a group role: its quarantined rows are its
-- source's, which the group's other members may not read; they neither
-- see nor delete them (the pipeline's event log rows they do see).
CREATE ROLE acdc_qgrp;
CREATE ROLE acdc_qm1 IN ROLE acdc_qgrp;
CREATE ROLE acdc_qm2 IN ROLE acdc_qgrp;
CREATE SCHEMA qg AUTHORIZATION acdc_qgrp;
CREATE SCHEMA qm1 AUTHORIZATION acdc_qm1;
SET ROLE acdc_qgrp;
CREATE TABLE qg.src (id int, v int, seq int);
SELECT autocdc.create_auto_cdc_flow(name => 'qg_f', target => 'qg.t', source => 'qg.src',
  keys => ARRAY['id'], sequence_by => 'seq', pipeline => 'qg');
SET ROLE acdc_qm1;
CREATE TABLE qm1.secret (id int, v int, seq int, note text);
INSERT INTO qm1.secret VALUES (1, -1, 1, 'private');
SELECT autocdc.create_auto_cdc_flow(name => 'qm1_f', target => 'qm1.t', source => 'qm1.secret',
  keys => ARRAY['id'], sequence_by => 'seq', pipeline => 'qg', expect_or_drop => '{"pos": "v > 0"}');
SELECT flow, rows_dropped, status FROM autocdc.run('qg') ORDER BY flow;
SELECT flow, "row" FROM autocdc.quarantine WHERE flow = 'qm1_f';
SET ROLE acdc_qm2;
SELECT flow, rows_dropped FROM autocdc.event_log WHERE pipeline = 'qg' ORDER BY flow;
SELECT flow, "row" FROM autocdc.quarantine WHERE flow = 'qm1_f';
DELETE FROM autocdc.quarantine WHERE flow = 'qm1_f';
RESET ROLE;
SELECT flow, "row" FROM autocdc.quarantine WHERE flow = 'qm1_f';

SET client_min_messages = warning;
DROP SCHEMA qu CASCADE;
DROP SCHEMA qa CASCADE;
DROP SCHEMA qb CASCADE;
DROP SCHEMA qg CASCADE;
DROP SCHEMA qm1 CASCADE;
RESET client_min_messages;
DROP ROLE acdc_qa, acdc_qb, acdc_qm1, acdc_qm2, acdc_qgrp;
