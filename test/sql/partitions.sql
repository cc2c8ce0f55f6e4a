-- Partitioned targets.  The first row of every partition has the tid
-- (0,1): the writes name stored rows by (tableoid, ctid), so that a
-- change to one key's row never touches another key's row that has its
-- tid in another partition.  Every kind of target, with keys spread over
-- partitions (a default partition and sub-partitions among them), each in
-- two pipelines; then targets partitioned by a column that
-- is not a key (updates move rows), and the targets that are refused.
-- Creates the extension when this file runs alone (make installcheck REGRESS=...).
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS autocdc;
RESET client_min_messages;
CREATE SCHEMA part;
SET search_path = part, public;
\set VERBOSITY default

-- The issue's example: t (region, id, v) partitioned by region, keys (region, id).
CREATE TABLE src (region text, id int, v text, op text, seq int);
CREATE TABLE t (region text, id int, v text, PRIMARY KEY (region, id)) PARTITION BY LIST (region);
CREATE TABLE t_a PARTITION OF t FOR VALUES IN ('a');
CREATE TABLE t_b PARTITION OF t FOR VALUES IN ('b');
SELECT autocdc.create_auto_cdc_flow(target => 't', source => 'src', keys => ARRAY['region', 'id'],
  sequence_by => 'seq', apply_as_deletes => $$op = 'D'$$, except_column_list => ARRAY['op', 'seq'],
  pipeline => 'part_issue', name => 'part_t');
INSERT INTO src VALUES ('a', 1, 'a1', 'U', 1), ('b', 1, 'b1', 'U', 1);
SELECT rows_read, rows_upserted, rows_deleted, status FROM autocdc.run('part_issue');
SELECT tableoid::regclass AS part, ctid, * FROM t ORDER BY region, id;
INSERT INTO src VALUES ('a', 1, 'a1 v2', 'U', 2);
SELECT rows_read, rows_upserted, rows_deleted, status FROM autocdc.run('part_issue');
-- ('b', 1) keeps its own value
SELECT tableoid::regclass AS part, * FROM t ORDER BY region, id;
INSERT INTO src VALUES ('a', 1, NULL, 'D', 3);
SELECT rows_read, rows_upserted, rows_deleted, status FROM autocdc.run('part_issue');
SELECT tableoid::regclass AS part, * FROM t ORDER BY region, id;

-- SCD 1 and SCD 2 over one feed, each into two targets, by two pipelines
-- (pc and psql) run one after the other; the SCD 2 target h_txt has a
-- text sequence.
-- Partitions: 'a', 'b' (by hash of id: two sub-partitions), the rest in a default.
CREATE TABLE feed (region text, id int, v text, note text, op text, seq int);
CREATE FUNCTION make_target(name text, scd2 boolean, seqtype text) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
  EXECUTE format('CREATE TABLE %I (region text NOT NULL, id int NOT NULL, v text, note text%s) '
                 'PARTITION BY LIST (region)', name,
                 CASE WHEN scd2 THEN format(', __start_at %s NOT NULL, __end_at %s', seqtype, seqtype) ELSE '' END);
  EXECUTE format('CREATE TABLE %I PARTITION OF %I FOR VALUES IN (''a'')', name || '_a', name);
  EXECUTE format('CREATE TABLE %I PARTITION OF %I FOR VALUES IN (''b'') PARTITION BY HASH (id)', name || '_b', name);
  EXECUTE format('CREATE TABLE %I PARTITION OF %I FOR VALUES WITH (MODULUS 2, REMAINDER 0)', name || '_b0', name || '_b');
  EXECUTE format('CREATE TABLE %I PARTITION OF %I FOR VALUES WITH (MODULUS 2, REMAINDER 1)', name || '_b1', name || '_b');
  EXECUTE format('CREATE TABLE %I PARTITION OF %I DEFAULT', name || '_other', name);
  IF scd2 THEN
    EXECUTE format('ALTER TABLE %I ADD PRIMARY KEY (region, id, __start_at)', name);
    EXECUTE format('CREATE UNIQUE INDEX ON %I (region, id) WHERE __end_at IS NULL', name);
  ELSE
    EXECUTE format('ALTER TABLE %I ADD PRIMARY KEY (region, id)', name);
  END IF;
