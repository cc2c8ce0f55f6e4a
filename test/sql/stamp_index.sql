-- The index on a source's stamp: access method autocdc_stamp keeps, per
-- range of 32 heap blocks, the highest stamp put there and whether a NULL
-- was; a scan returns the blocks of every range that may hold a match.
-- Its answers are checked against a sequential scan wherever rows go:
-- appended, into space VACUUM freed in old blocks, NULL, updated.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS autocdc;
SELECT amname, amtype FROM pg_am WHERE amname = 'autocdc_stamp';
SELECT opcname, opcdefault, amvalidate(oid) FROM pg_opclass WHERE opcname = 'xid8_stamp_ops';

CREATE TABLE si (id int, pad text, x xid8);
INSERT INTO si SELECT g, repeat('p', 40), (g / 100)::text::xid8 FROM generate_series(1, 60000) g;
INSERT INTO si SELECT g, 'null', NULL FROM generate_series(1, 5) g;
CREATE INDEX si_x ON si USING autocdc_stamp (x);
-- after the build: appended rows, then rows in the space a VACUUM freed
INSERT INTO si SELECT g, repeat('q', 40), (1000 + g / 50)::text::xid8 FROM generate_series(1, 5000) g;
DELETE FROM si WHERE id % 3 = 0 AND x < '300';
VACUUM si;
INSERT INTO si SELECT g, repeat('r', 40), '2000'::xid8 FROM generate_series(1, 4000) g;
INSERT INTO si SELECT g, 'null again', NULL FROM generate_series(1, 3) g;
UPDATE si SET x = '2500' WHERE id BETWEEN 10 AND 20 AND pad LIKE 'p%';
-- some of the last rows went to old blocks, below the appended ones
SELECT count(*) > 0 AS reused_old_blocks FROM si
 WHERE x = '2000' AND (ctid::text::point)[0] < (SELECT min((ctid::text::point)[0]) FROM si WHERE x >= '1000' AND x < '2000');
ANALYZE si;

CREATE TEMP TABLE probe AS SELECT v::text::xid8 AS p FROM generate_series(0, 2600, 13) v;
SET enable_bitmapscan = off;
CREATE TEMP TABLE by_seq AS
SELECT p, (SELECT count(*) FROM si WHERE x >= p) AS ge, (SELECT count(*) FROM si WHERE x > p) AS gt FROM probe;
CREATE TEMP TABLE nulls_by_seq AS SELECT (SELECT count(*) FROM si WHERE x IS NULL) AS n,
       (SELECT count(*) FROM si WHERE x IS NOT NULL) AS nn;
RESET enable_bitmapscan;
SET enable_seqscan = off;
EXPLAIN (COSTS OFF) SELECT count(*) FROM si WHERE x >= '2000';
EXPLAIN (COSTS OFF) SELECT count(*) FROM si WHERE x IS NULL;
SELECT count(*) AS probes,
       count(*) FILTER (WHERE (SELECT count(*) FROM si WHERE x >= s.p) <> s.ge
                           OR (SELECT count(*) FROM si WHERE x > s.p) <> s.gt) AS wrong
  FROM by_seq s;
SELECT (SELECT count(*) FROM si WHERE x IS NULL) = n AS nulls_right,
       (SELECT count(*) FROM si WHERE x IS NOT NULL) = nn AS not_nulls_right
  FROM nulls_by_seq;
-- other comparisons are not the index's: a sequential scan answers them
EXPLAIN (COSTS OFF) SELECT count(*) FROM si WHERE x < '10';
-- a rebuilt index, made concurrently or not, answers the same
REINDEX INDEX si_x;
SELECT count(*) FILTER (WHERE (SELECT count(*) FROM si WHERE x >= s.p) <> s.ge) AS wrong_after_reindex FROM by_seq s;
DROP INDEX si_x;
CREATE INDEX CONCURRENTLY si_x ON si USING autocdc_stamp (x);
SELECT count(*) FILTER (WHERE (SELECT count(*) FROM si WHERE x > s.p) <> s.gt) AS wrong_after_concurrently FROM by_seq s;
RESET enable_seqscan;
-- an index entry is 16 bytes per 32 heap blocks
SELECT pg_relation_size('si_x') <= 2 * current_setting('block_size')::int AS small,
       pg_relation_size('si') / current_setting('block_size')::int > 500 AS over_500_blocks;

-- an unlogged table's index starts from its init fork
CREATE UNLOGGED TABLE si_u (x xid8);
CREATE INDEX ON si_u USING autocdc_stamp (x);
INSERT INTO si_u SELECT '7' FROM generate_series(1, 1000);
SET enable_seqscan = off;
SELECT count(*) FROM si_u WHERE x > '6';
SELECT count(*) FROM si_u WHERE x > '7';
RESET enable_seqscan;

-- what it does not take
CREATE INDEX ON si USING autocdc_stamp (x) WITH (pages_per_range = 8);
CREATE INDEX ON si USING autocdc_stamp (id);
CREATE INDEX ON si USING autocdc_stamp (x, id);
CREATE UNIQUE INDEX ON si USING autocdc_stamp (x);
DROP TABLE si, si_u;

-- A source's rows a run reads come from its index, also after rows went
-- into old blocks: a run after a DELETE and VACUUM reads exactly the rows
-- inserted since the last run, wherever they went.
CREATE TABLE sir_src (id int, seq int, pad text);
SELECT autocdc.create_append_flow(target => 'sir_log', source => 'sir_src', pipeline => 'sir');
SELECT indexdef FROM pg_indexes WHERE tablename = 'sir_src';
INSERT INTO sir_src SELECT g, g, repeat('x', 100) FROM generate_series(1, 20000) g;
SELECT flow, rows_read FROM autocdc.run('sir');
DELETE FROM sir_src WHERE id % 2 = 0;
VACUUM sir_src;
INSERT INTO sir_src SELECT g, g, repeat('y', 100) FROM generate_series(20001, 20500) g;
SELECT min((ctid::text::point)[0]) < 100 AS into_old_blocks FROM sir_src WHERE id > 20000;
SET enable_seqscan = off;
SELECT pg_stat_force_next_flush();
SELECT pg_stat_clear_snapshot();
SELECT coalesce(idx_scan, 0) AS scans_before FROM pg_stat_user_indexes WHERE relid = 'sir_src'::regclass \gset
SELECT flow, rows_read FROM autocdc.run('sir');
SELECT pg_stat_force_next_flush();
SELECT pg_stat_clear_snapshot();
SELECT idx_scan > :scans_before AS index_used FROM pg_stat_user_indexes WHERE relid = 'sir_src'::regclass;
RESET enable_seqscan;
SELECT count(*), count(*) FILTER (WHERE id > 20000) AS new FROM sir_log;
DROP TABLE sir_src, sir_log CASCADE;
