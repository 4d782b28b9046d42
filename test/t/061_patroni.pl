# Patroni, a real HA manager, promotes standbys, and no ID that a
# statement returned is ever returned again.  A one-member etcd and a
# three-member Patroni cluster on 127.0.0.1 (test/perl/FlakePatroni.pm),
# flakeid preloaded with its node id set in the DCS's
# postgresql.parameters, so that every member has the same settings.  Two
# clients run read-only SELECT nextflakes(k), k from 1 to 500, against the
# leader (libpq's target_session_attrs = read-write over every member) and
# write every ID a statement returned to files, which a plain PostgreSQL
# server outside the cluster loads.
#
# Four rounds, each with a new leader:
#   1. synchronous_mode: true, patronictl switchover to the synchronous
#      standby;
#   2. synchronous_mode: true, failover: kill -9 of the leader's postmaster;
#   3. Patroni's asynchronous default, switchover;
#   4. asynchronous, failover.
# Before the switchover or the kill, a burst takes the IDs about 9 s ahead
# of the clock (flakeid.max_lead is 10 s here, so that they are still
# ahead when Patroni has promoted a standby), and the clients go on from
# there.  Before a failover the leader's WAL senders are stopped (SIGSTOP):
# nothing the leader writes from then on reaches a standby.  Asynchronous,
# they stop before the burst, so that its lease stays on the old leader;
# synchronous, after it, so that the calls go on under the lease the
# synchronous standby confirmed.  With primary_start_timeout = 0 Patroni
# fails over as soon as it sees the postmaster gone, rather than starting
# it again.  After the switchover or failover the clients go on against
# the new leader until the clock has passed every ID the old leader
# returned; then the round's IDs are loaded, and none may have been
# returned before, in this round or an earlier one.
#
# Each round notes how many IDs the clients saw, how long Patroni took,
# how far the old leader's IDs were still ahead of the clock when the new
# leader took over, how many of the new leader's IDs lie at or below the
# old leader's largest, and how many were returned twice.

use strict;
use warnings;

use FlakePatroni;
use FlakeTest;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time usleep);

my $why = patroni_missing();
plan skip_all => $why if defined $why;

END { patroni_teardown() }

my $started = time;
my $recorder = recorder_start();
my $bin_dir = $recorder->config_data('--bindir');

my $etcd = etcd_start();
my @members = patroni_cluster(
	etcd    => $etcd,
	names   => [qw(m1 m2 m3)],
	bin_dir => $bin_dir,
	dcs     => {
		ttl                     => 20,
		loop_wait               => 1,
		retry_timeout           => 5,
		maximum_lag_on_failover => 1048576,
		primary_start_timeout   => 0,
		synchronous_mode        => JSON::PP::true,
		postgresql              => {
			use_pg_rewind => JSON::PP::true,
			use_slots     => JSON::PP::true,
			parameters    => {
				shared_preload_libraries => 'flakeid',
				'flakeid.node_id'        => 7,
				'flakeid.max_lead'       => '10s',
				wal_log_hints            => 'on',
				shared_buffers           => '32MB',
				max_connections          => 40,
				max_wal_senders          => 10,
				max_replication_slots    => 10,
			},
		},
	});
my ($leader) = wait_healthy(\@members, 1);
note sprintf('etcd and Patroni cluster up in %.1f s, %s leads',
	time - $started, $leader->{name});
$leader->{node}->safe_psql('postgres', 'CREATE EXTENSION flakeid');

my $conninfo =
	'host=' . join(',', ('127.0.0.1') x @members)
  . ';port=' . join(',', map { $_->{node}->port } @members)
  . ';dbname=postgres;target_session_attrs=read-write;connect_timeout=2';

is( $leader->{node}->safe_psql(
		'postgres', q{SELECT state FROM flakeid_status()}),
	'ready', 'the leader generates');
foreach my $m (@members)
{
	is( $m->{node}->safe_psql(
			'postgres',
			q{SELECT current_setting('shared_preload_libraries') || ' '
			  || current_setting('flakeid.node_id')}),
		'flakeid 7',
		"$m->{name}: flakeid preloaded, node id 7, from the DCS");
}

# The time of an ID, in seconds since 1970, by the layout's epoch.
my $epoch = $leader->{node}->safe_psql('postgres',
	'SELECT extract(epoch FROM epoch) FROM flakeid_status()');
sub id_time
{
	my ($id) = @_;
	return $epoch + ($id >> FLAKE_LOW_BITS) / 1000;
}

# The burst: 38 million IDs, 9.3 s of the default layout's 4,096 a
# millisecond, within flakeid.max_lead (10 s, set in the DCS above).
use constant BURST => 38_000_000;

my $reissued_before = 0;

# The pids of the leader's WAL senders.
sub walsenders
{
	my ($member) = @_;
	return split /\n/,
	  $member->{node}->safe_psql('postgres', 'SELECT pid FROM pg_stat_replication');
}

