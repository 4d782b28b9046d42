-- Compact text forms: flakeid_format() and flakeid_parse().

-- fixed width and zero-padded, in each form
SELECT fmt, flakeid_format(0, fmt) AS zero, flakeid_format(1, fmt) AS one,
	flakeid_format(1234567890123456789, fmt) AS big,
	flakeid_format(9223372036854775807, fmt) AS max
FROM unnest(ARRAY['base32', 'base62', 'hex']) fmt;
SELECT flakeid_parse('7ZZZZZZZZZZZZ', 'base32'), flakeid_parse('AzL8n0Y58m7', 'base62'),
	flakeid_parse('7fffffffffffffff', 'hex');

-- values to check: the edges of every bit width and of every digit count,
-- and random values of every magnitude
SELECT setseed(0.5);
CREATE TEMP TABLE vals AS
SELECT DISTINCT v::bigint::flakeid AS v FROM (
	SELECT 2::numeric ^ k + d AS v
	FROM generate_series(0, 62) k, generate_series(-1, 1) d
	UNION ALL
	SELECT b::numeric ^ k + d
	FROM unnest(ARRAY[16, 32, 62]) b, generate_series(1, 10) k, generate_series(-1, 1) d
	UNION ALL
	SELECT ((((random() * 2147483647)::bigint << 32) | (random() * 4294967295)::bigint)
		>> (random() * 62)::int)::numeric
	FROM generate_series(1, 20000)
	UNION ALL
	VALUES (0), (9223372036854775807), (1234567890123456789)
) s
WHERE v BETWEEN 0 AND 9223372036854775807;
SELECT count(*) > 10000 AS many_values, min(v) = 0 AS has_zero,
	max(v) = 9223372036854775807 AS has_max FROM vals;

-- round trips are exact, and every string has the form's width
SELECT fmt, count(*) AS values,
	count(*) FILTER (WHERE flakeid_parse(flakeid_format(v, fmt), fmt) = v) AS round_trips,
	min(length(flakeid_format(v, fmt))) AS min_width,
	max(length(flakeid_format(v, fmt))) AS max_width
FROM vals, unnest(ARRAY['base32', 'base62', 'hex']) fmt
GROUP BY fmt ORDER BY fmt;

-- sorting the strings (COLLATE "C") sorts the IDs
SELECT fmt,
	array_agg(v ORDER BY flakeid_format(v, fmt) COLLATE "C") = array_agg(v ORDER BY v) AS same_order
FROM vals, unnest(ARRAY['base32', 'base62', 'hex']) fmt
GROUP BY fmt ORDER BY fmt;
-- and so do comparisons of two strings
SELECT fmt, bool_and((flakeid_format(a.v, fmt) COLLATE "C" < flakeid_format(b.v, fmt)) = (a.v < b.v)) AS same_comparison
FROM (SELECT v, row_number() OVER (ORDER BY random()) AS i FROM vals) a
JOIN (SELECT v, row_number() OVER (ORDER BY random()) AS i FROM vals) b USING (i),
	unnest(ARRAY['base32', 'base62', 'hex']) fmt
GROUP BY fmt ORDER BY fmt;

-- the digits are the ones an independent computation gives
SELECT bool_and(flakeid_format(v, 'hex') = lpad(to_hex(v::bigint), 16, '0')) AS hex_is_to_hex,
	bool_and(flakeid_format(v, 'base32') = (
		SELECT string_agg(substr('0123456789ABCDEFGHJKMNPQRSTVWXYZ',
			((v::bigint >> (5 * (12 - i))) & 31)::int + 1, 1), '' ORDER BY i)
		FROM generate_series(0, 12) i)) AS base32_is_5_bit_groups,
	bool_and(flakeid_format(v, 'base62') = (
		SELECT string_agg(substr('0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz',
			(mod(div(v::bigint::numeric, 62::numeric ^ (10 - i)), 62))::int + 1, 1), '' ORDER BY i)
		FROM generate_series(0, 10) i)) AS base62_is_positional
FROM vals;

-- base32 input follows Crockford: any case, I and L read as 1, O as 0
SELECT bool_and(flakeid_parse(lower(flakeid_format(v, 'base32')), 'base32') = v) AS lower_case,
	bool_and(flakeid_parse(translate(flakeid_format(v, 'base32'), '10', 'IO'), 'base32') = v) AS i_and_o,
	bool_and(flakeid_parse(translate(flakeid_format(v, 'base32'), '10', 'lo'), 'base32') = v) AS l_and_o
FROM vals;
SELECT flakeid_parse('0000000000OIL', 'base32'), flakeid_parse('0000000000oil', 'base32');
-- hex input in either case
SELECT bool_and(flakeid_parse(upper(flakeid_format(v, 'hex')), 'hex') = v) AS upper_hex FROM vals;
-- base62 is case-sensitive: a and A are different digits
SELECT flakeid_parse('0000000000a', 'base62'), flakeid_parse('0000000000A', 'base62');
-- format names are case-insensitive, like encode()'s
SELECT flakeid_format(255, 'HEX'), flakeid_parse('00000000000000FF', 'Hex');

