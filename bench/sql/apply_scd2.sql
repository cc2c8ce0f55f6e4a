-- D1/D2: SCD2 apply by hand, set-based, one transaction per batch.
-- In-order changes close the current version and append new ones; out-of-order
-- changes make the tail of the key's history (from the version containing the
-- earliest new seq on) be recomputed with lead(seq) OVER (PARTITION BY id ORDER BY seq).
-- vars: stage, tgt (SCD2 history), tomb (applied deletes)
BEGIN;
-- 1. the batch's events, exact duplicates collapsed, events already applied dropped
CREATE TEMP TABLE _ev ON COMMIT DROP AS
SELECT e.id, e.seq, e.op, e.name, e.city, e.amount
FROM (SELECT DISTINCT ON (id, seq) id, seq, op, name, city, amount
      FROM :"stage"
      ORDER BY id, seq) e
WHERE NOT EXISTS (SELECT 1 FROM :"tgt"  v WHERE v.id = e.id AND v.__start_at = e.seq)
  AND NOT EXISTS (SELECT 1 FROM :"tomb" d WHERE d.id = e.id AND d.seq = e.seq);
ANALYZE _ev;
-- 2. per affected key, where its history must be recomputed from (p): the start
--    of the earliest version still valid at the key's earliest seq in the batch
CREATE TEMP TABLE _k ON COMMIT DROP AS
SELECT k.id, least(min(v.__start_at), k.mseq) AS p
FROM (SELECT id, min(seq) AS mseq FROM _ev GROUP BY id) k
LEFT JOIN :"tgt" v
       ON v.id = k.id AND (v.__end_at IS NULL OR v.__end_at > k.mseq)
GROUP BY k.id, k.mseq;
ANALYZE _k;
-- 3. cut the tail of history off, merge it with the applied deletes and the new
--    events, and write it back with the intervals recomputed
WITH old AS (
  DELETE FROM :"tgt" v USING _k
  WHERE v.id = _k.id AND v.__start_at >= _k.p
  RETURNING v.id, v.__start_at AS seq, 'U'::text AS op, v.name, v.city, v.amount
), tombs AS (
  SELECT d.id, d.seq, 'D'::text AS op, NULL::text AS name, NULL::text AS city, NULL::numeric AS amount
  FROM :"tomb" d JOIN _k ON d.id = _k.id AND d.seq >= _k.p
), ev AS (
  SELECT * FROM old
  UNION ALL SELECT * FROM tombs
  UNION ALL SELECT id, seq, op, name, city, amount FROM _ev
)
INSERT INTO :"tgt" (id, name, city, amount, __start_at, __end_at)
SELECT id, name, city, amount, seq, next_seq
FROM (SELECT ev.*, lead(seq) OVER (PARTITION BY id ORDER BY seq) AS next_seq FROM ev) h
WHERE op <> 'D';
-- 4. remember the deletes of this batch
INSERT INTO :"tomb" (id, seq) SELECT id, seq FROM _ev WHERE op = 'D';
COMMIT;
