-- Retention is the target's: tombstone_retention on a flow sets it, NULL
-- leaves it to autocdc.tombstone_retention, which only a superuser sets.
-- Creates the extension when this file runs alone (make installcheck REGRESS=...).
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS autocdc;
RESET client_min_messages;
SET client_min_messages = warning;
CREATE ROLE ret_r_user;
CREATE TABLE ret_r_src (id int, v text, seq int, op text);
SELECT autocdc.create_auto_cdc_flow(target => 'ret_r1', source => 'ret_r_src', keys => ARRAY['id'],
  sequence_by => 'seq', apply_as_deletes => $$op = 'D'$$, column_list => ARRAY['v'],
  tombstone_retention => '0', pipeline => 'ret_r');
SELECT autocdc.create_auto_cdc_flow(target => 'ret_r2', source => 'ret_r_src', keys => ARRAY['id'],
  sequence_by => 'seq', apply_as_deletes => $$op = 'D'$$, column_list => ARRAY['v'],
  pipeline => 'ret_r');
-- Flows into one target agree: the same retention, or none.
CREATE TABLE ret_r_src2 (LIKE ret_r_src);
SELECT autocdc.create_auto_cdc_flow(target => 'ret_r1', source => 'ret_r_src2', keys => ARRAY['id'],
  sequence_by => 'seq', column_list => ARRAY['v'], name => 'ret_r1_b',
  tombstone_retention => '1 day', pipeline => 'ret_r');
SELECT autocdc.create_auto_cdc_flow(target => 'ret_r1', source => 'ret_r_src2', keys => ARRAY['id'],
  sequence_by => 'seq', column_list => ARRAY['v'], name => 'ret_r1_b',
  tombstone_retention => '00:00:00', pipeline => 'ret_r');
SELECT autocdc.create_auto_cdc_flow(target => 'ret_r1', source => 'ret_r_src2', keys => ARRAY['id'],
  sequence_by => 'seq', column_list => ARRAY['v'], name => 'ret_r1_c', pipeline => 'ret_r');
SELECT name, target, tombstone_retention, options->'tombstone_retention' AS given
  FROM autocdc.flows WHERE pipeline = 'ret_r' ORDER BY name;
SELECT autocdc.drop_flow('ret_r1_b');
SELECT autocdc.drop_flow('ret_r1_c');

SET ROLE ret_r_user;
SET autocdc.tombstone_retention = '1h';
SHOW autocdc.tombstone_retention;
SELECT context FROM autocdc.settings WHERE name = 'autocdc.tombstone_retention';
RESET ROLE;

-- SCD 1: ret_r1 forgets its tombstones at its next run, ret_r2 keeps them 2 days.
INSERT INTO ret_r_src VALUES (1, 'a', 1, NULL), (1, NULL, 5, 'D'), (2, 'b', 1, NULL), (2, NULL, 5, 'D');
SELECT flow, rows_upserted, rows_deleted FROM autocdc.run('ret_r') ORDER BY flow;
SELECT flow, rows_read FROM autocdc.run('ret_r') ORDER BY flow;
CREATE FUNCTION ret_r_count(q text) RETURNS text LANGUAGE sql
  AS $$ SELECT string_agg(x::text, ' ') FROM unnest(xpath('/row/*/text()', query_to_xml(q, false, true, ''))) x $$;
SELECT target, ret_r_count(format('SELECT count(*) FROM %s', state_table)) AS state_rows
  FROM autocdc.target WHERE target IN ('ret_r1'::regclass, 'ret_r2'::regclass) ORDER BY target::text;
-- A late upsert older than the delete: back in ret_r1, kept out of ret_r2.
INSERT INTO ret_r_src VALUES (1, 'late', 3, NULL);
SELECT flow, rows_upserted, rows_skipped FROM autocdc.run('ret_r') ORDER BY flow;
SELECT 'ret_r1' AS t, * FROM ret_r1 UNION ALL SELECT 'ret_r2', * FROM ret_r2 ORDER BY 1, 2;

