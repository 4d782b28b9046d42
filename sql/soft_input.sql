-- Soft input errors, PostgreSQL 16 and later: where the caller asks for
-- them, bad text is reported through its error-saving context, with
-- flakeid's own SQLSTATE and message, instead of thrown.  PostgreSQL 15 has
-- no such caller: the test stops here (expected/soft_input_1.out), and
-- type_io tests the errors it throws.
SELECT current_setting('server_version_num')::int < 160000 AS before_16 \gset
\if :before_16
\quit
\endif

CREATE TEMP TABLE soft_texts (t text);
INSERT INTO soft_texts VALUES ('0'), ('  42  '), ('+7'), ('9223372036854775807'),
	('0x10'), ('1_000'), ('12x'), (''), (' '), ('1.5'), ('-1'),
	('-9223372036854775808'), ('9223372036854775808'),
	('99999999999999999999999'), (E'\uFF11');

-- valid is what the text input accepts; the rest is invalid, not an error
SELECT quote_literal(t) AS t, pg_input_is_valid(t, 'flakeid') AS valid
FROM soft_texts;

-- a soft error is the error that the cast throws: same SQLSTATE and message
CREATE FUNCTION soft_is_thrown(t text) RETURNS boolean LANGUAGE plpgsql AS $$
DECLARE
	soft record;
BEGIN
	SELECT * INTO soft FROM pg_input_error_info(t, 'flakeid');
	BEGIN
		PERFORM t::flakeid;
		RETURN soft.sql_error_code IS NULL;
	EXCEPTION WHEN OTHERS THEN
		RETURN soft.sql_error_code = SQLSTATE AND soft.message = SQLERRM;
	END;
END
$$;
SELECT count(*) AS texts, count(*) FILTER (WHERE soft_is_thrown(t)) AS same
FROM soft_texts;
SELECT pg_input_is_valid(repeat('9', 1024 * 1024), 'flakeid') AS huge,
	pg_input_is_valid(repeat('0', 1024 * 1024) || 'x', 'flakeid') AS zeros_then_x;

-- the SQLSTATE, message and detail are flakeid's: 22P02 for bad text,
-- 22003 out of range; nothing for a valid value
SELECT * FROM pg_input_error_info('12x', 'flakeid');
SELECT * FROM pg_input_error_info('', 'flakeid');
SELECT * FROM pg_input_error_info('1e3', 'flakeid');
SELECT * FROM pg_input_error_info('-1', 'flakeid');
SELECT * FROM pg_input_error_info('9223372036854775808', 'flakeid');
SELECT * FROM pg_input_error_info('-99999999999999999999999', 'flakeid');
SELECT * FROM pg_input_error_info('42', 'flakeid');

-- the same through arrays, records and domains of flakeid
SELECT pg_input_is_valid('{1,2,3}', 'flakeid[]') AS good_array,
	pg_input_is_valid('{1,x,3}', 'flakeid[]') AS bad_array;
SELECT * FROM pg_input_error_info('{1,-2}', 'flakeid[]');
CREATE TYPE soft_pair AS (a flakeid, b flakeid);
SELECT pg_input_is_valid('(1,2)', 'soft_pair') AS good_record,
	pg_input_is_valid('(1,2x)', 'soft_pair') AS bad_record;
SELECT * FROM pg_input_error_info('(1,2x)', 'soft_pair');
CREATE DOMAIN soft_positive AS flakeid CHECK (VALUE > 0);
SELECT pg_input_is_valid('5', 'soft_positive') AS good,
	pg_input_is_valid('x', 'soft_positive') AS bad_text,
	pg_input_is_valid('0', 'soft_positive') AS fails_check;
SELECT * FROM pg_input_error_info('x', 'soft_positive');

-- where no one asks for a soft error, bad text is still thrown
SELECT '12x'::flakeid;
SELECT '-1'::flakeid;

DROP DOMAIN soft_positive;
DROP TYPE soft_pair;
DROP FUNCTION soft_is_thrown(text);
