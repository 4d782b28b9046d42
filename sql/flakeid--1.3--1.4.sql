/* flakeid--1.3--1.4.sql */

-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION flakeid UPDATE TO '1.4'" to load this file. \quit

--
-- A flakeid shown as an RFC 9562 version-7 UUID and back.  Like the
-- decode functions they depend only on the ID and the layout, which is
-- fixed for the life of a server, so they are IMMUTABLE.  No cast: the
-- UUID depends on the server's layout, and almost every UUID is not one
-- that flakeid_from_uuid() reads back.
--
CREATE FUNCTION @extschema@.flakeid_to_uuid(@extschema@.flakeid)
RETURNS pg_catalog.uuid
AS 'MODULE_PATHNAME', 'flakeid_to_uuid'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION @extschema@.flakeid_to_uuid(@extschema@.flakeid) IS
'the ID as a version-7 UUID: its Unix millisecond first, sorting as the IDs do';

CREATE FUNCTION @extschema@.flakeid_from_uuid(pg_catalog.uuid)
RETURNS @extschema@.flakeid
AS 'MODULE_PATHNAME', 'flakeid_from_uuid'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION @extschema@.flakeid_from_uuid(pg_catalog.uuid) IS
'the ID of a UUID that flakeid_to_uuid() made; any other UUID is an error';
