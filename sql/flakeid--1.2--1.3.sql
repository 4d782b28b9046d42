/* flakeid--1.2--1.3.sql */

-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION flakeid UPDATE TO '1.3'" to load this file. \quit

-- Every name is schema-qualified: the script does not trust search_path,
-- and the functions run with pg_catalog first.

--
-- This server's row of flakeid_cluster_check(): its generator's node id,
-- layout and state as flakeid_status() reports them, and what is wrong
-- here.  Where the server has no generator (PostgreSQL 15 and 16 without
-- preloading), the node id is the setting's and the layout is the one
-- the decode functions use.
--
CREATE FUNCTION @extschema@.flakeid_node_check(
	OUT node_id pg_catalog.int4,
	OUT node_bits pg_catalog.int4,
	OUT epoch pg_catalog.timestamptz,
	OUT state pg_catalog.text,
	OUT problem pg_catalog.text)
RETURNS record
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	ext pg_catalog.text := (SELECT e.extnamespace::pg_catalog.regnamespace::pg_catalog.text
							FROM pg_catalog.pg_extension e WHERE e.extname = 'flakeid');
	top pg_catalog.int4;
BEGIN
	IF NOT pg_catalog.pg_has_role(current_user, 'pg_monitor', 'USAGE') THEN
		RAISE EXCEPTION 'permission denied for function flakeid_node_check'
			USING ERRCODE = 'insufficient_privilege',
				DETAIL = 'Only roles with the privileges of the "pg_monitor" role may read the server-wide state of flakeid.',
				HINT = 'Grant pg_monitor to the role that monitors flakeid.';
	END IF;

	BEGIN
		EXECUTE pg_catalog.format(
			'SELECT s.node_id, s.node_bits, s.epoch, s.state FROM %s.flakeid_status() s', ext)
			INTO node_id, node_bits, epoch, state;
	EXCEPTION WHEN object_not_in_prerequisite_state THEN
		-- no generator: this version needs flakeid preloaded for one
		state := 'not preloaded';
	END;
	IF state = 'not set up' THEN
		-- without preloading, decoding sets the generator up
		EXECUTE pg_catalog.format('SELECT %s.flakeid_timestamp(0::pg_catalog.int8)', ext);
		EXECUTE pg_catalog.format(
			'SELECT s.node_id, s.node_bits, s.epoch, s.state FROM %s.flakeid_status() s', ext)
			INTO node_id, node_bits, epoch, state;
	ELSIF state = 'not preloaded' THEN
		node_id := NULLIF(pg_catalog.current_setting('flakeid.node_id')::pg_catalog.int4, -1);
		-- the layout the decode functions use: the epoch is ID 0's time,
		-- and bit 21, the top bit of node and sequence, decodes to the
		-- value of the top node bit (0 without node bits)
		EXECUTE pg_catalog.format(
			'SELECT %1$s.flakeid_timestamp(0::pg_catalog.int8), %1$s.flakeid_node(2097152::pg_catalog.int8)', ext)
			INTO epoch, top;
		node_bits := 0;
		WHILE top > 0 LOOP
			node_bits := node_bits + 1;
			top := top >> 1;
		END LOOP;
	END IF;

	problem := pg_catalog.concat_ws('; ',
		CASE WHEN state = 'not preloaded' THEN 'flakeid not preloaded' END,
		CASE WHEN node_id IS NULL THEN 'no node id' END,
		CASE WHEN state NOT IN ('ready', 'not preloaded', 'node id not set')
			THEN 'generator not ready: ' || state END);
	problem := NULLIF(problem, '');
END
$$;

COMMENT ON FUNCTION @extschema@.flakeid_node_check() IS
'this server''s row of flakeid_cluster_check(): node id, layout and state of its generator, and what is wrong';

REVOKE ALL ON FUNCTION @extschema@.flakeid_node_check() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION @extschema@.flakeid_node_check() TO pg_monitor;

