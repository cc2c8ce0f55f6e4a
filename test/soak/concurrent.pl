#!/usr/bin/perl
# Concurrency soak for autocdc: several sessions insert change rows into
# sources, in small and long transactions (some rolled back, some with a
# savepoint rolled back), while runner sessions call autocdc.run() on the
# pipelines (two at once on one pipeline sometimes, some runs inside a
# transaction that also inserts rows, some runs rolled back).  When the
# writers are done the pipelines are run until a run reads nothing, and
# every target is compared with the reference model (test/property/Model.pm)
# built from exactly the committed events.
#
#   perl test/soak/concurrent.pl [--seeds N] [--first-seed S] [--seconds S]
#        [--writers W] [--short | --soak] [--keep] [--verbose]
#
# Connection settings come from the environment (PGHOST, PGPORT, PGUSER,
# PGPASSWORD, PGDATABASE), as scripts/in-cluster.sh sets them; the
# extension must already be created in the database.
#
# Per seed (generation is deterministic from the seed; the interleaving of
# the sessions of course is not):
#   - a schema csoak_<seed> with source tables and three flows in one or two
#     pipelines: an SCD type 1 AUTO CDC flow with deletes (partial updates in
#     some seeds), an SCD type 2 flow (track history / partial updates in
#     some seeds; it reads the SCD 1 flow's source or a source of its own)
#     and an append flow;
#   - per writer a list of events: keys from a small set, so keys collide
#     across writers; sequences unique per source across the seed
#     (seq = counter * P + producer + 1, P = writers + runners), out of order
#     on purpose; exact duplicates; ~15% deletes; NULL values (more of them
#     when a flow has partial columns);
#   - writers (one psql each) insert their events in transactions: single
#     autocommitted rows, small transactions of 1-5 rows (INSERT, multi-row
#     INSERT or COPY), long ones (rows, pg_sleep 0.1-2 s, rows), rolled back
#     ones (retried later sometimes), ones with a savepoint rolled back, and
#     ones with a savepoint released; gaps between transactions spread a
#     writer over --seconds;
#   - runners (one per pipeline, plus a second on one pipeline in most
#     seeds) loop over actions, each in a fresh psql: a plain run, a run of
#     one flow only, a run inside a transaction that inserted rows of its
#     own first (the run must read them: rows_read >= those rows, and the
#     append target must show them inside the transaction) and maybe more
#     after, a run rolled back (with rows inserted before it, rolled back
#     too), a long run transaction (pg_sleep after the run: the other runner
#     is refused), two runs in one transaction, and rarely a full refresh.
#     "pipeline ... is already running" is expected and retried;
#   - at the end: the pipelines are run until a run reads nothing, then
#       * each SCD 1 / SCD 2 target must equal Model::fold / Model::fold_scd2
#         of the committed events of its source (with the flow's options),
#         and the SCD 2 history must be well formed (no overlap, one open
#         version per key);
#       * the append target must hold the multiset of committed rows;
#       * every flow's rows_read, summed over the committed runs since its
#         last full refresh (autocdc.event_log), must equal the number of
#         committed source rows: each row read exactly once;
#       * no run and no event_log row may show a failed flow (e.g. "two
#         different events", which cannot happen with unique sequences),
#         and no session may fail with an error other than "already
#         running";
#       * the sources must hold exactly the rows the test thinks committed
#         (a check of the test's own bookkeeping).
#
# Output: a line per seed, and finally "concurrent: N passed, M failed";
# the exit code is non-zero if any seed failed.  A failing seed prints what
# differs (missing / unexpected rows per target) and keeps its work
# directory (scripts and psql output) and its schema.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../property";
use Model qw(fold fold_scd2 key_string partial_columns tracked_columns);
use Getopt::Long qw(GetOptions);
use File::Temp qw(tempdir);
use File::Path qw(remove_tree);
use POSIX qw(_exit WNOHANG);
use Time::HiRes qw(time sleep);

$| = 1;

# ---------------------------------------------------------------------------
# Options

my %opt = ('first-seed' => 1, writers => 4);
my $USAGE = "usage: $0 [--seeds N] [--first-seed S] [--seconds S] [--writers W]"
          . " [--short | --soak] [--keep] [--verbose]\n";
GetOptions(\%opt, 'seeds=i', 'first-seed=i', 'seconds=f', 'writers=i', 'short', 'soak',
           'keep', 'verbose', 'help')
    or die $USAGE;
if ($opt{help}) { print $USAGE; exit 0 }
die "--short and --soak do not go together\n" if $opt{short} && $opt{soak};
my $n_seeds = $opt{seeds}   // ($opt{short} ? 2 : $opt{soak} ? 20 : 3);
my $seconds = $opt{seconds} // ($opt{short} ? 6 : $opt{soak} ? 30 : 10);
my $W       = $opt{writers};
die "--writers must be >= 1\n"   if $W < 1;
die "--seconds must be > 0\n"    if $seconds <= 0;
die "--seeds must be >= 1\n"     if $n_seeds < 1;
die "--first-seed must be >= 0\n" if $opt{'first-seed'} < 0;

my @PSQL = ('psql', '-X', '-q', '-A', '-t', '-F', '|', '-v', 'ON_ERROR_STOP=1');
my $HEADER = join "\n", '\set ON_ERROR_STOP 1', q{\pset null '\\\\N'},
                        'SET client_min_messages = warning;',
                        "SET statement_timeout = '120s';", "SET lock_timeout = '60s';", '', '';

my $topdir = tempdir('autocdc-concurrent-XXXXXX', TMPDIR => 1, CLEANUP => 0);

# ---------------------------------------------------------------------------
# Small helpers

sub pick { return $_[ int(rand(@_)) ] }

sub shuffle_in_place {
    my ($list) = @_;
    for (my $i = $#$list; $i > 0; $i--) {
        my $j = int(rand($i + 1));
        @$list[ $i, $j ] = @$list[ $j, $i ];
    }
}

sub slurp {
    my ($file) = @_;
    open(my $fh, '<', $file) or return '';
    local $/;
    my $s = <$fh>;
    return $s // '';
}

sub spew {
    my ($file, $text) = @_;
    open(my $fh, '>', $file) or die "$file: $!\n";
    print $fh $text;
    close($fh) or die "$file: $!\n";
}

sub sql_literal {
    my ($v) = @_;
    return 'NULL' unless defined $v;
    (my $q = $v) =~ s/'/''/g;
    return "'$q'";
}

sub sql_array { return 'ARRAY[' . join(', ', map { sql_literal($_) } @{ $_[0] }) . ']::text[]' }

