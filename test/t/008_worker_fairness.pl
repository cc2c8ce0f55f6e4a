# Run slots are shared fairly: one role's never-ending pipelines cannot
# keep another role's scheduled pipeline from running
# (autocdc.max_workers_per_role); a run worker that is terminated frees
# its slot and its role's share, and its pipeline is recorded as failed.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(sleep);

my $node = PostgreSQL::Test::Cluster->new('worker_fairness');
$node->init;
$node->append_conf('postgresql.conf', qq{
shared_preload_libraries = 'autocdc'
autocdc.naptime = 200ms
autocdc.max_workers = 3
autocdc.max_run_time = 0
max_worker_processes = 16
});
$node->start;

$node->safe_psql('postgres', q{
CREATE EXTENSION autocdc;
CREATE ROLE anna LOGIN;
CREATE ROLE bert LOGIN;
GRANT CREATE, USAGE ON SCHEMA public TO anna, bert;
CREATE FUNCTION public.sleepy(s int) RETURNS int LANGUAGE plpgsql
  AS 'BEGIN PERFORM pg_sleep(3600); RETURN s; END';
SET ROLE anna;
CREATE TABLE anna_src (id int, v text, seq int);
INSERT INTO anna_src VALUES (1, 'one', 1);
SELECT autocdc.create_auto_cdc_flow(target => 'anna_tgt' || i, source => 'anna_src',
  keys => ARRAY['id'], sequence_by => 'public.sleepy(seq)', pipeline => 'anna' || i)
  FROM generate_series(1, 6) i;
SELECT autocdc.schedule('anna' || i, '0') FROM generate_series(1, 6) i;
});

sub runs
{
	my ($like) = @_;
	return $node->safe_psql('postgres',
		qq{SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'autocdc run' AND query LIKE 'autocdc run of pipeline $like'});
}

# With 3 slots, one role gets at most max_workers - 1 of them.
ok($node->poll_query_until('postgres',
	q{SELECT count(*) = 2 FROM pg_stat_activity WHERE backend_type = 'autocdc run' AND query LIKE 'autocdc run of pipeline anna%'}),
	"two of anna's never-ending pipelines run");
sleep 1;
is(runs('anna%'), '2', 'and no more: one slot stays for other roles');
is($node->safe_psql('postgres', q{SELECT count(*) FROM autocdc.pipelines WHERE last_status = 'running'}),
	'2', 'two pipelines are marked running');

$node->safe_psql('postgres', q{
SET ROLE bert;
CREATE TABLE bert_src (id int, v text, seq int);
INSERT INTO bert_src VALUES (1, 'one', 1);
SELECT autocdc.create_auto_cdc_flow(target => 'bert_tgt', source => 'bert_src',
  keys => ARRAY['id'], sequence_by => 'seq', pipeline => 'bert_p');
SELECT autocdc.schedule('bert_p', '0');
});
ok($node->poll_query_until('postgres', q{SELECT count(*) = 1 FROM bert_tgt}),
	"another role's pipeline runs meanwhile");
$node->safe_psql('postgres', q{INSERT INTO bert_src VALUES (2, 'two', 1)});
ok($node->poll_query_until('postgres', q{SELECT count(*) = 2 FROM bert_tgt}), 'and keeps running');
is(runs('anna%'), '2', "anna still has two");

# A terminated run worker: its pipeline is interrupted with the reason, its slot
# and anna's share are free again, so another of anna's pipelines starts.
my ($pid, $name) = split /\|/, $node->safe_psql('postgres',
	q{SELECT pid, substr(query, 25) FROM pg_stat_activity WHERE backend_type = 'autocdc run' AND query LIKE 'autocdc run of pipeline anna%' LIMIT 1});
$node->safe_psql('postgres', qq{SELECT pg_terminate_backend($pid)});
ok($node->poll_query_until('postgres',
	qq{SELECT last_status = 'interrupted' AND failures = 1 FROM autocdc.pipelines WHERE name = '$name'}),
	'a terminated run worker leaves its pipeline interrupted, not running');
like($node->safe_psql('postgres', qq{SELECT last_error FROM autocdc.pipelines WHERE name = '$name'}),
	qr/^the run worker exited without recording an outcome: /, 'with the reason');
ok($node->poll_query_until('postgres',
	q{SELECT count(*) = 2 FROM pg_stat_activity WHERE backend_type = 'autocdc run' AND query LIKE 'autocdc run of pipeline anna%'
	   AND pid <> } . $pid),
	"its slot is free again: anna has two runs again");

# autocdc.max_workers_per_role = 1: once one of anna's runs ends, she keeps one.
$node->safe_psql('postgres', q{ALTER SYSTEM SET autocdc.max_workers_per_role = 1});
$node->reload;
sleep 0.5;
$pid = $node->safe_psql('postgres',
	q{SELECT pid FROM pg_stat_activity WHERE backend_type = 'autocdc run' AND query LIKE 'autocdc run of pipeline anna%' LIMIT 1});
$node->safe_psql('postgres', qq{SELECT pg_terminate_backend($pid)});
ok($node->poll_query_until('postgres',
	q{SELECT count(*) = 1 FROM pg_stat_activity WHERE backend_type = 'autocdc run' AND query LIKE 'autocdc run of pipeline anna%'}),
	'max_workers_per_role = 1: anna is down to one run');
sleep 1.5;
is(runs('anna%'), '1', 'and stays there');
is($node->safe_psql('postgres', q{SELECT count(*) FROM autocdc.pipelines WHERE last_status = 'running' AND name LIKE 'anna%'}),
	'1', 'one of her pipelines is marked running');
$node->safe_psql('postgres', q{INSERT INTO bert_src VALUES (3, 'three', 1)});
ok($node->poll_query_until('postgres', q{SELECT count(*) = 3 FROM bert_tgt}), 'bert_p still runs');

$node->stop;
done_testing();
