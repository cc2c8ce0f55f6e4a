# Dump and restore round trips: a database with every kind of flow, runs
# done and rows pending, dumped and restored every way pg_dump and
# pg_restore allow, into the same cluster and into clusters whose
# transaction counter is ahead and behind.  After each restore the next runs
# must give exactly the targets the original gives after the same runs.
# Restored into another cluster, incremental flows refuse to read by
# transaction ids that mean nothing there; a full refresh makes them right.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use IPC::Run;
use FindBin;
use lib $FindBin::RealBin;
use DumpFixture;

# Three clusters: the original, one whose transaction counter is ahead of
# it and one behind (epochs: 3, 6, 0).
sub new_cluster
{
	my ($name, $epoch) = @_;
	my $node = PostgreSQL::Test::Cluster->new($name);
	$node->init;
	$node->append_conf('postgresql.conf', qq{
shared_preload_libraries = 'autocdc'
});
	command_ok([ 'pg_resetwal', '-e', $epoch, $node->data_dir ], "$name: transaction epoch $epoch")
	  if $epoch;
	$node->start;
	return $node;
}
my $orig = new_cluster('orig', 3);
my $ahead = new_cluster('ahead', 6);
my $behind = new_cluster('behind', 0);

# Runs a client program; it must succeed without a word on stderr (no
# dependency loop, no failed statement).
sub quiet_ok
{
	my ($what, @cmd) = @_;
	my ($out, $err) = ('', '');
	my $ok = IPC::Run::run(\@cmd, '>', \$out, '2>', \$err);
	ok($ok, "$what succeeds") or diag("stdout: $out\nstderr: $err");
	is($err, '', "$what prints nothing on stderr");
}

$orig->safe_psql('postgres', 'CREATE DATABASE src');
DumpFixture::populate($orig, 'src');

my $dir = $orig->basedir;
quiet_ok('pg_dump, custom format', 'pg_dump', '-Fc', '-d', $orig->connstr('src'), '-f', "$dir/src.dump");
quiet_ok('pg_dump, directory format', 'pg_dump', '-Fd', '-d', $orig->connstr('src'), '-f', "$dir/src.dir");
quiet_ok('pg_dump, plain SQL', 'pg_dump', '-d', $orig->connstr('src'), '-f', "$dir/src.sql");

my ($targets, $triggers, $catalog) = ($DumpFixture::targets, $DumpFixture::triggers, $DumpFixture::catalog);
my $catalog_before = $orig->safe_psql('src', $catalog);
my $runs_after = DumpFixture::batch(4);

# The same runs in the original, after every dump was taken.
$orig->safe_psql('src', q{SELECT count(*) FROM autocdc.run('p')});
$orig->safe_psql('src', $runs_after . q{SELECT count(*) FROM autocdc.run('p')});
my $expected = $orig->safe_psql('src', $targets);
is($orig->safe_psql('src', q{SELECT count(*) FROM t_app}),
	$orig->safe_psql('src', q{SELECT (SELECT count(*) FROM c4) + (SELECT count(*) FROM c4_old) + (SELECT count(*) FROM c4_more)}),
	'original: every append source row is in the target once');
