# Table sources fed by logical replication: rows a subscription applies
# (its initial copy, then each change) are read exactly once by the
# subscriber's flows, over several runs.  Published from a plain table,
# and from a table that is itself an autocdc source on the publisher, with
# and without a column list leaving out __autocdc_xid: without one the
# publisher's stamps (its transaction ids, meaningless on the subscriber)
# arrive with the rows, and the subscriber stamps them anew (also once a
# column there comes after __autocdc_xid).  The
# subscriber's transaction counter is ahead, so a publisher's stamp kept
# would look read already.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $pub = PostgreSQL::Test::Cluster->new('publisher');
$pub->init(allows_streaming => 'logical');
$pub->append_conf('postgresql.conf', "shared_preload_libraries = 'autocdc'\n");
$pub->start;

my $sub = PostgreSQL::Test::Cluster->new('subscriber');
$sub->init;
$sub->append_conf('postgresql.conf', "shared_preload_libraries = 'autocdc'\n");
$sub->start;
$sub->safe_psql('postgres',
	"DO \$\$ BEGIN FOR i IN 1..1000 LOOP PERFORM pg_current_xact_id(); COMMIT; END LOOP; END \$\$");

my $tables = q{
CREATE TABLE plain_log (id int, name text, seq int);
CREATE TABLE src_full (id int, name text, seq int);
CREATE TABLE src_cols (id int, name text, seq int);
CREATE TABLE src_kept (id int, name text, seq int);
};

# The publisher: src_full and src_cols are sources of its own flows.
$pub->safe_psql('postgres', qq{
CREATE EXTENSION autocdc;
$tables
CREATE TABLE pub_full (id int, name text, seq int);
SELECT autocdc.create_append_flow(target => 'pub_full', source => 'src_full', pipeline => 'pp');
CREATE TABLE pub_cols (id int, name text, seq int);
SELECT autocdc.create_append_flow(target => 'pub_cols', source => 'src_cols', pipeline => 'pp');
CREATE TABLE pub_kept (id int, name text, seq int);
SELECT autocdc.create_append_flow(target => 'pub_kept', source => 'src_kept', pipeline => 'pp');
CREATE PUBLICATION pub_all FOR TABLE plain_log, src_full, src_cols (id, name, seq), src_kept;
});

# Rows a statement inserts into each of the three tables.
sub load
{
	my ($rows) = @_;
	$pub->safe_psql('postgres', join '', map {
		"INSERT INTO $_ VALUES $rows; "
	} qw(plain_log src_full src_cols src_kept));
	$pub->safe_psql('postgres', "SELECT count(*) FROM autocdc.run('pp')");
}
load(q{(1, 'one', 1), (2, 'two', 1), (3, 'three', 1)});

# The subscriber: an SCD 1 and an append flow over plain_log, an append
# flow over each of the others.  src_full's flow runs once before the
# subscription starts: its initial copy comes into a source read already,
# whose given stamps are replaced.  src_kept's does not: the publisher's
# stamps of its initial copy are kept, as a restore's are, and its first
# run reads it whole.
$sub->safe_psql('postgres', qq{
CREATE EXTENSION autocdc;
$tables
SELECT autocdc.create_auto_cdc_flow(target => 'cur', source => 'plain_log', keys => ARRAY['id'],
  sequence_by => 'seq', pipeline => 'sp');
CREATE TABLE log_plain (id int, name text, seq int);
SELECT autocdc.create_append_flow(target => 'log_plain', source => 'plain_log', pipeline => 'sp');
CREATE TABLE log_full (id int, name text, seq int);
SELECT autocdc.create_append_flow(target => 'log_full', source => 'src_full', pipeline => 'sp');
CREATE TABLE log_cols (id int, name text, seq int);
SELECT autocdc.create_append_flow(target => 'log_cols', source => 'src_cols', pipeline => 'sp');
CREATE TABLE log_kept (id int, name text, seq int);
SELECT autocdc.create_append_flow(target => 'log_kept', source => 'src_kept', pipeline => 'sp');
SELECT count(*) FROM autocdc.run('sp', flows => ARRAY['log_full']);
});
is($sub->safe_psql('postgres', q{
SELECT string_agg(c.relname || '=' || t.tgenabled::text, ',' ORDER BY c.relname)
  FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid
 WHERE t.tgname = '__autocdc_stamp_xid'}),
	'plain_log=A,src_cols=A,src_full=A,src_kept=A',
	'the stamp trigger fires ALWAYS, on rows a subscription applies too');

my $connstr = $pub->connstr . ' dbname=postgres';
$sub->safe_psql('postgres', "CREATE SUBSCRIPTION sub_all CONNECTION '$connstr' PUBLICATION pub_all");
$sub->wait_for_subscription_sync($pub, 'sub_all');

sub run_sub
{
	return $sub->safe_psql('postgres', q{
SELECT string_agg(flow || '=' || rows_read || '/' || rows_upserted || ' ' || status, ', ' ORDER BY flow)
  FROM autocdc.run('sp')});
}

is(run_sub(), 'cur=3/3 success, log_cols=3/3 success, log_full=3/3 success, log_kept=3/3 success, log_plain=3/3 success',
	'the initial copy is read');
is(run_sub(), 'cur=0/0 success, log_cols=0/0 success, log_full=0/0 success, log_kept=0/0 success, log_plain=0/0 success',
	'and only once');

load(q{(4, 'four', 1), (1, 'one, again', 2)});
$pub->wait_for_catchup('sub_all');
is(run_sub(), 'cur=2/2 success, log_cols=2/2 success, log_full=2/2 success, log_kept=2/2 success, log_plain=2/2 success',
	'rows applied by the subscription are read');
is(run_sub(), 'cur=0/0 success, log_cols=0/0 success, log_full=0/0 success, log_kept=0/0 success, log_plain=0/0 success',
	'and only once');

# A column added to the subscriber's src_full after its flow comes after
# __autocdc_xid: the publisher's stamps, applied by name, are still
# replaced (only a value given by position would be refused).
$sub->safe_psql('postgres', 'ALTER TABLE src_full ADD COLUMN note text');

# Rows of several transactions applied between two runs.
load(q{(5, 'five', 1)});
$pub->wait_for_catchup('sub_all');
load(q{(2, 'two, again', 2), (6, 'six', 1)});
$pub->wait_for_catchup('sub_all');
is(run_sub(), 'cur=3/3 success, log_cols=3/3 success, log_full=3/3 success, log_kept=3/3 success, log_plain=3/3 success',
	'rows of two transactions applied are read');
is(run_sub(), 'cur=0/0 success, log_cols=0/0 success, log_full=0/0 success, log_kept=0/0 success, log_plain=0/0 success',
	'and only once');

is($sub->safe_psql('postgres', q{SELECT string_agg(id || ':' || name, ',' ORDER BY id) FROM cur}),
	'1:one, again,2:two, again,3:three,4:four,5:five,6:six',
	'the SCD 1 target holds the latest row of each key');
for my $log (qw(log_plain log_full log_cols log_kept))
{
	is($sub->safe_psql('postgres', qq{
SELECT count(*) || ' rows, ' || count(DISTINCT (id, seq)) || ' distinct' FROM $log}),
		'8 rows, 8 distinct', "$log holds each row applied once");
}
done_testing();