-- The state has no index on when a key died: a run looks for tombstones
-- past the retention (a scan) at most once per tenth of it, and records
-- when in autocdc.target.  Ages are set back by hand here.
CREATE TABLE ret_t_src (id int, v text, seq int, op text);
SELECT autocdc.create_auto_cdc_flow(target => 'ret_t', source => 'ret_t_src', keys => ARRAY['id'],
  sequence_by => 'seq', apply_as_deletes => $$op = 'D'$$, except_column_list => ARRAY['op', 'seq'],
  tombstone_retention => '10 minutes', pipeline => 'ret_t');
SELECT count(*) AS state_indexes, bool_and(i.indisprimary) AS only_the_key
  FROM autocdc.target t JOIN pg_index i ON i.indrelid = t.state_table WHERE t.target = 'ret_t'::regclass;
SELECT tombstones_purged_at FROM autocdc.target WHERE target = 'ret_t'::regclass;
INSERT INTO ret_t_src VALUES (1, 'a', 1, NULL), (1, NULL, 2, 'D'), (2, 'b', 1, NULL), (2, NULL, 2, 'D');
SELECT rows_deleted FROM autocdc.run('ret_t');
SELECT now() - tombstones_purged_at < interval '1 minute' AS looked FROM autocdc.target WHERE target = 'ret_t'::regclass;
CREATE FUNCTION ret_t_age(k int, age interval) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  EXECUTE format('UPDATE %s SET __autocdc_deleted_at = now() - $2 WHERE id = $1',
                 (SELECT state_table FROM autocdc.target WHERE target = 'ret_t'::regclass)) USING k, age;
END $$;
CREATE FUNCTION ret_t_dead() RETURNS text LANGUAGE plpgsql AS $$
DECLARE r text;
BEGIN
  EXECUTE format('SELECT string_agg(id::text, '' '' ORDER BY id) FROM %s',
                 (SELECT state_table FROM autocdc.target WHERE target = 'ret_t'::regclass)) INTO r;
  RETURN r;
END $$;
-- Key 1 died 11 minutes ago, but a run looked a moment ago: kept.
SELECT ret_t_age(1, '11 minutes');
INSERT INTO ret_t_src VALUES (3, 'c', 1, NULL);
SELECT rows_upserted FROM autocdc.run('ret_t');
SELECT ret_t_dead() AS tombstones;
-- A minute after the last look (a tenth of the retention), the next run looks.
UPDATE autocdc.target SET tombstones_purged_at = now() - interval '1 minute' WHERE target = 'ret_t'::regclass;
INSERT INTO ret_t_src VALUES (4, 'd', 1, NULL);
SELECT rows_upserted FROM autocdc.run('ret_t');
SELECT ret_t_dead() AS tombstones,
       (SELECT now() - tombstones_purged_at < interval '1 minute' FROM autocdc.target WHERE target = 'ret_t'::regclass) AS looked;
-- Key 1 forgotten: a late upsert older than its delete brings it back; key 2's stays out.
INSERT INTO ret_t_src VALUES (1, 'late', 1, NULL), (2, 'late', 1, NULL);
SELECT rows_upserted, rows_skipped FROM autocdc.run('ret_t');
SELECT * FROM ret_t ORDER BY id;
-- A failed run keeps the tombstone and the time of the last look; the next run looks.
UPDATE autocdc.target SET tombstones_purged_at = now() - interval '1 hour' WHERE target = 'ret_t'::regclass;
SELECT ret_t_age(2, '11 minutes');
INSERT INTO ret_t_src VALUES (5, 'e', NULL, NULL);
SELECT status FROM autocdc.run('ret_t');
SELECT ret_t_dead() AS tombstones,
       (SELECT now() - tombstones_purged_at > interval '59 minutes' FROM autocdc.target WHERE target = 'ret_t'::regclass) AS not_looked;
