/* autocdc--0.2.0.sql */

\echo Use "CREATE EXTENSION autocdc" to load this file. \quit

CREATE SCHEMA autocdc;
COMMENT ON SCHEMA autocdc IS 'autocdc: flows, their catalog and the auxiliary state of their targets';

-- Every object below is qualified; nothing depends on the installer's
-- search_path.  Catalog tables reference user relations as regclass so that
-- pg_dump and pg_upgrade keep them.

GRANT USAGE ON SCHEMA autocdc TO PUBLIC;

CREATE TABLE autocdc.pipeline (
    name        text PRIMARY KEY,
    id          bigint GENERATED ALWAYS AS IDENTITY UNIQUE,  -- how workers name it
    owner       regrole NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT pg_catalog.now(),
    -- scheduled runs by the background worker (autocdc.schedule)
    schedule    interval CHECK (schedule >= '0'),          -- NULL: not scheduled; 0: continuous
    next_run_at timestamptz,
    last_started_at  timestamptz,
    last_finished_at timestamptz,
    last_status text CHECK (last_status IN ('running', 'success', 'failed', 'busy', 'interrupted')),
    last_error  text,
    failures    int NOT NULL DEFAULT 0                      -- consecutive failed runs
);
COMMENT ON TABLE autocdc.pipeline IS 'autocdc pipelines: a named group of flows run together, owned by the role that created its first flow';

-- One row per target fed by AUTO CDC flows: what every flow into it must
-- agree on, and where its auxiliary state lives.
CREATE TABLE autocdc.target (
    target          regclass PRIMARY KEY,
    kind            text NOT NULL DEFAULT 'auto_cdc' CHECK (kind IN ('auto_cdc', 'append')),
    -- the rest is for AUTO CDC targets (fed by AUTO CDC and snapshot flows)
    scd_type        int,
    keys            text[],
    sequence_type   regtype,
    state_table     regclass,
    sequence_composite regtype,          -- created for ROW(...) sequences
    partial_columns text[] NOT NULL DEFAULT '{}', -- columns whose setter the state keeps
    track_columns   text[],              -- SCD 2: history tracked on these (NULL: all)
    truncate_seq    text                 -- SCD 1: highest truncate applied, as text of sequence_type
);
COMMENT ON TABLE autocdc.target IS 'autocdc targets: what their flows agree on, and their auxiliary state';

CREATE TABLE autocdc.flow (
    name            text PRIMARY KEY,
    pipeline        text NOT NULL,       -- autocdc.pipeline (no foreign keys: see below)
    kind            text NOT NULL CHECK (kind IN ('auto_cdc', 'snapshot', 'append')),
    target          regclass NOT NULL,   -- autocdc.target
    source          regclass,            -- NULL for a snapshot flow with a source function
    source_function text,                -- regprocedure as text (regprocedure blocks pg_upgrade)
    keys            text[],              -- NULL for append flows, as are the next two
    sequence_by     text,
    stored_as_scd_type int,
    apply_as_deletes   text,
    apply_as_truncates text,
    columns         text[] NOT NULL,     -- non-key target columns this flow writes
    ignore_null_columns text[] NOT NULL DEFAULT '{}',
    once            boolean NOT NULL DEFAULT false,
    read_mode       text NOT NULL CHECK (read_mode IN ('incremental', 'full')),
    owner           regrole NOT NULL,
    options         jsonb NOT NULL,      -- the arguments as given
    created_at      timestamptz NOT NULL DEFAULT pg_catalog.now(),
    -- what sequence_by, apply_as_* and source_function resolved to at
    -- creation ('part: class identity [owned by role]'); each run checks it.
    -- NULL: a flow from 0.1.0, recorded at its first run.
    expression_objects text[]
);
CREATE INDEX ON autocdc.flow (pipeline);
CREATE INDEX ON autocdc.flow (target);
COMMENT ON TABLE autocdc.flow IS 'autocdc flows: AUTO CDC, AUTO CDC from snapshot, and append flows';
COMMENT ON COLUMN autocdc.flow.expression_objects IS
  'what sequence_by, apply_as_* and source_function resolved to at creation; checked at each run';

-- Per flow: the source snapshot up to which rows have been read.  Written in
-- the same transaction as the target changes.
CREATE TABLE autocdc.checkpoint (
    flow        text PRIMARY KEY,        -- autocdc.flow; goes with it (define_drop_orphan_targets)
    snapshot    pg_snapshot,     -- rows of transactions visible in it were read
    own_xid     xid8,            -- the run's own transaction, treated apart:
    own_cid     bigint,          --   its rows with cmin < own_cid were read
    snapshot_version text,       -- snapshot flows: the last version applied
    once_done_at timestamptz,
    last_run_at timestamptz,
    -- the last run and running totals: kept here, as the event log is pruned
    last_status text CHECK (last_status IN ('success', 'failed', 'skipped', 'interrupted')),
    last_error  text,
    last_rows_read bigint,
    runs                bigint NOT NULL DEFAULT 0,
    rows_read_total     bigint NOT NULL DEFAULT 0,
    rows_upserted_total bigint NOT NULL DEFAULT 0,
    rows_deleted_total  bigint NOT NULL DEFAULT 0,
    rows_skipped_total  bigint NOT NULL DEFAULT 0,
    failures_total      bigint NOT NULL DEFAULT 0
);
COMMENT ON TABLE autocdc.checkpoint IS 'autocdc per-flow read position (exactly-once checkpoint), ONCE marks, last run and running totals';

