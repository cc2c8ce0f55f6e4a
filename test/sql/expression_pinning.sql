-- Expression pinning: what a flow evaluates at each run is what its
-- expressions resolved to when it was created.  Objects added later where
-- the stored names lead (a closer overload, an operator, a cast) make the
-- run refuse the flow before evaluating anything.
-- Creates the extension when this file runs alone (make installcheck REGRESS=...).
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS autocdc;
RESET client_min_messages;
\set VERBOSITY default
CREATE ROLE acdc_trusted;
CREATE ROLE acdc_mallory;
-- Mallory, a low-privilege role, owns schema util where the superuser keeps
-- helpers of its own.
CREATE SCHEMA util AUTHORIZATION acdc_mallory;
CREATE TABLE public.pin_calls (fn text);
GRANT INSERT ON public.pin_calls TO acdc_mallory;
CREATE FUNCTION util.pf(anyelement) RETURNS anyelement LANGUAGE sql IMMUTABLE AS 'SELECT $1';
CREATE FUNCTION util.pl(anyelement, anyelement) RETURNS boolean LANGUAGE sql IMMUTABLE AS 'SELECT $1 = $2';
CREATE OPERATOR util.=== (function = util.pl, leftarg = anyelement, rightarg = anyelement);
CREATE FUNCTION util.g(bigint) RETURNS bigint LANGUAGE sql IMMUTABLE AS 'SELECT $1';
CREATE FUNCTION util.h(int) RETURNS int LANGUAGE sql IMMUTABLE AS 'SELECT $1';
ALTER FUNCTION util.pf(anyelement) OWNER TO acdc_trusted;
ALTER FUNCTION util.pl(anyelement, anyelement) OWNER TO acdc_trusted;
ALTER OPERATOR util.=== (anyelement, anyelement) OWNER TO acdc_trusted;
ALTER FUNCTION util.g(bigint) OWNER TO acdc_trusted;
ALTER FUNCTION util.h(int) OWNER TO acdc_trusted;
-- Mallory's own types, which the superuser's source uses.
SET ROLE acdc_mallory;
CREATE TYPE util.kind AS ENUM ('upsert', 'delete');
CREATE DOMAIN util.dint AS int;
RESET ROLE;

CREATE TABLE pin_src (id int, v text, seq int, k util.kind, d util.dint);
-- (Column d is left out of the targets: a column of Mallory's domain in a
-- superuser's target would run her CHECKs as the superuser, and is refused.)
-- One flow per kind of redirection, and one that nothing redirects.  The
-- text kept spells implicit casts out (util.h((d)::integer)).
SELECT autocdc.create_auto_cdc_flow(target => 'pin_overload', source => 'pin_src', keys => ARRAY['id'], except_column_list => ARRAY['d'],
  sequence_by => 'util.pf(seq)', pipeline => 'pin');
SELECT autocdc.create_auto_cdc_flow(target => 'pin_operator', source => 'pin_src', keys => ARRAY['id'], except_column_list => ARRAY['d'],
  sequence_by => 'seq', apply_as_deletes => 'v OPERATOR(util.===) ''gone''', pipeline => 'pin');
SELECT autocdc.create_auto_cdc_flow(target => 'pin_cast', source => 'pin_src', keys => ARRAY['id'], except_column_list => ARRAY['d'],
  sequence_by => 'seq', apply_as_deletes => $$k::text = 'delete'$$, pipeline => 'pin');
SELECT autocdc.create_auto_cdc_flow(target => 'pin_domain', source => 'pin_src', keys => ARRAY['id'], except_column_list => ARRAY['d'],
  sequence_by => 'util.h(d)', pipeline => 'pin');
SELECT autocdc.create_auto_cdc_flow(target => 'pin_implicit', source => 'pin_src', keys => ARRAY['id'], except_column_list => ARRAY['d'],
  sequence_by => 'util.g(seq)', pipeline => 'pin');
SELECT autocdc.create_auto_cdc_flow(target => 'pin_plain', source => 'pin_src', keys => ARRAY['id'], except_column_list => ARRAY['d'],
  sequence_by => 'seq', apply_as_deletes => $$v = 'gone'$$, pipeline => 'pin');
-- What each flow resolved to, kept as text (OIDs do not survive a dump).
SELECT name, sequence_by, unnest(expression_objects) AS resolved_to
  FROM autocdc.flows WHERE pipeline = 'pin' ORDER BY name;
INSERT INTO pin_src VALUES (1, 'a', 1, 'upsert', 1);
SELECT flow, rows_upserted, status FROM autocdc.run('pin');

-- Mallory adds objects where the stored names lead, each of which would run
-- her code with the flow owner's rights (a superuser's here).
SET ROLE acdc_mallory;
CREATE FUNCTION util.record(text) RETURNS void LANGUAGE sql
  AS $$INSERT INTO public.pin_calls VALUES ($1)$$;
