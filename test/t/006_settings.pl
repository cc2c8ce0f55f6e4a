# Settings without the library preloaded: SHOW knows autocdc's settings only
# once the library is loaded, autocdc.settings lists them in any session, and
# a misspelt autocdc.* setting is an error once the prefix is reserved.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = PostgreSQL::Test::Cluster->new('settings');
$node->init;
$node->start;
$node->safe_psql('postgres', 'CREATE EXTENSION autocdc');

my ($rc, $out, $err) = $node->psql('postgres', 'SHOW autocdc.naptime');
isnt($rc, 0, 'a new session without the library does not know SHOW autocdc.naptime');
like($err, qr/unrecognized configuration parameter "autocdc.naptime"/, 'as PostgreSQL says');

is($node->safe_psql('postgres', q{SELECT count(*) > 5 FROM autocdc.settings WHERE setting IS NOT NULL}),
	't', 'autocdc.settings lists the settings in a new session');
is($node->safe_psql('postgres', q{SELECT setting FROM autocdc.settings WHERE name = 'autocdc.naptime'}),
	'1000', 'with their values');
is($node->safe_psql('postgres', q{SELECT 1 FROM autocdc.settings LIMIT 1; SHOW autocdc.naptime}),
	"1\n1s", 'and SHOW works in the session once the view was read');
($rc, $out, $err) = $node->psql('postgres', q{SELECT 1 FROM autocdc.settings LIMIT 1; SET autocdc.naptiem = '1s'});
isnt($rc, 0, 'a misspelt autocdc setting is refused once the library is loaded');
like($err, qr/invalid configuration parameter name "autocdc.naptiem"/, 'with PostgreSQL\'s error');

$node->stop;
done_testing();