# Column types.  CDC sources: key k int or (k1 int, k2 text); values a int,
# b text, c int (c in some seeds); op text, seq int.  Append source: w int
# (producer), n int (its counter), note text, v int.
my %TYPE = (k => 'int', k1 => 'int', k2 => 'text', a => 'int', b => 'text', c => 'int',
            op => 'text', seq => 'int', w => 'int', n => 'int', note => 'text', v => 'int');

# Text values: '' to tell an empty string from NULL, a quote and a space for
# quoting.  None holds '|', a tab, a newline or a backslash (output format).
my @WORDS = ('alpha', 'beta', 'gamma', 'delta', 'Oaxaca', 'Tijuana', '', "O'Brien",
             'two words', 'zeta');

sub random_value {
    my ($col) = @_;
    return $TYPE{$col} eq 'int' ? int(rand(120)) - 20 : pick(@WORDS);
}

sub sql_value {
    my ($col, $v) = @_;
    return 'NULL' unless defined $v;
    return $TYPE{$col} eq 'int' ? $v : sql_literal($v);
}

# A value in COPY text format (no value needs escaping but NULL).
sub copy_value { return defined $_[0] ? $_[0] : '\N' }

# Run a psql script; returns { rc, out, err }.
sub run_psql {
    my ($dir, $tag, $sql) = @_;
    my ($f, $o, $e) = map { "$dir/$tag.$_" } qw(sql out err);
    spew($f, $HEADER . $sql);
    my $pid = start_psql($f, $o, $e);
    waitpid($pid, 0);
    my $rc = $? >> 8;
    return { rc => $rc, out => slurp($o), err => slurp($e) };
}

sub start_psql {
    my ($sql_file, $out_file, $err_file) = @_;
    my $pid = fork() // die "fork: $!\n";
    if ($pid == 0) {
        open(STDIN,  '<', '/dev/null') or _exit(120);
        open(STDOUT, '>', $out_file)   or _exit(121);
        open(STDERR, '>', $err_file)   or _exit(122);
        exec(@PSQL, '-f', $sql_file) or _exit(123);
    }
    return $pid;
}

# Lines of psql output starting with "@@<marker>|", split into fields.
sub marked {
    my ($out, $marker) = @_;
    my @rows;
    for my $line (split /\n/, $out) {
        next unless $line =~ /^\@\@\Q$marker\E\|/;
        my (undef, @f) = split /\|/, $line, -1;
        push @rows, \@f;
    }
    return @rows;
}

# ---------------------------------------------------------------------------
# Case generation (deterministic from the seed)

# The event a CDC row stands for: delete if op = 'D', else upsert.
sub row_to_event {
    my ($stream, $row) = @_;
    my $op = $row->{op};
    return {
        kind => (defined $op && $op eq 'D') ? 'delete' : 'upsert',
        seq  => $row->{seq},
        key  => [ map { $row->{$_} } @{ $stream->{key_cols} } ],
        vals => { map { $_ => $row->{$_} } @{ $stream->{value_cols} } },
    };
}

