# The floor after archive recovery (062) from the side of the sessions that
# are already connected when a standby is promoted, and from the side of a
# flakeid.max_lead lowered shortly before the failover.
#
#   1. Sessions connected to a standby call nextflakes() in a loop through
#      its promotion: every ID they get is above every ID the old primary
#      returned, also the IDs of calls made in the moment between the end
#      of recovery and the floor.  The lease worker's write of the floor is
#      made slow (each open of the state file takes 800 ms), so that the
#      calls meet that moment every time.  Three shapes: an asynchronous
#      standby, a cascaded standby (the standby of a standby) and a
#      point-in-time restore with sessions open during its recovery; the
#      first two for two rounds each.
#   2. flakeid.max_lead lowered from 8 s to 1 s on both servers by a reload,
#      after the old primary returned IDs about 6 s ahead of the clock: the
#      promoted server's floor still covers them, the first calls wait for
#      the floor (and an error that runs out of flakeid.max_clock_wait says
#      that it waited for the promotion floor, not that the clock moved
#      backwards).
#   3. flakeid.max_clock_skew that leaves flakeid.max_clock_wait no room
#      for the first calls after a promotion: a WARNING at start and at a
#      reload.

use strict;
use warnings;

use FlakeFault;
use FlakeTest;
use IPC::Run;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time usleep);

