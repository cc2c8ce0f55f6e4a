#!/usr/bin/perl
# Self-check of the property test's reference model (Model.pm) against a
# handful of hand-computed cases, for SCD type 1 (fold), SCD type 2
# (fold_scd2), bitemporal (fold_bitemporal) and snapshots interleaved with CDC events on an SCD type 1
# target (snapshot_events + fold).
#
#   perl test/property/model_selftest.pl
#
# Prints "model_selftest: N passed, M failed" and exits non-zero on failure.

use strict;
use warnings;
use FindBin;
use lib $FindBin::Bin;
use Model qw(fold fold_scd2 fold_bitemporal partial_columns tracked_columns snapshot_events quarantine_reason);

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

# ===========================================================================
# SCD type 2

# Render a fold_scd2 result as sorted lines "col=val,...,[start,end)" (NULL
# for undef; an open version ends with NULL).
sub render_scd2 {
    my ($config, $versions) = @_;
    my @cols = (@{ $config->{key_cols} }, @{ $config->{value_cols} });
    my @lines = map {
        my $v = $_;
        join(',', map { "$_=" . (defined $v->{$_} ? $v->{$_} : 'NULL') } @cols)
            . ",[$v->{__start_at}," . (defined $v->{__end_at} ? $v->{__end_at} : 'NULL') . ')';
    } @$versions;
    return join "\n", sort @lines;
}

sub check_scd2 {
    my ($name, $config, $events, @expected) = @_;
    my $got  = render_scd2($config, fold_scd2($config, $events));
    my $want = join "\n", sort @expected;
    if ($got eq $want) {
        $passed++;
        print "ok - scd2: $name\n";
    }
    else {
        $failed++;
        print "not ok - scd2: $name\n  expected:\n    ", join("\n    ", split /\n/, $want),
              "\n  got:\n    ", join("\n    ", split /\n/, $got), "\n";
    }
}

# The reference "users" example as SCD type 2.
my @users_scd2 = (
    'id=123,name=Isabel,city=Monterrey,[1,5)',
    'id=123,name=Isabel,city=Chihuahua,[5,6)',
    'id=124,name=Raul,city=Oaxaca,[1,NULL)',
    'id=125,name=Mercedes,city=Tijuana,[2,5)',
    'id=125,name=Mercedes,city=Mexicali,[5,6)',
    'id=125,name=Mercedes,city=Guadalajara,[6,NULL)',
    'id=126,name=Lily,city=Cancun,[2,NULL)',
);
check_scd2('users example', $users, \@users, @users_scd2);
check_scd2('users example, reversed arrival', $users, [ reverse @users ], @users_scd2);
check_scd2('users example, replayed twice', $users, [ @users, @users ], @users_scd2);
{
    # Every arrival order gives the same history (a few fixed permutations).
    my @orders = ([ 7, 0, 5, 2, 4, 1, 6, 3 ], [ 4, 6, 1, 3, 0, 2, 7, 5 ], [ 5, 6, 7, 4, 3, 2, 1, 0 ]);
    for my $o (@orders) {
        check_scd2('users example, arrival order ' . join('', @$o), $users, [ @users[@$o] ], @users_scd2);
    }
}

my $users_except_city = { %$users,
    tracked => tracked_columns([qw(name city)], { track_history_except_column_list => ['city'] }) };
my @users_scd2_except_city = (
    'id=123,name=Isabel,city=Chihuahua,[1,6)',
    'id=124,name=Raul,city=Oaxaca,[1,NULL)',
    'id=125,name=Mercedes,city=Guadalajara,[2,NULL)',
    'id=126,name=Lily,city=Cancun,[2,NULL)',
);
check_scd2('users example, track_history_except_column_list => [city]',
           $users_except_city, \@users, @users_scd2_except_city);
check_scd2('users example, track_history_column_list => [name], reversed',
           { %$users, tracked => tracked_columns([qw(name city)], { track_history_column_list => ['name'] }) },
           [ reverse @users ], @users_scd2_except_city);

# Late events, one value column.
my $one = { key_cols => ['id'], value_cols => ['city'], partial => {} };
sub city_ev {
    my ($op, $seq, $city) = @_;
    return { kind => ($op eq 'DELETE' ? 'delete' : 'upsert'), seq => $seq, key => [1], vals => { city => $city } };
}
check_scd2('INSERT 10, DELETE 20, late UPDATE 15', $one,
           [ city_ev(INSERT => 10, 'Seattle'), city_ev(DELETE => 20), city_ev(UPDATE => 15, 'Tacoma') ],
           'id=1,city=Seattle,[10,15)', 'id=1,city=Tacoma,[15,20)');
