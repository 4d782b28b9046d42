-- btree (with sort support and deduplication), hash and BRIN indexes.
CREATE TABLE ix (id flakeid, body text);
INSERT INTO ix
SELECT flakeid_from_timestamp(timestamptz '2024-01-01 00:00:00+00' + g * interval '1 second')::bigint | ((g % 1024)::bigint << 12), 'b' || g
FROM generate_series(1, 20000) g;
INSERT INTO ix SELECT id, body || '-dup' FROM ix WHERE body LIKE '%7';
ANALYZE ix;
-- Plans, less what PostgreSQL versions print differently: 17 no longer
-- shows "(returns $0)" after an InitPlan, 18 marks nodes that an enable_*
-- setting disabled, 19 names the InitPlans of min() and max() "minmax_N"
-- and says which aggregate they replace.
CREATE FUNCTION plan(query text) RETURNS SETOF text LANGUAGE plpgsql AS $f$
DECLARE
	line text;
BEGIN
	FOR line IN EXECUTE 'EXPLAIN (COSTS OFF) ' || query LOOP
		CONTINUE WHEN line ~ '^\s*(Disabled: true|Replaces: MinMaxAggregate)$';
		RETURN NEXT regexp_replace(regexp_replace(line, ' \(returns \$\d+\)$', ''),
			'InitPlan minmax_(\d+)$', 'InitPlan \1');
	END LOOP;
END
$f$;
SET enable_seqscan = off;
SET enable_bitmapscan = off;

-- btree
CREATE INDEX ix_btree ON ix USING btree (id);
SELECT plan($$SELECT * FROM ix WHERE id = 1234567890123456789$$);
SELECT plan($$SELECT * FROM ix WHERE id BETWEEN '100' AND '200'$$);
SELECT plan($$SELECT id FROM ix ORDER BY id DESC LIMIT 3$$);
SELECT count(*) FROM ix WHERE id >= (SELECT id FROM ix ORDER BY id OFFSET 100 LIMIT 1);
SELECT count(*) AS rows, count(DISTINCT id) AS ids FROM ix;
-- min() and max() read the ends of the index
SELECT plan($$SELECT max(id) FROM ix$$);
SELECT max(id) = (SELECT id FROM ix ORDER BY id DESC LIMIT 1) AS max_ok,
	min(id) = (SELECT id FROM ix ORDER BY id LIMIT 1) AS min_ok FROM ix;
-- equal-image: deduplication is on for this opclass
CREATE EXTENSION pageinspect;
SELECT allequalimage FROM bt_metap('ix_btree');
-- a unique btree refuses duplicates
CREATE TABLE ix_unique (id flakeid PRIMARY KEY);
INSERT INTO ix_unique VALUES (1), (2);
INSERT INTO ix_unique VALUES (2);
DROP TABLE ix_unique;
-- merge join on flakeid
SET enable_hashjoin = off;
SET enable_nestloop = off;
SELECT plan($$SELECT count(*) FROM ix a JOIN ix b USING (id)$$);
SELECT count(*) FROM ix a JOIN ix b USING (id);
RESET enable_hashjoin;
RESET enable_nestloop;
DROP INDEX ix_btree;

-- hash
CREATE INDEX ix_hash ON ix USING hash (id);
SELECT plan($$SELECT * FROM ix WHERE id = 1234567890123456789$$);
SELECT count(*) FROM ix WHERE id = (SELECT id FROM ix WHERE body = 'b17');
-- hash join and hash aggregate
SET enable_mergejoin = off;
SET enable_nestloop = off;
SELECT plan($$SELECT count(*) FROM ix a JOIN ix b USING (id)$$);
SELECT count(*) FROM ix a JOIN ix b USING (id);
RESET enable_mergejoin;
RESET enable_nestloop;
DROP INDEX ix_hash;

