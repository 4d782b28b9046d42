-- Decoding, checked against independent bit arithmetic on ::bigint.
-- The default layout: 41 bits of ms since 2020-01-01, 10 node bits, 12
-- sequence bits.
SHOW flakeid.node_bits;
SHOW flakeid.epoch;

CREATE TEMP TABLE samples AS
SELECT x::bigint AS x FROM (VALUES
	(0), (1), (4095), (4096), (4194303), (4194304),
	(1234567890123456789), (9223372036854775807),
	(((1700000000000 - 1577836800000)::bigint << 22) | (1023 << 12) | 4095),
	(((1700000000000 - 1577836800000)::bigint << 22) | (513 << 12) | 17)) v(x)
UNION ALL
SELECT (random() * 9223372036854775807)::bigint FROM generate_series(1, 1000);

SELECT count(*) AS samples,
	count(*) FILTER (WHERE flakeid_node(x::flakeid) = ((x >> 12) & 1023)) AS node_ok,
	count(*) FILTER (WHERE flakeid_sequence(x::flakeid) = (x & 4095)) AS sequence_ok,
	count(*) FILTER (WHERE flakeid_timestamp(x::flakeid) =
		timestamptz '2020-01-01 00:00:00+00' + (x >> 22) * interval '1 ms') AS timestamp_ok
FROM samples;

-- decode on bigint values and columns works through the implicit cast
SELECT flakeid_node(x), flakeid_sequence(x), flakeid_timestamp(x)
FROM samples WHERE x = (((1700000000000 - 1577836800000)::bigint << 22) | (513 << 12) | 17);
SELECT flakeid_timestamp(0), flakeid_node(0), flakeid_sequence(0);

-- flakeid_decode gives the three in one row
SELECT * FROM flakeid_decode(1234567890123456789);
SELECT count(*) FILTER (WHERE (d).ts = flakeid_timestamp(x) AND (d).node = flakeid_node(x)
	AND (d).sequence = flakeid_sequence(x)) = count(*) AS decode_agrees
FROM (SELECT x, flakeid_decode(x) AS d FROM samples) s;

-- recomposing the parts gives the ID back
SELECT bool_and(
	(flakeid_from_timestamp(flakeid_timestamp(x))::bigint
		| (flakeid_node(x)::bigint << 12) | flakeid_sequence(x)) = x) AS recomposes
FROM samples;

-- sorting IDs sorts by time, then node, then sequence
SELECT bool_and(x_order = parts_order) AS sort_order FROM (
	SELECT row_number() OVER (ORDER BY x::flakeid) AS x_order,
		row_number() OVER (ORDER BY flakeid_timestamp(x), flakeid_node(x), flakeid_sequence(x)) AS parts_order
	FROM samples) s;

-- usable where immutability is required
CREATE TABLE decoded (
	id flakeid,
	made timestamptz GENERATED ALWAYS AS (flakeid_timestamp(id)) STORED
);
CREATE INDEX ON decoded (flakeid_node(id));
INSERT INTO decoded (id) VALUES (1234567890123456789);
SELECT id, made FROM decoded;
DROP TABLE decoded;

SELECT flakeid_timestamp(NULL), flakeid_node(NULL), flakeid_decode(NULL);
