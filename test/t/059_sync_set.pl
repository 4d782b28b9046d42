# The synchronous standbys change without a change of the text of
# synchronous_standby_names: a synchronous standby dies or is stopped and
# another one, which is behind, becomes synchronous; the list is reloaded
# while the lease worker restarts or while it is stopped.  From the moment
# pg_stat_replication shows the new standby as synchronous, the moment
# from which a commit waits for it, no call returns an ID under a lease
# the new standby has not flushed: the confirmation of the old standby no
# longer counts.  A primary (node 5) and two standbys, s1 and s2; s2's WAL
# receiver is stopped (SIGSTOP) and its replication connection filled, so
# that s2 stays behind while s1 confirms a burst of IDs 5 s ahead of the
# clock.
#
#   0. FIRST 2 (s1, s2), s2 behind: calls wait for the older of the two.
#   1. FIRST 1 (s1, s2): s1 dies (immediate stop); s2 becomes synchronous.
#   2. ANY 1 (s1, s2): the member that confirmed, s1, dies.
#   3. FIRST 1 (s1, s2): s1 is stopped cleanly.
#   4. 's1', s2 asynchronous: the lease worker is ended and, before it is
#      back, the list is reloaded to 's2'.
#   5. FIRST 1 (s1, s2) reloaded to FIRST 2 (s1, s2) while the lease worker
#      is stopped, and 6. ANY 1 (s1, s2) reloaded to FIRST 1 (s2, s1) while
#      it is ended and not yet back: a number or a method that only the
#      lease worker reads changes (in 5, for new sessions and for a
#      statement begun before the reload).
#   8. FIRST 2 (s1, s2) and ANY 2 (s1, s2) with s2 stopped: fewer named
#      standbys connected than a commit waits for, with the lease worker
#      running and with it stopped; meanwhile a call waits longer than
#      10 s while the lease worker goes away twice, 11 s apart, and
#      returns once s2 is back;
#   9. FIRST 1 (*), s2 behind: both standbys have one priority, and
#      PostgreSQL takes the one in the lower WAL sender slot, s2, since it
#      connected first; s1's confirmation does not count;
#   7. 's1', s2 asynchronous: the list is reloaded to 's2' while the lease
#      worker is stopped (SIGSTOP), and again once it runs.
#
# Then failover to s2: every ID the promoted standby makes is above every
# ID the old primary returned.

use strict;
use warnings;

use FlakeTest;
use IPC::Run;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep time);

# The WAL that fills s2's connection is kept for it, so that it catches up
# however it reconnects.
my $primary = flake_node('primary', node_id => 5, streaming => 1, quiet => 1,
	conf => "wal_keep_size = '1GB'");
$primary->start;
$primary->safe_psql('postgres', q{
CREATE EXTENSION flakeid;
CREATE TABLE filler (g int, pad text);
});
$primary->backup('backup');
my %standby;
foreach my $name ('s1', 's2')
{
	$standby{$name} = PostgreSQL::Test::Cluster->new($name);
	$standby{$name}->init_from_backup($primary, 'backup', has_streaming => 1);
	$standby{$name}->start;
}
catch_up($primary, $_) foreach values %standby;

# Every ID a call returned, and those returned by a call that had to wait
# (after a switch of the synchronous standby, or past a stalled one's lease).
my $max_returned = 0;
my @after_switch;

sub note_returned
{
	foreach my $id (grep { /^\d+$/ } @_)
	{
		$max_returned = $id if $id > $max_returned;
	}
	return;
}

# The sync_state of each standby in pg_stat_replication, as "s1=sync s2=potential".
sub sync_states
{
	return $primary->safe_psql('postgres', q{
SELECT string_agg(application_name || '=' || sync_state, ' ' ORDER BY application_name)
FROM pg_stat_replication});
}

# Set synchronous_standby_names by a reload and wait for the states wanted.
sub set_list
{
	my ($list, $want) = @_;
	$primary->safe_psql('postgres',
		"ALTER SYSTEM SET synchronous_standby_names = '$list';\nSELECT pg_reload_conf();");
	ok(wait_until(sub { sync_states() eq $want }, 60), "'$list': $want")
	  or diag('states: ' . sync_states());
	return;
}

