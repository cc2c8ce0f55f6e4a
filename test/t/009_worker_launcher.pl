# The launcher: it shows in pg_stat_activity; a database of
# autocdc.databases that does not exist is reported once, not retried as a
# scheduler that dies, and served once it is created; the launcher's
# memory stays flat over 10,000 passes.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(sleep usleep);

my $node = PostgreSQL::Test::Cluster->new('worker_launcher');
$node->init;
$node->append_conf('postgresql.conf', qq{
shared_preload_libraries = 'autocdc'
autocdc.naptime = 200ms
autocdc.databases = 'postgres, nosuchdb'
});
$node->start;
$node->safe_psql('postgres', q{CREATE EXTENSION autocdc});

ok($node->poll_query_until('postgres',
	q{SELECT count(*) = 1 FROM pg_stat_activity
	   WHERE backend_type = 'autocdc launcher' AND application_name = 'autocdc launcher' AND datname IS NULL}),
	'the launcher shows in pg_stat_activity');
ok($node->poll_query_until('postgres',
	q{SELECT count(*) = 1 FROM pg_stat_activity WHERE backend_type = 'autocdc scheduler' AND datname = 'postgres'}),
	'the scheduler of an existing database runs');

my $message = qr/LOG:  database "nosuchdb" of autocdc\.databases does not exist/;
sub count_in_log
{
	my ($re) = @_;
	my @lines = grep { /$re/ } split /\n/, slurp_file($node->logfile);
	return scalar @lines;
}

# Over three look-ups (every 5 s) the missing database is reported once,
# and no process is started for it.
sleep 12;
is(count_in_log($message), 1, 'a missing database is reported once');
is(count_in_log(qr/FATAL:.*nosuchdb/), 0, 'no scheduler dies trying to connect to it');

# Memory over 10,000 passes, each driven by a SIGHUP (each pass also looks
# the missing database up).
my $launcher = $node->safe_psql('postgres',
	q{SELECT pid FROM pg_stat_activity WHERE backend_type = 'autocdc launcher'});

sub private_dirty_kb
{
	my $kb = 0;
	open my $fh, '<', "/proc/$launcher/smaps_rollup" or die "smaps_rollup: $!";
	while (<$fh>)
	{
		$kb += $1 if /^Private_Dirty:\s+(\d+) kB/;
	}
	close $fh;
	return $kb;
}

sub passes
{
	my ($n) = @_;
	for (1 .. $n)
	{
		kill 'HUP', $launcher;
		usleep(1000);
	}
	# Let the last ones be processed.
	sleep 0.5;
}

passes(1000);
my $before = private_dirty_kb();
passes(10000);
my $after = private_dirty_kb();
cmp_ok($after - $before, '<', 64, "launcher memory flat over 10,000 passes ($before kB, then $after kB)");
is($node->safe_psql('postgres', q{SELECT pid FROM pg_stat_activity WHERE backend_type = 'autocdc launcher'}),
	$launcher, 'the same launcher');
is(count_in_log($message), 1, 'still reported once');

# Once the database exists, it gets its scheduler and its pipelines run.
$node->safe_psql('postgres', q{CREATE DATABASE nosuchdb});
$node->safe_psql('nosuchdb', q{
CREATE EXTENSION autocdc;
CREATE TABLE src (id int, v text, seq int);
INSERT INTO src VALUES (1, 'one', 1);
SELECT autocdc.create_auto_cdc_flow(target => 'tgt', source => 'src',
  keys => ARRAY['id'], sequence_by => 'seq', pipeline => 'p');
SELECT autocdc.schedule('p', '0');
});
ok($node->poll_query_until('nosuchdb', q{SELECT count(*) = 1 FROM tgt}),
	'once created, the database is served');

$node->stop;
done_testing();
