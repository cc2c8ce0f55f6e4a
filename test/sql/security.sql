-- A server many roles share: no role's code runs with another's rights,
-- pipelines cannot be captured, one flow cannot harm another, and errors
-- about other roles' objects tell nothing but that a name is taken.
-- Creates the extension when this file runs alone (make installcheck REGRESS=...).
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS autocdc;
RESET client_min_messages;
CREATE ROLE acdc_mallory LOGIN;
CREATE ROLE acdc_trent LOGIN;
CREATE SCHEMA mal AUTHORIZATION acdc_mallory;
CREATE SCHEMA tre AUTHORIZATION acdc_trent;
GRANT USAGE ON SCHEMA mal TO acdc_trent;
GRANT USAGE ON SCHEMA tre TO acdc_mallory;
-- Whoever runs a piece of code signs here, and a superuser shows up.
CREATE TABLE public.signed (what text, who name, super boolean);
GRANT INSERT ON public.signed TO PUBLIC;
CREATE FUNCTION public.sign(what text) RETURNS void LANGUAGE sql
  AS $$INSERT INTO public.signed SELECT what, current_user, rolsuper FROM pg_roles WHERE rolname = current_user$$;
CREATE FUNCTION public.signed() RETURNS TABLE(what text, who name, super boolean) LANGUAGE sql
  AS $$SELECT DISTINCT what, who, super FROM public.signed ORDER BY 1, 2$$;

-- Temporary tables are refused, as source and as target.
SET ROLE acdc_mallory;
CREATE TEMP TABLE tsrc (id int, v int, seq int);
CREATE TABLE mal.src (id int, v int, seq int);
SELECT autocdc.create_auto_cdc_flow(target => 'mal.t', source => 'tsrc', keys => ARRAY['id'],
  sequence_by => 'seq', pipeline => 'mal');
CREATE TEMP TABLE ttgt (id int PRIMARY KEY, v int);
SELECT autocdc.create_auto_cdc_flow(target => 'ttgt', source => 'mal.src', keys => ARRAY['id'],
  sequence_by => 'seq', pipeline => 'mal');
SELECT autocdc.create_auto_cdc_flow(target => 'pg_temp.newt', source => 'mal.src', keys => ARRAY['id'],
  sequence_by => 'seq', pipeline => 'mal');
SELECT autocdc.create_append_flow(target => 'ttgt', source => 'mal.src', pipeline => 'mal');
DROP TABLE tsrc, ttgt;

-- Route 1: a trigger on the SCD 1 state, fired by the state's new
-- partial-update column that a second flow brings.
CREATE FUNCTION mal.trap() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM public.sign(CASE WHEN TG_TABLE_NAME LIKE '\_\_autocdc\_state%' THEN 'state trigger'
                           WHEN TG_TABLE_NAME LIKE '\_\_autocdc\_events%' THEN 'event store trigger'
                           ELSE 'target trigger' END);
  RETURN NEW;
END $$;
SELECT autocdc.create_auto_cdc_flow(target => 'mal.t', source => 'mal.src', keys => ARRAY['id'],
  sequence_by => 'seq', pipeline => 'mal');
INSERT INTO mal.src VALUES (1, 1, 1);
SELECT flow, status FROM autocdc.run('mal');
SELECT pg_catalog.format('CREATE TRIGGER trap BEFORE UPDATE ON %s FOR EACH ROW EXECUTE FUNCTION mal.trap()',
                         state_table) AS ddl
  FROM autocdc.target WHERE target = 'mal.t'::regclass \gset
:ddl;
CREATE TABLE mal.src2 (id int, v int, w int, seq int);
RESET ROLE;
-- The second flow comes from a superuser; its ALTER and UPDATE of the state
-- run as the state's owner.
GRANT SELECT ON mal.src2 TO CURRENT_USER;
SELECT autocdc.create_auto_cdc_flow(target => 'mal.t', source => 'mal.src2', keys => ARRAY['id'],
  sequence_by => 'seq', name => 'mal_t2', ignore_null_updates => true, except_column_list => ARRAY['w'],
  pipeline => 'mal');
SELECT * FROM public.signed();
SELECT rolsuper FROM pg_roles WHERE rolname = 'acdc_mallory';
TRUNCATE public.signed;

