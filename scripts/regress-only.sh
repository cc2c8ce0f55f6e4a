#!/bin/sh
# Developer helper: runs only the pg_regress/isolation tests in a throwaway cluster.
make -s installcheck "$@" || { cat regression.diffs 2>/dev/null; exit 1; }
