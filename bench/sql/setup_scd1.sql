-- SCD type 1 target + tombstones of deleted keys (not timed).
-- The per-key "last applied seq" is tgt.__seq for live keys, tomb.__seq for deleted keys.
-- vars: tgt, tomb
SELECT bench_drop(:'tgt');
SELECT bench_drop(:'tomb');
CREATE TABLE :"tgt"  (id bigint PRIMARY KEY, name text, city text, amount numeric, __seq bigint NOT NULL);
CREATE TABLE :"tomb" (id bigint PRIMARY KEY, __seq bigint NOT NULL);
