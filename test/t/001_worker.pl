# Scheduled runs in the background worker: as the pipeline's owner,
# continuous mode, failures retried while other pipelines go on, SIGHUP,
# and kill -9 of a run worker and of a backend in the middle of a run.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = PostgreSQL::Test::Cluster->new('worker');
$node->init;
$node->append_conf('postgresql.conf', qq{
shared_preload_libraries = 'autocdc'
autocdc.naptime = 200ms
autocdc.max_retry_delay = 1s
max_worker_processes = 16
restart_after_crash = on
});
$node->start;

$node->safe_psql('postgres', q{
CREATE EXTENSION autocdc;
CREATE ROLE alice LOGIN;
CREATE ROLE bob LOGIN;
GRANT CREATE, USAGE ON SCHEMA public TO alice, bob;
CREATE TABLE public.who (u name);
GRANT INSERT ON public.who TO alice;
-- Records who evaluates a flow's sequence: the run's role.
CREATE FUNCTION public.seq_as_who(s int) RETURNS int LANGUAGE sql
  AS 'INSERT INTO public.who VALUES (current_user) RETURNING s';
CREATE FUNCTION public.slow_seq(s int) RETURNS int LANGUAGE plpgsql
  AS 'BEGIN PERFORM pg_sleep(0.05); RETURN s; END';
});
$node->safe_psql('postgres', q{
SET ROLE alice;
CREATE TABLE alice_src (id int, v text, seq int);
SELECT autocdc.create_auto_cdc_flow(target => 'alice_tgt', source => 'alice_src',
  keys => ARRAY['id'], sequence_by => 'public.seq_as_who(seq)', pipeline => 'alice_p');
SELECT autocdc.schedule('alice_p', '0');
});

# The worker runs the pipeline, as its owner.
$node->safe_psql('postgres', q{INSERT INTO alice_src VALUES (1, 'one', 1), (2, 'two', 1)});
ok($node->poll_query_until('postgres', q{SELECT count(*) = 2 FROM alice_tgt}),
	'scheduled pipeline applied');
is($node->safe_psql('postgres', q{SELECT string_agg(DISTINCT u::text, ',') FROM who}),
	'alice', 'the run evaluated the flow as the pipeline owner');
is($node->safe_psql('postgres',
	q{SELECT usename = (SELECT rolname FROM pg_roles WHERE oid = 10) FROM pg_stat_activity WHERE backend_type = 'autocdc scheduler' AND datname = 'postgres'}),
	't', 'the scheduler of the database is running, as the bootstrap superuser');

# Continuous mode picks up new rows.
$node->safe_psql('postgres', q{INSERT INTO alice_src VALUES (3, 'three', 1)});
ok($node->poll_query_until('postgres', q{SELECT count(*) = 3 FROM alice_tgt}),
	'continuous mode picked up a new row');

# A failing flow is logged and retried with backoff; other pipelines go on.
$node->safe_psql('postgres', q{
SET ROLE bob;
CREATE TABLE bob_src (id int, v text, seq int);
SELECT autocdc.create_auto_cdc_flow(target => 'bob_tgt', source => 'bob_src',
  keys => ARRAY['id'], sequence_by => 'seq', pipeline => 'bob_p');
INSERT INTO bob_src VALUES (NULL, 'no key', 1);
SELECT autocdc.schedule('bob_p', '0');
});
ok($node->poll_query_until('postgres',
	q{SELECT failures >= 2 FROM autocdc.pipelines WHERE name = 'bob_p'}),
	'a failing pipeline is retried');
like($node->safe_psql('postgres',
	q{SELECT error FROM autocdc.event_log WHERE pipeline = 'bob_p' AND status = 'failed' ORDER BY id DESC LIMIT 1}),
	qr/NULL key/, 'the failure is in the event log');
$node->safe_psql('postgres', q{INSERT INTO alice_src VALUES (4, 'four', 1)});
ok($node->poll_query_until('postgres', q{SELECT count(*) = 4 FROM alice_tgt}),
	'another pipeline goes on while one fails');
$node->safe_psql('postgres', q{DELETE FROM bob_src WHERE id IS NULL; INSERT INTO bob_src VALUES (1, 'fixed', 2)});
ok($node->poll_query_until('postgres',
	q{SELECT last_status = 'success' AND failures = 0 FROM autocdc.pipelines WHERE name = 'bob_p'}),
	'the failing pipeline recovers once its input is fixed');
is($node->safe_psql('postgres', q{SELECT v FROM bob_tgt}), 'fixed', 'and applies it');

# A manual run and the worker exclude each other: while a manual run's
# transaction holds the pipeline the worker does not run it (the scheduler
# skips the pipeline whose row that transaction holds, or its worker finds
# the pipeline busy), it never runs it twice at once.
my $holder = $node->background_psql('postgres', on_error_stop => 0);
# The worker runs alice_p continuously, so the manual run may find it
# running and be refused; it tries again until it holds the pipeline.
my $held = 0;
for my $try (1 .. 300)
{
	my ($out, $failed) = $holder->query(q{BEGIN; SELECT count(*) FROM autocdc.run('alice_p')});
	if (!$failed)
	{
		$held = 1;
		last;
	}
	die "the manual run failed: $holder->{stderr}"
	  unless $holder->{stderr} =~ /pipeline "alice_p" is already running/;
	$holder->{stderr} = '';
	$holder->query_safe('ROLLBACK');
	select(undef, undef, undef, 0.1);
}
ok($held, 'a manual run takes the pipeline between the worker\'s runs');
$node->safe_psql('postgres', q{INSERT INTO alice_src VALUES (4, 'four v2', 2)});
$node->safe_psql('postgres', q{SELECT pg_sleep(2)});
is($node->safe_psql('postgres', q{SELECT v FROM alice_tgt WHERE id = 4}), 'four',
	'the worker defers while a manual run holds the pipeline');