check_scd2('ACTIVE 12, late PENDING 10', $one,
           [ city_ev(UPDATE => 12, 'ACTIVE'), city_ev(UPDATE => 10, 'PENDING') ],
           'id=1,city=PENDING,[10,12)', 'id=1,city=ACTIVE,[12,NULL)');
check_scd2('ACTIVE 17, DELETE 20, late SUSPENDED 18', $one,
           [ city_ev(UPDATE => 17, 'ACTIVE'), city_ev(DELETE => 20), city_ev(UPDATE => 18, 'SUSPENDED') ],
           'id=1,city=ACTIVE,[17,18)', 'id=1,city=SUSPENDED,[18,20)');
check_scd2('Portland 10, DELETE 20, late DELETE 15', $one,
           [ city_ev(INSERT => 10, 'Portland'), city_ev(DELETE => 20), city_ev(DELETE => 15) ],
           'id=1,city=Portland,[10,15)');
check_scd2('upsert, delete, upsert leaves a gap and inherits nothing', $one,
           [ city_ev(UPSERT => 3, 'B'), city_ev(UPSERT => 1, 'A'), city_ev(DELETE => 2) ],
           'id=1,city=A,[1,2)', 'id=1,city=B,[3,NULL)');
check_scd2('an identical upsert is a no-op; delete-only key has no version', $one,
           [ city_ev(UPSERT => 1, 'A'), city_ev(UPSERT => 2, 'A'),
             { kind => 'delete', seq => 5, key => [2], vals => {} } ],
           'id=1,city=A,[1,NULL)');
check_scd2('NULL-safe comparison: NULL = NULL, NULL <> empty string', $one,
           [ city_ev(UPSERT => 1, undef), city_ev(UPSERT => 2, undef), city_ev(UPSERT => 3, ''),
             city_ev(UPSERT => 4, ''), city_ev(UPSERT => 5, undef) ],
           'id=1,city=NULL,[1,3)', 'id=1,city=,[3,5)', 'id=1,city=NULL,[5,NULL)');

# Untracked-only changes: a tracked, u untracked.
my $au = { key_cols => ['k'], value_cols => [qw(a u)], partial => {},
           tracked => tracked_columns([qw(a u)], { track_history_column_list => ['a'] }) };
my @au = (ev(upsert => 10, 1, a => 1, u => 'x'), ev(upsert => 20, 1, a => 1, u => 'y'));
check_scd2('untracked-only update changes the open version in place', $au, \@au,
           'k=1,a=1,u=y,[10,NULL)');
check_scd2('untracked-only update, then a late event splitting its version', $au,
           [ @au, ev(upsert => 15, 1, a => 2, u => 'z') ],
           'k=1,a=1,u=x,[10,15)', 'k=1,a=2,u=z,[15,20)', 'k=1,a=1,u=y,[20,NULL)');
check_scd2('untracked-only update, late split arriving first', $au,
           [ ev(upsert => 15, 1, a => 2, u => 'z'), reverse @au ],
           'k=1,a=1,u=x,[10,15)', 'k=1,a=2,u=z,[15,20)', 'k=1,a=1,u=y,[20,NULL)');
check_scd2('untracked change on a closed version is kept in that version', $au,
           [ @au, ev(delete => 30, 1) ], 'k=1,a=1,u=y,[10,30)');

# Partial updates with SCD type 2: a partial, b not; all columns tracked.
my $pa2 = { key_cols => ['k'], value_cols => [qw(a b)], partial => { a => 1 } };
check_scd2('partial: NULL in a partial column is not a change', $pa2,
           [ ev(upsert => 1, 1, a => 1, b => 1), ev(upsert => 2, 1, a => undef, b => 1) ],
           'k=1,a=1,b=1,[1,NULL)');
check_scd2('partial: NULL in a partial column keeps the value in the new version', $pa2,
           [ ev(upsert => 1, 1, a => 1, b => 1), ev(upsert => 3, 1, a => undef, b => 2) ],
           'k=1,a=1,b=1,[1,3)', 'k=1,a=1,b=2,[3,NULL)');
check_scd2('partial: NULL in a non-partial column is a change', $pa2,
           [ ev(upsert => 1, 1, a => 1, b => 1), ev(upsert => 2, 1, a => 1, b => undef) ],
           'k=1,a=1,b=1,[1,2)', 'k=1,a=1,b=NULL,[2,NULL)');
