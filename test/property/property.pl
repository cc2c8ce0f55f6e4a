#!/usr/bin/perl
# Property test for autocdc SCD type 1 and SCD type 2 flows, and for full
# snapshots interleaved with CDC events on one SCD type 1 target.
#
#   perl test/property/property.pl --seeds N [--first-seed S] [--soak]
#        [--batch B] [--jobs J] [--shrink] [--keep] [--check-counts] [--verbose]
#        [--modes LIST | --scd1-only]
#
# For every seed a random but deterministic (srand(seed)) case is generated:
# a source table, a flow with some combination of options, a stream of
# events (upserts, deletes, truncates, exact duplicates), a random arrival
# order and a random split of that order into 1-6 runs.  The rows of each
# split are inserted into the source and autocdc.run() is called; at the end
# the target table must equal what the reference model (Model.pm) computes
# from all the events.  For SCD type 2 the whole history table (every
# version with its __start_at and __end_at) is compared, and the table is
# also checked on its own: the versions of a key must not overlap, a closed
# version must have __start_at < __end_at, a key has at most one open
# version.
#
# Modes (the kind of flow) cycle with the seed over the selected modes:
#   SCD type 1: plain partial column_list truncates mixed
#   SCD type 2: scd2 (all columns tracked), scd2_track (a track-history
#               column list or except list), scd2_partial (ignore-null
#               updates), scd2_mixed (track history + partial + composite key)
#   snapshot + CDC on one SCD type 1 target (one bigint ordering domain):
#               snap_cdc (int key), snap_cdc_mixed (composite key, more
#               deletes and replays, CDC events at a snapshot's version,
#               sequences beyond the int range, varied snapshot functions,
#               snapshot tables with other column order and types)
#   data quality: quality (SCD type 1, maybe truncates and partial
#               updates), scd2_quality (SCD type 2): a flow with
#               on_bad_event => 'quarantine', a drop expectation (a > -10)
#               and a warn expectation, over events that include rows with
#               a NULL sequence or a NULL key; the model folds the rows
#               that pass (Model::quarantine_reason), and autocdc.quarantine
#               must hold exactly the others, each once
#   columns_to_update: ctu (SCD type 1, maybe truncates), scd2_ctu (SCD
#               type 2, maybe an untracked column): each row carries a
#               text[] list of the columns it sets (NULL: all; random
#               subsets, empty too, now and then a key or a name twice);
#               the model takes an unlisted column from the row before
#   A snapshot seed has, besides its CDC events, 1-4 snapshots (random
#   subsets of the keys, random values, NULLs too) with increasing
#   versions, registered in the steps of the runs in version order; the
#   snapshot flow's function hands them out one by one.  The model folds
#   each snapshot as a truncate at its version plus an upsert at its version
#   for each of its rows (Model::snapshot_events).
#   bitemporal: stored_as_scd_type => 'bitemporal' with a system sequence
#               (sys), corrections (one key and business sequence again at
#               a later system sequence, other values or kind), deletes,
#               no-op repeats, maybe partial updates and a composite key;
#               the model (Model::fold_bitemporal) folds SCD 2 history at
#               every system point and derives the rows from the changes
#               between consecutive points
# By default all sixteen are selected, and the default number of seeds is
# 100 per selected mode (1600 for all sixteen): every mode gets 100 seeds.
# Fewer seeds give some mode fewer than 100; the last lines say so.
# With --scd1-only (or --modes scd1) a seed gives exactly the case it gave
# before SCD type 2 existed in this test; with --modes scd1,scd2 exactly the
# case it gave before the snapshot modes existed.
#
# If the engine refuses stored_as_scd_type => 2 (checked once, before the
# seeds run), every SCD type 2 seed counts as a failure ("scd2-unavailable")
# without being run; use --scd1-only to run only the SCD type 1 modes.
# Likewise, without autocdc.create_auto_cdc_from_snapshot_flow() every
# snapshot seed counts as a failure ("snapshot-unavailable").
#
# Only core Perl and the psql binary are used.  Connection settings come
# from the environment (PGHOST, PGPORT, PGUSER, PGDATABASE, PGPASSWORD), e.g.
#   pg_virtualenv -t -v 15 sh -c 'psql -c "CREATE EXTENSION autocdc" &&
#                                 perl test/property/property.pl --seeds 20'
#
# Many seeds go into one psql script (one schema prop_<seed> and one pipeline
# p<seed> per seed; a snapshot seed's pipeline has the flows f<seed> and
# f<seed>_snap); markers in the output ("@@BEGIN", "@@RUN", "@@ROW",
# "@@END") split it per seed.  Schemas are dropped afterwards unless --keep.
#
# Options
#   --seeds N        number of seeds (default 100 per selected mode, 1600
#                    for all sixteen; 2000 with --soak)
#   --first-seed S   first seed (default 1)
#   --soak           many seeds (default 2000), same code
#   --batch B        seeds per psql invocation (default 25)
#   --jobs J         psql invocations running at once (default 1)
#   --shrink         for each failing seed (at most 3), search for a smaller
#                    case that still fails and report it too (snapshot
#                    seeds: also fewer snapshots and snapshot rows)
#   --keep           keep the schemas of the seeds (do not drop them)
#   --check-counts   also require rows_read of each run to equal the number
#                    of rows inserted since the previous run (snapshot
#                    flow: the rows of the snapshots registered since)
#   --verbose        print one line per passing seed
#   --print-sql      print the psql script and the expected rows of the
#                    seeds, without connecting to a database
#   --modes LIST     comma-separated modes to cycle through; "scd1", "scd2",
#                    "snap", "quality", "ctu" and "all" stand for groups (default: all)
#   --scd1-only      same as --modes scd1
#
# The last line is "property: N passed, M failed"; the exit code is non-zero
# if any seed failed.

use strict;
use warnings;

use FindBin;
use lib $FindBin::Bin;
use Model qw(fold fold_scd2 fold_bitemporal key_string partial_columns tracked_columns snapshot_events
             quarantine_reason);
use Getopt::Long qw(GetOptions);
use File::Temp qw(tempdir);
use POSIX qw(_exit);

$| = 1;

# ---------------------------------------------------------------------------
# Options

my %opt = (batch => 25, jobs => 1, 'first-seed' => 1);
my $USAGE = "usage: $0 --seeds N [--first-seed S] [--soak] [--batch B] [--jobs J]"
          . " [--shrink] [--keep] [--check-counts] [--verbose] [--print-sql]"
          . " [--modes LIST | --scd1-only]\n";
GetOptions(\%opt, 'seeds=i', 'first-seed=i', 'soak', 'batch=i', 'jobs=i',
           'shrink', 'keep', 'check-counts', 'verbose', 'print-sql', 'help',
           'modes=s', 'scd1-only')
    or die $USAGE;
if ($opt{help}) {
    print $USAGE;
    exit 0;
}
my $first   = $opt{'first-seed'};
die "--first-seed must be >= 0\n" if $first < 0;
die "--batch must be >= 1\n" if $opt{batch} < 1;
die "--jobs must be >= 1\n"  if $opt{jobs} < 1;
die "--modes and --scd1-only do not go together\n" if $opt{modes} && $opt{'scd1-only'};

# Where SQL scripts and psql output go; kept (and printed) if a seed fails.
my $workdir = tempdir('autocdc-property-XXXXXX', TMPDIR => 1, CLEANUP => 0);

# ---------------------------------------------------------------------------
# Case generation

# Modes cycle with the seed over the selected ones (@MODES), so that any
# @MODES consecutive seeds cover them all.  The SCD type 1 modes come first,
# in their original order: with only them selected a seed gives the same
# case as before SCD type 2 modes existed.
my @SCD1_MODES = qw(plain partial column_list truncates mixed);
my @SCD2_MODES = qw(scd2 scd2_track scd2_partial scd2_mixed);
my @SNAP_MODES = qw(snap_cdc snap_cdc_mixed);
my @QUALITY_MODES = qw(quality scd2_quality);
my @CTU_MODES = qw(ctu scd2_ctu);
my @BT_MODES = qw(bitemporal);
my @MODES;
{
    my %group = (scd1 => \@SCD1_MODES, scd2 => \@SCD2_MODES, snap => \@SNAP_MODES,
                 quality => \@QUALITY_MODES, ctu => \@CTU_MODES,
                 all  => [ @SCD1_MODES, @SCD2_MODES, @SNAP_MODES, @QUALITY_MODES, @CTU_MODES,
                           @BT_MODES ]);
    my %known = map { $_ => 1 } @SCD1_MODES, @SCD2_MODES, @SNAP_MODES, @QUALITY_MODES, @CTU_MODES,
                                @BT_MODES;
    my $spec  = $opt{'scd1-only'} ? 'scd1' : $opt{modes} // 'all';
    my %chosen;
    for my $m (split /\s*,\s*/, $spec) {
        next if $m eq '';
        my @ms = $group{$m} ? @{ $group{$m} } : $known{$m} ? ($m) : ();
        die "--modes: unknown mode '$m' (modes: @SCD1_MODES @SCD2_MODES @SNAP_MODES @QUALITY_MODES"
          . " @CTU_MODES @BT_MODES; groups: scd1 scd2 snap quality ctu all)\n"
            unless @ms;
        $chosen{$_} = 1 for @ms;
    }
    @MODES = grep { $chosen{$_} } @SCD1_MODES, @SCD2_MODES, @SNAP_MODES, @QUALITY_MODES,
                                  @CTU_MODES, @BT_MODES;    # fixed order
    die "--modes: no mode selected\n" unless @MODES;
}
sub is_scd2_mode { return $_[0] =~ /^scd2/ ? 1 : 0 }

# Seeds every mode needs at least, and the default number of seeds: that
# many per selected mode (1600 for all sixteen), 2000 with --soak.
my $SEEDS_PER_MODE = 100;
my $n_seeds = $opt{seeds} // ($opt{soak} ? 2000 : $SEEDS_PER_MODE * @MODES);

# Column types.  Key columns: k int, or (k1 int, k2 text).  Value columns:
# a int, b text, c int (c only in some seeds).  op and seq are excepted.
my %TYPE = (k => 'int', k1 => 'int', k2 => 'text', a => 'int', b => 'text',
            c => 'int', op => 'text', seq => 'int', cols => 'text[]', sys => 'int');

# Text values; '' is there to tell an empty string from NULL, the quote and
# the space to check quoting.
my @WORDS = ('alpha', 'beta', 'gamma', 'delta', 'Oaxaca', 'Tijuana', '',
             "O'Brien", 'two words', 'zeta');