END $$;
SELECT make_target('s1_c', false, NULL), make_target('s1_sql', false, NULL),
       make_target('h_c', true, 'int'), make_target('h_sql', true, 'int'), make_target('h_txt', true, 'text');
SELECT autocdc.create_auto_cdc_flow(target => 's1_c', source => 'feed', keys => ARRAY['region', 'id'],
  sequence_by => 'seq', apply_as_deletes => $$op = 'D'$$, except_column_list => ARRAY['op', 'seq'],
  pipeline => 'part_pc', name => 'part_s1_c');
SELECT autocdc.create_auto_cdc_flow(target => 's1_sql', source => 'feed', keys => ARRAY['region', 'id'],
  sequence_by => 'seq', apply_as_deletes => $$op = 'D'$$, except_column_list => ARRAY['op', 'seq'],
  pipeline => 'part_psql', name => 'part_s1_sql');
SELECT autocdc.create_auto_cdc_flow(target => 'h_c', source => 'feed', keys => ARRAY['region', 'id'],
  sequence_by => 'seq', apply_as_deletes => $$op = 'D'$$, except_column_list => ARRAY['op', 'seq'],
  track_history_except_column_list => ARRAY['note'],
  stored_as_scd_type => 2, pipeline => 'part_pc', name => 'part_h_c');
SELECT autocdc.create_auto_cdc_flow(target => 'h_sql', source => 'feed', keys => ARRAY['region', 'id'],
  sequence_by => 'seq', apply_as_deletes => $$op = 'D'$$, except_column_list => ARRAY['op', 'seq'],
  track_history_except_column_list => ARRAY['note'],
  stored_as_scd_type => 2, pipeline => 'part_psql', name => 'part_h_sql');
SELECT autocdc.create_auto_cdc_flow(target => 'h_txt', source => 'feed', keys => ARRAY['region', 'id'],
  sequence_by => $$lpad(seq::text, 3, '0')$$, apply_as_deletes => $$op = 'D'$$,
  except_column_list => ARRAY['op', 'seq'], track_history_except_column_list => ARRAY['note'],
  stored_as_scd_type => 2, pipeline => 'part_pc', name => 'part_h_txt');
CREATE FUNCTION run_both() RETURNS TABLE (flow text, rows_read bigint, rows_upserted bigint,
                                         rows_deleted bigint, status text)
LANGUAGE plpgsql AS $$
BEGIN
  RETURN QUERY SELECT r.flow, r.rows_read, r.rows_upserted, r.rows_deleted, r.status FROM autocdc.run('part_pc') r;
  RETURN QUERY SELECT r.flow, r.rows_read, r.rows_upserted, r.rows_deleted, r.status FROM autocdc.run('part_psql') r;
END $$;
-- Whether the two pipelines' targets agree.
CREATE FUNCTION same() RETURNS TABLE (scd1 boolean, scd2 boolean, scd2_text boolean)
LANGUAGE sql AS $$
  SELECT NOT EXISTS ((TABLE s1_c EXCEPT ALL TABLE s1_sql) UNION ALL (TABLE s1_sql EXCEPT ALL TABLE s1_c)),
         NOT EXISTS ((TABLE h_c EXCEPT ALL TABLE h_sql) UNION ALL (TABLE h_sql EXCEPT ALL TABLE h_c)),
         NOT EXISTS ((SELECT region, id, v, note, __start_at::int, __end_at::int FROM h_txt EXCEPT ALL TABLE h_c)
                     UNION ALL (TABLE h_c EXCEPT ALL SELECT region, id, v, note, __start_at::int, __end_at::int FROM h_txt))
$$;

-- Round 1: one key per partition, each the first row there.
INSERT INTO feed VALUES ('a', 1, 'a1', 'n', 'U', 10), ('b', 1, 'b1', 'n', 'U', 10),
  ('b', 3, 'b3', 'n', 'U', 10), ('c', 1, 'c1', 'n', 'U', 10);
