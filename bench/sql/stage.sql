-- Staging tables of the main benchmark, from the generated stream changes_pos
-- (not timed): changes (arrival order), changes_b01..b10 (consecutive tenths),
-- the text file that A2 COPYs, the oracles, and the data-set statistics.
-- vars: n, copyfile
\set ON_ERROR_STOP 1
SET client_min_messages = warning;

DROP TABLE IF EXISTS changes;
CREATE TABLE changes AS
SELECT id, name, city, amount, op, seq FROM changes_pos ORDER BY pos;

SELECT count(*) AS nrows FROM changes_pos \gset
SELECT format('DROP TABLE IF EXISTS changes_b%1$s', lpad(i::text, 2, '0')),
       format('CREATE TABLE changes_b%1$s AS
               SELECT id, name, city, amount, op, seq FROM changes_pos
               WHERE pos > %2$s AND pos <= %3$s ORDER BY pos',
              lpad(i::text, 2, '0'), (i - 1) * :nrows / 10, i * :nrows / 10),
       format('VACUUM ANALYZE changes_b%1$s', lpad(i::text, 2, '0'))
FROM generate_series(1, 10) AS i \gexec
VACUUM ANALYZE changes;

COPY changes TO :'copyfile';

SELECT bench_make_oracles('exp', 'changes');

-- statistics of the data set, one line (tab separated) for the report
WITH w AS (
  SELECT pos, id, op, seq, (pos - 1) * 10 / :n AS batch,
         max(seq) OVER (PARTITION BY id ORDER BY pos
                        ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS prev_max,
         max(seq) OVER (PARTITION BY id ORDER BY (pos - 1) * 10 / :n
                        RANGE BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS prev_batch_max,
         count(*) OVER (PARTITION BY id, seq ORDER BY pos) AS copy_no
  FROM changes_pos
)
SELECT 'DATA', count(*) AS n,
       count(DISTINCT id) AS keys,
       round(100.0 * count(*) FILTER (WHERE op = 'D') / count(*), 1) AS pct_d,
       round(100.0 * count(*) FILTER (WHERE op = 'U') / count(*), 1) AS pct_u,
       round(100.0 * count(*) FILTER (WHERE op = 'I') / count(*), 1) AS pct_i,
       count(*) FILTER (WHERE seq < prev_max) AS out_of_order,
       count(*) FILTER (WHERE seq < prev_max AND copy_no = 1) AS ooo_not_redelivery,
       count(*) FILTER (WHERE seq < prev_batch_max) AS late_vs_earlier_batch,
       count(*) FILTER (WHERE copy_no > 1) AS exact_duplicates,
       (SELECT count(*) FROM exp_scd1) AS scd1_rows,
       (SELECT count(*) FROM exp_scd2) AS scd2_rows_per_event,
       (SELECT count(*) FROM exp_scd2_fold) AS scd2_rows_fold,
       round(pg_total_relation_size('changes') / 1048576.0, 1) AS staging_mb
FROM w;