# Stop s2's WAL receiver and fill its replication connection, so that no
# WAL written from now on reaches s2.  Returns the receiver's pid.
sub stall_s2
{
	my $receiver = $standby{s2}->safe_psql('postgres', 'SELECT pid FROM pg_stat_wal_receiver');
	ok(kill('STOP', $receiver), 's2\'s WAL receiver is stopped');
	# a commit that does not wait for s2, which may be synchronous already
	$primary->safe_psql('postgres', "SET synchronous_commit = local;\n"
		  . "INSERT INTO filler SELECT g, repeat('x', 200) FROM generate_series(1, 300000) g");
	ok( wait_until(
			sub {
				$primary->safe_psql('postgres', q{
SELECT pg_current_wal_lsn() - sent_lsn > 8 * 1024 * 1024
FROM pg_stat_replication WHERE application_name = 's2'}) eq 't';
			},
			60),
		's2\'s replication connection is full: what follows stays away from s2');
	return $receiver;
}

# A burst that the synchronous s1 confirms: IDs 5 s ahead of the clock.
sub burst
{
	my $out = $primary->safe_psql('postgres', q{
SELECT nextflakes(20000000) LIMIT 1;
SELECT nextflake();
SELECT flakeid_timestamp(last_id) > clock_timestamp() + interval '4 s' FROM flakeid_status();});
	note_returned(split /\n/, $out);
	like($out, qr/t$/, 'a burst confirmed by s1 runs 4 s ahead of the clock');
	return;
}

# Calls that need IDs past what s2 has flushed: each must wait, never
# return an ID (calls_must_wait()).
sub calls_wait
{
	my ($phase) = @_;
	my @ids = calls_must_wait($primary, $phase, 'returns no ID that s2 has not flushed');
	note_returned(@ids);
	push @after_switch, @ids;
	return;
}

