/* flakeid--1.0.sql */

-- complain if script is sourced in psql, rather than via CREATE EXTENSION
\echo Use "CREATE EXTENSION flakeid" to load this file. \quit

-- Every name is schema-qualified: the script does not trust search_path.

--
-- The type: an int8 that is never negative.  Output, send, comparison and
-- hashing are core's int8 functions.
--
CREATE TYPE @extschema@.flakeid;

CREATE FUNCTION @extschema@.flakeid_in(pg_catalog.cstring)
RETURNS @extschema@.flakeid
AS 'MODULE_PATHNAME', 'flakeid_in'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

CREATE FUNCTION @extschema@.flakeid_out(@extschema@.flakeid)
RETURNS pg_catalog.cstring
AS 'int8out'
LANGUAGE internal IMMUTABLE STRICT PARALLEL SAFE;

CREATE FUNCTION @extschema@.flakeid_recv(pg_catalog.internal)
RETURNS @extschema@.flakeid
AS 'MODULE_PATHNAME', 'flakeid_recv'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

CREATE FUNCTION @extschema@.flakeid_send(@extschema@.flakeid)
RETURNS pg_catalog.bytea
AS 'int8send'
LANGUAGE internal IMMUTABLE STRICT PARALLEL SAFE;

CREATE TYPE @extschema@.flakeid (
	INPUT = @extschema@.flakeid_in,
	OUTPUT = @extschema@.flakeid_out,
	RECEIVE = @extschema@.flakeid_recv,
	SEND = @extschema@.flakeid_send,
	LIKE = pg_catalog.int8
);

COMMENT ON TYPE @extschema@.flakeid IS
'64-bit k-ordered ID: milliseconds since flakeid.epoch, node id, sequence';

--
-- Casts.  flakeid -> bigint is binary and works on assignment, so that
-- "id bigint DEFAULT nextflake()" works.  bigint and integer -> flakeid are
-- implicit, so that literals, parameters and bigint values meet flakeid
-- columns and the decode functions without ambiguity.
--
CREATE FUNCTION @extschema@.flakeid(pg_catalog.int8)
RETURNS @extschema@.flakeid
AS 'MODULE_PATHNAME', 'flakeid_from_int8'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

CREATE FUNCTION @extschema@.flakeid(pg_catalog.int4)
RETURNS @extschema@.flakeid
AS 'MODULE_PATHNAME', 'flakeid_from_int4'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

CREATE CAST (@extschema@.flakeid AS pg_catalog.int8)
	WITHOUT FUNCTION AS ASSIGNMENT;
CREATE CAST (pg_catalog.int8 AS @extschema@.flakeid)
	WITH FUNCTION @extschema@.flakeid(pg_catalog.int8) AS IMPLICIT;
CREATE CAST (pg_catalog.int4 AS @extschema@.flakeid)
	WITH FUNCTION @extschema@.flakeid(pg_catalog.int4) AS IMPLICIT;

--
-- Operators.
--
CREATE FUNCTION @extschema@.flakeid_eq(@extschema@.flakeid, @extschema@.flakeid)
RETURNS pg_catalog.bool AS 'int8eq' LANGUAGE internal IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF;
CREATE FUNCTION @extschema@.flakeid_ne(@extschema@.flakeid, @extschema@.flakeid)
RETURNS pg_catalog.bool AS 'int8ne' LANGUAGE internal IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF;
CREATE FUNCTION @extschema@.flakeid_lt(@extschema@.flakeid, @extschema@.flakeid)
RETURNS pg_catalog.bool AS 'int8lt' LANGUAGE internal IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF;
CREATE FUNCTION @extschema@.flakeid_le(@extschema@.flakeid, @extschema@.flakeid)
RETURNS pg_catalog.bool AS 'int8le' LANGUAGE internal IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF;
CREATE FUNCTION @extschema@.flakeid_gt(@extschema@.flakeid, @extschema@.flakeid)
RETURNS pg_catalog.bool AS 'int8gt' LANGUAGE internal IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF;
CREATE FUNCTION @extschema@.flakeid_ge(@extschema@.flakeid, @extschema@.flakeid)
RETURNS pg_catalog.bool AS 'int8ge' LANGUAGE internal IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF;
CREATE FUNCTION @extschema@.flakeid_cmp(@extschema@.flakeid, @extschema@.flakeid)
RETURNS pg_catalog.int4 AS 'btint8cmp' LANGUAGE internal IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF;
CREATE FUNCTION @extschema@.flakeid_hash(@extschema@.flakeid)
RETURNS pg_catalog.int4 AS 'hashint8' LANGUAGE internal IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF;
CREATE FUNCTION @extschema@.flakeid_hash_extended(@extschema@.flakeid, pg_catalog.int8)
RETURNS pg_catalog.int8 AS 'hashint8extended' LANGUAGE internal IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF;