sub generate_case {
    my ($seed) = @_;
    srand($seed);
    my $schema = "csoak_$seed";
    my %case = (seed => $seed, schema => $schema);

    my $composite = rand() < 0.25;
    my @key_cols   = $composite ? qw(k1 k2) : ('k');
    my @value_cols = ('a', 'b', (rand() < 0.5 ? ('c') : ()));
    my $shared     = rand() < 0.5;         # the SCD 2 flow reads the SCD 1 flow's source
    my $two_pipes  = rand() < 0.5;
    my @pipes      = ("cs${seed}_a", ($two_pipes ? ("cs${seed}_b") : ()));

    # SCD 1 flow options: partial updates in some seeds.
    my %o1;
    my $r = int(rand(4));
    if    ($r == 1) { $o1{ignore_null_updates} = 1 }
    elsif ($r == 2) {
        my @c = @value_cols;
        shuffle_in_place(\@c);
        $o1{ignore_null_updates_column_list} = [ sort @c[ 0 .. int(rand(@c - 1)) ] ];
    }
    elsif ($r == 3) { $o1{ignore_null_updates_except_column_list} = [ pick(@value_cols) ] }

    # SCD 2 flow options: track history in some seeds, partial updates in some.
    my %o2;
    $r = int(rand(3));
    if ($r > 0) {
        my @c = @value_cols;
        shuffle_in_place(\@c);
        my @sub = sort @c[ 0 .. int(rand(@c - 1)) ];
        if ($r == 1) { $o2{track_history_column_list} = \@sub }
        else         { $o2{track_history_except_column_list} = \@sub }
    }
    $o2{ignore_null_updates} = 1 if rand() < 0.3;

    # Sources (streams of events).
    my %streams;
    my $new_keys = sub {
        my ($n) = @_;
        my (@keys, %used);
        while (@keys < $n) {
            my $key = $composite ? [ 1 + int(rand(3)), pick(qw(x y), 'w v', "q'r") ]
                                 : [ int(rand(100)) - 10 ];
            next if $used{ key_string($key) }++;
            push @keys, $key;
        }
        return \@keys;
    };
    $streams{cdc1} = { name => 'cdc1', table => 'src1', kind => 'cdc',
                       key_cols => \@key_cols, value_cols => \@value_cols,
                       keys => $new_keys->(4 + int(rand(7))) };                   # 4..10 keys
    $streams{cdc2} = { name => 'cdc2', table => 'src2', kind => 'cdc',
                       key_cols => \@key_cols, value_cols => \@value_cols,
                       keys => $new_keys->(3 + int(rand(5))) }                    # 3..7 keys
        unless $shared;
    $streams{app}  = { name => 'app', table => 'src_app', kind => 'append',
                       cols => [qw(w n note v)] };
    for my $s (values %streams) {
        my @cols = $s->{kind} eq 'cdc' ? (@key_cols, @value_cols, 'op', 'seq') : @{ $s->{cols} };
        shuffle_in_place(\@cols) if rand() < 0.3;    # the engine goes by name
        $s->{src_cols} = \@cols;
    }

    # Flows.
    my @flows = (
        { name => "cs${seed}_scd1", kind => 'scd1', stream => 'cdc1', target => 'tgt_scd1',
          pipeline => $pipes[0], opts => \%o1 },
        { name => "cs${seed}_scd2", kind => 'scd2', stream => $shared ? 'cdc1' : 'cdc2',
          target => 'tgt_scd2', pipeline => $pipes[-1], opts => \%o2 },
        { name => "cs${seed}_app", kind => 'append', stream => 'app', target => 'tgt_app',
          pipeline => pick(@pipes), opts => {} },
    );
    for my $f (@flows) {
        next if $f->{kind} eq 'append';
        $f->{partial} = partial_columns(\@value_cols, $f->{opts});
        $f->{tracked} = tracked_columns(\@value_cols, $f->{opts}) if $f->{kind} eq 'scd2';
    }
    # How often a value is NULL in a stream: more when a reader has partial columns.
    for my $s (grep { $_->{kind} eq 'cdc' } values %streams) {
        my $partial = grep { $_->{stream} eq $s->{name} && %{ $_->{partial} } } @flows;
        $s->{p_null} = $partial ? 0.3 : 0.08;
    }
    $case{streams} = \%streams;
    $case{flows}   = \@flows;
    $case{pipes}   = \@pipes;
    $case{shared}  = $shared;

    # Runners: one per pipeline, plus a second one on some pipeline in most seeds.
    my @runners = map { { pipeline => $_ } } @pipes;
    push @runners, { pipeline => pick(@pipes) } if rand() < 0.7;
    $case{runners} = \@runners;
    my $P = $W + @runners;    # producers: writers, then runners
    $case{producers} = $P;

    # Event generation.  Every event gets a unique id; a CDC event's sequence
    # is counter * P + producer + 1, unique in its stream.
    my @stream_mix = $shared ? (('cdc1') x 13, ('app') x 7)
                             : (('cdc1') x 10, ('cdc2') x 5, ('app') x 5);
    my %counter;         # "stream|producer" => next counter
    my %upserts_of;      # "stream|key" => [ values of earlier upserts ]
    my $next_id = 0;
    my @events;          # id => { id, stream, row, producer }
    my $make_event = sub {
        my ($p, $sname) = @_;
        my $s = $streams{$sname};
        my $c = $counter{"$sname|$p"}++;
        my %row;
        if ($s->{kind} eq 'append') {
            %row = (w => $p, n => $c, note => rand() < 0.15 ? undef : pick(@WORDS),
                    v => rand() < 0.15 ? undef : random_value('v'));
        }
        else {
            my $key = pick(@{ $s->{keys} });
            @row{ @key_cols } = @$key;
            $row{seq} = $c * $P + $p + 1;
            if (rand() < 0.15) {
                $row{op} = 'D';
                my $with_values = rand() < 0.5;    # a delete's values are ignored
                $row{$_} = $with_values && rand() > 0.2 ? random_value($_) : undef for @value_cols;
            }
            else {
                my $x = rand();
                $row{op} = $x < 0.1 ? undef : $x < 0.55 ? 'I' : 'U';    # NULL op = upsert
                my $earlier = $upserts_of{ "$sname|" . key_string($key) } ||= [];
                if (@$earlier && rand() < 0.5) {
                    # Often an earlier upsert of the key with a column or two
                    # changed: no-op and untracked-only updates for SCD 2.
                    my $base = pick(@$earlier);
                    for my $col (@value_cols) {
                        $row{$col} = rand() >= 0.3 ? $base->{$col}
                                   : rand() < $s->{p_null} ? undef : random_value($col);
                    }
                }
                else {
                    $row{$_} = rand() < $s->{p_null} ? undef : random_value($_) for @value_cols;
                }
                push @$earlier, { map { $_ => $row{$_} } @value_cols };
            }
        }
        my $ev = { id => $next_id++, stream => $sname, row => \%row, producer => $p };
        push @events, $ev;
        return $ev;
    };

    # Writers' events, generated round-robin (so key histories interleave
    # across writers), then put out of order per writer.
    my $per_writer = int($seconds * 10) < 20 ? 20 : int($seconds * 10);
    my @wlist = map { [] } 1 .. $W;
    for my $i (0 .. $per_writer * $W - 1) {
        my $w = $i % $W;
        push @{ $wlist[$w] }, $make_event->($w, pick(@stream_mix));
    }
    for my $w (0 .. $W - 1) {
        my $window = 1 + int(rand(20));
        my $n = @{ $wlist[$w] };
        my %pos;
        my $i = 0;
        for my $ev (@{ $wlist[$w] }) {
            $pos{ $ev->{id} } = $i++ + rand($window) + (rand() < 0.07 ? rand($n) : 0);
        }
        $wlist[$w] = [ sort { $pos{ $a->{id} } <=> $pos{ $b->{id} } } @{ $wlist[$w] } ];
    }
    # Exact duplicates (~8%): the same row again, in some writer's list.
    for my $ev (grep { rand() < 0.08 } map { @$_ } @wlist) {
        my $list = $wlist[ int(rand($W)) ];
        my $at = int(rand(@$list + 1));
        splice(@$list, $at, 0, { %$ev, id => $next_id++, dup_of => $ev->{id} });
        $events[ $next_id - 1 ] = $list->[$at];
    }

    # Writers' transactions.
    my @writers;
    for my $w (0 .. $W - 1) {
        my @queue = @{ $wlist[$w] };
        my @txs;
        while (@queue) {
            my $x = rand();
            my $take = sub { my $n = shift; return splice(@queue, 0, $n < @queue ? $n : scalar @queue) };
            my %tx;
            if ($x < 0.30) {
                %tx = (kind => 'auto', parts => [ [ 'rows', [ $take->(1) ] ] ]);
            }
            elsif ($x < 0.62) {
                %tx = (kind => 'small', parts => [ [ 'rows', [ $take->(1 + int(rand(5))) ] ] ]);
            }
            elsif ($x < 0.74) {
                %tx = (kind => 'long', parts => [ [ 'rows', [ $take->(1 + int(rand(6))) ] ],
                                                  [ 'sleep', 0.1 + int(rand(20)) / 10 ],
                                                  [ 'rows', [ $take->(int(rand(7))) ] ] ]);
            }
            elsif ($x < 0.84) {
                my @rows = $take->(1 + int(rand(5)));
                %tx = (kind => 'rollback', parts => [ [ 'rows', \@rows ],
                                                      (rand() < 0.4 ? ([ 'sleep', int(rand(6)) / 10 ]) : ()) ]);
                # Retried later sometimes: the same rows, which then commit.
                if (rand() < 0.5) {
                    my $at = int(rand(@queue + 1));
                    splice(@queue, $at, 0, map { { %$_, id => $next_id++, retry_of => $_->{id} } } @rows);
                    $events[ $queue[$_]{id} ] = $queue[$_] for $at .. $at + $#rows;
                }
            }
            elsif ($x < 0.94) {
                %tx = (kind => 'savepoint_rollback',
                       parts => [ [ 'rows', [ $take->(1 + int(rand(3))) ] ], [ 'savepoint' ],
                                  [ 'rows', [ $take->(1 + int(rand(3))) ] ], [ 'rollback_to' ],
                                  [ 'rows', [ $take->(int(rand(4))) ] ] ]);
            }
            else {
                %tx = (kind => 'savepoint_release',
                       parts => [ [ 'rows', [ $take->(int(rand(3))) ] ], [ 'savepoint' ],
                                  [ 'rows', [ $take->(1 + int(rand(3))) ] ], [ 'release' ],
                                  [ 'rows', [ $take->(int(rand(3))) ] ] ]);
            }
            # How rows are inserted: one INSERT per row, a multi-row INSERT
            # per table, or COPY per table.
            $tx{style} = $tx{kind} eq 'auto' ? 'insert' : pick(('insert') x 5, ('multi') x 3, 'copy');
            push @txs, \%tx;
        }
        # Which events commit: all rows of committed transactions, except
        # those between a savepoint and a rollback to it.
        for my $tx (@txs) {
            my $in_rolled_back = 0;
            my @committed;
            my $has_rb = grep { $_->[0] eq 'rollback_to' } @{ $tx->{parts} };
            for my $part (@{ $tx->{parts} }) {
                if ($part->[0] eq 'savepoint')   { $in_rolled_back = $has_rb; next }
                if ($part->[0] eq 'rollback_to') { $in_rolled_back = 0; next }
                next unless $part->[0] eq 'rows';
                push @committed, @{ $part->[1] } unless $in_rolled_back || $tx->{kind} eq 'rollback';
            }
            $tx->{committed} = [ map { $_->{id} } @committed ];
            $tx->{sleep} = 0;
            $tx->{sleep} += $_->[1] for grep { $_->[0] eq 'sleep' } @{ $tx->{parts} };
        }
        # Gaps between transactions, spreading the writer over --seconds.
        my $busy = 0;
        $busy += $_->{sleep} for @txs;
        my $spare = $seconds - $busy - 0.01 * @txs;
        my $gap = $spare > 0 ? $spare / @txs : 0;
        $_->{gap} = sprintf('%.3f', $gap * (0.5 + rand())) for @txs;
        push @writers, { id => $w, txs => \@txs };
    }
    $case{writers} = \@writers;

    # Runners' own rows: a pool each (consumed in order, as their
    # transactions need them; which of them commit is known only at the end).
    for my $i (0 .. $#runners) {
        my $p = $W + $i;
        my @flows_of_pipe = grep { $_->{pipeline} eq $runners[$i]{pipeline} } @flows;
        my @mix = map { $_->{stream} } @flows_of_pipe;
        $runners[$i]{id}   = $p;
        $runners[$i]{pool} = [ map { $make_event->($p, pick(@mix)) } 1 .. int($seconds * 10) + 40 ];
        $runners[$i]{seed} = $seed * 1000 + $i;
    }
    $case{events} = \@events;
    return \%case;
}

