# Daily partitions of a flakeid key, made and kept by pg_partman.
#
# A flakeid is milliseconds since the epoch shifted left by 22 bits, so one
# day of IDs is 86,400,000 << 22 = 362,387,865,600,000, whatever the node
# bits, and multiples of it are the UTC midnights (with the default epoch,
# 2020-01-01 00:00 UTC).  pg_partman partitions integer columns only: the key
# is a bigint column with DEFAULT nextflake(), and an integer-range
# partition set with that interval gives one partition per UTC day.
#
# The test checks the numbers, that pg_partman refuses a flakeid column and
# accepts the bigint one, that rows go to the partition of the day they were
# made in, that maintenance makes partitions ahead of the newest row, that
# retention drops the partitions older than the newest row by more than the
# retention, and which conditions prune partitions.
#
# pg_partman 4 (Debian's package for PostgreSQL 15) and 5 (17 and later)
# differ in create_parent's p_type: 'native' and 'range'.

use strict;
use warnings;

use FlakeTest;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $day = 362387865600000;    # 86,400,000 << 22

my $node = flake_node('partman', node_id => 7);
$node->start;

my $available = $node->safe_psql('postgres',
	q{SELECT count(*) FROM pg_available_extensions WHERE name = 'pg_partman'});
unless ($available)
{
	my $major = $node->pg_version->major;
	if ((' ' . ($ENV{FLAKE_UNPACKAGED} // '') . ' ') =~
		/ postgresql-$major-partman /)
	{
		plan skip_all =>
		  "this Debian release has no pg_partman package for PostgreSQL $major";
	}
	BAIL_OUT("pg_partman is not installed: install postgresql-$major-partman "
		  . '(test/run does, as root)');
}

$node->safe_psql(
	'postgres', q{
	CREATE EXTENSION flakeid;
	CREATE SCHEMA partman;
	CREATE EXTENSION pg_partman SCHEMA partman;
});
my $partman = $node->safe_psql('postgres',
	q{SELECT extversion FROM pg_extension WHERE extname = 'pg_partman'});
my ($partman_major) = $partman =~ /^(\d+)\./;
my $type = $partman_major >= 5 ? 'range' : 'native';
note("pg_partman $partman, p_type '$type'");

#
# The numbers.
#
is($node->safe_psql('postgres', 'SELECT 86400000::bigint << 22'),
	$day, 'one day of IDs is 86,400,000 << 22 = 362,387,865,600,000');
is( $node->safe_psql(
		'postgres', q{
		SELECT flakeid_from_timestamp('2020-01-01 00:00+00')::bigint || ' '
			|| flakeid_from_timestamp('2020-01-02 00:00+00')::bigint || ' '
			|| flakeid_from_timestamp('2026-01-01 00:00+00')::bigint || ' '
			|| flakeid_from_timestamp('2026-01-02 00:00+00')::bigint}),
	"0 $day 794354201395200000 794716589260800000",
	'the epoch is 0, 2020-01-02 is one day, 2026-01-01 (day 2192) is '
	  . '2192 x 362,387,865,600,000');
is( $node->safe_psql(
		'postgres', qq{
		SELECT count(*) FROM generate_series(0, 25451) k
		WHERE flakeid_timestamp(k * $day)
			<> '2020-01-01 00:00+00'::timestamptz + k * interval '1 day'
		   OR flakeid_from_timestamp(
				'2020-01-01 00:00+00'::timestamptz + k * interval '1 day')::bigint
			<> k * $day}),
	'0',
	'every multiple of the interval up to the end of the range is a UTC midnight, '
	  . 'and back');

#
# pg_partman takes integer columns, not the flakeid type.
#
$node->safe_psql('postgres', q{
	CREATE TABLE typed (id flakeid NOT NULL DEFAULT nextflake())
		PARTITION BY RANGE (id)});
my ($ret, $out, $err) = $node->psql(
	'postgres', qq{
	SELECT partman.create_parent(p_parent_table := 'public.typed',
		p_control := 'id', p_type := '$type', p_interval := '$day')});
ok($ret != 0
	  && $err =~ /only supports partitioning of data types.*Supplied column is of type flakeid/,
	'pg_partman refuses a flakeid column')
  or diag("exit code $ret\nstderr: $err");

#
# The partition set, as the README shows it: a bigint key, partitions from
# today's UTC midnight, 4 days made ahead.
#
$node->safe_psql(
	'postgres', qq{
	CREATE TABLE events (
		id bigint NOT NULL DEFAULT nextflake(),
		body text,
		PRIMARY KEY (id)
	) PARTITION BY RANGE (id);
	SELECT partman.create_parent(
		p_parent_table := 'public.events',
		p_control := 'id',
		p_type := '$type',
		p_interval := '362387865600000',
		p_premake := 4,
		p_start_partition :=
			flakeid_from_timestamp(date_trunc('day', now(), 'UTC'))::bigint::text);
});

# Today's UTC midnight, as a day number, fixed for the rest of the test.
my $today = $node->safe_psql('postgres',
	q{SELECT (now() AT TIME ZONE 'UTC')::date - date '2020-01-01'});

# The partitions (not the default one), as "lower upper" in ID order.
my $bounds_sql = q{
	SELECT substring(b FROM 'FROM \(''?(\d+)''?\)')::bigint AS lo,
		substring(b FROM 'TO \(''?(\d+)''?\)')::bigint AS hi
	FROM (SELECT pg_get_expr(c.relpartbound, c.oid) AS b
		FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
		WHERE i.inhparent = 'events'::regclass) s
	WHERE b <> 'DEFAULT'};

sub partitions
{
	return split /\n/,
	  $node->safe_psql('postgres',
		"SELECT lo || ' ' || hi FROM ($bounds_sql) p ORDER BY lo");
}

# The days (numbers since the epoch) of the partitions, in order; a
# partition that is not one whole, aligned day shows as "bad".
sub partition_days
{
	return split /\n/, $node->safe_psql(
		'postgres', qq{
		SELECT CASE WHEN hi - lo = $day AND lo % $day = 0
			THEN (lo / $day)::text ELSE 'bad' END
		FROM ($bounds_sql) p ORDER BY lo});
}

is_deeply([ partition_days() ],
	[ $today .. $today + 4 ],
	'create_parent made today\'s partition and 4 ahead, one per UTC day');
is( $node->safe_psql(
		'postgres', q{
		SELECT count(*) FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
		WHERE i.inhparent = 'events'::regclass
		  AND pg_get_expr(c.relpartbound, c.oid) = 'DEFAULT'}),
	'1',
	'and a default partition');
is( $node->safe_psql(
		'postgres', qq{
		SELECT flakeid_timestamp(min(lo)) = date_trunc('day', now(), 'UTC')
		FROM ($bounds_sql) p}),
	't',
	'the first partition starts at today\'s UTC midnight');

# Ten earlier days, as a set that has been running for a while would have
# them.
$node->safe_psql('postgres',
	"SELECT partman.create_partition_id('public.events', "
	  . 'ARRAY(SELECT d * ' . $day . ' FROM generate_series('
	  . ($today - 10) . ', ' . ($today - 1) . ') d))');
is_deeply([ partition_days() ],
	[ $today - 10 .. $today + 4 ],
	'ten earlier days added: 15 daily partitions');

#
# Rows go to the partition of the day they were made in: today's from
# nextflake(), earlier days' with IDs made from their time (node 3, sequence
# 0..9, at 00:00:00.000, 12:00 and 23:59:59.999 UTC).
#
$node->safe_psql(
	'postgres', qq{
	INSERT INTO events (body) SELECT 'now' FROM generate_series(1, 1000);
	INSERT INTO events (id, body)
	SELECT flakeid_from_timestamp(date_trunc('day', now(), 'UTC')
			- d * interval '1 day' + t)::bigint + (3 << 12) + g,
		'day -' || d
	FROM generate_series(1, 10) d,
		unnest(ARRAY[interval '0', interval '12 hours',
			interval '23:59:59.999']) t,
		generate_series(0, 9) g;
});
is( $node->safe_psql(
		'postgres', q{
		SELECT count(*) || ' ' || count(*) FILTER (WHERE body = 'now'
				AND flakeid_node(id) = 7)
		FROM events}),
	'1300 1000',
	'1,300 rows, the 1,000 of today made by nextflake() on node 7');
is( $node->safe_psql(
		'postgres', q{
		SELECT count(*) FROM events e
		JOIN pg_class c ON c.oid = e.tableoid
		WHERE pg_get_expr(c.relpartbound, c.oid) = 'DEFAULT'
		   OR flakeid_timestamp(substring(pg_get_expr(c.relpartbound, c.oid)
				FROM 'FROM \(''?(\d+)''?\)')::bigint)
			<> date_trunc('day', flakeid_timestamp(e.id), 'UTC')}),
	'0',
	'every row is in the partition of the UTC day it was made in');
is( $node->safe_psql(
		'postgres', q{
		SELECT count(DISTINCT tableoid) FROM events WHERE body <> 'now'}),
	'10',
	'the rows of the ten earlier days fill their ten partitions');

#
# Maintenance keeps 4 partitions ahead of the newest row.
#
$node->safe_psql('postgres', q{SELECT partman.run_maintenance('public.events')});
is_deeply([ partition_days() ],
	[ $today - 10 .. $today + 4 ],
	'maintenance with the newest row today: nothing to add');
$node->safe_psql(
	'postgres', q{
	INSERT INTO events (id, body)
	VALUES (flakeid_from_timestamp(date_trunc('day', now(), 'UTC')
		+ interval '2 days 6 hours')::bigint, 'ahead')});
$node->safe_psql('postgres', q{SELECT partman.run_maintenance('public.events')});
is_deeply([ partition_days() ],
	[ $today - 10 .. $today + 6 ],
	'a row two days ahead: maintenance makes partitions up to 4 days after it');

#
# Retention: drop the partitions that end 7 days or more before the newest
# row.
#
$node->safe_psql(
	'postgres', qq{
	UPDATE partman.part_config
	SET retention = (7 * $day)::text, retention_keep_table = false
	WHERE parent_table = 'public.events'});
$node->safe_psql('postgres', q{SELECT partman.run_maintenance('public.events')});
# The newest row is on day today + 2: the partitions of days up to
# today - 6 end at least 7 days before it.
is_deeply([ partition_days() ],
	[ $today - 5 .. $today + 6 ],
	'retention of 7 days of IDs dropped the partitions that end 7 days '
	  . 'before the newest row');
is( $node->safe_psql(
		'postgres', q{
		SELECT string_agg(body, ',' ORDER BY body) FROM (
			SELECT DISTINCT body FROM events WHERE body LIKE 'day -%') s}),
	'day -1,day -2,day -3,day -4,day -5',
	'and with them the rows of those days');

#
# Pruning.  The partitions a query reads, from its plan.
#
sub scanned
{
	my ($where, $analyze) = @_;
	my $plan = $node->safe_psql('postgres',
		"EXPLAIN (COSTS OFF"
		  . ($analyze ? ', ANALYZE, TIMING OFF, SUMMARY OFF' : '')
		  . ") SELECT count(*) FROM events WHERE $where");
	my %rels = map { $_ => 1 } $plan =~ /\bon (events_(?:p\d+|default))\b/g;
	my ($removed) = $plan =~ /Subplans Removed: (\d+)/;
	note("WHERE $where:\n$plan");
	return (scalar(keys %rels), $removed // 0, $plan);
}

my $partitions = scalar(partitions()) + 1;    # with the default one
my ($n, $removed, $plan) = scanned(
	"id >= flakeid_from_timestamp(date_trunc('day', now(), 'UTC'))::bigint",
	1);
is($n + $removed, $partitions, 'plan: every partition is listed or removed')
  or diag($plan);
is($n, 8,
	'id >= flakeid_from_timestamp(today midnight)::bigint reads today\'s '
	  . 'partition, the 6 after it and the default one')
  or diag($plan);
cmp_ok($removed, '==', $partitions - 8,
	'... pruned when the executor starts, as now() is stable')
  or diag($plan);

my $lit_from = $node->safe_psql('postgres',
	q{SELECT (date_trunc('day', now(), 'UTC') - interval '2 days')::text});
my $lit_to = $node->safe_psql('postgres',
	q{SELECT (date_trunc('day', now(), 'UTC') - interval '1 day')::text});
($n, $removed, $plan) = scanned(
	"id >= flakeid_from_timestamp('$lit_from')::bigint "
	  . "AND id < flakeid_from_timestamp('$lit_to')::bigint");
is("$n $removed", '1 0',
	'a constant range of one day plans one partition, pruned when planning')
  or diag($plan);

($n, $removed, $plan) = scanned(
	"id >= flakeid_from_timestamp('$lit_from') "
	  . "AND id < flakeid_from_timestamp('$lit_to')");
is($n, $partitions,
	'without the cast to bigint, the comparison is on flakeid, and nothing '
	  . 'is pruned')
  or diag($plan);

is( $node->safe_psql(
		'postgres', qq{
		SELECT count(*) FROM events
		WHERE id >= flakeid_from_timestamp('$lit_from')::bigint
		  AND id < flakeid_from_timestamp('$lit_to')::bigint}),
	'30',
	'the pruned query returns the day\'s 30 rows');

$node->stop;
done_testing();
