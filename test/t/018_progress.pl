# What other sessions see of a run (README, autocdc.progress).  Without
# preloading: autocdc.progress has no row, and the session's
# pg_stat_activity query text shows the flow and its phase while the flow
# runs, its own query again once the flow has ended, well or not (a
# failure, a cancel).  With
# preloading: a scheduled run shows in autocdc.progress, and the launcher,
# the scheduler and the run worker in pg_stat_activity under their names.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = PostgreSQL::Test::Cluster->new('progress');
$node->init;
$node->start;

sub sql { return $node->safe_psql('postgres', $_[0]); }

# pr_wait waits for advisory lock 4242 at the events whose sequence ends in 2.
sql(q{
CREATE EXTENSION autocdc;
CREATE FUNCTION public.pr_wait(s int, fail boolean) RETURNS int LANGUAGE plpgsql AS $$
BEGIN
  IF s % 10 = 2 THEN
    PERFORM pg_catalog.pg_advisory_lock(4242);
    PERFORM pg_catalog.pg_advisory_unlock(4242);
    IF fail THEN RAISE EXCEPTION 'failed after the wait'; END IF;
  END IF;
  RETURN s;
END $$;
CREATE TABLE pr_src (id int, v text, seq int);
INSERT INTO pr_src SELECT i, 'v' || i, i FROM generate_series(1, 3) i;
SELECT autocdc.create_auto_cdc_flow(target => 'pr_tgt', source => 'pr_src', keys => ARRAY['id'],
  sequence_by => 'public.pr_wait(seq, false)', pipeline => 'pr', name => 'pr_f');
SELECT autocdc.create_auto_cdc_flow(target => 'pr_fail_tgt', source => 'pr_src', keys => ARRAY['id'],
  sequence_by => 'public.pr_wait(seq, true)', pipeline => 'pr_fail', name => 'pr_fail_f');
});

my $holder = $node->background_psql('postgres');
my $runner = $node->background_psql('postgres', on_error_stop => 0);

# A manual run waits in its flow for lock 4242, then, its flow done, for
# lock 4243 in the same statement: its query text is its own again.
sub watch_manual_run
{
	my ($pipeline, $flow, $what) = @_;
	my $query = qq{SELECT r.status, pg_advisory_lock(4243) FROM autocdc.run('$pipeline') r;};

	$holder->query_safe(q{SELECT pg_advisory_lock(4242), pg_advisory_lock(4243)});
	$runner->query_until(qr/started/, qq{\\echo started
SET client_min_messages = error;
$query
});
	ok($node->poll_query_until('postgres', qq{SELECT count(*) = 1 FROM pg_stat_activity
		WHERE query = 'autocdc run of pipeline "$pipeline": flow "$flow": reading events'}),
		"$what: while its flow runs, the session's query text shows the pipeline, flow and phase");
	is(sql(q{SELECT count(*) FROM autocdc.progress}), '0', "$what: autocdc.progress has no row");
	$holder->query_safe(q{SELECT pg_advisory_unlock(4242)});
	ok($node->poll_query_until('postgres', qq{SELECT count(*) = 1 FROM pg_stat_activity
		WHERE query = \$q\$$query\$q\$ AND wait_event_type = 'Lock'}),
		"$what: once the flow has ended, the session's own query text is back");
	$holder->query_safe(q{SELECT pg_advisory_unlock(4243)});
	like($runner->query_safe(q{SELECT pg_advisory_unlock(4243)}), qr/^\w+\|\n?t/m, "$what: the run returned");
}

watch_manual_run('pr', 'pr_f', 'not preloaded');
watch_manual_run('pr_fail', 'pr_fail_f', 'not preloaded, a failing flow');
is(sql(q{SELECT status FROM autocdc.event_log WHERE flow = 'pr_fail_f'}), 'failed', 'that flow failed');