# ---------------------------------------------------------------------------
# SQL

sub insert_sql {
    my ($case, $style, $rows) = @_;
    my @sql;
    my $schema = $case->{schema};
    if ($style eq 'insert') {
        for my $ev (@$rows) {
            my $s = $case->{streams}{ $ev->{stream} };
            my @cols = @{ $s->{src_cols} };
            push @sql, "INSERT INTO $schema.$s->{table} (" . join(', ', @cols) . ') VALUES ('
                     . join(', ', map { sql_value($_, $ev->{row}{$_}) } @cols) . ');';
        }
        return @sql;
    }
    # Per table, in order of first appearance.
    my (@order, %by);
    for my $ev (@$rows) {
        push @order, $ev->{stream} unless $by{ $ev->{stream} };
        push @{ $by{ $ev->{stream} } }, $ev;
    }
    for my $sname (@order) {
        my $s = $case->{streams}{$sname};
        my @cols = @{ $s->{src_cols} };
        if ($style eq 'multi') {
            push @sql, "INSERT INTO $schema.$s->{table} (" . join(', ', @cols) . ") VALUES\n  "
                     . join(",\n  ", map { my $ev = $_;
                                           '(' . join(', ', map { sql_value($_, $ev->{row}{$_}) } @cols) . ')' }
                                     @{ $by{$sname} }) . ';';
        }
        else {
            push @sql, "COPY $schema.$s->{table} (" . join(', ', @cols) . ') FROM STDIN;',
                       (map { my $ev = $_; join("\t", map { copy_value($ev->{row}{$_}) } @cols) } @{ $by{$sname} }),
                       '\.';
        }
    }
    return @sql;
}

sub setup_sql {
    my ($case) = @_;
    my $schema = $case->{schema};
    my @sql = ("DROP SCHEMA IF EXISTS $schema CASCADE;");
    my $names = join ', ', map { sql_literal($_->{name}) } @{ $case->{flows} };
    push @sql, "SELECT autocdc.drop_flow(name) FROM autocdc.flows WHERE name IN ($names);",
               "CREATE SCHEMA $schema;";
    for my $s (sort { $a->{name} cmp $b->{name} } values %{ $case->{streams} }) {
        push @sql, "CREATE TABLE $schema.$s->{table} ("
                 . join(', ', map { "$_ $TYPE{$_}" } @{ $s->{src_cols} }) . ');';
    }
    for my $f (@{ $case->{flows} }) {
        my $s = $case->{streams}{ $f->{stream} };
        my @args = ("target => '$schema.$f->{target}'", "source => '$schema.$s->{table}'::regclass");
        if ($f->{kind} eq 'append') {
            push @args, "name => '$f->{name}'", "pipeline => '$f->{pipeline}'";
            push @sql, "SELECT autocdc.create_append_flow(" . join(', ', @args) . ');';
            next;
        }
        push @args, 'keys => ' . sql_array($s->{key_cols}), "sequence_by => 'seq'",
                    "apply_as_deletes => 'op = ''D'''",
                    "except_column_list => ARRAY['op', 'seq']::text[]";
        push @args, 'stored_as_scd_type => 2' if $f->{kind} eq 'scd2';
        push @args, 'ignore_null_updates => true' if $f->{opts}{ignore_null_updates};
        for my $o (qw(ignore_null_updates_column_list ignore_null_updates_except_column_list
                      track_history_column_list track_history_except_column_list)) {
            push @args, "$o => " . sql_array($f->{opts}{$o}) if $f->{opts}{$o};
        }
        push @args, "name => '$f->{name}'", "pipeline => '$f->{pipeline}'";
        push @sql, "SELECT autocdc.create_auto_cdc_flow(\n    " . join(",\n    ", @args) . ');';
    }
    push @sql, "SELECT '\@\@LOGID', coalesce(max(id), 0) FROM autocdc.event_log;";
    return join("\n", @sql) . "\n";
}

