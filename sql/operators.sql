-- Comparison operators, each against bigint's answer.
CREATE TEMP TABLE pairs AS
SELECT a, b FROM
	(VALUES (0), (1), (2), (4096), (1234567890123456789), (9223372036854775807)) x(a),
	(VALUES (0), (1), (2), (4096), (1234567890123456789), (9223372036854775807)) y(b);

SELECT count(*) AS pairs,
	count(*) FILTER (WHERE (a::flakeid = b::flakeid) = (a::bigint = b::bigint)) AS eq,
	count(*) FILTER (WHERE (a::flakeid <> b::flakeid) = (a::bigint <> b::bigint)) AS ne,
	count(*) FILTER (WHERE (a::flakeid < b::flakeid) = (a::bigint < b::bigint)) AS lt,
	count(*) FILTER (WHERE (a::flakeid <= b::flakeid) = (a::bigint <= b::bigint)) AS le,
	count(*) FILTER (WHERE (a::flakeid > b::flakeid) = (a::bigint > b::bigint)) AS gt,
	count(*) FILTER (WHERE (a::flakeid >= b::flakeid) = (a::bigint >= b::bigint)) AS ge,
	count(*) FILTER (WHERE sign(flakeid_cmp(a::flakeid, b::flakeid)) = sign(btint8cmp(a, b))) AS cmp
FROM pairs;

SELECT 5::flakeid = 5::flakeid, 5::flakeid <> 6::flakeid, NULL::flakeid = 5::flakeid;

-- operators carry commutators, negators and estimators
SELECT o.oprname, c.oprname AS commutator, n.oprname AS negator,
	o.oprrest, o.oprjoin, o.oprcanhash, o.oprcanmerge
FROM pg_operator o
	LEFT JOIN pg_operator c ON c.oid = o.oprcom
	LEFT JOIN pg_operator n ON n.oid = o.oprnegate
WHERE o.oprleft = 'flakeid'::regtype AND o.oprright = 'flakeid'::regtype
ORDER BY o.oprname;

-- sorting, grouping, DISTINCT, min and max
SELECT array_agg(x ORDER BY x) FROM unnest('{5,3,9223372036854775807,0,3}'::flakeid[]) x;
SELECT array_agg(x ORDER BY x DESC) FROM unnest('{5,3,9223372036854775807,0,3}'::flakeid[]) x;
SELECT count(DISTINCT x) FROM unnest('{5,3,9223372036854775807,0,3}'::flakeid[]) x;
SELECT x, count(*) FROM unnest('{5,3,5,0,3,3}'::flakeid[]) x GROUP BY x ORDER BY x;
SELECT greatest(1::flakeid, 7::flakeid, 3::flakeid), least(4::flakeid, 2::flakeid);
SELECT min(x), max(x) FROM unnest('{5,3,9223372036854775807,0,3}'::flakeid[]) x;
SELECT min(x), max(x) FROM unnest('{}'::flakeid[]) x;
