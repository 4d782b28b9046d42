# Every wait of a call is bounded, and waiting calls are served in turn.
#
# Four sessions of one role loop over nextflakes(8192) and keep the IDs a
# few milliseconds under flakeid.max_lead ahead of the clock.  A
# nextflakes(1000000) of another role, in another database, must still
# get its IDs: calls take their IDs in the order they come and then wait
# for the clock, so no stream of later calls keeps it waiting.  Its IDs
# are within max_lead of the clock when they are returned.  With
# flakeid.max_clock_wait below what the call would wait, it fails at
# once with SQLSTATE 53400 and an error that says how far ahead the IDs
# are, not that the clock went back.  A lease the lease worker cannot
# renew (it is stopped) fails a call after flakeid.max_lease_wait.

use strict;
use warnings;

use FlakeTest;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time);

my $node = flake_node('waits', quiet => 1, node_id => 3);
$node->start;
$node->safe_psql(
	'postgres', q{
CREATE ROLE attacker LOGIN;
CREATE ROLE victim LOGIN;
CREATE DATABASE attackdb OWNER attacker;
CREATE DATABASE victimdb OWNER victim;
});
$node->safe_psql($_, "CREATE EXTENSION flakeid") foreach qw(postgres attackdb victimdb);
my $max_lead = $node->safe_psql('postgres',
	"SELECT setting FROM pg_settings WHERE name = 'flakeid.max_lead'");

# The attack: pgbench as role attacker in attackdb, for $seconds.  Also
# returns the time before which it certainly still runs: pgbench counts
# its seconds from after it started.
sub attack
{
	my ($seconds) = @_;
	my $script = $node->basedir . '/attack.sql';
	PostgreSQL::Test::Utils::append_to_file($script,
		"SELECT nextflakes(8192) LIMIT 1;\n") unless -e $script;
	my ($out, $err) = ('', '');
	my $runs_until = time() + $seconds;
	my $h = IPC::Run::start(
		[
			'pgbench', '-n', '-f', $script, '-c', '4', '-j', '4',
			'-T', $seconds, '-h', $node->host, '-p', $node->port,
			'-U', 'attacker', 'attackdb'
		],
		'>', \$out, '2>', \$err, run_timeout($seconds + 120));
	# all four attacking sessions connected, so that a lead left over from
	# an earlier burst cannot pass for theirs
	ok( wait_until(
			sub {
				$node->safe_psql(
					'postgres', qq{
SELECT (SELECT count(*) FROM pg_stat_activity WHERE usename = 'attacker') = 4
	AND lead_ms >= $max_lead - 200
FROM flakeid_status()}) eq 't';
			},
			30, 0.05),
		'the attack keeps the IDs close to flakeid.max_lead ahead of the clock');
	return ($h, \$out, \$err, $runs_until);
}

# The attack finished cleanly: no failed transaction, no clock error.
sub attack_done
{
	my ($h, $out, $err) = @_;
	ok($h->finish, 'the attacking sessions ran without error') or diag($$err);
	my ($failed) = $$out =~ /number of failed transactions: (\d+)/;
	ok(!$failed, 'no attacking call failed');
	unlike($$err, qr/system clock is \d+ ms behind/, 'no call blamed the clock');
	return;
}

# 0. A call that comes while another waits for the clock takes its IDs
# after that one's and waits longer: also a single call on the quick path
# (its backend's last call found the IDs at the clock).
{
	my $quick = $node->background_psql('postgres', timeout => 60);
	$quick->query_safe('SELECT nextflake()');
	$node->safe_psql('postgres', 'SELECT nextflakes(20000000) LIMIT 1');
	my $waiting = $node->background_psql('postgres', timeout => 60);
	$waiting->query_until(qr/reserving/,
		"\\echo reserving\nSELECT nextflakes(20000000) LIMIT 1;\n");
	ok( wait_until(
			sub {
				$node->safe_psql('postgres', 'SELECT lead_ms FROM flakeid_status()') > $max_lead + 4000;
			},
			20, 0.05),
		'a second burst reserved past flakeid.max_lead and waits for the clock');
	my $later = $quick->query_safe(q{
SELECT flakeid_timestamp(id) <= clock_timestamp() + current_setting('flakeid.max_lead')::interval
FROM (SELECT nextflake() AS id) s});
	is($later, 't', 'a single call after it returns its ID only within max_lead of the clock');
	$waiting->quit;
	$quick->quit;
}

