# Targets made by the real 0.1.0 over a sequence in a non-default collation
# got their history, state and event store columns in the database's
# default collation (issue 13), which orders them otherwise.  The update
# cannot rewrite users' tables; after it, the next run refuses such a flow
# and its hint says what to run.  Running what it says (the ALTER TABLEs,
# then a full refresh) gives the targets a database with 0.2.0 from the
# start gives after the same steps.
use strict;
use warnings;
use File::Copy;
use File::Path qw(mkpath);
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $old = $ENV{AUTOCDC_010_BUILD};
plan skip_all => 'no 0.1.0 build (scripts/run-tap.sh sets AUTOCDC_010_BUILD)'
  if !defined $old || !-f "$old/autocdc.so";

# A copy of the PostgreSQL installation on PATH (relocatable), whose
# autocdc can be swapped: 0.1.0 first, then this build's.
chomp(my $bindir = `pg_config --bindir`);
chomp(my $pgshare = `pg_config --sharedir`);
(my $pg = $bindir) =~ s{/bin$}{};
my $root = PostgreSQL::Test::Utils::tempdir;
(my $libparent = "$root$pg") =~ s{/[^/]+$}{};
(my $shareparent = "$root$pgshare") =~ s{/[^/]+$}{};
mkpath([$libparent, $shareparent]);
system('cp', '-RP', $pg, $libparent) == 0 or die "copying $pg failed";
system('cp', '-RP', $pgshare, $shareparent) == 0 or die "copying $pgshare failed";
my ($inst, $share) = ("$root$pg", "$root$pgshare");

sub install_autocdc
{
	my ($so, $control, @scripts) = @_;
	unlink glob("$share/extension/autocdc*");
	copy($so, "$inst/lib/autocdc.so") or die "copying $so: $!";
	copy($_, "$share/extension/") or die "copying $_: $!" for ($control, @scripts);
}

my $node = PostgreSQL::Test::Cluster->new('collation_upgrade', install_path => $inst);
install_autocdc("$old/autocdc.so", "$old/autocdc.control", glob("$old/sql/autocdc--*.sql"));
# UTF-8 whatever the environment: ICU collations need it.
$node->init(extra => ['--encoding=UTF8', '--locale=C']);
$node->start;
my ($up, $new) = ('from_010', 'fresh_020');
$node->safe_psql('postgres', "CREATE DATABASE $_") for ($up, $new);

# In en-x-icu 'a' < 'B' < 'b' < 'C'; in the databases' default (C) 'B' < 'C' < 'a' < 'b'.
my $setup = q{
CREATE TABLE hs (id int, v text, s text COLLATE "en-x-icu");
SELECT autocdc.create_auto_cdc_flow(target => 'h', source => 'hs', keys => ARRAY['id'],
  sequence_by => 's', except_column_list => ARRAY['s'], stored_as_scd_type => 2, pipeline => 'p');
CREATE TABLE ss (id int, v text, s text COLLATE "en-x-icu");
SELECT autocdc.create_auto_cdc_flow(target => 's1', source => 'ss', keys => ARRAY['id'],
  sequence_by => 's', except_column_list => ARRAY['s'], pipeline => 'p');
CREATE TABLE rs (id int, v text, s text, n int);
SELECT autocdc.create_auto_cdc_flow(target => 'hr', source => 'rs', keys => ARRAY['id'],
  sequence_by => 'ROW(s COLLATE "en-x-icu", n)', except_column_list => ARRAY['s', 'n'],
  stored_as_scd_type => 2, pipeline => 'r');
INSERT INTO hs VALUES (1, 'v-B', 'B'), (2, 'w-b', 'b');
INSERT INTO ss VALUES (1, 'v-B', 'B'), (2, 'w-b', 'b');
SELECT string_agg(flow || ':' || status, ' ' ORDER BY flow) FROM autocdc.run('p');
};
my $more = q{
INSERT INTO hs VALUES (1, 'v-a', 'a'), (2, 'w-C', 'C');
INSERT INTO ss VALUES (1, 'v-a', 'a'), (2, 'w-C', 'C');
};
my $targets = q{
SELECT string_agg(concat_ws(' ', id, v, __start_at, __end_at), ', '
                  ORDER BY id, __start_at COLLATE "en-x-icu") FROM h;
SELECT string_agg(concat_ws(' ', id, v), ', ' ORDER BY id) FROM s1;
SELECT string_agg(id || ' ' || v, ', ' ORDER BY id) FROM autocdc.as_of(NULL::h, 'aa');
};