CREATE TABLE autocdc.event_log (
    id            bigserial PRIMARY KEY,
    logged_at     timestamptz NOT NULL DEFAULT pg_catalog.clock_timestamp(),
    run_id        bigint NOT NULL,
    pipeline      text NOT NULL,
    flow          text NOT NULL,
    target        text NOT NULL,
    kind          text NOT NULL,
    read_mode     text NOT NULL,
    full_refresh  boolean NOT NULL,
    rows_read     bigint NOT NULL DEFAULT 0,
    rows_upserted bigint NOT NULL DEFAULT 0,
    rows_deleted  bigint NOT NULL DEFAULT 0,
    rows_skipped  bigint NOT NULL DEFAULT 0,
    status        text NOT NULL CHECK (status IN ('success', 'failed', 'skipped', 'interrupted')),
    error         text,
    duration      interval NOT NULL,
    run_by        regrole NOT NULL,
    -- who may read the row: the flow's and the pipeline's owners at the
    -- time (names are reused once a flow or pipeline is gone)
    flow_owner     regrole NOT NULL,
    pipeline_owner regrole NOT NULL
);
CREATE INDEX ON autocdc.event_log (flow, id);
CREATE INDEX ON autocdc.event_log (logged_at);   -- pruning (autocdc.event_log_retention)
CREATE SEQUENCE autocdc.run_id_seq;
COMMENT ON TABLE autocdc.event_log IS 'autocdc: one row per flow per run, with counts, status and error';

SELECT pg_catalog.pg_extension_config_dump('autocdc.pipeline', '');
SELECT pg_catalog.pg_extension_config_dump('autocdc.target', '');
SELECT pg_catalog.pg_extension_config_dump('autocdc.flow', '');
SELECT pg_catalog.pg_extension_config_dump('autocdc.checkpoint', '');
SELECT pg_catalog.pg_extension_config_dump('autocdc.event_log', '');
SELECT pg_catalog.pg_extension_config_dump('autocdc.event_log_id_seq', '');
SELECT pg_catalog.pg_extension_config_dump('autocdc.run_id_seq', '');
SELECT pg_catalog.pg_extension_config_dump('autocdc.pipeline_id_seq', '');

-- Catalog writes happen in C as the extension owner; everyone may read.
REVOKE ALL ON autocdc.pipeline, autocdc.target, autocdc.flow, autocdc.checkpoint,
              autocdc.event_log FROM PUBLIC;
GRANT SELECT ON autocdc.pipeline, autocdc.target, autocdc.flow, autocdc.checkpoint,
                autocdc.event_log TO PUBLIC;

-- Each role sees its own pipelines and flows (and those of roles it is a
-- member of); superusers see all.  autocdc's C code reads and writes as the
-- extension owner, which these policies do not restrict.
ALTER TABLE autocdc.pipeline ENABLE ROW LEVEL SECURITY;
ALTER TABLE autocdc.flow ENABLE ROW LEVEL SECURITY;
ALTER TABLE autocdc.checkpoint ENABLE ROW LEVEL SECURITY;
ALTER TABLE autocdc.target ENABLE ROW LEVEL SECURITY;
ALTER TABLE autocdc.event_log ENABLE ROW LEVEL SECURITY;
CREATE POLICY own_pipelines ON autocdc.pipeline FOR SELECT
    USING (pg_catalog.pg_has_role(owner::pg_catalog.oid, 'USAGE'));
CREATE POLICY own_flows ON autocdc.flow FOR SELECT
    USING (pg_catalog.pg_has_role(owner::pg_catalog.oid, 'USAGE'));
CREATE POLICY own_checkpoints ON autocdc.checkpoint FOR SELECT
    USING (EXISTS (SELECT 1 FROM autocdc.flow f WHERE f.name OPERATOR(pg_catalog.=) flow));
CREATE POLICY own_targets ON autocdc.target FOR SELECT
    USING (EXISTS (SELECT 1 FROM autocdc.flow f WHERE f.target OPERATOR(pg_catalog.=) autocdc.target.target));
CREATE POLICY own_events ON autocdc.event_log FOR SELECT
    USING (pg_catalog.pg_has_role(flow_owner::pg_catalog.oid, 'USAGE')
           OR pg_catalog.pg_has_role(pipeline_owner::pg_catalog.oid, 'USAGE'));

CREATE VIEW autocdc.flows WITH (security_invoker = true) AS
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
       f.expression_objects,
       c.last_rows_read,
       c.runs,
       c.rows_read_total,
       c.rows_upserted_total,
       c.rows_deleted_total,
       c.rows_skipped_total,
       c.failures_total
  FROM autocdc.flow f
  LEFT JOIN autocdc.checkpoint c ON c.flow OPERATOR(pg_catalog.=) f.name;
GRANT SELECT ON autocdc.flows TO PUBLIC;
COMMENT ON VIEW autocdc.flows IS 'autocdc: every flow with its kind, source, target, options, checkpoint, last run and running totals';

