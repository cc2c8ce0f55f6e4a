# Interrupted runs leave a trace (README, Run history): a scheduled run
# cancelled while it waits for a lock, one stopped by autocdc.max_run_time,
# a run worker terminated, a run worker killed (the server restarts): each
# gives the pipeline 'interrupted' with the reason, backed off like a
# failure, its run_history row (seen 'running' by other sessions while it
# went) 'interrupted', and one 'interrupted' event log row per flow of the
# pipeline.  A manual run cancelled (pg_cancel_backend, statement_timeout)
# or terminated is rolled back with its caller's transaction; the library
# being preloaded, the scheduler records it from shared memory.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = PostgreSQL::Test::Cluster->new('interrupted_runs');
$node->init;
$node->append_conf('postgresql.conf', qq{
shared_preload_libraries = 'autocdc'
autocdc.naptime = 200ms
autocdc.max_retry_delay = 8s
autocdc.max_run_time = 0
max_worker_processes = 16
restart_after_crash = on
});
$node->start;

$node->safe_psql('postgres', q{
CREATE EXTENSION autocdc;
CREATE ROLE alice LOGIN;
GRANT CREATE, USAGE ON SCHEMA public TO alice;
CREATE FUNCTION public.sleepy(s int) RETURNS int LANGUAGE plpgsql
  AS 'BEGIN PERFORM pg_sleep(3600); RETURN s; END';
});

# A pipeline `p` of alice with two flows (p_f into p_tgt, p_g into
# p_tgt2) from a source with one row.
sub make_pipeline
{
	my ($p, $seq) = @_;
	$node->safe_psql('postgres', qq{
SET ROLE alice;
CREATE TABLE ${p}_src (id int, v text, seq int);
INSERT INTO ${p}_src VALUES (1, 'one', 1);
SELECT autocdc.create_auto_cdc_flow(target => '${p}_tgt', source => '${p}_src',
  keys => ARRAY['id'], sequence_by => '$seq', pipeline => '$p', name => '${p}_f');
SELECT autocdc.create_append_flow(target => '${p}_tgt2', source => '${p}_src',
  pipeline => '$p', name => '${p}_g');
});
}

sub sql { return $node->safe_psql('postgres', $_[0]); }

sub pipeline
{
	my ($p, $cols) = @_;
	return sql("SELECT $cols FROM autocdc.pipelines WHERE name = '$p'");
}

# The run worker of pipeline `p`, once it is going.
sub run_worker
{
	my ($p, $extra) = @_;
	$extra //= '';
	my $cond = qq{backend_type = 'autocdc run' AND query = 'autocdc run of pipeline $p' $extra};
	ok($node->poll_query_until('postgres', "SELECT count(*) = 1 FROM pg_stat_activity WHERE $cond"),
		"$p: its run is going");
	return sql("SELECT pid FROM pg_stat_activity WHERE $cond");
}

# What an interrupted run of `p` left, checked row by row: the pipeline,
# its last history row, and the event log rows of that run.
sub check_interrupted
{
	my ($p, $reason, $pid, $failures, $locked) = @_;
	is(pipeline($p, 'last_status || \'|\' || last_error || \'|\' || failures'),
		"interrupted|$reason|$failures", "$p: the pipeline is interrupted, with the reason");
	# Back-off: a 1-minute schedule, capped at autocdc.max_retry_delay (8 s).
	is(pipeline($p, q{abs(extract(epoch FROM next_run_at - last_finished_at) - 8) < 0.05}),
		't', "$p: backed off like a failed run");
	my $pid_cond = defined $pid ? "pid = $pid" : 'pid IS NULL';
	is(sql(qq{SELECT trigger || '|' || status || '|' || error || '|' || ($pid_cond)
	          || '|' || (ended_at >= started_at) || '|' || run_by
	          FROM autocdc.run_history WHERE pipeline = '$p' ORDER BY run_id DESC LIMIT 1}),
		"scheduled|interrupted|$reason|true|true|alice", "$p: its history row");
	is(sql(qq{SELECT string_agg(e.flow || '|' || e.status || '|' || e.error || '|' || e.rows_read
	                 || '|' || e.run_by || '|' || e.full_refresh, ',' ORDER BY e.flow)
	          FROM autocdc.event_log e
	         WHERE e.run_id = (SELECT max(run_id) FROM autocdc.run_history WHERE pipeline = '$p')}),
		"${p}_f|interrupted|$reason|0|alice|false,${p}_g|interrupted|$reason|0|alice|false",
		"$p: one event log row per flow, of that run");
	is(sql(qq{SELECT string_agg(name || '|' || last_status || '|' || last_error, ',' ORDER BY name)
	          FROM autocdc.flows WHERE pipeline = '$p'}),
		"${p}_f|interrupted|$reason,${p}_g|interrupted|$reason", "$p: each flow's last run");
	return if $locked;
	is(sql("SELECT count(*) FROM ${p}_tgt") . '/' . sql("SELECT count(*) FROM ${p}_tgt2"),
		'0/0', "$p: nothing of the run applied");
}