SELECT * FROM run_both() ORDER BY flow;
SELECT tableoid::regclass AS part, ctid, * FROM s1_c ORDER BY region, id;
SELECT tableoid::regclass AS part, ctid, * FROM h_c ORDER BY region, id, __start_at;
-- Round 2: a new value for ('a', 1) only (SCD 2: its version is closed, no other).
INSERT INTO feed VALUES ('a', 1, 'a1 v2', 'n', 'U', 30);
SELECT * FROM run_both() ORDER BY flow;
SELECT * FROM same();
SELECT tableoid::regclass AS part, * FROM s1_c ORDER BY region, id;
SELECT tableoid::regclass AS part, * FROM h_c ORDER BY region, id, __start_at;
-- Round 3: late events for ('a', 1): a version between (the stored one's
-- end moves); a delete of ('c', 1); ('b', 3)'s untracked note changed
-- (SCD 2: its open version replaced).
INSERT INTO feed VALUES ('a', 1, 'a1 v1b', 'n', 'U', 20), ('c', 1, NULL, NULL, 'D', 40),
  ('b', 3, 'b3', 'n2', 'U', 40);
SELECT * FROM run_both() ORDER BY flow;
SELECT * FROM same();
SELECT tableoid::regclass AS part, * FROM s1_c ORDER BY region, id;
SELECT tableoid::regclass AS part, * FROM h_c ORDER BY region, id, __start_at;
-- Round 4: a late event with the value of ('a', 1)'s version at 30 moves
-- that version's start to 25: the stored version at 30 is deleted; a late
-- update of ('c', 1) makes a version that ends at its delete; ('b', 3)'s
-- last event again (a replay, compared with the stored row).
INSERT INTO feed VALUES ('a', 1, 'a1 v2', 'n', 'U', 25), ('c', 1, 'c1 v2', 'n', 'U', 35),
  ('b', 3, 'b3', 'n2', 'U', 40);
SELECT * FROM run_both() ORDER BY flow;
SELECT * FROM same();
SELECT tableoid::regclass AS part, * FROM s1_c ORDER BY region, id;
SELECT tableoid::regclass AS part, * FROM h_c ORDER BY region, id, __start_at;
SELECT tableoid::regclass AS part, * FROM h_txt ORDER BY region, id, __start_at;
SELECT * FROM autocdc.as_of(NULL::h_c, 22) ORDER BY region, id;

-- SCD 1 partitioned by a column that is not a key: its unique index holds
-- the keys and the partition key (autocdc keeps one row per key), and an
-- update that changes the column moves the row: in two pipelines (orders
-- and orders_sql); orders_p with partial updates (ignore_null_updates)
-- and truncates.
CREATE TABLE orders_cdc (id int, status text, amount int, op text, seq int);
CREATE TABLE orders_pcdc (LIKE orders_cdc);
CREATE TABLE orders (id int NOT NULL, status text, amount int) PARTITION BY LIST (status);
CREATE TABLE orders_open PARTITION OF orders FOR VALUES IN ('open');
CREATE TABLE orders_done PARTITION OF orders FOR VALUES IN ('done');
CREATE TABLE orders_rest PARTITION OF orders DEFAULT;
CREATE UNIQUE INDEX ON orders (id, status);
CREATE TABLE orders_sql (LIKE orders) PARTITION BY LIST (status);
CREATE TABLE orders_sql_open PARTITION OF orders_sql FOR VALUES IN ('open');
CREATE TABLE orders_sql_rest PARTITION OF orders_sql DEFAULT;
CREATE UNIQUE INDEX ON orders_sql (id, status);
CREATE TABLE orders_p (LIKE orders) PARTITION BY LIST (status);
CREATE TABLE orders_p_open PARTITION OF orders_p FOR VALUES IN ('open');
CREATE TABLE orders_p_rest PARTITION OF orders_p DEFAULT;
CREATE UNIQUE INDEX ON orders_p (status, id);
SELECT autocdc.create_auto_cdc_flow(target => 'orders', source => 'orders_cdc', keys => ARRAY['id'],
  sequence_by => 'seq', apply_as_deletes => $$op = 'D'$$, except_column_list => ARRAY['op', 'seq'],
  pipeline => 'part_orders', name => 'part_orders');
SELECT autocdc.create_auto_cdc_flow(target => 'orders_sql', source => 'orders_cdc', keys => ARRAY['id'],
  sequence_by => 'seq', apply_as_deletes => $$op = 'D'$$, except_column_list => ARRAY['op', 'seq'],
  pipeline => 'part_orders_sql', name => 'part_orders_sql');
SELECT autocdc.create_auto_cdc_flow(target => 'orders_p', source => 'orders_pcdc', keys => ARRAY['id'],
  sequence_by => 'seq', apply_as_deletes => $$op = 'D'$$, apply_as_truncates => $$op = 'T'$$,
  except_column_list => ARRAY['op', 'seq'], ignore_null_updates => true,
  pipeline => 'part_orders', name => 'part_orders_p');
