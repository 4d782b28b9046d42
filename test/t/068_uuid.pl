# flakeid_to_uuid() and flakeid_from_uuid() under other layouts: no node
# bits, 16 node bits, another epoch, and a server that is not preloaded and
# takes its layout from the settings.  On each, IDs across the layout's
# whole range and IDs made now give valid version-7 UUIDs that carry their
# Unix millisecond (PostgreSQL 18's uuid_extract_timestamp() reads it too),
# read back exactly and sort as the IDs do.  A UUID made under one layout
# is refused under every other, and read back under the same layout on
# another server.

use strict;
use warnings;

use FlakeTest;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my @layouts = (
	[ 'default', 1577836800000, node_id => 42 ],
	[ 'nodeless', 1577836800000, node_id => 0, conf => 'flakeid.node_bits = 0' ],
	[ 'wide', 1577836800000, node_id => 65535, conf => 'flakeid.node_bits = 16' ],
	[
		'epoch2024', 1704067200000,
		node_id => 3,
		conf    => "flakeid.epoch = '2024-01-01 00:00:00+00'"
	],
	[
		'wide_settings', 1577836800000,
		node_id => 7,
		conf    => 'flakeid.node_bits = 16',
		preload => 0
	]);

# A function that reads a UUID back, or says which SQLSTATE refused it.
my $read_back = q{
CREATE FUNCTION pg_temp.read_back(u uuid) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
	RETURN flakeid_from_uuid(u)::text;
EXCEPTION WHEN OTHERS THEN
	RETURN 'SQLSTATE ' || SQLSTATE;
END $$;
};

my (%node, %made);
foreach my $l (@layouts)
{
	my ($name, $epoch_ms, %opts) = @$l;
	my $node = flake_node($name, %opts);
	$node->start;
	$node->safe_psql('postgres', 'CREATE EXTENSION flakeid');
	$node{$name} = $node;
	my $version = $node->safe_psql('postgres', 'SHOW server_version_num');
	# IDs made now where this server can generate (not preloaded: from 17)
	my $generates = !defined $opts{preload} || $version >= 170000;

	$node->safe_psql(
		'postgres', qq{
	SELECT setseed(0.68);
	CREATE TABLE ids AS
		SELECT ((ms << 22) | low)::flakeid AS id
		FROM (SELECT 0::bigint UNION ALL SELECT (1::bigint << 41) - 1
			  UNION ALL SELECT floor(random() * (1::bigint << 41))::bigint
				FROM generate_series(1, 1000)) m(ms),
			 (SELECT 0::bigint UNION ALL SELECT (1::bigint << 22) - 1
			  UNION ALL SELECT floor(random() * (1::bigint << 22))::bigint) l(low)
		@{[ $generates ? 'UNION SELECT nextflakes(5000)' : '' ]};
	CREATE TABLE uuids AS
		SELECT id, u, replace(u::text, '-', '') AS h
		FROM (SELECT id, flakeid_to_uuid(id) AS u FROM ids) s});

	is( $node->safe_psql(
			'postgres', qq{
	SELECT count(*) FILTER (WHERE substr(h, 13, 1) <> '7'
			OR ('x' || substr(h, 17, 1))::bit(4)::int >> 2 <> 2) || ' '
		|| count(*) FILTER (WHERE ('x' || substr(h, 1, 12))::bit(48)::bigint
			<> (id::bigint >> 22) + $epoch_ms) || ' '
		|| count(*) FILTER (WHERE flakeid_from_uuid(u) IS DISTINCT FROM id) || ' '
		|| (array_agg(id ORDER BY id) = array_agg(id ORDER BY u)) || ' '
		|| (count(*) > 3000)
	FROM uuids}),
		'0 0 0 true true',
		"$name: version 7, variant 10, the Unix millisecond from epoch $epoch_ms, "
		  . 'read back, uuid order is ID order');

	if ($version >= 180000)
	{
		is( $node->safe_psql(
				'postgres', q{
	SELECT count(*) FILTER (WHERE uuid_extract_timestamp(u) <> flakeid_timestamp(id))
		|| ' ' || count(*) FILTER (WHERE uuid_extract_version(u) <> 7)
	FROM uuids}),
			'0 0',
			"$name: uuid_extract_timestamp() gives the ID's time");
	}

	# 200 of them, to try on the other servers
	$made{$name} = [
		map { [ split /\|/ ] } split /\n/,
		$node->safe_psql(
			'postgres', 'SELECT u, id FROM uuids ORDER BY md5(h) LIMIT 200')
	];
}

# Every server refuses the UUIDs of every other layout with 22023, and
# reads back those of its own layout made on another server.
my %same = (wide => 'wide_settings', wide_settings => 'wide');
foreach my $reader (map { $_->[0] } @layouts)
{
	foreach my $maker (map { $_->[0] } @layouts)
	{
		next if $reader eq $maker;
		my $values = join ',', map { "('$_->[0]'::uuid, $_->[1]::bigint)" } @{ $made{$maker} };
		my $got = $node{$reader}->safe_psql(
			'postgres', qq{$read_back
	SELECT count(*) FILTER (WHERE r = 'SQLSTATE 22023') || ' '
		|| count(*) FILTER (WHERE r = id::text) || ' ' || count(*)
	FROM (SELECT pg_temp.read_back(u) AS r, id FROM (VALUES $values) v(u, id)) s});
		if (($same{$reader} // '') eq $maker)
		{
			is($got, '0 200 200', "$reader reads back the UUIDs of $maker, the same layout");
		}
		else
		{
			is($got, '200 0 200', "$reader refuses the UUIDs of $maker");
		}
	}
}

$node{$_->[0]}->stop foreach @layouts;
done_testing();
