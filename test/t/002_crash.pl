# Crash test: runs over a million events killed at random points.
#
# One source feeds an SCD 1 and an SCD 2 flow of one pipeline.  The whole
# load (1,000,000 events over 100,000 keys: ~10% deletes, ~5% out of order,
# ~1% exact duplicates) goes in first; then runs of the pipeline are killed
# with SIGKILL of their backend at random points, and once the postmaster is
# stopped in immediate mode instead.  After each recovery nothing of the
# killed run may show: targets, auxiliary state, checkpoints and catalog are
# exactly as before it, and no pipeline is left marked running.  The run
# that is finally let finish reads every row once, and its targets equal a
# model computed independently in SQL; the auxiliary state agrees with the
# targets and the source, and amcheck finds every heap and index intact.
# A second phase adds 100,000 events (a quarter of them late, into the
# middle of history, plus replays of old rows), kills a run of those twice,
# and checks the same against the model over all events.
#
# The kill points are random (stratified over the duration of a run
# measured first in a transaction that is rolled back); the seed is printed
# and AUTOCDC_CRASH_SEED repeats it.
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

my $t_start = time;
my $node = PostgreSQL::Test::Cluster->new('crash');
$node->init;
$node->append_conf('postgresql.conf', q{
shared_preload_libraries = 'autocdc'
restart_after_crash = on
shared_buffers = 256MB
max_wal_size = 2GB
maintenance_work_mem = 256MB
work_mem = 64MB
});
$node->start;

sub sql { return $node->safe_psql('postgres', $_[0]); }

sub timed
{
	my ($what, $code) = @_;
	my $t = time;
	my @r = $code->();
	note sprintf('%s: %.1f s', $what, time - $t);
	return wantarray ? @r : $r[0];
}

# ---------------------------------------------------------------------------
# The flows, the load, the model.
# ---------------------------------------------------------------------------
sql(q{
CREATE EXTENSION autocdc;
CREATE EXTENSION amcheck;
CREATE TABLE src (id int, name text, city text, amount numeric, op text, seq bigint);
SELECT autocdc.create_auto_cdc_flow(target => 'tgt1', source => 'src', keys => ARRAY['id'],
  sequence_by => 'seq', apply_as_deletes => $$op = 'D'$$,
  except_column_list => ARRAY['op', 'seq'], name => 'crash_scd1', pipeline => 'crash');
SELECT autocdc.create_auto_cdc_flow(target => 'tgt2', source => 'src', keys => ARRAY['id'],
  sequence_by => 'seq', apply_as_deletes => $$op = 'D'$$,
  except_column_list => ARRAY['op', 'seq'], stored_as_scd_type => 2,
  name => 'crash_scd2', pipeline => 'crash');
});
my $state1 = sql(q{SELECT state_table FROM autocdc.target WHERE target = 'tgt1'::regclass});
my $events2 = sql(q{SELECT state_table FROM autocdc.target WHERE target = 'tgt2'::regclass});
note "SCD 1 state: $state1, SCD 2 event store: $events2";

