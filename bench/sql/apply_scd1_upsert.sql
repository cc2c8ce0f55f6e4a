-- B3/B4: the same as apply_scd1_merge.sql with DELETE + INSERT ... ON CONFLICT DO UPDATE
-- instead of MERGE.  One transaction per batch.
-- vars: stage, tgt, tomb
BEGIN;
CREATE TEMP TABLE _latest ON COMMIT DROP AS
SELECT l.id, l.name, l.city, l.amount, l.op, l.seq
FROM (SELECT DISTINCT ON (id) id, name, city, amount, op, seq
      FROM :"stage"
      ORDER BY id, seq DESC) l
LEFT JOIN :"tgt"  t ON t.id = l.id
LEFT JOIN :"tomb" d ON d.id = l.id
WHERE l.seq > coalesce(greatest(t.__seq, d.__seq), -1);
ANALYZE _latest;
DELETE FROM :"tgt" t USING _latest l
WHERE t.id = l.id AND l.op = 'D';
INSERT INTO :"tgt" (id, name, city, amount, __seq)
SELECT id, name, city, amount, seq FROM _latest WHERE op <> 'D'
ON CONFLICT (id) DO UPDATE
  SET name = EXCLUDED.name, city = EXCLUDED.city, amount = EXCLUDED.amount, __seq = EXCLUDED.__seq;
INSERT INTO :"tomb" (id, __seq)
SELECT id, seq FROM _latest WHERE op = 'D'
ON CONFLICT (id) DO UPDATE SET __seq = EXCLUDED.__seq;
COMMIT;