CREATE FUNCTION run_orders() RETURNS TABLE (flow text, rows_read bigint, rows_upserted bigint,
                                           rows_deleted bigint, status text)
LANGUAGE plpgsql AS $$
BEGIN
  RETURN QUERY SELECT r.flow, r.rows_read, r.rows_upserted, r.rows_deleted, r.status FROM autocdc.run('part_orders') r;
  RETURN QUERY SELECT r.flow, r.rows_read, r.rows_upserted, r.rows_deleted, r.status FROM autocdc.run('part_orders_sql') r;
END $$;
CREATE FUNCTION show_orders() RETURNS TABLE (target text, part regclass, id int, status text, amount int, sequence int)
LANGUAGE sql AS $$
  SELECT 'orders', tableoid::regclass, * FROM orders
  UNION ALL SELECT 'orders_sql', tableoid::regclass, * FROM orders_sql
  UNION ALL SELECT 'orders_p', tableoid::regclass, * FROM orders_p
  ORDER BY 1, 3
$$;
INSERT INTO orders_cdc VALUES (1, 'open', 10, 'U', 1), (2, 'open', 20, 'U', 1), (3, 'done', 30, 'U', 1),
  (4, 'new', 40, 'U', 1);
INSERT INTO orders_pcdc (id, status, amount, op, seq) SELECT id, status, amount, op, seq FROM orders_cdc;
SELECT * FROM run_orders() ORDER BY flow;
SELECT tableoid::regclass AS part, ctid, * FROM orders ORDER BY id;
-- 1 is done (moves), 2 gets a new amount (stays), 3 is deleted; orders_p
-- takes NULLs as "unchanged": 4's status stays, its amount changes.
INSERT INTO orders_cdc VALUES (1, 'done', 11, 'U', 2), (2, 'open', 21, 'U', 2), (3, NULL, NULL, 'D', 2),
  (4, NULL, 41, 'U', 2);
INSERT INTO orders_pcdc (id, status, amount, op, seq) SELECT id, status, amount, op, seq FROM orders_cdc WHERE seq = 2;
SELECT * FROM run_orders() ORDER BY flow;
SELECT * FROM show_orders();
-- 2 moves to the default partition, 1 moves back: moved in two runs running.
INSERT INTO orders_cdc VALUES (2, 'late', 22, 'U', 3), (1, 'open', 12, 'U', 3);
INSERT INTO orders_pcdc (id, status, amount, op, seq) SELECT id, status, amount, op, seq FROM orders_cdc WHERE seq = 3;
SELECT * FROM run_orders() ORDER BY flow;
SELECT * FROM show_orders();
-- A truncate at 5 and an upsert of 2 after it (orders_p); a late update of
-- 4 before the truncate stays out.
INSERT INTO orders_pcdc VALUES (NULL, NULL, NULL, 'T', 5), (2, NULL, 23, 'U', 6), (4, 'open', 42, 'U', 4);
SELECT * FROM run_orders() ORDER BY flow;
SELECT * FROM show_orders() WHERE target = 'orders_p';

-- SCD 2 partitioned by __end_at: the open versions in one partition, the
-- closed ones in another; closing a version moves it.  Its unique index
-- holds the keys, __start_at and the partition key.
CREATE TABLE hist (id int NOT NULL, v text, __start_at int NOT NULL, __end_at int) PARTITION BY LIST (__end_at);
CREATE TABLE hist_open PARTITION OF hist FOR VALUES IN (NULL);
CREATE TABLE hist_closed PARTITION OF hist DEFAULT;
CREATE UNIQUE INDEX ON hist (id, __start_at, __end_at);
CREATE TABLE hist_sql (LIKE hist) PARTITION BY LIST (__end_at);
CREATE TABLE hist_sql_open PARTITION OF hist_sql FOR VALUES IN (NULL);
CREATE TABLE hist_sql_closed PARTITION OF hist_sql DEFAULT;
CREATE UNIQUE INDEX ON hist_sql (id, __start_at, __end_at);
CREATE TABLE hist_cdc (id int, v text, op text, seq int);
SELECT autocdc.create_auto_cdc_flow(target => 'hist', source => 'hist_cdc', keys => ARRAY['id'],
  sequence_by => 'seq', apply_as_deletes => $$op = 'D'$$, except_column_list => ARRAY['op', 'seq'],
  stored_as_scd_type => 2, pipeline => 'part_hist', name => 'part_hist');
