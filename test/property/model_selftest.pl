#!/usr/bin/perl
# Self-check of the property test's reference model (Model.pm) against a
# handful of hand-computed cases.
#
#   perl test/property/model_selftest.pl
#
# Prints "model_selftest: N passed, M failed" and exits non-zero on failure.

use strict;
use warnings;
use FindBin;
use lib $FindBin::Bin;
use Model qw(fold partial_columns);

my ($passed, $failed) = (0, 0);

# Render a fold result as sorted lines "col=val,col=val" (NULL for undef).
sub render {
    my ($config, $result) = @_;
    my @cols = (@{ $config->{key_cols} }, @{ $config->{value_cols} });
    my @lines = map {
        my $row = $_;
        join ',', map { "$_=" . (defined $row->{$_} ? $row->{$_} : 'NULL') } @cols;
    } values %$result;
    return join "\n", sort @lines;
}

sub check {
    my ($name, $config, $events, @expected) = @_;
    my $got  = render($config, fold($config, $events));
    my $want = join "\n", sort @expected;
    if ($got eq $want) {
        $passed++;
        print "ok - $name\n";
    }
    else {
        $failed++;
        print "not ok - $name\n  expected:\n    ", join("\n    ", split /\n/, $want),
              "\n  got:\n    ", join("\n    ", split /\n/, $got), "\n";
    }
}

sub check_dies {
    my ($name, $config, $events, $pattern) = @_;
    my $ok = !eval { fold($config, $events); 1 } && $@ =~ $pattern;
    if ($ok) { $passed++; print "ok - $name\n" }
    else     { $failed++; print "not ok - $name (error: ", ($@ || 'none'), ")\n" }
}

# ---------------------------------------------------------------------------
# The reference "users" example: userId key, name and city values.
my $users = { key_cols => ['id'], value_cols => [qw(name city)], partial => {} };

sub user_ev {
    my ($id, $name, $city, $op, $seq) = @_;
    my $kind = $op eq 'DELETE' ? 'delete' : $op eq 'TRUNCATE' ? 'truncate' : 'upsert';
    return { kind => $kind, seq => $seq, key => [$id], vals => { name => $name, city => $city } };
}

my @users = (
    user_ev(124, 'Raul',     'Oaxaca',      'INSERT', 1),
    user_ev(123, 'Isabel',   'Monterrey',   'INSERT', 1),
    user_ev(125, 'Mercedes', 'Tijuana',     'INSERT', 2),
    user_ev(126, 'Lily',     'Cancun',      'INSERT', 2),
    user_ev(123, undef,      undef,         'DELETE', 6),
    user_ev(125, 'Mercedes', 'Guadalajara', 'UPDATE', 6),
    user_ev(125, 'Mercedes', 'Mexicali',    'UPDATE', 5),
    user_ev(123, 'Isabel',   'Chihuahua',   'UPDATE', 5),
);
my @users_result = (
    'id=124,name=Raul,city=Oaxaca',
    'id=125,name=Mercedes,city=Guadalajara',
    'id=126,name=Lily,city=Cancun',
);

check('users example', $users, \@users, @users_result);
check('users example, reversed arrival', $users, [ reverse @users ], @users_result);
check('users example, replayed twice', $users, [ @users, @users ], @users_result);
check('users example + TRUNCATE at 3', $users,
      [ @users, user_ev(undef, undef, undef, 'TRUNCATE', 3) ],
      'id=125,name=Mercedes,city=Guadalajara');
check('users example + TRUNCATE at 3, truncate arrives first', $users,
      [ user_ev(undef, undef, undef, 'TRUNCATE', 3), @users ],
      'id=125,name=Mercedes,city=Guadalajara');
check('users example + TRUNCATE at 2: upsert at exactly 2 survives', $users,
      [ @users, user_ev(undef, undef, undef, 'TRUNCATE', 2) ],
      'id=125,name=Mercedes,city=Guadalajara', 'id=126,name=Lily,city=Cancun');
check('users example + TRUNCATE at 7 removes everything', $users,
      [ @users, user_ev(undef, undef, undef, 'TRUNCATE', 7) ]);
check('truncate also removes a key seen only later with an older event', $users,
      [ user_ev(undef, undef, undef, 'TRUNCATE', 10), user_ev(200, 'Ana', 'Puebla', 'INSERT', 9) ]);