CREATE OPERATOR @extschema@.= (
	LEFTARG = @extschema@.flakeid, RIGHTARG = @extschema@.flakeid,
	FUNCTION = @extschema@.flakeid_eq,
	COMMUTATOR = OPERATOR(@extschema@.=), NEGATOR = OPERATOR(@extschema@.<>),
	RESTRICT = pg_catalog.eqsel, JOIN = pg_catalog.eqjoinsel,
	HASHES, MERGES
);
CREATE OPERATOR @extschema@.<> (
	LEFTARG = @extschema@.flakeid, RIGHTARG = @extschema@.flakeid,
	FUNCTION = @extschema@.flakeid_ne,
	COMMUTATOR = OPERATOR(@extschema@.<>), NEGATOR = OPERATOR(@extschema@.=),
	RESTRICT = pg_catalog.neqsel, JOIN = pg_catalog.neqjoinsel
);
CREATE OPERATOR @extschema@.< (
	LEFTARG = @extschema@.flakeid, RIGHTARG = @extschema@.flakeid,
	FUNCTION = @extschema@.flakeid_lt,
	COMMUTATOR = OPERATOR(@extschema@.>), NEGATOR = OPERATOR(@extschema@.>=),
	RESTRICT = pg_catalog.scalarltsel, JOIN = pg_catalog.scalarltjoinsel
);
CREATE OPERATOR @extschema@.<= (
	LEFTARG = @extschema@.flakeid, RIGHTARG = @extschema@.flakeid,
	FUNCTION = @extschema@.flakeid_le,
	COMMUTATOR = OPERATOR(@extschema@.>=), NEGATOR = OPERATOR(@extschema@.>),
	RESTRICT = pg_catalog.scalarlesel, JOIN = pg_catalog.scalarlejoinsel
);
CREATE OPERATOR @extschema@.> (
	LEFTARG = @extschema@.flakeid, RIGHTARG = @extschema@.flakeid,
	FUNCTION = @extschema@.flakeid_gt,
	COMMUTATOR = OPERATOR(@extschema@.<), NEGATOR = OPERATOR(@extschema@.<=),
	RESTRICT = pg_catalog.scalargtsel, JOIN = pg_catalog.scalargtjoinsel
);
CREATE OPERATOR @extschema@.>= (
	LEFTARG = @extschema@.flakeid, RIGHTARG = @extschema@.flakeid,
	FUNCTION = @extschema@.flakeid_ge,
	COMMUTATOR = OPERATOR(@extschema@.<=), NEGATOR = OPERATOR(@extschema@.<),
	RESTRICT = pg_catalog.scalargesel, JOIN = pg_catalog.scalargejoinsel
);

--
-- min() and max(), answered from a btree index when there is one.
--
CREATE FUNCTION @extschema@.flakeid_smaller(@extschema@.flakeid, @extschema@.flakeid)
RETURNS @extschema@.flakeid AS 'int8smaller' LANGUAGE internal IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION @extschema@.flakeid_larger(@extschema@.flakeid, @extschema@.flakeid)
RETURNS @extschema@.flakeid AS 'int8larger' LANGUAGE internal IMMUTABLE STRICT PARALLEL SAFE;

CREATE AGGREGATE @extschema@.min(@extschema@.flakeid) (
	SFUNC = @extschema@.flakeid_smaller,
	STYPE = @extschema@.flakeid,
	COMBINEFUNC = @extschema@.flakeid_smaller,
	SORTOP = OPERATOR(@extschema@.<),
	PARALLEL = SAFE
);
CREATE AGGREGATE @extschema@.max(@extschema@.flakeid) (
	SFUNC = @extschema@.flakeid_larger,
	STYPE = @extschema@.flakeid,
	COMBINEFUNC = @extschema@.flakeid_larger,
	SORTOP = OPERATOR(@extschema@.>),
	PARALLEL = SAFE
);

--
-- Index support: btree with sort support and deduplication, hash with the
-- extended hash (hash partitioning), BRIN minmax.
--
CREATE OPERATOR CLASS @extschema@.flakeid_ops
DEFAULT FOR TYPE @extschema@.flakeid USING btree AS
	OPERATOR 1 @extschema@.<,
	OPERATOR 2 @extschema@.<=,
	OPERATOR 3 @extschema@.=,
	OPERATOR 4 @extschema@.>=,
	OPERATOR 5 @extschema@.>,
	FUNCTION 1 @extschema@.flakeid_cmp(@extschema@.flakeid, @extschema@.flakeid),
	FUNCTION 2 pg_catalog.btint8sortsupport(pg_catalog.internal),
	FUNCTION 4 pg_catalog.btequalimage(pg_catalog.oid);

