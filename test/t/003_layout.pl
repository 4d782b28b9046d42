# The layout parameters: 16 node bits (the Hazelcast layout), a non-default
# epoch, and invalid layouts that must keep a preloaded server from
# starting rather than fall back to the defaults.

use strict;
use warnings;

use FlakeTest;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

# 16 node bits leave 6 bits of sequence
my $wide = flake_node('wide', node_id => 65535, conf => 'flakeid.node_bits = 16');
$wide->start;
$wide->safe_psql(
	'postgres', q{
	CREATE EXTENSION flakeid;
	CREATE TABLE burst AS
		SELECT g, nextflake() AS id FROM generate_series(1, 20000) g;
	CREATE TABLE batch AS
		SELECT row_number() OVER () AS i, id FROM nextflakes(5000) AS id});
is( $wide->safe_psql('postgres',
		'SELECT node_id, node_bits FROM flakeid_status()'),
	'65535|16', 'flakeid_status() reports node 65535 with 16 node bits');

is( $wide->safe_psql(
		'postgres', q{
	SELECT count(*) FILTER (WHERE flakeid_node(id) <> 65535) || ' '
		|| count(*) FILTER (WHERE flakeid_sequence(id) NOT BETWEEN 0 AND 63) || ' '
		|| min(flakeid_sequence(id)) || ' ' || max(flakeid_sequence(id))
	FROM (SELECT id FROM burst UNION ALL SELECT id FROM batch) s}),
	'0 0 0 63',
	'IDs decode to node 65535 with sequences 0..63, all of them used');

# the same parts by plain integer arithmetic on the bigint
is( $wide->safe_psql(
		'postgres', q{
	SELECT count(*) FILTER (WHERE
			(id::bigint >> 6) & 65535 <> flakeid_node(id)
			OR id::bigint & 63 <> flakeid_sequence(id)
			OR flakeid_timestamp(id) <> timestamptz '2020-01-01 00:00:00+00'
				+ (id::bigint >> 22) * interval '1 ms'
			OR (flakeid_decode(id)).node <> flakeid_node(id)
			OR id::bigint <= 0)
		|| ' ' || count(*) FILTER (WHERE (id::bigint >> 6) & 65535 = 65535)
	FROM (SELECT id FROM burst UNION ALL SELECT id FROM batch) s}),
	'0 25000',
	'bit arithmetic on the bigint agrees with the decode functions');

ids_increasing($wide, 'SELECT g, id FROM burst', 'g', 'a burst of 20000 IDs');
is( $wide->safe_psql(
		'postgres', q{
	SELECT bool_and(
		(id::bigint >> 22 = prev::bigint >> 22
			AND flakeid_sequence(id) = flakeid_sequence(prev) + 1)
		OR (id::bigint >> 22 > prev::bigint >> 22
			AND flakeid_sequence(id) = 0 AND flakeid_sequence(prev) = 63))
		AND min(id) > (SELECT max(id) FROM burst)
	FROM (SELECT id, lag(id) OVER (ORDER BY i) AS prev FROM batch) s
	WHERE prev IS NOT NULL}),
	't',
	'nextflakes(5000) is consecutive across 64-ID milliseconds, above the burst');
$wide->stop;

# another epoch
my $epoch = flake_node(
	'epoch',
	node_id => 3,
	conf    => "flakeid.node_bits = 10\n"
	  . "flakeid.epoch = '2024-01-01 00:00:00+00'");
$epoch->start;
$epoch->safe_psql('postgres', 'CREATE EXTENSION flakeid');
is( $epoch->safe_psql(
		'postgres', q{
	SELECT epoch = '2024-01-01 00:00:00+00' FROM flakeid_status()}),
	't',
	'flakeid_status() reports the configured epoch');
is( $epoch->safe_psql(
		'postgres', q{
	SELECT flakeid_from_timestamp('2024-01-01 00:00:00+00')::bigint = 0,
		flakeid_from_timestamp('2024-01-01 00:00:00.001+00')::bigint = 1::bigint << 22}),
	't|t',
	'flakeid_from_timestamp() counts from the configured epoch');
fails_with($epoch,
	q{SELECT flakeid_from_timestamp('2023-12-31 23:59:59.999+00')},
	'22008', 'a moment before the epoch');
