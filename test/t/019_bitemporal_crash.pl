# Crash test for a bitemporal flow: its runs killed at random points.
#
# 200,000 events over 20,000 keys, system sequence = arrival position,
# business sequence mostly rising with it but ~10% late in business time,
# ~8% corrections (a key and business sequence taken again at a later
# system sequence, other values), ~8% deletes.  The first half is loaded
# and applied; then the second half goes in (with late system events too:
# ~5% of its rows carry a system sequence below every other) and
# runs of the pipeline are killed with SIGKILL of their backend, and once
# the postmaster is stopped in immediate mode.  After each recovery nothing
# of the killed run may show: target, event store, checkpoint and catalog
# are exactly as before it.  The run finally let finish must give the
# table a clean flow computes from the same events read in one run, in
# another order; amcheck finds every heap and index intact.
#
# The kill points are random (stratified over a dry run's duration); the
# seed is printed and AUTOCDC_CRASH_SEED repeats it.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time sleep);
use List::Util qw(shuffle);
use FindBin;
use lib $FindBin::RealBin;
use CrashRun;

my $seed = $ENV{AUTOCDC_CRASH_SEED} // (int(time() * 1000) ^ $$) % 1_000_000;
srand($seed);
note "kill points: seed $seed (AUTOCDC_CRASH_SEED=$seed repeats them)";

my $node = PostgreSQL::Test::Cluster->new('bt_crash');
$node->init;
$node->append_conf('postgresql.conf', q{
shared_preload_libraries = 'autocdc'
restart_after_crash = on
shared_buffers = 128MB
max_wal_size = 1GB
work_mem = 16MB
});
$node->start;

sub sql { return $node->safe_psql('postgres', $_[0]); }

sql(q{
CREATE EXTENSION autocdc;
CREATE EXTENSION amcheck;
CREATE TABLE src (id int, name text, amount int, op text, bseq bigint, sseq bigint);
CREATE TABLE src_ref (LIKE src);
SELECT autocdc.create_auto_cdc_flow(target => 'tgt', source => 'src', keys => ARRAY['id'],
  sequence_by => 'bseq', system_sequence_by => 'sseq', apply_as_deletes => $$op = 'D'$$,
  except_column_list => ARRAY['op', 'bseq', 'sseq'], stored_as_scd_type => 'bitemporal',
  name => 'crash_bt', pipeline => 'crash');
SELECT autocdc.create_auto_cdc_flow(target => 'ref', source => 'src_ref', keys => ARRAY['id'],
  sequence_by => 'bseq', system_sequence_by => 'sseq', apply_as_deletes => $$op = 'D'$$,
  except_column_list => ARRAY['op', 'bseq', 'sseq'], stored_as_scd_type => 'bitemporal',
  name => 'crash_ref', pipeline => 'ref');
SET max_parallel_workers_per_gather = 0;
SELECT setseed(0.42);
-- pos = system sequence; a correction repeats the business sequence of an
-- earlier event of its key
CREATE TABLE events AS
SELECT pos, 1 + (random() * 19999)::int AS id,
       (ARRAY['a', 'b', 'c'])[1 + (random() * 2)::int] AS name,
       (random() * 3)::int AS amount,
       CASE WHEN random() < 0.08 THEN 'D' ELSE 'U' END AS op,
       CASE WHEN random() < 0.1 THEN pos * 10 - 5 - (random() * 200)::int * 10 ELSE pos * 10 END AS bseq,
       pos::bigint AS sseq
  FROM generate_series(1, 200000) pos;
-- corrections: ~8% of the events take the business sequence of an earlier
-- event of the same key
UPDATE events e SET bseq = p.bseq
  FROM (SELECT pos, lag(bseq) OVER (PARTITION BY id ORDER BY pos) AS bseq FROM events) p
 WHERE p.pos = e.pos AND p.bseq IS NOT NULL AND hashint4(e.pos) % 12 = 0;
-- late system events: ~5% of the second half carry a system sequence below every other
UPDATE events SET sseq = -pos WHERE pos > 100000 AND hashint4(pos * 7) % 20 = 0;
});
my $events = sql(q{SELECT state_table FROM autocdc.target WHERE target = 'tgt'::regclass});

sql(q{
CREATE FUNCTION crash_fp(r regclass) RETURNS text LANGUAGE plpgsql AS $f$
DECLARE res text;
BEGIN
  EXECUTE format('SELECT count(*) || '':'' || coalesce(sum(hashtext(t::text)::bigint), 0) FROM %s t', r)
    INTO res;
  RETURN res;
END $f$;
});
my $world_sql = qq{
SELECT string_agg(k || ' = ' || coalesce(v, '(null)'), E'\\n' ORDER BY k) FROM (VALUES
  ('target tgt', crash_fp('tgt')),
  ('event store', crash_fp('$events')),
  ('autocdc.checkpoint', (SELECT string_agg(c::text, ' ' ORDER BY flow) FROM autocdc.checkpoint c WHERE flow = 'crash_bt')),
  ('autocdc.pipeline', (SELECT string_agg(p::text, ' ' ORDER BY name) FROM autocdc.pipeline p WHERE name = 'crash')),
  ('autocdc.target', crash_fp('autocdc.target')),
  ('autocdc.flow', crash_fp('autocdc.flow')),
  ('autocdc.event_log', (SELECT count(*)::text FROM autocdc.event_log WHERE flow = 'crash_bt'))) w(k, v)};