$node->safe_psql($up, 'CREATE EXTENSION autocdc');
is((split /\n/, $node->safe_psql($up, $setup))[-1], 'h:success s1:success', '0.1.0 runs the flows');
is($node->safe_psql($up, q{SELECT count(*) FROM pg_attribute
  WHERE attrelid = 'h'::regclass AND attname IN ('__start_at', '__end_at')
    AND attcollation = 'pg_catalog.default'::regcollation}),
	'2', "0.1.0 made the history columns in the database's default collation");
$node->safe_psql($up, $more);

$node->stop;
install_autocdc("$pg/lib/autocdc.so", "$pgshare/extension/autocdc.control",
	glob("$pgshare/extension/autocdc--*.sql"));
$node->start;
$node->safe_psql($up, 'ALTER EXTENSION autocdc UPDATE');

# The next run refuses both flows, naming the columns and the fix.
my ($ret, $out, $err) = $node->psql($up,
	q{SELECT string_agg(flow || ':' || status, ' ' ORDER BY flow) FROM autocdc.run('p')});
is($out, 'h:failed s1:failed', 'after the update, the next run refuses the flows');
like($err, qr/flow "h": columns autocdc derives from the sequence or the keys of target "h" do not carry their collation/,
	'saying why');
like($err, qr/DETAIL:  .*Column "__start_at" of "h" has collation "default", but sequence_by has collation "en-x-icu"/,
	'naming the columns');
my @fix = $err =~ /(ALTER TABLE [^;]+;)/g;

# A ROW(...) sequence's composite type, which columns use, cannot be
# altered: the run says to make the flows again.
($ret, $out, $err) = $node->psql($up,
	q{SELECT string_agg(flow || ':' || status, ' ' ORDER BY flow) FROM autocdc.run('r')});
is($out, 'hr:failed', 'a ROW(...) sequence of 0.1.0 in en-x-icu is refused too');
like($err, qr/WARNING:  the fields of type autocdc\.__autocdc_seq_\d+ do not have the collations of flow "hr"'s sequence_by.*HINT:  Drop the target's flows and the target and create them again/s,
	'with the way out');
is(scalar(@fix), 5, 'the hints give the ALTER TABLEs for both targets (3 for h, 2 for s1)');

$node->safe_psql($up, join("\n", @fix));
is($node->safe_psql($up,
		q{SELECT string_agg(flow || ':' || status, ' ' ORDER BY flow) FROM autocdc.run('p', full_refresh => true)}),
	'h:success s1:success', 'with them done, the full refresh the hint names runs');

# The same steps on 0.2.0 from the start.
$node->safe_psql($new, 'CREATE EXTENSION autocdc');
$node->safe_psql($new, $setup);
$node->safe_psql($new, $more);
is($node->safe_psql($new,
		q{SELECT string_agg(flow || ':' || status, ' ' ORDER BY flow) FROM autocdc.run('p')}),
	'h:success s1:success', '0.2.0 runs them');
my $want = $node->safe_psql($new, $targets);
is($want, "1 v-a a B, 1 v-B B, 2 w-b b C, 2 w-C C\n1 v-B, 2 w-C\n1 v-a",
	'0.2.0 orders history, late events and as_of in en-x-icu');
is($node->safe_psql($up, $targets), $want, 'the updated, fixed and refreshed targets are the same');

$node->stop;
done_testing();
