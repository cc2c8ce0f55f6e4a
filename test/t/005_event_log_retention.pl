# The background worker's schedulers prune autocdc.event_log: rows older
# than autocdc.event_log_retention go, a bounded number per pass, with no
# pipeline scheduled; -1 keeps them.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = PostgreSQL::Test::Cluster->new('retention');
$node->init;
$node->append_conf('postgresql.conf', qq{
shared_preload_libraries = 'autocdc'
autocdc.naptime = 100ms
autocdc.event_log_retention = -1
});
$node->start;

$node->safe_psql('postgres', q{
CREATE EXTENSION autocdc;
INSERT INTO autocdc.event_log (logged_at, run_id, pipeline, flow, target, kind, read_mode,
                               full_refresh, status, duration, run_by, flow_owner, pipeline_owner)
SELECT now() - interval '30 days' + i * interval '1 second', 0, 'old', 'old', 'old', 'auto_cdc',
       'incremental', false, 'success', interval '0', current_user::regrole, current_user::regrole, current_user::regrole
  FROM generate_series(1, 2500) i
UNION ALL
SELECT now() - interval '1 hour', 0, 'young', 'young', 'young', 'auto_cdc',
       'incremental', false, 'success', interval '0', current_user::regrole, current_user::regrole, current_user::regrole;
});
ok($node->poll_query_until('postgres',
	q{SELECT count(*) > 0 FROM pg_stat_activity WHERE backend_type = 'autocdc scheduler'}),
	'the scheduler is running');
# A few passes of the scheduler (naptime 100ms) with retention -1.
sleep 1;
is($node->safe_psql('postgres', q{SELECT count(*) FROM autocdc.event_log}), '2501',
	'-1 keeps every row');

$node->safe_psql('postgres', q{ALTER SYSTEM SET autocdc.event_log_retention = '7d'; SELECT pg_reload_conf()});
ok($node->poll_query_until('postgres',
	q{SELECT count(*) = 0 FROM autocdc.event_log WHERE pipeline = 'old'}),
	'the scheduler pruned the rows older than the retention');
is($node->safe_psql('postgres', q{SELECT string_agg(pipeline, ',') FROM autocdc.event_log}), 'young',
	'and kept the younger one');
my $log = slurp_file($node->logfile);
unlike($log, qr/ERROR/, 'without errors');

$node->stop;
done_testing();
