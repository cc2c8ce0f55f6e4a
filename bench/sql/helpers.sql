-- Helper functions of the benchmark database (created once per cluster, not timed).
\set ON_ERROR_STOP 1
SET client_min_messages = warning;

-- Raises when cond is not true: every check of the harness goes through it, so
-- that psql (ON_ERROR_STOP) exits non-zero and run.sh aborts loudly.
CREATE OR REPLACE FUNCTION bench_assert(cond boolean, msg text) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
  IF cond IS NOT TRUE THEN
    RAISE EXCEPTION 'BENCH CHECK FAILED: %', msg;
  END IF;
END $$;

-- Drops a table if it exists (DROP of an autocdc source or target also drops its flows).
CREATE OR REPLACE FUNCTION bench_drop(tbl text) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
  EXECUTE format('DROP TABLE IF EXISTS %I CASCADE', tbl);
END $$;

-- tgt must equal oracle exp as a multiset over cols (EXCEPT ALL both ways).
-- On a mismatch: an exception with the counts and up to 10 differing rows.
CREATE OR REPLACE FUNCTION bench_check_equal(label text, tgt text, exp text, cols text)
RETURNS text LANGUAGE plpgsql AS $$
DECLARE
  missing bigint;
  extra   bigint;
  n       bigint;
  sample  text;
BEGIN
  EXECUTE format('SELECT count(*) FROM (SELECT %1$s FROM %2$I EXCEPT ALL SELECT %1$s FROM %3$I) x',
                 cols, exp, tgt) INTO missing;
  EXECUTE format('SELECT count(*) FROM (SELECT %1$s FROM %2$I EXCEPT ALL SELECT %1$s FROM %3$I) x',
                 cols, tgt, exp) INTO extra;
  IF missing > 0 OR extra > 0 THEN
    EXECUTE format($q$
      SELECT string_agg(k || ' ' || r, E'\n') FROM (
        (SELECT 'missing' AS k, x::text AS r
           FROM (SELECT %1$s FROM %2$I EXCEPT ALL SELECT %1$s FROM %3$I) x ORDER BY 2 LIMIT 5)
        UNION ALL
        (SELECT 'extra  ' AS k, x::text AS r
           FROM (SELECT %1$s FROM %3$I EXCEPT ALL SELECT %1$s FROM %2$I) x ORDER BY 2 LIMIT 5)) s
      $q$, cols, exp, tgt) INTO sample;
    RAISE EXCEPTION 'BENCH CHECK FAILED: % : table % differs from oracle % over (%): % oracle rows missing, % rows extra',
      label, tgt, exp, cols, missing, extra
      USING DETAIL = 'first differing rows (key order):' || E'\n' || coalesce(sample, '');
  END IF;
  EXECUTE format('SELECT count(*) FROM %I', tgt) INTO n;
  RETURN format('%s: %s = %s (%s rows)', label, tgt, exp, n);
END $$;

-- Integrity of an SCD2 history table (id, __start_at, __end_at): no empty
-- interval, no overlap, only the last version of a key may be open.
CREATE OR REPLACE FUNCTION bench_check_history(label text, tgt text)
RETURNS text LANGUAGE plpgsql AS $$
DECLARE
  bad  bigint;
  smp  text;
BEGIN
  EXECUTE format($q$
    SELECT count(*), string_agg(h::text, E'\n') FILTER (WHERE rn <= 5) FROM (
      SELECT h.*, row_number() OVER () AS rn FROM (
        SELECT id, __start_at, __end_at,
               lead(__start_at) OVER (PARTITION BY id ORDER BY __start_at) AS next_start
        FROM %I) h
      WHERE (__end_at IS NOT NULL AND __end_at <= __start_at)
         OR (next_start IS NOT NULL AND (__end_at IS NULL OR __end_at > next_start))) h
    $q$, tgt) INTO bad, smp;
  IF bad > 0 THEN
    RAISE EXCEPTION 'BENCH CHECK FAILED: % : history % has % empty, overlapping or open-but-not-last versions',
      label, tgt, bad USING DETAIL = coalesce(smp, '');
  END IF;
  RETURN format('%s: history %s well formed', label, tgt);
END $$;

-- Rows and bytes of the auxiliary tables of a target: the hand-written
-- tombstone table, or autocdc's state / event-store tables (the tables in
-- schema autocdc that depend on the target).
CREATE OR REPLACE FUNCTION bench_aux(tgt text, tomb text, OUT aux_rows bigint, OUT aux_bytes bigint)
LANGUAGE plpgsql AS $$
DECLARE
  r record;
  c bigint;
