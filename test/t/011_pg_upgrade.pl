# pg_upgrade of a database with every kind of flow, runs done and rows
# pending (old and new clusters both of this PostgreSQL, autocdc installed
# and preloaded in both).  pg_upgrade keeps transaction ids and, in
# PostgreSQL 15, relfilenodes, but not the system identifier: the flows go
# on where they were, and the next runs give the targets the old cluster
# gives after the same runs.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib $FindBin::RealBin;
use DumpFixture;

sub new_cluster
{
	my ($name) = @_;
	my $node = PostgreSQL::Test::Cluster->new($name);
	$node->init;
	$node->append_conf('postgresql.conf', qq{
shared_preload_libraries = 'autocdc'
});
	return $node;
}
my $old = new_cluster('old');
my $new = new_cluster('new');
$old->start;
$old->safe_psql('postgres', 'CREATE DATABASE src');
DumpFixture::populate($old, 'src');
my $catalog_before = $old->safe_psql('src', $DumpFixture::catalog);
$old->stop;

# Copy mode (the default) leaves the old cluster as it was: it is the copy
# that was not upgraded.
my ($bindir) = grep { -x "$_/pg_upgrade" } split /:/, $ENV{PATH};
my $work = $new->basedir;
command_ok(
	[ 'sh', '-c', "cd '$work' && pg_upgrade --no-sync -b '$bindir' -B '$bindir' -d '"
		  . $old->data_dir . "' -D '" . $new->data_dir . "' -p " . $old->port . ' -P ' . $new->port ],
	'pg_upgrade');
$old->start;
$new->start;

is($new->safe_psql('src', $DumpFixture::catalog), $catalog_before, 'every flow and checkpoint upgraded');
my $runs = q{SELECT string_agg(flow || ':' || status, ' ' ORDER BY flow) FROM autocdc.run('p')};
my $statuses = 'hist.t_row:success once_done:skipped once_pending:success t_app:success t_fsnap:success t_scd1:success t_scd2:success t_snap:success';
is($old->safe_psql('src', $runs), $statuses, 'the old cluster runs');
is($new->safe_psql('src', $runs), $statuses, 'the upgraded cluster runs on from the checkpoints');
my $more = DumpFixture::batch(4) . q{SELECT count(*) FROM autocdc.run('p')};
$old->safe_psql('src', $more);
$new->safe_psql('src', $more);
my $expected = $old->safe_psql('src', $DumpFixture::targets);
like($expected, qr/^t_row \{/m, 'the targets were written');
is($new->safe_psql('src', $DumpFixture::targets), $expected, 'the upgraded targets equal the old cluster\'s after the same runs');
is($new->safe_psql('src', $DumpFixture::triggers), $old->safe_psql('src', $DumpFixture::triggers),
	'the stamp triggers are as they were');
unlike($new->safe_psql('src', $DumpFixture::triggers), qr/:[^A]/, 'enabled ALWAYS');

# The upgraded SCD 2 targets can be dropped, and take their objects with
# them, though pg_upgrade did not keep the dependencies of as_of.
is($new->safe_psql('src', $DumpFixture::as_of_deps), '0', 'no as_of function depends on its target after pg_upgrade');
is($new->safe_psql('src', $DumpFixture::aux), '2 5 1 6 8 8', 'two as_of, five state tables, a composite type');
$new->safe_psql('src', 'DROP TABLE t_scd2');
is($new->safe_psql('src', $DumpFixture::aux), '1 4 1 5 7 7', 'DROP TABLE of an upgraded SCD 2 target takes its objects');
$new->safe_psql('src', 'DROP SCHEMA hist CASCADE');
is($new->safe_psql('src', $DumpFixture::aux), '0 3 0 4 6 6', 'so does DROP SCHEMA ... CASCADE, with the ROW() type');

$old->stop;
$new->stop;
done_testing();
