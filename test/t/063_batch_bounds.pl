# The bounds of nextflakes(n): the most IDs one call may reserve is what
# flakeid.max_lead holds, to the ID (20,480,000 in the default layout's
# 4,096 a millisecond and 5 s; 320,000 with 16 node bits' 64), and one more
# is refused before anything is reserved.  A call that fails because it
# would wait for the clock longer than flakeid.max_clock_wait reserves
# nothing either: a role that repeats such a call does not push the IDs
# ahead of the clock, and other sessions go on generating.

use strict;
use warnings;

use FlakeTest;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

# The cap, exactly, in two layouts.
foreach my $case ([ 10, 20480000 ], [ 16, 320000 ])
{
	my ($node_bits, $cap) = @$case;
	my $node = flake_node("cap_$node_bits", node_id => 1,
		conf => "flakeid.node_bits = $node_bits");
	$node->start;
	$node->safe_psql('postgres', 'CREATE EXTENSION flakeid');
	my $more = $cap + 1;
	my $err = fails_with($node, "SELECT count(*) FROM nextflakes($more)", '54000',
		"$node_bits node bits: $more IDs in one call");
	like($err, qr/cannot reserve $more flakeid values in one call/,
		"$node_bits node bits: the error names the count");
	is($node->safe_psql('postgres', 'SELECT issued FROM flakeid_status()'),
		'0', "$node_bits node bits: the refused call reserved nothing");
	is($node->safe_psql('postgres',
			"SELECT count(*), count(DISTINCT id) FROM nextflakes($cap) id"),
		"$cap|$cap", "$node_bits node bits: $cap IDs in one call, all of them");
	$node->stop;
}

# A failing batch reserves nothing.  The IDs are first taken 4.98 s ahead
# of the clock (reserved, not read: at once); right after, in the same
# session, a role without superuser asks 100 times for the most its
# flakeid.max_batch allows (1,000,000, 244 ms of the sequence), which
# would take them past flakeid.max_lead, and with flakeid.max_clock_wait
# at 0 each call fails at once.
my $node = flake_node('failing', node_id => 2, conf => 'flakeid.max_clock_wait = 0');
$node->start;
$node->safe_psql('postgres', q{
CREATE EXTENSION flakeid;
CREATE ROLE app LOGIN;
});
my ($ret, $out, $err) = psql_as($node, q{
SELECT nextflakes(20400000) LIMIT 1;
SET ROLE app;
DO $$
DECLARE
	failed int := 0;
BEGIN
	FOR i IN 1 .. 100 LOOP
		BEGIN
			PERFORM count(*) FROM nextflakes(1000000);
		EXCEPTION WHEN configuration_limit_exceeded THEN
			failed := failed + 1;
		END;
	END LOOP;
	RAISE NOTICE 'failed: %', failed;
END $$;});
my ($failed) = $err =~ /failed: (\d+)/;
cmp_ok($failed // 0, '>=', 50, ($failed // 0) . ' of 100 calls failed (53400), waiting too long for the clock')
  or diag($err);
cmp_ok($node->safe_psql('postgres', 'SELECT lead_ms FROM flakeid_status()'),
	'<=', 5000 + 1000, 'the IDs are still within flakeid.max_lead of the clock');
($ret, $out, $err) = psql_as($node,
	'SELECT flakeid_node(nextflake()), flakeid_node(id) FROM nextflakes(1000) id LIMIT 1',
	user => 'app');
is($out, '2|2', 'another call of the role generates at once') or diag($err);
$node->stop;

done_testing();