# Phase 1 events, in arrival order (pos), deterministic (setseed, no
# parallel query).  Keys uniform over 1..100000; 10% deletes (payload NULL);
# narrow payloads (3 names, 2 cities, 3 amounts or NULL) so that many
# consecutive upserts of a key are identical (SCD 2 no-ops); seq = pos * 10,
# except that within a key the second of a pair of arrivals gets, with
# probability 0.1, seq = (the first's pos) * 10 - 5: it arrives after a row
# of its key with a higher seq (~5% of all rows); 1% of the rows are replaced
# by an exact copy of a row that arrived up to 50,000 positions earlier.
# One (id, seq) never carries two payloads (checked below).
timed('generating and loading 1,000,000 events', sub { sql(q{
SET max_parallel_workers_per_gather = 0;
SELECT setseed(0.31);
CREATE TEMP TABLE g0 AS
SELECT pos::bigint AS pos, 1 + floor(random() * 100000)::int AS id,
       random() AS r_op, random() AS r_name, random() AS r_city, random() AS r_amt,
       random() AS r_ooo, random() AS r_dup, random() AS r_dupd
  FROM generate_series(1, 1000000) pos;
CREATE TEMP TABLE g1 AS
SELECT g.*, row_number() OVER w AS rk, lag(pos) OVER w AS prev_pos
  FROM g0 g WINDOW w AS (PARTITION BY id ORDER BY pos);
CREATE TEMP TABLE g2 AS
SELECT pos, id,
       CASE WHEN r_op < 0.10 THEN 'D' ELSE 'U' END AS op,
       CASE WHEN r_op >= 0.10 THEN 'n' || floor(r_name * 3)::int END AS name,
       CASE WHEN r_op >= 0.10 THEN 'c' || floor(r_city * 2)::int END AS city,
       CASE WHEN r_op >= 0.10 AND r_amt >= 0.2 THEN floor(r_amt * 3)::numeric / 4 END AS amount,
       CASE WHEN rk % 2 = 0 AND r_ooo < 0.10 THEN prev_pos * 10 - 5 ELSE pos * 10 END AS seq,
       CASE WHEN r_dup < 0.01 AND pos > 1
            THEN pos - 1 - floor(r_dupd * least(50000, pos - 1))::bigint END AS dup_of
  FROM g1;
CREATE TABLE events AS
SELECT g.pos,
       CASE WHEN s.pos IS NULL THEN g.id ELSE s.id END AS id,
       CASE WHEN s.pos IS NULL THEN g.name ELSE s.name END AS name,
       CASE WHEN s.pos IS NULL THEN g.city ELSE s.city END AS city,
       CASE WHEN s.pos IS NULL THEN g.amount ELSE s.amount END AS amount,
       CASE WHEN s.pos IS NULL THEN g.op ELSE s.op END AS op,
       CASE WHEN s.pos IS NULL THEN g.seq ELSE s.seq END AS seq
  FROM g2 g LEFT JOIN g2 s ON s.pos = g.dup_of AND s.dup_of IS NULL;
CREATE UNIQUE INDEX ON events (pos);
INSERT INTO src (id, name, city, amount, op, seq)
SELECT id, name, city, amount, op, seq FROM events ORDER BY pos;
VACUUM ANALYZE src;
}) });

