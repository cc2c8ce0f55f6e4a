#!/bin/bash
# autocdc benchmark driver: hand-written CDC apply on PostgreSQL 15 (COPY floor,
# SCD1 DISTINCT ON + MERGE / ON CONFLICT, SCD2 window rebuild) against autocdc
# SCD1 / SCD2 flows, in one throwaway cluster, interleaved runs, every run checked
# against an oracle.  See bench/README.md.
#
#   bench/run.sh                         # main table, N=1M, K=100k, OOO=0.05, RUNS=3
#   N=100000 RUNS=1 bench/run.sh
#   bench/run.sh --n 3000000 --approaches "A2 B2 X2 D2 Y2"
#   bench/run.sh --incremental --memory  # 10M-event source: 1k-event run cost, peak memory
set -euo pipefail

usage() {
    cat <<'EOF'
usage: bench/run.sh [options]            (every option also works as an env variable)
  --n N              change rows of the main data set (N, default 1000000)
  --k K              key space (K, default 100000)
  --ooo F            fraction of rows made out of order (OOO, default 0.05)
  --runs R           repetitions, interleaved; the median is reported (RUNS, default 3)
  --approaches LIST  space or comma separated codes (APPROACHES, default all):
                       A2 COPY into a logged heap (the floor)
                       B1 B2  hand SCD1 DISTINCT ON + MERGE, 1 / 10 batches
                       B3 B4  hand SCD1 DISTINCT ON + DELETE + ON CONFLICT, 1 / 10 batches
                       D1 D2  hand SCD2 window rebuild, 1 / 10 batches
                       X1 X2  autocdc SCD1, 1 run / 10 runs
                       X3     autocdc SCD1, 1 run, with three expectations (warn, drop,
                              fail) that every row meets: their cost against X1
                              (not in 'all')
                       Y1 Y2  autocdc SCD2, 1 run / 10 runs
                       Z1     autocdc bitemporal, 1 run, system sequence = arrival
                              position: its time against Y1 (not in 'all')
                       C1     hand SCD1 row-by-row PL/pgSQL (not in 'all': slow)
                       L1     COPY of the rows into an autocdc source (a flow's
                              source: stamp column and its default, autocdc_stamp index,
                              AFTER INSERT trigger): against A2
                       L2     INSERT ... SELECT of the rows into a plain table
                       L3     INSERT ... SELECT of the rows into an autocdc source:
                              against L2
  --seed S           setseed() argument in [-1,1] (SEED, default 0.42)
  --payload P        wide (default): name 1000, city 50, amount 1M values -- consecutive
                     identical upserts are rare; narrow: 2 values each -- many no-op
                     upserts (exercises the SCD2 fold; changes the workload) (PAYLOAD)
  --main             run the main table too when --incremental/--memory is given
  --incremental      1k-event run on a BIG_N-event source vs on a 10k-event source
  --memory           peak backend memory of one autocdc SCD1 run over BIG_N events
  --big-n N          events of the big source for --incremental/--memory (BIG_N, default 10000000)
  --incremental-kind K  the flows of --incremental/--memory: scd1 (default) or bitemporal
                     (system sequence = arrival position; INC_KIND)
  --keep             keep the cluster directory (it is removed otherwise)
  -h, --help
Other env: INC_SMALL (10000), INC_BATCH (1000), INC_REPS (RUNS), ANALYZE_SRC (1, 0 or first),
           BENCH_TIMEOUT (seconds per psql session, 7200), PG_BINDIR.
EOF
}

N=${N:-1000000}
K=${K:-100000}
OOO=${OOO:-0.05}
RUNS=${RUNS:-3}
SEED=${SEED:-0.42}
PAYLOAD=${PAYLOAD:-wide}
APPROACHES=${APPROACHES:-all}
BIG_N=${BIG_N:-10000000}
INC_SMALL=${INC_SMALL:-10000}
INC_BATCH=${INC_BATCH:-1000}
INC_KIND=${INC_KIND:-scd1}
ANALYZE_SRC=${ANALYZE_SRC:-1}
BENCH_TIMEOUT=${BENCH_TIMEOUT:-7200}
KEEP=${KEEP:-0}
DO_MAIN=""
DO_INC=0
DO_MEM=0

while [ $# -gt 0 ]; do
    case "$1" in
        --n) N=$2; shift 2 ;;
        --k) K=$2; shift 2 ;;
        --ooo) OOO=$2; shift 2 ;;
        --runs) RUNS=$2; shift 2 ;;
        --approaches) APPROACHES=$2; shift 2 ;;
        --seed) SEED=$2; shift 2 ;;
        --payload) PAYLOAD=$2; shift 2 ;;
        --big-n) BIG_N=$2; shift 2 ;;
        --incremental-kind) INC_KIND=$2; shift 2 ;;
        --main) DO_MAIN=1; shift ;;
        --incremental) DO_INC=1; shift ;;
        --memory) DO_MEM=1; shift ;;
        --keep) KEEP=1; shift ;;
        -h|--help) usage; exit 0 ;;
        *) echo "run.sh: unknown option $1" >&2; usage >&2; exit 2 ;;
    esac
done
INC_REPS=${INC_REPS:-$RUNS}
if [ -z "$DO_MAIN" ]; then
    if [ $DO_INC = 1 ] || [ $DO_MEM = 1 ]; then DO_MAIN=0; else DO_MAIN=1; fi
fi

isint() { case "$1" in ''|*[!0-9]*) return 1 ;; *) return 0 ;; esac; }
for v in N K RUNS BIG_N INC_SMALL INC_BATCH INC_REPS BENCH_TIMEOUT; do
    isint "${!v}" || { echo "run.sh: $v must be a positive integer, got '${!v}'" >&2; exit 2; }
    [ "${!v}" -gt 0 ] || { echo "run.sh: $v must be > 0" >&2; exit 2; }
done
[ "$N" -ge 10 ] || { echo "run.sh: N must be >= 10 (10 batches)" >&2; exit 2; }
[ "$INC_SMALL" -le "$BIG_N" ] || { echo "run.sh: INC_SMALL must be <= BIG_N" >&2; exit 2; }
case "$OOO" in ''|*[!0-9.]*) echo "run.sh: OOO must be a fraction like 0.05" >&2; exit 2 ;; esac
case "$ANALYZE_SRC" in 0|1|first) ;; *) echo "run.sh: ANALYZE_SRC must be 1, 0 or first" >&2; exit 2 ;; esac
case "$PAYLOAD" in wide|narrow) ;; *) echo "run.sh: PAYLOAD must be wide or narrow" >&2; exit 2 ;; esac
case "$SEED" in ''|*[!0-9.-]*) echo "run.sh: SEED must be a number in [-1,1]" >&2; exit 2 ;; esac