CREATE VIEW autocdc.pipelines WITH (security_invoker = true) AS
SELECT p.name,
       p.owner,
       p.schedule,
       p.next_run_at,
       p.last_started_at  AS last_run_at,
       p.last_finished_at,
       p.last_status,
       p.last_error,
       p.failures,
       (SELECT pg_catalog.count(*) FROM autocdc.flow f
         WHERE f.pipeline OPERATOR(pg_catalog.=) p.name) AS flows
  FROM autocdc.pipeline p;
GRANT SELECT ON autocdc.pipelines TO PUBLIC;
COMMENT ON VIEW autocdc.pipelines IS 'autocdc: every pipeline with its schedule, last run, last status and next run';

-- Every autocdc setting, in any session (calling it loads the library,
-- which defines them).
CREATE FUNCTION autocdc._settings(OUT name text, OUT setting text, OUT unit text,
                                  OUT context text, OUT description text)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'autocdc_settings'
LANGUAGE C STABLE;
CREATE VIEW autocdc.settings AS SELECT * FROM autocdc._settings();
GRANT SELECT ON autocdc.settings TO PUBLIC;
COMMENT ON VIEW autocdc.settings IS 'autocdc: every setting with its value, unit, context and meaning';

-- The read position stored after a run: its snapshot, with the run's own
-- transaction marked as not yet visible (its rows are tracked by command id,
-- so rows it adds after the run are still read later).
CREATE FUNCTION autocdc._checkpoint_snapshot(snap pg_snapshot, own xid8)
RETURNS pg_snapshot
LANGUAGE sql IMMUTABLE PARALLEL SAFE
SET search_path = pg_catalog
AS $$
  SELECT CASE
    WHEN own IS NULL OR NOT pg_visible_in_snapshot(own, snap) THEN snap
    ELSE (least(pg_snapshot_xmin(snap), own)::text || ':' ||
          pg_snapshot_xmax(snap)::text || ':' ||
          (SELECT string_agg(x::text, ',' ORDER BY x)
             FROM (SELECT pg_snapshot_xip(snap) AS x UNION SELECT own) u))::pg_snapshot
  END
$$;

CREATE FUNCTION autocdc.create_auto_cdc_flow(
    target      text,
    source      regclass DEFAULT NULL,
    keys        text[]   DEFAULT NULL,
    sequence_by text     DEFAULT NULL,
    name        text    DEFAULT NULL,
    stored_as_scd_type int DEFAULT 1,
    apply_as_deletes   text DEFAULT NULL,
    apply_as_truncates text DEFAULT NULL,
    column_list        text[] DEFAULT NULL,
    except_column_list text[] DEFAULT NULL,
    track_history_column_list        text[] DEFAULT NULL,
    track_history_except_column_list text[] DEFAULT NULL,
    ignore_null_updates boolean DEFAULT false,
    ignore_null_updates_column_list        text[] DEFAULT NULL,
    ignore_null_updates_except_column_list text[] DEFAULT NULL,
    once     boolean DEFAULT false,
    pipeline text    DEFAULT NULL,
    tombstone_retention interval DEFAULT NULL,
    start_from text  DEFAULT NULL,
    source_query text DEFAULT NULL,
    expect         jsonb DEFAULT NULL,
    expect_or_drop jsonb DEFAULT NULL,
    expect_or_fail jsonb DEFAULT NULL,
    on_bad_event   text  DEFAULT 'fail',
    system_sequence_by text DEFAULT NULL,
    columns_to_update  text DEFAULT NULL)
RETURNS void
AS 'MODULE_PATHNAME', 'autocdc_create_auto_cdc_flow'
LANGUAGE C VOLATILE;
COMMENT ON FUNCTION autocdc.create_auto_cdc_flow(text, regclass, text[], text, text, int, text, text, text[], text[], text[], text[], boolean, text[], text[], boolean, text, interval, text, text, jsonb, jsonb, jsonb, text, text, text)
    IS 'declare an AUTO CDC flow from a change table into an SCD target';
-- A text overload takes stored_as_scd_type => 'bitemporal' (and '1', '2').
-- Its stored_as_scd_type comes second and has no default, so that a call
-- leaving it out resolves to the int overload alone.
CREATE FUNCTION autocdc.create_auto_cdc_flow(
    target      text,
    stored_as_scd_type text,
    source      regclass DEFAULT NULL,
    keys        text[]   DEFAULT NULL,
    sequence_by text     DEFAULT NULL,
    name        text    DEFAULT NULL,
    apply_as_deletes   text DEFAULT NULL,
    apply_as_truncates text DEFAULT NULL,
    column_list        text[] DEFAULT NULL,
    except_column_list text[] DEFAULT NULL,
    track_history_column_list        text[] DEFAULT NULL,
    track_history_except_column_list text[] DEFAULT NULL,
    ignore_null_updates boolean DEFAULT false,
    ignore_null_updates_column_list        text[] DEFAULT NULL,
    ignore_null_updates_except_column_list text[] DEFAULT NULL,
    once     boolean DEFAULT false,
    pipeline text    DEFAULT NULL,
    tombstone_retention interval DEFAULT NULL,
    start_from text  DEFAULT NULL,
    source_query text DEFAULT NULL,
    expect         jsonb DEFAULT NULL,
    expect_or_drop jsonb DEFAULT NULL,
    expect_or_fail jsonb DEFAULT NULL,
    on_bad_event   text  DEFAULT 'fail',
    system_sequence_by text DEFAULT NULL,
    columns_to_update  text DEFAULT NULL)
