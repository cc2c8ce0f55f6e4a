# Kills a pipeline run mid-way, for the crash tests (002_crash.pl,
# 019_bitemporal_crash.pl).
package CrashRun;
use strict;
use warnings;
use Time::HiRes qw(time sleep);

# Waits until the server accepts connections out of recovery.  (Not
# poll_query_until: while the server restarts, its psql can exit before
# reading the query, and IPC::Run then dies on the broken pipe.)
sub wait_back
{
	my ($node) = @_;
	my $deadline = time + $PostgreSQL::Test::Utils::timeout_default;
	while (time < $deadline)
	{
		my ($ret, $out) = eval { $node->psql('postgres', 'SELECT NOT pg_is_in_recovery()') };
		return 1 if defined $ret && $ret == 0 && $out eq 't';
		sleep 0.1;
	}
	return 0;
}

# Starts autocdc.run($pipeline) in a background psql, lets it go $delay
# seconds, then kills its backend with SIGKILL ($how = 'backend') or stops
# the server in immediate mode ($how = 'immediate') and starts it again,
# and waits for the server to be back.  The run is the first statement of
# an explicit transaction followed by a long sleep, so that a kill landing
# after the run's last statement still precedes its commit.  $probe, SQL
# with $pid for the backend's pid, is run just before the kill (to say,
# say, which flow the run is in).  Returns a hash: pid, at (seconds into
# the run), inside (whether the kill landed inside autocdc.run), probe
# (its result), log_offset (of the server log before the kill), back
# (whether the server came back) and recovery (seconds until then).
sub kill_during_run
{
	my ($node, $pipeline, $delay, $how, $probe) = @_;
	my $sql = sub { $node->safe_psql('postgres', $_[0]) };
	my $bg = $node->background_psql('postgres', on_error_stop => 0);
	my $pid = $bg->query_safe('SELECT pg_backend_pid()');
	chomp $pid;
	$bg->query_until(qr/started/, qq{\\echo started
BEGIN;
SELECT count(*) FROM autocdc.run('$pipeline');
SELECT pg_sleep(3600);
COMMIT;
});
	my $t0;
	my $deadline = time + 60;
	while (1)
	{
		my $q = $sql->(qq{SELECT state || ' ' || query FROM pg_stat_activity WHERE pid = $pid});
		if ($q =~ /^active .*autocdc\.run/s) { $t0 = time; last; }
		die "the run did not start (backend $pid: $q)" if time > $deadline;
		sleep 0.02;
	}
	my $left = $delay - (time - $t0);
	sleep $left if $left > 0;
	my %k = (pid => $pid);
	$k{probe} = $sql->($probe =~ s/\$pid/$pid/gr) if defined $probe;
	my $doing = $sql->(qq{SELECT query FROM pg_stat_activity WHERE pid = $pid});
	$k{at} = time - $t0;
	$k{inside} = $doing =~ /autocdc\.run/ ? 1 : 0;
	my $t_kill = time;
	$k{log_offset} = -s $node->logfile;
	if ($how eq 'backend')
	{
		kill 'KILL', $pid;
	}
	else
	{
		$node->stop('immediate');
		$node->start;
	}
	eval { $bg->quit; };
	# The postmaster restarts every process: wait for that, then for the end
	# of crash recovery.
	$node->wait_for_log(qr/all server processes terminated; reinitializing/, $k{log_offset})
	  if $how eq 'backend';
	$k{back} = wait_back($node);
	$k{recovery} = time - $t_kill;
	return %k;
}

1;