sub writer_sql {
    my ($case, $writer) = @_;
    my @sql = ("SET application_name = 'csoak_writer_$writer->{id}';", '\echo @@START');
    my $n = 0;
    for my $tx (@{ $writer->{txs} }) {
        $n++;
        push @sql, "SELECT pg_sleep($tx->{gap});" if $tx->{gap} > 0;
        if ($tx->{kind} eq 'auto') {
            push @sql, insert_sql($case, 'insert', $tx->{parts}[0][1]);
        }
        else {
            push @sql, 'BEGIN;';
            for my $part (@{ $tx->{parts} }) {
                my ($what, $arg) = @$part;
                if    ($what eq 'rows')        { push @sql, insert_sql($case, $tx->{style}, $arg) }
                elsif ($what eq 'sleep')       { push @sql, "SELECT pg_sleep($arg);" }
                elsif ($what eq 'savepoint')   { push @sql, 'SAVEPOINT sp;' }
                elsif ($what eq 'rollback_to') { push @sql, 'ROLLBACK TO SAVEPOINT sp;' }
                elsif ($what eq 'release')     { push @sql, 'RELEASE SAVEPOINT sp;' }
            }
            push @sql, $tx->{kind} eq 'rollback' ? 'ROLLBACK;' : 'COMMIT;';
        }
        push @sql, "\\echo \@\@TX|$n";
    }
    push @sql, '\echo @@DONE';
    return join("\n", @sql) . "\n";
}

sub run_select {
    my ($pipeline, $extra) = @_;
    $extra = $extra ? ", $extra" : '';
    return "SELECT '\@\@RUN', flow, status, rows_read, rows_upserted, rows_deleted, rows_skipped"
         . " FROM autocdc.run('$pipeline'$extra);";
}

# ---------------------------------------------------------------------------
# Runner (a child process): actions in a loop until the stop file appears.
# Writes a log, one line per action:
#   ACT|<n>|<kind>|<outcome>|<committed ids, comma-separated>|<runs>|<problem>...
# outcome: ok, refused, rolledback, error.

sub runner_main {
    my ($case, $r, $dir, $stopfile, $deadline) = @_;
    my $runner = $case->{runners}[$r];
    srand($runner->{seed} ^ ($$ << 8));    # choices vary; the pool does not
    my $pipe   = $runner->{pipeline};
    my @flows  = grep { $_->{pipeline} eq $pipe } @{ $case->{flows} };
    my @pool   = @{ $runner->{pool} };
    my $schema = $case->{schema};
    my $child;
    local $SIG{TERM} = sub { kill 'TERM', $child if $child; _exit(1) };
    open(my $log, '>', "$dir/runner$r.log") or _exit(2);
    select((select($log), $| = 1)[0]);
    my $n = 0;
    while (!-e $stopfile && time() < $deadline) {
        $n++;
        my $x = rand();
        my ($kind, @sql);
        my (@before, @after);    # own rows inserted before / after the run
        my $take = sub { my $k = shift; return splice(@pool, 0, $k < @pool ? $k : scalar @pool) };
        if ($x < 0.42) {
            $kind = 'plain';
            @sql = (run_select($pipe));
        }
        elsif ($x < 0.47) {
            $kind = 'one_flow';
            @sql = (run_select($pipe, 'flows => ARRAY[' . sql_literal(pick(@flows)->{name}) . ']'));
        }
        elsif ($x < 0.67) {
            $kind = 'tx_insert';
            @before = $take->(1 + int(rand(4)));
            @after  = rand() < 0.5 ? $take->(1 + int(rand(3))) : ();
            @sql = ('BEGIN;', insert_sql($case, pick('insert', 'multi'), \@before), run_select($pipe));
            my @app = grep { $_->{stream} eq 'app' } @before;
            my ($app_flow) = grep { $_->{kind} eq 'append' } @flows;
            if (@app && $app_flow) {
                push @sql, "SELECT '\@\@OWN', count(*) FROM $schema.$app_flow->{target} WHERE w = $runner->{id}"
                         . ' AND n IN (' . join(', ', map { $_->{row}{n} } @app) . ');';
            }
            push @sql, 'SELECT pg_sleep(' . (int(rand(5)) / 10) . ');' if rand() < 0.4;
            push @sql, insert_sql($case, 'insert', \@after), 'COMMIT;', '\echo @@COMMIT';
        }
        elsif ($x < 0.79) {
            $kind = 'rolled_back_run';
            @before = rand() < 0.5 ? $take->(1 + int(rand(3))) : ();
            @sql = ('BEGIN;', insert_sql($case, 'insert', \@before), run_select($pipe),
                    (rand() < 0.3 ? ('SELECT pg_sleep(' . (int(rand(4)) / 10) . ');') : ()),
                    'ROLLBACK;', '\echo @@ROLLBACK');
        }
        elsif ($x < 0.89) {
            $kind = 'long_run';
            @sql = ('BEGIN;', run_select($pipe), 'SELECT pg_sleep(' . (0.2 + int(rand(9)) / 10) . ');',
                    'COMMIT;', '\echo @@COMMIT');
        }
        elsif ($x < 0.975) {
            $kind = 'two_runs';
            @sql = ('BEGIN;', run_select($pipe), 'SELECT pg_sleep(' . (0.1 + int(rand(4)) / 10) . ');',
                    run_select($pipe), 'COMMIT;', '\echo @@COMMIT');
        }
        else {
            $kind = 'full_refresh';
            @sql = (run_select($pipe, 'full_refresh => true'));
        }
        my $f = "$dir/runner$r.sql";
        spew($f, $HEADER . "SET application_name = 'csoak_runner_$r';\n" . join("\n", @sql) . "\n");
        $child = start_psql($f, "$dir/runner$r.out", "$dir/runner$r.err");
        waitpid($child, 0);
        my $rc = $? >> 8;
        $child = undef;
        my $out = slurp("$dir/runner$r.out");
        my $err = slurp("$dir/runner$r.err");
        my @runs = marked($out, 'RUN');
        my @problems;
        my $outcome;
        if ($rc == 0) {
            $outcome = $kind eq 'rolled_back_run' ? 'rolledback' : 'ok';
            push @problems, "psql printed no \@\@COMMIT" if $out !~ /^\@\@COMMIT$/m && grep { $_ eq 'COMMIT;' } @sql;
        }
        elsif ($err =~ /pipeline "[^"]*" is already running/) {
            $outcome = 'refused';
        }
        else {
            $outcome = 'error';
            (my $e = $err) =~ s/\s+/ /g;
            push @problems, "$kind: psql exited $rc: $e";
        }
        for my $run (@runs) {
            my ($flow, $status) = @$run;
            next if $status eq 'success';
            (my $e = $err) =~ s/\s+/ /g;
            push @problems, "$kind: flow $flow status $status (" . ($outcome eq 'ok' ? 'committed' : $outcome)
                          . "): $e";
        }
        my @committed = $outcome eq 'ok' ? (@before, @after) : ();
        if ($kind eq 'tx_insert' && $outcome eq 'ok') {
            # The run must read the rows its transaction inserted before it.
            my %n_before;
            $n_before{ $_->{stream} }++ for @before;
            my %read = map { $_->[0] => $_->[2] } @runs;
            for my $fl (@flows) {
                my $want = $n_before{ $fl->{stream} } or next;
                my $got = $read{ $fl->{name} };
                push @problems, "tx_insert: flow $fl->{name} read " . ($got // 'nothing')
                              . " rows, but its transaction had inserted $want before the run"
                    if !defined $got || $got < $want;
            }
            my @app = grep { $_->{stream} eq 'app' } @before;
            my ($own) = marked($out, 'OWN');
            push @problems, 'tx_insert: the append target shows ' . ($own ? $own->[0] : '?') . ' of the '
                          . scalar(@app) . ' rows inserted before the run in its own transaction'
                if @app && (grep { $_->{kind} eq 'append' } @flows) && (!$own || $own->[0] != @app);
        }
        my $runs_text = join ';', map { "$_->[0]:$_->[1]:$_->[2]" } @runs;
        print $log join('|', 'ACT', $n, $kind, $outcome, join(',', map { $_->{id} } @committed),
                        $runs_text, map { s/\|/!/gr } @problems), "\n";
        sleep(rand(0.15));
    }
    close($log);
    _exit(0);
}

