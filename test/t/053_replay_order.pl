# Replaying lease records older than the lease on disk never takes the
# floor back, even when they carry another layout.  A base backup copies
# flakeid.state when it gets to it, which may be long after the checkpoint
# its recovery starts from; so may a standby's restart find a state file
# ahead of the WAL it replays.  Here the backup's recovery starts before
# the primary moved from 10 to 12 node bits, with the state file of after
# the move, and stops (paused) before the move's records.

use strict;
use warnings;

use File::Copy qw(copy);
use FlakeTest;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $primary = flake_node('primary', node_id => 4, streaming => 1, archiving => 1);
$primary->start;
$primary->safe_psql('postgres', 'CREATE EXTENSION flakeid');
$primary->backup('before');

# Leases under 10 node bits, then 12 node bits accepted and leases under them.
$primary->safe_psql('postgres', 'SELECT count(*) FROM nextflakes(100000)');
my $before_change = $primary->lsn('insert');
$primary->stop;
$primary->append_conf('postgresql.conf', 'flakeid.node_bits = 12');
$primary->start;
is($primary->safe_psql('postgres', 'SELECT flakeid_accept_layout()'), 't',
	'the primary accepts 12 node bits');
$primary->safe_psql('postgres', 'SELECT count(*) FROM nextflakes(100000)');
my $disk_sql = q{
SELECT node_bits || ' ' || lease_end_ms FROM flakeid_state_file()
WHERE valid ORDER BY serial DESC, "offset" LIMIT 1};
my ($bits, $lease) = split / /, $primary->safe_psql('postgres', $disk_sql);
is($bits, '12', 'the primary recorded the new layout');
my $segment = $primary->safe_psql('postgres',
	'SELECT pg_walfile_name(pg_current_wal_lsn())');
$primary->safe_psql('postgres', 'SELECT pg_switch_wal()');
$primary->poll_query_until('postgres',
	"SELECT last_archived_wal >= '$segment' FROM pg_stat_archiver")
  or die 'the WAL was not archived';
$primary->stop;

# The backup from before the move, with the state file from after it.
my $restored = PostgreSQL::Test::Cluster->new('restored');
$restored->init_from_backup($primary, 'before', has_restoring => 1);
copy($primary->data_dir . '/flakeid.state', $restored->data_dir . '/flakeid.state')
  or die "copy: $!";
$restored->append_conf(
	'postgresql.conf', qq{
recovery_target_lsn = '$before_change'
recovery_target_action = 'pause'
});
$restored->start;
$restored->poll_query_until('postgres',
	q{SELECT pg_get_wal_replay_pause_state() = 'paused'})
  or die 'recovery did not pause at the target';
ok( $restored->safe_psql('postgres',
		"SELECT pg_last_wal_replay_lsn() <= '$before_change'::pg_lsn"),
	'replay stopped before the new layout');
my ($bits_after, $lease_after) =
  split / /, $restored->safe_psql('postgres', $disk_sql);
is($bits_after, '12', 'replaying older records did not bring the old layout back');
cmp_ok($lease_after, '>=', $lease, 'nor did it take the lease back');
is($restored->safe_psql('postgres', 'SELECT node_bits FROM flakeid_status()'),
	'12', 'the generator keeps the newer layout');

$restored->stop('immediate');

# A crash after the last renewal: crash recovery replays the lease that the
# file already holds, which needs no write; so a file it could not write
# (read-only here) holds nothing back, and the file stays as it was.
SKIP:
{
	skip 'file permissions do not bind the superuser root', 3 if $> == 0;
	my $serial_sql = 'SELECT max(serial) FROM flakeid_state_file() WHERE valid';
	$primary->start;
	$primary->safe_psql('postgres', 'CHECKPOINT');
	$primary->safe_psql('postgres', 'SELECT count(*) FROM nextflakes(100000)');
	# the worker idle: no renewal between the crash's WAL and the file
	my ($serial, $was) = ($primary->safe_psql('postgres', $serial_sql), -1);
	for (my $tries = 0; $serial ne $was; $tries++)
	{
		die 'the lease worker kept renewing for 30 s with no call' if $tries == 30;
		sleep 1;
		($was, $serial) = ($serial, $primary->safe_psql('postgres', $serial_sql));
	}
	my $file = $primary->data_dir . '/flakeid.state';
	chmod 0444, $file or die "chmod $file: $!";
	my $offset = -s $primary->logfile;
	$primary->stop('immediate');
	$primary->start;
	is($primary->safe_psql('postgres', 'SELECT state FROM flakeid_status()'),
		'ready', 'a crash replays the lease the file holds: the state is ready');
	ok(!$primary->log_contains(qr/keeps the replayed time lease in memory/, $offset),
		'a crash replays the lease the file holds: nothing waits for the file');
	chmod 0600, $file or die "chmod $file: $!";
	is($primary->safe_psql('postgres', $serial_sql), $serial,
		'a crash replays the lease the file holds: the file is not written again');
	$primary->stop;
}
done_testing();
