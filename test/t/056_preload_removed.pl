# Taking flakeid out of shared_preload_libraries.  A preloaded server
# WAL-logs its leases through flakeid's resource manager, so WAL that
# holds such records can only be replayed with the library preloaded: a
# server that crashed refuses to start without it, saying which resource
# manager is missing.  After a clean shutdown nothing needs replaying, and
# the server starts without preloading, its stored IDs readable; as the
# README says.

use strict;
use warnings;

use FlakeFault;
use FlakeTest;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = flake_node('unload', node_id => 6);
$node->start;
$node->safe_psql(
	'postgres', q{
CREATE EXTENSION flakeid;
CREATE TABLE t (id flakeid PRIMARY KEY DEFAULT nextflake());
INSERT INTO t SELECT FROM generate_series(1, 1000);
});
my $max = $node->safe_psql('postgres', 'SELECT max(id) FROM t');

# A crash leaves lease records to replay.
crash_node($node);
$node->adjust_conf('postgresql.conf', 'shared_preload_libraries', "''");
start_fails($node, 'crashed, then started without preloading',
	qr/resource manager with ID 167 not registered/);

# With the library preloaded again, recovery replays them.
$node->adjust_conf('postgresql.conf', 'shared_preload_libraries', "'flakeid'");
$node->start;
is($node->safe_psql('postgres', "SELECT count(*) FROM t WHERE id <= '$max'"),
	'1000', 'preloaded again, the server recovers its rows');

# After a clean shutdown the library can go.
$node->stop;
$node->adjust_conf('postgresql.conf', 'shared_preload_libraries', "''");
$node->start;
is( $node->safe_psql(
		'postgres',
		"SELECT count(*), bool_and(flakeid_node(id) = 6) FROM t"),
	'1000|t',
	'after a clean shutdown it starts without preloading, and decodes');
$node->stop;
done_testing();
