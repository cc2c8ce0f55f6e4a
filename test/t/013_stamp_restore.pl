# The source stamps across dump and restore: a data-only restore keeps the
# stamps (an append target is not doubled), with and without
# --disable-triggers (the stamp trigger comes back enabled ALWAYS); a row
# inserted after a run in the run's own transaction is read once after a
# restore; a restore into another cluster is refused whichever way the
# transaction counters stand, until a full refresh.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

sub new_node
{
	my ($name) = @_;
	my $node = PostgreSQL::Test::Cluster->new($name);
	$node->init;
	$node->append_conf('postgresql.conf', "shared_preload_libraries = 'autocdc'\n");
	$node->start;
	return $node;
}

# Burns n transaction ids, one transaction each.
sub burn_xids
{
	my ($node, $n) = @_;
	$node->safe_psql('postgres',
		"DO \$\$ BEGIN FOR i IN 1..$n LOOP PERFORM pg_current_xact_id(); COMMIT; END LOOP; END \$\$");
}

my $a = new_node('origin');
burn_xids($a, 3000);    # the dump's checkpoints are ahead of a new cluster's counter
$a->safe_psql('postgres', q{
CREATE DATABASE orig;
});
$a->safe_psql('orig', q{
CREATE EXTENSION autocdc;
CREATE TABLE src (id int, v text, seq int);
SELECT autocdc.create_auto_cdc_flow(target => 'cur', source => 'src', keys => ARRAY['id'],
  sequence_by => 'seq', pipeline => 'p');
CREATE TABLE app (id int, v text, seq int);
SELECT autocdc.create_append_flow(target => 'app', source => 'src', pipeline => 'p');
INSERT INTO src SELECT i, 'v' || i, 1 FROM generate_series(1, 5) i;
SELECT count(*) FROM autocdc.run('p');
INSERT INTO src VALUES (6, 'v6', 1), (7, 'v7', 1);
});
# A row inserted after a run in the run's own transaction.
$a->safe_psql('orig', q{
BEGIN;
INSERT INTO src VALUES (8, 'v8', 1);
SELECT count(*) FROM autocdc.run('p');
INSERT INTO src VALUES (9, 'v9', 1);
COMMIT;
});

my $dump = $a->basedir . '/orig.dump';
$a->command_ok([ 'pg_dump', '-Fc', '-d', $a->connstr('orig'), '-f', $dump ], 'pg_dump');

my $targets = q{SELECT (SELECT string_agg(id || ':' || v, ',' ORDER BY id) FROM cur) || ' / ' ||
                       (SELECT string_agg(id || 'x' || n, ',' ORDER BY id)
                          FROM (SELECT id, count(*) AS n FROM app GROUP BY id) c)};
$a->safe_psql('orig', q{SELECT count(*) FROM autocdc.run('p')});
my $expected = $a->safe_psql('orig', $targets);
is($expected, '1:v1,2:v2,3:v3,4:v4,5:v5,6:v6,7:v7,8:v8,9:v9 / '
	. join(',', map { "${_}x1" } 1 .. 9),
	'the original reads every row once');

# Restores into database $db of $node by the given pg_restore steps.
sub restore
{
	my ($node, $db, @steps) = @_;
	$node->safe_psql('postgres', "CREATE DATABASE $db");
	for my $step (@steps)
	{
		$node->command_ok([ 'pg_restore', '--exit-on-error', @$step, '-d', $node->connstr($db), $dump ],
			"pg_restore @$step into $db");
	}
}

# Same cluster: every way of restoring goes on where the original was.
restore($a, 'whole', []);
restore($a, 'two_step', ['--schema-only'], ['--data-only']);
restore($a, 'two_step_dt', ['--schema-only'], ['--data-only', '--disable-triggers']);
for my $db ('whole', 'two_step', 'two_step_dt')
{
	my ($ret, $stdout, $stderr) = $a->psql($db,
		q{SELECT string_agg(flow || ':' || status, ',' ORDER BY flow) FROM autocdc.run('p')});
	is($stdout, 'app:success,cur:success', "$db: the next run succeeds");
	if ($db eq 'two_step_dt')
	{
		like($stderr, qr/trigger __autocdc_stamp_xid of table "src" enabled ALWAYS again/,
			"$db: the stamp trigger is enabled ALWAYS again");
	}
	is($a->safe_psql($db, q{SELECT tgenabled FROM pg_trigger WHERE tgname = '__autocdc_stamp_xid'}),
		'A', "$db: the stamp trigger fires ALWAYS");
	is($a->safe_psql($db, $targets), $expected, "$db: no row lost, none read twice");
	$a->safe_psql($db, q{INSERT INTO src VALUES (10, 'v10', 1)});
	is($a->safe_psql($db, q{SELECT string_agg(flow || ':' || rows_read, ',' ORDER BY flow) FROM autocdc.run('p')}),
		'app:1,cur:1', "$db: a new row is read once");
	is($a->safe_psql($db, q{SELECT string_agg(flow || ':' || rows_read, ',' ORDER BY flow) FROM autocdc.run('p')}),
		'app:0,cur:0', "$db: and only once");
}

