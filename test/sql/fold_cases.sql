-- Cases of the fold engine, most in pairs of pipelines over one source
-- (targets *_c and *_sql): until 0.2.0 one pair ran the fold in C, the
-- other the fold in SQL that took the batches the C fold refused; the
-- outputs here are the ones both gave then, and the one engine gives
-- them now.  Rounds of out-of-order events, then what the C fold used to
-- refuse: bad events, truncates, values equal by "=" but not in binary,
-- keys of a nondeterministic collation, rows past its memory.
-- Creates the extension when this file runs alone (make installcheck REGRESS=...).
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS autocdc;
RESET client_min_messages;
CREATE SCHEMA bfo;
SET search_path = bfo, public;
\set VERBOSITY default

CREATE TABLE src (id int, tag text, v numeric, op text, seq bigint);
SELECT autocdc.create_auto_cdc_flow(target => 't_c', source => 'src', keys => ARRAY['id', 'tag'],
  sequence_by => 'seq', apply_as_deletes => $$op = 'D'$$, except_column_list => ARRAY['op', 'seq'],
  pipeline => 'bf_c', name => 'bf_c');
SELECT autocdc.create_auto_cdc_flow(target => 't_sql', source => 'src', keys => ARRAY['id', 'tag'],
  sequence_by => 'seq', apply_as_deletes => $$op = 'D'$$, except_column_list => ARRAY['op', 'seq'],
  pipeline => 'bf_sql', name => 'bf_sql');
SELECT autocdc.create_auto_cdc_flow(target => 't2_c', source => 'src', keys => ARRAY['id', 'tag'],
  sequence_by => 'seq', apply_as_deletes => $$op = 'D'$$, except_column_list => ARRAY['op', 'seq'],
  stored_as_scd_type => 2, pipeline => 'bf_c', name => 'bf2_c');
SELECT autocdc.create_auto_cdc_flow(target => 't2_sql', source => 'src', keys => ARRAY['id', 'tag'],
  sequence_by => 'seq', apply_as_deletes => $$op = 'D'$$, except_column_list => ARRAY['op', 'seq'],
  stored_as_scd_type => 2, pipeline => 'bf_sql', name => 'bf2_sql');

-- Rounds of 400 events over 50 keys: out of order, exact duplicates
-- (replays of earlier rounds too), deletes, late events under deletes.
CREATE FUNCTION feed(r int) RETURNS void LANGUAGE sql AS $$
  INSERT INTO src
  SELECT k % 25, CASE WHEN k % 2 = 0 THEN 'a' ELSE 'b' END,
         CASE WHEN op = 'D' THEN NULL ELSE (s * 7 % 1000)::numeric / 10 END, op, s
  FROM (SELECT g % 50 AS k,
               CASE WHEN (g * 13 + r) % 10 = 0 THEN 'D' ELSE 'U' END AS op,
               CASE WHEN (g + r) % 9 = 0 THEN (r * 1000 + g) - 1500   -- late, into an earlier round
                    ELSE r * 1000 + g END AS s
        FROM generate_series(1, 400) g) e;
  -- exact duplicates of rows already read
  INSERT INTO src SELECT id, tag, v, op, seq FROM src WHERE seq % 17 = r % 17 LIMIT 30;
$$;
CREATE TABLE counts (round int, mode text, scd int, rows_read bigint, rows_upserted bigint,
                     rows_deleted bigint, rows_skipped bigint, status text);
CREATE FUNCTION round(r int) RETURNS TABLE (same_rows boolean, same_counts boolean)
LANGUAGE plpgsql AS $$
BEGIN
  PERFORM feed(r);
  INSERT INTO counts SELECT r, 'c', CASE WHEN flow LIKE 'bf2%' THEN 2 ELSE 1 END, rows_read,
    rows_upserted, rows_deleted, rows_skipped, status FROM autocdc.run('bf_c');
  INSERT INTO counts SELECT r, 'sql', CASE WHEN flow LIKE 'bf2%' THEN 2 ELSE 1 END, rows_read,
    rows_upserted, rows_deleted, rows_skipped, status FROM autocdc.run('bf_sql');
  RETURN QUERY SELECT
    NOT EXISTS ((TABLE t_c EXCEPT ALL TABLE t_sql) UNION ALL (TABLE t_sql EXCEPT ALL TABLE t_c))
    AND NOT EXISTS ((TABLE t2_c EXCEPT ALL TABLE t2_sql) UNION ALL (TABLE t2_sql EXCEPT ALL TABLE t2_c)),
    (SELECT bool_and(n = 1) FROM (SELECT count(DISTINCT (rows_read, rows_upserted, rows_deleted, rows_skipped, status)) AS n
       FROM counts WHERE round = r GROUP BY scd) d);
