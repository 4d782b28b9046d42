-- flakeid_to_uuid() and flakeid_from_uuid(): valid version-7 UUIDs that
-- carry the ID's Unix millisecond, read back exactly, sort as the IDs do,
-- and nothing else is read back.

-- IDs across the layout's whole range: the first and last milliseconds and
-- 2,000 random ones between, each with the smallest, the largest and a
-- random node and sequence, and IDs made now
SELECT setseed(0.27);
CREATE TEMP TABLE ids AS
	SELECT ((ms << 22) | low)::flakeid AS id
	FROM (SELECT 0::bigint UNION ALL SELECT 1 UNION ALL SELECT (1::bigint << 41) - 2
		  UNION ALL SELECT (1::bigint << 41) - 1
		  UNION ALL SELECT floor(random() * (1::bigint << 41))::bigint
			FROM generate_series(1, 2000)) m(ms),
		 (SELECT 0::bigint UNION ALL SELECT 1 UNION ALL SELECT (1::bigint << 22) - 1
		  UNION ALL SELECT floor(random() * (1::bigint << 22))::bigint) l(low)
	UNION
	SELECT nextflakes(10000);
SELECT count(*) > 18000 AS enough_ids FROM ids;

-- what the UUIDs are made of, taken apart by plain text and bit arithmetic
CREATE TEMP TABLE uuids AS
	SELECT id, u, ('x' || substr(h, 1, 12))::bit(48)::bigint AS unix_ms,
		substr(h, 13, 1) AS version, ('x' || substr(h, 17, 1))::bit(4)::int >> 2 AS variant
	FROM (SELECT id, u, replace(u::text, '-', '') AS h
		  FROM (SELECT id, flakeid_to_uuid(id) AS u FROM ids) s) s;
SELECT count(*) FILTER (WHERE version <> '7') AS not_version_7,
	count(*) FILTER (WHERE variant <> 2) AS not_variant_10,
	count(*) FILTER (WHERE unix_ms <> (id::bigint >> 22) + 1577836800000) AS wrong_unix_ms,
	count(*) FILTER (WHERE to_timestamp(unix_ms / 1000.0) <> flakeid_timestamp(id))
		AS wrong_time,
	count(*) FILTER (WHERE flakeid_from_uuid(u) <> id) AS not_read_back,
	count(DISTINCT u) = count(*) AS distinct_uuids
FROM uuids;

-- uuid order is flakeid order
SELECT array_agg(id ORDER BY id) = array_agg(id ORDER BY u) AS same_order FROM uuids;

-- Not one of the 128 UUIDs that differ from a made one in one bit is read
-- back, for 50 UUIDs: the time, the node and sequence and the check bits
-- all count.  Refused means SQLSTATE 22023, never a value.
CREATE FUNCTION pg_temp.read_back(u uuid) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
	RETURN flakeid_from_uuid(u)::text;
EXCEPTION WHEN OTHERS THEN
	RETURN 'SQLSTATE ' || SQLSTATE;
END $$;
SELECT pg_temp.read_back(encode(set_bit(b, bit, 1 - get_bit(b, bit)), 'hex')::uuid) AS result,
	count(*)
FROM (SELECT decode(replace(u::text, '-', ''), 'hex') AS b
	  FROM uuids ORDER BY id LIMIT 50) s, generate_series(0, 127) bit
GROUP BY 1;

-- random version-4 UUIDs and foreign version-7 UUIDs: the RFC 9562
-- example, and UUIDs in this layout's range with random bits after the
-- millisecond
SELECT pg_temp.read_back(u) AS result, count(*)
FROM (SELECT gen_random_uuid() FROM generate_series(1, 1000)
	  UNION ALL SELECT '017f22e2-79b0-7cc3-98c4-dc0c0c07398f'
	  UNION ALL SELECT (lpad(to_hex(1577836800000 + (random() * 2000000000000)::bigint), 12, '0')
			|| '7' || substr(h, 1, 3) || to_hex(8 + floor(random() * 4)::int) || substr(h, 4, 15))::uuid
		FROM (SELECT md5(random()::text) AS h
			  FROM generate_series(1, 1000)) r) s(u)
GROUP BY 1;

-- what the errors say
SELECT flakeid_from_uuid('017f22e2-79b0-7cc3-98c4-dc0c0c07398f');
SELECT flakeid_from_uuid('f81d4fae-7dec-41d0-a765-00a0c91e6bf6');
SELECT flakeid_from_uuid('017f22e2-79b0-7cc3-18c4-dc0c0c07398f');
SELECT flakeid_from_uuid('00000000-0000-7000-8000-000000000000');

-- UUIDs made by earlier servers read back: the bytes of one ID's UUID are
-- fixed for good under a layout (the check's hash included)
SELECT flakeid_to_uuid(912137223447539712) = '01a200a6-cb58-701c-800f-bdd54cc6ca02'
	AS stable_uuid;

-- a bigint works as the ID; NULL gives NULL
SELECT flakeid_from_uuid(flakeid_to_uuid(1234567890123456789::bigint)) = 1234567890123456789
	AS from_bigint;
SELECT flakeid_to_uuid(NULL) IS NULL AS null_uuid, flakeid_from_uuid(NULL) IS NULL AS null_id;

-- no casts: a UUID's ID depends on the layout, and most UUIDs have none
SELECT 1::flakeid::uuid;
SELECT gen_random_uuid()::flakeid;

DROP TABLE ids, uuids;
