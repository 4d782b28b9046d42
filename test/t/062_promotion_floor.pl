# A server that ends archive recovery (a promoted standby, a point-in-time
# restore) continues above every ID the old primary could have returned,
# also IDs whose leases never reached it: above its own clock plus
# flakeid.max_lead, a lease and flakeid.max_clock_skew, recorded durably
# before its first ID.  The conditions are the old primary stopped before
# the promotion and the clocks in agreement, as they are here.  The old
# primary runs with flakeid.max_lead = 60s and returns an ID about 48 s
# ahead of the clock just before it stops, which no lease the standby
# received covers.
#
#   1. an asynchronous standby, stopped during the burst, promoted;
#   1b. the same with another layout, accepted after the promotion;
#   2. a base backup restored to a point before the burst, promoted;
#   3. a crash restart of a primary ends no archive recovery: no floor;
#   4. a synchronous standby whose state file cannot be written: it keeps
#      replaying (commits on the primary go on), and once promoted it
#      refuses to generate, with the file's error as soon as the write of
#      the floor failed, until the file is writable, then continues above
#      every ID;
#   5. the same standby restarted before it is promoted: what replay kept
#      in memory is gone, and the clock floor still holds;
#   6. a call that asks for a lease before the floor is written, and gives
#      up: the pass of the lease worker that writes the floor renews
#      nothing below it.  The newest copy on disk is the floor, and after a
#      crash the server continues above the old primary's IDs.  The floor
#      write fails at first (the state file is read-only) and the worker
#      is stopped while the call asks, so that the call's request is
#      pending when the floor is written.

use strict;
use warnings;

use FlakeFault;
use FlakeTest;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time usleep);

