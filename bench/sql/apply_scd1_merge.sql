-- B1/B2: SCD1 apply by hand, set-based, PostgreSQL 15 MERGE.  One transaction per batch.
-- vars: stage (staging table of this batch), tgt (SCD1 target), tomb (tombstones)
BEGIN;
-- 1. newest change per key in the batch, kept only if newer than what is already
--    applied (the live row's __seq or the deleted key's tombstone): late and
--    duplicate rows are dropped here.
CREATE TEMP TABLE _latest ON COMMIT DROP AS
SELECT l.id, l.name, l.city, l.amount, l.op, l.seq
FROM (SELECT DISTINCT ON (id) id, name, city, amount, op, seq
      FROM :"stage"
      ORDER BY id, seq DESC) l
LEFT JOIN :"tgt"  t ON t.id = l.id
LEFT JOIN :"tomb" d ON d.id = l.id
WHERE l.seq > coalesce(greatest(t.__seq, d.__seq), -1);
ANALYZE _latest;
-- 2. apply it
MERGE INTO :"tgt" t
USING _latest l ON t.id = l.id
WHEN MATCHED AND l.op = 'D' THEN
  DELETE
WHEN MATCHED THEN
  UPDATE SET name = l.name, city = l.city, amount = l.amount, __seq = l.seq
WHEN NOT MATCHED AND l.op <> 'D' THEN
  INSERT (id, name, city, amount, __seq) VALUES (l.id, l.name, l.city, l.amount, l.seq);
-- 3. remember the deletes, so that an older change arriving later cannot resurrect the key
INSERT INTO :"tomb" (id, __seq)
SELECT id, seq FROM _latest WHERE op = 'D'
ON CONFLICT (id) DO UPDATE SET __seq = EXCLUDED.__seq;
COMMIT;