# The model, computed from the source rows alone.
#  SCD 1: per key the event with the highest seq, if it is an upsert.
#  SCD 2: per key, the distinct events in seq order; an upsert starts a
#  version when the key is absent (first event, or after a delete) or a value
#  differs from the previous upsert's; a delete after an upsert ends the
#  version; a version ends at the next version start or delete.
sql(q{
CREATE TABLE model1 (id int, name text, city text, amount numeric);
CREATE TABLE model2 (id int, name text, city text, amount numeric, __start_at bigint, __end_at bigint);
CREATE FUNCTION crash_make_model() RETURNS void LANGUAGE plpgsql AS $f$
BEGIN
  SET LOCAL max_parallel_workers_per_gather = 0;
  TRUNCATE model1, model2;
  INSERT INTO model1
  SELECT id, name, city, amount
    FROM (SELECT DISTINCT ON (id) id, name, city, amount, op FROM src ORDER BY id, seq DESC) last
   WHERE op <> 'D';
  INSERT INTO model2
  WITH ev AS (SELECT DISTINCT id, seq, op = 'D' AS del, name, city, amount FROM src),
  l AS (SELECT ev.*, lag(seq) OVER w AS p_seq, lag(del) OVER w AS p_del, lag(name) OVER w AS p_name,
               lag(city) OVER w AS p_city, lag(amount) OVER w AS p_amount
          FROM ev WINDOW w AS (PARTITION BY id ORDER BY seq)),
  b AS (SELECT * FROM l
         WHERE (NOT del AND (p_seq IS NULL OR p_del
                             OR (name, city, amount) IS DISTINCT FROM (p_name, p_city, p_amount)))
            OR (del AND p_seq IS NOT NULL AND NOT p_del))
  SELECT id, name, city, amount, seq, next_seq
    FROM (SELECT b.*, lead(seq) OVER (PARTITION BY id ORDER BY seq) AS next_seq FROM b) v
   WHERE NOT del;
  ANALYZE model1, model2;
END $f$;

-- Targets against the model: rows only in the target / only in the model.
CREATE FUNCTION crash_compare() RETURNS text LANGUAGE sql AS $f$
SELECT format('scd1 %s/%s scd2 %s/%s',
  (SELECT count(*) FROM (SELECT id, name, city, amount FROM tgt1
                         EXCEPT ALL SELECT * FROM model1) a),
  (SELECT count(*) FROM (SELECT * FROM model1
                         EXCEPT ALL SELECT id, name, city, amount FROM tgt1) a),
  (SELECT count(*) FROM (SELECT id, name, city, amount, __start_at, __end_at FROM tgt2
                         EXCEPT ALL SELECT * FROM model2) a),
  (SELECT count(*) FROM (SELECT * FROM model2
                         EXCEPT ALL SELECT id, name, city, amount, __start_at, __end_at FROM tgt2) a))
$f$;
CREATE FUNCTION crash_diff_sample() RETURNS SETOF text LANGUAGE sql AS $f$
(SELECT 'only in tgt1: ' || a::text FROM (SELECT id, name, city, amount FROM tgt1 EXCEPT ALL SELECT * FROM model1) a ORDER BY 1 LIMIT 5)
UNION ALL
(SELECT 'only in model1: ' || a::text FROM (SELECT * FROM model1 EXCEPT ALL SELECT id, name, city, amount FROM tgt1) a ORDER BY 1 LIMIT 5)
UNION ALL
(SELECT 'only in tgt2: ' || a::text FROM (SELECT id, name, city, amount, __start_at, __end_at FROM tgt2 EXCEPT ALL SELECT * FROM model2) a ORDER BY 1 LIMIT 5)
UNION ALL
(SELECT 'only in model2: ' || a::text FROM (SELECT * FROM model2 EXCEPT ALL SELECT id, name, city, amount, __start_at, __end_at FROM tgt2) a ORDER BY 1 LIMIT 5)
$f$;

-- An order-independent fingerprint of a table's rows.
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
  ('target tgt1', crash_fp('tgt1')),
  ('target tgt2', crash_fp('tgt2')),
  ('SCD 1 state', crash_fp('$state1')),
  ('SCD 2 event store', crash_fp('$events2')),
  ('autocdc.checkpoint', (SELECT string_agg(c::text, ' ' ORDER BY flow) FROM autocdc.checkpoint c)),
  ('autocdc.pipeline', (SELECT string_agg(p::text, ' ' ORDER BY name) FROM autocdc.pipeline p)),
  ('autocdc.target', crash_fp('autocdc.target')),
  ('autocdc.flow', crash_fp('autocdc.flow')),
  ('autocdc.event_log', crash_fp('autocdc.event_log'))) w(k, v)};
sub world { return sql($world_sql); }