RETURNS void
AS 'MODULE_PATHNAME', 'autocdc_create_auto_cdc_flow_text'
LANGUAGE C VOLATILE;
COMMENT ON FUNCTION autocdc.create_auto_cdc_flow(text, text, regclass, text[], text, text, text, text, text[], text[], text[], text[], boolean, text[], text[], boolean, text, interval, text, text, jsonb, jsonb, jsonb, text, text, text)
    IS 'declare an AUTO CDC flow with stored_as_scd_type as text: ''1'', ''2'' or ''bitemporal''';

CREATE FUNCTION autocdc.create_auto_cdc_from_snapshot_flow(
    target text,
    keys   text[],
    source regclass DEFAULT NULL,
    source_function regprocedure DEFAULT NULL,
    name   text DEFAULT NULL,
    stored_as_scd_type int DEFAULT 1,
    track_history_column_list        text[] DEFAULT NULL,
    track_history_except_column_list text[] DEFAULT NULL,
    once     boolean DEFAULT false,
    pipeline text    DEFAULT NULL,
    tombstone_retention interval DEFAULT NULL,
    start_from text  DEFAULT NULL,
    snapshot_query text DEFAULT NULL,
    version_query  text DEFAULT NULL)
RETURNS void
AS 'MODULE_PATHNAME', 'autocdc_create_auto_cdc_from_snapshot_flow'
LANGUAGE C VOLATILE;
COMMENT ON FUNCTION autocdc.create_auto_cdc_from_snapshot_flow(text, text[], regclass, regprocedure, text, int, text[], text[], boolean, text, interval, text, text, text)
    IS 'declare a flow that applies full snapshots of a source to an SCD target';

CREATE FUNCTION autocdc.create_append_flow(
    target   text,
    source   regclass DEFAULT NULL,
    name     text    DEFAULT NULL,
    once     boolean DEFAULT false,
    pipeline text    DEFAULT NULL,
    start_from text  DEFAULT NULL,
    source_query text DEFAULT NULL,
    expect         jsonb DEFAULT NULL,
    expect_or_drop jsonb DEFAULT NULL,
    expect_or_fail jsonb DEFAULT NULL)
RETURNS void
AS 'MODULE_PATHNAME', 'autocdc_create_append_flow'
LANGUAGE C VOLATILE;
COMMENT ON FUNCTION autocdc.create_append_flow(text, regclass, text, boolean, text, text, text, jsonb, jsonb, jsonb)
    IS 'declare a flow that appends new source rows to a target by column name';

CREATE FUNCTION autocdc.schedule(pipeline text, every interval)
RETURNS void
AS 'MODULE_PATHNAME', 'autocdc_schedule'
LANGUAGE C VOLATILE STRICT;
COMMENT ON FUNCTION autocdc.schedule(text, interval)
    IS 'run a pipeline in the background worker every interval (0: continuously)';

CREATE FUNCTION autocdc.unschedule(pipeline text)
RETURNS void
AS 'MODULE_PATHNAME', 'autocdc_unschedule'
LANGUAGE C VOLATILE STRICT;
COMMENT ON FUNCTION autocdc.unschedule(text) IS 'stop running a pipeline in the background worker';

CREATE FUNCTION autocdc.drop_flow(name text)
RETURNS void
AS 'MODULE_PATHNAME', 'autocdc_drop_flow'
LANGUAGE C VOLATILE STRICT;
COMMENT ON FUNCTION autocdc.drop_flow(text) IS 'drop a flow (the target table is kept)';

CREATE FUNCTION autocdc.run(pipeline text DEFAULT NULL,
                            full_refresh boolean DEFAULT false,
                            flows text[] DEFAULT NULL)
RETURNS TABLE(flow text, target regclass, kind text, rows_read bigint,
              rows_upserted bigint, rows_deleted bigint, rows_skipped bigint,
              rows_dropped bigint, status text, error text, duration interval)
AS 'MODULE_PATHNAME', 'autocdc_run'
LANGUAGE C VOLATILE;
COMMENT ON FUNCTION autocdc.run(text, boolean, text[])
    IS 'run the flows of a pipeline (or all of the caller''s pipelines) once';

-- The stamp of a table source's rows (stamp.c): the default of column
-- __autocdc_xid, the test of a row trigger's WHEN (AFTER INSERT FOR EACH
-- ROW, enabled ALWAYS: no row trigger before the insert, so COPY keeps
-- inserting in batches) and what that trigger raises.
CREATE FUNCTION autocdc._stamp()
RETURNS xid8
AS 'MODULE_PATHNAME', 'autocdc_stamp'
LANGUAGE C STABLE;

CREATE FUNCTION autocdc._stamp_given(xid8)
RETURNS boolean
AS 'MODULE_PATHNAME', 'autocdc_stamp_given'
LANGUAGE C STABLE STRICT;

CREATE FUNCTION autocdc._refuse_given_stamp()
RETURNS trigger
AS 'MODULE_PATHNAME', 'autocdc_refuse_given_stamp'
LANGUAGE C;

-- The index on __autocdc_xid (src/stamp_index.c): per range of the
-- table's blocks, the highest stamp and whether a NULL went there.  An
-- insert touches it once per range and transaction, where BRIN in
-- PostgreSQL 15 reads its metapage and revmap for every row.
CREATE FUNCTION autocdc._stamp_index_handler(internal)
RETURNS index_am_handler
AS 'MODULE_PATHNAME', 'autocdc_stamp_index_handler'
LANGUAGE C;