# ---------------------------------------------------------------------------
# One seed

sub wait_all {
    my ($pids, $deadline) = @_;    # pid => status (undef while running)
    while (grep { !defined $pids->{$_} } keys %$pids) {
        for my $pid (grep { !defined $pids->{$_} } keys %$pids) {
            my $got = waitpid($pid, WNOHANG);
            $pids->{$pid} = $? >> 8 if $got == $pid;
        }
        last if time() > $deadline;
        sleep(0.05);
    }
    return !grep { !defined $pids->{$_} } keys %$pids;
}

sub lines_diff {
    my ($expected, $actual) = @_;
    my (%count);
    $count{$_}++ for @$expected;
    $count{$_}-- for @$actual;
    my (@missing, @unexpected);
    for my $l (sort keys %count) {
        push @missing,    ($l) x $count{$l}    if $count{$l} > 0;
        push @unexpected, ($l) x -$count{$l}   if $count{$l} < 0;
    }
    return (\@missing, \@unexpected);
}

sub show_lines {
    my ($label, $lines) = @_;
    return () unless @$lines;
    my @show = @$lines > 25 ? (@$lines[ 0 .. 24 ], '... (' . (@$lines - 25) . ' more)') : @$lines;
    return ("  $label (" . scalar(@$lines) . '):', map { "    $_" } @show);
}

