# Bursts far beyond 4096 IDs per millisecond: millions of IDs from one
# backend, then from two backends at once while a third session samples
# flakeid_status().  No duplicate, nextflakes() batches ascending and
# consecutive, no ID returned further ahead of the clock than
# flakeid.max_lead, and callers that outran it waited.  Calls take their
# IDs in the order they come and wait for the clock afterwards, so the
# IDs reserved (flakeid_status().lead_ms) may run further ahead, by at
# most flakeid.max_clock_wait.

use strict;
use warnings;

use FlakeFault;
use FlakeTest;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = flake_node('burst', quiet => 1, node_id => 12, conf => 'work_mem = 64MB');
$node->start;
$node->safe_psql('postgres', 'CREATE EXTENSION flakeid');
my $max_lead = $node->safe_psql('postgres',
	"SELECT setting FROM pg_settings WHERE name = 'flakeid.max_lead'");
is($max_lead, 5000, 'flakeid.max_lead is the default, 5000 ms');
my $tick = tick_sql('id');

# Before the bursts, the server's first ID: flakeid_status() counts it
# and shows it as the last one.
my $first = $node->safe_psql('postgres', 'SELECT nextflake()');
is( $node->safe_psql('postgres',
		"SELECT issued, last_id = '$first', last_time = flakeid_timestamp('$first') FROM flakeid_status()"),
	'1|t|t', 'after the first ID, flakeid_status() counts one issued and shows it as the last');

# One backend: 3 million single calls, then 2 million in 20 batches.
is( $node->safe_psql(
		'postgres',
		'SELECT count(*) || \' \' || count(DISTINCT id) FROM '
		  . '(SELECT nextflake() AS id FROM generate_series(1, 3000000)) s'),
	'3000000 3000000',
	'3 million nextflake() calls in one statement: all distinct');

$node->safe_psql(
	'postgres', q{
CREATE UNLOGGED TABLE batched AS
	SELECT g, o, id
	FROM generate_series(1, 20) g,
		LATERAL nextflakes(100000 + 0 * g) WITH ORDINALITY AS x(id, o);
});
# Within a batch the tick minus the ordinal is constant when the IDs are
# consecutive and in order; the batches must follow one another.
$node->safe_psql(
	'postgres', qq{
CREATE TABLE batch_bounds AS
	SELECT g, count(*) AS n, min($tick - o) AS base_lo, max($tick - o) AS base_hi,
		min(id) AS lo, max(id) AS hi
	FROM batched GROUP BY g;
});
is($node->safe_psql('postgres', 'SELECT count(*) || \' \' || sum(n) FROM batch_bounds'),
	'20 2000000', '20 calls of nextflakes(100000) returned 2 million IDs');
is($node->safe_psql('postgres',
		'SELECT count(*) FROM batch_bounds WHERE base_lo <> base_hi'),
	0, 'each batch is 100000 consecutive IDs in ascending order');
is( $node->safe_psql(
		'postgres', q{
SELECT count(*) FROM (
	SELECT lo, lag(hi) OVER (ORDER BY g) AS prev_hi FROM batch_bounds) s
WHERE lo <= prev_hi}),
	0,
	'each batch is above the one before');

# Batches and single calls interleaved, faster than the clock.
$node->safe_psql(
	'postgres', q{
CREATE UNLOGGED TABLE mixed AS
	SELECT g, k, id
	FROM generate_series(1, 2000) g,
		LATERAL (SELECT 1 AS k, nextflakes(5 + 0 * g) AS id
				 UNION ALL SELECT 2, nextflake()) x;
});
is($node->safe_psql('postgres', 'SELECT count(*) FROM mixed'),
	12000, 'nextflakes(5) and nextflake() alternated 2000 times');
ids_unique($node, 'SELECT id FROM mixed',
	'nextflakes(5) alternating with nextflake()');

# Two backends at once, while a third samples the lead.
$node->safe_psql(
	'postgres', q{
CREATE UNLOGGED TABLE ranges (b int, g int, lo flakeid, hi flakeid, n bigint,
	t1 timestamptz);
CREATE UNLOGGED TABLE singles (b int, id flakeid, t1 timestamptz);
CREATE UNLOGGED TABLE samples (lead_ms bigint, waits bigint);
CREATE TABLE done (b int);
});
my $before = status_of($node);

my $sampler = $node->background_psql('postgres', timeout => 300);
$sampler->query_until(
	qr/sampling/, q{
\echo sampling
DO $$
BEGIN
	FOR i IN 1 .. 30000 LOOP
		INSERT INTO samples SELECT lead_ms, waits FROM flakeid_status();
		EXIT WHEN (SELECT count(*) FROM done) >= 2;
		PERFORM pg_sleep(0.002);
	END LOOP;
END $$;
});

