/* autocdc--0.1.0--0.2.0.sql: from 0.1.0 to 0.2.0 (unreleased: edited until 0.2.0 ships) */

\echo Use "ALTER EXTENSION autocdc UPDATE TO '0.2.0'" to load this file. \quit

-- Each flow's last run and running totals live in its checkpoint row, so
-- they outlive the event log's pruning (autocdc.event_log_retention).
ALTER TABLE autocdc.checkpoint
    ADD COLUMN last_status text CHECK (last_status IN ('success', 'failed', 'skipped')),
    ADD COLUMN last_error  text,
    ADD COLUMN last_rows_read bigint,
    ADD COLUMN runs                bigint NOT NULL DEFAULT 0,
    ADD COLUMN rows_read_total     bigint NOT NULL DEFAULT 0,
    ADD COLUMN rows_upserted_total bigint NOT NULL DEFAULT 0,
    ADD COLUMN rows_deleted_total  bigint NOT NULL DEFAULT 0,
    ADD COLUMN rows_skipped_total  bigint NOT NULL DEFAULT 0,
    ADD COLUMN failures_total      bigint NOT NULL DEFAULT 0;
COMMENT ON TABLE autocdc.checkpoint IS 'autocdc per-flow read position (exactly-once checkpoint), ONCE marks, last run and running totals';

-- Filled from the log as it stands (0.1.0 logged every run unless
-- autocdc.log_empty_runs was off, and never pruned it).
UPDATE autocdc.checkpoint c
   SET last_run_at = l.logged_at,
       last_status = l.status,
       last_error = l.error,
       last_rows_read = l.rows_read,
       runs = t.runs,
       rows_read_total = t.rows_read,
       rows_upserted_total = t.rows_upserted,
       rows_deleted_total = t.rows_deleted,
       rows_skipped_total = t.rows_skipped,
       failures_total = t.failures
  FROM (SELECT e.flow, pg_catalog.count(*) AS runs,
               pg_catalog.sum(e.rows_read) AS rows_read,
               pg_catalog.sum(e.rows_upserted) AS rows_upserted,
               pg_catalog.sum(e.rows_deleted) AS rows_deleted,
               pg_catalog.sum(e.rows_skipped) AS rows_skipped,
               pg_catalog.count(*) FILTER (WHERE e.status OPERATOR(pg_catalog.=) 'failed') AS failures,
               pg_catalog.max(e.id) AS last_id
          FROM autocdc.event_log e
          JOIN autocdc.flow f ON f.name OPERATOR(pg_catalog.=) e.flow
         WHERE e.logged_at OPERATOR(pg_catalog.>=) f.created_at  -- not a dropped namesake's
         GROUP BY e.flow) t,
       autocdc.event_log l
 WHERE t.flow OPERATOR(pg_catalog.=) c.flow
   AND l.id OPERATOR(pg_catalog.=) t.last_id;

CREATE INDEX ON autocdc.event_log (logged_at);   -- pruning (autocdc.event_log_retention)

CREATE OR REPLACE VIEW autocdc.flows WITH (security_invoker = true) AS
SELECT f.name,
       f.pipeline,
       f.kind,
       f.source,
       f.source_function,
       f.target,
       f.keys,
       f.sequence_by,
       f.stored_as_scd_type AS scd_type,
       f.read_mode,
       f.once,
       f.owner,
       f.options,
       c.snapshot      AS checkpoint,
       c.snapshot_version,
       c.once_done_at,
       c.last_run_at,
       c.last_status,
       c.last_error,
       c.last_rows_read,
       c.runs,
       c.rows_read_total,
       c.rows_upserted_total,
       c.rows_deleted_total,
       c.rows_skipped_total,
       c.failures_total
  FROM autocdc.flow f
  LEFT JOIN autocdc.checkpoint c ON c.flow OPERATOR(pg_catalog.=) f.name;
COMMENT ON VIEW autocdc.flows IS 'autocdc: every flow with its kind, source, target, options, checkpoint, last run and running totals';
