#!/usr/bin/perl
# Property test for autocdc SCD type 1 and SCD type 2 flows.
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
# By default all nine are selected, so 300 seeds give every mode 33 seeds.
# With --scd1-only (or --modes scd1) a seed gives exactly the case it gave
# before SCD type 2 existed in this test.
#
# If the engine refuses stored_as_scd_type => 2 (checked once, before the
# seeds run), every SCD type 2 seed counts as a failure ("scd2-unavailable")
# without being run; use --scd1-only to run only the SCD type 1 modes.
#
# Only core Perl and the psql binary are used.  Connection settings come
# from the environment (PGHOST, PGPORT, PGUSER, PGDATABASE, PGPASSWORD), e.g.
#   pg_virtualenv -t -v 15 sh -c 'psql -c "CREATE EXTENSION autocdc" &&
#                                 perl test/property/property.pl --seeds 20'
#
# Many seeds go into one psql script (one schema prop_<seed> and one pipeline
# p<seed> per seed); markers in the output ("@@BEGIN", "@@RUN", "@@ROW",
# "@@END") split it per seed.  Schemas are dropped afterwards unless --keep.
#
# Options
#   --seeds N        number of seeds (default 100; 2000 with --soak)
#   --first-seed S   first seed (default 1)
#   --soak           many seeds (default 2000), same code
#   --batch B        seeds per psql invocation (default 25)
#   --jobs J         psql invocations running at once (default 1)
#   --shrink         for each failing seed (at most 3), search for a smaller
#                    case that still fails and report it too
#   --keep           keep the schemas of the seeds (do not drop them)
#   --check-counts   also require rows_read of each run to equal the number
#                    of rows inserted since the previous run
#   --verbose        print one line per passing seed
#   --print-sql      print the psql script and the expected rows of the
#                    seeds, without connecting to a database
#   --modes LIST     comma-separated modes to cycle through; "scd1", "scd2"
#                    and "all" stand for groups (default: all)
#   --scd1-only      same as --modes scd1
#
# The last line is "property: N passed, M failed"; the exit code is non-zero
# if any seed failed.

use strict;
use warnings;

use FindBin;
use lib $FindBin::Bin;
use Model qw(fold fold_scd2 key_string partial_columns tracked_columns);
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
my $n_seeds = $opt{seeds} // ($opt{soak} ? 2000 : 100);
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
my @MODES;
{
    my %group = (scd1 => \@SCD1_MODES, scd2 => \@SCD2_MODES, all => [ @SCD1_MODES, @SCD2_MODES ]);
    my %known = map { $_ => 1 } @SCD1_MODES, @SCD2_MODES;
    my $spec  = $opt{'scd1-only'} ? 'scd1' : $opt{modes} // 'all';
    my %chosen;
    for my $m (split /\s*,\s*/, $spec) {
        next if $m eq '';
        my @ms = $group{$m} ? @{ $group{$m} } : $known{$m} ? ($m) : ();
        die "--modes: unknown mode '$m' (modes: @SCD1_MODES @SCD2_MODES; groups: scd1 scd2 all)\n"
            unless @ms;
        $chosen{$_} = 1 for @ms;
    }
    @MODES = grep { $chosen{$_} } @SCD1_MODES, @SCD2_MODES;    # fixed order
    die "--modes: no mode selected\n" unless @MODES;
}
sub is_scd2_mode { return $_[0] =~ /^scd2/ ? 1 : 0 }

# Column types.  Key columns: k int, or (k1 int, k2 text).  Value columns:
# a int, b text, c int (c only in some seeds).  op and seq are excepted.
my %TYPE = (k => 'int', k1 => 'int', k2 => 'text', a => 'int', b => 'text',
            c => 'int', op => 'text', seq => 'int');

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
        key  => [ map { $row->{$_} } @{ $case->{key_cols} } ],
        vals => { map { $_ => $row->{$_} } @{ $case->{value_cols} } },
    };
}

# Build the whole case for one seed.  Everything random comes from
# srand($seed), so a seed always gives the same case.
sub generate_case {
    my ($seed) = @_;
    srand($seed);
    my $mode = $MODES[ $seed % @MODES ];
    my $scd2 = is_scd2_mode($mode);
    my %case = (seed => $seed, mode => $mode, scd => $scd2 ? 2 : 1);

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

    # Source column order: sometimes shuffled, the engine must go by name.
    my @src_cols = (@{ $case{key_cols} }, @vcols, 'op', 'seq');
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
    my $p_null   = %{ $case{partial} } ? 0.35 : 0.1;
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
        push @rows, \%row;
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
    my @events = map { row_to_event($case, $_) } map { @$_ } @{ $case->{runs} };
    return expected_lines_scd2($case, \@events) if $case->{scd} == 2;
    my $result = fold({ key_cols   => $case->{key_cols},
                        value_cols => $case->{value_cols},
                        partial    => $case->{partial} }, \@events);
    my @cols = (@{ $case->{key_cols} }, @{ $case->{value_cols} });
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
                               tracked    => $case->{tracked} }, $events);
    my @cols = (@{ $case->{key_cols} }, @{ $case->{value_cols} }, '__start_at', '__end_at');
    return [ sort map { my $v = $_; join '|', map { defined $v->{$_} ? $v->{$_} : '\N' } @cols }
             @$versions ];
}

