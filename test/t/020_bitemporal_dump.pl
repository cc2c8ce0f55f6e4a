# A bitemporal target through pg_dump and restore: its rows, event store,
# flow and checkpoint come back; the next run folds new events (late on
# the system axis too) exactly as the original does; DROP TABLE of the
# restored target takes its as_of and history_as_of functions with it
# (their dependency on the target is given back, drop_deps.c).
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = PostgreSQL::Test::Cluster->new('bt_dump');
$node->init;
$node->append_conf('postgresql.conf', "shared_preload_libraries = 'autocdc'\n");
$node->start;

$node->safe_psql('postgres', 'CREATE DATABASE src');
$node->safe_psql('src', q{
CREATE EXTENSION autocdc;
CREATE TABLE c (id int, v text, b int, s int, op text);
SELECT autocdc.create_auto_cdc_flow(target => 'bt', source => 'c', keys => ARRAY['id'],
  sequence_by => 'b', system_sequence_by => 's', apply_as_deletes => $$op = 'D'$$,
  except_column_list => ARRAY['b', 's', 'op'], stored_as_scd_type => 'bitemporal', pipeline => 'p');
INSERT INTO c VALUES (1, 'a', 1, 10, 'U'), (1, 'b', 5, 20, 'U'), (2, 'x', 1, 10, 'U'), (1, 'c', 3, 30, 'U');
SELECT count(*) FROM autocdc.run('p');
});
my $dir = $node->basedir;
command_ok([ 'pg_dump', '-Fc', '-d', $node->connstr('src'), '-f', "$dir/src.dump" ], 'pg_dump');
$node->safe_psql('postgres', 'CREATE DATABASE dst');
command_ok([ 'pg_restore', '-d', $node->connstr('dst'), "$dir/src.dump" ], 'pg_restore');

my $rows = q{SELECT string_agg(format('%s %s [%s,%s) sys [%s,%s)', id, v, __start_at, __end_at,
  __system_start_at, __system_end_at), E'\n' ORDER BY id, __start_at, __system_start_at) FROM bt};
is($node->safe_psql('dst', $rows), $node->safe_psql('src', $rows), 'the restored target has the same rows');

# the same new events in both: a correction, a late system event, a delete
my $more = q{
INSERT INTO c VALUES (1, 'b2', 5, 40, 'U'), (2, 'y', 2, 5, 'U'), (2, NULL, 4, 50, 'D');
SELECT string_agg(status || ':' || rows_read, ' ') FROM autocdc.run('p');
};
is($node->safe_psql('src', $more), 'success:3', 'original: the next run');
is($node->safe_psql('dst', $more), 'success:3', 'restored: the next run');
is($node->safe_psql('dst', $rows), $node->safe_psql('src', $rows), 'both fold the new events alike');
is($node->safe_psql('dst', q{SELECT v FROM autocdc.as_of(NULL::bt, 4, 35) WHERE id = 2}), 'y',
	'as_of works in the restored database');

my $funcs = q{SELECT count(*) FROM pg_proc WHERE proname IN ('as_of', 'history_as_of')
  AND pronamespace = 'autocdc'::regnamespace};
is($node->safe_psql('dst', $funcs), '2', 'restored: as_of and history_as_of');
$node->safe_psql('dst', 'DROP TABLE bt');
is($node->safe_psql('dst', $funcs), '0', 'DROP TABLE of the restored target takes both functions');
is($node->safe_psql('dst', q{SELECT count(*) FROM autocdc.flow}), '0', 'and its flow');

$node->stop;
done_testing();
