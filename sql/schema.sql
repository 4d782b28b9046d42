-- Installing into a schema of its own, and dropping without a trace.

SET client_min_messages = warning;
DROP EXTENSION flakeid CASCADE;
RESET client_min_messages;

-- the catalogs without flakeid
SELECT
	(SELECT count(*) FROM pg_type) AS types,
	(SELECT count(*) FROM pg_proc) AS procs,
	(SELECT count(*) FROM pg_operator) AS operators,
	(SELECT count(*) FROM pg_opclass) AS opclasses,
	(SELECT count(*) FROM pg_opfamily) AS opfamilies,
	(SELECT count(*) FROM pg_amop) AS amops,
	(SELECT count(*) FROM pg_amproc) AS amprocs,
	(SELECT count(*) FROM pg_cast) AS casts,
	(SELECT count(*) FROM pg_aggregate) AS aggregates,
	(SELECT count(*) FROM pg_namespace) AS namespaces,
	(SELECT count(*) FROM pg_class) AS relations,
	(SELECT count(*) FROM pg_depend) AS depends,
	(SELECT count(*) FROM pg_description) AS descriptions,
	(SELECT count(*) FROM pg_init_privs) AS init_privs
\gset before_

CREATE SCHEMA ids;
CREATE EXTENSION flakeid SCHEMA ids;
SELECT extnamespace::regnamespace AS schema, extversion FROM pg_extension
WHERE extname = 'flakeid';
-- every object of the extension is in ids (casts belong to no schema)
SELECT (pg_identify_object(classid, objid, objsubid)).type AS kind,
	bool_and(coalesce((pg_identify_object(classid, objid, objsubid)).schema, 'ids') = 'ids') AS in_ids
FROM pg_depend
WHERE refclassid = 'pg_extension'::regclass AND deptype = 'e'
	AND refobjid = (SELECT oid FROM pg_extension WHERE extname = 'flakeid')
GROUP BY 1 ORDER BY 1;
-- not relocatable: it stays where it was installed
ALTER EXTENSION flakeid SET SCHEMA public;

-- ids is not on the search_path
SHOW search_path;
-- PostgreSQL 19 words the hints of a missing function or operator differently
\set VERBOSITY terse
SELECT nextflake();
\set VERBOSITY default
CREATE TABLE s_events (id ids.flakeid PRIMARY KEY DEFAULT ids.nextflake(), n int);
CREATE TABLE s_legacy (id bigint PRIMARY KEY DEFAULT ids.nextflake(), n int);
CREATE INDEX s_events_hash ON s_events USING hash (id);
CREATE INDEX s_events_brin ON s_events USING brin (id);
INSERT INTO s_events (n) SELECT g FROM generate_series(1, 500) g;
INSERT INTO s_legacy (n) SELECT g FROM generate_series(1, 500) g;
-- not even with an empty search_path
SET search_path = '';
INSERT INTO public.s_events (n) SELECT g FROM generate_series(501, 1000) g;
INSERT INTO public.s_legacy (n) SELECT g FROM generate_series(501, 1000) g;
RESET search_path;
SELECT count(*) AS rows, count(DISTINCT id) AS ids,
	bool_and(ids.flakeid_node(id) = 42) AS node_42 FROM s_events;
SELECT count(*) AS rows, count(DISTINCT id) AS ids,
	bool_and(ids.flakeid_node(id) = 42) AS node_42 FROM s_legacy;
-- ORDER BY, DISTINCT, joins and the primary key find the operator classes
-- without the search_path
SELECT array_agg(n ORDER BY id) = array_agg(n ORDER BY n) AS insertion_order FROM s_events;
SELECT count(DISTINCT id) FROM s_events;
\set VERBOSITY terse
INSERT INTO s_events (id, n) SELECT id, 0 FROM s_events WHERE n = 1;
\set VERBOSITY default
-- operators and functions are looked up by name: qualify them, as for any
-- extension in a schema that is not on the search_path
\set VERBOSITY terse
SELECT count(*) FROM s_events WHERE id = 1;
SELECT count(*) FROM s_events WHERE id OPERATOR(ids.=) 1;
SELECT count(*) FROM s_events a JOIN s_events b USING (id);
\set VERBOSITY default
SELECT count(*) FROM s_events a JOIN s_events b ON a.id OPERATOR(ids.=) b.id;
SELECT count(*) FROM s_events WHERE id OPERATOR(ids.<) ids.flakeid_from_timestamp(now());
SELECT ids.flakeid_parse(ids.flakeid_format(id, 'base32'), 'base32') OPERATOR(ids.=) id AS round_trip
FROM s_events WHERE n = 1;
SELECT ids.max(id) OPERATOR(ids.=) (SELECT id FROM s_events ORDER BY id DESC LIMIT 1) AS max_ok FROM s_events;

-- DROP EXTENSION refuses while columns use the type
\set VERBOSITY terse
DROP EXTENSION flakeid;
\set VERBOSITY default
DROP TABLE s_events, s_legacy;
DROP EXTENSION flakeid;
-- the schema is empty again
DROP SCHEMA ids;

-- nothing is left behind: the catalogs are as they were
SELECT
	(SELECT count(*) FROM pg_type) = :before_types AS types,
	(SELECT count(*) FROM pg_proc) = :before_procs AS procs,
	(SELECT count(*) FROM pg_operator) = :before_operators AS operators,
	(SELECT count(*) FROM pg_opclass) = :before_opclasses AS opclasses,
	(SELECT count(*) FROM pg_opfamily) = :before_opfamilies AS opfamilies,
	(SELECT count(*) FROM pg_amop) = :before_amops AS amops,
	(SELECT count(*) FROM pg_amproc) = :before_amprocs AS amprocs;
SELECT
	(SELECT count(*) FROM pg_cast) = :before_casts AS casts,
	(SELECT count(*) FROM pg_aggregate) = :before_aggregates AS aggregates,
	(SELECT count(*) FROM pg_namespace) = :before_namespaces AS namespaces,
	(SELECT count(*) FROM pg_class) = :before_relations AS relations,
	(SELECT count(*) FROM pg_depend) = :before_depends AS depends,
	(SELECT count(*) FROM pg_description) = :before_descriptions AS descriptions,
	(SELECT count(*) FROM pg_init_privs) = :before_init_privs AS init_privs;
SELECT count(*) AS flakeid_names FROM (
	SELECT proname FROM pg_proc UNION ALL SELECT typname FROM pg_type
	UNION ALL SELECT opcname FROM pg_opclass UNION ALL SELECT opfname FROM pg_opfamily
) names(name) WHERE name LIKE '%flake%';

-- back in the public schema for the tests that follow
CREATE EXTENSION flakeid;
SELECT extnamespace::regnamespace AS schema, extversion FROM pg_extension
WHERE extname = 'flakeid';
