#!/bin/sh
# Builds autocdc as it was at a commit of this checkout's history into a
# directory (its autocdc.so, autocdc.control and sql/), for the upgrade test
# test/t/004_upgrade.pl.  Usage: build-old-version.sh COMMIT DIR
# Exits 0 when built; 3, saying why, when the checkout has no such commit (a
# shallow clone, a tarball); 1 when the build fails.
set -eu
commit=$1
dir=$2
repo=$(cd "$(dirname "$0")/.." && pwd)
pg_config=/usr/lib/postgresql/15/bin/pg_config

if ! err=$(git -C "$repo" rev-parse -q --verify "$commit^{commit}" 2>&1 >/dev/null); then
    echo "commit $commit is not in the history of this checkout (a shallow clone or a tarball?)${err:+: $err}"
    exit 3
fi
mkdir -p "$dir"
git -C "$repo" archive "$commit" | tar -x -C "$dir"
if ! env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make -C "$dir" -j"$(nproc 2>/dev/null || echo 2)" PG_CONFIG="$pg_config" >"$dir/build.log" 2>&1; then
    cat "$dir/build.log" >&2
    echo "build-old-version.sh: building $commit in $dir failed" >&2
    exit 1
fi