-- hash partitioning uses the extended hash
CREATE TABLE ix_parted (id flakeid) PARTITION BY HASH (id);
CREATE TABLE ix_parted_0 PARTITION OF ix_parted FOR VALUES WITH (MODULUS 2, REMAINDER 0);
CREATE TABLE ix_parted_1 PARTITION OF ix_parted FOR VALUES WITH (MODULUS 2, REMAINDER 1);
INSERT INTO ix_parted SELECT id FROM ix;
SELECT count(*) > 0 AND count(*) < (SELECT count(*) FROM ix) AS split FROM ix_parted_0;
SELECT (SELECT count(*) FROM ix_parted) = (SELECT count(*) FROM ix) AS all_rows;
SELECT satisfies_hash_partition('ix_parted'::regclass, 2, 0, 1234567890123456789::flakeid)
	= satisfies_hash_partition('ix_parted'::regclass, 2, 0, 1234567890123456789::flakeid) AS stable;
SELECT plan($$SELECT * FROM ix_parted WHERE id = 42$$);
-- with an index per partition, ORDER BY id merges them, in order
CREATE INDEX ON ix_parted (id);
SELECT count(*) FILTER (WHERE line ~ '^\s*Merge Append') AS merge_append,
	count(*) FILTER (WHERE line ~ 'Index Only Scan using ix_parted_\d_id_idx') AS index_scans
FROM plan($$SELECT id FROM ix_parted ORDER BY id$$) AS line;
SELECT count(*) = (SELECT count(*) FROM ix) AS all_rows,
	bool_and(prev IS NULL OR id >= prev) AS ordered
FROM (SELECT id, lag(id) OVER () AS prev
	  FROM (SELECT id FROM ix_parted ORDER BY id) s) t;
-- a range of IDs is looked up in every partition's index
SELECT count(*) FILTER (WHERE line ~ 'Index Only Scan using ix_parted_\d_id_idx') AS index_scans
FROM plan($$SELECT id FROM ix_parted
	WHERE id >= flakeid_from_timestamp('2024-01-01 00:00:00+00')$$) AS line;
DROP TABLE ix_parted;

-- range partitioning by time through flakeid_from_timestamp bounds
CREATE TABLE ix_ranged (id flakeid) PARTITION BY RANGE (id);
CREATE TABLE ix_ranged_jan PARTITION OF ix_ranged
	FOR VALUES FROM (flakeid_from_timestamp('2024-01-01 00:00:00+00'))
	TO (flakeid_from_timestamp('2024-02-01 00:00:00+00'));
CREATE TABLE ix_ranged_feb PARTITION OF ix_ranged
	FOR VALUES FROM (flakeid_from_timestamp('2024-02-01 00:00:00+00'))
	TO (flakeid_from_timestamp('2024-03-01 00:00:00+00'));
INSERT INTO ix_ranged SELECT id FROM ix;
INSERT INTO ix_ranged VALUES (flakeid_from_timestamp('2024-03-01 00:00:00+00'));
-- a time condition on the key prunes partitions
SELECT plan($$SELECT count(*) FROM ix_ranged
WHERE id >= flakeid_from_timestamp('2024-02-10 00:00:00+00')$$);
DROP TABLE ix_ranged;

-- BRIN minmax
CREATE INDEX ix_brin ON ix USING brin (id);
SET enable_bitmapscan = on;
SET enable_indexscan = off;
SELECT plan($$SELECT * FROM ix WHERE id < 100000000000000$$);
SELECT count(*) FROM ix WHERE id < (SELECT id FROM ix WHERE body = 'b500');
SELECT count(*) FROM ix WHERE id <= (SELECT id FROM ix WHERE body = 'b500') AND id >= (SELECT id FROM ix WHERE body = 'b400');
SET enable_bitmapscan = off;
SET enable_seqscan = on;
SELECT count(*) FROM ix WHERE id < (SELECT id FROM ix WHERE body = 'b500');
DROP TABLE ix;
DROP FUNCTION plan(text);
