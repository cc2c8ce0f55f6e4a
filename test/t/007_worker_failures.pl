# How scheduled runs fail: a run worker that dies (terminated, or killed
# with kill -9 so that the server restarts) is recorded as interrupted and
# backed off exactly like a failed run, with the failure counted and its
# reason recorded; an owner
# made NOLOGIN, an owner dropped, an owner whose settings make sessions
# read-only; an advisory lock on the old key does not make a pipeline
# busy; autocdc.max_run_time ends a run that never ends.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(sleep);

my $node = PostgreSQL::Test::Cluster->new('worker_failures');
$node->init;
$node->append_conf('postgresql.conf', qq{
shared_preload_libraries = 'autocdc'
autocdc.naptime = 200ms
autocdc.max_retry_delay = 8s
max_worker_processes = 16
restart_after_crash = on
});
$node->start;

$node->safe_psql('postgres', q{
CREATE EXTENSION autocdc;
CREATE ROLE alice LOGIN;
CREATE ROLE carol LOGIN;
CREATE ROLE dave LOGIN;
CREATE ROLE erin LOGIN;
CREATE ROLE mallory LOGIN;
GRANT CREATE, USAGE ON SCHEMA public TO alice, carol, dave, erin;
-- A run that ends its own backend, as a crash would end it.
CREATE FUNCTION public.die_seq(s int) RETURNS int LANGUAGE plpgsql SECURITY DEFINER
  SET search_path = pg_catalog
  AS 'BEGIN PERFORM pg_terminate_backend(pg_backend_pid()); PERFORM pg_sleep(10); RETURN s; END';
CREATE FUNCTION public.sleepy(s int) RETURNS int LANGUAGE plpgsql
  AS 'BEGIN PERFORM pg_sleep(3600); RETURN s; END';
});

# A flow of `role` from a new source with one row into a new target.
sub make_pipeline
{
	my ($role, $p, $seq) = @_;
	$node->safe_psql('postgres', qq{
SET ROLE $role;
CREATE TABLE ${p}_src (id int, v text, seq int);
INSERT INTO ${p}_src VALUES (1, 'one', 1);
SELECT autocdc.create_auto_cdc_flow(target => '${p}_tgt', source => '${p}_src',
  keys => ARRAY['id'], sequence_by => '$seq', pipeline => '$p');
});
}

sub pipeline
{
	my ($p, $cols) = @_;
	return $node->safe_psql('postgres', "SELECT $cols FROM autocdc.pipelines WHERE name = '$p'");
}

# The wait after the last failure is the back-off of a failed run: the
# schedule's 1 s, doubled with each failure after the first, at most 8 s.
sub backed_off
{
	my ($p) = @_;
	return pipeline($p, q{abs(extract(epoch FROM next_run_at - last_finished_at)
	  - least(8, 2 ^ (failures - 1))) < 0.05});
}

# 1. A run worker that dies is recorded as interrupted and backed off.
make_pipeline('alice', 'die_p', 'public.die_seq(seq)');
$node->safe_psql('postgres', q{SELECT autocdc.schedule('die_p', '1 second')});
ok($node->poll_query_until('postgres',
	q{SELECT failures >= 3 FROM autocdc.pipelines WHERE name = 'die_p'}),
	'a run worker that dies counts as a failed run');
is(pipeline('die_p', 'last_status'), 'interrupted', 'recorded as interrupted');
like(pipeline('die_p', 'last_error'),
	qr/^the run worker exited without recording an outcome: /, 'with the reason');
is(backed_off('die_p'), 't', 'and backed off exactly like a failed run');
my $before = pipeline('die_p', 'failures');
sleep 6;
my $after = pipeline('die_p', 'failures');
cmp_ok($after - $before, '<=', 2, "no tight loop: $before then $after failures 6 s later");
$node->safe_psql('postgres', q{SELECT autocdc.unschedule('die_p')});

# 2. kill -9 of a run worker restarts the server; the run is marked
# interrupted and backed off, and the next one starts no sooner.
make_pipeline('alice', 'kill_p', 'public.sleepy(seq)');
$node->safe_psql('postgres', q{SELECT autocdc.schedule('kill_p', '1 second')});
my $next = undef;
for my $round (1 .. 2)
{
	ok($node->poll_query_until('postgres',
		q{SELECT count(*) = 1 FROM pg_stat_activity WHERE backend_type = 'autocdc run' AND query LIKE '%kill_p%'}),
		"round $round: a run of kill_p is going");
	if (defined $next)
	{
		is($node->safe_psql('postgres',
			qq{SELECT last_run_at >= '$next'::timestamptz - interval '50 ms' FROM autocdc.pipelines WHERE name = 'kill_p'}),
			't', "round $round: it started no sooner than the back-off said");
	}
	my $pid = $node->safe_psql('postgres',
		q{SELECT pid FROM pg_stat_activity WHERE backend_type = 'autocdc run' AND query LIKE '%kill_p%'});
	kill 'KILL', $pid;
	ok($node->poll_query_until('postgres',
		qq{SELECT last_status = 'interrupted' AND failures = $round FROM autocdc.pipelines WHERE name = 'kill_p'}),
		"round $round: after the restart the run is interrupted, failures $round");
	like(pipeline('kill_p', 'last_error'), qr/^the run stopped without an outcome: the server restarted /,
		"round $round: with the reason");
	is(backed_off('kill_p'), 't', "round $round: backed off like a failed run");
	$next = pipeline('kill_p', 'next_run_at');
}
$node->safe_psql('postgres', q{SELECT autocdc.unschedule('kill_p')});