SELECT autocdc.create_auto_cdc_flow(target => 'hist_sql', source => 'hist_cdc', keys => ARRAY['id'],
  sequence_by => 'seq', apply_as_deletes => $$op = 'D'$$, except_column_list => ARRAY['op', 'seq'],
  stored_as_scd_type => 2, pipeline => 'part_hist_sql', name => 'part_hist_sql');
CREATE FUNCTION run_hist() RETURNS TABLE (target text, part regclass, id int, v text, __start_at int, __end_at int)
LANGUAGE plpgsql AS $$
BEGIN
  PERFORM autocdc.run('part_hist');
  PERFORM autocdc.run('part_hist_sql');
  RETURN QUERY SELECT 'hist', h.tableoid::regclass, h.id, h.v, h.__start_at, h.__end_at FROM hist h
    UNION ALL SELECT 'hist_sql', h.tableoid::regclass, h.id, h.v, h.__start_at, h.__end_at FROM hist_sql h
    ORDER BY 1, 3, 5;
END $$;
INSERT INTO hist_cdc VALUES (1, 'x', 'U', 10), (2, 'y', 'U', 10);
SELECT * FROM run_hist();
INSERT INTO hist_cdc VALUES (1, 'x2', 'U', 30), (2, NULL, 'D', 30);
SELECT * FROM run_hist();
-- late: a version of 1 between (the closed one's end moves, in its
-- partition); 2 again after its delete
INSERT INTO hist_cdc VALUES (1, 'x1', 'U', 20), (2, 'y2', 'U', 40);
SELECT * FROM run_hist();
-- late, before 2's delete: its closed version ends earlier; 1 deleted
-- (its open version closed and moved) and back in the same run
INSERT INTO hist_cdc VALUES (2, 'y1', 'U', 20), (1, NULL, 'D', 50), (1, 'x3', 'U', 60);
SELECT * FROM run_hist();

-- Snapshots into partitioned targets, SCD 1 and SCD 2.
CREATE TABLE cities (region text, key int, city text);
CREATE TABLE snap1 (region text, key int, city text, PRIMARY KEY (region, key)) PARTITION BY LIST (region);
CREATE TABLE snap1_n PARTITION OF snap1 FOR VALUES IN ('n');
CREATE TABLE snap1_s PARTITION OF snap1 DEFAULT;
CREATE TABLE snap2 (region text, key int, city text, __start_at bigint, __end_at bigint,
  PRIMARY KEY (region, key, __start_at)) PARTITION BY LIST (region);
CREATE TABLE snap2_n PARTITION OF snap2 FOR VALUES IN ('n');
CREATE TABLE snap2_s PARTITION OF snap2 DEFAULT;
SELECT autocdc.create_auto_cdc_from_snapshot_flow(target => 'snap1', source => 'cities',
  keys => ARRAY['region', 'key'], pipeline => 'part_snap', name => 'part_snap1');
SELECT autocdc.create_auto_cdc_from_snapshot_flow(target => 'snap2', source => 'cities',
  keys => ARRAY['region', 'key'], stored_as_scd_type => 2, pipeline => 'part_snap', name => 'part_snap2');
INSERT INTO cities VALUES ('n', 1, 'Oslo'), ('s', 1, 'Rome'), ('s', 2, 'Lima');
SELECT flow, rows_read, rows_upserted, rows_deleted, status FROM autocdc.run('part_snap') ORDER BY flow;
UPDATE cities SET city = 'Bergen' WHERE region = 'n';
DELETE FROM cities WHERE region = 's' AND key = 2;
SELECT flow, rows_read, rows_upserted, rows_deleted, status FROM autocdc.run('part_snap') ORDER BY flow;
SELECT tableoid::regclass AS part, * FROM snap1 ORDER BY region, key;
SELECT tableoid::regclass AS part, * FROM snap2 ORDER BY region, key, __start_at;