check_scd2('partial: after a delete there is nothing to inherit', $pa2,
           [ ev(upsert => 1, 1, a => 1, b => 1), ev(upsert => 3, 1, a => undef, b => 1),
             ev(delete => 2, 1) ],
           'k=1,a=1,b=1,[1,2)', 'k=1,a=NULL,b=1,[3,NULL)');
check_scd2('partial: a late event changes what a later NULL inherits', $pa2,
           [ ev(upsert => 1, 1, a => 1, b => 1), ev(upsert => 3, 1, a => undef, b => 2),
             ev(upsert => 2, 1, a => 5, b => 1) ],
           'k=1,a=1,b=1,[1,2)', 'k=1,a=5,b=1,[2,3)', 'k=1,a=5,b=2,[3,NULL)');
check_scd2('partial + untracked: partial untracked column keeps its value in place',
           { key_cols => ['k'], value_cols => [qw(a u)], partial => { u => 1 },
             tracked => { a => 1 } },
           [ ev(upsert => 1, 1, a => 1, u => 'x'), ev(upsert => 2, 1, a => 1, u => undef),
             ev(upsert => 3, 1, a => 2, u => undef) ],
           'k=1,a=1,u=x,[1,3)', 'k=1,a=2,u=x,[3,NULL)');

# Composite key, partial and tracked subsets together.
check_scd2('composite key, tracked [b], partial [c]',
           { key_cols => [qw(k1 k2)], value_cols => [qw(b c)], partial => { c => 1 },
             tracked => tracked_columns([qw(b c)], { track_history_except_column_list => ['c'] }) },
           [ { kind => 'upsert', seq => 1, key => [ 1, 'x' ], vals => { b => 'p', c => 1 } },
             { kind => 'upsert', seq => 2, key => [ 1, 'x' ], vals => { b => 'p', c => undef } },
             { kind => 'upsert', seq => 3, key => [ 1, 'x' ], vals => { b => 'q', c => undef } },
             { kind => 'upsert', seq => 4, key => [ 1, 'x' ], vals => { b => 'q', c => 7 } },
             { kind => 'upsert', seq => 1, key => [ 1, 'y' ], vals => { b => 'p', c => 2 } } ],
           'k1=1,k2=x,b=p,c=1,[1,3)', 'k1=1,k2=x,b=q,c=7,[3,NULL)', 'k1=1,k2=y,b=p,c=2,[1,NULL)');

# tracked_columns() for the three ways of naming tracked columns.
{
    my @v = qw(a b c);
    my $show = sub { join ',', sort keys %{ tracked_columns(\@v, $_[0]) } };
    my @cases = (
        [ {},                                                 'a,b,c' ],
        [ { track_history_column_list => ['b'] },             'b'     ],
        [ { track_history_except_column_list => ['b'] },      'a,c'   ],
    );
    for my $c (@cases) {
        my $got = $show->($c->[0]);
        if ($got eq $c->[1]) { $passed++; print "ok - tracked_columns -> '$c->[1]'\n" }
        else { $failed++; print "not ok - tracked_columns: want '$c->[1]', got '$got'\n" }
    }
}

{
    my $ok = !eval { fold_scd2($one, [ city_ev(INSERT => 1, 'A'), { kind => 'truncate', seq => 2 } ]); 1 }
             && $@ =~ /truncate/;
    if ($ok) { $passed++; print "ok - scd2: truncates are refused\n" }
    else     { $failed++; print "not ok - scd2: truncates are refused (error: ", ($@ || 'none'), ")\n" }
}

# ===========================================================================
# Snapshots + CDC on one SCD type 1 target (one ordering domain)

my $acc = { key_cols => ['id'], value_cols => ['status'], partial => {} };
sub acc_ev {    # a CDC event: U (upsert) or D (delete)
    my ($op, $seq, $id, $status) = @_;
    return { kind => ($op eq 'D' ? 'delete' : 'upsert'), seq => $seq, key => [$id],
             vals => { status => $status } };
}
sub acc_snap {  # a snapshot: version, then id => status pairs
    my ($version, @pairs) = @_;
    my @rows;
    while (my ($id, $status) = splice @pairs, 0, 2) {
        push @rows, { key => [$id], vals => { status => $status } };
    }
    return snapshot_events($acc, $version, \@rows);
}

