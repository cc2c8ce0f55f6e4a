-- Composite keys and sequences whose stored values are toasted out of
-- line (incompressible, past the toast threshold, under the btree limit):
-- the fast record compare (record_cmp.c) and the bitemporal fold read an
-- external value's fields through a detoasted copy, not as a short one.
CREATE SCHEMA ts;
SET search_path = ts, public;
-- about 2.3 kB of md5 hex: does not compress, so it is stored externally
CREATE FUNCTION blob(seed text) RETURNS text LANGUAGE sql IMMUTABLE AS
$$SELECT left(string_agg(md5(seed || '-' || j), '' ORDER BY j), 2300) FROM generate_series(1, 80) j$$;
CREATE TYPE ck AS (a int, b text);
CREATE TABLE ck_src (k ck, v int, ts int);
SELECT autocdc.create_auto_cdc_flow(target => 'ck1', source => 'ck_src', keys => ARRAY['k'],
  sequence_by => 'ts', except_column_list => ARRAY['ts'], pipeline => 'ts_ck');
INSERT INTO ck_src SELECT ROW(i % 3, blob((i % 3)::text))::ck, i, i FROM generate_series(1, 7) i;
SELECT count(*) FILTER (WHERE pg_column_size(k) < 2300) AS inline FROM ck_src;
SELECT flow, rows_read, rows_upserted, status FROM autocdc.run('ts_ck');
SELECT (k).a, md5((k).b) = md5(blob((k).a::text)) AS same_b, v FROM ck1 ORDER BY 1;

-- a bitemporal flow whose business sequence is such a text: its second
-- run reads the first run's events back from the event store
CREATE TABLE bs_src (id int, v int, b text, s int);
SELECT autocdc.create_auto_cdc_flow(target => 'bs1', source => 'bs_src', keys => ARRAY['id'],
  sequence_by => 'b', system_sequence_by => 's', except_column_list => ARRAY['b', 's'],
  stored_as_scd_type => 'bitemporal', pipeline => 'ts_bs');
INSERT INTO bs_src SELECT 1, i, i || blob(i::text), i FROM generate_series(1, 3) i;
SELECT flow, rows_read, rows_upserted, status FROM autocdc.run('ts_bs');
INSERT INTO bs_src SELECT 1, i, i || blob(i::text), i FROM generate_series(4, 5) i;
-- a correction of business sequence 2 at system point 6
INSERT INTO bs_src VALUES (1, 20, 2 || blob('2'), 6);
SELECT flow, rows_read, rows_upserted, status FROM autocdc.run('ts_bs');
SELECT v, left(__start_at, 1) AS b_start, left(__end_at, 1) AS b_end, __system_start_at, __system_end_at
FROM bs1 ORDER BY __start_at, __system_start_at;
RESET search_path;
DROP SCHEMA ts CASCADE;
