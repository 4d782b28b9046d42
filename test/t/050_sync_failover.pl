# Failover to a synchronous standby after a burst ahead of the clock: no ID
# that a statement returned on the old primary is issued again by the
# promoted standby, even when the IDs reached the standby in no committed
# transaction (a plain SELECT nextflake() has no transaction id).  The
# lease record is flushed and confirmed by the synchronous standby before
# any ID under it is returned.  Three rounds, each a new pair of servers.
#
# A last round does the same with an asynchronous standby that is stopped
# during the burst: the promoted standby continues above the last lease it
# received, which is the whole of what asynchronous replication promises.

use strict;
use warnings;

use FlakeTest;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

# A primary with flakeid and a streaming standby of it, both on the real
# clock; with $sync the standby is synchronous.  The WAL writer of the
# primary sleeps long, so that nothing but flakeid itself flushes the WAL
# of a read-only burst before the crash.
sub pair
{
	my ($name, $sync) = @_;
	my $primary = flake_node(
		"${name}_primary",
		node_id   => 9,
		streaming => 1,
		conf      => "wal_writer_delay = '10s'");
	$primary->start;
	$primary->safe_psql('postgres', 'CREATE EXTENSION flakeid');
	$primary->backup('backup');
	my $standby = PostgreSQL::Test::Cluster->new("${name}_standby");
	$standby->init_from_backup($primary, 'backup', has_streaming => 1);
	$standby->start;
	if ($sync)
	{
		$primary->safe_psql('postgres',
			"ALTER SYSTEM SET synchronous_standby_names = '*';\nSELECT pg_reload_conf();");
		$primary->poll_query_until('postgres',
			q{SELECT count(*) = 1 FROM pg_stat_replication WHERE sync_state = 'sync'})
		  or die 'the standby did not become synchronous';
	}
	return ($primary, $standby);
}

# The issue's burst: a call, a second's pause, 8,192,000 IDs reserved (two
# seconds of the sequence) of which one is returned, and one more call,
# whose ID is returned: that last ID, X, about 2 s ahead of the clock.
sub burst
{
	my ($primary) = @_;
	return $primary->safe_psql(
		'postgres', q{
SELECT nextflake();
SELECT pg_sleep(1);
SELECT nextflakes(8192000) LIMIT 1;
SELECT id::bigint || ' ' || (flakeid_timestamp(id) > clock_timestamp() + interval '1 s')
FROM (SELECT nextflake() AS id) AS x;
});
}

# Promote the standby and return, for n new IDs, how many are <= X.
sub after_promotion
{
	my ($standby, $x) = @_;
	$standby->promote;
	$standby->poll_query_until('postgres', 'SELECT NOT pg_is_in_recovery()')
	  or die 'promotion did not finish';
	return $standby->safe_psql(
		'postgres', qq{
SELECT count(*), count(*) FILTER (WHERE id::bigint <= $x),
	bool_and(flakeid_node(id) = 9)
FROM nextflakes(8192000) id});
}

foreach my $round (1 .. 3)
{
	my ($primary, $standby) = pair("sync$round", 1);
	my @out = split /\n/, burst($primary);
	my ($x, $ahead) = split / /, $out[-1];
	is($ahead, 'true', "round $round: the last ID returned runs ahead of the clock");

	$primary->stop('immediate');
	is(after_promotion($standby, $x), '8192000|0|t',
		"round $round: after failover to the synchronous standby no new ID is <= the last one returned");
	$standby->stop;
}

# The asynchronous case: the standby is down during the burst, so the
# leases of the burst never reach it.
my ($primary, $standby) = pair('async', 0);
$primary->safe_psql('postgres', 'SELECT count(*) FROM nextflakes(100000)');
$primary->wait_for_catchup($standby, 'replay', $primary->lsn('flush'));
my $received = $standby->safe_psql('postgres',
	'SELECT max(lease_end_ms) FROM flakeid_state_file() WHERE valid');
$standby->stop;
my ($x) = split / /, (split /\n/, burst($primary))[-1];
$primary->stop('immediate');
$standby->start;
my ($count, $repeated) = split /\|/, after_promotion($standby, $x);
my $min_ms = $standby->safe_psql('postgres',
	"SELECT min(id::bigint >> @{[FLAKE_LOW_BITS]}) FROM nextflakes(10) id");
cmp_ok($min_ms, '>=', $received,
	'asynchronous: the promoted standby continues above the last lease it received');
my $lost_ms = ($x >> FLAKE_LOW_BITS) - $received;
note "asynchronous standby stopped during the burst: the old primary returned IDs up to "
  . "$lost_ms ms past the last lease the standby received; $repeated of $count "
  . "new IDs are <= the last ID the old primary returned";
$standby->stop;

done_testing();
