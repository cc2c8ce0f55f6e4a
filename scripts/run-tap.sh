#!/bin/sh
# Runs the TAP tests (test/t/*.pl, PostgreSQL::Test::Cluster).  They make
# their own clusters with initdb, which refuses to run as root: as root,
# they run as postgres in a copy of the tests that postgres can write.
set -eu
pgbin=/usr/lib/postgresql/15/bin
# As another user than root, the private copy that has this build installed
# (scripts/install-for-tests.sh).
if [ "$(id -u)" != 0 ] && [ -x tmp_install/usr/lib/postgresql/15/bin/postgres ]; then
    pgbin=$(pwd)/tmp_install/usr/lib/postgresql/15/bin
fi
pgxs=$($pgbin/pg_config --pkglibdir)/pgxs
work=$(mktemp -d /tmp/autocdc-tap.XXXXXX)
# Keep the clusters' logs of a failed run for reading.
trap 'status=$?; if [ $status -ne 0 ]; then rm -rf /tmp/autocdc-tap-logs; cp -r "$work/tmp_check" /tmp/autocdc-tap-logs 2>/dev/null && echo "TAP logs kept in /tmp/autocdc-tap-logs"; fi; rm -rf "$work"' EXIT
cp -r test/t "$work/t"

# The upgrade test (004) starts from the real 0.1.0, built from git history
# as the caller (postgres need not be able to read the checkout).  Without
# that history it skips what needs it, and says why.
old="$work/autocdc-0.1.0"
built=0
why=$(sh scripts/build-old-version.sh 22685cb "$old") || built=$?
case $built in
    0) old_env="AUTOCDC_010_BUILD='$old'" ;;
    3) echo "run-tap.sh: $why" >&2
       old_env="AUTOCDC_010_MISSING='$(printf %s "$why" | tr -d "'")'" ;;
    *) exit 1 ;;
esac

# The throwaway cluster's connection settings must not leak into the tests'.
cmd="cd '$work' && env -u PGHOST -u PGPORT -u PGUSER -u PGPASSWORD -u PGDATABASE \
  -u PGSERVICEFILE -u PGSYSCONFDIR -u PG_CONFIG PATH='$pgbin:$PATH' TESTDIR='$work' $old_env \
  PG_REGRESS='$pgxs/src/test/regress/pg_regress' \
  prove -I '$pgxs/src/test/perl' t/*.pl"

if [ "$(id -u)" = 0 ]; then
    chown -R postgres "$work"
    runuser -u postgres -- sh -c "$cmd"
else
    sh -c "$cmd"
fi
