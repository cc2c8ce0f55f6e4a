-- Sources and targets changed between runs: a clear error, or the
-- documented behaviour, and never a half-applied run.
-- Creates the extension when this file runs alone (make installcheck REGRESS=...).
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS autocdc;
RESET client_min_messages;
CREATE SCHEMA chg;
SET search_path = chg, public;
CREATE TABLE src (id int, a text, b int, op text, seq int);
SELECT autocdc.create_auto_cdc_flow(target => 'tgt', source => 'src', keys => ARRAY['id'],
  sequence_by => 'seq', apply_as_deletes => $$op = 'D'$$, except_column_list => ARRAY['op', 'seq'],
  name => 'chg_flow', pipeline => 'chg');
INSERT INTO src VALUES (1, 'x', 1, 'U', 1);
SELECT rows_upserted, status FROM autocdc.run('chg');

-- A column added to the source: the flow keeps writing its own columns.
ALTER TABLE src ADD COLUMN c text;
INSERT INTO src (id, a, b, op, seq, c) VALUES (2, 'y', 2, 'U', 1, 'new column');
SELECT rows_upserted, status FROM autocdc.run('chg');
SELECT * FROM tgt ORDER BY id;

-- A source column retyped: values are cast to the target's type if they can be.
ALTER TABLE src ALTER COLUMN b TYPE bigint;
INSERT INTO src VALUES (3, 'z', 3, 'U', 1);
SELECT rows_upserted, status FROM autocdc.run('chg');
ALTER TABLE src ALTER COLUMN b TYPE text;
INSERT INTO src VALUES (4, 'w', 'four', 'U', 1);
SELECT rows_upserted, status FROM autocdc.run('chg');
SELECT count(*) AS applied FROM tgt;
DELETE FROM src WHERE id = 4;
SELECT rows_read, status FROM autocdc.run('chg');

-- A column the flow writes dropped from the source or from the target.
ALTER TABLE src DROP COLUMN a;
INSERT INTO src (id, b, op, seq) VALUES (5, '5', 'U', 1);
SELECT rows_upserted, status FROM autocdc.run('chg');
ALTER TABLE src ADD COLUMN a text;
SELECT rows_upserted, status FROM autocdc.run('chg');
ALTER TABLE tgt DROP COLUMN a;
SELECT rows_upserted, status FROM autocdc.run('chg');
ALTER TABLE tgt ADD COLUMN a text;
SELECT rows_upserted, status FROM autocdc.run('chg');
SELECT * FROM tgt ORDER BY id;

-- The sequence column dropped: the stored expression no longer resolves.
ALTER TABLE src RENAME COLUMN seq TO seq_old;
INSERT INTO src (id, b, a, op, seq_old) VALUES (6, '6', 'six', 'U', 1);
SELECT rows_upserted, status FROM autocdc.run('chg');
ALTER TABLE src RENAME COLUMN seq_old TO seq;
SELECT rows_upserted, status FROM autocdc.run('chg');

-- Renamed tables are followed: flows refer to them, not to their names.
ALTER TABLE src RENAME TO src_renamed;
ALTER TABLE tgt RENAME TO tgt_renamed;
INSERT INTO src_renamed (id, b, a, op, seq) VALUES (7, '7', 'seven', 'U', 1);
SELECT flow, target, rows_upserted, status FROM autocdc.run('chg');
SELECT source, target FROM autocdc.flows WHERE pipeline = 'chg';

-- autocdc's own column or its state removed by hand: a clear error.  The
-- trigger depends on the column: it goes only with CASCADE.
ALTER TABLE src_renamed DROP COLUMN __autocdc_xid;
ALTER TABLE src_renamed DROP COLUMN __autocdc_xid CASCADE;
INSERT INTO src_renamed (id, b, a, op, seq) VALUES (8, '8', 'eight', 'U', 1);
SELECT rows_upserted, status FROM autocdc.run('chg');
-- Following the hint recovers.
ALTER TABLE src_renamed ADD COLUMN __autocdc_xid xid8 DEFAULT autocdc._stamp();
CREATE TRIGGER __autocdc_stamp_xid AFTER INSERT ON chg.src_renamed FOR EACH ROW WHEN (autocdc._stamp_given(NEW.__autocdc_xid)) EXECUTE FUNCTION autocdc._refuse_given_stamp(); ALTER TABLE chg.src_renamed ENABLE ALWAYS TRIGGER __autocdc_stamp_xid;
INSERT INTO src_renamed (id, b, a, op, seq) VALUES (8, '8', 'eight', 'U', 1);
SELECT rows_read, rows_upserted, status FROM autocdc.run('chg', full_refresh => true);
SELECT state_table AS state FROM autocdc.target WHERE target = 'tgt_renamed'::regclass \gset
DROP TABLE :state;
SELECT rows_upserted, status FROM autocdc.run('chg');
SELECT autocdc.drop_flow('chg_flow');
ALTER TABLE src_renamed ALTER COLUMN b TYPE int USING b::int;
SELECT autocdc.create_auto_cdc_flow(target => 'tgt_renamed', source => 'src_renamed', keys => ARRAY['id'],
  sequence_by => 'seq', apply_as_deletes => $$op = 'D'$$, except_column_list => ARRAY['op', 'seq', 'c'],
  name => 'chg_flow', pipeline => 'chg');
SELECT rows_read, status FROM autocdc.run('chg');
SELECT * FROM tgt_renamed ORDER BY id;
SELECT error FROM autocdc.event_log WHERE pipeline = 'chg' AND status = 'failed' ORDER BY id;
RESET search_path;
