# ALTER EXTENSION autocdc UPDATE from 0.1.0, as it happens: flows of every
# kind 0.1.0 has (SCD 1 with deletes, truncates, ignored nulls and column
# lists; SCD 2 with tracked columns and ROW() sequences; snapshots of a table
# and from a function, SCD 1 and 2; append; ONCE flows of each kind; several
# flows into one target) made and run by the real 0.1.0 (library and
# scripts, built from git history by scripts/run-tap.sh) in a private copy
# of the PostgreSQL installation; then
# the package is replaced by this build's, the extension is updated and the
# runs go on.  The updated database must end where one with 0.2.0 from the
# start does after the same steps: the same targets and bookkeeping, and the
# same extension objects (members, catalog columns, constraints, indexes,
# policies, views, functions, comments), compared as order-independent text,
# so that the install script and the upgrade script cannot drift apart;
# and the targets of the later flow kinds hold the rows worked out by hand.
# Also: the 0.2.0 library refuses to run flows on a 0.1.0 catalog; the update
# gives every target's auxiliary objects to the target's owner and fills each
# flow's last run and totals from the event log.
# Without the 0.1.0 build (no git history) only an empty 0.1.0 catalog is
# updated and compared, with the installed library.
use strict;
use warnings;
use File::Copy;
use File::Path qw(mkpath);
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $old = $ENV{AUTOCDC_010_BUILD};
my $no_old = $ENV{AUTOCDC_010_MISSING}
  // (defined $old ? undef : 'AUTOCDC_010_BUILD is not set (scripts/run-tap.sh sets it)');
die "no 0.1.0 build in $old" if !$no_old && !-f "$old/autocdc.so";
diag("no 0.1.0 build, so no flows are made before the update: $no_old") if $no_old;

# The installed PostgreSQL is relocatable: a copy with the same layout finds
# its own share and lib directories, so its autocdc can be swapped freely.
# The installation is the one on PATH (the scripts put the one under test
# first), so that this build's library and scripts are the ones updated to.
my $pg = `pg_config --bindir` =~ s{/bin\n?$}{}r;
my $pgshare = `pg_config --sharedir` =~ s/\n$//r;
my ($inst, $share);
if (!$no_old)
{
	my $root = PostgreSQL::Test::Utils::tempdir;
	mkpath(["$root/usr/lib/postgresql", "$root/usr/share/postgresql"]);
	system('cp', '-RP', $pg, "$root/usr/lib/postgresql") == 0 or die "copying $pg failed";
	system('cp', '-RP', $pgshare, "$root/usr/share/postgresql") == 0 or die "copying $pgshare failed";
	($inst, $share) = ("$root/usr/lib/postgresql/15", "$root/usr/share/postgresql/15");
	my $dirs = `$inst/bin/pg_config --sharedir --pkglibdir`;
	die "the copy does not find itself: $dirs" if $dirs ne "$share\n$inst/lib\n";
}

# autocdc's library, control file and scripts in the private installation.
sub install_autocdc
{
	my ($so, $control, @scripts) = @_;
	unlink glob("$share/extension/autocdc*");
	copy($so, "$inst/lib/autocdc.so") or die "copying $so: $!";
	copy($_, "$share/extension/") or die "copying $_: $!" for ($control, @scripts);
}

my $node = $no_old
  ? PostgreSQL::Test::Cluster->new('upgrade')
  : PostgreSQL::Test::Cluster->new('upgrade', install_path => $inst);
install_autocdc("$old/autocdc.so", "$old/autocdc.control", glob("$old/sql/autocdc--*.sql"))
  unless $no_old;
$node->init;
$node->start;

my ($up, $new, $fill) = ('from_010', 'fresh_020', 'fill_010');
$node->safe_psql('postgres', "CREATE DATABASE $_") for ($up, $new, $fill);
$node->safe_psql('postgres', 'CREATE ROLE alice LOGIN');