CREATE ACCESS METHOD autocdc_stamp TYPE INDEX HANDLER autocdc._stamp_index_handler;

CREATE OPERATOR CLASS autocdc.xid8_stamp_ops
    DEFAULT FOR TYPE xid8 USING autocdc_stamp AS
        OPERATOR 1 pg_catalog.> (xid8, xid8),
        OPERATOR 2 pg_catalog.>= (xid8, xid8);

CREATE FUNCTION autocdc._on_sql_drop()
RETURNS event_trigger
AS 'MODULE_PATHNAME', 'autocdc_on_sql_drop'
LANGUAGE C;

CREATE EVENT TRIGGER autocdc_sql_drop ON sql_drop
    EXECUTE FUNCTION autocdc._on_sql_drop();

-- issue 13: pinned settings and retention
-- The settings that change what an expression or a cast gives (TimeZone,
-- DateStyle, ...) as 'name=value', as they were where the flow was
-- created; every run of the flow applies them.
ALTER TABLE autocdc.flow ADD COLUMN settings text[] NOT NULL;
COMMENT ON COLUMN autocdc.flow.settings IS
  'the settings that change expression results, as at the flow''s creation; applied by each run';
-- How long the target remembers deleted keys; NULL: autocdc.tombstone_retention.
ALTER TABLE autocdc.target ADD COLUMN tombstone_retention interval;
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
       f.expression_objects,
       c.last_rows_read,
       c.runs,
       c.rows_read_total,
       c.rows_upserted_total,
       c.rows_deleted_total,
       c.rows_skipped_total,
       c.failures_total,
       f.settings,
       t.tombstone_retention
  FROM autocdc.flow f
  LEFT JOIN autocdc.checkpoint c ON c.flow OPERATOR(pg_catalog.=) f.name
  LEFT JOIN autocdc.target t ON t.target OPERATOR(pg_catalog.=) f.target;
COMMENT ON VIEW autocdc.flows IS 'autocdc: every flow with its kind, source, target, options, checkpoint, last run and running totals';

-- Per table source: below which transaction every flow over it has read
-- every row (NULL while some flow has not run, or reads the source whole).
CREATE FUNCTION autocdc._source_progress(OUT source regclass, OUT flows bigint,
                                         OUT read_below xid8, OUT ready text)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'autocdc_source_progress'
LANGUAGE C STABLE;
CREATE VIEW autocdc.source_progress AS SELECT * FROM autocdc._source_progress();
GRANT SELECT ON autocdc.source_progress TO PUBLIC;
COMMENT ON VIEW autocdc.source_progress IS
  'autocdc: per table source, below which transaction every flow over it has read its rows (safe to prune for incremental runs)';

-- Forgets what no event at or after `before` (a value of the target's
-- sequence, as text) needs; see README, Retention.
CREATE FUNCTION autocdc.compact(target regclass, before text,
                                OUT keys_compacted bigint, OUT rows_dropped bigint)
RETURNS record
AS 'MODULE_PATHNAME', 'autocdc_compact'
LANGUAGE C VOLATILE STRICT;
COMMENT ON FUNCTION autocdc.compact(regclass, text)
    IS 'drop the tombstones and stored events of a target that no event at or after a horizon needs';

-- issue 13: uninstall, start_from, manual changes to targets
-- What autocdc added to a table source, removed again (DROP EXTENSION
-- leaves the column, its default and its index).
CREATE FUNCTION autocdc.unprepare_source(source regclass)
RETURNS void
AS 'MODULE_PATHNAME', 'autocdc_unprepare_source'
LANGUAGE C VOLATILE STRICT;
COMMENT ON FUNCTION autocdc.unprepare_source(regclass)
    IS 'remove what autocdc added to a table source no flow reads (trigger, column __autocdc_xid, its default and index)';

-- DROP EXTENSION autocdc CASCADE would drop the history columns of SCD 2
-- targets sequenced by ROW(...) (their type is in schema autocdc): refused.
CREATE FUNCTION autocdc._on_drop_extension()
RETURNS event_trigger
AS 'MODULE_PATHNAME', 'autocdc_on_drop_extension'
LANGUAGE C;

CREATE EVENT TRIGGER autocdc_drop_extension ON ddl_command_start
    WHEN TAG IN ('DROP EXTENSION')
    EXECUTE FUNCTION autocdc._on_drop_extension();

-- issue 13: the source stamp and the checkpoint.
-- Where each checkpoint was taken: the cluster (transaction ids mean
-- something in one cluster only) and the source's oid (a restore makes
-- the table anew, and its COPY keeps the stamps it is given).
ALTER TABLE autocdc.checkpoint
    ADD COLUMN cluster_id bigint,    -- system identifier (pg_control_system)
    ADD COLUMN source_oid oid;       -- the source read, as a raw oid: a restore changes it
-- The clusters this database's files lived in: the one CREATE EXTENSION
-- ran in, and those pg_upgrade carried them to (added by runs).  Never
-- dumped, so a restore starts it anew: a checkpoint from a cluster not
-- listed is foreign.
CREATE TABLE autocdc.lineage (
    system_identifier bigint PRIMARY KEY
);
COMMENT ON TABLE autocdc.lineage IS 'autocdc: the clusters (system identifiers) this database''s files lived in; not dumped';
INSERT INTO autocdc.lineage (system_identifier)
    SELECT s.system_identifier FROM pg_catalog.pg_control_system() s;