# ---------------------------------------------------------------------------
# Partial updates with column a partial, b not.
my $pa = { key_cols => ['k'], value_cols => [qw(a b)], partial => { a => 1 } };
sub ev {
    my ($kind, $seq, $k, %vals) = @_;
    return { kind => $kind, seq => $seq, key => [$k], vals => \%vals };
}

my @p = (ev(upsert => 1, 1, a => 1, b => 1), ev(upsert => 3, 1, a => undef, b => 2));
check('partial: U1(a=1,b=1) U3(a=NULL,b=2) keeps a', $pa, \@p, 'k=1,a=1,b=2');
check('partial: U3 arriving before U1 gives the same', $pa, [ reverse @p ], 'k=1,a=1,b=2');
check('partial: late D2 resets the previous value', $pa,
      [ @p, ev(delete => 2, 1) ], 'k=1,a=NULL,b=2');
check('partial: U1(a=1) U3(a=NULL) late U2(a=5) gives a=5', $pa,
      [ ev(upsert => 1, 1, a => 1, b => 1), ev(upsert => 3, 1, a => undef, b => 1),
        ev(upsert => 2, 1, a => 5, b => 1) ],
      'k=1,a=5,b=1');
check('partial: non-partial column takes NULL', $pa,
      [ ev(upsert => 1, 1, a => 1, b => 1), ev(upsert => 2, 1, a => 7, b => undef) ],
      'k=1,a=7,b=NULL');
check('partial: a first upsert with NULL gives NULL', $pa,
      [ ev(upsert => 4, 1, a => undef, b => 3) ], 'k=1,a=NULL,b=3');
check('partial: truncate resets the previous value', $pa,
      [ ev(upsert => 1, 1, a => 1, b => 1), { kind => 'truncate', seq => 2 },
        ev(upsert => 3, 1, a => undef, b => 1) ],
      'k=1,a=NULL,b=1');
check('partial: upsert at the truncate sequence keeps nothing from before', $pa,
      [ ev(upsert => 1, 1, a => 1, b => 1), { kind => 'truncate', seq => 2 },
        ev(upsert => 2, 1, a => undef, b => 9) ],
      'k=1,a=NULL,b=9');
check('plain: delete-only key has no row; delete then older upsert stays deleted',
      { key_cols => ['k'], value_cols => ['a'], partial => {} },
      [ ev(delete => 5, 1), ev(delete => 5, 2), ev(upsert => 4, 2, a => 1) ]);

# ---------------------------------------------------------------------------
# partial_columns() for the three ways of naming partial columns.
{
    my @v = qw(a b c);
    my $show = sub { join ',', sort keys %{ partial_columns(\@v, $_[0]) } };
    my @cases = (
        [ {},                                                  ''      ],
        [ { ignore_null_updates => 1 },                        'a,b,c' ],
        [ { ignore_null_updates_column_list => ['b'] },        'b'     ],
        [ { ignore_null_updates_except_column_list => ['b'] }, 'a,c'   ],
    );
    for my $c (@cases) {
        my $got = $show->($c->[0]);
        if ($got eq $c->[1]) { $passed++; print "ok - partial_columns -> '$c->[1]'\n" }
        else { $failed++; print "not ok - partial_columns: want '$c->[1]', got '$got'\n" }
    }
}

# Composite key, except-column-list partial (c is partial, b is not).
check('composite key with except_column_list',
      { key_cols => [qw(k1 k2)], value_cols => [qw(b c)],
        partial => partial_columns([qw(b c)], { ignore_null_updates_except_column_list => ['b'] }) },
      [ { kind => 'upsert', seq => 1, key => [ 1, 'x' ], vals => { b => 'p', c => 1 } },
        { kind => 'upsert', seq => 2, key => [ 1, 'x' ], vals => { b => undef, c => undef } },
        { kind => 'upsert', seq => 1, key => [ 1, 'y' ], vals => { b => 'q', c => 2 } } ],
      'k1=1,k2=x,b=NULL,c=1', 'k1=1,k2=y,b=q,c=2');

# Bad input is rejected (guards the random generator).
check_dies('two different events for one key and sequence', $pa,
           [ ev(upsert => 1, 1, a => 1, b => 1), ev(upsert => 1, 1, a => 2, b => 1) ],
           qr/two different events/);
check_dies('NULL key in an upsert', $pa, [ ev(upsert => 1, undef, a => 1) ], qr/NULL key/);

print "model_selftest: $passed passed, $failed failed\n";
exit($failed ? 1 : 0);