ALL_CODES="A2 B1 B2 B3 B4 D1 D2 L1 L2 L3 X1 X2 Y1 Y2"
CODES=""
for c in $(echo "$APPROACHES" | tr ',' ' '); do
    case "$c" in
        all) CODES="$CODES $ALL_CODES" ;;
        A2|B1|B2|B3|B4|C1|D1|D2|L1|L2|L3|X1|X2|X3|Y1|Y2|Z1) CODES="$CODES $c" ;;
        *) echo "run.sh: unknown approach '$c' (see --help)" >&2; exit 2 ;;
    esac
done
CODES=$(echo $CODES | tr ' ' '\n' | awk '!seen[$0]++' | tr '\n' ' ')

name_of() {
    case "$1" in
        A2) echo A2_copy_logged ;;
        B1) echo B1_scd1_merge_1batch ;;
        B2) echo B2_scd1_merge_10batch ;;
        B3) echo B3_scd1_upsert_1batch ;;
        B4) echo B4_scd1_upsert_10batch ;;
        C1) echo C1_scd1_rowwise_plpgsql ;;
        D1) echo D1_scd2_window_1batch ;;
        D2) echo D2_scd2_window_10batch ;;
        L1) echo L1_copy_autocdc_source ;;
        L2) echo L2_insert_plain ;;
        L3) echo L3_insert_autocdc_source ;;
        X1) echo X1_autocdc_scd1_1run ;;
        X2) echo X2_autocdc_scd1_10run ;;
        X3) echo X3_autocdc_scd1_1run_expect ;;
        Y1) echo Y1_autocdc_scd2_1run ;;
        Y2) echo Y2_autocdc_scd2_10run ;;
        Z1) echo Z1_autocdc_bitemporal_1run ;;
    esac
}

# ---------------------------------------------------------------- environment
BENCH_DIR=$(cd "$(dirname "$0")" && pwd)
SQL_DIR=$BENCH_DIR/sql
RESULTS_DIR=$BENCH_DIR/results
if [ -z "${PG_BINDIR:-}" ]; then
    if [ -x /usr/lib/postgresql/15/bin/pg_ctl ]; then PG_BINDIR=/usr/lib/postgresql/15/bin
    else PG_BINDIR=$(pg_config --bindir); fi
fi
for b in initdb pg_ctl psql postgres; do
    [ -x "$PG_BINDIR/$b" ] || { echo "run.sh: $PG_BINDIR/$b not found (set PG_BINDIR)" >&2; exit 1; }
done
PKGLIBDIR=$("$PG_BINDIR/pg_config" --pkglibdir 2>/dev/null || pg_config --pkglibdir)
SHAREDIR=$("$PG_BINDIR/pg_config" --sharedir 2>/dev/null || pg_config --sharedir)
if [ ! -f "$SHAREDIR/extension/autocdc.control" ]; then
    echo "run.sh: autocdc is not installed ($SHAREDIR/extension/autocdc.control missing); run 'make install' first" >&2
    exit 1
fi

if [ "$(id -u)" = 0 ]; then
    id postgres >/dev/null 2>&1 || { echo "run.sh: as root, a 'postgres' user is needed to run the server" >&2; exit 1; }
    AS_PG=(runuser -u postgres --)
    PG_OS_USER=postgres
else
    AS_PG=()
    PG_OS_USER=$(id -un)
fi

TS=$(date -u +%Y%m%dT%H%M%SZ)
mkdir -p "$RESULTS_DIR"
RAW=$RESULTS_DIR/$TS.tsv
REPORT=$RESULTS_DIR/$TS.txt
WORK=$(mktemp -d /tmp/autocdc-bench.XXXXXX)
chmod 700 "$WORK"
mkdir -p "$WORK/sock" "$WORK/log"
chown -R "$PG_OS_USER" "$WORK"
PGDATA_DIR=$WORK/data
SERVER_LOG=$WORK/server.log
SERVER_UP=0