sub pick { return $_[ int(rand(@_)) ] }

sub random_value {
    my ($col) = @_;
    return $TYPE{$col} eq 'int' ? int(rand(120)) - 20 : pick(@WORDS);
}

# In-place Fisher-Yates shuffle driven by rand() (hence by the seed).
sub shuffle_in_place {
    my ($list) = @_;
    for (my $i = $#$list; $i > 0; $i--) {
        my $j = int(rand($i + 1));
        @$list[ $i, $j ] = @$list[ $j, $i ];
    }
}

# The event a source row stands for, following the flow's expressions:
# truncate if op = 'T', else delete if op = 'D', else upsert (op NULL too).
sub row_to_event {
    my ($case, $row) = @_;
    my $op   = $row->{op};
    my $kind = !defined $op ? 'upsert' : $op eq 'T' ? 'truncate' : $op eq 'D' ? 'delete' : 'upsert';
    return {
        kind => $kind,
        seq  => $row->{seq},
        sys  => $row->{sys},
        key  => [ map { $row->{$_} } @{ $case->{key_cols} } ],
        vals => { map { $_ => $row->{$_} } @{ $case->{value_cols} } },
        ($case->{listed} ? (sets => $row->{cols}) : ()),
    };
}

# columns_to_update: the list of an upsert, or undef (every column): a
# random subset of the value columns in random order, now and then with a
# key column (ignored) or a name twice.
sub random_column_list {
    my ($case) = @_;
    return undef if rand() < 0.2;
    my @list = grep { rand() < 0.5 } @{ $case->{value_cols} };
    push @list, pick(@{ $case->{key_cols} }) if rand() < 0.15;
    push @list, $list[0] if @list && rand() < 0.1;
    shuffle_in_place(\@list);
    return \@list;
}

# Build the whole case for one seed.  Everything random comes from
# srand($seed), so a seed always gives the same case.
sub generate_case {
    my ($seed) = @_;
    srand($seed);
    my $mode = $MODES[ $seed % @MODES ];
    return generate_snap_case($seed, $mode) if is_snap_mode($mode);
    return generate_bt_case($seed, $mode) if $mode eq 'bitemporal';
    my $scd2 = is_scd2_mode($mode);
    my %case = (seed => $seed, mode => $mode, scd => $scd2 ? 2 : 1,
                quality => $mode =~ /quality$/ ? 1 : 0, listed => $mode =~ /ctu$/ ? 1 : 0);

    # Columns.  (Every rand() call of an SCD type 1 mode happens as it did
    # before SCD type 2 modes existed, so its cases are unchanged.)
    my $composite = rand() < 0.3;
    $composite = 1 if $mode eq 'scd2_mixed';
    $case{key_cols}   = $composite ? [qw(k1 k2)] : ['k'];
    $case{value_cols} = [ 'a', 'b', (rand() < 0.5 ? ('c') : ()) ];
    my @vcols = @{ $case{value_cols} };

    # Flow options for partial updates, and whether truncates happen.
    my %flow;
    if ($mode eq 'partial') {
        $flow{ignore_null_updates} = 1;
    }
    elsif ($mode eq 'column_list') {
        $flow{ignore_null_updates_column_list} = [ pick(@vcols) ];
    }
    elsif ($mode eq 'mixed') {
        my $r = int(rand(5));
        if    ($r == 1) { $flow{ignore_null_updates} = 1 }
        elsif ($r == 2) {    # a non-empty, proper subset of the value columns
            my @cols = @vcols;
            shuffle_in_place(\@cols);
            $flow{ignore_null_updates_column_list} = [ sort @cols[ 0 .. int(rand(@cols - 1)) ] ];
        }
        elsif ($r == 3) { $flow{ignore_null_updates_except_column_list} = [ pick(@vcols) ] }
        elsif ($r == 4) { $flow{ignore_null_updates} = 0 }    # explicitly off
    }
    elsif ($mode eq 'quality') {
        $flow{ignore_null_updates} = 1 if rand() < 0.3;
    }
    elsif ($mode eq 'ctu') {
        $flow{columns_to_update} = 'cols';
    }
    elsif ($scd2) {
        # History tracking: one column, or a random non-empty proper subset
        # (scd2_mixed), named by a column list or an except list.
        if ($mode eq 'scd2_track' || $mode eq 'scd2_mixed') {
            my @cols = @vcols;
            shuffle_in_place(\@cols);
            my @sub = $mode eq 'scd2_track' ? ($cols[0])
                                            : sort @cols[ 0 .. int(rand(@cols - 1)) ];
            if (rand() < 0.5) { $flow{track_history_column_list} = \@sub }
            else              { $flow{track_history_except_column_list} = \@sub }
        }
        elsif ($mode eq 'scd2' && rand() < 0.2) {
            $flow{ignore_null_updates} = 0;    # explicitly off
        }
        elsif ($mode eq 'scd2_ctu' && rand() < 0.3) {
            $flow{track_history_except_column_list} = [ pick(@vcols) ];
        }
        $flow{columns_to_update} = 'cols' if $mode eq 'scd2_ctu';
        # Partial updates.
        if ($mode eq 'scd2_partial' || $mode eq 'scd2_mixed') {
            my $r = int(rand($mode eq 'scd2_partial' ? 4 : 5));
            if ($r <= 1) { $flow{ignore_null_updates} = 1 }
            elsif ($r == 2) {    # a non-empty, proper subset of the value columns
                my @cols = @vcols;
                shuffle_in_place(\@cols);
                $flow{ignore_null_updates_column_list} = [ sort @cols[ 0 .. int(rand(@cols - 1)) ] ];
            }
            elsif ($r == 3) { $flow{ignore_null_updates_except_column_list} = [ pick(@vcols) ] }
            # $r == 4 (scd2_mixed only): no partial columns
        }
    }
    $case{flow}      = \%flow;
    $case{partial}   = partial_columns(\@vcols, \%flow);
    $case{tracked}   = tracked_columns(\@vcols, \%flow) if $scd2;
    $case{truncates} = ($mode eq 'truncates' || $mode eq 'mixed') ? 1 : 0;
    $case{truncates} = rand() < 0.5 ? 1 : 0 if $mode eq 'quality' || $mode eq 'ctu';

    # Source column order: sometimes shuffled, the engine must go by name.
    my @src_cols = (@{ $case{key_cols} }, @vcols, 'op', 'seq', ($case{listed} ? ('cols') : ()));
    shuffle_in_place(\@src_cols) if rand() < 0.4;
    $case{src_cols} = \@src_cols;

    # Keys.
    # (SCD type 2: fewer keys, hence longer histories per key.)
    my $n_keys = $scd2 ? 3 + int(rand(6)) : 5 + int(rand(8));    # 3..8 : 5..12
    my (@keys, %key_used);
    while (@keys < $n_keys) {
        my $key = $composite ? [ 1 + int(rand(4)), pick(qw(x y z), 'w v', "q'r") ]
                             : [ int(rand(200)) - 20 ];
        my $ks = key_string($key);
        next if $key_used{$ks}++;
        push @keys, $key;
    }

    # Sequences come from a small range, so that ties across keys happen.
    my $n_events = 20 + int(rand(61));    # 20..80 distinct events
    my $seq_lo   = rand() < 0.2 ? -int(rand(10)) : 1;
    my $seq_hi   = $seq_lo + int($n_events / $n_keys * 1.5) + 3;
    my $p_null   = %{ $case{partial} } || $case{listed} ? 0.35 : 0.1;
    my %slot_used;    # "key|seq" taken: at most one distinct event per (key, seq)
    my %upserts_of;   # SCD type 2: key string => values of its upserts so far
    my @rows;

    # Truncates: distinct sequences; the key is usually NULL, but sometimes
    # set (a truncate is global whatever its key says).
    if ($case{truncates}) {
        my $n_trunc = rand() < 0.15 ? 0 : 1 + int(rand(3));
        my %tseq;
        while (keys %tseq < $n_trunc) {
            $tseq{ $seq_lo + int(rand($seq_hi - $seq_lo + 1)) } = 1;
        }
        for my $t (sort { $a <=> $b } keys %tseq) {
            my %row = (op => 'T', seq => $t);
            $row{$_} = undef for @{ $case{key_cols} }, @vcols;
            if (rand() < 0.15) {
                my $key = pick(@keys);
                my $slot = key_string($key) . "|$t";
                if (!$slot_used{$slot}++) {
                    @row{ @{ $case{key_cols} } } = @$key;
                }
            }
            if (rand() < 0.3) { $row{$_} = random_value($_) for @vcols }
            push @rows, \%row;
        }
    }

    # Upserts and deletes.
    while (@rows < $n_events) {
        my ($key, $seq);
        for (1 .. 100) {    # find a free (key, seq) slot
            my $try_key = pick(@keys);
            my $try_seq = $seq_lo + int(rand($seq_hi - $seq_lo + 1));
            next if $slot_used{ key_string($try_key) . "|$try_seq" };
            ($key, $seq) = ($try_key, $try_seq);
            last;
        }
        last unless defined $key;    # the range is full (never in practice)
        $slot_used{ key_string($key) . "|$seq" } = 1;

        my %row = (seq => $seq);
        @row{ @{ $case{key_cols} } } = @$key;
        if (rand() < 0.15) {
            $row{op} = 'D';
            my $with_values = rand() < 0.5;    # a delete's values are ignored
            $row{$_} = $with_values && rand() > $p_null ? random_value($_) : undef for @vcols;
        }
        else {
            my $r = rand();
            $row{op} = $r < 0.05 ? undef : $r < 0.5 ? 'I' : 'U';    # NULL op = upsert
            my $earlier = $scd2 ? ($upserts_of{ key_string($key) } ||= []) : [];
            if (@$earlier && rand() < 0.6) {
                # SCD type 2: most upserts repeat an earlier upsert of the
                # key with a few columns changed, so that no-op updates,
                # untracked-only updates and returns to an earlier state
                # are frequent.
                my $base = pick(@$earlier);
                for my $c (@vcols) {
                    $row{$c} = rand() >= 0.3 ? $base->{$c}
                             : rand() < $p_null ? undef : random_value($c);
                }
            }
            else {
                $row{$_} = rand() < $p_null ? undef : random_value($_) for @vcols;
            }
            push @$earlier, { map { $_ => $row{$_} } @vcols } if $scd2;
        }
        # columns_to_update: the list, on deletes too (where it does not matter)
        $row{cols} = random_column_list(\%case) if $case{listed};
        push @rows, \%row;
    }

    # Data quality: copies of rows with a NULL sequence or a NULL key
    # column (all of them, or one), which the quarantine must take.
    if ($case{quality}) {
        my $n_bad = int(rand(6));
        my @good = @rows;
        for (1 .. $n_bad) {
            my %row = %{ pick(@good) };
            if (rand() < 0.5) {
                $row{seq} = undef;
            }
            else {
                my @kc = @{ $case{key_cols} };
                $row{$_} = undef for rand() < 0.5 ? @kc : (pick(@kc));
                $row{op} = 'U' if defined $row{op} && $row{op} eq 'T';
            }
            push @rows, \%row;
        }
    }

    # Exact duplicates (~10%): the same row again, maybe in a later run.
    my @all = @rows;
    for my $row (@rows) {
        next unless rand() < 0.1;
        push @all, { %$row, dup => 1 };
        push @all, { %$row, dup => 1 } if rand() < 0.2;
    }

    # Arrival order, and the split into runs (empty runs are allowed).
    shuffle_in_place(\@all);
    my $n_runs = 1 + int(rand(6));
    my @cuts = sort { $a <=> $b } map { int(rand(@all + 1)) } 2 .. $n_runs;
    my @runs;
    my $from = 0;
    for my $to (@cuts, scalar @all) {
        push @runs, [ @all[ $from .. $to - 1 ] ];
        $from = $to;
    }
    # How each run's rows are inserted: one INSERT, or one per row.
    $case{runs}       = \@runs;
    $case{row_by_row} = [ map { rand() < 0.2 ? 1 : 0 } @runs ];
    return \%case;
}