# Flows of every kind 0.1.0 has, and their first rows.
my $setup = q{
CREATE SCHEMA u;
SET search_path = u, public;
-- SCD 1 with deletes and truncates
CREATE TABLE s1 (id int, v text, w int, op text, seq int);
SELECT autocdc.create_auto_cdc_flow(target => 't1', source => 's1', keys => ARRAY['id'],
  sequence_by => 'seq', apply_as_deletes => $$op = 'D'$$, apply_as_truncates => $$op = 'T'$$,
  except_column_list => ARRAY['op', 'seq'], name => 'f1', pipeline => 'p');
-- SCD 1 with ignore_null_updates
CREATE TABLE s2 (id int, v text, w int, seq int);
SELECT autocdc.create_auto_cdc_flow(target => 't2', source => 's2', keys => ARRAY['id'],
  sequence_by => 'seq', except_column_list => ARRAY['seq'], ignore_null_updates => true,
  name => 'f2', pipeline => 'p');
-- SCD 2 with history tracked on one column
CREATE TABLE s3 (id int, v text, w int, op text, seq int);
SELECT autocdc.create_auto_cdc_flow(target => 't3', source => 's3', keys => ARRAY['id'],
  sequence_by => 'seq', apply_as_deletes => $$op = 'D'$$, except_column_list => ARRAY['op', 'seq'],
  stored_as_scd_type => 2, track_history_column_list => ARRAY['v'], name => 'f3', pipeline => 'p');
-- SCD 2 sequenced by ROW(a, b)
CREATE TABLE s4 (id int, a int, b int, v text);
SELECT autocdc.create_auto_cdc_flow(target => 't4', source => 's4', keys => ARRAY['id'],
  sequence_by => 'ROW(a, b)', except_column_list => ARRAY['a', 'b'], stored_as_scd_type => 2,
  name => 'f4', pipeline => 'p');
-- snapshot of a table (SCD 1)
CREATE TABLE s5 (id int, v text);
SELECT autocdc.create_auto_cdc_from_snapshot_flow(target => 't5', source => 's5', keys => ARRAY['id'],
  name => 'f5', pipeline => 'p');
-- snapshots from a source function (SCD 2): version n is table s6_<n>
CREATE TABLE s6_1 (id int, v text);
CREATE TABLE s6_2 (id int, v text);
CREATE TABLE s6_3 (id int, v text);
CREATE TABLE s6_ready (n int);
CREATE FUNCTION next_s6(latest bigint) RETURNS TABLE (snapshot regclass, version bigint)
LANGUAGE sql AS $$
  SELECT format('u.s6_%s', coalesce(latest, 0) + 1)::regclass, coalesce(latest, 0) + 1
   WHERE coalesce(latest, 0) + 1 <= (SELECT max(n) FROM u.s6_ready)
$$;
CREATE TABLE t6 (id int, v text, __start_at bigint, __end_at bigint, PRIMARY KEY (id, __start_at));
SELECT autocdc.create_auto_cdc_from_snapshot_flow(target => 't6', source_function => 'next_s6(bigint)',
  keys => ARRAY['id'], stored_as_scd_type => 2, name => 'f6', pipeline => 'p');
-- append
CREATE TABLE s7 (id int, v text);
SELECT autocdc.create_append_flow(target => 't7', source => 's7', name => 'f7', pipeline => 'p');
-- ONCE
CREATE TABLE s8 (id int, v text, seq int);
SELECT autocdc.create_auto_cdc_flow(target => 't8', source => 's8', keys => ARRAY['id'],
  sequence_by => 'seq', except_column_list => ARRAY['seq'], once => true, name => 'f8', pipeline => 'p');
-- append from a table that held rows before it became a source (0.1.0
-- left them without a stamp; the update must not have them read again)
CREATE TABLE s9 (id int, v text);
INSERT INTO s9 VALUES (1, 'before'), (2, 'before');
SELECT autocdc.create_append_flow(target => 't9', source => 's9', name => 'f9', pipeline => 'p');
-- alice's flow into a target made for her: SCD 2 sequenced by ROW(a, b)
CREATE SCHEMA alice AUTHORIZATION alice;
SET ROLE alice;
CREATE TABLE alice.sa (id int, a int, b int, v text);
SELECT autocdc.create_auto_cdc_flow(target => 'alice.ta', source => 'alice.sa', keys => ARRAY['id'],
  sequence_by => 'ROW(a, b)', except_column_list => ARRAY['a', 'b'], stored_as_scd_type => 2,
  name => 'fa', pipeline => 'pa');
CREATE TABLE alice.tb (id int, v text, __start_at int, __end_at int, PRIMARY KEY (id, __start_at));
RESET ROLE;
-- a superuser's flow into alice's table (0.1.0 gave its state to the
-- superuser, 0.2.0 to alice)
CREATE TABLE sb (id int, v text, seq int);
GRANT USAGE ON SCHEMA u TO alice;
GRANT SELECT ON sb TO alice;
SELECT autocdc.create_auto_cdc_flow(target => 'alice.tb', source => 'sb', keys => ARRAY['id'],
  sequence_by => 'seq', except_column_list => ARRAY['seq'], stored_as_scd_type => 2,
  name => 'fb', pipeline => 'p');
-- snapshot of a table (SCD 2), history tracked on all columns but one
CREATE TABLE sc (id int, v text, w int);
SELECT autocdc.create_auto_cdc_from_snapshot_flow(target => 'tc', source => 'sc', keys => ARRAY['id'],
  stored_as_scd_type => 2, track_history_except_column_list => ARRAY['w'], name => 'fc', pipeline => 'p');
-- snapshots from a source function (SCD 1), versioned by date
CREATE TABLE sd_1 (id int, v text);
CREATE TABLE sd_2 (id int, v text);
CREATE TABLE sd_3 (id int, v text);
CREATE TABLE sd_ready (n int, version date);
CREATE FUNCTION next_sd(latest date) RETURNS TABLE (snapshot regclass, version date)
LANGUAGE sql AS $$
  SELECT format('u.sd_%s', r.n)::regclass, r.version FROM u.sd_ready r
   WHERE latest IS NULL OR r.version > latest ORDER BY r.version LIMIT 1
$$;
CREATE TABLE td (id int PRIMARY KEY, v text);
SELECT autocdc.create_auto_cdc_from_snapshot_flow(target => 'td', source_function => 'next_sd(date)',
  keys => ARRAY['id'], name => 'fd', pipeline => 'p');
-- an SCD 2 target fed by two flows: a ONCE backfill of legacy history and
-- the live changes (examples/backfill_scd2_legacy.sql)
CREATE TABLE se_legacy (id int, v text, seq int);
CREATE TABLE se (id int, v text, op text, seq int);
SELECT autocdc.create_auto_cdc_flow(target => 'te', source => 'se_legacy', keys => ARRAY['id'],
  sequence_by => 'seq', except_column_list => ARRAY['seq'], stored_as_scd_type => 2, once => true,
  name => 'fe', pipeline => 'p');
SELECT autocdc.create_auto_cdc_flow(target => 'te', source => 'se', keys => ARRAY['id'],
  sequence_by => 'seq', apply_as_deletes => $$op = 'D'$$, except_column_list => ARRAY['op', 'seq'],
  stored_as_scd_type => 2, name => 'ff', pipeline => 'p');
-- a ONCE append backfill into the append target t7
CREATE TABLE s7_old (id int, v text);
SELECT autocdc.create_append_flow(target => 't7', source => 's7_old', once => true, name => 'fg', pipeline => 'p');
-- SCD 1 with a column list, nulls ignored in all columns but w
CREATE TABLE sh (id int, v text, w int, x int, seq int);
SELECT autocdc.create_auto_cdc_flow(target => 'th', source => 'sh', keys => ARRAY['id'],
  sequence_by => 'seq', column_list => ARRAY['id', 'v', 'w'], ignore_null_updates_except_column_list => ARRAY['w'],
  name => 'fh', pipeline => 'p');
-- a ONCE snapshot of a table
CREATE TABLE si (id int, v text);
SELECT autocdc.create_auto_cdc_from_snapshot_flow(target => 'ti', source => 'si', keys => ARRAY['id'],
  once => true, name => 'fi', pipeline => 'p');

INSERT INTO s1 VALUES (1, 'a', 1, 'U', 1), (2, 'b', 2, 'U', 1), (3, 'c', 3, 'U', 1), (1, 'a2', 10, 'U', 2);
INSERT INTO s2 VALUES (1, 'a', 1, 1), (2, 'b', 2, 1), (1, NULL, 10, 2);
INSERT INTO s3 VALUES (1, 'a', 1, 'U', 1), (1, 'a', 2, 'U', 2), (1, 'b', 3, 'U', 3), (2, 'x', 1, 'U', 1);
INSERT INTO s4 VALUES (1, 1, 2, 'b'), (1, 1, 1, 'a'), (2, 5, 0, 'z');
INSERT INTO s5 VALUES (1, 'a'), (2, 'b'), (3, 'c');
INSERT INTO s6_1 VALUES (1, 'a'), (2, 'b');
INSERT INTO s6_2 VALUES (2, 'b2'), (3, 'c');
INSERT INTO s6_3 VALUES (3, 'c3'), (4, 'd');
INSERT INTO s6_ready VALUES (1);
INSERT INTO s7 VALUES (1, 'a'), (2, 'b');
INSERT INTO s8 VALUES (1, 'a', 1), (2, 'b', 1);
INSERT INTO alice.sa VALUES (1, 1, 2, 'b'), (1, 1, 1, 'a'), (2, 5, 0, 'z');
INSERT INTO sb VALUES (1, 'a', 1), (1, 'b', 2), (2, 'x', 1);
INSERT INTO sc VALUES (1, 'a', 1), (2, 'b', 2);
INSERT INTO sd_1 VALUES (1, 'a'), (2, 'b');
INSERT INTO sd_2 VALUES (1, 'a2'), (3, 'c');
INSERT INTO sd_3 VALUES (3, 'c3');
INSERT INTO sd_ready VALUES (1, '2024-01-01');
INSERT INTO se_legacy VALUES (1, 'l1', 1), (1, 'l2', 5), (2, 'm', 2);
INSERT INTO se VALUES (1, 'n', 'U', 10), (2, NULL, 'D', 8);
INSERT INTO s7_old VALUES (100, 'old'), (101, 'old');
INSERT INTO sh VALUES (1, 'a', 1, 99, 1), (2, 'b', 2, 99, 1), (1, NULL, NULL, 99, 2);
INSERT INTO si VALUES (1, 'a'), (2, 'b');
};

