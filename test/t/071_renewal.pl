# The lease worker renews the lease no more often than it has to, and
# keeps it ahead of the IDs, not of the clock:
#
#   1. IDs taken steadily for a few seconds, at the clock: the lease is
#      renewed when half of it is left, about twice a second, not at every
#      wake-up of the worker (each renewal is a write and fsync of the
#      state file, and a WAL record).  The renewals are counted by the
#      state file's serial.
#   2. IDs taken ahead of the clock (a burst, within flakeid.max_lead): a
#      call that brings the last ID within half a lease of the lease's end
#      wakes the worker, idle since the IDs before, which extends the lease
#      to a full lease past that ID while the clock is still seconds behind
#      it, so that the next calls find a lease and do not wait for one.
#   3. Idle: once the worker has renewed the lease past the last ID, it
#      renews no more, however often it is woken (a reload sets its latch)
#      as the lease runs out.
#   4. A reload lowers flakeid.max_lead while a statement runs: the
#      statement keeps the old one (a session takes a reload in between
#      statements) and reserves further ahead than the worker's new one
#      lets the lease reach; the worker extends the lease to what its
#      call waits for, instead of leaving it to wait for the clock.

use strict;
use warnings;

use FlakeTest;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time);

my $node = flake_node('renewal', node_id => 3, conf => "flakeid.max_lead = '60s'");
$node->start;
$node->safe_psql('postgres', 'CREATE EXTENSION flakeid');

# 1. A steady stream of IDs for about 4 s, one every 2 ms.
sub renewals
{
	return $node->safe_psql('postgres',
		'SELECT coalesce(max(serial), 0) FROM flakeid_state_file() WHERE valid');
}
my $before = renewals();
my $start = time;
$node->safe_psql('postgres',
	'SELECT count(nextflake()) FROM (SELECT pg_sleep(0.002) FROM generate_series(1, 2000)) s');
my $seconds = time - $start;
my $count = renewals() - $before;
cmp_ok($count, '>=', 2, "the lease was renewed while IDs were taken ($count times)");
cmp_ok($count, '<=', 2 * $seconds + 3,
	sprintf('in %.1f s of IDs, at most twice a second and three more', $seconds));

# 2. Ahead of the clock.  Bursts of 1,000 ms of ticks each take the IDs
# seconds ahead; then single milliseconds of ticks until the last ID is
# just over half a lease (500 ms) from the lease's end, which the worker
# does not renew yet.  While IDs are issued the worker looks every 100 ms
# by itself; a second later it sleeps until it is woken.  Then one call
# of 30 ms of ticks brings the last ID within half a lease of the end,
# and within a third, where a call that woke the worker only that close
# would not wake it yet.
my $lead = 0;
for (my $bursts = 0; $bursts < 40 && $lead <= 6000; $bursts += 4)
{
	$node->safe_psql('postgres',
		'SELECT count(*) FROM generate_series(1, 4) g, LATERAL nextflakes(4096000 + 0 * g) f');
	$lead = status_of($node)->{lead_ms};
}
cmp_ok($lead, '>', 6000, "a burst took the IDs $lead ms ahead of the clock");
my ($old_end, $left) = split /\|/, $node->safe_psql(
	'postgres', q{
	DO $$
	BEGIN
		LOOP
			PERFORM count(*) FROM nextflakes(4096);
			EXIT WHEN (SELECT lease_end - last_time <= interval '520 ms' FROM flakeid_status());
		END LOOP;
	END $$;
	SELECT lease_end, extract(epoch FROM lease_end - last_time) * 1000 FROM flakeid_status()});
ok($left > 500 && $left <= 520,
	"the last ID is $left ms before the lease's end, just over half a lease");
select(undef, undef, undef, 1);
$node->safe_psql('postgres', 'SELECT count(*) FROM nextflakes(30 * 4096)');
my $renewed;
for (my $tries = 0; $tries < 1000; $tries++)
{
	my ($extended, $clock_behind) = split /\|/, $node->safe_psql(
		'postgres', qq{
		SELECT lease_end - last_time > interval '900 ms',
			clock_timestamp() < '$old_end'::timestamptz - interval '500 ms'
		FROM flakeid_status()});
	last unless $clock_behind eq 't';
	if ($extended eq 't')
	{
		$renewed = 1;
		last;
	}
	select(undef, undef, undef, 0.01);
}
ok($renewed,
	'within half a lease of its end, the lease was extended past the last ID '
	  . 'while the clock was still behind it');

