-- A trusted extension: a database owner who is not a superuser installs
-- and updates it from a migration's transaction.

SELECT name, version, superuser, trusted, relocatable
FROM pg_available_extension_versions WHERE name = 'flakeid' ORDER BY version;

SELECT current_user AS superuser_name \gset
CREATE ROLE regress_flake_owner LOGIN;
CREATE ROLE regress_flake_app LOGIN;
CREATE DATABASE regress_flake_migrations OWNER regress_flake_owner;

-- a role without CREATE on the database may not
\c regress_flake_migrations regress_flake_app
CREATE EXTENSION IF NOT EXISTS flakeid;

-- the database owner may, in a transaction block, as migration tools run
-- their steps; an earlier release's migration installed 1.0
\c - regress_flake_owner
SELECT rolsuper FROM pg_roles WHERE rolname = current_user;
BEGIN;
CREATE EXTENSION IF NOT EXISTS flakeid VERSION '1.0';
CREATE TABLE events (id flakeid PRIMARY KEY DEFAULT nextflake(), body text);
CREATE TABLE legacy (id bigint PRIMARY KEY DEFAULT nextflake(), body text);
COMMIT;
INSERT INTO events (body) SELECT 'e' || g FROM generate_series(1, 100) g;
INSERT INTO legacy (body) SELECT 'l' || g FROM generate_series(1, 100) g;
-- server-wide figures are pg_monitor's, whichever version is installed:
-- 1.0 and 1.1 grant EXECUTE on flakeid_status() to PUBLIC, and the function
-- refuses all the same
SELECT has_function_privilege('flakeid_status()', 'EXECUTE') AS may_execute_1_0;
SELECT state FROM flakeid_status();
BEGIN;
ALTER EXTENSION flakeid UPDATE TO '1.1';
COMMIT;
SELECT has_function_privilege('flakeid_status()', 'EXECUTE') AS may_execute_1_1;
SELECT state FROM flakeid_status();
-- this release's migration
BEGIN;
CREATE EXTENSION IF NOT EXISTS flakeid;
ALTER EXTENSION flakeid UPDATE;
COMMIT;
SELECT extversion, extowner::regrole::text = current_user AS owned_by_me
FROM pg_extension WHERE extname = 'flakeid';
SELECT state FROM flakeid_status();
SELECT count(*) FROM flakeid_state_file();
-- run again, it changes nothing
BEGIN;
CREATE EXTENSION IF NOT EXISTS flakeid;
ALTER EXTENSION flakeid UPDATE;
COMMIT;
-- a migration that fails rolls the extension back with it
BEGIN;
DROP TABLE events, legacy;
DROP EXTENSION flakeid;
SELECT 1 / 0;
ROLLBACK;
INSERT INTO events (body) SELECT 'e' || g FROM generate_series(101, 200) g;
SELECT count(*) AS rows, count(DISTINCT id) AS ids, bool_and(flakeid_node(id) = 42) AS node_42,
	bool_and(flakeid_parse(flakeid_format(id, 'base62'), 'base62') = id) AS round_trip
FROM events;
SELECT count(*) AS rows, count(DISTINCT id) AS ids, bool_and(flakeid_node(id) = 42) AS node_42
FROM legacy;

-- the extension belongs to the owner, its objects to the bootstrap
-- superuser, so the owner cannot change them
SELECT count(*) > 0 AS functions, bool_and(proowner <> current_user::regrole) AS not_mine
FROM pg_proc WHERE pronamespace = 'public'::regnamespace;
ALTER FUNCTION nextflake() VOLATILE;
-- accepting a changed layout stays with superusers
SELECT has_function_privilege('flakeid_accept_layout()', 'EXECUTE');
SELECT flakeid_accept_layout();
GRANT EXECUTE ON FUNCTION flakeid_accept_layout() TO regress_flake_owner;
SELECT has_function_privilege('flakeid_accept_layout()', 'EXECUTE');

-- other roles use the type and the functions
\c - regress_flake_app
SELECT flakeid_node(nextflake()) AS node, flakeid_format(0, 'hex');
SELECT flakeid_accept_layout();
SELECT state FROM flakeid_status();

-- a member of pg_monitor reads them, under 1.0 too
\c - :superuser_name
GRANT pg_monitor TO regress_flake_app;
\c - regress_flake_app
SELECT state, node_id FROM flakeid_status();
SELECT count(*) > 0 AS copies FROM flakeid_state_file();
\c - regress_flake_owner
BEGIN;
DROP TABLE events, legacy;
DROP EXTENSION flakeid;
CREATE EXTENSION flakeid VERSION '1.0';
COMMIT;
SELECT state FROM flakeid_status();
\c - regress_flake_app
SELECT state, node_id FROM flakeid_status();

\c regression :superuser_name
DROP DATABASE regress_flake_migrations;
DROP ROLE regress_flake_owner;
DROP ROLE regress_flake_app;