# The backfill example: CDC 1@15, 2@5, 4@12 and snapshot 10 {1,2,3}; then
# snapshot 20 {1,3} with CDC 4@25, 3@18; then late 2@19; then 2@21.
my @acc1 = (acc_ev(U => 15, 1, 'cdc15'), acc_ev(U => 5, 2, 'cdc5'), acc_ev(U => 12, 4, 'cdc12'),
            acc_snap(10, 1 => 'snap10', 2 => 'snap10', 3 => 'snap10'));
check('snapshot+cdc: snapshot 10 between CDC events', $acc, \@acc1,
      'id=1,status=cdc15', 'id=2,status=snap10', 'id=3,status=snap10', 'id=4,status=cdc12');
my @acc2 = (@acc1, acc_snap(20, 1 => 'snap20', 3 => 'snap20'),
            acc_ev(U => 25, 4, 'cdc25'), acc_ev(U => 18, 3, 'cdc18'));
my @acc2_result = ('id=1,status=snap20', 'id=3,status=snap20', 'id=4,status=cdc25');
check('snapshot+cdc: snapshot 20 lacks 2 and 4; 4 kept by a newer event', $acc, \@acc2, @acc2_result);
check('snapshot+cdc: late CDC 2@19, older than snapshot 20, stays out', $acc,
      [ @acc2, acc_ev(U => 19, 2, 'cdc19') ], @acc2_result);
check('snapshot+cdc: CDC 2@21, newer than snapshot 20, restores 2', $acc,
      [ @acc2, acc_ev(U => 19, 2, 'cdc19'), acc_ev(U => 21, 2, 'cdc21') ],
      @acc2_result, 'id=2,status=cdc21');
check('snapshot+cdc: same, every event in reverse arrival order', $acc,
      [ reverse(@acc2, acc_ev(U => 19, 2, 'cdc19'), acc_ev(U => 21, 2, 'cdc21')) ],
      @acc2_result, 'id=2,status=cdc21');
check('snapshot+cdc: same, snapshots replayed twice', $acc,
      [ @acc2, acc_ev(U => 21, 2, 'cdc21'), @acc2 ], @acc2_result, 'id=2,status=cdc21');

# Snapshots alone: the last one is the state; NULL is a value.
check('snapshot: the newest snapshot is the state, NULL values included', $acc,
      [ acc_snap(3, 1 => 'x', 2 => 'y'), acc_snap(1, 1 => 'old', 5 => 'old'),
        acc_snap(2, 2 => 'z', 3 => undef) ],
      'id=1,status=x', 'id=2,status=y');
check('snapshot: a NULL in a snapshot overwrites an older value', $acc,
      [ acc_ev(U => 1, 1, 'cdc1'), acc_snap(2, 1 => undef) ], 'id=1,status=NULL');
check('snapshot: an empty snapshot removes every older key, not a newer one', $acc,
      [ acc_ev(U => 1, 1, 'a'), acc_ev(U => 3, 1, 'b'), acc_ev(U => 1, 2, 'c'), acc_snap(2) ],
      'id=1,status=b');
check('snapshot: CDC delete newer than the snapshot deletes, an older one does nothing', $acc,
      [ acc_snap(10, 1 => 's', 2 => 's'), acc_ev(D => 11, 1), acc_ev(D => 9, 2) ],
      'id=2,status=s');
check('snapshot: CDC upsert at exactly v for a key the snapshot lacks survives', $acc,
      [ acc_ev(U => 1, 2, 'old'), acc_snap(10, 1 => 's'), acc_ev(U => 10, 2, 'at10') ],
      'id=1,status=s', 'id=2,status=at10');
check('snapshot: CDC delete at exactly v for a key the snapshot lacks: gone', $acc,
      [ acc_ev(U => 1, 2, 'old'), acc_snap(10, 1 => 's'), acc_ev(D => 10, 2) ],
      'id=1,status=s');
check('snapshot: CDC upsert at exactly v equal to the snapshot row collapses', $acc,
      [ acc_snap(10, 1 => 's'), acc_ev(U => 10, 1, 's'), acc_ev(U => 5, 1, 'older') ],
      'id=1,status=s');
check('snapshot: composite key',
      { key_cols => [qw(k1 k2)], value_cols => [qw(a b)], partial => {} },
      [ { kind => 'upsert', seq => 1, key => [ 1, 'x' ], vals => { a => 1, b => 'p' } },
        { kind => 'upsert', seq => 5, key => [ 1, 'y' ], vals => { a => 2, b => 'q' } },
        snapshot_events({ value_cols => [qw(a b)] }, 4,
                        [ { key => [ 2, 'x' ], vals => { a => 3, b => undef } },
                          { key => [ 1, 'y' ], vals => { a => 4, b => 'r' } } ]) ],
      'k1=1,k2=y,a=2,b=q', 'k1=2,k2=x,a=3,b=NULL');
