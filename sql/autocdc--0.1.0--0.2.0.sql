/* autocdc--0.1.0--0.2.0.sql: from 0.1.0 to 0.2.0 (unreleased: edited until 0.2.0 ships) */

\echo Use "ALTER EXTENSION autocdc UPDATE TO '0.2.0'" to load this file. \quit

-- Expression pinning: what a flow's expressions resolved to at creation,
-- checked by each run.  Flows from 0.1.0 get it at their first run.
ALTER TABLE autocdc.flow ADD COLUMN expression_objects text[];
COMMENT ON COLUMN autocdc.flow.expression_objects IS
  'what sequence_by, apply_as_* and source_function resolved to at creation; checked at each run';
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
       l.logged_at     AS last_run_at,
       l.status        AS last_status,
       l.error         AS last_error,
       f.expression_objects
  FROM autocdc.flow f
  LEFT JOIN autocdc.checkpoint c ON c.flow OPERATOR(pg_catalog.=) f.name
  LEFT JOIN LATERAL (SELECT e.logged_at, e.status, e.error
                       FROM autocdc.event_log e
                      WHERE e.flow OPERATOR(pg_catalog.=) f.name
                      ORDER BY e.id DESC LIMIT 1) l ON true;
