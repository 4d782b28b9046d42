# Synchronous replication switched on by reload while the lease worker
# is stopped (SIGSTOP), so that it never takes the reload in: a session
# that took it in checks the synchronous standby itself.  It may not
# trust the worker's reading, taken with no standby named; it asks
# instead that every named standby that streams has flushed the lease.
# With the one named standby streaming, that is one standby, and the
# session gets its ID, covered by the lease that standby has, without
# waiting for the worker (that a stalled standby keeps a session from IDs
# past its lease, whether the worker runs or not, is 059's).

use strict;
use warnings;

use FlakeFault;
use FlakeTest;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $primary = flake_node(
	'primary',
	node_id   => 4,
	streaming => 1,
	conf      => "flakeid.max_lead = '60s'\nflakeid.max_lease_wait = '3s'");
$primary->start;
$primary->safe_psql('postgres', 'CREATE EXTENSION flakeid');
$primary->backup('backup');
my $standby = PostgreSQL::Test::Cluster->new('s1');
$standby->init_from_backup($primary, 'backup', has_streaming => 1);
$standby->append_conf('postgresql.conf',
	"primary_conninfo = '" . $primary->connstr . " application_name=s1'");
$standby->start;

# IDs some seconds ahead of the clock, so that the lease the worker made
# last still covers the next calls while it is stopped, however slow the
# machine; the standby has it
$primary->safe_psql('postgres',
	'SELECT count(*) FROM generate_series(1, 12) g, LATERAL nextflakes(4096000 + 0 * g) f');
ok( wait_until(
		sub {
			$primary->safe_psql('postgres',
				q{SELECT lease_end - last_time > interval '900 ms' FROM flakeid_status()}) eq 't';
		},
		10),
	'the lease reaches past the IDs taken ahead');
$primary->wait_for_catchup($standby, 'flush', $primary->lsn('insert'));

my ($worker) = server_processes($primary, qr/flakeid lease worker/);
ok(kill('STOP', $worker), 'the lease worker is stopped');
$primary->safe_psql('postgres',
	"ALTER SYSTEM SET synchronous_standby_names = 's1'; SELECT pg_reload_conf();");
ok( wait_until(
		sub {
			$primary->safe_psql('postgres',
				q{SELECT count(*) FROM pg_stat_replication WHERE application_name = 's1' AND sync_state = 'sync'}
			) eq '1';
		},
		30),
	's1 is synchronous');

my ($ret, $out, $err) = psql_state($primary,
	q{SELECT id::bigint, (extract(epoch FROM flakeid_timestamp(id) - '2020-01-01 00:00:00+00') * 1000)::bigint
	  FROM (SELECT nextflake() AS id) s});
is($ret, 0, 'a new session gets an ID while the lease worker is stopped') or diag($err);
my ($id, $ms) = split /\|/, $out;
my $s1_end = lease_on_disk($standby);
cmp_ok($ms, '<', $s1_end, "its millisecond is below the lease s1 has ($s1_end)") if defined $ms;

kill('CONT', $worker);
ok(ids_come_again($primary, 30),
	'with the worker running again, calls get IDs');

$standby->stop;
$primary->stop;
done_testing();
