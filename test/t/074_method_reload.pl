# A reload that changes only the method of the synchronous standbys
# (ANY 1 to FIRST 1, the same number), or only their number (ANY 1 to
# ANY 2), taken in by a session while the lease worker still holds a
# recent reading from before it.  The worker's reading counts for a while
# after it last stood by it (confirm.c); a session that read another
# method or number must not use it.  Under ANY 1 (s1, s2) the lease s2
# has is enough; under FIRST 1 (s1, s2) only s1's counts, under ANY 2
# both, and s1 is stalled below the lease.
#
# The window is shorter than the machine's scheduling noise, so the test
# holds it open: the primary's wall clock (CLOCK_REALTIME, which flakeid
# reads) comes from a file while the file exists, through a small preload
# library.  The clock stands still while the lease worker stands by its
# reading, the worker is stopped, and the clock then moves on by less
# than the reading counts but more than a check of the standbys does.

use strict;
use warnings;

use File::Copy qw(move);
use FlakeFault;
use FlakeTest;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time usleep);

my $wall_shim = build_shim('wall_file', <<'EOC');
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

typedef int (*clock_gettime_f) (clockid_t, struct timespec *);

/*
 * The wall clocks read the nanoseconds written in the file that
 * FLAKE_WALL_FILE names, while it exists; everything else the real clocks.
 * Only system calls that are safe in a signal handler.
 */
int
clock_gettime(clockid_t id, struct timespec *ts)
{
	static clock_gettime_f next;
	const char *file = getenv("FLAKE_WALL_FILE");

	if (next == NULL)
		next = (clock_gettime_f) dlsym(RTLD_NEXT, "clock_gettime");
	if (file != NULL && (id == CLOCK_REALTIME || id == CLOCK_REALTIME_COARSE))
	{
		char		buf[32];
		int			fd = syscall(SYS_openat, AT_FDCWD, file, O_RDONLY);

		if (fd >= 0)
		{
			ssize_t		n = read(fd, buf, sizeof(buf) - 1);
			long long	ns;

			close(fd);
			if (n > 0)
			{
				buf[n] = '\0';
				ns = strtoll(buf, NULL, 10);
				ts->tv_sec = ns / 1000000000LL;
				ts->tv_nsec = ns % 1000000000LL;
				return 0;
			}
		}
	}
	return next(id, ts);
}
EOC

my $primary = flake_node(
	'primary',
	node_id   => 4,
	streaming => 1,
	conf      => "flakeid.max_lease_wait = '3s'\nwal_sender_timeout = '10min'");
my $wall = $primary->basedir . '/wall_ns';
{
	local $ENV{LD_PRELOAD} = FlakeFault::preload_after_sanitizers($wall_shim);
	local $ENV{FLAKE_WALL_FILE} = $wall;
	$primary->start;
}
$primary->safe_psql('postgres', 'CREATE EXTENSION flakeid');
$primary->backup('backup');
my %standby;
foreach my $name ('s1', 's2')
{
	my $node = PostgreSQL::Test::Cluster->new($name);
	$node->init_from_backup($primary, 'backup', has_streaming => 1);
	$node->append_conf('postgresql.conf',
		"primary_conninfo = '" . $primary->connstr . " application_name=$name'");
	$node->start;
	$standby{$name} = $node;
}

# The primary's wall clock stands at $ms since the flakeid epoch, or runs
# again with undef.
my $epoch_s = 1577836800;
sub stand_clock
{
	my ($ms) = @_;
	if (!defined $ms)
	{
		unlink $wall;
		return;
	}
	open my $fh, '>', "$wall.new" or die "could not write $wall.new: $!";
	printf $fh "%d\n", ($epoch_s * 1000 + $ms) * 1000000;
	close $fh or die "could not write $wall.new: $!";
	move("$wall.new", $wall) or die "could not rename to $wall: $!";
	return;
}

sub clock_ms { return int((time() - $epoch_s) * 1000) }

sub sync_states
{
	return $primary->safe_psql('postgres',
		q{SELECT string_agg(application_name || '=' || sync_state, ' ' ORDER BY application_name)
		  FROM pg_stat_replication});
}