-- Route 2: the same through the SCD 2 event store.
SET ROLE acdc_mallory;
CREATE TABLE mal.h_src (id int, v int, seq int);
SELECT autocdc.create_auto_cdc_flow(target => 'mal.h', source => 'mal.h_src', keys => ARRAY['id'],
  sequence_by => 'seq', stored_as_scd_type => 2, pipeline => 'mal');
INSERT INTO mal.h_src VALUES (1, 1, 1);
SELECT flow, status FROM autocdc.run('mal', flows => ARRAY['mal.h']);
SELECT pg_catalog.format('CREATE TRIGGER trap BEFORE UPDATE ON %s FOR EACH ROW EXECUTE FUNCTION mal.trap()',
                         state_table) AS ddl
  FROM autocdc.target WHERE target = 'mal.h'::regclass \gset
:ddl;
ALTER TABLE mal.h ADD COLUMN w int;
CREATE TABLE mal.h_src2 (id int, v int, w int, seq int);
RESET ROLE;
GRANT SELECT ON mal.h_src2 TO CURRENT_USER;
SELECT autocdc.create_auto_cdc_flow(target => 'mal.h', source => 'mal.h_src2', keys => ARRAY['id'],
  sequence_by => 'seq', stored_as_scd_type => 2, name => 'mal_h2', pipeline => 'mal');
SELECT * FROM public.signed();
TRUNCATE public.signed;

-- Route 3: no trigger at all, a domain whose CHECK calls the role's
-- function, as the sequence type: the state's new column is checked.
SET ROLE acdc_mallory;
CREATE FUNCTION mal.ok(int) RETURNS boolean LANGUAGE plpgsql AS $$
BEGIN PERFORM public.sign('domain check'); RETURN true; END $$;
CREATE DOMAIN mal.seqdom AS int CHECK (mal.ok(VALUE));
CREATE TABLE mal.d_src (id int, v int, w int, seq mal.seqdom);
SELECT autocdc.create_auto_cdc_flow(target => 'mal.d', source => 'mal.d_src', keys => ARRAY['id'],
  sequence_by => 'seq', except_column_list => ARRAY['w'], pipeline => 'mal');
INSERT INTO mal.d_src VALUES (1, 1, 1, 1);
SELECT flow, status FROM autocdc.run('mal', flows => ARRAY['mal.d']);
RESET ROLE;
TRUNCATE public.signed;
CREATE TABLE public.d_src2 (id int, v int, w int, seq mal.seqdom);
GRANT SELECT ON public.d_src2 TO acdc_mallory;
SELECT autocdc.create_auto_cdc_flow(target => 'mal.d', source => 'public.d_src2', keys => ARRAY['id'],
  sequence_by => 'seq', name => 'mal_d2', ignore_null_updates => true, except_column_list => ARRAY['w'],
  pipeline => 'mal');
SELECT * FROM public.signed();
TRUNCATE public.signed;

-- A run, by whoever, fires the target's triggers as the target's owner.
SET ROLE acdc_mallory;
CREATE TRIGGER trap BEFORE INSERT OR UPDATE ON mal.t FOR EACH ROW EXECUTE FUNCTION mal.trap();
RESET ROLE;
INSERT INTO mal.src VALUES (2, 2, 1);
SELECT flow, status FROM autocdc.run('mal', flows => ARRAY['mal.t']);
SELECT * FROM public.signed();
TRUNCATE public.signed;

-- A deferred trigger would fire at commit, as whoever commits: PostgreSQL
-- refuses to queue one in a security-restricted operation, so the flow
-- fails alone and nothing of Mallory's runs as the superuser.
SET ROLE acdc_mallory;
DROP TRIGGER trap ON mal.t;
CREATE CONSTRAINT TRIGGER later AFTER INSERT OR UPDATE ON mal.t DEFERRABLE INITIALLY DEFERRED
  FOR EACH ROW EXECUTE FUNCTION mal.trap();
RESET ROLE;
INSERT INTO mal.src VALUES (4, 4, 1);
SELECT flow, status FROM autocdc.run('mal', flows => ARRAY['mal.t', 'mal.h']);
SELECT error FROM autocdc.event_log WHERE flow = 'mal.t' ORDER BY id DESC LIMIT 1;
SELECT * FROM public.signed();
SET ROLE acdc_mallory;
DROP TRIGGER later ON mal.t;
RESET ROLE;