# 3. An owner made NOLOGIN: failed with the reason, backed off, and the
# pipeline runs again once the owner may log in.
make_pipeline('carol', 'carol_p', 'seq');
$node->safe_psql('postgres', q{SELECT autocdc.schedule('carol_p', '1 second')});
ok($node->poll_query_until('postgres', q{SELECT count(*) = 1 FROM carol_p_tgt}), 'carol_p runs');
$node->safe_psql('postgres', q{ALTER ROLE carol NOLOGIN});
ok($node->poll_query_until('postgres',
	q{SELECT failures >= 2 FROM autocdc.pipelines WHERE name = 'carol_p'}),
	'a NOLOGIN owner: the run fails');
is(pipeline('carol_p', 'last_error'), 'the owner of pipeline "carol_p", role carol, cannot log in',
	'with the reason');
is(backed_off('carol_p'), 't', 'backed off');
$node->safe_psql('postgres', q{ALTER ROLE carol LOGIN; INSERT INTO carol_p_src VALUES (2, 'two', 1)});
ok($node->poll_query_until('postgres', q{SELECT count(*) = 2 FROM carol_p_tgt}),
	'with LOGIN back it runs again');

# 4. An owner that was dropped (the pipeline's owner has no dependency).
make_pipeline('erin', 'erin_p', 'seq');
$node->safe_psql('postgres', q{SELECT autocdc.schedule('erin_p', '1 second')});
ok($node->poll_query_until('postgres', q{SELECT count(*) = 1 FROM erin_p_tgt}), 'erin_p runs');
$node->safe_psql('postgres', q{REASSIGN OWNED BY erin TO alice; DROP OWNED BY erin; DROP ROLE erin});
ok($node->poll_query_until('postgres',
	q{SELECT failures >= 2 FROM autocdc.pipelines WHERE name = 'erin_p'}),
	'a dropped owner: the run fails');
like(pipeline('erin_p', 'last_error'),
	qr/^the owner of pipeline "erin_p" \(role OID \d+\) no longer exists$/, 'with the reason');
is(backed_off('erin_p'), 't', 'backed off');
$node->safe_psql('postgres', q{SELECT autocdc.unschedule('erin_p')});

# 5. The owner's settings do not apply to the run worker: read-only
# sessions for the owner do not stop its runs or their bookkeeping.
make_pipeline('dave', 'dave_p', 'seq');
$node->safe_psql('postgres', q{ALTER ROLE dave SET default_transaction_read_only = on});
$node->safe_psql('postgres', q{SELECT autocdc.schedule('dave_p', '0')});
ok($node->poll_query_until('postgres', q{SELECT count(*) = 1 FROM dave_p_tgt}),
	'an owner with default_transaction_read_only: the run applies');
$node->safe_psql('postgres', q{INSERT INTO dave_p_src VALUES (2, 'two', 1)});
ok($node->poll_query_until('postgres', q{SELECT count(*) = 2 FROM dave_p_tgt}), 'and again');
is(pipeline('dave_p', q{last_status IN ('success', 'running') AND failures = 0}), 't',
	'and records its outcome');
$node->safe_psql('postgres', q{SELECT autocdc.unschedule('dave_p')});

# 6. Advisory locks, on the old key or any other, do not hold a pipeline.
my $squat = $node->background_psql('postgres');
$squat->query_safe(q{SET ROLE mallory});
$squat->query_safe(q{SELECT pg_advisory_lock(1633903715, hashtext('carol_p'))});
$squat->query_safe(q{SELECT pg_advisory_lock(1633903715, id::int) FROM autocdc.pipeline});
$squat->query_safe(q{SELECT pg_advisory_lock(k) FROM generate_series(0, 1000) k});
$squat->query_safe(q{SELECT pg_advisory_lock(k, j) FROM generate_series(0, 30) k, generate_series(0, 30) j});
$node->safe_psql('postgres', q{INSERT INTO carol_p_src VALUES (3, 'three', 1)});
ok($node->poll_query_until('postgres', q{SELECT count(*) = 3 FROM carol_p_tgt}),
	'the worker runs a pipeline whatever advisory locks another role holds');
is($node->safe_psql('postgres', q{SET ROLE carol; SELECT count(*) FROM autocdc.run('carol_p')}),
	'1', 'and so does a manual run');
isnt(pipeline('carol_p', 'last_status'), 'busy', 'never busy');
$squat->quit;
$node->safe_psql('postgres', q{SELECT autocdc.unschedule('carol_p')});