DELETE FROM ret_t_src WHERE id = 5;
SELECT status FROM autocdc.run('ret_t');
SELECT ret_t_dead() AS tombstones;
SELECT autocdc.drop_flow('ret_t');
DROP TABLE ret_t, ret_t_src;
DROP FUNCTION ret_t_age(int, interval), ret_t_dead();

-- SCD 2: a delete stored longer ago than the retention becomes the key's
-- floor: the events before it are dropped, history before it stays, a
-- later event older than it is skipped, newer ones fold as ever.
CREATE TABLE ret_h_src (id int, v text, seq int, op text);
SELECT autocdc.create_auto_cdc_flow(target => 'ret_h_kept', source => 'ret_h_src', keys => ARRAY['id'],
  sequence_by => 'seq', apply_as_deletes => $$op = 'D'$$, column_list => ARRAY['v'],
  stored_as_scd_type => 2, pipeline => 'ret_h');
SELECT autocdc.create_auto_cdc_flow(target => 'ret_h_purged', source => 'ret_h_src', keys => ARRAY['id'],
  sequence_by => 'seq', apply_as_deletes => $$op = 'D'$$, column_list => ARRAY['v'],
  stored_as_scd_type => 2, tombstone_retention => '0', pipeline => 'ret_h');
INSERT INTO ret_h_src VALUES (1, 'a', 1, NULL), (1, 'b', 3, NULL), (1, NULL, 5, 'D'), (2, 'x', 1, NULL);
SELECT flow, rows_upserted FROM autocdc.run('ret_h') ORDER BY flow;
SELECT flow, rows_read FROM autocdc.run('ret_h') ORDER BY flow;
-- Stored: the delete; each upsert started a version alone, which its row holds.
SELECT target, ret_r_count(format('SELECT count(*), count(*) FILTER (WHERE __autocdc_stored_at IS NULL) FROM %s',
                              state_table)) AS events_and_floors
  FROM autocdc.target WHERE target IN ('ret_h_kept'::regclass, 'ret_h_purged'::regclass) ORDER BY target::text;
INSERT INTO ret_h_src VALUES (1, 'late', 2, NULL), (1, 'd', 6, NULL), (1, 'c', 7, NULL), (2, 'y', 2, NULL);
SELECT flow, rows_read, rows_upserted, rows_skipped, status FROM autocdc.run('ret_h') ORDER BY flow;
SELECT 'kept' AS t, * FROM ret_h_kept UNION ALL SELECT 'purged', * FROM ret_h_purged ORDER BY 1, 2, 4;
-- Late events are skipped again.
INSERT INTO ret_h_src VALUES (1, 'late again', 4, NULL), (1, 'e', 8, NULL);
SELECT flow, rows_read, rows_upserted, rows_skipped, status FROM autocdc.run('ret_h') ORDER BY flow;
SELECT * FROM ret_h_purged WHERE id = 1 ORDER BY __start_at;

-- autocdc.compact(target, before): keeps what an event at or after
-- `before` needs.  SCD 2: per key, the events before its last delete older
-- than `before` go, that delete becomes the key's floor.
CREATE TABLE ret_c_src (id int, v text, seq int, op text);
SELECT autocdc.create_auto_cdc_flow(target => 'ret_c_h', source => 'ret_c_src', keys => ARRAY['id'],
  sequence_by => 'seq', apply_as_deletes => $$op = 'D'$$, column_list => ARRAY['v'],
  stored_as_scd_type => 2, pipeline => 'ret_c');
INSERT INTO ret_c_src VALUES (1, 'a', 1, NULL), (1, NULL, 2, 'D'), (1, 'b', 3, NULL), (1, NULL, 4, 'D'),
                         (1, 'c', 6, NULL), (2, 'x', 1, NULL), (2, 'y', 5, NULL);
