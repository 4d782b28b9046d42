/* flakeid--1.0--1.1.sql */

-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION flakeid UPDATE TO '1.1'" to load this file. \quit

-- Every name is schema-qualified: the script does not trust search_path.

--
-- Compact text forms: fixed-width base32 (Crockford), base62 and hex.
-- Sorting the strings with COLLATE "C" sorts the IDs.
--
CREATE FUNCTION @extschema@.flakeid_format(id @extschema@.flakeid, fmt pg_catalog.text)
RETURNS pg_catalog.text
AS 'MODULE_PATHNAME', 'flakeid_format'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION @extschema@.flakeid_format(@extschema@.flakeid, pg_catalog.text) IS
'the ID as fixed-width text in format ''base32'', ''base62'' or ''hex''';

CREATE FUNCTION @extschema@.flakeid_parse(txt pg_catalog.text, fmt pg_catalog.text)
RETURNS @extschema@.flakeid
AS 'MODULE_PATHNAME', 'flakeid_parse'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION @extschema@.flakeid_parse(pg_catalog.text, pg_catalog.text) IS
'the ID that flakeid_format() text spells, in format ''base32'', ''base62'' or ''hex''';
