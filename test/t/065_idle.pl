# An idle server pays nothing for flakeid: with no session generating or
# waiting, the lease worker sleeps until a call or a reload wakes it, with
# synchronous standbys or without.  Its wake-ups are counted as the
# kernel counts them (voluntary context switches in /proc: each sleep of
# the worker ends in one), over a few seconds in which nothing calls.
# And what it did on its clock still happens, when there is work again:
#
#   1. a primary without standbys, then with a synchronous standby: the
#      worker idles after the last call, and the next call still gets a
#      lease, which the synchronous standby confirmed;
#   2. a clock stepped back while the worker sleeps is seen once calls
#      need a lease and wake it (flakeid_status().clock_steps_back), with
#      its size;
#   3. a reload wakes it: a node id reloaded while idle is adopted.

use strict;
use warnings;

use FlakeFault;
use FlakeTest;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time usleep);

# How many times a process was switched out of its own accord so far: one
# for each sleep that it did not sleep through busy.
sub voluntary_switches
{
	my ($pid) = @_;
	open my $fh, '<', "/proc/$pid/status" or die "no process $pid: $!";
	while (<$fh>)
	{
		return $1 if /^voluntary_ctxt_switches:\s+(\d+)/;
	}
	die "no voluntary_ctxt_switches in /proc/$pid/status";
}

# The lease worker's wake-ups over $seconds in which no session calls,
# from a moment $settle s after the last call.
sub idle_wakeups
{
	my ($node, $seconds) = @_;
	my ($pid) = server_processes($node, qr/flakeid lease worker/);
	die 'no lease worker' unless $pid;
	sleep 1;
	my $before = voluntary_switches($pid);
	sleep $seconds;
	return voluntary_switches($pid) - $before;
}

my $primary = flake_node('primary', node_id => 5, streaming => 1);
start_faked($primary, '+0');
$primary->safe_psql('postgres', 'CREATE EXTENSION flakeid');

# 1. Without standbys, and with a synchronous one.
my $id = $primary->safe_psql('postgres', 'SELECT nextflake()::bigint');
my $wakeups = idle_wakeups($primary, 3);
cmp_ok($wakeups, '<=', 3, "without standbys, the idle lease worker woke $wakeups times in 3 s");

$primary->backup('backup');
my $standby = PostgreSQL::Test::Cluster->new('standby');
$standby->init_from_backup($primary, 'backup', has_streaming => 1);
$standby->append_conf('postgresql.conf', "primary_conninfo = '" . $primary->connstr . " application_name=s1'");
$standby->start;
$primary->safe_psql('postgres',
	"ALTER SYSTEM SET synchronous_standby_names = 's1'; SELECT pg_reload_conf();");
$primary->poll_query_until('postgres',
	q{SELECT count(*) = 1 FROM pg_stat_replication WHERE sync_state = 'sync'})
  or die 'the standby did not become synchronous';
my $next = $primary->safe_psql('postgres', 'SELECT nextflake()::bigint');
cmp_ok($next, '>', $id, 'with a synchronous standby: a call gets an ID');
$wakeups = idle_wakeups($primary, 3);
cmp_ok($wakeups, '<=', 3,
	"with a synchronous standby, the idle lease worker woke $wakeups times in 3 s");

# After the idle time the lease has lapsed; the next call waits for a new
# one, which the synchronous standby must confirm: with the standby's
# walreceiver stopped it cannot, and the call times out.
$primary->append_conf('postgresql.conf', "flakeid.max_lease_wait = '2s'");
$primary->reload;
$standby->stop;
$primary->poll_query_until('postgres', 'SELECT count(*) = 0 FROM pg_stat_replication')
  or die 'the standby did not go';
my $err = fails_with($primary, 'SELECT nextflake()', '55000',
	'after the idle time, with the synchronous standby gone: the call');
like($err, qr/synchronous standbys to confirm/, 'it waited for the standby to confirm the lease');
$standby->start;
$primary->poll_query_until('postgres',
	q{SELECT count(*) = 1 FROM pg_stat_replication WHERE sync_state = 'sync'})
  or die 'the standby did not become synchronous again';
my $after = $primary->safe_psql('postgres', 'SELECT nextflake()::bigint');
cmp_ok($after, '>', $next, 'with the standby back, the call after the idle time gets its ID');

# 2. A clock step back while the worker sleeps.
sleep 2;
my $steps = status_of($primary)->{clock_steps_back};
set_clock($primary, '-2');
wait_clock_offset($primary, -2, 0.3, 10);
ok( wait_until(
		sub {
			$primary->safe_psql('postgres', 'SELECT nextflake()');
			status_of($primary)->{clock_steps_back} > $steps;
		},
		10),
	'a clock step back while the lease worker slept is seen once calls wake it');
ok($primary->log_contains(qr/system clock moved backwards by (19\d\d|20\d\d) ms/),
	'the log gives its size');

# 3. A reload while idle wakes the worker: the node id is adopted.
sleep 2;
$primary->append_conf('postgresql.conf', 'flakeid.node_id = 6');
$primary->reload;
ok(wait_until(sub { status_of($primary)->{node_id} eq '6' }, 10),
	'a node id reloaded while the lease worker is idle is adopted');
is($primary->safe_psql('postgres', 'SELECT flakeid_node(nextflake())'), '6',
	'and generated with');

$standby->stop;
$primary->stop;
done_testing();
