-- COPY's ON_ERROR option and SQL/JSON's ON ERROR clauses, PostgreSQL 17 and
-- later: bad flakeid text is a soft input error, so they skip the row or
-- take the default instead of failing.  Earlier versions have neither: the
-- test stops here (expected/on_error_1.out).
SELECT current_setting('server_version_num')::int < 170000 AS before_17 \gset
\if :before_17
\quit
\endif

CREATE TABLE soft_copy (id flakeid, note text);

-- without ON_ERROR, a bad value stops the COPY and nothing is loaded
COPY soft_copy FROM STDIN;
1	good
12x	bad text
\.
SELECT count(*) AS loaded FROM soft_copy;

-- with ON_ERROR ignore, the rows with bad values are skipped, the others
-- loaded
COPY soft_copy FROM STDIN WITH (ON_ERROR ignore);
1	one
12x	bad text
-1	negative
9223372036854775808	above the largest
 	blank
9223372036854775807	the largest
\N	null
\.
SELECT id, note FROM soft_copy ORDER BY id NULLS LAST;

-- CSV as well
TRUNCATE soft_copy;
COPY soft_copy FROM STDIN WITH (FORMAT csv, ON_ERROR ignore);
2,two
0x,bad text
-5,negative
" 3 ",three
\.
SELECT id, note FROM soft_copy ORDER BY id;
DROP TABLE soft_copy;

-- SQL/JSON: NULL ON ERROR (the default) and DEFAULT ON ERROR
SELECT JSON_VALUE(jsonb '"12x"', '$' RETURNING flakeid) AS bad_text,
	JSON_VALUE(jsonb '-1', '$' RETURNING flakeid DEFAULT 0 ON ERROR) AS negative,
	JSON_VALUE(jsonb '"912137223447539712"', '$' RETURNING flakeid) AS good;
SELECT n, id, id IS NULL AS is_null
FROM JSON_TABLE(jsonb '["1", "x", -2, 3]', '$[*]'
	COLUMNS (n FOR ORDINALITY, id flakeid PATH '$'));
-- ERROR ON ERROR gives flakeid's error
SELECT JSON_VALUE(jsonb '"12x"', '$' RETURNING flakeid ERROR ON ERROR);