REVOKE ALL ON autocdc.lineage FROM PUBLIC;
GRANT SELECT ON autocdc.lineage TO PUBLIC;

-- issue 13: dump and restore
-- No foreign keys between the catalog tables: pg_restore -j loads their
-- data at once from several connections, in any order, and a flow row
-- refused for its pipeline's missing row would lose every flow.  autocdc's
-- C code, their only writer, keeps them consistent.  A DROP that can take
-- SCD 2 targets with it first gives back to their autocdc.as_of functions
-- the dependency on the target that pg_dump and pg_upgrade do not keep.
CREATE FUNCTION autocdc._on_drop_start()
RETURNS event_trigger
AS 'MODULE_PATHNAME', 'autocdc_on_drop_start'
LANGUAGE C;

CREATE EVENT TRIGGER autocdc_drop_start ON ddl_command_start
    WHEN TAG IN ('DROP TABLE', 'DROP SCHEMA', 'DROP OWNED', 'DROP ACCESS METHOD')
    EXECUTE FUNCTION autocdc._on_drop_start();

-- issue 13: run lifecycle
-- One row per run of a pipeline, as pg_cron's job_run_details: a scheduled
-- run's row is committed as 'running' when it starts, and completed when it
-- ends or, if it was interrupted, by whoever notices (README, Run history).
CREATE TABLE autocdc.run_history (
    run_id      bigint NOT NULL,          -- event_log.run_id of its flows' rows
    pipeline    text NOT NULL,
    trigger     text NOT NULL CHECK (trigger IN ('scheduled', 'manual')),
    pid         int,                      -- the backend or run worker; NULL if unknown
    status      text NOT NULL CHECK (status IN ('running', 'success', 'failed', 'interrupted', 'busy')),
    started_at  timestamptz NOT NULL,
    ended_at    timestamptz,
    rows_read   bigint NOT NULL DEFAULT 0,
    error       text,
    run_by      regrole NOT NULL,
    pipeline_owner regrole NOT NULL,      -- who may read the row
    PRIMARY KEY (run_id, pipeline)
);
CREATE INDEX ON autocdc.run_history (started_at);   -- pruning (autocdc.event_log_retention)
CREATE INDEX ON autocdc.run_history (pipeline) WHERE status OPERATOR(pg_catalog.=) 'running';
COMMENT ON TABLE autocdc.run_history IS 'autocdc: one row per run of a pipeline, scheduled or manual, with its status';
SELECT pg_catalog.pg_extension_config_dump('autocdc.run_history', '');
REVOKE ALL ON autocdc.run_history FROM PUBLIC;
GRANT SELECT ON autocdc.run_history TO PUBLIC;
ALTER TABLE autocdc.run_history ENABLE ROW LEVEL SECURITY;
CREATE POLICY own_runs ON autocdc.run_history FOR SELECT
    USING (pg_catalog.pg_has_role(pipeline_owner::pg_catalog.oid, 'USAGE'));

-- issue 18: run results and refresh
-- run() as a procedure for cron and CI: commits what succeeded, then
-- raises an error naming the flows that failed.  No SET clause (a
-- procedure with one cannot commit): the C code qualifies every name.
CREATE PROCEDURE autocdc.refresh(pipeline text DEFAULT NULL,
                                 full_refresh boolean DEFAULT false,
                                 flows text[] DEFAULT NULL)
AS 'MODULE_PATHNAME', 'autocdc_refresh'
LANGUAGE C;
COMMENT ON PROCEDURE autocdc.refresh(text, boolean, text[])
    IS 'run the flows as autocdc.run() does, commit what succeeded, then raise an error if a flow failed';
-- Rows a flow's expectations dropped.
ALTER TABLE autocdc.event_log ADD COLUMN rows_dropped bigint NOT NULL DEFAULT 0;

-- issue 18: loading sources
-- A column added to a table source comes after __autocdc_xid: INSERT ...
-- VALUES and COPY without a column list would put its value there.  ALTER
-- TABLE warns, with the column list to use (src/source_columns.c).
CREATE FUNCTION autocdc._on_alter_table_end()
RETURNS event_trigger
AS 'MODULE_PATHNAME', 'autocdc_on_alter_table_end'
LANGUAGE C;

CREATE EVENT TRIGGER autocdc_alter_table_end ON ddl_command_end
    WHEN TAG IN ('ALTER TABLE')
    EXECUTE FUNCTION autocdc._on_alter_table_end();

-- issue 18: progress
-- What each flow running in this database does now, from shared memory
-- (autocdc preloaded; without it, no row: pg_stat_activity shows the run).
-- Another role's run shows its pid and start only (README, autocdc.progress).
CREATE FUNCTION autocdc._progress(OUT pid int, OUT pipeline text, OUT flow text,
                                  OUT phase text, OUT events_read bigint,
                                  OUT rows_written bigint, OUT started_at timestamptz)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'autocdc_progress'
LANGUAGE C VOLATILE;
CREATE VIEW autocdc.progress AS SELECT * FROM autocdc._progress();
GRANT SELECT ON autocdc.progress TO PUBLIC;
COMMENT ON VIEW autocdc.progress IS 'autocdc: each flow running now, with its phase and counters';

