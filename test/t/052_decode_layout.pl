# Decoding is a function of the ID and the layout recorded for the server:
# a restart with other layout settings, not yet accepted, changes nothing
# that decoding returns, so expression indexes, generated columns and
# partition bounds built on the decode functions stay right.  Once the new
# layout is accepted, decoding follows it, and a REINDEX (and rewriting
# the generated columns) brings stored data in line, as the README says.

use strict;
use warnings;

use FlakeTest;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = flake_node('decode', node_id => 5);
$node->start;
$node->safe_psql(
	'postgres', q{
CREATE EXTENSION flakeid;
CREATE TABLE t (
	id flakeid PRIMARY KEY DEFAULT nextflake(),
	node int GENERATED ALWAYS AS (flakeid_node(id)) STORED);
CREATE INDEX t_node ON t (flakeid_node(id));
INSERT INTO t SELECT FROM generate_series(1, 2000);
ANALYZE t;
});

# How many rows have node 5, by the index and by a sequential scan.
sub counts
{
	my $by_index = $node->safe_psql(
		'postgres', q{
SET enable_seqscan = off; SET enable_bitmapscan = off;
SELECT count(*) FROM t WHERE flakeid_node(id) = 5});
	my $plan = $node->safe_psql(
		'postgres', q{
SET enable_seqscan = off; SET enable_bitmapscan = off;
EXPLAIN (COSTS OFF) SELECT count(*) FROM t WHERE flakeid_node(id) = 5});
	my $by_seqscan = $node->safe_psql(
		'postgres', q{
SET enable_indexscan = off; SET enable_bitmapscan = off; SET enable_indexonlyscan = off;
SELECT count(*) FROM t WHERE flakeid_node(id) = 5});
	like($plan, qr/Index (Only )?Scan using t_node/, 'the first count uses the index');
	return "$by_index $by_seqscan";
}

# The decoded parts of every row, summed up.
my $decoded_sql = q{
SELECT md5(string_agg(format('%s %s %s', flakeid_timestamp(id), flakeid_node(id),
	flakeid_sequence(id)), ',' ORDER BY id)) FROM t};
my $decoded = $node->safe_psql('postgres', $decoded_sql);
is(counts(), '2000 2000', 'node 5 by index and by scan');

# A restart with 12 node bits, not accepted.
$node->stop;
$node->append_conf('postgresql.conf', 'flakeid.node_bits = 12');
$node->start;
is($node->safe_psql('postgres', 'SELECT state, node_bits FROM flakeid_status()'),
	'layout changed|10', 'the generator keeps the recorded layout');
is($node->safe_psql('postgres', 'SHOW flakeid.node_bits'), '12',
	'while the setting says 12');
is(counts(), '2000 2000',
	'not accepted: the index and a scan still agree on node 5');
is($node->safe_psql('postgres', $decoded_sql), $decoded,
	'not accepted: every ID decodes as before');
is($node->safe_psql('postgres', 'SELECT count(*) FROM t WHERE node <> flakeid_node(id)'),
	'0', 'not accepted: the generated column agrees with the function');
is($node->safe_psql('postgres',
		q{SELECT flakeid_from_timestamp('2030-01-01 00:00+00')::bigint = ((extract(epoch FROM timestamptz '2030-01-01 00:00+00') * 1000)::bigint - 1577836800000) << 22}),
	't', 'not accepted: flakeid_from_timestamp() keeps the recorded epoch');

# Accepted: decoding follows the new layout; REINDEX and a rewrite of the
# generated column bring the stored data in line.
$node->safe_psql('postgres', 'SELECT flakeid_accept_layout()');
is($node->safe_psql('postgres', 'SELECT state, node_bits FROM flakeid_status()'),
	'ready|12', 'accepted: the generator uses 12 node bits');
isnt($node->safe_psql('postgres', $decoded_sql), $decoded,
	'accepted: the old IDs decode with the new layout');
$node->safe_psql('postgres', 'REINDEX TABLE t; UPDATE t SET id = id');
my ($by_index, $by_scan) = split / /, counts();
is($by_index, $by_scan, 'after REINDEX the index and a scan agree again');
is($node->safe_psql('postgres', 'SELECT count(*) FROM t WHERE node <> flakeid_node(id)'),
	'0', 'after the rewrite the generated column agrees with the function');

$node->stop;
done_testing();