cleanup() {
    local rc=$?
    set +e
    if [ -n "${SAMPLER_PID:-}" ]; then kill "$SAMPLER_PID" 2>/dev/null; fi
    if [ "$SERVER_UP" = 1 ]; then
        "${AS_PG[@]}" "$PG_BINDIR/pg_ctl" -D "$PGDATA_DIR" -m fast -w -t 60 stop >/dev/null 2>&1 \
            || "${AS_PG[@]}" "$PG_BINDIR/pg_ctl" -D "$PGDATA_DIR" -m immediate -w -t 30 stop >/dev/null 2>&1
    fi
    if [ "$rc" != 0 ] && [ -f "$SERVER_LOG" ]; then
        cp "$SERVER_LOG" "$RESULTS_DIR/$TS.server.log" 2>/dev/null
        echo "run.sh: FAILED (exit $rc); server log kept in $RESULTS_DIR/$TS.server.log" >&2
    fi
    if [ "$KEEP" = 1 ]; then
        echo "run.sh: cluster directory kept: $WORK" >&2
    else
        rm -rf "$WORK"
    fi
    exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT TERM

say() { echo "[$(date -u +%H:%M:%S)] $*" >&2; }
die() { echo "run.sh: $*" >&2; exit 1; }

# a free TCP port on the loopback interface (the server listens on 127.0.0.1 only)
PORT=${PORT:-$(perl -MIO::Socket::INET -e 'my $s = IO::Socket::INET->new(Listen => 1, LocalAddr => "127.0.0.1", LocalPort => 0) or die; print $s->sockport')}

# ------------------------------------------------------------------- cluster
say "initdb in $WORK (port $PORT)"
"${AS_PG[@]}" "$PG_BINDIR/initdb" -D "$PGDATA_DIR" -U postgres --no-locale -E UTF8 \
    --auth-local=trust --auth-host=reject >"$WORK/initdb.log" 2>&1 \
    || { cat "$WORK/initdb.log" >&2; die "initdb failed"; }
cat >>"$PGDATA_DIR/postgresql.conf" <<EOF

# --- autocdc bench (bench/run.sh): the settings of perf-baseline.md
listen_addresses = '127.0.0.1'
port = $PORT
unix_socket_directories = '$WORK/sock'
unix_socket_permissions = 0700
shared_buffers = 2GB
max_wal_size = 8GB
min_wal_size = 1GB
checkpoint_timeout = 30min
work_mem = 64MB
maintenance_work_mem = 1GB
effective_cache_size = 16GB
random_page_cost = 1.1
autovacuum = off
fsync = on
synchronous_commit = on
full_page_writes = on
wal_level = replica
wal_compression = off
max_connections = 20
log_line_prefix = '%m [%p] '
lc_messages = 'C'
EOF
"${AS_PG[@]}" "$PG_BINDIR/pg_ctl" -D "$PGDATA_DIR" -l "$SERVER_LOG" -w -t 120 start >/dev/null \
    || { tail -20 "$SERVER_LOG" >&2; die "the server did not start"; }
SERVER_UP=1

export PGHOST=$WORK/sock PGPORT=$PORT PGUSER=postgres PGDATABASE=bench PGAPPNAME=autocdc-bench PGCLIENTENCODING=UTF8
PSQL=(timeout "$BENCH_TIMEOUT" "$PG_BINDIR/psql" -X -q -At -F $'\t' -v ON_ERROR_STOP=1)

"${PSQL[@]}" -d postgres -c "CREATE DATABASE bench" >/dev/null
"${PSQL[@]}" -c "CREATE EXTENSION autocdc" >/dev/null
"${PSQL[@]}" -f "$SQL_DIR/helpers.sql" >/dev/null
"${PSQL[@]}" -f "$SQL_DIR/rowwise.sql" >/dev/null

PGVERSION=$("${PSQL[@]}" -c "SHOW server_version")
EXTVERSION=$("${PSQL[@]}" -c "SELECT extversion FROM pg_extension WHERE extname = 'autocdc'")
SO_MD5=$(md5sum "$PKGLIBDIR/autocdc.so" 2>/dev/null | cut -c1-12 || echo "?")
GIT_REV=$(git -C "$BENCH_DIR/.." rev-parse --short HEAD 2>/dev/null || echo "?")

RAW_HEADER="ts	part	approach	run	n	batches	secs	wal_bytes	target_rows	target_bytes	aux_rows	aux_bytes	load_secs	rows_read	rows_upserted	rows_deleted	rows_skipped	mem_hwm_kb	mem_anon_peak_kb	mem_ctx_peak_bytes	parts_secs"
echo "$RAW_HEADER" >"$RAW"

# ------------------------------------------------------------- script pieces
# Every timed section: CHECKPOINT (unless told not to), then the insert LSN and
# clock_timestamp() before and after the timed statements, in the session
# that runs them; one TIMING line per timed section (the driver sums them).
t_start() {
    [ "${1:-ckpt}" = ckpt ] && echo "CHECKPOINT;"
    echo "SELECT clock_timestamp() AS t0, pg_current_wal_insert_lsn() AS l0 \\gset"
}
t_stop() {
    echo "SELECT clock_timestamp() AS t1, pg_current_wal_insert_lsn() AS l1 \\gset"
    echo "SELECT 'TIMING', extract(epoch FROM :'t1'::timestamptz - :'t0'::timestamptz), pg_wal_lsn_diff(:'l1', :'l0');"
}
# Not timed, but reported: the load of an autocdc source (trigger + xid index).
# ANALYZE_SRC: 1 = ANALYZE after every load (default), 0 = never, first = only
# after the first load (later loads run against statistics that predate them).
load_src() {  # table, select, [load number]
    echo "SELECT clock_timestamp() AS lt0 \\gset"
    echo "INSERT INTO $1 (${LOAD_COLS:-id, name, city, amount, op, seq}) $2;"
    if [ "$ANALYZE_SRC" = 1 ] || { [ "$ANALYZE_SRC" = first ] && [ "${3:-1}" = 1 ]; }; then
        echo "ANALYZE $1;"
    fi
    echo "SELECT clock_timestamp() AS lt1 \\gset"
    echo "SELECT 'LOAD', extract(epoch FROM :'lt1'::timestamptz - :'lt0'::timestamptz);"
}
# One autocdc run of a pipeline, its counters on a RUNSTAT line; a failed flow aborts.
acdc_run() {  # pipeline, ckpt|nockpt
    t_start "$2"
    echo "SELECT rows_read, rows_upserted, rows_deleted, rows_skipped, status FROM autocdc.run('$1') \\gset r_"
    t_stop
    cat <<EOF
SELECT 'RUNSTAT', :'r_rows_read', :'r_rows_upserted', :'r_rows_deleted', :'r_rows_skipped', :'r_status';
SELECT bench_assert(:'r_status' = 'success',
  format('autocdc.run(%L) returned status %s: %s', '$1', :'r_status',
         (SELECT error FROM autocdc.event_log WHERE pipeline = '$1' ORDER BY id DESC LIMIT 1)));
EOF
}
# The flow of --incremental/--memory (INC_KIND), and the columns its source loads.
case "$INC_KIND" in
    scd1) INC_COLS="id, name, city, amount, op, seq"; INC_RUN_NAME=X1_autocdc_scd1_1run ;;
    bitemporal) INC_COLS="id, name, city, amount, op, seq, pos"; INC_RUN_NAME=Z1_autocdc_bitemporal_1run ;;
    *) echo "run.sh: --incremental-kind is scd1 or bitemporal" >&2; exit 2 ;;
esac
inc_flow() {  # src, target, pipeline
    if [ "$INC_KIND" = scd1 ]; then acdc_flow "$1" "$2" "$3" 1; return; fi
    cat <<EOF
SELECT bench_drop('$2');
SELECT bench_drop('$1');
CREATE TABLE $1 (id bigint, name text, city text, amount numeric, op text, seq bigint, pos bigint);
SELECT autocdc.create_auto_cdc_flow(target => '$2', source => '$1', keys => ARRAY['id'],
  sequence_by => 'seq', system_sequence_by => 'pos', apply_as_deletes => \$\$op = 'D'\$\$,
  except_column_list => ARRAY['op', 'seq', 'pos'], stored_as_scd_type => 'bitemporal', pipeline => '$3');
CREATE VIEW $2_now AS SELECT * FROM $2 WHERE __end_at IS NULL AND __system_end_at IS NULL;
EOF
}
# What --incremental/--memory compares with the SCD 1 oracle: the target, or a
# bitemporal target's current belief of the present.
inc_checked() { if [ "$INC_KIND" = scd1 ]; then echo "$1"; else echo "$1_now"; fi; }

