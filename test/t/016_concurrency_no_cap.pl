# With node_bits = 0 no millisecond runs out of sequence numbers, so the
# IDs stay at the clock and every call takes the one-atomic-operation path,
# whose ticks are skipped whenever the clock has moved past them.  Four
# sessions insert rows whose defaults read the clock before and after
# nextflake(): every ID unique, none behind the clock at its call, and
# strictly increasing across the sessions in real time (an ID whose call
# ended before another call began is the smaller).

use strict;
use warnings;

use FlakeTest;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = flake_node('no_cap', quiet => 1,
	node_id => 0,
	conf    => "flakeid.node_bits = 0\n");
$node->start;
$node->safe_psql(
	'postgres', q{
CREATE EXTENSION flakeid;
CREATE TABLE t (
	ord bigserial,
	sess int NOT NULL,
	t0 timestamptz NOT NULL DEFAULT clock_timestamp(),
	id flakeid PRIMARY KEY DEFAULT nextflake(),
	t1 timestamptz NOT NULL DEFAULT clock_timestamp());
});
is($node->safe_psql('postgres', 'SELECT node_bits FROM flakeid_status()'),
	'0', 'the generator runs with node_bits = 0');

my ($bench, $out, $err) = start_pgbench($node, 'insert100_nocap',
	'INSERT INTO t (sess) SELECT :client_id FROM generate_series(1, 100);', 600,
	'-c', '4', '-j', '2', '-t', '1000');
ok($bench->finish, 'pgbench ran without error') or diag($$err);
like($$out, qr/number of transactions actually processed: 4000\/4000/,
	'pgbench ran all 4000 transactions');

is($node->safe_psql('postgres', 'SELECT count(DISTINCT sess) FROM t'),
	'4', 'four sessions inserted');
ids_unique($node, 'SELECT id FROM t', 'four sessions with node_bits = 0');
ids_increasing($node, 'SELECT sess, ord, id FROM t', 'ord',
	"each session's IDs in insert order", partition => 'sess');

# the defaults are evaluated in column order: t0, then id, then t1
is( $node->safe_psql(
		'postgres', q{
SELECT count(*) FROM t
WHERE flakeid_timestamp(id) < date_trunc('milliseconds', t0)
   OR flakeid_timestamp(id) > t1 + current_setting('flakeid.max_lead')::interval}),
	'0',
	'no ID is behind the clock at its call, nor further ahead than flakeid.max_lead');
cmp_ok($node->safe_psql('postgres',
		'SELECT count(DISTINCT flakeid_timestamp(id)) FROM t'),
	'>', 10, 'the IDs follow the clock through many milliseconds');

# Real-time order across sessions: for each row, the largest ID of the
# calls that ended before its call began must be smaller than its ID.
$node->safe_psql(
	'postgres', q{
CREATE TABLE ended AS
	SELECT t1, max(id::bigint) OVER (ORDER BY t1, id) AS max_before FROM t;
CREATE INDEX ON ended (t1);
ANALYZE ended;
});
my $pairs = $node->safe_psql(
	'postgres', q{
SELECT count(*) FILTER (WHERE prior IS NOT NULL),
	   count(*) FILTER (WHERE prior >= id::bigint)
FROM (SELECT id,
			 (SELECT max_before FROM ended e WHERE e.t1 < t.t0
			  ORDER BY e.t1 DESC LIMIT 1) AS prior
	  FROM t) s});
my ($checked, $broken) = split /\|/, $pairs;
ok($checked > 300_000,
	"rows with calls that ended before theirs began: $checked");
is($broken, '0',
	'every ID is greater than every ID whose call ended before its call began');

$node->stop;
done_testing();
