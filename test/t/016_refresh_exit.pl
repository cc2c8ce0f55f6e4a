# CALL autocdc.refresh() for cron and CI: psql exits non-zero when a flow
# failed and 0 when none did, and the flows that succeeded are committed
# either way (seen from a new connection).
use strict;
use warnings;
use IPC::Run;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = PostgreSQL::Test::Cluster->new('refresh');
$node->init;
$node->start;

# Two flows of pipeline p: good works; bad's apply_as_deletes calls a
# function whose body names its table without the schema, which runs
# (search_path pinned to pg_catalog, pg_temp) do not find.
$node->safe_psql('postgres', q{
CREATE EXTENSION autocdc;
CREATE TABLE src (id int, v text, op text, seq int);
CREATE TABLE delete_ops (op text);
INSERT INTO delete_ops VALUES ('D');
CREATE FUNCTION is_delete(o text) RETURNS boolean LANGUAGE sql STABLE
  AS $$ SELECT EXISTS (SELECT 1 FROM delete_ops d WHERE d.op = o) $$;
SELECT autocdc.create_auto_cdc_flow(target => 'good_t', source => 'src', keys => ARRAY['id'],
  sequence_by => 'seq', apply_as_deletes => $$op = 'D'$$, except_column_list => ARRAY['op', 'seq'],
  name => 'good', pipeline => 'p');
SELECT autocdc.create_auto_cdc_flow(target => 'bad_t', source => 'src', keys => ARRAY['id'],
  sequence_by => 'seq', apply_as_deletes => 'public.is_delete(op)', except_column_list => ARRAY['op', 'seq'],
  name => 'bad', pipeline => 'p');
INSERT INTO src VALUES (1, 'one', 'U', 1), (2, 'two', 'U', 1);
});

# psql as a cron line runs it; returns its exit status and stderr.
sub cron_psql
{
	my @opts = @_;
	my ($out, $err) = ('', '');
	IPC::Run::run([ 'psql', '-X', '-v', 'ON_ERROR_STOP=1', @opts, '-d', $node->connstr('postgres'),
		'-c', q{CALL autocdc.refresh('p')} ], '>', \$out, '2>', \$err);
	return ($? >> 8, $err);
}

my ($rc, $err) = cron_psql();
isnt($rc, 0, 'psql exits non-zero when a flow failed');
like($err, qr/ERROR:  flow "bad" of pipeline "p" failed/, 'the error names the failed flow');
like($err, qr/DETAIL:  flow "bad": relation "delete_ops" does not exist/, 'and gives its error');
like($err, qr/HINT:  Runs set search_path to pg_catalog, pg_temp;/, 'with the search_path hint');
is($node->safe_psql('postgres', q{SELECT string_agg(id || ':' || v, ',' ORDER BY id) FROM good_t}),
	'1:one,2:two', 'the good flow\'s rows are committed');
is($node->safe_psql('postgres', q{SELECT count(*) FROM bad_t}), '0', 'the failed flow\'s are not');
is($node->safe_psql('postgres', q{
SELECT string_agg(flow || ':' || status, ',' ORDER BY flow) FROM autocdc.event_log
 WHERE run_id = (SELECT max(run_id) FROM autocdc.event_log)}),
	'bad:failed,good:success', 'the event log is committed');
is($node->safe_psql('postgres', q{SELECT status || '|' || error FROM autocdc.run_history}),
	'failed|flows failed: bad (see autocdc.event_log)', 'and the run history');

# psql -1 wraps the CALL in a transaction block, where it cannot commit.
$node->safe_psql('postgres', q{INSERT INTO src VALUES (3, 'three', 'U', 1)});
($rc, $err) = cron_psql('-1');
isnt($rc, 0, 'psql -1 exits non-zero');
like($err, qr/ERROR:  autocdc.refresh\(\) cannot run inside a transaction block/, 'refused in a transaction block');
is($node->safe_psql('postgres', q{SELECT count(*) FROM good_t WHERE id = 3}), '0', 'nothing ran');

# Qualified, the function works: no error, exit 0.
$node->safe_psql('postgres', q{
CREATE OR REPLACE FUNCTION is_delete(o text) RETURNS boolean LANGUAGE sql STABLE
  AS $$ SELECT EXISTS (SELECT 1 FROM public.delete_ops d WHERE d.op = o) $$;
});
($rc, $err) = cron_psql();
is($rc, 0, 'psql exits 0 when no flow failed');
is($err, '', 'and prints nothing on stderr');
is($node->safe_psql('postgres', q{SELECT string_agg(id || ':' || v, ',' ORDER BY id) FROM bad_t}),
	'1:one,2:two,3:three', 'the fixed flow caught up');
is($node->safe_psql('postgres', q{SELECT count(*) FROM good_t WHERE id = 3}), '1', 'the good flow too');

$node->stop;
done_testing();