sub reload_names
{
	my ($names, $states) = @_;
	$primary->safe_psql('postgres',
		"ALTER SYSTEM SET synchronous_standby_names = '$names'; SELECT pg_reload_conf();");
	ok( wait_until(
			sub {
				$primary->safe_psql('postgres', 'SHOW synchronous_standby_names') eq $names
				  && sync_states() eq $states;
			},
			30),
		"synchronous_standby_names = '$names': $states")
	  or diag('pg_stat_replication: ' . sync_states());
	return;
}

my $id_ms_sql =
  q{SELECT (extract(epoch FROM flakeid_timestamp(id) - '2020-01-01 00:00:00+00') * 1000)::bigint
	FROM (SELECT nextflake() AS id) s};

$primary->safe_psql('postgres', 'SELECT nextflake()');
foreach my $round ([ 'FIRST 1 (s1, s2)', 's1=sync s2=potential', 'the method' ],
	[ 'ANY 2 (s1, s2)', 's1=quorum s2=quorum', 'the number' ])
{
	my ($new_list, $new_states, $what) = @$round;
	reload_names('ANY 1 (s1, s2)', 's1=quorum s2=quorum');

	# s1 stops receiving WAL; under ANY 1 s2 alone confirms, and the
	# lease moves on past everything s1 has
	my $receiver = $standby{s1}->safe_psql('postgres', 'SELECT pid FROM pg_stat_wal_receiver');
	ok(kill('STOP', $receiver), "$what: s1's walreceiver is stopped");
	ok( wait_until(
			sub {
				my ($ret, $ms) = psql_state($primary, $id_ms_sql);
				$ret == 0 && $ms > lease_on_disk($standby{s1}) + 200;
			},
			60),
		"$what: with s1 stalled, under ANY 1 the IDs pass the lease s1 has");

	# The clock stands; a reload that changes nothing wakes the lease
	# worker, which stands by its reading (ANY 1) at that moment; then it
	# is stopped.
	my $stand = clock_ms() + 20;
	stand_clock($stand);
	$primary->safe_psql('postgres', 'SELECT pg_reload_conf()');
	usleep(300_000);
	$primary->safe_psql('postgres', 'SELECT pg_reload_conf()');
	usleep(300_000);
	my ($worker) = server_processes($primary, qr/flakeid lease worker/);
	ok(kill('STOP', $worker), "$what: the lease worker is stopped");
	my $s1_lease = lease_on_disk($standby{s1});
	cmp_ok($s1_lease, '<', $stand, "$what: the lease s1 has ($s1_lease) ends before the clock ($stand)");

	# 10 ms on: the worker's reading counts (its number and method are the
	# session's own), a check of the standbys does not, and the session
	# checks with ANY 1
	stand_clock($stand + 10);
	my ($ret, $out, $err) = psql_state($primary, $id_ms_sql);
	is($ret, 0, "$what: with the worker's reading still counting, ANY 1 gives an ID on s2's lease")
	  or diag($err);
	cmp_ok($out, '>', $s1_lease, "$what: above the lease s1 has") if $ret == 0;

	# Only the method or the number changes, and s1 counts now
	reload_names($new_list, $new_states);

	# 20 ms on: the reading is as recent as before, but it is not the
	# session's: the session asks every named standby, s1 lacks the lease
	stand_clock($stand + 20);
	($ret, $out, $err, my $state) = psql_state($primary, $id_ms_sql);
	isnt($ret, 0, "$what: a session that read $new_list gets no ID that s1 lacks")
	  or diag("returned $out, above s1's lease $s1_lease");
	is($state, '55000', "$what: it times out waiting for the synchronous standbys")
	  or diag($err);
	like($err, qr/timed out waiting for the synchronous standbys/, "$what: the message names them");

	# Everything runs again: the clock, the worker, s1; IDs come again
	stand_clock(undef);
	kill('CONT', $worker);
	kill('CONT', $receiver);
	ok(ids_come_again($primary, 60),
		"$what: with s1 streaming and the worker running again, calls get IDs");
	ids_unique($primary,
		'SELECT nextflake() AS id FROM generate_series(1, 1000)',
		"$what: after the clock runs again");
}

$standby{$_}->stop foreach sort keys %standby;
$primary->stop;
done_testing();
