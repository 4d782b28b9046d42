# flakeid without shared_preload_libraries: the type and the decode functions
# work, using the layout from postgresql.conf.  Generation refuses with
# SQLSTATE 55000 and a hint, never a fallback, before PostgreSQL 17; from 17
# on it works through the DSM registry, with the lease file as when
# preloaded.

use strict;
use warnings;

use FlakeTest;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

# a non-default layout, so that decoding visibly follows the configuration
my $node = flake_node(
	'no_preload',
	preload => 0,
	conf    => "flakeid.node_bits = 12\n"
	  . "flakeid.epoch = '2024-01-01 00:00:00+00'\n"
	  . "flakeid.node_id = 9");
$node->start;

is( $node->safe_psql('postgres', 'SHOW shared_preload_libraries'),
	'', 'flakeid is not preloaded');

$node->safe_psql('postgres', 'CREATE EXTENSION flakeid');
is( $node->safe_psql(
		'postgres', q{
	SELECT extversion = default_version
	FROM pg_extension JOIN pg_available_extensions ON name = extname
	WHERE extname = 'flakeid'}),
	't',
	'CREATE EXTENSION works without preloading');

# text I/O and casts
is( $node->safe_psql(
		'postgres', q{
	SELECT '9223372036854775807'::flakeid::text
		|| ' ' || ' 42 '::flakeid::text
		|| ' ' || (1234::flakeid)::bigint::text
		|| ' ' || (5000000000::bigint::flakeid)::text
		|| ' ' || ('17'::flakeid = 17)::text}),
	'9223372036854775807 42 1234 5000000000 true',
	'text I/O and casts work');
fails_with($node, q{SELECT '-1'::flakeid}, '22003', 'negative input');
fails_with($node, q{SELECT 'abc'::flakeid}, '22P02', 'bad input');

# Decoding follows the configured layout (12 node bits, 10 sequence bits,
# epoch 2024-01-01): build an ID by hand and take it apart.
is( $node->safe_psql(
		'postgres', q{
	WITH id AS (
		SELECT ((123456789::bigint << 22) | (3000 << 10) | 1000)::flakeid AS x)
	SELECT flakeid_node(x) || ' ' || flakeid_sequence(x)
		|| ' ' || (flakeid_timestamp(x) = timestamptz '2024-01-01 00:00:00+00'
			+ interval '123456789 ms')
		|| ' ' || ((flakeid_decode(x)).node = 3000)
		|| ' ' || (flakeid_timestamp(x::bigint) = flakeid_timestamp(x))
		|| ' ' || (flakeid_from_timestamp('2024-01-01 00:00:00+00')::bigint = 0)
		|| ' ' || (flakeid_from_timestamp(flakeid_timestamp(x))::bigint = 123456789::bigint << 22)
	FROM id}),
	'3000 1000 true true true true true',
	'decode functions work and follow the configured layout');

is($node->safe_psql('postgres', 'SELECT flakeid_node(0); SHOW flakeid.node_bits'),
	"0\n12", 'SHOW flakeid.node_bits works');

