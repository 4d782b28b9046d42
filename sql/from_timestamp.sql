-- flakeid_from_timestamp: the smallest ID of a millisecond.
SET timezone = 'UTC';

SELECT flakeid_from_timestamp('2020-01-01 00:00:00+00') AS at_epoch;
SELECT flakeid_from_timestamp('2020-01-01 00:00:00.001+00')::bigint = 1::bigint << 22 AS one_ms;
-- sub-millisecond parts are truncated, never rounded up
SELECT flakeid_from_timestamp('2020-01-01 00:00:00.0019+00')::bigint = 1::bigint << 22 AS truncated;
SELECT flakeid_from_timestamp('2023-11-14 22:13:20+00')::bigint
	= (1700000000000 - 1577836800000)::bigint << 22 AS known_moment;

-- node 0, sequence 0, and the timestamp decodes back
SELECT flakeid_node(b), flakeid_sequence(b), flakeid_timestamp(b)
FROM flakeid_from_timestamp('2024-02-29 12:34:56.789+00') b;

-- it bounds every ID of its millisecond from below, and none of the next
SELECT flakeid_from_timestamp(t) <= (flakeid_from_timestamp(t)::bigint | (1023 << 12) | 4095)::flakeid
	AND (flakeid_from_timestamp(t)::bigint | (1023 << 12) | 4095)
		< flakeid_from_timestamp(t + interval '1 ms')::bigint AS bounds
FROM (VALUES (timestamptz '2030-06-01 00:00:00+00')) v(t);

-- the last representable millisecond, and out of range on both sides
SELECT flakeid_from_timestamp(timestamptz '2020-01-01 00:00:00+00' + 2199023255551 * interval '1 ms')::bigint
	= 2199023255551::bigint << 22 AS last_ms;
SELECT flakeid_from_timestamp(timestamptz '2020-01-01 00:00:00+00' + 2199023255552 * interval '1 ms');
SELECT flakeid_from_timestamp('2019-12-31 23:59:59.999+00');
SELECT flakeid_from_timestamp('infinity');
SELECT flakeid_from_timestamp('-infinity');
SELECT flakeid_from_timestamp(NULL);

-- a time-range query uses the primary key
CREATE TABLE ranged (id flakeid PRIMARY KEY, body text);
INSERT INTO ranged
SELECT flakeid_from_timestamp(timestamptz '2024-01-01 00:00:00+00' + g * interval '1 minute'), 'r' || g
FROM generate_series(0, 9999) g;
ANALYZE ranged;
EXPLAIN (COSTS OFF)
SELECT * FROM ranged
WHERE id >= flakeid_from_timestamp('2024-01-02 00:00:00+00')
	AND id < flakeid_from_timestamp('2024-01-02 01:00:00+00');
SELECT count(*) FROM ranged
WHERE id >= flakeid_from_timestamp('2024-01-02 00:00:00+00')
	AND id < flakeid_from_timestamp('2024-01-02 01:00:00+00');
DROP TABLE ranged;