# Each target's owner and the owners of its auxiliary objects in schema
# autocdc: state table or event store, ROW() composite type, as_of.
my $owners = q{
SELECT string_agg(concat_ws(' ', t.target, c.relowner::regrole,
                            'state:' || s.relowner::regrole::text, 'type:' || ty.typowner::regrole::text,
                            'as_of:' || (SELECT string_agg(p.proowner::regrole::text, ',') FROM pg_proc p
                                          WHERE p.pronamespace = 'autocdc'::regnamespace AND p.proname = 'as_of'
                                            AND p.proargtypes[0] = c.reltype)),
                  E'\n' ORDER BY t.target::text)
  FROM autocdc.target t JOIN pg_class c ON c.oid = t.target
  LEFT JOIN pg_class s ON s.oid = t.state_table LEFT JOIN pg_type ty ON ty.oid = t.sequence_composite
};
my $su = $node->safe_psql('postgres', 'SELECT current_user');

my $first_run = q{
SELECT string_agg(flow || ':' || status, ' ' ORDER BY flow) FROM autocdc.run('p');
SET ROLE alice;
SELECT string_agg(flow || ':' || status, ' ' ORDER BY flow) FROM autocdc.run('pa');
};
my $first_ok = "f1:success f2:success f3:success f4:success f5:success f6:success f7:success f8:success f9:success fb:success fc:success fd:success fe:success ff:success fg:success fh:success fi:success\nfa:success";

# More rows, left for after the update.
my $before_update = q{
SET search_path = u, public;
INSERT INTO s1 VALUES (2, 'b2', 20, 'U', 2), (3, NULL, NULL, 'D', 2);
INSERT INTO s3 VALUES (2, 'x', 5, 'U', 2), (2, NULL, NULL, 'D', 3);
INSERT INTO s4 VALUES (1, 2, 0, 'c');
INSERT INTO s8 VALUES (3, 'c', 1);
INSERT INTO alice.sa VALUES (1, 2, 0, 'c');
INSERT INTO sb VALUES (2, 'y', 2);
UPDATE sc SET w = 10 WHERE id = 1;
UPDATE sc SET v = 'b2' WHERE id = 2;
INSERT INTO sd_ready VALUES (2, '2024-02-01');
INSERT INTO se VALUES (1, 'n2', 'U', 11), (1, 'mid', 'U', 3);
INSERT INTO s7_old VALUES (102, 'late');
INSERT INTO sh VALUES (2, NULL, 5, 99, 2);
INSERT INTO si VALUES (3, 'c');
};