# A primary (node 9) and what standbys of it need.
sub primary
{
	my ($name, %opts) = @_;
	my $primary = flake_node(
		"${name}_primary",
		node_id   => 9,
		streaming => 1,
		archiving => $opts{archiving} // 0,
		conf      => $opts{conf} // "flakeid.max_lead = '60s'");
	$primary->start;
	$primary->safe_psql('postgres', qq{
CREATE EXTENSION flakeid;
CREATE TABLE t (id flakeid PRIMARY KEY DEFAULT nextflake(), g int);
INSERT INTO t (g) SELECT generate_series(1, 1000);
@{[ THROUGH_PROMOTION_SQL ]}});
	$primary->backup('backup');
	return $primary;
}

# A burst on the old primary: one call reserves $n IDs and the next returns
# the ID past them, more than $ahead s ahead of the clock.  Returns it.
sub burst
{
	my ($primary, $n, $ahead) = @_;
	my @out = split /\n/, $primary->safe_psql('postgres', qq{
SELECT nextflakes($n) LIMIT 1;
SELECT id::bigint, flakeid_timestamp(id) > clock_timestamp() + interval '$ahead s'
FROM (SELECT nextflake() AS id) s;});
	my ($x, $is_ahead) = split /\|/, $out[-1];
	is($is_ahead, 't', "the old primary returned an ID more than $ahead s ahead of the clock");
	return $x;
}

# Start $n sessions on the standby, each calling through_promotion().
sub start_sessions
{
	my ($node, $n) = @_;
	my @sessions;
	foreach my $i (1 .. $n)
	{
		my %s = (out => '', err => '');
		$s{h} = IPC::Run::start(
			[
				'psql', '-X', '-A', '-t', '-v', 'ON_ERROR_STOP=1',
				'-d', $node->connstr('postgres'),
				'-c', 'SELECT x FROM through_promotion(20)'
			],
			'>', \$s{out}, '2>', \$s{err}, run_timeout());
		push @sessions, \%s;
	}
	# let every session reach its loop, refused by the standby
	usleep(300_000);
	return @sessions;
}

# Promote a node while the state file's writes are slow, and wait until it
# is a primary.
sub promote_slowly
{
	my ($node) = @_;
	my $switch = slow_state_file($node);
	open my $fh, '>', $switch or die "could not write $switch: $!";
	close $fh;
	$node->promote;
	$node->poll_query_until('postgres', 'SELECT NOT pg_is_in_recovery()')
	  or die 'promotion did not finish';
	return;
}

# Wait for the sessions; every ID they got lies above $x, and none twice.
sub sessions_above
{
	my ($node, $x, $what, @sessions) = @_;
	my @ids;
	foreach my $s (@sessions)
	{
		ok(IPC::Run::finish($s->{h}), "$what: a session calling through the promotion succeeds")
		  or diag($s->{err});
		push @ids, grep { /^\d+$/ } split /\n/, $s->{out};
	}
	unlink slow_state_file($node);
	my %seen;
	my $twice = grep { $seen{$_}++ } @ids;
	my $below = grep { $_ <= $x } @ids;
	is(scalar(@ids), 64 * 20 * scalar(@sessions), "$what: every call returned its IDs");
	is($below, 0, "$what: no ID of a session connected through the promotion is at or below the old primary's");
	is($twice, 0, "$what: no ID twice");
	ok($node->log_contains(qr/flakeid continues from .* on timeline/),
		"$what: the floor was written");
	return;
}

# 1a. An asynchronous standby, stopped during the burst; two rounds.
foreach my $round (1, 2)
{
	my $primary = primary("async$round");
	my $standby = PostgreSQL::Test::Cluster->new("async${round}_standby");
	$standby->init_from_backup($primary, 'backup', has_streaming => 1);
	start_slow_state_file($standby, 800);
	catch_up($primary, $standby);
	$standby->stop;
	my $x = burst($primary, 100_000_000, 20);
	$primary->stop('immediate');
	start_slow_state_file($standby, 800);
	my @sessions = start_sessions($standby, 4);
	promote_slowly($standby);
	sessions_above($standby, $x, "asynchronous standby, round $round", @sessions);
	$standby->stop;
}

# 1b. A cascaded standby: the standby of a standby, promoted after both
# its upstream servers are gone; two rounds.
foreach my $round (1, 2)
{
	my $primary = primary("cascade$round");
	my $first = PostgreSQL::Test::Cluster->new("cascade${round}_first");
	$first->init_from_backup($primary, 'backup', has_streaming => 1);
	$first->start;
	$first->backup('first_backup');
	my $second = PostgreSQL::Test::Cluster->new("cascade${round}_second");
	$second->init_from_backup($first, 'first_backup', has_streaming => 1);
	start_slow_state_file($second, 800);
	catch_up($primary, $first);
	catch_up($primary, $second, via => $first);
	$second->stop;
	my $x = burst($primary, 100_000_000, 20);
	$primary->stop('immediate');
	$first->stop('immediate');
	start_slow_state_file($second, 800);
	my @sessions = start_sessions($second, 4);
	promote_slowly($second);
	sessions_above($second, $x, "cascaded standby, round $round", @sessions);
	$second->stop;
}

# 1c. A point-in-time restore to a point before the burst, its sessions
# connected while it recovers: it pauses at the target, and is promoted.
{
	my $primary = primary('pitr', archiving => 1);
	my $target = $primary->safe_psql('postgres', 'SELECT pg_current_wal_lsn()');
	$primary->safe_psql('postgres', 'INSERT INTO t (g) SELECT generate_series(1, 1000)');
	my $x = burst($primary, 100_000_000, 20);
	$primary->stop;
	my $restored = PostgreSQL::Test::Cluster->new('pitr_restored');
	$restored->init_from_backup($primary, 'backup', has_restoring => 1);
	$restored->append_conf('postgresql.conf', qq{
recovery_target_lsn = '$target'
recovery_target_action = 'pause'});
	start_slow_state_file($restored, 800);
	$restored->poll_query_until('postgres', 'SELECT pg_get_wal_replay_pause_state() = \'paused\'')
	  or die 'the restore did not reach its target';
	my @sessions = start_sessions($restored, 4);
	promote_slowly($restored);
	is($restored->safe_psql('postgres', 'SELECT count(*) FROM t'), '1000',
		'the restore stopped before the burst');
	sessions_above($restored, $x, 'point-in-time restore with sessions open', @sessions);
	$restored->stop;
}

# 2. flakeid.max_lead lowered on both servers shortly before the failover.
# The standby runs, but without streaming, so that no lease of the burst
# reaches it.
{
	my $primary = primary('lowered', conf => "flakeid.max_lead = '8s'");
	my $standby = PostgreSQL::Test::Cluster->new('lowered_standby');
	$standby->init_from_backup($primary, 'backup', has_streaming => 1);
	$standby->append_conf('postgresql.conf', "flakeid.max_clock_wait = '3s'");
	$standby->start;
	catch_up($primary, $standby);
	$standby->append_conf('postgresql.conf', "primary_conninfo = ''");
	$standby->reload;
	$standby->poll_query_until('postgres', 'SELECT count(*) = 0 FROM pg_stat_wal_receiver')
	  or die 'the standby kept streaming';
	my $x = burst($primary, 24_000_000, 5);
	foreach my $node ($primary, $standby)
	{
		$node->append_conf('postgresql.conf', "flakeid.max_lead = '1s'");
		$node->reload;
	}
	$standby->poll_query_until('postgres', q{SELECT current_setting('flakeid.max_lead') = '1s'})
	  or die 'the standby did not take the reload in';
	$primary->stop('immediate');
	$standby->promote;
	$standby->poll_query_until('postgres', 'SELECT NOT pg_is_in_recovery()')
	  or die 'promotion did not finish';

	my $err = fails_with($standby, 'SELECT nextflake()', '53400',
		'max_lead lowered: a call that would wait longer than flakeid.max_clock_wait for the floor');
	like($err, qr/promotion floor/, 'max_lead lowered: the error says it waits for the promotion floor');
	unlike($err, qr/clock moved backwards/, 'max_lead lowered: the error does not blame the clock');
	like($err, qr/flakeid\.max_clock_wait/, 'max_lead lowered: the error names the setting that bounds the wait');

	$standby->append_conf('postgresql.conf', "flakeid.max_clock_wait = '30s'");
	$standby->reload;
	$standby->poll_query_until('postgres', q{SELECT current_setting('flakeid.max_clock_wait') = '30s'})
	  or die 'the standby did not take the reload in';
	my $first = $standby->safe_psql('postgres', 'SELECT nextflake()::bigint');
	cmp_ok($first, '>', $x, 'max_lead lowered: the first ID is above every ID the old primary returned');
	is( $standby->safe_psql('postgres', qq{
SELECT count(*) FILTER (WHERE id::bigint <= $x), bool_and(flakeid_node(id) = 9)
FROM nextflakes(10000) id}),
		'0|t', 'max_lead lowered: so are the IDs after it');
	$standby->stop;
}

# 3. flakeid.max_clock_skew that leaves flakeid.max_clock_wait no room
# for the first calls after a promotion: a WARNING at start and at a
# reload, naming both; generation itself goes on.
{
	my $node = flake_node('skew', node_id => 3, conf => q{
flakeid.max_clock_skew = '10s'
flakeid.max_clock_wait = '5s'});
	$node->start;
	my $warning = qr/WARNING:  flakeid\.max_clock_skew \(10000 ms\) leaves no room in flakeid\.max_clock_wait \(5000 ms\)/;
	ok($node->log_contains($warning), 'max_clock_skew above max_clock_wait: a WARNING at start');
	$node->safe_psql('postgres', 'CREATE EXTENSION flakeid');
	is($node->safe_psql('postgres', 'SELECT flakeid_node(nextflake())'), '3',
		'max_clock_skew above max_clock_wait: generation goes on');
	my $offset = -s $node->logfile;
	$node->append_conf('postgresql.conf', "flakeid.max_clock_wait = '12s'");
	$node->reload;
	$node->poll_query_until('postgres', q{SELECT current_setting('flakeid.max_clock_wait') = '12s'})
	  or die 'no reload';
	$node->safe_psql('postgres', 'SELECT nextflake()');
	$node->append_conf('postgresql.conf', "flakeid.max_clock_skew = '11s'");
	$node->reload;
	ok( wait_until(
			sub {
				slurp_file($node->logfile, $offset) =~
				  /WARNING:  flakeid\.max_clock_skew \(11000 ms\) leaves no room in flakeid\.max_clock_wait \(12000 ms\)/;
			},
			10),
		'max_clock_skew raised to leave no room: a WARNING at the reload');
	like(slurp_file($node->logfile, $offset), qr/HINT:  Set flakeid\.max_clock_wait above 1000 ms plus flakeid\.max_clock_skew/,
		'the hint says what to set');
	$node->stop;
}

done_testing();
