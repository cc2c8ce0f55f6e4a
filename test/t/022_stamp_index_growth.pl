# The stamp's index (access method autocdc_stamp) past its first entry
# page: 510 entries of 32 blocks each cover 16,320 heap blocks.  A heap of
# one row per block (fillfactor = 10 and a 1 kB row) grows past that while
# concurrent writers insert, so that inserts extend the index as others
# record their entries; then the index must answer every stamp as a
# sequential scan does, a run must read every row once, and a rebuild
# (REINDEX, which writes entry pages in one pass) must answer the same.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = PostgreSQL::Test::Cluster->new('stamp_index_growth');
$node->init;
$node->append_conf('postgresql.conf', q{
shared_preload_libraries = 'autocdc'
autovacuum = off
max_connections = 20
});
$node->start;

$node->safe_psql('postgres', q{
CREATE EXTENSION autocdc;
CREATE TABLE src (id int, pad text) WITH (fillfactor = 10);
ALTER TABLE src ALTER COLUMN pad SET STORAGE PLAIN;
CREATE SEQUENCE ids;
SELECT autocdc.create_append_flow(target => 'log', source => 'src', pipeline => 'p');
INSERT INTO src SELECT nextval('ids'), repeat('x', 1000) FROM generate_series(1, 16200);
SELECT autocdc.run('p');
});
is($node->safe_psql('postgres', q{
SELECT pg_relation_size('src') / current_setting('block_size')::int;
}), '16200', 'one row per heap block');

# Concurrent single-row transactions across the boundary at block 16,320
# (whether two of them meet at the extension itself is left to chance).
$node->pgbench(
	'--no-vacuum --client=6 --jobs=2 --transactions=100',
	0,
	[qr{processed: 600/600}],
	[qr{^$}],
	'six writers insert across the first entry page\'s end',
	{
		'022_insert' => q{INSERT INTO src VALUES (nextval('ids'), repeat('y', 1000));}
	});

# The reference counts in one sequential pass; the probes go through the
# index (checked by EXPLAIN below).
my $check = q{
SET enable_bitmapscan = off;
CREATE TEMP TABLE seq AS
  SELECT p, sum(c) OVER (ORDER BY p DESC) AS ge, sum(c) OVER (ORDER BY p DESC) - c AS gt
    FROM (SELECT __autocdc_xid AS p, count(*) AS c FROM src GROUP BY 1) g;
RESET enable_bitmapscan;
SET enable_seqscan = off;
SELECT count(*) || ' ' || count(*) FILTER (WHERE (SELECT count(*) FROM src WHERE __autocdc_xid >= s.p) <> s.ge
                           OR (SELECT count(*) FROM src WHERE __autocdc_xid > s.p) <> s.gt)
  FROM seq s;
};
like($node->safe_psql('postgres', q{
SET enable_seqscan = off;
EXPLAIN (COSTS OFF) SELECT count(*) FROM src WHERE __autocdc_xid >= '5';
}), qr/Bitmap Index Scan on src___autocdc_xid_idx/, 'the probes read through the stamp index');
is($node->safe_psql('postgres', $check), '601 0',
	'the index answers every stamp as a sequential scan does');
is($node->safe_psql('postgres', q{
SELECT pg_relation_size('src') / current_setting('block_size')::int > 16320,
       pg_relation_size(i.indexrelid) / current_setting('block_size')::int >= 3
  FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid JOIN pg_am a ON a.oid = c.relam
 WHERE i.indrelid = 'src'::regclass AND a.amname = 'autocdc_stamp';
}), 't|t', 'the heap is past 16,320 blocks and the index has a metapage and two entry pages');
is($node->safe_psql('postgres', q{
SELECT rows_read FROM autocdc.run('p');
SELECT count(*) || ' ' || count(DISTINCT id) FROM log;
}), "600\n16800 16800", 'a run reads every row since the last one once');

$node->safe_psql('postgres', q{
REINDEX TABLE src;
});
is($node->safe_psql('postgres', $check), '601 0',
	'after REINDEX the index answers every stamp as a sequential scan does');

$node->stop;
done_testing();