check_dies('snapshot: CDC event at exactly v with other values for a key it holds', $acc,
           [ acc_snap(10, 1 => 's'), acc_ev(U => 10, 1, 't') ], qr/two different events/);
check_dies('snapshot: CDC delete at exactly v for a key it holds', $acc,
           [ acc_snap(10, 1 => 's'), acc_ev(D => 10, 1) ], qr/two different events/);
{
    my $ok = !eval { acc_snap(10, 1 => 's', 1 => 't'); 1 } && $@ =~ /two rows for one key/;
    if ($ok) { $passed++; print "ok - snapshot: two rows for one key are refused\n" }
    else     { $failed++; print "not ok - snapshot: two rows for one key are refused (error: ", ($@ || 'none'), ")\n" }
}

# ---------------------------------------------------------------------------
# columns_to_update: each upsert lists the columns it sets (undef: all).
{
    my $l = { key_cols => ['k'], value_cols => [qw(a b)], partial => {}, listed => 1 };
    my $u = sub {
        my ($seq, $sets, %vals) = @_;
        return { kind => 'upsert', seq => $seq, key => [1], vals => \%vals, sets => $sets };
    };
    my $d = sub { return { kind => 'delete', seq => $_[0], key => [1], vals => {} } };
    my @e = ($u->(1, undef, a => 1, b => 1), $u->(2, ['a'], a => undef, b => 9));
    check('listed: U1(all) U2([a], a=NULL) writes the NULL, keeps b', $l, \@e, 'k=1,a=NULL,b=1');
    check('listed: in reverse arrival the same', $l, [ reverse @e ], 'k=1,a=NULL,b=1');
    check('listed: an empty list keeps the key live with its values', $l,
          [ @e, $u->(3, [], a => 7, b => 7) ], 'k=1,a=NULL,b=1');
    check('listed: a first event with an empty list gives NULLs', $l,
          [ $u->(1, [], a => 7, b => 7) ], 'k=1,a=NULL,b=NULL');
    check('listed: a late event supplies a column later ones did not list', $l,
          [ $u->(3, ['a'], a => 3), $u->(2, ['b', 'k'], a => 8, b => 2) ], 'k=1,a=3,b=2');
    check('listed: after a delete an unlisted column is NULL', $l,
          [ @e, $d->(3), $u->(4, ['b'], a => 5, b => 4) ], 'k=1,a=NULL,b=4');
    check('listed: events differing in unlisted values only are one', $l,
          [ $u->(1, ['a'], a => 1, b => 1), $u->(1, ['a'], a => 1, b => 2) ], 'k=1,a=1,b=NULL');
    check_scd2('listed: an unlisted column inherits; no change is absorbed', $l,
          [ @e, $u->(3, ['b'], b => 1), $u->(4, ['b'], b => 5) ],
          'k=1,a=1,b=1,[1,2)', 'k=1,a=NULL,b=1,[2,4)', 'k=1,a=NULL,b=5,[4,NULL)');
    check_scd2('listed: a late event runs on into versions that do not list it', $l,
          [ $u->(1, undef, a => 1, b => 1), $u->(3, ['a'], a => 2), $u->(2, ['b'], b => 7) ],
          'k=1,a=1,b=1,[1,2)', 'k=1,a=1,b=7,[2,3)', 'k=1,a=2,b=7,[3,NULL)');
}

# ---------------------------------------------------------------------------
# Data quality: why a row is set aside (NULL sequence first, then a NULL key
# of an upsert or delete, then a failed drop expectation; NULL passes).
{
    my $q = { key_cols => [qw(k1 k2)], drops => [ sub { defined $_[0]{a} ? $_[0]{a} > 0 : undef } ] };
    my @cases = (
        [ 'kept',                         { k1 => 1, k2 => 'x', a => 1, seq => 1 }, 'upsert', undef ],
        [ 'NULL condition passes',        { k1 => 1, k2 => 'x', a => undef, seq => 1 }, 'upsert', undef ],
        [ 'dropped',                      { k1 => 1, k2 => 'x', a => 0, seq => 1 }, 'delete', 'expectation' ],
        [ 'NULL sequence before the rest', { k1 => undef, k2 => 'x', a => 0, seq => undef }, 'upsert', 'null_sequence' ],
        [ 'one NULL key column',          { k1 => 1, k2 => undef, a => 0, seq => 1 }, 'delete', 'null_key' ],
        [ 'a truncate needs no key',      { k1 => undef, k2 => undef, a => 5, seq => 1 }, 'truncate', undef ],
        [ 'a truncate may be dropped',    { k1 => undef, k2 => undef, a => -5, seq => 1 }, 'truncate', 'expectation' ],
    );
    for my $c (@cases) {
        my ($name, $row, $kind, $want) = @$c;
        my $got = quarantine_reason($q, $row, $kind);
        if ((defined $got ? $got : 'kept') eq (defined $want ? $want : 'kept')) {
            $passed++;
            print "ok - quarantine: $name\n";
        }
        else {
            $failed++;
            print "not ok - quarantine: $name (got ", $got // 'kept', ")\n";
        }
    }
}