END $$;
SELECT r, s.* FROM generate_series(1, 5) r, round(r) s;
SELECT round, scd, rows_read, rows_upserted, rows_deleted, rows_skipped, status FROM counts WHERE mode = 'c' ORDER BY round, scd;
SELECT count(*) AS versions, count(*) FILTER (WHERE __end_at IS NULL) AS open FROM t2_c;
SELECT count(*) AS live_keys FROM t_c;

-- A run over every row again (full refresh) folds to the same target.
CREATE TABLE before AS TABLE t_c;
CREATE TABLE before2 AS TABLE t2_c;
SELECT flow, rows_read, rows_upserted, rows_deleted, status FROM autocdc.run('bf_c', full_refresh => true) ORDER BY flow;
SELECT NOT EXISTS ((TABLE t_c EXCEPT ALL TABLE before) UNION ALL (TABLE before EXCEPT ALL TABLE t_c))
  AND NOT EXISTS ((TABLE t2_c EXCEPT ALL TABLE before2) UNION ALL (TABLE before2 EXCEPT ALL TABLE t2_c))
  AS same_after_refresh;

-- Two different events at one key and sequence: the error, and nothing
-- applied.
INSERT INTO src VALUES (1, 'b', 1, 'U', 90001), (1, 'b', 2, 'U', 90001);
SELECT flow, rows_read, status FROM autocdc.run('bf_c') ORDER BY flow;
SELECT flow, error FROM autocdc.event_log WHERE flow IN ('bf_c', 'bf2_c') ORDER BY id DESC LIMIT 2;
DELETE FROM src WHERE seq = 90001;
SELECT r.flow IS NOT NULL AS sql_run FROM autocdc.run('bf_sql') r;

-- Values equal by "=" but not in binary: numeric 1.0 and 1.00.  Each
-- step is run by both pipelines, into n_c and n_sql.
CREATE TABLE nsrc (id numeric, v numeric, seq int);
SELECT autocdc.create_auto_cdc_flow(target => 'n_c', source => 'nsrc', keys => ARRAY['id'],
  sequence_by => 'seq', pipeline => 'bf_n');
SELECT autocdc.create_auto_cdc_flow(target => 'n_sql', source => 'nsrc', keys => ARRAY['id'],
  sequence_by => 'seq', pipeline => 'bf_nsql');
SELECT autocdc.create_auto_cdc_flow(target => 'n2_c', source => 'nsrc', keys => ARRAY['id'],
  sequence_by => 'seq', stored_as_scd_type => 2, pipeline => 'bf_n');
SELECT autocdc.create_auto_cdc_flow(target => 'n2_sql', source => 'nsrc', keys => ARRAY['id'],
  sequence_by => 'seq', stored_as_scd_type => 2, pipeline => 'bf_nsql');
CREATE FUNCTION run_n() RETURNS TABLE (flow text, rows_read bigint, rows_upserted bigint,
  rows_skipped bigint, status text) LANGUAGE plpgsql AS $$
BEGIN
  RETURN QUERY SELECT r.flow, r.rows_read, r.rows_upserted, r.rows_skipped, r.status FROM autocdc.run('bf_n') r ORDER BY 1;
  RETURN QUERY SELECT r.flow, r.rows_read, r.rows_upserted, r.rows_skipped, r.status FROM autocdc.run('bf_nsql') r ORDER BY 1;
