#!/bin/sh
# Runs the examples against the cluster in PG* (make demo starts one).
set -eu
cd "$(dirname "$0")"
psql -X -q -f users.sql