-- The target's owner must be able to read the source, since it runs the flow.
CREATE TABLE public.secret (id int, v int, seq int);
SELECT autocdc.create_auto_cdc_flow(target => 'mal.t', source => 'public.secret', keys => ARRAY['id'],
  sequence_by => 'seq', name => 'mal_t3', pipeline => 'mal');

-- A flow whose creator lost the target owner's privileges no longer runs.
CREATE ROLE acdc_helper LOGIN;
GRANT acdc_mallory TO acdc_helper;
GRANT SELECT ON public.secret TO acdc_mallory;
SET ROLE acdc_helper;
SELECT autocdc.create_auto_cdc_flow(target => 'mal.t', source => 'mal.src', keys => ARRAY['id'],
  sequence_by => 'seq', name => 'helped', pipeline => 'mal');
RESET ROLE;
REVOKE acdc_mallory FROM acdc_helper;
INSERT INTO mal.src VALUES (3, 3, 1);
SELECT flow, status FROM autocdc.run('mal', flows => ARRAY['helped']);
SELECT error FROM autocdc.event_log WHERE flow = 'helped' ORDER BY id DESC LIMIT 1;
SELECT autocdc.drop_flow('helped');

-- Pipelines cannot be captured.  Mallory takes the default pipeline first.
SET ROLE acdc_mallory;
CREATE TABLE mal.q_src (id int, v int, seq int);
SELECT autocdc.create_auto_cdc_flow(target => 'mal.q', source => 'mal.q_src', keys => ARRAY['id'],
  sequence_by => 'seq');
SELECT name, owner FROM autocdc.pipelines WHERE name = 'default';
RESET ROLE;
-- A superuser's flow created without pipeline => does not join it.
CREATE TABLE public.p_src (id int, v int, seq int);
SELECT autocdc.create_auto_cdc_flow(target => 'public.p_t', source => 'public.p_src', keys => ARRAY['id'],
  sequence_by => 'seq');
-- Trent, with no rights on it, is told only that the name is taken.
SET ROLE acdc_trent;
CREATE TABLE tre.src (id int, v int, seq int);
SELECT autocdc.create_auto_cdc_flow(target => 'tre.t', source => 'tre.src', keys => ARRAY['id'],
  sequence_by => 'seq', pipeline => 'default');
SELECT autocdc.create_auto_cdc_flow(target => 'tre.t', source => 'tre.src', keys => ARRAY['id'],
  sequence_by => 'seq', pipeline => 'trent');
-- Nothing of Mallory's is visible to Trent, in the catalog or in errors.
SELECT count(*) FROM autocdc.flows;
SELECT count(*) FROM autocdc.pipelines;
SELECT * FROM autocdc.run('mal');
SELECT * FROM autocdc.run('default');
SELECT * FROM autocdc.run('trent', flows => ARRAY['mal.t']);
SELECT autocdc.drop_flow('mal.t');
SELECT autocdc.create_auto_cdc_flow(target => 'tre.t2', source => 'tre.src', keys => ARRAY['id'],
  sequence_by => 'seq', name => 'mal.t', pipeline => 'trent');
-- Mallory's target is hers: its keys and SCD type are not told either.
SELECT autocdc.create_auto_cdc_flow(target => 'mal.t', source => 'tre.src', keys => ARRAY['v'],
  sequence_by => 'seq', stored_as_scd_type => 2, name => 'tre_into_mal', pipeline => 'trent');
SELECT autocdc.create_append_flow(target => 'mal.t', source => 'tre.src', name => 'tre_app', pipeline => 'trent');
RESET ROLE;
-- A pipeline left without flows goes away, and its name with it.
SET ROLE acdc_mallory;
SELECT autocdc.drop_flow('mal.q');
SELECT count(*) FROM autocdc.pipelines WHERE name = 'default';
RESET ROLE;
SELECT autocdc.create_auto_cdc_flow(target => 'public.p_t', source => 'public.p_src', keys => ARRAY['id'],
  sequence_by => 'seq');