acdc_flow() {  # src, target, pipeline, scd type, [more arguments]
    cat <<EOF
SELECT bench_drop('$2');
SELECT bench_drop('$1');
CREATE TABLE $1 (id bigint, name text, city text, amount numeric, op text, seq bigint);
SELECT autocdc.create_auto_cdc_flow(target => '$2', source => '$1', keys => ARRAY['id'],
  sequence_by => 'seq', apply_as_deletes => \$\$op = 'D'\$\$,
  except_column_list => ARRAY['op', 'seq'], stored_as_scd_type => $4, pipeline => '$3'${5:+,
  $5});
EOF
}
# X3's expectations: one of each action, met by every row of the data set
# (so the oracle check stays exact), evaluated for every row read.
X3_EXPECT=$(cat <<'EOF'
expect => '{"amount_set": "amount IS NOT NULL OR op = ''D''"}',
  expect_or_drop => '{"id_set": "id IS NOT NULL"}',
  expect_or_fail => '{"seq_positive": "seq > 0"}'
EOF
)
size_line() {  # target, tomb-or-empty
    local tomb=NULL
    [ -n "$2" ] && tomb="'$2'"
    echo "SELECT 'SIZE', (SELECT count(*) FROM $1), pg_total_relation_size('$1'), a.aux_rows, a.aux_bytes FROM bench_aux('$1', $tomb) a;"
}
batch() { printf 'changes_b%02d' "$1"; }

approach_script() {  # code
    local code=$1 i
    echo "\\set ON_ERROR_STOP 1"
    echo "SET client_min_messages = warning;"
    case $code in
    A2)
        echo "SELECT bench_drop('a2'); CREATE TABLE a2 (LIKE changes);"
        t_start
        echo "COPY a2 FROM '$WORK/changes.copy';"
        t_stop
        size_line a2 ""
        echo "SELECT bench_assert((SELECT count(*) FROM a2) = $N, 'A2: COPY did not load $N rows');"
        echo "SELECT 'CHECK', 'A2: a2 holds ' || count(*) || ' rows' FROM a2;"
        ;;
    L1|L2|L3)
        # the table a user loads: plain (L2), or the source of a flow (L1, L3)
        echo "SELECT bench_drop('tgt_l'); SELECT bench_drop('src_l');"
        echo "CREATE TABLE src_l (LIKE changes);"
        if [ $code != L2 ]; then
            echo "SELECT autocdc.create_auto_cdc_flow(target => 'tgt_l', source => 'src_l', keys => ARRAY['id'],"
            echo "  sequence_by => 'seq', apply_as_deletes => \$\$op = 'D'\$\$,"
            echo "  except_column_list => ARRAY['op', 'seq'], stored_as_scd_type => 1, pipeline => 'bl');"
        fi
        t_start
        if [ $code = L1 ]; then
            echo "COPY src_l (id, name, city, amount, op, seq) FROM '$WORK/changes.copy';"
        else
            echo "INSERT INTO src_l (id, name, city, amount, op, seq) SELECT id, name, city, amount, op, seq FROM changes;"
        fi
        t_stop
        size_line src_l ""
        echo "SELECT bench_assert((SELECT count(*) FROM src_l) = $N, '$code: did not load $N rows');"
        if [ $code != L2 ]; then
            echo "SELECT bench_assert((SELECT count(*) FROM src_l WHERE __autocdc_xid IS NULL) = 0, '$code: a row without its stamp');"
        fi
        echo "SELECT 'CHECK', '$code: src_l holds ' || count(*) || ' rows' FROM src_l;"
        ;;
    B1|B2|B3|B4|C1)
        local f=apply_scd1_merge.sql
        case $code in B3|B4) f=apply_scd1_upsert.sql ;; esac
        echo "\\set tgt scd1"
        echo "\\set tomb scd1_tomb"
        echo "\\i $SQL_DIR/setup_scd1.sql"
        t_start
        case $code in
            B1|B3) echo "\\set stage changes"; echo "\\i $SQL_DIR/$f" ;;
            B2|B4) for i in $(seq 1 10); do echo "\\set stage $(batch "$i")"; echo "\\i $SQL_DIR/$f"; done ;;
            C1) echo "SELECT bench_apply_rowwise() AS c1_rows \\gset" ;;
        esac
        t_stop
        size_line scd1 scd1_tomb
        echo "SELECT 'CHECK', bench_check_equal('$code', 'scd1', 'exp_scd1', 'id, name, city, amount, __seq');"
        ;;
    D1|D2)
        echo "\\set tgt scd2"
        echo "\\set tomb scd2_tomb"
        echo "\\i $SQL_DIR/setup_scd2.sql"
        t_start
        if [ $code = D1 ]; then
            echo "\\set stage changes"; echo "\\i $SQL_DIR/apply_scd2.sql"
        else
            for i in $(seq 1 10); do echo "\\set stage $(batch "$i")"; echo "\\i $SQL_DIR/apply_scd2.sql"; done
        fi
        t_stop
        size_line scd2 scd2_tomb
        echo "SELECT 'CHECK', bench_check_equal('$code', 'scd2', 'exp_scd2', 'id, name, city, amount, __start_at, __end_at');"
        echo "SELECT 'CHECK', bench_check_history('$code', 'scd2');"
        ;;
    Z1)
        # events arrive in system order, so the current belief is SCD 2's history
        cat <<EOF
SELECT bench_drop('tgt3');
SELECT bench_drop('src3');
CREATE TABLE src3 (id bigint, name text, city text, amount numeric, op text, seq bigint, pos bigint);
SELECT autocdc.create_auto_cdc_flow(target => 'tgt3', source => 'src3', keys => ARRAY['id'],
  sequence_by => 'seq', system_sequence_by => 'pos', apply_as_deletes => \$\$op = 'D'\$\$,
  except_column_list => ARRAY['op', 'seq', 'pos'], stored_as_scd_type => 'bitemporal', pipeline => 'b3');
