# The database that 010_dump_restore.pl and 011_pg_upgrade.pl carry across
# clusters: every kind of flow, runs done and rows pending.
package DumpFixture;
use strict;
use warnings;

# One batch of changes to every source (a new export for the function-fed
# snapshot flow, a new content for the table-fed one).
sub batch
{
	my ($n) = @_;
	return qq{
INSERT INTO c1 SELECT i, 'v$n-' || i, $n * 10 + i % 3, CASE WHEN i % 7 = 0 THEN 'D' ELSE 'U' END
  FROM generate_series(1, 20) i;
INSERT INTO c2 SELECT i, 'v$n-' || i, $n, i % 4 FROM generate_series(1, 20) i WHERE i % 5 <> $n % 5;
INSERT INTO c3 SELECT i, 'v$n-' || i, $n * 10 + i % 3 FROM generate_series(1, 20) i WHERE i % 4 <> $n % 4;
DELETE FROM snap;
INSERT INTO snap SELECT i, 'v$n-' || i FROM generate_series($n, $n + 15) i;
CREATE TABLE ex$n AS SELECT i AS id, 'e$n-' || i AS v FROM generate_series($n, $n + 10) i;
INSERT INTO exports VALUES ('ex$n', $n);
INSERT INTO c4 SELECT $n * 100 + i, 'v$n-' || i FROM generate_series(1, 10) i;
};
}

# Creates the flows in database $db of $node and runs them: two runs, one
# more whose transaction then inserts rows, and rows pending after it (and a
# ONCE flow not run yet).
sub populate
{
	my ($node, $db) = @_;
	$node->safe_psql($db, q{
CREATE EXTENSION autocdc;
CREATE SCHEMA hist;
-- SCD 1 with deletes; a row there before the flow (read by the first run)
CREATE TABLE c1 (id int, v text, seq int, op text);
INSERT INTO c1 VALUES (0, 'before', 0, 'U');
SELECT autocdc.create_auto_cdc_flow(target => 't_scd1', source => 'c1', keys => ARRAY['id'],
  sequence_by => 'seq', apply_as_deletes => $$op = 'D'$$, pipeline => 'p');
-- SCD 2 sequenced by ROW(): a composite type of autocdc's
CREATE TABLE c2 (id int, v text, a int, b int);
SELECT autocdc.create_auto_cdc_flow(target => 'hist.t_row', source => 'c2', keys => ARRAY['id'],
  sequence_by => 'ROW(a, b)', stored_as_scd_type => 2, pipeline => 'p');
-- SCD 2 with a plain sequence
CREATE TABLE c3 (id int, v text, seq int);
SELECT autocdc.create_auto_cdc_flow(target => 't_scd2', source => 'c3', keys => ARRAY['id'],
  sequence_by => 'seq', stored_as_scd_type => 2, pipeline => 'p');
-- snapshots from a table and from a function
CREATE TABLE snap (id int, v text);
SELECT autocdc.create_auto_cdc_from_snapshot_flow(target => 't_snap', source => 'snap',
  keys => ARRAY['id'], pipeline => 'p');
CREATE TABLE exports (tbl regclass, version bigint);
CREATE FUNCTION next_export(latest bigint) RETURNS TABLE (snapshot regclass, version bigint)
LANGUAGE sql STABLE SET search_path = public AS $$
  SELECT e.tbl, e.version FROM exports e
   WHERE latest IS NULL OR e.version > latest ORDER BY e.version LIMIT 1 $$;
CREATE TABLE t_fsnap (id int PRIMARY KEY, v text);
CREATE TABLE ex0 (id int, v text);
INSERT INTO exports VALUES ('ex0', 0);
SELECT autocdc.create_auto_cdc_from_snapshot_flow(target => 't_fsnap',
  source_function => 'next_export(bigint)', keys => ARRAY['id'], pipeline => 'p');
-- append, and a ONCE flow into the same target
CREATE TABLE c4 (id int, v text);
SELECT autocdc.create_append_flow(target => 't_app', source => 'c4', pipeline => 'p');
CREATE TABLE c4_old (id int, v text);
INSERT INTO c4_old VALUES (-1, 'old 1'), (-2, 'old 2');
SELECT autocdc.create_append_flow(target => 't_app', source => 'c4_old', name => 'once_done',
  once => true, pipeline => 'p');
});
	$node->safe_psql($db, batch(1) . q{SELECT count(*) FROM autocdc.run('p');});
	$node->safe_psql($db, batch(2) . q{SELECT count(*) FROM autocdc.run('p');});
	# Rows inserted after a run, in the run's own transaction: read by the next run.
	$node->safe_psql($db, q{
BEGIN;
SELECT count(*) FROM autocdc.run('p');
INSERT INTO c1 VALUES (500, 'own', 999, 'U');
INSERT INTO c3 VALUES (500, 'own', 999);
INSERT INTO c4 VALUES (500, 'own');
COMMIT;
});
	# Rows pending at the dump, and a ONCE flow not run yet.
	$node->safe_psql($db, batch(3) . q{
CREATE TABLE c4_more (id int, v text);
INSERT INTO c4_more VALUES (-3, 'more 3'), (-4, 'more 4');
SELECT autocdc.create_append_flow(target => 't_app', source => 'c4_more', name => 'once_pending',
  once => true, pipeline => 'p');
});
}

