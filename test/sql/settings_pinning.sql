-- A run evaluates a flow's expressions under the settings in effect where
-- the flow was created (autocdc.flow.settings), whoever runs it and
-- whatever their session's settings are.
-- Creates the extension when this file runs alone (make installcheck REGRESS=...).
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS autocdc;
RESET client_min_messages;
SET client_min_messages = warning;

-- TimeZone: a text without an offset cast to timestamptz.  Under UTC the
-- row without an offset (10:00) comes before the one at 12:00+00; under
-- America/New_York it is 15:00 UTC and comes after.
CREATE TABLE sp_src (id int, ts_text text, d_text text, v text);
INSERT INTO sp_src VALUES (1, '2024-01-01 10:00', '01/02/2024', 'no offset'),
                          (1, '2024-01-01 12:00+00', '03/01/2024', 'utc noon');
SET TimeZone = 'UTC';
SELECT autocdc.create_auto_cdc_flow(target => 'sp_utc', source => 'sp_src', keys => ARRAY['id'],
  sequence_by => '(ts_text::timestamptz)', column_list => ARRAY['v'], pipeline => 'sp');
SET TimeZone = 'America/New_York';
SELECT autocdc.create_auto_cdc_flow(target => 'sp_ny', source => 'sp_src', keys => ARRAY['id'],
  sequence_by => '(ts_text::timestamptz)', column_list => ARRAY['v'], pipeline => 'sp');

-- DateStyle: '01/02/2024' is 1 February under DMY, 2 January under MDY.
SET DateStyle = 'ISO, DMY';
SELECT autocdc.create_auto_cdc_flow(target => 'sp_dmy', source => 'sp_src', keys => ARRAY['id'],
  sequence_by => '(d_text::date)', column_list => ARRAY['v'], stored_as_scd_type => 2,
  pipeline => 'sp');
RESET TimeZone;

SELECT name, settings[1:3] FROM autocdc.flows WHERE pipeline = 'sp' ORDER BY name;
SELECT pg_catalog.array_length(settings, 1) AS pinned FROM autocdc.flows WHERE name = 'sp_utc';

-- Run from a session whose settings differ from every flow's.
SET TimeZone = 'Asia/Tokyo';
SET DateStyle = 'SQL, MDY';
SELECT flow, status FROM autocdc.run('sp') ORDER BY flow;
SELECT id, v FROM sp_utc;       -- UTC: 12:00+00 is the later event
SELECT id, v FROM sp_ny;        -- New York: 10:00 is 15:00 UTC, the later one
SET DateStyle = 'ISO, YMD';
SELECT id, v, __start_at, __end_at FROM sp_dmy ORDER BY __start_at;

-- Another session's settings change nothing either: more events, run under
-- the opposite time zones.
INSERT INTO sp_src VALUES (2, '2024-01-01 10:00', '05/06/2024', 'no offset'),
                          (2, '2024-01-01 12:00+00', '07/06/2024', 'utc noon');
SET TimeZone = 'America/New_York';
SET DateStyle = 'ISO, MDY';
SELECT flow, status FROM autocdc.run('sp') ORDER BY flow;
SELECT id, v FROM sp_utc ORDER BY id;
SELECT id, v FROM sp_ny ORDER BY id;
SELECT id, v, __start_at, __end_at FROM sp_dmy ORDER BY id, __start_at;
RESET TimeZone;
RESET DateStyle;

-- A value autocdc keeps as text (a truncate mark, a snapshot version) is
-- kept in ISO style, whatever the flow's DateStyle, and reads back alike.
SET DateStyle = 'SQL, DMY';
CREATE TABLE sp_tsrc (id int, d date, v text, op text);
SELECT autocdc.create_auto_cdc_flow(target => 'sp_trunc', source => 'sp_tsrc', keys => ARRAY['id'],
  sequence_by => 'd', apply_as_truncates => $$op = 'TRUNCATE'$$, column_list => ARRAY['v'],
  pipeline => 'sp_t');
RESET DateStyle;
INSERT INTO sp_tsrc VALUES (1, '2024-02-01', 'a', NULL), (2, '2024-02-05', 'b', NULL),
                           (NULL, '2024-02-03', NULL, 'TRUNCATE');
SELECT rows_upserted, rows_deleted, status FROM autocdc.run('sp_t');
SELECT truncate_seq FROM autocdc.target WHERE target = 'sp_trunc'::regclass;
SET DateStyle = 'German, MDY';
INSERT INTO sp_tsrc VALUES (1, '2024-02-02', 'late', NULL), (3, '2024-02-04', 'c', NULL);
SELECT rows_upserted, rows_skipped, status FROM autocdc.run('sp_t');
RESET DateStyle;
SELECT * FROM sp_trunc ORDER BY id;

-- A pinned value this server rejects (a flow restored where a locale is
-- missing) fails the flow's run with PostgreSQL's error.
UPDATE autocdc.flow SET settings = settings || 'lc_monetary=xx_NOWHERE'::text WHERE name = 'sp_trunc';
SELECT flow, status FROM autocdc.run('sp_t');
SELECT last_error FROM autocdc.flows WHERE name = 'sp_trunc';

SELECT autocdc.drop_flow(name) FROM autocdc.flows WHERE pipeline IN ('sp', 'sp_t') ORDER BY name;
DROP TABLE sp_utc, sp_ny, sp_dmy, sp_trunc, sp_src, sp_tsrc;
RESET client_min_messages;