-- issue 17: flows over a source query
-- The source, snapshot and version queries as kept: deparsed with every
-- name qualified, the table marked STREAM written as __autocdc_stream
-- (src/source_query.c).  NULL for a flow over a table.
ALTER TABLE autocdc.flow ADD COLUMN source_query text,
                         ADD COLUMN version_query text;
COMMENT ON COLUMN autocdc.flow.source_query IS
  'source_query or snapshot_query as kept (names qualified; the STREAM table as __autocdc_stream), or NULL';
COMMENT ON COLUMN autocdc.flow.version_query IS
  'version_query of a snapshot flow as kept, or NULL';

-- issue 17: the reference system's SQL
-- A script of CREATE STREAMING TABLE, CREATE FLOW, APPLY CHANGES INTO,
-- DROP FLOW and REFRESH STREAMING TABLE statements, run as the caller in
-- the caller's transaction through the functions above (README, The
-- reference system's SQL).
CREATE FUNCTION autocdc.execute(script text, pipeline text DEFAULT 'default')
RETURNS SETOF text
AS 'MODULE_PATHNAME', 'autocdc_execute'
LANGUAGE C VOLATILE;
COMMENT ON FUNCTION autocdc.execute(text, text)
    IS 'run a script in the reference system''s SQL (CREATE STREAMING TABLE, CREATE FLOW, ...), one command tag per statement';
CREATE FUNCTION autocdc.flow_ddl(name text)
RETURNS text
AS 'MODULE_PATHNAME', 'autocdc_flow_ddl'
LANGUAGE C STABLE STRICT;
COMMENT ON FUNCTION autocdc.flow_ddl(text)
    IS 'the CREATE FLOW statement (or function call) that makes a flow again';

-- issue 16: expectations and quarantine
-- What a run does with a NULL key, a NULL sequence or two different events
-- at one key and sequence: fail the flow's run, or put them in the quarantine.
ALTER TABLE autocdc.flow ADD COLUMN on_bad_event text NOT NULL DEFAULT 'fail'
    CHECK (on_bad_event IN ('fail', 'quarantine'));
