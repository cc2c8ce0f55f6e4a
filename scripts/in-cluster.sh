#!/bin/sh
# Runs a command against a throwaway PostgreSQL 15 cluster (pg_virtualenv,
# from postgresql-common): the server runs as postgres, the command as the
# caller, with PGHOST/PGPORT/PGUSER/PGPASSWORD/PGDATABASE set.  The cluster
# is dropped when the command ends.
set -eu
# A free port of our own, so that parallel clusters do not collide.
if [ -z "${PGPORT:-}" ]; then
    PGPORT=$(perl -MIO::Socket::INET -e 'my $s = IO::Socket::INET->new(Listen => 1, LocalAddr => "127.0.0.1", LocalPort => 0) or die; print $s->sockport')
    export PGPORT
fi
exec pg_virtualenv -t -v 15 \
    -o "shared_preload_libraries=autocdc" \
    -o "max_worker_processes=16" \
    "$@"
