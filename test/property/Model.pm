package Model;

# Reference model of an autocdc flow (SCD type 1 and SCD type 2, and full
# snapshots interleaved with CDC events on an SCD type 1 target), used by
# the property test.
#
# It is written to be obviously right rather than fast, and shares nothing
# with the engine: the target is recomputed from scratch as a fold over ALL
# events ever read.
#
# SCD type 1 -- fold():
#   For every key k that appears in an upsert or delete event:
#     take k's own events plus every truncate event,
#     sort them by sequence (a truncate sorts before any other event that
#     has the same sequence), and fold:
#       truncate or delete -> the row is gone (its previous values are NULL)
#       upsert             -> the row is set; a "partial" column whose new
#                             value is NULL keeps the value the row had just
#                             before this event (NULL if there was no row).
#   The target holds k's row iff the fold ends with a row.
#
# SCD type 2 -- fold_scd2():
#   For every key k, sort k's events by sequence and fold, the state being
#   the open version (values, start) or none:
#     upsert at s -> the effective row r: a partial column whose value is
#                    NULL takes the open version's value (NULL if there is
#                    no open version), every other column takes the event's
#                    value.  Then
#                      no open version          -> open [s, NULL) with r;
#                      a tracked column of r differs from the open version
#                      (NULL equals NULL)       -> close the open version at
#                                                  s, open [s, NULL) with r;
#                      else                     -> the open version takes r's
#                                                  values, its start unchanged.
#     delete at s -> close the open version (if any) at s; no open version.
#   The target holds every version, closed and open.  Truncates do not
#   exist for SCD type 2 (the model refuses them).
#
# Exact duplicate events collapse (they are removed before folding).
#
# columns_to_update ($config->{listed}) -- fold() and fold_scd2():
#   An upsert carries the list of the columns it sets ($ev->{sets}; undef
#   sets every column).  A value column it does not list is "not set by
#   this event": it takes the value the row had just before the event in
#   sequence order (NULL if there was no row, so after a delete too), as a
#   partial column's NULL does; a listed column takes the event's value,
#   NULL included.  Names in the list that are no value column (the keys)
#   set nothing; a name listed twice is listed once.
#
# Data quality (a flow with on_bad_event => 'quarantine' and drop
# expectations) -- quarantine_reason():
#   Each source row read is set aside, checked in this order, for a NULL
#   sequence, a NULL key column in an upsert or delete (a truncate needs no
#   key), or a failed drop expectation (a condition that is NULL passes).
#   The fold's input is the rows not set aside; the quarantine holds each
#   row set aside once (exact duplicates are one row).  The cases give
#   every (key, sequence) at most one distinct event, so no conflict
#   arises, whichever run reads which row.
#
# Snapshots (SCD type 1, snapshot + CDC in one ordering domain) --
# snapshot_events():
#   A snapshot with version v is the full state of the source at v.  It
#   acts as events at sequence v: an upsert at v for every key it holds, and
#   a delete at v for every key it lacks -- which is exactly a truncate at v
#   (it removes every key whose last event is older than v; an upsert at
#   exactly v survives, the truncate sorting first) plus an upsert at v for
#   each of its rows.  snapshot_events() turns a snapshot into those events;
#   fold() then gives the target: a newer CDC event beats an older snapshot,
#   a newer snapshot beats an older event, a key absent from a snapshot is
#   gone at v unless a newer event keeps or restores it.  A CDC event at
#   exactly v for a key the snapshot holds with other values is two
#   different events for one key and sequence (fold() refuses it).
#
# Data shapes
#   $config = {
#       key_cols   => [ 'k' ] or [ 'k1', 'k2' ],
#       value_cols => [ 'a', 'b', ... ],       # non-key target columns
#       partial    => { a => 1, ... },         # columns with ignore-null-updates
#       tracked    => { a => 1, ... },         # SCD2 only: history-tracked
#                                              # columns (default: all)
#       listed     => 1 or 0,                  # columns_to_update: upserts
#                                              # carry the columns they set
#   }
#   $event = {
#       kind => 'upsert' | 'delete' | 'truncate',
#       seq  => integer (never undef),
#       key  => [ key values ]                 # ignored for truncates
#       vals => { col => value or undef }      # only read for upserts
#       sets => [ cols ] or undef              # upserts with $config->{listed}
#   }
#   Values are plain Perl scalars (strings / numbers); undef means SQL NULL.
#   $snapshot_row = {
#       key  => [ key values ],
#       vals => { col => value or undef }      # every value column
#   }
#
# fold() returns a hash ref: key string => { col => value, ... } holding the
# key and value columns of every row of the target, and its
# __autocdc_sequence: the sequence of the row's last applied upsert.
#
# Bitemporal -- fold_bitemporal():
#   Events carry a system sequence (sys) besides their business sequence
#   (seq).  For every system point S (each distinct sys of the events, in
#   order): the events with sys <= S, of which per key and seq only the
#   one with the highest sys counts (a correction replaces the event it
#   corrects), folded by fold_scd2() into the history believed at S.  Then
#   the rows, from the changes between consecutive points: a version (key,
#   values, __start_at, __end_at) believed at S_i but not at S_{i-1}
#   starts a row with __system_start_at = S_i; the row ends at the first
#   later point where the version is not believed (__system_end_at), or is
#   open (undef) if it is believed at the last point.
#
# fold_scd2() returns an array ref of versions { col => value, ...,
# __start_at => s, __end_at => e or undef }, holding the key and value
# columns, ordered by key string and __start_at.