# 3. One more ID, then the clock passes the lease (which 2.'s IDs took
# seconds ahead).  The first wake-up renews it once, past that ID; each
# later one comes 700 ms after the last, with less than half a lease left
# of any lease renewed at the one before.
$node->safe_psql('postgres', 'SELECT nextflake()');
$node->poll_query_until('postgres',
	q{SELECT clock_timestamp() > lease_end + interval '100 ms' FROM flakeid_status()})
  or die 'the lease did not run out';
sub wake_worker
{
	$node->safe_psql('postgres', 'SELECT pg_reload_conf()');
	select(undef, undef, undef, 0.7);
	return;
}
my $lapsed = renewals();
$node->safe_psql('postgres', 'SELECT pg_reload_conf()');
ok( $node->poll_query_until('postgres',
		q{SELECT lease_end > clock_timestamp() FROM flakeid_status()}),
	'woken after the lease ran out, the lease worker renewed it past the last ID');
is(renewals() - $lapsed, 1, 'it renewed it once');
my $idle_before = renewals();
wake_worker() for 1 .. 5;
is(renewals() - $idle_before, 0,
	'woken five times, 700 ms apart, with no ID issued since its last renewal, the lease worker renewed nothing');

# 4. The statement takes an ID, sleeps while the reload lowers
# flakeid.max_lead to 100 ms (and flakeid.max_lease_wait to 1 s), then
# reserves 6 s of ticks at once: 5 s past the lease, which the worker's
# own max_lead would renew only as the clock comes within 1.1 s of them.
# The IDs are read from a cursor, one at a time: the first returns once
# all are reserved, and the last ID's lead is read then (its millisecond
# follows from the first ID's, the ticks being consecutive, 4096 a
# millisecond), not after the rows are counted, which a loaded machine
# takes seconds to do.
$node->safe_psql('postgres', 'SELECT nextflake()');
my ($out4, $err4) = ('', '');
my $late = IPC::Run::start(
	[
		'psql', '-XAtq', '-v', 'VERBOSITY=verbose', '-d', $node->connstr('postgres'),
		'-c', q{DO $$
		DECLARE
			ids refcursor;
			first_id flakeid;
			top_at timestamptz;
			ahead numeric;
			n bigint;
		BEGIN
			PERFORM nextflake();
			PERFORM pg_sleep(1.5);
			OPEN ids FOR SELECT nextflakes(4096 * 6000);
			FETCH ids INTO first_id;
			top_at := flakeid_timestamp(first_id) +
				((flakeid_sequence(first_id) + 4096 * 6000 - 1) / 4096) * interval '1 ms';
			ahead := round(extract(epoch FROM top_at - clock_timestamp()) * 1000);
			MOVE FORWARD ALL FROM ids;
			GET DIAGNOSTICS n = ROW_COUNT;
			RAISE NOTICE 'issued %, max_lead %, % ms ahead, lease past them: %', n + 1,
				current_setting('flakeid.max_lead'), ahead,
				(SELECT lease_end > top_at FROM flakeid_status());
		END $$}
	],
	'>', \$out4, '2>', \$err4, run_timeout(60));
ok( wait_until(
		sub {
			$node->safe_psql('postgres',
				q{SELECT count(*) FROM pg_stat_activity WHERE wait_event = 'PgSleep' AND query LIKE 'DO %'})
			  eq '1';
		},
		10),
	'the statement sleeps before its reservation');
$node->safe_psql('postgres', q{
	ALTER SYSTEM SET flakeid.max_lead = '100ms';
	ALTER SYSTEM SET flakeid.max_lease_wait = '1s';
	SELECT pg_reload_conf();});
$late->finish;
my ($issued, $kept, $ahead, $covered) =
  $err4 =~ /NOTICE:\s+(?:\w+:\s+)?issued (\d+), max_lead (\S+), (\d+) ms ahead, lease past them: (\w+)/;
is($issued, 4096 * 6000, 'the statement begun before the reload got all its IDs') or diag($err4);
is($kept, '1min', 'it kept the flakeid.max_lead it began with');
cmp_ok($ahead // 0, '>', 1200, 'its last ID is ' . ($ahead // 'no') . ' ms ahead of the clock, past the worker\'s max_lead and a lease');
is($covered, 't', 'the worker extended the lease past them');

$node->stop;
done_testing();