# 1. pg_cancel_backend of a run worker waiting for a lock.
make_pipeline('lock_p', 'seq');
my $holder = $node->background_psql('postgres');
$holder->query_safe(q{BEGIN; LOCK TABLE lock_p_tgt IN ACCESS EXCLUSIVE MODE});
sql(q{SELECT autocdc.schedule('lock_p', '1 minute')});
my $pid = run_worker('lock_p', q{AND wait_event_type = 'Lock'});
is(sql(qq{SELECT trigger || '|' || status || '|' || (pid = $pid) || '|' || (ended_at IS NULL)
          FROM autocdc.run_history WHERE pipeline = 'lock_p'}),
	'scheduled|running|true|true', 'another session sees the run going in autocdc.run_history');
is(pipeline('lock_p', 'last_status'), 'running', 'and in autocdc.pipelines');
sql("SELECT pg_cancel_backend($pid)");
ok($node->poll_query_until('postgres',
	q{SELECT last_status = 'interrupted' FROM autocdc.pipelines WHERE name = 'lock_p'}),
	'the cancelled run is recorded');
check_interrupted('lock_p', 'canceling statement due to user request', $pid, 1, 1);
# The lock released, the next run (after the back-off) applies.
$holder->query_safe('COMMIT');
$holder->quit;
is(sql("SELECT count(*) FROM lock_p_tgt") . '/' . sql("SELECT count(*) FROM lock_p_tgt2"),
	'0/0', 'lock_p: nothing of the run applied');
ok($node->poll_query_until('postgres',
	q{SELECT last_status = 'success' AND failures = 0 FROM autocdc.pipelines WHERE name = 'lock_p'}),
	'after the back-off the pipeline runs again, to success');
is(sql("SELECT count(*) FROM lock_p_tgt") . '/' . sql("SELECT count(*) FROM lock_p_tgt2"),
	'1/1', 'and applies');
is(sql(q{SELECT string_agg(status, ',' ORDER BY run_id) FROM autocdc.run_history WHERE pipeline = 'lock_p'}),
	'interrupted,success', 'the history has both runs');
sql(q{SELECT autocdc.unschedule('lock_p')});

# 2. autocdc.max_run_time.
sql(q{ALTER SYSTEM SET autocdc.max_run_time = '2s'});
$node->reload;
make_pipeline('slow_p', 'public.sleepy(seq)');
sql(q{SELECT autocdc.schedule('slow_p', '1 minute')});
$pid = run_worker('slow_p');
ok($node->poll_query_until('postgres',
	q{SELECT last_status = 'interrupted' FROM autocdc.pipelines WHERE name = 'slow_p'}),
	'a run past autocdc.max_run_time is recorded');
check_interrupted('slow_p', 'the run exceeded autocdc.max_run_time (2s)', $pid, 1);
sql(q{SELECT autocdc.unschedule('slow_p')});
sql(q{ALTER SYSTEM RESET autocdc.max_run_time});
$node->reload;
ok($node->poll_query_until('postgres', q{SELECT current_setting('autocdc.max_run_time') = '0'}),
	'max_run_time back to 0');

# 3. pg_terminate_backend of a run worker: its scheduler records it.
make_pipeline('term_p', 'public.sleepy(seq)');
sql(q{SELECT autocdc.schedule('term_p', '1 minute')});
$pid = run_worker('term_p');
sql("SELECT pg_terminate_backend($pid)");
ok($node->poll_query_until('postgres',
	q{SELECT last_status = 'interrupted' FROM autocdc.pipelines WHERE name = 'term_p'}),
	'a terminated run worker is recorded');
check_interrupted('term_p',
	'the run worker exited without recording an outcome: it was terminated (pg_terminate_backend) '
	  . 'or stopped by a fatal error (see the server log)', $pid, 1);
sql(q{SELECT autocdc.unschedule('term_p')});