use strict;
use warnings;

use Exporter 'import';
our @EXPORT_OK = qw(fold fold_scd2 fold_bitemporal key_string partial_columns tracked_columns
                    snapshot_events quarantine_reason);

# Why a source row is set aside, or undef when it is folded.
#   $config->{key_cols} : key columns
#   $config->{drops}    : [ sub { $row } -> true, false or undef (NULL) ]
#   $kind               : the row's event kind ('upsert', 'delete', 'truncate')
sub quarantine_reason {
    my ($config, $row, $kind) = @_;
    return 'null_sequence' unless defined $row->{seq};
    return 'null_key'
        if $kind ne 'truncate' && grep { !defined $row->{$_} } @{ $config->{key_cols} };
    for my $cond (@{ $config->{drops} || [] }) {
        my $r = $cond->($row);
        return 'expectation' if defined $r && !$r;
    }
    return undef;
}

# Which value columns are partial for a given flow option set.
#   $opts->{ignore_null_updates}                    : true/false
#   $opts->{ignore_null_updates_column_list}        : [cols] or undef
#   $opts->{ignore_null_updates_except_column_list} : [cols] or undef
# Returns a hash ref col => 1.
sub partial_columns {
    my ($value_cols, $opts) = @_;
    my %partial;
    if ($opts->{ignore_null_updates_column_list}) {
        $partial{$_} = 1 for @{ $opts->{ignore_null_updates_column_list} };
    }
    elsif ($opts->{ignore_null_updates_except_column_list}) {
        my %except = map { $_ => 1 } @{ $opts->{ignore_null_updates_except_column_list} };
        $partial{$_} = 1 for grep { !$except{$_} } @$value_cols;
    }
    elsif ($opts->{ignore_null_updates}) {
        $partial{$_} = 1 for @$value_cols;
    }
    return \%partial;
}

# Which value columns are history-tracked by an SCD type 2 flow.
#   $opts->{track_history_column_list}        : [cols] or undef
#   $opts->{track_history_except_column_list} : [cols] or undef
# Returns a hash ref col => 1 (every value column when neither is given).
sub tracked_columns {
    my ($value_cols, $opts) = @_;
    my %tracked;
    if ($opts->{track_history_column_list}) {
        $tracked{$_} = 1 for @{ $opts->{track_history_column_list} };
    }
    elsif ($opts->{track_history_except_column_list}) {
        my %except = map { $_ => 1 } @{ $opts->{track_history_except_column_list} };
        $tracked{$_} = 1 for grep { !$except{$_} } @$value_cols;
    }
    else {
        $tracked{$_} = 1 for @$value_cols;
    }
    return \%tracked;
}

# A printable, unambiguous string for a list of values (undef = NULL).
sub _canon {
    my (@values) = @_;
    return join "\x1f", map { defined $_ ? "v:$_" : 'NULL' } @values;
}

# The string used to identify a key in fold()'s result.
sub key_string {
    my ($key) = @_;
    return _canon(@$key);
}

# Whether upsert $ev sets value column $col (columns_to_update), or undef
# when the flow has no per-event lists.
sub _lists {
    my ($config, $ev, $col) = @_;
    return undef unless $config->{listed};
    return 1 unless defined $ev->{sets};
    return scalar grep { $_ eq $col } @{ $ev->{sets} };
}