# A round: $mode is synchronous or asynchronous, $action switchover or
# failover.
sub round
{
	my ($round, $mode, $action) = @_;
	my $what = "$mode $action";
	my ($old, $standby) = wait_healthy(\@members, $mode eq 'synchronous');
	my $node = $old->{node};
	my $dir = PostgreSQL::Test::Utils::tempdir("round$round");
	my $clients = clients_start(
		dir      => $dir,
		count    => 2,
		max_k    => 500,
		conninfo => $conninfo,
		seed     => 1000 * $round,
		deadline => time + 3 * $PostgreSQL::Test::Utils::timeout_default);
	ok(clients_await($clients, $node->port, 0, 60),
		"$what: the clients get IDs from the leader, $old->{name}");

	# Stop what the leader sends its standbys; take the IDs ahead (the
	# burst reserves them at once and returns its first; the next call's
	# ID is past them).
	my @senders = $action eq 'failover' ? walsenders($old) : ();
	is(scalar @senders, 2, "$what: the leader has a WAL sender to each standby, to stop")
	  if $action eq 'failover';
	kill 'STOP', @senders if @senders && $mode eq 'asynchronous';
	my ($first, $ahead) = split /\n/, $node->safe_psql('postgres',
		"SELECT nextflakes(@{[ BURST ]})::bigint LIMIT 1;\nSELECT nextflake()::bigint;");
	PostgreSQL::Test::Utils::append_to_file("$dir/c0." . $node->port,
		"$first $first\n$ahead $ahead\n");
	kill 'STOP', @senders if @senders && $mode eq 'synchronous';
	is( $node->safe_psql('postgres',
			"SELECT flakeid_timestamp($ahead) > clock_timestamp() + interval '8 s'"),
		't',
		"$what: a burst takes the IDs more than 8 s ahead of the clock");

	my ($start, $switched);
	if ($action eq 'switchover')
	{
		my $to = $standby // (grep { $_ != $old } @members)[0];
		$start = time;
		$switched = patronictl_start($old, 'switchover', '--leader', $old->{name},
			'--candidate', $to->{name}, '--force');
	}
	else
	{
		usleep(500_000);
		$start = time;
		kill 'KILL', postmaster_pid($old);
		kill 'KILL', @senders;
	}
	my $new;
	ok( wait_until(
			sub {
				$new = patroni_leader(\@members);
				$new && $new != $old;
			},
			90,
			0.05),
		"$what: Patroni makes another member the leader");
	die "$what: no new leader\n" unless $new && $new != $old;
	my $took_over = time;
	note 'patronictl: ' . $switched->() if $switched;
	is($new->{name}, $standby->{name},
		"$what: Patroni promotes the synchronous standby")
	  if $standby;

	# The clients go on until the clock has passed every ID the old
	# leader returned.
	my $max_old = clients_max($dir, $node->port);
	my $passed = id_time($max_old);
	ok( clients_await($clients, $new->{node}->port, $passed + 0.5, 90),
		"$what: the clients go on against the new leader, $new->{name}");
	my ($well, $connects, $refused, $failed, $statements) = clients_stop($clients);
	is($well, 2, "$what: both clients ended well");

	my $loaded = recorder_load($recorder, $round, $dir);
	my ($old_port, $new_port) = ($node->port, $new->{node}->port);
	my ($from_old, $from_new, $new_below) = split /\|/,
	  $recorder->safe_psql(
		'postgres', qq{
SELECT coalesce(sum(last - first + 1) FILTER (WHERE port = $old_port), 0),
	coalesce(sum(last - first + 1) FILTER (WHERE port = $new_port), 0),
	coalesce(sum(greatest(0, least(last, $max_old) - first + 1))
		FILTER (WHERE port = $new_port), 0)
FROM returned WHERE round = $round});
	my $reissued = $recorder->safe_psql('postgres', recorder_reissued_sql());
	note sprintf(
		'%s: %s IDs returned, %s by the old leader %s and %s by the new leader %s '
		  . '(%d statements, %d connections, %d refused, %d statements failed); '
		  . 'the new leader took over %.1f s after the %s, when the old leader\'s '
		  . 'largest ID was %.0f ms ahead of the clock; %s of the new leader\'s IDs '
		  . 'at or below it; %s reissued',
		$what, $loaded, $from_old, $old->{name}, $from_new, $new->{name},
		$statements, $connects, $refused, $failed,
		$took_over - $start, $action eq 'switchover' ? 'switchover began' : 'kill',
		1000 * ($passed - $took_over), $new_below, $reissued - $reissued_before);
	cmp_ok($from_old, '>', 0, "$what: the old leader returned IDs");
	cmp_ok($from_new, '>', 0, "$what: the new leader returned IDs");
	is($reissued - $reissued_before, 0, "$what: no ID returned twice");
	$reissued_before = $reissued;
	return $old;
}

round(1, 'synchronous', 'switchover');
my $crashed = round(2, 'synchronous', 'failover');

# The crashed leader comes back as a standby of the new one; Patroni
# rewinds it (pg_rewind reads flakeid's WAL records) where its WAL went
# past what the new leader has.
my ($any) = wait_healthy(\@members, 1);
pass("synchronous failover: the old leader, $crashed->{name}, streams from the new one again");
note "$crashed->{name} was rewound: "
  . (slurp_file($crashed->{node}->logfile) =~ /pg_rewind: Done!/ ? 'yes' : 'no');
patronictl($any, 'edit-config', '--set', 'synchronous_mode=false', '--force');
round(3, 'asynchronous', 'switchover');
round(4, 'asynchronous', 'failover');

is($recorder->safe_psql('postgres', recorder_reissued_sql()),
	'0',
	'the whole history: no ID returned twice across switchovers and failovers');
note sprintf('061_patroni: %.0f s', time - $started);

done_testing();