-- A closer overload: util.pf(seq) would now call util.pf(integer).
CREATE FUNCTION util.pf(int) RETURNS int LANGUAGE sql
  AS $$SELECT util.record('pf(int)'); SELECT $1$$;
-- A closer operator for OPERATOR(util.===).
CREATE FUNCTION util.pl_text(text, text) RETURNS boolean LANGUAGE sql
  AS $$SELECT util.record('===(text,text)'); SELECT false$$;
CREATE OPERATOR util.=== (function = util.pl_text, leftarg = text, rightarg = text);
-- A cast from her enum to text, which k::text would now call.
CREATE FUNCTION util.kind_text(util.kind) RETURNS text LANGUAGE sql
  AS $$SELECT util.record('kind_text'); SELECT 'delete'::text$$;
CREATE CAST (util.kind AS text) WITH FUNCTION util.kind_text(util.kind) AS IMPLICIT;
-- A function over her domain, closer than util.h(integer) to util.h(d).
CREATE FUNCTION util.h(util.dint) RETURNS int LANGUAGE sql
  AS $$SELECT util.record('h(dint)'); SELECT $1$$;
-- An implicit cast to a type of hers and a util.g over it: util.g(seq) is
-- ambiguous now.
CREATE TYPE util.evil AS (x int);
CREATE FUNCTION util.to_evil(int) RETURNS util.evil LANGUAGE sql
  AS $$SELECT util.record('to_evil'); SELECT ROW($1)::util.evil$$;
CREATE CAST (int AS util.evil) WITH FUNCTION util.to_evil(int) AS IMPLICIT;
CREATE FUNCTION util.g(util.evil) RETURNS bigint LANGUAGE sql
  AS $$SELECT util.record('g(evil)'); SELECT 0::bigint$$;
RESET ROLE;
-- The text now leads to her objects (shown in a transaction rolled back).
BEGIN;
SELECT util.pf(seq), v OPERATOR(util.===) 'gone' AS gone, k::text, util.h(d) FROM pin_src;
SELECT fn FROM pin_calls ORDER BY fn;
ROLLBACK;

-- The next run refuses every redirected flow before evaluating any of its
-- expressions.  The others run: their text, with its casts spelled out,
-- still resolves as at creation (util.h((d)::integer), util.g((seq)::bigint)).
-- None of Mallory's functions was called.
INSERT INTO pin_src VALUES (2, 'b', 2, 'upsert', 2);
SELECT flow, rows_upserted, status FROM autocdc.run('pin');
SELECT fn FROM pin_calls;
SELECT id, v FROM pin_plain ORDER BY id;
SELECT flow, error FROM autocdc.event_log WHERE pipeline = 'pin' AND status = 'failed' ORDER BY flow;

-- Whoever owns a schema may drop an object in it and make another of the
-- same signature: the owner is recorded too.
SELECT autocdc.drop_flow('pin_overload');
SELECT autocdc.drop_flow('pin_operator');
SELECT autocdc.drop_flow('pin_cast');
SELECT autocdc.drop_flow('pin_domain');
SELECT autocdc.drop_flow('pin_implicit');
SET ROLE acdc_mallory;
DROP FUNCTION util.pf(int);
DROP FUNCTION util.pf(anyelement);
CREATE FUNCTION util.pf(anyelement) RETURNS anyelement LANGUAGE sql
  AS $$SELECT util.record('pf(anyelement) of mallory'); SELECT $1$$;