# A string identifying an event completely (used to collapse exact duplicates).
sub _event_string {
    my ($config, $ev) = @_;
    my @parts = ($ev->{kind}, $ev->{seq});
    if ($ev->{kind} ne 'truncate') {
        my @cols = @{ $config->{value_cols} };
        push @parts, _canon(@{ $ev->{key} });
        push @parts, _canon(map { $ev->{vals}{$_} } @cols) unless $config->{listed};
        # with lists: which columns it sets, and only their values
        push @parts, _canon(map { _lists($config, $ev, $_) ? ('set', $ev->{vals}{$_}) : 'unset' } @cols)
            if $config->{listed} && $ev->{kind} eq 'upsert';
    }
    return join "\x1e", map { defined $_ ? $_ : 'NULL' } @parts;
}

# Validate the input, drop exact duplicates and group the events by key.
# Returns (truncate events, key string => [events], key string => key).
sub _group_events {
    my ($config, $events) = @_;
    my (%seen, @truncates, %events_of_key, %key_of);
    my %slot;    # "key|seq" => event string, to reject conflicting events
    for my $ev (@$events) {
        die "model: event without sequence\n" unless defined $ev->{seq};
        my $id = _event_string($config, $ev);
        next if $seen{$id}++;
        if ($ev->{kind} eq 'truncate') {
            push @truncates, $ev;
            next;
        }
        die "model: unknown kind '$ev->{kind}'\n"
            unless $ev->{kind} eq 'upsert' || $ev->{kind} eq 'delete';
        die "model: NULL key in $ev->{kind}\n" if grep { !defined } @{ $ev->{key} };
        my $k = key_string($ev->{key});
        my $slot_id = "$k\x1d$ev->{seq}";
        die "model: two different events for one key at sequence $ev->{seq}\n"
            if exists $slot{$slot_id};
        $slot{$slot_id} = $id;
        push @{ $events_of_key{$k} }, $ev;
        $key_of{$k} = $ev->{key};
    }
    return (\@truncates, \%events_of_key, \%key_of);
}

# The events a snapshot with version $version stands for: a truncate at
# $version, then an upsert at $version for each of its rows.  Two rows with
# one key, or a NULL key, are refused.
sub snapshot_events {
    my ($config, $version, $rows) = @_;
    die "model: snapshot without version\n" unless defined $version;
    my @events = ({ kind => 'truncate', seq => $version });
    my %seen;
    for my $row (@$rows) {
        die "model: NULL key in snapshot $version\n" if grep { !defined } @{ $row->{key} };
        die "model: two rows for one key in snapshot $version\n"
            if $seen{ key_string($row->{key}) }++;
        push @events, { kind => 'upsert', seq => $version, key => [ @{ $row->{key} } ],
                        vals => { map { $_ => $row->{vals}{$_} } @{ $config->{value_cols} } } };
    }
    return @events;
}

sub fold {
    my ($config, $events) = @_;
    my @value_cols = @{ $config->{value_cols} };
    my %partial    = %{ $config->{partial} || {} };

    # 1. Validate the input and drop exact duplicates.
    my ($truncates, $events_of_key, $key_of) = _group_events($config, $events);
    my @truncates     = @$truncates;
    my %events_of_key = %$events_of_key;
    my %key_of        = %$key_of;

    # 2. Fold each key's history.
    my %result;
    for my $k (keys %events_of_key) {
        # By sequence; at equal sequence a truncate comes first.  (A key
        # never has two events at one sequence, and truncate sequences are
        # unique after removing duplicates, so this order is total.)
        my @history = sort {
                $a->{seq} <=> $b->{seq}
             || ($a->{kind} eq 'truncate' ? 0 : 1) <=> ($b->{kind} eq 'truncate' ? 0 : 1)
        } (@truncates, @{ $events_of_key{$k} });
        my $row;    # undef = no row
        for my $ev (@history) {
            if ($ev->{kind} ne 'upsert') {    # delete or truncate
                $row = undef;
                next;
            }
            my %new;
            for my $col (@value_cols) {
                my $v = $ev->{vals}{$col};
                my $listed = _lists($config, $ev, $col);
                if (defined $listed ? !$listed : !defined $v && $partial{$col}) {
                    $v = $row ? $row->{$col} : undef;    # keep the previous value
                }
                $new{$col} = $v;
            }
            $new{__autocdc_sequence} = $ev->{seq};
            $row = \%new;
        }
        next unless $row;
        my @key_cols = @{ $config->{key_cols} };
        $row->{ $key_cols[$_] } = $key_of{$k}[$_] for 0 .. $#key_cols;
        $result{$k} = $row;
    }
    return \%result;
}