SELECT clock_timestamp() AS lt0 \\gset
INSERT INTO src3 (id, name, city, amount, op, seq, pos) SELECT id, name, city, amount, op, seq, pos FROM changes_pos;
ANALYZE src3;
SELECT clock_timestamp() AS lt1 \\gset
SELECT 'LOAD', extract(epoch FROM :'lt1'::timestamptz - :'lt0'::timestamptz);
EOF
        acdc_run b3 ckpt
        size_line tgt3 ""
        echo "CREATE OR REPLACE VIEW tgt3_now AS SELECT * FROM tgt3 WHERE __system_end_at IS NULL;"
        echo "SELECT 'CHECK', bench_check_equal('$code', 'tgt3_now', 'exp_scd2_fold', 'id, name, city, amount, __start_at, __end_at');"
        echo "SELECT 'CHECK', bench_check_history('$code', 'tgt3_now');"
        ;;
    X1|X2|X3|Y1|Y2)
        local tgt=tgt1 pl=b1 scd=1 more=
        case $code in Y1|Y2) tgt=tgt2; pl=b2; scd=2 ;; X3) more=$X3_EXPECT ;; esac
        acdc_flow src $tgt $pl $scd "$more"
        case $code in
            X1|X3|Y1)
                load_src src "SELECT id, name, city, amount, op, seq FROM changes"
                acdc_run $pl ckpt ;;
            X2|Y2)
                for i in $(seq 1 10); do
                    load_src src "SELECT id, name, city, amount, op, seq FROM $(batch "$i")" "$i"
                    # one CHECKPOINT before the first run, like the hand-written 10 batches
                    if [ "$i" = 1 ]; then acdc_run $pl ckpt; else acdc_run $pl nockpt; fi
                done ;;
        esac
        size_line $tgt ""
        if [ $scd = 1 ]; then
            echo "SELECT 'CHECK', bench_check_equal('$code', '$tgt', 'exp_scd1', 'id, name, city, amount');"
        else
            echo "SELECT 'CHECK', bench_check_equal('$code', '$tgt', 'exp_scd2_fold', 'id, name, city, amount, __start_at, __end_at');"
            echo "SELECT 'CHECK', bench_check_history('$code', '$tgt');"
        fi
        ;;
    esac
}

batches_of() {
    case $1 in B2|B4|D2|X2|Y2) echo 10 ;; *) echo 1 ;; esac
}

# Runs a psql script, aborting loudly (with its output) when it fails.
run_script() {  # label, script file, output file
    if ! "${PSQL[@]}" -f "$2" >"$3" 2>&1; then
        echo "=================== $1 FAILED ===================" >&2
        tail -40 "$3" >&2
        cp "$3" "$RESULTS_DIR/$TS.failed-$1.log" 2>/dev/null || true
        cp "$2" "$RESULTS_DIR/$TS.failed-$1.sql" 2>/dev/null || true
        echo "(whole output: $RESULTS_DIR/$TS.failed-$1.log, script: $RESULTS_DIR/$TS.failed-$1.sql)" >&2
        die "$1 failed"
    fi
}

# Sums the TIMING / LOAD / RUNSTAT lines and takes the SIZE line of one session's
# output; appends one raw row.  Extra fields: mem_hwm_kb mem_anon_peak_kb mem_ctx_peak_bytes.
record() {  # part, approach, run, n, batches, output file, [mem fields...]
    local part=$1 appr=$2 run=$3 n=$4 nb=$5 out=$6
    shift 6
    local mem="${1:-}	${2:-}	${3:-}"
    awk -F'\t' -v ts="$TS" -v part="$part" -v appr="$appr" -v run="$run" -v n="$n" -v nb="$nb" -v mem="$mem" '
        $1 == "TIMING"  { secs += $2; wal += $3; nt++; parts = parts (nt > 1 ? " " : "") sprintf("%.4f", $2) }
        $1 == "LOAD"    { load += $2; nl++ }
        $1 == "RUNSTAT" { rr += $2; ru += $3; rd += $4; rs += $5; nr++ }
        $1 == "SIZE"    { trows = $2; tbytes = $3; arows = $4; abytes = $5 }
        END {
            if (nt == 0) { print "record: no TIMING line" > "/dev/stderr"; exit 1 }
            printf "%s\t%s\t%s\t%s\t%s\t%s\t%.6f\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n",
                ts, part, appr, run, n, nb, secs, wal, trows, tbytes, arows, abytes,
                (nl ? sprintf("%.6f", load) : ""), (nr ? rr : ""), (nr ? ru : ""), (nr ? rd : ""), (nr ? rs : ""), mem, parts
        }' "$out" >>"$RAW"
    tail -1 "$RAW" | awk -F'\t' '{ printf "    %-26s run %s: %8.3f s  WAL %8.1f MB\n", $3, $4, $7, $8 / 1048576 }' >&2
}

# ------------------------------------------------------------------ main table
if [ "$DO_MAIN" = 1 ]; then
    say "generating N=$N K=$K OOO=$OOO seed=$SEED"
    gen_start=$(date +%s)
    "${PSQL[@]}" -v out=changes_pos -v n="$N" -v k="$K" -v ooo="$OOO" -v seed="$SEED" -v payload="$PAYLOAD" \
        -f "$SQL_DIR/gen.sql" >"$WORK/log/gen.out" 2>&1 || { cat "$WORK/log/gen.out" >&2; die "generator failed"; }
    "${PSQL[@]}" -v n="$N" -v copyfile="$WORK/changes.copy" \
        -f "$SQL_DIR/stage.sql" >"$WORK/log/stage.out" 2>&1 || { cat "$WORK/log/stage.out" >&2; die "staging failed"; }
    DATA_LINE=$(grep '^DATA' "$WORK/log/stage.out" | tail -1)
    say "data ready in $(( $(date +%s) - gen_start )) s"

    for run in $(seq 1 "$RUNS"); do
        say "run $run of $RUNS"
        for code in $CODES; do
            name=$(name_of "$code")
            script=$WORK/log/$code.$run.sql
            out=$WORK/log/$code.$run.out
            approach_script "$code" >"$script"
            run_script "$name.run$run" "$script" "$out"
            record main "$name" "$run" "$N" "$(batches_of "$code")" "$out"
            grep '^CHECK' "$out" | cut -f2- | sed 's/^/      check /' >&2
        done
    done
fi

