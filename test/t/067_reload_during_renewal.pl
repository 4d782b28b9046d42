# A reload of synchronous_standby_names that arrives while the lease
# worker is inside a renewal (held at the open of its state file for 0.6 s
# by a fault shim, and again when it reads postgresql.conf to take the
# reload in): the worker must not stand by its reading from before the
# reload, which a statement begun before the reload shares.  The list goes
# from FIRST 1 (s1, s2) to FIRST 2 (s1, s2), a change of the number, which
# only the lease worker reads; s2 is behind (its WAL receiver stopped, its
# connection full).  The statement, which needs the new lease, returns no
# ID that s2 lacks; once s2 goes on, calls return IDs again.  Then the
# same from FIRST 1 (s1, s2) to ANY 2 (s1, s2), a change of the method
# too.  (A change that moves which standby comes first, as from ANY 1 to
# FIRST 1 (s2, s1), counts the old way until the WAL senders take the
# reload in, for commits as for IDs: each takes it in at its own moment.)

use strict;
use warnings;

use FlakeFault;
use FlakeTest;
use IPC::Run;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep);

my $primary = flake_node('primary', node_id => 5, streaming => 1, quiet => 1,
	conf => "wal_keep_size = '1GB'");
start_slow_state_file($primary, 600, slow_conf => 1);
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

sub sync_states
{
	return $primary->safe_psql('postgres', q{
SELECT string_agg(application_name || '=' || sync_state, ' ' ORDER BY application_name)
FROM pg_stat_replication});
}

# Stop s2's WAL receiver and fill its connection: nothing written from now
# on reaches s2.  Returns the receiver's pid.
sub stall_s2
{
	my $receiver = $standby{s2}->safe_psql('postgres', 'SELECT pid FROM pg_stat_wal_receiver');
	kill('STOP', $receiver) or die "could not stop $receiver";
	$primary->safe_psql('postgres', "SET synchronous_commit = local;\n"
		  . "INSERT INTO filler SELECT g, repeat('x', 200) FROM generate_series(1, 300000) g");
	wait_until(
		sub {
			$primary->safe_psql('postgres', q{
SELECT pg_current_wal_lsn() - sent_lsn > 8 * 1024 * 1024
FROM pg_stat_replication WHERE application_name = 's2'}) eq 't';
		},
		60) or die 's2\'s connection did not fill';
	return $receiver;
}

foreach my $round ([ 'FIRST 1 (s1, s2)', 's1=sync s2=potential', 'FIRST 2 (s1, s2)' ],
	[ 'FIRST 1 (s1, s2)', 's1=sync s2=potential', 'ANY 2 (s1, s2)' ])
{
	my ($list, $before, $new_list) = @$round;
	my $phase = "$list reloaded to $new_list during a renewal";
	$primary->safe_psql('postgres',
		"ALTER SYSTEM SET synchronous_standby_names = '$list';\nSELECT pg_reload_conf();");
	ok(wait_until(sub { sync_states() eq $before }, 60), "$phase: first $before")
	  or diag('states: ' . sync_states());
	my $receiver = stall_s2();
	$primary->safe_psql('postgres', "ALTER SYSTEM SET synchronous_standby_names = '$new_list'");
	my $switch = slow_state_file($primary);
	my ($err, $reloaded);
	# a statement that ends before the reload went out tells nothing: try
	# again, at most three times
	foreach my $attempt (1 .. 3)
	{
		# the lease lapses, so that the next call needs a renewal
		wait_until(
			sub {
				$primary->safe_psql('postgres',
					'SELECT lease_end < clock_timestamp() FROM flakeid_status()') eq 't';
			},
			30) or die 'the lease did not lapse';
		# each open of the state file now takes 600 ms more: the renewal
		# that the statement asks for holds the worker that long
		open my $fh, '>', $switch or die "could not write $switch: $!";
		close $fh;
		my $out = '';
		$err = '';
		my $early = IPC::Run::start(
			[
				'psql', '-XAtq', '-v', 'VERBOSITY=verbose', '-d', $primary->connstr('postgres'),
				'-c', "SET statement_timeout = '3s'",
				'-c', q{DO $$ BEGIN RAISE NOTICE 'flakeid %', nextflake(); END $$}
			],
			'>', \$out, '2>', \$err);
		my $active = q{SELECT count(*) FROM pg_stat_activity WHERE query LIKE 'DO %nextflake%' AND state = 'active'};
		wait_until(sub { $primary->safe_psql('postgres', $active) eq '1' || !$early->pumpable }, 10);
		usleep(150_000);
		$reloaded = $primary->safe_psql('postgres', $active) eq '1';
		$primary->safe_psql('postgres', 'SELECT pg_reload_conf()') if $reloaded;
		$early->finish;
		unlink $switch;
		last if $reloaded;
		note "attempt $attempt: the statement ended before the reload went out: $err";
	}
	ok($reloaded, "$phase: a statement that needs the new lease is under way when the reload comes");
	my @ids = $err =~ /NOTICE:\s+(?:\w+:\s+)?flakeid (\d+)/g;
	ok(!@ids && $err =~ /57014|55000/,
		"$phase: the statement begun before the reload returns no ID that s2 lacks")
	  or diag($err);

	kill('CONT', $receiver);
	$primary->wait_for_catchup($_, 'flush', $primary->lsn('insert')) foreach values %standby;
	is( $primary->safe_psql('postgres', "SET statement_timeout = '10s'; SELECT flakeid_node(nextflake())"),
		'5', "$phase: once s2 has caught up, calls return IDs");
}

$_->stop foreach values %standby;
$primary->stop;
done_testing();
