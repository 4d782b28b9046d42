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
$node->safe_psql('postgres', CLOCKED_TABLE_SQL);
is($node->safe_psql('postgres', 'SELECT node_bits FROM flakeid_status()'),
	'0', 'the generator runs with node_bits = 0');

insert_clocked($node, 1000);
ids_unique($node, 'SELECT id FROM t', 'four sessions with node_bits = 0');
ids_increasing($node, 'SELECT sess, ord, id FROM t', 'ord',
	"each session's IDs in insert order", partition => 'sess');

# the defaults are evaluated in column order: t0, then id, then t1
ids_at_their_clock($node);
cmp_ok($node->safe_psql('postgres',
		'SELECT count(DISTINCT flakeid_timestamp(id)) FROM t'),
	'>', 10, 'the IDs follow the clock through many milliseconds');

# Real-time order across sessions: for each row, the largest ID of the
# calls that ended before its call began must be smaller than its ID.
my ($checked, $broken) = calls_ended_before($node, 't.t0');
ok($checked > 300_000,
	"rows with calls that ended before theirs began: $checked");
is($broken, '0',
	'every ID is greater than every ID whose call ended before its call began');

$node->stop;
done_testing();