# ------------------------------------------------- big source: incremental / memory
# The big stream: BIG_N events, then INC_REPS chunks of INC_BATCH new events,
# generated like the main data set (same K, OOO, seed).  big = events 1..BIG_N;
# small = its last INC_SMALL events; the chunks are applied to both.
SAMPLER_PID=""
if [ "$DO_INC" = 1 ] || [ "$DO_MEM" = 1 ]; then
    reps=$INC_REPS    # generated with --memory alone too, so that the first BIG_N events are the same
    total=$(( BIG_N + reps * INC_BATCH ))
    say "generating the big stream: $BIG_N + $reps x $INC_BATCH events"
    "${PSQL[@]}" -v out=big_pos -v n="$total" -v k="$K" -v ooo="$OOO" -v seed="$SEED" -v payload="$PAYLOAD" \
        -f "$SQL_DIR/gen.sql" >"$WORK/log/gen_big.out" 2>&1 || { cat "$WORK/log/gen_big.out" >&2; die "generator failed"; }

    # load the big source (not timed), in its own session
    {
        echo "\\set ON_ERROR_STOP 1"
        echo "SET client_min_messages = warning;"
        inc_flow src_big tgt_big inc_big
        LOAD_COLS=$INC_COLS load_src src_big "SELECT $INC_COLS FROM big_pos WHERE pos <= $BIG_N ORDER BY pos"
    } >"$WORK/log/big_load.sql"
    say "loading $BIG_N events into src_big"
    run_script big_load "$WORK/log/big_load.sql" "$WORK/log/big_load.out"
    say "loaded in $(grep '^LOAD' "$WORK/log/big_load.out" | cut -f2) s"

    # the first run over all BIG_N events: a fresh session, sampled for memory
    {
        echo "\\set ON_ERROR_STOP 1"
        echo "SET client_min_messages = warning;"
        echo "\\o $WORK/backend.pid"
        echo "SELECT pg_backend_pid();"
        echo "\\o"
        echo "SELECT pg_sleep(1.5);"       # the sampler attaches and reads the baseline
        acdc_run inc_big ckpt
        echo "SELECT pg_sleep(1.5);"       # a last sample after the run
        size_line tgt_big ""
    } >"$WORK/log/big_run.sql"
    say "autocdc $INC_KIND run over $BIG_N events (pipeline inc_big)"
    rm -f "$WORK/backend.pid"
    "${PSQL[@]}" -f "$WORK/log/big_run.sql" >"$WORK/log/big_run.out" 2>&1 &
    run_pid=$!
    bpid=""
    for _ in $(seq 1 300); do
        if [ -s "$WORK/backend.pid" ]; then bpid=$(tr -dc 0-9 <"$WORK/backend.pid"); break; fi
        kill -0 $run_pid 2>/dev/null || break
        sleep 0.1
    done
    hwm0=""; hwm=0; anon_peak=0; anon0=""; ticks=0
    if [ -n "$bpid" ]; then
        log_offset=$(stat -c %s "$SERVER_LOG")
        while kill -0 $run_pid 2>/dev/null; do
            if st=$(cat /proc/$bpid/status 2>/dev/null); then
                h=$(echo "$st" | awk '/^VmHWM:/ {print $2}')
                a=$(echo "$st" | awk '/^RssAnon:/ {print $2}')
                [ -n "$h" ] && hwm=$h
                [ -z "$hwm0" ] && hwm0=$h
                [ -z "$anon0" ] && anon0=$a
                [ -n "$a" ] && [ "$a" -gt "$anon_peak" ] && anon_peak=$a
            fi
            ticks=$((ticks + 1))
            if [ "$DO_MEM" = 1 ] && [ $((ticks % 10)) = 0 ]; then
                "${PSQL[@]}" -c "SELECT pg_log_backend_memory_contexts($bpid)" >/dev/null 2>&1 || true
            fi
            sleep 0.1
        done
    fi
    wait $run_pid || { tail -40 "$WORK/log/big_run.out" >&2; cp "$WORK/log/big_run.out" "$RESULTS_DIR/$TS.failed-big_run.log"; die "autocdc run over the big source failed"; }
    ctx_peak=""
    if [ "$DO_MEM" = 1 ] && [ -n "$bpid" ]; then
        ctx_peak=$(tail -c +$((log_offset + 1)) "$SERVER_LOG" | grep "\[$bpid\]" | grep 'Grand total:' \
                   | sed -n 's/.*Grand total: \([0-9]*\) bytes.*/\1/p' | sort -n | tail -1)
    fi
    grep '^LOAD' "$WORK/log/big_load.out" >>"$WORK/log/big_run.out" || true
    record big $INC_RUN_NAME "1" "$BIG_N" 1 "$WORK/log/big_run.out" "$hwm" "$anon_peak" "$ctx_peak"
    MEM_LINE="backend pid $bpid: VmHWM ${hwm0:-?} kB before the run, $hwm kB after; RssAnon ${anon0:-?} kB before, peak $anon_peak kB (sampled every 0.1 s); memory contexts peak ${ctx_peak:-n/a} bytes (sampled every ~1 s)"
    say "$MEM_LINE"

    if [ "$DO_INC" = 1 ]; then
        lo=$(( BIG_N - INC_SMALL ))
        {
            echo "\\set ON_ERROR_STOP 1"
            echo "SET client_min_messages = warning;"
            inc_flow src_small tgt_small inc_small
            LOAD_COLS=$INC_COLS load_src src_small "SELECT $INC_COLS FROM big_pos WHERE pos > $lo AND pos <= $BIG_N ORDER BY pos"
            acdc_run inc_small ckpt
            size_line tgt_small ""
        } >"$WORK/log/small_run.sql"
        run_script small_run "$WORK/log/small_run.sql" "$WORK/log/small_run.out"
        record incremental small_initial_${INC_SMALL} 1 "$INC_SMALL" 1 "$WORK/log/small_run.out"

        for r in $(seq 1 "$INC_REPS"); do
            a=$(( BIG_N + (r - 1) * INC_BATCH )); b=$(( BIG_N + r * INC_BATCH ))
            {
                echo "\\set ON_ERROR_STOP 1"
                echo "SET client_min_messages = warning;"
                # no ANALYZE after a small append: autovacuum would not analyze either
                echo "INSERT INTO src_big ($INC_COLS) SELECT $INC_COLS FROM big_pos WHERE pos > $a AND pos <= $b ORDER BY pos;"
                echo "INSERT INTO src_small ($INC_COLS) SELECT $INC_COLS FROM big_pos WHERE pos > $a AND pos <= $b ORDER BY pos;"
            } >"$WORK/log/inc_load.$r.sql"
            run_script inc_load$r "$WORK/log/inc_load.$r.sql" "$WORK/log/inc_load.$r.out"
            # alternate which goes first; each timed run in a fresh session after a CHECKPOINT
            order="big small"; [ $((r % 2)) = 0 ] && order="small big"
            for which in $order; do
                { echo "\\set ON_ERROR_STOP 1"; echo "SET client_min_messages = warning;"
                  acdc_run inc_$which ckpt; size_line tgt_$which ""; } >"$WORK/log/inc_$which.$r.sql"
                run_script inc_$which$r "$WORK/log/inc_$which.$r.sql" "$WORK/log/inc_$which.$r.out"
                record incremental ${which}_${INC_BATCH}_new "$r" "$INC_BATCH" 1 "$WORK/log/inc_$which.$r.out"
            done
        done

        # the fixed cost of a run: no new event, fresh session, after a CHECKPOINT
        for which in big small; do
            { echo "\\set ON_ERROR_STOP 1"; echo "SET client_min_messages = warning;"
              acdc_run inc_$which ckpt; size_line tgt_$which ""; } >"$WORK/log/inc_${which}_empty.sql"
            run_script inc_${which}_empty "$WORK/log/inc_${which}_empty.sql" "$WORK/log/inc_${which}_empty.out"
            record incremental ${which}_0_new 1 0 1 "$WORK/log/inc_${which}_empty.out"
        done

        say "checking tgt_big and tgt_small against their oracles"
        cat >"$WORK/log/inc_check.sql" <<EOF