-- A flow's expectations: a boolean condition over the source row, kept in
-- resolved form like sequence_by, with what it resolved to ('expectation
-- "name": class identity ...', checked at each run), and the counts of its
-- last run and its running totals (the event log is pruned).
CREATE TABLE autocdc.expectation (
    flow          text NOT NULL,       -- autocdc.flow; goes with it
    name          text NOT NULL,
    condition     text NOT NULL,
    action        text NOT NULL CHECK (action IN ('warn', 'drop', 'fail')),
    expression_objects text[] NOT NULL,
    added_at      timestamptz NOT NULL DEFAULT pg_catalog.now(),
    last_run_at   timestamptz,
    last_passed   bigint,
    last_failed   bigint,
    passed_total  bigint NOT NULL DEFAULT 0,
    failed_total  bigint NOT NULL DEFAULT 0,
    PRIMARY KEY (flow, name)
);
COMMENT ON TABLE autocdc.expectation IS 'autocdc: the expectations of each flow, with their last run''s and total counts';
-- Source rows a run set aside: dropped by an expectation, or bad input of a
-- flow with on_bad_event => 'quarantine'.  A row is kept once per flow
-- (row_hash), so a source read whole at every run does not add it again.
CREATE TABLE autocdc.quarantine (
    id             bigserial PRIMARY KEY,
    run_id         bigint NOT NULL,
    pipeline       text NOT NULL,
    flow           text NOT NULL,
    quarantined_at timestamptz NOT NULL DEFAULT pg_catalog.clock_timestamp(),
    reason         text NOT NULL CHECK (reason IN ('expectation', 'null_key', 'null_sequence',
                                                   'conflict', 'conflict_applied')),
    expectations   text[],             -- the expectations the row failed
    "row"          jsonb NOT NULL,     -- the source row
    key            jsonb,
    sequence       text,
    conflicts_with jsonb,              -- conflict_applied: the applied event
    row_hash       text NOT NULL,
    flow_owner     regrole NOT NULL,
    pipeline_owner regrole NOT NULL
);
CREATE UNIQUE INDEX ON autocdc.quarantine (flow, row_hash);
CREATE INDEX ON autocdc.quarantine (quarantined_at);   -- autocdc.quarantine_retention
COMMENT ON TABLE autocdc.quarantine IS 'autocdc: source rows set aside by expectations or as bad input, to fix and replay';
SELECT pg_catalog.pg_extension_config_dump('autocdc.expectation', '');
SELECT pg_catalog.pg_extension_config_dump('autocdc.quarantine', '');
SELECT pg_catalog.pg_extension_config_dump('autocdc.quarantine_id_seq', '');
REVOKE ALL ON autocdc.expectation, autocdc.quarantine FROM PUBLIC;
GRANT SELECT ON autocdc.expectation, autocdc.quarantine TO PUBLIC;
ALTER TABLE autocdc.expectation ENABLE ROW LEVEL SECURITY;
ALTER TABLE autocdc.quarantine ENABLE ROW LEVEL SECURITY;
CREATE POLICY own_expectations ON autocdc.expectation FOR SELECT
    USING (EXISTS (SELECT 1 FROM autocdc.flow f WHERE f.name OPERATOR(pg_catalog.=) flow));
-- A quarantined row is a row of the flow's source: only the flow's owner
-- sees it (not every member of the owner of a pipeline the flow is in).
CREATE POLICY own_quarantine ON autocdc.quarantine FOR SELECT
    USING (pg_catalog.pg_has_role(flow_owner::pg_catalog.oid, 'USAGE'));
-- A role deletes its own quarantined rows once it has replayed them.
GRANT DELETE ON autocdc.quarantine TO PUBLIC;
CREATE POLICY own_quarantine_replayed ON autocdc.quarantine FOR DELETE
    USING (pg_catalog.pg_has_role(flow_owner::pg_catalog.oid, 'USAGE'));
-- Each run's data-quality counts.
ALTER TABLE autocdc.event_log ADD COLUMN rows_quarantined bigint NOT NULL DEFAULT 0;
ALTER TABLE autocdc.event_log ADD COLUMN expectations jsonb;
CREATE VIEW autocdc.expectations WITH (security_invoker = true) AS
SELECT e.flow,
       e.name,
       e.action,
       e.condition,
       e.added_at,
       e.last_run_at,
       e.last_passed,
       e.last_failed,
       e.passed_total,
       e.failed_total
  FROM autocdc.expectation e;
GRANT SELECT ON autocdc.expectations TO PUBLIC;
COMMENT ON VIEW autocdc.expectations IS 'autocdc: each flow''s expectations with the counts of its last run and running totals';

CREATE FUNCTION autocdc.add_expectation(flow text, name text, condition text,
                                        on_violation text DEFAULT 'warn')
RETURNS void
AS 'MODULE_PATHNAME', 'autocdc_add_expectation'
LANGUAGE C VOLATILE;
COMMENT ON FUNCTION autocdc.add_expectation(text, text, text, text)
    IS 'add an expectation (warn, drop or fail) to a flow; it applies to rows read from then on';
CREATE FUNCTION autocdc.drop_expectation(flow text, name text)
RETURNS void
AS 'MODULE_PATHNAME', 'autocdc_drop_expectation'
LANGUAGE C VOLATILE STRICT;
COMMENT ON FUNCTION autocdc.drop_expectation(text, text)
    IS 'drop an expectation of a flow';

-- issue 15: columns to update
-- A flow's columns_to_update: the text[] column of its source listing, per
-- event, the columns the event sets (NULL: none; every column is set).
ALTER TABLE autocdc.flow ADD COLUMN columns_to_update text;
-- an event listing a name the flow does not know is bad input
ALTER TABLE autocdc.quarantine DROP CONSTRAINT quarantine_reason_check;
ALTER TABLE autocdc.quarantine ADD CONSTRAINT quarantine_reason_check
    CHECK (reason IN ('expectation', 'null_key', 'null_sequence', 'conflict',
                      'conflict_applied', 'unknown_column'));

-- issue 15: bitemporal targets
-- the normalized system_sequence_by of a bitemporal flow (its sequence_by
-- holds the ROW(business, system) the fold orders by)
ALTER TABLE autocdc.flow ADD COLUMN system_sequence_by text;
UPDATE autocdc.flow SET options = options OPERATOR(pg_catalog.||) '{"system_sequence_by": null}'::pg_catalog.jsonb
  WHERE kind OPERATOR(pg_catalog.=) 'auto_cdc';
CREATE OR REPLACE VIEW autocdc.flows WITH (security_invoker = true) AS
SELECT f.name,
       f.pipeline,
       f.kind,
       f.source,
       f.source_function,
       f.target,
       f.keys,
       f.sequence_by,
       CASE WHEN f.stored_as_scd_type OPERATOR(pg_catalog.<>) 3 THEN f.stored_as_scd_type END AS scd_type,
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
       f.expression_objects,
       c.last_rows_read,
       c.runs,
       c.rows_read_total,
       c.rows_upserted_total,
       c.rows_deleted_total,
       c.rows_skipped_total,
       c.failures_total,
       f.settings,
       t.tombstone_retention,
       CASE f.stored_as_scd_type WHEN 1 THEN 'scd1' WHEN 2 THEN 'scd2' WHEN 3 THEN 'bitemporal' END AS stored_as,
       f.system_sequence_by
  FROM autocdc.flow f
  LEFT JOIN autocdc.checkpoint c ON c.flow OPERATOR(pg_catalog.=) f.name
  LEFT JOIN autocdc.target t ON t.target OPERATOR(pg_catalog.=) f.target;
COMMENT ON VIEW autocdc.flows IS 'autocdc: every flow with its kind, source, target, options, checkpoint, last run and running totals';

-- SCD 1: where the sequence of a key's applied upsert lives.  A target
-- made by 0.2.0 keeps it in its own column __autocdc_sequence, and its
-- state keeps rows only for tombstones and partial-update columns; a target
-- from 0.1.0 keeps it in the state, a row per key.  held_rows: such a new
-- SCD 1 target, or an SCD 2 target, held rows after autocdc last wrote it
-- (a target found empty then was emptied by hand).  tombstones_purged_at:
-- when a run last looked for SCD 1 tombstones past the retention (a scan
-- of the state, at most once per tenth of the retention).
ALTER TABLE autocdc.target
  ADD COLUMN sequence_in_target boolean NOT NULL DEFAULT false,
  ADD COLUMN held_rows boolean NOT NULL DEFAULT false,
  ADD COLUMN tombstones_purged_at timestamptz;
