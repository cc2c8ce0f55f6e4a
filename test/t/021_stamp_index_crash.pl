# The stamp's index (access method autocdc_stamp) across a crash: its pages
# change by generic WAL only, so after an immediate shutdown the recovered
# index must answer exactly as a sequential scan, and a run must read every
# committed row once.  wal_consistency_checking = generic makes recovery
# compare each replayed page with the image the primary logged.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = PostgreSQL::Test::Cluster->new('stamp_index');
$node->init;
$node->append_conf('postgresql.conf', q{
shared_preload_libraries = 'autocdc'
wal_consistency_checking = 'generic'
autovacuum = off
});
$node->start;

$node->safe_psql('postgres', q{
CREATE EXTENSION autocdc;
CREATE TABLE src (id int, seq int, pad text);
SELECT autocdc.create_append_flow(target => 'log', source => 'src', pipeline => 'p');
CREATE UNLOGGED TABLE u (x xid8);
CREATE INDEX u_x ON u USING autocdc_stamp (x);
INSERT INTO src SELECT g, g, repeat('a', 80) FROM generate_series(1, 30000) g;
SELECT autocdc.run('p');
});
my $lost = $node->safe_psql('postgres', q{
BEGIN;
SELECT autocdc.run('p');
INSERT INTO src VALUES (60000, 60000, 'after the run');
COMMIT;
CHECKPOINT;
SELECT count(*) FROM src WHERE __autocdc_xid IS NULL;
});
($lost) = $lost =~ /(\S+)\z/;
is($lost, '1', 'a row inserted after a run in its transaction has no stamp yet');

# After the checkpoint: appended rows in several transactions, rows in
# space a VACUUM freed, rows of a transaction that aborts.
$node->safe_psql('postgres', q{
INSERT INTO src SELECT g, g, repeat('b', 80) FROM generate_series(30001, 40000) g;
INSERT INTO src SELECT g, g, repeat('c', 80) FROM generate_series(40001, 45000) g;
DELETE FROM src WHERE id % 4 = 0 AND id <= 30000;
VACUUM src;
INSERT INTO src SELECT g, g, repeat('d', 80) FROM generate_series(45001, 50000) g;
BEGIN;
INSERT INTO src SELECT g, g, 'aborted' FROM generate_series(50001, 51000) g;
ROLLBACK;
INSERT INTO u SELECT '5' FROM generate_series(1, 100);
});

$node->stop('immediate');
$node->start;
ok(1, 'recovery replayed the index pages (wal_consistency_checking = generic)');

my $check = q{
SET enable_bitmapscan = off;
CREATE TEMP TABLE seq AS
  SELECT p, (SELECT count(*) FROM src WHERE __autocdc_xid >= p) AS ge,
            (SELECT count(*) FROM src WHERE __autocdc_xid > p) AS gt
    FROM (SELECT DISTINCT __autocdc_xid AS p FROM src WHERE __autocdc_xid IS NOT NULL) s;
RESET enable_bitmapscan;
SET enable_seqscan = off;
SELECT count(*) FILTER (WHERE (SELECT count(*) FROM src WHERE __autocdc_xid >= s.p) <> s.ge
                           OR (SELECT count(*) FROM src WHERE __autocdc_xid > s.p) <> s.gt)
       || ' ' || (SELECT count(*) FROM src WHERE __autocdc_xid IS NULL)
  FROM seq s;
};
is($node->safe_psql('postgres', $check), '0 1',
	'after recovery the index answers every stamp as a sequential scan does');
is($node->safe_psql('postgres', q{
SELECT rows_read FROM autocdc.run('p');
SELECT count(*) || ' ' || count(DISTINCT id) || ' ' || count(*) FILTER (WHERE id > 50000 AND id < 60000) FROM log;
}), "20001\n50001 50001 0", 'a run reads every committed row since the last one once, no aborted one');

is($node->safe_psql('postgres', q{
SET enable_seqscan = off;
SELECT count(*) FROM u WHERE x > '1';
INSERT INTO u SELECT '9' FROM generate_series(1, 10);
SELECT count(*) FROM u WHERE x > '8';
}), "0\n10", 'an unlogged table\'s index starts empty again after the crash and takes new rows');

$node->stop;
done_testing();