sub world { return sql($world_sql); }

# Phase 1: the first half, applied in two runs.
sql(q{INSERT INTO src SELECT id, name, amount, op, bseq, sseq FROM events WHERE pos <= 50000});
is(sql(q{SELECT status || ':' || rows_read FROM autocdc.run('crash')}), 'success:50000', 'first quarter applied');
sql(q{INSERT INTO src SELECT id, name, amount, op, bseq, sseq FROM events WHERE pos > 50000 AND pos <= 100000});
is(sql(q{SELECT status || ':' || rows_read FROM autocdc.run('crash')}), 'success:50000', 'second quarter applied');

# Phase 2: the second half, runs of it killed.
sql(q{INSERT INTO src SELECT id, name, amount, op, bseq, sseq FROM events WHERE pos > 100000 ORDER BY random()});
my $t = time;
my ($dry) = split /\n/, sql(q{
BEGIN;
SELECT status || ':' || rows_read FROM autocdc.run('crash');
ROLLBACK;});
my $T = time - $t;
is($dry, 'success:100000', 'a dry run (rolled back) reads the second half');
note sprintf('dry run: %.1f s', $T);

my (@kills, $in_run);
my @delays = shuffle(map { 0.2 * $T + ($_ + rand()) * 0.7 * $T / 3 } 0 .. 2);
for my $i (0 .. 2)
{
	my $how = $i == 1 ? 'immediate' : 'backend';
	my $label = 'kill ' . ($i + 1);
	my $before = world();
	my %k = CrashRun::kill_during_run($node, 'crash', $delays[$i], $how);
	$in_run += $k{inside};
	ok($k{back}, "$label: server back after " . ($how eq 'backend' ? 'SIGKILL' : 'immediate shutdown'));
	push @kills, sprintf('%s: %s at %.2f s (%s)', $label, $how, $k{at},
		$k{inside} ? 'inside autocdc.run' : 'after the run, before its commit');
	is(world(), $before, "$label: nothing of the killed run applied: target, event store, checkpoint and catalog unchanged");
	is(sql(q{SELECT count(*) FROM autocdc.pipeline WHERE last_status = 'running'}), '0',
		"$label: no pipeline left marked running");
}
note "kills:\n" . join("\n", @kills);
ok($in_run >= 1, "$in_run of 3 kills landed inside autocdc.run");

is(sql(q{SELECT status || ':' || rows_read FROM autocdc.run('crash')}), 'success:100000',
	'after recovery the next run reads the second half once');

# The same events in one run, in another order, into a clean flow.
sql(q{INSERT INTO src_ref SELECT id, name, amount, op, bseq, sseq FROM events ORDER BY hashint4(pos)});
is(sql(q{SELECT status || ':' || rows_read FROM autocdc.run('ref')}), 'success:200000', 'the reference flow reads every event');
is(sql(q{
SELECT count(*) FROM (
  (SELECT id, name, amount, __start_at, __end_at, __system_start_at, __system_end_at FROM tgt
   EXCEPT ALL SELECT id, name, amount, __start_at, __end_at, __system_start_at, __system_end_at FROM ref)
  UNION ALL
  (SELECT id, name, amount, __start_at, __end_at, __system_start_at, __system_end_at FROM ref
   EXCEPT ALL SELECT id, name, amount, __start_at, __end_at, __system_start_at, __system_end_at FROM tgt)) d}),
	'0', 'the target equals the table the same events give read in one run');
is(sql(q{SELECT count(*) FROM tgt WHERE __system_end_at <= __system_start_at OR __end_at <= __start_at}), '0',
	'no empty interval on either axis');
is(sql(qq{SELECT count(*) FROM (SELECT DISTINCT id, bseq, sseq FROM src) s}),
	sql(qq{SELECT count(*) FROM $events}), 'the event store holds each distinct event once');

my ($ret, $out, $err) = $node->psql('postgres', qq{
SET max_parallel_workers_per_gather = 0;
SELECT c.rel || ' block ' || v.blkno || ': ' || v.msg
  FROM unnest(ARRAY['tgt', '$events', 'src']::regclass[]) c(rel), verify_heapam(c.rel) v;
SELECT count(bt_index_check(i.indexrelid, true)) FROM pg_index i JOIN pg_class ic ON ic.oid = i.indexrelid
 WHERE i.indrelid = ANY (ARRAY['tgt', '$events']::regclass[]) AND ic.relam = (SELECT oid FROM pg_am WHERE amname = 'btree');
});
is($ret, 0, 'amcheck ran');
like($out, qr/\A\d+\z/, 'amcheck finds every heap and index intact');

$node->stop;
done_testing();
