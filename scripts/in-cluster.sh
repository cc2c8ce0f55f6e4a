#!/bin/sh
# Runs a command against a throwaway PostgreSQL 15 cluster (pg_virtualenv,
# from postgresql-common): the server runs as postgres, the command as the
# caller, with PGHOST/PGPORT/PGUSER/PGPASSWORD/PGDATABASE set.  The cluster
# is dropped when the command ends.
set -eu
exec pg_virtualenv -t -v 15 \
    -o "shared_preload_libraries=autocdc" \
    -o "max_worker_processes=16" \
    "$@"
