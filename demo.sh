#!/bin/sh
# The demo, from nothing: installs what is missing (as root; as another user
# it says what to run as root), builds, installs and runs the examples in a
# throwaway cluster.  See README.md, "Two commands".
set -eu
cd "$(dirname "$0")"
sh scripts/ensure-deps.sh demo
exec make demo