RESET ROLE;
INSERT INTO pin_src VALUES (3, 'c', 3, 'upsert', 3);
SELECT flow, rows_upserted, status FROM autocdc.run('pin', flows => ARRAY['pin_plain']);
-- (A new flow over the replaced function, refused once it is replaced again.)
CREATE FUNCTION util.pf2(anyelement) RETURNS anyelement LANGUAGE sql IMMUTABLE AS 'SELECT $1';
ALTER FUNCTION util.pf2(anyelement) OWNER TO acdc_trusted;
SELECT autocdc.create_auto_cdc_flow(target => 'pin_replaced', source => 'pin_src', keys => ARRAY['id'], except_column_list => ARRAY['d'],
  sequence_by => 'util.pf2(seq)', pipeline => 'pin_b');
SET ROLE acdc_mallory;
DROP FUNCTION util.pf2(anyelement);
CREATE FUNCTION util.pf2(anyelement) RETURNS anyelement LANGUAGE sql
  AS $$SELECT util.record('pf2 of mallory'); SELECT $1$$;
RESET ROLE;
SELECT flow, rows_upserted, status FROM autocdc.run('pin_b');
SELECT fn FROM pin_calls;

-- Dropping and re-creating a flow accepts what its text resolves to now.
SELECT autocdc.drop_flow('pin_replaced');
SELECT autocdc.create_auto_cdc_flow(target => 'pin_replaced', source => 'pin_src', keys => ARRAY['id'], except_column_list => ARRAY['d'],
  sequence_by => 'util.pf2(seq)', pipeline => 'pin_b');
SELECT unnest(expression_objects) AS resolved_to FROM autocdc.flows WHERE name = 'pin_replaced';
SELECT flow, rows_upserted, status FROM autocdc.run('pin_b');
SELECT fn, count(*) FROM pin_calls GROUP BY fn;

-- A snapshot flow's source function is pinned the same way.
CREATE TABLE pin_snap (id int, v text);
CREATE FUNCTION util.next_snap(latest bigint) RETURNS TABLE (snapshot regclass, version bigint)
  LANGUAGE sql AS $$SELECT 'public.pin_snap'::regclass, 1::bigint WHERE latest IS NULL$$;
ALTER FUNCTION util.next_snap(bigint) OWNER TO acdc_trusted;
CREATE TABLE pin_snap_tgt (id int PRIMARY KEY, v text);
SELECT autocdc.create_auto_cdc_from_snapshot_flow(target => 'pin_snap_tgt',
  source_function => 'util.next_snap(bigint)', keys => ARRAY['id'], pipeline => 'pin_s');
SELECT unnest(expression_objects) AS resolved_to FROM autocdc.flows WHERE name = 'pin_snap_tgt';
SET ROLE acdc_mallory;
DROP FUNCTION util.next_snap(bigint);
CREATE FUNCTION util.next_snap(latest bigint) RETURNS TABLE (snapshot regclass, version bigint)
  LANGUAGE sql AS $$SELECT util.record('next_snap of mallory'); SELECT 'public.pin_snap'::regclass, 1::bigint$$;
RESET ROLE;
SELECT flow, rows_upserted, status FROM autocdc.run('pin_s');
-- Gone altogether: the run says so as before.
SET ROLE acdc_mallory;
DROP FUNCTION util.next_snap(bigint);
RESET ROLE;
SELECT flow, rows_upserted, status FROM autocdc.run('pin_s');
SELECT fn, count(*) FROM pin_calls GROUP BY fn;

-- A flow from 0.1.0 has nothing recorded: its first run records it.
UPDATE autocdc.flow SET expression_objects = NULL WHERE name = 'pin_plain';
SELECT flow, status FROM autocdc.run('pin', flows => ARRAY['pin_plain']);
SELECT unnest(expression_objects) AS resolved_to FROM autocdc.flows WHERE name = 'pin_plain';

-- Clean up.
SELECT autocdc.drop_flow('pin_plain');
SELECT autocdc.drop_flow('pin_replaced');
SELECT autocdc.drop_flow('pin_snap_tgt');
DROP TABLE pin_plain, pin_overload, pin_operator, pin_cast, pin_domain, pin_implicit,
  pin_replaced, pin_snap_tgt, pin_snap, pin_src, pin_calls;
DROP SCHEMA util CASCADE;
DROP ROLE acdc_trusted;
DROP ROLE acdc_mallory;