BEGIN
  aux_rows := 0; aux_bytes := 0;
  IF tomb IS NOT NULL THEN
    EXECUTE format('SELECT count(*) FROM %I', tomb) INTO aux_rows;
    aux_bytes := pg_total_relation_size(tomb::regclass);
    RETURN;
  END IF;
  FOR r IN
    SELECT DISTINCT c.oid::regclass AS rel
    FROM pg_depend d
    JOIN pg_class c ON c.oid = d.objid
    JOIN pg_namespace s ON s.oid = c.relnamespace
    WHERE d.classid = 'pg_class'::regclass AND d.refclassid = 'pg_class'::regclass
      AND d.refobjid = tgt::regclass AND c.relkind = 'r' AND s.nspname = 'autocdc'
  LOOP
    EXECUTE format('SELECT count(*) FROM %s', r.rel) INTO c;
    aux_rows := aux_rows + c;
    aux_bytes := aux_bytes + pg_total_relation_size(r.rel);
  END LOOP;
END $$;

-- Oracles from an arbitrary event table with columns (id, name, city, amount, op, seq):
--   <prefix>_scd1      per key the change with the highest seq, deleted keys absent;
--   <prefix>_events    distinct (id, seq) events (exact re-deliveries collapsed);
--   <prefix>_scd2      one version per distinct upsert event, [seq, next event's seq)
--                      -- the semantics of the hand-written window rebuild (D);
--   <prefix>_scd2_fold the fold autocdc computes: per key in seq order, an upsert
--                      starts a version only when the key is absent (first event,
--                      or after a delete) or a value differs from the previous
--                      upsert's; an identical upsert is a no-op; a version ends at
--                      the next version's start or at the next delete.
CREATE OR REPLACE FUNCTION bench_make_oracles(prefix text, src text) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
  EXECUTE format('DROP TABLE IF EXISTS %1$I, %2$I, %3$I, %4$I',
                 prefix || '_scd1', prefix || '_events', prefix || '_scd2', prefix || '_scd2_fold');
  EXECUTE format($q$
    CREATE TABLE %1$I AS
    SELECT id, name, city, amount, seq AS __seq
    FROM (SELECT DISTINCT ON (id) id, name, city, amount, op, seq
          FROM %2$I ORDER BY id, seq DESC) last
    WHERE op <> 'D' $q$, prefix || '_scd1', src);
  EXECUTE format($q$
    CREATE TABLE %1$I AS
    SELECT DISTINCT ON (id, seq) id, seq, op, name, city, amount
    FROM %2$I ORDER BY id, seq $q$, prefix || '_events', src);
  -- the generator guarantees one payload per (id, seq); re-check it here
  EXECUTE format($q$
    SELECT bench_assert(NOT EXISTS (
      SELECT 1 FROM %1$I GROUP BY id, seq
      HAVING count(DISTINCT ROW(op, name, city, amount)) > 1),
      'two different payloads for one (id, seq) in %1$s') $q$, src);
  EXECUTE format($q$
    CREATE TABLE %1$I AS
    SELECT id, name, city, amount, __start_at, __end_at
    FROM (SELECT id, name, city, amount, op, seq AS __start_at,
                 lead(seq) OVER (PARTITION BY id ORDER BY seq) AS __end_at
          FROM %2$I) h
    WHERE op <> 'D' $q$, prefix || '_scd2', prefix || '_events');
  EXECUTE format($q$
    CREATE TABLE %1$I AS
    WITH m AS (
      SELECT id, seq, op, name, city, amount,
             lag(op)     OVER w AS p_op,
             lag(name)   OVER w AS p_name,
             lag(city)   OVER w AS p_city,
             lag(amount) OVER w AS p_amount
      FROM %2$I WINDOW w AS (PARTITION BY id ORDER BY seq)
    ), b AS (   -- boundaries: deletes, and upserts that start a version
      SELECT * FROM m
      WHERE op = 'D'
         OR p_op IS NULL OR p_op = 'D'
         OR ROW(name, city, amount) IS DISTINCT FROM ROW(p_name, p_city, p_amount)
    )
    SELECT id, name, city, amount, __start_at, __end_at
    FROM (SELECT id, name, city, amount, op, seq AS __start_at,
                 lead(seq) OVER (PARTITION BY id ORDER BY seq) AS __end_at
          FROM b) h
    WHERE op <> 'D' $q$, prefix || '_scd2_fold', prefix || '_events');
  EXECUTE format('ANALYZE %I; ANALYZE %I; ANALYZE %I; ANALYZE %I',
                 prefix || '_scd1', prefix || '_events', prefix || '_scd2', prefix || '_scd2_fold');
END $$;
