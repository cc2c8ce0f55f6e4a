#!/bin/sh
# Every test, from nothing: installs what is missing (as root; as another
# user it says what to run as root), builds, installs and runs the
# pg_regress, isolation, TAP, property and soak tests in throwaway clusters.
# Exits non-zero when any test fails.  See README.md, "Two commands".
set -eu
cd "$(dirname "$0")"
sh scripts/ensure-deps.sh test
exec make test "$@"