CREATE OPERATOR CLASS @extschema@.flakeid_ops
DEFAULT FOR TYPE @extschema@.flakeid USING hash AS
	OPERATOR 1 @extschema@.=,
	FUNCTION 1 @extschema@.flakeid_hash(@extschema@.flakeid),
	FUNCTION 2 @extschema@.flakeid_hash_extended(@extschema@.flakeid, pg_catalog.int8);

CREATE OPERATOR CLASS @extschema@.flakeid_minmax_ops
DEFAULT FOR TYPE @extschema@.flakeid USING brin AS
	OPERATOR 1 @extschema@.<,
	OPERATOR 2 @extschema@.<=,
	OPERATOR 3 @extschema@.=,
	OPERATOR 4 @extschema@.>=,
	OPERATOR 5 @extschema@.>,
	FUNCTION 1 pg_catalog.brin_minmax_opcinfo(pg_catalog.internal),
	FUNCTION 2 pg_catalog.brin_minmax_add_value(pg_catalog.internal, pg_catalog.internal, pg_catalog.internal, pg_catalog.internal),
	FUNCTION 3 pg_catalog.brin_minmax_consistent(pg_catalog.internal, pg_catalog.internal, pg_catalog.internal),
	FUNCTION 4 pg_catalog.brin_minmax_union(pg_catalog.internal, pg_catalog.internal, pg_catalog.internal);

--
-- Generation.
--
CREATE FUNCTION @extschema@.nextflake()
RETURNS @extschema@.flakeid
AS 'MODULE_PATHNAME', 'nextflake'
LANGUAGE C VOLATILE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION @extschema@.nextflake() IS
'the next ID of this server, for DEFAULT nextflake()';

CREATE FUNCTION @extschema@.nextflakes(n pg_catalog.int4)
RETURNS SETOF @extschema@.flakeid
AS 'MODULE_PATHNAME', 'nextflakes'
LANGUAGE C VOLATILE STRICT PARALLEL SAFE
ROWS 1000;

COMMENT ON FUNCTION @extschema@.nextflakes(pg_catalog.int4) IS
'n IDs reserved in one step, ascending';

--
-- Decoding.  These depend only on the layout, which is fixed for the life
-- of a server, so they are IMMUTABLE.
--
CREATE FUNCTION @extschema@.flakeid_timestamp(@extschema@.flakeid)
RETURNS pg_catalog.timestamptz
AS 'MODULE_PATHNAME', 'flakeid_timestamp'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

CREATE FUNCTION @extschema@.flakeid_node(@extschema@.flakeid)
RETURNS pg_catalog.int4
AS 'MODULE_PATHNAME', 'flakeid_node'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

CREATE FUNCTION @extschema@.flakeid_sequence(@extschema@.flakeid)
RETURNS pg_catalog.int4
AS 'MODULE_PATHNAME', 'flakeid_sequence'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

CREATE FUNCTION @extschema@.flakeid_decode(id @extschema@.flakeid,
	OUT ts pg_catalog.timestamptz, OUT node pg_catalog.int4,
	OUT sequence pg_catalog.int4)
RETURNS record
AS 'MODULE_PATHNAME', 'flakeid_decode'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

CREATE FUNCTION @extschema@.flakeid_from_timestamp(pg_catalog.timestamptz)
RETURNS @extschema@.flakeid
AS 'MODULE_PATHNAME', 'flakeid_from_timestamp'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

--
-- Operations.
--
CREATE FUNCTION @extschema@.flakeid_status(
	OUT state pg_catalog.text,
	OUT node_id pg_catalog.int4,
	OUT node_bits pg_catalog.int4,
	OUT epoch pg_catalog.timestamptz,
	OUT last_id @extschema@.flakeid,
	OUT last_time pg_catalog.timestamptz,
	OUT lead_ms pg_catalog.int8,
	OUT lease_end pg_catalog.timestamptz,
	OUT issued pg_catalog.int8,
	OUT waits pg_catalog.int8,
	OUT clock_steps_back pg_catalog.int8,
	OUT started pg_catalog.timestamptz)
RETURNS record
AS 'MODULE_PATHNAME', 'flakeid_status'
LANGUAGE C VOLATILE STRICT PARALLEL SAFE;

CREATE FUNCTION @extschema@.flakeid_accept_layout()
RETURNS pg_catalog.bool
AS 'MODULE_PATHNAME', 'flakeid_accept_layout'
LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;

REVOKE ALL ON FUNCTION @extschema@.flakeid_accept_layout() FROM PUBLIC;
