# A node id adopted while backends generate.  Each adoption starts the
# new node id in a millisecond after every ID of the old one: no
# millisecond holds IDs of two node ids, and a server's IDs stay strictly
# increasing across the change, also when the old node id's IDs ran
# seconds ahead of the clock.
#
# 1. Six pgbench clients insert IDs while a seventh session reloads the
#    node id 1,200 times, 10 ms apart, alternating between two values.
# 2. 16 node bits, node 1023: a burst puts the IDs about 4 s ahead of the
#    clock, then a reload to node 7; the next ID is above the last of
#    node 1023.

use strict;
use warnings;

use FlakeTest;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

# 1. Reloads under load.
my $node = flake_node('reloads', quiet => 1, node_id => 100);
$node->start;
$node->safe_psql('postgres', q{
CREATE EXTENSION flakeid;
CREATE UNLOGGED TABLE ids (id flakeid NOT NULL);
});

my ($bench, $out, $err) = start_pgbench($node, 'insert_ids',
	'INSERT INTO ids SELECT nextflake() FROM generate_series(1, 20);',
	300, '-c', '6', '-j', '6', '-T', '30');
my $script = join '', map {
	my $id = 100 + $_ % 2;
	"ALTER SYSTEM SET flakeid.node_id = $id;\nSELECT pg_reload_conf();\nSELECT pg_sleep(0.01);\n"
} 1 .. 1200;
$node->safe_psql('postgres', $script);
ok($bench->finish, 'the clients ran without error') or diag($$err);

my ($ids, $ms, $nodes) = split /\|/, $node->safe_psql('postgres',
	'SELECT count(*), count(DISTINCT id::bigint >> 22), count(DISTINCT flakeid_node(id)) FROM ids');
note "$ids IDs in $ms milliseconds, of $nodes node ids";
is($nodes, 2, 'the IDs carry both node ids');
ok($ids > 10000, 'the clients made many IDs');
is( $node->safe_psql(
		'postgres', q{
SELECT count(*) FROM (
	SELECT id::bigint >> 22 AS ms FROM ids GROUP BY 1
	HAVING count(DISTINCT flakeid_node(id)) > 1) s}),
	'0',
	'no millisecond holds IDs of two node ids');
ids_unique($node, 'SELECT id FROM ids', 'IDs made across 1200 reloads');
ok( $node->log_contains(qr/flakeid node id changed from 100 to 101/),
	'the log tells of the adoptions');
$node->stop;

# 2. A reload while the IDs run ahead of the clock, with 16 node bits.
my $wide = flake_node(
	'reload_ahead',
	quiet   => 1,
	node_id => 1023,
	conf    => 'flakeid.node_bits = 16');
$wide->start;
$wide->safe_psql('postgres', 'CREATE EXTENSION flakeid');
my ($last, $ahead) = split /\|/, $wide->safe_psql(
	'postgres', q{
SELECT max(id)::bigint, flakeid_timestamp(max(id)) > clock_timestamp() + interval '3 s'
FROM nextflakes(256000) id});
is($ahead, 't', 'a burst of node 1023 runs 3 s or more ahead of the clock');
$wide->safe_psql('postgres',
	"ALTER SYSTEM SET flakeid.node_id = 7;\nSELECT pg_reload_conf();");
$wide->poll_query_until('postgres', 'SELECT node_id = 7 FROM flakeid_status()')
  or die 'node id 7 was not adopted';
is( $wide->safe_psql(
		'postgres', qq{
SELECT flakeid_node(id), id::bigint > $last, (id::bigint >> 22) > (${last}::bigint >> 22)
FROM (SELECT nextflake() AS id) s}),
	'7|t|t',
	'the first ID of node 7 is above the last of node 1023, in a later millisecond');
$wide->stop;

done_testing();