isnt($node->safe_psql('postgres', q{SELECT last_status FROM autocdc.pipelines WHERE name = 'alice_p'}),
	'failed', 'without failing');
$holder->query_safe('COMMIT');
$holder->quit;
ok($node->poll_query_until('postgres', q{SELECT v = 'four v2' FROM alice_tgt WHERE id = 4}),
	'and runs it again afterwards');

# SIGHUP applies a changed setting: without this database in
# autocdc.databases its scheduler stops; with it back, it starts again.
$node->safe_psql('postgres', q{ALTER SYSTEM SET autocdc.databases = 'template1'});
$node->reload;
ok($node->poll_query_until('postgres',
	q{SELECT count(*) = 0 FROM pg_stat_activity WHERE backend_type = 'autocdc scheduler' AND datname = 'postgres'}),
	'reload: the scheduler of a database taken off autocdc.databases stops');
$node->safe_psql('postgres', q{INSERT INTO alice_src VALUES (5, 'five', 1)});
$node->safe_psql('postgres', q{ALTER SYSTEM RESET autocdc.databases});
$node->reload;
ok($node->poll_query_until('postgres', q{SELECT count(*) = 5 FROM alice_tgt}),
	'reload: put back, it runs the pipeline again');

# kill -9 of a run worker in the middle of a run, then of a backend in the
# middle of a manual run: after recovery the targets equal a fresh run.
$node->safe_psql('postgres', q{
SET ROLE alice;
CREATE TABLE slow_src (id int, v text, seq int);
INSERT INTO slow_src SELECT g % 50, 'v' || g, g FROM generate_series(1, 200) g;
SELECT autocdc.create_auto_cdc_flow(target => 'slow_tgt', source => 'slow_src',
  keys => ARRAY['id'], sequence_by => 'public.slow_seq(seq)', pipeline => 'slow_p');
SELECT autocdc.create_auto_cdc_flow(target => 'slow_fresh', source => 'slow_src',
  keys => ARRAY['id'], sequence_by => 'seq', pipeline => 'fresh_p');
SELECT autocdc.schedule('slow_p', '0');
});
ok($node->poll_query_until('postgres',
	q{SELECT count(*) > 0 FROM pg_stat_activity WHERE backend_type = 'autocdc run' AND query LIKE '%slow_p%'}),
	'a slow run is going');
my $run_pid = $node->safe_psql('postgres',
	q{SELECT pid FROM pg_stat_activity WHERE backend_type = 'autocdc run' AND query LIKE '%slow_p%' LIMIT 1});
kill 'KILL', $run_pid;
ok($node->poll_query_until('postgres', q{SELECT pg_is_in_recovery() = false}), 'server back after kill -9 of a run worker');
ok($node->poll_query_until('postgres',
	q{SELECT last_status = 'success' FROM autocdc.pipelines WHERE name = 'slow_p'}, 't'),
	'the interrupted pipeline ran again to success');
$node->safe_psql('postgres', q{SELECT autocdc.unschedule('slow_p')});
$node->safe_psql('postgres', q{SET ROLE alice; SELECT count(*) FROM autocdc.run('fresh_p')});
is($node->safe_psql('postgres',
	q{SELECT count(*) FROM (SELECT * FROM slow_tgt EXCEPT SELECT * FROM slow_fresh) a}) . '/' .
   $node->safe_psql('postgres',
	q{SELECT count(*) FROM (SELECT * FROM slow_fresh EXCEPT SELECT * FROM slow_tgt) b}),
	'0/0', 'after kill -9 of a run worker the target equals a fresh run');

$node->safe_psql('postgres', q{INSERT INTO slow_src SELECT g % 50, 'w' || g, g FROM generate_series(201, 400) g});
my $manual = $node->background_psql('postgres', on_error_stop => 0);
$manual->query_until(qr/started/, q{\echo started
SET ROLE alice;
SELECT count(*) FROM autocdc.run('slow_p');
});
ok($node->poll_query_until('postgres',
	q{SELECT count(*) > 0 FROM pg_stat_activity WHERE state = 'active' AND query LIKE '%autocdc.run(''slow_p'')%' AND pid <> pg_backend_pid()}),
	'a slow manual run is going');
my $backend_pid = $node->safe_psql('postgres',
	q{SELECT pid FROM pg_stat_activity WHERE state = 'active' AND query LIKE '%autocdc.run(''slow_p'')%' AND pid <> pg_backend_pid() LIMIT 1});
kill 'KILL', $backend_pid;
eval { $manual->quit; };
ok($node->poll_query_until('postgres', q{SELECT pg_is_in_recovery() = false}), 'server back after kill -9 of a backend');
$node->safe_psql('postgres', q{SET ROLE alice; SELECT count(*) FROM autocdc.run('slow_p')});
$node->safe_psql('postgres', q{SET ROLE alice; SELECT count(*) FROM autocdc.run('fresh_p')});
is($node->safe_psql('postgres',
	q{SELECT count(*) FROM (SELECT * FROM slow_tgt EXCEPT SELECT * FROM slow_fresh) a}) . '/' .
   $node->safe_psql('postgres',
	q{SELECT count(*) FROM (SELECT * FROM slow_fresh EXCEPT SELECT * FROM slow_tgt) b}),
	'0/0', 'after kill -9 of a backend the target equals a fresh run');
# (a continuous pipeline is marked running while each of its runs goes on,
# so wait for a moment between runs rather than sample one)
ok($node->poll_query_until('postgres',
	q{SELECT count(*) = 0 FROM autocdc.pipelines WHERE last_status = 'running'}),
	'no pipeline is left marked running');

$node->stop;
done_testing();