like($expected, qr/^t_scd1 \{"v": "own", "id": 500/m, 'original: the row inserted in a run\'s transaction was read');
my $triggers_expected = $orig->safe_psql('src', $triggers);
unlike($triggers_expected, qr/:[^A]/, 'original: the stamp triggers are enabled ALWAYS');

# After a restore: the catalog is whole, the next runs give the original's
# targets.  From another cluster, incremental flows are refused first and
# a full refresh rebuilds them.
sub check_restored
{
	my ($node, $db, $what, $foreign) = @_;
	is($node->safe_psql($db, $catalog), $catalog_before, "$what: every flow and checkpoint restored");
	if ($foreign)
	{
		my ($ret, $out, $err) = $node->psql($db,
			q{SELECT string_agg(flow || ':' || status, ' ' ORDER BY flow) FROM autocdc.run('p')});
		for my $flow ('t_scd1', 'hist.t_row', 't_scd2', 't_app')
		{
			like($err, qr/flow "$flow" last read its source in another database cluster/,
				"$what: flow $flow refuses to read by another cluster's transactions");
		}
		like($err, qr/full_refresh => true/, "$what: the hint says to refresh");
		unlike($out, qr/t_f?snap:failed/, "$what: snapshot flows are not refused");
		$node->safe_psql($db, q{SELECT count(*) FROM autocdc.run('p', full_refresh => true)});
	}
	else
	{
		is($node->safe_psql($db,
			q{SELECT string_agg(flow || ':' || status, ' ' ORDER BY flow) FROM autocdc.run('p')}),
			'hist.t_row:success once_done:skipped once_pending:success t_app:success t_fsnap:success t_scd1:success t_scd2:success t_snap:success',
			"$what: the next run goes on from the checkpoints");
	}
	$node->safe_psql($db, $runs_after . q{SELECT count(*) FROM autocdc.run('p')});
	is($node->safe_psql($db, $targets), $expected, "$what: the targets equal the original's after the same runs");
	is($node->safe_psql($db, $triggers), $triggers_expected, "$what: the stamp triggers are enabled ALWAYS");
}

sub restore
{
	my ($node, $db, $what, $foreign, @steps) = @_;
	$node->safe_psql('postgres', "CREATE DATABASE $db");
	quiet_ok("$what: $_->[0]", @{ $_ }[ 1 .. $#$_ ]) for @steps;
	check_restored($node, $db, $what, $foreign);
}

sub pg_restore_step
{
	my ($node, $db, @opts) = @_;
	return [ "pg_restore @opts", 'pg_restore', @opts, '-d', $node->connstr($db) ];
}

# Into the same cluster, every way.
for my $case (
	[ 'r_custom', 'pg_restore', [ "$dir/src.dump" ] ],
	[ 'r_jobs', 'pg_restore -j 4', [ '-j', '4', "$dir/src.dir" ] ],
	[ 'r_single', 'pg_restore -1', [ '-1', "$dir/src.dump" ] ],
	[ 'r_two', 'schema-only then data-only', [ '--schema-only', "$dir/src.dump" ], [ '--data-only', "$dir/src.dump" ] ],
	[ 'r_two_dt', 'schema-only then data-only --disable-triggers', [ '--schema-only', "$dir/src.dump" ],
	  [ '--data-only', '--disable-triggers', "$dir/src.dump" ] ])
{
	my ($db, $what, @runs) = @$case;
	restore($orig, $db, "same cluster, $what", 0, map { pg_restore_step($orig, $db, @$_) } @runs);
}
restore($orig, 'r_plain', 'same cluster, plain SQL through psql', 0,
	[ 'psql', 'psql', '-X', '-q', '-v', 'ON_ERROR_STOP=1', '-d', $orig->connstr('r_plain'), '-f', "$dir/src.sql" ]);

# Into clusters whose transaction counter is ahead and behind.
restore($ahead, 'r_custom', 'cluster ahead, pg_restore', 1, pg_restore_step($ahead, 'r_custom', "$dir/src.dump"));
restore($ahead, 'r_two', 'cluster ahead, schema-only then data-only', 1,
	pg_restore_step($ahead, 'r_two', '--schema-only', "$dir/src.dump"),
	pg_restore_step($ahead, 'r_two', '--data-only', "$dir/src.dump"));
restore($behind, 'r_jobs', 'cluster behind, pg_restore -j 4', 1, pg_restore_step($behind, 'r_jobs', '-j', '4', "$dir/src.dir"));
restore($behind, 'r_plain', 'cluster behind, plain SQL through psql', 1,
	[ 'psql', 'psql', '-X', '-q', '-v', 'ON_ERROR_STOP=1', '-d', $behind->connstr('r_plain'), '-f', "$dir/src.sql" ]);

# A restored SCD 2 target can be dropped, and takes its autocdc objects
# (as_of, event store, ROW() composite type) with it: by DROP TABLE, and by
# DROP SCHEMA ... CASCADE; so can the original's.  (pg_dump does not keep
# the dependencies of the as_of functions on their targets.)
for my $node_db ([ $orig, 'src', 'original', 2 ], [ $orig, 'r_jobs', 'restored', 0 ],
	[ $ahead, 'r_custom', 'restored elsewhere', 0 ])
{
	my ($node, $db, $what, $deps) = @$node_db;
	is($node->safe_psql($db, $DumpFixture::as_of_deps), $deps, "$what: $deps as_of functions depend on their target");
	is($node->safe_psql($db, $DumpFixture::aux), '2 5 1 6 8 8', "$what: two as_of, five state tables, a composite type");
	$node->safe_psql($db, 'DROP TABLE t_scd2');
	is($node->safe_psql($db, $DumpFixture::aux), '1 4 1 5 7 7', "$what: DROP TABLE of an SCD 2 target takes its objects");
	$node->safe_psql($db, 'DROP SCHEMA hist CASCADE');
	is($node->safe_psql($db, $DumpFixture::aux), '0 3 0 4 6 6', "$what: so does DROP SCHEMA ... CASCADE, with the ROW() type");
}

# DROP OWNED of the role owning a restored SCD 2 target takes it too.
$behind->safe_psql('r_jobs', q{CREATE ROLE bob; ALTER TABLE t_scd2 OWNER TO bob; DROP OWNED BY bob});
is($behind->safe_psql('r_jobs', $DumpFixture::aux), '1 4 1 5 7 7', 'restored elsewhere: DROP OWNED takes an SCD 2 target with its objects');

# A restored target whose last flow is dropped keeps its as_of and ROW()
# type (its columns use the type) until it is dropped itself; a dropped
# flow takes its checkpoint.
$orig->safe_psql('r_custom', q{SELECT autocdc.drop_flow('hist.t_row')});
is($orig->safe_psql('r_custom', $DumpFixture::aux), '2 4 1 5 7 7', 'drop_flow of the last flow into an SCD 2 target drops its event store');
$orig->safe_psql('r_custom', 'DROP TABLE hist.t_row');
is($orig->safe_psql('r_custom', $DumpFixture::aux), '1 4 0 5 7 7', 'DROP TABLE of that target takes as_of and the ROW() type');
$orig->safe_psql('r_custom', q{SELECT autocdc.drop_flow('once_done')});
is($orig->safe_psql('r_custom', $DumpFixture::aux), '1 4 0 5 6 6', 'drop_flow takes the checkpoint');

$_->stop for ($orig, $ahead, $behind);
done_testing();