# 7. autocdc.max_run_time cancels a run that never ends; it is interrupted,
# counted as a failure.
$node->safe_psql('postgres', q{ALTER SYSTEM SET autocdc.max_run_time = '2s'});
$node->reload;
make_pipeline('alice', 'forever_p', 'public.sleepy(seq)');
$node->safe_psql('postgres', q{SELECT autocdc.schedule('forever_p', '1 second')});
ok($node->poll_query_until('postgres',
	q{SELECT failures >= 1 FROM autocdc.pipelines WHERE name = 'forever_p'}),
	'a run longer than autocdc.max_run_time is stopped');
is(pipeline('forever_p', 'last_status || \': \' || last_error'),
	'interrupted: the run exceeded autocdc.max_run_time (2s)', 'and recorded as interrupted with the reason');
is(backed_off('forever_p'), 't', 'backed off');
is($node->safe_psql('postgres', q{SELECT count(*) FROM forever_p_tgt}), '0', 'nothing of it applied');
$node->safe_psql('postgres', q{SELECT autocdc.unschedule('forever_p')});

# A run whose code catches the cancel is terminated after a grace period,
# and recorded the same way.
$node->safe_psql('postgres', q{
CREATE FUNCTION public.stubborn(s int) RETURNS int LANGUAGE plpgsql AS $$
BEGIN
  LOOP
    BEGIN PERFORM pg_sleep(3600); EXCEPTION WHEN query_canceled THEN NULL; END;
  END LOOP;
END $$;
});
make_pipeline('alice', 'stubborn_p', 'public.stubborn(seq)');
$node->safe_psql('postgres', q{SELECT autocdc.schedule('stubborn_p', '1 second')});
ok($node->poll_query_until('postgres',
	q{SELECT failures >= 1 FROM autocdc.pipelines WHERE name = 'stubborn_p'}),
	'a run that catches the cancel is stopped too');
is(pipeline('stubborn_p', 'last_status || \': \' || last_error'),
	'interrupted: the run exceeded autocdc.max_run_time (2s)', 'and recorded with the reason');
is(backed_off('stubborn_p'), 't', 'backed off');
$node->safe_psql('postgres', q{SELECT autocdc.unschedule('stubborn_p')});
ok($node->poll_query_until('postgres',
	q{SELECT count(*) = 0 FROM pg_stat_activity WHERE backend_type = 'autocdc run'}),
	'no run worker is left');

# Two pipeline names with one hashtext do not exclude each other.
my ($n1, $n2) = split /\|/, $node->safe_psql('postgres', q{
SELECT min(s), max(s) FROM (SELECT 'p' || g AS s FROM generate_series(1, 300000) g) x
 GROUP BY pg_catalog.hashtext(s) HAVING count(*) = 2 LIMIT 1});
make_pipeline('alice', $n1, 'seq');
make_pipeline('alice', $n2, 'seq');
my $holder = $node->background_psql('postgres');
$holder->query_safe(qq{SET ROLE alice; BEGIN; SELECT count(*) FROM autocdc.run('$n1')});
is($node->safe_psql('postgres', qq{SET ROLE alice; SELECT count(*) FROM autocdc.run('$n2')}), '1',
	"pipelines $n1 and $n2 (one hashtext) run at once");
my ($ret, $out, $err) = $node->psql('postgres', qq{SET ROLE alice; SELECT count(*) FROM autocdc.run('$n1')});
like($err, qr/ERROR:  pipeline "$n1" is already running/, 'while one pipeline still excludes itself');
$holder->query_safe('COMMIT');
$holder->quit;

# One pipeline's bookkeeping cannot stop the scheduler that serves the
# others: a long schedule with many failures in a row (its back-off would
# overflow an interval), and schedules past 100 years refused.
make_pipeline('carol', 'long_p', 'seq');
make_pipeline('alice', 'steady_p', 'seq');
my ($lrc, $lout, $lerr) = $node->psql('postgres',
	q{SET ROLE carol; SELECT autocdc.schedule('long_p', '178000000 years')});
like($lerr, qr/the interval of a schedule must be at most 100 years/, 'an absurd schedule is refused');
$node->safe_psql('postgres', q{SET ROLE carol; SELECT autocdc.schedule('long_p', '99 years')});
$node->safe_psql('postgres', q{UPDATE autocdc.pipeline SET failures = 40, next_run_at = now() WHERE name = 'long_p'});
$node->safe_psql('postgres', q{SET ROLE alice; SELECT autocdc.schedule('steady_p', '1 second')});
ok($node->poll_query_until('postgres',
	q{SELECT last_run_at IS NOT NULL FROM autocdc.pipelines WHERE name = 'long_p'}),
	'the long pipeline with 40 failures in a row was leased (its back-off computed)');
my $steady_before = pipeline('steady_p', q{COALESCE(last_finished_at, '-infinity')});
ok($node->poll_query_until('postgres',
	qq{SELECT last_finished_at > '$steady_before' FROM autocdc.pipelines WHERE name = 'steady_p'}),
	'another pipeline keeps running');
is($node->safe_psql('postgres', q{SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'autocdc scheduler'}),
	'1', 'and its scheduler is alive');
$node->safe_psql('postgres', q{SELECT autocdc.unschedule('long_p'); SELECT autocdc.unschedule('steady_p')});

$node->stop;
done_testing();