SELECT name, owner::text = current_user AS mine FROM autocdc.pipelines WHERE name = 'default';
SELECT autocdc.drop_flow('public.p_t');
-- Hints quote the names they paste into SQL.
SET ROLE acdc_trent;
SELECT autocdc.create_auto_cdc_flow(target => 'tre.t3', source => 'tre.src', keys => ARRAY['id'],
  sequence_by => 'seq', name => 'it''s', pipeline => 'trent');
SELECT autocdc.create_auto_cdc_flow(target => 'tre.t3', source => 'tre.src', keys => ARRAY['id'],
  sequence_by => 'seq', name => 'it''s', pipeline => 'trent');
RESET ROLE;

-- A view over one's own state cannot block another role's DROP of its source.
SET ROLE acdc_trent;
CREATE TABLE tre.shared (id int, v int, seq int);
SELECT autocdc.create_append_flow(target => 'tre.copy', source => 'tre.shared', pipeline => 'trent');
GRANT SELECT ON tre.shared TO acdc_mallory;
SET ROLE acdc_mallory;
SELECT autocdc.create_auto_cdc_flow(target => 'mal.from_trent', source => 'tre.shared', keys => ARRAY['id'],
  sequence_by => 'seq', pipeline => 'mal2');
SELECT pg_catalog.format('CREATE VIEW mal.peek AS SELECT * FROM %s', state_table) AS ddl
  FROM autocdc.target WHERE target = 'mal.from_trent'::regclass \gset
:ddl;
SET ROLE acdc_trent;
DROP TABLE tre.shared;
RESET ROLE;
SELECT count(*) FROM autocdc.flows WHERE name = 'mal.from_trent';
SELECT count(*) FROM pg_class WHERE relname = 'peek';

