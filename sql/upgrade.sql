-- Updating 1.0 to 1.1 and on to the default version gives exactly what a
-- fresh install of the default version gives.

-- An access privilege list, with the bootstrap superuser (whose name
-- depends on who runs the tests) spelt SUPERUSER.
CREATE FUNCTION pg_temp.acl(a aclitem[]) RETURNS text
LANGUAGE sql AS $$
	SELECT regexp_replace(a::text,
		'(^|[{,/])' || (SELECT rolname FROM pg_catalog.pg_roles WHERE oid = 10) || '(?=[=,}])',
		'\1SUPERUSER', 'g')
$$;

-- One line per property of every object of the extension: members, and
-- for each kind the properties a script could get wrong.
CREATE FUNCTION pg_temp.flakeid_objects() RETURNS SETOF text
LANGUAGE sql AS $$
	WITH members AS (
		SELECT d.classid, d.objid, d.objsubid
		FROM pg_catalog.pg_depend d
		JOIN pg_catalog.pg_extension e ON d.refobjid = e.oid
		WHERE d.refclassid = 'pg_catalog.pg_extension'::pg_catalog.regclass
			AND d.deptype = 'e' AND e.extname = 'flakeid'
	), families AS (
		SELECT c.opcfamily AS oid
		FROM members m JOIN pg_catalog.pg_opclass c ON c.oid = m.objid
		WHERE m.classid = 'pg_catalog.pg_opclass'::pg_catalog.regclass
	)
	SELECT format('extension: version %s, schema %s, relocatable %s, config %s',
		extversion, extnamespace::regnamespace, extrelocatable, extconfig)
	FROM pg_catalog.pg_extension WHERE extname = 'flakeid'
	UNION ALL
	SELECT format('member: %s; comment %s', pg_describe_object(m.classid, m.objid, m.objsubid),
		quote_nullable(ds.description))
	FROM members m
	LEFT JOIN pg_catalog.pg_description ds
		ON ds.classoid = m.classid AND ds.objoid = m.objid AND ds.objsubid = m.objsubid
	UNION ALL
	SELECT format('function: %s(%s) returns %s%s; kind %s, language %s, volatility %s, '
		'parallel %s, strict %s, leakproof %s, security definer %s, cost %s, rows %s, '
		'source %s, library %s, config %s, acl %s',
		p.oid::regproc, pg_get_function_arguments(p.oid),
		CASE WHEN p.proretset THEN 'setof ' ELSE '' END, p.prorettype::regtype,
		p.prokind, l.lanname, p.provolatile, p.proparallel, p.proisstrict, p.proleakproof,
		p.prosecdef, p.procost, p.prorows,
		-- a function body of its own, by its digest
		CASE WHEN l.lanname IN ('c', 'internal') THEN p.prosrc ELSE 'md5 ' || md5(p.prosrc) END,
		p.probin, p.proconfig, pg_temp.acl(p.proacl))
	FROM members m
	JOIN pg_catalog.pg_proc p ON p.oid = m.objid
	JOIN pg_catalog.pg_language l ON l.oid = p.prolang
	WHERE m.classid = 'pg_catalog.pg_proc'::pg_catalog.regclass
	UNION ALL
	SELECT format('aggregate: %s; transition %s, combine %s, final %s, sort operator %s, state %s',
		a.aggfnoid::regprocedure, a.aggtransfn, a.aggcombinefn, a.aggfinalfn,
		a.aggsortop::regoperator, a.aggtranstype::regtype)
	FROM members m
	JOIN pg_catalog.pg_aggregate a ON a.aggfnoid = m.objid
	WHERE m.classid = 'pg_catalog.pg_proc'::pg_catalog.regclass
	UNION ALL
	SELECT format('type: %s; length %s, by value %s, align %s, storage %s, category %s, '
		'input %s, output %s, receive %s, send %s, array %s, acl %s',
		t.oid::regtype, t.typlen, t.typbyval, t.typalign, t.typstorage, t.typcategory,
		t.typinput, t.typoutput, t.typreceive, t.typsend, t.typarray::regtype, pg_temp.acl(t.typacl))
	FROM members m
	JOIN pg_catalog.pg_type t ON t.oid = m.objid
	WHERE m.classid = 'pg_catalog.pg_type'::pg_catalog.regclass
	UNION ALL
	SELECT format('operator: %s; function %s, commutator %s, negator %s, restrict %s, '
		'join %s, merges %s, hashes %s',
		o.oid::regoperator, o.oprcode, o.oprcom::regoperator, o.oprnegate::regoperator,
		o.oprrest, o.oprjoin, o.oprcanmerge, o.oprcanhash)
	FROM members m
	JOIN pg_catalog.pg_operator o ON o.oid = m.objid
	WHERE m.classid = 'pg_catalog.pg_operator'::pg_catalog.regclass
	UNION ALL
	SELECT format('cast: %s -> %s; function %s, context %s, method %s',
		c.castsource::regtype, c.casttarget::regtype, c.castfunc::regprocedure,
		c.castcontext, c.castmethod)
	FROM members m
	JOIN pg_catalog.pg_cast c ON c.oid = m.objid
	WHERE m.classid = 'pg_catalog.pg_cast'::pg_catalog.regclass
	UNION ALL
	SELECT format('operator class: %s %s; default %s, family %s, type %s, key %s',
		am.amname, c.opcname, c.opcdefault, f.opfname, c.opcintype::regtype,
		c.opckeytype::regtype)
	FROM members m
	JOIN pg_catalog.pg_opclass c ON c.oid = m.objid
	JOIN pg_catalog.pg_opfamily f ON f.oid = c.opcfamily
	JOIN pg_catalog.pg_am am ON am.oid = c.opcmethod
	WHERE m.classid = 'pg_catalog.pg_opclass'::pg_catalog.regclass
	UNION ALL
	SELECT format('family operator: %s %s (%s, %s) strategy %s: %s, purpose %s, sort family %s',
		am.amname, f.opfname, ao.amoplefttype::regtype, ao.amoprighttype::regtype,
		ao.amopstrategy, ao.amopopr::regoperator, ao.amoppurpose, ao.amopsortfamily)
	FROM pg_catalog.pg_amop ao
	JOIN pg_catalog.pg_opfamily f ON f.oid = ao.amopfamily
	JOIN pg_catalog.pg_am am ON am.oid = f.opfmethod
	WHERE f.oid IN (SELECT oid FROM families)
	UNION ALL
	SELECT format('family function: %s %s (%s, %s) %s: %s',
		am.amname, f.opfname, ap.amproclefttype::regtype, ap.amprocrighttype::regtype,
		ap.amprocnum, ap.amproc::regprocedure)
	FROM pg_catalog.pg_amproc ap
	JOIN pg_catalog.pg_opfamily f ON f.oid = ap.amprocfamily
	JOIN pg_catalog.pg_am am ON am.oid = f.opfmethod
	WHERE f.oid IN (SELECT oid FROM families)
	UNION ALL
	SELECT format('initial privileges: %s %s',
		pg_describe_object(ip.classoid, ip.objoid, ip.objsubid), pg_temp.acl(ip.initprivs))
	FROM members m
	JOIN pg_catalog.pg_init_privs ip
		ON ip.classoid = m.classid AND ip.objoid = m.objid AND ip.objsubid = m.objsubid
