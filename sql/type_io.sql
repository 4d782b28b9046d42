-- Text and binary I/O of the flakeid type.

-- valid input: what bigint accepts for non-negative values
SELECT '0'::flakeid, '1'::flakeid, '  42  '::flakeid, '+7'::flakeid, '-0'::flakeid;
SELECT '9223372036854775807'::flakeid AS max, '007'::flakeid AS leading_zeros;
SELECT E'\t\n 123 \r\n'::flakeid AS surrounded_by_white_space;

-- every accepted text gives what bigint gives
SELECT t, t::flakeid::text = t::bigint::text AS same_as_bigint
FROM (VALUES ('0'), ('+1'), (' 99 '), ('0000000000000000000001'),
	('9223372036854775807'), ('-0')) v(t);

-- bad input, one per line: 22P02 for bad text, 22003 for out of range
SELECT ''::flakeid;
SELECT ' '::flakeid;
SELECT 'abc'::flakeid;
SELECT '12abc'::flakeid;
SELECT '1.5'::flakeid;
SELECT '1e3'::flakeid;
SELECT '+'::flakeid;
SELECT '-'::flakeid;
SELECT '--1'::flakeid;
SELECT '+-1'::flakeid;
SELECT '1 2'::flakeid;
SELECT 'NaN'::flakeid;
SELECT 'Infinity'::flakeid;
SELECT '-1'::flakeid;
SELECT '-9223372036854775808'::flakeid;
SELECT '9223372036854775808'::flakeid;
SELECT '99999999999999999999999'::flakeid;
SELECT E'\u0661\u0662'::flakeid;  -- Arabic-Indic digits
SELECT E'\uFF11'::flakeid;        -- fullwidth digit one
SELECT E'\u00A01'::flakeid;       -- no-break space is not white space

-- errors carry the SQLSTATE
DO $$
DECLARE
	t text;
BEGIN
	FOREACH t IN ARRAY ARRAY['x', '-5', '18446744073709551616', '',
		repeat('9', 1024 * 1024), repeat('0', 1024 * 1024) || 'x'] LOOP
		BEGIN
			PERFORM t::flakeid;
		EXCEPTION WHEN OTHERS THEN
			RAISE NOTICE '% -> %', left(quote_literal(t), 30), SQLSTATE;
		END;
	END LOOP;
END $$;

-- the message quotes a long input by its first 40 characters only
SELECT (repeat('9', 1024 * 1024))::flakeid;
SELECT (repeat(E'\u00e9', 1000))::flakeid;
SELECT ('-' || repeat('1', 100))::flakeid;

-- a megabyte of leading zeros is still a valid value
SELECT (repeat('0', 1024 * 1024) || '5')::flakeid;

-- output is decimal text
SELECT 1234567890123456789::flakeid::text;
SELECT pg_column_size(1::flakeid) AS bytes,
	typbyval, typlen, typalign
FROM pg_type WHERE typname = 'flakeid';

-- binary send is int8's wire format
SELECT flakeid_send(1234567890123456789::flakeid) = int8send(1234567890123456789);

-- binary COPY out and back in gives identical rows; through a file that
-- psql writes (COPY TO STDOUT, FROM STDIN), in the test's output
-- directory, as the server may run as another user that cannot write there
\getenv abs_builddir PG_ABS_BUILDDIR
\cd :abs_builddir
CREATE TABLE io_src (id flakeid, note text);
INSERT INTO io_src VALUES (0, 'zero'), (1, 'one'), (9223372036854775807, 'max'),
	(1234567890123456789, 'big'), (NULL, 'null');
\copy io_src TO 'results/type_io.bin' WITH (FORMAT binary)
CREATE TABLE io_dst (LIKE io_src);
\copy io_dst FROM 'results/type_io.bin' WITH (FORMAT binary)
SELECT count(*) AS rows, count(*) FILTER (WHERE d.id IS NOT DISTINCT FROM s.id) AS identical
FROM io_src s JOIN io_dst d USING (note);

-- a negative value in binary input is refused
CREATE TABLE io_neg (id bigint, note text);
INSERT INTO io_neg VALUES (-5, 'negative');
\copy io_neg TO 'results/type_io.bin' WITH (FORMAT binary)
\copy io_dst FROM 'results/type_io.bin' WITH (FORMAT binary)

-- text COPY round trip
\copy io_src TO 'results/type_io.bin'
TRUNCATE io_dst;
\copy io_dst FROM 'results/type_io.bin'
SELECT count(*) FILTER (WHERE d.id IS NOT DISTINCT FROM s.id) AS identical
FROM io_src s JOIN io_dst d USING (note);

DROP TABLE io_src, io_dst, io_neg;