-- One flow cannot harm another: a failing flow of each kind, then one of
-- every kind, in one run (a failed flow's memory is gone before the next).
CREATE SCHEMA harm;
CREATE FUNCTION harm.make(kind text, name text, pipeline text, fail boolean) RETURNS void
LANGUAGE plpgsql AS $make$
DECLARE
  t text := 'harm.' || name;
  s text := 'harm.' || name || '_src';
  v int := CASE WHEN fail THEN 500 ELSE 1 END;
BEGIN
  EXECUTE format('CREATE TABLE %s (id int, v int, seq int)', s);
  EXECUTE format('INSERT INTO %s SELECT g, %s, 1 FROM generate_series(1, 20) g', s, v);
  IF kind = 'snapshot_fn' THEN
    EXECUTE format('CREATE TABLE %s (id int PRIMARY KEY, v int CHECK (v < 100), seq int)', t);
    EXECUTE format($f$CREATE FUNCTION %s_next(latest bigint) RETURNS TABLE(snapshot regclass, version bigint)
                      LANGUAGE sql AS $b$SELECT %L::regclass, 1::bigint WHERE latest IS NULL$b$$f$, t, s);
    PERFORM autocdc.create_auto_cdc_from_snapshot_flow(target => t, keys => ARRAY['id'],
      source_function => (t || '_next(bigint)')::regprocedure, name => name, pipeline => pipeline);
    RETURN;
  END IF;
  IF kind = 'scd2' THEN
    EXECUTE format('CREATE TABLE %s (id int NOT NULL, v int CHECK (v < 100), seq int, __start_at int NOT NULL, __end_at int, PRIMARY KEY (id, __start_at))', t);
  ELSIF kind = 'append' THEN
    EXECUTE format('CREATE TABLE %s (id int, v int CHECK (v < 100), seq int)', t);
  ELSE
    EXECUTE format('CREATE TABLE %s (id int PRIMARY KEY, v int CHECK (v < 100), seq int)', t);
  END IF;
  CASE kind
    WHEN 'scd1' THEN PERFORM autocdc.create_auto_cdc_flow(target => t, source => s::regclass,
      keys => ARRAY['id'], sequence_by => 'seq', name => name, pipeline => pipeline);
    WHEN 'scd1_partial' THEN PERFORM autocdc.create_auto_cdc_flow(target => t, source => s::regclass,
      keys => ARRAY['id'], sequence_by => 'seq', ignore_null_updates => true, name => name, pipeline => pipeline);
    WHEN 'scd2' THEN PERFORM autocdc.create_auto_cdc_flow(target => t, source => s::regclass,
      keys => ARRAY['id'], sequence_by => 'seq', stored_as_scd_type => 2, name => name, pipeline => pipeline);
    WHEN 'snapshot' THEN PERFORM autocdc.create_auto_cdc_from_snapshot_flow(target => t, source => s::regclass,
      keys => ARRAY['id'], name => name, pipeline => pipeline);
    WHEN 'append' THEN PERFORM autocdc.create_append_flow(target => t, source => s::regclass,
      name => name, pipeline => pipeline);
  END CASE;
END $make$;
DO $$
DECLARE
  kinds text[] := ARRAY['scd1', 'scd1_partial', 'scd2', 'snapshot', 'snapshot_fn', 'append'];
  f text;
  k text;
BEGIN
  FOREACH f IN ARRAY kinds LOOP
    FOREACH k IN ARRAY kinds LOOP
      PERFORM harm.make(f, 'a_' || f || '_before_' || k, 'harm_' || f || '_' || k, true);
      PERFORM harm.make(k, 'b_' || k || '_after_' || f, 'harm_' || f || '_' || k, false);
    END LOOP;
  END LOOP;
END $$;
SET client_min_messages = error;
SELECT r.status, count(*), sum(r.rows_read)
  FROM (SELECT name FROM autocdc.pipelines WHERE name LIKE 'harm%' ORDER BY name) p,
       LATERAL autocdc.run(p.name) r
 GROUP BY r.status ORDER BY 1;
RESET client_min_messages;
-- Every failing flow (a_...) failed and every flow after one (b_...) succeeded.
SELECT left(flow, 2) AS flows, status, count(*) FROM autocdc.event_log
 WHERE pipeline LIKE 'harm%' GROUP BY 1, 2 ORDER BY 1, 2;

-- A flow that raises query_canceled (57014) itself fails alone; the run goes on.
CREATE FUNCTION harm.fake_cancel(int) RETURNS int LANGUAGE plpgsql AS $$
BEGIN RAISE EXCEPTION 'pretending to be a cancel' USING ERRCODE = '57014'; END $$;
CREATE FUNCTION harm.fake_shutdown(int) RETURNS int LANGUAGE plpgsql AS $$
BEGIN RAISE EXCEPTION 'pretending to be a shutdown' USING ERRCODE = '57P01'; END $$;
CREATE TABLE harm.c_src (id int, v int, seq int);
INSERT INTO harm.c_src VALUES (1, 1, 1);
SELECT autocdc.create_auto_cdc_flow(target => 'harm.c1', source => 'harm.c_src', keys => ARRAY['id'],
  sequence_by => 'harm.fake_cancel(seq)', name => 'c1', pipeline => 'cancel');
SELECT autocdc.create_auto_cdc_flow(target => 'harm.c2', source => 'harm.c_src', keys => ARRAY['id'],
  sequence_by => 'harm.fake_shutdown(seq)', name => 'c2', pipeline => 'cancel');
SELECT autocdc.create_auto_cdc_flow(target => 'harm.c3', source => 'harm.c_src', keys => ARRAY['id'],
  sequence_by => 'seq', name => 'c3', pipeline => 'cancel');
SET client_min_messages = error;
SELECT flow, rows_upserted, status FROM autocdc.run('cancel');
RESET client_min_messages;
-- A real cancel (here a statement timeout) still stops the whole run.
INSERT INTO harm.c_src VALUES (2, 2, 2);
CREATE FUNCTION harm.slow(int) RETURNS int LANGUAGE sql AS 'SELECT $1 FROM pg_sleep(0.5)';
SELECT autocdc.create_auto_cdc_flow(target => 'harm.c0', source => 'harm.c_src', keys => ARRAY['id'],
  sequence_by => 'harm.slow(seq)', name => 'c0', pipeline => 'cancel');
SET statement_timeout = '300ms';
\set VERBOSITY terse
SELECT flow, status FROM autocdc.run('cancel');
\set VERBOSITY default
RESET statement_timeout;
SELECT count(*) FROM harm.c3;

-- Types carry code: a superuser's flow from Mallory's table never makes
-- columns of her domains, nor casts to them (her CHECK or DEFAULT would run
-- as the superuser who owns the target).
SET ROLE acdc_mallory;
CREATE FUNCTION mal.dflt() RETURNS int LANGUAGE plpgsql AS $$
BEGIN PERFORM public.sign('domain default'); RETURN 0; END $$;
CREATE DOMAIN mal.dint AS int DEFAULT mal.dflt() CHECK (mal.ok(VALUE));
CREATE TYPE mal.pair AS (a int, b mal.dint);
CREATE TABLE mal.typed (id int, v int, seq mal.dint, p mal.pair, arr mal.dint[], op text);
GRANT SELECT ON mal.typed TO PUBLIC;
RESET ROLE;
SELECT autocdc.create_auto_cdc_flow(target => 'public.ty_h', source => 'mal.typed', keys => ARRAY['id'],
  sequence_by => 'seq', except_column_list => ARRAY['p', 'arr'], stored_as_scd_type => 2, pipeline => 'ty');
SELECT autocdc.create_auto_cdc_flow(target => 'public.ty_1', source => 'mal.typed', keys => ARRAY['id'],
  sequence_by => 'seq::int', except_column_list => ARRAY['seq', 'arr'], pipeline => 'ty');
SELECT autocdc.create_auto_cdc_flow(target => 'public.ty_1', source => 'mal.typed', keys => ARRAY['id'],
  sequence_by => 'seq::int', except_column_list => ARRAY['seq', 'p'], pipeline => 'ty');
SELECT autocdc.create_auto_cdc_flow(target => 'public.ty_1', source => 'mal.typed', keys => ARRAY['id'],
  sequence_by => 'ROW(v, seq)', except_column_list => ARRAY['seq', 'p', 'arr'], pipeline => 'ty');
-- Cast to a built-in type (in the flow, or in a view), and it is fine.
SELECT autocdc.create_auto_cdc_flow(target => 'public.ty_1', source => 'mal.typed', keys => ARRAY['id'],
  sequence_by => 'seq::int', except_column_list => ARRAY['seq', 'p', 'arr'],
  apply_as_truncates => $$op = 'T'$$, pipeline => 'ty');
SELECT autocdc.create_append_flow(target => 'public.ty_app', source => 'mal.typed', pipeline => 'ty');
CREATE VIEW public.typed_plain AS SELECT id, v, seq::int AS seq FROM mal.typed;
SELECT autocdc.create_append_flow(target => 'public.ty_app', source => 'public.typed_plain', pipeline => 'ty', once => true);
-- An append target does not take her new column of her domain either.
CREATE TABLE public.ev (id int, v int);
SELECT autocdc.create_append_flow(target => 'public.ev_all', source => 'public.ev', pipeline => 'ty');
ALTER TABLE public.ev OWNER TO acdc_mallory;
SET ROLE acdc_mallory;
ALTER TABLE public.ev ADD COLUMN extra mal.dint;
INSERT INTO public.ev (id, v) VALUES (1, 1);
RESET ROLE;
INSERT INTO mal.typed VALUES (1, 1, 1, NULL, NULL, 'U'), (2, 2, 2, NULL, NULL, 'T');
TRUNCATE public.signed;
SET client_min_messages = error;
SELECT flow, status FROM autocdc.run('ty');
RESET client_min_messages;
SELECT error FROM autocdc.event_log WHERE flow = 'public.ev_all' ORDER BY id DESC LIMIT 1;
SELECT * FROM public.signed();
SELECT rolsuper FROM pg_roles WHERE rolname = 'acdc_mallory';
SELECT autocdc.drop_flow('public.ty_1');
SELECT autocdc.drop_flow('public.ev_all');
DROP VIEW public.typed_plain;
DROP TABLE public.ty_1, public.ty_app, public.ev, public.ev_all;

-- A target that changed hands keeps its former owner's state: its flows
-- stop until made again (her trigger there would run as the new owner).
SET ROLE acdc_mallory;
CREATE TABLE mal.h2_src (id int, v int, seq int);
SELECT autocdc.create_auto_cdc_flow(target => 'mal.handed', source => 'mal.h2_src', keys => ARRAY['id'],
  sequence_by => 'seq', pipeline => 'mal_h');
RESET ROLE;
ALTER TABLE mal.handed OWNER TO CURRENT_USER;
CREATE TABLE public.h2_src (id int, v int, seq int);
INSERT INTO public.h2_src VALUES (1, 1, 1);
-- no flow is added to it, its flows' runs are refused, and so is compact
SELECT autocdc.create_auto_cdc_flow(target => 'mal.handed', source => 'public.h2_src', keys => ARRAY['id'],
  sequence_by => 'seq', name => 'admin_handed', pipeline => 'admin_h');
SELECT flow, status FROM autocdc.run('mal_h');
SELECT error FROM autocdc.event_log WHERE flow = 'mal.handed' ORDER BY id DESC LIMIT 1;
SELECT * FROM autocdc.compact('mal.handed', '1');
DROP TABLE public.h2_src;
DROP TABLE mal.handed;

-- Code a flow sets off cannot call autocdc's functions (a nested run would
-- pull the relations and catalog rows of the running one from under it).
SET ROLE acdc_mallory;
CREATE TABLE mal.l_src (id int, v int, seq int);
INSERT INTO mal.l_src VALUES (1, 1, 1);
SELECT autocdc.create_auto_cdc_flow(target => 'mal.l1', source => 'mal.l_src', keys => ARRAY['id'],
  sequence_by => 'seq', name => 'l1', pipeline => 'mal_l');