# The columns of the target lines (expected_lines() and the @@ROW output).
sub target_cols {
    my ($case) = @_;
    return (@{ $case->{key_cols} }, @{ $case->{value_cols} },
            ($case->{scd} == 2 ? ('__start_at', '__end_at') : ()));
}

# ---------------------------------------------------------------------------
# SQL generation

# A value of column $col as an SQL literal (integers bare, text quoted).
sub sql_value {
    my ($col, $v) = @_;
    return 'NULL' unless defined $v;
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
        "apply_as_deletes => 'op = ''D'''",
    );
    push @args, "apply_as_truncates => 'op = ''T'''" if $case->{truncates};
    push @args, "except_column_list => ARRAY['op', 'seq']::text[]";
    push @args, 'ignore_null_updates => ' . ($flow->{ignore_null_updates} ? 'true' : 'false')
        if exists $flow->{ignore_null_updates};
    for my $o (qw(ignore_null_updates_column_list ignore_null_updates_except_column_list
                  track_history_column_list track_history_except_column_list)) {
        push @args, "$o => " . sql_array($flow->{$o}) if $flow->{$o};
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
    if ($case->{scd} == 2) {
        push @sql, "SELECT '\@\@ROW', '$tag', " . join(', ', @key_cols, @value_cols, '__start_at', '__end_at')
                 . " FROM $schema.tgt ORDER BY " . join(', ', @key_cols, '__start_at') . ';';
    }
    else {
        push @sql, "SELECT '\@\@ROW', '$tag', " . join(', ', @key_cols, @value_cols)
                 . " FROM $schema.tgt ORDER BY " . join(', ', @key_cols) . ';';
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
    if ($case->{scd} == 2) {
        push @d, 'stored_as_scd_type=2';
        for my $o (qw(track_history_column_list track_history_except_column_list)) {
            push @d, "$o=[" . join(',', @{ $f->{$o} }) . ']' if $f->{$o};
        }
        push @d, 'tracked=[' . join(',', sort keys %{ $case->{tracked} }) . ']';
    }
    push @d, 'partial=[' . join(',', sort keys %{ $case->{partial} }) . ']';
    push @d, 'apply_as_truncates=' . ($case->{truncates} ? "op='T'" : 'none');
    return join ' ', @d;
}

sub describe_row {
    my ($case, $row) = @_;
    my $ev = row_to_event($case, $row);
    my @f = map { "$_=" . (defined $row->{$_} ? ($TYPE{$_} eq 'text' ? "'$row->{$_}'" : $row->{$_}) : 'NULL') }
            (@{ $case->{key_cols} }, @{ $case->{value_cols} }, 'op', 'seq');
    return sprintf('%-8s %s%s', $ev->{kind}, join(' ', @f), $row->{dup} ? '  (exact duplicate)' : '');
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
            my ($st, $rd, $up, $de, $sk) = @{ $res->{runs}{$n}[0] };
            $result = " -> status=$st read=$rd upserted=$up deleted=$de skipped=$sk";
        }
        push @out, "    run $n (" . scalar(@$run) . " rows, $how)$result";
        push @out, map { '      ' . describe_row($case, $_) } @$run;
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
            if ($try->(\%cand)) { %c = %cand; $progress = 1 } else { $i++ }
        }
        # 2. merge a run into the next one
        for (my $i = 0; $i + 1 < @{ $c{runs} }; ) {
            my %cand = (%c, runs => [ @{ $c{runs} } ], row_by_row => [ @{ $c{row_by_row} } ]);
            my @merged = (@{ $cand{runs}[$i] }, @{ $cand{runs}[ $i + 1 ] });
            splice @{ $cand{runs} }, $i, 2, \@merged;
            splice @{ $cand{row_by_row} }, $i, 2, 0;
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
if ($failed || $opt{keep}) { print "work files: $workdir\n" }
else                       { rmdir $workdir }
print "property: $passed passed, $failed failed\n";
exit($failed ? 1 : 0);
