# Synchronous replication switched on by a reload: from the moment the
# server's commits wait for a synchronous standby, no ID is returned under
# a lease that standby has not confirmed, whichever process notices the
# reload first.  A lease made while the server was asynchronous, and
# flushed only locally, is not used after the switch: after failover to
# the synchronous standby no ID returned after the switch is issued again.
#
# The standby's WAL receiver is stopped (SIGSTOP) and the replication
# socket filled, so that nothing written after that reaches the standby
# before the old primary is stopped.  Three rounds:
#   1. asynchronous in the configuration, switched to synchronous
#      (synchronous_standby_names and synchronous_commit) by a reload;
#   2. the same with the lease worker stopped (SIGSTOP) while the reload
#      happens, so that backends and the checkpointer see it first;
#   3. synchronous_standby_names set all along and synchronous_commit
#      moved from local to remote_write by a reload: the leases were
#      confirmed by the standby all along, so no ID is ever returned
#      under one it did not confirm.
# The lease worker shows its wait for the standby (SyncRep) in
# pg_stat_activity.  Last, a server without WAL senders: nothing to wait
# for.

use strict;
use warnings;

use FlakeTest;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

# The pid of the one process of a node's pg_stat_activity with this
# backend_type, or undef.
sub pid_of
{
	my ($node, $type) = @_;
	my $pid = $node->safe_psql('postgres',
		"SELECT pid FROM pg_stat_activity WHERE backend_type = '$type'");
	return $pid eq '' ? undef : $pid;
}