CREATE FUNCTION mal.reenter() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN PERFORM * FROM autocdc.run('mal_l'); RETURN NEW; END $$;
CREATE TRIGGER reenter BEFORE INSERT ON mal.l1 FOR EACH ROW EXECUTE FUNCTION mal.reenter();
CREATE TABLE mal.l2 (id int PRIMARY KEY, v int, seq int);
CREATE FUNCTION mal.reenter_drop() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN PERFORM autocdc.drop_flow('l1'); RETURN NEW; END $$;
CREATE TRIGGER reenter BEFORE INSERT ON mal.l2 FOR EACH ROW EXECUTE FUNCTION mal.reenter_drop();
SELECT autocdc.create_auto_cdc_flow(target => 'mal.l2', source => 'mal.l_src', keys => ARRAY['id'],
  sequence_by => 'seq', name => 'l2', pipeline => 'mal_l');
SELECT autocdc.create_auto_cdc_flow(target => 'mal.l3', source => 'mal.l_src', keys => ARRAY['id'],
  sequence_by => 'seq', name => 'l3', pipeline => 'mal_l');
RESET ROLE;
SET client_min_messages = error;
SELECT flow, status FROM autocdc.run('mal_l');
RESET client_min_messages;
SELECT flow, error FROM autocdc.event_log WHERE pipeline = 'mal_l' ORDER BY flow;