# The rows the target must hold, as sorted lines "key|...|value|..." with
# NULL shown as \N (the same format the psql output is parsed into).
sub expected_lines {
    my ($case) = @_;
    my @events = map { row_to_event($case, $_) } grep { !defined row_quarantined($case, $_) }
                 map { @$_ } @{ $case->{runs} };
    return expected_lines_scd2($case, \@events) if $case->{scd} == 2;
    return expected_lines_bt($case, \@events) if $case->{scd} == 3;
    # Snapshots: a truncate at the version plus an upsert for each row.
    push @events, snapshot_events({ value_cols => $case->{value_cols} }, $_->{version}, $_->{rows})
        for case_snapshots($case);
    my $result = fold({ key_cols   => $case->{key_cols},
                        value_cols => $case->{value_cols},
                        partial    => $case->{partial},
                        listed     => $case->{listed} }, \@events);
    my @cols = target_cols($case);
    return [ sort map { my $r = $_; join '|', map { defined $r->{$_} ? $r->{$_} : '\N' } @cols }
             values %$result ];
}

# SCD type 2: every version, as sorted lines
# "key|...|value|...|__start_at|__end_at" (an open version ends in \N).
sub expected_lines_scd2 {
    my ($case, $events) = @_;
    my $versions = fold_scd2({ key_cols   => $case->{key_cols},
                               value_cols => $case->{value_cols},
                               partial    => $case->{partial},
                               tracked    => $case->{tracked},
                               listed     => $case->{listed} }, $events);
    my @cols = (@{ $case->{key_cols} }, @{ $case->{value_cols} }, '__start_at', '__end_at');
    return [ sort map { my $v = $_; join '|', map { defined $v->{$_} ? $v->{$_} : '\N' } @cols }
             @$versions ];
}

# Bitemporal: every row, as sorted lines "key|...|value|...|__start_at|
# __end_at|__system_start_at|__system_end_at" (open ends as \N).
sub expected_lines_bt {
    my ($case, $events) = @_;
    my $rows = fold_bitemporal({ key_cols   => $case->{key_cols},
                                 value_cols => $case->{value_cols},
                                 partial    => $case->{partial} }, $events);
    my @cols = target_cols($case);
    return [ sort map { my $r = $_; join '|', map { defined $r->{$_} ? $r->{$_} : '\N' } @cols } @$rows ];
}

# A bitemporal case: a few keys, events at (key, business seq, sys), of
# which some are corrections (a key and business sequence taken again at a
# later or earlier system sequence, with other values or kind); deletes,
# no-op repeats, exact duplicates, arrival order and run splits as for SCD 2.
sub generate_bt_case {
    my ($seed, $mode) = @_;
    my %case = (seed => $seed, mode => $mode, scd => 3, quality => 0, truncates => 0);
    my $composite = rand() < 0.3;
    $case{key_cols}   = $composite ? [qw(k1 k2)] : ['k'];
    $case{value_cols} = [ 'a', 'b', (rand() < 0.5 ? ('c') : ()) ];
    my @vcols = @{ $case{value_cols} };
    my %flow;
    my $r = int(rand(4));
    if ($r == 1) { $flow{ignore_null_updates} = 1 }
    elsif ($r == 2) {
        my @cols = @vcols;
        shuffle_in_place(\@cols);
        $flow{ignore_null_updates_column_list} = [ sort @cols[ 0 .. int(rand(@cols - 1)) ] ];
    }
    elsif ($r == 3) { $flow{ignore_null_updates_except_column_list} = [ pick(@vcols) ] }
    $case{flow}    = \%flow;
    $case{partial} = partial_columns(\@vcols, \%flow);

    my @src_cols = (@{ $case{key_cols} }, @vcols, 'op', 'seq', 'sys');
    shuffle_in_place(\@src_cols) if rand() < 0.4;
    $case{src_cols} = \@src_cols;

    my $n_keys = 2 + int(rand(4));    # 2..5
    my (@keys, %key_used);
    while (@keys < $n_keys) {
        my $key = $composite ? [ 1 + int(rand(4)), pick(qw(x y z), 'w v', "q'r") ]
                             : [ int(rand(200)) - 20 ];
        next if $key_used{ key_string($key) }++;
        push @keys, $key;
    }
    my $n_events = 10 + int(rand(31));    # 10..40 distinct events
    my $seq_hi = int($n_events / $n_keys * 1.5) + 3;
    my $sys_hi = int($n_events * 1.2) + 3;
    my $in_order = rand() < 0.5;
    my $p_null = %{ $case{partial} } ? 0.35 : 0.1;
    my (%slot_used, %upserts_of, @rows, @placed);
    while (@rows < $n_events) {
        my ($key, $seq, $sys);
        for (1 .. 100) {
            my ($k, $s);
            if (@placed && rand() < 0.35) {    # a correction of an earlier (key, seq)
                ($k, $s) = @{ pick(@placed) };
            }
            else {
                ($k, $s) = (pick(@keys), 1 + int(rand($seq_hi)));
            }
            # system time mostly following business time in half the cases
            # (the fold's in-order path), at random in the others
            my $y = $in_order && rand() < 0.8 ? 3 * $s + int(rand(4)) : 1 + int(rand($sys_hi));
            next if $slot_used{ key_string($k) . "|$s|$y" };
            ($key, $seq, $sys) = ($k, $s, $y);
            last;
        }
        last unless defined $key;
        $slot_used{ key_string($key) . "|$seq|$sys" } = 1;
        push @placed, [ $key, $seq ];
        my %row = (seq => $seq, sys => $sys);
        @row{ @{ $case{key_cols} } } = @$key;
        if (rand() < 0.15) {
            $row{op} = 'D';
            $row{$_} = rand() < 0.5 ? random_value($_) : undef for @vcols;
        }
        else {
            my $rr = rand();
            $row{op} = $rr < 0.05 ? undef : $rr < 0.5 ? 'I' : 'U';
            my $earlier = ($upserts_of{ key_string($key) } ||= []);
            if (@$earlier && rand() < 0.6) {    # often a repeat, a few columns changed
                my $base = pick(@$earlier);
                for my $c (@vcols) {
                    $row{$c} = rand() >= 0.3 ? $base->{$c}
                             : rand() < $p_null ? undef : random_value($c);
                }
            }
            else {
                $row{$_} = rand() < $p_null ? undef : random_value($_) for @vcols;
            }
            push @$earlier, { map { $_ => $row{$_} } @vcols };
        }
        push @rows, \%row;
    }
    my @all = @rows;
    for my $row (@rows) {
        next unless rand() < 0.1;
        push @all, { %$row, dup => 1 };
    }
    shuffle_in_place(\@all);
    my $n_runs = 1 + int(rand(6));
    my @cuts = sort { $a <=> $b } map { int(rand(@all + 1)) } 2 .. $n_runs;
    my @runs;
    my $from = 0;
    for my $to (@cuts, scalar @all) {
        push @runs, [ @all[ $from .. $to - 1 ] ];
        $from = $to;
    }
    $case{runs}       = \@runs;
    $case{row_by_row} = [ map { rand() < 0.2 ? 1 : 0 } @runs ];
    return \%case;
}

# The quality modes' expectations: a drop (a > -10, which a NULL passes)
# and a warn (b IS NOT NULL, which drops nothing).
my %QUALITY_DROPS = (a_above => sub { defined $_[0]{a} ? $_[0]{a} > -10 : undef });
my %QUALITY_WARNS = (b_set => 'b IS NOT NULL');

# Why the flow sets a source row aside (a quality mode's case), or undef.
sub row_quarantined {
    my ($case, $row) = @_;
    return undef unless $case->{quality};
    return quarantine_reason({ key_cols => $case->{key_cols}, drops => [ values %QUALITY_DROPS ] },
                             $row, row_to_event($case, $row)->{kind});
}

# The rows autocdc.quarantine must hold, as sorted lines
# "reason|<source columns>" (each distinct row once).
sub expected_quarantine {
    my ($case) = @_;
    my %lines;
    for my $row (map { @$_ } @{ $case->{runs} }) {
        my $reason = row_quarantined($case, $row);
        next unless defined $reason;
        $lines{ join '|', $reason, map { defined $row->{$_} ? $row->{$_} : '\N' } @{ $case->{src_cols} } } = 1;
    }
    return [ sort keys %lines ];
}

# The columns of the target lines (expected_lines() and the @@ROW output):
# an SCD type 1 target's user columns and its __autocdc_sequence.
sub target_cols {
    my ($case) = @_;
    return (@{ $case->{key_cols} }, @{ $case->{value_cols} },
            ($case->{scd} == 1 ? ('__autocdc_sequence') : ()),
            ($case->{scd} == 2 ? ('__start_at', '__end_at') : ()),
            ($case->{scd} == 3 ? ('__start_at', '__end_at', '__system_start_at', '__system_end_at') : ()));
}

# ---------------------------------------------------------------------------
# SQL generation

# A value of column $col as an SQL literal (integers bare, text quoted).
sub sql_value {
    my ($col, $v) = @_;
    return 'NULL' unless defined $v;
    return sql_array($v) if $TYPE{$col} eq 'text[]';
    return $TYPE{$col} eq 'int' ? $v : sql_literal($v);
}