END $$;
-- the event stores of n2_c and n2_sql, as the keys are spelled there (empty
-- while every upsert starts a version alone: the target's rows hold those)
CREATE FUNCTION stored_events() RETURNS TABLE (fold text, id numeric, seq int) LANGUAGE plpgsql AS $$
BEGIN
  RETURN QUERY EXECUTE format('SELECT ''c'', id, __autocdc_seq FROM %s UNION ALL SELECT ''sql'', id, __autocdc_seq FROM %s ORDER BY 1, 2, 3',
    (SELECT state_table FROM autocdc.target WHERE target = 'n2_c'::regclass),
    (SELECT state_table FROM autocdc.target WHERE target = 'n2_sql'::regclass));
END $$;
-- one key spelled two ways; the target keeps the spelling of the last upsert
INSERT INTO nsrc VALUES (1.0, 1.0, 1), (1.00, 2.0, 2), (2.00, 5, 1), (2.0, 6, 2);
SELECT * FROM run_n();
SELECT 'c' AS fold, * FROM n_c UNION ALL SELECT 'sql', * FROM n_sql ORDER BY 1, 2;
SELECT 'c' AS fold, id, v, __start_at, __end_at FROM n2_c
  UNION ALL SELECT 'sql', id, v, __start_at, __end_at FROM n2_sql ORDER BY 1, 2, 4;
SELECT * FROM stored_events();
-- the applied event again, its value spelled otherwise: the same event
INSERT INTO nsrc VALUES (1, 2.00, 2);
SELECT * FROM run_n();
SELECT 'c' AS fold, * FROM n_c UNION ALL SELECT 'sql', * FROM n_sql ORDER BY 1, 2;
SELECT 'c' AS fold, id, v, __start_at, __end_at FROM n2_c
  UNION ALL SELECT 'sql', id, v, __start_at, __end_at FROM n2_sql ORDER BY 1, 2, 4;
SELECT * FROM stored_events();
-- in one batch, two spellings at one sequence disagree (as text): an error
INSERT INTO nsrc VALUES (3, 1.0, 1), (3, 1.00, 1);
SELECT flow, status FROM run_n();
SELECT flow, error FROM autocdc.event_log WHERE flow IN ('n_c', 'n_sql', 'n2_c', 'n2_sql') AND status = 'failed' ORDER BY id;
DELETE FROM nsrc WHERE id = 3;

-- A truncate in the batch.
CREATE TABLE tsrc (id int, v text, op text, seq int);
SELECT autocdc.create_auto_cdc_flow(target => 'tr_t', source => 'tsrc', keys => ARRAY['id'],
  sequence_by => 'seq', apply_as_truncates => $$op = 'T'$$, except_column_list => ARRAY['op', 'seq'],
  pipeline => 'bf_t');
INSERT INTO tsrc VALUES (1, 'a', 'U', 1), (2, 'b', 'U', 5), (NULL, NULL, 'T', 3);
SELECT flow, rows_read, rows_upserted, rows_deleted, status FROM autocdc.run('bf_t');
SELECT * FROM tr_t ORDER BY id;
-- after it, events under the truncate mark count as skipped
INSERT INTO tsrc VALUES (1, 'late', 'U', 2), (3, 'c', 'U', 4);
SELECT flow, rows_read, rows_upserted, rows_skipped, status FROM autocdc.run('bf_t');
SELECT * FROM tr_t ORDER BY id;

-- A key of a nondeterministic collation: equal keys are one key.
CREATE COLLATION ci (provider = icu, locale = 'und-u-ks-level2', deterministic = false);
CREATE TABLE csrc (k text COLLATE ci, v int, seq int);
SELECT autocdc.create_auto_cdc_flow(target => 'ci_t', source => 'csrc', keys => ARRAY['k'],
  sequence_by => 'seq', pipeline => 'bf_ci');
INSERT INTO csrc VALUES ('Abc', 1, 1), ('aBC', 2, 2), ('x', 3, 1);
SELECT flow, rows_read, rows_upserted, status FROM autocdc.run('bf_ci');
SELECT * FROM ci_t ORDER BY v;

-- A flow whose apply fails after its batch was registered, then a
-- flow of the same run: the second runs, and so does the first later.
CREATE TABLE fsrc (id int, v int, seq int);
CREATE TABLE f_t1 (id int PRIMARY KEY, v int CHECK (v < 100));
SELECT autocdc.create_auto_cdc_flow(target => 'f_t1', source => 'fsrc', keys => ARRAY['id'],
  sequence_by => 'seq', except_column_list => ARRAY['seq'], pipeline => 'bf_f', name => 'f1');
SELECT autocdc.create_auto_cdc_flow(target => 'f_t2', source => 'fsrc', keys => ARRAY['id'],
  sequence_by => 'seq', except_column_list => ARRAY['seq'], pipeline => 'bf_f', name => 'f2');
INSERT INTO fsrc VALUES (1, 5, 1), (2, 500, 1);
SELECT flow, rows_read, rows_upserted, status FROM autocdc.run('bf_f') ORDER BY flow;
ALTER TABLE f_t1 DROP CONSTRAINT f_t1_v_check;
SELECT flow, rows_read, rows_upserted, status FROM autocdc.run('bf_f') ORDER BY flow;
SELECT * FROM f_t1 ORDER BY id;

-- An event under the truncate mark for a key whose applied upsert is newer:
-- skipped once.
INSERT INTO tsrc VALUES (2, 'older', 'U', 2);
SELECT flow, rows_read, rows_upserted, rows_skipped FROM autocdc.run('bf_t');
SELECT * FROM tr_t ORDER BY id;

-- Two CDC flows into one SCD 1 target: one ordering
-- domain, and an event of one flow that disagrees with what the other
-- applied at its key and sequence is refused.
CREATE TABLE ma (id int, v text, op text, seq int);
CREATE TABLE mb (LIKE ma);
SELECT autocdc.create_auto_cdc_flow(target => 'm', source => 'ma', keys => ARRAY['id'], sequence_by => 'seq',
  apply_as_deletes => $$op = 'D'$$, except_column_list => ARRAY['op', 'seq'], name => 'm_a', pipeline => 'bf_m');
SELECT autocdc.create_auto_cdc_flow(target => 'm', source => 'mb', keys => ARRAY['id'], sequence_by => 'seq',
  apply_as_deletes => $$op = 'D'$$, except_column_list => ARRAY['op', 'seq'], name => 'm_b', pipeline => 'bf_m');
SELECT partial_columns FROM autocdc.target WHERE target = 'm'::regclass;
INSERT INTO ma VALUES (1, 'a5', 'U', 5), (2, 'a5', 'U', 5), (3, NULL, 'D', 9);
SELECT flow, rows_read, rows_upserted FROM autocdc.run('bf_m', flows => ARRAY['m_a']);
INSERT INTO mb VALUES (1, 'b3', 'U', 3), (2, 'b7', 'U', 7), (3, 'b8', 'U', 8), (4, 'b1', 'U', 1);
SELECT flow, rows_read, rows_upserted, rows_skipped FROM autocdc.run('bf_m', flows => ARRAY['m_b']);
SELECT * FROM m ORDER BY id;
INSERT INTO mb VALUES (1, 'other', 'U', 5);
SELECT flow, status FROM autocdc.run('bf_m', flows => ARRAY['m_b']);
SELECT error FROM autocdc.event_log WHERE flow = 'm_b' ORDER BY id DESC LIMIT 1;
DELETE FROM mb WHERE v = 'other';

-- Against what an earlier run applied: a delete at the sequence of an
-- applied upsert, an upsert at the sequence of an applied delete.
CREATE TABLE xs (id int, v text, op text, seq int);
SELECT autocdc.create_auto_cdc_flow(target => 'xt', source => 'xs', keys => ARRAY['id'], sequence_by => 'seq',
  apply_as_deletes => $$op = 'D'$$, except_column_list => ARRAY['op', 'seq'], pipeline => 'bf_x');
INSERT INTO xs VALUES (1, 'a', 'U', 5), (2, NULL, 'D', 7);
SELECT flow, status FROM autocdc.run('bf_x');
INSERT INTO xs VALUES (1, NULL, 'D', 5);
SELECT flow, status FROM autocdc.run('bf_x');
SELECT error FROM autocdc.event_log WHERE flow = 'xt' ORDER BY id DESC LIMIT 1;
DELETE FROM xs WHERE id = 1 AND op = 'D';
INSERT INTO xs VALUES (2, 'b', 'U', 7);
SELECT flow, status FROM autocdc.run('bf_x');
SELECT error FROM autocdc.event_log WHERE flow = 'xt' ORDER BY id DESC LIMIT 1;
SELECT * FROM xt;

-- Two runs in one transaction touching the same keys: the second reads
-- what the first wrote (SCD 1 state, SCD 2 versions rewritten in place).
CREATE TABLE ts (id int, v text, op text, seq int);
SELECT autocdc.create_auto_cdc_flow(target => 'ts1', source => 'ts', keys => ARRAY['id'], sequence_by => 'seq',
  apply_as_deletes => $$op = 'D'$$, except_column_list => ARRAY['op', 'seq'], pipeline => 'bf_ts', name => 'ts1');
SELECT autocdc.create_auto_cdc_flow(target => 'ts2', source => 'ts', keys => ARRAY['id'], sequence_by => 'seq',
  apply_as_deletes => $$op = 'D'$$, except_column_list => ARRAY['op', 'seq'], stored_as_scd_type => 2,
  pipeline => 'bf_ts', name => 'ts2');
BEGIN;
INSERT INTO ts VALUES (7, 'A', 'U', 10);
SELECT flow, rows_read, rows_upserted FROM autocdc.run('bf_ts') ORDER BY flow;
INSERT INTO ts VALUES (7, 'B', 'U', 5), (7, NULL, 'D', 20), (7, 'A', 'U', 10);
SELECT flow, rows_read, rows_upserted, rows_deleted, rows_skipped FROM autocdc.run('bf_ts') ORDER BY flow;
COMMIT;
SELECT * FROM ts1;
SELECT * FROM ts2 ORDER BY __start_at;
SELECT flow, rows_read FROM autocdc.run('bf_ts') ORDER BY flow;

-- Conflicts among events read out of order: each case is a batch of one
-- key, run by both pipelines; a conflict fails both with the same error,
-- a batch without one applies the same rows.
CREATE TABLE ls (id int, v int, op text, seq int);
SELECT autocdc.create_auto_cdc_flow(target => 'l_c', source => 'ls', keys => ARRAY['id'], sequence_by => 'seq',
  apply_as_deletes => $$op = 'D'$$, except_column_list => ARRAY['op', 'seq'], pipeline => 'bf_lc');
SELECT autocdc.create_auto_cdc_flow(target => 'l_sql', source => 'ls', keys => ARRAY['id'], sequence_by => 'seq',
  apply_as_deletes => $$op = 'D'$$, except_column_list => ARRAY['op', 'seq'], pipeline => 'bf_lsql');
CREATE FUNCTION l_case(k int, evs int[]) RETURNS TABLE (fold text, status text, l_row text)
LANGUAGE plpgsql AS $$
DECLARE
  st_c text;
  st_sql text;
BEGIN
  -- evs: (v, seq) pairs in the order read; v = -1 is a delete
  INSERT INTO ls SELECT k, NULLIF(evs[i], -1), CASE WHEN evs[i] = -1 THEN 'D' ELSE 'U' END, evs[i + 1]
    FROM generate_series(1, array_length(evs, 1), 2) i ORDER BY i;
  SELECT r.status INTO st_c FROM autocdc.run('bf_lc') r;
  SELECT r.status INTO st_sql FROM autocdc.run('bf_lsql') r;
  RETURN QUERY SELECT 'c', st_c, (SELECT t::text FROM l_c t WHERE t.id = k)
    UNION ALL SELECT 'sql', st_sql, (SELECT t::text FROM l_sql t WHERE t.id = k);
  IF st_c = 'failed' THEN
    DELETE FROM ls WHERE id = k;
  END IF;
END $$;
-- the partner was read first, at the key's highest sequence
SELECT * FROM l_case(1, ARRAY[1, 5, 2, 5]);
-- both late
SELECT * FROM l_case(2, ARRAY[1, 9, 1, 5, 2, 5]);
-- one conflict among many late events of the key
SELECT * FROM l_case(3, ARRAY[0, 100, 50, 50, 49, 49, 48, 48, 47, 47, 46, 46, 45, 45, 44, 44, 99, 45, 43, 43]);
-- an upsert and a delete, both late
SELECT * FROM l_case(4, ARRAY[1, 9, 1, 5, -1, 5]);
-- late exact duplicates and late events at new sequences: no conflict
SELECT * FROM l_case(5, ARRAY[1, 1, 2, 10, 7, 3, 1, 1, 2, 10, -1, 4, -1, 4]);
-- alternating high and low sequences, each event read twice: no conflict
SELECT * FROM l_case(6, ARRAY[1, 1, 100, 100, 1, 1, 2, 2, 101, 101, 2, 2, 100, 100, 3, 3]);

-- Target rows no event wrote (targets created and filled by hand), rows
-- removed by hand, and a target of keys only: both pipelines write the same.
CREATE TABLE ps (id int, v text, op text, seq int);
CREATE TABLE p_c (id int PRIMARY KEY, v text);
CREATE TABLE p_sql (LIKE p_c INCLUDING INDEXES);
CREATE TABLE pk_c (id int PRIMARY KEY);
CREATE TABLE pk_sql (LIKE pk_c INCLUDING INDEXES);
INSERT INTO p_c VALUES (1, 'by hand'), (2, 'by hand'), (3, 'by hand');
INSERT INTO p_sql TABLE p_c;
INSERT INTO pk_c VALUES (1), (2), (3);
INSERT INTO pk_sql TABLE pk_c;
SELECT autocdc.create_auto_cdc_flow(target => t, source => 'ps', keys => ARRAY['id'], sequence_by => 'seq',
  apply_as_deletes => $$op = 'D'$$, column_list => cols, pipeline => pl)
  FROM (VALUES ('p_c', ARRAY['id', 'v'], 'bf_pc'), ('p_sql', ARRAY['id', 'v'], 'bf_psql'),
               ('pk_c', ARRAY['id'], 'bf_pc'), ('pk_sql', ARRAY['id'], 'bf_psql')) f(t, cols, pl);
CREATE FUNCTION run_p() RETURNS TABLE (flow text, rows_read bigint, rows_upserted bigint,
  rows_deleted bigint, rows_skipped bigint) LANGUAGE plpgsql AS $$
BEGIN
  RETURN QUERY SELECT r.flow, r.rows_read, r.rows_upserted, r.rows_deleted, r.rows_skipped FROM autocdc.run('bf_pc') r;
  RETURN QUERY SELECT r.flow, r.rows_read, r.rows_upserted, r.rows_deleted, r.rows_skipped FROM autocdc.run('bf_psql') r;
END $$;
CREATE VIEW p_rows AS
  SELECT 'c' AS fold, id, v FROM p_c UNION ALL SELECT 'sql', id, v FROM p_sql
  UNION ALL SELECT 'c keys', id, NULL FROM pk_c UNION ALL SELECT 'sql keys', id, NULL FROM pk_sql;
-- an upsert and a delete of rows written by hand, and a new key
INSERT INTO ps VALUES (1, 'one', 'U', 1), (2, NULL, 'D', 1), (4, 'four', 'U', 1);
SELECT * FROM run_p() ORDER BY flow;
SELECT * FROM p_rows ORDER BY fold, id;
-- rows removed by hand: their sequence went with them (__autocdc_sequence), so
-- the next event of their key writes them again, an older one too
DELETE FROM p_c WHERE id IN (1, 4);
DELETE FROM p_sql WHERE id IN (1, 4);
DELETE FROM pk_c WHERE id IN (1, 4);
DELETE FROM pk_sql WHERE id IN (1, 4);
INSERT INTO ps VALUES (1, 'older', 'U', 0), (4, 'newer', 'U', 2);
SELECT * FROM run_p() ORDER BY flow;
SELECT * FROM p_rows ORDER BY fold, id;

-- A batch of 80 MB, past work_mem, sorted on disk: 40,000 events of about
-- 2 kB each, incompressible, over 20 keys; keys 1 to 10 have their latest
-- event first.  Both pipelines agree.
CREATE TABLE big (id int, v text, seq int);
SELECT autocdc.create_auto_cdc_flow(target => 'big_c', source => 'big', keys => ARRAY['id'],
  sequence_by => 'seq', pipeline => 'bf_big');
SELECT autocdc.create_auto_cdc_flow(target => 'big_sql', source => 'big', keys => ARRAY['id'],
  sequence_by => 'seq', pipeline => 'bf_bigsql');
INSERT INTO big SELECT i % 20, i || ':' || r.s, CASE WHEN i <= 10 THEN 100000 + i ELSE i END
  FROM (SELECT string_agg(md5(g::text), '') AS s FROM generate_series(1, 59) g) r,
       generate_series(1, 40000) i;
SELECT min(pg_column_size(v)), bool_and(pg_column_size(v) = octet_length(v) + 4) AS uncompressed FROM big;
SELECT flow, rows_read, rows_upserted, rows_skipped, status FROM autocdc.run('bf_big');
SELECT flow, rows_read, rows_upserted, rows_skipped, status FROM autocdc.run('bf_bigsql');
SELECT id, split_part(v, ':', 1) AS event, md5(v) = (SELECT md5(s.v) FROM big_sql s WHERE s.id = c.id) AS same
  FROM big_c c ORDER BY id;
DROP TABLE big;

RESET search_path;