# 1. Served in turn: the big call gets its IDs within its statement
# timeout, and they are within max_lead of the clock when returned.  The
# timeout ends a second before the attack can, so that a call that gets
# its IDs got them under the attack, not after it.
{
	my ($h, $out, $err, $runs_until) = attack(15);
	my $start = time();
	my $timeout_ms = int(($runs_until - $start - 1) * 1000);
	cmp_ok($timeout_ms, '>=', 5000, 'the attack runs 5 s or more after it is under way')
	  or diag('it took ' . sprintf('%.1f', $start + 15 - $runs_until) . ' s to get under way');
	my ($ret, $res, $stderr, $state) = psql_state(
		$node,
		"SET statement_timeout = $timeout_ms;\n"
		  . "SELECT count(*), count(DISTINCT id), "
		  . "max(flakeid_timestamp(id)) <= clock_timestamp() + current_setting('flakeid.max_lead')::interval, "
		  . "bool_and(flakeid_node(id) = 3) FROM nextflakes(1000000) id;",
		user => 'victim',
		db   => 'victimdb');
	my $took = time() - $start;
	is($res, '1000000|1000000|t|t',
		'under the attack, nextflakes(1000000) of another role gets its IDs')
	  or diag("exit code $ret, SQLSTATE " . ($state // 'none') . "\n$stderr");
	note sprintf('nextflakes(1000000) under the attack took %.3f s, within a timeout of %d ms', $took,
		$timeout_ms);

	attack_done($h, $out, $err);
}

# 2. A wait longer than flakeid.max_clock_wait fails at once, and says
# that the IDs are ahead, not that the clock went back.
{
	$node->append_conf('postgresql.conf', "flakeid.max_clock_wait = '100ms'");
	$node->reload;
	my ($h, $out, $err, $runs_until) = attack(5);
	cmp_ok($runs_until - time(), '>=', 1, 'the attack runs a second or more after it is under way');
	my ($ret, $res, $stderr, $state) = psql_state(
		$node,
		"SET statement_timeout = '5s';\nSELECT count(*) FROM nextflakes(1000000);",
		user => 'victim',
		db   => 'victimdb');
	is($state, '53400', 'a call that would wait past flakeid.max_clock_wait fails with 53400')
	  or diag($stderr);
	like($stderr, qr/waiting \d+ ms more for the system clock would exceed flakeid\.max_clock_wait \(100 ms\)/,
		'the error says what wait failed');
	like($stderr, qr/the last ones run \d+ ms ahead of it/, 'the detail says how far ahead the IDs are');
	like($stderr, qr/flakeid\.max_clock_wait \(100 ms\)/, 'the error names the bound');
	unlike($stderr, qr/behind/, 'the error does not blame the clock');
	$h->finish;
	$node->append_conf('postgresql.conf', "flakeid.max_clock_wait = '10s'");
	$node->reload;
}

# 3. A lease that is not renewed fails a call after flakeid.max_lease_wait.
{
	$node->append_conf('postgresql.conf', "flakeid.max_lease_wait = '500ms'");
	$node->reload;
	my $worker = $node->safe_psql('postgres',
		"SELECT pid FROM pg_stat_activity WHERE backend_type = 'flakeid lease worker'");
	ok($worker, 'the lease worker is in pg_stat_activity');
	# the reload reaches the worker before it stops
	$node->poll_query_until('postgres',
		"SELECT setting = '500' FROM pg_settings WHERE name = 'flakeid.max_lease_wait'");
	ok(kill('STOP', $worker), 'the lease worker is stopped');
	my ($ret, $res, $stderr, $state) = psql_state($node,
		"SET statement_timeout = '5s';\nSELECT nextflakes(10000000) LIMIT 1;");
	is($state, '55000', 'a call past the lease fails after flakeid.max_lease_wait')
	  or diag($stderr);
	like($stderr, qr/timed out waiting for the flakeid time lease/, 'the error says why');
	kill('CONT', $worker);
	is($node->safe_psql('postgres', 'SELECT count(*) FROM nextflakes(10)'),
		'10', 'with the worker back, calls get their IDs');
}

# One call that waits for the clock counts once in flakeid_status()'s
# waits, however many sleeps (of at most 100 ms) its wait takes: the
# second call below waits about 1.5 s (the first reserves 4.9 s of IDs,
# each returns one).
is( $node->safe_psql(
		'postgres', q{
	SELECT nextflakes(20000000) IS NOT NULL LIMIT 1;
	CREATE TEMP TABLE before AS SELECT waits FROM flakeid_status();
	SELECT nextflakes(6144000) IS NOT NULL LIMIT 1;
	SELECT s.waits - b.waits FROM flakeid_status() s, before b}),
	"t\nt\n1",
	'a call that waited about 1.5 s for the clock counts as one wait');

$node->stop;
done_testing();
