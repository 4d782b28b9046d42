-- Casts and the interop the contract promises.

-- both ways with bigint
SELECT 1234::flakeid, 1234::flakeid::bigint, pg_typeof(1234::flakeid::bigint);
SELECT 1234567890123456789::bigint::flakeid;
SELECT (-1)::bigint::flakeid;
SELECT (-1)::flakeid;
SELECT CAST(42 AS flakeid), 42::integer::flakeid;

-- the casts and their contexts
SELECT castsource::regtype, casttarget::regtype, castcontext, castmethod
FROM pg_cast
WHERE castsource = 'flakeid'::regtype OR casttarget = 'flakeid'::regtype
ORDER BY 1::text, 2::text;

-- bigint literals, quoted literals and bigint values meet a flakeid column
CREATE TABLE t (id flakeid PRIMARY KEY, body text);
INSERT INTO t VALUES (1234567890123456789, 'bigint literal');
INSERT INTO t VALUES ('1234567890123456790', 'quoted literal');
INSERT INTO t VALUES (7, 'integer literal');
INSERT INTO t SELECT 99::bigint, 'bigint value';
SELECT body FROM t WHERE id = 1234567890123456789;
SELECT body FROM t WHERE id = '1234567890123456790';
SELECT body FROM t WHERE id = 7;
SELECT body FROM t WHERE id IN (99, 7) ORDER BY id;
SELECT body FROM t WHERE id = 99::bigint;
PREPARE by_id(bigint) AS SELECT body FROM t WHERE id = $1;
EXECUTE by_id(1234567890123456789);
PREPARE by_text(text) AS SELECT body FROM t WHERE id = $1::flakeid;
EXECUTE by_text('99');
-- the comparison stays an index condition
SET enable_seqscan = off;
EXPLAIN (COSTS OFF) SELECT body FROM t WHERE id = 1234567890123456789;
EXPLAIN (COSTS OFF) SELECT body FROM t WHERE id = '1234567890123456789';
RESET enable_seqscan;

-- flakeid values into bigint columns, and joins with bigint columns
CREATE TABLE b (id bigint, body text);
INSERT INTO b SELECT id, body FROM t;
SELECT count(*) FROM t JOIN b ON t.id = b.id;
SELECT t.id = b.id::flakeid AS same FROM t JOIN b USING (body) ORDER BY t.id LIMIT 1;

-- arithmetic is bigint's: cast explicitly
-- PostgreSQL 19 words the hint of a missing operator differently
\set VERBOSITY terse
SELECT 7::flakeid + 1;
\set VERBOSITY default
SELECT 7::flakeid::bigint + 1;

-- JSON: a string, so JavaScript's 53-bit numbers never round it
SELECT to_json(1234567890123456789::flakeid);
SELECT row_to_json(t) FROM t WHERE id = 1234567890123456789;
SELECT json_build_object('id', 9223372036854775807::flakeid);
SELECT jsonb_build_object('id', 9223372036854775807::flakeid);
SELECT json_typeof(to_json(1::flakeid));
SELECT to_json(1234567890123456789::flakeid)::text::json #>> '{}' = '1234567890123456789' AS exact;

-- arrays
SELECT '{1,2,3}'::flakeid[], ARRAY[1, 2]::flakeid[];
DROP TABLE t, b;
