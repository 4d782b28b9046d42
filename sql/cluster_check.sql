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