-- A name taken again later does not bring the old owner's log rows with it.
SET ROLE acdc_mallory;
SELECT autocdc.create_auto_cdc_flow(target => 'mal.r', source => 'mal.src', keys => ARRAY['id'],
  sequence_by => 'seq', name => 'reused', pipeline => 'reused');
SELECT flow, status FROM autocdc.run('reused');
SELECT autocdc.drop_flow('reused');
SET ROLE acdc_trent;
SELECT autocdc.create_auto_cdc_flow(target => 'tre.r', source => 'tre.src', keys => ARRAY['id'],
  sequence_by => 'seq', name => 'reused', pipeline => 'reused');
SELECT count(*) AS rows_seen FROM autocdc.event_log WHERE pipeline = 'reused' OR flow = 'reused';
RESET ROLE;
SELECT count(*) AS rows_kept FROM autocdc.event_log WHERE pipeline = 'reused';

-- Clean up.
SET client_min_messages = warning;
DROP SCHEMA harm CASCADE;
DROP SCHEMA mal CASCADE;
DROP SCHEMA tre CASCADE;
DROP TABLE public.d_src2, public.secret, public.p_src, public.p_t, public.signed;
DROP FUNCTION public.sign(text), public.signed();
RESET client_min_messages;
SELECT count(*) AS flows_left FROM autocdc.flows WHERE pipeline IN ('mal', 'mal2', 'trent', 'cancel', 'reused', 'ty', 'mal_h', 'admin_h', 'mal_l')
   OR pipeline LIKE 'harm%';
DROP ROLE acdc_mallory, acdc_trent, acdc_helper;
