#!/bin/sh
# Runs inside scripts/in-cluster.sh: the library's exported symbols
# (scripts/check-exports.sh), pg_regress and isolation tests (make
# installcheck), then the property test.  Exits non-zero on any failure.
set -u
seeds=${1:-3200}
status=0

if ! sh scripts/check-exports.sh autocdc.so; then status=1; fi

if ! make -s installcheck; then
    status=1
    [ -f regression.diffs ] && cat regression.diffs
    [ -f output_iso/regression.diffs ] && cat output_iso/regression.diffs
fi

if ! sh scripts/run-tap.sh; then status=1; fi

if ! perl test/property/model_selftest.pl; then status=1; fi
psql -X -q -c "CREATE EXTENSION IF NOT EXISTS autocdc" >/dev/null || status=1
if ! perl test/property/property.pl --seeds "$seeds"; then status=1; fi
if ! perl test/soak/concurrent.pl --short; then status=1; fi

if [ $status -eq 0 ]; then echo "autocdc: all tests passed"; else echo "autocdc: TESTS FAILED"; fi
exit $status