# 0.1.0's flows of the bookkeeping test: event log rows as 0.1.0 left them.
my $fill_010 = q{
CREATE TABLE s (id int, v text, seq int);
SELECT autocdc.create_auto_cdc_flow(target => 't', source => 's', keys => ARRAY['id'],
  sequence_by => 'seq', name => 'g', pipeline => 'q');
SELECT autocdc.create_append_flow(target => 'a', source => 's', name => 'idle', pipeline => 'q');
INSERT INTO autocdc.event_log (logged_at, run_id, pipeline, flow, target, kind, read_mode, full_refresh,
                               rows_read, rows_upserted, rows_deleted, rows_skipped, status, error, duration, run_by)
VALUES (now() - interval '1 year', 1, 'q', 'g', 't', 'auto_cdc', 'incremental', false, 100, 100, 0, 0, 'success', NULL, '1s', current_user::regrole),
       (now() + interval '1 second', 2, 'q', 'g', 't', 'auto_cdc', 'incremental', false, 5, 3, 1, 1, 'success', NULL, '1s', current_user::regrole),
       (now() + interval '2 seconds', 3, 'q', 'g', 't', 'auto_cdc', 'incremental', false, 0, 0, 0, 0, 'failed', 'boom', '1s', current_user::regrole),
       (now() + interval '3 seconds', 4, 'q', 'g', 't', 'auto_cdc', 'incremental', false, 7, 6, 0, 0, 'success', NULL, '1s', current_user::regrole),
       (now() + interval '4 seconds', 4, 'q', 'g', 't', 'auto_cdc', 'incremental', false, 0, 0, 0, 0, 'failed', 'again', '1s', current_user::regrole);
};

# Under 0.1.0: its flows made and run, then the package replaced.
SKIP:
{
	skip "no 0.1.0 build: $no_old", 4 if $no_old;
	$node->safe_psql($_, 'CREATE EXTENSION autocdc') for ($up, $fill);
	is($node->safe_psql($up, q{SELECT extversion FROM pg_extension WHERE extname = 'autocdc'}),
		'0.1.0', 'the 0.1.0 build installs 0.1.0');
	$node->safe_psql($up, $setup);
	is($node->safe_psql($up, $first_run), $first_ok, '0.1.0 runs every flow');
	is(join("\n", grep { /^alice\./ } split /\n/, $node->safe_psql($up, $owners)),
		"alice.ta alice state:alice type:alice as_of:alice\nalice.tb alice state:$su as_of:$su",
		"0.1.0 gave a target's auxiliary objects to its flow's creator");
	$node->safe_psql($up, $before_update);
	$node->safe_psql($fill, $fill_010);
	is($node->safe_psql($fill, q{SELECT count(*) FROM autocdc.flows}), '2', 'and made the flows to fill');

	$node->stop;
	install_autocdc("$pg/lib/autocdc.so", "$pgshare/extension/autocdc.control",
		glob("$pgshare/extension/autocdc--*.sql"));
	$node->start;
}
$node->safe_psql($up, q{CREATE EXTENSION autocdc VERSION '0.1.0'}) if $no_old;

# Under a 0.1.0 catalog the 0.2.0 library refuses to run flows or make
# them, saying what to do.
$node->safe_psql($up, q{CREATE TABLE refused_s (id int)});
my %refused = ('creating a flow' =>
	q{SELECT autocdc.create_append_flow(target => 'refused_t', source => 'refused_s', pipeline => 'p')});