# A primary (node 9) that archives its WAL, and a standby of it.
sub pair
{
	my ($name, %opts) = @_;
	my $primary = flake_node(
		"${name}_primary",
		node_id   => 9,
		streaming => 1,
		archiving => $opts{archiving} // 0,
		conf      => $opts{conf} // '');
	$primary->start;
	$primary->safe_psql('postgres', q{
CREATE EXTENSION flakeid;
CREATE TABLE t (id flakeid PRIMARY KEY DEFAULT nextflake(), g int);
INSERT INTO t (g) SELECT generate_series(1, 1000);});
	$primary->backup('backup');
	my $standby = PostgreSQL::Test::Cluster->new("${name}_standby");
	$standby->init_from_backup($primary, 'backup', has_streaming => 1);
	return ($primary, $standby);
}

# A burst on the old primary: one call reserves 200,000,000 IDs (about
# 48 s of the sequence) and the next returns the ID past them.  Returns
# that ID.
sub burst
{
	my ($primary) = @_;
	my @out = split /\n/, $primary->safe_psql('postgres', q{
SELECT nextflakes(200000000) LIMIT 1;
SELECT id::bigint, flakeid_timestamp(id) > clock_timestamp() + interval '40 s'
FROM (SELECT nextflake() AS id) s;});
	my ($x, $ahead) = split /\|/, $out[-1];
	is($ahead, 't', 'the old primary returned an ID more than 40 s ahead of the clock');
	return $x;
}

# Promote a standby and wait until it is a primary.
sub promote
{
	my ($node) = @_;
	$node->promote;
	$node->poll_query_until('postgres', 'SELECT NOT pg_is_in_recovery()')
	  or die 'promotion did not finish';
	return;
}

# The new primary's first IDs: none at or below $x, all of node 9.  Notes
# what the promotion cost: the first call's wait and the IDs' lead.
sub above
{
	my ($node, $x, $what) = @_;
	my $start = time();
	my $first = $node->safe_psql('postgres', 'SELECT nextflake()::bigint');
	my $waited = time() - $start;
	is( $node->safe_psql('postgres', qq{
SELECT count(*), count(*) FILTER (WHERE id::bigint <= $x), bool_and(flakeid_node(id) = 9)
FROM nextflakes(100000) id}),
		'100000|0|t', "$what: every new ID is above every ID the old primary returned");
	cmp_ok($first, '>', $x, "$what: the first ID too");
	note sprintf('%s: the first call took %.0f ms; the new IDs run %s ms ahead of the clock',
		$what, $waited * 1000,
		$node->safe_psql('postgres', 'SELECT lead_ms FROM flakeid_status()'));
	return;
}

# 1. An asynchronous standby, stopped during the burst.
{
	my ($primary, $standby) = pair('async', conf => "flakeid.max_lead = '60s'");
	$standby->start;
	catch_up($primary, $standby);
	$standby->stop;
	my $x = burst($primary);
	$primary->stop('immediate');
	$standby->start;
	promote($standby);
	above($standby, $x, 'asynchronous standby promoted');
	my @copies = grep { $_->{valid} eq 't' } state_file_copies($standby);
	is(scalar(grep { $_->{lease_end_ms} > ($x >> FLAKE_LOW_BITS) } @copies), 2,
		'the floor is in both copies of the state file');
	$standby->stop;
}

# 1b. The same, with another layout in the standby's configuration: once
# promoted it generates only after a superuser accepts the layout, and the
# accepted layout starts above the old primary's IDs too.
{
	my ($primary, $standby) = pair('accept', conf => "flakeid.max_lead = '60s'");
	$standby->start;
	catch_up($primary, $standby);
	$standby->stop;
	$standby->append_conf('postgresql.conf', 'flakeid.node_bits = 12');
	my $x = burst($primary);
	$primary->stop('immediate');
	$standby->start;
	promote($standby);
	fails_with($standby, 'SELECT nextflake()', '55000',
		'another layout, promoted: nothing is generated before it is accepted');
	is($standby->safe_psql('postgres', 'SELECT flakeid_accept_layout()'), 't',
		'another layout, promoted: a superuser accepts it');
	above($standby, $x, 'another layout accepted after the promotion');
	$standby->stop;
}

# 2. A point-in-time restore of a base backup, to a point before the burst.
{
	my ($primary) = pair('pitr', archiving => 1, conf => "flakeid.max_lead = '60s'");
	my $target = $primary->safe_psql('postgres', 'SELECT pg_current_wal_lsn()');
	$primary->safe_psql('postgres', 'INSERT INTO t (g) SELECT generate_series(1, 1000)');
	my $x = burst($primary);
	# a clean stop archives the last segment
	$primary->stop;
	my $restored = PostgreSQL::Test::Cluster->new('pitr_restored');
	$restored->init_from_backup($primary, 'backup', has_restoring => 1);
	$restored->append_conf('postgresql.conf', qq{
recovery_target_lsn = '$target'
recovery_target_action = 'promote'});
	$restored->start;
	$restored->poll_query_until('postgres', 'SELECT NOT pg_is_in_recovery()')
	  or die 'the restore did not finish';
	is($restored->safe_psql('postgres', 'SELECT count(*) FROM t'), '1000',
		'the restore stopped before the burst');
	above($restored, $x, 'point-in-time restore');
	$restored->stop;
}

# 3. A crash restart: no archive recovery ended, no floor.
{
	my ($primary) = pair('crash');
	$primary->safe_psql('postgres', 'INSERT INTO t (g) SELECT generate_series(1, 1000)');
	crash_node($primary);
	$primary->start;
	is( $primary->safe_psql('postgres',
			q{SELECT flakeid_timestamp(nextflake()) < clock_timestamp() + interval '1 s'}),
		't', 'after a crash restart IDs continue at the clock, without a floor ahead of it');
	$primary->stop;
}

# 4 and 5. A synchronous standby whose state file is read-only.
SKIP:
{
	skip 'file permissions do not bind the superuser root', 18 if $> == 0;
	foreach my $restart (0, 1)
	{
		my $what = $restart ? 'restarted standby, state file read-only' : 'state file read-only';
		# a wait for the lease longer than the calls' statement timeout: a
		# call is refused because a write failed, not because it gave up
		my ($primary, $standby) = pair($restart ? 'ro_restart' : 'ro',
			conf => "flakeid.max_lease_wait = '60s'");
		$standby->start;
		$primary->safe_psql('postgres',
			"ALTER SYSTEM SET synchronous_standby_names = '*';\nSELECT pg_reload_conf();");
		$primary->poll_query_until('postgres',
			q{SELECT count(*) = 1 FROM pg_stat_replication WHERE sync_state = 'sync'})
		  or die 'the standby did not become synchronous';
		my $file = $standby->data_dir . '/flakeid.state';
		chmod 0444, $file or die "chmod $file: $!";

		# leases keep coming for 3 s: every one is replayed, none written
		my $x = 0;
		my $until = time() + 3;
		while (time() < $until)
		{
			$x = $primary->safe_psql('postgres',
				'INSERT INTO t (g) SELECT generate_series(1, 100000);
				 SELECT max(id)::bigint FROM t', timeout => 30);
		}
		$x = $primary->safe_psql('postgres', 'SELECT nextflakes(4000000) LIMIT 1;
SELECT nextflake()::bigint;');
		($x) = (split /\n/, $x)[-1];
		$primary->wait_for_catchup($standby, 'replay', $primary->lsn('insert'));
		is($standby->safe_psql('postgres', 'SELECT pg_is_in_recovery()'), 't',
			"$what: the standby keeps replaying");
		ok($standby->log_contains(qr/could not write flakeid state file "flakeid\.state": Permission denied/),
			"$what: the standby's log says why the file is behind");
		if ($restart)
		{
			$primary->safe_psql('postgres', 'CHECKPOINT');
			$primary->wait_for_catchup($standby, 'replay', $primary->lsn('insert'));
			$standby->safe_psql('postgres', 'CHECKPOINT');
			$standby->restart;
		}
		$primary->stop('immediate');
		promote($standby);
		my $err = fails_with($standby, "SET statement_timeout = '20s';\nSELECT nextflake();", '42501',
			"$what: promoted, the standby refuses to generate");
		like($err, qr/flakeid .*"flakeid\.state": Permission denied/,
			"$what: the error names the file and the cause");
		ok(!$standby->log_contains(qr/flakeid continues from/),
			"$what: while the floor cannot be written, the log reports none");
		chmod 0600, $file or die "chmod $file: $!";
		ok(wait_until(sub { (psql_as($standby, 'SELECT nextflake()'))[0] == 0 }, 20),
			"$what: generation resumes once the file is writable");
		my @floors = slurp_file($standby->logfile) =~ /flakeid continues from/g;
		is(scalar(@floors), 1, "$what: the floor written is reported once");
		above($standby, $x, $what);
		$standby->stop;
	}
}

# 6. A request for a lease pending when the floor is written.
SKIP:
{
	skip 'file permissions do not bind the superuser root', 8 if $> == 0;
	my ($primary, $standby) = pair('asked', conf => "flakeid.max_lead = '60s'");
	$standby->start;
	catch_up($primary, $standby);
	$standby->stop;
	my $x = burst($primary);
	$primary->stop('immediate');
	my $file = $standby->data_dir . '/flakeid.state';
	chmod 0444, $file or die "chmod $file: $!";
	$standby->start;
	my $log_from = -s $standby->logfile;
	promote($standby);
	ok( wait_until(
			sub {
				$standby->log_contains(qr/could not write flakeid state file/, $log_from);
			},
			30),
		'a request pending at the floor: the floor cannot be written at first');

	# stop the worker inside its wait for the latch, never in a pass
	my ($worker) = server_processes($standby, qr/flakeid lease worker/);
	my $asleep = wait_until(
		sub {
			kill('STOP', $worker) or die "could not stop $worker";
			return 1 if $standby->safe_psql('postgres',
				"SELECT wait_event = 'Extension' FROM pg_stat_activity WHERE pid = $worker") eq 't';
			kill('CONT', $worker);
			usleep(20_000);
			return 0;
		},
		30);
	ok($asleep, 'a request pending at the floor: the lease worker is stopped while it sleeps');
	my ($ret, $out, $err, $state) = psql_state($standby,
		"SET statement_timeout = '500ms';\nSELECT nextflake();");
	ok($ret != 0 && ($state // '') eq '57014',
		'a request pending at the floor: a call asks for a lease and gives up')
	  or diag("exit code $ret, SQLSTATE " . ($state // 'none') . "\n$err");
	chmod 0600, $file or die "chmod $file: $!";
	kill('CONT', $worker);
	ok( wait_until(sub { $standby->log_contains(qr/flakeid continues from/, $log_from) }, 30),
		'a request pending at the floor: the worker writes the floor');
	# time for anything the same pass writes next; nothing renews the floor
	# while no call waits for it
	sleep(1);
	is( lease_on_disk($standby),
		$standby->safe_psql('postgres',
			'SELECT (extract(epoch FROM lease_end - epoch) * 1000)::bigint FROM flakeid_status()'),
		'a request pending at the floor: the newest lease on disk is the floor in use');
	crash_node($standby);
	$standby->start;
	above($standby, $x, 'a request pending at the floor, then a crash');
	$standby->stop;
}

done_testing();