# One call for more IDs than the lease ahead of the clock holds, while s2
# is stalled: it must wait (cancelled by its statement_timeout, or refused
# once flakeid.max_lease_wait has passed), and return no ID.
sub call_past_lease_waits
{
	my ($name) = @_;
	my ($ret, $out, $err, $state) = psql_state($primary,
		"SET statement_timeout = '1s';\nSELECT nextflakes(20000000) LIMIT 1;");
	my @ids = grep { /^\d+$/ } split /\n/, $out;
	note_returned(@ids);
	push @after_switch, @ids;
	ok($ret != 0 && defined $state && $state =~ /^(57014|55000)$/, $name)
	  or diag("exit code $ret, SQLSTATE " . ($state // 'none') . "\n$err");
	return;
}

# Let s2 go on and, when it was stopped, bring s1 back, for the next round.
sub recover
{
	my ($receiver, $s1_stopped) = @_;
	kill('CONT', $receiver);
	$standby{s1}->start if $s1_stopped;
	$primary->wait_for_catchup($_, 'flush', $primary->lsn('insert')) foreach values %standby;
	return;
}

sub lease_worker
{
	return $primary->safe_psql('postgres',
		q{SELECT pid FROM pg_stat_activity WHERE backend_type = 'flakeid lease worker'});
}

# Round 0: FIRST 2 (s1, s2), both synchronous, s2 behind: a lease counts
# only once the older of the two has flushed it.
set_list('FIRST 2 (s1, s2)', 's1=sync s2=sync');
my $receiver = stall_s2();
call_past_lease_waits('FIRST 2, s2 behind: a call past the lease both have waits for s2');
calls_wait('FIRST 2, s2 behind');
recover($receiver, 0);

# Rounds 1 to 3: the synchronous standby goes away, the list stays.
foreach my $round (
	[ 'FIRST 1 (s1, s2)', 's1=sync s2=potential', 's2=sync',   'immediate' ],
	[ 'ANY 1 (s1, s2)',   's1=quorum s2=quorum',  's2=quorum', 'immediate' ],
	[ 'FIRST 1 (s1, s2)', 's1=sync s2=potential', 's2=sync',   'fast' ])
{
	my ($list, $before, $after, $mode) = @$round;
	my $phase = "$list, s1 stopped ($mode)";
	set_list($list, $before);
	my $receiver = stall_s2();
	burst();
	$standby{s1}->stop($mode);
	ok(wait_until(sub { sync_states() eq $after }, 60), "$phase: $after")
	  or diag('states: ' . sync_states());
	calls_wait($phase);
	recover($receiver, 1);
}

# Round 4: the list changes while the lease worker restarts.
set_list('s1', 's1=sync s2=async');
$receiver = stall_s2();
burst();
my $worker = lease_worker();
$primary->safe_psql('postgres', "SELECT pg_terminate_backend($worker);\n"
	  . "ALTER SYSTEM SET synchronous_standby_names = 's2';\nSELECT pg_reload_conf();");
ok(wait_until(sub { sync_states() eq 's1=async s2=sync' }, 60),
	'reloaded to s2 while the lease worker restarts: s2 is synchronous');
calls_wait('list reloaded during the worker\'s restart');
ok(wait_until(sub { my $w = lease_worker(); $w ne '' && $w != $worker }, 30),
	'the lease worker is back');
calls_wait('list reloaded during the worker\'s restart, worker back');
recover($receiver, 0);

# Rounds 5 and 6: the number or the method of the synchronous standbys
# changes while the lease worker cannot read it (stopped, or ended and not
# yet back).  The walsenders' priorities do not show it: they stay the
# same from FIRST 1 to FIRST 2, and from ANY 1 to FIRST 1 they only give
# an order.  A commit now waits for s2, and so do the calls: new sessions,
# which read the new list, and in round 5 a statement that began before
# the reload, so that neither its session nor the stopped worker read the
# new list.
foreach my $round (
	[ 'FIRST 1 (s1, s2)', 's1=sync s2=potential', 'FIRST 2 (s1, s2)', 's1=sync s2=sync', 'stopped' ],
	[ 'ANY 1 (s1, s2)', 's1=quorum s2=quorum', 'FIRST 1 (s2, s1)', 's1=potential s2=sync', 'ended' ])
{
	my ($list, $before, $new_list, $after, $how) = @$round;
	my $phase = "$list reloaded to $new_list while the lease worker is $how";
	set_list($list, $before);
	my $receiver = stall_s2();
	burst();
	my $worker = lease_worker();
	my ($early, $early_out, $early_err);
	$primary->safe_psql('postgres', "ALTER SYSTEM SET synchronous_standby_names = '$new_list'");
	if ($how eq 'stopped')
	{
		# a statement that begins before the reload: a session takes a
		# reload in only between statements
		$early = IPC::Run::start(
			[
				'psql', '-XAtq', '-d', $primary->connstr('postgres'),
				'-c', "SET statement_timeout = '5s'",
				'-c', q{DO $$ BEGIN PERFORM pg_sleep(1.5); RAISE NOTICE 'flakeid %', nextflake(); END $$}
			],
			'>', \$early_out, '2>', \$early_err);
		ok( wait_until(
				sub {
					$primary->safe_psql('postgres',
						q{SELECT count(*) FROM pg_stat_activity WHERE query LIKE 'DO %pg_sleep(1.5)%'}) eq '1';
				},
				30),
			"$phase: a statement is under way before the reload");
		# a session that reloads and calls at once, while the stopped
		# worker's reading is still recent
		my ($in, $out, $err) = ('SELECT 1;' . "\n", '', '');
		my $quick = IPC::Run::start([ 'psql', '-XAtq', '-d', $primary->connstr('postgres') ],
			'<', \$in, '>', \$out, '2>', \$err);
		$quick->pump until $out =~ /1/;
		ok(kill('STOP', $worker), 'the lease worker is stopped');
		$in .= "SELECT pg_reload_conf();\nSELECT pg_sleep(0.01);\nSET statement_timeout = '1s';\n"
		  . "SELECT 'id ' || CASE WHEN current_setting('synchronous_standby_names') = '$new_list' "
		  . "THEN nextflake()::text ELSE 'not yet' END;\n\\q\n";
		$quick->finish;
		my @ids = $out =~ /^id (\d+)$/mg;
		note_returned(@ids);
		push @after_switch, @ids;
		ok(!@ids, "$phase: a session that took the reload in at once returns no ID that s2 has not flushed")
		  or diag("$out\n$err");
		note 'the quick session ' . ($out =~ /^id not yet$/m ? 'had not taken the reload in' : 'waited');
	}
	else
	{
		$primary->safe_psql('postgres', "SELECT pg_terminate_backend($worker)");
	}
	$primary->safe_psql('postgres', 'SELECT pg_reload_conf()');
	ok( wait_until(
			sub {
				sync_states() eq $after
				  && $primary->safe_psql('postgres', 'SHOW synchronous_standby_names') eq $new_list;
			},
			60),
		"$phase: $after")
	  or diag('states: ' . sync_states());
	calls_wait($phase);
	if ($how eq 'stopped')
	{
		kill('CONT', $worker);
	}
	else
	{
		ok(wait_until(sub { my $w = lease_worker(); $w ne '' && $w != $worker }, 30),
			'the lease worker is back');
	}
	calls_wait("$phase, worker running");
	if ($early)
	{
		$early->finish;
		my @ids = $early_err =~ /NOTICE:\s+flakeid (\d+)/g;
		note_returned(@ids);
		push @after_switch, @ids;
		ok(!@ids && $early_err =~ /statement timeout/,
			"$phase: a statement that began before the reload returns no ID that s2 has not flushed")
		  or diag($early_err);
	}
	recover($receiver, 0);
}

# While s2 is stopped in round 8, a call waits for its lease longer than
# FLAKE_WORKER_WAIT_MS (10 s), and the lease worker goes away twice, 11 s
# apart, back each time after its restart interval (1 s).  The call gives
# up only on a worker gone 10 s in a row: it waits on, and once s2 is back
# it returns its IDs.  Returns with s2 still stopped, the call waiting,
# and flakeid.max_lease_wait 60 s until it is done.
sub worker_gone_twice
{
	my ($phase) = @_;
	$primary->safe_psql('postgres',
		"ALTER SYSTEM SET flakeid.max_lease_wait = '60s';\nSELECT pg_reload_conf();");
	ok( wait_until(
			sub {
				$primary->safe_psql('postgres',
					q{SELECT setting = '60000' FROM pg_settings WHERE name = 'flakeid.max_lease_wait'}) eq 't';
			},
			30),
		"$phase: flakeid.max_lease_wait is 60 s");
	my %c = (out => '', err => '');
	$c{h} = IPC::Run::start(
		[
			'psql', '-XAtq', '-v', 'VERBOSITY=verbose', '-d', $primary->connstr('postgres'),
			'-c', "SET statement_timeout = '50s'",
			'-c', 'SELECT count(*), max(id::bigint) FROM nextflakes(10) id /* twice gone */'
		],
		'>', \$c{out}, '2>', \$c{err}, run_timeout(120));
	ok( wait_until(
			sub {
				$primary->safe_psql('postgres', q{
SELECT count(*) FROM pg_stat_activity
WHERE query LIKE '%twice gone%' AND wait_event = 'Extension' AND pid <> pg_backend_pid()}) eq '1';
			},
			30),
		"$phase: a call waits for its lease");
	foreach my $gone (1, 2)
	{
		my $worker = lease_worker();
		my $at = time();
		$primary->safe_psql('postgres', "SELECT pg_terminate_backend($worker)");
		ok(wait_until(sub { my $w = lease_worker(); $w ne '' && $w != $worker }, 30),
			"$phase: the lease worker is back after going away ($gone)");
		# more than 10 s after the call saw the worker gone the first time
		usleep((11 - (time() - $at)) * 1_000_000) if $gone == 1 && time() - $at < 11;
	}
	usleep(500_000);
	is( $primary->safe_psql('postgres', q{
SELECT count(*) FROM pg_stat_activity WHERE query LIKE '%twice gone%' AND pid <> pg_backend_pid()}),
		'1',
		"$phase: a call still waits after the lease worker went away twice, 11 s apart, about 1 s each");
	return \%c;
}

# Round 8: fewer named standbys connected than a commit waits for:
# FIRST 2 and ANY 2 of s1 and s2 with s2 stopped (gone, not behind), the
# lease worker running or stopped (SIGSTOP) for longer than its reading
# counts.  Once the lease both confirmed has lapsed, no call returns an
# ID: s1 alone confirms nothing.
foreach my $round (
	[ 'FIRST 2 (s1, s2)', 's1=sync s2=sync',         's1=sync',   'running' ],
	[ 'FIRST 2 (s1, s2)', 's1=sync s2=sync',         's1=sync',   'stopped' ],
	[ 'ANY 2 (s1, s2)',   's1=quorum s2=quorum',     's1=quorum', 'running' ],
	[ 'ANY 2 (s1, s2)',   's1=quorum s2=quorum',     's1=quorum', 'stopped' ])
{
	my ($list, $before, $after, $how) = @$round;
	my $phase = "$list, s2 stopped, the lease worker $how";
	set_list($list, $before);
	$standby{s2}->stop('fast');
	ok(wait_until(sub { sync_states() eq $after }, 60), "$phase: $after")
	  or diag('states: ' . sync_states());
	ok( wait_until(
			sub {
				$primary->safe_psql('postgres',
					'SELECT lease_end < clock_timestamp() FROM flakeid_status()') eq 't';
			},
			30),
		"$phase: the lease both standbys confirmed has lapsed");
	my $worker = lease_worker();
	if ($how eq 'stopped')
	{
		ok(kill('STOP', $worker), 'the lease worker is stopped');
		usleep(200_000);
	}
	calls_wait($phase);
	kill('CONT', $worker) if $how eq 'stopped';
	my $long_call = $list =~ /^FIRST/ && $how eq 'running' ? worker_gone_twice($phase) : undef;
	$standby{s2}->start;
	if ($long_call)
	{
		$long_call->{h}->finish;
		my ($count, $max) = $long_call->{out} =~ /^(\d+)\|(\d+)$/m;
		note_returned($max);
		is($count, 10,
			"$phase: the call that waited through two absences of the lease worker returned its IDs once s2 was back")
		  or diag("$long_call->{out}\n$long_call->{err}");
		$primary->safe_psql('postgres',
			"ALTER SYSTEM RESET flakeid.max_lease_wait;\nSELECT pg_reload_conf();");
	}
	$primary->wait_for_catchup($_, 'flush', $primary->lsn('insert')) foreach values %standby;
}

# Round 9: FIRST 1 (*): every standby matches with priority 1, and a
# commit waits for the one whose WAL sender has the lowest slot.  s2
# connects first, so it is synchronous and s1 only potential: s1's flush
# confirms nothing.
$_->stop('fast') foreach values %standby;
ok( wait_until(
		sub { $primary->safe_psql('postgres', 'SELECT count(*) FROM pg_stat_replication') eq '0' }, 60),
	'every WAL sender has exited');
$standby{s2}->start;
ok( wait_until(
		sub {
			$primary->safe_psql('postgres',
				q{SELECT count(*) FROM pg_stat_replication WHERE application_name = 's2' AND state = 'streaming'})
			  eq '1';
		},
		60),
	's2 streams before s1 connects');
$standby{s1}->start;
set_list('FIRST 1 (*)', 's1=potential s2=sync');
$receiver = stall_s2();
call_past_lease_waits(
	'FIRST 1 (*), s2 synchronous and behind: a call past the lease s2 has waits for s2, not for s1');
calls_wait('FIRST 1 (*), s2 synchronous and behind');
recover($receiver, 0);

# Round 7: the list changes while the lease worker is stopped.
set_list('s1', 's1=sync s2=async');
$receiver = stall_s2();
burst();
$worker = lease_worker();
ok(kill('STOP', $worker), 'the lease worker is stopped');
$primary->safe_psql('postgres',
	"ALTER SYSTEM SET synchronous_standby_names = 's2';\nSELECT pg_reload_conf();");
ok(wait_until(sub { sync_states() eq 's1=async s2=sync' }, 60),
	'reloaded to s2 while the lease worker is stopped: s2 is synchronous');
calls_wait('list reloaded while the worker is stopped');
kill('CONT', $worker);
calls_wait('list reloaded while the worker was stopped, worker running');

# Failover to s2, which never received the bursts' leases after round 7's
# stall.
is(scalar @after_switch, 0, 'no call that had to wait returned an ID');
$primary->stop('immediate');
kill('CONT', $receiver);
$standby{s2}->promote;
$standby{s2}->poll_query_until('postgres', 'SELECT NOT pg_is_in_recovery()')
  or die 'promotion did not finish';
$standby{s2}->safe_psql('postgres',
	"ALTER SYSTEM SET synchronous_standby_names = '';\nSELECT pg_reload_conf();");
is( $standby{s2}->safe_psql('postgres', qq{
SELECT count(*), count(*) FILTER (WHERE id::bigint <= $max_returned), bool_and(flakeid_node(id) = 5)
FROM nextflakes(100000) id}),
	'100000|0|t',
	'after failover to s2 every new ID is above every ID the old primary returned');

$_->stop foreach values %standby;
done_testing();