# SCD 2 history on its own: per key no overlap, start < end, one open version.
sub scd2_integrity {
    my ($nk, $lines) = @_;
    my (%versions_of, @bad);
    for my $line (@$lines) {
        my @f = split /\|/, $line, -1;
        my ($start, $end) = @f[ -2, -1 ];
        my $k = join '|', @f[ 0 .. $nk - 1 ];
        push @{ $versions_of{$k} }, { start => $start, end => $end eq '\N' ? undef : $end };
    }
    for my $k (sort keys %versions_of) {
        my @v = sort { $a->{start} <=> $b->{start} } @{ $versions_of{$k} };
        my $open = grep { !defined $_->{end} } @v;
        push @bad, "key ($k): $open open versions" if $open > 1;
        for my $i (0 .. $#v) {
            my $v = $v[$i];
            push @bad, "key ($k): version [$v->{start},$v->{end}) does not have start < end"
                if defined $v->{end} && !($v->{start} < $v->{end});
            next if $i == $#v;
            my $next = $v[ $i + 1 ];
            push @bad, "key ($k): version [$v->{start}," . ($v->{end} // 'NULL') . ") overlaps the next,"
                     . " starting at $next->{start}"
                if !defined $v->{end} || $v->{end} > $next->{start};
        }
    }
    return @bad;
}

sub run_seed {
    my ($seed) = @_;
    my $t0 = time();
    my $case = generate_case($seed);
    my $dir = "$topdir/seed$seed";
    mkdir $dir or die "$dir: $!\n";
    my $schema = $case->{schema};
    my @problems;

    # Setup.
    my $res = run_psql($dir, 'setup', setup_sql($case));
    my ($logid) = marked($res->{out}, 'LOGID');
    if ($res->{rc} != 0 || !$logid) {
        return { ok => 0, dir => $dir, problems => ["setup failed:\n$res->{err}"], t => time() - $t0 };
    }
    $logid = $logid->[0];

    # Writers and runners.
    my %wpid;    # pid => writer index
    for my $w (@{ $case->{writers} }) {
        my $f = "$dir/writer$w->{id}.sql";
        spew($f, $HEADER . writer_sql($case, $w));
        my $pid = start_psql($f, "$dir/writer$w->{id}.out", "$dir/writer$w->{id}.err");
        $wpid{$pid} = $w->{id};
    }
    my $stopfile = "$dir/stop";
    my $hard = time() + $seconds * 4 + 120;
    my %rpid;
    for my $r (0 .. $#{ $case->{runners} }) {
        my $pid = fork() // die "fork: $!\n";
        if ($pid == 0) { runner_main($case, $r, $dir, $stopfile, $hard) }
        $rpid{$pid} = $r;
    }
    my %wstat = map { $_ => undef } keys %wpid;
    wait_all(\%wstat, $hard);
    my $t_writers = time() - $t0;
    spew($stopfile, "stop\n");
    my %rstat = map { $_ => undef } keys %rpid;
    wait_all(\%rstat, time() + 150);
    for my $pid (grep { !defined $wstat{$_} } keys %wstat) {
        push @problems, "writer $wpid{$pid} did not finish in time: killed";
        kill 'TERM', $pid;
        waitpid($pid, 0);
    }
    for my $pid (grep { !defined $rstat{$_} } keys %rstat) {
        push @problems, "runner $rpid{$pid} did not stop in time: killed";
        kill 'TERM', $pid;
        waitpid($pid, 0);
    }

    # Committed events: the writers' plans (each writer must have gone
    # through all its transactions) and the runners' logs.
    my %committed;    # event id => 1
    my %wstats = (tx => 0, rolled_back => 0, sp_rolled_back => 0);
    for my $w (@{ $case->{writers} }) {
        my ($pid) = grep { $wpid{$_} == $w->{id} } keys %wpid;
        my $out = slurp("$dir/writer$w->{id}.out");
        my $n_tx = () = $out =~ /^\@\@TX\|/mg;
        if (($wstat{$pid} // -1) != 0 || $out !~ /^\@\@DONE$/m) {
            (my $e = slurp("$dir/writer$w->{id}.err")) =~ s/\s+$//;
            push @problems, "writer $w->{id} failed after $n_tx of " . scalar(@{ $w->{txs} })
                          . " transactions (exit " . ($wstat{$pid} // 'none') . "): $e";
            next;
        }
        for my $tx (@{ $w->{txs} }) {
            $committed{$_} = 1 for @{ $tx->{committed} };
            $wstats{tx}++;
            $wstats{rolled_back}++    if $tx->{kind} eq 'rollback';
            $wstats{sp_rolled_back}++ if $tx->{kind} eq 'savepoint_rollback';
        }
    }
    my %rstats;
    my $full_refreshes = 0;
    for my $r (0 .. $#{ $case->{runners} }) {
        for my $line (split /\n/, slurp("$dir/runner$r.log")) {
            my (undef, $n, $kind, $outcome, $ids, $runs, @probs) = split /\|/, $line, -1;
            $rstats{actions}++;
            $rstats{$outcome}++;
            $rstats{"kind_$kind"}++;
            $full_refreshes++ if $kind eq 'full_refresh' && $outcome eq 'ok';
            $committed{$_} = 1 for grep { length } split /,/, $ids;
            push @problems, map { "runner $r action $n: $_" } @probs;
        }
    }

    # Drain: run every pipeline until a run reads nothing.
    for my $pipe (@{ $case->{pipes} }) {
        my $drained = 0;
        for my $i (1 .. 30) {
            my $d = run_psql($dir, "drain_$pipe", run_select($pipe));
            if ($d->{rc} != 0) {
                push @problems, "drain run $i of $pipe failed: $d->{err}";
                last;
            }
            my @runs = marked($d->{out}, 'RUN');
            push @problems, map { "drain run $i of $pipe: flow $_->[0] status $_->[1]: $d->{err}" }
                            grep { $_->[1] ne 'success' } @runs;
            if (!grep { $_->[2] != 0 } @runs) { $drained = 1; last }
        }
        push @problems, "pipeline $pipe still read rows after 30 drain runs" unless $drained;
    }

    # What the database holds.
    my @q;
    my %streams = %{ $case->{streams} };
    for my $s (sort keys %streams) {
        push @q, "SELECT '\@\@SRC', '$s', " . join(', ', source_cols($streams{$s}))
               . " FROM $schema.$streams{$s}{table};";
    }
    for my $f (@{ $case->{flows} }) {
        push @q, "SELECT '\@\@TGT', '$f->{name}', " . join(', ', target_cols($case, $f))
               . " FROM $schema.$f->{target};";
    }
    my $pipes = join ', ', map { sql_literal($_) } @{ $case->{pipes} };
    push @q, "SELECT '\@\@LOG', id, flow, status, full_refresh, rows_read, replace(coalesce(error, ''), E'\\n', ' ')"
           . " FROM autocdc.event_log WHERE id > $logid AND pipeline IN ($pipes) ORDER BY id;";
    my $db = run_psql($dir, 'final', join("\n", @q) . "\n");
    push @problems, "final queries failed: $db->{err}" if $db->{rc} != 0;

    # Compare.
    my %src_lines;
    push @{ $src_lines{ $_->[0] } }, join '|', @$_[ 1 .. $#$_ ] for marked($db->{out}, 'SRC');
    my %tgt_lines;
    push @{ $tgt_lines{ $_->[0] } }, join '|', @$_[ 1 .. $#$_ ] for marked($db->{out}, 'TGT');
    my @log = marked($db->{out}, 'LOG');

    my %committed_of;    # stream => [ events ]
    for my $ev (@{ $case->{events} }) {
        push @{ $committed_of{ $ev->{stream} } }, $ev if $committed{ $ev->{id} };
    }
    my ($committed_w, $committed_r, $attempted) = (0, 0, 0);
    for my $ev (@{ $case->{events} }) {
        next unless $committed{ $ev->{id} };
        if ($ev->{producer} >= $W && !defined $ev->{dup_of}) { $committed_r++ } else { $committed_w++ }
    }
    for my $w (@{ $case->{writers} }) {
        $attempted += @{ $_->[1] } for grep { $_->[0] eq 'rows' } map { @{ $_->{parts} } } @{ $w->{txs} };
    }

    # The test's own bookkeeping: the sources hold exactly the committed rows.
    for my $s (sort keys %streams) {
        my @want = map { my $ev = $_; join '|', map { fmt($ev->{row}{$_}) } source_cols($streams{$s}) }
                   @{ $committed_of{$s} || [] };
        my ($missing, $unexpected) = lines_diff(\@want, $src_lines{$s} || []);
        if (@$missing || @$unexpected) {
            push @problems, join "\n", "source $s does not hold the rows the test counts as committed"
                                     . ' (a bug of the test, or of PostgreSQL)',
                                       show_lines('counted as committed, not in the source', $missing),
                                       show_lines('in the source, not counted', $unexpected);
        }
    }

    # Targets against the model.
    for my $f (@{ $case->{flows} }) {
        my $s = $streams{ $f->{stream} };
        my @evs = @{ $committed_of{ $f->{stream} } || [] };
        my @want;
        if ($f->{kind} eq 'append') {
            @want = map { my $ev = $_; join '|', map { fmt($ev->{row}{$_}) } target_cols($case, $f) } @evs;
        }
        else {
            my $config = { key_cols => $s->{key_cols}, value_cols => $s->{value_cols},
                           partial => $f->{partial} };
            my @events = map { row_to_event($s, $_->{row}) } @evs;
            my @cols = target_cols($case, $f);
            if ($f->{kind} eq 'scd1') {
                my $res = eval { fold($config, \@events) };
                if (!$res) { push @problems, "model refused the events of $f->{name}: $@"; next }
                @want = map { my $r = $_; join '|', map { fmt($r->{$_}) } @cols } values %$res;
            }
            else {
                $config->{tracked} = $f->{tracked};
                my $res = eval { fold_scd2($config, \@events) };
                if (!$res) { push @problems, "model refused the events of $f->{name}: $@"; next }
                @want = map { my $r = $_; join '|', map { fmt($r->{$_}) } @cols } @$res;
                my @bad = scd2_integrity(scalar @{ $s->{key_cols} }, $tgt_lines{ $f->{name} } || []);
                push @problems, map { "target $schema.$f->{target} ($f->{name}): integrity: $_" } @bad;
            }
        }
        my ($missing, $unexpected) = lines_diff(\@want, $tgt_lines{ $f->{name} } || []);
        if (@$missing || @$unexpected) {
            push @problems, join "\n", "target $schema.$f->{target} ($f->{name}, $f->{kind}) differs from the model"
                                     . ' (columns: ' . join('|', target_cols($case, $f)) . ')',
                                       show_lines('missing (in the model, not in the target)', $missing),
                                       show_lines('unexpected (in the target, not in the model)', $unexpected);
        }
    }

    # Event log: no failed flow; every committed source row read exactly
    # once since the flow's last full refresh.
    my %read_since;    # flow => rows read since its last full refresh
    for my $row (@log) {
        my ($id, $flow, $status, $fr, $read, $error) = @$row;
        if ($status ne 'success') {
            push @problems, "event_log $id: flow $flow status $status: $error";
            next;
        }
        $read_since{$flow} = 0 if $fr eq 't';
        $read_since{$flow} += $read;
    }
    for my $f (@{ $case->{flows} }) {
        my $n = @{ $committed_of{ $f->{stream} } || [] };
        my $got = $read_since{ $f->{name} } // 0;
        push @problems, "flow $f->{name}: its committed runs read $got rows"
                      . ($full_refreshes ? ' (since its last full refresh)' : '')
                      . ", but $n rows were committed to its source: "
                      . ($got > $n ? 'some read twice' : 'some never read')
            if $got != $n;
    }

    my $ok = !@problems;
    if ($ok && !$opt{keep}) {
        run_psql($dir, 'drop', "DROP SCHEMA $schema CASCADE;\n");
        remove_tree($dir);
    }
    return { ok => $ok, dir => $dir, problems => \@problems, t => time() - $t0, t_writers => $t_writers,
             committed_w => $committed_w, committed_r => $committed_r, attempted => $attempted,
             wstats => \%wstats, rstats => \%rstats, case => $case, log_rows => scalar(@log),
             full_refreshes => $full_refreshes };
}

sub fmt { return defined $_[0] ? $_[0] : '\N' }

sub source_cols {
    my ($s) = @_;
    return $s->{kind} eq 'cdc' ? (@{ $s->{key_cols} }, @{ $s->{value_cols} }, 'op', 'seq') : @{ $s->{cols} };
}

sub target_cols {
    my ($case, $f) = @_;
    my $s = $case->{streams}{ $f->{stream} };
    return @{ $s->{cols} } if $f->{kind} eq 'append';
    return (@{ $s->{key_cols} }, @{ $s->{value_cols} }, ($f->{kind} eq 'scd2' ? ('__start_at', '__end_at') : ()));
}

sub describe {
    my ($case) = @_;
    my @d;
    for my $f (@{ $case->{flows} }) {
        my @o = map { my $v = $f->{opts}{$_}; ref $v ? "$_=" . join(',', @$v) : $_ } sort keys %{ $f->{opts} };
        push @d, "$f->{kind}" . (@o ? '(' . join(' ', @o) . ')' : '') . "\@$f->{pipeline}";
    }
    return join(', ', @d) . ($case->{shared} ? '; scd1+scd2 share a source' : '')
         . '; keys ' . join(',', @{ $case->{streams}{cdc1}{key_cols} })
         . '; runners ' . join(',', map { $_->{pipeline} } @{ $case->{runners} });
}

# ---------------------------------------------------------------------------
# Main

my ($passed, $failed) = (0, 0);
my $t_all = time();
print "concurrent: $n_seeds seeds from $opt{'first-seed'}, $seconds s each, $W writers (work dir $topdir)\n";
for my $seed ($opt{'first-seed'} .. $opt{'first-seed'} + $n_seeds - 1) {
    my $r = run_seed($seed);
    my $rs = $r->{rstats} || {};
    my $ws = $r->{wstats} || {};
    my $summary = $r->{wstats}
        ? sprintf('writers: %d rows in %d tx (%d rolled back, %d with a savepoint rolled back), %d committed;'
                . ' runners: %d actions (%d ok, %d refused as already running, %d rolled back, %d errors,'
                . ' %d full refreshes), %d own rows committed; %d event_log rows; %.1f s (writers %.1f s)',
                  $r->{attempted}, $ws->{tx} // 0, $ws->{rolled_back} // 0, $ws->{sp_rolled_back} // 0,
                  $r->{committed_w}, $rs->{actions} // 0, $rs->{ok} // 0, $rs->{refused} // 0,
                  $rs->{rolledback} // 0, $rs->{error} // 0, $r->{full_refreshes}, $r->{committed_r},
                  $r->{log_rows} // 0, $r->{t}, $r->{t_writers} // 0)
        : sprintf('%.1f s', $r->{t});
    if ($r->{ok}) {
        $passed++;
        print "seed $seed: passed  $summary\n";
        print "  ", describe($r->{case}), "\n" if $opt{verbose};
    }
    else {
        $failed++;
        print "seed $seed: FAILED  $summary\n";
        print "  flows: ", describe($r->{case}), "\n" if $r->{case};
        print "  $_\n" for map { split /\n/ } @{ $r->{problems} };
        print "  work dir (scripts, psql output, runner logs): $r->{dir}; schema csoak_$seed kept\n";
    }
}
printf "concurrent: %d seeds in %.1f s\n", $n_seeds, time() - $t_all;
print "concurrent: $passed passed, $failed failed\n";
rmdir $topdir;    # only if empty (kept when a seed failed)
exit($failed ? 1 : 0);