# NULL-safe equality of two values (NULL equals NULL, NULL differs from
# every value, values compare as strings).
sub _same {
    my ($x, $y) = @_;
    return !defined $y if !defined $x;
    return 0 if !defined $y;
    return "$x" eq "$y";
}

sub fold_scd2 {
    my ($config, $events) = @_;
    my @key_cols   = @{ $config->{key_cols} };
    my @value_cols = @{ $config->{value_cols} };
    my %partial    = %{ $config->{partial} || {} };
    my %tracked    = $config->{tracked} ? %{ $config->{tracked} }
                                        : map { $_ => 1 } @value_cols;

    my ($truncates, $events_of_key, $key_of) = _group_events($config, $events);
    die "model: truncate in an SCD type 2 flow\n" if @$truncates;

    my @versions;
    for my $k (sort keys %$events_of_key) {
        my @history = sort { $a->{seq} <=> $b->{seq} } @{ $events_of_key->{$k} };
        my @closed;      # finished versions of this key
        my $open;        # the open version { values..., __start_at } or undef
        for my $ev (@history) {
            my $s = $ev->{seq};
            if ($ev->{kind} eq 'delete') {
                if ($open) {
                    $open->{__end_at} = $s;
                    push @closed, $open;
                    $open = undef;
                }
                next;
            }
            # upsert: the effective row
            my %r;
            for my $col (@value_cols) {
                my $v = $ev->{vals}{$col};
                my $listed = _lists($config, $ev, $col);
                if (defined $listed ? !$listed : !defined $v && $partial{$col}) {
                    $v = $open ? $open->{$col} : undef;    # not set by this event
                }
                $r{$col} = $v;
            }
            if (!$open) {
                $open = { %r, __start_at => $s, __end_at => undef };
            }
            elsif (grep { !_same($r{$_}, $open->{$_}) } grep { $tracked{$_} } @value_cols) {
                $open->{__end_at} = $s;
                push @closed, $open;
                $open = { %r, __start_at => $s, __end_at => undef };
            }
            else {
                $open->{$_} = $r{$_} for @value_cols;    # in place, same start
            }
        }
        for my $v (@closed, ($open ? $open : ())) {
            $v->{ $key_cols[$_] } = $key_of->{$k}[$_] for 0 .. $#key_cols;
            push @versions, $v;
        }
    }
    return \@versions;
}

sub fold_bitemporal {
    my ($config, $events) = @_;
    my %sys_points = map { $_->{sys} => 1 } @$events;
    my @points = sort { $a <=> $b } keys %sys_points;
    my @value_cols = @{ $config->{value_cols} };
    my @key_cols = @{ $config->{key_cols} };
    my $id = sub {
        my ($v) = @_;
        return _canon((map { $v->{$_} } @key_cols, @value_cols), $v->{__start_at}, $v->{__end_at});
    };
    my (%open_row, @rows);    # version id => its row while believed
    for my $s (@points) {
        my %latest;           # "key|seq" => the event with the highest sys <= $s
        for my $ev (@$events) {
            next if $ev->{sys} > $s;
            my $slot = key_string($ev->{key}) . "\x1d$ev->{seq}";
            my $cur = $latest{$slot};
            die "model: two different events at one key, sequence and system sequence\n"
                if $cur && $cur->{sys} == $ev->{sys}
                   && _event_string($config, $cur) ne _event_string($config, $ev);
            $latest{$slot} = $ev if !$cur || $cur->{sys} < $ev->{sys};
        }
        my $versions = fold_scd2($config, [ values %latest ]);
        my %now = map { $id->($_) => $_ } @$versions;
        for my $vid (keys %open_row) {
            next if $now{$vid};
            $open_row{$vid}{__system_end_at} = $s;
            delete $open_row{$vid};
        }
        for my $vid (sort keys %now) {
            next if $open_row{$vid};
            my $row = { %{ $now{$vid} }, __system_start_at => $s, __system_end_at => undef };
            push @rows, $row;
            $open_row{$vid} = $row;
        }
    }
    return \@rows;
}

1;
