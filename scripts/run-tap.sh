#!/bin/sh
# Runs the TAP tests (test/t/*.pl, PostgreSQL::Test::Cluster).  They make
# their own clusters with initdb, which refuses to run as root: as root,
# they run as postgres in a copy of the tests that postgres can write.
set -eu
pgbin=/usr/lib/postgresql/15/bin
pgxs=$($pgbin/pg_config --pkglibdir)/pgxs
work=$(mktemp -d /tmp/autocdc-tap.XXXXXX)
# Keep the clusters' logs of a failed run for reading.
trap 'status=$?; if [ $status -ne 0 ]; then rm -rf /tmp/autocdc-tap-logs; cp -r "$work/tmp_check" /tmp/autocdc-tap-logs 2>/dev/null && echo "TAP logs kept in /tmp/autocdc-tap-logs"; fi; rm -rf "$work"' EXIT
cp -r test/t "$work/t"

# The throwaway cluster's connection settings must not leak into the tests'.
cmd="cd '$work' && env -u PGHOST -u PGPORT -u PGUSER -u PGPASSWORD -u PGDATABASE \
  -u PGSERVICEFILE -u PGSYSCONFDIR -u PG_CONFIG PATH='$pgbin:$PATH' TESTDIR='$work' \
  PG_REGRESS='$pgxs/src/test/regress/pg_regress' \
  prove -I '$pgxs/src/test/perl' t/*.pl"

if [ "$(id -u)" = 0 ]; then
    chown -R postgres "$work"
    runuser -u postgres -- sh -c "$cmd"
else
    sh -c "$cmd"
fi