SELECT rows_upserted FROM autocdc.run('ret_c');
SELECT * FROM autocdc.compact('ret_c_h', '5');
SELECT * FROM autocdc.compact('ret_c_h', '5');
INSERT INTO ret_c_src VALUES (1, 'late', 3, NULL), (1, 'ok', 5, NULL), (2, 'late2', 2, NULL);
SELECT rows_read, rows_upserted, rows_skipped FROM autocdc.run('ret_c');
SELECT * FROM ret_c_h ORDER BY id, __start_at;
-- SCD 1: the tombstones of dead keys whose events are all older than
-- `before` go; a later event older than the delete brings the key back.
SELECT * FROM autocdc.compact('ret_r2', '5');
SELECT * FROM autocdc.compact('ret_r2', '6');
INSERT INTO ret_r_src VALUES (2, 'back', 4, NULL);
SELECT flow, rows_upserted FROM autocdc.run('ret_r', flows => ARRAY['ret_r2']);
SELECT * FROM ret_r2 ORDER BY id;
-- Only for a role with the target owner's privileges, on AUTO CDC targets.
SET ROLE ret_r_user;
SELECT * FROM autocdc.compact('ret_r1', '1');
RESET ROLE;
SELECT * FROM autocdc.compact('ret_r_src', '1');
SELECT * FROM autocdc.compact('ret_c_h', 'not a number');

-- autocdc.source_progress: below which transaction every flow over a
-- table source has read it.  NULL while a flow has not run.
CREATE TABLE ret_p_src (id int, v text, seq int);
SELECT autocdc.create_auto_cdc_flow(target => 'ret_p1', source => 'ret_p_src', keys => ARRAY['id'],
  sequence_by => 'seq', pipeline => 'ret_p');
SELECT autocdc.create_append_flow(target => 'ret_p2', source => 'ret_p_src', pipeline => 'ret_p2');
INSERT INTO ret_p_src VALUES (1, 'a', 1), (2, 'b', 1);
SELECT rows_read FROM autocdc.run('ret_p');
SELECT source, flows, read_below IS NULL AS not_yet FROM autocdc.source_progress WHERE source = 'ret_p_src'::regclass;
SELECT rows_read FROM autocdc.run('ret_p2');
SELECT source, flows, read_below IS NOT NULL AS known,
       ready = format('__autocdc_xid OPERATOR(pg_catalog.<) %L::pg_catalog.xid8', read_below) AS ready_ok
  FROM autocdc.source_progress WHERE source = 'ret_p_src'::regclass;
-- Pruning what every flow read changes nothing the next runs do.
INSERT INTO ret_p_src VALUES (3, 'c', 1);
DELETE FROM ret_p_src WHERE __autocdc_xid < (SELECT read_below FROM autocdc.source_progress
                                          WHERE source = 'ret_p_src'::regclass);
SELECT id FROM ret_p_src;
SELECT flow, rows_read FROM autocdc.run('ret_p') UNION ALL SELECT flow, rows_read FROM autocdc.run('ret_p2');
SELECT (SELECT count(*) FROM ret_p1) AS p1_rows, (SELECT count(*) FROM ret_p2) AS p2_rows;
-- A snapshot flow reads its source whole at every run: never prunable.
SELECT autocdc.create_auto_cdc_from_snapshot_flow(target => 'ret_p3', keys => ARRAY['id'],
  source => 'ret_p_src', pipeline => 'ret_p3');
SELECT rows_read FROM autocdc.run('ret_p3');
SELECT source, flows, read_below, ready FROM autocdc.source_progress WHERE source = 'ret_p_src'::regclass;
-- Other roles see only the sources of flows they see, or tables they own.
SET ROLE ret_r_user;
SELECT count(*) FROM autocdc.source_progress;
RESET ROLE;

SELECT autocdc.drop_flow(name) FROM autocdc.flows
 WHERE pipeline IN ('ret_r', 'ret_h', 'ret_c', 'ret_p', 'ret_p2', 'ret_p3') ORDER BY name;
DROP TABLE ret_r1, ret_r2, ret_r_src, ret_r_src2, ret_h_kept, ret_h_purged, ret_h_src, ret_c_h, ret_c_src, ret_p1, ret_p2, ret_p3, ret_p_src;
DROP FUNCTION ret_r_count(text);
DROP ROLE ret_r_user;
RESET client_min_messages;