# A run cancelled in its flow (statement_timeout): the session, idle again,
# shows its own query as its last.
my $cancelled = q{SELECT * FROM autocdc.run('pr_fail');};
$holder->query_safe(q{SELECT pg_advisory_lock(4242)});
$runner->query_until(qr/started/, qq{\\echo started
SET statement_timeout = '1s';
$cancelled
});
ok($node->poll_query_until('postgres', qq{SELECT count(*) = 1 FROM pg_stat_activity
	WHERE state = 'idle' AND query = \$q\$$cancelled\$q\$}),
	'not preloaded, a cancelled run: the session shows its own query again');
$holder->query_safe(q{SELECT pg_advisory_unlock(4242)});
$runner->quit;

# Preloaded: the run worker's flow in autocdc.progress.
$node->append_conf('postgresql.conf', qq{
shared_preload_libraries = 'autocdc'
autocdc.naptime = 200ms
});
$node->restart;
$holder = $node->background_psql('postgres');
$holder->query_safe(q{SELECT pg_advisory_lock(4242)});
sql(q{INSERT INTO pr_src VALUES (2, 'v12', 12); SELECT autocdc.schedule('pr', '1 hour')});
ok($node->poll_query_until('postgres', q{SELECT count(*) = 1
	FROM autocdc.progress p JOIN pg_stat_activity a USING (pid) WHERE a.wait_event_type = 'Lock'}),
	'preloaded: a scheduled run waiting in its flow shows in autocdc.progress');
is(sql(q{SELECT p.pipeline || '|' || p.flow || '|' || p.phase || '|' || p.events_read || '|' ||
	             p.rows_written || '|' || a.backend_type || '|' || a.query
	        FROM autocdc.progress p JOIN pg_stat_activity a USING (pid)}),
	'pr|pr_f|reading events|0|0|autocdc run|autocdc run of pipeline pr',
	'with its pipeline, flow, phase and counters; the run worker keeps its query text');
# As pg_cron's launcher does, autocdc's processes show under their names.
is(sql(q{SELECT string_agg(backend_type || '|' || application_name || '|' || coalesce(datname, '-'), ', '
	                        ORDER BY backend_type)
	       FROM pg_stat_activity WHERE backend_type LIKE 'autocdc%'}),
	'autocdc launcher|autocdc launcher|-, autocdc run|autocdc run|postgres, autocdc scheduler|autocdc scheduler|postgres',
	'pg_stat_activity shows the launcher, the scheduler and the run worker');
$holder->query_safe(q{SELECT pg_advisory_unlock(4242)});
ok($node->poll_query_until('postgres', q{SELECT v = 'v12' FROM pr_tgt WHERE id = 2}), 'the run went on');
ok($node->poll_query_until('postgres', q{SELECT count(*) = 0 FROM autocdc.progress}),
	'and autocdc.progress has no row after it');

# A session terminated in its flow (FATAL, no subtransaction rolled back
# by the run) frees its slot as it exits.
$holder->query_safe(q{SELECT pg_advisory_lock(4242)});
sql(q{INSERT INTO pr_src VALUES (3, 'v22', 22)});
my $doomed = $node->background_psql('postgres', on_error_stop => 0);
$doomed->query_until(qr/started/, q{\echo started
SELECT * FROM autocdc.run('pr');
});
ok($node->poll_query_until('postgres', q{SELECT count(*) = 1
	FROM autocdc.progress p JOIN pg_stat_activity a USING (pid)
	WHERE a.wait_event_type = 'Lock' AND p.flow = 'pr_f' AND a.backend_type = 'client backend'}),
	'preloaded: a manual run waiting in its flow shows in autocdc.progress');
is(sql(q{SELECT pg_terminate_backend(pid) FROM autocdc.progress}), 't', 'that session is terminated');
ok($node->poll_query_until('postgres', q{SELECT count(*) = 0 FROM autocdc.progress}),
	'and its slot is free once it has exited');
$holder->query_safe(q{SELECT pg_advisory_unlock(4242)});
eval { $doomed->quit };
$holder->quit;

done_testing();