# The targets and the stamp triggers as text.  A table read as snapshots
# numbers its versions by the runs since the last full refresh: after one,
# its rows' __autocdc_sequence starts again, so t_snap is compared without it.
our $targets = q{
SELECT string_agg(x, E'\n' ORDER BY x) FROM (
  SELECT 't_scd1 ' || to_jsonb(t)::text FROM t_scd1 t UNION ALL
  SELECT 't_row ' || to_jsonb(t)::text FROM hist.t_row t UNION ALL
  SELECT 't_scd2 ' || to_jsonb(t)::text FROM t_scd2 t UNION ALL
  SELECT 't_snap ' || (to_jsonb(t) - '__autocdc_sequence')::text FROM t_snap t UNION ALL
  SELECT 't_fsnap ' || to_jsonb(t)::text FROM t_fsnap t UNION ALL
  SELECT 't_app ' || (to_jsonb(t) - '__autocdc_xid')::text FROM t_app t) u(x)
};
our $triggers = q{
SELECT string_agg(tgrelid::regclass || ':' || tgenabled::text, ' ' ORDER BY tgrelid::regclass::text)
  FROM pg_trigger WHERE tgname = '__autocdc_stamp_xid'
};
our $catalog = q{
SELECT string_agg(concat_ws(' ', f.name, f.kind, f.once, c.once_done_at IS NOT NULL), ', ' ORDER BY f.name)
  FROM autocdc.flow f LEFT JOIN autocdc.checkpoint c ON c.flow = f.name
};

# autocdc's objects for targets: as_of functions, state tables, ROW()
# composite types; rows of target, flow and checkpoint.
our $aux = q{
SELECT concat_ws(' ',
  (SELECT count(*) FROM pg_proc WHERE proname = 'as_of' AND pronamespace = 'autocdc'::regnamespace),
  (SELECT count(*) FROM pg_class WHERE relname LIKE '\_\_autocdc\_%' AND relkind = 'r'
      AND relnamespace = 'autocdc'::regnamespace),
  (SELECT count(*) FROM pg_type WHERE typname LIKE '\_\_autocdc\_seq\_%' AND typtype = 'c'),
  (SELECT count(*) FROM autocdc.target), (SELECT count(*) FROM autocdc.flow),
  (SELECT count(*) FROM autocdc.checkpoint))
};

# How many as_of functions depend on their target (pg_dump and pg_upgrade
# do not keep that).
our $as_of_deps = q{
SELECT count(*) FROM pg_depend d JOIN pg_proc p ON p.oid = d.objid
 WHERE d.classid = 'pg_proc'::regclass AND d.refclassid = 'pg_class'::regclass AND d.deptype = 'a'
   AND p.proname = 'as_of' AND p.pronamespace = 'autocdc'::regnamespace
};

1;
