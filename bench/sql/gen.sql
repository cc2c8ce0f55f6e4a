-- Data generator: an arrival-ordered stream of N change events in table :"out"
-- (pos, id, name, city, amount, op, seq), reproducible (setseed), pure SQL.
-- vars: out (table to create), n (events), k (key space), ooo (fraction of
--       rows made out of order), seed (setseed argument, in [-1, 1]),
--       payload ('wide': name 1000, city 50, amount 1,000,000 values, so that two
--       consecutive upserts of a key are almost never identical; 'narrow': 2
--       values each, so that many are -- no-op upserts for the SCD2 fold)
--
--  * keys uniform in 1..k;
--  * op: 10% 'D' (payload NULL), 70% 'U', 20% 'I' ('U' and 'I' are both upserts);
--  * the true event order is the arrival order: seq = pos * 10;
--  * out of order: within each key, arrivals are paired (1st,2nd), (3rd,4th), ...
--    and, with the probability that affects about :ooo of all rows, the 2nd
--    row of a pair gets seq = (seq of the 1st) - 5: it arrives after a row of
--    its key with a higher seq (often in a later batch);
--  * duplicates: 1% of the rows are replaced by an exact copy of a row that
--    arrived 1 to n/20 positions earlier (a copy of a copy is not made);
--  * one (id, seq) never carries two payloads (asserted by bench_make_oracles).
-- Parallel query is off so that random() is evaluated in a fixed order.
\set ON_ERROR_STOP 1
SET client_min_messages = warning;
SET max_parallel_workers_per_gather = 0;
DROP TABLE IF EXISTS :"out", _gen0, _gen1, _gen2;

SELECT setseed(:seed);
CREATE UNLOGGED TABLE _gen0 AS
SELECT pos::bigint                          AS pos,
       1 + floor(random() * :k)::bigint     AS id,
       random() AS r_op, random() AS r_name, random() AS r_city, random() AS r_amount,
       random() AS r_ooo, random() AS r_dup, random() AS r_dupd
FROM generate_series(1, :n) AS pos;

CREATE UNLOGGED TABLE _gen1 AS
SELECT g.*, row_number() OVER w AS rk, lag(pos) OVER w AS prev_pos
FROM _gen0 g WINDOW w AS (PARTITION BY id ORDER BY pos);
DROP TABLE _gen0;

-- probability for the 2nd row of a pair so that about :ooo of all rows move
SELECT CASE WHEN :'payload' = 'narrow' THEN 2 ELSE 1000 END AS card_name,
       CASE WHEN :'payload' = 'narrow' THEN 2 ELSE 50 END   AS card_city,
       CASE WHEN :'payload' = 'narrow' THEN 2 ELSE 1000000 END AS card_amount \gset
SELECT least(1.0, :ooo * :n / greatest(count(*), 1)::float8) AS p_ooo
FROM _gen1 WHERE rk % 2 = 0 \gset

CREATE UNLOGGED TABLE _gen2 AS
SELECT pos, id,
       CASE WHEN r_op < 0.10 THEN 'D' WHEN r_op < 0.80 THEN 'U' ELSE 'I' END AS op,
       CASE WHEN r_op >= 0.10 THEN 'name_' || floor(r_name * :card_name)::int END   AS name,
       CASE WHEN r_op >= 0.10 THEN 'city_' || floor(r_city * :card_city)::int END    AS city,
       CASE WHEN r_op >= 0.10 THEN round(floor(r_amount * :card_amount)::numeric / 100, 2) END AS amount,
       CASE WHEN rk % 2 = 0 AND r_ooo < :p_ooo THEN prev_pos * 10 - 5 ELSE pos * 10 END AS seq,
       CASE WHEN r_dup < 0.01 AND pos > 1
            THEN pos - 1 - floor(r_dupd * least(greatest(:n / 20, 1), pos - 1))::bigint END AS dup_of
FROM _gen1;
DROP TABLE _gen1;

CREATE TABLE :"out" AS
SELECT g.pos,
       CASE WHEN s.pos IS NULL THEN g.id     ELSE s.id     END AS id,
       CASE WHEN s.pos IS NULL THEN g.name   ELSE s.name   END AS name,
       CASE WHEN s.pos IS NULL THEN g.city   ELSE s.city   END AS city,
       CASE WHEN s.pos IS NULL THEN g.amount ELSE s.amount END AS amount,
       CASE WHEN s.pos IS NULL THEN g.op     ELSE s.op     END AS op,
       CASE WHEN s.pos IS NULL THEN g.seq    ELSE s.seq    END AS seq
FROM _gen2 g
LEFT JOIN _gen2 s ON s.pos = g.dup_of AND s.dup_of IS NULL
ORDER BY g.pos;
DROP TABLE _gen2;
CREATE UNIQUE INDEX ON :"out" (pos);
VACUUM ANALYZE :"out";
RESET max_parallel_workers_per_gather;
