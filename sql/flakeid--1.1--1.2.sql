/* flakeid--1.1--1.2.sql */

-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION flakeid UPDATE TO '1.2'" to load this file. \quit

-- Every name is schema-qualified: the script does not trust search_path.

--
-- flakeid_status() shows server-wide counters and the node id: for
-- monitoring roles, like pg_stat_activity's details, not for every role.
--
REVOKE ALL ON FUNCTION @extschema@.flakeid_status() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION @extschema@.flakeid_status() TO pg_monitor;

--
-- The copies of the time lease in the state file, as they are on disk.
--
CREATE FUNCTION @extschema@.flakeid_state_file(
	OUT "offset" pg_catalog.int4,
	OUT valid pg_catalog.bool,
	OUT version pg_catalog.int4,
	OUT serial pg_catalog.int8,
	OUT epoch pg_catalog.timestamptz,
	OUT node_bits pg_catalog.int4,
	OUT node_id pg_catalog.int4,
	OUT lease_end_ms pg_catalog.int8,
	OUT lease_end pg_catalog.timestamptz)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'flakeid_state_file'
LANGUAGE C VOLATILE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION @extschema@.flakeid_state_file() IS
'the copies of the time lease in the state file flakeid.state, as they are on disk';

REVOKE ALL ON FUNCTION @extschema@.flakeid_state_file() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION @extschema@.flakeid_state_file() TO pg_monitor;
