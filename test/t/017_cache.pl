# flakeid.cache above 1: each backend reserves blocks of ticks and hands
# them out within the millisecond it reserved them in.  What must hold:
# every ID unique; each backend's IDs strictly increasing, nextflakes()
# batches among them included; an ID greater than every ID whose call
# ended before the clock's millisecond in which its own call began; and,
# with a small sequence, the lead over the clock never beyond
# flakeid.max_lead; and a backend that calls seldom leaves no tick unused.

use strict;
use warnings;

use FlakeTest;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = flake_node('cache', quiet => 1,
	node_id => 0,
	conf    => "flakeid.node_bits = 0\nflakeid.cache = 64\n");
$node->start;
$node->safe_psql('postgres', CLOCKED_TABLE_SQL);
is($node->safe_psql('postgres', 'SHOW flakeid.cache'), '64',
	'flakeid.cache is 64');

insert_clocked($node, 1000);
ids_unique($node, 'SELECT id FROM t', 'four sessions with flakeid.cache = 64');
ids_increasing($node, 'SELECT sess, ord, id FROM t', 'ord',
	"each session's IDs in insert order", partition => 'sess');
ids_at_their_clock($node);
is($node->safe_psql('postgres', 'SELECT issued FROM flakeid_status()'),
	'400000', 'flakeid_status() counts the IDs handed out, not the ticks reserved');

# for each row, the largest ID of the calls that ended before the clock's
# millisecond in which its call began must be smaller than its ID
my ($checked, $broken) =
  calls_ended_before($node, "date_trunc('milliseconds', t.t0)");
ok($checked > 300_000,
	"rows whose call began in a later millisecond than other calls ended: $checked");
is($broken, '0',
	'every ID is greater than every ID whose call ended in an earlier millisecond');

# One backend, nextflakes() among nextflake() calls: its IDs keep rising,
# though the block it holds has ticks below the batch.
is( $node->safe_psql(
		'postgres', q{
CREATE TEMP TABLE mixed AS
	SELECT i, CASE WHEN i % 1000 = 500
			  THEN (SELECT max(f) FROM nextflakes(3 + 0 * i) f)
			  ELSE nextflake() END AS id
	FROM generate_series(1, 200000) i;
SELECT count(*) = count(DISTINCT id) AND bool_and(id > prev)
FROM (SELECT id, lag(id) OVER (ORDER BY i) AS prev FROM mixed) s
WHERE prev IS NOT NULL;}),
	't',
	'one backend: nextflake() and nextflakes() calls strictly increasing');

# One backend that calls seldom, once every few milliseconds: its block
# does not grow (it doubles only while one millisecond uses it up), so
# each call reserves one tick and leaves none unused.  The last tick
# reserved on the server (flakeid_status().last_id) is the call's own ID.
is( $node->safe_psql(
		'postgres', q{
CREATE FUNCTION seldom_unused(n int) RETURNS int LANGUAGE plpgsql AS $$
DECLARE
	x bigint;
	last bigint;
	unused int := 0;
BEGIN
	FOR i IN 1 .. n LOOP
		PERFORM pg_sleep(0.003);
		x := nextflake()::bigint;
		SELECT last_id INTO last FROM flakeid_status();
		IF last <> x THEN
			unused := unused + 1;
		END IF;
	END LOOP;
	RETURN unused;
END $$;
SELECT seldom_unused(20);}),
	'0',
	'one backend calling every few milliseconds reserves one tick a call');

# A superuser sets it for a role, whose sessions generate with it.
$node->safe_psql('postgres',
	'CREATE ROLE loader LOGIN; ALTER ROLE loader SET flakeid.cache = 16');
my (undef, $loader) = psql_as($node,
	q{SELECT current_setting('flakeid.cache') || ' ' || count(DISTINCT id)
	  FROM (SELECT nextflake() AS id FROM generate_series(1, 1000)) s},
	user => 'loader');
is($loader, '16 1000', 'ALTER ROLE ... SET flakeid.cache applies to the role\'s sessions');

# A reload takes it back to 1.
$node->safe_psql('postgres', 'ALTER SYSTEM SET flakeid.cache = 1; SELECT pg_reload_conf()');
ok( wait_until(
		sub {
			$node->safe_psql('postgres', 'SHOW flakeid.cache') eq '1';
		},
		10),
	'flakeid.cache is back to 1 after a reload');
$node->stop;

# A sequence of 64 IDs per millisecond, which four sessions outrun: the
# IDs run ahead of the clock, within flakeid.max_lead.
my $capped = flake_node('cache_capped', quiet => 1,
	node_id => 1,
	conf    => "flakeid.node_bits = 16\nflakeid.cache = 64\nflakeid.max_lead = 20\n");
$capped->start;
$capped->safe_psql('postgres', CLOCKED_TABLE_SQL);
insert_clocked($capped, 500);
ids_unique($capped, 'SELECT id FROM t', 'four sessions ahead of the clock');
ids_increasing($capped, 'SELECT sess, ord, id FROM t', 'ord',
	"each session's IDs in insert order, ahead of the clock", partition => 'sess');
my ($ahead, $too_far) = split /\|/, $capped->safe_psql(
	'postgres', q{
SELECT count(*) FILTER (WHERE flakeid_timestamp(id) > t1),
	   count(*) FILTER (WHERE flakeid_timestamp(id) > t1 + interval '20 ms')
FROM t});
ok($ahead > 0, "IDs ran ahead of the clock: $ahead");
is($too_far, '0', 'no ID further ahead of the clock than flakeid.max_lead');
cmp_ok($capped->safe_psql('postgres', 'SELECT waits FROM flakeid_status()'),
	'>', 0, 'calls that reached flakeid.max_lead waited for the clock');
$capped->stop;

done_testing();