-- bigint values and literals meet the flakeid argument
SELECT flakeid_format(1234567890123456789::bigint, 'base62'), flakeid_format('42', 'hex');
SELECT flakeid_format((-1)::bigint, 'hex');
-- NULL in, NULL out
SELECT flakeid_format(NULL, 'hex') IS NULL, flakeid_format(1, NULL) IS NULL,
	flakeid_parse(NULL, 'hex') IS NULL, flakeid_parse('0000000000000001', NULL) IS NULL;

-- generated IDs: short, sortable keys
CREATE TEMP TABLE gen AS SELECT row_number() OVER () AS i, id FROM nextflakes(5000) AS id;
SELECT bool_and(flakeid_parse(flakeid_format(id, 'base32'), 'base32') = id) AS round_trip,
	array_agg(i ORDER BY flakeid_format(id, 'base32') COLLATE "C") = array_agg(i ORDER BY i) AS base32_order,
	array_agg(i ORDER BY flakeid_format(id, 'base62') COLLATE "C") = array_agg(i ORDER BY i) AS base62_order
FROM gen;

-- IMMUTABLE: usable in a generated column and an expression index
CREATE TABLE short_keys (id flakeid PRIMARY KEY DEFAULT nextflake(),
	key text COLLATE "C" GENERATED ALWAYS AS (flakeid_format(id, 'base32')) STORED);
CREATE INDEX short_keys_b62 ON short_keys (flakeid_format(id, 'base62'));
INSERT INTO short_keys DEFAULT VALUES;
INSERT INTO short_keys DEFAULT VALUES;
SELECT count(*) AS found FROM short_keys s
WHERE flakeid_format(id, 'base62') = (SELECT flakeid_format(id, 'base62') FROM short_keys WHERE key = s.key);
SELECT bool_and(flakeid_parse(key, 'base32') = id) FROM short_keys;
DROP TABLE short_keys;

-- the catalog says IMMUTABLE STRICT PARALLEL SAFE
SELECT oid::regprocedure, provolatile, proparallel, proisstrict
FROM pg_proc WHERE proname IN ('flakeid_format', 'flakeid_parse') ORDER BY proname;

-- bad input, one per line: 22P02 for bad text, 22003 for out of range,
-- 22023 for an unknown format
SELECT flakeid_parse('', 'base32');
SELECT flakeid_parse('000000000000', 'base32');
SELECT flakeid_parse('00000000000000', 'base32');
SELECT flakeid_parse(' 000000000001', 'base32');
SELECT flakeid_parse('000000000001 ', 'base32');
SELECT flakeid_parse('000000000000U', 'base32');
SELECT flakeid_parse('00000-0000000', 'base32');
SELECT flakeid_parse('000000000000*', 'base32');
-- the width is counted in characters: 12 characters are too few, 13 with
-- one that is not a digit name that character
SELECT flakeid_parse(E'00000000000\u00e9', 'base32');
SELECT flakeid_parse(E'000000000000\u00e9', 'base32');
SELECT flakeid_parse(E'000000000\u00e90', 'base62');
-- a long input is quoted by its first 40 characters only
SELECT flakeid_parse(repeat('0', 1024 * 1024), 'base32');
SELECT flakeid_parse(repeat(E'\u00e9', 1000), 'hex');
SELECT flakeid_format(1, repeat('base', 1000));
SELECT flakeid_parse('8000000000000', 'base32');
SELECT flakeid_parse('ZZZZZZZZZZZZZ', 'base32');
SELECT flakeid_parse('0000000000', 'base62');
SELECT flakeid_parse('000000000000', 'base62');
SELECT flakeid_parse('0000000000-', 'base62');
SELECT flakeid_parse('0000000000_', 'base62');
SELECT flakeid_parse('AzL8n0Y58m8', 'base62');
SELECT flakeid_parse('zzzzzzzzzzz', 'base62');
SELECT flakeid_parse('123', 'hex');
SELECT flakeid_parse('00000000000000001', 'hex');
SELECT flakeid_parse('000000000000000g', 'hex');
SELECT flakeid_parse('0x00000000000001', 'hex');
SELECT flakeid_parse('-000000000000001', 'hex');
SELECT flakeid_parse('8000000000000000', 'hex');
SELECT flakeid_parse('ffffffffffffffff', 'hex');
SELECT flakeid_parse('0000000000000000', 'base64');
SELECT flakeid_parse('0000000000000000', '');
SELECT flakeid_parse('0000000000000', ' base32');
SELECT flakeid_format(1, 'base64');
SELECT flakeid_format(1, 'decimal');

-- errors carry the SQLSTATE
DO $$
DECLARE
	t text[];
BEGIN
	FOREACH t SLICE 1 IN ARRAY ARRAY[['x', 'base32'], ['UUUUUUUUUUUUU', 'base32'],
		['8000000000000', 'base32'], ['!!!!!!!!!!!', 'base62'],
		['zzzzzzzzzzz', 'base62'], ['ffffffffffffffff', 'hex'],
		['0000000000000000', 'hex16'], [repeat('0', 1024 * 1024), 'hex']] LOOP
		BEGIN
			PERFORM flakeid_parse(t[1], t[2]);
			RAISE NOTICE '% % -> accepted', left(quote_literal(t[1]), 20), t[2];
		EXCEPTION WHEN OTHERS THEN
			RAISE NOTICE '% % -> %', left(quote_literal(t[1]), 20), t[2], SQLSTATE;
		END;
	END LOOP;
END $$;
