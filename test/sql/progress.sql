-- autocdc.progress (README): the phase and counters of each flow running
-- now, seen here from inside the run (its expressions, its target's
-- triggers); test/specs/progress_watch.spec looks from another session, and
-- test/t/018_progress.pl without preloading.
-- Creates the extension when this file runs alone (make installcheck REGRESS=...).
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS autocdc;
RESET client_min_messages;
CREATE SCHEMA prog;
SET search_path = prog, public;

-- Nothing runs: no row.
SELECT * FROM autocdc.progress;

-- Reports the run's own row, and the session's query text, at event `at`.
CREATE FUNCTION prog.peek(s int, at int) RETURNS int LANGUAGE plpgsql AS $$
DECLARE r record;
BEGIN
  IF s = at THEN
    SELECT * INTO r FROM autocdc.progress WHERE pid = pg_backend_pid();
    RAISE NOTICE 'peek: pipeline %, flow %, phase %, events_read %, rows_written %, started %',
      r.pipeline, r.flow, r.phase, r.events_read, r.rows_written,
      r.started_at BETWEEN now() AND clock_timestamp();
    RAISE NOTICE 'peek: query %',
      (SELECT query FROM pg_stat_activity WHERE pid = pg_backend_pid());
  END IF;
  RETURN s;
END $$;
-- The same from a trigger on a target.
CREATE FUNCTION prog.peek_trigger() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE r record;
BEGIN
  SELECT * INTO r FROM autocdc.progress WHERE pid = pg_backend_pid();
  RAISE NOTICE '% %: phase %, events_read %, rows_written %',
    TG_OP, TG_TABLE_NAME, r.phase, r.events_read, r.rows_written;
  RETURN NULL;
END $$;

-- SCD 1: events_read counts per batch of 1024 while the events are read
-- (2048 at the 2500th), all of them once read; rows_written after each write.
CREATE TABLE prog.src (id int, v text, seq int);
INSERT INTO prog.src SELECT i, 'v' || i, i FROM generate_series(1, 3000) i;
SELECT autocdc.create_auto_cdc_flow(target => 'prog.scd1', source => 'prog.src',
  keys => ARRAY['id'], sequence_by => 'prog.peek(seq, 2500)', pipeline => 'prog_p', name => 'prog_scd1');
CREATE TRIGGER peek AFTER INSERT OR UPDATE OR DELETE ON prog.scd1
  FOR EACH STATEMENT EXECUTE FUNCTION prog.peek_trigger();
SELECT flow, rows_read, rows_upserted, status FROM autocdc.run('prog_p');
-- Again: a change event for every key, read incrementally.
INSERT INTO prog.src SELECT i, 'w' || i, 3000 + i FROM generate_series(1, 3000) i;
SELECT flow, rows_read, rows_upserted, status FROM autocdc.run('prog_p');
-- A full refresh empties the target first.
SELECT flow, rows_read, rows_upserted, status FROM autocdc.run('prog_p', full_refresh => true);
SELECT * FROM autocdc.progress;

-- SCD 2 and append flows into a second pipeline.
CREATE TABLE prog.src2 (id int, v text, seq int);
INSERT INTO prog.src2 SELECT i, 'v' || i, i FROM generate_series(1, 1500) i;
SELECT autocdc.create_auto_cdc_flow(target => 'prog.scd2', source => 'prog.src2',
  keys => ARRAY['id'], sequence_by => 'prog.peek(seq, 1100)', stored_as_scd_type => 2,
  pipeline => 'prog_q', name => 'prog_scd2');
CREATE TRIGGER peek AFTER INSERT OR UPDATE OR DELETE ON prog.scd2
  FOR EACH STATEMENT EXECUTE FUNCTION prog.peek_trigger();
SELECT autocdc.create_append_flow(target => 'prog.app', source => 'prog.src2',
  pipeline => 'prog_q', name => 'prog_app');
CREATE TRIGGER peek AFTER INSERT ON prog.app
  FOR EACH STATEMENT EXECUTE FUNCTION prog.peek_trigger();
SELECT flow, rows_read, rows_upserted, status FROM autocdc.run('prog_q');
SELECT * FROM autocdc.progress;