$refused{'run()'} = q{SELECT * FROM autocdc.run('p')} unless $no_old;
for my $what (sort keys %refused)
{
	my ($ret, $out, $err) = $node->psql($up, $refused{$what});
	isnt($ret, 0, "$what on a 0.1.0 catalog fails");
	like($err, qr/ERROR:  autocdc's catalog is at version 0\.1\.0/, 'naming the catalog version');
	like($err, qr/HINT:  Run ALTER EXTENSION autocdc UPDATE\./, 'with the way out');
}
$node->safe_psql($up, q{DROP TABLE refused_s});

$node->safe_psql($up, q{ALTER EXTENSION autocdc UPDATE});
is($node->safe_psql($up, q{SELECT extversion FROM pg_extension WHERE extname = 'autocdc'}),
	'0.2.0', 'updated to 0.2.0');
$node->safe_psql($new, q{CREATE EXTENSION autocdc});

# The same runs and rows in both.
my $runs = q{
SET search_path = u, public;
SELECT string_agg(flow || ':' || status, ' ' ORDER BY flow) FROM autocdc.run('p');
-- late upserts of a live key (1) and of a deleted one (3), a delete (2):
-- a 0.1.0 target keeps the upserts' sequences in its state
INSERT INTO s1 VALUES (1, 'a-late', 0, 'U', 0), (3, 'c-late', 0, 'U', 0), (2, NULL, NULL, 'D', 3);
SELECT string_agg(flow || ':' || status, ' ' ORDER BY flow) FROM autocdc.run('p', flows => ARRAY['f1']);
SELECT string_agg(concat_ws(' ', id, v, w), ',' ORDER BY id) FROM t1;
INSERT INTO s1 VALUES (9, 'late', 9, 'U', 0), (4, 'd', 4, 'U', 3), (NULL, NULL, NULL, 'T', 3), (5, 'e', 5, 'U', 4);
INSERT INTO s2 VALUES (2, NULL, NULL, 2), (3, 'c', NULL, 1), (1, 'a3', NULL, 3);
INSERT INTO s3 VALUES (1, 'b', 9, 'U', 4), (1, 'c', 9, 'U', 5), (3, 'y', 1, 'U', 1), (1, 'a0', 0, 'U', 0);
INSERT INTO s4 VALUES (1, 1, 5, 'late'), (2, 6, 0, 'z2');
TRUNCATE s5;
INSERT INTO s5 VALUES (2, 'b2'), (4, 'd');
INSERT INTO s6_ready VALUES (2);
INSERT INTO s7 VALUES (3, 'c'), (1, 'a');
INSERT INTO s8 VALUES (4, 'd', 1);
INSERT INTO s9 VALUES (3, 'after');
INSERT INTO sb VALUES (1, 'c', 3), (3, 'z', 1);
INSERT INTO sc VALUES (3, 'c', 3);
DELETE FROM sc WHERE id = 1;
INSERT INTO sd_ready VALUES (3, '2024-03-01');
INSERT INTO se VALUES (2, 'back', 'U', 20);
INSERT INTO sh VALUES (3, 'c', NULL, 99, 1), (1, 'a2', 7, 99, 3);
SELECT string_agg(flow || ':' || status, ' ' ORDER BY flow) FROM autocdc.run('p');
INSERT INTO s6_ready VALUES (3);
INSERT INTO s1 VALUES (4, NULL, NULL, 'D', 5);
INSERT INTO se VALUES (1, NULL, 'D', 30);
SELECT string_agg(flow || ':' || status, ' ' ORDER BY flow) FROM autocdc.run('p');
SELECT string_agg(flow || ':' || status, ' ' ORDER BY flow) FROM autocdc.run('p', full_refresh => true, flows => ARRAY['f7', 'fb']);
-- the full refresh of t7 forgot the ONCE mark of fg, into t7 too: it runs again
SELECT string_agg(flow || ':' || status, ' ' ORDER BY flow) FROM autocdc.run('p');
SET ROLE alice;
SELECT string_agg(flow || ':' || status, ' ' ORDER BY flow) FROM autocdc.run('pa');
INSERT INTO alice.sa VALUES (1, 1, 5, 'late'), (2, 6, 0, 'z2');
SELECT string_agg(flow || ':' || status, ' ' ORDER BY flow) FROM autocdc.run('pa');
SELECT string_agg(flow || ':' || status, ' ' ORDER BY flow) FROM autocdc.run('pa', full_refresh => true);
};
# f8 (ONCE) ran in the first run.
my $ok_p = 'f1:success f2:success f3:success f4:success f5:success f6:success f7:success f8:skipped f9:success fb:success fc:success fd:success fe:skipped ff:success fg:skipped fh:success fi:skipped';
my $all_ok = join("\n", $ok_p, 'f1:success', '1 a2 10', ($ok_p) x 2,
	'f7:success fb:success',
	'f1:success f2:success f3:success f4:success f5:success f6:success f7:success f8:skipped f9:success fb:success'
	  . ' fc:success fd:success fe:skipped ff:success fg:success fh:success fi:skipped',
	('fa:success') x 3);

SKIP:
{
	skip "no 0.1.0 build: $no_old", 23 if $no_old;
	$node->safe_psql($new, $setup);
	is($node->safe_psql($new, $first_run), $first_ok, '0.2.0 runs them the same from the start');
	$node->safe_psql($new, $before_update);

	is($node->safe_psql($up, $runs), $all_ok, 'the updated database runs every flow');
	is($node->safe_psql($new, $runs), $all_ok, 'so does the fresh one');

	# The sources were converted: the stamp's default, its autocdc_stamp index and
	# the AFTER INSERT trigger in place of 0.1.0's B-tree and BEFORE trigger.
	my $prepared = q{
	SELECT string_agg(concat_ws(' ', n.nspname || '.' || c.relname, pg_get_expr(d.adbin, d.adrelid),
	         (SELECT string_agg(pg_get_indexdef(i.indexrelid), '; ' ORDER BY 1) FROM pg_index i
	           WHERE i.indrelid = c.oid AND i.indkey[0] = a.attnum),
	         (SELECT string_agg(pg_get_triggerdef(t.oid) || ' ' || t.tgenabled::text, '; ' ORDER BY 1)
	            FROM pg_trigger t WHERE t.tgrelid = c.oid AND NOT t.tgisinternal)), E'\n' ORDER BY 1)
	  FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
	  JOIN pg_attribute a ON a.attrelid = c.oid AND a.attname = '__autocdc_xid' AND NOT a.attisdropped
	  LEFT JOIN pg_attrdef d ON d.adrelid = c.oid AND d.adnum = a.attnum
	 WHERE n.nspname IN ('u', 'alice') AND c.relkind IN ('r', 'p')};
	my $prepared_up = $node->safe_psql($up, $prepared);
	like($prepared_up, qr/^u\.s1 autocdc\._stamp\(\) CREATE INDEX \S+ ON u\.s1 USING autocdc_stamp \(__autocdc_xid\) CREATE TRIGGER __autocdc_stamp_xid AFTER INSERT /m,
		'an updated source has the default, the autocdc_stamp index and the AFTER INSERT trigger');
	unlike($prepared_up, qr/btree|BEFORE INSERT/, 'and no B-tree on the stamp nor BEFORE INSERT trigger left');
	is($prepared_up, $node->safe_psql($new, $prepared), 'every source as in the fresh database');

	# Every target, as sorted text, and every flow's bookkeeping but for times
	# and snapshots.
my $state = q{
SET search_path = u, public;
-- (SCD 1 targets by their user columns: 0.2.0 adds __autocdc_sequence)
SELECT string_agg(x, E'\n' ORDER BY x) FROM (
  SELECT 't1 ' || ROW(t.id, t.v, t.w)::text AS x FROM t1 t UNION ALL SELECT 't2 ' || ROW(t.id, t.v, t.w)::text FROM t2 t
  UNION ALL SELECT 't3 ' || t::text FROM t3 t UNION ALL SELECT 't4 ' || t::text FROM t4 t
  UNION ALL SELECT 't5 ' || ROW(t.id, t.v)::text FROM t5 t UNION ALL SELECT 't6 ' || t::text FROM t6 t
  UNION ALL SELECT 't7 ' || t::text FROM t7 t UNION ALL SELECT 't8 ' || ROW(t.id, t.v)::text FROM t8 t
  UNION ALL SELECT 't9 ' || t::text FROM t9 t
  UNION ALL SELECT 'tc ' || t::text FROM tc t UNION ALL SELECT 'td ' || ROW(t.id, t.v)::text FROM td t
  UNION ALL SELECT 'te ' || t::text FROM te t UNION ALL SELECT 'th ' || ROW(t.id, t.v, t.w)::text FROM th t
  UNION ALL SELECT 'ti ' || ROW(t.id, t.v)::text FROM ti t
  UNION ALL SELECT 'ta ' || t::text FROM alice.ta t UNION ALL SELECT 'tb ' || t::text FROM alice.tb t
  UNION ALL
  -- a ROW(...) sequence names its type, whose name holds an oid; an SCD 1
  -- flow's upserts are left out: a 0.2.0 target counts an upsert that moves
  -- only a row's __autocdc_sequence (a no-op at a newer sequence), 0.1.0's not
  SELECT concat_ws(' ', 'flow', name, pipeline, kind, source, source_function, target, keys,
                   regexp_replace(sequence_by, '__autocdc_seq_[0-9]+', '__autocdc_seq_N'), scd_type, read_mode, once, owner, options, snapshot_version,
                   once_done_at IS NOT NULL, last_run_at IS NOT NULL, last_status, last_error,
                   last_rows_read, runs, rows_read_total, CASE WHEN scd_type IS DISTINCT FROM 1 THEN rows_upserted_total END,
                   rows_deleted_total, rows_skipped_total, failures_total)
    FROM autocdc.flows
  UNION ALL
  SELECT concat_ws(' ', 'log', flow, kind, read_mode, full_refresh, rows_read,
                   CASE WHEN (SELECT f.scd_type FROM autocdc.flows f WHERE f.name = e.flow) IS DISTINCT FROM 1 THEN rows_upserted END,
                   rows_deleted, rows_skipped, status, error)
    FROM autocdc.event_log e) s
};
	my $state_up = $node->safe_psql($up, $state);
	my $state_new = $node->safe_psql($new, $state);
	like($state_new, qr/^t8 /m, 'the targets were written');
	like($state_new, qr/^ta .*\n(.*\n)*tb /m, "so were alice's");
	is($state_up, $state_new, 'targets, flows and event log are the same after update as after a fresh install');
	# and what they should be
	is(join("\n", sort { $a cmp $b } grep { /^t[7c-i] / } split /\n/, $state_up), join("\n", sort { $a cmp $b }
		't7 (1,a)', 't7 (1,a)', 't7 (100,old)', 't7 (101,old)', 't7 (102,late)', 't7 (2,b)', 't7 (3,c)',
		# snapshots of a table, SCD 2: w is not tracked, so its change updated
		# the version in place
		'tc (1,a,10,0,2)', 'tc (2,b,2,0,1)', 'tc (2,b2,2,1,)', 'tc (3,c,3,2,)',
		# the third dated snapshot
		'td (3,c3)',
		# legacy history, split by a late live change, then live changes
		'te (1,l1,1,3)', 'te (1,l2,5,10)', 'te (1,mid,3,5)', 'te (1,n,10,11)', 'te (1,n2,11,30)',
		'te (2,back,20,)', 'te (2,m,2,8)',
		# v keeps its value on a NULL, w does not
		'th (1,a2,7)', 'th (2,b,5)', 'th (3,c,)',
		# the one snapshot a ONCE flow read
		'ti (1,a)', 'ti (2,b)'),
		"the targets of 0.1.0's other flow kinds hold the expected rows after the update");
	# The SCD 1 targets from 0.1.0 keep their upserts' sequences in the state,
	# a row per key; those made by 0.2.0 in their rows' __autocdc_sequence,
	# their state holding tombstones only (and partial-update columns' rows).
	my $layout = q{
SELECT string_agg(concat_ws(' ', t.target, t.sequence_in_target,
                            (SELECT count(*) FROM pg_attribute a WHERE a.attrelid = t.target
                              AND a.attname = '__autocdc_sequence' AND NOT a.attisdropped)),
                  ',' ORDER BY t.target::text)
  FROM autocdc.target t WHERE t.scd_type = 1};
	is($node->safe_psql($up, $layout), 'u.t1 f 0,u.t2 f 0,u.t5 f 0,u.t8 f 0,u.td f 0,u.th f 0,u.ti f 0',
		'the updated SCD 1 targets keep the 0.1.0 layout');
	is($node->safe_psql($new, $layout), 'u.t1 t 1,u.t2 t 1,u.t5 t 1,u.t8 t 1,u.td t 1,u.th t 1,u.ti t 1',
		'the fresh ones keep the sequence in the target');
	my $t1_state = sub {
		my ($db) = @_;
		my $st = $node->safe_psql($db, q{SELECT state_table FROM autocdc.target WHERE target = 'u.t1'::regclass});
		return $node->safe_psql($db, "SELECT (SELECT count(*) FROM u.t1) || ' rows, ' || "
			. "count(*) FILTER (WHERE __autocdc_deleted_at IS NULL) || ' live keys in the state' FROM $st");
	};
	like($t1_state->($up), qr/^([1-9]\d*) rows, \1 live keys in the state$/,
		'an updated SCD 1 target keeps a state row per live key');
	like($t1_state->($new), qr/^[1-9]\d* rows, 0 live keys in the state$/,
		'a fresh one none');
	is($node->safe_psql($up, q{SELECT string_agg(id || ' ' || v, ',' ORDER BY id) FROM u.t1}),
		$node->safe_psql($new, q{SELECT string_agg(id || ' ' || v, ',' ORDER BY id) FROM u.t1}),
		'an updated SCD 1 target folds late events and deletes as a fresh one');
	is($node->safe_psql($up, q{SELECT string_agg(id || ' ' || v, ',' ORDER BY id) FROM u.t9}),
		'1 before,2 before,3 after', "rows a 0.1.0 source held before its flow are not read again after the update");

	# The update gave every auxiliary object to its target's owner.
	my $owners_up = $node->safe_psql($up, $owners);
	is(join("\n", grep { /^alice\./ } split /\n/, $owners_up),
		"alice.ta alice state:alice type:alice as_of:alice\nalice.tb alice state:alice as_of:alice",
		"alice owns her targets' auxiliary objects after the update");
	is(join("\n", grep { my ($t, $o, @aux) = split / /; grep { !/:\Q$o\E$/ } @aux } split /\n/, $owners_up),
		'', "as every target's owner does its");
	like($owners_up, qr/ type:/, 'a ROW() composite type among them');
	is($owners_up, $node->safe_psql($new, $owners), 'the same owners as in the fresh database');

	# A ROW() composite type no longer depends on its target, whose columns
	# use it (pg_dump could not order the loop).
	my $type_deps = q{
SELECT count(*) FROM pg_depend d JOIN autocdc.target t ON d.objid = t.sequence_composite::oid
 WHERE d.classid = 'pg_type'::regclass AND d.refclassid = 'pg_class'::regclass};
	is($node->safe_psql($up, $type_deps), '0', 'after the update no ROW() type depends on its target');
	is($node->safe_psql($new, $type_deps), '0', 'as in the fresh database');

	# The update fills each flow's last run and totals from the event log as
	# 0.1.0 left it (runs of a dropped flow of the same name excepted).
	$node->safe_psql($fill, q{ALTER EXTENSION autocdc UPDATE});
	is($node->safe_psql($fill, q{
SELECT string_agg(concat_ws(' ', name, last_run_at = (SELECT max(logged_at) FROM autocdc.event_log e WHERE e.flow = f.name),
                            last_status, last_error, last_rows_read, runs, rows_read_total, rows_upserted_total,
                            rows_deleted_total, rows_skipped_total, failures_total), E'\n' ORDER BY name)
  FROM autocdc.flows f}),
		"g t failed again 0 4 12 9 1 1 2\nidle 0 0 0 0 0 0",
		'the update filled last runs and totals from the event log');
	$node->safe_psql($fill, q{INSERT INTO s VALUES (1, 'x', 1)});
	is($node->safe_psql($fill, q{SELECT string_agg(flow || ':' || status, ' ' ORDER BY flow) FROM autocdc.run('q')}),
		'g:success idle:success', 'and its flows run after the update');
	is($node->safe_psql($fill, q{SELECT string_agg(concat_ws(' ', name, last_status, runs, rows_read_total, failures_total), ' ' ORDER BY name) FROM autocdc.flows}),
		'g success 5 13 2 idle success 1 1 0', 'adding to the totals');
}

# The extension's objects as text: one line per fact, sorted.
my $objects = q{
WITH ext AS (SELECT oid FROM pg_extension WHERE extname = 'autocdc'),
member AS (
  SELECT d.classid, d.objid, d.objsubid, pg_describe_object(d.classid, d.objid, d.objsubid) AS what
    FROM pg_depend d, ext WHERE d.refclassid = 'pg_extension'::regclass AND d.refobjid = ext.oid
     AND d.deptype = 'e'),
rel AS (
  SELECT c.oid::regclass::text AS name, c.* FROM pg_class c
   WHERE c.relnamespace = 'autocdc'::regnamespace
     AND c.oid IN (SELECT objid FROM member WHERE classid = 'pg_class'::regclass)),
facts(x) AS (
  SELECT 'member ' || what FROM member
  UNION ALL
  SELECT 'comment ' || m.what || ': ' || d.description
    FROM member m JOIN pg_description d ON d.classoid = m.classid AND d.objoid = m.objid
     AND d.objsubid = m.objsubid
  UNION ALL
  SELECT concat_ws(' ', 'extension', e.extname, e.extversion, e.extrelocatable,
                   e.extnamespace::regnamespace, e.extowner::regrole,
                   (SELECT string_agg(c::regclass::text || coalesce('=' || w, ''), ',' ORDER BY c::regclass::text)
                      FROM unnest(e.extconfig, e.extcondition) u(c, w)))
    FROM pg_extension e WHERE e.extname = 'autocdc'
  UNION ALL
  SELECT concat_ws(' ', 'schema', n.nspname, n.nspowner::regrole, n.nspacl::text,
                   obj_description(n.oid, 'pg_namespace'))
    FROM pg_namespace n WHERE n.nspname = 'autocdc'
  UNION ALL
  -- (not relhastriggers: it stays true after the last trigger is dropped,
  -- until a VACUUM; the triggers themselves are compared below)
  SELECT concat_ws(' ', 'relation', r.name, r.relkind, r.relpersistence, r.relowner::regrole,
                   r.relacl::text, r.reloptions::text, r.relrowsecurity, r.relforcerowsecurity,
                   r.relreplident, r.relhasrules, r.relispartition)
    FROM rel r
  UNION ALL
  -- columns by position among the live ones, so a dropped column would show
  SELECT concat_ws(' ', 'column', r.name,
                   row_number() OVER (PARTITION BY r.oid ORDER BY a.attnum), a.attname,
                   format_type(a.atttypid, a.atttypmod), a.attnotnull, a.attidentity, a.attgenerated,
                   a.attcollation::regcollation, a.attacl::text, a.attstorage, a.attcompression, pg_get_expr(ad.adbin, ad.adrelid))
    FROM rel r JOIN pg_attribute a ON a.attrelid = r.oid AND a.attnum > 0 AND NOT a.attisdropped
    LEFT JOIN pg_attrdef ad ON ad.adrelid = a.attrelid AND ad.adnum = a.attnum
  UNION ALL
  SELECT 'dropped column in ' || r.name
    FROM rel r JOIN pg_attribute a ON a.attrelid = r.oid AND a.attisdropped
  UNION ALL
  SELECT concat_ws(' ', 'constraint', r.name, co.conname, co.contype, co.condeferrable,
                   co.convalidated, pg_get_constraintdef(co.oid, true))
    FROM rel r JOIN pg_constraint co ON co.conrelid = r.oid
  UNION ALL
  SELECT concat_ws(' ', 'index', pg_get_indexdef(i.indexrelid), i.indisprimary, i.indisunique,
                   i.indisvalid, i.indisreplident, ic.reloptions::text)
    FROM rel r JOIN pg_index i ON i.indrelid = r.oid JOIN pg_class ic ON ic.oid = i.indexrelid
  UNION ALL
  SELECT concat_ws(' ', 'policy', r.name, p.polname, p.polcmd, p.polpermissive,
                   (SELECT string_agg(rn, ',' ORDER BY rn)
                      FROM (SELECT CASE WHEN ro = 0 THEN 'public' ELSE ro::regrole::text END
                              FROM unnest(p.polroles) ro) u(rn)),
                   pg_get_expr(p.polqual, p.polrelid), pg_get_expr(p.polwithcheck, p.polrelid))
    FROM rel r JOIN pg_policy p ON p.polrelid = r.oid
  UNION ALL
  SELECT concat_ws(' ', 'trigger', r.name, t.tgname, pg_get_triggerdef(t.oid, true), t.tgenabled)
    FROM rel r JOIN pg_trigger t ON t.tgrelid = r.oid AND NOT t.tgisinternal  -- foreign keys' are constraints
  UNION ALL
  SELECT concat_ws(' ', 'rule', r.name, ru.rulename, ru.ev_type, ru.is_instead,
                   CASE WHEN r.relkind <> 'v' THEN pg_get_ruledef(ru.oid, true) END)
    FROM rel r JOIN pg_rewrite ru ON ru.ev_class = r.oid
  UNION ALL
  SELECT 'view ' || r.name || E'\n' || pg_get_viewdef(r.oid, true) FROM rel r WHERE r.relkind IN ('v', 'm')
  UNION ALL
  SELECT concat_ws(' ', 'sequence', r.name, format_type(s.seqtypid, NULL), s.seqstart, s.seqincrement,
                   s.seqmax, s.seqmin, s.seqcache, s.seqcycle)
    FROM rel r JOIN pg_sequence s ON s.seqrelid = r.oid
  UNION ALL
  SELECT concat_ws(' ', 'function', p.oid::regprocedure, p.proowner::regrole, p.proacl::text,
                   p.prokind, p.prosecdef, p.proleakproof, p.proisstrict, p.provolatile,
                   p.proparallel, p.procost, p.prorows, p.proconfig::text) || E'\n' ||
         CASE WHEN p.prokind IN ('f', 'p', 'w') THEN pg_get_functiondef(p.oid) ELSE '' END
    FROM pg_proc p WHERE p.oid IN (SELECT objid FROM member WHERE classid = 'pg_proc'::regclass)
  UNION ALL
  SELECT concat_ws(' ', 'type', t.oid::regtype, t.typtype, t.typowner::regrole, t.typacl::text)
    FROM pg_type t WHERE t.oid IN (SELECT objid FROM member WHERE classid = 'pg_type'::regclass)
  UNION ALL
  SELECT concat_ws(' ', 'event trigger', e.evtname, e.evtevent, e.evtfoid::regprocedure, e.evtenabled,
                   e.evtowner::regrole, e.evttags::text)
    FROM pg_event_trigger e WHERE e.oid IN (SELECT objid FROM member WHERE classid = 'pg_event_trigger'::regclass)
  UNION ALL
  SELECT concat_ws(' ', 'default acl', d.defaclrole::regrole, d.defaclobjtype, d.defaclacl::text)
    FROM pg_default_acl d WHERE d.defaclnamespace = 'autocdc'::regnamespace
  UNION ALL
  SELECT 'member count ' || count(*) FROM member)
SELECT string_agg(x, E'\n' ORDER BY x) FROM facts
};
my @obj_up = split /\n/, $node->safe_psql($up, $objects);
my @obj_new = split /\n/, $node->safe_psql($new, $objects);
my (%in_up, %in_new);
$in_up{$_}++ for @obj_up;
$in_new{$_}++ for @obj_new;
ok(scalar(grep { /^member / } @obj_new) >= 20, 'the fresh extension has its members');
ok(scalar(grep { /^column autocdc\.checkpoint .* failures_total / } @obj_new) == 1,
	'the description reaches the catalog columns');
is(join("\n", grep { !$in_new{$_} } @obj_up), '', 'nothing only in the updated database');
is(join("\n", grep { !$in_up{$_} } @obj_new), '', 'nothing only in the fresh database');
is(scalar(@obj_up), scalar(@obj_new), 'as many facts in each');

$node->stop;
done_testing();
