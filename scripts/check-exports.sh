#!/bin/sh
# Checks that the built library exports exactly what PostgreSQL looks up by
# name (src/autocdc.h): the magic block, _PG_init, every function an
# extension script names (AS 'MODULE_PATHNAME', 'name') with its pg_finfo_
# record, and the background worker entry points src/worker.c registers.
# Lists any symbol missing or exported beyond that and exits non-zero.
#   sh scripts/check-exports.sh [path/to/autocdc.so]      (run from the top)
set -eu
lib=${1:-autocdc.so}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

if [ ! -f "$lib" ]; then
    echo "check-exports: $lib not found (run make first)" >&2
    exit 1
fi

{
    echo Pg_magic_func
    echo _PG_init
    # Every script's functions: CREATE FUNCTION checks the symbol, and an
    # older version can still be installed and updated with this library.
    for f in $(sed -n "s/.*'MODULE_PATHNAME', *'\([A-Za-z0-9_]*\)'.*/\1/p" sql/*.sql); do
        echo "$f"
        echo "pg_finfo_$f"
    done
    # bgw_function_name values.
    grep -ho 'fill_worker(&w, "[A-Za-z0-9_]*"' src/*.c | sed 's/.*"\(.*\)"/\1/'
} | sort -u > "$tmp/expected"

nm -D --defined-only "$lib" | awk '{ print $NF }' | sort -u > "$tmp/exported"

status=0
extra=$(comm -13 "$tmp/expected" "$tmp/exported")
missing=$(comm -23 "$tmp/expected" "$tmp/exported")
if [ -n "$extra" ]; then
    echo "check-exports: $lib exports symbols PostgreSQL does not look up (make them static, or check -fvisibility=hidden):"
    echo "$extra" | sed 's/^/  /'
    status=1
fi
if [ -n "$missing" ]; then
    echo "check-exports: $lib does not export symbols PostgreSQL looks up (declare them PGDLLEXPORT):"
    echo "$missing" | sed 's/^/  /'
    status=1
fi
[ $status -eq 0 ] && echo "check-exports: $lib exports only what PostgreSQL looks up ($(wc -l < "$tmp/exported") symbols)"
exit $status
