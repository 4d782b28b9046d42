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

--
-- Make an existing key column generate flakeids: its identity dropped or
-- its sequence default replaced by nextflake(), a sequence that only it
-- used dropped, smallint and integer widened to bigint with the columns of
-- the foreign keys that reference it (or all of them made flakeid).  It
-- refuses, changing nothing, where old keys could meet new IDs.  It runs
-- as the caller, in the caller's transaction, and returns the statements
-- it ran (a dry run: those it would run).
--
CREATE FUNCTION @extschema@.flakeid_convert_key(
	tbl pg_catalog.regclass,
	col pg_catalog.name DEFAULT NULL,
	to_type pg_catalog.regtype DEFAULT NULL,
	dry_run pg_catalog.bool DEFAULT false)
RETURNS SETOF pg_catalog.text
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	ext pg_catalog.text := (SELECT e.extnamespace::pg_catalog.regnamespace::pg_catalog.text
							FROM pg_catalog.pg_extension e WHERE e.extname = 'flakeid');
	flake pg_catalog.regtype;
	kind pg_catalog.char;
	key_cols pg_catalog.name[];
	key_att pg_catalog.int2;
	typ pg_catalog.regtype;
	ident pg_catalog.char;
	def_oid pg_catalog.oid;
	def pg_catalog.text;
	seq pg_catalog.regclass;
	has_nextflake pg_catalog.bool;
	target pg_catalog.regtype;
	lo pg_catalog.numeric;
	hi pg_catalog.numeric;
	first_id pg_catalog.int8;
	ref record;
	stmts pg_catalog.text[] := '{}';
	stmt pg_catalog.text;
