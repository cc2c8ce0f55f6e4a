/* autocdc--0.1.0--0.2.0.sql: from 0.1.0 to 0.2.0 (unreleased: edited until 0.2.0 ships) */

\echo Use "ALTER EXTENSION autocdc UPDATE TO '0.2.0'" to load this file. \quit

-- A flow created without pipeline => joins "default" only when it is the
-- caller's own (NULL now means that; 'default' named it explicitly).
-- The flow-creating functions get new arguments, last (issue 13:
-- tombstone_retention, start_from; 17: source_query, snapshot_query,
-- version_query; 16: expect, expect_or_drop, expect_or_fail,
-- on_bad_event; 15: system_sequence_by, columns_to_update), and
-- create_auto_cdc_flow a text overload (15): each is dropped and created
-- once, here, as 0.2.0 has it.
DROP FUNCTION autocdc.create_auto_cdc_flow(text, regclass, text[], text, text, int, text, text, text[], text[], text[], text[], boolean, text[], text[], boolean, text);
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

DROP FUNCTION autocdc.create_auto_cdc_from_snapshot_flow(text, text[], regclass, regprocedure, text, int, text[], text[], boolean, text);
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

CREATE OR REPLACE FUNCTION autocdc.create_append_flow(
    target   text,
    source   regclass,
    name     text    DEFAULT NULL,
    once     boolean DEFAULT false,
    pipeline text    DEFAULT NULL)
RETURNS void
AS 'MODULE_PATHNAME', 'autocdc_create_append_flow'
LANGUAGE C VOLATILE;