sub sql_literal {
    my ($v) = @_;
    return 'NULL' unless defined $v;
    (my $q = $v) =~ s/'/''/g;
    return "'$q'";
}

sub sql_array {
    my ($list) = @_;
    return 'ARRAY[' . join(', ', map { sql_literal($_) } @$list) . ']::text[]';
}

# The psql script of one case.  $tag names its schema (prop_<tag>), its
# pipeline (p<tag>) and its flow (f<tag>); it is the seed, or "<seed>_<n>"
# while shrinking.  $drop: drop the schema at the end.
sub case_sql {
    my ($case, $tag, $drop) = @_;
    return snap_case_sql($case, $tag, $drop) if $case->{snap};
    my $schema = "prop_$tag";
    my @key_cols   = @{ $case->{key_cols} };
    my @value_cols = @{ $case->{value_cols} };
    my @src_cols   = @{ $case->{src_cols} };
    my $flow       = $case->{flow};
    my @sql;

    push @sql, "\\echo \@\@BEGIN $tag",
               "DROP SCHEMA IF EXISTS $schema CASCADE;",
               # A flow of that name left by an earlier run in this database
               # (only if the engine has autocdc.drop_flow(text) and the view
               # autocdc.flows; dropping the schema may already have done it).
               "DO \$\$ BEGIN IF to_regprocedure('autocdc.drop_flow(text)') IS NOT NULL"
             . " AND to_regclass('autocdc.flows') IS NOT NULL THEN"
             . " EXECUTE 'SELECT autocdc.drop_flow(name) FROM autocdc.flows WHERE name = ''f$tag'''; END IF; END \$\$;",
               "CREATE SCHEMA $schema;",
               "CREATE TABLE $schema.src (" . join(', ', map { "$_ $TYPE{$_}" } @src_cols) . ");";

    my @args = (
        "target => '$schema.tgt'",
        "source => '$schema.src'::regclass",
        'keys => ' . sql_array(\@key_cols),
        "sequence_by => 'seq'",
        ($case->{scd} == 2 ? ('stored_as_scd_type => 2') : ()),
        ($case->{scd} == 3 ? ("stored_as_scd_type => 'bitemporal'", "system_sequence_by => 'sys'") : ()),
        "apply_as_deletes => 'op = ''D'''",
    );
    push @args, "apply_as_truncates => 'op = ''T'''" if $case->{truncates};
    push @args, $case->{scd} == 3 ? "except_column_list => ARRAY['op', 'seq', 'sys']::text[]"
                                  : "except_column_list => ARRAY['op', 'seq']::text[]";
    push @args, 'ignore_null_updates => ' . ($flow->{ignore_null_updates} ? 'true' : 'false')
        if exists $flow->{ignore_null_updates};
    for my $o (qw(ignore_null_updates_column_list ignore_null_updates_except_column_list
                  track_history_column_list track_history_except_column_list)) {
        push @args, "$o => " . sql_array($flow->{$o}) if $flow->{$o};
    }
    push @args, "columns_to_update => '$flow->{columns_to_update}'" if $flow->{columns_to_update};
    if ($case->{quality}) {
        push @args, "on_bad_event => 'quarantine'",
                    "expect_or_drop => '{\"a_above\": \"a > -10\"}'",
                    "expect => '{\"b_set\": \"$QUALITY_WARNS{b_set}\"}'";
        push @sql, "DELETE FROM autocdc.quarantine WHERE flow = 'f$tag';";
    }
    push @args, "pipeline => 'p$tag'", "name => 'f$tag'";
    push @sql, "SELECT autocdc.create_auto_cdc_flow(\n    " . join(",\n    ", @args) . ");";

    my $run_no = 0;
    for my $run (@{ $case->{runs} }) {
        $run_no++;
        if (@$run) {
            my $cols = join ', ', @src_cols;
            my @tuples = map { my $r = $_; '(' . join(', ', map { sql_value($_, $r->{$_}) } @src_cols) . ')' } @$run;
            if ($case->{row_by_row}[ $run_no - 1 ]) {
                push @sql, "INSERT INTO $schema.src ($cols) VALUES $_;" for @tuples;
            }
            else {
                push @sql, "INSERT INTO $schema.src ($cols) VALUES\n    " . join(",\n    ", @tuples) . ';';
            }
        }
        push @sql, "SELECT '\@\@RUN', '$tag', $run_no, status, rows_read, rows_upserted,"
                 . " rows_deleted, rows_skipped FROM autocdc.run(pipeline => 'p$tag');";
    }
    if ($case->{scd} == 3) {
        push @sql, "SELECT '\@\@ROW', '$tag', " . join(', ', target_cols($case))
                 . " FROM $schema.tgt ORDER BY " . join(', ', @key_cols, '__start_at', '__system_start_at') . ';';
    }
    elsif ($case->{scd} == 2) {
        push @sql, "SELECT '\@\@ROW', '$tag', " . join(', ', @key_cols, @value_cols, '__start_at', '__end_at')
                 . " FROM $schema.tgt ORDER BY " . join(', ', @key_cols, '__start_at') . ';';
    }
    else {
        push @sql, "SELECT '\@\@ROW', '$tag', " . join(', ', target_cols($case))
                 . " FROM $schema.tgt ORDER BY " . join(', ', @key_cols) . ';';
    }
    if ($case->{quality}) {
        push @sql, "SELECT '\@\@Q', '$tag', q.reason, " . join(', ', map { "r.$_" } @src_cols)
                 . " FROM autocdc.quarantine q CROSS JOIN LATERAL"
                 . " jsonb_populate_record(NULL::$schema.src, q.\"row\") r WHERE q.flow = 'f$tag';";
        push @sql, "DELETE FROM autocdc.quarantine WHERE flow = 'f$tag';" if $drop;
    }
    push @sql, "DROP SCHEMA $schema CASCADE;" if $drop;
    push @sql, "\\echo \@\@END $tag", '';
    return join "\n", @sql;
}

# A hung statement becomes an error of its seed instead of a hung test.
my $SCRIPT_HEADER = join "\n", '\set ON_ERROR_STOP 1', '\set VERBOSITY verbose',
                               q{\pset null '\\\\N'}, 'SET client_min_messages = warning;',
                               "SET statement_timeout = '120s';", '', '';

# ---------------------------------------------------------------------------
# Running psql

my @PSQL = ('psql', '-X', '-q', '-A', '-t', '-F', '|', '-v', 'ON_ERROR_STOP=1');

# Start psql on a script file in the background; returns its pid.
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