# The auxiliary state against the targets and the source; returns the checks
# that fail, with their counts ('' when all hold).
sql(qq{
CREATE FUNCTION crash_state_check() RETURNS text LANGUAGE plpgsql AS \$f\$
DECLARE
  n bigint;
  bad text[] := '{}';
  chk record;
BEGIN
  SET LOCAL max_parallel_workers_per_gather = 0;
  FOR chk IN SELECT * FROM (VALUES
    -- SCD 1: the target holds a live key's upsert sequence (__autocdc_sequence),
    -- the state a dead key's tombstone
    ('scd1 live in state, not in target',
     'SELECT count(*) FROM $state1 s WHERE s.__autocdc_deleted_at IS NULL AND NOT EXISTS (SELECT FROM tgt1 t WHERE t.id = s.id)'),
    ('scd1 in target, dead in state',
     'SELECT count(*) FROM tgt1 t JOIN $state1 s USING (id) WHERE s.__autocdc_deleted_at IS NOT NULL'),
    -- (no partial-update column: a live key has no state row)
    ('scd1 live key in state',
     'SELECT count(*) FROM $state1 s WHERE s.__autocdc_deleted_at IS NULL'),
    -- live iff the last upsert is after the last delete
    ('scd1 liveness disagrees with the sequences',
     'SELECT count(*) FROM $state1 s LEFT JOIN tgt1 t USING (id) WHERE (s.__autocdc_deleted_at IS NULL) IS DISTINCT FROM
        (coalesce(s.__autocdc_upsert_seq, t.__autocdc_sequence) IS NOT NULL AND
         (s.__autocdc_delete_seq IS NULL OR coalesce(s.__autocdc_upsert_seq, t.__autocdc_sequence) > s.__autocdc_delete_seq))'),
    -- every key ever seen is remembered, with its last event's sequence
    ('scd1 state and target keys differ from source keys',
     'SELECT count(*) FROM ((SELECT id FROM $state1 UNION SELECT id FROM tgt1 EXCEPT SELECT id FROM src)
        UNION ALL (SELECT id FROM src EXCEPT SELECT id FROM $state1 EXCEPT SELECT id FROM tgt1)) d'),
    ('scd1 last sequence differs from the source',
     'SELECT count(*) FROM $state1 s FULL JOIN tgt1 t USING (id) JOIN (SELECT id, max(seq) AS m FROM src GROUP BY id) m USING (id)
       WHERE greatest(coalesce(s.__autocdc_upsert_seq, t.__autocdc_sequence), s.__autocdc_delete_seq) IS DISTINCT FROM m.m'),
    ('scd1 row sequence is not its last upsert',
     'SELECT count(*) FROM tgt1 t JOIN (SELECT id, max(seq) AS m FROM src WHERE op <> ''D'' GROUP BY id) m USING (id)
       WHERE t.__autocdc_sequence IS DISTINCT FROM m.m'),
    -- SCD 2: the event store, with the versions it lacks the start of (each
    -- the row of the one upsert in it), holds exactly the distinct events of
    -- the source
    ('scd2 event store rows not in the source',
     'SELECT count(*) FROM (SELECT id, __autocdc_seq, __autocdc_kind, CASE WHEN __autocdc_kind = ''u'' THEN ROW(name, city, amount)::text END FROM $events2
        EXCEPT ALL SELECT DISTINCT id, seq, CASE WHEN op = ''D'' THEN ''d'' ELSE ''u'' END, CASE WHEN op <> ''D'' THEN ROW(name, city, amount)::text END FROM src) d'),
    ('scd2 source events not kept',
     'SELECT count(*) FROM (SELECT DISTINCT id, seq, CASE WHEN op = ''D'' THEN ''d'' ELSE ''u'' END, CASE WHEN op <> ''D'' THEN ROW(name, city, amount)::text END FROM src
        EXCEPT ALL (SELECT id, __autocdc_seq, __autocdc_kind, CASE WHEN __autocdc_kind = ''u'' THEN ROW(name, city, amount)::text END FROM $events2
          UNION ALL SELECT id, __start_at, ''u'', ROW(name, city, amount)::text FROM tgt2 t
            WHERE NOT EXISTS (SELECT FROM $events2 e WHERE e.id = t.id AND e.__autocdc_seq = t.__start_at))) d'),
    ('scd2 version kept as its row only holds other events',
     'SELECT count(*) FROM tgt2 t WHERE NOT EXISTS (SELECT FROM $events2 e WHERE e.id = t.id AND e.__autocdc_seq = t.__start_at)
        AND EXISTS (SELECT FROM src s WHERE s.id = t.id AND s.seq > t.__start_at AND (t.__end_at IS NULL OR s.seq < t.__end_at))'),
    -- SCD 2 history: non-empty intervals, no overlap, only the last version open
    ('scd2 empty or reversed versions',
     'SELECT count(*) FROM tgt2 WHERE __end_at <= __start_at'),
    ('scd2 overlapping or open-not-last versions',
     'SELECT count(*) FROM (SELECT __end_at, lead(__start_at) OVER (PARTITION BY id ORDER BY __start_at) AS nxt FROM tgt2) v
       WHERE nxt IS NOT NULL AND (__end_at IS NULL OR __end_at > nxt)')
  ) c(name, q) LOOP
    EXECUTE chk.q INTO n;
    IF n <> 0 THEN bad := bad || (chk.name || ': ' || n); END IF;
  END LOOP;
  RETURN array_to_string(bad, '; ');
END \$f\$;
});

# amcheck on every heap and btree index of the targets, the state, the
# source and autocdc's catalog: returns what it finds wrong ('' if nothing).
# verify_heapam returns corruption as rows, bt_index_check raises an error.
my $rels = qq{ARRAY['tgt1', 'tgt2', '$state1', '$events2', 'src', 'autocdc.checkpoint',
  'autocdc.pipeline', 'autocdc.flow', 'autocdc.target', 'autocdc.event_log']::regclass[]};
sub amcheck
{
	my ($ret, $out, $err) = $node->psql('postgres', qq{
SET max_parallel_workers_per_gather = 0;
SELECT c.rel || ' block ' || v.blkno || ': ' || v.msg FROM unnest($rels) c(rel), verify_heapam(c.rel) v;
SELECT count(bt_index_check(i.indexrelid, true)) FROM pg_index i JOIN pg_class ic ON ic.oid = i.indexrelid
 WHERE i.indrelid = ANY ($rels) AND ic.relam = (SELECT oid FROM pg_am WHERE amname = 'btree');
});
	my $nidx = $out =~ s/.*\n//sr;
	$out =~ s/\n?\d+\z//;
	note "amcheck: $nidx btree indexes checked";
	return $ret == 0 && $nidx >= 8 ? $out : "$out$err (psql exit $ret, $nidx indexes checked)";
}

sub compare_with_model
{
	my ($label) = @_;
	my $cmp = sql('SELECT crash_compare()');
	is($cmp, 'scd1 0/0 scd2 0/0', "$label: targets equal the model (EXCEPT ALL both ways)");
	diag(sql('SELECT * FROM crash_diff_sample()')) if $cmp ne 'scd1 0/0 scd2 0/0';
	is(sql('SELECT crash_state_check()'), '',
		"$label: the auxiliary state agrees with the targets and the source, history is well-formed");
}

my ($n1, $conflicts, $stats) = split /\|/, sql(q{
SELECT count(*),
       (SELECT count(*) FROM (SELECT FROM src GROUP BY id, seq
                               HAVING count(DISTINCT (name, city, amount, op)) > 1) c),
       format('%s keys, %s deletes, %s out of order, %s exact duplicates',
              count(DISTINCT id), count(*) FILTER (WHERE op = 'D'),
              count(*) FILTER (WHERE seq % 10 = 5), count(*) - count(DISTINCT (id, seq)))
  FROM src});
is($n1, 1000000, 'phase 1: a million events loaded');
is($conflicts, 0, 'phase 1: no key and sequence carries two different events');
note "phase 1 data: $stats";

timed('computing the model', sub { sql('SELECT crash_make_model()') });
note 'model: ' . sql(q{SELECT (SELECT count(*) FROM model1) || ' SCD 1 rows, '
	|| (SELECT count(*) FROM model2) || ' SCD 2 versions'});

# ---------------------------------------------------------------------------
# Helpers for the runs.
# ---------------------------------------------------------------------------

# A run in a transaction that is rolled back: it measures how long a run
# takes (to place the kills) and checks its result against the model before
# the rollback.  Returns the run's duration in seconds.
sub dry_run
{
	my ($label, $nrows) = @_;
	my $before = world();
	my $t = time;
	my ($res, $secs, $cmp) = split /\n/, sql(q{
BEGIN;
CREATE TEMP TABLE dry AS SELECT * FROM autocdc.run('crash');
SELECT string_agg(flow || ':' || status || ':' || rows_read, ' ' ORDER BY flow) FROM dry;
SELECT sum(extract(epoch FROM duration)) FROM dry;
SELECT crash_compare();
ROLLBACK;});
	note sprintf('%s: dry run in a transaction rolled back: %.1f s (flows %.1f s)', $label, time - $t, $secs);
	is($res, "crash_scd1:success:$nrows crash_scd2:success:$nrows",
		"$label: a run in a rolled-back transaction reads every new row");
	is($cmp, 'scd1 0/0 scd2 0/0', "$label: inside it, the targets equal the model");
	is(world(), $before, "$label: the rollback leaves targets, state, checkpoints and catalog as they were");
	return $secs;
}

# Kills a run $delay seconds in (CrashRun.pm), then checks that nothing of
# it shows.  Returns whether the kill landed inside autocdc.run.
my @kills;

sub killed_run
{
	my ($label, $delay, $how) = @_;
	my $before = world();
	# which flow: the run locks each target as its flow starts, until commit
	my %k = CrashRun::kill_during_run($node, 'crash', $delay, $how, q{
SELECT CASE WHEN EXISTS (SELECT FROM pg_locks l WHERE l.pid = $pid AND l.relation = 'tgt2'::regclass)
            THEN 'crash_scd2' ELSE 'crash_scd1' END});
	ok($k{back},
		"$label: server back after " . ($how eq 'backend' ? "SIGKILL of backend $k{pid}" : 'immediate shutdown'));
	ok($node->log_contains($how eq 'backend'
			? qr/\(PID $k{pid}\) was terminated by signal 9/
			: qr/received immediate shutdown request(?s:.*)was not properly shut down; automatic recovery/,
			$k{log_offset}),
		"$label: the server log shows the crash");
	push @kills, sprintf('%s: %s at %.2f s into the run (%s), back in %.1f s', $label,
		$how eq 'backend' ? 'SIGKILL of the backend' : 'immediate shutdown', $k{at},
		$k{inside} ? "inside autocdc.run, flow $k{probe}" : 'after the run, before its commit', $k{recovery});
	note $kills[-1];
	is(world(), $before,
		"$label: nothing of the killed run applied: targets, state, checkpoints and catalog unchanged");
	is(sql(q{SELECT count(*) FROM autocdc.pipeline WHERE last_status = 'running'}), '0',
		"$label: no pipeline left marked running");
	return $k{inside};
}

# $k delays stratified over [lo, hi]: one uniformly in each of $k equal
# slices, in random order, so the kills land early, midway and late.
sub kill_delays
{
	my ($k, $lo, $hi) = @_;
	my $w = ($hi - $lo) / $k;
	return shuffle(map { $lo + ($_ + rand()) * $w } 0 .. $k - 1);
}

# The run let finish: every flow succeeds and reads each new row once.
sub final_run
{
	my ($label, $nrows) = @_;
	my $res = timed("$label: the run let finish", sub { sql(q{
SELECT string_agg(flow || ':' || status || ':' || rows_read, ' ' ORDER BY flow) FROM autocdc.run('crash')}) });
	is($res, "crash_scd1:success:$nrows crash_scd2:success:$nrows",
		"$label: after recovery the next run completes and reads every new row once");
}

# ---------------------------------------------------------------------------
# Phase 1: the million events; 3 backend kills and 1 immediate shutdown.
# ---------------------------------------------------------------------------
my $T1 = dry_run('phase 1', $n1);
my @d1 = kill_delays(4, 0.3, 0.9 * $T1);
my $imm = int(rand(4));
my $in_run = 0;
for my $i (0 .. 3)
{
	$in_run += killed_run("phase 1 kill " . ($i + 1), $d1[$i], $i == $imm ? 'immediate' : 'backend');
}
final_run('phase 1', $n1);
compare_with_model('phase 1');
is(timed('phase 1: amcheck', \&amcheck), '', 'phase 1: amcheck finds every heap and index intact');
is(sql(q{SELECT string_agg(flow || ':' || rows_read, ' ' ORDER BY flow) FROM autocdc.run('crash')}),
	'crash_scd1:0 crash_scd2:0', 'phase 1: a further run reads nothing');
is(sql('SELECT crash_compare()'), 'scd1 0/0 scd2 0/0', 'phase 1: and changes nothing');

# ---------------------------------------------------------------------------
# Phase 2: 100,000 more events, a quarter of them late (into the middle of
# history: seq = 10 * (a random earlier position) - 3), 2% exact replays of
# phase-1 rows; two backend kills.
# ---------------------------------------------------------------------------
timed('phase 2: generating and loading 100,000 events', sub { sql(q{
SET max_parallel_workers_per_gather = 0;
SELECT setseed(0.62);
CREATE TEMP TABLE h0 AS
SELECT pos::bigint AS pos, 1 + floor(random() * 100000)::int AS id,
       random() AS r_op, random() AS r_name, random() AS r_city, random() AS r_amt,
       random() AS r_late, random() AS r_base, random() AS r_dup, random() AS r_dupd
  FROM generate_series(1000001, 1100000) pos;
CREATE TEMP TABLE h1 AS
SELECT pos, id,
       CASE WHEN r_op < 0.10 THEN 'D' ELSE 'U' END AS op,
       CASE WHEN r_op >= 0.10 THEN 'n' || floor(r_name * 3)::int END AS name,
       CASE WHEN r_op >= 0.10 THEN 'c' || floor(r_city * 2)::int END AS city,
       CASE WHEN r_op >= 0.10 AND r_amt >= 0.2 THEN floor(r_amt * 3)::numeric / 4 END AS amount,
       CASE WHEN r_late < 0.25 THEN (1 + floor(r_base * 1000000)::bigint) * 10 - 3 ELSE pos * 10 END AS seq,
       CASE WHEN r_dup < 0.02 THEN 1 + floor(r_dupd * 1000000)::bigint END AS replay_of
  FROM h0;
-- two late rows of one key drawn at one sequence: keep the first
DELETE FROM h1 a USING h1 b
 WHERE a.id = b.id AND a.seq = b.seq AND a.pos > b.pos
   AND a.replay_of IS NULL AND b.replay_of IS NULL;
INSERT INTO events
SELECT h.pos,
       CASE WHEN e.pos IS NULL THEN h.id ELSE e.id END,
       CASE WHEN e.pos IS NULL THEN h.name ELSE e.name END,
       CASE WHEN e.pos IS NULL THEN h.city ELSE e.city END,
       CASE WHEN e.pos IS NULL THEN h.amount ELSE e.amount END,
       CASE WHEN e.pos IS NULL THEN h.op ELSE e.op END,
       CASE WHEN e.pos IS NULL THEN h.seq ELSE e.seq END
  FROM h1 h LEFT JOIN events e ON e.pos = h.replay_of;
INSERT INTO src (id, name, city, amount, op, seq)
SELECT id, name, city, amount, op, seq FROM events WHERE pos > 1000000 ORDER BY pos;
VACUUM ANALYZE src;
}) });
my ($n2, $conflicts2, $stats2) = split /\|/, sql(q{
SELECT (SELECT count(*) FROM events WHERE pos > 1000000),
       (SELECT count(*) FROM (SELECT FROM src GROUP BY id, seq
                               HAVING count(DISTINCT (name, city, amount, op)) > 1) c),
       (SELECT format('%s late, %s replays of phase-1 rows', count(*) FILTER (WHERE seq % 10 = 7),
                      count(*) FILTER (WHERE seq <= 10000000 AND seq % 10 <> 7))
          FROM events WHERE pos > 1000000)});
is($conflicts2, 0, 'phase 2: no key and sequence carries two different events');
note "phase 2 data: $n2 events, $stats2";
timed('phase 2: computing the model over all events', sub { sql('SELECT crash_make_model()') });

my $T2 = dry_run('phase 2', $n2);
my @d2 = kill_delays(2, 0.2, 0.9 * $T2);
for my $i (0 .. 1)
{
	$in_run += killed_run("phase 2 kill " . ($i + 1), $d2[$i], 'backend');
}
final_run('phase 2', $n2);
compare_with_model('phase 2');
is(timed('phase 2: amcheck', \&amcheck), '', 'phase 2: amcheck finds every heap and index intact');
ok($in_run >= 1, "$in_run of " . scalar(@kills) . ' kills landed inside autocdc.run');

note "kills:\n" . join("\n", @kills);
note sprintf('total: %.0f s', time - $t_start);
$node->stop;
done_testing();
