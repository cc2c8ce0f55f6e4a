#!/bin/sh
# Runs the pg_regress and isolation tests against a server running under
# valgrind (memcheck), and fails on any report.  make valgrind calls it
# after installing; it takes several minutes.
set -eu
pgbin=/usr/lib/postgresql/15/bin
src=$(pwd)
work=$(mktemp -d /tmp/autocdc-valgrind.XXXXXX)
port=$(perl -MIO::Socket::INET -e 'my $s = IO::Socket::INET->new(Listen => 1, LocalAddr => "127.0.0.1", LocalPort => 0) or die; print $s->sockport')
as_pg() { if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi; }

[ "$(id -u)" = 0 ] && chown postgres "$work"
as_pg "$pgbin/initdb" -D "$work/data" -U postgres -A trust --no-locale -E UTF8 >/dev/null
cat >> "$work/data/postgresql.conf" <<CONF
port = $port
listen_addresses = ''
unix_socket_directories = '$work'
shared_preload_libraries = 'autocdc'
max_worker_processes = 16
shared_buffers = 64MB
# slow under valgrind, plans cross the JIT threshold; loading llvmjit trips glibc's dlopen reports
jit = off
CONF
cp "$src/scripts/valgrind.supp" "$work/"
[ "$(id -u)" = 0 ] && chown postgres "$work/valgrind.supp"

as_pg valgrind --quiet --trace-children=yes --track-origins=yes --num-callers=30 \
    --suppressions="$work/valgrind.supp" --log-file="$work/vg.%p.log" \
    "$pgbin/postgres" -D "$work/data" >"$work/server.log" 2>&1 &
stop() { as_pg "$pgbin/pg_ctl" -D "$work/data" -m fast stop >/dev/null 2>&1 || true; }
trap 'stop; [ "${KEEP:-}" ] || rm -rf "$work"' EXIT
for i in $(seq 1 120); do
    "$pgbin/pg_isready" -h "$work" -p "$port" -q && break
    sleep 1
done

status=0
# REGRESS="a b" (and ISOLATION="") narrow the run to some files.
PGHOST=$work PGPORT=$port PGUSER=postgres make -s installcheck \
    ${REGRESS+REGRESS="$REGRESS"} ${ISOLATION+ISOLATION="$ISOLATION"} || status=1
stop
sleep 2

reports=$(cat "$work"/vg.*.log | grep -cE '^==[0-9]+== (Invalid|Conditional|Use of uninitialised|Syscall param|Mismatched|Source and destination|Argument|Jump to)' || true)
echo "valgrind: $(ls "$work"/vg.*.log | wc -l) processes checked, $reports reports"
if [ "$reports" != 0 ]; then
    cat "$work"/vg.*.log | grep -A25 -E '^==[0-9]+== (Invalid|Conditional|Use of uninitialised|Syscall param|Mismatched|Source and destination|Argument|Jump to)' | head -200
    status=1
fi
[ $status = 0 ] && echo "valgrind: 1 passed, 0 failed" || echo "valgrind: 0 passed, 1 failed"
exit $status