$$;

-- the versions and the update path
SELECT * FROM pg_extension_update_paths('flakeid') ORDER BY source, target;

-- start again from 1.0
SET client_min_messages = warning;
DROP EXTENSION flakeid CASCADE;
RESET client_min_messages;
CREATE EXTENSION flakeid VERSION '1.0';
SELECT extversion FROM pg_extension WHERE extname = 'flakeid';
CREATE TEMP TABLE objects_1_0 AS SELECT o FROM pg_temp.flakeid_objects() o;
-- 1.0 has no compact text forms
-- PostgreSQL 19 words the hint of a missing function differently
\set VERBOSITY terse
SELECT flakeid_format(1, 'hex');
\set VERBOSITY default

-- data made under 1.0 stays usable across the update
CREATE TABLE made_in_1_0 (id flakeid PRIMARY KEY DEFAULT nextflake(), n int);
CREATE INDEX made_in_1_0_hash ON made_in_1_0 USING hash (id);
INSERT INTO made_in_1_0 (n) SELECT g FROM generate_series(1, 1000) g;

ALTER EXTENSION flakeid UPDATE TO '1.1';
SELECT extversion FROM pg_extension WHERE extname = 'flakeid';
-- 1.1 shows flakeid_status() to every role
SELECT has_function_privilege('public', 'flakeid_status()', 'execute') AS status_public;
ALTER EXTENSION flakeid UPDATE;
SELECT extversion FROM pg_extension WHERE extname = 'flakeid';
SELECT has_function_privilege('public', 'flakeid_status()', 'execute') AS status_public,
	has_function_privilege('pg_monitor', 'flakeid_status()', 'execute') AS status_monitor;
CREATE TEMP TABLE objects_updated AS SELECT o FROM pg_temp.flakeid_objects() o;

INSERT INTO made_in_1_0 (n) SELECT g FROM generate_series(1001, 2000) g;
SELECT count(*) AS rows, count(DISTINCT id) AS ids,
	bool_and(flakeid_parse(flakeid_format(id, 'base32'), 'base32') = id) AS round_trip
FROM made_in_1_0;
SELECT bool_and(id > prev) AS insertion_order
FROM (SELECT id, lag(id) OVER (ORDER BY n) AS prev FROM made_in_1_0) s
WHERE prev IS NOT NULL;
DROP TABLE made_in_1_0;

-- a fresh install of the default version
DROP EXTENSION flakeid;
CREATE EXTENSION flakeid;
SELECT extversion FROM pg_extension WHERE extname = 'flakeid';
CREATE TEMP TABLE objects_fresh AS SELECT o FROM pg_temp.flakeid_objects() o;

-- the description sees every kind of object
SELECT split_part(o, ':', 1) AS kind, count(*) > 0 AS described
FROM objects_fresh GROUP BY 1 ORDER BY 1;

-- what the updates added to 1.0, and what they changed: the version and
-- who may call flakeid_status()
SELECT o AS added FROM objects_updated EXCEPT SELECT o FROM objects_1_0 ORDER BY 1;
SELECT o AS removed FROM objects_1_0 EXCEPT SELECT o FROM objects_updated ORDER BY 1;

-- the updated extension and the fresh one are the same, line for line
SELECT o AS only_updated FROM objects_updated EXCEPT ALL SELECT o FROM objects_fresh;
SELECT o AS only_fresh FROM objects_fresh EXCEPT ALL SELECT o FROM objects_updated;
SELECT (SELECT count(*) FROM objects_updated) = (SELECT count(*) FROM objects_fresh) AS same_count;

DROP TABLE objects_1_0, objects_updated, objects_fresh;