--
-- Every node of a Citus cluster, each checked on that node, and what is
-- wrong with it: its own problems, a node id that another node has too,
-- and a layout unlike the one most nodes share.  Without Citus (or on a
-- node that knows no other), this server alone.
--
CREATE FUNCTION @extschema@.flakeid_cluster_check(
	OUT nodename pg_catalog.text,
	OUT nodeport pg_catalog.int4,
	OUT node_id pg_catalog.int4,
	OUT node_bits pg_catalog.int4,
	OUT epoch pg_catalog.timestamptz,
	OUT state pg_catalog.text,
	OUT problem pg_catalog.text)
RETURNS SETOF record
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	ext pg_catalog.text := (SELECT e.extnamespace::pg_catalog.regnamespace::pg_catalog.text
							FROM pg_catalog.pg_extension e WHERE e.extname = 'flakeid');
	my_version pg_catalog.text := (SELECT e.extversion FROM pg_catalog.pg_extension e
								   WHERE e.extname = 'flakeid');
	nodes pg_catalog.jsonb := '[]';
	failed pg_catalog.jsonb := '{}';
	alone pg_catalog.bool;
	r record;
BEGIN
	IF NOT pg_catalog.pg_has_role(current_user, 'pg_monitor', 'USAGE') THEN
		RAISE EXCEPTION 'permission denied for function flakeid_cluster_check'
			USING ERRCODE = 'insufficient_privilege',
				DETAIL = 'Only roles with the privileges of the "pg_monitor" role may read the server-wide state of flakeid.',
				HINT = 'Grant pg_monitor to the role that monitors flakeid.';
	END IF;

	-- without Citus in this database, or on a node that knows no other:
	-- this server alone
	IF pg_catalog.to_regclass('pg_catalog.pg_dist_node') IS NULL THEN
		alone := true;
	ELSE
		EXECUTE 'SELECT NOT EXISTS (SELECT FROM pg_catalog.pg_dist_node d WHERE d.isactive)'
			INTO alone;
	END IF;
	IF alone THEN
		RETURN QUERY EXECUTE pg_catalog.format(
			'SELECT NULL::pg_catalog.text, pg_catalog.current_setting(''port'')::pg_catalog.int4, c.* '
			'FROM %s.flakeid_node_check() c', ext);
		RETURN;
	END IF;

	-- each node checks itself
	FOR r IN
		SELECT COALESCE(d.nodename, pg_catalog.current_setting('citus.local_hostname')) AS name,
			COALESCE(d.nodeport, pg_catalog.current_setting('port')::pg_catalog.int4) AS port,
			a.success, a.result
		FROM pg_catalog.run_command_on_all_nodes(pg_catalog.format(
			'SELECT pg_catalog.row_to_json(c) FROM %s.flakeid_node_check() c', ext)) a
		LEFT JOIN pg_catalog.pg_dist_node d ON d.nodeid = a.nodeid
	LOOP
		IF r.success THEN
			nodes := nodes || pg_catalog.jsonb_build_array(r.result::pg_catalog.jsonb
				|| pg_catalog.jsonb_build_object('nodename', r.name, 'nodeport', r.port));
		ELSE
			failed := failed || pg_catalog.jsonb_build_object(r.name || ':' || r.port, r.result);
		END IF;
	END LOOP;

	-- where that failed: flakeid not installed there, another version, or
	-- the node out of reach
	IF failed <> '{}' THEN
		FOR r IN
			SELECT COALESCE(d.nodename, pg_catalog.current_setting('citus.local_hostname')) AS name,
				COALESCE(d.nodeport, pg_catalog.current_setting('port')::pg_catalog.int4) AS port,
				a.success, a.result
			FROM pg_catalog.run_command_on_all_nodes($q$SELECT COALESCE((SELECT e.extversion
				FROM pg_catalog.pg_extension e WHERE e.extname = 'flakeid'), '')$q$) a
			LEFT JOIN pg_catalog.pg_dist_node d ON d.nodeid = a.nodeid
		LOOP
			CONTINUE WHEN NOT failed ? (r.name || ':' || r.port);
			nodes := nodes || pg_catalog.jsonb_build_array(
				pg_catalog.jsonb_build_object('nodename', r.name, 'nodeport', r.port) ||
				CASE
					WHEN NOT r.success THEN pg_catalog.jsonb_build_object('state', 'unreachable',
						'problem', 'not checked: ' || (failed->>(r.name || ':' || r.port)))
					WHEN r.result = '' THEN pg_catalog.jsonb_build_object('state', 'not installed',
						'problem', 'flakeid not installed')
					WHEN r.result <> my_version THEN pg_catalog.jsonb_build_object('state', 'version ' || r.result,
						'problem', pg_catalog.format('flakeid %s installed, not %s', r.result, my_version))
					ELSE pg_catalog.jsonb_build_object('state', 'unknown',
						'problem', 'not checked: ' || (failed->>(r.name || ':' || r.port)))
				END);
			failed := failed - (r.name || ':' || r.port);
		END LOOP;
		-- a node that answered neither time
		nodes := nodes || (SELECT COALESCE(pg_catalog.jsonb_agg(pg_catalog.jsonb_build_object(
				'nodename', pg_catalog.split_part(f.key, ':', 1),
				'nodeport', pg_catalog.split_part(f.key, ':', 2)::pg_catalog.int4,
				'state', 'unreachable', 'problem', 'not checked: ' || f.value)), '[]')
			FROM pg_catalog.jsonb_each_text(failed) f);
	END IF;

	RETURN QUERY
	WITH n AS (
		SELECT * FROM pg_catalog.jsonb_to_recordset(nodes) AS x(
			nodename pg_catalog.text, nodeport pg_catalog.int4, node_id pg_catalog.int4,
			node_bits pg_catalog.int4, epoch pg_catalog.timestamptz, state pg_catalog.text,
			problem pg_catalog.text)
	), layouts AS (
		SELECT n.node_bits, n.epoch,
			pg_catalog.rank() OVER (ORDER BY pg_catalog.count(*) DESC) AS place
		FROM n WHERE n.node_bits IS NOT NULL GROUP BY n.node_bits, n.epoch
	), common AS (
		-- the layout that more nodes share than any other, where there is one
		SELECT l.node_bits, l.epoch FROM layouts l
		WHERE l.place = 1 AND (SELECT pg_catalog.count(*) FROM layouts m WHERE m.place = 1) = 1
	)
	SELECT n.nodename, n.nodeport, n.node_id, n.node_bits, n.epoch, n.state,
		NULLIF(pg_catalog.concat_ws('; ',
			n.problem,
			(SELECT pg_catalog.format('node id %s also on %s', n.node_id,
						pg_catalog.string_agg(o.nodename || ':' || o.nodeport, ', '
											  ORDER BY o.nodename, o.nodeport))
			 FROM n o
			 WHERE o.node_id = n.node_id
				AND (o.nodename <> n.nodename OR o.nodeport <> n.nodeport)
			 HAVING pg_catalog.count(*) > 0),
			CASE
				WHEN n.node_bits IS NULL OR (SELECT pg_catalog.count(*) FROM layouts) < 2 THEN NULL
				WHEN NOT EXISTS (SELECT FROM common) THEN pg_catalog.format(
					'layout node_bits %s, epoch %s: no layout is shared by more nodes than any other',
					n.node_bits, pg_catalog.to_char(n.epoch AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS.MS+00'))
				ELSE (SELECT pg_catalog.format(
					'layout node_bits %s, epoch %s unlike most nodes'' node_bits %s, epoch %s',
					n.node_bits, pg_catalog.to_char(n.epoch AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS.MS+00'),
					c.node_bits, pg_catalog.to_char(c.epoch AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS.MS+00'))
					FROM common c
					WHERE c.node_bits <> n.node_bits OR c.epoch <> n.epoch)
			END), '')
	FROM n
	ORDER BY n.nodename, n.nodeport;
END
$$;

COMMENT ON FUNCTION @extschema@.flakeid_cluster_check() IS
'every node of a Citus cluster (or this server alone): node id, layout and state of its generator, and what is wrong';

REVOKE ALL ON FUNCTION @extschema@.flakeid_cluster_check() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION @extschema@.flakeid_cluster_check() TO pg_monitor;