# ---------------------------------------------------------------------------
# Bitemporal: the reference examples (reference §4.1), times as hhmmss.
{
    my $q = { key_cols => ['co'], value_cols => ['v'], partial => {} };
    my $ev = sub {
        my ($v, $b, $s, $kind) = @_;
        return { kind => $kind // 'upsert', seq => $b, sys => $s, key => ['A'], vals => { v => $v } };
    };
    my $render = sub {
        my ($rows) = @_;
        return join "\n", sort map {
            my $r = $_;
            join ',', map { defined $r->{$_} ? $r->{$_} : 'NULL' }
                qw(v __start_at __end_at __system_start_at __system_end_at)
        } @$rows;
    };
    my @cases = (
        [ 'bitemporal: the reference example, six rows',
          [ $ev->('XFv1', 100100, 100500), $ev->('XFv2', 121543, 122000),
            $ev->('XFv3', 120500, 122500), $ev->('XFv2', 123000, 123000, 'delete') ],
          [ 'XFv1,100100,NULL,100500,122000', 'XFv1,100100,121543,122000,122500',
            'XFv1,100100,120500,122500,NULL', 'XFv3,120500,121543,122500,NULL',
            'XFv2,121543,NULL,122000,123000', 'XFv2,121543,123000,123000,NULL' ] ],
        [ 'bitemporal: the three statuses, five rows',
          [ $ev->('PENDING', 1000, 1001), $ev->('ACTIVE', 1002, 1003), $ev->('SUSPENDED', 1004, 1005) ],
          [ 'PENDING,1000,NULL,1001,1003', 'PENDING,1000,1002,1003,NULL',
            'ACTIVE,1002,NULL,1003,1005', 'ACTIVE,1002,1004,1005,NULL', 'SUSPENDED,1004,NULL,1005,NULL' ] ],
        [ 'bitemporal: a correction replaces the event it corrects',
          [ $ev->('a', 1, 10), $ev->('b', 1, 20) ],
          [ 'a,1,NULL,10,20', 'b,1,NULL,20,NULL' ] ],
        [ 'bitemporal: a correction to a delete ends the key, a later one brings it back',
          [ $ev->('a', 1, 10), $ev->('x', 1, 20, 'delete'), $ev->('c', 1, 30) ],
          [ 'a,1,NULL,10,20', 'c,1,NULL,30,NULL' ] ],
        [ 'bitemporal: a version believed again later is a new row',
          [ $ev->('a', 1, 10), $ev->('b', 1, 20), $ev->('a', 1, 30) ],
          [ 'a,1,NULL,10,20', 'b,1,NULL,20,30', 'a,1,NULL,30,NULL' ] ],
    );
    for my $c (@cases) {
        my ($name, $events, $want) = @$c;
        my $got = $render->(fold_bitemporal($q, $events));
        my $exp = join "\n", sort @$want;
        if ($got eq $exp) { $passed++; print "ok - $name\n" }
        else {
            $failed++;
            print "not ok - $name\n  expected:\n    ", join("\n    ", split /\n/, $exp),
                  "\n  got:\n    ", join("\n    ", split /\n/, $got), "\n";
        }
    }
    my $ok = !eval { fold_bitemporal($q, [ $ev->('a', 1, 10), $ev->('b', 1, 10) ]); 1 }
             && $@ =~ /two different events/;
    if ($ok) { $passed++; print "ok - bitemporal: two different events at one key, sequence and system sequence\n" }
    else     { $failed++; print "not ok - bitemporal: conflict not refused (", ($@ || 'none'), ")\n" }
}

print "model_selftest: $passed passed, $failed failed\n";
exit($failed ? 1 : 0);