BEGIN
	flake := pg_catalog.format('%s.flakeid', ext)::pg_catalog.regtype;

	SELECT c.relkind INTO kind FROM pg_catalog.pg_class c WHERE c.oid = tbl;
	IF kind NOT IN ('r', 'p') THEN
		RAISE EXCEPTION '"%" is not a table', tbl
			USING ERRCODE = 'wrong_object_type',
				HINT = 'flakeid_convert_key() converts a key column of a table or a partitioned table.';
	END IF;

	IF col IS NULL THEN
		SELECT pg_catalog.array_agg(a.attname ORDER BY k.n) INTO key_cols
		FROM pg_catalog.pg_constraint con,
			pg_catalog.unnest(con.conkey) WITH ORDINALITY k(attnum, n),
			pg_catalog.pg_attribute a
		WHERE con.conrelid = tbl AND con.contype = 'p'
			AND a.attrelid = tbl AND a.attnum = k.attnum;
		IF key_cols IS NULL THEN
			RAISE EXCEPTION 'table % has no primary key', tbl
				USING ERRCODE = 'invalid_column_reference',
					HINT = 'Name the column to convert: flakeid_convert_key(''table'', ''column'').';
		ELSIF pg_catalog.cardinality(key_cols) > 1 THEN
			RAISE EXCEPTION 'the primary key of table % has % columns', tbl, pg_catalog.cardinality(key_cols)
				USING ERRCODE = 'invalid_column_reference',
					DETAIL = pg_catalog.format('Its columns are %s.', pg_catalog.array_to_string(key_cols, ', ')),
					HINT = 'Name the column to convert: flakeid_convert_key(''table'', ''column'').';
		END IF;
		col := key_cols[1];
	END IF;

	SELECT a.attnum, a.atttypid, a.attidentity INTO key_att, typ, ident
	FROM pg_catalog.pg_attribute a
	WHERE a.attrelid = tbl AND a.attname = col AND a.attnum > 0 AND NOT a.attisdropped;
	IF NOT FOUND THEN
		RAISE EXCEPTION 'column "%" of relation "%" does not exist', col, tbl
			USING ERRCODE = 'undefined_column';
	END IF;

	-- the type: a smallint or integer is widened, flakeids need 63 bits
	IF typ NOT IN ('pg_catalog.int2'::pg_catalog.regtype, 'pg_catalog.int4', 'pg_catalog.int8', flake) THEN
		RAISE EXCEPTION 'column "%" of table % cannot hold flakeids', col, tbl
			USING ERRCODE = 'datatype_mismatch',
				DETAIL = pg_catalog.format('Its type is %s.', typ),
				HINT = 'Convert a smallint, integer, bigint or flakeid column.';
	END IF;
	target := COALESCE(to_type,
		CASE WHEN typ IN ('pg_catalog.int2'::pg_catalog.regtype, 'pg_catalog.int4')
			THEN 'pg_catalog.int8'::pg_catalog.regtype ELSE typ END);
	IF target NOT IN ('pg_catalog.int8'::pg_catalog.regtype, flake) THEN
		RAISE EXCEPTION 'flakeid_convert_key() cannot convert a key to type %', target
			USING ERRCODE = 'invalid_parameter_value',
				HINT = 'Leave to_type out to keep a bigint key (smallint and integer become bigint), or give flakeid.';
	END IF;

	-- where its values come from: an identity, or a sequence's default
	SELECT d.oid, pg_catalog.pg_get_expr(d.adbin, d.adrelid) INTO def_oid, def
	FROM pg_catalog.pg_attrdef d WHERE d.adrelid = tbl AND d.adnum = key_att;
	has_nextflake := EXISTS (
		SELECT FROM pg_catalog.pg_depend dep
		WHERE dep.classid = 'pg_catalog.pg_attrdef'::pg_catalog.regclass AND dep.objid = def_oid
			AND dep.refclassid = 'pg_catalog.pg_proc'::pg_catalog.regclass
			AND dep.refobjid = pg_catalog.format('%s.nextflake()', ext)::pg_catalog.regprocedure);
	IF ident = '' THEN
		SELECT dep.refobjid INTO seq
		FROM pg_catalog.pg_depend dep JOIN pg_catalog.pg_class c ON c.oid = dep.refobjid
		WHERE dep.classid = 'pg_catalog.pg_attrdef'::pg_catalog.regclass AND dep.objid = def_oid
			AND dep.refclassid = 'pg_catalog.pg_class'::pg_catalog.regclass AND c.relkind = 'S';
		IF seq IS NULL AND NOT has_nextflake THEN
			RAISE EXCEPTION 'column "%" of table % takes its values from neither an identity nor a sequence', col, tbl
				USING ERRCODE = 'object_not_in_prerequisite_state',
					DETAIL = CASE WHEN def IS NULL THEN 'It has no default.'
						ELSE pg_catalog.format('Its default is %s.', def) END,
					HINT = 'flakeid_convert_key() converts an identity column, a serial or bigserial, or a column whose default is nextval().';
		END IF;
	END IF;

	-- This server can generate (node id set, not a standby): an error
	-- that says what is missing otherwise.
	EXECUTE pg_catalog.format('SELECT %s.nextflake()', ext);

	IF NOT dry_run THEN
		-- no key can be added between the check and the new default
		stmt := pg_catalog.format('LOCK TABLE %s IN ACCESS EXCLUSIVE MODE', tbl);
		EXECUTE stmt;
		stmts := stmts || stmt;
	END IF;
	EXECUTE pg_catalog.format('SELECT min(%1$I::pg_catalog.int8), max(%1$I::pg_catalog.int8) FROM %2$s', col, tbl)
		INTO lo, hi;
	EXECUTE pg_catalog.format('SELECT %s.flakeid_from_timestamp(pg_catalog.now())::pg_catalog.int8', ext)
		INTO first_id;
	IF hi >= first_id THEN
		RAISE EXCEPTION 'keys of column "%" of table % could meet the flakeids of this server', col, tbl
			USING ERRCODE = 'object_not_in_prerequisite_state',
				DETAIL = pg_catalog.format('Its largest key, %s, is at or above %s, the first flakeid of now.', hi, first_id),
				HINT = 'Keep this column''s generator, or give the table a new key column.';
	END IF;
	IF target = flake AND lo < 0 THEN
		RAISE EXCEPTION 'keys of column "%" of table % are negative, which type flakeid cannot hold', col, tbl
			USING ERRCODE = 'numeric_value_out_of_range',
				DETAIL = pg_catalog.format('Its smallest key is %s.', lo),
				HINT = 'Leave to_type out to keep a bigint key.';
	END IF;

	IF ident <> '' THEN
		stmts := stmts || pg_catalog.format('ALTER TABLE %s ALTER COLUMN %I DROP IDENTITY', tbl, col);
	END IF;
	IF target <> typ THEN
		stmts := stmts || pg_catalog.format('ALTER TABLE %s ALTER COLUMN %I TYPE %s', tbl, col, target);
	END IF;
	-- the columns of the foreign keys that reference it, after it
	FOR ref IN
		SELECT DISTINCT con.conrelid::pg_catalog.regclass AS rel, a.attname,
			a.atttypid::pg_catalog.regtype AS atttypid
		FROM pg_catalog.pg_constraint con,
			unnest(con.confkey, con.conkey) k(keyatt, refatt),
			pg_catalog.pg_attribute a
		WHERE con.contype = 'f' AND con.confrelid = tbl AND k.keyatt = key_att
			AND a.attrelid = con.conrelid AND a.attnum = k.refatt
			AND con.conparentid = 0
		ORDER BY 1, 2
	LOOP
		IF ref.atttypid <> target AND (target = flake OR
			ref.atttypid IN ('pg_catalog.int2'::pg_catalog.regtype, 'pg_catalog.int4')) THEN
			stmts := stmts || pg_catalog.format('ALTER TABLE %s ALTER COLUMN %I TYPE %s',
				ref.rel, ref.attname, target);
		END IF;
	END LOOP;
	IF NOT has_nextflake THEN
		stmts := stmts || pg_catalog.format('ALTER TABLE %s ALTER COLUMN %I SET DEFAULT %s.nextflake()',
			tbl, col, ext);
	END IF;
	-- a sequence that belongs to the column and that nothing else uses
	IF seq IS NOT NULL
		AND EXISTS (SELECT FROM pg_catalog.pg_depend dep
					WHERE dep.classid = 'pg_catalog.pg_class'::pg_catalog.regclass AND dep.objid = seq
						AND dep.refclassid = 'pg_catalog.pg_class'::pg_catalog.regclass
						AND dep.refobjid = tbl AND dep.refobjsubid = key_att AND dep.deptype = 'a')
		AND NOT EXISTS (SELECT FROM pg_catalog.pg_depend dep
						WHERE dep.refclassid = 'pg_catalog.pg_class'::pg_catalog.regclass
							AND dep.refobjid = seq
							AND NOT (dep.classid = 'pg_catalog.pg_attrdef'::pg_catalog.regclass
									 AND dep.objid = def_oid)) THEN
		stmts := stmts || pg_catalog.format('DROP SEQUENCE %s', seq);
	END IF;

	IF NOT dry_run THEN
		FOREACH stmt IN ARRAY stmts[2:] LOOP
			EXECUTE stmt;
		END LOOP;
	END IF;
	RETURN QUERY SELECT pg_catalog.unnest(stmts);
END
$$;

COMMENT ON FUNCTION @extschema@.flakeid_convert_key(pg_catalog.regclass, pg_catalog.name,
	pg_catalog.regtype, pg_catalog.bool) IS
'makes an existing key column generate flakeids; returns the statements it ran';
