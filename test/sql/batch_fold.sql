-- The folds in C (autocdc.batch_fold, on by default) against the folds in
-- SQL (off): one source, an SCD 1 and an SCD 2 flow in each of two
-- pipelines, each pipeline run in one mode; after every round the targets
-- and the counts must be equal.  Then the batches the C fold hands to the
-- SQL fold: bad events, truncates, values equal by "=" but not in binary,
-- keys it cannot hash.
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
  SET LOCAL autocdc.batch_fold = on;
  INSERT INTO counts SELECT r, 'c', CASE WHEN flow LIKE 'bf2%' THEN 2 ELSE 1 END, rows_read,
    rows_upserted, rows_deleted, rows_skipped, status FROM autocdc.run('bf_c');
  SET LOCAL autocdc.batch_fold = off;
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

-- Two different events at one key and sequence: the error of the SQL fold,
-- and nothing applied.
INSERT INTO src VALUES (1, 'b', 1, 'U', 90001), (1, 'b', 2, 'U', 90001);
SELECT flow, rows_read, status FROM autocdc.run('bf_c') ORDER BY flow;
SELECT flow, error FROM autocdc.event_log WHERE flow IN ('bf_c', 'bf2_c') ORDER BY id DESC LIMIT 2;
DELETE FROM src WHERE seq = 90001;
SELECT autocdc.run('bf_sql') IS NOT NULL AS sql_run;

-- Values equal by "=" but not in binary: numeric 1.0 and 1.00.  Each
-- step is run by both folds, into n_c and n_sql.
CREATE TABLE nsrc (id numeric, v numeric, seq int);
SELECT autocdc.create_auto_cdc_flow(target => 'n_c', source => 'nsrc', keys => ARRAY['id'],
  sequence_by => 'seq', pipeline => 'bf_n');
SELECT autocdc.create_auto_cdc_flow(target => 'n_sql', source => 'nsrc', keys => ARRAY['id'],
  sequence_by => 'seq', pipeline => 'bf_nsql');
CREATE FUNCTION run_n() RETURNS TABLE (flow text, rows_read bigint, rows_upserted bigint,
  rows_skipped bigint, status text) LANGUAGE plpgsql AS $$
BEGIN
  SET LOCAL autocdc.batch_fold = on;
  RETURN QUERY SELECT r.flow, r.rows_read, r.rows_upserted, r.rows_skipped, r.status FROM autocdc.run('bf_n') r;
  SET LOCAL autocdc.batch_fold = off;
  RETURN QUERY SELECT r.flow, r.rows_read, r.rows_upserted, r.rows_skipped, r.status FROM autocdc.run('bf_nsql') r;
END $$;
-- one key spelled two ways; the target keeps the spelling of the last upsert
INSERT INTO nsrc VALUES (1.0, 1.0, 1), (1.00, 2.0, 2), (2.00, 5, 1), (2.0, 6, 2);
SELECT * FROM run_n();
SELECT 'c' AS fold, * FROM n_c UNION ALL SELECT 'sql', * FROM n_sql ORDER BY 1, 2;
-- the applied event again, its value spelled otherwise: the same event
INSERT INTO nsrc VALUES (1, 2.00, 2);
SELECT * FROM run_n();
SELECT 'c' AS fold, * FROM n_c UNION ALL SELECT 'sql', * FROM n_sql ORDER BY 1, 2;
-- in one batch, two spellings at one sequence disagree (as text): an error
INSERT INTO nsrc VALUES (3, 1.0, 1), (3, 1.00, 1);
SELECT flow, status FROM run_n();
SELECT flow, error FROM autocdc.event_log WHERE flow IN ('n_c', 'n_sql') AND status = 'failed' ORDER BY id;
DELETE FROM nsrc WHERE id = 3;

-- A truncate in the batch: the SQL fold applies it.
CREATE TABLE tsrc (id int, v text, op text, seq int);
SELECT autocdc.create_auto_cdc_flow(target => 'tr_t', source => 'tsrc', keys => ARRAY['id'],
  sequence_by => 'seq', apply_as_truncates => $$op = 'T'$$, except_column_list => ARRAY['op', 'seq'],
  pipeline => 'bf_t');
INSERT INTO tsrc VALUES (1, 'a', 'U', 1), (2, 'b', 'U', 5), (NULL, NULL, 'T', 3);
SELECT flow, rows_read, rows_upserted, rows_deleted, status FROM autocdc.run('bf_t');
SELECT * FROM tr_t ORDER BY id;
-- after it, the C fold counts events under the truncate mark as skipped
INSERT INTO tsrc VALUES (1, 'late', 'U', 2), (3, 'c', 'U', 4);
SELECT flow, rows_read, rows_upserted, rows_skipped, status FROM autocdc.run('bf_t');
SELECT * FROM tr_t ORDER BY id;

-- A key of a nondeterministic collation: only the SQL fold compares it right.
CREATE COLLATION ci (provider = icu, locale = 'und-u-ks-level2', deterministic = false);
CREATE TABLE csrc (k text COLLATE ci, v int, seq int);
SELECT autocdc.create_auto_cdc_flow(target => 'ci_t', source => 'csrc', keys => ARRAY['k'],
  sequence_by => 'seq', pipeline => 'bf_ci');
INSERT INTO csrc VALUES ('Abc', 1, 1), ('aBC', 2, 2), ('x', 3, 1);
SELECT flow, rows_read, rows_upserted, status FROM autocdc.run('bf_ci');
SELECT * FROM ci_t ORDER BY v;

-- A flow whose apply fails after the C fold registered its batch, then a
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

RESET search_path;