# Another cluster, whose transaction counter is behind the checkpoints and
# then one whose counter is ahead: refused either way, until a full refresh.
my $b = new_node('behind');
my $c = new_node('ahead');
burn_xids($c, 6000);
my $ckpt_xmax = $a->safe_psql('orig',
	q{SELECT pg_snapshot_xmax(snapshot) FROM autocdc.checkpoint WHERE flow = 'app'});
cmp_ok($b->safe_psql('postgres', 'SELECT pg_current_xact_id()'), '<', $ckpt_xmax,
	'the new cluster is behind the checkpoint');
cmp_ok($c->safe_psql('postgres', 'SELECT pg_current_xact_id()'), '>', $ckpt_xmax,
	'the other new cluster is ahead of it');
for my $node ($b, $c)
{
	my $name = $node->name;
	restore($node, 'moved', []);
	$node->safe_psql('moved', q{INSERT INTO src VALUES (10, 'v10', 1)});
	my ($ret, $stdout, $stderr) = $node->psql('moved',
		q{SELECT string_agg(flow || ':' || status, ',' ORDER BY flow) FROM autocdc.run('p')});
	is($stdout, 'app:failed,cur:failed', "$name: the flows are refused");
	like($stderr, qr/flow "app" last read its source in another database cluster/,
		"$name: as read in another cluster");
	like($stderr, qr/HINT:  Run its pipeline once with full_refresh => true/, "$name: with the way out");
	is($node->safe_psql('moved',
		q{SELECT string_agg(flow || ':' || status, ',' ORDER BY flow) FROM autocdc.run('p', full_refresh => true)}),
		'app:success,cur:success', "$name: a full refresh runs");
	is($node->safe_psql('moved', $targets),
		'1:v1,2:v2,3:v3,4:v4,5:v5,6:v6,7:v7,8:v8,9:v9,10:v10 / ' . join(',', map { "${_}x1" } 1 .. 10),
		"$name: and rebuilds the targets from the source");
	$node->safe_psql('moved', q{INSERT INTO src VALUES (11, 'v11', 1)});
	is($node->safe_psql('moved', q{SELECT string_agg(flow || ':' || rows_read, ',' ORDER BY flow) FROM autocdc.run('p')}),
		'app:1,cur:1', "$name: then runs are incremental again");
	is($node->safe_psql('moved', q{SELECT string_agg(flow || ':' || rows_read, ',' ORDER BY flow) FROM autocdc.run('p')}),
		'app:0,cur:0', "$name: reading each row once");
}

# pg_upgrade changes the system identifier but keeps transaction ids: not
# another cluster for the checkpoints, and runs go on where they were.
$a->safe_psql('orig', q{INSERT INTO src VALUES (10, 'v10', 1)});
$a->stop;
my $u = PostgreSQL::Test::Cluster->new('upgraded');
$u->init;
$u->append_conf('postgresql.conf', "shared_preload_libraries = 'autocdc'\n");
my $bindir = $a->config_data('--bindir');
my $upgrade_dir = $a->basedir . '/upgrade';
mkdir $upgrade_dir;
chdir $upgrade_dir;
command_ok([ 'pg_upgrade', '--no-sync', '-d', $a->data_dir, '-D', $u->data_dir,
		'-b', $bindir, '-B', $bindir, '-p', $a->port, '-P', $u->port ], 'pg_upgrade');
$u->start;
isnt($u->safe_psql('orig', q{SELECT system_identifier FROM pg_control_system()}),
	$u->safe_psql('orig', q{SELECT cluster_id FROM autocdc.checkpoint WHERE flow = 'app'}),
	'the upgraded cluster has another system identifier');
is($u->safe_psql('orig', q{SELECT string_agg(flow || ':' || rows_read || ':' || status, ',' ORDER BY flow) FROM autocdc.run('p')}),
	'app:1:success,cur:1:success', 'after pg_upgrade the flows read on');
$u->safe_psql('orig', q{INSERT INTO src VALUES (11, 'v11', 1)});
is($u->safe_psql('orig', q{SELECT string_agg(flow || ':' || rows_read, ',' ORDER BY flow) FROM autocdc.run('p')}),
	'app:1,cur:1', 'each new row once');
is($u->safe_psql('orig', q{SELECT count(*) FROM autocdc.lineage}), '2',
	'the upgraded cluster is in the lineage now');
is($u->safe_psql('orig', $targets),
	'1:v1,2:v2,3:v3,4:v4,5:v5,6:v6,7:v7,8:v8,9:v9,10:v10,11:v11 / ' . join(',', map { "${_}x1" } 1 .. 11),
	'after pg_upgrade: no row lost, none read twice');

done_testing();