# Each backend first reserves 12 million IDs in three steps (about 2.9 s of
# sequence each, more than max_lead together, so the bound is met at once),
# then 10 times: one million IDs from nextflakes() (their bounds kept) and
# 20000 nextflake() calls (the IDs kept).
my @bursters;
foreach my $b (1, 2)
{
	my $script =
	  "\\echo burst $b\n" . "SELECT nextflakes(4000000) LIMIT 1;\n" x 3;
	foreach my $g (1 .. 10)
	{
		$script .=
		    "INSERT INTO ranges SELECT $b, $g, min(id), max(id), count(*), clock_timestamp() "
		  . "FROM (SELECT nextflakes(1000000) AS id) s;\n"
		  . "INSERT INTO singles SELECT $b, nextflake(), clock_timestamp() "
		  . "FROM generate_series(1, 20000);\n";
	}
	$script .= "INSERT INTO done VALUES ($b);\n";
	my $session = $node->background_psql(
		'postgres',
		timeout       => 300,
		on_error_stop => 0);
	$session->query_until(qr/burst $b/, $script);
	push @bursters, $session;
}

foreach my $b (1, 2)
{
	my ($out, $failed) = $bursters[ $b - 1 ]->query('SELECT 1');
	ok(!$failed, "burst $b ran without error")
	  or diag($bursters[ $b - 1 ]->{stderr});
	$bursters[ $b - 1 ]->quit;
}
$sampler->query_safe('SELECT 1');
$sampler->quit;
my $after = status_of($node);

# No duplicate: each range is consecutive, the ranges do not overlap, the
# single IDs are distinct and none falls in a range.
my $lo = tick_sql('lo');
my $hi = tick_sql('hi');
is($node->safe_psql('postgres', 'SELECT count(*) || \' \' || sum(n) FROM ranges'),
	'20 20000000', 'the two backends got 20 batches of one million');
is( $node->safe_psql(
		'postgres', "SELECT count(*) FROM ranges WHERE $hi - $lo <> n - 1"),
	0,
	'each batch spans exactly as many IDs as it returned');
is( $node->safe_psql(
		'postgres', q{
SELECT count(*) FROM (
	SELECT lo, lag(hi) OVER (ORDER BY lo) AS prev_hi FROM ranges) s
WHERE lo <= prev_hi}),
	0,
	'no two batches overlap');
is( $node->safe_psql(
		'postgres', q{
SELECT count(*) FROM (
	SELECT lo, lag(hi) OVER (PARTITION BY b ORDER BY g) AS prev_hi FROM ranges) s
WHERE lo <= prev_hi}),
	0,
	"each backend's batches ascend");
ids_unique($node, 'SELECT id FROM singles', 'two backends, single calls');
$node->safe_psql('postgres',
	'CREATE INDEX ON singles (id); ANALYZE singles; ANALYZE ranges');
is( $node->safe_psql(
		'postgres',
		'SELECT count(*) FROM ranges r JOIN singles s ON s.id BETWEEN r.lo AND r.hi'),
	0,
	'no single ID falls in a batch');
ids_unique(
	$node,
	'SELECT id FROM singles UNION ALL SELECT id FROM batched UNION ALL SELECT id FROM mixed',
	'all IDs kept');
is( $node->safe_psql(
		'postgres',
		'SELECT count(*) FROM singles WHERE flakeid_node(id) <> 12'),
	0,
	'every ID carries node id 12');

# No ID was returned further ahead of the clock than its bound, the IDs
# reserved ran ahead by at most max_lead and max_clock_wait, and the burst
# had to wait for the clock.
my ($ahead_singles, $lead_singles) = split /\|/, $node->safe_psql(
	'postgres', q{
SELECT count(*) FILTER (WHERE flakeid_timestamp(id) > t1 + current_setting('flakeid.max_lead')::interval),
	max(extract(epoch FROM flakeid_timestamp(id) - t1) * 1000)::int
FROM singles});
is($ahead_singles, 0,
	"no single ID was further ahead of the clock than flakeid.max_lead when it was returned "
	  . "(at most $lead_singles ms)");
my ($ahead_batches, $lead_batches) = split /\|/, $node->safe_psql(
	'postgres', q{
SELECT count(*) FILTER (WHERE flakeid_timestamp(hi) > t1 + current_setting('flakeid.max_lead')::interval),
	max(extract(epoch FROM flakeid_timestamp(hi) - t1) * 1000)::int
FROM ranges});
is($ahead_batches, 0,
	"no batch ended further ahead of the clock than flakeid.max_lead when it was returned "
	  . "(at most $lead_batches ms)");
my ($samples, $max_seen) = split /\|/,
  $node->safe_psql('postgres', 'SELECT count(*), max(lead_ms) FROM samples');
my $max_clock_wait = $node->safe_psql('postgres',
	"SELECT setting FROM pg_settings WHERE name = 'flakeid.max_clock_wait'");
ok($samples > 0, "the third session took $samples samples");
ok($max_seen <= $max_lead + $max_clock_wait,
	"the IDs reserved ran at most max_lead and max_clock_wait ahead ($max_seen ms seen)");
my $waits = $after->{waits} - $before->{waits};
ok($waits > 0, "callers waited for the clock ($waits waits)");
ok($after->{lead_ms} <= $max_lead + $max_clock_wait,
	'the lead is within its bound after the burst');
note "burst: 24 million IDs reserved, 20 million in batches and 400000 single calls "
  . "from two backends, $waits waits, lead at most $max_seen ms in $samples samples";

$node->stop;
done_testing();
