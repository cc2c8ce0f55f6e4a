-- SCD type 2 target: one row per version, [__start_at, __end_at) in seq units,
-- __end_at NULL = current.  Tombstones keep the seq of every applied delete
-- (needed to place late events correctly).  Not timed.
-- vars: tgt, tomb
SELECT bench_drop(:'tgt');
SELECT bench_drop(:'tomb');
CREATE TABLE :"tgt" (
  id bigint NOT NULL, name text, city text, amount numeric,
  __start_at bigint NOT NULL, __end_at bigint,
  PRIMARY KEY (id, __start_at));
CREATE TABLE :"tomb" (id bigint NOT NULL, seq bigint NOT NULL, PRIMARY KEY (id, seq));
