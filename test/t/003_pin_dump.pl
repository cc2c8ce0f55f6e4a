# Expression pinning across pg_dump and restore: what a flow's expressions
# resolved to is kept as identity text, so a restored flow (new OIDs for
# everything) still runs, and is still refused when something added later
# would capture its expression.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = PostgreSQL::Test::Cluster->new('pin_dump');
$node->init;
$node->append_conf('postgresql.conf', qq{
shared_preload_libraries = 'autocdc'
});
$node->start;

$node->safe_psql('postgres', q{
CREATE ROLE mallory;
CREATE DATABASE src_db;
CREATE DATABASE restored_db;
});
$node->safe_psql('src_db', q{
CREATE EXTENSION autocdc;
CREATE SCHEMA util AUTHORIZATION mallory;
CREATE FUNCTION util.pf(anyelement) RETURNS anyelement LANGUAGE sql IMMUTABLE AS 'SELECT $1';
CREATE TABLE src (id int, v text, seq int, op text);
SELECT autocdc.create_auto_cdc_flow(target => 'tgt', source => 'src', keys => ARRAY['id'],
  sequence_by => 'util.pf(seq)', apply_as_deletes => $$op = 'D'$$, pipeline => 'p');
INSERT INTO src VALUES (1, 'a', 1, 'U');
SELECT status FROM autocdc.run('p');
});
my $objects_before = $node->safe_psql('src_db',
	q{SELECT expression_objects FROM autocdc.flow WHERE name = 'tgt'});
like($objects_before, qr/sequence_by: function util\.pf\(pg_catalog\.anyelement\)/,
	'the flow records the function its sequence resolved to');

my $dump = $node->basedir . '/src_db.sql';
$node->command_ok([ 'pg_dump', '-d', $node->connstr('src_db'), '-f', $dump ], 'pg_dump');
$node->command_ok([ 'psql', '-X', '-q', '-v', 'ON_ERROR_STOP=1', '-d', $node->connstr('restored_db'), '-f', $dump ],
	'restore');

isnt($node->safe_psql('restored_db', q{SELECT 'util.pf(anyelement)'::regprocedure::oid}),
	$node->safe_psql('src_db', q{SELECT 'util.pf(anyelement)'::regprocedure::oid}),
	'the restored function has another OID');
is($node->safe_psql('restored_db', q{SELECT expression_objects FROM autocdc.flow WHERE name = 'tgt'}),
	$objects_before, 'the restored flow keeps what its expressions resolved to');

$node->safe_psql('restored_db', q{INSERT INTO src VALUES (2, 'b', 2, 'U')});
is($node->safe_psql('restored_db', q{SELECT status FROM autocdc.run('p')}),
	'success', 'the restored flow runs: its expressions resolve as recorded');
is($node->safe_psql('restored_db', q{SELECT string_agg(v, ',' ORDER BY id) FROM tgt}),
	'a,b', 'and applies its events');

# A closer overload added in the restored database is refused as before.
$node->safe_psql('restored_db', q{
SET ROLE mallory;
CREATE FUNCTION util.pf(int) RETURNS int LANGUAGE sql AS 'SELECT 0';
RESET ROLE;
INSERT INTO src VALUES (3, 'c', 3, 'U');
});
my ($ret, $stdout, $stderr) = $node->psql('restored_db', q{SELECT status FROM autocdc.run('p')});
is($stdout, 'failed', 'the restored flow is refused once its expression would resolve elsewhere');
like($stderr, qr/expression of flow "tgt" now resolves to other objects/, 'with the pinning error');
is($node->safe_psql('restored_db', q{SELECT count(*) FROM tgt}), '2', 'nothing of the refused run applied');

done_testing();