# Drop a case's schema (quietly; it may not exist).
sub drop_schema {
    my ($tag) = @_;
    system(@PSQL, '-c', 'SET client_min_messages = warning',
                  '-c', "DROP SCHEMA IF EXISTS prop_$tag CASCADE");
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

# Split psql output into per-tag results:
#   tag => { begun => 1, ended => 1, runs => { n => [ [fields], ... ] }, rows => [ lines ] }
sub parse_output {
    my ($out) = @_;
    my %res;
    for my $line (split /\n/, $out) {
        if ($line =~ /^\@\@BEGIN (\S+)$/) { $res{$1}{begun} = 1; next }
        if ($line =~ /^\@\@END (\S+)$/)   { $res{$1}{ended} = 1; next }
        if ($line =~ /^\@\@RUN\|/) {
            my (undef, $tag, $n, @f) = split /\|/, $line, -1;
            push @{ $res{$tag}{runs}{$n} }, \@f;    # status, read, upserted, deleted, skipped
            next;
        }
        if ($line =~ /^\@\@ROW\|/) {
            my (undef, $tag, @f) = split /\|/, $line, -1;
            push @{ $res{$tag}{rows} }, join '|', @f;
            next;
        }
        if ($line =~ /^\@\@Q\|/) {
            my (undef, $tag, @f) = split /\|/, $line, -1;
            push @{ $res{$tag}{quarantine} }, join '|', @f;
            next;
        }
        # anything else (e.g. the result of create_auto_cdc_flow) is ignored
    }
    return \%res;
}

# Judge one case against its parsed result.  Returns undef if it passed,
# else { class => ..., reason => ..., actual => [...] }.
sub judge {
    my ($case, $res, $error_text) = @_;
    if (!$res || !$res->{ended}) {
        my $err = $error_text // '';
        $err =~ s/\s+$//;
        return { class => 'sql-error', reason => "psql stopped with an error in this case:\n$err" };
    }
    my @problems;
    my $n_runs = @{ $case->{runs} };
    for my $n (1 .. $n_runs) {
        my $rr = $res->{runs}{$n} || [];
        if ($case->{snap}) {
            push @problems, snap_run_problems($case, $n, $rr);
            next;
        }
        if (@$rr != 1) {
            push @problems, "run $n: autocdc.run() returned " . scalar(@$rr) . ' rows, expected 1';
            next;
        }
        my ($status, $read) = @{ $rr->[0] };
        push @problems, "run $n: status '$status', expected 'success'" if $status ne 'success';
        my $inserted = @{ $case->{runs}[ $n - 1 ] };
        push @problems, "run $n: rows_read $read, but $inserted rows were inserted"
            if $opt{'check-counts'} && $read ne $inserted;
    }
    my $class = @problems ? 'run-status' : undef;
    my @actual   = sort @{ $res->{rows} || [] };
    if ($case->{scd} == 2) {
        my @bad = scd2_integrity($case, \@actual);
        if (@bad) {
            push @problems, map { "integrity: $_" } @bad;
            $class //= 'integrity';
        }
    }
    my @expected = @{ expected_lines($case) };
    if (join("\n", @actual) ne join("\n", @expected)) {
        push @problems, 'target differs from the model';
        $class //= 'mismatch';
    }
    if ($case->{quality}) {
        my @q = sort @{ $res->{quarantine} || [] };
        my @eq = @{ expected_quarantine($case) };
        if (join("\n", @q) ne join("\n", @eq)) {
            push @problems, "quarantine differs from the model:\n  expected:\n"
                . join('', map { "    $_\n" } @eq) . "  actual:\n" . join('', map { "    $_\n" } @q);
            $class //= 'quarantine';
        }
    }
    return undef unless @problems;
    return { class => $class, reason => join("\n", @problems), actual => \@actual };
}

# Checks of an SCD type 2 target on its own (whatever the model says):
# per key, sorted by __start_at, every version but the last is closed and
# ends at or before the next one starts; a closed version has
# __start_at < __end_at; a key has at most one open version; __start_at is
# never NULL.  $lines are @@ROW lines "key|...|value|...|start|end".
# Returns the violations, as text.
sub scd2_integrity {
    my ($case, $lines) = @_;
    my $nk = @{ $case->{key_cols} };
    my (%versions_of, @bad);
    for my $line (@$lines) {
        my @f = split /\|/, $line, -1;
        my ($start, $end) = @f[ -2, -1 ];
        my $k = join '|', @f[ 0 .. $nk - 1 ];
        $start = undef if $start eq '\N';
        $end   = undef if $end eq '\N';
        if (!defined $start) {
            push @bad, "key ($k): a version with NULL __start_at: $line";
            next;
        }
        push @{ $versions_of{$k} }, { start => $start, end => $end };
    }
    my $show = sub { my ($v) = @_; "[$v->{start}," . ($v->{end} // 'NULL') . ')' };
    for my $k (sort keys %versions_of) {
        my @v = sort { $a->{start} <=> $b->{start} } @{ $versions_of{$k} };
        my $open = grep { !defined $_->{end} } @v;
        push @bad, "key ($k): $open open versions" if $open > 1;
        for my $i (0 .. $#v) {
            my $v = $v[$i];
            push @bad, "key ($k): version " . $show->($v) . ' does not have __start_at < __end_at'
                if defined $v->{end} && !($v->{start} < $v->{end});
            next if $i == $#v;
            my $next = $v[ $i + 1 ];
            if (!defined $v->{end}) {
                push @bad, "key ($k): open version " . $show->($v) . ' is followed by '
                         . $show->($next);
            }
            elsif ($v->{end} > $next->{start}) {
                push @bad, "key ($k): versions " . $show->($v) . ' and ' . $show->($next) . ' overlap';
            }
        }
    }
    return @bad;
}

# ---------------------------------------------------------------------------
# Snapshot + CDC modes: full snapshots interleaved with CDC events on one
# SCD type 1 target, in one ordering domain.
#
# A case of these modes has, besides the CDC rows of its runs, a list of
# snapshots per run ($case{run_snaps}[i]: the snapshots registered in the
# step of run i+1, in increasing version order across the runs).  Each
# snapshot is a table snap_<id> holding the full state at its version, made
# visible to the snapshot flow's function by a row (version, 'snap_<id>') of
# the table snap_versions; the function returns the snapshot with the
# smallest version above the latest applied one.  CDC sequences are odd and
# snapshot versions even (plus a common offset), so a CDC event never
# shares a sequence with a snapshot, except the deliberate "coincident"
# events of snap_cdc_mixed: an exact copy of a snapshot row through CDC, or
# an event at v for a key the snapshot lacks -- both valid streams.
#
# The model: a snapshot at v is a truncate at v plus an upsert at v for each
# of its rows (Model::snapshot_events), folded with the CDC events.

sub is_snap_mode { return $_[0] =~ /^snap_/ ? 1 : 0 }

# The snapshot flow's name, from the CDC flow's (f<tag>).
sub snap_flow_name { return "$_[0]_snap" }

sub generate_snap_case {
    my ($seed, $mode) = @_;
    my $mixed = $mode eq 'snap_cdc_mixed' ? 1 : 0;
    my %case = (seed => $seed, mode => $mode, scd => 1, snap => 1, truncates => 0,
                flow => {}, partial => {});

    # Columns: an int key (snap_cdc) or (k1 int, k2 text) (snap_cdc_mixed).
    $case{key_cols}   = $mixed ? [qw(k1 k2)] : ['k'];
    $case{value_cols} = [ 'a', 'b', (rand() < 0.5 ? ('c') : ()) ];
    my @kcols = @{ $case{key_cols} };
    my @vcols = @{ $case{value_cols} };

    my @src_cols = (@kcols, @vcols, 'op', 'seq');
    shuffle_in_place(\@src_cols) if rand() < 0.4;
    $case{src_cols} = \@src_cols;

    # Keys.
    my $n_keys = 5 + int(rand(8));    # 5..12
    my (@keys, %key_used);
    while (@keys < $n_keys) {
        my $key = $mixed ? [ 1 + int(rand(4)), pick(qw(x y z), 'w v', "q'r") ]
                         : [ int(rand(200)) - 20 ];
        next if $key_used{ key_string($key) }++;
        push @keys, $key;
    }

    # The ordering domain: slots t in [t_lo, t_hi]; a CDC event at slot t has
    # sequence offset + 2t + 1, a snapshot at slot t has version offset + 2t.
    # The offset sometimes takes the domain past the range of int.
    my $n_events = 20 + int(rand(61));    # 20..80 distinct CDC events
    my $t_lo     = rand() < 0.2 ? -int(rand(10)) : 0;
    my $t_hi     = $t_lo + int($n_events / $n_keys * 1.5) + 3;
    my $offset   = $mixed && rand() < 0.25 ? (rand() < 0.5 ? 1 : -1) * 5_000_000_000 : 0;
    my $cdc_seq  = sub { $offset + 2 * $_[0] + 1 };
    my $p_delete = $mixed ? 0.2 : 0.15;

    my %slot_used;      # "key|seq" taken
    my %values_of;      # key string => [ value sets of its upserts and snapshot rows ]
    my @rows;
    while (@rows < $n_events) {
        my ($key, $seq);
        for (1 .. 100) {
            my $try_key = pick(@keys);
            my $try_seq = $cdc_seq->($t_lo + int(rand($t_hi - $t_lo + 1)));
            next if $slot_used{ key_string($try_key) . "|$try_seq" };
            ($key, $seq) = ($try_key, $try_seq);
            last;
        }
        last unless defined $key;
        $slot_used{ key_string($key) . "|$seq" } = 1;
        my %row = (seq => $seq);
        @row{@kcols} = @$key;
        if (rand() < $p_delete) {
            $row{op} = 'D';
            my $with_values = rand() < 0.5;    # a delete's values are ignored
            $row{$_} = $with_values && rand() > 0.1 ? random_value($_) : undef for @vcols;
        }
        else {
            my $r = rand();
            $row{op} = $r < 0.05 ? undef : $r < 0.5 ? 'I' : 'U';
            $row{$_} = rand() < 0.1 ? undef : random_value($_) for @vcols;
            push @{ $values_of{ key_string($key) } }, { map { $_ => $row{$_} } @vcols };
        }
        push @rows, \%row;
    }

    # Snapshots: 1..4 distinct slots in [t_lo - 1, t_hi + 1] (so also
    # before the first and after the last CDC event), each a random subset
    # of the keys with random values (NULLs too).  snap_cdc_mixed sometimes
    # repeats values a key already had (unchanged rows) and sometimes adds
    # coincident CDC events at the snapshot's version.
    my $n_snaps = 1 + int(rand(4));
    my %tslot;
    $tslot{ $t_lo - 1 + int(rand($t_hi - $t_lo + 3)) } = 1 while keys %tslot < $n_snaps;
    my @snaps;
    my $id = 0;
    for my $t (sort { $a <=> $b } keys %tslot) {
        my $version = $offset + 2 * $t;
        my $p_in    = rand() < 0.05 ? 0 : pick(0.3, 0.6, 0.9);    # sometimes empty
        my (@srows, %holds);
        for my $key (@keys) {
            next unless rand() < $p_in;
            my $ks = key_string($key);
            my $vals;
            if ($mixed && $values_of{$ks} && rand() < 0.35) {
                $vals = { %{ pick(@{ $values_of{$ks} }) } };
            }
            else {
                $vals = { map { $_ => (rand() < 0.15 ? undef : random_value($_)) } @vcols };
            }
            push @srows, { key => [@$key], vals => $vals };
            push @{ $values_of{$ks} }, $vals;
            $holds{$ks} = $vals;
        }
        shuffle_in_place(\@srows);
        my %snap = (id => ++$id, version => $version, rows => \@srows);
        # How its table looks: column order, and int value columns as bigint.
        my @scols = (@kcols, @vcols);
        shuffle_in_place(\@scols) if rand() < 0.4;
        $snap{cols} = \@scols;
        $snap{bigint} = { map { $_ => 1 } grep { $TYPE{$_} eq 'int' } @vcols }
            if $mixed && rand() < 0.2;
        push @snaps, \%snap;

        # Coincident CDC events at exactly the version.
        next unless $mixed && rand() < 0.3;
        for (1 .. 1 + int(rand(2))) {
            my $key = pick(@keys);
            my $ks  = key_string($key);
            next if $slot_used{"$ks|$version"}++;
            my %row = (seq => $version);
            @row{@kcols} = @$key;
            if ($holds{$ks}) {    # the same row through CDC: an exact duplicate
                $row{op} = pick('I', 'U', undef);
                $row{$_} = $holds{$ks}{$_} for @vcols;
            }
            elsif (rand() < 0.3) {
                $row{op} = 'D';
                $row{$_} = undef for @vcols;
            }
            else {                # an upsert at v survives the snapshot lacking the key
                $row{op} = pick('I', 'U');
                $row{$_} = rand() < 0.1 ? undef : random_value($_) for @vcols;
            }
            $row{coincident} = 1;
            push @rows, \%row;
        }
    }

    # Exact duplicates: the same row again, maybe in a later run.
    my $p_dup = $mixed ? 0.2 : 0.1;
    my @all = @rows;
    for my $row (@rows) {
        next unless rand() < $p_dup;
        push @all, { %$row, dup => 1 };
        push @all, { %$row, dup => 1 } if rand() < 0.2;
    }

    # Arrival order and the split into runs (empty runs are allowed).
    shuffle_in_place(\@all);
    my $n_runs = 1 + int(rand(6));
    my @cuts = sort { $a <=> $b } map { int(rand(@all + 1)) } 2 .. $n_runs;
    my @runs;
    my $from = 0;
    for my $to (@cuts, scalar @all) {
        push @runs, [ @all[ $from .. $to - 1 ] ];
        $from = $to;
    }
    # snap_cdc_mixed: sometimes a later run replays part of an earlier one.
    if ($mixed && @runs > 1 && rand() < 0.3) {
        my $i = int(rand(@runs - 1));
        my $j = $i + 1 + int(rand(@runs - $i - 1));
        push @{ $runs[$j] }, map { { %$_, dup => 1 } } grep { rand() < 0.5 } @{ $runs[$i] };
    }
    $case{runs}       = \@runs;
    $case{row_by_row} = [ map { rand() < 0.2 ? 1 : 0 } @runs ];

    # Snapshot i goes into the step of run j_i, j_i non-decreasing.
    my @at = sort { $a <=> $b } map { int(rand(@runs)) } @snaps;
    $case{run_snaps} = [ map { [] } @runs ];
    push @{ $case{run_snaps}[ $at[$_] ] }, $snaps[$_] for 0 .. $#snaps;

    # When the snapshot flow is created: before the CDC flow (the target
    # created by the test), after it, or in the step of the first run that
    # has a snapshot (the only choice unless the first run has one).
    $case{snap_flow_at} = @{ $case{run_snaps}[0] } ? pick('before_cdc', 'after_cdc', 'first_snapshot')
                                                    : 'first_snapshot';
    $case{precreate_target} = $case{snap_flow_at} eq 'before_cdc' || rand() < 0.3 ? 1 : 0;
    if ($case{precreate_target}) {
        my @tcols = (@kcols, @vcols);
        shuffle_in_place(\@tcols) if $mixed && rand() < 0.3;
        $case{target_cols_order} = \@tcols;
    }
    # The snapshot flow's keys (matched case-insensitively) and function.
    $case{snap_keys} = [ $mixed && rand() < 0.3 ? map { uc } @kcols : @kcols ];
    $case{snap_fn}   = $mixed ? pick('sql', 'sql_search_path', 'plpgsql') : 'sql';
    return \%case;
}

# Every snapshot of a case, in version order.
sub case_snapshots {
    my ($case) = @_;
    return map { @$_ } @{ $case->{run_snaps} || [] };
}

# The snapshot flow is created at the start (before or after the CDC flow)
# if the case says so and the first run has a snapshot; else in the step of
# the first run that has one.  Returns 'before_cdc', 'after_cdc' or the run
# index (0-based), or undef if there is no snapshot at all.
sub snap_flow_created_at {
    my ($case) = @_;
    my $rs = $case->{run_snaps};
    my ($first) = grep { @{ $rs->[$_] } } 0 .. $#$rs;
    return undef unless defined $first;
    return $case->{snap_flow_at} if $first == 0 && $case->{snap_flow_at} ne 'first_snapshot';
    return $first;
}

# The psql script of a snapshot + CDC case (see case_sql).
sub snap_case_sql {
    my ($case, $tag, $drop) = @_;
    my $schema     = "prop_$tag";
    my @key_cols   = @{ $case->{key_cols} };
    my @value_cols = @{ $case->{value_cols} };
    my @src_cols   = @{ $case->{src_cols} };
    my $cdc_flow   = "f$tag";
    my $snap_flow  = snap_flow_name($cdc_flow);
    my %type       = (%TYPE, seq => 'bigint');    # one bigint ordering domain
    my @sql;

    push @sql, "\\echo \@\@BEGIN $tag",
               "DROP SCHEMA IF EXISTS $schema CASCADE;",
               "DO \$\$ BEGIN IF to_regprocedure('autocdc.drop_flow(text)') IS NOT NULL"
             . " AND to_regclass('autocdc.flows') IS NOT NULL THEN"
             . " EXECUTE 'SELECT autocdc.drop_flow(name) FROM autocdc.flows WHERE name IN"
             . " (''$cdc_flow'', ''$snap_flow'')'; END IF; END \$\$;",
               "CREATE SCHEMA $schema;",
               "CREATE TABLE $schema.src (" . join(', ', map { "$_ $type{$_}" } @src_cols) . ");",
               "CREATE TABLE $schema.snap_versions (version bigint PRIMARY KEY, relname text NOT NULL);";

    # The snapshot function.  It runs with search_path = pg_catalog: every
    # name in it is qualified, or it sets its own search_path.
    my $fn_head = "CREATE FUNCTION $schema.next_snap(latest bigint)"
                . ' RETURNS TABLE (snapshot regclass, version bigint)';
    my $pick_next = ' WHERE latest IS NULL OR v.version > latest ORDER BY v.version LIMIT 1';
    if ($case->{snap_fn} eq 'sql_search_path') {
        push @sql, "$fn_head LANGUAGE sql SET search_path = $schema AS \$fn\$"
                 . ' SELECT quote_ident(v.relname)::regclass, v.version FROM snap_versions v'
                 . "$pick_next \$fn\$;";
    }
    elsif ($case->{snap_fn} eq 'plpgsql') {
        push @sql, "$fn_head LANGUAGE plpgsql AS \$fn\$ BEGIN RETURN QUERY"
                 . " SELECT format('%I.%I', '$schema', v.relname)::regclass, v.version"
                 . " FROM $schema.snap_versions v$pick_next; END \$fn\$;";
    }
    else {
        push @sql, "$fn_head LANGUAGE sql AS \$fn\$"
                 . " SELECT format('%I.%I', '$schema', v.relname)::regclass, v.version"
                 . " FROM $schema.snap_versions v$pick_next \$fn\$;";
    }

    if ($case->{precreate_target}) {
        push @sql, "CREATE TABLE $schema.tgt ("
                 . join(', ', map { "$_ $type{$_}" } @{ $case->{target_cols_order} })
                 . ', PRIMARY KEY (' . join(', ', @key_cols) . '));';
    }

    my $snap_flow_sql = "SELECT autocdc.create_auto_cdc_from_snapshot_flow(\n    "
        . join(",\n    ", "target => '$schema.tgt'", 'keys => ' . sql_array($case->{snap_keys}),
                          "source_function => '$schema.next_snap(bigint)'",
                          "name => '$snap_flow'", "pipeline => 'p$tag'") . ');';
    my $cdc_flow_sql = "SELECT autocdc.create_auto_cdc_flow(\n    "
        . join(",\n    ", "target => '$schema.tgt'", "source => '$schema.src'::regclass",
                          'keys => ' . sql_array(\@key_cols), "sequence_by => 'seq'",
                          "apply_as_deletes => 'op = ''D'''",
                          "except_column_list => ARRAY['op', 'seq']::text[]",
                          "pipeline => 'p$tag'", "name => '$cdc_flow'") . ');';
    my $snap_at = snap_flow_created_at($case) // 'never';
    push @sql, $snap_flow_sql if $snap_at eq 'before_cdc';
    push @sql, $cdc_flow_sql;
    push @sql, $snap_flow_sql if $snap_at eq 'after_cdc';

    my $run_no = 0;
    for my $run (@{ $case->{runs} }) {
        $run_no++;
        if (@$run) {
            my $cols = join ', ', @src_cols;
            my @tuples = map { my $r = $_; '(' . join(', ', map { sql_value($_, $r->{$_}) } @src_cols) . ')' } @$run;
            if ($case->{row_by_row}[ $run_no - 1 ]) {
                push @sql, "INSERT INTO $schema.src ($cols) VALUES $_;" for @tuples;
            }
            else {
                push @sql, "INSERT INTO $schema.src ($cols) VALUES\n    " . join(",\n    ", @tuples) . ';';
            }
        }
        for my $snap (@{ $case->{run_snaps}[ $run_no - 1 ] }) {
            my $table = "snap_$snap->{id}";
            my @scols = @{ $snap->{cols} };
            my %stype = (%type, map { $_ => 'bigint' } keys %{ $snap->{bigint} || {} });
            push @sql, "CREATE TABLE $schema.$table (" . join(', ', map { "$_ $stype{$_}" } @scols) . ');';
            if (@{ $snap->{rows} }) {
                my @tuples = map {
                    my $r = $_;
                    my %v = (%{ $r->{vals} }, map { $key_cols[$_] => $r->{key}[$_] } 0 .. $#key_cols);
                    '(' . join(', ', map { sql_value($_, $v{$_}) } @scols) . ')';
                } @{ $snap->{rows} };
                push @sql, "INSERT INTO $schema.$table (" . join(', ', @scols) . ") VALUES\n    "
                         . join(",\n    ", @tuples) . ';';
            }
            push @sql, "INSERT INTO $schema.snap_versions VALUES ($snap->{version}, '$table');";
        }
        push @sql, $snap_flow_sql if $snap_at eq ($run_no - 1);
        push @sql, "SELECT '\@\@RUN', '$tag', $run_no, status, rows_read, rows_upserted,"
                 . " rows_deleted, rows_skipped, flow FROM autocdc.run(pipeline => 'p$tag') ORDER BY flow;";
    }
    push @sql, "SELECT '\@\@ROW', '$tag', " . join(', ', target_cols($case))
             . " FROM $schema.tgt ORDER BY " . join(', ', @key_cols) . ';';
    push @sql, "DROP SCHEMA $schema CASCADE;" if $drop;
    push @sql, "\\echo \@\@END $tag", '';
    return join "\n", @sql;
}

# The flows autocdc.run() reports in run $n (1-based) of a snapshot + CDC
# case, each [ which, rows read ]: the CDC flow reads the rows inserted in
# its step, the snapshot flow (once it exists) the rows of the snapshots
# registered in it.
sub snap_run_flows {
    my ($case, $n) = @_;
    my @flows = ([ 'cdc', scalar @{ $case->{runs}[ $n - 1 ] } ]);
    my $at = snap_flow_created_at($case);
    if (defined $at && ($at !~ /^\d+$/ || $at <= $n - 1)) {
        my $read = 0;
        $read += @{ $_->{rows} } for @{ $case->{run_snaps}[ $n - 1 ] };
        push @flows, [ 'snapshot', $read ];
    }
    return @flows;
}

# The problems of run $n of a snapshot + CDC case: every flow that exists
# reports one row with status success (and, with --check-counts, reads
# what its step gave it).  $rr: the @@RUN rows of the run, each
# [ status, read, upserted, deleted, skipped, flow ].
sub snap_run_problems {
    my ($case, $n, $rr) = @_;
    my @want = snap_run_flows($case, $n);
    my (@problems, %got);
    for my $row (@$rr) {
        my $which = ($row->[5] // '') =~ /_snap$/ ? 'snapshot' : 'cdc';
        push @problems, "run $n: autocdc.run() reported the $which flow twice" if $got{$which};
        $got{$which} = $row;
    }
    push @problems, "run $n: autocdc.run() returned " . scalar(@$rr) . ' rows, expected '
                  . scalar(@want) . ' (' . join(', ', map { "$_->[0] flow" } @want) . ')'
        if @$rr != @want;
    for my $w (@want) {
        my ($which, $given) = @$w;
        my $row = $got{$which};
        if (!$row) {
            push @problems, "run $n: no row for the $which flow";
            next;
        }
        my ($status, $read) = @$row;
        push @problems, "run $n: $which flow: status '$status', expected 'success'"
            if $status ne 'success';
        push @problems, "run $n: $which flow: rows_read $read, but " . ($which eq 'cdc'
                        ? "$given rows were inserted" : "the snapshots registered hold $given rows")
            if $opt{'check-counts'} && $read ne $given;
    }
    return @problems;
}

# describe_flow()'s words for the snapshot side of a case.
sub describe_snap_flow {
    my ($case) = @_;
    my $at = snap_flow_created_at($case);
    my $when = !defined $at ? 'never (no snapshot)'
             : $at =~ /^\d+$/ ? 'in the step of run ' . ($at + 1)
             : $at eq 'before_cdc' ? 'before the CDC flow' : 'after the CDC flow';
    return ('sequence_by=seq bigint',
            'snapshot_flow: keys=[' . join(',', @{ $case->{snap_keys} }) . "] function=$case->{snap_fn}"
          . " created $when, target created by "
          . ($case->{precreate_target} ? 'the test (' . join(', ', @{ $case->{target_cols_order} }) . ')'
                                       : 'the CDC flow'),
            'snapshots=' . scalar(case_snapshots($case)));
}

# report_failure()'s lines for the snapshots registered in one run's step.
sub describe_run_snaps {
    my ($case, $snaps) = @_;
    my @out;
    for my $snap (@$snaps) {
        my @cols = (@{ $case->{key_cols} }, @{ $case->{value_cols} });
        push @out, "      snapshot version $snap->{version} (table snap_$snap->{id}, "
                 . scalar(@{ $snap->{rows} }) . ' rows'
                 . ($snap->{bigint} && %{ $snap->{bigint} } ? ', int columns as bigint' : '') . '):';
        for my $r (@{ $snap->{rows} }) {
            my %v = (%{ $r->{vals} }, map { $case->{key_cols}[$_] => $r->{key}[$_] } 0 .. $#{ $case->{key_cols} });
            push @out, '        ' . join(' ', map { "$_=" . (defined $v{$_} ? ($TYPE{$_} eq 'text' ? "'$v{$_}'" : $v{$_}) : 'NULL') } @cols);
        }
    }
    return @out;
}

# ---------------------------------------------------------------------------
# Reporting

sub describe_flow {
    my ($case) = @_;
    my @d = ("mode=$case->{mode}",
             'keys=(' . join(', ', map { "$_ $TYPE{$_}" } @{ $case->{key_cols} }) . ')',
             'values=(' . join(', ', map { "$_ $TYPE{$_}" } @{ $case->{value_cols} }) . ')');
    my $f = $case->{flow};
    push @d, 'ignore_null_updates=' . ($f->{ignore_null_updates} ? 'true' : 'false')
        if exists $f->{ignore_null_updates};
    for my $o (qw(ignore_null_updates_column_list ignore_null_updates_except_column_list)) {
        push @d, "$o=[" . join(',', @{ $f->{$o} }) . ']' if $f->{$o};
    }
    push @d, "stored_as_scd_type='bitemporal' system_sequence_by=sys" if $case->{scd} == 3;
    if ($case->{scd} == 2) {
        push @d, 'stored_as_scd_type=2';
        for my $o (qw(track_history_column_list track_history_except_column_list)) {
            push @d, "$o=[" . join(',', @{ $f->{$o} }) . ']' if $f->{$o};
        }
        push @d, 'tracked=[' . join(',', sort keys %{ $case->{tracked} }) . ']';
    }
    push @d, 'partial=[' . join(',', sort keys %{ $case->{partial} }) . ']';
    push @d, 'columns_to_update=cols' if $case->{listed};
    push @d, 'apply_as_truncates=' . ($case->{truncates} ? "op='T'" : 'none');
    push @d, describe_snap_flow($case) if $case->{snap};
    return join ' ', @d;
}

sub describe_row {
    my ($case, $row) = @_;
    my $ev = row_to_event($case, $row);
    my @f = map { "$_=" . (defined $row->{$_} ? ($TYPE{$_} eq 'text' ? "'$row->{$_}'" : $row->{$_}) : 'NULL') }
            (@{ $case->{key_cols} }, @{ $case->{value_cols} }, 'op', 'seq',
             ($case->{scd} == 3 ? ('sys') : ()));
    return sprintf('%-8s %s%s%s', $ev->{kind}, join(' ', @f), $row->{dup} ? '  (exact duplicate)' : '',
                   $row->{coincident} ? '  (at a snapshot version)' : '');
}

sub report_failure {
    my ($case, $tag, $verdict, $res) = @_;
    my @out;
    push @out, "FAIL seed $case->{seed}" . ($tag ne $case->{seed} ? " (case $tag)" : '')
             . " [$verdict->{class}]";
    push @out, '  flow: ' . describe_flow($case);
    push @out, map { "  $_" } split /\n/, $verdict->{reason};
    push @out, '  events in arrival order, split into runs:';
    my $n = 0;
    for my $run (@{ $case->{runs} }) {
        $n++;
        my $how = @$run ? ($case->{row_by_row}[ $n - 1 ] ? 'one INSERT per row' : 'one INSERT') : 'no rows';
        my $result = '';
        if ($res && $res->{runs}{$n} && @{ $res->{runs}{$n} }) {
            my @results;
            for my $rr ($case->{snap} ? @{ $res->{runs}{$n} } : $res->{runs}{$n}[0]) {
                my ($st, $rd, $up, $de, $sk, $fl) = @$rr;
                push @results, ($case->{snap} ? ($fl =~ /_snap$/ ? 'snapshot flow: ' : 'cdc flow: ') : '')
                             . "status=$st read=$rd upserted=$up deleted=$de skipped=$sk";
            }
            $result = ' -> ' . join('; ', @results);
        }
        push @out, "    run $n (" . scalar(@$run) . " rows, $how)$result";
        push @out, map { '      ' . describe_row($case, $_) } @$run;
        push @out, describe_run_snaps($case, $case->{run_snaps}[ $n - 1 ]) if $case->{snap};
    }
    my $cols = join '|', target_cols($case);
    my @expected = @{ expected_lines($case) };
    my %in_actual   = map { $_ => 1 } @{ $verdict->{actual} || [] };
    my %in_expected = map { $_ => 1 } @expected;
    push @out, "  expected rows ($cols):";
    push @out, map { '    ' . $_ . ($verdict->{actual} && !$in_actual{$_} ? '   <- missing' : '') } @expected;
    push @out, '    (none)' unless @expected;
    if ($verdict->{actual}) {
        push @out, "  actual rows ($cols):";
        push @out, map { '    ' . $_ . (!$in_expected{$_} ? '   <- unexpected' : '') } @{ $verdict->{actual} };
        push @out, '    (none)' unless @{ $verdict->{actual} };
    }
    my $repro = "$workdir/repro_$tag.sql";
    spew($repro, $SCRIPT_HEADER . case_sql($case, $tag, 0));
    push @out, "  reproduce: psql -f $repro  (it leaves the schema prop_$tag in place)";
    return join("\n", @out) . "\n";
}

# ---------------------------------------------------------------------------
# Shrinking: look for a smaller case (fewer runs, fewer rows) that still
# fails the same way.  Each attempt is one psql call.

my $shrink_counter = 0;

sub run_single {
    my ($case, $tag) = @_;
    my $base = "$workdir/single_$tag";
    spew("$base.sql", $SCRIPT_HEADER . case_sql($case, $tag, !$opt{keep}));
    my $pid = start_psql("$base.sql", "$base.out", "$base.err");
    waitpid($pid, 0);
    my $res = parse_output(slurp("$base.out"))->{$tag};
    my $verdict = judge($case, $res, slurp("$base.err"));
    if (!$opt{keep}) {
        unlink "$base.sql", "$base.out", "$base.err";
        drop_schema($tag) if $verdict;
    }
    return ($verdict, $res);
}

sub shrink {
    my ($case, $class) = @_;
    my %c = %$case;
    $c{runs}       = [ map { [@$_] } @{ $case->{runs} } ];
    $c{row_by_row} = [ @{ $case->{row_by_row} } ];
    $c{run_snaps}  = [ map { [@$_] } @{ $case->{run_snaps} } ] if $case->{run_snaps};
    my ($best_tag, $best_verdict, $best_res);

    my $try = sub {
        my ($cand) = @_;
        my $tag = "$case->{seed}_" . ++$shrink_counter;
        my ($verdict, $res) = run_single($cand, $tag);
        return 0 unless $verdict && $verdict->{class} eq $class;
        ($best_tag, $best_verdict, $best_res) = ($tag, $verdict, $res);
        return 1;
    };

    my $progress = 1;
    while ($progress) {
        $progress = 0;
        # 1. drop a whole run
        for (my $i = 0; $i < @{ $c{runs} } && @{ $c{runs} } > 1; ) {
            my %cand = (%c, runs => [ @{ $c{runs} } ], row_by_row => [ @{ $c{row_by_row} } ]);
            splice @{ $cand{runs} }, $i, 1;
            splice @{ $cand{row_by_row} }, $i, 1;
            if ($c{run_snaps}) {    # the run's snapshots go with it
                $cand{run_snaps} = [ @{ $c{run_snaps} } ];
                splice @{ $cand{run_snaps} }, $i, 1;
            }
            if ($try->(\%cand)) { %c = %cand; $progress = 1 } else { $i++ }
        }
        # 2. merge a run into the next one
        for (my $i = 0; $i + 1 < @{ $c{runs} }; ) {
            my %cand = (%c, runs => [ @{ $c{runs} } ], row_by_row => [ @{ $c{row_by_row} } ]);
            my @merged = (@{ $cand{runs}[$i] }, @{ $cand{runs}[ $i + 1 ] });
            splice @{ $cand{runs} }, $i, 2, \@merged;
            splice @{ $cand{row_by_row} }, $i, 2, 0;
            if ($c{run_snaps}) {
                $cand{run_snaps} = [ @{ $c{run_snaps} } ];
                splice @{ $cand{run_snaps} }, $i, 2, [ @{ $c{run_snaps}[$i] }, @{ $c{run_snaps}[ $i + 1 ] } ];
            }
            if ($try->(\%cand)) { %c = %cand; $progress = 1 } else { $i++ }
        }
        # 3. drop chunks of rows, halving the chunk size down to one row
        for my $r (0 .. $#{ $c{runs} }) {
            my $chunk = int(@{ $c{runs}[$r] } / 2) || 1;
            while ($chunk >= 1) {
                for (my $i = 0; $i < @{ $c{runs}[$r] }; ) {
                    my %cand = (%c, runs => [ map { [@$_] } @{ $c{runs} } ]);
                    splice @{ $cand{runs}[$r] }, $i, $chunk;
                    if ($try->(\%cand)) { %c = %cand; $progress = 1 } else { $i += $chunk }
                }
                last if $chunk == 1;
                $chunk = int($chunk / 2);
            }
        }
        next unless $c{run_snaps};
        # 4. drop a whole snapshot
        for my $r (0 .. $#{ $c{run_snaps} }) {
            for (my $i = 0; $i < @{ $c{run_snaps}[$r] }; ) {
                my %cand = (%c, run_snaps => [ map { [@$_] } @{ $c{run_snaps} } ]);
                splice @{ $cand{run_snaps}[$r] }, $i, 1;
                if ($try->(\%cand)) { %c = %cand; $progress = 1 } else { $i++ }
            }
        }
        # 5. drop chunks of a snapshot's rows, halving the chunk size
        for my $r (0 .. $#{ $c{run_snaps} }) {
            for my $s (0 .. $#{ $c{run_snaps}[$r] }) {
                my $chunk = int(@{ $c{run_snaps}[$r][$s]{rows} } / 2) || 1;
                while ($chunk >= 1) {
                    for (my $i = 0; $i < @{ $c{run_snaps}[$r][$s]{rows} }; ) {
                        my %cand = (%c, run_snaps => [ map { [@$_] } @{ $c{run_snaps} } ]);
                        my %snap = %{ $c{run_snaps}[$r][$s] };
                        $snap{rows} = [ @{ $snap{rows} } ];
                        splice @{ $snap{rows} }, $i, $chunk;
                        $cand{run_snaps}[$r][$s] = \%snap;
                        if ($try->(\%cand)) { %c = %cand; $progress = 1 } else { $i += $chunk }
                    }
                    last if $chunk == 1;
                    $chunk = int($chunk / 2);
                }
            }
        }
    }
    return $best_tag ? (\%c, $best_tag, $best_verdict, $best_res) : ();
}

# ---------------------------------------------------------------------------
# Main

if ($opt{'print-sql'}) {
    for my $seed ($first .. $first + $n_seeds - 1) {
        my $case = generate_case($seed);
        print "-- seed $seed: ", describe_flow($case), "\n", case_sql($case, $seed, 0);
        print "-- expected rows:\n", map { "--   $_\n" } @{ expected_lines($case) };
        print "\n";
    }
    rmdir $workdir;
    exit 0;
}

# Fail early and clearly if the database cannot be reached.
{
    my $out = `psql -X -q -A -t -c "SELECT count(*) > 0 FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace WHERE n.nspname = 'autocdc' AND p.proname = 'run'" 2>&1`;
    die "property: cannot run psql: $out" if $? != 0;
    die "property: autocdc.run() does not exist in this database"
      . " (run CREATE EXTENSION autocdc first)\n" unless $out =~ /^t$/m;
}

# Does the engine accept SCD type 2 flows?  (Checked only if SCD type 2
# modes are selected; the probe's objects are rolled back.)  If it refuses
# them with its "stored_as_scd_type ..." error, the SCD type 2 seeds are not
# run but count as failures.  Any other error of the probe is left to the
# seeds themselves to show.
my $scd2_refused;    # the engine's error message, if it refuses SCD type 2
if (grep { is_scd2_mode($_) } @MODES) {
    my $probe = "$workdir/scd2_probe.sql";
    spew($probe, join "\n",
         'SET client_min_messages = warning;',
         'BEGIN;',
         'CREATE SCHEMA prop_scd2_probe;',
         'CREATE TABLE prop_scd2_probe.src (k int, a int, op text, seq int);',
         "SELECT autocdc.create_auto_cdc_flow(target => 'prop_scd2_probe.tgt',"
       . " source => 'prop_scd2_probe.src'::regclass, keys => ARRAY['k'], sequence_by => 'seq',"
       . " stored_as_scd_type => 2,"
       . " except_column_list => ARRAY['op', 'seq'], pipeline => 'prop_scd2_probe',"
       . " name => 'prop_scd2_probe');",
         'ROLLBACK;', '');
    my $out = `psql -X -q -A -t -v ON_ERROR_STOP=1 -f $probe 2>&1`;
    if ($? != 0 && $out =~ /stored_as_scd_type/) {
        ($scd2_refused) = $out =~ /(ERROR:.*)/;
        $scd2_refused //= $out;
        $scd2_refused =~ s/\s+$//;
        print "property: the engine refuses stored_as_scd_type => 2 ($scd2_refused);"
            . " every SCD type 2 seed counts as a failure without being run"
            . " (--scd1-only runs only the SCD type 1 modes)\n";
    }
    unlink $probe;
}

# Does the engine have snapshot flows?  (Checked only if snapshot modes are
# selected.)  If not, every snapshot seed counts as a failure without being
# run.
my $snap_missing;
if (grep { is_snap_mode($_) } @MODES) {
    my $out = `psql -X -q -A -t -c "SELECT count(*) > 0 FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace WHERE n.nspname = 'autocdc' AND p.proname = 'create_auto_cdc_from_snapshot_flow'" 2>&1`;
    if ($? == 0 && $out !~ /^t$/m) {
        $snap_missing = 'autocdc.create_auto_cdc_from_snapshot_flow() does not exist';
        print "property: $snap_missing; every snapshot seed counts as a failure without being run\n";
    }
}

my @seeds = ($first .. $first + $n_seeds - 1);
my %case_of;    # seed => case, generated lazily
sub case_for { my ($s) = @_; return $case_of{$s} //= generate_case($s) }

my ($passed, $failed) = (0, 0);
my %mode_count;
my @failures;    # [ case, verdict ]
my $n_unavailable = 0;    # SCD type 2 seeds not run, the engine refusing SCD type 2
if (defined $scd2_refused) {
    my @run;
    for my $seed (@seeds) {
        my $mode = $MODES[ $seed % @MODES ];
        if (!is_scd2_mode($mode)) { push @run, $seed; next }
        $mode_count{$mode}++;
        $failed++;
        $n_unavailable++;
        print "FAIL seed $seed [scd2-unavailable] mode=$mode: not run, the engine refuses SCD type 2\n";
    }
    @seeds = @run;
}
my $n_snap_unavailable = 0;    # snapshot seeds not run, the engine lacking snapshot flows
if (defined $snap_missing) {
    my @run;
    for my $seed (@seeds) {
        my $mode = $MODES[ $seed % @MODES ];
        if (!is_snap_mode($mode)) { push @run, $seed; next }
        $mode_count{$mode}++;
        $failed++;
        $n_snap_unavailable++;
        print "FAIL seed $seed [snapshot-unavailable] mode=$mode: not run, $snap_missing\n";
    }
    @seeds = @run;
}
my @queue;       # batches of seeds still to run
push @queue, [ splice(@seeds, 0, $opt{batch}) ] while @seeds;
my %running;     # pid => { seeds, files }
my $batch_no = 0;
my $connect_failures = 0;

while (@queue || %running) {
    while (@queue && keys(%running) < $opt{jobs}) {
        my $batch = shift @queue;
        my $base  = "$workdir/batch_" . ++$batch_no;
        spew("$base.sql", $SCRIPT_HEADER . join('', map { case_sql(case_for($_), $_, !$opt{keep}) } @$batch));
        my $pid = start_psql("$base.sql", "$base.out", "$base.err");
        $running{$pid} = { seeds => $batch, base => $base };
    }
    my $pid = waitpid(-1, 0);
    next unless $pid > 0 && $running{$pid};
    my $job  = delete $running{$pid};
    my $rc   = $? >> 8;
    my $base = $job->{base};
    my $res  = parse_output(slurp("$base.out"));
    my $err  = slurp("$base.err");

    my @left;    # seeds after the one psql stopped at: run them again
    my $stopped_at;
    for my $seed (@{ $job->{seeds} }) {
        my $r = $res->{$seed};
        if (!$r || !$r->{begun}) {
            if ($rc == 0) { die "property: psql produced no output for seed $seed\n$err" }
            push @left, $seed;
            next;
        }
        $stopped_at = $seed unless $r->{ended};
        my $case = case_for($seed);
        my $verdict = judge($case, $r, $err);
        $mode_count{ $case->{mode} }++;
        if ($verdict) {
            $failed++;
            push @failures, [ $case, $verdict ];
            print report_failure($case, $seed, $verdict, $r);
        }
        else {
            $passed++;
            print "ok seed $seed (" . describe_flow($case) . ")\n" if $opt{verbose};
        }
        delete $case_of{$seed} unless $verdict;    # keep memory small in soaks
    }
    if (@left) {
        if (!defined $stopped_at) {
            # Nothing ran: typically the server is restarting after a crash
            # caused by an earlier seed.  Wait a little and try again.
            die "property: psql failed before running any seed of its batch:\n$err"
                if ++$connect_failures > 10;
            print "psql could not start its batch (", ($err =~ /^(.*)$/m)[0] // '', "); retrying\n";
            sleep 3;
        }
        unshift @queue, \@left;
    }
    unlink "$base.sql", "$base.out", "$base.err" unless $opt{keep};
}

# Drop the schemas left by seeds that stopped with an error.
if (!$opt{keep}) {
    for my $f (@failures) {
        drop_schema($f->[0]{seed});
    }
}

if ($opt{shrink}) {
    for my $f (@failures[ 0 .. ($#failures < 2 ? $#failures : 2) ]) {
        my ($case, $verdict) = @$f;
        print "shrinking seed $case->{seed} ...\n";
        my ($small, $tag, $v, $r) = shrink($case, $verdict->{class});
        if ($small) { print "smallest failing case found for seed $case->{seed}:\n", report_failure($small, $tag, $v, $r) }
        else        { print "seed $case->{seed}: no smaller case fails the same way\n" }
    }
}

print 'modes: ' . join(', ', map { "$_=" . ($mode_count{$_} // 0) } @MODES) . "\n";
print "property: $n_unavailable SCD type 2 seeds failed without being run:"
    . " the engine refuses stored_as_scd_type => 2 ($scd2_refused)\n" if $n_unavailable;
print "property: $n_snap_unavailable snapshot seeds failed without being run: $snap_missing\n"
    if $n_snap_unavailable;
if (my @few = grep { ($mode_count{$_} // 0) < $SEEDS_PER_MODE } @MODES) {
    print "property: note: fewer than $SEEDS_PER_MODE seeds for mode" . (@few > 1 ? 's' : '') . " @few;"
        . ' --seeds ' . ($SEEDS_PER_MODE * @MODES) . " (the default) gives each selected mode $SEEDS_PER_MODE\n";
}
if ($failed || $opt{keep}) { print "work files: $workdir\n" }
else                       { rmdir $workdir }
print "property: $passed passed, $failed failed\n";
exit($failed ? 1 : 0);