-- Runs now act as each target's owner, who owns the target's auxiliary
-- objects too (0.1.0 gave them to the flow's creator).
DO $$
DECLARE
    t record;
BEGIN
    FOR t IN
        SELECT tg.state_table, tg.sequence_composite, c.relowner::pg_catalog.regrole AS owner,
               c.reltype::pg_catalog.regtype AS rowtype
          FROM autocdc.target tg
          JOIN pg_catalog.pg_class c ON c.oid OPERATOR(pg_catalog.=) tg.target
         WHERE tg.state_table IS NOT NULL
    LOOP
        EXECUTE pg_catalog.format('ALTER TABLE %s OWNER TO %s', t.state_table, t.owner);
        IF t.sequence_composite IS NOT NULL THEN
            EXECUTE pg_catalog.format('ALTER TYPE %s OWNER TO %s', t.sequence_composite, t.owner);
        END IF;
        EXECUTE (SELECT COALESCE(pg_catalog.string_agg(pg_catalog.format('ALTER FUNCTION %s OWNER TO %s; ',
                                                                p.oid::pg_catalog.regprocedure, t.owner), ''), 'SELECT 1')
                   FROM pg_catalog.pg_proc p
                  WHERE p.pronamespace OPERATOR(pg_catalog.=) 'autocdc'::pg_catalog.regnamespace
                    AND p.proname OPERATOR(pg_catalog.=) 'as_of'
                    AND p.proargtypes[0] OPERATOR(pg_catalog.=) t.rowtype::pg_catalog.oid);
    END LOOP;
END
$$;
-- Expression pinning: what a flow's expressions resolved to at creation,
-- checked by each run.  Flows from 0.1.0 get it at their first run.
ALTER TABLE autocdc.flow ADD COLUMN expression_objects text[];
COMMENT ON COLUMN autocdc.flow.expression_objects IS
  'what sequence_by, apply_as_* and source_function resolved to at creation; checked at each run';
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
COMMENT ON VIEW autocdc.flows IS 'autocdc: every flow with its kind, source, target, options, checkpoint, last run and running totals';

-- Event log rows are read by the owners of their flow and pipeline at the
-- time, not by whoever holds those names now.
ALTER TABLE autocdc.event_log ADD COLUMN flow_owner regrole, ADD COLUMN pipeline_owner regrole;
UPDATE autocdc.event_log e
   SET flow_owner = COALESCE((SELECT f.owner FROM autocdc.flow f
                               WHERE f.name OPERATOR(pg_catalog.=) e.flow
                                 AND f.created_at OPERATOR(pg_catalog.<=) e.logged_at), e.run_by),
       pipeline_owner = COALESCE((SELECT p.owner FROM autocdc.pipeline p
                                   WHERE p.name OPERATOR(pg_catalog.=) e.pipeline
                                     AND p.created_at OPERATOR(pg_catalog.<=) e.logged_at), e.run_by);
ALTER TABLE autocdc.event_log ALTER COLUMN flow_owner SET NOT NULL,
                              ALTER COLUMN pipeline_owner SET NOT NULL;
ALTER POLICY own_events ON autocdc.event_log
    USING (pg_catalog.pg_has_role(flow_owner::pg_catalog.oid, 'USAGE')
           OR pg_catalog.pg_has_role(pipeline_owner::pg_catalog.oid, 'USAGE'));

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

-- issue 13: pinned settings and retention
-- Flows from 0.1.0 pin the settings of the session that updates the
-- extension (see README, Upgrading).
ALTER TABLE autocdc.flow ADD COLUMN settings text[];
UPDATE autocdc.flow
   SET settings = ARRAY(SELECT s OPERATOR(pg_catalog.||) '=' OPERATOR(pg_catalog.||) pg_catalog.current_setting(s)
                          FROM pg_catalog.unnest(ARRAY['TimeZone', 'DateStyle', 'IntervalStyle',
                                 'extra_float_digits', 'timezone_abbreviations', 'bytea_output',
                                 'standard_conforming_strings', 'xmloption', 'xmlbinary',
                                 'lc_monetary', 'lc_numeric', 'lc_time',
                                 'default_text_search_config']) WITH ORDINALITY u(s, i)
                         ORDER BY i);
ALTER TABLE autocdc.flow ALTER COLUMN settings SET NOT NULL;
COMMENT ON COLUMN autocdc.flow.settings IS
  'the settings that change expression results, as at the flow''s creation; applied by each run';
ALTER TABLE autocdc.target ADD COLUMN tombstone_retention interval;
-- the new argument, as the flows' options record every argument
UPDATE autocdc.flow SET options = options OPERATOR(pg_catalog.||) '{"tombstone_retention": null}'::pg_catalog.jsonb
 WHERE kind OPERATOR(pg_catalog.=) ANY (ARRAY['auto_cdc', 'snapshot']);
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

-- Every SCD 2 event store records when each event was stored (the
-- retention of its deletes counts from the update for events stored before).
DO $$
DECLARE
    t record;
BEGIN
    FOR t IN
        SELECT tg.state_table FROM autocdc.target tg
         WHERE tg.scd_type OPERATOR(pg_catalog.=) 2 AND tg.state_table IS NOT NULL
           AND pg_catalog.to_regclass(tg.state_table::pg_catalog.text) IS NOT NULL
    LOOP
        EXECUTE pg_catalog.format('ALTER TABLE %s ADD COLUMN __autocdc_stored_at pg_catalog.timestamptz '
                                  'DEFAULT pg_catalog.now(); '
                                  'CREATE INDEX ON %s (__autocdc_stored_at) '
                                  'WHERE __autocdc_kind OPERATOR(pg_catalog.=) ''d''',
                                  t.state_table, t.state_table);
    END LOOP;
END
$$;

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
-- start_from (NULL/'beginning' or 'now') ends each flow-creating function's
-- arguments (create_auto_cdc_flow and create_auto_cdc_from_snapshot_flow
-- above); create_append_flow gets a new signature for it.
DROP FUNCTION autocdc.create_append_flow(text, regclass, text, boolean, text);
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

-- the new argument, as the flows' options record every argument
UPDATE autocdc.flow SET options = options OPERATOR(pg_catalog.||) '{"start_from": null}'::pg_catalog.jsonb;

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

-- issue 13: rows a 0.1.0 source held when it became one have no stamp (its
-- first run read them whole); 0.2.0 reads rows without a stamp, so they get
-- the stamp such rows get now ('1', older than every snapshot), each
-- source's rows as its owner.  A temporary function, gone with the update.
CREATE FUNCTION autocdc._stamp_rows_before(source regclass) RETURNS bigint
AS 'MODULE_PATHNAME', 'autocdc_stamp_rows_before'
LANGUAGE C STRICT;
SELECT autocdc._stamp_rows_before(s.source)
  FROM (SELECT DISTINCT f.source FROM autocdc.flow f
         WHERE f.source IS NOT NULL
           AND f.read_mode OPERATOR(pg_catalog.=) 'incremental') s;
DROP FUNCTION autocdc._stamp_rows_before(regclass);

-- issue 19: the stamp is given by the column's default, no longer by a
-- BEFORE INSERT trigger (which made COPY insert row by row); a trigger
-- AFTER INSERT refuses a stamp given explicitly, and a BRIN index takes
-- the place of the B-tree.  Each source is converted as its owner.
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

CREATE FUNCTION autocdc._convert_source(source regclass) RETURNS void
AS 'MODULE_PATHNAME', 'autocdc_convert_source'
LANGUAGE C STRICT;
SELECT autocdc._convert_source(t.tgrelid)
  FROM pg_catalog.pg_trigger t
 WHERE t.tgfoid OPERATOR(pg_catalog.=) 'autocdc._stamp_xid()'::pg_catalog.regprocedure
   AND t.tgparentid OPERATOR(pg_catalog.=) 0;
DROP FUNCTION autocdc._convert_source(regclass);
DROP FUNCTION autocdc._stamp_xid();

-- issue 13: dump and restore
-- No foreign keys between the catalog tables (pg_restore -j loads their
-- data at once, in any order); autocdc's C code keeps them consistent.
ALTER TABLE autocdc.flow DROP CONSTRAINT flow_pipeline_fkey,
                         DROP CONSTRAINT flow_target_fkey;
ALTER TABLE autocdc.checkpoint DROP CONSTRAINT checkpoint_flow_fkey;
-- A ROW() composite type no longer depends on its target, whose columns use
-- it (a loop pg_dump cannot order); it goes when its target is dropped.
DELETE FROM pg_catalog.pg_depend d USING autocdc.target t
 WHERE d.classid OPERATOR(pg_catalog.=) 'pg_catalog.pg_type'::pg_catalog.regclass
   AND d.objid OPERATOR(pg_catalog.=) t.sequence_composite::pg_catalog.oid
   AND d.refclassid OPERATOR(pg_catalog.=) 'pg_catalog.pg_class'::pg_catalog.regclass
   AND d.refobjid OPERATOR(pg_catalog.=) t.target::pg_catalog.oid
   AND d.deptype OPERATOR(pg_catalog.=) 'a';

CREATE FUNCTION autocdc._on_drop_start()
RETURNS event_trigger
AS 'MODULE_PATHNAME', 'autocdc_on_drop_start'
LANGUAGE C;

CREATE EVENT TRIGGER autocdc_drop_start ON ddl_command_start
    WHEN TAG IN ('DROP TABLE', 'DROP SCHEMA', 'DROP OWNED', 'DROP ACCESS METHOD')
    EXECUTE FUNCTION autocdc._on_drop_start();

-- issue 13: run lifecycle
-- An interrupted run (cancelled, timed out, terminated, cut short by a
-- crash) is recorded as 'interrupted'.
ALTER TABLE autocdc.pipeline DROP CONSTRAINT pipeline_last_status_check,
    ADD CONSTRAINT pipeline_last_status_check
        CHECK (last_status IN ('running', 'success', 'failed', 'busy', 'interrupted'));
ALTER TABLE autocdc.checkpoint DROP CONSTRAINT checkpoint_last_status_check,
    ADD CONSTRAINT checkpoint_last_status_check
        CHECK (last_status IN ('success', 'failed', 'skipped', 'interrupted'));
ALTER TABLE autocdc.event_log DROP CONSTRAINT event_log_status_check,
    ADD CONSTRAINT event_log_status_check
        CHECK (status IN ('success', 'failed', 'skipped', 'interrupted'));
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
-- run() returns rows_dropped and error too: a new result type.
DROP FUNCTION autocdc.run(text, boolean, text[]);
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
-- Rows a flow's expectations rejected (none has any yet: always 0).
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
-- (the functions' source_query, snapshot_query and version_query are at
-- the top; a flow over a query needs no source, so source and the
-- arguments after it take DEFAULT NULL)
ALTER TABLE autocdc.flow ADD COLUMN source_query text,
                         ADD COLUMN version_query text;
COMMENT ON COLUMN autocdc.flow.source_query IS
  'source_query or snapshot_query as kept (names qualified; the STREAM table as __autocdc_stream), or NULL';
COMMENT ON COLUMN autocdc.flow.version_query IS
  'version_query of a snapshot flow as kept, or NULL';
-- the new arguments, as the flows' options record every argument
UPDATE autocdc.flow SET options = options OPERATOR(pg_catalog.||) '{"source_query": null}'::pg_catalog.jsonb
 WHERE kind OPERATOR(pg_catalog.<>) 'snapshot';
UPDATE autocdc.flow SET options = options OPERATOR(pg_catalog.||) '{"snapshot_query": null, "version_query": null}'::pg_catalog.jsonb
 WHERE kind OPERATOR(pg_catalog.=) 'snapshot';

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
-- (expect, expect_or_drop, expect_or_fail and on_bad_event: at the top)
-- the new arguments, as the flows' options record every argument
UPDATE autocdc.flow SET options = options OPERATOR(pg_catalog.||)
    '{"expect": null, "expect_or_drop": null, "expect_or_fail": null, "on_bad_event": "fail"}'::pg_catalog.jsonb
  WHERE kind OPERATOR(pg_catalog.=) 'auto_cdc';
UPDATE autocdc.flow SET options = options OPERATOR(pg_catalog.||)
    '{"expect": null, "expect_or_drop": null, "expect_or_fail": null}'::pg_catalog.jsonb
  WHERE kind OPERATOR(pg_catalog.=) 'append';
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
-- the new argument, as the flows' options record every argument
UPDATE autocdc.flow SET options = options OPERATOR(pg_catalog.||) '{"columns_to_update": null}'::pg_catalog.jsonb
  WHERE kind OPERATOR(pg_catalog.=) 'auto_cdc';
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
