-- C1 (opt-in): what a user writes first -- a PL/pgSQL loop over the staged rows in
-- arrival order, one upsert or delete per row, guarded by seq (the live row's
-- __seq, or the tombstone of a deleted key).  One call = one transaction.
-- Reads changes_pos (the arrival-ordered stream), writes scd1 / scd1_tomb.
CREATE OR REPLACE FUNCTION bench_apply_rowwise() RETURNS bigint
LANGUAGE plpgsql AS $$
DECLARE
  r    record;
  n    bigint := 0;
  dseq bigint;
BEGIN
  FOR r IN SELECT id, name, city, amount, op, seq FROM changes_pos ORDER BY pos LOOP
    n := n + 1;
    SELECT __seq INTO dseq FROM scd1_tomb WHERE id = r.id;
    IF dseq >= r.seq THEN
      CONTINUE;                                  -- the key was deleted by a later change
    END IF;
    IF r.op = 'D' THEN
      DELETE FROM scd1 WHERE id = r.id AND __seq < r.seq;
      IF FOUND OR NOT EXISTS (SELECT 1 FROM scd1 WHERE id = r.id) THEN
        INSERT INTO scd1_tomb (id, __seq) VALUES (r.id, r.seq)
        ON CONFLICT (id) DO UPDATE SET __seq = EXCLUDED.__seq;
      END IF;
    ELSE
      INSERT INTO scd1 (id, name, city, amount, __seq)
      VALUES (r.id, r.name, r.city, r.amount, r.seq)
      ON CONFLICT (id) DO UPDATE
        SET name = EXCLUDED.name, city = EXCLUDED.city,
            amount = EXCLUDED.amount, __seq = EXCLUDED.__seq
        WHERE scd1.__seq < EXCLUDED.__seq;       -- older than what is applied: ignored
    END IF;
  END LOOP;
  RETURN n;
END $$;