\\set ON_ERROR_STOP 1
SET client_min_messages = warning;
CREATE TABLE inc_big_ev AS SELECT id, name, city, amount, op, seq FROM big_pos WHERE pos <= $b;
CREATE TABLE inc_small_ev AS SELECT id, name, city, amount, op, seq FROM big_pos WHERE pos > $lo AND pos <= $b;
SELECT bench_make_oracles('ib', 'inc_big_ev');
SELECT bench_make_oracles('is', 'inc_small_ev');
SELECT 'CHECK', bench_check_equal('incremental big', '$(inc_checked tgt_big)', 'ib_scd1', 'id, name, city, amount');
SELECT 'CHECK', bench_check_equal('incremental small', '$(inc_checked tgt_small)', 'is_scd1', 'id, name, city, amount');
EOF
        run_script inc_check "$WORK/log/inc_check.sql" "$WORK/log/inc_check.out"
        grep '^CHECK' "$WORK/log/inc_check.out" | cut -f2- | sed 's/^/      check /' >&2
    elif [ "$DO_MEM" = 1 ]; then
        say "checking tgt_big against its oracle"
        cat >"$WORK/log/big_check.sql" <<EOF
\\set ON_ERROR_STOP 1
SET client_min_messages = warning;
CREATE TABLE inc_big_ev AS SELECT id, name, city, amount, op, seq FROM big_pos WHERE pos <= $BIG_N;
SELECT bench_make_oracles('ib', 'inc_big_ev');
SELECT 'CHECK', bench_check_equal('big', '$(inc_checked tgt_big)', 'ib_scd1', 'id, name, city, amount');
EOF
        run_script big_check "$WORK/log/big_check.sql" "$WORK/log/big_check.out"
        grep '^CHECK' "$WORK/log/big_check.out" | cut -f2- | sed 's/^/      check /' >&2
    fi
fi

# --------------------------------------------------------------------- report
SO_MD5_END=$(md5sum "$PKGLIBDIR/autocdc.so" 2>/dev/null | cut -c1-12 || echo "?")
{
    if [ "$SO_MD5_END" != "$SO_MD5" ]; then
        echo "WARNING: autocdc.so changed during this run ($SO_MD5 at the start, $SO_MD5_END at the end):"
        echo "         sessions started after the change ran the new build; do not compare these numbers."
    fi
    echo "autocdc benchmark $TS"
    echo "PostgreSQL $PGVERSION, autocdc $EXTVERSION (autocdc.so md5 $SO_MD5, source HEAD $GIT_REV), $(nproc) CPUs, $(awk '/MemTotal/ {printf "%.1f GiB", $2/1048576}' /proc/meminfo)"
    [ "$DO_MAIN" = 1 ] && echo "main: N=$N K=$K OOO=$OOO PAYLOAD=$PAYLOAD RUNS=$RUNS SEED=$SEED approaches: $CODES ANALYZE_SRC=$ANALYZE_SRC"
    [ "$DO_INC" = 1 ] || [ "$DO_MEM" = 1 ] && echo "big source: BIG_N=$BIG_N K=$K OOO=$OOO PAYLOAD=$PAYLOAD SEED=$SEED INC_SMALL=$INC_SMALL INC_BATCH=$INC_BATCH INC_REPS=$INC_REPS INC_KIND=$INC_KIND (--incremental $DO_INC, --memory $DO_MEM)"
    if [ "$DO_MAIN" = 1 ]; then
        echo "$DATA_LINE" | awk -F'\t' '{ printf "data: %s rows, %s keys, D/U/I %s/%s/%s %%, out of order %s (%s not re-deliveries, %s late vs an earlier batch), exact duplicates %s; oracle: %s SCD1 rows, %s SCD2 versions per event, %s folded (autocdc); staging %s MB\n", $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14 }'
    fi
    echo
} >"$REPORT"

"${PSQL[@]}" -P footer=off >/dev/null <<EOF
CREATE TABLE bench_raw (ts text, part text, approach text, run int, n bigint, batches int,
  secs float8, wal_bytes bigint, target_rows bigint, target_bytes bigint, aux_rows bigint,
  aux_bytes bigint, load_secs float8, rows_read bigint, rows_upserted bigint, rows_deleted bigint,
  rows_skipped bigint, mem_hwm_kb bigint, mem_anon_peak_kb bigint, mem_ctx_peak_bytes bigint,
  parts_secs text);
\\copy bench_raw FROM '$RAW' (FORMAT csv, DELIMITER E'\\t', HEADER true)
EOF

if [ "$DO_MAIN" = 1 ]; then
    "${PSQL[@]}" -P footer=off -P format=aligned -P null='' -F ' | ' >>"$REPORT" <<'EOF'