# 4. kill -9 of a run worker: the server restarts, and the next scheduler
# records the run it finds left 'running'.
make_pipeline('kill_p', 'public.sleepy(seq)');
sql(q{SELECT autocdc.schedule('kill_p', '1 minute')});
$pid = run_worker('kill_p');
kill 'KILL', $pid;
ok($node->poll_query_until('postgres',
	q{SELECT last_status = 'interrupted' FROM autocdc.pipelines WHERE name = 'kill_p'}),
	'after the restart the killed run is recorded');
check_interrupted('kill_p',
	'the run stopped without an outcome: the server restarted or shut down during it, '
	  . 'or its run worker exited while no scheduler watched it', $pid, 1);
sql(q{SELECT autocdc.unschedule('kill_p')});

# 5. A manual run cancelled, by pg_cancel_backend or statement_timeout:
# its bookkeeping was in the rolled-back transaction, and the scheduler
# records it from shared memory (the library is preloaded): a manual
# history row, one event log row per flow, the pipeline's last run.  The
# pipeline is not scheduled, so nothing is backed off.
make_pipeline('man_p', 'public.sleepy(seq)');
my $session = $node->background_psql('postgres', on_error_stop => 0);
my $mpid = $session->query_safe('SELECT pg_backend_pid()');
$session->query_until(qr/started/, q{SET ROLE alice;
\echo started
SELECT * FROM autocdc.run('man_p');
});
ok($node->poll_query_until('postgres',
	qq{SELECT wait_event = 'PgSleep' FROM pg_stat_activity WHERE pid = $mpid}),
	'a manual run is going');
sql("SELECT pg_cancel_backend($mpid)");
$session->query('SELECT 1');
like($session->{stderr}, qr/ERROR:  canceling statement due to user request/, 'it is cancelled');
$session->quit;
my $cancelled = 'canceling statement due to user request';
ok($node->poll_query_until('postgres',
	q{SELECT count(*) = 1 FROM autocdc.run_history WHERE pipeline = 'man_p'}),
	'the scheduler records the cancelled manual run');
is(sql(qq{SELECT trigger || '|' || status || '|' || error || '|' || (pid = $mpid) || '|' || run_by
          FROM autocdc.run_history WHERE pipeline = 'man_p'}),
	"manual|interrupted|$cancelled|true|alice", 'its history row');
my $run_id = sql(q{SELECT run_id FROM autocdc.run_history WHERE pipeline = 'man_p'});
is(sql(qq{SELECT string_agg(flow || '|' || status || '|' || error, E'\n' ORDER BY flow)
          FROM autocdc.event_log WHERE run_id = $run_id}),
	"man_p_f|interrupted|$cancelled\nman_p_g|interrupted|$cancelled", 'an event log row per flow');
is(pipeline('man_p', q{last_status || '|' || last_error || '|' || failures || '|' || (next_run_at IS NULL)}),
	"interrupted|$cancelled|0|true", 'the pipeline\'s last run, not backed off');
my ($ret, $out, $err) = $node->psql('postgres',
	q{SET ROLE alice; SET statement_timeout = '300ms'; SELECT * FROM autocdc.run('man_p')});
like($err, qr/ERROR:  canceling statement due to statement timeout/, 'another one times out');
ok($node->poll_query_until('postgres',
	q{SELECT count(*) = 2 FROM autocdc.run_history WHERE pipeline = 'man_p'}),
	'it is recorded too');
is(sql(q{SELECT status || '|' || error FROM autocdc.run_history WHERE pipeline = 'man_p'
          ORDER BY run_id DESC LIMIT 1}),
	'interrupted|canceling statement due to statement timeout', 'with its reason');

# 6. A manual run whose session is terminated.
my $tsession = $node->background_psql('postgres', on_error_stop => 0);
my $tpid = $tsession->query_safe('SELECT pg_backend_pid()');
$tsession->query_until(qr/started/, q{SET ROLE alice;
\echo started
SELECT * FROM autocdc.run('man_p');
});
ok($node->poll_query_until('postgres',
	qq{SELECT wait_event = 'PgSleep' FROM pg_stat_activity WHERE pid = $tpid}),
	'a third manual run is going');
sql("SELECT pg_terminate_backend($tpid)");
eval { $tsession->quit; };
ok($node->poll_query_until('postgres',
	q{SELECT count(*) = 3 FROM autocdc.run_history WHERE pipeline = 'man_p'}),
	'the terminated manual run is recorded');
is(sql(qq{SELECT status || '|' || error || '|' || (pid = $tpid) FROM autocdc.run_history
          WHERE pipeline = 'man_p' ORDER BY run_id DESC LIMIT 1}),
	'interrupted|the session running it was terminated (pg_terminate_backend or a fatal error)|true',
	'as terminated');

$node->stop;
done_testing();