-- A snapshot flow with a source function: called, then its snapshot checked and folded.
CREATE TABLE prog.snap (id int, v text);
CREATE TABLE prog.snapt (id int PRIMARY KEY, v text);
INSERT INTO prog.snap VALUES (1, 'a'), (2, 'b');
CREATE FUNCTION prog.next_snap(latest bigint) RETURNS TABLE (snapshot regclass, version bigint)
LANGUAGE plpgsql AS $$
DECLARE r record;
BEGIN
  SELECT * INTO r FROM autocdc.progress WHERE pid = pg_backend_pid();
  RAISE NOTICE 'next_snap(%): flow %, phase %, events_read %, rows_written %',
    latest, r.flow, r.phase, r.events_read, r.rows_written;
  IF latest IS NULL OR latest < 2 THEN
    RETURN QUERY SELECT 'prog.snap'::regclass, coalesce(latest, 0) + 1;
  END IF;
END $$;
SELECT autocdc.create_auto_cdc_from_snapshot_flow(target => 'prog.snapt', source_function => 'prog.next_snap(bigint)',
  keys => ARRAY['id'], pipeline => 'prog_s', name => 'prog_snap');
CREATE TRIGGER peek AFTER INSERT OR UPDATE OR DELETE ON prog.snapt
  FOR EACH STATEMENT EXECUTE FUNCTION prog.peek_trigger();
SELECT flow, rows_read, rows_upserted, status FROM autocdc.run('prog_s');

-- A failed flow leaves no row behind, nor does a cancelled run.
CREATE FUNCTION prog.fail(s int) RETURNS int LANGUAGE plpgsql AS $$
BEGIN
  IF s = 1100 THEN RAISE EXCEPTION 'fail at %', s; END IF;
  RETURN s;
END $$;
SELECT autocdc.create_auto_cdc_flow(target => 'prog.failt', source => 'prog.src2',
  keys => ARRAY['id'], sequence_by => 'prog.fail(seq)', pipeline => 'prog_f', name => 'prog_fail');
SET client_min_messages = error;
SELECT flow, rows_read, status FROM autocdc.run('prog_f');
RESET client_min_messages;
SELECT * FROM autocdc.progress;
CREATE FUNCTION prog.stall(s int) RETURNS int LANGUAGE plpgsql AS $$
BEGIN
  IF s = 1100 THEN PERFORM pg_sleep(30); END IF;
  RETURN s;
END $$;
SELECT autocdc.create_auto_cdc_flow(target => 'prog.stallt', source => 'prog.src2',
  keys => ARRAY['id'], sequence_by => 'prog.stall(seq)', pipeline => 'prog_c', name => 'prog_stall');
\set VERBOSITY terse
SET statement_timeout = '200ms';
SELECT flow, rows_read, status FROM autocdc.run('prog_c');
RESET statement_timeout;
SELECT * FROM autocdc.progress;
-- Also when the cancel rolls back a transaction that goes on in a savepoint.
BEGIN;
SAVEPOINT s;
SET LOCAL statement_timeout = '200ms';
SELECT flow, rows_read, status FROM autocdc.run('prog_c');
ROLLBACK TO SAVEPOINT s;
SELECT * FROM autocdc.progress;
COMMIT;
\set VERBOSITY default

-- An error the flow's own code catches (a subtransaction below the flow's)
-- keeps the row: only the abort of the flow's own subtransaction ends it.
CREATE FUNCTION prog.catch_peek(s int) RETURNS int LANGUAGE plpgsql AS $$
BEGIN
  IF s = 3 THEN
    BEGIN
      PERFORM 1 / 0;
    EXCEPTION WHEN division_by_zero THEN NULL;
    END;
    RAISE NOTICE 'after a caught error: %',
      (SELECT flow || ', ' || phase FROM autocdc.progress WHERE pid = pg_backend_pid());
  END IF;
  RETURN s;
END $$;
SELECT autocdc.create_auto_cdc_flow(target => 'prog.catcht', source => 'prog.src2',
  keys => ARRAY['id'], sequence_by => 'prog.catch_peek(seq)', pipeline => 'prog_k', name => 'prog_catch');
SELECT flow, rows_read, status FROM autocdc.run('prog_k');
SELECT * FROM autocdc.progress;

SET client_min_messages = warning;
SELECT autocdc.drop_flow(f) FROM unnest(ARRAY['prog_scd1', 'prog_scd2', 'prog_app', 'prog_snap',
  'prog_fail', 'prog_stall', 'prog_catch']) f;
DROP SCHEMA prog CASCADE;
RESET client_min_messages;
DELETE FROM autocdc.event_log WHERE pipeline LIKE 'prog\_%';
DELETE FROM autocdc.run_history WHERE pipeline LIKE 'prog\_%';
DELETE FROM autocdc.pipeline WHERE name LIKE 'prog\_%';