\pset format aligned
\pset fieldsep ' | '
\pset tuples_only off
WITH m AS (
  SELECT approach, max(batches) AS batches, max(n) AS n, count(*) AS runs,
         percentile_cont(0.5) WITHIN GROUP (ORDER BY secs) AS med,
         max(secs) - min(secs) AS rng,
         percentile_cont(0.5) WITHIN GROUP (ORDER BY wal_bytes) AS wal,
         max(target_rows) AS trows, max(target_bytes + aux_bytes) AS tbytes,
         percentile_cont(0.5) WITHIN GROUP (ORDER BY load_secs) AS load
  FROM bench_raw WHERE part = 'main' GROUP BY approach
), k AS (
  SELECT m.*,
         CASE WHEN approach ~ '^(B|C|X)' THEN 'scd1' WHEN approach ~ '^(D|Y)' THEN 'scd2' WHEN approach ~ '^Z' THEN 'bitemporal'
              WHEN approach ~ '^L[23]' THEN 'insert' ELSE 'copy' END AS kind
  FROM m
), base AS (
  SELECT kind, batches, min(med) AS hand
  FROM k WHERE approach ~ '^(B|D)' OR approach IN ('A2_copy_logged', 'L2_insert_plain') GROUP BY kind, batches
), a2 AS (
  SELECT med AS secs, wal FROM m WHERE approach = 'A2_copy_logged'
)
SELECT k.approach,
       k.batches AS "batches",
       to_char(k.med, 'FM9990.000') AS "wall s (median)",
       to_char(100 * k.rng / nullif(k.med, 0), 'FM990.0') AS "spread %",
       to_char(k.n / nullif(k.med, 0), 'FM999,999,990') AS "rows/s",
       to_char(k.med / nullif(b.hand, 0), 'FM990.00') AS "× hand",
       to_char(k.med / nullif(a2.secs, 0), 'FM9990.00') AS "× COPY",
       to_char(k.wal / 1048576.0, 'FM99990.0') AS "WAL MB",
       to_char(k.wal / nullif(a2.wal, 0), 'FM990.00') AS "× COPY WAL",
       to_char(k.trows, 'FM999,999,990') AS "target rows",
       to_char(k.tbytes / 1048576.0, 'FM99990.0') AS "tgt+aux MB",
       to_char(k.load, 'FM9990.00') AS "src load s"
FROM k
LEFT JOIN base b ON b.kind = k.kind AND b.batches = k.batches
LEFT JOIN a2 ON true
ORDER BY k.approach;
EOF
    cat >>"$REPORT" <<'EOF'

wall s: median over the runs of the timed part (client-observed, CHECKPOINT before, staging/source load
excluded); spread %: (max - min) / median; rows/s: N / median; × hand: time / the best hand-written approach
of the same kind and batching (SCD1: min of B1,B3 or of B2,B4; SCD2: D1 or D2; L1: A2; L3: L2), < 1 is faster; × COPY: time /
A2; WAL MB: pg_current_wal_insert_lsn() difference around the timed part; tgt+aux MB: target + tombstones /
autocdc state or event store; src load s: the untimed INSERT of the rows into autocdc's source (stamp
default, trigger and autocdc_stamp index) with ANALYZE.
EOF
fi

if [ "$DO_INC" = 1 ] || [ "$DO_MEM" = 1 ]; then
    {
        echo
        echo "big source: $BIG_N events (K=$K); first autocdc $INC_KIND run over all of them:"
    } >>"$REPORT"
    "${PSQL[@]}" -P footer=off >>"$REPORT" <<'EOF'
\pset format aligned
\pset tuples_only off
SELECT approach, n AS events, to_char(secs, 'FM99990.000') AS "wall s", to_char(n / secs, 'FM999,999,990') AS "rows/s",
       to_char(wal_bytes / 1048576.0, 'FM99990.0') AS "WAL MB", to_char(load_secs, 'FM9990.0') AS "src load s",
       rows_read, rows_upserted, rows_deleted, rows_skipped,
       to_char(mem_hwm_kb / 1024.0, 'FM99990.0') AS "VmHWM MiB",
       to_char(mem_anon_peak_kb / 1024.0, 'FM99990.0') AS "RssAnon peak MiB",
       to_char(mem_ctx_peak_bytes / 1048576.0, 'FM99990.0') AS "mem ctx peak MiB"
FROM bench_raw WHERE part = 'big';
EOF
    echo "memory: $MEM_LINE" >>"$REPORT"
fi

if [ "$DO_INC" = 1 ]; then
    {
        echo
        echo "incremental: $INC_BATCH new events, $INC_REPS times, on the big source ($BIG_N events applied) and on a small one (its last $INC_SMALL events applied)"
    } >>"$REPORT"
    "${PSQL[@]}" -P footer=off -v inc_batch="$INC_BATCH" >>"$REPORT" <<'EOF'
\pset format aligned
\pset tuples_only off
WITH m AS (
  SELECT approach, count(*) AS runs, percentile_cont(0.5) WITHIN GROUP (ORDER BY secs) AS med,
         max(secs) - min(secs) AS rng, percentile_cont(0.5) WITHIN GROUP (ORDER BY wal_bytes) AS wal,
         string_agg(to_char(secs, 'FM990.0000'), ' ' ORDER BY run) AS all_secs
  FROM bench_raw WHERE part = 'incremental' GROUP BY approach
)
SELECT approach, runs, to_char(med, 'FM990.0000') AS "wall s (median)",
       to_char(100 * rng / nullif(med, 0), 'FM990.0') AS "spread %",
       to_char(wal / 1024.0, 'FM999990.0') AS "WAL kB", all_secs AS "each run s"
FROM m ORDER BY approach;
\pset tuples_only on
SELECT 'ratio big / small (median of the runs of ' || :'inc_batch' || ' new events): ' ||
       to_char((SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY secs) FROM bench_raw WHERE part = 'incremental' AND approach = 'big_' || :'inc_batch' || '_new') /
               nullif((SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY secs) FROM bench_raw WHERE part = 'incremental' AND approach = 'small_' || :'inc_batch' || '_new'), 0),
               'FM990.00');
EOF
fi

echo
cat "$REPORT"
echo
echo "raw numbers: $RAW"
echo "report:      $REPORT"
