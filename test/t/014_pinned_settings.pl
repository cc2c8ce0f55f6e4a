# The worker evaluates a flow's expressions under the settings pinned at
# the flow's creation, not the server's defaults: a scheduled run gives the
# events a manual run gives, though the server's TimeZone and DateStyle
# differ from the creator's session.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = PostgreSQL::Test::Cluster->new('pinned');
$node->init;
$node->append_conf('postgresql.conf', qq{
shared_preload_libraries = 'autocdc'
autocdc.naptime = 200ms
max_worker_processes = 16
timezone = 'Pacific/Auckland'
datestyle = 'SQL, MDY'
});
$node->start;

# Two identical pairs of flows, created under UTC and DMY: one pipeline is
# scheduled, the other run by hand.
my $flows = '';
for my $p ('sched', 'manual')
{
	$flows .= qq{
SELECT autocdc.create_auto_cdc_flow(target => '${p}_ts', source => 'src', keys => ARRAY['id'],
  sequence_by => '(ts_text::timestamptz)', column_list => ARRAY['v'], pipeline => '$p');
SELECT autocdc.create_auto_cdc_flow(target => '${p}_d', source => 'src', keys => ARRAY['id'],
  sequence_by => '(d_text::date)', column_list => ARRAY['v'], stored_as_scd_type => 2,
  pipeline => '$p');
};
}
$node->safe_psql('postgres', qq{
CREATE EXTENSION autocdc;
CREATE TABLE src (id int, ts_text text, d_text text, v text);
SET TimeZone = 'UTC';
SET DateStyle = 'ISO, DMY';
$flows
});
$node->safe_psql('postgres', q{
INSERT INTO src VALUES (1, '2024-01-01 10:00', '01/02/2024', 'no offset'),
                       (1, '2024-01-01 12:00+00', '03/01/2024', 'utc noon'),
                       (2, '2024-01-01 23:30', '05/06/2024', 'late evening'),
                       (2, '2024-01-02 00:00+13', '07/06/2024', 'auckland midnight');
SELECT autocdc.schedule('sched', '0');
});
ok($node->poll_query_until('postgres',
	q{SELECT last_status = 'success' FROM autocdc.pipelines WHERE name = 'sched'}),
	'the worker ran the pipeline');
ok($node->poll_query_until('postgres', q{SELECT count(*) = 2 FROM sched_ts}), 'and applied it');
$node->safe_psql('postgres', q{SELECT autocdc.unschedule('sched')});

is($node->safe_psql('postgres', q{
SET TimeZone = 'America/New_York';
SET DateStyle = 'Postgres, MDY';
SELECT string_agg(flow || ':' || status, ' ' ORDER BY flow) FROM autocdc.run('manual')}),
	'manual_d:success manual_ts:success', 'a manual run from a session with other settings');

my $show = q{
SET TimeZone = 'UTC';
SET DateStyle = 'ISO, YMD';
SELECT string_agg(x, E'\n' ORDER BY x) FROM (
  SELECT 'ts ' || id || ' ' || v AS x FROM %1$s_ts
  UNION ALL SELECT concat_ws(' ', 'd', id, v, __start_at, __end_at) FROM %1$s_d) s
};
my $sched = $node->safe_psql('postgres', sprintf($show, 'sched'));
is($sched, join("\n",
	'd 1 no offset 2024-02-01',
	'd 1 utc noon 2024-01-03 2024-02-01',
	'd 2 auckland midnight 2024-06-07',
	'd 2 late evening 2024-06-05 2024-06-07',
	'ts 1 utc noon',
	'ts 2 late evening'),
	'the worker folded under UTC and DMY, the creator\'s settings');
is($node->safe_psql('postgres', sprintf($show, 'manual')), $sched,
	'the manual run gave the same targets');

$node->stop;
done_testing();