my $version = $node->safe_psql('postgres', 'SHOW server_version_num');
if ($version >= 170000)
{
	# PostgreSQL 17 and later: the generator lives in the DSM registry
	is( $node->safe_psql(
			'postgres', q{
		CREATE TABLE burst AS
			SELECT g, nextflake() AS id FROM generate_series(1, 20000) g;
		SELECT count(DISTINCT id) = 20000
			AND bool_and(flakeid_node(id) = 9)
			AND bool_and(flakeid_timestamp(id) > now() - interval '1 minute')
		FROM burst;
		SELECT state FROM flakeid_status()}),
		"t\nready",
		'without preloading, nextflake() generates through the DSM registry');
	ids_increasing($node, 'SELECT g, id FROM burst', 'g',
		'without preloading, a burst');
	my $max = $node->safe_psql('postgres', 'SELECT max(id) FROM burst');
	$node->safe_psql('postgres', 'INSERT INTO burst SELECT 0, id FROM nextflakes(1000) id');
	ok(-s $node->data_dir . '/flakeid.state', 'the lease file is written');
	$node->restart;
	is( $node->safe_psql('postgres',
			"SELECT min(id) > (SELECT max(id) FROM burst) FROM (SELECT nextflake() AS id FROM generate_series(1, 1000)) s"),
		't', 'after a restart, IDs continue above every earlier one');
	is($node->safe_psql('postgres',
			q{SELECT lease_end > last_time FROM flakeid_status()}),
		't', 'the lease worker, started on demand, keeps the lease ahead');
}
else
{
	# generation needs the preloaded library
	foreach my $sql ('SELECT nextflake()', 'SELECT * FROM nextflakes(3)',
		'SELECT * FROM flakeid_status()')
	{
		my $err = fails_with($node, $sql, '55000', $sql);
		like($err, qr/HINT:  .*shared_preload_libraries/,
			"$sql: hint names shared_preload_libraries");
	}
	fails_with($node, 'SELECT flakeid_accept_layout()', '55000',
		'flakeid_accept_layout()');
	# no IDs asked for, no generator needed
	is($node->safe_psql('postgres', 'SELECT count(*) FROM nextflakes(0)'), '0',
		'nextflakes(0): no rows, and no error');

	# a DO block sees the same SQLSTATE
	my ($ret, $out, $err) = $node->psql('postgres',
		q{DO $$ BEGIN PERFORM nextflake(); EXCEPTION WHEN object_not_in_prerequisite_state THEN RAISE NOTICE 'caught %', SQLSTATE; END $$});
	like($err, qr/caught 55000/, 'DO block catches SQLSTATE 55000');

	# a column default that cannot generate fails the insert, never a value
	$node->safe_psql('postgres',
		'CREATE TABLE t (id flakeid PRIMARY KEY DEFAULT nextflake(), v int)');
	fails_with($node, 'INSERT INTO t (v) VALUES (1)', '55000',
		'insert with DEFAULT nextflake()');
	is($node->safe_psql('postgres', 'SELECT count(*) FROM t'),
		'0', 'no row was inserted');
}

# no session sets the node id or the layout, once the library is loaded
fails_with($node, q{SELECT flakeid_node(0); SET flakeid.node_id = 7},
	'55P02', 'SET flakeid.node_id');
fails_with($node, q{SELECT flakeid_node(0); SET flakeid.node_bits = 16},
	'55P02', 'SET flakeid.node_bits');
fails_with($node,
	q{SELECT flakeid_node(0); SELECT set_config('flakeid.epoch', '2030-01-01', false)},
	'55P02', 'set_config(flakeid.epoch)');

# Before the library is loaded, SET only makes a placeholder; loading the
# library must discard it rather than adopt it.
is( $node->safe_psql(
		'postgres', q{
	SET flakeid.node_bits = 16;
	SET flakeid.node_id = 7;
	SELECT flakeid_node(((1::bigint << 22) | (7 << 6))::flakeid);
	SHOW flakeid.node_bits;
	SHOW flakeid.node_id}),
	"0\n12\n9",
	'a placeholder set before loading is not adopted');

# A rejected setting is not replaced by its default, which need not be the
# layout or node id the IDs were made with: decoding and generation refuse.
$node->stop;
$node->append_conf('postgresql.conf', 'flakeid.node_bits = 20');
$node->start;
my $err = fails_with($node, 'SELECT flakeid_node(0)', '22023',
	'a rejected flakeid.node_bits: decoding');
like($err, qr/flakeid layout setting "flakeid\.node_bits" has an invalid value/,
	'a rejected flakeid.node_bits: decoding says which setting');
fails_with($node, 'SELECT nextflake()', $version >= 170000 ? '22023' : '55000',
	'a rejected flakeid.node_bits: generation');
is($node->safe_psql('postgres', 'SELECT state FROM flakeid_status()'),
	'layout setting invalid', 'a rejected flakeid.node_bits: the state says so')
  if $version >= 170000;
# nor is it a layout to accept, or one that is unchanged
fails_with($node, 'SELECT flakeid_accept_layout()', '22023',
	'a rejected flakeid.node_bits: accepting refuses')
  if $version >= 170000;

$node->stop;
$node->adjust_conf('postgresql.conf', 'flakeid.node_bits', '8');
$node->adjust_conf('postgresql.conf', 'flakeid.node_id', '1000');
unlink $node->data_dir . '/flakeid.state';
$node->start;
is($node->safe_psql('postgres', 'SELECT flakeid_node(0); SHOW flakeid.node_id'), "0\n-1",
	'a node id that does not fit is left unset, not set to the default');
if ($version >= 170000)
{
	$err = fails_with($node, 'SELECT nextflake()', '55000',
		'a node id that does not fit: generation');
	like($err, qr/flakeid\.node_id is not set/,
		'a node id that does not fit: never generates as node 0');
}

$node->stop;
done_testing();
