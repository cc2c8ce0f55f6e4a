#!/bin/sh
# Runs the examples against the cluster in PG* (make demo starts one).
set -eu
cd "$(dirname "$0")"
for f in users.sql backfill_append_once.sql backfill_snapshot.sql backfill_scd2_legacy.sql pipeline.sql; do
    echo
    echo "######## examples/$f"
    psql -X -q -f "$f"
done
