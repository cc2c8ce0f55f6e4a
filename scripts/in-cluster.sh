#!/bin/sh
# Runs a command against a throwaway PostgreSQL 15 cluster with autocdc
# preloaded, with PGHOST/PGPORT/PGUSER/PGDATABASE (and PGPASSWORD) set; the
# cluster is dropped when the command ends.
#   As root: pg_virtualenv (postgresql-common) makes the cluster; the server
#   runs as postgres, the command as root.
#   As another user, when scripts/install-for-tests.sh installed into the
#   private copy tmp_install/: that copy's initdb and pg_ctl, run as the
#   caller, with its bin/ first on PATH (the TAP tests start their nodes
#   from PATH).
set -eu
# The tests' expected output is written for a UTF-8 cluster in C.UTF-8
# (LANG too: the TAP tests' PostgreSQL::Test::Utils drops LC_ALL).
export LC_ALL=C.UTF-8 LANG=C.UTF-8
unset LANGUAGE
# A free port of our own, so that parallel clusters do not collide.
if [ -z "${PGPORT:-}" ]; then
    PGPORT=$(perl -MIO::Socket::INET -e 'my $s = IO::Socket::INET->new(Listen => 1, LocalAddr => "127.0.0.1", LocalPort => 0) or die; print $s->sockport')
    export PGPORT
fi

private_bin=$(cd "$(dirname "$0")/.." && pwd)/tmp_install/usr/lib/postgresql/15/bin
if [ "$(id -u)" = 0 ] || [ ! -x "$private_bin/postgres" ]; then
    exec pg_virtualenv -t -v 15 \
        -o "shared_preload_libraries=autocdc" \
        -o "max_worker_processes=16" \
        "$@"
fi

dir=$(mktemp -d "${TMPDIR:-/tmp}/autocdc-cluster.XXXXXX")
stop() {
    "$private_bin/pg_ctl" -D "$dir/data" -m immediate -w stop >/dev/null 2>&1 || true
    rm -rf "$dir"
}
trap stop EXIT
trap 'exit 130' INT TERM HUP
if ! "$private_bin/initdb" -D "$dir/data" -U postgres -A trust --no-sync \
        -E UTF8 --locale=C.UTF-8 >"$dir/initdb.log" 2>&1; then
    cat "$dir/initdb.log" >&2
    exit 1
fi
cat >>"$dir/data/postgresql.conf" <<CONF
port = $PGPORT
listen_addresses = 'localhost'
unix_socket_directories = '$dir'
shared_preload_libraries = 'autocdc'
max_worker_processes = 16
fsync = off
CONF
if ! "$private_bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 120 start >/dev/null; then
    cat "$dir/server.log" >&2
    exit 1
fi
export PGHOST=localhost PGUSER=postgres PGDATABASE=postgres
export PATH="$private_bin:$PATH"
unset PGPASSWORD PGSERVICE PGSERVICEFILE PGSYSCONFDIR PGHOSTADDR
status=0
"$@" || status=$?
exit $status