# A primary with flakeid (node 5) and a streaming standby of it; $conf
# is more configuration for the primary.
sub pair
{
	my ($name, $conf) = @_;
	my $primary = flake_node(
		"${name}_primary",
		node_id   => 5,
		streaming => 1,
		quiet     => 1,
		conf      => $conf // '');
	$primary->start;
	$primary->safe_psql('postgres', q{
CREATE EXTENSION flakeid;
CREATE TABLE filler (g int, pad text);
});
	$primary->backup('backup');
	my $standby = PostgreSQL::Test::Cluster->new("${name}_standby");
	$standby->init_from_backup($primary, 'backup', has_streaming => 1);
	$standby->start;
	catch_up($primary, $standby);
	return ($primary, $standby);
}

# Stop the standby's WAL receiver and fill the replication connection,
# so that no WAL written from now on reaches the standby.  Returns the
# receiver's pid, and the end of the primary's durable lease once the
# receiver stopped: no lease the standby can still confirm ends later.
sub cut_off
{
	my ($primary, $standby) = @_;
	my $receiver = $standby->safe_psql('postgres', 'SELECT pid FROM pg_stat_wal_receiver');
	ok(kill('STOP', $receiver), 'the standby\'s WAL receiver is stopped');
	my $lease_end = $primary->safe_psql('postgres', 'SELECT lease_end FROM flakeid_status()');
	$primary->safe_psql('postgres',
		"INSERT INTO filler SELECT g, repeat('x', 200) FROM generate_series(1, 300000) g");
	ok( wait_until(
			sub {
				$primary->safe_psql('postgres',
					'SELECT pg_current_wal_lsn() - sent_lsn > 8 * 1024 * 1024 FROM pg_stat_replication') eq 't';
			},
			60),
		'the replication connection is full: what follows stays on the primary');
	return wantarray ? ($receiver, $lease_end) : $receiver;
}

# Turn synchronous replication on by a reload (the settings as SQL) and
# wait until the standby is listed as synchronous.
sub switch_to_sync
{
	my ($primary, $settings) = @_;
	$primary->safe_psql('postgres', "$settings\nSELECT pg_reload_conf();");
	ok( $primary->poll_query_until('postgres',
			q{SELECT count(*) = 1 FROM pg_stat_replication WHERE sync_state = 'sync'}),
		'the standby is synchronous after the reload');
	return;
}

# Every ID a statement returned after the switch to synchronous
# replication (read-only statements: a commit would wait for the standby).
my @returned;

# Calls that need IDs past the confirmed lease: each must wait, never
# return an ID (calls_must_wait()).  IDs returned anyway are kept in
# @returned.
sub calls_wait
{
	my ($primary, $phase) = @_;
	push @returned,
	  calls_must_wait($primary, $phase, 'returns no ID the standby has not confirmed');
	return;
}

# Stop the old primary at once, let the standby go on and promote it;
# then check that no ID it makes is at or below an ID the old primary
# returned after the switch (@returned), and that the promoted standby
# generates.  $promoted, when given, runs on the promoted standby before
# it generates.
sub fail_over
{
	my ($primary, $standby, $receiver, $promoted) = @_;
	my $max = 0;
	foreach (@returned) { $max = $_ if $_ > $max }
	is(scalar @returned, 0, 'the old primary returned no ID after the switch');
	@returned = ();
	$primary->stop('immediate');
	kill('CONT', $receiver);
	$standby->promote;
	$standby->poll_query_until('postgres', 'SELECT NOT pg_is_in_recovery()')
	  or die 'promotion did not finish';
	$promoted->($standby) if $promoted;
	my $check = $standby->safe_psql('postgres', qq{
SELECT count(*), count(*) FILTER (WHERE id::bigint <= $max), bool_and(flakeid_node(id) = 5)
FROM nextflakes(100000) id});
	is($check, '100000|0|t',
		'after failover no new ID is at or below one returned after the switch');
	$standby->stop;
	return;
}

# Round 1: asynchronous, a lease far ahead and flushed only locally, then
# synchronous by a reload.
{
	my ($primary, $standby) = pair('reload');
	my $receiver = cut_off($primary, $standby);
	# IDs 5 s ahead: the lease goes there too, on the primary only
	$primary->safe_psql('postgres',
		'SELECT nextflakes(20000000) LIMIT 1');
	my $ahead = $primary->safe_psql('postgres',
		"SELECT lease_end > clock_timestamp() + interval '4 s' FROM flakeid_status()");
	is($ahead, 't', 'asynchronous: the lease reaches 4 s ahead');

	switch_to_sync($primary, q{
ALTER SYSTEM SET synchronous_standby_names = '*';
ALTER SYSTEM SET synchronous_commit = remote_write;});
	calls_wait($primary, 'sync');

	# the lease worker waits for the standby, and shows it
	my $worker = pid_of($primary, 'flakeid lease worker');
	ok(defined $worker, 'the lease worker is in pg_stat_activity');
	is( $primary->safe_psql('postgres',
			"SELECT wait_event FROM pg_stat_activity WHERE pid = $worker"),
		'SyncRep',
		'the lease worker shows that it waits for the synchronous standby');

	# ended by pg_terminate_backend(), it comes back and still waits
	is($primary->safe_psql('postgres', "SELECT pg_terminate_backend($worker)"),
		't', 'pg_terminate_backend() ends the lease worker');
	ok( wait_until(
			sub {
				my $pid = pid_of($primary, 'flakeid lease worker');
				defined $pid && $pid != $worker;
			},
			30),
		'the postmaster starts the lease worker again');
	calls_wait($primary, 'sync again');

	fail_over($primary, $standby, $receiver);
}

# Round 2: the lease worker is stopped while the reload happens; the
# backends see the synchronous standby first.
{
	my ($primary, $standby) = pair('stopped');
	my $receiver = cut_off($primary, $standby);
	$primary->safe_psql('postgres', 'SELECT nextflakes(20000000) LIMIT 1');
	my $worker = pid_of($primary, 'flakeid lease worker');
	ok(kill('STOP', $worker), 'the lease worker is stopped');
	switch_to_sync($primary, q{
ALTER SYSTEM SET synchronous_standby_names = '*';
ALTER SYSTEM SET synchronous_commit = remote_write;});
	calls_wait($primary, 'sync');
	kill('CONT', $worker);
	calls_wait($primary, 'sync, worker back');
	fail_over($primary, $standby, $receiver);
}

# Round 3: synchronous_standby_names set all along, synchronous_commit
# local in the configuration, then remote_write by a reload.
{
	my ($primary, $standby) = pair('local', q{
synchronous_standby_names = '*'
synchronous_commit = local});
	ok( $primary->poll_query_until('postgres',
			q{SELECT count(*) = 1 FROM pg_stat_replication WHERE sync_state = 'sync'}),
		'the standby is synchronous');
	# The lease worker waits for the standby whatever synchronous_commit
	# says, so that while the standby streams, a burst past the lease gets
	# a lease the standby confirmed, at once.
	my ($ret, $out, $err, $state) = psql_state($primary,
		"SET statement_timeout = '20s';\nSELECT count(*) FROM nextflakes(12000000);");
	is($out, '12000000', 'local: a burst 3 s ahead gets a lease the streaming standby confirmed')
	  or diag("exit code $ret, SQLSTATE " . ($state // 'none') . "\n$err");
	my ($receiver, $lease_end) = cut_off($primary, $standby);
	# With commits local, IDs past the confirmed lease still wait.  The
	# lease the standby confirmed before it was cut off may cover the
	# clock for up to a second: the calls start after its end.
	ok( $primary->poll_query_until('postgres',
			"SELECT clock_timestamp() > '$lease_end'::timestamptz + interval '20 ms'"),
		'the clock passed every lease the standby could have confirmed');
	calls_wait($primary, 'local');
	# the lease worker asked for the lease waits for the standby, although
	# the configuration's commits do not
	my $worker = pid_of($primary, 'flakeid lease worker');
	is( $primary->safe_psql('postgres',
			"SELECT wait_event FROM pg_stat_activity WHERE pid = $worker"),
		'SyncRep',
		'local: the lease worker waits for the synchronous standby (SyncRep)');
	($ret, $out, $err, $state) = psql_state($primary,
		"SET statement_timeout = '1s';\nSELECT nextflakes(20000000) LIMIT 1;");
	push @returned, grep { /^\d+$/ } split /\n/, $out;
	ok($ret != 0 && defined $state && $state =~ /^(57014|55000)$/,
		'local: a burst 5 s ahead waits for the standby too')
	  or diag("$out\n$err");
	switch_to_sync($primary, q{ALTER SYSTEM SET synchronous_commit = remote_write;});
	calls_wait($primary, 'remote_write');
	# The promoted standby's own configuration names synchronous standbys
	# (a copy of the primary's) and none is there: like its commits would
	# with synchronous_commit on, its IDs wait until the list is changed.
	my $promoted = sub {
		my ($node) = @_;
		my ($ret, $out, $err, $state) = psql_state($node,
			"SET statement_timeout = '1s';\nSELECT nextflakes(10000000) LIMIT 1;");
		ok($ret != 0 && defined $state && $state =~ /^(57014|55000)$/,
			'promoted with synchronous_standby_names set and no standby: IDs wait')
		  or diag("$out\n$err");
		$node->safe_psql('postgres',
			"ALTER SYSTEM SET synchronous_standby_names = '';\nSELECT pg_reload_conf();");
	};
	fail_over($primary, $standby, $receiver, $promoted);
}

# A server with max_wal_senders = 0 (and wal_level = minimal) can have no
# standby, and its commits do not wait for the standbys that
# synchronous_standby_names names; its IDs do not wait either.  With one
# WAL sender and the named standby absent, both wait.
foreach my $senders (0, 1)
{
	my $alone = flake_node("walsenders_$senders", node_id => 6, streaming => $senders,
		conf => "synchronous_standby_names = 's1'");
	$alone->adjust_conf('postgresql.conf', 'max_wal_senders', $senders) if $senders;
	$alone->start;
	my ($ret, $out, $err, $state) = psql_state($alone, q{
SET synchronous_commit = local;
CREATE EXTENSION flakeid;
SET synchronous_commit = on;
SET statement_timeout = '3s';
SELECT current_setting('max_wal_senders'), count(DISTINCT id) FROM nextflakes(1000) id;});
	if ($senders)
	{
		ok($ret != 0 && defined $state && $state =~ /^(57014|55000)$/,
			'one WAL sender and the synchronous standby absent: IDs wait')
		  or diag("$out\n$err");
	}
	else
	{
		is($out, '0|1000',
			'max_wal_senders = 0 and synchronous_standby_names set: IDs do not wait')
		  or diag($err);
	}
	$alone->stop;
}

done_testing();