-- Append into a partitioned target.
CREATE TABLE events_src (region text, n int);
CREATE TABLE events (region text, n int) PARTITION BY LIST (region);
CREATE TABLE events_a PARTITION OF events FOR VALUES IN ('a');
CREATE TABLE events_rest PARTITION OF events DEFAULT;
SELECT autocdc.create_append_flow(target => 'events', source => 'events_src', pipeline => 'part_app', name => 'part_events');
INSERT INTO events_src VALUES ('a', 1), ('b', 1);
SELECT rows_read, rows_upserted, status FROM autocdc.run('part_app');
INSERT INTO events_src VALUES ('a', 2), ('c', 1);
SELECT rows_read, rows_upserted, status FROM autocdc.run('part_app');
SELECT tableoid::regclass AS part, * FROM events ORDER BY region, n;

-- Refused: no unique index on the keys (with the partition key's columns
-- on a partitioned table), or a partition key by expression, which no
-- unique index can hold.
CREATE TABLE nokey (id int, status text, amount int) PARTITION BY LIST (status);
SELECT autocdc.create_auto_cdc_flow(target => 'nokey', source => 'orders_cdc', keys => ARRAY['id'],
  sequence_by => 'seq', except_column_list => ARRAY['op', 'seq'], pipeline => 'part_bad', name => 'part_nokey');
CREATE TABLE sub (id int, status text, amount int) PARTITION BY LIST (status);
CREATE TABLE sub_1 PARTITION OF sub FOR VALUES IN ('open') PARTITION BY RANGE (amount);
SELECT autocdc.create_auto_cdc_flow(target => 'sub', source => 'orders_cdc', keys => ARRAY['id'],
  sequence_by => 'seq', except_column_list => ARRAY['op', 'seq'], pipeline => 'part_bad', name => 'part_sub');
-- a unique index with a column that is neither a key nor in the partition key
CREATE UNIQUE INDEX ON nokey (id, status, amount);
SELECT autocdc.create_auto_cdc_flow(target => 'nokey', source => 'orders_cdc', keys => ARRAY['id'],
  sequence_by => 'seq', except_column_list => ARRAY['op', 'seq'], pipeline => 'part_bad', name => 'part_nokey');
CREATE TABLE byexpr (id int, status text, amount int) PARTITION BY LIST (lower(status));
SELECT autocdc.create_auto_cdc_flow(target => 'byexpr', source => 'orders_cdc', keys => ARRAY['id'],
  sequence_by => 'seq', except_column_list => ARRAY['op', 'seq'], pipeline => 'part_bad', name => 'part_byexpr');
CREATE TABLE nokey2 (id int, v text, __start_at int, __end_at int) PARTITION BY RANGE (__start_at);
CREATE UNIQUE INDEX ON nokey2 (id, __start_at, v);
SELECT autocdc.create_auto_cdc_flow(target => 'nokey2', source => 'hist_cdc', keys => ARRAY['id'],
  sequence_by => 'seq', apply_as_deletes => $$op = 'D'$$, except_column_list => ARRAY['op', 'seq'],
  stored_as_scd_type => 2, pipeline => 'part_bad', name => 'part_nokey2');
-- with (id, __start_at) it is accepted: history partitioned by start
CREATE UNIQUE INDEX ON nokey2 (id, __start_at);
CREATE TABLE nokey2_early PARTITION OF nokey2 FOR VALUES FROM (MINVALUE) TO (25);
CREATE TABLE nokey2_late PARTITION OF nokey2 DEFAULT;
SELECT autocdc.create_auto_cdc_flow(target => 'nokey2', source => 'hist_cdc', keys => ARRAY['id'],
  sequence_by => 'seq', apply_as_deletes => $$op = 'D'$$, except_column_list => ARRAY['op', 'seq'],
  stored_as_scd_type => 2, pipeline => 'part_bad', name => 'part_nokey2');
SELECT rows_read, rows_upserted, status FROM autocdc.run('part_bad');
SELECT tableoid::regclass AS part, * FROM nokey2 ORDER BY id, __start_at;
-- versions written in both partitions: 1's open one closed, a late first
-- version for 2, and its open one closed by a delete
INSERT INTO hist_cdc VALUES (1, 'x4', 'U', 70), (2, 'y0', 'U', 5), (2, NULL, 'D', 45);
SELECT rows_read, rows_upserted, rows_deleted, status FROM autocdc.run('part_bad');
SELECT tableoid::regclass AS part, * FROM nokey2 ORDER BY id, __start_at;
SELECT * FROM autocdc.as_of(NULL::nokey2, 44) ORDER BY id;

RESET search_path;
