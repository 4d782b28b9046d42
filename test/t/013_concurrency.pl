# Four sessions insert 250,000 rows each with DEFAULT nextflake() while
# parallel queries call nextflake() in parallel workers: every ID unique,
# each session's IDs increasing in insert order, and every ID counted in
# flakeid_status().  Each process counts its IDs in a slot of its own, by
# its place among the server's processes, where prepared transactions
# have places too, after the parallel workers': once more with room for
# 30 of them, the workers' IDs count.

use strict;
use warnings;

use FlakeFault;
use FlakeTest;
use IPC::Run;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = flake_node('concurrency', quiet => 1,
	node_id => 13,
	conf    => "max_parallel_workers = 8\n");
$node->start;
$node->safe_psql(
	'postgres', q{
CREATE EXTENSION flakeid;
CREATE TABLE t (
	ord bigserial,
	sess int NOT NULL,
	id flakeid NOT NULL DEFAULT nextflake());
CREATE TABLE big AS SELECT g FROM generate_series(1, 400000) g;
ANALYZE big;
});

my $parallel = q{
SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0;
SET max_parallel_workers_per_gather = 2;
};

# The plan calls nextflake() below the Gather, in the workers.
my $plan = $node->safe_psql('postgres',
	$parallel . 'EXPLAIN (VERBOSE, COSTS OFF) SELECT nextflake() AS id FROM big');
like($plan, qr/Gather/, 'the query has a parallel plan');
like(
	$plan,
	qr/Parallel Seq Scan on public\.big\n\s+Output: nextflake\(\)/,
	'nextflake() is evaluated in the parallel scan, below the Gather');

# Four sessions, 2500 transactions each of 100 rows.
my ($bench, $out, $err) = start_pgbench($node, 'insert100',
	'INSERT INTO t (sess) SELECT :client_id FROM generate_series(1, 100);', 600,
	'-c', '4', '-j', '2', '-t', '2500');

ok( wait_until(
		sub { $node->safe_psql('postgres', 'SELECT count(*) FROM t') > 0 },
		60),
	'the four sessions are inserting');

# Meanwhile, parallel queries make IDs in their workers.
my $workers_rows = 0;
foreach my $i (1 .. 3)
{
	my $analyze = $node->safe_psql('postgres',
		    $parallel
		  . "EXPLAIN (ANALYZE, VERBOSE, COSTS OFF, TIMING OFF) "
		  . "CREATE TABLE par$i AS SELECT nextflake() AS id FROM big");
	my ($launched) = $analyze =~ /Workers Launched: (\d+)/;
	ok(defined $launched && $launched > 0,
		"parallel query $i launched workers") or diag($analyze);
	$workers_rows += $_ foreach $analyze =~ /Worker \d+:\s+actual rows=(\d+)/g;
}
ok($workers_rows > 0,
	"parallel workers called nextflake() ($workers_rows rows made in workers)");

my $bench_ok = $bench->finish;
ok($bench_ok, 'pgbench ran without error') or diag($$err);
like($$out, qr/number of transactions actually processed: 10000\/10000/,
	'pgbench ran all 10000 transactions');

is( $node->safe_psql('postgres',
		'SELECT string_agg(n::text, \' \' ORDER BY sess) FROM '
		  . '(SELECT sess, count(*) AS n FROM t GROUP BY sess) s'),
	'250000 250000 250000 250000',
	'each session inserted 250,000 rows');
is( $node->safe_psql('postgres',
		'SELECT count(*) FROM par1 UNION ALL SELECT count(*) FROM par3'),
	"400000\n400000",
	'each parallel query made one ID per row');
ids_unique(
	$node,
	'SELECT id FROM t UNION ALL SELECT id FROM par1 '
	  . 'UNION ALL SELECT id FROM par2 UNION ALL SELECT id FROM par3',
	'four sessions and three parallel queries');
ids_increasing($node, 'SELECT sess, ord, id FROM t', 'ord',
	"each session's IDs in insert order", partition => 'sess');
is( $node->safe_psql(
		'postgres', q{
SELECT count(*) FROM (SELECT id FROM t UNION ALL SELECT id FROM par2) s
WHERE flakeid_node(id) <> 13}),
	0,
	'every ID, from workers too, carries node id 13');
my $status = status_of($node);
ok($status->{issued} >= 1_000_000 + 3 * 400_000,
	"flakeid_status() counts the IDs issued, workers included ($status->{issued})");

$node->append_conf('postgresql.conf', 'max_prepared_transactions = 30');
$node->restart;
my $analyze = $node->safe_psql('postgres',
	    $parallel
	  . "EXPLAIN (ANALYZE, VERBOSE, COSTS OFF, TIMING OFF) "
	  . "CREATE TABLE par4 AS SELECT nextflake() AS id FROM big");
my @rows = $analyze =~ /Worker \d+:\s+actual rows=(\d+)/g;
ok(@rows && (grep { $_ > 0 } @rows),
	'with max_prepared_transactions = 30, parallel workers call nextflake()')
  or diag($analyze);
$status = status_of($node);
ok($status->{issued} >= 400_000,
	"with max_prepared_transactions = 30, flakeid_status() counts the workers' IDs ($status->{issued})");

$node->stop;
done_testing();