is( $epoch->safe_psql(
		'postgres', q{
	SELECT abs(extract(epoch FROM flakeid_timestamp(x) - t)) < 1,
		(x::bigint >> 22) = floor(extract(epoch FROM
			flakeid_timestamp(x) - timestamptz '2024-01-01 00:00:00+00') * 1000),
		abs((x::bigint >> 22) - (extract(epoch FROM t) - 1704067200) * 1000) < 1000,
		flakeid_node(x)
	FROM (SELECT nextflake() AS x, clock_timestamp() AS t) s}),
	't|t|t|3',
	'IDs count milliseconds since 2024-01-01 and decode to now');

# The time field must not count from the default epoch: 2020 to 2024 is
# 1461 days, and IDs are that much smaller than they would be under it.
is( $epoch->safe_psql(
		'postgres', q{
	SELECT ((timestamptz '2024-01-01 00:00:00+00' - timestamptz '2020-01-01 00:00:00+00')
			= interval '1461 days')
		AND nextflake()::bigint >> 22
			< extract(epoch FROM clock_timestamp() - timestamptz '2020-01-01 00:00:00+00') * 1000
			- 1461::bigint * 86400000 + 1000}),
	't',
	'the time field is relative to the configured epoch, not the default');
$epoch->stop;

# An epoch before 2000, PostgreSQL's own: moments before 2000 are negative
# in its timestamps, and flakeid_from_timestamp() takes the millisecond
# that holds the moment (floor), never the next one (truncation toward
# zero), also for a fraction of a millisecond.
my $old_epoch = flake_node(
	'old_epoch',
	node_id => 3,
	conf    => "flakeid.epoch = '1990-01-01 00:00:00+00'");
$old_epoch->start;
$old_epoch->safe_psql('postgres', 'CREATE EXTENSION flakeid');
is( $old_epoch->safe_psql(
		'postgres', q{
	SELECT flakeid_from_timestamp(t)::bigint >> 22,
		flakeid_timestamp(flakeid_from_timestamp(t)) <= t,
		flakeid_timestamp(flakeid_from_timestamp(t)) > t - interval '1 ms'
	FROM (VALUES (timestamptz '1999-12-31 23:59:59.9995+00'),
				 (timestamptz '1995-06-01 12:00:00.0001+00'),
				 (timestamptz '1999-12-31 23:59:59.999+00')) v(t)}),
	"315532799999|t|t\n170856000000|t|t\n315532799999|t|t",
	'before 2000 a moment maps to the millisecond that holds it');
$old_epoch->stop;

# The same moment written with UTC offsets is the same epoch: the server
# starts with the layout it recorded, unchanged, and decodes alike.  An
# offset read the wrong way round would move the epoch by twice the
# offset, and the layout would then differ from the recorded one.
foreach my $same ('2024-01-01 05:30:00+05:30', '2023-12-31T19:00:00-05',
	'2023-12-31 22:00:00-0200', '2024-01-01T00:00:00.000Z', '2024-01-01 00:00 UTC')
{
	$epoch->adjust_conf('postgresql.conf', 'flakeid.epoch', "'$same'");
	$epoch->start;
	is( $epoch->safe_psql(
			'postgres', q{
	SELECT state, epoch = '2024-01-01 00:00:00+00',
		flakeid_from_timestamp('2024-01-01 00:00:00.001+00')::bigint = 1::bigint << 22
	FROM flakeid_status()}),
		'ready|t|t',
		"flakeid.epoch = '$same' is the same epoch");
	$epoch->stop;
}

# Invalid layouts: a preloaded server refuses to start instead of using the
# default layout in their place.
my $bad = flake_node('bad_layout');
foreach my $case (
	[ 'flakeid.epoch', q{'not a timestamp'} ],
	[ 'flakeid.epoch', q{'2024-13-01 00:00:00+00'} ],
	[ 'flakeid.epoch', q{'2024-01-01 00:00:00 Europe/Paris'} ],
	[ 'flakeid.node_bits', '17' ],
	[ 'flakeid.node_bits', q{''} ],
	[ 'flakeid.epoch', q{''} ])
{
	my ($guc, $value) = @$case;
	$bad->append_conf('postgresql.conf', "$guc = $value");
	start_fails($bad, "$guc = $value",
		qr/(?:invalid value for|outside the valid range for) parameter "\Q$guc\E"/);
	$bad->adjust_conf('postgresql.conf', $guc, undef);
}

done_testing();
