-- flakeid_cluster_check() without Citus: this server's row alone.  Its
-- run on a Citus cluster is test/t/060_citus.pl's.

-- node id 42 (test/flakeid.conf), the default layout, nothing wrong
SELECT nodename, nodeport = current_setting('port')::int AS this_port, node_id, node_bits,
	epoch = '2020-01-01 00:00:00+00' AS default_epoch, state, problem
FROM flakeid_cluster_check();
SELECT node_id, node_bits, epoch = '2020-01-01 00:00:00+00' AS default_epoch, state, problem
FROM flakeid_node_check();

-- for monitoring roles only, whatever EXECUTE is granted
CREATE ROLE regress_flake_watcher;
SET ROLE regress_flake_watcher;
SELECT count(*) FROM flakeid_cluster_check();
SELECT count(*) FROM flakeid_node_check();
RESET ROLE;
GRANT EXECUTE ON FUNCTION flakeid_cluster_check() TO regress_flake_watcher;
GRANT EXECUTE ON FUNCTION flakeid_node_check() TO regress_flake_watcher;
SET ROLE regress_flake_watcher;
\set SHOW_CONTEXT never
SELECT count(*) FROM flakeid_cluster_check();
SELECT count(*) FROM flakeid_node_check();
\set VERBOSITY sqlstate
SELECT count(*) FROM flakeid_cluster_check();
SELECT count(*) FROM flakeid_node_check();
\set VERBOSITY default
\set SHOW_CONTEXT errors
RESET ROLE;
GRANT pg_monitor TO regress_flake_watcher;
SET ROLE regress_flake_watcher;
SELECT node_id, state, problem FROM flakeid_cluster_check();
RESET ROLE;
REVOKE EXECUTE ON FUNCTION flakeid_cluster_check() FROM regress_flake_watcher;
REVOKE EXECUTE ON FUNCTION flakeid_node_check() FROM regress_flake_watcher;
SELECT has_function_privilege('public', 'flakeid_cluster_check()', 'execute') AS public_may,
	has_function_privilege('pg_monitor', 'flakeid_cluster_check()', 'execute') AS monitor_may;
DROP ROLE regress_flake_watcher;

-- Nodes are told apart by host and port together: two on one port and
-- different hosts (as in most clusters, every node on 5432), and two on
-- one host and different ports, each flagged when they share a node id.
-- The node list is made by hand, in the shape of Citus's catalog
-- (pg_dist_node) and its run_command_on_all_nodes(), which answers here
-- with each node's flakeid_node_check() row.
CREATE SCHEMA regress_fake_citus;
CREATE TABLE regress_fake_citus.pg_dist_node (
	nodeid int, nodename text, nodeport int, isactive bool, node_id int);
INSERT INTO regress_fake_citus.pg_dist_node VALUES
	(1, '10.0.0.1', 5432, true, 1),
	(2, '10.0.0.2', 5432, true, 1),
	(3, '10.0.0.1', 5433, true, 2),
	(4, '10.0.0.1', 5434, true, 2),
	(5, '10.0.0.3', 5432, true, 3);
ALTER TABLE regress_fake_citus.pg_dist_node SET SCHEMA pg_catalog;
CREATE FUNCTION regress_fake_citus.run_command_on_all_nodes(
	command text, OUT nodeid int, OUT success bool, OUT result text)
RETURNS SETOF record LANGUAGE sql AS $$
	SELECT d.nodeid, true, pg_catalog.json_build_object('node_id', d.node_id,
		'node_bits', 10, 'epoch', '2020-01-01 00:00:00+00'::timestamptz,
		'state', 'ready', 'problem', NULL)::text
	FROM pg_catalog.pg_dist_node d
$$;
ALTER FUNCTION regress_fake_citus.run_command_on_all_nodes(text) SET SCHEMA pg_catalog;
SELECT nodename, nodeport, node_id, problem FROM flakeid_cluster_check();
ALTER TABLE pg_catalog.pg_dist_node SET SCHEMA regress_fake_citus;
ALTER FUNCTION pg_catalog.run_command_on_all_nodes(text) SET SCHEMA regress_fake_citus;
DROP SCHEMA regress_fake_citus CASCADE;
